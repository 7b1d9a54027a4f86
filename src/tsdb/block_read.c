/* block_read.c -- opening a block (format.h), select, label listings and
 * verification.
 *
 * Design: the index and chunk segments are mapped read-only. Open checks
 * the whole index before trusting any of it (header, TOC and section CRCs,
 * section bounds, symbol order, series order by symbol refs -- symbols are
 * sorted, so comparing refs compares strings -- ranges of chunk metas,
 * postings order and ids) and keeps three tables: symbol views, series
 * offsets, postings list offsets. Select ANDs per-matcher bitmaps over
 * series ids (a matcher that matches "" removes the series whose value
 * does not match; otherwise it keeps the union of matching values'
 * postings), then walks the ids in order -- already labels order -- and
 * keeps series with a chunk in range. Chunk records are checked (bounds,
 * CRC) when read, so a damaged chunk file hurts only the series it holds.
 *
 * Tombstones (tomb_int.h, format.h) are loaded at open into an immutable
 * table; a deletion builds the next table, writes it to the tombstones
 * file (tmp + fsync + rename + fsync of the directory) and only then
 * publishes it, so a set sees the table of the moment it was selected.
 * Reads skip deleted samples (a chunk wholly deleted is not even read),
 * select drops series whose chunks in range are all wholly deleted, and
 * listings drop series with no sample left in the asked range.
 *
 * Invariants: after open every varint of the index decodes, every ref is
 * in range; readers never touch bytes outside the mappings.
 * Ownership: the block owns the mappings and tables; sets borrow it. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/err.h"
#include "tsdb/block.h"
#include "tsdb/block_int.h"
#include "tsdb/chunk.h"
#include "tsdb/chunk_int.h"
#include "tsdb/merge_int.h"
#include "tsdb/tomb_int.h"
#include "tsdb/wal.h"

#define MAX_SEGMENTS 100000u

typedef struct seg {
    uint8_t *p;
    size_t len;
} seg;

typedef struct plist {
    uint32_t name, value, count;
    size_t off; /* first id delta, in the index */
} plist;

struct tsdb_block {
    char *dir;
    int owned_idx; /* idx is a malloc'ed copy (tsdb__block_open_mem) */
    tsdb_block_meta meta;
    uint8_t *idx;
    size_t idxlen;
    seg *segs;
    size_t nsegs;
    base_str *syms;
    size_t nsyms;
    size_t *series; /* offset of each series' npairs */
    size_t nseries;
    plist *post;
    size_t npost;
    pthread_mutex_t tomb_mu; /* guards tomb (the pointer), lcache's allocation */
    pthread_mutex_t tw_mu;   /* one deletion at a time */
    tsdb__tomb *tomb;        /* NULL: nothing deleted */
    /* LABELS CACHE. Building a series' label set interns every name and
     * value (hash, table probe, shard lock), then drops them again: ~1 us
     * a series, most of a select + next over many series. The sets a
     * block builds are kept (one reference each) in lcache[id], filled on
     * first use, for the block's life, within a process-wide budget
     * (TSDB__LCACHE_BYTES): past it, sets are built per read as before. */
    labels_set *_Atomic *_Atomic lcache;
    int lcache_off;                /* the budget refused this block's table */
    _Atomic uint64_t lcache_bytes; /* charged to the budget */
};

#define TSDB__LCACHE_BYTES ((int64_t)64 << 20)
static _Atomic int64_t lcache_used;

static int lcache_charge(int64_t n) {
    if (atomic_fetch_add_explicit(&lcache_used, n, memory_order_relaxed) + n <= TSDB__LCACHE_BYTES) return 1;
    atomic_fetch_sub_explicit(&lcache_used, n, memory_order_relaxed);
    return 0;
}

/* The cached set of series id, referenced, or NULL. */
static labels_set *lcache_get(tsdb_block *b, uint32_t id) {
    labels_set *_Atomic *c = atomic_load_explicit(&b->lcache, memory_order_acquire);
    labels_set *ls = c ? atomic_load_explicit(&c[id], memory_order_acquire) : NULL;
    return ls ? labels_ref(ls) : NULL;
}

/* Offers ls as series id's set (the cache takes its own reference). */
static void lcache_put(tsdb_block *b, uint32_t id, labels_set *ls) {
    labels_set *_Atomic *c = atomic_load_explicit(&b->lcache, memory_order_acquire);
    if (!c) {
        pthread_mutex_lock(&b->tomb_mu);
        c = atomic_load_explicit(&b->lcache, memory_order_relaxed);
        if (!c && !b->lcache_off) {
            int64_t need = (int64_t)(b->nseries + 1) * (int64_t)sizeof *c;
            if (lcache_charge(need)) {
                if ((c = calloc(b->nseries + 1, sizeof *c))) {
                    atomic_fetch_add_explicit(&b->lcache_bytes, (uint64_t)need, memory_order_relaxed);
                    atomic_store_explicit(&b->lcache, c, memory_order_release);
                } else {
                    atomic_fetch_sub_explicit(&lcache_used, need, memory_order_relaxed);
                }
            }
            if (!c) b->lcache_off = 1; /* the budget is spent (or no memory): not for this block */
        }
        pthread_mutex_unlock(&b->tomb_mu);
        if (!c) return;
    }
    int64_t need = (int64_t)labels_set_bytes(ls);
    if (!lcache_charge(need)) return;
    labels_set *exp = NULL, *mine = labels_ref(ls);
    if (atomic_compare_exchange_strong_explicit(&c[id], &exp, mine, memory_order_release,
                                                memory_order_relaxed)) {
        atomic_fetch_add_explicit(&b->lcache_bytes, (uint64_t)need, memory_order_relaxed);
    } else { /* another reader was first */
        labels_unref(mine);
        atomic_fetch_sub_explicit(&lcache_used, need, memory_order_relaxed);
    }
}

