/* manager.c -- the scrape manager: pools per job, target sync, reloads,
 * and the API views (targets, metadata) and Kelvin's own figures.
 *
 * Everything here runs under m->mu; loops are reached only through the
 * pools' lists while active (see scrape_int.h for who owns what).
 *
 * Sync (2.42's scrapePool.Sync): targets are rebuilt from the job's
 * groups (group labels under target labels, then sc__populate); targets
 * are identified by their hash (labels and URL); duplicates collapse; a
 * target whose hash is kept keeps its loop untouched; a new target whose
 * series labels and URL equal those of a vanished one takes over its loop's
 * series cache, so its series continue without staleness (e.g. only
 * __scrape_interval__ changed); other vanished targets stop with
 * end-of-run staleness. target_limit: over it, every loop of the pool
 * fails with 2.42's message until the count drops.
 *
 * Apply: an unchanged job (cfg_scrape_equal) keeps everything; a changed
 * one gets a new settings snapshot in every loop (picked up at its next
 * scrape; the raw-series cache is flushed when honor_labels or
 * metric_relabel_configs changed) and is re-synced from its last groups;
 * a removed job stops its loops with staleness.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/err.h"
#include "base/log.h"
#include "base/num.h"
#include "scrape/scrape_int.h"

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static void curl_init_once(void) {
    curl_global_init(CURL_GLOBAL_ALL);
}

/* ---- pools --------------------------------------------------------------------- */

static void gstore_free(sc_gstore *g, size_t n) {
    for (size_t i = 0; i < n; i++) {
        labels_unref(g[i].glabels);
        for (size_t j = 0; j < g[i].ntargets; j++) labels_unref(g[i].targets[j]);
        free(g[i].targets);
    }
    free(g);
}

static void dropped_free(sc_pool *p) {
    for (size_t i = 0; i < p->ndropped; i++) labels_unref(p->dropped[i]);
    free(p->dropped);
    p->dropped = NULL;
    p->ndropped = 0;
}

static void stop_loop(sc_loop *l, int mode, sc_loop *takeover) {
    l->stop_mode = mode;
    l->takeover = takeover;
    sc__worker_cmd(l->w, SC_CMD_STOP, l);
}

static void pool_free(sc_pool *p, int stale) {
    for (size_t i = 0; i < p->nloops; i++)
        stop_loop(p->loops[i], stale ? SC_STOP_STALE : SC_STOP_QUIET, NULL);
    free(p->loops);
    gstore_free(p->groups, p->ngroups);
    dropped_free(p);
    sc__pcfg_unref(p->pcfg);
    free(p->job);
    free(p);
}

static sc_pool *pool_find(scrape_manager *m, const char *job) {
    for (size_t i = 0; i < m->npools; i++)
        if (strcmp(m->pools[i]->job, job) == 0) return m->pools[i];
    return NULL;
}

static sc_pool *pool_add(scrape_manager *m, const char *job) {
    sc_pool **np = realloc(m->pools, (m->npools + 1) * sizeof *np);
    if (!np) return NULL;
    m->pools = np;
    sc_pool *p = calloc(1, sizeof *p);
    if (!p || !(p->job = strdup(job))) {
        free(p);
        return NULL;
    }
    m->pools[m->npools++] = p;
    return p;
}

typedef struct newt {
    labels_set *ls, *orig;
    uint64_t hash;
    sc_loop *loop;
} newt;

static int newt_cmp(const void *a, const void *b) {
    const newt *x = a, *y = b;
    return x->hash < y->hash ? -1 : x->hash > y->hash;
}

static uint64_t target_hash(const labels_set *ls, const cfg_scrape *c) {
    char *url = sc__target_url(ls, c);
    char hs[24];
    int hn = snprintf(hs, sizeof hs, "%016" PRIu64, labels_hash(ls));
    uint64_t h = sc__fnv64a(hs, (size_t)hn, SC_FNV_INIT);
    if (url) h = sc__fnv64a(url, strlen(url), h);
    free(url);
    return h;
}

