/* append.c -- one scrape's body into the head: Prometheus 2.42's
 * scrapeLoop.append, scrapeCache and report, over the worker's appender.
 *
 * The hot path (a series seen before): parse one line, hash its raw bytes
 * (XXH3-128), compare with the raw entry the last scrape had next (else
 * probe the raw index), queue the sample on the pinned head series, mark
 * the series seen. No label is built, interned or hashed, and the head
 * does no lookup (scrape_int.h: the series cache). A new raw form builds
 * its labels once: scraped labels (values unescaped), target labels
 * (honor_labels: scraped ones win; otherwise conflicting scraped labels
 * are renamed exported_<name>, exported_exported_<name>, ... as 2.42's
 * resolveConflictingExposedLabels), metric_relabel_configs, the label
 * limits; then the set is looked up in the series table, so two raw forms
 * of one series share its staleness state.
 *
 * Counting as 2.42: total = every sample line (one whose series fails the
 * scrape too, a repeated label name included); added = every sample not
 * dropped by relabeling (even when the head rejects it); series_added =
 * raw lines new to the cache whose sample was queued (two lines that
 * write one series differently count twice, as in 2.42). A series new to
 * the cache is validated as 2.42's lset.IsValid() (`invalid metric name or
 * label names: {...}` fails the scrape); cached ones are valid. sample_limit counts added
 * samples; past it the scrape goes on counting but queues nothing and
 * fails (`sample limit exceeded`).
 *
 * Staleness: a series queued without an explicit timestamp is "seen"
 * (mark = this iteration). After a successful append every series of the
 * previous scrape (inprev) not seen gets the stale NaN at the scrape time.
 * A failed scrape marks every series of the previous scrape stale, as
 * Prometheus's staleness design intends (2.42 spares the series the failed
 * body still listed and later marks sample_limit series it never stored, a
 * bug changed upstream in prometheus PR #16429), and the next one starts
 * from nothing.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "base/err.h"
#include "expo/parse.h"
#include "scrape/scrape_int.h"

const char *const sc__fail_names[SC_FAIL_N] = {
    "",      "http",         "timeout",     "connect",      "body_size",
    "parse", "sample_limit", "label_limit", "target_limit", "other"};

static const char *const report_names[SC_NREPORT] = {
    "up", "scrape_duration_seconds", "scrape_samples_scraped", "scrape_samples_post_metric_relabeling",
    "scrape_series_added"};

static double stale_nan(void) {
    uint64_t b = SC_STALE_NAN_BITS;
    double v;
    memcpy(&v, &b, sizeof v);
    return v;
}

static uint64_t dbits(double v) {
    uint64_t b;
    memcpy(&b, &v, sizeof b);
    return b;
}

static int push_u32(uint32_t **arr, size_t *n, size_t *cap, uint32_t v) {
    if (*n == *cap) {
        size_t nc = *cap ? *cap * 2 : 64;
        uint32_t *a = realloc(*arr, nc * sizeof *a);
        if (!a) return BASE_E_NOMEM;
        *arr = a;
        *cap = nc;
    }
    (*arr)[(*n)++] = v;
    return 0;
}

/* ---- tables ---------------------------------------------------------------- */

void sc__cache_init(sc_cache *c) {
    memset(c, 0, sizeof *c);
}

static void series_release(sc_series *s) {
    if (s->hs) tsdb_head_unpin(s->hs);
    s->hs = NULL;
    labels_unref(s->ls);
    s->ls = NULL;
}

void sc__cache_flush_raw(sc_cache *c) {
    for (size_t i = 0; i < c->nraw; i++)
        if (c->raw[i].s != SC_NONE) c->ser[c->raw[i].s].rawrefs--;
    free(c->raw);
    free(c->rawix);
    c->raw = NULL;
    c->rawix = NULL;
    c->nraw = c->capraw = c->nrawix = 0;
    c->pos = 0;
    c->nseen = 0;
}

void sc__cache_unpin(sc_cache *c) {
    for (size_t i = 0; i < c->nser; i++)
        if (c->ser[i].hs) {
            tsdb_head_unpin(c->ser[i].hs);
            c->ser[i].hs = NULL;
        }
    for (int i = 0; i < SC_NREPORT; i++)
        if (c->report[i].hs) {
            tsdb_head_unpin(c->report[i].hs);
            c->report[i].hs = NULL;
        }
}

void sc__cache_free(sc_cache *c) {
    sc__cache_flush_raw(c);
    for (size_t i = 0; i < c->nser; i++) series_release(&c->ser[i]);
    free(c->ser);
    free(c->serix);
    for (int i = 0; i < SC_NREPORT; i++) series_release(&c->report[i]);
    free(c->resolve);
    memset(c, 0, sizeof *c);
}

