/* core.h -- the agent's engine: collectors on their own threads, the latest
 * snapshot of each, and scrape bodies composed from them.
 *
 * Collectors are grouped; each group is one thread that runs its
 * collectors in order every interval. After a successful collect() the
 * thread renders the set at once in both formats (text 0.0.4 and
 * OpenMetrics) into a refcounted fragment and publishes it, so nothing a
 * collector owns is touched after collect() returns, and a scrape never
 * waits for a collector: it concatenates the latest fragments (cached per
 * generation, gzip included), which is all /metrics costs.
 *
 * Staleness: a fragment older than the group's stale limit (a hung NVML
 * call, say) is left out of scrapes rather than served as if current; the
 * self metrics say which collector is stale.
 *
 * Formats on demand: a format is rendered only while someone scrapes it
 * (agent_core_set_format_idle), so an agent scraped by Prometheus
 * (OpenMetrics) does not also render text every cycle.
 *
 * Thread-safety: everything here may be called from any thread once
 * agent_core_start() has returned, except agent_core_free().
 */
#ifndef KELVIN_AGENT_CORE_H
#define KELVIN_AGENT_CORE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/collector.h"
#include "expo/expo.h"

typedef struct agent_core agent_core;

/* A refcounted scrape body. */
typedef struct agent_body {
    atomic_int refs;
    size_t len;
    char data[];
} agent_body;

typedef struct agent_collector_stats {
    const char *name;
    int64_t last_duration_ns; /* wall time of the last collect() + render */
    int64_t last_cpu_ns;      /* thread CPU time of the same */
    int64_t cpu_ns_total;
    uint64_t cycles;
    uint64_t errors;
    int64_t last_success_unix_ms; /* 0 = never */
    int stale;                    /* last fragment older than the stale limit */
    size_t last_samples;
    size_t last_bytes;
} agent_collector_stats;

int agent_core_new(agent_core **ret);
/* Adds a collector to the named group (created on first use with this
 * interval). Call before agent_core_start(). col is copied. */
int agent_core_add(agent_core *c, const char *group, int64_t interval_ms, const agent_collector *col);
/* How long a format (text, OpenMetrics) keeps being rendered every cycle
 * after it was last scraped (default 10 minutes; call before start). A
 * format not rendered lately costs its first scraper one collection cycle. */
void agent_core_set_format_idle(agent_core *c, int64_t ms);
/* Starts the group threads, each running its first cycle at once, and
 * waits up to wait_first_ms for every group's first snapshot, so the first
 * scrape normally has data; a group stuck in a driver call does not hold
 * the start up (its data appears when the call returns). */
int agent_core_start(agent_core *c, int64_t wait_first_ms);
/* Asks the group to run a cycle now (not waiting for its interval) and
 * waits up to wait_ms for it to finish, so what a push just stored is in
 * the next scrape. 0, BASE_E_TIMEOUT or BASE_E_NOTFOUND (no such group). */
int agent_core_refresh(agent_core *c, const char *group, int64_t wait_ms);
void agent_core_stop(agent_core *c);
void agent_core_free(agent_core *c);

/* The body for a scrape; *ret has one reference for the caller, released
 * with agent_body_unref (usable as an http free callback). */
int agent_core_body(agent_core *c, expo_format fmt, int gzip, agent_body **ret);
void agent_body_unref(void *body);

/* Copies up to max collector stats; returns how many collectors exist. */
size_t agent_core_stats(agent_core *c, agent_collector_stats *out, size_t max);
/* Scrapes served since start, by format. */
uint64_t agent_core_scrapes(agent_core *c);

#endif
