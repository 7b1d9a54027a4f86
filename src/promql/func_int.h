/* func_int.h -- what the func*.c files of the promql module share among
 * themselves: Go's math package where C's libm differs from it (special
 * cases, order of operations), and Go's time package's calendar.
 *
 * Only func*.c include this; everything here is pq__-prefixed.
 */
#ifndef KELVIN_PROMQL_FUNC_INT_H
#define KELVIN_PROMQL_FUNC_INT_H

#include <stddef.h>
#include <stdint.h>

#include "promql/ast.h"

/* Go's math.Max / math.Min: +Inf (Max) / -Inf (Min) wins over NaN, then
 * NaN wins over numbers, and +0 > -0. */
double pq__go_max(double x, double y);
double pq__go_min(double x, double y);
/* Go's math.Pow: its special cases and its algorithm (repeated squaring
 * of the mantissa for the integer part of y, exp(yf * log(x)) for the
 * fraction), so integer powers round as Go rounds them. */
double pq__go_pow(double x, double y);
/* Go's math.Log as compiled for amd64 (subnormals misread as Go does),
 * math.Log2 (exact for powers of two, else Log(frac)/ln2 + exp) and
 * math.Log10 (Log(x) * (1/ln10)). */
double pq__go_log(double x);
double pq__go_log2(double x);
double pq__go_log10(double x);
/* Go's int64(f) on amd64: truncation, and INT64_MIN for NaN, +-Inf and
 * values outside int64 (CVTTSD2SI's "integer indefinite"). */
int64_t pq__go_f2i64(double f);

/* The date functions (func_date.c): id one of PQ_F_DAYS_IN_MONTH,
 * DAY_OF_MONTH, DAY_OF_WEEK, DAY_OF_YEAR, HOUR, MINUTE, MONTH, YEAR; v is
 * Unix seconds. Returns 1 and *ret, or 0 for other ids. */
int pq__fn_date(pq_func_id id, double v, double *ret);

/* Shared by pq_fn_range and pq_fn_range_windows (func_win.c), so both
 * compute 2.42's arithmetic from one copy: extrapolatedRate's raw
 * difference (last - first, plus the value before each counter reset
 * when is_counter; n >= 2), and linearRegression's result from its
 * compensated sums (cnt points; const_y: every value equals init_y). */
double pq__rate_delta(const double *v, size_t n, int is_counter);
/* Go's time.Duration(ms * 1e6).Seconds(): whole seconds plus the
 * nanoseconds / 1e9 -- not always ms / 1000.0 to the last bit. */
double pq__duration_seconds(int64_t ms);
void pq__lr_finish(double cnt, double sum_x, double c_x, double sum_y, double c_y, double sum_xy, double c_xy,
                   double sum_x2, double c_x2, double init_y, int const_y, double *ret_slope,
                   double *ret_intercept);

#endif
