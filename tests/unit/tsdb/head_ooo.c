/* tests/unit/tsdb/head_ooo.c -- the head's out-of-order window
 * (src/tsdb/head.c, design in head.h): window off and on, the boundary at
 * exactly max - window, the min valid time, noops and duplicates against
 * in-order data (closed and open chunks) and the OOO store (buffer and
 * chunks), reads merging in-order and OOO samples by time checked against
 * a reference model of the rules on random input (several OOO chunks per
 * series), restart from the WAL (sequential and parallel replay),
 * checkpoint + restart, GC, block write + read, tsdb_head_bounds, the OOO
 * WAL record, and concurrent OOO appenders with readers and GC (run under
 * ASan here and under TSan in a -DKELVIN_TSAN=ON tree). */
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
#include "tsdb/block.h"
#include "tsdb/head.h"
#include "tsdb/head_int.h"
#include "tsdb/record.h"

static tsdb_head *hopen(const char *dir, int64_t window, uint32_t chunk_samples) {
    tsdb_head_opts o = {.wal_dir = dir, .chunk_samples = chunk_samples, .ooo_window_ms = window};
    tsdb_head *h;
    char err[256];
    assert_int_equal(tsdb_head_open(&o, &h, NULL, err, sizeof err), 0);
    return h;
}

static labels_set *ser(int i) {
    char b[16];
    snprintf(b, sizeof b, "%d", i);
    labels_set *ls;
    assert_int_equal(labels_from_cstrs(&ls, "__name__", "ooo", "i", b, NULL), 0);
    return ls;
}

static double bits2d(uint64_t b) {
    double v;
    memcpy(&v, &b, 8);
    return v;
}
static uint64_t d2bits(double v) {
    uint64_t b;
    memcpy(&b, &v, 8);
    return b;
}

/* One commit of one sample; returns its result. */
static tsdb_append_result add1(tsdb_head *h, const labels_set *ls, int64_t t, double v) {
    tsdb_head_app *a;
    assert_int_equal(tsdb_head_app_new(h, &a), 0);
    assert_int_equal(tsdb_head_app_add(a, ls, t, v), 0);
    tsdb_append_result r;
    assert_int_equal(tsdb_head_app_commit(a, &r), 0);
    tsdb_head_app_free(a);
    return r;
}

/* Samples of the series ls in [mint, maxt] into t/v (up to cap); count. */
static size_t read1(tsdb_head *h, const labels_set *ls, int64_t mint, int64_t maxt, int64_t *t, uint64_t *v,
                    size_t cap) {
    tsdb_series_set *ss;
    assert_int_equal(tsdb_head_select(h, NULL, 0, mint, maxt, &ss), 0);
    size_t n = 0;
    while (tsdb_series_set_next(ss) == 1) {
        if (!labels_equal(tsdb_series_set_labels(ss), ls)) continue;
        int64_t x;
        double y;
        int r;
        while ((r = tsdb_series_set_sample(ss, &x, &y)) == 1) {
            assert_true(n < cap);
            t[n] = x;
            v[n++] = d2bits(y);
        }
        assert_int_equal(r, 0);
    }
    tsdb_series_set_free(ss);
    return n;
}

/* ---- reference model of the rules (head.h, OUT-OF-ORDER WINDOW) ---------- */

#define MS 24

typedef struct mser {
    int has;
    int64_t last;    /* last in-order timestamp */
    int64_t ck_last; /* last at the checkpoint */
    int64_t *t;      /* accepted samples, sorted by t */
    uint64_t *v;
    uint8_t *o; /* accepted out of order */
    size_t n, cap;
} mser;

typedef struct model {
    int64_t window, headmax, minvalid;
    mser s[MS];
} model;

static void model_init(model *m, int64_t window) {
    memset(m, 0, sizeof *m);
    m->window = window;
    m->headmax = INT64_MIN;
    m->minvalid = INT64_MIN;
}

static void model_free(model *m) {
    for (int i = 0; i < MS; i++) {
        free(m->s[i].t);
        free(m->s[i].v);
        free(m->s[i].o);
    }
}

