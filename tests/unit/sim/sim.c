/* tests/unit/sim/sim.c -- the simulation model (src/sim/): determinism,
 * every scenario producing its failure, MIG layouts, models, identities.
 *
 * Each scenario test steps a node through model time and checks the failure
 * the scenario promises (sim.h's timelines) and that healthy GPUs stay
 * healthy next to it. Thresholds are physical ("memory junction within 4 C
 * of its limit"), not copied outputs.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "base/err.h"
#include "sim/sim.h"

static sim_node *make(sim_scenario sc, const char *model, unsigned gpus, uint64_t seed) {
    sim_config c;
    sim_config_init(&c);
    c.scenario = sc;
    c.model = sim_model_find(model, strlen(model));
    assert_non_null(c.model);
    c.gpu_count = gpus;
    c.seed = seed;
    sim_node *n = NULL;
    char err[128];
    assert_int_equal(sim_node_new(&c, &n, err, sizeof err), 0);
    return n;
}

static void step_to(sim_node *n, double t, double dt) {
    for (double x = sim_node_time(n) + dt; x <= t + 1e-9; x += dt) assert_int_equal(sim_node_step(n, x), 0);
}

static size_t drain(sim_node *n, uint64_t *cur, sim_xid_event *out, size_t max) {
    size_t total = 0, k;
    while (total < max && (k = sim_node_events(n, cur, out + total, max - total, NULL)) > 0) total += k;
    return total;
}

static void same_state(const sim_gpu_state *a, const sim_gpu_state *b) {
    assert_true(a->temp_gpu == b->temp_gpu && a->temp_mem == b->temp_mem);
    assert_true(a->power_w == b->power_w && a->energy_mj == b->energy_mj);
    assert_true(a->clock_sm == b->clock_sm && a->util_gpu == b->util_gpu);
    assert_int_equal(a->mem_used_bytes, b->mem_used_bytes);
    assert_int_equal(a->ecc_sbe_vol, b->ecc_sbe_vol);
    assert_int_equal(a->xid_count, b->xid_count);
    assert_int_equal(a->pcie_tx_bytes, b->pcie_tx_bytes);
    assert_int_equal(a->violation_ns[SIM_VIOL_POWER], b->violation_ns[SIM_VIOL_POWER]);
    assert_memory_equal(a->act_int, b->act_int, sizeof a->act_int);
}

static void test_deterministic(void **state) {
    (void)state;
    for (sim_scenario sc = 0; sc < SIM_SCENARIO__COUNT; sc++) {
        sim_node *a = make(sc, "h100", 4, 42), *b = make(sc, "h100", 4, 42), *c = make(sc, "h100", 4, 43);
        step_to(a, 900, 1.0);
        step_to(b, 900, 1.0);
        step_to(c, 900, 1.0);
        int differs = 0;
        for (unsigned g = 0; g < 4; g++) {
            same_state(sim_node_gpu(a, g), sim_node_gpu(b, g));
            differs |= sim_node_gpu(a, g)->energy_mj != sim_node_gpu(c, g)->energy_mj;
        }
        assert_true(differs); /* another seed is another node */
        uint64_t ca = 0, cb = 0;
        sim_xid_event ea[256], eb[256];
        size_t na = drain(a, &ca, ea, 256), nb = drain(b, &cb, eb, 256);
        assert_int_equal(na, nb);
        for (size_t i = 0; i < na; i++) {
            assert_int_equal(ea[i].xid, eb[i].xid);
            assert_true(ea[i].t == eb[i].t);
        }
        sim_node_free(a);
        sim_node_free(b);
        sim_node_free(c);
    }
}

/* Coarse and fine stepping give the same timeline (closed-form scenarios)
 * and nearly the same physics (exact exponential integration). */
