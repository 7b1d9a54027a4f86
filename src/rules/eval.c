/* eval.c -- rule groups at run time (eval.h): 2.42's rules.Group
 * (manager.go: Eval, CopyState, EvalTimestamp, the staleness of series a
 * rule stops producing) and RecordingRule.Eval (recording.go). Alerting
 * rules are in eval_alert.c.
 *
 * A round (rules_gstate_eval) runs each rule in order:
 *   query (rules__query, unlocked) -> the rule's Eval (recording here,
 *   alerting in eval_alert.c; state changes under gs->mu) -> on success,
 *   alerts to notify -> the samples appended, then a stale marker for each
 *   series the rule wrote last round and not this one -> commit; the
 *   series written become the rule's "previous round" only when the commit
 *   succeeds. A failed query or Eval leaves the previous round's series as
 *   they were and writes nothing, as 2.42 returns before appending. After
 *   the rules, series of rules a reload removed (CopyState) get their
 *   stale markers (cleanupStaleSeries).
 *
 * Invariants: rs->alerts is sorted by labels; every labels_set held here
 * holds one reference; priv sets hold only series that were appended
 * successfully in the last committed round.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "base/err.h"
#include "base/num.h"
#include "base/time.h"
#include "rules/eval.h"
#include "rules/eval_int.h"

const char *rules_health_str(rules_health h) {
    switch (h) {
    case RULES_HEALTH_OK: return "ok";
    case RULES_HEALTH_ERR: return "err";
    default: return "unknown";
    }
}

const char *rules_astate_str(rules_astate s) {
    switch (s) {
    case RULES_PENDING: return "pending";
    case RULES_FIRING: return "firing";
    default: return "inactive";
    }
}

void rules_env_default(rules_env *env) {
    memset(env, 0, sizeof *env);
    env->resend_delay_ms = 60 * 1000;
    env->outage_tolerance_ms = 60 * 60 * 1000;
    env->for_grace_period_ms = 10 * 60 * 1000;
}

/* ---- label set sets ------------------------------------------------------------------ */

static int sset_grow(rules__sset *s) {
    size_t nc = s->cap ? s->cap * 2 : 16;
    labels_set **ns = calloc(nc, sizeof *ns);
    uint64_t *nh = calloc(nc, sizeof *nh);
    if (!ns || !nh) {
        free(ns);
        free(nh);
        return BASE_E_NOMEM;
    }
    for (size_t i = 0; i < s->cap; i++) {
        if (!s->slot[i]) continue;
        size_t j = s->hash[i] & (nc - 1);
        while (ns[j]) j = (j + 1) & (nc - 1);
        ns[j] = s->slot[i];
        nh[j] = s->hash[i];
    }
    free(s->slot);
    free(s->hash);
    s->slot = ns;
    s->hash = nh;
    s->cap = nc;
    return 0;
}

int rules__sset_add(rules__sset *s, const labels_set *ls) {
    if ((s->n + 1) * 4 > s->cap * 3) {
        int rc = sset_grow(s);
        if (rc) return rc;
    }
    uint64_t h = labels_hash(ls);
    size_t j = h & (s->cap - 1);
    while (s->slot[j]) {
        if (s->hash[j] == h && labels_equal(s->slot[j], ls)) return 1;
        j = (j + 1) & (s->cap - 1);
    }
    s->slot[j] = labels_ref(ls);
    s->hash[j] = h;
    s->n++;
    return 0;
}

int rules__sset_has(const rules__sset *s, const labels_set *ls) {
    if (!s->n) return 0;
    uint64_t h = labels_hash(ls);
    size_t j = h & (s->cap - 1);
    while (s->slot[j]) {
        if (s->hash[j] == h && labels_equal(s->slot[j], ls)) return 1;
        j = (j + 1) & (s->cap - 1);
    }
    return 0;
}

