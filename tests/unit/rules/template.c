/* tests/unit/rules/template.c -- the Go text/template engine of rule
 * templates (rules_tmpl_*) and the humanizers: parse errors with Go's
 * messages and lines, every construct, Go's value printing and fmt verbs,
 * Prometheus 2.42's functions (cases from its template/template_test.go
 * where it has them), execution errors with Go's position and context,
 * query callbacks that answer and fail, and the limits. Templates run
 * either bare (name "t") or as the rule manager runs them: with 2.42's
 * variable prefix and the name "__alert_test", so error columns count
 * the prefix. */
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
#include "labels/labels.h"
#include "rules/template.h"

#define PREFIX                                                                                               \
    "{{$labels := .Labels}}{{$externalLabels := .ExternalLabels}}{{$externalURL := .ExternalURL}}{{$value "  \
    ":= "                                                                                                    \
    ".Value}}"

static labels_set *g_labels, *g_ext;
static int g_fail_query;
static size_t g_nsamples = 3;

static int query_cb(void *ctx, const char *expr, int64_t t_ms, rules_tmpl_sample **ret, size_t *n, char *err,
                    size_t errlen) {
    (void)ctx;
    assert_int_equal(t_ms, 1435065584128);
    if (g_fail_query || strcmp(expr, "fail") == 0) {
        snprintf(err, errlen, "1:1: parse error: boom");
        return BASE_E_PARSE;
    }
    size_t cnt = strcmp(expr, "empty") == 0 ? 0 : strcmp(expr, "many") == 0 ? g_nsamples : 3;
    rules_tmpl_sample *s = calloc(cnt + 1, sizeof *s);
    assert_non_null(s);
    static const char *const inst[] = {"b", "c", "a"};
    for (size_t k = 0; k < cnt; k++) {
        char v[32];
        snprintf(v, sizeof v, "%zu", k);
        assert_int_equal(labels_from_cstrs(&s[k].ls, "__name__", "up", "instance", k < 3 ? inst[k] : v,
                                           "__value__", k == 0 ? "strv" : "", NULL),
                         0);
        s[k].v = 11 + (double)k;
    }
    *ret = s;
    *n = cnt;
    return 0;
}

static rules_tmpl_data data(void) {
    rules_tmpl_data d = {.labels = g_labels,
                         .external_labels = g_ext,
                         .external_url = "http://prom.example.com:9090/prefix",
                         .value = 1234.5678,
                         .t_ms = 1435065584128,
                         .query = query_cb};
    return d;
}

/* Runs text (with the rule prefix when pfx); returns the rc, the output
 * in *out (malloc'd) and the error in err. */
static int run_full(const char *text, int pfx, const rules_tmpl_data *d, char **out, char *err,
                    size_t errlen) {
    char *full = malloc(strlen(PREFIX) + strlen(text) + 1);
    assert_non_null(full);
    sprintf(full, "%s%s", pfx ? PREFIX : "", text);
    rules_tmpl *t = NULL;
    err[0] = 0;
    int rc = rules_tmpl_parse(pfx ? "__alert_test" : "t", full, strlen(full), &t, err, errlen);
    free(full);
    *out = NULL;
    if (rc) return rc;
    base_buf b = BASE_BUF_INIT;
    rc = rules_tmpl_exec(t, d, &b, err, errlen);
    rules_tmpl_free(t);
    *out = strdup(b.data ? b.data : "");
    base_buf_free(&b);
    return rc;
}

static void check_ok(const char *text, int pfx, const char *want) {
    char err[1024], *out;
    rules_tmpl_data d = data();
    int rc = run_full(text, pfx, &d, &out, err, sizeof err);
    if (rc != 0) fail_msg("%s: rc %d: %s", text, rc, err);
    if (strcmp(out, want) != 0) fail_msg("%s: got [%s] want [%s]", text, out, want);
    free(out);
}
#define OK(text, want)  check_ok(text, 0, want)
#define OKP(text, want) check_ok(text, 1, want)

static void check_perr(const char *text, const char *want) {
    char err[1024], *out;
    rules_tmpl_data d = data();
    int rc = run_full(text, 0, &d, &out, err, sizeof err);
    free(out);
    if (rc != BASE_E_PARSE) fail_msg("%s: rc %d (%s), want a parse error", text, rc, err);
    if (strcmp(err, want) != 0) fail_msg("%s: got [%s] want [%s]", text, err, want);
}

