/* remote_int.h -- the remote write sender's internals, shared by
 * manager.c (queues per configuration, positions, hold, metrics),
 * reader.c (a queue's WAL reader, series table, dispatch, resharding),
 * shard.c (a shard's batching and sending), client.c (one HTTP POST with
 * 2.42's answer classification) and metadata.c (the metadata sender).
 *
 * ONE QUEUE per remote_write entry:
 *
 *   WAL files --> reader thread --(ref % n)--> shard 0 ring --> shard thread --> POST
 *                  series table                shard 1 ring --> shard thread --> POST
 *                  position file               ...
 *
 * The reader thread owns everything but the rings: it reads frames, keeps
 * the ref -> labels table (remote_series: the labels already packed as the
 * TimeSeries' protobuf fields), decodes sample records straight into
 * per-shard staging arrays and pushes each shard's part of a record into
 * its ring in one locked copy (blocking while the ring is full: the WAL is
 * the buffer, nothing is dropped). It also computes how far the receiver
 * has acknowledged, saves that position, holds the WAL, scales the shards
 * and gives up segments older than the max hold.
 *
 * ACKNOWLEDGEMENT AND POSITIONS. A position is (segment, byte offset) in
 * the WAL; records are ordered by it. A shard's ring keeps its samples
 * until the receiver acknowledged them (or refused them for good), with
 * runs saying which record each sample came from (remote_run: the record's
 * start position, a count) and each sample its index in its record. For
 * shard s the reader knows A[s] (a remote_ack): the first pending sample's
 * record start and index, or, with nothing pending, the latest of the end
 * of the last record whose samples for s were all pushed, the reader's
 * dispatched position, and just past the last sample acknowledged (a
 * record split over two batches is acknowledged sample by sample, so a
 * re-read never sends its first part again). The queue's position
 * is min over s of A[s]; the vector A itself is what the position file
 * keeps, so that a restart re-reads from the minimum but skips, per
 * sample, what its shard had acknowledged (ref % n with the saved n):
 * nothing is sent twice and nothing is lost. A vector whose shards are
 * gone is an remote_filter; the reader consults the filters while it re-reads
 * the records they cover, and drops them once it is past them and the
 * queue's position is too. The same mechanism serves a restart, a
 * resharding whose drain timed out and a segment given up (a one-entry
 * filter at the next segment's start).
 *
 * INVARIANTS.
 *  1. Per series, samples reach the receiver in WAL order: a series maps
 *     to one shard (ref % n), a ring is FIFO, one batch is in flight per
 *     shard, and resharding starts the new shards only once the old ones
 *     have drained (or were stopped and their unacknowledged samples are
 *     read again from the WAL).
 *  2. The queue's position never passes a sample that was neither
 *     acknowledged nor refused (4xx) nor given up (max hold).
 *  3. The WAL hold (the minimum over the queues of min(position segment,
 *     reader segment)) is set before the reader needs a segment, so no
 *     checkpoint deletes a segment a queue has not finished.
 *  4. An remote_series is freed only when no ring can reference it: series
 *     that a checkpoint retired go to a graveyard until the queue's
 *     position passes the point where they were retired.
 *
 * POSITION FILE (<data_dir>/remote-write/<id as 16 hex digits>), text:
 *   kelvin-remote-write-position 1\n
 *   url <the url, for people>\n
 *   vector <n> <seg>:<off>:<ix> ... (n of them)\n      one or more lines
 * Written to <file>.tmp then renamed (no fsync: a kill -9 keeps it, the
 * page cache has it; a power loss may lose the last seconds of progress,
 * re-sending them as duplicates or, if the file is gone, starting at the
 * end of the WAL). Lines that do not parse make the file count as absent.
 *
 * Ownership: a queue owns its conf (deep copies of the configuration),
 * shards, series and buffers; the manager owns the queues.
 */
