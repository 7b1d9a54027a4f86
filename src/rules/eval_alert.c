/* eval_alert.c -- alerting rules as 2.42's rules.AlertingRule
 * (alerting.go: Eval, needsSending, sendAlerts) and Group.RestoreForState
 * (manager.go), with the rule manager's SendAlerts (the notifier.Alert
 * each alert becomes).
 *
 * Eval, for the query's result: each sample becomes a candidate alert
 * whose labels are the sample's without __name__, plus the rule's labels
 * expanded as templates (an empty result removes the label), plus
 * alertname; its annotations are expanded too. A template that fails
 * becomes "<error expanding template: ...>" as 2.42's expand() makes it.
 * Two candidates with one label set fail the rule. Then, under gs->mu,
 * the candidates are merged into the active alerts (an alert still
 * pending or firing keeps its state and takes the new value and
 * annotations; a resolved one is replaced by a new pending alert), and
 * each alert moves on: pending -> firing once `for` has passed; an alert
 * whose sample is gone is dropped if pending, else resolved (after
 * keep_firing_for of still firing), and dropped 15 minutes after its
 * resolution. Pending and firing alerts (those kept firing too) count
 * against the group's limit and, when the rule is restored, write
 * ALERTS{..., alertstate} 1 and ALERTS_FOR_STATE{...} active_at (s),
 * both built on the rule's raw labels overwritten by the alert's, as
 * 2.42's sample() / forStateSample() build them.
 *
 * Invariants: rs->alerts stays sorted by labels (2.42 keeps a map; the
 * order only shows in which order samples and notifications go out).
 * Times are ms; 0 means unset (2.42's zero time.Time) -- the first round
 * of a process is never at the Unix epoch's first millisecond, except in
 * `test rules`, where nothing can be resolved or sent at 0.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/num.h"
#include "rules/eval.h"
#include "rules/eval_int.h"
#include "rules/template.h"

#define ALERT_NAME_LABEL  "alertname"
#define ALERT_STATE_LABEL "alertstate"

/* ---- templates ------------------------------------------------------------------------ */

static int tkv_cmp(const void *a, const void *b) {
    const rules__tkv *x = a, *y = b;
    return strcmp(x->name, y->name);
}

static void tkvs_free(rules__tkv *t, size_t n) {
    for (size_t i = 0; t && i < n; i++) {
        free(t[i].name);
        free(t[i].raw);
        free(t[i].perr);
        rules_tmpl_free(t[i].t);
    }
    free(t);
}

static int tkvs_make(const char *alert, const rules_kv *kv, size_t n, rules__tkv **ret) {
    *ret = NULL;
    if (!n) return 0;
    rules__tkv *t = calloc(n, sizeof *t);
    if (!t) return BASE_E_NOMEM;
    base_buf name, text;
    base_buf_init(&name, 0);
    base_buf_init(&text, 0);
    base_buf_puts(&name, "__alert_");
    base_buf_puts(&name, alert);
    int rc = base_buf_err(&name);
    for (size_t i = 0; rc == 0 && i < n; i++) {
        t[i].name = strdup(kv[i].name);
        t[i].raw = strdup(kv[i].value);
        if (!t[i].name || !t[i].raw) {
            rc = BASE_E_NOMEM;
            break;
        }
        base_buf_reset(&text);
        base_buf_puts(&text, RULES_TMPL_PREFIX);
        base_buf_puts(&text, kv[i].value);
        if ((rc = base_buf_err(&text))) break;
        char err[2048];
        int prc = rules_tmpl_parse(name.data, text.data, text.len, &t[i].t, err, sizeof err);
        if (prc == BASE_E_NOMEM) {
            rc = prc;
            break;
        }
        if (prc < 0) {
            /* rulefmt refuses these when the file is loaded; kept for
             * groups built by other means, worded as Expand() words it */
            base_buf e;
            base_buf_init(&e, 0);
            base_buf_printf(&e, "error parsing template %s: %s", name.data, err);
            t[i].perr = base_buf_err(&e) ? NULL : base_buf_steal(&e, NULL);
            base_buf_free(&e);
            if (!t[i].perr) rc = BASE_E_NOMEM;
        }
    }
    base_buf_free(&name);
    base_buf_free(&text);
    if (rc) {
        tkvs_free(t, n);
        return rc;
    }
    qsort(t, n, sizeof *t, tkv_cmp);
    *ret = t;
    return 0;
}