static void test_step_size(void **state) {
    (void)state;
    sim_node *fine = make(SIM_SCENARIO_ECC_DEGRADATION, "a100", 2, 7);
    sim_node *coarse = make(SIM_SCENARIO_ECC_DEGRADATION, "a100", 2, 7);
    step_to(fine, 2400, 0.25);
    step_to(coarse, 2400, 15.0);
    const sim_gpu_state *f = sim_node_gpu(fine, 0), *c = sim_node_gpu(coarse, 0);
    assert_int_equal(f->ecc_sbe_vol, c->ecc_sbe_vol);
    assert_int_equal(f->ecc_dbe_vol, c->ecc_dbe_vol);
    assert_int_equal(f->remap_cor, c->remap_cor);
    assert_true(fabs(f->temp_gpu - c->temp_gpu) < 3.0);
    assert_true(fabs(f->energy_mj - c->energy_mj) / f->energy_mj < 0.02);
    /* stepping backwards or to the same time changes nothing */
    double e = c->energy_mj;
    assert_int_equal(sim_node_step(coarse, 100), 0);
    assert_int_equal(sim_node_step(coarse, 2400), 0);
    assert_true(sim_node_gpu(coarse, 0)->energy_mj == e);
    assert_int_equal(sim_node_step(coarse, NAN), BASE_E_INVAL);
    sim_node_free(fine);
    sim_node_free(coarse);
}

static void test_healthy(void **state) {
    (void)state;
    for (sim_model_id id = 0; id < SIM_MODEL__COUNT; id++) {
        const sim_model *m = sim_model_get(id);
        sim_node *n = make(SIM_SCENARIO_HEALTHY, m->key, 8, 3);
        double prev_e[8] = {0};
        uint64_t prev_v[8] = {0};
        for (double t = 60; t <= 3600; t += 60) {
            step_to(n, t, 2.0);
            for (unsigned g = 0; g < 8; g++) {
                const sim_gpu_state *s = sim_node_gpu(n, g);
                assert_false(s->lost);
                assert_true(s->temp_gpu > 15 && s->temp_gpu < m->temp_max_op_c);
                assert_true(s->power_w <= m->power_limit_mw / 1000.0 * 1.01);
                assert_true(s->power_w >= m->power_idle_w * 0.8);
                assert_true(s->clock_sm <= m->sm_clock_max_mhz);
                assert_true(s->util_gpu >= 0 && s->util_gpu <= 100);
                assert_true(s->mem_used_bytes + s->mem_reserved_bytes <= s->mem_total_bytes);
                assert_true(s->energy_mj > prev_e[g]);
                assert_true(s->pcie_rx_bytes >= prev_v[g]);
                assert_false(s->reasons & (SIM_REASON_HW_SLOWDOWN | SIM_REASON_SW_THERMAL));
                assert_int_equal(s->ecc_dbe_vol, 0);
                assert_int_equal(s->ecc_sbe_vol, 0);
                prev_e[g] = s->energy_mj;
                prev_v[g] = s->pcie_rx_bytes;
                if (m->num_fans) assert_true(s->fan_pct >= 30 && s->fan_pct <= 100);
            }
        }
        uint64_t cur = 0;
        sim_xid_event ev[4];
        assert_int_equal(drain(n, &cur, ev, 4), 0);
        sim_node_free(n);
    }
}

/* Training: high utilisation most of the time, with evaluation and
 * checkpoint dips. */
static void test_training_dips(void **state) {
    (void)state;
    sim_node *n = make(SIM_SCENARIO_HEALTHY, "h100", 1, 11);
    int busy = 0, dip = 0, idle = 0;
    for (double t = 10; t <= 7200; t += 10) {
        step_to(n, t, 2.0);
        double u = sim_node_gpu(n, 0)->util_gpu;
        busy += u > 90;
        dip += u > 25 && u < 70;
        idle += u < 10;
    }
    assert_true(busy > 500);
    assert_true(dip >= 10);
    assert_true(idle >= 10);
    sim_node_free(n);
}