#ifndef KELVIN_REMOTE_REMOTE_INT_H
#define KELVIN_REMOTE_REMOTE_INT_H

#include <curl/curl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "config/config.h"
#include "labels/labels.h"
#include "relabel/relabel.h"
#include "remote/remote.h"
#include "tsdb/wal.h"

#define REMOTE_MAX_FILTERS     4
#define REMOTE_SHARD_UPDATE_MS 10000 /* 2.42's shardUpdateDuration */
#define REMOTE_POLL_MS         100
#define REMOTE_HK_MS           1000 /* position save, hold, GC */
#define REMOTE_EXPIRY_CHECK_MS 10000
#define REMOTE_EWMA_WEIGHT     0.2 /* 2.42's ewmaWeight */
#define REMOTE_SHARD_TOLERANCE 0.3 /* 2.42's shardToleranceFraction */
#define REMOTE_ERR_BODY_MAX    256 /* first line of an error answer kept for the log */
#define REMOTE_POS_FILE_MAX    (64 << 10)

/* ---- positions ------------------------------------------------------------ */

typedef struct remote_pos {
    uint64_t seg, off;
} remote_pos;

static inline int remote_pos_cmp(remote_pos a, remote_pos b) {
    if (a.seg != b.seg) return a.seg < b.seg ? -1 : 1;
    return a.off < b.off ? -1 : a.off > b.off;
}
static inline remote_pos remote_pos_min(remote_pos a, remote_pos b) {
    return remote_pos_cmp(a, b) <= 0 ? a : b;
}
static inline remote_pos remote_pos_max(remote_pos a, remote_pos b) {
    return remote_pos_cmp(a, b) >= 0 ? a : b;
}

/* How far one shard is acknowledged: every sample routed to it from a
 * record ending at or before pos, and from the record starting at pos
 * those whose index in that record (their order in it, counting all its
 * samples) is below ix. Ordered by pos, then ix. */
typedef struct remote_ack {
    remote_pos pos;
    uint64_t ix;
} remote_ack;

static inline int remote_ack_cmp(remote_ack a, remote_ack b) {
    int c = remote_pos_cmp(a.pos, b.pos);
    return c ? c : (a.ix < b.ix ? -1 : a.ix > b.ix);
}

/* An acknowledgement vector: a[s] for shard s of n (see ACKNOWLEDGEMENT);
 * min and max over a[].pos. */
typedef struct remote_filter {
    unsigned n;
    remote_ack *a;
    remote_pos min, max;
} remote_filter;

void remote__filter_free(remote_filter *f);
/* Sets min and max from a[]. */
void remote__filter_bounds(remote_filter *f);

/* Loads a position file: 0 and the vectors (at most cap; the caller frees
 * each with remote__filter_free), BASE_E_NOTFOUND (no file), BASE_E_PARSE,
 * BASE_E_IO, BASE_E_NOMEM. Parses with the checked parsers only. */
int remote__pos_load(const char *path, remote_filter *ret, size_t cap, size_t *ret_n);
/* Parses a position file's bytes (the fuzzable part of remote__pos_load). */
int remote__pos_parse(const char *p, size_t len, remote_filter *ret, size_t cap, size_t *ret_n);
/* Renders the file's content (out's sticky error on failure). */
void remote__pos_render(base_buf *out, const char *url, const remote_filter *f, size_t n);
/* Writes rendered content (tmp + rename): 0 or BASE_E_IO. */
int remote__pos_write(const char *path, const base_buf *content);
/* The position every vector agrees is acknowledged: max over f of f.min
 * ((0,0) for none). */
remote_pos remote__pos_start(const remote_filter *f, size_t n);

/* ---- configuration ------------------------------------------------------- */

