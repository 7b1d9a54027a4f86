/* tests/unit/tsdb/block.c -- persistent blocks (src/tsdb/block*.c):
 * write/read round trip against the head (every sample's bits, stale
 * marker NaN included, sub-ranges, several chunk segments), matchers and
 * label listings against the head's answers, corruption (every single-byte
 * flip and every truncation of an index is refused on open with a message;
 * damaged or truncated chunk files fail only the series they hold; other
 * blocks stay readable), compaction equivalence (merged block == union of
 * the inputs, duplicates dropped), retention plans and their application,
 * the directory lock (in process and across fork), ULIDs, and bytes per
 * sample on GPU-like data (printed). KELVIN_BLOCK_CORPUS=DIR writes the
 * fuzz corpus seeds for fuzz/tsdb_block_index.c there. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "tmpdir.h"

#include "base/err.h"
#include "labels/labels.h"
#include "tsdb/block.h"
#include "tsdb/block_int.h"
#include "tsdb/chunk.h"
#include "tsdb/head.h"

static const uint64_t STALE = 0x7ff0000000000002ull;
static double bitsd(uint64_t b) {
    double v;
    memcpy(&v, &b, 8);
    return v;
}
static uint64_t dbits(double v) {
    uint64_t b;
    memcpy(&b, &v, 8);
    return b;
}

static uint64_t rng = 88172645463325252ull;
static uint64_t xr(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static tsdb_head *hnew(void) {
    tsdb_head_opts o = {0};
    tsdb_head *h;
    char err[256];
    assert_int_equal(tsdb_head_open(&o, &h, NULL, err, sizeof err), 0);
    return h;
}

/* A head with `nser` series over [t0, t0 + n * 15 s): a mix of constants,
 * integer counters, random floats, stale markers, -0.0, Inf. */
static tsdb_head *fill(int nser, int n, int64_t t0) {
    tsdb_head *h = hnew();
    labels_set **ls = calloc((size_t)nser, sizeof *ls);
    static const char *names[] = {"DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_POWER_USAGE", "up", "node_load1"};
    for (int i = 0; i < nser; i++) {
        char gpu[16], job[16];
        snprintf(gpu, sizeof gpu, "%d", i % 8);
        snprintf(job, sizeof job, "job%d", i / 8);
        if (i % 5 == 4)
            assert_int_equal(labels_from_cstrs(&ls[i], "__name__", names[i % 4], "job", job, NULL), 0);
        else
            assert_int_equal(
                labels_from_cstrs(&ls[i], "__name__", names[i % 4], "gpu", gpu, "job", job, NULL), 0);
    }
    tsdb_head_app *a;
    assert_int_equal(tsdb_head_app_new(h, &a), 0);
    for (int k = 0; k < n; k++) {
        int64_t t = t0 + (int64_t)k * 15000 + (int64_t)(xr() % 7);
        for (int i = 0; i < nser; i++) {
            if ((i + k) % 11 == 3) continue; /* gaps */
            double v;
            switch (i % 4) {
            case 0: v = 40 + (double)(xr() % 3); break;
            case 1: v = (double)(xr() % 100000) / 1000.0; break;
            case 2: v = 1; break;
            default: v = bitsd(xr()); break;
            }
            if (k % 37 == 5) v = bitsd(STALE);
            if (k % 53 == 7) v = -0.0;
            if (k % 61 == 9) v = INFINITY;
            assert_int_equal(tsdb_head_app_add(a, ls[i], t, v), 0);
        }
        if (k % 50 == 49) assert_int_equal(tsdb_head_app_commit(a, NULL), 0);
    }
    assert_int_equal(tsdb_head_app_commit(a, NULL), 0);
    tsdb_head_app_free(a);
    for (int i = 0; i < nser; i++) labels_unref(ls[i]);
    free(ls);
    return h;
}

/* Compares a block select with a head select over the same matchers and
 * inclusive range; returns the number of samples compared. */
