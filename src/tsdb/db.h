/* db.h -- the time-series database: one data directory holding the head
 * (in memory, logged to the WAL) and the persistent blocks, the jobs that
 * move data from one to the other (head cutting, compaction, retention),
 * and the read API that merges them. This is what the server, the
 * remote-write receiver, rules and PromQL use.
 *
 * DIRECTORY (opts.path, default data/):
 *   lock          flock'ed while a database is open (a second one fails)
 *   wal/          the head's WAL (wal.h) and its checkpoints; segments
 *                 a WAL reader holds (remote write: tsdb_db_wal,
 *                 tsdb_wal_hold, opts.wal.hold_from) outlive checkpoints
 *   <ULID>/       blocks (format.h)
 *   <ULID>.tmp*   leftovers of a crash: removed at open
 *
 * OPEN takes the lock, removes leftovers, opens every block (a block that
 * fails to open is reported in tsdb_db_report and left on disk, never
 * served, and everything else is), deletes blocks that a finished
 * compaction replaced (their sources are all in a higher-level block),
 * replays the WAL into the head, and drops from the head what the newest
 * block already holds (a crash between writing a block and truncating
 * the WAL leaves both).
 *
 * HEAD CUTTING (as Prometheus): when the head spans more than 1.5 x the
 * minimum block duration, the oldest aligned range [a, a + min_block) is
 * written as a level-1 block, then the head is garbage-collected below
 * a + min_block (later appends before it are rejected as too_old) and a WAL
 * checkpoint is taken there. The block is complete on disk before the
 * WAL forgets anything, so a crash at any point loses nothing.
 *
 * COMPACTION (as Prometheus's leveled planner): block ranges are min_block
 * x 3^k up to max_block (default: 10% of the time retention, at most 31
 * days). Overlapping blocks (e.g. backfilled ones) are merged first; then,
 * for each range from the second up, blocks inside one aligned range are
 * merged when they fill it or when newer blocks exist after it. The newest
 * block is never part of a plan, as in Prometheus. Inputs are deleted once
 * the merged block is in place.
 *
 * RETENTION deletes whole blocks: those ending at or before the newest
 * block's end minus retention_ms, and, newest first, those past
 * retention_bytes (the WAL's size counts against the budget too).
 *
 * CHECKPOINTS besides those of head cutting: when the WAL has grown past the
 * head's checkpoint threshold (opts.checkpoint_bytes, head.h, 64 MiB by
 * default) since the last
 * one, a checkpoint at the head's lower bound (nothing dropped) bounds what
 * a restart replays sample by sample.
 *
 * MAINTENANCE (cutting, checkpoints, compaction, retention) runs on one
 * background thread: every maintain_interval_ms (default 1 min), within
 * 5 s of the WAL growing past the checkpoint threshold, and when
 * tsdb_db_kick asks. tsdb_db_maintain runs one round synchronously (tests,
 * tools). Failures are counted and the last message kept (tsdb_db_stats);
 * the database keeps serving.
 *
 * DELETION (Prometheus 2.42's POST /api/v1/admin/tsdb/delete_series):
 * tsdb_db_delete gives every series matching the matchers a tombstone
 * over [mint, maxt] in each block overlapping the range (its tombstones
 * file, format.h) and in the head (logged to the WAL, head.h). Readers --
 * selects, label listings, series listings -- skip the deleted samples
 * from the moment the call returns, and a series left without a sample
 * in the asked range is not listed. It survives restarts (files, WAL
 * replay, checkpoints). Compaction writes blocks without the deleted
 * samples, head cutting writes the head's block without them, and the
 * planner also rewrites, alone, a block that tombstones make worth it
 * (Prometheus's rule: a block at least half the largest range wide with
 * tombstones for more than 5% of its series, or a narrower one with as
 * many tombstones as series). tsdb_db_clean_tombstones rewrites every
 * block that has tombstones (Prometheus's clean_tombstones); a block left
 * without series is dropped. Deletions and cleanups wait for a running
 * maintenance round and block the next one meanwhile.
 *
 * READS. tsdb_db_select merges the head and every block overlapping the
 * range into one series set sorted by labels; a series in several places
 * is one series whose samples are merged by time, a timestamp found twice
 * taken once (the older block wins). When the places holding a series do
 * not overlap in time (blocks do not overlap, and the head starts where
 * they end), its samples are read place after place, and
 * tsdb_db_set_samples decodes chunks straight into the caller's arrays
 * (bench/tsdb_read.c measures it). Blocks are reference counted: one
 * that compaction or retention removes stays mapped until the last series
 * set using it is freed.
 *
 * THREADS. Appenders (tsdb_db_head + head.h), selects, listings, stats and
 * maintenance may run at the same time from any threads. open/close are
 * single-threaded; close stops the maintenance thread first.
 *
 * Errors: 0 or a negative BASE_E_*; err buffers (may be NULL) get a message.
 */
