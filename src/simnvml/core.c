/* core.c -- the simulated NVML's life cycle: nvmlInit* / nvmlShutdown, the
 * environment configuration, error strings, the lock and clock, handle
 * resolution, system queries and device enumeration.
 *
 * Configuration is read from the environment at the first nvmlInit (init is
 * reference-counted like the driver's; the last nvmlShutdown frees the
 * node, so a later init starts a fresh node at model time 0, as a driver
 * reload would):
 *   KELVIN_SIM_SCENARIO      healthy | cooling-failure | memory-leak |
 *                            xid-storm | ecc-degradation | fell-off-bus
 *   KELVIN_SIM_GPUS          0..16 (8)
 *   KELVIN_SIM_MODEL         h100 | h200 | a100 | l4 | rtx6000ada (h100)
 *   KELVIN_SIM_DRIVER        driver version string (550.54.15; the legacy
 *                            build defaults to 470.256.02)
 *   KELVIN_SIM_SEED          u64 (1)
 *   KELVIN_SIM_TIME_SCALE    model seconds per wall second, 0.001..10000 (1)
 *   KELVIN_SIM_MIG           "0:3g.40gb,2g.20gb,1g.10gb;2:7g.80gb" (none)
 *   KELVIN_SIM_PIDS          "123,456": pids reported for GPU processes
 *                            (default: the calling process)
 *   KELVIN_SIM_PROCESS_STRIDE 24 | 32 bytes per *_v3 process entry (24)
 *   KELVIN_SIM_HANG_MS       every device call sleeps this long (0)
 *   KELVIN_SIM_INIT_ERROR    make nvmlInit fail: a code name
 *                            (DRIVER_NOT_LOADED, NVML_ERROR_...) or number
 *   KELVIN_SIM_LOST_AFTER    wall seconds after init until the fell-off-bus
 *                            GPU is lost (300 / scale)
 *   KELVIN_SIM_ONSET         wall seconds after init until a failure starts
 *                            (60 / scale)
 *   KELVIN_SIM_FAULT_GPU     index of the faulty GPU (0)
 *   KELVIN_SIM_WORKLOAD      training | inference | idle (training)
 *   KELVIN_SIM_VERBOSE       1: say on stderr why nvmlInit rejected the env
 *   KELVIN_SIM_STATS_FILE    at exit, write the CPU time spent inside the
 *                            library ("cpu_ns N", "calls N") to this file
 * A malformed value makes nvmlInit return NVML_ERROR_UNKNOWN.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "simnvml/simnvml_int.h"

simnvml_ctx simnvml__ctx = {.mu = PTHREAD_MUTEX_INITIALIZER};
#define C simnvml__ctx

/* ------------------------------------------------------------------------ */
/* Error strings                                                             */

