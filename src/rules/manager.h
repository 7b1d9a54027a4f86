/* manager.h -- the server's rule manager: the config's rule files, each
 * group evaluated on its own thread at its interval, as 2.42's
 * rules.Manager runs them (rules/manager.go).
 *
 * LOADING AND RELOADING. rules_manager_load expands the config's
 * rule_files globs (as 2.42's reloadConfig: filepath.Glob; a pattern that
 * matches nothing loads nothing), reads and checks every file
 * (rules_file_load) and builds the groups; any error fails the whole load
 * and changes nothing, so a bad reload keeps the running rules. Then
 * rules_manager_update swaps the set in, as Manager.Update does: a group
 * whose key (file;name) and content (interval, limit, every rule) are
 * unchanged keeps running untouched; a changed group stops after its
 * current round and its state (alerts, health) moves to the new one
 * (rules_gstate_copy_state); a removed group stops and, two of its
 * intervals later, writes stale markers for the series it wrote last (in
 * case a renamed rule takes them over meanwhile: 2.42's markStale). Only
 * groups loaded by the first update restore their `for` state from
 * ALERTS_FOR_STATE (after their second round, as 2.42).
 *
 * TIMING. A group's rounds are at the times rules_gstate_eval_ts aligns
 * (each group its own offset within the interval, so groups spread out);
 * the first is one interval after the aligned time before start. A round
 * that overruns skips the rounds it covered and counts them as missed.
 *
 * OUTPUT. Each round appends to the head through its own appender,
 * committed after each rule; alerts go to the notify callback.
 *
 * THREADS. One thread per group. Update and free are serialised by the
 * caller (the server's reload lock); rules_manager_visit may run from any
 * thread at any time.
 */
#ifndef KELVIN_RULES_MANAGER_H
#define KELVIN_RULES_MANAGER_H

#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "labels/labels.h"
#include "promql/promql.h"
#include "rules/eval.h"

typedef struct tsdb_head tsdb_head;

typedef struct rules_manager_opts {
    promql_engine *engine;
    promql_storage storage;
    tsdb_head *head;                                                 /* where results go */
    void (*notify)(void *ctx, const rules_notice *alerts, size_t n); /* may be NULL */
    void *notify_ctx;
    int64_t resend_delay_ms, outage_tolerance_ms, for_grace_period_ms; /* 0: 2.42's defaults */
} rules_manager_opts;

typedef struct rules_manager rules_manager;

/* Rule files read and checked, not yet running. */
typedef struct rules_loaded rules_loaded;

/* Expands patterns (relative ones against cwd as given) and loads the
 * files. 0, or < 0 with every problem appended to errs, one per line
 * (the files' own messages, rules.h). */
int rules_manager_load(const char *const *patterns, size_t n, int64_t default_interval_ms, rules_loaded **ret,
                       base_buf *errs);
void rules_loaded_free(rules_loaded *l);
size_t rules_loaded_groups(const rules_loaded *l);
size_t rules_loaded_rules(const rules_loaded *l);

int rules_manager_new(const rules_manager_opts *o, rules_manager **ret);
/* Runs l (taken over, freed by the manager) with these external labels
 * (may be NULL) and external URL. Waits until changed groups stopped. */
void rules_manager_update(rules_manager *m, rules_loaded *l, const labels_set *external_labels,
                          const char *external_url);
/* Stops every group (the current rounds finish) and frees. */
void rules_manager_free(rules_manager *m);

/* What the manager counts of a group, beyond its rules_gstate. */
typedef struct rules_group_stats {
    const char *key;       /* file;name */
    uint64_t iterations;   /* scheduled rounds, run or missed */
    uint64_t missed;       /* rounds skipped after an overrun */
    uint64_t last_samples; /* samples the last round produced */
    double round_sum_s;    /* all rounds' durations, seconds */
    uint64_t round_count;
    double rule_sum_s; /* all rule evaluations' durations */
    uint64_t rule_count;
} rules_group_stats;

/* Calls fn for each running group, sorted by file then name (2.42's
 * RuleGroups order). fn may lock gs->mu to read its state. */
void rules_manager_visit(rules_manager *m,
                         void (*fn)(void *ctx, rules_gstate *gs, const rules_group_stats *st), void *ctx);

#endif
