/* chunk_kv.c -- Kelvin's chunk encodings (ids 0x41..0x46, plus 0x08 for
 * regular timestamps): constant values, integers and short decimals as
 * delta or delta-of-delta mantissas, and Gorilla XOR values, over
 * timestamps that cost nothing at a steady interval and little with jitter.
 *
 * Layout (varints are minimal LEB128; zz(x) is zigzag, 0,-1,1,-2 -> 0,1,2,3;
 * all arithmetic on timestamps and mantissas is modulo 2^64):
 *
 *   byte 0     id = 0x40 | R << 3 | V
 *                V: 1 const, 2 int-delta, 3 int-dod, 4 dec-delta,
 *                   5 dec-dod, 6 kxor
 *                R: 1 when every interval equals t1 - t0 (always 1 if n <= 2)
 *   uvarint    n - 1                       1 <= n <= 65535
 *   uvarint    zz(t0)
 *   uvarint    t1 - t0 (>= 1)              n >= 2 only
 *   R = 0 only (then n >= 3):
 *     uvarint  2 * L + G                   L: bytes of the timestamp stream
 *     uvarint  zz(g - (t1 - t0))           G = 1 only: the grid interval g >= 1
 *     L bytes  the timestamp stream, one residual code per sample 2..n-1:
 *              G = 0: zz(dod), dod = (t[i] - t[i-1]) - (t[i-1] - t[i-2])
 *              G = 1: zz(t[i] - p), p the grid point predicted for sample
 *                     i: p = t1 + g for i = 2; afterwards p = q + g where
 *                     q = t[i] if its offset r was not 0 and either equal
 *                     to the previous offset or larger than g / 4 in
 *                     magnitude (a shifted or missed scrape: follow it),
 *                     else q = p (a jittered scrape: keep the grid)
 *   value part, by V:
 *     const    u8 d (0..18) + uvarint zz(m): every value is m / 10^d; or
 *              u8 0xff + the value's 8 bytes, little endian
 *     int-*    u8 F, then the value stream to the end of the chunk (d = 0)
 *     dec-*    u8 d (1..18), u8 F, then the value stream
 *     kxor     the value stream: the first value's 64 bits, then Gorilla
 *              XOR codes (chunk_xor.c) for samples 1..n-1
 *   Streams are bit streams, most significant bit first, padded with zero
 *   bits to a byte. Nothing follows the value part.
 *
 * int/dec values: each value (but exceptions) is v = m / 10^d exactly,
 * computed as the double division (double)m / 1e<d> (m itself for d = 0),
 * with |m| <= 2^53. Every delta m[i] - m[i-1] is a multiple of f, given by
 * F: 0 -> f = 1, 1..63 -> 2^F, 64 + e (e = 1..18) -> 10^e (memory in bytes
 * moves in pages: 4096 = 2^12). The value stream holds one residual code
 * per sample, counting over the samples that are not exceptions: the
 * first is zz(m[0]); then zz(q[i]) for -delta and zz(q[i] - q[i-1]) for
 * -dod, where q[i] = (m[i] - m[i-1]) / f and q[0] = 0. An exception (NaN,
 * +-Inf, -0.0, a value with no short decimal form) is a code of its own
 * followed by the value's 64 bits; it does not move the predictor.
 *
 * Residual codes: adaptive Golomb-Rice with zero runs, after JPEG-LS.
 *   The coder keeps A, N (magnitudes and count of samples coded in normal
 *   mode, from A = 0, N = 1) and A2, N2 (the same for run interruptions);
 *   k = the smallest k with N * 2^k >= A, at most 56 (k2 likewise).
 *   Normal mode, one sample u:
 *     u >> k < 4    (u >> k) '1' bits, a '0', then the low k bits of u
 *     otherwise     '1111', EG0(B - bitlen(4 << k)) with B = bitlen(u),
 *                   then the low B - 1 bits of u
 *     exception     '1111', EG0(63), then 64 bits of the value
 *     EG0(x) is x + 1 written in n bits after n - 1 zeros (0 -> '1',
 *     3 -> '00100'). Then A += u, but once N >= 4 by at most 2^(k+4) (an
 *     outlier does not spoil what follows), N += 1; A and N are halved when
 *     N reaches 16. A zero coded with k = 0 switches to run mode.
 *   Run mode counts zeros in blocks of 2^J, J = min(r / 2, 15), r from 0:
 *     '1'               a whole block of 2^J zeros, or the zeros that end
 *                       the stream if fewer; r += 1 (at most 31)
 *     '0' + J bits m    m zeros, then one interruption sample coded as in
 *                       normal mode at k2 with u - 1 (or an exception);
 *                       A2 += u - 1, N2 += 1 (halved at 16); r -= 1 (at
 *                       least 0); run mode continues if m > 0 and k = 0
 *                       (after the zeros are counted), else normal mode
 *     The zeros of a block, or the m zeros, add to N (with the halving)
 *     when their code is read.
 *   The first 1 (-delta) or 2 (-dod) non-exception samples of a value
 *   stream do not update A and N: they carry m[0] and the first delta.
 *
 * Worked example (the unit test "kv_worked_example" checks these bytes):
 * power in watts at an exact 15 s interval, (1000, 273.5), (16000, 273.25),
 * (31000, 273.25), (46000, 274):
 *   4c           id: R = 1, V = 4 (dec-delta)
 *   03           n - 1 = 3
 *   d0 0f        zz(1000) = 2000
 *   98 75        t1 - t0 = 15000; no timestamp stream (R = 1)
 *   02 00        d = 2 (mantissas 27350, 27325, 27325, 27400), F = 0
 *   value stream, residuals zz(27350) = 54700, zz(-25) = 49, 0, zz(75) = 150:
 *     54700  k = 0: 1111, B = 16: EG0(13) = 0001110, 15 bits
 *            101010110101100 (26 bits; not learned)
 *     49     k = 0: 1111, B = 6: EG0(3) = 00100, 10001; A = 49, N = 2
 *     0      k = 5 (2 * 32 >= 49): 0 00000; A = 49, N = 3
 *     150    k = 5: 150 >> 5 = 4, so 1111, B = 8: EG0(0) = 1, 0010110
 *   = f1 d5 6b 3c 91 03 e5 80 (6 bits of padding)
 * 16 bytes for 4 samples; the same samples take 20 bytes as Prometheus XOR.
 *
 * The appender (tsdb__kv_append) starts every chunk as const and moves
 * const -> int/dec(d) -> kxor, never back. A move, a larger d (values with
 * up to DSOFT digits raise it at once; longer ones are exceptions until
 * plan() weighs exceptions against digits) or a smaller factor rewrites
 * the value stream from the samples so far (transcode()), as does a
 * switch to -dod after PROBE samples when that looks cheaper. When the
 * chunk is cut, tsdb__kv_finish re-checks -delta against -dod and grid
 * against delta-of-delta timestamps and keeps whichever is smaller, on a
 * copy, so a failed cut changes nothing.
 * The iterator decodes sample by sample (kv_next_d) or, for the query
 * path's tsdb_chunk_it_next_n, a block at a time with the same results
 * ("batch decoding" below).
 * Invariants: streams always decode to exactly the samples appended;
 * every int/dec mantissa passes the exactness check of to_mant(); both
 * decoders give the same samples and errors for any bytes.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "tsdb/chunk_int.h"

#define QMAX      4u  /* unary part before the escape */
#define EXC_CODE  63u /* escape length excess that marks an exception */
#define KMAX      56u
#define RESET     16u /* A and N are halved when N reaches this */
#define WARM      4u  /* samples learned in full before outliers are capped */
#define CAP       4u  /* an outlier counts as at most 2^(k + CAP) */
#define DSOFT     8u  /* a value needing at most this many digits raises d at once */
#define PROBE     16u /* int/dec samples after which deltas of deltas may take over */
#define DMAX      18u
#define TWO53     9007199254740992.0
#define VMODE_DEC TSDB_ENC_DEC_DELTA /* the appender's int/dec family */

static const double P10[DMAX + 1] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8, 1e9,
                                     1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18};

static const uint64_t P10U[DMAX + 1] = {1ull,
                                        10ull,
                                        100ull,
                                        1000ull,
                                        10000ull,
                                        100000ull,
                                        1000000ull,
                                        10000000ull,
                                        100000000ull,
                                        1000000000ull,
                                        10000000000ull,
                                        100000000000ull,
                                        1000000000000ull,
                                        10000000000000ull,
                                        100000000000000ull,
                                        1000000000000000ull,
                                        10000000000000000ull,
                                        100000000000000000ull,
                                        1000000000000000000ull};

static unsigned exc_limit(uint32_t n) {
    return 2 + n / 16;
}

