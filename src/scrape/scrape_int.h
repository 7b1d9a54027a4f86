/* scrape_int.h -- the scrape module's shared internals (not a public header).
 *
 * Objects and who owns them:
 *
 *   scrape_manager --owns--> sc_pool (one per job) --points to--> sc_loop
 *                  --owns--> sc_worker (threads, each a curl multi handle)
 *
 * A loop is created by the manager (under m->mu) and handed to one worker
 * through the worker's command queue; from then on the worker owns its
 * scrape state (curl handle, body, series cache) and frees it. The pool
 * only keeps a pointer while the loop is active; to stop a loop the
 * manager unlinks it from the pool and queues a stop command, after which
 * nothing but the worker touches it. Status fields read by the API
 * (health, last error, metadata) are guarded by the loop's own mutex.
 *
 * Loop state machine (worker thread):
 *
 *   NEW --cmd START--> WAITING (in the heap) --due--> INFLIGHT (in curl)
 *   INFLIGHT --done: sc__loop_finish()--> WAITING
 *   WAITING|INFLIGHT --cmd STOP(stale)--> ENDING --2 ticks + 10%:
 *        sc__end_of_run()--> freed
 *   WAITING|INFLIGHT --cmd STOP(no stale | takeover)--> freed (the cache
 *        moves to the successor first when taken over)
 *
 * The series cache (per loop, worker-only):
 *   raw table: a dense array of small inline entries {XXH3-128 of the raw
 *              series bytes (expo_parser_series), series index or "dropped
 *              by metric relabeling", iteration last seen}, kept in the
 *              order of the last successful scrape, plus an open-addressing
 *              index of uint32 slots over it. Bodies list series in the same
 *              order every scrape, so a line is first compared with the
 *              entry after the previous line's (sequential access; no probe,
 *              no key bytes); only a miss probes the index. Entries not seen
 *              in a successful scrape are removed after it (Prometheus's
 *              scrapeCache.iterDone), and the array is rebuilt in the
 *              scrape's order when that order changed. The raw bytes are not
 *              kept: two different lines collide on all 128 bits with
 *              probability ~n^2/2^129 (n entries; ~1e-33 for a million),
 *              far below any hardware error rate.
 *   series table: a dense array of sc_series (final label sets, the pinned
 *              head series, staleness and duplicate state), indexed by an
 *              open-addressing table of uint32 slots keyed by labels_hash;
 *              one series for every raw form that yields the same set, so
 *              staleness is tracked per stored series, as Prometheus
 *              tracks it per label-set hash. Raw entries name series by
 *              index; collection compacts the array and remaps them.
 *   staleness: sc_series.inprev = seen (without explicit timestamps) in the
 *              last successful scrape, .mark = iteration last seen; after a
 *              successful scrape the inprev series not marked get stale
 *              markers (one sequential pass over the series array).
 *   pins: a series' head series is pinned (tsdb_head_pin_labels) once a
 *              commit created it, and its samples are queued with
 *              tsdb_head_app_add_pinned (no per-sample ref lookup). Every
 *              pin is released when its series leaves the cache (collection,
 *              sc__cache_free on every loop end; a takeover moves the cache
 *              with its pins), and all pins are dropped and looked up again
 *              by labels when a commit reports unknown_ref (the head
 *              garbage-collected a series) or after SC_REF_TRUST_MS.
 * Invariant: every series in the series array is referenced by >= 1 raw
 * entry, is inprev, or is on the resolve list, else it is freed at the next
 * collection. Pins are only released with the worker's appender empty.
 */
#ifndef KELVIN_SCRAPE_SCRAPE_INT_H
#define KELVIN_SCRAPE_SCRAPE_INT_H

#include <curl/curl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "base/buf.h"
#include "config/config.h"
#include "discovery/discovery.h"
#include "expo/expo.h"
#include "labels/labels.h"
#include "relabel/relabel.h"
#include "scrape/scrape.h"
#include "tsdb/db.h"
#include "tsdb/head.h"

/* Prometheus's staleness marker (value.StaleNaN). */
#define SC_STALE_NAN_BITS  UINT64_C(0x7ff0000000000002)
#define SC_ERR_MAX         512
#define SC_NREPORT         5
/* Samples more than this ahead of the scrape are out of bounds (2.42's
 * timeLimitAppender: 10 minutes). */
