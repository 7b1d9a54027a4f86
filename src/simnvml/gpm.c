/* gpm.c -- GPU Performance Monitoring (Hopper+): samples and metrics.
 *
 * A sample is a snapshot of the model's cumulative counters: activity
 * integrals (ratio-seconds, per GPU or per MIG instance), PCIe and NVLink
 * byte counters, and the model time. nvmlGpmMetricsGet turns two samples
 * into rates: utilisation metrics are 100 * delta(integral) / delta(t)
 * (percent, as NVML reports them), PCIe and NVLink metrics are
 * delta(bytes) / delta(t) in MiB/s (the unit NVML's header gives).
 * Every metric gets its own nvmlReturn: NOT_SUPPORTED for ids the model
 * has no counter for (or that do not apply: bus traffic of a MIG sample,
 * links or engines the board lacks); the call returns SUCCESS. The second
 * sample must be newer than the first (INVALID_ARGUMENT otherwise) and
 * both must come from the same GPU / GPU instance.
 *
 * Absent from the legacy (R470) build: GPM arrived in R520.
 * Ownership: nvmlGpmSampleAlloc allocates, nvmlGpmSampleFree frees; the
 * last nvmlShutdown frees what is left. metricInfo strings are static.
 */
#include <stdlib.h>
#include <string.h>

#include "simnvml/simnvml_int.h"

#define C simnvml__ctx

#if KELVIN_SIM_LEGACY

void simnvml__free_samples(void) {}

#else

void simnvml__free_samples(void) {
    while (C.samples) {
        struct nvmlGpmSample_st *n = C.samples->next;
        free(C.samples);
        C.samples = n;
    }
}

static bool sample_ok(nvmlGpmSample_t s) {
    for (struct nvmlGpmSample_st *p = C.samples; p; p = p->next)
        if (p == s) return true;
    return false;
}

