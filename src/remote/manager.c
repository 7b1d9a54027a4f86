/* manager.c -- the remote write manager (2.42's storage/remote/write.go
 * WriteStorage): one queue per remote_write entry, reloads, the WAL hold
 * over all queues, the metrics, the flags and remote_hold_from.
 *
 * RELOAD (remote_manager_apply). A running queue whose remote_conf equals a
 * new entry's (every field, external labels included) is kept untouched.
 * The others stop first -- all at once, each flushing for up to the flush
 * deadline and saving its position, an entry gone from the configuration
 * removing its position file instead -- and only then do the new queues
 * start, so a queue whose entry changed (its id unchanged) resumes from the
 * position its predecessor saved. Stopping queues stay in the list, their
 * hold with them, until the new ones are running: the WAL is held at every
 * moment.
 *
 * LOCKS. apply_mu serialises apply and free. list_mu guards the queue list
 * for the hold computation (called from reader threads) and the metrics;
 * it is never held while waiting for a thread.
 */
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/err.h"
#include "base/log.h"
#include "base/time.h"
#include "remote/remote_int.h"

struct remote_manager {
    remote_opts o;
    char *dir; /* <data_dir>/remote-write */
    char *ua;
    tsdb_wal *wal;
    const char *wal_dir;
    pthread_mutex_t apply_mu;
    pthread_mutex_t list_mu;
    remote_queue **qs;
    size_t nq;
};

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static void curl_init_once(void) {
    curl_global_init(CURL_GLOBAL_ALL);
}

void remote_opts_default(remote_opts *o) {
    memset(o, 0, sizeof *o);
    o->flush_deadline_ms = 60000;
    o->max_hold_ms = 24LL * 3600 * 1000;
}

/* ---- flags ---------------------------------------------------------------- */

void remote_flagvars_init(remote_flagvars *v) {
    v->flush_deadline_ms = 60000;
    v->max_wal_hold_ms = 24LL * 3600 * 1000;
}

size_t remote_flags(remote_flagvars *v, base_flag *out, size_t cap) {
    const base_flag f[REMOTE_NFLAGS] = {
        {"storage.remote.flush-deadline", BASE_FLAG_DURATION, &v->flush_deadline_ms,
         "How long to wait flushing sample on shutdown or config reload."},
        {"storage.remote.max-wal-hold", BASE_FLAG_DURATION, &v->max_wal_hold_ms,
         "How long remote write keeps WAL segments it could not send yet (a receiver that is down): older "
         "ones are given up and their samples counted as dropped (0: keep them until sent). Kelvin only."},
    };
    for (size_t i = 0; i < REMOTE_NFLAGS && i < cap; i++) out[i] = f[i];
    return REMOTE_NFLAGS;
}

int remote_flags_apply(const remote_flagvars *v, remote_opts *o, char *err, size_t errlen) {
    if (v->flush_deadline_ms < 0)
        return base_errf(err, errlen, BASE_E_INVAL, "--storage.remote.flush-deadline must not be negative");
    if (v->max_wal_hold_ms < 0)
        return base_errf(err, errlen, BASE_E_INVAL, "--storage.remote.max-wal-hold must not be negative");
    o->flush_deadline_ms = v->flush_deadline_ms;
    o->max_hold_ms = v->max_wal_hold_ms;
    return 0;
}

/* ---- paths and hold_from ---------------------------------------------------- */

static char *join_dir(const char *data_dir) {
    size_t n = strlen(data_dir);
    while (n > 1 && data_dir[n - 1] == '/') n--;
    char *d = malloc(n + sizeof "/remote-write");
    if (d) {
        memcpy(d, data_dir, n);
        memcpy(d + n, "/remote-write", sizeof "/remote-write");
    }
    return d;
}

