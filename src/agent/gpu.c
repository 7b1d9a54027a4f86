/* gpu.c -- the GPU collector (see gpu.h): lifecycle, devices, labels, and
 * one collection cycle.
 *
 * Design:
 *  - Entities. Each GPU is a gpu_dev; with MIG enabled, each GPU instance
 *    (one per GPU_I_ID; extra compute instances of the same GI are
 *    skipped, or their series would collide) is a gpu_mig under it. Each
 *    entity's label string is rendered once at the static refresh and
 *    reused by every sample (expo `labels`); sample-specific labels go in
 *    `extra`.
 *  - Sources. Every NVML call or field a metric needs is a "source"; a
 *    source that answers NOT_SUPPORTED (and the like) is switched off for
 *    that GPU until the next static refresh (~60 s, so a changed MIG mode
 *    is noticed) and noted once per GPU for the log (one line per GPU per
 *    cycle listing what became unavailable). A NULL symbol is logged once
 *    at load time (nvml_missing) and never called.
 *  - Fields. The per-device fields (ECC, retired pages, remapped rows,
 *    NVLink, violations, energy, PCIe, memory temperature) go into one
 *    nvmlDeviceGetFieldValues call per GPU; each value's own nvmlReturn
 *    decides. A field the batch cannot serve falls back to its direct call
 *    where NVML has one (mode DIRECT), else it is off.
 *  - GPM. Two samples per entity, swapped each cycle, at least 100 ms
 *    apart (the first pair is started in agent_gpu_new). Values are
 *    computed from the previous cycle's sample and this one.
 *  - Lost GPUs. NVML_ERROR_GPU_IS_LOST from any call marks the GPU lost:
 *    from then on only kelvin_gpu_lost{...} 1 and its XID metrics (from
 *    the XID store, not NVML) are served for it.
 *  - Families are created for every enabled metric in catalog order at the
 *    start of the cycle; the writer skips those that got no sample.
 *
 * Threads: collect() runs on the core's collector thread; the XID watcher
 * (gpu_events.c) and the kmsg tail (xid.c) feed the XID store, which
 * collect() reads. Nothing else is shared.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent/gpu_int.h"
#include "agent/procs.h"
#include "agent/xid.h"
#include "base/buf.h"
#include "base/err.h"
#include "base/log.h"
#include "base/time.h"

#define GPU_MAX_DEVICES       64
#define GPU_MAX_MIG           8 /* GPU instances per GPU (7 on A100/H100) */
#define GPU_MAX_MIG_SCAN      64
#define GPU_MAX_FANS          8
#define GPU_MAX_PROCS         256 /* per entity */
#define GPU_STATIC_REFRESH_NS (60LL * 1000000000LL)
#define GPU_GPM_MIN_NS        (100LL * 1000000LL)
#define NS_PER_S              1e9

/* ---- sources ----------------------------------------------------------- */
enum {
    SRC_CLOCK_SM,
    SRC_CLOCK_MEM,
    SRC_TEMP,
    SRC_POWER,
    SRC_UTIL,
    SRC_ENC,
    SRC_DEC,
    SRC_MEMINFO,
    SRC_REASONS,
    SRC_FANS,
    SRC_LICENSE,
    SRC_POWER_LIMIT,
    SRC_ENFORCED_LIMIT,
    SRC_MAXCLOCK,
    SRC_GPM,
    SRC_PROCS,
    SRC_FIELDS,
    SRC__COUNT
};

static const char *const src_names[SRC__COUNT] = {
    [SRC_CLOCK_SM] = "nvmlDeviceGetClockInfo(SM)",
    [SRC_CLOCK_MEM] = "nvmlDeviceGetClockInfo(MEM)",
    [SRC_TEMP] = "nvmlDeviceGetTemperature",
    [SRC_POWER] = "nvmlDeviceGetPowerUsage",
    [SRC_UTIL] = "nvmlDeviceGetUtilizationRates",
    [SRC_ENC] = "nvmlDeviceGetEncoderUtilization",
    [SRC_DEC] = "nvmlDeviceGetDecoderUtilization",
    [SRC_MEMINFO] = "nvmlDeviceGetMemoryInfo",
    [SRC_REASONS] = "nvmlDeviceGetCurrentClocksEventReasons",
    [SRC_FANS] = "nvmlDeviceGetFanSpeed",
    [SRC_LICENSE] = "nvmlDeviceGetGridLicensableFeatures_v4",
    [SRC_POWER_LIMIT] = "nvmlDeviceGetPowerManagementLimit",
    [SRC_ENFORCED_LIMIT] = "nvmlDeviceGetEnforcedPowerLimit",
    [SRC_MAXCLOCK] = "nvmlDeviceGetMaxClockInfo",
    [SRC_GPM] = "GPM (nvmlGpmSampleGet)",
    [SRC_PROCS] = "running processes",
    [SRC_FIELDS] = "nvmlDeviceGetFieldValues",
};

/* ---- fields ------------------------------------------------------------ */
typedef struct field_def {
    unsigned id;
    int dcgm;           /* GPU_M_* served as is, or -1 */
    int kel;            /* GPU_M_* served scaled, or -1 */
    const char *kextra; /* kel's sample label, or NULL */
    double kscale;
    const char *what;
} field_def;

static const field_def fields[] = {
    {NVML_FI_DEV_MEMORY_TEMP, GPU_M_MEMORY_TEMP, GPU_M_K_MEMORY_TEMP, NULL, 1, "memory temperature"},
    {NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION, GPU_M_TOTAL_ENERGY_CONSUMPTION, -1, NULL, 1, "energy"},
    {NVML_FI_DEV_PCIE_REPLAY_COUNTER, GPU_M_PCIE_REPLAY_COUNTER, GPU_M_K_PCIE_REPLAYS, NULL, 1,
     "PCIe replays"},
    {NVML_FI_DEV_ECC_SBE_VOL_TOTAL, GPU_M_ECC_SBE_VOL_TOTAL, GPU_M_K_ECC_VOLATILE, "type=\"corrected\"", 1,
     "volatile SBE"},
    {NVML_FI_DEV_ECC_DBE_VOL_TOTAL, GPU_M_ECC_DBE_VOL_TOTAL, GPU_M_K_ECC_VOLATILE, "type=\"uncorrected\"", 1,
     "volatile DBE"},
    {NVML_FI_DEV_ECC_SBE_AGG_TOTAL, GPU_M_ECC_SBE_AGG_TOTAL, GPU_M_K_ECC_AGGREGATE, "type=\"corrected\"", 1,
     "aggregate SBE"},
    {NVML_FI_DEV_ECC_DBE_AGG_TOTAL, GPU_M_ECC_DBE_AGG_TOTAL, GPU_M_K_ECC_AGGREGATE, "type=\"uncorrected\"", 1,
     "aggregate DBE"},
    {NVML_FI_DEV_RETIRED_SBE, GPU_M_RETIRED_SBE, GPU_M_K_RETIRED_PAGES, "cause=\"single_bit\"", 1,
     "retired SBE"},
    {NVML_FI_DEV_RETIRED_DBE, GPU_M_RETIRED_DBE, GPU_M_K_RETIRED_PAGES, "cause=\"double_bit\"", 1,
     "retired DBE"},
    {NVML_FI_DEV_RETIRED_PENDING, GPU_M_RETIRED_PENDING, GPU_M_K_RETIRED_PENDING, NULL, 1, "retired pending"},
    {NVML_FI_DEV_REMAPPED_COR, GPU_M_CORRECTABLE_REMAPPED_ROWS, GPU_M_K_REMAPPED_ROWS, "type=\"correctable\"",
     1, "remapped rows (correctable)"},
    {NVML_FI_DEV_REMAPPED_UNC, GPU_M_UNCORRECTABLE_REMAPPED_ROWS, GPU_M_K_REMAPPED_ROWS,
     "type=\"uncorrectable\"", 1, "remapped rows (uncorrectable)"},
    {NVML_FI_DEV_REMAPPED_PENDING, -1, GPU_M_K_REMAP_PENDING, NULL, 1, "remap pending"},
    {NVML_FI_DEV_REMAPPED_FAILURE, GPU_M_ROW_REMAP_FAILURE, GPU_M_K_REMAP_FAILED, NULL, 1, "remap failure"},
    {NVML_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL, GPU_M_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL,
     GPU_M_K_NVLINK_ERRORS, "type=\"crc_flit\"", 1, "NVLink CRC flit errors"},
    {NVML_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL, GPU_M_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL,
     GPU_M_K_NVLINK_ERRORS, "type=\"crc_data\"", 1, "NVLink CRC data errors"},
    {NVML_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL, GPU_M_NVLINK_REPLAY_ERROR_COUNT_TOTAL,
     GPU_M_K_NVLINK_ERRORS, "type=\"replay\"", 1, "NVLink replays"},
    {NVML_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL, GPU_M_NVLINK_RECOVERY_ERROR_COUNT_TOTAL,
     GPU_M_K_NVLINK_ERRORS, "type=\"recovery\"", 1, "NVLink recoveries"},
    {NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX, -1, GPU_M_K_NVLINK_BYTES, "direction=\"tx\"", 1024, "NVLink TX"},
    {NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX, -1, GPU_M_K_NVLINK_BYTES, "direction=\"rx\"", 1024, "NVLink RX"},
    {NVML_FI_DEV_PERF_POLICY_POWER, GPU_M_POWER_VIOLATION, GPU_M_K_VIOLATION, "policy=\"power\"", 1e-9,
     "power violation"},
    {NVML_FI_DEV_PERF_POLICY_THERMAL, GPU_M_THERMAL_VIOLATION, GPU_M_K_VIOLATION, "policy=\"thermal\"", 1e-9,
     "thermal violation"},
    {NVML_FI_DEV_PERF_POLICY_SYNC_BOOST, GPU_M_SYNC_BOOST_VIOLATION, GPU_M_K_VIOLATION,
     "policy=\"sync_boost\"", 1e-9, "sync boost violation"},
    {NVML_FI_DEV_PERF_POLICY_BOARD_LIMIT, GPU_M_BOARD_LIMIT_VIOLATION, GPU_M_K_VIOLATION,
     "policy=\"board_limit\"", 1e-9, "board limit violation"},
    {NVML_FI_DEV_PERF_POLICY_LOW_UTILIZATION, GPU_M_LOW_UTIL_VIOLATION, GPU_M_K_VIOLATION,
     "policy=\"low_utilization\"", 1e-9, "low utilisation violation"},
    {NVML_FI_DEV_PERF_POLICY_RELIABILITY, GPU_M_RELIABILITY_VIOLATION, GPU_M_K_VIOLATION,
     "policy=\"reliability\"", 1e-9, "reliability violation"},
    {NVML_FI_DEV_PCIE_COUNT_TX_BYTES, -1, GPU_M_K_PCIE_BYTES, "direction=\"tx\"", 1, "PCIe TX bytes"},
    {NVML_FI_DEV_PCIE_COUNT_RX_BYTES, -1, GPU_M_K_PCIE_BYTES, "direction=\"rx\"", 1, "PCIe RX bytes"},
};
#define NFIELDS (sizeof fields / sizeof fields[0])
enum { FMODE_BATCH = 0, FMODE_DIRECT = 1, FMODE_OFF = 2 };