void rules__sset_clear(rules__sset *s) {
    for (size_t i = 0; i < s->cap; i++) {
        labels_unref(s->slot[i]);
        s->slot[i] = NULL;
    }
    s->n = 0;
}

void rules__sset_free(rules__sset *s) {
    rules__sset_clear(s);
    free(s->slot);
    free(s->hash);
    memset(s, 0, sizeof *s);
}

/* ---- sample vectors ---------------------------------------------------------------- */

int rules__vec_push(rules__vec *v, labels_set *ls, double val) {
    if (v->n == v->cap) {
        size_t nc = v->cap ? v->cap * 2 : 16;
        labels_set **nl = realloc(v->ls, nc * sizeof *nl);
        if (!nl) {
            labels_unref(ls);
            return BASE_E_NOMEM;
        }
        v->ls = nl;
        double *nv = realloc(v->v, nc * sizeof *nv);
        if (!nv) {
            labels_unref(ls);
            return BASE_E_NOMEM;
        }
        v->v = nv;
        v->cap = nc;
    }
    v->ls[v->n] = ls;
    v->v[v->n] = val;
    v->n++;
    return 0;
}

void rules__vec_free(rules__vec *v) {
    for (size_t i = 0; i < v->n; i++) labels_unref(v->ls[i]);
    free(v->ls);
    free(v->v);
    memset(v, 0, sizeof *v);
}

/* The instant query x at ts, through the environment's hook (when it
 * answers) or the engine, as a vector (a scalar becomes one sample
 * without labels). */
static int query_via(promql_engine *e, const rules_env *env, const pq_expr *x, int64_t ts, rules__vec *ret,
                     base_buf *err) {
    if (env && env->query) {
        const rules_sample *sm = NULL;
        size_t n = 0;
        int rc = env->query(env->query_ctx, x, ts, &sm, &n);
        if (rc == 0) {
            for (size_t i = 0; rc == 0 && i < n; i++)
                rc = rules__vec_push(ret, labels_ref(sm[i].ls), sm[i].v);
            if (rc != 0) base_buf_puts(err, base_strerror(rc));
            return rc;
        }
        if (rc < 0) {
            base_buf_puts(err, base_strerror(rc));
            return rc == BASE_E_NOMEM ? rc : BASE_E_INVAL;
        }
    }
    promql_result r;
    memset(&r, 0, sizeof r);
    int rc = promql_exec_instant(e, x, ts, NULL, &r);
    if (rc < 0) {
        base_buf_puts(err, r.errmsg[0] ? r.errmsg : base_strerror(rc));
        promql_result_free(&r);
        return rc == BASE_E_NOMEM ? rc : BASE_E_INVAL;
    }
    rc = 0;
    if (r.type == PROMQL_VECTOR) {
        for (size_t i = 0; rc == 0 && i < r.nseries; i++)
            rc = rules__vec_push(ret, labels_ref(r.series[i].ls), r.series[i].n ? r.series[i].pts[0].v : NAN);
    } else if (r.type == PROMQL_SCALAR) {
        rc = rules__vec_push(ret, labels_empty(), r.scalar);
    } else {
        base_buf_puts(err, "rule result is not a vector or scalar");
        rc = BASE_E_INVAL;
    }
    if (rc == BASE_E_NOMEM) base_buf_puts(err, base_strerror(rc));
    promql_result_free(&r);
    return rc;
}

int rules__query(promql_engine *e, const pq_expr *x, int64_t ts, rules__vec *ret, base_buf *err) {
    return query_via(e, NULL, x, ts, ret, err);
}

/* ---- copies of the group --------------------------------------------------------------- */

static int dup_kvs(const rules_kv *src, size_t n, rules_kv **ret) {
    *ret = NULL;
    if (!n) return 0;
    rules_kv *d = calloc(n, sizeof *d);
    if (!d) return BASE_E_NOMEM;
    *ret = d;
    for (size_t i = 0; i < n; i++) {
        d[i].name = strdup(src[i].name ? src[i].name : "");
        d[i].value = strdup(src[i].value ? src[i].value : "");
        if (!d[i].name || !d[i].value) return BASE_E_NOMEM;
    }
    return 0;
}

