/* procs.c -- process lists and per-process utilisation.
 *
 * The model's processes (sim_gpu_state.procs) are reported with real pids
 * from KELVIN_SIM_PIDS (default: the caller's own pid), process k of GPU g
 * getting pids[(g + k) % n], so an agent can resolve /proc/<pid>/cgroup.
 *
 * Size protocol, as the driver's: *count smaller than needed (including 0,
 * or a NULL buffer to ask) -> *count = needed, INSUFFICIENT_SIZE; enough ->
 * entries written, *count = written, SUCCESS.
 *
 * The R535 stride bug: with KELVIN_SIM_PROCESS_STRIDE=32,
 * nvmlDeviceGetComputeRunningProcesses_v3 writes 32-byte entries (the
 * nvmlProcessDetail_v1_t layout) into the caller's nvmlProcessInfo_t array,
 * as some R535 builds did; callers must probe the stride.
 *
 * MIG: the GPU handle lists every process with its GPU/compute instance
 * ids; a MIG handle lists its own. Without MIG both ids are 0xFFFFFFFF.
 * Per-process utilisation is NOT_SUPPORTED on MIG-enabled GPUs. Samples are
 * stamped with the last whole second since nvmlInit (µs since the epoch);
 * asking with lastSeenTimeStamp >= that stamp gives NOT_FOUND.
 */
#include <string.h>

#include "simnvml/simnvml_int.h"

#define C simnvml__ctx

typedef struct row {
    unsigned pid;
    unsigned long long used;
    unsigned gi, ci;
    unsigned sm, mem, enc, dec;
} row;

static unsigned pct(double v) {
    return v <= 0 ? 0u : v >= 100 ? 100u : (unsigned)(v + 0.5);
}

static unsigned collect(const simnvml_dev *d, row *rows) {
    const sim_gpu_state *s = d->s;
    unsigned n = 0;
    for (unsigned k = 0; k < s->proc_count && n < SIM_MAX_PROCS; k++) {
        const sim_process *p = &s->procs[k];
        if (d->mig >= 0 && p->mig != d->mig) continue;
        row *r = &rows[n++];
        r->pid = simnvml__pid(d->gpu, p->slot % SIM_MAX_PROCS);
        r->used = p->used_bytes;
        r->gi = p->mig >= 0 ? s->mig[p->mig].gi_id : NVML_EVENT_INSTANCE_ID_ALL;
        r->ci = p->mig >= 0 ? s->mig[p->mig].ci_id : NVML_EVENT_INSTANCE_ID_ALL;
        r->sm = pct(p->sm_util);
        r->mem = pct(p->mem_util);
        r->enc = pct(p->enc_util);
        r->dec = pct(p->dec_util);
    }
    return n;
}

/* version 1: 16-byte entries; 2: 24; 3: 24 or the configured stride. */
static nvmlReturn_t running(nvmlDevice_t device, unsigned *count, void *infos, int version) {
    simnvml_dev d;
    nvmlReturn_t r = simnvml__enter_dev(device, SIMNVML_ANY, &d);
    if (r != NVML_SUCCESS) return r;
    if (!count) return simnvml__leave(NVML_ERROR_INVALID_ARGUMENT);
    row rows[SIM_MAX_PROCS];
    unsigned n = collect(&d, rows);
    if (*count < n) {
        *count = n;
        return simnvml__leave(NVML_ERROR_INSUFFICIENT_SIZE);
    }
    if (n && !infos) return simnvml__leave(NVML_ERROR_INVALID_ARGUMENT);
    size_t stride = version == 1   ? sizeof(nvmlProcessInfo_v1_t)
                    : version == 2 ? sizeof(nvmlProcessInfo_v2_t)
                                   : C.stride;
    for (unsigned i = 0; i < n; i++) {
        unsigned char *at = (unsigned char *)infos + i * stride;
        if (version == 1) {
            nvmlProcessInfo_v1_t e = {.pid = rows[i].pid, .usedGpuMemory = rows[i].used};
            memcpy(at, &e, sizeof e);
        } else if (stride == sizeof(nvmlProcessDetail_v1_t)) {
            nvmlProcessDetail_v1_t e = {.pid = rows[i].pid,
                                        .usedGpuMemory = rows[i].used,
                                        .gpuInstanceId = rows[i].gi,
                                        .computeInstanceId = rows[i].ci,
                                        .usedGpuCcProtectedMemory = 0};
            memcpy(at, &e, sizeof e);
        } else {
            nvmlProcessInfo_v2_t e = {.pid = rows[i].pid,
                                      .usedGpuMemory = rows[i].used,
                                      .gpuInstanceId = rows[i].gi,
                                      .computeInstanceId = rows[i].ci};
            memcpy(at, &e, sizeof e);
        }
    }
    *count = n;
    return simnvml__leave(NVML_SUCCESS);
}

#if !KELVIN_SIM_LEGACY
SIMNVML_API nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int *infoCount,
                                                                 nvmlProcessInfo_t *infos) {
    return running(device, infoCount, infos, 3);
}
#endif

SIMNVML_API nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t device, unsigned int *infoCount,
                                                                 nvmlProcessInfo_v2_t *infos) {
    return running(device, infoCount, infos, 2);
}

SIMNVML_API nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t device, unsigned int *infoCount,
                                                              nvmlProcessInfo_v1_t *infos) {
    return running(device, infoCount, infos, 1);
}