/* A queue's own copy of its remote_write entry and the external labels. */
typedef struct remote_conf {
    char *url;
    char *name;        /* "" when the entry has none */
    char *remote_name; /* the metrics' remote_name: name, or 6 hex digits of id */
    int64_t timeout_ms;
    cfg_kvs headers;
    cfg_http http;
    relabel_rule *rules;
    size_t nrules;
    int64_t capacity, max_shards, min_shards, max_samples, deadline_ms, min_backoff_ms, max_backoff_ms;
    int retry_429;
    int md_send;
    int64_t md_interval_ms, md_max;
    cfg_kvs ext; /* global.external_labels, sorted by name */
    uint64_t id; /* xxh3 of url, name and rank: the position file's name */
} remote_conf;

/* Deep copy of w (and ext); rank: how many earlier entries share url and
 * name. 0, BASE_E_NOMEM or a relabel rule's error, with err. */
int remote__conf_make(remote_conf *c, const cfg_remote_write *w, const cfg_kvs *ext, unsigned rank, char *err,
                      size_t errlen);
void remote__conf_clear(remote_conf *c);
/* Whether a reload may keep a queue running: every field equal. */
int remote__conf_equal(const remote_conf *a, const remote_conf *b);
uint64_t remote__conf_id(const char *url, const char *name, unsigned rank);

/* ---- series ----------------------------------------------------------------- */

/* A series as the queue sends it: lab[] holds the labels as the
 * TimeSeries' `labels` fields, packed once (protobuf-c). Dropped series
 * (write relabeling, or labels that do not form a set) have dropped set
 * and no bytes. mark: the segment (or checkpoint number) that last
 * defined it, for the checkpoint GC. */
typedef struct remote_series {
    uint64_t ref;
    uint64_t mark;
    uint32_t len;
    uint8_t dropped;
    uint8_t lab[];
} remote_series;

/* ---- shards ------------------------------------------------------------------ */

typedef struct remote_sample {
    const remote_series *s;
    int64_t t;
    double v;
    uint32_t ix; /* its index in its WAL record */
} remote_sample;

typedef struct remote_run {
    remote_pos start; /* the record's start */
    uint64_t n;       /* its samples in the ring, in order */
} remote_run;

typedef struct remote_queue remote_queue;

/* One HTTP sender (a shard's, or the metadata thread's). */
typedef struct remote_client {
    remote_queue *q;
    CURL *e;
    struct curl_slist *hdrs;
    int creds_files;    /* credentials read from files: apply per request */
    _Atomic int *abort; /* stop now: aborts the request in flight */
    _Atomic int *quit;  /* stop after the attempt in flight: no retry (may be NULL) */
    char curl_err[CURL_ERROR_SIZE];
    char status[96];                    /* "500 Internal Server Error" */
    char body[REMOTE_ERR_BODY_MAX + 1]; /* first line of the answer */
    size_t body_len;
    int body_done;
    char retry_after[64];
} remote_client;

enum { REMOTE_SENT = 0, REMOTE_RETRY = 1, REMOTE_FAIL = 2, REMOTE_ABORTED = 3 };

int remote__client_init(remote_client *c, remote_queue *q, _Atomic int *abort, _Atomic int *quit, char *err,
                        size_t errlen);
void remote__client_free(remote_client *c);
/* POSTs body once: REMOTE_SENT (2xx), REMOTE_RETRY (connection error, 5xx, 429
 * with retry_on_http_429; *ret_retry_after_ms from Retry-After for 429,
 * 0 otherwise), REMOTE_FAIL (other answers), REMOTE_ABORTED (*abort was set). why
 * gets 2.42's words for a failure. */
int remote__client_post(remote_client *c, const void *body, size_t len, int64_t *ret_retry_after_ms,
                        char *why, size_t whylen);
/* Posts with 2.42's retry loop (sendWriteRequestWithBackoff): backoff from
 * min_backoff doubling to max_backoff, Retry-After when given; forever for
 * recoverable errors until *abort or *quit (which lets the attempt in
 * flight finish: its answer is not lost). Calls on_attempt before each try and
 * on_retry before each retry with ctx. Returns REMOTE_SENT, REMOTE_FAIL or
 * REMOTE_ABORTED; why gets the last failure. */
