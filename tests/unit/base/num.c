/* tests/unit/base/num.c -- checked parsers and Go-compatible formatting.
 *
 * Expected strings are what Go prints: strconv.FormatFloat(v, 'g', -1, 64)
 * for base_fmt_double_g (client_golang's /metrics values) and the
 * Prometheus HTTP API's FormatFloat(v, 'f', -1, 64) with 'e' for |v| < 1e-6
 * or >= 1e21 for base_fmt_double_f. Parsing follows strconv.ParseFloat.
 */
#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/err.h"
#include "base/num.h"

static double from_bits(uint64_t b) {
    double v;
    memcpy(&v, &b, sizeof v);
    return v;
}

static void test_fmt_g(void **state) {
    (void)state;
    static const struct {
        double v;
        const char *want;
    } cases[] = {
        {1e6, "1e+06"},
        {1234567, "1.234567e+06"},
        {123456, "123456"},
        {0.0001, "0.0001"},
        {1e-05, "1e-05"},
        {0.1, "0.1"},
        {0.3, "0.3"},
        {0.1 + 0.2, "0.30000000000000004"},
        {1.7976931348623157e308, "1.7976931348623157e+308"},
        {5e-324, "5e-324"},
        {-0.0, "-0"},
        {0, "0"},
        {2.5165824e+10, "2.5165824e+10"},
        {1.7e+09, "1.7e+09"},
        {1, "1"},
        {-1, "-1"},
        {100, "100"},
        {999999, "999999"},
        {1e21, "1e+21"},
        {1e15, "1e+15"},
        {123456.7, "123456.7"},
        {1234567.8, "1.2345678e+06"},
        {0.00001234, "1.234e-05"},
        {4.9351e-05, "4.9351e-05"},
        {7.424100000000001e-05, "7.424100000000001e-05"},
        {2.06532178e+06, "2.06532178e+06"},
        {1.5e-323, "1.5e-323"},
        {2.2250738585072014e-308, "2.2250738585072014e-308"}, /* DBL_MIN */
        {2.225073858507201e-308, "2.225073858507201e-308"},   /* largest subnormal */
        {9007199254740993.0, "9.007199254740992e+15"},
        {123456789012345680.0, "1.2345678901234568e+17"},
        {1e23, "1e+23"},
        {-273.15, "-273.15"},
    };
    char out[BASE_FMT_DOUBLE_MAX];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t n = base_fmt_double_g(out, cases[i].v);
        assert_string_equal(out, cases[i].want);
        assert_int_equal(n, strlen(cases[i].want));
    }
    base_fmt_double_g(out, NAN);
    assert_string_equal(out, "NaN");
    base_fmt_double_g(out, INFINITY);
    assert_string_equal(out, "+Inf");
    base_fmt_double_g(out, -INFINITY);
    assert_string_equal(out, "-Inf");
    base_fmt_double_g(out, from_bits(UINT64_C(0x7ff0000000000002))); /* the stale marker */
    assert_string_equal(out, "NaN");
    /* 2^-1016: at a power of two the nearest 16-digit decimal does not read
     * back but its neighbour does; Go prints the neighbour */
    base_fmt_double_g(out, from_bits(UINT64_C(0x0060000000000000)));
    assert_string_equal(out, "7.120236347223045e-307");
    base_fmt_double_g(out, from_bits(UINT64_C(0x0100000000000000)));
    assert_string_equal(out, "7.291122019556398e-304");
}

static void test_fmt_f(void **state) {
    (void)state;
    static const struct {
        double v;
        const char *want;
    } cases[] = {
        {0, "0"},
        {-0.0, "-0"},
        {1, "1"},
        {0.1, "0.1"},
        {1e6, "1000000"},
        {2.5165824e+10, "25165824000"},
        {123456789.123, "123456789.123"},
        {1e-6, "0.000001"},
        {9.99e-7, "9.99e-07"},
        {1e20, "100000000000000000000"},
        {1e21, "1e+21"},
        {-1e21, "-1e+21"},
        {1.7976931348623157e308, "1.7976931348623157e+308"},
        {5e-324, "5e-324"},
        {0.30000000000000004, "0.30000000000000004"},
        {-2.5, "-2.5"},
        {1700000000.123, "1700000000.123"},
    };
    char out[BASE_FMT_DOUBLE_MAX];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        base_fmt_double_f(out, cases[i].v);
        assert_string_equal(out, cases[i].want);
    }
    base_fmt_double_f(out, NAN);
    assert_string_equal(out, "NaN");
    base_fmt_double_f(out, INFINITY);
    assert_string_equal(out, "+Inf");
    base_fmt_double_f(out, -INFINITY);
    assert_string_equal(out, "-Inf");
}

