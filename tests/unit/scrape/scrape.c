/* tests/unit/scrape/scrape.c -- the scrape manager end to end: fixture
 * targets served by src/http on 127.0.0.1 (bodies switched between
 * scrapes), a real TSDB in a temporary directory, configurations and
 * target groups built by hand; what was stored is read back with
 * tsdb_db_select and checked exactly (labels, values, NaN bits).
 * Intervals are 100-200 ms so the suite runs in seconds; every wait is
 * bounded. */
#include <jansson.h>
#include <libdeflate.h>
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "../tsdb/tmpdir.h"
#include "base/time.h"
#include "expo/parse.h"
#include "http/http.h"
#include "scrape/scrape.h"

#define STALE_BITS UINT64_C(0x7ff0000000000002)

/* ---- fixture targets ------------------------------------------------------- */

#define NPATHS 8
typedef struct route {
    char path[64];
    char *body;
    size_t len;
    const char *ctype;
    int status;
    int sleep_ms;
    int gzip;
    int hits;
    int64_t hit_ms[256];
} route;

static pthread_mutex_t fx_mu = PTHREAD_MUTEX_INITIALIZER;
static route routes[NPATHS];
static char last_accept[512], last_ae[128];

static route *route_get(const char *path) {
    for (int i = 0; i < NPATHS; i++)
        if (strcmp(routes[i].path, path) == 0) return &routes[i];
    for (int i = 0; i < NPATHS; i++)
        if (!routes[i].path[0]) {
            snprintf(routes[i].path, sizeof routes[i].path, "%s", path);
            return &routes[i];
        }
    return NULL;
}

static void fx_set(const char *path, const char *body, const char *ctype, int status, int sleep_ms,
                   int gzip) {
    pthread_mutex_lock(&fx_mu);
    route *r = route_get(path);
    free(r->body);
    if (gzip) {
        struct libdeflate_compressor *c = libdeflate_alloc_compressor(6);
        size_t cap = libdeflate_gzip_compress_bound(c, strlen(body));
        r->body = malloc(cap);
        r->len = libdeflate_gzip_compress(c, body, strlen(body), r->body, cap);
        libdeflate_free_compressor(c);
    } else {
        r->body = strdup(body);
        r->len = strlen(body);
    }
    r->ctype = ctype ? ctype : "text/plain; version=0.0.4; charset=utf-8";
    r->status = status ? status : 200;
    r->sleep_ms = sleep_ms;
    r->gzip = gzip;
    pthread_mutex_unlock(&fx_mu);
}

static int fx_hits(const char *path) {
    pthread_mutex_lock(&fx_mu);
    int h = route_get(path)->hits;
    pthread_mutex_unlock(&fx_mu);
    return h;
}

static void fx_reset(void) {
    pthread_mutex_lock(&fx_mu);
    for (int i = 0; i < NPATHS; i++) free(routes[i].body);
    memset(routes, 0, sizeof routes);
    pthread_mutex_unlock(&fx_mu);
}

static void handler(void *ctx, const http_request *req, http_response *resp) {
    (void)ctx;
    pthread_mutex_lock(&fx_mu);
    route *r = NULL;
    for (int i = 0; i < NPATHS; i++)
        if (strcmp(routes[i].path, req->path) == 0) r = &routes[i];
    if (!r || !r->body) {
        pthread_mutex_unlock(&fx_mu);
        http_respond_text(resp, 404, "not found\n");
        return;
    }
    if (r->hits < 256) r->hit_ms[r->hits] = base_mono_ns() / 1000000;
    r->hits++;
    snprintf(last_accept, sizeof last_accept, "%s", req->accept ? req->accept : "");
    snprintf(last_ae, sizeof last_ae, "%s", req->accept_encoding ? req->accept_encoding : "");
    char *body = malloc(r->len + 1);
    memcpy(body, r->body, r->len);
    size_t len = r->len;
    const char *ct = r->ctype;
    int status = r->status, sl = r->sleep_ms, gz = r->gzip;
    pthread_mutex_unlock(&fx_mu);
    if (sl) usleep((useconds_t)sl * 1000);
    http_respond_copy(resp, status, ct, body, len);
    if (gz) resp->content_encoding = "gzip";
    free(body);
}

/* ---- harness ----------------------------------------------------------------- */

typedef struct env {
    char *dir;
    tsdb_db *db;
    http_server *srv;
    unsigned port;
    char addr[64];
    scrape_manager *m;
} env;

static env E;

static int setup(void **state) {
    (void)state;
    fx_reset();
    E.dir = kelvin_tmpdir("scrape");
    tsdb_db_opts o;
    tsdb_db_opts_default(&o);
    o.path = E.dir;
    o.maintain_interval_ms = -1;
    char err[512];
    assert_int_equal(tsdb_db_open(&o, &E.db, NULL, err, sizeof err), 0);
    http_server_opts ho = {.listen_address = "127.0.0.1:0", .max_body = 1 << 20, .threads = 6};
    assert_int_equal(http_server_start(&ho, handler, NULL, &E.srv, err, sizeof err), 0);
    E.port = http_server_port(E.srv);
    snprintf(E.addr, sizeof E.addr, "127.0.0.1:%u", E.port);
    scrape_opts so = {.db = E.db, .threads = 2, .identity = "test"};
    assert_int_equal(scrape_manager_new(&so, &E.m, err, sizeof err), 0);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    scrape_manager_free(E.m);
    http_server_stop(E.srv);
    assert_int_equal(tsdb_db_close(E.db), 0);
    kelvin_rm_rf(E.dir);
    free(E.dir);
    fx_reset();
    return 0;
}

