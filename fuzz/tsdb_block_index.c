/* fuzz/tsdb_block_index.c -- arbitrary bytes as a block's index file
 * (src/tsdb/block_read.c, opened from memory without chunk segments): open
 * must either refuse it cleanly or accept an index whose every table is
 * usable. On success: select every series (labels must come back strictly
 * ascending, as many as the meta says; chunk reads fail cleanly as there
 * are no segments), select with matchers, list label names and values.
 * Each input is tried twice: as it is, and with its section and TOC CRCs
 * recomputed (where the offsets allow), so that mutations reach the
 * section parsers instead of stopping at a CRC mismatch. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "labels/labels.h"
#include "tsdb/block.h"
#include "tsdb/block_int.h"
#include "tsdb/format.h"
#include "tsdb/wal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void put32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}

/* Recomputes the CRCs of d in place, as a writer would. */
static void fix_crcs(uint8_t *d, size_t n) {
    if (n < TSDB_INDEX_HEADER + TSDB_INDEX_TOC) return;
    uint8_t *toc = d + n - TSDB_INDEX_TOC;
    uint64_t hi = n - TSDB_INDEX_TOC;
    for (int i = 0; i < 4; i++) {
        uint64_t off = tsdb__block_get_u64(toc + 8 * i);
        if (off > hi || hi - off < 8) continue;
        uint64_t len = tsdb__block_get_u32(d + off);
        if (len > hi - off - 8) continue;
        put32(d + off + 4 + len, tsdb_crc32c(0, d + off + 4, len));
    }
    put32(toc + 36, tsdb_crc32c(0, toc, 36));
}

static void one(const uint8_t *data, size_t size) {
    tsdb_block *b;
    char err[256];
    if (tsdb__block_open_mem(data, size, &b, err, sizeof err)) {
        if (!err[0]) abort(); /* a refusal always says why */
        return;
    }
    const tsdb_block_meta *m = tsdb_block_get_meta(b);
    tsdb_block_set *s;
    if (tsdb_block_select(b, NULL, 0, INT64_MIN, INT64_MAX, &s)) abort();
    if (tsdb_block_set_count(s) != m->num_series) abort();
    labels_set *prev = NULL;
    int r;
    while ((r = tsdb_block_set_next(s)) == 1) {
        const labels_set *ls = tsdb_block_set_labels(s);
        if (prev && labels_cmp(prev, ls) >= 0) abort();
        labels_unref(prev);
        prev = labels_ref(ls);
        int64_t t;
        double v;
        if (tsdb_block_set_sample(s, &t, &v) >= 0) abort(); /* no segments */
    }
    labels_unref(prev);
    if (r < 0 && r != BASE_E_NOMEM) abort();
    tsdb_block_set_free(s);
    tsdb_strs *names;
    if (tsdb_block_label_names(b, NULL, 0, &names)) abort();
    for (size_t i = 0; i < names->n && i < 8; i++) {
        tsdb_strs *vals;
        if (tsdb_block_label_values(b, names->v[i], NULL, 0, &vals)) abort();
        if (vals->n) {
            labels_matcher *ms[2];
            if (labels_matcher_new(LABELS_MATCH_EQ, names->v[i], vals->v[0], &ms[0], NULL, 0)) abort();
            if (labels_matcher_new(LABELS_MATCH_NRE, names->v[i], base_str_c("a.*"), &ms[1], NULL, 0))
                abort();
            if (tsdb_block_select(b, ms, 2, 0, 1000, &s)) abort();
            while (tsdb_block_set_next(s) == 1) {
            }
            tsdb_block_set_free(s);
            tsdb_strs *x;
            if (tsdb_block_label_names(b, ms, 1, &x)) abort();
            tsdb_strs_free(x);
            labels_matcher_free(ms[0]);
            labels_matcher_free(ms[1]);
        }
        tsdb_strs_free(vals);
    }
    tsdb_strs_free(names);
    tsdb_block_close(b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    one(data, size);
    uint8_t *c = malloc(size + 1);
    if (!c) return 0;
    if (size) memcpy(c, data, size);
    fix_crcs(c, size);
    one(c, size);
    free(c);
    return 0;
}
