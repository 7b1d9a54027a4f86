/* tests/unit/agent/push.c -- the Pushgateway-compatible push endpoint
 * (src/agent/push.c).
 *
 * Requests go through agent_push_handle() as the HTTP layer would send
 * them; the collected set is rendered as text 0.0.4 and checked line by
 * line. The expected lines were taken from Prometheus Pushgateway 1.5.1
 * given the same pushes (tests/compat/pushgateway.py repeats that
 * comparison live).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <pthread.h>

#include <cmocka.h>

#include "agent/push.h"
#include "base/err.h"

static agent_push *mk(const agent_push_opts *o) {
    agent_push *p = NULL;
    char err[128] = "";
    assert_int_equal(agent_push_new(o, &p, err, sizeof err), 0);
    assert_non_null(p);
    return p;
}

/* One request; returns the status and (in *ret_body, caller frees) the
 * response text. */
static int req_ct(agent_push *p, const char *method, const char *path, const char *ct, const char *body,
                  char **ret_body) {
    base_buf out = BASE_BUF_INIT;
    int status = 0;
    assert_int_equal(agent_push_handle(p, method, path, ct, body, body ? strlen(body) : 0, &status, &out), 0);
    char *b = base_buf_steal(&out, NULL);
    if (ret_body)
        *ret_body = b ? b : strdup("");
    else
        free(b);
    return status;
}

static int req(agent_push *p, const char *method, const char *path, const char *body) {
    return req_ct(p, method, path, "text/plain; version=0.0.4; charset=utf-8", body, NULL);
}

/* Expects status and that the response contains `needle`. */
static void req_expect(agent_push *p, const char *method, const char *path, const char *body, int status,
                       const char *needle) {
    char *resp = NULL;
    int st = req_ct(p, method, path, NULL, body, &resp);
    if (st != status || (needle && !strstr(resp, needle)))
        fail_msg("%s %s: got %d \"%s\", want %d with \"%s\"", method, path, st, resp, status,
                 needle ? needle : "");
    free(resp);
}

static char *render(agent_push *p) {
    expo_mset ms;
    expo_mset_init(&ms);
    assert_int_equal(agent_push_collect(p, &ms), 0);
    base_buf out = BASE_BUF_INIT;
    expo_mset *sets[] = {&ms};
    assert_int_equal(expo_write(sets, 1, EXPO_FMT_TEXT, &out), 0);
    expo_mset_free(&ms);
    char *t = base_buf_steal(&out, NULL);
    return t ? t : strdup("");
}

static int has_line(const char *text, const char *line) {
    size_t n = strlen(line);
    for (const char *p = text; (p = strstr(p, line)); p++)
        if ((p == text || p[-1] == '\n') && p[n] == '\n') return 1;
    return 0;
}

#define assert_line(text, line)                                                                              \
    do {                                                                                                     \
        if (!has_line(text, line)) fail_msg("missing line %s in:\n%s", line, text);                          \
    } while (0)
#define assert_no_line(text, line)                                                                           \
    do {                                                                                                     \
        if (has_line(text, line)) fail_msg("unexpected line %s in:\n%s", line, text);                        \
    } while (0)

static double value_of(const char *text, const char *series) {
    size_t n = strlen(series);
    for (const char *p = text; (p = strstr(p, series)); p++)
        if ((p == text || p[-1] == '\n') && p[n] == ' ') return strtod(p + n + 1, NULL);
    fail_msg("no series %s in:\n%s", series, text);
    return 0;
}

static int count_lines_starting(const char *text, const char *prefix) {
    int n = 0;
    size_t k = strlen(prefix);
    for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
        if (!strncmp(p, prefix, k)) n++;
    return n;
}

