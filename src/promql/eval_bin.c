/* eval_bin.c -- binary operators: scalar/scalar, vector/scalar and
 * vector/vector with 2.42's matching (VectorBinop, VectorAnd/Or/Unless,
 * VectorscalarBinop, resultMetric in engine.go).
 *
 * MATCHING. Every series' signature (the labels of on(...), or all but
 * ignoring(...) and __name__) is computed once, and series are grouped by
 * signature. Per step, 2.42 pairs each left sample with the one right
 * sample of its signature; here each left series pairs with the right
 * series of its group, all steps at once: with one right series per group
 * (the usual case) the result is computed in place in the left series'
 * arrays; with several, each (left, right) pair present at some step gets
 * its own output series, and outputs with equal labels merge afterwards.
 * group_right swaps the sides first (the "many" side drives), as 2.42.
 *
 * ERRORS, at the step 2.42 meets them first and in its order within a
 * step: (0) two right samples with one signature ("found duplicate series
 * for the match group ..."; the message names the pair 2.42 would find,
 * recomputed at that step), (1) two matches for one signature in
 * one-to-one matching ("multiple matches for labels: many-to-one matching
 * must be explicit (group_left/group_right)") or two equal results in one
 * group with group_x ("... grouping labels must ensure unique matches"),
 * (9) equal result label sets at one step ("vector cannot contain metrics
 * with the same labelset"). A step where either side is empty yields
 * nothing and no error.
 *
 * SET OPERATORS work on presence bitmaps per signature group: `and` keeps
 * a left point when its group has a right point at that step, `unless`
 * when it has none, `or` adds right points whose group has no left point.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/err.h"
#include "promql/eval_int.h"
#include "promql/func.h"

static int is_arith(pq_binop op) {
    return op == PQ_OP_ADD || op == PQ_OP_SUB || op == PQ_OP_MUL || op == PQ_OP_DIV || op == PQ_OP_POW ||
           op == PQ_OP_MOD;
}

/* ---- scalar / scalar and vector / scalar ------------------------------------------- */

static int bin_scalar_scalar(pq_q *q, pq_binop op, pq_val *a, pq_val *b, pq_val *ret) {
    *ret = *a;
    pq__val_init(a, PQ_T_NONE, 0);
    for (size_t k = 0; k < ret->n; k++) {
        double out;
        int holds = pq_binop_apply(op, ret->sc[k], b->sc[k], &out);
        ret->sc[k] = pq_binop_is_comparison(op) ? (holds ? 1.0 : 0.0) : out;
    }
    (void)q;
    return 0;
}

static int bin_vector_scalar(pq_q *q, pq_binop op, int rbool, pq_val *vec, const pq_val *sc, int swap,
                             pq_val *ret) {
    *ret = *vec;
    pq__val_init(vec, PQ_T_NONE, 0);
    int cmp = pq_binop_is_comparison(op);
    size_t n = ret->n;
    for (size_t i = 0; i < ret->ns; i++) {
        pq_ser *s = &ret->s[i];
        size_t w = PQ_BM_WORDS(n);
        for (size_t wi = 0; wi < w; wi++) {
            uint64_t bits = s->bm[wi];
            while (bits) {
                size_t k = wi * 64 + (size_t)__builtin_ctzll(bits);
                bits &= bits - 1;
                double v = s->v[k], c = sc->sc[k], out;
                int keep = swap ? pq_binop_apply(op, c, v, &out) : pq_binop_apply(op, v, c, &out);
                if (cmp) out = v; /* the vector's value, whichever side */
                if (rbool) {
                    s->v[k] = keep ? 1.0 : 0.0;
                } else if (keep) {
                    s->v[k] = out;
                } else {
                    pq__bm_clr(s->bm, k);
                }
            }
        }
        if (is_arith(op) || rbool) {
            labels_set *ls = pq__drop_name(q, s->ls);
            if (!ls) return BASE_E_NOMEM;
            labels_unref(s->ls);
            s->ls = ls;
        }
    }
    pq_perr pe = {0};
    int rc = pq__vec_merge(q, ret, PQ_MERGE_STEPS, &pe);
    if (rc < 0) return rc;
    return pq__perr_raise(q, &pe);
}

/* ---- signatures ------------------------------------------------------------------------ */

typedef struct match {
    const pq_vmatch *vm;
    base_str *names; /* sorted, unique matching labels */
    size_t nnames;
} match;