/* ---- common factors of mantissa deltas ----------------------------------
 * fcode 0: none; 1..63: every delta is a multiple of 2^fcode; 64 + e
 * (e = 1..18): of 10^e. */

static uint64_t factor_of(uint8_t fcode) {
    return fcode == 0 ? 1 : fcode < 64 ? 1ull << fcode : P10U[fcode - 64];
}

static inline int factor_divides(uint8_t fcode, uint64_t f, uint64_t d) {
    if (fcode == 0) return 1;
    if (fcode < 64) return (d & (f - 1)) == 0;
    return (int64_t)d % (int64_t)f == 0;
}

static inline uint64_t factor_div(uint8_t fcode, uint64_t f, uint64_t d) {
    if (fcode == 0) return d;
    if (fcode < 64) return (uint64_t)((int64_t)d >> fcode);
    return (uint64_t)((int64_t)d / (int64_t)f);
}

static int to_mant(double v, unsigned d, int64_t *ret_m);

/* The largest 2^s or 10^e (by bits saved) dividing every delta between
 * the mantissas at d of the representable values. */
static uint8_t pick_factor(const uint64_t *vals, uint32_t n, unsigned d) {
    unsigned smin = 63, emin = DMAX;
    int seen = 0, any = 0;
    int64_t prev = 0, m;
    for (uint32_t i = 0; i < n && (smin || emin); i++) {
        if (!to_mant(tsdb__bitsd(vals[i]), d, &m)) continue;
        uint64_t delta = (uint64_t)m - (uint64_t)prev;
        if (seen && delta) {
            uint64_t mag = (delta >> 63) ? 0 - delta : delta;
            unsigned tz = (unsigned)__builtin_ctzll(mag);
            if (tz < smin) smin = tz;
            while (emin && mag % P10U[emin]) emin--;
            any = 1;
        }
        prev = m;
        seen = 1;
    }
    if (!any) return 0;
    if (emin * 332 > smin * 100) return (uint8_t)(64 + emin);
    return (uint8_t)smin;
}

/* ---- decimals ----------------------------------------------------------- */

/* v == m / 10^d exactly (bit for bit) with |m| <= 2^53? */
static int to_mant(double v, unsigned d, int64_t *ret_m) {
    double x = v * P10[d];
    if (!(x >= -TWO53 && x <= TWO53)) return 0; /* also NaN */
    int64_t m = (int64_t)(x < 0 ? x - 0.5 : x + 0.5);
    if (m > (int64_t)1 << 53 || m < -((int64_t)1 << 53)) return 0;
    double back = d ? (double)m / P10[d] : (double)m;
    if (tsdb__dbits(back) != tsdb__dbits(v)) return 0;
    *ret_m = m;
    return 1;
}

static inline double from_mant(int64_t m, unsigned d) {
    return d ? (double)m / P10[d] : (double)m;
}

/* The fewest decimal digits that represent v exactly, or -1. */
static int min_digits(double v) {
    int64_t m;
    if (v != v || v - v != 0) return -1; /* NaN, Inf */
    for (unsigned d = 0; d <= DMAX; d++)
        if (to_mant(v, d, &m)) return (int)d;
    return -1;
}

/* ---- residual coder ----------------------------------------------------- */

/* The smallest k with n * 2^k >= a, at most KMAX. */
static inline __attribute__((always_inline)) unsigned k_of(uint64_t a, uint32_t n) {
    if (a <= n) return 0;
    unsigned k = tsdb__bitlen(a) - tsdb__bitlen(n);
    if (((uint64_t)n << k) < a) k++;
    return k > KMAX ? KMAX : k;
}

static inline __attribute__((always_inline)) unsigned rc_k(const tsdb__rc *c) {
    return k_of(c->a, c->n);
}
static inline __attribute__((always_inline)) unsigned rc_k2(const tsdb__rc *c) {
    return k_of(c->a2, c->n2);
}

/* Learns x into the interruption statistics. */
static inline __attribute__((always_inline)) void rc_learn2(tsdb__rc *c, uint64_t x) {
    c->a2 += x < (1ull << 56) ? x : (1ull << 56);
    if (++c->n2 >= RESET) {
        c->a2 >>= 1;
        c->n2 >>= 1;
    }
}

/* Learns magnitude u, coded with parameter k: an outlier counts as at
 * most 2^(k+CAP) once the coder has seen WARM samples, so one jump does
 * not spoil the codes that follow it. */
static inline __attribute__((always_inline)) void rc_learn(tsdb__rc *c, uint64_t u, unsigned k) {
    uint64_t lim = c->n < WARM ? (1ull << 56) : (1ull << (k + CAP));
    c->a += u < lim ? u : lim;
    if (++c->n >= RESET) {
        c->a >>= 1;
        c->n >>= 1;
    }
}

static inline __attribute__((always_inline)) void rc_zeros(tsdb__rc *c, uint32_t r) {
    c->n += r;
    while (c->n >= RESET) {
        c->a >>= 1;
        c->n >>= 1;
    }
}

static inline __attribute__((always_inline)) unsigned run_bits(const tsdb__rc *c) {
    return c->ri / 2u;
}

/* Exp-Golomb order 0 of x <= 63: n - 1 zeros, then x + 1 in n bits. */
static inline void eg0_put(tsdb__bw *w, unsigned x) {
    tsdb__bw_put(w, x + 1, 2 * tsdb__bitlen(x + 1) - 1);
}

static inline unsigned eg0_get(tsdb__br *r) {
    unsigned z = 0;
    while (!tsdb__br_get(r, 1)) {
        if (r->err || ++z > 6) {
            tsdb__br_fail(r, BASE_E_PARSE);
            return 0;
        }
    }
    return (unsigned)(((1u << z) | tsdb__br_get(r, z)) - 1);
}

/* The bit length of the smallest escaped value at k. */
static inline unsigned esc_bits(unsigned k) {
    return tsdb__bitlen((uint64_t)QMAX << k);
}

static inline void rice_put(tsdb__bw *w, uint64_t u, unsigned k) {
    uint64_t q = u >> k;
    if (q < QMAX) {
        tsdb__bw_put(w, ((1u << q) - 1) << 1, (unsigned)q + 1);
        tsdb__bw_put64(w, u, k);
    } else {
        unsigned b = tsdb__bitlen(u);
        tsdb__bw_put(w, (1u << QMAX) - 1, QMAX);
        eg0_put(w, b - esc_bits(k));
        tsdb__bw_put64(w, u, b - 1);
    }
}

static inline void exc_put(tsdb__bw *w, uint64_t bits) {
    tsdb__bw_put(w, (1u << QMAX) - 1, QMAX);
    eg0_put(w, EXC_CODE);
    tsdb__bw_put64(w, bits, 64);
}

/* Codes one sample: residual u, or (exc) an exception with value bits. */
static inline void rc_put(tsdb__rc *c, tsdb__bw *w, uint64_t u, int exc, uint64_t bits, int learn) {
    if (c->inrun) {
        if (!exc && u == 0) {
            if (++c->run == (1u << run_bits(c))) {
                tsdb__bw_put(w, 1, 1);
                rc_zeros(c, c->run);
                c->run = 0;
                if (c->ri < 31) c->ri++;
            }
            return;
        }
        tsdb__bw_put(w, 0, 1);
        tsdb__bw_put(w, c->run, run_bits(c));
        rc_zeros(c, c->run);
        c->inrun = c->run && rc_k(c) == 0; /* a run ended by one sample: stay */
        c->run = 0;
        if (exc) {
            exc_put(w, bits);
        } else {
            rice_put(w, u - 1, rc_k2(c));
            if (learn) rc_learn2(c, u - 1);
        }
        if (c->ri) c->ri--;
        return;
    }
    unsigned k = rc_k(c);
    if (exc) {
        exc_put(w, bits);
        return;
    }
    rice_put(w, u, k);
    if (learn) rc_learn(c, u, k);
    if (u == 0 && k == 0) c->inrun = 1;
}

/* The bit that ends a pending run when the stream is cut here. */
static inline unsigned rc_tail(const tsdb__rc *c) {
    return c->inrun && c->run ? 1 : 0;
}

/* Reads a Rice code at k: 0 with *u, 1 for an exception (bits in *u). */
static inline __attribute__((always_inline)) int rice_get(tsdb__br *r, unsigned k, uint64_t *u) {
    unsigned q = tsdb__br_ones(r, QMAX);
    if (q < QMAX) {
        *u = ((uint64_t)q << k) | tsdb__br_get(r, k);
        return 0;
    }
    unsigned e = eg0_get(r);
    if (e == EXC_CODE) {
        *u = tsdb__br_get64(r, 64);
        return 1;
    }
    unsigned b = esc_bits(k) + e;
    if (b > 64) {
        tsdb__br_fail(r, BASE_E_PARSE);
        return 0;
    }
    uint64_t x = (1ull << (b - 1)) | tsdb__br_get64(r, b - 1);
    if ((x >> k) < QMAX) tsdb__br_fail(r, BASE_E_PARSE); /* the writer would not escape */
    *u = x;
    return 0;
}