static const struct {
    nvmlReturn_t code;
    const char *name, *msg;
} errors[] = {
    {NVML_SUCCESS, "SUCCESS", "Success"},
    {NVML_ERROR_UNINITIALIZED, "UNINITIALIZED", "Uninitialized"},
    {NVML_ERROR_INVALID_ARGUMENT, "INVALID_ARGUMENT", "Invalid Argument"},
    {NVML_ERROR_NOT_SUPPORTED, "NOT_SUPPORTED", "Not Supported"},
    {NVML_ERROR_NO_PERMISSION, "NO_PERMISSION", "Insufficient Permissions"},
    {NVML_ERROR_ALREADY_INITIALIZED, "ALREADY_INITIALIZED", "Already Initialized"},
    {NVML_ERROR_NOT_FOUND, "NOT_FOUND", "Not Found"},
    {NVML_ERROR_INSUFFICIENT_SIZE, "INSUFFICIENT_SIZE", "Insufficient Size"},
    {NVML_ERROR_INSUFFICIENT_POWER, "INSUFFICIENT_POWER", "Insufficient External Power"},
    {NVML_ERROR_DRIVER_NOT_LOADED, "DRIVER_NOT_LOADED", "Driver Not Loaded"},
    {NVML_ERROR_TIMEOUT, "TIMEOUT", "Timeout"},
    {NVML_ERROR_IRQ_ISSUE, "IRQ_ISSUE", "Interrupt request issue"},
    {NVML_ERROR_LIBRARY_NOT_FOUND, "LIBRARY_NOT_FOUND", "NVML Shared Library Not Found"},
    {NVML_ERROR_FUNCTION_NOT_FOUND, "FUNCTION_NOT_FOUND", "Function Not Found"},
    {NVML_ERROR_CORRUPTED_INFOROM, "CORRUPTED_INFOROM", "Corrupted infoROM"},
    {NVML_ERROR_GPU_IS_LOST, "GPU_IS_LOST", "GPU is lost"},
    {NVML_ERROR_RESET_REQUIRED, "RESET_REQUIRED", "GPU requires restart"},
    {NVML_ERROR_OPERATING_SYSTEM, "OPERATING_SYSTEM", "The operating system has blocked the request."},
    {NVML_ERROR_LIB_RM_VERSION_MISMATCH, "LIB_RM_VERSION_MISMATCH",
     "RM has detected an NVML/RM version mismatch."},
    {NVML_ERROR_IN_USE, "IN_USE", "In use by another client"},
    {NVML_ERROR_MEMORY, "MEMORY", "Insufficient Memory"},
    {NVML_ERROR_NO_DATA, "NO_DATA", "No data"},
    {NVML_ERROR_VGPU_ECC_NOT_SUPPORTED, "VGPU_ECC_NOT_SUPPORTED",
     "The requested vgpu operation is not available on target device, because ECC is enabled"},
    {NVML_ERROR_INSUFFICIENT_RESOURCES, "INSUFFICIENT_RESOURCES", "Insufficient resources for request"},
    {NVML_ERROR_FREQ_NOT_SUPPORTED, "FREQ_NOT_SUPPORTED", "Frequency not supported"},
    {NVML_ERROR_ARGUMENT_VERSION_MISMATCH, "ARGUMENT_VERSION_MISMATCH", "Argument version mismatch"},
    {NVML_ERROR_DEPRECATED, "DEPRECATED", "Deprecated"},
    {NVML_ERROR_NOT_READY, "NOT_READY", "Not ready"},
    {NVML_ERROR_GPU_NOT_FOUND, "GPU_NOT_FOUND", "GPU not found"},
    {NVML_ERROR_INVALID_STATE, "INVALID_STATE", "Invalid state"},
    {NVML_ERROR_RESET_TYPE_NOT_SUPPORTED, "RESET_TYPE_NOT_SUPPORTED", "Reset not supported"},
    {NVML_ERROR_UNKNOWN, "UNKNOWN", "Unknown Error"},
};

SIMNVML_API const char *nvmlErrorString(nvmlReturn_t result) {
    for (size_t i = 0; i < sizeof errors / sizeof errors[0]; i++)
        if (errors[i].code == result) return errors[i].msg;
    return "Unknown Error";
}

/* ------------------------------------------------------------------------ */
/* Lock, clock, handles                                                      */

/* CPU time spent inside the library, so benchmarks can report the agent's
 * cost without the simulator's (KELVIN_SIM_STATS_FILE, written at exit). */
static _Thread_local int64_t enter_cpu_ns;
static int64_t stats_cpu_ns; /* guarded by C.mu */
static uint64_t stats_calls; /* guarded by C.mu */

/* With KELVIN_SIM_STATS_FILE, the totals are also rewritten about once a
 * second, so a benchmark can take the simulator's CPU over a window. Lock
 * held. */
static int stats_fd = -2; /* -2: not opened yet, -1: none */
static int64_t stats_written_ns;
static void stats_maybe_write(void) {
    if (stats_fd == -1) return;
    int64_t now = base_mono_ns();
    if (stats_fd >= 0 && now - stats_written_ns < 1000000000LL) return;
    if (stats_fd == -2) {
        const char *path = getenv("KELVIN_SIM_STATS_FILE");
        stats_fd = path && *path ? open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644) : -1;
        if (stats_fd < 0) return;
    }
    stats_written_ns = now;
    char buf[96];
    int n = snprintf(buf, sizeof buf, "cpu_ns %lld\ncalls %llu\n", (long long)stats_cpu_ns,
                     (unsigned long long)stats_calls);
    if (pwrite(stats_fd, buf, (size_t)n, 0) == n && ftruncate(stats_fd, n) == 0) {
    }
}