static int in_list(const base_str *l, size_t n, base_str s) {
    for (size_t i = 0; i < n; i++)
        if (base_str_eq(l[i], s)) return 1;
    return 0;
}

/* The signature labels: MatchLabels(on, names...) in 2.42. */
static labels_set *sig_labels(pq_q *q, const match *m, const labels_set *ls) {
    int on = m->vm->on;
    if (!on && m->nnames == 0) return pq__drop_name(q, ls);
    labels_builder *b = &q->lb;
    labels_builder_reset(b);
    labels_iter it;
    base_str ln, lv;
    labels_iter_init(&it, ls);
    while (labels_iter_next(&it, &ln, &lv)) {
        int listed = in_list(m->names, m->nnames, ln);
        if (on ? listed : (!listed && !base_str_eqc(ln, LABELS_METRIC_NAME))) {
            if (labels_builder_add(b, ln, lv) < 0) {
                pq__nomem(q);
                return NULL;
            }
        }
    }
    labels_set *out = NULL;
    return pq__lb_finish(q, b, &out) < 0 ? NULL : out;
}

typedef struct sides {
    size_t ng;
    size_t *gl, *gr;           /* group of each left / right series */
    size_t *rstart, *rorder;   /* right series per group */
    size_t *lstart, *lorder;   /* left series per group */
    labels_set **lsig, **rsig; /* signatures */
} sides;

static void sides_free(sides *s, size_t nl, size_t nr) {
    if (s->lsig)
        for (size_t i = 0; i < nl; i++) labels_unref(s->lsig[i]);
    if (s->rsig)
        for (size_t i = 0; i < nr; i++) labels_unref(s->rsig[i]);
    free(s->lsig);
    free(s->rsig);
    free(s->gl);
    free(s->gr);
    free(s->rstart);
    free(s->rorder);
    free(s->lstart);
    free(s->lorder);
    memset(s, 0, sizeof *s);
}

static int bucket(size_t ng, const size_t *grp, size_t n, size_t **ret_start, size_t **ret_order) {
    size_t *start = calloc(ng + 2, sizeof *start), *order = malloc((n + 1) * sizeof *order);
    size_t *cnt = calloc(ng + 1, sizeof *cnt);
    if (!start || !order || !cnt) {
        free(start);
        free(order);
        free(cnt);
        return BASE_E_NOMEM;
    }
    for (size_t i = 0; i < n; i++) cnt[grp[i]]++;
    for (size_t g = 0; g < ng; g++) start[g + 1] = start[g] + cnt[g];
    memset(cnt, 0, (ng + 1) * sizeof *cnt);
    for (size_t i = 0; i < n; i++) order[start[grp[i]] + cnt[grp[i]]++] = i;
    free(cnt);
    *ret_start = start;
    *ret_order = order;
    return 0;
}

static int sides_build(pq_q *q, const match *m, const pq_val *l, const pq_val *r, sides *s) {
    memset(s, 0, sizeof *s);
    size_t nl = l->ns, nr = r->ns;
    s->lsig = calloc(nl + 1, sizeof *s->lsig);
    s->rsig = calloc(nr + 1, sizeof *s->rsig);
    s->gl = malloc((nl + 1) * sizeof *s->gl);
    s->gr = malloc((nr + 1) * sizeof *s->gr);
    pq_lmap map;
    if (!s->lsig || !s->rsig || !s->gl || !s->gr || pq__lmap_init(&map, nl + nr) < 0) {
        sides_free(s, nl, nr);
        return pq__nomem(q);
    }
    int rc = 0;
    for (size_t side = 0; side < 2 && rc >= 0; side++) {
        const pq_val *v = side ? r : l;
        labels_set **sig = side ? s->rsig : s->lsig;
        size_t *grp = side ? s->gr : s->gl;
        for (size_t i = 0; i < v->ns; i++) {
            if ((rc = pq__poll(q)) < 0) break;
            sig[i] = sig_labels(q, m, v->s[i].ls);
            if (!sig[i]) {
                rc = BASE_E_NOMEM;
                break;
            }
            uint64_t h = labels_hash(sig[i]);
            size_t g = pq__lmap_get(&map, sig[i], h);
            if (g == SIZE_MAX) {
                g = s->ng++;
                if (pq__lmap_put(&map, sig[i], h, g) < 0) {
                    rc = pq__nomem(q);
                    break;
                }
            }
            grp[i] = g;
        }
    }
    pq__lmap_free(&map);
    if (rc >= 0 && (bucket(s->ng, s->gr, nr, &s->rstart, &s->rorder) < 0 ||
                    bucket(s->ng, s->gl, nl, &s->lstart, &s->lorder) < 0))
        rc = pq__nomem(q);
    if (rc < 0) sides_free(s, nl, nr);
    return rc;
}

