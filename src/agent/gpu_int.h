/* gpu_int.h -- the GPU collector's internals, shared by gpu*.c and
 * catalog_gpu.c (not a public header).
 *
 * GPU_METRICS(X) is the list of every metric the collector can serve, as
 * X(id, default_on, scope): the enum below is the index into the catalog
 * array agent__gpu_metrics (catalog_gpu.c, designated initializers, so
 * the two cannot disagree) and into the collector's per-metric tables.
 *
 * Scope says on which entity a metric appears:
 *   GPU_SC_DEV   the physical GPU (even when MIG is enabled);
 *   GPU_SC_INST  the GPU when MIG is off; each MIG instance when it is on
 *                (memory, activity and processes belong to instances, and
 *                serving both would double-count sums);
 *   GPU_SC_NONE  not per entity (collector health), always served.
 */
#ifndef KELVIN_AGENT_GPU_INT_H
#define KELVIN_AGENT_GPU_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/catalog.h"
#include "agent/gpu.h"
#include "agent/xid.h"
#include "nvml/nvml.h"

enum { GPU_SC_NONE = 0, GPU_SC_DEV = 1, GPU_SC_INST = 2 };

#define GPU_METRICS(X)                                                                                       \
    /* dcgm-exporter's (default-counters.csv; 1 = enabled there) */                                          \
    X(SM_CLOCK, 1, GPU_SC_DEV)                                                                               \
    X(MEM_CLOCK, 1, GPU_SC_DEV)                                                                              \
    X(MEMORY_TEMP, 1, GPU_SC_DEV)                                                                            \
    X(GPU_TEMP, 1, GPU_SC_DEV)                                                                               \
    X(POWER_USAGE, 1, GPU_SC_DEV)                                                                            \
    X(TOTAL_ENERGY_CONSUMPTION, 1, GPU_SC_DEV)                                                               \
    X(PCIE_REPLAY_COUNTER, 1, GPU_SC_DEV)                                                                    \
    X(GPU_UTIL, 1, GPU_SC_DEV)                                                                               \
    X(MEM_COPY_UTIL, 1, GPU_SC_DEV)                                                                          \
    X(ENC_UTIL, 1, GPU_SC_DEV)                                                                               \
    X(DEC_UTIL, 1, GPU_SC_DEV)                                                                               \
    X(XID_ERRORS, 1, GPU_SC_DEV)                                                                             \
    X(POWER_VIOLATION, 0, GPU_SC_DEV)                                                                        \
    X(THERMAL_VIOLATION, 0, GPU_SC_DEV)                                                                      \
    X(SYNC_BOOST_VIOLATION, 0, GPU_SC_DEV)                                                                   \
    X(BOARD_LIMIT_VIOLATION, 0, GPU_SC_DEV)                                                                  \
    X(LOW_UTIL_VIOLATION, 0, GPU_SC_DEV)                                                                     \
    X(RELIABILITY_VIOLATION, 0, GPU_SC_DEV)                                                                  \
    X(FB_FREE, 1, GPU_SC_INST)                                                                               \
    X(FB_USED, 1, GPU_SC_INST)                                                                               \
    X(FB_RESERVED, 1, GPU_SC_INST)                                                                           \
    X(ECC_SBE_VOL_TOTAL, 0, GPU_SC_DEV)                                                                      \
    X(ECC_DBE_VOL_TOTAL, 0, GPU_SC_DEV)                                                                      \
    X(ECC_SBE_AGG_TOTAL, 0, GPU_SC_DEV)                                                                      \
    X(ECC_DBE_AGG_TOTAL, 0, GPU_SC_DEV)                                                                      \
    X(RETIRED_SBE, 0, GPU_SC_DEV)                                                                            \
    X(RETIRED_DBE, 0, GPU_SC_DEV)                                                                            \
    X(RETIRED_PENDING, 0, GPU_SC_DEV)                                                                        \
    X(NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL, 0, GPU_SC_DEV)                                                      \
    X(NVLINK_CRC_DATA_ERROR_COUNT_TOTAL, 0, GPU_SC_DEV)                                                      \
    X(NVLINK_REPLAY_ERROR_COUNT_TOTAL, 0, GPU_SC_DEV)                                                        \
    X(NVLINK_RECOVERY_ERROR_COUNT_TOTAL, 0, GPU_SC_DEV)                                                      \
    X(NVLINK_BANDWIDTH_TOTAL, 1, GPU_SC_DEV)                                                                 \
    X(VGPU_LICENSE_STATUS, 1, GPU_SC_DEV)                                                                    \
    X(UNCORRECTABLE_REMAPPED_ROWS, 1, GPU_SC_DEV)                                                            \
    X(CORRECTABLE_REMAPPED_ROWS, 1, GPU_SC_DEV)                                                              \
    X(ROW_REMAP_FAILURE, 1, GPU_SC_DEV)                                                                      \
    X(PROF_GR_ENGINE_ACTIVE, 1, GPU_SC_INST)                                                                 \
    X(PROF_SM_ACTIVE, 0, GPU_SC_INST)                                                                        \
    X(PROF_SM_OCCUPANCY, 0, GPU_SC_INST)                                                                     \
    X(PROF_PIPE_TENSOR_ACTIVE, 1, GPU_SC_INST)                                                               \
    X(PROF_DRAM_ACTIVE, 1, GPU_SC_INST)                                                                      \
    X(PROF_PIPE_FP64_ACTIVE, 0, GPU_SC_INST)                                                                 \
    X(PROF_PIPE_FP32_ACTIVE, 0, GPU_SC_INST)                                                                 \
    X(PROF_PIPE_FP16_ACTIVE, 0, GPU_SC_INST)                                                                 \
    X(PROF_PCIE_TX_BYTES, 1, GPU_SC_DEV)                                                                     \
    X(PROF_PCIE_RX_BYTES, 1, GPU_SC_DEV)                                                                     \
    /* Kelvin's */                                                                                           \
    X(K_NVML_UP, 1, GPU_SC_NONE)                                                                             \
    X(K_LOST, 1, GPU_SC_DEV)                                                                                 \
    X(K_INFO, 1, GPU_SC_DEV)                                                                                 \
    X(K_MEMORY_TEMP, 1, GPU_SC_DEV)                                                                          \
    X(K_POWER_LIMIT, 1, GPU_SC_DEV)                                                                          \
    X(K_ENFORCED_POWER_LIMIT, 1, GPU_SC_DEV)                                                                 \
    X(K_CLOCK_MAX, 1, GPU_SC_DEV)                                                                            \
    X(K_CLOCK_EVENT, 1, GPU_SC_DEV)                                                                          \
    X(K_VIOLATION, 1, GPU_SC_DEV)                                                                            \
    X(K_ECC_VOLATILE, 1, GPU_SC_DEV)                                                                         \
    X(K_ECC_AGGREGATE, 1, GPU_SC_DEV)                                                                        \
    X(K_RETIRED_PAGES, 1, GPU_SC_DEV)                                                                        \
    X(K_RETIRED_PENDING, 1, GPU_SC_DEV)                                                                      \
    X(K_REMAPPED_ROWS, 1, GPU_SC_DEV)                                                                        \
    X(K_REMAP_PENDING, 1, GPU_SC_DEV)                                                                        \
    X(K_REMAP_FAILED, 1, GPU_SC_DEV)                                                                         \
    X(K_PCIE_REPLAYS, 1, GPU_SC_DEV)                                                                         \
    X(K_PCIE_BYTES, 1, GPU_SC_DEV)                                                                           \
    X(K_NVLINK_ERRORS, 1, GPU_SC_DEV)                                                                        \
    X(K_NVLINK_BYTES, 1, GPU_SC_DEV)                                                                         \
    X(K_FAN_SPEED, 1, GPU_SC_DEV)                                                                            \
    X(K_ENC_UTIL, 1, GPU_SC_DEV)                                                                             \
    X(K_DEC_UTIL, 1, GPU_SC_DEV)                                                                             \
    X(K_SM_ACTIVE, 1, GPU_SC_INST)                                                                           \
    X(K_SM_OCCUPANCY, 1, GPU_SC_INST)                                                                        \
    X(K_TENSOR_ACTIVE, 1, GPU_SC_INST)                                                                       \
    X(K_DRAM_ACTIVE, 1, GPU_SC_INST)                                                                         \
    X(K_PIPE_ACTIVE, 1, GPU_SC_INST)                                                                         \
    X(K_PCIE_THROUGHPUT, 1, GPU_SC_DEV)                                                                      \
    X(K_NVLINK_THROUGHPUT, 1, GPU_SC_DEV)                                                                    \
    X(K_XID_ERRORS, 1, GPU_SC_DEV)                                                                           \
    X(K_PROCESS_MEMORY, 1, GPU_SC_INST)

