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

/* ---- chunks records ----------------------------------------------------- */

static unsigned uvlen(uint64_t v) {
    unsigned n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

/* Checks a chunk list for the encoder and returns its bytes in a body. */
static int clist_size(const tsdb_rec_chunk *c, size_t n, uint64_t *ret) {
    uint64_t sz = uvlen(n);
    for (size_t i = 0; i < n; i++) {
        if (c[i].len == 0 || c[i].maxt < c[i].mint || (uint64_t)c[i].maxt - (uint64_t)c[i].mint > UINT32_MAX)
            return BASE_E_INVAL;
        if (i && c[i].mint <= c[i - 1].maxt) return BASE_E_INVAL;
        uint64_t dmint = i ? (uint64_t)c[i].mint - (uint64_t)c[i - 1].maxt - 1 : zz(c[i].mint);
        sz += uvlen(dmint) + uvlen((uint64_t)c[i].maxt - (uint64_t)c[i].mint) + uvlen(c[i].len) + c[i].len;
    }
    *ret = sz;
    return 0;
}

static uint8_t *clist_put(uint8_t *p, const tsdb_rec_chunk *c, size_t n) {
    p = put_uv(p, n);
    for (size_t i = 0; i < n; i++) {
        p = put_uv(p, i ? (uint64_t)c[i].mint - (uint64_t)c[i - 1].maxt - 1 : zz(c[i].mint));
        p = put_uv(p, (uint64_t)c[i].maxt - (uint64_t)c[i].mint);
        p = put_uv(p, c[i].len);
    }
    for (size_t i = 0; i < n; i++) {
        memcpy(p, c[i].data, c[i].len);
        p += c[i].len;
    }
    return p;
}

int tsdb_rec_enc_chunks_entry(base_buf *out, const tsdb_rec_series_chunks *e) {
    if (out->err) return out->err;
    uint64_t a, b, body;
    int r = clist_size(e->chunks, e->nchunks, &a);
    if (!r) r = clist_size(e->ooo, e->nooo, &b);
    if (r) return r;
    body = a + b + uvlen(e->open_n) + uvlen(e->nbuf);
    uint64_t nbytes = 0;
    if (e->open_n) {
        if (e->open_bits < 64 + 2 * ((uint64_t)e->open_n - 1) || e->open_bits > ((uint64_t)1 << 40) ||
            (e->nchunks && e->open_t0 <= e->chunks[e->nchunks - 1].maxt))
            return BASE_E_INVAL;
        nbytes = (e->open_bits + 7) / 8;
        body += uvlen(zz(e->open_t0)) + uvlen(e->open_bits) + nbytes;
    }
    for (size_t i = 0; i < e->nbuf; i++) {
        if (i && e->buf[i].t <= e->buf[i - 1].t) return BASE_E_INVAL;
        body += uvlen(i ? (uint64_t)e->buf[i].t - (uint64_t)e->buf[i - 1].t - 1 : zz(e->buf[i].t)) + 8;
    }
    if (body > SIZE_MAX / 2) return BASE_E_LIMIT;
    uint8_t *p = wbegin(out, (size_t)body + 20);
    if (!p) return base_buf_err(out) ? base_buf_err(out) : BASE_E_NOMEM;
    p = put_uv(p, e->ref);
    p = put_uv(p, body);
    p = clist_put(p, e->chunks, e->nchunks);
    p = put_uv(p, e->open_n);
    if (e->open_n) {
        p = put_uv(p, zz(e->open_t0));
        p = put_uv(p, e->open_bits);
        memcpy(p, e->open, (size_t)nbytes);
        p += nbytes;
    }
    p = clist_put(p, e->ooo, e->nooo);
    p = put_uv(p, e->nbuf);
    for (size_t i = 0; i < e->nbuf; i++) {
        p = put_uv(p, i ? (uint64_t)e->buf[i].t - (uint64_t)e->buf[i - 1].t - 1 : zz(e->buf[i].t));
        for (int k = 0; k < 8; k++) p[k] = (uint8_t)(e->buf[i].v >> (8 * k));
        p += 8;
    }
    return wend(out, p);
}

unsigned tsdb_rec_chunks_hdr(uint8_t *out, uint64_t count) {
    out[0] = TSDB_REC_CHUNKS;
    return (unsigned)(put_uv(out + 1, count) - out);
}

int tsdb_rec_enc_chunks(base_buf *out, const void *entries, size_t len, uint64_t count) {
    uint8_t hdr[11];
    base_buf_append(out, hdr, tsdb_rec_chunks_hdr(hdr, count));
    base_buf_append(out, entries, len);
    return base_buf_err(out);
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
    if (type < TSDB_REC_SERIES || type > TSDB_REC_CHUNKS) return d->err = BASE_E_PARSE;
    uint64_t n;
    if (get_uv(d, &n)) return d->err;
    /* every entry takes at least 2 bytes (10 for a sample, 6 for chunks) */
    uint64_t min = type == TSDB_REC_SAMPLES || type == TSDB_REC_OOO_SAMPLES ? 10
                   : type == TSDB_REC_SERIES                                ? 2
                   : type == TSDB_REC_CHUNKS                                ? 6
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

/* ---- reading chunks records --------------------------------------------- */

/* A varint at *p (before end): 0, BASE_E_TRUNCATED or BASE_E_PARSE. */
static int uv_at(const uint8_t **p, const uint8_t *end, uint64_t *ret) {
    uint64_t v = 0;
    const uint8_t *q = *p;
    for (unsigned shift = 0;; shift += 7) {
        if (q >= end) return BASE_E_TRUNCATED;
        uint8_t b = *q++;
        if (shift == 63 && b > 1) return BASE_E_PARSE;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) break;
        if (shift == 63) return BASE_E_PARSE;
    }
    *p = q;
    *ret = v;
    return 0;
}

/* mint of the chunk after one ending at prev (first: prev unused). */
static int next_mint(int first, int64_t prev, uint64_t dmint, int64_t *ret) {
    if (first) {
        *ret = unzz(dmint);
        return 0;
    }
    if (prev == INT64_MAX || dmint > (uint64_t)INT64_MAX - (uint64_t)prev - 1) return BASE_E_PARSE;
    *ret = (int64_t)((uint64_t)prev + 1 + dmint);
    return 0;
}

/* Parses and checks a chunk list at *p; *ret_maxt: the last chunk's maxt. */
static int clist_parse(const uint8_t **p, const uint8_t *end, tsdb_rec_clist *l, int64_t *ret_maxt) {
    uint64_t n, bytes = 0;
    int e = uv_at(p, end, &n);
    if (e) return e;
    if (n > (uint64_t)(end - *p) / 4) return BASE_E_PARSE; /* 3 bytes of meta and 1 of data each */
    memset(l, 0, sizeof *l);
    l->n = (uint32_t)n;
    l->meta = *p;
    int64_t prev = 0;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t dmint, dmax, len;
        int64_t mint;
        if ((e = uv_at(p, end, &dmint)) || (e = uv_at(p, end, &dmax)) || (e = uv_at(p, end, &len))) return e;
        if ((e = next_mint(i == 0, prev, dmint, &mint))) return e;
        if (dmax > UINT32_MAX || dmax > (uint64_t)INT64_MAX - (uint64_t)mint || len == 0) return BASE_E_PARSE;
        prev = (int64_t)((uint64_t)mint + dmax);
        bytes += len;
        if (bytes > (uint64_t)(end - *p)) return BASE_E_TRUNCATED;
    }
    if (bytes > (uint64_t)(end - *p)) return BASE_E_TRUNCATED;
    l->bytes = bytes;
    l->data = *p;
    *p += bytes;
    *ret_maxt = prev;
    return 0;
}

