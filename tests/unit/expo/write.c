/* tests/unit/expo/write.c -- exact output of expo_write() in both formats,
 * and that the parser reads it back (the writer's output is what
 * Prometheus scrapes from the agent). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/err.h"
#include "expo/expo.h"
#include "expo/parse.h"

/* Renders one set; returns a malloc'd string. */
static char *render(expo_mset *ms, expo_format fmt) {
    base_buf out;
    base_buf_init(&out, 0);
    expo_mset *sets[] = {ms};
    assert_int_equal(expo_write(sets, 1, fmt, &out), 0);
    char *s = base_buf_steal(&out, NULL);
    return s ? s : strdup("");
}

static void check(expo_mset *ms, const char *want_text, const char *want_om) {
    assert_int_equal(ms->err, 0);
    char *t = render(ms, EXPO_FMT_TEXT), *o = render(ms, EXPO_FMT_OPENMETRICS);
    assert_string_equal(t, want_text);
    assert_string_equal(o, want_om);
    /* both parse cleanly */
    for (int f = 0; f < 2; f++) {
        const char *s = f ? o : t;
        expo_parser p;
        expo_parser_init(&p, s, strlen(s), f ? EXPO_FMT_OPENMETRICS : EXPO_FMT_TEXT, NULL);
        int e;
        while ((e = expo_parser_next(&p)) > 0) {
        }
        if (e != 0)
            fail_msg("%s output does not parse: %s\n%s", f ? "om" : "text", expo_parser_error_at(&p), s);
        expo_parser_free(&p);
    }
    free(t);
    free(o);
}

static void test_counters(void **state) {
    (void)state;
    expo_mset ms;
    expo_mset_init(&ms);
    expo_family *f = expo_mset_family(&ms, "node_cpu_seconds_total", EXPO_COUNTER,
                                      "Seconds the CPUs spent in each mode.", NULL);
    expo_mset_add(&ms, f, NULL, expo_mset_labels(&ms, "cpu", "0", "mode", "idle", NULL), NULL,
                  2.06532178e+06);
    expo_mset_add(&ms, f, "_created", "cpu=\"0\"", NULL, 1.7e9);
    /* dcgm-exporter style: a counter without _total */
    f = expo_mset_family(&ms, "DCGM_FI_DEV_XID_ERRORS", EXPO_COUNTER, "Value of the last XID error.", NULL);
    expo_mset_add(&ms, f, NULL, "gpu=\"0\"", "err_code=\"79\"", 79);
    check(&ms,
          "# HELP node_cpu_seconds_total Seconds the CPUs spent in each mode.\n"
          "# TYPE node_cpu_seconds_total counter\n"
          "node_cpu_seconds_total{cpu=\"0\",mode=\"idle\"} 2.06532178e+06\n"
          "node_cpu_seconds_total_created{cpu=\"0\"} 1.7e+09\n"
          "# HELP DCGM_FI_DEV_XID_ERRORS Value of the last XID error.\n"
          "# TYPE DCGM_FI_DEV_XID_ERRORS counter\n"
          "DCGM_FI_DEV_XID_ERRORS{gpu=\"0\",err_code=\"79\"} 79\n",
          "# TYPE node_cpu_seconds counter\n"
          "# HELP node_cpu_seconds Seconds the CPUs spent in each mode.\n"
          "node_cpu_seconds_total{cpu=\"0\",mode=\"idle\"} 2.06532178e+06\n"
          "node_cpu_seconds_created{cpu=\"0\"} 1.7e+09\n"
          "# TYPE DCGM_FI_DEV_XID_ERRORS unknown\n"
          "# HELP DCGM_FI_DEV_XID_ERRORS Value of the last XID error.\n"
          "DCGM_FI_DEV_XID_ERRORS{gpu=\"0\",err_code=\"79\"} 79\n"
          "# EOF\n");
    expo_mset_free(&ms);
}

