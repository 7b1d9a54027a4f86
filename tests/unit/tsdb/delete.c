/* delete.c -- tests of series deletion (tsdb_db_delete, tombstones) and
 * tsdb_db_clean_tombstones: tombstone interval lists and tables, the
 * tombstones file (round trip, damage), deletion in the head (partial
 * ranges, regex matchers, ranges clamped so that later appends survive,
 * listings), across restarts (WAL replay, checkpoints, block tombstones
 * files), in blocks, after head cutting and compaction (deleted samples
 * gone from the new blocks), the planner's rewrite of a block with many
 * tombstones, clean_tombstones (and a crash in the middle of it).
 *
 * Every check compares the whole database with a model: NSER series
 * m{s="<i>"} with one sample a minute at value i * 1e6 + t / STEP, minus
 * the deleted intervals the test recorded; selects (read per sample and in
 * batches) and label value listings must match it exactly. Last, deletions
 * and a cleanup race appends, reads and maintenance on other threads.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "tmpdir.h"

#include "base/err.h"
#include "labels/labels.h"
#include "tsdb/db.h"
#include "tsdb/format.h"
#include "tsdb/tomb_int.h"

#define MIN   60000LL
#define HOUR  (60 * MIN)
#define STEP  MIN
#define NSER  20
#define BLOCK HOUR
#define MAXD  64

/* ---- the model -------------------------------------------------------------- */

typedef struct model {
    int64_t from, to; /* samples at multiples of STEP in [from, to) */
    int nd[NSER];
    int64_t dm[NSER][MAXD], dx[NSER][MAXD];
} model;

static int alive(const model *m, int i, int64_t t) {
    if (t < m->from || t >= m->to || t % STEP) return 0;
    for (int k = 0; k < m->nd[i]; k++)
        if (t >= m->dm[i][k] && t <= m->dx[i][k]) return 0;
    return 1;
}

static void mdel(model *m, int i, int64_t a, int64_t b) {
    assert_true(m->nd[i] < MAXD);
    m->dm[i][m->nd[i]] = a;
    m->dx[i][m->nd[i]++] = b;
}

static double value(int i, int64_t t) {
    return (double)i * 1e6 + (double)(t / STEP);
}

static labels_set *series(int i) {
    char v[16];
    snprintf(v, sizeof v, "%d", i);
    labels_set *ls;
    assert_int_equal(labels_from_cstrs(&ls, "__name__", "m", "s", v, i % 2 ? "odd" : "even", "1", NULL), 0);
    return ls;
}

static tsdb_db *dopen(const char *dir, tsdb_db_report *rep) {
    tsdb_db_opts o;
    tsdb_db_opts_default(&o);
    o.path = dir;
    o.min_block_ms = BLOCK;
    o.max_block_ms = 9 * BLOCK;
    o.retention_ms = 0;
    o.maintain_interval_ms = -1;
    tsdb_db *db;
    char err[512];
    tsdb_db_report r;
    int e = tsdb_db_open(&o, &db, rep ? rep : &r, err, sizeof err);
    if (e) fprintf(stderr, "open: %s\n", err);
    assert_int_equal(e, 0);
    return db;
}

static void fill(tsdb_db *db, model *m, int64_t from, int64_t to) {
    tsdb_head_app *a;
    assert_int_equal(tsdb_head_app_new(tsdb_db_head(db), &a), 0);
    labels_set *ls[NSER];
    for (int i = 0; i < NSER; i++) ls[i] = series(i);
    for (int64_t t = from; t < to; t += STEP) {
        for (int i = 0; i < NSER; i++) assert_int_equal(tsdb_head_app_add(a, ls[i], t, value(i, t)), 0);
        tsdb_append_result r;
        assert_int_equal(tsdb_head_app_commit(a, &r), 0);
        assert_int_equal(r.appended, NSER);
    }
    for (int i = 0; i < NSER; i++) labels_unref(ls[i]);
    tsdb_head_app_free(a);
    if (m->to == m->from) m->from = from;
    m->to = to;
}

static void maintain(tsdb_db *db) {
    char err[512];
    int e = tsdb_db_maintain(db, err, sizeof err);
    if (e) fprintf(stderr, "maintain: %s\n", err);
    assert_int_equal(e, 0);
}

static labels_matcher *matcher(labels_match_type ty, const char *name, const char *val) {
    labels_matcher *m;
    char err[256];
    assert_int_equal(labels_matcher_new(ty, base_str_c(name), base_str_c(val), &m, err, sizeof err), 0);
    return m;
}

static int index_of(const labels_set *ls) {
    base_str sv = labels_get(ls, base_str_c("s"));
    char buf[16] = {0};
    memcpy(buf, sv.p, sv.n < 15 ? sv.n : 15);
    return atoi(buf);
}

/* Deletes [a, b] of the series matching ms in the database and in the
 * model (which(i) says which series the matchers select). */
static void del(tsdb_db *db, model *m, labels_matcher *const *ms, size_t n, int (*which)(int), int64_t a,
                int64_t b) {
    char err[512];
    int e = tsdb_db_delete(db, ms, n, a, b, err, sizeof err);
    if (e) fprintf(stderr, "delete: %s\n", err);
    assert_int_equal(e, 0);
    for (int i = 0; i < NSER; i++)
        if (which(i)) mdel(m, i, a, b);
}

