/* tests/unit/remote/decode.c -- the remote write receiver's decoder
 * (src/remote/decode.c): valid bodies and what the view holds, 2.42's
 * label rules (sorting, empty values, repeated names, empty sets, bytes
 * kept as sent), what kelvin cannot hold, exemplars / metadata / native
 * histograms counted, every error path (snappy, protobuf, each limit, at
 * and past its bound), and the round trip through remote_rx_encode.
 *
 * Bodies are protobuf written by hand here (so malformed ones can be
 * written too) and compressed with libsnappy; remote_rx_encode (the
 * generated packer) builds the round-trip bodies. Inputs are copied into
 * exactly-sized heap buffers so AddressSanitizer catches a read past the
 * end.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <snappy-c.h>

#include "base/err.h"
#include "base/num.h"
#include "remote/decode.h"

/* ---- protobuf by hand ------------------------------------------------------ */

static void varint(base_buf *b, uint64_t v) {
    while (v >= 0x80) {
        base_buf_putc(b, (char)(v | 0x80));
        v >>= 7;
    }
    base_buf_putc(b, (char)v);
}

static void fbytes(base_buf *b, unsigned field, const void *p, size_t n) {
    varint(b, (uint64_t)field << 3 | 2);
    varint(b, n);
    base_buf_append(b, p, n);
}

static void fvarint(base_buf *b, unsigned field, uint64_t v) {
    varint(b, (uint64_t)field << 3);
    varint(b, v);
}

static void fdouble(base_buf *b, unsigned field, double v) {
    varint(b, (uint64_t)field << 3 | 1);
    base_buf_append(b, &v, 8); /* little-endian hosts only, as the CI's */
}

/* A Label message as field `field` of b. */
static void label(base_buf *b, unsigned field, const char *name, size_t nn, const char *value, size_t nv) {
    base_buf m;
    base_buf_init(&m, 0);
    fbytes(&m, 1, name, nn);
    fbytes(&m, 2, value, nv);
    fbytes(b, field, m.data ? m.data : "", m.len);
    base_buf_free(&m);
}

static void labelc(base_buf *b, const char *name, const char *value) {
    label(b, 1, name, strlen(name), value, strlen(value));
}

static void sample(base_buf *b, int64_t t, double v) {
    base_buf m;
    base_buf_init(&m, 0);
    fdouble(&m, 1, v);
    fvarint(&m, 2, (uint64_t)t);
    fbytes(b, 2, m.data, m.len);
    base_buf_free(&m);
}

/* Appends a TimeSeries (its bytes in ts) as WriteRequest field 1. */
static void series(base_buf *req, const base_buf *ts) {
    fbytes(req, 1, ts->data ? ts->data : "", ts->len);
}

/* snappy(raw) in an exactly-sized heap buffer (caller frees). */
static char *compress(const base_buf *raw, size_t *ret_n) {
    size_t max = snappy_max_compressed_length(raw->len);
    char *tmp = malloc(max ? max : 1);
    assert_non_null(tmp);
    size_t n = max;
    assert_int_equal(snappy_compress(raw->data ? raw->data : "", raw->len, tmp, &n), SNAPPY_OK);
    char *out = malloc(n ? n : 1);
    assert_non_null(out);
    memcpy(out, tmp, n);
    free(tmp);
    *ret_n = n;
    return out;
}

static char *copy(const void *p, size_t n) {
    char *c = malloc(n ? n : 1);
    assert_non_null(c);
    memcpy(c, p, n);
    return c;
}

/* Decodes snappy(raw) with lim: the return code; the message in err. */
static int decode_raw(const base_buf *raw, const remote_rx_limits *lim, remote_rx_request *r, char *err,
                      size_t errlen) {
    size_t n;
    char *body = compress(raw, &n);
    int rc = remote_rx_decode(body, n, lim, r, err, errlen);
    free(body);
    return rc;
}

