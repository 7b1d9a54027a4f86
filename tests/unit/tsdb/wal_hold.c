/* tests/unit/tsdb/wal_hold.c -- what WAL readers (remote write) rely on:
 * the frame reader, the directory listing, holds, and the series that
 * checkpoints keep for held segments (wal.h HOLD and READING, head.h
 * HELD SERIES, db.h's accessors and WAL flags).
 *
 * - frame_read: whole frames (plain and snappy) read back equal, two
 *   frames back to back; every proper prefix is BASE_E_TRUNCATED; a bad
 *   length, a bad CRC and a CRC-valid snappy payload that does not
 *   decompress are BASE_E_PARSE.
 * - list: missing dir (BASE_E_IO), empty dir, segments and a checkpoint
 *   (a *.tmp checkpoint neither listed nor removed).
 * - hold: segments >= the hold survive checkpoints and go once it moves
 *   past them or is released; tail_bytes ignores them.
 * - hold_from: an open with hold_from keeps older segments but replays
 *   only the checkpoint and the segments after it (no "missing" report);
 *   a head opened so equals the head opened without a hold.
 * - gc_held: a series GC removes while held is in the next checkpoint
 *   (as a series record, read with frame_read) and gone once the hold
 *   passes its segment; without a hold nothing is remembered; replay of
 *   such a record gives an empty series, or an alias kept remembered.
 * - reader: series churn, GC and checkpoints with a hold at an old
 *   segment: reading the checkpoint's series then the held segments
 *   resolves the ref of every sample.
 * - db: flags (segment and checkpoint sizes), tsdb_db_wal/_wal_dir, and
 *   opts.wal.hold_from through the database.
 */
#include <dirent.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "tmpdir.h"

#include "base/buf.h"
#include "base/err.h"
#include "base/flag.h"
#include "labels/labels.h"
#include "tsdb/db.h"
#include "tsdb/head.h"
#include "tsdb/record.h"
#include "tsdb/wal.h"

/* ---- helpers ------------------------------------------------------------ */

static int seg_exists(const char *dir, uint64_t seg) {
    char p[512];
    struct stat sb;
    snprintf(p, sizeof p, "%s/%08" PRIu64, dir, seg);
    return stat(p, &sb) == 0;
}