#if !KELVIN_SIM_LEGACY
SIMNVML_API nvmlReturn_t nvmlDeviceGetRunningProcessDetailList(nvmlDevice_t device,
                                                               nvmlProcessDetailList_t *plist) {
    simnvml_dev d;
    nvmlReturn_t r = simnvml__enter_dev(device, SIMNVML_ANY, &d);
    if (r != NVML_SUCCESS) return r;
    if (!plist) return simnvml__leave(NVML_ERROR_INVALID_ARGUMENT);
    if (plist->version != nvmlProcessDetailList_v1)
        return simnvml__leave(NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
    if (plist->mode > NVML_PROCESS_MODE_MPS) return simnvml__leave(NVML_ERROR_INVALID_ARGUMENT);
    row rows[SIM_MAX_PROCS];
    unsigned n = plist->mode == NVML_PROCESS_MODE_COMPUTE ? collect(&d, rows) : 0;
    if (plist->numProcArrayEntries < n || (n && !plist->procArray)) {
        plist->numProcArrayEntries = n;
        return simnvml__leave(NVML_ERROR_INSUFFICIENT_SIZE);
    }
    for (unsigned i = 0; i < n; i++) {
        nvmlProcessDetail_v1_t *e = &plist->procArray[i];
        e->pid = rows[i].pid;
        e->usedGpuMemory = rows[i].used;
        e->gpuInstanceId = rows[i].gi;
        e->computeInstanceId = rows[i].ci;
        e->usedGpuCcProtectedMemory = 0;
    }
    plist->numProcArrayEntries = n;
    return simnvml__leave(NVML_SUCCESS);
}
#endif

/* The stamp of the current utilisation sample. Lock held. */
static unsigned long long sample_stamp(void) {
    int64_t whole_s = (base_mono_ns() - C.t0_ns) / 1000000000;
    return (unsigned long long)(C.t0_unix_us + whole_s * 1000000);
}

SIMNVML_API nvmlReturn_t nvmlDeviceGetProcessUtilization(nvmlDevice_t device,
                                                         nvmlProcessUtilizationSample_t *utilization,
                                                         unsigned int *processSamplesCount,
                                                         unsigned long long lastSeenTimeStamp) {
    simnvml_dev d;
    nvmlReturn_t r = simnvml__enter_dev(device, SIMNVML_GPU_ONLY, &d);
    if (r != NVML_SUCCESS) return r;
    if (!processSamplesCount) return simnvml__leave(NVML_ERROR_INVALID_ARGUMENT);
    if (d.s->mig_enabled) return simnvml__leave(NVML_ERROR_NOT_SUPPORTED);
    row rows[SIM_MAX_PROCS];
    unsigned long long ts = sample_stamp();
    unsigned n = ts > lastSeenTimeStamp ? collect(&d, rows) : 0;
    if (n == 0) return simnvml__leave(NVML_ERROR_NOT_FOUND);
    if (!utilization || *processSamplesCount < n) {
        *processSamplesCount = n;
        return simnvml__leave(NVML_ERROR_INSUFFICIENT_SIZE);
    }
    for (unsigned i = 0; i < n; i++) {
        utilization[i] = (nvmlProcessUtilizationSample_t){.pid = rows[i].pid,
                                                          .timeStamp = ts,
                                                          .smUtil = rows[i].sm,
                                                          .memUtil = rows[i].mem,
                                                          .encUtil = rows[i].enc,
                                                          .decUtil = rows[i].dec};
    }
    *processSamplesCount = n;
    return simnvml__leave(NVML_SUCCESS);
}

#if !KELVIN_SIM_LEGACY
SIMNVML_API nvmlReturn_t
nvmlDeviceGetProcessesUtilizationInfo(nvmlDevice_t device, nvmlProcessesUtilizationInfo_t *procesesUtilInfo) {
    simnvml_dev d;
    nvmlReturn_t r = simnvml__enter_dev(device, SIMNVML_GPU_ONLY, &d);
    if (r != NVML_SUCCESS) return r;
    nvmlProcessesUtilizationInfo_t *u = procesesUtilInfo;
    if (!u) return simnvml__leave(NVML_ERROR_INVALID_ARGUMENT);
    if (u->version != nvmlProcessesUtilizationInfo_v1)
        return simnvml__leave(NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
    if (d.s->mig_enabled) return simnvml__leave(NVML_ERROR_NOT_SUPPORTED);
    row rows[SIM_MAX_PROCS];
    unsigned long long ts = sample_stamp();
    unsigned n = ts > u->lastSeenTimeStamp ? collect(&d, rows) : 0;
    if (n == 0) return simnvml__leave(NVML_ERROR_NOT_FOUND);
    if (!u->procUtilArray || u->processSamplesCount < n) {
        u->processSamplesCount = n;
        return simnvml__leave(NVML_ERROR_INSUFFICIENT_SIZE);
    }
    for (unsigned i = 0; i < n; i++) {
        u->procUtilArray[i] = (nvmlProcessUtilizationInfo_v1_t){.timeStamp = ts,
                                                                .pid = rows[i].pid,
                                                                .smUtil = rows[i].sm,
                                                                .memUtil = rows[i].mem,
                                                                .encUtil = rows[i].enc,
                                                                .decUtil = rows[i].dec,
                                                                .jpgUtil = 0,
                                                                .ofaUtil = 0};
    }
    u->processSamplesCount = n;
    return simnvml__leave(NVML_SUCCESS);
}
#endif
