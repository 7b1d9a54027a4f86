/* func.c -- PromQL's element-wise functions, binary operators and
 * aggregation arithmetic, as Prometheus 2.42 computes them
 * (promql/functions.go simpleFunc & co., engine.go's scalarBinop,
 * vectorElemBinop and aggregation()).
 *
 * Design: every function is the Go expression transcribed with the same
 * order of operations (e.g. round is floor(v * (1/to) + 0.5) / (1/to),
 * deg is v * 180 / pi). Where C's libm and Go's math package disagree on
 * more than the last bits -- Max/Min with NaN, Pow's special cases and
 * rounding, Log (amd64's assembly, which misreads subnormals), Log2,
 * Log10 -- Go's code is reproduced here (pq__go_*, shared with the other
 * func*.c through func_int.h). Elsewhere libm is used: exp (Go's amd64
 * Exp even differs by CPU: it uses FMA where present), the trig and
 * hyperbolic functions may differ from Go's in the last bit, which the
 * compatibility bar (relative 1e-9) allows.
 *
 * Invariants: no allocation, no global state; every function is pure.
 * Floating-point contraction is off (ISO C17 mode), so x*y+z is never
 * fused, as Go on amd64 never fuses it.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "promql/func.h"
#include "promql/func_int.h"

/* Go's math constants, rounded once from their exact values (Go folds
 * constant expressions exactly: 1/Ln2 and Ln2/Ln10 are not the double
 * divisions). */
#define GO_PI     0x1.921fb54442d18p+1
#define GO_LOG2E  0x1.71547652b82fep+0 /* 1/Ln2 */
#define GO_LOG10E 0x1.bcb7b1526e50ep-2 /* 1/Ln10 */

/* ---- Go's math package where libm differs --------------------------------- */

double pq__go_max(double x, double y) {
    if ((isinf(x) && x > 0) || (isinf(y) && y > 0)) return INFINITY;
    if (isnan(x) || isnan(y)) return NAN;
    if (x == 0 && x == y) return signbit(x) ? y : x;
    return x > y ? x : y;
}

double pq__go_min(double x, double y) {
    if ((isinf(x) && x < 0) || (isinf(y) && y < 0)) return -INFINITY;
    if (isnan(x) || isnan(y)) return NAN;
    if (x == 0 && x == y) return signbit(x) ? x : y;
    return x < y ? x : y;
}

/* Go's isOddInt (math/pow.go). */
static int go_is_odd_int(double x) {
    if (fabs(x) >= 0x1p53) return 0; /* every float this large is an even integer */
    double xi;
    double xf = modf(x, &xi);
    return xf == 0 && (((int64_t)xi) & 1) == 1;
}

/* Go's Frexp: special values come back unchanged with exponent 0. */
static double go_frexp(double x, int *e) {
    if (x == 0 || isinf(x) || isnan(x)) {
        *e = 0;
        return x;
    }
    return frexp(x, e);
}

double pq__go_pow(double x, double y) {
    if (y == 0 || x == 1) return 1;
    if (y == 1) return x;
    if (isnan(x) || isnan(y)) return NAN;
    if (x == 0) {
        if (y < 0) return signbit(x) && go_is_odd_int(y) ? -INFINITY : INFINITY;
        /* y > 0 (y == 0 and NaN handled above) */
        return signbit(x) && go_is_odd_int(y) ? x : 0;
    }
    if (isinf(y)) {
        if (x == -1) return 1;
        if ((fabs(x) < 1) == (y > 0)) return 0;
        return INFINITY;
    }
    if (isinf(x)) {
        if (x < 0) return pq__go_pow(1 / x, -y); /* Pow(-0, -y) */
        return y < 0 ? 0 : INFINITY;
    }
    if (y == 0.5) return sqrt(x);
    if (y == -0.5) return 1 / sqrt(x);

    double yi;
    double yf = modf(fabs(y), &yi);
    if (yf != 0 && x < 0) return NAN;
    if (yi >= 0x1p63) {
        /* a large even integer: overflow or underflow for all x but -1 */
        if (x == -1) return 1;
        if ((fabs(x) < 1) == (y > 0)) return 0;
        return INFINITY;
    }

    /* ans = a1 * 2**ae */
    double a1 = 1.0;
    int64_t ae = 0;
    if (yf != 0) {
        if (yf > 0.5) {
            yf--;
            yi++;
        }
        a1 = exp(yf * pq__go_log(x));
    }
    int xe_i;
    double x1 = go_frexp(x, &xe_i);
    int64_t xe = xe_i;
    for (int64_t i = (int64_t)yi; i != 0; i >>= 1) {
        if (xe < -(1 << 12) || (1 << 12) < xe) {
            /* catastrophic overflow or underflow: ldexp handles it */
            ae += xe;
            break;
        }
        if ((i & 1) == 1) {
            a1 *= x1;
            ae += xe;
        }
        x1 *= x1;
        xe <<= 1;
        if (x1 < .5) {
            x1 += x1;
            xe--;
        }
    }
    if (y < 0) {
        a1 = 1 / a1;
        ae = -ae;
    }
    /* Go's Ldexp takes an int: clamp far beyond the range that matters */
    if (ae > 1 << 20) ae = 1 << 20;
    if (ae < -(1 << 20)) ae = -(1 << 20);
    return ldexp(a1, (int)ae);
}

