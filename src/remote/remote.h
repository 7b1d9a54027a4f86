/* remote.h -- Prometheus remote write 1.0, the sending side: every
 * `remote_write` entry of prometheus.yml gets a queue that tails the TSDB's
 * write-ahead log and ships its samples to the receiver.
 *
 * WHY THE WAL. The queue reads samples from the WAL files, not from an
 * in-memory buffer, and remembers on disk how far the receiver has
 * acknowledged them. A receiver that is down for hours, or a kelvin that
 * is killed with -9, costs no sample the WAL still holds: the queue holds
 * the WAL segments it has not finished (tsdb_wal_hold), so checkpoints do
 * not delete them, and resumes where the receiver stopped acknowledging.
 * The hold is bounded by --storage.remote.max-wal-hold (default 24h): a
 * segment older than that is given up (its unsent samples are counted in
 * prometheus_remote_storage_samples_dropped_total and logged once).
 *
 * PROTOCOL (Prometheus 2.42's storage/remote): POST of a snappy
 * (block format) protobuf WriteRequest, headers Content-Encoding: snappy,
 * Content-Type: application/x-protobuf, User-Agent: kelvin/<version>,
 * X-Prometheus-Remote-Write-Version: 0.1.0 and the configured `headers`;
 * the HTTP client settings (basic_auth, authorization, tls_config,
 * proxy_url, ...) as every kelvin client applies them. Labels are the
 * series' labels plus global.external_labels (unless the series has the
 * name), then write_relabel_configs; sorted by name. Samples of a series
 * go out in WAL order (staleness markers included, as they are). 2xx is
 * success; connection errors and 5xx are retried forever with exponential
 * backoff min_backoff..max_backoff, 429 too when retry_on_http_429 (then
 * honouring Retry-After, as 2.42 does for 429 only); other answers drop the
 * batch (samples_failed_total). Shards (parallel senders) scale between
 * min_shards and max_shards with the backlog, by 2.42's formula.
 *
 * METADATA (metadata_config.send): every send_interval the queue asks
 * opts.metadata for the metric families' TYPE/HELP/UNIT (the scrape
 * manager's cache) and sends them in WriteRequest.metadata, batches of
 * metadata_config.max_samples_per_send.
 *
 * FILES: <data_dir>/remote-write/<16 hex digits>, one per queue, named by
 * a hash of the entry's url and name (and its rank among entries with the
 * same url and name): a changed relabeling, header or queue setting
 * continues from the same position; a changed url or name is a new queue.
 * The format is in remote_int.h (POSITION FILE).
 *
 * WIRING (the server):
 *   flags:    remote_flagvars_init + remote_flags into the flag table
 *             (--storage.remote.flush-deadline, --storage.remote.max-wal-hold).
 *   startup:  dbo.wal.hold_from = remote_hold_from(dbo.path, cfg) BEFORE
 *             tsdb_db_open (the WAL open keeps the segments the queues
 *             still need); then remote_manager_new after the open and
 *             remote_manager_apply(m, cfg) with the first configuration.
 *   reload:   remote_manager_apply(m, new_cfg).
 *   /metrics: remote_metrics(m, ms).
 *   shutdown: remote_manager_free(m) before scrape_manager_free (the
 *             metadata callback reads the scrape manager) and before
 *             tsdb_db_close.
 *
 * Thread-safety: apply, metrics and free are serialised by the manager;
 * metrics may run concurrently with apply. The manager logs through
 * base/log.h, once per problem (it runs long-lived threads, as discovery
 * and scrape do).
 */
#ifndef KELVIN_REMOTE_REMOTE_H
#define KELVIN_REMOTE_REMOTE_H

#include <stddef.h>
#include <stdint.h>

#include "base/flag.h"
#include "base/str.h"
#include "config/config.h"
#include "expo/expo.h"
#include "tsdb/db.h"

/* Called once per metadata entry by a metadata source (strings valid for
 * the call only). */
typedef void (*remote_metadata_emit)(void *ectx, base_str family, expo_type type, base_str help,
                                     base_str unit);
/* Hands every metadata entry it has to emit (e.g. a thin wrapper around
 * scrape_manager_metadata_each). Called from the queues' metadata threads. */
typedef void (*remote_metadata_source)(void *sctx, remote_metadata_emit emit, void *ectx);

typedef struct remote_opts {
    const char *data_dir;            /* the TSDB's directory: positions go to data_dir/remote-write/ */
    tsdb_db *db;                     /* the open database whose WAL is read (outlives the manager) */
    int64_t max_hold_ms;             /* --storage.remote.max-wal-hold; 0: hold segments forever */
    int64_t flush_deadline_ms;       /* --storage.remote.flush-deadline: shutdown, reload, resharding */
    remote_metadata_source metadata; /* NULL: no metadata is sent */
    void *metadata_ctx;
    const char *user_agent; /* NULL: "kelvin/<version>" */
    /* For tests (0: the defaults): how often the desired number of shards
     * is computed (2.42: 10s), and how often a queue whose reader has
     * caught up polls the WAL for new records (100 ms). */
    int64_t reshard_interval_ms;
    int64_t poll_ms;
} remote_opts;

/* Defaults: flush deadline 1m, max hold 24h, nothing else set. */
void remote_opts_default(remote_opts *o);

typedef struct remote_manager remote_manager;

/* 0, BASE_E_INVAL (no db or data_dir), BASE_E_NOMEM, BASE_E_IO (the
 * remote-write directory cannot be created), with err. */
int remote_manager_new(const remote_opts *o, remote_manager **ret, char *err, size_t errlen);
/* Takes a configuration (copied: cfg may be freed afterwards): queues whose
 * entry and external labels did not change keep running untouched;
 * others stop (flushing for up to the flush deadline, their position
 * saved; an entry gone from the configuration also loses its position
 * file) and new ones start. 0, or BASE_E_NOMEM with err (the queues that
 * could not start are left out; the rest run). */
int remote_manager_apply(remote_manager *m, const cfg_config *cfg, char *err, size_t errlen);
/* Prometheus 2.42's remote storage metrics (prometheus_remote_storage_*,
 * prometheus_wal_watcher_*, labels remote_name and url / consumer) and a
 * few of kelvin's (kelvin_remote_*). */
void remote_metrics(remote_manager *m, expo_mset *ms);
/* Stops reading, flushes for up to the flush deadline, saves the positions,
 * releases the WAL hold, frees. NULL is fine. */
void remote_manager_free(remote_manager *m);

/* The lowest WAL segment the queues of cfg still need, from their position
 * files under data_dir (0: none, or no file): pass it as the WAL's
 * hold_from when opening the database. */
uint64_t remote_hold_from(const char *data_dir, const cfg_config *cfg);

/* The flags, pointing into the caller's variables. */
typedef struct remote_flagvars {
    int64_t flush_deadline_ms;
    int64_t max_wal_hold_ms;
} remote_flagvars;
#define REMOTE_NFLAGS 2
void remote_flagvars_init(remote_flagvars *v);
/* Writes at most cap entries; returns REMOTE_NFLAGS. */
size_t remote_flags(remote_flagvars *v, base_flag *out, size_t cap);
/* Checks the values and fills the two fields of o: BASE_E_INVAL with the
 * flag named in err. */
int remote_flags_apply(const remote_flagvars *v, remote_opts *o, char *err, size_t errlen);

#endif
