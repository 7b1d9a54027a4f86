/* sim.c -- the simulated node: creation, stepping, events, identities.
 *
 * One sub-step of one GPU (gpu_substep), in order:
 *   1. workload: utilisation and activity at the end of the interval, from
 *      the job's timeline (training: steps, an eval every 30 min, a
 *      checkpoint every hour; inference: diurnal load; idle), per MIG
 *      instance when MIG is on, plus counter-based noise;
 *   2. clocks: the SM clock is the highest that keeps power under both the
 *      enforced limit and the thermal controller's cap, P(f) = P_idle +
 *      a * (P_full - P_idle) * (f/f_max)^2.5; hardware slowdown halves it
 *      when the die reaches its slowdown temperature or HBM its maximum;
 *   3. power from that clock (1 s average and noisier instant value);
 *   4. temperatures: die and memory approach inlet + R * P / cooling with
 *      their time constants (exact exponential update: stable for any dt);
 *   5. thermal controller: when a temperature comes within 1.5 C of its
 *      target, the cap moves (time constant 30 s) to the steady-state power
 *      that would hold it at the target; it lags, so a sudden loss of
 *      cooling overshoots into hardware slowdown, as real boards do;
 *   6. counters: energy, violation ns, PCIe/NVLink bytes, activity
 *      integrals; background error trickles; then the scenario's effects.
 *
 * Invariants: gpu_substep never runs for a lost GPU; counters only grow;
 * n->t only grows; events in the ring are in emission order with
 * consecutive seq numbers.
 */
#include <stdio.h>
#include <stdlib.h>

#include "sim/sim_int.h"

#define MIB (1024ULL * 1024ULL)

/* What a GPU (or MIG instance) is doing at one moment. */
typedef struct work {
    double util;      /* percent */
    double intensity; /* power per unit of utilisation, 0..1 */
    double act[SIM_ACT__COUNT];
    double mem_frac;         /* fraction of usable memory the job holds */
    double pcie_rx, pcie_tx; /* bytes/s */
    double nvl_frac;         /* fraction of NVLink bandwidth per direction */
} work;

static void activity_from(work *w, double tensor, double dram, double fp16, double fp32, double fp64,
                          double occ) {
    double sm = sim__clamp(w->util / 100.0 * 0.93, 0, 1);
    w->act[SIM_ACT_GRAPHICS] = sim__clamp(w->util / 100.0, 0, 1);
    w->act[SIM_ACT_SM] = sm;
    w->act[SIM_ACT_SM_OCC] = sm * occ;
    w->act[SIM_ACT_TENSOR] = sm * tensor;
    w->act[SIM_ACT_DRAM] = sm * dram;
    w->act[SIM_ACT_FP16] = sm * fp16;
    w->act[SIM_ACT_FP32] = sm * fp32;
    w->act[SIM_ACT_FP64] = sm * fp64;
    w->act[SIM_ACT_INT] = sm * 0.08;
}

