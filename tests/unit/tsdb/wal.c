/* tests/unit/tsdb/wal.c -- the write-ahead log (src/tsdb/wal.c): CRC-32C
 * check value, round trip across segment rolls, group commit from 8
 * threads (every record once, each thread's in order), a torn tail cut at
 * every byte of the last record (earlier records all replayed, one report,
 * repaired for the next open), flipped bytes caught by the CRC in the last
 * and in an older segment, and a checkpoint followed by more records. */
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
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

#include "base/err.h"
#include "tsdb/wal.h"

/* A record: "rec <i> " then i % 300 bytes of pattern. */
static size_t mkrec(char *buf, unsigned i) {
    int n = sprintf(buf, "rec %u ", i);
    size_t extra = i % 300;
    for (size_t k = 0; k < extra; k++) buf[n + k] = (char)('a' + (i + k) % 26);
    return (size_t)n + extra;
}

typedef struct coll {
    unsigned n, ck;
    char **recs;
    size_t *lens;
} coll;

static int collect(void *ctx, const uint8_t *rec, size_t len, int ckpt) {
    coll *c = ctx;
    c->recs = realloc(c->recs, (c->n + 1) * sizeof *c->recs);
    c->lens = realloc(c->lens, (c->n + 1) * sizeof *c->lens);
    c->recs[c->n] = malloc(len);
    memcpy(c->recs[c->n], rec, len);
    c->lens[c->n++] = len;
    if (ckpt) c->ck++;
    return 0;
}

static void coll_free(coll *c) {
    for (unsigned i = 0; i < c->n; i++) free(c->recs[i]);
    free(c->recs);
    free(c->lens);
    memset(c, 0, sizeof *c);
}

static tsdb_wal *wopen(const char *dir, uint64_t segsize, coll *c, tsdb_wal_report *rep) {
    tsdb_wal_opts o = {.segment_size = segsize};
    tsdb_wal *w = NULL;
    char err[256];
    int e = tsdb_wal_open(dir, &o, c ? collect : NULL, c, rep, &w, err, sizeof err);
    if (e) fprintf(stderr, "open: %s\n", err);
    assert_int_equal(e, 0);
    return w;
}

static void check_seq(const coll *c, unsigned from, unsigned n) {
    char buf[512];
    assert_true(c->n >= from + n);
    for (unsigned i = 0; i < n; i++) {
        size_t l = mkrec(buf, i);
        assert_int_equal(c->lens[from + i], l);
        assert_memory_equal(c->recs[from + i], buf, l);
    }
}

static void test_crc(void **st) {
    (void)st;
    assert_int_equal(tsdb_crc32c(0, "123456789", 9), 0xe3069283u);
    assert_int_equal(tsdb_crc32c(tsdb_crc32c(0, "1234", 4), "56789", 5), 0xe3069283u);
}

static void test_roundtrip_rolls(void **st) {
    (void)st;
    char *dir = kelvin_tmpdir("wal"), buf[512];
    tsdb_wal *w = wopen(dir, 4096, NULL, NULL);
    for (unsigned i = 0; i < 500; i++) assert_int_equal(tsdb_wal_log(w, buf, mkrec(buf, i)), 0);
    tsdb_wal_stats ws;
    tsdb_wal_stats_get(w, &ws);
    assert_true(ws.segment > 5);
    assert_int_equal(tsdb_wal_close(w), 0);
    coll c = {0};
    tsdb_wal_report rep;
    w = wopen(dir, 4096, &c, &rep);
    assert_int_equal(c.n, 500);
    check_seq(&c, 0, 500);
    assert_int_equal(rep.corruptions, 0);
    assert_string_equal(rep.first_error, "");
    /* appending after reopen continues */
    for (unsigned i = 0; i < 10; i++) assert_int_equal(tsdb_wal_log(w, buf, mkrec(buf, i)), 0);
    assert_int_equal(tsdb_wal_close(w), 0);
    coll_free(&c);
    w = wopen(dir, 4096, &c, &rep);
    assert_int_equal(c.n, 510);
    check_seq(&c, 500, 10);
    tsdb_wal_close(w);
    coll_free(&c);
    kelvin_rm_rf(dir);
    free(dir);
}

/* Compression: records written with it come back byte for byte (the
 * repetitive long ones compressed, short ones not), a WAL read with the
 * other setting reads both kinds, a compressed frame whose CRC is right
 * but whose snappy data is not is damage like a bad CRC, and a read-only
 * open changes nothing on disk. */
