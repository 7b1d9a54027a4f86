/* db.c -- tests of the database over head and blocks: head cutting and the
 * WAL checkpoint behind it, leveled and overlap compaction, retention by
 * time and size, reads that merge head and blocks (every sample exactly
 * once, also while blocks are cut and compacted under concurrent
 * appenders and readers), a crash between a block write and the WAL
 * truncation, leftovers of crashed writes and compactions, a damaged block
 * skipped while the rest is served, the directory lock, read-only opens,
 * and the storage flags.
 *
 * Data: NSER series "m{s="<i>"}", one sample every STEP ms, value
 * i * 1e6 + t / STEP, so every (series, t) has one known value.
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

#define HOUR  3600000LL
#define STEP  60000LL /* one sample a minute */
#define NSER  20
#define BLOCK HOUR /* min block duration in these tests */

static labels_set *series(int i) {
    char v[16];
    snprintf(v, sizeof v, "%d", i);
    labels_set *ls;
    assert_int_equal(labels_from_cstrs(&ls, "__name__", "m", "s", v, i % 2 ? "odd" : "even", "1", NULL), 0);
    return ls;
}

static double value(int i, int64_t t) {
    return (double)i * 1e6 + (double)(t / STEP);
}

static tsdb_db *dopen(const char *dir, int64_t retention_ms, int64_t retention_bytes) {
    tsdb_db_opts o;
    tsdb_db_opts_default(&o);
    o.path = dir;
    o.min_block_ms = BLOCK;
    o.max_block_ms = 9 * BLOCK;
    o.retention_ms = retention_ms;
    o.retention_bytes = retention_bytes;
    o.maintain_interval_ms = -1; /* rounds run when the test says */
    tsdb_db *db;
    char err[512];
    tsdb_db_report rep;
    int e = tsdb_db_open(&o, &db, &rep, err, sizeof err);
    if (e) fprintf(stderr, "open: %s\n", err);
    assert_int_equal(e, 0);
    return db;
}

/* Appends samples at [from, to) for every series. */
static void fill(tsdb_db *db, int64_t from, int64_t to) {
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
}

/* Checks that [mint, maxt] holds exactly the samples of [from, to) of
 * every series, sorted, once each. Returns the number of samples. */
static size_t check(tsdb_db *db, int64_t mint, int64_t maxt, int64_t from, int64_t to) {
    tsdb_db_set *s;
    assert_int_equal(tsdb_db_select(db, NULL, 0, mint, maxt, &s), 0);
    int64_t lo = from > mint ? from : mint, hi = to - 1 < maxt ? to - 1 : maxt;
    lo = (lo + STEP - 1) / STEP * STEP;
    size_t want_per = lo <= hi ? (size_t)((hi - lo) / STEP + 1) : 0, total = 0;
    labels_set *prevc = NULL;
    int nser = 0;
    while (tsdb_db_set_next(s) == 1) {
        const labels_set *ls = tsdb_db_set_labels(s);
        if (prevc) assert_true(labels_cmp(prevc, ls) < 0);
        labels_unref(prevc);
        prevc = labels_ref(ls);
        base_str sv = labels_get(ls, base_str_c("s"));
        char buf[16] = {0};
        memcpy(buf, sv.p, sv.n < 15 ? sv.n : 15);
        int i = atoi(buf);
        int64_t t, want = lo;
        double v;
        int r;
        size_t n = 0;
        while ((r = tsdb_db_set_sample(s, &t, &v)) == 1) {
            assert_int_equal(t, want);
            assert_true(v == value(i, t));
            want += STEP;
            n++;
        }
        assert_int_equal(r, 0);
        assert_int_equal(n, want_per);
        total += n;
        nser++;
    }
    labels_unref(prevc);
    assert_int_equal(nser, want_per ? NSER : 0);
    tsdb_db_set_free(s);
    return total;
}

static size_t nblocks(tsdb_db *db) {
    tsdb_db_stats st;
    tsdb_db_stats_get(db, &st);
    return st.blocks;
}