/* The workload of job `job` (a GPU or a MIG instance) at model time t. */
static work workload_at(const sim_node *n, uint64_t job, double phase, double t) {
    const sim_config *c = &n->cfg;
    const sim_model *m = c->model;
    work w;
    memset(&w, 0, sizeof w);
    double pcie_scale = m->pcie_gen >= 5 ? 1.0 : 0.5;
    double un = sim__smooth_noise(c->seed, job, SIM__CH_UTIL, t);
    switch (c->workload) {
    case SIM_WORKLOAD_TRAINING: {
        double tt = t + phase;
        double in_eval = fmod(tt, 1800.0), in_ckpt = fmod(tt, 3600.0);
        if (in_ckpt >= 1700.0 && in_ckpt < 1790.0) { /* checkpoint: GPUs wait on storage */
            w.util = 4.0 + 2.0 * un;
            w.intensity = 0.3;
            activity_from(&w, 0.05, 0.2, 0.02, 0.05, 0.0, 0.1);
            w.pcie_tx = 12e9 * pcie_scale * (1.0 + 0.1 * un);
            w.pcie_rx = 0.1e9;
            w.nvl_frac = 0.01;
        } else if (in_eval < 120.0) { /* evaluation: forward passes only */
            w.util = 45.0 + 10.0 * un;
            w.intensity = 0.6;
            activity_from(&w, 0.35, 0.45, 0.25, 0.10, 0.001, 0.35);
            w.pcie_rx = 2.0e9 * pcie_scale * (1.0 + 0.2 * un);
            w.pcie_tx = 0.1e9;
            w.nvl_frac = 0.05;
        } else {
            w.util = 97.0 + 2.5 * un;
            w.intensity = 0.88;
            activity_from(&w, 0.62, 0.55, 0.35, 0.12, 0.002, 0.45);
            w.pcie_rx = 1.2e9 * pcie_scale * (1.0 + 0.3 * un);
            w.pcie_tx = 0.3e9 * pcie_scale;
            w.nvl_frac = 0.55 * (1.0 + 0.05 * un);
        }
        w.mem_frac = 0.86 + 0.004 * sim__smooth_noise(c->seed, job, SIM__CH_MEM, t / 60.0);
        break;
    }
    case SIM_WORKLOAD_INFERENCE: {
        double load = 0.45 + 0.35 * sin(2.0 * M_PI * (t + phase) / 86400.0) +
                      0.12 * sim__smooth_noise(c->seed, job, SIM__CH_INFER, t / 20.0);
        load = sim__clamp(load, 0.02, 1.0);
        w.util = sim__clamp(100.0 * load * (0.9 + 0.1 * un), 0, 100);
        w.intensity = 0.7;
        activity_from(&w, 0.4, 0.6, 0.3, 0.15, 0.001, 0.3);
        if (m->decoders && m->encoders) {
            w.act[SIM_ACT_DEC] = sim__clamp(0.40 * load * (1.0 + 0.1 * un), 0, 1);
            w.act[SIM_ACT_ENC] = sim__clamp(0.12 * load, 0, 1);
        }
        w.pcie_rx = 0.8e9 * load * pcie_scale;
        w.pcie_tx = 0.4e9 * load * pcie_scale;
        w.nvl_frac = 0.02 * load;
        w.mem_frac = 0.62 + 0.01 * sim__smooth_noise(c->seed, job, SIM__CH_MEM, t / 60.0);
        break;
    }
    default:
        w.pcie_rx = 1e5;
        w.pcie_tx = 1e5;
        break;
    }
    w.util = sim__clamp(w.util, 0, 100);
    for (int i = 0; i < SIM_ACT__COUNT; i++) w.act[i] = sim__clamp(w.act[i], 0, 1);
    return w;
}

static double job_phase(const sim_node *n, unsigned g, int mig) {
    if (mig < 0) return n->phase_s; /* data-parallel job: all GPUs in step */
    return 3600.0 * sim__unit(sim__hash(n->cfg.seed, g, SIM__CH_PHASE, (uint64_t)mig + 1));
}

/* Highest clock whose power stays under cap, for dynamic power dyn at f_max. */
static double clock_for_cap(const sim_model *m, double cap, double idle_w, double dyn) {
    double fmax = m->sm_clock_max_mhz;
    if (dyn <= 0 || idle_w + dyn <= cap) return fmax;
    double r = (cap - idle_w) / dyn;
    if (r <= 0) return m->sm_clock_min_mhz;
    return sim__clamp(fmax * pow(r, 0.4), m->sm_clock_min_mhz, fmax);
}

