/* tests/unit/sim/timeline.c -- sim_config's timeline parameters (cooling
 * ramp and second fan, leak rate, ECC rate / doubling / uncorrectable
 * time, the largest sub-step) and sim_scenario_failure_at().
 *
 * The defaults must stay the minutes-long timelines the fleet simulator,
 * the simulated NVML and their tests rely on; the parameters must stretch
 * them as documented; and every closed-form failure time must be the
 * moment a stepped node actually fails (never a guess: the node is stepped
 * across it and observed on both sides).
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "base/err.h"
#include "sim/sim.h"

static sim_config cfg(sim_scenario sc, unsigned gpus) {
    sim_config c;
    sim_config_init(&c);
    c.scenario = sc;
    c.gpu_count = gpus;
    c.seed = 77;
    return c;
}

static sim_node *node(const sim_config *c) {
    sim_node *n = NULL;
    char err[128] = "";
    assert_int_equal(sim_node_new(c, &n, err, sizeof err), 0);
    return n;
}

static void step_to(sim_node *n, double t, double dt) {
    for (double x = sim_node_time(n) + dt; x < t - 1e-9; x += dt) assert_int_equal(sim_node_step(n, x), 0);
    assert_int_equal(sim_node_step(n, t), 0);
}

static void test_defaults(void **state) {
    (void)state;
    sim_config c;
    sim_config_init(&c);
    assert_true(c.onset_s == 60.0 && c.lost_after_s == 300.0);
    assert_true(c.cool_ramp_s == 600.0 && c.cool_ramp_to == 0.6);
    assert_true(c.cool_fan_after_s == 900.0 && c.cool_fan_to == 0.3);
    assert_true(c.leak_rate_bps == 0.0);
    assert_true(c.ecc_rate0 == 0.05 && c.ecc_doubling_s == 300.0 && c.ecc_dbe_after_s == 1800.0);
    assert_true(c.max_substep_s == 0.0);
    /* the default timelines' failure times, as sim.h describes them */
    double t;
    c.scenario = SIM_SCENARIO_MEMORY_LEAK;
    assert_int_equal(sim_scenario_failure_at(&c, &t), 0);
    assert_true(fabs(t - (60.0 + 1800.0)) < 1e-9);
    c.scenario = SIM_SCENARIO_ECC_DEGRADATION;
    assert_int_equal(sim_scenario_failure_at(&c, &t), 0);
    assert_true(t == 60.0 + 1800.0);
    c.scenario = SIM_SCENARIO_FELL_OFF_BUS;
    assert_int_equal(sim_scenario_failure_at(&c, &t), 0);
    assert_true(t == 300.0);
    c.scenario = SIM_SCENARIO_HEALTHY;
    assert_int_equal(sim_scenario_failure_at(&c, &t), BASE_E_NOTFOUND);
    c.scenario = SIM_SCENARIO_COOLING_FAILURE;
    assert_int_equal(sim_scenario_failure_at(&c, &t), BASE_E_NOTFOUND);
}

/* The default cooling timeline, then a slow ramp without a second fan. */
static void test_cooling_params(void **state) {
    (void)state;
    sim_config c = cfg(SIM_SCENARIO_COOLING_FAILURE, 2);
    sim_node *n = node(&c);
    const sim_gpu_state *s = sim_node_gpu(n, 0);
    step_to(n, 60 + 300, 2.0);
    assert_true(fabs(s->cooling - 0.8) < 1e-9); /* halfway down the 600 s ramp to 0.6 */
    step_to(n, 60 + 899, 2.0);
    assert_true(fabs(s->cooling - 0.6) < 1e-9);
    step_to(n, 60 + 901, 1.0);
    assert_true(fabs(s->cooling - 0.3) < 1e-9); /* the second fan */
    assert_true(sim_node_gpu(n, 1)->cooling == 1.0);
    sim_node_free(n);

    c.onset_s = 100;
    c.cool_ramp_s = 4000;
    c.cool_ramp_to = 0.2;
    c.cool_fan_after_s = -1;
    n = node(&c);
    s = sim_node_gpu(n, 0);
    step_to(n, 99, 3.0);
    assert_true(s->cooling == 1.0);
    step_to(n, 100 + 1000, 3.0);
    assert_true(fabs(s->cooling - 0.8) < 1e-9);
    step_to(n, 100 + 4000, 3.0);
    assert_true(fabs(s->cooling - 0.2) < 1e-9);
    step_to(n, 100 + 9000, 5.0);
    assert_true(fabs(s->cooling - 0.2) < 1e-9); /* no second fan */
    sim_node_free(n);

    c.cool_fan_after_s = 2000; /* a fan before the ramp is over */
    c.cool_fan_to = 0.25;
    n = node(&c);
    s = sim_node_gpu(n, 0);
    step_to(n, 100 + 1999, 1.0);
    assert_true(s->cooling > 0.5);
    step_to(n, 100 + 2001, 1.0);
    assert_true(fabs(s->cooling - 0.25) < 1e-9);
    step_to(n, 100 + 3000, 5.0);
    assert_true(fabs(s->cooling - 0.25) < 1e-9); /* the ramp is still above the fan's level */
    step_to(n, 100 + 3900, 5.0);
    assert_true(fabs(s->cooling - 0.22) < 1e-9); /* and goes on below it */
    sim_node_free(n);
}