/* Shortest digits read back to the same double, for many bit patterns. */
/* strconv.FormatFloat(v, 'e' / 'E', -1, 64), values from Go. */
static void test_fmt_e(void **state) {
    (void)state;
    static const struct {
        double v;
        const char *e;
    } cases[] = {
        {1, "1e+00"},         {0, "0e+00"},
        {-0.0, "-0e+00"},     {1.5, "1.5e+00"},
        {100, "1e+02"},       {0.001234, "1.234e-03"},
        {-42.5, "-4.25e+01"}, {1e21, "1e+21"},
        {5e-324, "5e-324"},   {1.7976931348623157e308, "1.7976931348623157e+308"},
        {0.1, "1e-01"},       {123456789, "1.23456789e+08"},
        {NAN, "NaN"},         {INFINITY, "+Inf"},
        {-INFINITY, "-Inf"},
    };
    char out[BASE_FMT_DOUBLE_MAX];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t n = base_fmt_double_e(out, cases[i].v, 0);
        assert_int_equal(n, strlen(cases[i].e));
        assert_string_equal(out, cases[i].e);
    }
    base_fmt_double_e(out, 1.5e-7, 1);
    assert_string_equal(out, "1.5E-07");
}

static void test_fmt_round_trip(void **state) {
    (void)state;
    uint64_t x = 0x9e3779b97f4a7c15ull;
    char out[BASE_FMT_DOUBLE_MAX];
    for (int i = 0; i < 50000; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        uint64_t b = i % 4 == 0   ? x & UINT64_C(0x000fffffffffffff)   /* subnormals */
                     : i % 4 == 1 ? (x & UINT64_C(0x7ff0000000000000)) /* powers of two */
                                  : x;
        double v = from_bits(b);
        if (isnan(v) || isinf(v)) continue;
        size_t n = base_fmt_double_g(out, v);
        assert_true(n < BASE_FMT_DOUBLE_MAX);
        double back;
        assert_int_equal(base_parse_double(out, n, &back), 0);
        if (memcmp(&back, &v, sizeof v) != 0) fail_msg("%016llx -> %s", (unsigned long long)b, out);
        n = base_fmt_double_f(out, v);
        assert_int_equal(base_parse_double(out, n, &back), 0);
        if (memcmp(&back, &v, sizeof v) != 0) fail_msg("f %016llx -> %s", (unsigned long long)b, out);
    }
}

/* Short decimals (the common case, served by the fast path): the output
 * reads back exactly and never has more significant digits than the
 * decimal the value was made from. */
static void test_fmt_short_decimals(void **state) {
    (void)state;
    static const double p10[] = {1, 10, 100, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9};
    uint64_t x = 0x2545f4914f6cdd1dull;
    char out[BASE_FMT_DOUBLE_MAX], digits[20];
    for (int i = 0; i < 100000; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        uint64_t m = x % 1000000000000ull; /* up to 12 digits */
        double v = (double)m / p10[(x >> 40) % 10];
        size_t n = base_fmt_double_g(out, v);
        double back;
        assert_int_equal(base_parse_double(out, n, &back), 0);
        if (memcmp(&back, &v, sizeof v) != 0) fail_msg("%.17g -> %s", v, out);
        if (v == 0) continue;
        int exp10, nd = base_shortest_digits(v, digits, &exp10), md = 0;
        for (uint64_t t = m; t; t /= 10) md++;
        if (nd > md) fail_msg("%.17g: %d digits, the decimal it came from has %d", v, nd, md);
    }
}

static void test_parse_double(void **state) {
    (void)state;
    static const struct {
        const char *s;
        double want;
    } ok[] = {
        {"0", 0},
        {"-0", -0.0},
        {"+1", 1},
        {"1.", 1},
        {".5", 0.5},
        {"1e3", 1000},
        {"1E-3", 0.001},
        {"1e+3", 1000},
        {"0.1", 0.1},
        {"123.456", 123.456},
        {"inf", INFINITY},
        {"+Inf", INFINITY},
        {"-INF", -INFINITY},
        {"Infinity", INFINITY},
        {"-infinity", -INFINITY},
        {"1e-400", 0},
        {"4.9e-324", 5e-324},
        {"1.7976931348623157e308", DBL_MAX},
        {"12345678901234567890123", 12345678901234567890123.0},
        {"9007199254740993", 9007199254740992.0},
        {"0.1000000000000000055511151231257827", 0.1},
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        double v = 42;
        int rc = base_parse_double(ok[i].s, strlen(ok[i].s), &v);
        if (rc != 0) fail_msg("%s: rc %d", ok[i].s, rc);
        if (memcmp(&v, &ok[i].want, sizeof v) != 0) fail_msg("%s: got %.17g", ok[i].s, v);
    }
    double v;
    assert_int_equal(base_parse_double("NaN", 3, &v), 0);
    assert_true(isnan(v));
    assert_int_equal(base_parse_double("nan", 3, &v), 0);
    assert_true(isnan(v));

    static const char *garbage[] = {"",      "+",     "-",    ".",     "e5",      "1e",
                                    "1e+",   "1.2.3", " 1",   "1 ",    "0x10",    "0x1p3",
                                    "1_000", "+nan",  "-NaN", "in",    "infinit", "infinityy",
                                    "nana",  "1,5",   "--1",  "1e5.5", "true",    "\xff"};
    for (size_t i = 0; i < sizeof garbage / sizeof garbage[0]; i++) {
        v = 42;
        if (base_parse_double(garbage[i], strlen(garbage[i]), &v) != BASE_E_PARSE)
            fail_msg("accepted %s", garbage[i]);
        assert_true(v == 42); /* ret untouched on failure */
    }
    /* overflow is an error, like Go's ErrRange */
    assert_int_equal(base_parse_double("1e400", 5, &v), BASE_E_RANGE);
    assert_int_equal(base_parse_double("-1e309", 6, &v), BASE_E_RANGE);
    assert_int_equal(base_parse_double("1.8e308", 7, &v), BASE_E_RANGE);
    /* the input need not be NUL-terminated: only n bytes are read */
    assert_int_equal(base_parse_double("12345", 2, &v), 0);
    assert_true(v == 12);
    /* long inputs are fine */
    char lng[600];
    lng[0] = '0';
    lng[1] = '.';
    memset(lng + 2, '0', 500);
    lng[502] = '1';
    assert_int_equal(base_parse_double(lng, 503, &v), 0);
    assert_true(v == 0); /* underflows to 0 without error, as Go */
    memset(lng, '9', 400);
    assert_int_equal(base_parse_double(lng, 400, &v), BASE_E_RANGE);
    assert_int_equal(base_parse_double(lng, 300, &v), 0);
    assert_true(v == 1e300);
}