/* want has one %zu: the column, counted from the start of text. */
static void check_xerr(const char *text, size_t off, const char *want_fmt) {
    char err[1024], want[1024], *out;
    rules_tmpl_data d = data();
    int rc = run_full(text, 1, &d, &out, err, sizeof err);
    free(out);
    snprintf(want, sizeof want, want_fmt, strlen(PREFIX) + off);
    if (rc >= 0) fail_msg("%s: no error", text);
    if (strcmp(err, want) != 0) fail_msg("%s: got [%s] want [%s]", text, err, want);
}
#define XERR(text, off, ctx, msg)                                                                            \
    check_xerr(text, off, "template: __alert_test:1:%zu: executing \"__alert_test\" at <" ctx ">: " msg)

static int setup(void **state) {
    (void)state;
    assert_int_equal(labels_from_cstrs(&g_labels, "instance", "host1.example.com:9100", "job", "node",
                                       "severity", "critical", NULL),
                     0);
    assert_int_equal(labels_from_cstrs(&g_ext, "cluster", "c1", NULL), 0);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    labels_unref(g_labels);
    labels_unref(g_ext);
    return 0;
}

/* ---------------------------------------------------------------- */

static void test_text_and_trim(void **state) {
    (void)state;
    OK("", "");
    OK("plain text", "plain text");
    OK("a  {{- 1 -}}  b", "a1b");
    OK("a {{- 1}} b", "a1 b");
    OK("a{{/* comment */}}b", "ab");
    OK("a \n{{- /* comment */ -}}\n b", "ab");
    OK("{{-3}}", "-3");
    OK("x {{ \"{{\" }} y", "x {{ y");
    OK("{ } }} {", "{ } }} {");
    OK("line1\nline2{{\n1\n}}", "line1\nline21");
}

static void test_literals(void **state) {
    (void)state;
    OK("{{ '\\x41' }} {{ '\\u00e9' }} {{ '\\101' }} {{ '\\'' }} {{ '\xc3\xa9' }}", "65 233 65 39 233");
    OK("{{ 1 }} {{ -3 }} {{ 1.5 }} {{ 1e3 }} {{ 0x1F }} {{ 017 }} {{ 0b101 }} {{ 'a' }} {{ '\\n' }}",
       "1 -3 1.5 1000 31 15 5 97 10");
    OK("{{ true }} {{ false }}", "true false");
    OK("{{ \"a\\tb\\u00e9\\x41\\101\" }}", "a\tb\xc3\xa9"
                                           "AA");
    OK("{{ `raw\\n` }}", "raw\\n");
    OK("{{ 1.0 }} {{ 100000000.0 }} {{ 0.00001 }}", "1 1e+08 1e-05");
}

static void test_value_printing(void **state) {
    (void)state;
    OKP("{{ $value }}", "1234.5678");
    OKP("{{ $.Labels.job }} {{ $.Value }}", "node 1234.5678"); /* "$" is the data from the start */
    OK("{{ $.Labels.job }}", "node");
    OKP("{{ .Value }} {{ $labels.job }} {{ .Labels.severity }} {{ $externalLabels.cluster }} {{ $externalURL "
        "}}",
        "1234.5678 node critical c1 http://prom.example.com:9090/prefix");
    /* missingkey=zero: a missing label is the empty string */
    OKP("[{{ $labels.nope }}]", "[]");
    OKP("{{ $labels }}", "map[instance:host1.example.com:9100 job:node severity:critical]");
    OKP("{{ . }}", "{map[instance:host1.example.com:9100 job:node severity:critical] map[cluster:c1] "
                   "http://prom.example.com:9090/prefix 1234.5678}");
    rules_tmpl_data d = data();
    const double vals[] = {1e6, 123456, 1e21, 0.0001, 1e-5, 100, -0.5, NAN, INFINITY, -INFINITY};
    const char *const want[] = {"1e+06", "123456", "1e+21", "0.0001", "1e-05",
                                "100",   "-0.5",   "NaN",   "+Inf",   "-Inf"};
    for (size_t k = 0; k < sizeof vals / sizeof vals[0]; k++) {
        d.value = vals[k];
        char err[512], *out;
        assert_int_equal(run_full("{{ $value }}", 1, &d, &out, err, sizeof err), 0);
        assert_string_equal(out, want[k]);
        free(out);
    }
    /* no value */
    OKP("{{ with args 1 }}{{ .arg3 }}{{ end }}", "<no value>");
}

