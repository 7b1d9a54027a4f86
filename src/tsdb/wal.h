/* wal.h -- the TSDB's write-ahead log: numbered segment files of framed,
 * checksummed records, group commit for concurrent writers, replay that
 * survives torn and corrupt tails, and checkpoints that bound replay.
 *
 * ON DISK (directory `dir`):
 *   dir/00000001, dir/00000002, ...   segments, 8 decimal digits
 *   dir/checkpoint.00000007/00000000  the checkpoint: the state that
 *                                     segments < 7 produced, same framing
 *   dir/checkpoint.00000007.tmp/      a checkpoint being written (removed
 *                                     at open: it never became visible)
 * A segment (and the checkpoint file) is a plain sequence of frames, no
 * file header:
 *   bytes 0..3  u32 little endian: bit 31 set when the payload is
 *               snappy-compressed (TSDB_WAL_FRAME_SNAPPY); bits 0..30 the
 *               payload's length L on disk, 1..TSDB_WAL_RECORD_MAX
 *   bytes 4..7  u32 little endian CRC-32C (Castagnoli, reflected, init and
 *               final xor 0xffffffff; the check value of "123456789" is
 *               0xe3069283) over bytes 0..3 then the L payload bytes
 *   bytes 8..   the payload: one record (record.h), never split; when
 *               compressed, the snappy raw format of the record, which
 *               decompresses to 1..TSDB_WAL_RECORD_MAX bytes
 * A record is never split across segments; a new segment is started when
 * the next batch would grow the current one past segment_size (so a
 * segment may exceed it by one batch, or hold one record larger than it).
 * COMPRESSION (opts.compress, Prometheus's --storage.tsdb.wal-compression,
 * on by default in the database): records of at least
 * TSDB_WAL_COMPRESS_MIN bytes are snappy-compressed when that saves at
 * least an eighth; replay reads both kinds, whatever the setting, so it
 * can be switched at any restart. A compressed payload that does not
 * decompress is damage like a bad CRC.
 * CRC-32C rather than zlib's crc32: it is what Prometheus's WAL uses, the
 * tsdb module does not link zlib, and SSE4.2 computes it in hardware (a
 * table-driven fallback is used elsewhere); it is one function in wal.c.
 *
 * DURABILITY POLICY (tsdb_wal_opts.sync):
 *   TSDB_WAL_SYNC_NONE (default)  an append returns after write(2) of its
 *       batch: the bytes are in the kernel's page cache, so they survive
 *       kill -9 of the process (not a power loss or kernel crash).
 *   TSDB_WAL_SYNC_BATCH  fdatasync(2) after every batch write, before
 *       acknowledging: survives power loss, costs one device flush a batch.
 *   TSDB_WAL_SYNC_INTERVAL  fdatasync when sync_interval_ms have passed
 *       since the last one (checked at each batch): power loss loses at
 *       most that window.
 * Segments are fdatasync'ed when they are closed (roll, close) under every
 * policy, and checkpoints are always synced before they are renamed.
 *
 * GROUP COMMIT. Writers frame records into their own buffer (no lock),
 * then tsdb_wal_enqueue copies the frames into the pending batch under the
 * WAL mutex and returns a ticket; tsdb_wal_wait(ticket) returns once the
 * batch holding that ticket has been written. The first waiter to find no
 * write in progress becomes the leader: it swaps the pending batch out,
 * writes it with one write(2) (looping on short writes) without holding the
 * mutex, and wakes everyone; writers that arrived meanwhile form the next
 * batch. The order of enqueue calls is the order on disk. A write error is
 * sticky: every later enqueue and wait fails with BASE_E_IO.
 *
 * REPLAY (tsdb_wal_open) reads the newest checkpoint, then every segment
 * numbered >= the checkpoint's in order, handing each valid payload to the
 * caller. A frame with a bad length or CRC, or one cut short by the end of
 * the file, ends that segment: in the last segment the file is truncated
 * to the last good frame (a torn tail after a crash is expected); in an
 * older one the rest of that segment is skipped (it cannot be resynced
 * without a marker) and replay goes on with the next segment. Either way
 * the damage is counted in tsdb_wal_report and described once in its
 * `first_error`; open never fails because of damaged content. Leftover
 * segments older than the checkpoint and *.tmp checkpoints are deleted,
 * except segments numbered >= opts.hold_from (see HOLD): those are kept
 * but not replayed (the checkpoint covers them), and do not count in
 * tail_bytes nor in the "segment(s) missing" check.
 * Writes then go to a fresh segment numbered after the last one. With
 * opts.read_only nothing on disk changes (damage is reported and skipped,
 * a missing directory reads as empty) and no segment is opened.
 *
 * HOLD (for readers of the WAL, e.g. remote write). tsdb_wal_hold(w, s)
 * keeps every segment numbered >= s from being deleted by checkpoints
 * (segments < s are deleted as usual; 0 releases the hold), so a reader
 * that is behind never loses a segment it has not read. A checkpoint's
 * deletion and a hold are serialised: once tsdb_wal_hold returns, no later
 * deletion removes a segment >= s (one deleted before the call is gone:
 * a reader that sets its first hold checks that its segment still exists
 * and otherwise starts from the checkpoint). Held segments cost disk
 * space (the database's size retention counts the whole WAL directory)
 * but never replay time: once a checkpoint covers them they are skipped.
 * A reader that restarts on a held segment older than the checkpoint
 * reads the checkpoint's series records, then the held segments: the
 * head writes into checkpoints the series that those segments still
 * name (head.h CHECKPOINT), so every sample's ref resolves.
 *
 * READING (tsdb_wal_frame_read, tsdb_wal_list) needs no tsdb_wal: a
 * reader in another thread or process lists the directory, reads
 * segments while the writer appends (a frame cut short at the end of the
 * file is BASE_E_TRUNCATED: come back later) and holds what it needs.
 *
 * THREADS. enqueue/wait/log may be called from any number of threads.
 * Checkpoints and close are for one thread at a time; close must not race
 * with appends.
 */