#define SC_MAX_AHEAD_MS    (10LL * 60 * 1000)
/* After this long without a successful append, pinned head series may
 * have been garbage-collected by the head: drop the pins, look up again. */
#define SC_REF_TRUST_MS    (30LL * 60 * 1000)
/* Metadata of a family not seen for this many scrapes is dropped. */
#define SC_META_KEEP_ITERS 10

/* ---- pool settings snapshot -------------------------------------------- */

/* What a loop needs of its job's cfg_scrape, copied (the configuration may
 * be freed after the next apply while a worker is mid-scrape). Reference
 * counted: the pool holds one, each loop one. Immutable. */
typedef struct sc_pcfg {
    atomic_int refs;
    char *job;
    int honor_labels, honor_timestamps;
    uint64_t sample_limit, label_limit, name_len_limit, value_len_limit, body_size_limit;
    relabel_rule *mrelabel;
    size_t nmrelabel;
    cfg_http http; /* HTTP client settings: the job's, copied */
} sc_pcfg;

sc_pcfg *sc__pcfg_new(const cfg_scrape *c, char *err, size_t errlen);
sc_pcfg *sc__pcfg_ref(sc_pcfg *p);
void sc__pcfg_unref(sc_pcfg *p);
/* Whether a loop's series cache survives a change from a to b (the
 * fields that change how samples are labelled are equal). */
int sc__cache_reusable(const cfg_scrape *a, const cfg_scrape *b);

/* ---- the series cache ---------------------------------------------------- */

#define SC_NONE UINT32_MAX

/* 48 bytes. */
typedef struct sc_series {
    labels_set *ls;
    tsdb_head_series *hs; /* pinned head series; NULL until known */
    int64_t samp_t;       /* its last sample in iteration samp_iter */
    uint64_t samp_v;
    uint32_t samp_iter;
    uint32_t mark; /* iteration it was last seen (no explicit timestamp) */
    uint32_t rawrefs;
    uint8_t inprev;    /* seen in the last successful scrape */
    uint8_t resolving; /* on the after-commit resolution list */
} sc_series;

/* 24 bytes. */
typedef struct sc_raw {
    uint64_t h1, h2; /* XXH3-128 of the raw series bytes */
    uint32_t s;      /* series index; SC_NONE: dropped by metric relabeling */
    uint32_t iter;   /* iteration last seen */
} sc_raw;

/* HELP/TYPE/UNIT of one family of a target. The strings are interned in
 * labels_global() (every node of a fleet sends the same help texts: one
 * copy for all of them); the entry holds one reference per non-empty
 * string. The API reads name/help/unit under the loop's mutex. */
typedef struct sc_meta {
    struct sc_meta *next;
    uint64_t h;
    const char *name, *help, *unit;          /* NUL-terminated, "" when none */
    labels_sym name_sym, help_sym, unit_sym; /* LABELS_SYM_NONE for "" */
    uint32_t name_len, help_len, unit_len;
    expo_type type;
    uint32_t iter;
} sc_meta;

/* Drops an entry's string references and frees it (append.c). */
void sc__meta_free(sc_meta *m);

typedef struct sc_cache {
    sc_raw *raw; /* in the last successful scrape's order */
    size_t nraw, capraw;
    uint32_t *rawix; /* open addressing over raw (SC_NONE: empty), 2^k slots */
    size_t nrawix;
    sc_series *ser;
    size_t nser, capser;
    uint32_t *serix; /* open addressing over ser by labels_hash */
    size_t nserix;
    uint32_t *resolve; /* series queued by labels, pinned after the commit */
    size_t nresolve, capresolve;
    sc_series report[SC_NREPORT]; /* ls NULL until built */
    uint32_t iter;
    size_t pos;         /* order cursor: the raw entry expected next */
    size_t nseen;       /* raw entries seen in this iteration */
    int reorder;        /* this scrape left the recorded order */
    int64_t last_ok_ms; /* scrape time of the last successful append */
} sc_cache;

void sc__cache_init(sc_cache *c);
void sc__cache_free(sc_cache *c);
/* Drops the raw table (a reload changed how series are labelled); keeps
 * the series and their staleness state. */
void sc__cache_flush_raw(sc_cache *c);
size_t sc__cache_bytes(const sc_cache *c);