static void test_control(void **state) {
    (void)state;
    OKP("{{ if eq $labels.severity \"critical\" }}C{{ else if eq $labels.severity \"warning\" }}W{{ else "
        "}}O{{ end }}",
        "C");
    OKP("{{ if eq $labels.job \"x\" }}C{{ else if eq $labels.job \"node\" }}N{{ else }}O{{ end }}", "N");
    OKP("{{ if $labels.nope }}yes{{ else }}no{{ end }}", "no");
    OKP("{{ if (args).x }}yes{{ else }}no{{ end }}{{ with (args 1).x }}yes{{ else }}no{{ end }}", "nono");
    OKP("{{ if gt $value 1000.0 }}big{{ end }}", "big");
    OKP("{{ with $labels.job }}job={{ . }}{{ end }}", "job=node");
    OKP("{{ with $labels.nope }}x{{ else }}none{{ end }}", "none");
    OKP("{{ range $k, $v := $labels }}{{ $k }}={{ $v }},{{ end }}",
        "instance=host1.example.com:9100,job=node,severity=critical,");
    OKP("{{ range $labels }}{{ . }};{{ end }}", "host1.example.com:9100;node;critical;");
    OKP("{{ range $v := $externalLabels }}{{ $v }}{{ end }}", "c1");
    OKP("{{ range $k, $v := $labels }}{{ if eq $k \"job\" }}{{ break }}{{ end }}{{ $k }} {{ end }}",
        "instance ");
    OKP("{{ range $k, $v := $labels }}{{ if eq $k \"job\" }}{{ continue }}{{ end }}{{ $k }} {{ end }}",
        "instance severity ");
    OKP("{{ range query \"empty\" }}x{{ else }}empty{{ end }}", "empty");
    OKP("{{ $x := 1 }}{{ if true }}{{ $x = 2 }}{{ $y := 3 }}{{ $y }}{{ end }}{{ $x }}", "32");
    OKP("{{ $x := 1 }}{{ $x := 5 }}{{ $x }}", "5");
    OKP("{{ range $i, $s := query \"x\" }}{{ $i }}:{{ $s.Labels.instance }} {{ end }}", "0:b 1:c 2:a ");
    OKP("{{ with args 1 \"b\" }}{{ .arg0 }} {{ .arg1 }}{{ end }}", "1 b");
    OKP("{{ range $k, $v := args 1 2 3 4 5 6 7 8 9 10 11 }}{{ $k }} {{ end }}",
        "arg0 arg1 arg10 arg2 arg3 arg4 arg5 arg6 arg7 arg8 arg9 ");
    OKP("{{ (index (query \"x\") 1).Value }} {{ (query \"x\" | first).Labels.instance }}", "12 b");
    OKP("{{ $x := query \"x\" }}{{ range $x }}{{ .Value }}{{ end }}", "111213");
}

static void test_builtins(void **state) {
    (void)state;
    OK("{{ and 1 0 }} {{ and 1 2 }} {{ or 0 \"\" \"x\" }} {{ or 0 }} {{ not true }} {{ not \"\" }}",
       "0 2 x 0 false true");
    OK("{{ or 1 .Nope }}", "1"); /* short-circuit: .Nope is never evaluated */
    OKP("{{ len $labels }} {{ len \"abc\" }} {{ len (query \"x\") }}", "3 3 3");
    OKP("{{ index $labels \"job\" }} {{ index \"abc\" 1 }}", "node 98");
    OK("{{ print 1 2 \"a\" \"b\" 3 }}", "1 2ab3");
    OK("{{ println 1 \"a\" }}", "1 a\n");
    OK("{{ html \"<a href=\\\"x\\\">'&\" }}", "&lt;a href=&#34;x&#34;&gt;&#39;&amp;");
    OK("{{ js \"a'b\\\"<=>&\\\\\" }}", "a\\'b\\\"\\u003C\\u003D\\u003E\\u0026\\\\");
    OK("{{ urlquery \"a b&c/é\" }}", "a+b%26c%2F%C3%A9");
    OK("{{ eq 1 1 }} {{ eq 1 2 3 1 }} {{ ne \"a\" \"b\" }} {{ lt 1 2 }} {{ le 2 2 }} {{ gt 1.5 2.5 }} {{ ge "
       "\"b\" \"a\" }}",
       "true true true true true false true");
    OK("{{ slice \"abcdef\" 1 3 }} {{ slice \"abc\" 1 }}", "bc bc");
    OK("{{ \"abc\" | printf \"%s-%s\" \"x\" }}", "x-abc");
    OK("{{ 3 | printf \"%d\" }}", "3");
}