static labels_set *merge_group(const labels_set *glabels, const labels_set *t) {
    labels_builder b;
    labels_builder_init(&b);
    int e = labels_builder_from(&b, t);
    labels_iter it;
    labels_iter_init(&it, glabels);
    base_str n, v;
    while (!e && labels_iter_next(&it, &n, &v))
        if (!labels_has(t, n)) e = labels_builder_add(&b, n, v);
    labels_set *r = NULL;
    if (!e) e = labels_builder_finish(&b, 0, &r, NULL, 0);
    labels_builder_free(&b);
    return e ? NULL : r;
}

static void set_forced(sc_pool *p) {
    char msg[256] = "";
    if (p->cfg && p->cfg->target_limit && p->nloops > p->cfg->target_limit)
        snprintf(msg, sizeof msg, "target_limit exceeded (number of targets: %zu, limit: %llu)", p->nloops,
                 (unsigned long long)p->cfg->target_limit);
    for (size_t i = 0; i < p->nloops; i++) {
        sc_loop *l = p->loops[i];
        pthread_mutex_lock(&l->mu);
        snprintf(l->forced_err, sizeof l->forced_err, "%s", msg);
        pthread_mutex_unlock(&l->mu);
    }
}

static void resync(scrape_manager *m, sc_pool *p) {
    const cfg_scrape *c = p->cfg;
    size_t cap = 0;
    for (size_t i = 0; i < p->ngroups; i++) cap += p->groups[i].ntargets;
    newt *nt = cap ? calloc(cap, sizeof *nt) : NULL;
    labels_set **dropped = cap ? calloc(cap, sizeof *dropped) : NULL;
    if (cap && (!nt || !dropped)) {
        free(nt);
        free(dropped);
        return;
    }
    size_t n = 0, nd = 0;
    for (size_t i = 0; i < p->ngroups; i++) {
        for (size_t j = 0; j < p->groups[i].ntargets; j++) {
            labels_set *in = merge_group(p->groups[i].glabels, p->groups[i].targets[j]);
            if (!in) continue;
            labels_set *ls = NULL, *orig = NULL;
            char err[512];
            int rc = sc__populate(c, in, &ls, &orig, err, sizeof err);
            labels_unref(in);
            if (rc < 0) {
                char what[64];
                snprintf(what, sizeof what, "instance %zu in group %zu", j, i);
                base_log(BASE_LOG_ERROR, "Creating target failed", "job", p->job, "target", what, "err", err,
                         NULL);
                continue;
            }
            if (rc == 0) {
                dropped[nd++] = orig;
                continue;
            }
            base_str dummy, dv;
            labels_iter it;
            labels_iter_init(&it, ls);
            int visible = 0;
            while (labels_iter_next(&it, &dummy, &dv))
                if (!base_str_has_prefix(dummy, "__")) visible = 1;
            if (!visible) { /* 2.42: a target with no labels left is dropped */
                labels_unref(ls);
                dropped[nd++] = orig;
                continue;
            }
            nt[n].ls = ls;
            nt[n].orig = orig;
            nt[n].hash = target_hash(ls, c);
            n++;
        }
    }
    if (n) qsort(nt, n, sizeof *nt, newt_cmp);
    /* collapse duplicates */
    size_t u = 0;
    for (size_t i = 0; i < n; i++) {
        if (u && nt[u - 1].hash == nt[i].hash) {
            labels_unref(nt[i].ls);
            labels_unref(nt[i].orig);
            continue;
        }
        nt[u++] = nt[i];
    }
    n = u;
    /* match with the running loops (both sorted by hash) */
    sc_loop **gone = p->nloops ? calloc(p->nloops, sizeof *gone) : NULL;
    size_t ngone = 0;
    sc_loop **keep = n ? calloc(n, sizeof *keep) : NULL;
    size_t i = 0, j = 0;
    while (i < n || j < p->nloops) {
        if (j < p->nloops && (i == n || p->loops[j]->thash < nt[i].hash)) {
            gone[ngone++] = p->loops[j++];
        } else if (i < n && (j == p->nloops || nt[i].hash < p->loops[j]->thash)) {
            i++;
        } else {
            nt[i].loop = p->loops[j];
            i++;
            j++;
        }
    }
    size_t nk = 0;
    for (i = 0; i < n; i++) {
        if (nt[i].loop) {
            keep[nk++] = nt[i].loop;
            continue;
        }
        sc_loop *l = sc__loop_new(m, p, nt[i].ls, nt[i].orig);
        if (!l) continue;
        sc_loop *prev = NULL;
        for (size_t g = 0; g < ngone; g++)
            if (gone[g] && gone[g]->key2 == l->key2 && strcmp(gone[g]->url, l->url) == 0 &&
                labels_equal(gone[g]->series_tls, l->series_tls)) {
                prev = gone[g];
                gone[g] = NULL;
                break;
            }
        if (prev) stop_loop(prev, SC_STOP_TAKEOVER, l);
        sc__worker_cmd(l->w, SC_CMD_START, l);
        keep[nk++] = l;
    }
    for (size_t g = 0; g < ngone; g++)
        if (gone[g]) stop_loop(gone[g], SC_STOP_STALE, NULL);
    free(gone);
    for (i = 0; i < n; i++) {
        labels_unref(nt[i].ls);
        labels_unref(nt[i].orig);
    }
    free(nt);
    /* keep[] is sorted: the kept and new loops were visited in hash order */
    free(p->loops);
    p->loops = keep;
    p->nloops = nk;
    dropped_free(p);
    p->dropped = dropped;
    p->ndropped = nd;
    set_forced(p);
}

