/* eval_agg.c -- aggregation operators (sum, avg, count, min, max, group,
 * stddev, stdvar, topk, bottomk, quantile, count_values), as 2.42's
 * aggregation() in engine.go.
 *
 * GROUPS. Each input series' group labels are computed once: `by` keeps
 * the listed labels (__name__ too when listed), `without` drops them and
 * __name__. Groups are numbered in order of first appearance, which is
 * 2.42's orderedResult order at a step (an instant query's answer order).
 *
 * ARITHMETIC. 2.42 folds the samples of a group in input order at every
 * step; here the series of a group are folded group by group, series by
 * series, over all steps at once: the order of operations per (group,
 * step) is the same, so the bits are. sum, count, min, max and group are
 * inlined (2.42's code is one line each); avg, stddev and stdvar use
 * func.h's accumulators.
 *
 * topk / bottomk replay Go's container/heap operations per step and group
 * (which sample is evicted among equal values depends on them), then sort
 * the heap as 2.42 does for the answer order; k is converted per step
 * with 2.42's overflow check. quantile gathers each step's values per
 * group. count_values builds its group labels per (series, step) from the
 * value's FormatFloat(v, 'f', -1) (cached while a series' value repeats).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/num.h"
#include "promql/eval_int.h"
#include "promql/func.h"

/* Go's strconv.FormatFloat(v, 'f', -1, 64). */
static size_t fmt_float_f(char *out, size_t cap, double v) {
    if (isnan(v)) return (size_t)snprintf(out, cap, "NaN");
    if (isinf(v)) return (size_t)snprintf(out, cap, v > 0 ? "+Inf" : "-Inf");
    if (v == 0) return (size_t)snprintf(out, cap, signbit(v) ? "-0" : "0");
    char d[20];
    int e;
    int nd = base_shortest_digits(v, d, &e);
    size_t o = 0;
    if (v < 0) out[o++] = '-';
    int ip = e + 1; /* digits before the point */
    if (ip <= 0) {
        out[o++] = '0';
        out[o++] = '.';
        for (int i = 0; i < -ip && o + 1 < cap; i++) out[o++] = '0';
        for (int i = 0; i < nd && o + 1 < cap; i++) out[o++] = d[i];
    } else if (ip >= nd) {
        for (int i = 0; i < nd && o + 1 < cap; i++) out[o++] = d[i];
        for (int i = nd; i < ip && o + 1 < cap; i++) out[o++] = '0';
    } else {
        for (int i = 0; i < ip; i++) out[o++] = d[i];
        out[o++] = '.';
        for (int i = ip; i < nd; i++) out[o++] = d[i];
    }
    out[o] = 0;
    return o;
}

typedef struct agg {
    pq_aggop op;
    base_str *names; /* sorted, unique */
    size_t nnames;
    int without;
} agg;

static int cmp_str(const void *a, const void *b) {
    const base_str *x = a, *y = b;
    size_t n = x->n < y->n ? x->n : y->n;
    int c = memcmp(x->p, y->p, n);
    if (c) return c;
    return x->n < y->n ? -1 : x->n > y->n;
}

static int in_names(const agg *a, base_str s) {
    for (size_t i = 0; i < a->nnames; i++)
        if (base_str_eq(a->names[i], s)) return 1;
    return 0;
}

/* The group labels of ls (a new reference) or NULL. */
static labels_set *group_labels(pq_q *q, const agg *a, const labels_set *ls) {
    labels_builder *b = &q->lb;
    labels_set *out = NULL;
    if (a->without) {
        if (labels_builder_from(b, ls) < 0) goto nomem;
        for (size_t i = 0; i < a->nnames; i++) labels_builder_del(b, a->names[i]);
        labels_builder_del(b, base_str_c(LABELS_METRIC_NAME));
    } else {
        if (a->nnames == 0) return labels_empty();
        labels_builder_reset(b);
        labels_iter it;
        base_str ln, lv;
        labels_iter_init(&it, ls);
        while (labels_iter_next(&it, &ln, &lv))
            if (in_names(a, ln) && labels_builder_add(b, ln, lv) < 0) goto nomem;
    }
    return pq__lb_finish(q, b, &out) < 0 ? NULL : out;
nomem:
    pq__nomem(q);
    return NULL;
}

