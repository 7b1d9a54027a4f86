/* block.h -- persistent, immutable TSDB blocks: writing one from the head
 * (or any sorted series source), opening one read-only, selecting series
 * from it, merging blocks (compaction), retention, and the data
 * directory's lock. The bytes are documented in format.h.
 *
 * WRITING streams each series' samples into chunks (chunk.h appender,
 * re-chunked at the writer's chunk size) appended to chunk segments, keeps
 * the label sets and chunk metas in memory, then writes the index (symbols,
 * series, postings, TOC) and meta.json into <parent>/<ULID>.tmp, fsyncs
 * everything and renames the directory into place: a block either exists
 * complete or not at all.
 *
 * READING maps the index and chunk segments (mmap, read-only) and checks on
 * open every CRC of the index, the order and ranges of everything in it,
 * and that each chunk ref lies inside its segment; a damaged block fails
 * to open with a message naming the file and the problem (nothing is
 * trusted before it is checked, so a bad file never crashes the reader).
 * Chunk CRCs are checked when a chunk is read (select) or by
 * tsdb_block_verify; a bad chunk ends that series' samples with
 * BASE_E_PARSE and the other series stay readable.
 *
 * DELETION (tsdb_block_tombstone) is the one change a block takes after
 * it is written: deleted time ranges per series go into its tombstones
 * file (format.h), replaced atomically; reads (select, listings,
 * compaction, which therefore drops deleted samples for good) skip them
 * from the moment the call returns. Sets keep the tombstones they were
 * selected with.
 *
 * Ownership: a tsdb_block owns its mappings; series sets borrow the block
 * (close it after freeing them). A block may be read from many threads at
 * once; a series set is used by one thread at a time.
 *
 * Errors: 0 or a negative BASE_E_*; err buffers (may be NULL) get a message.
 */
#ifndef KELVIN_TSDB_BLOCK_H
#define KELVIN_TSDB_BLOCK_H

#include <stddef.h>
#include <stdint.h>

#include "labels/labels.h"
#include "tsdb/format.h"
#include "tsdb/head.h"

typedef struct tsdb_ulid {
    uint8_t b[16];
} tsdb_ulid;

/* A new ULID for time ms (Unix milliseconds) with 80 random bits. */
int tsdb_ulid_new(int64_t ms, tsdb_ulid *ret);
/* Writes 26 characters and a NUL into out[27]. */
void tsdb_ulid_format(const tsdb_ulid *u, char out[27]);
/* Parses exactly 26 Crockford base32 characters: 0 or BASE_E_PARSE. */
int tsdb_ulid_parse(base_str s, tsdb_ulid *ret);

typedef struct tsdb_block_meta {
    tsdb_ulid ulid;
    int64_t mint, maxt; /* [mint, maxt) */
    uint64_t num_series, num_samples, num_chunks;
    uint64_t chunk_bytes; /* bytes of the chunk segment files */
    uint64_t index_bytes; /* bytes of the index file (filled by open/write) */
    uint32_t level;
    uint32_t nsources;
    tsdb_ulid sources[TSDB_BLOCK_MAX_SOURCES];
} tsdb_block_meta;

/* A source of series for the writer: series in labels order (labels_cmp
 * ascending, no duplicates), each with strictly increasing timestamps. */
typedef struct tsdb_series_src {
    void *ctx;
    /* 1 and the next series' labels (valid until the next call), 0 at the
     * end, <0 on error. */
    int (*next)(void *ctx, const labels_set **ret_ls);
    /* 1 and the next sample of the current series, 0 at its end, <0. */
    int (*sample)(void *ctx, int64_t *ret_t, double *ret_v);
} tsdb_series_src;

/* Samples per chunk in the blocks the database and the tools write (head
 * cuts, compaction, backfill): 2 h at 15 s, about 10 % smaller than 120
 * (chunk.h), and a block is never appended to, so a longer chunk costs
 * queries little. */
#define TSDB_BLOCK_CHUNK_SAMPLES 480u