static void test_gauges_units_types(void **state) {
    (void)state;
    expo_mset ms;
    expo_mset_init(&ms);
    expo_family *f =
        expo_mset_family(&ms, "DCGM_FI_DEV_GPU_TEMP", EXPO_GAUGE, "GPU temperature (in C).", NULL);
    expo_mset_add(&ms, f, NULL, "gpu=\"0\"", NULL, 34);
    expo_mset_add(&ms, f, NULL, "gpu=\"1\"", NULL, 35.5);
    f = expo_mset_family(&ms, "gpu_power_watts", EXPO_GAUGE, NULL, "watts");
    expo_mset_add(&ms, f, NULL, NULL, NULL, 312.25);
    f = expo_mset_family(&ms, "gpu_clock", EXPO_GAUGE, NULL, "hertz"); /* not a suffix: no UNIT */
    expo_mset_add(&ms, f, NULL, NULL, NULL, 1.98e9);
    f = expo_mset_family(&ms, "kelvin_build_info", EXPO_INFO, "Build information.", NULL);
    expo_mset_add(&ms, f, NULL, "version=\"0.1.0\"", NULL, 1);
    f = expo_mset_family(&ms, "u", EXPO_UNTYPED, NULL, NULL);
    expo_mset_add(&ms, f, NULL, NULL, NULL, -0.0);
    f = expo_mset_family(&ms, "st", EXPO_STATESET, NULL, NULL);
    expo_mset_add(&ms, f, NULL, "st=\"a\"", NULL, 1);
    check(&ms,
          "# HELP DCGM_FI_DEV_GPU_TEMP GPU temperature (in C).\n"
          "# TYPE DCGM_FI_DEV_GPU_TEMP gauge\n"
          "DCGM_FI_DEV_GPU_TEMP{gpu=\"0\"} 34\n"
          "DCGM_FI_DEV_GPU_TEMP{gpu=\"1\"} 35.5\n"
          "# TYPE gpu_power_watts gauge\n"
          "gpu_power_watts 312.25\n"
          "# TYPE gpu_clock gauge\n"
          "gpu_clock 1.98e+09\n"
          "# HELP kelvin_build_info Build information.\n"
          "# TYPE kelvin_build_info untyped\n"
          "kelvin_build_info{version=\"0.1.0\"} 1\n"
          "# TYPE u untyped\n"
          "u -0\n"
          "# TYPE st untyped\n"
          "st{st=\"a\"} 1\n",
          "# TYPE DCGM_FI_DEV_GPU_TEMP gauge\n"
          "# HELP DCGM_FI_DEV_GPU_TEMP GPU temperature (in C).\n"
          "DCGM_FI_DEV_GPU_TEMP{gpu=\"0\"} 34\n"
          "DCGM_FI_DEV_GPU_TEMP{gpu=\"1\"} 35.5\n"
          "# TYPE gpu_power_watts gauge\n"
          "# UNIT gpu_power_watts watts\n"
          "gpu_power_watts 312.25\n"
          "# TYPE gpu_clock gauge\n"
          "gpu_clock 1.98e+09\n"
          "# TYPE kelvin_build info\n"
          "# HELP kelvin_build Build information.\n"
          "kelvin_build_info{version=\"0.1.0\"} 1\n"
          "# TYPE u unknown\n"
          "u -0\n"
          "# TYPE st stateset\n"
          "st{st=\"a\"} 1\n"
          "# EOF\n");
    expo_mset_free(&ms);
}