static void free_kvs(rules_kv *kv, size_t n) {
    for (size_t i = 0; kv && i < n; i++) {
        free(kv[i].name);
        free(kv[i].value);
    }
    free(kv);
}

static void group_free(rules_group *g) {
    if (!g) return;
    for (size_t i = 0; g->rules && i < g->nrules; i++) {
        rules_rule *r = &g->rules[i];
        free(r->name);
        free(r->expr);
        promql_expr_free(r->parsed);
        free_kvs(r->labels, r->nlabels);
        free_kvs(r->annotations, r->nannotations);
    }
    free(g->rules);
    free(g->name);
    free(g);
}

static int group_copy(const rules_group *src, rules_group **ret) {
    rules_group *g = calloc(1, sizeof *g);
    if (!g) return BASE_E_NOMEM;
    g->interval_ms = src->interval_ms;
    g->limit = src->limit;
    g->line = src->line;
    int rc = (g->name = strdup(src->name ? src->name : "")) ? 0 : BASE_E_NOMEM;
    if (rc == 0 && src->nrules && !(g->rules = calloc(src->nrules, sizeof *g->rules))) rc = BASE_E_NOMEM;
    if (rc == 0) g->nrules = src->nrules;
    for (size_t i = 0; rc == 0 && i < src->nrules; i++) {
        const rules_rule *s = &src->rules[i];
        rules_rule *d = &g->rules[i];
        d->kind = s->kind;
        d->for_ms = s->for_ms;
        d->keep_firing_for_ms = s->keep_firing_for_ms;
        d->line = s->line;
        d->name = strdup(s->name ? s->name : "");
        d->expr = strdup(s->expr ? s->expr : "");
        if (!d->name || !d->expr) {
            rc = BASE_E_NOMEM;
            break;
        }
        /* the tree has no copy operation: the text parsed again gives the
         * same tree (it parsed when the file was loaded) */
        char perr[512];
        rc = promql_parse(d->expr, strlen(d->expr), &d->parsed, perr, sizeof perr);
        if (rc) break;
        d->nlabels = s->nlabels;
        d->nannotations = s->nannotations;
        if ((rc = dup_kvs(s->labels, s->nlabels, &d->labels))) break;
        rc = dup_kvs(s->annotations, s->nannotations, &d->annotations);
    }
    if (rc) {
        group_free(g);
        return rc == BASE_E_NOMEM ? rc : BASE_E_INVAL;
    }
    *ret = g;
    return 0;
}

/* ---- gstate -------------------------------------------------------------------------- */

static void rpriv_free(rules__rpriv *p) {
    if (!p) return;
    rules__sset_free(&p->prev);
    free(p->expr_str);
    rules__alert_release(p);
    free(p);
}

static void rstate_clear_alerts(rules_rstate *rs) {
    for (size_t i = 0; i < rs->nalerts; i++) rules__alert_free(&rs->alerts[i]);
    free(rs->alerts);
    rs->alerts = NULL;
    rs->nalerts = 0;
}

void rules_gstate_free(rules_gstate *gs) {
    if (!gs) return;
    rules__gs *g = (rules__gs *)gs;
    for (size_t i = 0; gs->rules && i < gs->nrules; i++) {
        rules_rstate *rs = &gs->rules[i];
        free(rs->last_error);
        rstate_clear_alerts(rs);
        rpriv_free(rs->priv);
    }
    free(gs->rules);
    group_free(gs->group);
    free(gs->file);
    rules__sset_free(&g->stale);
    pthread_mutex_destroy(&gs->mu);
    free(g);
}

