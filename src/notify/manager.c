/* manager.c -- the notifier's manager (2.42's notifier.Manager): the
 * queue, the configuration, the alertmanager sets, the sender thread and
 * the statistics.
 *
 * STATE (all under m->mu):
 *  - the queue: a ring of at most `cap` alert pointers (head, len); the
 *    oldest is at head. notify_send appends (dropping from the head when
 *    full), the sender takes up to NOTIFY_MAX_BATCH from the head.
 *  - the configuration: external labels, alert relabel rules, the sets
 *    (reference counted: the sender holds references to the sets of the
 *    batch it is sending, so a reload may replace them meanwhile).
 *  - the groups each discovery set last sent (by set name, kept across
 *    reloads), from which each set's active and dropped URLs are computed
 *    on notify_sync and on notify_apply_config.
 *  - per-alertmanager statistics by URL (sorted), created at 0 when an
 *    alertmanager is discovered and kept (2.42 never deletes them); past
 *    NOTIFY__MAX_STATS entries those of alertmanagers no longer active
 *    are dropped first.
 *
 * THE SENDER THREAD (sender_main):
 *     wait until the queue is not empty or stop
 *     take a batch; list (set, url) for every active alertmanager
 *     unlock, send (send.c), lock
 *     count: sent += n and latency per alertmanager, errors per failed
 *     request; dropped += n unless some request succeeded
 * On stop it goes on while the queue is not empty, drain_on_shutdown is
 * set and the drain deadline has not passed; requests in flight are
 * cancelled once stop is set and the deadline (or, without draining, at
 * once) has passed.
 *
 * INVARIANTS: qlen <= cap; every queued alert is owned by the queue; a set
 * in m->sets holds one reference from the array; stats are sorted by url.
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "base/err.h"
#include "base/log.h"
#include "base/time.h"
#include "notify/notify_int.h"

const double notify_quantiles[NOTIFY_NQUANTILES] = {0.5, 0.9, 0.99};

typedef struct gstore {
    char *name;
    disc_group *groups; /* source NULL; labels and targets referenced */
    size_t n;
} gstore;

typedef struct amstat {
    char *url;
    uint64_t sent, errors, lat_count;
    double lat_sum;
    int64_t lat_t[NOTIFY__LAT_KEEP];
    double lat_v[NOTIFY__LAT_KEEP];
    size_t lat_n, lat_next;
    char last_err[256]; /* logged; "" while healthy */
} amstat;

struct notify_manager {
    notify_opts o;
    char *ua;
    pthread_mutex_t mu;
    pthread_cond_t cond;
    pthread_t th;
    int have_thread;
    int stop;
    int64_t drain_deadline_ns;
    /* queue */
    notify__alert **q;
    size_t cap, head, len;
    uint64_t dropped;
    int full_logged;
    /* configuration */
    labels_set *ext;
    relabel_rule *arelabel;
    size_t narelabel;
    notify__set **sets;
    size_t nsets;
    /* discovered groups by set name */
    gstore *gs;
    size_t ngs;
    /* statistics */
    amstat **stats;
    size_t nstats;
    notify__sender *sender;
};

void notify_opts_default(notify_opts *o) {
    memset(o, 0, sizeof *o);
    o->queue_capacity = NOTIFY__DEFAULT_CAPACITY;
    o->drain_on_shutdown = 1;
    o->drain_timeout_ms = 10000;
}

void notify_strv_free(char **v, size_t n) {
    if (!v) return;
    for (size_t i = 0; i < n; i++) free(v[i]);
    free(v);
}

/* ---- sets ------------------------------------------------------------------- */

static void set_unref(notify__set *s) {
    if (!s || atomic_fetch_sub(&s->refs, 1) != 1) return;
    free(s->name);
    free(s->scheme);
    free(s->path_prefix);
    free(s->api_version);
    cfg_http_clear(&s->http);
    for (size_t i = 0; i < s->nrelabel; i++) relabel_rule_clear(&s->relabel[i]);
    free(s->relabel);
    notify_strv_free(s->active, s->nactive);
    notify_strv_free(s->dropped, s->ndropped);
    free(s);
}

