/* fuzz/tsdb_chunk_decode.c -- arbitrary bytes into the chunk iterator
 * (src/tsdb/chunk*.c): it must never read outside the input (ASan),
 * never loop past the declared sample count, and only hand out strictly
 * increasing timestamps. When the input decodes cleanly, the samples are
 * encoded again with both encodings and must come back bit for bit; seek
 * must agree with next on the same bytes, and so must the batch decoder
 * (tsdb_chunk_it_next_n, chunk_kv.c's block paths) at a batch size taken
 * from the input: the same samples, count and error.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "tsdb/chunk.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void recheck(const int64_t *t, const double *v, uint32_t n, unsigned flags) {
    tsdb_chunk_app a;
    tsdb_chunk_app_init(&a, n, flags);
    for (uint32_t i = 0; i < n; i++)
        if (tsdb_chunk_app_append(&a, t[i], v[i])) abort();
    base_buf out = BASE_BUF_INIT;
    if (tsdb_chunk_app_finish(&a, &out)) abort();
    tsdb_chunk_it it;
    if (tsdb_chunk_it_init(&it, (const uint8_t *)out.data, out.len)) abort();
    uint32_t i = 0;
    while (tsdb_chunk_it_next(&it)) {
        if (i >= n || it.t != t[i] || memcmp(&it.v, &v[i], sizeof v[i])) abort();
        i++;
    }
    if (i != n || tsdb_chunk_it_err(&it)) abort();
    base_buf_free(&out);
    tsdb_chunk_app_free(&a);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    /* a copy of exactly size bytes, so ASan sees any read past the end */
    uint8_t *buf = malloc(size ? size : 1);
    if (!buf) return 0;
    memcpy(buf, data, size);
    tsdb_chunk_it it;
    tsdb_chunk_it_init(&it, buf, size);
    uint32_t n = tsdb_chunk_it_count(&it);
    int64_t *t = malloc(((size_t)n + 1) * sizeof *t);
    double *v = malloc(((size_t)n + 1) * sizeof *v);
    if (!t || !v) abort();
    uint32_t got = 0;
    while (tsdb_chunk_it_next(&it)) {
        if (got >= n) abort();
        if (got && it.t <= t[got - 1]) abort();
        t[got] = it.t;
        v[got] = it.v;
        got++;
    }
    int err = tsdb_chunk_it_err(&it);
    if (!err && got != n) abort();
    if (err && tsdb_chunk_it_next(&it)) abort(); /* sticky */

    /* the batch decoder, in batches of 1..64 samples: what next() gave */
    {
        size_t cap = size % 64 + 1, at = 0, k;
        int64_t bt[64];
        double bv[64];
        tsdb_chunk_it b;
        tsdb_chunk_it_init(&b, buf, size);
        while ((k = tsdb_chunk_it_next_n(&b, bt, bv, cap)) > 0) {
            if (at + k > got) abort();
            for (size_t i = 0; i < k; i++)
                if (bt[i] != t[at + i] || memcmp(&bv[i], &v[at + i], sizeof bv[i])) abort();
            at += k;
            if (k < cap) break;
        }
        if (at != got || tsdb_chunk_it_err(&b) != err) abort();
    }

    /* seek to a timestamp taken from the middle: the same sample as next() gave */
    if (got) {
        uint32_t k = (uint32_t)(size % got);
        tsdb_chunk_it s;
        tsdb_chunk_it_init(&s, buf, size);
        if (!tsdb_chunk_it_seek(&s, t[k]) || s.t != t[k] || memcmp(&s.v, &v[k], sizeof v[k])) abort();
    }
    if (!err && got) {
        recheck(t, v, got, 0);
        recheck(t, v, got, TSDB_CHUNK_PROM_XOR);
    }
    free(t);
    free(v);
    free(buf);
    return 0;
}