static void assert_labels(const labels_set *ls, const char *want) {
    base_buf b;
    base_buf_init(&b, 0);
    labels_format(ls, &b);
    assert_string_equal(b.data ? b.data : "", want);
    base_buf_free(&b);
}

static uint64_t bits(double v) {
    uint64_t u;
    memcpy(&u, &v, sizeof u);
    return u;
}

/* ---- valid bodies -------------------------------------------------------- */

static void test_valid(void **state) {
    (void)state;
    base_buf req, ts;
    base_buf_init(&req, 0);
    base_buf_init(&ts, 0);
    /* unsorted, with an empty value: sorted, the empty one dropped */
    labelc(&ts, "job", "node");
    labelc(&ts, "zone", "");
    labelc(&ts, "__name__", "up");
    labelc(&ts, "instance", "a:1");
    sample(&ts, 1000, 1);
    sample(&ts, 2000, base_stale_nan());
    sample(&ts, 1500, -0.0); /* disorder is kept: the server decides */
    series(&req, &ts);
    base_buf_reset(&ts);
    labelc(&ts, "__name__", "other");
    series(&req, &ts); /* no samples */
    remote_rx_request r;
    char err[256];
    assert_int_equal(decode_raw(&req, NULL, &r, err, sizeof err), 0);
    assert_int_equal(r.nseries, 2);
    assert_int_equal(r.nsamples, 3);
    assert_int_equal(r.decoded_bytes, req.len);
    const remote_rx_series *s = &r.series[0];
    assert_int_equal(s->err, REMOTE_RX_OK);
    assert_string_equal(s->msg, "");
    assert_labels(s->ls, "{__name__=\"up\", instance=\"a:1\", job=\"node\"}");
    assert_int_equal(s->nsamples, 3);
    assert_int_equal(s->samples[0].t, 1000);
    assert_true(s->samples[0].v == 1);
    assert_int_equal(s->samples[1].t, 2000);
    assert_true(bits(s->samples[1].v) == BASE_STALE_NAN_BITS);
    assert_int_equal(s->samples[2].t, 1500);
    assert_true(bits(s->samples[2].v) == bits(-0.0));
    assert_int_equal(r.series[1].nsamples, 0);
    assert_labels(r.series[1].ls, "{__name__=\"other\"}");
    remote_rx_free(&r);
    base_buf_free(&ts);
    base_buf_free(&req);
}

static void test_empty_request(void **state) {
    (void)state;
    base_buf req;
    base_buf_init(&req, 0);
    remote_rx_request r;
    char err[256];
    /* snappy of nothing: a valid, empty WriteRequest (2.42 answers 204) */
    assert_int_equal(decode_raw(&req, NULL, &r, err, sizeof err), 0);
    assert_int_equal(r.nseries, 0);
    assert_int_equal(r.nsamples, 0);
    remote_rx_free(&r);
    remote_rx_free(NULL);
    base_buf_free(&req);
}

/* 2.42 stores names and values as sent: no name rules, no UTF-8 check,
 * no __name__ needed. */
static void test_bytes_kept(void **state) {
    (void)state;
    base_buf req, ts;
    base_buf_init(&req, 0);
    base_buf_init(&ts, 0);
    label(&ts, 1, "a-b", 3, "\xff\x00z", 3);
    label(&ts, 1, "1x", 2, "v", 1);
    sample(&ts, -5, 2);
    series(&req, &ts);
    remote_rx_request r;
    char err[256];
    assert_int_equal(decode_raw(&req, NULL, &r, err, sizeof err), 0);
    assert_int_equal(r.series[0].err, REMOTE_RX_OK);
    assert_int_equal(labels_len(r.series[0].ls), 2);
    base_str v = labels_get(r.series[0].ls, (base_str){"a-b", 3});
    assert_int_equal(v.n, 3);
    assert_memory_equal(v.p, "\xff\x00z", 3);
    assert_int_equal(r.series[0].samples[0].t, -5);
    remote_rx_free(&r);
    base_buf_free(&ts);
    base_buf_free(&req);
}

