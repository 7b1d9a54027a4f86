/* tests/unit/expo/parse.c -- the exposition parser against Prometheus 2.42.
 *
 * Most cases are table rows: an input, a format, and the expected "dump" of
 * what the parser returned, one line per entry, ending in EOF or the error
 * with its position. The rows cover every [verified] row of
 * /work/shared/prometheus-compat.md §3a/§3b and the error cases of
 * Prometheus's promparse_test.go / openmetricsparse_test.go, so a wording or
 * acceptance difference shows up as a string diff. Inputs are copied into
 * exactly-sized heap buffers, so AddressSanitizer catches any read past len.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/err.h"
#include "base/num.h"
#include "expo/parse.h"

#define TEXT EXPO_FMT_TEXT
#define OM   EXPO_FMT_OPENMETRICS

static void put_labels(base_buf *o, const expo_label *l, size_t n) {
    base_buf_putc(o, '{');
    for (size_t i = 0; i < n; i++) {
        if (i) base_buf_putc(o, ',');
        base_buf_append(o, l[i].name.p, l[i].name.n);
        base_buf_append(o, "=\"", 2);
        base_buf_append(o, l[i].value.p, l[i].value.n);
        base_buf_putc(o, '"');
    }
    base_buf_putc(o, '}');
}

static const char *type_str(expo_type t) {
    switch (t) {
    case EXPO_COUNTER: return "counter";
    case EXPO_GAUGE: return "gauge";
    case EXPO_HISTOGRAM: return "histogram";
    case EXPO_SUMMARY: return "summary";
    case EXPO_INFO: return "info";
    case EXPO_STATESET: return "stateset";
    case EXPO_GAUGEHISTOGRAM: return "gaugehistogram";
    case EXPO_UNTYPED: break;
    }
    return "untyped";
}

/* Parses in[0..n) (copied to an exact-size buffer) and describes every
 * entry. Caller frees. */
static char *dump_lim(expo_format fmt, const char *in, size_t n, const expo_parse_limits *lim) {
    char *buf = malloc(n ? n : 1);
    assert_non_null(buf);
    memcpy(buf, in, n);
    base_buf o;
    base_buf_init(&o, 0);
    expo_parser p;
    expo_parser_init(&p, buf, n, fmt, lim);
    int e;
    char num[BASE_FMT_DOUBLE_MAX];
    while ((e = expo_parser_next(&p)) > 0) {
        base_str name = expo_parser_name(&p), text = expo_parser_text(&p);
        switch (e) {
        case EXPO_ENTRY_SERIES:
            base_buf_puts(&o, "S ");
            base_buf_append(&o, name.p, name.n);
            put_labels(&o, expo_parser_labels(&p), expo_parser_nlabels(&p));
            base_fmt_double_g(num, expo_parser_value(&p));
            base_buf_printf(&o, " %s", num);
            if (expo_parser_has_ts(&p)) base_buf_printf(&o, " @%lld", (long long)expo_parser_ts_ms(&p));
            if (expo_parser_has_exemplar(&p)) {
                base_buf_puts(&o, " # ");
                put_labels(&o, expo_parser_exemplar_labels(&p), expo_parser_exemplar_nlabels(&p));
                base_fmt_double_g(num, expo_parser_exemplar_value(&p));
                base_buf_printf(&o, " %s", num);
                if (expo_parser_exemplar_has_ts(&p))
                    base_buf_printf(&o, " @%lld", (long long)expo_parser_exemplar_ts_ms(&p));
            }
            break;
        case EXPO_ENTRY_HELP:
        case EXPO_ENTRY_UNIT:
            base_buf_puts(&o, e == EXPO_ENTRY_HELP ? "H " : "U ");
            base_buf_append(&o, name.p, name.n);
            base_buf_puts(&o, " [");
            base_buf_append(&o, text.p, text.n);
            base_buf_putc(&o, ']');
            break;
        case EXPO_ENTRY_TYPE:
            base_buf_puts(&o, "T ");
            base_buf_append(&o, name.p, name.n);
            base_buf_printf(&o, " %s", type_str(expo_parser_type(&p)));
            break;
        case EXPO_ENTRY_COMMENT:
            base_buf_puts(&o, "C [");
            base_buf_append(&o, text.p, text.n);
            base_buf_putc(&o, ']');
            break;
        default: fail_msg("unexpected entry %d", e);
        }
        base_buf_putc(&o, '\n');
    }
    if (e == 0) {
        base_buf_puts(&o, "EOF");
        assert_string_equal(expo_parser_error(&p), "");
        assert_int_equal(expo_parser_next(&p), 0); /* EOF stays EOF */
    } else {
        base_buf_printf(&o, "%s %s", e == BASE_E_PARSE ? "ERR" : base_errname(e), expo_parser_error_at(&p));
        assert_int_equal(expo_parser_next(&p), e); /* errors are sticky */
    }
    expo_parser_free(&p);
    free(buf);
    assert_int_equal(base_buf_err(&o), 0);
    char *s = base_buf_steal(&o, NULL);
    return s ? s : strdup("");
}

static char *dump(expo_format fmt, const char *in) {
    return dump_lim(fmt, in, strlen(in), NULL);
}

typedef struct row {
    expo_format fmt;
    const char *in;
    const char *want;
} row;

static void run_rows(const row *rows, size_t n) {
    int bad = 0;
    for (size_t i = 0; i < n; i++) {
        char *got = dump(rows[i].fmt, rows[i].in);
        if (strcmp(got, rows[i].want) != 0) {
            print_error("row %zu (%s) input:\n%s\n--- want:\n%s\n--- got:\n%s\n", i,
                        rows[i].fmt == OM ? "om" : "text", rows[i].in, rows[i].want, got);
            bad++;
        }
        free(got);
    }
    assert_int_equal(bad, 0);
}
#define RUN(rows) run_rows(rows, sizeof rows / sizeof rows[0])

/* ---- §3a [verified]: text 0.0.4 ------------------------------------------ */

static void test_text_verified(void **state) {
    (void)state;
    static const row rows[] = {
        /* missing comma accepted: labels a and b */
        {TEXT, "m{a=\"1\"b=\"2\"} 1\n", "S m{a=\"1\",b=\"2\"} 1\nEOF"},
        /* trailing comma accepted */
        {TEXT, "m{a=\"1\",} 1\n", "S m{a=\"1\"} 1\nEOF"},
        /* negative timestamp: the lexer only takes [0-9]+ */
        {TEXT, "m 1 -3982045\n", "ERR 1:5: expected timestamp or new record, got \"INVALID\""},
        /* tabs between tokens */
        {TEXT, "m\t{a=\"1\"}\t1\t2\n", "S m{a=\"1\"} 1 @2\nEOF"},
        /* unknown escape kept literally (raw view; unescaping keeps it too) */
        {TEXT, "m{a=\"x\\ty\"} 1\n", "S m{a=\"x\\ty\"} 1\nEOF"},
        /* ParseFloat specials, case-insensitive */
        {TEXT, "m NaN\nm nan\nm +Inf\nm Inf\nm -inf\nm Infinity\n",
         "S m{} NaN\nS m{} NaN\nS m{} +Inf\nS m{} +Inf\nS m{} -Inf\nS m{} +Inf\nEOF"},
        /* p, P and _ rejected before ParseFloat */
        {TEXT, "m 0x1p3\n", "ERR 1:3: unsupported character in float"},
        {TEXT, "m 1_000\n", "ERR 1:3: unsupported character in float"},
        {TEXT, "m 0x10\n", "ERR 1:3: strconv.ParseFloat: parsing \"0x10\": invalid syntax"},
        /* HELP escapes: raw text here; see test_help_unescape */
        {TEXT, "# HELP m a \\\" b \\\\ c \\n d\n", "H m [a \\\" b \\\\ c \\n d]\nEOF"},
        /* TYPE after its samples: fine for the parser */
        {TEXT, "x 1\n# TYPE x gauge\n", "S x{} 1\nT x gauge\nEOF"},
        /* no blank after #: a comment */
        {TEXT, "#TYPE x gauge\nx 1\n", "C [#TYPE x gauge]\nS x{} 1\nEOF"},
        /* last line without newline, blank lines */
        {TEXT, "\n\nm 1\n\n\nm 2", "S m{} 1\nS m{} 2\nEOF"},
        /* empty label value: handed out (the consumer drops it) */
        {TEXT, "m{a=\"\"} 1\n", "S m{a=\"\"} 1\nEOF"},
        /* duplicate series: both reach the consumer (it keeps the first) */
        {TEXT, "m 1\nm 2\n", "S m{} 1\nS m{} 2\nEOF"},
        /* duplicate label name fails the scrape */
        {TEXT, "m{a=\"1\",a=\"2\"} 1\n", "ERR 1:1: label name \"a\" is not unique: invalid sample"},
        /* invalid UTF-8 in a label value */
        {TEXT, "m{a=\"\xff\"} 1\n", "ERR 1:5: invalid UTF-8 label value"},
        /* an explicit old timestamp is the storage's business */
        {TEXT, "m 1 1\n", "S m{} 1 @1\nEOF"},
    };
    RUN(rows);
}