static char *pos_path(const char *dir, uint64_t id) {
    size_t n = strlen(dir) + 1 + 16 + 1;
    char *p = malloc(n);
    if (p) snprintf(p, n, "%s/%016" PRIx64, dir, id);
    return p;
}

/* How many entries before i share url and name with it. */
static unsigned rank_of(const cfg_config *cfg, size_t i) {
    const cfg_remote_write *w = &cfg->remote_writes[i];
    unsigned r = 0;
    for (size_t j = 0; j < i; j++) {
        const cfg_remote_write *x = &cfg->remote_writes[j];
        if (!strcmp(x->url ? x->url : "", w->url ? w->url : "") &&
            !strcmp(x->name ? x->name : "", w->name ? w->name : ""))
            r++;
    }
    return r;
}

uint64_t remote_hold_from(const char *data_dir, const cfg_config *cfg) {
    if (!data_dir || !cfg) return 0;
    char *dir = join_dir(data_dir);
    if (!dir) return 0;
    uint64_t h = 0;
    for (size_t i = 0; i < cfg->nremote_writes; i++) {
        const cfg_remote_write *w = &cfg->remote_writes[i];
        char *p =
            pos_path(dir, remote__conf_id(w->url ? w->url : "", w->name ? w->name : "", rank_of(cfg, i)));
        remote_filter f[REMOTE_MAX_FILTERS + 1];
        size_t n = 0;
        if (p && remote__pos_load(p, f, REMOTE_MAX_FILTERS + 1, &n) == 0) {
            remote_pos st = remote__pos_start(f, n);
            if (st.seg && (!h || st.seg < h)) h = st.seg;
            for (size_t k = 0; k < n; k++) remote__filter_free(&f[k]);
        }
        free(p);
    }
    free(dir);
    return h;
}

/* ---- hold and logging ------------------------------------------------------- */

void remote__hold_update(remote_manager *m) {
    if (!m || !m->wal) return;
    pthread_mutex_lock(&m->list_mu);
    uint64_t h = 0;
    for (size_t i = 0; i < m->nq; i++) {
        uint64_t s = atomic_load(&m->qs[i]->hold_seg);
        if (s && (!h || s < h)) h = s;
    }
    tsdb_wal_hold(m->wal, h);
    pthread_mutex_unlock(&m->list_mu);
}

void remote__log_send(remote_queue *q, int ok, const char *why) {
    if (ok == 1 && !atomic_load(&q->failing)) return;
    pthread_mutex_lock(&q->log_mu);
    int64_t now = base_mono_ns();
    if (ok == 1) {
        if (atomic_exchange(&q->failing, 0))
            base_log(BASE_LOG_INFO, "Remote storage sends again", "remote_name", q->c.remote_name, "url",
                     q->c.url, NULL);
    } else if (ok == 0) {
        if (!atomic_exchange(&q->failing, 1))
            base_log(BASE_LOG_WARN, "Failed to send batch, retrying", "remote_name", q->c.remote_name, "url",
                     q->c.url, "err", why ? why : "", NULL);
    } else if (now - q->last_fail_log_ns >= 10 * 1000000000LL || !q->last_fail_log_ns) {
        q->last_fail_log_ns = now;
        base_log(BASE_LOG_ERROR, "non-recoverable error", "remote_name", q->c.remote_name, "url", q->c.url,
                 "err", why ? why : "", NULL);
    }
    pthread_mutex_unlock(&q->log_mu);
}

/* ---- queues ----------------------------------------------------------------- */