/* Compares [mint, maxt] with the model: every series with an expected
 * sample is listed (select and label values) with exactly those samples,
 * no other. batch: read with tsdb_db_set_samples (cap varies). Returns the
 * number of samples. */
static size_t check(tsdb_db *db, const model *m, int64_t mint, int64_t maxt, int batch) {
    tsdb_db_set *s;
    assert_int_equal(tsdb_db_select(db, NULL, 0, mint, maxt, &s), 0);
    int seen[NSER] = {0};
    size_t total = 0;
    int64_t tb[7];
    double vb[7];
    while (tsdb_db_set_next(s) == 1) {
        int i = index_of(tsdb_db_set_labels(s));
        assert_true(i >= 0 && i < NSER);
        assert_false(seen[i]);
        seen[i] = 1;
        int64_t want = mint < m->from ? m->from : (mint + STEP - 1) / STEP * STEP;
        size_t n = 0;
        for (;;) {
            int r;
            size_t k;
            if (batch) {
                r = tsdb_db_set_samples(s, tb, vb, 1 + (size_t)(total + n) % 7);
                k = r > 0 ? (size_t)r : 0;
            } else {
                r = tsdb_db_set_sample(s, &tb[0], &vb[0]);
                k = r == 1;
            }
            assert_true(r >= 0);
            if (!k) break;
            for (size_t j = 0; j < k; j++) {
                while (want <= maxt && want < m->to && !alive(m, i, want)) want += STEP;
                assert_int_equal(tb[j], want);
                assert_true(vb[j] == value(i, tb[j]));
                want += STEP;
                n++;
            }
        }
        while (want <= maxt && want < m->to && !alive(m, i, want)) want += STEP;
        assert_true(want > maxt || want >= m->to); /* nothing expected is missing */
        assert_true(n > 0);                        /* a series without samples is not listed */
        total += n;
    }
    tsdb_db_set_free(s);
    /* series not seen have no sample in range */
    tsdb_strs *vals;
    assert_int_equal(tsdb_db_label_values(db, base_str_c("s"), NULL, 0, mint, maxt, &vals), 0);
    size_t nseen = 0;
    for (int i = 0; i < NSER; i++) {
        int any = 0;
        for (int64_t t = (mint < m->from ? m->from : mint) / STEP * STEP; t <= maxt && t < m->to && !any;
             t += STEP)
            any = t >= mint && alive(m, i, t);
        assert_int_equal(seen[i], any);
        nseen += (size_t)any;
    }
    if (mint <= m->from && maxt >= m->to - 1) { /* the whole range: listings are exact */
        assert_int_equal(vals->n, nseen);
        for (size_t k = 0; k < vals->n; k++) {
            char buf[16] = {0};
            memcpy(buf, vals->v[k].p, vals->v[k].n < 15 ? vals->v[k].n : 15);
            assert_true(seen[atoi(buf)]);
        }
    }
    tsdb_strs_free(vals);
    return total;
}

static void check_all(tsdb_db *db, const model *m) {
    int64_t r[][2] = {{INT64_MIN, INT64_MAX},
                      {m->from, m->to - 1},
                      {m->from + 7 * STEP, m->to - 13 * STEP},
                      {m->from + HOUR / 2, m->from + HOUR / 2 + 90 * STEP},
                      {m->to - 3 * STEP, INT64_MAX},
                      {m->from + 61 * STEP, m->from + 61 * STEP}};
    for (size_t k = 0; k < sizeof r / sizeof r[0]; k++) {
        if (r[k][0] > r[k][1]) continue;
        size_t a = check(db, m, r[k][0], r[k][1], 0), b = check(db, m, r[k][0], r[k][1], 1);
        assert_int_equal(a, b);
    }
}

static int is_odd(int i) {
    return i % 2;
}
static int is_even(int i) {
    return !(i % 2);
}
static int is_all(int i) {
    (void)i;
    return 1;
}
static int is_1x(int i) { /* s=~"1.*" */
    return i == 1 || (i >= 10 && i <= 19);
}
static int is_3(int i) {
    return i == 3;
}
static int is_7(int i) {
    return i == 7;
}

static uint64_t tombstones(tsdb_db *db) {
    tsdb_db_stats st;
    tsdb_db_stats_get(db, &st);
    return st.tombstones;
}

/* ---- interval lists, tables, the file ------------------------------------------ */

