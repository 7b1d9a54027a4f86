/* tests/unit/tsdb/head_ckpt.c -- checkpoints of encoded chunks
 * (src/tsdb/head.c; head.h CHECKPOINT, REPLAY, SIZE-TRIGGERED
 * CHECKPOINTS; record.h TSDB_REC_CHUNKS).
 *
 * - resume: checkpoints mid-stream (open chunks partly full, XOR windows
 *   not yet opened, stale markers, jittered times), more appends, reopen
 *   with 1..4 replay threads: the samples equal a reference and the head
 *   has the same chunks; the resumed open chunks go on appending
 *   correctly; the checkpoint holds chunks records, no sample records.
 * - split: a tiny entry limit splits every series into many entries,
 *   out-of-order chunks and buffer included: same head after reopen.
 * - concurrent: checkpoints in a loop while appenders run (samples land
 *   in both the checkpoint and the next segment): reopen gives the head
 *   the appenders left, each sample once. Also run under TSan.
 * - corrupt: CRC-valid chunks records with damaged entries (bad chunk
 *   header, wrong first time, open chunk bits that do not add up, a
 *   malformed body, an unknown ref, a broken frame): the damage is
 *   reported once, the damaged entries skipped, every other series is
 *   whole, the damaged series still take appends.
 * - mutate: random byte flips in a chunks record, 150 times: open never
 *   fails or crashes (ASan), reads fail cleanly at worst, appends work.
 * - wal bytes and the size trigger: tsdb_head_wal_bytes_since_checkpoint
 *   and tsdb_head_checkpoint_due, and tsdb_db_maintain taking
 *   checkpoints by size with the database reopening to the same data.
 */
#include <inttypes.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tmpdir.h"

#include "base/buf.h"
#include "base/err.h"
#include "labels/labels.h"
#include "tsdb/db.h"
#include "tsdb/head.h"
#include "tsdb/head_int.h"
#include "tsdb/record.h"
#include "tsdb/wal.h"

static tsdb_head *hopen(const char *dir, uint32_t chunk_samples, int64_t window, tsdb_wal_report *rep) {
    tsdb_head_opts o = {.wal_dir = dir, .chunk_samples = chunk_samples, .ooo_window_ms = window};
    tsdb_head *h;
    char err[256];
    int e = tsdb_head_open(&o, &h, rep, err, sizeof err);
    if (e) fprintf(stderr, "open: %s\n", err);
    assert_int_equal(e, 0);
    return h;
}

static labels_set *ser(int i) {
    char b[16];
    snprintf(b, sizeof b, "%d", i);
    labels_set *ls;
    assert_int_equal(labels_from_cstrs(&ls, "__name__", "ck", "i", b, NULL), 0);
    return ls;
}

static double b2d(uint64_t b) {
    double v;
    memcpy(&v, &b, 8);
    return v;
}
static uint64_t d2b(double v) {
    uint64_t b;
    memcpy(&b, &v, 8);
    return b;
}

static uint64_t rs = 0x243f6a8885a308d3ull;
static uint64_t rnd(void) {
    rs ^= rs << 13;
    rs ^= rs >> 7;
    rs ^= rs << 17;
    return rs;
}

/* ---- reference ---------------------------------------------------------- */

/* Per series, the samples it must hold, sorted by time. */
typedef struct rser {
    int64_t *t;
    uint64_t *v;
    size_t n, cap;
} rser;

static void rput(rser *r, int64_t t, uint64_t v) {
    if (r->n == r->cap) {
        r->cap = r->cap ? r->cap * 2 : 256;
        r->t = realloc(r->t, r->cap * sizeof *r->t);
        r->v = realloc(r->v, r->cap * sizeof *r->v);
        assert_non_null(r->t);
        assert_non_null(r->v);
    }
    size_t i = r->n;
    while (i > 0 && r->t[i - 1] > t) i--;
    assert_true(i == 0 || r->t[i - 1] != t);
    memmove(r->t + i + 1, r->t + i, (r->n - i) * sizeof *r->t);
    memmove(r->v + i + 1, r->v + i, (r->n - i) * sizeof *r->v);
    r->t[i] = t;
    r->v[i] = v;
    r->n++;
}

static void rfree(rser *r, int n) {
    for (int i = 0; i < n; i++) {
        free(r[i].t);
        free(r[i].v);
    }
}

/* Checks that the head holds exactly ref[0..n) (series "ck", i = index);
 * skip (may be NULL) marks series to leave out. */