/* ---- GPM --------------------------------------------------------------- */
typedef struct gpm_def {
    unsigned id;
    int dcgm, kel;
    const char *kextra;
    double dscale, kscale;
} gpm_def;

#define MIB 1048576.0
static const gpm_def gpms[] = {
    {NVML_GPM_METRIC_GRAPHICS_UTIL, GPU_M_PROF_GR_ENGINE_ACTIVE, -1, NULL, 0.01, 0},
    {NVML_GPM_METRIC_SM_UTIL, GPU_M_PROF_SM_ACTIVE, GPU_M_K_SM_ACTIVE, NULL, 0.01, 0.01},
    {NVML_GPM_METRIC_SM_OCCUPANCY, GPU_M_PROF_SM_OCCUPANCY, GPU_M_K_SM_OCCUPANCY, NULL, 0.01, 0.01},
    {NVML_GPM_METRIC_ANY_TENSOR_UTIL, GPU_M_PROF_PIPE_TENSOR_ACTIVE, GPU_M_K_TENSOR_ACTIVE, NULL, 0.01, 0.01},
    {NVML_GPM_METRIC_DRAM_BW_UTIL, GPU_M_PROF_DRAM_ACTIVE, GPU_M_K_DRAM_ACTIVE, NULL, 0.01, 0.01},
    {NVML_GPM_METRIC_FP64_UTIL, GPU_M_PROF_PIPE_FP64_ACTIVE, GPU_M_K_PIPE_ACTIVE, "pipe=\"fp64\"", 0.01,
     0.01},
    {NVML_GPM_METRIC_FP32_UTIL, GPU_M_PROF_PIPE_FP32_ACTIVE, GPU_M_K_PIPE_ACTIVE, "pipe=\"fp32\"", 0.01,
     0.01},
    {NVML_GPM_METRIC_FP16_UTIL, GPU_M_PROF_PIPE_FP16_ACTIVE, GPU_M_K_PIPE_ACTIVE, "pipe=\"fp16\"", 0.01,
     0.01},
    {NVML_GPM_METRIC_PCIE_TX_PER_SEC, GPU_M_PROF_PCIE_TX_BYTES, GPU_M_K_PCIE_THROUGHPUT, "direction=\"tx\"",
     MIB, MIB},
    {NVML_GPM_METRIC_PCIE_RX_PER_SEC, GPU_M_PROF_PCIE_RX_BYTES, GPU_M_K_PCIE_THROUGHPUT, "direction=\"rx\"",
     MIB, MIB},
    {NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC, -1, GPU_M_K_NVLINK_THROUGHPUT, "direction=\"tx\"", 0, MIB},
    {NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC, -1, GPU_M_K_NVLINK_THROUGHPUT, "direction=\"rx\"", 0, MIB},
};
#define NGPM (sizeof gpms / sizeof gpms[0])

typedef struct gpu_gpm {
    nvmlGpmSample_t s[2];
    int cur;       /* the sample to fill next */
    int have_prev; /* s[cur ^ 1] holds a sample */
    int64_t prev_ns;
    int valid; /* v[] holds values */
    double v[NGPM];
    uint8_t ok[NGPM];
} gpu_gpm;