/* The end of an aggregation that built ret: settles it, or frees it on
 * error (rc < 0 on entry or from settling). Returns rc. */
static int agg_end(pq_q *q, pq_val *ret, int rc) {
    if (rc >= 0) rc = pq__vec_settle(q, ret);
    if (rc < 0) pq__val_free(q, ret);
    return rc;
}

/* Groups of the series of v: grp[i], the number of groups, and for each
 * group its series in order (order[gstart[g]..gstart[g+1])) and labels. */
typedef struct groups {
    size_t *grp, *order, *gstart, ng;
    labels_set **gl;
} groups;

static void groups_free(groups *g) {
    if (g->gl)
        for (size_t i = 0; i < g->ng; i++) labels_unref(g->gl[i]);
    free(g->gl);
    free(g->grp);
    free(g->order);
    free(g->gstart);
    memset(g, 0, sizeof *g);
}

static int groups_build(pq_q *q, const agg *a, const pq_val *v, groups *g) {
    memset(g, 0, sizeof *g);
    size_t ns = v->ns;
    g->grp = malloc((ns + 1) * sizeof *g->grp);
    g->order = malloc((ns + 1) * sizeof *g->order);
    g->gstart = calloc(ns + 2, sizeof *g->gstart);
    g->gl = calloc(ns + 1, sizeof *g->gl);
    size_t *cnt = calloc(ns + 1, sizeof *cnt);
    pq_lmap m;
    int rc = 0;
    if (!g->grp || !g->order || !g->gstart || !g->gl || !cnt || pq__lmap_init(&m, ns) < 0) {
        free(cnt);
        groups_free(g);
        return pq__nomem(q);
    }
    for (size_t i = 0; i < ns; i++) {
        if ((rc = pq__poll(q)) < 0) break;
        labels_set *gl = group_labels(q, a, v->s[i].ls);
        if (!gl) {
            rc = BASE_E_NOMEM;
            break;
        }
        uint64_t h = labels_hash(gl);
        size_t gi = pq__lmap_get(&m, gl, h);
        if (gi == SIZE_MAX) {
            gi = g->ng++;
            g->gl[gi] = gl;
            if (pq__lmap_put(&m, gl, h, gi) < 0) {
                rc = pq__nomem(q);
                break;
            }
        } else {
            labels_unref(gl);
        }
        g->grp[i] = gi;
        cnt[gi]++;
    }
    pq__lmap_free(&m);
    if (rc >= 0) {
        for (size_t i = 0; i < g->ng; i++) g->gstart[i + 1] = g->gstart[i] + cnt[i];
        memset(cnt, 0, (ns + 1) * sizeof *cnt);
        for (size_t i = 0; i < ns; i++) g->order[g->gstart[g->grp[i]] + cnt[g->grp[i]]++] = i;
    }
    free(cnt);
    if (rc < 0) groups_free(g);
    return rc;
}

/* Folds series s into a group's output o (and accumulators acc for avg,
 * stddev, stdvar), step by step, as 2.42's aggregation() per sample. */
/* A full word of 64 steps, all present in s and either all new (first) or
 * all already present in o: straight loops the compiler vectorizes. */