static int chunks_body(const uint8_t *p, const uint8_t *end, tsdb_rec_chunks_entry *r) {
    int64_t maxt = 0, x;
    uint64_t v;
    int e = clist_parse(&p, end, &r->chunks, &maxt);
    if (e || (e = uv_at(&p, end, &v))) return e;
    if (v > UINT32_MAX) return BASE_E_PARSE;
    r->open_n = (uint32_t)v;
    if (r->open_n) {
        uint64_t t0, nbits;
        if ((e = uv_at(&p, end, &t0)) || (e = uv_at(&p, end, &nbits))) return e;
        r->open_t0 = unzz(t0);
        if (nbits < 64 + 2 * ((uint64_t)r->open_n - 1) || (r->chunks.n && r->open_t0 <= maxt))
            return BASE_E_PARSE;
        if (nbits > (uint64_t)(end - p) * 8) return BASE_E_TRUNCATED;
        r->open_bits = nbits;
        r->open = p;
        p += (nbits + 7) / 8;
    }
    if ((e = clist_parse(&p, end, &r->ooo, &x)) || (e = uv_at(&p, end, &v))) return e;
    if (v > (uint64_t)(end - p) / 9) return BASE_E_PARSE;
    r->buf.n = (uint32_t)v;
    r->buf.p = p;
    int64_t prev = 0;
    for (uint64_t i = 0; i < v; i++) {
        uint64_t dt;
        if ((e = uv_at(&p, end, &dt)) || (e = next_mint(i == 0, prev, dt, &prev))) return e;
        if (end - p < 8) return BASE_E_TRUNCATED;
        p += 8;
    }
    return p == end ? 0 : BASE_E_PARSE;
}

