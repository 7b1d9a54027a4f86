/* tests/unit/promql/engine.c -- the engine around the evaluator
 * (src/promql/engine.c, storage.c): options' defaults, the storage
 * adapters (head and database give the same series and samples, batches
 * of any size, stale markers passed through), result shapes and order
 * (instant vector, scalar, string, matrix of a range vector, range
 * queries sorted by labels, scalars as one series), the range query type
 * check, the samples limit (2.42's message, peak and total reported),
 * timeouts and cancellation in each phase (queue, execution,
 * evaluation), the concurrency gate and the engine's counters, error
 * types and their HTTP codes. A slow storage wrapper (sleeps in `next`)
 * makes queries last long enough to be timed out, canceled or queued. */
#include <ftw.h>
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

#include "base/err.h"
#include "base/time.h"
#include "labels/labels.h"
#include "promql/eval_int.h"
#include "promql/promql.h"
#include "tsdb/db.h"
#include "tsdb/head.h"

#define STALE_BITS 0x7ff0000000000002ULL

static double stale(void) {
    uint64_t b = STALE_BITS;
    double v;
    memcpy(&v, &b, 8);
    return v;
}

static int rm_cb(const char *p, const struct stat *sb, int flag, struct FTW *f) {
    (void)sb;
    (void)flag;
    (void)f;
    return remove(p);
}

/* ---- fixtures ------------------------------------------------------------ */

/* up{job="a",instance="i<k>"} for k < nser, one sample every 15 s from 0
 * to (nsamples - 1) * 15 s, value k * 1000 + i; a stale marker in
 * series 0 at 600 s. */
static void fill(tsdb_head *h, int nser, int nsamples) {
    tsdb_head_app *a = NULL;
    assert_int_equal(tsdb_head_app_new(h, &a), 0);
    for (int k = 0; k < nser; k++) {
        char inst[32];
        snprintf(inst, sizeof inst, "i%03d", k);
        labels_set *ls = NULL;
        assert_int_equal(labels_from_cstrs(&ls, "__name__", "up", "job", "a", "instance", inst, NULL), 0);
        for (int i = 0; i < nsamples; i++) {
            double v = k * 1000 + i;
            if (k == 0 && i == 40) v = stale();
            assert_int_equal(tsdb_head_app_add(a, ls, (int64_t)i * 15000, v), 0);
        }
        labels_unref(ls);
    }
    assert_int_equal(tsdb_head_app_commit(a, NULL), 0);
    tsdb_head_app_free(a);
}

static tsdb_head *new_head(int nser, int nsamples) {
    tsdb_head_opts o;
    memset(&o, 0, sizeof o);
    tsdb_head *h = NULL;
    char err[256];
    assert_int_equal(tsdb_head_open(&o, &h, NULL, err, sizeof err), 0);
    fill(h, nser, nsamples);
    return h;
}

static pq_expr *parse(const char *s) {
    pq_expr *x = NULL;
    char err[256];
    int rc = promql_parse(s, strlen(s), &x, err, sizeof err);
    if (rc < 0) fprintf(stderr, "parse %s: %s\n", s, err);
    assert_int_equal(rc, 0);
    return x;
}

static promql_engine *engine(promql_storage st, void (*tweak)(promql_opts *)) {
    promql_opts o;
    promql_opts_default(&o);
    if (tweak) tweak(&o);
    promql_engine *e = NULL;
    assert_int_equal(promql_engine_new(&o, st, &e), 0);
    return e;
}

/* ---- a slow storage: wraps another, sleeping in next() --------------------- */

typedef struct slow {
    promql_storage inner;
    int sleep_ms;
    volatile int *cancel_after; /* set to 1 after the first next() */
    int started;                /* atomic */
} slow;

static slow g_slow;