nvmlReturn_t simnvml__enter(void) {
    pthread_mutex_lock(&C.mu);
    enter_cpu_ns = base_thread_cpu_ns();
    if (C.init_count == 0) {
        pthread_mutex_unlock(&C.mu);
        return NVML_ERROR_UNINITIALIZED;
    }
    return NVML_SUCCESS;
}

nvmlReturn_t simnvml__leave(nvmlReturn_t r) {
    if (enter_cpu_ns) { /* 0: the lock was taken without simnvml__enter */
        int64_t now = base_thread_cpu_ns();
        stats_cpu_ns += now - enter_cpu_ns;
        stats_calls++;
        enter_cpu_ns = 0;
        stats_maybe_write();
    }
    pthread_mutex_unlock(&C.mu);
    return r;
}

double simnvml__model_now(void) {
    return (double)(base_mono_ns() - C.t0_ns) * 1e-9 * C.scale;
}

int64_t simnvml__unix_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

void simnvml__advance(void) {
    int64_t now = base_mono_ns();
    if (now - C.last_step_ns < 1000000) return; /* at most one step per ms */
    C.last_step_ns = now;
    sim_node_step(C.node, (double)(now - C.t0_ns) * 1e-9 * C.scale);
}

static void hang(void) {
    unsigned ms = __atomic_load_n(&C.hang_ms, __ATOMIC_RELAXED);
    if (!ms) return;
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) == -1 && errno == EINTR) {
    }
}

/* Resolves a handle issued by this library (without dereferencing anything
 * that is not ours). Lock held. */
static int lookup(nvmlDevice_t d, unsigned *gpu, int *mig) {
    uintptr_t p = (uintptr_t)d, b = (uintptr_t)C.devs, mb = (uintptr_t)C.migs;
    size_t sz = sizeof(struct nvmlDevice_st);
    unsigned count = sim_node_gpu_count(C.node);
    if (p >= b && p < b + sizeof C.devs && (p - b) % sz == 0) {
        unsigned i = (unsigned)((p - b) / sz);
        if (i >= count || C.devs[i].magic != SIMNVML_DEV_MAGIC) return 0;
        *gpu = i;
        *mig = -1;
        return 1;
    }
    if (p >= mb && p < mb + sizeof C.migs && (p - mb) % sz == 0) {
        unsigned i = (unsigned)((p - mb) / sz), g = i / SIM_MAX_MIG, k = i % SIM_MAX_MIG;
        if (g >= count || k >= sim_node_gpu(C.node, g)->mig_count) return 0;
        *gpu = g;
        *mig = (int)k;
        return 1;
    }
    return 0;
}

nvmlReturn_t simnvml__enter_dev(nvmlDevice_t device, int flags, simnvml_dev *ret) {
    if (!(flags & SIMNVML_NO_HANG)) hang();
    nvmlReturn_t r = simnvml__enter();
    if (r != NVML_SUCCESS) return r;
    unsigned gpu;
    int mig;
    if (!lookup(device, &gpu, &mig)) return simnvml__leave(NVML_ERROR_INVALID_ARGUMENT);
    simnvml__advance();
    const sim_gpu_state *s = sim_node_gpu(C.node, gpu);
    if (s->lost) return simnvml__leave(NVML_ERROR_GPU_IS_LOST);
    if (mig >= 0 && (flags & SIMNVML_GPU_ONLY)) return simnvml__leave(NVML_ERROR_NOT_SUPPORTED);
    ret->gpu = gpu;
    ret->mig = mig;
    ret->s = s;
    ret->m = sim_node_config(C.node)->model;
    ret->mi = mig >= 0 ? &s->mig[mig] : NULL;
    return NVML_SUCCESS;
}

unsigned simnvml__pid(unsigned gpu, unsigned k) {
    return C.pids[(gpu + k) % C.npids];
}

