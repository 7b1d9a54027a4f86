/* history.c -- `kelvin sim history`: a scenario's simulated telemetry,
 * written straight into storage blocks, as a kelvin server scraping kelvin
 * agents would have stored it.
 *
 * What it is for: long-horizon behaviour (a leak that takes days, ECC
 * errors that double for a week, 7 healthy days that must not page anyone)
 * testable in seconds: rules are backtested against the blocks, and
 * DIR/scenario.json says what really happened and when.
 *
 * Design. Each node is the same pair `kelvin sim fleet` serves (fleet_gpu.c:
 * a sim_node's GPUs as the agent's series; fleet_host.c: node_exporter's),
 * filled at every scrape time into two expo_msets. A scrape is node i's
 * model time off_i + k x interval (off_i: a fixed offset below the
 * interval, as Prometheus spreads its targets); each sample is matched to
 * its series (a positional cache: the same fill order every scrape, so a
 * pointer compare per sample; a content-keyed hash map when it misses),
 * and the series gets the labels a scrape adds (job, instance; scraped
 * labels with those names become exported_*), its stale marker when it
 * disappears, and the five report series (up, scrape_duration_seconds, ...)
 * as Prometheus's scrape loop writes them.
 *
 * Time is cut into aligned blocks (fleet__history_block_ms: 2 h x 3^i as
 * promtool aligns backfilled blocks, smaller when the values would not fit
 * the memory budget). For each block, worker threads (one per CPU) step
 * their nodes through the block's scrapes, storing raw value bits in each
 * series' slot array (no timestamps: they follow from node and slot); then
 * the series are sorted by labels (again only when new ones appeared) and
 * tsdb_block_write() encodes the block from them. Memory is the series'
 * slot arrays (series x scrapes per block x 8 bytes) plus their label
 * sets: bounded whatever the duration.
 *
 * Ground truth: failure times come from the model, never from the data:
 * closed forms (sim_scenario_failure_at) or, for cooling-failure, a probe
 * node with the same config stepped second by second until the memory (or
 * die) reaches its limit.
 *
 * Invariants: within a block each series' values are in scrape order, so
 * timestamps strictly increase; a series is listed once per node (content
 * key), and instance differs between nodes, so label sets are unique;
 * blocks are complete on disk before the next is started, and a failed run
 * deletes what it wrote. Ownership: everything is freed before
 * fleet__history_main returns.
 */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/flag.h"
#include "base/log.h"
#include "base/num.h"
#include "base/time.h"
#include "expo/expo.h"
#include "expo/parse.h"
#include "fleet/fleet_int.h"
#include "fleet/history_int.h"
#include "labels/labels.h"
#include "tsdb/block.h"

#define HIST_MAX_NODES    5000
#define HIST_MAX_DURATION ((int64_t)400 * 86400 * 1000)
#define HIST_BUDGET       ((uint64_t)192 << 20) /* bytes of slot values per block */
#define HIST_MAX_PAIRS    48                    /* labels of one series */
#define HIST_MAX_THREADS  64
#define HOUR_MS           ((int64_t)3600 * 1000)
#define DAY_S             86400.0

#define ABSENT_BITS 0x7ff4dead0000ab5eULL /* a NaN the model never writes: no sample */

enum { R_UP, R_DURATION, R_SCRAPED, R_POST, R_ADDED, R__COUNT };
static const char *const report_names[R__COUNT] = {"up", "scrape_duration_seconds", "scrape_samples_scraped",
                                                   "scrape_samples_post_metric_relabeling",
                                                   "scrape_series_added"};

/* ---- block duration ------------------------------------------------------- */

int64_t fleet__history_block_ms(uint64_t series, int64_t interval_ms, int64_t max_ms, uint64_t budget) {
    if (interval_ms < 1) interval_ms = 1;
    if (series == 0) series = 1;
    int64_t cand[13];
    size_t n = 0;
    for (int j = 8; j >= 1; j--) cand[n++] = 2 * HOUR_MS >> j; /* 28.125 s .. 1 h */
    for (int64_t d = 2 * HOUR_MS, i = 0; i <= 4; i++, d *= 3) cand[n++] = d;
    int64_t best = cand[0];
    for (size_t i = 0; i < n; i++) {
        int64_t d = cand[i];
        uint64_t slots = (uint64_t)(d / interval_ms) + 2;
        if (i > 0 && (d > max_ms || slots * series * 8 > budget)) break;
        best = d;
    }
    if (best < interval_ms) best = interval_ms;
    return best;
}

/* ---- state ---------------------------------------------------------------- */

typedef struct hseries {
    labels_set *ls;
    const char *fam, *suffix, *labels; /* as the fill gave them (stable per node) */
    char *extra;                       /* owned copy; NULL: none */
    uint32_t node;
    uint32_t seen; /* 1 + index of the last scrape that had it; 0: never */
    int any;       /* has a sample (or stale marker) in the current block */
    int report;    /* one of the scrape's own series */
    uint64_t *v;   /* value bits per scrape slot of the block; ABSENT_BITS: none */
} hseries;

typedef struct hnode {
    unsigned index;
    char hostname[32], instance[48];
    fleet_gpus *gpus;
    fleet_host *host;
    expo_mset gms, hms;
    uint64_t seed;
    int64_t off_ms;
    uint64_t nscrapes;      /* in the whole history */
    uint64_t kfirst, klast; /* the current block's scrapes: [kfirst, klast) */
    hseries **ser;
    size_t nser, capser;
    uint32_t *ix; /* content-keyed map: series index + 1 */
    size_t ixcap;
    uint32_t *pos; /* positional cache: series index per sample position */
    size_t npos, cappos;
    size_t prev_n;    /* samples in the previous scrape */
    size_t prev_used; /* scrapes of the previous block */
    hseries *rep[R__COUNT];
    labels_builder lb;
    base_buf esc;
    int rc;
    char err[256];
} hnode;

typedef struct hfail {
    unsigned node, gpu;
    const char *kind;
    double at_s; /* Unix seconds */
} hfail;

typedef struct hist_cfg {
    const char *scenario, *out, *model, *workload, *onset, *fail_after, *cooling_ramp;
    int64_t duration_ms, interval_ms, start_s, nodes, gpus, seed, fault_nodes, fault_gpu, threads;
    int64_t leak_per_day, max_block_ms;
} hist_cfg;

typedef struct hist {
    hist_cfg c;
    sim_scenario scenario;
    sim_workload workload; /* SIM_WORKLOAD__COUNT: mixed */
    const sim_model *model;
    int64_t start_ms, end_ms, iv_ms, block_ms;
    double onset_s, fail_s, ramp_s, leak_bps; /* model seconds; bytes per second */
    size_t slots;                             /* per block, the most any node needs */
    hnode *nodes;
    size_t n;
    fleet_host_tmpl *tmpl;
    hseries **sorted;
    size_t nsorted;
    size_t total_series; /* when sorted was built */
    atomic_size_t next;  /* next node for the workers */
    hfail *fails;
    size_t nfails;
    uint64_t samples;
    size_t blocks;
    char **written; /* block directories written, for cleanup on failure */
    size_t nwritten;
} hist;

