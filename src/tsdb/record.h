/* record.h -- the records the TSDB writes into its write-ahead log (and
 * checkpoints): series definitions, samples and tombstones, encoded and
 * decoded with bounds checks.
 *
 * FORMAT (one record = one WAL payload; the WAL frames it with a length
 * and a CRC, see wal.h). "uv" is an unsigned LEB128 varint (at most 10
 * bytes), "zz" a zigzag-encoded signed varint, "u64le" 8 bytes little
 * endian. All arithmetic on refs and timestamps wraps modulo 2^64, so
 * every input round-trips.
 *
 *   series     u8 1, uv count, count x { uv ref, uv npairs,
 *                npairs x { uv nlen, name bytes, uv vlen, value bytes } }
 *              pairs in the label set's order (sorted by name).
 *   samples    u8 2, uv count, count x { zz dref, zz dt, u64le value bits }
 *              dref = ref - previous ref (0 before the first sample),
 *              dt = t - first t (the first sample stores t itself):
 *              a batch of one scrape costs ~10 bytes a sample.
 *   tombstones u8 3, uv count, count x { uv ref, zz mint, zz maxt }
 *   ooo samples u8 4, then as samples: samples the head accepted into its
 *              out-of-order store (head.h). Replay inserts them there
 *              without re-checking the window, whose decision depended
 *              on the head's state at append time.
 *
 * A record ends exactly after its last entry: trailing bytes, a count the
 * bytes cannot hold, an over-long varint, a string longer than
 * LABELS_STRING_MAX or more than LABELS_MAX_PAIRS pairs are BASE_E_PARSE;
 * input that stops inside an entry is BASE_E_TRUNCATED. Decoders never
 * read outside [data, data + len) and allocate nothing themselves.
 *
 * Ownership: encoders append to the caller's base_buf (its sticky error is
 * returned). A decoder borrows the caller's bytes; the views it hands out
 * (through the labels_builder) point into them.
 */
#ifndef KELVIN_TSDB_RECORD_H
#define KELVIN_TSDB_RECORD_H

#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "labels/labels.h"

enum {
    TSDB_REC_SERIES = 1,
    TSDB_REC_SAMPLES = 2,
    TSDB_REC_TOMBSTONES = 3,
    TSDB_REC_OOO_SAMPLES = 4,
};

typedef struct tsdb_rec_series {
    uint64_t ref;
    const labels_set *ls;
} tsdb_rec_series;

typedef struct tsdb_rec_sample {
    uint64_t ref;
    int64_t t;
    double v;
} tsdb_rec_sample;

typedef struct tsdb_rec_tombstone {
    uint64_t ref;
    int64_t mint, maxt;
} tsdb_rec_tombstone;

/* Encoders: append one record holding n entries (n may be 0). Return 0
 * or out's sticky error. */
int tsdb_rec_enc_series(base_buf *out, const tsdb_rec_series *s, size_t n);
int tsdb_rec_enc_samples(base_buf *out, const tsdb_rec_sample *s, size_t n);
int tsdb_rec_enc_tombstones(base_buf *out, const tsdb_rec_tombstone *s, size_t n);
/* Same encoding as samples, type TSDB_REC_OOO_SAMPLES. */
int tsdb_rec_enc_ooo_samples(base_buf *out, const tsdb_rec_sample *s, size_t n);

typedef struct tsdb_rec_dec {
    uint8_t type;   /* TSDB_REC_* after a successful init */
    uint64_t count; /* entries the record declares */
    /* private */
    const uint8_t *p, *end;
    uint64_t left, prev_ref;
    int64_t t0;
    int err;
} tsdb_rec_dec;

/* Starts decoding: reads the type and count. 0, BASE_E_PARSE (unknown
 * type, impossible count) or BASE_E_TRUNCATED. */
int tsdb_rec_dec_init(tsdb_rec_dec *d, const uint8_t *data, size_t len);
/* Next series: 1 with *ret_ref set and b reset and filled with the pairs
 * (views into the record; call labels_builder_finish to get a set), 0 at
 * the clean end of the record, <0 on error (sticky). */
int tsdb_rec_dec_series(tsdb_rec_dec *d, uint64_t *ret_ref, labels_builder *b);
/* Next sample of a TSDB_REC_SAMPLES or TSDB_REC_OOO_SAMPLES record. */
int tsdb_rec_dec_sample(tsdb_rec_dec *d, tsdb_rec_sample *ret);
int tsdb_rec_dec_tombstone(tsdb_rec_dec *d, tsdb_rec_tombstone *ret);

#endif