static void test_put_basic(void **state) {
    (void)state;
    agent_push *p = mk(NULL);
    double before = (double)time(NULL) - 1;
    assert_int_equal(req(p, "PUT", "/metrics/job/train/instance/n1",
                         "# HELP loss Training loss.\n# TYPE loss gauge\nloss{a=\"1\"} 0.5\n"
                         "# TYPE steps_total counter\nsteps_total 42\nraw 7\n"),
                     200);
    char *t = render(p);
    assert_line(t, "# HELP loss Training loss.");
    assert_line(t, "# TYPE loss gauge");
    assert_line(t, "loss{a=\"1\",instance=\"n1\",job=\"train\"} 0.5");
    assert_line(t, "# TYPE steps_total counter");
    assert_line(t, "steps_total{instance=\"n1\",job=\"train\"} 42");
    assert_line(t, "# TYPE raw untyped");
    assert_line(t, "raw{instance=\"n1\",job=\"train\"} 7");
    assert_line(t, "# TYPE push_time_seconds gauge");
    assert_true(value_of(t, "push_time_seconds{instance=\"n1\",job=\"train\"}") >= before);
    assert_line(t, "push_failure_time_seconds{instance=\"n1\",job=\"train\"} 0");
    assert_line(t, "kelvin_push_groups 1");
    assert_line(t, "kelvin_push_series 3");
    assert_line(t, "kelvin_push_requests_total{method=\"put\",code=\"200\"} 1");
    free(t);
    agent_push_free(p);
}

static void test_put_replaces_post_merges(void **state) {
    (void)state;
    agent_push *p = mk(NULL);
    assert_int_equal(req(p, "PUT", "/metrics/job/j", "a 1\nb 2\n"), 200);
    assert_int_equal(req(p, "POST", "/metrics/job/j", "b 3\nc 4\n"), 200);
    char *t = render(p);
    assert_line(t, "a{instance=\"\",job=\"j\"} 1");
    assert_line(t, "b{instance=\"\",job=\"j\"} 3");
    assert_line(t, "c{instance=\"\",job=\"j\"} 4");
    free(t);
    /* POST replaces whole families: b's other series go too */
    assert_int_equal(req(p, "POST", "/metrics/job/j", "b{x=\"1\"} 5\n"), 200);
    t = render(p);
    assert_no_line(t, "b{instance=\"\",job=\"j\"} 3");
    assert_line(t, "b{instance=\"\",job=\"j\",x=\"1\"} 5");
    free(t);
    assert_int_equal(req(p, "PUT", "/metrics/job/j", "a 9\n"), 200);
    t = render(p);
    assert_line(t, "a{instance=\"\",job=\"j\"} 9");
    assert_int_equal(count_lines_starting(t, "b{"), 0);
    assert_int_equal(count_lines_starting(t, "c{"), 0);
    assert_line(t, "kelvin_push_series 1");
    free(t);
    /* an empty PUT empties the group but keeps it */
    assert_int_equal(req(p, "PUT", "/metrics/job/j", ""), 200);
    t = render(p);
    assert_int_equal(count_lines_starting(t, "a{"), 0);
    assert_line(t, "push_failure_time_seconds{instance=\"\",job=\"j\"} 0");
    free(t);
    agent_push_free(p);
}

static void test_delete(void **state) {
    (void)state;
    agent_push *p = mk(NULL);
    assert_int_equal(req(p, "PUT", "/metrics/job/a", "x 1\n"), 200);
    assert_int_equal(req(p, "PUT", "/metrics/job/a/instance/i", "x 2\n"), 200);
    assert_int_equal(req(p, "DELETE", "/metrics/job/a", NULL), 202);
    assert_int_equal(req(p, "DELETE", "/metrics/job/none", NULL), 202);
    char *t = render(p);
    assert_no_line(t, "x{instance=\"\",job=\"a\"} 1");
    assert_line(t, "x{instance=\"i\",job=\"a\"} 2");
    assert_line(t, "kelvin_push_groups 1");
    assert_int_equal(count_lines_starting(t, "push_time_seconds{"), 1);
    free(t);
    req_expect(p, "DELETE", "/metrics/job/a/b", NULL, 400, "odd number of components");
    agent_push_free(p);
}

