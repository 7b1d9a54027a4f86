/* chunk.h -- compressed chunks of (timestamp, float64) samples: the
 * appender that builds one and the iterator that reads one back.
 *
 * A chunk holds 1..TSDB_CHUNK_MAX_SAMPLES samples of one series with
 * strictly increasing int64 timestamps (milliseconds, as Prometheus) and
 * float64 values, and starts with a one-byte encoding id:
 *
 *   id    name          what is stored                       layout in
 *   0x01  xor           Prometheus 2.42's XOR chunk, byte for chunk_xor.c
 *                       byte after the id (EncXOR = 1): dod
 *                       timestamps, Gorilla XOR values
 *   0x41  const         every value has the same bit pattern chunk_kv.c
 *   0x42  int-delta     integers, deltas                     chunk_kv.c
 *   0x43  int-dod       integers, deltas of deltas           chunk_kv.c
 *   0x44  dec-delta     m / 10^d, mantissa deltas            chunk_kv.c
 *   0x45  dec-dod       m / 10^d, mantissa deltas of deltas  chunk_kv.c
 *   0x46  kxor          Gorilla XOR values, Kelvin timestamps chunk_kv.c
 *   +0x08 (on 0x41..0x46) "regular": every interval equals the first one,
 *         so timestamps cost nothing past the header.
 *
 * The appender picks the cheapest encoding that is exact, adaptively while
 * appending: a chunk starts as const, becomes int/dec when a second value
 * differs (growing the decimal exponent when a value needs more digits,
 * dividing mantissa steps by a common 2^s or 10^e such as 4096-byte
 * pages), and falls back to kxor when values are not short decimals.
 * Values that do not fit an int/dec chunk (NaN payloads such as the stale
 * marker 0x7ff0000000000002, +-Inf, -0.0, a stray non-decimal) are stored
 * as raw 64-bit exceptions, up to 2 + n/16 per chunk; past that the
 * values are planned again or rewritten as kxor. Residuals are adaptive
 * Golomb-Rice codes with zero runs. Timestamps at one steady interval
 * cost nothing past the header; otherwise they are offsets from a grid
 * (scrape jitter) or deltas of deltas, whichever is smaller, chosen when
 * the chunk is cut, as are deltas or deltas of deltas for int/dec values.
 * Every bit pattern round-trips exactly. With TSDB_CHUNK_PROM_XOR the
 * appender writes Prometheus's XOR chunk instead (the baseline; readable
 * by Prometheus).
 *
 * Size: N = TSDB_CHUNK_DEFAULT_SAMPLES (120, as Prometheus's head) unless
 * the caller asks for another N, up to TSDB_CHUNK_MAX_SAMPLES (65535);
 * compaction may re-chunk at larger N (480 = 2 h at 15 s saves about 10%,
 * the header of about 12 bytes being spread wider), which makes constant
 * and regular series nearly free. bench/chunk_bench.c measures all this.
 *
 * Errors: functions return 0 or a negative BASE_E_* (base/err.h). The
 * iterator never reads outside [data, data + len) and reports corrupt or
 * truncated input through a sticky error (BASE_E_PARSE, BASE_E_TRUNCATED)
 * instead of crashing; after an error next() and seek() return false.
 *
 * Ownership and threads: an appender owns its buffers (free with
 * tsdb_chunk_app_free()); an iterator borrows the caller's bytes, which
 * must outlive it, and allocates nothing. Neither is thread-safe; distinct
 * objects may be used from distinct threads.
 *
 * The structs are public so that callers can embed them (a head series
 * holds its appender inline); every field under "private" belongs to
 * chunk*.c.
 */
#ifndef KELVIN_TSDB_CHUNK_H
#define KELVIN_TSDB_CHUNK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"

#define TSDB_CHUNK_MAX_SAMPLES     65535u
#define TSDB_CHUNK_DEFAULT_SAMPLES 120u

enum {
    TSDB_ENC_XOR = 0x01,
    TSDB_ENC_CONST = 0x41,
    TSDB_ENC_INT_DELTA = 0x42,
    TSDB_ENC_INT_DOD = 0x43,
    TSDB_ENC_DEC_DELTA = 0x44,
    TSDB_ENC_DEC_DOD = 0x45,
    TSDB_ENC_KXOR = 0x46,
    TSDB_ENC_REGULAR = 0x08, /* flag on 0x41..0x46 */
};