#ifndef KELVIN_TSDB_DB_H
#define KELVIN_TSDB_DB_H

#include <stddef.h>
#include <stdint.h>

#include "base/flag.h"
#include "tsdb/block.h"
#include "tsdb/head.h"

#define TSDB_DB_DEFAULT_RETENTION_MS (15LL * 24 * 3600 * 1000)
#define TSDB_DB_DEFAULT_BLOCK_MS     (2LL * 3600 * 1000)

typedef struct tsdb_db_opts {
    const char *path;             /* data directory (created if missing) */
    int64_t retention_ms;         /* 0: no time retention */
    int64_t retention_bytes;      /* 0: no size retention */
    int64_t min_block_ms;         /* head block range */
    int64_t max_block_ms;         /* 0: min(retention / 10, 31 d), >= min_block */
    int wal_compression;          /* compress WAL records (wal.h) */
    int64_t ooo_window_ms;        /* out-of-order window (head.h) */
    tsdb_wal_opts wal;            /* segment size, sync policy, hold_from */
    uint64_t checkpoint_bytes;    /* WAL bytes that make a checkpoint due
                                   * (head.h; 0: TSDB_HEAD_CHECKPOINT_BYTES) */
    uint32_t chunk_samples;       /* head chunk size (0: default) */
    int64_t maintain_interval_ms; /* 0: 60 s; < 0: no background thread */
    int read_only;                /* tools: no lock, WAL read but never written */
    /* Called at open for each block that fails to open (may be NULL). */
    void (*on_bad_block)(void *ctx, const char *dir, const char *msg);
    void *bad_ctx;
} tsdb_db_opts;

/* Prometheus's defaults: data/, 15d, no size limit, 2h blocks, WAL
 * compression on, no out-of-order window. */
void tsdb_db_opts_default(tsdb_db_opts *o);

/* The storage flags with Prometheus's names, pointing into the caller's
 * variables (so a program adds them to its flag table):
 * --storage.tsdb.path, --storage.tsdb.retention.time,
 * --storage.tsdb.retention.size, --storage.tsdb.min-block-duration,
 * --storage.tsdb.max-block-duration, --storage.tsdb.wal-compression,
 * --storage.tsdb.out-of-order-time-window, --storage.tsdb.wal-sync,
 * --storage.tsdb.wal-segment-size (Prometheus accepts 10MiB..256MiB, 0 for
 * the default 128MiB; kelvin also accepts down to 64KiB, for tests that
 * need many segments), and kelvin's --storage.tsdb.wal-checkpoint-size
 * (head.h SIZE-TRIGGERED CHECKPOINTS; at least 64KiB).
 * Writes at most cap entries; returns how many there are. */
typedef struct tsdb_db_flagvars {
    const char *path, *wal_sync;
    int64_t retention_ms, retention_bytes, min_block_ms, max_block_ms, ooo_window_ms;
    int64_t wal_segment_size, wal_checkpoint_size;
    int wal_compression;
} tsdb_db_flagvars;
#define TSDB_DB_NFLAGS        10
#define TSDB_DB_WAL_MIN_BYTES ((int64_t)64 << 10) /* least segment / checkpoint size */
void tsdb_db_flagvars_init(tsdb_db_flagvars *v);
size_t tsdb_db_flags(tsdb_db_flagvars *v, base_flag *out, size_t cap);
/* Checks the parsed flags and fills o (defaults first): BASE_E_INVAL with
 * the flag named in err. */
int tsdb_db_flags_apply(const tsdb_db_flagvars *v, tsdb_db_opts *o, char *err, size_t errlen);

typedef struct tsdb_db tsdb_db;

typedef struct tsdb_db_report {
    tsdb_wal_report wal;
    size_t blocks;          /* blocks opened */
    size_t blocks_bad;      /* blocks that failed to open (left on disk) */
    size_t blocks_replaced; /* leftover inputs of a finished compaction, deleted */
    size_t leftovers;       /* *.tmp directories removed */
    char first_error[512];  /* "" or the first problem, for one log line */
} tsdb_db_report;

/* See OPEN. rep may be NULL. BASE_E_CONFLICT when another process holds
 * the directory. */
int tsdb_db_open(const tsdb_db_opts *o, tsdb_db **ret, tsdb_db_report *rep, char *err, size_t errlen);
/* Stops maintenance, closes the head (WAL) and the blocks, releases the
 * lock. No appender or series set may be alive. */
int tsdb_db_close(tsdb_db *db);

/* The head, for appenders (head.h). */
tsdb_head *tsdb_db_head(tsdb_db *db);
/* The head's WAL (wal.h), for its readers: tsdb_wal_hold, the current
 * segment. opts.wal.hold_from passes through to it at open. */
tsdb_wal *tsdb_db_wal(tsdb_db *db);
/* The WAL's directory (<path>/wal), for tsdb_wal_list and the segment
 * files; valid until close. */
