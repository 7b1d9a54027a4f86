/* sim.h -- the simulated GPU node: models, scenarios, and a stepped state.
 *
 * What it is for: the test-only libnvidia-ml.so.1 (src/simnvml/), the fleet
 * simulator and the history generator all need the same believable GPUs. This
 * module is that model and nothing else: no NVML types, no clocks, no I/O.
 *
 * Design. A node (sim_node) is a config (GPU model, count, scenario, seed,
 * MIG layout) plus one sim_gpu_state per GPU. sim_node_step(node, t) moves
 * the node from its current model time to t (seconds since the node was
 * created, "model time"), in sub-steps of at most SIM_SUBSTEP_S (or the
 * config's max_substep_s):
 *
 *   workload (utilisation, activity) -> clocks under the power cap and the
 *   thermal controller -> power -> temperatures (first-order lags with exact
 *   exponential updates, so any step size is stable) -> counters (energy,
 *   violation ns, bytes, activity integrals) -> scenario effects (ECC, XID
 *   events, memory leak, loss).
 *
 * Noise is counter-based: a hash of (seed, GPU, channel, model second), never
 * a stream, so two nodes with the same config stepped through the same times
 * are bit-identical, and stepping with other step sizes gives the same
 * trajectory up to integration error. Scenario timelines (when the leak hits
 * the limit, when the uncorrectable error happens, XID burst schedules) are
 * closed-form functions of model time, so they do not drift with step size.
 *
 * Time scale: the model runs in model seconds. A caller that wants slow
 * failures to unfold in minutes maps wall time to model time with a factor
 * (the NVML shim: model time = monotonic time since nvmlInit x
 * KELVIN_SIM_TIME_SCALE). Default scenario timelines (model seconds; the
 * sim_config field that stretches each is in brackets):
 *   cooling-failure  onset; cooling degrades to 60% [cool_ramp_to] over
 *                    600 s [cool_ramp_s], a second fan fails at onset+900 s
 *                    [cool_fan_after_s] (to 30% [cool_fan_to]); inlet +12 C
 *                    over the ramp.
 *   memory-leak      onset; the leaking process reaches the memory limit
 *                    1800 s later [leak_rate_bps], is OOM-killed, restarts
 *                    60 s later, leaks again.
 *   xid-storm        a burst of 5-20 XIDs within 10 s every 240 s from onset
 *                    (mostly 13/31/43, some 74 with NVLink errors, rarely
 *                    48/63/64/79; events only: no ECC counts, no loss).
 *   ecc-degradation  correctable errors from onset, 0.05/s [ecc_rate0]
 *                    doubling every 300 s [ecc_doubling_s]; rows remapped
 *                    per 500 of them; one uncorrectable error (XID 48 then
 *                    63, pending retirement/remap) at onset+1800
 *                    [ecc_dbe_after_s].
 *   fell-off-bus     PCIe replays climb for 120 s, then XID 79 and the GPU
 *                    is lost at lost_after_s.
 * The faulty GPU is cfg.fault_gpu (cooling-failure also warms the whole
 * node's inlet a little). sim_scenario_failure_at() gives the closed-form
 * failure times.
 *
 * Invariants:
 *  - Model time never goes backwards; stepping to an earlier time is a no-op.
 *  - Counters (energy, violation ns, ECC, bytes, activity integrals) never
 *    decrease. A lost GPU's state is frozen at the moment it was lost.
 *  - sim_gpu_state is plain data the caller may read between steps; fields
 *    ending in '_' are the model's private integrator state.
 *
 * Ownership: sim_node_new() allocates; the caller frees with sim_node_free().
 * Models and MIG profiles are static tables. A node is not thread-safe: the
 * caller serialises access (the NVML shim holds one mutex).
 */
#ifndef KELVIN_SIM_SIM_H
#define KELVIN_SIM_SIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The module's symbols have hidden visibility: static-library users (agent,
 * tools, tests) link them as usual, but a shared library built on top (the
 * simulated libnvidia-ml.so.1) does not re-export them. */
#pragma GCC visibility push(hidden)

#define SIM_MAX_GPUS    16
#define SIM_MAX_MIG     7    /* MIG devices per GPU */
#define SIM_MAX_NVLINKS 18   /* Hopper has 18 */
#define SIM_MAX_PROCS   8    /* processes per GPU */
#define SIM_EVENT_RING  1024 /* XID events kept per node */
#define SIM_SUBSTEP_S   2.0  /* largest internal integration step */