static void test_ivals(void **st) {
    (void)st;
    tsdb__ival *v = NULL;
    uint32_t n = 0, cap = 0;
    assert_int_equal(tsdb__ivals_add(&v, &n, &cap, (tsdb__ival){10, 20}), 0);
    assert_int_equal(tsdb__ivals_add(&v, &n, &cap, (tsdb__ival){30, 40}), 0);
    assert_int_equal(tsdb__ivals_add(&v, &n, &cap, (tsdb__ival){0, 5}), 0);
    assert_int_equal(n, 3);
    assert_int_equal(v[0].mint, 0);
    assert_int_equal(v[2].maxt, 40);
    /* adjacent: merged (closed intervals of integers) */
    assert_int_equal(tsdb__ivals_add(&v, &n, &cap, (tsdb__ival){21, 29}), 0);
    assert_int_equal(n, 2);
    assert_int_equal(v[1].mint, 10);
    assert_int_equal(v[1].maxt, 40);
    assert_int_equal(tsdb__ivals_add(&v, &n, &cap, (tsdb__ival){6, 9}), 0);
    assert_int_equal(n, 1);
    assert_true(v[0].mint == 0 && v[0].maxt == 40);
    /* a gap of one stays */
    assert_int_equal(tsdb__ivals_add(&v, &n, &cap, (tsdb__ival){42, 50}), 0);
    assert_int_equal(n, 2);
    /* the extremes do not overflow */
    assert_int_equal(tsdb__ivals_add(&v, &n, &cap, (tsdb__ival){INT64_MIN, -100}), 0);
    assert_int_equal(tsdb__ivals_add(&v, &n, &cap, (tsdb__ival){100, INT64_MAX}), 0);
    assert_int_equal(n, 4);
    assert_int_equal(tsdb__ivals_add(&v, &n, &cap, (tsdb__ival){-99, 99}), 0);
    assert_int_equal(n, 1);
    assert_true(v[0].mint == INT64_MIN && v[0].maxt == INT64_MAX);
    assert_true(tsdb__ivals_cover(v, n, INT64_MIN, INT64_MAX));
    n = 0;
    tsdb__ivals_add(&v, &n, &cap, (tsdb__ival){10, 20});
    tsdb__ivals_add(&v, &n, &cap, (tsdb__ival){30, 40});
    assert_true(tsdb__ivals_cover(v, n, 11, 20));
    assert_false(tsdb__ivals_cover(v, n, 15, 30));
    assert_true(tsdb__ivals_overlap(v, n, 15, 30));
    assert_false(tsdb__ivals_overlap(v, n, 21, 29));
    int64_t t[] = {5, 10, 15, 20, 25, 29, 30, 41};
    double d[] = {0, 1, 2, 3, 4, 5, 6, 7};
    size_t cur = 0, k = tsdb__ivals_filter(v, n, &cur, t, d, 8);
    assert_int_equal(k, 4);
    assert_true(t[0] == 5 && t[1] == 25 && t[2] == 29 && t[3] == 41);
    assert_true(d[1] == 4 && d[3] == 7);
    free(v);

    /* tables: built from pairs, merged with an old one; file round trip */
    tsdb__stone add[] = {{5, {100, 200}}, {2, {0, 0}}, {5, {201, 300}}, {9, {-50, -40}}, {2, {5, 6}}};
    tsdb__tomb *t1, *t2, *t3;
    assert_int_equal(tsdb__tomb_build(NULL, add, 5, &t1), 0);
    assert_int_equal(t1->nser, 3);
    assert_int_equal(t1->nivals, 4);
    size_t ni;
    const tsdb__ival *iv = tsdb__tomb_get(t1, 5, &ni);
    assert_int_equal(ni, 1);
    assert_true(iv[0].mint == 100 && iv[0].maxt == 300);
    assert_null(tsdb__tomb_get(t1, 4, &ni));
    assert_int_equal(ni, 0);
    tsdb__stone more[] = {{2, {1, 4}}, {7, {INT64_MIN, INT64_MAX}}};
    assert_int_equal(tsdb__tomb_build(t1, more, 2, &t2), 0);
    iv = tsdb__tomb_get(t2, 2, &ni);
    assert_int_equal(ni, 1);
    assert_true(iv[0].mint == 0 && iv[0].maxt == 6);
    base_buf b = BASE_BUF_INIT;
    assert_int_equal(tsdb__tomb_encode(t2, &b), 0);
    char err[256];
    assert_int_equal(tsdb__tomb_decode((const uint8_t *)b.data, b.len, 10, &t3, err, sizeof err), 0);
    assert_int_equal(t3->nser, t2->nser);
    assert_int_equal(t3->nivals, t2->nivals);
    assert_memory_equal(t3->ids, t2->ids, t2->nser * sizeof *t2->ids);
    assert_memory_equal(t3->iv, t2->iv, t2->nivals * sizeof *t2->iv);
    tsdb__tomb_unref(t3);
    /* ids past the block's series, any flipped byte, truncation: refused */
    assert_int_equal(tsdb__tomb_decode((const uint8_t *)b.data, b.len, 9, &t3, err, sizeof err),
                     BASE_E_PARSE);
    for (size_t i = 0; i < b.len; i++) {
        b.data[i] ^= 0x20;
        assert_int_equal(tsdb__tomb_decode((const uint8_t *)b.data, b.len, 10, &t3, err, sizeof err),
                         BASE_E_PARSE);
        b.data[i] ^= 0x20;
    }
    for (size_t l = 0; l < b.len; l++)
        assert_int_equal(tsdb__tomb_decode((const uint8_t *)b.data, l, 10, &t3, err, sizeof err),
                         BASE_E_PARSE);
    /* an empty table is a valid file */
    base_buf_reset(&b);
    assert_int_equal(tsdb__tomb_encode(NULL, &b), 0);
    assert_int_equal(tsdb__tomb_decode((const uint8_t *)b.data, b.len, 0, &t3, err, sizeof err), 0);
    assert_int_equal(t3->nser, 0);
    tsdb__tomb_unref(t3);
    base_buf_free(&b);
    tsdb__tomb_unref(t1);
    tsdb__tomb_unref(t2);
}

