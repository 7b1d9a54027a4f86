/* tests/unit/tsdb/chunk.c -- the chunk codecs (src/tsdb/chunk*.c): exact
 * bytes of the documented examples and of a chunk written by Prometheus's
 * own Go code, bit-exact round trips of random and adversarial values (NaN
 * payloads with the stale marker, +-Inf, -0.0, denormals) and timestamps
 * (INT64_MIN to INT64_MAX, out-of-order appends rejected), one sample,
 * 65,536 samples across chunks, the encoding chosen for each kind of
 * series, truncated and corrupt input detected, seek, snapshots of an
 * open chunk, and every allocation failing in turn. Every chunk decoded
 * here is also decoded in batches (tsdb_chunk_it_next_n, at several caps)
 * and compared with the sample-by-sample iterator (batch_check), and
 * test_batch_decode does that on chunks of every encoding and size. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/buf.h"
#include "base/err.h"
#include "tsdb/chunk.h"
#include "tsdb/chunk_int.h"

/* ---- helpers ------------------------------------------------------------ */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void) { /* xorshift64* */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545f4914f6cdd1dull;
}

static double bitsd(uint64_t b) {
    double v;
    memcpy(&v, &b, sizeof v);
    return v;
}

static uint64_t dbits(double v) {
    uint64_t b;
    memcpy(&b, &v, sizeof b);
    return b;
}

/* Appends n samples to one chunk and cuts it into out (reset first). */
static void encode1(const int64_t *t, const double *v, size_t n, unsigned flags, base_buf *out) {
    tsdb_chunk_app a;
    tsdb_chunk_app_init(&a, (unsigned)(n > TSDB_CHUNK_MAX_SAMPLES ? TSDB_CHUNK_MAX_SAMPLES : n), flags);
    for (size_t i = 0; i < n; i++) assert_int_equal(tsdb_chunk_app_append(&a, t[i], v[i]), 0);
    base_buf_reset(out);
    assert_int_equal(tsdb_chunk_app_finish(&a, out), 0);
    assert_int_equal(tsdb_chunk_app_count(&a), 0);
    tsdb_chunk_app_free(&a);
}

/* ---- the batch decoder against the sample-by-sample one ------------------ */

static int64_t ref_t[TSDB_CHUNK_MAX_SAMPLES + 1], bat_t[TSDB_CHUNK_MAX_SAMPLES + 1];
static double ref_v[TSDB_CHUNK_MAX_SAMPLES + 1], bat_v[TSDB_CHUNK_MAX_SAMPLES + 1];

/* Decodes data[0..len) with tsdb_chunk_it_next() and again with
 * tsdb_chunk_it_next_n() at several caps (and at random caps mixed with
 * next() calls), and checks that every way gives the same samples bit for
 * bit, the same count and the same error, that the iterator holds the
 * last sample after each batch (unless it failed), and that nothing comes
 * after the end. Returns the count; the error goes to *ret_err. */
static size_t batch_check(const uint8_t *data, size_t len, int *ret_err) {
    tsdb_chunk_it it;
    tsdb_chunk_it_init(&it, data, len);
    size_t n = 0;
    while (tsdb_chunk_it_next(&it)) {
        assert_true(n < TSDB_CHUNK_MAX_SAMPLES);
        ref_t[n] = it.t;
        ref_v[n] = it.v;
        n++;
    }
    int err = tsdb_chunk_it_err(&it);
    static const size_t caps[] = {1, 2, 7, 255, 256, 257, TSDB_CHUNK_MAX_SAMPLES, 0 /* mixed */};
    for (size_t c = 0; c < sizeof caps / sizeof caps[0]; c++) {
        tsdb_chunk_it b;
        tsdb_chunk_it_init(&b, data, len);
        assert_int_equal(tsdb_chunk_it_next_n(&b, bat_t, bat_v, 0), 0);
        size_t k = 0;
        for (;;) {
            size_t r;
            if (!caps[c] && rnd() % 3 == 0) { /* one sample through next() */
                if (!tsdb_chunk_it_next(&b)) break;
                bat_t[k] = b.t;
                bat_v[k] = b.v;
                r = 1;
            } else {
                size_t cap = caps[c] ? caps[c] : rnd() % 40;
                if (cap > TSDB_CHUNK_MAX_SAMPLES + 1 - k) cap = TSDB_CHUNK_MAX_SAMPLES + 1 - k; /* >= 1 */
                r = tsdb_chunk_it_next_n(&b, bat_t + k, bat_v + k, cap);
                assert_true(r <= cap);
                if (!r && cap) break;
            }
            k += r;
            if (k > n)
                fail_msg("chunk %02x, %zu bytes: batch (cap %zu) gave %zu samples, next() %zu (err %d)",
                         data[0], len, caps[c], k, n, err);
            if (r && !tsdb_chunk_it_err(&b) && (b.t != bat_t[k - 1] || dbits(b.v) != dbits(bat_v[k - 1])))
                fail_msg(
                    "chunk %02x, %zu bytes, cap %zu: the iterator does not hold sample %zu (%lld %016llx, "
                    "it %lld %016llx; next() %zu samples, err %d)",
                    data[0], len, caps[c], k - 1, (long long)bat_t[k - 1],
                    (unsigned long long)dbits(bat_v[k - 1]), (long long)b.t, (unsigned long long)dbits(b.v),
                    n, err);
        }
        if (k != n || tsdb_chunk_it_err(&b) != err)
            fail_msg("chunk %02x, %zu bytes, cap %zu: batch %zu samples err %d, next() %zu err %d", data[0],
                     len, caps[c], k, tsdb_chunk_it_err(&b), n, err);
        for (size_t i = 0; i < n; i++)
            if (bat_t[i] != ref_t[i] || dbits(bat_v[i]) != dbits(ref_v[i]))
                fail_msg(
                    "chunk %02x, cap %zu, sample %zu of %zu: batch (%lld, %016llx), next() (%lld, %016llx)",
                    data[0], caps[c], i, n, (long long)bat_t[i], (unsigned long long)dbits(bat_v[i]),
                    (long long)ref_t[i], (unsigned long long)dbits(ref_v[i]));
        assert_false(tsdb_chunk_it_next(&b));
        assert_int_equal(tsdb_chunk_it_next_n(&b, bat_t, bat_v, 10), 0);
        assert_int_equal(tsdb_chunk_it_err(&b), err);
    }
    if (ret_err) *ret_err = err;
    return n;
}

/* Decodes one chunk and checks it holds exactly the n samples, bit for bit. */
static void expect_samples(const void *data, size_t len, const int64_t *t, const double *v, size_t n) {
    tsdb_chunk_it it;
    assert_int_equal(tsdb_chunk_it_init(&it, data, len), 0);
    assert_int_equal(tsdb_chunk_it_count(&it), n);
    size_t i = 0;
    while (tsdb_chunk_it_next(&it)) {
        assert_true(i < n);
        int64_t tt;
        double vv;
        tsdb_chunk_it_at(&it, &tt, &vv);
        if (tt != t[i] || dbits(vv) != dbits(v[i]))
            fail_msg("sample %zu: got (%lld, %016llx) want (%lld, %016llx)", i, (long long)tt,
                     (unsigned long long)dbits(vv), (long long)t[i], (unsigned long long)dbits(v[i]));
        i++;
    }
    assert_int_equal(tsdb_chunk_it_err(&it), 0);
    assert_int_equal(i, n);
    int err = -1;
    assert_int_equal(batch_check(data, len, &err), n);
    assert_int_equal(err, 0);
}

/* Appends all samples with chunks of at most max, cutting on
 * BASE_E_LIMIT, and checks every chunk decodes back. Returns the number of
 * chunks; the last chunk's encoding goes to *ret_enc when not NULL. */
