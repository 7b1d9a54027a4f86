/* tests/unit/tsdb/record.c -- WAL record codecs (src/tsdb/record.c):
 * round trips of series, samples (adversarial refs, timestamps and value
 * bit patterns, the stale marker), tombstones and chunks records (empty
 * and full entries, extreme times, open chunks, out-of-order chunks and
 * buffers); every truncation of a valid record is detected; trailing
 * bytes, bad types, impossible counts and over-long varints are rejected;
 * the chunks encoder refuses what the format forbids, and a malformed
 * chunks entry is reported in the entry while the next one decodes. */
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

/* ---- chunks records ----------------------------------------------------- */

static void same_clist(tsdb_rec_clist l, const tsdb_rec_chunk *c, size_t n) {
    assert_int_equal(l.n, n);
    uint64_t bytes = 0;
    tsdb_rec_chunk x;
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(tsdb_rec_clist_next(&l, &x), 1);
        assert_int_equal(x.mint, c[i].mint);
        assert_int_equal(x.maxt, c[i].maxt);
        assert_int_equal(x.len, c[i].len);
        assert_memory_equal(x.data, c[i].data, x.len);
        bytes += x.len;
    }
    assert_int_equal(tsdb_rec_clist_next(&l, &x), 0);
    assert_int_equal(l.bytes, bytes);
}

static void same_entry(const tsdb_rec_chunks_entry *d, const tsdb_rec_series_chunks *e) {
    assert_int_equal(d->err, 0);
    assert_int_equal(d->ref, e->ref);
    same_clist(d->chunks, e->chunks, e->nchunks);
    same_clist(d->ooo, e->ooo, e->nooo);
    assert_int_equal(d->open_n, e->open_n);
    if (e->open_n) {
        assert_int_equal(d->open_t0, e->open_t0);
        assert_int_equal(d->open_bits, e->open_bits);
        assert_memory_equal(d->open, e->open, (size_t)(e->open_bits + 7) / 8);
    }
    tsdb_rec_obuf b = d->buf;
    tsdb_rec_osample o;
    assert_int_equal(b.n, e->nbuf);
    for (size_t i = 0; i < e->nbuf; i++) {
        assert_int_equal(tsdb_rec_obuf_next(&b, &o), 1);
        assert_int_equal(o.t, e->buf[i].t);
        assert_int_equal(o.v, e->buf[i].v);
    }
    assert_int_equal(tsdb_rec_obuf_next(&b, &o), 0);
}