static uint64_t bits_of(double v) {
    uint64_t b;
    memcpy(&b, &v, sizeof b);
    return b;
}

static int str_eq0(const char *a, const char *b) {
    if (a == b) return 1;
    if (!a) a = "";
    if (!b) b = "";
    return strcmp(a, b) == 0;
}

/* ---- series --------------------------------------------------------------- */

static uint64_t key_hash(const char *fam, const char *suffix, const char *labels, const char *extra) {
    const char *parts[4] = {fam, suffix, labels, extra};
    uint64_t h = 0x4b656c76696eULL;
    for (int i = 0; i < 4; i++) {
        const char *p = parts[i] ? parts[i] : "";
        h = XXH3_64bits_withSeed(p, strlen(p), h ^ (uint64_t)(i + 1));
    }
    return h;
}

static int ix_grow(hnode *nd) {
    size_t nc = nd->ixcap ? nd->ixcap * 2 : 2048;
    uint32_t *ix = calloc(nc, sizeof *ix);
    if (!ix) return BASE_E_NOMEM;
    for (size_t i = 0; i < nd->nser; i++) {
        const hseries *s = nd->ser[i];
        size_t j = key_hash(s->fam, s->suffix, s->labels, s->extra) & (nc - 1);
        while (ix[j]) j = (j + 1) & (nc - 1);
        ix[j] = (uint32_t)i + 1;
    }
    free(nd->ix);
    nd->ix = ix;
    nd->ixcap = nc;
    return 0;
}

typedef struct lpair {
    size_t n_off, n_len; /* name: into the source string (src 0/1) or esc */
    size_t v_off, v_len;
    int n_src, v_src; /* 0: the labels string, 1: extra, 2: esc */
} lpair;

/* Parses a pre-rendered label string (`a="x",b="y"`, values escaped) into
 * pairs; unescaped values go into esc. */
static int parse_labels(const char *s, int src, base_buf *esc, lpair *out, size_t *np, char *err,
                        size_t errlen) {
    if (!s) return 0;
    size_t i = 0, len = strlen(s);
    while (i < len) {
        size_t n0 = i;
        while (i < len && s[i] != '=') i++;
        if (i + 1 >= len || s[i + 1] != '"' || i == n0)
            return base_errf(err, errlen, BASE_E_PARSE, "bad label string %s", s);
        size_t n1 = i;
        i += 2;
        size_t v0 = i;
        int escaped = 0;
        while (i < len && s[i] != '"') {
            if (s[i] == '\\') {
                escaped = 1;
                i++;
            }
            i++;
        }
        if (i >= len) return base_errf(err, errlen, BASE_E_PARSE, "bad label string %s", s);
        size_t v1 = i++;
        if (i < len && s[i] == ',') i++;
        if (*np >= HIST_MAX_PAIRS) return base_errf(err, errlen, BASE_E_LIMIT, "too many labels in %s", s);
        lpair *p = &out[(*np)++];
        p->n_off = n0;
        p->n_len = n1 - n0;
        p->n_src = src;
        if (escaped) {
            p->v_off = esc->len;
            expo_unescape_label((base_str){s + v0, v1 - v0}, esc);
            p->v_len = esc->len - p->v_off;
            p->v_src = 2;
        } else {
            p->v_off = v0;
            p->v_len = v1 - v0;
            p->v_src = src;
        }
    }
    return 0;
}

static base_str view(const char *labels, const char *extra, const base_buf *esc, int src, size_t off,
                     size_t len) {
    const char *b = src == 0 ? labels : src == 1 ? extra : esc->data;
    return (base_str){b + off, len};
}

/* The label set of a new series: the metric name, the scraped labels
 * (job / instance renamed exported_*, as a scrape without honor_labels
 * does), then job and instance. */
static int build_labels(hnode *nd, const char *fam, const char *suffix, const char *labels, const char *extra,
                        labels_set **ret) {
    lpair pairs[HIST_MAX_PAIRS];
    size_t np = 0;
    base_buf_reset(&nd->esc);
    int rc = parse_labels(labels, 0, &nd->esc, pairs, &np, nd->err, sizeof nd->err);
    if (!rc) rc = parse_labels(extra, 1, &nd->esc, pairs, &np, nd->err, sizeof nd->err);
    if (rc) return rc;
    if (base_buf_err(&nd->esc)) return BASE_E_NOMEM;
    char name[256];
    if ((size_t)snprintf(name, sizeof name, "%s%s", fam, suffix ? suffix : "") >= sizeof name)
        return base_errf(nd->err, sizeof nd->err, BASE_E_RANGE, "metric name %s too long", fam);
    labels_builder_reset(&nd->lb);
    rc = labels_builder_add(&nd->lb, base_str_c(LABELS_METRIC_NAME), base_str_c(name));
    char renamed[HIST_MAX_PAIRS][24];
    for (size_t i = 0; i < np && !rc; i++) {
        base_str n = view(labels, extra, &nd->esc, pairs[i].n_src, pairs[i].n_off, pairs[i].n_len);
        base_str v = view(labels, extra, &nd->esc, pairs[i].v_src, pairs[i].v_off, pairs[i].v_len);
        if (base_str_eqc(n, "job") || base_str_eqc(n, "instance")) {
            snprintf(renamed[i], sizeof renamed[i], "exported_%.*s", (int)n.n, n.p);
            n = base_str_c(renamed[i]);
        }
        rc = labels_builder_add(&nd->lb, n, v);
    }
    if (!rc) rc = labels_builder_add(&nd->lb, base_str_c("job"), base_str_c("kelvin-agent"));
    if (!rc) rc = labels_builder_add(&nd->lb, base_str_c("instance"), base_str_c(nd->instance));
    if (!rc) rc = labels_builder_finish(&nd->lb, LABELS_VALIDATE, ret, nd->err, sizeof nd->err);
    if (rc && !*nd->err)
        base_errf(nd->err, sizeof nd->err, rc, "series %s{%s}: %s", name, labels ? labels : "",
                  base_strerror(rc));
    return rc;
}

static int series_new(hist *h, hnode *nd, const char *fam, const char *suffix, const char *labels,
                      const char *extra, int report, hseries **ret) {
    if (nd->nser >= UINT32_MAX - 1) return BASE_E_LIMIT;
    if (nd->nser == nd->capser) {
        size_t nc = nd->capser ? nd->capser * 2 : 1024;
        hseries **p = realloc(nd->ser, nc * sizeof *p);
        if (!p) return BASE_E_NOMEM;
        nd->ser = p;
        nd->capser = nc;
    }
    if (2 * (nd->nser + 1) > nd->ixcap && ix_grow(nd)) return BASE_E_NOMEM;
    hseries *s = calloc(1, sizeof *s);
    if (!s) return BASE_E_NOMEM;
    s->v = malloc(h->slots * sizeof *s->v);
    s->extra = extra && *extra ? strdup(extra) : NULL;
    if (!s->v || (extra && *extra && !s->extra)) {
        free(s->v);
        free(s->extra);
        free(s);
        return BASE_E_NOMEM;
    }
    for (size_t i = 0; i < h->slots; i++) s->v[i] = ABSENT_BITS; /* node_block resets the slots it uses */
    int rc = build_labels(nd, fam, suffix, labels, extra, &s->ls);
    if (rc) {
        free(s->v);
        free(s->extra);
        free(s);
        return rc;
    }
    s->fam = fam;
    s->suffix = suffix;
    s->labels = labels;
    s->node = nd->index;
    s->report = report;
    size_t j = key_hash(fam, suffix, labels, s->extra) & (nd->ixcap - 1);
    while (nd->ix[j]) j = (j + 1) & (nd->ixcap - 1);
    nd->ix[j] = (uint32_t)nd->nser + 1;
    nd->ser[nd->nser++] = s;
    *ret = s;
    return 0;
}