SIMNVML_API nvmlReturn_t nvmlGpmQueryDeviceSupport(nvmlDevice_t device, nvmlGpmSupport_t *gpmSupport) {
    simnvml_dev d;
    nvmlReturn_t r = simnvml__enter_dev(device, SIMNVML_ANY, &d);
    if (r != NVML_SUCCESS) return r;
    if (!gpmSupport) return simnvml__leave(NVML_ERROR_INVALID_ARGUMENT);
    if (gpmSupport->version != NVML_GPM_SUPPORT_VERSION)
        return simnvml__leave(NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
    gpmSupport->isSupportedDevice = d.m->has_gpm ? 1u : 0u;
    return simnvml__leave(NVML_SUCCESS);
}

SIMNVML_API nvmlReturn_t nvmlGpmSampleAlloc(nvmlGpmSample_t *gpmSample) {
    nvmlReturn_t r = simnvml__enter();
    if (r != NVML_SUCCESS) return r;
    if (!gpmSample) return simnvml__leave(NVML_ERROR_INVALID_ARGUMENT);
    struct nvmlGpmSample_st *s = calloc(1, sizeof *s);
    if (!s) return simnvml__leave(NVML_ERROR_MEMORY);
    s->next = C.samples;
    C.samples = s;
    *gpmSample = s;
    return simnvml__leave(NVML_SUCCESS);
}

SIMNVML_API nvmlReturn_t nvmlGpmSampleFree(nvmlGpmSample_t gpmSample) {
    nvmlReturn_t r = simnvml__enter();
    if (r != NVML_SUCCESS) return r;
    for (struct nvmlGpmSample_st **p = &C.samples; *p; p = &(*p)->next) {
        if (*p == gpmSample) {
            *p = gpmSample->next;
            free(gpmSample);
            return simnvml__leave(NVML_SUCCESS);
        }
    }
    return simnvml__leave(NVML_ERROR_INVALID_ARGUMENT);
}

static void snapshot(struct nvmlGpmSample_st *smp, const simnvml_dev *d, int mig) {
    const sim_gpu_state *s = d->s;
    smp->taken = true;
    smp->gpu = d->gpu;
    smp->mig = mig;
    smp->t = sim_node_time(C.node);
    memcpy(smp->act_int, mig >= 0 ? s->mig[mig].act_int : s->act_int, sizeof smp->act_int);
    smp->pcie_tx = s->pcie_tx_bytes;
    smp->pcie_rx = s->pcie_rx_bytes;
    memcpy(smp->nvl_tx, s->nvl_tx_bytes, sizeof smp->nvl_tx);
    memcpy(smp->nvl_rx, s->nvl_rx_bytes, sizeof smp->nvl_rx);
}

SIMNVML_API nvmlReturn_t nvmlGpmSampleGet(nvmlDevice_t device, nvmlGpmSample_t gpmSample) {
    simnvml_dev d;
    nvmlReturn_t r = simnvml__enter_dev(device, SIMNVML_GPU_ONLY, &d);
    if (r != NVML_SUCCESS) return r;
    if (!sample_ok(gpmSample)) return simnvml__leave(NVML_ERROR_INVALID_ARGUMENT);
    if (!d.m->has_gpm) return simnvml__leave(NVML_ERROR_NOT_SUPPORTED);
    C.last_step_ns = 0; /* a sample is taken now, not up to a ms ago */
    simnvml__advance();
    snapshot(gpmSample, &d, -1);
    return simnvml__leave(NVML_SUCCESS);
}

SIMNVML_API nvmlReturn_t nvmlGpmMigSampleGet(nvmlDevice_t device, unsigned int gpuInstanceId,
                                             nvmlGpmSample_t gpmSample) {
    simnvml_dev d;
    nvmlReturn_t r = simnvml__enter_dev(device, SIMNVML_GPU_ONLY, &d);
    if (r != NVML_SUCCESS) return r;
    if (!sample_ok(gpmSample)) return simnvml__leave(NVML_ERROR_INVALID_ARGUMENT);
    if (!d.m->has_gpm) return simnvml__leave(NVML_ERROR_NOT_SUPPORTED);
    if (!d.s->mig_enabled) return simnvml__leave(NVML_ERROR_INVALID_STATE);
    for (unsigned k = 0; k < d.s->mig_count; k++) {
        if (d.s->mig[k].gi_id == gpuInstanceId) {
            C.last_step_ns = 0;
            simnvml__advance();
            snapshot(gpmSample, &d, (int)k);
            return simnvml__leave(NVML_SUCCESS);
        }
    }
    return simnvml__leave(NVML_ERROR_NOT_FOUND);
}

typedef struct metric_info {
    unsigned id;
    int act;      /* activity channel, or -1 */
    double scale; /* of that channel */
    const char *shortName, *longName, *unit;
} metric_info;

static const metric_info metrics[] = {
    {NVML_GPM_METRIC_GRAPHICS_UTIL, SIM_ACT_GRAPHICS, 1.0, "gr_util", "Graphics/compute engine activity",
     "%"},
    {NVML_GPM_METRIC_SM_UTIL, SIM_ACT_SM, 1.0, "sm_util", "SM activity", "%"},
    {NVML_GPM_METRIC_SM_OCCUPANCY, SIM_ACT_SM_OCC, 1.0, "sm_occupancy", "SM occupancy", "%"},
    {NVML_GPM_METRIC_INTEGER_UTIL, SIM_ACT_INT, 1.0, "integer_util", "Integer pipe activity", "%"},
    {NVML_GPM_METRIC_ANY_TENSOR_UTIL, SIM_ACT_TENSOR, 1.0, "any_tensor_util", "Tensor pipe activity", "%"},
    {NVML_GPM_METRIC_DFMA_TENSOR_UTIL, SIM_ACT_FP64, 0.5, "dfma_tensor_util", "DFMA tensor pipe activity",
     "%"},
    {NVML_GPM_METRIC_HMMA_TENSOR_UTIL, SIM_ACT_TENSOR, 0.95, "hmma_tensor_util", "HMMA tensor pipe activity",
     "%"},
    {NVML_GPM_METRIC_IMMA_TENSOR_UTIL, SIM_ACT_TENSOR, 0.05, "imma_tensor_util", "IMMA tensor pipe activity",
     "%"},
    {NVML_GPM_METRIC_DRAM_BW_UTIL, SIM_ACT_DRAM, 1.0, "dram_bw_util", "DRAM bandwidth utilization", "%"},
    {NVML_GPM_METRIC_FP64_UTIL, SIM_ACT_FP64, 1.0, "fp64_util", "FP64 pipe activity", "%"},
    {NVML_GPM_METRIC_FP32_UTIL, SIM_ACT_FP32, 1.0, "fp32_util", "FP32 pipe activity", "%"},
    {NVML_GPM_METRIC_FP16_UTIL, SIM_ACT_FP16, 1.0, "fp16_util", "FP16 pipe activity", "%"},
    {NVML_GPM_METRIC_PCIE_TX_PER_SEC, -1, 0, "pcie_tx", "PCIe traffic from this GPU", "MiB/sec"},
    {NVML_GPM_METRIC_PCIE_RX_PER_SEC, -1, 0, "pcie_rx", "PCIe traffic to this GPU", "MiB/sec"},
    {NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC, -1, 0, "nvlink_rx", "NVLink read bandwidth for all links",
     "MiB/sec"},
    {NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC, -1, 0, "nvlink_tx", "NVLink write bandwidth for all links",
     "MiB/sec"},
};

static const metric_info dec_info = {0, SIM_ACT_DEC, 1.0, "nvdec_util", "NVDEC engine activity", "%"};
static const metric_info jpg_info = {0, -1, 0, "nvjpg_util", "NVJPG engine activity", "%"};
static const metric_info ofa_info = {0, -1, 0, "nvofa_util", "NVOFA engine activity", "%"};
static const metric_info link_rx_info = {
    0, -1, 0, "nvlink_lN_rx", "NVLink read bandwidth for one link", "MiB/sec"};
static const metric_info link_tx_info = {
    0, -1, 0, "nvlink_lN_tx", "NVLink write bandwidth for one link", "MiB/sec"};

static double mib_rate(uint64_t a, uint64_t b, double dt) {
    return b >= a ? (double)(b - a) / 1048576.0 / dt : 0.0;
}

/* Fills one metric from samples a -> b. */
static nvmlReturn_t one_metric(nvmlGpmMetric_t *mt, const struct nvmlGpmSample_st *a,
                               const struct nvmlGpmSample_st *b, const sim_model *m) {
    double dt = b->t - a->t;
    unsigned id = mt->metricId;
    const metric_info *info = NULL;
    for (size_t i = 0; i < sizeof metrics / sizeof metrics[0]; i++)
        if (metrics[i].id == id) info = &metrics[i];
    double v = 0;
    if (info && info->act >= 0) {
        v = 100.0 * info->scale * (b->act_int[info->act] - a->act_int[info->act]) / dt;
    } else if (info) {
        if (a->mig >= 0) return NVML_ERROR_NOT_SUPPORTED; /* bus traffic is per GPU */
        uint64_t ta = 0, tb = 0;
        switch (id) {
        case NVML_GPM_METRIC_PCIE_TX_PER_SEC: ta = a->pcie_tx, tb = b->pcie_tx; break;
        case NVML_GPM_METRIC_PCIE_RX_PER_SEC: ta = a->pcie_rx, tb = b->pcie_rx; break;
        default:
            if (!m->nvlink_count) return NVML_ERROR_NOT_SUPPORTED;
            for (unsigned l = 0; l < m->nvlink_count; l++) {
                ta += id == NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC ? a->nvl_tx[l] : a->nvl_rx[l];
                tb += id == NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC ? b->nvl_tx[l] : b->nvl_rx[l];
            }
        }
        v = mib_rate(ta, tb, dt);
    } else if (id >= NVML_GPM_METRIC_NVDEC_0_UTIL && id < NVML_GPM_METRIC_NVDEC_0_UTIL + 8) {
        if (id - NVML_GPM_METRIC_NVDEC_0_UTIL >= m->decoders) return NVML_ERROR_NOT_SUPPORTED;
        info = &dec_info;
        v = 100.0 * (b->act_int[SIM_ACT_DEC] - a->act_int[SIM_ACT_DEC]) / dt;
    } else if (id >= NVML_GPM_METRIC_NVJPG_0_UTIL && id < NVML_GPM_METRIC_NVJPG_0_UTIL + 8) {
        if (id - NVML_GPM_METRIC_NVJPG_0_UTIL >= m->decoders) return NVML_ERROR_NOT_SUPPORTED;
        info = &jpg_info;
    } else if (id == NVML_GPM_METRIC_NVOFA_0_UTIL) {
        info = &ofa_info;
    } else if (id >= NVML_GPM_METRIC_NVLINK_L0_RX_PER_SEC &&
               id < NVML_GPM_METRIC_NVLINK_L0_RX_PER_SEC + 2 * SIM_MAX_NVLINKS) {
        unsigned link = (id - NVML_GPM_METRIC_NVLINK_L0_RX_PER_SEC) / 2;
        bool tx = (id - NVML_GPM_METRIC_NVLINK_L0_RX_PER_SEC) % 2 == 1;
        if (a->mig >= 0 || link >= m->nvlink_count) return NVML_ERROR_NOT_SUPPORTED;
        info = tx ? &link_tx_info : &link_rx_info;
        v = tx ? mib_rate(a->nvl_tx[link], b->nvl_tx[link], dt)
               : mib_rate(a->nvl_rx[link], b->nvl_rx[link], dt);
    } else {
        return NVML_ERROR_NOT_SUPPORTED;
    }
    if (v < 0) v = 0;
    if (info->unit[0] == '%' && v > 100.0) v = 100.0;
    mt->value = v;
    mt->metricInfo.shortName = (char *)info->shortName;
    mt->metricInfo.longName = (char *)info->longName;
    mt->metricInfo.unit = (char *)info->unit;
    return NVML_SUCCESS;
}

SIMNVML_API nvmlReturn_t nvmlGpmMetricsGet(nvmlGpmMetricsGet_t *metricsGet) {
    nvmlReturn_t r = simnvml__enter();
    if (r != NVML_SUCCESS) return r;
    nvmlGpmMetricsGet_t *g = metricsGet;
    if (!g) return simnvml__leave(NVML_ERROR_INVALID_ARGUMENT);
    if (g->version != NVML_GPM_METRICS_GET_VERSION)
        return simnvml__leave(NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
    if (g->numMetrics == 0 || g->numMetrics > NVML_GPM_METRIC_MAX)
        return simnvml__leave(NVML_ERROR_INVALID_ARGUMENT);
    if (!sample_ok(g->sample1) || !sample_ok(g->sample2)) return simnvml__leave(NVML_ERROR_INVALID_ARGUMENT);
    const struct nvmlGpmSample_st *a = g->sample1, *b = g->sample2;
    if (!a->taken || !b->taken || a->gpu != b->gpu || a->mig != b->mig || !(b->t > a->t))
        return simnvml__leave(NVML_ERROR_INVALID_ARGUMENT);
    if (a->gpu >= sim_node_gpu_count(C.node)) return simnvml__leave(NVML_ERROR_INVALID_ARGUMENT);
    const sim_model *m = sim_node_config(C.node)->model;
    for (unsigned i = 0; i < g->numMetrics; i++) {
        nvmlGpmMetric_t *mt = &g->metrics[i];
        mt->value = 0;
        memset(&mt->metricInfo, 0, sizeof mt->metricInfo);
        mt->nvmlReturn = one_metric(mt, a, b, m);
    }
    return simnvml__leave(NVML_SUCCESS);
}

#endif
