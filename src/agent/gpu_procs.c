/* gpu_procs.c -- the compute processes on a GPU or MIG instance, whatever
 * version of NVML's process list the driver has.
 *
 * Order of preference:
 *   1. nvmlDeviceGetRunningProcessDetailList (NVML 12.2+): a versioned
 *      struct (0x01000018) with 32-byte entries; unambiguous.
 *   2. nvmlDeviceGetComputeRunningProcesses_v3: entries documented as 24
 *      bytes, but some R535 builds wrote 32 (nvitop PR #79, go-nvml #75)
 *      with no version bump. The buffer is sized for 32-byte entries and
 *      filled with a sentinel; after the call the bytes between 24*n and
 *      32*n tell which stride was written (nvitop PR #226's method).
 *   3. _v2 (24-byte entries), 4. v1 (16-byte entries).
 * Each call starts with a small buffer and grows on INSUFFICIENT_SIZE
 * (NVML then reports the count needed) up to GPU_PROCS_MAX entries.
 */
#include <stdlib.h>
#include <string.h>

#include "agent/gpu_int.h"

#define GPU_PROCS_MAX 1024

size_t agent__gpu_probe_stride(const unsigned char *buf, size_t cap, size_t n) {
    if (n == 0 || n > cap) return 24;
    for (size_t i = 24 * n; i < 32 * n; i++)
        if (buf[i] != GPU_STRIDE_SENTINEL) return 32;
    return 24;
}

static size_t clamp_cap(unsigned want) {
    size_t c = want + want / 4 + 4; /* headroom: processes come and go */
    return c > GPU_PROCS_MAX ? GPU_PROCS_MAX : c;
}

static nvmlReturn_t detail_list(const nvml_lib *lib, nvmlDevice_t dev, gpu_procinfo *out, size_t max,
                                size_t *ret_n) {
    size_t cap = 16;
    for (int attempt = 0; attempt < 4; attempt++) {
        nvmlProcessDetail_v1_t *arr = calloc(cap, sizeof *arr);
        if (!arr) return NVML_ERROR_MEMORY;
        nvmlProcessDetailList_v1_t pl;
        memset(&pl, 0, sizeof pl);
        pl.version = nvmlProcessDetailList_v1;
        pl.mode = NVML_PROCESS_MODE_COMPUTE;
        pl.numProcArrayEntries = (unsigned)cap;
        pl.procArray = arr;
        nvmlReturn_t r = lib->nvmlDeviceGetRunningProcessDetailList(dev, &pl);
        if (r == NVML_SUCCESS) {
            size_t n = pl.numProcArrayEntries < cap ? pl.numProcArrayEntries : cap;
            size_t k = 0;
            for (size_t i = 0; i < n && k < max; i++) {
                out[k].pid = arr[i].pid;
                out[k].used_bytes = arr[i].usedGpuMemory;
                k++;
            }
            free(arr);
            *ret_n = k;
            return NVML_SUCCESS;
        }
        free(arr);
        if (r != NVML_ERROR_INSUFFICIENT_SIZE) return r;
        size_t want = clamp_cap(pl.numProcArrayEntries);
        if (want <= cap) {
            if (cap >= GPU_PROCS_MAX) return r;
            want = cap * 2 > GPU_PROCS_MAX ? GPU_PROCS_MAX : cap * 2;
        }
        cap = want;
    }
    return NVML_ERROR_INSUFFICIENT_SIZE;
}

/* version: 3 (stride probed), 2 (24 bytes), 1 (16 bytes). */
static nvmlReturn_t compute_list(const nvml_lib *lib, int version, nvmlDevice_t dev, gpu_procinfo *out,
                                 size_t max, size_t *ret_n) {
    size_t cap = 16;
    for (int attempt = 0; attempt < 4; attempt++) {
        /* room for 32-byte entries whatever the version */
        unsigned char *buf = malloc(cap * 32);
        if (!buf) return NVML_ERROR_MEMORY;
        memset(buf, GPU_STRIDE_SENTINEL, cap * 32);
        unsigned count = (unsigned)cap;
        nvmlReturn_t r;
        if (version == 3)
            r = lib->nvmlDeviceGetComputeRunningProcesses_v3(dev, &count, (nvmlProcessInfo_t *)buf);
        else if (version == 2)
            r = lib->nvmlDeviceGetComputeRunningProcesses_v2(dev, &count, (nvmlProcessInfo_v2_t *)buf);
        else
            r = lib->nvmlDeviceGetComputeRunningProcesses(dev, &count, (nvmlProcessInfo_v1_t *)buf);
        if (r == NVML_SUCCESS) {
            size_t n = count < cap ? count : cap;
            size_t stride = version == 1 ? 16 : version == 2 ? 24 : agent__gpu_probe_stride(buf, cap, n);
            size_t k = 0;
            for (size_t i = 0; i < n && k < max; i++) {
                const unsigned char *e = buf + i * stride;
                unsigned pid;
                unsigned long long used;
                memcpy(&pid, e, sizeof pid);
                memcpy(&used, e + 8, sizeof used);
                out[k].pid = pid;
                out[k].used_bytes = used;
                k++;
            }
            free(buf);
            *ret_n = k;
            return NVML_SUCCESS;
        }
        free(buf);
        if (r != NVML_ERROR_INSUFFICIENT_SIZE) return r;
        size_t want = clamp_cap(count);
        if (want <= cap) {
            if (cap >= GPU_PROCS_MAX) return r;
            want = cap * 2 > GPU_PROCS_MAX ? GPU_PROCS_MAX : cap * 2;
        }
        cap = want;
    }
    return NVML_ERROR_INSUFFICIENT_SIZE;
}

nvmlReturn_t agent__gpu_processes(const nvml_lib *lib, nvmlDevice_t dev, gpu_procinfo *out, size_t max,
                                  size_t *ret_n) {
    nvmlReturn_t r = NVML_ERROR_FUNCTION_NOT_FOUND;
    if (lib->nvmlDeviceGetRunningProcessDetailList) {
        r = detail_list(lib, dev, out, max, ret_n);
        /* an older driver may export the symbol but refuse the struct version */
        if (r != NVML_ERROR_NOT_SUPPORTED && r != NVML_ERROR_ARGUMENT_VERSION_MISMATCH &&
            r != NVML_ERROR_FUNCTION_NOT_FOUND)
            return r;
    }
    if (lib->nvmlDeviceGetComputeRunningProcesses_v3) return compute_list(lib, 3, dev, out, max, ret_n);
    if (lib->nvmlDeviceGetComputeRunningProcesses_v2) return compute_list(lib, 2, dev, out, max, ret_n);
    if (lib->nvmlDeviceGetComputeRunningProcesses) return compute_list(lib, 1, dev, out, max, ret_n);
    return r;
}
