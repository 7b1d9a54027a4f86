/* labels_int.h -- internals shared by the files of src/labels/ (and its
 * tests and fuzz targets): the intern table's layout, so that resolving a
 * sym is an inline function; the set layout; UTF-8 helpers with Go's
 * decoding rules; the regex parse tree and test hooks.
 *
 * Intern table invariants (see intern.c for the algorithm):
 *  1. sym = local << LABELS__SHARD_BITS | shard, and shard is the top bits
 *     of the string's xxh3 hash, so a sym names its shard.
 *  2. A directory slot holds an entry pointer (low bit 0) while the sym is
 *     live, a free-list link ((next + 1) << 1 | 1) while it is free.
 *  3. Chunks never move and are never freed before the table; directories
 *     are replaced, never edited in place past their published size.
 *  4. entry->refs goes 1 -> 0 only under the shard lock, and the entry is
 *     unlinked and freed in the same critical section.
 */
#ifndef KELVIN_LABELS_LABELS_INT_H
#define KELVIN_LABELS_LABELS_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "base/arena.h"
#include "labels/labels.h"

/* ---- intern table -------------------------------------------------- */

#define LABELS__SHARD_BITS 6
#define LABELS__NSHARDS    (1u << LABELS__SHARD_BITS)
#define LABELS__CHUNK_BITS 10
#define LABELS__CHUNK      (1u << LABELS__CHUNK_BITS)
#define LABELS__LOCAL_MAX  ((1u << (32 - LABELS__SHARD_BITS)) - 1)
/* References at or above this are immortal (never counted down). */
#define LABELS__IMMORTAL   0x80000000u

typedef struct labels__ientry {
    _Atomic uint32_t refs;
    uint32_t len;
    char s[]; /* len bytes and a NUL */
} labels__ientry;

typedef struct labels__idir {
    uint32_t cap;             /* chunk pointers in chunks[] */
    struct labels__idir *old; /* the directory this one replaced */
    _Atomic(_Atomic uintptr_t *) chunks[];
} labels__idir;

typedef struct labels__ishard {
    pthread_mutex_t mu;
    uint64_t *slots; /* hash32 << 32 | (local + 1); 0 = empty */
    uint32_t mask;   /* slot count - 1, or 0 before the first insert */
    uint32_t used;
    _Atomic(labels__idir *) dir;
    uint32_t next_local; /* first never-used local index */
    uint32_t free_head;  /* local + 1 of the first free one, 0 = none */
    _Atomic uint64_t nstrings, payload, bytes, interned, freed;
} __attribute__((aligned(64))) labels__ishard;

struct labels_itab {
    labels__ishard shards[LABELS__NSHARDS];
};

static inline const labels__ientry *labels__itab_entry(const labels_itab *t, labels_sym sym) {
    const labels__ishard *sh = &t->shards[sym & (LABELS__NSHARDS - 1)];
    uint32_t local = sym >> LABELS__SHARD_BITS;
    labels__idir *d = atomic_load_explicit((_Atomic(labels__idir *) *)&sh->dir, memory_order_acquire);
    _Atomic uintptr_t *chunk =
        atomic_load_explicit(&d->chunks[local >> LABELS__CHUNK_BITS], memory_order_acquire);
    return (const labels__ientry *)atomic_load_explicit(&chunk[local & (LABELS__CHUNK - 1)],
                                                        memory_order_acquire);
}

static inline base_str labels__sym_str(labels_sym sym) {
    const labels__ientry *e = labels__itab_entry(labels_global(), sym);
    return (base_str){e->s, e->len};
}

/* ---- allocation (alloc.c) ------------------------------------------ */

void *labels__malloc(size_t n);
void *labels__calloc(size_t n, size_t size);
void *labels__realloc(void *p, size_t n);
void *labels__aligned_alloc(size_t align, size_t n);
/* Test hook: the k-th allocation from now (0 = the next) fails, once;
 * k < 0 turns the hook off. */
void labels__fail_alloc(long k);

/* ---- label sets ---------------------------------------------------- */

struct labels_set {
    _Atomic uint32_t refs;
    uint16_t nbytes; /* bytes of data[] */
    uint16_t npairs;
    uint8_t data[]; /* varint(name sym) varint(value sym), sorted by name */
};

/* Striped process-wide counters of live sets and their bytes. */
void labels__count_set(int64_t dsets, int64_t dbytes);
void labels__count_regex_error(void);

