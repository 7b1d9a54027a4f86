/* tests/unit/rules/manager.c -- the rule manager (rules/manager.h) on its
 * threads: groups at a 1 s interval write into an in-memory head while
 * another thread reads them through rules_manager_visit; a reload with one
 * group changed, one unchanged and one removed; a load with a broken file
 * changes nothing; free stops everything. Run under ThreadSanitizer too
 * (make test's third tree), which is what this test is for: the locking
 * between group threads, updates and readers. Waits are bounded. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/time.h"
#include "labels/labels.h"
#include "promql/promql.h"
#include "rules/manager.h"
#include "tsdb/head.h"

typedef struct fx {
    char dir[256];
    tsdb_head *h;
    promql_engine *e;
    rules_manager *m;
    pthread_t reader;
    int stop;
    uint64_t visits;
} fx;

static void write_file(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

typedef struct seen {
    size_t groups;
    char names[8][64];
    uint64_t iterations[8];
    int rules_ok;
} seen;

static void visit(void *ctx, rules_gstate *gs, const rules_group_stats *st) {
    seen *s = ctx;
    pthread_mutex_lock(&gs->mu);
    if (s->groups < 8) {
        snprintf(s->names[s->groups], sizeof s->names[0], "%s", gs->group->name);
        s->iterations[s->groups] = st->iterations;
    }
    for (size_t i = 0; i < gs->nrules; i++)
        if (gs->rules[i].health == RULES_HEALTH_OK) s->rules_ok++;
    pthread_mutex_unlock(&gs->mu);
    s->groups++;
}

static void *reader(void *arg) {
    fx *f = arg;
    for (int i = 0; i < 100000 && !__atomic_load_n(&f->stop, __ATOMIC_ACQUIRE); i++) {
        seen s;
        memset(&s, 0, sizeof s);
        rules_manager_visit(f->m, visit, &s);
        __atomic_add_fetch(&f->visits, 1, __ATOMIC_RELAXED);
        usleep(2000);
    }
    return NULL;
}

/* Reads every sample of metric name in the head: how many, and whether
 * the newest is Prometheus's stale marker. */
static size_t scan(fx *f, const char *name, int *ret_last_stale) {
    promql_storage st = promql_storage_head(f->h);
    labels_matcher *m = NULL;
    char err[128];
    assert_int_equal(
        labels_matcher_new(LABELS_MATCH_EQ, base_str_c("__name__"), base_str_c(name), &m, err, sizeof err),
        0);
    void *set = NULL;
    assert_int_equal(st.ops->select(st.ctx, &m, 1, INT64_MIN, INT64_MAX, &set), 0);
    size_t n = 0;
    int stale = 0;
    int64_t t[256];
    double v[256];
    while (st.ops->next(set) == 1) {
        int k;
        while ((k = st.ops->samples(set, t, v, 256)) > 0) {
            n += (size_t)k;
            uint64_t b;
            memcpy(&b, &v[k - 1], sizeof b);
            stale = b == 0x7ff0000000000002ull;
        }
    }
    st.ops->free(set);
    labels_matcher_free(m);
    if (ret_last_stale) *ret_last_stale = stale;
    return n;
}

static size_t samples_of(fx *f, const char *name) {
    return scan(f, name, NULL);
}

static int last_is_stale(fx *f, const char *name) {
    int stale = 0;
    scan(f, name, &stale);
    return stale;
}

/* Waits (at most 20 s) until every visited group ran at least `rounds`. */
static void wait_rounds(fx *f, size_t groups, uint64_t rounds) {
    int64_t end = base_mono_ns() + 20 * 1000000000LL;
    for (;;) {
        seen s;
        memset(&s, 0, sizeof s);
        rules_manager_visit(f->m, visit, &s);
        int ok = s.groups == groups;
        for (size_t i = 0; ok && i < s.groups && i < 8; i++) ok = s.iterations[i] >= rounds;
        if (ok) return;
        assert_true(base_mono_ns() < end);
        usleep(50000);
    }
}

static void load_and_update(fx *f, const char *path) {
    base_buf errs;
    base_buf_init(&errs, 0);
    rules_loaded *l = NULL;
    const char *pat[1] = {path};
    assert_int_equal(rules_manager_load(pat, 1, 1000, &l, &errs), 0);
    base_buf_free(&errs);
    rules_manager_update(f->m, l, NULL, "http://kelvin.test");
}