static size_t roundtrip(const int64_t *t, const double *v, size_t n, unsigned max, unsigned flags,
                        uint8_t *ret_enc) {
    tsdb_chunk_app a;
    tsdb_chunk_app_init(&a, max, flags);
    base_buf out = BASE_BUF_INIT;
    size_t chunks = 0, start = 0;
    for (size_t i = 0; i <= n; i++) {
        int err = i < n ? tsdb_chunk_app_append(&a, t[i], v[i]) : BASE_E_LIMIT;
        if (err == 0) continue;
        assert_int_equal(err, BASE_E_LIMIT);
        if (i == n && tsdb_chunk_app_count(&a) == 0) break;
        assert_int_equal(tsdb_chunk_app_count(&a), i - start);
        base_buf_reset(&out);
        assert_int_equal(tsdb_chunk_app_finish(&a, &out), 0);
        if (flags & TSDB_CHUNK_PROM_XOR) assert_int_equal((uint8_t)out.data[0], TSDB_ENC_XOR);
        expect_samples(out.data, out.len, t + start, v + start, i - start);
        if (ret_enc) *ret_enc = (uint8_t)out.data[0];
        chunks++;
        start = i;
        if (i < n) assert_int_equal(tsdb_chunk_app_append(&a, t[i], v[i]), 0);
    }
    base_buf_free(&out);
    tsdb_chunk_app_free(&a);
    return chunks;
}

/* Both encodings, one chunk; returns the Kelvin chunk's id. */
static uint8_t roundtrip_both(const int64_t *t, const double *v, size_t n) {
    uint8_t enc = 0;
    assert_int_equal(roundtrip(t, v, n, (unsigned)n, 0, &enc), 1);
    assert_int_equal(roundtrip(t, v, n, (unsigned)n, TSDB_CHUNK_PROM_XOR, NULL), 1);
    return enc;
}

static void steady_ts(int64_t *t, size_t n, int64_t t0, int64_t step) {
    for (size_t i = 0; i < n; i++) t[i] = t0 + (int64_t)i * step;
}

/* ---- exact bytes ---------------------------------------------------------- */

static void test_xor_worked_example(void **state) {
    (void)state;
    const int64_t t[] = {1000, 16000, 31000};
    const double v[] = {1.0, 1.0, 2.5};
    const uint8_t want[] = {0x01, 0x00, 0x03, 0xd0, 0x0f, 0x3f, 0xf0, 0x00, 0x00, 0x00,
                            0x00, 0x00, 0x00, 0x98, 0x75, 0x30, 0x9b, 0xff, 0xd0};
    base_buf out = BASE_BUF_INIT;
    encode1(t, v, 3, TSDB_CHUNK_PROM_XOR, &out);
    assert_int_equal(out.len, sizeof want);
    assert_memory_equal(out.data, want, sizeof want);
    expect_samples(want, sizeof want, t, v, 3);
    base_buf_free(&out);
}

static void test_kv_worked_example(void **state) {
    (void)state;
    const int64_t t[] = {1000, 16000, 31000, 46000};
    const double v[] = {273.5, 273.25, 273.25, 274};
    const uint8_t want[] = {0x4c, 0x03, 0xd0, 0x0f, 0x98, 0x75, 0x02, 0x00,
                            0xf1, 0xd5, 0x6b, 0x3c, 0x91, 0x03, 0xe5, 0x80};
    base_buf out = BASE_BUF_INIT;
    encode1(t, v, 4, 0, &out);
    assert_int_equal(out.len, sizeof want);
    assert_memory_equal(out.data, want, sizeof want);
    expect_samples(want, sizeof want, t, v, 4);
    base_buf_free(&out);
}

/* A chunk written by Prometheus's chunkenc (Go) for ts 1234123324 + i and
 * 123535.123 + i, i < 10 (from the test data of SINTEF/rusty-chunkenc,
 * golang-tests/test.json), and a one-sample chunk that Prometheus wrote
 * with a redundant zero byte before prometheus/prometheus#14854. */
static void test_xor_prometheus_vectors(void **state) {
    (void)state;
    const uint8_t go[] = {0x01, 0x00, 0x0a, 0xf8, 0xe8, 0xf9, 0x98, 0x09, 0x40, 0xfe, 0x28, 0xf1, 0xf7, 0xce,
                          0xd9, 0x17, 0x01, 0xee, 0x2f, 0xd0, 0x50, 0xd0, 0x51, 0xd0, 0x50, 0xd0, 0x53, 0xc0};
    int64_t t[10];
    double v[10];
    for (int i = 0; i < 10; i++) {
        t[i] = 1234123324 + i;
        v[i] = 123535.123 + (double)i;
    }
    expect_samples(go, sizeof go, t, v, 10);
    base_buf out = BASE_BUF_INIT;
    encode1(t, v, 10, TSDB_CHUNK_PROM_XOR, &out);
    assert_int_equal(out.len, sizeof go);
    assert_memory_equal(out.data, go, sizeof go);

    const uint8_t old[] = {0x01, 0x00, 0x01, 0x80, 0xf4, 0xee, 0x06, 0x40, 0xc7, 0x70, 0, 0, 0, 0, 0, 0};
    const int64_t t1[] = {7200000};
    const double v1[] = {12000.0};
    expect_samples(old, sizeof old, t1, v1, 1);
    expect_samples(old, sizeof old - 1, t1, v1, 1);
    encode1(t1, v1, 1, TSDB_CHUNK_PROM_XOR, &out);
    assert_int_equal(out.len, sizeof old - 1);
    assert_memory_equal(out.data, old, sizeof old - 1);
    base_buf_free(&out);
}

/* ---- adversarial values ------------------------------------------------- */

static const uint64_t specials[] = {
    0x7ff0000000000002ull, /* Prometheus stale marker */
    0x7ff8000000000000ull, /* quiet NaN */
    0x7ff8000000000001ull, 0xfff8000000000000ull, 0x7ff0000000000001ull, 0x7fffffffffffffffull,
    0xffffffffffffffffull, 0x7ff4000000000000ull, 0xfff0000000000001ull, 0x7ff0000000000000ull, /* +Inf */
    0xfff0000000000000ull,                                                                      /* -Inf */
    0x8000000000000000ull,                                                                      /* -0.0 */
    0x0000000000000000ull,                                                                      /* +0.0 */
    0x0000000000000001ull,                                               /* smallest denormal */
    0x000fffffffffffffull,                                               /* largest denormal */
    0x8000000000000001ull, 0x800fffffffffffffull, 0x0010000000000000ull, /* DBL_MIN */
    0x7fefffffffffffffull,                                               /* DBL_MAX */
    0xffefffffffffffffull, 0x3ff0000000000000ull, 0x3fb999999999999aull, /* 0.1 */
    0x4340000000000000ull,                                               /* 2^53 */
    0x4340000000000001ull,                                               /* 2^53 + 2 */
    0xc3e0000000000000ull,                                               /* -2^63 */
    0x3fd5555555555555ull,                                               /* 1/3 */
};
#define NSPECIAL (sizeof specials / sizeof specials[0])

