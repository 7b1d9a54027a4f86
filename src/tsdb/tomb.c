/* tomb.c -- tombstone interval lists, tables and the tombstones file
 * (see tomb_int.h; the bytes are in format.h).
 *
 * Design: a list is merged on every add (binary search for the first
 * interval ending at or after mint - 1, then a run of intervals starting
 * at or before maxt + 1 collapses into one). A table is built by sorting
 * every (id, interval) pair and merging runs: deletions are rare and
 * tables small, so rebuilding beats a mutable structure readers would
 * need locks for.
 *
 * Invariants: lists stay sorted, disjoint and non-adjacent; the codec
 * never reads outside its input; arithmetic near INT64_MIN/MAX never
 * overflows (neighbours are tested with the bounds excluded first).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "tsdb/block_int.h"
#include "tsdb/chunk_int.h"
#include "tsdb/format.h"
#include "tsdb/tomb_int.h"
#include "tsdb/wal.h"

/* ---- interval lists ------------------------------------------------------- */

/* Whether b starts at or before a's end + 1 (a before b by mint). */
static int touches(tsdb__ival a, tsdb__ival b) {
    return a.maxt == INT64_MAX || b.mint <= a.maxt + 1;
}

int tsdb__ivals_add(tsdb__ival **v, uint32_t *n, uint32_t *cap, tsdb__ival iv) {
    tsdb__ival *x = *v;
    uint32_t lo = 0, hi = *n;
    /* first interval that ends at or after iv.mint - 1 */
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (iv.mint != INT64_MIN && x[mid].maxt < iv.mint - 1)
            lo = mid + 1;
        else
            hi = mid;
    }
    uint32_t i0 = lo, i1 = lo;
    while (i1 < *n && touches(iv, x[i1])) i1++;
    if (i1 > i0) { /* merge x[i0..i1) into iv */
        if (x[i0].mint < iv.mint) iv.mint = x[i0].mint;
        if (x[i1 - 1].maxt > iv.maxt) iv.maxt = x[i1 - 1].maxt;
        x[i0] = iv;
        memmove(x + i0 + 1, x + i1, (*n - i1) * sizeof *x);
        *n -= i1 - i0 - 1;
        return 0;
    }
    if (*n == *cap) {
        uint32_t nc = *cap ? *cap * 2 : 2;
        tsdb__ival *y = realloc(x, nc * sizeof *y);
        if (!y) return BASE_E_NOMEM;
        *v = x = y;
        *cap = nc;
    }
    memmove(x + i0 + 1, x + i0, (*n - i0) * sizeof *x);
    x[i0] = iv;
    (*n)++;
    return 0;
}