/* Decodes one sample; left = samples left in this stream, this one
 * included. Returns 0 with residual *u, 1 for an exception (bits in *u). */
static inline __attribute__((always_inline)) int rc_get(tsdb__rc *c, tsdb__br *r, uint32_t left, int learn,
                                                        uint64_t *u) {
    if (c->inrun) {
        if (c->run) {
            c->run--;
            *u = 0;
            return 0;
        }
        if (!c->intr) {
            if (tsdb__br_get(r, 1)) {
                uint32_t blk = 1u << run_bits(c);
                rc_zeros(c, blk);
                if (c->ri < 31) c->ri++;
                c->run = (blk < left ? blk : left) - 1;
                *u = 0;
                return 0;
            }
            uint32_t m = (uint32_t)tsdb__br_get(r, run_bits(c));
            if (m >= left) {
                tsdb__br_fail(r, BASE_E_PARSE);
                return 0;
            }
            rc_zeros(c, m);
            c->intr = m && rc_k(c) == 0 ? 2 : 1; /* 2: stay in run mode after it */
            if (m) {
                c->run = m - 1;
                *u = 0;
                return 0;
            }
        }
        c->inrun = c->intr == 2;
        c->intr = 0;
        if (c->ri) c->ri--;
        int e = rice_get(r, rc_k2(c), u);
        if (!e) {
            if (learn) rc_learn2(c, *u);
            if (++*u == 0) tsdb__br_fail(r, BASE_E_PARSE);
        }
        return e;
    }
    unsigned k = rc_k(c);
    int e = rice_get(r, k, u);
    if (e) return 1;
    if (learn) rc_learn(c, *u, k);
    if (*u == 0 && k == 0) c->inrun = 1;
    return 0;
}

/* ---- appender ----------------------------------------------------------- */

/* Codes mantissa m; its delta must be a multiple of the factor. */
static void dec_put(tsdb_chunk_app *a, int64_t m) {
    uint64_t d1 = (uint64_t)m - a->mprev;
    uint64_t q = a->s ? factor_div(a->fcode, a->fmul, d1) : d1; /* the first mantissa is not scaled */
    uint64_t r2 = q - a->dprev;
    int learn = a->s >= a->order;
    rc_put(&a->vc, &a->vw, tsdb__zz(a->order == 1 ? q : r2), 0, 0, learn);
    if (a->s >= 2) {
        a->cost1 += tsdb__bitlen(tsdb__zz(q));
        a->cost2 += tsdb__bitlen(tsdb__zz(r2));
    }
    a->dprev = a->s ? q : 0;
    a->mprev = (uint64_t)m;
    a->s++;
}

static void exc_add(tsdb_chunk_app *a, uint64_t vb) {
    rc_put(&a->vc, &a->vw, 0, 1, vb, 0);
    a->exc++;
}

/* Codes value vb of sample idx in b's current mode without changing the
 * mode: 0, 1 when an int/dec chunk would pass limit exceptions, or
 * BASE_E_NOMEM. */
static int push(tsdb_chunk_app *b, uint32_t idx, uint64_t vb, unsigned limit) {
    int err = tsdb__bw_reserve(&b->vw, TSDB__SAMPLE_BYTES);
    if (err) return err;
    if (b->vmode == TSDB_ENC_KXOR) {
        if (idx == 0)
            tsdb__bw_put64(&b->vw, vb, 64);
        else
            tsdb__xor_put(&b->vw, b->vlast, vb, &b->lead, &b->trail);
    } else {
        int64_t m;
        if (to_mant(tsdb__bitsd(vb), b->d, &m))
            dec_put(b, m);
        else if (b->exc + 1 <= limit)
            exc_add(b, vb);
        else
            return 1;
    }
    b->vlast = vb;
    return 0;
}

static size_t kv_write(const tsdb_chunk_app *a, uint8_t *out);

/* The bit patterns of the n values so far and room for one more, in a new
 * array (caller frees). */
static int gather(const tsdb_chunk_app *a, uint64_t **ret) {
    uint64_t *vals = tsdb__realloc(NULL, ((size_t)a->n + 1) * sizeof *vals);
    if (!vals) return BASE_E_NOMEM;
    if (a->vmode == TSDB_ENC_CONST) {
        for (uint32_t i = 0; i < a->n; i++) vals[i] = a->v0;
        *ret = vals;
        return 0;
    }
    size_t len = kv_write(a, NULL);
    uint8_t *tmp = tsdb__realloc(NULL, len);
    if (!tmp) {
        free(vals);
        return BASE_E_NOMEM;
    }
    kv_write(a, tmp);
    tsdb_chunk_it it;
    tsdb_chunk_it_init(&it, tmp, len);
    uint32_t i = 0;
    while (i < a->n && tsdb_chunk_it_next(&it)) vals[i++] = tsdb__dbits(it.v);
    free(tmp);
    if (i != a->n || tsdb_chunk_it_err(&it)) { /* cannot happen: our own bytes */
        free(vals);
        return BASE_E_PARSE;
    }
    *ret = vals;
    return 0;
}

/* Picks the decimal digits d for values vals[0..n) that leave at most
 * limit exceptions at the least estimated cost (an exception ~82 bits, each
 * digit ~3.3 bits on every other value); *ret_d = -1 when none does. */
static int plan(const uint64_t *vals, uint32_t n, unsigned limit, int *ret_d) {
    int8_t *md = tsdb__realloc(NULL, n ? n : 1);
    if (!md) return BASE_E_NOMEM;
    for (uint32_t i = 0; i < n; i++)
        md[i] = (int8_t)(i && vals[i] == vals[i - 1] ? md[i - 1] : min_digits(tsdb__bitsd(vals[i])));
    int best = -1;
    uint64_t best_cost = UINT64_MAX;
    for (unsigned d = 0; d <= DMAX; d++) {
        uint64_t e = 0;
        for (uint32_t i = 0; i < n; i++) {
            double x = tsdb__bitsd(vals[i]) * P10[d];
            e += md[i] < 0 || md[i] > (int)d || x > TWO53 || x < -TWO53;
        }
        if (e > limit) continue;
        uint64_t cost = 82 * e + (n - e) * d * 10 / 3;
        if (cost < best_cost) {
            best_cost = cost;
            best = (int)d;
        }
    }
    free(md);
    *ret_d = best;
    return 0;
}

/* Builds in *b the appender a with its values re-coded as mode/d/order,
 * plus value vb when add; d < 0 asks plan() for the digits. An int/dec
 * chunk that would pass its exception limit is planned again, then made
 * kxor. On success b owns a new value stream (a is untouched); on error
 * nothing is left allocated. */
static int transcode(const tsdb_chunk_app *a, tsdb_chunk_app *b, uint8_t mode, int d, unsigned order, int add,
                     uint64_t vb) {
    uint64_t *vals;
    int err = gather(a, &vals);
    if (err) return err;
    uint32_t total = a->n + (add ? 1 : 0);
    unsigned limit = exc_limit(total);
    if (add) vals[a->n] = vb;
    for (int attempt = 0;; attempt++) {
        if (mode == VMODE_DEC && d < 0) {
            err = attempt < 2 ? plan(vals, total, limit, &d) : 0;
            if (err) break;
            if (d < 0) mode = TSDB_ENC_KXOR;
        }
        *b = *a;
        memset(&b->vw, 0, sizeof b->vw);
        memset(&b->vc, 0, sizeof b->vc);
        b->vc.n = b->vc.n2 = 1;
        b->vmode = mode;
        b->d = (uint8_t)(mode == VMODE_DEC ? d : 0);
        b->order = (uint8_t)(mode == VMODE_DEC ? order : 1);
        b->mprev = b->dprev = 0;
        b->s = b->exc = 0;
        b->cost1 = b->cost2 = 0;
        b->lead = 0xff;
        b->fcode = mode == VMODE_DEC ? pick_factor(vals, total, (unsigned)d) : 0;
        b->fmul = factor_of(b->fcode);
        int r = 0;
        for (uint32_t i = 0; i < total && !r; i++) r = push(b, i, vals[i], limit);
        if (r == 1) { /* only int/dec modes refuse */
            free(b->vw.buf);
            d = -1;
            continue;
        }
        if (r) free(b->vw.buf);
        err = r;
        break;
    }
    free(vals);
    return err;
}

