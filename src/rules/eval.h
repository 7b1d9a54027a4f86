/* eval.h -- rule groups at run time: evaluated as 2.42's rules.Group and
 * rules.AlertingRule / RecordingRule evaluate them (rules/group.go,
 * alerting.go, recording.go), for the server's rule manager, `kelvin test
 * rules` and `kelvin rules backtest`.
 *
 * A rules_gstate is one group of a loaded rule file plus everything that
 * changes while it runs: each rule's health, last error, last evaluation
 * and its duration; each alerting rule's active alerts (pending, firing,
 * or resolved and kept for 15 minutes to be sent as resolved); the series
 * each rule wrote last round (a series that a rule stops producing gets a
 * stale marker in the next round, as 2.42's seriesInPreviousEval).
 *
 * One round (rules_gstate_eval at ts) runs the rules in file order, each
 * as an instant query at ts through env->engine, so a recording rule sees
 * what the rules above it wrote in the same round (the output is
 * committed after each rule, as 2.42 commits one appender per rule):
 *  - recording rule: the result's samples renamed to the record name with
 *    the rule's labels set; a scalar becomes one sample without labels;
 *    two samples with one label set fail the rule ("vector contains
 *    metrics with the same labelset after applying rule labels");
 *  - alerting rule: each result sample (labels minus __name__, plus the
 *    rule's labels after template expansion, plus alertname) is an alert;
 *    annotations are expanded; state moves inactive -> pending -> firing
 *    after `for` (at once when for is 0); an alert whose sample is gone is
 *    resolved (kept firing for keep_firing_for first, 2.42.0's
 *    keep_firing_for); resolved alerts are dropped 15 minutes later. Each
 *    round writes ALERTS{alertname, alertstate, labels...} = 1 for pending
 *    and firing alerts and ALERTS_FOR_STATE{alertname, labels...} =
 *    active_at in seconds, so `for` state survives a restart
 *    (rules_gstate_restore);
 *  - the group's limit: more series than limit fails the rule with 2.42's
 *    error ("exceeded limit of N with M series"/"... alerts") and writes
 *    nothing for it;
 *  - a failed rule counts a failure, keeps health "err" and its error text
 *    until it next succeeds; the other rules run on.
 * After each alerting rule, the alerts that 2.42's needsSending picks
 * (firing, not sent for resend_delay, or resolved after the last send)
 * are passed to out->notify, with ValidUntil = ts + 4 * max(resend_delay,
 * interval) as their end, or their resolution time when resolved.
 *
 * THREADS. One round at a time per group (the caller's). gs->mu is held by
 * eval, copy_state and restore while they change the state; readers (the
 * API) hold it while they read the fields below.
 *
 * Ownership: rules_gstate_new deep-copies the group; the gstate owns
 * everything in it. Alerts' label sets are references owned by the alert.
 */
#ifndef KELVIN_RULES_EVAL_H
#define KELVIN_RULES_EVAL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "labels/labels.h"
#include "promql/promql.h"
#include "rules/rules.h"

typedef enum rules_health { RULES_HEALTH_UNKNOWN = 0, RULES_HEALTH_OK, RULES_HEALTH_ERR } rules_health;
const char *rules_health_str(rules_health h); /* "unknown", "ok", "err" */

typedef enum rules_astate { RULES_INACTIVE = 0, RULES_PENDING, RULES_FIRING } rules_astate;
const char *rules_astate_str(rules_astate s); /* "inactive", "pending", "firing" */

/* One alert of an alerting rule. Times in ms; 0 = not set. */
typedef struct rules_alert {
    labels_set *labels;    /* alertname, the sample's labels, the rule's labels */
    rules_kv *annotations; /* expanded, sorted by name (2.42 holds them
                              as labels.FromMap sorts them) */
    size_t nannotations;
    rules_astate state; /* RULES_INACTIVE: resolved, kept for resending */
    double value;
    int64_t active_at_ms, fired_at_ms, resolved_at_ms, last_sent_ms, valid_until_ms, keep_firing_since_ms;
} rules_alert;

typedef struct rules_rstate {
    const rules_rule *rule; /* in gs->group */
    rules_health health;
    char *last_error; /* NULL when none */
    int64_t last_eval_ms;
    int64_t eval_ns; /* how long its last evaluation took */
    uint64_t evals, failures;
    /* alerting rules: the active alerts (pending, firing, resolved within
     * the retention), sorted by labels. */
    rules_alert *alerts;
    size_t nalerts;
    void *priv; /* the evaluator's: series of the previous round, ... */
} rules_rstate;

typedef struct rules_gstate {
    pthread_mutex_t mu;
    rules_group *group; /* a deep copy */
    char *file;         /* the rule file's path, as the config names it */
    int64_t interval_ms;
    rules_rstate *rules; /* one per group->rules[i] */
    size_t nrules;
    int64_t last_eval_ms;             /* the last round's ts (0: none yet) */
    int64_t eval_ns;                  /* the last round's duration */
    uint64_t evals, failures, missed; /* rounds, rules failed, rounds skipped (the caller counts these) */
    /* Alerting rules write ALERTS / ALERTS_FOR_STATE only when this is set
     * (2.42's AlertingRule.restored): rules_gstate_restore sets it; a
     * caller sets it to 1 before the first round for a group that needs
     * no restore -- one (re)loaded after the manager's first restore, as
     * 2.42 creates those rules restored, and `test rules`. */
    int restored;
} rules_gstate;