/* ---- the head ------------------------------------------------------------------ */

static void test_head(void **st) {
    (void)st;
    char *dir = kelvin_tmpdir("del");
    tsdb_db *db = dopen(dir, NULL);
    model m = {0};
    fill(db, &m, 0, 50 * MIN);
    check_all(db, &m);
    /* odd series lose [10m, 20m], even ones [2m, 4m] */
    labels_matcher *odd = matcher(LABELS_MATCH_EQ, "odd", "1");
    del(db, &m, &odd, 1, is_odd, 10 * MIN, 20 * MIN);
    check_all(db, &m);
    assert_int_equal(tombstones(db), NSER / 2);
    labels_matcher *even = matcher(LABELS_MATCH_EQ, "even", "1");
    del(db, &m, &even, 1, is_even, 2 * MIN, 4 * MIN);
    check_all(db, &m);
    assert_int_equal(tombstones(db), NSER);
    labels_matcher_free(even);
    /* a regex: s=~"1.*" loses [15m, 25m] + 30s (partial minutes) */
    labels_matcher *re = matcher(LABELS_MATCH_RE, "s", "1.*");
    del(db, &m, &re, 1, is_1x, 15 * MIN + 30000, 25 * MIN + 30000);
    check_all(db, &m);
    /* overlapping deletions merge: odd series have one interval each */
    del(db, &m, &odd, 1, is_odd, 20 * MIN, 22 * MIN);
    tsdb_head_stats hs;
    tsdb_head_stats_get(tsdb_db_head(db), &hs);
    assert_int_equal(hs.tombstones, tombstones(db));
    /* a negative regex and an empty range delete nothing more */
    labels_matcher *nre = matcher(LABELS_MATCH_NRE, "s", ".*");
    del(db, &m, &nre, 1, is_3, 0, -1); /* mint > maxt: nothing (model: an empty interval) */
    check_all(db, &m);
    /* series 3 entirely: gone from selects and listings of any range */
    labels_matcher *s3 = matcher(LABELS_MATCH_EQ, "s", "3");
    del(db, &m, &s3, 1, is_3, INT64_MIN, INT64_MAX);
    check_all(db, &m);
    tsdb_strs *vals;
    assert_int_equal(tsdb_db_label_values(db, base_str_c("s"), &odd, 1, INT64_MIN, INT64_MAX, &vals), 0);
    assert_int_equal(vals->n, NSER / 2 - 1);
    tsdb_strs_free(vals);
    /* deletion clamps to the samples held: later appends of series 3 are
     * there (Prometheus's Head.Delete) */
    fill(db, &m, 50 * MIN, 60 * MIN);
    m.nd[3] = 0;
    mdel(&m, 3, 0, 50 * MIN - 1);
    check_all(db, &m);
    /* a label name only a deleted series has is not listed */
    labels_set *x;
    assert_int_equal(labels_from_cstrs(&x, "__name__", "m", "s", "99", "extra", "y", NULL), 0);
    tsdb_head_app *a;
    assert_int_equal(tsdb_head_app_new(tsdb_db_head(db), &a), 0);
    assert_int_equal(tsdb_head_app_add(a, x, 55 * MIN, 1), 0);
    assert_int_equal(tsdb_head_app_commit(a, NULL), 0);
    tsdb_head_app_free(a);
    labels_unref(x);
    tsdb_strs *names;
    assert_int_equal(tsdb_db_label_names(db, NULL, 0, 0, 60 * MIN, &names), 0);
    assert_int_equal(names->n, 5);
    tsdb_strs_free(names);
    labels_matcher *ex = matcher(LABELS_MATCH_EQ, "extra", "y");
    char err[512];
    assert_int_equal(tsdb_db_delete(db, &ex, 1, 0, 60 * MIN, err, sizeof err), 0);
    assert_int_equal(tsdb_db_label_names(db, NULL, 0, 0, 60 * MIN, &names), 0);
    assert_int_equal(names->n, 4);
    tsdb_strs_free(names);
    assert_int_equal(tsdb_db_label_names(db, &ex, 1, 0, 60 * MIN, &names), 0);
    assert_int_equal(names->n, 0);
    tsdb_strs_free(names);
    /* a set selected before a deletion keeps its view; one after does not */
    tsdb_db_set *before;
    assert_int_equal(tsdb_db_select(db, &s3, 1, 50 * MIN, 60 * MIN, &before), 0);
    del(db, &m, &s3, 1, is_3, 50 * MIN, 60 * MIN);
    assert_int_equal(tsdb_db_set_next(before), 1);
    int64_t t;
    double v;
    assert_int_equal(tsdb_db_set_sample(before, &t, &v), 1);
    assert_int_equal(t, 50 * MIN);
    tsdb_db_set_free(before);
    check_all(db, &m);
    /* the whole model survives a restart: WAL replay */
    assert_int_equal(tsdb_db_close(db), 0);
    db = dopen(dir, NULL);
    check_all(db, &m);
    uint64_t nt = tombstones(db);
    assert_true(nt > 0);
    /* and a checkpoint at the head's floor (nothing dropped) then a restart */
    assert_int_equal(
        tsdb_head_checkpoint(tsdb_db_head(db), tsdb_head_min_valid_time(tsdb_db_head(db)), err, sizeof err),
        0);
    assert_int_equal(tsdb_db_close(db), 0);
    db = dopen(dir, NULL);
    check_all(db, &m);
    assert_int_equal(tombstones(db), nt);
    /* a checkpoint at 21m keeps whole chunks, so samples before it come
     * back at replay: so do the deletions inside them */
    assert_int_equal(tsdb_head_checkpoint(tsdb_db_head(db), 21 * MIN, err, sizeof err), 0);
    assert_int_equal(tsdb_db_close(db), 0);
    db = dopen(dir, NULL);
    check_all(db, &m);
    assert_int_equal(tombstones(db), nt);
    assert_int_equal(tsdb_db_close(db), 0);
    labels_matcher_free(odd);
    labels_matcher_free(re);
    labels_matcher_free(nre);
    labels_matcher_free(s3);
    labels_matcher_free(ex);
    kelvin_rm_rf(dir);
    free(dir);
}