/* Per-group presence: bit k of any[g] when some series of the group has
 * a point at step k. */
static uint64_t *group_any(const pq_val *v, const size_t *grp, size_t ng) {
    size_t w = PQ_BM_WORDS(v->n);
    uint64_t *any = calloc(ng * w + 1, sizeof *any);
    if (!any) return NULL;
    for (size_t i = 0; i < v->ns; i++) {
        uint64_t *a = any + grp[i] * w;
        for (size_t j = 0; j < w; j++) a[j] |= v->s[i].bm[j];
    }
    return any;
}

/* ---- and / or / unless ---------------------------------------------------------------------- */

static int bin_set(pq_q *q, pq_binop op, const match *m, pq_val *l, pq_val *r, pq_val *ret) {
    sides s;
    int rc = sides_build(q, m, l, r, &s);
    if (rc < 0) return rc;
    size_t n = l->n, w = PQ_BM_WORDS(n);
    uint64_t *any = NULL;
    if (op == PQ_OP_OR)
        any = group_any(l, s.gl, s.ng);
    else
        any = group_any(r, s.gr, s.ng);
    if (!any) {
        sides_free(&s, l->ns, r->ns);
        return pq__nomem(q);
    }
    if (op == PQ_OP_OR) {
        for (size_t i = 0; i < r->ns; i++) {
            const uint64_t *a = any + s.gr[i] * w;
            for (size_t j = 0; j < w; j++) r->s[i].bm[j] &= ~a[j];
        }
    } else {
        for (size_t i = 0; i < l->ns; i++) {
            const uint64_t *a = any + s.gl[i] * w;
            for (size_t j = 0; j < w; j++) l->s[i].bm[j] &= op == PQ_OP_AND ? a[j] : ~a[j];
        }
    }
    free(any);
    sides_free(&s, l->ns, r->ns);
    *ret = *l;
    pq__val_init(l, PQ_T_NONE, 0);
    if (op == PQ_OP_OR) {
        for (size_t i = 0; i < r->ns && rc >= 0; i++) {
            ret->held += r->s[i].cnt;
            r->held -= r->s[i].cnt;
            rc = pq__vec_push(q, ret, &r->s[i]);
        }
        r->ns = 0;
        if (rc < 0) return rc;
        pq_perr pe = {0};
        if ((rc = pq__vec_merge(q, ret, PQ_MERGE_STEPS, &pe)) < 0) return rc;
        return pq__perr_raise(q, &pe);
    }
    return pq__vec_settle(q, ret);
}

/* ---- arithmetic and comparisons between vectors --------------------------------------------------- */

/* resultMetric in 2.42 (then DropMetricName with bool). */
static labels_set *result_metric(pq_q *q, const match *m, pq_binop op, int rbool, const labels_set *ls,
                                 const labels_set *rs) {
    labels_builder *b = &q->lb;
    if (labels_builder_from(b, ls) < 0) goto nomem;
    if (is_arith(op) || rbool) labels_builder_del(b, base_str_c(LABELS_METRIC_NAME));
    const pq_vmatch *vm = m->vm;
    if (vm->card == PQ_CARD_ONE_TO_ONE) {
        if (vm->on) {
            labels_iter it;
            base_str ln, lv;
            labels_iter_init(&it, ls);
            while (labels_iter_next(&it, &ln, &lv))
                if (!in_list(m->names, m->nnames, ln)) labels_builder_del(b, ln);
        } else {
            for (size_t i = 0; i < m->nnames; i++) labels_builder_del(b, m->names[i]);
        }
    }
    for (size_t i = 0; i < vm->ninclude; i++) {
        base_str name = base_str_c(vm->include[i]);
        base_str v = labels_get(rs, name);
        if (v.n)
            labels_builder_set(b, name, v);
        else
            labels_builder_del(b, name);
    }
    labels_set *out = NULL;
    return pq__lb_finish(q, b, &out) < 0 ? NULL : out;
nomem:
    pq__nomem(q);
    return NULL;
}