static size_t mfind(const mser *s, int64_t t) {
    size_t lo = 0, hi = s->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (s->t[mid] < t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static void minsert(mser *s, int64_t t, uint64_t v, int ooo) {
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 64;
        s->t = realloc(s->t, s->cap * sizeof *s->t);
        s->v = realloc(s->v, s->cap * sizeof *s->v);
        s->o = realloc(s->o, s->cap);
        assert_non_null(s->t);
        assert_non_null(s->v);
        assert_non_null(s->o);
    }
    size_t i = mfind(s, t);
    memmove(s->t + i + 1, s->t + i, (s->n - i) * sizeof *s->t);
    memmove(s->v + i + 1, s->v + i, (s->n - i) * sizeof *s->v);
    memmove(s->o + i + 1, s->o + i, s->n - i);
    s->t[i] = t;
    s->v[i] = v;
    s->o[i] = (uint8_t)ooo;
    s->n++;
}

static void model_add(model *m, int i, int64_t t, uint64_t v, tsdb_append_result *r) {
    mser *s = &m->s[i];
    if (t < m->minvalid) {
        r->too_old++;
        return;
    }
    if (!s->has || t > s->last) {
        minsert(s, t, v, 0);
        s->has = 1;
        s->last = t;
        if (t > m->headmax) m->headmax = t;
        r->appended++;
        return;
    }
    size_t k = mfind(s, t);
    int present = k < s->n && s->t[k] == t;
    if (t == s->last || (m->window > 0 && present && t >= m->headmax - m->window)) {
        if (s->v[k] == v)
            r->noop++;
        else
            r->duplicate++;
        return;
    }
    if (m->window <= 0) {
        r->out_of_order++;
        return;
    }
    if (t < m->headmax - m->window) {
        r->too_old++;
        return;
    }
    minsert(s, t, v, 1);
    r->appended++;
    r->out_of_order_appended++;
}

/* Compares everything a select of [mint, maxt] returns with the model's
 * samples in that range: keep(t) says whether a model sample must be
 * there (1) or may be (2); whatever is returned must be in the model. */
typedef int (*keep_fn)(const mser *s, int64_t t, int64_t arg);
static int keep_all(const mser *s, int64_t t, int64_t arg) {
    (void)s;
    (void)t;
    (void)arg;
    return 1;
}
/* What a checkpoint at arg keeps: t >= arg and the last in-order one
 * surely, older ones when their chunk ends at or after arg. */
static int keep_ckpt(const mser *s, int64_t t, int64_t arg) {
    return t >= arg || t == s->ck_last ? 1 : 2;
}

/* The series index of a test-made label value (digits only). */
static int idx_of(base_str v) {
    int i = 0;
    for (size_t k = 0; k < v.n; k++) {
        assert_true(v.p[k] >= '0' && v.p[k] <= '9' && i < MS);
        i = i * 10 + (v.p[k] - '0');
    }
    assert_true(v.n > 0 && i < MS);
    return i;
}

/* Min and max timestamp over everything a select returns. */
static void read_bounds(tsdb_head *h, int64_t *ret_lo, int64_t *ret_hi) {
    tsdb_series_set *ss;
    assert_int_equal(tsdb_head_select(h, NULL, 0, INT64_MIN, INT64_MAX, &ss), 0);
    int64_t lo = INT64_MAX, hi = INT64_MIN, t;
    double x;
    while (tsdb_series_set_next(ss) == 1)
        while (tsdb_series_set_sample(ss, &t, &x) == 1) {
            if (t < lo) lo = t;
            if (t > hi) hi = t;
        }
    tsdb_series_set_free(ss);
    *ret_lo = lo;
    *ret_hi = hi;
}

static void check_model(tsdb_head *h, const model *m, int64_t mint, int64_t maxt, keep_fn keep, int64_t arg) {
    tsdb_series_set *ss;
    assert_int_equal(tsdb_head_select(h, NULL, 0, mint, maxt, &ss), 0);
    int seen[MS] = {0};
    while (tsdb_series_set_next(ss) == 1) {
        int i = idx_of(labels_get(tsdb_series_set_labels(ss), base_str_c("i")));
        assert_false(seen[i]);
        seen[i] = 1;
        const mser *s = &m->s[i];
        size_t k = 0;
        int64_t t;
        double x;
        int r;
        while ((r = tsdb_series_set_sample(ss, &t, &x)) == 1) {
            for (; k < s->n && s->t[k] < t; k++) {
                if (s->t[k] >= mint && keep(s, s->t[k], arg) == 1)
                    fprintf(stderr, "series %d: want t=%" PRId64 " got %" PRId64 "\n", i, s->t[k], t);
                assert_false(s->t[k] >= mint && keep(s, s->t[k], arg) == 1);
            }
            assert_true(k < s->n);
            assert_int_equal(s->t[k], t);
            assert_int_equal(s->v[k], d2bits(x));
            k++;
        }
        assert_int_equal(r, 0);
        for (; k < s->n && s->t[k] <= maxt; k++) assert_false(s->t[k] >= mint && keep(s, s->t[k], arg) == 1);
    }
    tsdb_series_set_free(ss);
    for (int i = 0; i < MS; i++) {
        if (seen[i]) continue;
        const mser *s = &m->s[i];
        for (size_t k = 0; k < s->n; k++)
            assert_false(s->t[k] >= mint && s->t[k] <= maxt && keep(s, s->t[k], arg) == 1);
    }
}

static uint64_t rnd_state = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void) {
    rnd_state ^= rnd_state << 13;
    rnd_state ^= rnd_state >> 7;
    rnd_state ^= rnd_state << 17;
    return rnd_state;
}