static int set_new(const cfg_alertmanager *a, size_t idx, notify__set **ret, char *err, size_t errlen) {
    notify__set *s = calloc(1, sizeof *s);
    if (!s) return base_errf(err, errlen, BASE_E_NOMEM, "out of memory");
    atomic_init(&s->refs, 1);
    char name[64];
    snprintf(name, sizeof name, "alertmanager/%zu", idx);
    s->name = strdup(name);
    s->scheme = strdup(a->scheme ? a->scheme : "http");
    s->path_prefix = strdup(a->path_prefix ? a->path_prefix : "/");
    s->api_version = strdup(a->api_version ? a->api_version : "v2");
    s->timeout_ms = a->timeout_ms;
    int rc = 0;
    if (!s->name || !s->scheme || !s->path_prefix || !s->api_version || cfg_http_copy(&s->http, &a->http))
        rc = base_errf(err, errlen, BASE_E_NOMEM, "out of memory");
    if (!rc && a->nrelabel) {
        if (!(s->relabel = calloc(a->nrelabel, sizeof *s->relabel))) {
            rc = base_errf(err, errlen, BASE_E_NOMEM, "out of memory");
        } else {
            for (size_t i = 0; i < a->nrelabel && !rc; i++) {
                rc = relabel_rule_copy(&s->relabel[i], &a->relabel[i], err, errlen);
                if (!rc) s->nrelabel = i + 1;
            }
        }
    }
    if (rc) {
        set_unref(s);
        return rc;
    }
    *ret = s;
    return 0;
}

/* ---- statistics ------------------------------------------------------------------ */

static size_t stat_pos(notify_manager *m, const char *url, int *found) {
    size_t lo = 0, hi = m->nstats;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int c = strcmp(m->stats[mid]->url, url);
        if (c == 0) {
            *found = 1;
            return mid;
        }
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    *found = 0;
    return lo;
}

static int url_active(notify_manager *m, const char *url) {
    for (size_t i = 0; i < m->nsets; i++)
        for (size_t j = 0; j < m->sets[i]->nactive; j++)
            if (strcmp(m->sets[i]->active[j], url) == 0) return 1;
    return 0;
}

/* Frees room by dropping the entries of alertmanagers no longer active. */
static void stats_prune(notify_manager *m) {
    size_t w = 0;
    for (size_t i = 0; i < m->nstats; i++) {
        if (url_active(m, m->stats[i]->url)) {
            m->stats[w++] = m->stats[i];
        } else {
            free(m->stats[i]->url);
            free(m->stats[i]);
        }
    }
    m->nstats = w;
}

/* The entry of url, created at 0 when absent (NULL when there is no room
 * or memory: the counts are then lost). */
static amstat *stat_get(notify_manager *m, const char *url) {
    int found;
    size_t pos = stat_pos(m, url, &found);
    if (found) return m->stats[pos];
    if (m->nstats >= NOTIFY__MAX_STATS) {
        stats_prune(m);
        if (m->nstats >= NOTIFY__MAX_STATS) return NULL;
        pos = stat_pos(m, url, &found);
    }
    amstat **nv = realloc(m->stats, (m->nstats + 1) * sizeof *nv);
    if (!nv) return NULL;
    m->stats = nv;
    amstat *s = calloc(1, sizeof *s);
    if (!s || !(s->url = strdup(url))) {
        free(s);
        return NULL;
    }
    memmove(m->stats + pos + 1, m->stats + pos, (m->nstats - pos) * sizeof *m->stats);
    m->stats[pos] = s;
    m->nstats++;
    return s;
}

/* ---- groups and alertmanagers -------------------------------------------------- */

static void groups_free(disc_group *g, size_t n) {
    for (size_t i = 0; i < n; i++) {
        labels_unref(g[i].labels);
        for (size_t j = 0; j < g[i].ntargets; j++) labels_unref(g[i].targets[j]);
        free(g[i].targets);
    }
    free(g);
}

static int groups_copy(const disc_group *const *src, size_t n, disc_group **ret) {
    disc_group *g = calloc(n ? n : 1, sizeof *g);
    if (!g) return BASE_E_NOMEM;
    for (size_t i = 0; i < n; i++) {
        g[i].labels = src[i]->labels ? labels_ref(src[i]->labels) : NULL;
        if (src[i]->ntargets) {
            if (!(g[i].targets = calloc(src[i]->ntargets, sizeof *g[i].targets))) {
                groups_free(g, i + 1);
                return BASE_E_NOMEM;
            }
            for (size_t j = 0; j < src[i]->ntargets; j++) g[i].targets[j] = labels_ref(src[i]->targets[j]);
            g[i].ntargets = src[i]->ntargets;
        }
    }
    *ret = g;
    return 0;
}

