/* eval.c -- the evaluator's core: node dispatch, step invariance, @ and
 * offsets, selectors, subqueries' step ranges, and the helpers every node
 * uses (values, accounting, merging of equal label sets, errors).
 *
 * DESIGN. 2.42 evaluates each node over all steps (rangeEval) but calls
 * the node's function once per step on a Vector it rebuilds each time.
 * Here a node computes all steps at once on columnar values (eval_int.h):
 * selectors read each series once and walk its samples with a cursor
 * across the steps, per-series work (labels, group keys, signatures) is
 * done once per series, and per-step work is array arithmetic.
 *
 * STEP INVARIANCE (2.42's PreprocessExpr). pq__ninfo_build records for
 * each node whether it is step invariant (@, literals, and what is built
 * only from them); a node 2.42 wraps in a StepInvariantExpr is evaluated
 * once at its range's first step and repeated (pq__eval's broadcast).
 * Aggregation parameters are not preprocessed by 2.42: inside them nothing
 * is wrapped and @ start()/end() are ignored (as 2.42 does).
 *
 * @ AND OFFSET. 2.42 turns @ t into an offset relative to the evaluator's
 * start (setOffsetForAtModifier); a node evaluated once (wrapped) thus
 * sees t - offset, and one evaluated at every step (an aggregation
 * parameter, a range argument of predict_linear) slides with the step, as
 * in 2.42. pq__eff_offset computes that offset, quirks included.
 *
 * LOOKBACK. An instant selector at reference time T (step time - offset)
 * takes the newest sample with t <= T, if t >= T - lookback and it is not
 * a stale marker (2.42's vectorSelectorSingle: both ends closed).
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/time.h"
#include "promql/eval_int.h"
#include "promql/func.h"

/* ---- errors and limits ---------------------------------------------------- */

int pq__fail(pq_q *q, promql_errtype type, const char *fmt, ...) {
    if (!q->failed) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(q->emsg, sizeof q->emsg, fmt, ap);
        va_end(ap);
        q->etype = type;
        q->failed = 1;
    }
    return BASE_E_INVAL;
}

int pq__nomem(pq_q *q) {
    pq__fail(q, PROMQL_ERR_INTERNAL, "out of memory");
    return BASE_E_NOMEM;
}

int pq__too_many(pq_q *q) {
    pq__fail(q, PROMQL_ERR_EXECUTION,
             "query processing would load too many samples into memory in query execution");
    return BASE_E_LIMIT;
}

int pq__check(pq_q *q) {
    if (q->failed) return BASE_E_INVAL;
    if (q->cancel && *q->cancel)
        return pq__fail(q, PROMQL_ERR_CANCELED, "query was canceled in expression evaluation");
    if (q->deadline_ns && base_mono_ns() > q->deadline_ns) {
        pq__fail(q, PROMQL_ERR_TIMEOUT, "query timed out in expression evaluation");
        return BASE_E_TIMEOUT;
    }
    return 0;
}

void pq__perr_note(pq_perr *e, size_t step, int prio, promql_errtype type, const char *fmt, ...) {
    if (e->set && (e->step < step || (e->step == step && e->prio <= prio))) return;
    e->set = 1;
    e->step = step;
    e->prio = prio;
    e->type = type;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    va_end(ap);
}

int pq__perr_raise(pq_q *q, const pq_perr *e) {
    if (!e->set) return 0;
    return pq__fail(q, e->type, "%s", e->msg);
}

int pq__hold(pq_q *q, uint64_t n) {
    q->cur += n;
    if (q->cur > q->peak) q->peak = q->cur;
    if (q->cur > q->max_samples) return pq__too_many(q);
    return 0;
}

void pq__release(pq_q *q, uint64_t n) {
    q->cur = n > q->cur ? 0 : q->cur - n;
}

/* ---- series and values ---------------------------------------------------- */

int pq__ser_alloc(pq_q *q, pq_ser *s, size_t n, labels_set *ls) {
    memset(s, 0, sizeof *s);
    q->slots += n;
    if (q->slots > q->max_slots) {
        q->slots -= n;
        labels_unref(ls);
        return pq__too_many(q);
    }
    size_t w = PQ_BM_WORDS(n);
    void *p = pq__mem_alloc(n * sizeof(double) + w * sizeof(uint64_t) + 8);
    if (!p) {
        q->slots -= n;
        labels_unref(ls);
        return pq__nomem(q);
    }
    s->v = p;
    s->bm = (uint64_t *)(s->v + n);
    memset(s->bm, 0, w * sizeof(uint64_t));
    s->ls = ls;
    return 0;
}

void pq__ser_free(pq_q *q, pq_ser *s, size_t n) {
    if (s->v) {
        pq__mem_free(s->v, n * sizeof(double) + PQ_BM_WORDS(n) * sizeof(uint64_t) + 8);
        q->slots = n > q->slots ? 0 : q->slots - n;
    }
    labels_unref(s->ls);
    memset(s, 0, sizeof *s);
}

size_t pq__ser_count(const pq_ser *s, size_t n) {
    size_t c = 0, w = PQ_BM_WORDS(n);
    for (size_t i = 0; i < w; i++) c += (size_t)__builtin_popcountll(s->bm[i]);
    return c;
}

