/* tests/unit/tsdb/head.c -- the head (src/tsdb/head.c): append and select
 * with every matcher type (=, !=, =~, !~, empty-matching forms, literal
 * alternations), time ranges across chunk cuts, rejection counters
 * (out_of_order, duplicate, noop, too_old, unknown_ref), forced hash
 * collisions, label names/values, GC, restart from the WAL, checkpoint +
 * restart, concurrent appenders and readers (run under ASan here; build
 * with -fsanitize=thread to run it under TSan), and with
 * parallel WAL replay (several segments, a checkpoint, aliases from GC)
 * compared with the sequential one, exact round trips of adversarial
 * values and timestamps (open chunk, closed chunks, WAL, checkpoint), and
 * the cardinality report (tsdb_head_postings_stats: the four top lists,
 * ties, limits, after new series and GC), and with KELVIN_TSDB_BENCH=1
 * the measurements: appends/s, bytes per series, replay time. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "tmpdir.h"

#include "base/buf.h"
#include "base/err.h"
#include "labels/labels.h"
#include "tsdb/head.h"
#include "tsdb/head_int.h"

static tsdb_head *hopen(const char *dir) {
    tsdb_head_opts o = {.wal_dir = dir};
    tsdb_head *h;
    char err[256];
    assert_int_equal(tsdb_head_open(&o, &h, NULL, err, sizeof err), 0);
    return h;
}

static labels_set *mk(const char *name, const char *job, const char *gpu) {
    labels_set *ls;
    if (gpu)
        assert_int_equal(labels_from_cstrs(&ls, "__name__", name, "gpu", gpu, "job", job, NULL), 0);
    else
        assert_int_equal(labels_from_cstrs(&ls, "__name__", name, "job", job, NULL), 0);
    return ls;
}

static labels_matcher *mt(labels_match_type t, const char *n, const char *v) {
    labels_matcher *m;
    assert_int_equal(labels_matcher_new(t, base_str_c(n), base_str_c(v), &m, NULL, 0), 0);
    return m;
}

/* Number of series a select returns, and their total samples. */
static size_t sel(tsdb_head *h, labels_matcher **ms, size_t n, int64_t mint, int64_t maxt,
                  size_t *ret_samples) {
    tsdb_series_set *ss;
    assert_int_equal(tsdb_head_select(h, ms, n, mint, maxt, &ss), 0);
    size_t k = 0, ns = 0;
    const labels_set *prev = NULL;
    while (tsdb_series_set_next(ss) == 1) {
        const labels_set *ls = tsdb_series_set_labels(ss);
        if (prev) assert_true(labels_cmp(prev, ls) < 0);
        prev = ls;
        int64_t t, lt = INT64_MIN;
        double v;
        int r;
        while ((r = tsdb_series_set_sample(ss, &t, &v)) == 1) {
            assert_true(t >= mint && t <= maxt && t > lt);
            lt = t;
            ns++;
        }
        assert_int_equal(r, 0);
        k++;
    }
    tsdb_series_set_free(ss);
    for (size_t i = 0; i < n; i++) labels_matcher_free(ms[i]);
    if (ret_samples) *ret_samples = ns;
    return k;
}

/* 3 metrics x 2 jobs x 4 gpus + 2 series without gpu; 300 samples each. */
static void fill(tsdb_head *h) {
    static const char *names[] = {"temp", "power", "util"}, *jobs[] = {"dcgm", "node"},
                      *gpus[] = {"0", "1", "2", "3"};
    tsdb_head_app *a;
    assert_int_equal(tsdb_head_app_new(h, &a), 0);
    labels_set *ls[26];
    size_t n = 0;
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 2; j++)
            for (int g = 0; g < 4; g++) ls[n++] = mk(names[i], jobs[j], gpus[g]);
    ls[n++] = mk("up", "dcgm", NULL);
    ls[n++] = mk("up", "node", NULL);
    for (int64_t t = 1; t <= 300; t++) {
        for (size_t i = 0; i < n; i++)
            assert_int_equal(tsdb_head_app_add(a, ls[i], t * 1000, (double)(t + i)), 0);
        tsdb_append_result r;
        assert_int_equal(tsdb_head_app_commit(a, &r), 0);
        assert_int_equal(r.appended, n);
        assert_int_equal(r.series_created, t == 1 ? n : 0);
    }
    for (size_t i = 0; i < n; i++) labels_unref(ls[i]);
    tsdb_head_app_free(a);
}

