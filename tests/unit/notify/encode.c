/* tests/unit/notify/encode.c -- src/notify/encode.c and targets.c: the
 * JSON bodies, Go's time formats, URLs, path joining, Go's SplitHostPort,
 * and alertmanagers from discovered groups.
 *
 * The expected v2 body is the one Prometheus 2.42.0 itself POSTed for the
 * same alert (recorded by a receiver on loopback: rule `Test<&>` with
 * annotations containing "&", "<b>", an empty value, "é" and U+2028, and
 * external labels region/cluster); only the times differ from that run
 * (Prometheus's are its evaluation times). The v1 body has 2.42's shape
 * (labels, annotations, startsAt, endsAt, generatorURL; time.Time's
 * RFC3339Nano). The URLs of active and dropped alertmanagers (no default
 * port added to the URL, the dropped one from its labels before
 * relabeling) are what 2.42's /api/v1/alertmanagers listed for the same
 * configuration.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/buf.h"
#include "base/err.h"
#include "config/config.h"
#include "labels/labels.h"
#include "notify/notify_int.h"

static const rules_kv ANN[] = {
    {"uni", "\xc3\xa9\xe2\x80\xa8x"},
    {"summary", "value 1 & <b>"},
    {"empty", ""},
};

static notify__alert *mk_alert(int64_t start, int64_t end, const char *gen, const rules_kv *ann,
                               size_t nann) {
    labels_set *ls = NULL;
    assert_int_equal(labels_from_cstrs(&ls, "alertname", "Test<&>", "cluster", "c1", "region", "own",
                                       "severity", "page", NULL),
                     0);
    rules_notice n = {.labels = ls,
                      .annotations = ann,
                      .nannotations = nann,
                      .starts_at_ms = start,
                      .ends_at_ms = end,
                      .generator_url = gen};
    notify__alert *a = notify__alert_new(&n, ls);
    labels_unref(ls);
    assert_non_null(a);
    return a;
}

static void expect_json(void (*fn)(base_buf *, notify__alert *const *, size_t), notify__alert *const *a,
                        size_t n, const char *want) {
    base_buf b;
    base_buf_init(&b, 0);
    fn(&b, a, n);
    assert_int_equal(base_buf_err(&b), 0);
    assert_string_equal(b.data, want);
    base_buf_free(&b);
}

static void test_json_v2(void **st) {
    (void)st;
    /* 2026-11-30T08:48:21.632Z and 10 s later, as in the recorded run */
    notify__alert *a = mk_alert(1796028501632LL, 1796028511632LL,
                                "http://vm:19190/graph?g0.expr=vector%281%29&g0.tab=1", ANN, 3);
    notify__alert *const v[1] = {a};
    expect_json(
        notify__json_v2, v, 1,
        "[{\"annotations\":{\"empty\":\"\",\"summary\":\"value 1 \\u0026 \\u003cb\\u003e\",\"uni\":"
        "\"\xc3\xa9\\u2028x\"},\"endsAt\":\"2026-11-30T08:48:31.632Z\",\"startsAt\":\"2026-11-30T08:48:21."
        "632Z\",\"generatorURL\":\"http://vm:19190/graph?g0.expr=vector%281%29\\u0026g0.tab=1\",\"labels\":{"
        "\"alertname\":\"Test\\u003c\\u0026\\u003e\",\"cluster\":\"c1\",\"region\":\"own\",\"severity\":"
        "\"page\"}}]");
    /* no annotations, no generator URL, whole seconds, zero end, two alerts */
    notify__alert *b = mk_alert(1700000000000LL, 0, NULL, NULL, 0);
    notify__alert *const w[2] = {b, a};
    expect_json(
        notify__json_v2, w, 2,
        "[{\"endsAt\":\"0001-01-01T00:00:00.000Z\",\"startsAt\":\"2023-11-14T22:13:20.000Z\",\"labels\":{"
        "\"alertname\":\"Test\\u003c\\u0026\\u003e\",\"cluster\":\"c1\",\"region\":\"own\",\"severity\":"
        "\"page\"}},{\"annotations\":{\"empty\":\"\",\"summary\":\"value 1 \\u0026 \\u003cb\\u003e\","
        "\"uni\":\"\xc3\xa9\\u2028x\"},\"endsAt\":\"2026-11-30T08:48:31.632Z\",\"startsAt\":\"2026-11-30T08:"
        "48:21.632Z\",\"generatorURL\":\"http://vm:19190/graph?g0.expr=vector%281%29\\u0026g0.tab=1\","
        "\"labels\":{\"alertname\":\"Test\\u003c\\u0026\\u003e\",\"cluster\":\"c1\",\"region\":\"own\","
        "\"severity\":\"page\"}}]");
    notify__alert_free(a);
    notify__alert_free(b);
}