/* ---- blocks ---------------------------------------------------------------------- */

static int count_files(const char *dir, const char *name) {
    char cmd[600];
    snprintf(cmd, sizeof cmd, "find '%s' -name '%s' | wc -l", dir, name);
    FILE *p = popen(cmd, "r");
    int n = -1;
    assert_non_null(p);
    assert_int_equal(fscanf(p, "%d", &n), 1);
    pclose(p);
    return n;
}

static void test_blocks(void **st) {
    (void)st;
    char *dir = kelvin_tmpdir("del");
    tsdb_db *db = dopen(dir, NULL);
    model m = {0};
    for (int h = 0; h < 4; h++) {
        fill(db, &m, h * HOUR, (h + 1) * HOUR);
        maintain(db);
    }
    tsdb_db_stats s0;
    tsdb_db_stats_get(db, &s0);
    assert_true(s0.blocks >= 2);
    /* across blocks and the head */
    labels_matcher *odd = matcher(LABELS_MATCH_EQ, "odd", "1");
    del(db, &m, &odd, 1, is_odd, 30 * MIN, 3 * HOUR + 30 * MIN);
    check_all(db, &m);
    assert_true(count_files(dir, "tombstones") >= 2);
    assert_int_equal(count_files(dir, "tombstones.tmp"), 0);
    labels_matcher *s7 = matcher(LABELS_MATCH_EQ, "s", "7");
    del(db, &m, &s7, 1, is_7, INT64_MIN, INT64_MAX);
    check_all(db, &m);
    uint64_t nt = tombstones(db);
    /* survives a restart: the files */
    assert_int_equal(tsdb_db_close(db), 0);
    tsdb_db_report rep;
    db = dopen(dir, &rep);
    assert_int_equal(rep.blocks_bad, 0);
    check_all(db, &m);
    assert_int_equal(tombstones(db), nt);
    assert_int_equal(tsdb_db_close(db), 0);
    /* a leftover tombstones.tmp is never read; a damaged tombstones file
     * fails its block's open (reported; the rest is served) */
    tsdb_block_meta *bm;
    size_t nb;
    db = dopen(dir, NULL);
    assert_int_equal(tsdb_db_blocks(db, &bm, &nb), 0);
    assert_int_equal(tsdb_db_close(db), 0);
    char u[27], p[600];
    tsdb_ulid_format(&bm[0].ulid, u);
    snprintf(p, sizeof p, "%s/%s/tombstones.tmp", dir, u);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs("garbage", f);
    fclose(f);
    db = dopen(dir, &rep);
    assert_int_equal(rep.blocks_bad, 0);
    check_all(db, &m);
    assert_int_equal(tsdb_db_close(db), 0);
    snprintf(p, sizeof p, "%s/%s/tombstones", dir, u);
    struct stat sb;
    assert_int_equal(stat(p, &sb), 0);
    f = fopen(p, "r+b");
    assert_non_null(f);
    fseek(f, 9, SEEK_SET);
    fputc(0x7f, f);
    fclose(f);
    db = dopen(dir, &rep);
    assert_int_equal(rep.blocks_bad, 1);
    assert_non_null(strstr(rep.first_error, "tombstones"));
    assert_int_equal(tsdb_db_close(db), 0);
    free(bm);
    labels_matcher_free(odd);
    labels_matcher_free(s7);
    kelvin_rm_rf(dir);
    free(dir);
}

/* Head cutting writes blocks without the deleted samples; compaction
 * merges blocks without them; clean_tombstones rewrites the rest. */
