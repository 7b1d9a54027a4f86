/* metadata.c -- metadata_config: every send_interval, the metric families'
 * TYPE/HELP/UNIT go to the receiver in WriteRequest.metadata (2.42's
 * MetadataWatcher + QueueManager.AppendMetadata).
 *
 * A queue with metadata_config.send and a metadata source (remote_opts)
 * runs this thread with its own HTTP client. Each round (the first one
 * send_interval after the start, as 2.42's ticker) collects the entries
 * from the source, keeps one of each distinct (family, type, help, unit) --
 * 2.42 sends one per target, the same entry many times over a fleet: the
 * receiver learns nothing more from the copies -- and sends them in
 * batches of metadata_config.max_samples_per_send, each with the samples'
 * retry rules (prometheus_remote_storage_metadata_total per attempt,
 * _retried_total, _failed_total, _bytes_total). Stopping the queue aborts
 * a round in progress.
 */
#include <snappy-c.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "base/err.h"
#include "base/log.h"
#include "remote/prompb.pb-c.h"
#include "remote/remote_int.h"

#define MD_MAX_ENTRIES (1u << 20) /* a bound on one round */

typedef struct md_entry {
    uint64_t h;
    expo_type type;
    char *fam, *help, *unit; /* one allocation at fam */
    size_t lf, lh, lu;
} md_entry;

typedef struct md_set {
    md_entry *v;
    size_t n, cap;
    uint32_t *ix; /* open addressing over v (UINT32_MAX: empty), icap slots */
    size_t icap;
    int err;
} md_set;

static uint64_t md_hash(base_str f, expo_type t, base_str h, base_str u) {
    uint64_t x = XXH3_64bits(f.p ? f.p : "", f.n);
    x = x * 31 + (uint64_t)t;
    x ^= XXH3_64bits(h.p ? h.p : "", h.n) * 0x9E3779B97F4A7C15ULL;
    x ^= XXH3_64bits(u.p ? u.p : "", u.n) + 0x632BE59BD9B4E019ULL;
    return x;
}

static int md_same(const md_entry *e, base_str f, expo_type t, base_str h, base_str u) {
    return e->type == t && e->lf == f.n && e->lh == h.n && e->lu == u.n && !memcmp(e->fam, f.p, f.n) &&
           !memcmp(e->help, h.p, h.n) && !memcmp(e->unit, u.p, u.n);
}

static void md_emit(void *ctx, base_str f, expo_type t, base_str h, base_str u) {
    md_set *s = ctx;
    if (s->err || s->n >= MD_MAX_ENTRIES || !f.n) return;
    if (!f.p) f.p = "";
    if (!h.p) h.p = "";
    if (!u.p) u.p = "";
    uint64_t hv = md_hash(f, t, h, u);
    if ((s->n + 1) * 2 > s->icap) {
        size_t nc = s->icap ? s->icap * 2 : 1024;
        uint32_t *ni = malloc(nc * sizeof *ni);
        if (!ni) {
            s->err = BASE_E_NOMEM;
            return;
        }
        memset(ni, 0xff, nc * sizeof *ni);
        for (size_t i = 0; i < s->n; i++) {
            size_t k = s->v[i].h & (nc - 1);
            while (ni[k] != UINT32_MAX) k = (k + 1) & (nc - 1);
            ni[k] = (uint32_t)i;
        }
        free(s->ix);
        s->ix = ni;
        s->icap = nc;
    }
    size_t k = hv & (s->icap - 1);
    for (; s->ix[k] != UINT32_MAX; k = (k + 1) & (s->icap - 1))
        if (s->v[s->ix[k]].h == hv && md_same(&s->v[s->ix[k]], f, t, h, u)) return;
    if (s->n == s->cap) {
        size_t nc = s->cap ? s->cap * 2 : 256;
        md_entry *nv = realloc(s->v, nc * sizeof *nv);
        if (!nv) {
            s->err = BASE_E_NOMEM;
            return;
        }
        s->v = nv;
        s->cap = nc;
    }
    char *mem = malloc(f.n + h.n + u.n + 3);
    if (!mem) {
        s->err = BASE_E_NOMEM;
        return;
    }
    md_entry *e = &s->v[s->n];
    e->h = hv;
    e->type = t;
    e->fam = mem;
    memcpy(e->fam, f.p, f.n);
    e->fam[f.n] = '\0';
    e->help = e->fam + f.n + 1;
    memcpy(e->help, h.p, h.n);
    e->help[h.n] = '\0';
    e->unit = e->help + h.n + 1;
    memcpy(e->unit, u.p, u.n);
    e->unit[u.n] = '\0';
    e->lf = f.n;
    e->lh = h.n;
    e->lu = u.n;
    s->ix[k] = (uint32_t)s->n++;
}

static void md_set_free(md_set *s) {
    for (size_t i = 0; i < s->n; i++) free(s->v[i].fam);
    free(s->v);
    free(s->ix);
    memset(s, 0, sizeof *s);
}

