/* num.c -- checked parsers and shortest round-trip float formatting.
 *
 * Shortest digits come from base_shortest_digits() (num_shortest.c, Ryu);
 * this file places them ('f', 'g' and 'e' layouts).
 *
 * Parsing follows Go's strconv.ParseFloat: short decimals take Clinger's
 * exact fast path; the rest go through strtod (correctly rounded, as Go).
 */
#include "base/num.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"

int base_parse_u64(const char *s, size_t n, uint64_t *ret) {
    if (n == 0) return BASE_E_PARSE;
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned d = (unsigned char)s[i] - '0';
        if (d > 9) return BASE_E_PARSE;
        if (v > (UINT64_MAX - d) / 10) return BASE_E_RANGE;
        v = v * 10 + d;
    }
    *ret = v;
    return 0;
}

int base_parse_i64(const char *s, size_t n, int64_t *ret) {
    int neg = 0;
    if (n && (s[0] == '-' || s[0] == '+')) {
        neg = s[0] == '-';
        s++;
        n--;
    }
    uint64_t u;
    int rc = base_parse_u64(s, n, &u);
    if (rc) return rc;
    if (neg) {
        if (u > (uint64_t)INT64_MAX + 1) return BASE_E_RANGE;
        *ret = u == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)u;
    } else {
        if (u > (uint64_t)INT64_MAX) return BASE_E_RANGE;
        *ret = (int64_t)u;
    }
    return 0;
}

static int ieq(const char *s, size_t n, const char *word) {
    size_t wn = strlen(word);
    if (n != wn) return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c >= 'A' && c <= 'Z') c = (char)(c - 'A' + 'a');
        if (c != word[i]) return 0;
    }
    return 1;
}

/* Clinger's fast path: a mantissa below 2^53 times or divided by an exact
 * power of ten is one correctly rounded IEEE operation. */
static const double pow10_exact[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                                       1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

int base_parse_double(const char *s, size_t n, double *ret) {
    if (n == 0) return BASE_E_PARSE;
    size_t i = 0;
    int neg = 0;
    if (s[0] == '+' || s[0] == '-') {
        neg = s[0] == '-';
        i = 1;
    }
    /* Go's special(): a sign is allowed before inf/infinity, not nan. */
    if (ieq(s + i, n - i, "inf") || ieq(s + i, n - i, "infinity")) {
        *ret = neg ? -INFINITY : INFINITY;
        return 0;
    }
    if (i == 0 && ieq(s, n, "nan")) {
        *ret = NAN;
        return 0;
    }
    /* Validate the grammar ourselves: strtod accepts hex, blanks, "in". */
    size_t digits = 0, frac = 0, sig = 0;
    uint64_t mant = 0;
    int exact = 1; /* mant holds every digit */
    for (; i < n && s[i] >= '0' && s[i] <= '9'; i++, digits++) {
        if (mant == 0 && s[i] == '0') continue;
        if (++sig > 19)
            exact = 0;
        else
            mant = mant * 10 + (uint64_t)(s[i] - '0');
    }
    if (i < n && s[i] == '.') {
        i++;
        for (; i < n && s[i] >= '0' && s[i] <= '9'; i++, digits++, frac++) {
            if (mant == 0 && s[i] == '0') continue;
            if (++sig > 19)
                exact = 0;
            else
                mant = mant * 10 + (uint64_t)(s[i] - '0');
        }
    }
    if (digits == 0) return BASE_E_PARSE;
    long e10 = 0;
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        int eneg = 0;
        if (i < n && (s[i] == '+' || s[i] == '-')) eneg = s[i++] == '-';
        size_t ed = 0;
        for (; i < n && s[i] >= '0' && s[i] <= '9'; i++, ed++)
            if (e10 < 100000) e10 = e10 * 10 + (s[i] - '0');
        if (ed == 0) return BASE_E_PARSE;
        if (eneg) e10 = -e10;
    }
    if (i != n) return BASE_E_PARSE;
    long e = e10 - (long)frac;
    if (exact && mant < (UINT64_C(1) << 53) && e >= -22 && e <= 22) {
        double v = (double)mant;
        v = e < 0 ? v / pow10_exact[-e] : v * pow10_exact[e];
        *ret = neg ? -v : v;
        return 0;
    }
    char small[128], *tmp = small;
    if (n >= sizeof small) {
        tmp = malloc(n + 1);
        if (!tmp) return BASE_E_NOMEM;
    }
    memcpy(tmp, s, n);
    tmp[n] = '\0';
    errno = 0;
    double v = strtod(tmp, NULL);
    int overflow = errno == ERANGE && isinf(v);
    if (tmp != small) free(tmp);
    /* Go's ParseFloat: overflow is an error, underflow to 0 or a
     * subnormal is not. */
    if (overflow) return BASE_E_RANGE;
    *ret = v;
    return 0;
}

