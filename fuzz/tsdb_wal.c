/* fuzz/tsdb_wal.c -- arbitrary bytes as a WAL segment (src/tsdb/wal.c):
 * replay must never fail to open or read outside the file, must hand out
 * only CRC-valid records, must truncate a damaged tail so that a second
 * open replays the same records with no corruption reported, and every
 * replayed record goes through the record decoders (record.c). Then the
 * segment is replayed into a head (head.c, read-only, one thread): series,
 * samples, out-of-order samples, chunks and tombstones records with any
 * refs, times and ranges must be applied or refused without harm, and the
 * head read back per sample and in batches (tombstones filtering both)
 * must give the same samples and errors. */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "labels/labels.h"
#include "tsdb/head.h"
#include "tsdb/head_int.h"
#include "tsdb/record.h"
#include "tsdb/wal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct st {
    uint64_t n, bytes;
    labels_builder b;
} st;

static int cb(void *ctx, const uint8_t *rec, size_t len, int ck) {
    st *s = ctx;
    (void)ck;
    s->n++;
    s->bytes += len;
    tsdb_rec_dec d;
    if (!tsdb_rec_dec_init(&d, rec, len)) {
        tsdb_rec_sample x;
        tsdb_rec_tombstone t;
        uint64_t ref;
        if (d.type == TSDB_REC_SAMPLES)
            while (tsdb_rec_dec_sample(&d, &x) == 1) {
            }
        else if (d.type == TSDB_REC_TOMBSTONES)
            while (tsdb_rec_dec_tombstone(&d, &t) == 1) {
            }
        else
            while (tsdb_rec_dec_series(&d, &ref, &s->b) == 1) {
            }
    }
    return 0;
}

/* Every series of h read per sample (batch 0) or in batches of 1..4,
 * as events (series, sample, error) appended to out. At most 4 errors in
 * a row per series (a damaged open chunk repeats its error). */
static void read_all(tsdb_head *h, int batch, base_buf *out) {
    tsdb_series_set *s;
    if (tsdb_head_select(h, NULL, 0, INT64_MIN, INT64_MAX, &s)) return;
    int64_t t[4];
    double v[4];
    unsigned cap = 0;
    while (tsdb_series_set_next(s) == 1) {
        base_buf_append(out, "S", 1);
        for (int errs = 0; errs < 4;) {
            int r = batch ? tsdb_series_set_samples(s, t, v, 1 + cap++ % 4) : tsdb_series_set_sample(s, t, v);
            if (r == 0) break;
            if (r < 0) {
                base_buf_append(out, "E", 1);
                base_buf_append(out, &r, sizeof r);
                errs++;
                continue;
            }
            errs = 0;
            for (int i = 0; i < r; i++) {
                base_buf_append(out, "V", 1);
                base_buf_append(out, &t[i], 8);
                base_buf_append(out, &v[i], 8);
            }
        }
    }
    tsdb_series_set_free(s);
}

static void rm_dir(const char *dir) {
    char p[256];
    for (int i = 1; i < 4; i++) {
        snprintf(p, sizeof p, "%s/%08d", dir, i);
        unlink(p);
    }
    rmdir(dir);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char dir[] = "/tmp/kelvin-fuzz-wal-XXXXXX", path[256];
    if (!mkdtemp(dir)) return 0;
    snprintf(path, sizeof path, "%s/00000001", dir);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || write(fd, data, size) != (ssize_t)size) abort();
    close(fd);
    st s1 = {0}, s2 = {0};
    labels_builder_init(&s1.b);
    labels_builder_init(&s2.b);
    tsdb_wal_report r1, r2;
    tsdb_wal *w;
    if (tsdb_wal_open(dir, NULL, cb, &s1, &r1, &w, NULL, 0)) abort();
    tsdb_wal_close(w);
    if (s1.bytes + s1.n * TSDB_WAL_FRAME_HDR + r1.truncated_bytes != size) abort();
    if ((r1.corruptions != 0) != (r1.truncated_bytes != 0)) abort();
    if (tsdb_wal_open(dir, NULL, cb, &s2, &r2, &w, NULL, 0)) abort();
    tsdb_wal_close(w);
    if (s2.n != s1.n || s2.bytes != s1.bytes || r2.corruptions) abort();
    labels_builder_free(&s1.b);
    labels_builder_free(&s2.b);
    tsdb__head_replay_threads = 1;
    tsdb_head_opts ho = {.wal_dir = dir, .wal = {.read_only = 1}, .ooo_window_ms = 3600000};
    tsdb_head *h;
    if (!tsdb_head_open(&ho, &h, NULL, NULL, 0)) {
        base_buf a = BASE_BUF_INIT, b = BASE_BUF_INIT;
        read_all(h, 0, &a);
        read_all(h, 1, &b);
        if (base_buf_err(&a) || base_buf_err(&b)) abort();
        if (a.len != b.len || (a.len && memcmp(a.data, b.data, a.len))) abort();
        base_buf_free(&a);
        base_buf_free(&b);
        tsdb_head_stats hs;
        tsdb_head_stats_get(h, &hs);
        if (hs.tombstones != tsdb_head_num_tombstones(h)) abort();
        tsdb_head_close(h);
    }
    rm_dir(dir);
    return 0;
}