static void check_ref(tsdb_head *h, const rser *ref, int n, const uint8_t *skip) {
    tsdb_series_set *ss;
    assert_int_equal(tsdb_head_select(h, NULL, 0, INT64_MIN, INT64_MAX, &ss), 0);
    int seen = 0;
    while (tsdb_series_set_next(ss) == 1) {
        base_str v = labels_get(tsdb_series_set_labels(ss), base_str_c("i"));
        char b[16];
        assert_true(v.n < sizeof b);
        memcpy(b, v.p, v.n);
        b[v.n] = 0;
        int i = atoi(b);
        assert_true(i >= 0 && i < n);
        if (skip && skip[i]) continue;
        const rser *r = &ref[i];
        size_t k = 0;
        int64_t t;
        double x;
        int e;
        while ((e = tsdb_series_set_sample(ss, &t, &x)) == 1) {
            assert_true(k < r->n);
            if (t != r->t[k] || d2b(x) != r->v[k])
                fprintf(stderr,
                        "series %d sample %zu: got %" PRId64 " %016" PRIx64 ", want %" PRId64 " %016" PRIx64
                        "\n",
                        i, k, t, d2b(x), r->t[k], r->v[k]);
            assert_int_equal(t, r->t[k]);
            assert_int_equal(d2b(x), r->v[k]);
            k++;
        }
        assert_int_equal(e, 0);
        assert_int_equal(k, r->n);
        seen++;
    }
    tsdb_series_set_free(ss);
    int want = 0;
    for (int i = 0; i < n; i++) want += ref[i].n > 0 && !(skip && skip[i]);
    assert_int_equal(seen, want);
}

/* The value of sample k of series i: patterns that exercise every state of
 * the open chunk's stream. */
static uint64_t val(int i, int64_t k) {
    switch (i % 6) {
    case 0: return d2b(k < 200 ? 42.0 : 42.0 + (double)(k % 3)); /* no XOR window for long */
    case 1: return d2b((double)(k * 7));                         /* counter */
    case 2: return rnd();                                        /* any bits, NaN payloads too */
    case 3: return k % 10 == 0 ? 0x7ff0000000000002ull : d2b((double)(k % 4)); /* stale markers */
    case 4: return d2b(0.1 * (double)k);
    default: return d2b(-0.0);
    }
}
static int64_t tim(int i, int64_t k) {
    return 1700000000000LL + k * 15000 + (i % 4 == 1 ? (k * 37) % 11 : 0);
}

/* Appends samples k in [k0, k1) of series [0, n) into h and ref. */
static void fill(tsdb_head *h, labels_set **ls, rser *ref, int n, int64_t k0, int64_t k1) {
    tsdb_head_app *a;
    assert_int_equal(tsdb_head_app_new(h, &a), 0);
    for (int64_t k = k0; k < k1; k++) {
        for (int i = 0; i < n; i++) {
            if (i % 5 == 4 && k % 3 == 0) continue; /* some series skip scrapes */
            uint64_t v = val(i, k);
            assert_int_equal(tsdb_head_app_add(a, ls[i], tim(i, k), b2d(v)), 0);
            rput(&ref[i], tim(i, k), v);
        }
        tsdb_append_result r;
        assert_int_equal(tsdb_head_app_commit(a, &r), 0);
        assert_int_equal(r.too_old + r.out_of_order + r.duplicate, 0);
    }
    tsdb_head_app_free(a);
}

/* Counts the record types of the newest checkpoint (read-only open). */
typedef struct rcount {
    uint64_t types[8];
} rcount;
static int count_rec(void *ctx, const uint8_t *rec, size_t len, int from_ckpt) {
    rcount *c = ctx;
    if (from_ckpt && len) c->types[rec[0] & 7]++;
    return 0;
}
static void ckpt_records(const char *dir, rcount *c) {
    memset(c, 0, sizeof *c);
    tsdb_wal_opts o = {.read_only = 1};
    tsdb_wal *w;
    tsdb_wal_report rep;
    assert_int_equal(tsdb_wal_open(dir, &o, count_rec, c, &rep, &w, NULL, 0), 0);
    assert_true(rep.checkpoint > 0);
    tsdb_wal_close(w);
}

static void same_shape(const tsdb_head_stats *a, const tsdb_head_stats *b) {
    assert_int_equal(a->series, b->series);
    assert_int_equal(a->chunks, b->chunks);
    assert_int_equal(a->samples, b->samples);
    assert_int_equal(a->ooo_series, b->ooo_series);
    assert_int_equal(a->ooo_chunks, b->ooo_chunks);
    assert_int_equal(a->ooo_samples, b->ooo_samples);
    assert_int_equal(a->mint, b->mint);
    assert_int_equal(a->maxt, b->maxt);
}

/* ---- tests -------------------------------------------------------------- */

enum { NS = 60 };