static void test_label_errors(void **state) {
    (void)state;
    base_buf req, ts;
    base_buf_init(&req, 0);
    base_buf_init(&ts, 0);
    /* 0: repeated name, not adjacent as sent */
    labelc(&ts, "job", "a");
    labelc(&ts, "__name__", "m");
    labelc(&ts, "job", "b");
    sample(&ts, 1, 1);
    series(&req, &ts);
    /* 1: the empty one is dropped first: no duplicate */
    base_buf_reset(&ts);
    labelc(&ts, "__name__", "m");
    labelc(&ts, "job", "");
    labelc(&ts, "job", "x");
    series(&req, &ts);
    /* 2: every value empty */
    base_buf_reset(&ts);
    labelc(&ts, "a", "");
    sample(&ts, 1, 1);
    series(&req, &ts);
    /* 3: no label at all */
    base_buf_reset(&ts);
    sample(&ts, 1, 1);
    series(&req, &ts);
    /* 4: an empty name (2.42 stores it; kelvin cannot) */
    base_buf_reset(&ts);
    labelc(&ts, "__name__", "m");
    labelc(&ts, "", "v");
    series(&req, &ts);
    /* 5: two repeats: the first in sorted order is named */
    base_buf_reset(&ts);
    labelc(&ts, "z", "1");
    labelc(&ts, "b", "1");
    labelc(&ts, "z", "2");
    labelc(&ts, "b", "2");
    series(&req, &ts);
    /* 6: a repeat and an empty name: the repeat wins, as in 2.42 */
    base_buf_reset(&ts);
    labelc(&ts, "", "1");
    labelc(&ts, "q", "1");
    labelc(&ts, "q", "1");
    series(&req, &ts);
    remote_rx_request r;
    char err[256];
    assert_int_equal(decode_raw(&req, NULL, &r, err, sizeof err), 0);
    assert_int_equal(r.nseries, 7);
    assert_int_equal(r.series[0].err, REMOTE_RX_DUPLICATE);
    assert_null(r.series[0].ls);
    assert_string_equal(r.series[0].msg, "label name \"job\" is not unique: invalid sample");
    assert_int_equal(r.series[0].nsamples, 1);
    assert_int_equal(r.series[1].err, REMOTE_RX_OK);
    assert_labels(r.series[1].ls, "{__name__=\"m\", job=\"x\"}");
    assert_int_equal(r.series[2].err, REMOTE_RX_EMPTY);
    assert_string_equal(r.series[2].msg, "empty labelset: invalid sample");
    assert_null(r.series[2].ls);
    assert_int_equal(r.series[3].err, REMOTE_RX_EMPTY);
    assert_int_equal(r.series[4].err, REMOTE_RX_UNSUPPORTED);
    assert_non_null(strstr(r.series[4].msg, "empty name"));
    assert_int_equal(r.series[5].err, REMOTE_RX_DUPLICATE);
    assert_string_equal(r.series[5].msg, "label name \"b\" is not unique: invalid sample");
    assert_int_equal(r.series[6].err, REMOTE_RX_DUPLICATE);
    assert_string_equal(r.series[6].msg, "label name \"q\" is not unique: invalid sample");
    remote_rx_free(&r);
    base_buf_free(&ts);
    base_buf_free(&req);
}