/* ---- public API ------------------------------------------------------------------- */

int scrape_manager_new(const scrape_opts *o, scrape_manager **ret, char *err, size_t errlen) {
    if (!o || !o->db) return base_errf(err, errlen, BASE_E_INVAL, "scrape: no database");
    pthread_once(&curl_once, curl_init_once);
    scrape_manager *m = calloc(1, sizeof *m);
    if (!m) return base_errf(err, errlen, BASE_E_NOMEM, "out of memory");
    pthread_mutex_init(&m->mu, NULL);
    m->db = o->db;
    m->head = tsdb_db_head(o->db);
    m->jitter =
        sc__fnv64a(o->identity ? o->identity : "", o->identity ? strlen(o->identity) : 0, SC_FNV_INIT);
    unsigned n = o->threads;
    if (!n) {
        long c = sysconf(_SC_NPROCESSORS_ONLN);
        n = c > 2 ? (unsigned)(c / 2) : 1;
    }
    if (n > 64) n = 64;
    m->workers = calloc(n, sizeof *m->workers);
    if (!m->workers) {
        pthread_mutex_destroy(&m->mu);
        free(m);
        return base_errf(err, errlen, BASE_E_NOMEM, "out of memory");
    }
    m->nworkers = n;
    for (unsigned i = 0; i < n; i++) {
        int e = sc__worker_start(m, &m->workers[i], err, errlen);
        if (e) {
            m->nworkers = i + 1;
            scrape_manager_free(m);
            return e;
        }
    }
    *ret = m;
    return 0;
}

void scrape_manager_free(scrape_manager *m) {
    if (!m) return;
    pthread_mutex_lock(&m->mu);
    /* the workers free every loop they own, without markers */
    for (size_t i = 0; i < m->npools; i++) {
        sc_pool *p = m->pools[i];
        free(p->loops);
        p->loops = NULL;
        p->nloops = 0;
    }
    pthread_mutex_unlock(&m->mu);
    for (unsigned i = 0; i < m->nworkers; i++) sc__worker_stop(&m->workers[i]);
    for (size_t i = 0; i < m->npools; i++) pool_free(m->pools[i], 0);
    free(m->pools);
    free(m->workers);
    pthread_mutex_destroy(&m->mu);
    free(m);
}

