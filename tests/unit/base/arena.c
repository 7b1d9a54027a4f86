/* tests/unit/base/arena.c -- the bump allocator: alignment, chunking,
 * limits, and reuse after reset (a steady cycle allocates nothing). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "base/arena.h"

static void test_alloc(void **state) {
    (void)state;
    base_arena a;
    base_arena_init(&a, 256, 0);
    void *p = base_arena_alloc(&a, 1), *q = base_arena_alloc(&a, 0), *r = base_arena_alloc(&a, 17);
    assert_non_null(p);
    assert_non_null(q);
    assert_non_null(r);
    assert_int_equal((uintptr_t)p % 16, 0);
    assert_int_equal((uintptr_t)q % 16, 0);
    assert_int_equal((uintptr_t)r % 16, 0);
    assert_true(p != q && q != r);
    memset(r, 0xab, 17);
    assert_int_equal(a.used, 16 + 16 + 32);
    /* bigger than a chunk: gets its own */
    char *big = base_arena_alloc(&a, 10000);
    assert_non_null(big);
    memset(big, 1, 10000);
    assert_true(a.reserved >= 10000 + 256);
    char *s = base_arena_strdup(&a, "hello");
    assert_string_equal(s, "hello");
    char *t = base_arena_strndup(&a, "abcdef", 3);
    assert_string_equal(t, "abc");
    char *z = base_arena_strndup(&a, NULL, 0);
    assert_string_equal(z, "");
    /* requests that would wrap the size arithmetic fail cleanly */
    assert_null(base_arena_alloc(&a, SIZE_MAX));
    assert_null(base_arena_alloc(&a, SIZE_MAX - 8));
    assert_null(base_arena_strndup(&a, "x", SIZE_MAX));
    base_arena_free(&a);
    assert_int_equal(a.reserved, 0);
    assert_null(a.head);
}

static void test_reset_reuse(void **state) {
    (void)state;
    base_arena a;
    base_arena_init(&a, 1024, 0);
    /* first cycle needs several chunks */
    for (int i = 0; i < 100; i++) assert_non_null(base_arena_alloc(&a, 100));
    base_arena_reset(&a);
    assert_int_equal(a.used, 0);
    assert_true(a.chunk_size >= 100 * 112); /* grown to fit a cycle in one chunk */
    /* second cycle: one chunk, reused from then on */
    for (int i = 0; i < 100; i++) assert_non_null(base_arena_alloc(&a, 100));
    void *head = a.head;
    size_t reserved = a.reserved;
    base_arena_reset(&a);
    assert_ptr_equal(a.head, head);
    assert_int_equal(a.reserved, reserved);
    for (int cycle = 0; cycle < 5; cycle++) {
        char *first = base_arena_alloc(&a, 100);
        assert_ptr_equal(a.head, head); /* no new chunk */
        memset(first, cycle, 100);
        for (int i = 1; i < 100; i++) assert_non_null(base_arena_alloc(&a, 100));
        assert_ptr_equal(a.head, head);
        assert_int_equal(a.reserved, reserved);
        base_arena_reset(&a);
    }
    base_arena_free(&a);
    /* reset of an empty arena */
    base_arena_init(&a, 0, 0);
    base_arena_reset(&a);
    assert_non_null(base_arena_alloc(&a, 8));
    base_arena_free(&a);
}

static void test_limit(void **state) {
    (void)state;
    base_arena a;
    base_arena_init(&a, 1024, 2048);
    assert_non_null(base_arena_alloc(&a, 1000));
    assert_non_null(base_arena_alloc(&a, 1000)); /* second chunk: 2048 reserved */
    assert_null(base_arena_alloc(&a, 1000));     /* a third would pass the limit */
    assert_null(base_arena_alloc(&a, 4096));
    assert_true(a.reserved <= 2048);
    base_arena_reset(&a);
    assert_true(a.reserved <= 2048);
    assert_non_null(base_arena_alloc(&a, 500));
    base_arena_free(&a);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_alloc),
        cmocka_unit_test(test_reset_reuse),
        cmocka_unit_test(test_limit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