static void test_parse_ints(void **state) {
    (void)state;
    uint64_t u = 7;
    assert_int_equal(base_parse_u64("0", 1, &u), 0);
    assert_true(u == 0);
    assert_int_equal(base_parse_u64("18446744073709551615", 20, &u), 0);
    assert_true(u == UINT64_MAX);
    u = 7;
    assert_int_equal(base_parse_u64("18446744073709551616", 20, &u), BASE_E_RANGE);
    assert_int_equal(base_parse_u64("99999999999999999999999", 23, &u), BASE_E_RANGE);
    assert_int_equal(base_parse_u64("", 0, &u), BASE_E_PARSE);
    assert_int_equal(base_parse_u64("-1", 2, &u), BASE_E_PARSE);
    assert_int_equal(base_parse_u64("+1", 2, &u), BASE_E_PARSE);
    assert_int_equal(base_parse_u64("1a", 2, &u), BASE_E_PARSE);
    assert_int_equal(base_parse_u64(" 1", 2, &u), BASE_E_PARSE);
    assert_true(u == 7);
    assert_int_equal(base_parse_u64("123x", 3, &u), 0);
    assert_true(u == 123);

    int64_t i = 7;
    assert_int_equal(base_parse_i64("-9223372036854775808", 20, &i), 0);
    assert_true(i == INT64_MIN);
    assert_int_equal(base_parse_i64("9223372036854775807", 19, &i), 0);
    assert_true(i == INT64_MAX);
    assert_int_equal(base_parse_i64("+42", 3, &i), 0);
    assert_true(i == 42);
    i = 7;
    assert_int_equal(base_parse_i64("9223372036854775808", 19, &i), BASE_E_RANGE);
    assert_int_equal(base_parse_i64("-9223372036854775809", 20, &i), BASE_E_RANGE);
    assert_int_equal(base_parse_i64("-", 1, &i), BASE_E_PARSE);
    assert_int_equal(base_parse_i64("--1", 3, &i), BASE_E_PARSE);
    assert_int_equal(base_parse_i64("1.0", 3, &i), BASE_E_PARSE);
    assert_true(i == 7);
}

static void test_fmt_ints(void **state) {
    (void)state;
    char out[24];
    assert_int_equal(base_fmt_u64(out, 0), 1);
    assert_string_equal(out, "0");
    base_fmt_u64(out, UINT64_MAX);
    assert_string_equal(out, "18446744073709551615");
    base_fmt_i64(out, INT64_MIN);
    assert_string_equal(out, "-9223372036854775808");
    base_fmt_i64(out, -5);
    assert_string_equal(out, "-5");
    assert_int_equal(base_fmt_i64(out, INT64_MAX), 19);
}

static void test_shortest_digits(void **state) {
    (void)state;
    char d[20];
    int e;
    int n = base_shortest_digits(123.45, d, &e);
    assert_int_equal(n, 5);
    assert_memory_equal(d, "12345", 5);
    assert_int_equal(e, 2);
    n = base_shortest_digits(0.001, d, &e);
    assert_int_equal(n, 1);
    assert_int_equal(d[0], '1');
    assert_int_equal(e, -3);
    n = base_shortest_digits(-4e10, d, &e);
    assert_int_equal(n, 1);
    assert_int_equal(e, 10);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fmt_g),           cmocka_unit_test(test_fmt_f),
        cmocka_unit_test(test_fmt_e),           cmocka_unit_test(test_fmt_round_trip),
        cmocka_unit_test(test_parse_double),    cmocka_unit_test(test_fmt_short_decimals),
        cmocka_unit_test(test_parse_ints),      cmocka_unit_test(test_fmt_ints),
        cmocka_unit_test(test_shortest_digits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
