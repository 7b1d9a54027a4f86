/* tests/unit/agent/core.c -- the agent core: collectors on group threads,
 * fragments composed into scrape bodies, the per-generation cache, gzip,
 * errors keeping the previous snapshot, refresh (read-your-writes), and
 * staleness of a collector that stops publishing. */
#include <libdeflate.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent/core.h"
#include "base/err.h"
#include "base/time.h"

typedef struct fake {
    const char *name;
    int fail;       /* return an error instead of data */
    int block_ms;   /* sleep this long in collect */
    unsigned calls; /* guarded by mu */
    double value;   /* served as <name>_value */
    pthread_mutex_t mu;
} fake;

static int fake_collect(void *ctx, expo_mset *ms) {
    fake *f = ctx;
    pthread_mutex_lock(&f->mu);
    unsigned calls = ++f->calls;
    int fail = f->fail, block = f->block_ms;
    double v = f->value;
    pthread_mutex_unlock(&f->mu);
    if (block) usleep((useconds_t)block * 1000);
    if (fail) return BASE_E_IO;
    char *name = expo_mset_strdup(ms, f->name);
    expo_family *fam = expo_mset_family(ms, name, EXPO_GAUGE, "A test gauge.", NULL);
    expo_mset_add(ms, fam, "", "k=\"v\"", NULL, v);
    (void)calls;
    return 0;
}

static char *body_text(agent_core *c, expo_format fmt) {
    agent_body *b;
    assert_int_equal(agent_core_body(c, fmt, 0, &b), 0);
    char *s = strndup(b->data, b->len);
    agent_body_unref(b);
    return s;
}

static void test_compose_and_cache(void **state) {
    (void)state;
    fake a = {.name = "a_value", .value = 1, .mu = PTHREAD_MUTEX_INITIALIZER};
    fake b = {.name = "b_value", .value = 2, .mu = PTHREAD_MUTEX_INITIALIZER};
    agent_core *c;
    assert_int_equal(agent_core_new(&c), 0);
    agent_collector ca = {"a", fake_collect, &a}, cb = {"b", fake_collect, &b};
    assert_int_equal(agent_core_add(c, "g1", 60000, &ca), 0);
    assert_int_equal(agent_core_add(c, "g2", 60000, &cb), 0);
    assert_int_equal(agent_core_start(c, 2000), 0);

    char *t = body_text(c, EXPO_FMT_TEXT);
    assert_non_null(strstr(t, "# HELP a_value A test gauge.\n# TYPE a_value gauge\na_value{k=\"v\"} 1\n"));
    assert_non_null(strstr(t, "b_value{k=\"v\"} 2\n"));
    assert_true(strstr(t, "a_value") < strstr(t, "b_value")); /* collectors in the order added */
    free(t);
    t = body_text(c, EXPO_FMT_OPENMETRICS);
    size_t n = strlen(t);
    assert_true(n > 6 && strcmp(t + n - 6, "# EOF\n") == 0);
    assert_non_null(strstr(t, "# TYPE a_value gauge\n# HELP a_value A test gauge.\n"));
    free(t);

    /* Same generation: the very same body is handed out again. */
    agent_body *b1, *b2;
    assert_int_equal(agent_core_body(c, EXPO_FMT_TEXT, 0, &b1), 0);
    assert_int_equal(agent_core_body(c, EXPO_FMT_TEXT, 0, &b2), 0);
    assert_ptr_equal(b1, b2);

    /* gzip decompresses to the plain body. */
    agent_body *gz;
    assert_int_equal(agent_core_body(c, EXPO_FMT_TEXT, 1, &gz), 0);
    assert_true(gz->len > 18 && (unsigned char)gz->data[0] == 0x1f && (unsigned char)gz->data[1] == 0x8b);
    struct libdeflate_decompressor *d = libdeflate_alloc_decompressor();
    char *out = malloc(b1->len + 1);
    size_t got = 0;
    assert_int_equal(libdeflate_gzip_decompress(d, gz->data, gz->len, out, b1->len, &got),
                     LIBDEFLATE_SUCCESS);
    assert_int_equal(got, b1->len);
    assert_memory_equal(out, b1->data, got);
    free(out);
    libdeflate_free_decompressor(d);
    agent_body_unref(gz);
    agent_body_unref(b1);
    agent_body_unref(b2);

    /* A refresh runs the group at once: the new value is in the next body. */
    pthread_mutex_lock(&a.mu);
    a.value = 42;
    pthread_mutex_unlock(&a.mu);
    assert_int_equal(agent_core_refresh(c, "g1", 2000), 0);
    t = body_text(c, EXPO_FMT_TEXT);
    assert_non_null(strstr(t, "a_value{k=\"v\"} 42\n"));
    free(t);
    assert_int_equal(agent_core_refresh(c, "nope", 10), BASE_E_NOTFOUND);

    /* A failing cycle keeps the previous snapshot and is counted. */
    pthread_mutex_lock(&b.mu);
    b.fail = 1;
    b.value = 7;
    pthread_mutex_unlock(&b.mu);
    assert_int_equal(agent_core_refresh(c, "g2", 2000), 0);
    t = body_text(c, EXPO_FMT_TEXT);
    assert_non_null(strstr(t, "b_value{k=\"v\"} 2\n"));
    free(t);
    agent_collector_stats st[4];
    assert_int_equal(agent_core_stats(c, st, 4), 2);
    assert_string_equal(st[1].name, "b");
    assert_int_equal(st[1].errors, 1);
    assert_true(st[0].cycles >= 2);
    assert_true(st[0].last_success_unix_ms > 0);
    assert_int_equal(st[0].stale, 0);
    assert_true(agent_core_scrapes(c) >= 6);

    agent_core_free(c);
}

