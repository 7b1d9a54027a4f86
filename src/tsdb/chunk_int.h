/* chunk_int.h -- shared inside the chunk codecs (chunk.c, chunk_xor.c,
 * chunk_kv.c): the bit writer and reader, varints, zigzag, and the Gorilla
 * XOR value code both XOR encodings use.
 *
 * Bit writer (tsdb__bw): bits go out most significant first, as
 * Prometheus's bstream writes them. Pending bits collect in a 64-bit
 * accumulator and leave 32 at a time. tsdb__bw_reserve() is called before
 * anything is written for a sample, so the puts themselves never fail or
 * allocate: an append either writes a whole sample or nothing.
 * Invariants: nacc < 32 between calls; len + 4 <= cap before any put that
 * the caller reserved for.
 *
 * Bit reader (tsdb__br, the dav1d getbits habit): reads never go past
 * end; a read that would sets err = BASE_E_TRUNCATED once, returns 0 and
 * keeps returning 0, so a decoder checks err once per sample instead of
 * after every read. Invariant: the top nacc bits of acc are the next bits
 * of input, every bit below them is 0. Its hot functions are always
 * inlined: chunk_kv.c inlines its decoders into several loops, and past
 * GCC's unit-growth limit the per-sample iterator would call them.
 */
#ifndef KELVIN_TSDB_CHUNK_INT_H
#define KELVIN_TSDB_CHUNK_INT_H

#include <stdint.h>
#include <string.h>

#include "base/buf.h"
#include "base/err.h"
#include "tsdb/chunk.h"

/* Bytes one sample may add to one stream, with room to spare: at most 145
 * bits (a Prometheus XOR sample with a 64-bit dod and a new window) plus
 * one 4-byte flush. */
#define TSDB__SAMPLE_BYTES 24u
/* A stream never grows past this (65535 samples stay far below it). */
#define TSDB__STREAM_LIMIT (16u << 20)

/* ---- allocation (a test hook can make the Nth allocation fail) --------- */

void *tsdb__realloc(void *p, size_t n);
/* Test hook: the allocation after the next n succeeds fails; n < 0 turns
 * failures off. Not thread-safe; tests only. */
void tsdb__chunk_fail_alloc(long n);

/* ---- bit writer --------------------------------------------------------- */

/* Makes room for n more bytes; 0 or BASE_E_NOMEM / BASE_E_LIMIT, in which
 * case nothing changed. */
int tsdb__bw_grow(tsdb__bw *w, size_t n);
static inline int tsdb__bw_reserve(tsdb__bw *w, size_t n) {
    return (size_t)w->len + n + 8 <= w->cap ? 0 : tsdb__bw_grow(w, n);
}

/* Writes the low n bits of x, 0 <= n <= 32. */
static inline void tsdb__bw_put(tsdb__bw *w, uint64_t x, unsigned n) {
    w->acc = (w->acc << n) | (x & ((1ull << n) - 1));
    w->nacc += n;
    if (w->nacc >= 32) {
        w->nacc -= 32;
        uint32_t o = (uint32_t)(w->acc >> w->nacc);
        uint8_t *p = w->buf + w->len;
        p[0] = (uint8_t)(o >> 24);
        p[1] = (uint8_t)(o >> 16);
        p[2] = (uint8_t)(o >> 8);
        p[3] = (uint8_t)o;
        w->len += 4;
    }
}

/* Writes the low n bits of x, 0 <= n <= 64. */
static inline void tsdb__bw_put64(tsdb__bw *w, uint64_t x, unsigned n) {
    if (n > 32) {
        tsdb__bw_put(w, x >> 32, n - 32);
        n = 32;
    }
    tsdb__bw_put(w, x, n);
}

/* Bits written so far. */
static inline uint64_t tsdb__bw_bits(const tsdb__bw *w) {
    return (uint64_t)w->len * 8 + w->nacc;
}

/* ---- bit reader --------------------------------------------------------- */

static inline void tsdb__br_init(tsdb__br *r, const uint8_t *p, size_t n) {
    r->p = p;
    r->end = p + n;
    r->acc = 0;
    r->nacc = 0;
    r->err = 0;
}