static void test_printf(void **state) {
    (void)state;
    OKP("{{ printf \"%.2f\" $value }}", "1234.57");
    OK("{{ printf \"%d|%5d|%-5d|%05d|%+d|%x|%X|%o|%b\" 42 42 42 42 42 255 255 8 5 }}",
       "42|   42|42   |00042|+42|ff|FF|10|101");
    OK("{{ printf \"%5s|%-5s|%.2s|%q|%x|%X\" \"ab\" \"cd\" \"xyz\" \"a\\\"b\" \"hi\" \"hi\" }}",
       "   ab|cd   |xy|\"a\\\"b\"|6869|6869");
    OK("{{ printf \"%e|%E|%g|%G|%f|%.3g|%8.3f|%-8.2f|%+.1f\" 1234.5678 1234.5678 0.1 1e-7 1.5 3.14159 "
       "3.14159 "
       "2.5 2.0 }}",
       "1.234568e+03|1.234568E+03|0.1|1E-07|1.500000|3.14|   3.142|2.50    |+2.0");
    OK("{{ printf \"%v %v %v %v\" 1 1.5 \"s\" true }}", "1 1.5 s true");
    OK("{{ printf \"%t %c %q %U\" false 65 66 67 }}", "false A 'B' U+0043");
    OK("{{ printf \"%d\" \"x\" }}", "%!d(string=x)");
    OK("{{ printf \"%s\" 1.5 }}", "%!s(float64=1.5)");
    OK("{{ printf \"%d %d\" 1 }}", "1 %!d(MISSING)");
    OK("{{ printf \"x\" 1 \"a\" }}", "x%!(EXTRA int=1, string=a)");
    OK("{{ printf \"100%%\" }}", "100%");
    OK("{{ printf \"%\xc3\xa9|%\xff|%\xc3\xa9\" 1 2 }}",
       "%!\xc3\xa9(int=1)|%!\xef\xbf\xbd(int=2)|%!\xc3\xa9(MISSING)");
    OK("{{ printf \"%f %v\" 1.0 nil }}", "1.000000 <nil>");
    OK("{{ printf \"%*d|%.*f\" 4 7 1 2.25 }}", "   7|2.2");
    OK("{{ printf \"%f\" 1 }}", "%!f(int=1)");
    OK("{{ printf \"%T %T %T\" 1 \"a\" 1.5 }}", "int string float64");
    OK("{{ printf \"%08.3f|% d|% x|%#x|%#o|%#q\" -3.14159 5 \"ab\" 255 8 \"a\" }}",
       "-003.142| 5|61 62|0xff|010|`a`");
    OK("{{ printf \"%6.2v|%.3s|%e|%g|%g|%.0f\" 3.14159 \"h\xc3\xa9llo\" 0.0 1e21 123456789.0 2.5 }}",
       "   3.1|h\xc3\xa9l|0.000000e+00|1e+21|1.23456789e+08|2");
    OK("{{ printf \"%v|%s|%d\" (args 1 \"a\") (args \"b\") (args \"c\") }}",
       "map[arg0:1 arg1:a]|map[arg0:b]|map[%!d(string=arg0):%!d(string=c)]");
    OK("{{ printf \"%v\" (toTime 0) }} {{ humanize 999999 }} {{ humanizeDuration 59.9999 }}",
       "1970-01-01 00:00:00 +0000 UTC 1000k 60s");
    OKP("{{ printf \"%v\" $labels }}", "map[instance:host1.example.com:9100 job:node severity:critical]");
    OKP("{{ printf \"%s\" (query \"x\" | first) }}",
        "&{map[__name__:up __value__:strv instance:b] %!s(float64=11)}");
}

static void test_humanize_tables(void **state) {
    (void)state;
    /* Prometheus template_test.go */
    OK("{{ range (args 0.0 1.0 1234567.0 .12) }}{{ humanize . }}:{{ end }}", "0:1:1.235M:120m:");
    OK("{{ humanize 1e30 }} {{ humanize 1e-30 }} {{ humanize -2048 }} {{ humanize \"1234\" }} {{ humanize "
       "1000 }}",
       "1e+06Y 1e-06y -2.048k 1.234k 1k");
    OK("{{ range (args 0.0 1.0 1048576.0 .12) }}{{ humanize1024 . }}:{{ end }}", "0:1:1Mi:0.12:");
    OK("{{ humanize1024 1e30 }} {{ humanize1024 -1536 }}", "8.272e+05Yi -1.5ki");
    OK("{{ range (args 0.0 1.0 60.0 3600.0 86400.0 90000.0 -183845.0 899.99) }}{{ humanizeDuration . }}:{{ "
       "end }}",
       "0s:1s:1m 0s:1h 0m 0s:1d 0h 0m 0s:1d 1h 0m 0s:-2d 3h 4m 5s:14m 59s:");
    OK("{{ range (args .1 .0001 .12345 60.1 60.5 1.2345 12.345) }}{{ humanizeDuration . }}:{{ end }}",
       "100ms:100us:123.5ms:1m 0s:1m 0s:1.234s:12.35s:");
    OK("{{ range (args 0 0.1234567 1.23456 12.3456) }}{{ humanizePercentage . }}:{{ end }}",
       "0%:12.35%:123.5%:1235%:");
    OK("{{ humanizeTimestamp 1435065584.128 }}|{{ humanizeTimestamp \"1435065584.128\" }}|{{ "
       "humanizeTimestamp 0 }}",
       "2015-06-23 13:19:44.128 +0000 UTC|2015-06-23 13:19:44.128 +0000 UTC|1970-01-01 00:00:00 +0000 UTC");
    OK("{{ humanizeTimestamp -1.5 }}", "1969-12-31 23:59:58.5 +0000 UTC");
    OK("{{ toTime 1435065584.128 }}", "2015-06-23 13:19:44.128 +0000 UTC");

    /* the C entry points */
    base_buf b = BASE_BUF_INIT;
    rules_humanize(&b, NAN);
    base_buf_putc(&b, ' ');
    rules_humanize(&b, INFINITY);
    base_buf_putc(&b, ' ');
    rules_humanize1024(&b, -INFINITY);
    base_buf_putc(&b, ' ');
    rules_humanize_duration(&b, NAN);
    base_buf_putc(&b, ' ');
    rules_humanize_duration(&b, -0.5);
    base_buf_putc(&b, ' ');
    rules_humanize_percentage(&b, 0.5);
    base_buf_putc(&b, ' ');
    rules_humanize_timestamp(&b, 2e9);
    base_buf_putc(&b, ' ');
    rules_humanize_timestamp(&b, INFINITY);
    assert_string_equal(b.data, "NaN +Inf -Inf NaN -500ms 50% 2033-05-18 03:33:20 +0000 UTC +Inf");
    base_buf_free(&b);
}