static void lcache_free(tsdb_block *b) {
    labels_set *_Atomic *c = atomic_load_explicit(&b->lcache, memory_order_relaxed);
    if (c) {
        for (size_t i = 0; i < b->nseries; i++)
            labels_unref(atomic_load_explicit(&c[i], memory_order_relaxed));
        free((void *)c);
    }
    atomic_fetch_sub_explicit(&lcache_used, (int64_t)atomic_load(&b->lcache_bytes), memory_order_relaxed);
}

/* The current tombstones table, referenced (NULL when none). */
static tsdb__tomb *tomb_get(tsdb_block *b) {
    pthread_mutex_lock(&b->tomb_mu);
    tsdb__tomb *t = tsdb__tomb_ref(b->tomb);
    pthread_mutex_unlock(&b->tomb_mu);
    return t;
}

static int map_file(const char *path, uint8_t **ret, size_t *ret_len) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return errno == ENOENT ? BASE_E_NOTFOUND : BASE_E_IO;
    struct stat st;
    if (fstat(fd, &st)) {
        close(fd);
        return BASE_E_IO;
    }
    uint8_t *p = NULL;
    if (st.st_size > 0) {
        void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (m == MAP_FAILED) {
            close(fd);
            return BASE_E_IO;
        }
        p = m;
    }
    close(fd);
    *ret = p;
    *ret_len = (size_t)st.st_size;
    return 0;
}

void tsdb_block_close(tsdb_block *b) {
    if (!b) return;
    if (b->owned_idx)
        free(b->idx);
    else if (b->idx)
        munmap(b->idx, b->idxlen);
    for (size_t i = 0; i < b->nsegs; i++)
        if (b->segs[i].p) munmap(b->segs[i].p, b->segs[i].len);
    free(b->segs);
    free(b->syms);
    free(b->series);
    lcache_free(b);
    free(b->post);
    free(b->dir);
    tsdb__tomb_unref(b->tomb);
    pthread_mutex_destroy(&b->tomb_mu);
    pthread_mutex_destroy(&b->tw_mu);
    free(b);
}

static tsdb_block *block_alloc(const char *dir) {
    tsdb_block *b = calloc(1, sizeof *b);
    if (!b || !(b->dir = strdup(dir))) {
        free(b);
        return NULL;
    }
    pthread_mutex_init(&b->tomb_mu, NULL);
    pthread_mutex_init(&b->tw_mu, NULL);
    return b;
}

uint64_t tsdb_block_num_tombstones(tsdb_block *b) {
    tsdb__tomb *t = tomb_get(b);
    uint64_t n = t ? t->nivals : 0;
    tsdb__tomb_unref(t);
    return n;
}

const tsdb_block_meta *tsdb_block_get_meta(const tsdb_block *b) {
    return &b->meta;
}
const char *tsdb_block_dir(const tsdb_block *b) {
    return b->dir;
}

/* A cursor over one index section: every read is bounds-checked. */
typedef struct cur {
    const uint8_t *p, *end;
    int err;
} cur;

static uint64_t cuv(cur *c) {
    uint64_t v = 0;
    if (!c->err) {
        int e = tsdb__get_uvarint(&c->p, c->end, 0, &v);
        if (e) c->err = e;
    }
    return c->err ? 0 : v;
}
static int64_t csv(cur *c) {
    uint64_t u = cuv(c);
    return (int64_t)((u >> 1) ^ (0 - (u & 1)));
}

#define BAD(...) base_errf(err, errlen, BASE_E_PARSE, __VA_ARGS__)

