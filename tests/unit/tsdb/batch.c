/* batch.c -- tests of the batch reads: tsdb_chunk_it_next_n against
 * next() on every encoding and on truncated and corrupted chunks;
 * tsdb_series_set_samples (head: in-order, out-of-order, the open chunk,
 * deletions) and tsdb_db_set_samples (blocks, head, overlapping blocks,
 * deletions) against the per-sample reads, with random ranges, matchers
 * and batch sizes, and read three ways (per sample, in batches, mixed on
 * one series): the sequences of series, samples (bit for bit) and errors
 * must be equal. Damaged chunks in a block (a bad CRC; a CRC-valid chunk
 * that fails to decode part way) give the same samples and errors in the
 * same places whichever way they are read.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tmpdir.h"

#include "base/err.h"
#include "labels/labels.h"
#include "tsdb/chunk.h"
#include "tsdb/chunk_int.h"
#include "tsdb/db.h"
#include "tsdb/format.h"
#include "tsdb/wal.h"

#define MIN  60000LL
#define HOUR (60 * MIN)

static uint64_t rng = 0x2545f4914f6cdd1dull;
static uint64_t rnd(void) {
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return rng * 0x2545f4914f6cdd1dull;
}

static uint64_t dbits(double v) {
    uint64_t b;
    memcpy(&b, &v, sizeof b);
    return b;
}

/* ---- event streams -------------------------------------------------------------- */

enum { EV_SAMPLE, EV_ERR, EV_SERIES, EV_END };

typedef struct ev {
    int kind;
    int64_t t;  /* time, or the error */
    uint64_t v; /* value bits, or the labels' hash */
} ev;

typedef struct evs {
    ev *e;
    size_t n, cap;
} evs;

static void push(evs *s, int kind, int64_t t, uint64_t v) {
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 1024;
        s->e = realloc(s->e, s->cap * sizeof *s->e);
        assert_non_null(s->e);
    }
    s->e[s->n++] = (ev){kind, t, v};
}

static void same(const evs *a, const evs *b, const char *what) {
    size_t n = a->n < b->n ? a->n : b->n;
    for (size_t i = 0; i < n; i++)
        if (a->e[i].kind != b->e[i].kind || a->e[i].t != b->e[i].t || a->e[i].v != b->e[i].v)
            fail_msg("%s: event %zu differs: (%d %lld %llx) vs (%d %lld %llx)", what, i, a->e[i].kind,
                     (long long)a->e[i].t, (unsigned long long)a->e[i].v, b->e[i].kind, (long long)b->e[i].t,
                     (unsigned long long)b->e[i].v);
    assert_int_equal(a->n, b->n);
}

/* One series read in one of three ways: 0 per sample, 1 batches of random
 * size, 2 mixed. sample(ctx, t, v) and samples(ctx, t, v, cap) are the
 * two calls. Errors are recorded and reading goes on (at most 8 in a
 * row: a head's damaged open chunk repeats its error). */
typedef int (*sample_fn)(void *ctx, int64_t *t, double *v);
typedef int (*samples_fn)(void *ctx, int64_t *t, double *v, size_t cap);

static void read_series(void *ctx, sample_fn one, samples_fn many, int mode, evs *out) {
    int64_t t[64];
    double v[64];
    int errs = 0;
    for (;;) {
        int m = mode == 2 ? (int)(rnd() % 2) : mode;
        int r;
        if (m == 0) {
            r = one(ctx, &t[0], &v[0]);
            if (r == 1) r = 1;
        } else {
            size_t cap = 1 + (size_t)(rnd() % (rnd() % 4 ? 64 : 3));
            r = many(ctx, t, v, cap);
            assert_true(r <= (int)cap);
        }
        if (r == 0) break;
        if (r < 0) {
            push(out, EV_ERR, r, 0);
            if (++errs == 8) break;
            continue;
        }
        errs = 0;
        for (int i = 0; i < r; i++) push(out, EV_SAMPLE, t[i], dbits(v[i]));
    }
    push(out, EV_END, 0, 0);
}