/* ---- UTF-8 and text ------------------------------------------------ */

/* Decodes one character as Go's utf8.DecodeRune: on an invalid or
 * truncated sequence returns U+FFFD and width 1. n must be > 0. */
size_t labels__utf8_decode(const uint8_t *p, size_t n, uint32_t *ret_rune);
/* Byte offset of the first invalid sequence, or n if s is valid. */
size_t labels__utf8_invalid_at(const uint8_t *p, size_t n);
/* Compares as Go compares strings (bytewise, shorter first). */
static inline int labels__strcmp(base_str a, base_str b) {
    size_t n = a.n < b.n ? a.n : b.n;
    int c = n ? memcmp(a.p, b.p, n) : 0;
    if (c) return c;
    return a.n < b.n ? -1 : a.n > b.n;
}
/* snprintf into err (when errlen > 0). */
void labels__errf(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* ---- regex parse tree (regex_parse.c) ------------------------------ */

enum {
    RX_EMPTY,   /* matches "" */
    RX_NOMATCH, /* matches nothing */
    RX_LIT,     /* a run of runes (fold = case-insensitive) */
    RX_CLASS,   /* a character class */
    RX_ANY,     /* . (dotnl: also "\n") */
    RX_BOL,     /* ^ with (?m) */
    RX_EOL,     /* $ with (?m) */
    RX_BOT,     /* ^ or \A */
    RX_EOT,     /* $ or \z */
    RX_WORDB,   /* \b */
    RX_NWORDB,  /* \B */
    RX_CAP,     /* capture group: sub[0] */
    RX_STAR,    /* sub[0]* */
    RX_PLUS,    /* sub[0]+ */
    RX_QUEST,   /* sub[0]? */
    RX_REPEAT,  /* sub[0]{min,max}, max -1 = unbounded */
    RX_CAT,     /* sub[0] sub[1] ... */
    RX_ALT,     /* sub[0] | sub[1] | ... */
};

/* A Unicode property item of a class (\pL, \p{Greek}, negated \P...). */
typedef struct labels__rx_prop {
    const char *name; /* a Go category or script name, or "Any" */
    uint8_t neg;
} labels__rx_prop;

typedef struct labels__rx_class {
    uint32_t *ranges; /* lo, hi pairs, sorted and merged */
    size_t nranges;   /* number of pairs */
    labels__rx_prop *props;
    size_t nprops;
    uint8_t neg; /* [^...] */
} labels__rx_class;

typedef struct labels__rx_node labels__rx_node;
struct labels__rx_node {
    uint8_t op;
    uint8_t fold;      /* RX_LIT, RX_CLASS: case-insensitive */
    uint8_t dotnl;     /* RX_ANY */
    uint8_t nongreedy; /* repeats */
    uint8_t open;      /* RX_LIT built rune by rune in the current
                          concatenation: a repetition takes its last rune
                          only (a group's literal is closed: taken whole) */
    int height;        /* 1 + the highest sub-node's height */
    int min, max;      /* RX_REPEAT */
    uint32_t rune;     /* storage for a one-rune RX_LIT */
    uint32_t *runes;   /* RX_LIT: the literal run */
    size_t nrunes, rcap;
    int cap;       /* RX_CAP: 1-based index */
    base_str name; /* RX_CAP: name or empty */
    labels__rx_class *cls;
    labels__rx_node **sub;
    size_t nsub;
};

typedef struct labels__rx_tree {
    labels__rx_node *root;
    int ncap;
    base_str *names; /* names[i] is group i+1's name (empty if unnamed) */
} labels__rx_tree;

/* Parses s with Go's regexp/syntax Perl flags into nodes allocated from a.
 * Returns 0, BASE_E_PARSE (err gets Go's message) or BASE_E_NOMEM. */
int labels__rx_parse(base_arena *a, base_str s, labels__rx_tree *ret, char *err, size_t errlen);

/* ---- regex test hooks (regex.c) ------------------------------------ */

/* Matches with the fast path only: 1, 0, or -1 when the regex has none. */
int labels__regex_match_fast(const labels_regex *re, base_str s);
/* Matches with PCRE2 only: 1, 0, <0 on error; BASE_E_UNSUPPORTED when
 * the regex has no PCRE2 program (fast path only). */
int labels__regex_match_pcre(const labels_regex *re, base_str s);
/* The PCRE2 pattern the regex was translated to (for tests). */
base_str labels__regex_pcre_pattern(const labels_regex *re);

#endif
