/* tests/unit/labels/labels.c -- label sets and the builder (src/labels/labels.c).
 *
 * Checks ordering (Prometheus's labels.Compare, including uppercase names
 * before __name__ and shorter-first on a common prefix), equality, the
 * hash definition (xxh3 over name 0xff value 0xff, so {a="bc"} and
 * {ab="c"} differ), hash_for / hash_without against the hashes of the
 * subsets, builder rules (sorting, duplicate and empty names rejected,
 * empty values dropped, set/del/from, validation), lookups, iteration,
 * rendering in both Prometheus forms with Go's quoting, and that every
 * byte counted while sets live is returned when they are freed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <xxhash.h>

#include "base/err.h"
#include "labels/labels.h"
#include "labels/labels_int.h"

static base_str S(const char *s) {
    return base_str_c(s);
}

static labels_set *mk(const char *n1, ...) {
    labels_builder b;
    labels_builder_init(&b);
    va_list ap;
    va_start(ap, n1);
    for (const char *n = n1; n; n = va_arg(ap, const char *)) {
        const char *v = va_arg(ap, const char *);
        assert_int_equal(labels_builder_add(&b, S(n), S(v)), 0);
    }
    va_end(ap);
    labels_set *ls = NULL;
    char err[128];
    assert_int_equal(labels_builder_finish(&b, 0, &ls, err, sizeof err), 0);
    labels_builder_free(&b);
    return ls;
}

static char *fmt(const labels_set *ls, int metric) {
    base_buf b;
    base_buf_init(&b, 0);
    if (metric)
        labels_format_metric(ls, &b);
    else
        labels_format(ls, &b);
    assert_int_equal(base_buf_err(&b), 0);
    char *s = base_buf_steal(&b, NULL);
    return s ? s : strdup("");
}

static void expect_fmt(const labels_set *ls, int metric, const char *want) {
    char *got = fmt(ls, metric);
    assert_string_equal(got, want);
    free(got);
}

static labels_stats g_before;

static int setup(void **state) {
    (void)state;
    labels_stats_get(&g_before);
    return 0;
}

/* Every test must give back every set and string it created. */
static int teardown(void **state) {
    (void)state;
    labels_stats now;
    labels_stats_get(&now);
    assert_int_equal(now.sets, g_before.sets);
    assert_int_equal(now.set_bytes, g_before.set_bytes);
    assert_int_equal(now.strings.strings, g_before.strings.strings);
    return 0;
}

static void test_sorted_and_lookup(void **state) {
    (void)state;
    labels_set *ls = mk("job", "node", "__name__", "up", "Hostname", "h1", "instance", "a:9100", NULL);
    assert_int_equal(labels_len(ls), 4);
    const char *order[] = {"Hostname", "__name__", "instance", "job"};
    labels_iter it;
    base_str n, v;
    size_t k = 0;
    labels_iter_init(&it, ls);
    while (labels_iter_next(&it, &n, &v)) {
        assert_true(k < 4);
        assert_true(base_str_eq(n, S(order[k])));
        k++;
    }
    assert_int_equal(k, 4);
    assert_true(base_str_eq(labels_metric_name(ls), S("up")));
    assert_true(base_str_eq(labels_get(ls, S("instance")), S("a:9100")));
    assert_int_equal(labels_get(ls, S("nope")).n, 0);
    assert_true(labels_has(ls, S("job")));
    assert_false(labels_has(ls, S("jobs")));
    assert_false(labels_has(ls, S("a")));
    /* syms resolve to the same strings */
    labels_sym ns, vs;
    labels_iter_init(&it, ls);
    assert_true(labels_iter_next_sym(&it, &ns, &vs));
    assert_true(base_str_eq(labels_itab_str(labels_global(), ns), S("Hostname")));
    assert_true(labels_set_bytes(ls) >= 8 + 8);
    labels_unref(ls);
}

