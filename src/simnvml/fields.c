/* fields.c -- nvmlDeviceGetFieldValues over the simulated GPU.
 *
 * Like the driver, the call itself succeeds for a valid, present device and
 * every entry carries its own nvmlReturn: NOT_SUPPORTED for a field the
 * board lacks (memory temperature without an HBM sensor, NVLink fields
 * without NVLink, ECC without ECC, remapped rows while MIG instances
 * exist), for fields newer than the configured driver (PCIe byte counters
 * R555, NVLink5 byte counters R560, power average/instant R525, clock-event
 * duration counters R550) and for ids it does not know; INVALID_ARGUMENT for
 * a scopeId naming a link the board does not have. Each entry gets a
 * timestamp (µs since the epoch) and the NVML value type of its field.
 *
 * Quirk kept on purpose: on R545 drivers MEMORY_TEMP was reported with
 * valueType DOUBLE while the value sat in uiVal (gpu-metrics.md 2.1).
 */
#include <string.h>

#include "simnvml/simnvml_int.h"

#define C simnvml__ctx

static void set_ull(nvmlFieldValue_t *v, unsigned long long x) {
    v->valueType = NVML_VALUE_TYPE_UNSIGNED_LONG_LONG;
    v->value.ullVal = x;
}

static void set_uint(nvmlFieldValue_t *v, unsigned x) {
    v->valueType = NVML_VALUE_TYPE_UNSIGNED_INT;
    v->value.uiVal = x;
}

static unsigned long long nvl_sum(const sim_gpu_state *s, int err) {
    unsigned long long t = 0;
    for (unsigned l = 0; l < s->nvlink_count; l++) t += s->nvl_err[l][err];
    return t;
}

/* NVLink bytes of one link or all (scope UINT_MAX); -1 for a bad link. */
static int nvl_bytes(const sim_gpu_state *s, unsigned scope, bool tx, unsigned long long *ret) {
    unsigned long long t = 0;
    if (scope == NVML_FI_SCOPE_ALL_LINKS) {
        for (unsigned l = 0; l < s->nvlink_count; l++) t += tx ? s->nvl_tx_bytes[l] : s->nvl_rx_bytes[l];
    } else if (scope < s->nvlink_count) {
        t = tx ? s->nvl_tx_bytes[scope] : s->nvl_rx_bytes[scope];
    } else {
        return -1;
    }
    *ret = t;
    return 0;
}

