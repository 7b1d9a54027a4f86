/* chunk.c -- the chunk appender and iterator (see chunk.h): argument
 * checks, dispatch to the two codecs (chunk_xor.c: Prometheus's XOR
 * chunk; chunk_kv.c: Kelvin's encodings), buffers and serialisation.
 *
 * Design: an appender writes each sample into its streams as it arrives
 * (the open chunk is already compressed in memory); cutting it writes the
 * header and the streams, after the codec has had a chance to re-code
 * them smaller (chunk_kv.c). All allocation goes through tsdb__realloc()
 * so tests can fail the Nth one.
 *
 * Invariants: a->n <= a->max; timestamps in a chunk strictly increase;
 * on any error return the appender and the output buffer are unchanged.
 */
#include "tsdb/chunk.h"

#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "tsdb/chunk_int.h"

/* ---- allocation --------------------------------------------------------- */

static long fail_after = -1;

void tsdb__chunk_fail_alloc(long n) {
    fail_after = n;
}

void *tsdb__realloc(void *p, size_t n) {
    if (fail_after == 0) return NULL;
    if (fail_after > 0) fail_after--;
    return realloc(p, n);
}

int tsdb__bw_grow(tsdb__bw *w, size_t n) {
    size_t need = (size_t)w->len + n + 8;
    if (need <= w->cap) return 0;
    if (need > TSDB__STREAM_LIMIT) return BASE_E_LIMIT;
    size_t cap = w->cap ? w->cap : 32;
    while (cap < need) cap += cap / 2 + 16;
    if (cap > TSDB__STREAM_LIMIT) cap = TSDB__STREAM_LIMIT;
    uint8_t *p = tsdb__realloc(w->buf, cap);
    if (!p) return BASE_E_NOMEM;
    w->buf = p;
    w->cap = (uint32_t)cap;
    return 0;
}

size_t tsdb__bw_emit(const tsdb__bw *w, uint64_t tail, unsigned ntail, uint8_t *out) {
    /* pending bits (< 32) then the tail (<= 32): at most 63 bits */
    unsigned nb = w->nacc + ntail;
    uint64_t bits = (w->nacc ? (w->acc & ((1ull << w->nacc) - 1)) : 0);
    bits = (bits << ntail) | (ntail ? (tail & ((1ull << ntail) - 1)) : 0);
    size_t tailbytes = (nb + 7) / 8;
    if (out) {
        if (w->len) memcpy(out, w->buf, w->len);
        uint64_t aligned = nb ? bits << (64 - nb) : 0; /* left-align, zero padding */
        for (size_t i = 0; i < tailbytes; i++) out[w->len + i] = (uint8_t)(aligned >> (56 - 8 * i));
    }
    return w->len + tailbytes;
}

/* ---- appender ----------------------------------------------------------- */

void tsdb_chunk_app_init(tsdb_chunk_app *a, unsigned max_samples, unsigned flags) {
    memset(a, 0, sizeof *a);
    if (max_samples == 0) max_samples = TSDB_CHUNK_DEFAULT_SAMPLES;
    if (max_samples > TSDB_CHUNK_MAX_SAMPLES) max_samples = TSDB_CHUNK_MAX_SAMPLES;
    a->max = max_samples;
    a->flags = flags;
    tsdb_chunk_app_reset(a);
}

void tsdb_chunk_app_free(tsdb_chunk_app *a) {
    free(a->tw.buf);
    free(a->vw.buf);
    a->tw.buf = a->vw.buf = NULL;
    a->tw.cap = a->vw.cap = 0;
    tsdb_chunk_app_reset(a);
}

void tsdb_chunk_app_reset(tsdb_chunk_app *a) {
    tsdb__bw tw = a->tw, vw = a->vw;
    uint32_t max = a->max, flags = a->flags;
    memset(a, 0, sizeof *a);
    a->max = max;
    a->flags = flags;
    a->tw.buf = tw.buf;
    a->tw.cap = tw.cap;
    a->vw.buf = vw.buf;
    a->vw.cap = vw.cap;
    a->vmode = (flags & TSDB_CHUNK_PROM_XOR) ? TSDB_ENC_XOR : TSDB_ENC_CONST;
    a->order = 1;
    a->lead = 0xff;
    a->tc.n = a->vc.n = a->tc.n2 = a->vc.n2 = 1;
    a->fmul = 1;
}

