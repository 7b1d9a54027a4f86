/* arena.c -- chunked bump allocator; see arena.h. */
#include "base/arena.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct base_arena_chunk {
    base_arena_chunk *next;
    size_t size, off;
    _Alignas(16) unsigned char mem[];
};

void base_arena_init(base_arena *a, size_t chunk_size, size_t limit) {
    memset(a, 0, sizeof *a);
    a->chunk_size = chunk_size ? chunk_size : 16384;
    a->limit = limit;
}

void *base_arena_alloc(base_arena *a, size_t n) {
    if (n > SIZE_MAX / 2) return NULL; /* rounding and the chunk header would wrap */
    n = (n + 15) & ~(size_t)15;
    if (n == 0) n = 16;
    base_arena_chunk *c = a->head;
    if (!c || c->size - c->off < n) {
        size_t sz = a->chunk_size;
        if (sz < n) sz = n;
        if (a->limit && a->reserved + sz > a->limit) return NULL;
        c = malloc(sizeof *c + sz);
        if (!c) return NULL;
        c->next = a->head;
        c->size = sz;
        c->off = 0;
        a->head = c;
        a->reserved += sz;
    }
    void *p = c->mem + c->off;
    c->off += n;
    a->used += n;
    return p;
}

char *base_arena_strndup(base_arena *a, const char *s, size_t n) {
    if (n == SIZE_MAX) return NULL;
    char *p = base_arena_alloc(a, n + 1);
    if (!p) return NULL;
    if (n) memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

char *base_arena_strdup(base_arena *a, const char *s) {
    return base_arena_strndup(a, s, strlen(s));
}

void base_arena_reset(base_arena *a) {
    /* Keep the largest chunk; if the cycle needed several, grow the default
     * so the next cycle fits in one. */
    base_arena_chunk *keep = NULL, *c = a->head;
    size_t total = 0;
    while (c) {
        base_arena_chunk *next = c->next;
        total += c->off;
        if (!keep || c->size > keep->size) {
            if (keep) free(keep);
            keep = c;
        } else {
            free(c);
        }
        c = next;
    }
    if (total > a->chunk_size) a->chunk_size = total + total / 4;
    a->head = keep;
    a->reserved = 0;
    if (keep) {
        if (keep->size < a->chunk_size && (!a->limit || a->chunk_size <= a->limit)) {
            free(keep);
            a->head = NULL;
        } else {
            keep->next = NULL;
            keep->off = 0;
            a->reserved = keep->size;
        }
    }
    a->used = 0;
}

void base_arena_free(base_arena *a) {
    base_arena_chunk *c = a->head;
    while (c) {
        base_arena_chunk *next = c->next;
        free(c);
        c = next;
    }
    a->head = NULL;
    a->used = a->reserved = 0;
}