static int move_to(tsdb_chunk_app *a, uint8_t mode, int d, unsigned order, uint64_t vb) {
    tsdb_chunk_app b;
    int err = transcode(a, &b, mode, d, order, 1, vb);
    if (err) return err;
    free(a->vw.buf);
    *a = b;
    return 0;
}

static int value_append(tsdb_chunk_app *a, uint64_t vb) {
    double v = tsdb__bitsd(vb);
    int64_t m;
    switch (a->vmode) {
    case TSDB_ENC_CONST:
        if (a->n == 0) {
            a->v0 = vb;
            return 0;
        }
        if (vb == a->v0) return 0;
        if (min_digits(v) < 0 && min_digits(tsdb__bitsd(a->v0)) < 0)
            return move_to(a, TSDB_ENC_KXOR, 0, 1, vb);
        return move_to(a, VMODE_DEC, -1, 1, vb);
    case VMODE_DEC: {
        if (to_mant(v, a->d, &m)) {
            if (a->s && !factor_divides(a->fcode, a->fmul, (uint64_t)m - a->mprev))
                return move_to(a, VMODE_DEC, a->d, a->order, vb);
            dec_put(a, m);
            return 0;
        }
        int dv = min_digits(v);
        if (dv > (int)a->d && dv <= (int)DSOFT) return move_to(a, VMODE_DEC, dv, a->order, vb);
        if (a->exc + 1 <= exc_limit(a->n + 1)) {
            exc_add(a, vb);
            return 0;
        }
        return move_to(a, VMODE_DEC, -1, a->order, vb);
    }
    default: tsdb__xor_put(&a->vw, a->vlast, vb, &a->lead, &a->trail); return 0;
    }
}

int tsdb__kv_append(tsdb_chunk_app *a, int64_t t, double v) {
    int err = a->n >= 2 ? tsdb__bw_reserve(&a->tw, TSDB__SAMPLE_BYTES) : 0;
    if (!err && a->vmode != TSDB_ENC_CONST) err = tsdb__bw_reserve(&a->vw, TSDB__SAMPLE_BYTES);
    if (err) return err;
    uint64_t vb = tsdb__dbits(v);
    err = value_append(a, vb);
    if (err) return err;
    if (a->n == 0) {
        a->t0 = t;
    } else if (a->n == 1) {
        a->dt1 = a->dlast = (uint64_t)t - (uint64_t)a->tlast;
    } else {
        uint64_t d = (uint64_t)t - (uint64_t)a->tlast;
        uint64_t u = tsdb__zz(d - a->dlast);
        if (u) a->irregular = 1;
        rc_put(&a->tc, &a->tw, u, 0, 0, 1);
        a->dlast = d;
    }
    a->tlast = t;
    a->vlast = vb;
    a->n++;
    /* Counters: once PROBE mantissas show deltas of deltas to be cheaper,
     * switch now rather than re-code the whole chunk when it is cut. Best
     * effort: on failure the chunk simply stays as it is. */
    if (a->vmode == VMODE_DEC && a->order == 1 && a->s == PROBE && a->cost2 < a->cost1) {
        tsdb_chunk_app b;
        if (transcode(a, &b, VMODE_DEC, a->d, 2, 0, 0) == 0) {
            free(a->vw.buf);
            *a = b;
        }
    }
    return 0;
}

static size_t stream_size(const tsdb__bw *w, const tsdb__rc *c) {
    return tsdb__bw_emit(w, rc_tail(c), rc_tail(c), NULL);
}

/* Decodes the n timestamps of a's delta-of-delta stream into t. */
static int ts_gather(const tsdb_chunk_app *a, int64_t *t) {
    size_t len = stream_size(&a->tw, &a->tc);
    uint8_t *tmp = tsdb__realloc(NULL, len ? len : 1);
    if (!tmp) return BASE_E_NOMEM;
    tsdb__bw_emit(&a->tw, rc_tail(&a->tc), rc_tail(&a->tc), tmp);
    tsdb__br r;
    tsdb__br_init(&r, tmp, len);
    tsdb__rc c = {.n = 1, .n2 = 1};
    uint64_t dt = a->dt1, u = 0;
    t[0] = a->t0;
    t[1] = (int64_t)((uint64_t)a->t0 + dt);
    for (uint32_t i = 2; i < a->n; i++) {
        rc_get(&c, &r, a->n - i, 1, &u);
        dt += tsdb__unzz(u);
        t[i] = (int64_t)((uint64_t)t[i - 1] + dt);
    }
    free(tmp);
    return r.err ? BASE_E_PARSE : 0; /* cannot fail: our own bytes */
}

/* The grid interval for timestamps t[0..n): the interval most of them
 * have (Boyer-Moore majority vote), else the mean of the intervals within
 * 1/8 of the median of 15 spread over the chunk. Any value decodes
 * correctly; this one is cheap and usually the scrape interval. */
static uint64_t grid_interval(const int64_t *t, uint32_t n) {
    uint64_t cand = 0, votes = 0, hits = 0;
    for (uint32_t i = 1; i < n; i++) {
        uint64_t d = (uint64_t)t[i] - (uint64_t)t[i - 1];
        if (!votes) cand = d;
        votes += d == cand ? 1 : (uint64_t)-1;
    }
    for (uint32_t i = 1; i < n; i++) hits += (uint64_t)t[i] - (uint64_t)t[i - 1] == cand;
    if (hits * 2 > (uint64_t)n - 1) return cand;
    uint64_t s[15];
    unsigned m = n - 1 < 15 ? n - 1 : 15;
    for (unsigned j = 0; j < m; j++) {
        uint32_t i = 1 + (uint32_t)((uint64_t)j * (n - 1) / m);
        uint64_t d = (uint64_t)t[i] - (uint64_t)t[i - 1];
        unsigned k = j;
        for (; k > 0 && s[k - 1] > d; k--) s[k] = s[k - 1];
        s[k] = d;
    }
    /* refine: the mean of the intervals near that median, so that jitter
     * around a steady grid gives the grid's own interval */
    uint64_t c = s[m / 2], tol = c / 8;
    double sum = 0;
    uint32_t k = 0;
    for (uint32_t i = 1; i < n; i++) {
        uint64_t d = (uint64_t)t[i] - (uint64_t)t[i - 1];
        if (d - c <= tol || c - d <= tol) {
            sum += (double)(int64_t)(d - c);
            k++;
        }
    }
    int64_t adj = k ? (int64_t)llround(sum / k) : 0;
    return c + (uint64_t)adj ? c + (uint64_t)adj : c;
}

/* Codes t[2..n) as offsets from a grid of interval g (see the layout). */
static int grid_put(const int64_t *t, uint32_t n, uint64_t g, tsdb__bw *w, tsdb__rc *c) {
    uint64_t next = (uint64_t)t[1] + g, rprev = 0;
    for (uint32_t i = 2; i < n; i++) {
        int err = tsdb__bw_reserve(w, TSDB__SAMPLE_BYTES);
        if (err) return err;
        uint64_t r = (uint64_t)t[i] - next;
        rc_put(c, w, tsdb__zz(r), 0, 0, 1);
        uint64_t mag = (r >> 63) ? 0 - r : r;
        next = ((r && (r == rprev || mag > g / 4)) ? (uint64_t)t[i] : next) + g;
        rprev = r;
    }
    return 0;
}

/* The timestamps of a as grid offsets in *b (new stream) when that is
 * smaller than a's delta-of-delta stream; b is left alone otherwise. */
static int try_grid(const tsdb_chunk_app *a, tsdb_chunk_app *b) {
    uint32_t n = a->n;
    int64_t *t = tsdb__realloc(NULL, (size_t)n * sizeof *t);
    tsdb__bw w = {0};
    int err = t ? ts_gather(a, t) : BASE_E_NOMEM;
    if (!err) {
        uint64_t g = grid_interval(t, n);
        tsdb__rc c = {.n = 1, .n2 = 1};
        err = grid_put(t, n, g, &w, &c);
        if (!err) {
            if (stream_size(&w, &c) < stream_size(&a->tw, &a->tc)) {
                b->tw = w;
                b->tc = c;
                b->tsgrid = 1;
                b->grid = g;
                w.buf = NULL;
            }
        }
    }
    free(w.buf);
    free(t);
    return err;
}

