/* eval_call.c -- function calls: the glue around func.h's arithmetic, as
 * 2.42's engine.go (Call) and functions.go do it.
 *
 * RANGE FUNCTIONS (a matrix selector or subquery argument) are computed by
 * eval_stream.c series by series: at step time ts the window is
 * [ts - offset - range, ts - offset] (closed at both ends in 2.42), stale
 * markers left out. Here their outputs are collected: the input's order,
 * __name__ dropped except for last_over_time, and two outputs with equal
 * labels fail the query (2.42's Matrix.ContainsSameLabelset);
 * absent_over_time turns "some window had samples" into its one series.
 *
 * OTHER FUNCTIONS evaluate their arguments over all steps and work per
 * series (labels once) and per step (values); outputs whose labels become
 * equal merge when they occupy different steps (2.42's rangeEval) and fail
 * when they share one.
 *
 * Special cases kept from 2.42 (checked against its binary where noted):
 * timestamp() of a selector returns the samples' own times, at @ - offset
 * when it has an @ [checked]; absent()/absent_over_time() take their
 * labels from the equality matchers of a selector argument, set and
 * deleted in matcher order [checked]; label_replace/label_join check their
 * arguments at the first step even on an empty vector; histogram_quantile
 * groups by all labels but `le` (__name__ included), skipping series
 * whose `le` does not parse; the date functions without an argument use
 * the step's time; histogram_count/sum/fraction see only native
 * histograms, so floats give nothing.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/num.h"
#include "promql/eval_int.h"
#include "promql/func.h"

/* ---- absent() labels ----------------------------------------------------------- */

/* 2.42's createLabelsForAbsentFunction: the equality matchers' labels (not
 * __name__), set and deleted in matcher order: the first equality matcher
 * of a name sets it (an empty value deletes), any later matcher of that
 * name (or a non-equality one) deletes it. */
static labels_set *absent_labels(pq_q *q, const pq_node *arg) {
    arg = pq__unparen(arg);
    const pq_node *vs = NULL;
    if (arg->kind == PQ_VSEL) vs = arg;
    if (arg->kind == PQ_MSEL) vs = arg->msel.vsel;
    if (!vs) return labels_empty();
    labels_builder *b = &q->lb;
    labels_builder_reset(b);
    size_t nms = vs->vsel.nms;
    for (size_t i = 0; i < nms; i++) {
        const labels_matcher *m = vs->vsel.ms[i];
        base_str name = labels_matcher_name(m);
        if (base_str_eqc(name, LABELS_METRIC_NAME)) continue;
        int has = 0;
        for (size_t j = 0; j < i && !has; j++) {
            const labels_matcher *p = vs->vsel.ms[j];
            has = labels_matcher_type(p) == LABELS_MATCH_EQ && base_str_eq(labels_matcher_name(p), name);
        }
        if (labels_matcher_type(m) == LABELS_MATCH_EQ && !has) {
            if (labels_builder_set(b, name, labels_matcher_value(m)) < 0) {
                pq__nomem(q);
                return NULL;
            }
        } else {
            labels_builder_del(b, name);
        }
    }
    labels_set *out = NULL;
    return pq__lb_finish(q, b, &out) < 0 ? NULL : out;
}

/* ---- helpers ---------------------------------------------------------------------- */

static const char *str_arg(const pq_node *n) {
    n = pq__unparen(n);
    return n && n->kind == PQ_STR ? n->str.s : "";
}

static int full_series(pq_q *q, pq_val *v, size_t n, labels_set *ls, double val) {
    pq_ser s;
    int rc = pq__ser_alloc(q, &s, n, ls);
    if (rc < 0) return rc;
    for (size_t k = 0; k < n; k++) {
        s.v[k] = val;
        pq__bm_set(s.bm, k);
    }
    return pq__vec_push(q, v, &s);
}

static int relabel_drop_name(pq_q *q, pq_val *v) {
    for (size_t i = 0; i < v->ns; i++) {
        labels_set *ls = pq__drop_name(q, v->s[i].ls);
        if (!ls) return BASE_E_NOMEM;
        labels_unref(v->s[i].ls);
        v->s[i].ls = ls;
    }
    return 0;
}

static int finish_merge(pq_q *q, pq_val *v) {
    pq_perr pe = {0};
    int rc = pq__vec_merge(q, v, PQ_MERGE_STEPS, &pe);
    if (rc < 0) return rc;
    return pq__perr_raise(q, &pe);
}