size_t sc__cache_bytes(const sc_cache *c) {
    return sizeof *c + c->capraw * sizeof(sc_raw) + c->nrawix * sizeof(uint32_t) +
           c->capser * sizeof(sc_series) + c->nserix * sizeof(uint32_t) + c->capresolve * sizeof(uint32_t);
}

/* Index sizes: a power of two >= 2 * n (load <= 1/2), at least 16. */
static size_t ix_size(size_t n) {
    size_t k = 16;
    while (k < 2 * n) k *= 2;
    return k;
}

static int rawix_build(sc_cache *c, size_t nslots) {
    uint32_t *t = malloc(nslots * sizeof *t);
    if (!t) return BASE_E_NOMEM;
    memset(t, 0xff, nslots * sizeof *t);
    for (size_t i = 0; i < c->nraw; i++) {
        size_t k = c->raw[i].h1 & (nslots - 1);
        while (t[k] != SC_NONE) k = (k + 1) & (nslots - 1);
        t[k] = (uint32_t)i;
    }
    free(c->rawix);
    c->rawix = t;
    c->nrawix = nslots;
    return 0;
}

static inline uint32_t raw_find(const sc_cache *c, uint64_t h1, uint64_t h2) {
    if (!c->nrawix) return SC_NONE;
    size_t m = c->nrawix - 1;
    for (size_t k = h1 & m;; k = (k + 1) & m) {
        uint32_t i = c->rawix[k];
        if (i == SC_NONE) return SC_NONE;
        if (c->raw[i].h1 == h1 && c->raw[i].h2 == h2) return i;
    }
}

/* Appends a raw entry seen in this iteration; its index or SC_NONE. */
static uint32_t raw_insert(sc_cache *c, uint64_t h1, uint64_t h2, uint32_t s) {
    if (c->nraw >= UINT32_MAX - 1) return SC_NONE;
    if (c->nraw == c->capraw) {
        size_t nc = c->capraw ? c->capraw * 2 : 64;
        sc_raw *a = realloc(c->raw, nc * sizeof *a);
        if (!a) return SC_NONE;
        c->raw = a;
        c->capraw = nc;
    }
    if (2 * (c->nraw + 1) > c->nrawix && rawix_build(c, ix_size(c->nraw + 1))) return SC_NONE;
    uint32_t i = (uint32_t)c->nraw++;
    c->raw[i] = (sc_raw){h1, h2, s, c->iter};
    size_t m = c->nrawix - 1;
    size_t k = h1 & m;
    while (c->rawix[k] != SC_NONE) k = (k + 1) & m;
    c->rawix[k] = i;
    if (s != SC_NONE) c->ser[s].rawrefs++;
    return i;
}

static int serix_build(sc_cache *c, size_t nslots) {
    uint32_t *t = malloc(nslots * sizeof *t);
    if (!t) return BASE_E_NOMEM;
    memset(t, 0xff, nslots * sizeof *t);
    for (size_t i = 0; i < c->nser; i++) {
        size_t k = labels_hash(c->ser[i].ls) & (nslots - 1);
        while (t[k] != SC_NONE) k = (k + 1) & (nslots - 1);
        t[k] = (uint32_t)i;
    }
    free(c->serix);
    c->serix = t;
    c->nserix = nslots;
    return 0;
}

/* The index of the series of ls (takes over the caller's reference to
 * ls), or SC_NONE (out of memory). */
static uint32_t ser_get(sc_cache *c, labels_set *ls) {
    uint64_t h = labels_hash(ls);
    if (c->nserix) {
        size_t m = c->nserix - 1;
        for (size_t k = h & m;; k = (k + 1) & m) {
            uint32_t i = c->serix[k];
            if (i == SC_NONE) break;
            if (labels_equal(c->ser[i].ls, ls)) {
                labels_unref(ls);
                return i;
            }
        }
    }
    if (c->nser >= UINT32_MAX - 1) goto fail;
    if (c->nser == c->capser) {
        size_t nc = c->capser ? c->capser * 2 : 64;
        sc_series *a = realloc(c->ser, nc * sizeof *a);
        if (!a) goto fail;
        c->ser = a;
        c->capser = nc;
    }
    if (2 * (c->nser + 1) > c->nserix && serix_build(c, ix_size(c->nser + 1))) goto fail;
    uint32_t i = (uint32_t)c->nser++;
    memset(&c->ser[i], 0, sizeof c->ser[i]);
    c->ser[i].ls = ls;
    size_t m = c->nserix - 1;
    size_t k = h & m;
    while (c->serix[k] != SC_NONE) k = (k + 1) & m;
    c->serix[k] = i;
    return i;
fail:
    labels_unref(ls);
    return SC_NONE;
}