static int acc_word(pq_aggop op, pq_ser *o, pq_agg_acc *acc, const pq_ser *s, size_t base, int first) {
    double *ov = o->v + base;
    const double *sv = s->v + base;
    double *cnt = op == PQ_AGG_AVG ? (double *)acc + base : NULL;
    switch (op) {
    case PQ_AGG_SUM:
        if (first)
            memcpy(ov, sv, 64 * sizeof *ov);
        else
            for (int j = 0; j < 64; j++) ov[j] += sv[j];
        return 1;
    case PQ_AGG_COUNT:
        for (int j = 0; j < 64; j++) ov[j] = first ? 1 : ov[j] + 1;
        return 1;
    case PQ_AGG_GROUP:
        for (int j = 0; j < 64; j++) ov[j] = 1;
        return 1;
    case PQ_AGG_MAX:
        if (first)
            memcpy(ov, sv, 64 * sizeof *ov);
        else
            for (int j = 0; j < 64; j++)
                if (ov[j] < sv[j] || isnan(ov[j])) ov[j] = sv[j];
        return 1;
    case PQ_AGG_MIN:
        if (first)
            memcpy(ov, sv, 64 * sizeof *ov);
        else
            for (int j = 0; j < 64; j++)
                if (ov[j] > sv[j] || isnan(ov[j])) ov[j] = sv[j];
        return 1;
    case PQ_AGG_AVG:
        if (first) {
            memcpy(ov, sv, 64 * sizeof *ov);
            for (int j = 0; j < 64; j++) cnt[j] = 1;
            return 1;
        }
        if (pq_agg_avg64(ov, cnt, sv)) return 1;
        for (int j = 0; j < 64; j++) {
            double c = ++cnt[j], m = ov[j], v = sv[j];
            if (isinf(m)) {
                if (isinf(v) && (m > 0) == (v > 0)) continue;
                if (!isinf(v) && !isnan(v)) continue;
            }
            ov[j] = m + (v / c - m / c);
        }
        return 1;
    default: return 0;
    }
}

static void acc_series(pq_aggop op, pq_ser *o, pq_agg_acc *acc, const pq_ser *s, size_t n) {
    size_t w = PQ_BM_WORDS(n);
    for (size_t wi = 0; wi < w; wi++) {
        uint64_t bits = s->bm[wi];
        if (!bits) continue;
        uint64_t fresh = bits & ~o->bm[wi];
        if (bits == ~(uint64_t)0 && (fresh == 0 || fresh == bits) &&
            acc_word(op, o, acc, s, wi * 64, fresh != 0)) {
            o->bm[wi] = bits;
            continue;
        }
        o->bm[wi] |= bits;
        while (bits) {
            size_t k = wi * 64 + (size_t)__builtin_ctzll(bits);
            int first = (int)((fresh >> (k & 63)) & 1);
            double v = s->v[k];
            switch (op) {
            case PQ_AGG_SUM:
                if (first)
                    o->v[k] = v;
                else
                    o->v[k] += v;
                break;
            case PQ_AGG_COUNT:
                if (first)
                    o->v[k] = 1;
                else
                    o->v[k] += 1;
                break;
            case PQ_AGG_GROUP: o->v[k] = 1; break;
            case PQ_AGG_MAX:
                if (first || o->v[k] < v || isnan(o->v[k])) o->v[k] = v;
                break;
            case PQ_AGG_MIN:
                if (first || o->v[k] > v || isnan(o->v[k])) o->v[k] = v;
                break;
            case PQ_AGG_AVG: {
                /* 2.42's incremental mean (as pq_agg_add), inline: the mean
                 * in o->v, the count in cnt */
                double *cnt = (double *)acc;
                if (first) {
                    o->v[k] = v;
                    cnt[k] = 1;
                    break;
                }
                double c = ++cnt[k], m = o->v[k];
                if (isinf(m)) {
                    if (isinf(v) && (m > 0) == (v > 0)) break;
                    if (!isinf(v) && !isnan(v)) break;
                }
                o->v[k] = m + (v / c - m / c);
                break;
            }
            default:
                if (first)
                    pq_agg_init(op, &acc[k], v);
                else
                    pq_agg_add(op, &acc[k], v);
                break;
            }
            bits &= bits - 1;
        }
    }
}

static int uses_acc(pq_aggop op) {
    return op == PQ_AGG_AVG || op == PQ_AGG_STDDEV || op == PQ_AGG_STDVAR;
}