size_t tsdb_chunk_app_mem(const tsdb_chunk_app *a) {
    return (size_t)a->tw.cap + a->vw.cap;
}

int tsdb_chunk_app_append(tsdb_chunk_app *a, int64_t t, double v) {
    if (a->n && t <= a->tlast) return BASE_E_RANGE;
    if (a->n >= a->max) return BASE_E_LIMIT;
    if (a->flags & TSDB_CHUNK_PROM_XOR) return tsdb__xor_append(a, t, v);
    return tsdb__kv_append(a, t, v);
}

uint8_t tsdb_chunk_app_enc(const tsdb_chunk_app *a) {
    if (a->flags & TSDB_CHUNK_PROM_XOR) return TSDB_ENC_XOR;
    return tsdb__kv_enc(a);
}

int tsdb_chunk_app_snapshot(const tsdb_chunk_app *a, base_buf *out) {
    if (!a->n) return BASE_E_INVAL;
    int prom = (a->flags & TSDB_CHUNK_PROM_XOR) != 0;
    size_t n = prom ? tsdb__xor_size(a) : tsdb__kv_size(a);
    int err = base_buf_reserve(out, n);
    if (err) return err;
    uint8_t *p = (uint8_t *)out->data + out->len;
    if (prom)
        tsdb__xor_emit(a, p);
    else
        tsdb__kv_emit(a, p);
    out->len += n;
    out->data[out->len] = '\0';
    return 0;
}

int tsdb_chunk_app_finish(tsdb_chunk_app *a, base_buf *out) {
    if (!a->n) return BASE_E_INVAL;
    int err = (a->flags & TSDB_CHUNK_PROM_XOR) ? tsdb_chunk_app_snapshot(a, out) : tsdb__kv_finish(a, out);
    if (err) return err;
    tsdb_chunk_app_reset(a);
    return 0;
}

/* ---- iterator ----------------------------------------------------------- */

int tsdb_chunk_it_init(tsdb_chunk_it *it, const uint8_t *data, size_t len) {
    memset(it, 0, sizeof *it);
    if (len < 1) {
        it->err = BASE_E_TRUNCATED;
        return it->err;
    }
    it->enc = data[0];
    if (it->enc == TSDB_ENC_XOR)
        tsdb__xor_it_init(it, data + 1, len - 1);
    else
        tsdb__kv_it_init(it, data, len);
    if (it->err) it->n = 0;
    return it->err;
}

bool tsdb_chunk_it_next(tsdb_chunk_it *it) {
    if (it->err || it->i >= it->n) return false;
    return it->enc == TSDB_ENC_XOR ? tsdb__xor_it_next(it) : tsdb__kv_it_next(it);
}

size_t tsdb_chunk_it_next_n(tsdb_chunk_it *it, int64_t *t, double *v, size_t cap) {
    if (it->err || it->i >= it->n) return 0;
    if (cap > it->n - it->i) cap = it->n - it->i;
    return it->enc == TSDB_ENC_XOR ? tsdb__xor_it_next_n(it, t, v, cap) : tsdb__kv_it_next_n(it, t, v, cap);
}

bool tsdb_chunk_it_seek(tsdb_chunk_it *it, int64_t t) {
    if (it->err) return false;
    while (it->i == 0 || it->t < t)
        if (!tsdb_chunk_it_next(it)) return false;
    return true;
}

const char *tsdb_chunk_enc_name(uint8_t id) {
    if (id == TSDB_ENC_XOR) return "xor";
    switch (id & ~TSDB_ENC_REGULAR) {
    case TSDB_ENC_CONST: return "const";
    case TSDB_ENC_INT_DELTA: return "int-delta";
    case TSDB_ENC_INT_DOD: return "int-dod";
    case TSDB_ENC_DEC_DELTA: return "dec-delta";
    case TSDB_ENC_DEC_DOD: return "dec-dod";
    case TSDB_ENC_KXOR: return "kxor";
    default: return "?";
    }
}