int rules__alert_prepare(const rules_rule *r, rules__rpriv *p) {
    int rc = tkvs_make(r->name, r->labels, r->nlabels, &p->tlabels);
    if (rc == 0) p->ntlabels = r->nlabels;
    if (rc == 0 && (rc = tkvs_make(r->name, r->annotations, r->nannotations, &p->tanns)) == 0)
        p->ntanns = r->nannotations;
    if (rc == 0) {
        labels_builder b;
        labels_builder_init(&b);
        for (size_t i = 0; rc == 0 && i < r->nlabels; i++)
            rc = labels_builder_add(&b, base_str_c(r->labels[i].name), base_str_c(r->labels[i].value));
        char err[256];
        if (rc == 0) rc = labels_builder_finish(&b, 0, &p->rule_labels, err, sizeof err);
        labels_builder_free(&b);
        if (rc && rc != BASE_E_NOMEM) rc = BASE_E_INVAL;
    }
    return rc;
}

void rules__alert_release(rules__rpriv *p) {
    tkvs_free(p->tlabels, p->ntlabels);
    tkvs_free(p->tanns, p->ntanns);
    labels_unref(p->rule_labels);
    p->tlabels = p->tanns = NULL;
    p->ntlabels = p->ntanns = 0;
    p->rule_labels = NULL;
}

static void kvs_free(rules_kv *kv, size_t n) {
    for (size_t i = 0; kv && i < n; i++) {
        free(kv[i].name);
        free(kv[i].value);
    }
    free(kv);
}

void rules__alert_free(rules_alert *a) {
    labels_unref(a->labels);
    kvs_free(a->annotations, a->nannotations);
    memset(a, 0, sizeof *a);
}

/* The templates' query(): the rule's QueryFunc. */
static int tmpl_query(void *ctx, const char *expr, int64_t t_ms, rules_tmpl_sample **ret, size_t *ret_n,
                      char *err, size_t errlen) {
    promql_engine *e = ctx;
    pq_expr *x = NULL;
    int rc = promql_parse(expr, strlen(expr), &x, err, errlen);
    if (rc) return rc;
    rules__vec v = {0};
    base_buf eb;
    base_buf_init(&eb, 0);
    rc = rules__query(e, x, t_ms, &v, &eb);
    promql_expr_free(x);
    if (rc) {
        snprintf(err, errlen, "%.*s", (int)eb.len, eb.data ? eb.data : "");
        base_buf_free(&eb);
        rules__vec_free(&v);
        return rc;
    }
    base_buf_free(&eb);
    rules_tmpl_sample *s = calloc(v.n ? v.n : 1, sizeof *s);
    if (!s) {
        rules__vec_free(&v);
        snprintf(err, errlen, "out of memory");
        return BASE_E_NOMEM;
    }
    for (size_t i = 0; i < v.n; i++) {
        s[i].ls = v.ls[i];
        s[i].v = v.v[i];
    }
    *ret = s;
    *ret_n = v.n;
    v.n = 0; /* the references moved */
    rules__vec_free(&v);
    return 0;
}

/* expand(): the template's output, or 2.42's error text in its place. */
static int expand(const rules__tkv *t, const rules_tmpl_data *d, const char *alert, base_buf *out) {
    base_buf_reset(out);
    if (!t->t) {
        base_buf_printf(out, "<error expanding template: %s>", t->perr ? t->perr : "");
        return base_buf_err(out);
    }
    char err[4096];
    int rc = rules_tmpl_exec(t->t, d, out, err, sizeof err);
    if (rc == BASE_E_NOMEM) return rc;
    if (rc < 0) {
        base_buf_reset(out);
        base_buf_printf(out, "<error expanding template: error executing template __alert_%s: %s>", alert,
                        err);
    }
    return base_buf_err(out);
}

/* ---- Eval ----------------------------------------------------------------------------------- */

typedef struct cand {
    labels_set *ls;
    rules_kv *anns;
    size_t nanns;
    double v;
} cand;

static int cand_cmp(const void *a, const void *b) {
    return labels_cmp(((const cand *)a)->ls, ((const cand *)b)->ls);
}