static void acc_finish(pq_aggop op, pq_ser *o, const pq_agg_acc *acc, size_t n) {
    if (op == PQ_AGG_AVG) return; /* the mean is in place */
    for (size_t k = 0; k < n; k++)
        if (pq__bm_get(o->bm, k)) o->v[k] = pq_agg_result(op, &acc[k]);
}

/* ---- sum, avg, count, min, max, group, stddev, stdvar ----------------------------- */

static int agg_simple(pq_q *q, const agg *a, pq_val *in, pq_val *ret) {
    size_t n = in->n;
    groups g;
    int rc = groups_build(q, a, in, &g);
    if (rc < 0) return rc;
    pq__val_init(ret, PQ_T_VECTOR, n);
    pq_agg_acc *acc = NULL;
    if (uses_acc(a->op)) {
        acc = malloc((n + 1) * sizeof *acc);
        if (!acc) rc = pq__nomem(q);
    }
    for (size_t gi = 0; gi < g.ng && rc >= 0; gi++) {
        if ((rc = pq__check(q)) < 0) break;
        pq_ser o;
        if ((rc = pq__ser_alloc(q, &o, n, labels_ref(g.gl[gi]))) < 0) break;
        for (size_t j = g.gstart[gi]; j < g.gstart[gi + 1]; j++)
            acc_series(a->op, &o, acc, &in->s[g.order[j]], n);
        if (acc) acc_finish(a->op, &o, acc, n);
        rc = pq__vec_push(q, ret, &o);
    }
    free(acc);
    groups_free(&g);
    return agg_end(q, ret, rc);
}

/* ---- topk / bottomk ----------------------------------------------------------------- */

typedef struct hent {
    size_t i; /* series */
    double v;
} hent;

/* vectorByValueHeap (topk) / vectorByReverseValueHeap (bottomk). */
static int h_less(const hent *h, size_t i, size_t j, int top) {
    if (isnan(h[i].v)) return 1;
    return top ? h[i].v < h[j].v : h[i].v > h[j].v;
}

static void h_swap(hent *h, size_t i, size_t j) {
    hent t = h[i];
    h[i] = h[j];
    h[j] = t;
}

static void h_up(hent *h, size_t j, int top) {
    while (j > 0) {
        size_t i = (j - 1) / 2;
        if (!h_less(h, j, i, top)) break;
        h_swap(h, i, j);
        j = i;
    }
}

static void h_down(hent *h, size_t i, size_t n, int top) {
    for (;;) {
        size_t j1 = 2 * i + 1;
        if (j1 >= n) break;
        size_t j = j1;
        if (j1 + 1 < n && h_less(h, j1 + 1, j1, top)) j = j1 + 1;
        if (!h_less(h, j, i, top)) break;
        h_swap(h, i, j);
        i = j;
    }
}

