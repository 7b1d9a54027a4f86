/* intern.c -- the concurrent string intern table (labels_itab).
 *
 * Layout (labels_int.h): 64 shards picked by the top 6 bits of the string's
 * xxh3-64 hash. Each shard has
 *   - a mutex;
 *   - an open-addressing index with linear probing: 8-byte slots holding
 *     the low 32 hash bits and local index + 1, so probing and growing
 *     never touch the strings (only a candidate with equal hash bits is
 *     compared); deletion shifts the following cluster back (no
 *     tombstones), load factor at most 0.7;
 *   - a directory: chunks of 1024 slots, local index -> entry pointer.
 *     Chunks never move, so a reader that holds a reference resolves a sym
 *     without a lock. When the directory is full a doubled copy is
 *     published with a release store; the old copy stays allocated (linked
 *     from the new one) until the table is freed, because a reader may
 *     still be looking at it. Old copies sum to less than the current one.
 *   - a free list of local indices threaded through the directory slots
 *     (slot = (next + 1) << 1 | 1), so ids are recycled and stay dense.
 *
 * Reference counts: intern/find increment under the shard lock; ref and
 * non-final unref are lock-free CAS loops; the final unref (1 -> 0) takes
 * the lock, decrements, and frees the entry in the same critical section.
 * Since every increment from an index lookup happens under the lock, no
 * thread can obtain a pointer to an entry whose count reached 0.
 * Counts at or above LABELS__IMMORTAL stop changing (saturation instead of
 * overflow: such a string is never freed).
 *
 * Accounting per shard (relaxed atomics written under the lock): strings,
 * payload bytes, bytes held (entries by malloc_usable_size + 8 bytes of
 * malloc header, index slots, directory and chunks).
 */
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "base/err.h"
#include "labels/labels_int.h"

#define MALLOC_OVERHEAD 8u

static labels_itab g_itab;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void itab_init(labels_itab *t) {
    memset(t, 0, sizeof *t);
    for (unsigned i = 0; i < LABELS__NSHARDS; i++) pthread_mutex_init(&t->shards[i].mu, NULL);
}

static void global_init(void) {
    itab_init(&g_itab);
}

labels_itab *labels_global(void) {
    return &g_itab;
}

static labels_itab *ready(labels_itab *t) {
    if (t == &g_itab) pthread_once(&g_once, global_init);
    return t;
}

int labels_itab_new(labels_itab **ret) {
    labels_itab *t = labels__aligned_alloc(64, sizeof *t);
    if (!t) return BASE_E_NOMEM;
    itab_init(t);
    *ret = t;
    return 0;
}

static void add(_Atomic uint64_t *c, int64_t d) {
    atomic_fetch_add_explicit(c, (uint64_t)d, memory_order_relaxed);
}

void labels_itab_free(labels_itab *t) {
    if (!t || t == &g_itab) return;
    for (unsigned i = 0; i < LABELS__NSHARDS; i++) {
        labels__ishard *sh = &t->shards[i];
        labels__idir *d = atomic_load(&sh->dir);
        if (d) {
            for (uint32_t c = 0; c < d->cap; c++) {
                _Atomic uintptr_t *chunk = atomic_load(&d->chunks[c]);
                if (!chunk) continue;
                for (uint32_t k = 0; k < LABELS__CHUNK; k++) {
                    uintptr_t v = atomic_load(&chunk[k]);
                    if (v && !(v & 1)) free((void *)v);
                }
                free((void *)chunk);
            }
        }
        while (d) {
            labels__idir *old = d->old;
            free(d);
            d = old;
        }
        free(sh->slots);
        pthread_mutex_destroy(&sh->mu);
    }
    free(t);
}

static size_t entry_bytes(const labels__ientry *e) {
    return malloc_usable_size((void *)e) + MALLOC_OVERHEAD;
}

static labels__ientry *slot_entry(const labels__ishard *sh, uint32_t local) {
    labels__idir *d = atomic_load_explicit((_Atomic(labels__idir *) *)&sh->dir, memory_order_acquire);
    _Atomic uintptr_t *chunk =
        atomic_load_explicit(&d->chunks[local >> LABELS__CHUNK_BITS], memory_order_acquire);
    return (labels__ientry *)atomic_load_explicit(&chunk[local & (LABELS__CHUNK - 1)], memory_order_acquire);
}

/* Finds s in the shard's index; returns the slot position or -1. */
static int64_t index_find(const labels__ishard *sh, uint32_t h32, base_str s) {
    if (!sh->slots) return -1;
    for (uint32_t i = h32 & sh->mask;; i = (i + 1) & sh->mask) {
        uint64_t v = sh->slots[i];
        if (!v) return -1;
        if ((uint32_t)(v >> 32) != h32) continue;
        const labels__ientry *e = slot_entry(sh, (uint32_t)v - 1);
        if (e->len == s.n && (s.n == 0 || memcmp(e->s, s.p, s.n) == 0)) return i;
    }
}

