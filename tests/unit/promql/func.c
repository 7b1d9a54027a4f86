/* tests/unit/promql/func.c -- the numeric cores of PromQL's functions,
 * aggregations and operators (src/promql/func.c, func_range.c,
 * func_quantile.c, func_date.c).
 *
 * Expected values come from three places:
 *  1. Prometheus 2.42's own test scripts (promql/testdata/functions.test,
 *     histograms.test): the windows are rebuilt here sample by sample and
 *     the numbers asserted with the runner's 1e-6 relative tolerance, or
 *     exactly where the arithmetic is exact;
 *  2. the 2.42 binary (promtool test rules), for the cases its scripts do
 *     not cover and where the order of operations shows: Kahan sums in
 *     sum/avg/stdvar_over_time and the linear regression, none in the
 *     aggregations, Go's amd64 Log on subnormals, Go's calendar on NaN;
 *     these are asserted to the bit;
 *  3. Go's math package special-case tables (Pow, Max, Min, Log2/Log10).
 * Label functions are tested in tests/unit/promql/func_label.c.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "base/err.h"
#include "promql/func.h"

#define MIN 60000 /* one minute in ms */

/* Bitwise equality, NaN equal to NaN (any payload). */
static int same(double a, double b) {
    if (isnan(a) || isnan(b)) return isnan(a) && isnan(b);
    return a == b && signbit(a) == signbit(b);
}