static int agg_topk(pq_q *q, const agg *a, const pq_val *kv, pq_val *in, pq_val *ret, pq_perr *pe) {
    size_t n = in->n, ns = in->ns;
    int top = a->op == PQ_AGG_TOPK;
    groups g;
    int rc = groups_build(q, a, in, &g);
    if (rc < 0) return rc;
    pq__val_init(ret, PQ_T_VECTOR, n);
    hent *heap = malloc((ns + 1) * sizeof *heap);
    size_t *hlen = calloc(g.ng + 1, sizeof *hlen);
    uint64_t **sel = calloc(ns + 1, sizeof *sel);
    size_t *touched = malloc((g.ng + 1) * sizeof *touched);
    if (!heap || !hlen || !sel || !touched) rc = pq__nomem(q);
    for (size_t i = 0; i < ns && rc >= 0; i++) {
        sel[i] = calloc(PQ_BM_WORDS(n) + 1, sizeof **sel);
        if (!sel[i]) rc = pq__nomem(q);
    }
    size_t nt = 0;
    for (size_t k = 0; k < n && rc >= 0; k++) {
        if ((rc = pq__poll(q)) < 0) break;
        double f = kv->sc[k];
        if (!(f <= 9223372036854774784.0 && f >= -9223372036854775808.0)) {
            char buf[BASE_FMT_DOUBLE_MAX];
            base_fmt_double_g(buf, f);
            pq__perr_note(pe, k, 0, PROMQL_ERR_EXECUTION, "Scalar value %s overflows int64", buf);
            break;
        }
        int64_t kk = (int64_t)f;
        if (kk < 1) continue;
        nt = 0;
        for (size_t i = 0; i < ns; i++) {
            const pq_ser *s = &in->s[i];
            if (!pq__bm_get(s->bm, k)) continue;
            size_t gi = g.grp[i];
            hent *h = heap + g.gstart[gi];
            size_t *len = &hlen[gi];
            double v = s->v[k];
            if (*len == 0) {
                h[0].i = i;
                h[0].v = v;
                *len = 1;
                touched[nt++] = gi;
                continue;
            }
            int take = (int64_t)*len < kk || isnan(h[0].v) || (top ? h[0].v < v : h[0].v > v);
            if (!take) continue;
            if ((int64_t)*len == kk) {
                if (kk == 1) {
                    h[0].i = i;
                    h[0].v = v;
                    continue;
                }
                /* heap.Pop */
                size_t last = *len - 1;
                h_swap(h, 0, last);
                h_down(h, 0, last, top);
                (*len)--;
            }
            h[*len].i = i;
            h[*len].v = v;
            (*len)++;
            h_up(h, *len - 1, top);
        }
        for (size_t t = 0; t < nt; t++) {
            size_t gi = touched[t];
            hent *h = heap + g.gstart[gi];
            for (size_t j = 0; j < hlen[gi]; j++) pq__bm_set(sel[h[j].i], k);
            if (n == 1) continue; /* keep the heap for the order below */
            hlen[gi] = 0;
        }
    }
    if (rc >= 0 && !pe->set) {
        if (n == 1) {
            /* the answer's order: groups in order, each heap sorted */
            size_t *idx = malloc((ns + 1) * sizeof *idx);
            double *vals = malloc((ns + 1) * sizeof *vals);
            if (!idx || !vals) rc = pq__nomem(q);
            for (size_t t = 0; t < nt && rc >= 0; t++) {
                size_t gi = touched[t];
                hent *h = heap + g.gstart[gi];
                size_t len = hlen[gi];
                for (size_t j = 0; j < len; j++) {
                    idx[j] = j;
                    vals[j] = h[j].v;
                }
                if (len > 1) pq__go_sort_rev(idx, len, vals, top);
                for (size_t j = 0; j < len && rc >= 0; j++) {
                    pq_ser *s = &in->s[h[idx[j]].i];
                    pq_ser o;
                    if ((rc = pq__ser_alloc(q, &o, 1, labels_ref(s->ls))) < 0) break;
                    o.v[0] = s->v[0];
                    pq__bm_set(o.bm, 0);
                    rc = pq__vec_push(q, ret, &o);
                }
            }
            free(idx);
            free(vals);
        } else {
            for (size_t i = 0; i < ns && rc >= 0; i++) {
                pq_ser *s = &in->s[i];
                size_t w = PQ_BM_WORDS(n);
                int any = 0;
                for (size_t j = 0; j < w; j++) {
                    s->bm[j] &= sel[i][j];
                    any |= s->bm[j] != 0;
                }
                if (!any) continue;
                pq_ser o = *s;
                memset(s, 0, sizeof *s);
                s->v = NULL;
                rc = pq__vec_push(q, ret, &o);
            }
        }
    }
    if (sel)
        for (size_t i = 0; i < ns; i++) free(sel[i]);
    free(sel);
    free(heap);
    free(hlen);
    free(touched);
    groups_free(&g);
    return agg_end(q, ret, rc);
}