static nvmlReturn_t one_field(const simnvml_dev *d, nvmlFieldValue_t *v) {
    const sim_gpu_state *s = d->s;
    const sim_model *m = d->m;
    int drv = C.driver_major;
    unsigned long long x;
    if (d->mig >= 0) return NVML_ERROR_NOT_SUPPORTED; /* device-wide fields only */
    switch (v->fieldId) {
    case NVML_FI_DEV_ECC_CURRENT:
    case NVML_FI_DEV_ECC_PENDING:
        if (!m->has_ecc) return NVML_ERROR_NOT_SUPPORTED;
        set_uint(v, 1);
        return NVML_SUCCESS;
    case NVML_FI_DEV_ECC_SBE_VOL_TOTAL:
    case NVML_FI_DEV_ECC_DBE_VOL_TOTAL:
    case NVML_FI_DEV_ECC_SBE_AGG_TOTAL:
    case NVML_FI_DEV_ECC_DBE_AGG_TOTAL: {
        if (!m->has_ecc) return NVML_ERROR_NOT_SUPPORTED;
        const uint64_t vals[] = {s->ecc_sbe_vol, s->ecc_dbe_vol, s->ecc_sbe_agg, s->ecc_dbe_agg};
        set_ull(v, vals[v->fieldId - NVML_FI_DEV_ECC_SBE_VOL_TOTAL]);
        return NVML_SUCCESS;
    }
    case NVML_FI_DEV_RETIRED_SBE:
    case NVML_FI_DEV_RETIRED_DBE:
    case NVML_FI_DEV_RETIRED_PENDING:
        if (!m->has_ecc || !m->has_retirement) return NVML_ERROR_NOT_SUPPORTED;
        if (v->fieldId == NVML_FI_DEV_RETIRED_PENDING)
            set_uint(v, s->retired_pending);
        else
            set_ull(v, v->fieldId == NVML_FI_DEV_RETIRED_SBE ? s->retired_sbe : s->retired_dbe);
        return NVML_SUCCESS;
    case NVML_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL:
    case NVML_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL:
    case NVML_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL:
    case NVML_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL: {
        if (!s->nvlink_count) return NVML_ERROR_NOT_SUPPORTED;
        int e = v->fieldId == NVML_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL   ? SIM_NVL_CRC_FLIT
                : v->fieldId == NVML_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL ? SIM_NVL_CRC_DATA
                : v->fieldId == NVML_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL   ? SIM_NVL_REPLAY
                                                                              : SIM_NVL_RECOVERY;
        set_ull(v, nvl_sum(s, e));
        return NVML_SUCCESS;
    }
    case NVML_FI_DEV_PERF_POLICY_POWER:
    case NVML_FI_DEV_PERF_POLICY_THERMAL:
    case NVML_FI_DEV_PERF_POLICY_SYNC_BOOST:
    case NVML_FI_DEV_PERF_POLICY_BOARD_LIMIT:
    case NVML_FI_DEV_PERF_POLICY_LOW_UTILIZATION:
    case NVML_FI_DEV_PERF_POLICY_RELIABILITY:
        set_ull(v, s->violation_ns[v->fieldId - NVML_FI_DEV_PERF_POLICY_POWER]);
        return NVML_SUCCESS;
    case NVML_FI_DEV_MEMORY_TEMP:
        if (!m->has_mem_temp) return NVML_ERROR_NOT_SUPPORTED;
        set_uint(v, s->temp_mem <= 0 ? 0u : (unsigned)(s->temp_mem + 0.5));
        if (drv == 545) v->valueType = NVML_VALUE_TYPE_DOUBLE; /* the R545 mislabel */
        return NVML_SUCCESS;
    case NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION:
        set_ull(v, (unsigned long long)s->energy_mj);
        return NVML_SUCCESS;
    case NVML_FI_DEV_NVLINK_LINK_COUNT:
        if (!s->nvlink_count) return NVML_ERROR_NOT_SUPPORTED;
        set_uint(v, s->nvlink_count);
        return NVML_SUCCESS;
    case NVML_FI_DEV_PCIE_REPLAY_COUNTER: set_uint(v, s->pcie_replay); return NVML_SUCCESS;
    case NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX:
    case NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX:
    case NVML_FI_DEV_NVLINK_THROUGHPUT_RAW_TX:
    case NVML_FI_DEV_NVLINK_THROUGHPUT_RAW_RX: {
        if (!s->nvlink_count) return NVML_ERROR_NOT_SUPPORTED;
        bool tx = v->fieldId == NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX ||
                  v->fieldId == NVML_FI_DEV_NVLINK_THROUGHPUT_RAW_TX;
        bool raw = v->fieldId >= NVML_FI_DEV_NVLINK_THROUGHPUT_RAW_TX;
        if (nvl_bytes(s, v->scopeId, tx, &x) != 0) return NVML_ERROR_INVALID_ARGUMENT;
        if (raw) x += x / 16; /* headers and flow control on the wire */
        set_ull(v, x / 1024); /* KiB */
        return NVML_SUCCESS;
    }
    case NVML_FI_DEV_REMAPPED_COR:
    case NVML_FI_DEV_REMAPPED_UNC:
    case NVML_FI_DEV_REMAPPED_PENDING:
    case NVML_FI_DEV_REMAPPED_FAILURE: {
        if (!m->has_remapping || (s->mig_enabled && s->mig_count)) return NVML_ERROR_NOT_SUPPORTED;
        const unsigned vals[] = {s->remap_cor, s->remap_unc, s->remap_pending, s->remap_failure};
        set_uint(v, vals[v->fieldId - NVML_FI_DEV_REMAPPED_COR]);
        return NVML_SUCCESS;
    }
    case NVML_FI_DEV_POWER_AVERAGE:
    case NVML_FI_DEV_POWER_INSTANT: {
        if (drv < 525) return NVML_ERROR_NOT_SUPPORTED;
        double w = v->fieldId == NVML_FI_DEV_POWER_AVERAGE ? s->power_w : s->power_inst_w;
        set_uint(v, w <= 0 ? 0u : (unsigned)(w * 1000.0 + 0.5));
        return NVML_SUCCESS;
    }
    case NVML_FI_DEV_PCIE_COUNT_TX_BYTES:
    case NVML_FI_DEV_PCIE_COUNT_RX_BYTES:
        if (drv < 555) return NVML_ERROR_NOT_SUPPORTED;
        set_ull(v, v->fieldId == NVML_FI_DEV_PCIE_COUNT_TX_BYTES ? s->pcie_tx_bytes : s->pcie_rx_bytes);
        return NVML_SUCCESS;
    case NVML_FI_DEV_NVLINK_COUNT_XMIT_BYTES:
    case NVML_FI_DEV_NVLINK_COUNT_RCV_BYTES:
        if (drv < 560 || !s->nvlink_count) return NVML_ERROR_NOT_SUPPORTED;
        if (nvl_bytes(s, v->scopeId, v->fieldId == NVML_FI_DEV_NVLINK_COUNT_XMIT_BYTES, &x) != 0)
            return NVML_ERROR_INVALID_ARGUMENT;
        set_ull(v, x);
        return NVML_SUCCESS;
    case NVML_FI_DEV_CLOCKS_EVENT_REASON_SW_THERM_SLOWDOWN:
        if (drv < 550) return NVML_ERROR_NOT_SUPPORTED;
        set_ull(v, s->sw_thermal_ns);
        return NVML_SUCCESS;
    case NVML_FI_DEV_CLOCKS_EVENT_REASON_HW_THERM_SLOWDOWN:
        if (drv < 550) return NVML_ERROR_NOT_SUPPORTED;
        set_ull(v, s->hw_thermal_ns);
        return NVML_SUCCESS;
    case NVML_FI_DEV_CLOCKS_EVENT_REASON_HW_POWER_BRAKE_SLOWDOWN:
        if (drv < 550) return NVML_ERROR_NOT_SUPPORTED;
        set_ull(v, s->hw_power_brake_ns);
        return NVML_SUCCESS;
    default: return NVML_ERROR_NOT_SUPPORTED;
    }
}

SIMNVML_API nvmlReturn_t nvmlDeviceGetFieldValues(nvmlDevice_t device, int valuesCount,
                                                  nvmlFieldValue_t *values) {
    simnvml_dev d;
    nvmlReturn_t r = simnvml__enter_dev(device, SIMNVML_ANY, &d);
    if (r != NVML_SUCCESS) return r;
    if (valuesCount <= 0 || !values) return simnvml__leave(NVML_ERROR_INVALID_ARGUMENT);
    long long now = simnvml__unix_us();
    for (int i = 0; i < valuesCount; i++) {
        nvmlFieldValue_t *v = &values[i];
        v->timestamp = now;
        v->latencyUsec = 0;
        v->valueType = NVML_VALUE_TYPE_UNSIGNED_LONG_LONG;
        memset(&v->value, 0, sizeof v->value);
        v->nvmlReturn = one_field(&d, v);
        if (v->nvmlReturn != NVML_SUCCESS) memset(&v->value, 0, sizeof v->value);
    }
    return simnvml__leave(NVML_SUCCESS);
}
