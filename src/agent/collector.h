/* collector.h -- what a collector is, as the agent core sees it.
 *
 * A collector turns one source (NVML, /proc and /sys, StatsD, pushes) into
 * an expo_mset. The core calls collect() on the collector's own thread at
 * its interval with an empty set (already reset); collect() fills it and
 * returns 0, or a negative BASE_E_* code when the whole cycle failed (the
 * previous snapshot is then kept and the error counted). A partial failure
 * (one unreadable file, one unsupported NVML field) is not an error: the
 * metric is left out, never reported as 0.
 *
 * collect() must not block for long on anything but its own source; it
 * runs off the HTTP threads, so a hung driver call delays only that
 * collector's next snapshot, never a scrape.
 */
#ifndef KELVIN_AGENT_COLLECTOR_H
#define KELVIN_AGENT_COLLECTOR_H

#include "expo/expo.h"

typedef int (*agent_collect_fn)(void *ctx, expo_mset *ms);

typedef struct agent_collector {
    const char *name; /* "gpu", "host", "statsd", "push", "agent" */
    agent_collect_fn collect;
    void *ctx;
} agent_collector;

#endif
