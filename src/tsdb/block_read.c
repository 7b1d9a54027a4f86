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
 * Invariants: after open every varint of the index decodes, every ref is
 * in range; readers never touch bytes outside the mappings.
 * Ownership: the block owns the mappings and tables; sets borrow it. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
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
};

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
    free(b->post);
    free(b->dir);
    free(b);
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

int tsdb_block_open(const char *dir, tsdb_block **ret, char *err, size_t errlen) {
    tsdb_block *b = calloc(1, sizeof *b);
    if (!b || !(b->dir = strdup(dir))) {
        free(b);
        return BASE_E_NOMEM;
    }
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
    e = 0;
    b->meta.chunk_bytes = total; /* as on disk, for retention */
    *ret = b;
    return 0;
fail:
    tsdb_block_close(b);
    return e;
}

int tsdb__block_open_mem(const uint8_t *idx, size_t len, tsdb_block **ret, char *err, size_t errlen) {
    tsdb_block *b = calloc(1, sizeof *b);
    if (!b || !(b->dir = strdup("(memory)")) || !(b->idx = malloc(len + 1))) {
        if (b) free(b->dir);
        free(b);
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
    tsdb_chunk_it it;
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

static int overlaps(const tsdb_block *b, uint32_t id, int64_t mint, int64_t maxt) {
    uint64_t np;
    cur c = series_at(b, id, &np);
    for (uint64_t i = 0; i < 2 * np; i++) cuv(&c);
    uint64_t nc = cuv(&c);
    int64_t pt = b->meta.mint;
    for (uint64_t j = 0; j < nc; j++) {
        int64_t cm = pt + csv(&c);
        int64_t cx = cm + (int64_t)cuv(&c);
        cuv(&c);
        if (cm <= maxt && cx >= mint) return 1;
        pt = cx;
    }
    return 0;
}

int tsdb_block_select(tsdb_block *b, labels_matcher *const *ms, size_t n, int64_t mint, int64_t maxt,
                      tsdb_block_set **ret) {
    tsdb_block_set *s = calloc(1, sizeof *s);
    if (!s) return BASE_E_NOMEM;
    int e = match_ids(b, ms, n, &s->ids, &s->n);
    if (e) {
        free(s);
        return e;
    }
    size_t k = 0;
    if (mint <= b->meta.maxt - 1 && maxt >= b->meta.mint)
        for (size_t i = 0; i < s->n; i++)
            if (overlaps(b, s->ids[i], mint, maxt)) s->ids[k++] = s->ids[i];
    s->n = k;
    s->b = b;
    s->mint = mint;
    s->maxt = maxt;
    labels_builder_init(&s->lb);
    *ret = s;
    return 0;
}

size_t tsdb_block_set_count(const tsdb_block_set *s) {
    return s->n;
}

void tsdb_block_set_free(tsdb_block_set *s) {
    if (!s) return;
    labels_unref(s->ls);
    labels_builder_free(&s->lb);
    free(s->ids);
    free(s);
}

int tsdb_block_set_next(tsdb_block_set *s) {
    labels_unref(s->ls);
    s->ls = NULL;
    s->in_chunk = 0;
    s->cleft = 0;
    if (s->pos >= s->n) return 0;
    uint32_t id = s->ids[s->pos++];
    uint64_t np;
    cur c = series_at(s->b, id, &np);
    labels_builder_reset(&s->lb);
    for (uint64_t i = 0; i < np; i++) {
        uint64_t a = cuv(&c), v = cuv(&c);
        int e = labels_builder_add(&s->lb, s->b->syms[a], s->b->syms[v]);
        if (e) return e;
    }
    int e = labels_builder_finish(&s->lb, 0, &s->ls, NULL, 0);
    if (e) return e;
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

int tsdb_block_set_sample(tsdb_block_set *s, int64_t *ret_t, double *ret_v) {
    for (;;) {
        if (s->in_chunk) {
            bool ok = tsdb_chunk_it_next(&s->it);
            while (ok && s->it.t < s->mint) ok = tsdb_chunk_it_next(&s->it);
            if (ok && s->it.t <= s->maxt) {
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
        int64_t cm, cx;
        const uint8_t *d;
        size_t len;
        int r = tsdb_block_set_chunk(s, &cm, &cx, &d, &len);
        if (r <= 0) return r;
        tsdb_chunk_it_init(&s->it, d, len);
        s->in_chunk = 1;
    }
}

/* ---- label listings ------------------------------------------------------- */

/* Symbols (names when want_name, else values of name sym nm) of the
 * matching series; seen[] marks symbol refs. Output in symbol order, which
 * is sorted. */
static int list_syms(tsdb_block *b, int want_name, base_str name, labels_matcher *const *ms, size_t n,
                     tsdb_strs **ret) {
    uint8_t *seen = calloc(b->nsyms + 1, 1);
    base_str *v = malloc((b->nsyms + 1) * sizeof *v);
    uint32_t *ids = NULL;
    size_t nids = 0;
    int e = BASE_E_NOMEM;
    if (!seen || !v) goto out;
    uint32_t nm = 0;
    int have = want_name || sym_find(b, name, &nm);
    if (!have) {
        e = tsdb__strs_make(v, 0, ret);
        goto out;
    }
    if (n == 0) {
        for (size_t k = 0; k < b->npost; k++)
            if (want_name)
                seen[b->post[k].name] = 1;
            else if (b->post[k].name == nm)
                seen[b->post[k].value] = 1;
    } else {
        if ((e = match_ids(b, ms, n, &ids, &nids))) goto out;
        for (size_t i = 0; i < nids; i++) {
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
    return e;
}

int tsdb_block_label_names(tsdb_block *b, labels_matcher *const *ms, size_t n, tsdb_strs **ret) {
    return list_syms(b, 1, (base_str){0}, ms, n, ret);
}

int tsdb_block_label_values(tsdb_block *b, base_str name, labels_matcher *const *ms, size_t n,
                            tsdb_strs **ret) {
    return list_syms(b, 0, name, ms, n, ret);
}

/* ---- verification ----------------------------------------------------------- */

int tsdb_block_verify(tsdb_block *b, char *err, size_t errlen) {
    tsdb_block_set *s;
    int e = tsdb_block_select(b, NULL, 0, INT64_MIN, INT64_MAX, &s);
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