static remote_queue *queue_new(remote_manager *m, remote_conf *c) {
    remote_queue *q = calloc(1, sizeof *q);
    if (!q) return NULL;
    q->pos_path = pos_path(m->dir, c->id);
    if (!q->pos_path) {
        free(q);
        return NULL;
    }
    q->c = *c;
    memset(c, 0, sizeof *c);
    q->m = m;
    q->db = m->o.db;
    q->wal = m->wal;
    q->wal_dir = m->wal_dir;
    q->flush_deadline_ms = m->o.flush_deadline_ms;
    q->max_hold_ms = m->o.max_hold_ms;
    q->poll_ms = m->o.poll_ms > 0 ? m->o.poll_ms : REMOTE_POLL_MS;
    q->reshard_ms = m->o.reshard_interval_ms > 0 ? m->o.reshard_interval_ms : REMOTE_SHARD_UPDATE_MS;
    q->user_agent = m->ua;
    q->md_fn = m->o.metadata;
    q->md_ctx = m->o.metadata_ctx;
    q->r.fd = -1;
    pthread_mutex_init(&q->mu, NULL);
    pthread_cond_init(&q->cv, NULL);
    pthread_mutex_init(&q->st.mu, NULL);
    pthread_mutex_init(&q->log_mu, NULL);
    return q;
}

static void queue_free(remote_queue *q) {
    remote__conf_clear(&q->c);
    free(q->pos_path);
    pthread_mutex_destroy(&q->mu);
    pthread_cond_destroy(&q->cv);
    pthread_mutex_destroy(&q->st.mu);
    pthread_mutex_destroy(&q->log_mu);
    free(q);
}

/* Stops queues [0, n) all at once (each flushes up to the deadline). */
static void queues_stop(remote_queue **v, size_t n) {
    for (size_t i = 0; i < n; i++) {
        atomic_store(&v[i]->stopping, 1);
        atomic_store(&v[i]->md_abort, 1);
        pthread_mutex_lock(&v[i]->mu);
        pthread_cond_broadcast(&v[i]->cv);
        pthread_mutex_unlock(&v[i]->mu);
    }
    for (size_t i = 0; i < n; i++) remote__queue_stop(v[i]);
}

int remote_manager_new(const remote_opts *o, remote_manager **ret, char *err, size_t errlen) {
    if (!o || !o->db || !o->data_dir)
        return base_errf(err, errlen, BASE_E_INVAL, "remote write needs a database");
    pthread_once(&curl_once, curl_init_once);
    remote_manager *m = calloc(1, sizeof *m);
    if (!m) return base_errf(err, errlen, BASE_E_NOMEM, "out of memory");
    m->o = *o;
    m->o.data_dir = NULL;
    m->o.user_agent = NULL;
    m->dir = join_dir(o->data_dir);
    m->ua = strdup(o->user_agent ? o->user_agent : "kelvin/" KELVIN_VERSION);
    m->wal = tsdb_db_wal(o->db);
    m->wal_dir = tsdb_db_wal_dir(o->db);
    if (!m->dir || !m->ua || !m->wal || !m->wal_dir) {
        int e = m->dir && m->ua ? BASE_E_INVAL : BASE_E_NOMEM;
        free(m->dir);
        free(m->ua);
        free(m);
        return base_errf(err, errlen, e,
                         e == BASE_E_INVAL ? "remote write needs a database with a WAL" : "out of memory");
    }
    if (mkdir(m->dir, 0755) != 0 && errno != EEXIST) {
        int e = errno;
        base_errf(err, errlen, BASE_E_IO, "mkdir %s: %s", m->dir, strerror(e));
        free(m->dir);
        free(m->ua);
        free(m);
        return BASE_E_IO;
    }
    pthread_mutex_init(&m->apply_mu, NULL);
    pthread_mutex_init(&m->list_mu, NULL);
    *ret = m;
    return 0;
}

