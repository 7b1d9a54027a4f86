/* sim_int.h -- shared inside the sim module only: counter-based noise, the
 * node's private layout, and the scenario hooks sim.c calls.
 *
 * Noise: sim__hash(seed, a, b, c) is a SplitMix64-style finaliser over its
 * inputs; sim__unit() maps it to [0,1) and sim__noise() to a symmetric
 * triangular value in (-1,1). Callers pass (gpu, channel, tick) so the same
 * inputs always give the same number, whatever the stepping.
 */
#ifndef KELVIN_SIM_SIM_INT_H
#define KELVIN_SIM_SIM_INT_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "base/err.h"
#include "sim/sim.h"

/* Noise channels: one per independent random quantity. */
enum {
    SIM__CH_UTIL = 1,
    SIM__CH_POWER,
    SIM__CH_MEM,
    SIM__CH_PCIE,
    SIM__CH_NVL,
    SIM__CH_PHASE,
    SIM__CH_INLET,
    SIM__CH_VARIATION,
    SIM__CH_ECC_HIST,
    SIM__CH_XID_BURST,
    SIM__CH_XID_CODE,
    SIM__CH_REPLAY,
    SIM__CH_NVL_ERR,
    SIM__CH_UUID,
    SIM__CH_SERIAL,
    SIM__CH_MIG_UUID,
    SIM__CH_INFER,
    SIM__CH_MIG_UTIL,
};

static inline uint64_t sim__mix(uint64_t z) {
    z += 0x9E3779B97F4A7C15ULL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

static inline uint64_t sim__hash(uint64_t seed, uint64_t a, uint64_t b, uint64_t c) {
    uint64_t h = sim__mix(seed);
    h = sim__mix(h ^ a);
    h = sim__mix(h ^ (b * 0xD6E8FEB86659FD93ULL));
    return sim__mix(h ^ (c * 0xA0761D6478BD642FULL));
}

static inline double sim__unit(uint64_t h) {
    return (double)(h >> 11) * (1.0 / 9007199254740992.0);
}

/* Triangular noise in (-1, 1), mean 0. */
static inline double sim__noise(uint64_t seed, uint64_t a, uint64_t b, uint64_t c) {
    uint64_t h = sim__hash(seed, a, b, c);
    return sim__unit(h) + sim__unit(sim__mix(h)) - 1.0;
}

/* Noise interpolated linearly between whole model seconds, so values move
 * smoothly and do not depend on where the steps fall. */
static inline double sim__smooth_noise(uint64_t seed, uint64_t a, uint64_t b, double t) {
    double f = floor(t);
    uint64_t k = (uint64_t)(int64_t)f;
    double w = t - f;
    return (1.0 - w) * sim__noise(seed, a, b, k) + w * sim__noise(seed, a, b, k + 1);
}

static inline double sim__clamp(double v, double lo, double hi) {
    return v < lo ? lo : v > hi ? hi : v;
}

/* Exact first-order lag: moves x towards target over dt with time constant tau. */
static inline double sim__lag(double x, double target, double dt, double tau) {
    return target + (x - target) * exp(-dt / tau);
}

struct sim_node {
    sim_config cfg;
    double t;       /* model time of the state */
    double phase_s; /* the training job's phase offset */
    sim_gpu_state gpu[SIM_MAX_GPUS];
    double r_scale[SIM_MAX_GPUS];    /* per-board thermal variation */
    double p_scale[SIM_MAX_GPUS];    /* per-board power variation */
    double inlet_base[SIM_MAX_GPUS]; /* slot position in the chassis */
    sim_xid_event ring[SIM_EVENT_RING];
    uint64_t next_seq;
};

/* The scenario's view of one sub-step (model interval (t0, t1]). */
typedef struct sim__env {
    double cooling;   /* cooling capacity multiplier */
    double inlet_add; /* degC added to the inlet */
} sim__env;

#pragma GCC visibility push(hidden)

/* Whether cfg's timeline parameters are usable (finite, in range). */
bool sim__timeline_ok(const sim_config *cfg);
/* Cooling and inlet modifiers for GPU g at model time t. */
sim__env sim__scenario_env(const sim_node *n, unsigned g, double t);
/* Applies the scenario's discrete effects (ECC, XIDs, leak, loss, bus
 * errors) over (t0, t1] to GPU g. */
void sim__scenario_apply(sim_node *n, unsigned g, double t0, double t1);
/* Bytes the leaking process holds above its base at model time t: 0 when
 * GPU g does not leak (yet), UINT64_MAX while the process is dead
 * (OOM-killed, restarting). *ret_started, when not NULL, gets the model
 * time the current incarnation started. */
uint64_t sim__leak_bytes(const sim_node *n, unsigned g, double t, double *ret_started);

/* Places a MIG layout's instances on the 7 compute slices (valid starts:
 * 7g/4g at 0, 3g at 0 or 4, 2g at 0, 2 or 4, 1g anywhere), backtracking.
 * Fills ret_start[i] and returns 0, or BASE_E_RANGE when they do not fit. */
int sim__mig_place(const sim_model *m, const sim_mig_layout *l, unsigned ret_start[SIM_MAX_MIG]);
/* The GPU instance id the driver gives a profile of `slices` placed at
 * `start` (7g:0; 4g:1; 3g:1,2; 2g:3,4,5; 1g:7..13). */
unsigned sim__mig_gi_id(unsigned slices, unsigned start);

/* Appends an XID event to the node's ring and the GPU's counters. */
void sim__emit_xid(sim_node *n, unsigned g, double t, unsigned xid, unsigned gi, unsigned ci);

#pragma GCC visibility pop

#endif