static void test_json_v1(void **st) {
    (void)st;
    notify__alert *a =
        mk_alert(1796028501630LL, 1796028511000LL, "http://x/graph?g0.expr=up&g0.tab=1", ANN, 3);
    notify__alert *b = mk_alert(1796028501601LL, 0, "", NULL, 0);
    notify__alert *const v[2] = {a, b};
    expect_json(
        notify__json_v1, v, 2,
        "[{\"labels\":{\"alertname\":\"Test\\u003c\\u0026\\u003e\",\"cluster\":\"c1\",\"region\":\"own\","
        "\"severity\":\"page\"},\"annotations\":{\"empty\":\"\",\"summary\":\"value 1 \\u0026 "
        "\\u003cb\\u003e\",\"uni\":\"\xc3\xa9\\u2028x\"},\"startsAt\":\"2026-11-30T08:48:21.63Z\","
        "\"endsAt\":\"2026-11-30T08:48:31Z\",\"generatorURL\":\"http://x/graph?g0.expr=up\\u0026g0.tab=1\"},"
        "{\"labels\":{\"alertname\":\"Test\\u003c\\u0026\\u003e\",\"cluster\":\"c1\",\"region\":\"own\","
        "\"severity\":\"page\"},\"annotations\":{},\"startsAt\":\"2026-11-30T08:48:21.601Z\",\"endsAt\":"
        "\"0001-01-01T00:00:00Z\"}]");
    notify__alert_free(a);
    notify__alert_free(b);
}

/* Annotations: sorted by name; a repeated name keeps its last value (a
 * Go map); invalid UTF-8 becomes U+FFFD; control bytes \u00XX. */
static void test_annotations(void **st) {
    (void)st;
    static const rules_kv ann[] = {{"b", "1"}, {"a", "x\x01\n\t\"\\"}, {"b", "2"}, {"c", "\xff"}};
    notify__alert *a = mk_alert(1000, 2000, NULL, ann, 4);
    assert_int_equal(a->nann, 3);
    notify__alert *const v[1] = {a};
    expect_json(
        notify__json_v2, v, 1,
        "[{\"annotations\":{\"a\":\"x\\u0001\\n\\t\\\"\\\\\",\"b\":\"2\",\"c\":\"\\ufffd\"},\"endsAt\":"
        "\"1970-01-01T00:00:02.000Z\",\"startsAt\":\"1970-01-01T00:00:01.000Z\",\"labels\":{\"alertname\":"
        "\"Test\\u003c\\u0026\\u003e\",\"cluster\":\"c1\",\"region\":\"own\",\"severity\":\"page\"}}]");
    notify__alert_free(a);
}

static void expect_path(const char *prefix, const char *ver, const char *want) {
    base_buf b;
    base_buf_init(&b, 0);
    notify__post_path(&b, prefix, ver);
    assert_string_equal(b.data, want);
    base_buf_free(&b);
}