/* Go's math.Log as it runs on amd64 (log_amd64.s, the FreeBSD algorithm):
 * the exponent and mantissa are taken from the bits without normalising,
 * so a subnormal x is read as 0.5..1 * 2^-1022 (ln(1e-310) is
 * -709.085..., not -713.801...), and the reduction doubles f1 when
 * f1 <= sqrt(2)/2. */
double pq__go_log(double x) {
    uint64_t bits;
    memcpy(&bits, &x, sizeof bits);
    if ((bits & ~(UINT64_C(1) << 63)) == 0) return -INFINITY;
    if ((int64_t)bits < 0) return NAN;
    if (bits >= UINT64_C(0x7FF0000000000000)) return x; /* +Inf or NaN */
    uint64_t fbits = (bits & UINT64_C(0x000FFFFFFFFFFFFF)) | UINT64_C(0x3FE0000000000000);
    double f1;
    memcpy(&f1, &fbits, sizeof f1);
    double k = (double)((int32_t)((bits >> 52) & 0x7FF) - 0x3FE);
    double two = 1.0;
    if (!(0x1.6a09e667f3bcdp-1 < f1)) {
        k -= 1.0;
        two = 2.0;
    }
    f1 *= two;
    double f = f1 - 1;
    double s = f / (2.0 + f);
    double s2 = s * s;
    double s4 = s2 * s2;
    double t1 = s2 * (0x1.5555555555593p-1 +
                      s4 * (0x1.2492494229359p-2 + s4 * (0x1.7466496cb03dep-3 + s4 * 0x1.2f112df3e5244p-3)));
    double t2 = s4 * (0x1.999999997fa04p-2 + s4 * (0x1.c71c51d8e78afp-3 + s4 * 0x1.39a09d078c69fp-3));
    double r = t1 + t2;
    double hfsq = 0.5 * f * f;
    return k * 0x1.62e42fee00000p-1 - ((hfsq - (s * (hfsq + r) + k * 0x1.a39ef35793c76p-33)) - f);
}

double pq__go_log2(double x) {
    int e;
    double frac = go_frexp(x, &e);
    if (frac == 0.5) return (double)(e - 1);
    return pq__go_log(frac) * GO_LOG2E + (double)e;
}

double pq__go_log10(double x) {
    return pq__go_log(x) * GO_LOG10E;
}

int64_t pq__go_f2i64(double f) {
    /* [-2^63, 2^63) converts; everything else is "integer indefinite" */
    if (!(f >= -0x1p63 && f < 0x1p63)) return INT64_MIN;
    return (int64_t)f;
}

/* ---- element-wise functions ---------------------------------------------- */

int pq_fn_elem(pq_func_id id, double v, const double *args, size_t nargs, double *ret) {
    double r;
    switch (id) {
    case PQ_F_ABS: r = fabs(v); break;
    case PQ_F_CEIL: r = ceil(v); break;
    case PQ_F_FLOOR: r = floor(v); break;
    case PQ_F_EXP: r = exp(v); break;
    case PQ_F_SQRT: r = sqrt(v); break;
    case PQ_F_LN: r = pq__go_log(v); break;
    case PQ_F_LOG2: r = pq__go_log2(v); break;
    case PQ_F_LOG10: r = pq__go_log10(v); break;
    case PQ_F_SIN: r = sin(v); break;
    case PQ_F_COS: r = cos(v); break;
    case PQ_F_TAN: r = tan(v); break;
    case PQ_F_ASIN: r = asin(v); break;
    case PQ_F_ACOS: r = acos(v); break;
    case PQ_F_ATAN: r = atan(v); break;
    case PQ_F_SINH: r = sinh(v); break;
    case PQ_F_COSH: r = cosh(v); break;
    case PQ_F_TANH: r = tanh(v); break;
    case PQ_F_ASINH: r = asinh(v); break;
    case PQ_F_ACOSH: r = acosh(v); break;
    case PQ_F_ATANH: r = atanh(v); break;
    case PQ_F_RAD: r = v * GO_PI / 180; break;
    case PQ_F_DEG: r = v * 180 / GO_PI; break;
    case PQ_F_SGN:
        if (v < 0)
            r = -1;
        else if (v > 0)
            r = 1;
        else
            r = v; /* 0, -0 and NaN unchanged */
        break;
    case PQ_F_ROUND: {
        /* "Invert as it seems to cause fewer floating point accuracy
         * issues" -- 2.42 divides by the inverse. */
        double to_nearest = nargs >= 1 ? args[0] : 1;
        double inv = 1.0 / to_nearest;
        r = floor(v * inv + 0.5) / inv;
        break;
    }
    case PQ_F_CLAMP: {
        if (nargs < 2) return 0;
        double lo = args[0], hi = args[1];
        if (hi < lo) return 0;
        r = pq__go_max(lo, pq__go_min(hi, v));
        break;
    }
    case PQ_F_CLAMP_MAX:
        if (nargs < 1) return 0;
        r = pq__go_min(args[0], v);
        break;
    case PQ_F_CLAMP_MIN:
        if (nargs < 1) return 0;
        r = pq__go_max(args[0], v);
        break;
    default: return pq__fn_date(id, v, ret); /* the date functions; 0 for other ids */
    }
    *ret = r;
    return 1;
}