static int series_find(hist *h, hnode *nd, const char *fam, const char *suffix, const char *labels,
                       const char *extra, uint32_t *ret_sid) {
    if (nd->ixcap) {
        size_t j = key_hash(fam, suffix, labels, extra) & (nd->ixcap - 1);
        while (nd->ix[j]) {
            const hseries *s = nd->ser[nd->ix[j] - 1];
            if (!s->report && str_eq0(s->fam, fam) && str_eq0(s->suffix, suffix) &&
                str_eq0(s->labels, labels) && str_eq0(s->extra, extra)) {
                *ret_sid = nd->ix[j] - 1;
                return 0;
            }
            j = (j + 1) & (nd->ixcap - 1);
        }
    }
    hseries *s;
    int rc = series_new(h, nd, fam, suffix, labels, extra, 0, &s);
    if (rc) return rc;
    *ret_sid = (uint32_t)nd->nser - 1;
    return 0;
}

/* ---- one scrape ------------------------------------------------------------ */

static void put(hseries *s, size_t slot, uint64_t b) {
    s->v[slot] = b;
    s->any = 1;
}

static int scrape(hist *h, hnode *nd, uint64_t k) {
    double t = ((double)nd->off_ms + (double)k * (double)h->iv_ms) / 1000.0;
    expo_mset_reset(&nd->gms);
    expo_mset_reset(&nd->hms);
    int rc = fleet__gpus_fill(nd->gpus, t, &nd->gms);
    if (!rc) rc = fleet__host_fill(nd->host, t, &nd->hms);
    if (rc)
        return base_errf(nd->err, sizeof nd->err, rc, "node %s: filling its series at model time %.0f s",
                         nd->hostname, t);
    size_t slot = (size_t)(k - nd->kfirst), p = 0;
    uint64_t added = 0;
    uint32_t mark = (uint32_t)(k + 1);
    int clean = 1;
    expo_mset *sets[2] = {&nd->gms, &nd->hms};
    for (int si = 0; si < 2; si++) {
        for (expo_family *f = sets[si]->head; f; f = f->next) {
            for (expo_sample *x = f->head; x; x = x->next, p++) {
                hseries *s = NULL;
                if (p < nd->npos) {
                    hseries *c = nd->ser[nd->pos[p]];
                    if (c->fam == f->name && c->labels == x->labels && c->suffix == x->suffix &&
                        str_eq0(c->extra, x->extra))
                        s = c;
                }
                if (!s) {
                    clean = 0;
                    uint32_t sid;
                    if ((rc = series_find(h, nd, f->name, x->suffix, x->labels, x->extra, &sid))) return rc;
                    if (p >= nd->cappos) {
                        size_t nc = nd->cappos ? nd->cappos * 2 : 2048;
                        uint32_t *np = realloc(nd->pos, nc * sizeof *np);
                        if (!np) return BASE_E_NOMEM;
                        nd->pos = np;
                        nd->cappos = nc;
                    }
                    nd->pos[p] = sid;
                    if (p >= nd->npos) nd->npos = p + 1;
                    s = nd->ser[sid];
                }
                if (s->seen == mark) continue; /* listed twice in one scrape: the first one counts */
                if (s->seen != k) added++;     /* not in the previous scrape */
                s->seen = mark;
                put(s, slot, bits_of(x->value));
            }
        }
    }
    nd->npos = p;
    if (!clean || p != nd->prev_n) { /* the set of series changed: stale markers for the missing */
        for (size_t i = 0; i < nd->nser; i++) {
            hseries *s = nd->ser[i];
            if (!s->report && k > 0 && s->seen == k) put(s, slot, BASE_STALE_NAN_BITS);
        }
    }
    nd->prev_n = p;
    /* the scrape's own series; a scrape of the agent takes a few ms */
    double dur = 0.0025 + 0.0012 * (1.0 + fleet__noise(nd->seed, 0x5c7a9e, k));
    put(nd->rep[R_UP], slot, bits_of(1.0));
    put(nd->rep[R_DURATION], slot, bits_of(round(dur * 1e6) / 1e6));
    put(nd->rep[R_SCRAPED], slot, bits_of((double)p));
    put(nd->rep[R_POST], slot, bits_of((double)p));
    put(nd->rep[R_ADDED], slot, bits_of((double)added));
    return 0;
}

/* ---- nodes ------------------------------------------------------------------ */

static int node_init(hist *h, hnode *nd, unsigned i) {
    nd->index = i;
    snprintf(nd->hostname, sizeof nd->hostname, "node-%u", i);
    snprintf(nd->instance, sizeof nd->instance, "%s:9400", nd->hostname);
    expo_mset_init(&nd->gms);
    expo_mset_init(&nd->hms);
    labels_builder_init(&nd->lb);
    base_buf_init(&nd->esc, 0);
    nd->seed = fleet__mix((uint64_t)h->c.seed * 1000003u + i);
    nd->off_ms = (int64_t)(fleet__mix(nd->seed ^ 0x0ff5e7ULL) % (uint64_t)h->iv_ms);
    int64_t span = h->end_ms - h->start_ms - nd->off_ms;
    nd->nscrapes = span > 0 ? (uint64_t)((span + h->iv_ms - 1) / h->iv_ms) : 0;
    for (int r = 0; r < R__COUNT; r++) {
        int rc = series_new(h, nd, report_names[r], "", NULL, NULL, 1, &nd->rep[r]);
        if (rc) return rc;
    }
    return 0;
}

static void node_free(hnode *nd) {
    for (size_t i = 0; i < nd->nser; i++) {
        labels_unref(nd->ser[i]->ls);
        free(nd->ser[i]->v);
        free(nd->ser[i]->extra);
        free(nd->ser[i]);
    }
    free(nd->ser);
    free(nd->ix);
    free(nd->pos);
    expo_mset_free(&nd->gms);
    expo_mset_free(&nd->hms);
    labels_builder_free(&nd->lb);
    base_buf_free(&nd->esc);
    fleet__gpus_free(nd->gpus);
    fleet__host_free(nd->host);
}

/* The node's config: the fleet's base, its seed and workload, and the
 * scenario on the first --fault-nodes nodes only. */