void pq__val_init(pq_val *v, pq_type t, size_t n) {
    memset(v, 0, sizeof *v);
    v->t = t;
    v->n = n;
}

void pq__val_free(pq_q *q, pq_val *v) {
    if (v->sc) {
        pq__mem_free(v->sc, v->n * sizeof(double) + 8);
        q->slots = v->n > q->slots ? 0 : q->slots - v->n;
    }
    for (size_t i = 0; i < v->ns; i++) pq__ser_free(q, &v->s[i], v->n);
    free(v->s);
    for (size_t i = 0; i < v->nm; i++) {
        labels_unref(v->m[i].ls);
        free(v->m[i].t);
        free(v->m[i].v);
    }
    free(v->m);
    pq__release(q, v->held);
    memset(v, 0, sizeof *v);
}

int pq__val_scalar(pq_q *q, pq_val *v, size_t n) {
    pq__val_init(v, PQ_T_SCALAR, n);
    q->slots += n;
    if (q->slots > q->max_slots) {
        q->slots -= n;
        return pq__too_many(q);
    }
    v->sc = pq__mem_alloc(n * sizeof(double) + 8);
    if (!v->sc) {
        q->slots -= n;
        return pq__nomem(q);
    }
    v->held = n;
    return pq__hold(q, n);
}

int pq__vec_push(pq_q *q, pq_val *v, pq_ser *s) {
    if (v->ns == v->cap) {
        size_t nc = v->cap ? v->cap * 2 : 8;
        pq_ser *ns = realloc(v->s, nc * sizeof *ns);
        if (!ns) {
            pq__ser_free(q, s, v->n);
            return pq__nomem(q);
        }
        v->s = ns;
        v->cap = nc;
    }
    v->s[v->ns++] = *s;
    memset(s, 0, sizeof *s);
    return 0;
}

int pq__vec_settle(pq_q *q, pq_val *v) {
    size_t j = 0;
    uint64_t total = 0;
    for (size_t i = 0; i < v->ns; i++) {
        pq_ser *s = &v->s[i];
        s->cnt = s->bm ? pq__ser_count(s, v->n) : 0;
        if (s->cnt == 0) {
            pq__ser_free(q, s, v->n);
            continue;
        }
        total += s->cnt;
        if (j != i) v->s[j] = *s;
        j++;
    }
    v->ns = j;
    if (total >= v->held) {
        uint64_t d = total - v->held;
        v->held = total;
        return pq__hold(q, d);
    }
    pq__release(q, v->held - total);
    v->held = total;
    return 0;
}

/* ---- labels -> index -------------------------------------------------------- */

int pq__lmap_init(pq_lmap *m, size_t hint) {
    memset(m, 0, sizeof *m);
    size_t cap = 16;
    while (cap < hint * 2) cap *= 2;
    m->h = malloc(cap * sizeof *m->h);
    m->k = calloc(cap, sizeof *m->k);
    m->idx = malloc(cap * sizeof *m->idx);
    if (!m->h || !m->k || !m->idx) {
        pq__lmap_free(m);
        return BASE_E_NOMEM;
    }
    m->cap = cap;
    return 0;
}

void pq__lmap_free(pq_lmap *m) {
    free(m->h);
    free(m->k);
    free(m->idx);
    memset(m, 0, sizeof *m);
}

size_t pq__lmap_get(const pq_lmap *m, const labels_set *ls, uint64_t h) {
    size_t mask = m->cap - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
        if (!m->k[i]) return SIZE_MAX;
        if (m->h[i] == h && (m->k[i] == ls || labels_equal(m->k[i], ls))) return m->idx[i];
    }
}

int pq__lmap_put(pq_lmap *m, const labels_set *ls, uint64_t h, size_t idx) {
    if ((m->n + 1) * 2 > m->cap) {
        pq_lmap nm;
        if (pq__lmap_init(&nm, m->cap) < 0) return BASE_E_NOMEM;
        for (size_t i = 0; i < m->cap; i++)
            if (m->k[i]) pq__lmap_put(&nm, m->k[i], m->h[i], m->idx[i]);
        pq__lmap_free(m);
        *m = nm;
    }
    size_t mask = m->cap - 1;
    size_t i = h & mask;
    while (m->k[i]) i = (i + 1) & mask;
    m->h[i] = h;
    m->k[i] = ls;
    m->idx[i] = idx;
    m->n++;
    return 0;
}

labels_set *pq__drop_name(pq_q *q, const labels_set *ls) {
    base_str name = base_str_c(LABELS_METRIC_NAME);
    if (!labels_has(ls, name)) return labels_ref(ls);
    labels_set *out = NULL;
    if (labels_builder_from(&q->lb, ls) < 0) {
        pq__nomem(q);
        return NULL;
    }
    labels_builder_del(&q->lb, name);
    return pq__lb_finish(q, &q->lb, &out) < 0 ? NULL : out;
}

int pq__lb_finish(pq_q *q, labels_builder *b, labels_set **ret) {
    labels_set *out = NULL;
    char err[128];
    if (labels_builder_finish(b, 0, &out, err, sizeof err) < 0)
        return pq__fail(q, PROMQL_ERR_INTERNAL, "%s", err);
    *ret = out;
    return 0;
}