typedef struct tsdb_block_wopts {
    uint32_t chunk_samples;   /* 0: TSDB_CHUNK_DEFAULT_SAMPLES */
    unsigned chunk_flags;     /* chunk.h TSDB_CHUNK_* */
    uint64_t segment_bytes;   /* 0: TSDB_CHUNKS_SEGMENT_DEFAULT */
    uint32_t level;           /* 0: 1 */
    uint32_t nsources;        /* 0: the block is its own source */
    const tsdb_ulid *sources; /* ascending */
    int64_t ulid_ms;          /* 0: now */
} tsdb_block_wopts;

/* Writes the samples of src with mint <= t < maxt as a new block under
 * parent (see WRITING). o may be NULL. Series left without samples are
 * left out; a block with no series is still written. ret_meta (may be NULL)
 * gets the new block's meta. Errors: BASE_E_INVAL (unsorted series or
 * timestamps, mint >= maxt), BASE_E_IO, BASE_E_LIMIT, BASE_E_NOMEM, src's. */
int tsdb_block_write(const char *parent, const tsdb_series_src *src, int64_t mint, int64_t maxt,
                     const tsdb_block_wopts *o, tsdb_block_meta *ret_meta, char *err, size_t errlen);
/* Same, from every series of the head. */
int tsdb_block_write_head(const char *parent, tsdb_head *h, int64_t mint, int64_t maxt,
                          const tsdb_block_wopts *o, tsdb_block_meta *ret_meta, char *err, size_t errlen);

/* ---- reading ------------------------------------------------------------ */

typedef struct tsdb_block tsdb_block;

/* Opens the block directory dir (see READING). BASE_E_PARSE for a damaged
 * index or segment header, BASE_E_IO, BASE_E_NOTFOUND, BASE_E_NOMEM. */
int tsdb_block_open(const char *dir, tsdb_block **ret, char *err, size_t errlen);
void tsdb_block_close(tsdb_block *b);
const tsdb_block_meta *tsdb_block_get_meta(const tsdb_block *b);
const char *tsdb_block_dir(const tsdb_block *b);
/* Reads every chunk (deleted samples too) and checks its CRC and that it
 * decodes to its meta's range: 0, or BASE_E_PARSE with the first bad
 * chunk in err. */
int tsdb_block_verify(tsdb_block *b, char *err, size_t errlen);

typedef struct tsdb_block_set tsdb_block_set;

/* Series matching all matchers (n may be 0) with a chunk overlapping
 * [mint, maxt] (inclusive) and not wholly deleted there, sorted by
 * labels. */
int tsdb_block_select(tsdb_block *b, labels_matcher *const *ms, size_t n, int64_t mint, int64_t maxt,
                      tsdb_block_set **ret);
/* 1, 0 at the end, <0 (BASE_E_NOMEM). */
int tsdb_block_set_next(tsdb_block_set *s);
/* The current series' labels (valid until next/free). */
const labels_set *tsdb_block_set_labels(const tsdb_block_set *s);
/* The next sample of the current series within [mint, maxt], deleted
 * ones skipped: 1, 0 at the end, BASE_E_PARSE on a chunk with a bad CRC
 * or encoding (the series' remaining samples are dropped). */
int tsdb_block_set_sample(tsdb_block_set *s, int64_t *ret_t, double *ret_v);
/* Up to cap (>= 1) next samples of the current series into t[] and v[], decoded
 * straight into them: the count, 0 at the series' end, <0 as above. The
 * samples before a damaged spot are returned first and the error by the
 * next call, so the sequence equals that of tsdb_block_set_sample (the
 * two may be mixed). */
int tsdb_block_set_samples(tsdb_block_set *s, int64_t *t, double *v, size_t cap);
/* The next chunk of the current series overlapping [mint, maxt], CRC
 * checked: 1 with data (encoding byte first, into the mapping), 0, <0.
 * Raw chunks: tombstones are not applied (tools). */