static void test_histogram_values(void **state) {
    (void)state;
    expo_mset ms;
    expo_mset_init(&ms);
    expo_family *f = expo_mset_family(&ms, "req_seconds", EXPO_HISTOGRAM, "Latency.", "seconds");
    expo_mset_add(&ms, f, "_bucket", "path=\"/\"", "le=\"0.1\"", 3);
    expo_mset_add(&ms, f, "_bucket", "path=\"/\"", "le=\"+Inf\"", 5);
    expo_mset_add(&ms, f, "_sum", "path=\"/\"", NULL, 0.30000000000000004);
    expo_mset_add(&ms, f, "_count", "path=\"/\"", NULL, 5);
    f = expo_mset_family(&ms, "v", EXPO_GAUGE, NULL, NULL);
    expo_mset_add(&ms, f, NULL, NULL, "k=\"nan\"", NAN);
    expo_mset_add(&ms, f, NULL, NULL, "k=\"inf\"", INFINITY);
    expo_mset_add(&ms, f, NULL, NULL, "k=\"-inf\"", -INFINITY);
    expo_mset_add(&ms, f, NULL, NULL, "k=\"small\"", 1e-05);
    expo_mset_add(&ms, f, NULL, "", "", 123456);
    check(&ms,
          "# HELP req_seconds Latency.\n"
          "# TYPE req_seconds histogram\n"
          "req_seconds_bucket{path=\"/\",le=\"0.1\"} 3\n"
          "req_seconds_bucket{path=\"/\",le=\"+Inf\"} 5\n"
          "req_seconds_sum{path=\"/\"} 0.30000000000000004\n"
          "req_seconds_count{path=\"/\"} 5\n"
          "# TYPE v gauge\n"
          "v{k=\"nan\"} NaN\n"
          "v{k=\"inf\"} +Inf\n"
          "v{k=\"-inf\"} -Inf\n"
          "v{k=\"small\"} 1e-05\n"
          "v 123456\n",
          "# TYPE req_seconds histogram\n"
          "# UNIT req_seconds seconds\n"
          "# HELP req_seconds Latency.\n"
          "req_seconds_bucket{path=\"/\",le=\"0.1\"} 3\n"
          "req_seconds_bucket{path=\"/\",le=\"+Inf\"} 5\n"
          "req_seconds_sum{path=\"/\"} 0.30000000000000004\n"
          "req_seconds_count{path=\"/\"} 5\n"
          "# TYPE v gauge\n"
          "v{k=\"nan\"} NaN\n"
          "v{k=\"inf\"} +Inf\n"
          "v{k=\"-inf\"} -Inf\n"
          "v{k=\"small\"} 1e-05\n"
          "v 123456\n"
          "# EOF\n");
    expo_mset_free(&ms);
}

static void test_help_and_label_escaping(void **state) {
    (void)state;
    expo_mset ms;
    expo_mset_init(&ms);
    expo_family *f = expo_mset_family(&ms, "esc", EXPO_GAUGE, "back\\slash \"quoted\"\nnewline", NULL);
    expo_mset_add(&ms, f, NULL, expo_mset_labels(&ms, "path", "C:\\dir\\\"x\"\nend", NULL), NULL, 1);
    check(&ms,
          "# HELP esc back\\\\slash \"quoted\"\\nnewline\n"
          "# TYPE esc gauge\n"
          "esc{path=\"C:\\\\dir\\\\\\\"x\\\"\\nend\"} 1\n",
          "# TYPE esc gauge\n"
          "# HELP esc back\\\\slash \\\"quoted\\\"\\nnewline\n"
          "esc{path=\"C:\\\\dir\\\\\\\"x\\\"\\nend\"} 1\n"
          "# EOF\n");

    /* and the parser gives back the original strings */
    char *o = render(&ms, EXPO_FMT_OPENMETRICS), *t = render(&ms, EXPO_FMT_TEXT);
    for (int k = 0; k < 2; k++) {
        const char *s = k ? o : t;
        expo_parser p;
        expo_parser_init(&p, s, strlen(s), k ? EXPO_FMT_OPENMETRICS : EXPO_FMT_TEXT, NULL);
        base_buf b;
        base_buf_init(&b, 0);
        int e;
        while ((e = expo_parser_next(&p)) > 0) {
            if (e == EXPO_ENTRY_HELP) {
                base_buf_reset(&b);
                assert_int_equal(expo_parser_help(&p, &b), 0);
                assert_string_equal(b.data, "back\\slash \"quoted\"\nnewline");
            } else if (e == EXPO_ENTRY_SERIES) {
                base_buf_reset(&b);
                assert_int_equal(expo_unescape_label(expo_parser_labels(&p)[0].value, &b), 0);
                assert_string_equal(b.data, "C:\\dir\\\"x\"\nend");
            }
        }
        assert_int_equal(e, 0);
        base_buf_free(&b);
        expo_parser_free(&p);
    }
    free(o);
    free(t);
    expo_mset_free(&ms);
}