static Prometheus__MetricMetadata__MetricType proto_type(expo_type t) {
    switch (t) {
    case EXPO_COUNTER: return PROMETHEUS__METRIC_METADATA__METRIC_TYPE__COUNTER;
    case EXPO_GAUGE: return PROMETHEUS__METRIC_METADATA__METRIC_TYPE__GAUGE;
    case EXPO_HISTOGRAM: return PROMETHEUS__METRIC_METADATA__METRIC_TYPE__HISTOGRAM;
    case EXPO_GAUGEHISTOGRAM: return PROMETHEUS__METRIC_METADATA__METRIC_TYPE__GAUGEHISTOGRAM;
    case EXPO_SUMMARY: return PROMETHEUS__METRIC_METADATA__METRIC_TYPE__SUMMARY;
    case EXPO_INFO: return PROMETHEUS__METRIC_METADATA__METRIC_TYPE__INFO;
    case EXPO_STATESET: return PROMETHEUS__METRIC_METADATA__METRIC_TYPE__STATESET;
    default: return PROMETHEUS__METRIC_METADATA__METRIC_TYPE__UNKNOWN;
    }
}

typedef struct md_attempt {
    remote_queue *q;
    uint64_t n;
} md_attempt;

static void md_on_attempt(void *ctx) {
    md_attempt *a = ctx;
    atomic_fetch_add(&a->q->st.md_total, a->n);
}

static void md_on_retry(void *ctx) {
    md_attempt *a = ctx;
    atomic_fetch_add(&a->q->st.md_retried, a->n);
}

/* Sends entries [from, to): REMOTE_SENT, REMOTE_FAIL or REMOTE_ABORTED. */
static int send_batch(remote_queue *q, remote_client *cl, const md_set *s, size_t from, size_t to, char **buf,
                      size_t *bcap, char **z, size_t *zcap) {
    size_t n = to - from;
    Prometheus__MetricMetadata *mm = calloc(n, sizeof *mm);
    Prometheus__MetricMetadata **mp = calloc(n, sizeof *mp);
    if (!mm || !mp) {
        free(mm);
        free(mp);
        return REMOTE_FAIL;
    }
    for (size_t i = 0; i < n; i++) {
        const md_entry *e = &s->v[from + i];
        prometheus__metric_metadata__init(&mm[i]);
        mm[i].type = proto_type(e->type);
        mm[i].metric_family_name = (ProtobufCBinaryData){e->lf, (uint8_t *)e->fam};
        mm[i].help = (ProtobufCBinaryData){e->lh, (uint8_t *)e->help};
        mm[i].unit = (ProtobufCBinaryData){e->lu, (uint8_t *)e->unit};
        mp[i] = &mm[i];
    }
    Prometheus__WriteRequest wr = PROMETHEUS__WRITE_REQUEST__INIT;
    wr.n_metadata = n;
    wr.metadata = mp;
    size_t len = prometheus__write_request__get_packed_size(&wr);
    int r = REMOTE_FAIL;
    if (len + 1 > *bcap) {
        char *nb = realloc(*buf, len + 1);
        if (nb) *buf = nb, *bcap = len + 1;
    }
    size_t zneed = snappy_max_compressed_length(len);
    if (zneed > *zcap) {
        char *nz = realloc(*z, zneed);
        if (nz) *z = nz, *zcap = zneed;
    }
    char why[512] = "out of memory";
    size_t zlen = *zcap;
    if (len + 1 <= *bcap && zneed <= *zcap) {
        prometheus__write_request__pack(&wr, (uint8_t *)*buf);
        if (snappy_compress(*buf, len, *z, &zlen) == SNAPPY_OK) {
            md_attempt a = {q, n};
            r = remote__client_send(cl, *z, zlen, md_on_attempt, md_on_retry, &a, why, sizeof why);
            if (r != REMOTE_ABORTED) atomic_fetch_add(&q->st.md_bytes, zlen);
        }
    }
    if (r == REMOTE_FAIL) {
        atomic_fetch_add(&q->st.md_failed, n);
        base_log(BASE_LOG_ERROR, "non-recoverable error while sending metadata", "remote_name",
                 q->c.remote_name, "url", q->c.url, "err", why, NULL);
    } else if (r == REMOTE_SENT) {
        remote__log_send(q, 1, NULL);
    }
    free(mm);
    free(mp);
    return r;
}

void *remote__metadata_main(void *arg) {
    remote_queue *q = arg;
    remote_client cl;
    char err[256];
    if (remote__client_init(&cl, q, &q->md_abort, NULL, err, sizeof err) != 0) {
        base_log(BASE_LOG_ERROR, "cannot start the metadata sender", "remote_name", q->c.remote_name, "url",
                 q->c.url, "err", err, NULL);
        remote__client_free(&cl);
        return NULL;
    }
    char *buf = NULL, *z = NULL;
    size_t bcap = 0, zcap = 0;
    while (!remote__sleep_abortable(q, &q->md_abort, q->c.md_interval_ms)) {
        md_set s = {0};
        q->md_fn(q->md_ctx, md_emit, &s);
        size_t per = (size_t)q->c.md_max;
        for (size_t i = 0; i < s.n; i += per) {
            size_t to = s.n - i < per ? s.n : i + per;
            if (send_batch(q, &cl, &s, i, to, &buf, &bcap, &z, &zcap) == REMOTE_ABORTED) break;
        }
        md_set_free(&s);
    }
    free(buf);
    free(z);
    remote__client_free(&cl);
    return NULL;
}
