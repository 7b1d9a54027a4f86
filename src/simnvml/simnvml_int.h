/* simnvml_int.h -- shared by the files of the simulated libnvidia-ml.so.1.
 *
 * The library is one global context (simnvml__ctx) behind one mutex: the
 * simulated node, init refcount, the env configuration, and the lists of
 * event sets and GPM samples the caller holds. Every exported function
 * follows the same shape:
 *
 *     simnvml_dev d;
 *     nvmlReturn_t r = simnvml__enter_dev(device, SIMNVML_GPU_ONLY, &d);
 *     if (r != NVML_SUCCESS) return r;            // lock already released
 *     ... read d.s (the GPU's sim state), fill outputs ...
 *     return simnvml__leave(r);                   // releases the lock
 *
 * enter_* checks, in the driver's order: initialised (UNINITIALIZED), a
 * handle this library issued (INVALID_ARGUMENT), the GPU not lost
 * (GPU_IS_LOST); it advances the model to "now" (monotonic time since init
 * x KELVIN_SIM_TIME_SCALE) and, for device calls, first sleeps
 * KELVIN_SIM_HANG_MS outside the lock.
 *
 * Handles are addresses inside static arrays (never freed, so a stale
 * handle after nvmlShutdown is still recognisable and reports
 * UNINITIALIZED, not a crash); event sets and GPM samples are heap objects
 * found by walking the context's lists, so a bogus pointer is rejected
 * without being dereferenced.
 *
 * Symbol hygiene: the CMake target builds with hidden visibility; SIMNVML_API
 * marks the NVML entry points. Kelvin's own headers are included under
 * "#pragma GCC visibility push(hidden)" so the sim_/base_ symbols the
 * library uses stay local to it.
 */
#ifndef KELVIN_SIMNVML_SIMNVML_INT_H
#define KELVIN_SIMNVML_SIMNVML_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "nvml/nvml_types.h"

#pragma GCC visibility push(hidden)
#include "base/err.h"
#include "base/num.h"
#include "base/time.h"
#include "sim/sim.h"
#pragma GCC visibility pop

#define SIMNVML_API __attribute__((visibility("default")))

#ifndef KELVIN_SIM_LEGACY
#define KELVIN_SIM_LEGACY 0
#endif

#define SIMNVML_MAX_PIDS  64
#define SIMNVML_DEV_MAGIC 0x4B53494Du /* "KSIM" */

struct nvmlDevice_st {
    uint32_t magic;
    unsigned gpu;
    int mig; /* -1: the physical GPU; else the MIG device index */
};

struct nvmlGpuInstance_st {
    uint32_t magic;
    unsigned gpu;
    unsigned mig;
};

struct nvmlEventSet_st {
    struct nvmlEventSet_st *next;
    uint64_t mask[SIM_MAX_GPUS]; /* registered event types per GPU */
    uint64_t cursor;             /* next node event to look at */
    bool armed;                  /* cursor set (first registration) */
};

struct nvmlGpmSample_st {
    struct nvmlGpmSample_st *next;
    bool taken;
    unsigned gpu;
    int mig;  /* -1: whole GPU */
    double t; /* model time */
    double act_int[SIM_ACT__COUNT];
    uint64_t pcie_tx, pcie_rx;
    uint64_t nvl_tx[SIM_MAX_NVLINKS], nvl_rx[SIM_MAX_NVLINKS];
};

typedef struct simnvml_ctx {
    pthread_mutex_t mu;
    int init_count;
    sim_node *node;
    int64_t t0_ns;      /* monotonic time of nvmlInit */
    int64_t t0_unix_us; /* wall time of nvmlInit */
    int64_t last_step_ns;
    double scale;
    unsigned hang_ms; /* read without the lock: set before init_count > 0 */
    unsigned stride;  /* bytes per _v3 process entry: 24, or 32 (R535 bug) */
    unsigned pids[SIMNVML_MAX_PIDS];
    unsigned npids;
    int driver_major;
    struct nvmlEventSet_st *sets;
    struct nvmlGpmSample_st *samples;
    struct nvmlDevice_st devs[SIM_MAX_GPUS];
    struct nvmlDevice_st migs[SIM_MAX_GPUS][SIM_MAX_MIG];
    struct nvmlGpuInstance_st gis[SIM_MAX_GPUS][SIM_MAX_MIG];
} simnvml_ctx;

extern simnvml_ctx simnvml__ctx;

/* A resolved device handle. */
typedef struct simnvml_dev {
    unsigned gpu;
    int mig; /* -1 for the physical GPU */
    const sim_gpu_state *s;
    const sim_model *m;
    const sim_mig_state *mi; /* NULL unless mig >= 0 */
} simnvml_dev;

enum {
    SIMNVML_ANY = 0,      /* GPU or MIG handle */
    SIMNVML_GPU_ONLY = 1, /* a MIG handle gets NOT_SUPPORTED */
    SIMNVML_NO_HANG = 2,  /* skip KELVIN_SIM_HANG_MS (non-device calls) */
};

/* Locks; UNINITIALIZED (unlocked again) when nvmlInit has not run. */
nvmlReturn_t simnvml__enter(void);
/* Locks, checks init, resolves and checks the handle, advances the model;
 * on any error the lock is released before returning. */
nvmlReturn_t simnvml__enter_dev(nvmlDevice_t device, int flags, simnvml_dev *ret);
/* Releases the lock and passes r through. */
nvmlReturn_t simnvml__leave(nvmlReturn_t r);
/* With the lock held: advances the model to now. */
void simnvml__advance(void);
/* With the lock held: model time now, and wall-clock microseconds now. */
double simnvml__model_now(void);
int64_t simnvml__unix_us(void);

/* The pid reported for process k of GPU g. */
unsigned simnvml__pid(unsigned gpu, unsigned k);

/* Copies s (with its NUL) into buf of len bytes: INSUFFICIENT_SIZE if it
 * does not fit, INVALID_ARGUMENT for a NULL buf. */
nvmlReturn_t simnvml__copy_str(char *buf, unsigned len, const char *s);

/* Frees event sets and GPM samples (shutdown). */
void simnvml__free_events(void);
void simnvml__free_samples(void);

#endif
