/* num.h -- checked number parsing and exact number formatting.
 *
 * Parsers take a pointer and a length (input is never assumed to be
 * NUL-terminated), consume the whole span or fail, and write *ret only on
 * success. They return 0, BASE_E_PARSE (not a number) or BASE_E_RANGE.
 *
 * Formatters write into a caller buffer, add a NUL, and return the length.
 * base_fmt_double_g() matches Go's strconv.FormatFloat(v, 'g', -1, 64),
 * which is what client_golang (node_exporter) writes in /metrics;
 * base_fmt_double_f() matches the Prometheus HTTP API's value strings
 * (FormatFloat 'f', -1, switching to 'e' for |v| < 1e-6 or >= 1e21).
 * Both print the shortest digits that read back to the same double.
 */
#ifndef KELVIN_BASE_NUM_H
#define KELVIN_BASE_NUM_H

#include <stddef.h>
#include <stdint.h>

#define BASE_FMT_DOUBLE_MAX 32

/* Prometheus's staleness marker (value.StaleNaN): a NaN with these bits,
 * told apart from every other NaN by its bits alone. */
#define BASE_STALE_NAN_BITS UINT64_C(0x7ff0000000000002)
static inline double base_stale_nan(void) {
    uint64_t b = BASE_STALE_NAN_BITS;
    double d;
    __builtin_memcpy(&d, &b, sizeof d);
    return d;
}
static inline int base_is_stale(double v) {
    uint64_t b;
    __builtin_memcpy(&b, &v, sizeof b);
    return b == BASE_STALE_NAN_BITS;
}

int base_parse_u64(const char *s, size_t n, uint64_t *ret);
int base_parse_i64(const char *s, size_t n, int64_t *ret);
/* Go's strconv.ParseFloat(s, 64) for decimal input: floats with optional
 * exponent, and (any case) "inf", "infinity" with an optional sign, "nan"
 * without one. No hex, no underscores, no blanks. Overflow is
 * BASE_E_RANGE (Go's ErrRange); underflow to 0 or a subnormal is not an
 * error. Correctly rounded. Inputs of 128 bytes or more need a temporary
 * copy (BASE_E_NOMEM if that fails). */
int base_parse_double(const char *s, size_t n, double *ret);

/* out must hold at least 24 bytes. */
size_t base_fmt_u64(char *out, uint64_t v);
size_t base_fmt_i64(char *out, int64_t v);
size_t base_fmt_double_g(char out[BASE_FMT_DOUBLE_MAX], double v);
size_t base_fmt_double_f(char out[BASE_FMT_DOUBLE_MAX], double v);
/* strconv.FormatFloat(v, 'e', -1, 64) ('E' when upper): "1e+00", "-1.5E-07",
 * "NaN", "+Inf". */
size_t base_fmt_double_e(char out[BASE_FMT_DOUBLE_MAX], double v, int upper);

/* The shortest decimal digits of finite v != 0 that round-trip: writes
 * up to 17 digits (no sign, no point) to digits and returns their count;
 * *ret_exp10 is the decimal exponent of the first digit (v = 0.d1d2.. x
 * 10^(exp10+1)). */
int base_shortest_digits(double v, char digits[20], int *ret_exp10);

#endif