int tsdb__kv_finish(const tsdb_chunk_app *a, base_buf *out) {
    tsdb_chunk_app b = *a;
    int err = 0;
    uint8_t *newv = NULL, *newt = NULL;
    if (a->vmode == VMODE_DEC && a->n >= 4 && (a->order == 1 ? a->cost2 < a->cost1 : a->cost1 < a->cost2)) {
        tsdb_chunk_app c;
        err = transcode(a, &c, VMODE_DEC, a->d, 3 - a->order, 0, 0);
        if (err) return err;
        if (c.vmode == VMODE_DEC && stream_size(&c.vw, &c.vc) < stream_size(&a->vw, &a->vc)) {
            b = c;
            newv = c.vw.buf;
        } else {
            free(c.vw.buf);
        }
    }
    if (a->n > 2 && a->irregular) {
        err = try_grid(a, &b);
        if (b.tsgrid) newt = b.tw.buf;
    }
    if (!err) err = tsdb_chunk_app_snapshot(&b, out);
    free(newv);
    free(newt);
    return err;
}

uint8_t tsdb__kv_enc(const tsdb_chunk_app *a) {
    uint8_t id = a->vmode;
    if (id == VMODE_DEC) id = (a->d ? TSDB_ENC_DEC_DELTA : TSDB_ENC_INT_DELTA) + (a->order == 2);
    if (a->n <= 2 || !a->irregular) id |= TSDB_ENC_REGULAR;
    return id;
}

/* Writes the chunk to out (NULL: only measures); returns its size. */
static size_t kv_write(const tsdb_chunk_app *a, uint8_t *out) {
    uint8_t hdr[48];
    size_t h = 0;
    uint8_t id = tsdb__kv_enc(a);
    hdr[h++] = id;
    h += tsdb__put_uvarint(hdr + h, a->n - 1);
    h += tsdb__put_uvarint(hdr + h, tsdb__zz((uint64_t)a->t0));
    if (a->n >= 2) h += tsdb__put_uvarint(hdr + h, a->dt1);
    size_t tlen = 0;
    if (!(id & TSDB_ENC_REGULAR)) {
        tlen = stream_size(&a->tw, &a->tc);
        h += tsdb__put_uvarint(hdr + h, (uint64_t)tlen * 2 + a->tsgrid);
        if (a->tsgrid) h += tsdb__put_uvarint(hdr + h, tsdb__zz(a->grid - a->dt1));
    }
    /* value header */
    uint8_t vh[16];
    size_t vhl = 0, vlen = 0;
    if (a->vmode == TSDB_ENC_CONST) {
        int64_t m;
        int d = min_digits(tsdb__bitsd(a->v0));
        if (d >= 0 && to_mant(tsdb__bitsd(a->v0), (unsigned)d, &m)) {
            vh[vhl++] = (uint8_t)d;
            vhl += tsdb__put_uvarint(vh + vhl, tsdb__zz((uint64_t)m));
        } else {
            vh[vhl++] = 0xff;
            for (unsigned i = 0; i < 8; i++) vh[vhl++] = (uint8_t)(a->v0 >> (8 * i));
        }
    } else {
        if (a->vmode == VMODE_DEC) {
            if (a->d) vh[vhl++] = a->d;
            vh[vhl++] = a->fcode;
        }
        vlen = stream_size(&a->vw, &a->vc);
    }
    if (out) {
        uint8_t *p = out;
        memcpy(p, hdr, h);
        p += h;
        if (tlen) p += tsdb__bw_emit(&a->tw, rc_tail(&a->tc), rc_tail(&a->tc), p);
        memcpy(p, vh, vhl);
        p += vhl;
        if (vlen) tsdb__bw_emit(&a->vw, rc_tail(&a->vc), rc_tail(&a->vc), p);
    }
    return h + tlen + vhl + vlen;
}

size_t tsdb__kv_size(const tsdb_chunk_app *a) {
    return kv_write(a, NULL);
}
void tsdb__kv_emit(const tsdb_chunk_app *a, uint8_t *out) {
    kv_write(a, out);
}

/* ---- iterator ----------------------------------------------------------- */

void tsdb__kv_it_init(tsdb_chunk_it *it, const uint8_t *data, size_t len) {
    const uint8_t *p = data + 1, *end = data + len;
    uint8_t id = data[0];
    uint64_t x;
    int err;
    it->regular = (id & TSDB_ENC_REGULAR) != 0;
    it->vmode = id & (uint8_t)~TSDB_ENC_REGULAR;
    if (it->vmode < TSDB_ENC_CONST || it->vmode > TSDB_ENC_KXOR) goto bad;
    it->order = (it->vmode == TSDB_ENC_INT_DOD || it->vmode == TSDB_ENC_DEC_DOD) ? 2 : 1;
    if ((err = tsdb__get_uvarint(&p, end, 1, &x))) goto fail;
    if (x >= TSDB_CHUNK_MAX_SAMPLES) goto bad;
    uint32_t n = (uint32_t)x + 1;
    if ((err = tsdb__get_uvarint(&p, end, 1, &x))) goto fail;
    it->t = (int64_t)tsdb__unzz(x);
    if (n >= 2) {
        if ((err = tsdb__get_uvarint(&p, end, 1, &it->dt))) goto fail;
        if (it->dt == 0) goto bad;
    }
    if (!it->regular) {
        if (n <= 2) goto bad;
        if ((err = tsdb__get_uvarint(&p, end, 1, &x))) goto fail;
        it->tsgrid = x & 1;
        x >>= 1;
        if (it->tsgrid) {
            uint64_t z;
            if ((err = tsdb__get_uvarint(&p, end, 1, &z))) goto fail;
            it->grid = it->dt + tsdb__unzz(z);
            if (it->grid == 0) goto bad;
        }
        if (x > (uint64_t)(end - p)) {
            err = BASE_E_TRUNCATED;
            goto fail;
        }
        tsdb__br_init(&it->tr, p, (size_t)x);
        p += x;
    }
    it->tc.n = it->vc.n = it->tc.n2 = it->vc.n2 = 1;
    it->lead = it->trail = 0;
    if (it->vmode == TSDB_ENC_CONST) {
        if (p >= end) {
            err = BASE_E_TRUNCATED;
            goto fail;
        }
        uint8_t d = *p++;
        if (d == 0xff) {
            if (end - p < 8) {
                err = BASE_E_TRUNCATED;
                goto fail;
            }
            it->vbits = 0;
            for (unsigned i = 0; i < 8; i++) it->vbits |= (uint64_t)p[i] << (8 * i);
            p += 8;
        } else {
            if (d > DMAX) goto bad;
            if ((err = tsdb__get_uvarint(&p, end, 1, &x))) goto fail;
            int64_t m = (int64_t)tsdb__unzz(x);
            if (m > (int64_t)1 << 53 || m < -((int64_t)1 << 53)) goto bad;
            it->vbits = tsdb__dbits(from_mant(m, d));
        }
        if (p != end) goto bad;
    } else {
        if (it->vmode == TSDB_ENC_DEC_DELTA || it->vmode == TSDB_ENC_DEC_DOD) {
            if (p >= end) {
                err = BASE_E_TRUNCATED;
                goto fail;
            }
            it->d = *p++;
            if (it->d < 1 || it->d > DMAX) goto bad;
        }
        if (it->vmode != TSDB_ENC_KXOR) {
            if (p >= end) {
                err = BASE_E_TRUNCATED;
                goto fail;
            }
            uint8_t f = *p++;
            if (f > 64 + DMAX || f == 64) goto bad;
            it->fmul = factor_of(f);
        }
        tsdb__br_init(&it->vr, p, (size_t)(end - p));
    }
    it->n = n;
    return;
bad:
    err = BASE_E_PARSE;
fail:
    it->err = err;
}

/* defer (a constant where inlined): a decimal value is left as its
 * mantissa, (double)m, for the caller to divide by 10^d; *exc says the
 * sample was an exception (its value is final). */
