/* tests/unit/scrape/append.c -- the scrape module's building blocks without
 * HTTP: target label population (PopulateLabels' rules and messages), the
 * target URL, durations, and the append path driven directly (cache reuse,
 * staleness, failures; the pins on head series through a head GC; the
 * scrape-order fast path; 2.42's counting and validation of failing
 * series), plus a micro-benchmark of parse + append over a
 * 1,000-series body (KELVIN_SCRAPE_BENCH=1 runs it long and prints the CPU
 * time per sample; otherwise it runs a few rounds as a smoke test). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../tsdb/tmpdir.h"
#include "base/err.h"
#include "base/time.h"
#include "expo/parse.h"
#include "scrape/scrape_int.h"
#include <xxhash.h>

static void job_init(cfg_scrape *s, const char *name) {
    memset(s, 0, sizeof *s);
    s->job_name = (char *)name;
    s->scrape_interval_ms = 15000;
    s->scrape_timeout_ms = 10000;
    s->metrics_path = (char *)"/metrics";
    s->scheme = (char *)"http";
    s->honor_timestamps = 1;
}

static char *fmt(const labels_set *ls) {
    base_buf b;
    base_buf_init(&b, 0);
    labels_format(ls, &b);
    size_t n;
    return base_buf_steal(&b, &n);
}

static void populate_ok(const cfg_scrape *c, const char *addr, const char *want, const char *want_url) {
    labels_set *in, *ls = NULL, *orig = NULL;
    assert_int_equal(labels_from_cstrs(&in, "__address__", addr, "__meta_x", "y", NULL), 0);
    char err[256];
    int rc = sc__populate(c, in, &ls, &orig, err, sizeof err);
    if (rc != 1) fail_msg("%s: %d %s", addr, rc, err);
    char *s = fmt(ls);
    assert_string_equal(s, want);
    free(s);
    if (want_url) {
        char *u = sc__target_url(ls, c);
        assert_string_equal(u, want_url);
        free(u);
    }
    labels_unref(in);
    labels_unref(ls);
    labels_unref(orig);
}

static void populate_err(const cfg_scrape *c, labels_set *in, const char *want) {
    labels_set *ls = NULL, *orig = NULL;
    char err[256];
    assert_true(sc__populate(c, in, &ls, &orig, err, sizeof err) < 0);
    assert_string_equal(err, want);
    labels_unref(in);
}

static void rule(relabel_rule *r, relabel_action a, const char *src, const char *regex, const char *target,
                 const char *repl) {
    relabel_rule_init(r);
    r->action = a;
    if (src) {
        r->source_labels = calloc(1, sizeof *r->source_labels);
        r->source_labels[0] = strdup(src);
        r->nsource = 1;
    }
    if (regex) {
        r->regex = strdup(regex);
        r->has_regex = 1;
    }
    if (target) r->target_label = strdup(target);
    if (repl) {
        r->replacement = strdup(repl);
        r->has_replacement = 1;
    }
    char err[256];
    int e = relabel_rule_validate(r, err, sizeof err);
    if (e) fail_msg("rule: %s", err);
}

static void test_populate(void **state) {
    (void)state;
    cfg_scrape c;
    job_init(&c, "j");
    populate_ok(&c, "h:1",
                "{__address__=\"h:1\", __metrics_path__=\"/metrics\", __scheme__=\"http\", "
                "__scrape_interval__=\"15s\", "
                "__scrape_timeout__=\"10s\", instance=\"h:1\", job=\"j\"}",
                "http://h:1/metrics");
    populate_ok(&c, "h",
                "{__address__=\"h:80\", __metrics_path__=\"/metrics\", __scheme__=\"http\", "
                "__scrape_interval__=\"15s\", "
                "__scrape_timeout__=\"10s\", instance=\"h:80\", job=\"j\"}",
                NULL);
    populate_ok(&c, "[::1]",
                "{__address__=\"[::1]:80\", __metrics_path__=\"/metrics\", __scheme__=\"http\", "
                "__scrape_interval__=\"15s\", __scrape_timeout__=\"10s\", instance=\"[::1]:80\", job=\"j\"}",
                NULL);
    /* "::1" cannot take a port: left as it is */
    populate_ok(&c, "::1",
                "{__address__=\"::1\", __metrics_path__=\"/metrics\", __scheme__=\"http\", "
                "__scrape_interval__=\"15s\", __scrape_timeout__=\"10s\", instance=\"::1\", job=\"j\"}",
                NULL);
    cfg_scrape h = c;
    h.scheme = (char *)"https";
    h.scrape_interval_ms = 90000;
    h.metrics_path = (char *)"/a b";
    char *vals[] = {(char *)"x&y", (char *)"2"};
    cfg_param prm[2] = {{(char *)"z", vals, 2}, {(char *)"a", vals + 1, 1}};
    h.params = prm;
    h.nparams = 2;
    populate_ok(&h, "h",
                "{__address__=\"h:443\", __metrics_path__=\"/a b\", __param_a=\"2\", __param_z=\"x&y\", "
                "__scheme__=\"https\", __scrape_interval__=\"1m30s\", __scrape_timeout__=\"10s\", "
                "instance=\"h:443\", job=\"j\"}",
                "https://h:443/a%20b?a=2&z=x%26y&z=2");
    cfg_scrape f = c;
    f.scheme = (char *)"ftp";
    labels_set *in;
    assert_int_equal(labels_from_cstrs(&in, "__address__", "h", NULL), 0);
    populate_err(&f, in, "invalid scheme: \"ftp\"");
    assert_int_equal(labels_from_cstrs(&in, "__address__", "h/x:1", NULL), 0);
    populate_err(&c, in, "\"h/x:1\" is not a valid hostname");
    assert_int_equal(labels_from_cstrs(&in, "a", "b", NULL), 0);
    populate_err(&c, in, "no address");
    assert_int_equal(labels_from_cstrs(&in, "__address__", "h:1", "__scrape_interval__", "1x", NULL), 0);
    populate_err(&c, in, "error parsing scrape interval: not a valid duration string: \"1x\"");
    assert_int_equal(labels_from_cstrs(&in, "__address__", "h:1", "__scrape_timeout__", "0s", NULL), 0);
    populate_err(&c, in, "scrape timeout cannot be 0");
    assert_int_equal(labels_from_cstrs(&in, "__address__", "h:1", "__scrape_timeout__", "20s", NULL), 0);
    populate_err(&c, in, "scrape timeout cannot be greater than scrape interval (\"20s\" > \"15s\")");
    /* labels set by discovery win over the defaults; __param_ from the config always wins */
    labels_set *ls, *orig;
    char err[256];
    assert_int_equal(labels_from_cstrs(&in, "__address__", "h:1", "job", "other", "instance", "i",
                                       "__metrics_path__", "/p", NULL),
                     0);
    assert_int_equal(sc__populate(&c, in, &ls, &orig, err, sizeof err), 1);
    char *s = fmt(ls);
    assert_string_equal(
        s, "{__address__=\"h:1\", __metrics_path__=\"/p\", __scheme__=\"http\", "
           "__scrape_interval__=\"15s\", __scrape_timeout__=\"10s\", instance=\"i\", job=\"other\"}");
    free(s);
    s = fmt(orig);
    assert_string_equal(
        s, "{__address__=\"h:1\", __metrics_path__=\"/p\", __scheme__=\"http\", "
           "__scrape_interval__=\"15s\", __scrape_timeout__=\"10s\", instance=\"i\", job=\"other\"}");
    free(s);
    labels_unref(in);
    labels_unref(ls);
    labels_unref(orig);
}