/* One sample of an instant vector, for rules_env.query. */
typedef struct rules_sample {
    const labels_set *ls;
    double v;
} rules_sample;

/* What a round reads and where its results go. */
typedef struct rules_env {
    promql_engine *engine;             /* rule queries and the templates' query() */
    promql_storage storage;            /* ALERTS_FOR_STATE for restore */
    const labels_set *external_labels; /* $externalLabels; may be NULL */
    const char *external_url;          /* $externalURL, the generator URL's base; may be NULL ("") */
    int64_t resend_delay_ms;           /* --rules.alert.resend-delay, 1m */
    int64_t outage_tolerance_ms;       /* --rules.alert.for-outage-tolerance, 1h */
    int64_t for_grace_period_ms;       /* --rules.alert.for-grace-period, 10m */
    /* Answers a rule's own query in place of the engine (may be NULL; the
     * backtest serves precomputed range results through it): 0 and the
     * instant vector at ts in *ret (n samples, the hook's own memory, read
     * before its next call; a scalar is one sample without labels), 1 to
     * let the engine answer, < 0 an error. Templates' query() always goes
     * to the engine. */
    int (*query)(void *ctx, const pq_expr *x, int64_t ts, const rules_sample **ret, size_t *ret_n);
    void *query_ctx;
} rules_env;

void rules_env_default(rules_env *env); /* zero + the three durations' defaults */

/* An alert as handed to the notifier (2.42's notifier.Alert). */
typedef struct rules_notice {
    const labels_set *labels; /* valid during the call */
    const rules_kv *annotations;
    size_t nannotations;
    int64_t starts_at_ms, ends_at_ms; /* ends_at: resolution or ValidUntil */
    const char *generator_url;        /* external_url + "/graph?g0.expr=...&g0.tab=1" */
} rules_notice;

typedef struct rules_out {
    /* Every sample a round writes, in order: recording results, ALERTS,
     * ALERTS_FOR_STATE, stale markers (base's stale NaN) for series that a
     * rule no longer produces. < 0 fails the rule. */
    int (*append)(void *ctx, const labels_set *ls, int64_t t_ms, double v);
    /* After each rule's samples (may be NULL). */
    int (*commit)(void *ctx);
    /* Alerts to send (may be NULL). */
    void (*notify)(void *ctx, const rules_notice *alerts, size_t n);
    void *ctx;
    /* The text of an error append or commit returned, as 2.42 words it
     * ("out of order sample", "duplicate sample for timestamp"), kept as
     * the rule's last error. May be NULL (base_strerror(rc)). A failed
     * append marks the rule unhealthy without counting a failure, a
     * failed commit counts one, and a stale marker's failure is ignored,
     * as 2.42's Group.Eval does. */
    const char *(*errstr)(void *ctx, int rc);
} rules_out;

/* A group at run time. default_interval_ms: the config's
 * evaluation_interval, used when the group has none. 0 or BASE_E_NOMEM. */
int rules_gstate_new(const rules_group *g, const char *file, int64_t default_interval_ms, rules_gstate **ret);
void rules_gstate_free(rules_gstate *gs);

/* One round at ts (ms). Returns 0 (rule failures are recorded in the
 * rules' state and counted in gs->failures, not returned) or BASE_E_NOMEM. */
int rules_gstate_eval(rules_gstate *gs, const rules_env *env, int64_t ts_ms, const rules_out *out);

/* 2.42's Group.CopyState on reload: each rule of `to` takes over the
 * state of the rule of `from` with the same name and labels (the first
 * with the first, the second with the second, ...): its active alerts
 * (alerting rules) and the series it wrote last round; the group's last
 * evaluation, its duration and counters move too. As in 2.42 a rule's
 * health, last error and evaluation time do not (they read "unknown"
 * until its next round), and the series of `from`'s rules that found no
 * match get stale markers at `to`'s next round. `from` is left without
 * that state (free it afterwards). */
void rules_gstate_copy_state(rules_gstate *to, rules_gstate *from);

/* 2.42's RestoreForState, at the group's first round after a start: for
 * each alerting rule with `for`, the pending and firing alerts that the
 * first round (which must have run) found get their active_at back from
 * ALERTS_FOR_STATE within outage_tolerance before ts, shifted by the
 * downtime as 2.42 shifts it (and at least for_grace_period from ts).
 * 0 or < 0 on a storage error (the state stays as it is). */
int rules_gstate_restore(rules_gstate *gs, const rules_env *env, int64_t ts_ms);

/* Stale markers at ts for every series the group wrote last round (a group
 * removed by a reload, as 2.42's markStale). */
int rules_gstate_mark_stale(rules_gstate *gs, int64_t ts_ms, const rules_out *out);

/* The group's evaluation times as 2.42's Group.EvalTimestamp aligns them:
 * offset = hash(name, file) % interval, the last time <= now that is
 * offset past a multiple of the interval. */
int64_t rules_gstate_eval_ts(const rules_gstate *gs, int64_t now_ms);

#endif