/* One output series: from the pair (left series, right series) of a group. */
typedef struct outs {
    pq_ser s;
    size_t grp;
} outs;

static int outs_push(pq_q *q, outs **arr, size_t *n, size_t *cap, const pq_ser *s, size_t grp) {
    if (*n == *cap) {
        size_t nc = *cap ? *cap * 2 : 16;
        outs *na = realloc(*arr, nc * sizeof *na);
        if (!na) return pq__nomem(q);
        *arr = na;
        *cap = nc;
    }
    (*arr)[*n].s = *s;
    (*arr)[*n].grp = grp;
    (*n)++;
    return 0;
}

/* The duplicate-series message 2.42 raises at step k. */
static void dup_message(pq_q *q, const match *m, const pq_val *r, const sides *s, size_t k, int swapped,
                        pq_perr *pe) {
    size_t *seen = malloc((s->ng + 1) * sizeof *seen);
    if (!seen) return;
    for (size_t g = 0; g < s->ng; g++) seen[g] = SIZE_MAX;
    for (size_t i = 0; i < r->ns; i++) {
        if (!pq__bm_get(r->s[i].bm, k)) continue;
        size_t g = s->gr[i];
        if (seen[g] == SIZE_MAX) {
            seen[g] = i;
            continue;
        }
        base_buf b1 = BASE_BUF_INIT, b2 = BASE_BUF_INIT, b3 = BASE_BUF_INIT;
        labels_format(s->rsig[i], &b1);
        labels_format(r->s[i].ls, &b2);
        labels_format(r->s[seen[g]].ls, &b3);
        pq__perr_note(
            pe, k, 0, PROMQL_ERR_EXECUTION,
            "found duplicate series for the match group %s on the %s hand-side of the operation: "
            "[%s, %s];many-to-many matching not allowed: matching labels must be unique on one side",
            b1.data ? b1.data : "{}", swapped ? "left" : "right", b2.data ? b2.data : "{}",
            b3.data ? b3.data : "{}");
        base_buf_free(&b1);
        base_buf_free(&b2);
        base_buf_free(&b3);
        break;
    }
    free(seen);
    (void)q;
    (void)m;
}

