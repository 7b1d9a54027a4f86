/* tests/unit/labels/intern.c -- the string intern table (src/labels/intern.c).
 *
 * Single-threaded: identity (same string, same sym; different strings,
 * different syms), reference counting to zero frees and recycles ids,
 * byte accounting returns to its baseline, find never inserts, binary and
 * empty strings, growth past several index resizes and directory chunks.
 * Concurrent: threads intern, resolve and drop strings from one shared pool
 * at once (so finds race with final unrefs), and must always see their own
 * string behind each sym; at the end every string is gone. A second test
 * builds and frees label sets from many threads on the global table.
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

static void test_identity(void **state) {
    (void)state;
    labels_itab *t;
    assert_int_equal(labels_itab_new(&t), 0);
    labels_sym a, b, c, d;
    assert_int_equal(labels_itab_intern(t, S("job"), &a), 0);
    assert_int_equal(labels_itab_intern(t, S("job"), &b), 0);
    assert_int_equal(labels_itab_intern(t, S("jo"), &c), 0);
    assert_int_equal(a, b);
    assert_int_not_equal(a, c);
    base_str s = labels_itab_str(t, a);
    assert_int_equal(s.n, 3);
    assert_memory_equal(s.p, "job", 3);
    assert_int_equal(s.p[3], '\0');
    /* binary and empty strings */
    assert_int_equal(labels_itab_intern(t, (base_str){"a\0b\xff", 4}, &d), 0);
    assert_int_equal(labels_itab_str(t, d).n, 4);
    assert_memory_equal(labels_itab_str(t, d).p, "a\0b\xff", 4);
    labels_sym e;
    assert_int_equal(labels_itab_intern(t, (base_str){NULL, 0}, &e), 0);
    assert_int_equal(labels_itab_str(t, e).n, 0);
    labels_itab_stats st;
    labels_itab_stats_get(t, &st);
    assert_int_equal(st.strings, 4);
    assert_int_equal(st.string_bytes, 3 + 2 + 4 + 0);
    assert_true(st.bytes > st.string_bytes);
    /* find takes a reference only when present */
    labels_sym f;
    assert_int_equal(labels_itab_find(t, S("nope"), &f), BASE_E_NOTFOUND);
    assert_int_equal(labels_itab_find(t, S("jo"), &f), 0);
    assert_int_equal(f, c);
    labels_itab_stats_get(t, &st);
    assert_int_equal(st.strings, 4);
    /* drop everything: job x2, jo x2, binary, empty */
    labels_itab_unref(t, a);
    labels_itab_stats_get(t, &st);
    assert_int_equal(st.strings, 4); /* one reference left */
    labels_itab_unref(t, b);
    labels_itab_unref(t, c);
    labels_itab_unref(t, f);
    labels_itab_unref(t, d);
    labels_itab_unref(t, e);
    labels_itab_stats_get(t, &st);
    assert_int_equal(st.strings, 0);
    assert_int_equal(st.string_bytes, 0);
    assert_int_equal(st.interned, 4);
    assert_int_equal(st.freed, 4);
    assert_int_equal(labels_itab_find(t, S("job"), &f), BASE_E_NOTFOUND);
    labels_itab_free(t);
}