int scrape_manager_apply(scrape_manager *m, const cfg_config *c, char *err, size_t errlen) {
    pthread_mutex_lock(&m->mu);
    /* snapshots first, so a failure changes nothing */
    sc_pcfg **snap = c->nscrapes ? calloc(c->nscrapes, sizeof *snap) : NULL;
    if (c->nscrapes && !snap) {
        pthread_mutex_unlock(&m->mu);
        return base_errf(err, errlen, BASE_E_NOMEM, "out of memory");
    }
    for (size_t i = 0; i < c->nscrapes; i++) {
        if (!(snap[i] = sc__pcfg_new(&c->scrapes[i], err, errlen))) {
            for (size_t k = 0; k < i; k++) sc__pcfg_unref(snap[k]);
            free(snap);
            pthread_mutex_unlock(&m->mu);
            return base_errf(err, errlen, BASE_E_NOMEM, "scrape config %s: cannot copy",
                             c->scrapes[i].job_name);
        }
    }
    /* removed jobs */
    for (size_t i = 0; i < m->npools;) {
        sc_pool *p = m->pools[i];
        if (!cfg_find_scrape(c, p->job) && p->cfg) {
            pool_free(p, 1);
            m->pools[i] = m->pools[--m->npools];
            continue;
        }
        i++;
    }
    for (size_t k = 0; k < c->nscrapes; k++) {
        const cfg_scrape *nc = &c->scrapes[k];
        sc_pool *p = pool_find(m, nc->job_name);
        if (!p) {
            if (!(p = pool_add(m, nc->job_name))) continue;
        }
        if (p->cfg && cfg_scrape_equal(p->cfg, nc)) {
            p->cfg = nc;
            continue;
        }
        int reuse = p->cfg ? sc__cache_reusable(p->cfg, nc) : 1;
        p->cfg = nc;
        sc__pcfg_unref(p->pcfg);
        p->pcfg = sc__pcfg_ref(snap[k]);
        for (size_t i = 0; i < p->nloops; i++) {
            sc_loop *l = p->loops[i];
            pthread_mutex_lock(&l->mu);
            sc__pcfg_unref(l->pcfg);
            l->pcfg = sc__pcfg_ref(snap[k]);
            if (!reuse) l->pcfg_flush = 1;
            pthread_mutex_unlock(&l->mu);
        }
        if (p->has_groups) resync(m, p);
    }
    for (size_t k = 0; k < c->nscrapes; k++) sc__pcfg_unref(snap[k]);
    free(snap);
    /* pools in job order of the file would be nicer for the API: sort by name */
    for (size_t a = 1; a < m->npools; a++)
        for (size_t b = a; b > 0 && strcmp(m->pools[b - 1]->job, m->pools[b]->job) > 0; b--) {
            sc_pool *t = m->pools[b];
            m->pools[b] = m->pools[b - 1];
            m->pools[b - 1] = t;
        }
    pthread_mutex_unlock(&m->mu);
    return 0;
}

static int groups_same(const sc_pool *p, const disc_group *const *g, size_t n) {
    if (!p->has_groups || p->ngroups != n) return 0;
    for (size_t i = 0; i < n; i++) {
        const sc_gstore *s = &p->groups[i];
        if (s->ntargets != g[i]->ntargets) return 0;
        if (!labels_equal(s->glabels, g[i]->labels ? g[i]->labels : labels_empty())) return 0;
        for (size_t j = 0; j < s->ntargets; j++)
            if (!labels_equal(s->targets[j], g[i]->targets[j])) return 0;
    }
    return 1;
}

void scrape_manager_sync(scrape_manager *m, const char *job, const disc_group *const *groups, size_t n) {
    pthread_mutex_lock(&m->mu);
    sc_pool *p = pool_find(m, job);
    if (!p && !(p = pool_add(m, job))) goto out;
    if (groups_same(p, groups, n)) goto out;
    sc_gstore *g = n ? calloc(n, sizeof *g) : NULL;
    if (n && !g) goto out;
    for (size_t i = 0; i < n; i++) {
        g[i].glabels = labels_ref(groups[i]->labels ? groups[i]->labels : labels_empty());
        g[i].targets = groups[i]->ntargets ? calloc(groups[i]->ntargets, sizeof *g[i].targets) : NULL;
        if (groups[i]->ntargets && !g[i].targets) {
            gstore_free(g, i + 1);
            goto out;
        }
        g[i].ntargets = groups[i]->ntargets;
        for (size_t j = 0; j < g[i].ntargets; j++) g[i].targets[j] = labels_ref(groups[i]->targets[j]);
    }
    gstore_free(p->groups, p->ngroups);
    p->groups = g;
    p->ngroups = n;
    p->has_groups = 1;
    if (p->cfg) resync(m, p);
out:
    pthread_mutex_unlock(&m->mu);
}