int rules_gstate_new(const rules_group *grp, const char *file, int64_t default_interval_ms,
                     rules_gstate **ret) {
    rules__gs *g = calloc(1, sizeof *g);
    if (!g) return BASE_E_NOMEM;
    rules_gstate *gs = &g->pub;
    pthread_mutex_init(&gs->mu, NULL);
    int rc = group_copy(grp, &gs->group);
    if (rc == 0 && !(gs->file = strdup(file ? file : ""))) rc = BASE_E_NOMEM;
    if (rc == 0) {
        gs->interval_ms = gs->group->interval_ms > 0 ? gs->group->interval_ms : default_interval_ms;
        gs->nrules = gs->group->nrules;
        if (gs->nrules && !(gs->rules = calloc(gs->nrules, sizeof *gs->rules))) rc = BASE_E_NOMEM;
    }
    for (size_t i = 0; rc == 0 && i < gs->nrules; i++) {
        rules_rstate *rs = &gs->rules[i];
        const rules_rule *r = &gs->group->rules[i];
        rs->rule = r;
        rules__rpriv *p = calloc(1, sizeof *p);
        if (!p) {
            rc = BASE_E_NOMEM;
            break;
        }
        rs->priv = p;
        base_buf b;
        base_buf_init(&b, 0);
        promql_print(promql_expr_root(r->parsed), &b);
        if (base_buf_err(&b)) {
            rc = BASE_E_NOMEM;
        } else {
            p->expr_str = b.data ? base_buf_steal(&b, NULL) : strdup("");
            if (!p->expr_str) rc = BASE_E_NOMEM;
        }
        base_buf_free(&b);
        if (rc == 0 && r->kind == RULES_ALERT) rc = rules__alert_prepare(r, p);
    }
    if (rc) {
        rules_gstate_free(gs);
        return rc;
    }
    *ret = gs;
    return 0;
}

/* ---- rounds -------------------------------------------------------------------------------- */

static void set_error(rules_rstate *rs, const char *msg, size_t n) {
    char *e = malloc(n + 1);
    if (e) {
        memcpy(e, msg, n);
        e[n] = 0;
    }
    free(rs->last_error);
    rs->last_error = e; /* NULL only when out of memory: the health still says err */
    rs->health = RULES_HEALTH_ERR;
}

static const char *out_errstr(const rules_out *out, int rc) {
    const char *s = out->errstr ? out->errstr(out->ctx, rc) : NULL;
    return s ? s : base_strerror(rc);
}

/* RecordingRule.Eval: the result renamed and relabelled; a duplicate
 * label set or too many series fail the rule. */
static int record_eval(const rules_gstate *gs, const rules_rule *r, rules__vec *res, base_buf *err) {
    labels_builder b;
    labels_builder_init(&b);
    int rc = 0;
    char e[256];
    for (size_t i = 0; rc == 0 && i < res->n; i++) {
        if ((rc = labels_builder_from(&b, res->ls[i]))) break;
        if ((rc = labels_builder_set(&b, base_str_c(LABELS_METRIC_NAME), base_str_c(r->name)))) break;
        for (size_t j = 0; rc == 0 && j < r->nlabels; j++)
            rc = labels_builder_set(&b, base_str_c(r->labels[j].name), base_str_c(r->labels[j].value));
        labels_set *ls = NULL;
        if (rc == 0) rc = labels_builder_finish(&b, 0, &ls, e, sizeof e);
        if (rc) {
            base_buf_puts(err, rc == BASE_E_NOMEM ? base_strerror(rc) : e);
            break;
        }
        labels_unref(res->ls[i]);
        res->ls[i] = ls;
    }
    labels_builder_free(&b);
    if (rc) return rc;
    /* vector.ContainsSameLabelset() */
    if (res->n > 1) {
        rules__sset seen = {0};
        for (size_t i = 0; rc == 0 && i < res->n; i++) {
            int k = rules__sset_add(&seen, res->ls[i]);
            if (k < 0) rc = k;
            if (k == 1) {
                base_buf_puts(err,
                              "vector contains metrics with the same labelset after applying rule labels");
                rc = BASE_E_INVAL;
            }
        }
        rules__sset_free(&seen);
        if (rc == BASE_E_NOMEM) base_buf_puts(err, base_strerror(rc));
        if (rc) return rc;
    }
    if (gs->group->limit > 0 && (int64_t)res->n > gs->group->limit) {
        base_buf_printf(err, "exceeded limit of %lld with %zu series", (long long)gs->group->limit, res->n);
        return BASE_E_INVAL;
    }
    return 0;
}