int tsdb_rec_dec_chunks(tsdb_rec_dec *d, tsdb_rec_chunks_entry *ret) {
    if (d->err) return d->err;
    if (d->type != TSDB_REC_CHUNKS) return d->err = BASE_E_INVAL;
    if (d->left == 0) return d->p == d->end ? 0 : (d->err = BASE_E_PARSE);
    d->left--;
    uint64_t ref, blen;
    if (get_uv(d, &ref) || get_uv(d, &blen)) return d->err;
    if (blen > (uint64_t)(d->end - d->p)) return d->err = BASE_E_TRUNCATED;
    memset(ret, 0, sizeof *ret);
    ret->ref = ref;
    ret->err = chunks_body(d->p, d->p + blen, ret);
    d->p += blen;
    return 1;
}

/* Reads a varint the decoder has already checked. */
static uint64_t uv_ok(const uint8_t **p) {
    uint64_t v = 0;
    for (unsigned shift = 0;; shift += 7) {
        uint8_t b = *(*p)++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) return v;
    }
}

int tsdb_rec_clist_next(tsdb_rec_clist *l, tsdb_rec_chunk *ret) {
    if (l->i >= l->n) return 0;
    uint64_t dmint = uv_ok(&l->meta), dmax = uv_ok(&l->meta), len = uv_ok(&l->meta);
    int64_t mint = l->i ? (int64_t)((uint64_t)l->prev_maxt + 1 + dmint) : unzz(dmint);
    ret->mint = mint;
    ret->maxt = l->prev_maxt = (int64_t)((uint64_t)mint + dmax);
    ret->data = l->data + l->off;
    ret->len = (uint32_t)len;
    l->off += len;
    l->i++;
    return 1;
}

int tsdb_rec_obuf_next(tsdb_rec_obuf *b, tsdb_rec_osample *ret) {
    if (b->i >= b->n) return 0;
    uint64_t dt = uv_ok(&b->p);
    b->prev = b->i ? (int64_t)((uint64_t)b->prev + 1 + dt) : unzz(dt);
    uint64_t bits = 0;
    for (int k = 0; k < 8; k++) bits |= (uint64_t)b->p[k] << (8 * k);
    b->p += 8;
    b->i++;
    ret->t = b->prev;
    ret->v = bits;
    return 1;
}