nvmlReturn_t simnvml__copy_str(char *buf, unsigned len, const char *s) {
    if (!buf) return NVML_ERROR_INVALID_ARGUMENT;
    size_t n = strlen(s);
    if ((size_t)len < n + 1) return NVML_ERROR_INSUFFICIENT_SIZE;
    memcpy(buf, s, n + 1);
    return NVML_SUCCESS;
}

/* ------------------------------------------------------------------------ */
/* Configuration from the environment                                        */

static int cfg_fail(const char *var, const char *val, const char *why) {
    const char *v = getenv("KELVIN_SIM_VERBOSE");
    if (v && *v && strcmp(v, "0") != 0)
        fprintf(stderr, "simulated libnvidia-ml: %s=\"%s\": %s\n", var, val ? val : "", why);
    return -1;
}

static int env_u64(const char *var, uint64_t lo, uint64_t hi, uint64_t *ret) {
    const char *v = getenv(var);
    if (!v || !*v) return 0;
    uint64_t x;
    if (base_parse_u64(v, strlen(v), &x) != 0 || x < lo || x > hi)
        return cfg_fail(var, v, "not a number in range");
    *ret = x;
    return 1;
}

static int env_double(const char *var, double lo, double hi, double *ret) {
    const char *v = getenv(var);
    if (!v || !*v) return 0;
    double x;
    if (base_parse_double(v, strlen(v), &x) != 0 || !(x >= lo && x <= hi))
        return cfg_fail(var, v, "not a number in range");
    *ret = x;
    return 1;
}

/* KELVIN_SIM_INIT_ERROR: NVML_SUCCESS when unset. */
static nvmlReturn_t init_error(void) {
    const char *v = getenv("KELVIN_SIM_INIT_ERROR");
    if (!v || !*v) return NVML_SUCCESS;
    const char *name = v;
    if (strncasecmp(name, "NVML_ERROR_", 11) == 0) name += 11;
    for (size_t i = 0; i < sizeof errors / sizeof errors[0]; i++)
        if (strcasecmp(name, errors[i].name) == 0) return errors[i].code;
    uint64_t x;
    if (base_parse_u64(v, strlen(v), &x) == 0 && x <= 999) return (nvmlReturn_t)x;
    cfg_fail("KELVIN_SIM_INIT_ERROR", v, "unknown error name");
    return NVML_ERROR_UNKNOWN;
}

static int parse_pids(void) {
    const char *v = getenv("KELVIN_SIM_PIDS");
    C.npids = 0;
    if (!v || !*v) {
        C.pids[C.npids++] = (unsigned)getpid();
        return 0;
    }
    const char *p = v;
    while (*p) {
        const char *e = p;
        while (*e && *e != ',') e++;
        uint64_t x;
        if (base_parse_u64(p, (size_t)(e - p), &x) != 0 || x == 0 || x > 0x7FFFFFFF)
            return cfg_fail("KELVIN_SIM_PIDS", v, "not a comma-separated list of pids");
        if (C.npids == SIMNVML_MAX_PIDS) return cfg_fail("KELVIN_SIM_PIDS", v, "more than 64 pids");
        C.pids[C.npids++] = (unsigned)x;
        p = *e ? e + 1 : e;
    }
    return C.npids ? 0 : cfg_fail("KELVIN_SIM_PIDS", v, "empty");
}