static void test_post_path(void **st) {
    (void)st;
    expect_path("/", "v2", "/api/v2/alerts");
    expect_path("", "v2", "/api/v2/alerts");
    expect_path(NULL, "v1", "/api/v1/alerts");
    expect_path("/pre/", "v2", "/pre/api/v2/alerts");
    expect_path("pre", "v2", "/pre/api/v2/alerts");
    expect_path("a//b/./c/../d/", "v1", "/a/b/d/api/v1/alerts");
    expect_path("/../../x", "v2", "/x/api/v2/alerts");
    expect_path("/a/..", "v2", "/api/v2/alerts");
}

static void expect_url(const char *scheme, const char *host, const char *path, const char *want) {
    base_buf b;
    base_buf_init(&b, 0);
    notify__url(&b, base_str_c(scheme), base_str_c(host), base_str_c(path));
    assert_string_equal(b.data ? b.data : "", want);
    base_buf_free(&b);
}

static void test_url(void **st) {
    (void)st;
    expect_url("http", "127.0.0.1:9093", "/api/v2/alerts", "http://127.0.0.1:9093/api/v2/alerts");
    expect_url("https", "[::1]:9093", "/p/api/v2/alerts", "https://[::1]:9093/p/api/v2/alerts");
    expect_url("http", "a b", "/x y?z%", "http://a%20b/x%20y%3Fz%25");
    expect_url("http", "", "/api/v2/alerts", "http:///api/v2/alerts");
    expect_url("http", "h", "", "http://h");
    expect_url("http", "h", "rel", "http://h/rel");
    expect_url("", "h", "/p", "//h/p");
    expect_url("", "", "a:b/c", "./a:b/c");
    expect_url("http", "h!$&'()*+,;=:<>\"", "/$&+,/:;=@!'~", "http://h!$&'()*+,;=:<>\"/$&+,/:;=@%21%27~");
}

static void test_has_port(void **st) {
    (void)st;
    static const struct {
        const char *s;
        int want;
    } c[] = {
        {"a:1", 1},  {"a", 0},    {"[::1]:80", 1}, {"[::1]", 0},  {"::1", 0},
        {"", 0},     {":80", 1},  {"a:", 1},       {"[a]b:1", 0}, {"[a]:1:2", 0},
        {"a]:1", 0}, {"a[:1", 0}, {"[[a]:1", 0},   {"[a:1", 0},   {"host:9093", 1},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        if (notify__has_port(base_str_c(c[i].s)) != c[i].want)
            fail_msg("has_port(%s) != %d", c[i].s, c[i].want);
    }
}

/* ---- alertmanagers from groups ------------------------------------------------ */

static cfg_config *load(const char *yaml) {
    cfg_config *c = NULL;
    char err[512];
    int rc = cfg_load_buf(yaml, strlen(yaml), "test.yml", NULL, &c, err, sizeof err);
    if (rc) fail_msg("config: %s", err);
    return c;
}

static void set_from(notify__set *s, const cfg_alertmanager *a) {
    memset(s, 0, sizeof *s);
    s->name = "alertmanager/0";
    s->scheme = a->scheme;
    s->path_prefix = a->path_prefix;
    s->api_version = a->api_version;
    s->timeout_ms = a->timeout_ms;
    s->relabel = a->relabel;
    s->nrelabel = a->nrelabel;
}

static labels_set *T(const char *addr) {
    labels_set *ls = NULL;
    assert_int_equal(labels_from_cstrs(&ls, "__address__", addr, NULL), 0);
    return ls;
}

typedef struct res {
    char **act, **drp;
    size_t na, nd;
} res;

static int run_group(const notify__set *s, disc_group *g, res *r, char *err, size_t errlen) {
    return notify__from_group(s, g, &r->act, &r->na, &r->drp, &r->nd, err, errlen);
}

static void res_free(res *r) {
    notify_strv_free(r->act, r->na);
    notify_strv_free(r->drp, r->nd);
    memset(r, 0, sizeof *r);
}