static int slow_select(void *ctx, labels_matcher *const *ms, size_t n, int64_t mint, int64_t maxt,
                       void **ret) {
    slow *s = ctx;
    return s->inner.ops->select(s->inner.ctx, ms, n, mint, maxt, ret);
}
static int slow_next(void *set) {
    __atomic_store_n(&g_slow.started, 1, __ATOMIC_SEQ_CST);
    if (g_slow.cancel_after) __atomic_store_n(g_slow.cancel_after, 1, __ATOMIC_SEQ_CST);
    if (g_slow.sleep_ms) {
        struct timespec ts = {g_slow.sleep_ms / 1000, (long)(g_slow.sleep_ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
    }
    return g_slow.inner.ops->next(set);
}
static const labels_set *slow_labels(void *set) {
    return g_slow.inner.ops->labels(set);
}
static int slow_samples(void *set, int64_t *t, double *v, size_t cap) {
    return g_slow.inner.ops->samples(set, t, v, cap);
}
static void slow_free(void *set) {
    g_slow.inner.ops->free(set);
}
static const promql_storage_ops slow_ops = {slow_select, slow_next, slow_labels, slow_samples, slow_free};

/* ---- tests ---------------------------------------------------------------- */

static void test_opts_default(void **state) {
    (void)state;
    promql_opts o;
    promql_opts_default(&o);
    assert_int_equal(o.lookback_ms, 300000);
    assert_int_equal(o.max_samples, 50000000);
    assert_int_equal(o.timeout_ms, 120000);
    assert_int_equal(o.max_concurrency, 20);
    assert_int_equal(o.default_subq_step_ms, 60000);
    assert_string_equal(promql_errtype_str(PROMQL_ERR_BAD_DATA), "bad_data");
    assert_string_equal(promql_errtype_str(PROMQL_ERR_EXECUTION), "execution");
    assert_string_equal(promql_errtype_str(PROMQL_ERR_TIMEOUT), "timeout");
    assert_string_equal(promql_errtype_str(PROMQL_ERR_CANCELED), "canceled");
    assert_string_equal(promql_errtype_str(PROMQL_ERR_INTERNAL), "internal");
    assert_int_equal(promql_errtype_http(PROMQL_ERR_BAD_DATA), 400);
    assert_int_equal(promql_errtype_http(PROMQL_ERR_EXECUTION), 422);
    assert_int_equal(promql_errtype_http(PROMQL_ERR_TIMEOUT), 503);
    assert_int_equal(promql_errtype_http(PROMQL_ERR_CANCELED), 503);
    assert_int_equal(promql_errtype_http(PROMQL_ERR_INTERNAL), 500);
    assert_string_equal(promql_vtype_str(PROMQL_MATRIX), "matrix");
    assert_string_equal(promql_vtype_str(PROMQL_VECTOR), "vector");
    assert_string_equal(promql_vtype_str(PROMQL_SCALAR), "scalar");
    assert_string_equal(promql_vtype_str(PROMQL_STRING), "string");
}

/* Reads every series and sample of a select into a flat text. */
static void dump(promql_storage st, size_t cap, base_buf *out) {
    labels_matcher *m = NULL;
    char err[128];
    assert_int_equal(
        labels_matcher_new(LABELS_MATCH_EQ, base_str_c("__name__"), base_str_c("up"), &m, err, sizeof err),
        0);
    void *set = NULL;
    assert_int_equal(st.ops->select(st.ctx, &m, 1, 300000, 900000, &set), 0);
    int64_t *t = malloc(cap * sizeof *t);
    double *v = malloc(cap * sizeof *v);
    while (st.ops->next(set) == 1) {
        labels_format(st.ops->labels(set), out);
        int c;
        while ((c = st.ops->samples(set, t, v, cap)) > 0)
            for (int i = 0; i < c; i++) {
                uint64_t b;
                memcpy(&b, &v[i], 8);
                base_buf_printf(out, " %lld:%llx", (long long)t[i], (unsigned long long)b);
            }
        assert_true(c == 0);
        base_buf_putc(out, '\n');
    }
    st.ops->free(set);
    free(t);
    free(v);
    labels_matcher_free(m);
}

static void test_storage_adapters(void **state) {
    (void)state;
    tsdb_head *h = new_head(5, 100);
    base_buf a = BASE_BUF_INIT, b = BASE_BUF_INIT, c = BASE_BUF_INIT;
    dump(promql_storage_head(h), 1, &a);
    dump(promql_storage_head(h), 1000, &b);
    assert_string_equal(a.data, b.data);
    /* 5 series, samples in [300 s, 900 s] inclusive: 41 each, the stale marker kept */
    size_t lines = 0;
    for (size_t i = 0; i < a.len; i++) lines += a.data[i] == '\n';
    assert_int_equal(lines, 5);
    assert_non_null(strstr(a.data, " 300000:"));
    assert_non_null(strstr(a.data, " 900000:"));
    assert_null(strstr(a.data, " 285000:"));
    assert_null(strstr(a.data, " 915000:"));
    assert_non_null(strstr(a.data, "600000:7ff0000000000002"));

    /* a database with the same data */
    char dir[] = "/tmp/kelvin-promql-XXXXXX";
    assert_non_null(mkdtemp(dir));
    tsdb_db_opts o;
    tsdb_db_opts_default(&o);
    o.path = dir;
    o.maintain_interval_ms = -1;
    tsdb_db *db = NULL;
    char err[256];
    assert_int_equal(tsdb_db_open(&o, &db, NULL, err, sizeof err), 0);
    fill(tsdb_db_head(db), 5, 100);
    dump(promql_storage_db(db), 7, &c);
    assert_string_equal(a.data, c.data);

    /* the same query answers alike through both */
    promql_engine *e1 = engine(promql_storage_head(h), NULL), *e2 = engine(promql_storage_db(db), NULL);
    pq_expr *x = parse("sum by (job) (rate(up[2m])) + on(job) group_left count by (job) (up)");
    promql_result r1, r2;
    assert_int_equal(promql_exec_range(e1, x, 0, 1500000, 30000, NULL, &r1), 0);
    assert_int_equal(promql_exec_range(e2, x, 0, 1500000, 30000, NULL, &r2), 0);
    assert_int_equal(r1.nseries, 1);
    assert_int_equal(r2.nseries, 1);
    assert_int_equal(r1.series[0].n, r2.series[0].n);
    for (size_t i = 0; i < r1.series[0].n; i++) {
        assert_int_equal(r1.series[0].pts[i].t, r2.series[0].pts[i].t);
        assert_memory_equal(&r1.series[0].pts[i].v, &r2.series[0].pts[i].v, 8);
    }
    promql_result_free(&r1);
    promql_result_free(&r2);
    promql_expr_free(x);
    promql_engine_free(e1);
    promql_engine_free(e2);
    assert_int_equal(tsdb_db_close(db), 0);
    nftw(dir, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
    base_buf_free(&a);
    base_buf_free(&b);
    base_buf_free(&c);
    tsdb_head_close(h);
}

static void test_result_shapes(void **state) {
    (void)state;
    tsdb_head *h = new_head(3, 100);
    promql_engine *e = engine(promql_storage_head(h), NULL);
    promql_result r;

    /* instant vector: storage order (by labels), values at t */
    pq_expr *x = parse("up");
    assert_int_equal(promql_exec_instant(e, x, 300000, NULL, &r), 0);
    assert_int_equal(r.type, PROMQL_VECTOR);
    assert_int_equal(r.nseries, 3);
    for (size_t i = 0; i < 3; i++) {
        assert_int_equal(r.series[i].n, 1);
        assert_int_equal(r.series[i].pts[0].t, 300000);
        assert_true(r.series[i].pts[0].v == (double)i * 1000 + 20);
    }
    promql_result_free(&r);
    /* the stale marker at 600 s ends series 0 until its next sample */
    assert_int_equal(promql_exec_instant(e, x, 610000, NULL, &r), 0);
    assert_int_equal(r.nseries, 2);
    promql_result_free(&r);
    promql_expr_free(x);

    /* sort_desc keeps its order */
    x = parse("sort_desc(up)");
    assert_int_equal(promql_exec_instant(e, x, 300000, NULL, &r), 0);
    assert_int_equal(r.nseries, 3);
    assert_true(r.series[0].pts[0].v > r.series[1].pts[0].v && r.series[1].pts[0].v > r.series[2].pts[0].v);
    promql_result_free(&r);
    promql_expr_free(x);

    /* scalar and string */
    x = parse("1 + 2");
    assert_int_equal(promql_exec_instant(e, x, 5000, NULL, &r), 0);
    assert_int_equal(r.type, PROMQL_SCALAR);
    assert_true(r.scalar == 3);
    assert_int_equal(r.t, 5000);
    promql_result_free(&r);
    promql_expr_free(x);
    x = parse("\"hello\"");
    assert_int_equal(promql_exec_instant(e, x, 5000, NULL, &r), 0);
    assert_int_equal(r.type, PROMQL_STRING);
    assert_string_equal(r.str, "hello");
    assert_int_equal(r.str_len, 5);
    promql_result_free(&r);
    /* ... which a range query refuses */
    assert_true(promql_exec_range(e, x, 0, 60000, 15000, NULL, &r) < 0);
    assert_int_equal(r.err, PROMQL_ERR_BAD_DATA);
    assert_string_equal(
        r.errmsg, "invalid expression type \"string\" for range query, must be Scalar or instant Vector");
    promql_expr_free(x);

    /* a range vector: raw points, the window closed at both ends */
    x = parse("up{instance=\"i001\"}[1m]");
    assert_int_equal(promql_exec_instant(e, x, 300000, NULL, &r), 0);
    assert_int_equal(r.type, PROMQL_MATRIX);
    assert_int_equal(r.nseries, 1);
    assert_int_equal(r.series[0].n, 5);
    assert_int_equal(r.series[0].pts[0].t, 240000);
    assert_int_equal(r.series[0].pts[4].t, 300000);
    promql_result_free(&r);
    assert_true(promql_exec_range(e, x, 0, 60000, 15000, NULL, &r) < 0);
    assert_int_equal(r.err, PROMQL_ERR_BAD_DATA);
    assert_string_equal(
        r.errmsg,
        "invalid expression type \"range vector\" for range query, must be Scalar or instant Vector");
    promql_expr_free(x);

    /* range query: series sorted by labels, points where present */
    x = parse("label_replace(up, \"instance\", \"z$1\", \"instance\", \"i(.*)\") or up");
    assert_int_equal(promql_exec_range(e, x, 0, 1800000, 60000, NULL, &r), 0);
    assert_int_equal(r.type, PROMQL_MATRIX);
    assert_int_equal(r.nseries, 6);
    for (size_t i = 1; i < r.nseries; i++) assert_true(labels_cmp(r.series[i - 1].ls, r.series[i].ls) < 0);
    assert_int_equal(r.series[0].pts[0].t, 0);
    promql_result_free(&r);
    promql_expr_free(x);

    /* a scalar over a range: one series without labels */
    x = parse("time()");
    assert_int_equal(promql_exec_range(e, x, 0, 120000, 60000, NULL, &r), 0);
    assert_int_equal(r.type, PROMQL_MATRIX);
    assert_int_equal(r.nseries, 1);
    assert_int_equal(labels_len(r.series[0].ls), 0);
    assert_int_equal(r.series[0].n, 3);
    assert_true(r.series[0].pts[2].v == 120);
    promql_result_free(&r);
    promql_expr_free(x);

    /* an evaluation error */
    x = parse("up + ignoring(instance) up");
    assert_true(promql_exec_instant(e, x, 300000, NULL, &r) < 0);
    assert_int_equal(r.err, PROMQL_ERR_EXECUTION);
    assert_non_null(
        strstr(r.errmsg, "found duplicate series for the match group {job=\"a\"} on the right hand-side"));
    promql_expr_free(x);

    promql_engine_stats st;
    promql_engine_stats_get(e, &st);
    assert_int_equal(st.queries, 11);
    assert_int_equal(st.queries_failed, 3);
    assert_int_equal(st.running, 0);
    promql_engine_free(e);
    tsdb_head_close(h);
}

static void small_samples(promql_opts *o) {
    o->max_samples = 1000;
}

static void test_max_samples(void **state) {
    (void)state;
    tsdb_head *h = new_head(10, 200);
    promql_engine *e = engine(promql_storage_head(h), small_samples);
    promql_result r;
    /* 10 series x 61 steps = 610 samples: fits */
    pq_expr *x = parse("up");
    assert_int_equal(promql_exec_range(e, x, 0, 900000, 15000, NULL, &r), 0);
    assert_int_equal(r.nseries, 10);
    assert_true(r.peak_samples >= 600 && r.peak_samples <= 1000);
    assert_true(r.total_samples >= 600);
    promql_result_free(&r);
    /* 10 x 121 = 1210: too many */
    assert_true(promql_exec_range(e, x, 0, 1800000, 15000, NULL, &r) < 0);
    assert_int_equal(r.err, PROMQL_ERR_EXECUTION);
    assert_string_equal(r.errmsg,
                        "query processing would load too many samples into memory in query execution");
    assert_int_equal(r.nseries, 0);
    promql_expr_free(x);
    /* a range vector holds all its points: 10 series x 200 samples */
    x = parse("up[1h]");
    assert_true(promql_exec_instant(e, x, 3000000, NULL, &r) < 0);
    assert_int_equal(r.err, PROMQL_ERR_EXECUTION);
    promql_expr_free(x);
    /* a range function holds one series' window at a time, as 2.42 */
    x = parse("sum_over_time(up[1h])");
    assert_int_equal(promql_exec_instant(e, x, 3000000, NULL, &r), 0);
    assert_int_equal(r.nseries, 10);
    promql_result_free(&r);
    promql_expr_free(x);
    promql_engine_free(e);
    tsdb_head_close(h);
}

static void short_timeout(promql_opts *o) {
    o->timeout_ms = 100;
}

static void test_timeout_in_evaluation(void **state) {
    (void)state;
    tsdb_head *h = new_head(50, 10);
    memset(&g_slow, 0, sizeof g_slow);
    g_slow.inner = promql_storage_head(h);
    g_slow.sleep_ms = 20;
    promql_engine *e = engine((promql_storage){&slow_ops, &g_slow}, short_timeout);
    pq_expr *x = parse("up");
    promql_result r;
    int64_t t0 = base_mono_ns();
    assert_true(promql_exec_instant(e, x, 100000, NULL, &r) < 0);
    int64_t took = base_mono_ns() - t0;
    assert_int_equal(r.err, PROMQL_ERR_TIMEOUT);
    assert_string_equal(r.errmsg, "query timed out in expression evaluation");
    assert_true(took < 1000 * 1000000LL); /* stopped near the deadline, not after 50 x 20 ms */
    promql_engine_stats st;
    promql_engine_stats_get(e, &st);
    assert_int_equal(st.queries_timed_out, 1);
    promql_expr_free(x);
    promql_engine_free(e);
    tsdb_head_close(h);
}

static void test_cancel(void **state) {
    (void)state;
    tsdb_head *h = new_head(20, 10);
    memset(&g_slow, 0, sizeof g_slow);
    g_slow.inner = promql_storage_head(h);
    g_slow.sleep_ms = 5;
    promql_engine *e = engine((promql_storage){&slow_ops, &g_slow}, NULL);
    pq_expr *x = parse("up");
    promql_result r;
    /* canceled before it starts */
    volatile int cancel = 1;
    promql_ctl ctl = {.cancel = &cancel};
    assert_true(promql_exec_instant(e, x, 100000, &ctl, &r) < 0);
    assert_int_equal(r.err, PROMQL_ERR_CANCELED);
    assert_string_equal(r.errmsg, "query was canceled in query execution");
    /* canceled while it reads */
    cancel = 0;
    g_slow.cancel_after = &cancel;
    assert_true(promql_exec_instant(e, x, 100000, &ctl, &r) < 0);
    assert_int_equal(r.err, PROMQL_ERR_CANCELED);
    assert_string_equal(r.errmsg, "query was canceled in expression evaluation");
    g_slow.cancel_after = NULL;
    cancel = 0;
    assert_int_equal(promql_exec_instant(e, x, 100000, &ctl, &r), 0);
    assert_int_equal(r.nseries, 20);
    promql_result_free(&r);
    /* the caller's own timeout shortens the engine's (20 reads of 5 ms) */
    promql_ctl short_ctl = {.timeout_ns = 20 * 1000000LL};
    assert_true(promql_exec_instant(e, x, 100000, &short_ctl, &r) < 0);
    assert_int_equal(r.err, PROMQL_ERR_TIMEOUT);
    assert_string_equal(r.errmsg, "query timed out in expression evaluation");
    promql_expr_free(x);
    promql_engine_free(e);
    tsdb_head_close(h);
}

typedef struct bg {
    promql_engine *e;
    pq_expr *x;
    int rc;
    promql_result r;
} bg;

static void *bg_run(void *p) {
    bg *b = p;
    b->rc = promql_exec_instant(b->e, b->x, 100000, NULL, &b->r);
    return NULL;
}

static void one_slot(promql_opts *o) {
    o->max_concurrency = 1;
    o->timeout_ms = 1000;
}

static void test_concurrency_gate(void **state) {
    (void)state;
    tsdb_head *h = new_head(30, 10);
    memset(&g_slow, 0, sizeof g_slow);
    g_slow.inner = promql_storage_head(h);
    g_slow.sleep_ms = 25; /* 30 series: ~750 ms per query */
    promql_engine *e = engine((promql_storage){&slow_ops, &g_slow}, one_slot);
    pq_expr *x = parse("up");
    bg a = {e, x, 0, {0}}, b = {e, x, 0, {0}};
    pthread_t ta, tb;
    assert_int_equal(pthread_create(&ta, NULL, bg_run, &a), 0);
    while (!__atomic_load_n(&g_slow.started, __ATOMIC_SEQ_CST)) usleep(1000);
    /* the second query waits for the slot; the first keeps it ~750 ms */
    promql_engine_stats st;
    assert_int_equal(pthread_create(&tb, NULL, bg_run, &b), 0);
    int saw_waiting = 0;
    for (int i = 0; i < 2000 && !saw_waiting; i++) {
        promql_engine_stats_get(e, &st);
        saw_waiting = st.running == 1 && st.waiting == 1;
        if (st.running == 0) break;
        usleep(500);
    }
    assert_true(saw_waiting);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    assert_int_equal(a.rc, 0);
    assert_int_equal(a.r.nseries, 30);
    promql_result_free(&a.r);
    /* b got the slot after ~750 ms of its 1000 ms: it ran out of time evaluating */
    assert_true(b.rc < 0);
    assert_int_equal(b.r.err, PROMQL_ERR_TIMEOUT);
    assert_string_equal(b.r.errmsg, "query timed out in expression evaluation");

    /* a query that never gets the slot times out in the queue */
    g_slow.sleep_ms = 400; /* a notices its own deadline only after a read ends (at 1200 ms): it keeps the
                              slot past the second query's deadline, then times out itself */
    __atomic_store_n(&g_slow.started, 0, __ATOMIC_SEQ_CST);
    assert_int_equal(pthread_create(&ta, NULL, bg_run, &a), 0);
    while (!__atomic_load_n(&g_slow.started, __ATOMIC_SEQ_CST)) usleep(1000);
    promql_result r;
    assert_true(promql_exec_instant(e, x, 100000, NULL, &r) < 0);
    assert_int_equal(r.err, PROMQL_ERR_TIMEOUT);
    assert_string_equal(r.errmsg, "query timed out in query queue");
    pthread_join(ta, NULL);
    assert_true(a.rc < 0);
    promql_engine_stats_get(e, &st);
    assert_int_equal(st.running, 0);
    assert_int_equal(st.waiting, 0);
    assert_int_equal(st.queries, 4);
    assert_int_equal(st.queries_timed_out, 3);
    promql_expr_free(x);
    promql_engine_free(e);
    tsdb_head_close(h);
}

static void test_concurrent_queries(void **state) {
    (void)state;
    /* many threads on one engine, one parsed expression: same answers */
    tsdb_head *h = new_head(30, 300);
    promql_engine *e = engine(promql_storage_head(h), NULL);
    pq_expr *x = parse("topk(5, rate(up[5m])) or sum by (job) (up)");
    bg b[8];
    pthread_t t[8];
    for (int i = 0; i < 8; i++) {
        b[i] = (bg){e, x, 0, {0}};
        assert_int_equal(pthread_create(&t[i], NULL, bg_run, &b[i]), 0);
    }
    for (int i = 0; i < 8; i++) pthread_join(t[i], NULL);
    for (int i = 0; i < 8; i++) {
        assert_int_equal(b[i].rc, 0);
        assert_int_equal(b[i].r.nseries, b[0].r.nseries);
        for (size_t j = 0; j < b[i].r.nseries; j++) {
            assert_true(labels_equal(b[i].r.series[j].ls, b[0].r.series[j].ls));
            assert_memory_equal(&b[i].r.series[j].pts[0].v, &b[0].r.series[j].pts[0].v, 8);
        }
    }
    assert_int_equal(b[0].r.nseries, 6);
    for (int i = 0; i < 8; i++) promql_result_free(&b[i].r);
    promql_expr_free(x);
    promql_engine_free(e);
    tsdb_head_close(h);
}

static void four_threads(promql_opts *o) {
    o->threads = 4;
}

/* Worker threads give the same answers, bit for bit, as one thread. */
static void test_threads_same_answers(void **state) {
    (void)state;
    unsigned save = pq__stream_thread_min_steps;
    pq__stream_thread_min_steps = 1;
    tsdb_head *h = new_head(300, 400);
    promql_engine *e1 = engine(promql_storage_head(h), NULL),
                  *e4 = engine(promql_storage_head(h), four_threads);
    static const char *qs[] = {
        "rate(up[2m])",
        "sum by (job) (rate(up[5m]))",
        "avg(delta(up[3m] offset 1m))",
        "holt_winters(up[5m], 0.3, 0.7)",
        "quantile_over_time(0.9, up[10m])",
        "max_over_time(rate(up[2m])[10m:1m])",
        "predict_linear(up[5m], 600)",
        "last_over_time(up[1m])",
        "absent_over_time(up{instance=\"i007\"}[1m])",
    };
    for (size_t i = 0; i < sizeof qs / sizeof qs[0]; i++) {
        pq_expr *x = parse(qs[i]);
        promql_result a, b;
        assert_int_equal(promql_exec_range(e1, x, 0, 6000000, 30000, NULL, &a), 0);
        assert_int_equal(promql_exec_range(e4, x, 0, 6000000, 30000, NULL, &b), 0);
        assert_int_equal(a.nseries, b.nseries);
        for (size_t j = 0; j < a.nseries; j++) {
            assert_true(labels_equal(a.series[j].ls, b.series[j].ls));
            assert_int_equal(a.series[j].n, b.series[j].n);
            assert_memory_equal(a.series[j].pts, b.series[j].pts, a.series[j].n * sizeof(promql_point));
        }
        promql_result_free(&a);
        promql_result_free(&b);
        promql_expr_free(x);
    }
    /* an error in some series is the first series' error in both */
    pq_expr *x = parse("holt_winters(up[5m], 1.5, 0.7)");
    promql_result a, b;
    assert_true(promql_exec_range(e1, x, 0, 6000000, 30000, NULL, &a) < 0);
    assert_true(promql_exec_range(e4, x, 0, 6000000, 30000, NULL, &b) < 0);
    assert_string_equal(a.errmsg, b.errmsg);
    assert_string_equal(a.errmsg, "invalid smoothing factor. Expected: 0 < sf < 1, got: 1.500000");
    promql_expr_free(x);
    promql_engine_free(e1);
    promql_engine_free(e4);
    tsdb_head_close(h);
    pq__stream_thread_min_steps = save;
}

/* 2.42's own invariant (test.go's range mode): a range query's value at
 * each step is the instant query's at that time, here bit for bit, over
 * enough steps that whole 64-step words, streams, merges and worker
 * threads are all used. */
static void test_range_equals_instants(void **state) {
    (void)state;
    unsigned save = pq__stream_thread_min_steps;
    pq__stream_thread_min_steps = 1;
    tsdb_head *h = new_head(40, 500);
    promql_engine *e1 = engine(promql_storage_head(h), NULL),
                  *e3 = engine(promql_storage_head(h), four_threads);
    static const char *qs[] = {
        "sum(up)",
        "avg by (job) (up)",
        "max(rate(up[2m]))",
        "min by (instance) (up) - 3",
        "count(up > 5000)",
        "topk(3, up)",
        "quantile(0.3, up)",
        "stddev(up)",
        "sum(rate(up[5m])) / count(up)",
        "up / on(instance) group_left sum by (instance) (up)",
        "label_replace(up, \"instance\", \"x$1\", \"instance\", \"i00(7)\")",
        "max_over_time(sum(up)[7m:45s])",
        "sum(up offset 1m) or vector(1)",
    };
    int64_t start = 120000, step = 15000;
    size_t nsteps = 140;
    for (size_t i = 0; i < sizeof qs / sizeof qs[0]; i++) {
        pq_expr *x = parse(qs[i]);
        for (int which = 0; which < 2; which++) {
            promql_engine *e = which ? e3 : e1;
            promql_result rr;
            int rc = promql_exec_range(e, x, start, start + (int64_t)(nsteps - 1) * step, step, NULL, &rr);
            if (rc < 0) fprintf(stderr, "%s: %s\n", qs[i], rr.errmsg);
            assert_int_equal(rc, 0);
            size_t seen = 0;
            for (size_t k = 0; k < nsteps; k++) {
                int64_t t = start + (int64_t)k * step;
                promql_result ir;
                assert_int_equal(promql_exec_instant(e1, x, t, NULL, &ir), 0);
                size_t nat = 0;
                for (size_t j = 0; j < rr.nseries; j++)
                    for (size_t p = 0; p < rr.series[j].n; p++) {
                        if (rr.series[j].pts[p].t != t) continue;
                        nat++;
                        size_t m;
                        for (m = 0; m < ir.nseries; m++)
                            if (labels_equal(ir.series[m].ls, rr.series[j].ls)) break;
                        if (m == ir.nseries)
                            fprintf(stderr, "%s at %lld: extra series\n", qs[i], (long long)t);
                        assert_true(m < ir.nseries);
                        double a = rr.series[j].pts[p].v,
                               b = ir.type == PROMQL_SCALAR ? ir.scalar : ir.series[m].pts[0].v;
                        if (memcmp(&a, &b, 8) != 0)
                            fprintf(stderr, "%s at %lld: %.17g != %.17g\n", qs[i], (long long)t, a, b);
                        assert_memory_equal(&a, &b, 8);
                    }
                assert_int_equal(nat, ir.type == PROMQL_SCALAR ? 1 : ir.nseries);
                seen += nat;
                promql_result_free(&ir);
            }
            assert_true(seen > 0);
            promql_result_free(&rr);
        }
        promql_expr_free(x);
    }
    promql_engine_free(e1);
    promql_engine_free(e3);
    tsdb_head_close(h);
    pq__stream_thread_min_steps = save;
}

/* ---- benchmark (KELVIN_PROMQL_BENCH=1) -------------------------------------- */

/* The fleet dashboard's shape (bench/promql_bench.py) in a head: per node
 * 8 GPUs x 4 dcgm gauges + an energy counter, 16 CPUs x 4 modes of a CPU
 * counter, an 11-bucket histogram; one sample every 30 s for 24 h; range
 * queries over the 24 h at a 15 s step (5,761 steps). Prints the median
 * of 3 runs per query. KELVIN_PROMQL_BENCH_NODES (default 50),
 * KELVIN_PROMQL_BENCH_THREADS (engine threads, default 0). */
static uint64_t rnd_state = 88172645463325252ULL;
static uint64_t rnd(void) {
    rnd_state ^= rnd_state << 13;
    rnd_state ^= rnd_state >> 7;
    rnd_state ^= rnd_state << 17;
    return rnd_state;
}

static void bench_fill(tsdb_head *h, int nodes, int nsamples) {
    static const char *gauges[] = {"DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_MEMORY_TEMP", "DCGM_FI_DEV_GPU_UTIL",
                                   "DCGM_FI_DEV_FB_USED"};
    static const char *modes[] = {"idle", "user", "system", "iowait"};
    static const char *les[] = {"0.005", "0.01", "0.025", "0.05", "0.1", "0.25",
                                "0.5",   "1",    "2.5",   "5",    "+Inf"};
    for (int node = 0; node < nodes; node++) {
        tsdb_head_app *a = NULL;
        assert_int_equal(tsdb_head_app_new(h, &a), 0);
        char host[32], inst[48];
        snprintf(host, sizeof host, "node-%04d", node);
        snprintf(inst, sizeof inst, "node-%04d:9400", node);
        labels_set *ls[256];
        int kinds[256];
        int n = 0;
        for (int g = 0; g < 8; g++) {
            char gpu[8];
            snprintf(gpu, sizeof gpu, "%d", g);
            for (int m = 0; m < 5; m++) {
                const char *name = m < 4 ? gauges[m] : "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION";
                assert_int_equal(labels_from_cstrs(&ls[n], "__name__", name, "Hostname", host, "gpu", gpu,
                                                   "instance", inst, "job", "dcgm", NULL),
                                 0);
                kinds[n++] = m < 4 ? 0 : 1;
            }
        }
        for (int c = 0; c < 16; c++) {
            char cpu[8];
            snprintf(cpu, sizeof cpu, "%d", c);
            for (int m = 0; m < 4; m++) {
                assert_int_equal(labels_from_cstrs(&ls[n], "__name__", "node_cpu_seconds_total", "cpu", cpu,
                                                   "instance", inst, "job", "node", "mode", modes[m], NULL),
                                 0);
                kinds[n++] = 1;
            }
        }
        for (int b = 0; b < 11; b++) {
            assert_int_equal(labels_from_cstrs(&ls[n], "__name__", "app_request_duration_seconds_bucket",
                                               "le", les[b], "instance", inst, "job", "app", NULL),
                             0);
            kinds[n++] = 2 + b;
        }
        double val[256];
        for (int i = 0; i < n; i++) val[i] = (double)(rnd() % 1000);
        int64_t off = (int64_t)(rnd() % 30000);
        for (int s = 0; s < nsamples; s++) {
            for (int i = 0; i < n; i++) {
                double step = (double)(rnd() % 1000) / 100;
                if (kinds[i] == 0)
                    val[i] = 50 + (double)(rnd() % 400) / 10;
                else if (kinds[i] == 1)
                    val[i] += step;
                else
                    val[i] += step * (kinds[i] - 1);
                assert_int_equal(tsdb_head_app_add(a, ls[i], off + (int64_t)s * 30000, val[i]), 0);
            }
            if (s % 64 == 63) assert_int_equal(tsdb_head_app_commit(a, NULL), 0);
        }
        assert_int_equal(tsdb_head_app_commit(a, NULL), 0);
        tsdb_head_app_free(a);
        for (int i = 0; i < n; i++) labels_unref(ls[i]);
    }
}

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static void test_bench(void **state) {
    (void)state;
    if (!getenv("KELVIN_PROMQL_BENCH")) return;
    int nodes = getenv("KELVIN_PROMQL_BENCH_NODES") ? atoi(getenv("KELVIN_PROMQL_BENCH_NODES")) : 50;
    unsigned threads =
        getenv("KELVIN_PROMQL_BENCH_THREADS") ? (unsigned)atoi(getenv("KELVIN_PROMQL_BENCH_THREADS")) : 0;
    const char *only = getenv("KELVIN_PROMQL_BENCH_QUERY");
    int nsamples = 2880;
    tsdb_head_opts o;
    memset(&o, 0, sizeof o);
    tsdb_head *h = NULL;
    char err[256];
    assert_int_equal(tsdb_head_open(&o, &h, NULL, err, sizeof err), 0);
    int64_t t0 = base_mono_ns();
    bench_fill(h, nodes, nsamples);
    fprintf(stderr, "bench: %d nodes, %d series, %d samples each, loaded in %.1f s\n", nodes, nodes * 115,
            nsamples, (double)(base_mono_ns() - t0) / 1e9);
    promql_opts po;
    promql_opts_default(&po);
    po.max_samples = 500000000;
    po.threads = threads;
    promql_engine *e = NULL;
    assert_int_equal(promql_engine_new(&po, promql_storage_head(h), &e), 0);
    static const char *qs[] = {
        "avg by (Hostname) (DCGM_FI_DEV_GPU_TEMP)",
        "max by (Hostname) (DCGM_FI_DEV_MEMORY_TEMP)",
        "sum by (Hostname) (rate(DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION[5m]))",
        "sum by (instance) (rate(node_cpu_seconds_total{mode!=\"idle\"}[5m]))",
        "sum(rate(node_cpu_seconds_total[5m]))",
        "topk(5, DCGM_FI_DEV_MEMORY_TEMP)",
        "histogram_quantile(0.99, sum by (le) (rate(app_request_duration_seconds_bucket[5m])))",
        "predict_linear(DCGM_FI_DEV_FB_USED[1h], 4*3600)",
        "avg(DCGM_FI_DEV_GPU_UTIL)",
        "DCGM_FI_DEV_GPU_TEMP",
        "rate(node_cpu_seconds_total[5m])",
    };
    int64_t end = (int64_t)(nsamples - 1) * 30000;
    for (size_t i = 0; i < sizeof qs / sizeof qs[0]; i++) {
        if (only && !strstr(qs[i], only)) continue;
        pq_expr *x = parse(qs[i]);
        int64_t ts[3], cpu[3];
        int reps = getenv("KELVIN_PROMQL_BENCH_REPS") ? atoi(getenv("KELVIN_PROMQL_BENCH_REPS")) : 1;
        size_t nser = 0, npts = 0;
        uint64_t peak = 0;
        for (int run = 0; run < 3 * reps; run++) {
            promql_result r;
            int64_t a = base_mono_ns(), ac = base_process_cpu_ns();
            int rc = promql_exec_range(e, x, 0, end, 15000, NULL, &r);
            ts[run % 3] = base_mono_ns() - a;
            cpu[run % 3] = base_process_cpu_ns() - ac;
            if (rc < 0) fprintf(stderr, "  %s: %s\n", qs[i], r.errmsg);
            assert_int_equal(rc, 0);
            nser = r.nseries;
            npts = 0;
            for (size_t j = 0; j < r.nseries; j++) npts += r.series[j].n;
            peak = r.peak_samples;
            promql_result_free(&r);
        }
        qsort(ts, 3, sizeof ts[0], cmp_i64);
        qsort(cpu, 3, sizeof cpu[0], cmp_i64);
        fprintf(stderr, "  %8.1f ms (cpu %7.1f ms) %5zu series %8zu points peak %9llu  %s\n",
                (double)ts[1] / 1e6, (double)cpu[1] / 1e6, nser, npts, (unsigned long long)peak, qs[i]);
        promql_expr_free(x);
    }
    promql_engine_free(e);
    tsdb_head_close(h);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_opts_default),
        cmocka_unit_test(test_storage_adapters),
        cmocka_unit_test(test_result_shapes),
        cmocka_unit_test(test_max_samples),
        cmocka_unit_test(test_timeout_in_evaluation),
        cmocka_unit_test(test_cancel),
        cmocka_unit_test(test_concurrency_gate),
        cmocka_unit_test(test_concurrent_queries),
        cmocka_unit_test(test_threads_same_answers),
        cmocka_unit_test(test_range_equals_instants),
        cmocka_unit_test(test_bench),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