static gstore *gstore_find(notify_manager *m, const char *name) {
    for (size_t i = 0; i < m->ngs; i++)
        if (strcmp(m->gs[i].name, name) == 0) return &m->gs[i];
    return NULL;
}

typedef struct url_ix {
    const char *url;
    size_t i;
} url_ix;

static int url_cmp(const void *a, const void *b) {
    const url_ix *x = a, *y = b;
    int c = strcmp(x->url, y->url);
    return c ? c : (x->i > y->i) - (x->i < y->i);
}

/* Recomputes a set's alertmanagers from its stored groups (2.42's
 * alertmanagerSet.sync). Keeps the previous lists when out of memory. */
static void set_sync(notify_manager *m, notify__set *s) {
    gstore *g = gstore_find(m, s->name);
    char **act = NULL, **drp = NULL;
    size_t na = 0, nd = 0;
    char err[sizeof s->group_err] = "";
    const char *logged = NULL;
    for (size_t i = 0; g && i < g->n; i++) {
        char e[sizeof s->group_err - 8] = "";
        int rc = notify__from_group(s, &g->groups[i], &act, &na, &drp, &nd, e, sizeof e);
        if (rc == BASE_E_NOMEM) {
            notify_strv_free(act, na);
            notify_strv_free(drp, nd);
            return;
        }
        if (rc && !err[0]) snprintf(err, sizeof err, "%s", e[0] ? e : base_strerror(rc));
    }
    /* deduplicate the active ones by URL, keeping the first of each in
     * discovery order: sort (url, position), free all but the first of a
     * run, compact */
    if (na > 1) {
        url_ix *ix = malloc(na * sizeof *ix);
        if (!ix) {
            notify_strv_free(act, na);
            notify_strv_free(drp, nd);
            return;
        }
        for (size_t i = 0; i < na; i++) ix[i] = (url_ix){act[i], i};
        qsort(ix, na, sizeof *ix, url_cmp);
        for (size_t i = 1; i < na; i++) {
            if (strcmp(ix[i].url, ix[i - 1].url) == 0) {
                free(act[ix[i].i]);
                act[ix[i].i] = NULL;
            }
        }
        free(ix);
        size_t w = 0;
        for (size_t i = 0; i < na; i++)
            if (act[i]) act[w++] = act[i];
        na = w;
    }
    notify_strv_free(s->active, s->nactive);
    notify_strv_free(s->dropped, s->ndropped);
    s->active = act;
    s->nactive = na;
    s->dropped = drp;
    s->ndropped = nd;
    for (size_t i = 0; i < na; i++) stat_get(m, act[i]);
    if (err[0] && strcmp(err, s->group_err) != 0) logged = err;
    snprintf(s->group_err, sizeof s->group_err, "%s", err);
    if (logged)
        base_log(BASE_LOG_ERROR, "Creating discovered Alertmanagers failed", "component", "notifier", "set",
                 s->name, "err", logged, NULL);
}

static void set_sync_by_name(notify_manager *m, const char *name) {
    for (size_t i = 0; i < m->nsets; i++)
        if (strcmp(m->sets[i]->name, name) == 0) set_sync(m, m->sets[i]);
}

void notify_sync(notify_manager *m, const char *set, const disc_group *const *groups, size_t n) {
    if (!m || !set) return;
    disc_group *copy = NULL;
    if (n && groups_copy(groups, n, &copy)) return; /* out of memory: keep what we had */
    disc_group *old = NULL;
    size_t nold = 0;
    pthread_mutex_lock(&m->mu);
    gstore *g = gstore_find(m, set);
    if (g) {
        old = g->groups;
        nold = g->n;
        if (n) {
            g->groups = copy;
            g->n = n;
        } else {
            free(g->name);
            *g = m->gs[--m->ngs];
        }
    } else if (n) {
        gstore *ng = m->ngs < NOTIFY__MAX_SETS_GROUPS ? realloc(m->gs, (m->ngs + 1) * sizeof *ng) : NULL;
        char *nm = ng ? strdup(set) : NULL;
        if (ng) m->gs = ng;
        if (!nm) {
            pthread_mutex_unlock(&m->mu);
            groups_free(copy, n);
            return;
        }
        m->gs[m->ngs++] = (gstore){nm, copy, n};
    }
    set_sync_by_name(m, set);
    pthread_mutex_unlock(&m->mu);
    groups_free(old, nold);
}

