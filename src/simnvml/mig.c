/* mig.c -- MIG topology of the simulated GPUs.
 *
 * MIG devices of GPU g are the static handles C.migs[g][0 .. mig_count-1],
 * in the order KELVIN_SIM_MIG listed them; each is one GPU instance with
 * one compute instance (ci 0). Index queries beyond the created instances
 * return NOT_FOUND (empty slot), beyond the maximum INVALID_ARGUMENT.
 * GPU-instance handles (nvmlGpuInstance_t) are static too. Boards without
 * MIG (L4, RTX 6000 Ada) answer NOT_SUPPORTED.
 */
#include <stdio.h>
#include <string.h>

#include "simnvml/simnvml_int.h"

#define C simnvml__ctx

SIMNVML_API nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int *currentMode,
                                              unsigned int *pendingMode) {
    simnvml_dev d;
    nvmlReturn_t r = simnvml__enter_dev(device, SIMNVML_GPU_ONLY, &d);
    if (r != NVML_SUCCESS) return r;
    if (!currentMode || !pendingMode) return simnvml__leave(NVML_ERROR_INVALID_ARGUMENT);
    if (!d.m->mig_profile_count) return simnvml__leave(NVML_ERROR_NOT_SUPPORTED);
    *currentMode = *pendingMode = d.s->mig_enabled ? NVML_DEVICE_MIG_ENABLE : NVML_DEVICE_MIG_DISABLE;
    return simnvml__leave(NVML_SUCCESS);
}

SIMNVML_API nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t device, unsigned int *count) {
    simnvml_dev d;
    nvmlReturn_t r = simnvml__enter_dev(device, SIMNVML_GPU_ONLY, &d);
    if (r != NVML_SUCCESS) return r;
    if (!count) return simnvml__leave(NVML_ERROR_INVALID_ARGUMENT);
    if (!d.m->mig_profile_count) return simnvml__leave(NVML_ERROR_NOT_SUPPORTED);
    *count = SIM_MAX_MIG;
    return simnvml__leave(NVML_SUCCESS);
}

SIMNVML_API nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t device, unsigned int index,
                                                             nvmlDevice_t *migDevice) {
    simnvml_dev d;
    nvmlReturn_t r = simnvml__enter_dev(device, SIMNVML_GPU_ONLY, &d);
    if (r != NVML_SUCCESS) return r;
    if (!migDevice || index >= SIM_MAX_MIG) return simnvml__leave(NVML_ERROR_INVALID_ARGUMENT);
    if (!d.m->mig_profile_count) return simnvml__leave(NVML_ERROR_NOT_SUPPORTED);
    if (!d.s->mig_enabled || index >= d.s->mig_count) return simnvml__leave(NVML_ERROR_NOT_FOUND);
    *migDevice = &C.migs[d.gpu][index];
    return simnvml__leave(NVML_SUCCESS);
}

SIMNVML_API nvmlReturn_t nvmlDeviceGetDeviceHandleFromMigDeviceHandle(nvmlDevice_t migDevice,
                                                                      nvmlDevice_t *device) {
    simnvml_dev d;
    nvmlReturn_t r = simnvml__enter_dev(migDevice, SIMNVML_ANY, &d);
    if (r != NVML_SUCCESS) return r;
    if (!device || d.mig < 0) return simnvml__leave(NVML_ERROR_INVALID_ARGUMENT);
    *device = &C.devs[d.gpu];
    return simnvml__leave(NVML_SUCCESS);
}

SIMNVML_API nvmlReturn_t nvmlDeviceIsMigDeviceHandle(nvmlDevice_t device, unsigned int *isMigDevice) {
    simnvml_dev d;
    nvmlReturn_t r = simnvml__enter_dev(device, SIMNVML_ANY, &d);
    if (r != NVML_SUCCESS) return r;
    if (!isMigDevice) return simnvml__leave(NVML_ERROR_INVALID_ARGUMENT);
    *isMigDevice = d.mig >= 0;
    return simnvml__leave(NVML_SUCCESS);
}

static nvmlReturn_t instance_id(nvmlDevice_t device, unsigned *id, bool compute) {
    simnvml_dev d;
    nvmlReturn_t r = simnvml__enter_dev(device, SIMNVML_ANY, &d);
    if (r != NVML_SUCCESS) return r;
    if (!id) return simnvml__leave(NVML_ERROR_INVALID_ARGUMENT);
    if (d.mig < 0) return simnvml__leave(NVML_ERROR_NOT_SUPPORTED);
    *id = compute ? d.mi->ci_id : d.mi->gi_id;
    return simnvml__leave(NVML_SUCCESS);
}

