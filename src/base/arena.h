/* arena.h -- a bump allocator for memory that lives and dies together
 * (one collection cycle, one parse, one request).
 *
 * Allocations are 16-byte aligned and never freed one by one;
 * base_arena_reset() drops them all but keeps the largest chunk for reuse,
 * so a steady-state cycle allocates nothing from malloc. Returns NULL when
 * malloc fails or the arena's limit would be passed.
 */
#ifndef KELVIN_BASE_ARENA_H
#define KELVIN_BASE_ARENA_H

#include <stddef.h>

typedef struct base_arena_chunk base_arena_chunk;
typedef struct base_arena {
    base_arena_chunk *head;
    size_t chunk_size; /* default size of new chunks */
    size_t used;       /* bytes handed out since the last reset */
    size_t reserved;   /* bytes held in chunks */
    size_t limit;      /* 0 = none; cap on reserved */
} base_arena;

void base_arena_init(base_arena *a, size_t chunk_size, size_t limit);
void *base_arena_alloc(base_arena *a, size_t n);
/* Copies n bytes and adds a NUL. */
char *base_arena_strndup(base_arena *a, const char *s, size_t n);
char *base_arena_strdup(base_arena *a, const char *s);
void base_arena_reset(base_arena *a);
void base_arena_free(base_arena *a);

#endif
