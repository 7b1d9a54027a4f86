/* tests/unit/labels/matcher.c -- label matchers (src/labels/matcher.c).
 *
 * The four operators with Prometheus 2.42 semantics, anchoring, which
 * matchers also select series lacking the label (matches_empty), matching
 * against label sets, rendering as Matcher.String(), error pass-through,
 * and many threads matching with shared matchers at once (per-thread
 * PCRE2 state, freed at thread exit -- LeakSanitizer checks that).
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/err.h"
#include "labels/labels.h"
#include "labels/labels_int.h"

static base_str S(const char *s) {
    return base_str_c(s);
}

static labels_matcher *mk(labels_match_type t, const char *name, const char *value) {
    labels_matcher *m = NULL;
    char err[256];
    if (labels_matcher_new(t, S(name), S(value), &m, err, sizeof err) != 0)
        fail_msg("matcher %s: %s", value, err);
    return m;
}

static void test_semantics(void **state) {
    (void)state;
    static const struct {
        labels_match_type t;
        const char *v, *subj;
        int want;
    } rows[] = {
        {LABELS_MATCH_EQ, "foo", "foo", 1},
        {LABELS_MATCH_EQ, "foo", "foobar", 0},
        {LABELS_MATCH_EQ, "", "", 1},
        {LABELS_MATCH_NEQ, "foo", "foo", 0},
        {LABELS_MATCH_NEQ, "foo", "bar", 1},
        {LABELS_MATCH_RE, "foo", "foo", 1},
        {LABELS_MATCH_RE, "foo", "foobar", 0},
        {LABELS_MATCH_RE, "foo", "barfoo", 0},
        {LABELS_MATCH_RE, "foo.*", "foobar", 1},
        {LABELS_MATCH_RE, ".*bar", "foobar", 1},
        {LABELS_MATCH_RE, "a|b", "b", 1},
        {LABELS_MATCH_RE, "[0-9]+", "123", 1},
        {LABELS_MATCH_RE, "[0-9]+", "12a", 0},
        {LABELS_MATCH_NRE, "foo", "foobar", 1},
        {LABELS_MATCH_NRE, "foo.*", "foobar", 0},
        {LABELS_MATCH_NRE, "[0-9]+", "12a", 1},
    };
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
        labels_matcher *m = mk(rows[i].t, "a", rows[i].v);
        int got = labels_matcher_matches(m, S(rows[i].subj));
        if (got != rows[i].want)
            fail_msg("a%s\"%s\" on \"%s\": got %d", labels_match_type_str(rows[i].t), rows[i].v, rows[i].subj,
                     got);
        labels_matcher_free(m);
    }
}

static void test_matches_empty(void **state) {
    (void)state;
    static const struct {
        labels_match_type t;
        const char *v;
        int want;
    } rows[] = {
        {LABELS_MATCH_EQ, "", 1},     {LABELS_MATCH_EQ, "x", 0},    {LABELS_MATCH_NEQ, "", 0},
        {LABELS_MATCH_NEQ, "x", 1},   {LABELS_MATCH_RE, "", 1},     {LABELS_MATCH_RE, ".*", 1},
        {LABELS_MATCH_RE, ".+", 0},   {LABELS_MATCH_RE, "x|", 1},   {LABELS_MATCH_RE, "x*", 1},
        {LABELS_MATCH_RE, "x", 0},    {LABELS_MATCH_NRE, "", 0},    {LABELS_MATCH_NRE, "x", 1},
        {LABELS_MATCH_NRE, ".*", 0},  {LABELS_MATCH_NRE, ".+", 1},  {LABELS_MATCH_RE, "(?:)?", 1},
        {LABELS_MATCH_RE, "\\d*", 1}, {LABELS_MATCH_RE, "\\d+", 0}, {LABELS_MATCH_RE, "^$", 1},
    };
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
        labels_matcher *m = mk(rows[i].t, "a", rows[i].v);
        if (labels_matcher_matches_empty(m) != rows[i].want)
            fail_msg("a%s\"%s\": matches_empty %d", labels_match_type_str(rows[i].t), rows[i].v,
                     labels_matcher_matches_empty(m));
        labels_matcher_free(m);
    }
}

static void test_on_sets(void **state) {
    (void)state;
    labels_set *ls;
    assert_int_equal(labels_from_cstrs(&ls, "__name__", "up", "job", "node", NULL), 0);
    labels_matcher *m = mk(LABELS_MATCH_RE, "instance", ".*");
    assert_true(labels_matcher_matches_set(m, ls)); /* absent label is "" */
    labels_matcher_free(m);
    m = mk(LABELS_MATCH_RE, "instance", ".+");
    assert_false(labels_matcher_matches_set(m, ls));
    labels_matcher_free(m);
    m = mk(LABELS_MATCH_EQ, "__name__", "up");
    assert_true(labels_matcher_matches_set(m, ls));
    labels_matcher_free(m);
    m = mk(LABELS_MATCH_NRE, "job", "no.*");
    assert_false(labels_matcher_matches_set(m, ls));
    labels_matcher_free(m);
    labels_unref(ls);
}