enum {
#define GPU__M_ENUM(id, def, scope) GPU_M_##id,
    GPU_METRICS(GPU__M_ENUM)
#undef GPU__M_ENUM
        GPU_M__COUNT
};

/* The catalog entries, indexed by GPU_M_* (catalog_gpu.c). */
extern const agent_metric agent__gpu_metrics[GPU_M__COUNT];
/* Whether GPU_M_* is in the default set, and its scope. */
int agent__gpu_metric_default(int m);
int agent__gpu_metric_scope(int m);

/* ---- label fields: dcgm-exporter's `label` rows ---------------------- */
enum {
    GPU_L_DRIVER_VERSION, /* DCGM_FI_DRIVER_VERSION (default) */
    GPU_L_NVML_VERSION,
    GPU_L_BRAND,
    GPU_L_SERIAL,
    GPU_L_OEM_INFOROM_VER,
    GPU_L_ECC_INFOROM_VER,
    GPU_L_POWER_INFOROM_VER,
    GPU_L_INFOROM_IMAGE_VER,
    GPU_L_VBIOS_VERSION,
    GPU_L__COUNT
};
/* "DCGM_FI_DRIVER_VERSION", ... indexed by GPU_L_*. */
extern const char *const agent__gpu_label_names[GPU_L__COUNT];