static void check_matchers(tsdb_head *h) {
    size_t ns;
    assert_int_equal(tsdb_head_series_count(h), 26);
    assert_int_equal(sel(h, NULL, 0, INT64_MIN, INT64_MAX, &ns), 26);
    assert_int_equal(ns, 26 * 300);
    labels_matcher *m[3];
    m[0] = mt(LABELS_MATCH_EQ, "__name__", "temp");
    assert_int_equal(sel(h, m, 1, INT64_MIN, INT64_MAX, NULL), 8);
    m[0] = mt(LABELS_MATCH_EQ, "__name__", "temp");
    m[1] = mt(LABELS_MATCH_NEQ, "gpu", "0");
    assert_int_equal(sel(h, m, 2, INT64_MIN, INT64_MAX, NULL), 6);
    m[0] = mt(LABELS_MATCH_RE, "__name__", "temp|power");
    m[1] = mt(LABELS_MATCH_RE, "gpu", "[12]");
    m[2] = mt(LABELS_MATCH_EQ, "job", "node");
    assert_int_equal(sel(h, m, 3, INT64_MIN, INT64_MAX, NULL), 4);
    m[0] = mt(LABELS_MATCH_NRE, "__name__", "t.*|p.*");
    assert_int_equal(sel(h, m, 1, INT64_MIN, INT64_MAX, NULL), 10); /* util x8 + up x2 */
    m[0] = mt(LABELS_MATCH_EQ, "gpu", "");                          /* series without gpu */
    assert_int_equal(sel(h, m, 1, INT64_MIN, INT64_MAX, NULL), 2);
    m[0] = mt(LABELS_MATCH_NEQ, "gpu", "3"); /* includes series without gpu */
    assert_int_equal(sel(h, m, 1, INT64_MIN, INT64_MAX, NULL), 20);
    m[0] = mt(LABELS_MATCH_RE, "gpu", ".+");
    assert_int_equal(sel(h, m, 1, INT64_MIN, INT64_MAX, NULL), 24);
    m[0] = mt(LABELS_MATCH_RE, "nosuch", ".*");
    assert_int_equal(sel(h, m, 1, INT64_MIN, INT64_MAX, NULL), 26);
    m[0] = mt(LABELS_MATCH_EQ, "nosuch", "x");
    assert_int_equal(sel(h, m, 1, INT64_MIN, INT64_MAX, NULL), 0);
    m[0] = mt(LABELS_MATCH_EQ, "job", "nosuchvalue");
    assert_int_equal(sel(h, m, 1, INT64_MIN, INT64_MAX, NULL), 0);
    /* time ranges, across chunk boundaries (120 samples a chunk) */
    m[0] = mt(LABELS_MATCH_EQ, "__name__", "up");
    assert_int_equal(sel(h, m, 1, 119000, 242000, &ns), 2);
    assert_int_equal(ns, 2 * 124);
    m[0] = mt(LABELS_MATCH_EQ, "__name__", "up");
    assert_int_equal(sel(h, m, 1, 301000, 400000, &ns), 0);
    m[0] = mt(LABELS_MATCH_EQ, "__name__", "up");
    assert_int_equal(sel(h, m, 1, 300000, 300000, &ns), 2);
    assert_int_equal(ns, 2);
    /* values come back */
    m[0] = mt(LABELS_MATCH_EQ, "__name__", "up");
    m[1] = mt(LABELS_MATCH_EQ, "job", "node");
    tsdb_series_set *ss;
    assert_int_equal(tsdb_head_select(h, m, 2, 150000, 150000, &ss), 0);
    assert_int_equal(tsdb_series_set_next(ss), 1);
    int64_t t;
    double v;
    assert_int_equal(tsdb_series_set_sample(ss, &t, &v), 1);
    assert_int_equal(t, 150000);
    assert_true(v == 150.0 + 25);
    assert_int_equal(tsdb_series_set_sample(ss, &t, &v), 0);
    assert_int_equal(tsdb_series_set_next(ss), 0);
    tsdb_series_set_free(ss);
    labels_matcher_free(m[0]);
    labels_matcher_free(m[1]);
    /* label names and values */
    tsdb_strs *s;
    assert_int_equal(tsdb_head_label_names(h, NULL, 0, INT64_MIN, INT64_MAX, &s), 0);
    assert_int_equal(s->n, 3);
    assert_true(base_str_eqc(s->v[0], "__name__") && base_str_eqc(s->v[1], "gpu") &&
                base_str_eqc(s->v[2], "job"));
    tsdb_strs_free(s);
    assert_int_equal(tsdb_head_label_values(h, base_str_c("__name__"), NULL, 0, INT64_MIN, INT64_MAX, &s), 0);
    assert_int_equal(s->n, 4);
    assert_true(base_str_eqc(s->v[0], "power") && base_str_eqc(s->v[3], "util"));
    tsdb_strs_free(s);
    m[0] = mt(LABELS_MATCH_EQ, "__name__", "up");
    assert_int_equal(tsdb_head_label_names(h, m, 1, INT64_MIN, INT64_MAX, &s), 0);
    assert_int_equal(s->n, 2);
    tsdb_strs_free(s);
    assert_int_equal(tsdb_head_label_values(h, base_str_c("gpu"), m, 1, INT64_MIN, INT64_MAX, &s), 0);
    assert_int_equal(s->n, 0);
    tsdb_strs_free(s);
    labels_matcher_free(m[0]);
}

static void test_select(void **st) {
    (void)st;
    tsdb_head *h = hopen(NULL);
    fill(h);
    check_matchers(h);
    tsdb_head_stats hs;
    tsdb_head_stats_get(h, &hs);
    assert_int_equal(hs.series, 26);
    assert_int_equal(hs.samples, 26 * 300);
    assert_int_equal(hs.chunks, 26 * 2);
    assert_int_equal(hs.mint, 1000);
    assert_int_equal(hs.maxt, 300000);
    assert_true(hs.bytes_total > 0);
    tsdb_head_close(h);
}

