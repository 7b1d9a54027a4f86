/* block_write.c -- ULIDs, the block writer and the shared block helpers.
 *
 * Design: one pass over the source. Samples go through one chunk appender
 * (re-chunked at the writer's size) and each cut chunk is appended as a
 * record to the current segment (buffered, cut before a record would pass
 * the segment size). Label sets (one reference each) and chunk metas stay
 * in memory until the source ends; then the symbols (every name and value,
 * sorted), the series and the postings are encoded into one buffer and
 * written as the index, followed by meta.json. Everything lives in
 * <parent>/<ULID>.tmp until every file and directory is fsynced, then the
 * directory is renamed into place and the parent fsynced. On any error the
 * .tmp directory is removed.
 *
 * Invariants: series are accepted only in strictly ascending labels order
 * and samples in strictly ascending time; the bytes follow format.h.
 * Ownership: the writer state is local to tsdb_block_write. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/err.h"
#include "tsdb/block.h"
#include "tsdb/block_int.h"
#include "tsdb/chunk.h"
#include "tsdb/chunk_int.h"
#include "tsdb/wal.h"

/* ---- helpers ------------------------------------------------------------ */

void tsdb__block_put_uv(base_buf *b, uint64_t v) {
    uint8_t tmp[10];
    base_buf_append(b, tmp, tsdb__put_uvarint(tmp, v));
}
void tsdb__block_put_sv(base_buf *b, int64_t v) {
    tsdb__block_put_uv(b, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63));
}
void tsdb__block_put_u32(base_buf *b, uint32_t v) {
    uint8_t t[4];
    for (int i = 0; i < 4; i++) t[i] = (uint8_t)(v >> (8 * i));
    base_buf_append(b, t, 4);
}
void tsdb__block_put_u64(base_buf *b, uint64_t v) {
    uint8_t t[8];
    for (int i = 0; i < 8; i++) t[i] = (uint8_t)(v >> (8 * i));
    base_buf_append(b, t, 8);
}
uint32_t tsdb__block_get_u32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
uint64_t tsdb__block_get_u64(const uint8_t *p) {
    return (uint64_t)tsdb__block_get_u32(p) | (uint64_t)tsdb__block_get_u32(p + 4) << 32;
}

int tsdb__block_fsync_dir(const char *dir) {
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return BASE_E_IO;
    int r = fsync(fd);
    close(fd);
    return r ? BASE_E_IO : 0;
}

static int rm_cb(const char *p, const struct stat *sb, int flag, struct FTW *f) {
    (void)sb;
    (void)f;
    return flag == FTW_DP ? rmdir(p) : unlink(p);
}
int tsdb__block_rm_rf(const char *dir) {
    if (nftw(dir, rm_cb, 16, FTW_DEPTH | FTW_PHYS) != 0 && errno != ENOENT) return BASE_E_IO;
    return 0;
}

/* ---- ULID ----------------------------------------------------------------- */

static const char crockford[] = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

int tsdb_ulid_new(int64_t ms, tsdb_ulid *ret) {
    tsdb_ulid u;
    uint64_t t = (uint64_t)ms;
    for (int i = 0; i < 6; i++) u.b[i] = (uint8_t)(t >> (8 * (5 - i)));
    if (getrandom(u.b + 6, 10, 0) != 10) return BASE_E_IO;
    *ret = u;
    return 0;
}

void tsdb_ulid_format(const tsdb_ulid *u, char out[27]) {
    unsigned __int128 x = 0;
    for (int i = 0; i < 16; i++) x = x << 8 | u->b[i];
    for (int i = 0; i < 26; i++) out[i] = crockford[(unsigned)(x >> (5 * (25 - i))) & 31];
    out[26] = '\0';
}

int tsdb_ulid_parse(base_str s, tsdb_ulid *ret) {
    if (s.n != TSDB_ULID_LEN) return BASE_E_PARSE;
    unsigned __int128 x = 0;
    for (size_t i = 0; i < s.n; i++) {
        const char *c = memchr(crockford, s.p[i], 32);
        if (!c || s.p[i] == '\0') return BASE_E_PARSE;
        unsigned d = (unsigned)(c - crockford);
        if (i == 0 && d > 7) return BASE_E_PARSE;
        x = x << 5 | d;
    }
    for (int i = 15; i >= 0; i--, x >>= 8) ret->b[i] = (uint8_t)x;
    return 0;
}

