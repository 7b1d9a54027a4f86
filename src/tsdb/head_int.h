/* head_int.h -- test hooks of the head (module-internal). */
#ifndef KELVIN_TSDB_HEAD_INT_H
#define KELVIN_TSDB_HEAD_INT_H

#include <stdint.h>

/* Series hashes are labels_hash(ls) & tsdb__head_hash_mask (default all
 * ones). Tests set it to a few bits to force collisions. Set it before
 * opening a head and restore it after closing. */
extern uint64_t tsdb__head_hash_mask;

/* Threads that replay the WAL at open: 0 (default) min(4, online cores),
 * 1 sequential on the opening thread, n > 1 min(4, n). Tests set it to
 * compare the parallel replay with the sequential one. */
extern int tsdb__head_replay_threads;

/* When non-zero, overrides every head's checkpoint threshold (opts.
 * checkpoint_bytes) in tsdb_head_checkpoint_due: tests and
 * bench/tsdb_replay.c set it (the database passes its own
 * opts.checkpoint_bytes, --storage.tsdb.wal-checkpoint-size). */
extern uint64_t tsdb__head_checkpoint_bytes;

/* When non-zero, the chunk bytes past which a checkpoint splits one
 * series into several chunks entries (default 32 MiB): tests set it low
 * to exercise the split. */
extern uint64_t tsdb__head_ckpt_entry_bytes;

#endif