/* ---- entities ---------------------------------------------------------- */
typedef struct gpu_mig {
    nvmlDevice_t h;
    unsigned gi, ci;
    char profile[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
    char *labels;
    gpu_gpm gpm;
    uint8_t off_mem, off_gpm, off_procs;
} gpu_mig;

typedef struct gpu_dev {
    unsigned index;
    nvmlDevice_t h;
    char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
    char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
    char bus_id[NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE];
    char serial[NVML_DEVICE_SERIAL_BUFFER_SIZE];
    char vbios[NVML_DEVICE_VBIOS_VERSION_BUFFER_SIZE];
    char brand[32];
    char inforom[4][NVML_DEVICE_INFOROM_VERSION_BUFFER_SIZE + 16]; /* oem, ecc, power, image */
    char *labels;                                                  /* the entity's label string (owned) */
    char *info_extra; /* kelvin_gpu_info's extra labels (owned) */
    int lost;
    int xid_watching; /* NVML XID events registered */
    /* static values (read at refresh) */
    int have_plimit, have_elimit;
    double plimit_w, elimit_w;
    int have_maxclk[4];
    double maxclk_hz[4];
    int have_supported_reasons;
    unsigned long long supported_reasons;
    unsigned nfans;
    int mig; /* MIG mode enabled */
    gpu_mig migs[GPU_MAX_MIG];
    size_t nmig;
    int gpm_supported; /* -1 unknown, 0 no, 1 yes */
    gpu_gpm gpm;
    /* NVLink bandwidth rate (DCGM's) */
    int have_nvl;
    double nvl_kib;
    int64_t nvl_ns;
    /* source state: off until the next static refresh; noted once ever */
    uint8_t off[SRC__COUNT];
    uint8_t noted[SRC__COUNT];
    uint8_t fmode[NFIELDS];
    uint8_t fnoted[NFIELDS];
    base_buf notes; /* this cycle's newly unavailable sources, for one log line */
} gpu_dev;

struct agent_gpu {
    /* options (copied) */
    char *nvml_library, *hostname, *kmsg_path, *procfs;
    int simulated;
    int64_t interval_ms;
    gpu_counters counters;
    /* NVML */
    nvml_lib *lib;
    int up;
    int tried; /* nvml_start has run at least once */
    char down_reason[256];
    int64_t last_try_ns;
    char driver_version[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE];
    char nvml_version[NVML_SYSTEM_NVML_VERSION_BUFFER_SIZE];
    gpu_dev *devs;
    size_t ndevs;
    int64_t last_static_ns;
    atomic_int mig_changed;
    /* XIDs */
    agent_xid *xid;
    int kmsg_running;
    gpu_events *events;
    /* per cycle */
    expo_mset *ms;
    expo_family *fam[GPU_M__COUNT];
    nvmlGpmMetricsGet_t *gpm_get;
    nvmlFieldValue_t fv[NFIELDS];
    gpu_procinfo procs[GPU_MAX_PROCS];
    int gpm_first_wait_done;
};

static const char *const reason_extra[] = {
    "reason=\"gpu_idle\"",    "reason=\"clocks_setting\"", "reason=\"power_cap\"",
    "reason=\"hw_slowdown\"", "reason=\"sync_boost\"",     "reason=\"sw_thermal\"",
    "reason=\"hw_thermal\"",  "reason=\"hw_power_brake\"", "reason=\"display_clocks\"",
};
static const char *const fan_extra[GPU_MAX_FANS] = {
    "fan=\"0\"", "fan=\"1\"", "fan=\"2\"", "fan=\"3\"", "fan=\"4\"", "fan=\"5\"", "fan=\"6\"", "fan=\"7\"",
};
static const char *const clock_extra[4] = {"clock=\"graphics\"", "clock=\"sm\"", "clock=\"mem\"",
                                           "clock=\"video\""};

static const char *brand_name(nvmlBrandType_t b) {
    static const char *const names[] = {
        "Unknown",
        "Quadro",
        "Tesla",
        "NVS",
        "Grid",
        "GeForce",
        "Titan",
        "NVIDIA Virtual Applications",
        "NVIDIA Virtual PC",
        "NVIDIA Virtual Compute Server",
        "NVIDIA RTX Virtual Workstation",
        "NVIDIA Cloud Gaming",
        "Quadro RTX",
        "NVIDIA RTX",
        "NVIDIA",
        "GeForce RTX",
        "Titan RTX",
    };
    if ((unsigned)b < sizeof names / sizeof names[0]) return names[b];
    return "Unknown";
}

static char *dup_or_null(const char *s) {
    if (!s) return NULL;
    size_t n = strlen(s) + 1;
    char *p = malloc(n);
    if (p) memcpy(p, s, n);
    return p;
}

static int enabled(const agent_gpu *g, int m) {
    return g->counters.metric[m];
}

/* ---- notes and error handling ------------------------------------------ */

static void note(agent_gpu *g, gpu_dev *d, const char *what, nvmlReturn_t r) {
    if (d->notes.len) base_buf_puts(&d->notes, ", ");
    base_buf_printf(&d->notes, "%s (%s)", what, nvml_strerror(g->lib, r));
}

static int permanent(nvmlReturn_t r) {
    return r == NVML_ERROR_NOT_SUPPORTED || r == NVML_ERROR_FUNCTION_NOT_FOUND ||
           r == NVML_ERROR_NO_PERMISSION || r == NVML_ERROR_INVALID_ARGUMENT ||
           r == NVML_ERROR_ARGUMENT_VERSION_MISMATCH || r == NVML_ERROR_DEPRECATED;
}

static void mark_lost(agent_gpu *g, gpu_dev *d) {
    (void)g;
    if (d->lost) return;
    d->lost = 1;
    char idx[16];
    snprintf(idx, sizeof idx, "%u", d->index);
    base_log(BASE_LOG_WARN, "GPU is lost (NVML_ERROR_GPU_IS_LOST); its metrics are no longer served", "gpu",
             idx, "UUID", d->uuid, "pci_bus_id", d->bus_id, NULL);
}

/* Checks a device call's result: 1 on success. On failure the source is
 * switched off (permanent errors, noted once) or skipped this cycle. */
static int chk(agent_gpu *g, gpu_dev *d, int src, nvmlReturn_t r) {
    if (r == NVML_SUCCESS) return 1;
    if (r == NVML_ERROR_GPU_IS_LOST) {
        mark_lost(g, d);
        return 0;
    }
    if (permanent(r)) {
        d->off[src] = 1;
        if (!d->noted[src]) {
            d->noted[src] = 1;
            note(g, d, src_names[src], r);
        }
    }
    return 0;
}

/* Whether any of the metrics is served. */
static int want2(const agent_gpu *g, int a, int b) {
    return (a >= 0 && enabled(g, a)) || (b >= 0 && enabled(g, b));
}

static void emit(agent_gpu *g, int m, const char *labels, const char *extra, double v) {
    if (m < 0 || !g->fam[m] || !isfinite(v)) return;
    expo_mset_add(g->ms, g->fam[m], "", labels, extra, v);
}

/* ---- labels ------------------------------------------------------------- */

static int render_labels(agent_gpu *g, gpu_dev *d, const gpu_mig *mig, char **ret) {
    base_buf b;
    base_buf_init(&b, 0);
    char idx[16], dev[32];
    snprintf(idx, sizeof idx, "%u", d->index);
    snprintf(dev, sizeof dev, "nvidia%u", d->index);
    expo_label_append(&b, "gpu", idx);
    expo_label_append(&b, "UUID", d->uuid);
    expo_label_append(&b, "pci_bus_id", d->bus_id);
    expo_label_append(&b, "device", dev);
    expo_label_append(&b, "modelName", d->name);
    if (mig) {
        char gi[16];
        snprintf(gi, sizeof gi, "%u", mig->gi);
        expo_label_append(&b, "GPU_I_PROFILE", mig->profile);
        expo_label_append(&b, "GPU_I_ID", gi);
    }
    if (g->hostname && *g->hostname) expo_label_append(&b, "Hostname", g->hostname);
    /* Simulated GPUs say so on every series, so no dashboard or alert can
     * mistake them for hardware. */
    if (g->simulated) expo_label_append(&b, "simulated", "true");
    /* label fields, in name order as dcgm-exporter's template ranges a map */
    static const int order[] = {GPU_L_DRIVER_VERSION,  GPU_L_BRAND,
                                GPU_L_ECC_INFOROM_VER, GPU_L_INFOROM_IMAGE_VER,
                                GPU_L_OEM_INFOROM_VER, GPU_L_POWER_INFOROM_VER,
                                GPU_L_SERIAL,          GPU_L_VBIOS_VERSION,
                                GPU_L_NVML_VERSION};
    _Static_assert(sizeof order / sizeof order[0] == GPU_L__COUNT, "every label field ordered");
    for (size_t i = 0; i < GPU_L__COUNT; i++) {
        int l = order[i];
        if (!g->counters.label[l]) continue;
        const char *v = NULL;
        switch (l) {
        case GPU_L_DRIVER_VERSION: v = g->driver_version; break;
        case GPU_L_NVML_VERSION: v = g->nvml_version; break;
        case GPU_L_BRAND: v = d->brand; break;
        case GPU_L_SERIAL: v = d->serial; break;
        case GPU_L_OEM_INFOROM_VER: v = d->inforom[0]; break;
        case GPU_L_ECC_INFOROM_VER: v = d->inforom[1]; break;
        case GPU_L_POWER_INFOROM_VER: v = d->inforom[2]; break;
        case GPU_L_INFOROM_IMAGE_VER: v = d->inforom[3]; break;
        case GPU_L_VBIOS_VERSION: v = d->vbios; break;
        }
        if (v && *v) expo_label_append(&b, agent__gpu_label_names[l], v);
    }
    if (base_buf_err(&b)) {
        base_buf_free(&b);
        return BASE_E_NOMEM;
    }
    char *s = base_buf_steal(&b, NULL);
    if (!s) s = dup_or_null("");
    if (!s) return BASE_E_NOMEM;
    *ret = s;
    return 0;
}

static int render_info(agent_gpu *g, gpu_dev *d, char **ret) {
    base_buf b;
    base_buf_init(&b, 0);
    if (*g->driver_version) expo_label_append(&b, "driver_version", g->driver_version);
    if (*g->nvml_version) expo_label_append(&b, "nvml_version", g->nvml_version);
    if (*d->brand) expo_label_append(&b, "brand", d->brand);
    if (*d->serial) expo_label_append(&b, "serial", d->serial);
    if (*d->vbios) expo_label_append(&b, "vbios_version", d->vbios);
    if (base_buf_err(&b)) {
        base_buf_free(&b);
        return BASE_E_NOMEM;
    }
    char *s = base_buf_steal(&b, NULL);
    if (!s) s = dup_or_null("");
    if (!s) return BASE_E_NOMEM;
    *ret = s;
    return 0;
}

/* ---- GPM ---------------------------------------------------------------- */

static void gpm_free(agent_gpu *g, gpu_gpm *p) {
    for (int i = 0; i < 2; i++)
        if (p->s[i] && g->lib && g->lib->nvmlGpmSampleFree) g->lib->nvmlGpmSampleFree(p->s[i]);
    memset(p, 0, sizeof *p);
}

static int gpm_usable(const agent_gpu *g) {
    const nvml_lib *l = g->lib;
    return l->nvmlGpmSampleAlloc && l->nvmlGpmSampleFree && l->nvmlGpmSampleGet && l->nvmlGpmMetricsGet &&
           g->gpm_get;
}

/* Takes one sample for the entity (parent device, or a GI when gi >= 0)
 * and, when a previous one is at least 100 ms old, computes the metrics.
 * Returns NVML's code of the sample call. */
static nvmlReturn_t gpm_cycle(agent_gpu *g, gpu_gpm *p, nvmlDevice_t dev, long gi) {
    const nvml_lib *l = g->lib;
    if (!p->s[0]) {
        nvmlReturn_t r = l->nvmlGpmSampleAlloc(&p->s[0]);
        if (r != NVML_SUCCESS) return r;
        r = l->nvmlGpmSampleAlloc(&p->s[1]);
        if (r != NVML_SUCCESS) {
            l->nvmlGpmSampleFree(p->s[0]);
            p->s[0] = NULL;
            return r;
        }
        p->cur = 0;
        p->have_prev = 0;
    }
    int64_t now = base_mono_ns();
    if (p->have_prev && now - p->prev_ns < GPU_GPM_MIN_NS) return NVML_SUCCESS; /* keep last values */
    nvmlReturn_t r;
    if (gi >= 0) {
        if (!l->nvmlGpmMigSampleGet) return NVML_ERROR_FUNCTION_NOT_FOUND;
        r = l->nvmlGpmMigSampleGet(dev, (unsigned)gi, p->s[p->cur]);
    } else {
        r = l->nvmlGpmSampleGet(dev, p->s[p->cur]);
    }
    if (r != NVML_SUCCESS) return r;
    if (p->have_prev) {
        nvmlGpmMetricsGet_t *mg = g->gpm_get;
        memset(mg, 0, offsetof(nvmlGpmMetricsGet_t, metrics) + NGPM * sizeof mg->metrics[0]);
        mg->version = NVML_GPM_METRICS_GET_VERSION;
        mg->numMetrics = (unsigned)NGPM;
        mg->sample1 = p->s[p->cur ^ 1];
        mg->sample2 = p->s[p->cur];
        for (size_t i = 0; i < NGPM; i++) mg->metrics[i].metricId = gpms[i].id;
        nvmlReturn_t mr = l->nvmlGpmMetricsGet(mg);
        p->valid = mr == NVML_SUCCESS;
        for (size_t i = 0; i < NGPM; i++) {
            p->ok[i] = p->valid && mg->metrics[i].nvmlReturn == NVML_SUCCESS &&
                       isfinite(mg->metrics[i].value) && mg->metrics[i].value >= 0;
            p->v[i] = p->ok[i] ? mg->metrics[i].value : 0;
        }
    }
    p->have_prev = 1;
    p->prev_ns = now;
    p->cur ^= 1;
    return NVML_SUCCESS;
}

/* Serves the GPM values of scope `scope` (GPU_SC_DEV or GPU_SC_INST; 0 = all). */
static void gpm_emit(agent_gpu *g, const gpu_gpm *p, const char *labels, int scope) {
    if (!p->valid) return;
    for (size_t i = 0; i < NGPM; i++) {
        if (!p->ok[i]) continue;
        const gpm_def *d = &gpms[i];
        int m = d->dcgm >= 0 ? d->dcgm : d->kel;
        if (scope && agent__gpu_metric_scope(m) != scope) continue;
        if (d->dcgm >= 0) emit(g, d->dcgm, labels, NULL, p->v[i] * d->dscale);
        if (d->kel >= 0) emit(g, d->kel, labels, d->kextra, p->v[i] * d->kscale);
    }
}

static int gpm_wanted(const agent_gpu *g) {
    for (size_t i = 0; i < NGPM; i++)
        if (want2(g, gpms[i].dcgm, gpms[i].kel)) return 1;
    return 0;
}

/* ---- static data -------------------------------------------------------- */

static void read_string(nvmlReturn_t (*fn)(nvmlDevice_t, char *, unsigned int), nvmlDevice_t h, char *buf,
                        size_t len) {
    char tmp[128];
    if (fn && len <= sizeof tmp && fn(h, tmp, (unsigned)len) == NVML_SUCCESS) {
        tmp[len - 1] = '\0';
        memcpy(buf, tmp, len);
    }
}

/* The MIG profile name: the text after "MIG " in the instance's name (as
 * DCGM does), else the GPU instance profile's name. */
static void mig_profile(agent_gpu *g, gpu_dev *d, gpu_mig *m) {
    const nvml_lib *l = g->lib;
    char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE] = "";
    m->profile[0] = '\0';
    if (l->nvmlDeviceGetName && l->nvmlDeviceGetName(m->h, name, sizeof name) == NVML_SUCCESS) {
        name[sizeof name - 1] = '\0';
        const char *p = strstr(name, "MIG ");
        if (p) {
            snprintf(m->profile, sizeof m->profile, "%s", p + 4);
            return;
        }
    }
    nvmlGpuInstance_t gi;
    nvmlGpuInstanceInfo_t info;
    if (l->nvmlDeviceGetGpuInstanceById && l->nvmlGpuInstanceGetInfo &&
        l->nvmlDeviceGetGpuInstanceProfileInfoV &&
        l->nvmlDeviceGetGpuInstanceById(d->h, m->gi, &gi) == NVML_SUCCESS &&
        l->nvmlGpuInstanceGetInfo(gi, &info) == NVML_SUCCESS) {
        for (unsigned p = 0; p < NVML_GPU_INSTANCE_PROFILE_COUNT; p++) {
            nvmlGpuInstanceProfileInfo_v2_t pi;
            memset(&pi, 0, sizeof pi);
            pi.version = nvmlGpuInstanceProfileInfo_v2;
            if (l->nvmlDeviceGetGpuInstanceProfileInfoV(d->h, p, &pi) != NVML_SUCCESS ||
                pi.id != info.profileId)
                continue;
            pi.name[sizeof pi.name - 1] = '\0';
            const char *s = strstr(pi.name, "MIG ");
            snprintf(m->profile, sizeof m->profile, "%s", s ? s + 4 : pi.name);
            return;
        }
    }
}