static void test_durations(void **state) {
    (void)state;
    char b[64];
    const struct {
        int64_t ms;
        const char *s;
    } t[] = {{0, "0s"},         {1, "1ms"},        {100, "100ms"},      {15000, "15s"},
             {60000, "1m"},     {90000, "1m30s"},  {3600000, "1h"},     {86400000, "1d"},
             {604800000, "1w"}, {691200000, "8d"}, {31536000000, "1y"}, {1500, "1s500ms"}};
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        base_fmt_duration(b, sizeof b, t[i].ms);
        assert_string_equal(b, t[i].s);
    }
}

/* ---- the append path, driven directly ----------------------------------------- */

typedef struct rig {
    char *dir;
    tsdb_db *db;
    scrape_manager m;
    sc_worker w;
    sc_pool p;
    cfg_scrape c;
    sc_loop *l;
} rig;

static void rig_open_rules(rig *r, int honor_labels, relabel_rule *rules, size_t nrules) {
    memset(r, 0, sizeof *r);
    r->dir = kelvin_tmpdir("scrape-app");
    tsdb_db_opts o;
    tsdb_db_opts_default(&o);
    o.path = r->dir;
    o.maintain_interval_ms = -1;
    char err[256];
    assert_int_equal(tsdb_db_open(&o, &r->db, NULL, err, sizeof err), 0);
    r->m.db = r->db;
    r->m.head = tsdb_db_head(r->db);
    r->m.workers = &r->w;
    r->m.nworkers = 1;
    r->w.m = &r->m;
    labels_builder_init(&r->w.b);
    base_buf_init(&r->w.scratch, 0);
    base_buf_init(&r->w.help, 0);
    assert_int_equal(tsdb_head_app_new(r->m.head, &r->w.app), 0);
    job_init(&r->c, "bench");
    r->c.honor_labels = honor_labels;
    r->c.metric_relabel = rules;
    r->c.nmetric_relabel = nrules;
    r->p.cfg = &r->c;
    r->p.pcfg = sc__pcfg_new(&r->c, err, sizeof err);
    assert_non_null(r->p.pcfg);
    labels_set *in, *tls, *orig;
    assert_int_equal(labels_from_cstrs(&in, "__address__", "node-1:9400", NULL), 0);
    assert_int_equal(sc__populate(&r->c, in, &tls, &orig, err, sizeof err), 1);
    r->l = sc__loop_new(&r->m, &r->p, tls, orig);
    assert_non_null(r->l);
    r->l->wcfg = sc__pcfg_ref(r->l->pcfg);
    labels_unref(in);
    labels_unref(tls);
    labels_unref(orig);
}