static void job_init(cfg_scrape *s, const char *name, const char *path, int64_t iv, int64_t to) {
    memset(s, 0, sizeof *s);
    s->job_name = (char *)name;
    s->scrape_interval_ms = iv;
    s->scrape_timeout_ms = to;
    s->metrics_path = (char *)path;
    s->scheme = (char *)"http";
    s->honor_timestamps = 1;
    s->http.follow_redirects = 1;
    s->http.enable_http2 = 1;
}

static void apply(cfg_scrape *jobs, size_t n) {
    static cfg_config c;
    memset(&c, 0, sizeof c);
    c.scrapes = jobs;
    c.nscrapes = n;
    char err[256];
    assert_int_equal(scrape_manager_apply(E.m, &c, err, sizeof err), 0);
}

/* Syncs `job` with one group of targets (addresses), group labels k=v... */
static void sync_targets(const char *job, const char **addrs, size_t n, const char *gk, const char *gv) {
    disc_group g = {0};
    g.source = (char *)"0";
    labels_set *gl = labels_empty();
    if (gk) assert_int_equal(labels_from_cstrs(&gl, gk, gv, NULL), 0);
    g.labels = gl;
    labels_set *ts[8];
    for (size_t i = 0; i < n; i++)
        assert_int_equal(labels_from_cstrs(&ts[i], "__address__", addrs[i], NULL), 0);
    g.targets = ts;
    g.ntargets = n;
    const disc_group *gp = &g;
    scrape_manager_sync(E.m, job, n ? &gp : NULL, n ? 1 : 0);
    for (size_t i = 0; i < n; i++) labels_unref(ts[i]);
    labels_unref(gl);
}

static void sync_one(const char *job) {
    const char *a[] = {E.addr};
    sync_targets(job, a, 1, NULL, NULL);
}

typedef struct samp {
    int64_t t;
    double v;
} samp;

/* Samples of the series selected (asserts at most one series matches);
 * *ret_ls gets its labels rendered. */
static int fetch(const char *sel, samp *out, int max, char *ret_ls, size_t lslen) {
    labels_matcher **ms;
    size_t n;
    char err[256];
    assert_int_equal(labels_parse_selector(base_str_c(sel), &ms, &n, err, sizeof err), 0);
    tsdb_db_set *s;
    assert_int_equal(tsdb_db_select(E.db, ms, n, INT64_MIN, INT64_MAX, &s), 0);
    int k = 0, nser = 0;
    while (tsdb_db_set_next(s) == 1) {
        nser++;
        if (ret_ls) {
            base_buf b;
            base_buf_init(&b, 0);
            labels_format(tsdb_db_set_labels(s), &b);
            snprintf(ret_ls, lslen, "%s", b.data);
            base_buf_free(&b);
        }
        int64_t t;
        double v;
        while (tsdb_db_set_sample(s, &t, &v) == 1)
            if (k < max) out[k++] = (samp){t, v};
    }
    tsdb_db_set_free(s);
    labels_matchers_free(ms, n);
    if (nser > 1) fail_msg("%s: %d series", sel, nser);
    return k;
}

static int nseries(const char *sel) {
    labels_matcher **ms;
    size_t n;
    char err[256];
    assert_int_equal(labels_parse_selector(base_str_c(sel), &ms, &n, err, sizeof err), 0);
    tsdb_db_set *s;
    assert_int_equal(tsdb_db_select(E.db, ms, n, INT64_MIN, INT64_MAX, &s), 0);
    int k = 0;
    while (tsdb_db_set_next(s) == 1) k++;
    tsdb_db_set_free(s);
    labels_matchers_free(ms, n);
    return k;
}

static void wait_samples(const char *sel, int want) {
    samp s[512];
    int64_t end = base_mono_ns() + 8000000000LL;
    while (base_mono_ns() < end) {
        if (fetch(sel, s, 512, NULL, 0) >= want) return;
        usleep(10000);
    }
    fail_msg("timed out waiting for %d samples of %s", want, sel);
}

static uint64_t bits(double v) {
    uint64_t b;
    memcpy(&b, &v, sizeof b);
    return b;
}

static int is_stale(double v) {
    return bits(v) == STALE_BITS;
}

/* ---- tests ---------------------------------------------------------------------- */