static void maintain(tsdb_db *db) {
    char err[512];
    int e = tsdb_db_maintain(db, err, sizeof err);
    if (e) fprintf(stderr, "maintain: %s\n", err);
    assert_int_equal(e, 0);
}

static void test_cut_and_restart(void **st) {
    (void)st;
    char *dir = kelvin_tmpdir("db");
    tsdb_db *db = dopen(dir, 0, 0);
    fill(db, 0, 5 * HOUR + 30 * STEP);
    maintain(db);
    /* 5.5 h: cut while it spans more than 1.5 h -> [0,1) [1,2) [2,3) [3,4) */
    tsdb_block_meta *m;
    size_t n;
    assert_int_equal(tsdb_db_blocks(db, &m, &n), 0);
    assert_true(n >= 1);
    int64_t end = 0;
    for (size_t i = 0; i < n; i++) {
        assert_true(m[i].mint >= end);
        end = m[i].maxt;
    }
    free(m);
    assert_int_equal(end, 4 * HOUR);
    int64_t hmin, hmax;
    tsdb_head_bounds(tsdb_db_head(db), &hmin, &hmax);
    assert_true(hmin >= 4 * HOUR);
    assert_true(hmax - hmin <= BLOCK / 2 * 3);
    assert_int_equal(check(db, INT64_MIN, INT64_MAX, 0, 5 * HOUR + 30 * STEP), (size_t)NSER * 330);
    /* a range inside one block, one across block and head */
    check(db, HOUR + 5 * STEP, 2 * HOUR - 1, 0, 6 * HOUR);
    check(db, 3 * HOUR + 7 * STEP, 5 * HOUR, 0, 5 * HOUR + 30 * STEP);
    /* a sample before the head's floor is refused */
    tsdb_head_app *a;
    assert_int_equal(tsdb_head_app_new(tsdb_db_head(db), &a), 0);
    labels_set *ls = series(0);
    assert_int_equal(tsdb_head_app_add(a, ls, HOUR, 1), 0);
    tsdb_append_result r;
    assert_int_equal(tsdb_head_app_commit(a, &r), 0);
    assert_int_equal(r.too_old, 1);
    labels_unref(ls);
    tsdb_head_app_free(a);
    assert_int_equal(tsdb_db_close(db), 0);
    /* the checkpoint exists and the restart serves the same */
    db = dopen(dir, 0, 0);
    assert_int_equal(check(db, INT64_MIN, INT64_MAX, 0, 5 * HOUR + 30 * STEP), (size_t)NSER * 330);
    fill(db, 5 * HOUR + 30 * STEP, 6 * HOUR);
    assert_int_equal(check(db, INT64_MIN, INT64_MAX, 0, 6 * HOUR), (size_t)NSER * 360);
    assert_int_equal(tsdb_db_close(db), 0);
    kelvin_rm_rf(dir);
    free(dir);
}

static void test_compaction(void **st) {
    (void)st;
    char *dir = kelvin_tmpdir("db");
    tsdb_db *db = dopen(dir, 0, 0);
    /* one hour at a time, cutting as we go: level-1 blocks of 1 h, then
     * merged into 3 h and 9 h ranges */
    for (int h = 0; h < 12; h++) {
        fill(db, h * HOUR, (h + 1) * HOUR);
        maintain(db);
    }
    tsdb_block_meta *m;
    size_t n;
    assert_int_equal(tsdb_db_blocks(db, &m, &n), 0);
    int saw9 = 0;
    for (size_t i = 0; i < n; i++) {
        if (m[i].maxt - m[i].mint == 9 * HOUR) saw9 = 1;
        assert_true(m[i].maxt - m[i].mint <= 9 * HOUR);
        if (i) assert_true(m[i].mint >= m[i - 1].maxt);
    }
    free(m);
    assert_true(saw9);
    assert_true(n < 6);
    tsdb_db_stats s;
    tsdb_db_stats_get(db, &s);
    assert_true(s.compactions >= 4);
    assert_int_equal(s.compactions_failed, 0);
    assert_int_equal(check(db, INT64_MIN, INT64_MAX, 0, 12 * HOUR), (size_t)NSER * 720);
    /* only block directories and wal/lock are left */
    assert_int_equal(tsdb_db_close(db), 0);
    db = dopen(dir, 0, 0);
    assert_int_equal(nblocks(db), n);
    assert_int_equal(check(db, INT64_MIN, INT64_MAX, 0, 12 * HOUR), (size_t)NSER * 720);
    assert_int_equal(tsdb_db_close(db), 0);
    kelvin_rm_rf(dir);
    free(dir);
}