/* Appends a rule's samples and its stale markers, commits; the series
 * written become the previous round's. */
static int write_rule(rules_gstate *gs, rules_rstate *rs, int64_t ts, const rules__vec *vec,
                      const rules_out *out) {
    rules__rpriv *p = rs->priv;
    rules__sset now = {0};
    int nomem = 0;
    for (size_t i = 0; i < vec->n; i++) {
        int rc = out->append ? out->append(out->ctx, vec->ls[i], ts, vec->v[i]) : 0;
        if (rc < 0) {
            const char *m = out_errstr(out, rc);
            pthread_mutex_lock(&gs->mu);
            set_error(rs, m, strlen(m));
            pthread_mutex_unlock(&gs->mu);
            continue;
        }
        if (rules__sset_add(&now, vec->ls[i]) < 0) nomem = 1;
    }
    double stale = base_stale_nan();
    for (size_t i = 0; i < p->prev.cap; i++) {
        labels_set *ls = p->prev.slot[i];
        if (!ls || rules__sset_has(&now, ls)) continue;
        if (out->append) (void)out->append(out->ctx, ls, ts, stale); /* 2.42 only logs these */
    }
    int rc = out->commit ? out->commit(out->ctx) : 0;
    pthread_mutex_lock(&gs->mu);
    if (rc < 0) {
        const char *m = out_errstr(out, rc);
        set_error(rs, m, strlen(m));
        rs->failures++;
        gs->failures++;
        rules__sset_free(&now);
    } else if (nomem) {
        /* the set is incomplete: keep the old one, which errs on the side
         * of more stale markers next round, never of fewer */
        rules__sset_free(&now);
    } else {
        rules__sset_free(&p->prev);
        p->prev = now;
    }
    pthread_mutex_unlock(&gs->mu);
    return nomem ? BASE_E_NOMEM : 0;
}

static int cleanup_stale(rules__gs *g, int64_t ts, const rules_out *out) {
    if (!g->stale.n) return 0;
    double stale = base_stale_nan();
    for (size_t i = 0; i < g->stale.cap; i++)
        if (g->stale.slot[i] && out->append) (void)out->append(out->ctx, g->stale.slot[i], ts, stale);
    int rc = out->commit ? out->commit(out->ctx) : 0;
    if (rc == 0) {
        pthread_mutex_lock(&g->pub.mu);
        rules__sset_clear(&g->stale);
        pthread_mutex_unlock(&g->pub.mu);
    }
    return 0;
}

