/* chunk_xor.c -- Prometheus 2.42's XOR chunk (tsdb/chunkenc/xor.go),
 * encoding id 0x01: the baseline every Kelvin encoding is measured
 * against, and the format to exchange chunks with Prometheus.
 *
 * Layout after the id byte (bits most significant first, no alignment
 * after byte 2):
 *
 *   bytes 0-1   sample count n, big endian (0..65535)
 *   sample 0    t0 as a Go varint (zigzag LEB128), each byte as 8 bits;
 *               the value's 64 bits
 *   sample 1    t1 - t0 as a Go uvarint, each byte as 8 bits; value code
 *   sample i>=2 dod = (t[i]-t[i-1]) - (t[i-1]-t[i-2]):
 *                 '0'                 dod == 0
 *                 '10'   + 14 bits    -8191 <= dod <= 8192
 *                 '110'  + 17 bits    -65535 <= dod <= 65536
 *                 '1110' + 20 bits    -524287 <= dod <= 524288
 *                 '1111' + 64 bits    anything else
 *               (two's complement; a field above 2^(bits-1) is negative);
 *               then the value code
 *   value code  x = bits(v) ^ bits(previous v):
 *                 '0'                             x == 0
 *                 '10' + (64-L-T) bits            x >> T, reusing the
 *                                                  previous window L/T
 *                 '11' + 5 bits L + 6 bits S + S bits   new window: L
 *                      leading zeros (at most 31), S = 64-L-T significant
 *                      bits (64 written as 0), x >> T
 *   padding     zero bits to the byte
 *
 * A window is reused when x has at least as many leading and trailing
 * zeros as the last one written; the decoder starts with L = T = 0.
 *
 * Worked example (the unit test "xor_worked_example" checks these bytes):
 * (1000, 1.0), (16000, 1.0), (31000, 2.5) take 19 bytes:
 *   01                         id
 *   00 03                      n = 3
 *   d0 0f                      t0: varint zigzag(1000) = 2000
 *   3f f0 00 00 00 00 00 00    the bits of 1.0
 *   98 75                      t1 - t0 = 15000 as a uvarint
 *   30 9b ff d0                '0' (1.0 again); '0' (dod 0); then
 *                              bits(2.5) ^ bits(1.0) = 0x7ff4000000000000:
 *                              L = 1, T = 50, S = 13: '11' 00001 001101
 *                              1111111111101; 4 bits of padding
 *
 * Decoding is strict where Prometheus's appender never writes something
 * (timestamps that do not increase, L + S > 64, non-zero bits after the
 * last sample) and tolerant where Prometheus might (zero bytes after the
 * last sample, non-minimal varints).
 */
#include <string.h>

#include "base/err.h"
#include "tsdb/chunk_int.h"

static int bit_range(int64_t x, unsigned nbits) {
    int64_t hi = (int64_t)1 << (nbits - 1);
    return -(hi - 1) <= x && x <= hi;
}

int tsdb__xor_append(tsdb_chunk_app *a, int64_t t, double v) {
    int err = tsdb__bw_reserve(&a->tw, TSDB__SAMPLE_BYTES);
    if (err) return err;
    tsdb__bw *w = &a->tw;
    uint64_t vb = tsdb__dbits(v);
    uint8_t tmp[10];
    if (a->n == 0) {
        unsigned k = tsdb__put_uvarint(tmp, tsdb__zz((uint64_t)t));
        for (unsigned i = 0; i < k; i++) tsdb__bw_put(w, tmp[i], 8);
        tsdb__bw_put64(w, vb, 64);
        a->t0 = t;
    } else if (a->n == 1) {
        uint64_t d = (uint64_t)t - (uint64_t)a->tlast;
        unsigned k = tsdb__put_uvarint(tmp, d);
        for (unsigned i = 0; i < k; i++) tsdb__bw_put(w, tmp[i], 8);
        tsdb__xor_put(w, a->vlast, vb, &a->lead, &a->trail);
        a->dlast = a->dt1 = d;
    } else {
        uint64_t d = (uint64_t)t - (uint64_t)a->tlast;
        int64_t dod = (int64_t)(d - a->dlast);
        if (dod == 0) {
            tsdb__bw_put(w, 0, 1);
        } else if (bit_range(dod, 14)) {
            tsdb__bw_put(w, 2, 2);
            tsdb__bw_put(w, (uint64_t)dod, 14);
        } else if (bit_range(dod, 17)) {
            tsdb__bw_put(w, 6, 3);
            tsdb__bw_put(w, (uint64_t)dod, 17);
        } else if (bit_range(dod, 20)) {
            tsdb__bw_put(w, 14, 4);
            tsdb__bw_put(w, (uint64_t)dod, 20);
        } else {
            tsdb__bw_put(w, 15, 4);
            tsdb__bw_put64(w, (uint64_t)dod, 64);
        }
        tsdb__xor_put(w, a->vlast, vb, &a->lead, &a->trail);
        a->dlast = d;
    }
    a->tlast = t;
    a->vlast = vb;
    a->n++;
    return 0;
}