static void test_retention(void **st) {
    (void)st;
    char *dir = kelvin_tmpdir("db");
    tsdb_db *db = dopen(dir, 3 * HOUR, 0);
    for (int h = 0; h < 8; h++) {
        fill(db, h * HOUR, (h + 1) * HOUR);
        maintain(db);
    }
    tsdb_block_meta *m;
    size_t n;
    assert_int_equal(tsdb_db_blocks(db, &m, &n), 0);
    assert_true(n >= 1);
    int64_t newest = m[n - 1].maxt;
    for (size_t i = 0; i < n; i++) assert_true(m[i].maxt > newest - 3 * HOUR);
    int64_t oldest = m[0].mint;
    free(m);
    tsdb_db_stats s;
    tsdb_db_stats_get(db, &s);
    assert_true(s.retention_deleted >= 1);
    assert_true(oldest > 0);
    check(db, INT64_MIN, INT64_MAX, oldest, 8 * HOUR);
    assert_int_equal(tsdb_db_close(db), 0);
    kelvin_rm_rf(dir);
    free(dir);

    /* by size: a budget of about one block keeps the newest blocks only */
    dir = kelvin_tmpdir("db");
    db = dopen(dir, 0, 0);
    for (int h = 0; h < 6; h++) {
        fill(db, h * HOUR, (h + 1) * HOUR);
        maintain(db);
    }
    tsdb_db_stats_get(db, &s);
    uint64_t per = s.block_bytes / s.blocks, wal = s.wal_bytes;
    assert_int_equal(tsdb_db_close(db), 0);
    db = dopen(dir, 0, (int64_t)(wal + per * 3 / 2 + per));
    maintain(db);
    tsdb_db_stats_get(db, &s);
    assert_true(s.blocks >= 1);
    assert_true(s.retention_deleted >= 1);
    assert_true(s.block_bytes <= per * 3);
    assert_int_equal(tsdb_db_close(db), 0);
    kelvin_rm_rf(dir);
    free(dir);
}

/* A crash after a block was written but before the WAL was truncated: the
 * restart serves every sample once. */
static void test_crash_between_block_and_wal(void **st) {
    (void)st;
    char *dir = kelvin_tmpdir("db");
    tsdb_db *db = dopen(dir, 0, 0);
    fill(db, 0, 3 * HOUR);
    assert_int_equal(tsdb_db_close(db), 0);
    /* write [0, 1h) as a block from a head replayed from the same WAL */
    char wal[512];
    snprintf(wal, sizeof wal, "%s/wal", dir);
    tsdb_head_opts ho = {.wal_dir = wal};
    tsdb_head *h;
    char err[512];
    assert_int_equal(tsdb_head_open(&ho, &h, NULL, err, sizeof err), 0);
    assert_int_equal(tsdb_block_write_head(dir, h, 0, HOUR, NULL, NULL, err, sizeof err), 0);
    assert_int_equal(tsdb_head_close(h), 0);
    db = dopen(dir, 0, 0);
    assert_int_equal(nblocks(db), 1);
    assert_int_equal(check(db, INT64_MIN, INT64_MAX, 0, 3 * HOUR), (size_t)NSER * 180);
    assert_int_equal(tsdb_db_close(db), 0);
    kelvin_rm_rf(dir);
    free(dir);
}