static void cands_free(cand *c, size_t n) {
    for (size_t i = 0; c && i < n; i++) {
        labels_unref(c[i].ls);
        kvs_free(c[i].anns, c[i].nanns);
    }
    free(c);
}

/* The candidates of one result, sorted by labels. */
static int make_cands(const rules_rule *r, const rules__rpriv *p, const rules_env *env, int64_t ts,
                      const rules__vec *res, cand **ret, base_buf *err) {
    cand *c = calloc(res->n ? res->n : 1, sizeof *c);
    base_buf *lb = calloc(p->ntlabels ? p->ntlabels : 1, sizeof *lb);
    base_buf ab;
    base_buf_init(&ab, 0);
    labels_builder b;
    labels_builder_init(&b);
    int rc = c && lb ? 0 : BASE_E_NOMEM;
    for (size_t j = 0; lb && j < p->ntlabels; j++) base_buf_init(&lb[j], 0);
    for (size_t i = 0; rc == 0 && i < res->n; i++) {
        rules_tmpl_data d = {
            .labels = res->ls[i],
            .external_labels = env->external_labels,
            .external_url = env->external_url,
            .value = res->v[i],
            .t_ms = ts,
            .query = env->engine ? tmpl_query : NULL,
            .query_ctx = env->engine,
        };
        if ((rc = labels_builder_from(&b, res->ls[i]))) break;
        labels_builder_del(&b, base_str_c(LABELS_METRIC_NAME));
        for (size_t j = 0; rc == 0 && j < p->ntlabels; j++) {
            if ((rc = expand(&p->tlabels[j], &d, r->name, &lb[j]))) break;
            rc = labels_builder_set(&b, base_str_c(p->tlabels[j].name),
                                    (base_str){lb[j].data ? lb[j].data : "", lb[j].len});
        }
        if (rc == 0) rc = labels_builder_set(&b, base_str_c(ALERT_NAME_LABEL), base_str_c(r->name));
        char e[256];
        if (rc == 0) rc = labels_builder_finish(&b, 0, &c[i].ls, e, sizeof e);
        if (rc && rc != BASE_E_NOMEM) {
            base_buf_puts(err, e);
            break;
        }
        if (rc) break;
        c[i].v = res->v[i];
        if (p->ntanns) {
            if (!(c[i].anns = calloc(p->ntanns, sizeof *c[i].anns))) rc = BASE_E_NOMEM;
            for (size_t j = 0; rc == 0 && j < p->ntanns; j++) {
                if ((rc = expand(&p->tanns[j], &d, r->name, &ab))) break;
                c[i].anns[j].name = strdup(p->tanns[j].name);
                c[i].anns[j].value = strndup(ab.data ? ab.data : "", ab.len);
                c[i].nanns = j + 1;
                if (!c[i].anns[j].name || !c[i].anns[j].value) rc = BASE_E_NOMEM;
            }
        }
    }
    labels_builder_free(&b);
    for (size_t j = 0; lb && j < p->ntlabels; j++) base_buf_free(&lb[j]);
    free(lb);
    base_buf_free(&ab);
    if (rc == 0 && res->n > 1) {
        qsort(c, res->n, sizeof *c, cand_cmp);
        for (size_t i = 1; i < res->n; i++)
            if (labels_equal(c[i - 1].ls, c[i].ls)) {
                base_buf_puts(err,
                              "vector contains metrics with the same labelset after applying alert labels");
                rc = BASE_E_INVAL;
                break;
            }
    }
    if (rc) {
        cands_free(c, res->n);
        if (rc == BASE_E_NOMEM && !err->len) base_buf_puts(err, base_strerror(rc));
        return rc;
    }
    *ret = c;
    return 0;
}

/* ALERTS{...} / ALERTS_FOR_STATE{...}: the rule's raw labels, the
 * alert's over them, the name, and (ALERTS) the state. */