void sc__cache_collect(sc_worker *w, sc_loop *l) {
    sc_cache *c = &l->cache;
    /* the raw table: keep the entries seen, in this scrape's order */
    if (c->reorder || c->nseen != c->nraw || w->nseq != c->nraw) {
        sc_raw *t = malloc((w->nseq ? w->nseq : 1) * sizeof *t);
        if (t) {
            for (size_t i = 0; i < c->nraw; i++)
                if (c->raw[i].iter != c->iter && c->raw[i].s != SC_NONE) c->ser[c->raw[i].s].rawrefs--;
            for (size_t k = 0; k < w->nseq; k++) t[k] = c->raw[w->seq[k]];
            free(c->raw);
            c->raw = t;
            c->nraw = c->capraw = w->nseq;
            if (rawix_build(c, ix_size(c->nraw))) {
                /* no index: forget the raw table (rebuilt by the next scrape) */
                sc__cache_flush_raw(c);
            }
        }
    }
    w->nseq = 0;
    c->reorder = 0;
    c->pos = 0;
    /* series nothing references any more: compact the array */
    size_t nfree = 0;
    for (size_t i = 0; i < c->nser; i++) {
        const sc_series *s = &c->ser[i];
        if (!s->rawrefs && !s->inprev && !s->resolving) nfree++;
    }
    if (nfree) {
        uint32_t *remap = malloc(c->nser * sizeof *remap);
        if (remap) {
            size_t n = 0;
            for (size_t i = 0; i < c->nser; i++) {
                sc_series *s = &c->ser[i];
                if (!s->rawrefs && !s->inprev && !s->resolving) {
                    series_release(s);
                    remap[i] = SC_NONE;
                } else {
                    remap[i] = (uint32_t)n;
                    if (n != i) c->ser[n] = *s;
                    n++;
                }
            }
            c->nser = n;
            for (size_t i = 0; i < c->nraw; i++)
                if (c->raw[i].s != SC_NONE) c->raw[i].s = remap[c->raw[i].s];
            free(remap);
            if (c->capser > 64 && c->nser < c->capser / 4) {
                size_t nc = c->capser / 2;
                sc_series *a = realloc(c->ser, nc * sizeof *a);
                if (a) {
                    c->ser = a;
                    c->capser = nc;
                }
            }
            if (serix_build(c, ix_size(c->nser))) {
                free(c->serix); /* unreachable in practice: lookups then miss */
                c->serix = NULL;
                c->nserix = 0;
            }
        }
    }
    /* metadata of families gone for a while */
    pthread_mutex_lock(&l->mu);
    for (size_t i = 0; i < l->nmeta_b; i++) {
        sc_meta **pp = &l->meta[i];
        while (*pp) {
            sc_meta *m = *pp;
            if (c->iter - m->iter > SC_META_KEEP_ITERS) {
                *pp = m->next;
                l->nmeta--;
                sc__meta_free(m);
            } else
                pp = &m->next;
        }
    }
    pthread_mutex_unlock(&l->mu);
}

/* ---- metadata ---------------------------------------------------------------- */

/* Interns v as one of m's strings (the caller holds l->mu when m is
 * published). 0 or a negative BASE_E_*. */
static int meta_str(base_str v, labels_sym *sym, const char **str, uint32_t *len) {
    labels_sym ns = LABELS_SYM_NONE;
    const char *p = "";
    if (v.n) {
        int e = labels_itab_intern(labels_global(), v, &ns);
        if (e) return e;
        p = labels_itab_str(labels_global(), ns).p;
    }
    if (*sym != LABELS_SYM_NONE) labels_itab_unref(labels_global(), *sym);
    *sym = ns;
    *str = p;
    *len = (uint32_t)v.n;
    return 0;
}

void sc__meta_free(sc_meta *m) {
    labels_itab *t = labels_global();
    if (m->name_sym != LABELS_SYM_NONE) labels_itab_unref(t, m->name_sym);
    if (m->help_sym != LABELS_SYM_NONE) labels_itab_unref(t, m->help_sym);
    if (m->unit_sym != LABELS_SYM_NONE) labels_itab_unref(t, m->unit_sym);
    free(m);
}

