/* merge.c -- the k-way merge of sorted series sources (see merge_int.h).
 *
 * Each next() advances the sources that took part in the previous group,
 * picks the smallest current label set, and marks every source holding an
 * equal set as part of the new group, peeking its first sample. Sources
 * are few (one per block plus the head), so the minimum is a linear scan.
 */
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "tsdb/block.h"
#include "tsdb/merge_int.h"

int tsdb__merge_add(tsdb__merge *m, const tsdb__merge_ops *ops, void *it) {
    if (m->n == m->cap) {
        size_t nc = m->cap ? m->cap * 2 : 4;
        tsdb__merge_in *ni = realloc(m->in, nc * sizeof *ni);
        if (!ni) return BASE_E_NOMEM;
        m->in = ni;
        m->cap = nc;
    }
    m->in[m->n++] = (tsdb__merge_in){.ops = ops, .it = it};
    return 0;
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
    *ret_ls = best;
    return 1;
}

int tsdb__merge_sample(tsdb__merge *m, int64_t *ret_t, double *ret_v) {
    if (m->pending) {
        int e = m->pending;
        m->pending = 0;
        return e;
    }
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

void tsdb__merge_free(tsdb__merge *m) {
    free(m->in);
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
const tsdb__merge_ops tsdb__merge_block_ops = {block_next, block_labels, block_sample};

static int head_next(void *it) {
    return tsdb_series_set_next(it);
}
static const labels_set *head_labels(const void *it) {
    return tsdb_series_set_labels(it);
}
static int head_sample(void *it, int64_t *t, double *v) {
    return tsdb_series_set_sample(it, t, v);
}
const tsdb__merge_ops tsdb__merge_head_ops = {head_next, head_labels, head_sample};

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
