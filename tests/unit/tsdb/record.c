/* tests/unit/tsdb/record.c -- WAL record codecs (src/tsdb/record.c):
 * round trips of series, samples (adversarial refs, timestamps and value
 * bit patterns, the stale marker) and tombstones; every truncation of a
 * valid record is detected; trailing bytes, bad types, impossible counts
 * and over-long varints are rejected. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "base/err.h"
#include "labels/labels.h"
#include "tsdb/record.h"

static uint64_t rs = 0x1234567887654321ull;
static uint64_t rnd(void) {
    rs ^= rs >> 12;
    rs ^= rs << 25;
    rs ^= rs >> 27;
    return rs * 0x2545f4914f6cdd1dull;
}

static void test_samples_roundtrip(void **st) {
    (void)st;
    enum { N = 1000 };
    static tsdb_rec_sample in[N];
    static const uint64_t pats[] = {
        0x7ff0000000000002ull, 0x7ff8000000000001ull, 0xfff0000000000000ull, 0x8000000000000000ull, 1,
        0x7fefffffffffffffull};
    for (int i = 0; i < N; i++) {
        in[i].ref = i % 7 == 0 ? rnd() : (uint64_t)i;
        in[i].t = i % 5 == 0 ? (int64_t)rnd() : i % 11 == 0 ? INT64_MIN : 1700000000000 + i;
        uint64_t b = i % 3 == 0 ? pats[i % 6] : rnd();
        memcpy(&in[i].v, &b, 8);
    }
    for (size_t n = 0; n <= N; n = n ? n * 3 : 1) {
        base_buf b = BASE_BUF_INIT;
        assert_int_equal(tsdb_rec_enc_samples(&b, in, n), 0);
        tsdb_rec_dec d;
        assert_int_equal(tsdb_rec_dec_init(&d, (const uint8_t *)b.data, b.len), 0);
        assert_int_equal(d.type, TSDB_REC_SAMPLES);
        assert_int_equal(d.count, n);
        tsdb_rec_sample s;
        size_t k = 0;
        int r;
        while ((r = tsdb_rec_dec_sample(&d, &s)) == 1) {
            assert_true(k < n);
            assert_int_equal(s.ref, in[k].ref);
            assert_int_equal(s.t, in[k].t);
            assert_memory_equal(&s.v, &in[k].v, 8);
            k++;
        }
        assert_int_equal(r, 0);
        assert_int_equal(k, n);
        /* every truncation fails */
        for (size_t cut = 0; cut < b.len; cut += (b.len > 200 ? 37 : 1)) {
            int e = tsdb_rec_dec_init(&d, (const uint8_t *)b.data, cut);
            if (!e)
                while ((e = tsdb_rec_dec_sample(&d, &s)) == 1) {
                }
            assert_true(e < 0);
        }
        base_buf_free(&b);
    }
}

static void test_series_roundtrip(void **st) {
    (void)st;
    labels_set *a, *b2;
    assert_int_equal(
        labels_from_cstrs(&a, "__name__", "DCGM_FI_DEV_GPU_TEMP", "gpu", "0", "UUID", "GPU-abc", NULL), 0);
    assert_int_equal(labels_from_cstrs(&b2, "job", "x\xff\n\"", NULL), 0);
    tsdb_rec_series in[3] = {{1, a}, {UINT64_MAX, b2}, {77, labels_empty()}};
    base_buf b = BASE_BUF_INIT;
    assert_int_equal(tsdb_rec_enc_series(&b, in, 3), 0);
    tsdb_rec_dec d;
    assert_int_equal(tsdb_rec_dec_init(&d, (const uint8_t *)b.data, b.len), 0);
    assert_int_equal(d.type, TSDB_REC_SERIES);
    labels_builder lb;
    labels_builder_init(&lb);
    uint64_t ref;
    for (int i = 0; i < 3; i++) {
        assert_int_equal(tsdb_rec_dec_series(&d, &ref, &lb), 1);
        assert_int_equal(ref, in[i].ref);
        labels_set *ls;
        assert_int_equal(labels_builder_finish(&lb, 0, &ls, NULL, 0), 0);
        assert_true(labels_equal(ls, in[i].ls));
        labels_unref(ls);
    }
    assert_int_equal(tsdb_rec_dec_series(&d, &ref, &lb), 0);
    /* wrong accessor for the type */
    assert_int_equal(tsdb_rec_dec_init(&d, (const uint8_t *)b.data, b.len), 0);
    tsdb_rec_sample s;
    assert_true(tsdb_rec_dec_sample(&d, &s) < 0);
    for (size_t cut = 0; cut < b.len; cut++) {
        int e = tsdb_rec_dec_init(&d, (const uint8_t *)b.data, cut);
        if (!e)
            while ((e = tsdb_rec_dec_series(&d, &ref, &lb)) == 1) {
            }
        assert_true(e < 0);
    }
    labels_builder_free(&lb);
    base_buf_free(&b);
    labels_unref(a);
    labels_unref(b2);
}

static void test_tombstones_and_malformed(void **st) {
    (void)st;
    tsdb_rec_tombstone in[2] = {{5, INT64_MIN, INT64_MAX}, {6, -1, 1}};
    base_buf b = BASE_BUF_INIT;
    assert_int_equal(tsdb_rec_enc_tombstones(&b, in, 2), 0);
    tsdb_rec_dec d;
    tsdb_rec_tombstone t;
    assert_int_equal(tsdb_rec_dec_init(&d, (const uint8_t *)b.data, b.len), 0);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(tsdb_rec_dec_tombstone(&d, &t), 1);
        assert_int_equal(t.ref, in[i].ref);
        assert_int_equal(t.mint, in[i].mint);
        assert_int_equal(t.maxt, in[i].maxt);
    }
    assert_int_equal(tsdb_rec_dec_tombstone(&d, &t), 0);
    /* trailing byte */
    base_buf_putc(&b, 0);
    assert_int_equal(tsdb_rec_dec_init(&d, (const uint8_t *)b.data, b.len), 0);
    while (tsdb_rec_dec_tombstone(&d, &t) == 1) {
    }
    assert_int_equal(tsdb_rec_dec_tombstone(&d, &t), BASE_E_PARSE);
    base_buf_free(&b);
    static const uint8_t badtype[] = {9, 0}, bigcount[] = {2, 0xff, 0xff, 0x03, 0},
                         longvar[] = {3, 1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 0, 0};
    assert_int_equal(tsdb_rec_dec_init(&d, badtype, sizeof badtype), BASE_E_PARSE);
    assert_int_equal(tsdb_rec_dec_init(&d, bigcount, sizeof bigcount), BASE_E_PARSE);
    assert_int_equal(tsdb_rec_dec_init(&d, longvar, sizeof longvar), 0);
    assert_int_equal(tsdb_rec_dec_tombstone(&d, &t), BASE_E_PARSE);
    assert_int_equal(tsdb_rec_dec_init(&d, NULL, 0), BASE_E_TRUNCATED);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_samples_roundtrip),
        cmocka_unit_test(test_series_roundtrip),
        cmocka_unit_test(test_tombstones_and_malformed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