static sc_meta *meta_get(sc_loop *l, base_str name) {
    uint64_t h = XXH3_64bits(name.p, name.n);
    if (l->nmeta_b)
        for (sc_meta *m = l->meta[h & (l->nmeta_b - 1)]; m; m = m->next)
            if (m->h == h && m->name_len == name.n && memcmp(m->name, name.p, name.n) == 0) return m;
    sc_meta *m = calloc(1, sizeof *m);
    if (!m) return NULL;
    m->h = h;
    m->name = m->help = m->unit = "";
    m->name_sym = m->help_sym = m->unit_sym = LABELS_SYM_NONE;
    if (name.n > UINT32_MAX || meta_str(name, &m->name_sym, &m->name, &m->name_len)) {
        free(m);
        return NULL;
    }
    pthread_mutex_lock(&l->mu);
    if (l->nmeta >= l->nmeta_b) {
        size_t nb = l->nmeta_b ? l->nmeta_b * 2 : 64;
        sc_meta **t = calloc(nb, sizeof *t);
        if (!t) {
            pthread_mutex_unlock(&l->mu);
            sc__meta_free(m);
            return NULL;
        }
        for (size_t i = 0; i < l->nmeta_b; i++) {
            sc_meta *x = l->meta[i];
            while (x) {
                sc_meta *nx = x->next;
                x->next = t[x->h & (nb - 1)];
                t[x->h & (nb - 1)] = x;
                x = nx;
            }
        }
        free(l->meta);
        l->meta = t;
        l->nmeta_b = nb;
    }
    m->next = l->meta[h & (l->nmeta_b - 1)];
    l->meta[h & (l->nmeta_b - 1)] = m;
    l->nmeta++;
    pthread_mutex_unlock(&l->mu);
    return m;
}

static void meta_entry(sc_worker *w, sc_loop *l, const expo_parser *p, int kind) {
    sc_meta *m = meta_get(l, expo_parser_name(p));
    if (!m) return;
    m->iter = l->cache.iter;
    if (kind == EXPO_ENTRY_TYPE) {
        expo_type t = expo_parser_type(p);
        if (m->type != t) {
            pthread_mutex_lock(&l->mu);
            m->type = t;
            pthread_mutex_unlock(&l->mu);
        }
    } else if (kind == EXPO_ENTRY_HELP) {
        base_str raw = expo_parser_text(p), help = raw;
        if (expo_label_has_escapes(raw)) {
            base_buf_reset(&w->help);
            expo_parser_help(p, &w->help);
            if (base_buf_err(&w->help)) return;
            help = (base_str){w->help.data ? w->help.data : "", w->help.len};
        }
        if (m->help_len == help.n && memcmp(m->help, help.p, help.n) == 0) return;
        if (help.n > UINT32_MAX) return;
        pthread_mutex_lock(&l->mu);
        meta_str(help, &m->help_sym, &m->help, &m->help_len); /* on failure: the old text stays */
        pthread_mutex_unlock(&l->mu);
    } else if (kind == EXPO_ENTRY_UNIT) {
        base_str u = expo_parser_text(p);
        if (m->unit_len == u.n && memcmp(m->unit, u.p, u.n) == 0) return;
        if (u.n > UINT32_MAX) return;
        pthread_mutex_lock(&l->mu);
        meta_str(u, &m->unit_sym, &m->unit, &m->unit_len);
        pthread_mutex_unlock(&l->mu);
    }
}

/* ---- building a new series ------------------------------------------------------ */

typedef struct conflict {
    base_str name, value;
    char *newname;
} conflict;

static int conflict_cmp(const void *a, const void *b) {
    const conflict *x = a, *y = b;
    if (x->name.n != y->name.n) return x->name.n < y->name.n ? -1 : 1;
    return x < y ? -1 : x > y; /* stable */
}

static int exposed_has(const expo_parser *p, base_str n) {
    if (base_str_eqc(n, LABELS_METRIC_NAME)) return 1;
    const expo_label *ls = expo_parser_labels(p);
    for (size_t i = 0; i < expo_parser_nlabels(p); i++)
        if (base_str_eq(ls[i].name, n)) return 1;
    return 0;
}

static void fail(sc_result *r, int code, int reason, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void fail(sc_result *r, int code, int reason, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->msg, sizeof r->msg, fmt, ap);
    va_end(ap);
    r->err = code;
    r->reason = reason;
}

/* The length of v's first 50 runes (Go's %.50s). */
static int trunc50(base_str v) {
    size_t k = 0, runes = 0;
    while (k < v.n && runes < 50) {
        unsigned char c = (unsigned char)v.p[k];
        k += c < 0x80 ? 1 : c < 0xe0 ? 2 : c < 0xf0 ? 3 : 4;
        runes++;
    }
    return (int)(k > v.n ? v.n : k);
}