#ifndef KELVIN_TSDB_WAL_H
#define KELVIN_TSDB_WAL_H

#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"

#define TSDB_WAL_SEGMENT_SIZE ((uint64_t)128 << 20)
#define TSDB_WAL_RECORD_MAX   ((uint32_t)1 << 27) /* 128 MiB */
#define TSDB_WAL_FRAME_HDR    8
#define TSDB_WAL_FRAME_SNAPPY ((uint32_t)1 << 31)
#define TSDB_WAL_COMPRESS_MIN 64

enum {
    TSDB_WAL_SYNC_NONE = 0,
    TSDB_WAL_SYNC_BATCH = 1,
    TSDB_WAL_SYNC_INTERVAL = 2,
};

typedef struct tsdb_wal_opts {
    uint64_t segment_size;     /* 0: TSDB_WAL_SEGMENT_SIZE */
    int sync;                  /* TSDB_WAL_SYNC_* */
    uint32_t sync_interval_ms; /* for TSDB_WAL_SYNC_INTERVAL (0: 1000) */
    int compress;              /* snappy-compress records (see COMPRESSION) */
    int read_only;             /* replay only: nothing is created, truncated,
                                * deleted or written; appends fail with
                                * BASE_E_INVAL (tools reading a live dir) */
    uint64_t hold_from;        /* 0: none; else segments >= hold_from are
                                * kept at open (see REPLAY) and the hold
                                * starts there (tsdb_wal_hold) */
} tsdb_wal_opts;

typedef struct tsdb_wal_report {
    uint64_t checkpoint;      /* number of the checkpoint read, 0 if none */
    uint64_t segments;        /* segments read */
    uint64_t records;         /* valid records handed out (checkpoint included) */
    uint64_t bytes;           /* their payload bytes */
    uint64_t corruptions;     /* damaged places found (torn tails included) */
    uint64_t truncated_bytes; /* bytes cut off the last segment */
    uint64_t skipped_bytes;   /* bytes of older segments not replayed */
    char first_error[256];    /* "" or the first problem, for one log line */
} tsdb_wal_report;

typedef struct tsdb_wal_stats {
    uint64_t records, bytes, batches, syncs, segment; /* segment: current */
    /* Bytes a replay would read after the newest checkpoint: the segments
     * replayed at open plus every batch written since, less what a
     * committed checkpoint covers (what tsdb_head_checkpoint_due weighs). */
    uint64_t tail_bytes;
} tsdb_wal_stats;

/* Called for every valid record in order. from_checkpoint: 1 while the
 * checkpoint is read. A non-zero return stops replay and open returns it. */
typedef int (*tsdb_wal_replay_fn)(void *ctx, const uint8_t *rec, size_t len, int from_checkpoint);

typedef struct tsdb_wal tsdb_wal;

/* Creates dir if needed, replays it through fn (may be NULL), repairs the
 * tail and opens a new segment for writing. Errors (err gets the path and
 * errno text): BASE_E_IO, BASE_E_NOMEM, BASE_E_LIMIT (dir longer than 3800
 * bytes), or fn's return. */
int tsdb_wal_open(const char *dir, const tsdb_wal_opts *opts, tsdb_wal_replay_fn fn, void *ctx,
                  tsdb_wal_report *ret_report, tsdb_wal **ret, char *err, size_t errlen);
/* Writes what is pending, syncs and closes the segment, frees w. Returns
 * 0 or the sticky error. */
int tsdb_wal_close(tsdb_wal *w);

/* Framing helpers: begin appends a placeholder header and returns its
 * offset; end fills it in over everything appended since. Returns 0,
 * BASE_E_LIMIT (payload empty or over TSDB_WAL_RECORD_MAX) or out's error. */