static int open_index(tsdb_block *b, const char *path, char *err, size_t errlen) {
    const uint8_t *x = b->idx;
    size_t n = b->idxlen;
    if (n < TSDB_INDEX_HEADER + 4 * 8 + TSDB_INDEX_TOC) return BAD("%s: too short (%zu bytes)", path, n);
    if (memcmp(x, TSDB_INDEX_MAGIC, 4) || x[4] != TSDB_INDEX_VERSION || x[5] || x[6] || x[7])
        return BAD("%s: bad magic or version", path);
    const uint8_t *toc = x + n - TSDB_INDEX_TOC;
    if (tsdb__block_get_u32(toc + 36) != tsdb_crc32c(0, toc, 36))
        return BAD("%s: table of contents CRC mismatch", path);
    static const char *names[4] = {"meta", "symbols", "series", "postings"};
    cur sec[4];
    uint64_t lo = TSDB_INDEX_HEADER, hi = n - TSDB_INDEX_TOC;
    for (int i = 0; i < 4; i++) {
        uint64_t off = tsdb__block_get_u64(toc + 8 * i);
        if (off < lo || off > hi || hi - off < 8)
            return BAD("%s: %s section offset %llu out of range", path, names[i], (unsigned long long)off);
        uint64_t len = tsdb__block_get_u32(x + off);
        if (len > hi - off - 8)
            return BAD("%s: %s section length %llu out of range", path, names[i], (unsigned long long)len);
        if (tsdb__block_get_u32(x + off + 4 + len) != tsdb_crc32c(0, x + off + 4, len))
            return BAD("%s: %s section CRC mismatch", path, names[i]);
        sec[i] = (cur){x + off + 4, x + off + 4 + len, 0};
        lo = off + 8 + len;
    }
    /* META */
    tsdb_block_meta *m = &b->meta;
    const uint8_t *p = sec[0].p;
    size_t ml = (size_t)(sec[0].end - p);
    if (ml < TSDB_INDEX_META_FIXED) return BAD("%s: meta section too short", path);
    memcpy(m->ulid.b, p, 16);
    m->mint = (int64_t)tsdb__block_get_u64(p + 16);
    m->maxt = (int64_t)tsdb__block_get_u64(p + 24);
    m->num_series = tsdb__block_get_u64(p + 32);
    m->num_samples = tsdb__block_get_u64(p + 40);
    m->num_chunks = tsdb__block_get_u64(p + 48);
    m->level = tsdb__block_get_u32(p + 56);
    m->nsources = tsdb__block_get_u32(p + 60);
    m->chunk_bytes = tsdb__block_get_u64(p + 64);
    if (m->nsources > TSDB_BLOCK_MAX_SOURCES || ml != TSDB_INDEX_META_FIXED + 16 * (size_t)m->nsources)
        return BAD("%s: meta section has a bad source count", path);
    if (m->mint >= m->maxt) return BAD("%s: meta has an empty time range", path);
    for (uint32_t i = 0; i < m->nsources; i++) memcpy(m->sources[i].b, p + 72 + 16 * i, 16);

    /* SYMBOLS */
    cur c = sec[1];
    uint64_t ns = cuv(&c);
    if (c.err || ns > (uint64_t)(c.end - c.p)) return BAD("%s: bad symbol count", path);
    if (!(b->syms = malloc((ns + 1) * sizeof *b->syms))) return BASE_E_NOMEM;
    for (uint64_t i = 0; i < ns; i++) {
        uint64_t l = cuv(&c);
        if (c.err || l > (uint64_t)(c.end - c.p) || l > LABELS_STRING_MAX)
            return BAD("%s: symbol %llu is truncated", path, (unsigned long long)i);
        b->syms[i] = (base_str){(const char *)c.p, (size_t)l};
        c.p += l;
        if (i) {
            base_str a = b->syms[i - 1], s = b->syms[i];
            size_t k = a.n < s.n ? a.n : s.n;
            int r = k ? memcmp(a.p, s.p, k) : 0;
            if (r > 0 || (r == 0 && a.n >= s.n))
                return BAD("%s: symbols out of order at %llu", path, (unsigned long long)i);
        }
    }
    if (c.p != c.end) return BAD("%s: trailing bytes in the symbols section", path);
    b->nsyms = (size_t)ns;

    /* SERIES */
    c = sec[2];
    uint64_t nser = cuv(&c);
    if (c.err || nser > (uint64_t)(c.end - c.p) / 4 || nser != m->num_series)
        return BAD("%s: bad series count", path);
    if (!(b->series = malloc((nser + 1) * sizeof *b->series))) return BASE_E_NOMEM;
    const uint8_t *prev = NULL;
    uint64_t prevn = 0, nchunks = 0;
    for (uint64_t i = 0; i < nser; i++) {
        b->series[i] = (size_t)(c.p - x);
        uint64_t np = cuv(&c);
        if (c.err || np == 0 || np > LABELS_MAX_PAIRS)
            return BAD("%s: series %llu has a bad label count", path, (unsigned long long)i);
        /* order check against the previous series, pair by pair */
        cur pc = {prev, prev ? c.end : NULL, 0};
        int cmp = prev ? 0 : 1;
        uint64_t lastname = 0;
        for (uint64_t j = 0; j < np; j++) {
            uint64_t a = cuv(&c), v = cuv(&c);
            if (c.err || a >= ns || v >= ns || (j && a <= lastname) || !b->syms[a].n || !b->syms[v].n)
                return BAD("%s: series %llu has bad labels", path, (unsigned long long)i);
            lastname = a;
            if (cmp == 0) {
                if (j >= prevn) {
                    cmp = 1; /* longer than the previous: after it */
                } else {
                    uint64_t pa = cuv(&pc), pv = cuv(&pc);
                    if (pa != a)
                        cmp = a > pa ? 1 : -1;
                    else if (pv != v)
                        cmp = v > pv ? 1 : -1;
                }
            }
        }
        if (cmp == 0 && np < prevn) cmp = -1;
        if (cmp <= 0) return BAD("%s: series %llu out of order", path, (unsigned long long)i);
        prev = b->idx + b->series[i];
        { /* skip prev's count varint for the next comparison */
            cur t = {prev, c.end, 0};
            prevn = cuv(&t);
            prev = t.p;
        }
        uint64_t nc = cuv(&c);
        if (c.err || nc == 0 || nc > (uint64_t)(c.end - c.p) / 3)
            return BAD("%s: series %llu has a bad chunk count", path, (unsigned long long)i);
        int64_t pt = m->mint;
        uint64_t pref = 0;
        for (uint64_t j = 0; j < nc; j++) {
            int64_t d = csv(&c);
            uint64_t span = cuv(&c), dr = cuv(&c);
            if (c.err) return BAD("%s: series %llu: chunk metas truncated", path, (unsigned long long)i);
            int64_t cm;
            if (__builtin_add_overflow(pt, d, &cm) || cm < m->mint || cm >= m->maxt || (j && cm <= pt) ||
                span >= (uint64_t)m->maxt - (uint64_t)cm || (j && dr == 0) ||
                __builtin_add_overflow(pref, dr, &pref))
                return BAD("%s: series %llu: chunk %llu has a bad range or ref", path, (unsigned long long)i,
                           (unsigned long long)j);
            pt = cm + (int64_t)span;
        }
        nchunks += nc;
    }
    if (c.p != c.end) return BAD("%s: trailing bytes in the series section", path);
    if (nchunks != m->num_chunks) return BAD("%s: chunk count differs from the meta", path);
    b->nseries = (size_t)nser;

    /* POSTINGS */
    c = sec[3];
    uint64_t npl = cuv(&c);
    if (c.err || npl > (uint64_t)(c.end - c.p) / 4) return BAD("%s: bad postings count", path);
    if (!(b->post = malloc((npl + 1) * sizeof *b->post))) return BASE_E_NOMEM;
    for (uint64_t i = 0; i < npl; i++) {
        plist *l = &b->post[i];
        uint64_t a = cuv(&c), v = cuv(&c), cnt = cuv(&c);
        if (c.err || a >= ns || v >= ns || cnt == 0 || cnt > nser)
            return BAD("%s: postings list %llu is bad", path, (unsigned long long)i);
        if (i && (a < l[-1].name || (a == l[-1].name && v <= l[-1].value)))
            return BAD("%s: postings out of order", path);
        *l = (plist){(uint32_t)a, (uint32_t)v, (uint32_t)cnt, (size_t)(c.p - x)};
        uint64_t id = 0;
        for (uint64_t j = 0; j < cnt; j++) {
            uint64_t d = cuv(&c);
            if (c.err || (j && d == 0) || d >= nser || (id += d) >= nser)
                return BAD("%s: postings list %llu has a bad id", path, (unsigned long long)i);
        }
    }
    if (c.p != c.end) return BAD("%s: trailing bytes in the postings section", path);
    b->npost = (size_t)npl;
    return 0;
}