/* ---- §3b [verified]: OpenMetrics 1.0 ----------------------------------------- */

static void test_om_verified(void **state) {
    (void)state;
    static const row rows[] = {
        {OM, "m 1\n", "S m{} 1\nERR 2:1: data does not end with # EOF"},
        {OM, "m 1\n# EOF\nm 2\n", "S m{} 1\nERR 3:1: unexpected data after # EOF"},
        {OM, "m 1\n# EOF", "S m{} 1\nEOF"},
        {OM, "m 1\n\n# EOF\n", "S m{} 1\nERR 2:1: \"INVALID\" \"\\n\" is not a valid start token"},
        {OM, "m{a=\"1\",} 1\n# EOF\n", "ERR 1:9: expected label name, got \"BCLOSE\""},
        {OM, "m{a=\"1\"b=\"2\"} 1\n# EOF\n", "ERR 1:8: expected comma, got \"LNAME\""},
        {OM, "# UNIT foo seconds\nfoo 1\n# EOF\n", "ERR 1:12: unit not a suffix of metric \"foo\""},
        {OM, "# TYPE g gauge\ng 1 # {a=\"b\"} 1\n# EOF\n",
         "T g gauge\nERR 2:4: metric name g does not support exemplars"},
        {OM,
         "# TYPE h histogram\nh_bucket{le=\"1\"} 2 # {trace_id=\"abc\"} 0.5 1600000000.5\n"
         "# TYPE c counter\nc_total 3 # {trace_id=\"def\"} 1\n# EOF\n",
         "T h histogram\nS h_bucket{le=\"1\"} 2 # {trace_id=\"abc\"} 0.5 @1600000000500\n"
         "T c counter\nS c_total{} 3 # {trace_id=\"def\"} 1\nEOF"},
        {OM, "# TYPE c counter\nc_total 1\nc_created 1600000000.5\n# EOF\n",
         "T c counter\nS c_total{} 1\nS c_created{} 1.6000000005e+09\nEOF"},
        {OM, "# HELP c a \\\" b\n# EOF\n", "H c [a \\\" b]\nEOF"},
        {OM, "g 1 1700000000.250\n# EOF\n", "S g{} 1 @1700000000250\nEOF"},
        {OM,
         "# TYPE i info\ni_info{v=\"1\"} 1\n# TYPE s stateset\ns{s=\"a\"} 1\n"
         "# TYPE gh gaugehistogram\ngh_gcount 1\n# TYPE u unknown\nu 1\n# EOF\n",
         "T i info\nS i_info{v=\"1\"} 1\nT s stateset\nS s{s=\"a\"} 1\nT gh gaugehistogram\n"
         "S gh_gcount{} 1\nT u untyped\nS u{} 1\nEOF"},
    };
    RUN(rows);
}

/* ---- promparse_test.go (2.42) ------------------------------------------------ */

static void test_text_prometheus_suite(void **state) {
    (void)state;
    static const row rows[] = {
        {TEXT,
         "# HELP go_gc_duration_seconds A summary of the GC invocation durations.\n"
         "# \tTYPE go_gc_duration_seconds summary\n"
         "go_gc_duration_seconds{quantile=\"0\"} 4.9351e-05\n"
         "go_gc_duration_seconds{quantile=\"0.25\",} 7.424100000000001e-05\n"
         "go_gc_duration_seconds{quantile=\"0.5\",a=\"b\"} 8.3835e-05\n"
         "go_gc_duration_seconds{quantile=\"0.8\", a=\"b\"} 8.3835e-05\n"
         "go_gc_duration_seconds{ quantile=\"0.9\", a=\"b\"} 8.3835e-05\n"
         "# Hrandom comment starting with prefix of HELP\n"
         "#\n"
         "wind_speed{A=\"2\",c=\"3\"} 12345\n"
         "# comment with escaped \\n newline\n"
         "# comment with escaped \\ escape character\n"
         "# HELP nohelp1\n"
         "# HELP nohelp2 \n"
         "go_gc_duration_seconds{ quantile=\"1.0\", a=\"b\" } 8.3835e-05\n"
         "go_gc_duration_seconds { quantile=\"1.0\", a=\"b\" } 8.3835e-05\n"
         "go_gc_duration_seconds { quantile= \"1.0\", a= \"b\", } 8.3835e-05\n"
         "go_gc_duration_seconds { quantile = \"1.0\", a = \"b\" } 8.3835e-05\n"
         "go_gc_duration_seconds_count 99\n"
         "some:aggregate:rate5m{a_b=\"c\"}\t1\n"
         "# HELP go_goroutines Number of goroutines that currently exist.\n"
         "# TYPE go_goroutines gauge\n"
         "go_goroutines 33  \t123123\n"
         "_metric_starting_with_underscore 1\n"
         "testmetric{_label_starting_with_underscore=\"foo\"} 1\n"
         "testmetric{label=\"\\\"bar\\\"\"} 1",
         "H go_gc_duration_seconds [A summary of the GC invocation durations.]\n"
         "T go_gc_duration_seconds summary\n"
         "S go_gc_duration_seconds{quantile=\"0\"} 4.9351e-05\n"
         "S go_gc_duration_seconds{quantile=\"0.25\"} 7.424100000000001e-05\n"
         "S go_gc_duration_seconds{quantile=\"0.5\",a=\"b\"} 8.3835e-05\n"
         "S go_gc_duration_seconds{quantile=\"0.8\",a=\"b\"} 8.3835e-05\n"
         "S go_gc_duration_seconds{quantile=\"0.9\",a=\"b\"} 8.3835e-05\n"
         "C [# Hrandom comment starting with prefix of HELP]\n"
         "C [#]\n"
         "S wind_speed{A=\"2\",c=\"3\"} 12345\n"
         "C [# comment with escaped \\n newline]\n"
         "C [# comment with escaped \\ escape character]\n"
         "H nohelp1 []\n"
         "H nohelp2 []\n"
         "S go_gc_duration_seconds{quantile=\"1.0\",a=\"b\"} 8.3835e-05\n"
         "S go_gc_duration_seconds{quantile=\"1.0\",a=\"b\"} 8.3835e-05\n"
         "S go_gc_duration_seconds{quantile=\"1.0\",a=\"b\"} 8.3835e-05\n"
         "S go_gc_duration_seconds{quantile=\"1.0\",a=\"b\"} 8.3835e-05\n"
         "S go_gc_duration_seconds_count{} 99\n"
         "S some:aggregate:rate5m{a_b=\"c\"} 1\n"
         "H go_goroutines [Number of goroutines that currently exist.]\n"
         "T go_goroutines gauge\n"
         "S go_goroutines{} 33 @123123\n"
         "S _metric_starting_with_underscore{} 1\n"
         "S testmetric{_label_starting_with_underscore=\"foo\"} 1\n"
         "S testmetric{label=\"\\\"bar\\\"\"} 1\nEOF"},
        {TEXT, "a", "ERR 1:2: expected value after metric, got \"INVALID\""},
        {TEXT, "a{b='c'} 1\n", "ERR 1:5: expected label value, got \"INVALID\""},
        {TEXT, "a{b=\n", "ERR 1:5: expected label value, got \"INVALID\""},
        {TEXT, "a{\xff=\"foo\"} 1\n", "ERR 1:3: expected label name, got \"INVALID\""},
        {TEXT, "a{b=\"\xff\"} 1\n", "ERR 1:5: invalid UTF-8 label value"},
        {TEXT, "a true\n", "ERR 1:3: strconv.ParseFloat: parsing \"true\": invalid syntax"},
        {TEXT, "something_weird{problem=\"", "ERR 1:26: expected label value, got \"INVALID\""},
        {TEXT, "empty_label_name{=\"\"} 0", "ERR 1:18: expected label name, got \"EQUAL\""},
        {TEXT, "foo 1_2\n", "ERR 1:5: unsupported character in float"},
        {TEXT, "foo 0x1p-3\n", "ERR 1:5: unsupported character in float"},
        {TEXT, "foo 0x1P-3\n", "ERR 1:5: unsupported character in float"},
        {TEXT, "foo 0 1_2\n", "ERR 1:8: expected next entry after timestamp, got \"INVALID\""},
        {TEXT, "{a=\"ok\"} 1\n", "ERR 1:1: \"INVALID\" is not a valid start token"},
        /* more of the same grammar */
        {TEXT, "m 1 2 3\n", "ERR 1:7: expected next entry after timestamp, got \"TIMESTAMP\""},
        {TEXT, "m{a=\"1\"}{b=\"2\"} 1\n", "ERR 1:9: expected value after metric, got \"BOPEN\""},
        {TEXT, "m{,} 1\n", "ERR 1:3: expected label name, got \"COMMA\""},
        {TEXT, "m{a=\"1\",,b=\"2\"} 1\n", "ERR 1:9: expected label name, got \"COMMA\""},
        {TEXT, "m{a \"1\"} 1\n", "ERR 1:5: expected equal, got \"INVALID\""},
        {TEXT, "m 1 99999999999999999999\n",
         "ERR 1:5: strconv.ParseInt: parsing \"99999999999999999999\": value out of range"},
        {TEXT, "m 1e400\n", "ERR 1:3: strconv.ParseFloat: parsing \"1e400\": value out of range"},
        {TEXT, "m -nan\n", "ERR 1:3: strconv.ParseFloat: parsing \"-nan\": invalid syntax"},
        {TEXT, "m 1\r\n", "ERR 1:3: strconv.ParseFloat: parsing \"1\\r\": invalid syntax"},
        {TEXT, "m \xc3\xa9\n", "ERR 1:3: strconv.ParseFloat: parsing \"\xc3\xa9\": invalid syntax"},
        {TEXT, "m \x01\xff\n", "ERR 1:3: strconv.ParseFloat: parsing \"\\x01\\xff\": invalid syntax"},
        {TEXT, "# TYPE m foo\n", "ERR 1:10: invalid metric type \"foo\""},
        {TEXT, "# TYPE m counter \n", "ERR 1:10: invalid metric type \"counter \""},
        {TEXT, "# HELP m \xff\n", "ERR 1:10: help text is not a valid utf8 string"},
        {TEXT, "# HELP\n", "C [# HELP]\nEOF"},
        {TEXT, "# HELP 9m x\n", "ERR 1:8: expected metric name after HELP, got \"INVALID\""},
        {TEXT, "# TYPE 9m x\n", "ERR 1:8: expected metric name after TYPE, got \"INVALID\""},
    };
    RUN(rows);
}