static void test_resume(void **st) {
    (void)st;
    char *dir = kelvin_tmpdir("head-ckpt"), err[256];
    static rser ref[NS];
    memset(ref, 0, sizeof ref);
    labels_set *ls[NS];
    for (int i = 0; i < NS; i++) ls[i] = ser(i);
    tsdb_head *h = hopen(dir, 0, 0, NULL);
    fill(h, ls, ref, NS, 0, 150); /* 120 + 30: one closed chunk, an open one */
    assert_int_equal(tsdb_head_checkpoint(h, INT64_MIN, err, sizeof err), 0);
    fill(h, ls, ref, NS, 150, 301);
    assert_int_equal(tsdb_head_checkpoint(h, tsdb_head_min_valid_time(h), err, sizeof err), 0);
    tsdb_head_stats before, after;
    tsdb_head_stats_get(h, &before);
    assert_int_equal(before.checkpoints, 2);
    assert_true(before.checkpoint_bytes > 0);
    tsdb_head_close(h);
    rcount rc;
    ckpt_records(dir, &rc);
    assert_true(rc.types[TSDB_REC_CHUNKS] > 0);
    assert_true(rc.types[TSDB_REC_SERIES] > 0);
    assert_int_equal(rc.types[TSDB_REC_SAMPLES] + rc.types[TSDB_REC_OOO_SAMPLES], 0);
    /* nothing after the checkpoint: the head is the checkpointed one */
    for (int th = 1; th <= 4; th++) {
        tsdb__head_replay_threads = th;
        tsdb_wal_report rep;
        h = hopen(dir, 0, 0, &rep);
        assert_int_equal(rep.corruptions, 0);
        tsdb_head_stats_get(h, &after);
        same_shape(&before, &after);
        assert_int_equal(after.replay_rejected + after.replay_corrupt, 0);
        check_ref(h, ref, NS, NULL);
        tsdb_head_close(h);
    }
    /* the resumed open chunks go on (cuts included), then a replay of
     * samples on top of the checkpoint, then another checkpoint */
    tsdb__head_replay_threads = 2;
    h = hopen(dir, 0, 0, NULL);
    fill(h, ls, ref, NS, 301, 700);
    check_ref(h, ref, NS, NULL);
    tsdb_head_stats_get(h, &before);
    tsdb_head_close(h);
    h = hopen(dir, 0, 0, NULL);
    check_ref(h, ref, NS, NULL);
    tsdb_head_stats_get(h, &after);
    same_shape(&before, &after);
    /* a cutoff keeps the chunks that end at or after it */
    int64_t cut = tim(0, 500);
    assert_int_equal(tsdb_head_checkpoint(h, cut, err, sizeof err), 0);
    tsdb_head_close(h);
    tsdb__head_replay_threads = 4;
    h = hopen(dir, 0, 0, NULL);
    tsdb_head_stats_get(h, &after);
    assert_true(after.samples < before.samples);
    for (int i = 0; i < NS; i++) { /* 120-sample chunks: from the one holding the cutoff */
        size_t k = 0, c = 0;
        while (k < ref[i].n && ref[i].t[k] < cut) k++;
        c = k / 120 * 120;
        memmove(ref[i].t, ref[i].t + c, (ref[i].n - c) * sizeof *ref[i].t);
        memmove(ref[i].v, ref[i].v + c, (ref[i].n - c) * sizeof *ref[i].v);
        ref[i].n -= c;
    }
    check_ref(h, ref, NS, NULL);
    tsdb_head_close(h);
    tsdb__head_replay_threads = 0;
    for (int i = 0; i < NS; i++) labels_unref(ls[i]);
    rfree(ref, NS);
    kelvin_rm_rf(dir);
    free(dir);
}

/* In-order samples at even seconds, out-of-order ones at odd seconds
 * (window on): OOO chunks, a partly full OOO buffer, and a tiny entry
 * limit that splits every series into entries of one chunk each. */
static void ooo_fill(tsdb_head *h, labels_set **ls, rser *ref, int n, int64_t s0, int64_t s1) {
    tsdb_head_app *a;
    assert_int_equal(tsdb_head_app_new(h, &a), 0);
    for (int64_t s = s0; s < s1; s++) {
        for (int i = 0; i < n; i++) {
            int64_t t = s * 2000;
            uint64_t v = val(i, s);
            assert_int_equal(tsdb_head_app_add(a, ls[i], t, b2d(v)), 0);
            rput(&ref[i], t, v);
            if (s > s0 + 2 && (s + i) % 3 == 0) { /* an odd second a little back */
                int64_t to = (s - 1 - (int64_t)(rnd() % 2)) * 2000 - 1000;
                size_t k = ref[i].n;
                while (k > 0 && ref[i].t[k - 1] > to) k--;
                if (k > 0 && ref[i].t[k - 1] == to) continue;
                v = val(i + 1, s);
                assert_int_equal(tsdb_head_app_add(a, ls[i], to, b2d(v)), 0);
                rput(&ref[i], to, v);
            }
        }
        tsdb_append_result r;
        assert_int_equal(tsdb_head_app_commit(a, &r), 0);
        assert_int_equal(r.too_old + r.out_of_order + r.duplicate + r.noop, 0);
    }
    tsdb_head_app_free(a);
}