static int build_node(void) {
    sim_config cfg;
    sim_config_init(&cfg);
    if (KELVIN_SIM_LEGACY) snprintf(cfg.driver_version, sizeof cfg.driver_version, "%s", "470.256.02");
    const char *v;
    if ((v = getenv("KELVIN_SIM_SCENARIO")) && *v && sim_scenario_parse(v, strlen(v), &cfg.scenario) != 0)
        return cfg_fail("KELVIN_SIM_SCENARIO", v, "unknown scenario");
    if ((v = getenv("KELVIN_SIM_WORKLOAD")) && *v && sim_workload_parse(v, strlen(v), &cfg.workload) != 0)
        return cfg_fail("KELVIN_SIM_WORKLOAD", v, "unknown workload");
    if ((v = getenv("KELVIN_SIM_MODEL")) && *v && !(cfg.model = sim_model_find(v, strlen(v))))
        return cfg_fail("KELVIN_SIM_MODEL", v, "unknown GPU model");
    if ((v = getenv("KELVIN_SIM_DRIVER")) && *v) {
        if (strlen(v) >= sizeof cfg.driver_version || sim_cuda_version(v) == 0)
            return cfg_fail("KELVIN_SIM_DRIVER", v, "not a driver version like 550.54.15");
        snprintf(cfg.driver_version, sizeof cfg.driver_version, "%s", v);
    }
    uint64_t u;
    int rc;
    if ((rc = env_u64("KELVIN_SIM_GPUS", 0, SIM_MAX_GPUS, &u)) < 0) return -1;
    if (rc) cfg.gpu_count = (unsigned)u;
    if ((rc = env_u64("KELVIN_SIM_SEED", 0, UINT64_MAX, &u)) < 0) return -1;
    if (rc) cfg.seed = u;
    if ((rc = env_u64("KELVIN_SIM_FAULT_GPU", 0, SIM_MAX_GPUS - 1, &u)) < 0) return -1;
    if (rc) cfg.fault_gpu = (unsigned)u;
    if (cfg.gpu_count && cfg.fault_gpu >= cfg.gpu_count)
        return cfg_fail("KELVIN_SIM_FAULT_GPU", "", "no such GPU");
    C.scale = 1.0;
    if (env_double("KELVIN_SIM_TIME_SCALE", 1e-3, 1e4, &C.scale) < 0) return -1;
    double d;
    if ((rc = env_double("KELVIN_SIM_LOST_AFTER", 0, 1e9, &d)) < 0) return -1;
    cfg.lost_after_s = rc ? d * C.scale : cfg.lost_after_s;
    if ((rc = env_double("KELVIN_SIM_ONSET", 0, 1e9, &d)) < 0) return -1;
    cfg.onset_s = rc ? d * C.scale : cfg.onset_s;
    if ((v = getenv("KELVIN_SIM_MIG")) && *v) {
        char err[160];
        if (sim_config_set_mig(&cfg, v, strlen(v), err, sizeof err) != 0)
            return cfg_fail("KELVIN_SIM_MIG", v, err);
    }
    C.stride = 24;
    if ((rc = env_u64("KELVIN_SIM_PROCESS_STRIDE", 24, 32, &u)) < 0) return -1;
    if (rc) {
        if (u != 24 && u != 32)
            return cfg_fail("KELVIN_SIM_PROCESS_STRIDE", getenv("KELVIN_SIM_PROCESS_STRIDE"), "24 or 32");
        C.stride = (unsigned)u;
    }
    u = 0;
    if (env_u64("KELVIN_SIM_HANG_MS", 0, 600000, &u) < 0) return -1;
    if (parse_pids() != 0) return -1;
    char err[160];
    if (sim_node_new(&cfg, &C.node, err, sizeof err) != 0) return cfg_fail("KELVIN_SIM_*", "", err);
    size_t dn = strspn(cfg.driver_version, "0123456789");
    uint64_t major = 0;
    C.driver_major = base_parse_u64(cfg.driver_version, dn, &major) == 0 && major < 10000 ? (int)major : 0;
    for (unsigned g = 0; g < SIM_MAX_GPUS; g++) {
        C.devs[g] = (struct nvmlDevice_st){SIMNVML_DEV_MAGIC, g, -1};
        for (unsigned k = 0; k < SIM_MAX_MIG; k++) {
            C.migs[g][k] = (struct nvmlDevice_st){SIMNVML_DEV_MAGIC, g, (int)k};
            C.gis[g][k] = (struct nvmlGpuInstance_st){SIMNVML_DEV_MAGIC, g, k};
        }
    }
    C.t0_ns = base_mono_ns();
    C.last_step_ns = C.t0_ns;
    C.t0_unix_us = simnvml__unix_us();
    __atomic_store_n(&C.hang_ms, (unsigned)u, __ATOMIC_RELAXED);
    return 0;
}

static void teardown(void) {
    simnvml__free_events();
    simnvml__free_samples();
    sim_node_free(C.node);
    C.node = NULL;
    C.init_count = 0;
    __atomic_store_n(&C.hang_ms, 0u, __ATOMIC_RELAXED);
}