/* ------------------------------------------------------------------------ */
/* GPU models                                                                */

typedef enum sim_model_id {
    SIM_MODEL_H100_SXM5_80GB,
    SIM_MODEL_H200_SXM_141GB,
    SIM_MODEL_A100_SXM4_80GB,
    SIM_MODEL_L4,
    SIM_MODEL_RTX6000_ADA, /* the one with a fan */
    SIM_MODEL__COUNT
} sim_model_id;

/* A GPU-instance profile (nvidia-smi mig -lgip). */
typedef struct sim_mig_profile {
    const char *name;      /* "3g.40gb" */
    unsigned nvml_profile; /* NVML_GPU_INSTANCE_PROFILE_* index (0 = 1 slice, ...) */
    unsigned profile_id;   /* the GI profile id ("ID" column: 19, 15, 14, 9, 5, 0) */
    unsigned slices;       /* compute slices out of 7 */
    unsigned max_count;    /* instances of this profile that fit */
    unsigned mem_mib;      /* memory of one instance */
    unsigned sm_count;     /* multiprocessors */
    unsigned copy_engines, decoders, encoders, jpegs, ofas;
} sim_mig_profile;

typedef struct sim_model {
    sim_model_id id;
    const char *key;                                       /* "h100" */
    const char *name;                                      /* NVML's name: "NVIDIA H100 80GB HBM3" */
    const char *vbios;                                     /* "96.00.99.00.02" */
    const char *inforom_image, *inforom_oem, *inforom_ecc; /* NULL = not supported */
    unsigned brand;                                        /* nvmlBrandType_t value */
    unsigned arch;          /* nvmlDeviceArchitecture_t value (7 Ampere, 8 Ada, 9 Hopper) */
    unsigned pci_device_id; /* (device << 16) | 0x10de */
    unsigned pci_subsystem_id;
    unsigned pcie_gen, pcie_width;
    uint64_t mem_total_bytes;
    uint64_t mem_reserved_bytes;
    unsigned power_limit_mw, power_min_mw, power_max_mw; /* default/enforced, constraints */
    double power_idle_w, power_full_w; /* at max clock: full activity may exceed the limit */
    unsigned sm_clock_max_mhz, sm_clock_idle_mhz, sm_clock_min_mhz, sm_clock_base_mhz;
    unsigned mem_clock_max_mhz, mem_clock_idle_mhz, video_clock_max_mhz;
    unsigned temp_shutdown_c, temp_slowdown_c, temp_max_op_c; /* die */
    unsigned temp_mem_max_c;                                  /* 0 = no memory sensor */
    double r_die, r_mem;                                      /* degC per W above inlet at full cooling */
    double tau_die_s, tau_mem_s;
    unsigned nvlink_count;
    double nvlink_link_gbps; /* GB/s per direction per link */
    unsigned num_fans;
    unsigned encoders, decoders;
    unsigned sm_count;
    bool has_mem_temp; /* HBM memory temperature sensor */
    bool has_ecc;
    bool has_gpm;        /* Hopper+ */
    bool has_remapping;  /* row remapping (Ampere+) */
    bool has_retirement; /* dynamic page retirement */
    const sim_mig_profile *mig_profiles;
    unsigned mig_profile_count; /* 0 = not MIG capable */
} sim_model;

const sim_model *sim_model_get(sim_model_id id);
/* Finds a model by key ("h100", "h200", "a100", "l4", "rtx6000ada"), by
 * NVML name, or by a few aliases ("h100-sxm", "a100-80gb"); case-insensitive.
 * NULL when unknown. */
const sim_model *sim_model_find(const char *s, size_t n);
/* The profile called name ("3g.40gb") on model m, or NULL. */
const sim_mig_profile *sim_mig_profile_find(const sim_model *m, const char *name, size_t n);

/* ------------------------------------------------------------------------ */
/* Scenarios and configuration                                               */

typedef enum sim_scenario {
    SIM_SCENARIO_HEALTHY,
    SIM_SCENARIO_COOLING_FAILURE,
    SIM_SCENARIO_MEMORY_LEAK,
    SIM_SCENARIO_XID_STORM,
    SIM_SCENARIO_ECC_DEGRADATION,
    SIM_SCENARIO_FELL_OFF_BUS,
    SIM_SCENARIO__COUNT
} sim_scenario;

typedef enum sim_workload {
    SIM_WORKLOAD_TRAINING,  /* data-parallel training: steps, evals, checkpoints */
    SIM_WORKLOAD_INFERENCE, /* diurnal serving load, some video decode */
    SIM_WORKLOAD_IDLE,
    SIM_WORKLOAD__COUNT
} sim_workload;

