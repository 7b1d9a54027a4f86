/* events.c -- NVML event sets over the node's XID event ring.
 *
 * An event set is a heap object on the context's list with a per-GPU mask
 * of registered types and one cursor into the node's event ring (sim.h:
 * each reader keeps its own cursor). The cursor is set when the first
 * device is registered, so a set sees only XIDs that happen after it was
 * armed, as with the driver.
 *
 * nvmlDeviceRegisterEvents is all-or-nothing: a mask with any bit outside
 * nvmlDeviceGetSupportedEventTypes registers nothing and returns
 * NOT_SUPPORTED. nvmlEventSetWait_v2 advances the model and scans the ring;
 * with nothing to deliver it drops the lock, sleeps up to 10 ms and looks
 * again until timeoutms passes (TIMEOUT). Only XidCriticalError events are
 * generated (the simulator's XIDs, with gpuInstanceId/computeInstanceId
 * for MIG, 0xFFFFFFFF for the whole GPU); other supported types register
 * fine and stay quiet. The v1 wait writes only the first 24 bytes.
 *
 * Ownership: nvmlEventSetCreate allocates, nvmlEventSetFree frees; the last
 * nvmlShutdown frees whatever the caller left.
 */
#include <stdlib.h>
#include <time.h>

#include "simnvml/simnvml_int.h"

#define C simnvml__ctx

static uint64_t supported_types(const sim_model *m) {
    uint64_t t = nvmlEventTypeXidCriticalError | nvmlEventTypePState | nvmlEventTypeClock;
    if (m->has_ecc) t |= nvmlEventTypeSingleBitEccError | nvmlEventTypeDoubleBitEccError;
    if (m->mig_profile_count) t |= nvmlEventMigConfigChange;
    return t;
}

static struct nvmlEventSet_st **find_set(nvmlEventSet_t set) {
    for (struct nvmlEventSet_st **p = &C.sets; *p; p = &(*p)->next)
        if (*p == set) return p;
    return NULL;
}

void simnvml__free_events(void) {
    while (C.sets) {
        struct nvmlEventSet_st *n = C.sets->next;
        free(C.sets);
        C.sets = n;
    }
}

SIMNVML_API nvmlReturn_t nvmlDeviceGetSupportedEventTypes(nvmlDevice_t device,
                                                          unsigned long long *eventTypes) {
    simnvml_dev d;
    nvmlReturn_t r = simnvml__enter_dev(device, SIMNVML_GPU_ONLY, &d);
    if (r != NVML_SUCCESS) return r;
    if (!eventTypes) return simnvml__leave(NVML_ERROR_INVALID_ARGUMENT);
    *eventTypes = supported_types(d.m);
    return simnvml__leave(NVML_SUCCESS);
}

SIMNVML_API nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t *set) {
    nvmlReturn_t r = simnvml__enter();
    if (r != NVML_SUCCESS) return r;
    if (!set) return simnvml__leave(NVML_ERROR_INVALID_ARGUMENT);
    struct nvmlEventSet_st *s = calloc(1, sizeof *s);
    if (!s) return simnvml__leave(NVML_ERROR_MEMORY);
    s->next = C.sets;
    C.sets = s;
    *set = s;
    return simnvml__leave(NVML_SUCCESS);
}

SIMNVML_API nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t device, unsigned long long eventTypes,
                                                  nvmlEventSet_t set) {
    simnvml_dev d;
    nvmlReturn_t r = simnvml__enter_dev(device, SIMNVML_GPU_ONLY, &d);
    if (r != NVML_SUCCESS) return r;
    if (!find_set(set)) return simnvml__leave(NVML_ERROR_INVALID_ARGUMENT);
    if (eventTypes & ~supported_types(d.m)) return simnvml__leave(NVML_ERROR_NOT_SUPPORTED);
    if (!set->armed) {
        set->cursor = sim_node_event_next(C.node);
        set->armed = true;
    }
    set->mask[d.gpu] |= eventTypes;
    return simnvml__leave(NVML_SUCCESS);
}

/* With the lock held: the next deliverable event, if any. */
static bool next_event(struct nvmlEventSet_st *s, nvmlEventData_t *out) {
    sim_xid_event ev[1];
    while (sim_node_events(C.node, &s->cursor, ev, 1, NULL) > 0) {
        if (ev[0].gpu >= SIM_MAX_GPUS || !(s->mask[ev[0].gpu] & nvmlEventTypeXidCriticalError)) continue;
        out->device = &C.devs[ev[0].gpu];
        out->eventType = nvmlEventTypeXidCriticalError;
        out->eventData = ev[0].xid;
        out->gpuInstanceId = ev[0].gi_id;
        out->computeInstanceId = ev[0].ci_id;
        return true;
    }
    return false;
}

static nvmlReturn_t wait_event(nvmlEventSet_t set, nvmlEventData_t *data, unsigned timeoutms, bool v2) {
    int64_t deadline = base_mono_ns() + (int64_t)timeoutms * 1000000;
    for (;;) {
        nvmlReturn_t r = simnvml__enter();
        if (r != NVML_SUCCESS) return r;
        if (!find_set(set) || !data) return simnvml__leave(NVML_ERROR_INVALID_ARGUMENT);
        simnvml__advance();
        nvmlEventData_t ev;
        if (next_event(set, &ev)) {
            data->device = ev.device;
            data->eventType = ev.eventType;
            data->eventData = ev.eventData;
            if (v2) {
                data->gpuInstanceId = ev.gpuInstanceId;
                data->computeInstanceId = ev.computeInstanceId;
            }
            return simnvml__leave(NVML_SUCCESS);
        }
        simnvml__leave(NVML_SUCCESS);
        int64_t left = deadline - base_mono_ns();
        if (left <= 0) return NVML_ERROR_TIMEOUT;
        /* Poll the model twice a second: the driver blocks in the kernel;
         * a simulator that polled often would bill the agent's benchmark
         * for its own busy-waiting. XIDs reach the agent within 0.5 s. */
        if (left > 500000000) left = 500000000;
        struct timespec ts = {.tv_sec = 0, .tv_nsec = (long)left};
        nanosleep(&ts, NULL);
    }
}

SIMNVML_API nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t *data,
                                             unsigned int timeoutms) {
    return wait_event(set, data, timeoutms, true);
}

SIMNVML_API nvmlReturn_t nvmlEventSetWait(nvmlEventSet_t set, nvmlEventData_t *data, unsigned int timeoutms) {
    return wait_event(set, data, timeoutms, false);
}

SIMNVML_API nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set) {
    nvmlReturn_t r = simnvml__enter();
    if (r != NVML_SUCCESS) return r;
    struct nvmlEventSet_st **p = find_set(set);
    if (!p) return simnvml__leave(NVML_ERROR_INVALID_ARGUMENT);
    *p = set->next;
    free(set);
    return simnvml__leave(NVML_SUCCESS);
}
