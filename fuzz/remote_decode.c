/* fuzz/remote_decode.c -- fuzz target for the remote write receiver's
 * decoder (src/remote/decode.c), with a round trip through its encoder.
 *
 * For every input:
 *  1. decode it as a POST /api/v1/write body with the default limits: it
 *     must succeed or fail with BASE_E_PARSE / BASE_E_LIMIT / BASE_E_NOMEM
 *     and a message, never crash or leak (the replay runs under ASan);
 *     a success must be consistent: totals equal the sums over series,
 *     every series either has a label set (sorted, no empty value) and
 *     an empty message, or none and a message;
 *  2. decode it again under tight limits (the limit paths);
 *  3. the input again with a snappy block header in front, so raw bytes
 *     also reach the protobuf decoder (most fuzz inputs are not snappy);
 *  4. for a success whose series all have label sets: encode the view
 *     (remote_rx_encode), decode that, and abort() unless the same
 *     series come back: labels equal, samples' times and value bits (-0
 *     comes back as 0: proto3 leaves a zero double out, sign and all).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/err.h"
#include "remote/decode.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)                                                                                          \
    do {                                                                                                     \
        if (!(cond)) abort();                                                                                \
    } while (0)

static void check_view(const remote_rx_request *r) {
    size_t ns = 0, ne = 0, nh = 0;
    for (size_t i = 0; i < r->nseries; i++) {
        const remote_rx_series *s = &r->series[i];
        CHECK(s->msg != NULL);
        if (s->err == REMOTE_RX_OK) {
            CHECK(s->ls != NULL && s->msg[0] == '\0' && labels_len(s->ls) > 0);
            labels_iter it;
            base_str n, v, prev = {NULL, 0};
            labels_iter_init(&it, s->ls);
            while (labels_iter_next(&it, &n, &v)) {
                CHECK(n.n > 0 && v.n > 0);
                if (prev.p) {
                    size_t m = prev.n < n.n ? prev.n : n.n;
                    int c = memcmp(prev.p, n.p, m);
                    CHECK(c < 0 || (c == 0 && prev.n < n.n));
                }
                prev = n;
            }
        } else {
            CHECK(s->ls == NULL && s->msg[0] != '\0');
        }
        CHECK(s->nsamples == 0 || s->samples != NULL);
        ns += s->nsamples;
        ne += s->nexemplars;
        nh += s->nhistograms;
    }
    CHECK(ns == r->nsamples && ne == r->nexemplars && nh == r->nhistograms);
}

static int decode(const uint8_t *data, size_t size, const remote_rx_limits *lim, remote_rx_request *r) {
    char err[256] = "";
    int rc = remote_rx_decode(data, size, lim, r, err, sizeof err);
    if (rc == 0) {
        check_view(r);
    } else {
        CHECK(rc == BASE_E_PARSE || rc == BASE_E_LIMIT || rc == BASE_E_NOMEM);
        CHECK(err[0] != '\0');
    }
    return rc;
}

static void round_trip(const remote_rx_request *a) {
    for (size_t i = 0; i < a->nseries; i++)
        if (a->series[i].err != REMOTE_RX_OK) return;
    base_buf enc;
    base_buf_init(&enc, 0);
    if (remote_rx_encode(a, &enc) != 0) { /* out of memory only */
        base_buf_free(&enc);
        return;
    }
    remote_rx_request b;
    int rc = decode((const uint8_t *)(enc.data ? enc.data : ""), enc.len, NULL, &b);
    base_buf_free(&enc);
    if (rc == BASE_E_NOMEM || rc == BASE_E_LIMIT) return; /* a re-encoded body may need more memory */
    CHECK(rc == 0);
    CHECK(b.nseries == a->nseries && b.nsamples == a->nsamples);
    for (size_t i = 0; i < a->nseries; i++) {
        const remote_rx_series *x = &a->series[i], *y = &b.series[i];
        CHECK(y->err == REMOTE_RX_OK && labels_equal(x->ls, y->ls));
        CHECK(x->nsamples == y->nsamples);
        for (size_t j = 0; j < x->nsamples; j++) {
            CHECK(x->samples[j].t == y->samples[j].t);
            double v = x->samples[j].v == 0 ? 0.0 : x->samples[j].v; /* -0 goes out as 0, see decode.h */
            CHECK(memcmp(&v, &y->samples[j].v, sizeof(double)) == 0);
        }
    }
    remote_rx_free(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    remote_rx_request r;
    if (decode(data, size, NULL, &r) == 0) {
        round_trip(&r);
        remote_rx_free(&r);
    }
    remote_rx_limits tight = {.max_compressed = 256, .max_decoded = 512, .max_unpacked = 4096};
    if (decode(data, size, &tight, &r) == 0) remote_rx_free(&r);

    /* the raw bytes as an uncompressed snappy block: header + literals of
     * at most 64 KiB each (tag 61: a 2-byte length follows) */
    if (size <= ((size_t)1 << 20)) {
        base_buf b;
        base_buf_init(&b, 0);
        uint64_t n = size;
        while (n >= 0x80) {
            base_buf_putc(&b, (char)(n | 0x80));
            n >>= 7;
        }
        base_buf_putc(&b, (char)n);
        for (size_t off = 0; off < size; off += 65536) {
            size_t len = size - off < 65536 ? size - off : 65536;
            base_buf_putc(&b, (char)(61 << 2));
            base_buf_putc(&b, (char)((len - 1) & 0xff));
            base_buf_putc(&b, (char)((len - 1) >> 8));
            base_buf_append(&b, data + off, len);
        }
        if (!base_buf_err(&b) && decode((const uint8_t *)b.data, b.len, NULL, &r) == 0) {
            round_trip(&r);
            remote_rx_free(&r);
        }
        base_buf_free(&b);
    }
    return 0;
}