size_t tsdb__xor_size(const tsdb_chunk_app *a) {
    return 3 + tsdb__bw_emit(&a->tw, 0, 0, NULL);
}

void tsdb__xor_emit(const tsdb_chunk_app *a, uint8_t *out) {
    out[0] = TSDB_ENC_XOR;
    out[1] = (uint8_t)(a->n >> 8);
    out[2] = (uint8_t)a->n;
    tsdb__bw_emit(&a->tw, 0, 0, out + 3);
}

/* ---- iterator ----------------------------------------------------------- */

void tsdb__xor_it_init(tsdb_chunk_it *it, const uint8_t *data, size_t len) {
    if (len < 2) {
        it->err = BASE_E_TRUNCATED;
        return;
    }
    it->n = (uint32_t)data[0] << 8 | data[1];
    tsdb__br_init(&it->tr, data + 2, len - 2);
    if (it->n == 0 && !tsdb__br_at_end(&it->tr, 0)) it->err = BASE_E_PARSE;
}

/* Go's binary.ReadUvarint over bytes read as 8 bits each. */
static uint64_t bits_uvarint(tsdb__br *r) {
    uint64_t x = 0;
    for (unsigned i = 0; i < 10; i++) {
        uint64_t b = tsdb__br_get(r, 8);
        if (r->err) return 0;
        if (i == 9 && b > 1) break;
        x |= (b & 0x7f) << (7 * i);
        if (b < 0x80) return x;
    }
    tsdb__br_fail(r, BASE_E_PARSE);
    return 0;
}

static inline __attribute__((always_inline)) bool xor_next(tsdb_chunk_it *it) {
    tsdb__br *r = &it->tr;
    int64_t prev = it->t;
    if (it->i == 0) {
        it->t = (int64_t)tsdb__unzz(bits_uvarint(r));
        it->vbits = tsdb__br_get64(r, 64);
    } else {
        if (it->i == 1) {
            it->dt = bits_uvarint(r);
        } else {
            unsigned ones = tsdb__br_ones(r, 4);
            uint64_t dod = 0;
            static const unsigned size[5] = {0, 14, 17, 20, 64};
            unsigned sz = size[ones];
            if (sz == 64) {
                dod = tsdb__br_get64(r, 64);
            } else if (sz) {
                dod = tsdb__br_get(r, sz);
                if (dod > (1ull << (sz - 1))) dod -= 1ull << sz; /* wraps to the negative value */
            }
            it->dt += dod;
        }
        it->t = (int64_t)((uint64_t)prev + it->dt);
        tsdb__xor_get(r, &it->vbits, &it->lead, &it->trail);
        if (!r->err && (it->dt == 0 || it->t <= prev)) tsdb__br_fail(r, BASE_E_PARSE);
    }
    if (!r->err && it->i + 1 == it->n && !tsdb__br_at_end(r, 0)) tsdb__br_fail(r, BASE_E_PARSE);
    if (r->err) {
        it->err = r->err;
        return false;
    }
    it->v = tsdb__bitsd(it->vbits);
    it->i++;
    return true;
}

bool tsdb__xor_it_next(tsdb_chunk_it *it) {
    return xor_next(it);
}

/* The decoder inlined in a loop over a local copy of the iterator (its
 * fields stay in registers: the output arrays cannot alias a local). */
size_t tsdb__xor_it_next_n(tsdb_chunk_it *it, int64_t *t, double *v, size_t cap) {
    tsdb_chunk_it x = *it;
    size_t k = 0;
    while (k < cap && xor_next(&x)) {
        t[k] = x.t;
        v[k] = x.v;
        k++;
    }
    *it = x;
    return k;
}