static int index_grow(labels__ishard *sh) {
    uint32_t ncap = sh->slots ? (sh->mask + 1) * 2 : 16;
    if (ncap == 0) return BASE_E_LIMIT;
    uint64_t *ns = labels__calloc(ncap, sizeof *ns);
    if (!ns) return BASE_E_NOMEM;
    uint32_t nmask = ncap - 1;
    if (sh->slots) {
        for (uint32_t i = 0; i <= sh->mask; i++) {
            uint64_t v = sh->slots[i];
            if (!v) continue;
            uint32_t j = (uint32_t)(v >> 32) & nmask;
            while (ns[j]) j = (j + 1) & nmask;
            ns[j] = v;
        }
        add(&sh->bytes, -(int64_t)((sh->mask + 1) * sizeof(uint64_t) + MALLOC_OVERHEAD));
        free(sh->slots);
    }
    sh->slots = ns;
    sh->mask = nmask;
    add(&sh->bytes, (int64_t)(ncap * sizeof(uint64_t) + MALLOC_OVERHEAD));
    return 0;
}

static void index_delete(labels__ishard *sh, uint32_t i) {
    uint32_t m = sh->mask;
    for (uint32_t j = (i + 1) & m;; j = (j + 1) & m) {
        uint64_t v = sh->slots[j];
        if (!v) break;
        uint32_t home = (uint32_t)(v >> 32) & m;
        /* Move v back to i if its home is not in the cyclic range (i, j]. */
        int in_range = i <= j ? (home > i && home <= j) : (home > i || home <= j);
        if (!in_range) {
            sh->slots[i] = v;
            i = j;
        }
    }
    sh->slots[i] = 0;
    sh->used--;
}

/* Makes sure the directory has a chunk for `local`. */
static int dir_reserve(labels__ishard *sh, uint32_t local) {
    uint32_t c = local >> LABELS__CHUNK_BITS;
    labels__idir *d = atomic_load_explicit(&sh->dir, memory_order_relaxed);
    if (!d || c >= d->cap) {
        uint32_t ncap = d ? d->cap * 2 : 4;
        while (ncap <= c) ncap *= 2;
        labels__idir *nd = labels__calloc(1, sizeof *nd + ncap * sizeof nd->chunks[0]);
        if (!nd) return BASE_E_NOMEM;
        nd->cap = ncap;
        nd->old = d;
        if (d)
            for (uint32_t k = 0; k < d->cap; k++)
                atomic_store_explicit(&nd->chunks[k],
                                      atomic_load_explicit(&d->chunks[k], memory_order_relaxed),
                                      memory_order_relaxed);
        add(&sh->bytes, (int64_t)(sizeof *nd + ncap * sizeof nd->chunks[0] + MALLOC_OVERHEAD));
        atomic_store_explicit(&sh->dir, nd, memory_order_release);
        d = nd;
    }
    if (!atomic_load_explicit(&d->chunks[c], memory_order_relaxed)) {
        _Atomic uintptr_t *chunk = labels__calloc(LABELS__CHUNK, sizeof *chunk);
        if (!chunk) return BASE_E_NOMEM;
        add(&sh->bytes, (int64_t)(LABELS__CHUNK * sizeof *chunk + MALLOC_OVERHEAD));
        atomic_store_explicit(&d->chunks[c], chunk, memory_order_release);
    }
    return 0;
}

static _Atomic uintptr_t *slot_ptr(labels__ishard *sh, uint32_t local) {
    labels__idir *d = atomic_load_explicit(&sh->dir, memory_order_relaxed);
    _Atomic uintptr_t *chunk =
        atomic_load_explicit(&d->chunks[local >> LABELS__CHUNK_BITS], memory_order_relaxed);
    return &chunk[local & (LABELS__CHUNK - 1)];
}

static void incref(_Atomic uint32_t *refs) {
    uint32_t r = atomic_load_explicit(refs, memory_order_relaxed);
    while (r < LABELS__IMMORTAL)
        if (atomic_compare_exchange_weak_explicit(refs, &r, r + 1, memory_order_relaxed,
                                                  memory_order_relaxed))
            return;
}