static void test_special_values(void **state) {
    (void)state;
    enum { N = 200 };
    int64_t t[N];
    double v[N];
    steady_ts(t, N, 1700000000000, 15000);
    /* each alone, and repeated */
    for (size_t s = 0; s < NSPECIAL; s++) {
        for (size_t i = 0; i < N; i++) v[i] = bitsd(specials[s]);
        roundtrip_both(t, v, 1);
        uint8_t enc = roundtrip_both(t, v, 7);
        assert_int_equal(enc, TSDB_ENC_CONST | TSDB_ENC_REGULAR);
    }
    /* each inside a decimal series, at the start, middle and end */
    for (size_t s = 0; s < NSPECIAL; s++) {
        for (size_t pos = 0; pos < 3; pos++) {
            for (size_t i = 0; i < 120; i++) v[i] = 200.0 + (double)(i % 17) * 0.125;
            v[pos == 0 ? 0 : pos == 1 ? 60 : 119] = bitsd(specials[s]);
            uint8_t enc = roundtrip_both(t, v, 120);
            if ((enc & ~TSDB_ENC_REGULAR) == TSDB_ENC_KXOR) /* one exception, no fallback */
                fail_msg("special %zu at %zu: kxor", s, pos);
        }
    }
    /* all of them in a row, alternating with decimals, and shuffled */
    for (size_t i = 0; i < NSPECIAL; i++) v[i] = bitsd(specials[i]);
    roundtrip_both(t, v, NSPECIAL);
    for (size_t i = 0; i < N; i++) v[i] = i % 2 ? bitsd(specials[(i / 2) % NSPECIAL]) : (double)i * 0.5;
    assert_int_equal(roundtrip_both(t, v, N) & ~TSDB_ENC_REGULAR, TSDB_ENC_KXOR);
    for (int round = 0; round < 200; round++) {
        size_t n = 1 + rnd() % N;
        for (size_t i = 0; i < n; i++) {
            uint64_t r = rnd();
            v[i] = r % 3 == 0 ? bitsd(specials[(r >> 8) % NSPECIAL]) : (double)(int64_t)(r >> 40) / 1000.0;
        }
        roundtrip_both(t, v, n);
    }
}

/* Random series of every shape: random bits, small integers, decimals,
 * counters, mixtures; random chunk sizes and timestamp gaps. */
static void test_random_roundtrip(void **state) {
    (void)state;
    enum { N = 700 };
    int64_t *t = malloc(N * sizeof *t);
    double *v = malloc(N * sizeof *v);
    assert_non_null(t);
    assert_non_null(v);
    static const unsigned maxes[] = {1, 2, 3, 7, 120, 500, TSDB_CHUNK_MAX_SAMPLES};
    for (int round = 0; round < 400; round++) {
        size_t n = 1 + rnd() % N;
        int shape = (int)(rnd() % 9), tshape = (int)(rnd() % 5);
        uint64_t tc = (uint64_t)((int64_t)rnd() >> (rnd() % 64));
        double level = (double)(int64_t)(rnd() >> 44) / 100.0;
        for (size_t i = 0; i < n; i++) {
            uint64_t r = rnd();
            switch (tshape) {
            case 0: tc += 15000; break;
            case 1: tc += 15000 + r % 11 - 5; break;
            case 2: tc += 1 + r % 100000; break;
            case 3: tc += (r & 1) ? 1 : r >> 2; break; /* huge jumps, some wrap */
            default: tc += 1 + r % 3; break;
            }
            t[i] = (int64_t)tc;
            r = rnd();
            switch (shape) {
            case 0: v[i] = bitsd(r); break;
            case 1: v[i] = (double)(r % 5); break;
            case 2: v[i] = (double)(int64_t)(r % 200001) / 1000.0 - 100; break;
            case 3:
                level += (double)(r % 1000) / 100.0;
                v[i] = level;
                break;
            case 4: v[i] = (double)i * 4000000.0 + (double)(r % 100000); break;
            case 5: v[i] = (r % 10 == 0) ? bitsd(specials[r % NSPECIAL]) : (double)(r % 1000); break;
            case 6: v[i] = (double)(int64_t)(r >> 11) * ((r & 1) ? 1 : -1); break; /* up to 2^53 */
            case 7: v[i] = (double)(int64_t)(r % 1000000) / 1e6; break;
            default: v[i] = (r % 50 == 0) ? (double)(r % 7) : v[i ? i - 1 : 0]; break;
            }
        }
        /* skip series whose timestamps wrapped around */
        int ok = 1;
        for (size_t i = 1; i < n; i++)
            if (t[i] <= t[i - 1]) ok = 0;
        if (!ok) continue;
        unsigned max = maxes[rnd() % (sizeof maxes / sizeof maxes[0])];
        roundtrip(t, v, n, max, 0, NULL);
        roundtrip(t, v, n, max, TSDB_CHUNK_PROM_XOR, NULL);
    }
    free(t);
    free(v);
}

static void test_timestamps(void **state) {
    (void)state;
    const int64_t t[] = {INT64_MIN, INT64_MIN + 1, -1, 0, 1, INT64_MAX - 1, INT64_MAX};
    const double v[] = {1, 2, 3, 4, 5, 6, 7};
    roundtrip_both(t, v, 7);
    const int64_t t2[] = {INT64_MIN, INT64_MAX};
    roundtrip_both(t2, v, 2);
    const int64_t t3[] = {0, 1, (int64_t)1 << 62, ((int64_t)1 << 62) + 1, INT64_MAX};
    roundtrip_both(t3, v, 5);

    /* out of order and duplicate timestamps are rejected, nothing changes */
    for (int prom = 0; prom < 2; prom++) {
        tsdb_chunk_app a;
        tsdb_chunk_app_init(&a, 0, prom ? TSDB_CHUNK_PROM_XOR : 0);
        assert_int_equal(tsdb_chunk_app_append(&a, 1000, 1.5), 0);
        assert_int_equal(tsdb_chunk_app_append(&a, 2000, 2.5), 0);
        assert_int_equal(tsdb_chunk_app_append(&a, 2000, 9), BASE_E_RANGE);
        assert_int_equal(tsdb_chunk_app_append(&a, 1999, 9), BASE_E_RANGE);
        assert_int_equal(tsdb_chunk_app_append(&a, INT64_MIN, 9), BASE_E_RANGE);
        assert_int_equal(tsdb_chunk_app_count(&a), 2);
        assert_int_equal(tsdb_chunk_app_maxt(&a), 2000);
        assert_int_equal(tsdb_chunk_app_append(&a, 2001, 3.5), 0);
        base_buf out = BASE_BUF_INIT;
        assert_int_equal(tsdb_chunk_app_finish(&a, &out), 0);
        const int64_t tw[] = {1000, 2000, 2001};
        const double vw[] = {1.5, 2.5, 3.5};
        expect_samples(out.data, out.len, tw, vw, 3);
        /* after a cut the next chunk may start anywhere */
        assert_int_equal(tsdb_chunk_app_append(&a, 5, 1), 0);
        base_buf_free(&out);
        tsdb_chunk_app_free(&a);
    }
}

static void test_one_sample(void **state) {
    (void)state;
    const double vals[] = {0, 1, -1, 273.456, 0.123456, 1e300, bitsd(specials[0]), -0.0, 1.0 / 3};
    for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++) {
        const int64_t ts[] = {INT64_MIN, -5, 0, 1700000000000, INT64_MAX};
        for (size_t k = 0; k < 5; k++) {
            uint8_t enc = roundtrip_both(&ts[k], &vals[i], 1);
            assert_int_equal(enc, TSDB_ENC_CONST | TSDB_ENC_REGULAR);
        }
    }
    /* two samples of each kind */
    const int64_t t[] = {100, 15100};
    const double v1[] = {3, 4}, v2[] = {3.25, 4}, v3[] = {1.0 / 3, 0.25};
    assert_int_equal(roundtrip_both(t, v1, 2), TSDB_ENC_INT_DELTA | TSDB_ENC_REGULAR);
    assert_int_equal(roundtrip_both(t, v2, 2), TSDB_ENC_DEC_DELTA | TSDB_ENC_REGULAR);
    assert_int_equal(roundtrip_both(t, v3, 2), TSDB_ENC_DEC_DELTA | TSDB_ENC_REGULAR); /* 1/3 as exception */
}