/* ---- writer --------------------------------------------------------------- */

typedef struct wchunk {
    int64_t mint, maxt;
    uint64_t ref;
} wchunk;

typedef struct wseries {
    labels_set *ls;
    size_t c0, nc; /* chunks [c0, c0 + nc) */
} wseries;

typedef struct writer {
    const char *parent;
    char tmpdir[4096], cdir[4200];
    char *err;
    size_t errlen;
    uint64_t segmax;
    int fd;             /* current segment, -1 before the first */
    uint32_t seg;       /* its number */
    uint64_t segoff;    /* bytes in it (written + buffered) */
    base_buf sbuf;      /* unwritten tail of the segment */
    uint64_t seg_total; /* bytes of closed segments */
    wseries *s;
    size_t ns, scap;
    wchunk *c;
    size_t nc, ccap;
    uint64_t nsamples;
    base_buf cb; /* one finished chunk */
} writer;

static int w_flush(writer *w) {
    size_t off = 0;
    while (off < w->sbuf.len) {
        ssize_t k = write(w->fd, w->sbuf.data + off, w->sbuf.len - off);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0)
            return base_errf(w->err, w->errlen, BASE_E_IO, "write chunks/%06u: %s", w->seg, strerror(errno));
        off += (size_t)k;
    }
    base_buf_reset(&w->sbuf);
    return 0;
}

static int w_close_seg(writer *w) {
    if (w->fd < 0) return 0;
    int e = w_flush(w);
    if (!e && fsync(w->fd))
        e = base_errf(w->err, w->errlen, BASE_E_IO, "fsync chunks/%06u: %s", w->seg, strerror(errno));
    close(w->fd);
    w->fd = -1;
    w->seg_total += w->segoff;
    return e;
}

static int w_new_seg(writer *w) {
    int e = w_close_seg(w);
    if (e) return e;
    char p[4400];
    w->seg++;
    snprintf(p, sizeof p, "%s/%06u", w->cdir, w->seg);
    w->fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (w->fd < 0) return base_errf(w->err, w->errlen, BASE_E_IO, "create %s: %s", p, strerror(errno));
    base_buf_append(&w->sbuf, TSDB_CHUNKS_MAGIC, 4);
    uint8_t v[4] = {TSDB_CHUNKS_VERSION, 0, 0, 0};
    base_buf_append(&w->sbuf, v, 4);
    w->segoff = TSDB_CHUNKS_HEADER;
    return base_buf_err(&w->sbuf);
}

/* Cuts the appender's chunk and writes it as a record. */
static int w_cut(writer *w, tsdb_chunk_app *a, int64_t cmint) {
    int64_t cmaxt = tsdb_chunk_app_maxt(a);
    base_buf_reset(&w->cb);
    int e = tsdb_chunk_app_finish(a, &w->cb);
    if (e) return base_errf(w->err, w->errlen, e, "cut chunk: %s", base_strerror(e));
    uint8_t tmp[10];
    unsigned vl = tsdb__put_uvarint(tmp, w->cb.len - 1);
    uint64_t rec = vl + w->cb.len + 4;
    if (w->fd < 0 || w->segoff + rec > w->segmax) {
        if ((e = w_new_seg(w))) return e;
    }
    uint64_t ref = (uint64_t)w->seg << 32 | w->segoff;
    base_buf_append(&w->sbuf, tmp, vl);
    base_buf_append(&w->sbuf, w->cb.data, w->cb.len);
    tsdb__block_put_u32(&w->sbuf, tsdb_crc32c(0, w->cb.data, w->cb.len));
    if (base_buf_err(&w->sbuf)) return base_errf(w->err, w->errlen, BASE_E_NOMEM, "out of memory");
    w->segoff += rec;
    if (w->sbuf.len >= (1u << 20) && (e = w_flush(w))) return e;
    if (w->nc == w->ccap) {
        size_t nc = w->ccap ? w->ccap * 2 : 1024;
        wchunk *c = realloc(w->c, nc * sizeof *c);
        if (!c) return BASE_E_NOMEM;
        w->c = c;
        w->ccap = nc;
    }
    w->c[w->nc++] = (wchunk){cmint, cmaxt, ref};
    return 0;
}