/* A collector that hangs (a driver call that never returns) does not hold
 * the start up, and nothing it never published is served. */
static void test_hung_collector(void **state) {
    (void)state;
    fake slow = {.name = "slow_value", .block_ms = 1500, .mu = PTHREAD_MUTEX_INITIALIZER};
    fake quick = {.name = "quick_value", .mu = PTHREAD_MUTEX_INITIALIZER};
    agent_core *c;
    assert_int_equal(agent_core_new(&c), 0);
    agent_collector cs = {"slow", fake_collect, &slow}, cq = {"quick", fake_collect, &quick};
    assert_int_equal(agent_core_add(c, "gpu", 1000, &cs), 0);
    assert_int_equal(agent_core_add(c, "app", 1000, &cq), 0);
    int64_t t0 = base_mono_ns();
    assert_int_equal(agent_core_start(c, 300), 0);
    assert_true(base_mono_ns() - t0 < 1000000000LL); /* waited ~300 ms, not for the slow one */
    char *t = body_text(c, EXPO_FMT_TEXT);
    assert_non_null(strstr(t, "quick_value"));
    assert_null(strstr(t, "slow_value"));
    free(t);
    agent_core_free(c); /* joins the slow thread once its call returns */
}

/* A format nobody scraped lately is not rendered; its first scrape runs
 * the collectors at once and gets complete data. */
static void test_formats_on_demand(void **state) {
    (void)state;
    fake a = {.name = "a_value", .value = 5, .mu = PTHREAD_MUTEX_INITIALIZER};
    agent_core *c;
    assert_int_equal(agent_core_new(&c), 0);
    agent_collector ca = {"a", fake_collect, &a};
    assert_int_equal(agent_core_add(c, "g", 60000, &ca), 0);
    agent_core_set_format_idle(c, 1000);
    assert_int_equal(agent_core_start(c, 2000), 0);
    usleep(1300000);
    assert_int_equal(agent_core_refresh(c, "g", 2000), 0); /* renders neither format now */
    pthread_mutex_lock(&a.mu);
    unsigned before = a.calls;
    pthread_mutex_unlock(&a.mu);
    for (int fmt = 0; fmt < 2; fmt++) {
        char *t = body_text(c, (expo_format)fmt);
        assert_non_null(strstr(t, "a_value{k=\"v\"} 5\n"));
        free(t);
    }
    pthread_mutex_lock(&a.mu);
    assert_int_equal(a.calls, before + 2); /* one extra cycle per format */
    pthread_mutex_unlock(&a.mu);
    char *t = body_text(c, EXPO_FMT_TEXT); /* rendered now: no further cycle */
    free(t);
    pthread_mutex_lock(&a.mu);
    assert_int_equal(a.calls, before + 2);
    pthread_mutex_unlock(&a.mu);
    agent_core_free(c);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_compose_and_cache),
        cmocka_unit_test(test_hung_collector),
        cmocka_unit_test(test_formats_on_demand),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