static void refresh_mig(agent_gpu *g, gpu_dev *d) {
    const nvml_lib *l = g->lib;
    gpu_mig old[GPU_MAX_MIG];
    size_t nold = d->nmig;
    memcpy(old, d->migs, sizeof old);
    d->nmig = 0;
    d->mig = 0;
    unsigned cur = 0, pend = 0, max = 0;
    if (l->nvmlDeviceGetMigMode && l->nvmlDeviceGetMigMode(d->h, &cur, &pend) == NVML_SUCCESS &&
        cur == NVML_DEVICE_MIG_ENABLE && l->nvmlDeviceGetMaxMigDeviceCount &&
        l->nvmlDeviceGetMigDeviceHandleByIndex && l->nvmlDeviceGetGpuInstanceId &&
        l->nvmlDeviceGetMaxMigDeviceCount(d->h, &max) == NVML_SUCCESS) {
        d->mig = 1;
        if (max > GPU_MAX_MIG_SCAN) max = GPU_MAX_MIG_SCAN;
        for (unsigned i = 0; i < max && d->nmig < GPU_MAX_MIG; i++) {
            gpu_mig m;
            memset(&m, 0, sizeof m);
            if (l->nvmlDeviceGetMigDeviceHandleByIndex(d->h, i, &m.h) != NVML_SUCCESS) continue;
            if (l->nvmlDeviceGetGpuInstanceId(m.h, &m.gi) != NVML_SUCCESS) continue;
            if (l->nvmlDeviceGetComputeInstanceId) l->nvmlDeviceGetComputeInstanceId(m.h, &m.ci);
            int dup = 0;
            for (size_t k = 0; k < d->nmig; k++) dup |= d->migs[k].gi == m.gi;
            if (dup) continue; /* one entity per GPU instance */
            mig_profile(g, d, &m);
            /* keep the GPM samples of an instance that is still there */
            for (size_t k = 0; k < nold; k++)
                if (old[k].h && old[k].gi == m.gi) {
                    m.gpm = old[k].gpm;
                    memset(&old[k].gpm, 0, sizeof old[k].gpm);
                    m.off_gpm = old[k].off_gpm;
                }
            d->migs[d->nmig++] = m;
        }
    }
    for (size_t k = 0; k < nold; k++) {
        gpm_free(g, &old[k].gpm);
        free(old[k].labels);
    }
}

static int refresh_device(agent_gpu *g, gpu_dev *d) {
    const nvml_lib *l = g->lib;
    nvmlReturn_t r;
    if (!d->h) return 0; /* lost before it could be opened */
    memset(d->off, 0, sizeof d->off);
    for (size_t f = 0; f < NFIELDS; f++)
        if (d->fmode[f] == FMODE_OFF) d->fmode[f] = FMODE_BATCH;
    read_string(l->nvmlDeviceGetUUID, d->h, d->uuid, sizeof d->uuid);
    read_string(l->nvmlDeviceGetName, d->h, d->name, sizeof d->name);
    read_string(l->nvmlDeviceGetSerial, d->h, d->serial, sizeof d->serial);
    read_string(l->nvmlDeviceGetVbiosVersion, d->h, d->vbios, sizeof d->vbios);
    if (l->device_get_pci_info) {
        nvmlPciInfo_t pci;
        memset(&pci, 0, sizeof pci);
        r = l->device_get_pci_info(d->h, &pci);
        if (r == NVML_ERROR_GPU_IS_LOST) mark_lost(g, d);
        if (r == NVML_SUCCESS) {
            pci.busId[sizeof pci.busId - 1] = '\0';
            pci.busIdLegacy[sizeof pci.busIdLegacy - 1] = '\0';
            snprintf(d->bus_id, sizeof d->bus_id, "%s", pci.busId[0] ? pci.busId : pci.busIdLegacy);
        }
    }
    nvmlBrandType_t brand;
    if (l->nvmlDeviceGetBrand && l->nvmlDeviceGetBrand(d->h, &brand) == NVML_SUCCESS)
        snprintf(d->brand, sizeof d->brand, "%s", brand_name(brand));
    if (l->nvmlDeviceGetInforomVersion) {
        const nvmlInforomObject_t objs[3] = {NVML_INFOROM_OEM, NVML_INFOROM_ECC, NVML_INFOROM_POWER};
        const int lab[3] = {GPU_L_OEM_INFOROM_VER, GPU_L_ECC_INFOROM_VER, GPU_L_POWER_INFOROM_VER};
        for (int i = 0; i < 3; i++) {
            if (!g->counters.label[lab[i]]) continue;
            char v[NVML_DEVICE_INFOROM_VERSION_BUFFER_SIZE];
            if (l->nvmlDeviceGetInforomVersion(d->h, objs[i], v, sizeof v) == NVML_SUCCESS) {
                v[sizeof v - 1] = '\0';
                snprintf(d->inforom[i], sizeof d->inforom[i], "%s", v);
            }
        }
    }
    if (g->counters.label[GPU_L_INFOROM_IMAGE_VER])
        read_string(l->nvmlDeviceGetInforomImageVersion, d->h, d->inforom[3],
                    NVML_DEVICE_INFOROM_VERSION_BUFFER_SIZE);
    if (d->lost) return 0;

    unsigned mw;
    d->have_plimit = d->have_elimit = 0;
    if (enabled(g, GPU_M_K_POWER_LIMIT) && l->nvmlDeviceGetPowerManagementLimit &&
        chk(g, d, SRC_POWER_LIMIT, l->nvmlDeviceGetPowerManagementLimit(d->h, &mw))) {
        d->have_plimit = 1;
        d->plimit_w = mw / 1000.0;
    }
    if (enabled(g, GPU_M_K_ENFORCED_POWER_LIMIT) && l->nvmlDeviceGetEnforcedPowerLimit &&
        chk(g, d, SRC_ENFORCED_LIMIT, l->nvmlDeviceGetEnforcedPowerLimit(d->h, &mw))) {
        d->have_elimit = 1;
        d->elimit_w = mw / 1000.0;
    }
    if (enabled(g, GPU_M_K_CLOCK_MAX) && l->nvmlDeviceGetMaxClockInfo) {
        for (int c = 0; c < 4; c++) {
            unsigned mhz;
            r = l->nvmlDeviceGetMaxClockInfo(d->h, (nvmlClockType_t)c, &mhz);
            d->have_maxclk[c] = r == NVML_SUCCESS;
            d->maxclk_hz[c] = mhz * 1e6;
            if (r != NVML_SUCCESS && c == 0) chk(g, d, SRC_MAXCLOCK, r);
        }
    }
    d->have_supported_reasons = 0;
    if (l->device_get_supported_clocks_event_reasons &&
        l->device_get_supported_clocks_event_reasons(d->h, &d->supported_reasons) == NVML_SUCCESS)
        d->have_supported_reasons = 1;
    d->nfans = 0;
    if (l->nvmlDeviceGetNumFans) {
        unsigned n;
        if (l->nvmlDeviceGetNumFans(d->h, &n) == NVML_SUCCESS) d->nfans = n > GPU_MAX_FANS ? GPU_MAX_FANS : n;
    } else if (l->nvmlDeviceGetFanSpeed) {
        d->nfans = 1; /* the legacy call reads fan 0 */
    }
    if (d->gpm_supported < 0) {
        d->gpm_supported = 0;
        if (l->nvmlGpmQueryDeviceSupport && gpm_usable(g)) {
            nvmlGpmSupport_t s;
            memset(&s, 0, sizeof s);
            s.version = NVML_GPM_SUPPORT_VERSION;
            if (l->nvmlGpmQueryDeviceSupport(d->h, &s) == NVML_SUCCESS && s.isSupportedDevice)
                d->gpm_supported = 1;
        }
    }
    refresh_mig(g, d);
    return 0;
}

static void free_device(agent_gpu *g, gpu_dev *d) {
    gpm_free(g, &d->gpm);
    for (size_t k = 0; k < d->nmig; k++) {
        gpm_free(g, &d->migs[k].gpm);
        free(d->migs[k].labels);
    }
    free(d->labels);
    free(d->info_extra);
    base_buf_free(&d->notes);
}