/* ---- quantile ------------------------------------------------------------------------- */

static int agg_quantile(pq_q *q, const agg *a, const pq_val *qv, pq_val *in, pq_val *ret) {
    size_t n = in->n;
    groups g;
    int rc = groups_build(q, a, in, &g);
    if (rc < 0) return rc;
    pq__val_init(ret, PQ_T_VECTOR, n);
    double *buf = malloc((in->ns + 1) * sizeof *buf);
    if (!buf) rc = pq__nomem(q);
    for (size_t gi = 0; gi < g.ng && rc >= 0; gi++) {
        if ((rc = pq__check(q)) < 0) break;
        pq_ser o;
        if ((rc = pq__ser_alloc(q, &o, n, labels_ref(g.gl[gi]))) < 0) break;
        for (size_t k = 0; k < n; k++) {
            size_t c = 0;
            for (size_t j = g.gstart[gi]; j < g.gstart[gi + 1]; j++) {
                const pq_ser *s = &in->s[g.order[j]];
                if (pq__bm_get(s->bm, k)) buf[c++] = s->v[k];
            }
            if (!c) continue;
            o.v[k] = pq_quantile(qv->sc[k], buf, c);
            pq__bm_set(o.bm, k);
        }
        rc = pq__vec_push(q, ret, &o);
    }
    free(buf);
    groups_free(&g);
    return agg_end(q, ret, rc);
}

/* ---- count_values ------------------------------------------------------------------------ */

static int agg_count_values(pq_q *q, const agg *a, const char *label, pq_val *in, pq_val *ret) {
    size_t n = in->n;
    pq__val_init(ret, PQ_T_VECTOR, n);
    if (n == 0) return 0;
    base_str lname = base_str_c(label);
    if (!labels_valid_label_name(lname)) {
        base_buf b = BASE_BUF_INIT;
        labels_quote(&b, lname);
        int rc = pq__fail(q, PROMQL_ERR_EXECUTION, "invalid label name %s", b.data ? b.data : "\"\"");
        base_buf_free(&b);
        return rc;
    }
    /* `by`: the value label joins the grouping labels */
    agg ga = *a;
    base_str *names = NULL;
    if (!a->without) {
        names = malloc((a->nnames + 1) * sizeof *names);
        if (!names) return pq__nomem(q);
        if (a->nnames) memcpy(names, a->names, a->nnames * sizeof *names);
        names[a->nnames] = lname;
        ga.names = names;
        ga.nnames = a->nnames + 1;
    }
    pq_lmap m;
    int rc = 0;
    if (pq__lmap_init(&m, 16) < 0) {
        free(names);
        return pq__nomem(q);
    }
    labels_builder vb;
    labels_builder_init(&vb);
    for (size_t i = 0; i < in->ns && rc >= 0; i++) {
        const pq_ser *s = &in->s[i];
        uint64_t lastbits = 0;
        size_t lastg = SIZE_MAX;
        for (size_t k = 0; k < n && rc >= 0; k++) {
            if (!pq__bm_get(s->bm, k)) continue;
            uint64_t bits;
            memcpy(&bits, &s->v[k], sizeof bits);
            if (lastg == SIZE_MAX || bits != lastbits) {
                if ((rc = pq__poll(q)) < 0) break;
                char vs[400];
                size_t vn = fmt_float_f(vs, sizeof vs, s->v[k]);
                labels_set *withv = NULL, *gl = NULL;
                if (labels_builder_from(&vb, s->ls) < 0 ||
                    labels_builder_set(&vb, lname, (base_str){vs, vn}) < 0) {
                    rc = pq__nomem(q);
                    break;
                }
                if ((rc = pq__lb_finish(q, &vb, &withv)) < 0) break;
                gl = group_labels(q, &ga, withv);
                labels_unref(withv);
                if (!gl) {
                    rc = BASE_E_NOMEM;
                    break;
                }
                uint64_t h = labels_hash(gl);
                size_t gi = pq__lmap_get(&m, gl, h);
                if (gi == SIZE_MAX) {
                    pq_ser o;
                    gi = ret->ns;
                    if ((rc = pq__ser_alloc(q, &o, n, gl)) < 0) break;
                    if ((rc = pq__vec_push(q, ret, &o)) < 0) break;
                    if (pq__lmap_put(&m, ret->s[gi].ls, h, gi) < 0) {
                        rc = pq__nomem(q);
                        break;
                    }
                } else {
                    labels_unref(gl);
                }
                lastg = gi;
                lastbits = bits;
            }
            pq_ser *o = &ret->s[lastg];
            if (pq__bm_get(o->bm, k))
                o->v[k] += 1;
            else {
                o->v[k] = 1;
                pq__bm_set(o->bm, k);
            }
        }
    }
    labels_builder_free(&vb);
    pq__lmap_free(&m);
    free(names);
    return agg_end(q, ret, rc);
}