static void test_65536_samples(void **state) {
    (void)state;
    enum { N = 65536 };
    int64_t *t = malloc(N * sizeof *t);
    double *v = malloc(N * sizeof *v);
    assert_non_null(t);
    assert_non_null(v);
    int64_t tc = 1700000000000;
    for (size_t i = 0; i < N; i++) {
        tc += 15000 + (i % 97 == 0 ? 3 : 0);
        t[i] = tc;
        v[i] = (double)(i * 37 % 1000) / 10.0 + (i % 1001 == 0 ? 0.005 : 0);
    }
    v[40000] = bitsd(specials[0]);
    /* the largest chunks: 65535 samples, then the one left over */
    assert_int_equal(roundtrip(t, v, N, TSDB_CHUNK_MAX_SAMPLES, 0, NULL), 2);
    assert_int_equal(roundtrip(t, v, N, TSDB_CHUNK_MAX_SAMPLES, TSDB_CHUNK_PROM_XOR, NULL), 2);
    /* Prometheus-sized chunks */
    assert_int_equal(roundtrip(t, v, N, 0, 0, NULL), (N + 119) / 120);
    assert_int_equal(roundtrip(t, v, N, 0, TSDB_CHUNK_PROM_XOR, NULL), (N + 119) / 120);

    tsdb_chunk_app a;
    tsdb_chunk_app_init(&a, 1000000, 0); /* capped */
    for (size_t i = 0; i < TSDB_CHUNK_MAX_SAMPLES; i++)
        assert_int_equal(tsdb_chunk_app_append(&a, t[i], 1), 0);
    assert_int_equal(tsdb_chunk_app_append(&a, t[TSDB_CHUNK_MAX_SAMPLES], 1), BASE_E_LIMIT);
    tsdb_chunk_app_free(&a);
    free(t);
    free(v);
}

/* ---- encoding choice ---------------------------------------------------- */

static uint8_t enc_of(const int64_t *t, const double *v, size_t n) {
    base_buf out = BASE_BUF_INIT;
    encode1(t, v, n, 0, &out);
    expect_samples(out.data, out.len, t, v, n);
    uint8_t enc = (uint8_t)out.data[0];
    base_buf_free(&out);
    return enc;
}

static void test_encoding_choice(void **state) {
    (void)state;
    enum { N = 120 };
    int64_t t[N], tj[N];
    double v[N];
    steady_ts(t, N, 1700000000000, 15000);
    for (size_t i = 0; i < N; i++) tj[i] = t[i] + (int64_t)(rnd() % 7) - 3;
    const uint8_t R = TSDB_ENC_REGULAR;

    for (size_t i = 0; i < N; i++) v[i] = 81559; /* memory total */
    assert_int_equal(enc_of(t, v, N), TSDB_ENC_CONST | R);
    assert_int_equal(enc_of(tj, v, N), TSDB_ENC_CONST);
    for (size_t i = 0; i < N; i++) v[i] = i < 60 ? 1410 : 1395; /* SM clock */
    assert_int_equal(enc_of(t, v, N), TSDB_ENC_INT_DELTA | R);
    for (size_t i = 0; i < N; i++) v[i] = 60 + (double)((i / 10) % 3); /* temperature */
    assert_int_equal(enc_of(tj, v, N), TSDB_ENC_INT_DELTA);
    for (size_t i = 0; i < N; i++) v[i] = 5e9 + (double)i * 4000000 + (double)(rnd() % 20000); /* energy mJ */
    assert_int_equal(enc_of(t, v, N), TSDB_ENC_INT_DOD | R);
    for (size_t i = 0; i < N; i++) v[i] = (double)(250000 + (int64_t)(rnd() % 40000)) / 1000; /* power W */
    assert_int_equal(enc_of(t, v, N), TSDB_ENC_DEC_DELTA | R);
    for (size_t i = 0; i < N; i++) v[i] = (double)(1234567 + (int64_t)i * 1500 + (int64_t)(rnd() % 7)) / 100;
    assert_int_equal(enc_of(t, v, N), TSDB_ENC_DEC_DOD | R);               /* CPU seconds */
    for (size_t i = 0; i < N; i++) v[i] = (double)(rnd() % 1000000) / 1e6; /* ratio, 6 decimals */
    assert_int_equal(enc_of(t, v, N), TSDB_ENC_DEC_DELTA | R);
    for (size_t i = 0; i < N; i++) v[i] = bitsd(rnd() >> 2 | 0x3000000000000000ull); /* arbitrary doubles */
    assert_int_equal(enc_of(t, v, N), TSDB_ENC_KXOR | R);
    for (size_t i = 0; i < N; i++) v[i] = 1.0 / (double)(i + 3);
    assert_int_equal(enc_of(t, v, N), TSDB_ENC_KXOR | R);
    /* the decimal exponent grows as values need more digits */
    for (size_t i = 0; i < N; i++) v[i] = i < 40 ? 5 : i < 80 ? 5.5 : 5.125;
    assert_int_equal(enc_of(t, v, N), TSDB_ENC_DEC_DELTA | R);
    /* a series that ends with a stale marker stays decimal */
    for (size_t i = 0; i < N; i++) v[i] = (double)(250000 + (int64_t)(rnd() % 40000)) / 1000;
    v[N - 1] = bitsd(specials[0]);
    assert_int_equal(enc_of(t, v, N), TSDB_ENC_DEC_DELTA | R);
    /* too many exceptions: the chunk falls back to XOR values */
    for (size_t i = 0; i < N; i++) v[i] = i % 4 ? (double)i : bitsd(specials[i % 3]);
    assert_int_equal(enc_of(t, v, N), TSDB_ENC_KXOR | R);
    for (size_t i = 0; i < N; i++) v[i] = i % 2 ? -0.0 : 0.0;
    assert_int_equal(enc_of(t, v, N), TSDB_ENC_KXOR | R);
    /* the Prometheus flag always gives XOR */
    base_buf out = BASE_BUF_INIT;
    encode1(t, v, N, TSDB_CHUNK_PROM_XOR, &out);
    assert_int_equal((uint8_t)out.data[0], TSDB_ENC_XOR);
    base_buf_free(&out);

    /* steady timestamps cost nothing: a constant chunk stays small at any size */
    int64_t *tl = malloc(60000 * sizeof *tl);
    double *vl = malloc(60000 * sizeof *vl);
    assert_non_null(tl);
    assert_non_null(vl);
    steady_ts(tl, 60000, 1700000000000, 15000);
    for (size_t i = 0; i < 60000; i++) vl[i] = 81559;
    encode1(tl, vl, 60000, 0, &out);
    assert_true(out.len <= 16);
    for (size_t i = 0; i < 60000; i++) vl[i] = 1395 + (double)(i % 20000 == 0);
    encode1(tl, vl, 60000, 0, &out);
    assert_true(out.len < 48);
    expect_samples(out.data, out.len, tl, vl, 60000);
    base_buf_free(&out);
    free(tl);
    free(vl);

    assert_string_equal(tsdb_chunk_enc_name(TSDB_ENC_XOR), "xor");
    assert_string_equal(tsdb_chunk_enc_name(TSDB_ENC_DEC_DOD | R), "dec-dod");
    assert_string_equal(tsdb_chunk_enc_name(0x47), "?");
}

/* Reads a Kelvin chunk's header: the G bit of the timestamp stream (-1
 * when regular) and the value part's first byte (or -1); the value part's
 * offset goes to vpart_off. */
static size_t vpart_off;
static void kv_header(const uint8_t *p, size_t len, int *ret_g, int *ret_vbyte) {
    const uint8_t *end = p + len, *q = p + 1;
    uint64_t x = 0, n = 0;
    assert_int_equal(tsdb__get_uvarint(&q, end, 1, &n), 0);
    assert_int_equal(tsdb__get_uvarint(&q, end, 1, &x), 0);
    if (n >= 1) assert_int_equal(tsdb__get_uvarint(&q, end, 1, &x), 0);
    *ret_g = -1;
    if (!(p[0] & TSDB_ENC_REGULAR)) {
        assert_int_equal(tsdb__get_uvarint(&q, end, 1, &x), 0);
        *ret_g = (int)(x & 1);
        uint64_t z = 0;
        if (x & 1) assert_int_equal(tsdb__get_uvarint(&q, end, 1, &z), 0);
        q += x >> 1;
    }
    *ret_vbyte = q < end ? *q : -1;
    vpart_off = (size_t)(q - p);
}