/* Rebuilds the process list from the workload, MIG layout and leak. */
static void build_processes(sim_node *n, unsigned g, double t, const work *w_gpu, const work *w_mig) {
    sim_gpu_state *s = &n->gpu[g];
    const sim_config *c = &n->cfg;
    s->proc_count = 0;
    if (c->workload == SIM_WORKLOAD_IDLE) {
        s->mem_used_bytes = 0;
        for (unsigned k = 0; k < s->mig_count; k++) s->mig[k].mem_used_bytes = 0;
        return;
    }
    double started = 0;
    uint64_t leak = sim__leak_bytes(n, g, t, &started);
    bool leaking = c->scenario == SIM_SCENARIO_MEMORY_LEAK && g == c->fault_gpu && t >= c->onset_s;
    bool dead = leaking && leak == UINT64_MAX;
    if (s->mig_enabled) {
        uint64_t total = 0;
        for (unsigned k = 0; k < s->mig_count; k++) {
            sim_mig_state *mi = &s->mig[k];
            double frac = leaking && k == 0 ? 0.55 : w_mig[k].mem_frac;
            uint64_t used = (uint64_t)((double)mi->mem_total_bytes * frac);
            if (leaking && k == 0) used = dead ? 0 : used + leak;
            if (used > mi->mem_total_bytes) used = mi->mem_total_bytes;
            mi->mem_used_bytes = used;
            total += used;
            if (used && s->proc_count < SIM_MAX_PROCS) {
                sim_process *p = &s->procs[s->proc_count++];
                p->slot = g * SIM_MAX_PROCS + k;
                p->mig = (int)k;
                p->used_bytes = used;
                p->sm_util = mi->util;
                p->mem_util = mi->act[SIM_ACT_DRAM] * 85.0;
                p->enc_util = mi->act[SIM_ACT_ENC] * 100.0;
                p->dec_util = mi->act[SIM_ACT_DEC] * 100.0;
                p->started_at = leaking && k == 0 ? started : -3600.0 * (1 + k);
            }
        }
        s->mem_used_bytes = total;
        return;
    }
    uint64_t usable = s->mem_total_bytes - s->mem_reserved_bytes;
    double frac = leaking ? 0.55 : w_gpu->mem_frac;
    uint64_t used = (uint64_t)((double)usable * frac);
    if (leaking) used = dead ? 0 : used + leak;
    if (used > usable) used = usable;
    s->mem_used_bytes = used;
    if (used) {
        sim_process *p = &s->procs[s->proc_count++];
        p->slot = g * SIM_MAX_PROCS;
        p->mig = -1;
        p->used_bytes = used;
        p->sm_util = s->util_gpu;
        p->mem_util = s->util_mem;
        p->enc_util = s->enc_util;
        p->dec_util = s->dec_util;
        p->started_at = leaking ? started : -7200.0;
    }
}

/* Background error trickles every GPU has: closed-form counts of model
 * time, applied as deltas so counters stay monotonic. */
static void background_errors(sim_node *n, unsigned g, double t1) {
    sim_gpu_state *s = &n->gpu[g];
    const sim_config *c = &n->cfg;
    uint64_t h = sim__hash(c->seed, g, SIM__CH_REPLAY, 0);
    if (sim__unit(h) < 0.25) { /* a quarter of boards see rare PCIe replays */
        double period = 3000.0 + 20000.0 * sim__unit(sim__mix(h));
        unsigned want = (unsigned)(t1 / period);
        if (want > s->bg_replay_) {
            s->pcie_replay += want - s->bg_replay_;
            s->bg_replay_ = want;
        }
    }
    if (s->nvlink_count) {
        uint64_t hn = sim__hash(c->seed, g, SIM__CH_NVL_ERR, 0);
        if (sim__unit(hn) < 0.3) { /* and some links see CRC flit errors */
            double period = 600.0 + 6000.0 * sim__unit(sim__mix(hn));
            unsigned link = (unsigned)(sim__mix(hn ^ 7) % s->nvlink_count);
            uint64_t want = (uint64_t)(t1 / period);
            if (want > s->bg_nvl_) {
                s->nvl_err[link][SIM_NVL_CRC_FLIT] += want - s->bg_nvl_;
                s->bg_nvl_ = want;
            }
        }
    }
}

/* One integration step of GPU g over (t0, t1]. With accumulate false it
 * only moves the continuous state (used to settle the initial state). */