/* A slow leak: linear growth at the rate, exhaustion at the closed-form
 * time, OOM kill, restart. */
static void test_leak_rate(void **state) {
    (void)state;
    sim_config c = cfg(SIM_SCENARIO_MEMORY_LEAK, 2);
    c.onset_s = 600;
    c.leak_rate_bps = 4.0 * 1024 * 1024 * 1024 / 3600.0; /* 4 GiB an hour */
    double at;
    assert_int_equal(sim_scenario_failure_at(&c, &at), 0);
    uint64_t usable = c.model->mem_total_bytes - c.model->mem_reserved_bytes;
    double head = (double)usable * 0.45;
    assert_true(fabs(at - (600 + head / c.leak_rate_bps)) < 1e-6);
    assert_true(at > 600 + 8 * 3600 && at < 600 + 9 * 3600); /* 35.6 GiB at 4 GiB/h */

    sim_node *n = node(&c);
    const sim_gpu_state *s = sim_node_gpu(n, 0);
    uint64_t base = (uint64_t)((double)usable * 0.55);
    for (double x = 600; x < 8 * 3600; x += 3600) {
        step_to(n, 600 + x, 30.0);
        double want = (double)base + c.leak_rate_bps * x;
        assert_true(fabs((double)s->mem_used_bytes - want) <= 2.0 * 1024 * 1024 + 1);
        assert_int_equal(s->proc_count, 1);
    }
    step_to(n, floor(at) - 1, 30.0);
    assert_int_equal(s->proc_count, 1);
    assert_true((double)s->mem_used_bytes > (double)usable - c.leak_rate_bps * 2 - 4.0 * 1024 * 1024);
    step_to(n, ceil(at) + 1, 1.0);
    assert_int_equal(s->proc_count, 0); /* OOM-killed at `at` */
    assert_int_equal(s->mem_used_bytes, 0);
    step_to(n, ceil(at) + 62, 1.0);
    assert_int_equal(s->proc_count, 1); /* restarted 60 s later */
    assert_true(s->mem_used_bytes < base + (uint64_t)(c.leak_rate_bps * 5));
    assert_true(sim_node_gpu(n, 1)->proc_count == 1 && sim_node_gpu(n, 1)->mem_used_bytes < usable * 0.9);
    sim_node_free(n);

    /* into MIG instance 0 */
    c.model = sim_model_find("a100", 4);
    c.gpu_count = 1;
    c.fault_gpu = 0;
    char err[128];
    assert_int_equal(sim_config_set_mig(&c, "0:3g.40gb,3g.40gb", 17, err, sizeof err), 0);
    assert_int_equal(sim_scenario_failure_at(&c, &at), 0);
    double mig = 40192.0 * 1024 * 1024;
    assert_true(fabs(at - (600 + mig * 0.45 / c.leak_rate_bps)) < 1e-6);
    assert_int_equal(sim_config_set_mig(&c, "0:", 2, err, sizeof err), 0);
    assert_int_equal(sim_scenario_failure_at(&c, &at), BASE_E_NOTFOUND); /* MIG on, nothing to leak into */
}

/* Correctable errors follow rate0 x 2^(x / doubling); the uncorrectable
 * one comes exactly at onset + ecc_dbe_after_s. */
static void test_ecc_params(void **state) {
    (void)state;
    sim_config c = cfg(SIM_SCENARIO_ECC_DEGRADATION, 2);
    c.onset_s = 1000;
    c.ecc_rate0 = 1.0 / 600.0;
    c.ecc_doubling_s = 3000;
    c.ecc_dbe_after_s = 20000;
    double at;
    assert_int_equal(sim_scenario_failure_at(&c, &at), 0);
    assert_true(at == 21000);
    sim_node *n = node(&c);
    const sim_gpu_state *s = sim_node_gpu(n, 0);
    uint64_t sbe0 = s->ecc_sbe_vol;
    step_to(n, 999, 20.0);
    assert_int_equal(s->ecc_sbe_vol, sbe0);
    for (double x = 3000; x <= 18000; x += 3000) {
        step_to(n, 1000 + x, 20.0);
        double want = c.ecc_rate0 * c.ecc_doubling_s / M_LN2 * (exp2(x / c.ecc_doubling_s) - 1.0);
        assert_true(fabs((double)(s->ecc_sbe_vol - sbe0) - floor(want)) <= 1.0);
        assert_int_equal(s->ecc_dbe_vol, 0);
    }
    uint64_t cur = sim_node_event_next(n);
    step_to(n, 20999, 1.0);
    assert_int_equal(s->ecc_dbe_vol, 0);
    step_to(n, 21000, 1.0);
    assert_int_equal(s->ecc_dbe_vol, 1);
    assert_true(s->remap_pending);
    sim_xid_event ev[8];
    size_t k = sim_node_events(n, &cur, ev, 8, NULL);
    assert_int_equal(k, 2);
    assert_int_equal(ev[0].xid, 48);
    assert_true(ev[0].t == 21000 && ev[0].gpu == 0);
    /* a rate doubling every 3000 s: ~726 errors by then, 100x the first rate */
    double sbe = (double)(s->ecc_sbe_vol - sbe0);
    assert_true(sbe > 700 && sbe < 750);
    assert_true(s->remap_cor == 1); /* one row per 500 */
    assert_int_equal(sim_node_gpu(n, 1)->ecc_dbe_vol, 0);
    sim_node_free(n);
}