static int bin_vec(pq_q *q, pq_binop op, int rbool, const match *m, pq_val *lhs, pq_val *rhs, pq_val *ret) {
    const pq_vmatch *vm = m->vm;
    int swapped = vm->card == PQ_CARD_ONE_TO_MANY;
    pq_val *l = swapped ? rhs : lhs, *r = swapped ? lhs : rhs;
    size_t n = l->n, w = PQ_BM_WORDS(n);
    pq__val_init(ret, PQ_T_VECTOR, n);
    sides s;
    int rc = sides_build(q, m, l, r, &s);
    if (rc < 0) return rc;
    pq_perr pe = {0};
    uint64_t *anyl = calloc(w + 1, sizeof *anyl), *anyr = calloc(w + 1, sizeof *anyr);
    uint64_t *kept = NULL; /* one-to-one: per group, steps already matched */
    int *cntbuf = NULL;
    outs *out = NULL;
    size_t nout = 0, capout = 0;
    if (!anyl || !anyr) rc = pq__nomem(q);
    if (rc >= 0) {
        for (size_t i = 0; i < l->ns; i++)
            for (size_t j = 0; j < w; j++) anyl[j] |= l->s[i].bm[j];
        for (size_t i = 0; i < r->ns; i++)
            for (size_t j = 0; j < w; j++) anyr[j] |= r->s[i].bm[j];
        if (vm->card == PQ_CARD_ONE_TO_ONE) {
            kept = calloc(s.ng * w + 1, sizeof *kept);
            if (!kept) rc = pq__nomem(q);
        }
    }
    /* (0) duplicate right samples in a group, at steps where both sides have samples */
    if (rc >= 0) {
        size_t first = SIZE_MAX;
        for (size_t g = 0; g < s.ng && rc >= 0; g++) {
            size_t a = s.rstart[g], b = s.rstart[g + 1];
            if (b - a < 2) continue;
            if (!cntbuf && !(cntbuf = malloc((n + 1) * sizeof *cntbuf))) {
                rc = pq__nomem(q);
                break;
            }
            memset(cntbuf, 0, (n + 1) * sizeof *cntbuf);
            for (size_t j = a; j < b; j++) {
                const pq_ser *rs = &r->s[s.rorder[j]];
                for (size_t k = 0; k < n && k < first; k++)
                    if (pq__bm_get(rs->bm, k) && ++cntbuf[k] == 2 && pq__bm_get(anyl, k)) {
                        first = k;
                        break;
                    }
            }
        }
        if (first != SIZE_MAX) dup_message(q, m, r, &s, first, swapped, &pe);
    }
    int cmp = pq_binop_is_comparison(op);
    for (size_t i = 0; i < l->ns && rc >= 0; i++) {
        if ((rc = pq__poll(q)) < 0) break;
        pq_ser *ls = &l->s[i];
        size_t g = s.gl[i];
        size_t ra = s.rstart[g], rb = s.rstart[g + 1];
        if (ra == rb) continue;
        /* pairs of this left series: one output series per right series met */
        for (size_t ri = ra; ri < rb && rc >= 0; ri++) {
            const pq_ser *rs = &r->s[s.rorder[ri]];
            /* steps where this right series is the one 2.42 pairs with (the first present) */
            int single = rb - ra == 1;
            pq_ser o;
            int have = 0;
            if (single) {
                o = *ls; /* computed in place: word wi is read before it is written */
                o.ls = NULL;
                have = 1;
            }
            for (size_t wi = 0; wi < w; wi++) {
                uint64_t bits = ls->bm[wi] & rs->bm[wi];
                if (!single && bits) {
                    for (size_t rj = ra; rj < ri; rj++) bits &= ~r->s[s.rorder[rj]].bm[wi];
                }
                if (!bits) {
                    if (single) o.bm[wi] = 0;
                    continue;
                }
                if (!have) {
                    if ((rc = pq__ser_alloc(q, &o, n, NULL)) < 0) break;
                    have = 1;
                }
                uint64_t keepbits = 0;
                uint64_t b = bits;
                while (b) {
                    size_t k = wi * 64 + (size_t)__builtin_ctzll(b);
                    b &= b - 1;
                    double vl = ls->v[k], vr = rs->v[k], res;
                    if (swapped) {
                        double t = vl;
                        vl = vr;
                        vr = t;
                    }
                    int keep = pq_binop_apply(op, vl, vr, &res);
                    if (rbool) {
                        res = keep ? 1.0 : 0.0;
                        keep = 1;
                    } else if (cmp) {
                        res = vl;
                    }
                    if (!keep) continue;
                    o.v[k] = res;
                    keepbits |= (uint64_t)1 << (k & 63);
                }
                o.bm[wi] = keepbits;
                if (kept && keepbits) {
                    uint64_t *kg = kept + g * w;
                    uint64_t dup = kg[wi] & keepbits;
                    if (dup)
                        pq__perr_note(&pe, wi * 64 + (size_t)__builtin_ctzll(dup), 1, PROMQL_ERR_EXECUTION,
                                      "multiple matches for labels: many-to-one matching must be explicit "
                                      "(group_left/group_right)");
                    kg[wi] |= keepbits;
                }
            }
            if (rc < 0) break;
            if (!have) continue;
            o.ls = result_metric(q, m, op, rbool, ls->ls, rs->ls);
            if (!o.ls) {
                if (!single) pq__ser_free(q, &o, n);
                rc = BASE_E_NOMEM;
                break;
            }
            if (single) {
                /* the left series' arrays now belong to the output */
                labels_unref(ls->ls);
                ls->ls = NULL;
                ls->v = NULL;
                ls->bm = NULL;
            }
            if ((rc = outs_push(q, &out, &nout, &capout, &o, g)) < 0) {
                pq__ser_free(q, &o, n);
                break;
            }
        }
    }
    free(anyl);
    free(anyr);
    free(kept);
    free(cntbuf);
    sides_free(&s, l->ns, r->ns);
    /* merge equal label sets; conflicts within one group under group_x are (1) */
    if (rc >= 0 && nout > 1) {
        pq_lmap map;
        if (pq__lmap_init(&map, nout) < 0) rc = pq__nomem(q);
        for (size_t i = 0; i < nout && rc >= 0; i++) {
            uint64_t h = labels_hash(out[i].s.ls);
            size_t j = pq__lmap_get(&map, out[i].s.ls, h);
            if (j == SIZE_MAX) {
                if (pq__lmap_put(&map, out[i].s.ls, h, i) < 0) rc = pq__nomem(q);
                continue;
            }
            /* merge i into j */
            pq_ser *a = &out[j].s, *b = &out[i].s;
            for (size_t k = 0; k < n; k++) {
                if (!pq__bm_get(b->bm, k)) continue;
                if (pq__bm_get(a->bm, k)) {
                    int same = out[j].grp == out[i].grp && vm->card != PQ_CARD_ONE_TO_ONE;
                    if (same)
                        pq__perr_note(
                            &pe, k, 1, PROMQL_ERR_EXECUTION,
                            "multiple matches for labels: grouping labels must ensure unique matches");
                    else
                        pq__perr_note(&pe, k, 9, PROMQL_ERR_EXECUTION,
                                      "vector cannot contain metrics with the same labelset");
                    continue;
                }
                a->v[k] = b->v[k];
                pq__bm_set(a->bm, k);
            }
            memset(b->bm, 0, w * sizeof(uint64_t));
        }
        pq__lmap_free(&map);
    }
    for (size_t i = 0; i < nout; i++) {
        if (rc >= 0)
            rc = pq__vec_push(q, ret, &out[i].s);
        else
            pq__ser_free(q, &out[i].s, n);
    }
    free(out);
    if (rc >= 0) rc = pq__vec_settle(q, ret);
    if (rc >= 0) rc = pq__perr_raise(q, &pe);
    if (rc < 0) pq__val_free(q, ret);
    return rc;
}