/* Moves b's points into a (b's steps that a lacks); notes a conflict. */
static void merge_into(pq_ser *a, const pq_ser *b, size_t n, pq_perr *pe) {
    size_t w = PQ_BM_WORDS(n);
    for (size_t i = 0; i < w; i++) {
        uint64_t bb = b->bm[i];
        if (!bb) continue;
        uint64_t both = a->bm[i] & bb;
        if (both && pe)
            pq__perr_note(pe, i * 64 + (size_t)__builtin_ctzll(both), 9, PROMQL_ERR_EXECUTION,
                          "vector cannot contain metrics with the same labelset");
        uint64_t add = bb & ~a->bm[i];
        a->bm[i] |= add;
        while (add) {
            size_t k = i * 64 + (size_t)__builtin_ctzll(add);
            a->v[k] = b->v[k];
            add &= add - 1;
        }
    }
}

int pq__vec_merge(pq_q *q, pq_val *v, int mode, pq_perr *pe) {
    int rc = pq__vec_settle(q, v);
    if (rc < 0) return rc;
    if (v->ns < 2) return 0;
    if (v->ns == 2) {
        if (!labels_equal(v->s[0].ls, v->s[1].ls)) return 0;
        if (mode == PQ_MERGE_FAIL)
            return pq__fail(q, PROMQL_ERR_EXECUTION, "vector cannot contain metrics with the same labelset");
        merge_into(&v->s[0], &v->s[1], v->n, pe);
        memset(v->s[1].bm, 0, PQ_BM_WORDS(v->n) * sizeof(uint64_t));
        return pq__vec_settle(q, v);
    }
    pq_lmap m;
    if (pq__lmap_init(&m, v->ns) < 0) return pq__nomem(q);
    int merged = 0;
    for (size_t i = 0; i < v->ns; i++) {
        pq_ser *s = &v->s[i];
        uint64_t h = labels_hash(s->ls);
        size_t j = pq__lmap_get(&m, s->ls, h);
        if (j == SIZE_MAX) {
            if (pq__lmap_put(&m, s->ls, h, i) < 0) {
                pq__lmap_free(&m);
                return pq__nomem(q);
            }
            continue;
        }
        if (mode == PQ_MERGE_FAIL) {
            pq__lmap_free(&m);
            return pq__fail(q, PROMQL_ERR_EXECUTION, "vector cannot contain metrics with the same labelset");
        }
        merge_into(&v->s[j], s, v->n, pe);
        /* emptied: keep the labels (a key may point at an equal set, not
         * this one) until the map is gone */
        memset(s->bm, 0, PQ_BM_WORDS(v->n) * sizeof(uint64_t));
        merged = 1;
    }
    pq__lmap_free(&m);
    return merged ? pq__vec_settle(q, v) : 0;
}

/* ---- node info (PreprocessExpr) --------------------------------------------- */

struct pq_ninfo {
    const pq_node *n;
    int inv;
    int unproc;         /* inside an aggregation parameter: 2.42 never preprocessed it */
    int64_t mint, maxt; /* selectors: the data 2.42 selects (getTimeRangesForSelector) */
};

/* 2.42's subqueryTimes over the path from the root to a node. */
typedef struct subq_path {
    int64_t off, range;
    int has_ts;
    int64_t ts;
} subq_path;

static size_t ni_slot(const pq_q *q, const pq_node *n) {
    uintptr_t p = (uintptr_t)n;
    uint64_t h = (uint64_t)p * 0x9E3779B97F4A7C15ULL;
    size_t mask = q->ni_cap - 1;
    size_t i = (size_t)(h >> 20) & mask;
    while (q->ni[i].n && q->ni[i].n != n) i = (i + 1) & mask;
    return i;
}

static const pq_ninfo *ni_get(const pq_q *q, const pq_node *n) {
    if (!q->ni) return NULL;
    size_t i = ni_slot(q, n);
    return q->ni[i].n ? &q->ni[i] : NULL;
}

static size_t count_nodes(const pq_node *n) {
    if (!n) return 0;
    size_t c = 1;
    switch (n->kind) {
    case PQ_MSEL: c += count_nodes(n->msel.vsel); break;
    case PQ_CALL:
        for (size_t i = 0; i < n->call.nargs; i++) c += count_nodes(n->call.args[i]);
        break;
    case PQ_AGG: c += count_nodes(n->agg.expr) + count_nodes(n->agg.param); break;
    case PQ_BIN: c += count_nodes(n->bin.lhs) + count_nodes(n->bin.rhs); break;
    case PQ_UNARY: c += count_nodes(n->unary.expr); break;
    case PQ_PAREN: c += count_nodes(n->paren.expr); break;
    case PQ_SUBQ: c += count_nodes(n->subq.expr); break;
    default: break;
    }
    return c;
}

static int fn_unsafe(pq_func_id id) {
    if (pq_fn_is_date(id)) return 1;
    switch (id) {
    case PQ_F_PREDICT_LINEAR:
    case PQ_F_TIME:
    case PQ_F_TIMESTAMP: return 1;
    default: return 0;
    }
}

