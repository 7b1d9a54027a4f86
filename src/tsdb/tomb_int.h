/* tomb_int.h -- tombstones (module-internal): deleted time intervals per
 * series, shared by the head (head.c: intervals per series, logged to the
 * WAL as record.h TSDB_REC_TOMBSTONES) and the blocks (block_read.c: a
 * table per block, kept in the block's `tombstones` file, format.h).
 *
 * An interval list is sorted by time, its intervals closed ([mint, maxt],
 * mint <= maxt), disjoint and not adjacent (a next mint is above the
 * previous maxt + 1): adding an interval merges every interval it
 * overlaps or touches, as Prometheus 2.42's tombstones.Intervals.Add.
 *
 * A table (tsdb__tomb) maps series ids (ascending) to their interval
 * lists; it is immutable once built and reference counted, so readers
 * keep the snapshot they started with while a deletion publishes a new
 * one. The file codec checks everything it reads (CRC, order, ranges).
 *
 * Ownership: lists are plain arrays owned by their holder; a table is one
 * allocation, freed by its last tsdb__tomb_unref.
 */
#ifndef KELVIN_TSDB_TOMB_INT_H
#define KELVIN_TSDB_TOMB_INT_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"

typedef struct tsdb__ival {
    int64_t mint, maxt; /* closed */
} tsdb__ival;

/* Adds iv (mint <= maxt) to the list (*v, *n, capacity *cap; grown with
 * realloc), merging as above. 0 or BASE_E_NOMEM (list unchanged). */
int tsdb__ivals_add(tsdb__ival **v, uint32_t *n, uint32_t *cap, tsdb__ival iv);

/* Whether [a, b] lies entirely inside one interval of the list. */
int tsdb__ivals_cover(const tsdb__ival *v, size_t n, int64_t a, int64_t b);

/* Whether the list has an interval overlapping [a, b]. */
int tsdb__ivals_overlap(const tsdb__ival *v, size_t n, int64_t a, int64_t b);

/* Removes from t[0..k) (ascending) and v[0..k) the samples whose time
 * lies in an interval; *cur is a cursor into the list that only moves
 * forward (start it at 0 for a series; calls must see ascending times).
 * Returns the number of samples kept (moved to the front). */
size_t tsdb__ivals_filter(const tsdb__ival *iv, size_t n, size_t *cur, int64_t *t, double *v, size_t k);

/* Whether time t lies in an interval (same cursor contract). */
static inline int tsdb__ivals_hit(const tsdb__ival *iv, size_t n, size_t *cur, int64_t t) {
    while (*cur < n && iv[*cur].maxt < t) (*cur)++;
    return *cur < n && iv[*cur].mint <= t;
}

/* One (series, interval) pair, the input of a table. */
typedef struct tsdb__stone {
    uint64_t id;
    tsdb__ival iv;
} tsdb__stone;

typedef struct tsdb__tomb {
    _Atomic uint32_t rc;
    size_t nser;   /* series with intervals */
    size_t nivals; /* intervals in all */
    uint64_t *ids; /* ascending */
    size_t *off;   /* series i's intervals: iv[off[i] .. off[i + 1]) */
    tsdb__ival *iv;
} tsdb__tomb;

/* Builds a table from the pairs of old (may be NULL) and add[0..n) (add
 * is reordered): 0 or BASE_E_NOMEM. The table starts with one reference. */
int tsdb__tomb_build(const tsdb__tomb *old, tsdb__stone *add, size_t n, tsdb__tomb **ret);
tsdb__tomb *tsdb__tomb_ref(tsdb__tomb *t);
void tsdb__tomb_unref(tsdb__tomb *t);
/* The intervals of series id (NULL, 0 when it has none; t may be NULL). */
const tsdb__ival *tsdb__tomb_get(const tsdb__tomb *t, uint64_t id, size_t *ret_n);

/* The tombstones file (format.h): encode appends the whole file to out
 * (out's sticky error); decode checks and builds a table whose ids are
 * below nseries: 0, BASE_E_PARSE with a message, or BASE_E_NOMEM. */
int tsdb__tomb_encode(const tsdb__tomb *t, base_buf *out);
int tsdb__tomb_decode(const uint8_t *p, size_t len, uint64_t nseries, tsdb__tomb **ret, char *err,
                      size_t errlen);

#endif