static void test_compression(void **st) {
    (void)st;
    char *dir = kelvin_tmpdir("wal"), buf[512], path[600];
    tsdb_wal_opts o = {.compress = 1};
    tsdb_wal *w;
    char err[256];
    assert_int_equal(tsdb_wal_open(dir, &o, NULL, NULL, NULL, &w, err, sizeof err), 0);
    assert_int_equal(tsdb_wal_compressing(w), 1);
    for (unsigned i = 0; i < 300; i++) assert_int_equal(tsdb_wal_log(w, buf, mkrec(buf, i)), 0);
    assert_int_equal(tsdb_wal_close(w), 0);
    /* the file is smaller than the plain records would be */
    snprintf(path, sizeof path, "%s/00000001", dir);
    struct stat sb;
    assert_int_equal(stat(path, &sb), 0);
    size_t plain = 0;
    for (unsigned i = 0; i < 300; i++) plain += TSDB_WAL_FRAME_HDR + mkrec(buf, i);
    assert_true((size_t)sb.st_size < plain * 3 / 4);
    coll c = {0};
    tsdb_wal_report rep;
    w = wopen(dir, 0, &c, &rep); /* compression off now: still reads */
    assert_int_equal(c.n, 300);
    check_seq(&c, 0, 300);
    assert_int_equal(rep.corruptions, 0);
    assert_int_equal(tsdb_wal_close(w), 0);
    coll_free(&c);

    /* a compressed frame with a valid CRC over garbage */
    base_buf b = {0};
    size_t s0 = tsdb_wal_frame_begin(&b);
    for (int i = 0; i < 40; i++) base_buf_append(&b, "\xff\xff\xff\xff", 4);
    assert_int_equal(tsdb_wal_frame_end(&b, s0), 0);
    uint8_t *h = (uint8_t *)b.data + s0;
    uint32_t len = (uint32_t)h[0] | (uint32_t)h[1] << 8 | (uint32_t)h[2] << 16 | (uint32_t)h[3] << 24;
    len |= TSDB_WAL_FRAME_SNAPPY;
    for (int k = 0; k < 4; k++) h[k] = (uint8_t)(len >> (8 * k));
    uint32_t crc = tsdb_crc32c(tsdb_crc32c(0, h, 4), h + TSDB_WAL_FRAME_HDR, 160);
    for (int k = 0; k < 4; k++) h[4 + k] = (uint8_t)(crc >> (8 * k));
    snprintf(path, sizeof path, "%s/00000002", dir);
    FILE *f = fopen(path, "ab");
    assert_non_null(f);
    assert_int_equal(fwrite(b.data, 1, b.len, f), b.len);
    fclose(f);
    base_buf_free(&b);
    /* read-only: reported, nothing truncated */
    o = (tsdb_wal_opts){.read_only = 1};
    assert_int_equal(tsdb_wal_open(dir, &o, collect, &c, &rep, &w, err, sizeof err), 0);
    assert_int_equal(c.n, 300);
    assert_int_equal(rep.corruptions, 1);
    assert_non_null(strstr(rep.first_error, "bad compressed record"));
    assert_int_equal(tsdb_wal_log(w, "x", 1), BASE_E_INVAL);
    assert_int_equal(tsdb_wal_close(w), 0);
    coll_free(&c);
    assert_int_equal(stat(path, &sb), 0);
    assert_int_equal(sb.st_size, 168);
    /* read-write: the torn tail is cut off */
    w = wopen(dir, 0, &c, &rep);
    assert_int_equal(rep.truncated_bytes, 168);
    assert_int_equal(tsdb_wal_close(w), 0);
    coll_free(&c);
    kelvin_rm_rf(dir);
    free(dir);
}

enum { NTHR = 8, PER = 400 };
typedef struct thr {
    tsdb_wal *w;
    unsigned id;
} thr;

static void *writer(void *p) {
    thr *t = p;
    char buf[64];
    for (unsigned i = 0; i < PER; i++) {
        int n = sprintf(buf, "%u %u", t->id, i);
        if (tsdb_wal_log(t->w, buf, (size_t)n)) abort();
    }
    return NULL;
}