static void quote50(char *out, size_t n, base_str v) {
    /* Go's %.50q: the first 50 runes, quoted */
    base_buf b;
    base_buf_init(&b, 0);
    labels_quote(&b, (base_str){v.p, (size_t)trunc50(v)});
    snprintf(out, n, "%s", b.data ? b.data : "\"\"");
    base_buf_free(&b);
}

static int check_limits(const sc_pcfg *pc, const labels_set *ls, sc_result *r) {
    base_str met = labels_metric_name(ls);
    if (pc->label_limit && labels_len(ls) > pc->label_limit) {
        fail(r, BASE_E_LIMIT, SC_FAIL_LABEL_LIMIT,
             "label_limit exceeded (metric: %.*s, number of labels: %zu, limit: %llu)", trunc50(met), met.p,
             labels_len(ls), (unsigned long long)pc->label_limit);
        return BASE_E_LIMIT;
    }
    if (!pc->name_len_limit && !pc->value_len_limit) return 0;
    labels_iter it;
    labels_iter_init(&it, ls);
    base_str n, v;
    while (labels_iter_next(&it, &n, &v)) {
        if (pc->name_len_limit && n.n > pc->name_len_limit) {
            fail(
                r, BASE_E_LIMIT, SC_FAIL_LABEL_LIMIT,
                "label_name_length_limit exceeded (metric: %.*s, label name: %.*s, length: %zu, limit: %llu)",
                trunc50(met), met.p, trunc50(n), n.p, n.n, (unsigned long long)pc->name_len_limit);
            return BASE_E_LIMIT;
        }
        if (pc->value_len_limit && v.n > pc->value_len_limit) {
            char q[256];
            quote50(q, sizeof q, v);
            fail(r, BASE_E_LIMIT, SC_FAIL_LABEL_LIMIT,
                 "label_value_length_limit exceeded (metric: %.*s, label name: %.*s, value: %s, length: %zu, "
                 "limit: %llu)",
                 trunc50(met), met.p, trunc50(n), n.p, q, v.n, (unsigned long long)pc->value_len_limit);
            return BASE_E_LIMIT;
        }
    }
    return 0;
}

/* 1 and *ret for a kept series, 0 when metric relabeling dropped it, <0
 * with r filled on failure. */