static void test_prometheus_functions(void **state) {
    (void)state;
    OK("{{ title \"aa bb CC\" }}|{{ toUpper \"aBc\" }}|{{ toLower \"aBc\" }}", "Aa Bb CC|ABC|abc");
    OK("{{ match \"a+\" \"bab\" }} {{ match \"^a+$\" \"bab\" }} {{ match \"(?i)B\" \"abc\" }}",
       "true false true");
    OK("{{ reReplaceAll \"(a)b\" \"x$1\" \"abab\" }}|{{ reReplaceAll \"a*\" \"-\" \"baaac\" }}|"
       "{{ reReplaceAll \"(?P<w>o+)\" \"<${w}>\" \"foo boo\" }}|{{ reReplaceAll \"x\" \"$$\" \"axb\" }}",
       "xaxa|-b-c-|f<oo> b<oo>|a$b");
    OK("{{ safeHtml \"<b>\" }}", "<b>");
    /* assertions see the text around each later search */
    OK("{{ reReplaceAll \"^a\" \"x\" \"aaa\" }}|{{ reReplaceAll \"^\" \"x\" \"abc\" }}|"
       "{{ reReplaceAll \"\\\\bo\" \"0\" \"oo oo\" }}|{{ reReplaceAll \"(?m)^\" \"> \" \"a\\nb\" }}|"
       "{{ reReplaceAll \"\\\\Bo\" \"0\" \"oo oo\" }}|{{ reReplaceAll \"\\\\Bé\" \"E\" \"éé é\" }}|{{ "
       "reReplaceAll \":.*\" \"\" \"host:9100\" }}",
       "xaa|xabc|0o 0o|> a\n> b|o0 o0|EE E|host");
    OK("{{ title \"hello_world foo.bar don't 1a a1b x-y\" }}", "Hello_world Foo.Bar Don'T 1a A1b X-Y");
    OK("{{ html 1 2 }} {{ len (args) }} {{ index (args 5 6) \"arg1\" }} {{ print nil }}", "1 2 0 6 <nil>");
    OK("{{ range (args \"foo.com:12345\" \"[2001:0DB8::1]:12345\" \"foo.com\" \"[2001:0DB8::1]\" \"a:b:c\") "
       "}}"
       "{{ stripPort . }}|{{ end }}",
       "foo.com|2001:0DB8::1|foo.com|[2001:0DB8::1]|a:b:c|");
    OK("{{ range (args \"foo.example.com\" \"foo.example.com:12345\" \"192.168.0.1:12345\" "
       "\"[2001:0DB8::1]:12345\" \"foo\" \"10.0.0.1\") }}{{ stripDomain . }}|{{ end }}",
       "foo|foo:12345|192.168.0.1:12345|[2001:0DB8::1]:12345|foo|10.0.0.1|");
    OK("{{ parseDuration \"1h2m10ms\" }} {{ parseDuration \"0\" }} {{ parseDuration \"1y\" }} "
       "{{ parseDuration \"1h2m10ms\" | humanizeDuration }}",
       "3720.01 0 3.1536e+07 1h 2m 0s");
    OK("{{ graphLink \"up\" }} {{ tableLink \"up{a=\\\"b\\\"}\" }}",
       "/graph?g0.expr=up&g0.tab=0 /graph?g0.expr=up%7Ba%3D%22b%22%7D&g0.tab=1");
    OK("{{ externalURL }} {{ pathPrefix }}", "http://prom.example.com:9090/prefix /prefix");
}

