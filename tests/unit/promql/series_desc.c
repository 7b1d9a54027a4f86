/* tests/unit/rules/eval_seriesdesc.c -- the series descriptions that the
 * evaluator's tests and `kelvin test rules` feed the head with
 * (promql/series_desc.h, 2.42's ParseSeriesDesc and ParseMetric): the
 * expansions, stale markers and omitted steps, Go's number rules, and the
 * first error in 2.42's words and position (each message checked against
 * promtool 2.42 by tests/compat/test_rules.py's fixtures as well). */
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
#include "labels/labels.h"
#include "promql/series_desc.h"

/* "name{labels} | v v _ s" rendering of a parsed description */
static char *render(const char *in) {
    promql_series_desc d;
    memset(&d, 0, sizeof d);
    base_buf msg, out;
    base_buf_init(&msg, 0);
    base_buf_init(&out, 0);
    int rc = promql_parse_series_desc(in, strlen(in), 0, &d, &msg);
    if (rc) {
        base_buf_printf(&out, "ERR %s", msg.data ? msg.data : "");
    } else {
        if (d.ls)
            labels_format_metric(d.ls, &out);
        else
            base_buf_puts(&out, "NOSET");
        base_buf_puts(&out, " |");
        for (size_t i = 0; i < d.n; i++) {
            uint64_t b;
            memcpy(&b, &d.vals[i].v, sizeof b);
            if (d.vals[i].omitted)
                base_buf_puts(&out, " _");
            else if (b == BASE_STALE_NAN_BITS)
                base_buf_puts(&out, " s");
            else {
                base_buf_putc(&out, ' ');
                base_buf_double(&out, d.vals[i].v);
            }
        }
    }
    promql_series_desc_free(&d);
    base_buf_free(&msg);
    char *r = base_buf_steal(&out, NULL);
    base_buf_free(&out);
    return r;
}

static void check(const char *in, const char *want) {
    char *got = render(in);
    if (strcmp(got, want) != 0) fail_msg("%s\n  got  %s\n  want %s", in, got, want);
    free(got);
}

static void test_values(void **state) {
    (void)state;
    check("up{job=\"a\"} 1 2 3", "up{job=\"a\"} | 1 2 3");
    check("up 1+2x3 _x2 stale", "up | 1 3 5 7 _ _ s");
    check("x 5-1x2 -1-1x2 +2x1", "x | 5 4 3 -1 -2 -3 2 2");
    check("x 0.1+0.1x3", "x | 0.1 0.2 0.30000000000000004 0.4");
    check("x _ _x0 3x0 _x1", "x | _ 3 _");
    check("x 010 08 1e3 .5 5. Inf -Inf", "x | 8 8 1000 0.5 5 +Inf -Inf");
    check("x 0x10", "x | 0 0 0 0 0 0 0 0 0 0 0");
    check("{a=\"b\",} 1", "{a=\"b\"} | 1");
    check("sum{__name__=\"x\", b='c'} 1", "sum{b=\"c\"} | 1");
    check("x", "x |");
    check("", "{} |");
    check("x{a=\"1\",a=\"2\"} 1", "NOSET | 1");
    char *nan = render("x NaN");
    assert_string_equal(nan, "x | NaN");
    free(nan);
}

static void test_errors(void **state) {
    (void)state;
    check("up{job=\"a\"} 1 2 foo", "ERR 1:17: parse error: unexpected identifier \"foo\" in series values, "
                                   "expected number or \"stale\"");
    check("up{job=\"a\"} 1 2x", "ERR 1:17: parse error: unexpected end of input in series values");
    check("up{job=\"a\"} 1 2 3x-1", "ERR 1:19: parse error: unexpected <op:-> in series values");
    check("up{job=\"a\"} 1x1.5", "ERR 1:15: parse error: invalid repetition in series values: "
                                 "strconv.ParseUint: parsing \"1.5\": invalid syntax");
    check("up{job=\"a\"} 1 {", "ERR 1:15: parse error: unexpected character in series sequence: '{'");
    check("up{job=\"a\"} 1 - 2x3", "ERR 1:16: parse error: unexpected \" \" in series values");
    check("up{job=\"a\"} 1 2 3 x3", "ERR 1:19: parse error: unexpected \"x\"");
    check("up{job=\"a\"} 1 2 sum", "ERR 1:17: parse error: unexpected <aggr:sum>");
    check("up{job=\"a\"} 1 1.2.3", "ERR 1:18: parse error: unexpected number \".3\"");
    check("up{job=\"a\"} 1e",
          "ERR 1:13: parse error: error parsing number: strconv.ParseFloat: parsing \"1e\": invalid syntax");
    check("up{job=\"a\"} 1a 2", "ERR 1:13: parse error: bad number syntax: \"1\"");
    check("up{job=\"a\"}1", "ERR 1:12: parse error: unexpected number \"1\" in series values");
    check("1 2", "ERR 1:1: parse error: unexpected number \"1\" in series values");
    check("up{job=a} 1", "ERR 1:8: parse error: unexpected identifier \"a\" in label set, expected string");
    check("up{job} 1", "ERR 1:7: parse error: unexpected \"}\" in label set, expected \"=\"");
    check("up{job=\"a\" x=\"b\"} 1",
          "ERR 1:12: parse error: unexpected identifier \"x\" in label set, expected \",\" or \"}\"");
    check("up{,} 1", "ERR 1:4: parse error: unexpected \",\" in label set, expected identifier or \"}\"");
    check("up{job=\"a\", instance=\"x\" 0+0x1440",
          "ERR 1:26: parse error: unexpected character inside braces: '0'");
    char *big = render("x 1x99999999");
    assert_true(strstr(big, "too many values in series description") != NULL);
    free(big);
}

static void test_metric(void **state) {
    (void)state;
    static const struct {
        const char *in, *want;
    } cases[] = {
        {"up", "__name__=up"},
        {"job:up:sum{job=\"a\",team=\"x\"}", "__name__=job:up:sum job=a team=x"},
        {"{b=\"2\",a=\"\"}", "a= b=2"},
        {"", ""},
        {"up{a=", "ERR 1:6: parse error: unexpected end of input inside braces"},
        {"up 1", "ERR 1:4: parse error: unexpected number \"1\""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        promql_metric_desc m;
        memset(&m, 0, sizeof m);
        base_buf msg, out;
        base_buf_init(&msg, 0);
        base_buf_init(&out, 0);
        int rc = promql_parse_metric(cases[i].in, strlen(cases[i].in), &m, &msg);
        if (rc)
            base_buf_printf(&out, "ERR %s", msg.data);
        else
            for (size_t k = 0; k < m.n; k++)
                base_buf_printf(&out, "%s%s=%s", k ? " " : "", m.names[k], m.values[k]);
        if (strcmp(out.data ? out.data : "", cases[i].want) != 0)
            fail_msg("%s: got %s, want %s", cases[i].in, out.data ? out.data : "", cases[i].want);
        promql_metric_desc_free(&m);
        base_buf_free(&msg);
        base_buf_free(&out);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_values),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_metric),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
