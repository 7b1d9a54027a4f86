/* merge.c -- the k-way merge of sorted series sources (see merge_int.h).
 *
 * Each next() advances the sources that took part in the previous group,
 * picks the smallest current label set, and marks every source holding an
 * equal set as part of the new group, peeking its first sample. Sources
 * are few (one per block plus the head), so the minimum is a linear scan.
 * Then the group's sources are sorted by their declared ranges; when no
 * two overlap the group is read in chain mode (merge_int.h): source after
 * source, the peeked sample first, then the source's own reads.
 */
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "tsdb/block.h"
#include "tsdb/merge_int.h"

int tsdb__merge_add_range(tsdb__merge *m, const tsdb__merge_ops *ops, void *it, int64_t lo, int64_t hi) {
    if (m->n == m->cap) {
        size_t nc = m->cap ? m->cap * 2 : 4;
        tsdb__merge_in *ni = realloc(m->in, nc * sizeof *ni);
        if (!ni) return BASE_E_NOMEM;
        m->in = ni;
        size_t *no = realloc(m->ord, nc * sizeof *no);
        if (!no) return BASE_E_NOMEM;
        m->ord = no;
        m->cap = nc;
    }
    m->in[m->n++] = (tsdb__merge_in){.ops = ops, .it = it, .lo = lo, .hi = hi};
    return 0;
}

int tsdb__merge_add(tsdb__merge *m, const tsdb__merge_ops *ops, void *it) {
    return tsdb__merge_add_range(m, ops, it, INT64_MIN, INT64_MAX);
}

/* Sorts the group's sources by range and says whether they are disjoint. */
static void plan_chain(tsdb__merge *m) {
    m->nord = m->oi = 0;
    for (size_t i = 0; i < m->n; i++) {
        if (!m->in[i].in_group) continue;
        size_t j = m->nord++;
        while (j > 0 && m->in[m->ord[j - 1]].lo > m->in[i].lo) {
            m->ord[j] = m->ord[j - 1];
            j--;
        }
        m->ord[j] = i;
        m->in[i].done = !m->in[i].has;
    }
    m->chain = 1;
    for (size_t j = 1; j < m->nord && m->chain; j++) m->chain = m->in[m->ord[j]].lo > m->in[m->ord[j - 1]].hi;
}

static int peek(tsdb__merge_in *in) {
    int r = in->ops->sample(in->it, &in->t, &in->v);
    in->has = r == 1;
    return r < 0 ? r : 0;
}

int tsdb__merge_next(tsdb__merge *m, const labels_set **ret_ls) {
    m->pending = 0;
    for (size_t i = 0; i < m->n; i++) {
        tsdb__merge_in *in = &m->in[i];
        if (!m->started || in->in_group) {
            int r = in->ops->next(in->it);
            if (r < 0) return r;
            in->alive = r == 1;
        }
        in->in_group = 0;
        in->has = 0;
    }
    m->started = 1;
    const labels_set *best = NULL;
    for (size_t i = 0; i < m->n; i++) {
        tsdb__merge_in *in = &m->in[i];
        if (!in->alive) continue;
        const labels_set *ls = in->ops->labels(in->it);
        if (!best || labels_cmp(ls, best) < 0) best = ls;
    }
    m->cur = best;
    if (!best) return 0;
    for (size_t i = 0; i < m->n; i++) {
        tsdb__merge_in *in = &m->in[i];
        if (in->alive && labels_equal(in->ops->labels(in->it), best)) {
            in->in_group = 1;
            int e = peek(in); /* reported by the first sample call */
            if (e && !m->pending) m->pending = e;
        }
    }
    plan_chain(m);
    *ret_ls = best;
    return 1;
}

/* Chain mode, one sample: the current source's peeked sample, then its
 * own reads; an error drops that source's rest of the series. */
static int chain_sample(tsdb__merge *m, int64_t *ret_t, double *ret_v) {
    while (m->oi < m->nord) {
        tsdb__merge_in *in = &m->in[m->ord[m->oi]];
        if (in->has) {
            in->has = 0;
            *ret_t = in->t;
            *ret_v = in->v;
            return 1;
        }
        if (!in->done) {
            int r = in->ops->sample(in->it, ret_t, ret_v);
            if (r == 1) return 1;
            in->done = 1;
            if (r < 0) {
                m->oi++;
                return r;
            }
        }
        m->oi++;
    }
    return 0;
}