/* ---- JSON ----------------------------------------------------------------------------- */

static void json_cstr(base_buf *b, const char *s) {
    base_buf_json_str(b, s, strlen(s));
}

static void json_labels(base_buf *b, const labels_set *ls, int hide_internal) {
    base_buf_putc(b, '{');
    labels_iter it;
    labels_iter_init(&it, ls);
    base_str n, v;
    int first = 1;
    while (labels_iter_next(&it, &n, &v)) {
        if (hide_internal && base_str_has_prefix(n, "__")) continue;
        if (!first) base_buf_putc(b, ',');
        first = 0;
        base_buf_json_str(b, n.p, n.n);
        base_buf_putc(b, ':');
        base_buf_json_str(b, v.p, v.n);
    }
    base_buf_putc(b, '}');
}

/* Go's time.Time JSON (RFC 3339 with trailing zeros of the ns trimmed). */
static void json_time(base_buf *b, int64_t ns) {
    if (ns == 0) {
        base_buf_puts(b, "\"0001-01-01T00:00:00Z\"");
        return;
    }
    time_t sec = (time_t)(ns / 1000000000LL);
    long frac = (long)(ns % 1000000000LL);
    struct tm tm;
    gmtime_r(&sec, &tm);
    char t[64];
    strftime(t, sizeof t, "%Y-%m-%dT%H:%M:%S", &tm);
    base_buf_putc(b, '"');
    base_buf_puts(b, t);
    if (frac) {
        char f[16];
        snprintf(f, sizeof f, ".%09ld", frac);
        size_t k = strlen(f);
        while (k > 1 && f[k - 1] == '0') k--;
        base_buf_append(b, f, k);
    }
    base_buf_puts(b, "Z\"");
}

static void json_float(base_buf *b, double v) {
    char f[BASE_FMT_DOUBLE_MAX];
    base_fmt_double_f(f, v);
    base_buf_puts(b, f);
}

int scrape_manager_targets_json(scrape_manager *m, const char *state, base_buf *out) {
    int show_active = 1, show_dropped = 1;
    if (state && state[0] && strcasecmp(state, "any") != 0) {
        show_active = strcasecmp(state, "active") == 0;
        show_dropped = strcasecmp(state, "dropped") == 0;
    }
    pthread_mutex_lock(&m->mu);
    base_buf_puts(out, "{\"status\":\"success\",\"data\":{\"activeTargets\":[");
    int first = 1;
    for (size_t i = 0; show_active && i < m->npools; i++) {
        sc_pool *p = m->pools[i];
        if (!p->cfg) continue;
        for (size_t k = 0; k < p->nloops; k++) {
            sc_loop *l = p->loops[k];
            if (!first) base_buf_putc(out, ',');
            first = 0;
            base_buf_puts(out, "{\"discoveredLabels\":");
            json_labels(out, l->discovered, 0);
            base_buf_puts(out, ",\"labels\":");
            json_labels(out, l->tls, 1);
            base_buf_puts(out, ",\"scrapePool\":");
            json_cstr(out, p->job);
            base_buf_puts(out, ",\"scrapeUrl\":");
            json_cstr(out, l->url);
            base_buf_puts(out, ",\"globalUrl\":");
            json_cstr(out, l->url);
            pthread_mutex_lock(&l->mu);
            base_buf_puts(out, ",\"lastError\":");
            json_cstr(out, l->last_error);
            base_buf_puts(out, ",\"lastScrape\":");
            json_time(out, l->last_scrape_ns);
            base_buf_puts(out, ",\"lastScrapeDuration\":");
            json_float(out, l->last_duration_s);
            base_buf_puts(out, ",\"health\":");
            base_buf_puts(out, l->health == SC_HEALTH_UP     ? "\"up\""
                               : l->health == SC_HEALTH_DOWN ? "\"down\""
                                                             : "\"unknown\"");
            pthread_mutex_unlock(&l->mu);
            base_buf_puts(out, ",\"scrapeInterval\":");
            json_cstr(out, l->interval_s);
            base_buf_puts(out, ",\"scrapeTimeout\":");
            json_cstr(out, l->timeout_s);
            base_buf_putc(out, '}');
        }
    }
    base_buf_puts(out, "],\"droppedTargets\":[");
    first = 1;
    for (size_t i = 0; show_dropped && i < m->npools; i++) {
        sc_pool *p = m->pools[i];
        if (!p->cfg) continue;
        for (size_t k = 0; k < p->ndropped; k++) {
            if (!first) base_buf_putc(out, ',');
            first = 0;
            base_buf_puts(out, "{\"discoveredLabels\":");
            json_labels(out, p->dropped[k], 0);
            base_buf_putc(out, '}');
        }
    }
    base_buf_puts(out, "]}}");
    pthread_mutex_unlock(&m->mu);
    return base_buf_err(out);
}

