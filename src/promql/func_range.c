/* func_range.c -- PromQL's functions over one series' samples in one
 * window (rate, increase, delta, irate, idelta, deriv, predict_linear,
 * holt_winters, resets, changes, *_over_time), as Prometheus 2.42
 * computes them (promql/functions.go).
 *
 * Design: each function is the Go code transcribed with its order of
 * floating-point operations:
 *  - extrapolatedRate: counter resets add the value before the reset; the
 *    durations to the window's edges are clamped to the zero point of a
 *    counter first, then extrapolated in full when under 1.1 times the
 *    average sample spacing, else by half a spacing; the result is
 *    multiplied by one factor (extrapolated / sampled interval, divided
 *    by the range's seconds for rate).
 *  - sum/avg/stddev/stdvar_over_time and the linear regression behind
 *    deriv/predict_linear use Kahan-Neumaier compensated sums
 *    (kahanSumInc), as the 2.42 binary does; avg_over_time keeps its
 *    incremental mean and its special cases for infinite means.
 *  - min/max_over_time let a later number replace a NaN.
 *
 * Invariants: samples are given ascending by time; nothing allocates
 * except quantile_over_time's copy of the values (pq_quantile sorts).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/err.h"
#include "promql/func.h"
#include "promql/func_int.h"

double pq__duration_seconds(int64_t ms) {
    int64_t sec = ms / 1000;
    int64_t nsec = (ms % 1000) * 1000000;
    if (nsec == 0) return (double)sec; /* the same bits, without a division per window */
    return (double)sec + (double)nsec / 1e9;
}

/* kahanSumInc: the Neumaier variant, swapping when the increment is
 * larger than the sum. */
static void kahan_inc(double inc, double *sum, double *c) {
    double t = *sum + inc;
    if (fabs(*sum) >= fabs(inc))
        *c += (*sum - t) + inc;
    else
        *c += (inc - t) + *sum;
    *sum = t;
}

double pq__rate_delta(const double *v, size_t n, int is_counter) {
    double result = v[n - 1] - v[0];
    if (is_counter) {
        double prev = v[0];
        for (size_t i = 1; i < n; i++) {
            if (v[i] < prev) result += prev;
            prev = v[i];
        }
    }
    return result;
}

static int extrapolated_rate(const int64_t *t, const double *v, size_t n, int64_t range_start,
                             int64_t range_end, int is_counter, int is_rate, double *ret) {
    if (n < 2) return 0;
    double result = pq__rate_delta(v, n, is_counter);

    double duration_to_start = (double)(t[0] - range_start) / 1000;
    double duration_to_end = (double)(range_end - t[n - 1]) / 1000;
    double sampled_interval = (double)(t[n - 1] - t[0]) / 1000;
    double avg_between = sampled_interval / (double)(n - 1);

    if (is_counter && result > 0 && v[0] >= 0) {
        /* a counter is never negative: do not extrapolate below zero */
        double duration_to_zero = sampled_interval * (v[0] / result);
        if (duration_to_zero < duration_to_start) duration_to_start = duration_to_zero;
    }

    double threshold = avg_between * 1.1;
    double extrapolate_to = sampled_interval;
    if (duration_to_start < threshold)
        extrapolate_to += duration_to_start;
    else
        extrapolate_to += avg_between / 2;
    if (duration_to_end < threshold)
        extrapolate_to += duration_to_end;
    else
        extrapolate_to += avg_between / 2;

    double factor = extrapolate_to / sampled_interval;
    if (is_rate) factor /= pq__duration_seconds(range_end - range_start);
    *ret = result * factor;
    return 1;
}

/* instantValue: the last two samples. */
static int instant_value(const int64_t *t, const double *v, size_t n, int is_rate, double *ret) {
    if (n < 2) return 0;
    double last = v[n - 1], prev = v[n - 2];
    double result;
    if (is_rate && last < prev)
        result = last; /* counter reset */
    else
        result = last - prev;
    int64_t interval = t[n - 1] - t[n - 2];
    if (interval == 0) return 0;
    if (is_rate) result /= (double)interval / 1000;
    *ret = result;
    return 1;
}