/* Random appends in batches, checked against the model commit by commit:
 * mostly in order, many before the series' last sample (in and out of
 * the window), values from a few patterns so that noops and duplicates
 * happen, the stale marker among them. */
static void random_fill(tsdb_head *h, model *m, labels_set **ls, int steps, int64_t *clock) {
    tsdb_head_app *a;
    assert_int_equal(tsdb_head_app_new(h, &a), 0);
    tsdb_append_result want;
    memset(&want, 0, sizeof want);
    for (int k = 0; k < steps; k++) {
        int i = (int)(rnd() % MS);
        mser *s = &m->s[i];
        int64_t t;
        uint64_t x = rnd() % 10;
        size_t same = 0; /* 1 + index of the sample whose value to repeat */
        double v;
        if (!s->has || x < 5) {
            *clock += 10 + (int64_t)(rnd() % 3) * 10;
            t = *clock;
        } else if (x < 8) {
            int64_t back = (int64_t)(rnd() % (uint64_t)(m->window > 0 ? m->window * 5 / 4 + 1 : 400));
            t = m->headmax - back < s->last ? m->headmax - back : s->last - 1 - back % 50;
        } else { /* again one of the series' 64 newest: noop or duplicate */
            size_t back = s->n < 64 ? s->n : 64, j = s->n - 1 - (size_t)(rnd() % back);
            t = s->t[j];
            same = rnd() % 2 ? j + 1 : 0;
        }
        uint64_t y = rnd() % 20;
        if (same)
            v = bits2d(s->v[same - 1]);
        else if (y == 0)
            v = bits2d(0x7ff0000000000002ull); /* stale marker */
        else if (y < 3)
            v = (double)(rnd() % 3) + 100.5;
        else
            v = (double)((t / 10) % 5);
        assert_int_equal(tsdb_head_app_add(a, ls[i], t, v), 0);
        model_add(m, i, t, d2bits(v), &want);
        if (rnd() % 40 == 0 || k + 1 == steps) {
            tsdb_append_result r;
            assert_int_equal(tsdb_head_app_commit(a, &r), 0);
            assert_int_equal(r.appended, want.appended);
            assert_int_equal(r.out_of_order_appended, want.out_of_order_appended);
            assert_int_equal(r.noop, want.noop);
            assert_int_equal(r.duplicate, want.duplicate);
            assert_int_equal(r.too_old, want.too_old);
            assert_int_equal(r.out_of_order, want.out_of_order);
            memset(&want, 0, sizeof want);
        }
    }
    tsdb_head_app_free(a);
}

static void model_counts(const model *m, uint64_t *ret_total, int64_t *ret_mint, int64_t *ret_maxt) {
    uint64_t n = 0;
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    for (int i = 0; i < MS; i++) {
        n += m->s[i].n;
        if (m->s[i].n) {
            if (m->s[i].t[0] < lo) lo = m->s[i].t[0];
            if (m->s[i].t[m->s[i].n - 1] > hi) hi = m->s[i].t[m->s[i].n - 1];
        }
    }
    *ret_total = n;
    *ret_mint = lo;
    *ret_maxt = hi;
}

/* ---- tests -------------------------------------------------------------- */

static void test_window_off(void **st) {
    (void)st;
    tsdb_head *h = hopen(NULL, 0, 0);
    labels_set *a = ser(0);
    assert_int_equal(add1(h, a, 1000, 1.0).appended, 1);
    assert_int_equal(add1(h, a, 2000, 2.0).appended, 1);
    tsdb_append_result r = add1(h, a, 1500, 1.5);
    assert_int_equal(r.appended, 0);
    assert_int_equal(r.out_of_order, 1);
    assert_int_equal(r.out_of_order_appended, 0);
    assert_int_equal(add1(h, a, 2000, 2.0).noop, 1);
    assert_int_equal(add1(h, a, 2000, 3.0).duplicate, 1);
    tsdb_head_stats hs;
    tsdb_head_stats_get(h, &hs);
    assert_int_equal(hs.ooo_samples, 0);
    assert_int_equal(hs.ooo_series, 0);
    assert_int_equal(hs.samples, 2);
    assert_int_equal(hs.totals.out_of_order, 1);
    labels_unref(a);
    tsdb_head_close(h);
}