static void test_grid_timestamps(void **state) {
    (void)state;
    enum { N = 240 };
    int64_t t[N];
    double v[N];
    for (size_t i = 0; i < N; i++) v[i] = 42;
    base_buf out = BASE_BUF_INIT;
    int g, vb;
    for (int shape = 0; shape < 8; shape++) {
        int64_t base = 1700000000000;
        for (size_t i = 0; i < N; i++) {
            int64_t off = 0;
            switch (shape) {
            case 0: off = (i % 17 == 5) ? 23 : (i % 29 == 3) ? -4 : 0; break;     /* Prometheus, aligned */
            case 1: off = (int64_t)(rnd() % 11) - 5; break;                       /* unaligned jitter */
            case 2: off = (i >= 50 ? 15000 : 0) + (i >= 100 ? 150000 : 0); break; /* missed scrapes */
            case 3: off = i >= 70 ? 7 : 0; break;                                 /* small phase shift */
            case 4: off = i == 0 ? 9 : (i % 13 == 0 ? 2 : 0); break;              /* first interval off */
            case 5: off = (int64_t)(i * i % 1000); break;                         /* no grid at all */
            case 6: off = i >= 120 ? -14000 : 0; break;                           /* big shift back */
            default: off = (int64_t)(rnd() % 3) * 7000; break;                    /* half-interval jumps */
            }
            t[i] = base + (int64_t)i * 15000 + off;
        }
        int ok = 1;
        for (size_t i = 1; i < N; i++) ok &= t[i] > t[i - 1];
        assert_true(ok);
        roundtrip_both(t, v, N);
        roundtrip(t, v, N, 7, 0, NULL);
        encode1(t, v, N, 0, &out);
        kv_header((const uint8_t *)out.data, out.len, &g, &vb);
        if (shape <= 1) {
            assert_int_equal(g, 1); /* the grid beats delta-of-delta on jitter */
            assert_true(out.len < (shape == 0 ? 64u : 180u));
        }
    }
    base_buf_free(&out);
}

static void test_factors(void **state) {
    (void)state;
    enum { N = 120 };
    int64_t t[N];
    double v[N];
    steady_ts(t, N, 1700000000000, 15000);
    base_buf out = BASE_BUF_INIT;
    int g, vb;
    /* memory in bytes moves in 4 KiB pages */
    double pages = 5000000;
    for (size_t i = 0; i < N; i++) {
        pages += (double)(int64_t)(rnd() % 601) - 300;
        v[i] = pages * 4096 + 3; /* the level need not be a multiple, the steps are */
    }
    encode1(t, v, N, 0, &out);
    expect_samples(out.data, out.len, t, v, N);
    kv_header((const uint8_t *)out.data, out.len, &g, &vb);
    assert_int_equal((uint8_t)out.data[0], TSDB_ENC_INT_DELTA | TSDB_ENC_REGULAR);
    assert_int_equal(vb, 12);
    assert_true(out.len < 24 + N * 12 / 8);
    /* steps of 1000, and a chunk whose last step breaks the factor */
    for (size_t i = 0; i < N; i++) v[i] = 1e9 + (double)((int64_t)(rnd() % 50) * 1000);
    encode1(t, v, N, 0, &out);
    kv_header((const uint8_t *)out.data, out.len, &g, &vb);
    assert_int_equal(vb, 64 + 3);
    v[N - 1] += 1;
    encode1(t, v, N, 0, &out);
    expect_samples(out.data, out.len, t, v, N);
    kv_header((const uint8_t *)out.data, out.len, &g, &vb);
    assert_int_equal(vb, 0);
    /* decimals with a factor: 0.25 steps at d = 2 -> 25 is no 2^s or 10^e; 0.5 -> 50 = 10 * 5 */
    for (size_t i = 0; i < N; i++) v[i] = 10 + (double)(rnd() % 9) * 0.5 + 0.25;
    encode1(t, v, N, 0, &out);
    expect_samples(out.data, out.len, t, v, N);
    assert_int_equal((uint8_t)out.data[0], TSDB_ENC_DEC_DELTA | TSDB_ENC_REGULAR);
    kv_header((const uint8_t *)out.data, out.len, &g, &vb);
    assert_int_equal(vb, 2);                                    /* d */
    assert_int_equal((uint8_t)out.data[vpart_off + 1], 64 + 1); /* F: steps of 50 = 10 x 5 */
    base_buf_free(&out);
}

/* ---- corrupt input ------------------------------------------------------ */

/* Iterates to the end; returns the error and checks what did come out is
 * ordered. */
static int drain(const uint8_t *p, size_t n, size_t *ret_count) {
    tsdb_chunk_it it;
    tsdb_chunk_it_init(&it, p, n);
    size_t c = 0;
    int64_t last = INT64_MIN;
    while (tsdb_chunk_it_next(&it)) {
        if (c) assert_true(it.t > last);
        last = it.t;
        c++;
        assert_true(c <= TSDB_CHUNK_MAX_SAMPLES);
    }
    assert_false(tsdb_chunk_it_next(&it));
    assert_false(tsdb_chunk_it_seek(&it, INT64_MIN) && tsdb_chunk_it_err(&it));
    int err = -1;
    assert_int_equal(batch_check(p, n, &err), c);
    assert_int_equal(err, tsdb_chunk_it_err(&it));
    if (ret_count) *ret_count = c;
    return tsdb_chunk_it_err(&it);
}

static void corrupt_one(const int64_t *t, const double *v, size_t n, unsigned flags) {
    base_buf out = BASE_BUF_INIT;
    encode1(t, v, n, flags, &out);
    const uint8_t *p = (const uint8_t *)out.data;
    size_t len = out.len;
    uint8_t *copy = malloc(len + 2);
    assert_non_null(copy);
    /* every truncation is detected */
    for (size_t k = 0; k < len; k++) {
        memcpy(copy, p, k);
        if (drain(copy, k, NULL) == 0)
            fail_msg("truncation to %zu of %zu bytes (enc %02x) not detected", k, len, p[0]);
    }
    /* trailing bytes: junk always detected, zero bytes tolerated only by xor */
    memcpy(copy, p, len);
    copy[len] = 0x01;
    assert_int_not_equal(drain(copy, len + 1, NULL), 0);
    copy[len] = 0;
    assert_int_equal(drain(copy, len + 1, NULL) == 0, p[0] == TSDB_ENC_XOR);
    /* every single bit flip decodes safely (sanitizers watch) */
    for (size_t bit = 0; bit < len * 8; bit++) {
        memcpy(copy, p, len);
        copy[bit / 8] ^= (uint8_t)(0x80 >> (bit % 8));
        drain(copy, len, NULL);
    }
    free(copy);
    base_buf_free(&out);
}