/* ---- loops ---------------------------------------------------------------- */

enum { SC_HEALTH_UNKNOWN = 0, SC_HEALTH_UP, SC_HEALTH_DOWN };
enum { SC_ST_NEW = 0, SC_ST_WAITING, SC_ST_INFLIGHT, SC_ST_ENDING };

struct sc_worker;

typedef struct sc_loop {
    /* immutable after creation */
    scrape_manager *m;
    struct sc_worker *w;
    labels_set *tls;        /* the target's labels, __ ones included */
    labels_set *series_tls; /* without __ labels: what every series gets */
    labels_set *discovered; /* before relabeling */
    char *url;
    uint64_t thash; /* target identity (labels and URL) */
    uint64_t key2;  /* series identity (series_tls and URL): takeovers */
    int64_t interval_ms, timeout_ms;
    char *interval_s, *timeout_s; /* label strings */
    char timeout_hdr[96];

    /* guarded by mu */
    pthread_mutex_t mu;
    sc_pcfg *pcfg;        /* replaced by reloads */
    int pcfg_flush;       /* the new pcfg needs a flushed raw cache */
    char forced_err[256]; /* target_limit: "" none */
    int health;
    char last_error[SC_ERR_MAX];
    int64_t last_scrape_ns; /* wall clock, 0: never */
    double last_duration_s;
    uint64_t scrapes;
    sc_meta **meta;
    size_t nmeta_b, nmeta;
    size_t mem_bytes; /* the cache's, as of the last scrape */

    /* worker-only */
    int state;
    sc_pcfg *wcfg;           /* the snapshot the worker applied */
    CURL *easy;              /* only while a scrape is in flight */
    struct curl_slist *hdrs; /* request headers, kept until wcfg changes */
    base_buf body;
    char status_line[128];
    char content_type[128];
    int gzip;
    int body_over;
    int64_t due_ns;   /* next scrape (monotonic) */
    int64_t start_ns; /* of the scrape in flight (monotonic) */
    int64_t start_ms; /* its timestamp (wall, aligned) */
    int64_t start_wall_ns;
    int64_t aligned_ms;  /* the alignment grid (2.42 AlignScrapeTimestamps) */
    int64_t last_ts_ms;  /* timestamp of the last scrape (0: none) */
    int64_t stale_ts_ms; /* ENDING: the stale markers' time */
    int ending_ticks;    /* ENDING: ticks waited */
    size_t heap_idx;
    int ok_prev; /* the previous scrape succeeded (log on change) */
    char logged_err[SC_ERR_MAX];
    sc_cache cache;
    struct sc_loop *takeover; /* STOP: hand the cache to this loop */
    int stop_mode;            /* SC_STOP_* */
} sc_loop;

enum { SC_STOP_NONE = 0, SC_STOP_STALE, SC_STOP_QUIET, SC_STOP_TAKEOVER };

/* Commands to a worker (queued under the worker's mutex). */
typedef struct sc_cmd {
    struct sc_cmd *next;
    int kind; /* SC_CMD_* */
    sc_loop *l;
} sc_cmd;
enum { SC_CMD_START = 1, SC_CMD_STOP };

typedef struct sc_worker {
    scrape_manager *m;
    pthread_t th;
    int started;
    CURLM *multi;
    pthread_mutex_t mu;
    sc_cmd *q_head, *q_tail;
    int quit;
    /* worker-only */
    sc_loop **heap;
    size_t nheap, capheap;
    sc_loop **all; /* every loop the worker owns */
    size_t nall, capall;
    labels_builder b;
    base_buf scratch, inflate, help;
    size_t *voff; /* per label: offset of its unescaped value in scratch */
    size_t capvoff;
    uint32_t *seq; /* the raw entries of the scrape being appended, in order */
    size_t nseq, capseq;
    tsdb_head_app *app;
    struct libdeflate_decompressor *dec;
} sc_worker;

/* The append of one scrape (or an empty one for failures). */
typedef struct sc_result {
    uint64_t total, added, series_added;
    uint64_t out_of_order, duplicate, out_of_bounds;
    uint64_t appended;
    int err;    /* 0 or BASE_E_* */
    int reason; /* SC_FAIL_* when err */
    char msg[SC_ERR_MAX];
} sc_result;