static void corrupt_file(const char *path, long off) {
    FILE *f = fopen(path, "r+b");
    assert_non_null(f);
    assert_int_equal(fseek(f, off, SEEK_SET), 0);
    int c = fgetc(f);
    assert_int_equal(fseek(f, off, SEEK_SET), 0);
    fputc(c ^ 0x5a, f);
    fclose(f);
}

/* Leftovers are removed, replaced compaction inputs deleted, a damaged
 * block reported and skipped while everything else is served. */
static void test_leftovers_and_damage(void **st) {
    (void)st;
    char *dir = kelvin_tmpdir("db");
    tsdb_db *db = dopen(dir, 0, 0);
    for (int h = 0; h < 4; h++) {
        fill(db, h * HOUR, (h + 1) * HOUR);
        maintain(db);
    }
    tsdb_block_meta *m;
    size_t n;
    assert_int_equal(tsdb_db_blocks(db, &m, &n), 0);
    assert_true(n >= 2);
    assert_int_equal(tsdb_db_close(db), 0);
    /* a compaction of the first two that "crashed" before deleting them */
    char p0[512], p1[512], tmp[512], err[512];
    char u0[27], u1[27];
    tsdb_ulid_format(&m[0].ulid, u0);
    tsdb_ulid_format(&m[1].ulid, u1);
    snprintf(p0, sizeof p0, "%s/%s", dir, u0);
    snprintf(p1, sizeof p1, "%s/%s", dir, u1);
    tsdb_block *b[2];
    assert_int_equal(tsdb_block_open(p0, &b[0], err, sizeof err), 0);
    assert_int_equal(tsdb_block_open(p1, &b[1], err, sizeof err), 0);
    tsdb_block_meta cm;
    assert_int_equal(tsdb_block_compact(dir, b, 2, NULL, &cm, err, sizeof err), 0);
    tsdb_block_close(b[0]);
    tsdb_block_close(b[1]);
    /* a block write that never finished */
    snprintf(tmp, sizeof tmp, "%s/%s.tmp", dir, u0);
    assert_int_equal(mkdir(tmp, 0755), 0);
    tsdb_db_opts o;
    tsdb_db_opts_default(&o);
    o.path = dir;
    o.min_block_ms = BLOCK;
    o.maintain_interval_ms = -1;
    tsdb_db_report rep;
    assert_int_equal(tsdb_db_open(&o, &db, &rep, err, sizeof err), 0);
    assert_int_equal(rep.blocks_replaced, 2);
    assert_int_equal(rep.leftovers, 1);
    assert_int_equal(rep.blocks_bad, 0);
    assert_int_equal(nblocks(db), n - 1);
    assert_int_equal(check(db, INT64_MIN, INT64_MAX, 0, 4 * HOUR), (size_t)NSER * 240);
    assert_int_equal(tsdb_db_close(db), 0);
    struct stat sb;
    assert_int_not_equal(stat(p0, &sb), 0);
    assert_int_not_equal(stat(tmp, &sb), 0);
    /* damage the compacted block's index: it is reported, the rest served */
    char cu[27], idx[600];
    tsdb_ulid_format(&cm.ulid, cu);
    snprintf(idx, sizeof idx, "%s/%s/index", dir, cu);
    corrupt_file(idx, 40);
    assert_int_equal(tsdb_db_open(&o, &db, &rep, err, sizeof err), 0);
    assert_int_equal(rep.blocks_bad, 1);
    assert_non_null(strstr(rep.first_error, cu));
    check(db, INT64_MIN, INT64_MAX, m[1].maxt, 4 * HOUR);
    assert_int_equal(tsdb_db_close(db), 0);
    free(m);
    kelvin_rm_rf(dir);
    free(dir);
}

