/* head.h -- the in-memory head of the TSDB: series, postings index,
 * compressed chunks, appenders logged to the WAL, and the read API.
 *
 * SERIES. A series is a label set (labels.h) with a ref: a number > 0
 * handed out in increasing order, never reused within one WAL's life
 * (replay continues after the largest ref seen). Series are found by
 * labels_hash in 256 sharded open-addressing tables; equal hashes are told
 * apart by comparing the sets (collisions are handled, and tested by
 * forcing them). A second sharded table maps ref -> series. Postings lists
 * are delta-coded (a single ref inline).
 *
 * CHUNKS. Each series appends into a compact open-chunk stream of its own
 * (delta-of-delta times, Gorilla XOR values; a few dozen bytes of state
 * instead of a tsdb_chunk_app per series), cut every `chunk_samples`
 * samples (default 120), or before a chunk would span more than
 * UINT32_MAX ms, by decoding it into the thread's tsdb_chunk_app
 * (chunk.h), which picks the chunk encoding. A series' closed chunks live
 * in one allocation (16 bytes of meta each, then their bytes).
 *
 * MEMORY per active series (KELVIN_TSDB_BENCH=1 tests/test_tsdb_head,
 * 100k series of 7 labels, 240 samples, open chunk full): about 560 bytes
 * all in: series struct 128 + open chunk stream ~160, one closed chunk
 * ~96, index ~60, label set + strings ~112.
 *
 * APPENDS. An appender (one per thread or per scrape) collects samples by
 * label set or by ref; commit applies them and logs them. Labels are hashed
 * and looked up before the commit lock; under the head's commit lock the
 * missing series are created, the samples are applied (per-series state is
 * guarded by 4096 striped mutexes shared with readers), and one series
 * record (for new series) and one samples record (accepted samples only)
 * are queued into the WAL; the lock is released and the commit waits for
 * the WAL's group commit. So the WAL holds exactly what the head accepted,
 * in the order it accepted it, and replay rebuilds the same head; commit
 * returns only after the bytes are written (wal.h: survives kill -9).
 * Rejections are counted per reason: out_of_order (t before the series'
 * last sample), duplicate (same t, different value bits; the same bits are
 * a no-op counted as `noop`), too_old (t before the head's min valid time,
 * set by tsdb_head_gc), unknown_ref.
 *
 * OUT-OF-ORDER WINDOW (ooo_window_ms > 0; Prometheus 2.39+'s
 * storage.tsdb.out_of_order_time_window). A sample with t after the
 * series' last in-order sample appends in order as always, and one with t
 * equal to it is a noop or duplicate as always. One with t before it is
 * accepted into the series' out-of-order (OOO) store when t >= head max
 * time - window (the head's newest sample, see tsdb_head_bounds; the
 * boundary is inclusive) and t >= the min valid time; else it is too_old
 * (with the window on, "out_of_order" is never counted). If t is already
 * held by the series, in order or out of order, the sample is a noop
 * (same value bits) or a duplicate (first write wins). Accepted OOO
 * samples count in `appended` and in `out_of_order_appended`. The store
 * is allocated with a series' first OOO sample: a buffer of up to 32
 * samples sorted by time which, when full, is merged into immutable
 * chunks (the chunks it overlaps and a small neighbour are re-encoded),
 * kept sorted and non-overlapping. Reads merge the in-order chunks, the
 * OOO chunks and the buffer by time, each timestamp exactly once, so
 * select, block writing (tsdb_block_write_head) and checkpoints see OOO
 * samples like any others. Accepted OOO samples are logged in their own
 * record (record.h TSDB_REC_OOO_SAMPLES); replay inserts them into the
 * store without re-checking the window (that decision depended on the
 * head's max time at append, and replay is sharded by series).
 *
 * READS. tsdb_head_select resolves matchers against the postings (sorted
 * ref lists per label pair, plus the list of all refs), intersects them,
 * keeps the series with samples in [mint, maxt], sorts them by labels and
 * returns an iterator; moving to a series copies its overlapping chunks
 * (and a snapshot of the open one) under its stripe lock, so readers never
 * block appenders for longer than a copy and never see freed memory.
 *
 * DELETION. tsdb_head_delete(ms, mint, maxt) adds tombstones, as
 * Prometheus 2.42's Head.Delete: each matching series gets [mint, maxt]
 * clamped to the samples it holds then (so samples appended later are
 * never deleted), merged with its earlier ones. They are logged to the
 * WAL (record.h TSDB_REC_TOMBSTONES) under the commit lock and replayed;
 * checkpoints keep those of the samples they keep; GC drops those that
 * end before its mint (and those of the series it removes). They filter reads (select, the block
 * written from the head, listings) from the moment the call returns;
 * samples leave memory with GC as always.
 *
 * GC. tsdb_head_gc(mint) frees closed chunks (in order and OOO) that end
 * before mint and buffered OOO samples before it, removes
 * series with no sample at or after mint (from the tables and postings;
 * memory is freed when the last reader lets go) and rejects later appends
 * before mint as too_old. Removed series come back from the WAL on the
 * next replay until a checkpoint has been taken. While the WAL is held
 * (see HELD SERIES) GC also remembers what it removes.
 *
 * CHECKPOINT. tsdb_head_checkpoint(cutoff) rolls the WAL to segment N,
 * writes into checkpoint.N every live series (series records), then the
 * held removed series (series records, see HELD SERIES) -- every series
 * record before the first chunks record: remote write's WAL reader stops
 * reading a checkpoint there -- and each series' chunks as they are in memory (record.h TSDB_REC_CHUNKS): its
 * closed in-order chunks that end at or after cutoff (the last one always
 * when there is no open chunk: the last sample decides what is out of
 * order), its open chunk's staging stream, its OOO chunks that end at or
 * after cutoff and its buffered OOO samples from cutoff on; then the
 * tombstones of live series that reach the series' oldest sample held
 * (record.h TSDB_REC_TOMBSTONES, read after the roll: whole chunks come
 * back, so do the deletions inside them); then deletes segments < N (but those a WAL reader holds:
 * wal.h HOLD). So a checkpoint keeps every sample at or
 * after cutoff and, as GC does, whole chunks: the samples before cutoff of a chunk that straddles it come
 * back too (a checkpoint at the min valid time reproduces the head exactly). Every record in segments < N was
 * applied to the head before the roll (apply happens before queueing, both under the commit lock), so nothing
 * acknowledged is lost. Appends between the roll and the moment the writer reaches their series are both in
 * the checkpoint and in segment N; applying them again at replay changes nothing (same time and bits: noop;
 * an older time: an out-of-order rejection, or a noop in the OOO store). Before the checkpoint is put in
 * place, commits that had applied samples when the writer read them are
 * waited for and the WAL is written out, so the checkpoint never holds
 * part of a batch that the WAL lacks (a kill cannot keep half of an
 * unacknowledged commit). The writer holds one series'
 * stripe lock at a time, for the copy of its chunk bytes: appenders are
 * never stopped. A checkpoint costs one sequential write of the head's
 * chunk bytes (uncompressed: chunks do not compress) plus its label sets.
 *
 * HELD SERIES (Prometheus's Head.deleted). A WAL reader (remote write)
 * that restarts on a held segment older than the checkpoint (wal.h HOLD)
 * reads the checkpoint's series records, then the held segments, and
 * must find every ref their samples name, also those of series GC has
 * removed since. So while a hold is set at segment H <= the segment being
 * written, GC remembers (ref, labels, that segment S) of every series it
 * removes (the WAL is written out first: every record naming ref is in
 * segments <= S); a checkpoint writes, after the live series, series
 * records for the remembered series with S >= H (read at the checkpoint's
 * start), and once committed forgets those with S < H (S < N without a
 * hold). Without a hold nothing is remembered, so a hold must be set
 * before the reader needs it (a series removed before is not brought
 * back), and it should not move back. Memory: one entry (32 bytes and a
 * reference to the label set) per series removed since the hold's
 * segment; stats series_held. Replay applies such a record as any series
 * record: it creates the series, empty (held segments older than the
 * checkpoint are not replayed; only a series removed after the
 * checkpoint's roll gets back the samples segments >= N hold, as any
 * removed series comes back until the next checkpoint), which the next
 * GC removes again, or, when a live series has its labels, an alias of
 * it; while
 * held, replay remembers each alias as GC would (at the segment it opens),
 * since the live series is checkpointed under its own ref only.
 *
 * REPLAY. Series records are applied by the thread reading the WAL;
 * sample and chunks records are batched and handed to up to 4 workers,
 * each applying the series it owns (ref % workers), so a checkpoint's
 * chunks are installed in parallel too. A chunks entry is installed
 * without decoding or re-encoding samples: closed chunks are checked
 * (header, sample count, first time) and copied, all of a series' in one
 * allocation; the open chunk's stream is decoded once (to check it and to
 * recover its appender state: last time, interval, value, XOR window) and
 * resumed, so the series goes on appending into the same open chunk, and
 * the head after replay is the head that was checkpointed. An entry that
 * is damaged (CRC-valid, but breaking the format or these checks) is
 * skipped whole and reported (tsdb_wal_report corruptions and
 * first_error; stats replay_corrupt); other series are unaffected, and a
 * closed chunk whose damage the checks cannot see is a read error of its
 * series only. Samples after the checkpoint replay as samples.
 *
 * SIZE-TRIGGERED CHECKPOINTS. Replay time is (checkpoint bytes, installed
 * at memory speed) + (WAL since the checkpoint, applied sample by sample,
 * ~10x slower per sample). tsdb_head_checkpoint_due says when the WAL
 * written since the newest checkpoint has passed opts.checkpoint_bytes
 * (default TSDB_HEAD_CHECKPOINT_BYTES); the database's maintenance
 * (db.h) then checkpoints at the head's min valid time, dropping nothing.
 * WRITE AMPLIFICATION: each such checkpoint rewrites the head's chunks,
 * so the disk sees (head chunk bytes / threshold) extra bytes per WAL
 * byte: see TSDB_HEAD_CHECKPOINT_BYTES for the figures.
 *
 * THREADS. Appenders, select, label listings, stats, postings stats, gc
 * and a checkpoint may run concurrently from any threads; one appender
 * object is used by one thread at a time, one checkpoint runs at a time.
 * open/close are single-threaded.
 *
 * Errors: 0 or a negative BASE_E_*; err buffers get a message.
 */