/* Loads dir/tombstones if there is one. */
static int load_tombstones(tsdb_block *b, char *err, size_t errlen) {
    char p[4200];
    snprintf(p, sizeof p, "%s/tombstones", b->dir);
    uint8_t *m;
    size_t len;
    int e = map_file(p, &m, &len);
    if (e == BASE_E_NOTFOUND) return 0;
    if (e) return base_errf(err, errlen, e, "%s: cannot map: %s", p, base_strerror(e));
    char msg[256];
    e = tsdb__tomb_decode(m ? m : (const uint8_t *)"", len, b->nseries, &b->tomb, msg, sizeof msg);
    if (m) munmap(m, len);
    if (e == BASE_E_PARSE) return base_errf(err, errlen, e, "%s: %s", b->dir, msg);
    return e;
}

int tsdb_block_open(const char *dir, tsdb_block **ret, char *err, size_t errlen) {
    tsdb_block *b = block_alloc(dir);
    if (!b) return BASE_E_NOMEM;
    char p[4200];
    struct stat st;
    int e;
    snprintf(p, sizeof p, "%s/meta.json", dir);
    if (stat(p, &st)) {
        e = base_errf(err, errlen, BASE_E_NOTFOUND, "%s: no meta.json, not a finished block", dir);
        goto fail;
    }
    snprintf(p, sizeof p, "%s/index", dir);
    if ((e = map_file(p, &b->idx, &b->idxlen))) {
        base_errf(err, errlen, e, "%s: cannot map: %s", p, base_strerror(e));
        goto fail;
    }
    if ((e = open_index(b, p, err, errlen))) goto fail;
    b->meta.index_bytes = b->idxlen;
    uint64_t total = 0;
    for (;;) {
        if (b->nsegs >= MAX_SEGMENTS) {
            e = base_errf(err, errlen, BASE_E_LIMIT, "%s: too many chunk segments", dir);
            goto fail;
        }
        snprintf(p, sizeof p, "%s/chunks/%06zu", dir, b->nsegs + 1);
        seg s = {0};
        e = map_file(p, &s.p, &s.len);
        if (e == BASE_E_NOTFOUND) break;
        if (e) {
            base_errf(err, errlen, e, "%s: cannot map: %s", p, base_strerror(e));
            goto fail;
        }
        seg *ns = realloc(b->segs, (b->nsegs + 1) * sizeof *ns);
        if (!ns) {
            if (s.p) munmap(s.p, s.len);
            e = BASE_E_NOMEM;
            goto fail;
        }
        b->segs = ns;
        b->segs[b->nsegs++] = s;
        total += s.len;
    }
    if ((e = load_tombstones(b, err, errlen))) goto fail;
    b->meta.chunk_bytes = total; /* as on disk, for retention */
    *ret = b;
    return 0;
fail:
    tsdb_block_close(b);
    return e;
}

int tsdb__block_open_mem(const uint8_t *idx, size_t len, tsdb_block **ret, char *err, size_t errlen) {
    tsdb_block *b = block_alloc("(memory)");
    if (!b) return BASE_E_NOMEM;
    if (!(b->idx = malloc(len + 1))) {
        tsdb_block_close(b);
        return BASE_E_NOMEM;
    }
    b->owned_idx = 1;
    if (len) memcpy(b->idx, idx, len);
    b->idxlen = len;
    int e = open_index(b, "index", err, errlen);
    if (e) {
        tsdb_block_close(b);
        return e;
    }
    b->meta.index_bytes = len;
    *ret = b;
    return 0;
}

/* The chunk record at ref: 0 with the chunk bytes (encoding first), or
 * BASE_E_TRUNCATED / BASE_E_PARSE. */
static int read_chunk(const tsdb_block *b, uint64_t ref, const uint8_t **ret, size_t *ret_len) {
    uint64_t sn = ref >> 32, off = ref & 0xffffffffu;
    if (sn == 0 || sn > b->nsegs) return BASE_E_TRUNCATED;
    const seg *s = &b->segs[sn - 1];
    if (s->len < TSDB_CHUNKS_HEADER || memcmp(s->p, TSDB_CHUNKS_MAGIC, 4) || s->p[4] != TSDB_CHUNKS_VERSION)
        return BASE_E_PARSE;
    if (off < TSDB_CHUNKS_HEADER || off >= s->len) return BASE_E_TRUNCATED;
    const uint8_t *p = s->p + off, *end = s->p + s->len;
    uint64_t len;
    int e = tsdb__get_uvarint(&p, end, 0, &len);
    if (e) return e;
    if (len > (uint64_t)(end - p) || (uint64_t)(end - p) - len < 5) return BASE_E_TRUNCATED;
    if (tsdb__block_get_u32(p + 1 + len) != tsdb_crc32c(0, p, len + 1)) return BASE_E_PARSE;
    *ret = p;
    *ret_len = (size_t)len + 1;
    return 0;
}

/* ---- select --------------------------------------------------------------- */

struct tsdb_block_set {
    tsdb_block *b;
    int64_t mint, maxt;
    uint32_t *ids;
    size_t n, pos;
    labels_set *ls;
    labels_builder lb;
    cur chunks;     /* remaining chunk metas of the current series */
    uint64_t cleft; /* chunks left */
    int64_t cprev;
    uint64_t cref;
    int in_chunk;
    int pend; /* an error a batch read met after its samples */
    tsdb_chunk_it it;
    tsdb__tomb *tomb;     /* the tombstones as of select (referenced) */
    const tsdb__ival *iv; /* the current series' deleted intervals */
    size_t niv, ivc;      /* their count, a cursor */
};

