/* device.c -- per-device queries of the simulated NVML: identity, clocks,
 * temperature, power, utilisation, memory, clock-event reasons and
 * violation counters, ECC / retirement / remapping, PCIe, NVLink, fans,
 * vGPU licensing.
 *
 * Each function reads the GPU's sim_gpu_state after simnvml__enter_dev()
 * advanced the model. Driver behaviour reproduced on purpose:
 *  - MIG device handles answer identity, memory and processes; GPU-wide
 *    queries on them return NOT_SUPPORTED; utilisation and enc/dec are
 *    NOT_SUPPORTED on a MIG-enabled GPU;
 *  - versioned structs (nvmlMemory_v2, nvmlTemperature_v1) reject any other
 *    version with ARGUMENT_VERSION_MISMATCH;
 *  - nvmlDeviceGetMemoryInfo (v1) counts reserved memory as used (R510+);
 *  - features a board lacks (ECC, memory sensor, NVLink, fans, MIG) return
 *    NOT_SUPPORTED, out-of-range enums and links INVALID_ARGUMENT.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "simnvml/simnvml_int.h"

#define C simnvml__ctx

/* Shorthand for the common shape. */
#define ENTER(dev, flags)                                                                                    \
    simnvml_dev d;                                                                                           \
    nvmlReturn_t r_ = simnvml__enter_dev((dev), (flags), &d);                                                \
    if (r_ != NVML_SUCCESS) return r_
#define OUT(p)                                                                                               \
    do {                                                                                                     \
        if (!(p)) return simnvml__leave(NVML_ERROR_INVALID_ARGUMENT);                                        \
    } while (0)

static unsigned round_u(double v) {
    return v <= 0 ? 0u : (unsigned)(v + 0.5);
}

/* ------------------------------------------------------------------------ */
/* Identity                                                                  */

SIMNVML_API nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid, unsigned int length) {
    ENTER(device, SIMNVML_ANY);
    char buf[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
    if (d.mig >= 0)
        sim_mig_uuid(C.node, d.gpu, (unsigned)d.mig, buf, sizeof buf);
    else
        sim_gpu_uuid(C.node, d.gpu, buf, sizeof buf);
    return simnvml__leave(simnvml__copy_str(uuid, length, buf));
}

SIMNVML_API nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned int length) {
    ENTER(device, SIMNVML_ANY);
    char buf[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
    if (d.mig >= 0)
        snprintf(buf, sizeof buf, "%s MIG %s", d.m->name, d.mi->profile->name);
    else
        snprintf(buf, sizeof buf, "%s", d.m->name);
    return simnvml__leave(simnvml__copy_str(name, length, buf));
}

SIMNVML_API nvmlReturn_t nvmlDeviceGetSerial(nvmlDevice_t device, char *serial, unsigned int length) {
    ENTER(device, SIMNVML_GPU_ONLY);
    char buf[NVML_DEVICE_SERIAL_BUFFER_SIZE];
    sim_gpu_serial(C.node, d.gpu, buf, sizeof buf);
    return simnvml__leave(simnvml__copy_str(serial, length, buf));
}

SIMNVML_API nvmlReturn_t nvmlDeviceGetVbiosVersion(nvmlDevice_t device, char *version, unsigned int length) {
    ENTER(device, SIMNVML_GPU_ONLY);
    return simnvml__leave(simnvml__copy_str(version, length, d.m->vbios));
}

SIMNVML_API nvmlReturn_t nvmlDeviceGetInforomVersion(nvmlDevice_t device, nvmlInforomObject_t object,
                                                     char *version, unsigned int length) {
    ENTER(device, SIMNVML_GPU_ONLY);
    const char *v;
    switch (object) {
    case NVML_INFOROM_OEM: v = d.m->inforom_oem; break;
    case NVML_INFOROM_ECC: v = d.m->has_ecc ? d.m->inforom_ecc : NULL; break;
    case NVML_INFOROM_POWER:
        v = NULL; /* no power object on these boards */
        break;
    default: return simnvml__leave(NVML_ERROR_INVALID_ARGUMENT);
    }
    if (!v) return simnvml__leave(NVML_ERROR_NOT_SUPPORTED);
    return simnvml__leave(simnvml__copy_str(version, length, v));
}

SIMNVML_API nvmlReturn_t nvmlDeviceGetInforomImageVersion(nvmlDevice_t device, char *version,
                                                          unsigned int length) {
    ENTER(device, SIMNVML_GPU_ONLY);
    return simnvml__leave(simnvml__copy_str(version, length, d.m->inforom_image));
}

SIMNVML_API nvmlReturn_t nvmlDeviceGetBrand(nvmlDevice_t device, nvmlBrandType_t *type) {
    ENTER(device, SIMNVML_ANY);
    OUT(type);
    *type = (nvmlBrandType_t)d.m->brand;
    return simnvml__leave(NVML_SUCCESS);
}

SIMNVML_API nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t device, unsigned int *minorNumber) {
    ENTER(device, SIMNVML_GPU_ONLY);
    OUT(minorNumber);
    *minorNumber = d.gpu;
    return simnvml__leave(NVML_SUCCESS);
}