static void test_cut_compact_clean(void **st) {
    (void)st;
    char *dir = kelvin_tmpdir("del");
    tsdb_db *db = dopen(dir, NULL);
    model m = {0};
    fill(db, &m, 0, 3 * HOUR);
    labels_matcher *odd = matcher(LABELS_MATCH_EQ, "odd", "1");
    labels_matcher *even = matcher(LABELS_MATCH_EQ, "even", "1");
    labels_matcher *re = matcher(LABELS_MATCH_RE, "s", "1.*");
    del(db, &m, &odd, 1, is_odd, 10 * MIN, 70 * MIN);
    del(db, &m, &even, 1, is_even, 5 * MIN, 8 * MIN);
    check_all(db, &m);
    labels_matcher_free(even);
    /* cut [0, 1h): the block holds no deleted sample and no tombstones */
    maintain(db);
    tsdb_db_stats s;
    tsdb_db_stats_get(db, &s);
    assert_true(s.blocks >= 1);
    assert_int_equal(count_files(dir, "tombstones"), 0);
    tsdb_block_meta *bm;
    size_t nb;
    assert_int_equal(tsdb_db_blocks(db, &bm, &nb), 0);
    assert_int_equal(nb, 2); /* [0, 1h) [1h, 2h): the head keeps 1 h */
    for (size_t k = 0; k < nb; k++) {
        uint64_t w = 0;
        for (int i = 0; i < NSER; i++)
            for (int64_t t = bm[k].mint; t < bm[k].maxt; t += STEP) w += (uint64_t)alive(&m, i, t);
        assert_int_equal(bm[k].num_samples, w);
    }
    free(bm);
    check_all(db, &m);
    /* GC dropped the head tombstones that end below its floor (2h) */
    assert_int_equal(s.head.tombstones, 0);
    del(db, &m, &odd, 1, is_odd, 2 * HOUR + 10 * MIN, 2 * HOUR + 20 * MIN);
    tsdb_db_stats_get(db, &s);
    assert_int_equal(s.head.tombstones, NSER / 2);
    check_all(db, &m);
    /* more hours: deletions in blocks, then compaction into 3 h */
    for (int h = 3; h < 10; h++) {
        fill(db, &m, h * HOUR, (h + 1) * HOUR);
        if (h == 5) {
            del(db, &m, &re, 1, is_1x, 2 * HOUR + 30 * MIN, 4 * HOUR);
            check_all(db, &m);
        }
        maintain(db);
        check_all(db, &m);
    }
    tsdb_db_stats_get(db, &s);
    assert_true(s.compactions >= 1);
    assert_int_equal(s.compactions_failed, 0);
    /* merged blocks hold exactly the live samples */
    assert_int_equal(tsdb_db_blocks(db, &bm, &nb), 0);
    for (size_t k = 0; k < nb; k++) {
        uint64_t w = 0;
        for (int i = 0; i < NSER; i++)
            for (int64_t t = bm[k].mint; t < bm[k].maxt; t += STEP) w += (uint64_t)alive(&m, i, t);
        if (bm[k].level > 1) assert_int_equal(bm[k].num_samples, w);
    }
    free(bm);
    /* delete in the newest blocks, then clean: no tombstones left, same
     * answers, before and after a restart */
    labels_matcher *all = matcher(LABELS_MATCH_EQ, "__name__", "m");
    del(db, &m, &all, 1, is_all, 6 * HOUR + 10 * MIN, 6 * HOUR + 20 * MIN);
    del(db, &m, &odd, 1, is_odd, 7 * HOUR, 8 * HOUR + 5 * MIN);
    check_all(db, &m);
    assert_true(count_files(dir, "tombstones") >= 1);
    char err[512];
    assert_int_equal(tsdb_db_clean_tombstones(db, err, sizeof err), 0);
    assert_int_equal(count_files(dir, "tombstones"), 0);
    tsdb_db_stats_get(db, &s);
    assert_true(s.tombstone_cleanups >= 1);
    assert_int_equal(s.tombstones, s.head.tombstones);
    check_all(db, &m);
    assert_int_equal(tsdb_db_close(db), 0);
    tsdb_db_report rep;
    db = dopen(dir, &rep);
    assert_int_equal(rep.blocks_bad, 0);
    check_all(db, &m);
    /* a block whose every sample is deleted is dropped by the cleanup */
    assert_int_equal(tsdb_db_blocks(db, &bm, &nb), 0);
    size_t nb0 = nb;
    int64_t a = bm[0].mint, b = bm[0].maxt - 1;
    free(bm);
    del(db, &m, &all, 1, is_all, a, b);
    check_all(db, &m);
    assert_int_equal(tsdb_db_clean_tombstones(db, err, sizeof err), 0);
    tsdb_db_stats_get(db, &s);
    assert_int_equal(s.blocks, nb0 - 1);
    check_all(db, &m);
    assert_int_equal(tsdb_db_close(db), 0);
    labels_matcher_free(odd);
    labels_matcher_free(re);
    labels_matcher_free(all);
    kelvin_rm_rf(dir);
    free(dir);
}

/* The planner rewrites a wide block whose tombstones cover more than 5%
 * of its series (Prometheus's rule), without being asked to. */