static void test_window_boundary(void **st) {
    (void)st;
    tsdb_head *h = hopen(NULL, 5000, 0);
    labels_set *a = ser(0), *b = ser(1);
    int64_t lo, hi;
    tsdb_head_bounds(h, &lo, &hi);
    assert_true(lo == INT64_MAX && hi == INT64_MIN);
    assert_int_equal(tsdb_head_min_valid_time(h), INT64_MIN);
    assert_int_equal(add1(h, a, 10000, 1.0).appended, 1);
    assert_int_equal(add1(h, a, 20000, 2.0).appended, 1);
    assert_int_equal(add1(h, b, 12000, 3.0).appended, 1); /* after b's last: in order */
    tsdb_head_bounds(h, &lo, &hi);
    assert_int_equal(lo, 10000);
    assert_int_equal(hi, 20000);
    /* exactly max - window is inside */
    tsdb_append_result r = add1(h, a, 15000, 1.5);
    assert_int_equal(r.appended, 1);
    assert_int_equal(r.out_of_order_appended, 1);
    r = add1(h, a, 14999, 1.5);
    assert_int_equal(r.appended, 0);
    assert_int_equal(r.too_old, 1);
    assert_int_equal(r.out_of_order, 0);
    /* the window is the head's, not the series': b's last is 12000 */
    r = add1(h, b, 11000, 3.0);
    assert_int_equal(r.too_old, 1);
    r = add1(h, b, 4000, 3.0);
    assert_int_equal(r.too_old, 1);
    /* the head max moves the window */
    assert_int_equal(add1(h, a, 20500, 2.5).appended, 1); /* limit 15500 */
    r = add1(h, b, 16000, 3.5);
    assert_int_equal(r.appended, 1); /* after b's last: in order */
    assert_int_equal(r.out_of_order_appended, 0);
    assert_int_equal(add1(h, b, 15500, 3.5).out_of_order_appended, 1);
    assert_int_equal(add1(h, b, 15499, 3.5).too_old, 1);
    int64_t t[16];
    uint64_t v[16];
    size_t n = read1(h, b, INT64_MIN, INT64_MAX, t, v, 16);
    assert_int_equal(n, 3);
    assert_true(t[0] == 12000 && t[1] == 15500 && t[2] == 16000);
    /* GC drops OOO samples before mint; the min valid time wins over the
     * window */
    uint64_t removed;
    assert_int_equal(tsdb_head_gc(h, 16000, &removed), 0);
    assert_int_equal(removed, 0);
    assert_int_equal(tsdb_head_min_valid_time(h), 16000);
    r = add1(h, a, 15999, 9.0);
    assert_int_equal(r.too_old, 1);
    r = add1(h, a, 16000, 9.0);
    assert_int_equal(r.out_of_order_appended, 1);
    tsdb_head_stats hs;
    tsdb_head_stats_get(h, &hs);
    tsdb_head_bounds(h, &lo, &hi);
    assert_int_equal(lo, hs.mint);
    assert_int_equal(hi, hs.maxt);
    assert_int_equal(lo, 10000); /* a's open chunk is kept whole */
    assert_int_equal(hi, 20500);
    assert_int_equal(hs.totals.out_of_order_appended, 3);
    assert_int_equal(hs.ooo_series, 1); /* b's store is empty and freed */
    assert_int_equal(hs.ooo_samples, 1);
    n = read1(h, a, INT64_MIN, INT64_MAX, t, v, 16);
    assert_int_equal(n, 4);
    assert_true(t[0] == 10000 && t[1] == 16000 && t[2] == 20000 && t[3] == 20500);
    assert_int_equal(v[1], d2bits(9.0));
    n = read1(h, b, INT64_MIN, INT64_MAX, t, v, 16);
    assert_int_equal(n, 2);
    assert_true(t[0] == 12000 && t[1] == 16000);
    labels_unref(a);
    labels_unref(b);
    tsdb_head_close(h);
}