static void rig_open(rig *r, int honor_labels) {
    rig_open_rules(r, honor_labels, NULL, 0);
}

static void rig_close(rig *r) {
    sc__loop_free(r->l);
    sc__pcfg_unref(r->p.pcfg);
    tsdb_head_app_free(r->w.app);
    labels_builder_free(&r->w.b);
    base_buf_free(&r->w.scratch);
    base_buf_free(&r->w.help);
    free(r->w.voff);
    free(r->w.seq);
    assert_int_equal(tsdb_db_close(r->db), 0);
    kelvin_rm_rf(r->dir);
    free(r->dir);
}

/* The rest of a scrape after sc__append (as loop.c's finish). */
static tsdb_append_result rig_finish(rig *r, sc_result *res, const char *body, int64_t ts) {
    if (res->err) {
        tsdb_head_app_rollback(r->w.app);
        sc__append_all_stale(&r->w, r->l, ts);
    }
    sc__report(&r->w, r->l, ts, 0.001, res, !res->err, 0);
    tsdb_append_result ar;
    assert_int_equal(tsdb_head_app_commit(r->w.app, &ar), 0);
    sc__after_commit(&r->w, r->l, &ar, !res->err);
    if (!res->err && body[0]) sc__cache_collect(&r->w, r->l);
    return ar;
}

/* One scrape of body at ts, committed; returns the append result. */
static sc_result rig_scrape(rig *r, const char *body, int64_t ts) {
    sc_result res;
    sc__append(&r->w, r->l, body, strlen(body), EXPO_FMT_TEXT, ts, &res);
    rig_finish(r, &res, body, ts);
    return res;
}

static int rig_count(rig *r, const char *sel, int64_t *last_t, double *last_v) {
    labels_matcher **ms;
    size_t n;
    char err[128];
    assert_int_equal(labels_parse_selector(base_str_c(sel), &ms, &n, err, sizeof err), 0);
    tsdb_db_set *s;
    assert_int_equal(tsdb_db_select(r->db, ms, n, INT64_MIN, INT64_MAX, &s), 0);
    int k = 0;
    while (tsdb_db_set_next(s) == 1) {
        int64_t t;
        double v;
        while (tsdb_db_set_sample(s, &t, &v) == 1) {
            k++;
            if (last_t) *last_t = t;
            if (last_v) *last_v = v;
        }
    }
    tsdb_db_set_free(s);
    labels_matchers_free(ms, n);
    return k;
}

