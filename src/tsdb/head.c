/* head.c -- series tables, postings, appenders, replay, GC, checkpoint
 * (design in head.h).
 *
 * Locks, in the order they may nest:
 *   commit_mu  -- creation/removal of series, applying samples, queueing
 *                 WAL records, GC, checkpoint scans. One at a time.
 *   idx_lock   -- rwlock over the postings index (written only under
 *                 commit_mu).
 *   shard mu   -- each of 256 shards of the hash and ref tables.
 *   stripe mu  -- per-series state (chunks, open chunk stream, OOO
 *                 store), stripes[ref & 4095].
 *   tomb_mu    -- the tombstones pointer (a leaf: held for a swap or to
 *                 take a reference, nothing else).
 *   del_mu     -- the held deleted series (a leaf, see HELD SERIES).
 * TOMBSTONES (deleted intervals per series, tomb_int.h) live in one
 * immutable table keyed by ref: a deletion (under commit_mu) builds the
 * next table and swaps it in; a series set keeps the table of its select.
 * They filter reads only; samples stay in the chunks until GC (or a block
 * written from the head) leaves them behind. Keeping them out of hseries
 * keeps a series at its malloc size class.
 * A series is reference counted: the tables hold one reference, appenders
 * and readers take one while they hold a pointer. RC_DEAD is set (under
 * commit_mu) when GC has unlinked it; the last reference frees it.
 * Postings keep their keys' interned ids alive with their own references
 * (ids are recycled once freed).
 *
 * HELD SERIES. While a WAL reader holds segments (wal.h HOLD), GC keeps
 * (ref, labels, segment) of each series it removes in h->del, added
 * before the series leaves the tables (so a checkpoint scan that misses
 * it finds it there). A checkpoint writes the entries whose segment is
 * at or after the hold as series records after the live ones, and once
 * committed forgets those before it.
 * Memory per series is the figure to watch (millions of series): series
 * table slots are 8-byte tagged pointers, postings are delta-coded with
 * one ref inline, a series' closed chunks share one allocation, and the
 * open chunk is a small staging stream instead of a tsdb_chunk_app (see
 * hseries). Allocation sizes are accounted as malloc_usable_size + 8.
 */
#include "tsdb/head.h"

#include <inttypes.h>
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/err.h"
#include "tsdb/chunk.h"
#include "tsdb/chunk_int.h"
#include "tsdb/head_int.h"
#include "tsdb/merge_int.h"
#include "tsdb/record.h"
#include "tsdb/tomb_int.h"

uint64_t tsdb__head_hash_mask = ~(uint64_t)0;

#define NSHARDS         256
#define NSTRIPES        4096
#define MALLOC_OVERHEAD 8

static size_t msize(const void *p) {
    return p ? malloc_usable_size((void *)p) + MALLOC_OVERHEAD : 0;
}

static int grow(void **p, size_t *cap, size_t need, size_t size) {
    if (need <= *cap) return 0;
    size_t nc = *cap ? *cap : 64;
    while (nc < need) nc *= 2;
    void *q = realloc(*p, nc * size);
    if (!q) return BASE_E_NOMEM;
    *p = q;
    *cap = nc;
    return 0;
}

typedef struct refvec {
    uint64_t *v;
    size_t n, cap;
} refvec;

static int rv_push(refvec *r, const uint64_t *refs, size_t n) {
    if (n == 0) return 0;
    if (grow((void **)&r->v, &r->cap, r->n + n, sizeof *r->v)) return BASE_E_NOMEM;
    memcpy(r->v + r->n, refs, n * sizeof *refs);
    r->n += n;
    return 0;
}

/* ---- series ------------------------------------------------------------- */

/* A chunk being added to a chunk list (its bytes are copied). */
typedef struct hchunk {
    int64_t mint, maxt;
    uint8_t *data;
    uint32_t len, n;
} hchunk;

/* CHUNK LISTS. The closed chunks of a series (and of its OOO store) live
 * in one allocation: nch metas, then every chunk's bytes back to back, in
 * time order and not overlapping. A chunk costs its bytes and 16 bytes of
 * meta, with no allocation of its own; adding or dropping chunks builds a
 * new block (once per chunk_samples samples, or per GC). A chunk spans at
 * most UINT32_MAX ms (the appender cuts earlier when needed). */
typedef struct cmeta {
    int64_t mint;
    uint32_t dmax; /* maxt - mint */
    uint32_t end;  /* offset just past its bytes, from the end of the metas */
} cmeta;

static inline const cmeta *cmetas(const uint8_t *b) {
    return (const cmeta *)(const void *)b;
}
static inline int64_t cm_maxt(const cmeta *m) {
    return (int64_t)((uint64_t)m->mint + m->dmax);
}
/* The bytes of chunk i of the list (b, n). */
static inline const uint8_t *cl_data(const uint8_t *b, uint32_t n, uint32_t i, uint32_t *ret_len) {
    const cmeta *m = cmetas(b);
    uint32_t start = i ? m[i - 1].end : 0;
    *ret_len = m[i].end - start;
    return b + (size_t)n * sizeof(cmeta) + start;
}
/* Samples in chunk i (read from its header). */
static uint32_t cl_count(const uint8_t *b, uint32_t n, uint32_t i) {
    uint32_t len;
    const uint8_t *d = cl_data(b, n, i, &len);
    tsdb_chunk_it it;
    tsdb_chunk_it_init(&it, d, len);
    return tsdb_chunk_it_count(&it);
}