static void gpu_substep(sim_node *n, unsigned g, double t0, double t1, bool accumulate) {
    sim_gpu_state *s = &n->gpu[g];
    const sim_config *c = &n->cfg;
    const sim_model *m = c->model;
    double dt = t1 - t0;
    if (s->lost || dt < 0) return;

    /* 1. workload */
    work w, wm[SIM_MAX_MIG];
    if (s->mig_enabled) {
        memset(&w, 0, sizeof w);
        double wsum = 0;
        for (unsigned k = 0; k < s->mig_count; k++) {
            sim_mig_state *mi = &s->mig[k];
            wm[k] = workload_at(n, (uint64_t)g * 16 + 1 + k, job_phase(n, g, (int)k), t1);
            double wt = mi->profile->slices / 7.0;
            mi->util = wm[k].util;
            for (int a = 0; a < SIM_ACT__COUNT; a++) {
                mi->act[a] = wm[k].act[a];
                w.act[a] += wt * wm[k].act[a];
            }
            w.util += wt * wm[k].util;
            w.intensity += wt * wm[k].intensity * wm[k].util;
            w.pcie_rx += wm[k].pcie_rx * wt;
            w.pcie_tx += wm[k].pcie_tx * wt;
            wsum += wt;
        }
        w.intensity = w.util > 0 ? w.intensity / w.util : 0;
        w.nvl_frac = 0.01 * wsum;
        w.pcie_rx += 1e5;
        w.pcie_tx += 1e5;
    } else {
        w = workload_at(n, (uint64_t)g * 16, job_phase(n, g, -1), t1);
    }
    s->util_gpu = w.util;
    for (int a = 0; a < SIM_ACT__COUNT; a++) s->act[a] = w.act[a];
    s->util_mem = sim__clamp(w.act[SIM_ACT_DRAM] * 85.0, 0, 100);
    s->enc_util = w.act[SIM_ACT_ENC] * 100.0;
    s->dec_util = w.act[SIM_ACT_DEC] * 100.0;

    /* 2. clocks */
    sim__env env = sim__scenario_env(n, g, t1);
    double limit = s->power_limit_mw / 1000.0;
    double idle_w = m->power_idle_w * n->p_scale[g];
    double a =
        w.util / 100.0 * w.intensity * (1.0 + 0.04 * sim__smooth_noise(c->seed, g, SIM__CH_POWER, t1 / 3.0));
    double dyn = a * (m->power_full_w - m->power_idle_w) * n->p_scale[g];
    bool idle = w.util < 3.0;
    uint64_t reasons = 0;
    double f, fmax = m->sm_clock_max_mhz;
    if (idle) {
        f = m->sm_clock_idle_mhz;
        reasons |= SIM_REASON_GPU_IDLE;
    } else {
        double f_pow = clock_for_cap(m, limit, idle_w, dyn);
        double f_th = clock_for_cap(m, s->therm_cap_w_, idle_w, dyn);
        f = f_pow < f_th ? f_pow : f_th;
        if (f_pow < fmax - 0.5 && f_pow <= f_th) reasons |= SIM_REASON_SW_POWER_CAP;
        if (f_th < fmax - 0.5 && f_th < f_pow) reasons |= SIM_REASON_SW_THERMAL;
    }
    bool hw = s->temp_gpu >= m->temp_slowdown_c || (m->has_mem_temp && s->temp_mem >= m->temp_mem_max_c);
    if (hw) {
        f = f * 0.5 < m->sm_clock_min_mhz ? m->sm_clock_min_mhz : f * 0.5;
        reasons |= SIM_REASON_HW_THERMAL | SIM_REASON_HW_SLOWDOWN;
    }
    s->clock_sm = floor(f / 15.0 + 0.5) * 15.0; /* boards step in 15 MHz bins */
    if (s->clock_sm > fmax) s->clock_sm = fmax;
    s->clock_mem = idle ? m->mem_clock_idle_mhz : m->mem_clock_max_mhz;
    s->clock_video = floor(m->video_clock_max_mhz * (f / fmax));
    s->reasons = reasons;

    /* 3. power */
    double p = idle_w + dyn * pow(f / fmax, 2.5);
    double p_avg = p * (1.0 + 0.006 * sim__smooth_noise(c->seed, g, SIM__CH_POWER + 100, t1));
    double p_inst = p * (1.0 + 0.03 * sim__noise(c->seed, g, SIM__CH_POWER + 200, (uint64_t)(t1 * 10.0)));
    if (p_avg > limit * 1.002) p_avg = limit * 1.002;
    s->power_w = p_avg;
    s->power_inst_w = p_inst;

    /* 4. temperatures */
    double inlet_target = n->inlet_base[g] + env.inlet_add;
    s->temp_inlet = sim__lag(s->temp_inlet, inlet_target, dt, 120.0);
    s->cooling = env.cooling;
    double dram = w.act[SIM_ACT_DRAM];
    double r_die = m->r_die * n->r_scale[g], r_mem = m->r_mem * n->r_scale[g] * (0.85 + 0.3 * dram);
    double die_ss = s->temp_inlet + r_die * p_avg / env.cooling;
    double mem_ss = s->temp_inlet + r_mem * p_avg / env.cooling;
    s->temp_gpu = sim__lag(s->temp_gpu, die_ss, dt, m->tau_die_s);
    s->temp_mem = sim__lag(s->temp_mem, mem_ss, dt, m->tau_mem_s);
    if (m->num_fans) {
        double want = sim__clamp(30.0 + (s->temp_gpu - 45.0) * 2.2, 30.0, 100.0);
        if (c->scenario == SIM_SCENARIO_COOLING_FAILURE && g == c->fault_gpu) want *= env.cooling;
        s->fan_pct = sim__lag(s->fan_pct, want, dt, 8.0);
    }

    /* 5. thermal controller */
    double die_target = m->temp_max_op_c, mem_target = m->temp_mem_max_c - 2.0;
    bool engaged = s->temp_gpu >= die_target - 1.5 || (m->has_mem_temp && s->temp_mem >= mem_target - 1.5);
    double cap_target = limit * 1.25;
    if (engaged) {
        cap_target = (die_target - s->temp_inlet) * env.cooling / r_die;
        if (m->has_mem_temp) {
            double pm = (mem_target - s->temp_inlet) * env.cooling / r_mem;
            if (pm < cap_target) cap_target = pm;
        }
        double floor_w = idle_w + 0.05 * (m->power_full_w - m->power_idle_w);
        if (cap_target < floor_w) cap_target = floor_w;
    }
    s->therm_cap_w_ = sim__lag(s->therm_cap_w_, cap_target, dt, 30.0);

    /* memory and processes */
    build_processes(n, g, t1, &w, wm);

    if (!accumulate) return;

    /* 6. counters */
    uint64_t dns = (uint64_t)(dt * 1e9);
    s->energy_mj += p_avg * dt * 1000.0;
    if (reasons & SIM_REASON_SW_POWER_CAP) s->violation_ns[SIM_VIOL_POWER] += dns;
    if (reasons & (SIM_REASON_SW_THERMAL | SIM_REASON_HW_THERMAL)) s->violation_ns[SIM_VIOL_THERMAL] += dns;
    if (reasons & SIM_REASON_GPU_IDLE) s->violation_ns[SIM_VIOL_LOW_UTIL] += dns;
    if (reasons & SIM_REASON_SW_THERMAL) s->sw_thermal_ns += dns;
    if (reasons & SIM_REASON_HW_THERMAL) s->hw_thermal_ns += dns;
    s->pcie_rx_bps = w.pcie_rx;
    s->pcie_tx_bps = w.pcie_tx;
    s->pcie_rx_bytes += (uint64_t)(w.pcie_rx * dt);
    s->pcie_tx_bytes += (uint64_t)(w.pcie_tx * dt);
    for (unsigned l = 0; l < s->nvlink_count; l++) {
        double v = 1.0 + 0.03 * sim__noise(c->seed, g, SIM__CH_NVL, l);
        double bps = w.nvl_frac * m->nvlink_link_gbps * 1e9 * v * (f / fmax);
        s->nvl_tx_bytes[l] += (uint64_t)(bps * dt);
        s->nvl_rx_bytes[l] += (uint64_t)(bps * dt * 0.998);
    }
    for (int i = 0; i < SIM_ACT__COUNT; i++) s->act_int[i] += s->act[i] * dt;
    for (unsigned k = 0; k < s->mig_count; k++)
        for (int i = 0; i < SIM_ACT__COUNT; i++) s->mig[k].act_int[i] += s->mig[k].act[i] * dt;
    background_errors(n, g, t1);
    sim__scenario_apply(n, g, t0, t1);
}