/* ---- over a stream: the input is never held whole ---------------------------------- */

/* Whether the aggregated expression can be consumed series by series with
 * the same result: a selector, or a range function over a selector whose
 * outputs cannot share labels (it keeps __name__, or the selector pins
 * the name). */
static int streamable(const pq_node *e) {
    e = pq__unparen(e);
    if (e->kind == PQ_VSEL) return 1;
    if (e->kind != PQ_CALL) return 0;
    pq_func_id id = e->call.fn->id;
    if (id == PQ_F_ABSENT_OVER_TIME) return 0;
    for (size_t i = 0; i < e->call.nargs; i++) {
        const pq_node *m = pq__unparen(e->call.args[i]);
        if (m->kind == PQ_SUBQ) return 0;
        if (m->kind != PQ_MSEL) continue;
        if (id == PQ_F_LAST_OVER_TIME) return 1;
        const pq_node *vs = m->msel.vsel;
        for (size_t j = 0; j < vs->vsel.nms; j++) {
            const labels_matcher *lm = vs->vsel.ms[j];
            if (labels_matcher_type(lm) == LABELS_MATCH_EQ &&
                base_str_eqc(labels_matcher_name(lm), LABELS_METRIC_NAME))
                return 1;
        }
        return 0;
    }
    return 0;
}

typedef struct sgroup {
    pq_ser o;
    pq_agg_acc *acc;
} sgroup;

static int agg_stream(pq_q *q, const agg *a, const pq_node *e, const pq_rng *r, pq_val *ret) {
    size_t n = r->n;
    pq__val_init(ret, PQ_T_VECTOR, n);
    pq_stream *st = NULL;
    int rc = pq__stream_open(q, e, r, 0, &st);
    if (rc < 0) return rc;
    pq_lmap m;
    if (pq__lmap_init(&m, 64) < 0) {
        pq__stream_close(q, st);
        return pq__nomem(q);
    }
    sgroup *gs = NULL;
    size_t ng = 0, capg = 0;
    size_t accbytes = (n + 1) * sizeof(pq_agg_acc);
    pq_ser s;
    while ((rc = pq__stream_next(q, st, &s)) == 1) {
        labels_set *gl = group_labels(q, a, s.ls);
        if (!gl) {
            rc = BASE_E_NOMEM;
            pq__release(q, s.cnt);
            pq__ser_free(q, &s, n);
            break;
        }
        uint64_t h = labels_hash(gl);
        size_t gi = pq__lmap_get(&m, gl, h);
        if (gi == SIZE_MAX) {
            if (ng == capg) {
                size_t nc = capg ? capg * 2 : 16;
                sgroup *ngs = realloc(gs, nc * sizeof *ngs);
                if (!ngs) {
                    labels_unref(gl);
                    rc = pq__nomem(q);
                } else {
                    gs = ngs;
                    capg = nc;
                }
            }
            if (rc >= 0) {
                gi = ng;
                memset(&gs[gi], 0, sizeof gs[gi]);
                rc = pq__ser_alloc(q, &gs[gi].o, n, gl);
                if (rc >= 0) {
                    ng++;
                    if (uses_acc(a->op) && !(gs[gi].acc = pq__mem_alloc(accbytes))) rc = pq__nomem(q);
                    if (rc >= 0 && pq__lmap_put(&m, gs[gi].o.ls, h, gi) < 0) rc = pq__nomem(q);
                }
            }
        } else {
            labels_unref(gl);
        }
        if (rc >= 0) acc_series(a->op, &gs[gi].o, gs[gi].acc, &s, n);
        pq__release(q, s.cnt);
        pq__ser_free(q, &s, n);
        if (rc < 0) break;
    }
    pq__stream_close(q, st);
    pq__lmap_free(&m);
    for (size_t gi = 0; gi < ng; gi++) {
        if (rc >= 0) {
            if (gs[gi].acc) acc_finish(a->op, &gs[gi].o, gs[gi].acc, n);
            rc = pq__vec_push(q, ret, &gs[gi].o);
        } else {
            pq__ser_free(q, &gs[gi].o, n);
        }
        pq__mem_free(gs[gi].acc, accbytes);
    }
    free(gs);
    rc = agg_end(q, ret, rc);
    return rc < 0 ? rc : 0;
}