static void test_cooling_failure(void **state) {
    (void)state;
    sim_node *n = make(SIM_SCENARIO_COOLING_FAILURE, "h100", 2, 5);
    const sim_model *m = sim_node_config(n)->model;
    step_to(n, 59, 1.0);
    /* average over the training phase at the start and at the end */
    double t0 = 0, c0 = 0, m0 = 0;
    const sim_gpu_state *s = sim_node_gpu(n, 0);
    double early_mem = s->temp_mem;
    int saw_hw = 0;
    step_to(n, 1800, 1.0);
    for (int i = 0; i < 60; i++) {
        step_to(n, 1800 + i + 1, 1.0);
        t0 += s->temp_gpu;
        c0 += s->clock_sm;
        m0 += s->temp_mem;
        saw_hw |= (s->reasons & SIM_REASON_HW_SLOWDOWN) != 0;
    }
    t0 /= 60, c0 /= 60, m0 /= 60;
    assert_true(m0 > early_mem + 15.0);
    assert_true(m0 > m->temp_mem_max_c - 4.0 && m0 < m->temp_mem_max_c + 1.0);
    assert_true(c0 < 0.8 * m->sm_clock_max_mhz);
    assert_true(s->reasons & SIM_REASON_SW_THERMAL);
    assert_true(s->violation_ns[SIM_VIOL_THERMAL] > 300ULL * 1000000000ULL);
    assert_true(s->sw_thermal_ns > 0);
    (void)saw_hw;
    /* the lagging controller lets the second fan failure overshoot */
    assert_true(s->hw_thermal_ns > 0);
    const sim_gpu_state *other = sim_node_gpu(n, 1);
    assert_int_equal(other->violation_ns[SIM_VIOL_THERMAL], 0);
    assert_true(other->temp_mem < m->temp_mem_max_c - 10.0);
    sim_node_free(n);
}

static void test_cooling_failure_l4(void **state) { /* no HBM sensor: the die drives it */
    (void)state;
    sim_node *n = make(SIM_SCENARIO_COOLING_FAILURE, "l4", 1, 5);
    step_to(n, 1500, 2.0);
    const sim_gpu_state *s = sim_node_gpu(n, 0);
    const sim_model *m = sim_node_config(n)->model;
    assert_true(s->temp_gpu > m->temp_max_op_c - 4.0);
    assert_true(s->violation_ns[SIM_VIOL_THERMAL] > 0);
    sim_node_free(n);
}

static void test_memory_leak(void **state) {
    (void)state;
    sim_node *n = make(SIM_SCENARIO_MEMORY_LEAK, "h100", 2, 9);
    const sim_gpu_state *s = sim_node_gpu(n, 0);
    uint64_t usable = s->mem_total_bytes - s->mem_reserved_bytes;
    step_to(n, 70, 1.0);
    uint64_t prev = s->mem_used_bytes, peak = 0;
    assert_int_equal(s->proc_count, 1);
    for (double t = 120; t <= 60 + 1790; t += 60) {
        step_to(n, t, 2.0);
        assert_true(s->mem_used_bytes > prev);
        assert_int_equal(s->procs[0].used_bytes, s->mem_used_bytes);
        prev = s->mem_used_bytes;
    }
    peak = prev;
    assert_true(peak > usable / 100 * 97);
    step_to(n, 60 + 1830, 1.0); /* OOM-killed */
    assert_int_equal(s->proc_count, 0);
    assert_int_equal(s->mem_used_bytes, 0);
    step_to(n, 60 + 1900, 1.0); /* restarted, leaking again */
    assert_int_equal(s->proc_count, 1);
    assert_true(s->mem_used_bytes < peak / 2 + usable / 10);
    assert_true(s->procs[0].started_at > 60 + 1800);
    const sim_gpu_state *o = sim_node_gpu(n, 1); /* the neighbour is steady */
    assert_true(o->mem_used_bytes > usable / 100 * 80 && o->mem_used_bytes < usable / 100 * 90);
    sim_node_free(n);
}