/* The @ time of a subquery or selector as PreprocessExpr leaves it. */
static int pre_at(pq_at at, int64_t at_ms, int unproc, const pq_q *q, int64_t *ret) {
    if (at == PQ_AT_TIME) {
        *ret = at_ms;
        return 1;
    }
    if (unproc || at == PQ_AT_NONE) return 0;
    *ret = at == PQ_AT_START ? q->qstart : q->qend;
    return 1;
}

static int ni_walk(pq_q *q, const pq_node *n, int unproc, const subq_path *path, int64_t eval_range) {
    if (!n) return 1;
    int inv = 0;
    int64_t mint = 0, maxt = 0;
    switch (n->kind) {
    case PQ_NUM:
    case PQ_STR: inv = 1; break;
    case PQ_VSEL: {
        int64_t t;
        inv = pre_at(n->vsel.at, n->vsel.at_ms, unproc, q, &t);
        /* getTimeRangesForSelector: what the querier returns for it */
        int64_t start = q->qstart, end = q->qend;
        if (path->has_ts) start = end = path->ts;
        if (inv) {
            start = end = t;
        } else {
            start -= path->off + path->range;
            end -= path->off;
        }
        start -= eval_range ? eval_range : q->o->lookback_ms;
        mint = start - n->vsel.offset_ms;
        maxt = end - n->vsel.offset_ms;
        break;
    }
    case PQ_MSEL: inv = ni_walk(q, n->msel.vsel, unproc, path, n->msel.range_ms); break;
    case PQ_CALL: {
        inv = !fn_unsafe(n->call.fn->id);
        for (size_t i = 0; i < n->call.nargs; i++)
            if (!ni_walk(q, n->call.args[i], unproc, path, 0)) inv = 0;
        break;
    }
    case PQ_AGG:
        inv = ni_walk(q, n->agg.expr, unproc, path, 0);
        ni_walk(q, n->agg.param, 1, path, 0);
        break;
    case PQ_BIN: {
        int a = ni_walk(q, n->bin.lhs, unproc, path, 0);
        int b = ni_walk(q, n->bin.rhs, unproc, path, 0);
        inv = a && b;
        break;
    }
    case PQ_UNARY: inv = ni_walk(q, n->unary.expr, unproc, path, 0); break;
    case PQ_PAREN: inv = ni_walk(q, n->paren.expr, unproc, path, 0); break;
    case PQ_SUBQ: {
        int64_t t;
        inv = pre_at(n->subq.at, n->subq.at_ms, unproc, q, &t);
        subq_path p = *path;
        if (inv) {
            p.off = n->subq.offset_ms;
            p.range = n->subq.range_ms;
            p.has_ts = 1;
            p.ts = t;
        } else {
            p.off += n->subq.offset_ms;
            p.range += n->subq.range_ms;
        }
        ni_walk(q, n->subq.expr, unproc, &p, 0);
        break;
    }
    }
    size_t i = ni_slot(q, n);
    q->ni[i].n = n;
    q->ni[i].inv = inv;
    q->ni[i].unproc = unproc;
    q->ni[i].mint = mint;
    q->ni[i].maxt = maxt;
    return inv;
}

int pq__ninfo_build(pq_q *q, const pq_node *root) {
    size_t c = count_nodes(root), cap = 16;
    while (cap < c * 2) cap *= 2;
    q->ni = calloc(cap, sizeof *q->ni);
    if (!q->ni) return pq__nomem(q);
    q->ni_cap = cap;
    subq_path path = {0, 0, 0, 0};
    ni_walk(q, root, 0, &path, 0);
    return 0;
}

void pq__ninfo_free(pq_q *q) {
    free(q->ni);
    q->ni = NULL;
    q->ni_cap = 0;
}

int pq__node_inv(const pq_q *q, const pq_node *n) {
    const pq_ninfo *i = ni_get(q, n);
    return i ? i->inv : 0;
}

static int node_unproc(const pq_q *q, const pq_node *n) {
    const pq_ninfo *i = ni_get(q, n);
    return i ? i->unproc : 0;
}

int pq__child_wrap(const pq_q *q, const pq_node *parent, const pq_node *child) {
    if (!child || node_unproc(q, child)) return 0;
    if (!parent) return pq__node_inv(q, child);
    switch (parent->kind) {
    case PQ_BIN:
    case PQ_CALL: return pq__node_inv(q, child) && !pq__node_inv(q, parent);
    case PQ_SUBQ: return pq__node_inv(q, child);
    default: return 0;
    }
}

/* ---- @ and offsets ------------------------------------------------------------ */

/* The @ time of a node as 2.42 sees it: start()/end() resolved, except
 * inside aggregation parameters (never preprocessed). 0: no @. */
static int node_at(const pq_q *q, const pq_node *n, pq_at at, int64_t at_ms, int64_t *ret_t) {
    switch (at) {
    case PQ_AT_NONE: return 0;
    case PQ_AT_TIME: *ret_t = at_ms; return 1;
    case PQ_AT_START:
        if (node_unproc(q, n)) return 0;
        *ret_t = q->qstart;
        return 1;
    case PQ_AT_END:
        if (node_unproc(q, n)) return 0;
        *ret_t = q->qend;
        return 1;
    }
    return 0;
}