static void test_ref_and_recycle(void **state) {
    (void)state;
    labels_itab *t;
    assert_int_equal(labels_itab_new(&t), 0);
    labels_sym a, b;
    assert_int_equal(labels_itab_intern(t, S("value-1"), &a), 0);
    labels_itab_ref(t, a);
    labels_itab_unref(t, a);
    assert_int_equal(labels_itab_find(t, S("value-1"), &b), 0); /* still there */
    labels_itab_unref(t, b);
    labels_itab_unref(t, a);
    assert_int_equal(labels_itab_find(t, S("value-1"), &b), BASE_E_NOTFOUND);
    /* A freed id is reused by the next string of the same shard; ids stay
     * dense: 5000 strings, freed and re-interned, reuse the same ids. */
    enum { N = 5000 };
    labels_sym *ids = malloc(N * sizeof *ids);
    labels_sym max1 = 0, max2 = 0;
    char buf[32];
    for (int i = 0; i < N; i++) {
        snprintf(buf, sizeof buf, "v%d", i);
        assert_int_equal(labels_itab_intern(t, S(buf), &ids[i]), 0);
        if (ids[i] > max1) max1 = ids[i];
    }
    labels_itab_stats st;
    labels_itab_stats_get(t, &st);
    assert_int_equal(st.strings, N);
    uint64_t bytes_full = st.bytes;
    for (int i = 0; i < N; i++) labels_itab_unref(t, ids[i]);
    labels_itab_stats_get(t, &st);
    assert_int_equal(st.strings, 0);
    assert_true(st.bytes < bytes_full);
    for (int i = 0; i < N; i++) {
        snprintf(buf, sizeof buf, "w%d", i);
        assert_int_equal(labels_itab_intern(t, S(buf), &ids[i]), 0);
        if (ids[i] > max2) max2 = ids[i];
    }
    /* Recycled: the id space did not grow by much (shards fill unevenly). */
    assert_true(max2 < max1 + max1 / 4 + 64 * 64);
    for (int i = 0; i < N; i++) {
        snprintf(buf, sizeof buf, "w%d", i);
        assert_true(base_str_eq(labels_itab_str(t, ids[i]), S(buf)));
    }
    free(ids);
    labels_itab_free(t); /* frees strings still referenced */
}

static void test_limits(void **state) {
    (void)state;
    labels_itab *t;
    assert_int_equal(labels_itab_new(&t), 0);
    labels_sym a;
    char c = 'x';
    assert_int_equal(labels_itab_intern(t, (base_str){&c, LABELS_STRING_MAX + 1}, &a), BASE_E_LIMIT);
    labels_itab_free(t);
}

/* Interning 3000 strings while the k-th allocation fails, for many k: a
 * failed intern returns BASE_E_NOMEM and changes nothing; the table stays
 * consistent and drains to empty. */
static void test_alloc_failure(void **state) {
    (void)state;
    for (long k = 0; k < 120; k += (k < 40 ? 1 : 7)) {
        labels_itab *t = NULL;
        labels__fail_alloc(k);
        int rc = labels_itab_new(&t);
        if (rc != 0) {
            labels__fail_alloc(-1);
            assert_int_equal(rc, BASE_E_NOMEM);
            continue;
        }
        enum { N = 3000 };
        static labels_sym ids[N];
        int ok[N];
        char buf[32];
        int failures = 0;
        for (int i = 0; i < N; i++) {
            snprintf(buf, sizeof buf, "s%d", i);
            rc = labels_itab_intern(t, S(buf), &ids[i]);
            ok[i] = rc == 0;
            if (!ok[i]) {
                assert_int_equal(rc, BASE_E_NOMEM);
                failures++;
            }
        }
        labels__fail_alloc(-1);
        assert_true(failures <= 1);
        labels_itab_stats st;
        labels_itab_stats_get(t, &st);
        assert_int_equal(st.strings, (uint64_t)(N - failures));
        for (int i = 0; i < N; i++) {
            snprintf(buf, sizeof buf, "s%d", i);
            labels_sym f;
            if (ok[i]) {
                assert_true(base_str_eq(labels_itab_str(t, ids[i]), S(buf)));
                labels_itab_unref(t, ids[i]);
            } else {
                assert_int_equal(labels_itab_find(t, S(buf), &f), BASE_E_NOTFOUND);
            }
        }
        labels_itab_stats_get(t, &st);
        assert_int_equal(st.strings, 0);
        labels_itab_free(t);
    }
}

/* ---- concurrency --------------------------------------------------- */

enum { THREADS = 8, POOL = 1500, ROUNDS = 30000, HOLD = 64 };

typedef struct worker {
    labels_itab *t;
    unsigned seed;
    int errors;
} worker;

static unsigned rnd(unsigned *s) {
    *s = *s * 1103515245u + 12345u;
    return *s >> 8;
}