static void test_xid_storm(void **state) {
    (void)state;
    sim_node *n = make(SIM_SCENARIO_XID_STORM, "h100", 4, 21);
    step_to(n, 59, 1.0);
    uint64_t cur = 0;
    sim_xid_event ev[SIM_EVENT_RING];
    assert_int_equal(drain(n, &cur, ev, SIM_EVENT_RING), 0);
    step_to(n, 75, 0.5);
    size_t k = drain(n, &cur, ev, SIM_EVENT_RING);
    assert_true(k >= 5 && k <= 20); /* one burst */
    static const unsigned allowed[] = {13, 31, 43, 48, 63, 64, 74, 79};
    for (size_t i = 0; i < k; i++) {
        assert_int_equal(ev[i].gpu, 0);
        assert_true(ev[i].t > 60 && ev[i].t < 70);
        assert_int_equal(ev[i].seq, i);
        if (i) assert_true(ev[i].t >= ev[i - 1].t);
        int ok = 0;
        for (size_t j = 0; j < 8; j++) ok |= ev[i].xid == allowed[j];
        assert_true(ok);
    }
    assert_int_equal(sim_node_gpu(n, 0)->last_xid, ev[k - 1].xid);
    step_to(n, 60 + 240 * 5 + 20, 3.0);
    size_t more = drain(n, &cur, ev, SIM_EVENT_RING);
    assert_true(more >= 5 * 5);
    assert_false(sim_node_gpu(n, 0)->lost); /* a storm, not a loss */
    assert_int_equal(sim_node_gpu(n, 1)->xid_count, 0);
    sim_node_free(n);
}

static void test_event_ring_overflow(void **state) {
    (void)state;
    sim_node *n = make(SIM_SCENARIO_XID_STORM, "h100", 1, 2);
    step_to(n, 60 + 240.0 * 200, 60.0);
    uint64_t total = sim_node_event_next(n);
    assert_true(total > SIM_EVENT_RING);
    uint64_t cur = 0, dropped = 0;
    sim_xid_event ev[8];
    size_t k = sim_node_events(n, &cur, ev, 8, &dropped);
    assert_int_equal(k, 8);
    assert_int_equal(dropped, total - SIM_EVENT_RING);
    assert_int_equal(ev[0].seq, dropped);
    uint64_t late = sim_node_event_next(n);
    assert_int_equal(sim_node_events(n, &late, ev, 8, NULL), 0);
    sim_node_free(n);
}

static void test_ecc_degradation(void **state) {
    (void)state;
    sim_node *n = make(SIM_SCENARIO_ECC_DEGRADATION, "h100", 2, 4);
    const sim_gpu_state *s = sim_node_gpu(n, 0);
    uint64_t agg0 = s->ecc_sbe_agg;
    step_to(n, 60 + 600, 2.0);
    uint64_t a = s->ecc_sbe_vol;
    step_to(n, 60 + 1200, 2.0);
    uint64_t b = s->ecc_sbe_vol;
    assert_true(a > 0);
    assert_true(b - a > 2 * a); /* accelerating */
    assert_int_equal(s->ecc_sbe_agg - agg0, s->ecc_sbe_vol);
    assert_int_equal(s->ecc_dbe_vol, 0);
    assert_false(s->remap_pending);
    uint64_t cur = sim_node_event_next(n);
    step_to(n, 60 + 1900, 2.0);
    assert_int_equal(s->ecc_dbe_vol, 1);
    assert_int_equal(s->ecc_dbe_agg, 1);
    assert_true(s->remap_cor >= 2);
    assert_int_equal(s->remap_unc, 1);
    assert_true(s->remap_pending);
    assert_true(s->retired_pending);
    assert_int_equal(s->retired_dbe, 1);
    sim_xid_event ev[8];
    size_t k = drain(n, &cur, ev, 8);
    assert_int_equal(k, 2);
    assert_int_equal(ev[0].xid, 48);
    assert_int_equal(ev[1].xid, 63);
    assert_int_equal(sim_node_gpu(n, 1)->ecc_sbe_vol, 0);
    sim_node_free(n);
}

static void test_fell_off_bus(void **state) {
    (void)state;
    sim_config c;
    sim_config_init(&c);
    c.scenario = SIM_SCENARIO_FELL_OFF_BUS;
    c.gpu_count = 4;
    c.fault_gpu = 2;
    c.lost_after_s = 200;
    sim_node *n;
    assert_int_equal(sim_node_new(&c, &n, NULL, 0), 0);
    const sim_gpu_state *s = sim_node_gpu(n, 2);
    step_to(n, 60, 1.0);
    assert_int_equal(s->pcie_replay, 0);
    step_to(n, 199, 1.0);
    assert_false(s->lost);
    assert_true(s->pcie_replay > 100); /* the link degraded first */
    step_to(n, 203, 0.7);
    assert_true(s->lost);
    assert_true(s->lost_at == 200);
    uint64_t cur = 0;
    sim_xid_event ev[4];
    assert_int_equal(drain(n, &cur, ev, 4), 1);
    assert_int_equal(ev[0].xid, 79);
    assert_int_equal(ev[0].gpu, 2);
    double e = s->energy_mj;
    unsigned rep = s->pcie_replay;
    step_to(n, 400, 2.0);
    assert_true(s->energy_mj == e); /* frozen */
    assert_int_equal(s->pcie_replay, rep);
    assert_false(sim_node_gpu(n, 1)->lost);
    assert_true(sim_node_gpu(n, 1)->energy_mj > e / 2);
    sim_node_free(n);

    c.lost_after_s = 0; /* lost from the start */
    assert_int_equal(sim_node_new(&c, &n, NULL, 0), 0);
    assert_true(sim_node_gpu(n, 2)->lost);
    sim_node_free(n);
}