int64_t pq__eff_offset(const pq_q *q, const pq_rng *r, pq_at at, int64_t at_ms, int64_t offset_ms) {
    (void)q;
    if (at == PQ_AT_NONE) return offset_ms;
    int64_t quirk = r->quirk_sum + (r->quirk_has_ts ? r->start - r->quirk_ts : 0);
    return offset_ms + (r->start - at_ms) - quirk;
}

/* Offset of a selector node (VSEL) in range r. */
static int64_t vsel_offset(const pq_q *q, const pq_node *vs, const pq_rng *r, int *ret_has_at,
                           int64_t *ret_at) {
    int64_t t = 0;
    int has = node_at(q, vs, vs->vsel.at, vs->vsel.at_ms, &t);
    if (ret_has_at) *ret_has_at = has;
    if (ret_at) *ret_at = t;
    return has ? pq__eff_offset(q, r, PQ_AT_TIME, t, vs->vsel.offset_ms) : vs->vsel.offset_ms;
}

int64_t pq__vsel_offset(const pq_q *q, const pq_node *vs, const pq_rng *r);
int64_t pq__vsel_offset(const pq_q *q, const pq_node *vs, const pq_rng *r) {
    return vsel_offset(q, vs, r, NULL, NULL);
}

const pq_node *pq__unparen(const pq_node *n) {
    while (n && n->kind == PQ_PAREN) n = n->paren.expr;
    return n;
}

/* ---- reading samples ----------------------------------------------------------- */

#define RD_BATCH 512

void pq__rd_init(pq_rd *rd, const promql_storage *st, void *set, int drop_stale) {
    memset(rd, 0, sizeof *rd);
    rd->st = st;
    rd->set = set;
    rd->drop_stale = drop_stale;
}

void pq__rd_reset(pq_rd *rd) {
    rd->lo = rd->hi = 0;
    rd->eof = 0;
}

void pq__rd_free(pq_rd *rd) {
    free(rd->t);
    free(rd->v);
    rd->t = NULL;
    rd->v = NULL;
    rd->cap = 0;
}

int pq__rd_fill(pq_q *q, pq_rd *rd, int64_t maxt) {
    while (!rd->eof && (rd->hi == rd->lo || rd->t[rd->hi - 1] <= maxt)) {
        if (rd->lo > 0 && (rd->lo == rd->hi || rd->hi + RD_BATCH > rd->cap)) {
            size_t live = rd->hi - rd->lo;
            memmove(rd->t, rd->t + rd->lo, live * sizeof *rd->t);
            memmove(rd->v, rd->v + rd->lo, live * sizeof *rd->v);
            rd->lo = 0;
            rd->hi = live;
        }
        if (rd->hi + RD_BATCH > rd->cap) {
            size_t nc = rd->cap ? rd->cap * 2 : RD_BATCH * 2;
            int64_t *nt = realloc(rd->t, nc * sizeof *nt);
            if (!nt) return pq__nomem(q);
            rd->t = nt;
            double *nv = realloc(rd->v, nc * sizeof *nv);
            if (!nv) return pq__nomem(q);
            rd->v = nv;
            rd->cap = nc;
        }
        int c = rd->st->ops->samples(rd->set, rd->t + rd->hi, rd->v + rd->hi, rd->cap - rd->hi);
        if (c < 0) return pq__fail(q, PROMQL_ERR_INTERNAL, "reading series: %s", base_strerror(c));
        if (c == 0) {
            rd->eof = 1;
            break;
        }
        if (rd->drop_stale) {
            size_t j = rd->hi;
            for (size_t i = rd->hi; i < rd->hi + (size_t)c; i++) {
                if (pq__is_stale(rd->v[i])) continue;
                rd->t[j] = rd->t[i];
                rd->v[j] = rd->v[i];
                j++;
            }
            rd->hi = j;
        } else {
            rd->hi += (size_t)c;
        }
    }
    return 0;
}

void pq__rd_trim(pq_rd *rd, int64_t mint) {
    while (rd->lo < rd->hi && rd->t[rd->lo] < mint) rd->lo++;
}

/* 2.42 reads a selector's data through a querier limited to the range
 * getTimeRangesForSelector computes from the query's start and end and
 * the subqueries above it: samples outside it are invisible even where a
 * sliding @ window reaches them. That range covers what the evaluation
 * needs; it is used when known (mint/maxt otherwise). */
static int storage_select(pq_q *q, const pq_node *vs, int64_t mint, int64_t maxt, void **ret) {
    const pq_ninfo *ni = ni_get(q, vs);
    if (ni) {
        mint = ni->mint;
        maxt = ni->maxt;
    }
    int rc = q->st.ops->select(q->st.ctx, vs->vsel.ms, vs->vsel.nms, mint, maxt, ret);
    if (rc < 0) return pq__fail(q, PROMQL_ERR_INTERNAL, "expanding series: %s", base_strerror(rc));
    return 0;
}