static void test_compare(void **state) {
    (void)state;
    labels_set *a1 = mk("a", "1", NULL);
    labels_set *a1b2 = mk("a", "1", "b", "2", NULL);
    labels_set *a2 = mk("a", "2", NULL);
    labels_set *up = mk("B", "x", NULL);
    labels_set *low = mk("a", "x", NULL);
    labels_set *a1again = mk("a", "1", NULL);
    labels_set *e = labels_empty();
    assert_true(labels_cmp(a1, a1b2) < 0); /* shorter first */
    assert_true(labels_cmp(a1b2, a1) > 0);
    assert_true(labels_cmp(a2, a1b2) > 0); /* value decides before length */
    assert_true(labels_cmp(up, low) < 0);  /* 'B' < 'a' bytewise */
    assert_int_equal(labels_cmp(a1, a1again), 0);
    assert_true(labels_cmp(e, a1) < 0);
    assert_int_equal(labels_cmp(e, labels_empty()), 0);
    assert_true(labels_equal(a1, a1again));
    assert_false(labels_equal(a1, a2));
    assert_false(labels_equal(a1, a1b2));
    assert_true(labels_equal(e, labels_empty()));
    /* value prefix: "1" < "10" */
    labels_set *a10 = mk("a", "10", NULL);
    assert_true(labels_cmp(a1, a10) < 0);
    labels_unref(a10);
    labels_set *all[] = {a1, a1b2, a2, up, low, a1again, e};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) labels_unref(all[i]);
}

static uint64_t xxh(const char *s, size_t n) {
    return XXH3_64bits(s, n);
}

