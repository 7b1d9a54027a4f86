/* fuzz/tsdb_wal.c -- arbitrary bytes as a WAL segment (src/tsdb/wal.c):
 * replay must never fail to open or read outside the file, must hand out
 * only CRC-valid records, must truncate a damaged tail so that a second
 * open replays the same records with no corruption reported, and every
 * replayed record goes through the record decoders (record.c). */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "labels/labels.h"
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
    rm_dir(dir);
    return 0;
}