static inline __attribute__((always_inline)) bool kv_next_d(tsdb_chunk_it *it, int defer, int *exc) {
    uint32_t i = it->i, left = it->n - i;
    uint64_t u = 0;
    int bad = 0;
    if (i > 0) {
        int64_t prev = it->t;
        if (i >= 2 && !it->regular) {
            if (rc_get(&it->tc, &it->tr, left, 1, &u)) bad = 1;
            if (it->tsgrid) {
                uint64_t r = tsdb__unzz(u), mag = (r >> 63) ? 0 - r : r;
                it->dt = it->gnext + r - (uint64_t)prev;
                it->gnext =
                    ((r && (r == it->rprev || mag > it->grid / 4)) ? it->gnext + r : it->gnext) + it->grid;
                it->rprev = r;
            } else {
                it->dt += tsdb__unzz(u);
            }
        }
        it->t = (int64_t)((uint64_t)prev + it->dt);
        if (it->t <= prev) bad = 1;
        if (i == 1) it->gnext = (uint64_t)it->t + it->grid;
    }
    switch (it->vmode) {
    case TSDB_ENC_CONST: break;
    case TSDB_ENC_KXOR:
        if (i == 0)
            it->vbits = tsdb__br_get64(&it->vr, 64);
        else
            tsdb__xor_get(&it->vr, &it->vbits, &it->lead, &it->trail);
        break;
    default:
        if (rc_get(&it->vc, &it->vr, left, it->s >= it->order, &u)) {
            it->vbits = u;
            if (defer) *exc = 1;
            break;
        }
        uint64_t q = it->order == 1 ? tsdb__unzz(u) : it->dprev + tsdb__unzz(u);
        uint64_t m = it->mprev + (it->s ? q * it->fmul : q);
        it->dprev = it->s ? q : 0;
        it->mprev = m;
        it->s++;
        if ((int64_t)m > (int64_t)1 << 53 || (int64_t)m < -((int64_t)1 << 53)) bad = 1;
        it->vbits = tsdb__dbits(defer ? (double)(int64_t)m : from_mant((int64_t)m, it->d));
        break;
    }
    int err = it->tr.err ? it->tr.err : it->vr.err;
    if (!err && bad) err = BASE_E_PARSE;
    if (!err && left == 1) {
        /* the last sample: both streams must end here, exactly */
        if (!it->regular && (!tsdb__br_at_end(&it->tr, 1) || it->tc.run || it->tc.intr)) err = BASE_E_PARSE;
        if (it->vmode != TSDB_ENC_CONST && (!tsdb__br_at_end(&it->vr, 1) || it->vc.run || it->vc.intr))
            err = BASE_E_PARSE;
    }
    if (err) {
        it->err = err;
        return false;
    }
    it->v = tsdb__bitsd(it->vbits);
    it->i++;
    return true;
}

static inline __attribute__((always_inline)) bool kv_next(tsdb_chunk_it *it) {
    return kv_next_d(it, 0, NULL);
}

bool tsdb__kv_it_next(tsdb_chunk_it *it) {
    return kv_next(it);
}

/* Decimal values in batches: the samples' mantissas are decoded first and
 * divided by 10^d afterwards, side by side -- one division per sample in
 * the decoder's chain held it up (a quarter of its time). The same
 * division, so the same bits. */
#define DEC_BATCH 256

static inline __attribute__((always_inline)) size_t
kv_next_n_dec(tsdb_chunk_it *restrict x, int64_t *restrict t, double *restrict v, size_t cap) {
    size_t k = 0;
    const double p = P10[x->d];
    while (k < cap) {
        uint8_t exc[DEC_BATCH];
        size_t k0 = k, lim = cap - k0 < DEC_BATCH ? cap : k0 + DEC_BATCH;
        int more = 1;
        while (k < lim) {
            int e = 0;
            if (!kv_next_d(x, 1, &e)) {
                more = 0;
                break;
            }
            t[k] = x->t;
            v[k] = x->v;
            exc[k - k0] = (uint8_t)e;
            k++;
        }
        for (size_t i = k0; i < k; i++) {
            double q = v[i] / p;
            v[i] = exc[i - k0] ? v[i] : q;
        }
        if (k > k0) {
            x->v = v[k - 1];
            x->vbits = tsdb__dbits(x->v);
        }
        if (!more) break;
    }
    return k;
}

/* ---- batch decoding -------------------------------------------------------
 * tsdb__kv_it_next_n decodes a chunk (other than const at a steady
 * interval, which needs no decoding) a block of up to FBLK samples at a
 * time: first the block's timestamps (at a steady interval computed, four
 * at a time; otherwise the timestamp stream decoded and integrated in one
 * loop, fast_ts), then its values in one loop that decodes a residual
 * code, integrates it (deltas or deltas of deltas times the factor) and
 * divides by 10^d (fast_vals; Gorilla codes in fast_xor). About 3x fewer
 * instructions a sample than the sample-by-sample decoder, whose state
 * lives in memory and which checks every case for every sample.
 *
 * The value loop's core (normal mode, the common case) keeps the coder's
 * state in registers and takes 10-12 cycles a code: the serial chain
 * is A -> k (one branch for k = 0, lzcnt, a shift and a compare) -> the
 * code's value -> A, nothing else. The code reader is a 64-bit window
 * (acc) whose top nacc bits are counted, refilled from an unaligned
 * big-endian word after every code; in runs of codes that cannot reach
 * the stream's end it needs no bounds checks at all. Everything else --
 * run mode, escapes, exceptions, k > 52, a run longer than the samples
 * left, a stream's last bytes -- goes through fr_next(), and what that
 * does not do through rc_get() itself on the state written back, so
 * every code is decoded by the same rules as sample by sample. The loops
 * are compiled twice (target_clones): for any x86-64, and for x86-64-v3
 * (LZCNT, BMI2's shifts), picked when the program loads.
 *
 * A block that finds anything wrong (a stream error, an exception among
 * timestamps, a timestamp that does not increase, a mantissa that might
 * pass 2^53) is thrown away and decoded again sample by sample, which
 * reports the error at the same sample as next() does. The chunk's first
 * two samples (which do not update the coders) and its last (which checks
 * that the streams end there) are always decoded sample by sample.
 * tests/unit/tsdb/chunk.c compares both decoders on every chunk it makes,
 * corrupt ones included; bench/chunk_bench.c -d measures them. */

#define FBLK 256

/* -DKV_CLONES= builds the baseline version alone (to test it on any CPU). */
#ifndef KV_CLONES
/* Not under ThreadSanitizer: its runtime is not set up yet when the
 * loader runs the clones' ifunc resolver, which then crashes before main. */
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define KV_NO_CLONES 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define KV_NO_CLONES 1
#endif
#if defined(__x86_64__) && defined(__GNUC__) && (!defined(__clang__) || __clang_major__ >= 14) &&            \
    !defined(KV_NO_CLONES)
#define KV_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define KV_CLONES
#endif
#endif

/* A stream's hot state, in registers while a loop runs; the rest of the
 * coder's state (run mode, interruptions) stays in its tsdb__rc. */
typedef struct frd {
    const uint8_t *p, *end;
    uint64_t acc;  /* the top nacc bits are the next bits; those below are the bits after them, or 0 */
    uint32_t nacc; /* 0..64 */
    uint32_t n;
    uint64_t a;
} frd;

/* Loads the bytes at p below the counted bits: needs nacc <= 63. */
static inline __attribute__((always_inline)) void fr_refill(frd *s) {
    if (__builtin_expect(s->end - s->p >= 8, 1)) {
        uint64_t x;
        memcpy(&x, s->p, 8);
        s->acc |= __builtin_bswap64(x) >> s->nacc;
        unsigned take = (63 - s->nacc) >> 3;
        s->p += take;
        s->nacc += take * 8;
    }
}

static inline __attribute__((always_inline)) void fr_in(frd *s, const tsdb__rc *c, const tsdb__br *r) {
    s->p = r->p;
    s->end = r->end;
    s->acc = r->acc;
    s->nacc = r->nacc;
    s->a = c->a;
    s->n = c->n;
    if (s->nacc < 56) fr_refill(s);
}

static inline __attribute__((always_inline)) void fr_out(const frd *s, tsdb__rc *c, tsdb__br *r) {
    r->p = s->p;
    r->acc = s->nacc ? s->acc & (~0ull << (64 - s->nacc)) : 0;
    r->nacc = s->nacc;
    c->a = s->a;
    c->n = s->n;
}

/* Consumes n (1..56) counted bits. */
static inline __attribute__((always_inline)) void fr_skip(frd *s, unsigned n) {
    s->acc <<= n;
    s->nacc -= n;
    fr_refill(s);
}

/* rc_zeros(), the halvings at once. */
static inline __attribute__((always_inline)) void fr_zeros(frd *s, uint32_t r) {
    s->n += r;
    if (s->n >= RESET) {
        unsigned sh = tsdb__bitlen(s->n) - 4;
        s->a >>= sh;
        s->n >>= sh;
    }
}

/* k_of() without the cap at KMAX (the caller takes k <= 52 only). */
static inline __attribute__((always_inline)) unsigned fr_k(uint64_t a, uint32_t n) {
    if (a <= n) return 0;
    unsigned k = (unsigned)__builtin_clzll(n) - (unsigned)__builtin_clzll(a);
    return k + (((uint64_t)n << k) < a);
}

/* A Rice code at k <= 52 with fewer than QMAX ones, all of it counted:
 * true with *x; false (nothing consumed) otherwise. */
static inline __attribute__((always_inline)) bool fr_rice(frd *s, unsigned k, uint64_t *x) {
    unsigned q = (unsigned)__builtin_clzll(~s->acc | (1ull << (63 - QMAX)));
    unsigned len = q + 1 + k;
    if (k > 52 || q >= QMAX || len > s->nacc) return false;
    *x = ((uint64_t)q << k) | ((s->acc << q) >> (k ^ 63)); /* acc << q starts with the unary part's 0 */
    fr_skip(s, len);
    return true;
}