static int build_series(sc_worker *w, sc_loop *l, const expo_parser *p, uint32_t *ret, sc_result *r) {
    const sc_pcfg *pc = l->wcfg;
    labels_builder *b = &w->b;
    base_buf *sb = &w->scratch;
    size_t nl = expo_parser_nlabels(p);
    const expo_label *pl = expo_parser_labels(p);
    labels_builder_reset(b);
    base_buf_reset(sb);
    if (nl > w->capvoff) {
        size_t *v = realloc(w->voff, nl * 2 * sizeof *v);
        if (!v) goto nomem;
        w->voff = v;
        w->capvoff = nl * 2;
    }
    for (size_t i = 0; i < nl; i++) {
        if (expo_label_has_escapes(pl[i].value)) {
            w->voff[i] = sb->len;
            expo_unescape_label(pl[i].value, sb);
        } else
            w->voff[i] = SIZE_MAX;
    }
    if (base_buf_err(sb)) goto nomem;
    int e = labels_builder_add(b, base_str_c(LABELS_METRIC_NAME), expo_parser_name(p));
    /* views into sb: it no longer grows */
    for (size_t i = 0; i < nl && !e; i++) {
        base_str v = pl[i].value;
        if (w->voff[i] != SIZE_MAX) {
            size_t end = sb->len;
            for (size_t j = i + 1; j < nl; j++)
                if (w->voff[j] != SIZE_MAX) {
                    end = w->voff[j];
                    break;
                }
            v = (base_str){sb->data + w->voff[i], end - w->voff[i]};
        }
        e = labels_builder_add(b, pl[i].name, v);
    }
    conflict *cf = NULL;
    size_t ncf = 0;
    labels_iter it;
    base_str tn, tv;
    if (!e && pc->honor_labels) {
        labels_iter_init(&it, l->series_tls);
        while (!e && labels_iter_next(&it, &tn, &tv))
            if (!exposed_has(p, tn)) e = labels_builder_set(b, tn, tv);
    } else if (!e) {
        size_t nt = labels_len(l->series_tls);
        if (nt) {
            cf = calloc(nt, sizeof *cf);
            if (!cf) e = BASE_E_NOMEM;
        }
        labels_iter_init(&it, l->series_tls);
        while (!e && labels_iter_next(&it, &tn, &tv)) {
            base_str ex = labels_builder_get(b, tn);
            if (ex.n) cf[ncf++] = (conflict){tn, ex, NULL};
            e = labels_builder_set(b, tn, tv);
        }
        if (!e && ncf) {
            qsort(cf, ncf, sizeof *cf, conflict_cmp);
            for (size_t i = 0; i < ncf && !e; i++) {
                size_t len = cf[i].name.n;
                char *nm = NULL;
                for (size_t k = 1;; k++) {
                    free(nm);
                    nm = malloc(len + 9 * k + 1);
                    if (!nm) {
                        e = BASE_E_NOMEM;
                        break;
                    }
                    for (size_t j = 0; j < k; j++) memcpy(nm + 9 * j, "exported_", 9);
                    memcpy(nm + 9 * k, cf[i].name.p, len);
                    nm[9 * k + len] = '\0';
                    base_str ns = {nm, 9 * k + len};
                    int taken = exposed_has(p, ns) || labels_has(l->series_tls, ns);
                    for (size_t j = 0; j < i && !taken; j++)
                        if (cf[j].newname && strcmp(cf[j].newname, nm) == 0) taken = 1;
                    if (!taken) break;
                }
                cf[i].newname = nm;
            }
            for (size_t i = 0; i < ncf && !e; i++)
                e = labels_builder_set(b, base_str_c(cf[i].newname), cf[i].value);
        }
    }
    int keep = 1;
    if (!e && pc->nmrelabel) {
        int rc = relabel_process(pc->mrelabel, pc->nmrelabel, b);
        if (rc < 0)
            e = rc;
        else
            keep = rc;
    }
    labels_set *ls = NULL;
    char msg[256] = "";
    if (!e && keep) e = labels_builder_finish(b, 0, &ls, msg, sizeof msg);
    /* 2.42's lset.IsValid(): names, the metric name, UTF-8 values (the
     * builder still has views of the conflict names: before freeing them) */
    int ve = 0;
    if (!e && keep && labels_has(ls, base_str_c(LABELS_METRIC_NAME))) {
        labels_set *vls = NULL;
        ve = labels_builder_finish(b, LABELS_VALIDATE, &vls, NULL, 0);
        labels_unref(vls);
    }
    for (size_t i = 0; i < ncf; i++) free(cf[i].newname);
    free(cf);
    if (e == BASE_E_NOMEM) goto nomem;
    if (e) {
        fail(r, e, SC_FAIL_PARSE, "%s", msg[0] ? msg : base_strerror(e));
        return e;
    }
    if (!keep) return 0;
    if (!labels_has(ls, base_str_c(LABELS_METRIC_NAME))) {
        labels_unref(ls);
        fail(r, BASE_E_INVAL, SC_FAIL_OTHER, "missing metric name (__name__ label)");
        return BASE_E_INVAL;
    }
    if (ve == BASE_E_NOMEM) {
        labels_unref(ls);
        goto nomem;
    }
    if (ve) {
        base_buf_reset(sb);
        labels_format(ls, sb);
        labels_unref(ls);
        fail(r, BASE_E_INVAL, SC_FAIL_OTHER, "invalid metric name or label names: %.*s",
             base_buf_err(sb) ? 0 : (int)sb->len, sb->data ? sb->data : "");
        return BASE_E_INVAL;
    }
    if ((e = check_limits(pc, ls, r))) {
        labels_unref(ls);
        return e;
    }
    uint32_t s = ser_get(&l->cache, ls);
    if (s == SC_NONE) goto nomem;
    *ret = s;
    return 1;
nomem:
    fail(r, BASE_E_NOMEM, SC_FAIL_OTHER, "out of memory");
    return BASE_E_NOMEM;
}

/* ---- queueing ------------------------------------------------------------------ */

/* Queues a sample of series s (index si into the series array, SC_NONE
 * for a report series, which are pinned after every commit). */
static int queue(sc_worker *w, sc_cache *c, sc_series *s, uint32_t si, int64_t t, double v) {
    if (s->hs) return tsdb_head_app_add_pinned(w->app, s->hs, t, v);
    int e = tsdb_head_app_add(w->app, s->ls, t, v);
    if (!e && si != SC_NONE && !s->resolving) {
        if ((e = push_u32(&c->resolve, &c->nresolve, &c->capresolve, si))) return e;
        s->resolving = 1;
    }
    return e;
}

static void clear_resolve(sc_cache *c) {
    for (size_t i = 0; i < c->nresolve; i++) c->ser[c->resolve[i]].resolving = 0;
    c->nresolve = 0;
}