static void test_from_group(void **st) {
    (void)st;
    cfg_config *c = load("alerting:\n"
                         "  alertmanagers:\n"
                         "  - path_prefix: /pre/\n"
                         "    relabel_configs:\n"
                         "    - source_labels: [__address__]\n"
                         "      regex: localhost\n"
                         "      action: drop\n"
                         "    - source_labels: [dc]\n"
                         "      target_label: __scheme__\n"
                         "      regex: secure\n"
                         "      replacement: https\n"
                         "    - source_labels: [__meta_path]\n"
                         "      regex: (.+)\n"
                         "      target_label: __alerts_path__\n");
    notify__set s;
    set_from(&s, &c->alerting.ams[0]);
    labels_set *gl = NULL;
    assert_int_equal(labels_from_cstrs(&gl, "dc", "secure", NULL), 0);
    labels_set *t3 = NULL;
    assert_int_equal(labels_from_cstrs(&t3, "__address__", "am3:9093", "dc", "plain", NULL), 0);
    labels_set *t4 = NULL;
    assert_int_equal(labels_from_cstrs(&t4, "__address__", "am4", "__meta_path", "/x y", NULL), 0);
    labels_set *targets[] = {T("am1:9093"), T("localhost"), t3, t4, T("am1:9093")};
    disc_group g = {.source = "0", .labels = gl, .targets = targets, .ntargets = 5};
    res r = {0};
    char err[256] = "";
    assert_int_equal(run_group(&s, &g, &r, err, sizeof err), 0);
    assert_int_equal(r.na, 4);
    assert_string_equal(r.act[0], "https://am1:9093/pre/api/v2/alerts");
    assert_string_equal(r.act[1], "http://am3:9093/pre/api/v2/alerts");  /* the target's own dc wins */
    assert_string_equal(r.act[2], "https://am4/x%20y");                  /* no default port in the URL */
    assert_string_equal(r.act[3], "https://am1:9093/pre/api/v2/alerts"); /* dedup is the manager's */
    assert_int_equal(r.nd, 1);
    assert_string_equal(r.drp[0], "http://localhost/pre/api/v2/alerts"); /* labels before relabeling */
    res_free(&r);

    /* an address with a slash fails the whole group, nothing appended */
    labels_set *bad[] = {T("ok:1"), T("a/b")};
    disc_group g2 = {.source = "1", .labels = NULL, .targets = bad, .ntargets = 2};
    assert_int_equal(run_group(&s, &g2, &r, err, sizeof err), BASE_E_INVAL);
    assert_string_equal(err, "\"a/b:80\" is not a valid hostname");
    assert_int_equal(r.na + r.nd, 0);
    res_free(&r);
    for (size_t i = 0; i < 2; i++) labels_unref(bad[i]);

    for (size_t i = 0; i < 5; i++) labels_unref(targets[i]);
    labels_unref(gl);
    cfg_free(c);

    /* a scheme other than http/https on an address without a port */
    c = load("alerting:\n"
             "  alertmanagers:\n"
             "  - api_version: v1\n"
             "    relabel_configs:\n"
             "    - target_label: __scheme__\n"
             "      replacement: ftp\n");
    set_from(&s, &c->alerting.ams[0]);
    labels_set *t5[] = {T("am5:21"), T("am6")};
    disc_group g3 = {.source = "0", .labels = NULL, .targets = t5, .ntargets = 1};
    assert_int_equal(run_group(&s, &g3, &r, err, sizeof err), 0);
    assert_int_equal(r.na, 1);
    assert_string_equal(r.act[0], "ftp://am5:21/api/v1/alerts");
    res_free(&r);
    g3.ntargets = 2;
    assert_int_equal(run_group(&s, &g3, &r, err, sizeof err), BASE_E_INVAL);
    assert_string_equal(err, "invalid scheme: \"http\"");
    assert_int_equal(r.na, 0);
    res_free(&r);
    for (size_t i = 0; i < 2; i++) labels_unref(t5[i]);
    cfg_free(c);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_json_v2),    cmocka_unit_test(test_json_v1), cmocka_unit_test(test_annotations),
        cmocka_unit_test(test_post_path),  cmocka_unit_test(test_url),     cmocka_unit_test(test_has_port),
        cmocka_unit_test(test_from_group),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