static const char *type_name(expo_type t) {
    switch (t) {
    case EXPO_COUNTER: return "counter";
    case EXPO_GAUGE: return "gauge";
    case EXPO_HISTOGRAM: return "histogram";
    case EXPO_SUMMARY: return "summary";
    case EXPO_INFO: return "info";
    case EXPO_STATESET: return "stateset";
    case EXPO_GAUGEHISTOGRAM: return "gaugehistogram";
    default: return "unknown";
    }
}

typedef struct mdrow {
    const char *name, *help, *unit;
    expo_type type;
} mdrow;

static int mdrow_cmp(const void *a, const void *b) {
    const mdrow *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    if (c) return c;
    c = strcmp(type_name(x->type), type_name(y->type));
    if (c) return c;
    c = strcmp(x->help, y->help);
    if (c) return c;
    return strcmp(x->unit, y->unit);
}

/* Collects a loop's metadata rows (under its lock), sorted by name. The
 * strings are duplicated into *arena (one allocation per row). */
static int loop_rows(sc_loop *l, base_str metric, mdrow **ret, size_t *ret_n, char ***ret_mem) {
    pthread_mutex_lock(&l->mu);
    size_t n = 0, cap = l->nmeta;
    mdrow *rows = cap ? calloc(cap, sizeof *rows) : NULL;
    char **mem = cap ? calloc(cap, sizeof *mem) : NULL;
    if (cap && (!rows || !mem)) {
        pthread_mutex_unlock(&l->mu);
        free(rows);
        free(mem);
        return BASE_E_NOMEM;
    }
    for (size_t i = 0; i < l->nmeta_b; i++)
        for (sc_meta *md = l->meta[i]; md; md = md->next) {
            if (metric.n && !base_str_eqc(metric, md->name)) continue;
            size_t a = strlen(md->name) + 1, h = strlen(md->help) + 1, u = strlen(md->unit) + 1;
            char *s = malloc(a + h + u);
            if (!s) continue;
            memcpy(s, md->name, a);
            memcpy(s + a, md->help, h);
            memcpy(s + a + h, md->unit, u);
            mem[n] = s;
            rows[n++] = (mdrow){s, s + a, s + a + h, md->type};
        }
    pthread_mutex_unlock(&l->mu);
    if (n) qsort(rows, n, sizeof *rows, mdrow_cmp);
    *ret = rows;
    *ret_n = n;
    *ret_mem = mem;
    return 0;
}

static void rows_free(mdrow *rows, char **mem, size_t n) {
    for (size_t i = 0; i < n; i++) free(mem[i]);
    free(mem);
    free(rows);
}

static void md_fields(base_buf *out, const mdrow *r) {
    base_buf_puts(out, "\"type\":");
    json_cstr(out, type_name(r->type));
    base_buf_puts(out, ",\"help\":");
    json_cstr(out, r->help);
    base_buf_puts(out, ",\"unit\":");
    json_cstr(out, r->unit);
}