static void test_append_cache(void **state) {
    (void)state;
    rig r;
    rig_open(&r, 0);
    /* two raw forms of one series share it; the steady state builds nothing */
    sc_result a = rig_scrape(&r, "x{a=\"1\",b=\"2\"} 1\ny 2\n", 1000);
    assert_int_equal(a.err, 0);
    assert_int_equal(a.total, 2);
    assert_int_equal(a.series_added, 2);
    assert_int_equal(r.l->cache.nraw, 2);
    assert_int_equal(r.l->cache.nser, 2);
    a = rig_scrape(&r, "x{b=\"2\",a=\"1\"} 3\ny 2\n", 2000);
    assert_int_equal(a.series_added, 1);
    assert_int_equal(r.l->cache.nser, 2);
    assert_int_equal(r.l->cache.nraw, 2); /* the old raw form was collected */
    int64_t t;
    double v;
    assert_int_equal(rig_count(&r, "x", &t, &v), 2);
    assert_int_equal(t, 2000);
    assert_true(v == 3);
    /* y disappears: stale at the next scrape's time; the series is then freed */
    a = rig_scrape(&r, "x{b=\"2\",a=\"1\"} 4\n", 3000);
    assert_int_equal(rig_count(&r, "y", &t, &v), 3);
    assert_int_equal(t, 3000);
    uint64_t bits;
    memcpy(&bits, &v, 8);
    assert_true(bits == SC_STALE_NAN_BITS);
    assert_int_equal(r.l->cache.nser, 1);
    /* a parse error fails the scrape: x stale, nothing of the body stored */
    a = rig_scrape(&r, "x{b=\"2\",a=\"1\"} 5\nbad{ 1\n", 4000);
    assert_true(a.err < 0);
    assert_int_equal(rig_count(&r, "x", &t, &v), 4);
    memcpy(&bits, &v, 8);
    assert_true(bits == SC_STALE_NAN_BITS);
    assert_int_equal(rig_count(&r, "up", &t, &v), 4);
    assert_true(v == 0);
    /* and recovers */
    a = rig_scrape(&r, "x{b=\"2\",a=\"1\"} 6\n", 5000);
    assert_int_equal(a.err, 0);
    assert_int_equal(rig_count(&r, "x", &t, &v), 5);
    assert_true(v == 6);
    /* metric names are mandatory after relabeling; escapes in values */
    a = rig_scrape(&r, "e{v=\"a\\\\b\\\"c\\nd\"} 1\n", 6000);
    assert_int_equal(a.err, 0);
    labels_matcher *mt;
    char err[64];
    assert_int_equal(
        labels_matcher_new(LABELS_MATCH_EQ, base_str_c("v"), base_str_c("a\\b\"c\nd"), &mt, err, sizeof err),
        0);
    tsdb_db_set *s;
    assert_int_equal(tsdb_db_select(r.db, &mt, 1, INT64_MIN, INT64_MAX, &s), 0);
    assert_int_equal(tsdb_db_set_next(s), 1);
    tsdb_db_set_free(s);
    labels_matcher_free(mt);
    rig_close(&r);
}

/* Every cached series holds a pin on its head series once committed. */
static void assert_all_pinned(rig *r) {
    const sc_cache *c = &r->l->cache;
    tsdb_head *h = tsdb_db_head(r->db);
    for (size_t i = 0; i < c->nser; i++) {
        assert_non_null(c->ser[i].hs);
        uint64_t ref;
        assert_int_equal(tsdb_head_ref(h, c->ser[i].ls, &ref), 0);
        assert_int_equal(tsdb_head_series_ref(c->ser[i].hs), ref);
    }
}

/* Pins: taken after the commit that creates a series, released when the
 * series leaves the cache; a series garbage-collected by the head under a
 * pin is recreated, with the scrape's sample, by the same scrape. */