int pq__select(pq_q *q, const pq_node *vs, int64_t mint, int64_t maxt, void **ret);
int pq__select(pq_q *q, const pq_node *vs, int64_t mint, int64_t maxt, void **ret) {
    return storage_select(q, vs, mint, maxt, ret);
}

/* ---- instant vector selector ------------------------------------------------------ */

/* The reference time of step 0 and its increment per step (eval_stream.c
 * walks the samples with them). */
int pq__vsel_refs(const pq_q *q, const pq_node *n, const pq_rng *r, int ts_mode, int64_t *ret_ref0,
                  int64_t *ret_rstep);
int pq__vsel_refs(const pq_q *q, const pq_node *n, const pq_rng *r, int ts_mode, int64_t *ret_ref0,
                  int64_t *ret_rstep) {
    int has_at;
    int64_t at;
    int64_t off = vsel_offset(q, n, r, &has_at, &at);
    if (ts_mode && has_at) {
        /* timestamp() of a selector with @ reads it at @ - offset at
         * every step (checked against the 2.42 binary) */
        *ret_ref0 = at - n->vsel.offset_ms;
        *ret_rstep = 0;
    } else {
        *ret_ref0 = r->start - off;
        *ret_rstep = r->step;
    }
    return 0;
}

int pq__eval_vsel(pq_q *q, const pq_node *n, const pq_rng *r, int ts_mode, pq_val *ret) {
    pq__val_init(ret, PQ_T_VECTOR, r->n);
    pq_stream *st = NULL;
    int rc = pq__stream_open(q, n, r, ts_mode, &st);
    if (rc < 0) return rc;
    pq_ser s;
    while ((rc = pq__stream_next(q, st, &s)) == 1) {
        ret->held += s.cnt;
        if ((rc = pq__vec_push(q, ret, &s)) < 0) break;
    }
    pq__stream_close(q, st);
    if (rc >= 0 && ts_mode) {
        pq_perr pe = {0};
        if ((rc = pq__vec_merge(q, ret, PQ_MERGE_STEPS, &pe)) >= 0) rc = pq__perr_raise(q, &pe);
    }
    if (rc < 0) pq__val_free(q, ret);
    return rc < 0 ? rc : 0;
}

/* ---- subqueries ----------------------------------------------------------------- */

/* 2.42's eval of a SubqueryExpr: the inner steps (aligned to multiples of
 * the step), evaluated; *ret_off is the offset its range argument uses
 * (evalSubquery's vs.Offset). */
int pq__eval_subq(pq_q *q, const pq_node *n, const pq_rng *r, pq_rng *ret_rng, int64_t *ret_off, pq_val *ret);
int pq__eval_subq(pq_q *q, const pq_node *n, const pq_rng *r, pq_rng *ret_rng, int64_t *ret_off,
                  pq_val *ret) {
    int64_t at = 0;
    int has_at = node_at(q, n, n->subq.at, n->subq.at_ms, &at);
    int64_t off = has_at ? pq__eff_offset(q, r, PQ_AT_TIME, at, n->subq.offset_ms) : n->subq.offset_ms;
    int64_t range = n->subq.range_ms;
    int64_t step = n->subq.step_ms ? n->subq.step_ms : q->o->default_subq_step_ms;
    if (step <= 0) step = 60000;
    pq_rng in;
    memset(&in, 0, sizeof in);
    in.step = step;
    in.end = r->end - off;
    int64_t x = r->start - off - range;
    in.start = step * (x / step);
    if (in.start < x) in.start += step;
    in.n = in.end >= in.start ? (size_t)((in.end - in.start) / step) + 1 : 0;
    if (in.start != r->start) {
        in.quirk_sum = 0;
        in.quirk_has_ts = 0;
    } else if (has_at) {
        in.quirk_sum = n->subq.offset_ms;
        in.quirk_has_ts = 1;
        in.quirk_ts = at;
    } else {
        in.quirk_sum = r->quirk_sum + n->subq.offset_ms;
        in.quirk_has_ts = r->quirk_has_ts;
        in.quirk_ts = r->quirk_ts;
    }
    if (in.n > 0 && (uint64_t)in.n > q->max_slots) return pq__too_many(q);
    int wrap = pq__child_wrap(q, n, n->subq.expr);
    /* no step in range: a step-invariant inner expression is still
     * evaluated once at the (aligned) start, as 2.42's StepInvariantExpr
     * does whatever the end */
    if (in.n == 0 && wrap) in.n = 1;
    *ret_rng = in;
    *ret_off = has_at ? n->subq.offset_ms + (r->start - at) : n->subq.offset_ms;
    if (in.n == 0) {
        pq__val_init(ret, PQ_T_VECTOR, 0);
        return 0;
    }
    return pq__eval(q, n->subq.expr, &in, wrap, ret);
}

/* ---- instant query of a range vector ------------------------------------------------ */

