/* func_int.h -- what the func*.c files of the promql module share among
 * themselves: Go's math package where C's libm differs from it (special
 * cases, order of operations), and Go's time package's calendar.
 *
 * Only func*.c include this; everything here is pq__-prefixed.
 */
#ifndef KELVIN_PROMQL_FUNC_INT_H
#define KELVIN_PROMQL_FUNC_INT_H

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

#endif