int remote_manager_apply(remote_manager *m, const cfg_config *cfg, char *err, size_t errlen) {
    pthread_mutex_lock(&m->apply_mu);
    size_t nn = cfg ? cfg->nremote_writes : 0;
    static const cfg_kvs none = {0};
    const cfg_kvs *ext = cfg ? &cfg->global.external_labels : &none;
    remote_conf *nc = nn ? calloc(nn, sizeof *nc) : NULL;
    int *ok = nn ? calloc(nn, sizeof *ok) : NULL;   /* conf built */
    int *use = nn ? calloc(nn, sizeof *use) : NULL; /* taken by a running queue */
    int *keep = m->nq ? calloc(m->nq, sizeof *keep) : NULL;
    int rc = 0;
    if ((nn && (!nc || !ok || !use)) || (m->nq && !keep)) {
        free(nc);
        free(ok);
        free(use);
        free(keep);
        pthread_mutex_unlock(&m->apply_mu);
        return base_errf(err, errlen, BASE_E_NOMEM, "out of memory");
    }
    for (size_t j = 0; j < nn; j++) {
        char e2[256] = "";
        int e = remote__conf_make(&nc[j], &cfg->remote_writes[j], ext, rank_of(cfg, j), e2, sizeof e2);
        ok[j] = e == 0;
        if (e && !rc) rc = base_errf(err, errlen, e, "remote_write %s: %s", cfg->remote_writes[j].url, e2);
    }
    /* which running queues stay */
    size_t nold = 0;
    remote_queue **old = m->nq ? calloc(m->nq, sizeof *old) : NULL;
    for (size_t i = 0; i < m->nq; i++) {
        for (size_t j = 0; j < nn && !keep[i]; j++)
            if (ok[j] && !use[j] && remote__conf_equal(&m->qs[i]->c, &nc[j])) keep[i] = 1, use[j] = 1;
        if (!keep[i] && old) {
            remote_queue *q = m->qs[i];
            q->forget = 1;
            for (size_t j = 0; j < nn; j++)
                if (ok[j] && nc[j].id == q->c.id) q->forget = 0;
            old[nold++] = q;
        }
    }
    if (m->nq && !old) { /* no memory to stop anything: keep everything running */
        for (size_t i = 0; i < m->nq; i++) keep[i] = 1;
        for (size_t j = 0; j < nn; j++) use[j] = 1;
    }
    queues_stop(old, nold);
    /* start the new ones (the stopped ones still hold the WAL meanwhile) */
    for (size_t j = 0; j < nn; j++) {
        if (!ok[j] || use[j]) continue;
        remote_queue *q = queue_new(m, &nc[j]);
        remote_queue **nv = q ? realloc(m->qs, (m->nq + 1) * sizeof *nv) : NULL;
        if (!nv) {
            if (q) queue_free(q);
            if (!rc) rc = base_errf(err, errlen, BASE_E_NOMEM, "out of memory");
            continue;
        }
        pthread_mutex_lock(&m->list_mu);
        m->qs = nv;
        m->qs[m->nq++] = q;
        pthread_mutex_unlock(&m->list_mu);
        char e2[256] = "";
        int e = remote__queue_start(q, e2, sizeof e2);
        if (!e && q->md_fn && q->c.md_send) {
            if (pthread_create(&q->md_th, NULL, remote__metadata_main, q) == 0) q->md_started = 1;
        }
        if (e) {
            base_log(BASE_LOG_ERROR, "cannot start remote write queue", "remote_name", q->c.remote_name,
                     "url", q->c.url, "err", e2, NULL);
            if (!rc) rc = base_errf(err, errlen, e, "remote_write %s: %s", q->c.url, e2);
            pthread_mutex_lock(&m->list_mu);
            m->nq--;
            pthread_mutex_unlock(&m->list_mu);
            remote__queue_stop(q);
            queue_free(q);
        }
    }
    /* drop the stopped ones from the list */
    pthread_mutex_lock(&m->list_mu);
    size_t k = 0;
    for (size_t i = 0; i < m->nq; i++) {
        int gone = 0;
        for (size_t x = 0; x < nold; x++) gone |= m->qs[i] == old[x];
        if (!gone) m->qs[k++] = m->qs[i];
    }
    m->nq = k;
    pthread_mutex_unlock(&m->list_mu);
    remote__hold_update(m);
    for (size_t x = 0; x < nold; x++) queue_free(old[x]);
    for (size_t j = 0; j < nn; j++) remote__conf_clear(&nc[j]);
    free(nc);
    free(ok);
    free(use);
    free(keep);
    free(old);
    pthread_mutex_unlock(&m->apply_mu);
    return rc;
}

