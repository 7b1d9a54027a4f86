/* tests/unit/promql/func_win.c -- pq_fn_range_windows (src/promql/func_win.c)
 * against pq_fn_range window by window, to the bit.
 *
 * Series are built to hit every branch of the lane arithmetic: counters
 * with resets (one, several, at a window's first or last sample), values
 * that are negative, zero, NaN, +-Inf, huge and tiny; constant runs
 * (linearRegression's constY, also of Inf); irregular and duplicate-free
 * timestamps with gaps longer than the range; windows of 1 and 2 samples,
 * and of thousands;
 * offsets (negative too) and ranges that are not whole seconds (rate's
 * divisor then takes Go's nanosecond path). Window sets are built as the
 * evaluator builds them (eval_stream.c: steps from start by step, window
 * (end - range, end] with end = step time - off, empty windows left out).
 * Each case runs through both paths: the vector one (where the CPU has
 * AVX-512F/DQ/VL: the test says which ran) and the plain one, and both
 * must equal pq_fn_range called per window, then twice more with other
 * values over the same timestamps through a pq_wtimes (the figures the
 * rate family keeps from the first round). pq_agg_avg64 (avg's
 * incremental mean in lanes) is compared with the scalar loop the same way.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "promql/func.h"

static uint64_t rs = 0x9E3779B97F4A7C15ULL;
static uint64_t rnd(void) {
    rs ^= rs << 13;
    rs ^= rs >> 7;
    rs ^= rs << 17;
    return rs;
}

static int same(double a, double b) {
    if (isnan(a) || isnan(b)) return isnan(a) && isnan(b);
    return a == b && signbit(a) == signbit(b);
}

enum { SHAPE_COUNTER, SHAPE_GAUGE, SHAPE_HOSTILE, SHAPE_CONST, SHAPE_NSHAPES };

static int vector_unit(void) {
#if defined(__x86_64__)
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
           __builtin_cpu_supports("avx512vl");
#else
    return 0;
#endif
}

static int64_t spacing = 30000; /* the usual gap between samples, ms */

static void make_series(int shape, int64_t *t, double *v, size_t n) {
    int64_t ts = (int64_t)(rnd() % 30000);
    double c = (double)(rnd() % 1000);
    double konst = (rnd() & 1) ? 42.5 : (rnd() & 1 ? INFINITY : -0.0);
    for (size_t i = 0; i < n; i++) {
        uint64_t r = rnd();
        /* mostly 30 s, sometimes jittered, sometimes a long gap */
        int64_t d = spacing;
        if (r % 7 == 0) d = 1 + (int64_t)(r >> 8) % (2 * spacing);
        if (r % 97 == 0) d = 400000 + (int64_t)(r >> 8) % 900000;
        ts += d;
        t[i] = ts;
        switch (shape) {
        case SHAPE_COUNTER:
            c += (double)(r >> 20 & 1023) / 8;
            if (r % 23 == 0) c = (double)(r >> 30 & 255); /* reset */
            v[i] = c;
            break;
        case SHAPE_GAUGE: v[i] = (double)(int64_t)(r >> 11 & 0xfffff) / 100 - 5000; break;
        case SHAPE_CONST: v[i] = (r % 50 == 0) ? konst + 1 : konst; break;
        default: {
            static const double odd[] = {0.0,      -0.0,      1e308, -1e308, 5e-324, 1e-300, NAN,
                                         INFINITY, -INFINITY, -1.0,  3.0,    1e16,   0.1,    123456.789};
            v[i] = (r % 3 == 0) ? odd[(r >> 8) % (sizeof odd / sizeof odd[0])] : (double)(r >> 40) / 7;
        }
        }
    }
}

/* The evaluator's windows (eval_stream.c's work_windows_many). */
static size_t make_windows(const int64_t *t, size_t n, int64_t start, int64_t step, size_t nsteps,
                           int64_t off, int64_t range, uint32_t *lo_, uint32_t *hi_, uint32_t *k_) {
    size_t lo = 0, hi = 0, nw = 0;
    for (size_t k = 0; k < nsteps; k++) {
        int64_t maxt = start + (int64_t)k * step - off, mint = maxt - range;
        while (hi < n && t[hi] <= maxt) hi++;
        while (lo < hi && t[lo] < mint) lo++;
        if (hi == lo) continue;
        lo_[nw] = (uint32_t)lo;
        hi_[nw] = (uint32_t)hi;
        k_[nw] = (uint32_t)k;
        nw++;
    }
    return nw;
}