static void *intern_worker(void *arg) {
    worker *w = arg;
    labels_sym held[HOLD];
    int held_k[HOLD];
    int n = 0;
    char buf[48];
    for (int r = 0; r < ROUNDS; r++) {
        int k = (int)(rnd(&w->seed) % POOL);
        snprintf(buf, sizeof buf, "pool-string-%d-%s", k, k % 3 ? "value" : "v");
        labels_sym s;
        int rc =
            (rnd(&w->seed) & 3) ? labels_itab_intern(w->t, S(buf), &s) : labels_itab_find(w->t, S(buf), &s);
        if (rc == BASE_E_NOTFOUND) continue;
        if (rc != 0 || !base_str_eq(labels_itab_str(w->t, s), S(buf))) w->errors++;
        if (n == HOLD) { /* drop a random held one */
            int v = (int)(rnd(&w->seed) % HOLD);
            snprintf(buf, sizeof buf, "pool-string-%d-%s", held_k[v], held_k[v] % 3 ? "value" : "v");
            if (!base_str_eq(labels_itab_str(w->t, held[v]), S(buf))) w->errors++;
            labels_itab_unref(w->t, held[v]);
            held[v] = held[--n];
            held_k[v] = held_k[n];
        }
        held[n] = s;
        held_k[n++] = k;
    }
    for (int i = 0; i < n; i++) labels_itab_unref(w->t, held[i]);
    return NULL;
}

static void test_concurrent_intern(void **state) {
    (void)state;
    labels_itab *t;
    assert_int_equal(labels_itab_new(&t), 0);
    pthread_t th[THREADS];
    worker w[THREADS];
    for (int i = 0; i < THREADS; i++) {
        w[i] = (worker){t, (unsigned)(i * 7919 + 1), 0};
        assert_int_equal(pthread_create(&th[i], NULL, intern_worker, &w[i]), 0);
    }
    for (int i = 0; i < THREADS; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(w[i].errors, 0);
    }
    labels_itab_stats st;
    labels_itab_stats_get(t, &st);
    assert_int_equal(st.strings, 0);
    assert_int_equal(st.string_bytes, 0);
    assert_int_equal(st.interned, st.freed);
    assert_true(st.interned >= POOL / 2);
    labels_itab_free(t);
}

typedef struct set_worker {
    labels_set *ref; /* built by the main thread */
    int errors;
    unsigned seed;
} set_worker;

static void *set_worker_fn(void *arg) {
    set_worker *w = arg;
    char v[32];
    for (int r = 0; r < 4000; r++) {
        snprintf(v, sizeof v, "node-%u", rnd(&w->seed) % 300);
        labels_set *ls;
        if (labels_from_cstrs(&ls, "instance", v, "__name__", "DCGM_FI_DEV_GPU_TEMP", "gpu", "3", "job",
                              "dcgm", NULL) != 0) {
            w->errors++;
            continue;
        }
        if (!base_str_eq(labels_get(ls, S("instance")), S(v))) w->errors++;
        labels_set *same;
        if (labels_from_cstrs(&same, "job", "dcgm", "gpu", "3", "instance", v, "__name__",
                              "DCGM_FI_DEV_GPU_TEMP", NULL) != 0 ||
            !labels_equal(ls, same) || labels_hash(ls) != labels_hash(same))
            w->errors++;
        labels_unref(same);
        if (strcmp(v, "node-7") == 0 && !labels_equal(ls, w->ref)) w->errors++;
        labels_unref(ls);
    }
    return NULL;
}

static void test_concurrent_sets(void **state) {
    (void)state;
    labels_stats before, after;
    labels_stats_get(&before);
    labels_set *ref;
    assert_int_equal(labels_from_cstrs(&ref, "__name__", "DCGM_FI_DEV_GPU_TEMP", "gpu", "3", "instance",
                                       "node-7", "job", "dcgm", NULL),
                     0);
    pthread_t th[THREADS];
    set_worker w[THREADS];
    for (int i = 0; i < THREADS; i++) {
        w[i] = (set_worker){ref, 0, (unsigned)i + 11};
        assert_int_equal(pthread_create(&th[i], NULL, set_worker_fn, &w[i]), 0);
    }
    for (int i = 0; i < THREADS; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(w[i].errors, 0);
    }
    labels_unref(ref);
    labels_stats_get(&after);
    assert_int_equal(after.sets, before.sets);
    assert_int_equal(after.set_bytes, before.set_bytes);
    assert_int_equal(after.strings.strings, before.strings.strings);
    assert_int_equal(after.strings.string_bytes, before.strings.string_bytes);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_identity),
        cmocka_unit_test(test_ref_and_recycle),
        cmocka_unit_test(test_limits),
        cmocka_unit_test(test_alloc_failure),
        cmocka_unit_test(test_concurrent_intern),
        cmocka_unit_test(test_concurrent_sets),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