static void test_query(void **state) {
    (void)state;
    OKP("{{ query \"x\" | first | value }}", "11");
    OKP("{{ range query \"x\" }}{{ .Labels.instance }}={{ .Value }} {{ end }}", "b=11 c=12 a=13 ");
    OKP("{{ range sortByLabel \"instance\" (query \"x\") }}{{ label \"instance\" . }} {{ end }}", "a b c ");
    OKP("{{ with query \"x\" }}{{ . | first | strvalue }}{{ end }}", "strv");
    OKP("{{ query \"x\" | first }}", "{map[__name__:up __value__:strv instance:b] 11}");
    OKP("{{ query \"x\" }}", "[0xc000000010 0xc000000020 0xc000000030]");
    XERR("{{ query \"fail\" }}", 3, "query \"fail\"", "error calling query: 1:1: parse error: boom");
    XERR("{{ first (query \"empty\") }}", 3, "first (query \"empty\")",
         "error calling first: first() called on vector with no elements");
    g_fail_query = 1;
    XERR("x{{ range query \"up\" }}{{ end }}", 10, "query \"up\"",
         "error calling query: 1:1: parse error: boom");
    g_fail_query = 0;
    /* without a query engine */
    rules_tmpl_data d = data();
    d.query = NULL;
    char err[512], *out;
    assert_int_equal(run_full("{{ query \"x\" }}", 0, &d, &out, err, sizeof err), BASE_E_INVAL);
    free(out);
    assert_string_equal(
        err, "template: t:1:3: executing \"t\" at <query \"x\">: error calling query: no query engine");
}

static void test_parse_errors(void **state) {
    (void)state;
    check_perr("{{ .Foo", "template: t:1: unclosed action");
    check_perr("{{ if .X }}", "template: t:1: unexpected EOF");
    check_perr("{{ $x }}", "template: t:1: undefined variable \"$x\"");
    check_perr("{{ foo }}", "template: t:1: function \"foo\" not defined");
    check_perr("{{ 1x }}", "template: t:1: bad number syntax: \"1x\"");
    check_perr("{{ end }}", "template: t:1: unexpected {{end}}");
    check_perr("{{ else }}", "template: t:1: unexpected {{else}}");
    check_perr("{{ }}", "template: t:1: missing value for command");
    check_perr("{{ if }}{{ end }}", "template: t:1: missing value for if");
    check_perr("{{ range }}{{ end }}", "template: t:1: missing value for range");
    check_perr("{{ .X | 1 }}", "template: t:1: non executable command in pipeline stage 2");
    check_perr("{{ \"abc }}", "template: t:1: unterminated quoted string");
    check_perr("{{ `abc }}", "template: t:1: unterminated raw quoted string");
    check_perr("{{ ( 1 }}", "template: t:1: unclosed left paren");
    check_perr("{{ 1 ) }}", "template: t:1: unexpected \")\" in command");
    check_perr("{{ ) }}", "template: t:1: unexpected \")\" in command");
    check_perr("{{/* x */ 1 }}", "template: t:1: comment ends before closing delimiter");
    check_perr("{{/* x", "template: t:1: unclosed comment");
    check_perr("line1\n{{ if }}", "template: t:2: missing value for if");
    check_perr("{{ break }}", "template: t:1: {{break}} outside {{range}}");
    check_perr("{{ if true }}{{ $y := 2 }}{{ end }}{{ $y }}", "template: t:1: undefined variable \"$y\"");
    check_perr("{{ 99999999999999999999 }}", "template: t:1: integer overflow: \"99999999999999999999\"");
    check_perr("{{ 'ab' }}", "template: t:1: malformed character constant: 'ab'");
    check_perr("{{ '\\q' }}", "template: t:1: invalid syntax");
    check_perr("{{ '\\\"' }}", "template: t:1: invalid syntax");
    check_perr("{{ \"\\q\" }}", "template: t:1: invalid syntax");
    check_perr("{{ if 1 }}{{ else }}{{ else }}{{ end }}", "template: t:1: expected end; found {{else}}");
    check_perr("{{ a# }}", "template: t:1: bad character U+0023 '#'");
    check_perr("{{ \x01 }}", "template: t:1: unrecognized character in action: U+0001");
    check_perr("{{ \xff }}", "template: t:1: unrecognized character in action: U+FFFD '\xef\xbf\xbd'");
    check_perr("{{ $x, $y := 1 }}", "template: t:1: too many declarations in command");
    check_perr("{{ a := 1 }}", "template: t:1: function \"a\" not defined");
    check_perr("{{ \"x\".y }}", "template: t:1: unexpected . after term \"\\\"x\\\"\"");
    check_perr("{{ define \"x\" }}{{ end }}", "template: t:1: {{define}} is not supported");
    /* each error stops at the first problem and frees what it built */
    check_perr("{{ if 1 }}{{ range 2 }}{{ with 3 }}{{ $a := 1 }}{{ $b }}",
               "template: t:1: undefined variable \"$b\"");
}