int scrape_manager_metadata_json(scrape_manager *m, labels_matcher *const *ms, size_t nms, base_str metric,
                                 long limit, base_buf *out) {
    int with_metric = metric.n > 0;
    long count = 0;
    base_buf_putc(out, '[');
    pthread_mutex_lock(&m->mu);
    for (size_t i = 0; i < m->npools; i++) {
        sc_pool *p = m->pools[i];
        if (!p->cfg) continue;
        for (size_t k = 0; k < p->nloops; k++) {
            if (limit >= 0 && count >= limit) break; /* 2.42 checks the limit per target */
            sc_loop *l = p->loops[k];
            int match = 1;
            for (size_t q = 0; q < nms && match; q++)
                match = labels_matcher_matches_set(ms[q], l->series_tls);
            if (!match) continue;
            mdrow *rows;
            size_t n;
            char **mem;
            if (loop_rows(l, metric, &rows, &n, &mem)) continue;
            for (size_t r = 0; r < n; r++) {
                if (count) base_buf_putc(out, ',');
                count++;
                base_buf_puts(out, "{\"target\":");
                json_labels(out, l->series_tls, 0);
                if (!with_metric) {
                    base_buf_puts(out, ",\"metric\":");
                    json_cstr(out, rows[r].name);
                }
                base_buf_putc(out, ',');
                md_fields(out, &rows[r]);
                base_buf_putc(out, '}');
            }
            rows_free(rows, mem, n);
        }
    }
    pthread_mutex_unlock(&m->mu);
    base_buf_putc(out, ']');
    return base_buf_err(out);
}

int scrape_manager_metric_metadata_json(scrape_manager *m, base_str metric, long limit, base_buf *out) {
    mdrow *all = NULL;
    char **allmem = NULL;
    size_t nall = 0, capall = 0;
    int e = 0;
    pthread_mutex_lock(&m->mu);
    for (size_t i = 0; i < m->npools && !e; i++) {
        sc_pool *p = m->pools[i];
        if (!p->cfg) continue;
        for (size_t k = 0; k < p->nloops && !e; k++) {
            mdrow *rows;
            size_t n;
            char **mem;
            if ((e = loop_rows(p->loops[k], metric, &rows, &n, &mem))) break;
            if (nall + n > capall) {
                size_t nc = (nall + n) * 2;
                mdrow *a = realloc(all, nc * sizeof *a);
                char **am = a ? realloc(allmem, nc * sizeof *am) : NULL;
                if (a) all = a;
                if (am) allmem = am;
                if (!a || !am) {
                    rows_free(rows, mem, n);
                    e = BASE_E_NOMEM;
                    break;
                }
                capall = nc;
            }
            if (n) memcpy(all + nall, rows, n * sizeof *rows);
            if (n) memcpy(allmem + nall, mem, n * sizeof *mem);
            nall += n;
            free(rows);
            free(mem);
        }
    }
    pthread_mutex_unlock(&m->mu);
    if (!e) {
        if (nall) qsort(all, nall, sizeof *all, mdrow_cmp);
        base_buf_putc(out, '{');
        long names = 0;
        for (size_t i = 0; i < nall;) {
            if (limit >= 0 && names >= limit) break;
            size_t j = i;
            if (names) base_buf_putc(out, ',');
            names++;
            json_cstr(out, all[i].name);
            base_buf_puts(out, ":[");
            for (; j < nall && strcmp(all[j].name, all[i].name) == 0; j++) {
                if (j > i && mdrow_cmp(&all[j], &all[j - 1]) == 0) continue;
                if (j > i) base_buf_putc(out, ',');
                base_buf_putc(out, '{');
                md_fields(out, &all[j]);
                base_buf_putc(out, '}');
            }
            base_buf_putc(out, ']');
            i = j;
        }
        base_buf_putc(out, '}');
        e = base_buf_err(out);
    }
    for (size_t i = 0; i < nall; i++) free(allmem[i]);
    free(allmem);
    free(all);
    return e;
}