static void test_grouping_key_paths(void **state) {
    (void)state;
    agent_push *p = mk(NULL);
    assert_int_equal(req(p, "PUT", "/metrics/job@base64/dHJhaW4vMQ/path@base64/L3Zhci90bXA=", "x 1\n"), 200);
    assert_int_equal(req(p, "PUT", "/metrics/job/j/e@base64/", "x 2\n"), 200);
    assert_int_equal(req(p, "PUT", "/metrics/job/j/e@base64/===", "x 3\n"), 200); /* the same group: e="" */
    assert_int_equal(req(p, "PUT", "/metrics/job/k/e/", "y 4\n"), 200);
    assert_int_equal(req(p, "PUT", "/metrics/job/m/", "y 5\n"), 200);
    assert_int_equal(req(p, "PUT", "/metrics/job/n/a/1/a/2", "y 6\n"), 200);   /* later wins */
    assert_int_equal(req(p, "PUT", "/metrics/job/o/job/other", "y 7\n"), 200); /* the job segment wins */
    char *t = render(p);
    assert_line(t, "x{instance=\"\",job=\"train/1\",path=\"/var/tmp\"} 1");
    assert_line(t, "x{e=\"\",instance=\"\",job=\"j\"} 3");
    assert_line(t, "y{e=\"\",instance=\"\",job=\"k\"} 4");
    assert_line(t, "y{instance=\"\",job=\"m\"} 5");
    assert_line(t, "y{a=\"2\",instance=\"\",job=\"n\"} 6");
    assert_line(t, "y{instance=\"\",job=\"o\"} 7");
    free(t);

    req_expect(p, "PUT", "/metrics/job/a/b", "x 1\n", 400, "odd number of components in label string \"/b\"");
    req_expect(p, "PUT", "/metrics/job/a/b/c/", "x 1\n", 400, "odd number of components");
    req_expect(p, "PUT", "/metrics/job/a/__b/c", "x 1\n", 400, "improper label name \"__b\"");
    req_expect(p, "PUT", "/metrics/job/a/1b/c", "x 1\n", 400, "improper label name \"1b\"");
    req_expect(p, "PUT", "/metrics/job/j/p@base64/!!", "x 1\n", 400,
               "invalid base64 encoding for label p=\"!!\"");
    req_expect(p, "PUT", "/metrics/job@base64/!!", "x 1\n", 400, "invalid base64 encoding in job name");
    req_expect(p, "PUT", "/metrics/job@base64/=", "x 1\n", 400, "job name is required");
    req_expect(p, "PUT", "/metrics/job@base64/", "x 1\n", 404, NULL);
    req_expect(p, "PUT", "/metrics/jobx/a", "x 1\n", 404, NULL);
    req_expect(p, "PUT", "/api/v1/metrics", "x 1\n", 404, NULL);
    req_expect(p, "GET", "/metrics/job/j", NULL, 405, "Method Not Allowed");
    req_expect(p, "PUT", "/metrics/job/j/v@base64/_w", "x 1\n", 400, "UTF-8"); /* 0xff */
    agent_push_free(p);
}

static void test_label_sanitizing(void **state) {
    (void)state;
    agent_push *p = mk(NULL);
    assert_int_equal(req(p, "PUT", "/metrics/job/train", "loss{job=\"x\",instance=\"y\"} 0.7\n"), 200);
    assert_int_equal(
        req(p, "PUT", "/metrics/job/train/instance/n1", "loss{instance=\"z\",b=\"2\",a=\"1\"} 1\n"), 200);
    assert_int_equal(
        req(p, "PUT", "/metrics/job/esc", "# HELP esc a \\\\ b \\n c\nesc{v=\"q\\\"x\\\\y\\nz\"} 1\n"), 200);
    char *t = render(p);
    assert_line(t, "loss{instance=\"y\",job=\"train\"} 0.7");
    assert_line(t, "loss{a=\"1\",b=\"2\",instance=\"n1\",job=\"train\"} 1");
    assert_line(t, "# HELP esc a \\\\ b \\n c");
    assert_line(t, "esc{instance=\"\",job=\"esc\",v=\"q\\\"x\\\\y\\nz\"} 1");
    free(t);
    agent_push_free(p);
}

static void test_timestamps_rejected(void **state) {
    (void)state;
    agent_push *p = mk(NULL);
    assert_int_equal(req(p, "POST", "/metrics/job/ts", "a 1\n"), 200);
    req_expect(
        p, "POST", "/metrics/job/ts", "a 2 1700000000000\n", 400,
        "pushed metrics are invalid or inconsistent with existing metrics: pushed metrics must not have "
        "timestamps");
    req_expect(p, "PUT", "/metrics/job/new", "a 2 1700000000000\n", 400, "must not have timestamps");
    char *t = render(p);
    assert_line(t, "a{instance=\"\",job=\"ts\"} 1");
    assert_true(value_of(t, "push_failure_time_seconds{instance=\"\",job=\"ts\"}") > 1e9);
    assert_true(value_of(t, "push_time_seconds{instance=\"\",job=\"ts\"}") > 1e9);
    /* a refused push of a new group creates it, never pushed */
    assert_line(t, "push_time_seconds{instance=\"\",job=\"new\"} 0");
    assert_true(value_of(t, "push_failure_time_seconds{instance=\"\",job=\"new\"}") > 1e9);
    assert_line(t, "kelvin_push_rejected_total{reason=\"timestamp\"} 2");
    free(t);
    agent_push_free(p);
}