static void test_too_many_labels(void **state) {
    (void)state;
    base_buf req, ts;
    base_buf_init(&req, 0);
    base_buf_init(&ts, 0);
    char name[16];
    for (int i = 0; i <= LABELS_MAX_PAIRS; i++) {
        int n = snprintf(name, sizeof name, "l%05d", i);
        label(&ts, 1, name, (size_t)n, "v", 1);
    }
    series(&req, &ts);
    base_buf_reset(&ts);
    for (int i = 0; i < LABELS_MAX_PAIRS; i++) { /* exactly the limit: fine */
        int n = snprintf(name, sizeof name, "l%05d", i);
        label(&ts, 1, name, (size_t)n, "v", 1);
    }
    series(&req, &ts);
    remote_rx_request r;
    char err[256];
    assert_int_equal(decode_raw(&req, NULL, &r, err, sizeof err), 0);
    assert_int_equal(r.series[0].err, REMOTE_RX_UNSUPPORTED);
    assert_non_null(strstr(r.series[0].msg, "more than 4096 labels"));
    assert_int_equal(r.series[1].err, REMOTE_RX_OK);
    assert_int_equal(labels_len(r.series[1].ls), LABELS_MAX_PAIRS);
    remote_rx_free(&r);
    base_buf_free(&ts);
    base_buf_free(&req);
}

/* Exemplars, metadata, native histograms (field 4) and unknown fields. */
static void test_counted_and_skipped(void **state) {
    (void)state;
    base_buf req, ts, ex, md;
    base_buf_init(&req, 0);
    base_buf_init(&ts, 0);
    base_buf_init(&ex, 0);
    base_buf_init(&md, 0);
    labelc(&ts, "__name__", "m");
    sample(&ts, 5, 1);
    labelc(&ex, "trace_id", "abc");
    fdouble(&ex, 2, 1.5);
    fvarint(&ex, 3, 5);
    fbytes(&ts, 3, ex.data, ex.len);
    fbytes(&ts, 3, ex.data, ex.len);
    fbytes(&ts, 4, "", 0);          /* a histogram */
    fbytes(&ts, 4, "\x78\x05", 2);  /* another (timestamp 5) */
    fvarint(&ts, 9, 7);             /* unknown */
    fvarint(&req, 9, 1);            /* unknown at the top */
    fbytes(&req, 2, "reserved", 8); /* the reserved field */
    series(&req, &ts);
    fvarint(&md, 1, 2);
    fbytes(&md, 2, "m", 1);
    fbytes(&md, 4, "help", 4);
    fbytes(&req, 3, md.data, md.len);
    remote_rx_request r;
    char err[256];
    assert_int_equal(decode_raw(&req, NULL, &r, err, sizeof err), 0);
    assert_int_equal(r.nseries, 1);
    assert_int_equal(r.series[0].nexemplars, 2);
    assert_int_equal(r.series[0].nhistograms, 2);
    assert_int_equal(r.nexemplars, 2);
    assert_int_equal(r.nhistograms, 2);
    assert_int_equal(r.nmetadata, 1);
    assert_int_equal(r.series[0].nsamples, 1);
    remote_rx_free(&r);
    base_buf_free(&md);
    base_buf_free(&ex);
    base_buf_free(&ts);
    base_buf_free(&req);
}

/* decode -> encode -> decode gives the same view. */
static void test_round_trip(void **state) {
    (void)state;
    base_buf req, ts;
    base_buf_init(&req, 0);
    base_buf_init(&ts, 0);
    for (int i = 0; i < 50; i++) {
        base_buf_reset(&ts);
        char v[16];
        snprintf(v, sizeof v, "%d", i);
        labelc(&ts, "gpu", v);
        labelc(&ts, "__name__", i % 2 ? "temp" : "power");
        for (int j = 0; j < i; j++) sample(&ts, (int64_t)j * 15000 - 7, (double)j / 3 - i);
        series(&req, &ts);
    }
    base_buf_reset(&ts);
    labelc(&ts, "__name__", "zero");
    sample(&ts, 1, -0.0); /* goes out as 0 (proto3 leaves zero doubles out) */
    sample(&ts, 2, base_stale_nan());
    series(&req, &ts);
    remote_rx_request a, b;
    char err[256];
    assert_int_equal(decode_raw(&req, NULL, &a, err, sizeof err), 0);
    base_buf enc;
    base_buf_init(&enc, 0);
    assert_int_equal(remote_rx_encode(&a, &enc), 0);
    char *body = copy(enc.data, enc.len);
    assert_int_equal(remote_rx_decode(body, enc.len, NULL, &b, err, sizeof err), 0);
    free(body);
    assert_int_equal(a.nseries, b.nseries);
    assert_int_equal(a.nsamples, b.nsamples);
    for (size_t i = 0; i < a.nseries; i++) {
        assert_true(labels_equal(a.series[i].ls, b.series[i].ls));
        assert_int_equal(a.series[i].nsamples, b.series[i].nsamples);
        for (size_t j = 0; j < a.series[i].nsamples; j++) {
            assert_int_equal(a.series[i].samples[j].t, b.series[i].samples[j].t);
            double v = a.series[i].samples[j].v;
            assert_true(bits(v == 0 ? 0.0 : v) == bits(b.series[i].samples[j].v));
        }
    }
    assert_true(bits(a.series[50].samples[0].v) == bits(-0.0));
    assert_true(bits(b.series[50].samples[0].v) == bits(0.0));
    assert_true(bits(b.series[50].samples[1].v) == BASE_STALE_NAN_BITS);
    remote_rx_free(&a);
    remote_rx_free(&b);
    base_buf_free(&enc);
    base_buf_free(&ts);
    base_buf_free(&req);
}