static void test_pin_lifecycle(void **state) {
    (void)state;
    rig r;
    rig_open(&r, 0);
    int64_t t;
    double v;
    assert_int_equal(rig_scrape(&r, "x 1\ny 2\n", 1000).err, 0);
    assert_int_equal(r.l->cache.nser, 2);
    assert_all_pinned(&r);
    for (int i = 0; i < SC_NREPORT; i++) assert_non_null(r.l->cache.report[i].hs);
    assert_int_equal(rig_scrape(&r, "x 3\ny 4\n", 2000).err, 0);
    assert_int_equal(rig_count(&r, "x", &t, &v), 2);
    /* y leaves: stale, then freed with its pin (the head's refcount and
     * ASan catch a leak or a double release at close) */
    assert_int_equal(rig_scrape(&r, "x 5\n", 3000).err, 0);
    assert_int_equal(r.l->cache.nser, 1);
    assert_int_equal(r.l->cache.nraw, 1);
    /* the head drops every series (no sample at or after 10 s) */
    uint64_t removed = 0;
    assert_int_equal(tsdb_head_gc(tsdb_db_head(r.db), 10000, &removed), 0);
    assert_true(removed >= 2);
    assert_int_equal(rig_count(&r, "x", NULL, NULL), 0);
    sc_result a;
    sc__append(&r.w, r.l, "x 6\nz 7\n", 8, EXPO_FMT_TEXT, 11000, &a);
    assert_int_equal(a.err, 0);
    tsdb_append_result ar = rig_finish(&r, &a, "x 6\nz 7\n", 11000);
    assert_true(ar.unknown_ref >= 1);
    /* recovered in the same scrape: x and z stored, pins renewed */
    assert_int_equal(rig_count(&r, "x", &t, &v), 1);
    assert_int_equal(t, 11000);
    assert_true(v == 6);
    assert_int_equal(rig_count(&r, "z", &t, &v), 1);
    assert_true(v == 7);
    assert_all_pinned(&r);
    assert_int_equal(rig_scrape(&r, "x 8\nz 9\n", 12000).err, 0);
    assert_int_equal(rig_count(&r, "x", &t, &v), 2);
    assert_true(v == 8);
    assert_int_equal(rig_count(&r, "up", &t, &v), 1); /* 11 s lost with its pin */
    assert_int_equal(t, 12000);
    assert_all_pinned(&r);
    /* a long outage: pins are dropped and looked up again */
    assert_int_equal(rig_scrape(&r, "x 10\nz 11\n", 12000 + SC_REF_TRUST_MS + 1000).err, 0);
    assert_int_equal(rig_count(&r, "x", &t, &v), 3);
    assert_true(v == 10);
    assert_all_pinned(&r);
    rig_close(&r);
}

/* Appends body and checks the order fast path before committing. */
static sc_result rig_scrape_order(rig *r, const char *body, int64_t ts, int want_in_order) {
    sc_result a;
    sc__append(&r->w, r->l, body, strlen(body), EXPO_FMT_TEXT, ts, &a);
    assert_int_equal(a.err, 0);
    int in_order = !r->l->cache.reorder && r->l->cache.nseen == r->l->cache.nraw;
    assert_int_equal(in_order, want_in_order);
    rig_finish(r, &a, body, ts);
    return a;
}

static void check_order(rig *r, const char *const *lines, size_t n) {
    const sc_cache *c = &r->l->cache;
    assert_int_equal(c->nraw, n);
    for (size_t i = 0; i < n; i++) {
        XXH128_hash_t h = XXH3_128bits(lines[i], strlen(lines[i]));
        assert_true(c->raw[i].h1 == h.low64 && c->raw[i].h2 == h.high64);
    }
}

/* The raw table follows the scrape's order: reordered, inserted, removed
 * series and one series written two ways. */
