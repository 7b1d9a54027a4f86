/* alloc.c -- the labels module's allocation wrappers and their test hook.
 *
 * Every allocation the module makes itself (intern entries and index,
 * label sets, builders, matchers, regex programs, per-thread state, and
 * PCRE2's own through a general context) goes through these, so a test can
 * fail the k-th one (labels__fail_alloc) and prove that each caller
 * returns BASE_E_NOMEM without leaking or corrupting state. Arena memory
 * (base/arena.c, used while parsing a regex) and PCRE2's JIT code are
 * outside the hook. Cost when unused: one relaxed atomic load.
 */
#include <stdlib.h>

#include "labels/labels_int.h"

static _Atomic long g_countdown = -1;

void labels__fail_alloc(long k) {
    atomic_store_explicit(&g_countdown, k, memory_order_relaxed);
}

static int fail_now(void) {
    if (atomic_load_explicit(&g_countdown, memory_order_relaxed) < 0) return 0;
    /* the allocation that takes the counter from 0 to -1 fails */
    return atomic_fetch_sub_explicit(&g_countdown, 1, memory_order_relaxed) == 0;
}

void *labels__malloc(size_t n) {
    return fail_now() ? NULL : malloc(n);
}
void *labels__calloc(size_t n, size_t size) {
    return fail_now() ? NULL : calloc(n, size);
}
void *labels__realloc(void *p, size_t n) {
    return fail_now() ? NULL : realloc(p, n);
}
void *labels__aligned_alloc(size_t align, size_t n) {
    return fail_now() ? NULL : aligned_alloc(align, n);
}