static void test_exec_errors(void **state) {
    (void)state;
    XERR("{{ humanize \"one\" }}", 3, "humanize \"one\"",
         "error calling humanize: strconv.ParseFloat: parsing \"one\": invalid syntax");
    XERR("{{ .Foo }}", 3, ".Foo",
         "can't evaluate field Foo in type struct { Labels map[string]string; ExternalLabels "
         "map[string]string; "
         "ExternalURL string; Value float64 }");
    XERR("{{ $value.x }}", 9, "$value.x", "can't evaluate field x in type float64");
    XERR("{{ gt $value 1000 }}", 3, "gt $value 1000", "error calling gt: incompatible types for comparison");
    XERR("{{ lt true false }}", 3, "lt true false", "error calling lt: invalid type for comparison");
    XERR("{{ eq $labels $labels }}", 3, "eq $labels $labels",
         "error calling eq: non-comparable type map[instance:host1.example.com:9100 job:node "
         "severity:critical]: "
         "map[string]string");
    XERR("ab{{ range $value }}{{ end }}", 11, "$value", "range can't iterate over 1234.5678");
    XERR("{{ humanize 1 2 }}", 3, "humanize", "wrong number of args for humanize: want 1 got 2");
    XERR("{{ eq }}", 3, "eq", "wrong number of args for eq: want at least 1 got 0");
    XERR("{{ toUpper 1 }}", 11, "1", "expected string; found 1");
    XERR("{{ toUpper $value }}", 11, "$value", "wrong type for value; expected string; got float64");
    XERR("{{ safeHtml \"x\" | toUpper }}", 18, "toUpper",
         "wrong type for value; expected string; got template.HTML");
    XERR("{{ 1 2 }}", 3, "1", "can't give argument to non-function 1");
    XERR("{{ nil }}", 3, "nil", "nil is not a command");
    XERR("{{ $x = 1 }}", 8, "1", "undefined variable: $x");
    XERR("{{ $labels.job 1 }}", 10, "$labels.job", "job is not a method but has arguments");
    XERR("{{ reReplaceAll \"(\" \"\" \"x\" }}", 3, "reReplaceAll \"(\" \"\" \"x\"",
         "error calling reReplaceAll: regexp: Compile(`(`): error parsing regexp: missing closing ): `(`");
    XERR("{{ match \"(\" \"x\" }}", 3, "match \"(\" \"x\"",
         "error calling match: error parsing regexp: missing closing ): `(`");
    XERR("{{ index $labels 1 }}", 3, "index $labels 1",
         "error calling index: value has type int; should be string");
    XERR("{{ index (query \"x\") 5 }}", 3, "index (query \"x\") 5",
         "error calling index: index out of range: 5");
    XERR("{{ len 3 }}", 3, "len 3", "error calling len: len of type int");
    XERR("{{ parseDuration \"1x\" }}", 3, "parseDuration \"1x\"",
         "error calling parseDuration: not a valid duration string: \"1x\"");
    XERR("{{ toTime 1e300 }}", 3, "toTime 1e300",
         "error calling toTime: 1e+300 cannot be represented as a nanoseconds timestamp since it overflows "
         "int64");
    XERR("{{ humanize $labels }}", 3, "humanize $labels",
         "error calling humanize: can't convert map[string]string to float");
    XERR("{{ value nil }}", 3, "value nil",
         "error calling value: runtime error: invalid memory address or nil pointer dereference");
    XERR("{{ call 1 }}", 3, "call 1", "error calling call: non-function of type int");
    XERR("{{ 18446744073709551615 }}", 3, "18446744073709551615", "18446744073709551615 overflows int");
    /* output written before the failure stays (as Go's writer has it) */
    char err[512], *out;
    rules_tmpl_data d = data();
    assert_int_equal(run_full("abc{{ len 1 }}def", 0, &d, &out, err, sizeof err), BASE_E_INVAL);
    assert_string_equal(out, "abc");
    free(out);
    /* a second line counts lines and columns from it */
    assert_int_equal(run_full("a\nbc {{ .Nope.x }}", 0, &d, &out, err, sizeof err), BASE_E_INVAL);
    free(out);
    assert_string_equal(
        err, "template: t:2:11: executing \"t\" at <.Nope.x>: can't evaluate field Nope in type struct "
             "{ Labels map[string]string; ExternalLabels map[string]string; ExternalURL string; "
             "Value float64 }");
}