#ifndef KELVIN_TSDB_HEAD_H
#define KELVIN_TSDB_HEAD_H

#include <stddef.h>
#include <stdint.h>

#include "labels/labels.h"
#include "tsdb/wal.h"

typedef struct tsdb_head tsdb_head;

/* WAL bytes since the last checkpoint that make one due (see
 * SIZE-TRIGGERED CHECKPOINTS). bench/tsdb_replay.c, 1M series x 480
 * samples (2 h at 15 s; WAL 2.56 B/sample, 1171 MiB), 2 shared cores:
 * 17 checkpoints during the 2 h, growing to 311 MiB (chunks + labels),
 * 1.6 s at most and 23.5 s in all (0.3% of a core over 2 h of real
 * time), 3195 MiB written = 2.7 x the WAL's bytes; a cold restart then
 * installs the checkpoint and replays the 60 MiB after it in 4.6 s
 * (6.5 CPU s), against 62-81 s replaying the WAL sample by sample.
 * Halving the threshold halves the worst tail (~1.5 s of that at 64 MiB)
 * and doubles the rewriting. */
#define TSDB_HEAD_CHECKPOINT_BYTES ((uint64_t)64 << 20)

typedef struct tsdb_head_opts {
    const char *wal_dir; /* NULL: in memory only, nothing logged */
    tsdb_wal_opts wal;
    uint32_t chunk_samples;    /* 0: TSDB_CHUNK_DEFAULT_SAMPLES (120) */
    int64_t ooo_window_ms;     /* out-of-order window; 0 (or < 0): off */
    uint64_t checkpoint_bytes; /* 0: TSDB_HEAD_CHECKPOINT_BYTES */
} tsdb_head_opts;