static nvmlReturn_t pci_info(nvmlDevice_t device, nvmlPciInfo_t *pci) {
    ENTER(device, SIMNVML_ANY); /* a MIG device reports its parent's slot */
    OUT(pci);
    unsigned dom, bus, dv;
    sim_gpu_pci(C.node, d.gpu, &dom, &bus, &dv);
    memset(pci, 0, sizeof *pci);
    pci->domain = dom;
    pci->bus = bus;
    pci->device = dv;
    pci->pciDeviceId = d.m->pci_device_id;
    pci->pciSubSystemId = d.m->pci_subsystem_id;
    snprintf(pci->busIdLegacy, sizeof pci->busIdLegacy, "%04X:%02X:%02X.0", dom & 0xFFFF, bus, dv);
    snprintf(pci->busId, sizeof pci->busId, "%08X:%02X:%02X.0", dom, bus, dv);
    return simnvml__leave(NVML_SUCCESS);
}

SIMNVML_API nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t *pci) {
    return pci_info(device, pci);
}
SIMNVML_API nvmlReturn_t nvmlDeviceGetPciInfo_v2(nvmlDevice_t device, nvmlPciInfo_t *pci) {
    return pci_info(device, pci);
}
SIMNVML_API nvmlReturn_t nvmlDeviceGetPciInfo(nvmlDevice_t device, nvmlPciInfo_t *pci) {
    return pci_info(device, pci);
}

/* ------------------------------------------------------------------------ */
/* Clocks                                                                    */

static int clock_now(const simnvml_dev *d, nvmlClockType_t type, unsigned *ret) {
    switch (type) {
    case NVML_CLOCK_GRAPHICS:
    case NVML_CLOCK_SM: *ret = round_u(d->s->clock_sm); return 1;
    case NVML_CLOCK_MEM: *ret = round_u(d->s->clock_mem); return 1;
    case NVML_CLOCK_VIDEO: *ret = round_u(d->s->clock_video); return 1;
    default: return 0;
    }
}

static int clock_max(const sim_model *m, nvmlClockType_t type, unsigned *ret) {
    switch (type) {
    case NVML_CLOCK_GRAPHICS:
    case NVML_CLOCK_SM: *ret = m->sm_clock_max_mhz; return 1;
    case NVML_CLOCK_MEM: *ret = m->mem_clock_max_mhz; return 1;
    case NVML_CLOCK_VIDEO: *ret = m->video_clock_max_mhz; return 1;
    default: return 0;
    }
}

SIMNVML_API nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t device, nvmlClockType_t type,
                                                unsigned int *clock) {
    ENTER(device, SIMNVML_GPU_ONLY);
    OUT(clock);
    unsigned v;
    if (!clock_now(&d, type, &v)) return simnvml__leave(NVML_ERROR_INVALID_ARGUMENT);
    *clock = v;
    return simnvml__leave(NVML_SUCCESS);
}

