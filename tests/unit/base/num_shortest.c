/* tests/unit/base/num_shortest.c -- base_shortest_digits (Ryu, in
 * src/base/num_shortest.c) against the reference it replaced.
 *
 * The reference (ref_shortest below) is the previous printf/strtod
 * implementation, kept here verbatim as the oracle: shortest digits that
 * strtod reads back, the nearest such at that length (glibc's printf rounds
 * exactly, ties to even), its neighbour at a lopsided power-of-two interval.
 * Every value is compared digit for digit, with the exponent; any mismatch
 * fails. Sets: random bit patterns over all exponents and subnormals
 * (KELVIN_SHORTEST_N of them, default 1,000,000; the 20 M check is
 * KELVIN_SHORTEST_N=20000000), "computed" values (sums, quotients, rates of
 * decimals), every power of two and of ten with nextafter neighbours,
 * DBL_MIN/DBL_MAX/DBL_TRUE_MIN, integers near 2^53, exact decimal ties, and
 * the cases of tests/unit/base/num.c.
 */
#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/num.h"

/* Splits "d.ddde[+-]XX" (printf %e of a positive number) into digits. */
static int split_exp(const char *tmp, char digits[20], int *ret_exp10) {
    const char *e = strchr(tmp, 'e');
    int n = 0;
    for (const char *p = tmp; p < e; p++)
        if (*p != '.') digits[n++] = *p;
    *ret_exp10 = atoi(e + 1);
    return n;
}

/* Whether digits[0..nd) x 10^(exp10-nd+1) reads back as a. */
static int reads_back(const char *digits, int nd, int exp10, double a) {
    char tmp[48];
    memcpy(tmp, digits, (size_t)nd);
    snprintf(tmp + nd, sizeof tmp - (size_t)nd, "e%d", exp10 - nd + 1);
    return strtod(tmp, NULL) == a;
}

/* Adds delta (+1/-1) to the last of nd digits; returns 0 when the result
 * would change the digit count or exponent (not a neighbour of the same
 * length). */
static int bump(char *d, int nd, int delta) {
    for (int k = nd - 1; k >= 0; k--) {
        if (delta > 0 && d[k] < '9') {
            d[k]++;
            return 1;
        }
        if (delta < 0 && d[k] > '0') {
            d[k]--;
            return k > 0 || d[0] != '0';
        }
        d[k] = delta > 0 ? '0' : '9';
    }
    return 0;
}

static int ref_shortest(double v, char digits[20], int *ret_exp10) {
    double a = fabs(v);
    if (a < 1e15 && a == floor(a) && a >= 1) {
        char tmp[24];
        size_t n = base_fmt_u64(tmp, (uint64_t)a);
        *ret_exp10 = (int)n - 1;
        while (n > 1 && tmp[n - 1] == '0') n--;
        memcpy(digits, tmp, n);
        return (int)n;
    }
    /* Short decimals, the common case for measured values (78.527 W, a
     * 0.042 ratio): the fewest fractional digits k for which m =
     * round(a * 10^k) reads back. m and 10^k are exact doubles, so m / 10^k
     * is the correctly rounded value of the decimal m x 10^-k, which is what
     * strtod would return: equality is the round-trip test, with no printf
     * and no strtod. The first k that works gives the fewest digits. */
    if (a >= 1e-5 && a < 1e15) {
        /* Powers of ten are exact doubles up to 1e22. */
        static const double p10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                                     1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
        for (int k = 1; k < 23; k++) {
            double sc = a * p10[k];
            if (sc >= 9007199254740992.0) break; /* m must stay exact (< 2^53) */
            /* a * 10^k is itself rounded, so the wanted integer may be
             * one away from the nearest to the product. */
            double m = nearbyint(sc);
            if (m / p10[k] != a) {
                if ((m + 1) / p10[k] == a)
                    m += 1;
                else if (m >= 1 && (m - 1) / p10[k] == a)
                    m -= 1;
                else
                    continue;
            }
            char tmp[24];
            int n = (int)base_fmt_u64(tmp, (uint64_t)m);
            *ret_exp10 = n - 1 - k;
            while (n > 1 && tmp[n - 1] == '0') n--;
            memcpy(digits, tmp, (size_t)n);
            return n;
        }
    }
    /* For a normal double, a decimal of k <= 15 digits that reads back is
     * also the nearest 15-digit decimal (padded with zeros), so starting at
     * 15 and stripping zeros finds the shortest. Subnormals carry fewer
     * digits and search from 1. At each length the nearest decimal is
     * tried, then its neighbours: at a power of two the rounding interval
     * is lopsided and the nearest may miss while a neighbour reads back
     * (Go's shortest formatting picks that neighbour). */
    char tmp[48];
    /* In the fast path's range it already ruled out every decimal of up to
     * 15 digits (and most of 16), so start at 16 there. */
    int first = a < DBL_MIN ? 1 : (a >= 1e-5 && a < 1e15) ? 16 : 15;
    for (int prec = first; prec <= 17; prec++) {
        snprintf(tmp, sizeof tmp, "%.*e", prec - 1, a);
        int exp10, n = split_exp(tmp, digits, &exp10);
        int ok = prec == 17 || strtod(tmp, NULL) == a;
        if (!ok) {
            char alt[20];
            for (int delta = -1; delta <= 1 && !ok; delta += 2) {
                memcpy(alt, digits, (size_t)n);
                if (bump(alt, n, delta) && reads_back(alt, n, exp10, a)) {
                    memcpy(digits, alt, (size_t)n);
                    ok = 1;
                }
            }
        }
        if (!ok) continue;
        while (n > 1 && digits[n - 1] == '0') n--;
        *ret_exp10 = exp10;
        return n;
    }
    return 0; /* not reached: 17 digits always read back */
}