/* linearRegression: slope, and the intercept at intercept_ms. */
static void linear_regression(const int64_t *t, const double *v, size_t n, int64_t intercept_ms,
                              double *ret_slope, double *ret_intercept) {
    double cnt = 0, sum_x = 0, c_x = 0, sum_y = 0, c_y = 0, sum_xy = 0, c_xy = 0, sum_x2 = 0, c_x2 = 0;
    double init_y = v[0];
    int const_y = 1;
    for (size_t i = 0; i < n; i++) {
        if (const_y && i > 0 && v[i] != init_y) const_y = 0;
        cnt += 1.0;
        double x = (double)(t[i] - intercept_ms) / 1e3;
        kahan_inc(x, &sum_x, &c_x);
        kahan_inc(v[i], &sum_y, &c_y);
        kahan_inc(x * v[i], &sum_xy, &c_xy);
        kahan_inc(x * x, &sum_x2, &c_x2);
    }
    pq__lr_finish(cnt, sum_x, c_x, sum_y, c_y, sum_xy, c_xy, sum_x2, c_x2, init_y, const_y, ret_slope,
                  ret_intercept);
}

void pq__lr_finish(double cnt, double sum_x, double c_x, double sum_y, double c_y, double sum_xy, double c_xy,
                   double sum_x2, double c_x2, double init_y, int const_y, double *ret_slope,
                   double *ret_intercept) {
    if (const_y) {
        if (isinf(init_y)) {
            *ret_slope = NAN;
            *ret_intercept = NAN;
        } else {
            *ret_slope = 0;
            *ret_intercept = init_y;
        }
        return;
    }
    sum_x = sum_x + c_x;
    sum_y = sum_y + c_y;
    sum_xy = sum_xy + c_xy;
    sum_x2 = sum_x2 + c_x2;

    double cov_xy = sum_xy - sum_x * sum_y / cnt;
    double var_x = sum_x2 - sum_x * sum_x / cnt;
    double slope = cov_xy / var_x;
    *ret_slope = slope;
    *ret_intercept = sum_y / cnt - slope * sum_x / cnt;
}

/* holt_winters' calcTrendValue. */
static double calc_trend_value(size_t i, double tf, double s0, double s1, double b) {
    if (i == 0) return b;
    double x = tf * (s1 - s0);
    double y = (1 - tf) * b;
    return x + y;
}

static double holt_winters(const double *v, size_t n, double sf, double tf) {
    double s0 = 0, s1 = v[0], b = v[1] - v[0];
    for (size_t i = 1; i < n; i++) {
        double x = sf * v[i];
        b = calc_trend_value(i - 1, tf, s0, s1, b);
        double y = (1 - sf) * (s1 + b);
        s0 = s1;
        s1 = x + y;
    }
    return s1;
}

static double avg_over_time(const double *v, size_t n) {
    double mean = 0, count = 0, c = 0;
    for (size_t i = 0; i < n; i++) {
        count++;
        if (isinf(mean)) {
            if (isinf(v[i]) && (mean > 0) == (v[i] > 0)) continue; /* Inf of the same sign: mean is right */
            if (!isinf(v[i]) && !isnan(v[i])) continue;            /* Inf += x - Inf would be NaN */
        }
        kahan_inc(v[i] / count - mean / count, &mean, &c);
    }
    if (isinf(mean)) return mean;
    return mean + c;
}

static double sum_over_time(const double *v, size_t n) {
    double sum = 0, c = 0;
    for (size_t i = 0; i < n; i++) kahan_inc(v[i], &sum, &c);
    if (isinf(sum)) return sum;
    return sum + c;
}

/* stdvar_over_time (Welford with compensated mean and sum of squares). */
static double stdvar_over_time(const double *v, size_t n) {
    double count = 0, mean = 0, c_mean = 0, aux = 0, c_aux = 0;
    for (size_t i = 0; i < n; i++) {
        count++;
        double delta = v[i] - (mean + c_mean);
        kahan_inc(delta / count, &mean, &c_mean);
        kahan_inc(delta * (v[i] - (mean + c_mean)), &aux, &c_aux);
    }
    return (aux + c_aux) / count;
}