/* Why a scrape failed (kelvin_scrape_failures_total{reason}). */
enum {
    SC_FAIL_NONE = 0,
    SC_FAIL_HTTP,
    SC_FAIL_TIMEOUT,
    SC_FAIL_CONNECT,
    SC_FAIL_BODY_SIZE,
    SC_FAIL_PARSE,
    SC_FAIL_SAMPLE_LIMIT,
    SC_FAIL_LABEL_LIMIT,
    SC_FAIL_TARGET_LIMIT,
    SC_FAIL_OTHER,
    SC_FAIL_N
};
extern const char *const sc__fail_names[SC_FAIL_N];

/* Parses body (fmt) and queues its samples and stale markers into w->app
 * for loop l at ts; on error (r->err) the appender holds nothing of it. */
void sc__append(sc_worker *w, sc_loop *l, const char *body, size_t len, expo_format fmt, int64_t ts,
                sc_result *r);
/* Queues stale markers for every series of the previous scrape; forgets it. */
void sc__append_all_stale(sc_worker *w, sc_loop *l, int64_t ts);
/* Queues the report series. */
void sc__report(sc_worker *w, sc_loop *l, int64_t ts, double duration_s, const sc_result *r, int up,
                int stale);
/* After a commit (res from it; ok: the scrape's append succeeded): pins
 * the head series of new series; on res->unknown_ref drops every pin and,
 * for a successful scrape, queues its samples again by labels and commits
 * them (adding to *res), so a series the head garbage-collected is
 * recreated with this scrape's sample. */
void sc__after_commit(sc_worker *w, sc_loop *l, tsdb_append_result *res, int ok);
/* Releases every pin of the cache (the worker's appender must be empty). */
void sc__cache_unpin(sc_cache *c);
/* After a successful non-empty scrape: drops raw entries not seen in it
 * and series nothing references; records the scrape's order. */
void sc__cache_collect(sc_worker *w, sc_loop *l);

/* ---- targets -------------------------------------------------------------- */

/* Prometheus 2.42's PopulateLabels over merged group + target labels.
 * Returns 1 with *ret (full labels) and *ret_orig, 0 when relabeling
 * dropped it (*ret_orig set, *ret NULL), or <0 with err. */
int sc__populate(const cfg_scrape *c, const labels_set *in, labels_set **ret, labels_set **ret_orig,
                 char *err, size_t errlen);
/* The scrape URL of a target (params from the config, __param_ labels
 * overriding). Caller frees. */
char *sc__target_url(const labels_set *tls, const cfg_scrape *c);
uint64_t sc__fnv64a(const void *p, size_t n, uint64_t h);
#define SC_FNV_INIT UINT64_C(14695981039346656037)

/* ---- the manager ------------------------------------------------------------ */

typedef struct sc_gstore {
    labels_set *glabels;
    labels_set **targets;
    size_t ntargets;
} sc_gstore;

typedef struct sc_pool {
    char *job;
    const cfg_scrape *cfg; /* NULL: groups arrived before the config */
    sc_pcfg *pcfg;
    sc_gstore *groups;
    size_t ngroups;
    int has_groups;
    sc_loop **loops; /* sorted by thash */
    size_t nloops;
    labels_set **dropped;
    size_t ndropped;
} sc_pool;

struct scrape_manager {
    pthread_mutex_t mu;
    tsdb_db *db;
    tsdb_head *head;
    uint64_t jitter;
    sc_worker *workers;
    unsigned nworkers;
    sc_pool **pools;
    size_t npools;
    /* figures */
    atomic_ullong scrapes, samples_appended;
    atomic_ullong fails[SC_FAIL_N];
    atomic_ullong out_of_order, duplicate, out_of_bounds;
    atomic_llong cache_bytes;
};

int sc__worker_start(scrape_manager *m, sc_worker *w, char *err, size_t errlen);
void sc__worker_stop(sc_worker *w);
void sc__worker_cmd(sc_worker *w, int kind, sc_loop *l);
/* Creates a loop for a target (not started). */
sc_loop *sc__loop_new(scrape_manager *m, sc_pool *p, labels_set *tls, labels_set *disc);
/* Frees a loop the worker owns (or one never started). */
void sc__loop_free(sc_loop *l);
sc_worker *sc__worker_for(scrape_manager *m, uint64_t key2);

#endif