static int cmp_str(const void *a, const void *b) {
    const base_str *x = a, *y = b;
    size_t n = x->n < y->n ? x->n : y->n;
    int c = n ? memcmp(x->p, y->p, n) : 0;
    if (c) return c;
    return x->n < y->n ? -1 : x->n > y->n;
}

static uint32_t sym_of(const base_str *syms, size_t n, base_str s) {
    const base_str *f = bsearch(&s, syms, n, sizeof *syms, cmp_str);
    return (uint32_t)(f - syms); /* every string was collected */
}

typedef struct ptrip {
    uint32_t name, value, sid;
} ptrip;

static int cmp_trip(const void *a, const void *b) {
    const ptrip *x = a, *y = b;
    if (x->name != y->name) return x->name < y->name ? -1 : 1;
    if (x->value != y->value) return x->value < y->value ? -1 : 1;
    return x->sid < y->sid ? -1 : x->sid > y->sid;
}

static void put_section(base_buf *out, const base_buf *payload, uint64_t *ret_off) {
    *ret_off = out->len;
    tsdb__block_put_u32(out, (uint32_t)payload->len);
    base_buf_append(out, payload->data, payload->len);
    tsdb__block_put_u32(out, tsdb_crc32c(0, payload->data, payload->len));
}

/* Encodes the index of the collected series into out. */
static int w_index(writer *w, const tsdb_block_meta *m, base_buf *out) {
    if (w->ns >= UINT32_MAX) return BASE_E_LIMIT; /* series ids are u32 in memory */
    size_t npairs = 0;
    for (size_t i = 0; i < w->ns; i++) npairs += labels_len(w->s[i].ls);
    base_str *strs = malloc((2 * npairs + 1) * sizeof *strs);
    ptrip *tr = malloc((npairs + 1) * sizeof *tr);
    base_buf sec = BASE_BUF_INIT;
    int e = BASE_E_NOMEM;
    if (!strs || !tr) goto out;
    size_t k = 0;
    for (size_t i = 0; i < w->ns; i++) {
        labels_iter it;
        base_str n, v;
        labels_iter_init(&it, w->s[i].ls);
        while (labels_iter_next(&it, &n, &v)) {
            strs[k++] = n;
            strs[k++] = v;
        }
    }
    if (k > 1) qsort(strs, k, sizeof *strs, cmp_str);
    size_t nsym = 0;
    for (size_t i = 0; i < k; i++)
        if (nsym == 0 || cmp_str(&strs[i], &strs[nsym - 1]) != 0) strs[nsym++] = strs[i];
    if (nsym >= UINT32_MAX) {
        e = BASE_E_LIMIT;
        goto out;
    }

    base_buf_append(out, TSDB_INDEX_MAGIC, 4);
    uint8_t v[4] = {TSDB_INDEX_VERSION, 0, 0, 0};
    base_buf_append(out, v, 4);
    uint64_t off[4];

    /* META */
    base_buf_append(&sec, m->ulid.b, 16);
    tsdb__block_put_u64(&sec, (uint64_t)m->mint);
    tsdb__block_put_u64(&sec, (uint64_t)m->maxt);
    tsdb__block_put_u64(&sec, m->num_series);
    tsdb__block_put_u64(&sec, m->num_samples);
    tsdb__block_put_u64(&sec, m->num_chunks);
    tsdb__block_put_u32(&sec, m->level);
    tsdb__block_put_u32(&sec, m->nsources);
    tsdb__block_put_u64(&sec, m->chunk_bytes);
    for (uint32_t i = 0; i < m->nsources; i++) base_buf_append(&sec, m->sources[i].b, 16);
    put_section(out, &sec, &off[0]);

    /* SYMBOLS */
    base_buf_reset(&sec);
    tsdb__block_put_uv(&sec, nsym);
    for (size_t i = 0; i < nsym; i++) {
        tsdb__block_put_uv(&sec, strs[i].n);
        base_buf_append(&sec, strs[i].p, strs[i].n);
    }
    put_section(out, &sec, &off[1]);

    /* SERIES (and the postings triples) */
    base_buf_reset(&sec);
    tsdb__block_put_uv(&sec, w->ns);
    size_t t = 0;
    for (size_t i = 0; i < w->ns; i++) {
        const wseries *s = &w->s[i];
        tsdb__block_put_uv(&sec, labels_len(s->ls));
        labels_iter it;
        base_str n, val;
        labels_iter_init(&it, s->ls);
        while (labels_iter_next(&it, &n, &val)) {
            uint32_t a = sym_of(strs, nsym, n), b = sym_of(strs, nsym, val);
            tsdb__block_put_uv(&sec, a);
            tsdb__block_put_uv(&sec, b);
            tr[t++] = (ptrip){a, b, (uint32_t)i};
        }
        tsdb__block_put_uv(&sec, s->nc);
        int64_t prev = m->mint;
        uint64_t pref = 0;
        for (size_t j = 0; j < s->nc; j++) {
            const wchunk *c = &w->c[s->c0 + j];
            tsdb__block_put_sv(&sec, c->mint - prev);
            tsdb__block_put_uv(&sec, (uint64_t)(c->maxt - c->mint));
            tsdb__block_put_uv(&sec, c->ref - pref);
            prev = c->maxt;
            pref = c->ref;
        }
    }
    put_section(out, &sec, &off[2]);

    /* POSTINGS */
    if (t > 1) qsort(tr, t, sizeof *tr, cmp_trip);
    size_t nl = 0;
    for (size_t i = 0; i < t; i++)
        if (i == 0 || tr[i].name != tr[i - 1].name || tr[i].value != tr[i - 1].value) nl++;
    base_buf_reset(&sec);
    tsdb__block_put_uv(&sec, nl);
    for (size_t i = 0; i < t;) {
        size_t j = i;
        while (j < t && tr[j].name == tr[i].name && tr[j].value == tr[i].value) j++;
        tsdb__block_put_uv(&sec, tr[i].name);
        tsdb__block_put_uv(&sec, tr[i].value);
        tsdb__block_put_uv(&sec, j - i);
        uint32_t prev = 0;
        for (size_t x = i; x < j; x++) {
            tsdb__block_put_uv(&sec, tr[x].sid - prev);
            prev = tr[x].sid;
        }
        i = j;
    }
    put_section(out, &sec, &off[3]);

    size_t toc = out->len;
    for (int i = 0; i < 4; i++) tsdb__block_put_u64(out, off[i]);
    tsdb__block_put_u32(out, 0);
    if (!base_buf_err(out)) tsdb__block_put_u32(out, tsdb_crc32c(0, out->data + toc, 36));
    e = base_buf_err(out) || base_buf_err(&sec) ? BASE_E_NOMEM : 0;
    if (!e && (sec.len > UINT32_MAX || out->len > ((uint64_t)1 << 40))) e = BASE_E_LIMIT;
out:
    free(strs);
    free(tr);
    base_buf_free(&sec);
    return e;
}