SIMNVML_API nvmlReturn_t nvmlDeviceGetMaxClockInfo(nvmlDevice_t device, nvmlClockType_t type,
                                                   unsigned int *clock) {
    ENTER(device, SIMNVML_GPU_ONLY);
    OUT(clock);
    unsigned v;
    if (!clock_max(d.m, type, &v)) return simnvml__leave(NVML_ERROR_INVALID_ARGUMENT);
    *clock = v;
    return simnvml__leave(NVML_SUCCESS);
}

SIMNVML_API nvmlReturn_t nvmlDeviceGetClock(nvmlDevice_t device, nvmlClockType_t clockType,
                                            nvmlClockId_t clockId, unsigned int *clockMHz) {
    ENTER(device, SIMNVML_GPU_ONLY);
    OUT(clockMHz);
    unsigned v;
    int ok;
    switch (clockId) {
    case NVML_CLOCK_ID_CURRENT: ok = clock_now(&d, clockType, &v); break;
    case NVML_CLOCK_ID_APP_CLOCK_TARGET:
    case NVML_CLOCK_ID_APP_CLOCK_DEFAULT:
        ok = clock_max(d.m, clockType, &v);
        if (ok && (clockType == NVML_CLOCK_SM || clockType == NVML_CLOCK_GRAPHICS))
            v = d.m->sm_clock_base_mhz;
        break;
    case NVML_CLOCK_ID_CUSTOMER_BOOST_MAX: ok = clock_max(d.m, clockType, &v); break;
    default: ok = 0;
    }
    if (!ok) return simnvml__leave(NVML_ERROR_INVALID_ARGUMENT);
    *clockMHz = v;
    return simnvml__leave(NVML_SUCCESS);
}

/* ------------------------------------------------------------------------ */
/* Temperature                                                               */

#if !KELVIN_SIM_LEGACY
SIMNVML_API nvmlReturn_t nvmlDeviceGetTemperatureV(nvmlDevice_t device, nvmlTemperature_t *temperature) {
    ENTER(device, SIMNVML_GPU_ONLY);
    OUT(temperature);
    if (temperature->version != nvmlTemperature_v1)
        return simnvml__leave(NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
    if (temperature->sensorType != NVML_TEMPERATURE_GPU) return simnvml__leave(NVML_ERROR_INVALID_ARGUMENT);
    temperature->temperature = (int)lround(d.s->temp_gpu);
    return simnvml__leave(NVML_SUCCESS);
}
#endif

SIMNVML_API nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t device, nvmlTemperatureSensors_t sensorType,
                                                  unsigned int *temp) {
    ENTER(device, SIMNVML_GPU_ONLY);
    OUT(temp);
    if (sensorType != NVML_TEMPERATURE_GPU) return simnvml__leave(NVML_ERROR_INVALID_ARGUMENT);
    *temp = round_u(d.s->temp_gpu);
    return simnvml__leave(NVML_SUCCESS);
}

/* ------------------------------------------------------------------------ */
/* Power                                                                     */

SIMNVML_API nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned int *power) {
    ENTER(device, SIMNVML_GPU_ONLY);
    OUT(power);
    *power = round_u(d.s->power_w * 1000.0);
    return simnvml__leave(NVML_SUCCESS);
}

SIMNVML_API nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t device,
                                                             unsigned long long *energy) {
    ENTER(device, SIMNVML_GPU_ONLY);
    OUT(energy);
    *energy = (unsigned long long)d.s->energy_mj;
    return simnvml__leave(NVML_SUCCESS);
}

SIMNVML_API nvmlReturn_t nvmlDeviceGetPowerManagementLimit(nvmlDevice_t device, unsigned int *limit) {
    ENTER(device, SIMNVML_GPU_ONLY);
    OUT(limit);
    *limit = d.s->power_limit_mw;
    return simnvml__leave(NVML_SUCCESS);
}