static uint64_t same(tsdb_head *h, tsdb_block *b, labels_matcher *const *ms, size_t n, int64_t mint,
                     int64_t maxt) {
    tsdb_series_set *hs;
    tsdb_block_set *bs;
    assert_int_equal(tsdb_head_select(h, ms, n, mint, maxt, &hs), 0);
    assert_int_equal(tsdb_block_select(b, ms, n, mint, maxt, &bs), 0);
    assert_int_equal(tsdb_series_set_count(hs), tsdb_block_set_count(bs));
    uint64_t cnt = 0;
    int r;
    while ((r = tsdb_series_set_next(hs)) == 1) {
        assert_int_equal(tsdb_block_set_next(bs), 1);
        assert_true(labels_equal(tsdb_series_set_labels(hs), tsdb_block_set_labels(bs)));
        int64_t t1, t2;
        double v1, v2;
        int r1;
        while ((r1 = tsdb_series_set_sample(hs, &t1, &v1)) == 1) {
            assert_int_equal(tsdb_block_set_sample(bs, &t2, &v2), 1);
            assert_int_equal(t1, t2);
            assert_int_equal(dbits(v1), dbits(v2));
            cnt++;
        }
        assert_int_equal(r1, 0);
        assert_int_equal(tsdb_block_set_sample(bs, &t2, &v2), 0);
    }
    assert_int_equal(r, 0);
    assert_int_equal(tsdb_block_set_next(bs), 0);
    tsdb_series_set_free(hs);
    tsdb_block_set_free(bs);
    return cnt;
}

static tsdb_block *bopen(const char *parent, const tsdb_block_meta *m) {
    char p[512], id[27], err[256] = "";
    tsdb_ulid_format(&m->ulid, id);
    snprintf(p, sizeof p, "%s/%s", parent, id);
    tsdb_block *b;
    int e = tsdb_block_open(p, &b, err, sizeof err);
    if (e) fprintf(stderr, "open: %s\n", err);
    assert_int_equal(e, 0);
    return b;
}

static void test_ulid(void **st) {
    (void)st;
    tsdb_ulid a, b, c;
    char s[27], t[27];
    assert_int_equal(tsdb_ulid_new(1700000000000, &a), 0);
    assert_int_equal(tsdb_ulid_new(1700000000001, &b), 0);
    tsdb_ulid_format(&a, s);
    tsdb_ulid_format(&b, t);
    assert_int_equal(strlen(s), 26);
    assert_true(strcmp(s, t) < 0);
    assert_int_equal(tsdb_ulid_parse(base_str_c(s), &c), 0);
    assert_memory_equal(&a, &c, 16);
    assert_int_equal(tsdb_ulid_parse(base_str_c("8ZZZZZZZZZZZZZZZZZZZZZZZZZ"), &c), BASE_E_PARSE);
    assert_int_equal(tsdb_ulid_parse(base_str_c("01ARZ3NDEKTSV4RRFFQ69G5FAI"), &c), BASE_E_PARSE);
    assert_int_equal(tsdb_ulid_parse(base_str_c("01ARZ3NDEKTSV4RRFFQ69G5FA"), &c), BASE_E_PARSE);
    assert_int_equal(tsdb_ulid_parse(base_str_c("01ARZ3NDEKTSV4RRFFQ69G5FAV"), &c), 0);
}