void remote_manager_free(remote_manager *m) {
    if (!m) return;
    pthread_mutex_lock(&m->apply_mu);
    queues_stop(m->qs, m->nq);
    pthread_mutex_lock(&m->list_mu);
    for (size_t i = 0; i < m->nq; i++) queue_free(m->qs[i]);
    free(m->qs);
    m->qs = NULL;
    m->nq = 0;
    if (m->wal) tsdb_wal_hold(m->wal, 0);
    pthread_mutex_unlock(&m->list_mu);
    pthread_mutex_unlock(&m->apply_mu);
    pthread_mutex_destroy(&m->apply_mu);
    pthread_mutex_destroy(&m->list_mu);
    free(m->dir);
    free(m->ua);
    free(m);
}

/* ---- metrics ---------------------------------------------------------------- */

typedef struct counter_def {
    const char *name;
    expo_type type;
    const char *help;
    size_t off; /* of an _Atomic uint64_t in remote_stats */
} counter_def;

#define RS "prometheus_remote_storage_"
static const counter_def COUNTERS[] = {
    {RS "samples_total", EXPO_COUNTER, "Total number of samples sent to remote storage.",
     offsetof(remote_stats, samples)},
    {RS "samples_failed_total", EXPO_COUNTER,
     "Total number of samples which failed on send to remote storage, non-recoverable errors.",
     offsetof(remote_stats, failed)},
    {RS "samples_retried_total", EXPO_COUNTER,
     "Total number of samples which failed on send to remote storage but were retried because the send error "
     "was recoverable.",
     offsetof(remote_stats, retried)},
    {RS "samples_dropped_total", EXPO_COUNTER,
     "Total number of samples which were dropped after being read from the WAL before being sent via remote "
     "write, either via relabelling or unintentionally because of an unknown reference ID (or, in kelvin, "
     "because their WAL segment was held past --storage.remote.max-wal-hold).",
     offsetof(remote_stats, dropped)},
    {RS "samples_pending", EXPO_GAUGE,
     "The number of samples pending in the queues shards to be sent to the remote storage.",
     offsetof(remote_stats, pending)},
    {RS "bytes_total", EXPO_COUNTER,
     "The total number of bytes of data (not metadata) sent by the queue after compression.",
     offsetof(remote_stats, bytes)},
    {RS "metadata_total", EXPO_COUNTER, "Total number of metadata entries sent to remote storage.",
     offsetof(remote_stats, md_total)},
    {RS "metadata_failed_total", EXPO_COUNTER,
     "Total number of metadata entries which failed on send to remote storage, non-recoverable errors.",
     offsetof(remote_stats, md_failed)},
    {RS "metadata_retried_total", EXPO_COUNTER,
     "Total number of metadata entries which failed on send to remote storage but were retried because the "
     "send error was recoverable.",
     offsetof(remote_stats, md_retried)},
    {RS "metadata_bytes_total", EXPO_COUNTER,
     "The total number of bytes of metadata sent by the queue after compression.",
     offsetof(remote_stats, md_bytes)},
    {RS "enqueue_retries_total", EXPO_COUNTER,
     "Total number of times enqueue has failed because a shards queue was full.",
     offsetof(remote_stats, enqueue_retries)},
    {RS "shards", EXPO_GAUGE, "The number of shards used for parallel sending to the remote storage.",
     offsetof(remote_stats, nshards)},
    {"kelvin_remote_storage_series", EXPO_GAUGE,
     "Series the queue knows from the WAL (dropped ones included).", offsetof(remote_stats, series)},
    {"kelvin_remote_storage_series_bytes", EXPO_GAUGE,
     "Bytes of the queue's series table entries (packed labels).", offsetof(remote_stats, series_bytes)},
    {"kelvin_remote_storage_wal_segments_given_up_total", EXPO_COUNTER,
     "WAL segments given up because the queue held them past --storage.remote.max-wal-hold.",
     offsetof(remote_stats, expired)},
    {"kelvin_remote_storage_wal_damage_total", EXPO_COUNTER,
     "Damaged or missing WAL data the queue had to skip (logged once each).",
     offsetof(remote_stats, damaged)},
    {"kelvin_remote_storage_wal_position_segment", EXPO_GAUGE,
     "The WAL segment of the queue's acknowledged position (what a restart resumes from).",
     offsetof(remote_stats, pos_seg)},
};