/* "healthy", "cooling-failure", ... (also accepts '_' for '-'). Returns 0 or
 * BASE_E_PARSE; *ret written only on success. */
int sim_scenario_parse(const char *s, size_t n, sim_scenario *ret);
const char *sim_scenario_name(sim_scenario s);
int sim_workload_parse(const char *s, size_t n, sim_workload *ret);
const char *sim_workload_name(sim_workload w);

typedef struct sim_mig_layout {
    bool enabled;                  /* MIG mode on (possibly with no instances) */
    unsigned count;                /* GPU instances, one compute instance each */
    unsigned profile[SIM_MAX_MIG]; /* indexes into model->mig_profiles */
} sim_mig_layout;

typedef struct sim_config {
    const sim_model *model;
    unsigned gpu_count;      /* 0 .. SIM_MAX_GPUS */
    char driver_version[32]; /* "550.54.15"; the model only reports it */
    sim_scenario scenario;
    sim_workload workload;
    uint64_t seed;
    unsigned fault_gpu;  /* the GPU the scenario breaks */
    double onset_s;      /* model time the failure starts (default 60) */
    double lost_after_s; /* fell-off-bus: model time of the loss (default 300) */
    sim_mig_layout mig[SIM_MAX_GPUS];

    /* Timeline parameters (seconds are model seconds). The defaults are the
     * minutes-long timelines above; a history generator stretches them to
     * days. sim_node_new() checks them. */
    double cool_ramp_s;      /* cooling-failure: cooling falls linearly over this (600) */
    double cool_ramp_to;     /* ... from 1 to this capacity (0.6), in (0, 1] */
    double cool_fan_after_s; /* a second fan fails this long after onset (900); < 0: never */
    double cool_fan_to;      /* ... leaving this capacity (0.3), in (0, 1] */
    double leak_rate_bps;    /* memory-leak: bytes per second; 0: the headroom in 1800 s */
    double ecc_rate0;        /* ecc-degradation: correctable errors per second at onset (0.05) */
    double ecc_doubling_s;   /* ... their rate doubles every this (300), > 0 */
    double ecc_dbe_after_s;  /* ... the uncorrectable error this long after onset (1800) */
    /* Largest integration step (0: SIM_SUBSTEP_S; at most 60 s). Longer
     * steps trade some fidelity of fast transients (the thermal
     * controller's overshoot) for speed when simulating weeks. */
    double max_substep_s;
} sim_config;

/* Defaults: H100 x8, driver 550.54.15, healthy, training, seed 1, fault GPU
 * 0, onset 60 s, loss at 300 s, no MIG, and the timeline parameters' values
 * given with them above. */
void sim_config_init(sim_config *cfg);

/* The model time of the scenario's defining failure on cfg->fault_gpu,
 * where it is a closed form of the config:
 *   memory-leak      the leaking process has used all the memory it can
 *                    and is OOM-killed: onset + headroom / rate, headroom
 *                    being 45% of the usable memory (of MIG instance 0
 *                    when the GPU is in MIG mode);
 *   ecc-degradation  the uncorrectable error: onset + ecc_dbe_after_s;
 *   fell-off-bus     the loss: lost_after_s;
 *   xid-storm        the first XID of the first burst.
 * 0 and *ret_t; BASE_E_NOTFOUND for healthy, for cooling-failure (when the
 * memory reaches its limit depends on the thermal state: step a node and
 * watch it) and when the scenario cannot fail (a leak into a GPU in MIG
 * mode without instances, a zero leak rate on a model without ECC...);
 * BASE_E_INVAL for a config sim_node_new() would refuse. */
int sim_scenario_failure_at(const sim_config *cfg, double *ret_t);
/* Parses a MIG layout: "GPU:PROFILE,PROFILE,...[;GPU:...]" where GPU is an
 * index or "*" (every GPU), e.g. "0:3g.40gb,2g.20gb,1g.10gb;2:7g.80gb";
 * "1:" turns MIG mode on for GPU 1 with no instances created.
 * Profiles must exist on cfg->model and fit (7 compute slices, per-profile
 * instance limits). Sets cfg->mig for the GPUs named; on error returns
 * BASE_E_PARSE / BASE_E_INVAL / BASE_E_RANGE, writes a message to err, and
 * leaves cfg unchanged. Set cfg->model and cfg->gpu_count first. */
