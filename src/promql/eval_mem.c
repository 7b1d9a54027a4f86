/* eval_mem.c -- a process-wide cache of the evaluator's large blocks (the
 * step arrays of series, scalars, result points).
 *
 * WHY. A range query's arrays are big (a series at 5,761 steps is 47 KB)
 * and short-lived. glibc hands blocks over 128 KB to mmap and trims the
 * heap's top when it is freed, so each query touches fresh pages; a page
 * fault costs tens of microseconds on a virtual machine (48 us measured
 * here), which made a 30 ms query take 300 ms. Keeping freed blocks for
 * the next query removes that cost once the process is warm.
 *
 * DESIGN. Blocks under 4 KiB go straight to malloc. Larger sizes fall in
 * classes (multiples of 4 KiB up to 1 MiB, powers of two above); each
 * class has a LIFO free list linked through the blocks themselves. A miss
 * allocates: malloc below 2 MiB, else an anonymous mapping advised to use
 * transparent huge pages (one fault per 2 MiB instead of 512). Freed
 * blocks are kept while the cache holds less than PQ_MEM_RETAIN bytes,
 * else released. One mutex guards the lists.
 *
 * Callers pass the same size to pq__mem_free as to pq__mem_alloc.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "promql/eval_int.h"

#define PQ_MEM_RETAIN       ((size_t)512 << 20)
#define PQ_MEM_SMALL        4096
#define PQ_MEM_PAGE_CLASSES 256 /* 4 KiB .. 1 MiB */
#define PQ_MEM_CLASSES      (PQ_MEM_PAGE_CLASSES + 44)
#define PQ_MEM_HUGE         ((size_t)2 << 20)

typedef struct blk {
    struct blk *next;
} blk;

static pthread_mutex_t mem_mu = PTHREAD_MUTEX_INITIALIZER;
static blk *mem_free[PQ_MEM_CLASSES];
static size_t mem_retained;

/* The class of a size (>= PQ_MEM_SMALL) and the class's block size. */
static unsigned mem_class(size_t bytes, size_t *ret_size) {
    if (bytes <= (size_t)PQ_MEM_PAGE_CLASSES * 4096) {
        size_t pages = (bytes + 4095) / 4096;
        *ret_size = pages * 4096;
        return (unsigned)(pages - 1);
    }
    unsigned k = 21; /* 2 MiB */
    while (((size_t)1 << k) < bytes) k++;
    *ret_size = (size_t)1 << k;
    return PQ_MEM_PAGE_CLASSES + (k - 21);
}

void *pq__mem_alloc(size_t bytes) {
    if (bytes < PQ_MEM_SMALL) return malloc(bytes ? bytes : 1);
    size_t size;
    unsigned c = mem_class(bytes, &size);
    if (c >= PQ_MEM_CLASSES) return NULL;
    pthread_mutex_lock(&mem_mu);
    blk *b = mem_free[c];
    if (b) {
        mem_free[c] = b->next;
        mem_retained -= size;
    }
    pthread_mutex_unlock(&mem_mu);
    if (b) return b;
    if (size < PQ_MEM_HUGE) return malloc(size);
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return NULL;
#ifdef MADV_HUGEPAGE
    madvise(p, size, MADV_HUGEPAGE);
#endif
    return p;
}

void pq__mem_free(void *p, size_t bytes) {
    if (!p) return;
    if (bytes < PQ_MEM_SMALL) {
        free(p);
        return;
    }
    size_t size;
    unsigned c = mem_class(bytes, &size);
    pthread_mutex_lock(&mem_mu);
    if (mem_retained + size <= PQ_MEM_RETAIN) {
        blk *b = p;
        b->next = mem_free[c];
        mem_free[c] = b;
        mem_retained += size;
        p = NULL;
    }
    pthread_mutex_unlock(&mem_mu);
    if (!p) return;
    if (size < PQ_MEM_HUGE)
        free(p);
    else
        munmap(p, size);
}

size_t pq__mem_retained(void) {
    pthread_mutex_lock(&mem_mu);
    size_t n = mem_retained;
    pthread_mutex_unlock(&mem_mu);
    return n;
}