static void test_roundtrip(void **st) {
    (void)st;
    char *dir = kelvin_tmpdir("block");
    tsdb_head *h = fill(40, 500, 1000000);
    int64_t mint = 1000000, maxt = 1000000 + 500 * 15000;
    tsdb_block_meta m;
    char err[256];
    /* small segments: the chunks spread over several files */
    tsdb_block_wopts o = {.segment_bytes = 4096};
    assert_int_equal(tsdb_block_write_head(dir, h, mint, maxt, &o, &m, err, sizeof err), 0);
    tsdb_head_stats hs;
    tsdb_head_stats_get(h, &hs);
    assert_int_equal(m.num_series, 40);
    assert_int_equal(m.num_samples, hs.samples);
    assert_int_equal(m.level, 1);
    assert_int_equal(m.nsources, 1);
    assert_memory_equal(&m.sources[0], &m.ulid, 16);
    char p[512];
    tsdb_block *b = bopen(dir, &m);
    const tsdb_block_meta *bm = tsdb_block_get_meta(b);
    assert_int_equal(bm->num_samples, m.num_samples);
    assert_int_equal(bm->num_chunks, m.num_chunks);
    assert_int_equal(bm->mint, mint);
    assert_int_equal(bm->maxt, maxt);
    assert_int_equal(bm->chunk_bytes, m.chunk_bytes);
    assert_true(m.chunk_bytes > 3 * 4096); /* several segments */
    assert_int_equal(tsdb_block_verify(b, err, sizeof err), 0);
    assert_int_equal(same(h, b, NULL, 0, mint, maxt - 1), hs.samples);
    /* sub-ranges, including ones cutting chunks and outside the block */
    same(h, b, NULL, 0, mint + 1234567, mint + 2345678);
    same(h, b, NULL, 0, mint + 15000 * 130, mint + 15000 * 130);
    assert_int_equal(same(h, b, NULL, 0, maxt + 10, maxt + 1000), 0);
    assert_int_equal(same(h, b, NULL, 0, 0, mint - 1), 0);
    /* a stale marker came back as its exact bits */
    labels_matcher *mm;
    assert_int_equal(
        labels_matcher_new(LABELS_MATCH_EQ, base_str_c("__name__"), base_str_c("up"), &mm, NULL, 0), 0);
    tsdb_block_set *bs;
    assert_int_equal(tsdb_block_select(b, &mm, 1, mint, maxt, &bs), 0);
    int stale = 0;
    while (tsdb_block_set_next(bs) == 1) {
        int64_t t;
        double v;
        while (tsdb_block_set_sample(bs, &t, &v) == 1) stale += dbits(v) == STALE;
    }
    assert_true(stale > 10);
    tsdb_block_set_free(bs);
    labels_matcher_free(mm);
    /* meta.json exists and names the block */
    char id[27];
    tsdb_ulid_format(&m.ulid, id);
    snprintf(p, sizeof p, "%s/%s/meta.json", dir, id);
    FILE *f = fopen(p, "r");
    assert_non_null(f);
    char buf[4096];
    size_t k = fread(buf, 1, sizeof buf - 1, f);
    buf[k] = 0;
    fclose(f);
    assert_non_null(strstr(buf, id));
    assert_non_null(strstr(buf, "\"numSeries\": 40"));
    tsdb_block_close(b);
    /* a partial range: only the samples in [mint, maxt) */
    tsdb_block_meta m2;
    assert_int_equal(tsdb_block_write_head(dir, h, mint + 600000, mint + 1200000, NULL, &m2, err, sizeof err),
                     0);
    b = bopen(dir, &m2);
    assert_int_equal(same(h, b, NULL, 0, mint + 600000, mint + 1200000 - 1), m2.num_samples);
    same(h, b, NULL, 0, mint + 700000, mint + 800000);
    tsdb_block_close(b);
    /* bad arguments, and an unsorted source */
    assert_int_equal(tsdb_block_write_head(dir, h, 5, 5, NULL, NULL, err, sizeof err), BASE_E_INVAL);
    tsdb_head_close(h);
    kelvin_rm_rf(dir);
    free(dir);
}

/* a source yielding the same series twice */
static int dup_next(void *ctx, const labels_set **ret) {
    int *k = ctx;
    static labels_set *ls;
    if (!ls) assert_int_equal(labels_from_cstrs(&ls, "a", "b", NULL), 0);
    if (*k >= 2) {
        labels_unref(ls);
        ls = NULL;
        return 0;
    }
    (*k)++;
    *ret = ls;
    return 1;
}
static int dup_sample(void *ctx, int64_t *t, double *v) {
    (void)ctx;
    static int n;
    if (n++ % 2) return 0;
    *t = 10;
    *v = 1;
    return 1;
}

static void test_bad_source(void **st) {
    (void)st;
    char *dir = kelvin_tmpdir("block");
    int k = 0;
    tsdb_series_src s = {&k, dup_next, dup_sample};
    char err[256] = "";
    assert_int_equal(tsdb_block_write(dir, &s, 0, 100, NULL, NULL, err, sizeof err), BASE_E_INVAL);
    assert_non_null(strstr(err, "order"));
    k = 5;
    dup_next(&k, NULL); /* frees the static set */
    /* nothing left behind */
    assert_int_equal(rmdir(dir), 0);
    free(dir);
}

static labels_matcher *mt(labels_match_type t, const char *n, const char *v) {
    labels_matcher *m;
    assert_int_equal(labels_matcher_new(t, base_str_c(n), base_str_c(v), &m, NULL, 0), 0);
    return m;
}

static void same_strs(const tsdb_strs *a, const tsdb_strs *b) {
    assert_int_equal(a->n, b->n);
    for (size_t i = 0; i < a->n; i++) assert_true(base_str_eq(a->v[i], b->v[i]));
}