static void test_timestamps(void **state) {
    (void)state;
    expo_mset ms;
    expo_mset_init(&ms);
    expo_family *f = expo_mset_family(&ms, "t", EXPO_GAUGE, NULL, NULL);
    expo_mset_add_ts(&ms, f, NULL, NULL, "c=\"a\"", 1, INT64_C(1700000000123));
    expo_mset_add_ts(&ms, f, NULL, NULL, "c=\"b\"", 1, INT64_C(1700000000000));
    expo_mset_add_ts(&ms, f, NULL, NULL, "c=\"c\"", 1, 0);
    expo_mset_add_ts(&ms, f, NULL, NULL, "c=\"d\"", 1, -5);
    expo_mset_add_ts(&ms, f, NULL, NULL, "c=\"e\"", 1, -1500);
    expo_mset_add_ts(&ms, f, NULL, NULL, "c=\"f\"", 1, INT64_C(1078098474429));
    expo_mset_add_ts(&ms, f, NULL, NULL, "c=\"g\"", 1, INT64_C(-1078098474429));
    expo_mset_add(&ms, f, NULL, NULL, "c=\"h\"", 2);
    assert_int_equal(ms.err, 0);
    char *t = render(&ms, EXPO_FMT_TEXT), *o = render(&ms, EXPO_FMT_OPENMETRICS);
    assert_string_equal(t, "# TYPE t gauge\n"
                           "t{c=\"a\"} 1 1700000000123\n"
                           "t{c=\"b\"} 1 1700000000000\n"
                           "t{c=\"c\"} 1 0\n"
                           "t{c=\"d\"} 1 -5\n"
                           "t{c=\"e\"} 1 -1500\n"
                           "t{c=\"f\"} 1 1078098474429\n"
                           "t{c=\"g\"} 1 -1078098474429\n"
                           "t{c=\"h\"} 2\n");
    /* 1078098474.429 would read back as ...428 through Prometheus's
     * int64(seconds*1000): the writer nudges it to the next double */
    assert_string_equal(o, "# TYPE t gauge\n"
                           "t{c=\"a\"} 1 1700000000.123\n"
                           "t{c=\"b\"} 1 1700000000\n"
                           "t{c=\"c\"} 1 0\n"
                           "t{c=\"d\"} 1 -0.005\n"
                           "t{c=\"e\"} 1 -1.500\n" /* always three digits of ms */
                           "t{c=\"f\"} 1 1078098474.4290001\n"
                           "t{c=\"g\"} 1 -1078098474.4290001\n"
                           "t{c=\"h\"} 2\n"
                           "# EOF\n");
    /* the OpenMetrics reading gives back every millisecond (the text
     * format cannot carry negative timestamps: Prometheus rejects them) */
    expo_parser p;
    expo_parser_init(&p, o, strlen(o), EXPO_FMT_OPENMETRICS, NULL);
    const int64_t want[] = {INT64_C(1700000000123), INT64_C(1700000000000), 0, -5, -1500,
                            INT64_C(1078098474429), INT64_C(-1078098474429)};
    assert_int_equal(expo_parser_next(&p), EXPO_ENTRY_TYPE);
    for (size_t i = 0; i < 7; i++) {
        assert_int_equal(expo_parser_next(&p), EXPO_ENTRY_SERIES);
        assert_true(expo_parser_has_ts(&p));
        assert_int_equal(expo_parser_ts_ms(&p), want[i]);
    }
    assert_int_equal(expo_parser_next(&p), EXPO_ENTRY_SERIES);
    assert_false(expo_parser_has_ts(&p));
    assert_int_equal(expo_parser_next(&p), EXPO_ENTRY_EOF);
    expo_parser_free(&p);
    free(t);
    free(o);
    expo_mset_free(&ms);
}

/* Many millisecond values through write -> parse (OpenMetrics). */
static void test_timestamp_round_trip(void **state) {
    (void)state;
    expo_mset ms;
    expo_mset_init(&ms);
    expo_family *f = expo_mset_family(&ms, "t", EXPO_GAUGE, NULL, NULL);
    uint64_t x = 88172645463325252ull;
    enum { N = 20000 };
    int64_t *want = malloc(N * sizeof *want);
    assert_non_null(want);
    for (int i = 0; i < N; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        int64_t v = (int64_t)(x % UINT64_C(4000000000000));
        if (i % 3 == 0) v = -v;
        if (i % 7 == 0) v = (int64_t)(x % 100000);
        want[i] = v;
        expo_mset_add_ts(&ms, f, NULL, NULL, NULL, 1, v);
    }
    char *o = render(&ms, EXPO_FMT_OPENMETRICS);
    expo_parser p;
    expo_parser_init(&p, o, strlen(o), EXPO_FMT_OPENMETRICS, NULL);
    assert_int_equal(expo_parser_next(&p), EXPO_ENTRY_TYPE);
    for (int i = 0; i < N; i++) {
        assert_int_equal(expo_parser_next(&p), EXPO_ENTRY_SERIES);
        if (expo_parser_ts_ms(&p) != want[i])
            fail_msg("ts %lld read back as %lld", (long long)want[i], (long long)expo_parser_ts_ms(&p));
    }
    assert_int_equal(expo_parser_next(&p), EXPO_ENTRY_EOF);
    expo_parser_free(&p);
    free(o);
    free(want);
    expo_mset_free(&ms);
}

