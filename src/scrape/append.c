/* append.c -- one scrape's body into the head: Prometheus 2.42's
 * scrapeLoop.append, scrapeCache and report, over the worker's appender.
 *
 * The hot path (a series seen before): parse one line, hash its raw bytes
 * (xxh3), find the raw entry, queue the sample by head ref, mark the
 * series seen. No label is built, interned or hashed. A new raw form builds
 * its labels once: scraped labels (values unescaped), target labels
 * (honor_labels: scraped ones win; otherwise conflicting scraped labels
 * are renamed exported_<name>, exported_exported_<name>, ... as 2.42's
 * resolveConflictingExposedLabels), metric_relabel_configs, the label
 * limits; then the set is looked up in the series table, so two raw forms
 * of one series share its staleness state.
 *
 * Counting as 2.42: total = every sample line; added = every sample not
 * dropped by relabeling (even when the head rejects it); series_added =
 * new cache entries whose sample was queued. sample_limit counts added
 * samples; past it the scrape goes on counting but queues nothing and
 * fails (`sample limit exceeded`).
 *
 * Staleness: a series queued without an explicit timestamp is "seen"
 * (mark = this iteration, listed in cur). After a successful append every
 * series of the previous scrape's list not seen gets the stale NaN at the
 * scrape time. A failed scrape marks every series of the previous list
 * stale (a deliberate simplification of 2.42, which spares the series the
 * failed body still listed) and starts the next one from an empty list.
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

static int push(sc_series ***arr, size_t *n, size_t *cap, sc_series *s) {
    if (*n == *cap) {
        size_t nc = *cap ? *cap * 2 : 64;
        sc_series **a = realloc(*arr, nc * sizeof *a);
        if (!a) return BASE_E_NOMEM;
        *arr = a;
        *cap = nc;
    }
    (*arr)[(*n)++] = s;
    return 0;
}

/* ---- tables ---------------------------------------------------------------- */

void sc__cache_init(sc_cache *c) {
    memset(c, 0, sizeof *c);
}

static void series_free(sc_series *s) {
    labels_unref(s->ls);
    free(s);
}

void sc__cache_flush_raw(sc_cache *c) {
    for (size_t i = 0; i < c->nraw_b; i++) {
        sc_raw *r = c->raw[i];
        while (r) {
            sc_raw *nx = r->next;
            if (r->s) r->s->rawrefs--;
            free(r);
            r = nx;
        }
        c->raw[i] = NULL;
    }
    c->nraw = 0;
    c->key_bytes = 0;
}

void sc__cache_free(sc_cache *c) {
    sc__cache_flush_raw(c);
    free(c->raw);
    for (size_t i = 0; i < c->nser_b; i++) {
        sc_series *s = c->ser[i];
        while (s) {
            sc_series *nx = s->next;
            series_free(s);
            s = nx;
        }
    }
    free(c->ser);
    for (int i = 0; i < SC_NREPORT; i++)
        if (c->report[i]) series_free(c->report[i]);
    free(c->prev);
    free(c->cur);
    free(c->resolve);
    memset(c, 0, sizeof *c);
}

size_t sc__cache_bytes(const sc_cache *c) {
    return c->nraw * (sizeof(sc_raw) + 16) + c->key_bytes + c->nser * (sizeof(sc_series) + 16) +
           (c->nraw_b + c->nser_b) * sizeof(void *) +
           (c->capprev + c->capcur + c->capresolve) * sizeof(void *);
}

static int raw_grow(sc_cache *c) {
    size_t nb = c->nraw_b ? c->nraw_b * 2 : 256;
    sc_raw **t = calloc(nb, sizeof *t);
    if (!t) return BASE_E_NOMEM;
    for (size_t i = 0; i < c->nraw_b; i++) {
        sc_raw *r = c->raw[i];
        while (r) {
            sc_raw *nx = r->next;
            size_t k = r->h & (nb - 1);
            r->next = t[k];
            t[k] = r;
            r = nx;
        }
    }
    free(c->raw);
    c->raw = t;
    c->nraw_b = nb;
    return 0;
}

static inline sc_raw *raw_find(const sc_cache *c, uint64_t h, base_str key) {
    if (!c->nraw_b) return NULL;
    for (sc_raw *r = c->raw[h & (c->nraw_b - 1)]; r; r = r->next)
        if (r->h == h && r->len == key.n && memcmp(r->key, key.p, key.n) == 0) return r;
    return NULL;
}

