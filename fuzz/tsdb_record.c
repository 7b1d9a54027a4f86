/* fuzz/tsdb_record.c -- arbitrary bytes into the WAL record decoders
 * (src/tsdb/record.c): they must stay inside the input and either decode
 * cleanly or fail. A clean decode is encoded again (samples and OOO
 * samples records with their own encoder, which must keep the type) and
 * must decode to the same entries (encode -> decode round trip); a samples
 * record re-encoded as the other sample type must differ only in the type
 * byte. Chunks records: every entry the decoder accepts (err == 0) must be
 * accepted by the encoder and decode again to the same chunks, open chunk
 * and buffer; entries it reports malformed are skipped, as replay does. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "labels/labels.h"
#include "tsdb/record.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAXN 4096

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    tsdb_rec_dec d;
    if (tsdb_rec_dec_init(&d, data, size)) return 0;
    base_buf out = BASE_BUF_INIT;
    int r;
    if (d.type == TSDB_REC_SAMPLES || d.type == TSDB_REC_OOO_SAMPLES) {
        static tsdb_rec_sample s[MAXN];
        size_t n = 0;
        while (n < MAXN && (r = tsdb_rec_dec_sample(&d, &s[n])) == 1) n++;
        if (n == MAXN || r < 0) return 0;
        int ooo = d.type == TSDB_REC_OOO_SAMPLES;
        if ((ooo ? tsdb_rec_enc_ooo_samples : tsdb_rec_enc_samples)(&out, s, n)) abort();
        base_buf other = BASE_BUF_INIT;
        if ((ooo ? tsdb_rec_enc_samples : tsdb_rec_enc_ooo_samples)(&other, s, n)) abort();
        if (other.len != out.len || (uint8_t)other.data[0] == (uint8_t)out.data[0] ||
            memcmp(other.data + 1, out.data + 1, out.len - 1))
            abort();
        base_buf_free(&other);
        tsdb_rec_dec d2;
        if (tsdb_rec_dec_init(&d2, (const uint8_t *)out.data, out.len) || d2.type != d.type) abort();
        tsdb_rec_sample x;
        for (size_t i = 0; i < n; i++)
            if (tsdb_rec_dec_sample(&d2, &x) != 1 || x.ref != s[i].ref || x.t != s[i].t ||
                memcmp(&x.v, &s[i].v, 8))
                abort();
        if (tsdb_rec_dec_sample(&d2, &x) != 0) abort();
    } else if (d.type == TSDB_REC_CHUNKS) {
        static tsdb_rec_chunk ch[MAXN], oc[MAXN];
        static tsdb_rec_osample ob[MAXN];
        tsdb_rec_chunks_entry e;
        while ((r = tsdb_rec_dec_chunks(&d, &e)) == 1) {
            if (e.err) continue;
            tsdb_rec_series_chunks in = {.ref = e.ref,
                                         .open_n = e.open_n,
                                         .open_t0 = e.open_t0,
                                         .open_bits = e.open_bits,
                                         .open = e.open};
            tsdb_rec_clist l = e.chunks;
            size_t n = 0;
            while (n < MAXN && tsdb_rec_clist_next(&l, &ch[n])) n++;
            if (n != e.chunks.n) abort(); /* counts are bounded by the bytes: < MAXN here */
            in.chunks = ch;
            in.nchunks = n;
            l = e.ooo;
            n = 0;
            while (n < MAXN && tsdb_rec_clist_next(&l, &oc[n])) n++;
            if (n != e.ooo.n) abort();
            in.ooo = oc;
            in.nooo = n;
            tsdb_rec_obuf b = e.buf;
            n = 0;
            while (n < MAXN && tsdb_rec_obuf_next(&b, &ob[n])) n++;
            if (n != e.buf.n) abort();
            in.buf = ob;
            in.nbuf = n;
            base_buf_reset(&out);
            base_buf one = BASE_BUF_INIT;
            if (tsdb_rec_enc_chunks_entry(&one, &in) || tsdb_rec_enc_chunks(&out, one.data, one.len, 1))
                abort();
            base_buf_free(&one);
            tsdb_rec_dec d2;
            tsdb_rec_chunks_entry e2;
            if (tsdb_rec_dec_init(&d2, (const uint8_t *)out.data, out.len) ||
                tsdb_rec_dec_chunks(&d2, &e2) != 1 || e2.err || e2.ref != e.ref || e2.open_n != e.open_n ||
                e2.chunks.n != e.chunks.n || e2.chunks.bytes != e.chunks.bytes || e2.ooo.n != e.ooo.n ||
                e2.ooo.bytes != e.ooo.bytes || e2.buf.n != e.buf.n || tsdb_rec_dec_chunks(&d2, &e2) != 0)
                abort();
            if (tsdb_rec_dec_init(&d2, (const uint8_t *)out.data, out.len) ||
                tsdb_rec_dec_chunks(&d2, &e2) != 1)
                abort();
            if (e.open_n && (e2.open_t0 != e.open_t0 || e2.open_bits != e.open_bits ||
                             memcmp(e2.open, e.open, (size_t)(e.open_bits + 7) / 8)))
                abort();
            tsdb_rec_chunk x;
            l = e2.chunks;
            for (size_t i = 0; tsdb_rec_clist_next(&l, &x); i++)
                if (x.mint != ch[i].mint || x.maxt != ch[i].maxt || x.len != ch[i].len ||
                    memcmp(x.data, ch[i].data, x.len))
                    abort();
            l = e2.ooo;
            for (size_t i = 0; tsdb_rec_clist_next(&l, &x); i++)
                if (x.mint != oc[i].mint || x.maxt != oc[i].maxt || x.len != oc[i].len ||
                    memcmp(x.data, oc[i].data, x.len))
                    abort();
            tsdb_rec_osample o;
            b = e2.buf;
            for (size_t i = 0; tsdb_rec_obuf_next(&b, &o); i++)
                if (o.t != ob[i].t || o.v != ob[i].v) abort();
        }
    } else if (d.type == TSDB_REC_TOMBSTONES) {
        static tsdb_rec_tombstone s[MAXN];
        size_t n = 0;
        while (n < MAXN && (r = tsdb_rec_dec_tombstone(&d, &s[n])) == 1) n++;
        if (n == MAXN || r < 0) return 0;
        if (tsdb_rec_enc_tombstones(&out, s, n)) abort();
        tsdb_rec_dec d2;
        tsdb_rec_tombstone x;
        if (tsdb_rec_dec_init(&d2, (const uint8_t *)out.data, out.len)) abort();
        for (size_t i = 0; i < n; i++)
            if (tsdb_rec_dec_tombstone(&d2, &x) != 1 || memcmp(&x, &s[i], sizeof x)) abort();
    } else {
        labels_builder b;
        labels_builder_init(&b);
        static tsdb_rec_series s[64];
        size_t n = 0;
        uint64_t ref;
        while ((r = tsdb_rec_dec_series(&d, &ref, &b)) == 1) {
            labels_set *ls;
            char msg[128]; /* (a NULL buffer trips clang's UBSan inside labels.c's messages) */
            if (labels_builder_finish(&b, 0, &ls, msg, sizeof msg)) continue; /* e.g. duplicate names */
            if (n < 64)
                s[n++] = (tsdb_rec_series){ref, ls};
            else
                labels_unref(ls);
        }
        if (tsdb_rec_enc_series(&out, s, n)) abort();
        tsdb_rec_dec d2;
        if (tsdb_rec_dec_init(&d2, (const uint8_t *)out.data, out.len)) abort();
        for (size_t i = 0; i < n; i++) {
            labels_set *ls;
            if (tsdb_rec_dec_series(&d2, &ref, &b) != 1 || ref != s[i].ref ||
                labels_builder_finish(&b, 0, &ls, NULL, 0)) /* valid: no message */
                abort();
            if (!labels_equal(ls, s[i].ls)) abort();
            labels_unref(ls);
        }
        for (size_t i = 0; i < n; i++) labels_unref((labels_set *)s[i].ls);
        labels_builder_free(&b);
    }
    base_buf_free(&out);
    return 0;
}