/* Opens the WAL (if any) and replays it into a new head. rep (may be
 * NULL) gets the WAL's report: log rep->first_error once if non-empty. */
int tsdb_head_open(const tsdb_head_opts *opts, tsdb_head **ret, tsdb_wal_report *rep, char *err,
                   size_t errlen);
/* Closes the WAL and frees everything. No appender or reader may be
 * alive. Returns the WAL's close error, if any. */
int tsdb_head_close(tsdb_head *h);

/* ---- appending ---------------------------------------------------------- */

typedef struct tsdb_head_app tsdb_head_app;

typedef struct tsdb_append_result {
    uint64_t appended;              /* accepted, in order or out of order */
    uint64_t out_of_order_appended; /* of those, into the OOO store */
    uint64_t noop;                  /* same timestamp, same value bits: ignored */
    uint64_t out_of_order;          /* before the last sample, no window */
    uint64_t duplicate;             /* same timestamp, different value */
    uint64_t too_old;               /* before min valid time, or outside the window */
    uint64_t unknown_ref;
    uint64_t series_created;
} tsdb_append_result;

int tsdb_head_app_new(tsdb_head *h, tsdb_head_app **ret);
void tsdb_head_app_free(tsdb_head_app *a);
/* Queues a sample for the series ls (the appender takes a reference). */
int tsdb_head_app_add(tsdb_head_app *a, const labels_set *ls, int64_t t, double v);
/* Queues a sample for an existing series by ref. */
int tsdb_head_app_add_ref(tsdb_head_app *a, uint64_t ref, int64_t t, double v);
/* Applies and logs everything queued; returns after the WAL write. The
 * appender is empty afterwards and reusable. res (may be NULL) gets the
 * counts of this commit. Errors: BASE_E_NOMEM, BASE_E_IO (WAL; the samples
 * may be in memory but are not acknowledged). */
