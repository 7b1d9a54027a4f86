/* scenario.c -- what each failure scenario does to the faulty GPU.
 *
 * Two hooks, called by sim.c for every sub-step:
 *   sim__scenario_env()   continuous modifiers (cooling capacity, inlet);
 *   sim__scenario_apply() discrete effects over (t0, t1]: ECC counts, XID
 *                          events, bus errors, the loss of the GPU.
 * plus sim__leak_bytes() for the memory-leak scenario.
 *
 * Every effect is a closed-form function of model time (counts are
 * floor(integral of a rate), XID bursts come from a hash of the burst
 * number), applied as the difference between t1 and what was already
 * applied, so the outcome does not depend on step sizes and counters never
 * decrease. Timelines are described in sim.h; their lengths come from the
 * config (sim_config's timeline parameters), checked by sim__timeline_ok().
 */
#include <stdlib.h>

#include "sim/sim_int.h"

#define LEAK_FILL_S    1800.0 /* with leak_rate_bps 0 */
#define LEAK_RESTART_S 60.0
#define LEAK_BASE      0.55
#define STORM_PERIOD_S 240.0
#define STORM_SPAN_S   10.0
#define ECC_PER_REMAP  500
#define ECC_PER_RETIRE 2000
#define REPLAY_RAMP_S  120.0
#define REPLAY_RATE    2.0

static bool is_fault(const sim_node *n, unsigned g, sim_scenario s) {
    return n->cfg.scenario == s && g == n->cfg.fault_gpu;
}

sim__env sim__scenario_env(const sim_node *n, unsigned g, double t) {
    sim__env e = {1.0, 0.0};
    if (n->cfg.scenario != SIM_SCENARIO_COOLING_FAILURE) return e;
    double x = t - n->cfg.onset_s;
    if (x <= 0) return e;
    const sim_config *c = &n->cfg;
    double r = x / c->cool_ramp_s < 1.0 ? x / c->cool_ramp_s : 1.0;
    if (g == c->fault_gpu) {
        e.cooling = 1.0 - (1.0 - c->cool_ramp_to) * r;
        if (c->cool_fan_after_s >= 0 && x >= c->cool_fan_after_s && c->cool_fan_to < e.cooling)
            e.cooling = c->cool_fan_to;
        e.inlet_add = 12.0 * r;
    } else {
        e.inlet_add = 3.0 * r; /* the rest of the chassis warms a little */
    }
    return e;
}

bool sim__timeline_ok(const sim_config *c) {
    double v[] = {c->cool_ramp_s, c->cool_ramp_to,   c->cool_fan_after_s, c->cool_fan_to,  c->leak_rate_bps,
                  c->ecc_rate0,   c->ecc_doubling_s, c->ecc_dbe_after_s,  c->max_substep_s};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
        if (!isfinite(v[i])) return false;
    return c->cool_ramp_s > 0 && c->cool_ramp_to > 0 && c->cool_ramp_to <= 1 && c->cool_fan_to > 0 &&
           c->cool_fan_to <= 1 && c->leak_rate_bps >= 0 && c->ecc_rate0 >= 0 && c->ecc_doubling_s > 0 &&
           c->ecc_dbe_after_s >= 0 && c->max_substep_s >= 0 && c->max_substep_s <= 60;
}

/* ------------------------------------------------------------------------ */
/* memory-leak                                                               */

/* The memory the leaking process may use on GPU g (a MIG instance's when
 * MIG is on): 0 when there is none to leak into. */
static uint64_t leak_limit(const sim_config *c, unsigned g) {
    const sim_mig_layout *l = &c->mig[g];
    if (l->enabled) {
        if (l->count == 0 || l->profile[0] >= c->model->mig_profile_count) return 0;
        return (uint64_t)c->model->mig_profiles[l->profile[0]].mem_mib * 1024ULL * 1024ULL;
    }
    return c->model->mem_total_bytes - c->model->mem_reserved_bytes;
}

/* Seconds one incarnation of the leaking process takes to fill the
 * headroom, and its rate in bytes per second. */
static double leak_fill_s(const sim_config *c, uint64_t limit, double *ret_rate) {
    double head = (double)limit * (1.0 - LEAK_BASE);
    if (c->leak_rate_bps <= 0) {
        *ret_rate = head / LEAK_FILL_S;
        return LEAK_FILL_S;
    }
    *ret_rate = c->leak_rate_bps;
    return head / c->leak_rate_bps;
}