/* ---- configuration ------------------------------------------------------------- */

int notify_apply_config(notify_manager *m, const cfg_config *cfg, char *err, size_t errlen) {
    labels_set *ext = NULL;
    relabel_rule *ar = NULL;
    size_t nar = 0;
    notify__set **sets = NULL;
    size_t nsets = 0;
    int rc = 0;
    if (cfg && cfg->global.external_labels.n) {
        labels_builder b;
        labels_builder_init(&b);
        for (size_t i = 0; i < cfg->global.external_labels.n && !rc; i++) {
            const cfg_kv *kv = &cfg->global.external_labels.v[i];
            rc = labels_builder_set(&b, base_str_c(kv->name), base_str_c(kv->value));
        }
        if (!rc) rc = labels_builder_finish(&b, 0, &ext, err, errlen);
        labels_builder_free(&b);
        if (rc) goto fail;
    }
    if (cfg && cfg->alerting.nalert_relabel) {
        if (!(ar = calloc(cfg->alerting.nalert_relabel, sizeof *ar))) {
            rc = base_errf(err, errlen, BASE_E_NOMEM, "out of memory");
            goto fail;
        }
        for (size_t i = 0; i < cfg->alerting.nalert_relabel; i++) {
            if ((rc = relabel_rule_copy(&ar[i], &cfg->alerting.alert_relabel[i], err, errlen))) goto fail;
            nar = i + 1;
        }
    }
    if (cfg && cfg->alerting.nams) {
        if (!(sets = calloc(cfg->alerting.nams, sizeof *sets))) {
            rc = base_errf(err, errlen, BASE_E_NOMEM, "out of memory");
            goto fail;
        }
        for (size_t i = 0; i < cfg->alerting.nams; i++) {
            if ((rc = set_new(&cfg->alerting.ams[i], i, &sets[i], err, errlen))) goto fail;
            nsets = i + 1;
        }
    }
    pthread_mutex_lock(&m->mu);
    labels_set *oext = m->ext;
    relabel_rule *oar = m->arelabel;
    size_t onar = m->narelabel;
    notify__set **osets = m->sets;
    size_t onsets = m->nsets;
    m->ext = ext;
    m->arelabel = ar;
    m->narelabel = nar;
    m->sets = sets;
    m->nsets = nsets;
    for (size_t i = 0; i < nsets; i++) set_sync(m, sets[i]);
    pthread_mutex_unlock(&m->mu);
    ext = oext, ar = oar, nar = onar, sets = osets, nsets = onsets;
    rc = 0;
fail:
    labels_unref(ext);
    for (size_t i = 0; i < nar; i++) relabel_rule_clear(&ar[i]);
    free(ar);
    for (size_t i = 0; i < nsets; i++) set_unref(sets[i]);
    free(sets);
    return rc;
}

/* ---- the queue ----------------------------------------------------------------- */

/* One alert's labels after external labels and alert relabeling; 1 and
 * *ret, 0 when a rule dropped it, < 0 on error. Under m->mu. */
static int relabel_alert(notify_manager *m, labels_builder *b, const labels_set *in, labels_set **ret) {
    int rc = labels_builder_from(b, in ? in : labels_empty());
    if (rc) return rc;
    if (m->ext) {
        labels_iter it;
        labels_iter_init(&it, m->ext);
        base_str n, v;
        while (labels_iter_next(&it, &n, &v))
            if (labels_get(in ? in : labels_empty(), n).n == 0 && (rc = labels_builder_set(b, n, v)))
                return rc;
    }
    if (m->narelabel) {
        int keep = relabel_process(m->arelabel, m->narelabel, b);
        if (keep <= 0) return keep;
    }
    rc = labels_builder_finish(b, 0, ret, NULL, 0);
    return rc ? rc : 1;
}

static void queue_drop_head(notify_manager *m, size_t d) {
    for (size_t i = 0; i < d; i++) {
        notify__alert_free(m->q[m->head]);
        m->q[m->head] = NULL;
        m->head = (m->head + 1) % m->cap;
        m->len--;
    }
}