/* ---- openmetricsparse_test.go (2.42) errors ------------------------------------ */

static void test_om_prometheus_errors(void **state) {
    (void)state;
    static const row rows[] = {
        {OM, "", "ERR 1:1: data does not end with # EOF"},
        {OM, "\n", "ERR 1:1: \"INVALID\" \"\\n\" is not a valid start token"},
        {OM, "metric", "ERR 1:7: expected value after metric, got \"EOF\""},
        {OM, "metric 1", "ERR 1:9: data does not end with # EOF"},
        {OM, "metric 1\n", "S metric{} 1\nERR 2:1: data does not end with # EOF"},
        {OM, "metric_total 1 # {aa=\"bb\"} 4", "ERR 1:29: data does not end with # EOF"},
        {OM, "a\n#EOF\n", "ERR 1:2: expected value after metric, got \"INVALID\""},
        {OM, "\n\n#EOF\n", "ERR 1:1: \"INVALID\" \"\\n\" is not a valid start token"},
        {OM, " a 1\n#EOF\n", "ERR 1:1: \"INVALID\" \" \" is not a valid start token"},
        {OM, "9\n#EOF\n", "ERR 1:1: \"INVALID\" \"9\" is not a valid start token"},
        {OM, "# TYPE u untyped\n#EOF\n", "ERR 1:10: invalid metric type \"untyped\""},
        {OM, "# TYPE c counter \n#EOF\n", "ERR 1:10: invalid metric type \"counter \""},
        {OM, "#  TYPE c counter\n#EOF\n", "ERR 1:3: \"INVALID\" \" \" is not a valid start token"},
        {OM, "# UNIT metric suffix\n#EOF\n", "ERR 1:15: unit not a suffix of metric \"metric\""},
        {OM, "# UNIT metricsuffix suffix\n#EOF\n", "ERR 1:21: unit not a suffix of metric \"metricsuffix\""},
        {OM, "# UNIT m suffix\n#EOF\n", "ERR 1:10: unit not a suffix of metric \"m\""},
        {OM, "# HELP m\n#EOF\n", "ERR 1:9: expected text in HELP"},
        {OM, "a\t1\n#EOF\n", "ERR 1:2: expected value after metric, got \"INVALID\""},
        {OM, "a 1\t2\n#EOF\n", "ERR 1:3: strconv.ParseFloat: parsing \"1\\t2\": invalid syntax"},
        {OM, "a 1 2 \n#EOF\n", "ERR 1:7: expected next entry after timestamp, got \"INVALID\""},
        {OM, "a 1 2 #\n#EOF\n", "ERR 1:6: expected next entry after timestamp, got \"TIMESTAMP\""},
        {OM, "a 1 1z\n#EOF\n", "ERR 1:5: strconv.ParseFloat: parsing \"1z\": invalid syntax"},
        {OM, " # EOF\n", "ERR 1:1: \"INVALID\" \" \" is not a valid start token"},
        {OM, "# EOF\na 1", "ERR 2:1: unexpected data after # EOF"},
        {OM, "# EOF\n\n", "ERR 2:1: unexpected data after # EOF"},
        {OM, "# EOFa 1", "ERR 1:6: unexpected data after # EOF"},
        {OM, "#\tTYPE c counter\n", "ERR 1:2: \"INVALID\" \"\\t\" is not a valid start token"},
        {OM, "# TYPE c  counter\n", "ERR 1:10: invalid metric type \" counter\""},
        {OM, "a 1 1 1\n# EOF\n", "ERR 1:6: expected next entry after timestamp, got \"TIMESTAMP\""},
        {OM, "a{b='c'} 1\n# EOF\n", "ERR 1:5: expected label value, got \"INVALID\""},
        {OM, "a{b=\"c\",} 1\n# EOF\n", "ERR 1:9: expected label name, got \"BCLOSE\""},
        {OM, "a{,b=\"c\"} 1\n# EOF\n", "ERR 1:3: expected label name or left brace, got \"COMMA\""},
        {OM, "a{b=\"c\"d=\"e\"} 1\n# EOF\n", "ERR 1:8: expected comma, got \"LNAME\""},
        {OM, "a{b=\"c\",,d=\"e\"} 1\n# EOF\n", "ERR 1:9: expected label name, got \"COMMA\""},
        {OM, "a{b=\n# EOF\n", "ERR 1:5: expected label value, got \"INVALID\""},
        {OM, "a{\xff=\"foo\"} 1\n# EOF\n", "ERR 1:3: expected label name or left brace, got \"INVALID\""},
        {OM, "a{b=\"\xff\"} 1\n# EOF\n", "ERR 1:5: invalid UTF-8 label value"},
        {OM, "a true\n", "ERR 1:3: strconv.ParseFloat: parsing \"true\": invalid syntax"},
        {OM, "something_weird{problem=\"\n# EOF\n", "ERR 1:26: expected label value, got \"INVALID\""},
        {OM, "empty_label_name{=\"\"} 0\n# EOF\n",
         "ERR 1:18: expected label name or left brace, got \"EQUAL\""},
        {OM, "a{b=\"c\" } 1\n# EOF\n", "ERR 1:8: expected comma or left brace, got \"INVALID\""},
        {OM, "foo 1_2\n\n# EOF\n", "ERR 1:5: unsupported character in float"},
        {OM, "foo 0x1p-3\n\n# EOF\n", "ERR 1:5: unsupported character in float"},
        {OM, "foo 0x1P-3\n\n# EOF\n", "ERR 1:5: unsupported character in float"},
        {OM, "foo 0 1_2\n\n# EOF\n", "ERR 1:7: unsupported character in float"},
        {OM, "custom_metric_total 1 # {aa=bb}\n# EOF\n", "ERR 1:29: expected label value, got \"INVALID\""},
        {OM, "custom_metric_total 1 # {aa=\"bb\"}\n# EOF\n",
         "ERR 1:34: expected value after exemplar labels, got \"INVALID\""},
        {OM, "custom_metric_total 1 # {aa=\"bb\"}",
         "ERR 1:34: expected value after exemplar labels, got \"EOF\""},
        {OM, "custom_metric 1 # {aa=\"bb\"}",
         "ERR 1:16: metric name custom_metric does not support exemplars"},
        {OM, "custom_metric_total 1 # {aa=\"bb\",,cc=\"dd\"} 1",
         "ERR 1:34: expected label name, got \"COMMA\""},
        {OM, "custom_metric_total 1 # {aa=\"bb\"} 1_2", "ERR 1:35: unsupported character in float"},
        {OM, "custom_metric_total 1 # {aa=\"bb\"} 0x1p-3", "ERR 1:35: unsupported character in float"},
        {OM, "custom_metric_total 1 # {aa=\"bb\"} true",
         "ERR 1:35: strconv.ParseFloat: parsing \"true\": invalid syntax"},
        {OM, "custom_metric_total 1 # {aa=\"bb\",cc=}", "ERR 1:37: expected label value, got \"INVALID\""},
        {OM, "custom_metric_total 1 # {aa=\"\xff\"} 9.0", "ERR 1:29: invalid UTF-8 label value"},
        {OM, "{b=\"c\",} 1", "ERR 1:1: \"INVALID\" \"{\" is not a valid start token"},
        {OM, "a 1 NaN", "ERR 1:5: invalid timestamp"},
        {OM, "a 1 -Inf", "ERR 1:5: invalid timestamp"},
        {OM, "a 1 Inf", "ERR 1:5: invalid timestamp"},
        {OM, "# TYPE hhh histogram\nhhh_bucket{le=\"+Inf\"} 1 # {aa=\"bb\"} 4 NaN",
         "T hhh histogram\nERR 2:39: invalid exemplar timestamp"},
        {OM, "# TYPE hhh histogram\nhhh_bucket{le=\"+Inf\"} 1 # {aa=\"bb\"} 4 -Inf",
         "T hhh histogram\nERR 2:39: invalid exemplar timestamp"},
        {OM, "# TYPE hhh histogram\nhhh_bucket{le=\"+Inf\"} 1 # {aa=\"bb\"} 4 Inf",
         "T hhh histogram\nERR 2:39: invalid exemplar timestamp"},
        /* an accepting match that runs on and fails is not backed off */
        {OM, "a_total 1 # x\n# EOF\n", "ERR 1:13: expected timestamp or # symbol, got \"INVALID\""},
        {OM, "a_total 1 # {a=\"b\"} 1 2 3\n# EOF\n",
         "ERR 1:24: expected next entry after exemplar timestamp, got \"TIMESTAMP\""},
        {OM, "a_total 1 # {a=\"b\"} 1 x\n# EOF\n",
         "ERR 1:23: strconv.ParseFloat: parsing \"x\": invalid syntax"},
        {OM, "a_total 1 # {a=\"b\"} 1 2",
         "ERR 1:24: expected next entry after exemplar timestamp, got \"EOF\""},
        {OM, "a_total 1 # {a=\"b\"}\"x\"\n# EOF\n",
         "ERR 1:20: expected value after exemplar labels, got \"LVALUE\""},
        {OM, "a_total 1 # {a=\"b\"} 1 \n# EOF\n", "ERR 1:23: expected timestamp or comment, got \"INVALID\""},
        {OM, "# HELP m \xff\n# EOF\n", "ERR 1:10: help text is not a valid utf8 string"},
        {OM, "# TYPE 9 gauge\n# EOF\n", "ERR 1:8: expected metric name after TYPE, got \"INVALID\""},
        {OM, "# UNIT m_s\n# EOF\n", "ERR 1:11: expected text in UNIT"},
        {OM, "# HELP m x", "ERR 1:9: expected text in HELP"},
        {OM, "# FOO\n# EOF\n", "ERR 1:3: \"INVALID\" \"F\" is not a valid start token"},
        {OM, "m \xc2\x85\n# EOF\n", "ERR 1:3: strconv.ParseFloat: parsing \"\\u0085\": invalid syntax"},
        {OM, "\xe9\n# EOF\n", "ERR 1:1: \"INVALID\" \"\xc3\xa9\" is not a valid start token"},
        {OM, "\x80\n# EOF\n", "ERR 1:1: \"INVALID\" \"\\u0080\" is not a valid start token"},
        {OM, "\x01\n# EOF\n", "ERR 1:1: \"INVALID\" \"\\x01\" is not a valid start token"},
    };
    RUN(rows);
}

