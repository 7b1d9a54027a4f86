/* engine.c -- the PromQL engine object: options, the concurrency gate,
 * deadlines and cancellation, running a query (instant or range) and
 * turning the evaluator's columnar value into a promql_result.
 *
 * LIFE OF A QUERY (2.42's Engine.exec / execEvalStmt):
 *   1. a range query of anything but a scalar or instant vector is refused
 *      (bad_data, NewRangeQuery's message);
 *   2. the deadline is set (now + the smaller of --query.timeout and the
 *      caller's timeout) and the query waits for one of
 *      max_concurrency slots: a query still waiting at the deadline fails
 *      with "query timed out in query queue" (canceled: "query was
 *      canceled in query queue");
 *   3. a query whose time is already up fails "... in query execution";
 *   4. the expression is evaluated over the steps (eval.c); deadline and
 *      cancel are polled inside: "... in expression evaluation";
 *   5. the value becomes the result: an instant vector keeps its order
 *      (2.42's), a range query's series are sorted by labels.
 * The slot is released and the counters updated on every path.
 *
 * THREADS. The engine's counters and gate are under one mutex; a query's
 * evaluation state (pq_q) belongs to the calling thread.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/err.h"
#include "base/time.h"
#include "promql/eval_int.h"

struct promql_engine {
    promql_opts o;
    promql_storage st;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    unsigned running, waiting;
    uint64_t queries, failed, timed_out;
};

void promql_opts_default(promql_opts *o) {
    memset(o, 0, sizeof *o);
    o->lookback_ms = 5 * 60 * 1000;
    o->max_samples = 50000000;
    o->timeout_ms = 2 * 60 * 1000;
    o->max_concurrency = 20;
    o->default_subq_step_ms = 60 * 1000;
    o->threads = 0;
}

int promql_engine_new(const promql_opts *o, promql_storage st, promql_engine **ret) {
    if (!o || !st.ops || !ret) return BASE_E_INVAL;
    promql_engine *e = calloc(1, sizeof *e);
    if (!e) return BASE_E_NOMEM;
    e->o = *o;
    if (e->o.lookback_ms <= 0) e->o.lookback_ms = 5 * 60 * 1000;
    if (e->o.default_subq_step_ms <= 0) e->o.default_subq_step_ms = 60 * 1000;
    e->st = st;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    if (pthread_mutex_init(&e->mu, NULL) != 0 || pthread_cond_init(&e->cv, &ca) != 0) {
        pthread_condattr_destroy(&ca);
        free(e);
        return BASE_E_NOMEM;
    }
    pthread_condattr_destroy(&ca);
    *ret = e;
    return 0;
}

void promql_engine_free(promql_engine *e) {
    if (!e) return;
    pthread_cond_destroy(&e->cv);
    pthread_mutex_destroy(&e->mu);
    free(e);
}

const char *promql_errtype_str(promql_errtype t) {
    switch (t) {
    case PROMQL_ERR_NONE: return "";
    case PROMQL_ERR_BAD_DATA: return "bad_data";
    case PROMQL_ERR_EXECUTION: return "execution";
    case PROMQL_ERR_TIMEOUT: return "timeout";
    case PROMQL_ERR_CANCELED: return "canceled";
    case PROMQL_ERR_INTERNAL: return "internal";
    }
    return "internal";
}

int promql_errtype_http(promql_errtype t) {
    switch (t) {
    case PROMQL_ERR_NONE: return 200;
    case PROMQL_ERR_BAD_DATA: return 400;
    case PROMQL_ERR_EXECUTION: return 422;
    case PROMQL_ERR_TIMEOUT: return 503;
    case PROMQL_ERR_CANCELED: return 503;
    case PROMQL_ERR_INTERNAL: return 500;
    }
    return 500;
}

const char *promql_vtype_str(promql_vtype t) {
    switch (t) {
    case PROMQL_SCALAR: return "scalar";
    case PROMQL_VECTOR: return "vector";
    case PROMQL_MATRIX: return "matrix";
    case PROMQL_STRING: return "string";
    case PROMQL_NONE: break;
    }
    return "";
}

void promql_engine_stats_get(promql_engine *e, promql_engine_stats *ret) {
    pthread_mutex_lock(&e->mu);
    ret->queries = e->queries;
    ret->queries_failed = e->failed;
    ret->queries_timed_out = e->timed_out;
    ret->running = e->running;
    ret->waiting = e->waiting;
    pthread_mutex_unlock(&e->mu);
    ret->block_cache_bytes = pq__mem_retained();
}

void promql_result_free(promql_result *r) {
    if (!r) return;
    for (size_t i = 0; i < r->nseries; i++) {
        labels_unref(r->series[i].ls);
        pq__mem_free(r->series[i].pts, r->series[i].n * sizeof(promql_point));
    }
    free(r->series);
    free(r->str);
    r->series = NULL;
    r->nseries = 0;
    r->str = NULL;
    r->str_len = 0;
}

/* ---- the gate ------------------------------------------------------------------ */