/* Closed-form times of the storm and the loss equal what a node does. */
static void test_failure_at_matches_node(void **state) {
    (void)state;
    sim_config c = cfg(SIM_SCENARIO_XID_STORM, 4);
    c.fault_gpu = 2;
    c.onset_s = 5000;
    double at;
    assert_int_equal(sim_scenario_failure_at(&c, &at), 0);
    assert_true(at > 5000 && at < 5010);
    sim_node *n = node(&c);
    uint64_t cur = sim_node_event_next(n);
    step_to(n, 5020, 7.0);
    sim_xid_event ev[32];
    size_t k = sim_node_events(n, &cur, ev, 32, NULL);
    assert_true(k >= 5);
    assert_true(ev[0].t == at && ev[0].gpu == 2);
    sim_node_free(n);

    c = cfg(SIM_SCENARIO_FELL_OFF_BUS, 2);
    c.fault_gpu = 1;
    c.lost_after_s = 86400 * 3 + 17;
    assert_int_equal(sim_scenario_failure_at(&c, &at), 0);
    assert_true(at == 86400 * 3 + 17);
    n = node(&c);
    step_to(n, at - 1, 600.0);
    assert_false(sim_node_gpu(n, 1)->lost);
    step_to(n, at + 1, 1.0);
    assert_true(sim_node_gpu(n, 1)->lost && sim_node_gpu(n, 1)->lost_at == at);
    sim_node_free(n);
}

/* max_substep_s: the trajectory stays the model's, up to integration error. */
static void test_substep(void **state) {
    (void)state;
    sim_config a = cfg(SIM_SCENARIO_HEALTHY, 2), b = a;
    b.max_substep_s = 0.5;
    sim_node *na = node(&a), *nb = node(&b);
    step_to(na, 1800, 30.0);
    step_to(nb, 1800, 30.0);
    const sim_gpu_state *x = sim_node_gpu(na, 1), *y = sim_node_gpu(nb, 1);
    assert_true(fabs(x->temp_gpu - y->temp_gpu) < 1.5 && fabs(x->temp_mem - y->temp_mem) < 1.5);
    assert_true(fabs(x->energy_mj - y->energy_mj) < 0.01 * x->energy_mj);
    sim_node_free(na);
    sim_node_free(nb);
}

static void test_bad_params(void **state) {
    (void)state;
    struct {
        size_t off;
        double v;
    } bad[] = {
        {offsetof(sim_config, cool_ramp_s), 0},    {offsetof(sim_config, cool_ramp_s), NAN},
        {offsetof(sim_config, cool_ramp_to), 0},   {offsetof(sim_config, cool_ramp_to), 1.5},
        {offsetof(sim_config, cool_fan_to), 0},    {offsetof(sim_config, cool_fan_after_s), INFINITY},
        {offsetof(sim_config, leak_rate_bps), -1}, {offsetof(sim_config, ecc_rate0), -0.5},
        {offsetof(sim_config, ecc_doubling_s), 0}, {offsetof(sim_config, ecc_dbe_after_s), -1},
        {offsetof(sim_config, max_substep_s), 61}, {offsetof(sim_config, max_substep_s), -2},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        sim_config c = cfg(SIM_SCENARIO_MEMORY_LEAK, 1);
        memcpy((char *)&c + bad[i].off, &bad[i].v, sizeof(double));
        sim_node *n = NULL;
        char err[128] = "";
        assert_int_equal(sim_node_new(&c, &n, err, sizeof err), BASE_E_INVAL);
        assert_null(n);
        assert_true(strlen(err) > 0);
        double t = -1;
        assert_int_equal(sim_scenario_failure_at(&c, &t), BASE_E_INVAL);
        assert_true(t == -1);
    }
    assert_int_equal(sim_scenario_failure_at(NULL, NULL), BASE_E_INVAL);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_cooling_params),
        cmocka_unit_test(test_leak_rate),
        cmocka_unit_test(test_ecc_params),
        cmocka_unit_test(test_failure_at_matches_node),
        cmocka_unit_test(test_substep),
        cmocka_unit_test(test_bad_params),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