static void test_order(void **state) {
    (void)state;
    rig r;
    rig_open(&r, 0);
    int64_t t;
    double v;
    sc_result a = rig_scrape_order(&r, "a 1\nb 1\nc 1\nd 1\n", 1000, 0);
    assert_int_equal(a.series_added, 4);
    check_order(&r, (const char *const[]){"a", "b", "c", "d"}, 4);
    a = rig_scrape_order(&r, "a 2\nb 2\nc 2\nd 2\n", 2000, 1);
    assert_int_equal(a.series_added, 0);
    /* reversed */
    a = rig_scrape_order(&r, "d 3\nc 3\nb 3\na 3\n", 3000, 0);
    assert_int_equal(a.series_added, 0);
    assert_int_equal(a.added, 4);
    check_order(&r, (const char *const[]){"d", "c", "b", "a"}, 4);
    assert_int_equal(rig_count(&r, "a", &t, &v), 3);
    assert_true(v == 3);
    a = rig_scrape_order(&r, "d 4\nc 4\nb 4\na 4\n", 4000, 1);
    /* inserted in the middle */
    a = rig_scrape_order(&r, "d 5\nc 5\nn 5\nb 5\na 5\n", 5000, 0);
    assert_int_equal(a.series_added, 1);
    check_order(&r, (const char *const[]){"d", "c", "n", "b", "a"}, 5);
    a = rig_scrape_order(&r, "d 6\nc 6\nn 6\nb 6\na 6\n", 6000, 1);
    /* removed: c goes stale, the rest keeps its order */
    a = rig_scrape_order(&r, "d 7\nn 7\nb 7\na 7\n", 7000, 0);
    check_order(&r, (const char *const[]){"d", "n", "b", "a"}, 4);
    assert_int_equal(r.l->cache.nser, 4);
    assert_int_equal(rig_count(&r, "c", &t, &v), 7);
    uint64_t bits;
    memcpy(&bits, &v, 8);
    assert_true(bits == SC_STALE_NAN_BITS);
    assert_int_equal(t, 7000);
    assert_int_equal(rig_count(&r, "n", &t, &v), 3);
    assert_true(v == 7);
    /* the last line removed, then back */
    a = rig_scrape_order(&r, "d 8\nn 8\nb 8\n", 8000, 0);
    a = rig_scrape_order(&r, "d 9\nn 9\nb 9\na 9\n", 9000, 0);
    assert_int_equal(a.series_added, 1);
    assert_int_equal(rig_count(&r, "a", &t, &v), 9);
    assert_true(v == 9);
    /* one series written two ways (2.42 counts both lines as added series;
     * the first sample wins, the second is a duplicate) */
    a = rig_scrape_order(&r, "d 10\nn 10\nb 10\na 10\nx{p=\"1\",q=\"2\"} 3\nx{q=\"2\",p=\"1\"} 4\n", 10000,
                         0);
    assert_int_equal(a.series_added, 2);
    assert_int_equal(a.added, 6);
    assert_int_equal(a.duplicate, 1);
    assert_int_equal(r.l->cache.nser, 5);
    assert_int_equal(r.l->cache.nraw, 6);
    assert_int_equal(rig_count(&r, "x", &t, &v), 1);
    assert_true(v == 3);
    a = rig_scrape_order(&r, "d 11\nn 11\nb 11\na 11\nx{p=\"1\",q=\"2\"} 3\nx{q=\"2\",p=\"1\"} 4\n", 11000,
                         1);
    assert_int_equal(a.series_added, 0);
    /* one form left: the series stays, not stale */
    a = rig_scrape_order(&r, "d 12\nn 12\nb 12\na 12\nx{q=\"2\",p=\"1\"} 5\n", 12000, 0);
    assert_int_equal(r.l->cache.nser, 5);
    assert_int_equal(r.l->cache.nraw, 5);
    assert_int_equal(rig_count(&r, "x", &t, &v), 3);
    assert_true(v == 5);
    assert_all_pinned(&r);
    rig_close(&r);
}

/* 2.42's counting and validation of failing series. */
static void test_compat_counts(void **state) {
    (void)state;
    rig r;
    rig_open(&r, 0);
    /* (a) two lines of one series new to the cache: 2 added series */
    sc_result a = rig_scrape(&r, "dup_order{a=\"1\",b=\"2\"} 3\ndup_order{b=\"2\",a=\"1\"} 4\n", 1000);
    assert_int_equal(a.err, 0);
    assert_int_equal(a.series_added, 2);
    /* (b) a repeated label name fails the scrape, counted in total */
    a = rig_scrape(&r, "ok 1\ne{a=\"1\",a=\"2\"} 1\n", 2000);
    assert_true(a.err < 0);
    assert_int_equal(a.total, 2);
    assert_int_equal(a.added, 1);
    assert_non_null(strstr(a.msg, "label name \"a\" is not unique"));
    /* a parse error is not counted */
    a = rig_scrape(&r, "ok 1\nbad{ 1\n", 3000);
    assert_true(a.err < 0);
    assert_int_equal(a.total, 1);
    /* the parser's own checks (UTF-8) fail the line: not counted */
    a = rig_scrape(&r, "ok 1\ne{a=\"\xff\xfe\"} 1\n", 4000);
    assert_true(a.err < 0);
    assert_int_equal(a.total, 1);
    assert_int_equal(rig_count(&r, "ok", NULL, NULL), 0); /* nothing of failed bodies */
    rig_close(&r);
    /* (c) new series are validated as 2.42's lset.IsValid(), after
     * metric relabeling; the sample counts in total, not in added */
    relabel_rule rs[2];
    rule(&rs[0], RELABEL_REPLACE, "__name__", "bad", "__name__", "0bad");
    rule(&rs[1], RELABEL_REPLACE, "n", "(.*)", "${1}", "v");
    rig_open_rules(&r, 0, rs, 2);
    a = rig_scrape(&r, "ok 1\nbad 1\n", 1000);
    if (a.err != BASE_E_INVAL) fail_msg("%d %s", a.err, a.msg);
    assert_int_equal(a.total, 2);
    assert_int_equal(a.added, 1);
    assert_string_equal(a.msg, "invalid metric name or label names: {__name__=\"0bad\", "
                               "instance=\"node-1:9400\", job=\"bench\"}");
    /* (relabeling itself skips a target label that is not a valid name) */
    a = rig_scrape(&r, "ok 1\nlbl{n=\"x-y\"} 1\n", 2000);
    assert_int_equal(a.err, 0);
    /* cached series are not validated again (nothing to find), valid ones pass */
    a = rig_scrape(&r, "ok 1\nlbl{n=\"xy\"} 1\n", 3000);
    assert_int_equal(a.err, 0);
    assert_int_equal(a.series_added, 1);
    a = rig_scrape(&r, "ok 1\nlbl{n=\"xy\"} 1\n", 4000);
    assert_int_equal(a.err, 0);
    assert_int_equal(a.series_added, 0);
    assert_int_equal(rig_count(&r, "lbl", NULL, NULL), 4); /* x-y: 1 + stale, xy: 2 */
    rig_close(&r);
    for (int i = 0; i < 2; i++) relabel_rule_clear(&rs[i]);
}

