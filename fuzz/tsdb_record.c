/* fuzz/tsdb_record.c -- arbitrary bytes into the WAL record decoders
 * (src/tsdb/record.c): they must stay inside the input and either decode
 * cleanly or fail. A clean decode is encoded again (samples and OOO
 * samples records with their own encoder, which must keep the type) and
 * must decode to the same entries (encode -> decode round trip); a samples
 * record re-encoded as the other sample type must differ only in the type
 * byte. */
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