static uint8_t *slurp(const char *path, size_t *ret_len) {
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    assert_int_equal(fseek(f, 0, SEEK_END), 0);
    long n = ftell(f);
    assert_true(n >= 0);
    rewind(f);
    uint8_t *b = malloc((size_t)n + 1);
    assert_non_null(b);
    assert_int_equal(fread(b, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *ret_len = (size_t)n;
    return b;
}

static labels_set *ser(const char *name, int i) {
    char b[16];
    snprintf(b, sizeof b, "%d", i);
    labels_set *ls;
    assert_int_equal(labels_from_cstrs(&ls, "__name__", name, "i", b, NULL), 0);
    return ls;
}

static void add(tsdb_head *h, const labels_set *ls, int64_t t, double v) {
    tsdb_head_app *a;
    assert_int_equal(tsdb_head_app_new(h, &a), 0);
    assert_int_equal(tsdb_head_app_add(a, ls, t, v), 0);
    tsdb_append_result r;
    assert_int_equal(tsdb_head_app_commit(a, &r), 0);
    assert_int_equal(r.appended, 1);
    tsdb_head_app_free(a);
}

static tsdb_head *hopen(const char *dir, uint64_t segsize, uint64_t hold_from, tsdb_wal_report *rep) {
    tsdb_head_opts o = {.wal_dir = dir, .wal = {.segment_size = segsize, .hold_from = hold_from}};
    tsdb_head *h;
    char err[256];
    int e = tsdb_head_open(&o, &h, rep, err, sizeof err);
    if (e) fprintf(stderr, "open: %s\n", err);
    assert_int_equal(e, 0);
    return h;
}

/* The head as text: every series' labels and samples, sorted. */
static char *dump(tsdb_head *h) {
    base_buf b = BASE_BUF_INIT;
    tsdb_series_set *ss;
    assert_int_equal(tsdb_head_select(h, NULL, 0, INT64_MIN, INT64_MAX, &ss), 0);
    while (tsdb_series_set_next(ss) == 1) {
        char tmp[512];
        int n = snprintf(tmp, sizeof tmp, "%" PRIu64 ":", tsdb_series_set_ref(ss));
        base_buf_append(&b, tmp, (size_t)n);
        labels_iter it;
        base_str k, v;
        labels_iter_init(&it, tsdb_series_set_labels(ss));
        while (labels_iter_next(&it, &k, &v)) {
            base_buf_append(&b, k.p, k.n);
            base_buf_append(&b, "=", 1);
            base_buf_append(&b, v.p, v.n);
            base_buf_append(&b, ",", 1);
        }
        int64_t t;
        double val;
        int r;
        while ((r = tsdb_series_set_sample(ss, &t, &val)) == 1) {
            n = snprintf(tmp, sizeof tmp, " %" PRId64 "=%g", t, val);
            base_buf_append(&b, tmp, (size_t)n);
        }
        assert_int_equal(r, 0);
        base_buf_append(&b, "\n", 1);
    }
    tsdb_series_set_free(ss);
    base_buf_append(&b, "", 1);
    assert_int_equal(base_buf_err(&b), 0);
    return (char *)b.data;
}

/* ---- a reader of the WAL, as remote write reads it ---------------------- */

typedef struct rdr {
    uint64_t *refs; /* refs whose labels are known */
    labels_set **ls;
    size_t n, cap;
    uint64_t samples, missing, series_recs;
} rdr;

static labels_set *rdr_find(const rdr *r, uint64_t ref) {
    for (size_t i = 0; i < r->n; i++)
        if (r->refs[i] == ref) return r->ls[i];
    return NULL;
}

static void rdr_free(rdr *r) {
    for (size_t i = 0; i < r->n; i++) labels_unref(r->ls[i]);
    free(r->refs);
    free(r->ls);
    memset(r, 0, sizeof *r);
}

/* Reads a file's records: series records teach refs (series_only: the
 * rest is skipped), samples must name known refs. A torn end is fine
 * (BASE_E_TRUNCATED), damage is not. */
static void rdr_file(rdr *r, const char *path, int series_only) {
    size_t len;
    uint8_t *m = slurp(path, &len), *zbuf = NULL;
    size_t zcap = 0, off = 0;
    labels_builder b;
    labels_builder_init(&b);
    while (off < len) {
        const uint8_t *rec;
        size_t rlen, used;
        int e = tsdb_wal_frame_read(m + off, len - off, &zbuf, &zcap, &rec, &rlen, &used);
        if (e == BASE_E_TRUNCATED) break;
        assert_int_equal(e, 0);
        off += used;
        tsdb_rec_dec d;
        assert_int_equal(tsdb_rec_dec_init(&d, rec, rlen), 0);
        if (d.type == TSDB_REC_SERIES) {
            uint64_t ref;
            r->series_recs++;
            while (tsdb_rec_dec_series(&d, &ref, &b) == 1) {
                labels_set *ls;
                assert_int_equal(labels_builder_finish(&b, 0, &ls, NULL, 0), 0);
                labels_set *old = rdr_find(r, ref);
                if (old) {
                    assert_true(labels_equal(old, ls)); /* a ref never changes labels */
                    labels_unref(ls);
                    continue;
                }
                if (r->n == r->cap) {
                    r->cap = r->cap ? 2 * r->cap : 64;
                    r->refs = realloc(r->refs, r->cap * sizeof *r->refs);
                    r->ls = realloc(r->ls, r->cap * sizeof *r->ls);
                    assert_non_null(r->refs);
                    assert_non_null(r->ls);
                }
                r->refs[r->n] = ref;
                r->ls[r->n++] = ls;
            }
        } else if (!series_only && (d.type == TSDB_REC_SAMPLES || d.type == TSDB_REC_OOO_SAMPLES)) {
            tsdb_rec_sample s;
            while (tsdb_rec_dec_sample(&d, &s) == 1) {
                r->samples++;
                if (!rdr_find(r, s.ref)) r->missing++;
            }
        }
    }
    labels_builder_free(&b);
    free(zbuf);
    free(m);
}

/* A reader restarting at segment `from`: the checkpoint's series, then
 * every segment from `from` on, which must all be there. */
static void rdr_restart(rdr *r, const char *dir, uint64_t from) {
    uint64_t *segs, ckpt;
    size_t n;
    char p[512];
    assert_int_equal(tsdb_wal_list(dir, &segs, &n, &ckpt), 0);
    if (ckpt) {
        snprintf(p, sizeof p, "%s/checkpoint.%08" PRIu64 "/00000000", dir, ckpt);
        rdr_file(r, p, 1);
    }
    uint64_t want = from;
    for (size_t i = 0; i < n; i++) {
        if (segs[i] < from) continue;
        assert_int_equal(segs[i], want); /* none missing */
        want++;
        snprintf(p, sizeof p, "%s/%08" PRIu64, dir, segs[i]);
        rdr_file(r, p, 0);
    }
    assert_true(want > from);
    free(segs);
}

/* ---- frame_read --------------------------------------------------------- */

static void put32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static void test_frame_read(void **st) {
    (void)st;
    uint8_t plain[100], comp[4000];
    for (size_t i = 0; i < sizeof plain; i++) plain[i] = (uint8_t)(i * 7 + 1);
    for (size_t i = 0; i < sizeof comp; i++) comp[i] = (uint8_t)("abcabcabd"[i % 9]);
    base_buf b = BASE_BUF_INIT;
    size_t s0 = tsdb_wal_frame_begin(&b);
    base_buf_append(&b, plain, sizeof plain);
    assert_int_equal(tsdb_wal_frame_end_z(&b, s0, 0), 0);
    size_t s1 = tsdb_wal_frame_begin(&b);
    base_buf_append(&b, comp, sizeof comp);
    assert_int_equal(tsdb_wal_frame_end_z(&b, s1, 1), 0);
    const uint8_t *f = (const uint8_t *)b.data;
    size_t len = b.len;
    assert_true(len - s1 < sizeof comp); /* it did compress */
    assert_true(f[s1 + 3] & 0x80);

    uint8_t *zbuf = NULL;
    size_t zcap = 0, rlen = 0, used = 0;
    const uint8_t *rec = NULL;
    /* whole frames, back to back */
    assert_int_equal(tsdb_wal_frame_read(f, len, &zbuf, &zcap, &rec, &rlen, &used), 0);
    assert_int_equal(used, s1);
    assert_int_equal(rlen, sizeof plain);
    assert_ptr_equal(rec, f + TSDB_WAL_FRAME_HDR); /* no copy */
    assert_memory_equal(rec, plain, sizeof plain);
    assert_int_equal(tsdb_wal_frame_read(f + s1, len - s1, &zbuf, &zcap, &rec, &rlen, &used), 0);
    assert_int_equal(used, len - s1);
    assert_int_equal(rlen, sizeof comp);
    assert_ptr_equal(rec, zbuf);
    assert_true(zcap >= sizeof comp);
    assert_memory_equal(rec, comp, sizeof comp);

    /* every proper prefix is a frame cut short; out-parameters untouched */
    for (size_t k = 0; k < s1; k++) {
        used = 12345;
        assert_int_equal(tsdb_wal_frame_read(f, k, &zbuf, &zcap, &rec, &rlen, &used), BASE_E_TRUNCATED);
        assert_int_equal(used, 12345);
    }
    for (size_t k = 0; k < len - s1; k++)
        assert_int_equal(tsdb_wal_frame_read(f + s1, k, &zbuf, &zcap, &rec, &rlen, &used), BASE_E_TRUNCATED);

    /* damage */
    uint8_t *d = malloc(len);
    assert_non_null(d);
    memcpy(d, f, len);
    d[TSDB_WAL_FRAME_HDR + 5] ^= 1; /* payload byte: CRC */
    assert_int_equal(tsdb_wal_frame_read(d, len, &zbuf, &zcap, &rec, &rlen, &used), BASE_E_PARSE);
    memcpy(d, f, len);
    d[4] ^= 0x10; /* the CRC itself */
    assert_int_equal(tsdb_wal_frame_read(d, len, &zbuf, &zcap, &rec, &rlen, &used), BASE_E_PARSE);
    memcpy(d, f, len);
    put32(d, 0); /* length 0 */
    assert_int_equal(tsdb_wal_frame_read(d, len, &zbuf, &zcap, &rec, &rlen, &used), BASE_E_PARSE);
    put32(d, TSDB_WAL_RECORD_MAX + 1); /* too long, whatever follows */
    assert_int_equal(tsdb_wal_frame_read(d, len, &zbuf, &zcap, &rec, &rlen, &used), BASE_E_PARSE);
    /* a CRC-valid "compressed" payload that is not snappy: the plain
     * frame with the flag set and its CRC recomputed */
    memcpy(d, f, len);
    uint32_t hdr = (uint32_t)sizeof plain | TSDB_WAL_FRAME_SNAPPY;
    put32(d, hdr);
    uint8_t bad[sizeof plain];
    memset(bad, 0xff, sizeof bad); /* a varint length that never ends */
    memcpy(d + TSDB_WAL_FRAME_HDR, bad, sizeof bad);
    put32(d + 4, tsdb_crc32c(tsdb_crc32c(0, d, 4), d + TSDB_WAL_FRAME_HDR, sizeof plain));
    assert_int_equal(tsdb_wal_frame_read(d, s1, &zbuf, &zcap, &rec, &rlen, &used), BASE_E_PARSE);
    /* ...and the compressed frame with a payload byte changed, CRC fixed */
    memcpy(d, f, len);
    size_t zl = len - s1 - TSDB_WAL_FRAME_HDR;
    d[s1 + TSDB_WAL_FRAME_HDR] = 0x80; /* uncompressed length: unterminated */
    for (size_t i = 1; i < 6 && i < zl; i++) d[s1 + TSDB_WAL_FRAME_HDR + i] = 0xff;
    put32(d + s1 + 4, tsdb_crc32c(tsdb_crc32c(0, d + s1, 4), d + s1 + TSDB_WAL_FRAME_HDR, zl));
    assert_int_equal(tsdb_wal_frame_read(d + s1, len - s1, &zbuf, &zcap, &rec, &rlen, &used), BASE_E_PARSE);
    free(d);
    free(zbuf);
    base_buf_free(&b);
}

/* ---- list --------------------------------------------------------------- */

static void test_list(void **st) {
    (void)st;
    char *dir = kelvin_tmpdir("walhold"), p[512], err[256];
    uint64_t *segs = NULL, ckpt = 99;
    size_t n = 99;
    snprintf(p, sizeof p, "%s/none", dir);
    assert_int_equal(tsdb_wal_list(p, &segs, &n, &ckpt), BASE_E_IO);
    assert_int_equal(n, 99); /* untouched */
    assert_int_equal(tsdb_wal_list(dir, &segs, &n, &ckpt), 0);
    assert_int_equal(n, 0);
    assert_int_equal(ckpt, 0);
    free(segs);

    tsdb_wal_opts o = {.segment_size = 1024};
    tsdb_wal *w;
    assert_int_equal(tsdb_wal_open(dir, &o, NULL, NULL, NULL, &w, err, sizeof err), 0);
    char rec[300];
    memset(rec, 'x', sizeof rec);
    for (int i = 0; i < 20; i++) assert_int_equal(tsdb_wal_log(w, rec, sizeof rec), 0);
    uint64_t cur = tsdb_wal_segment(w);
    assert_true(cur >= 5);
    tsdb_wal_ckpt *c;
    assert_int_equal(tsdb_wal_ckpt_begin(w, &c, err, sizeof err), 0);
    assert_int_equal(tsdb_wal_ckpt_number(c), cur + 1);
    assert_int_equal(tsdb_wal_ckpt_add(c, "ck", 2), 0);
    assert_int_equal(tsdb_wal_ckpt_commit(c, err, sizeof err), 0);
    assert_int_equal(tsdb_wal_log(w, rec, sizeof rec), 0);
    snprintf(p, sizeof p, "%s/checkpoint.%08" PRIu64 ".tmp", dir, cur + 5);
    assert_int_equal(mkdir(p, 0755), 0);
    assert_int_equal(tsdb_wal_list(dir, &segs, &n, &ckpt), 0);
    assert_int_equal(ckpt, cur + 1);
    assert_int_equal(n, 1);
    assert_int_equal(segs[0], cur + 1);
    free(segs);
    struct stat sb;
    assert_int_equal(stat(p, &sb), 0); /* listing changes nothing */
    assert_int_equal(tsdb_wal_close(w), 0);
    kelvin_rm_rf(dir);
    free(dir);
}

/* ---- hold --------------------------------------------------------------- */

static tsdb_wal *wopen(const char *dir, uint64_t hold_from, tsdb_wal_replay_fn fn, void *ctx,
                       tsdb_wal_report *rep) {
    tsdb_wal_opts o = {.segment_size = 1024, .hold_from = hold_from};
    tsdb_wal *w;
    char err[256];
    int e = tsdb_wal_open(dir, &o, fn, ctx, rep, &w, err, sizeof err);
    if (e) fprintf(stderr, "open: %s\n", err);
    assert_int_equal(e, 0);
    return w;
}

static void ckpt(tsdb_wal *w, const char *what) {
    tsdb_wal_ckpt *c;
    char err[256];
    assert_int_equal(tsdb_wal_ckpt_begin(w, &c, err, sizeof err), 0);
    assert_int_equal(tsdb_wal_ckpt_add(c, what, strlen(what)), 0);
    assert_int_equal(tsdb_wal_ckpt_commit(c, err, sizeof err), 0);
}

static void fill_segs(tsdb_wal *w, uint64_t upto) {
    char rec[300];
    memset(rec, 'r', sizeof rec);
    while (tsdb_wal_segment(w) < upto) assert_int_equal(tsdb_wal_log(w, rec, sizeof rec), 0);
}

static void test_hold(void **st) {
    (void)st;
    char *dir = kelvin_tmpdir("walhold");
    tsdb_wal *w = wopen(dir, 0, NULL, NULL, NULL);
    assert_int_equal(tsdb_wal_held(w), 0);
    fill_segs(w, 6); /* segments 1..6 */
    tsdb_wal_hold(w, 3);
    assert_int_equal(tsdb_wal_held(w), 3);
    ckpt(w, "a"); /* checkpoint.7 */
    assert_false(seg_exists(dir, 1));
    assert_false(seg_exists(dir, 2));
    for (uint64_t s = 3; s <= 7; s++) assert_true(seg_exists(dir, s));
    assert_int_equal(tsdb_wal_tail_bytes(w), 0); /* held segments never count */
    fill_segs(w, 9);
    uint64_t tail = tsdb_wal_tail_bytes(w);
    assert_true(tail > 0);
    ckpt(w, "b"); /* checkpoint.10: 3..9 still held */
    for (uint64_t s = 3; s <= 10; s++) assert_true(seg_exists(dir, s));
    uint64_t *segs, ck;
    size_t n;
    assert_int_equal(tsdb_wal_list(dir, &segs, &n, &ck), 0);
    assert_int_equal(ck, 10);
    assert_int_equal(n, 8);
    assert_int_equal(segs[0], 3);
    free(segs);
    tsdb_wal_hold(w, 8); /* moved: 3..7 go at the next checkpoint */
    assert_true(seg_exists(dir, 3));
    ckpt(w, "c"); /* checkpoint.11 */
    for (uint64_t s = 3; s <= 7; s++) assert_false(seg_exists(dir, s));
    for (uint64_t s = 8; s <= 11; s++) assert_true(seg_exists(dir, s));
    tsdb_wal_hold(w, 0); /* released */
    ckpt(w, "d");        /* checkpoint.12 */
    for (uint64_t s = 8; s <= 11; s++) assert_false(seg_exists(dir, s));
    assert_true(seg_exists(dir, 12));
    assert_int_equal(tsdb_wal_close(w), 0);
    kelvin_rm_rf(dir);
    free(dir);
}

typedef struct coll {
    unsigned n, ck;
    char last[8];
} coll;

static int collect(void *ctx, const uint8_t *rec, size_t len, int from_ckpt) {
    coll *c = ctx;
    c->n++;
    if (from_ckpt) {
        c->ck++;
        snprintf(c->last, sizeof c->last, "%.*s", (int)(len < 7 ? len : 7), (const char *)rec);
    }
    return 0;
}

static void test_hold_from(void **st) {
    (void)st;
    char *dir = kelvin_tmpdir("walhold");
    tsdb_wal *w = wopen(dir, 0, NULL, NULL, NULL);
    fill_segs(w, 5);
    tsdb_wal_hold(w, 2);
    ckpt(w, "ck6"); /* checkpoint.6, segments 2..5 held */
    char rec[300];
    memset(rec, 'r', sizeof rec);
    for (int i = 0; i < 4; i++) assert_int_equal(tsdb_wal_log(w, rec, sizeof rec), 0);
    assert_int_equal(tsdb_wal_close(w), 0);
    assert_true(seg_exists(dir, 2));

    /* reopen holding from 3: 2 goes, 3..5 stay but are not replayed */
    coll c = {0};
    tsdb_wal_report rep;
    w = wopen(dir, 3, collect, &c, &rep);
    assert_false(seg_exists(dir, 2));
    for (uint64_t s = 3; s <= 5; s++) assert_true(seg_exists(dir, s));
    assert_int_equal(rep.checkpoint, 6);
    assert_int_equal(rep.corruptions, 0); /* no "segment(s) missing" */
    assert_string_equal(rep.first_error, "");
    assert_int_equal(c.ck, 1);
    assert_string_equal(c.last, "ck6");
    assert_int_equal(c.n, 1 + 4); /* the checkpoint, then segment 6's */
    assert_true(rep.segments >= 1 && rep.segments <= 2);
    assert_int_equal(tsdb_wal_held(w), 3);
    /* tail: only segments >= 6 */
    uint64_t want = 0;
    for (uint64_t s = 6; seg_exists(dir, s); s++) {
        char p[512];
        struct stat sb;
        snprintf(p, sizeof p, "%s/%08" PRIu64, dir, s);
        assert_int_equal(stat(p, &sb), 0);
        want += (uint64_t)sb.st_size;
    }
    assert_int_equal(tsdb_wal_tail_bytes(w), want);
    uint64_t next = tsdb_wal_segment(w);
    assert_true(next >= 7);
    ckpt(w, "ck");
    for (uint64_t s = 3; s <= 5; s++) assert_true(seg_exists(dir, s)); /* still held */
    tsdb_wal_hold(w, next);
    ckpt(w, "ck");
    for (uint64_t s = 3; s < next; s++) assert_false(seg_exists(dir, s));
    assert_true(seg_exists(dir, next));
    assert_int_equal(tsdb_wal_close(w), 0);

    /* a head opened with hold_from equals one opened without */
    kelvin_rm_rf(dir);
    assert_int_equal(mkdir(dir, 0755), 0);
    tsdb_head *h = hopen(dir, 512, 0, NULL);
    tsdb_wal_hold(tsdb_head_wal(h), 1);
    labels_set *ls[8];
    for (int i = 0; i < 8; i++) ls[i] = ser("hf", i);
    char err[256];
    for (int64_t t = 0; t < 200; t++) {
        add(h, ls[t % 8], t, (double)t);
        if (t == 120) assert_int_equal(tsdb_head_checkpoint(h, INT64_MIN, err, sizeof err), 0);
    }
    assert_true(tsdb_wal_segment(tsdb_head_wal(h)) > 5);
    assert_int_equal(tsdb_head_close(h), 0);
    assert_true(seg_exists(dir, 1));
    h = hopen(dir, 512, 1, &rep);
    assert_int_equal(rep.corruptions, 0);
    assert_true(rep.checkpoint > 1);
    assert_true(seg_exists(dir, 1));
    char *held = dump(h);
    tsdb_head_stats hs;
    tsdb_head_stats_get(h, &hs);
    assert_int_equal(hs.series, 8);
    assert_int_equal(hs.samples, 200);
    assert_int_equal(tsdb_head_close(h), 0);
    h = hopen(dir, 512, 0, &rep);
    assert_false(seg_exists(dir, 1)); /* no hold: covered segments go */
    char *plain = dump(h);
    assert_string_equal(held, plain);
    assert_int_equal(tsdb_head_close(h), 0);
    free(held);
    free(plain);
    for (int i = 0; i < 8; i++) labels_unref(ls[i]);
    kelvin_rm_rf(dir);
    free(dir);
}

/* ---- series GC removes while held --------------------------------------- */

/* The series records of the newest checkpoint, as a reader sees them. */
static void ckpt_series(const char *dir, rdr *r) {
    uint64_t *segs, ck;
    size_t n;
    char p[512];
    assert_int_equal(tsdb_wal_list(dir, &segs, &n, &ck), 0);
    free(segs);
    assert_true(ck > 0);
    snprintf(p, sizeof p, "%s/checkpoint.%08" PRIu64 "/00000000", dir, ck);
    rdr_file(r, p, 1);
}

static void test_gc_held(void **st) {
    (void)st;
    char *dir = kelvin_tmpdir("walhold"), err[256];
    labels_set *a = ser("gone", 1), *b = ser("stays", 2), *c = ser("gone", 3);
    tsdb_head *h = hopen(dir, 256, 0, NULL);
    tsdb_wal *w = tsdb_head_wal(h);
    add(h, a, 10, 1);
    add(h, c, 10, 1);
    uint64_t ra, rc;
    assert_int_equal(tsdb_head_ref(h, a, &ra), 0);
    assert_int_equal(tsdb_head_ref(h, c, &rc), 0);
    for (int64_t t = 100; t < 140; t++) add(h, b, t, 2);
    /* no hold: GC remembers nothing, the checkpoint lacks c */
    tsdb_head_stats hs;
    uint64_t removed;
    add(h, a, 20, 1);
    assert_int_equal(tsdb_head_gc(h, 15, &removed), 0);
    assert_int_equal(removed, 1); /* c */
    tsdb_head_stats_get(h, &hs);
    assert_int_equal(hs.series_held, 0);
    assert_int_equal(tsdb_head_checkpoint(h, INT64_MIN, err, sizeof err), 0);
    rdr r = {0};
    ckpt_series(dir, &r);
    assert_null(rdr_find(&r, rc));
    assert_non_null(rdr_find(&r, ra));
    rdr_free(&r);

    /* held at the current segment: a is remembered when GC removes it */
    uint64_t hseg = tsdb_wal_segment(w);
    tsdb_wal_hold(w, hseg);
    for (int64_t t = 140; t < 180; t++) add(h, b, t, 2); /* more segments */
    assert_true(tsdb_wal_segment(w) > hseg);
    assert_int_equal(tsdb_head_gc(h, 50, &removed), 0);
    assert_int_equal(removed, 1);
    tsdb_head_stats_get(h, &hs);
    assert_int_equal(hs.series_held, 1);
    assert_int_equal(tsdb_head_checkpoint(h, INT64_MIN, err, sizeof err), 0);
    tsdb_head_stats_get(h, &hs);
    assert_int_equal(hs.series_held, 1); /* its segment is still held */
    ckpt_series(dir, &r);
    assert_non_null(rdr_find(&r, ra));
    assert_true(labels_equal(rdr_find(&r, ra), a));
    rdr_free(&r);
    assert_true(seg_exists(dir, hseg));
    /* a reader restarting at the held segment resolves everything */
    rdr_restart(&r, dir, hseg);
    assert_true(r.samples > 0);
    assert_int_equal(r.missing, 0);
    rdr_free(&r);

    /* restart while held: replay gives a back as an empty series */
    assert_int_equal(tsdb_head_close(h), 0);
    h = hopen(dir, 256, hseg, NULL);
    w = tsdb_head_wal(h);
    uint64_t ref;
    assert_int_equal(tsdb_head_ref(h, a, &ref), 0);
    assert_int_equal(ref, ra);
    labels_matcher *m;
    assert_int_equal(
        labels_matcher_new(LABELS_MATCH_EQ, base_str_c("__name__"), base_str_c("gone"), &m, err, sizeof err),
        0);
    tsdb_series_set *ss;
    assert_int_equal(tsdb_head_select(h, &m, 1, INT64_MIN, INT64_MAX, &ss), 0);
    assert_int_equal(tsdb_series_set_next(ss), 0); /* no samples */
    tsdb_series_set_free(ss);
    labels_matcher_free(m);
    /* GC removes it again, remembered again (still held) */
    assert_int_equal(tsdb_head_gc(h, 50, &removed), 0);
    assert_int_equal(removed, 1);
    tsdb_head_stats_get(h, &hs);
    assert_int_equal(hs.series_held, 1);

    /* a comes back under a new ref: checkpoint holds both; after a
     * restart the live series keeps its ref, the old one is an alias and
     * stays remembered */
    add(h, a, 500, 5);
    uint64_t ra2;
    assert_int_equal(tsdb_head_ref(h, a, &ra2), 0);
    assert_true(ra2 != ra);
    assert_int_equal(tsdb_head_checkpoint(h, INT64_MIN, err, sizeof err), 0);
    ckpt_series(dir, &r);
    assert_non_null(rdr_find(&r, ra));
    assert_non_null(rdr_find(&r, ra2));
    rdr_free(&r);
    assert_int_equal(tsdb_head_close(h), 0);
    h = hopen(dir, 256, hseg, NULL);
    w = tsdb_head_wal(h);
    assert_int_equal(tsdb_head_ref(h, a, &ref), 0);
    assert_int_equal(ref, ra2);
    tsdb_head_stats_get(h, &hs);
    assert_int_equal(hs.series_held, 1);
    assert_int_equal(hs.series, 2); /* a, b */
    assert_int_equal(tsdb_head_checkpoint(h, INT64_MIN, err, sizeof err), 0);
    ckpt_series(dir, &r);
    assert_non_null(rdr_find(&r, ra));
    rdr_free(&r);
    rdr_restart(&r, dir, hseg);
    assert_int_equal(r.missing, 0);
    rdr_free(&r);

    /* the hold passes: the next checkpoint forgets a's old ref */
    tsdb_wal_hold(w, tsdb_wal_segment(w));
    assert_int_equal(tsdb_head_checkpoint(h, INT64_MIN, err, sizeof err), 0);
    tsdb_head_stats_get(h, &hs);
    assert_int_equal(hs.series_held, 0);
    assert_false(seg_exists(dir, hseg));
    ckpt_series(dir, &r);
    assert_null(rdr_find(&r, ra));
    assert_non_null(rdr_find(&r, ra2));
    rdr_free(&r);
    assert_int_equal(tsdb_head_close(h), 0);
    labels_unref(a);
    labels_unref(b);
    labels_unref(c);
    kelvin_rm_rf(dir);
    free(dir);
}

/* ---- a reader far behind, through churn --------------------------------- */

static void test_reader(void **st) {
    (void)st;
    char *dir = kelvin_tmpdir("walhold"), err[256];
    tsdb_head *h = hopen(dir, 4096, 0, NULL);
    tsdb_wal *w = tsdb_head_wal(h);
    uint64_t hold = tsdb_wal_segment(w);
    tsdb_wal_hold(w, hold);
    /* generations of 20 series, each living 3 rounds of 10 samples;
     * GC and a checkpoint after every round */
    labels_set *ls[200];
    int nls = 0;
    int64_t t = 0;
    for (int round = 0; round < 10; round++) {
        for (int i = 0; i < 20; i++) ls[nls++] = ser("churn", round * 20 + i);
        for (int k = 0; k < 10; k++, t += 10) {
            tsdb_head_app *a;
            assert_int_equal(tsdb_head_app_new(h, &a), 0);
            for (int i = nls - 60 < 0 ? 0 : nls - 60; i < nls; i++)
                assert_int_equal(tsdb_head_app_add(a, ls[i], t, (double)i), 0);
            assert_int_equal(tsdb_head_app_commit(a, NULL), 0);
            tsdb_head_app_free(a);
        }
        uint64_t removed;
        assert_int_equal(tsdb_head_gc(h, t - 100, &removed), 0);
        if (round >= 3) assert_int_equal(removed, 20);
        assert_int_equal(tsdb_head_checkpoint(h, INT64_MIN, err, sizeof err), 0);
    }
    assert_true(tsdb_wal_segment(w) > hold + 10);
    rdr r = {0};
    rdr_restart(&r, dir, hold);
    assert_int_equal(r.samples, (20 + 40 + 8 * 60) * 10); /* every sample ever logged */
    assert_int_equal(r.missing, 0);
    assert_int_equal(r.n, 200);
    rdr_free(&r);
    tsdb_head_stats hs;
    tsdb_head_stats_get(h, &hs);
    assert_int_equal(hs.series, 60);
    assert_int_equal(hs.series_held, 140);
    /* the same after a restart holding from there */
    assert_int_equal(tsdb_head_close(h), 0);
    h = hopen(dir, 4096, hold, NULL);
    assert_int_equal(tsdb_head_checkpoint(h, INT64_MIN, err, sizeof err), 0);
    rdr_restart(&r, dir, hold);
    assert_int_equal(r.missing, 0);
    assert_int_equal(r.n, 200);
    rdr_free(&r);
    assert_int_equal(tsdb_head_close(h), 0);
    for (int i = 0; i < nls; i++) labels_unref(ls[i]);
    kelvin_rm_rf(dir);
    free(dir);
}

/* ---- the database ------------------------------------------------------- */

static void test_db(void **st) {
    (void)st;
    tsdb_db_flagvars v;
    tsdb_db_flagvars_init(&v);
    base_flag f[TSDB_DB_NFLAGS];
    assert_int_equal(tsdb_db_flags(&v, f, TSDB_DB_NFLAGS), TSDB_DB_NFLAGS);
    char *argv[] = {"x", "--storage.tsdb.wal-segment-size=64KiB", "--storage.tsdb.wal-checkpoint-size=1MiB"};
    char err[512];
    assert_int_equal(base_flags_parse(f, TSDB_DB_NFLAGS, 3, argv, err, sizeof err), 0);
    tsdb_db_opts o;
    assert_int_equal(tsdb_db_flags_apply(&v, &o, err, sizeof err), 0);
    assert_int_equal(o.wal.segment_size, 64 << 10);
    assert_int_equal(o.checkpoint_bytes, 1 << 20);
    v.wal_segment_size = 0; /* default */
    assert_int_equal(tsdb_db_flags_apply(&v, &o, err, sizeof err), 0);
    assert_int_equal(o.wal.segment_size, 0);
    v.wal_segment_size = (64 << 10) - 1;
    assert_int_equal(tsdb_db_flags_apply(&v, &o, err, sizeof err), BASE_E_INVAL);
    assert_non_null(strstr(err, "wal-segment-size"));
    v.wal_segment_size = (256LL << 20) + 1;
    assert_int_equal(tsdb_db_flags_apply(&v, &o, err, sizeof err), BASE_E_INVAL);
    v.wal_segment_size = 256LL << 20;
    assert_int_equal(tsdb_db_flags_apply(&v, &o, err, sizeof err), 0);
    v.wal_checkpoint_size = 1000;
    assert_int_equal(tsdb_db_flags_apply(&v, &o, err, sizeof err), BASE_E_INVAL);
    assert_non_null(strstr(err, "wal-checkpoint-size"));
    tsdb_db_flagvars_init(&v);
    assert_int_equal(tsdb_db_flags_apply(&v, &o, err, sizeof err), 0);
    assert_int_equal(o.checkpoint_bytes, TSDB_HEAD_CHECKPOINT_BYTES);

    /* small segments and checkpoints by size, a hold through the db */
    char *dir = kelvin_tmpdir("walhold-db");
    tsdb_db_opts_default(&o);
    o.path = dir;
    o.maintain_interval_ms = -1;
    o.min_block_ms = 24LL * 3600 * 1000; /* no head cutting */
    o.wal.segment_size = 64 << 10;
    o.checkpoint_bytes = 64 << 10;
    tsdb_db *db;
    assert_int_equal(tsdb_db_open(&o, &db, NULL, err, sizeof err), 0);
    char want[512];
    snprintf(want, sizeof want, "%s/wal", dir);
    assert_string_equal(tsdb_db_wal_dir(db), want);
    tsdb_wal *w = tsdb_db_wal(db);
    assert_ptr_equal(w, tsdb_head_wal(tsdb_db_head(db)));
    uint64_t hold = tsdb_wal_segment(w);
    tsdb_wal_hold(w, hold);
    labels_set *ls[50];
    for (int i = 0; i < 50; i++) ls[i] = ser("db", i);
    for (int64_t t = 0; t < 1000; t++) {
        tsdb_head_app *a;
        assert_int_equal(tsdb_head_app_new(tsdb_db_head(db), &a), 0);
        for (int i = 0; i < 50; i++)
            assert_int_equal(tsdb_head_app_add(a, ls[i], t * 1000 + i, (double)(t * i % 97)), 0);
        assert_int_equal(tsdb_head_app_commit(a, NULL), 0);
        tsdb_head_app_free(a);
        if (t % 50 == 49) assert_int_equal(tsdb_db_maintain(db, err, sizeof err), 0);
    }
    tsdb_head_stats hs;
    tsdb_head_stats_get(tsdb_db_head(db), &hs);
    assert_true(hs.checkpoints >= 2);
    uint64_t *segs, ck;
    size_t n;
    assert_int_equal(tsdb_wal_list(tsdb_db_wal_dir(db), &segs, &n, &ck), 0);
    assert_true(ck > hold + 1);
    assert_true(n >= 3);
    assert_int_equal(segs[0], hold); /* held through the checkpoints */
    free(segs);
    assert_int_equal(tsdb_db_close(db), 0);
    o.wal.hold_from = hold;
    assert_int_equal(tsdb_db_open(&o, &db, NULL, err, sizeof err), 0);
    assert_int_equal(tsdb_wal_held(tsdb_db_wal(db)), hold);
    assert_true(seg_exists(tsdb_db_wal_dir(db), hold));
    rdr r = {0};
    rdr_restart(&r, tsdb_db_wal_dir(db), hold);
    assert_int_equal(r.samples, 1000 * 50);
    assert_int_equal(r.missing, 0);
    rdr_free(&r);
    tsdb_head_stats_get(tsdb_db_head(db), &hs);
    assert_int_equal(hs.samples, 1000 * 50);
    assert_int_equal(tsdb_db_close(db), 0);
    o.wal.hold_from = 0;
    assert_int_equal(tsdb_db_open(&o, &db, NULL, err, sizeof err), 0);
    assert_false(seg_exists(tsdb_db_wal_dir(db), hold)); /* no hold: gone at open */
    assert_int_equal(tsdb_db_close(db), 0);
    for (int i = 0; i < 50; i++) labels_unref(ls[i]);
    kelvin_rm_rf(dir);
    free(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_frame_read), cmocka_unit_test(test_list),    cmocka_unit_test(test_hold),
        cmocka_unit_test(test_hold_from),  cmocka_unit_test(test_gc_held), cmocka_unit_test(test_reader),
        cmocka_unit_test(test_db),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