static void test_split_and_ooo(void **st) {
    (void)st;
    char *dir = kelvin_tmpdir("head-ckpt"), err[256];
    enum { N = 12 };
    static rser ref[N];
    memset(ref, 0, sizeof ref);
    labels_set *ls[N];
    for (int i = 0; i < N; i++) ls[i] = ser(i);
    const int64_t W = 60000;
    tsdb_head *h = hopen(dir, 16, W, NULL);
    ooo_fill(h, ls, ref, N, 0, 400);
    tsdb_head_stats before, after;
    tsdb_head_stats_get(h, &before);
    assert_true(before.ooo_chunks > N);
    assert_true(before.chunks > 10 * N);
    tsdb__head_ckpt_entry_bytes = 1; /* one chunk an entry */
    assert_int_equal(tsdb_head_checkpoint(h, INT64_MIN, err, sizeof err), 0);
    tsdb__head_ckpt_entry_bytes = 0;
    tsdb_head_close(h);
    for (int th = 1; th <= 3; th += 2) {
        tsdb__head_replay_threads = th;
        tsdb_wal_report rep;
        h = hopen(dir, 16, W, &rep);
        assert_int_equal(rep.corruptions, 0);
        tsdb_head_stats_get(h, &after);
        same_shape(&before, &after);
        check_ref(h, ref, N, NULL);
        tsdb_head_close(h);
    }
    /* more in order and out of order after the resume, a checkpoint mid
     * way, then samples replayed on top of it */
    h = hopen(dir, 16, W, NULL);
    ooo_fill(h, ls, ref, N, 400, 500);
    assert_int_equal(tsdb_head_checkpoint(h, INT64_MIN, err, sizeof err), 0);
    ooo_fill(h, ls, ref, N, 500, 560);
    check_ref(h, ref, N, NULL);
    tsdb_head_stats_get(h, &before);
    tsdb_head_close(h);
    h = hopen(dir, 16, W, NULL);
    tsdb_head_stats_get(h, &after);
    same_shape(&before, &after);
    assert_int_equal(after.replay_rejected, 0);
    check_ref(h, ref, N, NULL);
    tsdb_head_close(h);
    tsdb__head_replay_threads = 0;
    for (int i = 0; i < N; i++) labels_unref(ls[i]);
    rfree(ref, N);
    kelvin_rm_rf(dir);
    free(dir);
}

/* ---- checkpoints while appenders run ------------------------------------ */

enum { CW = 3, CSER = 150, CT = 400 };
typedef struct carg {
    tsdb_head *h;
    int id;
    _Atomic int *done; /* commits so far, all appenders */
} carg;

static void *capp(void *p) {
    carg *c = p;
    tsdb_head_app *a;
    if (tsdb_head_app_new(c->h, &a)) abort();
    labels_set *ls[CSER];
    char b[32];
    for (int i = 0; i < CSER; i++) {
        snprintf(b, sizeof b, "%d", c->id * CSER + i);
        if (labels_from_cstrs(&ls[i], "__name__", "cc", "i", b, NULL)) abort();
    }
    for (int t = 1; t <= CT; t++) {
        for (int i = 0; i < CSER; i++)
            if (tsdb_head_app_add(a, ls[i], t * 1000, (double)(t * 3 + i))) abort();
        tsdb_append_result r;
        if (tsdb_head_app_commit(a, &r) || r.appended != CSER) abort();
        atomic_fetch_add(c->done, 1);
    }
    for (int i = 0; i < CSER; i++) labels_unref(ls[i]);
    tsdb_head_app_free(a);
    labels_thread_cleanup();
    return NULL;
}

static void *cckpt(void *p) {
    carg *c = p;
    int n = 0;
    /* stops while the appenders still run: the WAL after the last one
     * holds samples that are in it too */
    while (atomic_load(c->done) < CW * CT * 3 / 4 || n == 0) {
        if (tsdb_head_checkpoint(c->h, INT64_MIN, NULL, 0)) abort();
        n++;
    }
    c->id = n;
    labels_thread_cleanup();
    return NULL;
}

static void check_cc(tsdb_head *h) {
    tsdb_series_set *ss;
    assert_int_equal(tsdb_head_select(h, NULL, 0, INT64_MIN, INT64_MAX, &ss), 0);
    size_t n = 0;
    while (tsdb_series_set_next(ss) == 1) {
        base_str v = labels_get(tsdb_series_set_labels(ss), base_str_c("i"));
        char b[16];
        memcpy(b, v.p, v.n);
        b[v.n] = 0;
        int i = atoi(b), want = 1;
        int64_t t;
        double x;
        while (tsdb_series_set_sample(ss, &t, &x) == 1) {
            assert_int_equal(t, want * 1000);
            assert_true(x == (double)(want * 3 + i % CSER));
            want++;
        }
        assert_int_equal(want, CT + 1);
        n++;
    }
    tsdb_series_set_free(ss);
    assert_int_equal(n, CW * CSER);
}