/* ---- histograms, summaries, a node_exporter/dcgm-exporter page -------------------- */

static void test_histogram_summary(void **state) {
    (void)state;
    static const row rows[] = {
        {TEXT,
         "# HELP http_request_duration_seconds A histogram of the request duration.\n"
         "# TYPE http_request_duration_seconds histogram\n"
         "http_request_duration_seconds_bucket{le=\"0.05\"} 24054\n"
         "http_request_duration_seconds_bucket{le=\"0.1\"} 33444\n"
         "http_request_duration_seconds_bucket{le=\"+Inf\"} 144320\n"
         "http_request_duration_seconds_sum 53423\n"
         "http_request_duration_seconds_count 144320\n"
         "# HELP rpc_duration_seconds A summary of the RPC duration in seconds.\n"
         "# TYPE rpc_duration_seconds summary\n"
         "rpc_duration_seconds{quantile=\"0.01\"} 3102\n"
         "rpc_duration_seconds{quantile=\"0.99\"} 76656\n"
         "rpc_duration_seconds_sum 1.7560473e+07\n"
         "rpc_duration_seconds_count 2693\n",
         "H http_request_duration_seconds [A histogram of the request duration.]\n"
         "T http_request_duration_seconds histogram\n"
         "S http_request_duration_seconds_bucket{le=\"0.05\"} 24054\n"
         "S http_request_duration_seconds_bucket{le=\"0.1\"} 33444\n"
         "S http_request_duration_seconds_bucket{le=\"+Inf\"} 144320\n"
         "S http_request_duration_seconds_sum{} 53423\n"
         "S http_request_duration_seconds_count{} 144320\n"
         "H rpc_duration_seconds [A summary of the RPC duration in seconds.]\n"
         "T rpc_duration_seconds summary\n"
         "S rpc_duration_seconds{quantile=\"0.01\"} 3102\n"
         "S rpc_duration_seconds{quantile=\"0.99\"} 76656\n"
         "S rpc_duration_seconds_sum{} 1.7560473e+07\n"
         "S rpc_duration_seconds_count{} 2693\nEOF"},
        {OM,
         "# TYPE foo histogram\n"
         "foo_bucket{le=\"0.0\"} 0\n"
         "foo_bucket{le=\"1e-05\"} 0\n"
         "foo_bucket{le=\"1.0\"} 1 # {a=\"b\"} 0.5\n"
         "foo_bucket{le=\"+Inf\"} 17 # {a=\"c\"} 9.8 1520879607.789\n"
         "foo_count 17\n"
         "foo_sum 324789.3\n"
         "foo_created 1520430000.123\n"
         "# TYPE s summary\n# UNIT s_seconds seconds\n"
         "s_count 0\ns_sum 0\ns{quantile=\"0.5\"} NaN\n"
         "# TYPE gh gaugehistogram\ngh_bucket{le=\"+Inf\"} 2 # {} 1\ngh_gcount 2\ngh_gsum 3\n"
         "# TYPE ss stateset\nss{ss=\"a\"} 1\nss{ss=\"b\"} 0\n"
         "# EOF\n",
         "T foo histogram\n"
         "S foo_bucket{le=\"0.0\"} 0\n"
         "S foo_bucket{le=\"1e-05\"} 0\n"
         "S foo_bucket{le=\"1.0\"} 1 # {a=\"b\"} 0.5\n"
         "S foo_bucket{le=\"+Inf\"} 17 # {a=\"c\"} 9.8 @1520879607789\n"
         "S foo_count{} 17\n"
         "S foo_sum{} 324789.3\n"
         "S foo_created{} 1.520430000123e+09\n"
         "T s summary\nU s_seconds [seconds]\n"
         "S s_count{} 0\nS s_sum{} 0\nS s{quantile=\"0.5\"} NaN\n"
         "T gh gaugehistogram\nS gh_bucket{le=\"+Inf\"} 2 # {} 1\nS gh_gcount{} 2\nS gh_gsum{} 3\n"
         "T ss stateset\nS ss{ss=\"a\"} 1\nS ss{ss=\"b\"} 0\nEOF"},
        {TEXT,
         "# HELP DCGM_FI_DEV_GPU_TEMP GPU temperature (in C).\n"
         "# TYPE DCGM_FI_DEV_GPU_TEMP gauge\n"
         "DCGM_FI_DEV_GPU_TEMP{gpu=\"0\",UUID=\"GPU-5fd4d2c8-0ae2-43d1-a0d0-2bbb0a4b8f0d\","
         "device=\"nvidia0\",modelName=\"NVIDIA H100 80GB HBM3\",Hostname=\"node-1\"} 34\n"
         "# HELP node_cpu_seconds_total Seconds the CPUs spent in each mode.\n"
         "# TYPE node_cpu_seconds_total counter\n"
         "node_cpu_seconds_total{cpu=\"0\",mode=\"idle\"} 2.06532178e+06\n",
         "H DCGM_FI_DEV_GPU_TEMP [GPU temperature (in C).]\n"
         "T DCGM_FI_DEV_GPU_TEMP gauge\n"
         "S DCGM_FI_DEV_GPU_TEMP{gpu=\"0\",UUID=\"GPU-5fd4d2c8-0ae2-43d1-a0d0-2bbb0a4b8f0d\","
         "device=\"nvidia0\",modelName=\"NVIDIA H100 80GB HBM3\",Hostname=\"node-1\"} 34\n"
         "H node_cpu_seconds_total [Seconds the CPUs spent in each mode.]\n"
         "T node_cpu_seconds_total counter\n"
         "S node_cpu_seconds_total{cpu=\"0\",mode=\"idle\"} 2.06532178e+06\nEOF"},
    };
    RUN(rows);
}