static int push_mser(pq_q *q, pq_val *v, labels_set *ls, const int64_t *t, const double *vals, size_t n) {
    if (v->nm % 16 == 0) {
        pq_mser *nm = realloc(v->m, (v->nm + 16) * sizeof *nm);
        if (!nm) {
            labels_unref(ls);
            return pq__nomem(q);
        }
        v->m = nm;
    }
    pq_mser *m = &v->m[v->nm];
    m->ls = ls;
    m->n = n;
    m->t = malloc(n * sizeof *m->t + 1);
    m->v = malloc(n * sizeof *m->v + 1);
    if (!m->t || !m->v) {
        free(m->t);
        free(m->v);
        labels_unref(ls);
        return pq__nomem(q);
    }
    memcpy(m->t, t, n * sizeof *t);
    memcpy(m->v, vals, n * sizeof *vals);
    v->nm++;
    v->held += n;
    q->total += n;
    return pq__hold(q, n);
}

int pq__eval_matrix(pq_q *q, const pq_node *n, const pq_rng *r, pq_val *ret) {
    n = pq__unparen(n);
    pq__val_init(ret, PQ_T_MATRIX, 1);
    int rc = 0;
    if (n->kind == PQ_MSEL) {
        const pq_node *vs = n->msel.vsel;
        int64_t off = vsel_offset(q, vs, r, NULL, NULL);
        int64_t maxt = r->start - off, mint = maxt - n->msel.range_ms;
        void *set = NULL;
        if ((rc = storage_select(q, vs, mint, maxt, &set)) < 0) return rc;
        pq_rd rd;
        pq__rd_init(&rd, &q->st, set, 1);
        for (;;) {
            rc = q->st.ops->next(set);
            if (rc < 0) {
                rc = pq__fail(q, PROMQL_ERR_INTERNAL, "expanding series: %s", base_strerror(rc));
                break;
            }
            if (rc == 0) break;
            if ((rc = pq__check(q)) < 0) break;
            pq__rd_reset(&rd);
            if ((rc = pq__rd_fill(q, &rd, maxt)) < 0) break;
            /* drain: the series' samples all lie in [mint, maxt] */
            while (!rd.eof)
                if ((rc = pq__rd_fill(q, &rd, INT64_MAX)) < 0) break;
            if (rc < 0) break;
            size_t lo = rd.lo, hi = rd.hi;
            while (lo < hi && rd.t[lo] < mint) lo++;
            while (hi > lo && rd.t[hi - 1] > maxt) hi--;
            if (hi == lo) continue;
            rc = push_mser(q, ret, labels_ref(q->st.ops->labels(set)), rd.t + lo, rd.v + lo, hi - lo);
            if (rc < 0) break;
        }
        pq__rd_free(&rd);
        q->st.ops->free(set);
    } else if (n->kind == PQ_SUBQ) {
        pq_rng in;
        int64_t off;
        pq_val iv;
        if ((rc = pq__eval_subq(q, n, r, &in, &off, &iv)) < 0) return rc;
        int64_t *tb = malloc((in.n + 1) * sizeof *tb);
        double *vb = malloc((in.n + 1) * sizeof *vb);
        if (!tb || !vb) rc = pq__nomem(q);
        for (size_t i = 0; rc >= 0 && i < iv.ns; i++) {
            size_t c = 0;
            for (size_t k = 0; k < in.n; k++) {
                if (!pq__bm_get(iv.s[i].bm, k)) continue;
                tb[c] = pq__rng_t(&in, k);
                vb[c] = iv.s[i].v[k];
                c++;
            }
            if (c == 0) continue;
            rc = push_mser(q, ret, labels_ref(iv.s[i].ls), tb, vb, c);
        }
        free(tb);
        free(vb);
        pq__val_free(q, &iv);
    } else {
        rc = pq__fail(q, PROMQL_ERR_INTERNAL, "unexpected range vector expression");
    }
    if (rc < 0) pq__val_free(q, ret);
    return rc;
}

/* ---- unary minus ------------------------------------------------------------------ */

static int eval_unary(pq_q *q, const pq_node *n, const pq_rng *r, pq_val *ret) {
    int rc = pq__eval(q, n->unary.expr, r, 0, ret);
    if (rc < 0 || !n->unary.neg) return rc;
    if (ret->t == PQ_T_SCALAR) {
        for (size_t k = 0; k < ret->n; k++) ret->sc[k] = -ret->sc[k];
        return 0;
    }
    for (size_t i = 0; i < ret->ns; i++) {
        pq_ser *s = &ret->s[i];
        for (size_t k = 0; k < ret->n; k++) s->v[k] = -s->v[k];
        labels_set *ls = pq__drop_name(q, s->ls);
        if (!ls) {
            pq__val_free(q, ret);
            return BASE_E_NOMEM;
        }
        labels_unref(s->ls);
        s->ls = ls;
    }
    if ((rc = pq__vec_merge(q, ret, PQ_MERGE_FAIL, NULL)) < 0) pq__val_free(q, ret);
    return rc;
}

/* ---- step invariance: evaluate once, repeat ------------------------------------------- */