static void expect_fmt(labels_match_type t, const char *n, const char *v, const char *want) {
    labels_matcher *m = mk(t, n, v);
    base_buf b;
    base_buf_init(&b, 0);
    labels_matcher_format(m, &b);
    assert_string_equal(b.data, want);
    base_buf_free(&b);
    assert_true(base_str_eq(labels_matcher_name(m), S(n)));
    assert_true(base_str_eq(labels_matcher_value(m), S(v)));
    assert_int_equal(labels_matcher_type(m), t);
    assert_true((labels_matcher_regex(m) != NULL) == (t == LABELS_MATCH_RE || t == LABELS_MATCH_NRE));
    labels_matcher_free(m);
}

static void test_format_and_errors(void **state) {
    (void)state;
    expect_fmt(LABELS_MATCH_EQ, "job", "node", "job=\"node\"");
    expect_fmt(LABELS_MATCH_NEQ, "job", "", "job!=\"\"");
    expect_fmt(LABELS_MATCH_RE, "instance", "foo\\.bar.*", "instance=~\"foo\\\\.bar.*\"");
    expect_fmt(LABELS_MATCH_NRE, "a", "x\"y\n", "a!~\"x\\\"y\\n\"");
    labels_matcher *m = NULL;
    char err[128];
    assert_int_equal(labels_matcher_new(LABELS_MATCH_RE, S("a"), S("(foo"), &m, err, sizeof err),
                     BASE_E_PARSE);
    assert_string_equal(err, "error parsing regexp: missing closing ): `^(?:(foo)$`");
    assert_null(m);
    assert_int_equal(labels_matcher_new((labels_match_type)9, S("a"), S("b"), &m, err, sizeof err),
                     BASE_E_INVAL);
    /* = and != never parse their value as a regex */
    m = mk(LABELS_MATCH_EQ, "a", "(");
    assert_true(labels_matcher_matches(m, S("(")));
    labels_matcher_free(m);
}

/* ---- threads ------------------------------------------------------- */

enum { THREADS = 8 };

typedef struct job {
    labels_matcher **ms;
    size_t nm;
    const long *want;
    long got[8];
} job;

static void *match_worker(void *arg) {
    job *j = arg;
    char v[32];
    for (int i = 0; i < 20000; i++) {
        snprintf(v, sizeof v, "%s-%d", i % 3 ? "gpu" : "node", i % 97);
        for (size_t k = 0; k < j->nm; k++) j->got[k] += labels_matcher_matches(j->ms[k], S(v));
    }
    return NULL;
}

static void test_threads(void **state) {
    (void)state;
    labels_matcher *ms[] = {
        mk(LABELS_MATCH_RE, "a", "gpu-[0-9]+"),       /* PCRE2 */
        mk(LABELS_MATCH_RE, "a", "node-.*"),          /* fast prefix */
        mk(LABELS_MATCH_NRE, "a", "(gpu|node)-1\\d"), /* PCRE2 */
        mk(LABELS_MATCH_RE, "a", ".*-9.*"),           /* fast contains */
    };
    size_t nm = sizeof ms / sizeof *ms;
    /* expected counts, computed single-threaded */
    job ref = {ms, nm, NULL, {0}};
    match_worker(&ref);
    for (size_t k = 0; k < nm; k++) assert_true(ref.got[k] > 0 && ref.got[k] < 20000);
    pthread_t th[THREADS];
    job jobs[THREADS];
    for (int i = 0; i < THREADS; i++) {
        jobs[i] = (job){ms, nm, NULL, {0}};
        assert_int_equal(pthread_create(&th[i], NULL, match_worker, &jobs[i]), 0);
    }
    for (int i = 0; i < THREADS; i++) {
        pthread_join(th[i], NULL);
        for (size_t k = 0; k < nm; k++) assert_int_equal(jobs[i].got[k], ref.got[k]);
    }
    for (size_t k = 0; k < nm; k++) labels_matcher_free(ms[k]);
    assert_int_equal(labels_regex_errors(), 0);
    labels_thread_cleanup();
    labels_thread_cleanup(); /* twice is fine */
}

static void test_alloc_failure(void **state) {
    (void)state;
    int done = 0;
    uint64_t errors = labels_regex_errors();
    for (long k = 0; !done && k < 500; k++) {
        labels_thread_cleanup();
        labels__fail_alloc(k);
        labels_matcher *m = NULL;
        char err[128];
        int rc =
            labels_matcher_new(LABELS_MATCH_RE, S("instance"), S("node-[0-9]+|gpu.*"), &m, err, sizeof err);
        labels__fail_alloc(-1);
        if (rc == 0) {
            done = 1;
            assert_true(labels_matcher_matches(m, S("node-12")));
            assert_false(labels_matcher_matches_empty(m));
            labels_matcher_free(m);
        } else {
            assert_int_equal(rc, BASE_E_NOMEM);
            assert_null(m);
        }
    }
    assert_true(done);
    assert_int_equal(labels_regex_errors(), errors);
    labels_thread_cleanup();
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_semantics),     cmocka_unit_test(test_matches_empty),
        cmocka_unit_test(test_on_sets),       cmocka_unit_test(test_format_and_errors),
        cmocka_unit_test(test_alloc_failure), cmocka_unit_test(test_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