static void test_rejections(void **st) {
    (void)st;
    tsdb_head *h = hopen(NULL);
    tsdb_head_app *a;
    assert_int_equal(tsdb_head_app_new(h, &a), 0);
    labels_set *ls = mk("m", "j", NULL);
    tsdb_append_result r;
    assert_int_equal(tsdb_head_app_add(a, ls, 100, 1.0), 0);
    assert_int_equal(tsdb_head_app_add(a, ls, 200, 2.0), 0);
    assert_int_equal(tsdb_head_app_add(a, ls, 150, 9.0), 0); /* out of order */
    assert_int_equal(tsdb_head_app_add(a, ls, 200, 2.0), 0); /* same value: no-op */
    assert_int_equal(tsdb_head_app_add(a, ls, 200, 3.0), 0); /* duplicate */
    assert_int_equal(tsdb_head_app_add_ref(a, 999, 300, 1.0), 0);
    assert_int_equal(tsdb_head_app_commit(a, &r), 0);
    assert_int_equal(r.appended, 2);
    assert_int_equal(r.out_of_order, 1);
    assert_int_equal(r.noop, 1);
    assert_int_equal(r.duplicate, 1);
    assert_int_equal(r.unknown_ref, 1);
    uint64_t ref;
    assert_int_equal(tsdb_head_ref(h, ls, &ref), 0);
    /* the stale marker survives bit for bit */
    uint64_t stale = 0x7ff0000000000002ull;
    double sv;
    memcpy(&sv, &stale, 8);
    assert_int_equal(tsdb_head_app_add_ref(a, ref, 300, sv), 0);
    assert_int_equal(tsdb_head_app_commit(a, &r), 0);
    assert_int_equal(r.appended, 1);
    /* GC at 250: keeps the series (sample at 300), rejects older appends */
    uint64_t removed;
    assert_int_equal(tsdb_head_gc(h, 250, &removed), 0);
    assert_int_equal(removed, 0);
    assert_int_equal(tsdb_head_app_add_ref(a, ref, 240, 1.0), 0);
    assert_int_equal(tsdb_head_app_commit(a, &r), 0);
    assert_int_equal(r.too_old, 1);
    tsdb_head_stats hs;
    tsdb_head_stats_get(h, &hs);
    assert_int_equal(hs.totals.out_of_order, 1);
    assert_int_equal(hs.totals.too_old, 1);
    assert_int_equal(hs.totals.duplicate, 1);
    tsdb_series_set *ss;
    assert_int_equal(tsdb_head_select(h, NULL, 0, 300, 300, &ss), 0);
    assert_int_equal(tsdb_series_set_next(ss), 1);
    int64_t t;
    double v;
    assert_int_equal(tsdb_series_set_sample(ss, &t, &v), 1);
    assert_memory_equal(&v, &stale, 8);
    tsdb_series_set_free(ss);
    /* GC past the last sample removes the series; appending by labels
     * recreates it with a new ref, by the old ref fails */
    assert_int_equal(tsdb_head_gc(h, 1000, &removed), 0);
    assert_int_equal(removed, 1);
    assert_int_equal(tsdb_head_series_count(h), 0);
    assert_int_equal(tsdb_head_app_add_ref(a, ref, 2000, 1.0), 0);
    assert_int_equal(tsdb_head_app_add(a, ls, 2000, 1.0), 0);
    assert_int_equal(tsdb_head_app_commit(a, &r), 0);
    assert_int_equal(r.unknown_ref, 1);
    assert_int_equal(r.series_created, 1);
    uint64_t ref2;
    assert_int_equal(tsdb_head_ref(h, ls, &ref2), 0);
    assert_true(ref2 != ref);
    tsdb_strs *s;
    assert_int_equal(tsdb_head_label_names(h, NULL, 0, INT64_MIN, INT64_MAX, &s), 0);
    assert_int_equal(s->n, 2);
    tsdb_strs_free(s);
    labels_unref(ls);
    tsdb_head_app_free(a);
    tsdb_head_close(h);
}

/* Pinned series: samples land as by ref; a pin outlives a garbage
 * collection of its series (memory kept, samples counted unknown_ref). */
static void test_pinned(void **st) {
    (void)st;
    tsdb_head *h = hopen(NULL);
    tsdb_head_app *a;
    assert_int_equal(tsdb_head_app_new(h, &a), 0);
    labels_set *ls = mk("m", "p", NULL);
    tsdb_append_result r;
    assert_null(tsdb_head_pin_labels(h, ls));
    assert_int_equal(tsdb_head_app_add(a, ls, 100, 1.0), 0);
    assert_int_equal(tsdb_head_app_commit(a, &r), 0);
    tsdb_head_series *p = tsdb_head_pin_labels(h, ls);
    assert_non_null(p);
    uint64_t ref;
    assert_int_equal(tsdb_head_ref(h, ls, &ref), 0);
    assert_int_equal(tsdb_head_series_ref(p), ref);
    tsdb_head_series *p2 = tsdb_head_pin(h, ref);
    assert_ptr_equal(p2, p);
    tsdb_head_unpin(p2);
    assert_null(tsdb_head_pin(h, ref + 1000));
    for (int i = 2; i <= 5; i++) assert_int_equal(tsdb_head_app_add_pinned(a, p, i * 100, i), 0);
    assert_int_equal(tsdb_head_app_add_pinned(a, p, 500, 9.0), 0); /* duplicate */
    assert_int_equal(tsdb_head_app_commit(a, &r), 0);
    assert_int_equal(r.appended, 4);
    assert_int_equal(r.duplicate, 1);
    /* rolled back: nothing stored, the pin still good */
    assert_int_equal(tsdb_head_app_add_pinned(a, p, 600, 6.0), 0);
    tsdb_head_app_rollback(a);
    tsdb_series_set *ss;
    assert_int_equal(tsdb_head_select(h, NULL, 0, 0, 1000, &ss), 0);
    assert_int_equal(tsdb_series_set_next(ss), 1);
    int64_t t;
    double v;
    int k = 0;
    while (tsdb_series_set_sample(ss, &t, &v) == 1) {
        k++;
        assert_int_equal(t, k * 100);
        assert_true(v == (double)k);
    }
    assert_int_equal(k, 5);
    tsdb_series_set_free(ss);
    uint64_t removed;
    assert_int_equal(tsdb_head_gc(h, 10000, &removed), 0);
    assert_int_equal(removed, 1);
    assert_int_equal(tsdb_head_app_add_pinned(a, p, 20000, 1.0), 0);
    assert_int_equal(tsdb_head_app_commit(a, &r), 0);
    assert_int_equal(r.unknown_ref, 1);
    assert_int_equal(r.appended, 0);
    tsdb_head_unpin(p);
    labels_unref(ls);
    tsdb_head_app_free(a);
    tsdb_head_close(h);
}