static int refresh_static(agent_gpu *g) {
    const nvml_lib *l = g->lib;
    if (l->nvmlSystemGetDriverVersion) {
        char v[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE];
        if (l->nvmlSystemGetDriverVersion(v, sizeof v) == NVML_SUCCESS) {
            v[sizeof v - 1] = '\0';
            memcpy(g->driver_version, v, sizeof v);
        }
    }
    if (l->nvmlSystemGetNVMLVersion) {
        char v[NVML_SYSTEM_NVML_VERSION_BUFFER_SIZE];
        if (l->nvmlSystemGetNVMLVersion(v, sizeof v) == NVML_SUCCESS) {
            v[sizeof v - 1] = '\0';
            memcpy(g->nvml_version, v, sizeof v);
        }
    }
    for (size_t i = 0; i < g->ndevs; i++) {
        gpu_dev *d = &g->devs[i];
        refresh_device(g, d);
        char *lab = NULL, *info = NULL;
        if (render_labels(g, d, NULL, &lab) != 0 || render_info(g, d, &info) != 0) {
            free(lab);
            return BASE_E_NOMEM;
        }
        free(d->labels);
        free(d->info_extra);
        d->labels = lab;
        d->info_extra = info;
        for (size_t k = 0; k < d->nmig; k++) {
            char *ml = NULL;
            if (render_labels(g, d, &d->migs[k], &ml) != 0) return BASE_E_NOMEM;
            free(d->migs[k].labels);
            d->migs[k].labels = ml;
        }
    }
    g->last_static_ns = base_mono_ns();
    return 0;
}

/* ---- NVML start and stop ------------------------------------------------- */

static void nvml_stop(agent_gpu *g) {
    agent__gpu_events_stop(g->events);
    g->events = NULL;
    for (size_t i = 0; i < g->ndevs; i++) free_device(g, &g->devs[i]);
    free(g->devs);
    g->devs = NULL;
    g->ndevs = 0;
    if (g->lib) {
        if (g->up) nvml_shutdown(g->lib);
        nvml_close(g->lib);
    }
    g->lib = NULL;
    g->up = 0;
}

static void log_missing(agent_gpu *g) {
    const char *names[256];
    size_t n = nvml_missing(g->lib, names, 256);
    if (!n) return;
    base_buf b;
    base_buf_init(&b, 0);
    for (size_t i = 0; i < n && i < 256; i++) {
        if (i) base_buf_putc(&b, ',');
        base_buf_puts(&b, names[i]);
    }
    if (!base_buf_err(&b) && b.data)
        base_log(BASE_LOG_INFO, "NVML library lacks functions; the metrics they serve are left out",
                 "library", g->lib->path, "missing", b.data, NULL);
    base_buf_free(&b);
}

static void gpm_prime(agent_gpu *g);

/* Loads and initialises NVML and discovers the GPUs. On failure the
 * collector stays down with the reason in g->down_reason. */
static int nvml_start(agent_gpu *g) {
    char err[256] = "";
    g->last_try_ns = base_mono_ns();
    int rc = nvml_open(g->nvml_library, &g->lib, err, sizeof err);
    if (rc != 0) {
        snprintf(g->down_reason, sizeof g->down_reason, "%s", err);
        g->lib = NULL;
        return 0;
    }
    nvmlReturn_t r = nvml_init(g->lib, 0);
    if (r != NVML_SUCCESS) {
        snprintf(g->down_reason, sizeof g->down_reason, "nvmlInit: %s", nvml_strerror(g->lib, r));
        nvml_close(g->lib);
        g->lib = NULL;
        return 0;
    }
    g->up = 1;
    unsigned count = 0;
    r = g->lib->device_get_count(&count);
    if (r != NVML_SUCCESS) {
        snprintf(g->down_reason, sizeof g->down_reason, "nvmlDeviceGetCount: %s", nvml_strerror(g->lib, r));
        nvml_stop(g);
        return 0;
    }
    if (count > GPU_MAX_DEVICES) count = GPU_MAX_DEVICES;
    g->devs = calloc(count ? count : 1, sizeof *g->devs);
    if (!g->devs) {
        nvml_stop(g);
        return BASE_E_NOMEM;
    }
    for (unsigned i = 0; i < count; i++) {
        gpu_dev *d = &g->devs[g->ndevs];
        memset(d, 0, sizeof *d);
        base_buf_init(&d->notes, 4096);
        d->index = i;
        d->gpm_supported = -1;
        r = g->lib->device_get_handle_by_index(i, &d->h);
        g->ndevs++;
        if (r == NVML_ERROR_GPU_IS_LOST) {
            mark_lost(g, d);
        } else if (r != NVML_SUCCESS) {
            char idx[16];
            snprintf(idx, sizeof idx, "%u", i);
            base_log(BASE_LOG_WARN, "cannot open GPU; it is left out", "gpu", idx, "err",
                     nvml_strerror(g->lib, r), NULL);
            base_buf_free(&d->notes);
            g->ndevs--;
        }
    }
    g->down_reason[0] = '\0';
    log_missing(g);
    if (refresh_static(g) != 0) {
        nvml_stop(g);
        return BASE_E_NOMEM;
    }
    /* XID events */
    if (enabled(g, GPU_M_XID_ERRORS) || enabled(g, GPU_M_K_XID_ERRORS)) {
        gpu_event_dev ed[GPU_MAX_DEVICES];
        size_t ne = 0;
        for (size_t i = 0; i < g->ndevs; i++) {
            if (g->devs[i].lost) continue;
            memset(&ed[ne], 0, sizeof ed[ne]);
            ed[ne].handle = g->devs[i].h;
            snprintf(ed[ne].bus_id, sizeof ed[ne].bus_id, "%s", g->devs[i].bus_id);
            ne++;
        }
        int erc = agent__gpu_events_start(g->lib, g->xid, ed, ne, &g->mig_changed, &g->events);
        if (erc == BASE_E_NOMEM) {
            nvml_stop(g);
            return BASE_E_NOMEM;
        }
        for (size_t i = 0, k = 0; i < g->ndevs && k < ne; i++) {
            if (g->devs[i].lost) continue;
            g->devs[i].xid_watching = ed[k].watching;
            if (!ed[k].watching) note(g, &g->devs[i], "XID events", ed[k].why);
            k++;
        }
    }
    gpm_prime(g);
    char n[16];
    snprintf(n, sizeof n, "%zu", g->ndevs);
    base_log(BASE_LOG_INFO, "NVML initialised", "library", g->lib->path, "driver_version", g->driver_version,
             "gpus", n, NULL);
    return 0;
}

/* Takes the first GPM sample of every entity so the first cycle can
 * already compute values. */
static void gpm_prime(agent_gpu *g) {
    if (!gpm_wanted(g)) return;
    for (size_t i = 0; i < g->ndevs; i++) {
        gpu_dev *d = &g->devs[i];
        if (d->lost || d->gpm_supported != 1) continue;
        gpm_cycle(g, &d->gpm, d->h, -1);
        for (size_t k = 0; k < d->nmig; k++) gpm_cycle(g, &d->migs[k].gpm, d->h, (long)d->migs[k].gi);
    }
}

/* ---- the cycle ---------------------------------------------------------- */

static double field_value(const nvmlFieldValue_t *v) {
    switch (v->valueType) {
    case NVML_VALUE_TYPE_DOUBLE: return v->value.dVal;
    case NVML_VALUE_TYPE_UNSIGNED_INT: return (double)v->value.uiVal;
    case NVML_VALUE_TYPE_UNSIGNED_LONG: return (double)v->value.ulVal;
    case NVML_VALUE_TYPE_UNSIGNED_LONG_LONG: return (double)v->value.ullVal;
    case NVML_VALUE_TYPE_SIGNED_LONG_LONG: return (double)v->value.sllVal;
    case NVML_VALUE_TYPE_SIGNED_INT: return (double)v->value.siVal;
    case NVML_VALUE_TYPE_UNSIGNED_SHORT: return (double)v->value.usVal;
    default: return NAN;
    }
}