/* Index of the first interval with maxt >= t. */
static size_t first_ending(const tsdb__ival *v, size_t n, int64_t t) {
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (v[mid].maxt < t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

int tsdb__ivals_cover(const tsdb__ival *v, size_t n, int64_t a, int64_t b) {
    size_t i = first_ending(v, n, b);
    return i < n && v[i].mint <= a;
}

int tsdb__ivals_overlap(const tsdb__ival *v, size_t n, int64_t a, int64_t b) {
    size_t i = first_ending(v, n, a);
    return i < n && v[i].mint <= b;
}

size_t tsdb__ivals_filter(const tsdb__ival *iv, size_t n, size_t *cur, int64_t *t, double *v, size_t k) {
    size_t c = *cur, o = 0;
    for (size_t i = 0; i < k; i++) {
        while (c < n && iv[c].maxt < t[i]) c++;
        if (c < n && iv[c].mint <= t[i]) continue;
        t[o] = t[i];
        v[o] = v[i];
        o++;
    }
    *cur = c;
    return o;
}

/* ---- tables ----------------------------------------------------------------- */

static int cmp_stone(const void *a, const void *b) {
    const tsdb__stone *x = a, *y = b;
    if (x->id != y->id) return x->id < y->id ? -1 : 1;
    if (x->iv.mint != y->iv.mint) return x->iv.mint < y->iv.mint ? -1 : 1;
    return 0;
}

int tsdb__tomb_build(const tsdb__tomb *old, tsdb__stone *add, size_t n, tsdb__tomb **ret) {
    size_t total = n + (old ? old->nivals : 0);
    tsdb__stone *all = malloc((total ? total : 1) * sizeof *all);
    if (!all) return BASE_E_NOMEM;
    size_t k = 0;
    for (size_t i = 0; old && i < old->nser; i++)
        for (size_t j = old->off[i]; j < old->off[i + 1]; j++)
            all[k++] = (tsdb__stone){old->ids[i], old->iv[j]};
    if (n) memcpy(all + k, add, n * sizeof *add);
    k += n;
    qsort(all, k, sizeof *all, cmp_stone);
    /* merge runs: sorted by (id, mint), so each interval only extends the
     * last one of its series or starts a new one */
    size_t m = 0, nser = 0;
    for (size_t i = 0; i < k; i++) {
        if (m && all[m - 1].id == all[i].id && touches(all[m - 1].iv, all[i].iv)) {
            if (all[i].iv.maxt > all[m - 1].iv.maxt) all[m - 1].iv.maxt = all[i].iv.maxt;
            continue;
        }
        if (!m || all[m - 1].id != all[i].id) nser++;
        all[m++] = all[i];
    }
    tsdb__tomb *t = malloc(sizeof *t + nser * sizeof(uint64_t) + (nser + 1) * sizeof(size_t) +
                           (m ? m : 1) * sizeof(tsdb__ival));
    if (!t) {
        free(all);
        return BASE_E_NOMEM;
    }
    atomic_init(&t->rc, 1);
    t->nser = nser;
    t->nivals = m;
    t->ids = (uint64_t *)(t + 1);
    t->off = (size_t *)(t->ids + nser);
    t->iv = (tsdb__ival *)(t->off + nser + 1);
    size_t s = 0;
    for (size_t i = 0; i < m; i++) {
        if (!i || all[i - 1].id != all[i].id) {
            t->ids[s] = all[i].id;
            t->off[s++] = i;
        }
        t->iv[i] = all[i].iv;
    }
    t->off[nser] = m;
    free(all);
    *ret = t;
    return 0;
}

tsdb__tomb *tsdb__tomb_ref(tsdb__tomb *t) {
    if (t) atomic_fetch_add_explicit(&t->rc, 1, memory_order_relaxed);
    return t;
}

void tsdb__tomb_unref(tsdb__tomb *t) {
    if (t && atomic_fetch_sub_explicit(&t->rc, 1, memory_order_acq_rel) == 1) free(t);
}

const tsdb__ival *tsdb__tomb_get(const tsdb__tomb *t, uint64_t id, size_t *ret_n) {
    *ret_n = 0;
    if (!t || !t->nser) return NULL;
    size_t lo = 0, hi = t->nser;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (t->ids[mid] < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == t->nser || t->ids[lo] != id) return NULL;
    *ret_n = t->off[lo + 1] - t->off[lo];
    return t->iv + t->off[lo];
}

/* ---- the file --------------------------------------------------------------- */

int tsdb__tomb_encode(const tsdb__tomb *t, base_buf *out) {
    size_t start = out->len;
    base_buf_append(out, TSDB_TOMBSTONES_MAGIC, 4);
    base_buf_append(out, (uint8_t[4]){TSDB_TOMBSTONES_VERSION, 0, 0, 0}, 4);
    size_t nser = t ? t->nser : 0;
    tsdb__block_put_uv(out, nser);
    for (size_t i = 0; i < nser; i++) {
        tsdb__block_put_uv(out, i ? t->ids[i] - t->ids[i - 1] : t->ids[0]);
        tsdb__block_put_uv(out, t->off[i + 1] - t->off[i]);
        for (size_t j = t->off[i]; j < t->off[i + 1]; j++) {
            const tsdb__ival *v = &t->iv[j];
            if (j == t->off[i])
                tsdb__block_put_sv(out, v->mint);
            else /* > previous maxt + 1 */
                tsdb__block_put_uv(out, (uint64_t)v->mint - (uint64_t)v[-1].maxt - 2);
            tsdb__block_put_uv(out, (uint64_t)v->maxt - (uint64_t)v->mint);
        }
    }
    if (!base_buf_err(out)) tsdb__block_put_u32(out, tsdb_crc32c(0, out->data + start, out->len - start));
    return base_buf_err(out);
}

#define BAD(...) base_errf(err, errlen, BASE_E_PARSE, __VA_ARGS__)

int tsdb__tomb_decode(const uint8_t *p, size_t len, uint64_t nseries, tsdb__tomb **ret, char *err,
                      size_t errlen) {
    if (len < 13) return BAD("tombstones: too short (%zu bytes)", len);
    if (memcmp(p, TSDB_TOMBSTONES_MAGIC, 4) || p[4] != TSDB_TOMBSTONES_VERSION || p[5] || p[6] || p[7])
        return BAD("tombstones: bad magic or version");
    if (tsdb__block_get_u32(p + len - 4) != tsdb_crc32c(0, p, len - 4))
        return BAD("tombstones: CRC mismatch");
    const uint8_t *q = p + 8, *end = p + len - 4;
    uint64_t nser;
    if (tsdb__get_uvarint(&q, end, 0, &nser) || nser > nseries || nser > (uint64_t)(end - q) / 4)
        return BAD("tombstones: bad series count");
    /* count the intervals first (one allocation, everything checked) */
    tsdb__stone *st = NULL;
    size_t nst = 0, cap = 0;
    uint64_t id = 0;
    int e = 0;
    for (uint64_t i = 0; i < nser && !e; i++) {
        uint64_t d, ni;
        if (tsdb__get_uvarint(&q, end, 0, &d) || tsdb__get_uvarint(&q, end, 0, &ni)) {
            e = BAD("tombstones: entry %llu is truncated", (unsigned long long)i);
            break;
        }
        if ((i && d == 0) || d >= nseries || (id += d) >= nseries || ni == 0 ||
            ni > (uint64_t)(end - q) / 2) {
            e = BAD("tombstones: entry %llu has a bad series id or count", (unsigned long long)i);
            break;
        }
        tsdb__ival prev = {0, 0};
        for (uint64_t j = 0; j < ni; j++) {
            uint64_t a, span;
            if (tsdb__get_uvarint(&q, end, 0, &a) || tsdb__get_uvarint(&q, end, 0, &span)) {
                e = BAD("tombstones: entry %llu is truncated", (unsigned long long)i);
                break;
            }
            /* in unsigned arithmetic: room(x) = INT64_MAX - x, exact for
             * any int64 x, so nothing below wraps */
            tsdb__ival v;
            int bad = 0;
            if (j == 0) {
                v.mint = (int64_t)tsdb__unzz(a);
            } else {
                bad = prev.maxt > INT64_MAX - 2 || a > (uint64_t)INT64_MAX - (uint64_t)(prev.maxt + 2);
                v.mint = bad ? 0 : (int64_t)((uint64_t)prev.maxt + 2 + a);
            }
            bad = bad || span > (uint64_t)INT64_MAX - (uint64_t)v.mint;
            v.maxt = bad ? 0 : (int64_t)((uint64_t)v.mint + span);
            if (bad) {
                e = BAD("tombstones: entry %llu: interval %llu out of range", (unsigned long long)i,
                        (unsigned long long)j);
                break;
            }
            if (nst == cap) {
                size_t nc = cap ? cap * 2 : 16;
                tsdb__stone *x = realloc(st, nc * sizeof *x);
                if (!x) {
                    e = BASE_E_NOMEM;
                    break;
                }
                st = x;
                cap = nc;
            }
            st[nst++] = (tsdb__stone){id, v};
            prev = v;
        }
    }
    if (!e && q != end) e = BAD("tombstones: trailing bytes");
    tsdb__tomb *t = NULL;
    if (!e) e = tsdb__tomb_build(NULL, st, nst, &t);
    /* the encoding cannot express overlapping or adjacent intervals, so
     * the table holds exactly what the file says */
    free(st);
    if (e) return e;
    *ret = t;
    return 0;
}