static void test_collisions(void **st) {
    (void)st;
    tsdb__head_hash_mask = 3; /* 4 distinct hashes for 26 series */
    tsdb_head *h = hopen(NULL);
    fill(h);
    check_matchers(h);
    uint64_t removed;
    assert_int_equal(tsdb_head_gc(h, 1000000, &removed), 0);
    assert_int_equal(removed, 26);
    tsdb_head_close(h);
    tsdb__head_hash_mask = ~(uint64_t)0;
}

static void test_restart_and_checkpoint(void **st) {
    (void)st;
    char *dir = kelvin_tmpdir("head"), err[256];
    tsdb_head *h = hopen(dir);
    fill(h);
    tsdb_head_close(h);
    h = hopen(dir);
    check_matchers(h);
    /* more samples after restart continue the same series */
    tsdb_head_app *a;
    assert_int_equal(tsdb_head_app_new(h, &a), 0);
    labels_set *ls = mk("up", "node", NULL);
    assert_int_equal(tsdb_head_app_add(a, ls, 301000, 1.0), 0);
    tsdb_append_result r;
    assert_int_equal(tsdb_head_app_commit(a, &r), 0);
    assert_int_equal(r.series_created, 0);
    assert_int_equal(r.appended, 1);
    /* checkpoint keeping samples from 200 s on, then more appends */
    assert_int_equal(tsdb_head_checkpoint(h, 200000, err, sizeof err), 0);
    assert_int_equal(tsdb_head_app_add(a, ls, 302000, 2.0), 0);
    assert_int_equal(tsdb_head_app_commit(a, &r), 0);
    tsdb_head_app_free(a);
    tsdb_head_close(h);
    tsdb_wal_report rep;
    tsdb_head_opts o = {.wal_dir = dir};
    assert_int_equal(tsdb_head_open(&o, &h, &rep, err, sizeof err), 0);
    assert_true(rep.checkpoint > 0);
    assert_int_equal(rep.corruptions, 0);
    assert_int_equal(tsdb_head_series_count(h), 26);
    size_t ns;
    assert_int_equal(sel(h, NULL, 0, INT64_MIN, INT64_MAX, &ns), 26);
    /* whole chunks (120 samples) that end at or after 200 s: 121..300 s,
     * plus 301 and 302 s */
    assert_int_equal(ns, 26 * 180 + 2);
    tsdb_head_stats hs;
    tsdb_head_stats_get(h, &hs);
    assert_int_equal(hs.replay_rejected, 0);
    labels_unref(ls);
    tsdb_head_close(h);
    kelvin_rm_rf(dir);
    free(dir);
}

/* ---- concurrency -------------------------------------------------------- */

enum { NW = 4, NSER = 200, NT = 60 };
typedef struct warg {
    tsdb_head *h;
    int id;
    _Atomic int *stop;
} warg;

static void *app_thread(void *p) {
    warg *w = p;
    tsdb_head_app *a;
    if (tsdb_head_app_new(w->h, &a)) abort();
    labels_set *ls[NSER];
    char job[16], gpu[16];
    for (int i = 0; i < NSER; i++) {
        snprintf(job, sizeof job, "w%d", w->id);
        snprintf(gpu, sizeof gpu, "%d", i);
        if (labels_from_cstrs(&ls[i], "__name__", "m", "gpu", gpu, "job", job, NULL)) abort();
    }
    for (int t = 1; t <= NT; t++) {
        for (int i = 0; i < NSER; i++)
            if (tsdb_head_app_add(a, ls[i], t, (double)t)) abort();
        tsdb_append_result r;
        if (tsdb_head_app_commit(a, &r) || r.appended != NSER) abort();
    }
    for (int i = 0; i < NSER; i++) labels_unref(ls[i]);
    tsdb_head_app_free(a);
    return NULL;
}

static void *read_thread(void *p) {
    warg *w = p;
    while (!atomic_load(w->stop)) {
        tsdb_series_set *ss;
        if (tsdb_head_select(w->h, NULL, 0, INT64_MIN, INT64_MAX, &ss)) abort();
        while (tsdb_series_set_next(ss) == 1) {
            int64_t t, lt = 0;
            double v;
            while (tsdb_series_set_sample(ss, &t, &v) == 1) {
                if (t != lt + 1 || v != (double)t) abort();
                lt = t;
            }
        }
        tsdb_series_set_free(ss);
        tsdb_strs *s;
        if (tsdb_head_label_values(w->h, base_str_c("job"), NULL, 0, INT64_MIN, INT64_MAX, &s)) abort();
        tsdb_strs_free(s);
        tsdb_head_stats hs;
        tsdb_head_stats_get(w->h, &hs);
    }
    labels_thread_cleanup();
    return NULL;
}

static void test_concurrency(void **st) {
    (void)st;
    char *dir = kelvin_tmpdir("head");
    tsdb_head *h = hopen(dir);
    _Atomic int stop = 0;
    pthread_t th[NW + 2];
    warg w[NW + 2];
    for (int i = 0; i < NW + 2; i++) {
        w[i] = (warg){h, i, &stop};
        pthread_create(&th[i], NULL, i < NW ? app_thread : read_thread, &w[i]);
    }
    for (int i = 0; i < NW; i++) pthread_join(th[i], NULL);
    atomic_store(&stop, 1);
    for (int i = NW; i < NW + 2; i++) pthread_join(th[i], NULL);
    size_t ns;
    assert_int_equal(sel(h, NULL, 0, INT64_MIN, INT64_MAX, &ns), NW * NSER);
    assert_int_equal(ns, NW * NSER * NT);
    tsdb_head_close(h);
    h = hopen(dir);
    assert_int_equal(sel(h, NULL, 0, INT64_MIN, INT64_MAX, &ns), NW * NSER);
    assert_int_equal(ns, NW * NSER * NT);
    tsdb_head_close(h);
    kelvin_rm_rf(dir);
    free(dir);
}