static void node_config(const hist *h, unsigned i, sim_config *c) {
    sim_config_init(c);
    c->model = h->model;
    c->gpu_count = (unsigned)h->c.gpus;
    c->seed = fleet__mix((uint64_t)h->c.seed * 1000003u + i);
    c->workload = h->workload != SIM_WORKLOAD__COUNT ? h->workload
                  : i % 4 == 3                       ? SIM_WORKLOAD_INFERENCE
                                                     : SIM_WORKLOAD_TRAINING;
    if (h->scenario == SIM_SCENARIO_HEALTHY || i >= (uint64_t)h->c.fault_nodes) return;
    c->scenario = h->scenario;
    c->fault_gpu = (unsigned)h->c.fault_gpu;
    c->onset_s = h->onset_s;
    c->lost_after_s = h->onset_s + h->fail_s;
    c->cool_ramp_s = h->ramp_s;
    c->cool_ramp_to = 0.1;
    c->cool_fan_after_s = -1;
    c->leak_rate_bps = h->leak_bps;
    c->ecc_rate0 = 1.0 / 3600.0;
    c->ecc_doubling_s = h->fail_s / 8.0;
    c->ecc_dbe_after_s = h->fail_s;
}

/* Steps node i's scrapes of the block [b0, b1) (Unix ms). */
static int node_block(hist *h, hnode *nd, int64_t b0, int64_t b1) {
    int64_t base = h->start_ms + nd->off_ms;
    int64_t lo = b0 - base, hi = b1 - base;
    uint64_t kf = lo <= 0 ? 0 : (uint64_t)((lo + h->iv_ms - 1) / h->iv_ms);
    uint64_t kl = hi <= 0 ? 0 : (uint64_t)((hi + h->iv_ms - 1) / h->iv_ms);
    if (kl > nd->nscrapes) kl = nd->nscrapes;
    if (kf > kl) kf = kl;
    nd->kfirst = kf;
    nd->klast = kl;
    /* every slot is ABSENT_BITS at the start of a block: a series with
     * samples in the last block wrote only its first prev_used slots */
    size_t used = (size_t)(kl - kf), dirty = nd->prev_used;
    for (size_t i = 0; i < nd->nser; i++) {
        hseries *s = nd->ser[i];
        if (!s->any) continue;
        for (size_t j = 0; j < dirty; j++) s->v[j] = ABSENT_BITS;
        s->any = 0;
    }
    nd->prev_used = used;
    for (uint64_t k = kf; k < kl; k++) {
        int rc = scrape(h, nd, k);
        if (rc) return rc;
    }
    return 0;
}

typedef struct wjob {
    hist *h;
    int64_t b0, b1;
} wjob;

static void *worker(void *arg) {
    wjob *j = arg;
    hist *h = j->h;
    for (;;) {
        size_t i = atomic_fetch_add(&h->next, 1);
        if (i >= h->n) break;
        hnode *nd = &h->nodes[i];
        if (nd->rc) continue;
        nd->rc = node_block(h, nd, j->b0, j->b1);
    }
    return NULL;
}

/* ---- writing a block -------------------------------------------------------- */

static int cmp_series(const void *a, const void *b) {
    return labels_cmp((*(hseries *const *)a)->ls, (*(hseries *const *)b)->ls);
}

static int sort_series(hist *h) {
    size_t total = 0;
    for (size_t i = 0; i < h->n; i++) total += h->nodes[i].nser;
    if (total == h->total_series && h->sorted) return 0;
    hseries **v = realloc(h->sorted, (total ? total : 1) * sizeof *v);
    if (!v) return BASE_E_NOMEM;
    h->sorted = v;
    size_t k = 0;
    for (size_t i = 0; i < h->n; i++)
        for (size_t j = 0; j < h->nodes[i].nser; j++) v[k++] = h->nodes[i].ser[j];
    qsort(v, k, sizeof *v, cmp_series);
    h->nsorted = k;
    h->total_series = total;
    return 0;
}

typedef struct wsrc {
    hist *h;
    size_t i;
    const hseries *cur;
    const hnode *nd;
    size_t slot, nslots;
} wsrc;

static int src_next(void *ctx, const labels_set **ret) {
    wsrc *w = ctx;
    while (w->i < w->h->nsorted) {
        const hseries *s = w->h->sorted[w->i++];
        if (!s->any) continue;
        w->cur = s;
        w->nd = &w->h->nodes[s->node];
        w->slot = 0;
        w->nslots = (size_t)(w->nd->klast - w->nd->kfirst);
        *ret = s->ls;
        return 1;
    }
    return 0;
}

static int src_sample(void *ctx, int64_t *ret_t, double *ret_v) {
    wsrc *w = ctx;
    while (w->slot < w->nslots) {
        size_t k = w->slot++;
        uint64_t b = w->cur->v[k];
        if (b == ABSENT_BITS) continue;
        *ret_t = w->h->start_ms + w->nd->off_ms + (int64_t)(w->nd->kfirst + k) * w->h->iv_ms;
        memcpy(ret_v, &b, sizeof b);
        return 1;
    }
    return 0;
}

static int write_block(hist *h, int64_t b0, int64_t b1, char *err, size_t errlen) {
    int rc = sort_series(h);
    if (rc) return base_errf(err, errlen, rc, "sorting series: %s", base_strerror(rc));
    wsrc w = {.h = h};
    tsdb_series_src src = {.ctx = &w, .next = src_next, .sample = src_sample};
    tsdb_block_wopts wo = {.chunk_samples = TSDB_BLOCK_CHUNK_SAMPLES};
    tsdb_block_meta meta;
    char msg[512] = "";
    rc = tsdb_block_write(h->c.out, &src, b0, b1, &wo, &meta, msg, sizeof msg);
    if (rc)
        return base_errf(err, errlen, rc, "writing block [%lld, %lld): %s", (long long)b0, (long long)b1,
                         msg);
    char id[27];
    tsdb_ulid_format(&meta.ulid, id);
    char **p = realloc(h->written, (h->nwritten + 1) * sizeof *p);
    size_t dl = strlen(h->c.out) + 28;
    char *dir = malloc(dl);
    if (!p || !dir) {
        free(dir);
        if (p) h->written = p;
        return BASE_E_NOMEM;
    }
    snprintf(dir, dl, "%s/%s", h->c.out, id);
    h->written = p;
    h->written[h->nwritten++] = dir;
    h->samples += meta.num_samples;
    h->blocks++;
    return 0;
}

static int run_block(hist *h, int64_t b0, int64_t b1, unsigned threads, char *err, size_t errlen) {
    atomic_store(&h->next, 0);
    wjob job = {h, b0, b1};
    pthread_t th[HIST_MAX_THREADS];
    unsigned started = 0;
    for (unsigned t = 1; t < threads; t++) {
        if (pthread_create(&th[started], NULL, worker, &job) != 0) break;
        started++;
    }
    worker(&job);
    for (unsigned t = 0; t < started; t++) pthread_join(th[t], NULL);
    for (size_t i = 0; i < h->n; i++)
        if (h->nodes[i].rc) {
            hnode *nd = &h->nodes[i];
            return base_errf(err, errlen, nd->rc, "%s", *nd->err ? nd->err : base_strerror(nd->rc));
        }
    return write_block(h, b0, b1, err, errlen);
}