size_t base_fmt_u64(char *out, uint64_t v) {
    char tmp[24];
    size_t n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    for (size_t i = 0; i < n; i++) out[i] = tmp[n - 1 - i];
    out[n] = '\0';
    return n;
}

size_t base_fmt_i64(char *out, int64_t v) {
    if (v < 0) {
        out[0] = '-';
        return 1 + base_fmt_u64(out + 1, v == INT64_MIN ? (uint64_t)INT64_MAX + 1 : (uint64_t)-v);
    }
    return base_fmt_u64(out, (uint64_t)v);
}

static size_t fmt_special(char *out, double v) {
    const char *s = isnan(v) ? "NaN" : v > 0 ? "+Inf" : "-Inf";
    size_t n = strlen(s);
    memcpy(out, s, n + 1);
    return n;
}

/* Writes digits[0..nd) with the point placed for exponent exp10 ('f' style). */
static size_t put_fixed(char *o, const char *digits, int nd, int exp10) {
    size_t n = 0;
    if (exp10 < 0) {
        o[n++] = '0';
        o[n++] = '.';
        for (int i = -1; i > exp10; i--) o[n++] = '0';
        for (int i = 0; i < nd; i++) o[n++] = digits[i];
    } else {
        for (int i = 0; i <= exp10; i++) o[n++] = i < nd ? digits[i] : '0';
        if (nd > exp10 + 1) {
            o[n++] = '.';
            for (int i = exp10 + 1; i < nd; i++) o[n++] = digits[i];
        }
    }
    return n;
}

static size_t put_exp(char *o, const char *digits, int nd, int exp10) {
    size_t n = 0;
    o[n++] = digits[0];
    if (nd > 1) {
        o[n++] = '.';
        for (int i = 1; i < nd; i++) o[n++] = digits[i];
    }
    o[n++] = 'e';
    o[n++] = exp10 < 0 ? '-' : '+';
    int e = abs(exp10);
    if (e >= 100) o[n++] = (char)('0' + e / 100);
    o[n++] = (char)('0' + e / 10 % 10);
    o[n++] = (char)('0' + e % 10);
    return n;
}

size_t base_fmt_double_g(char out[BASE_FMT_DOUBLE_MAX], double v) {
    if (isnan(v) || isinf(v)) return fmt_special(out, v);
    size_t n = 0;
    if (signbit(v)) out[n++] = '-';
    if (v == 0) {
        out[n++] = '0';
        out[n] = '\0';
        return n;
    }
    char digits[20];
    int exp10;
    int nd = base_shortest_digits(v, digits, &exp10);
    /* Go's FormatFloat 'g' with precision -1 uses %e when the decimal
     * exponent is < -4 or >= 6 ("use precision 6 for this decision"):
     * 1e+06, 1.234567e+06, 123456, 0.0001, 1e-05. */
    if (exp10 < -4 || exp10 >= 6)
        n += put_exp(out + n, digits, nd, exp10);
    else
        n += put_fixed(out + n, digits, nd, exp10);
    out[n] = '\0';
    return n;
}

size_t base_fmt_double_e(char out[BASE_FMT_DOUBLE_MAX], double v, int upper) {
    if (isnan(v) || isinf(v)) return fmt_special(out, v);
    size_t n = 0;
    if (signbit(v)) out[n++] = '-';
    char d[20];
    int e10 = 0, nd = 1;
    if (v == 0)
        d[0] = '0';
    else
        nd = base_shortest_digits(fabs(v), d, &e10); /* v = d[0].d[1..] x 10^e10 */
    out[n++] = d[0];
    if (nd > 1) {
        out[n++] = '.';
        memcpy(out + n, d + 1, (size_t)nd - 1);
        n += (size_t)nd - 1;
    }
    out[n++] = upper ? 'E' : 'e';
    out[n++] = e10 < 0 ? '-' : '+';
    int a = e10 < 0 ? -e10 : e10;
    if (a >= 100) out[n++] = (char)('0' + a / 100);
    out[n++] = (char)('0' + a / 10 % 10);
    out[n++] = (char)('0' + a % 10);
    out[n] = '\0';
    return n;
}

size_t base_fmt_double_f(char out[BASE_FMT_DOUBLE_MAX], double v) {
    if (isnan(v) || isinf(v)) return fmt_special(out, v);
    size_t n = 0;
    if (signbit(v)) out[n++] = '-'; /* Go writes -0 as "-0" */
    if (v == 0) {
        out[n++] = '0';
        out[n] = '\0';
        return n;
    }
    char digits[20];
    int exp10;
    int nd = base_shortest_digits(v, digits, &exp10);
    double a = fabs(v);
    if (a < 1e-6 || a >= 1e21)
        n += put_exp(out + n, digits, nd, exp10);
    else
        n += put_fixed(out + n, digits, nd, exp10);
    out[n] = '\0';
    return n;
}