static void check_case(pq_func_id id, int shape, size_t n, int64_t step, size_t nsteps, int64_t off,
                       int64_t range, size_t *ncompared) {
    int64_t *t = malloc(n * sizeof *t), *t2 = malloc(n * sizeof *t2);
    double *v = malloc(n * sizeof *v);
    uint32_t *lo = malloc(nsteps * sizeof *lo), *hi = malloc(nsteps * sizeof *hi),
             *k = malloc(nsteps * sizeof *k);
    uint32_t *scr = malloc((n + 1) * sizeof *scr);
    double *arg = malloc(nsteps * sizeof *arg);
    double *want = calloc(nsteps, sizeof *want), *got[2];
    size_t words = (nsteps + 63) / 64;
    uint64_t *wbm = calloc(words, sizeof *wbm), *gbm[2];
    assert_non_null(t);
    assert_non_null(t2);
    assert_non_null(v);
    assert_non_null(lo);
    assert_non_null(hi);
    assert_non_null(k);
    assert_non_null(scr);
    assert_non_null(arg);
    assert_non_null(want);
    assert_non_null(wbm);
    make_series(shape, t, v, n);
    for (size_t i = 0; i < nsteps; i++)
        arg[i] = (i % 5 == 0) ? 3600 : (double)(int64_t)(rnd() % 20000) - 5000;
    int64_t start = t[0] - range / 2 + (int64_t)(rnd() % 20000);
    size_t nw = make_windows(t, n, start, step, nsteps, off, range, lo, hi, k);
    pq_wtimes tc = {0};
    pq_windows w = {.t = t,
                    .v = v,
                    .n = n,
                    .lo = lo,
                    .hi = hi,
                    .k = k,
                    .nw = nw,
                    .start = start,
                    .step = step,
                    .off = off,
                    .range = range,
                    .arg = id == PQ_F_PREDICT_LINEAR ? arg : NULL,
                    .scratch = scr,
                    .tc = &tc};
    /* rounds 1 and 2: other values over the same timestamps, as the next
     * series of a target comes, answered with what tc kept */
    for (int round = 0; round < 3; round++) {
        if (round > 0) {
            make_series(shape, t2, v, n);
            memset(want, 0, nsteps * sizeof *want);
            memset(wbm, 0, words * sizeof *wbm);
        }
        /* the reference: pq_fn_range window by window */
        size_t nwant = 0;
        for (size_t j = 0; j < nw; j++) {
            int64_t ts = start + (int64_t)k[j] * step, maxt = ts - off;
            double a = arg[k[j]], val;
            int r = pq_fn_range(id, t + lo[j], v + lo[j], hi[j] - lo[j], maxt - range, maxt, ts, &a,
                                id == PQ_F_PREDICT_LINEAR ? 1 : 0, &val);
            if (r == 1) {
                want[k[j]] = val;
                wbm[k[j] >> 6] |= (uint64_t)1 << (k[j] & 63);
                nwant++;
            }
        }
        for (int path = 0; path < 2; path++) {
            got[path] = calloc(nsteps, sizeof(double));
            gbm[path] = calloc(words, sizeof(uint64_t));
            assert_non_null(got[path]);
            assert_non_null(gbm[path]);
            pq__fn_windows_vector = path == 0;
            tc.same = round > 0;
            size_t cnt = pq_fn_range_windows(id, &w, got[path], gbm[path]);
            assert_int_equal(cnt, nwant);
            assert_memory_equal(gbm[path], wbm, words * sizeof *wbm);
            for (size_t i = 0; i < nsteps; i++) {
                if (!(wbm[i >> 6] >> (i & 63) & 1)) continue;
                if (!same(got[path][i], want[i])) {
                    fail_msg("fn %d shape %d round %d path %s step %zu: %.17g, want %.17g", (int)id, shape,
                             round, path == 0 ? "vector" : "plain", i, got[path][i], want[i]);
                }
                (*ncompared)++;
            }
            free(got[path]);
            free(gbm[path]);
        }
    }
    pq_wtimes_free(&tc);
    pq__fn_windows_vector = 1;
    free(t);
    free(t2);
    free(v);
    free(lo);
    free(hi);
    free(k);
    free(scr);
    free(arg);
    free(want);
    free(wbm);
}