static void test_planner_rewrite(void **st) {
    (void)st;
    char *dir = kelvin_tmpdir("del");
    tsdb_db *db = dopen(dir, NULL);
    model m = {0};
    for (int h = 0; h < 8; h++) {
        fill(db, &m, h * HOUR, (h + 1) * HOUR);
        maintain(db);
    }
    tsdb_block_meta *bm;
    size_t nb;
    assert_int_equal(tsdb_db_blocks(db, &bm, &nb), 0);
    assert_true(nb >= 2);
    assert_int_equal(bm[0].maxt - bm[0].mint, 3 * HOUR); /* ranges 1h, 3h, 9h: half the largest is 3h */
    tsdb_ulid first = bm[0].ulid;
    free(bm);
    labels_matcher *s7 = matcher(LABELS_MATCH_EQ, "s", "7");
    labels_matcher *s3 = matcher(LABELS_MATCH_EQ, "s", "3");
    del(db, &m, &s7, 1, is_7, HOUR, HOUR + 5 * MIN); /* 1 of 20 series: 1/21 < 5% */
    maintain(db);
    assert_int_equal(tsdb_db_blocks(db, &bm, &nb), 0);
    assert_memory_equal(&bm[0].ulid, &first, sizeof first);
    free(bm);
    del(db, &m, &s3, 1, is_3, 2 * HOUR, 2 * HOUR + 5 * MIN); /* 2/21 > 5% */
    maintain(db);
    assert_int_equal(tsdb_db_blocks(db, &bm, &nb), 0);
    assert_memory_not_equal(&bm[0].ulid, &first, sizeof first);
    assert_int_equal(bm[0].mint, 0);
    assert_int_equal(bm[0].maxt, 3 * HOUR);
    uint64_t w = 0;
    for (int i = 0; i < NSER; i++)
        for (int64_t t = 0; t < 3 * HOUR; t += STEP) w += (uint64_t)alive(&m, i, t);
    assert_int_equal(bm[0].num_samples, w);
    free(bm);
    check_all(db, &m);
    assert_int_equal(tsdb_db_close(db), 0);
    labels_matcher_free(s7);
    labels_matcher_free(s3);
    kelvin_rm_rf(dir);
    free(dir);
}

/* A crash in the middle of a cleanup: the rewritten block is in place
 * and the old one (with its tombstones) is still there. Open removes the
 * old one; the answers are the same. */
static void test_clean_crash(void **st) {
    (void)st;
    char *dir = kelvin_tmpdir("del");
    tsdb_db *db = dopen(dir, NULL);
    model m = {0};
    for (int h = 0; h < 3; h++) {
        fill(db, &m, h * HOUR, (h + 1) * HOUR);
        maintain(db);
    }
    labels_matcher *odd = matcher(LABELS_MATCH_EQ, "odd", "1");
    del(db, &m, &odd, 1, is_odd, 5 * MIN, 25 * MIN);
    check_all(db, &m);
    tsdb_block_meta *bm;
    size_t nb;
    assert_int_equal(tsdb_db_blocks(db, &bm, &nb), 0);
    assert_int_equal(tsdb_db_close(db), 0);
    char u[27], p[600], err[512];
    tsdb_ulid_format(&bm[0].ulid, u);
    snprintf(p, sizeof p, "%s/%s", dir, u);
    tsdb_block *b;
    assert_int_equal(tsdb_block_open(p, &b, err, sizeof err), 0);
    assert_true(tsdb_block_num_tombstones(b) > 0);
    tsdb_block_meta nm;
    assert_int_equal(tsdb_block_compact(dir, &b, 1, NULL, &nm, err, sizeof err), 0);
    assert_int_equal(nm.level, bm[0].level + 1);
    assert_int_equal(nm.mint, bm[0].mint);
    tsdb_block_close(b);
    tsdb_db_report rep;
    db = dopen(dir, &rep);
    assert_int_equal(rep.blocks_replaced, 1);
    struct stat sb;
    assert_int_not_equal(stat(p, &sb), 0);
    check_all(db, &m);
    assert_int_equal(tsdb_db_close(db), 0);
    free(bm);
    labels_matcher_free(odd);
    kelvin_rm_rf(dir);
    free(dir);
}

/* Direct block API: the series count the range hits, a read-only open
 * refusing deletions. */