static void test_lock_and_read_only(void **st) {
    (void)st;
    char *dir = kelvin_tmpdir("db");
    tsdb_db *db = dopen(dir, 0, 0);
    fill(db, 0, 2 * HOUR);
    maintain(db);
    tsdb_db_opts o;
    tsdb_db_opts_default(&o);
    o.path = dir;
    o.min_block_ms = BLOCK;
    o.maintain_interval_ms = -1;
    tsdb_db *db2;
    char err[512];
    assert_int_equal(tsdb_db_open(&o, &db2, NULL, err, sizeof err), BASE_E_CONFLICT);
    /* a read-only open sees blocks and WAL, writes nothing */
    o.read_only = 1;
    assert_int_equal(tsdb_db_open(&o, &db2, NULL, err, sizeof err), 0);
    assert_int_equal(check(db2, INT64_MIN, INT64_MAX, 0, 2 * HOUR), (size_t)NSER * 120);
    tsdb_head_app *a;
    assert_int_equal(tsdb_head_app_new(tsdb_db_head(db2), &a), 0);
    labels_set *ls = series(1);
    assert_int_equal(tsdb_head_app_add(a, ls, 3 * HOUR, 1), 0);
    assert_int_not_equal(tsdb_head_app_commit(a, NULL), 0);
    labels_unref(ls);
    tsdb_head_app_free(a);
    assert_int_not_equal(tsdb_db_maintain(db2, err, sizeof err), 0);
    assert_int_equal(tsdb_db_close(db2), 0);
    /* label listings over blocks and head */
    tsdb_strs *names, *vals;
    assert_int_equal(tsdb_db_label_names(db, NULL, 0, INT64_MIN, INT64_MAX, &names), 0);
    assert_int_equal(names->n, 4); /* __name__ even odd s */
    assert_int_equal(tsdb_db_label_values(db, base_str_c("s"), NULL, 0, INT64_MIN, INT64_MAX, &vals), 0);
    assert_int_equal(vals->n, NSER);
    tsdb_strs_free(names);
    tsdb_strs_free(vals);
    labels_matcher *mm;
    assert_int_equal(labels_matcher_new(LABELS_MATCH_EQ, base_str_c("odd"), base_str_c("1"), &mm, NULL, 0),
                     0);
    assert_int_equal(tsdb_db_label_values(db, base_str_c("s"), &mm, 1, INT64_MIN, INT64_MAX, &vals), 0);
    assert_int_equal(vals->n, NSER / 2);
    tsdb_strs_free(vals);
    labels_matcher_free(mm);
    assert_int_equal(tsdb_db_close(db), 0);
    kelvin_rm_rf(dir);
    free(dir);
}

static void test_flags(void **st) {
    (void)st;
    tsdb_db_flagvars v;
    tsdb_db_flagvars_init(&v);
    base_flag f[TSDB_DB_NFLAGS];
    assert_int_equal(tsdb_db_flags(&v, f, TSDB_DB_NFLAGS), TSDB_DB_NFLAGS);
    char *argv[] = {"x",
                    "--storage.tsdb.path=/tmp/k",
                    "--storage.tsdb.retention.time=90d",
                    "--storage.tsdb.retention.size=10GB",
                    "--no-storage.tsdb.wal-compression",
                    "--storage.tsdb.out-of-order-time-window=30m",
                    "--storage.tsdb.wal-sync=2s"};
    char err[256];
    assert_int_equal(base_flags_parse(f, TSDB_DB_NFLAGS, 7, argv, err, sizeof err), 0);
    tsdb_db_opts o;
    assert_int_equal(tsdb_db_flags_apply(&v, &o, err, sizeof err), 0);
    assert_string_equal(o.path, "/tmp/k");
    assert_int_equal(o.retention_ms, 90LL * 24 * HOUR);
    assert_int_equal(o.retention_bytes, 10LL << 30);
    assert_int_equal(o.wal_compression, 0);
    assert_int_equal(o.ooo_window_ms, 30 * 60000);
    assert_int_equal(o.wal.sync, TSDB_WAL_SYNC_INTERVAL);
    assert_int_equal(o.wal.sync_interval_ms, 2000);
    assert_int_equal(o.min_block_ms, 2 * HOUR);
    v.wal_sync = "sometimes";
    assert_int_equal(tsdb_db_flags_apply(&v, &o, err, sizeof err), BASE_E_INVAL);
    assert_non_null(strstr(err, "wal-sync"));
    v.wal_sync = "batch";
    v.max_block_ms = HOUR;
    assert_int_equal(tsdb_db_flags_apply(&v, &o, err, sizeof err), BASE_E_INVAL);
    assert_non_null(strstr(err, "max-block-duration"));
}