static void test_concurrent(void **st) {
    (void)st;
    char *dir = kelvin_tmpdir("head-ckpt");
    tsdb_head_opts o = {.wal_dir = dir, .wal = {.segment_size = 65536}};
    tsdb_head *h;
    char err[256];
    assert_int_equal(tsdb_head_open(&o, &h, NULL, err, sizeof err), 0);
    _Atomic int done = 0;
    pthread_t th[CW + 1];
    carg c[CW + 1];
    for (int i = 0; i <= CW; i++) {
        c[i] = (carg){h, i, &done};
        pthread_create(&th[i], NULL, i < CW ? capp : cckpt, &c[i]);
    }
    for (int i = 0; i <= CW; i++) pthread_join(th[i], NULL);
    assert_true(c[CW].id >= 1);
    check_cc(h);
    tsdb_head_stats before, after;
    tsdb_head_stats_get(h, &before);
    tsdb_head_close(h);
    tsdb__head_replay_threads = 2;
    tsdb_wal_report rep;
    assert_int_equal(tsdb_head_open(&o, &h, &rep, err, sizeof err), 0);
    tsdb__head_replay_threads = 0;
    assert_int_equal(rep.corruptions, 0);
    assert_true(rep.checkpoint > 0);
    check_cc(h);
    tsdb_head_stats_get(h, &after);
    same_shape(&before, &after);
    printf("concurrent: %d checkpoints during the appends; %" PRIu64
           " samples replayed again and rejected as already there\n",
           c[CW].id, after.replay_rejected);
    tsdb_head_close(h);
    kelvin_rm_rf(dir);
    free(dir);
}

/* ---- damaged checkpoints ------------------------------------------------ */

/* The records of a WAL directory, copied. */
typedef struct recs {
    base_buf data; /* each as u32 length + bytes */
    size_t n;
} recs;
static int collect(void *ctx, const uint8_t *rec, size_t len, int from_ckpt) {
    (void)from_ckpt;
    recs *r = ctx;
    uint32_t l = (uint32_t)len;
    base_buf_append(&r->data, &l, 4);
    base_buf_append(&r->data, rec, len);
    r->n++;
    return 0;
}

/* Writes a fresh WAL directory holding the given records. */
static void write_wal(const char *dir, const recs *r) {
    tsdb_wal *w;
    assert_int_equal(tsdb_wal_open(dir, NULL, NULL, NULL, NULL, &w, NULL, 0), 0);
    const uint8_t *p = (const uint8_t *)r->data.data, *end = p + r->data.len;
    while (p < end) {
        uint32_t l;
        memcpy(&l, p, 4);
        assert_int_equal(tsdb_wal_log(w, p + 4, l), 0);
        p += 4 + l;
    }
    assert_int_equal(tsdb_wal_close(w), 0);
}

/* A decoded entry as encoder input (arrays owned by the caller). */
typedef struct ent {
    tsdb_rec_series_chunks e;
    tsdb_rec_chunk ch[64], oc[64];
    tsdb_rec_osample ob[64];
    uint8_t chbuf[64][512]; /* copies, so that they can be damaged */
    uint8_t open[4096];
} ent;

static void ent_from(ent *x, const tsdb_rec_chunks_entry *d) {
    memset(&x->e, 0, sizeof x->e);
    x->e.ref = d->ref;
    tsdb_rec_clist l = d->chunks;
    size_t n = 0;
    while (n < 64 && tsdb_rec_clist_next(&l, &x->ch[n])) {
        assert_true(x->ch[n].len <= sizeof x->chbuf[0]);
        memcpy(x->chbuf[n], x->ch[n].data, x->ch[n].len);
        x->ch[n].data = x->chbuf[n];
        n++;
    }
    x->e.chunks = x->ch;
    x->e.nchunks = n;
    l = d->ooo;
    n = 0;
    while (n < 64 && tsdb_rec_clist_next(&l, &x->oc[n])) n++;
    x->e.ooo = x->oc;
    x->e.nooo = n;
    tsdb_rec_obuf b = d->buf;
    n = 0;
    while (n < 64 && tsdb_rec_obuf_next(&b, &x->ob[n])) n++;
    x->e.buf = x->ob;
    x->e.nbuf = n;
    x->e.open_n = d->open_n;
    x->e.open_t0 = d->open_t0;
    x->e.open_bits = d->open_bits;
    assert_true((d->open_bits + 7) / 8 <= sizeof x->open);
    if (d->open_n) memcpy(x->open, d->open, (size_t)(d->open_bits + 7) / 8);
    x->e.open = x->open;
}

enum { D_HDR, D_MINT, D_OPENBITS, D_OPENN, D_BODY, D_REF, D_FRAME, D_COUNT };
static const char *dname[] = {"chunk header",   "first time",  "open chunk bits", "open chunk count",
                              "malformed body", "unknown ref", "broken frame"};

/* Re-encodes chunks record rec with the entry of series ref `victim`
 * damaged as `how`. */