static int db_one(void *ctx, int64_t *t, double *v) {
    return tsdb_db_set_sample(ctx, t, v);
}
static int db_many(void *ctx, int64_t *t, double *v, size_t cap) {
    return tsdb_db_set_samples(ctx, t, v, cap);
}
static int head_one(void *ctx, int64_t *t, double *v) {
    return tsdb_series_set_sample(ctx, t, v);
}
static int head_many(void *ctx, int64_t *t, double *v, size_t cap) {
    return tsdb_series_set_samples(ctx, t, v, cap);
}

static void read_db(tsdb_db *db, labels_matcher *const *ms, size_t n, int64_t mint, int64_t maxt, int mode,
                    evs *out) {
    tsdb_db_set *s;
    assert_int_equal(tsdb_db_select(db, ms, n, mint, maxt, &s), 0);
    int r;
    while ((r = tsdb_db_set_next(s)) == 1) {
        push(out, EV_SERIES, 0, labels_hash(tsdb_db_set_labels(s)));
        read_series(s, db_one, db_many, mode, out);
    }
    assert_int_equal(r, 0);
    tsdb_db_set_free(s);
}

static void read_head(tsdb_head *h, labels_matcher *const *ms, size_t n, int64_t mint, int64_t maxt, int mode,
                      evs *out) {
    tsdb_series_set *s;
    assert_int_equal(tsdb_head_select(h, ms, n, mint, maxt, &s), 0);
    int r;
    while ((r = tsdb_series_set_next(s)) == 1) {
        push(out, EV_SERIES, 0, labels_hash(tsdb_series_set_labels(s)));
        read_series(s, head_one, head_many, mode, out);
    }
    assert_int_equal(r, 0);
    tsdb_series_set_free(s);
}

/* ---- chunks --------------------------------------------------------------------- */

/* The samples and final error of a chunk read with next(), or with
 * next_n() in random sizes. */
static void read_chunk(const uint8_t *d, size_t len, int batch, evs *out) {
    tsdb_chunk_it it;
    tsdb_chunk_it_init(&it, d, len);
    if (!batch) {
        while (tsdb_chunk_it_next(&it)) push(out, EV_SAMPLE, it.t, dbits(it.v));
    } else {
        int64_t t[40];
        double v[40];
        for (;;) {
            size_t cap = 1 + (size_t)(rnd() % 40);
            size_t k = tsdb_chunk_it_next_n(&it, t, v, cap);
            for (size_t i = 0; i < k; i++) push(out, EV_SAMPLE, t[i], dbits(v[i]));
            if (k && !tsdb_chunk_it_err(&it)) {
                assert_int_equal(it.t, t[k - 1]); /* the iterator holds the last one */
                assert_int_equal(dbits(it.v), dbits(v[k - 1]));
            }
            if (k < cap) break;
        }
        assert_int_equal(tsdb_chunk_it_next_n(&it, t, v, 5), 0);
    }
    push(out, EV_ERR, tsdb_chunk_it_err(&it), 0);
}