/* Appender flags. */
enum {
    TSDB_CHUNK_PROM_XOR = 1u << 0, /* write Prometheus XOR chunks (id 0x01) only */
};

/* ---- private building blocks (layout may change) ------------------------ */

typedef struct tsdb__bw { /* bit writer, MSB first */
    uint8_t *buf;
    uint32_t len, cap; /* committed bytes, allocated bytes */
    uint64_t acc;      /* the low nacc bits are pending */
    uint32_t nacc;     /* 0..31 */
} tsdb__bw;

typedef struct tsdb__br { /* bit reader with a sticky error */
    const uint8_t *p, *end;
    uint64_t acc;  /* the top nacc bits are the next bits; the rest are 0 */
    uint32_t nacc; /* 0..64 */
    int err;       /* 0, BASE_E_TRUNCATED or BASE_E_PARSE */
} tsdb__br;

typedef struct tsdb__rc { /* adaptive Rice coder state, see chunk_kv.c */
    uint64_t a, a2;       /* sums of recent magnitudes: normal samples, run interruptions */
    uint32_t n, n2;       /* their counts */
    uint32_t run;         /* encoder: zeros pending in run mode; decoder: zeros to emit */
    uint8_t ri;           /* run index into the block-size table */
    uint8_t inrun;        /* run mode */
    uint8_t intr;         /* decoder: an interruption sample follows the pending zeros */
    uint8_t _pad;
} tsdb__rc;

/* ---- appender ----------------------------------------------------------- */

typedef struct tsdb_chunk_app {
    /* private */
    uint32_t max;      /* samples per chunk */
    uint32_t flags;    /* TSDB_CHUNK_* */
    uint32_t n;        /* samples appended */
    uint8_t vmode;     /* value codec (TSDB_ENC_* without the regular flag) */
    uint8_t d;         /* decimal digits of dec modes */
    uint8_t order;     /* 1 = deltas, 2 = deltas of deltas */
    uint8_t irregular; /* some delta of delta was not 0 */
    int64_t t0, tlast;
    uint64_t dt1, dlast; /* first and last timestamp interval */
    uint64_t v0, vlast;  /* bit patterns of the first and last values */
    tsdb__bw tw, vw;     /* timestamp stream (whole chunk for xor), value stream */
    tsdb__rc tc, vc;
    uint64_t mprev, dprev; /* int/dec predictor: last mantissa, last delta / factor */
    uint64_t fmul;         /* int/dec: every mantissa delta is a multiple of this */
    uint8_t fcode;         /* ... coded as in chunk_kv.c */
    uint32_t s, exc;       /* int/dec: non-exception samples, exceptions */
    uint64_t cost1, cost2; /* int/dec: rough bits for deltas / deltas of deltas */
    uint8_t lead, trail;   /* Gorilla XOR window (lead 0xff: none yet) */
    uint8_t tsgrid;        /* timestamp stream holds grid offsets (set only while cutting) */
    uint64_t grid;         /* their grid interval */
} tsdb_chunk_app;

/* Prepares an empty appender. max_samples: samples per chunk, 0 for
 * TSDB_CHUNK_DEFAULT_SAMPLES, capped at TSDB_CHUNK_MAX_SAMPLES. flags: 0 or
 * TSDB_CHUNK_PROM_XOR. Allocates nothing until the first append. */
void tsdb_chunk_app_init(tsdb_chunk_app *a, unsigned max_samples, unsigned flags);
/* Releases the buffers; the appender may be initialised again. */
void tsdb_chunk_app_free(tsdb_chunk_app *a);
/* Drops the samples, keeps the buffers. */
void tsdb_chunk_app_reset(tsdb_chunk_app *a);

/* Appends one sample. Returns 0; BASE_E_RANGE if t is not after the last
 * sample's timestamp; BASE_E_LIMIT if the chunk already holds max_samples
 * (finish it first); BASE_E_NOMEM. On every error the appender is
 * unchanged. */
int tsdb_chunk_app_append(tsdb_chunk_app *a, int64_t t, double v);

