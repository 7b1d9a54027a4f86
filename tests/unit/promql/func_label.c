/* tests/unit/promql/func_label.c -- label_replace() and label_join()
 * (src/promql/func_label.c).
 *
 * The cases of Prometheus 2.42's functions.test (full-string match, no
 * substring match, several groups, absent and empty sources, dropping a
 * label set to "", the failures), Go's Expand syntax checked against the
 * 2.42 binary (${1}, $name, $$, unknown groups), and the argument checks
 * with 2.42's messages, which fire before any series is looked at.
 */
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
#include "promql/func.h"

static labels_set *set2(const char *a, const char *av, const char *b, const char *bv) {
    labels_set *ls = NULL;
    if (labels_from_cstrs(&ls, a, av, b, bv, (const char *)NULL) != 0) fail_msg("labels_from_cstrs");
    return ls;
}

/* The set rendered as Prometheus prints it. */
static void assert_labels(const labels_set *ls, const char *want) {
    base_buf b;
    base_buf_init(&b, 0);
    labels_format(ls, &b);
    if (strcmp(b.data ? b.data : "", want) != 0) fail_msg("got %s, want %s", b.data ? b.data : "", want);
    base_buf_free(&b);
}

static labels_regex *compile(const char *re) {
    labels_regex *rx = NULL;
    char err[256];
    if (pq_label_regex_compile(re, strlen(re), &rx, err, sizeof err) != 0)
        fail_msg("compile %s: %s", re, err);
    return rx;
}

static void replace_case(const labels_set *in, const char *dst, const char *repl, const char *src,
                         const char *re, const char *want) {
    labels_regex *rx = compile(re);
    labels_set *out = NULL;
    char err[256];
    int rc = pq_fn_label_replace(in, dst, repl, src, rx, &out, err, sizeof err);
    if (rc != 0) fail_msg("label_replace(%s, %s, %s, %s): %s", dst, repl, src, re, err);
    assert_labels(out, want);
    labels_unref(out);
    labels_regex_free(rx);
}

static void test_label_replace(void **state) {
    (void)state;
    labels_set *m = set2("src", "source-value-10", "dst", "original-destination-value");
    /* a full-string match and replace */
    replace_case(m, "dst", "destination-value-$1", "src", "source-value-(.*)",
                 "{dst=\"destination-value-10\", src=\"source-value-10\"}");
    /* no substring match */
    replace_case(m, "dst", "destination-value-$1", "src", "value-(.*)",
                 "{dst=\"original-destination-value\", src=\"source-value-10\"}");
    /* several groups */
    replace_case(m, "dst", "$1-value-$2", "src", "(.*)-value-(.*)",
                 "{dst=\"source-value-10\", src=\"source-value-10\"}");
    /* an absent source that does not match leaves the destination */
    replace_case(m, "dst", "value-$1", "nonexistent-src", "source-value-(.*)",
                 "{dst=\"original-destination-value\", src=\"source-value-10\"}");
    /* an absent source is "", which (.*) matches */
    replace_case(m, "dst", "value-$1", "nonexistent-src", "(.*)",
                 "{dst=\"value-\", src=\"source-value-10\"}");
    replace_case(m, "dst", "value-$1", "src", "non-matching-regex",
                 "{dst=\"original-destination-value\", src=\"source-value-10\"}");
    /* an empty result drops the label */
    replace_case(m, "dst", "", "dst", ".*", "{src=\"source-value-10\"}");
    /* the set 2.42 makes before failing on duplicates: src dropped */
    replace_case(m, "src", "", "", "", "{dst=\"original-destination-value\"}");
    /* a new label */
    replace_case(m, "new", "x$1", "src", "source-(v)alue-10",
                 "{dst=\"original-destination-value\", new=\"xv\", src=\"source-value-10\"}");
    labels_unref(m);

    /* Go's Expand (the 2.42 binary's answer): ${1}x$2$name$$ $9 */
    labels_set *ab = set2("__name__", "ab", "z", "1");
    replace_case(ab, "dst", "${1}x$2$name$$ $9", "__name__", "(?P<name>.)(.)",
                 "{__name__=\"ab\", dst=\"axba$ \", z=\"1\"}");
    /* $1x is the group named "1x" (empty), ${1}x is group 1 then x */
    replace_case(ab, "dst", "$1x-${1}x", "__name__", "(a)b", "{__name__=\"ab\", dst=\"-ax\", z=\"1\"}");
    labels_unref(ab);

    /* the unchanged set comes back as the same set */
    labels_set *same = set2("a", "1", "b", "2");
    labels_regex *rx = compile("nomatch");
    labels_set *out = NULL;
    char err[256];
    assert_int_equal(pq_fn_label_replace(same, "a", "x", "b", rx, &out, err, sizeof err), 0);
    assert_true(labels_equal(out, same));
    labels_unref(out);
    labels_regex_free(rx);
    labels_unref(same);
}

