/* record.h -- the records the TSDB writes into its write-ahead log (and
 * checkpoints): series definitions, samples, tombstones and the encoded
 * chunks of checkpoints, encoded and decoded with bounds checks.
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
 *   tombstones u8 3, uv count, count x { uv ref, zz mint, zz maxt }:
 *              deleted intervals [mint, maxt] (closed) of series ref,
 *              logged by tsdb_head_delete and kept by checkpoints (head.h
 *              DELETION). Replay adds them to the series the ref names
 *              then (an alias included); unknown refs and mint > maxt
 *              are ignored. Prometheus's record type 3 too.
 *   ooo samples u8 4, then as samples: samples the head accepted into its
 *              out-of-order store (head.h). Replay inserts them there
 *              without re-checking the window, whose decision depended
 *              on the head's state at append time.
 *   chunks     u8 5, uv count, count x entry: a series' encoded chunks as
 *              the head holds them, written by checkpoints (head.h
 *              CHECKPOINT) so that replay installs them without decoding
 *              or re-encoding samples. An entry:
 *                uv ref, uv blen, then a body of exactly blen bytes:
 *                  clist   the closed in-order chunks, in time order
 *                  uv open_n   samples in the open chunk (0: none); when
 *                              > 0: zz t0, uv nbits, then (nbits + 7) / 8
 *                              bytes: the head's staging stream of the
 *                              open chunk (head.h), nbits >= 64
 *                  clist   the out-of-order chunks, in time order
 *                  uv nbuf, nbuf x { uv dt, u64le value bits }: buffered
 *                              out-of-order samples, strictly increasing
 *                              t (dt: zz t for the first, t - previous
 *                              t - 1 after it)
 *              clist:  uv n, n x { uv dmint, uv dmax, uv len }, then the n
 *                      chunks' bytes back to back (each chunk.h's format,
 *                      len >= 1). dmint is zz mint for the first chunk and
 *                      mint - previous maxt - 1 after it (chunks never
 *                      overlap); maxt = mint + dmax, dmax <= UINT32_MAX.
 *              The open chunk starts after the last in-order chunk ends.
 *              One series may have several entries (a large one is split:
 *              they append to each other, in order, the open chunk in the
 *              last). blen frames the entry: a body that breaks these
 *              rules is reported in the entry (err) and decoding goes on
 *              with the next entry; only a broken frame ends the record.
 *              The decoder checks the format, not the chunks' contents
 *              (the head does what it needs at install).
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
    TSDB_REC_CHUNKS = 5,
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

/* One chunk of a chunks record: [mint, maxt] and its bytes. */
typedef struct tsdb_rec_chunk {
    int64_t mint, maxt;
    const uint8_t *data;
    uint32_t len;
} tsdb_rec_chunk;

/* One buffered out-of-order sample: time and value bits. */
typedef struct tsdb_rec_osample {
    int64_t t;
    uint64_t v;
} tsdb_rec_osample;

/* What a chunks entry holds, for the encoder (arrays borrowed). */
typedef struct tsdb_rec_series_chunks {
    uint64_t ref;
    const tsdb_rec_chunk *chunks; /* closed in-order chunks */
    size_t nchunks;
    uint32_t open_n; /* samples in the open chunk, 0: none */
    int64_t open_t0;
    uint64_t open_bits;        /* bits of its staging stream */
    const uint8_t *open;       /* (open_bits + 7) / 8 bytes */
    const tsdb_rec_chunk *ooo; /* out-of-order chunks */
    size_t nooo;
    const tsdb_rec_osample *buf; /* buffered out-of-order samples */
    size_t nbuf;
} tsdb_rec_series_chunks;

/* Encoders: append one record holding n entries (n may be 0). Return 0
 * or out's sticky error. */
int tsdb_rec_enc_series(base_buf *out, const tsdb_rec_series *s, size_t n);
int tsdb_rec_enc_samples(base_buf *out, const tsdb_rec_sample *s, size_t n);
int tsdb_rec_enc_tombstones(base_buf *out, const tsdb_rec_tombstone *s, size_t n);
/* Same encoding as samples, type TSDB_REC_OOO_SAMPLES. */
int tsdb_rec_enc_ooo_samples(base_buf *out, const tsdb_rec_sample *s, size_t n);
/* A chunks record is built in two steps: entries are appended to a buffer
 * of their own, then the record is written from it. enc_chunks_entry
 * appends one entry: 0, out's error, or BASE_E_INVAL when e breaks the
 * format's rules (chunks out of order or overlapping, a chunk empty or
 * wider than UINT32_MAX ms, an open chunk not after the chunks or with
 * open_bits < 64, buffered samples not increasing). */
int tsdb_rec_enc_chunks_entry(base_buf *entries, const tsdb_rec_series_chunks *e);
/* Appends the record: header for count entries, then the entry bytes. */
int tsdb_rec_enc_chunks(base_buf *out, const void *entries, size_t len, uint64_t count);
/* The record's header alone into out (11 bytes of room): its length.
 * Writers that keep room before their entries put it there (no copy). */
unsigned tsdb_rec_chunks_hdr(uint8_t *out, uint64_t count);

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

/* A chunk list of a decoded chunks entry: n chunks whose bytes lie back
 * to back at data (bytes in all). Read it with tsdb_rec_clist_next, which
 * consumes the struct (copy it to read it again). */
typedef struct tsdb_rec_clist {
    uint32_t n;
    uint64_t bytes;
    const uint8_t *data;
    /* private */
    const uint8_t *meta;
    uint32_t i;
    uint64_t off;
    int64_t prev_maxt;
} tsdb_rec_clist;

/* Buffered out-of-order samples of an entry (read with tsdb_rec_obuf_next). */
typedef struct tsdb_rec_obuf {
    uint32_t n;
    /* private */
    const uint8_t *p;
    uint32_t i;
    int64_t prev;
} tsdb_rec_obuf;

/* A decoded chunks entry: views into the record. */
typedef struct tsdb_rec_chunks_entry {
    uint64_t ref;
    int err; /* 0, or BASE_E_PARSE / BASE_E_TRUNCATED: the body breaks the
              * format (see FORMAT); skip the entry, the next is fine */
    tsdb_rec_clist chunks, ooo;
    uint32_t open_n;
    int64_t open_t0;
    uint64_t open_bits;
    const uint8_t *open;
    tsdb_rec_obuf buf;
} tsdb_rec_chunks_entry;

/* Next entry of a TSDB_REC_CHUNKS record: 1 (check ret->err), 0 at the
 * clean end, <0 when the record's framing is broken (sticky). */
int tsdb_rec_dec_chunks(tsdb_rec_dec *d, tsdb_rec_chunks_entry *ret);
/* Next chunk of a list: 1, or 0 at its end. */
int tsdb_rec_clist_next(tsdb_rec_clist *l, tsdb_rec_chunk *ret);
/* Next buffered sample: 1, or 0 at the end. */
int tsdb_rec_obuf_next(tsdb_rec_obuf *b, tsdb_rec_osample *ret);

#endif