static void test_chunk_next_n(void **st) {
    (void)st;
    base_buf b = BASE_BUF_INIT;
    size_t damaged = 0;
    for (int round = 0; round < 400; round++) {
        unsigned flags = round % 5 == 4 ? TSDB_CHUNK_PROM_XOR : 0;
        uint32_t n = 1 + (uint32_t)(rnd() % (round % 3 ? 200 : 2000));
        int kind = round % 7;
        tsdb_chunk_app a;
        tsdb_chunk_app_init(&a, n, flags);
        int64_t t = (int64_t)(rnd() % 1000000) - 500000;
        double v = 0;
        for (uint32_t i = 0; i < n; i++) {
            t += kind == 1 ? 15000 + (int64_t)(rnd() % 9) - 4 : 15000; /* steady, or jittered */
            switch (kind) {
            case 0:
            case 1: v = 1; break;                                                           /* constant */
            case 2: v += (double)(rnd() % 100); break;                                      /* counter */
            case 3: v = (double)(rnd() % 100000) / 100; break;                              /* 2 decimals */
            case 4: v = (double)rnd() / 3.0; break;                                         /* floats */
            case 5: v = i % 7 ? (double)(rnd() % 10) : (rnd() % 2 ? NAN : INFINITY); break; /* specials */
            default: /* decimals with exceptions (decoded in batches, divided after) */
                v = i % 37 != 17 ? (double)(rnd() % 100000) / 100 : (rnd() % 2 ? -0.0 : (double)rnd() / 3.0);
            }
            assert_int_equal(tsdb_chunk_app_append(&a, t, v), 0);
        }
        base_buf_reset(&b);
        assert_int_equal(tsdb_chunk_app_finish(&a, &b), 0);
        tsdb_chunk_app_free(&a);
        uint8_t *d = malloc(b.len + 1);
        memcpy(d, b.data, b.len);
        for (int damage = 0; damage < 4; damage++) {
            size_t len = b.len;
            memcpy(d, b.data, b.len);
            if (damage == 1) len = (size_t)(rnd() % b.len); /* cut short */
            if (damage >= 2) d[rnd() % b.len] ^= (uint8_t)(1u << (rnd() % 8));
            evs x = {0}, y = {0};
            read_chunk(d, len, 0, &x);
            read_chunk(d, len, 1, &y);
            same(&x, &y, "chunk");
            if (!damage) assert_int_equal(x.n, n + 1);
            if (damage && x.e[x.n - 1].t) damaged++;
            free(x.e);
            free(y.e);
        }
        free(d);
    }
    assert_true(damaged > 100); /* the error paths were taken */
    base_buf_free(&b);
}

/* ---- the head ------------------------------------------------------------------- */

static labels_set *series(int i) {
    char v[16], g[16];
    snprintf(v, sizeof v, "%d", i);
    snprintf(g, sizeof g, "%d", i % 3);
    labels_set *ls;
    assert_int_equal(labels_from_cstrs(&ls, "__name__", "m", "g", g, "s", v, NULL), 0);
    return ls;
}

#define NS 24

/* Random appends: mostly in order at ~15 s, some out of order within the
 * window, gaps; series 0 gets one sample only. */
static void appends(tsdb_head *h, int64_t from, int64_t to) {
    tsdb_head_app *a;
    assert_int_equal(tsdb_head_app_new(h, &a), 0);
    labels_set *ls[NS];
    for (int i = 0; i < NS; i++) ls[i] = series(i);
    for (int64_t t = from; t < to; t += 15000) {
        for (int i = 1; i < NS; i++) {
            if (rnd() % 10 == 0) continue;
            int64_t tt = t + (int64_t)(rnd() % 5);
            if (i % 4 == 0 && rnd() % 6 == 0) tt -= (int64_t)(rnd() % (20 * MIN)); /* out of order */
            assert_int_equal(tsdb_head_app_add(a, ls[i], tt, (double)(rnd() % 1000) / 4), 0);
        }
        if (t == from) assert_int_equal(tsdb_head_app_add(a, ls[0], t, 42), 0);
        assert_int_equal(tsdb_head_app_commit(a, NULL), 0);
    }
    for (int i = 0; i < NS; i++) labels_unref(ls[i]);
    tsdb_head_app_free(a);
}

static labels_matcher *rnd_matcher(void) {
    static const char *re[] = {"1.*", "2|5|7", ".*", "1[0-9]", "x"};
    labels_matcher *m;
    int k = (int)(rnd() % 3);
    if (k == 0)
        assert_int_equal(
            labels_matcher_new(LABELS_MATCH_RE, base_str_c("s"), base_str_c(re[rnd() % 5]), &m, NULL, 0), 0);
    else if (k == 1)
        assert_int_equal(labels_matcher_new(LABELS_MATCH_EQ, base_str_c("g"),
                                            base_str_c(rnd() % 2 ? "1" : "2"), &m, NULL, 0),
                         0);
    else
        assert_int_equal(labels_matcher_new(LABELS_MATCH_NEQ, base_str_c("g"), base_str_c("0"), &m, NULL, 0),
                         0);
    return m;
}

