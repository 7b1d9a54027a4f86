/* tests/unit/notify/send.c -- the notifier end to end against receivers on
 * 127.0.0.1 (src/http's server): the exact request (path, headers, body),
 * batches of 64, external labels and alert relabeling, path_prefix and API
 * v1, a full queue dropping the oldest, a failing alertmanager next to a
 * working one in the same set, the set's timeout, the alertmanager lists
 * (active, dropped, recomputed on reload), basic auth, and draining on
 * shutdown. Every wait is bounded. */
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
#include <microhttpd.h>

#include "base/time.h"
#include "config/config.h"
#include "http/http.h"
#include "labels/labels.h"
#include "notify/notify.h"

#define WAIT_MS 10000
#define MAXREQ  64

/* ---- a receiver ----------------------------------------------------------------- */

typedef struct rreq {
    char *path, *body, *ctype, *ua, *auth;
} rreq;

typedef struct recv {
    http_server *srv;
    unsigned port;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int status; /* the answer */
    int block;  /* hold answers until cleared */
    int waiting;
    size_t n;
    rreq r[MAXREQ];
} recv_t;

static char *dupn(const char *s, size_t n) {
    char *d = malloc(n + 1);
    assert_non_null(d);
    if (n) memcpy(d, s, n);
    d[n] = '\0';
    return d;
}

static char *hdr(const http_request *req, const char *name) {
    const char *v = MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, name);
    return v ? strdup(v) : NULL;
}

static void on_req(void *ctx, const http_request *req, http_response *resp) {
    recv_t *r = ctx;
    pthread_mutex_lock(&r->mu);
    if (r->n < MAXREQ) {
        rreq *q = &r->r[r->n];
        q->path = strdup(req->path);
        q->body = dupn(req->body ? req->body : "", req->body_len);
        q->ctype = req->content_type ? strdup(req->content_type) : NULL;
        q->ua = hdr(req, "User-Agent");
        q->auth = hdr(req, "Authorization");
        r->n++;
    }
    pthread_cond_broadcast(&r->cv);
    int64_t end = base_mono_ns() + 15LL * 1000000000;
    r->waiting++;
    while (r->block && base_mono_ns() < end) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 50 * 1000000;
        if (ts.tv_nsec >= 1000000000) ts.tv_sec++, ts.tv_nsec -= 1000000000;
        pthread_cond_timedwait(&r->cv, &r->mu, &ts);
    }
    r->waiting--;
    int status = r->status;
    pthread_mutex_unlock(&r->mu);
    http_respond_text(resp, status, status == 200 ? "" : "boom\n");
}

static void recv_start(recv_t *r, int status) {
    memset(r, 0, sizeof *r);
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->cv, NULL);
    r->status = status;
    http_server_opts o = {.listen_address = "127.0.0.1:0", .max_body = 16 << 20, .threads = 4};
    char err[256];
    if (http_server_start(&o, on_req, r, &r->srv, err, sizeof err)) fail_msg("server: %s", err);
    r->port = http_server_port(r->srv);
}

static void recv_release(recv_t *r) {
    pthread_mutex_lock(&r->mu);
    r->block = 0;
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
}

static void recv_stop(recv_t *r) {
    recv_release(r);
    http_server_stop(r->srv);
    for (size_t i = 0; i < r->n; i++) {
        free(r->r[i].path);
        free(r->r[i].body);
        free(r->r[i].ctype);
        free(r->r[i].ua);
        free(r->r[i].auth);
    }
    pthread_cond_destroy(&r->cv);
    pthread_mutex_destroy(&r->mu);
}

/* Waits until the receiver has n requests (bounded); returns how many. */
static size_t recv_wait(recv_t *r, size_t n) {
    int64_t end = base_mono_ns() + (int64_t)WAIT_MS * 1000000;
    pthread_mutex_lock(&r->mu);
    while (r->n < n && base_mono_ns() < end) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 20 * 1000000;
        if (ts.tv_nsec >= 1000000000) ts.tv_sec++, ts.tv_nsec -= 1000000000;
        pthread_cond_timedwait(&r->cv, &r->mu, &ts);
    }
    size_t got = r->n;
    pthread_mutex_unlock(&r->mu);
    return got;
}