static int write_file(const char *path, const void *p, size_t n, char *err, size_t errlen) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return base_errf(err, errlen, BASE_E_IO, "create %s: %s", path, strerror(errno));
    size_t off = 0;
    while (off < n) {
        ssize_t k = write(fd, (const char *)p + off, n - off);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) {
            close(fd);
            return base_errf(err, errlen, BASE_E_IO, "write %s: %s", path, strerror(errno));
        }
        off += (size_t)k;
    }
    int r = fsync(fd);
    close(fd);
    if (r) return base_errf(err, errlen, BASE_E_IO, "fsync %s: %s", path, strerror(errno));
    return 0;
}

static void meta_json(const tsdb_block_meta *m, base_buf *b) {
    char u[27];
    tsdb_ulid_format(&m->ulid, u);
    base_buf_printf(b,
                    "{\n\t\"ulid\": \"%s\",\n\t\"minTime\": %lld,\n\t\"maxTime\": %lld,\n\t\"stats\": {\n"
                    "\t\t\"numSamples\": %llu,\n\t\t\"numSeries\": %llu,\n\t\t\"numChunks\": %llu\n\t},\n"
                    "\t\"compaction\": {\n\t\t\"level\": %u,\n\t\t\"sources\": [",
                    u, (long long)m->mint, (long long)m->maxt, (unsigned long long)m->num_samples,
                    (unsigned long long)m->num_series, (unsigned long long)m->num_chunks, m->level);
    for (uint32_t i = 0; i < m->nsources; i++) {
        tsdb_ulid_format(&m->sources[i], u);
        base_buf_printf(b, "%s\n\t\t\t\"%s\"", i ? "," : "", u);
    }
    base_buf_puts(b, m->nsources ? "\n\t\t]\n\t},\n\t\"version\": 1\n}\n" : "]\n\t},\n\t\"version\": 1\n}\n");
}