static int set_err(promql_result *ret, promql_errtype t, const char *msg) {
    ret->err = t;
    snprintf(ret->errmsg, sizeof ret->errmsg, "%s", msg);
    return t == PROMQL_ERR_TIMEOUT ? BASE_E_TIMEOUT : BASE_E_INVAL;
}

static int gate_enter(promql_engine *e, int64_t deadline_ns, const volatile int *cancel, promql_result *ret) {
    pthread_mutex_lock(&e->mu);
    e->waiting++;
    int rc = 0;
    while (e->o.max_concurrency && e->running >= e->o.max_concurrency) {
        if (cancel && *cancel) {
            rc = set_err(ret, PROMQL_ERR_CANCELED, "query was canceled in query queue");
            break;
        }
        int64_t now = base_mono_ns();
        if (deadline_ns && now >= deadline_ns) {
            rc = set_err(ret, PROMQL_ERR_TIMEOUT, "query timed out in query queue");
            break;
        }
        /* wake at the deadline, and every 20 ms to poll cancel */
        int64_t until = now + 20 * 1000 * 1000;
        if (deadline_ns && deadline_ns < until) until = deadline_ns;
        struct timespec ts = {(time_t)(until / 1000000000), (long)(until % 1000000000)};
        pthread_cond_timedwait(&e->cv, &e->mu, &ts);
    }
    e->waiting--;
    if (rc == 0) e->running++;
    pthread_mutex_unlock(&e->mu);
    return rc;
}

static void gate_leave(promql_engine *e, const promql_result *ret) {
    pthread_mutex_lock(&e->mu);
    e->running--;
    pthread_cond_signal(&e->cv);
    pthread_mutex_unlock(&e->mu);
    (void)ret;
}

/* ---- results -------------------------------------------------------------------- */

static int cmp_series(const void *a, const void *b) {
    const promql_series *x = a, *y = b;
    return labels_cmp(x->ls, y->ls);
}

static int to_result(pq_q *q, pq_val *v, const pq_rng *r, int range, promql_result *ret) {
    if (v->t == PQ_T_STRING) {
        ret->type = PROMQL_STRING;
        ret->t = r->start;
        ret->str = malloc(v->slen + 1);
        if (!ret->str) return pq__nomem(q);
        memcpy(ret->str, v->str, v->slen);
        ret->str[v->slen] = 0;
        ret->str_len = v->slen;
        return 0;
    }
    if (v->t == PQ_T_SCALAR && !range) {
        ret->type = PROMQL_SCALAR;
        ret->t = r->start;
        ret->scalar = v->n ? v->sc[0] : 0;
        return 0;
    }
    if (v->t == PQ_T_MATRIX) {
        ret->type = PROMQL_MATRIX;
        ret->series = calloc(v->nm + 1, sizeof *ret->series);
        if (!ret->series) return pq__nomem(q);
        for (size_t i = 0; i < v->nm; i++) {
            pq_mser *m = &v->m[i];
            promql_series *s = &ret->series[ret->nseries];
            s->pts = pq__mem_alloc(m->n * sizeof *s->pts);
            if (!s->pts) return pq__nomem(q);
            for (size_t j = 0; j < m->n; j++) {
                s->pts[j].t = m->t[j];
                s->pts[j].v = m->v[j];
            }
            s->n = m->n;
            s->ls = labels_ref(m->ls);
            ret->nseries++;
        }
        return 0;
    }
    if (v->t == PQ_T_SCALAR) {
        /* range query of a scalar: one series without labels */
        ret->type = PROMQL_MATRIX;
        ret->series = calloc(2, sizeof *ret->series);
        if (!ret->series) return pq__nomem(q);
        promql_series *s = &ret->series[0];
        s->pts = pq__mem_alloc(v->n * sizeof *s->pts);
        if (!s->pts) return pq__nomem(q);
        for (size_t k = 0; k < v->n; k++) {
            s->pts[k].t = pq__rng_t(r, k);
            s->pts[k].v = v->sc[k];
        }
        s->n = v->n;
        s->ls = labels_empty();
        ret->nseries = 1;
        return 0;
    }
    ret->type = range ? PROMQL_MATRIX : PROMQL_VECTOR;
    ret->series = calloc(v->ns + 1, sizeof *ret->series);
    if (!ret->series) return pq__nomem(q);
    for (size_t i = 0; i < v->ns; i++) {
        pq_ser *ps = &v->s[i];
        size_t c = pq__ser_count(ps, v->n);
        if (!c) continue;
        promql_series *s = &ret->series[ret->nseries];
        s->pts = pq__mem_alloc(c * sizeof *s->pts);
        if (!s->pts) return pq__nomem(q);
        size_t j = 0;
        for (size_t k = 0; k < v->n; k++) {
            if (!pq__bm_get(ps->bm, k)) continue;
            s->pts[j].t = range ? pq__rng_t(r, k) : r->start;
            s->pts[j].v = ps->v[k];
            j++;
        }
        s->n = j;
        s->ls = labels_ref(ps->ls);
        ret->nseries++;
    }
    if (range && ret->nseries > 1) qsort(ret->series, ret->nseries, sizeof *ret->series, cmp_series);
    return 0;
}