static inline __attribute__((always_inline)) void tsdb__br_refill(tsdb__br *r) {
    if (r->nacc <= 56 && r->end - r->p >= 8) {
        /* a word at a time: as many whole bytes as fit, big endian */
        uint64_t x;
        memcpy(&x, r->p, 8);
        x = __builtin_bswap64(x);
        unsigned take = (64 - r->nacc) >> 3, keep = r->nacc + take * 8;
        uint64_t mask = keep == 64 ? ~0ull : ~(~0ull >> keep);
        r->acc |= (x >> r->nacc) & mask;
        r->p += take;
        r->nacc = keep;
        return;
    }
    while (r->nacc <= 56 && r->p < r->end) {
        r->acc |= (uint64_t)*r->p++ << (56 - r->nacc);
        r->nacc += 8;
    }
}

static inline __attribute__((always_inline)) void tsdb__br_fail(tsdb__br *r, int err) {
    if (!r->err) r->err = err;
    r->acc = 0;
    r->nacc = 0;
    r->p = r->end;
}

/* Reads n bits, 0 <= n <= 56. */
static inline __attribute__((always_inline)) uint64_t tsdb__br_get(tsdb__br *r, unsigned n) {
    if (r->nacc < n) {
        tsdb__br_refill(r);
        if (r->nacc < n) {
            tsdb__br_fail(r, BASE_E_TRUNCATED);
            return 0;
        }
    }
    if (n == 0) return 0;
    uint64_t x = r->acc >> (64 - n);
    r->acc <<= n;
    r->nacc -= n;
    return x;
}

static inline uint64_t tsdb__br_get64(tsdb__br *r, unsigned n) {
    if (n <= 32) return tsdb__br_get(r, n);
    uint64_t hi = tsdb__br_get(r, n - 32);
    return (hi << 32) | tsdb__br_get(r, 32);
}

/* Counts 1 bits up to max (<= 32) and consumes them, and the 0 that ends
 * them when fewer than max. */
static inline __attribute__((always_inline)) unsigned tsdb__br_ones(tsdb__br *r, unsigned max) {
    if (r->nacc <= max) tsdb__br_refill(r);
    uint64_t inv = ~r->acc;
    unsigned q = inv ? (unsigned)__builtin_clzll(inv) : 64; /* <= nacc: bits below are 0 */
    if (q >= max) {
        r->acc <<= max;
        r->nacc -= max;
        return max;
    }
    if (q >= r->nacc) {
        tsdb__br_fail(r, BASE_E_TRUNCATED);
        return 0;
    }
    r->acc <<= q + 1;
    r->nacc -= q + 1;
    return q;
}

/* Bits not read yet. */
static inline uint64_t tsdb__br_left(const tsdb__br *r) {
    return (uint64_t)(r->end - r->p) * 8 + r->nacc;
}

/* True if everything left is zero padding: fewer than 8 bits when strict,
 * any number of zero bits otherwise. */
static inline int tsdb__br_at_end(const tsdb__br *r, int strict) {
    if (r->err) return 0;
    if (strict && tsdb__br_left(r) >= 8) return 0;
    if (r->acc) return 0;
    for (const uint8_t *p = r->p; p < r->end; p++)
        if (*p) return 0;
    return 1;
}

/* ---- integers ----------------------------------------------------------- */

static inline uint64_t tsdb__zz(uint64_t x) {
    return (x << 1) ^ (0 - (x >> 63));
}
static inline uint64_t tsdb__unzz(uint64_t u) {
    return (u >> 1) ^ (0 - (u & 1));
}
static inline unsigned tsdb__bitlen(uint64_t x) {
    return x ? 64 - (unsigned)__builtin_clzll(x) : 0;
}

/* LEB128 (Go's binary.PutUvarint); p needs 10 bytes. Returns the length. */
static inline unsigned tsdb__put_uvarint(uint8_t *p, uint64_t x) {
    unsigned n = 0;
    while (x >= 0x80) {
        p[n++] = (uint8_t)(x | 0x80);
        x >>= 7;
    }
    p[n++] = (uint8_t)x;
    return n;
}

/* Reads a LEB128 varint from [*p, end): at most 10 bytes, the 10th at most
 * 1, and (strict) no redundant trailing zero byte. Returns 0 or
 * BASE_E_TRUNCATED / BASE_E_PARSE; advances *p on success. */
static inline int tsdb__get_uvarint(const uint8_t **p, const uint8_t *end, int strict, uint64_t *ret) {
    uint64_t x = 0;
    const uint8_t *q = *p;
    for (unsigned i = 0; i < 10; i++) {
        if (q >= end) return BASE_E_TRUNCATED;
        uint8_t b = *q++;
        if (i == 9 && b > 1) return BASE_E_PARSE;
        x |= (uint64_t)(b & 0x7f) << (7 * i);
        if (b < 0x80) {
            if (strict && i > 0 && b == 0) return BASE_E_PARSE;
            *p = q;
            *ret = x;
            return 0;
        }
    }
    return BASE_E_PARSE;
}