/* ---- ground truth ------------------------------------------------------------ */

/* Node nd's failure: 1 and *ret when it has one inside the history, 2
 * when it comes after the end, 0 when this node cannot fail (healthy, an
 * idle GPU that cannot leak, a cooling failure that never reaches the
 * limit in the history), <0 on error. */
static int node_failure(const hist *h, const hnode *nd, hfail *ret, char *err, size_t errlen) {
    sim_config c;
    node_config(h, nd->index, &c);
    if (c.scenario == SIM_SCENARIO_HEALTHY) return 0;
    double dur = (double)(h->end_ms - h->start_ms) / 1000.0, t = 0;
    const char *kind = "";
    if (c.scenario == SIM_SCENARIO_COOLING_FAILURE) {
        /* A probe of the fault GPU (and those before it: each GPU's
         * trajectory depends on its own index only) stepped exactly as the
         * data's node is, to the scrape at which the series reads the limit. */
        const sim_model *m = c.model;
        int hbm = m->has_mem_temp;
        double limit = hbm ? m->temp_mem_max_c : m->temp_slowdown_c;
        kind = hbm ? "hbm-temp-limit" : "gpu-temp-slowdown";
        c.gpu_count = c.fault_gpu + 1;
        sim_node *n;
        int rc = sim_node_new(&c, &n, err, errlen);
        if (rc) return rc;
        int found = 0;
        for (uint64_t k = 0; k < nd->nscrapes && !found; k++) {
            t = ((double)nd->off_ms + (double)k * (double)h->iv_ms) / 1000.0;
            if ((rc = sim_node_step(n, t))) break;
            const sim_gpu_state *s = sim_node_gpu(n, c.fault_gpu);
            found = round(hbm ? s->temp_mem : s->temp_gpu) >= limit;
        }
        sim_node_free(n);
        if (rc) return base_errf(err, errlen, rc, "%s: the cooling probe failed", nd->hostname);
        if (!found) return 0;
    } else {
        int rc = sim_scenario_failure_at(&c, &t);
        if (rc == BASE_E_NOTFOUND) return 0;
        if (rc) return base_errf(err, errlen, rc, "%s: bad scenario parameters", nd->hostname);
        kind = c.scenario == SIM_SCENARIO_MEMORY_LEAK       ? "gpu-memory-exhausted"
               : c.scenario == SIM_SCENARIO_ECC_DEGRADATION ? "ecc-uncorrectable"
               : c.scenario == SIM_SCENARIO_FELL_OFF_BUS    ? "fell-off-bus"
                                                            : "xid-storm";
    }
    if (t >= dur) return 2;
    *ret = (hfail){
        .node = nd->index, .gpu = c.fault_gpu, .kind = kind, .at_s = (double)h->start_ms / 1000.0 + t};
    return 1;
}

static void json_num(base_buf *b, double v) {
    char s[64];
    snprintf(s, sizeof s, "%.3f", v);
    size_t n = strlen(s);
    while (n > 0 && s[n - 1] == '0') n--;
    if (n > 0 && s[n - 1] == '.') n--;
    base_buf_append(b, s, n);
}

static int write_truth(const hist *h, char *err, size_t errlen) {
    base_buf b;
    base_buf_init(&b, 0);
    base_buf_puts(&b, "{\"scenario\": ");
    const char *name = sim_scenario_name(h->scenario);
    base_buf_json_str(&b, name, strlen(name));
    base_buf_puts(&b, ", \"failures\": [");
    for (size_t i = 0; i < h->nfails; i++) {
        const hfail *f = &h->fails[i];
        const hnode *nd = &h->nodes[f->node];
        char gpu[16];
        snprintf(gpu, sizeof gpu, "%u", f->gpu);
        base_buf_puts(&b, i ? ",\n  {\"node\": " : "\n  {\"node\": ");
        base_buf_json_str(&b, nd->hostname, strlen(nd->hostname));
        base_buf_puts(&b, ", \"instance\": ");
        base_buf_json_str(&b, nd->instance, strlen(nd->instance));
        base_buf_puts(&b, ", \"gpu\": ");
        base_buf_json_str(&b, gpu, strlen(gpu));
        base_buf_puts(&b, ", \"kind\": ");
        base_buf_json_str(&b, f->kind, strlen(f->kind));
        base_buf_puts(&b, ", \"at\": ");
        json_num(&b, f->at_s);
        base_buf_puts(&b, "}");
    }
    base_buf_puts(&b, h->nfails ? "\n], " : "], ");
    base_buf_printf(&b, "\"start\": %lld, \"end\": %lld, \"scrape_interval_seconds\": ",
                    (long long)(h->start_ms / 1000), (long long)(h->end_ms / 1000));
    json_num(&b, (double)h->iv_ms / 1000.0);
    base_buf_puts(&b, ", \"onset\": ");
    json_num(&b, h->scenario == SIM_SCENARIO_HEALTHY ? 0 : (double)h->start_ms / 1000.0 + h->onset_s);
    base_buf_printf(&b, ", \"nodes\": %zu, \"gpus_per_node\": %lld}\n", h->n, (long long)h->c.gpus);
    if (base_buf_err(&b)) {
        base_buf_free(&b);
        return BASE_E_NOMEM;
    }
    char path[4200], tmp[4210];
    snprintf(path, sizeof path, "%s/scenario.json", h->c.out);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    int ok = f && fwrite(b.data, 1, b.len, f) == b.len;
    if (f) ok = fclose(f) == 0 && ok;
    if (ok) ok = rename(tmp, path) == 0;
    if (!ok) remove(tmp);
    base_buf_free(&b);
    return ok ? 0 : base_errf(err, errlen, BASE_E_IO, "%s: cannot write: %s", path, strerror(errno));
}

/* ---- flags and plan ---------------------------------------------------------- */

static const char usage_line[] =
    "kelvin sim history --scenario NAME --duration 17d --nodes N --out DIR [flags]";