static void test_noop_duplicate(void **st) {
    (void)st;
    tsdb_head *h = hopen(NULL, 1000000, 16);
    labels_set *a = ser(0);
    tsdb_head_app *ap;
    assert_int_equal(tsdb_head_app_new(h, &ap), 0);
    /* in order: 100 samples at 1000..100000, 16 a chunk: 6 closed + open */
    for (int64_t k = 1; k <= 100; k++) assert_int_equal(tsdb_head_app_add(ap, a, k * 1000, (double)k), 0);
    tsdb_append_result r;
    assert_int_equal(tsdb_head_app_commit(ap, &r), 0);
    assert_int_equal(r.appended, 100);
    /* against a closed chunk, the open chunk, and the last sample */
    static const int64_t at[] = {5000, 50000, 97000, 100000};
    for (size_t k = 0; k < 4; k++) {
        assert_int_equal(add1(h, a, at[k], (double)(at[k] / 1000)).noop, 1);
        assert_int_equal(add1(h, a, at[k], 0.5).duplicate, 1);
    }
    /* 80 OOO samples between them: several OOO chunks */
    for (int64_t k = 1; k <= 80; k++)
        assert_int_equal(tsdb_head_app_add(ap, a, k * 1000 + 500, -(double)k), 0);
    assert_int_equal(tsdb_head_app_commit(ap, &r), 0);
    assert_int_equal(r.appended, 80);
    assert_int_equal(r.out_of_order_appended, 80);
    tsdb_head_stats hs;
    tsdb_head_stats_get(h, &hs);
    assert_true(hs.ooo_chunks >= 3);
    assert_int_equal(hs.ooo_samples, 80);
    assert_int_equal(hs.samples, 180);
    assert_true(hs.bytes_ooo > 0);
    /* against OOO chunks and the OOO buffer */
    assert_int_equal(add1(h, a, 1500, -1.0).noop, 1);
    assert_int_equal(add1(h, a, 1500, 1.0).duplicate, 1);
    assert_int_equal(add1(h, a, 80500, -80.0).noop, 1);
    assert_int_equal(add1(h, a, 80500, 80.0).duplicate, 1);
    assert_int_equal(add1(h, a, 81500, -81.0).out_of_order_appended, 1); /* into the buffer */
    assert_int_equal(add1(h, a, 81500, -81.0).noop, 1);
    assert_int_equal(add1(h, a, 81500, 81.0).duplicate, 1);
    int64_t t[256];
    uint64_t v[256];
    size_t n = read1(h, a, INT64_MIN, INT64_MAX, t, v, 256);
    assert_int_equal(n, 181);
    for (size_t k = 0; k < n; k++) {
        int64_t want = k < 162 ? (int64_t)(k / 2 + 1) * 1000 + (k % 2 ? 500 : 0) : (int64_t)(k - 80) * 1000;
        assert_int_equal(t[k], want);
        double x = bits2d(v[k]);
        assert_true(t[k] % 1000 ? x == -(double)(t[k] / 1000) : x == (double)(t[k] / 1000));
    }
    /* ranges cut across both kinds of chunks */
    n = read1(h, a, 40200, 40600, t, v, 256);
    assert_int_equal(n, 1);
    assert_int_equal(t[0], 40500);
    n = read1(h, a, 40000, 45000, t, v, 256);
    assert_int_equal(n, 11);
    tsdb_head_app_free(ap);
    labels_unref(a);
    tsdb_head_close(h);
}

/* Reverse-ordered arrival: OOO chunks keep filling (small neighbours are
 * merged), and stay sorted and disjoint. */
static void test_reverse_fill(void **st) {
    (void)st;
    tsdb_head *h = hopen(NULL, INT64_MAX, 0);
    labels_set *a = ser(0);
    assert_int_equal(add1(h, a, 1000000, 0.0).appended, 1);
    tsdb_head_app *ap;
    assert_int_equal(tsdb_head_app_new(h, &ap), 0);
    for (int64_t k = 999; k >= 1; k--) assert_int_equal(tsdb_head_app_add(ap, a, k * 1000, (double)k), 0);
    tsdb_append_result r;
    assert_int_equal(tsdb_head_app_commit(ap, &r), 0);
    assert_int_equal(r.out_of_order_appended, 999);
    tsdb_head_stats hs;
    tsdb_head_stats_get(h, &hs);
    assert_int_equal(hs.ooo_samples, 999);
    /* 31 flushes of 32: 992 samples in 9 chunks (full ones but the first),
     * 7 in the buffer */
    assert_int_equal(hs.ooo_chunks, 9);
    int64_t *t = malloc(1000 * sizeof *t);
    uint64_t *v = malloc(1000 * sizeof *v);
    size_t n = read1(h, a, INT64_MIN, INT64_MAX, t, v, 1000);
    assert_int_equal(n, 1000);
    for (size_t k = 0; k < n; k++) assert_int_equal(t[k], (int64_t)(k + 1) * 1000);
    free(t);
    free(v);
    tsdb_head_app_free(ap);
    labels_unref(a);
    tsdb_head_close(h);
}