static void test_bench(void **state) {
    (void)state;
    rig r;
    rig_open(&r, 0);
    /* a dcgm-exporter-like body: 1,000 series, 8 labels each */
    base_buf b;
    base_buf_init(&b, 0);
    for (int f = 0; f < 50; f++) {
        base_buf_printf(&b, "# HELP DCGM_FI_DEV_FIELD_%d Field %d.\n# TYPE DCGM_FI_DEV_FIELD_%d gauge\n", f,
                        f, f);
        for (int g = 0; g < 20; g++)
            base_buf_printf(&b,
                            "DCGM_FI_DEV_FIELD_%d{gpu=\"%d\",UUID=\"GPU-8f6e2b1c-3d4a-5e6f-7a8b-%012d\","
                            "device=\"nvidia%d\",modelName=\"NVIDIA H100 80GB HBM3\",Hostname=\"node-1\","
                            "DCGM_FI_DRIVER_VERSION=\"535.104.05\",container=\"\",namespace=\"\"} %d.5\n",
                            f, g, g, g, f * 100 + g);
    }
    const char *bench = getenv("KELVIN_SCRAPE_BENCH");
    int rounds = bench && bench[0] == '1' ? 2000 : 20;
    int64_t ts = 1700000000000LL;
    sc_result a = rig_scrape(&r, b.data, ts);
    assert_int_equal(a.err, 0);
    assert_int_equal(a.total, 1000);
    int64_t c0 = base_process_cpu_ns();
    for (int i = 1; i <= rounds; i++) {
        a = rig_scrape(&r, b.data, ts + i * 15000LL);
        assert_int_equal(a.series_added, 0);
    }
    int64_t c1 = base_process_cpu_ns();
    /* parse alone, for comparison */
    int64_t p0 = base_thread_cpu_ns();
    for (int i = 0; i < rounds; i++) {
        expo_parser p;
        expo_parser_init(&p, b.data, b.len, EXPO_FMT_TEXT, NULL);
        while (expo_parser_next(&p) > 0) {
        }
        expo_parser_free(&p);
    }
    int64_t p1 = base_thread_cpu_ns();
    if (bench)
        fprintf(stderr,
                "scrape append: %.1f ns process CPU/sample (parse alone %.1f ns), %d rounds x 1000 series\n",
                (double)(c1 - c0) / rounds / 1000.0, (double)(p1 - p0) / rounds / 1000.0, rounds);
    assert_int_equal(rig_count(&r, "DCGM_FI_DEV_FIELD_7{gpu=\"3\"}", NULL, NULL), rounds + 1);
    base_buf_free(&b);
    rig_close(&r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_populate),     cmocka_unit_test(test_durations),
        cmocka_unit_test(test_append_cache), cmocka_unit_test(test_pin_lifecycle),
        cmocka_unit_test(test_order),        cmocka_unit_test(test_compat_counts),
        cmocka_unit_test(test_bench),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