static void test_basic(void **state) {
    (void)state;
    fx_set("/metrics",
           "# HELP m_total A counter.\n# TYPE m_total counter\n"
           "m_total{a=\"1\",esc=\"q\\\"x\\\\y\\nz\"} 42\n"
           "g_nan NaN\ng_inf +Inf\ng_ninf -Inf\n"
           "g_ts{e=\"\"} 7 1600000000000\n",
           NULL, 200, 0, 0);
    cfg_scrape j;
    job_init(&j, "basic", "/metrics", 100, 80);
    apply(&j, 1);
    sync_targets("basic", (const char *[]){E.addr}, 1, "grp", "g1");
    wait_samples("up{job=\"basic\"}", 2);
    samp s[64];
    char ls[512], want[512];
    int n = fetch("m_total", s, 64, ls, sizeof ls);
    assert_true(n >= 2);
    snprintf(want, sizeof want,
             "{__name__=\"m_total\", a=\"1\", esc=\"q\\\"x\\\\y\\nz\", grp=\"g1\", instance=\"%s\", "
             "job=\"basic\"}",
             E.addr);
    assert_string_equal(ls, want);
    assert_true(s[0].v == 42);
    assert_true(s[1].t - s[0].t >= 80 && s[1].t - s[0].t <= 200);
    n = fetch("g_nan", s, 64, NULL, 0);
    assert_true(n >= 1 && bits(s[0].v) == EXPO_NORMAL_NAN_BITS);
    n = fetch("g_inf", s, 64, NULL, 0);
    assert_true(n >= 1 && isinf(s[0].v) && s[0].v > 0);
    n = fetch("g_ninf", s, 64, NULL, 0);
    assert_true(n >= 1 && isinf(s[0].v) && s[0].v < 0);
    /* an explicit timestamp is kept; it is stored once; empty labels dropped */
    n = fetch("g_ts", s, 64, ls, sizeof ls);
    assert_int_equal(n, 1);
    assert_int_equal(s[0].t, 1600000000000LL);
    assert_null(strstr(ls, " e=\""));
    /* report series at the scrape's time */
    samp up[64], sc[64], post[64], added[64], dur[64];
    int nu = fetch("up{job=\"basic\"}", up, 64, ls, sizeof ls);
    snprintf(want, sizeof want, "{__name__=\"up\", grp=\"g1\", instance=\"%s\", job=\"basic\"}", E.addr);
    assert_string_equal(ls, want);
    int nsc = fetch("scrape_samples_scraped", sc, 64, NULL, 0);
    int np = fetch("scrape_samples_post_metric_relabeling", post, 64, NULL, 0);
    int na = fetch("scrape_series_added", added, 64, NULL, 0);
    int nd = fetch("scrape_duration_seconds", dur, 64, NULL, 0);
    assert_true(nu >= 2 && nsc >= 2 && np >= 2 && na >= 2 && nd >= 2);
    assert_true(up[0].v == 1 && up[1].v == 1);
    assert_true(sc[0].v == 5 && post[0].v == 5);
    assert_true(added[0].v == 5 && added[1].v == 0);
    assert_true(dur[0].v > 0 && dur[0].v < 1);
    assert_int_equal(up[0].t, sc[0].t);
    fetch("m_total", s, 64, NULL, 0);
    assert_int_equal(up[0].t, s[0].t);
    /* Prometheus's request headers */
    pthread_mutex_lock(&fx_mu);
    assert_string_equal(last_accept,
                        "application/openmetrics-text;version=1.0.0,application/openmetrics-text;"
                        "version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1");
    assert_string_equal(last_ae, "gzip");
    pthread_mutex_unlock(&fx_mu);
}

static void test_staleness(void **state) {
    (void)state;
    fx_set("/metrics", "a 1\nb 2\n", NULL, 200, 0, 0);
    cfg_scrape j;
    job_init(&j, "st", "/metrics", 100, 80);
    apply(&j, 1);
    sync_one("st");
    wait_samples("b", 2);
    fx_set("/metrics", "a 1\n", NULL, 200, 0, 0);
    samp s[256];
    int64_t end = base_mono_ns() + 5000000000LL;
    int n = 0;
    while (base_mono_ns() < end) {
        n = fetch("b", s, 256, NULL, 0);
        if (n && is_stale(s[n - 1].v)) break;
        usleep(10000);
    }
    assert_true(n > 0 && is_stale(s[n - 1].v));
    int64_t stale_t = s[n - 1].t;
    /* the marker sits at the time of the scrape that lacked it */
    samp a[256];
    int na = fetch("a", a, 256, NULL, 0);
    int found = 0;
    for (int i = 0; i < na; i++)
        if (a[i].t == stale_t) found = 1;
    assert_true(found);
    /* a failing target: up 0 and every series stale */
    fx_set("/metrics", "oops\n", NULL, 500, 0, 0);
    end = base_mono_ns() + 5000000000LL;
    while (base_mono_ns() < end) {
        na = fetch("a", a, 256, NULL, 0);
        if (na && is_stale(a[na - 1].v)) break;
        usleep(10000);
    }
    assert_true(na && is_stale(a[na - 1].v));
    samp up[256];
    int nu = fetch("up{job=\"st\"}", up, 256, NULL, 0);
    assert_true(nu > 0);
    int64_t at = a[na - 1].t;
    int up0 = 0;
    for (int i = 0; i < nu; i++)
        if (up[i].t == at) up0 = up[i].v == 0;
    assert_true(up0);
    /* the target's health is recorded right after the scrape's commit:
     * poll for it (bounded) rather than race the worker */
    base_buf b;
    base_buf_init(&b, 0);
    end = base_mono_ns() + 5000000000LL;
    for (;;) {
        base_buf_reset(&b);
        assert_int_equal(scrape_manager_targets_json(E.m, NULL, &b), 0);
        if ((strstr(b.data, "server returned HTTP status 500 Internal Server Error") &&
             strstr(b.data, "\"health\":\"down\"")) ||
            base_mono_ns() >= end)
            break;
        usleep(10000);
    }
    assert_non_null(strstr(b.data, "server returned HTTP status 500 Internal Server Error"));
    assert_non_null(strstr(b.data, "\"health\":\"down\""));
    base_buf_free(&b);
    /* recovery: samples again, no second stale marker */
    fx_set("/metrics", "a 3\n", NULL, 200, 0, 0);
    end = base_mono_ns() + 5000000000LL;
    while (base_mono_ns() < end) {
        na = fetch("a", a, 256, NULL, 0);
        if (na && a[na - 1].v == 3) break;
        usleep(10000);
    }
    assert_true(a[na - 1].v == 3);
}