/* Appenders, readers and maintenance at once: readers must always see every
 * series with contiguous samples from 0 (nothing lost while the head is
 * cut into blocks and compacted), and at the end everything is there. */
typedef struct conc {
    tsdb_db *db;
    _Atomic int64_t written; /* samples at t < written are committed */
    _Atomic int stop;
} conc;

static void *appender(void *arg) {
    conc *c = arg;
    fill(c->db, 0, 0); /* warm-up: nothing */
    for (int64_t t = 0; t < 10 * HOUR; t += 30 * STEP) {
        fill(c->db, t, t + 30 * STEP);
        atomic_store(&c->written, t + 30 * STEP);
    }
    atomic_store(&c->stop, 1);
    return NULL;
}

static void *maintainer(void *arg) {
    conc *c = arg;
    for (int i = 0; i < 2000 && !atomic_load(&c->stop); i++) {
        maintain(c->db);
        usleep(2000);
    }
    return NULL;
}

static void *reader(void *arg) {
    conc *c = arg;
    for (int i = 0; i < 2000 && !atomic_load(&c->stop); i++) {
        int64_t w = atomic_load(&c->written);
        if (w == 0) continue;
        tsdb_db_set *s;
        assert_int_equal(tsdb_db_select(c->db, NULL, 0, 0, w - 1, &s), 0);
        int nser = 0;
        while (tsdb_db_set_next(s) == 1) {
            int64_t t, want = 0;
            double v;
            while (tsdb_db_set_sample(s, &t, &v) == 1) {
                assert_int_equal(t, want);
                want += STEP;
            }
            assert_true(want >= w);
            nser++;
        }
        assert_int_equal(nser, NSER);
        tsdb_db_set_free(s);
    }
    return NULL;
}

static void test_concurrency(void **st) {
    (void)st;
    char *dir = kelvin_tmpdir("db");
    conc c = {.db = dopen(dir, 0, 0)};
    pthread_t th[3];
    assert_int_equal(pthread_create(&th[0], NULL, appender, &c), 0);
    assert_int_equal(pthread_create(&th[1], NULL, maintainer, &c), 0);
    assert_int_equal(pthread_create(&th[2], NULL, reader, &c), 0);
    for (int i = 0; i < 3; i++) pthread_join(th[i], NULL);
    maintain(c.db);
    assert_true(nblocks(c.db) >= 1);
    assert_int_equal(check(c.db, INT64_MIN, INT64_MAX, 0, 10 * HOUR), (size_t)NSER * 600);
    assert_int_equal(tsdb_db_close(c.db), 0);
    kelvin_rm_rf(dir);
    free(dir);
}

/* A database whose background thread runs a round every interval_ms
 * (checkpoint_bytes: 0 for the default threshold). */
static tsdb_db *bg_open(const char *dir, int64_t interval_ms, uint64_t checkpoint_bytes) {
    tsdb_db_opts o;
    tsdb_db_opts_default(&o);
    o.path = dir;
    o.min_block_ms = BLOCK;
    o.maintain_interval_ms = interval_ms;
    o.checkpoint_bytes = checkpoint_bytes;
    tsdb_db *db;
    char err[512];
    int e = tsdb_db_open(&o, &db, NULL, err, sizeof err);
    if (e) fprintf(stderr, "open: %s\n", err);
    assert_int_equal(e, 0);
    return db;
}