/* ------------------------------------------------------------------------ */

static void err_set(char *err, size_t errlen, const char *msg) {
    if (err && errlen) snprintf(err, errlen, "%s", msg);
}

static const unsigned hgx_bus[SIM_MAX_GPUS] = {0x1B, 0x43, 0x52, 0x61, 0x9D, 0xC3, 0xD1, 0xDF,
                                               0x0A, 0x2A, 0x3A, 0x4A, 0x8A, 0xAA, 0xBA, 0xCA};

int sim_node_new(const sim_config *cfg, sim_node **ret, char *err, size_t errlen) {
    if (!cfg || !ret || !cfg->model) {
        err_set(err, errlen, "no GPU model set");
        return BASE_E_INVAL;
    }
    if (cfg->gpu_count > SIM_MAX_GPUS) {
        err_set(err, errlen, "too many GPUs (at most 16)");
        return BASE_E_INVAL;
    }
    if (cfg->gpu_count && cfg->fault_gpu >= cfg->gpu_count) {
        err_set(err, errlen, "fault GPU index out of range");
        return BASE_E_INVAL;
    }
    if ((unsigned)cfg->scenario >= SIM_SCENARIO__COUNT || (unsigned)cfg->workload >= SIM_WORKLOAD__COUNT ||
        !isfinite(cfg->onset_s) || !isfinite(cfg->lost_after_s) || cfg->onset_s < 0 ||
        cfg->lost_after_s < 0) {
        err_set(err, errlen, "bad scenario, workload or times");
        return BASE_E_INVAL;
    }
    if (!sim__timeline_ok(cfg)) {
        err_set(err, errlen, "bad scenario timeline parameters");
        return BASE_E_INVAL;
    }
    const sim_model *m = cfg->model;
    for (unsigned g = 0; g < cfg->gpu_count; g++) {
        const sim_mig_layout *l = &cfg->mig[g];
        if (!l->enabled) continue;
        unsigned start[SIM_MAX_MIG];
        bool bad = m->mig_profile_count == 0 || l->count > SIM_MAX_MIG;
        for (unsigned k = 0; !bad && k < l->count; k++) bad = l->profile[k] >= m->mig_profile_count;
        if (bad || sim__mig_place(m, l, start) != 0) {
            err_set(err, errlen, "MIG layout does not fit this GPU model");
            return BASE_E_INVAL;
        }
    }
    sim_node *n = calloc(1, sizeof *n);
    if (!n) {
        err_set(err, errlen, "out of memory");
        return BASE_E_NOMEM;
    }
    n->cfg = *cfg;
    n->cfg.driver_version[sizeof n->cfg.driver_version - 1] = 0;
    uint64_t seed = cfg->seed;
    n->phase_s = 3600.0 * sim__unit(sim__hash(seed, 0xFFFF, SIM__CH_PHASE, 0));
    for (unsigned g = 0; g < cfg->gpu_count; g++) {
        sim_gpu_state *s = &n->gpu[g];
        n->r_scale[g] = 1.0 + 0.05 * sim__noise(seed, g, SIM__CH_VARIATION, 1);
        n->p_scale[g] = 1.0 + 0.03 * sim__noise(seed, g, SIM__CH_VARIATION, 2);
        n->inlet_base[g] = 23.0 + 1.2 * (double)(g % 4) + 0.8 * sim__noise(seed, g, SIM__CH_INLET, 0);
        s->index = g;
        s->mem_total_bytes = m->mem_total_bytes;
        s->mem_reserved_bytes = m->mem_reserved_bytes;
        s->power_limit_mw = m->power_limit_mw;
        s->nvlink_count = m->nvlink_count;
        s->temp_inlet = n->inlet_base[g];
        s->temp_gpu = s->temp_mem = s->temp_inlet;
        s->cooling = 1.0;
        s->fan_pct = m->num_fans ? 30.0 : 0.0;
        s->therm_cap_w_ = m->power_limit_mw / 1000.0 * 1.25;
        if (m->has_ecc) { /* errors from earlier boots, on a few boards */
            uint64_t h = sim__hash(seed, g, SIM__CH_ECC_HIST, 0);
            if (sim__unit(h) < 0.3) s->ecc_sbe_agg = 1 + sim__mix(h) % 40;
        }
        const sim_mig_layout *l = &cfg->mig[g];
        if (l->enabled) {
            unsigned start[SIM_MAX_MIG];
            sim__mig_place(m, l, start);
            s->mig_enabled = true;
            s->mig_count = l->count;
            for (unsigned k = 0; k < l->count; k++) {
                sim_mig_state *mi = &s->mig[k];
                mi->profile = &m->mig_profiles[l->profile[k]];
                mi->start = start[k];
                mi->gi_id = sim__mig_gi_id(mi->profile->slices, start[k]);
                mi->ci_id = 0;
                mi->mem_total_bytes = (uint64_t)mi->profile->mem_mib * MIB;
            }
        }
        /* settle: temperatures and the thermal controller reach the steady
         * state of the t=0 workload before anyone looks */
        for (int i = 0; i < 8; i++) gpu_substep(n, g, -300.0, 0.0, false);
        if (cfg->scenario == SIM_SCENARIO_FELL_OFF_BUS && g == cfg->fault_gpu && cfg->lost_after_s <= 0)
            sim__scenario_apply(n, g, -1.0, 0.0);
    }
    *ret = n;
    return 0;
}