/* ---- errors ---------------------------------------------------------------- */

static void expect(const void *body, size_t n, const remote_rx_limits *lim, int want_rc,
                   const char *want_msg) {
    char *c = copy(body, n);
    remote_rx_request r;
    memset(&r, 0x5a, sizeof r); /* ret_ must stay untouched on error */
    char err[256] = "";
    int rc = remote_rx_decode(n ? c : NULL, n, lim, &r, err, sizeof err);
    free(c);
    if (rc == 0) remote_rx_free(&r);
    assert_int_equal(rc, want_rc);
    if (want_msg && !strstr(err, want_msg)) fail_msg("message %s, want %s", err, want_msg);
    if (rc != 0) {
        unsigned char *p = (unsigned char *)&r;
        for (size_t i = 0; i < sizeof r; i++) assert_int_equal(p[i], 0x5a);
    }
}

static void test_snappy_errors(void **state) {
    (void)state;
    expect("", 0, NULL, BASE_E_PARSE, "snappy: corrupt input");             /* empty body */
    expect("\xff\xff\xff", 3, NULL, BASE_E_PARSE, "snappy: corrupt input"); /* bad length varint */
    /* claims 5 bytes, holds a 3-byte literal */
    expect("\x05\x08"
           "abc",
           5, NULL, BASE_E_PARSE, "snappy: corrupt input");
    /* a valid block with trailing garbage */
    expect("\x03\x08"
           "abcX",
           6, NULL, BASE_E_PARSE, "snappy: corrupt input");
    /* a copy reaching before the start */
    expect("\x04\x00"
           "a\x01\x09",
           5, NULL, BASE_E_PARSE, "snappy: corrupt input");
    /* the length header of 2^40 bytes: not a 32-bit length */
    expect("\x80\x80\x80\x80\x80\x20\x00", 7, NULL, BASE_E_PARSE, "snappy: corrupt input");
    /* a 4 GiB - 1 length: over the decoded limit, refused before allocating */
    expect("\xff\xff\xff\xff\x0f\x00", 6, NULL, BASE_E_LIMIT, "decoded block is too large");
    /* an empty block followed by garbage */
    expect("\x00\x01", 2, NULL, BASE_E_PARSE, "snappy: corrupt input");

    base_buf req, ts;
    base_buf_init(&req, 0);
    base_buf_init(&ts, 0);
    labelc(&ts, "__name__", "m");
    sample(&ts, 1, 1);
    series(&req, &ts);
    size_t n;
    char *body = compress(&req, &n);
    for (size_t cut = 0; cut < n; cut++) /* every truncation */
        expect(body, cut, NULL, BASE_E_PARSE, NULL);
    expect(body, n, NULL, 0, NULL);
    free(body);
    base_buf_free(&ts);
    base_buf_free(&req);
}