static void test_honor_labels(void **state) {
    (void)state;
    fx_set("/h1", "m{job=\"inner\",exported_job=\"e\",instance=\"\",x=\"1\"} 1\n", NULL, 200, 0, 0);
    cfg_scrape j[2];
    job_init(&j[0], "off", "/h1", 100, 80);
    job_init(&j[1], "on", "/h1", 100, 80);
    j[1].honor_labels = 1;
    apply(j, 2);
    sync_one("off");
    sync_one("on");
    wait_samples("up{job=\"off\"}", 1);
    samp s[64];
    char ls[512], want[512];
    int64_t end = base_mono_ns() + 5000000000LL;
    while (base_mono_ns() < end && nseries("m") < 2) usleep(10000);
    assert_true(fetch("m{job=\"off\"}", s, 64, ls, sizeof ls) >= 1);
    /* job conflicts: exported_job is taken by the body, so exported_exported_job */
    snprintf(
        want, sizeof want,
        "{__name__=\"m\", exported_exported_job=\"inner\", exported_job=\"e\", instance=\"%s\", job=\"off\", "
        "x=\"1\"}",
        E.addr);
    assert_string_equal(ls, want);
    assert_true(fetch("m{job=\"inner\"}", s, 64, ls, sizeof ls) >= 1);
    /* honored: the scraped job wins; the exposed (empty) instance wins too and is dropped */
    snprintf(want, sizeof want, "{__name__=\"m\", exported_job=\"e\", job=\"inner\", x=\"1\"}");
    assert_string_equal(ls, want);
}

static void test_honor_timestamps(void **state) {
    (void)state;
    fx_set("/ts", "t_a 1 1600000000000\n", NULL, 200, 0, 0);
    cfg_scrape j;
    job_init(&j, "nots", "/ts", 100, 80);
    j.honor_timestamps = 0;
    apply(&j, 1);
    sync_one("nots");
    wait_samples("up{job=\"nots\"}", 2);
    samp s[64], up[64];
    int n = fetch("t_a", s, 64, NULL, 0);
    int nu = fetch("up{job=\"nots\"}", up, 64, NULL, 0);
    assert_true(n >= 2 && nu >= 2);
    assert_int_equal(s[0].t, up[0].t);
    assert_true(s[0].t > 1700000000000LL);
}

static void test_openmetrics_gzip(void **state) {
    (void)state;
    fx_set("/om",
           "# TYPE c_seconds counter\n# HELP c_seconds Help \\\"q\\\".\n# UNIT c_seconds seconds\n"
           "c_seconds_total{a=\"1\"} 5 # {trace_id=\"abc\"} 1.0 1600000000.5\n"
           "c_seconds_created{a=\"1\"} 1600000000\n# EOF\n",
           "application/openmetrics-text; version=1.0.0; charset=utf-8", 200, 0, 1);
    fx_set("/bad", "# TYPE x gauge\nx 1\n# TYPE y gauge\ny 2\n",
           "application/openmetrics-text; version=1.0.0", 200, 0, 0);
    cfg_scrape j[2];
    job_init(&j[0], "om", "/om", 100, 80);
    job_init(&j[1], "bad", "/bad", 100, 80);
    apply(j, 2);
    sync_one("om");
    sync_one("bad");
    wait_samples("c_seconds_total", 2);
    wait_samples("up{job=\"bad\"}", 1);
    samp s[64];
    assert_true(fetch("c_seconds_total", s, 64, NULL, 0) >= 2);
    assert_true(s[0].v == 5);
    assert_true(fetch("c_seconds_created", s, 64, NULL, 0) >= 1);
    assert_true(fetch("up{job=\"bad\"}", s, 64, NULL, 0) >= 1);
    assert_true(s[0].v == 0);
    base_buf b;
    base_buf_init(&b, 0);
    assert_int_equal(scrape_manager_targets_json(E.m, "active", &b), 0);
    assert_non_null(strstr(b.data, "data does not end with # EOF"));
    base_buf_free(&b);
    /* metadata: per target, and per metric */
    base_buf_init(&b, 0);
    char err[256];
    labels_matcher *om, *bad, *nope;
    assert_int_equal(
        labels_matcher_new(LABELS_MATCH_EQ, base_str_c("job"), base_str_c("om"), &om, err, sizeof err), 0);
    assert_int_equal(
        labels_matcher_new(LABELS_MATCH_EQ, base_str_c("job"), base_str_c("bad"), &bad, err, sizeof err), 0);
    assert_int_equal(
        labels_matcher_new(LABELS_MATCH_EQ, base_str_c("nope"), base_str_c(""), &nope, err, sizeof err), 0);
    const base_str all = {0};
    assert_int_equal(scrape_manager_metadata_json(E.m, &om, 1, all, -1, &b), 0);
    json_error_t je;
    json_t *a = json_loads(b.data, 0, &je);
    assert_non_null(a);
    assert_int_equal(json_array_size(a), 1);
    json_t *e0 = json_array_get(a, 0);
    assert_string_equal(json_string_value(json_object_get(e0, "metric")), "c_seconds");
    assert_string_equal(json_string_value(json_object_get(e0, "type")), "counter");
    assert_string_equal(json_string_value(json_object_get(e0, "help")), "Help \"q\".");
    assert_string_equal(json_string_value(json_object_get(e0, "unit")), "seconds");
    assert_string_equal(json_string_value(json_object_get(json_object_get(e0, "target"), "job")), "om");
    json_decref(a);
    base_buf_reset(&b);
    assert_int_equal(scrape_manager_metadata_json(E.m, &om, 1, base_str_c("c_seconds"), -1, &b), 0);
    a = json_loads(b.data, 0, &je);
    assert_int_equal(json_array_size(a), 1);
    assert_null(json_object_get(json_array_get(a, 0), "metric"));
    json_decref(a);
    /* metric is compared whole: a NUL byte and what follows count (2.42) */
    base_buf_reset(&b);
    assert_int_equal(scrape_manager_metadata_json(E.m, &om, 1, (base_str){"c_seconds\0x", 11}, -1, &b), 0);
    assert_string_equal(b.data, "[]");
    /* no matchers: every target; a missing label matches as "" */
    base_buf_reset(&b);
    assert_int_equal(scrape_manager_metadata_json(E.m, NULL, 0, all, -1, &b), 0);
    a = json_loads(b.data, 0, &je);
    assert_int_equal(json_array_size(a), 3);
    json_decref(a);
    base_buf_reset(&b);
    assert_int_equal(scrape_manager_metadata_json(E.m, &nope, 1, all, -1, &b), 0);
    a = json_loads(b.data, 0, &je);
    assert_int_equal(json_array_size(a), 3);
    json_decref(a);
    /* limit as 2.42: checked before each target (a target's whole list
     * goes in), 0 gives nothing */
    base_buf_reset(&b);
    assert_int_equal(scrape_manager_metadata_json(E.m, &bad, 1, all, 1, &b), 0);
    a = json_loads(b.data, 0, &je);
    assert_int_equal(json_array_size(a), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(a, 0), "metric")), "x");
    assert_string_equal(json_string_value(json_object_get(json_array_get(a, 1), "metric")), "y");
    json_decref(a);
    base_buf_reset(&b);
    assert_int_equal(scrape_manager_metadata_json(E.m, NULL, 0, all, 0, &b), 0);
    assert_string_equal(b.data, "[]");
    labels_matcher_free(om);
    labels_matcher_free(bad);
    labels_matcher_free(nope);
    base_buf_reset(&b);
    assert_int_equal(scrape_manager_metric_metadata_json(E.m, all, 0, &b), 0);
    assert_string_equal(b.data, "{}");
    base_buf_reset(&b);
    assert_int_equal(scrape_manager_metric_metadata_json(E.m, all, 1, &b), 0);
    a = json_loads(b.data, 0, &je);
    assert_int_equal(json_object_size(a), 1);
    assert_non_null(json_object_get(a, "c_seconds"));
    json_decref(a);
    base_buf_reset(&b);
    assert_int_equal(scrape_manager_metric_metadata_json(E.m, (base_str){"x\0", 2}, -1, &b), 0);
    assert_string_equal(b.data, "{}");
    base_buf_reset(&b);
    assert_int_equal(scrape_manager_metric_metadata_json(E.m, all, -1, &b), 0);
    a = json_loads(b.data, 0, &je);
    assert_non_null(a);
    assert_int_equal(json_object_size(a), 3);
    json_t *c = json_object_get(a, "c_seconds");
    assert_int_equal(json_array_size(c), 1);
    assert_string_equal(json_string_value(json_object_get(json_array_get(c, 0), "type")), "counter");
    json_t *x = json_object_get(a, "x");
    assert_string_equal(json_string_value(json_object_get(json_array_get(x, 0), "type")), "gauge");
    json_decref(a);
    base_buf_free(&b);
}