/* ---- parallel replay ---------------------------------------------------- */

/* Everything a select of the whole head returns, as bytes: per series its
 * labels hash, ref and samples, in label order; then the stats. */
static void dump(tsdb_head *h, base_buf *out) {
    tsdb_series_set *ss;
    assert_int_equal(tsdb_head_select(h, NULL, 0, INT64_MIN, INT64_MAX, &ss), 0);
    while (tsdb_series_set_next(ss) == 1) {
        uint64_t v[2] = {labels_hash(tsdb_series_set_labels(ss)), tsdb_series_set_ref(ss)};
        base_buf_append(out, v, sizeof v);
        int64_t t;
        double x;
        int r;
        while ((r = tsdb_series_set_sample(ss, &t, &x)) == 1) {
            base_buf_append(out, &t, sizeof t);
            base_buf_append(out, &x, sizeof x);
        }
        assert_int_equal(r, 0);
    }
    tsdb_series_set_free(ss);
    tsdb_head_stats hs;
    tsdb_head_stats_get(h, &hs);
    int64_t st[] = {(int64_t)hs.series,
                    (int64_t)hs.chunks,
                    (int64_t)hs.samples,
                    (int64_t)hs.replay_rejected,
                    hs.mint,
                    hs.maxt};
    base_buf_append(out, st, sizeof st);
    assert_int_equal(base_buf_err(out), 0);
}

/* Samples t in [from, to] (seconds) for series [lo, hi) of "rp", series
 * i only while i % 7 != 3 or t <= stop (those stop early, for GC). */
static void rp_fill(tsdb_head *h, int lo, int hi, int64_t from, int64_t to, int64_t stop) {
    tsdb_head_app *a;
    assert_int_equal(tsdb_head_app_new(h, &a), 0);
    char buf[16];
    for (int64_t t = from; t <= to; t++) {
        /* new series appear over time: series records between samples */
        for (int i = lo; i < hi; i++) {
            if (i % 7 == 3 && t > stop) continue;
            if (t < from + i % 5) continue;
            labels_set *ls;
            snprintf(buf, sizeof buf, "%d", i);
            assert_int_equal(labels_from_cstrs(&ls, "__name__", "rp", "i", buf, NULL), 0);
            assert_int_equal(tsdb_head_app_add(a, ls, t * 1000, (double)(t * 31 + i)), 0);
            labels_unref(ls);
            if (i % 97 == 96) assert_int_equal(tsdb_head_app_commit(a, NULL), 0);
        }
        assert_int_equal(tsdb_head_app_commit(a, NULL), 0);
    }
    tsdb_head_app_free(a);
}

static void test_parallel_replay(void **st) {
    (void)st;
    char *dir = kelvin_tmpdir("head"), err[256];
    tsdb_head_opts o = {.wal_dir = dir, .wal = {.segment_size = 2048}, .chunk_samples = 16};
    tsdb_head *h;
    uint64_t removed;
    assert_int_equal(tsdb_head_open(&o, &h, NULL, err, sizeof err), 0);
    rp_fill(h, 0, 300, 1, 40, 10);
    /* series i % 7 == 3 stopped at 10 s: GC removes them, they come back
     * with new refs (aliases on replay until the checkpoint) */
    assert_int_equal(tsdb_head_gc(h, 20000, &removed), 0);
    assert_true(removed > 0);
    rp_fill(h, 0, 300, 41, 60, 50);
    assert_int_equal(tsdb_head_checkpoint(h, 45000, err, sizeof err), 0);
    rp_fill(h, 100, 400, 61, 90, 70);
    assert_int_equal(tsdb_head_gc(h, 80000, &removed), 0);
    assert_true(removed > 0);
    rp_fill(h, 0, 400, 91, 120, 200);
    tsdb_head_close(h);

    base_buf want = BASE_BUF_INIT, got = BASE_BUF_INIT;
    tsdb_wal_report rep;
    tsdb__head_replay_threads = 1;
    assert_int_equal(tsdb_head_open(&o, &h, &rep, err, sizeof err), 0);
    assert_true(rep.checkpoint > 0);
    assert_true(rep.segments > 3);
    assert_int_equal(rep.corruptions, 0);
    dump(h, &want);
    assert_int_equal(tsdb_head_series_count(h), 400);
    tsdb_head_close(h);
    for (int n = 2; n <= 5; n++) {
        tsdb__head_replay_threads = n;
        assert_int_equal(tsdb_head_open(&o, &h, &rep, err, sizeof err), 0);
        base_buf_reset(&got);
        dump(h, &got);
        assert_int_equal(got.len, want.len);
        assert_memory_equal(got.data, want.data, want.len);
        tsdb_head_close(h);
    }
    tsdb__head_replay_threads = 0;
    base_buf_free(&want);
    base_buf_free(&got);
    kelvin_rm_rf(dir);
    free(dir);
}

/* ---- exact round trips ------------------------------------------------- */

/* Every value bit pattern and timestamp comes back exactly: from the open
 * chunk (the head's staging stream), from closed chunks, after a restart
 * from the WAL and after a checkpoint. */