/* ---- range functions ------------------------------------------------------------- */

static int eval_range_call(pq_q *q, const pq_node *n, const pq_rng *r, size_t mi, pq_val *ret) {
    pq_func_id id = n->call.fn->id;
    const pq_node *marg = pq__unparen(n->call.args[mi]);
    pq__val_init(ret, PQ_T_VECTOR, r->n);
    pq_stream *st = NULL;
    int rc = pq__stream_open(q, n, r, 0, &st);
    if (rc < 0) return rc;
    pq_ser s;
    while ((rc = pq__stream_next(q, st, &s)) == 1) {
        ret->held += s.cnt;
        if ((rc = pq__vec_push(q, ret, &s)) < 0) break;
    }
    pq__stream_close(q, st);
    if (rc >= 0 && id == PQ_F_ABSENT_OVER_TIME) {
        /* 1 at the steps where no series had a sample in its window */
        uint64_t *found = calloc(PQ_BM_WORDS(r->n) + 1, sizeof *found);
        if (!found) rc = pq__nomem(q);
        for (size_t i = 0; rc >= 0 && i < ret->ns; i++)
            for (size_t w = 0; w < PQ_BM_WORDS(r->n); w++) found[w] |= ret->s[i].bm[w];
        size_t missing = 0;
        for (size_t k = 0; rc >= 0 && k < r->n; k++) missing += !pq__bm_get(found, k);
        for (size_t i = 0; rc >= 0 && i < ret->ns; i++)
            memset(ret->s[i].bm, 0, PQ_BM_WORDS(r->n) * sizeof(uint64_t));
        if (rc >= 0 && missing > 0) {
            labels_set *ls = marg->kind == PQ_MSEL ? absent_labels(q, marg) : labels_empty();
            pq_ser o;
            if (!ls)
                rc = BASE_E_NOMEM;
            else if ((rc = pq__ser_alloc(q, &o, r->n, ls)) >= 0) {
                for (size_t k = 0; k < r->n; k++)
                    if (!pq__bm_get(found, k)) {
                        o.v[k] = 1;
                        pq__bm_set(o.bm, k);
                    }
                rc = pq__vec_push(q, ret, &o);
            }
        }
        free(found);
        if (rc >= 0) rc = pq__vec_settle(q, ret);
    } else if (rc >= 0) {
        rc = pq__vec_merge(q, ret, PQ_MERGE_FAIL, NULL);
    }
    if (rc < 0) pq__val_free(q, ret);
    return rc < 0 ? rc : 0;
}

/* ---- histogram_quantile ------------------------------------------------------------ */