static void test_mig_layout(void **state) {
    (void)state;
    sim_config c;
    sim_config_init(&c);
    char err[160] = "";
    const char *spec = "0:3g.40gb,2g.20gb,1g.10gb; 2:7g.80gb;3:";
    assert_int_equal(sim_config_set_mig(&c, spec, strlen(spec), err, sizeof err), 0);
    assert_true(c.mig[0].enabled);
    assert_int_equal(c.mig[0].count, 3);
    assert_false(c.mig[1].enabled);
    assert_int_equal(c.mig[2].count, 1);
    assert_true(c.mig[3].enabled);
    assert_int_equal(c.mig[3].count, 0);
    sim_node *n;
    assert_int_equal(sim_node_new(&c, &n, err, sizeof err), 0);
    step_to(n, 120, 2.0);
    const sim_gpu_state *s = sim_node_gpu(n, 0);
    assert_true(s->mig_enabled);
    assert_int_equal(s->mig_count, 3);
    assert_string_equal(s->mig[0].profile->name, "3g.40gb");
    unsigned ids[3] = {s->mig[0].gi_id, s->mig[1].gi_id, s->mig[2].gi_id};
    assert_true(ids[0] != ids[1] && ids[1] != ids[2] && ids[0] != ids[2]);
    assert_int_equal(s->proc_count, 3);
    uint64_t sum = 0;
    for (unsigned k = 0; k < 3; k++) {
        assert_int_equal(s->procs[k].mig, (int)k);
        assert_true(s->mig[k].mem_used_bytes <= s->mig[k].mem_total_bytes);
        assert_true(s->mig[k].act_int[SIM_ACT_SM] > 0);
        sum += s->mig[k].mem_used_bytes;
    }
    assert_int_equal(sum, s->mem_used_bytes);
    assert_int_equal(sim_node_gpu(n, 2)->mig[0].gi_id, 0); /* 7g is GI 0 */
    assert_int_equal(sim_node_gpu(n, 3)->proc_count, 0);
    char u1[96], u2[96];
    assert_true(sim_mig_uuid(n, 0, 0, u1, sizeof u1) > 0);
    assert_true(sim_mig_uuid(n, 0, 1, u2, sizeof u2) > 0);
    assert_memory_equal(u1, "MIG-", 4);
    assert_string_not_equal(u1, u2);
    assert_int_equal(sim_mig_uuid(n, 0, 3, u1, sizeof u1), BASE_E_INVAL);
    sim_node_free(n);

    sim_config before = c;
    static const char *bad[] = {"0:4g.40gb,4g.40gb",
                                "0:3g.40gb,3g.40gb,2g.20gb",
                                "0:9g.90gb",
                                "9:1g.10gb",
                                "x:1g.10gb",
                                "0 1g.10gb",
                                "0:1g.10gb,1g.10gb,1g.10gb,1g.10gb,1g.10gb,1g.10gb,1g.10gb,1g.10gb"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = 0;
        assert_true(sim_config_set_mig(&c, bad[i], strlen(bad[i]), err, sizeof err) < 0);
        assert_true(err[0] != 0);
        assert_memory_equal(&before, &c, sizeof c);
    }
    /* seven 1g instances fit; "*" applies to every GPU */
    const char *seven = "*:1g.10gb,1g.10gb,1g.10gb,1g.10gb,1g.10gb,1g.10gb,1g.10gb";
    assert_int_equal(sim_config_set_mig(&c, seven, strlen(seven), err, sizeof err), 0);
    assert_int_equal(c.mig[7].count, 7);
    /* 3g + 3g + 1g: the 1g lands in slice 3 */
    const char *mix = "1:3g.40gb,3g.40gb,1g.10gb";
    assert_int_equal(sim_config_set_mig(&c, mix, strlen(mix), err, sizeof err), 0);
    c.model = sim_model_find("l4", 2); /* L4 has no MIG */
    assert_true(sim_config_set_mig(&c, "0:1g.10gb", 9, err, sizeof err) < 0);
    assert_int_equal(sim_node_new(&c, &n, err, sizeof err), BASE_E_INVAL);
}