/* ---- running a query --------------------------------------------------------------- */

static int exec(promql_engine *e, const pq_expr *x, int64_t start, int64_t end, int64_t step, int range,
                const promql_ctl *ctl, promql_result *ret) {
    const volatile int *cancel = ctl ? ctl->cancel : NULL;
    memset(ret, 0, sizeof *ret);
    const pq_node *root = promql_expr_root(x);
    pthread_mutex_lock(&e->mu);
    e->queries++;
    pthread_mutex_unlock(&e->mu);
    int rc = 0;
    if (range && root->type != PQ_T_SCALAR && root->type != PQ_T_VECTOR) {
        char msg[160];
        snprintf(msg, sizeof msg,
                 "invalid expression type \"%s\" for range query, must be Scalar or instant Vector",
                 pq_type_doc(root->type));
        rc = set_err(ret, PROMQL_ERR_BAD_DATA, msg);
    } else if (range && (step <= 0 || end < start)) {
        rc = set_err(ret, PROMQL_ERR_BAD_DATA, "invalid range query: end before start or step <= 0");
    }
    /* the engine's --query.timeout, shortened by the caller's own */
    int64_t now = base_mono_ns();
    int64_t deadline = e->o.timeout_ms > 0 ? now + e->o.timeout_ms * 1000000 : 0;
    if (ctl && ctl->timeout_ns > 0 && (!deadline || now + ctl->timeout_ns < deadline))
        deadline = now + ctl->timeout_ns;
    int entered = 0;
    if (rc == 0) {
        rc = gate_enter(e, deadline, cancel, ret);
        entered = rc == 0;
    }
    if (rc == 0) {
        if (cancel && *cancel)
            rc = set_err(ret, PROMQL_ERR_CANCELED, "query was canceled in query execution");
        else if (deadline && base_mono_ns() > deadline)
            rc = set_err(ret, PROMQL_ERR_TIMEOUT, "query timed out in query execution");
    }
    if (rc == 0) {
        pq_q q;
        memset(&q, 0, sizeof q);
        q.o = &e->o;
        q.st = e->st;
        q.qstart = start;
        q.qend = end;
        q.deadline_ns = deadline;
        q.cancel = cancel;
        q.max_samples = e->o.max_samples;
        q.max_slots = e->o.max_samples > UINT64_MAX / 2 ? UINT64_MAX : e->o.max_samples * 2;
        labels_builder_init(&q.lb);
        pq_rng r;
        memset(&r, 0, sizeof r);
        r.start = start;
        r.end = range ? end : start;
        r.step = range ? step : 1;
        r.n = range ? (size_t)((end - start) / step) + 1 : 1;
        pq_val v;
        pq__val_init(&v, PQ_T_NONE, 0);
        rc = pq__ninfo_build(&q, root);
        if (rc >= 0) rc = pq__eval(&q, root, &r, pq__child_wrap(&q, NULL, root), &v);
        if (rc >= 0) rc = pq__check(&q);
        if (rc >= 0) rc = to_result(&q, &v, &r, range, ret);
        pq__val_free(&q, &v);
        pq__ninfo_free(&q);
        labels_builder_free(&q.lb);
        ret->peak_samples = q.peak;
        ret->total_samples = q.total;
        if (rc < 0) {
            promql_result_free(ret);
            ret->type = PROMQL_NONE;
            ret->err = q.failed ? q.etype : PROMQL_ERR_INTERNAL;
            snprintf(ret->errmsg, sizeof ret->errmsg, "%s", q.failed ? q.emsg : base_strerror(rc));
        }
    }
    if (entered) gate_leave(e, ret);
    pthread_mutex_lock(&e->mu);
    if (rc < 0) e->failed++;
    if (rc < 0 && ret->err == PROMQL_ERR_TIMEOUT) e->timed_out++;
    pthread_mutex_unlock(&e->mu);
    if (rc < 0 && ret->err == PROMQL_ERR_NONE) ret->err = PROMQL_ERR_INTERNAL;
    return rc < 0 ? rc : 0;
}

int promql_exec_instant(promql_engine *e, const pq_expr *x, int64_t t_ms, const promql_ctl *ctl,
                        promql_result *ret) {
    return exec(e, x, t_ms, t_ms, 0, 0, ctl, ret);
}

int promql_exec_range(promql_engine *e, const pq_expr *x, int64_t start_ms, int64_t end_ms, int64_t step_ms,
                      const promql_ctl *ctl, promql_result *ret) {
    return exec(e, x, start_ms, end_ms, step_ms, 1, ctl, ret);
}