/* The direct NVML call behind a field, when there is one. */
static nvmlReturn_t field_direct(agent_gpu *g, gpu_dev *d, unsigned id, double *ret) {
    const nvml_lib *l = g->lib;
    nvmlReturn_t r = NVML_ERROR_FUNCTION_NOT_FOUND;
    unsigned long long ull = 0;
    unsigned u = 0;
    switch (id) {
    case NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION:
        if (l->nvmlDeviceGetTotalEnergyConsumption &&
            (r = l->nvmlDeviceGetTotalEnergyConsumption(d->h, &ull)) == 0)
            *ret = (double)ull;
        return r;
    case NVML_FI_DEV_PCIE_REPLAY_COUNTER:
        if (l->nvmlDeviceGetPcieReplayCounter && (r = l->nvmlDeviceGetPcieReplayCounter(d->h, &u)) == 0)
            *ret = u;
        return r;
    case NVML_FI_DEV_ECC_SBE_VOL_TOTAL:
    case NVML_FI_DEV_ECC_DBE_VOL_TOTAL:
    case NVML_FI_DEV_ECC_SBE_AGG_TOTAL:
    case NVML_FI_DEV_ECC_DBE_AGG_TOTAL: {
        if (!l->nvmlDeviceGetTotalEccErrors) return r;
        nvmlMemoryErrorType_t t = (id == NVML_FI_DEV_ECC_SBE_VOL_TOTAL || id == NVML_FI_DEV_ECC_SBE_AGG_TOTAL)
                                      ? NVML_MEMORY_ERROR_TYPE_CORRECTED
                                      : NVML_MEMORY_ERROR_TYPE_UNCORRECTED;
        nvmlEccCounterType_t c = id <= NVML_FI_DEV_ECC_DBE_VOL_TOTAL ? NVML_VOLATILE_ECC : NVML_AGGREGATE_ECC;
        if ((r = l->nvmlDeviceGetTotalEccErrors(d->h, t, c, &ull)) == 0) *ret = (double)ull;
        return r;
    }
    case NVML_FI_DEV_RETIRED_SBE:
    case NVML_FI_DEV_RETIRED_DBE: {
        if (!l->nvmlDeviceGetRetiredPages) return r;
        unsigned count = 0;
        r = l->nvmlDeviceGetRetiredPages(d->h,
                                         id == NVML_FI_DEV_RETIRED_SBE
                                             ? NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS
                                             : NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR,
                                         &count, NULL);
        if (r == NVML_ERROR_INSUFFICIENT_SIZE) r = NVML_SUCCESS; /* count is filled, as DCGM accepts */
        if (r == NVML_SUCCESS) *ret = count;
        return r;
    }
    case NVML_FI_DEV_RETIRED_PENDING: {
        nvmlEnableState_t s;
        if (l->nvmlDeviceGetRetiredPagesPendingStatus &&
            (r = l->nvmlDeviceGetRetiredPagesPendingStatus(d->h, &s)) == 0)
            *ret = s == NVML_FEATURE_ENABLED;
        return r;
    }
    case NVML_FI_DEV_REMAPPED_COR:
    case NVML_FI_DEV_REMAPPED_UNC:
    case NVML_FI_DEV_REMAPPED_PENDING:
    case NVML_FI_DEV_REMAPPED_FAILURE: {
        unsigned cor, unc, pend, fail;
        if (!l->nvmlDeviceGetRemappedRows ||
            (r = l->nvmlDeviceGetRemappedRows(d->h, &cor, &unc, &pend, &fail)) != 0)
            return r;
        *ret = id == NVML_FI_DEV_REMAPPED_COR       ? cor
               : id == NVML_FI_DEV_REMAPPED_UNC     ? unc
               : id == NVML_FI_DEV_REMAPPED_PENDING ? pend
                                                    : fail;
        return r;
    }
    case NVML_FI_DEV_PERF_POLICY_POWER:
    case NVML_FI_DEV_PERF_POLICY_THERMAL:
    case NVML_FI_DEV_PERF_POLICY_SYNC_BOOST:
    case NVML_FI_DEV_PERF_POLICY_BOARD_LIMIT:
    case NVML_FI_DEV_PERF_POLICY_LOW_UTILIZATION:
    case NVML_FI_DEV_PERF_POLICY_RELIABILITY: {
        nvmlViolationTime_t vt;
        if (l->nvmlDeviceGetViolationStatus &&
            (r = l->nvmlDeviceGetViolationStatus(
                 d->h, (nvmlPerfPolicyType_t)(id - NVML_FI_DEV_PERF_POLICY_POWER), &vt)) == 0)
            *ret = (double)vt.violationTime;
        return r;
    }
    default: return r;
    }
}

static void field_off(agent_gpu *g, gpu_dev *d, size_t f, nvmlReturn_t r) {
    d->fmode[f] = FMODE_OFF;
    if (!d->fnoted[f]) {
        d->fnoted[f] = 1;
        char what[96];
        snprintf(what, sizeof what, "field %u (%s)", fields[f].id, fields[f].what);
        note(g, d, what, r);
    }
}

static void field_emit(agent_gpu *g, gpu_dev *d, size_t f, double v, double *nvl_kib, int *nvl_n) {
    const field_def *fd = &fields[f];
    if (fd->id == NVML_FI_DEV_MEMORY_TEMP && (v > 200 || v < -50)) return; /* DCGM drops these too */
    if (fd->id == NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX || fd->id == NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX) {
        *nvl_kib += v;
        (*nvl_n)++;
    }
    emit(g, fd->dcgm, d->labels, NULL, v);
    emit(g, fd->kel, d->labels, fd->kextra, v * fd->kscale);
}

static void read_fields(agent_gpu *g, gpu_dev *d) {
    const nvml_lib *l = g->lib;
    size_t idx[NFIELDS];
    size_t nb = 0;
    int batch_ok = l->nvmlDeviceGetFieldValues && !d->off[SRC_FIELDS];
    int want_bw = enabled(g, GPU_M_NVLINK_BANDWIDTH_TOTAL);
    double nvl_kib = 0;
    int nvl_n = 0;
    for (size_t f = 0; f < NFIELDS; f++) {
        int need = want2(g, fields[f].dcgm, fields[f].kel) ||
                   (want_bw && (fields[f].id == NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX ||
                                fields[f].id == NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX));
        if (!need || d->fmode[f] == FMODE_OFF) continue;
        if (d->fmode[f] == FMODE_BATCH && batch_ok) {
            nvmlFieldValue_t *v = &g->fv[nb];
            memset(v, 0, sizeof *v);
            v->fieldId = fields[f].id;
            v->scopeId = (fields[f].id >= NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX &&
                          fields[f].id <= NVML_FI_DEV_NVLINK_THROUGHPUT_RAW_RX)
                             ? NVML_FI_SCOPE_ALL_LINKS
                             : 0;
            v->nvmlReturn = NVML_ERROR_UNKNOWN;
            idx[nb++] = f;
            continue;
        }
        /* direct */
        double val;
        nvmlReturn_t r = field_direct(g, d, fields[f].id, &val);
        if (r == NVML_SUCCESS)
            field_emit(g, d, f, val, &nvl_kib, &nvl_n);
        else if (r == NVML_ERROR_GPU_IS_LOST) {
            mark_lost(g, d);
            return;
        } else if (permanent(r))
            field_off(g, d, f, r);
    }
    if (nb) {
        nvmlReturn_t r = l->nvmlDeviceGetFieldValues(d->h, (int)nb, g->fv);
        if (r == NVML_ERROR_GPU_IS_LOST) {
            mark_lost(g, d);
            return;
        }
        if (r != NVML_SUCCESS) {
            /* the whole call failed: off if permanent, fields tried direct next cycle */
            if (permanent(r)) {
                chk(g, d, SRC_FIELDS, r);
                for (size_t i = 0; i < nb; i++) d->fmode[idx[i]] = FMODE_DIRECT;
            }
            return;
        }
        for (size_t i = 0; i < nb; i++) {
            size_t f = idx[i];
            const nvmlFieldValue_t *v = &g->fv[i];
            if (v->nvmlReturn == NVML_SUCCESS) {
                double val;
                if (fields[f].id == NVML_FI_DEV_MEMORY_TEMP)
                    val = v->value.uiVal; /* r545 mislabels the type */
                else
                    val = field_value(v);
                if (isfinite(val)) field_emit(g, d, f, val, &nvl_kib, &nvl_n);
                continue;
            }
            if (v->nvmlReturn == NVML_ERROR_GPU_IS_LOST) {
                mark_lost(g, d);
                return;
            }
            if (!permanent(v->nvmlReturn)) continue;
            /* the batch cannot serve it: the direct call, if any, from now on */
            double val;
            nvmlReturn_t dr = field_direct(g, d, fields[f].id, &val);
            if (dr == NVML_SUCCESS) {
                d->fmode[f] = FMODE_DIRECT;
                field_emit(g, d, f, val, &nvl_kib, &nvl_n);
            } else {
                field_off(g, d, f, v->nvmlReturn);
            }
        }
    }
    /* DCGM's NVLink bandwidth: a rate from the TX+RX KiB counters */
    if (want_bw && nvl_n == 2) {
        int64_t now = base_mono_ns();
        if (d->have_nvl && now > d->nvl_ns && nvl_kib >= d->nvl_kib)
            emit(g, GPU_M_NVLINK_BANDWIDTH_TOTAL, d->labels, NULL,
                 (nvl_kib - d->nvl_kib) / ((double)(now - d->nvl_ns) / NS_PER_S) / 1000.0);
        d->have_nvl = 1;
        d->nvl_kib = nvl_kib;
        d->nvl_ns = now;
    }
}

static void read_memory(agent_gpu *g, gpu_dev *d, nvmlDevice_t h, const char *labels, uint8_t *off) {
    const nvml_lib *l = g->lib;
    if (*off || !(enabled(g, GPU_M_FB_FREE) || enabled(g, GPU_M_FB_USED) || enabled(g, GPU_M_FB_RESERVED)))
        return;
    nvmlReturn_t r;
    if (l->nvmlDeviceGetMemoryInfo_v2) {
        nvmlMemory_v2_t m;
        memset(&m, 0, sizeof m);
        m.version = nvmlMemory_v2;
        r = l->nvmlDeviceGetMemoryInfo_v2(h, &m);
        if (r == NVML_SUCCESS && m.total > 0) {
            emit(g, GPU_M_FB_FREE, labels, NULL, (double)(m.free >> 20));
            emit(g, GPU_M_FB_USED, labels, NULL, (double)(m.used >> 20));
            emit(g, GPU_M_FB_RESERVED, labels, NULL, (double)(m.reserved >> 20));
            return;
        }
        if (r != NVML_ERROR_ARGUMENT_VERSION_MISMATCH && r != NVML_ERROR_FUNCTION_NOT_FOUND &&
            r != NVML_ERROR_NOT_SUPPORTED) {
            if (r == NVML_SUCCESS) r = NVML_ERROR_NOT_SUPPORTED; /* total 0: unified-memory iGPU */
            goto fail;
        }
    }
    if (l->nvmlDeviceGetMemoryInfo) {
        nvmlMemory_t m;
        memset(&m, 0, sizeof m);
        r = l->nvmlDeviceGetMemoryInfo(h, &m);
        if (r == NVML_SUCCESS && m.total > 0) {
            emit(g, GPU_M_FB_FREE, labels, NULL, (double)(m.free >> 20));
            emit(g, GPU_M_FB_USED, labels, NULL, (double)(m.used >> 20));
            return; /* v1 has no reserved figure */
        }
        if (r == NVML_SUCCESS) r = NVML_ERROR_NOT_SUPPORTED;
    } else {
        r = NVML_ERROR_FUNCTION_NOT_FOUND;
    }
fail:
    if (r == NVML_ERROR_GPU_IS_LOST) {
        mark_lost(g, d);
    } else if (permanent(r)) {
        *off = 1;
        if (!d->noted[SRC_MEMINFO]) {
            d->noted[SRC_MEMINFO] = 1;
            note(g, d, src_names[SRC_MEMINFO], r);
        }
    }
}