static void test_models(void **state) {
    (void)state;
    for (sim_model_id id = 0; id < SIM_MODEL__COUNT; id++) {
        const sim_model *m = sim_model_get(id);
        assert_int_equal(m->id, id);
        assert_ptr_equal(sim_model_find(m->key, strlen(m->key)), m);
        assert_ptr_equal(sim_model_find(m->name, strlen(m->name)), m);
        assert_true(m->power_min_mw <= m->power_limit_mw && m->power_limit_mw <= m->power_max_mw);
        assert_true(m->temp_max_op_c < m->temp_slowdown_c && m->temp_slowdown_c < m->temp_shutdown_c);
        assert_true(m->mem_reserved_bytes < m->mem_total_bytes / 10);
        assert_true(m->nvlink_count <= SIM_MAX_NVLINKS);
        assert_true(m->has_gpm == (m->arch >= 9));
        for (unsigned k = 0; k < m->mig_profile_count; k++) {
            const sim_mig_profile *p = &m->mig_profiles[k];
            assert_ptr_equal(sim_mig_profile_find(m, p->name, strlen(p->name)), p);
            assert_true(p->slices * p->max_count <= 7);
            assert_true((uint64_t)p->mem_mib * 1024 * 1024 <= m->mem_total_bytes);
        }
    }
    const sim_model *l4 = sim_model_find("L4", 2);
    assert_false(l4->has_mem_temp);
    assert_int_equal(l4->mig_profile_count, 0);
    assert_string_equal(sim_model_find("h100", 4)->name, "NVIDIA H100 80GB HBM3");
    assert_ptr_equal(sim_model_find("A100-80GB", 9), sim_model_get(SIM_MODEL_A100_SXM4_80GB));
    assert_null(sim_model_find("v100", 4));
    assert_non_null(sim_mig_profile_find(sim_model_get(SIM_MODEL_H100_SXM5_80GB), "MIG 3g.40gb", 11));
}

static void test_names(void **state) {
    (void)state;
    sim_scenario s;
    for (sim_scenario i = 0; i < SIM_SCENARIO__COUNT; i++) {
        const char *nm = sim_scenario_name(i);
        assert_int_equal(sim_scenario_parse(nm, strlen(nm), &s), 0);
        assert_int_equal(s, i);
    }
    assert_int_equal(sim_scenario_parse("XID_STORM", 9, &s), 0);
    assert_int_equal(s, SIM_SCENARIO_XID_STORM);
    s = SIM_SCENARIO_HEALTHY;
    assert_int_equal(sim_scenario_parse("xid-stor", 8, &s), BASE_E_PARSE);
    assert_int_equal(s, SIM_SCENARIO_HEALTHY);
    sim_workload w;
    assert_int_equal(sim_workload_parse("inference", 9, &w), 0);
    assert_int_equal(w, SIM_WORKLOAD_INFERENCE);
    assert_int_equal(sim_cuda_version("550.54.15"), 12040);
    assert_int_equal(sim_cuda_version("470.256.02"), 11040);
    assert_int_equal(sim_cuda_version("535.104.05"), 12020);
    assert_int_equal(sim_cuda_version("bogus"), 0);
}