/* Samples appended since the last init, reset or finish. */
static inline uint32_t tsdb_chunk_app_count(const tsdb_chunk_app *a) {
    return a->n;
}
/* The last appended timestamp (meaningful when count > 0). */
static inline int64_t tsdb_chunk_app_maxt(const tsdb_chunk_app *a) {
    return a->tlast;
}
/* Bytes the appender holds on the heap (for memory accounting). */
size_t tsdb_chunk_app_mem(const tsdb_chunk_app *a);
/* The encoding id the chunk would have if it were cut now. */
uint8_t tsdb_chunk_app_enc(const tsdb_chunk_app *a);

/* Cuts the chunk: appends its bytes to out (the id byte first) and resets
 * the appender for the next chunk, keeping its buffers. Picks deltas or
 * deltas of deltas for int/dec values and grid or delta-of-delta
 * timestamps here, so the bytes may be smaller than a snapshot's. Returns
 * 0; BASE_E_INVAL if no sample was appended; out's error or BASE_E_NOMEM,
 * in which case the appender is unchanged and out has not grown. */
int tsdb_chunk_app_finish(tsdb_chunk_app *a, base_buf *out);

/* Appends the bytes of a chunk holding the samples so far to out without
 * changing the appender (for reading a head chunk that is still open).
 * Returns as tsdb_chunk_app_finish(). */
int tsdb_chunk_app_snapshot(const tsdb_chunk_app *a, base_buf *out);

/* ---- iterator ----------------------------------------------------------- */

typedef struct tsdb_chunk_it {
    int64_t t; /* current sample, valid after next()/seek() returned true */
    double v;
    /* private */
    int err;
    uint32_t n, i; /* samples in the chunk, samples read */
    uint8_t enc, vmode, regular, d, order;
    uint8_t lead, trail, tsgrid;
    uint64_t dt;                 /* last interval */
    uint64_t grid, gnext, rprev; /* grid timestamps: interval, next grid point, last offset */
    uint64_t vbits;              /* last value's bits (xor, kxor, const) */
    uint64_t mprev, dprev, fmul;
    uint32_t s;
    tsdb__br tr, vr; /* timestamp (whole chunk for xor) and value streams */
    tsdb__rc tc, vc;
} tsdb_chunk_it;

/* Starts reading the chunk data[0..len). Returns 0, or the iterator's
 * error (BASE_E_PARSE, BASE_E_TRUNCATED) when the header is already bad;
 * either way the iterator is usable and next() reports the end. */
int tsdb_chunk_it_init(tsdb_chunk_it *it, const uint8_t *data, size_t len);
/* Advances to the next sample; false at the end or on error. */
bool tsdb_chunk_it_next(tsdb_chunk_it *it);
/* Decodes up to cap samples into t[] and v[], exactly as that many
 * next() calls would (same samples, same checks, same sticky error), in
 * tight loops (chunk_kv.c: a block at a time): returns how many. Fewer
 * than cap means the chunk ended or failed (tsdb_chunk_it_err); without a
 * failure it->t, it->v hold the last sample decoded, and next() may go on
 * from there. t[] and v[] past the count returned (below cap) may have
 * been written. */
size_t tsdb_chunk_it_next_n(tsdb_chunk_it *it, int64_t *t, double *v, size_t cap);
/* Advances to the first sample with timestamp >= t, never backwards (as
 * Prometheus's Seek); false if there is none or on error. */
bool tsdb_chunk_it_seek(tsdb_chunk_it *it, int64_t t);
static inline void tsdb_chunk_it_at(const tsdb_chunk_it *it, int64_t *ret_t, double *ret_v) {
    *ret_t = it->t;
    *ret_v = it->v;
}
/* 0, or the sticky BASE_E_PARSE / BASE_E_TRUNCATED. */
static inline int tsdb_chunk_it_err(const tsdb_chunk_it *it) {
    return it->err;
}
/* Samples the header declares (0 when the header is bad). */
static inline uint32_t tsdb_chunk_it_count(const tsdb_chunk_it *it) {
    return it->n;
}

/* "xor", "const", "int-delta", "int-dod", "dec-delta", "dec-dod", "kxor";
 * "?" for an unknown id. The regular flag is ignored. */
const char *tsdb_chunk_enc_name(uint8_t id);

#endif