SIMNVML_API nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t device, unsigned int *limit) {
    ENTER(device, SIMNVML_GPU_ONLY);
    OUT(limit);
    *limit = d.s->power_limit_mw;
    return simnvml__leave(NVML_SUCCESS);
}

SIMNVML_API nvmlReturn_t nvmlDeviceGetPowerManagementDefaultLimit(nvmlDevice_t device,
                                                                  unsigned int *defaultLimit) {
    ENTER(device, SIMNVML_GPU_ONLY);
    OUT(defaultLimit);
    *defaultLimit = d.m->power_limit_mw;
    return simnvml__leave(NVML_SUCCESS);
}

SIMNVML_API nvmlReturn_t nvmlDeviceGetPowerManagementLimitConstraints(nvmlDevice_t device,
                                                                      unsigned int *minLimit,
                                                                      unsigned int *maxLimit) {
    ENTER(device, SIMNVML_GPU_ONLY);
    OUT(minLimit && maxLimit);
    *minLimit = d.m->power_min_mw;
    *maxLimit = d.m->power_max_mw;
    return simnvml__leave(NVML_SUCCESS);
}

/* ------------------------------------------------------------------------ */
/* Utilisation                                                               */

SIMNVML_API nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device, nvmlUtilization_t *utilization) {
    ENTER(device, SIMNVML_GPU_ONLY);
    OUT(utilization);
    if (d.s->mig_enabled) return simnvml__leave(NVML_ERROR_NOT_SUPPORTED);
    utilization->gpu = round_u(d.s->util_gpu);
    utilization->memory = round_u(d.s->util_mem);
    return simnvml__leave(NVML_SUCCESS);
}

static nvmlReturn_t codec_util(nvmlDevice_t device, bool enc, unsigned *util, unsigned *period) {
    ENTER(device, SIMNVML_GPU_ONLY);
    OUT(util && period);
    if (d.s->mig_enabled) return simnvml__leave(NVML_ERROR_NOT_SUPPORTED);
    *util = round_u(enc ? d.s->enc_util : d.s->dec_util);
    *period = 167000; /* the driver's 1/6 s sampling window */
    return simnvml__leave(NVML_SUCCESS);
}

SIMNVML_API nvmlReturn_t nvmlDeviceGetEncoderUtilization(nvmlDevice_t device, unsigned int *utilization,
                                                         unsigned int *samplingPeriodUs) {
    return codec_util(device, true, utilization, samplingPeriodUs);
}

SIMNVML_API nvmlReturn_t nvmlDeviceGetDecoderUtilization(nvmlDevice_t device, unsigned int *utilization,
                                                         unsigned int *samplingPeriodUs) {
    return codec_util(device, false, utilization, samplingPeriodUs);
}

/* ------------------------------------------------------------------------ */
/* Memory                                                                    */

/* total / reserved / used (excluding reserved) of a GPU or MIG device. */
static void mem_of(const simnvml_dev *d, uint64_t *total, uint64_t *reserved, uint64_t *used) {
    if (d->mi) {
        *total = d->mi->mem_total_bytes;
        *reserved = 0;
        *used = d->mi->mem_used_bytes;
    } else {
        *total = d->s->mem_total_bytes;
        *reserved = d->s->mem_reserved_bytes;
        *used = d->s->mem_used_bytes;
    }
}

#if !KELVIN_SIM_LEGACY
SIMNVML_API nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t *memory) {
    ENTER(device, SIMNVML_ANY);
    OUT(memory);
    if (memory->version != nvmlMemory_v2) return simnvml__leave(NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
    uint64_t total, reserved, used;
    mem_of(&d, &total, &reserved, &used);
    memory->total = total;
    memory->reserved = reserved;
    memory->used = used;
    memory->free = total - reserved - used;
    return simnvml__leave(NVML_SUCCESS);
}
#endif

SIMNVML_API nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory) {
    ENTER(device, SIMNVML_ANY);
    OUT(memory);
    uint64_t total, reserved, used;
    mem_of(&d, &total, &reserved, &used);
    memory->total = total;
    memory->used = used + reserved; /* v1 counts the driver's reservation as used */
    memory->free = total - used - reserved;
    return simnvml__leave(NVML_SUCCESS);
}