static void damage(const uint8_t *rec, size_t len, uint64_t victim, int how, base_buf *out) {
    tsdb_rec_dec d;
    assert_int_equal(tsdb_rec_dec_init(&d, rec, len), 0);
    base_buf ents = BASE_BUF_INIT;
    tsdb_rec_chunks_entry de;
    static ent x;
    uint64_t n = 0;
    int hit = 0;
    while (tsdb_rec_dec_chunks(&d, &de) == 1) {
        assert_int_equal(de.err, 0);
        ent_from(&x, &de);
        size_t at = ents.len;
        if (de.ref == victim) {
            hit = 1;
            switch (how) {
            case D_HDR: x.chbuf[0][0] = 0xEE; break;
            case D_MINT: x.ch[0].mint -= 1; break;
            case D_OPENBITS: x.e.open_bits -= 3; break;
            case D_OPENN: x.e.open_n += 1; break;
            case D_REF: x.e.ref = 99999999; break;
            default: break;
            }
            if (how == D_HDR || how == D_MINT) assert_true(x.e.nchunks > 0);
            if (how == D_OPENBITS || how == D_OPENN) assert_true(x.e.open_n > 0);
        }
        assert_int_equal(tsdb_rec_enc_chunks_entry(&ents, &x.e), 0);
        if (de.ref == victim && how == D_BODY) { /* a body the format rejects, frame intact */
            uint8_t *q = (uint8_t *)ents.data + at;
            while (*q & 0x80) q++; /* ref */
            q++;
            uint64_t blen = 0;
            for (unsigned sh = 0;; sh += 7) {
                uint8_t b = *q++;
                blen |= (uint64_t)(b & 0x7f) << sh;
                if (!(b & 0x80)) break;
            }
            memset(q, 0xff, (size_t)blen); /* every varint runs on */
        }
        n++;
    }
    assert_true(hit);
    if (how == D_FRAME) { /* the last entry claims more bytes than there are */
        base_buf_append(&ents, (uint8_t[]){0x05, 0x7f, 0x00}, 3);
        n++;
    }
    base_buf_reset(out);
    assert_int_equal(tsdb_rec_enc_chunks(out, ents.data, ents.len, n), 0);
    base_buf_free(&ents);
}

/* A head of N series (out-of-order window on) checkpointed: the records. */
static void make_ckpt(const char *dir, rser *ref, int n, recs *r) {
    labels_set *ls[64];
    for (int i = 0; i < n; i++) ls[i] = ser(i);
    tsdb_head *h = hopen(dir, 16, 60000, NULL);
    ooo_fill(h, ls, ref, n, 0, 100);
    char err[256];
    assert_int_equal(tsdb_head_checkpoint(h, INT64_MIN, err, sizeof err), 0);
    tsdb_head_close(h);
    for (int i = 0; i < n; i++) labels_unref(ls[i]);
    tsdb_wal_opts o = {.read_only = 1};
    tsdb_wal *w;
    memset(r, 0, sizeof *r);
    r->data = (base_buf)BASE_BUF_INIT;
    assert_int_equal(tsdb_wal_open(dir, &o, collect, r, NULL, &w, NULL, 0), 0);
    tsdb_wal_close(w);
}

/* The ref of series i in a head. */
static uint64_t ref_of(tsdb_head *h, int i) {
    labels_set *ls = ser(i);
    uint64_t ref;
    assert_int_equal(tsdb_head_ref(h, ls, &ref), 0);
    labels_unref(ls);
    return ref;
}

/* Appends one sample to every series after everything it holds: each
 * commit must work. */
static void append_after(tsdb_head *h, int n) {
    tsdb_head_app *a;
    assert_int_equal(tsdb_head_app_new(h, &a), 0);
    for (int i = 0; i < n; i++) {
        labels_set *ls = ser(i);
        assert_int_equal(tsdb_head_app_add(a, ls, (int64_t)1 << 50, 1.0), 0);
        labels_unref(ls);
    }
    tsdb_append_result r;
    assert_int_equal(tsdb_head_app_commit(a, &r), 0);
    assert_int_equal(r.appended, n);
    tsdb_head_app_free(a);
}