int remote__client_send(remote_client *c, const void *body, size_t len, void (*on_attempt)(void *ctx),
                        void (*on_retry)(void *ctx), void *ctx, char *why, size_t whylen);

/* Sleeps ms, waking early when *abort is set (1) or not (0). */
int remote__sleep_abortable(remote_queue *q, _Atomic int *abort, int64_t ms);

typedef struct remote_shard {
    remote_queue *q;
    unsigned idx;
    pthread_t th;
    int started; /* 1 running, 2 its thread returned, 3 joined */
    pthread_mutex_t mu;
    pthread_cond_t cv;    /* the shard waits for samples, flush or stop */
    pthread_cond_t space; /* the reader waits for room, or for a drain */
    remote_sample *ring;  /* unacknowledged samples [head, head + n) mod cap */
    size_t cap, head, n;
    remote_run *runs; /* their records, [rhead, rhead + rn) mod cap */
    size_t rhead, rn;
    int64_t oldest_ns;     /* when the pending samples began to wait (0: none) */
    int flush;             /* send what is there now, without the deadline */
    int stop;              /* 1: stop once empty; 2: stop after the batch in flight */
    _Atomic int quit;      /* 2's flag for the client: no more attempts */
    _Atomic int abort;     /* stop now: aborts the request in flight */
    remote_ack last_acked; /* just past the last sample acknowledged (under mu) */
    /* reader-owned (see ACKNOWLEDGEMENT) */
    remote_pos pushed_end;
    /* shard-thread-owned */
    remote_client cl;
    base_buf pb;
    char *z;
    size_t zcap;
} remote_shard;

/* Creates shard idx and starts its thread: 0 or BASE_E_NOMEM / BASE_E_IO. */
int remote__shard_new(remote_queue *q, unsigned idx, remote_shard **ret);
/* Asks the shard to send what it has at once (no deadline). */
void remote__shard_flush(remote_shard *sh);
/* Stops the thread now (the request in flight is aborted) and joins it;
 * nothing if already joined. The reader stops shards more gently first
 * (reader.c shards_halt: the attempt in flight may finish, since aborting
 * it could send its samples twice). */
void remote__shard_join(remote_shard *sh);
/* Joins (as remote__shard_join) and frees; what was not acknowledged is left
 * to the WAL. Its samples leave the pending count. */
void remote__shard_free(remote_shard *sh);
/* Encodes samples [head, head + k) of the ring as a WriteRequest into
 * out (reset first; consecutive samples of one series share a TimeSeries)
 * and returns the highest timestamp. */
int64_t remote__encode_samples(base_buf *out, const remote_sample *ring, size_t cap, size_t head, size_t k);

/* ---- the queue ---------------------------------------------------------------- */

/* 2.42's prometheus_remote_storage_sent_batch_duration_seconds buckets. */
#define REMOTE_NBUCKETS 15
extern const double remote__buckets[REMOTE_NBUCKETS];

typedef struct remote_stats {
    _Atomic uint64_t samples, failed, retried, dropped, bytes, enqueue_retries, pending;
    _Atomic uint64_t md_total, md_failed, md_retried, md_bytes;
    _Atomic uint64_t rec_series, rec_samples, rec_tombstones, rec_ooo, rec_chunks, decode_failures;
    _Atomic uint64_t damaged, expired, series, series_bytes;
    _Atomic int64_t highest_sent_ms; /* INT64_MIN: none yet */
    _Atomic uint64_t cur_segment, nshards;
    _Atomic uint64_t pos_seg, pos_off;
    /* for the shard calculation (2.42's dataIn/dataOut/dataDropped/dataOutDuration) */
    _Atomic uint64_t data_in, data_out, data_out_ns, data_dropped;
    _Atomic int64_t last_send_ms;
    pthread_mutex_t mu; /* what follows */
    uint64_t hist[REMOTE_NBUCKETS];
    uint64_t hcount;
    double hsum;
    double desired;
} remote_stats;