/* ------------------------------------------------------------------------ */
/* Clock events (throttle reasons) and violation counters                    */

static nvmlReturn_t reasons(nvmlDevice_t device, unsigned long long *out, bool supported) {
    ENTER(device, SIMNVML_GPU_ONLY);
    OUT(out);
    *out = supported ? SIM_REASONS_SUPPORTED : d.s->reasons;
    return simnvml__leave(NVML_SUCCESS);
}

#if !KELVIN_SIM_LEGACY
SIMNVML_API nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t device,
                                                                unsigned long long *clocksEventReasons) {
    return reasons(device, clocksEventReasons, false);
}
SIMNVML_API nvmlReturn_t nvmlDeviceGetSupportedClocksEventReasons(
    nvmlDevice_t device, unsigned long long *supportedClocksEventReasons) {
    return reasons(device, supportedClocksEventReasons, true);
}
#endif

SIMNVML_API nvmlReturn_t
nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t device, unsigned long long *clocksThrottleReasons) {
    return reasons(device, clocksThrottleReasons, false);
}

SIMNVML_API nvmlReturn_t nvmlDeviceGetSupportedClocksThrottleReasons(
    nvmlDevice_t device, unsigned long long *supportedClocksThrottleReasons) {
    return reasons(device, supportedClocksThrottleReasons, true);
}

SIMNVML_API nvmlReturn_t nvmlDeviceGetViolationStatus(nvmlDevice_t device,
                                                      nvmlPerfPolicyType_t perfPolicyType,
                                                      nvmlViolationTime_t *violTime) {
    ENTER(device, SIMNVML_GPU_ONLY);
    OUT(violTime);
    if ((unsigned)perfPolicyType < SIM_VIOL__COUNT) {
        violTime->referenceTime = (unsigned long long)simnvml__unix_us();
        violTime->violationTime = d.s->violation_ns[perfPolicyType];
        return simnvml__leave(NVML_SUCCESS);
    }
    if (perfPolicyType == NVML_PERF_POLICY_TOTAL_APP_CLOCKS ||
        perfPolicyType == NVML_PERF_POLICY_TOTAL_BASE_CLOCKS)
        return simnvml__leave(NVML_ERROR_NOT_SUPPORTED);
    return simnvml__leave(NVML_ERROR_INVALID_ARGUMENT);
}

/* ------------------------------------------------------------------------ */
/* ECC, page retirement, row remapping                                       */

SIMNVML_API nvmlReturn_t nvmlDeviceGetEccMode(nvmlDevice_t device, nvmlEnableState_t *current,
                                              nvmlEnableState_t *pending) {
    ENTER(device, SIMNVML_GPU_ONLY);
    OUT(current && pending);
    if (!d.m->has_ecc) return simnvml__leave(NVML_ERROR_NOT_SUPPORTED);
    *current = *pending = NVML_FEATURE_ENABLED;
    return simnvml__leave(NVML_SUCCESS);
}

SIMNVML_API nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t device, nvmlMemoryErrorType_t errorType,
                                                     nvmlEccCounterType_t counterType,
                                                     unsigned long long *eccCounts) {
    ENTER(device, SIMNVML_GPU_ONLY);
    OUT(eccCounts);
    if ((unsigned)errorType >= NVML_MEMORY_ERROR_TYPE_COUNT ||
        (unsigned)counterType >= NVML_ECC_COUNTER_TYPE_COUNT)
        return simnvml__leave(NVML_ERROR_INVALID_ARGUMENT);
    if (!d.m->has_ecc) return simnvml__leave(NVML_ERROR_NOT_SUPPORTED);
    bool unc = errorType == NVML_MEMORY_ERROR_TYPE_UNCORRECTED, agg = counterType == NVML_AGGREGATE_ECC;
    *eccCounts =
        unc ? (agg ? d.s->ecc_dbe_agg : d.s->ecc_dbe_vol) : (agg ? d.s->ecc_sbe_agg : d.s->ecc_sbe_vol);
    return simnvml__leave(NVML_SUCCESS);
}