static sc_raw *raw_insert(sc_cache *c, uint64_t h, base_str key, sc_series *s) {
    if (key.n > UINT32_MAX) return NULL;
    if (c->nraw >= c->nraw_b && raw_grow(c)) return NULL;
    sc_raw *r = malloc(sizeof *r + key.n);
    if (!r) return NULL;
    r->h = h;
    r->s = s;
    r->len = (uint32_t)key.n;
    r->iter = c->iter;
    memcpy(r->key, key.p, key.n);
    size_t k = h & (c->nraw_b - 1);
    r->next = c->raw[k];
    c->raw[k] = r;
    c->nraw++;
    c->key_bytes += key.n;
    if (s) s->rawrefs++;
    return r;
}

static int ser_grow(sc_cache *c) {
    size_t nb = c->nser_b ? c->nser_b * 2 : 256;
    sc_series **t = calloc(nb, sizeof *t);
    if (!t) return BASE_E_NOMEM;
    for (size_t i = 0; i < c->nser_b; i++) {
        sc_series *s = c->ser[i];
        while (s) {
            sc_series *nx = s->next;
            size_t k = s->hash & (nb - 1);
            s->next = t[k];
            t[k] = s;
            s = nx;
        }
    }
    free(c->ser);
    c->ser = t;
    c->nser_b = nb;
    return 0;
}

/* The series of ls (takes over the caller's reference to ls). */
static sc_series *ser_get(sc_cache *c, labels_set *ls) {
    uint64_t h = labels_hash(ls);
    if (c->nser_b)
        for (sc_series *s = c->ser[h & (c->nser_b - 1)]; s; s = s->next)
            if (s->hash == h && labels_equal(s->ls, ls)) {
                labels_unref(ls);
                return s;
            }
    if (c->nser >= c->nser_b && ser_grow(c)) {
        labels_unref(ls);
        return NULL;
    }
    sc_series *s = calloc(1, sizeof *s);
    if (!s) {
        labels_unref(ls);
        return NULL;
    }
    s->ls = ls;
    s->hash = h;
    size_t k = h & (c->nser_b - 1);
    s->next = c->ser[k];
    c->ser[k] = s;
    c->nser++;
    return s;
}

void sc__cache_collect(sc_loop *l) {
    sc_cache *c = &l->cache;
    for (size_t i = 0; i < c->nraw_b; i++) {
        sc_raw **pp = &c->raw[i];
        while (*pp) {
            sc_raw *r = *pp;
            if (r->iter != c->iter) {
                *pp = r->next;
                if (r->s) r->s->rawrefs--;
                c->nraw--;
                c->key_bytes -= r->len;
                free(r);
            } else
                pp = &r->next;
        }
    }
    for (size_t i = 0; i < c->nser_b; i++) {
        sc_series **pp = &c->ser[i];
        while (*pp) {
            sc_series *s = *pp;
            if (!s->rawrefs && !s->inprev && !s->resolving) {
                *pp = s->next;
                c->nser--;
                series_free(s);
            } else
                pp = &s->next;
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
                free(m->name);
                free(m->help);
                free(m->help_raw);
                free(m->unit);
                free(m);
            } else
                pp = &m->next;
        }
    }
    pthread_mutex_unlock(&l->mu);
}

/* ---- metadata ---------------------------------------------------------------- */

