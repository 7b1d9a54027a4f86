/* format.h -- the on-disk format of a TSDB block, to the byte.
 *
 * All integers are little endian. "uv" is an unsigned LEB128 varint (at
 * most 10 bytes), "sv" a zigzag-encoded signed varint ((n << 1) ^ (n >> 63)
 * as uv). CRCs are CRC-32C (Castagnoli, tsdb_crc32c in wal.h, the same as
 * the WAL's), stored as u32.
 *
 * BLOCK DIRECTORY. <parent>/<ULID>/ where ULID is 26 characters of
 * Crockford base32 (0-9 A-Z without I L O U) encoding 128 bits: 48 bits of
 * creation time in Unix milliseconds, then 80 random bits, most significant
 * first -- so names sort by creation time. It holds:
 *   meta.json        for humans and tools (Prometheus's field names):
 *                    {"ulid":..., "minTime":..., "maxTime":..., "stats":
 *                    {"numSamples":..,"numSeries":..,"numChunks":..},
 *                    "compaction":{"level":..,"sources":[..]}, "version":1}.
 *                    The reader needs it to exist (it marks a finished
 *                    block) but takes the meta from the index's META
 *                    section, which is CRC-protected.
 *   chunks/000001..  chunk segment files (6 decimal digits, from 1).
 *   index            the index file.
 *   tombstones       optional: deleted time ranges (see TOMBSTONES FILE);
 *                    absent means nothing is deleted. The only file of a
 *                    block that changes after the block is written.
 * A block is written as <parent>/<ULID>.tmp/ (every file fsynced), renamed
 * to <parent>/<ULID>, and the parent directory fsynced. Directories ending
 * in .tmp are leftovers of a crash and never read. Time range: samples
 * with minTime <= t < maxTime (maxTime exclusive, as Prometheus).
 *
 * CHUNK SEGMENT FILE chunks/NNNNNN:
 *   0  4  magic 'K' 'C' 'H' 'K'
 *   4  1  version, TSDB_CHUNKS_VERSION (1)
 *   5  3  zero
 *   8  .. chunk records back to back, each:
 *         uv   len: bytes of chunk data after the encoding byte
 *         u8   encoding (chunk.h TSDB_ENC_*, the chunk's first byte)
 *         len  the rest of the chunk (chunk.h)
 *         u32  CRC-32C of the encoding byte and the len data bytes
 * A chunk ref is (segment number << 32) | byte offset of the record's uv in
 * that segment. A segment is cut before a record would make it exceed the
 * writer's segment size (default 512 MiB, never above 4 GiB).
 *
 * INDEX FILE index:
 *   0  4  magic 'K' 'I' 'D' 'X'
 *   4  1  version, TSDB_INDEX_VERSION (1)
 *   5  3  zero
 *   8  .. four sections in this order: META, SYMBOLS, SERIES, POSTINGS.
 *         Each is: u32 payload length L, L payload bytes, u32 CRC-32C of
 *         the L payload bytes.
 *   end-40  TOC, 40 bytes:
 *         u64 offset of META's length field, u64 of SYMBOLS', u64 of
 *         SERIES', u64 of POSTINGS', u32 zero, u32 CRC-32C of the
 *         preceding 36 TOC bytes.
 *   Sections must lie between the header and the TOC without overlapping.
 *
 * META payload (72 + 16 * nsources bytes):
 *   0  16  ULID (binary, big endian as above)
 *   16  8  i64 minTime (ms)      24  8  i64 maxTime (ms, exclusive)
 *   32  8  u64 numSeries         40  8  u64 numSamples
 *   48  8  u64 numChunks         56  4  u32 compaction level (1 = from head)
 *   60  4  u32 nsources (<= TSDB_BLOCK_MAX_SOURCES)
 *   64  8  u64 total bytes of chunk segment files (headers included)
 *   72  16 * nsources: the source ULIDs, ascending (a level-1 block lists
 *          itself)
 *
 * SYMBOLS payload: uv n, then n times (uv len, len bytes). The strings are
 * strictly ascending bytewise, each at most LABELS_STRING_MAX bytes. A
 * symbol ref is the string's position (0-based). Every label name and value
 * of the block is there.
 *
 * SERIES payload: uv n, then n series, sorted by labels (labels_cmp) with
 * no duplicates. Series id = position (0-based). Each series:
 *   uv npairs (1..LABELS_MAX_PAIRS), npairs times (uv name ref, uv value
 *   ref), names strictly ascending; uv nchunks (>= 1), then per chunk:
 *   sv  mint - prev   (prev = block minTime for the first chunk, else the
 *                      previous chunk's maxt)
 *   uv  maxt - mint
 *   uv  ref - prevref (prevref = 0 for the first chunk, else the previous
 *                      chunk's ref; chunks of a series ascend in ref)
 *   Chunks of a series are in time order and do not overlap; every sample
 *   of a chunk lies in [mint, maxt] (inclusive) and in the block's range.
 *
 * POSTINGS payload: uv n, then n lists sorted by (name, value) strings
 * with no duplicates, each: uv name ref, uv value ref, uv count (>= 1),
 * count times uv id delta (first: the id, then id - previous id, > 0).
 * There is one list per label pair that occurs in the block; ids < the
 * number of series.
 *
 * TOMBSTONES FILE tombstones (written by a deletion, db.h):
 *   0  4  magic 'K' 'T' 'O' 'M'
 *   4  1  version, TSDB_TOMBSTONES_VERSION (1)
 *   5  3  zero
 *   8  .. uv n, then n entries in ascending series id (n <= the block's
 *         number of series), each:
 *           uv  id delta  (the series id for the first entry, else id -
 *                          previous id, >= 1; ids < the number of series)
 *           uv  k (>= 1), then k deleted intervals [mint, maxt] (closed,
 *               milliseconds) in ascending time, neither overlapping nor
 *               adjacent (a mint is at least the previous maxt + 2):
 *                 sv mint (the first interval) or uv mint - previous maxt
 *                    - 2 (the others)
 *                 uv maxt - mint
 *   end-4  u32 CRC-32C of every byte before it
 *   Every sample of series id with mint <= t <= maxt is deleted: readers
 *   (select, listings, compaction) skip it. The file is replaced as a
 *   whole: written to tombstones.tmp, fsynced, renamed over tombstones,
 *   and the block directory fsynced (a tombstones.tmp left by a crash is
 *   never read). A file that fails these checks fails the block's open.
 *   Cleaning tombstones (db.h) rewrites the block without the deleted
 *   samples (a new ULID, level + 1, same sources) and no tombstones file.
 */
#ifndef KELVIN_TSDB_FORMAT_H
#define KELVIN_TSDB_FORMAT_H

#include <stdint.h>

#define TSDB_CHUNKS_MAGIC           "KCHK"
#define TSDB_CHUNKS_VERSION         1u
#define TSDB_CHUNKS_HEADER          8u
#define TSDB_INDEX_MAGIC            "KIDX"
#define TSDB_INDEX_VERSION          1u
#define TSDB_INDEX_HEADER           8u
#define TSDB_INDEX_TOC              40u
#define TSDB_INDEX_META_FIXED       72u
#define TSDB_ULID_LEN               26u
#define TSDB_BLOCK_MAX_SOURCES      256u
#define TSDB_CHUNKS_SEGMENT_DEFAULT ((uint64_t)512 << 20)
#define TSDB_CHUNKS_SEGMENT_MAX     ((uint64_t)UINT32_MAX)
#define TSDB_TOMBSTONES_MAGIC       "KTOM"
#define TSDB_TOMBSTONES_VERSION     1u

#endif