int pq_fn_range(pq_func_id id, const int64_t *t, const double *v, size_t n, int64_t range_start_ms,
                int64_t range_end_ms, int64_t eval_ms, const double *args, size_t nargs, double *ret) {
    if (n == 0) return 0;
    switch (id) {
    case PQ_F_RATE: return extrapolated_rate(t, v, n, range_start_ms, range_end_ms, 1, 1, ret);
    case PQ_F_INCREASE: return extrapolated_rate(t, v, n, range_start_ms, range_end_ms, 1, 0, ret);
    case PQ_F_DELTA: return extrapolated_rate(t, v, n, range_start_ms, range_end_ms, 0, 0, ret);
    case PQ_F_IRATE: return instant_value(t, v, n, 1, ret);
    case PQ_F_IDELTA: return instant_value(t, v, n, 0, ret);
    case PQ_F_DERIV: {
        if (n < 2) return 0;
        /* intercept near the samples against precision loss
         * (prometheus#2674) */
        double slope, intercept;
        linear_regression(t, v, n, t[0], &slope, &intercept);
        *ret = slope;
        return 1;
    }
    case PQ_F_PREDICT_LINEAR: {
        if (n < 2 || nargs < 1) return 0;
        double slope, intercept;
        linear_regression(t, v, n, eval_ms, &slope, &intercept);
        *ret = slope * args[0] + intercept;
        return 1;
    }
    case PQ_F_HOLT_WINTERS:
        if (n < 2 || nargs < 2) return 0;
        *ret = holt_winters(v, n, args[0], args[1]);
        return 1;
    case PQ_F_RESETS: {
        double resets = 0;
        for (size_t i = 1; i < n; i++)
            if (v[i] < v[i - 1]) resets++;
        *ret = resets;
        return 1;
    }
    case PQ_F_CHANGES: {
        double changes = 0;
        for (size_t i = 1; i < n; i++)
            if (v[i] != v[i - 1] && !(isnan(v[i]) && isnan(v[i - 1]))) changes++;
        *ret = changes;
        return 1;
    }
    case PQ_F_AVG_OVER_TIME: *ret = avg_over_time(v, n); return 1;
    case PQ_F_SUM_OVER_TIME: *ret = sum_over_time(v, n); return 1;
    case PQ_F_COUNT_OVER_TIME: *ret = (double)n; return 1;
    case PQ_F_LAST_OVER_TIME: *ret = v[n - 1]; return 1;
    case PQ_F_PRESENT_OVER_TIME: *ret = 1; return 1;
    case PQ_F_MAX_OVER_TIME: {
        double max = v[0];
        for (size_t i = 0; i < n; i++)
            if (v[i] > max || isnan(max)) max = v[i];
        *ret = max;
        return 1;
    }
    case PQ_F_MIN_OVER_TIME: {
        double min = v[0];
        for (size_t i = 0; i < n; i++)
            if (v[i] < min || isnan(min)) min = v[i];
        *ret = min;
        return 1;
    }
    case PQ_F_STDVAR_OVER_TIME: *ret = stdvar_over_time(v, n); return 1;
    case PQ_F_STDDEV_OVER_TIME: *ret = sqrt(stdvar_over_time(v, n)); return 1;
    case PQ_F_QUANTILE_OVER_TIME: {
        if (nargs < 1) return 0;
        double *tmp = malloc(n * sizeof *tmp);
        if (!tmp) return BASE_E_NOMEM;
        for (size_t i = 0; i < n; i++) tmp[i] = v[i];
        *ret = pq_quantile(args[0], tmp, n);
        free(tmp);
        return 1;
    }
    default: return 0;
    }
}

/* Go's %f of a float64: as C's, but +Inf, -Inf and NaN spelt Go's way. */
static void go_fmt_f(char *out, size_t n, double v) {
    if (isnan(v))
        snprintf(out, n, "NaN");
    else if (isinf(v))
        snprintf(out, n, "%s", v > 0 ? "+Inf" : "-Inf");
    else
        snprintf(out, n, "%f", v);
}

int pq_fn_range_check(pq_func_id id, const double *args, size_t nargs, char *err, size_t errlen) {
    if (id != PQ_F_HOLT_WINTERS || nargs < 2) return 0;
    char buf[400];
    double sf = args[0], tf = args[1];
    if (sf <= 0 || sf >= 1) {
        go_fmt_f(buf, sizeof buf, sf);
        return base_errf(err, errlen, BASE_E_INVAL, "invalid smoothing factor. Expected: 0 < sf < 1, got: %s",
                         buf);
    }
    if (tf <= 0 || tf >= 1) {
        go_fmt_f(buf, sizeof buf, tf);
        return base_errf(err, errlen, BASE_E_INVAL, "invalid trend factor. Expected: 0 < tf < 1, got: %s",
                         buf);
    }
    return 0;
}