/* ---- dispatch ------------------------------------------------------------------------------------ */

static int cmp_str(const void *a, const void *b) {
    const base_str *x = a, *y = b;
    size_t n = x->n < y->n ? x->n : y->n;
    int c = memcmp(x->p, y->p, n);
    if (c) return c;
    return x->n < y->n ? -1 : x->n > y->n;
}

int pq__eval_bin(pq_q *q, const pq_node *n, const pq_rng *r, pq_val *ret) {
    pq_val a, b;
    pq__val_init(&a, PQ_T_NONE, 0);
    pq__val_init(&b, PQ_T_NONE, 0);
    int rc = pq__eval(q, n->bin.lhs, r, pq__child_wrap(q, n, n->bin.lhs), &a);
    if (rc >= 0) rc = pq__eval(q, n->bin.rhs, r, pq__child_wrap(q, n, n->bin.rhs), &b);
    if (rc < 0) goto out;
    pq_binop op = n->bin.op;
    int rbool = n->bin.return_bool;
    if (a.t == PQ_T_SCALAR && b.t == PQ_T_SCALAR) {
        rc = bin_scalar_scalar(q, op, &a, &b, ret);
    } else if (a.t == PQ_T_VECTOR && b.t == PQ_T_SCALAR) {
        rc = bin_vector_scalar(q, op, rbool, &a, &b, 0, ret);
    } else if (a.t == PQ_T_SCALAR && b.t == PQ_T_VECTOR) {
        rc = bin_vector_scalar(q, op, rbool, &b, &a, 1, ret);
    } else if (a.t == PQ_T_VECTOR && b.t == PQ_T_VECTOR && n->bin.vm) {
        match m;
        memset(&m, 0, sizeof m);
        m.vm = n->bin.vm;
        if (m.vm->nlabels) {
            m.names = malloc(m.vm->nlabels * sizeof *m.names);
            if (!m.names) {
                rc = pq__nomem(q);
                goto out;
            }
            for (size_t i = 0; i < m.vm->nlabels; i++) m.names[i] = base_str_c(m.vm->labels[i]);
            qsort(m.names, m.vm->nlabels, sizeof *m.names, cmp_str);
            size_t j = 0;
            for (size_t i = 0; i < m.vm->nlabels; i++)
                if (j == 0 || !base_str_eq(m.names[j - 1], m.names[i])) m.names[j++] = m.names[i];
            m.nnames = j;
        }
        if (pq_binop_is_set(op))
            rc = bin_set(q, op, &m, &a, &b, ret);
        else
            rc = bin_vec(q, op, rbool, &m, &a, &b, ret);
        free(m.names);
    } else {
        rc = pq__fail(q, PROMQL_ERR_INTERNAL, "invalid operand types for %s", pq_binop_str(op));
    }
out:
    pq__val_free(q, &a);
    pq__val_free(q, &b);
    return rc;
}