int rules_gstate_eval(rules_gstate *gs, const rules_env *env, int64_t ts, const rules_out *out) {
    int64_t t0 = base_mono_ns();
    int nomem = 0;
    base_buf err;
    base_buf_init(&err, 0);
    for (size_t i = 0; i < gs->nrules; i++) {
        rules_rstate *rs = &gs->rules[i];
        const rules_rule *r = rs->rule;
        int64_t r0 = base_mono_ns();
        rules__vec res = {0}, vec = {0};
        base_buf_reset(&err);
        int rc = query_via(env->engine, env, r->parsed, ts, &res, &err);
        if (rc == 0 && r->kind == RULES_RECORD) rc = record_eval(gs, r, &res, &err);
        if (rc == 0 && r->kind == RULES_ALERT) rc = rules__alert_eval(gs, rs, env, ts, &res, &vec, &err);
        pthread_mutex_lock(&gs->mu);
        rs->evals++;
        rs->last_eval_ms = ts;
        if (rc < 0) {
            if (rc == BASE_E_NOMEM) nomem = 1;
            if (base_buf_err(&err) || !err.len) {
                base_buf_reset(&err);
                base_buf_puts(&err, base_strerror(rc));
            }
            set_error(rs, err.data ? err.data : "", err.len);
            rs->failures++;
            gs->failures++;
            rs->eval_ns = base_mono_ns() - r0;
            pthread_mutex_unlock(&gs->mu);
            rules__vec_free(&res);
            rules__vec_free(&vec);
            continue;
        }
        rs->health = RULES_HEALTH_OK;
        free(rs->last_error);
        rs->last_error = NULL;
        pthread_mutex_unlock(&gs->mu);
        if (r->kind == RULES_ALERT) rules__alert_send(gs, rs, env, ts, out);
        if (write_rule(gs, rs, ts, r->kind == RULES_RECORD ? &res : &vec, out) < 0) nomem = 1;
        pthread_mutex_lock(&gs->mu);
        rs->eval_ns = base_mono_ns() - r0;
        pthread_mutex_unlock(&gs->mu);
        rules__vec_free(&res);
        rules__vec_free(&vec);
    }
    base_buf_free(&err);
    cleanup_stale((rules__gs *)gs, ts, out);
    pthread_mutex_lock(&gs->mu);
    gs->evals++;
    gs->last_eval_ms = ts;
    gs->eval_ns = base_mono_ns() - t0;
    pthread_mutex_unlock(&gs->mu);
    return nomem ? BASE_E_NOMEM : 0;
}

int rules_gstate_mark_stale(rules_gstate *gs, int64_t ts, const rules_out *out) {
    rules__gs *g = (rules__gs *)gs;
    double stale = base_stale_nan();
    pthread_mutex_lock(&gs->mu);
    for (size_t i = 0; i < gs->nrules; i++) {
        rules__rpriv *p = gs->rules[i].priv;
        for (size_t j = 0; j < p->prev.cap; j++)
            if (p->prev.slot[j] && out->append) (void)out->append(out->ctx, p->prev.slot[j], ts, stale);
    }
    for (size_t i = 0; i < g->stale.cap; i++)
        if (g->stale.slot[i] && out->append) (void)out->append(out->ctx, g->stale.slot[i], ts, stale);
    int rc = out->commit ? out->commit(out->ctx) : 0;
    if (rc == 0) {
        for (size_t i = 0; i < gs->nrules; i++) rules__sset_clear(&((rules__rpriv *)gs->rules[i].priv)->prev);
        rules__sset_clear(&g->stale);
    }
    pthread_mutex_unlock(&gs->mu);
    return rc < 0 ? rc : 0;
}

/* ---- CopyState ---------------------------------------------------------------------------- */

/* nameAndLabels(): the rule's name and its labels (as labels.FromMap
 * sorts them, empty values included). */
static int kv_cmp(const void *a, const void *b) {
    const rules_kv *x = a, *y = b;
    return strcmp(x->name, y->name);
}

static int same_name_labels(const rules_rule *a, const rules_rule *b) {
    if (strcmp(a->name, b->name) != 0 || a->nlabels != b->nlabels) return 0;
    size_t n = a->nlabels;
    if (!n) return 1;
    rules_kv *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y);
    int eq = 0;
    if (x && y) {
        memcpy(x, a->labels, n * sizeof *x);
        memcpy(y, b->labels, n * sizeof *y);
        qsort(x, n, sizeof *x, kv_cmp);
        qsort(y, n, sizeof *y, kv_cmp);
        eq = 1;
        for (size_t i = 0; eq && i < n; i++)
            eq = strcmp(x[i].name, y[i].name) == 0 && strcmp(x[i].value, y[i].value) == 0;
    }
    free(x);
    free(y);
    return eq;
}