static void test_timeout(void **state) {
    (void)state;
    fx_set("/fast", "f 1\n", NULL, 200, 0, 0);
    cfg_scrape j;
    job_init(&j, "to", "/fast", 200, 100);
    apply(&j, 1);
    sync_one("to");
    wait_samples("f", 1);
    fx_set("/fast", "f 1\n", NULL, 200, 300, 0);
    samp s[128];
    int64_t end = base_mono_ns() + 6000000000LL;
    int n = 0;
    while (base_mono_ns() < end) {
        n = fetch("f", s, 128, NULL, 0);
        if (n && is_stale(s[n - 1].v)) break;
        usleep(10000);
    }
    assert_true(n && is_stale(s[n - 1].v));
    wait_samples("up{job=\"to\"}", 2);
    base_buf b;
    base_buf_init(&b, 0);
    int64_t end2 = base_mono_ns() + 3000000000LL;
    while (base_mono_ns() < end2) {
        base_buf_reset(&b);
        scrape_manager_targets_json(E.m, NULL, &b);
        if (strstr(b.data, "context deadline exceeded")) break;
        usleep(20000);
    }
    assert_non_null(strstr(b.data, "context deadline exceeded"));
    base_buf_free(&b);
    fx_set("/fast", "f 1\n", NULL, 200, 0, 0); /* let the server stop quickly */
}