typedef struct remote_ewma {
    double rate;
    int init;
} remote_ewma;

typedef struct remote_smap {
    remote_series **slot;
    size_t cap, n; /* cap a power of 2 */
} remote_smap;

typedef struct remote_grave {
    remote_series *s;
    remote_pos after; /* freed once the queue's position reaches this */
} remote_grave;

/* The reader's state (reader thread only). */
typedef struct remote_reader {
    int fd;
    uint64_t seg, off; /* next frame */
    uint8_t *buf;      /* file bytes [boff, boff + blen) of seg */
    size_t bcap, blen;
    uint64_t boff;
    uint8_t *zbuf;
    size_t zcap;
    remote_pos dispatched; /* end of the last record fully handled */
    int partial_wait;      /* polls spent on a partial frame of a finished segment */
    remote_filter filters[REMOTE_MAX_FILTERS];
    size_t nfilters;
    remote_pos skip_until;   /* records ending here or before: series only */
    remote_pos filter_until; /* records ending after this need no filter */
    remote_smap map;
    remote_grave *grave;
    size_t ngrave, capgrave;
    uint64_t gc_ckpt; /* newest checkpoint whose series were GC'd against */
    labels_builder b;
    void *pairs;     /* npairs_cap (name, value) views, sorted per series */
    base_str *views; /* 2 x npairs_cap: a builder's names, then values */
    size_t npairs_cap;
    void *lbl_mem; /* npairs_cap protobuf-c labels, then as many pointers */
    remote_sample **stage;
    size_t *nstage, *capstage;
    unsigned nstage_shards;
    /* housekeeping */
    int64_t next_hk_ns, next_reshard_ns, next_expiry_ns, next_save_ns;
    remote_pos pos;       /* the queue's position, as last computed */
    base_buf pbuf, plast; /* the position file rendered now / last written */
    int saved_any;
    remote_ewma in, out, out_ns, dropped;
    int unknown_logged;
} remote_reader;

struct remote_queue {
    remote_manager *m;
    remote_conf c;
    char *pos_path;
    const char *wal_dir;
    tsdb_wal *wal;
    tsdb_db *db;
    int64_t flush_deadline_ms, max_hold_ms, poll_ms, reshard_ms;
    const char *user_agent;
    remote_metadata_source md_fn; /* NULL: no metadata thread */
    void *md_ctx;
    pthread_t reader_th, md_th;
    int reader_started, md_started;
    pthread_mutex_t mu;
    pthread_cond_t cv; /* stop wakes the reader's polls and the metadata wait */
    _Atomic int stopping;
    _Atomic int md_abort;
    _Atomic uint64_t hold_seg; /* 0: holds nothing */
    int forget;                /* remove the position file at stop (entry gone) */
    remote_shard **shards;     /* reader-owned */
    unsigned nshards;
    remote_reader r;
    remote_stats st;
    /* send-failure logging: once per episode */
    pthread_mutex_t log_mu;
    _Atomic int failing;
    int64_t last_fail_log_ns;
};

/* reader.c */
/* Prepares the reader (position file, WAL listing, initial hold) and
 * starts the reader thread, which starts the shards. 0 or BASE_E_*. */
int remote__queue_start(remote_queue *q, char *err, size_t errlen);
/* Stops the reader (flush up to the deadline, position saved) and the
 * metadata thread, frees everything the queue owns but q itself. */
void remote__queue_stop(remote_queue *q);

/* metadata.c: the metadata thread's body. */
void *remote__metadata_main(void *arg);

/* manager.c */
/* Recomputes the WAL hold from every queue's hold_seg. */
void remote__hold_update(remote_manager *m);
/* Logs a send failure once per failing episode (and a recovery). */
void remote__log_send(remote_queue *q, int ok, const char *why);

#endif