static void test_type_consistency(void **state) {
    (void)state;
    agent_push *p = mk(NULL);
    assert_int_equal(req(p, "PUT", "/metrics/job/a", "# TYPE loss gauge\nloss 1\n"), 200);
    assert_int_equal(req(p, "PUT", "/metrics/job/b", "# HELP loss newer help\n# TYPE loss gauge\nloss 2\n"),
                     200);
    req_expect(p, "PUT", "/metrics/job/c", "# TYPE loss counter\nloss 3\n", 400, "is a counter");
    char *t = render(p);
    assert_int_equal(count_lines_starting(t, "# TYPE loss "), 1);
    assert_line(t, "# HELP loss newer help");
    assert_line(t, "loss{instance=\"\",job=\"a\"} 1");
    assert_line(t, "loss{instance=\"\",job=\"b\"} 2");
    assert_no_line(t, "loss{instance=\"\",job=\"c\"} 3");
    assert_true(value_of(t, "push_failure_time_seconds{instance=\"\",job=\"c\"}") > 1e9);
    free(t);
    /* a group may change the type of a name it alone holds */
    assert_int_equal(req(p, "PUT", "/metrics/job/a", "# TYPE solo counter\nsolo 1\n"), 200);
    assert_int_equal(req(p, "PUT", "/metrics/job/a", "# TYPE solo gauge\nsolo 1\n"), 200);
    agent_push_free(p);
}

static void test_suffix_collisions(void **state) {
    (void)state;
    agent_push *p = mk(NULL);
    assert_int_equal(
        req(p, "PUT", "/metrics/job/h1",
            "# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_bucket{le=\"+Inf\"} 2\nh_sum 3\nh_count 2\n"),
        200);
    req_expect(p, "PUT", "/metrics/job/h2", "h_count 5\n", 400,
               "collected metric named \"h_count\" collides with previously collected histogram named \"h\"");
    assert_int_equal(req(p, "PUT", "/metrics/job/g1", "# TYPE g_sum gauge\ng_sum 5\n"), 200);
    req_expect(p, "PUT", "/metrics/job/g2", "# TYPE g summary\ng{quantile=\"0.5\"} 1\n", 400,
               "collected histogram or summary named \"g\" collides with previously collected metric named "
               "\"g_sum\"");
    /* a summary's _bucket is free */
    assert_int_equal(req(p, "PUT", "/metrics/job/s1", "# TYPE s summary\ns_sum 1\ns_count 1\n"), 200);
    assert_int_equal(req(p, "PUT", "/metrics/job/s2", "s_bucket 1\n"), 200);
    /* POST: a kept family of the same group collides too */
    assert_int_equal(req(p, "PUT", "/metrics/job/k", "k_count 1\n"), 200);
    req_expect(p, "POST", "/metrics/job/k", "# TYPE k histogram\nk_bucket{le=\"1\"} 1\n", 400, "collides");
    /* ... but not one the PUT drops */
    assert_int_equal(req(p, "PUT", "/metrics/job/k", "# TYPE k histogram\nk_bucket{le=\"1\"} 1\n"), 200);
    agent_push_free(p);
}

static void test_duplicates(void **state) {
    (void)state;
    agent_push *p = mk(NULL);
    req_expect(p, "PUT", "/metrics/job/d1", "a 1\na 2\n", 400,
               "was collected before with the same name and label values");
    req_expect(p, "PUT", "/metrics/job/d2", "a{x=\"1\"} 1\na{x=\"1\"} 2\n", 400, "was collected before");
    req_expect(p, "PUT", "/metrics/job/d3", "a{x=\"1\",x=\"2\"} 1\n", 400, "");
    assert_int_equal(req(p, "PUT", "/metrics/job/dup/a/1", "dupx 1\n"), 200);
    req_expect(p, "PUT", "/metrics/job/dup", "dupx{a=\"1\"} 1\n", 400, "was collected before");
    /* the same group may push the same series again */
    assert_int_equal(req(p, "PUT", "/metrics/job/dup/a/1", "dupx 2\n"), 200);
    char *t = render(p);
    assert_line(t, "dupx{a=\"1\",instance=\"\",job=\"dup\"} 2");
    free(t);
    agent_push_free(p);
}