static void resolve_pins(sc_worker *w, sc_cache *c) {
    tsdb_head *h = w->m->head;
    for (size_t i = 0; i < c->nresolve; i++) {
        sc_series *s = &c->ser[c->resolve[i]];
        if (!s->hs) s->hs = tsdb_head_pin_labels(h, s->ls);
        s->resolving = 0;
    }
    c->nresolve = 0;
    for (int i = 0; i < SC_NREPORT; i++)
        if (c->report[i].ls && !c->report[i].hs) c->report[i].hs = tsdb_head_pin_labels(h, c->report[i].ls);
}

void sc__after_commit(sc_worker *w, sc_loop *l, tsdb_append_result *res, int ok) {
    sc_cache *c = &l->cache;
    resolve_pins(w, c);
    if (!res->unknown_ref) return;
    /* the head garbage-collected series we held: look them all up again,
     * and store this scrape's samples of the series it lost */
    sc__cache_unpin(c);
    if (!ok) return;
    size_t n = 0;
    for (size_t i = 0; i < c->nser; i++) {
        sc_series *s = &c->ser[i];
        if (s->samp_iter != c->iter) continue;
        double v;
        memcpy(&v, &s->samp_v, sizeof v);
        if (queue(w, c, s, (uint32_t)i, s->samp_t, v)) break;
        n++;
    }
    /* (stale markers queued for lost series are lost with them) */
    if (!n) return;
    tsdb_append_result r2;
    memset(&r2, 0, sizeof r2);
    if (tsdb_head_app_commit(w->app, &r2) == 0) {
        res->appended += r2.appended;
        res->series_created += r2.series_created;
    }
    resolve_pins(w, c);
}

void sc__append_all_stale(sc_worker *w, sc_loop *l, int64_t ts) {
    sc_cache *c = &l->cache;
    double snan = stale_nan();
    for (size_t i = 0; i < c->nser; i++) {
        sc_series *s = &c->ser[i];
        if (!s->inprev) continue;
        s->inprev = 0;
        queue(w, c, s, (uint32_t)i, ts, snan);
    }
}