static size_t count(const char *s, const char *what) {
    size_t n = 0;
    for (const char *p = s; (p = strstr(p, what)); p += strlen(what)) n++;
    return n;
}

/* ---- the notifier's inputs ---------------------------------------------------------- */

static cfg_config *load(const char *fmt, ...) {
    char yaml[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(yaml, sizeof yaml, fmt, ap);
    va_end(ap);
    cfg_config *c = NULL;
    char err[512];
    if (cfg_load_buf(yaml, strlen(yaml), "test.yml", NULL, &c, err, sizeof err)) fail_msg("config: %s", err);
    return c;
}

static notify_manager *start(cfg_config *c, size_t cap) {
    notify_opts o;
    notify_opts_default(&o);
    if (cap) o.queue_capacity = cap;
    o.user_agent = "Kelvin/test";
    notify_manager *m = NULL;
    assert_int_equal(notify_new(&o, &m), 0);
    char err[256];
    if (notify_apply_config(m, c, err, sizeof err)) fail_msg("apply: %s", err);
    return m;
}

/* Discovery's part: the set's one static group of addresses. */
static void sync_static(notify_manager *m, const char *set, unsigned p1, unsigned p2) {
    char a1[64], a2[64];
    snprintf(a1, sizeof a1, "127.0.0.1:%u", p1);
    snprintf(a2, sizeof a2, "127.0.0.1:%u", p2);
    labels_set *t[2] = {NULL, NULL};
    assert_int_equal(labels_from_cstrs(&t[0], "__address__", a1, NULL), 0);
    assert_int_equal(labels_from_cstrs(&t[1], "__address__", a2, NULL), 0);
    disc_group g = {.source = "0", .labels = labels_empty(), .targets = t, .ntargets = p2 ? 2 : 1};
    const disc_group *gs[1] = {&g};
    notify_sync(m, set, gs, 1);
    labels_unref(t[0]);
    labels_unref(t[1]);
}

/* n alerts named prefix-<i>, starting at 1700000000123 ms. */
static void send_alerts(notify_manager *m, const char *prefix, size_t from, size_t n, const char *extra_name,
                        const char *extra_value) {
    rules_notice *v = calloc(n, sizeof *v);
    labels_set **ls = calloc(n, sizeof *ls);
    assert_non_null(v);
    assert_non_null(ls);
    static const rules_kv ann[] = {{"summary", "it broke"}};
    for (size_t i = 0; i < n; i++) {
        char name[64];
        snprintf(name, sizeof name, "%s-%zu", prefix, from + i);
        assert_int_equal(
            labels_from_cstrs(&ls[i], "alertname", name, "region", "own", extra_name, extra_value, NULL), 0);
        v[i] = (rules_notice){.labels = ls[i],
                              .annotations = ann,
                              .nannotations = 1,
                              .starts_at_ms = 1700000000123LL,
                              .ends_at_ms = 1700000060000LL,
                              .generator_url = "http://kelvin:9090/graph?g0.expr=up&g0.tab=1"};
    }
    notify_send(m, v, n);
    for (size_t i = 0; i < n; i++) labels_unref(ls[i]);
    free(ls);
    free(v);
}

static const notify_am_stats *am_stats(const notify_stats *s, unsigned port, const char *path) {
    char url[256];
    snprintf(url, sizeof url, "http://127.0.0.1:%u%s", port, path);
    for (size_t i = 0; i < s->nams; i++)
        if (strcmp(s->ams[i].url, url) == 0) return &s->ams[i];
    fail_msg("no stats for %s", url);
    return NULL;
}

/* Waits (bounded) until `dropped` and the sent count of url reach values. */
static void wait_stats(notify_manager *m, notify_stats *s, uint64_t requests_total) {
    int64_t end = base_mono_ns() + (int64_t)WAIT_MS * 1000000;
    for (;;) {
        assert_int_equal(notify_stats_get(m, s), 0);
        uint64_t reqs = 0;
        for (size_t i = 0; i < s->nams; i++) reqs += s->ams[i].latency_count;
        if (reqs >= requests_total || base_mono_ns() > end) return;
        notify_stats_free(s);
        usleep(10000);
    }
}

/* ---- tests ------------------------------------------------------------------------------ */

/* One alert: the request as 2.42 makes it; then 150 alerts in one call:
 * 64 + 64 + 22, in order. */
static void test_body_and_batches(void **st) {
    (void)st;
    recv_t r;
    recv_start(&r, 200);
    cfg_config *c = load("global:\n"
                         "  external_labels: {region: ext, cluster: c1}\n"
                         "alerting:\n"
                         "  alertmanagers:\n"
                         "  - static_configs: [{targets: ['127.0.0.1:%u']}]\n",
                         r.port);
    notify_manager *m = start(c, 0);
    sync_static(m, "alertmanager/0", r.port, 0);
    send_alerts(m, "A", 0, 1, "severity", "page");
    assert_int_equal(recv_wait(&r, 1), 1);
    pthread_mutex_lock(&r.mu);
    assert_string_equal(r.r[0].path, "/api/v2/alerts");
    assert_string_equal(r.r[0].ctype, "application/json");
    assert_string_equal(r.r[0].ua, "Kelvin/test");
    assert_null(r.r[0].auth);
    assert_string_equal(
        r.r[0].body, "[{\"annotations\":{\"summary\":\"it broke\"},\"endsAt\":\"2023-11-14T22:14:20.000Z\","
                     "\"startsAt\":\"2023-11-14T22:13:20.123Z\",\"generatorURL\":\"http://kelvin:9090/"
                     "graph?g0.expr=up\\u0026g0.tab=1\",\"labels\":{\"alertname\":\"A-0\",\"cluster\":\"c1\","
                     "\"region\":\"own\",\"severity\":\"page\"}}]");
    pthread_mutex_unlock(&r.mu);

    send_alerts(m, "B", 0, 150, "severity", "page");
    assert_int_equal(recv_wait(&r, 4), 4);
    pthread_mutex_lock(&r.mu);
    assert_int_equal(count(r.r[1].body, "\"labels\":"), 64);
    assert_int_equal(count(r.r[2].body, "\"labels\":"), 64);
    assert_int_equal(count(r.r[3].body, "\"labels\":"), 22);
    assert_non_null(strstr(r.r[1].body, "\"B-0\""));
    assert_non_null(strstr(r.r[1].body, "\"B-63\""));
    assert_non_null(strstr(r.r[2].body, "\"B-64\""));
    assert_non_null(strstr(r.r[3].body, "\"B-149\""));
    assert_null(strstr(r.r[3].body, "\"B-127\""));
    pthread_mutex_unlock(&r.mu);

    notify_stats s;
    wait_stats(m, &s, 4);
    assert_int_equal(s.dropped, 0);
    assert_int_equal(s.queue_capacity, 10000);
    assert_int_equal(s.queue_length, 0);
    assert_int_equal(s.alertmanagers_discovered, 1);
    const notify_am_stats *a = am_stats(&s, r.port, "/api/v2/alerts");
    assert_int_equal(a->sent, 151);
    assert_int_equal(a->errors, 0);
    assert_int_equal(a->latency_count, 4);
    assert_true(a->latency_q[0] >= 0 && a->latency_q[2] >= a->latency_q[0]);
    notify_stats_free(&s);
    notify_free(m);
    cfg_free(c);
    recv_stop(&r);
}

/* External labels never override the alert's own; alert_relabel_configs
 * run after them; an alert a rule drops is not sent. path_prefix and v1. */
static void test_relabel_prefix_v1(void **st) {
    (void)st;
    recv_t r;
    recv_start(&r, 200);
    cfg_config *c = load("global:\n"
                         "  external_labels: {region: ext, cluster: c1}\n"
                         "alerting:\n"
                         "  alert_relabel_configs:\n"
                         "  - source_labels: [severity]\n"
                         "    regex: drop\n"
                         "    action: drop\n"
                         "  - source_labels: [cluster]\n"
                         "    target_label: team\n"
                         "    replacement: team-$1\n"
                         "  alertmanagers:\n"
                         "  - path_prefix: /am/prefix/\n"
                         "    static_configs: [{targets: ['127.0.0.1:%u']}]\n"
                         "  - api_version: v1\n"
                         "    static_configs: [{targets: ['127.0.0.1:%u']}]\n",
                         r.port, r.port);
    notify_manager *m = start(c, 0);
    sync_static(m, "alertmanager/0", r.port, 0);
    sync_static(m, "alertmanager/1", r.port, 0);
    send_alerts(m, "K", 0, 1, "severity", "page");
    send_alerts(m, "D", 0, 1, "severity", "drop");
    assert_int_equal(recv_wait(&r, 2), 2);
    usleep(200000);
    pthread_mutex_lock(&r.mu);
    assert_int_equal(r.n, 2);
    int v2 = strcmp(r.r[0].path, "/am/prefix/api/v2/alerts") == 0 ? 0 : 1;
    assert_string_equal(r.r[v2].path, "/am/prefix/api/v2/alerts");
    assert_string_equal(r.r[1 - v2].path, "/api/v1/alerts");
    assert_string_equal(
        r.r[v2].body,
        "[{\"annotations\":{\"summary\":\"it broke\"},\"endsAt\":\"2023-11-14T22:14:20.000Z\","
        "\"startsAt\":\"2023-11-14T22:13:20.123Z\",\"generatorURL\":\"http://kelvin:9090/"
        "graph?g0.expr=up\\u0026g0.tab=1\",\"labels\":{\"alertname\":\"K-0\",\"cluster\":\"c1\","
        "\"region\":\"own\",\"severity\":\"page\",\"team\":\"team-c1\"}}]");
    assert_string_equal(
        r.r[1 - v2].body,
        "[{\"labels\":{\"alertname\":\"K-0\",\"cluster\":\"c1\",\"region\":\"own\",\"severity\":"
        "\"page\",\"team\":\"team-c1\"},\"annotations\":{\"summary\":\"it broke\"},\"startsAt\":"
        "\"2023-11-14T22:13:20.123Z\",\"endsAt\":\"2023-11-14T22:14:20Z\",\"generatorURL\":"
        "\"http://kelvin:9090/graph?g0.expr=up\\u0026g0.tab=1\"}]");
    pthread_mutex_unlock(&r.mu);
    notify_stats s;
    wait_stats(m, &s, 2);
    assert_int_equal(s.dropped, 0);
    assert_int_equal(s.alertmanagers_discovered, 2);
    assert_int_equal(am_stats(&s, r.port, "/api/v1/alerts")->sent, 1);
    assert_int_equal(am_stats(&s, r.port, "/am/prefix/api/v2/alerts")->sent, 1);
    notify_stats_free(&s);
    notify_free(m);
    cfg_free(c);
    recv_stop(&r);
}

/* Capacity 100. The sender is held inside the first request; then 130
 * alerts in one call (the call's oldest 30 go), then 10 more (the queue's
 * oldest 10 go). What arrives afterwards is the newest 100, in order. */
static void test_queue_full(void **st) {
    (void)st;
    recv_t r;
    recv_start(&r, 200);
    r.block = 1;
    cfg_config *c = load("alerting:\n"
                         "  alertmanagers:\n"
                         "  - static_configs: [{targets: ['127.0.0.1:%u']}]\n",
                         r.port);
    notify_manager *m = start(c, 100);
    sync_static(m, "alertmanager/0", r.port, 0);
    send_alerts(m, "a", 0, 1, "x", "y");
    assert_int_equal(recv_wait(&r, 1), 1);
    send_alerts(m, "b", 0, 130, "x", "y");
    send_alerts(m, "c", 0, 10, "x", "y");
    notify_stats s;
    assert_int_equal(notify_stats_get(m, &s), 0);
    assert_int_equal(s.queue_length, 100);
    assert_int_equal(s.queue_capacity, 100);
    assert_int_equal(s.dropped, 40);
    notify_stats_free(&s);
    recv_release(&r);
    assert_int_equal(recv_wait(&r, 3), 3);
    pthread_mutex_lock(&r.mu);
    assert_int_equal(count(r.r[1].body, "\"labels\":"), 64);
    assert_int_equal(count(r.r[2].body, "\"labels\":"), 36);
    assert_null(strstr(r.r[1].body, "\"b-39\""));
    assert_non_null(strstr(r.r[1].body, "\"b-40\""));
    assert_non_null(strstr(r.r[1].body, "\"b-103\""));
    assert_non_null(strstr(r.r[2].body, "\"b-129\""));
    assert_non_null(strstr(r.r[2].body, "\"c-9\""));
    pthread_mutex_unlock(&r.mu);
    wait_stats(m, &s, 3);
    assert_int_equal(s.dropped, 40);
    assert_int_equal(s.queue_length, 0);
    notify_stats_free(&s);
    notify_free(m);
    cfg_free(c);
    recv_stop(&r);
}

/* One set, two alertmanagers: one answers 500. The failing one counts an
 * error (per request), both count the alerts as sent (2.42), nothing is
 * dropped. With both failing the batch is dropped; with no alertmanager
 * at all too. */
static void test_failing_am(void **st) {
    (void)st;
    recv_t ok, bad;
    recv_start(&ok, 200);
    recv_start(&bad, 500);
    cfg_config *c = load("alerting:\n"
                         "  alertmanagers:\n"
                         "  - static_configs: [{targets: ['127.0.0.1:%u', '127.0.0.1:%u']}]\n",
                         ok.port, bad.port);
    notify_manager *m = start(c, 0);
    send_alerts(m, "none", 0, 3, "x", "y"); /* no alertmanager known yet */
    notify_stats s;
    int64_t end = base_mono_ns() + (int64_t)WAIT_MS * 1000000;
    for (;;) {
        assert_int_equal(notify_stats_get(m, &s), 0);
        int done = s.dropped == 3 || base_mono_ns() > end;
        if (!done) notify_stats_free(&s);
        if (done) break;
        usleep(10000);
    }
    assert_int_equal(s.dropped, 3);
    notify_stats_free(&s);

    sync_static(m, "alertmanager/0", ok.port, bad.port);
    send_alerts(m, "F", 0, 5, "x", "y");
    assert_int_equal(recv_wait(&ok, 1), 1);
    assert_int_equal(recv_wait(&bad, 1), 1);
    wait_stats(m, &s, 2);
    assert_int_equal(s.dropped, 3);
    assert_int_equal(s.alertmanagers_discovered, 2);
    const notify_am_stats *a = am_stats(&s, ok.port, "/api/v2/alerts");
    const notify_am_stats *b = am_stats(&s, bad.port, "/api/v2/alerts");
    assert_int_equal(a->sent, 5);
    assert_int_equal(a->errors, 0);
    assert_int_equal(b->sent, 5);
    assert_int_equal(b->errors, 1);
    notify_stats_free(&s);

    pthread_mutex_lock(&ok.mu);
    ok.status = 503;
    pthread_mutex_unlock(&ok.mu);
    send_alerts(m, "G", 0, 2, "x", "y");
    wait_stats(m, &s, 4);
    assert_int_equal(s.dropped, 5);
    assert_int_equal(am_stats(&s, ok.port, "/api/v2/alerts")->errors, 1);
    assert_int_equal(am_stats(&s, bad.port, "/api/v2/alerts")->errors, 2);
    notify_stats_free(&s);
    notify_free(m);
    cfg_free(c);
    recv_stop(&ok);
    recv_stop(&bad);
}

/* The set's timeout bounds a request to an alertmanager that does not
 * answer: an error, the batch dropped, well before the receiver gives up. */
static void test_timeout(void **st) {
    (void)st;
    recv_t r;
    recv_start(&r, 200);
    r.block = 1;
    cfg_config *c = load("alerting:\n"
                         "  alertmanagers:\n"
                         "  - timeout: 300ms\n"
                         "    static_configs: [{targets: ['127.0.0.1:%u']}]\n",
                         r.port);
    notify_manager *m = start(c, 0);
    sync_static(m, "alertmanager/0", r.port, 0);
    int64_t t0 = base_mono_ns();
    send_alerts(m, "T", 0, 2, "x", "y");
    notify_stats s;
    wait_stats(m, &s, 1);
    int64_t took_ms = (base_mono_ns() - t0) / 1000000;
    const notify_am_stats *a = am_stats(&s, r.port, "/api/v2/alerts");
    assert_int_equal(a->errors, 1);
    assert_int_equal(a->latency_count, 1);
    assert_true(a->latency_sum >= 0.25 && a->latency_sum < 5);
    assert_int_equal(s.dropped, 2);
    assert_true(took_ms < 5000);
    notify_stats_free(&s);
    recv_release(&r);
    notify_free(m);
    cfg_free(c);
    recv_stop(&r);
}

static void expect_list(char **v, size_t n, const char *const *want, size_t nwant) {
    assert_int_equal(n, nwant);
    for (size_t i = 0; i < n; i++) assert_string_equal(v[i], want[i]);
}

/* /api/v1/alertmanagers' lists: deduplicated active URLs, dropped ones
 * from their labels before relabeling, group labels; a reload that
 * changes path_prefix recomputes the URLs from the kept groups; a set
 * whose groups are withdrawn is empty. */
static void test_alertmanager_lists(void **st) {
    (void)st;
    cfg_config *c = load("alerting:\n"
                         "  alertmanagers:\n"
                         "  - relabel_configs:\n"
                         "    - source_labels: [role]\n"
                         "      regex: standby\n"
                         "      action: drop\n"
                         "  - scheme: https\n"
                         "    path_prefix: /x\n");
    notify_manager *m = start(c, 0);
    labels_set *t1 = NULL, *t2 = NULL, *t3 = NULL, *gl = NULL;
    assert_int_equal(labels_from_cstrs(&t1, "__address__", "am1:9093", NULL), 0);
    assert_int_equal(labels_from_cstrs(&t2, "__address__", "am2:9093", "role", "standby", NULL), 0);
    assert_int_equal(labels_from_cstrs(&t3, "__address__", "am3", NULL), 0);
    assert_int_equal(labels_from_cstrs(&gl, "__meta_filepath", "/etc/am.json", NULL), 0);
    labels_set *ta[] = {t1, t2, t1};
    labels_set *tb[] = {t3};
    disc_group g0 = {.source = "f:0", .labels = gl, .targets = ta, .ntargets = 3};
    disc_group g1 = {.source = "0", .labels = labels_empty(), .targets = tb, .ntargets = 1};
    const disc_group *gs0[] = {&g0};
    const disc_group *gs1[] = {&g1};
    notify_sync(m, "alertmanager/0", gs0, 1);
    notify_sync(m, "alertmanager/1", gs1, 1);
    notify_sync(m, "job/unrelated", gs1, 1);
    char **a, **d;
    size_t na, nd;
    assert_int_equal(notify_alertmanagers(m, &a, &na, &d, &nd), 0);
    expect_list(a, na, (const char *const[]){"http://am1:9093/api/v2/alerts", "https://am3/x/api/v2/alerts"},
                2);
    expect_list(d, nd, (const char *const[]){"http://am2:9093/api/v2/alerts"}, 1);
    notify_strv_free(a, na);
    notify_strv_free(d, nd);
    notify_stats s;
    assert_int_equal(notify_stats_get(m, &s), 0);
    assert_int_equal(s.alertmanagers_discovered, 2);
    assert_int_equal(s.nams, 2);
    assert_string_equal(s.ams[0].url, "http://am1:9093/api/v2/alerts");
    assert_int_equal(s.ams[0].sent, 0);
    assert_true(s.ams[0].latency_q[1] != s.ams[0].latency_q[1]); /* NaN: no requests yet */
    notify_stats_free(&s);

    /* reload: set 1 gets another prefix; set 0 unchanged; groups kept */
    cfg_config *c2 = load("alerting:\n"
                          "  alertmanagers:\n"
                          "  - relabel_configs:\n"
                          "    - source_labels: [role]\n"
                          "      regex: standby\n"
                          "      action: drop\n"
                          "  - scheme: https\n"
                          "    path_prefix: /y/\n"
                          "  - static_configs: [{targets: [am9]}]\n");
    char err[256];
    assert_int_equal(notify_apply_config(m, c2, err, sizeof err), 0);
    assert_int_equal(notify_alertmanagers(m, &a, &na, &d, &nd), 0);
    expect_list(a, na, (const char *const[]){"http://am1:9093/api/v2/alerts", "https://am3/y/api/v2/alerts"},
                2);
    notify_strv_free(a, na);
    notify_strv_free(d, nd);

    /* the set's groups withdrawn */
    notify_sync(m, "alertmanager/0", NULL, 0);
    assert_int_equal(notify_alertmanagers(m, &a, &na, &d, &nd), 0);
    expect_list(a, na, (const char *const[]){"https://am3/y/api/v2/alerts"}, 1);
    assert_int_equal(nd, 0);
    assert_null(d);
    notify_strv_free(a, na);

    /* no alerting at all */
    assert_int_equal(notify_apply_config(m, NULL, err, sizeof err), 0);
    assert_int_equal(notify_alertmanagers(m, &a, &na, &d, &nd), 0);
    assert_int_equal(na + nd, 0);
    labels_unref(t1);
    labels_unref(t2);
    labels_unref(t3);
    labels_unref(gl);
    notify_free(m);
    cfg_free(c);
    cfg_free(c2);
}

/* The set's HTTP client settings: basic auth. */
static void test_basic_auth(void **st) {
    (void)st;
    recv_t r;
    recv_start(&r, 200);
    cfg_config *c = load("alerting:\n"
                         "  alertmanagers:\n"
                         "  - basic_auth: {username: alice, password: s3cret}\n"
                         "    static_configs: [{targets: ['127.0.0.1:%u']}]\n",
                         r.port);
    notify_manager *m = start(c, 0);
    sync_static(m, "alertmanager/0", r.port, 0);
    send_alerts(m, "A", 0, 1, "x", "y");
    assert_int_equal(recv_wait(&r, 1), 1);
    pthread_mutex_lock(&r.mu);
    assert_non_null(r.r[0].auth);
    assert_string_equal(r.r[0].auth, "Basic YWxpY2U6czNjcmV0");
    pthread_mutex_unlock(&r.mu);
    notify_free(m);
    cfg_free(c);
    recv_stop(&r);
}

/* notify_free drains what is queued; against an alertmanager that does
 * not answer it gives up after drain_timeout_ms. */
static void test_drain(void **st) {
    (void)st;
    recv_t r;
    recv_start(&r, 200);
    cfg_config *c = load("alerting:\n"
                         "  alertmanagers:\n"
                         "  - static_configs: [{targets: ['127.0.0.1:%u']}]\n",
                         r.port);
    notify_manager *m = start(c, 0);
    sync_static(m, "alertmanager/0", r.port, 0);
    send_alerts(m, "Q", 0, 200, "x", "y");
    notify_free(m);
    pthread_mutex_lock(&r.mu);
    size_t total = 0;
    for (size_t i = 0; i < r.n; i++) total += count(r.r[i].body, "\"labels\":");
    pthread_mutex_unlock(&r.mu);
    assert_int_equal(total, 200);

    r.block = 1;
    notify_opts o;
    notify_opts_default(&o);
    o.drain_timeout_ms = 300;
    assert_int_equal(notify_new(&o, &m), 0);
    char err[256];
    assert_int_equal(notify_apply_config(m, c, err, sizeof err), 0);
    sync_static(m, "alertmanager/0", r.port, 0);
    size_t before = recv_wait(&r, 0);
    send_alerts(m, "S", 0, 100, "x", "y");
    assert_int_equal(recv_wait(&r, before + 1), before + 1);
    int64_t t0 = base_mono_ns();
    notify_free(m);
    assert_true((base_mono_ns() - t0) / 1000000 < 3000);
    cfg_free(c);
    recv_stop(&r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_body_and_batches), cmocka_unit_test(test_relabel_prefix_v1),
        cmocka_unit_test(test_queue_full),       cmocka_unit_test(test_failing_am),
        cmocka_unit_test(test_timeout),          cmocka_unit_test(test_alertmanager_lists),
        cmocka_unit_test(test_basic_auth),       cmocka_unit_test(test_drain),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