int tsdb_block_set_chunk(tsdb_block_set *s, int64_t *ret_mint, int64_t *ret_maxt, const uint8_t **ret_data,
                         size_t *ret_len);
size_t tsdb_block_set_count(const tsdb_block_set *s);
void tsdb_block_set_free(tsdb_block_set *s);

/* Label names (values of `name`) of the series matching ms (n == 0: all
 * series of the block). */
int tsdb_block_label_names(tsdb_block *b, labels_matcher *const *ms, size_t n, tsdb_strs **ret);
int tsdb_block_label_values(tsdb_block *b, base_str name, labels_matcher *const *ms, size_t n,
                            tsdb_strs **ret);

/* ---- deletion ----------------------------------------------------------- */

/* Deletes the samples in [mint, maxt] (inclusive) of every series matching
 * ms (n == 0: every series), as Prometheus 2.42's Block.Delete: a series
 * with a chunk overlapping the range gets the range clamped to its first
 * and last chunk as a tombstone, merged with the ones it has, and the
 * block's tombstones file is rewritten (tmp + fsync + rename + fsync of
 * the directory) before readers see the new table. ret_series (may be
 * NULL) gets the number of series the range hit. One deletion at a time
 * per block (others wait). Errors: BASE_E_IO (the block keeps its old
 * tombstones), BASE_E_NOMEM. */
int tsdb_block_tombstone(tsdb_block *b, labels_matcher *const *ms, size_t n, int64_t mint, int64_t maxt,
                         uint64_t *ret_series, char *err, size_t errlen);
/* Deleted intervals the block holds (Prometheus's numTombstones). */
uint64_t tsdb_block_num_tombstones(tsdb_block *b);

/* ---- compaction, retention, lock ---------------------------------------- */

/* Merges blocks into one new block under parent: series merged by labels,
 * samples merged by time (a timestamp present in several blocks is taken
 * from the first block listed), deleted samples left out, re-chunked at
 * o->chunk_samples. Range: the union of the inputs'; level: their highest
 * + 1; sources: the union. The inputs are not deleted. One block (n == 1)
 * is rewritten without its deleted samples (cleaning tombstones).
 * BASE_E_LIMIT past TSDB_BLOCK_MAX_SOURCES. */
int tsdb_block_compact(const char *parent, tsdb_block *const *blocks, size_t n, const tsdb_block_wopts *o,
                       tsdb_block_meta *ret_meta, char *err, size_t errlen);

/* Which of n blocks retention deletes: ret_delete[i] = 1 for blocks whose
 * maxt <= newest maxt - retention_ms (retention_ms > 0), and, walking from
 * the newest block (highest maxt) to the oldest, every block from the one
 * that makes the running total of chunk_bytes + index_bytes exceed
 * max_bytes (max_bytes > 0). 0 disables a rule. Returns the count. */
size_t tsdb_retention_plan(const tsdb_block_meta *metas, size_t n, int64_t retention_ms, uint64_t max_bytes,
                           uint8_t *ret_delete);
/* Applies the plan to the blocks under data dir dir (reading each block's
 * meta from its index; blocks that fail to open are left alone and
 * counted in ret_bad): renames each doomed block to <ULID>.tmp-delete and
 * removes it. ret_deleted / ret_bad may be NULL. */
int tsdb_retention_apply(const char *dir, int64_t retention_ms, uint64_t max_bytes, size_t *ret_deleted,
                         size_t *ret_bad, char *err, size_t errlen);
/* Deletes one block directory (rename to .tmp-delete, then remove). */
int tsdb_block_delete(const char *block_dir, char *err, size_t errlen);

typedef struct tsdb_dir_lock tsdb_dir_lock;
/* Creates dir/lock and takes an exclusive flock on it, without waiting:
 * BASE_E_CONFLICT when another process (or another open in this one)
 * holds it. */
int tsdb_dir_lock_take(const char *dir, tsdb_dir_lock **ret, char *err, size_t errlen);
void tsdb_dir_lock_release(tsdb_dir_lock *l);

#endif