static int is_hex(char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

static void test_identity(void **state) {
    (void)state;
    sim_node *n = make(SIM_SCENARIO_HEALTHY, "h100", 16, 99);
    char seen[16][96];
    for (unsigned g = 0; g < 16; g++) {
        char *u = seen[g];
        assert_int_equal(sim_gpu_uuid(n, g, u, 96), 40);
        assert_memory_equal(u, "GPU-5151", 8);
        for (int i = 4; i < 40; i++) {
            if (i == 12 || i == 17 || i == 22 || i == 27)
                assert_int_equal(u[i], '-');
            else
                assert_true(is_hex(u[i]));
        }
        assert_int_equal(u[18], '4');                                              /* version 4 */
        assert_true(u[23] == '8' || u[23] == '9' || u[23] == 'a' || u[23] == 'b'); /* variant 1 */
        for (unsigned h = 0; h < g; h++) assert_string_not_equal(seen[h], u);
        char serial[32];
        assert_int_equal(sim_gpu_serial(n, g, serial, sizeof serial), 13);
        assert_memory_equal(serial, "SIM", 3);
        unsigned dom, bus, dev;
        assert_int_equal(sim_gpu_pci(n, g, &dom, &bus, &dev), 0);
        assert_true(bus > 0 && bus < 256);
    }
    char small[10];
    assert_int_equal(sim_gpu_uuid(n, 0, small, sizeof small), BASE_E_RANGE);
    assert_int_equal(sim_gpu_uuid(n, 16, small, sizeof small), BASE_E_INVAL);
    sim_node *again = make(SIM_SCENARIO_HEALTHY, "h100", 16, 99);
    char u[96];
    sim_gpu_uuid(again, 5, u, sizeof u);
    assert_string_equal(u, seen[5]);
    sim_node_free(again);
    sim_node_free(n);
}

static void test_bad_config(void **state) {
    (void)state;
    sim_config c;
    sim_config_init(&c);
    sim_node *n = (sim_node *)0x1;
    char err[64] = "";
    c.gpu_count = 17;
    assert_int_equal(sim_node_new(&c, &n, err, sizeof err), BASE_E_INVAL);
    assert_ptr_equal(n, (sim_node *)0x1);
    assert_true(err[0]);
    c.gpu_count = 2;
    c.fault_gpu = 2;
    assert_int_equal(sim_node_new(&c, &n, err, sizeof err), BASE_E_INVAL);
    c.fault_gpu = 0;
    c.model = NULL;
    assert_int_equal(sim_node_new(&c, &n, err, sizeof err), BASE_E_INVAL);
    sim_config_init(&c);
    c.gpu_count = 0; /* a node without GPUs is valid */
    assert_int_equal(sim_node_new(&c, &n, err, sizeof err), 0);
    assert_int_equal(sim_node_step(n, 10), 0);
    assert_null(sim_node_gpu(n, 0));
    sim_node_free(n);
}

/* Cheap enough for a fleet: 1024 GPUs for 10 simulated minutes at a 15 s
 * scrape interval. The bound is loose (sanitizers, a shared 2-core box). */
static void test_fleet_cost(void **state) {
    (void)state;
    sim_node *nodes[64];
    for (int i = 0; i < 64; i++)
        nodes[i] = make((sim_scenario)(i % SIM_SCENARIO__COUNT), "h100", 16, (uint64_t)i);
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (double t = 15; t <= 600; t += 15)
        for (int i = 0; i < 64; i++) sim_node_step(nodes[i], t);
    clock_gettime(CLOCK_MONOTONIC, &b);
    double s = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
    assert_true(s < 20.0);
    for (int i = 0; i < 64; i++) sim_node_free(nodes[i]);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_deterministic),
        cmocka_unit_test(test_step_size),
        cmocka_unit_test(test_healthy),
        cmocka_unit_test(test_training_dips),
        cmocka_unit_test(test_cooling_failure),
        cmocka_unit_test(test_cooling_failure_l4),
        cmocka_unit_test(test_memory_leak),
        cmocka_unit_test(test_xid_storm),
        cmocka_unit_test(test_event_ring_overflow),
        cmocka_unit_test(test_ecc_degradation),
        cmocka_unit_test(test_fell_off_bus),
        cmocka_unit_test(test_mig_layout),
        cmocka_unit_test(test_models),
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_identity),
        cmocka_unit_test(test_bad_config),
        cmocka_unit_test(test_fleet_cost),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