int tsdb__merge_sample(tsdb__merge *m, int64_t *ret_t, double *ret_v) {
    if (m->pending) {
        int e = m->pending;
        m->pending = 0;
        return e;
    }
    if (m->chain) return chain_sample(m, ret_t, ret_v);
    tsdb__merge_in *best = NULL;
    for (size_t i = 0; i < m->n; i++) {
        tsdb__merge_in *in = &m->in[i];
        if (in->in_group && in->has && (!best || in->t < best->t)) best = in;
    }
    if (!best) return 0;
    int64_t t = best->t;
    *ret_t = t;
    *ret_v = best->v;
    for (size_t i = 0; i < m->n; i++) {
        tsdb__merge_in *in = &m->in[i];
        if (in->in_group && in->has && in->t == t) {
            int e = peek(in); /* on error in->has is 0: that source is done */
            if (e && !m->pending) m->pending = e;
        }
    }
    return 1;
}

int tsdb__merge_samples(tsdb__merge *m, int64_t *t, double *v, size_t cap) {
    if (m->pending) {
        int e = m->pending;
        m->pending = 0;
        return e;
    }
    if (cap > INT32_MAX) cap = INT32_MAX;
    size_t k = 0;
    if (!m->chain) {
        while (k < cap) {
            int r = tsdb__merge_sample(m, &t[k], &v[k]);
            if (r == 1) {
                k++;
                continue;
            }
            if (r < 0) {
                if (!k) return r;
                m->pending = r;
            }
            break;
        }
        return (int)k;
    }
    while (k < cap && m->oi < m->nord) {
        tsdb__merge_in *in = &m->in[m->ord[m->oi]];
        if (in->has) {
            in->has = 0;
            t[k] = in->t;
            v[k] = in->v;
            k++;
            continue;
        }
        if (!in->done) {
            int r = in->ops->samples(in->it, t + k, v + k, cap - k);
            if (r > 0) {
                k += (size_t)r;
                continue;
            }
            in->done = 1;
            if (r < 0) {
                m->oi++;
                if (!k) return r;
                m->pending = r;
                return (int)k;
            }
        }
        m->oi++;
    }
    return (int)k;
}

void tsdb__merge_free(tsdb__merge *m) {
    free(m->in);
    free(m->ord);
    *m = (tsdb__merge){0};
}

int tsdb__merge_src_next(void *ctx, const labels_set **ret_ls) {
    return tsdb__merge_next(ctx, ret_ls);
}
int tsdb__merge_src_sample(void *ctx, int64_t *ret_t, double *ret_v) {
    return tsdb__merge_sample(ctx, ret_t, ret_v);
}

static int block_next(void *it) {
    return tsdb_block_set_next(it);
}
static const labels_set *block_labels(const void *it) {
    return tsdb_block_set_labels(it);
}
static int block_sample(void *it, int64_t *t, double *v) {
    return tsdb_block_set_sample(it, t, v);
}
static int block_samples(void *it, int64_t *t, double *v, size_t cap) {
    return tsdb_block_set_samples(it, t, v, cap);
}
const tsdb__merge_ops tsdb__merge_block_ops = {block_next, block_labels, block_sample, block_samples};

static int head_next(void *it) {
    return tsdb_series_set_next(it);
}
static const labels_set *head_labels(const void *it) {
    return tsdb_series_set_labels(it);
}
static int head_sample(void *it, int64_t *t, double *v) {
    return tsdb_series_set_sample(it, t, v);
}
static int head_samples(void *it, int64_t *t, double *v, size_t cap) {
    return tsdb_series_set_samples(it, t, v, cap);
}
const tsdb__merge_ops tsdb__merge_head_ops = {head_next, head_labels, head_sample, head_samples};

static int cmp_str(const void *a, const void *b) {
    base_str x = *(const base_str *)a, y = *(const base_str *)b;
    size_t n = x.n < y.n ? x.n : y.n;
    int c = n ? memcmp(x.p, y.p, n) : 0;
    return c ? c : (x.n > y.n) - (x.n < y.n);
}

int tsdb__strs_make(base_str *v, size_t n, tsdb_strs **ret) {
    if (n > 1) qsort(v, n, sizeof *v, cmp_str);
    size_t k = 0, bytes = 0;
    for (size_t i = 0; i < n; i++)
        if (k == 0 || !base_str_eq(v[i], v[k - 1])) {
            v[k++] = v[i];
            bytes += v[i].n + 1;
        }
    tsdb_strs *s = malloc(sizeof *s + k * sizeof(base_str) + bytes);
    if (!s) return BASE_E_NOMEM;
    s->n = k;
    s->v = (base_str *)(s + 1);
    char *p = (char *)(s->v + k);
    for (size_t i = 0; i < k; i++) {
        if (v[i].n) memcpy(p, v[i].p, v[i].n);
        p[v[i].n] = '\0';
        s->v[i] = (base_str){p, v[i].n};
        p += v[i].n + 1;
    }
    *ret = s;
    return 0;
}