/* ---- lexer corners: NUL bytes, comments, HELP text -------------------------------- */

static void test_lexer_corners(void **state) {
    (void)state;
    char *got;
    /* a NUL at the start of a line ends the input like EOF */
    got = dump_lim(TEXT, "m 1\n\0garbage\n", 13, NULL);
    assert_string_equal(got, "S m{} 1\nEOF");
    free(got);
    /* ... and so does one right after a bare # */
    got = dump_lim(TEXT, "#\0 x\nm 2\n", 9, NULL);
    assert_string_equal(got, "EOF");
    free(got);
    /* NULs inside "# " comments, HELP text and label values are skipped by
     * the lexer and stay in the views */
    got = dump_lim(TEXT, "# a\0b\n# HELP m x\0y\nm{a=\"x\0y\"} 2\n", 31, NULL);
    assert_memory_equal(got, "C [# a\0b]\nH m [x\0y]\nS m{a=\"x\0y\"} 2\nEOF", 39);
    free(got);
    /* a NUL where a value should be is the end of the token */
    got = dump_lim(TEXT, "m 1\0\n", 5, NULL);
    assert_string_equal(got, "ERR 1:4: expected timestamp or new record, got \"INVALID\"");
    free(got);
    /* ... but the newline after # EOF is still lexed in the comment state,
     * which skips NULs: Prometheus accepts this */
    got = dump_lim(OM, "m 1\n# EOF\n\0", 11, NULL);
    assert_string_equal(got, "S m{} 1\nEOF");
    free(got);
    /* OpenMetrics: a NUL in the EOF line's comment state is skipped */
    got = dump_lim(OM, "m 1\n# E\0OF\n", 11, NULL);
    assert_string_equal(got, "S m{} 1\nEOF");
    free(got);

    static const row rows[] = {
        /* HELP text: one blank after the name is dropped, the rest kept */
        {TEXT, "# HELP m\n# HELP m   \n# HELP m  two\n# HELP m-x\n# HELP m\tt \n",
         "H m []\nH m []\nH m [ two]\nH m [x]\nH m [t ]\nEOF"},
        {TEXT, "#\n# \n#  HELPx y\n# HELLO\n#\tTYPE m gauge\n",
         "C [#]\nC [# ]\nC [#  HELPx y]\nC [# HELLO]\nT m gauge\nEOF"},
        /* free blanks everywhere in text */
        {TEXT, "m{} 1\nm { a = \"1\" , } 2 3 \n  m 4\n", "S m{} 1\nS m{a=\"1\"} 2 @3\nS m{} 4\nEOF"},
        /* a raw newline inside a text label value */
        {TEXT, "m{a=\"multi\nline\"} 1\n", "S m{a=\"multi\nline\"} 1\nEOF"},
        {OM, "m{a=\"multi\nline\"} 1\n# EOF\n", "ERR 1:11: expected label value, got \"INVALID\""},
        /* an escaped newline is not allowed, an escaped anything else is */
        {TEXT, "m{a=\"x\\\ny\"} 1\n", "ERR 1:8: expected label value, got \"INVALID\""},
        {OM, "m{a=\"\\q\"} 1\n# EOF\n", "S m{a=\"\\q\"} 1\nEOF"},
        /* label and metric name alphabets */
        {TEXT, "a:b_c9{_x9=\"1\"} 1\n", "S a:b_c9{_x9=\"1\"} 1\nEOF"},
        {TEXT, "m{a:b=\"1\"} 1\n", "ERR 1:4: expected equal, got \"INVALID\""},
        {TEXT, "m{9=\"1\"} 1\n", "ERR 1:3: expected label name, got \"INVALID\""},
        /* metadata must be alone on its line */
        {TEXT, "# TYPE m gauge\n", "T m gauge\nEOF"},
        {OM, "# TYPE m gauge\n# UNIT m_c c\n# UNIT m \n# HELP m \n# EOF\n",
         "T m gauge\nU m_c [c]\nU m []\nH m []\nEOF"},
        {OM, "# UNIT m_c_seconds c_seconds\n# UNIT xc c\n# EOF\n",
         "U m_c_seconds [c_seconds]\nERR 2:11: unit not a suffix of metric \"xc\""},
    };
    RUN(rows);
}

/* ---- values and timestamps ------------------------------------------------------ */

static void one_series(expo_format fmt, const char *in, expo_parser *p) {
    expo_parser_init(p, in, strlen(in), fmt, NULL);
    assert_int_equal(expo_parser_next(p), EXPO_ENTRY_SERIES);
}

static void test_values(void **state) {
    (void)state;
    static const struct {
        const char *in;
        double want;
    } cases[] = {
        {"m 0\n", 0},
        {"m -0\n", -0.0},
        {"m 1\n", 1},
        {"m 1.5\n", 1.5},
        {"m .5\n", 0.5},
        {"m 5.\n", 5},
        {"m +3\n", 3},
        {"m 1e3\n", 1000},
        {"m 1E+3\n", 1000},
        {"m 0.1\n", 0.1},
        {"m 0.3\n", 0.3},
        {"m 1e-400\n", 0},
        {"m 4.9e-324\n", 4.9e-324},
        {"m 1.7976931348623157e308\n", 1.7976931348623157e308},
        {"m 123456789012345678901234567890\n", 123456789012345678901234567890.0},
        {"m 0.000000000000000000000000000000000000000000000000000000000000001\n", 1e-63},
        {"m 9007199254740993\n", 9007199254740992.0}, /* ties to even, as Go */
        {"m -Infinity\n", -INFINITY},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        expo_parser p;
        one_series(TEXT, cases[i].in, &p);
        double got = expo_parser_value(&p);
        if (memcmp(&got, &cases[i].want, sizeof got) != 0) fail_msg("%s: got %.17g", cases[i].in, got);
        expo_parser_free(&p);
    }
    /* every NaN reads as Prometheus's value.NormalNaN, in both formats */
    const char *nans[][2] = {
        {"m NaN\n", "t"}, {"m nAn 1\n", "t"}, {"m NaN\n# EOF\n", "o"}, {"m_total 1 # {} nan\n# EOF\n", "e"}};
    for (size_t i = 0; i < 4; i++) {
        expo_parser p;
        one_series(nans[i][1][0] == 't' ? TEXT : OM, nans[i][0], &p);
        double v = nans[i][1][0] == 'e' ? expo_parser_exemplar_value(&p) : expo_parser_value(&p);
        uint64_t bits;
        memcpy(&bits, &v, sizeof bits);
        assert_true(bits == EXPO_NORMAL_NAN_BITS);
        expo_parser_free(&p);
    }
}

static void test_timestamps(void **state) {
    (void)state;
    static const struct {
        expo_format fmt;
        const char *in;
        int64_t want;
    } cases[] = {
        {TEXT, "m 1 0\n", 0},
        {TEXT, "m 1 1700000000123\n", INT64_C(1700000000123)},
        {TEXT, "m 1 9223372036854775807\n", INT64_MAX},
        {TEXT, "m 1 007\n", 7},
        {OM, "m 1 0\n# EOF\n", 0},
        {OM, "m 1 1700000000\n# EOF\n", INT64_C(1700000000000)},
        {OM, "m 1 1700000000.123\n# EOF\n", INT64_C(1700000000123)},
        {OM, "m 1 1078098474.429\n# EOF\n", INT64_C(1078098474428)}, /* Go truncates */
        {OM, "m 1 -1.5\n# EOF\n", -1500},
        {OM, "m 1 -0.0005\n# EOF\n", 0},
        {OM, "m 1 1.7e9\n# EOF\n", INT64_C(1700000000000)},
        {OM, "m 1 1e300\n# EOF\n", INT64_MIN}, /* Go's int64() on amd64 */
        {OM, "m 1 -9223372036854775.808\n# EOF\n", INT64_MIN},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        expo_parser p;
        one_series(cases[i].fmt, cases[i].in, &p);
        assert_true(expo_parser_has_ts(&p));
        if (expo_parser_ts_ms(&p) != cases[i].want)
            fail_msg("%s: got %lld", cases[i].in, (long long)expo_parser_ts_ms(&p));
        expo_parser_free(&p);
    }
    expo_parser p;
    one_series(TEXT, "m 1\n", &p);
    assert_false(expo_parser_has_ts(&p));
    expo_parser_free(&p);
}