static void test_reserved_names(void **state) {
    (void)state;
    agent_push *p = mk(NULL);
    req_expect(p, "PUT", "/metrics/job/r", "DCGM_FI_DEV_GPU_TEMP 30\n", 400, "reserved");
    req_expect(p, "PUT", "/metrics/job/r", "node_load1 1\n", 400, "reserved");
    req_expect(p, "PUT", "/metrics/job/r", "kelvin_anything 1\n", 400, "reserved");
    /* the Pushgateway's own families are silently replaced by the real ones */
    assert_int_equal(req(p, "PUT", "/metrics/job/r", "push_time_seconds 1\nok 1\n"), 200);
    char *t = render(p);
    assert_true(value_of(t, "push_time_seconds{instance=\"\",job=\"r\"}") > 1e9);
    assert_int_equal(count_lines_starting(t, "push_time_seconds{"), 1);
    assert_line(t, "kelvin_push_rejected_total{reason=\"reserved_name\"} 3");
    free(t);
    agent_push_free(p);
}

static void test_histogram_summary(void **state) {
    (void)state;
    agent_push *p = mk(NULL);
    assert_int_equal(
        req(p, "PUT", "/metrics/job/hh",
            "# TYPE hh histogram\nhh_bucket{le=\"0.5\"} 1\nhh_bucket{le=\"+Inf\"} 3\nhh_count 2\n"
            "hh_sum 1e6\nhh_count{x=\"y\"} 1000000\n"
            "# TYPE hb histogram\nhb 5\n"
            "# TYPE s summary\ns{b=\"1\",quantile=\"0.5\"} 1\ns{quantile=\"0.9\",b=\"1\"} 2\n"
            "s_sum{b=\"1\"} 3\ns_count{b=\"1\"} 2\n"
            "# TYPE s2 summary\ns2{quantile=\"0.5\",q=\"1\"} 1\n"),
        200);
    char *t = render(p);
    assert_line(t, "hh_bucket{instance=\"\",job=\"hh\",le=\"0.5\"} 1");
    assert_line(t, "hh_bucket{instance=\"\",job=\"hh\",le=\"+Inf\"} 3");
    assert_line(t, "hh_sum{instance=\"\",job=\"hh\"} 1e+06");
    assert_line(t, "hh_count{instance=\"\",job=\"hh\"} 2");
    assert_line(t, "hh_bucket{instance=\"\",job=\"hh\",x=\"y\",le=\"+Inf\"} 1e+06");
    assert_line(t, "hh_sum{instance=\"\",job=\"hh\",x=\"y\"} 0");
    assert_line(t, "hb_bucket{instance=\"\",job=\"hh\",le=\"+Inf\"} 0");
    assert_line(t, "hb_count{instance=\"\",job=\"hh\"} 0");
    assert_line(t, "s{b=\"1\",instance=\"\",job=\"hh\",quantile=\"0.5\"} 1");
    assert_line(t, "s{b=\"1\",instance=\"\",job=\"hh\",quantile=\"0.9\"} 2");
    assert_line(t, "s_sum{b=\"1\",instance=\"\",job=\"hh\"} 3");
    assert_line(t, "s_count{b=\"1\",instance=\"\",job=\"hh\"} 2");
    assert_line(t, "s2{instance=\"\",job=\"hh\",q=\"1\",quantile=\"0.5\"} 1");
    assert_line(t, "s2_sum{instance=\"\",job=\"hh\",q=\"1\"} 0");
    free(t);
    req_expect(p, "PUT", "/metrics/job/sq/quantile/5", "# TYPE sq summary\nsq{quantile=\"0.5\"} 1\n", 400,
               "must not have an explicit \"quantile\" label");
    req_expect(p, "PUT", "/metrics/job/hq/le/5", "# TYPE hq histogram\nhq_bucket{le=\"1\"} 1\n", 400,
               "must not have an explicit \"le\" label");
    req_expect(p, "PUT", "/metrics/job/hq", "# TYPE hq histogram\nhq_bucket{le=\"x\"} 1\n", 400,
               "expected float as value for 'le' label");
    agent_push_free(p);
}