/* Random input against the model; restart (sequential and parallel
 * replay), more appends, checkpoint + restart, GC, block write + read. */
static void test_model(void **st) {
    (void)st;
    char *dir = kelvin_tmpdir("head-ooo"), err[256];
    const int64_t W = 500;
    model m;
    model_init(&m, W);
    labels_set *ls[MS];
    for (int i = 0; i < MS; i++) ls[i] = ser(i);
    tsdb_head *h = hopen(dir, W, 16);
    int64_t clock = 0;
    random_fill(h, &m, ls, 12000, &clock);
    check_model(h, &m, INT64_MIN, INT64_MAX, keep_all, 0);
    check_model(h, &m, 3000, 9000, keep_all, 0);
    uint64_t total;
    int64_t lo, hi, blo, bhi;
    model_counts(&m, &total, &lo, &hi);
    tsdb_head_stats hs;
    tsdb_head_stats_get(h, &hs);
    assert_int_equal(hs.samples, total);
    assert_true(hs.ooo_chunks > MS);
    assert_true(hs.ooo_samples > 1000);
    tsdb_head_bounds(h, &blo, &bhi);
    assert_int_equal(blo, lo);
    assert_int_equal(bhi, hi);
    assert_int_equal(hs.mint, lo);
    assert_int_equal(hs.maxt, hi);
    tsdb_head_close(h);

    /* restart, sequential and parallel replay */
    for (int th = 1; th <= 4; th += 3) {
        tsdb__head_replay_threads = th;
        h = hopen(dir, W, 16);
        check_model(h, &m, INT64_MIN, INT64_MAX, keep_all, 0);
        tsdb_head_stats_get(h, &hs);
        assert_int_equal(hs.samples, total);
        assert_int_equal(hs.replay_rejected, 0);
        tsdb_head_bounds(h, &blo, &bhi);
        assert_int_equal(blo, lo);
        assert_int_equal(bhi, hi);
        tsdb_head_close(h);
    }
    tsdb__head_replay_threads = 0;

    /* the head max is the same after replay: more appends agree with the
     * model; then a checkpoint and a restart */
    h = hopen(dir, W, 16);
    random_fill(h, &m, ls, 3000, &clock);
    int64_t cutoff = clock / 2;
    assert_int_equal(tsdb_head_checkpoint(h, cutoff, err, sizeof err), 0);
    for (int i = 0; i < MS; i++) m.s[i].ck_last = m.s[i].last;
    random_fill(h, &m, ls, 2000, &clock);
    check_model(h, &m, INT64_MIN, INT64_MAX, keep_all, 0);
    tsdb_head_close(h);
    tsdb_wal_report rep;
    tsdb_head_opts o = {.wal_dir = dir, .chunk_samples = 16, .ooo_window_ms = W};
    assert_int_equal(tsdb_head_open(&o, &h, &rep, err, sizeof err), 0);
    assert_true(rep.checkpoint > 0);
    assert_int_equal(rep.corruptions, 0);
    check_model(h, &m, INT64_MIN, INT64_MAX, keep_ckpt, cutoff);
    tsdb_head_stats_get(h, &hs);
    assert_int_equal(hs.replay_rejected, 0);

    /* block write + read: OOO samples are in the block */
    char *bdir = kelvin_tmpdir("head-ooo-blk"), path[512], ul[27];
    tsdb_block_meta meta;
    int64_t bmin = cutoff, bmax = clock - 2000;
    assert_int_equal(tsdb_block_write_head(bdir, h, bmin, bmax, NULL, &meta, err, sizeof err), 0);
    tsdb_ulid_format(&meta.ulid, ul);
    snprintf(path, sizeof path, "%s/%s", bdir, ul);
    tsdb_block *b;
    assert_int_equal(tsdb_block_open(path, &b, err, sizeof err), 0);
    tsdb_block_set *bs;
    assert_int_equal(tsdb_block_select(b, NULL, 0, INT64_MIN, INT64_MAX, &bs), 0);
    uint64_t nb = 0, nooo = 0;
    while (tsdb_block_set_next(bs) == 1) {
        const mser *s = &m.s[idx_of(labels_get(tsdb_block_set_labels(bs), base_str_c("i")))];
        size_t k = mfind(s, bmin);
        int64_t t;
        double x;
        int r;
        while ((r = tsdb_block_set_sample(bs, &t, &x)) == 1) {
            assert_true(k < s->n);
            assert_int_equal(t, s->t[k]);
            assert_int_equal(d2bits(x), s->v[k]);
            nooo += s->o[k];
            k++;
            nb++;
        }
        assert_int_equal(r, 0);
        assert_true(k == s->n || s->t[k] >= bmax);
    }
    tsdb_block_set_free(bs);
    tsdb_block_close(b);
    uint64_t want = 0;
    for (int i = 0; i < MS; i++) want += mfind(&m.s[i], bmax) - mfind(&m.s[i], bmin);
    assert_int_equal(nb, want);
    assert_int_equal(meta.num_samples, want);
    assert_true(nooo > 0);
    kelvin_rm_rf(bdir);
    free(bdir);

    /* GC: OOO data before mint goes, appends before it are too_old */
    int64_t gcmint = clock - 1500;
    uint64_t removed;
    assert_int_equal(tsdb_head_gc(h, gcmint, &removed), 0);
    check_model(h, &m, gcmint, INT64_MAX, keep_all, 0);
    tsdb_head_stats_get(h, &hs);
    tsdb_head_bounds(h, &blo, &bhi);
    assert_int_equal(blo, hs.mint);
    assert_int_equal(bhi, hs.maxt);
    read_bounds(h, &lo, &hi);
    assert_int_equal(blo, lo);
    assert_int_equal(bhi, hi);
    assert_true(blo < gcmint); /* open chunks straddle mint */
    m.minvalid = gcmint;
    random_fill(h, &m, ls, 2000, &clock);
    check_model(h, &m, gcmint, INT64_MAX, keep_all, 0);
    tsdb_head_close(h);
    for (int i = 0; i < MS; i++) labels_unref(ls[i]);
    model_free(&m);
    kelvin_rm_rf(dir);
    free(dir);
}

