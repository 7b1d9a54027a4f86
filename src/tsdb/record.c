/* record.c -- WAL record codecs (format in record.h).
 *
 * Encoders reserve the worst case once and write varints straight into the
 * buffer (the samples encoder is on the append path, under the head's
 * commit lock). Decoders keep a cursor and a sticky error; every read is
 * checked against the end of the input first.
 */
#include "tsdb/record.h"

#include <string.h>

#include "base/err.h"

/* ---- writing ------------------------------------------------------------ */

static inline uint8_t *put_uv(uint8_t *p, uint64_t v) {
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}

static inline uint64_t zz(int64_t v) {
    return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}
static inline int64_t unzz(uint64_t v) {
    return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

/* Reserves room for n more bytes and returns the write pointer, or NULL. */
static uint8_t *wbegin(base_buf *out, size_t n) {
    if (base_buf_reserve(out, n + 1)) return NULL;
    return (uint8_t *)out->data + out->len;
}

static int wend(base_buf *out, const uint8_t *p) {
    out->len = (size_t)(p - (const uint8_t *)out->data);
    out->data[out->len] = '\0';
    return 0;
}

static int enc_samples(base_buf *out, uint8_t type, const tsdb_rec_sample *s, size_t n) {
    if (n > (SIZE_MAX - 32) / 28) return out->err ? out->err : BASE_E_LIMIT;
    uint8_t *p = wbegin(out, 11 + n * 28);
    if (!p) return base_buf_err(out) ? base_buf_err(out) : BASE_E_NOMEM;
    *p++ = type;
    p = put_uv(p, n);
    uint64_t prev = 0;
    int64_t t0 = n ? s[0].t : 0;
    for (size_t i = 0; i < n; i++) {
        p = put_uv(p, zz((int64_t)(s[i].ref - prev)));
        prev = s[i].ref;
        p = put_uv(p, i ? zz((int64_t)((uint64_t)s[i].t - (uint64_t)t0)) : zz(t0));
        uint64_t b;
        memcpy(&b, &s[i].v, 8);
        for (int k = 0; k < 8; k++) p[k] = (uint8_t)(b >> (8 * k));
        p += 8;
    }
    return wend(out, p);
}

int tsdb_rec_enc_samples(base_buf *out, const tsdb_rec_sample *s, size_t n) {
    return enc_samples(out, TSDB_REC_SAMPLES, s, n);
}

int tsdb_rec_enc_ooo_samples(base_buf *out, const tsdb_rec_sample *s, size_t n) {
    return enc_samples(out, TSDB_REC_OOO_SAMPLES, s, n);
}

int tsdb_rec_enc_series(base_buf *out, const tsdb_rec_series *s, size_t n) {
    uint8_t hdr[11], *h = hdr;
    *h++ = TSDB_REC_SERIES;
    h = put_uv(h, n);
    base_buf_append(out, hdr, (size_t)(h - hdr));
    for (size_t i = 0; i < n && !out->err; i++) {
        uint8_t tmp[20], *q = put_uv(tmp, s[i].ref);
        q = put_uv(q, labels_len(s[i].ls));
        base_buf_append(out, tmp, (size_t)(q - tmp));
        labels_iter it;
        base_str nm, val;
        labels_iter_init(&it, s[i].ls);
        while (labels_iter_next(&it, &nm, &val)) {
            q = put_uv(tmp, nm.n);
            base_buf_append(out, tmp, (size_t)(q - tmp));
            base_buf_append(out, nm.p, nm.n);
            q = put_uv(tmp, val.n);
            base_buf_append(out, tmp, (size_t)(q - tmp));
            base_buf_append(out, val.p, val.n);
        }
    }
    return base_buf_err(out);
}

int tsdb_rec_enc_tombstones(base_buf *out, const tsdb_rec_tombstone *s, size_t n) {
    if (n > (SIZE_MAX - 32) / 30) return out->err ? out->err : BASE_E_LIMIT;
    uint8_t *p = wbegin(out, 11 + n * 30);
    if (!p) return base_buf_err(out) ? base_buf_err(out) : BASE_E_NOMEM;
    *p++ = TSDB_REC_TOMBSTONES;
    p = put_uv(p, n);
    for (size_t i = 0; i < n; i++) {
        p = put_uv(p, s[i].ref);
        p = put_uv(p, zz(s[i].mint));
        p = put_uv(p, zz(s[i].maxt));
    }
    return wend(out, p);
}

/* ---- reading ------------------------------------------------------------ */

static int get_uv(tsdb_rec_dec *d, uint64_t *ret) {
    uint64_t v = 0;
    for (unsigned shift = 0;; shift += 7) {
        if (d->p >= d->end) return d->err = BASE_E_TRUNCATED;
        uint8_t b = *d->p++;
        if (shift == 63 && b > 1) return d->err = BASE_E_PARSE; /* over 64 bits */
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) break;
        if (shift == 63) return d->err = BASE_E_PARSE;
    }
    *ret = v;
    return 0;
}