void sim_node_free(sim_node *n) {
    free(n);
}

int sim_node_step(sim_node *n, double t) {
    if (!n || !isfinite(t)) return BASE_E_INVAL;
    double sub = n->cfg.max_substep_s > 0 ? n->cfg.max_substep_s : SIM_SUBSTEP_S;
    while (n->t < t) {
        double t0 = n->t, t1 = t - t0 > sub ? t0 + sub : t;
        for (unsigned g = 0; g < n->cfg.gpu_count; g++) {
            const sim_config *c = &n->cfg;
            if (c->scenario == SIM_SCENARIO_FELL_OFF_BUS && g == c->fault_gpu && t0 < c->lost_after_s &&
                c->lost_after_s <= t1) {
                /* integrate up to the loss, then freeze */
                gpu_substep(n, g, t0, c->lost_after_s, true);
                continue;
            }
            gpu_substep(n, g, t0, t1, true);
        }
        n->t = t1;
    }
    return 0;
}

double sim_node_time(const sim_node *n) {
    return n->t;
}
const sim_config *sim_node_config(const sim_node *n) {
    return &n->cfg;
}
unsigned sim_node_gpu_count(const sim_node *n) {
    return n->cfg.gpu_count;
}

const sim_gpu_state *sim_node_gpu(const sim_node *n, unsigned i) {
    return n && i < n->cfg.gpu_count ? &n->gpu[i] : NULL;
}