static void test_group_commit(void **st) {
    (void)st;
    char *dir = kelvin_tmpdir("wal");
    tsdb_wal *w = wopen(dir, 1 << 16, NULL, NULL);
    pthread_t th[NTHR];
    thr a[NTHR];
    for (unsigned i = 0; i < NTHR; i++) {
        a[i] = (thr){w, i};
        pthread_create(&th[i], NULL, writer, &a[i]);
    }
    for (unsigned i = 0; i < NTHR; i++) pthread_join(th[i], NULL);
    tsdb_wal_stats ws;
    tsdb_wal_stats_get(w, &ws);
    assert_int_equal(ws.records, NTHR * PER);
    assert_true(ws.batches <= ws.records);
    printf("group commit: %llu records in %llu writes\n", (unsigned long long)ws.records,
           (unsigned long long)ws.batches);
    assert_int_equal(tsdb_wal_close(w), 0);
    coll c = {0};
    w = wopen(dir, 1 << 16, &c, NULL);
    assert_int_equal(c.n, NTHR * PER);
    unsigned next[NTHR] = {0};
    for (unsigned i = 0; i < c.n; i++) {
        char s[64];
        memcpy(s, c.recs[i], c.lens[i]);
        s[c.lens[i]] = 0;
        unsigned id, seq;
        assert_int_equal(sscanf(s, "%u %u", &id, &seq), 2);
        assert_true(id < NTHR);
        assert_int_equal(seq, next[id]);
        next[id]++;
    }
    tsdb_wal_close(w);
    coll_free(&c);
    kelvin_rm_rf(dir);
    free(dir);
}

static void seg_path(const char *dir, unsigned n, char *out) {
    sprintf(out, "%s/%08u", dir, n);
}

static off_t fsize(const char *p) {
    struct stat sb;
    assert_int_equal(stat(p, &sb), 0);
    return sb.st_size;
}

static void test_torn_tail(void **st) {
    (void)st;
    char *dir = kelvin_tmpdir("wal"), buf[512], path[512];
    tsdb_wal *w = wopen(dir, 1 << 20, NULL, NULL);
    for (unsigned i = 0; i < 20; i++) assert_int_equal(tsdb_wal_log(w, buf, mkrec(buf, i)), 0);
    tsdb_wal_close(w);
    seg_path(dir, 1, path);
    off_t full = fsize(path);
    off_t last = (off_t)(TSDB_WAL_FRAME_HDR + mkrec(buf, 19));
    int fd = open(path, O_RDONLY);
    char *orig = malloc((size_t)full);
    assert_int_equal(read(fd, orig, (size_t)full), full);
    close(fd);
    for (off_t cut = full - last; cut < full; cut++) {
        char *d2 = kelvin_tmpdir("wal"), p2[512];
        seg_path(d2, 1, p2);
        fd = open(p2, O_WRONLY | O_CREAT, 0644);
        assert_int_equal(write(fd, orig, (size_t)cut), cut);
        close(fd);
        coll c = {0};
        tsdb_wal_report rep;
        w = wopen(d2, 1 << 20, &c, &rep);
        assert_int_equal(c.n, 19);
        check_seq(&c, 0, 19);
        assert_int_equal(rep.corruptions, cut == full - last ? 0 : 1);
        assert_int_equal(rep.truncated_bytes, cut - (full - last));
        if (cut > full - last) assert_non_null(strstr(rep.first_error, "truncated"));
        assert_int_equal(fsize(p2), full - last);
        /* appending after the repair works and replays cleanly */
        assert_int_equal(tsdb_wal_log(w, buf, mkrec(buf, 19)), 0);
        tsdb_wal_close(w);
        coll_free(&c);
        w = wopen(d2, 1 << 20, &c, &rep);
        assert_int_equal(c.n, 20);
        check_seq(&c, 0, 20);
        assert_int_equal(rep.corruptions, 0);
        tsdb_wal_close(w);
        coll_free(&c);
        kelvin_rm_rf(d2);
        free(d2);
    }
    free(orig);
    kelvin_rm_rf(dir);
    free(dir);
}

static void flip(const char *path, off_t off) {
    int fd = open(path, O_RDWR);
    unsigned char b;
    assert_int_equal(pread(fd, &b, 1, off), 1);
    b ^= 0x10;
    assert_int_equal(pwrite(fd, &b, 1, off), 1);
    close(fd);
}

