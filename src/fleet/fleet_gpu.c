/* fleet_gpu.c -- one simulated node's GPUs as the agent's GPU series.
 *
 * The agent reads simulated GPUs through the simulated libnvidia-ml.so.1,
 * which holds one node per process; a fleet needs hundreds, so this file
 * reads each node's sim_node state (src/sim) directly and writes the same
 * series the agent's GPU collector writes with its default counters:
 * dcgm-exporter's DCGM_FI_* families and Kelvin's kelvin_gpu_* ones, with
 * the agent's label set (gpu, UUID, pci_bus_id, device, modelName,
 * Hostname, simulated="true", DCGM_FI_DRIVER_VERSION) and the agent's unit
 * conversions (MHz and C rounded, mW / 1000, MiB = bytes >> 20, ns / 1e9).
 * Names, types and HELP text are looked up in the agent's catalog once
 * (families[] below), so the two cannot drift apart silently: a name the
 * catalog lacks fails fleet__gpu_catalog_check() at start-up.
 *
 * Per node, per GPU, the label string and the kelvin_gpu_info extra are
 * rendered once at creation. Rates that NVML reports as "now" (NVLink
 * throughput) come from the cumulative byte counters between two fills.
 * XIDs are read from the node's event ring with this node's own cursor
 * and counted per (GPU, code), like the agent's XID store.
 *
 * Not simulated here: MIG instances (the fleet has no MIG flag) and fans
 * on fanless boards (the model says which have them).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/catalog.h"
#include "agent/xid.h"
#include "base/buf.h"
#include "base/err.h"
#include "fleet/fleet_int.h"

/* The families written, in the agent's order. */
#define FLEET_GPU_FAMILIES(X)                                                                                \
    X(NVML_UP, "kelvin_gpu_nvml_up")                                                                         \
    X(SM_CLOCK, "DCGM_FI_DEV_SM_CLOCK")                                                                      \
    X(MEM_CLOCK, "DCGM_FI_DEV_MEM_CLOCK")                                                                    \
    X(MEMORY_TEMP, "DCGM_FI_DEV_MEMORY_TEMP")                                                                \
    X(GPU_TEMP, "DCGM_FI_DEV_GPU_TEMP")                                                                      \
    X(POWER_USAGE, "DCGM_FI_DEV_POWER_USAGE")                                                                \
    X(ENERGY, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION")                                                        \
    X(PCIE_REPLAY, "DCGM_FI_DEV_PCIE_REPLAY_COUNTER")                                                        \
    X(GPU_UTIL, "DCGM_FI_DEV_GPU_UTIL")                                                                      \
    X(MEM_COPY_UTIL, "DCGM_FI_DEV_MEM_COPY_UTIL")                                                            \
    X(ENC_UTIL, "DCGM_FI_DEV_ENC_UTIL")                                                                      \
    X(DEC_UTIL, "DCGM_FI_DEV_DEC_UTIL")                                                                      \
    X(XID_ERRORS, "DCGM_FI_DEV_XID_ERRORS")                                                                  \
    X(FB_FREE, "DCGM_FI_DEV_FB_FREE")                                                                        \
    X(FB_USED, "DCGM_FI_DEV_FB_USED")                                                                        \
    X(FB_RESERVED, "DCGM_FI_DEV_FB_RESERVED")                                                                \
    X(NVLINK_BW, "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL")                                                       \
    X(VGPU_LICENSE, "DCGM_FI_DEV_VGPU_LICENSE_STATUS")                                                       \
    X(UNC_REMAPPED, "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS")                                               \
    X(COR_REMAPPED, "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS")                                                 \
    X(REMAP_FAILURE, "DCGM_FI_DEV_ROW_REMAP_FAILURE")                                                        \
    X(GR_ACTIVE, "DCGM_FI_PROF_GR_ENGINE_ACTIVE")                                                            \
    X(TENSOR_ACTIVE, "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE")                                                      \
    X(DRAM_ACTIVE, "DCGM_FI_PROF_DRAM_ACTIVE")                                                               \
    X(PCIE_TX, "DCGM_FI_PROF_PCIE_TX_BYTES")                                                                 \
    X(PCIE_RX, "DCGM_FI_PROF_PCIE_RX_BYTES")                                                                 \
    X(K_LOST, "kelvin_gpu_lost")                                                                             \
    X(K_INFO, "kelvin_gpu_info")                                                                             \
    X(K_MEM_TEMP, "kelvin_gpu_memory_temperature_celsius")                                                   \
    X(K_POWER_LIMIT, "kelvin_gpu_power_limit_watts")                                                         \
    X(K_ENFORCED_LIMIT, "kelvin_gpu_power_enforced_limit_watts")                                             \
    X(K_CLOCK_MAX, "kelvin_gpu_clock_max_hertz")                                                             \
    X(K_CLOCK_EVENT, "kelvin_gpu_clock_event_active")                                                        \
    X(K_VIOLATION, "kelvin_gpu_violation_seconds_total")                                                     \
    X(K_ECC_VOL, "kelvin_gpu_ecc_volatile_errors_total")                                                     \
    X(K_ECC_AGG, "kelvin_gpu_ecc_aggregate_errors_total")                                                    \
    X(K_RETIRED, "kelvin_gpu_retired_pages_total")                                                           \
    X(K_RETIRED_PENDING, "kelvin_gpu_retired_pages_pending")                                                 \
    X(K_REMAPPED, "kelvin_gpu_remapped_rows_total")                                                          \
    X(K_REMAP_PENDING, "kelvin_gpu_remapped_rows_pending")                                                   \
    X(K_REMAP_FAILED, "kelvin_gpu_remapped_rows_failed")                                                     \
    X(K_PCIE_REPLAYS, "kelvin_gpu_pcie_replays_total")                                                       \
    X(K_NVLINK_ERRORS, "kelvin_gpu_nvlink_errors_total")                                                     \
    X(K_NVLINK_BYTES, "kelvin_gpu_nvlink_bytes_total")                                                       \
    X(K_FAN, "kelvin_gpu_fan_speed_ratio")                                                                   \
    X(K_ENC_UTIL, "kelvin_gpu_encoder_utilization_ratio")                                                    \
    X(K_DEC_UTIL, "kelvin_gpu_decoder_utilization_ratio")                                                    \
    X(K_SM_ACTIVE, "kelvin_gpu_sm_active_ratio")                                                             \
    X(K_SM_OCC, "kelvin_gpu_sm_occupancy_ratio")                                                             \
    X(K_TENSOR, "kelvin_gpu_tensor_active_ratio")                                                            \
    X(K_DRAM, "kelvin_gpu_dram_active_ratio")                                                                \
    X(K_PIPE, "kelvin_gpu_pipe_active_ratio")                                                                \
    X(K_PCIE_TPUT, "kelvin_gpu_pcie_throughput_bytes_per_second")                                            \
    X(K_NVLINK_TPUT, "kelvin_gpu_nvlink_throughput_bytes_per_second")                                        \
    X(K_XID, "kelvin_gpu_xid_errors_total")                                                                  \
    X(K_PROC_MEM, "kelvin_gpu_process_memory_bytes")

enum {
#define FLEET__F_ENUM(id, name) F_##id,
    FLEET_GPU_FAMILIES(FLEET__F_ENUM)
#undef FLEET__F_ENUM
        F__COUNT
};

static const char *const family_names[F__COUNT] = {
#define FLEET__F_NAME(id, name) [F_##id] = name,
    FLEET_GPU_FAMILIES(FLEET__F_NAME)
#undef FLEET__F_NAME
};

#define XID_CODES 16 /* distinct XID codes counted per GPU, as the agent's store */

typedef struct xid_count {
    unsigned xid;
    uint64_t count;
} xid_count;

typedef struct gpu_ent {
    char *labels;            /* gpu, UUID, ... as the agent renders them */
    char *info_extra;        /* kelvin_gpu_info's own labels */
    uint64_t nvl_tx, nvl_rx; /* sums at the last fill */
    double nvl_tx_bps, nvl_rx_bps;
    unsigned last_xid;
    int have_xid;
    size_t nxid;
    xid_count xids[XID_CODES];
} gpu_ent;

struct fleet_gpus {
    sim_node *node;
    char *hostname;
    uint64_t seed;
    uint64_t xid_cursor;
    double last_t; /* model time of the last fill, < 0 before the first */
    unsigned count;
    const agent_metric *cat[F__COUNT]; /* resolved once */
    gpu_ent gpus[SIM_MAX_GPUS];
};

/* ---- catalog -------------------------------------------------------------- */

int fleet__gpu_catalog_check(char *err, size_t errlen) {
    for (int f = 0; f < F__COUNT; f++)
        if (!agent_catalog_find(family_names[f]))
            return base_errf(err, errlen, BASE_E_NOTFOUND, "GPU metric %s is not in the agent's catalog",
                             family_names[f]);
    return 0;
}

/* ---- lifecycle ------------------------------------------------------------ */

static char *steal(base_buf *b) {
    if (base_buf_err(b)) {
        base_buf_free(b);
        return NULL;
    }
    char *s = base_buf_steal(b, NULL);
    return s ? s : strdup("");
}

static int render_gpu(fleet_gpus *g, unsigned i) {
    const sim_config *cfg = sim_node_config(g->node);
    char uuid[96], serial[32], idx[16], dev[32], bus[40], nvmlv[48];
    unsigned dom = 0, busn = 0, devn = 0;
    if (sim_gpu_uuid(g->node, i, uuid, sizeof uuid) < 0 ||
        sim_gpu_serial(g->node, i, serial, sizeof serial) < 0 ||
        sim_gpu_pci(g->node, i, &dom, &busn, &devn) != 0)
        return BASE_E_INVAL;
    snprintf(idx, sizeof idx, "%u", i);
    snprintf(dev, sizeof dev, "nvidia%u", i);
    snprintf(bus, sizeof bus, "%08X:%02X:%02X.0", dom, busn, devn);
    snprintf(nvmlv, sizeof nvmlv, "12.%s", cfg->driver_version);
    base_buf b;
    base_buf_init(&b, 0);
    expo_label_append(&b, "gpu", idx);
    expo_label_append(&b, "UUID", uuid);
    expo_label_append(&b, "pci_bus_id", bus);
    expo_label_append(&b, "device", dev);
    expo_label_append(&b, "modelName", cfg->model->name);
    if (*g->hostname) expo_label_append(&b, "Hostname", g->hostname);
    expo_label_append(&b, "simulated", "true");
    expo_label_append(&b, "DCGM_FI_DRIVER_VERSION", cfg->driver_version);
    g->gpus[i].labels = steal(&b);
    base_buf_init(&b, 0);
    expo_label_append(&b, "driver_version", cfg->driver_version);
    expo_label_append(&b, "nvml_version", nvmlv);
    expo_label_append(&b, "brand", "NVIDIA");
    expo_label_append(&b, "serial", serial);
    expo_label_append(&b, "vbios_version", cfg->model->vbios);
    g->gpus[i].info_extra = steal(&b);
    return g->gpus[i].labels && g->gpus[i].info_extra ? 0 : BASE_E_NOMEM;
}

static void nvl_sums(const sim_gpu_state *s, uint64_t *tx, uint64_t *rx) {
    uint64_t a = 0, b = 0;
    for (unsigned l = 0; l < s->nvlink_count && l < SIM_MAX_NVLINKS; l++) {
        a += s->nvl_tx_bytes[l];
        b += s->nvl_rx_bytes[l];
    }
    *tx = a;
    *rx = b;
}

int fleet__gpus_new(const sim_config *cfg, const char *hostname, fleet_gpus **ret, char *err, size_t errlen) {
    fleet_gpus *g = calloc(1, sizeof *g);
    if (!g) return BASE_E_NOMEM;
    g->last_t = -1;
    g->seed = cfg->seed;
    g->hostname = strdup(hostname ? hostname : "");
    int rc = g->hostname ? sim_node_new(cfg, &g->node, err, errlen) : BASE_E_NOMEM;
    if (rc != 0) {
        fleet__gpus_free(g);
        return rc;
    }
    for (int k = 0; k < F__COUNT; k++)
        if (!(g->cat[k] = agent_catalog_find(family_names[k]))) {
            fleet__gpus_free(g);
            return base_errf(err, errlen, BASE_E_NOTFOUND, "GPU metric %s is not in the agent's catalog",
                             family_names[k]);
        }
    g->count = sim_node_gpu_count(g->node);
    g->xid_cursor = sim_node_event_next(g->node);
    for (unsigned i = 0; i < g->count; i++) {
        if ((rc = render_gpu(g, i)) != 0) {
            fleet__gpus_free(g);
            return base_errf(err, errlen, rc, "GPU %u: cannot render its labels", i);
        }
        nvl_sums(sim_node_gpu(g->node, i), &g->gpus[i].nvl_tx, &g->gpus[i].nvl_rx);
    }
    *ret = g;
    return 0;
}

void fleet__gpus_free(fleet_gpus *g) {
    if (!g) return;
    for (unsigned i = 0; i < SIM_MAX_GPUS; i++) {
        free(g->gpus[i].labels);
        free(g->gpus[i].info_extra);
    }
    sim_node_free(g->node);
    free(g->hostname);
    free(g);
}

/* ---- one fill ------------------------------------------------------------- */

static void read_events(fleet_gpus *g) {
    sim_xid_event ev[64];
    for (int round = 0; round < 64; round++) { /* bounded: 64 x 64 events a fill */
        size_t n = sim_node_events(g->node, &g->xid_cursor, ev, 64, NULL);
        for (size_t k = 0; k < n; k++) {
            if (ev[k].gpu >= g->count) continue;
            gpu_ent *e = &g->gpus[ev[k].gpu];
            e->last_xid = ev[k].xid;
            e->have_xid = 1;
            size_t j = 0;
            while (j < e->nxid && e->xids[j].xid != ev[k].xid) j++;
            if (j == e->nxid) {
                if (e->nxid == XID_CODES) continue; /* the store's limit: further codes are not counted */
                /* keep sorted by code, as the agent serves them */
                while (j > 0 && e->xids[j - 1].xid > ev[k].xid) {
                    e->xids[j] = e->xids[j - 1];
                    j--;
                }
                e->xids[j] = (xid_count){.xid = ev[k].xid, .count = 0};
                e->nxid++;
            }
            e->xids[j].count++;
        }
        if (n < 64) break;
    }
}

typedef struct filler {
    expo_mset *ms;
    expo_family *fam[F__COUNT];
} filler;

static void put(filler *f, int fam, const char *labels, const char *extra, double v) {
    if (f->fam[fam] && isfinite(v)) expo_mset_add(f->ms, f->fam[fam], "", labels, extra, v);
}

static const char *const reason_extra[9] = {
    "reason=\"gpu_idle\"",    "reason=\"clocks_setting\"", "reason=\"power_cap\"",
    "reason=\"hw_slowdown\"", "reason=\"sync_boost\"",     "reason=\"sw_thermal\"",
    "reason=\"hw_thermal\"",  "reason=\"hw_power_brake\"", "reason=\"display_clocks\""};
static const char *const policy_extra[SIM_VIOL__COUNT] = {
    "policy=\"power\"",       "policy=\"thermal\"",         "policy=\"sync_boost\"",
    "policy=\"board_limit\"", "policy=\"low_utilization\"", "policy=\"reliability\""};

static void fill_gpu(fleet_gpus *g, filler *f, unsigned i, const sim_gpu_state *s, double dt) {
    const sim_model *m = sim_node_config(g->node)->model;
    gpu_ent *e = &g->gpus[i];
    const char *lab = e->labels;
    uint64_t tx, rx;
    nvl_sums(s, &tx, &rx);
    if (dt > 0) {
        e->nvl_tx_bps = (double)(tx - e->nvl_tx) / dt;
        e->nvl_rx_bps = (double)(rx - e->nvl_rx) / dt;
    }
    e->nvl_tx = tx;
    e->nvl_rx = rx;

    if (!s->lost) {
        put(f, F_SM_CLOCK, lab, NULL, round(s->clock_sm));
        put(f, F_MEM_CLOCK, lab, NULL, round(s->clock_mem));
        if (m->has_mem_temp) put(f, F_MEMORY_TEMP, lab, NULL, round(s->temp_mem));
        put(f, F_GPU_TEMP, lab, NULL, round(s->temp_gpu));
        put(f, F_POWER_USAGE, lab, NULL, round(s->power_w * 1000) / 1000);
        put(f, F_ENERGY, lab, NULL, floor(s->energy_mj));
        put(f, F_PCIE_REPLAY, lab, NULL, s->pcie_replay);
        put(f, F_GPU_UTIL, lab, NULL, round(s->util_gpu));
        put(f, F_MEM_COPY_UTIL, lab, NULL, round(s->util_mem));
        put(f, F_ENC_UTIL, lab, NULL, round(s->enc_util));
        put(f, F_DEC_UTIL, lab, NULL, round(s->dec_util));
        uint64_t used = s->mem_used_bytes, resv = s->mem_reserved_bytes, total = s->mem_total_bytes;
        uint64_t free_b = total > used + resv ? total - used - resv : 0;
        put(f, F_FB_FREE, lab, NULL, (double)(free_b >> 20));
        put(f, F_FB_USED, lab, NULL, (double)(used >> 20));
        put(f, F_FB_RESERVED, lab, NULL, (double)(resv >> 20));
        if (m->nvlink_count) put(f, F_NVLINK_BW, lab, NULL, (e->nvl_tx_bps + e->nvl_rx_bps) / 1024 / 1000);
        put(f, F_VGPU_LICENSE, lab, NULL, 0);
        if (m->has_remapping) {
            put(f, F_UNC_REMAPPED, lab, NULL, s->remap_unc);
            put(f, F_COR_REMAPPED, lab, NULL, s->remap_cor);
            put(f, F_REMAP_FAILURE, lab, NULL, s->remap_failure);
        }
        put(f, F_GR_ACTIVE, lab, NULL, s->act[SIM_ACT_GRAPHICS]);
        put(f, F_TENSOR_ACTIVE, lab, NULL, s->act[SIM_ACT_TENSOR]);
        put(f, F_DRAM_ACTIVE, lab, NULL, s->act[SIM_ACT_DRAM]);
        put(f, F_PCIE_TX, lab, NULL, s->pcie_tx_bps);
        put(f, F_PCIE_RX, lab, NULL, s->pcie_rx_bps);
        put(f, F_K_INFO, lab, e->info_extra, 1);
        if (m->has_mem_temp) put(f, F_K_MEM_TEMP, lab, NULL, round(s->temp_mem));
        put(f, F_K_POWER_LIMIT, lab, NULL, m->power_limit_mw / 1000.0);
        put(f, F_K_ENFORCED_LIMIT, lab, NULL, s->power_limit_mw / 1000.0);
        put(f, F_K_CLOCK_MAX, lab, "clock=\"graphics\"", m->sm_clock_max_mhz * 1e6);
        put(f, F_K_CLOCK_MAX, lab, "clock=\"sm\"", m->sm_clock_max_mhz * 1e6);
        put(f, F_K_CLOCK_MAX, lab, "clock=\"mem\"", m->mem_clock_max_mhz * 1e6);
        put(f, F_K_CLOCK_MAX, lab, "clock=\"video\"", m->video_clock_max_mhz * 1e6);
        for (unsigned b = 0; b < 9; b++)
            if (SIM_REASONS_SUPPORTED & (1ull << b))
                put(f, F_K_CLOCK_EVENT, lab, reason_extra[b], (double)((s->reasons >> b) & 1));
        for (unsigned p = 0; p < SIM_VIOL__COUNT; p++)
            put(f, F_K_VIOLATION, lab, policy_extra[p], (double)s->violation_ns[p] / 1e9);
        if (m->has_ecc) {
            put(f, F_K_ECC_VOL, lab, "type=\"corrected\"", (double)s->ecc_sbe_vol);
            put(f, F_K_ECC_VOL, lab, "type=\"uncorrected\"", (double)s->ecc_dbe_vol);
            put(f, F_K_ECC_AGG, lab, "type=\"corrected\"", (double)s->ecc_sbe_agg);
            put(f, F_K_ECC_AGG, lab, "type=\"uncorrected\"", (double)s->ecc_dbe_agg);
        }
        if (m->has_retirement) {
            put(f, F_K_RETIRED, lab, "cause=\"single_bit\"", s->retired_sbe);
            put(f, F_K_RETIRED, lab, "cause=\"double_bit\"", s->retired_dbe);
            put(f, F_K_RETIRED_PENDING, lab, NULL, s->retired_pending);
        }
        if (m->has_remapping) {
            put(f, F_K_REMAPPED, lab, "type=\"correctable\"", s->remap_cor);
            put(f, F_K_REMAPPED, lab, "type=\"uncorrectable\"", s->remap_unc);
            put(f, F_K_REMAP_PENDING, lab, NULL, s->remap_pending);
            put(f, F_K_REMAP_FAILED, lab, NULL, s->remap_failure);
        }
        put(f, F_K_PCIE_REPLAYS, lab, NULL, s->pcie_replay);
        if (m->nvlink_count) {
            static const char *const nvl_extra[4] = {"type=\"crc_flit\"", "type=\"crc_data\"",
                                                     "type=\"replay\"", "type=\"recovery\""};
            static const int nvl_idx[4] = {SIM_NVL_CRC_FLIT, SIM_NVL_CRC_DATA, SIM_NVL_REPLAY,
                                           SIM_NVL_RECOVERY};
            for (int k = 0; k < 4; k++) {
                uint64_t sum = 0;
                for (unsigned l = 0; l < s->nvlink_count && l < SIM_MAX_NVLINKS; l++)
                    sum += s->nvl_err[l][nvl_idx[k]];
                put(f, F_K_NVLINK_ERRORS, lab, nvl_extra[k], (double)sum);
            }
            put(f, F_K_NVLINK_BYTES, lab, "direction=\"tx\"", (double)tx);
            put(f, F_K_NVLINK_BYTES, lab, "direction=\"rx\"", (double)rx);
        }
        if (m->num_fans) put(f, F_K_FAN, lab, "fan=\"0\"", round(s->fan_pct) / 100.0);
        put(f, F_K_ENC_UTIL, lab, NULL, round(s->enc_util) / 100.0);
        put(f, F_K_DEC_UTIL, lab, NULL, round(s->dec_util) / 100.0);
        put(f, F_K_SM_ACTIVE, lab, NULL, s->act[SIM_ACT_SM]);
        put(f, F_K_SM_OCC, lab, NULL, s->act[SIM_ACT_SM_OCC]);
        put(f, F_K_TENSOR, lab, NULL, s->act[SIM_ACT_TENSOR]);
        put(f, F_K_DRAM, lab, NULL, s->act[SIM_ACT_DRAM]);
        put(f, F_K_PIPE, lab, "pipe=\"fp64\"", s->act[SIM_ACT_FP64]);
        put(f, F_K_PIPE, lab, "pipe=\"fp32\"", s->act[SIM_ACT_FP32]);
        put(f, F_K_PIPE, lab, "pipe=\"fp16\"", s->act[SIM_ACT_FP16]);
        put(f, F_K_PCIE_TPUT, lab, "direction=\"tx\"", s->pcie_tx_bps);
        put(f, F_K_PCIE_TPUT, lab, "direction=\"rx\"", s->pcie_rx_bps);
        if (m->nvlink_count) {
            put(f, F_K_NVLINK_TPUT, lab, "direction=\"tx\"", e->nvl_tx_bps);
            put(f, F_K_NVLINK_TPUT, lab, "direction=\"rx\"", e->nvl_rx_bps);
        }
        for (unsigned p = 0; p < s->proc_count && p < SIM_MAX_PROCS; p++) {
            /* a stable pid per (node, GPU, slot), as a job's ranks would have */
            char pid[16];
            unsigned v = 2000u + (unsigned)(fleet__mix(g->seed ^ (i * 131u + s->procs[p].slot)) % 60000u);
            snprintf(pid, sizeof pid, "%u", v);
            char *extra = expo_mset_labels(f->ms, "pid", pid, "command", "python3", NULL);
            if (extra) put(f, F_K_PROC_MEM, lab, extra, (double)s->procs[p].used_bytes);
        }
    }
    put(f, F_K_LOST, lab, NULL, s->lost ? 1 : 0);
    for (size_t k = 0; k < e->nxid; k++) {
        char code[16];
        snprintf(code, sizeof code, "%u", e->xids[k].xid);
        char *extra = expo_mset_labels(f->ms, "xid", code, NULL);
        if (extra) put(f, F_K_XID, lab, extra, (double)e->xids[k].count);
    }
    /* the agent watches NVML events for every GPU: 0 until a first XID */
    char code[16];
    unsigned last = e->have_xid ? e->last_xid : 0;
    snprintf(code, sizeof code, "%u", last);
    char *extra = expo_mset_labels(f->ms, "err_code", code, "err_msg", agent_xid_message(last), NULL);
    if (extra) put(f, F_XID_ERRORS, lab, extra, last);
}

int fleet__gpus_fill(fleet_gpus *g, double t, expo_mset *ms) {
    if (t < g->last_t) t = g->last_t;
    int rc = sim_node_step(g->node, t);
    if (rc != 0) return rc;
    double dt = g->last_t < 0 ? 0 : t - g->last_t;
    g->last_t = t;
    read_events(g);
    filler f = {.ms = ms};
    const agent_metric *up = g->cat[F_NVML_UP];
    expo_family *fup = expo_mset_family(ms, up->name, up->type, up->help, agent_metric_om_unit(up));
    if (fup) expo_mset_add(ms, fup, "", "simulated=\"true\"", NULL, 1);
    for (int k = 0; k < F__COUNT; k++) {
        if (k == F_NVML_UP) continue;
        const agent_metric *am = g->cat[k];
        f.fam[k] = expo_mset_family(ms, am->name, am->type, am->help, agent_metric_om_unit(am));
    }
    for (unsigned i = 0; i < g->count; i++) {
        const sim_gpu_state *s = sim_node_gpu(g->node, i);
        if (s) fill_gpu(g, &f, i, s, dt);
    }
    return ms->err;
}