SIMNVML_API nvmlReturn_t nvmlDeviceGetRetiredPages(nvmlDevice_t device, nvmlPageRetirementCause_t cause,
                                                   unsigned int *pageCount, unsigned long long *addresses) {
    ENTER(device, SIMNVML_GPU_ONLY);
    OUT(pageCount);
    if ((unsigned)cause >= NVML_PAGE_RETIREMENT_CAUSE_COUNT)
        return simnvml__leave(NVML_ERROR_INVALID_ARGUMENT);
    if (!d.m->has_ecc || !d.m->has_retirement) return simnvml__leave(NVML_ERROR_NOT_SUPPORTED);
    unsigned n =
        cause == NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR ? d.s->retired_dbe : d.s->retired_sbe;
    if (*pageCount < n) {
        *pageCount = n;
        return simnvml__leave(NVML_ERROR_INSUFFICIENT_SIZE);
    }
    if (n && !addresses) return simnvml__leave(NVML_ERROR_INVALID_ARGUMENT);
    for (unsigned i = 0; i < n; i++) /* page addresses: 4 KiB aligned, stable per (GPU, cause, i) */
        addresses[i] =
            0x100000000ULL +
            ((((unsigned long long)d.gpu * 977 + (unsigned)cause * 131 + i * 7919) % 0xFFFFF) << 12);
    *pageCount = n;
    return simnvml__leave(NVML_SUCCESS);
}

SIMNVML_API nvmlReturn_t nvmlDeviceGetRetiredPagesPendingStatus(nvmlDevice_t device,
                                                                nvmlEnableState_t *isPending) {
    ENTER(device, SIMNVML_GPU_ONLY);
    OUT(isPending);
    if (!d.m->has_ecc || !d.m->has_retirement) return simnvml__leave(NVML_ERROR_NOT_SUPPORTED);
    *isPending = d.s->retired_pending ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
    return simnvml__leave(NVML_SUCCESS);
}

SIMNVML_API nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t device, unsigned int *corrRows,
                                                   unsigned int *uncRows, unsigned int *isPending,
                                                   unsigned int *failureOccurred) {
    ENTER(device, SIMNVML_GPU_ONLY);
    OUT(corrRows && uncRows && isPending && failureOccurred);
    if (!d.m->has_remapping || (d.s->mig_enabled && d.s->mig_count))
        return simnvml__leave(NVML_ERROR_NOT_SUPPORTED);
    *corrRows = d.s->remap_cor;
    *uncRows = d.s->remap_unc;
    *isPending = d.s->remap_pending;
    *failureOccurred = d.s->remap_failure;
    return simnvml__leave(NVML_SUCCESS);
}

/* ------------------------------------------------------------------------ */
/* PCIe                                                                      */

SIMNVML_API nvmlReturn_t nvmlDeviceGetPcieReplayCounter(nvmlDevice_t device, unsigned int *value) {
    ENTER(device, SIMNVML_GPU_ONLY);
    OUT(value);
    *value = d.s->pcie_replay;
    return simnvml__leave(NVML_SUCCESS);
}

SIMNVML_API nvmlReturn_t nvmlDeviceGetPcieThroughput(nvmlDevice_t device, nvmlPcieUtilCounter_t counter,
                                                     unsigned int *value) {
    ENTER(device, SIMNVML_GPU_ONLY);
    OUT(value);
    if (counter == NVML_PCIE_UTIL_TX_BYTES)
        *value = round_u(d.s->pcie_tx_bps / 1024.0);
    else if (counter == NVML_PCIE_UTIL_RX_BYTES)
        *value = round_u(d.s->pcie_rx_bps / 1024.0);
    else
        return simnvml__leave(NVML_ERROR_INVALID_ARGUMENT);
    return simnvml__leave(NVML_SUCCESS);
}