static void test_limits(void **state) {
    (void)state;
    char err[512], *out;
    rules_tmpl_data d = data();
    /* huge output: 1000^3 iterations of text */
    g_nsamples = 1000;
    int rc =
        run_full("{{ range query \"many\" }}{{ range query \"many\" }}{{ range query \"many\" }}xxxxxxxxxx"
                 "{{ end }}{{ end }}{{ end }}",
                 0, &d, &out, err, sizeof err);
    assert_int_equal(rc, BASE_E_LIMIT);
    assert_non_null(strstr(err, "limit"));
    free(out);
    /* runaway range without output */
    rc = run_full(
        "{{ range query \"many\" }}{{ range query \"many\" }}{{ range query \"many\" }}{{ end }}{{ end }}"
        "{{ end }}",
        0, &d, &out, err, sizeof err);
    assert_int_equal(rc, BASE_E_LIMIT);
    assert_non_null(strstr(err, "steps"));
    free(out);
    g_nsamples = 3;
    /* deep nesting: parentheses and blocks */
    base_buf b = BASE_BUF_INIT;
    base_buf_puts(&b, "{{ ");
    for (int k = 0; k < 150; k++) base_buf_putc(&b, '(');
    base_buf_putc(&b, '1');
    for (int k = 0; k < 150; k++) base_buf_putc(&b, ')');
    base_buf_puts(&b, " }}");
    rules_tmpl *t = NULL;
    assert_int_equal(rules_tmpl_parse("t", b.data, b.len, &t, err, sizeof err), BASE_E_PARSE);
    assert_string_equal(err, "template: t:1: nesting too deep");
    base_buf_reset(&b);
    for (int k = 0; k < 150; k++) base_buf_puts(&b, "{{ if true }}");
    for (int k = 0; k < 150; k++) base_buf_puts(&b, "{{ end }}");
    assert_int_equal(rules_tmpl_parse("t", b.data, b.len, &t, err, sizeof err), BASE_E_PARSE);
    assert_string_equal(err, "template: t:1: nesting too deep");
    /* 90 levels are fine */
    base_buf_reset(&b);
    for (int k = 0; k < 90; k++) base_buf_puts(&b, "{{ if true }}");
    base_buf_putc(&b, 'x');
    for (int k = 0; k < 90; k++) base_buf_puts(&b, "{{ end }}");
    assert_int_equal(rules_tmpl_parse("t", b.data, b.len, &t, err, sizeof err), 0);
    base_buf out2 = BASE_BUF_INIT;
    assert_int_equal(rules_tmpl_exec(t, &d, &out2, err, sizeof err), 0);
    assert_string_equal(out2.data, "x");
    base_buf_free(&out2);
    rules_tmpl_free(t);
    base_buf_free(&b);
    /* a template over the size limit */
    char *big = calloc(RULES_TMPL_MAX + 2, 1);
    assert_non_null(big);
    memset(big, 'a', RULES_TMPL_MAX + 1);
    assert_int_equal(rules_tmpl_parse("t", big, RULES_TMPL_MAX + 1, &t, err, sizeof err), BASE_E_LIMIT);
    free(big);
    /* the same parsed template runs many times with other data */
    assert_int_equal(
        rules_tmpl_parse("t", PREFIX "{{ $value }}", strlen(PREFIX "{{ $value }}"), &t, err, sizeof err), 0);
    for (int k = 0; k < 3; k++) {
        base_buf o = BASE_BUF_INIT;
        d.value = k;
        assert_int_equal(rules_tmpl_exec(t, &d, &o, err, sizeof err), 0);
        char want[8];
        snprintf(want, sizeof want, "%d", k);
        assert_string_equal(o.data, want);
        base_buf_free(&o);
    }
    rules_tmpl_free(t);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_text_and_trim),   cmocka_unit_test(test_literals),
        cmocka_unit_test(test_value_printing),  cmocka_unit_test(test_control),
        cmocka_unit_test(test_builtins),        cmocka_unit_test(test_printf),
        cmocka_unit_test(test_humanize_tables), cmocka_unit_test(test_prometheus_functions),
        cmocka_unit_test(test_query),           cmocka_unit_test(test_parse_errors),
        cmocka_unit_test(test_exec_errors),     cmocka_unit_test(test_limits),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