uint64_t sim__leak_bytes(const sim_node *n, unsigned g, double t, double *ret_started) {
    if (!is_fault(n, g, SIM_SCENARIO_MEMORY_LEAK) || t < n->cfg.onset_s) return 0;
    const sim_gpu_state *s = &n->gpu[g];
    uint64_t limit;
    if (s->mig_enabled) {
        if (s->mig_count == 0) return 0;
        limit = s->mig[0].mem_total_bytes;
    } else {
        limit = s->mem_total_bytes - s->mem_reserved_bytes;
    }
    double rate, fill = leak_fill_s(&n->cfg, limit, &rate);
    double x = t - n->cfg.onset_s;
    double ph = fmod(x, fill + LEAK_RESTART_S);
    if (ret_started) *ret_started = t - (ph < fill ? ph : ph - fill - LEAK_RESTART_S);
    if (ph >= fill) return UINT64_MAX; /* OOM-killed, restarting */
    uint64_t bytes = (uint64_t)(rate * ph);
    return bytes & ~((2ULL << 20) - 1); /* allocations come in 2 MiB pages */
}

/* ------------------------------------------------------------------------ */
/* ecc-degradation                                                           */

/* Expected correctable errors x seconds after onset: the integral of a rate
 * that starts at ecc_rate0 and doubles every ecc_doubling_s. */
static double ecc_sbe_integral(const sim_config *c, double x) {
    if (x <= 0) return 0;
    double d = c->ecc_doubling_s;
    if (x > 40 * d) x = 40 * d; /* keep it finite */
    return c->ecc_rate0 * d / M_LN2 * (exp2(x / d) - 1.0);
}

static void apply_ecc(sim_node *n, unsigned g, double t0, double t1) {
    sim_gpu_state *s = &n->gpu[g];
    const sim_model *m = n->cfg.model;
    if (!m->has_ecc) return;
    double onset = n->cfg.onset_s;
    uint64_t want = (uint64_t)ecc_sbe_integral(&n->cfg, t1 - onset);
    if (want > s->ecc_sbe_model_) {
        uint64_t d = want - s->ecc_sbe_model_;
        s->ecc_sbe_vol += d;
        s->ecc_sbe_agg += d;
        s->ecc_sbe_model_ = want;
        if (m->has_remapping) {
            uint64_t rows = want / ECC_PER_REMAP;
            if (rows > 64) rows = 64;
            if (rows > s->remap_cor) s->remap_cor = (unsigned)rows;
        }
        if (m->has_retirement) {
            uint64_t pages = want / ECC_PER_RETIRE;
            if (pages > 32) pages = 32;
            if (pages > s->retired_sbe) s->retired_sbe = (unsigned)pages;
        }
    }
    double tdbe = onset + n->cfg.ecc_dbe_after_s;
    if (!s->dbe_done_ && t0 < tdbe && tdbe <= t1) {
        s->dbe_done_ = true;
        s->ecc_dbe_vol++;
        s->ecc_dbe_agg++;
        if (m->has_remapping) {
            s->remap_unc++;
            s->remap_pending = true;
        }
        if (m->has_retirement) {
            s->retired_dbe++;
            s->retired_pending = true;
        }
        sim__emit_xid(n, g, tdbe, 48, 0xFFFFFFFFu, 0xFFFFFFFFu);
        sim__emit_xid(n, g, tdbe, 63, 0xFFFFFFFFu, 0xFFFFFFFFu);
    }
}

/* ------------------------------------------------------------------------ */
/* xid-storm                                                                 */