static int pid_seen(const gpu_procinfo *p, size_t n, unsigned pid) {
    for (size_t i = 0; i < n; i++)
        if (p[i].pid == pid) return 1;
    return 0;
}

static void read_processes(agent_gpu *g, gpu_dev *d, nvmlDevice_t h, const char *labels, uint8_t *off) {
    if (*off || !enabled(g, GPU_M_K_PROCESS_MEMORY)) return;
    size_t n = 0;
    nvmlReturn_t r = agent__gpu_processes(g->lib, h, g->procs, GPU_MAX_PROCS, &n);
    if (r != NVML_SUCCESS) {
        if (r == NVML_ERROR_GPU_IS_LOST)
            mark_lost(g, d);
        else if (permanent(r)) {
            *off = 1;
            if (!d->noted[SRC_PROCS]) {
                d->noted[SRC_PROCS] = 1;
                note(g, d, src_names[SRC_PROCS], r);
            }
        }
        return;
    }
    base_buf b;
    base_buf_init(&b, 0);
    for (size_t i = 0; i < n; i++) {
        const gpu_procinfo *p = &g->procs[i];
        if (p->used_bytes == NVML_VALUE_NOT_AVAILABLE || pid_seen(g->procs, i, p->pid)) continue;
        char pid[16];
        snprintf(pid, sizeof pid, "%u", p->pid);
        base_buf_reset(&b);
        expo_label_append(&b, "pid", pid);
        agent_proc info;
        if (p->pid <= 0x7fffffffu && agent_proc_lookup(g->procfs, (int)p->pid, &info) == 0) {
            if (info.comm[0]) expo_label_append(&b, "command", info.comm);
            if (info.pod_uid[0]) expo_label_append(&b, "pod_uid", info.pod_uid);
            if (info.container_id[0]) expo_label_append(&b, "container_id", info.container_id);
            if (info.slurm_job_id[0]) expo_label_append(&b, "slurm_job_id", info.slurm_job_id);
        }
        if (base_buf_err(&b) || !b.data) break;
        char *extra = expo_mset_strdup(g->ms, b.data);
        if (!extra) break;
        emit(g, GPU_M_K_PROCESS_MEMORY, labels, extra, (double)p->used_bytes);
    }
    base_buf_free(&b);
}

static void read_xid(agent_gpu *g, gpu_dev *d) {
    if (!g->xid) return;
    int watching = d->xid_watching || g->kmsg_running;
    if (enabled(g, GPU_M_K_XID_ERRORS)) {
        agent_xid_count c[AGENT_XID_MAX_CODES];
        size_t n = agent_xid_counts(g->xid, d->bus_id, c, AGENT_XID_MAX_CODES);
        for (size_t i = 0; i < n; i++) {
            char code[16];
            snprintf(code, sizeof code, "%u", c[i].xid);
            char *extra = expo_mset_labels(g->ms, "xid", code, NULL);
            if (extra) emit(g, GPU_M_K_XID_ERRORS, d->labels, extra, (double)c[i].count);
        }
    }
    if (enabled(g, GPU_M_XID_ERRORS)) {
        unsigned last = 0;
        int have = agent_xid_last(g->xid, d->bus_id, &last) == 0;
        if (have || watching) {
            char code[16];
            snprintf(code, sizeof code, "%u", have ? last : 0);
            char *extra = expo_mset_labels(g->ms, "err_code", code, "err_msg",
                                           agent_xid_message(have ? last : 0), NULL);
            if (extra) emit(g, GPU_M_XID_ERRORS, d->labels, extra, have ? (double)last : 0);
        }
    }
}

static void read_device(agent_gpu *g, gpu_dev *d) {
    const nvml_lib *l = g->lib;
    const char *lab = d->labels;
    nvmlReturn_t r;
    unsigned u, u2;

    if (want2(g, GPU_M_SM_CLOCK, -1) && !d->off[SRC_CLOCK_SM] && l->nvmlDeviceGetClockInfo &&
        chk(g, d, SRC_CLOCK_SM, l->nvmlDeviceGetClockInfo(d->h, NVML_CLOCK_SM, &u)))
        emit(g, GPU_M_SM_CLOCK, lab, NULL, u);
    if (d->lost) return;
    if (want2(g, GPU_M_MEM_CLOCK, -1) && !d->off[SRC_CLOCK_MEM] && l->nvmlDeviceGetClockInfo &&
        chk(g, d, SRC_CLOCK_MEM, l->nvmlDeviceGetClockInfo(d->h, NVML_CLOCK_MEM, &u)))
        emit(g, GPU_M_MEM_CLOCK, lab, NULL, u);
    if (d->lost) return;

    if (enabled(g, GPU_M_GPU_TEMP) && !d->off[SRC_TEMP]) {
        double t = NAN;
        if (l->nvmlDeviceGetTemperatureV) {
            nvmlTemperature_t tv;
            memset(&tv, 0, sizeof tv);
            tv.version = nvmlTemperature_v1;
            tv.sensorType = NVML_TEMPERATURE_GPU;
            r = l->nvmlDeviceGetTemperatureV(d->h, &tv);
            if (r == NVML_SUCCESS)
                t = tv.temperature;
            else if ((r == NVML_ERROR_NOT_SUPPORTED || r == NVML_ERROR_ARGUMENT_VERSION_MISMATCH ||
                      r == NVML_ERROR_FUNCTION_NOT_FOUND) &&
                     l->nvmlDeviceGetTemperature)
                r = NVML_ERROR_FUNCTION_NOT_FOUND; /* try the old call below */
            else
                chk(g, d, SRC_TEMP, r);
        } else {
            r = NVML_ERROR_FUNCTION_NOT_FOUND;
        }
        if (isnan(t) && r == NVML_ERROR_FUNCTION_NOT_FOUND && l->nvmlDeviceGetTemperature &&
            chk(g, d, SRC_TEMP, l->nvmlDeviceGetTemperature(d->h, NVML_TEMPERATURE_GPU, &u)))
            t = u;
        if (!isnan(t) && t <= 200) emit(g, GPU_M_GPU_TEMP, lab, NULL, t);
        if (d->lost) return;
    }

    if (enabled(g, GPU_M_POWER_USAGE) && !d->off[SRC_POWER] && l->nvmlDeviceGetPowerUsage &&
        chk(g, d, SRC_POWER, l->nvmlDeviceGetPowerUsage(d->h, &u)))
        emit(g, GPU_M_POWER_USAGE, lab, NULL, u / 1000.0);
    if (d->lost) return;

    if (want2(g, GPU_M_GPU_UTIL, GPU_M_MEM_COPY_UTIL) && !d->off[SRC_UTIL] &&
        l->nvmlDeviceGetUtilizationRates) {
        nvmlUtilization_t ut;
        if (chk(g, d, SRC_UTIL, l->nvmlDeviceGetUtilizationRates(d->h, &ut))) {
            emit(g, GPU_M_GPU_UTIL, lab, NULL, ut.gpu);
            emit(g, GPU_M_MEM_COPY_UTIL, lab, NULL, ut.memory);
        }
        if (d->lost) return;
    }
    if (want2(g, GPU_M_ENC_UTIL, GPU_M_K_ENC_UTIL) && !d->off[SRC_ENC] &&
        l->nvmlDeviceGetEncoderUtilization &&
        chk(g, d, SRC_ENC, l->nvmlDeviceGetEncoderUtilization(d->h, &u, &u2))) {
        emit(g, GPU_M_ENC_UTIL, lab, NULL, u);
        emit(g, GPU_M_K_ENC_UTIL, lab, NULL, u / 100.0);
    }
    if (d->lost) return;
    if (want2(g, GPU_M_DEC_UTIL, GPU_M_K_DEC_UTIL) && !d->off[SRC_DEC] &&
        l->nvmlDeviceGetDecoderUtilization &&
        chk(g, d, SRC_DEC, l->nvmlDeviceGetDecoderUtilization(d->h, &u, &u2))) {
        emit(g, GPU_M_DEC_UTIL, lab, NULL, u);
        emit(g, GPU_M_K_DEC_UTIL, lab, NULL, u / 100.0);
    }
    if (d->lost) return;

    if (!d->mig) {
        read_memory(g, d, d->h, lab, &d->off[SRC_MEMINFO]);
        if (d->lost) return;
    }

    if (enabled(g, GPU_M_K_CLOCK_EVENT) && !d->off[SRC_REASONS] &&
        l->device_get_current_clocks_event_reasons) {
        unsigned long long cur;
        if (chk(g, d, SRC_REASONS, l->device_get_current_clocks_event_reasons(d->h, &cur))) {
            unsigned long long sup = d->have_supported_reasons ? d->supported_reasons : 0x1FFull;
            for (unsigned b = 0; b < 9; b++)
                if (sup & (1ull << b)) emit(g, GPU_M_K_CLOCK_EVENT, lab, reason_extra[b], (cur >> b) & 1);
        }
        if (d->lost) return;
    }

    if (enabled(g, GPU_M_K_FAN_SPEED) && !d->off[SRC_FANS] && d->nfans) {
        for (unsigned f = 0; f < d->nfans; f++) {
            if (l->nvmlDeviceGetFanSpeed_v2)
                r = l->nvmlDeviceGetFanSpeed_v2(d->h, f, &u);
            else if (l->nvmlDeviceGetFanSpeed && f == 0)
                r = l->nvmlDeviceGetFanSpeed(d->h, &u);
            else
                break;
            if (!chk(g, d, SRC_FANS, r)) break;
            emit(g, GPU_M_K_FAN_SPEED, lab, fan_extra[f], u / 100.0);
        }
        if (d->lost) return;
    }

    if (enabled(g, GPU_M_VGPU_LICENSE_STATUS) && !d->off[SRC_LICENSE] &&
        l->nvmlDeviceGetGridLicensableFeatures_v4) {
        nvmlGridLicensableFeatures_t lf;
        memset(&lf, 0, sizeof lf);
        if (chk(g, d, SRC_LICENSE, l->nvmlDeviceGetGridLicensableFeatures_v4(d->h, &lf))) {
            double v = 0;
            if (lf.isGridLicenseSupported) {
                unsigned n = lf.licensableFeaturesCount;
                if (n > NVML_GRID_LICENSE_FEATURE_MAX_COUNT) n = NVML_GRID_LICENSE_FEATURE_MAX_COUNT;
                for (unsigned i = 0; i < n; i++)
                    if (lf.gridLicensableFeatures[i].featureCode == NVML_GRID_LICENSE_FEATURE_CODE_VGPU)
                        v = lf.gridLicensableFeatures[i].featureState > 0;
            }
            emit(g, GPU_M_VGPU_LICENSE_STATUS, lab, NULL, v);
        }
        if (d->lost) return;
    }

    /* static values */
    if (d->have_plimit) emit(g, GPU_M_K_POWER_LIMIT, lab, NULL, d->plimit_w);
    if (d->have_elimit) emit(g, GPU_M_K_ENFORCED_POWER_LIMIT, lab, NULL, d->elimit_w);
    for (int c = 0; c < 4; c++)
        if (d->have_maxclk[c]) emit(g, GPU_M_K_CLOCK_MAX, lab, clock_extra[c], d->maxclk_hz[c]);
    emit(g, GPU_M_K_INFO, lab, d->info_extra, 1);

    read_fields(g, d);
    if (d->lost) return;

    /* GPM: the whole GPU, and each GPU instance */
    if (d->gpm_supported == 1 && !d->off[SRC_GPM] && gpm_wanted(g)) {
        r = gpm_cycle(g, &d->gpm, d->h, -1);
        if (chk(g, d, SRC_GPM, r)) gpm_emit(g, &d->gpm, lab, d->mig ? GPU_SC_DEV : 0);
        if (d->lost) return;
    }

    if (!d->mig) {
        read_processes(g, d, d->h, lab, &d->off[SRC_PROCS]);
        return;
    }
    for (size_t k = 0; k < d->nmig && !d->lost; k++) {
        gpu_mig *m = &d->migs[k];
        if (!m->labels) continue;
        read_memory(g, d, m->h, m->labels, &m->off_mem);
        if (d->gpm_supported == 1 && !m->off_gpm && gpm_wanted(g)) {
            r = gpm_cycle(g, &m->gpm, d->h, (long)m->gi);
            if (r == NVML_SUCCESS)
                gpm_emit(g, &m->gpm, m->labels, GPU_SC_INST);
            else if (r == NVML_ERROR_GPU_IS_LOST)
                mark_lost(g, d);
            else if (permanent(r))
                m->off_gpm = 1;
        }
        read_processes(g, d, m->h, m->labels, &m->off_procs);
    }
}