static void test_parse_errors(void **state) {
    (void)state;
    agent_push *p = mk(NULL);
    req_expect(p, "PUT", "/metrics/job/j", "garbage here\n", 400, "text format parsing error");
    req_expect(p, "PUT", "/metrics/job/j", "x 1\n# TYPE x gauge\n", 400,
               "second TYPE line for metric name \"x\", or TYPE reported after samples");
    req_expect(p, "PUT", "/metrics/job/j", "# HELP x a\n# HELP x b\nx 1\n", 400, "second HELP line");
    req_expect(p, "PUT", "/metrics/job/j", "x{__y=\"1\"} 1\n", 400, "reserved");
    /* a NUL byte in a label value would cut the served line short */
    static const char nul_body[] = "x{v=\"a\0b\"} 1\n";
    base_buf out = BASE_BUF_INIT;
    int st = 0;
    assert_int_equal(
        agent_push_handle(p, "PUT", "/metrics/job/j", NULL, nul_body, sizeof nul_body - 1, &st, &out), 0);
    assert_int_equal(st, 400);
    base_buf_free(&out);
    req_expect(p, "PUT", "/metrics/job/j/k@base64/AA", "x 1\n", 400, "NUL");
    char *t = render(p);
    assert_line(t, "kelvin_push_groups 0"); /* parse errors change nothing */
    assert_line(t, "kelvin_push_rejected_total{reason=\"parse_error\"} 5");
    free(t);
    agent_push_free(p);
}

static void test_content_types(void **state) {
    (void)state;
    agent_push *p = mk(NULL);
    char *resp = NULL;
    assert_int_equal(req_ct(p, "PUT", "/metrics/job/pb",
                            "application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; "
                            "encoding=delimited",
                            "\x05xxxxx", &resp),
                     415);
    assert_non_null(strstr(resp, "protobuf"));
    free(resp);
    assert_int_equal(req_ct(p, "PUT", "/metrics/job/om", "application/openmetrics-text; version=1.0.0",
                            "# TYPE om counter\n# HELP om Some help.\nom_total 1\nom_created 1.7e9\n"
                            "# TYPE inf info\ninf_info{v=\"1\"} 1\n# EOF\n",
                            NULL),
                     200);
    char *t = render(p);
    assert_line(t, "# HELP om_total Some help.");
    assert_line(t, "# TYPE om_total counter");
    assert_line(t, "om_total{instance=\"\",job=\"om\"} 1");
    assert_line(t, "# TYPE om_created gauge");
    assert_line(t, "# TYPE inf_info gauge");
    assert_line(t, "inf_info{instance=\"\",job=\"om\",v=\"1\"} 1");
    free(t);
    assert_int_equal(req_ct(p, "PUT", "/metrics/job/om", "application/openmetrics-text", "x 1\n", &resp),
                     400);
    free(resp);
    agent_push_free(p);
}

static void test_limits(void **state) {
    (void)state;
    agent_push_opts o;
    agent_push_opts_init(&o);
    o.max_body = 64;
    o.max_groups = 2;
    o.max_series_per_group = 3;
    o.max_series = 5;
    agent_push *p = mk(&o);
    req_expect(p, "PUT", "/metrics/job/big",
               "a_long_metric_name_to_pass_the_limit 1\nanother_long_metric_name 2\n", 413, "over the limit");
    req_expect(p, "PUT", "/metrics/job/a", "a 1\nb 1\nc 1\nd 1\n", 400, "more than 3 series");
    assert_int_equal(req(p, "PUT", "/metrics/job/a", "a 1\nb 1\nc 1\n"), 200);
    assert_int_equal(req(p, "PUT", "/metrics/job/b", "a 1\nb 1\n"), 200);
    req_expect(p, "PUT", "/metrics/job/c", "a 1\n", 400, "too many push groups");
    req_expect(p, "POST", "/metrics/job/b", "c 1\n", 400, "limit 5");
    assert_int_equal(req(p, "PUT", "/metrics/job/b", "c 1\nd 1\n"), 200); /* replacing frees room */
    char *t = render(p);
    assert_line(t, "kelvin_push_series 5");
    assert_line(t, "kelvin_push_groups 2");
    assert_line(t, "kelvin_push_rejected_total{reason=\"body_too_large\"} 1");
    assert_line(t, "kelvin_push_rejected_total{reason=\"series_limit\"} 2");
    assert_line(t, "kelvin_push_rejected_total{reason=\"group_limit\"} 1");
    assert_no_line(t, "a{instance=\"\",job=\"c\"} 1");
    free(t);
    agent_push_free(p);
}