static void test_flipped_bytes(void **st) {
    (void)st;
    char *dir = kelvin_tmpdir("wal"), buf[512], path[512];
    tsdb_wal *w = wopen(dir, 4096, NULL, NULL);
    for (unsigned i = 0; i < 200; i++) assert_int_equal(tsdb_wal_log(w, buf, mkrec(buf, i)), 0);
    tsdb_wal_stats ws;
    tsdb_wal_stats_get(w, &ws);
    unsigned lastseg = (unsigned)ws.segment;
    tsdb_wal_close(w);
    assert_true(lastseg >= 4);
    /* an older segment: the damage is reported, later segments replayed */
    seg_path(dir, 2, path);
    off_t sz2 = fsize(path);
    flip(path, sz2 / 2);
    coll c = {0};
    tsdb_wal_report rep;
    w = wopen(dir, 4096, &c, &rep);
    tsdb_wal_close(w);
    assert_int_equal(rep.corruptions, 1);
    assert_true(rep.skipped_bytes > 0 && rep.skipped_bytes < (uint64_t)sz2);
    assert_non_null(strstr(rep.first_error, "skipped"));
    assert_true(c.n < 200 && c.n > 150);
    /* the last record of every segment after 2 is there: the tail */
    check_seq(&c, 0, 5);
    {
        char want[512];
        size_t l = mkrec(want, 199);
        assert_int_equal(c.lens[c.n - 1], l);
        assert_memory_equal(c.recs[c.n - 1], want, l);
    }
    coll_free(&c);
    /* the last segment holding data: truncated at the damage */
    seg_path(dir, lastseg, path);
    off_t szl = fsize(path);
    flip(path, szl - 3);
    w = wopen(dir, 4096, &c, &rep);
    tsdb_wal_close(w);
    assert_int_equal(rep.corruptions, 2); /* segment 2 is still damaged */
    assert_true(rep.truncated_bytes > 0);
    {
        char want[512];
        size_t l = mkrec(want, 198);
        assert_int_equal(c.lens[c.n - 1], l);
        assert_memory_equal(c.recs[c.n - 1], want, l);
    }
    coll_free(&c);
    kelvin_rm_rf(dir);
    free(dir);
}

static void test_checkpoint(void **st) {
    (void)st;
    char *dir = kelvin_tmpdir("wal"), buf[512], err[256];
    tsdb_wal *w = wopen(dir, 2048, NULL, NULL);
    for (unsigned i = 0; i < 100; i++) assert_int_equal(tsdb_wal_log(w, buf, mkrec(buf, i)), 0);
    tsdb_wal_ckpt *c;
    assert_int_equal(tsdb_wal_ckpt_begin(w, &c, err, sizeof err), 0);
    for (unsigned i = 0; i < 3; i++) assert_int_equal(tsdb_wal_ckpt_add(c, buf, mkrec(buf, i)), 0);
    assert_int_equal(tsdb_wal_ckpt_commit(c, err, sizeof err), 0);
    for (unsigned i = 3; i < 10; i++) assert_int_equal(tsdb_wal_log(w, buf, mkrec(buf, i)), 0);
    tsdb_wal_close(w);
    /* only segments >= the checkpoint remain */
    DIR *d = opendir(dir);
    struct dirent *de;
    unsigned nseg = 0, nck = 0;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '0') nseg++;
        if (!strncmp(de->d_name, "checkpoint.", 11)) nck++;
    }
    closedir(d);
    assert_int_equal(nck, 1);
    assert_true(nseg <= 2);
    coll cl = {0};
    tsdb_wal_report rep;
    w = wopen(dir, 2048, &cl, &rep);
    assert_int_equal(cl.n, 10);
    assert_int_equal(cl.ck, 3);
    check_seq(&cl, 0, 10);
    assert_true(rep.checkpoint > 1);
    assert_int_equal(rep.corruptions, 0);
    /* a second checkpoint replaces the first */
    assert_int_equal(tsdb_wal_ckpt_begin(w, &c, err, sizeof err), 0);
    assert_int_equal(tsdb_wal_ckpt_add(c, buf, mkrec(buf, 0)), 0);
    assert_int_equal(tsdb_wal_ckpt_commit(c, err, sizeof err), 0);
    tsdb_wal_close(w);
    coll_free(&cl);
    w = wopen(dir, 2048, &cl, &rep);
    assert_int_equal(cl.n, 1);
    tsdb_wal_close(w);
    coll_free(&cl);
    kelvin_rm_rf(dir);
    free(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_crc),         cmocka_unit_test(test_roundtrip_rolls),
        cmocka_unit_test(test_compression), cmocka_unit_test(test_group_commit),
        cmocka_unit_test(test_torn_tail),   cmocka_unit_test(test_flipped_bytes),
        cmocka_unit_test(test_checkpoint),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
