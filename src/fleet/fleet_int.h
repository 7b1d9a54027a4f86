/* fleet_int.h -- the fleet simulator's internals, shared by fleet*.c (not a
 * public header).
 *
 * A simulated node is two halves that fill one expo_mset each update:
 *   fleet_gpu.c   the node's sim_node (src/sim) turned into the GPU
 *                 collector's series (dcgm-exporter's and kelvin_gpu_*
 *                 names, labels as the agent renders them, simulated="true");
 *   fleet_host.c  node_exporter's series synthesised with plausible, moving
 *                 values (one machine's /proc cannot stand for hundreds of
 *                 nodes): counters grow at per-node rates, gauges wander.
 * Names, types and HELP text come from the agent's metric catalog
 * (agent_catalog_find), so a name the catalog lacks is a start-up error,
 * never a made-up series.
 *
 * Ownership: each *_new() allocates what *_free() releases; the label
 * strings a fill() puts into a set live in the node (or the shared host
 * template) or in the set's arena, so a set stays valid until the next
 * fill() on the same node. Not thread-safe: the caller holds the node's
 * lock.
 */
#ifndef KELVIN_FLEET_FLEET_INT_H
#define KELVIN_FLEET_FLEET_INT_H

#include <stddef.h>
#include <stdint.h>

#include "expo/expo.h"
#include "sim/sim.h"

/* ---- GPUs (fleet_gpu.c) --------------------------------------------------- */
typedef struct fleet_gpus fleet_gpus;

/* Checks that every GPU metric name used exists in the catalog; 0 or
 * BASE_E_NOTFOUND naming it in err. */
int fleet__gpu_catalog_check(char *err, size_t errlen);
/* A node's GPUs from cfg (copied), labelled with hostname (copied).
 * 0, BASE_E_INVAL (bad config: message in err) or BASE_E_NOMEM. */
int fleet__gpus_new(const sim_config *cfg, const char *hostname, fleet_gpus **ret, char *err, size_t errlen);
/* Steps the model to t (model seconds, never backwards) and fills ms. */
int fleet__gpus_fill(fleet_gpus *g, double t, expo_mset *ms);
void fleet__gpus_free(fleet_gpus *g);

/* ---- host (fleet_host.c) -------------------------------------------------- */
typedef struct fleet_host_tmpl fleet_host_tmpl; /* the series every node has, shared */
typedef struct fleet_host fleet_host;           /* one node's values */

/* Builds the shared series list; 0, BASE_E_NOTFOUND (a name missing from
 * the catalog, in err) or BASE_E_NOMEM. */
int fleet__host_tmpl_new(fleet_host_tmpl **ret, char *err, size_t errlen);
void fleet__host_tmpl_free(fleet_host_tmpl *t);
size_t fleet__host_tmpl_series(const fleet_host_tmpl *t);
/* One node's values; tmpl must outlive it. start_unix_s is the wall time
 * model time 0 corresponds to (for node_boot_time_seconds and
 * node_time_seconds). 0 or BASE_E_NOMEM. */
int fleet__host_new(const fleet_host_tmpl *tmpl, uint64_t seed, const char *hostname, double start_unix_s,
                    fleet_host **ret);
/* Advances the values to model time t (never backwards) and fills ms. */
int fleet__host_fill(fleet_host *h, double t, expo_mset *ms);
void fleet__host_free(fleet_host *h);

/* ---- shared --------------------------------------------------------------- */
/* A counter-based noise value in [-1, 1] for (seed, a, b): no stream. */
double fleet__noise(uint64_t seed, uint64_t a, uint64_t b);
/* splitmix64 finaliser. */
uint64_t fleet__mix(uint64_t x);

#endif