static void test_corrupt(void **state) {
    (void)state;
    enum { N = 130 };
    int64_t t[N], tj[N];
    double v[N];
    steady_ts(t, N, 1700000000000, 15000);
    for (size_t i = 0; i < N; i++) tj[i] = t[i] + (int64_t)(rnd() % 21) - 10;
    for (unsigned flags = 0; flags <= TSDB_CHUNK_PROM_XOR; flags += TSDB_CHUNK_PROM_XOR) {
        for (size_t i = 0; i < N; i++) v[i] = 42;
        corrupt_one(t, v, N, flags);
        corrupt_one(tj, v, 1, flags);
        corrupt_one(tj, v, 2, flags);
        for (size_t i = 0; i < N; i++) v[i] = (double)(i / 30);
        corrupt_one(tj, v, N, flags);
        for (size_t i = 0; i < N; i++) v[i] = 5e9 + (double)i * 4000000 + (double)(rnd() % 20000);
        corrupt_one(t, v, N, flags);
        for (size_t i = 0; i < N; i++) v[i] = (double)(250000 + (int64_t)(rnd() % 40000)) / 1000;
        v[7] = bitsd(specials[0]);
        corrupt_one(tj, v, N, flags);
        for (size_t i = 0; i < N; i++) v[i] = bitsd(rnd());
        corrupt_one(tj, v, 40, flags);
        v[0] = bitsd(specials[0]);
        corrupt_one(t, v, 1, flags);
    }

    /* hand-made bad headers */
    static const struct {
        uint8_t b[16];
        size_t n;
        int err;
    } bad[] = {
        {{0}, 0, BASE_E_TRUNCATED},
        {{0x00, 0x00, 0x00}, 3, BASE_E_PARSE},                               /* id 0 */
        {{0x47, 0x00, 0x00, 0x00}, 4, BASE_E_PARSE},                         /* unknown id */
        {{0x09, 0x00, 0x00, 0x00}, 4, BASE_E_PARSE},                         /* xor with the regular flag */
        {{0x49, 0xfe, 0xff, 0x03, 0x00, 0x00, 0x00}, 7, BASE_E_PARSE},       /* n = 65535, interval 0 */
        {{0x49, 0xff, 0xff, 0x03, 0x00, 0x01, 0x00, 0x00}, 8, BASE_E_PARSE}, /* n = 65536 */
        {{0x49, 0x01, 0x00, 0x00, 0x00, 0x00}, 6, BASE_E_PARSE},             /* interval 0 */
        {{0x49, 0x80, 0x00, 0x00, 0x00, 0x00}, 6, BASE_E_PARSE},             /* non-minimal varint */
        {{0x41, 0x00, 0x00, 0x00, 0x00}, 5, BASE_E_PARSE},                   /* irregular with n = 1 */
        {{0x41, 0x02, 0x00, 0x01, 0x09, 0x00}, 6, BASE_E_TRUNCATED},   /* stream longer than the chunk */
        {{0x49, 0x00, 0x00, 0x13, 0x00}, 5, BASE_E_PARSE},             /* d = 19 */
        {{0x49, 0x00, 0x00, 0xff, 0x00}, 5, BASE_E_TRUNCATED},         /* raw value cut */
        {{0x49, 0x00, 0x00, 0x00, 0x00, 0x00}, 6, BASE_E_PARSE},       /* trailing byte */
        {{0x4c, 0x00, 0x00, 0x00}, 4, BASE_E_PARSE},                   /* dec with d = 0 */
        {{0x01, 0x00}, 2, BASE_E_TRUNCATED},                           /* xor count cut */
        {{0x01, 0x00, 0x00, 0x05}, 4, BASE_E_PARSE},                   /* empty xor with junk */
        {{0x4a, 0x00, 0x00, 0x40, 0x00}, 5, BASE_E_PARSE},             /* factor code 64 */
        {{0x4a, 0x00, 0x00, 0x53, 0x00}, 5, BASE_E_PARSE},             /* factor code 83 */
        {{0x4a, 0x00, 0x00}, 3, BASE_E_TRUNCATED},                     /* factor missing */
        {{0x41, 0x02, 0x00, 0x01, 0x03, 0x01, 0x00}, 7, BASE_E_PARSE}, /* grid interval 0 */
        {{0x41, 0x02, 0x00, 0x01, 0x02, 0xff}, 6, BASE_E_TRUNCATED},   /* no value part */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        size_t c;
        int err = drain(bad[i].b, bad[i].n, &c);
        if (err != bad[i].err) fail_msg("bad[%zu]: err %d, want %d", i, err, bad[i].err);
        assert_int_equal(c, 0);
    }
    /* an empty xor chunk is valid */
    const uint8_t empty[] = {0x01, 0x00, 0x00};
    size_t c = 9;
    assert_int_equal(drain(empty, 3, &c), 0);
    assert_int_equal(c, 0);
    /* xor timestamps that do not increase: uvarint delta 0 */
    const uint8_t still[] = {0x01, 0x00, 0x02, 0x02, 0x3f, 0xf0, 0, 0, 0, 0, 0, 0, 0x00, 0x00};
    assert_int_equal(drain(still, sizeof still, &c), BASE_E_PARSE);
    assert_int_equal(c, 1);
    /* a tiny valid const chunk of 65535 samples: fine */
    const uint8_t many[] = {0x49, 0xfe, 0xff, 0x03, 0x00, 0x01, 0x00, 0x00};
    assert_int_equal(drain(many, sizeof many, &c), 0);
    assert_int_equal(c, 65535);
}

/* ---- the batch decoder --------------------------------------------------- */

enum { BV_SHAPES = 16, BT_SHAPES = 7 };

/* Values of every kind the encoder has a mode or a corner for. */
static void batch_values(int shape, double *v, size_t n) {
    double x = (double)(rnd() % 100);
    int64_t m = (int64_t)(rnd() % 1000000);
    for (size_t i = 0; i < n; i++) {
        uint64_t r = rnd();
        switch (shape) {
        case 0: v[i] = 42.5; break;                                             /* const */
        case 1: x += r % 10 < 6 ? 0 : (r & 16) ? 1 : -1, v[i] = x; break;       /* temperature: zero runs */
        case 2: m += 30000 * (70 + (int64_t)(r % 11)), v[i] = (double)m; break; /* energy: factor 10^4 */
        case 3: m += 2900 + (int64_t)(r % 150), v[i] = (double)m / 100; break;  /* CPU seconds: dec-dod */
        case 4: v[i] = (double)(int64_t)(r % 2000001) / 1000 - 1000; break;     /* 3 decimals, noisy */
        case 5: m += (int64_t)(r % 601) - 300, v[i] = (double)m * 4096; break;  /* pages: factor 2^12 */
        case 6: m += r % 500 == 0, v[i] = (double)m; break;                     /* long zero runs */
        case 7: v[i] = bitsd(r); break;                                         /* random bits: kxor */
        case 8: /* specials inside runs and between changes */
            x += r % 4 == 0 ? 1 : 0;
            v[i] = r % 13 == 0 ? bitsd(specials[(r >> 8) % NSPECIAL]) : x;
            break;
        case 9: /* mantissas at the edge of 2^53 */
            v[i] = (double)((int64_t)1 << 53) - (double)(r % 64) * ((r & 1) ? 1 : 2);
            if (r % 7 == 0) v[i] = -v[i];
            break;
        case 10:
            m += (r % 50 == 0) ? (int64_t)(r >> 24) : (int64_t)(r % 5), v[i] = (double)m;
            break;                                                                      /* escapes */
        case 11: v[i] = i < 3 ? bitsd(specials[r % NSPECIAL]) : (double)(i % 9); break; /* exceptions first */
        case 12: m += (int64_t)(r % 3), v[i] = (double)m / 1e15; break;                 /* 15 decimals */
        case 13: v[i] = (r % 3) ? 0 : (double)(r >> 20); break;        /* zeros and big jumps */
        case 14: v[i] = i + 1 == n ? bitsd(specials[0]) : 7; break;    /* run ended by stale */
        default: v[i] = (double)(i % 2 ? 0 : (int64_t)(r % 3)); break; /* 0/1/2 at random */
        }
    }
}