void notify_send(notify_manager *m, const rules_notice *alerts, size_t n) {
    if (!m || !n) return;
    notify__alert **tmp = calloc(n, sizeof *tmp);
    if (!tmp) {
        pthread_mutex_lock(&m->mu);
        m->dropped += n;
        pthread_mutex_unlock(&m->mu);
        return;
    }
    labels_builder b;
    labels_builder_init(&b);
    size_t k = 0;
    uint64_t lost = 0;
    pthread_mutex_lock(&m->mu);
    for (size_t i = 0; i < n; i++) {
        labels_set *ls = NULL;
        int rc = relabel_alert(m, &b, alerts[i].labels, &ls);
        if (rc == 0) continue; /* dropped by a rule */
        if (rc < 0) {
            lost++;
            continue;
        }
        notify__alert *a = notify__alert_new(&alerts[i], ls);
        labels_unref(ls);
        if (!a) {
            lost++;
            continue;
        }
        tmp[k++] = a;
    }
    labels_builder_free(&b);
    m->dropped += lost;
    size_t first = 0;
    char num[32];
    if (k > m->cap) {
        size_t d = k - m->cap;
        for (size_t i = 0; i < d; i++) notify__alert_free(tmp[i]);
        first = d;
        m->dropped += d;
        snprintf(num, sizeof num, "%zu", d);
        base_log(BASE_LOG_WARN, "Alert batch larger than queue capacity, dropping alerts", "component",
                 "notifier", "num_dropped", num, NULL);
    }
    size_t add = k - first;
    if (m->len + add > m->cap) {
        size_t d = m->len + add - m->cap;
        queue_drop_head(m, d);
        m->dropped += d;
        if (!m->full_logged) {
            snprintf(num, sizeof num, "%zu", d);
            base_log(BASE_LOG_WARN, "Alert notification queue full, dropping alerts", "component", "notifier",
                     "num_dropped", num, NULL);
            m->full_logged = 1;
        }
    }
    for (size_t i = first; i < k; i++) {
        m->q[(m->head + m->len) % m->cap] = tmp[i];
        m->len++;
    }
    if (add) pthread_cond_signal(&m->cond);
    pthread_mutex_unlock(&m->mu);
    free(tmp);
}

/* ---- the sender thread --------------------------------------------------------- */

static int past_deadline(notify_manager *m) {
    return m->stop && (!m->o.drain_on_shutdown || base_mono_ns() >= m->drain_deadline_ns);
}

static int should_abort(void *ctx) {
    notify_manager *m = ctx;
    pthread_mutex_lock(&m->mu);
    int r = past_deadline(m);
    pthread_mutex_unlock(&m->mu);
    return r;
}

static void observe(amstat *st, const notify__req *r, size_t n) {
    st->sent += n;
    if (!r->ok) st->errors++;
    st->lat_count++;
    st->lat_sum += r->latency;
    st->lat_t[st->lat_next] = base_mono_ns();
    st->lat_v[st->lat_next] = r->latency;
    st->lat_next = (st->lat_next + 1) % NOTIFY__LAT_KEEP;
    if (st->lat_n < NOTIFY__LAT_KEEP) st->lat_n++;
}