/* ---- exemplars ------------------------------------------------------------------ */

static void test_exemplars(void **state) {
    (void)state;
    const char *in = "a_total{x=\"1\"} 5 17.5 # {trace_id=\"4bf9\",span_id=\"00f0\"} 1.5e-3 1600000000.001\n"
                     "b_bucket{le=\"+Inf\"} 1 # {} -1\n"
                     "a_total 6\n# EOF\n";
    expo_parser p;
    expo_parser_init(&p, in, strlen(in), OM, NULL);
    assert_int_equal(expo_parser_next(&p), EXPO_ENTRY_SERIES);
    assert_true(expo_parser_has_ts(&p));
    assert_int_equal(expo_parser_ts_ms(&p), 17500);
    assert_true(expo_parser_has_exemplar(&p));
    assert_int_equal(expo_parser_exemplar_nlabels(&p), 2);
    const expo_label *el = expo_parser_exemplar_labels(&p);
    assert_true(base_str_eqc(el[0].name, "trace_id") && base_str_eqc(el[0].value, "4bf9"));
    assert_true(base_str_eqc(el[1].name, "span_id") && base_str_eqc(el[1].value, "00f0"));
    assert_true(expo_parser_exemplar_value(&p) == 1.5e-3);
    assert_true(expo_parser_exemplar_has_ts(&p));
    assert_int_equal(expo_parser_exemplar_ts_ms(&p), INT64_C(1600000000001));
    assert_int_equal(expo_parser_nlabels(&p), 1);
    assert_true(base_str_eqc(expo_parser_series(&p), "a_total{x=\"1\"}"));

    assert_int_equal(expo_parser_next(&p), EXPO_ENTRY_SERIES);
    assert_false(expo_parser_has_ts(&p));
    assert_true(expo_parser_has_exemplar(&p));
    assert_int_equal(expo_parser_exemplar_nlabels(&p), 0);
    assert_true(expo_parser_exemplar_value(&p) == -1);
    assert_false(expo_parser_exemplar_has_ts(&p));

    assert_int_equal(expo_parser_next(&p), EXPO_ENTRY_SERIES); /* no exemplar: state cleared */
    assert_false(expo_parser_has_exemplar(&p));
    assert_int_equal(expo_parser_exemplar_nlabels(&p), 0);
    assert_true(base_str_eqc(expo_parser_series(&p), "a_total"));
    assert_int_equal(expo_parser_next(&p), EXPO_ENTRY_EOF);
    expo_parser_free(&p);

    /* the text format has no exemplars: `#` after a value is an error */
    char *got = dump(TEXT, "a_total 1 # {a=\"b\"} 1\n");
    assert_string_equal(got, "ERR 1:11: expected timestamp or new record, got \"INVALID\"");
    free(got);
}

/* ---- escapes -------------------------------------------------------------------- */

static char *unesc(const char *raw) {
    base_buf b;
    base_buf_init(&b, 0);
    assert_int_equal(expo_unescape_label(base_str_c(raw), &b), 0);
    char *s = base_buf_steal(&b, NULL);
    return s ? s : strdup("");
}

