/* gpu_events.c -- XIDs from NVML's event set, on a thread of their own.
 *
 * Design: one event set for all GPUs. Registration is all-or-nothing per
 * call (a mask with one unsupported bit registers nothing), so each
 * device's mask is ANDed with its supported types first (gpu-metrics.md
 * 2.5 #9). The thread blocks in nvmlEventSetWait_v2 for at most
 * GPU_EVENT_WAIT_MS, so stopping takes at most that long; it records every
 * XidCriticalError into the XID store (which deduplicates against the
 * kernel log) and flags MIG reconfigurations for the collector.
 *
 * When _v2 answers NOT_SUPPORTED or FUNCTION_NOT_FOUND the thread falls
 * back to the v1 nvmlEventSetWait, as DCGM does. Other errors (a lost GPU)
 * back off for one timeout instead of spinning.
 *
 * Invariants: the device table is immutable once the thread runs; the
 * thread touches only it, the event set, the XID store (thread-safe) and
 * the atomic flags.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent/gpu_int.h"
#include "base/err.h"
#include "base/time.h"

struct gpu_events {
    const nvml_lib *lib;
    agent_xid *xid;
    nvmlEventSet_t set;
    gpu_event_dev *devs;
    size_t ndevs;
    atomic_int *mig_changed;
    atomic_int stop;
    pthread_t thread;
};

static const char *bus_of(gpu_events *e, nvmlDevice_t h) {
    for (size_t i = 0; i < e->ndevs; i++)
        if (e->devs[i].handle == h) return e->devs[i].bus_id;
    /* an event may name a MIG device: find its parent */
    nvmlDevice_t parent = NULL;
    if (e->lib->nvmlDeviceGetDeviceHandleFromMigDeviceHandle &&
        e->lib->nvmlDeviceGetDeviceHandleFromMigDeviceHandle(h, &parent) == NVML_SUCCESS)
        for (size_t i = 0; i < e->ndevs; i++)
            if (e->devs[i].handle == parent) return e->devs[i].bus_id;
    return NULL;
}

static void nap_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

static void *run(void *arg) {
    gpu_events *e = arg;
    nvmlReturn_t (*wait_fn)(nvmlEventSet_t, nvmlEventData_t *, unsigned int) = e->lib->event_set_wait;
    while (!atomic_load(&e->stop)) {
        nvmlEventData_t ev;
        memset(&ev, 0, sizeof ev);
        nvmlReturn_t r = wait_fn(e->set, &ev, GPU_EVENT_WAIT_MS);
        if (r == NVML_SUCCESS) {
            if (ev.eventType & nvmlEventTypeXidCriticalError) {
                const char *bus = bus_of(e, ev.device);
                if (bus && ev.eventData <= 0xFFFFFFFFull)
                    agent_xid_record(e->xid, bus, (unsigned)ev.eventData, AGENT_XID_SRC_NVML, base_mono_ns());
            }
            if ((ev.eventType & nvmlEventMigConfigChange) && e->mig_changed) atomic_store(e->mig_changed, 1);
            continue;
        }
        if (r == NVML_ERROR_TIMEOUT) continue;
        if ((r == NVML_ERROR_NOT_SUPPORTED || r == NVML_ERROR_FUNCTION_NOT_FOUND) &&
            wait_fn == e->lib->nvmlEventSetWait_v2 && e->lib->nvmlEventSetWait) {
            wait_fn = e->lib->nvmlEventSetWait;
            continue;
        }
        nap_ms(GPU_EVENT_WAIT_MS);
    }
    return NULL;
}

int agent__gpu_events_start(const nvml_lib *lib, agent_xid *x, gpu_event_dev *devs, size_t n,
                            atomic_int *mig_changed, gpu_events **ret) {
    for (size_t i = 0; i < n; i++) {
        devs[i].watching = 0;
        devs[i].why = NVML_ERROR_FUNCTION_NOT_FOUND;
    }
    if (!lib->nvmlEventSetCreate || !lib->nvmlDeviceRegisterEvents || !lib->event_set_wait ||
        !lib->nvmlEventSetFree)
        return BASE_E_UNSUPPORTED;
    gpu_events *e = calloc(1, sizeof *e);
    if (!e) return BASE_E_NOMEM;
    e->devs = calloc(n ? n : 1, sizeof *e->devs);
    if (!e->devs) {
        free(e);
        return BASE_E_NOMEM;
    }
    e->lib = lib;
    e->xid = x;
    e->mig_changed = mig_changed;
    atomic_init(&e->stop, 0);
    nvmlReturn_t r = lib->nvmlEventSetCreate(&e->set);
    if (r != NVML_SUCCESS) {
        for (size_t i = 0; i < n; i++) devs[i].why = r;
        free(e->devs);
        free(e);
        return BASE_E_UNSUPPORTED;
    }
    size_t watching = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned long long want = nvmlEventTypeXidCriticalError | nvmlEventMigConfigChange;
        unsigned long long supported = nvmlEventTypeXidCriticalError;
        if (lib->nvmlDeviceGetSupportedEventTypes) {
            r = lib->nvmlDeviceGetSupportedEventTypes(devs[i].handle, &supported);
            if (r != NVML_SUCCESS) {
                devs[i].why = r;
                continue;
            }
        }
        unsigned long long mask = want & supported;
        if (!(mask & nvmlEventTypeXidCriticalError)) {
            devs[i].why = NVML_ERROR_NOT_SUPPORTED;
            continue;
        }
        r = lib->nvmlDeviceRegisterEvents(devs[i].handle, mask, e->set);
        if (r != NVML_SUCCESS && mask != nvmlEventTypeXidCriticalError) /* retry with XIDs alone */
            r = lib->nvmlDeviceRegisterEvents(devs[i].handle, nvmlEventTypeXidCriticalError, e->set);
        if (r != NVML_SUCCESS) {
            devs[i].why = r;
            continue;
        }
        devs[i].watching = 1;
        devs[i].why = NVML_SUCCESS;
        e->devs[e->ndevs++] = devs[i];
        watching++;
    }
    if (!watching || pthread_create(&e->thread, NULL, run, e) != 0) {
        if (watching)
            for (size_t i = 0; i < n; i++) devs[i].watching = 0, devs[i].why = NVML_ERROR_OPERATING_SYSTEM;
        lib->nvmlEventSetFree(e->set);
        free(e->devs);
        free(e);
        return BASE_E_UNSUPPORTED;
    }
    *ret = e;
    return 0;
}

void agent__gpu_events_stop(gpu_events *e) {
    if (!e) return;
    atomic_store(&e->stop, 1);
    pthread_join(e->thread, NULL);
    e->lib->nvmlEventSetFree(e->set);
    free(e->devs);
    free(e);
}