/* Timestamps: steady, jittered (grid), irregular, at the ends of int64. */
static void batch_times(int shape, int64_t *t, size_t n) {
    int64_t tc = 1700000000000 + (int64_t)(rnd() % 15000);
    for (size_t i = 0; i < n; i++) {
        uint64_t r = rnd();
        switch (shape) {
        case 0: t[i] = tc + (int64_t)i * 15000; break;
        case 1: t[i] = tc + (int64_t)i; break;
        case 2: t[i] = tc + (int64_t)i * 15000 + (int64_t)(r % 11) - 5; break;
        case 3: t[i] = tc + (int64_t)i * 30000 + (r % 40 == 0 ? 5 + (int64_t)(r % 900) : 0); break;
        case 4: tc += 1 + (int64_t)(r % 100000), t[i] = tc; break;
        case 5: t[i] = INT64_MAX - (int64_t)(n - 1 - i) * 60000; break;
        default: tc += (r & 1) ? 1 : (int64_t)(r >> 40), t[i] = tc; break;
        }
    }
}

/* A chunk's bytes with its first timestamp moved by shift (the samples
 * after it keep their intervals), into out. */
static void shift_t0(const uint8_t *p, size_t len, int64_t shift, base_buf *out) {
    const uint8_t *q = p + 1, *end = p + len;
    uint64_t n1 = 0, zt = 0;
    assert_int_equal(tsdb__get_uvarint(&q, end, 1, &n1), 0);
    assert_int_equal(tsdb__get_uvarint(&q, end, 1, &zt), 0);
    uint8_t hdr[32];
    size_t h = 0;
    hdr[h++] = p[0];
    h += tsdb__put_uvarint(hdr + h, n1);
    h += tsdb__put_uvarint(hdr + h, tsdb__zz(tsdb__unzz(zt) + (uint64_t)shift));
    base_buf_reset(out);
    base_buf_append(out, hdr, h);
    base_buf_append(out, q, (size_t)(end - q));
    assert_int_equal(out->err, 0);
}

/* tsdb_chunk_it_next_n against tsdb_chunk_it_next (batch_check) on chunks
 * of every encoding, regular and not, with exceptions, NaN payloads, zero
 * runs, escapes and factors, at every size from 1 to 300 and at block
 * edges up to 65,535; then on corrupted copies of them, and on chunks
 * whose timestamps wrap or whose mantissas pass 2^53 midway (where the
 * batch decoder must give up exactly where next() does). */
static void test_batch_decode(void **state) {
    (void)state;
    enum { N = TSDB_CHUNK_MAX_SAMPLES };
    int64_t *t = malloc(N * sizeof *t);
    double *v = malloc(N * sizeof *v);
    uint8_t *copy = malloc(1 << 20);
    assert_non_null(t);
    assert_non_null(v);
    assert_non_null(copy);
    base_buf out = BASE_BUF_INIT, out2 = BASE_BUF_INIT;
    int seen[256] = {0};
    /* every size 1..300, shapes in turn */
    for (size_t n = 1; n <= 300; n++) {
        int vs = (int)(n % BV_SHAPES), ts = (int)((n / BV_SHAPES) % BT_SHAPES);
        batch_values(vs, v, n);
        batch_times(ts, t, n);
        encode1(t, v, n, 0, &out);
        expect_samples(out.data, out.len, t, v, n);
        seen[(uint8_t)out.data[0]]++;
    }
    /* every shape with every timestamp kind, at block edges; corrupted */
    static const size_t sizes[] = {255, 256, 257, 480, 513};
    for (int vs = 0; vs < BV_SHAPES; vs++)
        for (int ts = 0; ts < BT_SHAPES; ts++)
            for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
                size_t n = sizes[si];
                batch_values(vs, v, n);
                batch_times(ts, t, n);
                for (unsigned flags = 0; flags <= TSDB_CHUNK_PROM_XOR; flags += TSDB_CHUNK_PROM_XOR) {
                    encode1(t, v, n, flags, &out);
                    expect_samples(out.data, out.len, t, v, n);
                    seen[(uint8_t)out.data[0]]++;
                    if (si) continue;
                    for (int k = 0; k < 8; k++) { /* a bit flipped */
                        memcpy(copy, out.data, out.len);
                        size_t bit = rnd() % (out.len * 8);
                        copy[bit / 8] ^= (uint8_t)(0x80 >> (bit % 8));
                        drain(copy, out.len, NULL);
                    }
                    for (int k = 0; k < 3; k++) { /* cut short, or bytes added */
                        memcpy(copy, out.data, out.len);
                        size_t cut = rnd() % out.len, more = rnd() % 9;
                        drain(copy, cut, NULL);
                        for (size_t j = 0; j < more; j++) copy[out.len + j] = (uint8_t)rnd();
                        drain(copy, out.len + more, NULL);
                    }
                }
            }
    /* the largest chunks */
    static const int big[][2] = {{1, 0}, {3, 0}, {3, 2}, {8, 2}, {4, 4}, {13, 0}};
    for (size_t b = 0; b < sizeof big / sizeof big[0]; b++) {
        batch_values(big[b][0], v, N);
        batch_times(big[b][1], t, N);
        encode1(t, v, N, 0, &out);
        expect_samples(out.data, out.len, t, v, N);
        seen[(uint8_t)out.data[0]]++;
    }
    /* every encoding came up, regular and not */
    for (unsigned id = TSDB_ENC_CONST; id <= TSDB_ENC_KXOR; id++) {
        if (!seen[id]) fail_msg("no chunk of encoding %02x", id);
        if (!seen[id | TSDB_ENC_REGULAR]) fail_msg("no chunk of encoding %02x", id | TSDB_ENC_REGULAR);
    }
    assert_true(seen[TSDB_ENC_XOR] > 0);

    /* timestamps that wrap past INT64_MAX at sample 200 of 300: steady,
     * jittered, irregular; each value kind */
    for (int ts = 0; ts < 3; ts++)
        for (int vs = 1; vs < 6; vs++) {
            size_t n = 300, c;
            batch_values(vs, v, n);
            for (size_t i = 0; i < n; i++)
                t[i] = INT64_MAX - (int64_t)(n - 1 - i) * 15000 - (ts == 1 && i % 3 ? 2 : 0) -
                       (ts == 2 ? (int64_t)(n - 1 - i) * (int64_t)(i % 7) : 0);
            encode1(t, v, n, 0, &out);
            expect_samples(out.data, out.len, t, v, n);
            int64_t shift = t[n - 1] - t[199] + 1;
            shift_t0((const uint8_t *)out.data, out.len, shift, &out2);
            assert_int_equal(drain((const uint8_t *)out2.data, out2.len, &c), BASE_E_PARSE);
            assert_true(c >= 150 && c <= 200);
        }
    /* mantissas that pass 2^53 midway: an int chunk rising from 2^52 (even
     * integers: odd ones up there are not exact mantissas) whose factor
     * byte is made 4 times larger */
    for (int order = 0; order < 2; order++) {
        size_t n = 400, c;
        int64_t walk = (int64_t)1 << 52;
        for (size_t i = 0; i < n; i++) {
            /* up and down (deltas of deltas cost more than deltas), upwards */
            walk += (i % 2 ? -((int64_t)1 << 44) + ((int64_t)1 << 43) : (int64_t)1 << 44) +
                    2 * (int64_t)(rnd() % 64);
            v[i] =
                (double)(order ? ((int64_t)1 << 52) + ((int64_t)(i * i) << 34) + 2 * (int64_t)(i % 3) : walk);
        }
        batch_times(0, t, n);
        encode1(t, v, n, 0, &out);
        expect_samples(out.data, out.len, t, v, n);
        assert_int_equal((uint8_t)out.data[0],
                         (order ? TSDB_ENC_INT_DOD : TSDB_ENC_INT_DELTA) | TSDB_ENC_REGULAR);
        int g, vb;
        kv_header((const uint8_t *)out.data, out.len, &g, &vb);
        assert_true(vb >= 1 && vb < 60); /* F: steps of 2^F */
        memcpy(copy, out.data, out.len);
        copy[vpart_off] = (uint8_t)(vb + 2);
        assert_int_equal(drain(copy, out.len, &c), BASE_E_PARSE);
        assert_true(c > 2 && c < n);
    }
    base_buf_free(&out);
    base_buf_free(&out2);
    free(copy);
    free(t);
    free(v);
}

