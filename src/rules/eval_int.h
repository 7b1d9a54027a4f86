/* eval_int.h -- what the rule evaluator's files share (eval.c: groups,
 * rounds, recording rules, staleness, CopyState; eval_alert.c: alerting
 * rules, notifications, RestoreForState).
 *
 * A rules_gstate is the first member of a rules__gs, which holds the
 * group-wide private state; each rules_rstate's priv is a rules__rpriv.
 * Ownership: everything here belongs to the gstate and is freed with it.
 */
#ifndef KELVIN_RULES_EVAL_INT_H
#define KELVIN_RULES_EVAL_INT_H

#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "rules/eval.h"
#include "rules/template.h"

/* 2.42's resolvedRetention. */
#define RULES__RESOLVED_RETENTION_MS (15 * 60 * 1000)

/* A set of label sets (one reference each), by labels_hash. */
typedef struct rules__sset {
    labels_set **slot;
    uint64_t *hash;
    size_t cap, n;
} rules__sset;

int rules__sset_add(rules__sset *s, const labels_set *ls); /* 0, 1 if present, BASE_E_NOMEM */
int rules__sset_has(const rules__sset *s, const labels_set *ls);
void rules__sset_clear(rules__sset *s); /* drops the references, keeps the table */
void rules__sset_free(rules__sset *s);

/* A label or annotation template of an alerting rule. */
typedef struct rules__tkv {
    char *name;
    char *raw;     /* the text as written */
    rules_tmpl *t; /* NULL when it does not parse (perr says why) */
    char *perr;
} rules__tkv;

typedef struct rules__rpriv {
    rules__sset prev; /* the series the rule wrote last round */
    char *expr_str;   /* the expression as 2.42's String() prints it */
    /* alerting rules */
    rules__tkv *tlabels, *tanns; /* sorted by name, as labels.FromMap sorts */
    size_t ntlabels, ntanns;
    labels_set *rule_labels; /* the raw labels: the base of ALERTS samples */
} rules__rpriv;

typedef struct rules__gs {
    rules_gstate pub;
    rules__sset stale; /* series of rules a reload removed: stale at the next round */
} rules__gs;

/* What one rule produced in a round: samples to append. */
typedef struct rules__vec {
    labels_set **ls;
    double *v;
    size_t n, cap;
} rules__vec;

int rules__vec_push(rules__vec *v, labels_set *ls, double val); /* takes ls's reference */
void rules__vec_free(rules__vec *v);

/* The rule's query at ts as 2.42's EngineQueryFunc: a vector, or a
 * scalar as one sample without labels. 0 and *ret, or < 0 with the
 * error's text in err (Prometheus's words). */
int rules__query(promql_engine *e, const pq_expr *x, int64_t ts, rules__vec *ret, base_buf *err);

/* Prepares an alerting rule's templates and raw labels. */
int rules__alert_prepare(const rules_rule *r, rules__rpriv *p);
void rules__alert_release(rules__rpriv *p);
void rules__alert_free(rules_alert *a);

/* AlertingRule.Eval at ts over the query's result res: templates are
 * expanded without the lock, then rs->alerts is updated under gs->mu and
 * out_vec gets the ALERTS and ALERTS_FOR_STATE samples (when restored).
 * 0, or < 0 with the rule's error in err. */
int rules__alert_eval(rules_gstate *gs, rules_rstate *rs, const rules_env *env, int64_t ts,
                      const rules__vec *res, rules__vec *out_vec, base_buf *err);
/* sendAlerts: the alerts that needsSending picks (marked sent under
 * gs->mu), handed to out->notify without the lock. */
void rules__alert_send(rules_gstate *gs, rules_rstate *rs, const rules_env *env, int64_t ts,
                       const rules_out *out);

/* url.QueryEscape(s) appended to out. */
void rules__query_escape(base_buf *out, const char *s, size_t n);

#endif