int tsdb_rec_dec_init(tsdb_rec_dec *d, const uint8_t *data, size_t len) {
    memset(d, 0, sizeof *d);
    d->p = data;
    d->end = data + len;
    if (len == 0) return d->err = BASE_E_TRUNCATED;
    uint8_t type = *d->p++;
    if (type < TSDB_REC_SERIES || type > TSDB_REC_OOO_SAMPLES) return d->err = BASE_E_PARSE;
    uint64_t n;
    if (get_uv(d, &n)) return d->err;
    /* every entry takes at least 2 bytes (10 for a sample) */
    uint64_t min = type == TSDB_REC_SAMPLES || type == TSDB_REC_OOO_SAMPLES ? 10
                   : type == TSDB_REC_SERIES                                ? 2
                                                                            : 3;
    if (n > (uint64_t)(d->end - d->p) / min) return d->err = BASE_E_PARSE;
    d->type = type;
    d->count = d->left = n;
    return 0;
}

/* 1 if another entry of `type` follows, 0 at a clean end, <0 on error. */
static int dec_more(tsdb_rec_dec *d, uint8_t type) {
    if (d->err) return d->err;
    uint8_t have = d->type == TSDB_REC_OOO_SAMPLES ? TSDB_REC_SAMPLES : d->type;
    if (have != type) return d->err = BASE_E_INVAL;
    if (d->left == 0) return d->p == d->end ? 0 : (d->err = BASE_E_PARSE);
    d->left--;
    return 1;
}

int tsdb_rec_dec_series(tsdb_rec_dec *d, uint64_t *ret_ref, labels_builder *b) {
    int r = dec_more(d, TSDB_REC_SERIES);
    if (r <= 0) return r;
    uint64_t ref, np;
    if (get_uv(d, &ref) || get_uv(d, &np)) return d->err;
    if (np > LABELS_MAX_PAIRS || np > (uint64_t)(d->end - d->p) / 2) return d->err = BASE_E_PARSE;
    labels_builder_reset(b);
    for (uint64_t i = 0; i < np; i++) {
        base_str s[2];
        for (int k = 0; k < 2; k++) {
            uint64_t n;
            if (get_uv(d, &n)) return d->err;
            if (n > LABELS_STRING_MAX) return d->err = BASE_E_PARSE;
            if (n > (uint64_t)(d->end - d->p)) return d->err = BASE_E_TRUNCATED;
            s[k] = (base_str){(const char *)d->p, (size_t)n};
            d->p += n;
        }
        int e = labels_builder_add(b, s[0], s[1]);
        if (e) return d->err = e;
    }
    *ret_ref = ref;
    return 1;
}

int tsdb_rec_dec_sample(tsdb_rec_dec *d, tsdb_rec_sample *ret) {
    int r = dec_more(d, TSDB_REC_SAMPLES);
    if (r <= 0) return r;
    uint64_t dref, dt;
    if (get_uv(d, &dref) || get_uv(d, &dt)) return d->err;
    if (d->end - d->p < 8) return d->err = BASE_E_TRUNCATED;
    uint64_t bits = 0;
    for (int k = 0; k < 8; k++) bits |= (uint64_t)d->p[k] << (8 * k);
    d->p += 8;
    uint64_t ref = d->prev_ref + (uint64_t)unzz(dref);
    int64_t t;
    if (d->left + 1 == d->count) {
        t = d->t0 = unzz(dt);
    } else {
        t = (int64_t)((uint64_t)d->t0 + (uint64_t)unzz(dt));
    }
    d->prev_ref = ref;
    ret->ref = ref;
    ret->t = t;
    memcpy(&ret->v, &bits, 8);
    return 1;
}

int tsdb_rec_dec_tombstone(tsdb_rec_dec *d, tsdb_rec_tombstone *ret) {
    int r = dec_more(d, TSDB_REC_TOMBSTONES);
    if (r <= 0) return r;
    uint64_t ref, a, b;
    if (get_uv(d, &ref) || get_uv(d, &a) || get_uv(d, &b)) return d->err;
    ret->ref = ref;
    ret->mint = unzz(a);
    ret->maxt = unzz(b);
    return 1;
}