int tsdb_head_app_commit(tsdb_head_app *a, tsdb_append_result *res);
/* Forgets what is queued. */
void tsdb_head_app_rollback(tsdb_head_app *a);

/* The ref of series ls: 0 or BASE_E_NOTFOUND. */
int tsdb_head_ref(tsdb_head *h, const labels_set *ls, uint64_t *ret_ref);

/* Pinned series, for a writer that appends to the same series again and
 * again (a scrape loop's cache): holding the series itself skips the
 * lookup of its ref (a shard lock and a cache miss) on every sample. A pin
 * keeps the series' memory alive, not the series: one garbage-collected
 * meanwhile makes its samples count as unknown_ref at commit, as a stale
 * ref would (the writer then drops its pins and looks the series up by
 * labels again). Thread-safe; the caller releases every pin it took. */
typedef struct tsdb_head_series tsdb_head_series;
/* The series of ref, or of labels ls, pinned; NULL when the head has none. */
tsdb_head_series *tsdb_head_pin(tsdb_head *h, uint64_t ref);
tsdb_head_series *tsdb_head_pin_labels(tsdb_head *h, const labels_set *ls);
void tsdb_head_unpin(tsdb_head_series *s);
uint64_t tsdb_head_series_ref(const tsdb_head_series *s);
/* Queues a sample for a pinned series (the pin stays the caller's). */
int tsdb_head_app_add_pinned(tsdb_head_app *a, tsdb_head_series *s, int64_t t, double v);

/* ---- reading ------------------------------------------------------------ */

typedef struct tsdb_series_set tsdb_series_set;

/* Series matching all matchers (n may be 0: every series) with at least
 * one sample in [mint, maxt], sorted by labels. A series whose samples
 * there are all deleted may be listed and then yields no sample. */