static uint64_t stat_u64(remote_queue *q, size_t off) {
    return atomic_load((_Atomic uint64_t *)((char *)&q->st + off));
}

static const char *const LE[REMOTE_NBUCKETS] = {"le=\"0.005\"", "le=\"0.01\"", "le=\"0.025\"", "le=\"0.05\"",
                                                "le=\"0.1\"",   "le=\"0.25\"", "le=\"0.5\"",   "le=\"1\"",
                                                "le=\"2.5\"",   "le=\"5\"",    "le=\"10\"",    "le=\"25\"",
                                                "le=\"60\"",    "le=\"120\"",  "le=\"300\""};

void remote_metrics(remote_manager *m, expo_mset *ms) {
    if (!m) return;
    int64_t mint = 0, maxt = 0;
    tsdb_head_bounds(tsdb_db_head(m->o.db), &mint, &maxt);
    expo_family *f =
        expo_mset_family(ms, RS "highest_timestamp_in_seconds", EXPO_GAUGE,
                         "Highest timestamp that has come into the remote storage via the Appender "
                         "interface, in seconds since epoch.",
                         NULL);
    if (f) expo_mset_add(ms, f, "", NULL, NULL, maxt < mint ? 0 : (double)(maxt / 1000));
    pthread_mutex_lock(&m->list_mu);
    size_t n = m->nq;
    const char **lab = n ? calloc(n, sizeof *lab) : NULL;
    const char **cons = n ? calloc(n, sizeof *cons) : NULL;
    if (n && (!lab || !cons)) n = 0;
    for (size_t i = 0; i < n; i++) {
        lab[i] = expo_mset_labels(ms, "remote_name", m->qs[i]->c.remote_name, "url", m->qs[i]->c.url, NULL);
        cons[i] = expo_mset_labels(ms, "consumer", m->qs[i]->c.remote_name, NULL);
    }
    for (size_t c = 0; n && c < sizeof COUNTERS / sizeof *COUNTERS; c++) {
        f = expo_mset_family(ms, COUNTERS[c].name, COUNTERS[c].type, COUNTERS[c].help, NULL);
        for (size_t i = 0; f && i < n; i++)
            expo_mset_add(ms, f, "", lab[i], NULL, (double)stat_u64(m->qs[i], COUNTERS[c].off));
    }
    struct {
        const char *name, *help;
    } gauges[] = {
        {RS "shards_max", "The maximum number of shards that the queue is allowed to run."},
        {RS "shards_min", "The minimum number of shards that the queue is allowed to run."},
        {RS "shard_capacity",
         "The capacity of each shard of the queue used for parallel sending to the remote storage."},
        {RS "max_samples_per_send",
         "The maximum number of samples to be sent, in a single request, to the remote storage."},
        {RS "shards_desired",
         "The number of shards that the queues shard calculation wants to run based on the "
         "rate of samples in vs. samples out."},
        {RS "queue_highest_sent_timestamp_seconds", "Timestamp from a WAL sample, the highest timestamp "
                                                    "successfully sent by this queue, in seconds since "
                                                    "epoch."},
    };
    for (size_t g = 0; n && g < sizeof gauges / sizeof *gauges; g++) {
        f = expo_mset_family(ms, gauges[g].name, EXPO_GAUGE, gauges[g].help, NULL);
        for (size_t i = 0; f && i < n; i++) {
            remote_queue *q = m->qs[i];
            double v = 0;
            switch (g) {
            case 0: v = (double)q->c.max_shards; break;
            case 1: v = (double)q->c.min_shards; break;
            case 2: v = (double)q->c.capacity; break;
            case 3: v = (double)q->c.max_samples; break;
            case 4:
                pthread_mutex_lock(&q->st.mu);
                v = q->st.desired;
                pthread_mutex_unlock(&q->st.mu);
                break;
            default: {
                int64_t hs = atomic_load(&q->st.highest_sent_ms);
                v = hs == INT64_MIN ? 0 : (double)(hs / 1000);
            }
            }
            expo_mset_add(ms, f, "", lab[i], NULL, v);
        }
    }
    f = n ? expo_mset_family(ms, RS "sent_batch_duration_seconds", EXPO_HISTOGRAM,
                             "Duration of send calls to the remote storage.", NULL)
          : NULL;
    for (size_t i = 0; f && i < n; i++) {
        remote_stats *st = &m->qs[i]->st;
        uint64_t h[REMOTE_NBUCKETS], cnt;
        double sum;
        pthread_mutex_lock(&st->mu);
        memcpy(h, st->hist, sizeof h);
        cnt = st->hcount;
        sum = st->hsum;
        pthread_mutex_unlock(&st->mu);
        for (int b = 0; b < REMOTE_NBUCKETS; b++)
            expo_mset_add(ms, f, "_bucket", lab[i], LE[b], (double)h[b]);
        expo_mset_add(ms, f, "_bucket", lab[i], "le=\"+Inf\"", (double)cnt);
        expo_mset_add(ms, f, "_sum", lab[i], NULL, sum);
        expo_mset_add(ms, f, "_count", lab[i], NULL, (double)cnt);
    }
    f = n ? expo_mset_family(ms, "prometheus_wal_watcher_current_segment", EXPO_GAUGE,
                             "Current segment the WAL watcher is reading records from.", NULL)
          : NULL;
    for (size_t i = 0; f && i < n; i++)
        expo_mset_add(ms, f, "", cons[i], NULL, (double)atomic_load(&m->qs[i]->st.cur_segment));
    f = n ? expo_mset_family(ms, "prometheus_wal_watcher_records_read_total", EXPO_COUNTER,
                             "Number of records read by the WAL watcher from the WAL.", NULL)
          : NULL;
    static const char *const TYPES[] = {"type=\"series\"", "type=\"samples\"", "type=\"tombstones\"",
                                        "type=\"ooo_samples\"", "type=\"chunks\""};
    for (size_t i = 0; f && i < n; i++) {
        remote_stats *st = &m->qs[i]->st;
        uint64_t v[5] = {atomic_load(&st->rec_series), atomic_load(&st->rec_samples),
                         atomic_load(&st->rec_tombstones), atomic_load(&st->rec_ooo),
                         atomic_load(&st->rec_chunks)};
        for (int t = 0; t < 5; t++) expo_mset_add(ms, f, "", cons[i], TYPES[t], (double)v[t]);
    }
    f = n ? expo_mset_family(
                ms, "prometheus_wal_watcher_record_decode_failures_total", EXPO_COUNTER,
                "Number of records read by the WAL watcher that resulted in an error when decoding.", NULL)
          : NULL;
    for (size_t i = 0; f && i < n; i++)
        expo_mset_add(ms, f, "", cons[i], NULL, (double)atomic_load(&m->qs[i]->st.decode_failures));
    pthread_mutex_unlock(&m->list_mu);
    free(lab);
    free(cons);
}