static const uint64_t rt_bits[] = {
    0x7ff0000000000002ull, /* stale marker */
    0x7ff8000000000000ull, /* quiet NaN */
    0xfff8000000000001ull, /* negative NaN with payload */
    0x7ff0000000000001ull, /* signalling NaN */
    0x7fffffffffffffffull, /* NaN, all payload bits */
    0x7ff0000000000000ull, /* +Inf */
    0xfff0000000000000ull, /* -Inf */
    0x8000000000000000ull, /* -0.0 */
    0x0000000000000000ull, /* +0.0 */
    0x0000000000000001ull, /* smallest denormal */
    0x000fffffffffffffull, /* largest denormal */
    0x7fefffffffffffffull, /* DBL_MAX */
    0x4044000000000000ull, /* 40 */
    0x4044800000000000ull, /* 41 */
    0x3fb999999999999aull, /* 0.1 */
};
#define RT_N 600

static int64_t rt_times[RT_N];

/* Huge jumps at both ends, steady 15 s steps, jitter, 1 ms steps, and
 * jumps over UINT32_MAX ms (which cut a chunk early). */
static int64_t rt_time(int i) {
    if (!rt_times[1]) {
        static const int64_t head[] = {INT64_MIN, INT64_MIN + 1,   -((int64_t)1 << 62), -1, 0,
                                       1,         (int64_t)1 << 40};
        int k = 0;
        for (; k < 7; k++) rt_times[k] = head[k];
        for (; k < RT_N - 3; k++) {
            int64_t step = k % 7 == 0    ? 15000 + (k % 3) * 7 - 5 /* jitter: 8-bit dod */
                           : k % 23 == 0 ? 1                       /* 16-bit dod */
                           : k % 41 == 0 ? 1000000                 /* 24-bit dod */
                           : k % 59 == 0 ? (int64_t)1 << 31        /* 64-bit dod */
                           : k % 97 == 0 ? (int64_t)1 << 33        /* over UINT32_MAX: cut */
                                         : 15000;
            rt_times[k] = rt_times[k - 1] + step;
        }
        for (; k < RT_N; k++) rt_times[k] = INT64_MAX - (RT_N - 1 - k) * 1000;
    }
    return rt_times[i];
}

static uint64_t rt_value(int i) {
    return i % 5 == 0 ? rt_bits[(i / 5) % (sizeof rt_bits / sizeof *rt_bits)]
                      : 0x4044000000000000ull + (uint64_t)(i % 13) * 0x0000100000000000ull;
}

/* Index of the first sample of the head chunk that holds sample i: the
 * head cuts at 120 samples, or before a chunk would span > UINT32_MAX ms. */
static int rt_chunk_start(int i) {
    int start = 0, n = 0;
    for (int k = 0; k <= i; k++) {
        if (n >= 120 || (n && (uint64_t)rt_time(k) - (uint64_t)rt_time(start) > UINT32_MAX)) {
            start = k;
            n = 0;
        }
        n++;
    }
    return start;
}

/* The series holds samples from..upto-1 exactly. */
static void rt_check(tsdb_head *h, int upto, int from) {
    tsdb_series_set *ss;
    assert_int_equal(tsdb_head_select(h, NULL, 0, INT64_MIN, INT64_MAX, &ss), 0);
    assert_int_equal(tsdb_series_set_next(ss), 1);
    int i = from;
    int64_t t;
    double v;
    int r;
    while ((r = tsdb_series_set_sample(ss, &t, &v)) == 1) {
        assert_true(i < upto);
        assert_int_equal(t, rt_time(i));
        uint64_t b;
        memcpy(&b, &v, 8);
        assert_int_equal(b, rt_value(i));
        i++;
    }
    assert_int_equal(r, 0);
    assert_int_equal(i, upto);
    tsdb_series_set_free(ss);
}

static void test_roundtrip(void **st) {
    (void)st;
    char *dir = kelvin_tmpdir("head"), err[256];
    tsdb_head *h = hopen(dir);
    labels_set *ls = mk("rt", "j", NULL);
    tsdb_head_app *a;
    assert_int_equal(tsdb_head_app_new(h, &a), 0);
    for (int i = 1; i < RT_N; i++) assert_true(rt_time(i) > rt_time(i - 1));
    for (int i = 0; i < RT_N; i++) {
        double v;
        uint64_t b = rt_value(i);
        memcpy(&v, &b, 8);
        assert_int_equal(tsdb_head_app_add(a, ls, rt_time(i), v), 0);
        tsdb_append_result r;
        assert_int_equal(tsdb_head_app_commit(a, &r), 0);
        assert_int_equal(r.appended, 1);
        if (i == 3 || i == 50 || i == 130 || i == 400) rt_check(h, i + 1, 0); /* open chunk */
        /* the same time again: noop with the same bits, else duplicate */
        assert_int_equal(tsdb_head_app_add(a, ls, rt_time(i), v), 0);
        assert_int_equal(tsdb_head_app_commit(a, &r), 0);
        assert_int_equal(r.noop, 1);
    }
    rt_check(h, RT_N, 0);
    tsdb_head_stats hs;
    tsdb_head_stats_get(h, &hs);
    assert_int_equal(hs.samples, RT_N);
    assert_true(hs.chunks >= 4);
    tsdb_head_close(h);
    h = hopen(dir);
    rt_check(h, RT_N, 0);
    /* the checkpoint keeps whole chunks: from the start of the one that
     * holds the cutoff */
    int64_t cutoff = rt_time(RT_N / 2);
    assert_int_equal(tsdb_head_checkpoint(h, cutoff, err, sizeof err), 0);
    tsdb_head_close(h);
    h = hopen(dir);
    assert_true(rt_chunk_start(RT_N / 2) > 0);
    rt_check(h, RT_N, rt_chunk_start(RT_N / 2));
    tsdb_head_app_free(a);
    labels_unref(ls);
    tsdb_head_close(h);
    kelvin_rm_rf(dir);
    free(dir);
}