int tsdb_head_select(tsdb_head *h, labels_matcher *const *ms, size_t n, int64_t mint, int64_t maxt,
                     tsdb_series_set **ret);
/* Moves to the next series: 1, 0 at the end, <0 (BASE_E_NOMEM). */
int tsdb_series_set_next(tsdb_series_set *ss);
/* The current series (valid until the next call to next/free). */
const labels_set *tsdb_series_set_labels(const tsdb_series_set *ss);
uint64_t tsdb_series_set_ref(const tsdb_series_set *ss);
/* Next sample of the current series within [mint, maxt], deleted ones
 * skipped: 1, 0 at the end, <0 on a corrupt chunk (BASE_E_PARSE,
 * BASE_E_TRUNCATED). */
int tsdb_series_set_sample(tsdb_series_set *ss, int64_t *ret_t, double *ret_v);
/* Up to cap (>= 1) next samples of the current series into t[] and v[] (closed
 * chunks and the open one decoded straight into them): the count, 0 at
 * the end, <0 as above. Samples before a damaged spot are returned first
 * and the error by the next call, so the sequence equals that of
 * tsdb_series_set_sample (the two may be mixed). */
int tsdb_series_set_samples(tsdb_series_set *ss, int64_t *t, double *v, size_t cap);
size_t tsdb_series_set_count(const tsdb_series_set *ss);
void tsdb_series_set_free(tsdb_series_set *ss);

/* A sorted, duplicate-free list of strings owned by one allocation. */
typedef struct tsdb_strs {
    size_t n;
    base_str *v;
} tsdb_strs;
void tsdb_strs_free(tsdb_strs *s);

/* Label names (n == 0: from the index; else of the matching series with
 * samples in [mint, maxt]). Series whose samples in [mint, maxt] are all
 * deleted are left out (with n == 0 too). */
int tsdb_head_label_names(tsdb_head *h, labels_matcher *const *ms, size_t n, int64_t mint, int64_t maxt,
                          tsdb_strs **ret);
/* Values of label `name`, same rules. */
int tsdb_head_label_values(tsdb_head *h, base_str name, labels_matcher *const *ms, size_t n, int64_t mint,
                           int64_t maxt, tsdb_strs **ret);

/* Cardinality of the index for Prometheus's /api/v1/status/tsdb, from the
 * postings (no series is read), as Prometheus 2.42's MemPostings.Stats:
 * the top `limit` (Prometheus: 10) entries of each list, sorted by count
 * descending; equal counts by name ascending (Prometheus leaves them in Go
 * map order, i.e. random: any order is valid, ours is stable), which also
 * picks the entries kept at the limit. */
typedef struct tsdb_head_card_entry {
    base_str name; /* NUL-terminated, in the result's one allocation */
    uint64_t count;
} tsdb_head_card_entry;

typedef struct tsdb_head_card {
    uint64_t num_series;      /* headStats.numSeries */
    uint64_t num_label_pairs; /* headStats.numLabelPairs: distinct name=value pairs */
    /* seriesCountByMetricName: series per __name__ value */
    tsdb_head_card_entry *series_by_metric;
    size_t n_series_by_metric;
    /* labelValueCountByLabelName: distinct values per label name */
    tsdb_head_card_entry *values_by_name;
    size_t n_values_by_name;
    /* memoryInBytesByLabelName: the byte lengths of a name's distinct values
     * summed (Prometheus 2.42; later versions multiply by series) */
    tsdb_head_card_entry *memory_by_name;
    size_t n_memory_by_name;
    /* seriesCountByLabelValuePair: series per "name=value" */
    tsdb_head_card_entry *series_by_pair;
    size_t n_series_by_pair;
    void *mem; /* private: everything above lives here */
} tsdb_head_card;

/* Fills *ret (free it with tsdb_head_card_free): 0 or BASE_E_NOMEM.
 * limit 0 gives the counts alone. Holds the index's read lock while it
 * walks the postings (appenders creating series wait that long). */