/* ---- the counters file ------------------------------------------------ */
typedef struct gpu_counters {
    uint8_t metric[GPU_M__COUNT]; /* 1 = serve */
    uint8_t label[GPU_L__COUNT];  /* 1 = add as a label */
} gpu_counters;

/* The default selection: dcgm-exporter's default set plus Kelvin's. */
void agent__gpu_counters_default(gpu_counters *ret);
/* Parses a counters file in dcgm-exporter's CSV format (`FIELD, type,
 * help`; `#` comments; blank lines). FIELD is a DCGM field name from the
 * catalog or a kelvin_gpu_* name. Rows naming fields Kelvin cannot serve
 * are skipped and listed in `skipped` (comma-separated, truncated to
 * skippedlen) so the program can log them. The file's type and help are
 * not used (the catalog's are served). Returns 0, or BASE_E_PARSE
 * (malformed row, or a type other than gauge/counter/label: line number in
 * err), BASE_E_LIMIT (over 1 MiB or
 * 10000 lines). *ret is written only on success. */
int agent__gpu_counters_parse(const char *text, size_t n, gpu_counters *ret, char *skipped, size_t skippedlen,
                              char *err, size_t errlen);

/* ---- processes --------------------------------------------------------- */
typedef struct gpu_procinfo {
    unsigned pid;
    unsigned long long used_bytes; /* NVML_VALUE_NOT_AVAILABLE if unknown */
} gpu_procinfo;

/* Lists the compute processes on dev (a GPU or MIG handle) with the best
 * function the library has: nvmlDeviceGetRunningProcessDetailList, else
 * ComputeRunningProcesses_v3 (entry stride probed: 24 or 32 bytes), _v2,
 * v1. Writes up to max entries, *ret_n the number written. Returns NVML's
 * code; NVML_ERROR_FUNCTION_NOT_FOUND when no version exists. */
nvmlReturn_t agent__gpu_processes(const nvml_lib *lib, nvmlDevice_t dev, gpu_procinfo *out, size_t max,
                                  size_t *ret_n);
/* The entry stride a _v3-style buffer was written with: fills need
 * (cap * 32 bytes) with a sentinel before the call; after it, n entries
 * were reported. Returns 24 or 32. Exposed for the unit test. */
size_t agent__gpu_probe_stride(const unsigned char *buf, size_t cap, size_t n);
#define GPU_STRIDE_SENTINEL 0xA5

/* ---- the XID event watcher (gpu_events.c) ------------------------------ */
typedef struct gpu_event_dev {
    nvmlDevice_t handle;
    char bus_id[32];
    int watching;     /* out: 1 when XidCriticalError is registered for it */
    nvmlReturn_t why; /* out: the failure when not watching */
} gpu_event_dev;

typedef struct gpu_events gpu_events;

/* Creates an event set, registers XidCriticalError (and MigConfigChange)
 * on every device, each mask ANDed with nvmlDeviceGetSupportedEventTypes,
 * and starts a thread waiting in nvmlEventSetWait_v2 (timeout
 * GPU_EVENT_WAIT_MS) that records each XID into x with source
 * AGENT_XID_SRC_NVML and sets *mig_changed on a MIG reconfiguration.
 * devs is copied; its `watching`/`why` fields are filled. Returns 0,
 * BASE_E_UNSUPPORTED (the library lacks the event functions, or no device
 * could register: *ret stays NULL) or BASE_E_NOMEM. */
int agent__gpu_events_start(const nvml_lib *lib, agent_xid *x, gpu_event_dev *devs, size_t n,
                            atomic_int *mig_changed, gpu_events **ret);
/* Stops the thread (within one wait timeout) and frees the set. NULL is a
 * no-op. */
void agent__gpu_events_stop(gpu_events *e);
#define GPU_EVENT_WAIT_MS 200

#endif