/* ---- cardinality (/api/v1/status/tsdb) --------------------------------- */

static void card_is(const tsdb_head_card_entry *e, size_t n, const char *const *names, const uint64_t *counts,
                    size_t want) {
    assert_int_equal(n, want);
    for (size_t i = 0; i < n; i++) {
        if (strcmp(e[i].name.p, names[i]) || e[i].count != counts[i])
            fprintf(stderr, "entry %zu: %s %llu, want %s %llu\n", i, e[i].name.p,
                    (unsigned long long)e[i].count, names[i], (unsigned long long)counts[i]);
        assert_string_equal(e[i].name.p, names[i]);
        assert_int_equal(e[i].name.n, strlen(names[i]));
        assert_int_equal(e[i].count, counts[i]);
    }
}

static void test_postings_stats(void **st) {
    (void)st;
    tsdb_head_opts o = {0};
    tsdb_head *h;
    char err[256];
    assert_int_equal(tsdb_head_open(&o, &h, NULL, err, sizeof err), 0);
    tsdb_head_card c;
    assert_int_equal(tsdb_head_postings_stats(h, 10, &c), 0); /* empty head */
    assert_int_equal(c.num_series + c.num_label_pairs + c.n_series_by_metric + c.n_values_by_name +
                         c.n_memory_by_name + c.n_series_by_pair,
                     0);
    tsdb_head_card_free(&c);
    /* temp/power/util x dcgm/node x gpu 0..3, and up{job=dcgm|node} */
    fill(h);
    assert_int_equal(tsdb_head_postings_stats(h, 10, &c), 0);
    assert_int_equal(c.num_series, 26);
    assert_int_equal(c.num_label_pairs, 4 + 4 + 2);
    card_is(c.series_by_metric, c.n_series_by_metric, (const char *[]){"power", "temp", "util", "up"},
            (const uint64_t[]){8, 8, 8, 2}, 4);
    card_is(c.values_by_name, c.n_values_by_name, (const char *[]){"__name__", "gpu", "job"},
            (const uint64_t[]){4, 4, 2}, 3);
    /* value bytes: temp+power+util+up = 15, dcgm+node = 8, 0..3 = 4 */
    card_is(c.memory_by_name, c.n_memory_by_name, (const char *[]){"__name__", "job", "gpu"},
            (const uint64_t[]){15, 8, 4}, 3);
    card_is(c.series_by_pair, c.n_series_by_pair,
            (const char *[]){"job=dcgm", "job=node", "__name__=power", "__name__=temp", "__name__=util",
                             "gpu=0", "gpu=1", "gpu=2", "gpu=3", "__name__=up"},
            (const uint64_t[]){13, 13, 8, 8, 8, 6, 6, 6, 6, 2}, 10);
    tsdb_head_card_free(&c);
    assert_null(c.mem);
    /* the limit cuts ties by name */
    assert_int_equal(tsdb_head_postings_stats(h, 4, &c), 0);
    card_is(c.series_by_pair, c.n_series_by_pair,
            (const char *[]){"job=dcgm", "job=node", "__name__=power", "__name__=temp"},
            (const uint64_t[]){13, 13, 8, 8}, 4);
    card_is(c.series_by_metric, c.n_series_by_metric, (const char *[]){"power", "temp", "util", "up"},
            (const uint64_t[]){8, 8, 8, 2}, 4);
    tsdb_head_card_free(&c);
    assert_int_equal(tsdb_head_postings_stats(h, 1, &c), 0);
    card_is(c.values_by_name, c.n_values_by_name, (const char *[]){"__name__"}, (const uint64_t[]){4}, 1);
    card_is(c.series_by_metric, c.n_series_by_metric, (const char *[]){"power"}, (const uint64_t[]){8}, 1);
    tsdb_head_card_free(&c);
    assert_int_equal(tsdb_head_postings_stats(h, 0, &c), 0);
    assert_int_equal(c.num_label_pairs, 10);
    assert_int_equal(c.n_series_by_metric + c.n_values_by_name + c.n_memory_by_name + c.n_series_by_pair, 0);
    tsdb_head_card_free(&c);
    /* a new series with a long value and a new name; GC takes series away */
    tsdb_head_app *a;
    labels_set *ls;
    assert_int_equal(tsdb_head_app_new(h, &a), 0);
    assert_int_equal(
        labels_from_cstrs(&ls, "__name__", "up", "job", "dcgm", "zone", "a-very-long-zone-name", NULL), 0);
    assert_int_equal(tsdb_head_app_add(a, ls, 400000, 1.0), 0);
    assert_int_equal(tsdb_head_app_commit(a, NULL), 0);
    labels_unref(ls);
    tsdb_head_app_free(a);
    assert_int_equal(tsdb_head_postings_stats(h, 3, &c), 0);
    assert_int_equal(c.num_series, 27);
    assert_int_equal(c.num_label_pairs, 11);
    card_is(c.memory_by_name, c.n_memory_by_name, (const char *[]){"zone", "__name__", "job"},
            (const uint64_t[]){21, 15, 8}, 3);
    card_is(c.series_by_metric, c.n_series_by_metric, (const char *[]){"power", "temp", "util"},
            (const uint64_t[]){8, 8, 8}, 3);
    tsdb_head_card_free(&c);
    uint64_t removed;
    assert_int_equal(tsdb_head_gc(h, 350000, &removed), 0); /* only the new series has samples from 350 s */
    assert_int_equal(removed, 26);
    assert_int_equal(tsdb_head_postings_stats(h, 10, &c), 0);
    assert_int_equal(c.num_series, 1);
    assert_int_equal(c.num_label_pairs, 3);
    card_is(c.series_by_metric, c.n_series_by_metric, (const char *[]){"up"}, (const uint64_t[]){1}, 1);
    card_is(c.series_by_pair, c.n_series_by_pair,
            (const char *[]){"__name__=up", "job=dcgm", "zone=a-very-long-zone-name"},
            (const uint64_t[]){1, 1, 1}, 3);
    tsdb_head_card_free(&c);
    tsdb_head_card_free(NULL);
    tsdb_head_close(h);
}