static uint64_t rng = 0x2545f4914f6cdd1du;
static uint64_t next(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static double from_bits(uint64_t b) {
    double v;
    memcpy(&v, &b, sizeof v);
    return v;
}

static uint64_t bits_of(double v) {
    uint64_t b;
    memcpy(&b, &v, sizeof b);
    return b;
}

static unsigned long n_checked, n_bad;

/* Compares new and reference on finite nonzero v (and -v); counts. */
static void check(double v) {
    if (!isfinite(v) || v == 0) return;
    char want[24], got[24], gotn[24];
    int we, ge, gne;
    int wn = ref_shortest(fabs(v), want, &we);
    int gn = base_shortest_digits(fabs(v), got, &ge);
    int gnn = base_shortest_digits(-fabs(v), gotn, &gne);
    n_checked++;
    if (wn != gn || we != ge || memcmp(want, got, (size_t)wn) != 0 || gnn != gn || gne != ge ||
        memcmp(got, gotn, (size_t)gn) != 0) {
        if (n_bad++ < 20)
            print_error("mismatch for %.17g (bits %016llx): want %.*s e%d, got %.*s e%d\n", v,
                        (unsigned long long)bits_of(v), wn, want, we, gn, got, ge);
    }
}

static void test_random_bits(void **state) {
    (void)state;
    unsigned long n = 1000000;
    const char *env = getenv("KELVIN_SHORTEST_N");
    if (env && *env) n = strtoul(env, NULL, 10);
    n_checked = n_bad = 0;
    for (unsigned long i = 0; i < n; i++) {
        uint64_t b = next();
        if (i % 8 == 0) b &= ~(UINT64_C(0x7ff) << 52); /* subnormals */
        check(from_bits(b));
    }
    print_message("random bit patterns: %lu checked, %lu mismatches\n", n_checked, n_bad);
    assert_int_equal(n_bad, 0);
    assert_true(n_checked > n / 2);
}

static void test_computed(void **state) {
    (void)state;
    n_checked = n_bad = 0;
    for (int i = 0; i < 200000; i++) {
        double a = (double)(next() % 100000000u) / 1000.0; /* short decimals */
        double b = (double)(next() % 1000000u) / 100.0;
        double dt = (double)(1 + next() % 3600);
        check(a + b);
        check(a - b);
        check(a * b);
        if (b != 0) check(a / b);
        check(a / dt);             /* rate */
        check((a + b) / 3);        /* average */
        check(a * 0.1 + b * 0.01); /* sums of decimals */
        check(log(1 + a) / 7);
    }
    print_message("computed values: %lu checked, %lu mismatches\n", n_checked, n_bad);
    assert_int_equal(n_bad, 0);
}

static void test_boundaries(void **state) {
    (void)state;
    n_checked = n_bad = 0;
    for (int e = -1074; e <= 1023; e++) {
        double p = ldexp(1, e);
        double d = p;
        for (int k = 0; k < 3; k++) d = nextafter(d, 0);
        for (int k = 0; k < 7; k++, d = nextafter(d, INFINITY)) check(d);
        check(p * 1.5);
        check(p * 1.1);
    }
    for (int e = -325; e <= 308; e++) {
        char s[16];
        snprintf(s, sizeof s, "1e%d", e);
        double p = strtod(s, NULL);
        double d = p;
        for (int k = 0; k < 4 && d > 0; k++) d = nextafter(d, 0);
        for (int k = 0; k < 9; k++, d = nextafter(d, INFINITY)) check(d);
        for (int m = 2; m <= 9; m++) check(p * m);
    }
    double edges[] = {DBL_MIN,
                      DBL_MAX,
                      DBL_TRUE_MIN,
                      nextafter(DBL_MIN, 0),
                      nextafter(DBL_MIN, 1),
                      nextafter(DBL_MAX, 0),
                      2 * DBL_TRUE_MIN,
                      3 * DBL_TRUE_MIN,
                      1e15 + 0.25,
                      1e15 + 0.75,
                      1234567890123456.5,
                      1000000000000000.125,
                      4503599627370495.5};
    for (size_t i = 0; i < sizeof edges / sizeof edges[0]; i++) check(edges[i]);
    for (int64_t k = -2000; k <= 2000; k++) {
        check((double)((INT64_C(1) << 53) + k));
        check((double)((INT64_C(1) << 54) + k));
        check((double)(INT64_C(1000000000000000) + k) + 0.25); /* ties at 17 digits */
        check((double)(INT64_C(2251799813685248) + k) + 0.25);
    }
    for (int i = 1; i <= 200000; i++) {
        check(i);
        check(i / 1000.0);
        check(i * 1e-9);
        check(i * 1e17);
    }
    /* The cases of tests/unit/base/num.c. */
    double cases[] = {1e6,
                      1234567,
                      123456,
                      0.0001,
                      1e-05,
                      0.1,
                      0.3,
                      0.1 + 0.2,
                      1.7976931348623157e308,
                      5e-324,
                      2.5165824e+10,
                      1.7e+09,
                      1,
                      100,
                      999999,
                      1e21,
                      1e15,
                      123456.7,
                      1234567.8,
                      0.00001234,
                      4.9351e-05,
                      7.424100000000001e-05,
                      2.06532178e+06,
                      1.5e-323,
                      123.45,
                      0.001,
                      4e10,
                      1e-7,
                      1e20,
                      9.999999999999999e20,
                      78.527,
                      0.042};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) check(cases[i]);
    print_message("boundary values: %lu checked, %lu mismatches\n", n_checked, n_bad);
    assert_int_equal(n_bad, 0);
}

/* A known answer per path, so the test fails even if both sides drifted. */
static void test_known(void **state) {
    (void)state;
    char d[24];
    int e;
    int n = base_shortest_digits(0.1 + 0.2, d, &e);
    assert_int_equal(n, 17);
    assert_memory_equal(d, "30000000000000004", 17);
    assert_int_equal(e, -1);
    n = base_shortest_digits(DBL_TRUE_MIN, d, &e);
    assert_int_equal(n, 1);
    assert_int_equal(d[0], '5');
    assert_int_equal(e, -324);
    n = base_shortest_digits(1e15 + 0.25, d, &e); /* exact tie: to even */
    assert_int_equal(n, 17);
    assert_memory_equal(d, "10000000000000002", 17);
    assert_int_equal(e, 15);
    n = base_shortest_digits(-4e10, d, &e);
    assert_int_equal(n, 1);
    assert_int_equal(e, 10);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_known),
        cmocka_unit_test(test_boundaries),
        cmocka_unit_test(test_computed),
        cmocka_unit_test(test_random_bits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