static void *sender_main(void *arg) {
    notify_manager *m = arg;
    notify__alert *batch[NOTIFY_MAX_BATCH];
    pthread_mutex_lock(&m->mu);
    for (;;) {
        while (!m->stop && m->len == 0) pthread_cond_wait(&m->cond, &m->mu);
        if (m->stop && (m->len == 0 || past_deadline(m))) break;
        size_t n = m->len < NOTIFY_MAX_BATCH ? m->len : NOTIFY_MAX_BATCH;
        for (size_t i = 0; i < n; i++) {
            batch[i] = m->q[m->head];
            m->q[m->head] = NULL;
            m->head = (m->head + 1) % m->cap;
        }
        m->len -= n;
        if (m->len == 0) m->full_logged = 0;
        size_t nreqs = 0;
        for (size_t i = 0; i < m->nsets; i++) nreqs += m->sets[i]->nactive;
        notify__req *reqs = nreqs ? calloc(nreqs, sizeof *reqs) : NULL;
        size_t k = 0;
        for (size_t i = 0; reqs && i < m->nsets; i++) {
            notify__set *s = m->sets[i];
            for (size_t j = 0; j < s->nactive; j++) {
                char *u = strdup(s->active[j]);
                if (!u) continue;
                atomic_fetch_add(&s->refs, 1);
                reqs[k].set = s;
                reqs[k].url = u;
                k++;
            }
        }
        nreqs = k;
        pthread_mutex_unlock(&m->mu);

        if (nreqs) notify__send_batch(m->sender, batch, n, reqs, nreqs, m->ua, should_abort, m);

        int any_ok = 0;
        for (size_t i = 0; i < nreqs; i++) any_ok |= reqs[i].ok;
        pthread_mutex_lock(&m->mu);
        if (!any_ok) m->dropped += n;
        for (size_t i = 0; i < nreqs; i++) {
            notify__req *r = &reqs[i];
            amstat *st = stat_get(m, r->url);
            if (st) observe(st, r, n);
            const char *lvl_msg = NULL;
            if (!r->ok && (!st || strcmp(st->last_err, r->err) != 0)) lvl_msg = "Error sending alert";
            if (r->ok && st && st->last_err[0]) lvl_msg = "Sending alerts recovered";
            if (st) snprintf(st->last_err, sizeof st->last_err, "%s", r->ok ? "" : r->err);
            if (lvl_msg) {
                char cnt[32];
                snprintf(cnt, sizeof cnt, "%zu", n);
                if (r->ok)
                    base_log(BASE_LOG_INFO, lvl_msg, "component", "notifier", "alertmanager", r->url, NULL);
                else
                    base_log(BASE_LOG_ERROR, lvl_msg, "component", "notifier", "alertmanager", r->url,
                             "count", cnt, "err", r->err, NULL);
            }
        }
        pthread_mutex_unlock(&m->mu);
        for (size_t i = 0; i < nreqs; i++) {
            free(reqs[i].url);
            set_unref(reqs[i].set);
        }
        free(reqs);
        for (size_t i = 0; i < n; i++) notify__alert_free(batch[i]);
        pthread_mutex_lock(&m->mu);
    }
    pthread_mutex_unlock(&m->mu);
    relabel_thread_cleanup();
    return NULL;
}

/* ---- public ---------------------------------------------------------------------- */

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static int curl_ok;
static void curl_init_once(void) {
    curl_ok = curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK;
}

int notify_new(const notify_opts *o, notify_manager **ret) {
    notify_opts def;
    if (!o) {
        notify_opts_default(&def);
        o = &def;
    }
    pthread_once(&curl_once, curl_init_once);
    if (!curl_ok) return BASE_E_IO;
    notify_manager *m = calloc(1, sizeof *m);
    if (!m) return BASE_E_NOMEM;
    m->o = *o;
    m->o.user_agent = NULL;
    m->cap = o->queue_capacity ? o->queue_capacity : NOTIFY__DEFAULT_CAPACITY;
    m->ua = strdup(o->user_agent ? o->user_agent : "Kelvin/" KELVIN_VERSION);
    m->q = calloc(m->cap, sizeof *m->q);
    pthread_mutex_init(&m->mu, NULL);
    pthread_cond_init(&m->cond, NULL);
    int rc = 0;
    if (!m->ua || !m->q) rc = BASE_E_NOMEM;
    if (!rc) rc = notify__sender_new(&m->sender);
    if (!rc) {
        if (pthread_create(&m->th, NULL, sender_main, m) != 0)
            rc = BASE_E_IO;
        else
            m->have_thread = 1;
    }
    if (rc) {
        notify_free(m);
        return rc;
    }
    *ret = m;
    return 0;
}

void notify_free(notify_manager *m) {
    if (!m) return;
    if (m->have_thread) {
        pthread_mutex_lock(&m->mu);
        m->stop = 1;
        int64_t t = m->o.drain_timeout_ms > 0 ? m->o.drain_timeout_ms : 0;
        m->drain_deadline_ns = base_mono_ns() + t * 1000000;
        pthread_cond_broadcast(&m->cond);
        pthread_mutex_unlock(&m->mu);
        notify__sender_wakeup(m->sender);
        pthread_join(m->th, NULL);
    }
    for (size_t i = 0; m->q && i < m->len; i++) notify__alert_free(m->q[(m->head + i) % m->cap]);
    free(m->q);
    labels_unref(m->ext);
    for (size_t i = 0; i < m->narelabel; i++) relabel_rule_clear(&m->arelabel[i]);
    free(m->arelabel);
    for (size_t i = 0; i < m->nsets; i++) set_unref(m->sets[i]);
    free(m->sets);
    for (size_t i = 0; i < m->ngs; i++) {
        free(m->gs[i].name);
        groups_free(m->gs[i].groups, m->gs[i].n);
    }
    free(m->gs);
    for (size_t i = 0; i < m->nstats; i++) {
        free(m->stats[i]->url);
        free(m->stats[i]);
    }
    free(m->stats);
    notify__sender_free(m->sender);
    free(m->ua);
    pthread_cond_destroy(&m->cond);
    pthread_mutex_destroy(&m->mu);
    free(m);
}