void sc__append(sc_worker *w, sc_loop *l, const char *body, size_t len, expo_format fmt, int64_t ts,
                sc_result *r) {
    const sc_pcfg *pc = l->wcfg;
    sc_cache *c = &l->cache;
    memset(r, 0, sizeof *r);
    if (++c->iter == 0) c->iter = 1;
    uint32_t iter = c->iter;
    /* pins may be of series the head garbage-collected during a long
     * outage: look them up again (the appender is empty here) */
    if (c->last_ok_ms && ts - c->last_ok_ms > SC_REF_TRUST_MS) sc__cache_unpin(c);
    c->pos = 0;
    c->nseen = 0;
    c->reorder = 0;
    w->nseq = 0;
    expo_parser p;
    expo_parser_init(&p, body, len, fmt, NULL);
    int limit_hit = 0;
    uint64_t nsamples = 0;
    int honor_ts = pc->honor_timestamps;
    for (;;) {
        int e = expo_parser_next(&p);
        if (e == EXPO_ENTRY_SERIES) {
            r->total++;
            base_str raw = expo_parser_series(&p);
            XXH128_hash_t hh = XXH3_128bits(raw.p, raw.n);
            uint32_t ri;
            /* the scrape-order fast path: the entry after the last one */
            if (c->pos < c->nraw && c->raw[c->pos].h1 == hh.low64 && c->raw[c->pos].h2 == hh.high64)
                ri = (uint32_t)c->pos;
            else {
                ri = raw_find(c, hh.low64, hh.high64);
                c->reorder = 1;
            }
            uint32_t si;
            int isnew = 0;
            if (ri != SC_NONE) {
                sc_raw *re = &c->raw[ri];
                c->pos = (size_t)ri + 1;
                if (re->iter != iter) {
                    re->iter = iter;
                    c->nseen++;
                    if (push_u32(&w->seq, &w->nseq, &w->capseq, ri)) {
                        fail(r, BASE_E_NOMEM, SC_FAIL_OTHER, "out of memory");
                        break;
                    }
                }
                if (re->s == SC_NONE) continue;
                si = re->s;
            } else {
                /* The parser skips blanks before a text line's name (as the
                 * Pushgateway's does); 2.42's scrape parser keeps them in the
                 * name, which then fails the scrape as invalid. */
                if (fmt == EXPO_FMT_TEXT && raw.p > body && (raw.p[-1] == ' ' || raw.p[-1] == '\t')) {
                    const char *q = raw.p;
                    while (q > body && (q[-1] == ' ' || q[-1] == '\t')) q--;
                    base_str name = expo_parser_name(&p);
                    fail(r, BASE_E_INVAL, SC_FAIL_OTHER,
                         "invalid metric name or label names: {__name__=\"%.*s%.*s\"}", (int)(raw.p - q), q,
                         (int)name.n, name.p);
                    break;
                }
                si = SC_NONE;
                int rc = build_series(w, l, &p, &si, r);
                if (rc < 0) break;
                ri = raw_insert(c, hh.low64, hh.high64, si);
                if (ri == SC_NONE || push_u32(&w->seq, &w->nseq, &w->capseq, ri)) {
                    fail(r, BASE_E_NOMEM, SC_FAIL_OTHER, "out of memory");
                    break;
                }
                c->nseen++;
                c->pos = c->nraw;
                if (rc == 0) continue;
                isnew = 1;
            }
            sc_series *s = &c->ser[si];
            r->added++;
            int explicit_ts = honor_ts && expo_parser_has_ts(&p);
            int64_t t = explicit_ts ? expo_parser_ts_ms(&p) : ts;
            if (pc->sample_limit && ++nsamples > pc->sample_limit) limit_hit = 1;
            if (limit_hit) continue;
            if (t > ts + SC_MAX_AHEAD_MS) {
                r->out_of_bounds++;
                continue;
            }
            double v = expo_parser_value(&p);
            uint64_t vb = dbits(v);
            if (s->samp_iter == iter && s->samp_t == t) {
                /* the same series twice at one time in one body: the head
                 * would keep the first; 2.42 still counts a new raw line */
                if (s->samp_v != vb) r->duplicate++;
                if (isnew) r->series_added++;
                continue;
            }
            s->samp_iter = iter;
            s->samp_t = t;
            s->samp_v = vb;
            if (queue(w, c, s, si, t, v)) {
                fail(r, BASE_E_NOMEM, SC_FAIL_OTHER, "out of memory");
                break;
            }
            if (!explicit_ts) s->mark = iter;
            if (isnew) r->series_added++;
        } else if (e == EXPO_ENTRY_EOF) {
            break;
        } else if (e < 0) {
            const char *em = expo_parser_error(&p);
            /* 2.42 finds repeated label names in storage, after counting
             * the sample in scrape_samples_scraped */
            if (e == BASE_E_PARSE && strstr(em, " is not unique: invalid sample")) r->total++;
            fail(r, e,
                 e == BASE_E_LIMIT   ? SC_FAIL_LABEL_LIMIT
                 : e == BASE_E_NOMEM ? SC_FAIL_OTHER
                                     : SC_FAIL_PARSE,
                 "%s", em);
            break;
        } else if (e == EXPO_ENTRY_HELP || e == EXPO_ENTRY_TYPE || e == EXPO_ENTRY_UNIT) {
            meta_entry(w, l, &p, e);
        }
    }
    expo_parser_free(&p);
    if (!r->err && limit_hit) fail(r, BASE_E_LIMIT, SC_FAIL_SAMPLE_LIMIT, "sample limit exceeded");
    if (r->err) {
        tsdb_head_app_rollback(w->app);
        clear_resolve(c);
        w->nseq = 0;
        return;
    }
    /* staleness: the previous scrape's series not seen in this one */
    double snan = stale_nan();
    for (size_t i = 0; i < c->nser; i++) {
        sc_series *s = &c->ser[i];
        int seen = s->mark == iter;
        if (s->inprev && !seen) queue(w, c, s, (uint32_t)i, ts, snan);
        s->inprev = (uint8_t)seen;
    }
    c->last_ok_ms = ts;
}

void sc__report(sc_worker *w, sc_loop *l, int64_t ts, double duration_s, const sc_result *r, int up,
                int stale) {
    sc_cache *c = &l->cache;
    double vals[SC_NREPORT] = {up ? 1 : 0, duration_s, (double)r->total, (double)r->added,
                               (double)r->series_added};
    for (int i = 0; i < SC_NREPORT; i++) {
        sc_series *s = &c->report[i];
        if (!s->ls) {
            labels_builder *b = &w->b;
            labels_builder_reset(b);
            labels_builder_from(b, l->series_tls);
            labels_builder_set(b, base_str_c(LABELS_METRIC_NAME), base_str_c(report_names[i]));
            labels_set *ls = NULL;
            int e = labels_builder_finish(b, 0, &ls, NULL, 0);
            labels_builder_reset(b);
            if (e) continue;
            s->ls = ls;
        }
        queue(w, c, s, SC_NONE, ts, stale ? stale_nan() : vals[i]);
    }
}