/* ---- iteration, snapshots, allocation failures ------------------------- */

static void test_seek(void **state) {
    (void)state;
    int64_t t[10];
    double v[10];
    for (int i = 0; i < 10; i++) {
        t[i] = 10 * (i + 1);
        v[i] = i * 1.5;
    }
    for (unsigned flags = 0; flags <= TSDB_CHUNK_PROM_XOR; flags += TSDB_CHUNK_PROM_XOR) {
        base_buf out = BASE_BUF_INIT;
        encode1(t, v, 10, flags, &out);
        tsdb_chunk_it it;
        assert_int_equal(tsdb_chunk_it_init(&it, (const uint8_t *)out.data, out.len), 0);
        assert_true(tsdb_chunk_it_seek(&it, 5));
        assert_int_equal(it.t, 10);
        assert_true(tsdb_chunk_it_seek(&it, 10));
        assert_int_equal(it.t, 10);
        assert_true(tsdb_chunk_it_seek(&it, 35));
        assert_int_equal(it.t, 40);
        assert_true(dbits(it.v) == dbits(4.5));
        assert_true(tsdb_chunk_it_seek(&it, 30)); /* never backwards */
        assert_int_equal(it.t, 40);
        assert_true(tsdb_chunk_it_next(&it));
        assert_int_equal(it.t, 50);
        assert_true(tsdb_chunk_it_seek(&it, 100));
        assert_int_equal(it.t, 100);
        assert_false(tsdb_chunk_it_seek(&it, 101));
        assert_int_equal(tsdb_chunk_it_err(&it), 0);
        assert_int_equal(tsdb_chunk_it_init(&it, (const uint8_t *)out.data, out.len), 0);
        assert_false(tsdb_chunk_it_seek(&it, 1000));
        base_buf_free(&out);
    }
}

static void test_snapshot(void **state) {
    (void)state;
    enum { N = 300 };
    int64_t t[N];
    double v[N];
    int64_t tc = 0;
    for (size_t i = 0; i < N; i++) {
        tc += 1000 + (int64_t)(rnd() % 3);
        t[i] = tc;
        /* walks through const -> int -> dec(1) -> dec(3) -> exceptions -> kxor */
        v[i] = i < 20    ? 7
               : i < 60  ? (double)(i % 9)
               : i < 100 ? (double)i / 10
               : i < 150 ? (double)i / 1000
               : i < 200 ? (i % 3 ? (double)i : bitsd(specials[i % NSPECIAL]))
                         : 1.0 / (double)i;
    }
    tsdb_chunk_app a;
    tsdb_chunk_app_init(&a, N, 0);
    base_buf snap = BASE_BUF_INIT, out = BASE_BUF_INIT;
    assert_int_equal(tsdb_chunk_app_snapshot(&a, &snap), BASE_E_INVAL);
    assert_int_equal(tsdb_chunk_app_finish(&a, &out), BASE_E_INVAL);
    for (size_t i = 0; i < N; i++) {
        assert_int_equal(tsdb_chunk_app_append(&a, t[i], v[i]), 0);
        base_buf_reset(&snap);
        assert_int_equal(tsdb_chunk_app_snapshot(&a, &snap), 0);
        assert_int_equal((uint8_t)snap.data[0], tsdb_chunk_app_enc(&a));
        expect_samples(snap.data, snap.len, t, v, i + 1);
    }
    assert_true(tsdb_chunk_app_mem(&a) > 0);
    /* finishing into a full buffer fails and keeps the samples */
    base_buf small;
    base_buf_init(&small, 4);
    assert_int_equal(tsdb_chunk_app_finish(&a, &small), BASE_E_LIMIT);
    assert_int_equal(tsdb_chunk_app_count(&a), N);
    base_buf_free(&small);
    assert_int_equal(tsdb_chunk_app_finish(&a, &out), 0);
    expect_samples(out.data, out.len, t, v, N);
    base_buf_free(&snap);
    base_buf_free(&out);
    tsdb_chunk_app_free(&a);
}

/* Fails the k-th allocation for every k in turn while a chunk moves through
 * every mode; each failed call must leave the appender as it was. */
static void test_alloc_failure(void **state) {
    (void)state;
    enum { N = 200 };
    int64_t t[N];
    double v[N];
    for (size_t i = 0; i < N; i++) {
        t[i] = 1000 * (int64_t)i;
        v[i] = i < 5     ? 3
               : i < 10  ? (double)i
               : i < 15  ? (double)i / 4
               : i == 15 ? bitsd(specials[0])
               : i < 100 ? 1e9 + (double)i * 123456
                         : 1.0 / (double)i;
    }
    for (int cut = 0; cut < 2; cut++) {
        int clean = 0;
        for (long k = 0; !clean && k < 10000; k++) {
            size_t n = cut ? 100 : N; /* 100: a dec chunk that finish() rewrites as dod */
            tsdb_chunk_app a;
            tsdb_chunk_app_init(&a, N, 0);
            base_buf out = BASE_BUF_INIT;
            tsdb__chunk_fail_alloc(k);
            int failed = 0;
            for (size_t i = 0; i < n; i++) {
                int err = tsdb_chunk_app_append(&a, t[i], v[i]);
                if (err) {
                    assert_int_equal(err, BASE_E_NOMEM);
                    failed = 1;
                    tsdb__chunk_fail_alloc(-1);
                    assert_int_equal(tsdb_chunk_app_count(&a), i);
                    if (i) { /* unchanged */
                        base_buf_reset(&out);
                        assert_int_equal(tsdb_chunk_app_snapshot(&a, &out), 0);
                        expect_samples(out.data, out.len, t, v, i);
                    }
                    assert_int_equal(tsdb_chunk_app_append(&a, t[i], v[i]), 0);
                }
            }
            base_buf_reset(&out);
            int err = tsdb_chunk_app_finish(&a, &out);
            if (err) {
                assert_int_equal(err, BASE_E_NOMEM);
                failed = 1;
                tsdb__chunk_fail_alloc(-1);
                assert_int_equal(tsdb_chunk_app_count(&a), n);
                assert_int_equal(tsdb_chunk_app_finish(&a, &out), 0);
            }
            tsdb__chunk_fail_alloc(-1);
            expect_samples(out.data, out.len, t, v, n);
            if (cut && (uint8_t)out.data[0] != (TSDB_ENC_DEC_DOD | TSDB_ENC_REGULAR))
                fail_msg("k %ld: enc %02x", k, (uint8_t)out.data[0]);
            clean = !failed;
            base_buf_free(&out);
            tsdb_chunk_app_free(&a);
        }
        assert_true(clean);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_xor_worked_example),
        cmocka_unit_test(test_kv_worked_example),
        cmocka_unit_test(test_xor_prometheus_vectors),
        cmocka_unit_test(test_special_values),
        cmocka_unit_test(test_random_roundtrip),
        cmocka_unit_test(test_timestamps),
        cmocka_unit_test(test_one_sample),
        cmocka_unit_test(test_65536_samples),
        cmocka_unit_test(test_encoding_choice),
        cmocka_unit_test(test_grid_timestamps),
        cmocka_unit_test(test_factors),
        cmocka_unit_test(test_corrupt),
        cmocka_unit_test(test_batch_decode),
        cmocka_unit_test(test_seek),
        cmocka_unit_test(test_snapshot),
        cmocka_unit_test(test_alloc_failure),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