static int strv_dup(char *const *src, size_t n, char **dst, size_t *k) {
    for (size_t i = 0; i < n; i++) {
        if (!(dst[*k] = strdup(src[i]))) return BASE_E_NOMEM;
        (*k)++;
    }
    return 0;
}

int notify_alertmanagers(notify_manager *m, char ***ret_active, size_t *ret_nactive, char ***ret_dropped,
                         size_t *ret_ndropped) {
    pthread_mutex_lock(&m->mu);
    size_t na = 0, nd = 0;
    for (size_t i = 0; i < m->nsets; i++) na += m->sets[i]->nactive, nd += m->sets[i]->ndropped;
    char **a = na ? calloc(na, sizeof *a) : NULL, **d = nd ? calloc(nd, sizeof *d) : NULL;
    size_t ka = 0, kd = 0;
    int rc = (na && !a) || (nd && !d) ? BASE_E_NOMEM : 0;
    for (size_t i = 0; !rc && i < m->nsets; i++) {
        rc = strv_dup(m->sets[i]->active, m->sets[i]->nactive, a, &ka);
        if (!rc) rc = strv_dup(m->sets[i]->dropped, m->sets[i]->ndropped, d, &kd);
    }
    pthread_mutex_unlock(&m->mu);
    if (rc) {
        notify_strv_free(a, ka);
        notify_strv_free(d, kd);
        return rc;
    }
    *ret_active = a;
    *ret_nactive = na;
    *ret_dropped = d;
    *ret_ndropped = nd;
    return 0;
}

static int dbl_cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int notify_stats_get(notify_manager *m, notify_stats *ret) {
    notify_stats s;
    memset(&s, 0, sizeof s);
    int rc = 0;
    int64_t now = base_mono_ns();
    pthread_mutex_lock(&m->mu);
    s.dropped = m->dropped;
    s.queue_length = m->len;
    s.queue_capacity = m->cap;
    for (size_t i = 0; i < m->nsets; i++) s.alertmanagers_discovered += m->sets[i]->nactive;
    if (m->nstats && !(s.ams = calloc(m->nstats, sizeof *s.ams))) rc = BASE_E_NOMEM;
    for (size_t i = 0; !rc && i < m->nstats; i++) {
        const amstat *st = m->stats[i];
        notify_am_stats *o = &s.ams[i];
        if (!(o->url = strdup(st->url))) {
            rc = BASE_E_NOMEM;
            break;
        }
        s.nams = i + 1;
        o->sent = st->sent;
        o->errors = st->errors;
        o->latency_count = st->lat_count;
        o->latency_sum = st->lat_sum;
        double v[NOTIFY__LAT_KEEP];
        size_t k = 0;
        for (size_t j = 0; j < st->lat_n; j++)
            if (now - st->lat_t[j] <= NOTIFY__LAT_AGE_NS) v[k++] = st->lat_v[j];
        qsort(v, k, sizeof *v, dbl_cmp);
        for (int q = 0; q < NOTIFY_NQUANTILES; q++) {
            if (!k) {
                o->latency_q[q] = NAN;
                continue;
            }
            double r = ceil(notify_quantiles[q] * (double)k);
            size_t idx = r < 1 ? 0 : (size_t)r - 1;
            if (idx >= k) idx = k - 1;
            o->latency_q[q] = v[idx];
        }
    }
    pthread_mutex_unlock(&m->mu);
    if (rc) {
        notify_stats_free(&s);
        return rc;
    }
    *ret = s;
    return 0;
}

void notify_stats_free(notify_stats *s) {
    if (!s) return;
    for (size_t i = 0; i < s->nams; i++) free(s->ams[i].url);
    free(s->ams);
    memset(s, 0, sizeof *s);
}