int tsdb_head_postings_stats(tsdb_head *h, size_t limit, tsdb_head_card *ret);
void tsdb_head_card_free(tsdb_head_card *c);

/* ---- maintenance and accounting ----------------------------------------- */

typedef struct tsdb_head_stats {
    uint64_t series;
    uint64_t chunks;                              /* closed in-order chunks */
    uint64_t samples;                             /* samples held, OOO ones included */
    uint64_t ooo_series, ooo_chunks, ooo_samples; /* series with an OOO store; its chunks, samples */
    uint64_t series_created, series_removed;
    tsdb_append_result totals;                /* every commit so far (replay excluded) */
    uint64_t replay_rejected;                 /* samples the replay did not apply */
    uint64_t replay_corrupt;                  /* checkpointed chunks entries found damaged, not installed */
    uint64_t checkpoints;                     /* taken since open */
    uint64_t checkpoint_bytes, checkpoint_ms; /* the last one's size and duration */
    uint64_t tombstones;                      /* deleted intervals held */
    uint64_t series_held; /* removed series checkpoints keep for WAL readers (HELD SERIES) */
    /* bytes, as malloc sizes them */
    uint64_t bytes_series; /* series structs incl. open chunk streams */
    uint64_t bytes_chunks; /* closed chunk bytes and their lists */
    uint64_t bytes_ooo;    /* OOO stores: buffers, chunks, lists */
    uint64_t bytes_index;  /* hash/ref tables and postings */
    uint64_t bytes_labels; /* label sets + interned strings (process-wide) */
    uint64_t bytes_total;
    int64_t mint, maxt; /* over all samples held (0, 0 when empty) */
} tsdb_head_stats;

void tsdb_head_stats_get(tsdb_head *h, tsdb_head_stats *ret);
uint64_t tsdb_head_series_count(tsdb_head *h);

/* Min and max timestamp of the samples held (OOO ones included), in O(1):
 * widened atomically at every accepted append and replayed sample, and
 * recomputed exactly by tsdb_head_gc (only GC drops samples). Mid-commit
 * readers may see a sample's time before its commit returns. Empty head:
 * (INT64_MAX, INT64_MIN), i.e. mint > maxt. */
void tsdb_head_bounds(tsdb_head *h, int64_t *ret_mint, int64_t *ret_maxt);
/* Appends before this time are too_old (INT64_MIN until the first GC;
 * tsdb_head_gc(mint) raises it to mint, never lowers it). */
int64_t tsdb_head_min_valid_time(tsdb_head *h);

/* See DELETION above: n may be 0 (every series). ret_series (may be
 * NULL) gets the number of series that got a tombstone. Errors:
 * BASE_E_NOMEM, BASE_E_IO (WAL: the tombstones may be in memory but are
 * not acknowledged). */
int tsdb_head_delete(tsdb_head *h, labels_matcher *const *ms, size_t n, int64_t mint, int64_t maxt,
                     uint64_t *ret_series);
/* Deleted intervals held (over all series). */
uint64_t tsdb_head_num_tombstones(tsdb_head *h);

/* See GC above. ret_removed (may be NULL) gets the number of series. */
int tsdb_head_gc(tsdb_head *h, int64_t mint, uint64_t *ret_removed);
/* See CHECKPOINT above. BASE_E_INVAL without a WAL. One at a time. */
int tsdb_head_checkpoint(tsdb_head *h, int64_t cutoff, char *err, size_t errlen);
/* The head's WAL (NULL in memory only), for its readers (wal.h HOLD). */
tsdb_wal *tsdb_head_wal(tsdb_head *h);
/* WAL bytes a replay would apply after the newest checkpoint (0 without
 * a WAL): the segments replayed at open plus what was written since. */
uint64_t tsdb_head_wal_bytes_since_checkpoint(tsdb_head *h);
/* 1 when that has reached the checkpoint threshold (opts.checkpoint_bytes),
 * else 0 (always 0 without a WAL). */
int tsdb_head_checkpoint_due(tsdb_head *h);

#endif
