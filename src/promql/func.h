/* func.h -- the arithmetic of PromQL's functions and aggregations, as
 * Prometheus 2.42 does it (promql/functions.go, promql/quantile.go,
 * promql/engine.go's aggregation), to the last bit where the Go code's
 * order of operations decides it. Pure functions over numbers and label
 * sets: the evaluator (eval*.c) chooses the samples, the steps, the
 * windows and the output labels; func*.c computes.
 *
 * Nothing here allocates except the label functions and the scratch of
 * quantiles (which sorts in place).
 *
 * What the 2.42 binary does, checked against it (promtool test rules):
 * {sum,avg,stddev,stdvar}_over_time and deriv/predict_linear's linear
 * regression use Kahan-Neumaier compensated sums; the aggregations (sum,
 * avg, stddev, stdvar) do not. The aggregations' results depend on the
 * order of their inputs: 2.42 feeds them in the order Select(sortSeries =
 * false) returns series (head: series-ref order), then in input order.
 */
#ifndef KELVIN_PROMQL_FUNC_H
#define KELVIN_PROMQL_FUNC_H

#include <stddef.h>
#include <stdint.h>

#include "labels/labels.h"
#include "promql/ast.h"

/* ---- element-wise functions ------------------------------------------------ */

/* Instant-vector functions that map one value to one value: abs, ceil,
 * floor, exp, sqrt, ln, log2, log10, sgn, the trig functions, deg, rad,
 * round (args[0]: to_nearest, default 1 when nargs == 0), clamp (args:
 * min, max), clamp_max (max), clamp_min (min), and the date functions
 * (v: Unix seconds; days_in_month, day_of_month, day_of_week,
 * day_of_year, hour, minute, month, year; UTC, as Go's time.Unix(int64(v),
 * 0).UTC() on amd64: NaN, +-Inf and out-of-range v become INT64_MIN
 * seconds; called without an argument 2.42 uses time.Unix(eval_ms / 1000,
 * 0), so pass (double)(eval_ms / 1000)). Returns 1 and *ret, or 0 when the
 * sample is dropped (clamp with max < min drops every sample, as 2.42).
 * Other ids: 0. */
int pq_fn_elem(pq_func_id id, double v, const double *args, size_t nargs, double *ret);

/* Is id one of the date functions above (days_in_month ... year)? */
int pq_fn_is_date(pq_func_id id);

/* ---- range-vector functions -------------------------------------------------- */

/* The functions over one series' samples in one window: rate, increase,
 * delta (extrapolated, 2.42's extrapolatedRate), irate, idelta, deriv,
 * predict_linear (args[0]: seconds ahead), holt_winters (args[0]: sf,
 * args[1]: tf; checked first with pq_fn_range_check), resets, changes,
 * *_over_time (avg, min, max, sum,
 * count, last, present, stddev, stdvar, quantile (args[0]: q)).
 * Samples t[0..n) (ms, ascending, no stale markers) are those of the
 * window; range_start_ms and range_end_ms are the window's bounds as
 * 2.42 computes them for extrapolation (step time - range - offset, step
 * time - offset; rate's per-second divisor is (range_end_ms -
 * range_start_ms) as Go's Duration.Seconds()); eval_ms is the step's
 * evaluation time (2.42's enh.Ts: predict_linear's intercept time, which
 * differs from range_end_ms by the offset and under @). Returns 1 and
 * *ret, or 0 when the function gives no sample for this window (e.g. rate
 * with fewer than 2 samples, n == 0), or BASE_E_NOMEM (quantile_over_time
 * copies the values to sort them). absent_over_time is the evaluator's
 * (it needs the labels). */
int pq_fn_range(pq_func_id id, const int64_t *t, const double *v, size_t n, int64_t range_start_ms,
                int64_t range_end_ms, int64_t eval_ms, const double *args, size_t nargs, double *ret);

/* The same functions over the windows of one series at many steps at
 * once, for those whose windows pay off computed side by side (the
 * windows of consecutive steps are independent, so eight of them go
 * through one AVX-512 pass when the CPU has it): rate, increase, delta,
 * deriv, predict_linear (pq_fn_range_windowed(id)). Window j is samples
 * [lo[j], hi[j]) of t/v (ascending, no stale markers, hi[j] > lo[j]) at
 * step k[j] (ascending), which is evaluated at start + k * step over
 * (end - range, end] with end = start + k * step - off -- the arguments
 * pq_fn_range gets. arg (predict_linear's seconds ahead, indexed by k)
 * may be NULL for the others. scratch holds n + 1 entries. Writes
 * out[k[j]] and sets bit k[j] of bm for every window with a value;
 * returns how many. The answers are pq_fn_range's to the bit, whichever
 * path runs.
 *
 * tc (may be NULL) keeps what rate, increase and delta compute from the
 * timestamps alone (each window's sampled interval, distance to its
 * start, extrapolation factor) for the next call: series of one target
 * share their scrapes' timestamps, so consecutive series of a range
 * query usually have the same t and windows. The caller sets tc->same
 * when t[0..n), the windows and start/step/off/range equal the previous
 * call's with this tc; zero-initialised, freed by pq_wtimes_free. */