static void rnd_range(int64_t lo, int64_t hi, int64_t *mint, int64_t *maxt) {
    int k = (int)(rnd() % 6);
    if (k == 0) {
        *mint = INT64_MIN;
        *maxt = INT64_MAX;
        return;
    }
    *mint = lo + (int64_t)(rnd() % (uint64_t)(hi - lo));
    *maxt = *mint + (int64_t)(rnd() % (uint64_t)(k == 1 ? 60000 : hi - lo));
}

static void compare_head(tsdb_head *h, int64_t lo, int64_t hi, int rounds) {
    for (int r = 0; r < rounds; r++) {
        int64_t mint, maxt;
        rnd_range(lo, hi, &mint, &maxt);
        labels_matcher *m = rnd() % 3 ? rnd_matcher() : NULL;
        evs x = {0}, y = {0}, z = {0};
        read_head(h, &m, m ? 1 : 0, mint, maxt, 0, &x);
        read_head(h, &m, m ? 1 : 0, mint, maxt, 1, &y);
        read_head(h, &m, m ? 1 : 0, mint, maxt, 2, &z);
        same(&x, &y, "head batch");
        same(&x, &z, "head mixed");
        free(x.e);
        free(y.e);
        free(z.e);
        labels_matcher_free(m);
    }
}

static void test_head_batch(void **st) {
    (void)st;
    tsdb_head_opts o = {.chunk_samples = 50, .ooo_window_ms = HOUR};
    tsdb_head *h;
    char err[256];
    assert_int_equal(tsdb_head_open(&o, &h, NULL, err, sizeof err), 0);
    appends(h, 0, 3 * HOUR);
    tsdb_head_stats hs;
    tsdb_head_stats_get(h, &hs);
    assert_true(hs.ooo_samples > 0);
    assert_true(hs.chunks > 0);
    compare_head(h, -HOUR, 4 * HOUR, 40);
    /* deletions: partial, whole, many small ones */
    for (int k = 0; k < 30; k++) {
        labels_matcher *m = rnd_matcher();
        int64_t a = (int64_t)(rnd() % (3 * HOUR)), b = a + (int64_t)(rnd() % (k % 5 ? 10 * MIN : 2 * HOUR));
        assert_int_equal(tsdb_head_delete(h, &m, 1, a, b, NULL), 0);
        labels_matcher_free(m);
    }
    tsdb_head_stats_get(h, &hs);
    assert_true(hs.tombstones > 0);
    compare_head(h, -HOUR, 4 * HOUR, 60);
    assert_int_equal(tsdb_head_close(h), 0);
}

/* ---- the database ---------------------------------------------------------------- */

static tsdb_db *dopen(const char *dir) {
    tsdb_db_opts o;
    tsdb_db_opts_default(&o);
    o.path = dir;
    o.min_block_ms = HOUR;
    o.max_block_ms = 3 * HOUR;
    o.retention_ms = 0;
    o.ooo_window_ms = HOUR;
    o.chunk_samples = 40;
    o.maintain_interval_ms = -1;
    tsdb_db *db;
    char err[512];
    int e = tsdb_db_open(&o, &db, NULL, err, sizeof err);
    if (e) fprintf(stderr, "open: %s\n", err);
    assert_int_equal(e, 0);
    return db;
}

static void compare_db(tsdb_db *db, int64_t lo, int64_t hi, int rounds) {
    for (int r = 0; r < rounds; r++) {
        int64_t mint, maxt;
        rnd_range(lo, hi, &mint, &maxt);
        labels_matcher *m = rnd() % 3 ? rnd_matcher() : NULL;
        evs x = {0}, y = {0}, z = {0};
        read_db(db, &m, m ? 1 : 0, mint, maxt, 0, &x);
        read_db(db, &m, m ? 1 : 0, mint, maxt, 1, &y);
        read_db(db, &m, m ? 1 : 0, mint, maxt, 2, &z);
        same(&x, &y, "db batch");
        same(&x, &z, "db mixed");
        free(x.e);
        free(y.e);
        free(z.e);
        labels_matcher_free(m);
    }
}