/* The OOO record: round trip, and what decoders accept. */
static void test_record(void **st) {
    (void)st;
    tsdb_rec_sample s[3] = {{7, 1000, 1.5}, {7, 900, -0.0}, {9, -5, 0}};
    memcpy(&s[2].v, &(uint64_t){0x7ff0000000000002ull}, 8);
    base_buf b = BASE_BUF_INIT;
    assert_int_equal(tsdb_rec_enc_ooo_samples(&b, s, 3), 0);
    assert_int_equal((uint8_t)b.data[0], TSDB_REC_OOO_SAMPLES);
    tsdb_rec_dec d;
    assert_int_equal(tsdb_rec_dec_init(&d, (const uint8_t *)b.data, b.len), 0);
    assert_int_equal(d.type, TSDB_REC_OOO_SAMPLES);
    assert_int_equal(d.count, 3);
    tsdb_rec_sample x;
    for (int i = 0; i < 3; i++) {
        assert_int_equal(tsdb_rec_dec_sample(&d, &x), 1);
        assert_int_equal(x.ref, s[i].ref);
        assert_int_equal(x.t, s[i].t);
        assert_memory_equal(&x.v, &s[i].v, 8);
    }
    assert_int_equal(tsdb_rec_dec_sample(&d, &x), 0);
    /* same bytes as a samples record but the type */
    base_buf c = BASE_BUF_INIT;
    assert_int_equal(tsdb_rec_enc_samples(&c, s, 3), 0);
    assert_int_equal(b.len, c.len);
    assert_memory_equal(b.data + 1, c.data + 1, b.len - 1);
    /* wrong accessor, truncation */
    assert_int_equal(tsdb_rec_dec_init(&d, (const uint8_t *)b.data, b.len), 0);
    tsdb_rec_tombstone ts;
    assert_int_equal(tsdb_rec_dec_tombstone(&d, &ts), BASE_E_INVAL);
    assert_int_equal(tsdb_rec_dec_init(&d, (const uint8_t *)b.data, b.len - 3), 0);
    int r = 0;
    for (int i = 0; i < 4 && (r = tsdb_rec_dec_sample(&d, &x)) == 1; i++) {
    }
    assert_int_equal(r, BASE_E_TRUNCATED);
    base_buf_free(&b);
    base_buf_free(&c);
}

/* ---- concurrency -------------------------------------------------------- */

enum { CW = 4, CSER = 24, CT = 150, CLAG = 7 };

typedef struct carg {
    tsdb_head *h;
    int id;
    _Atomic int *stop;
} carg;

/* Series of thread id get in-order samples at even multiples of 20 and,
 * CLAG steps late, out-of-order ones at the odd multiples of 10 between. */