static void test_skips_and_eof(void **state) {
    (void)state;
    expo_mset a, b;
    expo_mset_init(&a);
    expo_mset_init(&b);
    expo_mset_family(&a, "empty_family", EXPO_GAUGE, "never written", NULL);
    expo_family *f = expo_mset_family(&b, "x", EXPO_GAUGE, NULL, NULL);
    expo_mset_add(&b, f, NULL, NULL, NULL, 1);
    expo_mset_family(&b, "also_empty", EXPO_COUNTER, NULL, NULL);

    base_buf out;
    base_buf_init(&out, 0);
    expo_mset *none[] = {&a};
    assert_int_equal(expo_write(none, 1, EXPO_FMT_TEXT, &out), 0);
    assert_int_equal(out.len, 0);
    assert_int_equal(expo_write(none, 1, EXPO_FMT_OPENMETRICS, &out), 0);
    assert_string_equal(out.data, "# EOF\n");
    base_buf_reset(&out);
    assert_int_equal(expo_write(NULL, 0, EXPO_FMT_OPENMETRICS, &out), 0);
    assert_string_equal(out.data, "# EOF\n");

    base_buf_reset(&out);
    expo_mset *sets[] = {&a, NULL, &b};
    assert_int_equal(expo_write(sets, 3, EXPO_FMT_TEXT, &out), 0);
    assert_string_equal(out.data, "# TYPE x gauge\nx 1\n");
    base_buf_reset(&out);
    assert_int_equal(expo_write(sets, 3, EXPO_FMT_OPENMETRICS, &out), 0);
    assert_string_equal(out.data, "# TYPE x gauge\nx 1\n# EOF\n");
    base_buf_free(&out);

    /* an output limit is reported, not overrun */
    base_buf small;
    base_buf_init(&small, 10);
    assert_int_equal(expo_write(sets, 3, EXPO_FMT_TEXT, &small), BASE_E_LIMIT);
    assert_true(small.len <= 10);
    base_buf_free(&small);

    /* reset keeps the set usable */
    expo_mset_reset(&b);
    assert_int_equal(b.nfamilies, 0);
    f = expo_mset_family(&b, "y", EXPO_GAUGE, NULL, NULL);
    expo_mset_add(&b, f, NULL, NULL, NULL, 2);
    base_buf_init(&out, 0);
    expo_mset *one[] = {&b};
    assert_int_equal(expo_write(one, 1, EXPO_FMT_TEXT, &out), 0);
    assert_string_equal(out.data, "# TYPE y gauge\ny 2\n");
    base_buf_free(&out);
    expo_mset_free(&a);
    expo_mset_free(&b);
}

static void test_type_names(void **state) {
    (void)state;
    assert_string_equal(expo_type_name(EXPO_UNTYPED, EXPO_FMT_TEXT), "untyped");
    assert_string_equal(expo_type_name(EXPO_UNTYPED, EXPO_FMT_OPENMETRICS), "unknown");
    assert_string_equal(expo_type_name(EXPO_INFO, EXPO_FMT_TEXT), "untyped");
    assert_string_equal(expo_type_name(EXPO_INFO, EXPO_FMT_OPENMETRICS), "info");
    assert_string_equal(expo_type_name(EXPO_GAUGEHISTOGRAM, EXPO_FMT_OPENMETRICS), "gaugehistogram");
    assert_string_equal(expo_type_name(EXPO_SUMMARY, EXPO_FMT_TEXT), "summary");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counters),         cmocka_unit_test(test_gauges_units_types),
        cmocka_unit_test(test_histogram_values), cmocka_unit_test(test_help_and_label_escaping),
        cmocka_unit_test(test_timestamps),       cmocka_unit_test(test_timestamp_round_trip),
        cmocka_unit_test(test_skips_and_eof),    cmocka_unit_test(test_type_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