/* Index of the first chunk that ends at or after t (n if none). */
static uint32_t cl_lower(const uint8_t *b, uint32_t n, int64_t t) {
    const cmeta *m = cmetas(b);
    uint32_t lo = 0, hi = n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (cm_maxt(&m[mid]) < t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Index of the chunk whose range holds t, or n. */
static uint32_t cl_at(const uint8_t *b, uint32_t n, int64_t t) {
    uint32_t i = cl_lower(b, n, t);
    return i < n && cmetas(b)[i].mint <= t ? i : n;
}

/* Replaces chunks [i0, i1) of the list (*b, *n) with the nn chunks of c:
 * 0, or BASE_E_NOMEM / BASE_E_LIMIT with the list unchanged. */
static int cl_splice(uint8_t **b, uint32_t *n, uint32_t i0, uint32_t i1, const hchunk *c, uint32_t nn) {
    const uint8_t *ob = *b;
    uint32_t on = *n, len;
    uint64_t bytes = 0, nm = (uint64_t)on - (i1 - i0) + nn;
    for (uint32_t i = 0; i < on; i++)
        if (i < i0 || i >= i1) bytes += (cl_data(ob, on, i, &len), len);
    for (uint32_t k = 0; k < nn; k++) {
        if ((uint64_t)c[k].maxt - (uint64_t)c[k].mint > UINT32_MAX) return BASE_E_LIMIT;
        bytes += c[k].len;
    }
    if (bytes > UINT32_MAX || nm > UINT32_MAX) return BASE_E_LIMIT;
    uint8_t *x = NULL;
    if (nm && !(x = malloc((size_t)nm * sizeof(cmeta) + (size_t)bytes))) return BASE_E_NOMEM;
    cmeta *m = (cmeta *)(void *)x;
    uint8_t *d = x + (size_t)nm * sizeof(cmeta);
    uint32_t off = 0, k = 0;
    for (uint32_t i = 0; i <= on; i++) {
        if (i == i0)
            for (uint32_t j = 0; j < nn; j++) {
                memcpy(d + off, c[j].data, c[j].len);
                off += c[j].len;
                m[k++] = (cmeta){c[j].mint, (uint32_t)((uint64_t)c[j].maxt - (uint64_t)c[j].mint), off};
            }
        if (i == on) break;
        if (i >= i0 && i < i1) continue;
        const uint8_t *src = cl_data(ob, on, i, &len);
        memcpy(d + off, src, len);
        off += len;
        m[k] = cmetas(ob)[i];
        m[k++].end = off;
    }
    free(*b);
    *b = x;
    *n = (uint32_t)nm;
    return 0;
}

/* One out-of-order sample: value as its bit pattern. */
typedef struct osamp {
    int64_t t;
    uint64_t v;
} osamp;

/* A series' out-of-order store, allocated with its first OOO sample. buf
 * holds the newest samples sorted by t (at most OOO_BUF_MAX); when it is
 * full it is merged with the chunks it overlaps (and a small neighbour)
 * into new immutable chunks, so the chunk list (cb, nch) stays sorted and
 * non-overlapping. No timestamp is in two places, nor in the series'
 * in-order chunks. */
typedef struct hooo {
    uint8_t *cb;
    uint32_t nch;
    uint32_t nbuf, capbuf;
    osamp *buf;
} hooo;

#define OOO_BUF_MAX 32

static void ooo_free(hooo *o) {
    if (!o) return;
    free(o->cb);
    free(o->buf);
    free(o);
}

/* rc counts references; RC_DEAD is set (under commit_mu) when GC has
 * unlinked the series. */
#define RC_DEAD ((uint32_t)1 << 31)

/* A series. Memory per active series matters (millions of them), so the
 * open chunk is not a tsdb_chunk_app (264 bytes of state plus buffers
 * with slack) but a small STAGING stream: the series keeps the last time,
 * interval and value, and a bit stream (chunk_int.h's writer, its buffer
 * grown here a few bytes at a time) holding per sample after the first
 *   a delta of delta of the timestamp: '0' for 0, else '10', '110',
 *   '1110' + 8, 16, 24 bits of its zigzag, or '1111' + 64 raw bits,
 *   and the value as Gorilla XOR bits (chunk_int.h's tsdb__xor_put);
 * the first sample's time is t0 and its value 64 raw bits. When the open
 * chunk is cut, the stream is decoded into the thread's tsdb_chunk_app
 * (hscratch), which picks the chunk encoding as always, and freed.
 * Readers decode the stream themselves (stit). */
typedef struct hseries {
    uint64_t ref, hash;
    labels_set *ls;
    uint8_t *cb;    /* closed in-order chunks (see CHUNK LISTS) */
    hooo *ooo;      /* NULL until the first out-of-order sample */
    int64_t t0;     /* first time in the open chunk */
    int64_t tlast;  /* last in-order time (when n || nch) */
    uint64_t vlast; /* bits of the last in-order value */
    uint64_t dlast; /* last interval in the open chunk */
    tsdb__bw w;     /* the open chunk's staging stream */
    _Atomic uint32_t rc;
    uint32_t nch;        /* closed chunks */
    uint32_t n;          /* samples in the open chunk */
    uint8_t lead, trail; /* the XOR window (lead 0xff: none yet) */
} hseries;

/* Whether s has an in-order sample (then tlast is the last one's time). */
static inline int series_has(const hseries *s) {
    return s->n || s->nch;
}
/* Time of the first in-order sample (only when there is one). */
static inline int64_t series_first_t(const hseries *s) {
    return s->nch ? cmetas(s->cb)[0].mint : s->t0;
}

static int series_dead(hseries *s) {
    return (atomic_load_explicit(&s->rc, memory_order_relaxed) & RC_DEAD) != 0;
}

static void series_free(hseries *s) {
    free(s->cb);
    ooo_free(s->ooo);
    free(s->w.buf);
    labels_unref(s->ls);
    free(s);
}

/* ---- staging streams ---------------------------------------------------- */

/* Bytes a sample may add to a stream (at most 145 bits and one flush). */
#define STAGE_RESERVE 24u

/* Appends (t, bits) to s's staging stream; t is after s's last sample and
 * at most UINT32_MAX ms after t0. 0 or BASE_E_NOMEM (s unchanged). */
static int stage_append(hseries *s, int64_t t, uint64_t bits) {
    tsdb__bw *w = &s->w;
    if ((size_t)w->len + STAGE_RESERVE > w->cap) { /* grow tightly: 32 bytes at a time */
        size_t cap = (size_t)w->len + STAGE_RESERVE + 32;
        if (cap > TSDB__STREAM_LIMIT) return BASE_E_LIMIT;
        uint8_t *b = realloc(w->buf, cap);
        if (!b) return BASE_E_NOMEM;
        size_t room = malloc_usable_size(b);
        w->buf = b;
        w->cap = (uint32_t)(room < TSDB__STREAM_LIMIT ? room : cap);
    }
    if (s->n == 0) {
        s->t0 = t;
        s->dlast = 0;
        s->lead = 0xff;
        s->trail = 0;
        tsdb__bw_put64(w, bits, 64);
    } else {
        uint64_t d = (uint64_t)t - (uint64_t)s->tlast, z = tsdb__zz(d - s->dlast);
        if (z == 0)
            tsdb__bw_put(w, 0, 1);
        else if (z < (1u << 8))
            tsdb__bw_put(w, (2u << 8) | z, 10);
        else if (z < (1u << 16))
            tsdb__bw_put(w, (6u << 16) | z, 19);
        else if (z < (1u << 24))
            tsdb__bw_put(w, (14ull << 24) | z, 28);
        else {
            tsdb__bw_put(w, 15, 4);
            tsdb__bw_put64(w, d - s->dlast, 64);
        }
        s->dlast = d;
        tsdb__xor_put(w, s->vlast, bits, &s->lead, &s->trail);
    }
    s->tlast = t;
    s->vlast = bits;
    s->n++;
    return 0;
}

/* The stream's bytes (pending bits included) into out: 0 or out's error. */
static int stage_emit(const hseries *s, base_buf *out) {
    size_t n = tsdb__bw_emit(&s->w, 0, 0, NULL);
    int e = base_buf_reserve(out, n + 1);
    if (e) return e;
    tsdb__bw_emit(&s->w, 0, 0, (uint8_t *)out->data + out->len);
    out->len += n;
    out->data[out->len] = '\0'; /* base_buf's invariant */
    return 0;
}

/* Reads a staging stream back. */
typedef struct stit {
    tsdb__br r;
    int64_t t;
    uint64_t d, v; /* last interval, value bits */
    uint32_t i, n;
    uint8_t lead, trail;
    uint8_t win; /* a window was read (the writer's lead is 0xff until then) */
} stit;

static void stit_init(stit *it, const uint8_t *p, size_t len, int64_t t0, uint32_t n) {
    memset(it, 0, sizeof *it);
    tsdb__br_init(&it->r, p, len);
    it->t = t0;
    it->n = n;
}

/* Next sample into it->t, it->v: 1, 0 at the end, <0 on damage. */
static inline int stit_next(stit *it) {
    if (it->i >= it->n) return 0;
    tsdb__br *r = &it->r;
    if (it->i == 0) {
        it->v = tsdb__br_get64(r, 64);
    } else {
        uint64_t dod;
        if (!tsdb__br_get(r, 1))
            dod = 0;
        else if (!tsdb__br_get(r, 1))
            dod = tsdb__unzz(tsdb__br_get(r, 8));
        else if (!tsdb__br_get(r, 1))
            dod = tsdb__unzz(tsdb__br_get(r, 16));
        else if (!tsdb__br_get(r, 1))
            dod = tsdb__unzz(tsdb__br_get(r, 24));
        else
            dod = tsdb__br_get64(r, 64);
        it->d += dod;
        it->t = (int64_t)((uint64_t)it->t + it->d);
        if (!it->win) { /* '11': a new window */
            tsdb__br peek = *r;
            it->win = tsdb__br_get(&peek, 2) == 3;
        }
        tsdb__xor_get(r, &it->v, &it->lead, &it->trail);
    }
    if (r->err) return r->err;
    it->i++;
    return 1;
}

/* Up to cap samples (as stit_next each): the count; *ret_err gets 0 at
 * the stream's end or before it, or the error that stopped it. */
static size_t stit_next_n(stit *it, int64_t *t, double *v, size_t cap, int *ret_err) {
    stit x = *it;
    size_t k = 0;
    int r = 1;
    while (k < cap && (r = stit_next(&x)) == 1) {
        t[k] = x.t;
        memcpy(&v[k], &x.v, 8);
        k++;
    }
    *it = x;
    *ret_err = r < 0 ? r : 0;
    return k;
}

static void series_get(hseries *s) {
    atomic_fetch_add_explicit(&s->rc, 1, memory_order_relaxed);
}
static void series_put(hseries *s) {
    if (s && (atomic_fetch_sub_explicit(&s->rc, 1, memory_order_acq_rel) & ~RC_DEAD) == 1) series_free(s);
}

/* ---- open-addressing series tables -------------------------------------- */

/* A slot is the series' pointer with 4 bits of its key's hash in the low
 * bits (series are malloc'ed, so 16-byte aligned): a probe dereferences a
 * series only when the tag matches (1 in 16 for another key), so lookups
 * by ref (every sample on the append and replay paths) cost about one
 * cache miss with 8-byte slots. 0: empty. */
typedef uintptr_t sslot;

#define STAG ((uintptr_t)15)
_Static_assert(_Alignof(max_align_t) > STAG, "series pointers need 4 free low bits");

typedef struct smap {
    sslot *slot;
    uint32_t cap, n; /* cap: power of two or 0 */
} smap;

static inline uint64_t mix64(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return x;
}

/* The hash of a key: the top 8 bits pick the shard, bits 48..51 the tag,
 * the low bits the home slot. */
static inline uint64_t skh(uint64_t key, int byref) {
    return byref ? mix64(key) : key;
}
static inline uint64_t skh_of(const hseries *s, int byref) {
    return byref ? mix64(s->ref) : s->hash;
}
static inline uintptr_t stag(uint64_t kh) {
    return (uintptr_t)(kh >> 48) & STAG;
}
static inline hseries *sptr(sslot x) {
    return (hseries *)(x & ~STAG);
}
/* The series in slot i of m, or NULL. */
static inline hseries *smap_at(const smap *m, uint32_t i) {
    return sptr(m->slot[i]);
}

static int smap_put(smap *m, hseries *s, int byref) {
    if ((m->n + 1) * 5 > (uint64_t)m->cap * 4) { /* load <= 0.8 */
        uint32_t ncap = m->cap ? m->cap * 2 : 16;
        sslot *ns = calloc(ncap, sizeof *ns);
        if (!ns) return BASE_E_NOMEM;
        for (uint32_t i = 0; i < m->cap; i++) {
            if (!m->slot[i]) continue;
            uint32_t j = (uint32_t)skh_of(sptr(m->slot[i]), byref) & (ncap - 1);
            while (ns[j]) j = (j + 1) & (ncap - 1);
            ns[j] = m->slot[i];
        }
        free(m->slot);
        m->slot = ns;
        m->cap = ncap;
    }
    uint64_t kh = skh_of(s, byref);
    uint32_t j = (uint32_t)kh & (m->cap - 1);
    while (m->slot[j]) j = (j + 1) & (m->cap - 1);
    m->slot[j] = (uintptr_t)s | stag(kh);
    m->n++;
    return 0;
}

static void smap_del(smap *m, hseries *s, int byref) {
    if (!m->cap) return;
    uint32_t mask = m->cap - 1, i = (uint32_t)skh_of(s, byref) & mask;
    while (m->slot[i] && sptr(m->slot[i]) != s) i = (i + 1) & mask;
    if (!m->slot[i]) return;
    m->slot[i] = 0;
    m->n--;
    /* backward-shift deletion keeps probe chains intact */
    for (uint32_t j = (i + 1) & mask; m->slot[j]; j = (j + 1) & mask) {
        uint32_t home = (uint32_t)skh_of(sptr(m->slot[j]), byref) & mask;
        if (((j - home) & mask) >= ((j - i) & mask)) {
            m->slot[i] = m->slot[j];
            m->slot[j] = 0;
            i = j;
        }
    }
}

static hseries *smap_get_ref(const smap *m, uint64_t ref) {
    if (!m->cap) return NULL;
    uint32_t mask = m->cap - 1;
    uint64_t kh = skh(ref, 1);
    uintptr_t tag = stag(kh);
    for (uint32_t i = (uint32_t)kh & mask; m->slot[i]; i = (i + 1) & mask)
        if ((m->slot[i] & STAG) == tag && sptr(m->slot[i])->ref == ref) return sptr(m->slot[i]);
    return NULL;
}

static hseries *smap_get_hash(const smap *m, uint64_t hash, const labels_set *ls) {
    if (!m->cap) return NULL;
    uint32_t mask = m->cap - 1;
    uintptr_t tag = stag(hash);
    for (uint32_t i = (uint32_t)hash & mask; m->slot[i]; i = (i + 1) & mask) {
        hseries *s = sptr(m->slot[i]);
        if ((m->slot[i] & STAG) == tag && s->hash == hash && labels_equal(s->ls, ls)) return s;
    }
    return NULL;
}

typedef struct shard {
    pthread_mutex_t mu;
    smap byhash, byref;
} shard;

/* ---- postings index ----------------------------------------------------- */

/* A postings list: the refs of the series holding one label pair,
 * ascending. A single ref is kept inline (the values of unique labels such
 * as a GPU UUID have one series each); more are LEB128 deltas in a block
 * headed by the last ref and the block's capacity, so adding a ref larger
 * than the last (nearly every add: refs grow) writes a byte or two at the
 * end. Other adds and GC decode and re-encode the list. */
typedef struct plist {
    uint32_t n;   /* refs */
    uint32_t len; /* delta bytes in the block (n > 1) */
    union {
        uint64_t one; /* n == 1 */
        uint8_t *blk; /* n > 1: pblk header, then len bytes of deltas */
    } u;
} plist;

typedef struct pblk {
    uint64_t last;
    uint32_t cap; /* delta bytes the block has room for */
    uint32_t pad;
} pblk;

static inline uint8_t *pdeltas(const plist *p) {
    return p->u.blk + sizeof(pblk);
}
static inline pblk *phdr(const plist *p) {
    return (pblk *)(void *)p->u.blk;
}

/* Decodes one delta (trusted bytes, written by plist_put_delta). */
static inline uint64_t pget(const uint8_t **q) {
    uint64_t x = 0;
    for (unsigned sh = 0;; sh += 7) {
        uint8_t b = *(*q)++;
        x |= (uint64_t)(b & 0x7f) << sh;
        if (b < 0x80) return x;
    }
}

static void plist_free(plist *p) {
    if (p->n > 1) free(p->u.blk);
    memset(p, 0, sizeof *p);
}

/* Encodes the ascending refs r[0..n) into p (freed first on success). */
static int plist_build(plist *p, const uint64_t *r, size_t n) {
    if (n > UINT32_MAX) return BASE_E_LIMIT;
    if (n <= 1) {
        plist_free(p);
        p->n = (uint32_t)n;
        if (n) p->u.one = r[0];
        return 0;
    }
    size_t cap = 0;
    uint64_t prev = 0;
    for (size_t i = 0; i < n; i++) {
        uint8_t tmp[10];
        cap += tsdb__put_uvarint(tmp, r[i] - prev);
        prev = r[i];
    }
    if (cap > UINT32_MAX - 64) return BASE_E_LIMIT;
    uint8_t *b = malloc(sizeof(pblk) + cap);
    if (!b) return BASE_E_NOMEM;
    plist_free(p);
    p->u.blk = b;
    p->n = (uint32_t)n;
    uint8_t *q = pdeltas(p);
    prev = 0;
    for (size_t i = 0; i < n; i++) {
        q += tsdb__put_uvarint(q, r[i] - prev);
        prev = r[i];
    }
    p->len = (uint32_t)cap;
    size_t room = malloc_usable_size(b) - sizeof(pblk); /* use the slack */
    *phdr(p) = (pblk){r[n - 1], room < UINT32_MAX / 2 ? (uint32_t)room : (uint32_t)cap, 0};
    return 0;
}

/* Appends the refs of p to out (ascending). */
static int plist_push(const plist *p, refvec *out) {
    if (!p->n) return 0;
    if (grow((void **)&out->v, &out->cap, out->n + p->n, sizeof *out->v)) return BASE_E_NOMEM;
    if (p->n == 1) {
        out->v[out->n++] = p->u.one;
        return 0;
    }
    const uint8_t *q = pdeltas(p);
    uint64_t r = 0;
    for (uint32_t i = 0; i < p->n; i++) {
        r += pget(&q);
        out->v[out->n++] = r;
    }
    return 0;
}

static int plist_add(plist *p, uint64_t ref) {
    if (p->n == 0) {
        p->u.one = ref;
        p->n = 1;
        return 0;
    }
    uint64_t last = p->n == 1 ? p->u.one : phdr(p)->last;
    if (ref > last && p->n > 1) { /* the common case */
        uint8_t tmp[10];
        unsigned k = tsdb__put_uvarint(tmp, ref - last);
        pblk *hd = phdr(p);
        if (p->len + k > hd->cap) {
            if (p->n == UINT32_MAX || hd->cap > UINT32_MAX / 2 - 64) return BASE_E_LIMIT;
            uint32_t cap = hd->cap * 2 > p->len + k ? hd->cap * 2 : p->len + k;
            uint8_t *b = realloc(p->u.blk, sizeof(pblk) + cap);
            if (!b) return BASE_E_NOMEM;
            p->u.blk = b;
            size_t room = malloc_usable_size(b) - sizeof(pblk);
            phdr(p)->cap = room < UINT32_MAX / 2 ? (uint32_t)room : cap;
        }
        memcpy(pdeltas(p) + p->len, tmp, k);
        p->len += k;
        phdr(p)->last = ref;
        p->n++;
        return 0;
    }
    refvec r = {0};
    int e = plist_push(p, &r);
    if (!e) e = grow((void **)&r.v, &r.cap, r.n + 1, sizeof *r.v);
    if (!e) {
        size_t i = r.n;
        while (i > 0 && r.v[i - 1] > ref) i--;
        if (i == 0 || r.v[i - 1] != ref) {
            memmove(r.v + i + 1, r.v + i, (r.n - i) * sizeof *r.v);
            r.v[i] = ref;
            r.n++;
            e = plist_build(p, r.v, r.n);
        }
    }
    free(r.v);
    return e;
}

/* Bytes p holds on the heap. */
static size_t plist_bytes(const plist *p) {
    return p->n > 1 ? msize(p->u.blk) : 0;
}

/* labels_sym -> value, open addressing; LABELS_SYM_NONE marks a free slot. */
typedef struct umap { /* -> pointer (label names) */
    labels_sym *key;
    void **val;
    uint32_t cap, n;
} umap;

typedef struct pmap { /* -> postings list (the values of one name) */
    labels_sym *key;
    plist *val;
    uint32_t cap, n;
} pmap;

typedef struct nament {
    labels_sym name;
    pmap values;
} nament;

static inline uint32_t symhome(labels_sym k, uint32_t cap) {
    return (uint32_t)mix64(k) & (cap - 1);
}

/* Slot of key k in a map of cap slots, or the free slot where it would go. */
static uint32_t sym_slot(const labels_sym *key, uint32_t cap, labels_sym k) {
    uint32_t i = symhome(k, cap);
    while (key[i] != LABELS_SYM_NONE && key[i] != k) i = (i + 1) & (cap - 1);
    return i;
}

static labels_sym *sym_keys(uint32_t cap) {
    labels_sym *k = malloc(cap * sizeof *k);
    if (k) memset(k, 0xff, cap * sizeof *k); /* LABELS_SYM_NONE */
    return k;
}

static void *umap_get(const umap *m, labels_sym k) {
    if (!m->cap) return NULL;
    uint32_t i = sym_slot(m->key, m->cap, k);
    return m->key[i] == k ? m->val[i] : NULL;
}

/* Rehashes a map's n-slot key array and parallel value array (values of vsz
 * bytes) into ncap slots: 0 and the new arrays (the caller frees the old
 * ones), or BASE_E_NOMEM with nothing changed. */
static int sym_rehash(const labels_sym *key, const void *val, size_t vsz, uint32_t cap, uint32_t ncap,
                      labels_sym **ret_key, void **ret_val) {
    labels_sym *nk = sym_keys(ncap);
    char *nv = calloc(ncap, vsz);
    if (!nk || !nv) {
        free(nk);
        free(nv);
        return BASE_E_NOMEM;
    }
    for (uint32_t i = 0; i < cap; i++) {
        if (key[i] == LABELS_SYM_NONE) continue;
        uint32_t j = sym_slot(nk, ncap, key[i]);
        nk[j] = key[i];
        memcpy(nv + (size_t)j * vsz, (const char *)val + (size_t)i * vsz, vsz);
    }
    *ret_key = nk;
    *ret_val = nv;
    return 0;
}

/* Load <= 0.875: 4-byte keys probe fast. */
static inline int sym_full(uint32_t n, uint32_t cap) {
    return (n + 1) * 8 > (uint64_t)cap * 7;
}

static int umap_put(umap *m, labels_sym k, void *v) {
    if (sym_full(m->n, m->cap)) {
        uint32_t ncap = m->cap ? m->cap * 2 : 8;
        labels_sym *nk;
        void *nv;
        if (sym_rehash(m->key, m->val, sizeof *m->val, m->cap, ncap, &nk, &nv)) return BASE_E_NOMEM;
        free(m->key);
        free(m->val);
        m->key = nk;
        m->val = nv;
        m->cap = ncap;
    }
    uint32_t j = sym_slot(m->key, m->cap, k);
    m->key[j] = k;
    m->val[j] = v;
    m->n++;
    return 0;
}

static void umap_free(umap *m) {
    free(m->key);
    free(m->val);
    memset(m, 0, sizeof *m);
}

static plist *pmap_get(const pmap *m, labels_sym k) {
    if (!m->cap) return NULL;
    uint32_t i = sym_slot(m->key, m->cap, k);
    return m->key[i] == k ? &m->val[i] : NULL;
}

/* Inserts k (absent) with list *p moved in; returns its slot's list (valid
 * until the next put) or NULL (out of memory; *p untouched). */
static plist *pmap_put(pmap *m, labels_sym k, const plist *p) {
    if (sym_full(m->n, m->cap)) {
        uint32_t ncap = m->cap ? m->cap * 2 : 4;
        labels_sym *nk;
        void *nv;
        if (sym_rehash(m->key, m->val, sizeof *m->val, m->cap, ncap, &nk, &nv)) return NULL;
        free(m->key);
        free(m->val);
        m->key = nk;
        m->val = nv;
        m->cap = ncap;
    }
    uint32_t j = sym_slot(m->key, m->cap, k);
    m->key[j] = k;
    m->val[j] = *p;
    m->n++;
    return &m->val[j];
}

/* Frees the map's arrays (not the lists). */
static void pmap_free(pmap *m) {
    free(m->key);
    free(m->val);
    memset(m, 0, sizeof *m);
}

/* ---- the head ----------------------------------------------------------- */

/* Per-thread scratch of the append path: chunk bytes, and the appender
 * that encodes an open chunk when it is cut. */
typedef struct hscratch {
    base_buf cut;
    tsdb_chunk_app app;
} hscratch;

struct tsdb_head {
    tsdb_head_opts o;
    tsdb_wal *wal;
    pthread_mutex_t commit_mu;
    pthread_rwlock_t idx_lock;
    umap names; /* -> nament */
    plist all;
    shard shards[NSHARDS];
    pthread_mutex_t stripes[NSTRIPES];
    uint64_t next_ref;
    _Atomic uint64_t nseries;
    _Atomic int64_t min_valid;    /* written under commit_mu */
    _Atomic int64_t bmint, bmaxt; /* tsdb_head_bounds */
    _Atomic uint64_t csamples;    /* samples in closed in-order chunks */
    pthread_mutex_t tomb_mu;      /* guards tomb (the pointer) */
    tsdb__tomb *_Atomic tomb;     /* tombstones by series ref; NULL: none */
    hscratch scr;                 /* scratch, under commit_mu (replay: worker 0's) */
    base_buf frames, rec;         /* scratch, under commit_mu */
    tsdb_append_result totals;
    uint64_t created, removed, replay_rejected;
    uint64_t replay_corrupt;                   /* chunks entries not installed */
    uint64_t checkpoints, ckpt_bytes, ckpt_ms; /* under commit_mu */
    int replaying;
    pthread_mutex_t del_mu; /* guards del (see HELD SERIES) */
    struct hdel *del;
    size_t ndel, capdel;
};

/* A series GC removed while a WAL reader held a segment that may name it:
 * seg is the segment being written at its removal (the WAL written out
 * first), so every record naming ref is in segments <= seg. */
typedef struct hdel {
    uint64_t ref, seg;
    labels_set *ls;
} hdel;

/* Remembers n series (refs and labels) removed at the current segment
 * when a hold reaches it (commit_mu held, or replay). 0 or BASE_E_NOMEM
 * (nothing remembered). */
static int del_remember(tsdb_head *h, const uint64_t *refs, labels_set *const *ls, size_t n) {
    uint64_t hold = h->wal ? tsdb_wal_held(h->wal) : 0;
    if (!n || !hold) return 0;
    (void)tsdb_wal_flush(h->wal); /* their records are in segments <= seg */
    uint64_t seg = tsdb_wal_segment(h->wal);
    if (seg < hold) return 0;
    pthread_mutex_lock(&h->del_mu);
    int e = grow((void **)&h->del, &h->capdel, h->ndel + n, sizeof *h->del);
    for (size_t i = 0; !e && i < n; i++)
        h->del[h->ndel++] = (hdel){.ref = refs[i], .seg = seg, .ls = labels_ref(ls[i])};
    pthread_mutex_unlock(&h->del_mu);
    return e;
}

/* The current tombstones, referenced (NULL: none). */
static tsdb__tomb *tomb_get(tsdb_head *h) {
    if (!atomic_load_explicit(&h->tomb, memory_order_relaxed)) return NULL; /* the usual case */
    pthread_mutex_lock(&h->tomb_mu);
    tsdb__tomb *t = tsdb__tomb_ref(atomic_load_explicit(&h->tomb, memory_order_relaxed));
    pthread_mutex_unlock(&h->tomb_mu);
    return t;
}

/* Publishes t (its reference moves to the head). */
static void tomb_set(tsdb_head *h, tsdb__tomb *t) {
    if (t && !t->nser) {
        tsdb__tomb_unref(t);
        t = NULL;
    }
    pthread_mutex_lock(&h->tomb_mu);
    tsdb__tomb *old = atomic_load_explicit(&h->tomb, memory_order_relaxed);
    atomic_store_explicit(&h->tomb, t, memory_order_relaxed);
    pthread_mutex_unlock(&h->tomb_mu);
    tsdb__tomb_unref(old);
}

static shard *hshard(tsdb_head *h, uint64_t hash) {
    return &h->shards[hash >> 56];
}
static shard *rshard(tsdb_head *h, uint64_t ref) {
    return &h->shards[mix64(ref) >> 56];
}
static pthread_mutex_t *stripe(tsdb_head *h, const hseries *s) {
    return &h->stripes[s->ref & (NSTRIPES - 1)];
}

/* Locks s's stripe for the append and replay paths, except while the WAL
 * is replayed: then each series belongs to one replay worker (ref %
 * workers) and nothing else can reach the head, so the lock (two atomic
 * operations a sample) is skipped. Returns what sunlock takes. */
static pthread_mutex_t *slock(tsdb_head *h, const hseries *s) {
    if (h->replaying) return NULL;
    pthread_mutex_t *mu = stripe(h, s);
    pthread_mutex_lock(mu);
    return mu;
}
static void sunlock(pthread_mutex_t *mu) {
    if (mu) pthread_mutex_unlock(mu);
}

static uint64_t series_hash(const labels_set *ls) {
    return labels_hash(ls) & tsdb__head_hash_mask;
}

/* Looks a series up by labels and takes a reference. */
static hseries *lookup_hash(tsdb_head *h, uint64_t hash, const labels_set *ls) {
    shard *sh = hshard(h, hash);
    pthread_mutex_lock(&sh->mu);
    hseries *s = smap_get_hash(&sh->byhash, hash, ls);
    if (s) series_get(s);
    pthread_mutex_unlock(&sh->mu);
    return s;
}

static hseries *lookup_ref(tsdb_head *h, uint64_t ref) {
    shard *sh = rshard(h, ref);
    pthread_mutex_lock(&sh->mu);
    hseries *s = smap_get_ref(&sh->byref, ref);
    if (s) series_get(s);
    pthread_mutex_unlock(&sh->mu);
    return s;
}

static int index_add(tsdb_head *h, hseries *s) {
    labels_itab *it = labels_global();
    labels_iter li;
    labels_sym n, v;
    int e = 0;
    pthread_rwlock_wrlock(&h->idx_lock);
    labels_iter_init(&li, s->ls);
    while (!e && labels_iter_next_sym(&li, &n, &v)) {
        nament *ne = umap_get(&h->names, n);
        if (!ne) {
            if (!(ne = calloc(1, sizeof *ne)) || umap_put(&h->names, n, ne)) {
                free(ne);
                e = BASE_E_NOMEM;
                break;
            }
            ne->name = n;
            labels_itab_ref(it, n);
        }
        plist *p = pmap_get(&ne->values, v);
        if (!p) {
            if (!(p = pmap_put(&ne->values, v, &(plist){0}))) {
                e = BASE_E_NOMEM;
                break;
            }
            labels_itab_ref(it, v);
        }
        e = plist_add(p, s->ref);
    }
    if (!e) e = plist_add(&h->all, s->ref);
    pthread_rwlock_unlock(&h->idx_lock);
    return e;
}

/* Creates series ls with ref (0: the next one). commit_mu held. Returns a
 * referenced series or NULL (out of memory). */
static hseries *series_create(tsdb_head *h, const labels_set *ls, uint64_t hash, uint64_t ref) {
    hseries *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->ref = ref ? ref : h->next_ref;
    s->hash = hash;
    s->ls = labels_ref(ls);
    atomic_init(&s->rc, 2); /* tables + caller */
    shard *a = hshard(h, hash), *b = rshard(h, s->ref);
    pthread_mutex_lock(&a->mu);
    int e = smap_put(&a->byhash, s, 0);
    pthread_mutex_unlock(&a->mu);
    if (!e) {
        pthread_mutex_lock(&b->mu);
        e = smap_put(&b->byref, s, 1);
        pthread_mutex_unlock(&b->mu);
        if (e) {
            pthread_mutex_lock(&a->mu);
            smap_del(&a->byhash, s, 0);
            pthread_mutex_unlock(&a->mu);
        }
    }
    if (e) {
        series_free(s);
        return NULL;
    }
    /* On an index failure the series stays reachable by hash/ref but is
     * missing from some postings: only selects miss it. Rare (NOMEM). */
    (void)index_add(h, s);
    if (s->ref >= h->next_ref) h->next_ref = s->ref + 1;
    atomic_fetch_add_explicit(&h->nseries, 1, memory_order_relaxed);
    h->created++;
    return s;
}

enum { AP_OK, AP_OOO_OK, AP_NOOP, AP_OOO, AP_DUP, AP_OLD, AP_NOMEM };

static uint32_t chunk_max(const tsdb_head *h) {
    return h->o.chunk_samples ? h->o.chunk_samples : TSDB_CHUNK_DEFAULT_SAMPLES;
}

/* Widens the head's bounds to t (appenders hold commit_mu, but replay
 * workers run in parallel). */
static void bounds_add(tsdb_head *h, int64_t t) {
    int64_t m = atomic_load_explicit(&h->bmaxt, memory_order_relaxed);
    while (t > m && !atomic_compare_exchange_weak_explicit(&h->bmaxt, &m, t, memory_order_relaxed,
                                                           memory_order_relaxed)) {
    }
    m = atomic_load_explicit(&h->bmint, memory_order_relaxed);
    while (t < m && !atomic_compare_exchange_weak_explicit(&h->bmint, &m, t, memory_order_relaxed,
                                                           memory_order_relaxed)) {
    }
}

/* 1 and the value bits if the chunk holds t, 0 if not, <0 if corrupt. */
static int chunk_find(const void *data, size_t len, int64_t t, uint64_t *ret_bits) {
    tsdb_chunk_it it;
    tsdb_chunk_it_init(&it, data, len);
    if (!tsdb_chunk_it_seek(&it, t)) return tsdb_chunk_it_err(&it);
    if (it.t != t) return 0;
    memcpy(ret_bits, &it.v, 8);
    return 1;
}

/* Looks t up in chunk list (b, n): as chunk_find. */
static int cl_find(const uint8_t *b, uint32_t n, int64_t t, uint64_t *ret_bits) {
    uint32_t i = cl_at(b, n, t), len;
    if (i == n) return 0;
    const uint8_t *d = cl_data(b, n, i, &len);
    return chunk_find(d, len, t, ret_bits);
}

/* Index of the first buffered OOO sample with timestamp >= t. */
static uint32_t obuf_lower(const hooo *o, int64_t t) {
    uint32_t lo = 0, hi = o->nbuf;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (o->buf[mid].t < t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Looks timestamp t up in s (stripe lock held): in the OOO store, and with
 * inorder also in the in-order chunks (scratch: for a snapshot of the open
 * one). 1 with *ret_bits when present, 0 when not, <0 on an error. */
static int series_find(hseries *s, int64_t t, int inorder, base_buf *scratch, uint64_t *ret_bits) {
    const hooo *o = s->ooo;
    if (o) {
        uint32_t i = obuf_lower(o, t);
        if (i < o->nbuf && o->buf[i].t == t) {
            *ret_bits = o->buf[i].v;
            return 1;
        }
        int r = cl_find(o->cb, o->nch, t, ret_bits);
        if (r) return r;
    }
    int64_t last_t = s->tlast;
    if (!inorder || !series_has(s) || t > last_t) return 0;
    if (t == last_t) {
        *ret_bits = s->vlast;
        return 1;
    }
    if (s->nch && t <= cm_maxt(&cmetas(s->cb)[s->nch - 1])) return cl_find(s->cb, s->nch, t, ret_bits);
    if (s->n && t >= s->t0) {
        base_buf_reset(scratch);
        int e = stage_emit(s, scratch);
        if (e) return e;
        stit it;
        stit_init(&it, (const uint8_t *)scratch->data, scratch->len, s->t0, s->n);
        while ((e = stit_next(&it)) == 1 && it.t < t) {
        }
        if (e == 1 && it.t == t) *ret_bits = it.v;
        return e == 1 ? it.t == t : e;
    }
    return 0;
}

/* Encodes samples m[0..n) (strictly increasing) into as few chunks of at
 * most max samples (and UINT32_MAX ms) as can be, all full but the last
 * one (the first one with from_right): *ret (count *ret_n) or an error. */
static int ooo_encode(const osamp *m, size_t n, uint32_t max, int from_right, base_buf *cut, hchunk **ret,
                      uint32_t *ret_n) {
    hchunk *c = NULL;
    size_t nc = 0, cap = 0, first = from_right && n % max ? n % max : max;
    tsdb_chunk_app app;
    tsdb_chunk_app_init(&app, max, 0);
    int e = 0;
    for (size_t i = 0; i < n && !e;) {
        size_t j = i, lim = nc ? max : first;
        for (; j < n && j - i < lim && (uint64_t)m[j].t - (uint64_t)m[i].t <= UINT32_MAX && !e; j++) {
            double v;
            memcpy(&v, &m[j].v, 8);
            e = tsdb_chunk_app_append(&app, m[j].t, v);
        }
        base_buf_reset(cut);
        if (!e) e = grow((void **)&c, &cap, nc + 1, sizeof *c);
        if (!e && !(e = tsdb_chunk_app_finish(&app, cut))) {
            c[nc] = (hchunk){m[i].t, m[j - 1].t, malloc(cut->len), (uint32_t)cut->len, (uint32_t)(j - i)};
            if (!c[nc].data)
                e = BASE_E_NOMEM;
            else
                memcpy(c[nc++].data, cut->data, cut->len);
        }
        i = j;
    }
    tsdb_chunk_app_free(&app);
    if (e) {
        for (size_t i = 0; i < nc; i++) free(c[i].data);
        free(c);
        return e;
    }
    *ret = c;
    *ret_n = (uint32_t)nc;
    return 0;
}

/* Merges the buffer of o into its chunks: the chunks the buffer's range
 * overlaps and a neighbour on each side with room left are decoded,
 * merged with the buffer and encoded again. 0, or an error with o
 * unchanged. */
static int ooo_flush(const tsdb_head *h, hooo *o, base_buf *cut) {
    if (!o->nbuf) return 0;
    uint32_t max = chunk_max(h);
    int64_t lo_t = o->buf[0].t, hi_t = o->buf[o->nbuf - 1].t;
    uint32_t i0 = cl_lower(o->cb, o->nch, lo_t), i1 = i0;
    while (i1 < o->nch && cmetas(o->cb)[i1].mint <= hi_t) i1++;
    if (i0 > 0 && cl_count(o->cb, o->nch, i0 - 1) < max) i0--;
    if (i1 < o->nch && cl_count(o->cb, o->nch, i1) < max) i1++;
    size_t nold = 0;
    for (uint32_t i = i0; i < i1; i++) nold += cl_count(o->cb, o->nch, i);
    osamp *old = malloc((nold ? nold : 1) * sizeof *old), *m = malloc((nold + o->nbuf) * sizeof *m);
    int e = old && m ? 0 : BASE_E_NOMEM;
    size_t k = 0;
    for (uint32_t i = i0; i < i1 && !e; i++) {
        uint32_t len;
        const uint8_t *d = cl_data(o->cb, o->nch, i, &len);
        tsdb_chunk_it it;
        tsdb_chunk_it_init(&it, d, len);
        while (k < nold && tsdb_chunk_it_next(&it)) {
            old[k].t = it.t;
            memcpy(&old[k++].v, &it.v, 8);
        }
        if (tsdb_chunk_it_err(&it)) e = tsdb_chunk_it_err(&it);
    }
    if (!e && k != nold) e = BASE_E_PARSE;
    size_t nm = 0;
    if (!e) { /* merge; a timestamp in both (never, by the invariant) keeps the chunk's */
        size_t a = 0, b = 0;
        while (a < nold || b < o->nbuf) {
            if (b == o->nbuf || (a < nold && old[a].t <= o->buf[b].t)) {
                if (b < o->nbuf && old[a].t == o->buf[b].t) b++;
                m[nm++] = old[a++];
            } else {
                m[nm++] = o->buf[b++];
            }
        }
    }
    hchunk *nc = NULL;
    uint32_t nn = 0;
    /* data arriving before the chunks (backfill in reverse) leaves the
     * partial chunk first, where the next flush will fill it */
    if (!e) e = ooo_encode(m, nm, max, nold && o->buf[0].t < old[0].t, cut, &nc, &nn);
    free(old);
    free(m);
    if (!e) e = cl_splice(&o->cb, &o->nch, i0, i1, nc, nn);
    for (uint32_t i = 0; i < nn; i++) free(nc[i].data);
    free(nc);
    if (e) return e;
    free(o->buf); /* many series see OOO samples once in a while */
    o->buf = NULL;
    o->nbuf = o->capbuf = 0;
    return 0;
}

/* Inserts (t, bits) into s's out-of-order store (stripe lock held).
 * inorder: t must not be in the in-order chunks either (appends; replay
 * trusts the WAL). AP_OOO_OK, AP_NOOP, AP_DUP or AP_NOMEM (any error; s
 * unchanged). */
static int ooo_insert(const tsdb_head *h, hseries *s, int64_t t, uint64_t bits, int inorder, base_buf *cut) {
    uint64_t have = 0;
    int f = series_find(s, t, inorder, cut, &have);
    if (f < 0) return AP_NOMEM;
    if (f) return have == bits ? AP_NOOP : AP_DUP;
    hooo *o = s->ooo;
    if (!o) {
        if (!(o = calloc(1, sizeof *o))) return AP_NOMEM;
        s->ooo = o;
    }
    if (o->nbuf == OOO_BUF_MAX && ooo_flush(h, o, cut)) return AP_NOMEM;
    if (o->nbuf == o->capbuf) {
        uint32_t cap = o->capbuf ? o->capbuf * 2 : 4;
        osamp *b = realloc(o->buf, cap * sizeof *b);
        if (!b) return AP_NOMEM;
        o->buf = b;
        o->capbuf = cap;
    }
    uint32_t i = obuf_lower(o, t);
    memmove(o->buf + i + 1, o->buf + i, (o->nbuf - i) * sizeof *o->buf);
    o->buf[i] = (osamp){t, bits};
    o->nbuf++;
    return AP_OOO_OK;
}

/* The time range of s's samples, in order and out of order (stripe lock
 * held): 0 when it has none. */
static int series_range(const hseries *s, int64_t *ret_mint, int64_t *ret_maxt) {
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    if (series_has(s)) {
        lo = series_first_t(s);
        hi = s->tlast;
    }
    const hooo *o = s->ooo;
    if (o && o->nch) {
        if (cmetas(o->cb)[0].mint < lo) lo = cmetas(o->cb)[0].mint;
        if (cm_maxt(&cmetas(o->cb)[o->nch - 1]) > hi) hi = cm_maxt(&cmetas(o->cb)[o->nch - 1]);
    }
    if (o && o->nbuf) {
        if (o->buf[0].t < lo) lo = o->buf[0].t;
        if (o->buf[o->nbuf - 1].t > hi) hi = o->buf[o->nbuf - 1].t;
    }
    if (lo > hi) return 0;
    *ret_mint = lo;
    *ret_maxt = hi;
    return 1;
}

static void scratch_init(hscratch *x, const tsdb_head *h) {
    x->cut = (base_buf)BASE_BUF_INIT;
    tsdb_chunk_app_init(&x->app, chunk_max(h), 0);
}
static void scratch_free(hscratch *x) {
    base_buf_free(&x->cut);
    tsdb_chunk_app_free(&x->app);
}

/* Cuts s's open chunk into its chunk list (stripe lock held): decodes the
 * staging stream into x->app, which encodes the chunk. 0, or an error
 * with s unchanged. */
static int series_cut(tsdb_head *h, hseries *s, hscratch *x) {
    base_buf *b = &x->cut;
    base_buf_reset(b);
    int e = stage_emit(s, b);
    if (e) return e;
    /* an open chunk installed from a checkpoint written with a larger
     * chunk_samples may hold more than the thread's appender takes */
    tsdb_chunk_app big, *app = &x->app;
    if (s->n > chunk_max(h)) {
        tsdb_chunk_app_init(&big, s->n, 0);
        app = &big;
    }
    tsdb_chunk_app_reset(app);
    stit it;
    stit_init(&it, (const uint8_t *)b->data, b->len, s->t0, s->n);
    while ((e = stit_next(&it)) == 1) {
        double v;
        memcpy(&v, &it.v, 8);
        if ((e = tsdb_chunk_app_append(app, it.t, v))) break;
    }
    if (!e && it.i != s->n) e = BASE_E_PARSE;
    base_buf_reset(b); /* the stream is decoded */
    if (!e) e = tsdb_chunk_app_finish(app, b);
    if (app == &big) tsdb_chunk_app_free(&big);
    if (e) {
        tsdb_chunk_app_reset(&x->app);
        return e;
    }
    hchunk c = {s->t0, s->tlast, (uint8_t *)b->data, (uint32_t)b->len, s->n};
    if ((e = cl_splice(&s->cb, &s->nch, s->nch, s->nch, &c, 1))) return e;
    atomic_fetch_add_explicit(&h->csamples, s->n, memory_order_relaxed);
    free(s->w.buf); /* the next chunk grows its own (average memory ~ half) */
    memset(&s->w, 0, sizeof s->w);
    s->n = 0;
    return 0;
}

/* Appends one sample (commit_mu held, or a replay worker that owns s;
 * takes the stripe lock, see slock). x: the thread's scratch. A sample at or before
 * the series' last one goes to the OOO store when the window allows it
 * (see head.h). */
static int series_append_cut(tsdb_head *h, hseries *s, int64_t t, double v, hscratch *x) {
    uint64_t bits;
    memcpy(&bits, &v, 8);
    if (t < atomic_load_explicit(&h->min_valid, memory_order_relaxed)) return AP_OLD;
    pthread_mutex_t *mu = slock(h, s);
    int r = AP_OK;
    int64_t last_t = s->tlast;
    if (series_has(s) && t <= last_t) {
        if (t == last_t) {
            r = bits == s->vlast ? AP_NOOP : AP_DUP;
        } else if (h->o.ooo_window_ms > 0) {
            int64_t maxt = atomic_load_explicit(&h->bmaxt, memory_order_relaxed), lim;
            if (__builtin_sub_overflow(maxt, h->o.ooo_window_ms, &lim)) lim = INT64_MIN;
            r = t >= lim ? ooo_insert(h, s, t, bits, 1, &x->cut) : AP_OLD;
            if (r == AP_OOO_OK) bounds_add(h, t);
        } else {
            r = AP_OOO;
        }
        goto out;
    }
    /* cut at chunk_samples, or before a chunk would span over UINT32_MAX ms */
    if ((s->n >= chunk_max(h) || (s->n && (uint64_t)t - (uint64_t)s->t0 > UINT32_MAX)) &&
        series_cut(h, s, x)) {
        r = AP_NOMEM;
        goto out;
    }
    if (stage_append(s, t, bits)) {
        r = AP_NOMEM;
        goto out;
    }
    bounds_add(h, t);
out:
    sunlock(mu);
    return r;
}

/* Replays one logged OOO sample into s's OOO store (no window check). */
static int series_ooo_replay(tsdb_head *h, hseries *s, int64_t t, double v, hscratch *x) {
    uint64_t bits;
    memcpy(&bits, &v, 8);
    pthread_mutex_t *mu = slock(h, s);
    int r = ooo_insert(h, s, t, bits, 0, &x->cut);
    if (r == AP_OOO_OK) bounds_add(h, t);
    sunlock(mu);
    return r;
}

static int series_append(tsdb_head *h, hseries *s, int64_t t, double v) {
    return series_append_cut(h, s, t, v, &h->scr);
}

static void count(tsdb_append_result *r, int ap) {
    switch (ap) {
    case AP_OK: r->appended++; break;
    case AP_OOO_OK:
        r->appended++;
        r->out_of_order_appended++;
        break;
    case AP_NOOP: r->noop++; break;
    case AP_OOO: r->out_of_order++; break;
    case AP_DUP: r->duplicate++; break;
    case AP_OLD: r->too_old++; break;
    default: break;
    }
}

static void res_add(tsdb_append_result *a, const tsdb_append_result *b) {
    a->appended += b->appended;
    a->out_of_order_appended += b->out_of_order_appended;
    a->noop += b->noop;
    a->out_of_order += b->out_of_order;
    a->duplicate += b->duplicate;
    a->too_old += b->too_old;
    a->unknown_ref += b->unknown_ref;
    a->series_created += b->series_created;
}

/* ---- appenders ---------------------------------------------------------- */

typedef struct aent {
    hseries *s;     /* referenced, or NULL until commit */
    labels_set *ls; /* referenced when added by labels */
    uint64_t hash, ref;
    int64_t t;
    double v;
} aent;

struct tsdb_head_app {
    tsdb_head *h;
    aent *e;
    size_t n, cap;
    tsdb_rec_sample *acc, *oacc; /* accepted in order, out of order */
    size_t acccap, oacccap;
    tsdb_rec_series *news;
    size_t nnews, newscap;
    labels_set *last_ls; /* cache: consecutive adds of one set (a reference,
                          * so its address cannot be reused meanwhile) */
    hseries *last_s;
    uint64_t last_hash;
};

int tsdb_head_app_new(tsdb_head *h, tsdb_head_app **ret) {
    tsdb_head_app *a = calloc(1, sizeof *a);
    if (!a) return BASE_E_NOMEM;
    a->h = h;
    *ret = a;
    return 0;
}

void tsdb_head_app_rollback(tsdb_head_app *a) {
    for (size_t i = 0; i < a->n; i++) {
        series_put(a->e[i].s);
        labels_unref(a->e[i].ls);
    }
    a->n = 0;
    labels_unref(a->last_ls);
    a->last_ls = NULL;
    a->last_s = NULL;
}

void tsdb_head_app_free(tsdb_head_app *a) {
    if (!a) return;
    tsdb_head_app_rollback(a);
    free(a->e);
    free(a->acc);
    free(a->oacc);
    free(a->news);
    free(a);
}

static aent *app_slot(tsdb_head_app *a) {
    if (a->n == a->cap) {
        size_t nc = a->cap ? a->cap * 2 : 64;
        aent *e = realloc(a->e, nc * sizeof *e);
        if (!e) return NULL;
        a->e = e;
        a->cap = nc;
    }
    aent *e = &a->e[a->n];
    memset(e, 0, sizeof *e);
    return e;
}

int tsdb_head_app_add(tsdb_head_app *a, const labels_set *ls, int64_t t, double v) {
    aent *e = app_slot(a);
    if (!e) return BASE_E_NOMEM;
    if (ls == a->last_ls && a->last_s) { /* consecutive samples of one set */
        e->hash = a->last_hash;
        e->s = a->last_s;
        series_get(e->s);
    } else {
        e->hash = series_hash(ls);
        e->s = lookup_hash(a->h, e->hash, ls);
        labels_unref(a->last_ls);
        a->last_ls = e->s ? labels_ref(ls) : NULL;
        a->last_hash = e->hash;
        a->last_s = e->s;
    }
    if (!e->s) e->ls = labels_ref(ls);
    e->t = t;
    e->v = v;
    a->n++;
    return 0;
}

int tsdb_head_app_add_ref(tsdb_head_app *a, uint64_t ref, int64_t t, double v) {
    aent *e = app_slot(a);
    if (!e) return BASE_E_NOMEM;
    e->ref = ref;
    e->s = lookup_ref(a->h, ref);
    e->t = t;
    e->v = v;
    a->n++;
    return 0;
}

int tsdb_head_app_commit(tsdb_head_app *a, tsdb_append_result *res) {
    tsdb_head *h = a->h;
    tsdb_append_result r;
    memset(&r, 0, sizeof r);
    int err = grow((void **)&a->acc, &a->acccap, a->n, sizeof *a->acc);
    if (!err && h->o.ooo_window_ms > 0) err = grow((void **)&a->oacc, &a->oacccap, a->n, sizeof *a->oacc);
    if (err) {
        tsdb_head_app_rollback(a);
        return err;
    }
    size_t nacc = 0, noacc = 0;
    a->nnews = 0;
    uint64_t ticket = 0;
    int queued = 0;
    pthread_mutex_lock(&h->commit_mu);
    for (size_t i = 0; i < a->n && !err; i++) {
        aent *e = &a->e[i];
        if (e->s && series_dead(e->s)) {
            series_put(e->s);
            e->s = NULL;
        }
        if (!e->s && e->ls) {
            e->s = lookup_hash(h, e->hash, e->ls);
            if (!e->s) {
                if ((err = grow((void **)&a->news, &a->newscap, a->nnews + 1, sizeof *a->news))) break;
                if (!(e->s = series_create(h, e->ls, e->hash, 0))) {
                    err = BASE_E_NOMEM;
                    break;
                }
                a->news[a->nnews++] = (tsdb_rec_series){e->s->ref, e->s->ls};
                r.series_created++;
            }
        } else if (!e->s) {
            e->s = lookup_ref(h, e->ref);
            if (!e->s) {
                r.unknown_ref++;
                continue;
            }
        }
        int ap = series_append(h, e->s, e->t, e->v);
        if (ap == AP_NOMEM) {
            err = BASE_E_NOMEM;
            break;
        }
        count(&r, ap);
        if (ap == AP_OK) a->acc[nacc++] = (tsdb_rec_sample){e->s->ref, e->t, e->v};
        if (ap == AP_OOO_OK) a->oacc[noacc++] = (tsdb_rec_sample){e->s->ref, e->t, e->v};
    }
    res_add(&h->totals, &r);
    /* Log what was applied, even after an error part way through: the head
     * holds it, and the WAL must match the head. */
    if (h->wal && (a->nnews || nacc || noacc)) {
        base_buf *f = &h->frames;
        base_buf_reset(f);
        size_t st;
        int e2 = 0;
        if (a->nnews) {
            st = tsdb_wal_frame_begin(f);
            tsdb_rec_enc_series(f, a->news, a->nnews);
            e2 = tsdb_wal_frame_end_z(f, st, tsdb_wal_compressing(h->wal));
        }
        if (!e2 && nacc) {
            st = tsdb_wal_frame_begin(f);
            tsdb_rec_enc_samples(f, a->acc, nacc);
            e2 = tsdb_wal_frame_end_z(f, st, tsdb_wal_compressing(h->wal));
        }
        if (!e2 && noacc) {
            st = tsdb_wal_frame_begin(f);
            tsdb_rec_enc_ooo_samples(f, a->oacc, noacc);
            e2 = tsdb_wal_frame_end_z(f, st, tsdb_wal_compressing(h->wal));
        }
        if (!e2) e2 = tsdb_wal_enqueue(h->wal, f->data, f->len, &ticket);
        if (!e2) queued = 1;
        if (!err) err = e2;
    }
    pthread_mutex_unlock(&h->commit_mu);
    if (queued) {
        int e2 = tsdb_wal_wait(h->wal, ticket);
        if (!err) err = e2;
    }
    tsdb_head_app_rollback(a);
    if (!err && res) *res = r;
    return err;
}

int tsdb_head_ref(tsdb_head *h, const labels_set *ls, uint64_t *ret_ref) {
    hseries *s = lookup_hash(h, series_hash(ls), ls);
    if (!s) return BASE_E_NOTFOUND;
    *ret_ref = s->ref;
    series_put(s);
    return 0;
}

tsdb_head_series *tsdb_head_pin(tsdb_head *h, uint64_t ref) {
    return (tsdb_head_series *)lookup_ref(h, ref);
}

tsdb_head_series *tsdb_head_pin_labels(tsdb_head *h, const labels_set *ls) {
    return (tsdb_head_series *)lookup_hash(h, series_hash(ls), ls);
}

void tsdb_head_unpin(tsdb_head_series *s) {
    series_put((hseries *)s);
}

uint64_t tsdb_head_series_ref(const tsdb_head_series *s) {
    return ((const hseries *)s)->ref;
}

int tsdb_head_app_add_pinned(tsdb_head_app *a, tsdb_head_series *ps, int64_t t, double v) {
    hseries *s = (hseries *)ps;
    aent *e = app_slot(a);
    if (!e) return BASE_E_NOMEM;
    series_get(s); /* dropped at commit; a series collected meanwhile is found dead there */
    e->s = s;
    e->ref = s->ref;
    e->t = t;
    e->v = v;
    a->n++;
    return 0;
}

/* ---- replay ------------------------------------------------------------- */

/* Replay runs on the thread that opens the WAL (the reader: the WAL reads
 * and CRC-checks frames in order and calls replay_rec) and, when more than
 * one core is online, on nw - 1 helper threads. Series records are applied
 * by the reader. Sample records and chunks records (checkpoints) are
 * copied into a batch; when it is full, or before a series record is
 * applied, the batch is handed to all nw workers (the reader is worker 0):
 * each decodes every record of the batch in order and applies only the
 * samples and chunks entries of the series it owns (series ref % nw), then
 * they meet at a barrier. So each series' data is applied by one thread in
 * WAL order, series exist before later samples refer to them and not
 * before earlier ones, and the tables, the alias map and the dense ref
 * table are read-only while workers run: the result equals a sequential
 * replay. Since a series belongs to one worker and nothing else can reach
 * the head yet, replay skips the stripe locks (slock). */

int tsdb__head_replay_threads;

#define REPLAY_MAX_WORKERS 4
#define REPLAY_BATCH_BYTES ((size_t)4 << 20)

struct replay;

typedef struct rworker {
    struct replay *rp;
    pthread_t th;
    unsigned id;
    hscratch scr;      /* append scratch (worker 0 uses h->scr) */
    uint64_t rejected; /* samples not applied, summed after each batch */
    uint64_t bad;      /* chunks entries not installed (damage) */
    char why[192];     /* the first one's description */
    int err;
} rworker;

typedef struct replay {
    tsdb_head *h;
    labels_builder b;
    smap alias; /* ref -> series, for refs whose labels already had a series */
    hseries **aliases;
    size_t nalias, capalias;
    uint64_t maxref;
    /* parallel replay (nw > 1) */
    unsigned nw;
    rworker w[REPLAY_MAX_WORKERS];
    base_buf batch; /* sample records, each as u32 length + payload */
    pthread_mutex_t mu;
    pthread_cond_t start, done;
    uint64_t gen; /* batches started (under mu) */
    unsigned ndone;
    int quit;
    int sync;      /* mu, start, done initialized */
    char why[192]; /* the first damaged chunks entry, for the report */
    /* ref -> series for refs below ndense: refs are dense and a commit's
     * are consecutive, so this turns the lookup of every replayed sample
     * into sequential reads (the ref table's slots are random). Grown by
     * the reader as series are created, read by workers between flushes. */
    hseries **dense;
    size_t ndense;
    /* tombstones replayed (by the reader), made a table at the end */
    tsdb__stone *stones;
    size_t nstones, capstones;
} replay;

/* Refs up to this use the dense table (8 bytes each while replaying). */
#define REPLAY_DENSE_MAX ((uint64_t)1 << 24)

static void dense_put(replay *rp, hseries *s) {
    if (s->ref >= REPLAY_DENSE_MAX) return;
    if (s->ref >= rp->ndense) {
        size_t n = rp->ndense ? rp->ndense : 4096;
        while (n <= s->ref) n *= 2;
        hseries **d = realloc(rp->dense, n * sizeof *d);
        if (!d) return; /* the ref table still finds it */
        memset(d + rp->ndense, 0, (n - rp->ndense) * sizeof *d);
        rp->dense = d;
        rp->ndense = n;
    }
    rp->dense[s->ref] = s;
}

/* The series a sample's ref names: by ref, else through an alias. */
static hseries *replay_resolve(const replay *rp, uint64_t ref) {
    hseries *s = ref < rp->ndense ? rp->dense[ref] : NULL;
    if (!s) s = smap_get_ref(&rp->h->shards[mix64(ref) >> 56].byref, ref);
    if (!s && rp->nalias) {
        hseries *al = smap_get_ref(&rp->alias, ref);
        if (al) s = (hseries *)al->ls;
    }
    return s;
}

/* Applies the samples of one record that worker id of nw owns. Replay is
 * bound by cache misses on the ref table and the series: samples are
 * decoded a window at a time, their slots prefetched, then their series,
 * then applied in order. */
#define REPLAY_WINDOW 32
static int replay_samples(replay *rp, tsdb_rec_dec *d, unsigned id, unsigned nw, hscratch *x,
                          uint64_t *rejected) {
    tsdb_head *h = rp->h;
    int ooo = d->type == TSDB_REC_OOO_SAMPLES;
    tsdb_rec_sample win[REPLAY_WINDOW];
    hseries *ser[REPLAY_WINDOW];
    int more = 1;
    while (more) {
        size_t n = 0;
        while (n < REPLAY_WINDOW) {
            if (tsdb_rec_dec_sample(d, &win[n]) != 1) {
                more = 0;
                break;
            }
            /* Without aliases a series' ref is the sample's ref (or it has
             * no series): filter before the lookup. */
            if (nw > 1 && !rp->nalias && win[n].ref % nw != id) continue;
            if (win[n].ref < rp->ndense) {
                __builtin_prefetch(&rp->dense[win[n].ref]);
            } else {
                uint64_t kh = mix64(win[n].ref);
                const smap *m = &h->shards[kh >> 56].byref;
                if (m->cap) __builtin_prefetch(&m->slot[kh & (m->cap - 1)]);
            }
            n++;
        }
        for (size_t k = 0; k < n; k++) {
            ser[k] = replay_resolve(rp, win[k].ref);
            if (ser[k]) {
                __builtin_prefetch(ser[k]);
                __builtin_prefetch((const char *)ser[k] + 64);
            }
        }
        for (size_t k = 0; k < n; k++) /* the end of the open chunk's stream, of our series only */
            if (ser[k] && (nw <= 1 || ser[k]->ref % nw == id) && ser[k]->w.buf)
                __builtin_prefetch(ser[k]->w.buf + ser[k]->w.len);
        for (size_t k = 0; k < n; k++) {
            hseries *s = ser[k];
            if (nw > 1 && (s ? s->ref : win[k].ref) % nw != id) continue;
            if (!s) {
                (*rejected)++;
                continue;
            }
            int ap = ooo ? series_ooo_replay(h, s, win[k].t, win[k].v, x)
                         : series_append_cut(h, s, win[k].t, win[k].v, x);
            if (ap == AP_NOMEM) return BASE_E_NOMEM;
            if (ap != AP_OK && ap != AP_OOO_OK) (*rejected)++;
        }
    }
    return 0;
}

/* ---- installing checkpointed chunks (TSDB_REC_CHUNKS) ------------------- */

/* Checks a chunk before it is installed without decoding it: the header
 * parses and declares n >= 1 samples, the first at c->mint, and n fits
 * the range. Returns n, or 0 when it is damaged. */
static uint32_t chunk_check(const tsdb_rec_chunk *c) {
    tsdb_chunk_it it;
    if (tsdb_chunk_it_init(&it, c->data, c->len)) return 0;
    uint32_t n = tsdb_chunk_it_count(&it);
    if (!n || (uint64_t)c->maxt - (uint64_t)c->mint < n - 1) return 0;
    if (!tsdb_chunk_it_next(&it) || it.t != c->mint) return 0;
    return n == 1 && c->maxt != c->mint ? 0 : n;
}

/* The last sample of a chunk (decodes it all): 0, or <0 when damaged or
 * when it does not end at c->maxt. */
static int chunk_last(const tsdb_rec_chunk *c, int64_t *ret_t, uint64_t *ret_bits) {
    tsdb_chunk_it it;
    tsdb_chunk_it_init(&it, c->data, c->len);
    int64_t t = 0;
    double v = 0;
    while (tsdb_chunk_it_next(&it)) {
        t = it.t;
        v = it.v;
    }
    if (tsdb_chunk_it_err(&it) || it.i != it.n || t != c->maxt) return BASE_E_PARSE;
    *ret_t = t;
    memcpy(ret_bits, &v, 8);
    return 0;
}

/* Appends the chunks of l (all after the list's end) to the list (*b, *n)
 * in one new allocation: 0, or BASE_E_NOMEM / BASE_E_LIMIT unchanged. */
static int cl_append_rec(uint8_t **b, uint32_t *n, tsdb_rec_clist l) {
    if (!l.n) return 0;
    uint32_t on = *n, oend = on ? cmetas(*b)[on - 1].end : 0;
    uint64_t nm = (uint64_t)on + l.n, bytes = (uint64_t)oend + l.bytes;
    if (nm > UINT32_MAX || bytes > UINT32_MAX) return BASE_E_LIMIT;
    uint8_t *x = malloc((size_t)nm * sizeof(cmeta) + (size_t)bytes);
    if (!x) return BASE_E_NOMEM;
    cmeta *m = (cmeta *)(void *)x;
    uint8_t *d = x + (size_t)nm * sizeof(cmeta);
    if (on) {
        memcpy(m, *b, on * sizeof(cmeta));
        memcpy(d, *b + on * sizeof(cmeta), oend);
    }
    memcpy(d + oend, l.data, (size_t)l.bytes);
    uint32_t end = oend, k = on;
    tsdb_rec_chunk c;
    while (tsdb_rec_clist_next(&l, &c)) {
        end += c.len;
        m[k++] = (cmeta){c.mint, (uint32_t)((uint64_t)c.maxt - (uint64_t)c.mint), end};
    }
    free(*b);
    *b = x;
    *n = (uint32_t)nm;
    return 0;
}

/* Checks the chunk list l of an entry: every chunk passes chunk_check and
 * the first starts after `after` (when has_after). Adds the samples to
 * *ret_n and sets *ret_last to the last chunk. NULL or what is wrong. */
static const char *clist_check(tsdb_rec_clist l, int has_after, int64_t after, uint64_t *ret_n,
                               tsdb_rec_chunk *ret_last) {
    tsdb_rec_chunk c;
    for (uint32_t i = 0; tsdb_rec_clist_next(&l, &c); i++) {
        if (i == 0 && has_after && c.mint <= after) return "chunks overlap what the series holds";
        uint32_t k = chunk_check(&c);
        if (!k) return "damaged chunk (header, sample count or first time)";
        *ret_n += k;
        *ret_last = c;
    }
    return NULL;
}

/* Installs one checkpointed entry into s (taking its stripe lock): the
 * chunk lists are copied as they are, the open chunk's staging stream is
 * resumed (decoded once to check it and to recover the appender's state:
 * last time, interval, value and XOR window). Everything is checked
 * before anything is installed, so a damaged entry leaves s unchanged.
 * 0; BASE_E_PARSE with *why; BASE_E_NOMEM. */
static int series_install(tsdb_head *h, hseries *s, const tsdb_rec_chunks_entry *e, hscratch *x,
                          const char **why) {
    pthread_mutex_t *mu = slock(h, s);
    const char *bad = NULL;
    int err = 0;
    uint64_t nin = 0, nooo = 0;
    tsdb_rec_chunk lastc = {0}, lasto = {0};
    int has = series_has(s);
    int64_t tlast = s->tlast, t0 = 0;
    uint64_t vlast = s->vlast;
    stit it;
    memset(&it, 0, sizeof it);
    size_t obytes = (size_t)((e->open_bits + 7) / 8);
    if (e->chunks.n && s->n)
        bad = "closed chunks after the open chunk";
    else
        bad = clist_check(e->chunks, has, tlast, &nin, &lastc);
    if (!bad && e->chunks.n && !e->open_n) { /* the last sample is in the last chunk */
        if (chunk_last(&lastc, &tlast, &vlast))
            bad = "damaged last chunk";
        else
            has = 1;
    }
    if (!bad && e->open_n) {
        if (s->n)
            bad = "a second open chunk";
        else if ((e->chunks.n ? 1 : has) && e->open_t0 <= (e->chunks.n ? lastc.maxt : tlast))
            bad = "open chunk overlaps the chunks";
        else if (e->open_n > TSDB_CHUNK_MAX_SAMPLES || obytes + STAGE_RESERVE + 64 > TSDB__STREAM_LIMIT)
            bad = "open chunk too large";
    }
    if (!bad && e->open_n) { /* decode the stream: times increase, span fits, bits add up */
        stit_init(&it, e->open, obytes, e->open_t0, e->open_n);
        int r;
        int64_t prev = e->open_t0;
        while ((r = stit_next(&it)) == 1) {
            if ((it.i > 1 && it.t <= prev) || (uint64_t)it.t - (uint64_t)e->open_t0 > UINT32_MAX) break;
            prev = it.t;
        }
        if (r != 0 || it.i != e->open_n || (uint64_t)obytes * 8 - tsdb__br_left(&it.r) != e->open_bits)
            bad = "damaged open chunk";
        t0 = e->open_t0;
    }
    hooo *o = s->ooo;
    if (!bad) {
        int oh = o && o->nch;
        bad = clist_check(e->ooo, oh, oh ? cm_maxt(&cmetas(o->cb)[o->nch - 1]) : 0, &nooo, &lasto);
    }
    if (bad) {
        sunlock(mu);
        *why = bad;
        return BASE_E_PARSE;
    }
    /* install */
    if ((err = cl_append_rec(&s->cb, &s->nch, e->chunks))) goto out;
    if (e->chunks.n) {
        tsdb_rec_clist l = e->chunks;
        tsdb_rec_chunk c;
        tsdb_rec_clist_next(&l, &c);
        bounds_add(h, c.mint);
        bounds_add(h, lastc.maxt);
        atomic_fetch_add_explicit(&h->csamples, nin, memory_order_relaxed);
        s->tlast = tlast;
        s->vlast = vlast;
    }
    if (e->open_n) {
        size_t full = (size_t)(e->open_bits / 32) * 4, cap = full + STAGE_RESERVE + 32;
        uint8_t *b = malloc(cap);
        if (!b) {
            err = BASE_E_NOMEM;
            goto out;
        }
        size_t room = malloc_usable_size(b);
        memcpy(b, e->open, full);
        tsdb__br r;
        tsdb__br_init(&r, e->open + full, obytes - full);
        s->w.buf = b;
        s->w.cap = (uint32_t)(room < TSDB__STREAM_LIMIT ? room : cap);
        s->w.len = (uint32_t)full;
        s->w.nacc = (uint32_t)(e->open_bits % 32);
        s->w.acc = tsdb__br_get(&r, s->w.nacc);
        s->t0 = t0;
        s->n = e->open_n;
        s->tlast = it.t;
        s->vlast = it.v;
        s->dlast = it.d;
        s->lead = it.win ? it.lead : 0xff;
        s->trail = it.win ? it.trail : 0;
        bounds_add(h, t0);
        bounds_add(h, it.t);
    }
    if (e->ooo.n || e->buf.n) {
        if (!o && !(o = s->ooo = calloc(1, sizeof *o))) {
            err = BASE_E_NOMEM;
            goto out;
        }
        if ((err = cl_append_rec(&o->cb, &o->nch, e->ooo))) goto out;
        if (e->ooo.n) {
            tsdb_rec_clist l = e->ooo;
            tsdb_rec_chunk c;
            tsdb_rec_clist_next(&l, &c);
            bounds_add(h, c.mint);
            bounds_add(h, lasto.maxt);
        }
        tsdb_rec_obuf ob = e->buf;
        tsdb_rec_osample os;
        while (tsdb_rec_obuf_next(&ob, &os)) {
            int r = ooo_insert(h, s, os.t, os.v, 0, &x->cut);
            if (r == AP_NOMEM) {
                err = BASE_E_NOMEM;
                goto out;
            }
            if (r == AP_OOO_OK) bounds_add(h, os.t);
        }
        if (!s->ooo->nch && !s->ooo->nbuf) {
            ooo_free(s->ooo);
            s->ooo = NULL;
        }
    }
out:
    sunlock(mu);
    return err;
}

/* Installs the entries of one chunks record that worker w of nw owns. */
static int replay_chunks(replay *rp, tsdb_rec_dec *d, rworker *w, unsigned nw, hscratch *x) {
    tsdb_rec_chunks_entry e;
    int r;
    while ((r = tsdb_rec_dec_chunks(d, &e)) == 1) {
        if (nw > 1 && !rp->nalias && e.ref % nw != w->id) continue;
        hseries *s = replay_resolve(rp, e.ref);
        if (nw > 1 && (s ? s->ref : e.ref) % nw != w->id) continue;
        const char *why = NULL;
        int err = 0;
        if (!s)
            why = "unknown series ref";
        else if (e.err)
            why = "malformed entry";
        else if ((err = series_install(rp->h, s, &e, x, &why)) == BASE_E_NOMEM)
            return err;
        if (why) {
            if (!w->bad++)
                snprintf(w->why, sizeof w->why, "chunks of series ref %" PRIu64 " not restored: %s", e.ref,
                         why);
        }
    }
    if (r < 0 && w->id == 0) { /* every worker reads the frames: one reports */
        if (!w->bad++) snprintf(w->why, sizeof w->why, "chunks record cut short: the rest is skipped");
    }
    return 0;
}

static void replay_series(replay *rp, tsdb_rec_dec *d) {
    tsdb_head *h = rp->h;
    uint64_t ref;
    while (tsdb_rec_dec_series(d, &ref, &rp->b) == 1) {
        if (ref == 0) continue;
        if (ref > rp->maxref) rp->maxref = ref;
        labels_set *ls;
        if (labels_builder_finish(&rp->b, 0, &ls, NULL, 0)) continue;
        uint64_t hash = series_hash(ls);
        hseries *s = lookup_hash(h, hash, ls);
        if (s && s->ref != ref) { /* same labels under another ref */
            hseries *old = lookup_ref(h, ref);
            if (!old && !smap_get_ref(&rp->alias, ref) &&
                !grow((void **)&rp->aliases, &rp->capalias, rp->nalias + 1, sizeof *rp->aliases)) {
                hseries *al = calloc(1, sizeof *al);
                if (al) {
                    al->ref = ref;
                    al->ls = (labels_set *)s; /* alias target, not a set */
                    if (smap_put(&rp->alias, al, 1))
                        free(al);
                    else
                        rp->aliases[rp->nalias++] = al;
                }
            }
            series_put(old);
        } else if (!s) {
            hseries *old = lookup_ref(h, ref);
            if (!old && (s = series_create(h, ls, hash, ref))) dense_put(rp, s);
            series_put(old);
        }
        series_put(s);
        labels_unref(ls);
    }
}

/* Collects the tombstones of a record (reader thread; no worker touches
 * them): by the series the ref names now, aliases included. Entries for
 * unknown refs (series GC removed) or with mint > maxt are dropped. */
static int replay_tombstones(replay *rp, tsdb_rec_dec *d) {
    tsdb_rec_tombstone ts;
    while (tsdb_rec_dec_tombstone(d, &ts) == 1) {
        hseries *s = ts.mint <= ts.maxt ? replay_resolve(rp, ts.ref) : NULL;
        if (!s) continue;
        if (grow((void **)&rp->stones, &rp->capstones, rp->nstones + 1, sizeof *rp->stones))
            return BASE_E_NOMEM;
        rp->stones[rp->nstones++] = (tsdb__stone){s->ref, {ts.mint, ts.maxt}};
        if (rp->nstones >= (size_t)1 << 20) { /* bound the pending list */
            tsdb__tomb *t;
            if (tsdb__tomb_build(rp->h->tomb, rp->stones, rp->nstones, &t)) return BASE_E_NOMEM;
            tomb_set(rp->h, t);
            rp->nstones = 0;
        }
    }
    return 0;
}

/* One worker's share of the current batch. */
static void replay_work(rworker *w) {
    replay *rp = w->rp;
    const uint8_t *p = (const uint8_t *)rp->batch.data, *end = p + rp->batch.len;
    hscratch *x = w->id ? &w->scr : &rp->h->scr;
    while (p < end && !w->err) {
        uint32_t n;
        memcpy(&n, p, 4);
        tsdb_rec_dec d;
        if (!tsdb_rec_dec_init(&d, p + 4, n))
            w->err = d.type == TSDB_REC_CHUNKS ? replay_chunks(rp, &d, w, rp->nw, x)
                                               : replay_samples(rp, &d, w->id, rp->nw, x, &w->rejected);
        p += 4 + (size_t)n;
    }
}

static void *replay_thread(void *arg) {
    rworker *w = arg;
    replay *rp = w->rp;
    uint64_t seen = 0;
    pthread_mutex_lock(&rp->mu);
    for (;;) {
        while (!rp->quit && rp->gen == seen) pthread_cond_wait(&rp->start, &rp->mu);
        if (rp->quit) break;
        seen = rp->gen;
        pthread_mutex_unlock(&rp->mu);
        replay_work(w);
        pthread_mutex_lock(&rp->mu);
        if (++rp->ndone == rp->nw - 1) pthread_cond_signal(&rp->done);
    }
    pthread_mutex_unlock(&rp->mu);
    return NULL;
}

/* Applies the batched sample records on all workers and waits for them. */
static int replay_flush(replay *rp) {
    if (rp->batch.err) return BASE_E_NOMEM;
    if (!rp->batch.len) return 0;
    pthread_mutex_lock(&rp->mu);
    rp->gen++;
    rp->ndone = 0;
    pthread_cond_broadcast(&rp->start);
    pthread_mutex_unlock(&rp->mu);
    replay_work(&rp->w[0]);
    pthread_mutex_lock(&rp->mu);
    while (rp->ndone < rp->nw - 1) pthread_cond_wait(&rp->done, &rp->mu);
    pthread_mutex_unlock(&rp->mu);
    base_buf_reset(&rp->batch);
    int e = 0;
    for (unsigned i = 0; i < rp->nw; i++) {
        rp->h->replay_rejected += rp->w[i].rejected;
        rp->w[i].rejected = 0;
        if (!e) e = rp->w[i].err;
    }
    return e;
}

static int replay_rec(void *ctx, const uint8_t *rec, size_t len, int from_ckpt) {
    (void)from_ckpt;
    replay *rp = ctx;
    tsdb_rec_dec d;
    if (tsdb_rec_dec_init(&d, rec, len)) return 0; /* CRC-valid but unknown: skip */
    if (d.type == TSDB_REC_SERIES) {
        if (rp->nw > 1) {
            int e = replay_flush(rp); /* earlier samples see only earlier series */
            if (e) return e;
        }
        replay_series(rp, &d);
    } else if (d.type == TSDB_REC_TOMBSTONES) {
        /* a read filter: applying it before samples batched earlier
         * changes nothing, and their series exist (series come first) */
        return replay_tombstones(rp, &d);
    } else if (d.type == TSDB_REC_SAMPLES || d.type == TSDB_REC_OOO_SAMPLES || d.type == TSDB_REC_CHUNKS) {
        if (rp->nw <= 1)
            return d.type == TSDB_REC_CHUNKS
                       ? replay_chunks(rp, &d, &rp->w[0], 1, &rp->h->scr)
                       : replay_samples(rp, &d, 0, 1, &rp->h->scr, &rp->h->replay_rejected);
        uint8_t n[4];
        uint32_t l = (uint32_t)len; /* <= TSDB_WAL_RECORD_MAX */
        memcpy(n, &l, 4);
        base_buf_append(&rp->batch, n, 4);
        base_buf_append(&rp->batch, rec, len);
        if (rp->batch.len >= REPLAY_BATCH_BYTES) return replay_flush(rp);
        if (rp->batch.err) return BASE_E_NOMEM;
    }
    return 0;
}

/* Starts the helper threads (as many as can be started). */
static void replay_start(replay *rp) {
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    unsigned nw = tsdb__head_replay_threads > 0 ? (unsigned)tsdb__head_replay_threads
                  : cores > 0                   ? (unsigned)cores
                                                : 1;
    if (nw > REPLAY_MAX_WORKERS) nw = REPLAY_MAX_WORKERS;
    for (unsigned i = 0; i < REPLAY_MAX_WORKERS; i++) {
        rp->w[i].rp = rp;
        rp->w[i].id = i;
        scratch_init(&rp->w[i].scr, rp->h);
    }
    rp->nw = 1;
    if (nw < 2) return;
    pthread_mutex_init(&rp->mu, NULL);
    pthread_cond_init(&rp->start, NULL);
    pthread_cond_init(&rp->done, NULL);
    rp->sync = 1;
    while (rp->nw < nw && !pthread_create(&rp->w[rp->nw].th, NULL, replay_thread, &rp->w[rp->nw])) rp->nw++;
}

/* Applies what is batched (when e is 0), stops the helpers and frees the
 * replay state. Returns e or the flush's error. */
static int replay_finish(replay *rp, int e) {
    if (rp->nw > 1 && !e) e = replay_flush(rp);
    /* A ref aliased to another series of the same labels is named by the
     * WAL but will not be in the next checkpoint as a live series: held,
     * it is remembered as GC's removals are. */
    for (size_t i = 0; !e && i < rp->nalias; i++) {
        const hseries *t = (const hseries *)rp->aliases[i]->ls;
        labels_set *ls = t->ls;
        e = del_remember(rp->h, &rp->aliases[i]->ref, &ls, 1);
    }
    if (!e && rp->nstones) {
        tsdb__tomb *t;
        if (tsdb__tomb_build(rp->h->tomb, rp->stones, rp->nstones, &t))
            e = BASE_E_NOMEM;
        else
            tomb_set(rp->h, t);
    }
    free(rp->stones);
    if (rp->sync) {
        pthread_mutex_lock(&rp->mu);
        rp->quit = 1;
        pthread_cond_broadcast(&rp->start);
        pthread_mutex_unlock(&rp->mu);
        for (unsigned i = 1; i < rp->nw; i++) pthread_join(rp->w[i].th, NULL);
        pthread_mutex_destroy(&rp->mu);
        pthread_cond_destroy(&rp->start);
        pthread_cond_destroy(&rp->done);
    }
    for (unsigned i = 0; i < REPLAY_MAX_WORKERS; i++) {
        scratch_free(&rp->w[i].scr);
        if (rp->w[i].bad && !rp->h->replay_corrupt) snprintf(rp->why, sizeof rp->why, "%s", rp->w[i].why);
        rp->h->replay_corrupt += rp->w[i].bad;
    }
    base_buf_free(&rp->batch);
    labels_builder_free(&rp->b);
    free(rp->dense);
    for (size_t i = 0; i < rp->nalias; i++) free(rp->aliases[i]);
    free(rp->aliases);
    free(rp->alias.slot);
    return e;
}

/* ---- open / close ------------------------------------------------------- */

static void index_free(tsdb_head *h) {
    labels_itab *it = labels_global();
    for (uint32_t i = 0; i < h->names.cap; i++) {
        nament *ne = h->names.val[i];
        if (!ne) continue;
        for (uint32_t j = 0; j < ne->values.cap; j++) {
            if (ne->values.key[j] == LABELS_SYM_NONE) continue;
            labels_itab_unref(it, ne->values.key[j]);
            plist_free(&ne->values.val[j]);
        }
        pmap_free(&ne->values);
        labels_itab_unref(it, ne->name);
        free(ne);
    }
    umap_free(&h->names);
    plist_free(&h->all);
}

static void head_free(tsdb_head *h) {
    for (int i = 0; i < NSHARDS; i++) {
        shard *sh = &h->shards[i];
        for (uint32_t j = 0; j < sh->byref.cap; j++)
            if (smap_at(&sh->byref, j)) series_put(smap_at(&sh->byref, j));
        free(sh->byref.slot);
        free(sh->byhash.slot);
        pthread_mutex_destroy(&sh->mu);
    }
    for (int i = 0; i < NSTRIPES; i++) pthread_mutex_destroy(&h->stripes[i]);
    index_free(h);
    tsdb__tomb_unref(atomic_load_explicit(&h->tomb, memory_order_relaxed));
    pthread_mutex_destroy(&h->tomb_mu);
    for (size_t i = 0; i < h->ndel; i++) labels_unref(h->del[i].ls);
    free(h->del);
    pthread_mutex_destroy(&h->del_mu);
    pthread_mutex_destroy(&h->commit_mu);
    pthread_rwlock_destroy(&h->idx_lock);
    scratch_free(&h->scr);
    base_buf_free(&h->frames);
    base_buf_free(&h->rec);
    free(h);
}

int tsdb_head_open(const tsdb_head_opts *opts, tsdb_head **ret, tsdb_wal_report *rep, char *err,
                   size_t errlen) {
    tsdb_head *h = calloc(1, sizeof *h);
    if (!h) return BASE_E_NOMEM;
    if (opts) h->o = *opts;
    h->o.wal_dir = NULL; /* not kept: the caller owns the string */
    if (h->o.chunk_samples > TSDB_CHUNK_MAX_SAMPLES) h->o.chunk_samples = TSDB_CHUNK_MAX_SAMPLES;
    h->next_ref = 1;
    atomic_init(&h->min_valid, INT64_MIN);
    atomic_init(&h->bmint, INT64_MAX);
    atomic_init(&h->bmaxt, INT64_MIN);
    atomic_init(&h->csamples, 0);
    scratch_init(&h->scr, h);
    pthread_mutex_init(&h->commit_mu, NULL);
    pthread_mutex_init(&h->tomb_mu, NULL);
    pthread_mutex_init(&h->del_mu, NULL);
    pthread_rwlock_init(&h->idx_lock, NULL);
    for (int i = 0; i < NSHARDS; i++) pthread_mutex_init(&h->shards[i].mu, NULL);
    for (int i = 0; i < NSTRIPES; i++) pthread_mutex_init(&h->stripes[i], NULL);
    if (opts && opts->wal_dir) {
        replay rp;
        memset(&rp, 0, sizeof rp);
        rp.h = h;
        labels_builder_init(&rp.b);
        replay_start(&rp);
        h->replaying = 1;
        pthread_mutex_lock(&h->commit_mu);
        int e = tsdb_wal_open(opts->wal_dir, &opts->wal, replay_rec, &rp, rep, &h->wal, err, errlen);
        int fe = replay_finish(&rp, e);
        pthread_mutex_unlock(&h->commit_mu);
        h->replaying = 0;
        if (rp.maxref >= h->next_ref) h->next_ref = rp.maxref + 1;
        if (!e && rep && h->replay_corrupt) { /* damage inside CRC-valid records */
            rep->corruptions++;
            if (!rep->first_error[0] &&
                snprintf(rep->first_error, sizeof rep->first_error, "WAL %s: %s (%" PRIu64 " such entries)",
                         opts->wal_dir, rp.why, h->replay_corrupt) < 0)
                rep->first_error[0] = '\0';
        }
        h->created = 0;
        if (fe && !e) { /* the WAL is open, the last batch failed */
            if (errlen) snprintf(err, errlen, "WAL replay: out of memory");
            (void)tsdb_wal_close(h->wal);
            h->wal = NULL;
            e = fe;
        }
        if (e) {
            head_free(h);
            return e;
        }
    }
    *ret = h;
    return 0;
}

int tsdb_head_close(tsdb_head *h) {
    if (!h) return 0;
    int e = tsdb_wal_close(h->wal);
    head_free(h);
    return e;
}

void tsdb_head_bounds(tsdb_head *h, int64_t *ret_mint, int64_t *ret_maxt) {
    *ret_mint = atomic_load_explicit(&h->bmint, memory_order_relaxed);
    *ret_maxt = atomic_load_explicit(&h->bmaxt, memory_order_relaxed);
}

int64_t tsdb_head_min_valid_time(tsdb_head *h) {
    return atomic_load_explicit(&h->min_valid, memory_order_relaxed);
}

/* ---- selecting ---------------------------------------------------------- */

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static void rv_sort_uniq(refvec *r) {
    if (r->n < 2) return;
    qsort(r->v, r->n, sizeof *r->v, cmp_u64);
    size_t k = 1;
    for (size_t i = 1; i < r->n; i++)
        if (r->v[i] != r->v[k - 1]) r->v[k++] = r->v[i];
    r->n = k;
}

/* Refs whose value for m's name satisfies m. idx_lock held (read). */
static int postings_for(tsdb_head *h, const labels_matcher *m, refvec *out) {
    labels_itab *it = labels_global();
    labels_sym ns;
    nament *ne = NULL;
    if (!labels_itab_find(it, labels_matcher_name(m), &ns)) {
        ne = umap_get(&h->names, ns);
        labels_itab_unref(it, ns); /* the index holds its own reference */
    }
    int inv = labels_matcher_matches_empty(m);
    refvec acc = {0};
    int e = 0;
    const base_str *lits;
    size_t nlits;
    if (ne) {
        if (!inv && labels_matcher_type(m) == LABELS_MATCH_EQ) {
            labels_sym vs;
            if (!labels_itab_find(it, labels_matcher_value(m), &vs)) {
                plist *p = pmap_get(&ne->values, vs);
                labels_itab_unref(it, vs);
                if (p) e = plist_push(p, &acc);
            }
        } else if (!inv && labels_matcher_type(m) == LABELS_MATCH_RE &&
                   labels_regex_literals(labels_matcher_regex(m), &lits, &nlits)) {
            for (size_t i = 0; i < nlits && !e; i++) {
                labels_sym vs;
                if (labels_itab_find(it, lits[i], &vs)) continue;
                plist *p = pmap_get(&ne->values, vs);
                labels_itab_unref(it, vs);
                if (p) e = plist_push(p, &acc);
            }
        } else {
            for (uint32_t i = 0; i < ne->values.cap && !e; i++) {
                const plist *p = &ne->values.val[i];
                if (ne->values.key[i] == LABELS_SYM_NONE || !p->n) continue;
                int mt = labels_matcher_matches(m, labels_itab_str(it, ne->values.key[i]));
                if (mt != inv) e = plist_push(p, &acc); /* inv: collect the non-matching */
            }
        }
        rv_sort_uniq(&acc);
    }
    if (!e && inv) { /* all refs minus acc */
        refvec r = {0};
        e = plist_push(&h->all, &r);
        size_t j = 0, k = 0;
        for (size_t i = 0; !e && i < r.n; i++) {
            uint64_t x = r.v[i];
            while (j < acc.n && acc.v[j] < x) j++;
            if (j < acc.n && acc.v[j] == x) continue;
            r.v[k++] = x;
        }
        r.n = k;
        free(acc.v);
        acc = r;
    }
    if (e) {
        free(acc.v);
        return e;
    }
    *out = acc;
    return 0;
}

static void rv_intersect(refvec *a, const refvec *b) {
    size_t i = 0, j = 0, k = 0;
    while (i < a->n && j < b->n) {
        if (a->v[i] < b->v[j])
            i++;
        else if (a->v[i] > b->v[j])
            j++;
        else {
            a->v[k++] = a->v[i];
            i++;
            j++;
        }
    }
    a->n = k;
}

/* Referenced series matching ms with samples in [mint, maxt], unsorted. */
static int select_series(tsdb_head *h, labels_matcher *const *ms, size_t n, int64_t mint, int64_t maxt,
                         hseries ***ret, size_t *ret_n) {
    refvec res = {0};
    int e = 0;
    pthread_rwlock_rdlock(&h->idx_lock);
    if (n == 0) {
        e = plist_push(&h->all, &res);
    } else {
        for (size_t i = 0; i < n && !e; i++) {
            refvec r;
            if ((e = postings_for(h, ms[i], &r))) break;
            if (i == 0) {
                res = r;
            } else {
                rv_intersect(&res, &r);
                free(r.v);
            }
            if (res.n == 0) break;
        }
    }
    pthread_rwlock_unlock(&h->idx_lock);
    hseries **out = NULL;
    size_t k = 0;
    if (!e && res.n && !(out = malloc(res.n * sizeof *out))) e = BASE_E_NOMEM;
    for (size_t i = 0; !e && i < res.n; i++) {
        hseries *s = lookup_ref(h, res.v[i]);
        if (!s) continue;
        pthread_mutex_t *mu = stripe(h, s);
        pthread_mutex_lock(mu);
        int64_t lo, hi;
        int keep = series_range(s, &lo, &hi) && hi >= mint && lo <= maxt;
        pthread_mutex_unlock(mu);
        if (keep)
            out[k++] = s;
        else
            series_put(s);
    }
    free(res.v);
    if (e) {
        free(out);
        return e;
    }
    *ret = out;
    *ret_n = k;
    return 0;
}

static int cmp_series(const void *a, const void *b) {
    return labels_cmp((*(hseries *const *)a)->ls, (*(hseries *const *)b)->ls);
}

/* SORTING MANY SERIES. labels_cmp walks two sets and looks their strings
 * up on every comparison, which made the sort most of a select's time
 * (50k series: ~45 of 55 ms). Instead each set is encoded once into a
 * byte string whose bytewise order (shorter first on a tie) is
 * labels_cmp's order: per pair, the name then the value, each with 0x00
 * written as 0x00 0xff and ended by 0x00 0x00 (prefix-free, so comparing
 * encodings compares pair by pair, string by string, shorter first). The
 * sort compares 8 bytes taken after the prefix every encoding shares as
 * an integer, and whole encodings only when those are equal. */
typedef struct skey {
    uint64_t key;
    uint32_t off, len; /* the encoding in the buffer */
    hseries *s;
} skey;

static _Thread_local const uint8_t *skey_buf;
static _Thread_local uint32_t skey_lcp;

static int cmp_skey(const void *a, const void *b) {
    const skey *x = a, *y = b;
    if (x->key != y->key) return x->key < y->key ? -1 : 1;
    uint32_t n = x->len < y->len ? x->len : y->len;
    int c =
        n > skey_lcp ? memcmp(skey_buf + x->off + skey_lcp, skey_buf + y->off + skey_lcp, n - skey_lcp) : 0;
    return c ? c : (x->len > y->len) - (x->len < y->len);
}

static void skey_put(base_buf *b, base_str s) {
    const char *z;
    while (s.n && (z = memchr(s.p, 0, s.n))) { /* rare: a NUL in a value */
        size_t k = (size_t)(z - s.p) + 1;
        base_buf_append(b, s.p, k);
        base_buf_append(b, "\xff", 1);
        s.p += k;
        s.n -= k;
    }
    if (s.n) base_buf_append(b, s.p, s.n);
    base_buf_append(b, "\0\0", 2);
}

/* Sorts v[0..n) by labels; falls back to qsort with labels_cmp when
 * memory runs out (same order). */
static void sort_series(hseries **v, size_t n) {
    if (n < 2) return;
    skey *k = n >= 64 ? malloc(n * sizeof *k) : NULL;
    base_buf b = BASE_BUF_INIT;
    for (size_t i = 0; k && i < n; i++) {
        size_t off = b.len;
        labels_iter it;
        base_str nm, val;
        labels_iter_init(&it, v[i]->ls);
        while (labels_iter_next(&it, &nm, &val)) {
            skey_put(&b, nm);
            skey_put(&b, val);
        }
        if (base_buf_err(&b) || b.len > UINT32_MAX) break;
        k[i] = (skey){0, (uint32_t)off, (uint32_t)(b.len - off), v[i]};
    }
    if (!k || base_buf_err(&b) || b.len > UINT32_MAX) {
        free(k);
        base_buf_free(&b);
        qsort(v, n, sizeof *v, cmp_series);
        return;
    }
    const uint8_t *p = (const uint8_t *)b.data;
    uint32_t lcp = k[0].len;
    for (size_t i = 1; i < n && lcp; i++) {
        uint32_t m = k[i].len < lcp ? k[i].len : lcp, j = 0;
        while (j < m && p[k[0].off + j] == p[k[i].off + j]) j++;
        lcp = j;
    }
    for (size_t i = 0; i < n; i++) {
        uint64_t key = 0;
        for (uint32_t j = 0; j < 8; j++) key = key << 8 | (lcp + j < k[i].len ? p[k[i].off + lcp + j] : 0);
        k[i].key = key;
    }
    skey_buf = p;
    skey_lcp = lcp;
    qsort(k, n, sizeof *k, cmp_skey);
    for (size_t i = 0; i < n; i++) v[i] = k[i].s;
    free(k);
    base_buf_free(&b);
}

typedef struct ckref {
    size_t off, len;
} ckref;

/* A cursor over a list of chunks (sorted by time, non-overlapping) copied
 * into the series set's buffer, with one sample of lookahead. */
typedef struct ccur {
    ckref *ck;
    size_t nck, capck, ci;
    tsdb_chunk_it it;
    stit st;
    int in_chunk; /* 1: reading it, 2: reading st */
    int open;     /* a staging stream follows the chunks: */
    size_t open_off, open_len;
    int64_t open_t0;
    uint32_t open_n;
    int has; /* t, v hold the next sample */
    int64_t t;
    double v;
} ccur;

struct tsdb_series_set {
    tsdb_head *h;
    hseries **s;
    size_t n, i; /* i: 1 + index of the current series, 0 before the first */
    int64_t mint, maxt;
    base_buf buf;
    ccur in, oo; /* in-order chunks (the open one last), OOO chunks */
    osamp *ob;   /* OOO buffer samples within [mint, maxt] */
    size_t nob, capob, obi;
    int pend;             /* an error a batch read met after its samples */
    tsdb__tomb *tomb;     /* tombstones as of select (referenced) */
    const tsdb__ival *tv; /* the current series' deleted intervals */
    size_t ntv, tvc;      /* their count, a cursor */
};

int tsdb_head_select(tsdb_head *h, labels_matcher *const *ms, size_t n, int64_t mint, int64_t maxt,
                     tsdb_series_set **ret) {
    tsdb_series_set *ss = calloc(1, sizeof *ss);
    if (!ss) return BASE_E_NOMEM;
    int e = select_series(h, ms, n, mint, maxt, &ss->s, &ss->n);
    if (e) {
        free(ss);
        return e;
    }
    sort_series(ss->s, ss->n);
    ss->h = h;
    ss->mint = mint;
    ss->maxt = maxt;
    ss->tomb = tomb_get(h);
    *ret = ss;
    return 0;
}

size_t tsdb_series_set_count(const tsdb_series_set *ss) {
    return ss->n;
}

/* Copies the chunks of c[0..n) overlapping [mint, maxt] into ss->buf. */
/* Copies the chunks of list (b, n) overlapping [mint, maxt] into ss->buf
 * (their bytes are contiguous: one copy). */
static int copy_chunks(tsdb_series_set *ss, ccur *cur, const uint8_t *b, uint32_t n) {
    uint32_t i0 = cl_lower(b, n, ss->mint), i1 = i0, len;
    while (i1 < n && cmetas(b)[i1].mint <= ss->maxt) i1++;
    if (i0 == i1) return 0;
    if (grow((void **)&cur->ck, &cur->capck, cur->nck + (i1 - i0), sizeof *cur->ck)) return BASE_E_NOMEM;
    const uint8_t *d0 = cl_data(b, n, i0, &len);
    size_t base = ss->buf.len;
    for (uint32_t i = i0; i < i1; i++) {
        const uint8_t *d = cl_data(b, n, i, &len);
        cur->ck[cur->nck++] = (ckref){base + (size_t)(d - d0), len};
    }
    uint32_t last;
    const uint8_t *dl = cl_data(b, n, i1 - 1, &last);
    base_buf_append(&ss->buf, d0, (size_t)(dl - d0) + last);
    return base_buf_err(&ss->buf);
}

int tsdb_series_set_next(tsdb_series_set *ss) {
    if (ss->i >= ss->n) {
        ss->i = ss->n + 1;
        return 0;
    }
    hseries *s = ss->s[ss->i++];
    base_buf_reset(&ss->buf);
    ss->in.nck = ss->in.ci = ss->oo.nck = ss->oo.ci = 0;
    ss->in.in_chunk = ss->in.has = ss->oo.in_chunk = ss->oo.has = ss->in.open = ss->oo.open = 0;
    ss->nob = ss->obi = 0;
    ss->pend = 0;
    ss->tv = tsdb__tomb_get(ss->tomb, s->ref, &ss->ntv);
    ss->tvc = 0;
    pthread_mutex_t *mu = stripe(ss->h, s);
    pthread_mutex_lock(mu);
    int e = copy_chunks(ss, &ss->in, s->cb, s->nch);
    if (!e && s->n && s->t0 <= ss->maxt && s->tlast >= ss->mint) {
        size_t off = ss->buf.len;
        if (!(e = stage_emit(s, &ss->buf))) {
            ss->in.open = 1;
            ss->in.open_off = off;
            ss->in.open_len = ss->buf.len - off;
            ss->in.open_t0 = s->t0;
            ss->in.open_n = s->n;
        }
    }
    const hooo *o = s->ooo;
    if (!e && o) e = copy_chunks(ss, &ss->oo, o->cb, o->nch);
    if (!e && o && o->nbuf) {
        for (uint32_t i = obuf_lower(o, ss->mint); i < o->nbuf && o->buf[i].t <= ss->maxt && !e; i++) {
            if (!(e = grow((void **)&ss->ob, &ss->capob, ss->nob + 1, sizeof *ss->ob)))
                ss->ob[ss->nob++] = o->buf[i];
        }
    }
    pthread_mutex_unlock(mu);
    return e ? e : 1;
}

const labels_set *tsdb_series_set_labels(const tsdb_series_set *ss) {
    return ss->i && ss->i <= ss->n ? ss->s[ss->i - 1]->ls : labels_empty();
}

uint64_t tsdb_series_set_ref(const tsdb_series_set *ss) {
    return ss->i && ss->i <= ss->n ? ss->s[ss->i - 1]->ref : 0;
}

/* The next sample of cursor c within [mint, maxt]: 1, 0 at the end, <0. */
static int cur_next(tsdb_series_set *ss, ccur *c, int64_t *ret_t, double *ret_v) {
    for (;;) {
        int64_t t;
        double v;
        if (c->in_chunk == 1) {
            if (!tsdb_chunk_it_next(&c->it)) {
                c->in_chunk = 0;
                if (tsdb_chunk_it_err(&c->it)) return tsdb_chunk_it_err(&c->it);
                continue;
            }
            t = c->it.t;
            v = c->it.v;
        } else if (c->in_chunk == 2) {
            int r = stit_next(&c->st);
            if (r < 0) return r;
            if (r == 0) {
                c->in_chunk = 0;
                continue;
            }
            if (c->st.t < ss->mint) continue;
            t = c->st.t;
            memcpy(&v, &c->st.v, 8);
        } else if (c->ci < c->nck) {
            const ckref *k = &c->ck[c->ci++];
            tsdb_chunk_it_init(&c->it, (const uint8_t *)ss->buf.data + k->off, k->len);
            if (!tsdb_chunk_it_seek(&c->it, ss->mint)) {
                if (tsdb_chunk_it_err(&c->it)) return tsdb_chunk_it_err(&c->it);
                continue;
            }
            c->in_chunk = 1;
            t = c->it.t;
            v = c->it.v;
        } else if (c->open) {
            stit_init(&c->st, (const uint8_t *)ss->buf.data + c->open_off, c->open_len, c->open_t0,
                      c->open_n);
            c->open = 0;
            c->in_chunk = 2;
            continue;
        } else {
            return 0;
        }
        if (t > ss->maxt) {
            c->in_chunk = 0;
            c->ci = c->nck;
            c->open = 0;
            return 0;
        }
        *ret_t = t;
        *ret_v = v;
        return 1;
    }
}

/* Fills c's lookahead: 1, 0 at the end, <0. */
static int cur_peek(tsdb_series_set *ss, ccur *c) {
    if (c->has) return 1;
    int r = cur_next(ss, c, &c->t, &c->v);
    if (r == 1) c->has = 1;
    return r;
}

/* cur_next up to cap times into t[], v[], chunks decoded straight into
 * them: the count, or <0 when the first sample failed; an error after
 * samples goes to ss->pend. Same samples and errors as cur_next. */
static int cur_next_n(tsdb_series_set *ss, ccur *c, int64_t *t, double *v, size_t cap) {
    size_t k = 0;
    int e = 0;
    while (k < cap && !e) {
        if (c->in_chunk == 1) {
            size_t want = cap - k, r = tsdb_chunk_it_next_n(&c->it, t + k, v + k, want);
            size_t j1 = r && t[k + r - 1] > ss->maxt ? tsdb__upper(t + k, r, ss->maxt) : r;
            k += j1;
            if (j1 < r) { /* past maxt */
                c->in_chunk = 0;
                c->ci = c->nck;
                c->open = 0;
                break;
            }
            if (r < want) {
                c->in_chunk = 0;
                e = tsdb_chunk_it_err(&c->it);
            }
        } else if (c->in_chunk == 2) {
            size_t want = cap - k, r = stit_next_n(&c->st, t + k, v + k, want, &e);
            int past;
            k += tsdb__cut_range(t + k, v + k, r, ss->mint, ss->maxt, &past);
            if (past) {
                c->in_chunk = 0;
                c->ci = c->nck;
                c->open = 0;
                e = 0;
                break;
            }
            if (r < want && !e) c->in_chunk = 0;
        } else if (c->ci < c->nck) {
            const ckref *kr = &c->ck[c->ci++];
            tsdb_chunk_it_init(&c->it, (const uint8_t *)ss->buf.data + kr->off, kr->len);
            if (!tsdb_chunk_it_seek(&c->it, ss->mint)) {
                e = tsdb_chunk_it_err(&c->it);
                continue;
            }
            if (c->it.t > ss->maxt) {
                c->ci = c->nck;
                c->open = 0;
                break;
            }
            c->in_chunk = 1;
            t[k] = c->it.t;
            v[k] = c->it.v;
            k++;
        } else if (c->open) {
            stit_init(&c->st, (const uint8_t *)ss->buf.data + c->open_off, c->open_len, c->open_t0,
                      c->open_n);
            c->open = 0;
            c->in_chunk = 2;
        } else {
            break;
        }
    }
    if (e) {
        if (!k) return e;
        ss->pend = e;
    }
    return (int)k;
}

/* The next sample, tombstones not applied (see tsdb_series_set_sample). */
static int raw_sample(tsdb_series_set *ss, int64_t *ret_t, double *ret_v) {
    if (!ss->oo.nck && !ss->nob) return cur_next(ss, &ss->in, ret_t, ret_v); /* no OOO data */
    /* merge the three sources by time; a timestamp in several (never, by
     * the OOO store's invariant) is taken once, in-order data first */
    int r = cur_peek(ss, &ss->in);
    if (r < 0) return r;
    if ((r = cur_peek(ss, &ss->oo)) < 0) return r;
    int64_t t = INT64_MAX;
    int src = -1;
    if (ss->in.has) {
        t = ss->in.t;
        src = 0;
    }
    if (ss->oo.has && (src < 0 || ss->oo.t < t)) {
        t = ss->oo.t;
        src = 1;
    }
    if (ss->obi < ss->nob && (src < 0 || ss->ob[ss->obi].t < t)) {
        t = ss->ob[ss->obi].t;
        src = 2;
    }
    if (src < 0) return 0;
    if (src == 0)
        *ret_v = ss->in.v;
    else if (src == 1)
        *ret_v = ss->oo.v;
    else
        memcpy(ret_v, &ss->ob[ss->obi].v, 8);
    *ret_t = t;
    if (ss->in.has && ss->in.t == t) ss->in.has = 0;
    if (ss->oo.has && ss->oo.t == t) ss->oo.has = 0;
    if (ss->obi < ss->nob && ss->ob[ss->obi].t == t) ss->obi++;
    return 1;
}

/* Up to cap raw samples: the count, or <0; an error after samples goes to
 * ss->pend. */
static int raw_samples(tsdb_series_set *ss, int64_t *t, double *v, size_t cap) {
    if (!ss->oo.nck && !ss->nob) return cur_next_n(ss, &ss->in, t, v, cap);
    size_t k = 0;
    while (k < cap) {
        int r = raw_sample(ss, &t[k], &v[k]);
        if (r == 1) {
            k++;
            continue;
        }
        if (r < 0) {
            if (!k) return r;
            ss->pend = r;
        }
        break;
    }
    return (int)k;
}

int tsdb_series_set_sample(tsdb_series_set *ss, int64_t *ret_t, double *ret_v) {
    if (ss->pend) {
        int e = ss->pend;
        ss->pend = 0;
        return e;
    }
    if (!ss->i || ss->i > ss->n) return 0;
    for (;;) {
        int r = raw_sample(ss, ret_t, ret_v);
        if (r != 1 || !ss->ntv || !tsdb__ivals_hit(ss->tv, ss->ntv, &ss->tvc, *ret_t)) return r;
    }
}

int tsdb_series_set_samples(tsdb_series_set *ss, int64_t *t, double *v, size_t cap) {
    if (!cap) return BASE_E_INVAL;
    if (ss->pend) {
        int e = ss->pend;
        ss->pend = 0;
        return e;
    }
    if (!ss->i || ss->i > ss->n) return 0;
    if (cap > INT32_MAX) cap = INT32_MAX;
    size_t k = 0;
    while (k < cap && !ss->pend) {
        int r = raw_samples(ss, t + k, v + k, cap - k);
        if (r < 0) {
            if (!k) return r;
            ss->pend = r;
            break;
        }
        if (r == 0) break;
        k += ss->ntv ? tsdb__ivals_filter(ss->tv, ss->ntv, &ss->tvc, t + k, v + k, (size_t)r) : (size_t)r;
    }
    if (!k && ss->pend) { /* every sample before the error was deleted */
        int e = ss->pend;
        ss->pend = 0;
        return e;
    }
    return (int)k;
}

void tsdb_series_set_free(tsdb_series_set *ss) {
    if (!ss) return;
    for (size_t i = 0; i < ss->n; i++) series_put(ss->s[i]);
    free(ss->s);
    free(ss->in.ck);
    free(ss->oo.ck);
    free(ss->ob);
    base_buf_free(&ss->buf);
    tsdb__tomb_unref(ss->tomb);
    free(ss);
}

/* ---- label names and values --------------------------------------------- */

void tsdb_strs_free(tsdb_strs *s) {
    free(s);
}

/* Whether s keeps a sample in [mint, maxt] under tombstones t (a damaged
 * chunk counts as kept). */
static int series_live(tsdb_head *h, tsdb__tomb *t, hseries *s, int64_t mint, int64_t maxt) {
    size_t niv;
    const tsdb__ival *iv = tsdb__tomb_get(t, s->ref, &niv);
    if (!niv || !tsdb__ivals_overlap(iv, niv, mint, maxt)) return 1; /* the range check was done */
    tsdb_series_set ss;
    memset(&ss, 0, sizeof ss);
    ss.h = h;
    ss.s = &s;
    ss.n = 1;
    ss.mint = mint;
    ss.maxt = maxt;
    ss.tomb = t;
    ss.buf = (base_buf)BASE_BUF_INIT;
    int live = 1;
    if (tsdb_series_set_next(&ss) == 1) {
        int64_t tt;
        double vv;
        live = tsdb_series_set_sample(&ss, &tt, &vv) != 0;
    }
    free(ss.in.ck);
    free(ss.oo.ck);
    free(ss.ob);
    base_buf_free(&ss.buf);
    return live;
}

static int labels_list(tsdb_head *h, const base_str *name, labels_matcher *const *ms, size_t n, int64_t mint,
                       int64_t maxt, tsdb_strs **ret) {
    labels_itab *it = labels_global();
    base_str *v = NULL;
    size_t nv = 0, cap = 0;
    int e = 0;
    /* With tombstones, series whose samples in the range are all deleted
     * are left out: the series are walked (n == 0 too; else the index is
     * enough). */
    tsdb__tomb *tomb = tomb_get(h);
    if (n == 0 && !tomb) {
        pthread_rwlock_rdlock(&h->idx_lock);
        nament *only = NULL;
        if (name) {
            labels_sym ns;
            if (!labels_itab_find(it, *name, &ns)) {
                only = umap_get(&h->names, ns);
                labels_itab_unref(it, ns);
            }
        }
        for (uint32_t i = 0; i < h->names.cap && !e; i++) {
            nament *ne = h->names.val[i];
            if (!ne || (name && ne != only)) continue;
            for (uint32_t j = 0; j < ne->values.cap && !e; j++) {
                if (ne->values.key[j] == LABELS_SYM_NONE || !ne->values.val[j].n) continue;
                if ((e = grow((void **)&v, &cap, nv + 1, sizeof *v))) break;
                v[nv++] = labels_itab_str(it, name ? ne->values.key[j] : ne->name);
                if (!name) break; /* one live value is enough for a name */
            }
        }
        if (!e) e = tsdb__strs_make(v, nv, ret);
        pthread_rwlock_unlock(&h->idx_lock);
        free(v);
        return e;
    }
    hseries **ss;
    size_t ns;
    /* n == 0: every series, as the index lists them (whatever their time) */
    if (n == 0)
        e = select_series(h, NULL, 0, INT64_MIN, INT64_MAX, &ss, &ns);
    else
        e = select_series(h, ms, n, mint, maxt, &ss, &ns);
    if (e) {
        tsdb__tomb_unref(tomb);
        return e;
    }
    for (size_t i = 0; i < ns && !e; i++) {
        if (tomb && !series_live(h, tomb, ss[i], mint, maxt)) continue;
        labels_iter li;
        base_str nm, val;
        labels_iter_init(&li, ss[i]->ls);
        while (labels_iter_next(&li, &nm, &val)) {
            if (name && !base_str_eq(nm, *name)) continue;
            if ((e = grow((void **)&v, &cap, nv + 1, sizeof *v))) break;
            v[nv++] = name ? val : nm;
        }
    }
    if (!e) e = tsdb__strs_make(v, nv, ret);
    for (size_t i = 0; i < ns; i++) series_put(ss[i]);
    free(ss);
    free(v);
    tsdb__tomb_unref(tomb);
    return e;
}

int tsdb_head_label_names(tsdb_head *h, labels_matcher *const *ms, size_t n, int64_t mint, int64_t maxt,
                          tsdb_strs **ret) {
    return labels_list(h, NULL, ms, n, mint, maxt, ret);
}

int tsdb_head_label_values(tsdb_head *h, base_str name, labels_matcher *const *ms, size_t n, int64_t mint,
                           int64_t maxt, tsdb_strs **ret) {
    return labels_list(h, &name, ms, n, mint, maxt, ret);
}

/* ---- deletion ----------------------------------------------------------- */

/* Tombstones per WAL record (~30 bytes each at most: 2 MiB). */
#define TOMB_REC_MAX 65536

/* Frames tombstones records for ts[0..n) into out. */
static int tomb_frames(base_buf *out, const tsdb_rec_tombstone *ts, size_t n, int compress) {
    int e = 0;
    for (size_t i = 0; i < n && !e; i += TOMB_REC_MAX) {
        size_t k = n - i < TOMB_REC_MAX ? n - i : TOMB_REC_MAX;
        size_t st = tsdb_wal_frame_begin(out);
        if (!(e = tsdb_rec_enc_tombstones(out, ts + i, k))) e = tsdb_wal_frame_end_z(out, st, compress);
    }
    return e;
}

int tsdb_head_delete(tsdb_head *h, labels_matcher *const *ms, size_t n, int64_t mint, int64_t maxt,
                     uint64_t *ret_series) {
    if (mint > maxt) {
        if (ret_series) *ret_series = 0;
        return 0;
    }
    hseries **v = NULL;
    size_t nv = 0, k = 0;
    tsdb__stone *st = NULL;
    tsdb_rec_tombstone *rec = NULL;
    base_buf frames = BASE_BUF_INIT;
    uint64_t ticket = 0;
    int queued = 0;
    /* under commit_mu: the record lands in the WAL after every sample the
     * head held when the ranges were clamped, and before later ones */
    pthread_mutex_lock(&h->commit_mu);
    int e = select_series(h, ms, n, mint, maxt, &v, &nv);
    if (!e && nv && (!(st = malloc(nv * sizeof *st)) || !(rec = malloc(nv * sizeof *rec)))) e = BASE_E_NOMEM;
    for (size_t i = 0; i < nv && !e; i++) {
        /* as Prometheus's Head.Delete: clamped to the series' samples, so
         * later appends are never deleted */
        pthread_mutex_t *mu = stripe(h, v[i]);
        pthread_mutex_lock(mu);
        int64_t lo, hi;
        int have = series_range(v[i], &lo, &hi);
        pthread_mutex_unlock(mu);
        if (!have || hi < mint || lo > maxt) continue;
        tsdb__ival iv = {mint > lo ? mint : lo, maxt < hi ? maxt : hi};
        st[k] = (tsdb__stone){v[i]->ref, iv};
        rec[k++] = (tsdb_rec_tombstone){v[i]->ref, iv.mint, iv.maxt};
    }
    if (!e && k) {
        tsdb__tomb *old = tomb_get(h), *t;
        e = tsdb__tomb_build(old, st, k, &t);
        tsdb__tomb_unref(old);
        if (!e) tomb_set(h, t);
    }
    if (!e && k && h->wal) {
        e = tomb_frames(&frames, rec, k, tsdb_wal_compressing(h->wal));
        if (!e) e = tsdb_wal_enqueue(h->wal, frames.data, frames.len, &ticket);
        queued = !e;
    }
    pthread_mutex_unlock(&h->commit_mu);
    if (queued) e = tsdb_wal_wait(h->wal, ticket);
    for (size_t i = 0; i < nv; i++) series_put(v[i]);
    free(v);
    free(st);
    free(rec);
    base_buf_free(&frames);
    if (!e && ret_series) *ret_series = k;
    return e;
}

uint64_t tsdb_head_num_tombstones(tsdb_head *h) {
    tsdb__tomb *t = tomb_get(h);
    uint64_t n = t ? t->nivals : 0;
    tsdb__tomb_unref(t);
    return n;
}

/* ---- cardinality (/api/v1/status/tsdb) ---------------------------------- */

/* A candidate of a top list: a string (or a pair a=b, when b.p is set) and
 * its count. */
typedef struct cent {
    base_str a, b;
    uint64_t count;
} cent;

/* Compares the strings of x and y ("a=b" for pairs) bytewise. */
static int cent_strcmp(const cent *x, const cent *y) {
    base_str xs[3] = {x->a, {"=", x->b.p ? 1 : 0}, x->b}, ys[3] = {y->a, {"=", y->b.p ? 1 : 0}, y->b};
    size_t xi = 0, xo = 0, yi = 0, yo = 0;
    for (;;) {
        while (xi < 3 && xo == xs[xi].n) xi++, xo = 0;
        while (yi < 3 && yo == ys[yi].n) yi++, yo = 0;
        if (xi == 3 || yi == 3) return (xi < 3) - (yi < 3);
        unsigned char c = (unsigned char)xs[xi].p[xo++], d = (unsigned char)ys[yi].p[yo++];
        if (c != d) return c < d ? -1 : 1;
    }
}

/* Result order: count descending, then string ascending. <0: x first. */
static int cent_cmp(const cent *x, const cent *y) {
    if (x->count != y->count) return x->count > y->count ? -1 : 1;
    return cent_strcmp(x, y);
}
static int cent_qcmp(const void *a, const void *b) {
    return cent_cmp(a, b);
}

/* The best `lim` candidates so far: a heap whose root is the worst kept. */
typedef struct ctop {
    cent *v;
    size_t n, cap, lim;
} ctop;

static void ctop_sift(ctop *t, size_t i) {
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, w = i;
        if (l < t->n && cent_cmp(&t->v[l], &t->v[w]) > 0) w = l;
        if (r < t->n && cent_cmp(&t->v[r], &t->v[w]) > 0) w = r;
        if (w == i) return;
        cent x = t->v[i];
        t->v[i] = t->v[w];
        t->v[w] = x;
        i = w;
    }
}

static int ctop_push(ctop *t, cent c) {
    if (!t->lim) return 0;
    if (t->n == t->lim) { /* full: replace the worst if c is better */
        if (cent_cmp(&c, &t->v[0]) >= 0) return 0;
        t->v[0] = c;
        ctop_sift(t, 0);
        return 0;
    }
    if (grow((void **)&t->v, &t->cap, t->n + 1, sizeof *t->v)) return BASE_E_NOMEM;
    size_t i = t->n++;
    t->v[i] = c;
    while (i > 0 && cent_cmp(&t->v[i], &t->v[(i - 1) / 2]) > 0) { /* worse than its parent: up */
        cent x = t->v[i];
        t->v[i] = t->v[(i - 1) / 2];
        t->v[(i - 1) / 2] = x;
        i = (i - 1) / 2;
    }
    return 0;
}

/* Bytes the entries' strings need. */
static size_t ctop_bytes(const ctop *t) {
    size_t n = 0;
    for (size_t i = 0; i < t->n; i++) n += t->v[i].a.n + (t->v[i].b.p ? 1 + t->v[i].b.n : 0) + 1;
    return n;
}

/* Sorts t into out, copying the strings to *p. */
static void ctop_emit(ctop *t, tsdb_head_card_entry *out, char **p) {
    if (t->n > 1) qsort(t->v, t->n, sizeof *t->v, cent_qcmp);
    for (size_t i = 0; i < t->n; i++) {
        char *s = *p;
        memcpy(s, t->v[i].a.p, t->v[i].a.n);
        size_t n = t->v[i].a.n;
        if (t->v[i].b.p) {
            s[n++] = '=';
            memcpy(s + n, t->v[i].b.p, t->v[i].b.n);
            n += t->v[i].b.n;
        }
        s[n] = '\0';
        out[i] = (tsdb_head_card_entry){{s, n}, t->v[i].count};
        *p += n + 1;
    }
}

int tsdb_head_postings_stats(tsdb_head *h, size_t limit, tsdb_head_card *ret) {
    labels_itab *it = labels_global();
    ctop t[4] = {
        {.lim = limit}, {.lim = limit}, {.lim = limit}, {.lim = limit}}; /* metric, values, memory, pair */
    uint64_t pairs = 0;
    int e = 0;
    labels_sym metric = LABELS_SYM_NONE;
    int has_metric = !labels_itab_find(it, base_str_c(LABELS_METRIC_NAME), &metric);
    pthread_rwlock_rdlock(&h->idx_lock);
    for (uint32_t i = 0; i < h->names.cap && !e; i++) {
        const nament *ne = h->names.val[i];
        if (!ne) continue;
        base_str name = labels_itab_str(it, ne->name);
        uint64_t nvals = 0, bytes = 0;
        int is_metric = has_metric && ne->name == metric;
        for (uint32_t j = 0; j < ne->values.cap && !e; j++) {
            const plist *pl = &ne->values.val[j];
            if (ne->values.key[j] == LABELS_SYM_NONE || !pl->n) continue; /* emptied by GC */
            base_str v = labels_itab_str(it, ne->values.key[j]);
            nvals++;
            bytes += v.n;
            if (is_metric) e = ctop_push(&t[0], (cent){v, {NULL, 0}, pl->n});
            if (!e) e = ctop_push(&t[3], (cent){name, v, pl->n});
        }
        if (!nvals) continue;
        pairs += nvals;
        if (!e) e = ctop_push(&t[1], (cent){name, {NULL, 0}, nvals});
        if (!e) e = ctop_push(&t[2], (cent){name, {NULL, 0}, bytes});
    }
    /* copy while the strings are held by the index */
    tsdb_head_card c;
    memset(&c, 0, sizeof c);
    size_t ne = t[0].n + t[1].n + t[2].n + t[3].n, sb = 0;
    for (int k = 0; k < 4; k++) sb += ctop_bytes(&t[k]);
    if (!e && !(c.mem = malloc(ne * sizeof(tsdb_head_card_entry) + sb + 1))) e = BASE_E_NOMEM;
    if (!e) {
        tsdb_head_card_entry *en = c.mem;
        char *p = (char *)(en + ne);
        c.series_by_metric = en;
        c.n_series_by_metric = t[0].n;
        c.values_by_name = en += t[0].n;
        c.n_values_by_name = t[1].n;
        c.memory_by_name = en += t[1].n;
        c.n_memory_by_name = t[2].n;
        c.series_by_pair = en += t[2].n;
        c.n_series_by_pair = t[3].n;
        ctop_emit(&t[0], c.series_by_metric, &p);
        ctop_emit(&t[1], c.values_by_name, &p);
        ctop_emit(&t[2], c.memory_by_name, &p);
        ctop_emit(&t[3], c.series_by_pair, &p);
    }
    pthread_rwlock_unlock(&h->idx_lock);
    if (has_metric) labels_itab_unref(it, metric);
    for (int k = 0; k < 4; k++) free(t[k].v);
    if (e) return e;
    c.num_series = tsdb_head_series_count(h);
    c.num_label_pairs = pairs;
    *ret = c;
    return 0;
}

void tsdb_head_card_free(tsdb_head_card *c) {
    if (!c) return;
    free(c->mem);
    memset(c, 0, sizeof *c);
}

/* ---- GC ----------------------------------------------------------------- */

static int has_ref(const refvec *dead, uint64_t ref) {
    size_t lo = 0, hi = dead->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (dead->v[mid] < ref)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < dead->n && dead->v[lo] == ref;
}

/* Drops the dead refs from p, re-encoding the deltas in place (a delta
 * that spans a dropped ref is never longer than the two it replaces). */
static void plist_filter(plist *p, const refvec *dead) {
    if (p->n == 1 && has_ref(dead, p->u.one)) p->n = 0;
    if (p->n <= 1) return;
    const uint8_t *q = pdeltas(p);
    uint8_t *w = pdeltas(p);
    uint64_t r = 0, prev = 0, first = 0;
    uint32_t k = 0;
    for (uint32_t i = 0; i < p->n; i++) {
        r += pget(&q);
        if (has_ref(dead, r)) continue;
        if (!k) first = r;
        w += tsdb__put_uvarint(w, r - prev);
        prev = r;
        k++;
    }
    if (k <= 1) {
        free(p->u.blk);
        p->n = k;
        p->len = 0;
        if (k) p->u.one = first;
        return;
    }
    p->n = k;
    p->len = (uint32_t)(w - pdeltas(p));
    phdr(p)->last = prev;
}

/* Drops dead refs, then empty postings and names (idx_lock held for
 * writing). The maps are rebuilt from the survivors; if memory runs out
 * for a rebuilt map, the old one is kept with its (empty) entries, which
 * stays correct and is retried at the next GC. */
static void index_prune(tsdb_head *h, const refvec *dead) {
    labels_itab *it = labels_global();
    plist_filter(&h->all, dead);
    umap keepn = {0};
    int failn = 0;
    for (uint32_t i = 0; i < h->names.cap; i++) {
        nament *ne = h->names.val[i];
        if (!ne) continue;
        pmap keepv = {0};
        int fail = 0;
        for (uint32_t j = 0; j < ne->values.cap; j++) {
            if (ne->values.key[j] == LABELS_SYM_NONE) continue;
            plist *p = &ne->values.val[j];
            plist_filter(p, dead);
            if (p->n && !fail && !pmap_put(&keepv, ne->values.key[j], p)) fail = 1;
        }
        if (!fail) { /* the lists moved to keepv; drop the empty ones' keys */
            for (uint32_t j = 0; j < ne->values.cap; j++)
                if (ne->values.key[j] != LABELS_SYM_NONE && !ne->values.val[j].n)
                    labels_itab_unref(it, ne->values.key[j]);
            pmap_free(&ne->values);
            ne->values = keepv;
        } else {
            pmap_free(&keepv);
        }
        if (ne->values.n == 0 && !failn) {
            continue; /* freed below, once keepn is known to be complete */
        }
        if (!failn && umap_put(&keepn, ne->name, ne)) failn = 1;
    }
    if (failn) { /* keep the old name map */
        umap_free(&keepn);
        return;
    }
    for (uint32_t i = 0; i < h->names.cap; i++) {
        nament *ne = h->names.val[i];
        if (!ne || ne->values.n) continue;
        labels_itab_unref(it, ne->name);
        pmap_free(&ne->values);
        free(ne);
    }
    umap_free(&h->names);
    h->names = keepn;
}

/* Drops the OOO chunks of s that end before mint and the buffered OOO
 * samples before it; frees the store once empty (stripe lock held). */
static void ooo_gc(hseries *s, int64_t mint) {
    hooo *o = s->ooo;
    if (!o) return;
    uint32_t k = cl_lower(o->cb, o->nch, mint);
    if (k) (void)cl_splice(&o->cb, &o->nch, 0, k, NULL, 0); /* out of memory: next time */
    uint32_t b = obuf_lower(o, mint);
    if (b) {
        memmove(o->buf, o->buf + b, (o->nbuf - b) * sizeof *o->buf);
        o->nbuf -= b;
    }
    if (!o->nch && !o->nbuf) {
        ooo_free(o);
        s->ooo = NULL;
    }
}

/* Drops the tombstones that end before mint and those of dead series
 * (commit_mu held). Out of memory: they stay, which is still correct. */
static void tomb_gc(tsdb_head *h, int64_t mint, const refvec *dead) {
    tsdb__tomb *t = tomb_get(h);
    if (!t) return;
    tsdb__stone *st = malloc((t->nivals ? t->nivals : 1) * sizeof *st);
    size_t k = 0;
    for (size_t i = 0; st && i < t->nser; i++) {
        if (has_ref(dead, t->ids[i])) continue;
        for (size_t j = t->off[i]; j < t->off[i + 1]; j++)
            if (t->iv[j].maxt >= mint) st[k++] = (tsdb__stone){t->ids[i], t->iv[j]};
    }
    tsdb__tomb *nt;
    if (st && k < t->nivals && !tsdb__tomb_build(NULL, st, k, &nt)) tomb_set(h, nt);
    free(st);
    tsdb__tomb_unref(t);
}

int tsdb_head_gc(tsdb_head *h, int64_t mint, uint64_t *ret_removed) {
    refvec dead = {0};
    hseries **victims = NULL;
    size_t nv = 0, capv = 0;
    int e = 0;
    int64_t bmint = INT64_MAX, bmaxt = INT64_MIN;
    pthread_mutex_lock(&h->commit_mu);
    if (mint > atomic_load_explicit(&h->min_valid, memory_order_relaxed))
        atomic_store_explicit(&h->min_valid, mint, memory_order_relaxed);
    for (int i = 0; i < NSHARDS && !e; i++) {
        shard *sh = &h->shards[i];
        pthread_mutex_lock(&sh->mu);
        for (uint32_t j = 0; j < sh->byref.cap && !e; j++) {
            hseries *s = smap_at(&sh->byref, j);
            if (!s) continue;
            pthread_mutex_t *mu = stripe(h, s);
            pthread_mutex_lock(mu);
            /* chunks that end before mint; an open chunk always has a
             * sample at or after it, or the series goes */
            uint32_t k = cl_lower(s->cb, s->nch, mint);
            if (k) {
                uint64_t n = 0;
                for (uint32_t c = 0; c < k; c++) n += cl_count(s->cb, s->nch, c);
                if (!cl_splice(&s->cb, &s->nch, 0, k, NULL, 0)) /* out of memory: next time */
                    atomic_fetch_sub_explicit(&h->csamples, n, memory_order_relaxed);
            }
            ooo_gc(s, mint);
            int64_t lo, hi;
            int gone = !series_range(s, &lo, &hi) || hi < mint;
            if (!gone) {
                if (lo < bmint) bmint = lo;
                if (hi > bmaxt) bmaxt = hi;
            }
            pthread_mutex_unlock(mu);
            if (gone) {
                if ((e = grow((void **)&victims, &capv, nv + 1, sizeof *victims)) ||
                    (e = rv_push(&dead, &s->ref, 1)))
                    break;
                victims[nv++] = s;
            }
        }
        pthread_mutex_unlock(&sh->mu);
    }
    if (!e && nv && h->wal && tsdb_wal_held(h->wal)) { /* before they leave the tables */
        labels_set **ls = malloc(nv * sizeof *ls);
        if (!ls) e = BASE_E_NOMEM;
        for (size_t i = 0; !e && i < nv; i++) ls[i] = victims[i]->ls;
        if (!e) e = del_remember(h, dead.v, ls, nv);
        free(ls);
    }
    if (!e) {
        for (size_t i = 0; i < nv; i++) {
            hseries *s = victims[i];
            shard *a = hshard(h, s->hash), *b = rshard(h, s->ref);
            pthread_mutex_lock(&a->mu);
            smap_del(&a->byhash, s, 0);
            pthread_mutex_unlock(&a->mu);
            pthread_mutex_lock(&b->mu);
            smap_del(&b->byref, s, 1);
            pthread_mutex_unlock(&b->mu);
            atomic_fetch_or_explicit(&s->rc, RC_DEAD, memory_order_relaxed);
            pthread_mutex_t *mu = stripe(h, s);
            pthread_mutex_lock(mu);
            uint64_t n = 0;
            for (uint32_t c = 0; c < s->nch; c++) n += cl_count(s->cb, s->nch, c);
            atomic_fetch_sub_explicit(&h->csamples, n, memory_order_relaxed);
            pthread_mutex_unlock(mu);
        }
        rv_sort_uniq(&dead);
        pthread_rwlock_wrlock(&h->idx_lock);
        index_prune(h, &dead);
        pthread_rwlock_unlock(&h->idx_lock);
        tomb_gc(h, mint, &dead);
        for (size_t i = 0; i < nv; i++) series_put(victims[i]);
        atomic_fetch_sub_explicit(&h->nseries, nv, memory_order_relaxed);
        h->removed += nv;
        atomic_store_explicit(&h->bmint, bmint, memory_order_relaxed);
        atomic_store_explicit(&h->bmaxt, bmaxt, memory_order_relaxed);
    }
    pthread_mutex_unlock(&h->commit_mu);
    free(victims);
    free(dead.v);
    if (!e && ret_removed) *ret_removed = nv;
    return e;
}

/* ---- checkpoint --------------------------------------------------------- */

static int cmp_ref(const void *a, const void *b) {
    uint64_t x = (*(hseries *const *)a)->ref, y = (*(hseries *const *)b)->ref;
    return x < y ? -1 : x > y;
}

/* Every live series, referenced, sorted by ref. */
static int all_series(tsdb_head *h, hseries ***ret, size_t *ret_n) {
    hseries **v = NULL;
    size_t n = 0, cap = 0;
    int e = 0;
    for (int i = 0; i < NSHARDS && !e; i++) {
        shard *sh = &h->shards[i];
        pthread_mutex_lock(&sh->mu);
        for (uint32_t j = 0; j < sh->byref.cap; j++) {
            hseries *s = smap_at(&sh->byref, j);
            if (!s) continue;
            if ((e = grow((void **)&v, &cap, n + 1, sizeof *v))) break;
            series_get(s);
            v[n++] = s;
        }
        pthread_mutex_unlock(&sh->mu);
    }
    if (e) {
        for (size_t i = 0; i < n; i++) series_put(v[i]);
        free(v);
        return e;
    }
    if (n > 1) qsort(v, n, sizeof *v, cmp_ref);
    *ret = v;
    *ret_n = n;
    return 0;
}

#define CKPT_BATCH        4096
/* A chunks record is cut once its entries pass CKPT_RECORD_BYTES, and one
 * series is split into several entries past CKPT_ENTRY_BYTES of chunks, a
 * record being cut within the series when it passes that: a record stays
 * far below TSDB_WAL_RECORD_MAX (at most 32 MiB + one entry, an entry at
 * most 32 MiB + one chunk + a 16 MiB open chunk). */
#define CKPT_RECORD_BYTES ((size_t)1 << 20)
#define CKPT_ENTRY_BYTES  ((uint64_t)32 << 20)
#define CKPT_HDR          11 /* room for a record header before the entries */

uint64_t tsdb__head_ckpt_entry_bytes;

/* Checkpoint writer state: the chunks record being built (entries after
 * CKPT_HDR bytes of room for its header) and per-series scratch. */
typedef struct ckw {
    tsdb_wal_ckpt *c;
    base_buf ent;
    uint64_t nent;
    base_buf open;
    tsdb_rec_chunk *ch, *oc;
    size_t capch, capoc;
    tsdb_rec_osample *ob;
    size_t capob;
} ckw;

static int ckw_flush(ckw *w) {
    if (!w->nent) return 0;
    uint8_t hdr[CKPT_HDR];
    unsigned k = tsdb_rec_chunks_hdr(hdr, w->nent);
    uint8_t *start = (uint8_t *)w->ent.data + CKPT_HDR - k;
    memcpy(start, hdr, k);
    /* chunk bytes do not compress: no snappy attempt */
    int e = tsdb_wal_ckpt_add_z(w->c, start, w->ent.len - (CKPT_HDR - k), 0);
    base_buf_reset(&w->ent);
    w->nent = 0;
    return e;
}

/* Sets list (b, n)'s chunks [i0, n) as record chunks into *v. */
static int ckw_list(const uint8_t *b, uint32_t n, uint32_t i0, tsdb_rec_chunk **v, size_t *cap) {
    if (grow((void **)v, cap, n - i0 + 1, sizeof **v)) return BASE_E_NOMEM;
    for (uint32_t i = i0; i < n; i++) {
        const cmeta *m = &cmetas(b)[i];
        tsdb_rec_chunk *c = &(*v)[i - i0];
        c->mint = m->mint;
        c->maxt = cm_maxt(m);
        c->data = cl_data(b, n, i, &c->len);
    }
    return 0;
}

/* Takes chunks from v[*i..n) while they fit *budget (at least one). */
static size_t ckw_take(const tsdb_rec_chunk *v, size_t n, size_t *i, uint64_t *budget) {
    size_t i0 = *i;
    while (*i < n && (*i == i0 || v[*i].len <= *budget)) {
        *budget -= v[*i].len < *budget ? v[*i].len : *budget;
        (*i)++;
    }
    return *i - i0;
}

/* Appends the entries of series s (stripe lock held): its closed in-order
 * chunks that end at or after cutoff (the last one always when there is
 * no open chunk: the last sample decides what is out of order), the open
 * chunk's stream, its OOO chunks ending at or after cutoff and buffered
 * OOO samples from cutoff on. */
static int ckw_series(ckw *w, const hseries *s, int64_t cutoff) {
    uint32_t j0 = cl_lower(s->cb, s->nch, cutoff);
    if (!s->n && s->nch && j0 == s->nch) j0 = s->nch - 1;
    size_t nch = s->nch - j0, noc = 0, nob = 0;
    int e = ckw_list(s->cb, s->nch, j0, &w->ch, &w->capch);
    const hooo *o = s->ooo;
    if (!e && o) {
        uint32_t k0 = cl_lower(o->cb, o->nch, cutoff);
        noc = o->nch - k0;
        e = ckw_list(o->cb, o->nch, k0, &w->oc, &w->capoc);
        uint32_t b0 = obuf_lower(o, cutoff);
        nob = o->nbuf - b0;
        if (!e && nob && !(e = grow((void **)&w->ob, &w->capob, nob, sizeof *w->ob)))
            for (size_t i = 0; i < nob; i++)
                w->ob[i] = (tsdb_rec_osample){o->buf[b0 + i].t, o->buf[b0 + i].v};
    }
    base_buf_reset(&w->open);
    if (!e && s->n) e = stage_emit(s, &w->open);
    if (e) return e;
    if (!nch && !s->n && !noc && !nob) return 0;
    size_t ci = 0, oi = 0;
    int open_done = !s->n, buf_done = !nob;
    do { /* one entry, unless the series holds more than CKPT_ENTRY_BYTES */
        tsdb_rec_series_chunks r = {.ref = s->ref};
        uint64_t budget = tsdb__head_ckpt_entry_bytes ? tsdb__head_ckpt_entry_bytes : CKPT_ENTRY_BYTES;
        size_t c0 = ci;
        r.nchunks = ckw_take(w->ch, nch, &ci, &budget);
        r.chunks = w->ch + c0;
        if (ci == nch && !open_done) {
            r.open_n = s->n;
            r.open_t0 = s->t0;
            r.open_bits = tsdb__bw_bits(&s->w);
            r.open = (const uint8_t *)w->open.data;
            open_done = 1;
            budget -= w->open.len < budget ? w->open.len : budget;
        }
        if (ci == nch && open_done && budget) {
            size_t o0 = oi;
            r.nooo = ckw_take(w->oc, noc, &oi, &budget);
            r.ooo = w->oc + o0;
            if (oi == noc) {
                r.buf = w->ob;
                r.nbuf = nob;
                buf_done = 1;
            }
        }
        if (!w->ent.len) base_buf_append(&w->ent, (uint8_t[CKPT_HDR]){0}, CKPT_HDR);
        if ((e = tsdb_rec_enc_chunks_entry(&w->ent, &r))) return e;
        w->nent++;
        /* normally flushed by the caller, out of the stripe lock; a series
         * split into many entries is flushed here to bound the record */
        if (w->ent.len >= CKPT_ENTRY_BYTES && (e = ckw_flush(w))) return e;
    } while (ci < nch || oi < noc || !open_done || !buf_done);
    return 0;
}

int tsdb_head_checkpoint(tsdb_head *h, int64_t cutoff, char *err, size_t errlen) {
    if (!h->wal) return BASE_E_INVAL;
    struct timespec ts0, ts1;
    clock_gettime(CLOCK_MONOTONIC, &ts0);
    tsdb_wal_ckpt *c;
    int e = tsdb_wal_ckpt_begin(h->wal, &c, err, errlen);
    if (e) return e;
    hseries **v = NULL;
    size_t n = 0;
    if ((e = all_series(h, &v, &n))) {
        tsdb_wal_ckpt_abort(c);
        return e;
    }
    base_buf rec = BASE_BUF_INIT;
    ckw w = {.c = c, .ent = BASE_BUF_INIT, .open = BASE_BUF_INIT};
    tsdb_rec_series *sr = malloc(CKPT_BATCH * sizeof *sr);
    if (!sr) e = BASE_E_NOMEM;
    /* live series records first (in batches), then the chunks of every series */
    for (size_t i = 0; i < n && !e; i += CKPT_BATCH) {
        size_t k = n - i < CKPT_BATCH ? n - i : CKPT_BATCH;
        for (size_t j = 0; j < k; j++) sr[j] = (tsdb_rec_series){v[i + j]->ref, v[i + j]->ls};
        base_buf_reset(&rec);
        if (!(e = tsdb_rec_enc_series(&rec, sr, k))) e = tsdb_wal_ckpt_add(c, rec.data, rec.len);
    }
    /* then the held series GC removed that segments >= the hold name (read
     * after the scan: a series it missed was remembered before it left) */
    uint64_t hold = tsdb_wal_held(h->wal), ckn = tsdb_wal_ckpt_number(c);
    hdel *dv = NULL;
    size_t nd = 0;
    if (!e && hold) {
        pthread_mutex_lock(&h->del_mu);
        if (h->ndel && !(dv = malloc(h->ndel * sizeof *dv))) e = BASE_E_NOMEM;
        for (size_t i = 0; !e && i < h->ndel; i++)
            if (h->del[i].seg >= hold) {
                dv[nd] = h->del[i];
                dv[nd++].ls = labels_ref(h->del[i].ls);
            }
        pthread_mutex_unlock(&h->del_mu);
    }
    for (size_t i = 0; i < nd && !e; i += CKPT_BATCH) {
        size_t k = nd - i < CKPT_BATCH ? nd - i : CKPT_BATCH;
        for (size_t j = 0; j < k; j++) sr[j] = (tsdb_rec_series){dv[i + j].ref, dv[i + j].ls};
        base_buf_reset(&rec);
        if (!(e = tsdb_rec_enc_series(&rec, sr, k))) e = tsdb_wal_ckpt_add(c, rec.data, rec.len);
    }
    for (size_t i = 0; i < nd; i++) labels_unref(dv[i].ls);
    free(dv);
    for (size_t i = 0; i < n && !e; i++) {
        pthread_mutex_t *mu = stripe(h, v[i]);
        pthread_mutex_lock(mu);
        e = ckw_series(&w, v[i], cutoff);
        pthread_mutex_unlock(mu);
        if (!e && w.ent.len >= CKPT_RECORD_BYTES) e = ckw_flush(&w);
    }
    if (!e) e = ckw_flush(&w);
    /* tombstones of the series written that reach their oldest sample
     * (the chunks written keep samples before cutoff too): taken after
     * the roll, so a deletion logged before it is in the table */
    tsdb__tomb *tt = tomb_get(h);
    if (!e && tt) {
        tsdb_rec_tombstone *ts = malloc(tt->nivals * sizeof *ts);
        size_t k = 0;
        if (!ts) e = BASE_E_NOMEM;
        for (size_t i = 0, j = 0; !e && i < tt->nser; i++) {
            while (j < n && v[j]->ref < tt->ids[i]) j++;
            if (j == n || v[j]->ref != tt->ids[i]) continue;
            pthread_mutex_t *mu = stripe(h, v[j]);
            pthread_mutex_lock(mu);
            int64_t lo, hi;
            int have = series_range(v[j], &lo, &hi);
            pthread_mutex_unlock(mu);
            for (size_t x = tt->off[i]; have && x < tt->off[i + 1]; x++)
                if (tt->iv[x].maxt >= lo)
                    ts[k++] = (tsdb_rec_tombstone){tt->ids[i], tt->iv[x].mint, tt->iv[x].maxt};
        }
        for (size_t i = 0; !e && i < k; i += TOMB_REC_MAX) {
            base_buf_reset(&rec);
            if (!(e = tsdb_rec_enc_tombstones(&rec, ts + i, k - i < TOMB_REC_MAX ? k - i : TOMB_REC_MAX)))
                e = tsdb_wal_ckpt_add(c, rec.data, rec.len);
        }
        free(ts);
    }
    tsdb__tomb_unref(tt);
    /* The scan may have seen samples of commits that applied them but had
     * not yet queued their WAL records (both happen under commit_mu): wait
     * for those commits to leave the lock, then write what is queued, so
     * that everything in the checkpoint is also in the segments from N on
     * before the checkpoint replaces the older ones. Else a kill right
     * after the commit could keep part of a batch never acknowledged. */
    if (!e) {
        pthread_mutex_lock(&h->commit_mu);
        pthread_mutex_unlock(&h->commit_mu);
        e = tsdb_wal_flush(h->wal);
    }
    for (size_t i = 0; i < n; i++) series_put(v[i]);
    free(v);
    free(sr);
    free(w.ch);
    free(w.oc);
    free(w.ob);
    base_buf_free(&w.ent);
    base_buf_free(&w.open);
    base_buf_free(&rec);
    if (e) {
        if (errlen) snprintf(err, errlen, "checkpoint: %s", base_strerror(e));
        tsdb_wal_ckpt_abort(c);
        return e;
    }
    uint64_t bytes = tsdb_wal_ckpt_bytes(c);
    if ((e = tsdb_wal_ckpt_commit(c, err, errlen))) return e;
    /* Segments before the hold (before N without one) are gone or no
     * reader needs them: forget the series only they name. */
    uint64_t keep_from = hold && hold < ckn ? hold : ckn;
    pthread_mutex_lock(&h->del_mu);
    size_t kept = 0;
    for (size_t i = 0; i < h->ndel; i++) {
        if (h->del[i].seg >= keep_from)
            h->del[kept++] = h->del[i];
        else
            labels_unref(h->del[i].ls);
    }
    h->ndel = kept;
    if (!kept) {
        free(h->del);
        h->del = NULL;
        h->capdel = 0;
    }
    pthread_mutex_unlock(&h->del_mu);
    clock_gettime(CLOCK_MONOTONIC, &ts1);
    pthread_mutex_lock(&h->commit_mu);
    h->checkpoints++;
    h->ckpt_bytes = bytes;
    h->ckpt_ms = (uint64_t)((ts1.tv_sec - ts0.tv_sec) * 1000 + (ts1.tv_nsec - ts0.tv_nsec) / 1000000);
    pthread_mutex_unlock(&h->commit_mu);
    return 0;
}

tsdb_wal *tsdb_head_wal(tsdb_head *h) {
    return h->wal;
}

uint64_t tsdb_head_wal_bytes_since_checkpoint(tsdb_head *h) {
    return h->wal ? tsdb_wal_tail_bytes(h->wal) : 0;
}

uint64_t tsdb__head_checkpoint_bytes;

int tsdb_head_checkpoint_due(tsdb_head *h) {
    uint64_t lim = tsdb__head_checkpoint_bytes ? tsdb__head_checkpoint_bytes
                   : h->o.checkpoint_bytes     ? h->o.checkpoint_bytes
                                               : TSDB_HEAD_CHECKPOINT_BYTES;
    return h->wal && tsdb_head_wal_bytes_since_checkpoint(h) >= lim;
}

/* ---- accounting --------------------------------------------------------- */

uint64_t tsdb_head_series_count(tsdb_head *h) {
    return atomic_load_explicit(&h->nseries, memory_order_relaxed);
}

void tsdb_head_stats_get(tsdb_head *h, tsdb_head_stats *ret) {
    tsdb_head_stats st;
    memset(&st, 0, sizeof st);
    pthread_mutex_lock(&h->commit_mu);
    st.totals = h->totals;
    st.series_created = h->created;
    st.series_removed = h->removed;
    st.replay_rejected = h->replay_rejected;
    st.replay_corrupt = h->replay_corrupt;
    st.checkpoints = h->checkpoints;
    st.checkpoint_bytes = h->ckpt_bytes;
    st.checkpoint_ms = h->ckpt_ms;
    pthread_mutex_lock(&h->del_mu);
    st.series_held = h->ndel;
    pthread_mutex_unlock(&h->del_mu);
    st.tombstones = tsdb_head_num_tombstones(h);
    int first = 1;
    for (int i = 0; i < NSHARDS; i++) {
        shard *sh = &h->shards[i];
        pthread_mutex_lock(&sh->mu);
        st.bytes_index += msize(sh->byref.slot) + msize(sh->byhash.slot);
        for (uint32_t j = 0; j < sh->byref.cap; j++) {
            hseries *s = smap_at(&sh->byref, j);
            if (!s) continue;
            pthread_mutex_t *mu = stripe(h, s);
            pthread_mutex_lock(mu);
            st.series++;
            st.bytes_series += msize(s) + msize(s->w.buf);
            st.bytes_chunks += msize(s->cb);
            st.chunks += s->nch;
            st.samples += s->n; /* closed ones: csamples */
            st.bytes_labels += labels_set_bytes(s->ls);
            const hooo *o = s->ooo;
            if (o) {
                st.ooo_series++;
                st.ooo_chunks += o->nch;
                st.ooo_samples += o->nbuf;
                st.bytes_ooo += msize(o) + msize(o->cb) + msize(o->buf);
                for (uint32_t k = 0; k < o->nch; k++) st.ooo_samples += cl_count(o->cb, o->nch, k);
            }
            int64_t lo, hi;
            if (series_range(s, &lo, &hi)) {
                if (first || lo < st.mint) st.mint = lo;
                if (first || hi > st.maxt) st.maxt = hi;
                first = 0;
            }
            pthread_mutex_unlock(mu);
        }
        pthread_mutex_unlock(&sh->mu);
    }
    pthread_rwlock_rdlock(&h->idx_lock);
    st.bytes_index += plist_bytes(&h->all) + msize(h->names.key) + msize(h->names.val);
    for (uint32_t i = 0; i < h->names.cap; i++) {
        nament *ne = h->names.val[i];
        if (!ne) continue;
        st.bytes_index += msize(ne) + msize(ne->values.key) + msize(ne->values.val);
        for (uint32_t j = 0; j < ne->values.cap; j++)
            if (ne->values.key[j] != LABELS_SYM_NONE) st.bytes_index += plist_bytes(&ne->values.val[j]);
    }
    pthread_rwlock_unlock(&h->idx_lock);
    pthread_mutex_unlock(&h->commit_mu);
    labels_itab_stats is;
    labels_itab_stats_get(labels_global(), &is);
    st.bytes_labels += is.bytes; /* strings are shared process-wide */
    st.samples += atomic_load_explicit(&h->csamples, memory_order_relaxed) + st.ooo_samples;
    st.bytes_total = st.bytes_series + st.bytes_chunks + st.bytes_ooo + st.bytes_index + st.bytes_labels;
    *ret = st;
}