int tsdb_block_write(const char *parent, const tsdb_series_src *src, int64_t mint, int64_t maxt,
                     const tsdb_block_wopts *o, tsdb_block_meta *ret_meta, char *err, size_t errlen) {
    static const tsdb_block_wopts dflt = {0};
    if (!o) o = &dflt;
    if (strlen(parent) > 3900) return base_errf(err, errlen, BASE_E_INVAL, "path too long");
    if (mint >= maxt)
        return base_errf(err, errlen, BASE_E_INVAL, "block range [%lld, %lld) is empty", (long long)mint,
                         (long long)maxt);
    if (o->nsources > TSDB_BLOCK_MAX_SOURCES)
        return base_errf(err, errlen, BASE_E_LIMIT, "%u sources (most %u)", o->nsources,
                         TSDB_BLOCK_MAX_SOURCES);
    tsdb_block_meta *m = calloc(1, sizeof *m);
    if (!m) return BASE_E_NOMEM;
    int64_t now = o->ulid_ms;
    if (!now) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        now = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    }
    int e = tsdb_ulid_new(now, &m->ulid);
    if (e) {
        free(m);
        return base_errf(err, errlen, e, "getrandom failed");
    }
    char id[27];
    tsdb_ulid_format(&m->ulid, id);
    writer w = {.parent = parent, .err = err, .errlen = errlen, .fd = -1};
    w.segmax = o->segment_bytes ? o->segment_bytes : TSDB_CHUNKS_SEGMENT_DEFAULT;
    if (w.segmax > TSDB_CHUNKS_SEGMENT_MAX) w.segmax = TSDB_CHUNKS_SEGMENT_MAX;
    if (w.segmax < 64) w.segmax = 64;
    snprintf(w.tmpdir, sizeof w.tmpdir, "%s/%s.tmp", parent, id);
    snprintf(w.cdir, sizeof w.cdir, "%s/chunks", w.tmpdir);
    tsdb_chunk_app a;
    tsdb_chunk_app_init(&a, o->chunk_samples, o->chunk_flags);
    base_buf idx = BASE_BUF_INIT;
    int created = 0;
    if (mkdir(w.tmpdir, 0755) || mkdir(w.cdir, 0755)) {
        e = base_errf(err, errlen, BASE_E_IO, "mkdir %s: %s", w.tmpdir, strerror(errno));
        goto fail;
    }
    created = 1;
    const labels_set *ls;
    int r;
    uint32_t cmax = o->chunk_samples ? o->chunk_samples : TSDB_CHUNK_DEFAULT_SAMPLES;
    if (cmax > TSDB_CHUNK_MAX_SAMPLES) cmax = TSDB_CHUNK_MAX_SAMPLES;
    while ((r = src->next(src->ctx, &ls)) == 1) {
        if (w.ns && labels_cmp(w.s[w.ns - 1].ls, ls) >= 0) {
            e = base_errf(err, errlen, BASE_E_INVAL, "series out of order or duplicate");
            goto fail;
        }
        size_t c0 = w.nc;
        int64_t t, last = 0, cmint = 0;
        double v;
        int any = 0;
        while ((r = src->sample(src->ctx, &t, &v)) == 1) {
            if (t < mint || t >= maxt) continue;
            if (any && t <= last) {
                e = base_errf(err, errlen, BASE_E_INVAL, "samples out of order");
                goto fail;
            }
            if (tsdb_chunk_app_count(&a) >= cmax && (e = w_cut(&w, &a, cmint))) goto fail;
            if (tsdb_chunk_app_count(&a) == 0) cmint = t;
            if ((e = tsdb_chunk_app_append(&a, t, v))) {
                base_errf(err, errlen, e, "chunk append: %s", base_strerror(e));
                goto fail;
            }
            any = 1;
            last = t;
            w.nsamples++;
        }
        if (r < 0) {
            e = base_errf(err, errlen, r, "reading source samples: %s", base_strerror(r));
            goto fail;
        }
        if (!any) continue;
        if ((e = w_cut(&w, &a, cmint))) goto fail;
        if (w.ns == w.scap) {
            size_t nc = w.scap ? w.scap * 2 : 256;
            wseries *s = realloc(w.s, nc * sizeof *s);
            if (!s) {
                e = BASE_E_NOMEM;
                goto fail;
            }
            w.s = s;
            w.scap = nc;
        }
        w.s[w.ns++] = (wseries){labels_ref(ls), c0, w.nc - c0};
    }
    if (r < 0) {
        e = base_errf(err, errlen, r, "reading source series: %s", base_strerror(r));
        goto fail;
    }
    if ((e = w_close_seg(&w))) goto fail;
    m->mint = mint;
    m->maxt = maxt;
    m->num_series = w.ns;
    m->num_samples = w.nsamples;
    m->num_chunks = w.nc;
    m->chunk_bytes = w.seg_total;
    m->level = o->level ? o->level : 1;
    if (o->nsources) {
        m->nsources = o->nsources;
        memcpy(m->sources, o->sources, o->nsources * sizeof *o->sources);
    } else {
        m->nsources = 1;
        m->sources[0] = m->ulid;
    }
    if ((e = w_index(&w, m, &idx))) {
        base_errf(err, errlen, e, "building the index: %s", base_strerror(e));
        goto fail;
    }
    m->index_bytes = idx.len;
    char p[4200], q[4200];
    snprintf(p, sizeof p, "%s/index", w.tmpdir);
    if ((e = write_file(p, idx.data, idx.len, err, errlen))) goto fail;
    base_buf_reset(&idx);
    meta_json(m, &idx);
    snprintf(p, sizeof p, "%s/meta.json", w.tmpdir);
    if (base_buf_err(&idx)) e = BASE_E_NOMEM;
    if (e || (e = write_file(p, idx.data, idx.len, err, errlen))) goto fail;
    if ((e = tsdb__block_fsync_dir(w.cdir)) || (e = tsdb__block_fsync_dir(w.tmpdir))) {
        base_errf(err, errlen, e, "fsync %s failed", w.tmpdir);
        goto fail;
    }
    snprintf(q, sizeof q, "%s/%s", parent, id);
    if (rename(w.tmpdir, q)) {
        e = base_errf(err, errlen, BASE_E_IO, "rename %s: %s", w.tmpdir, strerror(errno));
        goto fail;
    }
    created = 0;
    if ((e = tsdb__block_fsync_dir(parent))) {
        base_errf(err, errlen, e, "fsync %s failed", parent);
        goto fail;
    }
    if (ret_meta) *ret_meta = *m;