/* ---- dispatch -------------------------------------------------------------------------------- */

int pq__eval_agg(pq_q *q, const pq_node *n, const pq_rng *r, pq_val *ret) {
    pq_aggop op = n->agg.op;
    agg a;
    memset(&a, 0, sizeof a);
    a.op = op;
    a.without = n->agg.without;
    int rc = 0;
    if (n->agg.ngrouping) {
        a.names = malloc(n->agg.ngrouping * sizeof *a.names);
        if (!a.names) return pq__nomem(q);
        for (size_t i = 0; i < n->agg.ngrouping; i++) a.names[i] = base_str_c(n->agg.grouping[i]);
        qsort(a.names, n->agg.ngrouping, sizeof *a.names, cmp_str);
        size_t j = 0;
        for (size_t i = 0; i < n->agg.ngrouping; i++)
            if (j == 0 || !base_str_eq(a.names[j - 1], a.names[i])) a.names[j++] = a.names[i];
        a.nnames = j;
    }
    pq_val pv, in;
    pq__val_init(&pv, PQ_T_NONE, 0);
    pq__val_init(&in, PQ_T_NONE, 0);
    const pq_node *param = n->agg.param ? pq__unparen(n->agg.param) : NULL;
    int str_param = param && param->kind == PQ_STR;
    if (param && !str_param) rc = pq__eval(q, n->agg.param, r, pq__child_wrap(q, n, n->agg.param), &pv);
    if (rc >= 0 && !param && streamable(n->agg.expr)) {
        rc = agg_stream(q, &a, n->agg.expr, r, ret);
        free(a.names);
        return rc;
    }
    if (rc >= 0) rc = pq__eval(q, n->agg.expr, r, pq__child_wrap(q, n, n->agg.expr), &in);
    if (rc >= 0) {
        pq_perr pe = {0};
        switch (op) {
        case PQ_AGG_TOPK:
        case PQ_AGG_BOTTOMK:
            rc = agg_topk(q, &a, &pv, &in, ret, &pe);
            if (rc >= 0 && (rc = pq__perr_raise(q, &pe)) < 0) pq__val_free(q, ret);
            break;
        case PQ_AGG_QUANTILE: rc = agg_quantile(q, &a, &pv, &in, ret); break;
        case PQ_AGG_COUNT_VALUES:
            rc = agg_count_values(q, &a, str_param ? param->str.s : "", &in, ret);
            break;
        default: rc = agg_simple(q, &a, &in, ret); break;
        }
    }
    pq__val_free(q, &pv);
    pq__val_free(q, &in);
    free(a.names);
    return rc;
}