/* The background thread cuts the head without being asked. */
static void test_background(void **st) {
    (void)st;
    char *dir = kelvin_tmpdir("db");
    tsdb_db *db = bg_open(dir, 20, 0);
    fill(db, 0, 3 * HOUR);
    tsdb_db_kick(db);
    for (int i = 0; i < 500 && nblocks(db) == 0; i++) usleep(10000);
    assert_true(nblocks(db) >= 1);
    assert_int_equal(check(db, INT64_MIN, INT64_MAX, 0, 3 * HOUR), (size_t)NSER * 180);
    assert_int_equal(tsdb_db_close(db), 0);
    kelvin_rm_rf(dir);
    free(dir);
}

/* With rounds an hour apart, the background thread still checkpoints within
 * seconds of the WAL growing past the checkpoint threshold. */
static void test_checkpoint_due_wakes(void **st) {
    (void)st;
    char *dir = kelvin_tmpdir("db");
    const uint64_t threshold = 64 * 1024;
    tsdb_db *db = bg_open(dir, HOUR, threshold);
    tsdb_head_app *a;
    assert_int_equal(tsdb_head_app_new(tsdb_db_head(db), &a), 0);
    labels_set *ls[NSER];
    for (int i = 0; i < NSER; i++) ls[i] = series(i);
    /* 30 minutes (no head cut) of one sample a second: well over 64 KB */
    for (int64_t t = 0; t < HOUR / 2; t += 1000) {
        for (int i = 0; i < NSER; i++) assert_int_equal(tsdb_head_app_add(a, ls[i], t, (double)t * i), 0);
        tsdb_append_result r;
        assert_int_equal(tsdb_head_app_commit(a, &r), 0);
    }
    for (int i = 0; i < NSER; i++) labels_unref(ls[i]);
    tsdb_head_app_free(a);
    assert_true(tsdb_head_wal_bytes_since_checkpoint(tsdb_db_head(db)) >= threshold);
    tsdb_head_stats hs;
    for (int i = 0; i < 150; i++) {
        tsdb_head_stats_get(tsdb_db_head(db), &hs);
        if (hs.checkpoints) break;
        usleep(100000);
    }
    assert_true(hs.checkpoints >= 1);
    assert_true(tsdb_head_wal_bytes_since_checkpoint(tsdb_db_head(db)) < threshold);
    assert_int_equal(nblocks(db), 0);
    assert_int_equal(tsdb_db_close(db), 0);
    kelvin_rm_rf(dir);
    free(dir);
}

/* A caller may drop its label set right after adding it: a set allocated
 * next at the same address is still a different series. */
static void test_app_set_freed_after_add(void **st) {
    (void)st;
    char *dir = kelvin_tmpdir("db");
    tsdb_db *db = dopen(dir, 0, 0);
    fill(db, 0, STEP); /* the series exist: the appender finds them by hash */
    tsdb_head_app *a;
    assert_int_equal(tsdb_head_app_new(tsdb_db_head(db), &a), 0);
    for (int i = 0; i < NSER; i++) {
        labels_set *ls = series(i);
        assert_int_equal(tsdb_head_app_add(a, ls, STEP, value(i, STEP)), 0);
        labels_unref(ls);
    }
    tsdb_append_result r;
    assert_int_equal(tsdb_head_app_commit(a, &r), 0);
    assert_int_equal(r.appended, NSER);
    assert_int_equal(r.duplicate + r.noop + r.out_of_order, 0);
    tsdb_head_app_free(a);
    assert_int_equal(check(db, INT64_MIN, INT64_MAX, 0, 2 * STEP), (size_t)NSER * 2);
    assert_int_equal(tsdb_db_close(db), 0);
    kelvin_rm_rf(dir);
    free(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cut_and_restart),
        cmocka_unit_test(test_compaction),
        cmocka_unit_test(test_retention),
        cmocka_unit_test(test_crash_between_block_and_wal),
        cmocka_unit_test(test_leftovers_and_damage),
        cmocka_unit_test(test_lock_and_read_only),
        cmocka_unit_test(test_flags),
        cmocka_unit_test(test_concurrency),
        cmocka_unit_test(test_background),
        cmocka_unit_test(test_checkpoint_due_wakes),
        cmocka_unit_test(test_app_set_freed_after_add),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