static int alert_sample(const rules_rule *r, const rules__rpriv *p, const rules_alert *a, int for_state,
                        labels_set **ret) {
    labels_builder b;
    labels_builder_init(&b);
    int rc = labels_builder_from(&b, p->rule_labels);
    labels_iter it;
    base_str n, v;
    labels_iter_init(&it, a->labels);
    while (rc == 0 && labels_iter_next(&it, &n, &v)) rc = labels_builder_set(&b, n, v);
    if (rc == 0)
        rc = labels_builder_set(&b, base_str_c(LABELS_METRIC_NAME),
                                base_str_c(for_state ? "ALERTS_FOR_STATE" : "ALERTS"));
    if (rc == 0) rc = labels_builder_set(&b, base_str_c(ALERT_NAME_LABEL), base_str_c(r->name));
    if (rc == 0 && !for_state)
        rc = labels_builder_set(&b, base_str_c(ALERT_STATE_LABEL), base_str_c(rules_astate_str(a->state)));
    char e[256];
    if (rc == 0) rc = labels_builder_finish(&b, 0, ret, e, sizeof e);
    labels_builder_free(&b);
    return rc;
}

/* time.Unix() of a time in ms: whole seconds, rounded down. */
static int64_t unix_s(int64_t ms) {
    return ms >= 0 ? ms / 1000 : -((-ms + 999) / 1000);
}

int rules__alert_eval(rules_gstate *gs, rules_rstate *rs, const rules_env *env, int64_t ts,
                      const rules__vec *res, rules__vec *out_vec, base_buf *err) {
    const rules_rule *r = rs->rule;
    rules__rpriv *p = rs->priv;
    cand *c = NULL;
    int rc = make_cands(r, p, env, ts, res, &c, err);
    if (rc) return rc;
    size_t nc = res->n;

    pthread_mutex_lock(&gs->mu);
    /* merge the candidates (sorted) into the active alerts (sorted) */
    size_t cap = rs->nalerts + nc;
    rules_alert *m = calloc(cap ? cap : 1, sizeof *m);
    char *in = calloc(cap ? cap : 1, 1);
    if (!m || !in) {
        free(m);
        free(in);
        pthread_mutex_unlock(&gs->mu);
        cands_free(c, nc);
        base_buf_puts(err, base_strerror(BASE_E_NOMEM));
        return BASE_E_NOMEM;
    }
    size_t i = 0, j = 0, k = 0;
    while (i < nc || j < rs->nalerts) {
        int cmp = i == nc ? 1 : j == rs->nalerts ? -1 : labels_cmp(c[i].ls, rs->alerts[j].labels);
        if (cmp > 0) {
            m[k++] = rs->alerts[j++];
            continue;
        }
        if (cmp == 0 && rs->alerts[j].state != RULES_INACTIVE) {
            rules_alert *a = &rs->alerts[j++];
            a->value = c[i].v;
            kvs_free(a->annotations, a->nannotations);
            a->annotations = c[i].anns;
            a->nannotations = c[i].nanns;
            labels_unref(c[i].ls);
            c[i].ls = NULL;
            c[i].anns = NULL;
            i++;
            in[k] = 1;
            m[k++] = *a;
            continue;
        }
        if (cmp == 0) rules__alert_free(&rs->alerts[j++]); /* resolved: a new alert takes its place */
        rules_alert a = {0};
        a.labels = c[i].ls;
        a.annotations = c[i].anns;
        a.nannotations = c[i].nanns;
        a.state = RULES_PENDING;
        a.value = c[i].v;
        a.active_at_ms = ts;
        c[i].ls = NULL;
        c[i].anns = NULL;
        i++;
        in[k] = 1;
        m[k++] = a;
    }
    free(rs->alerts);
    rs->alerts = NULL;
    rs->nalerts = 0;
    cands_free(c, nc);

    /* move each alert on; write out the samples */
    size_t out = 0;
    int64_t active = 0;
    rc = 0;
    for (size_t x = 0; x < k; x++) {
        rules_alert *a = &m[x];
        if (!in[x]) {
            int keep = 0;
            if (a->state == RULES_FIRING && r->keep_firing_for_ms > 0) {
                if (a->keep_firing_since_ms == 0) a->keep_firing_since_ms = ts;
                if (ts - a->keep_firing_since_ms < r->keep_firing_for_ms) keep = 1;
            }
            int drop = a->state == RULES_PENDING ||
                       (a->resolved_at_ms != 0 && ts - a->resolved_at_ms > RULES__RESOLVED_RETENTION_MS);
            if (a->state != RULES_INACTIVE && !keep) {
                a->state = RULES_INACTIVE;
                a->resolved_at_ms = ts;
            }
            if (drop) {
                rules__alert_free(a);
                continue;
            }
            if (!keep) {
                m[out++] = *a;
                continue;
            }
        } else {
            a->keep_firing_since_ms = 0;
        }
        active++;
        if (a->state == RULES_PENDING && ts - a->active_at_ms >= r->for_ms) {
            a->state = RULES_FIRING;
            a->fired_at_ms = ts;
        }
        if (gs->restored && rc == 0) {
            labels_set *s1 = NULL, *s2 = NULL;
            rc = alert_sample(r, p, a, 0, &s1);
            if (rc == 0) rc = rules__vec_push(out_vec, s1, 1);
            if (rc == 0) rc = alert_sample(r, p, a, 1, &s2);
            if (rc == 0) rc = rules__vec_push(out_vec, s2, (double)unix_s(a->active_at_ms));
        }
        m[out++] = *a;
    }
    free(in);
    if (rc == 0 && gs->group->limit > 0 && active > gs->group->limit) {
        /* 2.42 forgets every alert of the rule */
        for (size_t x = 0; x < out; x++) rules__alert_free(&m[x]);
        out = 0;
        base_buf_printf(err, "exceeded limit of %lld with %lld alerts", (long long)gs->group->limit,
                        (long long)active);
        rc = BASE_E_INVAL;
    }
    if (out == 0) {
        free(m);
        m = NULL;
    }
    rs->alerts = m;
    rs->nalerts = out;
    pthread_mutex_unlock(&gs->mu);
    if (rc == BASE_E_NOMEM && !err->len) base_buf_puts(err, base_strerror(rc));
    return rc;
}