static void test_corrupt(void **st) {
    (void)st;
    enum { N = 9 };
    char *src = kelvin_tmpdir("head-ckpt"), *dir = kelvin_tmpdir("head-ckpt-bad");
    static rser ref[N];
    memset(ref, 0, sizeof ref);
    recs r;
    make_ckpt(src, ref, N, &r);
    tsdb_head *h = hopen(src, 16, 60000, NULL);
    const int victim = 4;
    uint64_t vref = ref_of(h, victim);
    check_ref(h, ref, N, NULL);
    tsdb_head_close(h);
    base_buf bad = BASE_BUF_INIT;
    uint8_t skip[N] = {0};
    skip[victim] = 1;
    for (int how = 0; how < D_COUNT; how++) {
        recs w = {BASE_BUF_INIT, 0};
        const uint8_t *p = (const uint8_t *)r.data.data, *end = p + r.data.len;
        int done = 0;
        while (p < end) { /* the chunks record holding the victim is damaged */
            uint32_t l;
            memcpy(&l, p, 4);
            const uint8_t *rec = p + 4;
            p += 4 + l;
            if (rec[0] == TSDB_REC_CHUNKS && !done) {
                tsdb_rec_dec d;
                tsdb_rec_chunks_entry e;
                int has = 0;
                assert_int_equal(tsdb_rec_dec_init(&d, rec, l), 0);
                while (tsdb_rec_dec_chunks(&d, &e) == 1) has |= e.ref == vref;
                if (has) {
                    damage(rec, l, vref, how, &bad);
                    collect(&w, (const uint8_t *)bad.data, bad.len, 1);
                    done = 1;
                    continue;
                }
            }
            collect(&w, rec, l, 1);
        }
        assert_true(done);
        kelvin_rm_rf(dir);
        write_wal(dir, &w);
        base_buf_free(&w.data);
        tsdb_wal_report rep;
        tsdb__head_replay_threads = 1 + how % 2;
        h = hopen(dir, 16, 60000, &rep);
        tsdb_head_stats hs;
        tsdb_head_stats_get(h, &hs);
        printf("damage %-16s: %s\n", dname[how], rep.first_error);
        assert_int_equal(rep.corruptions, 1);
        assert_non_null(strstr(rep.first_error, how == D_FRAME ? "cut short" : "not restored"));
        assert_int_equal(hs.replay_corrupt, 1);
        assert_int_equal(tsdb_head_series_count(h), N);
        /* the victim lost its chunks (a broken frame: what follows it) */
        uint8_t sk[N];
        memcpy(sk, skip, N);
        if (how == D_FRAME) memset(sk, 0, N); /* the fake entry comes last: nothing lost */
        check_ref(h, ref, N, sk);
        append_after(h, N);
        tsdb_head_close(h);
    }
    tsdb__head_replay_threads = 0;
    base_buf_free(&bad);
    base_buf_free(&r.data);
    rfree(ref, N);
    kelvin_rm_rf(src);
    kelvin_rm_rf(dir);
    free(src);
    free(dir);
}

/* Random byte flips in the chunks records (re-framed: CRC-valid): open
 * works, reading fails cleanly at worst, appends after the data work. */
static void test_mutate(void **st) {
    (void)st;
    enum { N = 6 };
    char *src = kelvin_tmpdir("head-ckpt"), *dir = kelvin_tmpdir("head-ckpt-mut");
    static rser ref[N];
    memset(ref, 0, sizeof ref);
    recs r;
    make_ckpt(src, ref, N, &r);
    uint64_t damaged = 0;
    for (int it = 0; it < 150; it++) {
        recs w = {BASE_BUF_INIT, 0};
        const uint8_t *p = (const uint8_t *)r.data.data, *end = p + r.data.len;
        while (p < end) {
            uint32_t l;
            memcpy(&l, p, 4);
            uint8_t *rec = malloc(l);
            assert_non_null(rec);
            memcpy(rec, p + 4, l);
            p += 4 + l;
            if (rec[0] == TSDB_REC_CHUNKS) {
                int flips = 1 + (int)(rnd() % 4);
                for (int f = 0; f < flips; f++) rec[1 + rnd() % (l - 1)] ^= (uint8_t)(1u << (rnd() % 8));
            }
            collect(&w, rec, l, 1);
            free(rec);
        }
        kelvin_rm_rf(dir);
        write_wal(dir, &w);
        base_buf_free(&w.data);
        tsdb_wal_report rep;
        tsdb__head_replay_threads = 1 + it % 2;
        tsdb_head *h = hopen(dir, 16, 0, &rep);
        damaged += rep.corruptions > 0;
        tsdb_series_set *ss;
        assert_int_equal(tsdb_head_select(h, NULL, 0, INT64_MIN, INT64_MAX, &ss), 0);
        while (tsdb_series_set_next(ss) == 1) {
            int64_t t, lt = INT64_MIN;
            double x;
            int e;
            while ((e = tsdb_series_set_sample(ss, &t, &x)) == 1) lt = t;
            assert_true(e <= 0);
            (void)lt;
        }
        tsdb_series_set_free(ss);
        append_after(h, N);
        tsdb_head_close(h);
    }
    tsdb__head_replay_threads = 0;
    printf("mutate: 150 damaged checkpoints, %" PRIu64 " reported damage\n", damaged);
    assert_true(damaged > 10);
    base_buf_free(&r.data);
    rfree(ref, N);
    kelvin_rm_rf(src);
    kelvin_rm_rf(dir);
    free(src);
    free(dir);
}

/* ---- WAL bytes since the checkpoint, and the size trigger -------------- */