static void test_hash(void **state) {
    (void)state;
    labels_set *x = mk("a", "bc", NULL);
    labels_set *y = mk("ab", "c", NULL);
    assert_int_not_equal(labels_hash(x), labels_hash(y));
    assert_false(labels_equal(x, y));
    assert_true(labels_hash(x) == xxh("a\xff"
                                      "bc\xff",
                                      5));
    assert_true(labels_hash(y) == xxh("ab\xff"
                                      "c\xff",
                                      5));
    assert_true(labels_hash(labels_empty()) == xxh("", 0));
    labels_set *z = mk("b", "2", "a", "1", NULL);
    assert_true(labels_hash(z) == xxh("a\xff"
                                      "1\xff"
                                      "b\xff"
                                      "2\xff",
                                      8));
    /* a long set takes the streaming path and must give the same hash */
    char big[3000];
    memset(big, 'v', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    labels_set *l = mk("a", big, "b", "x", NULL);
    char *flat = malloc(4000);
    size_t n = 0;
    memcpy(flat + n, "a\xff", 2), n += 2;
    memcpy(flat + n, big, sizeof big - 1), n += sizeof big - 1;
    memcpy(flat + n,
           "\xff"
           "b\xff"
           "x\xff",
           5),
        n += 5;
    assert_true(labels_hash(l) == xxh(flat, n));
    free(flat);
    labels_unref(l);
    labels_unref(x);
    labels_unref(y);
    labels_unref(z);
}

static void test_hash_subsets(void **state) {
    (void)state;
    labels_set *ls = mk("__name__", "m", "job", "j", "instance", "i", "gpu", "0", "zone", "z", NULL);
    base_str by[] = {S("gpu"), S("job"), S("missing")};
    labels_set *sub = mk("gpu", "0", "job", "j", NULL);
    assert_true(labels_hash_for(ls, by, 3) == labels_hash(sub));
    base_str without[] = {S("instance"), S("zone")};
    labels_set *rest = mk("gpu", "0", "job", "j", NULL); /* __name__ dropped too */
    assert_true(labels_hash_without(ls, without, 2) == labels_hash(rest));
    assert_true(labels_hash_without(ls, NULL, 0) != labels_hash(ls));
    labels_set *noname = mk("job", "j", "instance", "i", "gpu", "0", "zone", "z", NULL);
    assert_true(labels_hash_without(ls, NULL, 0) == labels_hash(noname));
    assert_true(labels_hash_for(ls, NULL, 0) == labels_hash(labels_empty()));
    labels_unref(noname);
    labels_unref(ls);
    labels_unref(sub);
    labels_unref(rest);
}

static void test_builder_rules(void **state) {
    (void)state;
    labels_builder b;
    labels_builder_init(&b);
    char err[128];
    labels_set *ls = NULL;
    /* duplicates */
    assert_int_equal(labels_builder_add(&b, S("a"), S("1")), 0);
    assert_int_equal(labels_builder_add(&b, S("b"), S("2")), 0);
    assert_int_equal(labels_builder_add(&b, S("a"), S("3")), 0);
    assert_int_equal(labels_builder_finish(&b, 0, &ls, err, sizeof err), BASE_E_INVAL);
    assert_string_equal(err, "label name \"a\" is not unique");
    uint64_t h;
    assert_int_equal(labels_builder_hash(&b, &h, err, sizeof err), BASE_E_INVAL);
    /* empty name */
    labels_builder_reset(&b);
    assert_int_equal(labels_builder_add(&b, S(""), S("x")), 0);
    assert_int_equal(labels_builder_finish(&b, 0, &ls, err, sizeof err), BASE_E_INVAL);
    assert_string_equal(err, "empty label name");
    /* empty values are dropped */
    labels_builder_reset(&b);
    assert_int_equal(labels_builder_add(&b, S("z"), S("")), 0);
    assert_int_equal(labels_builder_add(&b, S("a"), S("1")), 0);
    assert_int_equal(labels_builder_finish(&b, 0, &ls, err, sizeof err), 0);
    assert_int_equal(labels_len(ls), 1);
    expect_fmt(ls, 0, "{a=\"1\"}");
    labels_set *want = mk("a", "1", NULL);
    assert_true(labels_equal(ls, want));
    assert_int_equal(labels_builder_hash(&b, &h, err, sizeof err), 0);
    assert_true(h == labels_hash(want));
    assert_true(labels_builder_equal(&b, want));
    labels_unref(ls);
    /* all values empty: the empty set */
    labels_builder_reset(&b);
    assert_int_equal(labels_builder_add(&b, S("a"), S("")), 0);
    assert_int_equal(labels_builder_finish(&b, 0, &ls, err, sizeof err), 0);
    assert_true(ls == labels_empty());
    /* validation */
    const struct {
        const char *n, *v, *msg;
    } bad[] = {
        {"a-b", "1", "invalid label name \"a-b\""},
        {"1a", "1", "invalid label name \"1a\""},
        {"__name__", "1x", "invalid metric name \"1x\""},
        {"a", "\xff", "invalid UTF-8 label value for \"a\""},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        labels_builder_reset(&b);
        assert_int_equal(labels_builder_add(&b, S(bad[i].n), S(bad[i].v)), 0);
        assert_int_equal(labels_builder_finish(&b, LABELS_VALIDATE, &ls, err, sizeof err), BASE_E_INVAL);
        assert_string_equal(err, bad[i].msg);
        /* without validation the same pairs are accepted */
        assert_int_equal(labels_builder_finish(&b, 0, &ls, err, sizeof err), 0);
        labels_unref(ls);
    }
    labels_builder_reset(&b);
    assert_int_equal(labels_builder_add(&b, S("__name__"), S("ns:metric_total")), 0);
    assert_int_equal(labels_builder_add(&b, S("_x9"), S("héllo")), 0);
    assert_int_equal(labels_builder_finish(&b, LABELS_VALIDATE, &ls, err, sizeof err), 0);
    labels_unref(ls);
    /* limit */
    labels_builder_reset(&b);
    char name[16];
    int rc = 0;
    for (int i = 0; i <= LABELS_MAX_PAIRS && rc == 0; i++) {
        snprintf(name, sizeof name, "l%d", i);
        rc = labels_builder_add(&b, S("x"), S("y"));
    }
    assert_int_equal(rc, BASE_E_LIMIT);
    labels_unref(want);
    labels_builder_free(&b);
}

static void test_builder_edit(void **state) {
    (void)state;
    labels_set *base = mk("__name__", "up", "job", "node", "instance", "h:1", NULL);
    labels_builder b;
    labels_builder_init(&b);
    assert_int_equal(labels_builder_from(&b, base), 0);
    assert_true(base_str_eq(labels_builder_get(&b, S("job")), S("node")));
    assert_int_equal(labels_builder_set(&b, S("job"), S("gpu")), 0);
    assert_int_equal(labels_builder_set(&b, S("instance"), S("")), 0); /* deletes */
    assert_int_equal(labels_builder_set(&b, S("a"), S("first")), 0);
    labels_builder_del(&b, S("nothing"));
    labels_set *ls;
    char err[64];
    assert_int_equal(labels_builder_finish(&b, 0, &ls, err, sizeof err), 0);
    expect_fmt(ls, 0, "{__name__=\"up\", a=\"first\", job=\"gpu\"}");
    /* finishing again gives an equal set; the builder is unchanged */
    labels_set *again;
    assert_int_equal(labels_builder_finish(&b, 0, &again, err, sizeof err), 0);
    assert_true(labels_equal(ls, again));
    assert_true(labels_cmp(ls, again) == 0);
    labels_unref(again);
    /* from() on the same set twice, then unref the original: the builder
     * keeps it alive */
    assert_int_equal(labels_builder_from(&b, base), 0);
    assert_int_equal(labels_builder_from(&b, base), 0);
    labels_set *keep = labels_ref(base);
    labels_unref(base);
    labels_unref(keep);
    assert_int_equal(labels_builder_finish(&b, 0, &again, err, sizeof err), 0);
    expect_fmt(again, 1, "up{instance=\"h:1\", job=\"node\"}");
    uint64_t h;
    assert_int_equal(labels_builder_hash(&b, &h, err, sizeof err), 0);
    assert_true(h == labels_hash(again));
    assert_true(labels_builder_equal(&b, again));
    assert_false(labels_builder_equal(&b, ls));
    labels_unref(again);
    labels_unref(ls);
    labels_builder_free(&b);
}

static void test_format(void **state) {
    (void)state;
    labels_set *ls = mk("__name__", "up", "job", "a\"b\\c\n", "x", "\x01\x7f\t", NULL);
    expect_fmt(ls, 0, "{__name__=\"up\", job=\"a\\\"b\\\\c\\n\", x=\"\\x01\\x7f\\t\"}");
    expect_fmt(ls, 1, "up{job=\"a\\\"b\\\\c\\n\", x=\"\\x01\\x7f\\t\"}");
    labels_unref(ls);
    /* Go's strconv.Quote on Unicode: printable kept, others escaped */
    ls = mk("a", "h\xc3\xa9 \xf0\x9f\x98\x80", "b",
            "\xc2\xa0|\xe2\x80\x8b|\xee\x80\x80|\xf3\xb0\x80\x80|\xff|\xc2\xad", NULL);
    expect_fmt(ls, 0,
               "{a=\"h\xc3\xa9 \xf0\x9f\x98\x80\", b=\"\\u00a0|\\u200b|\\ue000|\\U000f0000|\\xff|\\u00ad\"}");
    labels_unref(ls);
    /* model.Metric.String: sorted rendered strings, so a0 before a */
    ls = mk("__name__", "up", "a", "1", "a0", "2", NULL);
    expect_fmt(ls, 1, "up{a0=\"2\", a=\"1\"}");
    expect_fmt(ls, 0, "{__name__=\"up\", a=\"1\", a0=\"2\"}");
    labels_unref(ls);
    ls = mk("__name__", "up", NULL);
    expect_fmt(ls, 1, "up");
    labels_unref(ls);
    ls = mk("job", "x", NULL);
    expect_fmt(ls, 1, "{job=\"x\"}");
    labels_unref(ls);
    expect_fmt(labels_empty(), 1, "{}");
    expect_fmt(labels_empty(), 0, "{}");
    base_buf b;
    base_buf_init(&b, 0);
    labels_quote(&b, S(""));
    assert_string_equal(b.data, "\"\"");
    base_buf_free(&b);
}

static void test_validation(void **state) {
    (void)state;
    assert_true(labels_valid_label_name(S("a")));
    assert_true(labels_valid_label_name(S("_a9")));
    assert_true(labels_valid_label_name(S("__name__")));
    assert_false(labels_valid_label_name(S("")));
    assert_false(labels_valid_label_name(S("9a")));
    assert_false(labels_valid_label_name(S("a:b")));
    assert_false(labels_valid_label_name(S("a-b")));
    assert_true(labels_valid_metric_name(S("a:b_c")));
    assert_true(labels_valid_metric_name(S(":a")));
    assert_false(labels_valid_metric_name(S("0a")));
    assert_false(labels_valid_metric_name(S("a.b")));
    assert_true(labels_valid_utf8(S("h\xc3\xa9")));
    assert_false(labels_valid_utf8(S("\xc3")));
    assert_false(labels_valid_utf8(S("\xed\xa0\x80")));     /* surrogate */
    assert_false(labels_valid_utf8(S("\xc0\xaf")));         /* overlong */
    assert_false(labels_valid_utf8(S("\xf4\x90\x80\x80"))); /* > U+10FFFF */
    assert_true(labels_valid_utf8(S("\xf4\x8f\xbf\xbf")));
}

static void test_refcount_and_accounting(void **state) {
    (void)state;
    labels_stats a, b, c;
    labels_stats_get(&a);
    labels_set *ls = mk("__name__", "accounting_test_metric", "unique_value_xyz", "v-123456", NULL);
    labels_stats_get(&b);
    assert_int_equal(b.sets, a.sets + 1);
    assert_int_equal(b.set_bytes, a.set_bytes + labels_set_bytes(ls));
    assert_int_equal(b.strings.strings, a.strings.strings + 4);
    labels_set *r = labels_ref(ls);
    assert_ptr_equal(r, ls);
    labels_unref(ls);
    labels_stats_get(&c);
    assert_int_equal(c.sets, b.sets); /* still referenced */
    labels_unref(r);
    labels_stats_get(&c);
    assert_int_equal(c.sets, a.sets);
    assert_int_equal(c.set_bytes, a.set_bytes);
    assert_int_equal(c.strings.strings, a.strings.strings);
    assert_int_equal(c.strings.string_bytes, a.strings.string_bytes);
    labels_unref(NULL);
    labels_unref(labels_ref(labels_empty()));
}

/* Fails the k-th allocation for every k: finish returns BASE_E_NOMEM and
 * gives back everything it took, until it succeeds. */
static void test_alloc_failure(void **state) {
    (void)state;
    labels_stats base, now;
    labels_stats_get(&base);
    int done = 0;
    long k;
    for (k = 0; !done && k < 1000; k++) {
        labels_builder b;
        labels_builder_init(&b);
        labels__fail_alloc(k);
        int rc = 0;
        char v[16][24];
        for (int i = 0; i < 16 && rc == 0; i++) {
            snprintf(v[i], sizeof v[i], "alloc-fail-%d", i);
            rc = labels_builder_add(&b, S(v[i] + 11), S(v[i]));
        }
        labels_set *ls = NULL;
        char err[64];
        if (rc == 0) rc = labels_builder_finish(&b, 0, &ls, err, sizeof err);
        labels__fail_alloc(-1);
        if (rc == 0) {
            done = 1;
            assert_int_equal(labels_len(ls), 16);
            assert_true(base_str_eq(labels_get(ls, S("3")), S("alloc-fail-3")));
            labels_unref(ls);
        } else {
            assert_int_equal(rc, BASE_E_NOMEM);
            assert_null(ls);
        }
        labels_builder_free(&b);
        labels_stats_get(&now);
        assert_int_equal(now.sets, base.sets);
        assert_int_equal(now.strings.strings, base.strings.strings);
    }
    assert_true(done);
    assert_true(k > 16); /* every intern and the set itself were failed once */
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_sorted_and_lookup, setup, teardown),
        cmocka_unit_test_setup_teardown(test_compare, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hash, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hash_subsets, setup, teardown),
        cmocka_unit_test_setup_teardown(test_builder_rules, setup, teardown),
        cmocka_unit_test_setup_teardown(test_builder_edit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_format, setup, teardown),
        cmocka_unit_test_setup_teardown(test_validation, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refcount_and_accounting, setup, teardown),
        cmocka_unit_test_setup_teardown(test_alloc_failure, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
