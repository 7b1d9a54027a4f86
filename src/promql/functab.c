/* functab.c -- the functions of Prometheus 2.42's PromQL
 * (promql/parser/functions.go at v2.42.0): name, argument types,
 * Variadic and return type, by id, and a lookup by name.
 *
 * Only 2.42's functions: no histogram_avg/stddev/stdvar, mad_over_time,
 * sort_by_label, double_exponential_smoothing and the like (later
 * releases); holt_winters is here under its 2.42 name.
 */
#include <string.h>

#include "promql/ast.h"

#define S PQ_T_SCALAR
#define V PQ_T_VECTOR
#define M PQ_T_MATRIX
#define T PQ_T_STRING

#define F(ID, NAME, RET, VAR, N, ...) [ID] = {ID, NAME, {__VA_ARGS__}, N, VAR, RET}

const pq_func pq_funcs[PQ_F__COUNT] = {
    F(PQ_F_ABS, "abs", V, 0, 1, V),
    F(PQ_F_ABSENT, "absent", V, 0, 1, V),
    F(PQ_F_ABSENT_OVER_TIME, "absent_over_time", V, 0, 1, M),
    F(PQ_F_ACOS, "acos", V, 0, 1, V),
    F(PQ_F_ACOSH, "acosh", V, 0, 1, V),
    F(PQ_F_ASIN, "asin", V, 0, 1, V),
    F(PQ_F_ASINH, "asinh", V, 0, 1, V),
    F(PQ_F_ATAN, "atan", V, 0, 1, V),
    F(PQ_F_ATANH, "atanh", V, 0, 1, V),
    F(PQ_F_AVG_OVER_TIME, "avg_over_time", V, 0, 1, M),
    F(PQ_F_CEIL, "ceil", V, 0, 1, V),
    F(PQ_F_CHANGES, "changes", V, 0, 1, M),
    F(PQ_F_CLAMP, "clamp", V, 0, 3, V, S, S),
    F(PQ_F_CLAMP_MAX, "clamp_max", V, 0, 2, V, S),
    F(PQ_F_CLAMP_MIN, "clamp_min", V, 0, 2, V, S),
    F(PQ_F_COS, "cos", V, 0, 1, V),
    F(PQ_F_COSH, "cosh", V, 0, 1, V),
    F(PQ_F_COUNT_OVER_TIME, "count_over_time", V, 0, 1, M),
    F(PQ_F_DAYS_IN_MONTH, "days_in_month", V, 1, 1, V),
    F(PQ_F_DAY_OF_MONTH, "day_of_month", V, 1, 1, V),
    F(PQ_F_DAY_OF_WEEK, "day_of_week", V, 1, 1, V),
    F(PQ_F_DAY_OF_YEAR, "day_of_year", V, 1, 1, V),
    F(PQ_F_DEG, "deg", V, 0, 1, V),
    F(PQ_F_DELTA, "delta", V, 0, 1, M),
    F(PQ_F_DERIV, "deriv", V, 0, 1, M),
    F(PQ_F_EXP, "exp", V, 0, 1, V),
    F(PQ_F_FLOOR, "floor", V, 0, 1, V),
    F(PQ_F_HISTOGRAM_COUNT, "histogram_count", V, 0, 1, V),
    F(PQ_F_HISTOGRAM_SUM, "histogram_sum", V, 0, 1, V),
    F(PQ_F_HISTOGRAM_FRACTION, "histogram_fraction", V, 0, 3, S, S, V),
    F(PQ_F_HISTOGRAM_QUANTILE, "histogram_quantile", V, 0, 2, S, V),
    F(PQ_F_HOLT_WINTERS, "holt_winters", V, 0, 3, M, S, S),
    F(PQ_F_HOUR, "hour", V, 1, 1, V),
    F(PQ_F_IDELTA, "idelta", V, 0, 1, M),
    F(PQ_F_INCREASE, "increase", V, 0, 1, M),
    F(PQ_F_IRATE, "irate", V, 0, 1, M),
    F(PQ_F_LABEL_REPLACE, "label_replace", V, 0, 5, V, T, T, T, T),
    F(PQ_F_LABEL_JOIN, "label_join", V, -1, 4, V, T, T, T),
    F(PQ_F_LAST_OVER_TIME, "last_over_time", V, 0, 1, M),
    F(PQ_F_LN, "ln", V, 0, 1, V),
    F(PQ_F_LOG10, "log10", V, 0, 1, V),
    F(PQ_F_LOG2, "log2", V, 0, 1, V),
    F(PQ_F_MAX_OVER_TIME, "max_over_time", V, 0, 1, M),
    F(PQ_F_MIN_OVER_TIME, "min_over_time", V, 0, 1, M),
    F(PQ_F_MINUTE, "minute", V, 1, 1, V),
    F(PQ_F_MONTH, "month", V, 1, 1, V),
    F(PQ_F_PI, "pi", S, 0, 0, PQ_T_NONE),
    F(PQ_F_PREDICT_LINEAR, "predict_linear", V, 0, 2, M, S),
    F(PQ_F_PRESENT_OVER_TIME, "present_over_time", V, 0, 1, M),
    F(PQ_F_QUANTILE_OVER_TIME, "quantile_over_time", V, 0, 2, S, M),
    F(PQ_F_RAD, "rad", V, 0, 1, V),
    F(PQ_F_RATE, "rate", V, 0, 1, M),
    F(PQ_F_RESETS, "resets", V, 0, 1, M),
    F(PQ_F_ROUND, "round", V, 1, 2, V, S),
    F(PQ_F_SCALAR, "scalar", S, 0, 1, V),
    F(PQ_F_SGN, "sgn", V, 0, 1, V),
    F(PQ_F_SIN, "sin", V, 0, 1, V),
    F(PQ_F_SINH, "sinh", V, 0, 1, V),
    F(PQ_F_SORT, "sort", V, 0, 1, V),
    F(PQ_F_SORT_DESC, "sort_desc", V, 0, 1, V),
    F(PQ_F_SQRT, "sqrt", V, 0, 1, V),
    F(PQ_F_STDDEV_OVER_TIME, "stddev_over_time", V, 0, 1, M),
    F(PQ_F_STDVAR_OVER_TIME, "stdvar_over_time", V, 0, 1, M),
    F(PQ_F_SUM_OVER_TIME, "sum_over_time", V, 0, 1, M),
    F(PQ_F_TAN, "tan", V, 0, 1, V),
    F(PQ_F_TANH, "tanh", V, 0, 1, V),
    F(PQ_F_TIME, "time", S, 0, 0, PQ_T_NONE),
    F(PQ_F_TIMESTAMP, "timestamp", V, 0, 1, V),
    F(PQ_F_VECTOR, "vector", V, 0, 1, S),
    F(PQ_F_YEAR, "year", V, 1, 1, V),
};

const pq_func *pq_func_lookup(const char *name, size_t n) {
    for (size_t i = 0; i < PQ_F__COUNT; i++)
        if (strlen(pq_funcs[i].name) == n && memcmp(pq_funcs[i].name, name, n) == 0) return &pq_funcs[i];
    return NULL;
}