int agent_gpu_collect(void *ctx, expo_mset *ms) {
    agent_gpu *g = ctx;
    g->ms = ms;
    memset(g->fam, 0, sizeof g->fam);
    int64_t now = base_mono_ns();
    if (!g->up && (!g->tried || now - g->last_try_ns >= GPU_STATIC_REFRESH_NS)) {
        int first = !g->tried;
        g->tried = 1;
        int rc = nvml_start(g);
        if (rc != 0) return rc;
        if (!g->up && first)
            base_log(BASE_LOG_WARN, "NVML is not available; GPU metrics are not served (retrying every 60 s)",
                     "reason", g->down_reason, NULL);
    }
    const agent_metric *up = &agent__gpu_metrics[GPU_M_K_NVML_UP];
    expo_family *fup = expo_mset_family(ms, up->name, up->type, up->help, agent_metric_om_unit(up));
    if (!g->up) {
        char *extra = g->simulated ? expo_mset_labels(ms, "reason", g->down_reason, "simulated", "true", NULL)
                                   : expo_mset_labels(ms, "reason", g->down_reason, NULL);
        if (fup && extra) expo_mset_add(ms, fup, "", extra, NULL, 0);
        return ms->err;
    }
    if (fup) expo_mset_add(ms, fup, "", g->simulated ? "simulated=\"true\"" : NULL, NULL, 1);

    if (now - g->last_static_ns >= GPU_STATIC_REFRESH_NS || atomic_exchange(&g->mig_changed, 0)) {
        int rc = refresh_static(g);
        if (rc != 0) return rc;
    }
    for (int m = 0; m < GPU_M__COUNT; m++) {
        if (m == GPU_M_K_NVML_UP || !enabled(g, m)) continue;
        const agent_metric *am = &agent__gpu_metrics[m];
        g->fam[m] = expo_mset_family(ms, am->name, am->type, am->help, agent_metric_om_unit(am));
    }
    /* GPM needs 100 ms between samples: the first cycle may come sooner */
    if (!g->gpm_first_wait_done) {
        g->gpm_first_wait_done = 1;
        int64_t wait = 0;
        for (size_t i = 0; i < g->ndevs; i++) {
            gpu_gpm *p = &g->devs[i].gpm;
            if (p->have_prev && now - p->prev_ns < GPU_GPM_MIN_NS) {
                int64_t w = GPU_GPM_MIN_NS - (now - p->prev_ns);
                if (w > wait) wait = w;
            }
        }
        if (wait > 0) base_sleep_until(now + wait + 1000000);
    }
    for (size_t i = 0; i < g->ndevs; i++) {
        gpu_dev *d = &g->devs[i];
        if (!d->lost) read_device(g, d);
        emit(g, GPU_M_K_LOST, d->labels ? d->labels : "", NULL, d->lost ? 1 : 0);
        /* XIDs come from the store, not the GPU: a lost GPU keeps its
         * counts (the XID 79 that went with it, say) */
        if (d->labels) read_xid(g, d);
        if (d->notes.len && !base_buf_err(&d->notes)) {
            char idx[16];
            snprintf(idx, sizeof idx, "%u", d->index);
            base_log(BASE_LOG_INFO, "GPU metrics unavailable on this GPU; they are left out", "gpu", idx,
                     "UUID", d->uuid, "unavailable", d->notes.data, NULL);
        }
        base_buf_reset(&d->notes);
    }
    return ms->err;
}

/* ---- lifecycle ------------------------------------------------------------ */

static int load_counters(agent_gpu *g, const char *path, char *err, size_t errlen) {
    if (!path || !*path) {
        agent__gpu_counters_default(&g->counters);
        return 0;
    }
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "cannot open counters file %s", path);
        return BASE_E_IO;
    }
    base_buf b;
    base_buf_init(&b, (1u << 20) + 1);
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) base_buf_append(&b, chunk, n);
    int ioerr = ferror(f);
    fclose(f);
    if (ioerr) {
        base_buf_free(&b);
        snprintf(err, errlen, "cannot read counters file %s", path);
        return BASE_E_IO;
    }
    if (base_buf_err(&b)) {
        int e = base_buf_err(&b);
        base_buf_free(&b);
        snprintf(err, errlen, "counters file %s is larger than 1 MiB", path);
        return e == BASE_E_LIMIT ? BASE_E_LIMIT : e;
    }
    char skipped[1024];
    char perr[200];
    int rc = agent__gpu_counters_parse(b.data ? b.data : "", b.len, &g->counters, skipped, sizeof skipped,
                                       perr, sizeof perr);
    base_buf_free(&b);
    if (rc != 0) {
        snprintf(err, errlen, "counters file %s: %s", path, perr);
        return rc;
    }
    if (*skipped)
        base_log(BASE_LOG_WARN, "counters file lists fields Kelvin cannot serve; they are skipped", "file",
                 path, "fields", skipped, NULL);
    return 0;
}

int agent_gpu_new(const agent_gpu_opts *opts, agent_gpu **ret, char *err, size_t errlen) {
    agent_gpu *g = calloc(1, sizeof *g);
    if (!g) {
        snprintf(err, errlen, "out of memory");
        return BASE_E_NOMEM;
    }
    atomic_init(&g->mig_changed, 0);
    g->simulated = opts->simulated;
    g->interval_ms = opts->interval_ms;
    int rc = BASE_E_NOMEM;
    g->nvml_library = dup_or_null(opts->nvml_library);
    g->hostname = dup_or_null(opts->hostname);
    g->kmsg_path = dup_or_null(opts->kmsg_path);
    g->procfs = dup_or_null(opts->procfs ? opts->procfs : "/proc");
    g->gpm_get = calloc(1, sizeof *g->gpm_get);
    if ((opts->nvml_library && !g->nvml_library) || (opts->hostname && !g->hostname) ||
        (opts->kmsg_path && !g->kmsg_path) || !g->procfs || !g->gpm_get) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    if ((rc = load_counters(g, opts->counters_file, err, errlen)) != 0) goto fail;
    if (enabled(g, GPU_M_XID_ERRORS) || enabled(g, GPU_M_K_XID_ERRORS)) {
        if ((rc = agent_xid_new(&g->xid)) != 0) {
            snprintf(err, errlen, "out of memory");
            goto fail;
        }
        if (g->kmsg_path && *g->kmsg_path) {
            char kerr[256] = "";
            if (agent_xid_kmsg_start(g->xid, g->kmsg_path, kerr, sizeof kerr) == 0)
                g->kmsg_running = 1;
            else
                base_log(BASE_LOG_WARN, "cannot read the kernel log for XIDs; only NVML events will count",
                         "path", g->kmsg_path, "err", kerr, NULL);
        }
    }
    /* NVML is loaded by the first collect(), on the collector's thread: a
     * driver that hangs must not hold up the agent's start. */
    *ret = g;
    return 0;
fail:
    agent_gpu_free(g);
    return rc;
}

void agent_gpu_free(agent_gpu *g) {
    if (!g) return;
    nvml_stop(g);
    agent_xid_free(g->xid);
    free(g->gpm_get);
    free(g->nvml_library);
    free(g->hostname);
    free(g->kmsg_path);
    free(g->procfs);
    free(g);
}