static int lookup(labels_itab *t, base_str s, int insert, labels_sym *ret) {
    if (s.n > LABELS_STRING_MAX) return BASE_E_LIMIT;
    t = ready(t);
    uint64_t h = XXH3_64bits(s.p ? s.p : "", s.n);
    uint32_t shard = (uint32_t)(h >> (64 - LABELS__SHARD_BITS));
    uint32_t h32 = (uint32_t)h;
    labels__ishard *sh = &t->shards[shard];
    int rc = 0;
    pthread_mutex_lock(&sh->mu);
    int64_t pos = index_find(sh, h32, s);
    if (pos >= 0) {
        uint32_t local = (uint32_t)sh->slots[pos] - 1;
        incref(&slot_entry(sh, local)->refs);
        *ret = local << LABELS__SHARD_BITS | shard;
        goto out;
    }
    if (!insert) {
        rc = BASE_E_NOTFOUND;
        goto out;
    }
    if (!sh->slots || (uint64_t)(sh->used + 1) * 10 > (uint64_t)(sh->mask + 1) * 7) {
        if ((rc = index_grow(sh)) < 0) goto out;
    }
    uint32_t local;
    if (sh->free_head) {
        local = sh->free_head - 1;
    } else {
        if (sh->next_local >= LABELS__LOCAL_MAX) {
            rc = BASE_E_LIMIT;
            goto out;
        }
        local = sh->next_local;
        if ((rc = dir_reserve(sh, local)) < 0) goto out;
    }
    labels__ientry *e = labels__malloc(sizeof *e + s.n + 1);
    if (!e) {
        rc = BASE_E_NOMEM;
        goto out;
    }
    atomic_init(&e->refs, 1);
    e->len = (uint32_t)s.n;
    if (s.n) memcpy(e->s, s.p, s.n);
    e->s[s.n] = '\0';
    _Atomic uintptr_t *slot = slot_ptr(sh, local);
    if (sh->free_head)
        sh->free_head = (uint32_t)(atomic_load_explicit(slot, memory_order_relaxed) >> 1);
    else
        sh->next_local++;
    atomic_store_explicit(slot, (uintptr_t)e, memory_order_release);
    uint32_t i = h32 & sh->mask;
    while (sh->slots[i]) i = (i + 1) & sh->mask;
    sh->slots[i] = (uint64_t)h32 << 32 | (local + 1);
    sh->used++;
    add(&sh->nstrings, 1);
    add(&sh->payload, (int64_t)s.n);
    add(&sh->bytes, (int64_t)entry_bytes(e));
    add(&sh->interned, 1);
    *ret = local << LABELS__SHARD_BITS | shard;
out:
    pthread_mutex_unlock(&sh->mu);
    return rc;
}

int labels_itab_intern(labels_itab *t, base_str s, labels_sym *ret_sym) {
    return lookup(t, s, 1, ret_sym);
}

int labels_itab_find(labels_itab *t, base_str s, labels_sym *ret_sym) {
    return lookup(t, s, 0, ret_sym);
}

void labels_itab_ref(labels_itab *t, labels_sym sym) {
    incref(&((labels__ientry *)labels__itab_entry(t, sym))->refs);
}

void labels_itab_unref(labels_itab *t, labels_sym sym) {
    labels__ientry *e = (labels__ientry *)labels__itab_entry(t, sym);
    uint32_t r = atomic_load_explicit(&e->refs, memory_order_relaxed);
    for (;;) {
        if (r >= LABELS__IMMORTAL) return;
        if (r <= 1) break;
        if (atomic_compare_exchange_weak_explicit(&e->refs, &r, r - 1, memory_order_release,
                                                  memory_order_relaxed))
            return;
    }
    /* Possibly the last reference: decide under the lock. */
    uint32_t shard = sym & (LABELS__NSHARDS - 1), local = sym >> LABELS__SHARD_BITS;
    labels__ishard *sh = &t->shards[shard];
    pthread_mutex_lock(&sh->mu);
    if (atomic_fetch_sub_explicit(&e->refs, 1, memory_order_acq_rel) == 1) {
        uint64_t h = XXH3_64bits(e->s, e->len);
        uint32_t h32 = (uint32_t)h;
        for (uint32_t i = h32 & sh->mask;; i = (i + 1) & sh->mask) {
            uint64_t v = sh->slots[i];
            if ((uint32_t)v == local + 1) {
                index_delete(sh, i);
                break;
            }
        }
        add(&sh->nstrings, -1);
        add(&sh->payload, -(int64_t)e->len);
        add(&sh->bytes, -(int64_t)entry_bytes(e));
        add(&sh->freed, 1);
        atomic_store_explicit(slot_ptr(sh, local), (uintptr_t)sh->free_head << 1 | 1, memory_order_relaxed);
        sh->free_head = local + 1;
        free(e);
    }
    pthread_mutex_unlock(&sh->mu);
}

base_str labels_itab_str(const labels_itab *t, labels_sym sym) {
    const labels__ientry *e = labels__itab_entry(t, sym);
    return (base_str){e->s, e->len};
}

void labels_itab_stats_get(const labels_itab *t, labels_itab_stats *ret) {
    labels_itab_stats s = {0};
    for (unsigned i = 0; i < LABELS__NSHARDS; i++) {
        const labels__ishard *sh = &t->shards[i];
        s.strings += atomic_load_explicit((_Atomic uint64_t *)&sh->nstrings, memory_order_relaxed);
        s.string_bytes += atomic_load_explicit((_Atomic uint64_t *)&sh->payload, memory_order_relaxed);
        s.bytes += atomic_load_explicit((_Atomic uint64_t *)&sh->bytes, memory_order_relaxed);
        s.interned += atomic_load_explicit((_Atomic uint64_t *)&sh->interned, memory_order_relaxed);
        s.freed += atomic_load_explicit((_Atomic uint64_t *)&sh->freed, memory_order_relaxed);
    }
    *ret = s;
}