const char *tsdb_db_wal_dir(const tsdb_db *db);

/* One maintenance round now (see MAINTENANCE): head cutting, compaction,
 * retention. Returns the first error (the round goes on after one). */
int tsdb_db_maintain(tsdb_db *db, char *err, size_t errlen);
/* Wakes the maintenance thread (cheap; e.g. after a commit). */
void tsdb_db_kick(tsdb_db *db);

/* ---- reading ------------------------------------------------------------ */

typedef struct tsdb_db_set tsdb_db_set;

/* Series matching all matchers (n may be 0) with samples in [mint, maxt]
 * (inclusive), from the head and the blocks, sorted by labels. */
int tsdb_db_select(tsdb_db *db, labels_matcher *const *ms, size_t n, int64_t mint, int64_t maxt,
                   tsdb_db_set **ret);
/* 1 and the next series, 0 at the end, <0. */
int tsdb_db_set_next(tsdb_db_set *s);
const labels_set *tsdb_db_set_labels(const tsdb_db_set *s);
/* 1 and the next sample of the current series within [mint, maxt], 0 at its
 * end, <0: BASE_E_PARSE or BASE_E_TRUNCATED for a damaged chunk (that
 * block's remaining samples of the series are dropped; calling again goes
 * on with the series' samples from elsewhere, and other series are
 * unaffected), BASE_E_NOMEM. */
int tsdb_db_set_sample(tsdb_db_set *s, int64_t *ret_t, double *ret_v);
/* Up to cap (>= 1; 0 is BASE_E_INVAL) next samples of the current series
 * within [mint, maxt] into t[] and v[]: the count (at most cap; fewer does
 * not mean the end), 0 at the series' end, <0 as tsdb_db_set_sample. Samples met before a damaged
 * chunk are returned first and its error by the next call, so the
 * sequence of samples and errors equals that of tsdb_db_set_sample (the
 * two may be mixed on one series). For the query engine: no call per
 * sample, chunks decoded in one tight loop. */
int tsdb_db_set_samples(tsdb_db_set *s, int64_t *t, double *v, size_t cap);
void tsdb_db_set_free(tsdb_db_set *s);

/* Label names / values of `name` over head and blocks overlapping
 * [mint, maxt], of the series matching ms (n == 0: all). */
int tsdb_db_label_names(tsdb_db *db, labels_matcher *const *ms, size_t n, int64_t mint, int64_t maxt,
                        tsdb_strs **ret);
int tsdb_db_label_values(tsdb_db *db, base_str name, labels_matcher *const *ms, size_t n, int64_t mint,
                         int64_t maxt, tsdb_strs **ret);

/* ---- deletion ----------------------------------------------------------- */

/* Deletes the samples with mint <= t <= maxt of every series matching all
 * matchers (n == 0: every series) in the head and the blocks (see
 * DELETION): done for every reader when the call returns, durable (block
 * tombstones files are fsynced and renamed into place; the head's are in
 * the WAL, written per its sync policy, as samples are). mint > maxt
 * deletes nothing. Every place is tried; errors: BASE_E_INVAL (read-only
 * database), BASE_E_IO (a tombstones file or the WAL: that place may keep
 * its samples), BASE_E_NOMEM -- the first one, with err. */
int tsdb_db_delete(tsdb_db *db, labels_matcher *const *ms, size_t n, int64_t mint, int64_t maxt, char *err,
                   size_t errlen);
/* Rewrites every block that has tombstones without its deleted samples
 * (a new block at level + 1 listing the same sources replaces it; one
 * left empty is dropped), as Prometheus's clean_tombstones. The head's
 * tombstones stay until its samples are cut into a block. Stops at the
 * first error (BASE_E_INVAL read-only, BASE_E_IO, BASE_E_NOMEM). */
int tsdb_db_clean_tombstones(tsdb_db *db, char *err, size_t errlen);

/* ---- accounting --------------------------------------------------------- */

typedef struct tsdb_db_stats {
    tsdb_head_stats head;
    size_t blocks;
    uint64_t block_bytes, block_series, block_samples;
    int64_t blocks_mint, blocks_maxt; /* 0, 0 without blocks */
    uint64_t wal_bytes;
    uint64_t head_cuts, compactions, compactions_failed, retention_deleted;
    uint64_t maintain_runs, maintain_failed;
    uint64_t tombstones;         /* deleted intervals: head + blocks */
    uint64_t tombstone_cleanups; /* blocks rewritten by clean_tombstones */
    char last_error[256];
} tsdb_db_stats;
void tsdb_db_stats_get(tsdb_db *db, tsdb_db_stats *ret);

/* The metas of the open blocks, oldest first (caller frees *ret). */
int tsdb_db_blocks(tsdb_db *db, tsdb_block_meta **ret, size_t *ret_n);

#endif