/* ---- sending -------------------------------------------------------------------------------- */

void rules__query_escape(base_buf *out, const char *s, size_t n) {
    static const char hex[] = "0123456789ABCDEF";
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '-' ||
            ch == '_' || ch == '.' || ch == '~') {
            base_buf_putc(out, (char)ch);
        } else if (ch == ' ') {
            base_buf_putc(out, '+');
        } else {
            char e[3] = {'%', hex[ch >> 4], hex[ch & 15]};
            base_buf_append(out, e, 3);
        }
    }
}

/* Alert.needsSending */
static int needs_sending(const rules_alert *a, int64_t ts, int64_t resend_delay) {
    if (a->state == RULES_PENDING) return 0;
    if (a->resolved_at_ms > a->last_sent_ms) return 1;
    if (a->last_sent_ms == 0) return 1; /* the zero time: long ago */
    return a->last_sent_ms + resend_delay < ts;
}

void rules__alert_send(rules_gstate *gs, rules_rstate *rs, const rules_env *env, int64_t ts,
                       const rules_out *out) {
    rules__rpriv *p = rs->priv;
    pthread_mutex_lock(&gs->mu);
    size_t n = 0;
    rules_notice *nv = NULL;
    if (rs->nalerts) nv = calloc(rs->nalerts, sizeof *nv);
    base_buf url;
    base_buf_init(&url, 0);
    base_buf_puts(&url, env->external_url ? env->external_url : "");
    base_buf_puts(&url, "/graph?g0.expr=");
    rules__query_escape(&url, p->expr_str, strlen(p->expr_str));
    base_buf_puts(&url, "&g0.tab=1");
    int64_t delta = env->resend_delay_ms > gs->interval_ms ? env->resend_delay_ms : gs->interval_ms;
    for (size_t i = 0; nv && i < rs->nalerts; i++) {
        rules_alert *a = &rs->alerts[i];
        if (!needs_sending(a, ts, env->resend_delay_ms)) continue;
        a->last_sent_ms = ts;
        a->valid_until_ms = ts + 4 * delta;
        nv[n++] = (rules_notice){
            .labels = a->labels,
            .annotations = a->annotations,
            .nannotations = a->nannotations,
            .starts_at_ms = a->fired_at_ms,
            .ends_at_ms = a->resolved_at_ms ? a->resolved_at_ms : a->valid_until_ms,
            .generator_url = url.data ? url.data : "",
        };
    }
    pthread_mutex_unlock(&gs->mu);
    /* the alerts change only in this thread's rounds: the notices may
     * point into them without the lock */
    if (n && out->notify && !base_buf_err(&url)) out->notify(out->ctx, nv, n);
    free(nv);
    base_buf_free(&url);
}