/* ---- measurements (KELVIN_TSDB_BENCH=1) --------------------------------- */

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* CPU time of this thread: steadier than wall time on a shared machine. */
static double cpu_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void test_bench(void **st) {
    (void)st;
    const char *b = getenv("KELVIN_TSDB_BENCH");
    int full = b && b[0] == '1';
    size_t nser = full ? 100000 : 2000, nsamp = full ? 240 : 20;
    char *dir = kelvin_tmpdir("head"), buf[32];
    tsdb_head *h = hopen(dir);
    tsdb_head_app *a;
    assert_int_equal(tsdb_head_app_new(h, &a), 0);
    uint64_t *refs = malloc(nser * sizeof *refs);
    for (size_t i = 0; i < nser; i++) {
        labels_set *ls;
        snprintf(buf, sizeof buf, "%zu", i);
        assert_int_equal(labels_from_cstrs(&ls, "__name__", "DCGM_FI_DEV_GPU_TEMP", "Hostname", "node-0042",
                                           "UUID", buf, "gpu", "3", "job", "dcgm", "instance",
                                           "10.0.0.1:9400", "modelName", "NVIDIA H100 80GB HBM3", NULL),
                         0);
        assert_int_equal(tsdb_head_app_add(a, ls, 0, 40.0), 0);
        labels_unref(ls);
        if (i % 1000 == 999 || i + 1 == nser) assert_int_equal(tsdb_head_app_commit(a, NULL), 0);
    }
    for (size_t i = 0; i < nser; i++) {
        labels_set *ls;
        snprintf(buf, sizeof buf, "%zu", i);
        assert_int_equal(labels_from_cstrs(&ls, "__name__", "DCGM_FI_DEV_GPU_TEMP", "Hostname", "node-0042",
                                           "UUID", buf, "gpu", "3", "job", "dcgm", "instance",
                                           "10.0.0.1:9400", "modelName", "NVIDIA H100 80GB HBM3", NULL),
                         0);
        assert_int_equal(tsdb_head_ref(h, ls, &refs[i]), 0);
        labels_unref(ls);
    }
    double t0 = now_s(), c0 = cpu_s();
    uint64_t n = 0;
    for (size_t s = 1; s < nsamp; s++) {
        for (size_t i = 0; i < nser; i++) {
            assert_int_equal(
                tsdb_head_app_add_ref(a, refs[i], (int64_t)s * 15000, 40.0 + (double)((s + i) % 7)), 0);
            if (i % 1000 == 999 || i + 1 == nser) assert_int_equal(tsdb_head_app_commit(a, NULL), 0);
            n++;
        }
    }
    double dt = now_s() - t0, dc = cpu_s() - c0;
    tsdb_head_stats hs;
    tsdb_head_stats_get(h, &hs);
    printf("bench: %zu series x %zu samples: %.2f M appends/s (one thread, WAL on, batches of 1000; %.2f M "
           "per CPU second of the appending thread)\n",
           nser, nsamp, (double)n / dt / 1e6, (double)n / dc / 1e6);
    printf("bench: head bytes/series %.0f (series+open chunk %.0f, closed chunks %.0f, index %.0f, "
           "labels+strings "
           "%.0f), %.2f bytes/sample in chunks\n",
           (double)hs.bytes_total / (double)hs.series, (double)hs.bytes_series / (double)hs.series,
           (double)hs.bytes_chunks / (double)hs.series, (double)hs.bytes_index / (double)hs.series,
           (double)hs.bytes_labels / (double)hs.series,
           hs.chunks ? (double)hs.bytes_chunks / (double)(hs.chunks * 120) : 0.0);
    tsdb_head_app_free(a);
    tsdb_head_close(h);
    t0 = now_s();
    h = hopen(dir);
    dt = now_s() - t0;
    assert_int_equal(tsdb_head_series_count(h), nser);
    printf("bench: replay of %zu series x %zu samples: %.2f s\n", nser, nsamp, dt);
    tsdb_head_close(h);
    tsdb__head_replay_threads = 1;
    t0 = now_s();
    c0 = cpu_s();
    h = hopen(dir);
    dt = now_s() - t0;
    dc = cpu_s() - c0;
    tsdb__head_replay_threads = 0;
    assert_int_equal(tsdb_head_series_count(h), nser);
    printf("bench: sequential replay (one thread) of the same: %.2f s (%.2f CPU s)\n", dt, dc);
    tsdb_head_close(h);
    free(refs);
    kelvin_rm_rf(dir);
    free(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_select),      cmocka_unit_test(test_rejections),
        cmocka_unit_test(test_collisions),  cmocka_unit_test(test_restart_and_checkpoint),
        cmocka_unit_test(test_concurrency), cmocka_unit_test(test_parallel_replay),
        cmocka_unit_test(test_roundtrip),   cmocka_unit_test(test_postings_stats),
        cmocka_unit_test(test_pinned),      cmocka_unit_test(test_bench),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