static void test_wal_bytes(void **st) {
    (void)st;
    char *dir = kelvin_tmpdir("head-ckpt"), err[256];
    enum { N = 20 };
    static rser ref[N];
    memset(ref, 0, sizeof ref);
    labels_set *ls[N];
    for (int i = 0; i < N; i++) ls[i] = ser(i);
    tsdb_head *h = hopen(dir, 0, 0, NULL);
    assert_int_equal(tsdb_head_wal_bytes_since_checkpoint(h), 0);
    fill(h, ls, ref, N, 0, 50);
    uint64_t b1 = tsdb_head_wal_bytes_since_checkpoint(h);
    assert_true(b1 > 50 * 8);
    tsdb__head_checkpoint_bytes = b1 + 1;
    assert_int_equal(tsdb_head_checkpoint_due(h), 0);
    tsdb__head_checkpoint_bytes = b1;
    assert_int_equal(tsdb_head_checkpoint_due(h), 1);
    fill(h, ls, ref, N, 50, 60);
    uint64_t b2 = tsdb_head_wal_bytes_since_checkpoint(h);
    assert_true(b2 > b1);
    tsdb_head_close(h);
    /* the tail replayed at open counts */
    h = hopen(dir, 0, 0, NULL);
    assert_int_equal(tsdb_head_wal_bytes_since_checkpoint(h), b2);
    assert_int_equal(tsdb_head_checkpoint(h, INT64_MIN, err, sizeof err), 0);
    assert_int_equal(tsdb_head_wal_bytes_since_checkpoint(h), 0);
    assert_int_equal(tsdb_head_checkpoint_due(h), 0);
    fill(h, ls, ref, N, 60, 70);
    uint64_t b3 = tsdb_head_wal_bytes_since_checkpoint(h);
    assert_true(b3 > 0 && b3 < b2);
    tsdb_head_close(h);
    h = hopen(dir, 0, 0, NULL);
    assert_int_equal(tsdb_head_wal_bytes_since_checkpoint(h), b3);
    check_ref(h, ref, N, NULL);
    tsdb_head_close(h);
    tsdb__head_checkpoint_bytes = 0;
    /* without a WAL */
    tsdb_head_opts o = {0};
    assert_int_equal(tsdb_head_open(&o, &h, NULL, err, sizeof err), 0);
    assert_int_equal(tsdb_head_wal_bytes_since_checkpoint(h), 0);
    assert_int_equal(tsdb_head_checkpoint_due(h), 0);
    tsdb_head_close(h);
    for (int i = 0; i < N; i++) labels_unref(ls[i]);
    rfree(ref, N);
    kelvin_rm_rf(dir);
    free(dir);
}

static void test_db_trigger(void **st) {
    (void)st;
    char *dir = kelvin_tmpdir("head-ckpt-db"), err[512];
    enum { N = 30 };
    static rser ref[N];
    memset(ref, 0, sizeof ref);
    labels_set *ls[N];
    for (int i = 0; i < N; i++) ls[i] = ser(i);
    tsdb_db_opts o;
    tsdb_db_opts_default(&o);
    o.path = dir;
    o.maintain_interval_ms = -1;
    o.min_block_ms = 24LL * 3600 * 1000; /* no head cutting */
    tsdb__head_checkpoint_bytes = 16384;
    tsdb_db *db;
    assert_int_equal(tsdb_db_open(&o, &db, NULL, err, sizeof err), 0);
    for (int64_t k = 0; k < 1000; k += 20) {
        fill(tsdb_db_head(db), ls, ref, N, k, k + 20);
        assert_int_equal(tsdb_db_maintain(db, err, sizeof err), 0);
        assert_true(tsdb_head_wal_bytes_since_checkpoint(tsdb_db_head(db)) < 16384);
    }
    tsdb_head_stats hs;
    tsdb_head_stats_get(tsdb_db_head(db), &hs);
    assert_true(hs.checkpoints >= 3);
    fill(tsdb_db_head(db), ls, ref, N, 1000, 1010); /* a tail after the last one */
    assert_int_equal(tsdb_db_close(db), 0);
    tsdb_db_report rep;
    assert_int_equal(tsdb_db_open(&o, &db, &rep, err, sizeof err), 0);
    assert_true(rep.wal.checkpoint > 0);
    assert_int_equal(rep.wal.corruptions, 0);
    check_ref(tsdb_db_head(db), ref, N, NULL);
    assert_int_equal(tsdb_db_close(db), 0);
    tsdb__head_checkpoint_bytes = 0;
    for (int i = 0; i < N; i++) labels_unref(ls[i]);
    rfree(ref, N);
    kelvin_rm_rf(dir);
    free(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_resume),     cmocka_unit_test(test_split_and_ooo),
        cmocka_unit_test(test_concurrent), cmocka_unit_test(test_corrupt),
        cmocka_unit_test(test_mutate),     cmocka_unit_test(test_wal_bytes),
        cmocka_unit_test(test_db_trigger),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