static __attribute__((noinline)) int rc_get_slow(tsdb__rc *c, tsdb__br *r, uint32_t left, uint64_t *u) {
    return rc_get(c, r, left, 1, u);
}

static inline __attribute__((always_inline)) int fr_slow(frd *s, tsdb__rc *c, tsdb__br *r, uint32_t left,
                                                         uint64_t *u) {
    fr_out(s, c, r);
    int e = rc_get_slow(c, r, left, u);
    fr_in(s, c, r);
    return e;
}

/* rc_get() in run mode with no zeros pending. */
static inline __attribute__((always_inline)) int fr_run(frd *s, tsdb__rc *c, tsdb__br *r, uint32_t left,
                                                        uint64_t *u) {
    uint64_t x;
    if (!c->intr) {
        unsigned j = c->ri >> 1;
        if (s->nacc < 1 + j) return fr_slow(s, c, r, left, u);
        if (s->acc >> 63) { /* a block of zeros */
            uint32_t blk = 1u << j;
            fr_skip(s, 1);
            fr_zeros(s, blk);
            if (c->ri < 31) c->ri++;
            c->run = (blk < left ? blk : left) - 1;
            *u = 0;
            return 0;
        }
        uint32_t m = (uint32_t)(((s->acc << 1) >> 1) >> (63 - j));
        if (m >= left) return fr_slow(s, c, r, left, u); /* rc_get() fails it */
        fr_skip(s, 1 + j);
        fr_zeros(s, m);
        c->intr = m && s->a <= s->n ? 2 : 1;
        if (m) {
            c->run = m - 1;
            *u = 0;
            return 0;
        }
    }
    if (!fr_rice(s, fr_k(c->a2, c->n2), &x))
        return fr_slow(s, c, r, left, u); /* resumes at the interruption */
    c->inrun = c->intr == 2;
    c->intr = 0;
    if (c->ri) c->ri--;
    c->a2 += x; /* < 2^55: no cap */
    if (++c->n2 >= RESET) {
        c->a2 >>= 1;
        c->n2 >>= 1;
    }
    *u = x + 1;
    return 0;
}

/* rc_get() with learn = 1 on the state in s and c (r holds the rest of
 * the reader for the slow path). In normal mode a code read here is below
 * 4 << k, so rc_learn()'s cap never applies. */
static inline __attribute__((always_inline)) int fr_next(frd *s, tsdb__rc *c, tsdb__br *r, uint32_t left,
                                                         uint64_t *u) {
    if (__builtin_expect(!c->inrun, 1)) {
        unsigned k = fr_k(s->a, s->n);
        unsigned q = (unsigned)__builtin_clzll(~s->acc | (1ull << (63 - QMAX)));
        unsigned len = q + 1 + k;
        if (__builtin_expect(k > 52 || q >= QMAX || len > s->nacc, 0)) return fr_slow(s, c, r, left, u);
        uint64_t x = ((uint64_t)q << k) | ((s->acc << q) >> (k ^ 63));
        fr_skip(s, len);
        s->a += x;
        if (++s->n >= RESET) {
            s->a >>= 1;
            s->n >>= 1;
        }
        if (__builtin_expect((x | k) == 0, 0)) c->inrun = 1;
        *u = x;
        return 0;
    }
    if (c->run) {
        c->run--;
        *u = 0;
        return 0;
    }
    return fr_run(s, c, r, left, u);
}

/* The timestamps of samples it->i .. it->i + b - 1 of a chunk with a
 * timestamp stream into t; 0, or 1 if the block is bad. */
KV_CLONES static int fast_ts(tsdb_chunk_it *restrict it, int64_t *restrict t, size_t b) {
    frd s;
    tsdb__rc *c = &it->tc;
    fr_in(&s, c, &it->tr);
    uint32_t left = it->n - it->i;
    int64_t prev = it->t;
    uint64_t dt = it->dt, gnext = it->gnext, rprev = it->rprev, g = it->grid, g4 = it->grid / 4;
    int bad = 0;
    if (it->tsgrid) {
        for (size_t j = 0; j < b; j++) {
            uint64_t u;
            bad |= fr_next(&s, c, &it->tr, left - (uint32_t)j, &u);
            uint64_t r = tsdb__unzz(u), mag = (r >> 63) ? 0 - r : r;
            dt = gnext + r - (uint64_t)prev;
            gnext = ((r && (r == rprev || mag > g4)) ? gnext + r : gnext) + g;
            rprev = r;
            int64_t nt = (int64_t)((uint64_t)prev + dt);
            bad |= nt <= prev;
            t[j] = prev = nt;
        }
    } else {
        for (size_t j = 0; j < b; j++) {
            uint64_t u;
            bad |= fr_next(&s, c, &it->tr, left - (uint32_t)j, &u);
            dt += tsdb__unzz(u);
            int64_t nt = (int64_t)((uint64_t)prev + dt);
            bad |= nt <= prev;
            t[j] = prev = nt;
        }
    }
    fr_out(&s, c, &it->tr);
    it->dt = dt;
    it->gnext = gnext;
    it->rprev = rprev;
    return bad | (it->tr.err != 0);
}

/* The values of samples it->i .. it->i + b - 1 into v; 0, or 1 if the
 * block is bad. */
static inline __attribute__((always_inline)) int fast_vals_t(tsdb_chunk_it *restrict it, double *restrict v,
                                                             size_t b, int order, int dd) {
    frd s;
    tsdb__rc *c = &it->vc;
    fr_in(&s, c, &it->vr);
    uint32_t nexc = 0;
    uint64_t mprev = it->mprev, dprev = it->dprev;
    const uint64_t f = it->fmul;
    const double p10 = P10[it->d];
    double amax = 0; /* the largest |m|, as a double (on the FP side) */
    double *vp = v, *const ve = v + b;
    /* left of the sample at vp: left_end + (ve - vp) */
    const uint32_t left_end = it->n - it->i - (uint32_t)b;
#define VAL_OUT(u)                                                                                           \
    do {                                                                                                     \
        uint64_t q_ = order == 1 ? tsdb__unzz(u) : dprev + tsdb__unzz(u);                                    \
        uint64_t m_ = mprev + q_ * f;                                                                        \
        dprev = q_;                                                                                          \
        mprev = m_;                                                                                          \
        double x_ = (double)(int64_t)m_, ax_ = x_ < 0 ? -x_ : x_;                                            \
        amax = ax_ > amax ? ax_ : amax;                                                                      \
        *vp++ = dd ? x_ / p10 : x_;                                                                          \
    } while (0)
    while (vp < ve) {
        /* Normal mode, the common case, in a loop of its own: while 15
         * bytes are left, runs of (left - 8) / 7 codes need no end check
         * (a code is at most 56 bits, a refill moves at most 7 bytes and
         * reads 8), and every refill leaves 56 bits or more counted. */
        while (!c->inrun && s.nacc >= 56 && s.end - s.p >= 15 && vp < ve) {
            size_t safe = (size_t)(s.end - s.p - 8) / 7, want = (size_t)(ve - vp);
            double *stop = vp + (safe < want ? safe : want);
            uint64_t acc = s.acc, a = s.a;
            const uint8_t *p = s.p;
            unsigned nacc = s.nacc;
            uint32_t n = s.n;
            int run = 0;
            while (vp < stop) {
                unsigned k = fr_k(a, n);
                unsigned q = (unsigned)__builtin_clzll(~acc | 1);
                if (__builtin_expect(q >= QMAX, 0)) break;
                if (__builtin_expect(k > 52, 0)) break;
                unsigned len = q + 1 + k;
                /* the k bits after the unary part: acc << q starts with
                 * the 0 that ends it, so its top k + 1 bits are the value
                 * (0 for k = 0), with k off the longer path */
                uint64_t x = ((acc << q) >> (k ^ 63)) | ((uint64_t)q << k);
                uint64_t w;
                acc <<= len;
                nacc -= len;
                memcpy(&w, p, 8);
                acc |= __builtin_bswap64(w) >> nacc;
                p += (nacc ^ 63) >> 3;
                nacc |= 56;
                a += x;
                if (++n >= RESET) {
                    a >>= 1;
                    n >>= 1;
                }
                VAL_OUT(x);
                if (__builtin_expect((x | k) == 0, 0)) {
                    run = 1;
                    break;
                }
            }
            s.acc = acc;
            s.a = a;
            s.p = p;
            s.nacc = nacc;
            s.n = n;
            if (run)
                c->inrun = 1;
            else if (vp < stop)
                break; /* an escape or a large k: below */
        }
        if (vp == ve) break;
        uint64_t u;
        if (__builtin_expect(fr_next(&s, c, &it->vr, left_end + (uint32_t)(ve - vp), &u), 0)) {
            *vp++ = tsdb__bitsd(u); /* an exception */
            nexc++;
            continue;
        }
        VAL_OUT(u);
    }
#undef VAL_OUT
    fr_out(&s, c, &it->vr);
    it->mprev = mprev;
    it->dprev = dprev;
    it->s += (uint32_t)b - nexc;
    /* |m| > 2^53 for some m rounds to 2^53 or more (2^53 itself, valid,
     * is left to the sample-by-sample decoder too) */
    return (amax >= TWO53) | (it->vr.err != 0);
}

