/* block_int.h -- helpers shared by block*.c (module-internal):
 * little-endian and varint writers, directory fsync and removal.
 * None of them allocate except tsdb__block_rm_rf (nftw's own state). */
#ifndef KELVIN_TSDB_BLOCK_INT_H
#define KELVIN_TSDB_BLOCK_INT_H

#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/str.h"

void tsdb__block_put_uv(base_buf *b, uint64_t v);
void tsdb__block_put_sv(base_buf *b, int64_t v);
void tsdb__block_put_u32(base_buf *b, uint32_t v);
void tsdb__block_put_u64(base_buf *b, uint64_t v);
uint32_t tsdb__block_get_u32(const uint8_t *p);
uint64_t tsdb__block_get_u64(const uint8_t *p);
/* fsync of a directory: 0 or BASE_E_IO. */
int tsdb__block_fsync_dir(const char *dir);
/* Removes a directory tree (no symlinks followed): 0 or BASE_E_IO. */
int tsdb__block_rm_rf(const char *dir);

/* Label names (name NULL) or values of *name of the series matching ms,
 * less the series that tombstones leave without a sample in [mint,
 * maxt] (what the database's listings use). */
struct tsdb_block;
struct tsdb_strs;
struct labels_matcher;
int tsdb__block_label_list(struct tsdb_block *b, const base_str *name, struct labels_matcher *const *ms,
                           size_t n, int64_t mint, int64_t maxt, struct tsdb_strs **ret);

/* Opens an index from memory (copied), without chunk segments: every chunk
 * read fails with BASE_E_TRUNCATED. For the fuzz target. */
struct tsdb_block;
int tsdb__block_open_mem(const uint8_t *idx, size_t len, struct tsdb_block **ret, char *err, size_t errlen);

#endif