static nvmlReturn_t do_init(bool v1) {
    nvmlReturn_t r = init_error();
    if (r != NVML_SUCCESS) return r;
    pthread_mutex_lock(&C.mu);
    if (C.init_count > 0) {
        C.init_count++;
        return simnvml__leave(NVML_SUCCESS);
    }
    if (build_node() != 0) {
        if (C.node) teardown();
        return simnvml__leave(NVML_ERROR_UNKNOWN);
    }
    if (v1) { /* the v1 entry point insists every GPU is healthy */
        for (unsigned g = 0; g < sim_node_gpu_count(C.node); g++) {
            if (sim_node_gpu(C.node, g)->lost) {
                teardown();
                return simnvml__leave(NVML_ERROR_GPU_IS_LOST);
            }
        }
    }
    C.init_count = 1;
    return simnvml__leave(NVML_SUCCESS);
}

SIMNVML_API nvmlReturn_t nvmlInit_v2(void) {
    return do_init(false);
}
SIMNVML_API nvmlReturn_t nvmlInit(void) {
    return do_init(true);
}

SIMNVML_API nvmlReturn_t nvmlInitWithFlags(unsigned int flags) {
    if (flags & ~(NVML_INIT_FLAG_NO_GPUS | NVML_INIT_FLAG_NO_ATTACH)) return NVML_ERROR_INVALID_ARGUMENT;
    return do_init(false);
}

SIMNVML_API nvmlReturn_t nvmlShutdown(void) {
    pthread_mutex_lock(&C.mu);
    if (C.init_count == 0) return simnvml__leave(NVML_ERROR_UNINITIALIZED);
    if (--C.init_count == 0) teardown();
    return simnvml__leave(NVML_SUCCESS);
}

/* dlclose / exit without nvmlShutdown: release what we hold. */
__attribute__((destructor)) static void simnvml_fini(void) {
    pthread_mutex_lock(&C.mu);
    if (C.node) teardown();
    const char *stats = getenv("KELVIN_SIM_STATS_FILE");
    if (stats && *stats) {
        FILE *f = fopen(stats, "w");
        if (f) {
            fprintf(f, "cpu_ns %lld\ncalls %llu\n", (long long)stats_cpu_ns, (unsigned long long)stats_calls);
            fclose(f);
        }
    }
    pthread_mutex_unlock(&C.mu);
}

/* ------------------------------------------------------------------------ */
/* System                                                                    */

SIMNVML_API nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length) {
    nvmlReturn_t r = simnvml__enter();
    if (r != NVML_SUCCESS) return r;
    return simnvml__leave(simnvml__copy_str(version, length, sim_node_config(C.node)->driver_version));
}

SIMNVML_API nvmlReturn_t nvmlSystemGetNVMLVersion(char *version, unsigned int length) {
    nvmlReturn_t r = simnvml__enter();
    if (r != NVML_SUCCESS) return r;
    const char *drv = sim_node_config(C.node)->driver_version;
    char buf[64];
    snprintf(buf, sizeof buf, "%d.%s", sim_cuda_version(drv) / 1000, drv);
    return simnvml__leave(simnvml__copy_str(version, length, buf));
}

/* ------------------------------------------------------------------------ */
/* Enumeration                                                               */

static nvmlReturn_t get_count(unsigned int *count) {
    nvmlReturn_t r = simnvml__enter();
    if (r != NVML_SUCCESS) return r;
    if (!count) return simnvml__leave(NVML_ERROR_INVALID_ARGUMENT);
    *count = sim_node_gpu_count(C.node);
    return simnvml__leave(NVML_SUCCESS);
}

SIMNVML_API nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *deviceCount) {
    return get_count(deviceCount);
}
SIMNVML_API nvmlReturn_t nvmlDeviceGetCount(unsigned int *deviceCount) {
    return get_count(deviceCount);
}