/* ---- binary operators ------------------------------------------------------ */

int pq_binop_apply(pq_binop op, double lhs, double rhs, double *ret) {
    switch (op) {
    case PQ_OP_ADD: *ret = lhs + rhs; return 1;
    case PQ_OP_SUB: *ret = lhs - rhs; return 1;
    case PQ_OP_MUL: *ret = lhs * rhs; return 1;
    case PQ_OP_DIV: *ret = lhs / rhs; return 1;
    case PQ_OP_POW: *ret = pq__go_pow(lhs, rhs); return 1;
    /* Go's math.Mod: NaN for y == 0, x = +-Inf or a NaN; x for y = +-Inf;
     * else the exact remainder with the sign of x -- fmod exactly. */
    case PQ_OP_MOD: *ret = fmod(lhs, rhs); return 1;
    case PQ_OP_ATAN2: *ret = atan2(lhs, rhs); return 1;
    case PQ_OP_EQL: *ret = lhs; return lhs == rhs;
    case PQ_OP_NEQ: *ret = lhs; return lhs != rhs;
    case PQ_OP_GTR: *ret = lhs; return lhs > rhs;
    case PQ_OP_LSS: *ret = lhs; return lhs < rhs;
    case PQ_OP_GTE: *ret = lhs; return lhs >= rhs;
    case PQ_OP_LTE: *ret = lhs; return lhs <= rhs;
    case PQ_OP_AND:
    case PQ_OP_OR:
    case PQ_OP_UNLESS: break;
    }
    *ret = NAN; /* set operators have no arithmetic */
    return 0;
}

/* ---- aggregation arithmetic ------------------------------------------------- */

/* 2.42's groupedAggregation starts from the group's first sample:
 * value = mean = v, groupCount = 1; stddev/stdvar restart value (their
 * running sum of squares) at 0, group sets it to 1. Here stddev/stdvar
 * keep that sum in m2. */
void pq_agg_init(pq_aggop op, pq_agg_acc *a, double first) {
    a->value = first;
    a->mean = first;
    a->count = 1;
    a->m2 = 0;
    a->has_float = 1;
    if (op == PQ_AGG_GROUP) a->value = 1;
}

void pq_agg_add(pq_aggop op, pq_agg_acc *a, double v) {
    switch (op) {
    case PQ_AGG_SUM: a->value += v; break;
    case PQ_AGG_AVG:
        a->count++;
        if (isinf(a->mean)) {
            /* Inf of the same sign: the mean is right already */
            if (isinf(v) && (a->mean > 0) == (v > 0)) break;
            /* a finite number cannot move an infinite mean (Inf - Inf
             * below would make it NaN) */
            if (!isinf(v) && !isnan(v)) break;
        }
        /* each side of the - divided by the count against overflow */
        a->mean += v / a->count - a->mean / a->count;
        break;
    case PQ_AGG_COUNT:
    case PQ_AGG_COUNT_VALUES: a->count++; break;
    case PQ_AGG_MIN:
        if (a->value > v || isnan(a->value)) a->value = v;
        break;
    case PQ_AGG_MAX:
        if (a->value < v || isnan(a->value)) a->value = v;
        break;
    case PQ_AGG_STDDEV:
    case PQ_AGG_STDVAR: {
        a->count++;
        double delta = v - a->mean;
        a->mean += delta / a->count;
        a->m2 += delta * (v - a->mean);
        break;
    }
    case PQ_AGG_GROUP:
    case PQ_AGG_TOPK:
    case PQ_AGG_BOTTOMK:
    case PQ_AGG_QUANTILE: break; /* the evaluator's (heaps, value lists) */
    }
}

double pq_agg_result(pq_aggop op, const pq_agg_acc *a) {
    switch (op) {
    case PQ_AGG_AVG: return a->mean;
    case PQ_AGG_COUNT:
    case PQ_AGG_COUNT_VALUES: return a->count;
    case PQ_AGG_STDVAR: return a->m2 / a->count;
    case PQ_AGG_STDDEV: return sqrt(a->m2 / a->count);
    default: return a->value;
    }
}
