/* tests/unit/remote/pos.c -- the sender's pure parts: the position file
 * (round trip, every malformed shape refused, limits) and the
 * WriteRequest encoder (decoded back with the generated unpacker: series
 * grouping, ring wrap-around, negative and large timestamps, NaN bits). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/err.h"
#include "base/num.h"
#include "remote/prompb.pb-c.h"
#include "remote/remote_int.h"

static void test_round_trip(void **state) {
    (void)state;
    remote_ack a1[3] = {{{3, 100}, 0}, {{2, 7}, 5}, {{4, 0}, 0}};
    remote_ack a2[1] = {{{5, 0}, 0}};
    remote_filter in[2] = {{.n = 3, .a = a1}, {.n = 1, .a = a2}};
    base_buf b;
    base_buf_init(&b, 0);
    remote__pos_render(&b, "http://user:secret@x/\nw", in, 2);
    assert_int_equal(base_buf_err(&b), 0);
    assert_non_null(strstr(b.data, "vector 3 3:100:0 2:7:5 4:0:0\n"));
    assert_null(strstr(b.data, "x/\nw")); /* a newline in the url cannot break the format */
    assert_null(strstr(b.data, "secret"));
    assert_non_null(strstr(b.data, "url http://x/ w\n"));
    remote_filter out[4];
    size_t n = 0;
    assert_int_equal(remote__pos_parse(b.data, b.len, out, 4, &n), 0);
    assert_int_equal(n, 2);
    assert_int_equal(out[0].n, 3);
    assert_int_equal(out[0].a[1].pos.seg, 2);
    assert_int_equal(out[0].a[1].pos.off, 7);
    assert_int_equal(out[0].a[1].ix, 5);
    assert_int_equal(out[0].min.seg, 2);
    assert_int_equal(out[0].max.seg, 4);
    remote_pos st = remote__pos_start(out, n);
    assert_int_equal(st.seg, 5);
    assert_int_equal(st.off, 0);
    for (size_t i = 0; i < n; i++) remote__filter_free(&out[i]);
    /* written and loaded through a file */
    char path[] = "/tmp/kelvin-remote-pos-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    assert_int_equal(remote__pos_write(path, &b), 0);
    assert_int_equal(remote__pos_load(path, out, 4, &n), 0);
    assert_int_equal(n, 2);
    for (size_t i = 0; i < n; i++) remote__filter_free(&out[i]);
    unlink(path);
    assert_int_equal(remote__pos_load(path, out, 4, &n), BASE_E_NOTFOUND);
    base_buf_free(&b);
}

static void test_malformed(void **state) {
    (void)state;
    static const char *const bad[] = {
        "",
        "kelvin-remote-write-position 2\nvector 1 1:0:0\n",
        "kelvin-remote-write-position 1\n",                                    /* no vector */
        "kelvin-remote-write-position 1\nvector 1 1:0:0",                      /* cut short */
        "kelvin-remote-write-position 1\nvector 2 1:0:0\n",                    /* fewer than n */
        "kelvin-remote-write-position 1\nvector 1 1:0:0 2:0:0\n",              /* more than n */
        "kelvin-remote-write-position 1\nvector 0\n",                          /* empty */
        "kelvin-remote-write-position 1\nvector 1 1:0\n",                      /* no ix */
        "kelvin-remote-write-position 1\nvector 1 1:x:0\n",                    /* not a number */
        "kelvin-remote-write-position 1\nvector 1 -1:0:0\n",                   /* negative */
        "kelvin-remote-write-position 1\nvector 1 99999999999999999999:0:0\n", /* too large */
        "kelvin-remote-write-position 1\nvector 70000 1:0:0\n",                /* too many shards */
        "kelvin-remote-write-position 1\nwhat 1\nvector 1 1:0:0\n",            /* unknown line */
        "kelvin-remote-write-position 1\nvector 1 1:0:0\nvector 1 1:0:0\nvector 1 1:0:0\n"
        "vector 1 1:0:0\nvector 1 1:0:0\nvector 1 1:0:0\n", /* more vectors than asked for */
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        remote_filter out[REMOTE_MAX_FILTERS + 1];
        size_t n = 0;
        int e = remote__pos_parse(bad[i], strlen(bad[i]), out, REMOTE_MAX_FILTERS + 1, &n);
        if (e == 0) fail_msg("accepted case %zu", i);
        assert_int_equal(e, BASE_E_PARSE);
    }
}

static void test_encode(void **state) {
    (void)state;
    /* two series; labels packed as the reader packs them */
    Prometheus__Label l1 = PROMETHEUS__LABEL__INIT, l2 = PROMETHEUS__LABEL__INIT;
    l1.name = (ProtobufCBinaryData){8, (uint8_t *)"__name__"};
    l1.value = (ProtobufCBinaryData){2, (uint8_t *)"up"};
    l2.name = (ProtobufCBinaryData){3, (uint8_t *)"job"};
    l2.value = (ProtobufCBinaryData){1, (uint8_t *)"a"};
    Prometheus__Label *lp[2] = {&l1, &l2};
    Prometheus__TimeSeries ts = PROMETHEUS__TIME_SERIES__INIT;
    ts.n_labels = 2;
    ts.labels = lp;
    size_t len = prometheus__time_series__get_packed_size(&ts);
    remote_series *a = calloc(1, sizeof *a + len), *b = calloc(1, sizeof *b + len);
    a->len = (uint32_t)prometheus__time_series__pack(&ts, a->lab);
    ts.n_labels = 1;
    b->len = (uint32_t)prometheus__time_series__pack(&ts, b->lab);
    /* a ring of 5 whose contents wrap: a, a, b, a, b starting at slot 3 */
    remote_sample ring[5];
    int64_t times[5] = {-5, 0, INT64_MAX, 1700000000000LL, 7};
    double vals[5] = {1.5, 0, base_stale_nan(), -2, NAN};
    const remote_series *who[5] = {a, a, b, a, b};
    for (int i = 0; i < 5; i++) ring[(3 + i) % 5] = (remote_sample){who[i], times[i], vals[i], (uint32_t)i};
    base_buf out;
    base_buf_init(&out, 0);
    int64_t hi = remote__encode_samples(&out, ring, 5, 3, 5);
    assert_int_equal(hi, INT64_MAX);
    Prometheus__WriteRequest *wr =
        prometheus__write_request__unpack(NULL, out.len, (const uint8_t *)out.data);
    assert_non_null(wr);
    assert_int_equal(wr->n_timeseries, 4); /* a a | b | a | b */
    size_t want_samples[4] = {2, 1, 1, 1};
    size_t want_labels[4] = {2, 1, 2, 1};
    int k = 0;
    for (size_t i = 0; i < 4; i++) {
        Prometheus__TimeSeries *t = wr->timeseries[i];
        assert_int_equal(t->n_samples, want_samples[i]);
        assert_int_equal(t->n_labels, want_labels[i]);
        assert_int_equal(t->labels[0]->name.len, 8);
        assert_memory_equal(t->labels[0]->value.data, "up", 2);
        for (size_t j = 0; j < t->n_samples; j++, k++) {
            assert_int_equal(t->samples[j]->timestamp, times[k]);
            uint64_t x, y;
            memcpy(&x, &t->samples[j]->value, 8);
            memcpy(&y, &vals[k], 8);
            assert_int_equal(x, y);
        }
    }
    prometheus__write_request__free_unpacked(wr, NULL);
    base_buf_free(&out);
    free(a);
    free(b);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_encode),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