static void test_manager_threads(void **state) {
    (void)state;
    fx f;
    memset(&f, 0, sizeof f);
    snprintf(f.dir, sizeof f.dir, "%s/kelvin-mgr-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    assert_non_null(mkdtemp(f.dir));
    char path[320], glob[320];
    snprintf(path, sizeof path, "%s/a.rules.yml", f.dir);
    snprintf(glob, sizeof glob, "%s/*.rules.yml", f.dir);
    tsdb_head_opts ho;
    memset(&ho, 0, sizeof ho);
    char err[256];
    assert_int_equal(tsdb_head_open(&ho, &f.h, NULL, err, sizeof err), 0);
    promql_opts po;
    promql_opts_default(&po);
    assert_int_equal(promql_engine_new(&po, promql_storage_head(f.h), &f.e), 0);
    rules_manager_opts mo = {.engine = f.e, .storage = promql_storage_head(f.h), .head = f.h};
    assert_int_equal(rules_manager_new(&mo, &f.m), 0);

    write_file(path, "groups:\n"
                     "  - name: keep\n    interval: 1s\n    rules:\n"
                     "      - record: k:one\n        expr: vector(1)\n"
                     "  - name: change\n    interval: 1s\n    rules:\n"
                     "      - record: c:two\n        expr: vector(2)\n"
                     "      - alert: Always\n        expr: vector(1)\n"
                     "  - name: drop\n    interval: 1s\n    rules:\n"
                     "      - record: d:three\n        expr: vector(3)\n");
    load_and_update(&f, glob);
    assert_int_equal(pthread_create(&f.reader, NULL, reader, &f), 0);
    wait_rounds(&f, 3, 3);
    assert_true(samples_of(&f, "k:one") >= 3);
    assert_true(samples_of(&f, "d:three") >= 3);
    assert_true(samples_of(&f, "ALERTS") >= 1);

    /* a broken file: the load fails and nothing changes */
    write_file(path, "groups:\n  - name: keep\n    rules:\n      - record: k:one\n        expr: vector(\n");
    base_buf errs;
    base_buf_init(&errs, 0);
    rules_loaded *bad = NULL;
    const char *pat[1] = {glob};
    assert_int_not_equal(rules_manager_load(pat, 1, 1000, &bad, &errs), 0);
    assert_null(bad);
    assert_non_null(strstr(errs.data, "could not parse expression"));
    base_buf_free(&errs);

    /* reload: keep unchanged, change changed, drop removed */
    write_file(path, "groups:\n"
                     "  - name: keep\n    interval: 1s\n    rules:\n"
                     "      - record: k:one\n        expr: vector(1)\n"
                     "  - name: change\n    interval: 1s\n    rules:\n"
                     "      - record: c:two\n        expr: vector(22)\n"
                     "      - alert: Always\n        expr: vector(1)\n");
    seen before;
    memset(&before, 0, sizeof before);
    rules_manager_visit(f.m, visit, &before);
    load_and_update(&f, glob);
    seen after;
    memset(&after, 0, sizeof after);
    rules_manager_visit(f.m, visit, &after);
    assert_int_equal(after.groups, 2);
    assert_string_equal(after.names[0], "change"); /* sorted by file, then name */
    assert_string_equal(after.names[1], "keep");
    /* the unchanged group kept running: its counters went on */
    assert_true(after.iterations[1] >= before.iterations[2]);
    /* the dropped group's series is marked stale (two intervals later) */
    assert_false(last_is_stale(&f, "d:three"));
    int64_t end = base_mono_ns() + 10 * 1000000000LL;
    while (!last_is_stale(&f, "d:three") && base_mono_ns() < end) usleep(100000);
    assert_true(last_is_stale(&f, "d:three"));
    wait_rounds(&f, 2, after.iterations[1] + 2);
    assert_true(last_is_stale(&f, "d:three")); /* nothing wrote it since */
    assert_false(last_is_stale(&f, "k:one"));

    __atomic_store_n(&f.stop, 1, __ATOMIC_RELEASE);
    pthread_join(f.reader, NULL);
    assert_true(f.visits > 0);
    rules_manager_free(f.m);
    promql_engine_free(f.e);
    assert_int_equal(tsdb_head_close(f.h), 0);
    unlink(path);
    rmdir(f.dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_manager_threads)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