static void test_sorting(void **state) {
    (void)state;
    agent_push *p = mk(NULL);
    assert_int_equal(
        req(p, "PUT", "/metrics/job/lbl", "lbl{b=\"2\",a=\"1\"} 1\nlbl{a=\"0\",c=\"x\"} 2\nlbl 3\n"), 200);
    assert_int_equal(req(p, "PUT", "/metrics/job/lbl/instance/i2", "lbl{b=\"2\",a=\"1\"} 4\n"), 200);
    assert_int_equal(req(p, "PUT", "/metrics/job/aaa", "zzz 1\n"), 200);
    char *t = render(p);
    const char *want[] = {"lbl{instance=\"\",job=\"lbl\"} 3\n",
                          "lbl{a=\"0\",c=\"x\",instance=\"\",job=\"lbl\"} 2\n",
                          "lbl{a=\"1\",b=\"2\",instance=\"\",job=\"lbl\"} 1\n",
                          "lbl{a=\"1\",b=\"2\",instance=\"i2\",job=\"lbl\"} 4\n",
                          "# HELP push_failure_time_seconds",
                          "# HELP push_time_seconds",
                          "# TYPE zzz untyped"};
    const char *at = t;
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        const char *q = strstr(at, want[i]);
        if (!q) fail_msg("%s not after position %td in:\n%s", want[i], at - t, t);
        at = q + 1;
    }
    free(t);
    agent_push_free(p);
}

typedef struct {
    agent_push *p;
    int id;
} thr_arg;

static void *pusher(void *arg) {
    thr_arg *a = arg;
    char path[64], body[128];
    for (int i = 0; i < 200; i++) {
        snprintf(path, sizeof path, "/metrics/job/t%d/instance/i%d", a->id, i % 5);
        snprintf(body, sizeof body, "# TYPE step gauge\nstep %d\nloss{r=\"%d\"} 0.5\n", i, a->id);
        base_buf out = BASE_BUF_INIT;
        int st = 0;
        if (agent_push_handle(a->p, i % 7 == 6 ? "DELETE" : "PUT", path, NULL, body, strlen(body), &st,
                              &out) != 0)
            abort();
        if (st != 200 && st != 202) abort();
        base_buf_free(&out);
    }
    return NULL;
}

static void test_threads(void **state) {
    (void)state;
    agent_push *p = mk(NULL);
    pthread_t th[4];
    thr_arg args[4];
    for (int i = 0; i < 4; i++) {
        args[i] = (thr_arg){p, i};
        assert_int_equal(pthread_create(&th[i], NULL, pusher, &args[i]), 0);
    }
    for (int k = 0; k < 50; k++) {
        char *t = render(p);
        free(t);
    }
    for (int i = 0; i < 4; i++) pthread_join(th[i], NULL);
    char *t = render(p);
    assert_int_equal(count_lines_starting(t, "# TYPE step "), 1);
    /* per thread, instance i0's last request (i = 195) was a DELETE */
    assert_int_equal(value_of(t, "kelvin_push_groups"), 16);
    free(t);
    agent_push_free(p);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_put_basic),
        cmocka_unit_test(test_put_replaces_post_merges),
        cmocka_unit_test(test_delete),
        cmocka_unit_test(test_grouping_key_paths),
        cmocka_unit_test(test_label_sanitizing),
        cmocka_unit_test(test_timestamps_rejected),
        cmocka_unit_test(test_type_consistency),
        cmocka_unit_test(test_suffix_collisions),
        cmocka_unit_test(test_duplicates),
        cmocka_unit_test(test_reserved_names),
        cmocka_unit_test(test_histogram_summary),
        cmocka_unit_test(test_parse_errors),
        cmocka_unit_test(test_content_types),
        cmocka_unit_test(test_limits),
        cmocka_unit_test(test_sorting),
        cmocka_unit_test(test_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