static nvmlReturn_t by_index(unsigned int index, nvmlDevice_t *device) {
    nvmlReturn_t r = simnvml__enter();
    if (r != NVML_SUCCESS) return r;
    if (!device || index >= sim_node_gpu_count(C.node)) return simnvml__leave(NVML_ERROR_INVALID_ARGUMENT);
    simnvml__advance();
    if (sim_node_gpu(C.node, index)->lost) return simnvml__leave(NVML_ERROR_GPU_IS_LOST);
    *device = &C.devs[index];
    return simnvml__leave(NVML_SUCCESS);
}

SIMNVML_API nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device) {
    return by_index(index, device);
}
SIMNVML_API nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index, nvmlDevice_t *device) {
    return by_index(index, device);
}

SIMNVML_API nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *uuid, nvmlDevice_t *device) {
    nvmlReturn_t r = simnvml__enter();
    if (r != NVML_SUCCESS) return r;
    if (!uuid || !device) return simnvml__leave(NVML_ERROR_INVALID_ARGUMENT);
    simnvml__advance();
    char buf[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
    for (unsigned g = 0; g < sim_node_gpu_count(C.node); g++) {
        const sim_gpu_state *s = sim_node_gpu(C.node, g);
        nvmlDevice_t found = NULL;
        if (sim_gpu_uuid(C.node, g, buf, sizeof buf) > 0 && strcmp(buf, uuid) == 0) found = &C.devs[g];
        for (unsigned k = 0; !found && k < s->mig_count; k++)
            if (sim_mig_uuid(C.node, g, k, buf, sizeof buf) > 0 && strcmp(buf, uuid) == 0)
                found = &C.migs[g][k];
        if (found) {
            if (s->lost) return simnvml__leave(NVML_ERROR_GPU_IS_LOST);
            *device = found;
            return simnvml__leave(NVML_SUCCESS);
        }
    }
    return simnvml__leave(NVML_ERROR_NOT_FOUND);
}

/* Parses "[[domain:]bus:]device.function" in hex, as the driver accepts
 * ("00000000:1B:00.0", "0000:1b:00.0", "1B:00.0"). */
static int parse_bus_id(const char *s, unsigned *dom, unsigned *bus, unsigned *dev) {
    unsigned long long parts[4];
    int n = 0, digits = 0;
    unsigned long long v = 0;
    for (const char *p = s;; p++) {
        char c = *p;
        int h = c >= '0' && c <= '9'   ? c - '0'
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                       : -1;
        if (h >= 0) {
            if (++digits > 8) return 0;
            v = v * 16 + (unsigned)h;
            continue;
        }
        if (!digits || n == 4) return 0;
        parts[n++] = v;
        v = 0;
        digits = 0;
        if (c == 0) break;
        if (c != ':' && c != '.') return 0;
        if (c == '.' && p[1] && n < 2) return 0;
    }
    if (n < 3) return 0;
    *dom = n == 4 ? (unsigned)parts[0] : 0;
    *bus = (unsigned)parts[n - 3];
    *dev = (unsigned)parts[n - 2];
    return parts[n - 1] == 0 && *bus < 256 && *dev < 32;
}

SIMNVML_API nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char *pciBusId, nvmlDevice_t *device) {
    nvmlReturn_t r = simnvml__enter();
    if (r != NVML_SUCCESS) return r;
    if (!pciBusId || !device || strnlen(pciBusId, 64) == 64)
        return simnvml__leave(NVML_ERROR_INVALID_ARGUMENT);
    unsigned dom, bus, dv;
    if (!parse_bus_id(pciBusId, &dom, &bus, &dv)) return simnvml__leave(NVML_ERROR_INVALID_ARGUMENT);
    simnvml__advance();
    for (unsigned g = 0; g < sim_node_gpu_count(C.node); g++) {
        unsigned d2, b2, v2;
        sim_gpu_pci(C.node, g, &d2, &b2, &v2);
        if (d2 == dom && b2 == bus && v2 == dv) {
            if (sim_node_gpu(C.node, g)->lost) return simnvml__leave(NVML_ERROR_GPU_IS_LOST);
            *device = &C.devs[g];
            return simnvml__leave(NVML_SUCCESS);
        }
    }
    return simnvml__leave(NVML_ERROR_NOT_FOUND);
}