fail:
    if (w.fd >= 0) close(w.fd);
    if (created) tsdb__block_rm_rf(w.tmpdir);
    for (size_t i = 0; i < w.ns; i++) labels_unref(w.s[i].ls);
    free(w.s);
    free(w.c);
    base_buf_free(&w.sbuf);
    base_buf_free(&w.cb);
    base_buf_free(&idx);
    tsdb_chunk_app_free(&a);
    free(m);
    return e;
}

/* ---- the head as a source ------------------------------------------------- */

static int head_next(void *ctx, const labels_set **ret) {
    tsdb_series_set *ss = ctx;
    int r = tsdb_series_set_next(ss);
    if (r == 1) *ret = tsdb_series_set_labels(ss);
    return r;
}
static int head_sample(void *ctx, int64_t *t, double *v) {
    return tsdb_series_set_sample(ctx, t, v);
}

int tsdb_block_write_head(const char *parent, tsdb_head *h, int64_t mint, int64_t maxt,
                          const tsdb_block_wopts *o, tsdb_block_meta *ret_meta, char *err, size_t errlen) {
    if (mint >= maxt) return base_errf(err, errlen, BASE_E_INVAL, "block range is empty");
    tsdb_series_set *ss;
    int e = tsdb_head_select(h, NULL, 0, mint, maxt - 1, &ss);
    if (e) return base_errf(err, errlen, e, "head select: %s", base_strerror(e));
    tsdb_series_src src = {ss, head_next, head_sample};
    e = tsdb_block_write(parent, &src, mint, maxt, o, ret_meta, err, errlen);
    tsdb_series_set_free(ss);
    return e;
}