/* ------------------------------------------------------------------------ */
/* NVLink                                                                    */

SIMNVML_API nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t device, unsigned int link,
                                                  nvmlEnableState_t *isActive) {
    ENTER(device, SIMNVML_GPU_ONLY);
    OUT(isActive);
    if (link >= NVML_NVLINK_MAX_LINKS) return simnvml__leave(NVML_ERROR_INVALID_ARGUMENT);
    if (link >= d.s->nvlink_count) return simnvml__leave(NVML_ERROR_NOT_SUPPORTED);
    *isActive = NVML_FEATURE_ENABLED;
    return simnvml__leave(NVML_SUCCESS);
}

SIMNVML_API nvmlReturn_t nvmlDeviceGetNvLinkErrorCounter(nvmlDevice_t device, unsigned int link,
                                                         nvmlNvLinkErrorCounter_t counter,
                                                         unsigned long long *counterValue) {
    ENTER(device, SIMNVML_GPU_ONLY);
    OUT(counterValue);
    if (link >= NVML_NVLINK_MAX_LINKS || (unsigned)counter >= NVML_NVLINK_ERROR_COUNT)
        return simnvml__leave(NVML_ERROR_INVALID_ARGUMENT);
    if (link >= d.s->nvlink_count) return simnvml__leave(NVML_ERROR_NOT_SUPPORTED);
    *counterValue = d.s->nvl_err[link][counter];
    return simnvml__leave(NVML_SUCCESS);
}

/* ------------------------------------------------------------------------ */
/* Fans                                                                      */

#if !KELVIN_SIM_LEGACY
SIMNVML_API nvmlReturn_t nvmlDeviceGetNumFans(nvmlDevice_t device, unsigned int *numFans) {
    ENTER(device, SIMNVML_GPU_ONLY);
    OUT(numFans);
    *numFans = d.m->num_fans;
    return simnvml__leave(NVML_SUCCESS);
}
#endif

SIMNVML_API nvmlReturn_t nvmlDeviceGetFanSpeed_v2(nvmlDevice_t device, unsigned int fan,
                                                  unsigned int *speed) {
    ENTER(device, SIMNVML_GPU_ONLY);
    OUT(speed);
    if (d.m->num_fans == 0) return simnvml__leave(NVML_ERROR_NOT_SUPPORTED);
    if (fan >= d.m->num_fans) return simnvml__leave(NVML_ERROR_INVALID_ARGUMENT);
    *speed = round_u(d.s->fan_pct);
    return simnvml__leave(NVML_SUCCESS);
}

SIMNVML_API nvmlReturn_t nvmlDeviceGetFanSpeed(nvmlDevice_t device, unsigned int *speed) {
    ENTER(device, SIMNVML_GPU_ONLY);
    OUT(speed);
    if (d.m->num_fans == 0) return simnvml__leave(NVML_ERROR_NOT_SUPPORTED);
    *speed = round_u(d.s->fan_pct);
    return simnvml__leave(NVML_SUCCESS);
}

/* ------------------------------------------------------------------------ */
/* vGPU licensing: bare metal, so no licensable features                     */

SIMNVML_API nvmlReturn_t nvmlDeviceGetGridLicensableFeatures_v4(
    nvmlDevice_t device, nvmlGridLicensableFeatures_t *pGridLicensableFeatures) {
    ENTER(device, SIMNVML_GPU_ONLY);
    OUT(pGridLicensableFeatures);
    memset(pGridLicensableFeatures, 0, sizeof *pGridLicensableFeatures);
    pGridLicensableFeatures->isGridLicenseSupported = 0;
    pGridLicensableFeatures->licensableFeaturesCount = 0;
    return simnvml__leave(NVML_SUCCESS);
}