static int sym_find(const tsdb_block *b, base_str s, uint32_t *ret) {
    size_t lo = 0, hi = b->nsyms;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        base_str m = b->syms[mid];
        size_t k = m.n < s.n ? m.n : s.n;
        int r = k ? memcmp(m.p, s.p, k) : 0;
        if (r == 0) r = m.n < s.n ? -1 : m.n > s.n;
        if (r == 0) {
            *ret = (uint32_t)mid;
            return 1;
        }
        if (r < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return 0;
}

/* Postings lists of label `name`: [*lo, *hi). */
static void name_range(const tsdb_block *b, base_str name, size_t *lo, size_t *hi) {
    uint32_t ns;
    *lo = *hi = 0;
    if (!sym_find(b, name, &ns)) return;
    size_t l = 0, h = b->npost;
    while (l < h) {
        size_t mid = l + (h - l) / 2;
        if (b->post[mid].name < ns)
            l = mid + 1;
        else
            h = mid;
    }
    *lo = l;
    while (l < b->npost && b->post[l].name == ns) l++;
    *hi = l;
}

static void plist_mark(const tsdb_block *b, const plist *l, uint64_t *bits, int set) {
    cur c = {b->idx + l->off, b->idx + b->idxlen, 0};
    uint64_t id = 0;
    for (uint32_t j = 0; j < l->count; j++) {
        id += cuv(&c);
        if (set)
            bits[id >> 6] |= 1ull << (id & 63);
        else
            bits[id >> 6] &= ~(1ull << (id & 63));
    }
}

/* The ids of the series matching every matcher, ascending. */
static int match_ids(const tsdb_block *b, labels_matcher *const *ms, size_t n, uint32_t **ret,
                     size_t *ret_n) {
    size_t words = (b->nseries + 63) / 64 + 1;
    uint64_t *bits = malloc(words * 8), *tmp = malloc(words * 8);
    uint32_t *ids = NULL;
    int e = BASE_E_NOMEM;
    if (!bits || !tmp) goto out;
    memset(bits, 0xff, words * 8);
    for (size_t i = 0; i < n; i++) {
        size_t lo, hi;
        name_range(b, labels_matcher_name(ms[i]), &lo, &hi);
        if (labels_matcher_matches_empty(ms[i])) {
            for (size_t k = lo; k < hi; k++)
                if (!labels_matcher_matches(ms[i], b->syms[b->post[k].value]))
                    plist_mark(b, &b->post[k], bits, 0);
        } else {
            memset(tmp, 0, words * 8);
            for (size_t k = lo; k < hi; k++)
                if (labels_matcher_matches(ms[i], b->syms[b->post[k].value]))
                    plist_mark(b, &b->post[k], tmp, 1);
            for (size_t w = 0; w < words; w++) bits[w] &= tmp[w];
        }
    }
    size_t cnt = 0;
    for (size_t id = 0; id < b->nseries; id++) cnt += (bits[id >> 6] >> (id & 63)) & 1;
    if (!(ids = malloc((cnt + 1) * sizeof *ids))) goto out;
    cnt = 0;
    for (size_t id = 0; id < b->nseries; id++)
        if ((bits[id >> 6] >> (id & 63)) & 1) ids[cnt++] = (uint32_t)id;
    *ret = ids;
    *ret_n = cnt;
    ids = NULL;
    e = 0;
out:
    free(bits);
    free(tmp);
    free(ids);
    return e;
}

/* Positions c at the series' chunk metas; returns the pair cursor. */
static cur series_at(const tsdb_block *b, uint32_t id, uint64_t *ret_np) {
    cur c = {b->idx + b->series[id], b->idx + b->idxlen, 0};
    *ret_np = cuv(&c);
    return c;
}

/* Whether series id has a chunk overlapping [mint, maxt] whose part in
 * that range is not wholly deleted by iv[0..niv). */
static int overlaps(const tsdb_block *b, uint32_t id, int64_t mint, int64_t maxt, const tsdb__ival *iv,
                    size_t niv) {
    uint64_t np;
    cur c = series_at(b, id, &np);
    for (uint64_t i = 0; i < 2 * np; i++) cuv(&c);
    uint64_t nc = cuv(&c);
    int64_t pt = b->meta.mint;
    for (uint64_t j = 0; j < nc; j++) {
        int64_t cm = pt + csv(&c);
        int64_t cx = cm + (int64_t)cuv(&c);
        cuv(&c);
        if (cm <= maxt && cx >= mint &&
            !(niv && tsdb__ivals_cover(iv, niv, cm > mint ? cm : mint, cx < maxt ? cx : maxt)))
            return 1;
        pt = cx;
    }
    return 0;
}

/* raw: tombstones not applied (verification reads what the files hold) */
static int block_select(tsdb_block *b, labels_matcher *const *ms, size_t n, int64_t mint, int64_t maxt,
                        int raw, tsdb_block_set **ret) {
    tsdb_block_set *s = calloc(1, sizeof *s);
    if (!s) return BASE_E_NOMEM;
    int e = match_ids(b, ms, n, &s->ids, &s->n);
    if (e) {
        free(s);
        return e;
    }
    s->tomb = raw ? NULL : tomb_get(b);
    size_t k = 0;
    if (mint <= maxt && mint <= b->meta.maxt - 1 && maxt >= b->meta.mint)
        for (size_t i = 0; i < s->n; i++) {
            size_t niv;
            const tsdb__ival *iv = tsdb__tomb_get(s->tomb, s->ids[i], &niv);
            if (overlaps(b, s->ids[i], mint, maxt, iv, niv)) s->ids[k++] = s->ids[i];
        }
    s->n = k;
    s->b = b;
    s->mint = mint;
    s->maxt = maxt;
    labels_builder_init(&s->lb);
    *ret = s;
    return 0;
}

int tsdb_block_select(tsdb_block *b, labels_matcher *const *ms, size_t n, int64_t mint, int64_t maxt,
                      tsdb_block_set **ret) {
    return block_select(b, ms, n, mint, maxt, 0, ret);
}

size_t tsdb_block_set_count(const tsdb_block_set *s) {
    return s->n;
}

void tsdb_block_set_free(tsdb_block_set *s) {
    if (!s) return;
    labels_unref(s->ls);
    labels_builder_free(&s->lb);
    tsdb__tomb_unref(s->tomb);
    free(s->ids);
    free(s);
}

int tsdb_block_set_next(tsdb_block_set *s) {
    labels_unref(s->ls);
    s->ls = NULL;
    s->in_chunk = 0;
    s->cleft = 0;
    s->pend = 0;
    if (s->pos >= s->n) return 0;
    uint32_t id = s->ids[s->pos++];
    s->iv = tsdb__tomb_get(s->tomb, id, &s->niv);
    s->ivc = 0;
    uint64_t np;
    cur c = series_at(s->b, id, &np);
    labels_set *cached = lcache_get(s->b, id);
    if (cached) { /* skip the pairs */
        s->ls = cached;
        for (uint64_t i = 0; i < 2 * np; i++) cuv(&c);
    } else {
        labels_builder_reset(&s->lb);
        for (uint64_t i = 0; i < np; i++) {
            uint64_t a = cuv(&c), v = cuv(&c);
            int e = labels_builder_add(&s->lb, s->b->syms[a], s->b->syms[v]);
            if (e) return e;
        }
        int e = labels_builder_finish(&s->lb, 0, &s->ls, NULL, 0);
        if (e) return e;
        lcache_put(s->b, id, s->ls);
    }
    s->cleft = cuv(&c);
    s->chunks = c;
    s->cprev = s->b->meta.mint;
    s->cref = 0;
    return 1;
}

const labels_set *tsdb_block_set_labels(const tsdb_block_set *s) {
    return s->ls;
}

int tsdb_block_set_chunk(tsdb_block_set *s, int64_t *ret_mint, int64_t *ret_maxt, const uint8_t **ret_data,
                         size_t *ret_len) {
    while (s->cleft) {
        s->cleft--;
        int64_t cm = s->cprev + csv(&s->chunks);
        int64_t cx = cm + (int64_t)cuv(&s->chunks);
        s->cref += cuv(&s->chunks);
        s->cprev = cx;
        if (cm > s->maxt || cx < s->mint) continue;
        const uint8_t *d;
        size_t len;
        int e = read_chunk(s->b, s->cref, &d, &len);
        if (e) {
            s->cleft = 0;
            return e == BASE_E_TRUNCATED ? BASE_E_TRUNCATED : BASE_E_PARSE;
        }
        *ret_mint = cm;
        *ret_maxt = cx;
        *ret_data = d;
        *ret_len = len;
        return 1;
    }
    return 0;
}

/* Moves to the next chunk of the current series that overlaps [mint,
 * maxt] and is not wholly deleted there: 1 with s->it ready, 0 at the
 * end, <0 for a chunk that cannot be read (the series ends). */
static int open_chunk(tsdb_block_set *s) {
    while (s->cleft) {
        s->cleft--;
        int64_t cm = s->cprev + csv(&s->chunks);
        int64_t cx = cm + (int64_t)cuv(&s->chunks);
        s->cref += cuv(&s->chunks);
        s->cprev = cx;
        if (cm > s->maxt || cx < s->mint) continue;
        if (s->niv &&
            tsdb__ivals_cover(s->iv, s->niv, cm > s->mint ? cm : s->mint, cx < s->maxt ? cx : s->maxt))
            continue;
        const uint8_t *d;
        size_t len;
        int e = read_chunk(s->b, s->cref, &d, &len);
        if (e) {
            s->cleft = 0;
            return e == BASE_E_TRUNCATED ? BASE_E_TRUNCATED : BASE_E_PARSE;
        }
        tsdb_chunk_it_init(&s->it, d, len);
        s->in_chunk = 1;
        return 1;
    }
    return 0;
}

int tsdb_block_set_sample(tsdb_block_set *s, int64_t *ret_t, double *ret_v) {
    if (s->pend) {
        int e = s->pend;
        s->pend = 0;
        return e;
    }
    for (;;) {
        if (s->in_chunk) {
            bool ok = tsdb_chunk_it_next(&s->it);
            while (ok && s->it.t < s->mint) ok = tsdb_chunk_it_next(&s->it);
            if (ok && s->it.t <= s->maxt) {
                if (s->niv && tsdb__ivals_hit(s->iv, s->niv, &s->ivc, s->it.t)) continue;
                *ret_t = s->it.t;
                *ret_v = s->it.v;
                return 1;
            }
            if (tsdb_chunk_it_err(&s->it)) {
                s->in_chunk = 0;
                s->cleft = 0;
                return BASE_E_PARSE;
            }
            s->in_chunk = 0;
            if (ok) s->cleft = 0; /* past maxt */
        }
        int r = open_chunk(s);
        if (r <= 0) return r;
    }
}

int tsdb_block_set_samples(tsdb_block_set *s, int64_t *t, double *v, size_t cap) {
    if (!cap) return BASE_E_INVAL;
    if (s->pend) {
        int e = s->pend;
        s->pend = 0;
        return e;
    }
    if (cap > INT32_MAX) cap = INT32_MAX;
    size_t k = 0;
    while (k < cap) {
        if (!s->in_chunk) {
            int r = open_chunk(s);
            if (r == 0) break;
            if (r < 0) {
                if (!k) return r;
                s->pend = r;
                break;
            }
        }
        /* decode straight into the caller's arrays, then cut to the range
         * (only the first and last chunks have samples outside it) */
        size_t want = cap - k, r = tsdb_chunk_it_next_n(&s->it, t + k, v + k, want);
        int64_t *tk = t + k;
        double *vk = v + k;
        int past;
        size_t cnt = tsdb__cut_range(tk, vk, r, s->mint, s->maxt, &past);
        if (s->niv && cnt) cnt = tsdb__ivals_filter(s->iv, s->niv, &s->ivc, tk, vk, cnt);
        k += cnt;
        if (past) { /* past maxt: the series ends here */
            s->in_chunk = 0;
            s->cleft = 0;
            break;
        }
        if (r < want) { /* the chunk ended, or failed */
            s->in_chunk = 0;
            if (tsdb_chunk_it_err(&s->it)) {
                s->cleft = 0;
                if (!k) return BASE_E_PARSE;
                s->pend = BASE_E_PARSE;
                break;
            }
        }
    }
    return (int)k;
}

/* ---- label listings ------------------------------------------------------- */

/* Whether series id keeps a sample in [mint, maxt] under the tombstones
 * t (a damaged chunk counts as kept: the listing stays conservative). */
static int series_live(tsdb_block *b, tsdb__tomb *t, uint32_t id, int64_t mint, int64_t maxt) {
    if (mint < b->meta.mint) mint = b->meta.mint;
    if (maxt > b->meta.maxt - 1) maxt = b->meta.maxt - 1;
    tsdb_block_set s = {.b = b, .mint = mint, .maxt = maxt, .ids = &id, .n = 1, .tomb = t};
    labels_builder_init(&s.lb);
    int live = 1;
    if (mint > maxt) {
        live = 0;
    } else if (tsdb_block_set_next(&s) == 1) {
        int64_t tt;
        double vv;
        live = tsdb_block_set_sample(&s, &tt, &vv) != 0;
    }
    labels_unref(s.ls);
    labels_builder_free(&s.lb);
    return live;
}

/* The series that tombstones leave without a sample in [mint, maxt]
 * (ascending; *ret NULL when none). */
static int dead_ids(tsdb_block *b, int64_t mint, int64_t maxt, uint32_t **ret, size_t *ret_n) {
    *ret = NULL;
    *ret_n = 0;
    tsdb__tomb *t = tomb_get(b);
    if (!t) return 0;
    uint32_t *v = NULL;
    size_t n = 0;
    int e = 0;
    for (size_t i = 0; i < t->nser && !e; i++) {
        if (series_live(b, t, (uint32_t)t->ids[i], mint, maxt)) continue;
        if (!v && !(v = malloc(t->nser * sizeof *v))) {
            e = BASE_E_NOMEM;
            break;
        }
        v[n++] = (uint32_t)t->ids[i];
    }
    tsdb__tomb_unref(t);
    if (e) return e;
    *ret = v;
    *ret_n = n;
    return 0;
}

/* Symbols (names when want_name, else values of name sym nm) of the
 * matching series, less those deleted in [mint, maxt]; seen[] marks
 * symbol refs. Output in symbol order, which is sorted. */
static int list_syms(tsdb_block *b, int want_name, base_str name, labels_matcher *const *ms, size_t n,
                     int64_t mint, int64_t maxt, tsdb_strs **ret) {
    uint8_t *seen = calloc(b->nsyms + 1, 1);
    base_str *v = malloc((b->nsyms + 1) * sizeof *v);
    uint32_t *ids = NULL, *dead = NULL;
    size_t nids = 0, ndead = 0;
    int e = BASE_E_NOMEM;
    if (!seen || !v) goto out;
    uint32_t nm = 0;
    int have = want_name || sym_find(b, name, &nm);
    if (!have) {
        e = tsdb__strs_make(v, 0, ret);
        goto out;
    }
    if ((e = dead_ids(b, mint, maxt, &dead, &ndead))) goto out;
    e = BASE_E_NOMEM;
    if (n == 0 && !ndead) {
        for (size_t k = 0; k < b->npost; k++)
            if (want_name)
                seen[b->post[k].name] = 1;
            else if (b->post[k].name == nm)
                seen[b->post[k].value] = 1;
    } else {
        if ((e = match_ids(b, ms, n, &ids, &nids))) goto out;
        for (size_t i = 0, d = 0; i < nids; i++) {
            while (d < ndead && dead[d] < ids[i]) d++;
            if (d < ndead && dead[d] == ids[i]) continue;
            uint64_t np;
            cur c = series_at(b, ids[i], &np);
            for (uint64_t j = 0; j < np; j++) {
                uint64_t a = cuv(&c), val = cuv(&c);
                if (want_name)
                    seen[a] = 1;
                else if (a == nm)
                    seen[val] = 1;
            }
        }
    }
    size_t k = 0;
    for (size_t i = 0; i < b->nsyms; i++)
        if (seen[i]) v[k++] = b->syms[i];
    e = tsdb__strs_make(v, k, ret);
out:
    free(seen);
    free(v);
    free(ids);
    free(dead);
    return e;
}

int tsdb_block_label_names(tsdb_block *b, labels_matcher *const *ms, size_t n, tsdb_strs **ret) {
    return list_syms(b, 1, (base_str){0}, ms, n, INT64_MIN, INT64_MAX, ret);
}

int tsdb_block_label_values(tsdb_block *b, base_str name, labels_matcher *const *ms, size_t n,
                            tsdb_strs **ret) {
    return list_syms(b, 0, name, ms, n, INT64_MIN, INT64_MAX, ret);
}

int tsdb__block_label_list(tsdb_block *b, const base_str *name, labels_matcher *const *ms, size_t n,
                           int64_t mint, int64_t maxt, tsdb_strs **ret) {
    return list_syms(b, name == NULL, name ? *name : (base_str){0}, ms, n, mint, maxt, ret);
}

/* ---- deletion ---------------------------------------------------------------- */

/* Writes the table as dir/tombstones: tmp file, fsync, rename, fsync of
 * the directory (format.h). */
static int write_tombstones(const char *dir, const tsdb__tomb *t, char *err, size_t errlen) {
    base_buf out = BASE_BUF_INIT;
    int e = tsdb__tomb_encode(t, &out);
    if (e) {
        base_buf_free(&out);
        return e;
    }
    char tmp[4200], p[4200];
    snprintf(tmp, sizeof tmp, "%s/tombstones.tmp", dir);
    snprintf(p, sizeof p, "%s/tombstones", dir);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        base_buf_free(&out);
        return base_errf(err, errlen, BASE_E_IO, "create %s: %s", tmp, strerror(errno));
    }
    size_t off = 0;
    while (off < out.len && !e) {
        ssize_t k = write(fd, out.data + off, out.len - off);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0)
            e = base_errf(err, errlen, BASE_E_IO, "write %s: %s", tmp, strerror(errno));
        else
            off += (size_t)k;
    }
    if (!e && fsync(fd)) e = base_errf(err, errlen, BASE_E_IO, "fsync %s: %s", tmp, strerror(errno));
    close(fd);
    base_buf_free(&out);
    if (!e && rename(tmp, p)) e = base_errf(err, errlen, BASE_E_IO, "rename %s: %s", tmp, strerror(errno));
    if (!e && tsdb__block_fsync_dir(dir)) e = base_errf(err, errlen, BASE_E_IO, "fsync %s failed", dir);
    if (e) unlink(tmp);
    return e;
}