/* ---- RestoreForState ----------------------------------------------------------------------- */

/* The last sample of the ALERTS_FOR_STATE series of alert a within
 * [mint, maxt]: 1 and *ret_t and *ret_v, 0 when there is none, < 0 on a
 * storage error. */
static int for_state_last(const rules_env *env, const rules_rule *r, const rules__rpriv *p,
                          const rules_alert *a, int64_t mint, int64_t maxt, int64_t *ret_t, double *ret_v) {
    /* 2.42 matches every label of the sample, raw rule labels included:
     * one with an empty value (a template the alert's labels do not
     * override) can never be found, as its length check then fails */
    for (size_t i = 0; i < r->nlabels; i++)
        if (!r->labels[i].value[0] && !labels_has(a->labels, base_str_c(r->labels[i].name))) return 0;
    labels_set *ls = NULL;
    int rc = alert_sample(r, p, a, 1, &ls);
    if (rc) return rc;
    size_t nm = labels_len(ls);
    labels_matcher **ms = calloc(nm ? nm : 1, sizeof *ms);
    if (!ms) {
        labels_unref(ls);
        return BASE_E_NOMEM;
    }
    labels_iter it;
    base_str n, v;
    size_t k = 0;
    labels_iter_init(&it, ls);
    char e[256];
    while (rc == 0 && labels_iter_next(&it, &n, &v)) {
        rc = labels_matcher_new(LABELS_MATCH_EQ, n, v, &ms[k], e, sizeof e);
        if (rc == 0) k++;
    }
    int found = 0;
    void *set = NULL;
    if (rc == 0) rc = env->storage.ops->select(env->storage.ctx, ms, k, mint, maxt, &set);
    while (rc == 0) {
        int nx = env->storage.ops->next(set);
        if (nx < 0) rc = nx;
        if (nx <= 0) break;
        if (labels_len(env->storage.ops->labels(set)) != nm) continue;
        int64_t t[64];
        double vv[64];
        for (;;) {
            int got = env->storage.ops->samples(set, t, vv, 64);
            if (got < 0) rc = got;
            if (got <= 0) break;
            *ret_t = t[got - 1];
            *ret_v = vv[got - 1];
            found = 1;
        }
        break;
    }
    if (set) env->storage.ops->free(set);
    for (size_t i = 0; i < k; i++) labels_matcher_free(ms[i]);
    free(ms);
    labels_unref(ls);
    if (rc < 0) return rc;
    return found;
}

int rules_gstate_restore(rules_gstate *gs, const rules_env *env, int64_t ts) {
    int64_t mint = ts - env->outage_tolerance_ms;
    int first_err = 0;
    pthread_mutex_lock(&gs->mu);
    for (size_t i = 0; i < gs->nrules; i++) {
        rules_rstate *rs = &gs->rules[i];
        const rules_rule *r = rs->rule;
        if (r->kind != RULES_ALERT) continue;
        int64_t hold = r->for_ms;
        if (hold < env->for_grace_period_ms) continue; /* it would wait for `for` anyway */
        for (size_t j = 0; j < rs->nalerts; j++) {
            rules_alert *a = &rs->alerts[j];
            int64_t t = 0;
            double v = 0;
            int rc = env->storage.ops ? for_state_last(env, r, rs->priv, a, mint, ts, &t, &v) : 0;
            if (rc < 0) {
                if (!first_err) first_err = rc;
                continue;
            }
            if (rc == 0) continue;
            if (base_is_stale(v)) continue;                          /* was not active */
            if (!isfinite(v) || v > 9.2e15 || v < -9.2e15) continue; /* not a time 2.42 could have written */
            int64_t down_at = (t / 1000) * 1000;                     /* time.Unix(t / 1000, 0) */
            int64_t restored = (int64_t)v * 1000;                    /* time.Unix(int64(v), 0) */
            int64_t remaining = hold - (down_at - restored);
            if (remaining <= 0) {
                /* it was firing: the next round fires it again */
            } else if (remaining < env->for_grace_period_ms) {
                restored = ts + env->for_grace_period_ms - hold;
            } else {
                restored += ts - down_at; /* the downtime does not count */
            }
            a->active_at_ms = restored;
        }
    }
    gs->restored = 1;
    pthread_mutex_unlock(&gs->mu);
    return first_err;
}