/* Writes a block of [a, b) from a scratch head holding other values at
 * (partly) the same times: a backfill overlapping the database's blocks. */
static void backfill(const char *dir, int64_t a, int64_t b) {
    tsdb_head_opts o = {0};
    tsdb_head *h;
    char err[512];
    assert_int_equal(tsdb_head_open(&o, &h, NULL, err, sizeof err), 0);
    tsdb_head_app *ap;
    assert_int_equal(tsdb_head_app_new(h, &ap), 0);
    labels_set *ls[NS + 2];
    for (int i = 0; i < NS + 2; i++) ls[i] = series(i);
    for (int64_t t = a; t < b; t += 20000)
        for (int i = 2; i < NS + 2; i += 2) assert_int_equal(tsdb_head_app_add(ap, ls[i], t, -(double)t), 0);
    assert_int_equal(tsdb_head_app_commit(ap, NULL), 0);
    for (int i = 0; i < NS + 2; i++) labels_unref(ls[i]);
    tsdb_head_app_free(ap);
    tsdb_block_wopts wo = {.chunk_samples = 33};
    assert_int_equal(tsdb_block_write_head(dir, h, a, b, &wo, NULL, err, sizeof err), 0);
    assert_int_equal(tsdb_head_close(h), 0);
}

static void test_db_batch(void **st) {
    (void)st;
    char *dir = kelvin_tmpdir("batch");
    tsdb_db *db = dopen(dir);
    char err[512];
    for (int k = 0; k < 6; k++) {
        appends(tsdb_db_head(db), k * HOUR, (k + 1) * HOUR);
        assert_int_equal(tsdb_db_maintain(db, err, sizeof err), 0);
    }
    tsdb_db_stats s;
    tsdb_db_stats_get(db, &s);
    assert_true(s.blocks >= 2);
    compare_db(db, -HOUR, 7 * HOUR, 40);
    /* overlapping blocks: merged sample by sample */
    assert_int_equal(tsdb_db_close(db), 0);
    backfill(dir, HOUR + 10 * MIN, 2 * HOUR + 30 * MIN);
    backfill(dir, 5 * HOUR - 2 * MIN, 5 * HOUR + 40 * MIN); /* into the head's time too */
    db = dopen(dir);
    compare_db(db, -HOUR, 7 * HOUR, 40);
    /* deletions everywhere */
    for (int k = 0; k < 20; k++) {
        labels_matcher *m = rnd_matcher();
        int64_t a = (int64_t)(rnd() % (6 * HOUR)), b = a + (int64_t)(rnd() % (k % 4 ? 20 * MIN : 3 * HOUR));
        assert_int_equal(tsdb_db_delete(db, &m, 1, a, b, err, sizeof err), 0);
        labels_matcher_free(m);
    }
    compare_db(db, -HOUR, 7 * HOUR, 60);
    assert_int_equal(tsdb_db_close(db), 0);
    kelvin_rm_rf(dir);
    free(dir);
}

/* ---- damaged chunks ------------------------------------------------------------- */

/* Chunk records of a segment: offsets of their encoding byte, lengths. */
static size_t records(const uint8_t *p, size_t len, size_t *off, size_t *clen, size_t cap) {
    size_t k = 0, o = TSDB_CHUNKS_HEADER;
    while (o < len && k < cap) {
        const uint8_t *q = p + o;
        uint64_t l = 0;
        assert_int_equal(tsdb__get_uvarint(&q, p + len, 0, &l), 0);
        off[k] = (size_t)(q - p);
        clen[k++] = (size_t)l + 1;
        o = off[k - 1] + (size_t)l + 1 + 4;
    }
    return k;
}