static int eval_histogram_quantile(pq_q *q, const pq_val *qv, pq_val *in, pq_val *ret) {
    size_t n = in->n;
    pq__val_init(ret, PQ_T_VECTOR, n);
    size_t ns = in->ns;
    size_t *grp = malloc((ns + 1) * sizeof *grp);
    double *le = malloc((ns + 1) * sizeof *le);
    labels_set **sigs = calloc(ns + 1, sizeof *sigs);
    size_t *gfirst = malloc((ns + 1) * sizeof *gfirst); /* group -> first series */
    size_t *gcount = calloc(ns + 1, sizeof *gcount);
    size_t *order = malloc((ns + 1) * sizeof *order); /* series by group */
    size_t *gstart = malloc((ns + 2) * sizeof *gstart);
    pq_bucket *bk = malloc((ns + 1) * sizeof *bk);
    pq_lmap m;
    int rc = 0, have_map = 0;
    if (!grp || !le || !sigs || !gfirst || !gcount || !order || !gstart || !bk) rc = pq__nomem(q);
    if (rc >= 0) {
        if (pq__lmap_init(&m, ns) < 0)
            rc = pq__nomem(q);
        else
            have_map = 1;
    }
    size_t ng = 0;
    base_str lename = base_str_c("le");
    for (size_t i = 0; i < ns && rc >= 0; i++) {
        grp[i] = SIZE_MAX;
        base_str lv = labels_get(in->s[i].ls, lename);
        double ub;
        if (lv.n == 0 || base_parse_double(lv.p, lv.n, &ub) < 0) continue;
        le[i] = ub;
        labels_builder *b = &q->lb;
        if (labels_builder_from(b, in->s[i].ls) < 0) {
            rc = pq__nomem(q);
            break;
        }
        labels_builder_del(b, lename);
        if ((rc = pq__lb_finish(q, b, &sigs[i])) < 0) break;
        uint64_t h = labels_hash(sigs[i]);
        size_t g = pq__lmap_get(&m, sigs[i], h);
        if (g == SIZE_MAX) {
            g = ng++;
            gfirst[g] = i;
            if (pq__lmap_put(&m, sigs[i], h, g) < 0) {
                rc = pq__nomem(q);
                break;
            }
        }
        grp[i] = g;
        gcount[g]++;
    }
    if (rc >= 0) {
        gstart[0] = 0;
        for (size_t g = 0; g < ng; g++) gstart[g + 1] = gstart[g] + gcount[g];
        memset(gcount, 0, (ns + 1) * sizeof *gcount);
        for (size_t i = 0; i < ns; i++)
            if (grp[i] != SIZE_MAX) order[gstart[grp[i]] + gcount[grp[i]]++] = i;
    }
    for (size_t g = 0; g < ng && rc >= 0; g++) {
        if ((rc = pq__poll(q)) < 0) break;
        labels_set *gl = pq__drop_name(q, sigs[gfirst[g]]);
        if (!gl) {
            rc = BASE_E_NOMEM;
            break;
        }
        pq_ser s;
        if ((rc = pq__ser_alloc(q, &s, n, gl)) < 0) break;
        for (size_t k = 0; k < n; k++) {
            size_t nb = 0;
            for (size_t j = gstart[g]; j < gstart[g + 1]; j++) {
                const pq_ser *is = &in->s[order[j]];
                if (!pq__bm_get(is->bm, k)) continue;
                bk[nb].upper = le[order[j]];
                bk[nb].count = is->v[k];
                nb++;
            }
            if (nb == 0) continue;
            s.v[k] = pq_bucket_quantile(qv->sc[k], bk, nb);
            pq__bm_set(s.bm, k);
        }
        rc = pq__vec_push(q, ret, &s);
    }
    if (have_map) pq__lmap_free(&m);
    if (sigs)
        for (size_t i = 0; i < ns; i++) labels_unref(sigs[i]);
    free(grp);
    free(le);
    free(sigs);
    free(gfirst);
    free(gcount);
    free(order);
    free(gstart);
    free(bk);
    if (rc >= 0) rc = finish_merge(q, ret);
    if (rc < 0) pq__val_free(q, ret);
    return rc;
}

/* ---- label_replace / label_join -------------------------------------------------------- */

static int eval_label_fn(pq_q *q, const pq_node *n, pq_val *v) {
    pq_func_id id = n->call.fn->id;
    char err[512];
    labels_regex *re = NULL;
    const char *dst = str_arg(n->call.args[1]);
    const char *srcs[64];
    const char **srcp = srcs;
    size_t nsrc = 0;
    int rc = 0;
    if (v->n == 0) return 0; /* no step: the function is never called */
    if (id == PQ_F_LABEL_REPLACE) {
        const char *rs = str_arg(n->call.args[4]);
        if (pq_label_regex_compile(rs, strlen(rs), &re, err, sizeof err) < 0)
            return pq__fail(q, PROMQL_ERR_EXECUTION, "%s", err);
        if (pq_fn_label_check(id, dst, NULL, 0, err, sizeof err) < 0) {
            labels_regex_free(re);
            return pq__fail(q, PROMQL_ERR_EXECUTION, "%s", err);
        }
    } else {
        nsrc = n->call.nargs - 3;
        if (nsrc > 64) {
            srcp = malloc(nsrc * sizeof *srcp);
            if (!srcp) return pq__nomem(q);
        }
        for (size_t i = 0; i < nsrc; i++) srcp[i] = str_arg(n->call.args[3 + i]);
        if (pq_fn_label_check(id, dst, srcp, nsrc, err, sizeof err) < 0) {
            if (srcp != srcs) free((void *)srcp);
            return pq__fail(q, PROMQL_ERR_EXECUTION, "%s", err);
        }
    }
    for (size_t i = 0; i < v->ns && rc >= 0; i++) {
        labels_set *out = NULL;
        if (id == PQ_F_LABEL_REPLACE)
            rc = pq_fn_label_replace(v->s[i].ls, dst, str_arg(n->call.args[2]), str_arg(n->call.args[3]), re,
                                     &out, err, sizeof err);
        else
            rc = pq_fn_label_join(v->s[i].ls, dst, str_arg(n->call.args[2]), srcp, nsrc, &out, err,
                                  sizeof err);
        if (rc < 0) {
            rc = rc == BASE_E_NOMEM ? pq__nomem(q) : pq__fail(q, PROMQL_ERR_EXECUTION, "%s", err);
            break;
        }
        labels_unref(v->s[i].ls);
        v->s[i].ls = out;
    }
    labels_regex_free(re);
    if (srcp != srcs) free((void *)srcp);
    if (rc < 0) return rc;
    return finish_merge(q, v);
}