static const char summary[] =
    "Writes the telemetry of a SIMULATED GPU fleet living through a failure scenario straight into\n"
    "storage blocks in DIR, as a kelvin server scraping kelvin agents would have stored it, so weeks of\n"
    "behaviour are testable in seconds. Read it with `kelvin server --storage.tsdb.path=DIR\n"
    "--storage.tsdb.retention.time=<more than the history's age>` (the default 15d retention deletes\n"
    "older blocks at once), `kelvin tsdb list|dump DIR` or a rules backtest. The ground truth goes to\n"
    "DIR/scenario.json: {\"scenario\": NAME, \"failures\": [{\"node\": \"node-0\", \"instance\":\n"
    "\"node-0:9400\", \"gpu\": \"3\", \"kind\": KIND, \"at\": UNIX_SECONDS}], \"start\", \"end\", "
    "\"onset\",\n"
    "\"scrape_interval_seconds\", \"nodes\", \"gpus_per_node\"} (failures [] for healthy). DIR must be new "
    "or\n"
    "empty.\n"
    "\n"
    "SERIES. Node i is called node-<i> (i = 0..N-1) and is scraped every --scrape-interval from --start\n"
    "(plus a fixed per-node offset below the interval, as Prometheus spreads its targets) to --start +\n"
    "--duration, with exactly the series `kelvin sim fleet` serves for it: the agent's GPU collector\n"
    "(dcgm-exporter's DCGM_FI_DEV_* / DCGM_FI_PROF_* names and kelvin_gpu_*, labels gpu=\"0\".., UUID,\n"
    "pci_bus_id, device=\"nvidia<gpu>\", modelName, Hostname=\"node-<i>\", simulated=\"true\",\n"
    "DCGM_FI_DRIVER_VERSION; kelvin_gpu_nvml_up{simulated=\"true\"}) and node_exporter's node_* series\n"
    "(node_memory_MemAvailable_bytes, node_cpu_seconds_total, ...). A scrape adds job=\"kelvin-agent\"\n"
    "(the server's embedded job) and instance=\"node-<i>:9400\" to each, and writes up (1),\n"
    "scrape_duration_seconds, scrape_samples_scraped, scrape_samples_post_metric_relabeling and\n"
    "scrape_series_added. A series that disappears gets Prometheus's stale marker at the next scrape.\n"
    "Counters stay counters. Units are the agent's: DCGM_FI_DEV_GPU_TEMP and DCGM_FI_DEV_MEMORY_TEMP\n"
    "whole degrees C, DCGM_FI_DEV_FB_USED / _FB_FREE MiB, DCGM_FI_DEV_POWER_USAGE W,\n"
    "kelvin_gpu_process_memory_bytes bytes, kelvin_gpu_ecc_*_errors_total{type=\"corrected\"|\n"
    "\"uncorrected\"} and kelvin_gpu_xid_errors_total{xid} counts, kelvin_gpu_lost 0/1.\n"
    "\n"
    "FLEET. Nodes 3, 7, 11, ... serve inference (a diurnal load), the others train (GPUs ~97% busy, an\n"
    "evaluation every 30 min, a checkpoint every hour; --workload changes that). Healthy H100s run the\n"
    "die at up to ~67 C and HBM at up to ~76 C while training (down to ~30 C on inference nodes at\n"
    "night), at or just under the 700 W limit: power_cap and gpu_idle clock events are normal, thermal\n"
    "and hardware ones never happen; a quarter of the GPUs see a PCIe replay every 50 min to 6.5 h, 30%\n"
    "an NVLink CRC flit error every 10 min to 2 h; no XID, no new ECC error, no loss, FB_USED steady\n"
    "(86% training, 62% inference). The fault lands on GPU --fault-gpu of\n"
    "node-0 .. node-<K-1> (K = --fault-nodes); every other node and GPU stays healthy.\n"
    "\n"
    "TIMELINES (D = --duration, O = --onset, default D/4; F = --fail-after, default 3/4 of D - O; times\n"
    "from --start; `at` comes from the model, never from the data):\n"
    "  healthy          nothing abnormal; failures [].\n"
    "  cooling-failure  from O the GPU's cooling falls linearly to 10% over --cooling-ramp (default\n"
    "                   min(6h, F)) and its inlet warms by 12 C (the node's other GPUs' by 3 C). HBM and\n"
    "                   die warm; from ~2 C under the HBM limit the driver's thermal controller throttles\n"
    "                   clocks and power (kelvin_gpu_clock_event_active{reason=\"sw_thermal\"}) to hold\n"
    "                   it there. The controller lags: when load returns after a dip (the hourly\n"
    "                   checkpoint) HBM overshoots, and later its lowest power cannot hold it at all\n"
    "                   (hardware slowdown). Kind \"hbm-temp-limit\", at = the first scrape at which\n"
    "                   DCGM_FI_DEV_MEMORY_TEMP reads the board's HBM limit (95 on H100; boards without\n"
    "                   an HBM sensor: \"gpu-temp-slowdown\", DCGM_FI_DEV_GPU_TEMP at the slowdown\n"
    "                   temperature), typically 35-55% into the ramp, 30-100 min after HBM passed 85 C\n"
    "                   (6 h ramp).\n"
    "  memory-leak      from O the job on the GPU holds 55% of its memory and leaks --leak-per-day\n"
    "                   (default: the other 45% over F; 3.7 GiB/day on an H100 for D = 17d):\n"
    "                   \"gpu-memory-exhausted\" at O + 45% of the usable memory / rate, when\n"
    "                   DCGM_FI_DEV_FB_FREE has fallen to ~0 MiB; the process is OOM-killed (FB_USED\n"
    "                   drops to 0), restarts 60 s later at 55% and leaks again.\n"
    "  xid-storm        from O a burst of 5-20 XIDs within 10 s every 240 s to the end (mostly\n"
    "                   13/31/43, some 74 with NVLink replays, rarely 48/63/64/79): \"xid-storm\" at =\n"
    "                   the first XID.\n"
    "  ecc-degradation  from O correctable ECC errors at 1 per hour, the rate doubling every F/8; a\n"
    "                   row remapped per 500: \"ecc-uncorrectable\" at O + F, one uncorrectable error\n"
    "                   (XID 48 then 63; a remap pending).\n"
    "  fell-off-bus     PCIe replays climb (2/s) during the 120 s before O + F, then XID 79:\n"
    "                   \"fell-off-bus\" at O + F. From the first scrape at or after it the GPU's series\n"
    "                   end (stale markers) but kelvin_gpu_lost (now 1), DCGM_FI_DEV_XID_ERRORS and\n"
    "                   kelvin_gpu_xid_errors_total; the node's other GPUs and `up` go on.\n"
    "A failure that would come after the end is left out of scenario.json (the command warns).\n"
    "\n"
    "BLOCKS are written one after the other (aligned ranges of 2h x 3^i, or 2h / 2^j when the values\n"
    "would not fit 192 MiB), one worker thread per CPU, so memory stays bounded whatever the duration.";

/* An optional duration flag: "" keeps *ret_ms. */
static int opt_duration(const char *name, const char *s, int64_t *ret_ms) {
    if (!*s) return 0;
    int64_t v;
    if (base_parse_duration_ms(s, &v) != 0) {
        fprintf(stderr, "kelvin sim history: invalid --%s %s (a duration such as 36h or 4d)\n", name, s);
        return 2;
    }
    *ret_ms = v;
    return 0;
}