static void test_block_api(void **st) {
    (void)st;
    char *dir = kelvin_tmpdir("del");
    tsdb_db *db = dopen(dir, NULL);
    model m = {0};
    fill(db, &m, 0, 2 * HOUR);
    maintain(db);
    tsdb_block_meta *bm;
    size_t nb;
    assert_int_equal(tsdb_db_blocks(db, &bm, &nb), 0);
    assert_int_equal(tsdb_db_close(db), 0);
    char u[27], p[600], err[512];
    tsdb_ulid_format(&bm[0].ulid, u);
    snprintf(p, sizeof p, "%s/%s", dir, u);
    tsdb_block *b;
    assert_int_equal(tsdb_block_open(p, &b, err, sizeof err), 0);
    labels_matcher *odd = matcher(LABELS_MATCH_EQ, "odd", "1");
    uint64_t hit = 99;
    assert_int_equal(tsdb_block_tombstone(b, &odd, 1, -HOUR, -1, &hit, err, sizeof err), 0);
    assert_int_equal(hit, 0); /* outside the block */
    assert_int_equal(tsdb_block_tombstone(b, &odd, 1, 10 * MIN, 20 * MIN, &hit, err, sizeof err), 0);
    assert_int_equal(hit, NSER / 2);
    assert_int_equal(tsdb_block_num_tombstones(b), NSER / 2);
    assert_int_equal(tsdb_block_tombstone(b, &odd, 1, 20 * MIN + 1, 22 * MIN, &hit, err, sizeof err), 0);
    assert_int_equal(tsdb_block_num_tombstones(b), NSER / 2); /* adjacent: merged */
    assert_int_equal(tsdb_block_tombstone(b, NULL, 0, 30 * MIN, 30 * MIN, &hit, err, sizeof err), 0);
    assert_int_equal(hit, NSER);
    /* the block's own listing over its whole range */
    tsdb_strs *vals;
    assert_int_equal(tsdb_block_label_values(b, base_str_c("s"), NULL, 0, &vals), 0);
    assert_int_equal(vals->n, NSER);
    tsdb_strs_free(vals);
    assert_int_equal(tsdb_block_tombstone(b, &odd, 1, INT64_MIN, INT64_MAX, &hit, err, sizeof err), 0);
    assert_int_equal(tsdb_block_label_values(b, base_str_c("s"), NULL, 0, &vals), 0);
    assert_int_equal(vals->n, NSER / 2);
    tsdb_strs_free(vals);
    assert_int_equal(tsdb_block_verify(b, err, sizeof err), 0); /* raw chunks are untouched */
    tsdb_block_close(b);
    /* read-only databases refuse deletions and cleanups */
    tsdb_db_opts o;
    tsdb_db_opts_default(&o);
    o.path = dir;
    o.min_block_ms = BLOCK;
    o.read_only = 1;
    o.maintain_interval_ms = -1;
    assert_int_equal(tsdb_db_open(&o, &db, NULL, err, sizeof err), 0);
    assert_int_equal(tsdb_db_delete(db, &odd, 1, 0, 1, err, sizeof err), BASE_E_INVAL);
    assert_int_equal(tsdb_db_clean_tombstones(db, err, sizeof err), BASE_E_INVAL);
    assert_int_equal(tsdb_db_close(db), 0);
    free(bm);
    labels_matcher_free(odd);
    kelvin_rm_rf(dir);
    free(dir);
}

/* Deletions while the database is written, read and maintained from
 * other threads (the sanitizers watch); the end state is the model's. */
typedef struct race {
    tsdb_db *db;
    _Atomic int stop;
    _Atomic long reads, rounds;
} race;

static void *race_maintain(void *arg) {
    race *r = arg;
    while (!atomic_load(&r->stop)) {
        char err[512];
        if (tsdb_db_maintain(r->db, err, sizeof err)) fprintf(stderr, "maintain: %s\n", err);
        atomic_fetch_add(&r->rounds, 1);
        usleep(2000);
    }
    return NULL;
}

static void *race_read(void *arg) {
    race *r = arg;
    int64_t t[16];
    double v[16];
    while (!atomic_load(&r->stop)) {
        tsdb_db_set *s;
        if (tsdb_db_select(r->db, NULL, 0, INT64_MIN, INT64_MAX, &s)) abort();
        while (tsdb_db_set_next(s) == 1) {
            int k;
            while ((k = tsdb_db_set_samples(s, t, v, 16)) > 0)
                for (int i = 0; i < k; i++)
                    if (v[i] != value(index_of(tsdb_db_set_labels(s)), t[i])) abort();
            if (k < 0) abort();
        }
        tsdb_db_set_free(s);
        tsdb_strs *names;
        if (tsdb_db_label_names(r->db, NULL, 0, INT64_MIN, INT64_MAX, &names)) abort();
        tsdb_strs_free(names);
        atomic_fetch_add(&r->reads, 1);
    }
    return NULL;
}

static void test_race(void **st) {
    (void)st;
    char *dir = kelvin_tmpdir("del");
    tsdb_db *db = dopen(dir, NULL);
    model m = {0};
    race r = {.db = db};
    pthread_t a, b;
    assert_int_equal(pthread_create(&a, NULL, race_maintain, &r), 0);
    assert_int_equal(pthread_create(&b, NULL, race_read, &r), 0);
    labels_matcher *odd = matcher(LABELS_MATCH_EQ, "odd", "1");
    labels_matcher *re = matcher(LABELS_MATCH_RE, "s", "1.*");
    for (int h = 0; h < 6; h++) {
        fill(db, &m, h * HOUR, (h + 1) * HOUR);
        del(db, &m, &odd, 1, is_odd, h * HOUR + 10 * MIN, h * HOUR + 20 * MIN);
        if (h) del(db, &m, &re, 1, is_1x, h * HOUR - 30 * MIN, h * HOUR - 25 * MIN);
        if (h == 3) {
            char err[512];
            assert_int_equal(tsdb_db_clean_tombstones(db, err, sizeof err), 0);
        }
    }
    while (atomic_load(&r.reads) < 3 || atomic_load(&r.rounds) < 3) usleep(1000);
    atomic_store(&r.stop, 1);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    maintain(db);
    check_all(db, &m);
    assert_int_equal(tsdb_db_close(db), 0);
    db = dopen(dir, NULL);
    check_all(db, &m);
    assert_int_equal(tsdb_db_close(db), 0);
    labels_matcher_free(odd);
    labels_matcher_free(re);
    kelvin_rm_rf(dir);
    free(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ivals),           cmocka_unit_test(test_head),
        cmocka_unit_test(test_blocks),          cmocka_unit_test(test_cut_compact_clean),
        cmocka_unit_test(test_planner_rewrite), cmocka_unit_test(test_clean_crash),
        cmocka_unit_test(test_block_api),       cmocka_unit_test(test_race),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