static void test_chunks_roundtrip(void **st) {
    (void)st;
    static uint8_t bytes[4096];
    for (size_t i = 0; i < sizeof bytes; i++) bytes[i] = (uint8_t)rnd();
    const tsdb_rec_chunk ch[] = {
        {INT64_MIN, INT64_MIN, bytes, 1},
        {INT64_MIN + 1, INT64_MIN + 1 + UINT32_MAX, bytes + 1, 300},
        {-5, 7, bytes + 400, 17},
        {8, 8, bytes + 500, 2000},
    };
    const tsdb_rec_chunk oc[] = {{-100, -90, bytes + 3000, 9}, {INT64_MAX - 5, INT64_MAX, bytes + 3100, 40}};
    const tsdb_rec_osample ob[] = {{INT64_MIN, 0x7ff0000000000002ull}, {0, 1}, {INT64_MAX, UINT64_MAX}};
    tsdb_rec_series_chunks in[] = {
        {.ref = 1},                                                                    /* empty */
        {.ref = UINT64_MAX, .chunks = ch, .nchunks = 4},                               /* closed only */
        {.ref = 7, .open_n = 1, .open_t0 = INT64_MIN, .open_bits = 64, .open = bytes}, /* open only */
        {.ref = 8,
         .chunks = ch,
         .nchunks = 3,
         .open_n = 40,
         .open_t0 = 9,
         .open_bits = 1001,
         .open = bytes + 2600,
         .ooo = oc,
         .nooo = 2,
         .buf = ob,
         .nbuf = 3},
        {.ref = 9, .buf = ob + 1, .nbuf = 1},
    };
    enum { NE = sizeof in / sizeof *in };
    base_buf ents = BASE_BUF_INIT, b = BASE_BUF_INIT;
    for (size_t i = 0; i < NE; i++) assert_int_equal(tsdb_rec_enc_chunks_entry(&ents, &in[i]), 0);
    assert_int_equal(tsdb_rec_enc_chunks(&b, ents.data, ents.len, NE), 0);
    tsdb_rec_dec d;
    tsdb_rec_chunks_entry e;
    assert_int_equal(tsdb_rec_dec_init(&d, (const uint8_t *)b.data, b.len), 0);
    assert_int_equal(d.type, TSDB_REC_CHUNKS);
    assert_int_equal(d.count, NE);
    for (size_t i = 0; i < NE; i++) {
        assert_int_equal(tsdb_rec_dec_chunks(&d, &e), 1);
        same_entry(&e, &in[i]);
    }
    assert_int_equal(tsdb_rec_dec_chunks(&d, &e), 0);
    /* the header alone matches */
    uint8_t hdr[11];
    unsigned hl = tsdb_rec_chunks_hdr(hdr, NE);
    assert_memory_equal(b.data, hdr, hl);
    /* wrong accessor */
    tsdb_rec_sample smp;
    assert_int_equal(tsdb_rec_dec_init(&d, (const uint8_t *)b.data, b.len), 0);
    assert_true(tsdb_rec_dec_sample(&d, &smp) < 0);
    /* every truncation fails somewhere: init, the frame, or an entry */
    for (size_t cut = 0; cut < b.len; cut++) {
        int e2 = tsdb_rec_dec_init(&d, (const uint8_t *)b.data, cut), bad = e2 < 0;
        if (!e2)
            while ((e2 = tsdb_rec_dec_chunks(&d, &e)) == 1) bad |= e.err != 0;
        assert_true(bad || e2 < 0);
    }
    /* a trailing byte */
    base_buf_putc(&b, 0);
    assert_int_equal(tsdb_rec_dec_init(&d, (const uint8_t *)b.data, b.len), 0);
    int r;
    while ((r = tsdb_rec_dec_chunks(&d, &e)) == 1) {
    }
    assert_int_equal(r, BASE_E_PARSE);
    base_buf_free(&b);

    /* the encoder refuses what the format forbids */
    tsdb_rec_chunk over[] = {{0, 10, bytes, 5}, {10, 20, bytes, 5}};
    tsdb_rec_chunk wide[] = {{0, (int64_t)UINT32_MAX + 1, bytes, 5}};
    tsdb_rec_chunk empty[] = {{0, 1, bytes, 0}};
    tsdb_rec_chunk back[] = {{5, 4, bytes, 3}};
    tsdb_rec_osample dup[] = {{3, 0}, {3, 1}};
    tsdb_rec_series_chunks bad[] = {
        {.ref = 1, .chunks = over, .nchunks = 2},
        {.ref = 1, .ooo = wide, .nooo = 1},
        {.ref = 1, .chunks = empty, .nchunks = 1},
        {.ref = 1, .chunks = back, .nchunks = 1},
        {.ref = 1, .buf = dup, .nbuf = 2},
        {.ref = 1, .open_n = 1, .open_bits = 63, .open = bytes},
        {.ref = 1, .open_n = 3, .open_bits = 67, .open = bytes}, /* 64 + 2 x 2 bits at least */
        {.ref = 1, .chunks = over, .nchunks = 1, .open_n = 1, .open_t0 = 10, .open_bits = 64, .open = bytes},
    };
    base_buf_reset(&ents);
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        assert_int_equal(tsdb_rec_enc_chunks_entry(&ents, &bad[i]), BASE_E_INVAL);
    assert_int_equal(ents.len, 0);

    /* a malformed body is reported in its entry; the next one decodes */
    static const uint8_t mal[] = {
        5, 3,                         /* chunks, 3 entries */
        4, 4, 1, 0xff, 0xff, 0xff,    /* ref 4: a chunk list whose meta runs off the body */
        5, 5, 0, 1,    2,    0,    0, /* ref 5: open chunk of 1 sample: nbits missing */
        6, 4, 0, 0,    0,    0,       /* ref 6: empty, fine */
    };
    assert_int_equal(tsdb_rec_dec_init(&d, mal, sizeof mal), 0);
    assert_int_equal(tsdb_rec_dec_chunks(&d, &e), 1);
    assert_int_equal(e.ref, 4);
    assert_true(e.err < 0);
    assert_int_equal(tsdb_rec_dec_chunks(&d, &e), 1);
    assert_int_equal(e.ref, 5);
    assert_true(e.err < 0);
    assert_int_equal(tsdb_rec_dec_chunks(&d, &e), 1);
    assert_int_equal(e.ref, 6);
    assert_int_equal(e.err, 0);
    assert_int_equal(tsdb_rec_dec_chunks(&d, &e), 0);
    /* times past INT64_MAX: a chunk after one that ends there, a chunk
     * whose maxt would pass it */
    static const uint8_t ovf[] = {
        5,    1,    1,    21,   2,                                        /* 2 chunks: */
        0xfc, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 1, 1, /* [INT64_MAX - 1, INT64_MAX] */
        0,    0,    1,                                                    /* right after it */
        0xaa, 0xbb, 0,    0,    0,
    };
    assert_int_equal(tsdb_rec_dec_init(&d, ovf, sizeof ovf), 0);
    assert_int_equal(tsdb_rec_dec_chunks(&d, &e), 1);
    assert_int_equal(e.err, BASE_E_PARSE);
    assert_int_equal(tsdb_rec_dec_chunks(&d, &e), 0);
    static const uint8_t ovf2[] = {
        5,    1,    1,    17,   1,    0xfc, 0xff, 0xff, 0xff,
        0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 5,    1, /* mint INT64_MAX - 1, dmax 5 */
        0xaa, 0,    0,    0,
    };
    assert_int_equal(tsdb_rec_dec_init(&d, ovf2, sizeof ovf2), 0);
    assert_int_equal(tsdb_rec_dec_chunks(&d, &e), 1);
    assert_int_equal(e.err, BASE_E_PARSE);
    assert_int_equal(tsdb_rec_dec_chunks(&d, &e), 0);
    static const uint8_t ok1[] = {
        5,    1,    1,    17,   1,    0xfc, 0xff, 0xff, 0xff,
        0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 1,    1, /* the same, dmax 1: fine */
        0xaa, 0,    0,    0,
    };
    assert_int_equal(tsdb_rec_dec_init(&d, ok1, sizeof ok1), 0);
    assert_int_equal(tsdb_rec_dec_chunks(&d, &e), 1);
    assert_int_equal(e.err, 0);
    tsdb_rec_chunk c1;
    assert_int_equal(tsdb_rec_clist_next(&e.chunks, &c1), 1);
    assert_int_equal(c1.mint, INT64_MAX - 1);
    assert_int_equal(c1.maxt, INT64_MAX);
    base_buf_free(&ents);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_samples_roundtrip),
        cmocka_unit_test(test_series_roundtrip),
        cmocka_unit_test(test_tombstones_and_malformed),
        cmocka_unit_test(test_chunks_roundtrip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