static void test_proto_errors(void **state) {
    (void)state;
    const char *msg = "proto: cannot decode prometheus.WriteRequest";
    struct {
        const char *raw;
        size_t n;
    } bad[] = {
        {"\x0a\x05"
         "abc",
         5},                             /* length past the end */
        {"\xff\xff", 2},                 /* a key varint that never ends */
        {"\x08\x05", 2},                 /* timeseries with wire type 0 */
        {"\x0a\x02\x08\x03", 4},         /* a label with wire type 0 */
        {"\x0a\x04\x12\x02\x09\x00", 6}, /* a sample's double cut short */
        {"\x0a\x03\x0a\x01\x0a", 5},     /* a label's name length past its message */
        {"\x0b", 1},                     /* start group: unsupported wire type */
        {"\x0a", 1},                     /* key with no length */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        base_buf raw;
        base_buf_init(&raw, 0);
        base_buf_append(&raw, bad[i].raw, bad[i].n);
        size_t n;
        char *body = compress(&raw, &n);
        expect(body, n, NULL, BASE_E_PARSE, msg);
        free(body);
        base_buf_free(&raw);
    }
}

static void test_limits(void **state) {
    (void)state;
    base_buf req, ts;
    base_buf_init(&req, 0);
    base_buf_init(&ts, 0);
    for (int i = 0; i < 200; i++) {
        base_buf_reset(&ts);
        labelc(&ts, "__name__", "m");
        label(&ts, 1, "i", 1, (const char *)&i, 1);
        sample(&ts, i, i);
        series(&req, &ts);
    }
    size_t n;
    char *body = compress(&req, &n);
    remote_rx_limits lim;
    remote_rx_limits_default(&lim);
    assert_int_equal(lim.max_compressed, (size_t)32 << 20);
    assert_int_equal(lim.max_decoded, (size_t)64 << 20);
    assert_int_equal(lim.max_unpacked, (size_t)512 << 20);

    lim.max_compressed = n; /* at the bound: fine */
    expect(body, n, &lim, 0, NULL);
    lim.max_compressed = n - 1;
    expect(body, n, &lim, BASE_E_LIMIT, "compressed body of");
    remote_rx_limits_default(&lim);
    lim.max_decoded = req.len;
    expect(body, n, &lim, 0, NULL);
    lim.max_decoded = req.len - 1;
    expect(body, n, &lim, BASE_E_LIMIT, "decoded block is too large");
    remote_rx_limits_default(&lim);
    lim.max_unpacked = 4096; /* protobuf-c needs far more for 200 series */
    expect(body, n, &lim, BASE_E_LIMIT, "needs more than 4096 bytes of memory");
    lim.max_unpacked = 0;
    expect(body, n, &lim, BASE_E_LIMIT, "needs more than 0 bytes");
    free(body);

    /* crafted: 1 MiB of empty labels in one series (2 bytes each on the
     * wire, a 56-byte struct each in memory) against a 16 MiB budget */
    base_buf_reset(&ts);
    for (int i = 0; i < (1 << 19); i++) fbytes(&ts, 1, "", 0);
    base_buf_reset(&req);
    series(&req, &ts);
    body = compress(&req, &n);
    remote_rx_limits_default(&lim);
    lim.max_unpacked = (size_t)16 << 20;
    expect(body, n, &lim, BASE_E_LIMIT, "needs more than");
    free(body);
    base_buf_free(&ts);
    base_buf_free(&req);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid),           cmocka_unit_test(test_empty_request),
        cmocka_unit_test(test_bytes_kept),      cmocka_unit_test(test_label_errors),
        cmocka_unit_test(test_too_many_labels), cmocka_unit_test(test_counted_and_skipped),
        cmocka_unit_test(test_round_trip),      cmocka_unit_test(test_snappy_errors),
        cmocka_unit_test(test_proto_errors),    cmocka_unit_test(test_limits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