static void *ooo_writer(void *p) {
    carg *w = p;
    tsdb_head_app *a;
    if (tsdb_head_app_new(w->h, &a)) abort();
    labels_set *ls[CSER];
    char b[16];
    for (int i = 0; i < CSER; i++) {
        snprintf(b, sizeof b, "%d", w->id * CSER + i);
        if (labels_from_cstrs(&ls[i], "__name__", "c", "i", b, NULL)) abort();
    }
    for (int t = 1; t <= CT + CLAG; t++) {
        for (int i = 0; i < CSER; i++) {
            if (t <= CT && tsdb_head_app_add(a, ls[i], (int64_t)t * 20, (double)t)) abort();
            if (t > CLAG && tsdb_head_app_add(a, ls[i], (int64_t)(t - CLAG) * 20 - 10, -(double)t)) abort();
        }
        tsdb_append_result r;
        if (tsdb_head_app_commit(a, &r)) abort();
        size_t want = (size_t)CSER * ((t <= CT) + (t > CLAG));
        if (r.appended != want || r.out_of_order_appended != (t > CLAG ? (size_t)CSER : 0)) abort();
    }
    for (int i = 0; i < CSER; i++) labels_unref(ls[i]);
    tsdb_head_app_free(a);
    return NULL;
}

static void *ooo_reader(void *p) {
    carg *w = p;
    while (!atomic_load(w->stop)) {
        tsdb_series_set *ss;
        if (tsdb_head_select(w->h, NULL, 0, INT64_MIN, INT64_MAX, &ss)) abort();
        while (tsdb_series_set_next(ss) == 1) {
            int64_t t, lt = INT64_MIN;
            double v;
            int r;
            while ((r = tsdb_series_set_sample(ss, &t, &v)) == 1) {
                if (t <= lt) abort();
                if (t % 20 ? v >= 0 : v != (double)(t / 20)) abort();
                lt = t;
            }
            if (r) abort();
        }
        tsdb_series_set_free(ss);
        int64_t lo, hi;
        tsdb_head_bounds(w->h, &lo, &hi);
        if (lo <= hi && lo < 10) abort();
        tsdb_head_stats hs;
        tsdb_head_stats_get(w->h, &hs);
        if (w->id == CW + 1 && tsdb_head_gc(w->h, 0, NULL)) abort(); /* keeps everything */
    }
    labels_thread_cleanup();
    return NULL;
}

static void check_conc(tsdb_head *h) {
    tsdb_series_set *ss;
    assert_int_equal(tsdb_head_select(h, NULL, 0, INT64_MIN, INT64_MAX, &ss), 0);
    size_t ns = 0;
    while (tsdb_series_set_next(ss) == 1) {
        int64_t t, want = 10;
        double v;
        while (tsdb_series_set_sample(ss, &t, &v) == 1) {
            assert_int_equal(t, want);
            want += 10;
        }
        assert_int_equal(want, (int64_t)CT * 20 + 10);
        ns++;
    }
    tsdb_series_set_free(ss);
    assert_int_equal(ns, CW * CSER);
}

static void test_concurrency(void **st) {
    (void)st;
    char *dir = kelvin_tmpdir("head-ooo");
    tsdb_head *h = hopen(dir, 1000000, 0);
    _Atomic int stop = 0;
    pthread_t th[CW + 2];
    carg w[CW + 2];
    for (int i = 0; i < CW + 2; i++) {
        w[i] = (carg){h, i, &stop};
        assert_int_equal(pthread_create(&th[i], NULL, i < CW ? ooo_writer : ooo_reader, &w[i]), 0);
    }
    for (int i = 0; i < CW; i++) pthread_join(th[i], NULL);
    atomic_store(&stop, 1);
    for (int i = CW; i < CW + 2; i++) pthread_join(th[i], NULL);
    check_conc(h);
    tsdb_head_stats hs;
    tsdb_head_stats_get(h, &hs);
    assert_int_equal(hs.ooo_samples, (uint64_t)CW * CSER * CT);
    assert_int_equal(hs.samples, (uint64_t)CW * CSER * CT * 2);
    tsdb_head_close(h);
    h = hopen(dir, 1000000, 0);
    check_conc(h);
    tsdb_head_close(h);
    kelvin_rm_rf(dir);
    free(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_window_off),     cmocka_unit_test(test_window_boundary),
        cmocka_unit_test(test_noop_duplicate), cmocka_unit_test(test_reverse_fill),
        cmocka_unit_test(test_model),          cmocka_unit_test(test_record),
        cmocka_unit_test(test_concurrency),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