int sim_config_set_mig(sim_config *cfg, const char *spec, size_t n, char *err, size_t errlen);

/* ------------------------------------------------------------------------ */
/* State                                                                     */

/* Activity channels (ratios 0..1), the GPM / DCGM profiling set. */
typedef enum sim_act {
    SIM_ACT_GRAPHICS, /* graphics/compute engine active */
    SIM_ACT_SM,       /* SM active */
    SIM_ACT_SM_OCC,   /* SM occupancy */
    SIM_ACT_TENSOR,   /* any tensor pipe */
    SIM_ACT_DRAM,     /* DRAM bandwidth */
    SIM_ACT_FP64,
    SIM_ACT_FP32,
    SIM_ACT_FP16,
    SIM_ACT_INT,
    SIM_ACT_DEC, /* video decoder */
    SIM_ACT_ENC, /* video encoder */
    SIM_ACT__COUNT
} sim_act;

/* Clock-event (throttle) reason bits, NVML's values. */
#define SIM_REASON_GPU_IDLE       0x1ULL
#define SIM_REASON_SW_POWER_CAP   0x4ULL
#define SIM_REASON_HW_SLOWDOWN    0x8ULL
#define SIM_REASON_SW_THERMAL     0x20ULL
#define SIM_REASON_HW_THERMAL     0x40ULL
#define SIM_REASON_HW_POWER_BRAKE 0x80ULL
#define SIM_REASONS_SUPPORTED     0x1EFULL /* every bit NVML defines up to 0x100, but 0x10 sync boost */

/* Violation policies, NVML_PERF_POLICY_* order. */
enum {
    SIM_VIOL_POWER,
    SIM_VIOL_THERMAL,
    SIM_VIOL_SYNC_BOOST,
    SIM_VIOL_BOARD_LIMIT,
    SIM_VIOL_LOW_UTIL,
    SIM_VIOL_RELIABILITY,
    SIM_VIOL__COUNT
};

/* NVLink error counters, nvmlNvLinkErrorCounter_t order. */
enum {
    SIM_NVL_REPLAY,
    SIM_NVL_RECOVERY,
    SIM_NVL_CRC_FLIT,
    SIM_NVL_CRC_DATA,
    SIM_NVL_ECC_DATA,
    SIM_NVL__COUNT
};

typedef struct sim_mig_state {
    const sim_mig_profile *profile;
    unsigned gi_id, ci_id; /* GPU / compute instance ids */
    unsigned start;        /* placement: first compute slice */
    uint64_t mem_total_bytes, mem_used_bytes;
    double util;                    /* percent */
    double act[SIM_ACT__COUNT];     /* ratios */
    double act_int[SIM_ACT__COUNT]; /* ratio-seconds since creation */
} sim_mig_state;

typedef struct sim_process {
    unsigned slot; /* stable identity; callers map it to a pid */
    int mig;       /* MIG device index, -1 = whole GPU */
    uint64_t used_bytes;
    double sm_util, mem_util, enc_util, dec_util; /* percent */
    double started_at;                            /* model time */
} sim_process;

typedef struct sim_gpu_state {
    unsigned index;
    bool lost;
    double lost_at;

    /* MIG */
    bool mig_enabled;
    unsigned mig_count;
    sim_mig_state mig[SIM_MAX_MIG];

    /* utilisation (percent) and activity */
    double util_gpu, util_mem, enc_util, dec_util;
    double act[SIM_ACT__COUNT];
    double act_int[SIM_ACT__COUNT];

    /* memory */
    uint64_t mem_total_bytes, mem_reserved_bytes, mem_used_bytes; /* used excludes reserved */

    /* thermal (degC) and cooling */
    double temp_gpu, temp_mem, temp_inlet;
    double cooling; /* cooling capacity, 1 = nominal */
    double fan_pct;

    /* power */
    double power_w;      /* 1 s average as NVML reports it */
    double power_inst_w; /* instantaneous */
    double energy_mj;    /* since the node was created */
    unsigned power_limit_mw;

    /* clocks (MHz) and their limits */
    double clock_sm, clock_mem, clock_video;
    uint64_t reasons; /* SIM_REASON_* bits now */
    uint64_t violation_ns[SIM_VIOL__COUNT];
    uint64_t sw_thermal_ns, hw_thermal_ns, hw_power_brake_ns;

    /* memory errors */
    uint64_t ecc_sbe_vol, ecc_dbe_vol, ecc_sbe_agg, ecc_dbe_agg;
    unsigned retired_sbe, retired_dbe;
    bool retired_pending;
    unsigned remap_cor, remap_unc;
    bool remap_pending, remap_failure;

    /* buses */
    unsigned pcie_replay;
    uint64_t pcie_tx_bytes, pcie_rx_bytes; /* cumulative */
    double pcie_tx_bps, pcie_rx_bps;       /* now */
    unsigned nvlink_count;
    uint64_t nvl_tx_bytes[SIM_MAX_NVLINKS], nvl_rx_bytes[SIM_MAX_NVLINKS];
    uint64_t nvl_err[SIM_MAX_NVLINKS][SIM_NVL__COUNT];

    /* processes */
    unsigned proc_count;
    sim_process procs[SIM_MAX_PROCS];

    /* XIDs seen on this GPU */
    unsigned last_xid;
    uint64_t xid_count;

    /* private integrator state */
    double therm_cap_w_;     /* thermal controller's power cap */
    uint64_t ecc_sbe_model_; /* scenario SBE count already applied */
    bool dbe_done_;
    double replay_ramp_; /* fell-off-bus replays already applied (fractional) */
    unsigned bg_replay_; /* background PCIe replays already applied */
    uint64_t bg_nvl_;    /* background NVLink CRC errors already applied */
} sim_gpu_state;