static int tomb_same(const tsdb__tomb *a, const tsdb__tomb *b) {
    if (!a || !b) return !a && !b;
    return a->nser == b->nser && a->nivals == b->nivals &&
           !memcmp(a->ids, b->ids, a->nser * sizeof *a->ids) &&
           !memcmp(a->off, b->off, (a->nser + 1) * sizeof *a->off) &&
           !memcmp(a->iv, b->iv, a->nivals * sizeof *a->iv);
}

int tsdb_block_tombstone(tsdb_block *b, labels_matcher *const *ms, size_t n, int64_t mint, int64_t maxt,
                         uint64_t *ret_series, char *err, size_t errlen) {
    if (mint > maxt || mint > b->meta.maxt - 1 || maxt < b->meta.mint) {
        if (ret_series) *ret_series = 0;
        return 0;
    }
    pthread_mutex_lock(&b->tw_mu);
    uint32_t *ids = NULL;
    size_t nids = 0, ns = 0;
    tsdb__stone *st = NULL;
    tsdb__tomb *old = NULL, *nt = NULL;
    int e = match_ids(b, ms, n, &ids, &nids);
    if (!e && nids && !(st = malloc(nids * sizeof *st))) e = BASE_E_NOMEM;
    for (size_t i = 0; i < nids && !e; i++) {
        /* as Prometheus: a series with a chunk overlapping the range gets
         * the range clamped to its first and last chunk */
        uint64_t np;
        cur c = series_at(b, ids[i], &np);
        for (uint64_t j = 0; j < 2 * np; j++) cuv(&c);
        uint64_t nc = cuv(&c);
        int64_t pt = b->meta.mint, first = 0;
        int hit = 0;
        for (uint64_t j = 0; j < nc; j++) {
            int64_t cm = pt + csv(&c);
            int64_t cx = cm + (int64_t)cuv(&c);
            cuv(&c);
            if (!j) first = cm;
            hit |= cm <= maxt && cx >= mint;
            pt = cx;
        }
        if (hit) st[ns++] = (tsdb__stone){ids[i], {mint > first ? mint : first, maxt < pt ? maxt : pt}};
    }
    if (!e && ns) {
        old = tomb_get(b);
        e = tsdb__tomb_build(old, st, ns, &nt);
        if (!e && !tomb_same(old, nt)) e = write_tombstones(b->dir, nt, err, errlen);
        if (!e) {
            pthread_mutex_lock(&b->tomb_mu);
            tsdb__tomb *prev = b->tomb;
            b->tomb = nt;
            pthread_mutex_unlock(&b->tomb_mu);
            tsdb__tomb_unref(prev);
            nt = NULL;
        }
    }
    pthread_mutex_unlock(&b->tw_mu);
    tsdb__tomb_unref(old);
    tsdb__tomb_unref(nt);
    free(ids);
    free(st);
    if (e) return e == BASE_E_NOMEM ? base_errf(err, errlen, e, "%s: out of memory", b->dir) : e;
    if (ret_series) *ret_series = ns;
    return 0;
}