static void test_label_unescape(void **state) {
    (void)state;
    static const char *cases[][2] = {
        {"", ""},
        {"plain", "plain"},
        {"a\\\"b", "a\"b"},
        {"a\\\\b", "a\\b"},
        {"a\\nb", "a\nb"},
        {"x\\ty", "x\\ty"}, /* unknown escapes stay literal (verified) */
        {"\\\\n", "\\n"},   /* left to right: \\ then n */
        {"\\\\\\n", "\\\n"},
        {"end\\", "end\\"},
        {"\\q\\\"", "\\q\""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *got = unesc(cases[i][0]);
        assert_string_equal(got, cases[i][1]);
        free(got);
    }
    assert_false(expo_label_has_escapes(base_str_c("abc")));
    assert_true(expo_label_has_escapes(base_str_c("a\\nc")));

    /* through the parser, text and OpenMetrics alike */
    const char *in = "m{a=\"q\\\"uote\\\\back\\nnl\\tlit\"} 1\n";
    expo_parser p;
    one_series(TEXT, in, &p);
    base_buf b;
    base_buf_init(&b, 0);
    assert_int_equal(expo_unescape_label(expo_parser_labels(&p)[0].value, &b), 0);
    assert_string_equal(b.data, "q\"uote\\back\nnl\\tlit");
    base_buf_free(&b);
    expo_parser_free(&p);
}

static void test_help_unescape(void **state) {
    (void)state;
    /* 0.0.4 unescapes \\ and \n only: \" stays (verified) */
    const char *t = "# HELP m a \\\" b \\\\ c \\n d \\t\n";
    expo_parser p;
    expo_parser_init(&p, t, strlen(t), TEXT, NULL);
    assert_int_equal(expo_parser_next(&p), EXPO_ENTRY_HELP);
    base_buf b;
    base_buf_init(&b, 0);
    assert_int_equal(expo_parser_help(&p, &b), 0);
    assert_string_equal(b.data, "a \\\" b \\ c \n d \\t");
    expo_parser_free(&p);
    /* OpenMetrics unescapes \" too (verified) */
    const char *o = "# HELP c a \\\" b \\\\ c \\n d\n# EOF\n";
    expo_parser_init(&p, o, strlen(o), OM, NULL);
    assert_int_equal(expo_parser_next(&p), EXPO_ENTRY_HELP);
    base_buf_reset(&b);
    assert_int_equal(expo_parser_help(&p, &b), 0);
    assert_string_equal(b.data, "a \" b \\ c \n d");
    base_buf_free(&b);
    expo_parser_free(&p);
}

/* ---- duplicate labels ----------------------------------------------------------- */

static void test_duplicates(void **state) {
    (void)state;
    static const row rows[] = {
        {TEXT, "m{b=\"1\",a=\"1\",b=\"2\",a=\"2\"} 1\n",
         "ERR 1:1: label name \"a\" is not unique: invalid sample"},
        {TEXT, "m{__name__=\"x\"} 1\n", "ERR 1:1: label name \"__name__\" is not unique: invalid sample"},
        /* Prometheus drops every label of a name with an empty value first */
        {TEXT, "m{a=\"\",a=\"1\"} 1\n", "S m{a=\"\",a=\"1\"} 1\nEOF"},
        {TEXT, "m{__name__=\"\"} 1\n", "S m{__name__=\"\"} 1\nEOF"},
        {TEXT, "m{a=\"\",a=\"1\",b=\"1\",b=\"2\"} 1\n",
         "ERR 1:1: label name \"b\" is not unique: invalid sample"},
        {OM, "m{a=\"1\",a=\"1\"} 1\n# EOF\n", "ERR 1:1: label name \"a\" is not unique: invalid sample"},
        /* only series labels count, not the exemplar's */
        {OM, "m_total{a=\"1\"} 1 # {a=\"1\",a=\"2\"} 1\n# EOF\n",
         "S m_total{a=\"1\"} 1 # {a=\"1\",a=\"2\"} 1\nEOF"},
        {TEXT, "m{A=\"1\",a=\"1\"} 1\n", "S m{A=\"1\",a=\"1\"} 1\nEOF"},
    };
    RUN(rows);

    /* many labels: heap growth, and the sorted duplicate check */
    base_buf in;
    base_buf_init(&in, 0);
    base_buf_puts(&in, "big{");
    for (int i = 0; i < 300; i++) base_buf_printf(&in, "l%03d=\"v%d\",", 299 - i, i);
    base_buf_puts(&in, "} 7\n");
    expo_parser p;
    expo_parser_init(&p, in.data, in.len, TEXT, NULL);
    assert_int_equal(expo_parser_next(&p), EXPO_ENTRY_SERIES);
    assert_int_equal(expo_parser_nlabels(&p), 300);
    assert_true(base_str_eqc(expo_parser_labels(&p)[299].name, "l000"));
    assert_true(base_str_eqc(expo_parser_labels(&p)[299].value, "v299"));
    assert_int_equal(expo_parser_next(&p), EXPO_ENTRY_EOF);
    expo_parser_free(&p);
    in.len -= 4;
    base_buf_puts(&in, "l150=\"x\",l007=\"y\",l007=\"\",__name__=\"z\"} 7\n");
    expo_parser_init(&p, in.data, in.len, TEXT, NULL);
    assert_int_equal(expo_parser_next(&p), BASE_E_PARSE);
    assert_string_equal(expo_parser_error(&p), "label name \"__name__\" is not unique: invalid sample");
    expo_parser_free(&p);
    in.len -= strlen("__name__=\"z\"} 7\n");
    base_buf_puts(&in, "} 7\n");
    expo_parser_init(&p, in.data, in.len, TEXT, NULL);
    assert_int_equal(expo_parser_next(&p), BASE_E_PARSE);
    assert_string_equal(expo_parser_error(&p), "label name \"l150\" is not unique: invalid sample");
    expo_parser_free(&p);
    base_buf_free(&in);
}

/* ---- limits ---------------------------------------------------------------------- */

static void test_limits(void **state) {
    (void)state;
    expo_parse_limits lim = {.max_labels = 2};
    char *got = dump_lim(TEXT, "m{a=\"1\",b=\"2\"} 1\nm{a=\"1\",b=\"2\",c=\"3\"} 1\n", 40, &lim);
    assert_string_equal(
        got, "S m{a=\"1\",b=\"2\"} 1\n"
             "LIMIT 2:15: label_limit exceeded (metric: m, number of labels: more than 2, limit: 2)");
    free(got);
    const char *ex = "m_total 1 # {a=\"1\",b=\"2\",c=\"3\"} 1\n# EOF\n";
    got = dump_lim(OM, ex, strlen(ex), &lim);
    assert_string_equal(got, "LIMIT 1:26: exemplar label limit exceeded (metric: m_total, number of labels: "
                             "more than 2, limit: 2)");
    free(got);

    lim = (expo_parse_limits){.max_name_len = 5};
    const char *nl = "abcde{vwxyz=\"1\"} 1\nabcde{vwxyzz=\"1\"} 1\n";
    got = dump_lim(TEXT, nl, strlen(nl), &lim);
    assert_string_equal(got,
                        "S abcde{vwxyz=\"1\"} 1\nLIMIT 2:7: label_name_length_limit exceeded (metric: abcde, "
                        "label name: vwxyzz, length: 6, limit: 5)");
    free(got);
    got = dump_lim(TEXT, "abcdef 1\n", 9, &lim);
    assert_string_equal(got,
                        "LIMIT 1:1: metric name length limit exceeded (metric: abcdef, length: 6, limit: 5)");
    free(got);
    got = dump_lim(TEXT, "# HELP abcdef x\n", 16, &lim);
    assert_string_equal(got,
                        "LIMIT 1:8: metric name length limit exceeded (metric: abcdef, length: 6, limit: 5)");
    free(got);

    /* value length counts unescaped bytes */
    lim = (expo_parse_limits){.max_value_len = 3};
    const char *vl = "m{a=\"\\\\\\\\\\\\\"} 1\nm{a=\"abcd\"} 1\n";
    got = dump_lim(TEXT, vl, strlen(vl), &lim);
    assert_string_equal(got,
                        "S m{a=\"\\\\\\\\\\\\\"} 1\nLIMIT 2:6: label_value_length_limit exceeded (metric: m, "
                        "label name: a, value: \"abcd\", length: 4, limit: 3)");
    free(got);

    lim = (expo_parse_limits){.max_line_len = 10};
    const char *ll = "m 12345678\n# HELP m 1\nm 123456789\n";
    got = dump_lim(TEXT, ll, strlen(ll), &lim);
    assert_string_equal(got,
                        "S m{} 1.2345678e+07\nH m [1]\nLIMIT 3:1: line too long (length: 11, limit: 10)");
    free(got);
}

/* ---- API contract --------------------------------------------------------------- */

static void test_api(void **state) {
    (void)state;
    /* views point into the caller's buffer */
    const char *in = "# TYPE m counter\nm{a=\"b\"} 3 4\n";
    expo_parser p;
    expo_parser_init(&p, in, strlen(in), TEXT, NULL);
    assert_int_equal(expo_parser_error_line(&p), 0);
    assert_int_equal(expo_parser_next(&p), EXPO_ENTRY_TYPE);
    assert_ptr_equal(expo_parser_name(&p).p, in + 7);
    assert_int_equal(expo_parser_type(&p), EXPO_COUNTER);
    assert_int_equal(expo_parser_next(&p), EXPO_ENTRY_SERIES);
    assert_ptr_equal(expo_parser_name(&p).p, in + 17);
    assert_ptr_equal(expo_parser_labels(&p)[0].value.p, in + 22);
    assert_true(base_str_eqc(expo_parser_series(&p), "m{a=\"b\"}"));
    assert_int_equal(expo_parser_next(&p), EXPO_ENTRY_EOF);
    assert_int_equal(expo_parser_next(&p), EXPO_ENTRY_EOF);
    expo_parser_free(&p);

    /* empty and NULL inputs */
    expo_parser_init(&p, NULL, 0, TEXT, NULL);
    assert_int_equal(expo_parser_next(&p), EXPO_ENTRY_EOF);
    expo_parser_free(&p);
    expo_parser_init(&p, NULL, 0, OM, NULL);
    assert_int_equal(expo_parser_next(&p), BASE_E_PARSE);
    assert_string_equal(expo_parser_error(&p), "data does not end with # EOF");
    expo_parser_free(&p);

    /* error position and stickiness */
    const char *bad = "m 1\nm 2\n  m{a=} 1\n";
    expo_parser_init(&p, bad, strlen(bad), TEXT, NULL);
    assert_int_equal(expo_parser_next(&p), EXPO_ENTRY_SERIES);
    assert_int_equal(expo_parser_next(&p), EXPO_ENTRY_SERIES);
    assert_int_equal(expo_parser_next(&p), BASE_E_PARSE);
    assert_int_equal(expo_parser_error_line(&p), 3);
    assert_int_equal(expo_parser_error_col(&p), 7);
    assert_string_equal(expo_parser_error(&p), "expected label value, got \"INVALID\"");
    assert_string_equal(expo_parser_error_at(&p), "3:7: expected label value, got \"INVALID\"");
    assert_int_equal(expo_parser_next(&p), BASE_E_PARSE);
    expo_parser_free(&p);

    /* a long value is quoted whole-ish in the message, without overflow */
    base_buf big;
    base_buf_init(&big, 0);
    base_buf_puts(&big, "m ");
    for (int i = 0; i < 2000; i++) base_buf_putc(&big, 'x');
    base_buf_putc(&big, '\n');
    expo_parser_init(&p, big.data, big.len, TEXT, NULL);
    assert_int_equal(expo_parser_next(&p), BASE_E_PARSE);
    assert_true(strncmp(expo_parser_error(&p), "strconv.ParseFloat: parsing \"xxx", 32) == 0);
    assert_true(strlen(expo_parser_error(&p)) < EXPO__ERR_MAX);
    expo_parser_free(&p);
    base_buf_free(&big);

    /* the parser can be reused after free */
    expo_parser_init(&p, "m 1", 3, TEXT, NULL);
    assert_int_equal(expo_parser_next(&p), EXPO_ENTRY_SERIES);
    expo_parser_free(&p);
}

/* ---- every prefix of a valid body: never a crash, never an overread -------------- */

static void test_truncations(void **state) {
    (void)state;
    const char *om =
        "# TYPE a counter\n# HELP a h \\\" i\na_total{x=\"y\\n\"} 1 2.5 # {t=\"1\"} 3 4\n# EOF\n";
    const char *tx = "# HELP a h\n# TYPE a counter\na{x=\"y\\n\"} 1 2\n# c\n";
    size_t n = strlen(om);
    for (size_t k = 0; k <= n; k++) {
        char *got = dump_lim(OM, om, k, NULL);
        if (k < n - 1)
            assert_non_null(strstr(got, "ERR "));
        else
            assert_non_null(strstr(got, "EOF"));
        free(got);
    }
    n = strlen(tx);
    for (size_t k = 0; k <= n; k++) free(dump_lim(TEXT, tx, k, NULL));
}

/* ---- fast paths ------------------------------------------------------------------ */

/* The parser recognises common label pairs, values and newlines straight
 * from the bytes, 8 and 16 at a time; these inputs put every special byte
 * at every offset of a long value, so each word boundary is crossed. */
static void test_fast_paths(void **state) {
    (void)state;
    static const struct {
        const char *ins; /* inserted at offset k of a value of x's */
        int ok_text, ok_om;
        const char *err_text, *err_om; /* with %d for the column of the insert */
    } specials[] = {
        {"\\\"", 1, 1, NULL, NULL},
        {"\\\\", 1, 1, NULL, NULL},
        {"\\n", 1, 1, NULL, NULL},
        {"\\q", 1, 1, NULL, NULL},
        {"\xc3\xa9", 1, 1, NULL, NULL},
        {"\xf0\x9f\x98\x80", 1, 1, NULL, NULL},
        {"\xff", 0, 0, "ERR 1:5: invalid UTF-8 label value", "ERR 1:5: invalid UTF-8 label value"},
        {"\xed\xa0\x80", 0, 0, "ERR 1:5: invalid UTF-8 label value", "ERR 1:5: invalid UTF-8 label value"},
        {"\n", 1, 0, NULL, "ERR 1:%d: expected label value, got \"INVALID\""},
        {"\\\n", 0, 0, "ERR 1:%d: expected label value, got \"INVALID\"",
         "ERR 1:%d: expected label value, got \"INVALID\""},
    };
    int bad = 0;
    for (size_t s = 0; s < sizeof specials / sizeof specials[0]; s++)
        for (int fmt = 0; fmt < 2; fmt++)
            for (int len = 0; len <= 40; len++)
                for (int k = 0; k <= len; k++) {
                    char val[64], in[160], want[256];
                    int vn =
                        snprintf(val, sizeof val, "%.*s%s%.*s", k, "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
                                 specials[s].ins, len - k, "yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy");
                    snprintf(in, sizeof in, "m{a=\"%s\",bb=\"z\"} 1\n%s", val, fmt ? "# EOF\n" : "");
                    int ok = fmt ? specials[s].ok_om : specials[s].ok_text;
                    const char *err = fmt ? specials[s].err_om : specials[s].err_text;
                    /* the column of the insert's last byte (where the lexer stops) */
                    int col = 5 + k + (int)strlen(specials[s].ins);
                    if (ok)
                        snprintf(want, sizeof want, "S m{a=\"%s\",bb=\"z\"} 1\nEOF", val);
                    else
                        snprintf(want, sizeof want, err, col);
                    char *got = dump(fmt ? OM : TEXT, in);
                    if (strcmp(got, want) != 0) {
                        print_error("special %zu fmt %d len %d k %d (%d bytes): want\n%s\ngot\n%s\n", s, fmt,
                                    len, k, vn, want, got);
                        bad++;
                    }
                    free(got);
                }
    assert_int_equal(bad, 0);

    /* NUL bytes in a text label value are skipped by the lexer (and kept in
     * the view), also right after the closing quote and at word edges */
    for (int k = 0; k <= 20; k++) {
        char in[64], want[96];
        size_t n = (size_t)snprintf(in, sizeof in, "m{a=\"%.*s_%.*s\"} 1\n", k, "xxxxxxxxxxxxxxxxxxxx",
                                    20 - k, "yyyyyyyyyyyyyyyyyyyy");
        in[5 + k] = '\0';
        size_t wn = (size_t)snprintf(want, sizeof want, "S m{a=\"%.*s_%.*s\"} 1\nEOF", k,
                                     "xxxxxxxxxxxxxxxxxxxx", 20 - k, "yyyyyyyyyyyyyyyyyyyy");
        want[7 + k] = '\0';
        char *got = dump_lim(TEXT, in, n, NULL);
        assert_memory_equal(got, want, wn + 1);
        free(got);
    }
    /* a NUL right after a closing quote is skipped with the value: it ends
     * up in the view, which 2.42 cuts by position (quote, x, quote) */
    char *got = dump_lim(TEXT, "m{a=\"x\"\0,b=\"y\"} 1\n", 18, NULL);
    assert_string_equal(got, "S m{a=\"x\"\",b=\"y\"} 1\nEOF");
    free(got);
    static const row rows[] = {
        /* the pair shapes the fast path leaves to the lexer */
        {TEXT, "m{a=\"1\" ,b=\"2\"\t, c=\"3\",} 1\n", "S m{a=\"1\",b=\"2\",c=\"3\"} 1\nEOF"},
        {TEXT, "m{a=\"1\"b=\"2\"} 1\n", "S m{a=\"1\",b=\"2\"} 1\nEOF"},
        {OM, "m{a=\"1\"b=\"2\"} 1\n# EOF\n", "ERR 1:8: expected comma, got \"LNAME\""},
        {OM, "m{a=\"1\",} 1\n# EOF\n", "ERR 1:9: expected label name, got \"BCLOSE\""},
        {OM, "m{a=\"1\",,b=\"2\"} 1\n# EOF\n", "ERR 1:9: expected label name, got \"COMMA\""},
        /* text's virtual last newline where a label or a value must come */
        {TEXT, "m{a=\"1\"", "ERR 1:8: expected label name, got \"INVALID\""},
        {TEXT, "m{a=\"1\"}", "ERR 1:9: expected value after metric, got \"INVALID\""},
        {TEXT, "m{a=\"1\"} 2", "S m{a=\"1\"} 2\nEOF"},
        {TEXT, "m{a=\"1\"}  2\t3\n", "S m{a=\"1\"} 2 @3\nEOF"},
        /* the common dcgm-exporter label set: no duplicate, then one */
        {TEXT,
         "m{gpu=\"0\",UUID=\"GPU-1\",pci_bus_id=\"0:1\",device=\"nvidia0\",modelName=\"H100\",Hostname=\"h\","
         "DCGM_FI_DRIVER_VERSION=\"550\",GPU_I_ID=\"1\"} 1\n",
         "S "
         "m{gpu=\"0\",UUID=\"GPU-1\",pci_bus_id=\"0:1\",device=\"nvidia0\",modelName=\"H100\",Hostname=\"h\","
         "DCGM_FI_DRIVER_VERSION=\"550\",GPU_I_ID=\"1\"} 1\nEOF"},
        {OM,
         "m{gpu=\"0\",UUID=\"GPU-1\",pci_bus_id=\"0:1\",device=\"nvidia0\",modelName=\"H100\",Hostname=\"h\","
         "DCGM_FI_DRIVER_VERSION=\"550\",gpu=\"1\"} 1\n# EOF\n",
         "ERR 1:1: label name \"gpu\" is not unique: invalid sample"},
    };
    RUN(rows);

    /* values: the short decimal shapes read exactly as Go reads them */
    static const struct {
        const char *in;
        double want;
    } vals[] = {
        {"0.1", 0.1},
        {"0.987654", 0.987654},
        {"312.25", 312.25},
        {"123456789012345", 123456789012345.0},
        {"1234567890123456", 1234567890123456.0},
        {"12345678.1234567", 12345678.1234567},
        {"1234567.12345678", 1234567.12345678},
        {"0.000000000000001", 0.000000000000001},
        {"000000000000012", 12.0},
        {"0000000000000000000000012", 12.0},
        {"99999999999999.9", 99999999999999.9},
        {"9.99999999999999", 9.99999999999999},
        {"0.30000000000000004", 0.30000000000000004},
        {"1000012345.678", 1000012345.678},
    };
    for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++)
        for (int fmt = 0; fmt < 2; fmt++) {
            char in[64];
            snprintf(in, sizeof in, "m %s\n%s", vals[i].in, fmt ? "# EOF\n" : "");
            expo_parser p;
            one_series(fmt ? OM : TEXT, in, &p);
            double v = expo_parser_value(&p);
            if (memcmp(&v, &vals[i].want, sizeof v) != 0) fail_msg("%s: got %.17g", vals[i].in, v);
            expo_parser_free(&p);
        }
    static const row bad_values[] = {
        {TEXT, "m .\n", "ERR 1:3: strconv.ParseFloat: parsing \".\": invalid syntax"},
        {TEXT, "m 1.2.3\n", "ERR 1:3: strconv.ParseFloat: parsing \"1.2.3\": invalid syntax"},
        {OM, "m 1..\n# EOF\n", "ERR 1:3: strconv.ParseFloat: parsing \"1..\": invalid syntax"},
    };
    RUN(bad_values);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_text_verified),
        cmocka_unit_test(test_om_verified),
        cmocka_unit_test(test_text_prometheus_suite),
        cmocka_unit_test(test_om_prometheus_errors),
        cmocka_unit_test(test_histogram_summary),
        cmocka_unit_test(test_lexer_corners),
        cmocka_unit_test(test_values),
        cmocka_unit_test(test_timestamps),
        cmocka_unit_test(test_exemplars),
        cmocka_unit_test(test_label_unescape),
        cmocka_unit_test(test_help_unescape),
        cmocka_unit_test(test_duplicates),
        cmocka_unit_test(test_limits),
        cmocka_unit_test(test_api),
        cmocka_unit_test(test_truncations),
        cmocka_unit_test(test_fast_paths),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