static sc_meta *meta_get(sc_loop *l, base_str name) {
    uint64_t h = XXH3_64bits(name.p, name.n);
    if (l->nmeta_b)
        for (sc_meta *m = l->meta[h & (l->nmeta_b - 1)]; m; m = m->next)
            if (m->h == h && strlen(m->name) == name.n && memcmp(m->name, name.p, name.n) == 0) return m;
    sc_meta *m = calloc(1, sizeof *m);
    if (!m) return NULL;
    m->h = h;
    m->name = strndup(name.p, name.n);
    m->help = strdup("");
    m->unit = strdup("");
    if (!m->name || !m->help || !m->unit) {
        free(m->name);
        free(m->help);
        free(m->unit);
        free(m);
        return NULL;
    }
    pthread_mutex_lock(&l->mu);
    if (l->nmeta >= l->nmeta_b) {
        size_t nb = l->nmeta_b ? l->nmeta_b * 2 : 64;
        sc_meta **t = calloc(nb, sizeof *t);
        if (!t) {
            pthread_mutex_unlock(&l->mu);
            free(m->name);
            free(m->help);
            free(m->unit);
            free(m);
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
        base_str raw = expo_parser_text(p);
        if (m->help_raw && strlen(m->help_raw) == raw.n && memcmp(m->help_raw, raw.p, raw.n) == 0) return;
        base_buf_reset(&w->help);
        expo_parser_help(p, &w->help);
        if (base_buf_err(&w->help)) return;
        char *nr = strndup(raw.p, raw.n);
        char *nh = strndup(w->help.data ? w->help.data : "", w->help.len);
        if (!nr || !nh) {
            free(nr);
            free(nh);
            return;
        }
        pthread_mutex_lock(&l->mu);
        free(m->help_raw);
        free(m->help);
        m->help_raw = nr;
        m->help = nh;
        pthread_mutex_unlock(&l->mu);
    } else if (kind == EXPO_ENTRY_UNIT) {
        base_str u = expo_parser_text(p);
        if (strlen(m->unit) == u.n && memcmp(m->unit, u.p, u.n) == 0) return;
        char *nu = strndup(u.p, u.n);
        if (!nu) return;
        pthread_mutex_lock(&l->mu);
        free(m->unit);
        m->unit = nu;
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

static void quote50(char *out, size_t n, base_str v) {
    /* Go's %.50q: the first 50 runes, quoted */
    size_t k = 0, runes = 0;
    while (k < v.n && runes < 50) {
        unsigned char c = (unsigned char)v.p[k];
        k += c < 0x80 ? 1 : c < 0xe0 ? 2 : c < 0xf0 ? 3 : 4;
        runes++;
    }
    if (k > v.n) k = v.n;
    base_buf b;
    base_buf_init(&b, 0);
    labels_quote(&b, (base_str){v.p, k});
    snprintf(out, n, "%s", b.data ? b.data : "\"\"");
    base_buf_free(&b);
}

static int trunc50(base_str v) {
    size_t k = 0, runes = 0;
    while (k < v.n && runes < 50) {
        unsigned char c = (unsigned char)v.p[k];
        k += c < 0x80 ? 1 : c < 0xe0 ? 2 : c < 0xf0 ? 3 : 4;
        runes++;
    }
    return (int)(k > v.n ? v.n : k);
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
static int build_series(sc_worker *w, sc_loop *l, const expo_parser *p, sc_series **ret, sc_result *r) {
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
    if ((e = check_limits(pc, ls, r))) {
        labels_unref(ls);
        return e;
    }
    sc_series *s = ser_get(&l->cache, ls);
    if (!s) goto nomem;
    *ret = s;
    return 1;
nomem:
    fail(r, BASE_E_NOMEM, SC_FAIL_OTHER, "out of memory");
    return BASE_E_NOMEM;
}

/* ---- queueing ------------------------------------------------------------------ */

static int queue(sc_worker *w, sc_cache *c, sc_series *s, int64_t t, double v) {
    if (s->ref) return tsdb_head_app_add_ref(w->app, s->ref, t, v);
    int e = tsdb_head_app_add(w->app, s->ls, t, v);
    if (!e && !s->resolving) {
        if ((e = push(&c->resolve, &c->nresolve, &c->capresolve, s))) return e;
        s->resolving = 1;
    }
    return e;
}

static void clear_resolve(sc_cache *c) {
    for (size_t i = 0; i < c->nresolve; i++) c->resolve[i]->resolving = 0;
    c->nresolve = 0;
}

void sc__resolve_refs(sc_worker *w, sc_loop *l) {
    sc_cache *c = &l->cache;
    tsdb_head *h = w->m->head;
    for (size_t i = 0; i < c->nresolve; i++) {
        sc_series *s = c->resolve[i];
        uint64_t ref;
        if (tsdb_head_ref(h, s->ls, &ref) == 0) s->ref = ref;
        s->resolving = 0;
    }
    c->nresolve = 0;
}

void sc__append_all_stale(sc_worker *w, sc_loop *l, int64_t ts) {
    sc_cache *c = &l->cache;
    for (size_t i = 0; i < c->nprev; i++) {
        sc_series *s = c->prev[i];
        s->inprev = 0;
        queue(w, c, s, ts, stale_nan());
    }
    c->nprev = 0;
    for (size_t i = 0; i < c->ncur; i++) c->cur[i]->mark = 0;
    c->ncur = 0;
}

void sc__append(sc_worker *w, sc_loop *l, const char *body, size_t len, expo_format fmt, int64_t ts,
                sc_result *r) {
    const sc_pcfg *pc = l->wcfg;
    sc_cache *c = &l->cache;
    memset(r, 0, sizeof *r);
    if (++c->iter == 0) c->iter = 1;
    uint32_t iter = c->iter;
    /* refs may be stale after a long outage (head GC): look them up again */
    if (c->last_ok_ms && ts - c->last_ok_ms > SC_REF_TRUST_MS) {
        for (size_t i = 0; i < c->nser_b; i++)
            for (sc_series *s = c->ser[i]; s; s = s->next) s->ref = 0;
        for (int i = 0; i < SC_NREPORT; i++)
            if (c->report[i]) c->report[i]->ref = 0;
    }
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
            uint64_t h = XXH3_64bits(raw.p, raw.n);
            sc_raw *re = raw_find(c, h, raw);
            sc_series *s;
            int isnew = 0;
            if (re) {
                re->iter = iter;
                if (!re->s) continue;
                s = re->s;
            } else {
                s = NULL;
                int rc = build_series(w, l, &p, &s, r);
                if (rc < 0) break;
                if (!raw_insert(c, h, raw, s)) {
                    fail(r, BASE_E_NOMEM, SC_FAIL_OTHER, "out of memory");
                    break;
                }
                if (rc == 0) continue;
                isnew = 1;
            }
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
                /* the same series twice at one time in one body */
                if (s->samp_v != vb) r->duplicate++;
                continue;
            }
            s->samp_iter = iter;
            s->samp_t = t;
            s->samp_v = vb;
            if (queue(w, c, s, t, v)) {
                fail(r, BASE_E_NOMEM, SC_FAIL_OTHER, "out of memory");
                break;
            }
            if (!explicit_ts && s->mark != iter) {
                s->mark = iter;
                if (push(&c->cur, &c->ncur, &c->capcur, s)) {
                    fail(r, BASE_E_NOMEM, SC_FAIL_OTHER, "out of memory");
                    break;
                }
            }
            if (isnew) r->series_added++;
        } else if (e == EXPO_ENTRY_EOF) {
            break;
        } else if (e < 0) {
            fail(r, e,
                 e == BASE_E_LIMIT   ? SC_FAIL_LABEL_LIMIT
                 : e == BASE_E_NOMEM ? SC_FAIL_OTHER
                                     : SC_FAIL_PARSE,
                 "%s", expo_parser_error(&p));
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
        return;
    }
    /* staleness: the previous scrape's series not seen in this one */
    double snan = stale_nan();
    for (size_t i = 0; i < c->nprev; i++) {
        sc_series *s = c->prev[i];
        s->inprev = 0;
        if (s->mark != iter) queue(w, c, s, ts, snan);
    }
    sc_series **t = c->prev;
    size_t tc = c->capprev;
    c->prev = c->cur;
    c->capprev = c->capcur;
    c->nprev = c->ncur;
    c->cur = t;
    c->capcur = tc;
    c->ncur = 0;
    for (size_t i = 0; i < c->nprev; i++) c->prev[i]->inprev = 1;
    c->last_ok_ms = ts;
}

void sc__report(sc_worker *w, sc_loop *l, int64_t ts, double duration_s, const sc_result *r, int up,
                int stale) {
    sc_cache *c = &l->cache;
    double vals[SC_NREPORT] = {up ? 1 : 0, duration_s, (double)r->total, (double)r->added,
                               (double)r->series_added};
    for (int i = 0; i < SC_NREPORT; i++) {
        if (!c->report[i]) {
            labels_builder *b = &w->b;
            labels_builder_reset(b);
            labels_builder_from(b, l->series_tls);
            labels_builder_set(b, base_str_c(LABELS_METRIC_NAME), base_str_c(report_names[i]));
            labels_set *ls = NULL;
            if (labels_builder_finish(b, 0, &ls, NULL, 0)) continue;
            sc_series *s = calloc(1, sizeof *s);
            if (!s) {
                labels_unref(ls);
                continue;
            }
            s->ls = ls;
            s->hash = labels_hash(ls);
            c->report[i] = s;
        }
        queue(w, c, c->report[i], ts, stale ? stale_nan() : vals[i]);
    }
    labels_builder_reset(&w->b);
}