/* ------------------------------------------------------------------------ */
/* Events                                                                    */

void sim__emit_xid(sim_node *n, unsigned g, double t, unsigned xid, unsigned gi, unsigned ci) {
    sim_xid_event *e = &n->ring[n->next_seq % SIM_EVENT_RING];
    e->seq = n->next_seq++;
    e->t = t;
    e->gpu = g;
    e->xid = xid;
    e->gi_id = gi;
    e->ci_id = ci;
    n->gpu[g].last_xid = xid;
    n->gpu[g].xid_count++;
}

uint64_t sim_node_event_next(const sim_node *n) {
    return n->next_seq;
}

size_t sim_node_events(const sim_node *n, uint64_t *cursor, sim_xid_event *out, size_t max,
                       uint64_t *ret_dropped) {
    uint64_t oldest = n->next_seq > SIM_EVENT_RING ? n->next_seq - SIM_EVENT_RING : 0;
    uint64_t cur = *cursor, dropped = 0;
    if (cur < oldest) {
        dropped = oldest - cur;
        cur = oldest;
    }
    if (cur > n->next_seq) cur = n->next_seq;
    size_t k = 0;
    while (k < max && cur < n->next_seq) out[k++] = n->ring[cur++ % SIM_EVENT_RING];
    *cursor = cur;
    if (ret_dropped) *ret_dropped = dropped;
    return k;
}