static void run_fn(pq_func_id id) {
    size_t cached0 = pq__fn_windows_cached;
    static const int64_t ranges[] = {300000, 60000, 3600000, 90500, 1234};
    static const int64_t steps[] = {15000, 1000, 60000, 7000};
    static const int64_t offs[] = {0, 300000, -60000, 1};
    size_t compared = 0;
    for (int shape = 0; shape < SHAPE_NSHAPES; shape++)
        for (size_t ri = 0; ri < sizeof ranges / sizeof ranges[0]; ri++)
            for (size_t si = 0; si < sizeof steps / sizeof steps[0]; si++)
                check_case(id, shape, 700 + (size_t)(rnd() % 300), steps[si], 600 + (size_t)(rnd() % 13),
                           offs[(ri + si) % 4], ranges[ri], &compared);
    /* dense series: windows of ~900 to ~3,600 samples */
    spacing = 1000;
    for (int shape = 0; shape < SHAPE_NSHAPES; shape++)
        for (size_t ri = 0; ri < 3; ri++)
            check_case(id, shape, 5000, 60000, 64, 0, (int64_t[]){900000, 1200000, 3600000}[ri], &compared);
    spacing = 30000;
    /* tiny series: fewer windows than a group of lanes */
    for (size_t n = 1; n < 12; n++) check_case(id, SHAPE_COUNTER, n, 30000, 1 + n, 0, 300000, &compared);
    assert_true(compared > 10000);
    /* the rate family answered groups from the timestamps' figures */
    if (vector_unit() && (id == PQ_F_RATE || id == PQ_F_INCREASE || id == PQ_F_DELTA))
        assert_true(pq__fn_windows_cached > cached0);
}

static void test_rate(void **state) {
    (void)state;
    run_fn(PQ_F_RATE);
}
static void test_increase(void **state) {
    (void)state;
    run_fn(PQ_F_INCREASE);
}
static void test_delta(void **state) {
    (void)state;
    run_fn(PQ_F_DELTA);
}
static void test_deriv(void **state) {
    (void)state;
    run_fn(PQ_F_DERIV);
}
static void test_predict_linear(void **state) {
    (void)state;
    run_fn(PQ_F_PREDICT_LINEAR);
}

/* pq_agg_avg64 against 2.42's incremental mean, point by point, on
 * series of numbers, NaN and infinities of both signs. */
static void test_avg64(void **state) {
    (void)state;
    static const double odd[] = {NAN, INFINITY, -INFINITY, 0.0, -0.0, 1e308, -1e308, 5e-324, 3.25, -7.5};
    size_t compared = 0;
    for (int round = 0; round < 2000; round++) {
        double mean[64], cnt[64], want_mean[64], want_cnt[64];
        for (int j = 0; j < 64; j++) {
            uint64_t r = rnd();
            mean[j] = want_mean[j] = (r % 4 == 0) ? odd[(r >> 8) % 10] : (double)(int64_t)(r >> 20) / 1024;
            cnt[j] = want_cnt[j] = (double)(1 + (r >> 40) % 50);
        }
        for (int step = 0; step < 8; step++) {
            double v[64];
            for (int j = 0; j < 64; j++) {
                uint64_t r = rnd();
                v[j] = (r % 5 == 0) ? odd[(r >> 8) % 10] : (double)(int64_t)(r >> 16) / 3;
            }
            for (int j = 0; j < 64; j++) { /* eval_agg.c's scalar loop */
                double c = ++want_cnt[j], m = want_mean[j], x = v[j];
                if (isinf(m)) {
                    if (isinf(x) && (m > 0) == (x > 0)) continue;
                    if (!isinf(x) && !isnan(x)) continue;
                }
                want_mean[j] = m + (x / c - m / c);
            }
            if (!pq_agg_avg64(mean, cnt, v)) {
                fprintf(stderr, "func_win: no vector unit: pq_agg_avg64 declines, as it should\n");
                return;
            }
            for (int j = 0; j < 64; j++) {
                if (!same(mean[j], want_mean[j]) || cnt[j] != want_cnt[j])
                    fail_msg("avg64 round %d step %d lane %d: %.17g (count %g), want %.17g (count %g)", round,
                             step, j, mean[j], cnt[j], want_mean[j], want_cnt[j]);
                compared++;
            }
        }
    }
    assert_true(compared > 100000);
}

static void test_which(void **state) {
    (void)state;
    assert_true(pq_fn_range_windowed(PQ_F_RATE));
    assert_true(pq_fn_range_windowed(PQ_F_PREDICT_LINEAR));
    assert_false(pq_fn_range_windowed(PQ_F_IRATE));
    assert_false(pq_fn_range_windowed(PQ_F_AVG_OVER_TIME));
    fprintf(stderr, "func_win: the vector path %s\n",
            vector_unit() ? "ran (AVX-512)" : "did not run (no AVX-512 here): plain path only");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_which), cmocka_unit_test(test_rate),  cmocka_unit_test(test_increase),
        cmocka_unit_test(test_delta), cmocka_unit_test(test_deriv), cmocka_unit_test(test_predict_linear),
        cmocka_unit_test(test_avg64),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