static void test_matchers(void **st) {
    (void)st;
    char *dir = kelvin_tmpdir("block");
    tsdb_head *h = fill(40, 60, 0);
    tsdb_block_meta m;
    char err[256];
    assert_int_equal(tsdb_block_write_head(dir, h, 0, 60 * 15000, NULL, &m, err, sizeof err), 0);
    tsdb_block *b = bopen(dir, &m);
    struct {
        labels_match_type t;
        const char *n, *v;
    } cases[][2] = {
        {{LABELS_MATCH_EQ, "__name__", "up"}, {0, NULL, NULL}},
        {{LABELS_MATCH_EQ, "gpu", "3"}, {LABELS_MATCH_NEQ, "job", "job1"}},
        {{LABELS_MATCH_NEQ, "gpu", "3"}, {0, NULL, NULL}},
        {{LABELS_MATCH_EQ, "gpu", ""}, {0, NULL, NULL}},
        {{LABELS_MATCH_RE, "__name__", "DCGM_.*"}, {LABELS_MATCH_NRE, "gpu", "[0-3]"}},
        {{LABELS_MATCH_RE, "gpu", ".*"}, {LABELS_MATCH_EQ, "job", "job2"}},
        {{LABELS_MATCH_RE, "gpu", ".+"}, {0, NULL, NULL}},
        {{LABELS_MATCH_EQ, "nope", "x"}, {0, NULL, NULL}},
        {{LABELS_MATCH_NEQ, "nope", "x"}, {LABELS_MATCH_EQ, "__name__", "node_load1"}},
        {{LABELS_MATCH_RE, "job", "job0|job2"}, {LABELS_MATCH_NRE, "__name__", "up|node_.*"}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        labels_matcher *ms[2];
        size_t n = 0;
        for (int j = 0; j < 2; j++)
            if (cases[i][j].n) ms[n++] = mt(cases[i][j].t, cases[i][j].n, cases[i][j].v);
        same(h, b, ms, n, 0, 60 * 15000);
        same(h, b, ms, n, 100000, 200000);
        tsdb_strs *x, *y;
        assert_int_equal(tsdb_head_label_names(h, ms, n, INT64_MIN, INT64_MAX, &x), 0);
        assert_int_equal(tsdb_block_label_names(b, ms, n, &y), 0);
        same_strs(x, y);
        tsdb_strs_free(x);
        tsdb_strs_free(y);
        assert_int_equal(tsdb_head_label_values(h, base_str_c("gpu"), ms, n, INT64_MIN, INT64_MAX, &x), 0);
        assert_int_equal(tsdb_block_label_values(b, base_str_c("gpu"), ms, n, &y), 0);
        same_strs(x, y);
        tsdb_strs_free(x);
        tsdb_strs_free(y);
        for (size_t j = 0; j < n; j++) labels_matcher_free(ms[j]);
    }
    tsdb_strs *y;
    assert_int_equal(tsdb_block_label_values(b, base_str_c("nope"), NULL, 0, &y), 0);
    assert_int_equal(y->n, 0);
    tsdb_strs_free(y);
    assert_int_equal(tsdb_block_label_names(b, NULL, 0, &y), 0);
    assert_int_equal(y->n, 3);
    assert_true(base_str_eqc(y->v[0], "__name__") && base_str_eqc(y->v[1], "gpu") &&
                base_str_eqc(y->v[2], "job"));
    tsdb_strs_free(y);
    tsdb_block_close(b);
    tsdb_head_close(h);
    kelvin_rm_rf(dir);
    free(dir);
}

static uint8_t *slurp(const char *p, size_t *ret_n) {
    FILE *f = fopen(p, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *d = malloc((size_t)n + 1);
    assert_int_equal(fread(d, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *ret_n = (size_t)n;
    return d;
}
static void spit(const char *p, const uint8_t *d, size_t n) {
    FILE *f = fopen(p, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(d, 1, n, f), n);
    fclose(f);
}

static void test_corruption(void **st) {
    (void)st;
    char *dir = kelvin_tmpdir("block");
    tsdb_head *h = fill(6, 300, 0);
    tsdb_block_meta m1, m2;
    char err[256], p[512], id[27];
    assert_int_equal(tsdb_block_write_head(dir, h, 0, 300 * 15000, NULL, &m1, err, sizeof err), 0);
    assert_int_equal(tsdb_block_write_head(dir, h, 0, 300 * 15000, NULL, &m2, err, sizeof err), 0);
    tsdb_ulid_format(&m1.ulid, id);
    snprintf(p, sizeof p, "%s/%s/index", dir, id);
    size_t n;
    uint8_t *orig = slurp(p, &n);
    const char *corpus = getenv("KELVIN_BLOCK_CORPUS");
    if (corpus) { /* the valid seed of fuzz/corpus/tsdb_block_index */
        char q[600];
        snprintf(q, sizeof q, "%s/valid", corpus);
        spit(q, orig, n);
    }
    /* every single-byte flip and every truncation of the index: refused in
     * memory (same checks as a file) */
    for (size_t i = 0; i < n; i++) {
        tsdb_block *b;
        orig[i] ^= 0x20;
        err[0] = 0;
        assert_int_equal(tsdb__block_open_mem(orig, n, &b, err, sizeof err), BASE_E_PARSE);
        assert_true(strlen(err) > 8);
        orig[i] ^= 0x20;
    }
    for (size_t i = 0; i < n; i++) {
        tsdb_block *b;
        assert_int_equal(tsdb__block_open_mem(orig, i, &b, err, sizeof err), BASE_E_PARSE);
    }
    /* on disk: a flipped byte in the series section, then a truncation */
    char bdir[512];
    snprintf(bdir, sizeof bdir, "%s/%s", dir, id);
    orig[n / 2] ^= 1;
    spit(p, orig, n);
    tsdb_block *b;
    assert_int_equal(tsdb_block_open(bdir, &b, err, sizeof err), BASE_E_PARSE);
    assert_non_null(strstr(err, "CRC mismatch"));
    assert_non_null(strstr(err, "index"));
    spit(p, orig, n - 3);
    assert_int_equal(tsdb_block_open(bdir, &b, err, sizeof err), BASE_E_PARSE);
    orig[n / 2] ^= 1;
    spit(p, orig, n);
    b = bopen(dir, &m1); /* repaired */
    tsdb_block_close(b);
    /* the other block is fine all along */
    b = bopen(dir, &m2);
    assert_int_equal(same(h, b, NULL, 0, 0, INT64_MAX), m2.num_samples);
    tsdb_block_close(b);
    /* a flipped byte in the chunks: open works, verify names it, only the
     * series holding the chunk fails */
    snprintf(p, sizeof p, "%s/%s/chunks/000001", dir, id);
    size_t cn;
    uint8_t *c = slurp(p, &cn);
    c[cn / 2] ^= 0x10;
    spit(p, c, cn);
    b = bopen(dir, &m1);
    assert_int_equal(tsdb_block_verify(b, err, sizeof err), BASE_E_PARSE);
    assert_non_null(strstr(err, "bad CRC"));
    tsdb_block_set *s;
    assert_int_equal(tsdb_block_select(b, NULL, 0, 0, INT64_MAX, &s), 0);
    int good = 0, bad = 0, r;
    while (tsdb_block_set_next(s) == 1) {
        int64_t t;
        double v;
        while ((r = tsdb_block_set_sample(s, &t, &v)) == 1) {
        }
        if (r == 0)
            good++;
        else {
            assert_int_equal(r, BASE_E_PARSE);
            bad++;
        }
    }
    assert_int_equal(bad, 1);
    assert_int_equal(good, 5);
    tsdb_block_set_free(s);
    tsdb_block_close(b);
    /* truncated chunk file: the earlier series still read, later fail */
    c[cn / 2] ^= 0x10;
    spit(p, c, cn / 2);
    b = bopen(dir, &m1);
    assert_int_equal(tsdb_block_verify(b, err, sizeof err), BASE_E_PARSE);
    assert_non_null(strstr(err, "truncated"));
    assert_int_equal(tsdb_block_select(b, NULL, 0, 0, INT64_MAX, &s), 0);
    good = bad = 0;
    while (tsdb_block_set_next(s) == 1) {
        int64_t t;
        double v;
        while ((r = tsdb_block_set_sample(s, &t, &v)) == 1) {
        }
        if (r == 0)
            good++;
        else
            bad++;
    }
    assert_true(good >= 2 && bad >= 1 && good + bad == 6);
    tsdb_block_set_free(s);
    tsdb_block_close(b);
    /* an empty index file, a missing meta.json */
    spit(p, c, 0);
    snprintf(p, sizeof p, "%s/%s/index", dir, id);
    spit(p, c, 0);
    assert_int_equal(tsdb_block_open(bdir, &b, err, sizeof err), BASE_E_PARSE);
    snprintf(p, sizeof p, "%s/%s/meta.json", dir, id);
    unlink(p);
    assert_int_equal(tsdb_block_open(bdir, &b, err, sizeof err), BASE_E_NOTFOUND);
    free(c);
    free(orig);
    tsdb_head_close(h);
    kelvin_rm_rf(dir);
    free(dir);
}

static void test_compaction(void **st) {
    (void)st;
    char *dir = kelvin_tmpdir("block");
    tsdb_head *h = fill(30, 480, 0); /* 2 h */
    int64_t hr = 3600000;
    tsdb_block_meta m[4];
    char err[256];
    assert_int_equal(tsdb_block_write_head(dir, h, 0, hr, NULL, &m[0], err, sizeof err), 0);
    assert_int_equal(tsdb_block_write_head(dir, h, hr, 2 * hr, NULL, &m[1], err, sizeof err), 0);
    /* overlapping the other two: its samples are duplicates */
    assert_int_equal(tsdb_block_write_head(dir, h, hr / 2, hr + hr / 2, NULL, &m[2], err, sizeof err), 0);
    tsdb_block *b[3];
    for (int i = 0; i < 3; i++) b[i] = bopen(dir, &m[i]);
    assert_int_equal(tsdb_block_compact(dir, b, 3, NULL, &m[3], err, sizeof err), 0);
    tsdb_block *c = bopen(dir, &m[3]);
    const tsdb_block_meta *cm = tsdb_block_get_meta(c);
    assert_int_equal(cm->level, 2);
    assert_int_equal(cm->nsources, 3);
    assert_int_equal(cm->mint, 0);
    assert_int_equal(cm->maxt, 2 * hr);
    assert_int_equal(cm->num_samples, m[0].num_samples + m[1].num_samples);
    assert_true(cm->num_chunks < m[0].num_chunks + m[1].num_chunks); /* re-chunked at 480 */
    for (uint32_t i = 1; i < cm->nsources; i++)
        assert_true(memcmp(&cm->sources[i - 1], &cm->sources[i], 16) < 0);
    assert_int_equal(same(h, c, NULL, 0, 0, 2 * hr - 1), cm->num_samples);
    assert_int_equal(tsdb_block_verify(c, err, sizeof err), 0);
    /* compacting the compacted block with one input again: same sources */
    tsdb_block_meta m5;
    tsdb_block *two[2] = {c, b[0]};
    assert_int_equal(tsdb_block_compact(dir, two, 2, NULL, &m5, err, sizeof err), 0);
    assert_int_equal(m5.level, 3);
    assert_int_equal(m5.nsources, 3);
    assert_int_equal(m5.num_samples, cm->num_samples);
    for (int i = 0; i < 3; i++) tsdb_block_close(b[i]);
    tsdb_block_close(c);
    tsdb_head_close(h);
    kelvin_rm_rf(dir);
    free(dir);
}

static void test_retention_plan(void **st) {
    (void)st;
    tsdb_block_meta m[5] = {0};
    int64_t hr = 3600000;
    /* out of order on purpose; each block 100 bytes */
    int64_t maxts[5] = {10 * hr, 2 * hr, 8 * hr, 4 * hr, 6 * hr};
    for (int i = 0; i < 5; i++) {
        m[i].maxt = maxts[i];
        m[i].mint = maxts[i] - 2 * hr;
        m[i].chunk_bytes = 90;
        m[i].index_bytes = 10;
    }
    uint8_t del[5];
    assert_int_equal(tsdb_retention_plan(m, 5, 0, 0, del), 0);
    /* time: newest maxt 10h; 4h retention deletes maxt <= 6h */
    assert_int_equal(tsdb_retention_plan(m, 5, 4 * hr, 0, del), 3);
    assert_true(!del[0] && del[1] && !del[2] && del[3] && del[4]);
    /* size: 250 bytes keeps the two newest */
    assert_int_equal(tsdb_retention_plan(m, 5, 0, 250, del), 3);
    assert_true(!del[0] && del[1] && !del[2] && del[3] && del[4]);
    assert_int_equal(tsdb_retention_plan(m, 5, 0, 300, del), 2);
    assert_true(!del[0] && del[1] && !del[2] && del[3] && !del[4]);
    assert_int_equal(tsdb_retention_plan(m, 5, 0, 99, del), 5);
    /* both: the stricter wins */
    assert_int_equal(tsdb_retention_plan(m, 5, 7 * hr, 350, del), 2);
    assert_true(del[1] && del[3] && !del[4]);
}

static int count_blocks(const char *dir) {
    char cmd[600];
    snprintf(cmd, sizeof cmd, "ls %s | grep -c '^[0-9A-Z]\\{26\\}$'", dir);
    FILE *f = popen(cmd, "r");
    int n = -1;
    assert_int_equal(fscanf(f, "%d", &n), 1);
    pclose(f);
    return n;
}

static void test_retention_apply(void **st) {
    (void)st;
    char *dir = kelvin_tmpdir("block");
    tsdb_head *h = fill(4, 480, 0);
    int64_t hr = 3600000;
    tsdb_block_meta m[4];
    char err[256], p[512], id[27];
    for (int i = 0; i < 4; i++)
        assert_int_equal(
            tsdb_block_write_head(dir, h, i * hr / 2, (i + 1) * hr / 2, NULL, &m[i], err, sizeof err), 0);
    /* a leftover .tmp directory is ignored */
    snprintf(p, sizeof p, "%s/01ARZ3NDEKTSV4RRFFQ69G5FAV.tmp", dir);
    assert_int_equal(mkdir(p, 0755), 0);
    size_t deleted, bad;
    assert_int_equal(tsdb_retention_apply(dir, hr, 0, &deleted, &bad, err, sizeof err), 0);
    /* newest maxt 2h: blocks ending at 0.5h and 1h go */
    assert_int_equal(deleted, 2);
    assert_int_equal(bad, 0);
    assert_int_equal(count_blocks(dir), 2);
    tsdb_ulid_format(&m[0].ulid, id);
    snprintf(p, sizeof p, "%s/%s", dir, id);
    struct stat sb;
    assert_int_equal(stat(p, &sb), -1);
    /* size: keep only the newest; a damaged block is left alone */
    tsdb_ulid_format(&m[2].ulid, id);
    snprintf(p, sizeof p, "%s/%s/index", dir, id);
    assert_int_equal(truncate(p, 10), 0);
    assert_int_equal(
        tsdb_retention_apply(dir, 0, m[3].chunk_bytes + m[3].index_bytes, &deleted, &bad, err, sizeof err),
        0);
    assert_int_equal(deleted, 0);
    assert_int_equal(bad, 1);
    assert_int_equal(tsdb_retention_apply(dir, 0, 1, &deleted, &bad, err, sizeof err), 0);
    assert_int_equal(deleted, 1);
    assert_int_equal(count_blocks(dir), 1); /* the damaged one */
    tsdb_head_close(h);
    kelvin_rm_rf(dir);
    free(dir);
}

static void test_lock(void **st) {
    (void)st;
    char *dir = kelvin_tmpdir("block");
    tsdb_dir_lock *l, *l2;
    char err[256];
    assert_int_equal(tsdb_dir_lock_take(dir, &l, err, sizeof err), 0);
    assert_int_equal(tsdb_dir_lock_take(dir, &l2, err, sizeof err), BASE_E_CONFLICT);
    assert_non_null(strstr(err, "locked"));
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        tsdb_dir_lock *x;
        _exit(tsdb_dir_lock_take(dir, &x, NULL, 0) == BASE_E_CONFLICT ? 0 : 1);
    }
    int ws;
    assert_int_equal(waitpid(pid, &ws, 0), pid);
    assert_true(WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
    tsdb_dir_lock_release(l);
    assert_int_equal(tsdb_dir_lock_take(dir, &l2, err, sizeof err), 0);
    tsdb_dir_lock_release(l2);
    kelvin_rm_rf(dir);
    free(dir);
}

/* GPU-like data: 8 GPUs x 30 dcgm-like metrics + 60 host series, 15 s,
 * `hours` hours; prints bytes per sample of a 2 h-style block and of the
 * compacted block. */
static void test_bytes_per_sample(void **st) {
    (void)st;
    char *dir = kelvin_tmpdir("block");
    tsdb_head *h = hnew();
    const int hours = 3, n = hours * 240, ngpu = 8, nm = 30, nhost = 60;
    int ns = ngpu * nm + nhost;
    labels_set **ls = calloc((size_t)ns, sizeof *ls);
    double *state = calloc((size_t)ns, sizeof *state);
    for (int g = 0; g < ngpu; g++)
        for (int k = 0; k < nm; k++) {
            char name[32], gpu[8], uuid[48];
            snprintf(name, sizeof name, "DCGM_FI_DEV_M%02d", k);
            snprintf(gpu, sizeof gpu, "%d", g);
            snprintf(uuid, sizeof uuid, "GPU-5f3c%04x-aaaa-bbbb-cccc-%012d", g, g * 7919);
            assert_int_equal(labels_from_cstrs(&ls[g * nm + k], "Hostname", "node-017", "UUID", uuid,
                                               "__name__", name, "device", "nvidia0", "gpu", gpu, "job",
                                               "dcgm", "modelName", "NVIDIA H100 80GB HBM3", NULL),
                             0);
        }
    for (int i = 0; i < nhost; i++) {
        char name[32], cpu[8];
        snprintf(name, sizeof name, "node_cpu_seconds_total");
        snprintf(cpu, sizeof cpu, "%d", i);
        assert_int_equal(labels_from_cstrs(&ls[ngpu * nm + i], "__name__", name, "cpu", cpu, "instance",
                                           "node-017:9100", "job", "node", "mode", "user", NULL),
                         0);
    }
    tsdb_head_app *a;
    assert_int_equal(tsdb_head_app_new(h, &a), 0);
    for (int k = 0; k < n; k++) {
        int64_t t = (int64_t)k * 15000 + (int64_t)(xr() % 3);
        for (int i = 0; i < ns; i++) {
            double v;
            int kind = i < ngpu * nm ? (i % nm) % 8 : 8;
            switch (kind) {
            case 0:
            case 1: v = 1980 + (i % 3) * 100; break; /* clocks, limits, totals: constant */
            case 2:
                if (xr() % 10 == 0) state[i] += (double)(xr() % 3) - 1;
                v = 60 + state[i];
                break; /* temp */
            case 3:
                state[i] += 350000 + (double)(xr() % 20000);
                v = state[i];
                break;                                                  /* energy, mJ */
            case 4: v = 300 + (double)(xr() % 2000) / 100.0; break;     /* power, 2 decimals, jittering */
            case 5: v = 0; break;                                       /* ECC / XID counters */
            case 6: v = (xr() % 4) ? 100 : (double)(xr() % 101); break; /* utilisation, % */
            case 7: v = (double)(xr() % 1000) / 1000.0; break;          /* a noisy ratio */
            default:
                state[i] += (double)(xr() % 1500) / 100.0;
                v = state[i];
                break; /* cpu seconds */
            }
            assert_int_equal(tsdb_head_app_add(a, ls[i], t, v), 0);
        }
        if (k % 20 == 19) assert_int_equal(tsdb_head_app_commit(a, NULL), 0);
    }
    assert_int_equal(tsdb_head_app_commit(a, NULL), 0);
    tsdb_head_app_free(a);
    tsdb_block_meta m[3], mc;
    char err[256];
    int64_t span = (int64_t)n * 15000, two = 2 * 3600000;
    assert_int_equal(tsdb_block_write_head(dir, h, 0, span, NULL, &m[0], err, sizeof err), 0);
    assert_int_equal(tsdb_block_write_head(dir, h, 0, two, NULL, &m[1], err, sizeof err), 0);
    assert_int_equal(tsdb_block_write_head(dir, h, two, span + 1, NULL, &m[2], err, sizeof err), 0);
    tsdb_block *b[2] = {bopen(dir, &m[1]), bopen(dir, &m[2])};
    assert_int_equal(tsdb_block_compact(dir, b, 2, NULL, &mc, err, sizeof err), 0);
    tsdb_block *c = bopen(dir, &mc);
    assert_int_equal(same(h, c, NULL, 0, 0, span), mc.num_samples);
    double b0 = (double)(m[0].chunk_bytes + m[0].index_bytes) / (double)m[0].num_samples;
    double bc = (double)(mc.chunk_bytes + mc.index_bytes) / (double)mc.num_samples;
    printf("bytes/sample, %d series x %d h at 15 s (%llu samples): one block of 120-sample chunks %.3f "
           "(chunks %.3f + index %.3f); compacted 480-sample chunks %.3f (chunks %.3f + index %.3f)\n",
           ns, hours, (unsigned long long)mc.num_samples, b0,
           (double)m[0].chunk_bytes / (double)m[0].num_samples,
           (double)m[0].index_bytes / (double)m[0].num_samples, bc,
           (double)mc.chunk_bytes / (double)mc.num_samples, (double)mc.index_bytes / (double)mc.num_samples);
    /* the same data as Prometheus's XOR chunks, for comparison */
    tsdb_block_meta mx;
    tsdb_block_wopts xo = {.chunk_flags = TSDB_CHUNK_PROM_XOR};
    assert_int_equal(tsdb_block_write_head(dir, h, 0, span, &xo, &mx, err, sizeof err), 0);
    double bx = (double)(mx.chunk_bytes + mx.index_bytes) / (double)mx.num_samples;
    printf("bytes/sample with Prometheus XOR chunks: %.3f (kelvin/xor %.2f)\n", bx, b0 / bx);
    assert_true(bc < b0);
    assert_true(b0 < 0.8 * bx);
    tsdb_block_close(b[0]);
    tsdb_block_close(b[1]);
    tsdb_block_close(c);
    for (int i = 0; i < ns; i++) labels_unref(ls[i]);
    free(ls);
    free(state);
    tsdb_head_close(h);
    kelvin_rm_rf(dir);
    free(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ulid),           cmocka_unit_test(test_roundtrip),
        cmocka_unit_test(test_bad_source),     cmocka_unit_test(test_matchers),
        cmocka_unit_test(test_corruption),     cmocka_unit_test(test_compaction),
        cmocka_unit_test(test_retention_plan), cmocka_unit_test(test_retention_apply),
        cmocka_unit_test(test_lock),           cmocka_unit_test(test_bytes_per_sample),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