static int plan(hist *h) {
    hist_cfg *c = &h->c;
    h->model = sim_model_find(c->model, strlen(c->model));
    if (!h->model) {
        fprintf(stderr, "kelvin sim history: unknown --model %s (h100, h200, a100, l4, rtx6000ada)\n",
                c->model);
        return 2;
    }
    if (sim_scenario_parse(c->scenario, strlen(c->scenario), &h->scenario) != 0) {
        fprintf(
            stderr,
            "kelvin sim history: unknown --scenario %s (healthy, cooling-failure, memory-leak, xid-storm, "
            "ecc-degradation, fell-off-bus)\n",
            c->scenario);
        return 2;
    }
    h->workload = SIM_WORKLOAD__COUNT;
    if (strcmp(c->workload, "mixed") != 0 &&
        sim_workload_parse(c->workload, strlen(c->workload), &h->workload)) {
        fprintf(stderr, "kelvin sim history: unknown --workload %s (mixed, training, inference, idle)\n",
                c->workload);
        return 2;
    }
    if (!*c->out) {
        fprintf(stderr, "kelvin sim history: --out DIR is required (see --help)\n");
        return 2;
    }
    if (c->interval_ms < 1000 || c->interval_ms > HOUR_MS) {
        fprintf(stderr, "kelvin sim history: --scrape-interval must be 1s..1h\n");
        return 2;
    }
    if (c->duration_ms < c->interval_ms || c->duration_ms > HIST_MAX_DURATION) {
        fprintf(stderr, "kelvin sim history: --duration must be one scrape interval..400d\n");
        return 2;
    }
    if (c->nodes < 1 || c->nodes > HIST_MAX_NODES || c->gpus < 0 || c->gpus > SIM_MAX_GPUS || c->seed < 0 ||
        c->threads < 0 || c->threads > HIST_MAX_THREADS || c->start_s < 0 || c->leak_per_day < 0) {
        fprintf(
            stderr,
            "kelvin sim history: --nodes must be 1..%d, --gpus 0..%d, --threads 0..%d, --seed, --start and "
            "--leak-per-day >= 0\n",
            HIST_MAX_NODES, SIM_MAX_GPUS, HIST_MAX_THREADS);
        return 2;
    }
    if (h->scenario != SIM_SCENARIO_HEALTHY &&
        (c->gpus < 1 || c->fault_nodes < 1 || c->fault_nodes > c->nodes || c->fault_gpu < 0 ||
         c->fault_gpu >= c->gpus)) {
        fprintf(stderr, "kelvin sim history: --fault-nodes must be 1..--nodes and --fault-gpu 0..--gpus-1\n");
        return 2;
    }
    h->iv_ms = c->interval_ms;
    if (c->start_s == 0) {
        int64_t now = base_unix_ms() - c->duration_ms;
        h->start_ms = now / h->iv_ms * h->iv_ms;
    } else {
        h->start_ms = c->start_s * 1000;
    }
    h->end_ms = h->start_ms + c->duration_ms;
    int64_t onset_ms = c->duration_ms / 4 / 1000 * 1000;
    int rc = opt_duration("onset", c->onset, &onset_ms);
    if (rc) return rc;
    if (onset_ms >= c->duration_ms) {
        fprintf(stderr, "kelvin sim history: --onset must be before the end of the history\n");
        return 2;
    }
    int64_t fail_ms = (c->duration_ms - onset_ms) * 3 / 4 / 1000 * 1000;
    if (fail_ms < 1000) fail_ms = 1000;
    if ((rc = opt_duration("fail-after", c->fail_after, &fail_ms))) return rc;
    int64_t ramp_ms = fail_ms < 6 * HOUR_MS ? fail_ms : 6 * HOUR_MS;
    if ((rc = opt_duration("cooling-ramp", c->cooling_ramp, &ramp_ms))) return rc;
    if (fail_ms < 1000 || ramp_ms < 1000) {
        fprintf(stderr, "kelvin sim history: --fail-after and --cooling-ramp must be at least 1s\n");
        return 2;
    }
    h->onset_s = (double)onset_ms / 1000.0;
    h->fail_s = (double)fail_ms / 1000.0;
    h->ramp_s = (double)ramp_ms / 1000.0;
    double head = (double)(h->model->mem_total_bytes - h->model->mem_reserved_bytes) * 0.45;
    h->leak_bps = c->leak_per_day > 0 ? (double)c->leak_per_day / DAY_S : head / h->fail_s;
    /* series per node: ~100 per GPU, ~330 host, 5 reports */
    uint64_t est = (uint64_t)c->nodes * (uint64_t)(c->gpus * 100 + 400);
    int64_t maxb = c->max_block_ms > 0 ? c->max_block_ms : 2 * HOUR_MS;
    h->block_ms = fleet__history_block_ms(est, h->iv_ms, maxb, HIST_BUDGET);
    h->slots = (size_t)(h->block_ms / h->iv_ms) + 2;
    return 0;
}