typedef struct pq_wtimes {
    int same; /* the caller's, per call */
    int id;   /* the function the figures are for; 0: none */
    size_t nw, cap;
    double *sampled, *to_start, *factor;
} pq_wtimes;

void pq_wtimes_free(pq_wtimes *tc);

/* Groups of windows answered from a pq_wtimes (tests read it). */
extern size_t pq__fn_windows_cached;

typedef struct pq_windows {
    const int64_t *t;
    const double *v;
    size_t n;
    const uint32_t *lo, *hi, *k;
    size_t nw;
    int64_t start, step, off, range;
    const double *arg;
    uint32_t *scratch;
    pq_wtimes *tc;
} pq_windows;

int pq_fn_range_windowed(pq_func_id id);
size_t pq_fn_range_windows(pq_func_id id, const pq_windows *w, double *out, uint64_t *bm);

/* avg's incremental mean (2.42's: mean += v / count - mean / count after
 * ++count, a mean at +-Inf kept after a number or an Inf of its sign) at
 * 64 steps at once, in vector lanes (func_win.c). Returns 0, touching
 * nothing, where the CPU has no vector unit: the caller loops. */
int pq_agg_avg64(double *mean, double *cnt, const double *v);

/* 1 when pq_fn_range_windows and pq_agg_avg64 may use the CPU's vector unit (the default
 * where it has AVX-512F/DQ); tests set 0 to compare with the plain path. */
extern int pq__fn_windows_vector;

/* Argument checks that fail the query, with 2.42's messages, e.g.
 * holt_winters "invalid smoothing factor. Expected: 0 < sf < 1, got: %f"
 * (NaN passes, as in Go). 2.42 checks inside the function, so only for a
 * series whose window has samples: call it before pq_fn_range with n >= 1.
 * Returns 0 or BASE_E_INVAL with the message in err. */
int pq_fn_range_check(pq_func_id id, const double *args, size_t nargs, char *err, size_t errlen);

/* ---- quantiles ------------------------------------------------------------------ */

/* 2.42's quantile(): q < 0 -> -Inf, q > 1 -> +Inf, NaN q -> NaN, n == 0 ->
 * NaN; sorts vals in place; linear interpolation between ranks. */
double pq_quantile(double q, double *vals, size_t n);

/* One classic histogram bucket: the `le` bound and the cumulative count. */
typedef struct pq_bucket {
    double upper;
    double count;
} pq_bucket;
/* 2.42's bucketQuantile(): sorts b in place by upper, coalesces equal
 * bounds, forces monotonic counts, needs a +Inf bucket (else NaN),
 * interpolates linearly inside the bucket (the first bucket from 0 when
 * its bound is > 0). */
double pq_bucket_quantile(double q, pq_bucket *b, size_t n);

/* ---- aggregation arithmetic --------------------------------------------------------- */

/* The per-group state of sum, avg, count, min, max, group, stddev and
 * stdvar, updated in input order exactly as 2.42's aggregation() does
 * (avg's incremental mean with its Inf handling, stddev/stdvar's running
 * mean and sum of squares). */
typedef struct pq_agg_acc {
    double value;
    double mean;
    double count;
    double m2;
    int has_float;
} pq_agg_acc;
void pq_agg_init(pq_aggop op, pq_agg_acc *a, double first);
void pq_agg_add(pq_aggop op, pq_agg_acc *a, double v);
double pq_agg_result(pq_aggop op, const pq_agg_acc *a);

/* ---- binary operators ------------------------------------------------------------------ */

/* 2.42's vectorElemBinop / scalarBinop for arithmetic and comparison
 * operators: *ret is the result; for comparisons the return value says
 * whether the comparison holds (the evaluator keeps or drops, or with
 * `bool` turns it into 1/0). Arithmetic: returns 1. */
int pq_binop_apply(pq_binop op, double lhs, double rhs, double *ret);

/* ---- label functions ------------------------------------------------------------------------ */

/* label_replace(v, dst, replacement, src, regex) on one series' labels:
 * *ret is a new reference (the same set when unchanged). The regex is
 * anchored as 2.42 anchors it (the caller compiles "^(?:re)$" once with
 * pq_label_regex_compile). Errors: BASE_E_INVAL with 2.42's message.
 *
 * 2.42 checks the arguments when the function is called, even on an empty
 * vector, so per step (or once per query) the evaluator calls:
 * label_replace: pq_label_regex_compile, then pq_fn_label_check;
 * label_join: pq_fn_label_check. It checks what 2.42 checks, in its order
 * (label_join: each source name, then the destination; label_replace: the
 * destination) and returns 0 or BASE_E_INVAL with 2.42's message. */
int pq_fn_label_check(pq_func_id id, const char *dst, const char *const *srcs, size_t nsrcs, char *err,
                      size_t errlen);
int pq_label_regex_compile(const char *re, size_t n, labels_regex **ret, char *err, size_t errlen);
int pq_fn_label_replace(const labels_set *in, const char *dst, const char *repl, const char *src,
                        const labels_regex *re, labels_set **ret, char *err, size_t errlen);
/* label_join(v, dst, sep, src...). */
int pq_fn_label_join(const labels_set *in, const char *dst, const char *sep, const char *const *srcs,
                     size_t nsrcs, labels_set **ret, char *err, size_t errlen);

#endif