static void put_u32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static void test_db_batch_damage(void **st) {
    (void)st;
    char *dir = kelvin_tmpdir("batch");
    tsdb_db *db = dopen(dir);
    char err[512];
    for (int k = 0; k < 3; k++) {
        appends(tsdb_db_head(db), k * HOUR, (k + 1) * HOUR);
        assert_int_equal(tsdb_db_maintain(db, err, sizeof err), 0);
    }
    tsdb_block_meta *bm;
    size_t nb;
    assert_int_equal(tsdb_db_blocks(db, &bm, &nb), 0);
    assert_true(nb >= 1);
    assert_int_equal(tsdb_db_close(db), 0);
    size_t big = 0; /* the block with the most chunks (not the few early OOO samples') */
    for (size_t k = 1; k < nb; k++)
        if (bm[k].num_chunks > bm[big].num_chunks) big = k;
    char u[27], p[600];
    tsdb_ulid_format(&bm[big].ulid, u);
    snprintf(p, sizeof p, "%s/%s/chunks/000001", dir, u);
    free(bm);
    FILE *f = fopen(p, "rb");
    assert_non_null(f);
    uint8_t *seg = malloc(1 << 22);
    size_t len = fread(seg, 1, 1 << 22, f);
    fclose(f);
    size_t off[4096], clen[4096];
    size_t nr = records(seg, len, off, clen, 4096);
    if (nr <= 20) fprintf(stderr, "%zu records in %zu bytes\n", nr, len);
    assert_true(nr > 20);
    /* chunk A: a bad CRC; chunks B, C: CRC-valid, failing part way */
    seg[off[3] + clen[3] / 2] ^= 0x10;
    int fixed = 0;
    for (size_t r = 7; r < nr && fixed < 2; r += 5) {
        for (int tries = 0; tries < 200; tries++) {
            size_t at = off[r] + 2 + (size_t)(rnd() % (clen[r] - 2));
            uint8_t keep = seg[at];
            seg[at] ^= (uint8_t)(1 + rnd() % 255);
            tsdb_chunk_it it;
            tsdb_chunk_it_init(&it, seg + off[r], clen[r]);
            uint32_t got = 0;
            while (tsdb_chunk_it_next(&it)) got++;
            if (tsdb_chunk_it_err(&it) && got >= 2) {
                put_u32(seg + off[r] + clen[r], tsdb_crc32c(0, seg + off[r], clen[r]));
                fixed++;
                break;
            }
            seg[at] = keep;
        }
    }
    assert_int_equal(fixed, 2);
    f = fopen(p, "r+b");
    assert_non_null(f);
    assert_int_equal(fwrite(seg, 1, len, f), len);
    fclose(f);
    free(seg);
    db = dopen(dir);
    size_t errs = 0;
    for (int r = 0; r < 40; r++) {
        int64_t mint, maxt;
        rnd_range(-HOUR, 4 * HOUR, &mint, &maxt);
        if (r < 4) { /* the whole range at least a few times */
            mint = INT64_MIN;
            maxt = INT64_MAX;
        }
        evs x = {0}, y = {0}, z = {0};
        read_db(db, NULL, 0, mint, maxt, 0, &x);
        read_db(db, NULL, 0, mint, maxt, 1, &y);
        read_db(db, NULL, 0, mint, maxt, 2, &z);
        same(&x, &y, "damaged batch");
        same(&x, &z, "damaged mixed");
        for (size_t i = 0; i < x.n; i++) errs += x.e[i].kind == EV_ERR;
        free(x.e);
        free(y.e);
        free(z.e);
    }
    assert_true(errs >= 12); /* 3 damaged chunks, read in full at least 4 times */
    assert_int_equal(tsdb_db_close(db), 0);
    kelvin_rm_rf(dir);
    free(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_chunk_next_n),
        cmocka_unit_test(test_head_batch),
        cmocka_unit_test(test_db_batch),
        cmocka_unit_test(test_db_batch_damage),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