static void test_limits(void **state) {
    (void)state;
    fx_set("/lim", "l_a 1\nl_b 2\nl_c 3\n", NULL, 200, 0, 0);
    fx_set("/lab", "k{a=\"1\",b=\"2\"} 1\n", NULL, 200, 0, 0);
    fx_set("/val", "v{a=\"0123456789\"} 1\n", NULL, 200, 0, 0);
    cfg_scrape j[3];
    job_init(&j[0], "sl", "/lim", 100, 80);
    j[0].sample_limit = 2;
    job_init(&j[1], "ll", "/lab", 100, 80);
    j[1].label_limit = 4; /* __name__ a b instance job = 5 */
    job_init(&j[2], "vl", "/val", 100, 80);
    j[2].label_value_length_limit = 5;
    apply(j, 3);
    sync_one("sl");
    sync_one("ll");
    sync_one("vl");
    wait_samples("up{job=\"sl\"}", 2);
    wait_samples("up{job=\"ll\"}", 2);
    wait_samples("up{job=\"vl\"}", 2);
    samp s[64];
    assert_int_equal(nseries("{__name__=~\"l_.\"}"), 0);
    assert_int_equal(nseries("k"), 0);
    assert_int_equal(nseries("v"), 0);
    assert_true(fetch("up{job=\"sl\"}", s, 64, NULL, 0) >= 1);
    assert_true(s[0].v == 0);
    assert_true(fetch("scrape_samples_scraped{job=\"sl\"}", s, 64, NULL, 0) >= 1);
    assert_true(s[0].v == 3);
    assert_true(fetch("scrape_samples_post_metric_relabeling{job=\"sl\"}", s, 64, NULL, 0) >= 1);
    assert_true(s[0].v == 3);
    assert_true(fetch("up{job=\"ll\"}", s, 64, NULL, 0) >= 1);
    assert_true(s[0].v == 0);
    base_buf b;
    base_buf_init(&b, 0);
    assert_int_equal(scrape_manager_targets_json(E.m, NULL, &b), 0);
    assert_non_null(strstr(b.data, "\"lastError\":\"sample limit exceeded\""));
    assert_non_null(strstr(b.data, "label_limit exceeded (metric: k, number of labels: 5, limit: 4)"));
    assert_non_null(strstr(b.data, "label_value_length_limit exceeded (metric: v, label name: a, value: "
                                   "\\\"0123456789\\\", length: 10, limit: 5)"));
    base_buf_free(&b);
    expo_mset ms;
    expo_mset_init(&ms);
    scrape_manager_metrics(E.m, &ms);
    expo_mset *sets[] = {&ms};
    base_buf_init(&b, 0);
    assert_int_equal(expo_write(sets, 1, EXPO_FMT_TEXT, &b), 0);
    assert_non_null(strstr(b.data, "kelvin_scrape_targets{job=\"sl\"} 1"));
    assert_non_null(strstr(b.data, "kelvin_scrape_failures_total{reason=\"sample_limit\"}"));
    assert_null(strstr(b.data, "kelvin_scrape_failures_total{reason=\"sample_limit\"} 0"));
    base_buf_free(&b);
    expo_mset_free(&ms);
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

static void test_metric_relabel_and_dups(void **state) {
    (void)state;
    fx_set("/mr", "keep_me{a=\"x\"} 1\ndrop_me 2\nkeep_me{a=\"x\"} 1\ndup 1\ndup 2\n", NULL, 200, 0, 0);
    cfg_scrape j;
    job_init(&j, "mr", "/mr", 100, 80);
    relabel_rule rs[2];
    rule(&rs[0], RELABEL_DROP, "__name__", "drop_me", NULL, NULL);
    rule(&rs[1], RELABEL_REPLACE, "a", "(.*)", "b", "v_$1");
    j.metric_relabel = rs;
    j.nmetric_relabel = 2;
    apply(&j, 1);
    sync_one("mr");
    wait_samples("up{job=\"mr\"}", 3);
    samp s[64];
    char ls[512], want[512];
    assert_int_equal(nseries("drop_me"), 0);
    int n = fetch("keep_me", s, 64, ls, sizeof ls);
    assert_true(n >= 3);
    snprintf(want, sizeof want, "{__name__=\"keep_me\", a=\"x\", b=\"v_x\", instance=\"%s\", job=\"mr\"}",
             E.addr);
    assert_string_equal(ls, want);
    /* the duplicate line with another value is dropped: the first one wins */
    n = fetch("dup", s, 64, NULL, 0);
    for (int i = 0; i < n; i++) assert_true(s[i].v == 1);
    assert_true(fetch("scrape_samples_scraped{job=\"mr\"}", s, 64, NULL, 0) >= 1);
    assert_true(s[0].v == 5);
    assert_true(fetch("scrape_samples_post_metric_relabeling{job=\"mr\"}", s, 64, NULL, 0) >= 1);
    assert_true(s[0].v == 4);
    scrape_manager_free(E.m); /* before the rules die */
    E.m = NULL;
    char err[128];
    scrape_opts so = {.db = E.db, .threads = 1, .identity = "test"};
    assert_int_equal(scrape_manager_new(&so, &E.m, err, sizeof err), 0);
    relabel_rule_clear(&rs[0]);
    relabel_rule_clear(&rs[1]);
}

static void test_sync_removal(void **state) {
    (void)state;
    fx_set("/gone", "gm 1\n", NULL, 200, 0, 0);
    cfg_scrape j;
    job_init(&j, "gone", "/gone", 100, 80);
    apply(&j, 1);
    sync_one("gone");
    wait_samples("gm", 2);
    sync_targets("gone", NULL, 0, NULL, NULL);
    samp s[128];
    int64_t end = base_mono_ns() + 5000000000LL;
    int n = 0;
    while (base_mono_ns() < end) {
        n = fetch("up{job=\"gone\"}", s, 128, NULL, 0);
        if (n && is_stale(s[n - 1].v)) break;
        usleep(10000);
    }
    assert_true(n && is_stale(s[n - 1].v));
    int64_t t_up = s[n - 1].t;
    n = fetch("gm", s, 128, NULL, 0);
    assert_true(n && is_stale(s[n - 1].v));
    assert_int_equal(s[n - 1].t, t_up);
    assert_true(s[n - 1].t > s[n - 2].t);
    n = fetch("scrape_duration_seconds{job=\"gone\"}", s, 128, NULL, 0);
    assert_true(n && is_stale(s[n - 1].v));
    base_buf b;
    base_buf_init(&b, 0);
    assert_int_equal(scrape_manager_targets_json(E.m, NULL, &b), 0);
    assert_null(strstr(b.data, "\"scrapePool\":\"gone\""));
    base_buf_free(&b);
}

static void test_apply_keeps_loop(void **state) {
    (void)state;
    fx_set("/keep", "km 1\n", NULL, 200, 0, 0);
    cfg_scrape j1, j2, j3;
    job_init(&j1, "keep", "/keep", 200, 100);
    apply(&j1, 1);
    sync_one("keep");
    wait_samples("km", 2);
    int h0 = fx_hits("/keep");
    job_init(&j2, "keep", "/keep", 200, 100); /* an equal copy */
    for (int i = 0; i < 3; i++) {
        apply(&j2, 1);
        apply(&j1, 1);
    }
    usleep(1000000);
    int h1 = fx_hits("/keep");
    /* 1 s at 200 ms: 5 scrapes, give or take one; a restart would add */
    assert_true(h1 - h0 >= 4 && h1 - h0 <= 6);
    pthread_mutex_lock(&fx_mu);
    route *r = route_get("/keep");
    for (int i = 1; i < r->hits && i < 256; i++) assert_true(r->hit_ms[i] - r->hit_ms[i - 1] >= 150);
    pthread_mutex_unlock(&fx_mu);
    /* a changed job (sample_limit) keeps its series: no stale marker */
    j2.sample_limit = 100;
    apply(&j2, 1);
    usleep(600000);
    samp s[128];
    int n = fetch("km", s, 128, NULL, 0);
    for (int i = 0; i < n; i++) assert_false(is_stale(s[i].v));
    /* a changed interval is a new target that takes the series over */
    j3 = j2; /* configurations are immutable: a new one */
    j3.scrape_interval_ms = 100;
    apply(&j3, 1);
    usleep(700000);
    n = fetch("km", s, 128, NULL, 0);
    for (int i = 0; i < n; i++) assert_false(is_stale(s[i].v));
    if (s[n - 1].t - s[n - 2].t >= 150)
        for (int i = 0; i < n; i++) fprintf(stderr, "km %d %lld %g\n", i, (long long)s[i].t, s[i].v);
    assert_true(s[n - 1].t - s[n - 2].t < 150);
    /* removing the job marks its series stale */
    apply(NULL, 0);
    int64_t end = base_mono_ns() + 5000000000LL;
    while (base_mono_ns() < end) {
        n = fetch("km", s, 128, NULL, 0);
        if (n && is_stale(s[n - 1].v)) break;
        usleep(10000);
    }
    assert_true(n && is_stale(s[n - 1].v));
}

static void test_targets_json(void **state) {
    (void)state;
    fx_set("/tj", "tj 1\n", NULL, 200, 0, 0);
    cfg_scrape j;
    job_init(&j, "tj", "/tj", 100, 80);
    cfg_param prm = {(char *)"module", (char *[]){(char *)"a b"}, 1};
    j.params = &prm;
    j.nparams = 1;
    relabel_rule rs[1];
    rule(&rs[0], RELABEL_DROP, "__address__", "127\\.0\\.0\\.2:.*", NULL, NULL);
    j.relabel = rs;
    j.nrelabel = 1;
    apply(&j, 1);
    const char *addrs[] = {E.addr, "127.0.0.2:9", E.addr};
    sync_targets("tj", addrs, 3, "__meta_x", "m<&>");
    wait_samples("up{job=\"tj\"}", 1);
    base_buf b;
    base_buf_init(&b, 0);
    assert_int_equal(scrape_manager_targets_json(E.m, "any", &b), 0);
    assert_non_null(strstr(b.data, "m\\u003c\\u0026\\u003e"));
    json_error_t je;
    json_t *root = json_loads(b.data, 0, &je);
    assert_non_null(root);
    assert_string_equal(json_string_value(json_object_get(root, "status")), "success");
    json_t *data = json_object_get(root, "data");
    json_t *act = json_object_get(data, "activeTargets");
    json_t *drop = json_object_get(data, "droppedTargets");
    assert_int_equal(json_array_size(act), 1);
    assert_int_equal(json_array_size(drop), 1);
    json_t *t = json_array_get(act, 0);
    const char *keys[] = {"discoveredLabels", "labels",         "scrapePool",   "scrapeUrl",
                          "globalUrl",        "lastError",      "lastScrape",   "lastScrapeDuration",
                          "health",           "scrapeInterval", "scrapeTimeout"};
    assert_int_equal(json_object_size(t), 11);
    for (size_t i = 0; i < 11; i++) assert_non_null(json_object_get(t, keys[i]));
    char url[256];
    snprintf(url, sizeof url, "http://%s/tj?module=a+b", E.addr);
    assert_string_equal(json_string_value(json_object_get(t, "scrapeUrl")), url);
    assert_string_equal(json_string_value(json_object_get(t, "scrapePool")), "tj");
    assert_string_equal(json_string_value(json_object_get(t, "scrapeInterval")), "100ms");
    assert_string_equal(json_string_value(json_object_get(t, "scrapeTimeout")), "80ms");
    json_t *lab = json_object_get(t, "labels");
    assert_int_equal(json_object_size(lab), 2);
    assert_string_equal(json_string_value(json_object_get(lab, "job")), "tj");
    assert_string_equal(json_string_value(json_object_get(lab, "instance")), E.addr);
    json_t *dl = json_object_get(t, "discoveredLabels");
    assert_string_equal(json_string_value(json_object_get(dl, "__param_module")), "a b");
    assert_string_equal(json_string_value(json_object_get(dl, "__meta_x")), "m<&>");
    assert_string_equal(json_string_value(json_object_get(dl, "__metrics_path__")), "/tj");
    assert_string_equal(json_string_value(json_object_get(dl, "__scrape_interval__")), "100ms");
    const char *ls = json_string_value(json_object_get(t, "lastScrape"));
    assert_true(strlen(ls) >= 20 && ls[4] == '-' && ls[10] == 'T' && ls[strlen(ls) - 1] == 'Z');
    json_t *d0 = json_object_get(json_array_get(drop, 0), "discoveredLabels");
    assert_string_equal(json_string_value(json_object_get(d0, "__address__")), "127.0.0.2:9");
    json_decref(root);
    base_buf_reset(&b);
    assert_int_equal(scrape_manager_targets_json(E.m, "dropped", &b), 0);
    root = json_loads(b.data, 0, &je);
    data = json_object_get(root, "data");
    assert_int_equal(json_array_size(json_object_get(data, "activeTargets")), 0);
    assert_int_equal(json_array_size(json_object_get(data, "droppedTargets")), 1);
    json_decref(root);
    base_buf_free(&b);
    /* the rules die with this test: stop the loops first */
    scrape_manager_free(E.m);
    char err[128];
    scrape_opts so = {.db = E.db, .threads = 1, .identity = "test"};
    assert_int_equal(scrape_manager_new(&so, &E.m, err, sizeof err), 0);
    relabel_rule_clear(&rs[0]);
}

static void test_target_limit_and_ports(void **state) {
    (void)state;
    fx_set("/tl", "tl 1\n", NULL, 200, 0, 0);
    cfg_scrape j;
    job_init(&j, "tl", "/tl", 100, 80);
    j.target_limit = 1;
    apply(&j, 1);
    char a2[64];
    snprintf(a2, sizeof a2, "localhost:%u", E.port);
    const char *addrs[] = {E.addr, a2, "noport", "bad/addr"};
    sync_targets("tl", addrs, 4, NULL, NULL);
    wait_samples("up{job=\"tl\",instance=\"noport:80\"}", 1);
    samp s[16];
    assert_true(fetch("up{job=\"tl\",instance=\"noport:80\"}", s, 16, NULL, 0) >= 1);
    assert_true(s[0].v == 0);
    base_buf b;
    base_buf_init(&b, 0);
    int64_t end = base_mono_ns() + 3000000000LL;
    while (base_mono_ns() < end) {
        base_buf_reset(&b);
        scrape_manager_targets_json(E.m, NULL, &b);
        if (strstr(b.data, "target_limit exceeded (number of targets: 3, limit: 1)")) break;
        usleep(20000);
    }
    assert_non_null(strstr(b.data, "target_limit exceeded (number of targets: 3, limit: 1)"));
    assert_int_equal(fx_hits("/tl"), 0);
    base_buf_free(&b);
}

static void test_body_size_and_shutdown(void **state) {
    (void)state;
    fx_set("/big", "big_metric_with_a_long_name 1\n", NULL, 200, 0, 0);
    fx_set("/bigz", "big_metric_with_a_long_name_z 1\n", NULL, 200, 0, 1);
    fx_set("/small", "small 1\n", NULL, 200, 0, 0);
    cfg_scrape j[3];
    job_init(&j[0], "big", "/big", 100, 80);
    j[0].body_size_limit = 10;
    job_init(&j[1], "bigz", "/bigz", 100, 80);
    j[1].body_size_limit = 10;
    job_init(&j[2], "small", "/small", 100, 80);
    j[2].body_size_limit = 10;
    apply(j, 3);
    sync_one("big");
    sync_one("bigz");
    sync_one("small");
    wait_samples("up{job=\"big\"}", 1);
    wait_samples("up{job=\"bigz\"}", 1);
    wait_samples("small", 2);
    samp s[64];
    assert_true(fetch("up{job=\"big\"}", s, 64, NULL, 0) >= 1);
    assert_true(s[0].v == 0);
    assert_true(fetch("up{job=\"bigz\"}", s, 64, NULL, 0) >= 1);
    assert_true(s[0].v == 0);
    assert_int_equal(nseries("{__name__=~\"big.*\"}"), 0);
    base_buf b;
    base_buf_init(&b, 0);
    assert_int_equal(scrape_manager_targets_json(E.m, NULL, &b), 0);
    const char *p = strstr(b.data, "body size limit exceeded");
    assert_non_null(p);
    assert_non_null(strstr(p + 1, "body size limit exceeded"));
    base_buf_free(&b);
    /* shutdown writes no staleness markers */
    scrape_manager_free(E.m);
    E.m = NULL;
    int n = fetch("small", s, 64, NULL, 0);
    usleep(400000);
    assert_int_equal(fetch("small", s, 64, NULL, 0), n);
    assert_false(is_stale(s[n - 1].v));
    char err[128];
    scrape_opts so = {.db = E.db, .threads = 1, .identity = "test"};
    assert_int_equal(scrape_manager_new(&so, &E.m, err, sizeof err), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_basic, setup, teardown),
        cmocka_unit_test_setup_teardown(test_staleness, setup, teardown),
        cmocka_unit_test_setup_teardown(test_honor_labels, setup, teardown),
        cmocka_unit_test_setup_teardown(test_honor_timestamps, setup, teardown),
        cmocka_unit_test_setup_teardown(test_openmetrics_gzip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_timeout, setup, teardown),
        cmocka_unit_test_setup_teardown(test_limits, setup, teardown),
        cmocka_unit_test_setup_teardown(test_metric_relabel_and_dups, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sync_removal, setup, teardown),
        cmocka_unit_test_setup_teardown(test_apply_keeps_loop, setup, teardown),
        cmocka_unit_test_setup_teardown(test_targets_json, setup, teardown),
        cmocka_unit_test_setup_teardown(test_target_limit_and_ports, setup, teardown),
        cmocka_unit_test_setup_teardown(test_body_size_and_shutdown, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