/* Moves every series of src into dst (src is left empty). */
static void sset_move_into(rules__sset *dst, rules__sset *src) {
    for (size_t i = 0; i < src->cap; i++)
        if (src->slot[i]) (void)rules__sset_add(dst, src->slot[i]);
    rules__sset_clear(src);
}

void rules_gstate_copy_state(rules_gstate *to, rules_gstate *from) {
    if (to == from) return;
    rules__gs *gt = (rules__gs *)to, *gf = (rules__gs *)from;
    pthread_mutex_lock(&from->mu);
    pthread_mutex_lock(&to->mu);
    to->eval_ns = from->eval_ns;
    to->last_eval_ms = from->last_eval_ms;
    to->evals = from->evals;
    to->failures = from->failures;
    to->missed = from->missed;
    char *used = calloc(from->nrules ? from->nrules : 1, 1);
    for (size_t i = 0; used && i < to->nrules; i++) {
        rules_rstate *rt = &to->rules[i];
        size_t fi = 0;
        for (; fi < from->nrules; fi++)
            if (!used[fi] && same_name_labels(rt->rule, from->rules[fi].rule)) break;
        if (fi == from->nrules) continue;
        used[fi] = 1;
        rules_rstate *rf = &from->rules[fi];
        rules__rpriv *pt = rt->priv, *pf = rf->priv;
        rules__sset_free(&pt->prev);
        pt->prev = pf->prev;
        memset(&pf->prev, 0, sizeof pf->prev);
        if (rt->rule->kind == RULES_ALERT && rf->rule->kind == RULES_ALERT) {
            rstate_clear_alerts(rt);
            rt->alerts = rf->alerts;
            rt->nalerts = rf->nalerts;
            rf->alerts = NULL;
            rf->nalerts = 0;
        }
    }
    /* deleted and unmatched duplicate rules */
    sset_move_into(&gt->stale, &gf->stale);
    for (size_t fi = 0; used && fi < from->nrules; fi++) {
        if (used[fi]) continue;
        sset_move_into(&gt->stale, &((rules__rpriv *)from->rules[fi].priv)->prev);
    }
    free(used);
    pthread_mutex_unlock(&to->mu);
    pthread_mutex_unlock(&from->mu);
}

/* ---- EvalTimestamp ------------------------------------------------------------------------- */

/* labels.FromStrings("name", name, "file", file).Hash(): xxhash64 of
 * each pair sorted by name, "name\xffvalue\xff". */
static uint64_t group_hash(const char *name, const char *file) {
    size_t nn = strlen(name), fn = strlen(file);
    size_t len = 5 + fn + 1 + 5 + nn + 1;
    char stackbuf[1024];
    char *b = len <= sizeof stackbuf ? stackbuf : malloc(len);
    if (!b) return 0;
    size_t k = 0;
    memcpy(b + k, "file\xff", 5);
    k += 5;
    memcpy(b + k, file, fn);
    k += fn;
    b[k++] = (char)0xff;
    memcpy(b + k, "name\xff", 5);
    k += 5;
    memcpy(b + k, name, nn);
    k += nn;
    b[k++] = (char)0xff;
    uint64_t h = XXH64(b, k, 0);
    if (b != stackbuf) free(b);
    return h;
}

int64_t rules_gstate_eval_ts(const rules_gstate *gs, int64_t now_ms) {
    if (gs->interval_ms <= 0 || gs->interval_ms > INT64_MAX / 1000000 || now_ms > INT64_MAX / 1000000 ||
        now_ms < 0)
        return now_ms;
    /* Go computes in nanoseconds */
    int64_t iv = gs->interval_ms * 1000000;
    int64_t offset = (int64_t)(group_hash(gs->group->name, gs->file) % (uint64_t)iv);
    int64_t now = now_ms * 1000000;
    int64_t adj = now - offset;
    int64_t base = adj - adj % iv;
    int64_t t = base + offset;
    /* timestamp.FromTime: whole milliseconds (floor) */
    int64_t ms = t / 1000000;
    if (t % 1000000 < 0) ms--;
    return ms;
}