void scrape_manager_metadata_each(scrape_manager *m, scrape_metadata_fn fn, void *ctx) {
    pthread_mutex_lock(&m->mu);
    for (size_t i = 0; i < m->npools; i++) {
        sc_pool *p = m->pools[i];
        if (!p->cfg) continue;
        for (size_t k = 0; k < p->nloops; k++) {
            sc_loop *l = p->loops[k];
            pthread_mutex_lock(&l->mu);
            for (size_t b = 0; b < l->nmeta_b; b++)
                for (sc_meta *md = l->meta[b]; md; md = md->next)
                    fn(ctx, (base_str){md->name, md->name_len}, md->type, (base_str){md->help, md->help_len},
                       (base_str){md->unit, md->unit_len});
            pthread_mutex_unlock(&l->mu);
        }
    }
    pthread_mutex_unlock(&m->mu);
}

void scrape_manager_metrics(scrape_manager *m, expo_mset *ms) {
    expo_family *ft =
        expo_mset_family(ms, "kelvin_scrape_targets", EXPO_GAUGE, "Active scrape targets per job.", NULL);
    expo_family *fd = expo_mset_family(ms, "kelvin_scrape_dropped_targets", EXPO_GAUGE,
                                       "Targets dropped by relabeling per job.", NULL);
    expo_family *fm = expo_mset_family(ms, "kelvin_scrape_pool_memory_bytes", EXPO_GAUGE,
                                       "Bytes held by the series caches of a job's scrape loops.", NULL);
    if (!ft || !fd || !fm) return;
    pthread_mutex_lock(&m->mu);
    for (size_t i = 0; i < m->npools; i++) {
        sc_pool *p = m->pools[i];
        if (!p->cfg) continue;
        const char *lab = expo_mset_labels(ms, "job", p->job, NULL);
        size_t mem = 0;
        for (size_t k = 0; k < p->nloops; k++) {
            sc_loop *l = p->loops[k];
            pthread_mutex_lock(&l->mu);
            mem += l->mem_bytes + sizeof *l;
            pthread_mutex_unlock(&l->mu);
        }
        expo_mset_add(ms, ft, "", lab, NULL, (double)p->nloops);
        expo_mset_add(ms, fd, "", lab, NULL, (double)p->ndropped);
        expo_mset_add(ms, fm, "", lab, NULL, (double)mem);
    }
    pthread_mutex_unlock(&m->mu);
    expo_family *f = expo_mset_family(ms, "kelvin_scrape_total", EXPO_COUNTER, "Scrapes done.", NULL);
    if (f) expo_mset_add(ms, f, "", NULL, NULL, (double)atomic_load(&m->scrapes));
    f = expo_mset_family(ms, "kelvin_scrape_failures_total", EXPO_COUNTER, "Failed scrapes by reason.", NULL);
    for (int r = 1; f && r < SC_FAIL_N; r++)
        expo_mset_add(ms, f, "", expo_mset_labels(ms, "reason", sc__fail_names[r], NULL), NULL,
                      (double)atomic_load(&m->fails[r]));
    f = expo_mset_family(ms, "kelvin_scrape_samples_appended_total", EXPO_COUNTER,
                         "Samples the head accepted from scrapes (report series and stale markers included).",
                         NULL);
    if (f) expo_mset_add(ms, f, "", NULL, NULL, (double)atomic_load(&m->samples_appended));
    f = expo_mset_family(ms, "kelvin_scrape_samples_rejected_total", EXPO_COUNTER,
                         "Scraped samples not stored, by reason.", NULL);
    if (f) {
        expo_mset_add(ms, f, "", "reason=\"out_of_order\"", NULL, (double)atomic_load(&m->out_of_order));
        expo_mset_add(ms, f, "", "reason=\"duplicate\"", NULL, (double)atomic_load(&m->duplicate));
        expo_mset_add(ms, f, "", "reason=\"out_of_bounds\"", NULL, (double)atomic_load(&m->out_of_bounds));
    }
}