#define assert_same(got, want)                                                                               \
    do {                                                                                                     \
        double g_ = (got), w_ = (want);                                                                      \
        if (!same(g_, w_)) fail_msg("%s: got %.17g, want %.17g", #got, g_, w_);                              \
    } while (0)

/* The 2.42 test runner's comparison: relative 1e-6, NaN == NaN. */
#define assert_near(got, want)                                                                               \
    do {                                                                                                     \
        double g_ = (got), w_ = (want);                                                                      \
        int ok_ = isnan(w_) ? isnan(g_) : (g_ == w_ || fabs(g_ - w_) <= 1e-6 * fabs(w_));                    \
        if (!ok_) fail_msg("%s: got %.17g, want %.17g", #got, g_, w_);                                       \
    } while (0)

/* A series sampled every step_ms from 0: `a+bxN` as the test scripts
 * write it, N+1 values. */
typedef struct series {
    int64_t t[4096];
    double v[4096];
    size_t n;
} series;

static void load(series *s, int64_t step_ms, const double *vals, size_t n) {
    s->n = 0;
    for (size_t i = 0; i < n; i++) {
        s->t[s->n] = (int64_t)i * step_ms;
        s->v[s->n] = vals[i];
        s->n++;
    }
}

static void load_expand(series *s, int64_t step_ms, double a, double b, size_t times) {
    double vals[4096];
    for (size_t i = 0; i <= times; i++) vals[i] = a + b * (double)i;
    load(s, step_ms, vals, times + 1);
}

/* Evaluates fn over the samples of s in [eval - off - range, eval - off]
 * (2.42's windows are closed on both ends). Returns what pq_fn_range
 * returns; *ret is NaN when there is no result. */
static int eval_range(pq_func_id fn, const series *s, int64_t eval_ms, int64_t range_ms, int64_t off_ms,
                      const double *args, size_t nargs, double *ret) {
    int64_t start = eval_ms - off_ms - range_ms, end = eval_ms - off_ms;
    size_t lo = 0, hi;
    while (lo < s->n && s->t[lo] < start) lo++;
    hi = lo;
    while (hi < s->n && s->t[hi] <= end) hi++;
    *ret = NAN;
    return pq_fn_range(fn, s->t + lo, s->v + lo, hi - lo, start, end, eval_ms, args, nargs, ret);
}

static double range1(pq_func_id fn, const series *s, int64_t eval_ms, int64_t range_ms, int64_t off_ms,
                     const double *args, size_t nargs) {
    double r;
    int rc = eval_range(fn, s, eval_ms, range_ms, off_ms, args, nargs, &r);
    if (rc != 1)
        fail_msg("function %d at %lld over %lld ms: no result (%d)", (int)fn, (long long)eval_ms,
                 (long long)range_ms, rc);
    return r;
}

/* ---- rate, increase, delta, irate, idelta ------------------------------ */

static void test_rate_functions_test(void **state) {
    (void)state;
    static series s;
    /* increase(http_requests[50m]) at 50m: 0+10x10 and 0+10x5 0+10x5 */
    load_expand(&s, 5 * MIN, 0, 10, 10);
    assert_near(range1(PQ_F_INCREASE, &s, 50 * MIN, 50 * MIN, 0, NULL, 0), 100);
    assert_near(range1(PQ_F_INCREASE, &s, 50 * MIN, 100 * MIN, 0, NULL, 0), 100);
    double bar[] = {0, 10, 20, 30, 40, 50, 0, 10, 20, 30, 40, 50};
    load(&s, 5 * MIN, bar, 12);
    assert_near(range1(PQ_F_INCREASE, &s, 50 * MIN, 50 * MIN, 0, NULL, 0), 90);
    assert_near(range1(PQ_F_INCREASE, &s, 50 * MIN, 100 * MIN, 0, NULL, 0), 90);

    /* 3 2 is a reset, counted as 3 0 1 2 */
    double reset[] = {0, 1, 2, 3, 2, 3, 4};
    load(&s, 5 * MIN, reset, 7);
    assert_near(range1(PQ_F_INCREASE, &s, 30 * MIN, 30 * MIN, 0, NULL, 0), 7);

    /* testcounter_reset_middle 0+10x4 0+10x5 */
    double middle[] = {0, 10, 20, 30, 40, 0, 10, 20, 30, 40, 50};
    load(&s, 5 * MIN, middle, 11);
    assert_near(range1(PQ_F_RATE, &s, 50 * MIN, 50 * MIN, 0, NULL, 0), 0.03);
    /* testcounter_reset_end 0+10x9 0 10: a reset at the window's end */
    double end[] = {0, 10, 20, 30, 40, 50, 60, 70, 80, 90, 0, 10};
    load(&s, 5 * MIN, end, 12);
    assert_near(range1(PQ_F_RATE, &s, 50 * MIN, 5 * MIN, 0, NULL, 0), 0);

    /* calculate_rate_window 0+80x10, and the offset cases */
    load_expand(&s, 5 * MIN, 0, 80, 10);
    assert_near(range1(PQ_F_RATE, &s, 50 * MIN, 50 * MIN, 0, NULL, 0), 0.26666666666666666);
    load_expand(&s, 5 * MIN, 0, 10, 10);
    assert_near(range1(PQ_F_RATE, &s, 50 * MIN, 10 * MIN, 5 * MIN, NULL, 0), 0.03333333333333333);
    load_expand(&s, 5 * MIN, 0, 20, 10);
    assert_near(range1(PQ_F_RATE, &s, 50 * MIN, 10 * MIN, 5 * MIN, NULL, 0), 0.06666666666666667);

    /* zero cutoff for left-side extrapolation: load 4m, N+240x10 */
    static const double at10[] = {0.5, 0.55, 0.6, 0.65, 0.7, 0.6};
    for (int k = 0; k < 6; k++) {
        load_expand(&s, 4 * MIN, 60.0 * k, 240, 10);
        assert_near(range1(PQ_F_RATE, &s, 10 * MIN, 20 * MIN, 0, NULL, 0), at10[k]);
        assert_near(range1(PQ_F_RATE, &s, 50 * MIN, 20 * MIN, 0, NULL, 0), 0.6);
    }

    /* irate: 0+10x10 and a reset at 30m */
    load_expand(&s, 5 * MIN, 0, 10, 10);
    assert_near(range1(PQ_F_IRATE, &s, 50 * MIN, 50 * MIN, 0, NULL, 0), .03333333333333333333);
    load(&s, 5 * MIN, bar, 12);
    assert_near(range1(PQ_F_IRATE, &s, 50 * MIN, 50 * MIN, 0, NULL, 0), .03333333333333333333);
    assert_near(range1(PQ_F_IRATE, &s, 30 * MIN, 50 * MIN, 0, NULL, 0), 0);

    /* delta and idelta */
    double up[] = {0, 50, 100, 150, 200}, down[] = {200, 150, 100, 50, 0};
    load(&s, 5 * MIN, up, 5);
    assert_near(range1(PQ_F_DELTA, &s, 20 * MIN, 20 * MIN, 0, NULL, 0), 200);
    load(&s, 5 * MIN, down, 5);
    assert_near(range1(PQ_F_DELTA, &s, 20 * MIN, 20 * MIN, 0, NULL, 0), -200);
    double i1[] = {0, 50, 100, 150}, i2[] = {0, 50, 100, 50};
    load(&s, 5 * MIN, i1, 4);
    assert_near(range1(PQ_F_IDELTA, &s, 20 * MIN, 20 * MIN, 0, NULL, 0), 50);
    load(&s, 5 * MIN, i2, 4);
    assert_near(range1(PQ_F_IDELTA, &s, 20 * MIN, 20 * MIN, 0, NULL, 0), -50);
}

/* The extrapolation by hand, including the rules' order: the zero point
 * clamps durationToStart before the 1.1 threshold is applied. */
static void test_rate_extrapolation(void **state) {
    (void)state;
    /* samples at 10s..50s every 10s, window [0, 60s] */
    int64_t t[] = {10000, 20000, 30000, 40000, 50000};
    double v[] = {5, 15, 25, 35, 45};
    double r;
    /* delta: 40 over 40s, extended by 10s on each side: 40 * 60/40 */
    assert_int_equal(pq_fn_range(PQ_F_DELTA, t, v, 5, 0, 60000, 60000, NULL, 0, &r), 1);
    assert_same(r, 40.0 * (60.0 / 40.0));
    /* increase: the zero point (5 at slope 1/s) is 5s before the first
     * sample, closer than the 10s to the window start */
    assert_int_equal(pq_fn_range(PQ_F_INCREASE, t, v, 5, 0, 60000, 60000, NULL, 0, &r), 1);
    assert_same(r, 40.0 * ((40.0 + 5.0 + 10.0) / 40.0));
    /* rate divides the factor by the range in seconds */
    assert_int_equal(pq_fn_range(PQ_F_RATE, t, v, 5, 0, 60000, 60000, NULL, 0, &r), 1);
    assert_same(r, 40.0 * ((40.0 + 5.0 + 10.0) / 40.0 / 60.0));
    /* 11.5s from the start is over 1.1 spacings: half a spacing there */
    assert_int_equal(pq_fn_range(PQ_F_DELTA, t, v, 5, -1500, 60000, 60000, NULL, 0, &r), 1);
    assert_same(r, 40.0 * ((40.0 + 5.0 + 10.0) / 40.0));
    /* too far from the edges (>= 1.1 * 10s): only half a spacing */
    assert_int_equal(pq_fn_range(PQ_F_DELTA, t, v, 5, -20000, 80000, 80000, NULL, 0, &r), 1);
    assert_same(r, 40.0 * ((40.0 + 5.0 + 5.0) / 40.0));
    /* a counter starting negative does not use the zero point */
    double neg[] = {-5, 5, 15, 25, 35};
    assert_int_equal(pq_fn_range(PQ_F_INCREASE, t, neg, 5, 0, 60000, 60000, NULL, 0, &r), 1);
    assert_same(r, 40.0 * ((40.0 + 10.0 + 10.0) / 40.0));
    /* a range that is not whole seconds: Go's Duration.Seconds() */
    assert_int_equal(pq_fn_range(PQ_F_RATE, t, v, 5, -1, 60000, 60000, NULL, 0, &r), 1);
    assert_same(r, 40.0 * ((40.0 + 5.0 + 10.0) / 40.0 / (60.0 + 1000000.0 / 1e9)));

    /* 1.118s is 1.1179999999999999 as Go's Duration.Seconds() sums it */
    int64_t ts[] = {0, 1118};
    double vs[] = {0, 1.118};
    assert_int_equal(pq_fn_range(PQ_F_RATE, ts, vs, 2, 0, 1118, 1118, NULL, 0, &r), 1);
    assert_same(r, 1.118 / 1.1179999999999999);
    /* fewer than two samples: no result; irate over equal timestamps:
     * no result */
    assert_int_equal(pq_fn_range(PQ_F_RATE, t, v, 1, 0, 60000, 60000, NULL, 0, &r), 0);
    assert_int_equal(pq_fn_range(PQ_F_DELTA, t, v, 0, 0, 60000, 60000, NULL, 0, &r), 0);
    assert_int_equal(pq_fn_range(PQ_F_IDELTA, t, v, 1, 0, 60000, 60000, NULL, 0, &r), 0);
    int64_t same_t[] = {1000, 1000};
    assert_int_equal(pq_fn_range(PQ_F_IRATE, same_t, v, 2, 0, 60000, 60000, NULL, 0, &r), 0);
    /* irate: per second over the last interval; a drop is a reset */
    double drop[] = {100, 30};
    int64_t t2[] = {10000, 12500};
    assert_int_equal(pq_fn_range(PQ_F_IRATE, t2, drop, 2, 0, 60000, 60000, NULL, 0, &r), 1);
    assert_same(r, 30 / 2.5);
    assert_int_equal(pq_fn_range(PQ_F_IDELTA, t2, drop, 2, 0, 60000, 60000, NULL, 0, &r), 1);
    assert_same(r, -70);
}

/* ---- deriv, predict_linear, holt_winters -------------------------------- */

static void test_regression(void **state) {
    (void)state;
    static series s;
    double middle[] = {0, 10, 20, 30, 40, 0, 10, 20, 30, 40, 50};
    load(&s, 5 * MIN, middle, 11);
    double a3600 = 3600;
    assert_near(range1(PQ_F_DERIV, &s, 50 * MIN, 100 * MIN, 0, NULL, 0), 0.010606060606060607);
    assert_near(range1(PQ_F_PREDICT_LINEAR, &s, 50 * MIN, 100 * MIN, 0, &a3600, 1), 76.81818181818181);
    /* predict_linear(x[100m] @ 3000, 3600) at 10m and 70m: the window
     * ends at 3000s, the intercept is at the evaluation time */
    double r;
    assert_int_equal(pq_fn_range(PQ_F_PREDICT_LINEAR, s.t, s.v, s.n, 3000000 - 100 * MIN, 3000000, 10 * MIN,
                                 &a3600, 1, &r),
                     1);
    assert_near(r, 51.36363636363637);
    assert_int_equal(pq_fn_range(PQ_F_PREDICT_LINEAR, s.t, s.v, s.n, 3000000 - 100 * MIN, 3000000, 70 * MIN,
                                 &a3600, 1, &r),
                     1);
    assert_near(r, 89.54545454545455);

    /* deriv equals rate for 0+80x10 */
    load_expand(&s, 5 * MIN, 0, 80, 10);
    assert_near(range1(PQ_F_DERIV, &s, 50 * MIN, 50 * MIN, 0, NULL, 0), 0.26666666666666666);

    /* the 2.42 binary: compensated sums, samples every minute */
    static const double big[] = {1e16, 1, -1e16, 1};
    load(&s, MIN, big, 4);
    double a100 = 100;
    assert_same(range1(PQ_F_DERIV, &s, 6 * MIN, 10 * MIN, 0, NULL, 0), -6.6666666666666664E+13);
    assert_same(range1(PQ_F_PREDICT_LINEAR, &s, 6 * MIN, 10 * MIN, 0, &a100, 1), -2.4666666666666664E+16);
    /* constant values: slope 0 exactly and the value itself */
    static const double c[] = {0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1};
    load(&s, MIN, c, 7);
    assert_same(range1(PQ_F_DERIV, &s, 6 * MIN, 10 * MIN, 0, NULL, 0), 0);
    assert_same(range1(PQ_F_PREDICT_LINEAR, &s, 6 * MIN, 10 * MIN, 0, &a100, 1), 0.1);
    static const double mixed[] = {0.3, 1e-3, 7.77, 123456.789, 5, 6};
    load(&s, MIN, mixed, 6);
    assert_same(range1(PQ_F_DERIV, &s, 6 * MIN, 10 * MIN, 0, NULL, 0), 5.8805960000000006E+01);
    assert_same(range1(PQ_F_PREDICT_LINEAR, &s, 6 * MIN, 10 * MIN, 0, &a100, 1), 3.8809157599999984E+04);
    /* constant infinite values: NaN */
    static const double inf[] = {INFINITY, INFINITY};
    load(&s, MIN, inf, 2);
    assert_same(range1(PQ_F_DERIV, &s, 1 * MIN, 10 * MIN, 0, NULL, 0), NAN);
    /* one sample: nothing */
    assert_int_equal(eval_range(PQ_F_DERIV, &s, 0, 10 * MIN, 0, NULL, 0, &r), 0);
    assert_int_equal(eval_range(PQ_F_PREDICT_LINEAR, &s, 0, 10 * MIN, 0, &a100, 1, &r), 0);
}

static void test_holt_winters(void **state) {
    (void)state;
    static series s;
    double args[] = {0.01, 0.1};
    /* positive and negative trends at 8000s over [1m], samples every 10s */
    load_expand(&s, 10000, 0, 10, 1000);
    assert_near(range1(PQ_F_HOLT_WINTERS, &s, 8000000, MIN, 0, args, 2), 8000);
    load_expand(&s, 10000, 0, 40, 2000);
    assert_near(range1(PQ_F_HOLT_WINTERS, &s, 8000000, MIN, 0, args, 2), 32000);
    load_expand(&s, 10000, 8000, -10, 1000);
    assert_near(range1(PQ_F_HOLT_WINTERS, &s, 8000000, MIN, 0, args, 2), 0);
    load_expand(&s, 10000, 0, -20, 1000);
    assert_near(range1(PQ_F_HOLT_WINTERS, &s, 8000000, MIN, 0, args, 2), -16000);
    /* by hand: s1 = x0, b = x1 - x0, then the recurrences */
    int64_t t[] = {0, 1000, 2000};
    double v[] = {1, 3, 4}, r;
    double hw[] = {0.5, 0.5};
    assert_int_equal(pq_fn_range(PQ_F_HOLT_WINTERS, t, v, 3, 0, 2000, 2000, hw, 2, &r), 1);
    /* i=1: b=2, s1 = .5*3 + .5*(1+2) = 3; i=2: b = .5*(3-1) + .5*2 = 2,
     * s1 = .5*4 + .5*(3+2) = 4.5 */
    assert_same(r, 4.5);
    assert_int_equal(pq_fn_range(PQ_F_HOLT_WINTERS, t, v, 1, 0, 2000, 2000, hw, 2, &r), 0);

    char err[128];
    double bad_sf[] = {1, 0.5}, bad_tf[] = {0.5, -2}, inf_sf[] = {INFINITY, 0.5}, nan_sf[] = {NAN, 0.5};
    assert_int_equal(pq_fn_range_check(PQ_F_HOLT_WINTERS, hw, 2, err, sizeof err), 0);
    assert_int_equal(pq_fn_range_check(PQ_F_HOLT_WINTERS, bad_sf, 2, err, sizeof err), BASE_E_INVAL);
    assert_string_equal(err, "invalid smoothing factor. Expected: 0 < sf < 1, got: 1.000000");
    assert_int_equal(pq_fn_range_check(PQ_F_HOLT_WINTERS, bad_tf, 2, err, sizeof err), BASE_E_INVAL);
    assert_string_equal(err, "invalid trend factor. Expected: 0 < tf < 1, got: -2.000000");
    assert_int_equal(pq_fn_range_check(PQ_F_HOLT_WINTERS, inf_sf, 2, err, sizeof err), BASE_E_INVAL);
    assert_string_equal(err, "invalid smoothing factor. Expected: 0 < sf < 1, got: +Inf");
    /* NaN passes Go's check (every comparison is false) */
    assert_int_equal(pq_fn_range_check(PQ_F_HOLT_WINTERS, nan_sf, 2, err, sizeof err), 0);
    assert_int_equal(pq_fn_range_check(PQ_F_RATE, bad_sf, 2, err, sizeof err), 0);
}

/* ---- resets, changes, *_over_time ---------------------------------------- */

static void test_resets_changes(void **state) {
    (void)state;
    static series s;
    double foo[] = {1, 2, 3, 0, 1, 0, 0, 1, 2, 0};
    double bar[] = {1, 2, 3, 4, 5, 1, 2, 3, 4, 5};
    double biz[] = {0, 0, 0, 0, 0, 1, 1, 1, 1, 1};
    struct {
        const double *v;
        double resets[4], changes[4];
    } cases[] = {
        {foo, {0, 1, 2, 3}, {0, 3, 4, 8}},
        {bar, {0, 0, 1, 1}, {0, 3, 5, 9}},
        {biz, {0, 0, 0, 0}, {0, 0, 1, 1}},
    };
    int64_t ranges[] = {5 * MIN, 20 * MIN, 30 * MIN, 50 * MIN};
    for (size_t c = 0; c < 3; c++) {
        load(&s, 5 * MIN, cases[c].v, 10);
        for (size_t r = 0; r < 4; r++) {
            assert_same(range1(PQ_F_RESETS, &s, 50 * MIN, ranges[r], 0, NULL, 0), cases[c].resets[r]);
            assert_same(range1(PQ_F_CHANGES, &s, 50 * MIN, ranges[r], 0, NULL, 0), cases[c].changes[r]);
        }
    }
    /* NaN to NaN is no change; 0 NaN 0 is two */
    double nans[] = {NAN, NAN, NAN}, c2[] = {0, NAN, 0};
    load(&s, 5 * MIN, nans, 3);
    assert_same(range1(PQ_F_CHANGES, &s, 15 * MIN, 15 * MIN, 0, NULL, 0), 0);
    load(&s, 5 * MIN, c2, 3);
    assert_same(range1(PQ_F_CHANGES, &s, 15 * MIN, 15 * MIN, 0, NULL, 0), 2);
    /* a single sample: zero */
    assert_same(range1(PQ_F_RESETS, &s, 0, MIN, 0, NULL, 0), 0);
}

static void test_avg_over_time(void **state) {
    (void)state;
    static series s;
    const double big = 9.988465674311579e+307;
    static const struct {
        double v[5];
        size_t n;
        double avg, sum_div_count;
    } cases[] = {
        {{1, 2, 3, 4, 5}, 5, 3, 3},
        {{1, 2, 3, 4, INFINITY}, 5, INFINITY, INFINITY},
        {{1, 2, 3, 4, -INFINITY}, 5, -INFINITY, -INFINITY},
        {{1, 2, 3, INFINITY, -INFINITY}, 5, NAN, NAN},
        {{INFINITY, 0, INFINITY}, 3, INFINITY, INFINITY},
        {{INFINITY, INFINITY, INFINITY, -INFINITY}, 4, NAN, NAN},
        {{1, 2, 3, -INFINITY, -INFINITY}, 5, -INFINITY, -INFINITY},
        {{-INFINITY, 0, -INFINITY}, 3, -INFINITY, -INFINITY},
        {{-INFINITY, -INFINITY, -INFINITY, INFINITY}, 4, NAN, NAN},
        {{1, 2, -INFINITY, -INFINITY, INFINITY}, 5, NAN, NAN},
        {{big, big}, 2, big, INFINITY},
        {{-big, -big, -big}, 3, -big, -INFINITY},
        {{-big, big}, 2, 0, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        load(&s, 10000, cases[i].v, cases[i].n);
        double avg = range1(PQ_F_AVG_OVER_TIME, &s, MIN, MIN, 0, NULL, 0);
        double sum = range1(PQ_F_SUM_OVER_TIME, &s, MIN, MIN, 0, NULL, 0);
        double cnt = range1(PQ_F_COUNT_OVER_TIME, &s, MIN, MIN, 0, NULL, 0);
        if (!same(avg, cases[i].avg) && !(fabs(avg - cases[i].avg) <= 1e-6 * fabs(cases[i].avg)))
            fail_msg("case %zu: avg_over_time %.17g, want %.17g", i, avg, cases[i].avg);
        assert_near(sum / cnt, cases[i].sum_div_count);
    }
    /* compensated sums, as the 2.42 binary computes them */
    static const double kahan[] = {1, 1e100, 1, -1e100};
    load(&s, MIN, kahan, 4);
    assert_same(range1(PQ_F_SUM_OVER_TIME, &s, 6 * MIN, 10 * MIN, 0, NULL, 0), 2);
    assert_same(range1(PQ_F_AVG_OVER_TIME, &s, 6 * MIN, 10 * MIN, 0, NULL, 0), -2.4283361152821613E+83);
    static const double k2[] = {1e16, 1, -1e16, 1};
    load(&s, MIN, k2, 4);
    assert_same(range1(PQ_F_SUM_OVER_TIME, &s, 6 * MIN, 10 * MIN, 0, NULL, 0), 2);
    assert_same(range1(PQ_F_AVG_OVER_TIME, &s, 6 * MIN, 10 * MIN, 0, NULL, 0), 0.25);
    static const double tenths[] = {0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1};
    load(&s, MIN, tenths, 7);
    assert_same(range1(PQ_F_SUM_OVER_TIME, &s, 6 * MIN, 10 * MIN, 0, NULL, 0), 7.000000000000001E-01);
    assert_same(range1(PQ_F_AVG_OVER_TIME, &s, 6 * MIN, 10 * MIN, 0, NULL, 0), 0.1);
}

static void test_over_time(void **state) {
    (void)state;
    static series s;
    /* stddev/stdvar_over_time: 0 8 8 2 3 and #4927 */
    double sd[] = {0, 8, 8, 2, 3};
    load(&s, 10000, sd, 5);
    assert_near(range1(PQ_F_STDVAR_OVER_TIME, &s, MIN, MIN, 0, NULL, 0), 10.56);
    assert_near(range1(PQ_F_STDDEV_OVER_TIME, &s, MIN, MIN, 0, NULL, 0), 3.249615);
    double same3[] = {1.5990505637277868, 1.5990505637277868, 1.5990505637277868};
    load(&s, 10000, same3, 3);
    assert_same(range1(PQ_F_STDVAR_OVER_TIME, &s, MIN, MIN, 0, NULL, 0), 0);
    assert_same(range1(PQ_F_STDDEV_OVER_TIME, &s, MIN, MIN, 0, NULL, 0), 0);
    /* the 2.42 binary: compensated mean and sum of squares (without
     * compensation this is 2347453760200726) */
    static const double kv[] = {
        100000000.76370099, 0.6768485398499744, 0.9221885624698875, 0.0,
        -393262.9781341648, 0.6647435216084674, 100000000.1636983,  100000000.70338209};
    load(&s, MIN, kv, 8);
    assert_same(range1(PQ_F_STDVAR_OVER_TIME, &s, 7 * MIN, 10 * MIN, 0, NULL, 0), 2.3474537602007265E+15);
    static const double kv2[] = {100000000.22059974, 0.3948980098582996, 10.0,
                                 0.8585144063565593, 487684.2373342423,  181167.9425748305};
    load(&s, MIN, kv2, 6);
    assert_same(range1(PQ_F_STDVAR_OVER_TIME, &s, 7 * MIN, 10 * MIN, 0, NULL, 0), 1.3852056694939188E+15);

    /* min/max: a later number replaces NaN; NaN never replaces a number */
    double mm[] = {NAN, 3, NAN, -1, 7, NAN};
    load(&s, 10000, mm, 6);
    assert_same(range1(PQ_F_MIN_OVER_TIME, &s, MIN, MIN, 0, NULL, 0), -1);
    assert_same(range1(PQ_F_MAX_OVER_TIME, &s, MIN, MIN, 0, NULL, 0), 7);
    assert_same(range1(PQ_F_LAST_OVER_TIME, &s, MIN, MIN, 0, NULL, 0), NAN);
    assert_same(range1(PQ_F_COUNT_OVER_TIME, &s, MIN, MIN, 0, NULL, 0), 6);
    assert_same(range1(PQ_F_PRESENT_OVER_TIME, &s, MIN, MIN, 0, NULL, 0), 1);
    double allnan[] = {NAN, NAN};
    load(&s, 10000, allnan, 2);
    assert_same(range1(PQ_F_MAX_OVER_TIME, &s, MIN, MIN, 0, NULL, 0), NAN);
    assert_same(range1(PQ_F_SUM_OVER_TIME, &s, MIN, MIN, 0, NULL, 0), NAN);

    /* quantile_over_time: two, three and uneven samples */
    double two[] = {0, 1}, three[] = {0, 1, 2}, uneven[] = {0, 1, 4};
    static const struct {
        double q, two, three, uneven;
    } qs[] = {
        {0, 0, 0, 0},
        {0.5, 0.5, 1, 1},
        {0.75, 0.75, 1.5, 2.5},
        {0.8, 0.8, 1.6, 2.8},
        {1, 1, 2, 4},
        {-1, -INFINITY, -INFINITY, -INFINITY},
        {2, INFINITY, INFINITY, INFINITY},
    };
    for (size_t i = 0; i < sizeof qs / sizeof qs[0]; i++) {
        load(&s, 10000, two, 2);
        assert_near(range1(PQ_F_QUANTILE_OVER_TIME, &s, MIN, MIN, 0, &qs[i].q, 1), qs[i].two);
        load(&s, 10000, three, 3);
        assert_near(range1(PQ_F_QUANTILE_OVER_TIME, &s, MIN, MIN, 0, &qs[i].q, 1), qs[i].three);
        load(&s, 10000, uneven, 3);
        assert_near(range1(PQ_F_QUANTILE_OVER_TIME, &s, MIN, MIN, 0, &qs[i].q, 1), qs[i].uneven);
    }
    /* the input is not reordered (the function sorts a copy) */
    int64_t t[] = {0, 1, 2};
    double v[] = {3, 1, 2}, r, q = 0.5;
    assert_int_equal(pq_fn_range(PQ_F_QUANTILE_OVER_TIME, t, v, 3, 0, 2, 2, &q, 1, &r), 1);
    assert_same(r, 2);
    assert_same(v[0], 3);
    /* an empty window and the evaluator's functions give nothing */
    assert_int_equal(pq_fn_range(PQ_F_SUM_OVER_TIME, t, v, 0, 0, 2, 2, NULL, 0, &r), 0);
    assert_int_equal(pq_fn_range(PQ_F_ABSENT_OVER_TIME, t, v, 3, 0, 2, 2, NULL, 0, &r), 0);
    assert_int_equal(pq_fn_range(PQ_F_ABS, t, v, 3, 0, 2, 2, NULL, 0, &r), 0);
}

/* ---- quantiles ---------------------------------------------------------------- */

static void test_quantile(void **state) {
    (void)state;
    double v[] = {4, NAN, 1, 2};
    assert_same(pq_quantile(0, v, 4), NAN); /* NaN sorts first */
    double w[] = {4, NAN, 1, 2};
    assert_same(pq_quantile(1, w, 4), 4);
    double x[] = {4, NAN, 1, 2};
    /* rank 1.5 between 1 and 2 */
    assert_same(pq_quantile(0.5, x, 4), 1.5);
    assert_same(pq_quantile(NAN, x, 4), NAN);
    assert_same(pq_quantile(-0.1, x, 4), -INFINITY);
    assert_same(pq_quantile(1.1, x, 4), INFINITY);
    assert_same(pq_quantile(0.5, x, 0), NAN);
    double one[] = {42};
    assert_same(pq_quantile(0.3, one, 1), 42);
    double y[] = {10, 0, 5, 20};
    /* q = 0.9: rank 2.7 between 10 and 20, weight 0.7 (as Go rounds it) */
    double rank = 0.9 * 3, weight = rank - floor(rank);
    assert_same(pq_quantile(0.9, y, 4), 10 * (1 - weight) + 20 * weight);
}

static double hq(double q, const pq_bucket *in, size_t n) {
    pq_bucket b[16];
    memcpy(b, in, n * sizeof *b);
    return pq_bucket_quantile(q, b, n);
}

static void test_bucket_quantile(void **state) {
    (void)state;
    /* testhistogram_bucket at 50m (10 increments) */
    static const pq_bucket pos[] = {{0.1, 50}, {.2, 70}, {1e0, 110}, {INFINITY, 120}};
    static const pq_bucket neg[] = {{INFINITY, 30}, {-0.1, 20}, {0.3, 20}, {-.2, 10}}; /* unsorted */
    assert_same(hq(-0.1, pos, 4), -INFINITY);
    assert_same(hq(1.01, pos, 4), INFINITY);
    assert_same(hq(NAN, pos, 4), NAN);
    assert_near(hq(0, pos, 4), 0);
    assert_near(hq(0, neg, 4), -0.2);
    assert_near(hq(1, pos, 4), 1);
    assert_near(hq(1, neg, 4), 0.3);
    assert_near(hq(0.2, pos, 4), 0.048);
    assert_near(hq(0.2, neg, 4), -0.2);
    assert_near(hq(0.5, pos, 4), 0.15);
    assert_near(hq(0.5, neg, 4), -0.15);
    assert_near(hq(0.8, pos, 4), 0.72);
    assert_near(hq(0.8, neg, 4), 0.3);
    /* testhistogram2 at 7m: the middles of the buckets */
    static const pq_bucket h2[] = {{0, 0}, {2, 1}, {4, 2}, {6, 3}, {INFINITY, 3}};
    assert_near(hq(1. / 6., h2, 5), 1);
    assert_near(hq(0.5, h2, 5), 3);
    assert_near(hq(5. / 6., h2, 5), 5);
    /* equal bounds (le="0.2", "2e-1", "2.0e-1") are merged */
    static const pq_bucket mixed[] = {{0.1, 10}, {0.2, 10}, {0.2, 10}, {0.2, 10}, {INFINITY, 40}};
    assert_near(hq(0.5, mixed, 5), 0.15);
    static const pq_bucket infs[] = {{INFINITY, 0}, {INFINITY, 0}};
    assert_same(hq(0.5, infs, 2), NAN); /* one bucket after merging */
    /* non-monotonic counts are raised to the envelope, the +Inf bucket
     * included (the 2.42 binary gives 0.5 here) */
    static const pq_bucket nonmono[] = {{1, 10}, {2, 5}, {INFINITY, 8}};
    assert_same(hq(0.5, nonmono, 3), 0.5);
    /* no +Inf bucket, no observations, fewer than two buckets: NaN */
    static const pq_bucket noinf[] = {{1, 1}, {2, 2}};
    assert_same(hq(0.5, noinf, 2), NAN);
    static const pq_bucket zero[] = {{-1, 0}, {INFINITY, 0}};
    assert_same(hq(0.5, zero, 2), NAN);
    static const pq_bucket single[] = {{INFINITY, 5}};
    assert_same(hq(0.5, single, 1), NAN);
    assert_same(hq(0.5, single, 0), NAN);
    /* the rank in the +Inf bucket: the second-highest bound */
    static const pq_bucket top[] = {{1, 1}, {5, 2}, {INFINITY, 10}};
    assert_same(hq(0.9, top, 3), 5);
}

/* ---- aggregations -------------------------------------------------------------- */

static double agg(pq_aggop op, const double *v, size_t n) {
    pq_agg_acc a;
    pq_agg_init(op, &a, v[0]);
    for (size_t i = 1; i < n; i++) pq_agg_add(op, &a, v[i]);
    return pq_agg_result(op, &a);
}

static void test_aggregations(void **state) {
    (void)state;
    double v[] = {1, 2, 3, 4};
    assert_same(agg(PQ_AGG_SUM, v, 4), 10);
    assert_same(agg(PQ_AGG_AVG, v, 4), 2.5);
    assert_same(agg(PQ_AGG_COUNT, v, 4), 4);
    assert_same(agg(PQ_AGG_COUNT_VALUES, v, 4), 4);
    assert_same(agg(PQ_AGG_MIN, v, 4), 1);
    assert_same(agg(PQ_AGG_MAX, v, 4), 4);
    assert_same(agg(PQ_AGG_GROUP, v, 4), 1);
    assert_same(agg(PQ_AGG_STDVAR, v, 4), 1.25);
    assert_same(agg(PQ_AGG_STDDEV, v, 4), sqrt(1.25));
    /* one sample */
    assert_same(agg(PQ_AGG_STDDEV, v, 1), 0);
    assert_same(agg(PQ_AGG_AVG, v + 2, 1), 3);
    assert_same(agg(PQ_AGG_GROUP, v + 2, 1), 1);
    /* no compensation in the aggregations (the 2.42 binary: 0, 0) */
    double k[] = {1, 1e100, 1, -1e100};
    assert_same(agg(PQ_AGG_SUM, k, 4), 0);
    assert_same(agg(PQ_AGG_AVG, k, 4), 0);
    assert_same(agg(PQ_AGG_STDDEV, k, 4), 7.071067811865476E+99);
    /* Welford without compensation: stdvar_over_time of these gives
     * 2.3474537602007265E+15 */
    static const double kv[] = {
        100000000.76370099, 0.6768485398499744, 0.9221885624698875, 0.0,
        -393262.9781341648, 0.6647435216084674, 100000000.1636983,  100000000.70338209};
    assert_same(agg(PQ_AGG_STDVAR, kv, 8), 2347453760200726.0);
    /* min/max: NaN first is replaced, NaN later is ignored */
    double n1[] = {NAN, 5, NAN, 2};
    assert_same(agg(PQ_AGG_MIN, n1, 4), 2);
    assert_same(agg(PQ_AGG_MAX, n1, 4), 5);
    double n2[] = {NAN, NAN};
    assert_same(agg(PQ_AGG_MAX, n2, 2), NAN);
    assert_same(agg(PQ_AGG_SUM, n1, 4), NAN);
    /* avg with infinities: kept by finite values and the same sign, NaN
     * from the opposite sign or NaN */
    double i1[] = {INFINITY, 1, 2};
    assert_same(agg(PQ_AGG_AVG, i1, 3), INFINITY);
    double i2[] = {1, INFINITY, INFINITY};
    assert_same(agg(PQ_AGG_AVG, i2, 3), INFINITY);
    double i3[] = {-INFINITY, 1, INFINITY};
    assert_same(agg(PQ_AGG_AVG, i3, 3), NAN);
    double i4[] = {INFINITY, NAN};
    assert_same(agg(PQ_AGG_AVG, i4, 2), NAN);
    /* the incremental mean's rounding: x/2 - m/2 added to m */
    double m[] = {0.1, 0.7};
    assert_same(agg(PQ_AGG_AVG, m, 2), 0.1 + (0.7 / 2 - 0.1 / 2));
    double m3[] = {2.4, 5.4, 3.7}; /* (x - m) / n would give ...335 */
    assert_same(agg(PQ_AGG_AVG, m3, 3), 3.833333333333334);
    /* no overflow where the plain sum would */
    double big[] = {1.7e308, 1.7e308};
    assert_same(agg(PQ_AGG_AVG, big, 2), 1.7e308);
    assert_same(agg(PQ_AGG_SUM, big, 2), INFINITY);
}

/* ---- element-wise ------------------------------------------------------------------ */

static double elem(pq_func_id id, double v, const double *args, size_t nargs) {
    double r;
    if (pq_fn_elem(id, v, args, nargs, &r) != 1) fail_msg("function %d(%g) gave no result", (int)id, v);
    return r;
}

static void test_elementwise(void **state) {
    (void)state;
    double r;
    /* clamp family, functions.test */
    double lohi[] = {-25, 75}, mx = 75, mn = -25;
    assert_same(elem(PQ_F_CLAMP_MAX, -50, &mx, 1), -50);
    assert_same(elem(PQ_F_CLAMP_MAX, 100, &mx, 1), 75);
    assert_same(elem(PQ_F_CLAMP_MIN, -50, &mn, 1), -25);
    assert_same(elem(PQ_F_CLAMP, -50, lohi, 2), -25);
    assert_same(elem(PQ_F_CLAMP, 0, lohi, 2), 0);
    assert_same(elem(PQ_F_CLAMP, 100, lohi, 2), 75);
    double nanmax[] = {0, NAN}, nanmin[] = {NAN, 0}, inverted[] = {5, -5};
    assert_same(elem(PQ_F_CLAMP, -50, nanmax, 2), NAN);
    assert_same(elem(PQ_F_CLAMP, 100, nanmin, 2), NAN);
    assert_int_equal(pq_fn_elem(PQ_F_CLAMP, 1, inverted, 2, &r), 0);
    /* Go's Max/Min: +Inf beats NaN in Max, -Inf beats NaN in Min */
    double pinf = INFINITY, ninf = -INFINITY;
    assert_same(elem(PQ_F_CLAMP_MIN, NAN, &pinf, 1), INFINITY);
    assert_same(elem(PQ_F_CLAMP_MAX, NAN, &ninf, 1), -INFINITY);
    double zero = 0, nzero = -0.0;
    assert_same(elem(PQ_F_CLAMP_MIN, -0.0, &zero, 1), 0.0);
    assert_same(elem(PQ_F_CLAMP_MAX, 0.0, &nzero, 1), -0.0);

    /* sgn */
    assert_same(elem(PQ_F_SGN, -INFINITY, NULL, 0), -1);
    assert_same(elem(PQ_F_SGN, INFINITY, NULL, 0), 1);
    assert_same(elem(PQ_F_SGN, NAN, NULL, 0), NAN);
    assert_same(elem(PQ_F_SGN, -50, NULL, 0), -1);
    assert_same(elem(PQ_F_SGN, -0.0, NULL, 0), -0.0);

    /* round: ties up, via the inverse */
    assert_same(elem(PQ_F_ROUND, 2.5, NULL, 0), 3);
    assert_same(elem(PQ_F_ROUND, -2.5, NULL, 0), -2);
    double tenth = 0.1, five = 5;
    assert_same(elem(PQ_F_ROUND, 2.345, &tenth, 1), floor(2.345 * (1.0 / 0.1) + 0.5) / (1.0 / 0.1));
    assert_same(elem(PQ_F_ROUND, 12.5, &five, 1), 15);

    /* Go's Log on amd64: subnormals misread (the 2.42 binary's values);
     * Log10 is Log * (1/Ln10); Log2 exact on powers of two */
    assert_same(elem(PQ_F_LN, 1e-310, NULL, 0), -709.0850815488945);
    assert_same(elem(PQ_F_LOG10, 1e-310, NULL, 0), -307.9517381166022);
    assert_same(elem(PQ_F_LOG10, 1000, NULL, 0), 3);
    assert_same(elem(PQ_F_LOG10, 1e-300, NULL, 0), -300);
    assert_same(elem(PQ_F_LOG2, 1024, NULL, 0), 10);
    assert_same(elem(PQ_F_LOG2, 0.125, NULL, 0), -3);
    assert_same(elem(PQ_F_LN, 0, NULL, 0), -INFINITY);
    assert_same(elem(PQ_F_LN, -1, NULL, 0), NAN);
    assert_same(elem(PQ_F_LN, INFINITY, NULL, 0), INFINITY);
    assert_same(elem(PQ_F_LN, 1, NULL, 0), 0);
    assert_same(elem(PQ_F_LOG2, 0, NULL, 0), -INFINITY);

    /* the rest: libm where Go agrees */
    assert_same(elem(PQ_F_ABS, -0.0, NULL, 0), 0.0);
    assert_same(elem(PQ_F_CEIL, 1.2, NULL, 0), 2);
    assert_same(elem(PQ_F_FLOOR, -1.2, NULL, 0), -2);
    assert_same(elem(PQ_F_SQRT, -1, NULL, 0), NAN);
    assert_same(elem(PQ_F_EXP, -INFINITY, NULL, 0), 0);
    assert_same(elem(PQ_F_DEG, 3.141592653589793, NULL, 0), 180);
    assert_same(elem(PQ_F_RAD, 180, NULL, 0), 3.141592653589793);
    assert_same(elem(PQ_F_RAD, 1, NULL, 0), 1 * 3.141592653589793 / 180);
    assert_same(elem(PQ_F_ACOSH, 0.5, NULL, 0), NAN);
    assert_same(elem(PQ_F_ATANH, 1, NULL, 0), INFINITY);
    assert_int_equal(pq_fn_elem(PQ_F_TIMESTAMP, 1, NULL, 0, &r), 0);
}

static void test_dates(void **state) {
    (void)state;
    /* functions.test */
    assert_same(elem(PQ_F_YEAR, 0, NULL, 0), 1970);
    assert_same(elem(PQ_F_YEAR, 1136239445, NULL, 0), 2006);
    assert_same(elem(PQ_F_MONTH, 1136239445, NULL, 0), 1);
    assert_same(elem(PQ_F_DAY_OF_MONTH, 1136239445, NULL, 0), 2);
    assert_same(elem(PQ_F_DAY_OF_YEAR, 1136239445, NULL, 0), 2);
    assert_same(elem(PQ_F_DAY_OF_WEEK, 0, NULL, 0), 4);
    assert_same(elem(PQ_F_DAY_OF_WEEK, 1136239445, NULL, 0), 1);
    assert_same(elem(PQ_F_HOUR, 1136239445, NULL, 0), 22);
    assert_same(elem(PQ_F_MINUTE, 1136239445, NULL, 0), 4);
    assert_same(elem(PQ_F_YEAR, 1230767999, NULL, 0), 2008);
    assert_same(elem(PQ_F_YEAR, 1230768000, NULL, 0), 2009);
    assert_same(elem(PQ_F_MONTH, 1456790399, NULL, 0) + elem(PQ_F_DAY_OF_MONTH, 1456790399, NULL, 0) / 100,
                2.29);
    assert_same(elem(PQ_F_MONTH, 1456790400, NULL, 0) + elem(PQ_F_DAY_OF_MONTH, 1456790400, NULL, 0) / 100,
                3.01);
    assert_same(elem(PQ_F_DAY_OF_YEAR, 1483191420, NULL, 0), 366);
    assert_same(elem(PQ_F_DAY_OF_YEAR, 1672493820, NULL, 0), 365);
    assert_same(elem(PQ_F_DAYS_IN_MONTH, 1454284800, NULL, 0), 29);
    assert_same(elem(PQ_F_DAYS_IN_MONTH, 1485907200, NULL, 0), 28);
    assert_same(elem(PQ_F_DAYS_IN_MONTH, 0, NULL, 0), 31);
    /* negative seconds truncate toward zero: -1.5 is 23:59:59 Dec 31 1969 */
    assert_same(elem(PQ_F_YEAR, -1.5, NULL, 0), 1969);
    assert_same(elem(PQ_F_DAY_OF_WEEK, -1.5, NULL, 0), 3);
    assert_same(elem(PQ_F_MINUTE, -1.5, NULL, 0), 59);
    /* NaN and +-Inf are INT64_MIN seconds, as the 2.42 binary computes */
    static const double specials[] = {NAN, INFINITY, -INFINITY};
    for (size_t i = 0; i < 3; i++) {
        double v = specials[i];
        assert_same(elem(PQ_F_YEAR, v, NULL, 0), 292277026596.0);
        assert_same(elem(PQ_F_MONTH, v, NULL, 0), 12);
        assert_same(elem(PQ_F_DAY_OF_MONTH, v, NULL, 0), 4);
        assert_same(elem(PQ_F_DAY_OF_YEAR, v, NULL, 0), 339);
        assert_same(elem(PQ_F_DAY_OF_WEEK, v, NULL, 0), 0);
        assert_same(elem(PQ_F_HOUR, v, NULL, 0), 15);
        assert_same(elem(PQ_F_MINUTE, v, NULL, 0), 30);
        assert_same(elem(PQ_F_DAYS_IN_MONTH, v, NULL, 0), 31);
    }
    assert_same(elem(PQ_F_YEAR, 1e18, NULL, 0), 31688740476.0);
    assert_same(elem(PQ_F_MONTH, 1e18, NULL, 0), 10);
    assert_same(elem(PQ_F_DAY_OF_MONTH, 1e18, NULL, 0), 23);
    assert_same(elem(PQ_F_HOUR, 1e18, NULL, 0), 1);
    assert_same(elem(PQ_F_MINUTE, 1e18, NULL, 0), 46);
    /* every day of 2000..2100 against a plain calendar */
    int64_t secs = 946684800; /* 2000-01-01 */
    for (int y = 2000; y <= 2100; y++) {
        int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
        static const int mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
        int yday = 1;
        for (int m = 1; m <= 12; m++) {
            int dim = mdays[m - 1] + (m == 2 && leap);
            for (int d = 1; d <= dim; d++, yday++, secs += 86400) {
                double t = (double)(secs + 86399);
                if (elem(PQ_F_YEAR, t, NULL, 0) != y || elem(PQ_F_MONTH, t, NULL, 0) != m ||
                    elem(PQ_F_DAY_OF_MONTH, t, NULL, 0) != d || elem(PQ_F_DAY_OF_YEAR, t, NULL, 0) != yday ||
                    elem(PQ_F_DAYS_IN_MONTH, t, NULL, 0) != dim || elem(PQ_F_HOUR, t, NULL, 0) != 23)
                    fail_msg("calendar wrong at %04d-%02d-%02d", y, m, d);
            }
        }
    }
}

/* ---- binary operators ---------------------------------------------------------------- */

static double binop(pq_binop op, double l, double r) {
    double ret;
    pq_binop_apply(op, l, r, &ret);
    return ret;
}

static void test_binops(void **state) {
    (void)state;
    assert_same(binop(PQ_OP_ADD, 1, 2), 3);
    assert_same(binop(PQ_OP_SUB, INFINITY, INFINITY), NAN);
    assert_same(binop(PQ_OP_MUL, -0.0, 5), -0.0);
    assert_same(binop(PQ_OP_DIV, 1, 0), INFINITY);
    assert_same(binop(PQ_OP_DIV, 0, 0), NAN);
    assert_same(binop(PQ_OP_ATAN2, 1, 1), atan2(1, 1));
    assert_same(binop(PQ_OP_ATAN2, -0.0, -1), -3.141592653589793);

    /* Go's math.Mod special cases */
    static const double mod[][3] = {
        {-INFINITY, 1, NAN},
        {INFINITY, 1, NAN},
        {NAN, 1, NAN},
        {1, 0, NAN},
        {1, NAN, NAN},
        {5, INFINITY, 5},
        {-5, -INFINITY, -5},
        {-0.0, 3, -0.0},
        {-4, 2, -0.0},
        {7, -3, 1},
        {-7, 3, -1},
        {5.5, 2, 1.5},
        {1e300, 3, fmod(1e300, 3)},
    };
    for (size_t i = 0; i < sizeof mod / sizeof mod[0]; i++)
        if (!same(binop(PQ_OP_MOD, mod[i][0], mod[i][1]), mod[i][2]))
            fail_msg("Mod(%g, %g) = %.17g, want %.17g", mod[i][0], mod[i][1],
                     binop(PQ_OP_MOD, mod[i][0], mod[i][1]), mod[i][2]);

    /* Go's math.Pow special cases (math/all_test.go vfpowSC / powSC) */
    static const double pw[][3] = {
        {-INFINITY, -INFINITY, 0},
        {-INFINITY, -3, -0.0},
        {-INFINITY, -2, 0},
        {-INFINITY, -0.5, 0},
        {-INFINITY, -0.0, 1},
        {-INFINITY, 0.5, INFINITY},
        {-INFINITY, 1, -INFINITY},
        {-INFINITY, 3, -INFINITY},
        {-INFINITY, 2, INFINITY},
        {-INFINITY, INFINITY, INFINITY},
        {-INFINITY, NAN, NAN},
        {-3.141592653589793, 3.141592653589793, NAN},
        {-3.141592653589793, -INFINITY, 0},
        {-3.141592653589793, INFINITY, INFINITY},
        {-1, -INFINITY, 1},
        {-1, INFINITY, 1},
        {-1, NAN, NAN},
        {-0.5, -INFINITY, INFINITY},
        {-0.5, INFINITY, 0},
        {-0.0, -INFINITY, INFINITY},
        {-0.0, -3.141592653589793, INFINITY},
        {-0.0, -0.5, INFINITY},
        {-0.0, -3, -INFINITY},
        {-0.0, 3, -0.0},
        {-0.0, 3.141592653589793, 0},
        {-0.0, 0.5, 0},
        {-0.0, INFINITY, 0},
        {0, -INFINITY, INFINITY},
        {0, -3.141592653589793, INFINITY},
        {0, -3, INFINITY},
        {0, 0, 1},
        {0, 3, 0},
        {0, 3.141592653589793, 0},
        {0, INFINITY, 0},
        {0.5, -INFINITY, INFINITY},
        {0.5, INFINITY, 0},
        {1, -INFINITY, 1},
        {1, INFINITY, 1},
        {1, NAN, 1},
        {3.141592653589793, INFINITY, INFINITY},
        {3.141592653589793, -INFINITY, 0},
        {INFINITY, -INFINITY, 0},
        {INFINITY, -3.141592653589793, 0},
        {INFINITY, 0, 1},
        {INFINITY, 3.141592653589793, INFINITY},
        {NAN, -3.141592653589793, NAN},
        {NAN, 0, 1},
        {NAN, 3.141592653589793, NAN},
        {NAN, 1, NAN},
        {NAN, NAN, NAN},
        {2, 0x1p63, INFINITY},
        {-2, 0x1p64, INFINITY},
        {0.5, 0x1p63, 0},
        {-8, 1.0 / 3.0, NAN},
        {2, 10, 1024},
        {2, -2, 0.25},
        {10, -1, 0.1},
        {-2, 3, -8},
        {4, 0.5, 2},
        {2, 0.5, 1.4142135623730951}, /* sqrt, not exp(log(x) / 2) */
        {4, -0.5, 0.5},
        {2, 1024, INFINITY},
        {2, -1075, 0},
        {2, -1074, 0x1p-1074},
    };
    for (size_t i = 0; i < sizeof pw / sizeof pw[0]; i++)
        if (!same(binop(PQ_OP_POW, pw[i][0], pw[i][1]), pw[i][2]))
            fail_msg("Pow(%g, %g) = %.17g, want %.17g", pw[i][0], pw[i][1],
                     binop(PQ_OP_POW, pw[i][0], pw[i][1]), pw[i][2]);
    /* Go's algorithm: the values the 2.42 binary gives */
    assert_same(binop(PQ_OP_POW, 1e-310, 0.1), 1.6026038743929457e-31);

    /* comparisons: the value is the left side, the return says */
    double r;
    assert_int_equal(pq_binop_apply(PQ_OP_GTR, 2, 1, &r), 1);
    assert_same(r, 2);
    assert_int_equal(pq_binop_apply(PQ_OP_LSS, 2, 1, &r), 0);
    assert_int_equal(pq_binop_apply(PQ_OP_EQL, NAN, NAN, &r), 0);
    assert_int_equal(pq_binop_apply(PQ_OP_NEQ, NAN, NAN, &r), 1);
    assert_int_equal(pq_binop_apply(PQ_OP_GTE, 1, 1, &r), 1);
    assert_int_equal(pq_binop_apply(PQ_OP_LTE, -0.0, 0, &r), 1);
    assert_int_equal(pq_binop_apply(PQ_OP_EQL, -0.0, 0, &r), 1);
    assert_int_equal(pq_binop_apply(PQ_OP_AND, 1, 1, &r), 0);
    assert_int_equal(pq_binop_apply(PQ_OP_ADD, 1, 1, &r), 1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rate_functions_test),
        cmocka_unit_test(test_rate_extrapolation),
        cmocka_unit_test(test_regression),
        cmocka_unit_test(test_holt_winters),
        cmocka_unit_test(test_resets_changes),
        cmocka_unit_test(test_avg_over_time),
        cmocka_unit_test(test_over_time),
        cmocka_unit_test(test_quantile),
        cmocka_unit_test(test_bucket_quantile),
        cmocka_unit_test(test_aggregations),
        cmocka_unit_test(test_elementwise),
        cmocka_unit_test(test_dates),
        cmocka_unit_test(test_binops),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