size_t tsdb_wal_frame_begin(base_buf *out);
int tsdb_wal_frame_end(base_buf *out, size_t start);
/* Same, compressing the payload when compress != 0 and it pays (see
 * COMPRESSION); out shrinks accordingly. Also BASE_E_NOMEM. */
int tsdb_wal_frame_end_z(base_buf *out, size_t start, int compress);
/* Whether w was opened with compression (writers pass it to frame_end_z). */
int tsdb_wal_compressing(const tsdb_wal *w);
/* stats.tail_bytes alone. */
uint64_t tsdb_wal_tail_bytes(tsdb_wal *w);

/* Copies frames (whole frames, made as above) into the pending batch.
 * Returns 0 and a ticket for tsdb_wal_wait, or the sticky error. */
int tsdb_wal_enqueue(tsdb_wal *w, const void *frames, size_t len, uint64_t *ret_ticket);
/* Returns once the ticket's batch is written (and synced, per policy). */
int tsdb_wal_wait(tsdb_wal *w, uint64_t ticket);
/* frame + enqueue + wait for one record. */
int tsdb_wal_log(tsdb_wal *w, const void *rec, size_t len);
/* Writes everything enqueued so far (as waiting on every ticket out would):
 * 0 or the sticky error. */
int tsdb_wal_flush(tsdb_wal *w);

void tsdb_wal_stats_get(tsdb_wal *w, tsdb_wal_stats *ret);

/* Checkpoint: begin writes out everything pending, starts segment N and
 * returns a writer for checkpoint.N (which stands for all segments < N);
 * add appends one record; commit syncs, renames it into place, then
 * deletes segments < N (but held ones, see HOLD) and older checkpoints.
 * abort discards it. The
 * caller must make sure the records it adds describe everything that
 * segments < N held (see head.c). */
typedef struct tsdb_wal_ckpt tsdb_wal_ckpt;
int tsdb_wal_ckpt_begin(tsdb_wal *w, tsdb_wal_ckpt **ret, char *err, size_t errlen);
int tsdb_wal_ckpt_add(tsdb_wal_ckpt *c, const void *rec, size_t len);
/* Same, compressing the record only when compress != 0 (and it pays):
 * records that do not compress (encoded chunks) skip the attempt. */
int tsdb_wal_ckpt_add_z(tsdb_wal_ckpt *c, const void *rec, size_t len, int compress);
/* N: the checkpoint's number (the segment begin started). */
uint64_t tsdb_wal_ckpt_number(const tsdb_wal_ckpt *c);
/* Bytes framed into the checkpoint so far. */
uint64_t tsdb_wal_ckpt_bytes(const tsdb_wal_ckpt *c);
int tsdb_wal_ckpt_commit(tsdb_wal_ckpt *c, char *err, size_t errlen);
void tsdb_wal_ckpt_abort(tsdb_wal_ckpt *c);

/* ---- hold and reading (see HOLD, READING) ------------------------------- */

/* Segments numbered >= seg are not deleted by checkpoints while held (a
 * remote-write reader still reads them); seg 0 releases the hold. The
 * latest call wins (the remote module passes the minimum over its
 * queues). Thread-safe and cheap (an uncontended mutex; a checkpoint
 * deleting segments holds it for as long as its unlinks take). */
void tsdb_wal_hold(tsdb_wal *w, uint64_t seg);
/* The current hold (0: none). */
uint64_t tsdb_wal_held(tsdb_wal *w);
/* The segment being written now (0 for a read-only WAL); any thread. */
uint64_t tsdb_wal_segment(tsdb_wal *w);

/* Reads the frame at p[0..len). 0: the record is *ret_rec, *ret_len bytes
 * (pointing into p, or into *zbuf when the frame is compressed: *zbuf /
 * *zcap grow as needed, the caller frees *zbuf), the frame's size on disk
 * is *ret_used. BASE_E_TRUNCATED: p holds only part of a frame (a writer
 * may still be adding it, or a torn tail). BASE_E_PARSE: damaged (bad
 * length, CRC, or a compressed payload that does not decompress).
 * BASE_E_NOMEM. Out-parameters are written only on success. */
int tsdb_wal_frame_read(const uint8_t *p, size_t len, uint8_t **zbuf, size_t *zcap, const uint8_t **ret_rec,
                        size_t *ret_len, size_t *ret_used);
/* The WAL directory's segment numbers, ascending (*ret malloc'ed, caller
 * frees; NULL when there are none), and the newest committed checkpoint's
 * number in *ret_ckpt (0: none). Changes nothing on disk. BASE_E_IO when
 * dir cannot be read, BASE_E_NOMEM. */
int tsdb_wal_list(const char *dir, uint64_t **ret, size_t *ret_n, uint64_t *ret_ckpt);

/* CRC-32C of buf, continuing from crc (0 to start). */
uint32_t tsdb_crc32c(uint32_t crc, const void *buf, size_t len);

#endif