typedef struct sim_xid_event {
    uint64_t seq; /* 0, 1, 2, ... per node */
    double t;     /* model time */
    unsigned gpu;
    unsigned xid;
    unsigned gi_id, ci_id; /* 0xFFFFFFFF = whole GPU */
} sim_xid_event;

/* ------------------------------------------------------------------------ */
/* Node                                                                      */

typedef struct sim_node sim_node;

/* Creates a node at model time 0 in its steady state (temperatures settled,
 * the workload already running). Checks the config (model set, gpu_count <=
 * SIM_MAX_GPUS, fault_gpu < gpu_count when there are GPUs, MIG profiles of
 * this model). Returns 0, BASE_E_INVAL (message in err) or BASE_E_NOMEM. */
int sim_node_new(const sim_config *cfg, sim_node **ret, char *err, size_t errlen);
void sim_node_free(sim_node *n);

/* Advances the node to model time t (seconds). Earlier times are ignored;
 * non-finite t returns BASE_E_INVAL. */
int sim_node_step(sim_node *n, double t);
double sim_node_time(const sim_node *n);
const sim_config *sim_node_config(const sim_node *n);
unsigned sim_node_gpu_count(const sim_node *n);
/* NULL when i is out of range. Valid until the next step or free. */
const sim_gpu_state *sim_node_gpu(const sim_node *n, unsigned i);

/* XID events. The node keeps the last SIM_EVENT_RING in a ring; each reader
 * keeps its own cursor (the seq of the next event it wants; start from
 * sim_node_event_next()). Copies up to max events at or after *cursor into
 * out, advances *cursor past them, and returns how many it copied. A reader
 * that fell more than SIM_EVENT_RING behind skips to the oldest kept event
 * (*ret_dropped, when not NULL, counts the skipped ones). */
size_t sim_node_events(const sim_node *n, uint64_t *cursor, sim_xid_event *out, size_t max,
                       uint64_t *ret_dropped);
uint64_t sim_node_event_next(const sim_node *n);

/* Identity, deterministic for (seed, index), obviously synthetic but
 * well-formed: UUIDs "GPU-5151xxxx-xxxx-4xxx-8xxx-xxxxxxxxxxxx" and
 * "MIG-5151...", serials "SIM" + 10 digits, PCI bus ids as on an HGX board.
 * Each writes a NUL-terminated string and returns its length, or
 * BASE_E_RANGE when it does not fit, BASE_E_INVAL for a bad index. */
int sim_gpu_uuid(const sim_node *n, unsigned gpu, char *buf, size_t len);
int sim_mig_uuid(const sim_node *n, unsigned gpu, unsigned mig, char *buf, size_t len);
int sim_gpu_serial(const sim_node *n, unsigned gpu, char *buf, size_t len);
/* PCI location of a GPU: domain 0, an HGX-like bus number, device 0. */
int sim_gpu_pci(const sim_node *n, unsigned gpu, unsigned *ret_domain, unsigned *ret_bus,
                unsigned *ret_device);

/* CUDA driver API version for an NVIDIA driver version string ("550.54.15"
 * -> 12040), as nvmlSystemGetCudaDriverVersion reports it; 0 if unknown. */
int sim_cuda_version(const char *driver);

#pragma GCC visibility pop

#endif