static void test_label_replace_errors(void **state) {
    (void)state;
    labels_regex *rx = NULL;
    char err[256];
    assert_int_equal(pq_label_regex_compile("(.*", 3, &rx, err, sizeof err), BASE_E_INVAL);
    assert_null(rx);
    assert_string_equal(err, "invalid regular expression in label_replace(): (.*");
    assert_int_equal(pq_fn_label_check(PQ_F_LABEL_REPLACE, "invalid-label-name", NULL, 0, err, sizeof err),
                     BASE_E_INVAL);
    assert_string_equal(err, "invalid destination label name in label_replace(): invalid-label-name");
    assert_int_equal(pq_fn_label_check(PQ_F_LABEL_REPLACE, "__name__", NULL, 0, err, sizeof err), 0);
    assert_int_equal(pq_fn_label_check(PQ_F_LABEL_REPLACE, "", NULL, 0, err, sizeof err), BASE_E_INVAL);

    /* the per-series function checks too */
    labels_set *m = set2("a", "1", "b", "2");
    rx = NULL;
    assert_int_equal(pq_label_regex_compile("(.*)", 4, &rx, err, sizeof err), 0);
    labels_set *out = NULL;
    assert_int_equal(pq_fn_label_replace(m, "1x", "", "a", rx, &out, err, sizeof err), BASE_E_INVAL);
    assert_null(out);
    labels_regex_free(rx);
    labels_unref(m);
}

static void join_case(const labels_set *in, const char *dst, const char *sep, const char *const *srcs,
                      size_t n, const char *want) {
    labels_set *out = NULL;
    char err[256];
    if (pq_fn_label_join(in, dst, sep, srcs, n, &out, err, sizeof err) != 0) fail_msg("label_join: %s", err);
    assert_labels(out, want);
    labels_unref(out);
}

static void test_label_join(void **state) {
    (void)state;
    labels_set *m = NULL;
    assert_int_equal(labels_from_cstrs(&m, "src", "a", "src1", "b", "src2", "c", "dst",
                                       "original-destination-value", (const char *)NULL),
                     0);
    const char *all[] = {"src", "src1", "src2"};
    join_case(m, "dst", "-", all, 3, "{dst=\"a-b-c\", src=\"a\", src1=\"b\", src2=\"c\"}");
    const char *gap[] = {"src", "src3", "src1"};
    join_case(m, "dst", "-", gap, 3, "{dst=\"a--b\", src=\"a\", src1=\"b\", src2=\"c\"}");
    /* an empty join deletes the destination */
    const char *empty[] = {"emptysrc", "emptysrc1", "emptysrc2"};
    join_case(m, "dst", "", empty, 3, "{src=\"a\", src1=\"b\", src2=\"c\"}");
    join_case(m, "dst", ", ", NULL, 0, "{src=\"a\", src1=\"b\", src2=\"c\"}");
    /* a separator alone is not empty */
    join_case(m, "dst", "+", empty, 3, "{dst=\"++\", src=\"a\", src1=\"b\", src2=\"c\"}");
    labels_unref(m);

    labels_set *m1 = NULL;
    assert_int_equal(
        labels_from_cstrs(&m1, "src", "foo", "src1", "bar", "src2", "foobar", (const char *)NULL), 0);
    join_case(m1, "dst", ", ", all, 3,
              "{dst=\"foo, bar, foobar\", src=\"foo\", src1=\"bar\", src2=\"foobar\"}");

    /* errors: each source first, then the destination */
    char err[256];
    const char *badsrc[] = {"ok", "y-y"};
    labels_set *out = NULL;
    assert_int_equal(pq_fn_label_join(m1, "1ab", "x", badsrc, 2, &out, err, sizeof err), BASE_E_INVAL);
    assert_string_equal(err, "invalid source label name in label_join(): y-y");
    assert_null(out);
    assert_int_equal(pq_fn_label_check(PQ_F_LABEL_JOIN, "1ab", all, 3, err, sizeof err), BASE_E_INVAL);
    assert_string_equal(err, "invalid destination label name in label_join(): 1ab");
    assert_int_equal(pq_fn_label_check(PQ_F_LABEL_JOIN, "ok", all, 3, err, sizeof err), 0);
    labels_unref(m1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_label_replace),
        cmocka_unit_test(test_label_replace_errors),
        cmocka_unit_test(test_label_join),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    labels_thread_cleanup();
    return rc;
}