static unsigned storm_code(uint64_t h) {
    static const struct {
        unsigned xid, weight;
    } w[] = {{13, 30}, {31, 25}, {43, 20}, {74, 10}, {48, 5}, {63, 4}, {64, 3}, {79, 3}};
    unsigned r = (unsigned)(h % 100);
    for (size_t i = 0; i < sizeof w / sizeof w[0]; i++) {
        if (r < w[i].weight) return w[i].xid;
        r -= w[i].weight;
    }
    return 13;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Events of burst b of GPU g, which starts at model time tb: their count
 * and, in at[], their times, sorted. */
static unsigned storm_burst(uint64_t seed, unsigned g, int64_t b, double tb, double at[20]) {
    uint64_t hb = sim__hash(seed, g, SIM__CH_XID_BURST, (uint64_t)b);
    unsigned count = 5 + (unsigned)(hb % 16);
    for (unsigned i = 0; i < count; i++)
        at[i] =
            tb + 0.05 + 9.9 * sim__unit(sim__hash(seed, g, SIM__CH_XID_BURST, ((uint64_t)b << 8) | (i + 1)));
    qsort(at, count, sizeof at[0], cmp_double);
    return count;
}

static void apply_storm(sim_node *n, unsigned g, double t0, double t1) {
    double onset = n->cfg.onset_s;
    if (t1 < onset) return;
    sim_gpu_state *s = &n->gpu[g];
    uint64_t seed = n->cfg.seed;
    int64_t b1 = (int64_t)floor((t1 - onset) / STORM_PERIOD_S);
    int64_t b0 = t0 < onset ? 0 : (int64_t)floor((t0 - onset - STORM_SPAN_S) / STORM_PERIOD_S);
    if (b0 < 0) b0 = 0;
    if (b0 < b1 - 64) b0 = b1 - 64; /* older bursts would fall out of the ring anyway */
    for (int64_t b = b0; b <= b1; b++) {
        double tb = onset + (double)b * STORM_PERIOD_S;
        if (tb + STORM_SPAN_S <= t0) continue;
        double at[20];
        unsigned count = storm_burst(seed, g, b, tb, at);
        for (unsigned i = 0; i < count; i++) {
            if (at[i] <= t0 || at[i] > t1) continue;
            uint64_t h = sim__hash(seed, g, SIM__CH_XID_CODE, ((uint64_t)b << 8) | i);
            unsigned xid = storm_code(h);
            unsigned gi = 0xFFFFFFFFu, ci = 0xFFFFFFFFu;
            if (s->mig_enabled && s->mig_count && (xid == 13 || xid == 31 || xid == 43)) {
                const sim_mig_state *mi = &s->mig[sim__mix(h) % s->mig_count];
                gi = mi->gi_id;
                ci = mi->ci_id;
            }
            if (xid == 74 && s->nvlink_count) {
                unsigned link = (unsigned)(sim__mix(h ^ 0x74) % s->nvlink_count);
                s->nvl_err[link][SIM_NVL_REPLAY] += 1 + sim__mix(h ^ 0x75) % 5;
                s->nvl_err[link][SIM_NVL_RECOVERY] += 1;
            }
            sim__emit_xid(n, g, at[i], xid, gi, ci);
        }
    }
}

/* ------------------------------------------------------------------------ */
/* fell-off-bus                                                              */

static void apply_bus(sim_node *n, unsigned g, double t0, double t1) {
    sim_gpu_state *s = &n->gpu[g];
    double lost = n->cfg.lost_after_s;
    double a = lost - REPLAY_RAMP_S;
    double lo = t0 > a ? t0 : a, hi = t1 < lost ? t1 : lost;
    if (hi > lo) { /* the link degrades: replays climb before the loss */
        double before = s->replay_ramp_;
        s->replay_ramp_ += (hi - lo) * REPLAY_RATE;
        s->pcie_replay += (unsigned)s->replay_ramp_ - (unsigned)before;
    }
    if (!s->lost && t0 < lost && lost <= t1) {
        sim__emit_xid(n, g, lost, 79, 0xFFFFFFFFu, 0xFFFFFFFFu);
        s->lost = true;
        s->lost_at = lost;
        s->reasons = 0;
    }
}

void sim__scenario_apply(sim_node *n, unsigned g, double t0, double t1) {
    if (g != n->cfg.fault_gpu || n->gpu[g].lost) return;
    switch (n->cfg.scenario) {
    case SIM_SCENARIO_ECC_DEGRADATION: apply_ecc(n, g, t0, t1); break;
    case SIM_SCENARIO_XID_STORM: apply_storm(n, g, t0, t1); break;
    case SIM_SCENARIO_FELL_OFF_BUS: apply_bus(n, g, t0, t1); break;
    default: break;
    }
}

/* ------------------------------------------------------------------------ */
/* closed-form failure times                                                 */

int sim_scenario_failure_at(const sim_config *c, double *ret_t) {
    if (!c || !c->model || (unsigned)c->scenario >= SIM_SCENARIO__COUNT || c->fault_gpu >= SIM_MAX_GPUS ||
        !isfinite(c->onset_s) || c->onset_s < 0 || !isfinite(c->lost_after_s) || c->lost_after_s < 0 ||
        !sim__timeline_ok(c))
        return BASE_E_INVAL;
    double t;
    switch (c->scenario) {
    case SIM_SCENARIO_MEMORY_LEAK: {
        uint64_t limit = leak_limit(c, c->fault_gpu);
        if (limit == 0 || c->workload == SIM_WORKLOAD_IDLE) return BASE_E_NOTFOUND;
        double rate;
        t = c->onset_s + leak_fill_s(c, limit, &rate);
        break;
    }
    case SIM_SCENARIO_ECC_DEGRADATION:
        if (!c->model->has_ecc) return BASE_E_NOTFOUND;
        t = c->onset_s + c->ecc_dbe_after_s;
        break;
    case SIM_SCENARIO_FELL_OFF_BUS: t = c->lost_after_s; break;
    case SIM_SCENARIO_XID_STORM: {
        double at[20];
        storm_burst(c->seed, c->fault_gpu, 0, c->onset_s + 0.0 * STORM_PERIOD_S, at);
        t = at[0];
        break;
    }
    default: return BASE_E_NOTFOUND;
    }
    *ret_t = t;
    return 0;
}