/* DIR must be missing (it is created) or empty but for a lock file. */
static int prepare_out(const char *dir, char *err, size_t errlen) {
    if (strlen(dir) > 3900) return base_errf(err, errlen, BASE_E_INVAL, "--out: path too long");
    if (mkdir(dir, 0777) == 0) return 0;
    if (errno != EEXIST) return base_errf(err, errlen, BASE_E_IO, "mkdir %s: %s", dir, strerror(errno));
    DIR *d = opendir(dir);
    if (!d) return base_errf(err, errlen, BASE_E_IO, "%s: %s", dir, strerror(errno));
    struct dirent *e;
    int empty = 1;
    while (empty && (e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0 && strcmp(e->d_name, "lock") != 0)
            empty = 0; /* a lock file alone is what a failed run leaves */
    closedir(d);
    if (!empty)
        return base_errf(err, errlen, BASE_E_INVAL, "%s is not empty: give a new or empty directory", dir);
    return 0;
}

static void fmt_when(char *out, size_t n, double unix_s) {
    time_t t = (time_t)unix_s;
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(out, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static int run(hist *h) {
    char err[768] = "";
    hist_cfg *c = &h->c;
    int rc = prepare_out(c->out, err, sizeof err);
    tsdb_dir_lock *lock = NULL;
    if (!rc) rc = tsdb_dir_lock_take(c->out, &lock, err, sizeof err);
    if (rc) {
        fprintf(stderr, "kelvin sim history: %s\n", err);
        return 1;
    }
    int64_t t0 = base_mono_ns();
    h->n = (size_t)c->nodes;
    h->nodes = calloc(h->n, sizeof *h->nodes);
    h->fails = calloc(h->n, sizeof *h->fails);
    if (!h->nodes || !h->fails) rc = BASE_E_NOMEM;
    if (!rc) rc = fleet__gpu_catalog_check(err, sizeof err);
    if (!rc) rc = fleet__host_tmpl_new(&h->tmpl, err, sizeof err);
    for (size_t i = 0; i < h->n && !rc; i++) {
        hnode *nd = &h->nodes[i];
        rc = node_init(h, nd, (unsigned)i);
        sim_config sc;
        node_config(h, (unsigned)i, &sc);
        if (!rc) rc = fleet__gpus_new(&sc, nd->hostname, &nd->gpus, err, sizeof err);
        if (!rc)
            rc = fleet__host_new(h->tmpl, sc.seed, nd->hostname, (double)h->start_ms / 1000.0, &nd->host);
        if (!rc) {
            hfail f;
            int r = node_failure(h, nd, &f, err, sizeof err);
            if (r < 0) rc = r;
            if (r == 1) h->fails[h->nfails++] = f;
            if (r == 2 || (r == 0 && sc.scenario == SIM_SCENARIO_COOLING_FAILURE))
                fprintf(
                    stderr,
                    "kelvin sim history: warning: %s's %s failure would come after the end of the history "
                    "(try a longer --duration or a shorter --fail-after, --cooling-ramp or --onset)\n",
                    nd->hostname, c->scenario);
            else if (r == 0 && sc.scenario != SIM_SCENARIO_HEALTHY)
                fprintf(stderr, "kelvin sim history: warning: %s cannot fail with %s (workload %s)\n",
                        nd->hostname, c->scenario, sim_workload_name(sc.workload));
        }
    }
    unsigned threads = (unsigned)c->threads;
    if (threads == 0) {
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        threads = cpus > 0 ? (unsigned)cpus : 1;
    }
    if (threads > h->n) threads = (unsigned)h->n;
    if (threads > HIST_MAX_THREADS) threads = HIST_MAX_THREADS;
    if (!rc) rc = write_truth(h, err, sizeof err);
    for (int64_t b = h->start_ms / h->block_ms * h->block_ms; !rc && b < h->end_ms; b += h->block_ms) {
        int64_t b0 = b > h->start_ms ? b : h->start_ms,
                b1 = b + h->block_ms < h->end_ms ? b + h->block_ms : h->end_ms;
        rc = run_block(h, b0, b1, threads, err, sizeof err);
    }
    if (rc) {
        fprintf(stderr, "kelvin sim history: %s\n", *err ? err : base_strerror(rc));
        for (size_t i = 0; i < h->nwritten; i++) tsdb_block_delete(h->written[i], NULL, 0);
        char path[4200];
        snprintf(path, sizeof path, "%s/scenario.json", c->out);
        remove(path);
    } else {
        double secs = (double)(base_mono_ns() - t0) / 1e9;
        char a[32], z[32];
        fmt_when(a, sizeof a, (double)h->start_ms / 1000.0);
        fmt_when(z, sizeof z, (double)h->end_ms / 1000.0);
        printf("wrote a SIMULATED %s history of %zu nodes x %lld GPUs, %s .. %s (%lld .. %lld), to %s: %zu "
               "blocks, %zu series, %llu samples in %.1f s\n",
               c->scenario, h->n, (long long)c->gpus, a, z, (long long)(h->start_ms / 1000),
               (long long)(h->end_ms / 1000), c->out, h->blocks, h->total_series,
               (unsigned long long)h->samples, secs);
        for (size_t i = 0; i < h->nfails; i++) {
            char w[32];
            fmt_when(w, sizeof w, h->fails[i].at_s);
            printf("failure: %s gpu %u %s at %s (%.0f)\n", h->nodes[h->fails[i].node].hostname,
                   h->fails[i].gpu, h->fails[i].kind, w, h->fails[i].at_s);
        }
    }
    tsdb_dir_lock_release(lock);
    return rc ? 1 : 0;
}

static void hist_free(hist *h) {
    if (h->nodes)
        for (size_t i = 0; i < h->n; i++) node_free(&h->nodes[i]);
    free(h->nodes);
    fleet__host_tmpl_free(h->tmpl);
    free(h->sorted);
    free(h->fails);
    for (size_t i = 0; i < h->nwritten; i++) free(h->written[i]);
    free(h->written);
}

int fleet__history_main(int argc, char **argv) {
    hist *h = calloc(1, sizeof *h);
    if (!h) return 1;
    hist_cfg *c = &h->c;
    *c = (hist_cfg){.scenario = "healthy",
                    .out = "",
                    .model = "h100",
                    .workload = "mixed",
                    .onset = "",
                    .fail_after = "",
                    .cooling_ramp = "",
                    .duration_ms = 24 * HOUR_MS,
                    .interval_ms = 30000,
                    .nodes = 8,
                    .gpus = 8,
                    .seed = 1,
                    .fault_nodes = 1,
                    .max_block_ms = 54 * HOUR_MS};
    const base_flag flags[] = {
        {"scenario", BASE_FLAG_STRING, &c->scenario,
         "healthy, cooling-failure, memory-leak, xid-storm, ecc-degradation or fell-off-bus (see "
         "TIMELINES)."},
        {"duration", BASE_FLAG_DURATION, &c->duration_ms,
         "Length of the history (e.g. 6h, 7d, 17d; at most 400d)."},
        {"nodes", BASE_FLAG_INT, &c->nodes, "Simulated nodes node-0 .. node-<N-1> (1..5000)."},
        {"out", BASE_FLAG_STRING, &c->out, "Data directory to write (created; must be empty). Required."},
        {"start", BASE_FLAG_INT, &c->start_s,
         "Unix seconds of the first scrape slot; 0: now - duration, rounded down to the scrape interval."},
        {"seed", BASE_FLAG_INT, &c->seed,
         "Seed of the fleet; node i's seed derives from it and i (as sim fleet)."},
        {"gpus", BASE_FLAG_INT, &c->gpus, "Simulated GPUs per node (0..16)."},
        {"model", BASE_FLAG_STRING, &c->model, "Simulated GPU model: h100, h200, a100, l4, rtx6000ada."},
        {"workload", BASE_FLAG_STRING, &c->workload,
         "mixed (every 4th node serves inference, the others train), training, inference or idle."},
        {"scrape-interval", BASE_FLAG_DURATION, &c->interval_ms, "How often each node is scraped (1s..1h)."},
        {"fault-nodes", BASE_FLAG_INT, &c->fault_nodes,
         "The scenario's fault lands on node-0 .. node-<K-1>."},
        {"fault-gpu", BASE_FLAG_INT, &c->fault_gpu, "... on this GPU index of each of them."},
        {"onset", BASE_FLAG_STRING, &c->onset,
         "When the fault starts, after --start (default: duration / 4)."},
        {"fail-after", BASE_FLAG_STRING, &c->fail_after,
         "Time from onset to the failure: the leak's exhaustion (sets its rate), the uncorrectable ECC "
         "error, "
         "the loss from the bus (default: 3/4 of the time left after onset)."},
        {"cooling-ramp", BASE_FLAG_STRING, &c->cooling_ramp,
         "cooling-failure: how long the cooling takes to fall to 10% (default: min(6h, fail-after))."},
        {"leak-per-day", BASE_FLAG_SIZE, &c->leak_per_day,
         "memory-leak: bytes leaked per day (e.g. 3GiB); 0: the free 45% over --fail-after."},
        {"max-block-duration", BASE_FLAG_DURATION, &c->max_block_ms,
         "Longest block written (smaller when the values of one would not fit 192 MiB)."},
        {"threads", BASE_FLAG_INT, &c->threads, "Worker threads (0: one per CPU)."},
    };
    const size_t nflags = sizeof flags / sizeof flags[0];
    char err[512] = "";
    int ret;
    int rc = base_flags_parse(flags, nflags, argc, argv, err, sizeof err);
    if (rc == 1) {
        base_flags_usage(stdout, usage_line, summary, flags, nflags);
        ret = 0;
    } else if (rc) {
        fprintf(stderr, "kelvin sim history: %s (see --help)\n", err);
        ret = 2;
    } else if ((ret = plan(h)) == 0) {
        ret = run(h);
    }
    hist_free(h);
    free(h);
    return ret;
}