static inline uint64_t tsdb__dbits(double v) {
    uint64_t b;
    memcpy(&b, &v, sizeof b);
    return b;
}

static inline double tsdb__bitsd(uint64_t b) {
    double v;
    memcpy(&v, &b, sizeof v);
    return v;
}

/* ---- Gorilla XOR values (Prometheus 2.42 xorAppender.writeVDelta) ------- */

/* Codes value bits x after prev; *lead == 0xff means no window yet. */
static inline void tsdb__xor_put(tsdb__bw *w, uint64_t prev, uint64_t x, uint8_t *lead, uint8_t *trail) {
    uint64_t delta = x ^ prev;
    if (!delta) {
        tsdb__bw_put(w, 0, 1);
        return;
    }
    unsigned l = (unsigned)__builtin_clzll(delta), t = (unsigned)__builtin_ctzll(delta);
    if (l >= 32) l = 31;
    if (*lead != 0xff && l >= *lead && t >= *trail) {
        tsdb__bw_put(w, 2, 2); /* '10' */
        tsdb__bw_put64(w, delta >> *trail, 64 - *lead - *trail);
        return;
    }
    *lead = (uint8_t)l;
    *trail = (uint8_t)t;
    unsigned sig = 64 - l - t;
    /* '11', 5 bits leading zeros, 6 bits significant bits (64 written as 0) */
    tsdb__bw_put(w, (3u << 11) | (l << 6) | (sig & 63), 13);
    tsdb__bw_put64(w, delta >> t, sig);
}

/* Reads one XOR-coded value into *bits; corrupt windows set r->err. The
 * reader's window starts at lead = trail = 0, as Prometheus's. */
static inline void tsdb__xor_get(tsdb__br *r, uint64_t *bits, uint8_t *lead, uint8_t *trail) {
    if (!tsdb__br_get(r, 1)) return;
    if (tsdb__br_get(r, 1)) {
        unsigned l = (unsigned)tsdb__br_get(r, 5);
        unsigned sig = (unsigned)tsdb__br_get(r, 6);
        if (sig == 0) sig = 64;
        if (l + sig > 64) {
            tsdb__br_fail(r, BASE_E_PARSE);
            return;
        }
        *lead = (uint8_t)l;
        *trail = (uint8_t)(64 - l - sig);
    }
    unsigned sig = 64u - *lead - *trail;
    uint64_t d = tsdb__br_get64(r, sig);
    *bits ^= d << *trail;
}

/* ---- codec entry points ------------------------------------------------- */

int tsdb__xor_append(tsdb_chunk_app *a, int64_t t, double v);
size_t tsdb__xor_size(const tsdb_chunk_app *a);
void tsdb__xor_emit(const tsdb_chunk_app *a, uint8_t *out);
void tsdb__xor_it_init(tsdb_chunk_it *it, const uint8_t *data, size_t len);
bool tsdb__xor_it_next(tsdb_chunk_it *it);
/* Up to cap samples, as that many next calls (cap <= samples left). */
size_t tsdb__xor_it_next_n(tsdb_chunk_it *it, int64_t *t, double *v, size_t cap);

int tsdb__kv_append(tsdb_chunk_app *a, int64_t t, double v);
/* Cuts the chunk into out, choosing deltas or deltas of deltas for int/dec
 * values and delta-of-delta or grid timestamps, whichever is smaller.
 * 0, or an error with a and out unchanged. Does not reset a. */
int tsdb__kv_finish(const tsdb_chunk_app *a, base_buf *out);
size_t tsdb__kv_size(const tsdb_chunk_app *a);
void tsdb__kv_emit(const tsdb_chunk_app *a, uint8_t *out);
uint8_t tsdb__kv_enc(const tsdb_chunk_app *a);
void tsdb__kv_it_init(tsdb_chunk_it *it, const uint8_t *data, size_t len);
bool tsdb__kv_it_next(tsdb_chunk_it *it);
size_t tsdb__kv_it_next_n(tsdb_chunk_it *it, int64_t *t, double *v, size_t cap);

/* Serialises stream w plus extra tail bits (value tail, count ntail <= 32)
 * into out, padded with zero bits to a byte; returns the byte count.
 * out == NULL only measures. */
size_t tsdb__bw_emit(const tsdb__bw *w, uint64_t tail, unsigned ntail, uint8_t *out);

#endif
