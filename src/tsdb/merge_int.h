/* merge_int.h -- a k-way merge of sorted series sources (module-internal):
 * what compaction (blocks into one block) and the database's select (head
 * and blocks into one answer) have in common.
 *
 * Also the listings' common end: a sorted, duplicate-free string list.
 * And the batch reads' common cut of decoded samples to [mint, maxt]
 * (tsdb__cut_range), inline: it runs once per chunk read.
 *
 * A source is any iterator over series sorted by labels (labels_cmp
 * ascending, no duplicates within one source), each series with strictly
 * ascending timestamps: a head series set, a block series set, ... The
 * merge yields every label set present in any source once, in order; its
 * samples are the union of the sources' samples for that label set, by
 * time; a timestamp present in several sources is taken from the source
 * added first (the others' sample at that timestamp is skipped).
 *
 * CHAIN MODE. A source may declare the time range its samples lie in
 * (tsdb__merge_add_range: a block's range, the head above its floor).
 * When the sources holding the current series have pairwise disjoint
 * ranges -- the normal case: blocks do not overlap and the head starts
 * where the newest block ends -- the merged series is their
 * concatenation in time order, and samples are read from one source at a
 * time: tsdb__merge_samples hands the caller's arrays straight to that
 * source's batch read (no per-sample comparison, no call per sample).
 * Otherwise the sources are merged sample by sample. Both modes return
 * the same samples and errors in the same order.
 *
 * Ownership: the merge owns its input array, not the sources (free them
 * after tsdb__merge_free). One thread at a time.
 */
#ifndef KELVIN_TSDB_MERGE_INT_H
#define KELVIN_TSDB_MERGE_INT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "labels/labels.h"
#include "tsdb/head.h"

/* First index of t[0..n) (ascending) with t[i] > x. */
static inline size_t tsdb__upper(const int64_t *t, size_t n, int64_t x) {
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (t[mid] <= x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Cuts the r samples t[0..r), v[0..r) (t ascending), as a batch read
 * decoded them, to [mint, maxt] in place: returns how many are kept (now
 * at the front); *past is set to whether one lay after maxt (the series
 * ends there). */
static inline size_t tsdb__cut_range(int64_t *t, double *v, size_t r, int64_t mint, int64_t maxt, int *past) {
    size_t j0 = r && t[0] < mint ? tsdb__upper(t, r, mint - 1) : 0;
    size_t j1 = r && t[r - 1] > maxt ? tsdb__upper(t, r, maxt) : r;
    if (j0 > j1) j0 = j1;
    size_t cnt = j1 - j0;
    if (j0 && cnt) {
        memmove(t, t + j0, cnt * sizeof *t);
        memmove(v, v + j0, cnt * sizeof *v);
    }
    *past = j1 < r;
    return cnt;
}

typedef struct tsdb__merge_ops {
    /* 1 and the next series, 0 at the end, <0 on error. */
    int (*next)(void *it);
    /* The current series' labels (valid until next). */
    const labels_set *(*labels)(const void *it);
    /* 1 and the next sample of the current series, 0 at its end, <0. */
    int (*sample)(void *it, int64_t *ret_t, double *ret_v);
    /* Up to cap next samples: the count, 0 at the end, <0. Samples met
     * before an error are returned first, the error by the next call. */
    int (*samples)(void *it, int64_t *t, double *v, size_t cap);
} tsdb__merge_ops;

typedef struct tsdb__merge_in {
    const tsdb__merge_ops *ops;
    void *it;
    uint8_t alive;    /* has a current series */
    uint8_t in_group; /* its current series is the merged one */
    uint8_t has;      /* t, v hold its next sample */
    uint8_t done;     /* chain mode: nothing more of the current series */
    int64_t t;
    double v;
    int64_t lo, hi; /* its samples' range (closed) */
} tsdb__merge_in;

typedef struct tsdb__merge {
    tsdb__merge_in *in;
    size_t n, cap;
    int started;
    int pending; /* a source's error met after the sample returned */
    const labels_set *cur;
    int chain;   /* the current group's sources are disjoint in time */
    size_t *ord; /* chain mode: the group's sources in time order */
    size_t nord, oi;
} tsdb__merge;

/* Adds a source (before the first next). 0 or BASE_E_NOMEM. */
int tsdb__merge_add(tsdb__merge *m, const tsdb__merge_ops *ops, void *it);
/* Same, for a source whose samples all lie in [lo, hi]. */
int tsdb__merge_add_range(tsdb__merge *m, const tsdb__merge_ops *ops, void *it, int64_t lo, int64_t hi);
/* 1 and the next merged series' labels (valid until the next call), 0 at
 * the end, <0: a source's error. */
int tsdb__merge_next(tsdb__merge *m, const labels_set **ret_ls);
/* 1 and the next merged sample of the current series, 0 at its end, <0: a
 * source failed (its remaining samples of this series are dropped; calling
 * again goes on with the other sources). A failure met while moving past
 * a returned sample is returned by the next call. */
int tsdb__merge_sample(tsdb__merge *m, int64_t *ret_t, double *ret_v);
/* Up to cap next merged samples: the count, 0 at the series' end, <0 as
 * above. Samples met before an error are returned first, the error by
 * the next call, so the sequence equals that of tsdb__merge_sample; the
 * two may be mixed. */
int tsdb__merge_samples(tsdb__merge *m, int64_t *t, double *v, size_t cap);
void tsdb__merge_free(tsdb__merge *m);

/* Adapters for the tsdb_series_src callbacks of block.h (ctx: a merge). */
int tsdb__merge_src_next(void *ctx, const labels_set **ret_ls);
int tsdb__merge_src_sample(void *ctx, int64_t *ret_t, double *ret_v);

/* A tsdb_strs (one allocation) of v's strings sorted bytewise without
 * duplicates; v is reordered. What every label listing ends with. 0 or
 * BASE_E_NOMEM. */
int tsdb__strs_make(base_str *v, size_t n, tsdb_strs **ret);

/* Ops for a block series set and a head series set. */
extern const tsdb__merge_ops tsdb__merge_block_ops;
extern const tsdb__merge_ops tsdb__merge_head_ops;

#endif