KV_CLONES static int fast_vals(tsdb_chunk_it *restrict it, double *restrict v, size_t b) {
    if (it->order == 1) return it->d ? fast_vals_t(it, v, b, 1, 1) : fast_vals_t(it, v, b, 1, 0);
    return it->d ? fast_vals_t(it, v, b, 2, 1) : fast_vals_t(it, v, b, 2, 0);
}

/* The values of samples it->i .. it->i + b - 1 of a kxor chunk (Gorilla
 * XOR codes, as tsdb__xor_get) into v; 0, or 1 if the block is bad. A
 * sample takes at most 13 + 64 bits and three refills: within 24 bytes of
 * the stream's end, samples go to tsdb__xor_get() itself. */
KV_CLONES static int fast_xor(tsdb_chunk_it *restrict it, double *restrict v, size_t b) {
    frd s;
    fr_in(&s, &it->vc, &it->vr);
    uint64_t bits = it->vbits;
    unsigned lead = it->lead, trail = it->trail;
    int bad = 0;
    for (size_t j = 0; j < b; j++) {
        if (__builtin_expect(s.end - s.p < 24 || s.nacc < 56, 0)) {
            uint8_t l8 = (uint8_t)lead, t8 = (uint8_t)trail;
            fr_out(&s, &it->vc, &it->vr);
            tsdb__xor_get(&it->vr, &bits, &l8, &t8);
            fr_in(&s, &it->vc, &it->vr);
            lead = l8;
            trail = t8;
            bad |= it->vr.err != 0;
        } else if (s.acc >> 63) {
            if ((s.acc >> 62) & 1) { /* '11': a new window */
                unsigned l = (unsigned)(s.acc >> 57) & 31, sig = (unsigned)(s.acc >> 51) & 63;
                if (!sig) sig = 64;
                if (l + sig > 64) {
                    bad = 1;
                    break;
                }
                lead = l;
                trail = 64 - l - sig;
                fr_skip(&s, 13);
            } else {
                fr_skip(&s, 2);
            }
            unsigned sig = 64 - lead - trail;
            uint64_t d;
            if (sig <= 32) {
                d = s.acc >> (64 - sig);
                fr_skip(&s, sig);
            } else {
                d = s.acc >> (96 - sig); /* the first sig - 32 bits, then 32 */
                fr_skip(&s, sig - 32);
                d = d << 32 | s.acc >> 32;
                fr_skip(&s, 32);
            }
            bits ^= d << trail;
        } else {
            fr_skip(&s, 1);
        }
        v[j] = tsdb__bitsd(bits);
    }
    fr_out(&s, &it->vc, &it->vr);
    it->lead = (uint8_t)lead;
    it->trail = (uint8_t)trail;
    return bad | (it->vr.err != 0);
}

/* t[j] = t0 + (j + 1) * dt for j < b (none wrapping: checked before). */
typedef uint64_t kv_u64x4 __attribute__((vector_size(32)));
KV_CLONES static void fill_steady(int64_t *restrict t, uint64_t t0, uint64_t dt, size_t b) {
    kv_u64x4 cur = {t0 + dt, t0 + 2 * dt, t0 + 3 * dt, t0 + 4 * dt}, step = {4 * dt, 4 * dt, 4 * dt, 4 * dt};
    size_t j = 0;
    for (; j + 4 <= b; j += 4) {
        memcpy(t + j, &cur, sizeof cur);
        cur += step;
    }
    for (; j < b; j++) t[j] = (int64_t)(t0 + dt * (j + 1));
}

/* Decodes samples it->i .. it->i + cnt - 1 of a chunk other than const at a
 * steady interval into t, v, as next() would; none of them is the chunk's
 * last, it->i >= 2 and for int/dec it->s >= it->order. Returns how many;
 * fewer when a block was bad, and then *it is where that block began. */
static size_t kv_fast(tsdb_chunk_it *restrict it, int64_t *restrict t, double *restrict v, size_t cnt) {
    size_t done = 0;
    while (done < cnt) {
        size_t b = cnt - done < FBLK ? cnt - done : FBLK;
        tsdb_chunk_it save = *it;
        int bad = 0;
        if (it->regular) { /* t + dt ... t + b * dt, none wrapping */
            int64_t *tb = t + done, prev = it->t;
            uint64_t dt = it->dt, span;
            int64_t last;
            if (__builtin_mul_overflow(dt, (uint64_t)b, &span) || span > INT64_MAX ||
                __builtin_add_overflow(prev, (int64_t)span, &last))
                bad = 1;
            else
                fill_steady(tb, (uint64_t)prev, dt, b);
        } else {
            bad = fast_ts(it, t + done, b);
        }
        if (!bad) {
            if (it->vmode == TSDB_ENC_KXOR) {
                bad = fast_xor(it, v + done, b);
            } else if (it->vmode == TSDB_ENC_CONST) {
                double c = tsdb__bitsd(it->vbits);
                for (size_t j = 0; j < b; j++) v[done + j] = c;
            } else {
                bad = fast_vals(it, v + done, b);
            }
        }
        if (bad) {
            *it = save;
            break;
        }
        done += b;
        it->i += (uint32_t)b;
        it->t = t[done - 1];
        it->v = v[done - 1];
        it->vbits = tsdb__dbits(it->v);
    }
    return done;
}

/* Up to cap samples through the sample-by-sample decoder (none after an
 * error: kv_next_d() does not check it). */
static size_t kv_slow_n(tsdb_chunk_it *restrict x, int64_t *restrict t, double *restrict v, size_t cap) {
    if (x->err) return 0;
    if (x->d && (x->vmode == TSDB_ENC_DEC_DELTA || x->vmode == TSDB_ENC_DEC_DOD))
        return kv_next_n_dec(x, t, v, cap);
    size_t k = 0;
    while (k < cap && kv_next(x)) {
        t[k] = x->t;
        v[k] = x->v;
        k++;
    }
    return k;
}

/* As tsdb__xor_it_next_n. Constant chunks at a steady interval (the most
 * common kind: up/info/limit series) are generated without decoding: only
 * the last sample runs the decoder, which checks the chunk's end. Other
 * chunks go through kv_fast() but for their first two and last samples. */
size_t tsdb__kv_it_next_n(tsdb_chunk_it *it, int64_t *t, double *v, size_t cap) {
    tsdb_chunk_it x = *it;
    size_t k = 0;
    if (x.vmode == TSDB_ENC_CONST && x.regular) {
        if (x.i == 0 && k < cap && kv_next(&x)) {
            t[k] = x.t;
            v[k] = x.v;
            k++;
        }
        /* sample i (>= 1) is t_prev + dt; the decoder would fail on a
         * wrapping time, which stops this loop before it */
        double c = tsdb__bitsd(x.vbits);
        while (k < cap && !x.err && x.i >= 1 && x.i + 1 < x.n) {
            int64_t nt = (int64_t)((uint64_t)x.t + x.dt);
            if (nt <= x.t) break;
            x.t = nt;
            x.v = c;
            x.i++;
            t[k] = nt;
            v[k] = c;
            k++;
        }
    } else {
        int intdec = x.vmode >= TSDB_ENC_INT_DELTA && x.vmode <= TSDB_ENC_DEC_DOD;
        while (k < cap && !x.err && x.i + 1 < x.n) {
            if (x.i < 2 || (intdec && x.s < x.order)) { /* the samples that do not update the coders */
                size_t r = kv_slow_n(&x, t + k, v + k, 1);
                k += r;
                if (!r) break;
                continue;
            }
            size_t want = cap - k < x.n - 1 - x.i ? cap - k : x.n - 1 - x.i;
            size_t r = kv_fast(&x, t + k, v + k, want);
            k += r;
            if (r < want) { /* a bad block: sample by sample from its start */
                size_t b = want - r < FBLK ? want - r : FBLK;
                size_t r2 = kv_slow_n(&x, t + k, v + k, b);
                k += r2;
                if (r2 < b) break;
            }
        }
    }
    k += kv_slow_n(&x, t + k, v + k, cap - k);
    *it = x;
    return k;
}