SIMNVML_API nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t device, unsigned int *id) {
    return instance_id(device, id, false);
}

SIMNVML_API nvmlReturn_t nvmlDeviceGetComputeInstanceId(nvmlDevice_t device, unsigned int *id) {
    return instance_id(device, id, true);
}

SIMNVML_API nvmlReturn_t nvmlDeviceGetGpuInstanceById(nvmlDevice_t device, unsigned int id,
                                                      nvmlGpuInstance_t *gpuInstance) {
    simnvml_dev d;
    nvmlReturn_t r = simnvml__enter_dev(device, SIMNVML_GPU_ONLY, &d);
    if (r != NVML_SUCCESS) return r;
    if (!gpuInstance) return simnvml__leave(NVML_ERROR_INVALID_ARGUMENT);
    if (!d.m->mig_profile_count) return simnvml__leave(NVML_ERROR_NOT_SUPPORTED);
    if (!d.s->mig_enabled) return simnvml__leave(NVML_ERROR_INVALID_STATE);
    for (unsigned k = 0; k < d.s->mig_count; k++) {
        if (d.s->mig[k].gi_id == id) {
            *gpuInstance = &C.gis[d.gpu][k];
            return simnvml__leave(NVML_SUCCESS);
        }
    }
    return simnvml__leave(NVML_ERROR_NOT_FOUND);
}

SIMNVML_API nvmlReturn_t nvmlGpuInstanceGetInfo(nvmlGpuInstance_t gpuInstance, nvmlGpuInstanceInfo_t *info) {
    nvmlReturn_t r = simnvml__enter();
    if (r != NVML_SUCCESS) return r;
    uintptr_t p = (uintptr_t)gpuInstance, b = (uintptr_t)C.gis;
    size_t sz = sizeof(struct nvmlGpuInstance_st);
    if (!info || p < b || p >= b + sizeof C.gis || (p - b) % sz)
        return simnvml__leave(NVML_ERROR_INVALID_ARGUMENT);
    unsigned i = (unsigned)((p - b) / sz), g = i / SIM_MAX_MIG, k = i % SIM_MAX_MIG;
    if (g >= sim_node_gpu_count(C.node)) return simnvml__leave(NVML_ERROR_INVALID_ARGUMENT);
    simnvml__advance();
    const sim_gpu_state *s = sim_node_gpu(C.node, g);
    if (k >= s->mig_count) return simnvml__leave(NVML_ERROR_INVALID_ARGUMENT);
    if (s->lost) return simnvml__leave(NVML_ERROR_GPU_IS_LOST);
    info->device = &C.devs[g];
    info->id = s->mig[k].gi_id;
    info->profileId = s->mig[k].profile->profile_id;
    info->placement.start = s->mig[k].start;
    info->placement.size = s->mig[k].profile->slices;
    return simnvml__leave(NVML_SUCCESS);
}

#if !KELVIN_SIM_LEGACY
SIMNVML_API nvmlReturn_t nvmlDeviceGetGpuInstanceProfileInfoV(nvmlDevice_t device, unsigned int profile,
                                                              nvmlGpuInstanceProfileInfo_v2_t *info) {
    simnvml_dev d;
    nvmlReturn_t r = simnvml__enter_dev(device, SIMNVML_GPU_ONLY, &d);
    if (r != NVML_SUCCESS) return r;
    if (!info || profile >= NVML_GPU_INSTANCE_PROFILE_COUNT)
        return simnvml__leave(NVML_ERROR_INVALID_ARGUMENT);
    if (info->version != nvmlGpuInstanceProfileInfo_v2)
        return simnvml__leave(NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
    const sim_mig_profile *p = NULL;
    for (unsigned k = 0; k < d.m->mig_profile_count; k++)
        if (d.m->mig_profiles[k].nvml_profile == profile) p = &d.m->mig_profiles[k];
    if (!p) return simnvml__leave(NVML_ERROR_NOT_SUPPORTED);
    unsigned version = info->version;
    memset(info, 0, sizeof *info);
    info->version = version;
    info->id = p->profile_id;
    info->isP2pSupported = 0;
    info->sliceCount = p->slices;
    info->instanceCount = p->max_count;
    info->multiprocessorCount = p->sm_count;
    info->copyEngineCount = p->copy_engines;
    info->decoderCount = p->decoders;
    info->encoderCount = p->encoders;
    info->jpegCount = p->jpegs;
    info->ofaCount = p->ofas;
    info->memorySizeMB = p->mem_mib;
    snprintf(info->name, sizeof info->name, "MIG %s", p->name);
    return simnvml__leave(NVML_SUCCESS);
}
#endif