/* ---- dispatch ------------------------------------------------------------------------- */

/* Instant-vector functions mapping each value: in place on args[0]. */
static int eval_elem(pq_q *q, pq_func_id id, pq_val *args, size_t nargs, pq_val *ret) {
    *ret = args[0];
    pq__val_init(&args[0], PQ_T_VECTOR, 0);
    size_t n = ret->n;
    double a[PQ_FUNC_MAX_ARGS];
    size_t na = nargs - 1;
    for (size_t i = 0; i < ret->ns; i++) {
        pq_ser *s = &ret->s[i];
        for (size_t k = 0; k < n; k++) {
            if (!pq__bm_get(s->bm, k)) continue;
            for (size_t j = 0; j < na; j++) a[j] = args[1 + j].sc[k];
            double out;
            if (pq_fn_elem(id, s->v[k], a, na, &out))
                s->v[k] = out;
            else
                pq__bm_clr(s->bm, k);
        }
    }
    int rc = relabel_drop_name(q, ret);
    if (rc >= 0) rc = finish_merge(q, ret);
    return rc;
}

int pq__eval_call(pq_q *q, const pq_node *n, const pq_rng *r, pq_val *ret) {
    pq_func_id id = n->call.fn->id;
    size_t na = n->call.nargs;
    int rc = 0;
    /* timestamp() of a selector: the samples' own times */
    if (id == PQ_F_TIMESTAMP) {
        const pq_node *a = pq__unparen(n->call.args[0]);
        if (a->kind == PQ_VSEL) return pq__eval_vsel(q, a, r, 1, ret);
    }
    for (size_t i = 0; i < na; i++) {
        const pq_node *a = pq__unparen(n->call.args[i]);
        if (a->kind == PQ_MSEL || a->kind == PQ_SUBQ) return eval_range_call(q, n, r, i, ret);
    }
    pq_val args[PQ_FUNC_MAX_ARGS + 1];
    pq_val *argv = args;
    size_t nev = 0;
    if (na > PQ_FUNC_MAX_ARGS) {
        argv = calloc(na, sizeof *argv);
        if (!argv) return pq__nomem(q);
    }
    for (size_t i = 0; i < na; i++) {
        const pq_node *a = n->call.args[i];
        if (a->type == PQ_T_STRING) {
            pq__val_init(&argv[i], PQ_T_STRING, r->n);
            nev++;
            continue;
        }
        rc = pq__eval(q, a, r, pq__child_wrap(q, n, a), &argv[i]);
        if (rc < 0) break;
        nev++;
    }
    size_t steps = r->n;
    if (rc >= 0) {
        switch (id) {
        case PQ_F_TIME:
            if ((rc = pq__val_scalar(q, ret, steps)) >= 0)
                for (size_t k = 0; k < steps; k++) ret->sc[k] = (double)pq__rng_t(r, k) / 1000;
            break;
        case PQ_F_PI:
            if ((rc = pq__val_scalar(q, ret, steps)) >= 0)
                for (size_t k = 0; k < steps; k++) ret->sc[k] = M_PI;
            break;
        case PQ_F_VECTOR:
            pq__val_init(ret, PQ_T_VECTOR, steps);
            if ((rc = full_series(q, ret, steps, labels_empty(), 0)) >= 0) {
                for (size_t k = 0; k < steps; k++) ret->s[0].v[k] = argv[0].sc[k];
                rc = pq__vec_settle(q, ret);
            }
            break;
        case PQ_F_SCALAR: {
            if ((rc = pq__val_scalar(q, ret, steps)) < 0) break;
            const pq_val *v = &argv[0];
            for (size_t k = 0; k < steps; k++) {
                size_t c = 0;
                double val = NAN;
                for (size_t i = 0; i < v->ns && c < 2; i++)
                    if (pq__bm_get(v->s[i].bm, k)) {
                        c++;
                        val = v->s[i].v[k];
                    }
                ret->sc[k] = c == 1 ? val : NAN;
            }
            break;
        }
        case PQ_F_ABSENT: {
            pq__val_init(ret, PQ_T_VECTOR, steps);
            const pq_val *v = &argv[0];
            uint64_t *any = calloc(PQ_BM_WORDS(steps) + 1, sizeof *any);
            if (!any) {
                rc = pq__nomem(q);
                break;
            }
            for (size_t i = 0; i < v->ns; i++)
                for (size_t w = 0; w < PQ_BM_WORDS(steps); w++) any[w] |= v->s[i].bm[w];
            size_t missing = 0;
            for (size_t k = 0; k < steps; k++) missing += !pq__bm_get(any, k);
            if (missing) {
                labels_set *ls = absent_labels(q, n->call.args[0]);
                pq_ser s;
                if (!ls)
                    rc = BASE_E_NOMEM;
                else if ((rc = pq__ser_alloc(q, &s, steps, ls)) >= 0) {
                    for (size_t k = 0; k < steps; k++)
                        if (!pq__bm_get(any, k)) {
                            s.v[k] = 1;
                            pq__bm_set(s.bm, k);
                        }
                    if ((rc = pq__vec_push(q, ret, &s)) >= 0) rc = pq__vec_settle(q, ret);
                }
            }
            free(any);
            break;
        }
        case PQ_F_SORT:
        case PQ_F_SORT_DESC: {
            *ret = argv[0];
            pq__val_init(&argv[0], PQ_T_VECTOR, 0);
            if (steps == 1 && ret->ns > 1) {
                size_t *idx = malloc(ret->ns * sizeof *idx);
                double *vals = malloc(ret->ns * sizeof *vals);
                pq_ser *tmp = malloc(ret->ns * sizeof *tmp);
                if (!idx || !vals || !tmp) {
                    free(idx);
                    free(vals);
                    free(tmp);
                    rc = pq__nomem(q);
                    break;
                }
                for (size_t i = 0; i < ret->ns; i++) {
                    idx[i] = i;
                    vals[i] = ret->s[i].v[0];
                }
                pq__go_sort_rev(idx, ret->ns, vals, id == PQ_F_SORT_DESC);
                for (size_t i = 0; i < ret->ns; i++) tmp[i] = ret->s[idx[i]];
                memcpy(ret->s, tmp, ret->ns * sizeof *tmp);
                free(idx);
                free(vals);
                free(tmp);
            }
            break;
        }
        case PQ_F_TIMESTAMP: {
            *ret = argv[0];
            pq__val_init(&argv[0], PQ_T_VECTOR, 0);
            for (size_t i = 0; i < ret->ns; i++)
                for (size_t k = 0; k < steps; k++) ret->s[i].v[k] = (double)pq__rng_t(r, k) / 1000;
            if ((rc = relabel_drop_name(q, ret)) >= 0) rc = finish_merge(q, ret);
            break;
        }
        case PQ_F_LABEL_REPLACE:
        case PQ_F_LABEL_JOIN:
            *ret = argv[0];
            pq__val_init(&argv[0], PQ_T_VECTOR, 0);
            rc = eval_label_fn(q, n, ret);
            break;
        case PQ_F_HISTOGRAM_QUANTILE: rc = eval_histogram_quantile(q, &argv[0], &argv[1], ret); break;
        case PQ_F_HISTOGRAM_COUNT:
        case PQ_F_HISTOGRAM_SUM:
        case PQ_F_HISTOGRAM_FRACTION:
            /* native histograms only: floats give nothing */
            pq__val_init(ret, PQ_T_VECTOR, steps);
            break;
        default:
            if (pq_fn_is_date(id) && na == 0) {
                pq__val_init(ret, PQ_T_VECTOR, steps);
                if ((rc = full_series(q, ret, steps, labels_empty(), 0)) >= 0) {
                    for (size_t k = 0; k < steps; k++) {
                        double out = 0;
                        pq_fn_elem(id, (double)(pq__rng_t(r, k) / 1000), NULL, 0, &out);
                        ret->s[0].v[k] = out;
                    }
                    rc = pq__vec_settle(q, ret);
                }
                break;
            }
            if (na >= 1 && argv[0].t == PQ_T_VECTOR) {
                rc = eval_elem(q, id, argv, na, ret);
                break;
            }
            rc = pq__fail(q, PROMQL_ERR_INTERNAL, "function %s not implemented", n->call.fn->name);
            break;
        }
    }
    for (size_t i = 0; i < nev; i++) pq__val_free(q, &argv[i]);
    if (argv != args) free(argv);
    if (rc < 0) pq__val_free(q, ret);
    return rc;
}