static int broadcast(pq_q *q, pq_val *one, size_t n, pq_val *ret) {
    int rc;
    if (one->t == PQ_T_SCALAR) {
        double v = one->sc[0];
        pq__val_free(q, one);
        if ((rc = pq__val_scalar(q, ret, n)) < 0) return rc;
        for (size_t k = 0; k < n; k++) ret->sc[k] = v;
        return 0;
    }
    if (one->t != PQ_T_VECTOR) {
        *ret = *one;
        return 0;
    }
    pq__val_init(ret, PQ_T_VECTOR, n);
    rc = 0;
    for (size_t i = 0; i < one->ns && rc >= 0; i++) {
        pq_ser *o = &one->s[i];
        if (!pq__bm_get(o->bm, 0)) continue;
        pq_ser s;
        if ((rc = pq__ser_alloc(q, &s, n, labels_ref(o->ls))) < 0) break;
        double v = o->v[0];
        for (size_t k = 0; k < n; k++) s.v[k] = v;
        size_t w = PQ_BM_WORDS(n);
        for (size_t j = 0; j < w; j++) s.bm[j] = ~(uint64_t)0;
        if (n % 64) s.bm[w - 1] = ((uint64_t)1 << (n % 64)) - 1;
        s.cnt = n;
        ret->held += n;
        if ((rc = pq__vec_push(q, ret, &s)) < 0) break;
        rc = pq__hold(q, n);
    }
    pq__val_free(q, one);
    if (rc < 0) pq__val_free(q, ret);
    return rc;
}

/* ---- dispatch ------------------------------------------------------------------------- */

int pq__eval(pq_q *q, const pq_node *n, const pq_rng *r, int wrap, pq_val *ret) {
    int rc = pq__check(q);
    if (rc < 0) return rc;
    if (wrap && r->n >= 1 && n->kind != PQ_NUM && n->kind != PQ_STR && n->kind != PQ_MSEL &&
        n->kind != PQ_SUBQ && (r->n > 1 || r->end != r->start)) {
        /* 2.42's StepInvariantExpr: one evaluation with end = start (a
         * subquery's unaligned end must not reach nested subqueries) */
        pq_rng one = *r;
        one.end = one.start;
        one.n = 1;
        if (r->n == 1) return pq__eval(q, n, &one, 0, ret);
        pq_val v1;
        if ((rc = pq__eval(q, n, &one, 0, &v1)) < 0) return rc;
        return broadcast(q, &v1, r->n, ret);
    }
    switch (n->kind) {
    case PQ_NUM:
        if ((rc = pq__val_scalar(q, ret, r->n)) < 0) return rc;
        for (size_t k = 0; k < r->n; k++) ret->sc[k] = n->num.v;
        return 0;
    case PQ_STR:
        pq__val_init(ret, PQ_T_STRING, r->n);
        ret->str = n->str.s;
        ret->slen = n->str.len;
        return 0;
    case PQ_PAREN: return pq__eval(q, n->paren.expr, r, 0, ret);
    case PQ_UNARY: return eval_unary(q, n, r, ret);
    case PQ_VSEL: return pq__eval_vsel(q, n, r, 0, ret);
    case PQ_MSEL:
    case PQ_SUBQ:
        if (r->n != 1)
            return pq__fail(q, PROMQL_ERR_INTERNAL, "cannot do range evaluation of matrix selector");
        return pq__eval_matrix(q, n, r, ret);
    case PQ_CALL: return pq__eval_call(q, n, r, ret);
    case PQ_AGG: return pq__eval_agg(q, n, r, ret);
    case PQ_BIN: return pq__eval_bin(q, n, r, ret);
    }
    return pq__fail(q, PROMQL_ERR_INTERNAL, "unhandled expression");
}

/* ---- Go's sort.Sort(sort.Reverse(vectorBy[Reverse]ValueHeap)) ------------------------ */

/* Less of the reversed sorter: byValue.Less(j, i) (desc) or
 * byReverseValue.Less(j, i). */
static int rev_less(const double *vals, size_t a, size_t b, int desc) {
    double va = vals[a], vb = vals[b];
    /* heap.Less(b, a) */
    if (isnan(vb)) return 1;
    return desc ? vb < va : vb > va;
}

/* Go's pdqsort (sort.Sort since Go 1.19) is insertion sort below 13
 * elements; larger inputs get a stable merge sort with the same order
 * relation, which agrees with Go except among ties and NaNs. */
void pq__go_sort_rev(size_t *idx, size_t n, const double *vals, int desc) {
    size_t *tmp = n > 12 ? malloc(n * sizeof *tmp) : NULL;
    if (!tmp) {
        /* insertion sort (also the fallback when there is no memory) */
        for (size_t i = 1; i < n; i++)
            for (size_t j = i; j > 0 && rev_less(vals, idx[j], idx[j - 1], desc); j--) {
                size_t t = idx[j];
                idx[j] = idx[j - 1];
                idx[j - 1] = t;
            }
        return;
    }
    for (size_t w = 1; w < n; w *= 2) {
        for (size_t lo = 0; lo < n; lo += 2 * w) {
            size_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            size_t a = lo, b = mid, o = lo;
            while (a < mid && b < hi) tmp[o++] = rev_less(vals, idx[b], idx[a], desc) ? idx[b++] : idx[a++];
            while (a < mid) tmp[o++] = idx[a++];
            while (b < hi) tmp[o++] = idx[b++];
        }
        memcpy(idx, tmp, n * sizeof *idx);
    }
    free(tmp);
}