/* ---- verification ----------------------------------------------------------- */

int tsdb_block_verify(tsdb_block *b, char *err, size_t errlen) {
    tsdb_block_set *s;
    int e = block_select(b, NULL, 0, INT64_MIN, INT64_MAX, 1, &s);
    if (e) return e;
    uint64_t samples = 0;
    int r;
    while ((r = tsdb_block_set_next(s)) == 1) {
        int64_t cm, cx;
        const uint8_t *d;
        size_t len;
        while ((r = tsdb_block_set_chunk(s, &cm, &cx, &d, &len)) == 1) {
            tsdb_chunk_it it;
            tsdb_chunk_it_init(&it, d, len);
            int64_t first = 0, last = 0;
            uint32_t k = 0;
            while (tsdb_chunk_it_next(&it)) {
                if (!k) first = it.t;
                last = it.t;
                k++;
            }
            if (tsdb_chunk_it_err(&it) || k == 0 || first != cm || last != cx) {
                r = BASE_E_PARSE;
                break;
            }
            samples += k;
        }
        if (r < 0) {
            base_buf lb = BASE_BUF_INIT;
            labels_format(tsdb_block_set_labels(s), &lb);
            base_errf(err, errlen, BASE_E_PARSE, "%s: series %s: chunk damaged (%s)", b->dir,
                      lb.data ? lb.data : "{}", r == BASE_E_TRUNCATED ? "truncated" : "bad CRC or encoding");
            base_buf_free(&lb);
            break;
        }
    }
    tsdb_block_set_free(s);
    if (r < 0) return BASE_E_PARSE;
    if (samples != b->meta.num_samples)
        return base_errf(err, errlen, BASE_E_PARSE, "%s: %llu samples, meta says %llu", b->dir,
                         (unsigned long long)samples, (unsigned long long)b->meta.num_samples);
    return 0;
}