/* ------------------------------------------------------------------------ */
/* Identity                                                                  */

static int put(char *buf, size_t len, int w) {
    if (w < 0 || (size_t)w >= len) {
        if (len) buf[0] = 0;
        return BASE_E_RANGE;
    }
    return w;
}

static int fmt_uuid(char *buf, size_t len, const char *prefix, uint64_t h1, uint64_t h2) {
    if (!buf) return BASE_E_INVAL;
    return put(buf, len,
               snprintf(buf, len, "%s-5151%04x-%04x-4%03x-%04x-%012llx", prefix, (unsigned)(h1 & 0xFFFF),
                        (unsigned)((h1 >> 16) & 0xFFFF), (unsigned)((h1 >> 32) & 0xFFF),
                        (unsigned)(0x8000 | ((h1 >> 44) & 0x3FFF)),
                        (unsigned long long)(h2 & 0xFFFFFFFFFFFFULL)));
}

int sim_gpu_uuid(const sim_node *n, unsigned gpu, char *buf, size_t len) {
    if (!n || gpu >= n->cfg.gpu_count) return BASE_E_INVAL;
    return fmt_uuid(buf, len, "GPU", sim__hash(n->cfg.seed, gpu, SIM__CH_UUID, 1),
                    sim__hash(n->cfg.seed, gpu, SIM__CH_UUID, 2));
}

int sim_mig_uuid(const sim_node *n, unsigned gpu, unsigned mig, char *buf, size_t len) {
    if (!n || gpu >= n->cfg.gpu_count || mig >= n->gpu[gpu].mig_count) return BASE_E_INVAL;
    unsigned gi = n->gpu[gpu].mig[mig].gi_id;
    return fmt_uuid(buf, len, "MIG", sim__hash(n->cfg.seed, gpu, SIM__CH_MIG_UUID, 2 * gi + 1),
                    sim__hash(n->cfg.seed, gpu, SIM__CH_MIG_UUID, 2 * gi + 2));
}

int sim_gpu_serial(const sim_node *n, unsigned gpu, char *buf, size_t len) {
    if (!n || gpu >= n->cfg.gpu_count || !buf) return BASE_E_INVAL;
    unsigned long long node = sim__hash(n->cfg.seed, 0, SIM__CH_SERIAL, 0) % 100000000ULL;
    return put(buf, len, snprintf(buf, len, "SIM%08llu%02u", node, gpu));
}

int sim_gpu_pci(const sim_node *n, unsigned gpu, unsigned *ret_domain, unsigned *ret_bus,
                unsigned *ret_device) {
    if (!n || gpu >= n->cfg.gpu_count) return BASE_E_INVAL;
    if (ret_domain) *ret_domain = 0;
    if (ret_bus) *ret_bus = hgx_bus[gpu];
    if (ret_device) *ret_device = 0;
    return 0;
}
