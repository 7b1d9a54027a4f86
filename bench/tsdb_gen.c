/* bench/tsdb_gen.c -- the simulated GPU fleet as exposition text, for the
 * storage benchmarks (bench/tsdb_bench.py).
 *
 * Data. N nodes; each has 8 simulated H100s (src/sim: the same model the
 * simulated NVML serves, so temperatures drift with load, power follows
 * utilisation, clocks move under the power cap, counters only grow) with
 * 157 series a GPU -- the dcgm-exporter names and labels of the metric
 * catalog (src/agent/catalog_gpu.c), Kelvin's kelvin_gpu_* set, and
 * DCGM's per-NVLink-link fields (DCGM_FI_PROF_NVLINK_L<k>_TX/RX_BYTES,
 * DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_L<k>: not in the catalog, added
 * to reach the ~150 series an H100 exposes; --per-link 0 leaves them out,
 * ~104 a GPU) -- plus ~510 node_exporter-like host
 * series (CPU seconds per CPU and mode, memory, filesystems, network,
 * disks, vmstat, netstat, ...) whose busy time follows the GPUs' load.
 * Values are written the way the exporters write them: integers where
 * NVML or /proc gives integers, watts to 3 decimals, GPM ratios as full
 * doubles, CPU seconds in 1/100 s, Go's shortest 'g' formatting.
 *
 * Timestamps: each node is scraped at its own offset within the interval
 * (as Prometheus spreads targets), with Prometheus-like jitter: within
 * 2 ms it is aligned to the interval, a slow scrape now and then lands
 * 3-42 ms late. All series of a node share the scrape's timestamp.
 *
 * Modes:
 *   history (default): --hours H of samples every --interval-ms from
 *     --start-ms, time-major (all series at one scrape, then the next), so
 *     every series' samples are in time order; --format openmetrics (float
 *     seconds, ends with `# EOF`) or text (ms timestamps, Prometheus text,
 *     as VictoriaMetrics' /api/v1/import/prometheus reads it). Series carry
 *     job="gpu-node" and instance="node-NNNN" as a scrape would add them.
 *   --bodies DIR --rounds R: scrape bodies without timestamps, job or
 *     instance (the scraper adds those): DIR/<round>/<node>.txt for rounds
 *     0..R-1, the fleet stepped --interval-ms between rounds.
 *
 * Defaults: 2 nodes, 24 h, 15 s, from 2024-01-01T12:00Z (a multiple of 54 h
 * since the epoch: see tsdb_bench.py), seed 1; 1,767 series a node.
 *
 * Deterministic: the same options give the same bytes (noise comes from a
 * counter-based hash and per-node xorshift streams, never from the clock).
 * --stats FILE writes `series`, `samples`, `mint`, `maxt` (ms) lines.
 *
 * Built by CMake as <build>/bench_tsdb_gen.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/num.h"
#include "sim/sim.h"

#define MAX_NODES 100000
#define NCPUS     32

/* ---- noise -------------------------------------------------------------- */

static uint64_t mix64(uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

typedef struct rng {
    uint64_t s;
} rng;

static uint64_t rnd(rng *r) {
    r->s ^= r->s >> 12;
    r->s ^= r->s << 25;
    r->s ^= r->s >> 27;
    return r->s * 0x2545f4914f6cdd1dull;
}
static double unif(rng *r) {
    return (double)(rnd(r) >> 11) / 9007199254740992.0;
}
static double gauss(rng *r) {
    double u = unif(r), v = unif(r);
    if (u < 1e-300) u = 1e-300;
    return sqrt(-2 * log(u)) * cos(6.283185307179586 * v);
}
static double dec(double x, double scale) {
    return (double)llround(x * scale) / scale;
}

/* ---- GPU series --------------------------------------------------------- */

enum {
    G_CLOCK_SM,
    G_CLOCK_MEM,
    G_TEMP_MEM,
    G_TEMP_GPU,
    G_POWER,
    G_ENERGY,
    G_PCIE_REPLAY,
    G_UTIL_GPU,
    G_UTIL_MEM,
    G_ENC,
    G_DEC,
    G_ENC_RATIO,
    G_DEC_RATIO,
    G_LAST_XID,
    G_VIOL_NS,
    G_VIOL_S,
    G_FB_FREE,
    G_FB_USED,
    G_FB_RESERVED,
    G_ECC, /* arg: 0 sbe vol, 1 dbe vol, 2 sbe agg, 3 dbe agg */
    G_RETIRED_SBE,
    G_RETIRED_DBE,
    G_RETIRED_PENDING,
    G_NVL_ERR_TOTAL, /* arg: SIM_NVL_* */
    G_NVL_ERR_LINK,  /* arg: link; CRC flit */
    G_NVL_BYTES,     /* arg: 0 tx 1 rx, bytes over all links */
    G_NVL_KIB_TOTAL,
    G_NVL_RATE,      /* arg: 0 tx 1 rx, bytes/s over all links */
    G_NVL_LINK_RATE, /* arg: link * 2 + dir, integer bytes/s */
    G_CONST,         /* arg: value */
    G_REMAP_UNC,
    G_REMAP_COR,
    G_REMAP_PENDING,
    G_REMAP_FAILED,
    G_ACT, /* arg: SIM_ACT_*, ratio over the interval (GPM) */
    G_PCIE_RATE,
    G_PCIE_BYTES,
    G_PLIMIT,
    G_CLOCK_MAX, /* arg: 0 graphics 1 sm 2 mem 3 video, in Hz */
    G_REASON,    /* arg: bit */
};

typedef struct gspec {
    const char *name;
    const char *extra; /* extra labels, "" or `k="v"` */
    int src, arg;
} gspec;

static const char *const viol_policy[6] = {"power",       "thermal",         "sync_boost",
                                           "board_limit", "low_utilization", "reliability"};
static const char *const viol_dcgm[6] = {
    "DCGM_FI_DEV_POWER_VIOLATION",      "DCGM_FI_DEV_THERMAL_VIOLATION",
    "DCGM_FI_DEV_SYNC_BOOST_VIOLATION", "DCGM_FI_DEV_BOARD_LIMIT_VIOLATION",
    "DCGM_FI_DEV_LOW_UTIL_VIOLATION",   "DCGM_FI_DEV_RELIABILITY_VIOLATION"};

static const gspec gpu_fixed[] = {
    {"DCGM_FI_DEV_SM_CLOCK", "", G_CLOCK_SM, 0},
    {"DCGM_FI_DEV_MEM_CLOCK", "", G_CLOCK_MEM, 0},
    {"DCGM_FI_DEV_MEMORY_TEMP", "", G_TEMP_MEM, 0},
    {"DCGM_FI_DEV_GPU_TEMP", "", G_TEMP_GPU, 0},
    {"DCGM_FI_DEV_POWER_USAGE", "", G_POWER, 0},
    {"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "", G_ENERGY, 0},
    {"DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "", G_PCIE_REPLAY, 0},
    {"DCGM_FI_DEV_GPU_UTIL", "", G_UTIL_GPU, 0},
    {"DCGM_FI_DEV_MEM_COPY_UTIL", "", G_UTIL_MEM, 0},
    {"DCGM_FI_DEV_ENC_UTIL", "", G_ENC, 0},
    {"DCGM_FI_DEV_DEC_UTIL", "", G_DEC, 0},
    {"DCGM_FI_DEV_XID_ERRORS", "", G_LAST_XID, 0},
    {"DCGM_FI_DEV_FB_FREE", "", G_FB_FREE, 0},
    {"DCGM_FI_DEV_FB_USED", "", G_FB_USED, 0},
    {"DCGM_FI_DEV_FB_RESERVED", "", G_FB_RESERVED, 0},
    {"DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "", G_ECC, 0},
    {"DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "", G_ECC, 1},
    {"DCGM_FI_DEV_ECC_SBE_AGG_TOTAL", "", G_ECC, 2},
    {"DCGM_FI_DEV_ECC_DBE_AGG_TOTAL", "", G_ECC, 3},
    {"DCGM_FI_DEV_RETIRED_SBE", "", G_RETIRED_SBE, 0},
    {"DCGM_FI_DEV_RETIRED_DBE", "", G_RETIRED_DBE, 0},
    {"DCGM_FI_DEV_RETIRED_PENDING", "", G_RETIRED_PENDING, 0},
    {"DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", "", G_NVL_ERR_TOTAL, SIM_NVL_CRC_FLIT},
    {"DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL", "", G_NVL_ERR_TOTAL, SIM_NVL_CRC_DATA},
    {"DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL", "", G_NVL_ERR_TOTAL, SIM_NVL_REPLAY},
    {"DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL", "", G_NVL_ERR_TOTAL, SIM_NVL_RECOVERY},
    {"DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", "", G_NVL_KIB_TOTAL, 0},
    {"DCGM_FI_DEV_VGPU_LICENSE_STATUS", "", G_CONST, 0},
    {"DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "", G_REMAP_UNC, 0},
    {"DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "", G_REMAP_COR, 0},
    {"DCGM_FI_DEV_ROW_REMAP_FAILURE", "", G_REMAP_FAILED, 0},
    {"DCGM_FI_PROF_GR_ENGINE_ACTIVE", "", G_ACT, SIM_ACT_GRAPHICS},
    {"DCGM_FI_PROF_SM_ACTIVE", "", G_ACT, SIM_ACT_SM},
    {"DCGM_FI_PROF_SM_OCCUPANCY", "", G_ACT, SIM_ACT_SM_OCC},
    {"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "", G_ACT, SIM_ACT_TENSOR},
    {"DCGM_FI_PROF_DRAM_ACTIVE", "", G_ACT, SIM_ACT_DRAM},
    {"DCGM_FI_PROF_PIPE_FP64_ACTIVE", "", G_ACT, SIM_ACT_FP64},
    {"DCGM_FI_PROF_PIPE_FP32_ACTIVE", "", G_ACT, SIM_ACT_FP32},
    {"DCGM_FI_PROF_PIPE_FP16_ACTIVE", "", G_ACT, SIM_ACT_FP16},
    {"DCGM_FI_PROF_PCIE_TX_BYTES", "", G_PCIE_RATE, 0},
    {"DCGM_FI_PROF_PCIE_RX_BYTES", "", G_PCIE_RATE, 1},
    {"kelvin_gpu_lost", "", G_CONST, 0},
    {"kelvin_gpu_memory_temperature_celsius", "", G_TEMP_MEM, 0},
    {"kelvin_gpu_power_limit_watts", "", G_PLIMIT, 0},
    {"kelvin_gpu_power_enforced_limit_watts", "", G_PLIMIT, 0},
    {"kelvin_gpu_clock_max_hertz", "clock=\"graphics\"", G_CLOCK_MAX, 0},
    {"kelvin_gpu_clock_max_hertz", "clock=\"sm\"", G_CLOCK_MAX, 1},
    {"kelvin_gpu_clock_max_hertz", "clock=\"memory\"", G_CLOCK_MAX, 2},
    {"kelvin_gpu_clock_max_hertz", "clock=\"video\"", G_CLOCK_MAX, 3},
    {"kelvin_gpu_clock_event_active", "reason=\"gpu_idle\"", G_REASON, 0},
    {"kelvin_gpu_clock_event_active", "reason=\"applications_clocks_setting\"", G_REASON, 1},
    {"kelvin_gpu_clock_event_active", "reason=\"sw_power_cap\"", G_REASON, 2},
    {"kelvin_gpu_clock_event_active", "reason=\"hw_slowdown\"", G_REASON, 3},
    {"kelvin_gpu_clock_event_active", "reason=\"sw_thermal_slowdown\"", G_REASON, 5},
    {"kelvin_gpu_clock_event_active", "reason=\"hw_thermal_slowdown\"", G_REASON, 6},
    {"kelvin_gpu_clock_event_active", "reason=\"hw_power_brake_slowdown\"", G_REASON, 7},
    {"kelvin_gpu_clock_event_active", "reason=\"display_clock_setting\"", G_REASON, 8},
    {"kelvin_gpu_ecc_volatile_errors_total", "type=\"corrected\"", G_ECC, 0},
    {"kelvin_gpu_ecc_volatile_errors_total", "type=\"uncorrected\"", G_ECC, 1},
    {"kelvin_gpu_ecc_aggregate_errors_total", "type=\"corrected\"", G_ECC, 2},
    {"kelvin_gpu_ecc_aggregate_errors_total", "type=\"uncorrected\"", G_ECC, 3},
    {"kelvin_gpu_retired_pages_total", "cause=\"single_bit\"", G_RETIRED_SBE, 0},
    {"kelvin_gpu_retired_pages_total", "cause=\"double_bit\"", G_RETIRED_DBE, 0},
    {"kelvin_gpu_retired_pages_pending", "", G_RETIRED_PENDING, 0},
    {"kelvin_gpu_remapped_rows_total", "type=\"correctable\"", G_REMAP_COR, 0},
    {"kelvin_gpu_remapped_rows_total", "type=\"uncorrectable\"", G_REMAP_UNC, 0},
    {"kelvin_gpu_remapped_rows_pending", "", G_REMAP_PENDING, 0},
    {"kelvin_gpu_remapped_rows_failed", "", G_REMAP_FAILED, 0},
    {"kelvin_gpu_pcie_replays_total", "", G_PCIE_REPLAY, 0},
    {"kelvin_gpu_pcie_bytes_total", "direction=\"tx\"", G_PCIE_BYTES, 0},
    {"kelvin_gpu_pcie_bytes_total", "direction=\"rx\"", G_PCIE_BYTES, 1},
    {"kelvin_gpu_nvlink_errors_total", "type=\"crc_flit\"", G_NVL_ERR_TOTAL, SIM_NVL_CRC_FLIT},
    {"kelvin_gpu_nvlink_errors_total", "type=\"crc_data\"", G_NVL_ERR_TOTAL, SIM_NVL_CRC_DATA},
    {"kelvin_gpu_nvlink_errors_total", "type=\"replay\"", G_NVL_ERR_TOTAL, SIM_NVL_REPLAY},
    {"kelvin_gpu_nvlink_errors_total", "type=\"recovery\"", G_NVL_ERR_TOTAL, SIM_NVL_RECOVERY},
    {"kelvin_gpu_nvlink_bytes_total", "direction=\"tx\"", G_NVL_BYTES, 0},
    {"kelvin_gpu_nvlink_bytes_total", "direction=\"rx\"", G_NVL_BYTES, 1},
    {"kelvin_gpu_encoder_utilization_ratio", "", G_ENC_RATIO, 0},
    {"kelvin_gpu_decoder_utilization_ratio", "", G_DEC_RATIO, 0},
    {"kelvin_gpu_sm_active_ratio", "", G_ACT, SIM_ACT_SM},
    {"kelvin_gpu_sm_occupancy_ratio", "", G_ACT, SIM_ACT_SM_OCC},
    {"kelvin_gpu_tensor_active_ratio", "", G_ACT, SIM_ACT_TENSOR},
    {"kelvin_gpu_dram_active_ratio", "", G_ACT, SIM_ACT_DRAM},
    {"kelvin_gpu_pipe_active_ratio", "pipe=\"fp64\"", G_ACT, SIM_ACT_FP64},
    {"kelvin_gpu_pipe_active_ratio", "pipe=\"fp32\"", G_ACT, SIM_ACT_FP32},
    {"kelvin_gpu_pipe_active_ratio", "pipe=\"fp16\"", G_ACT, SIM_ACT_FP16},
    {"kelvin_gpu_pcie_throughput_bytes_per_second", "direction=\"tx\"", G_PCIE_RATE, 0},
    {"kelvin_gpu_pcie_throughput_bytes_per_second", "direction=\"rx\"", G_PCIE_RATE, 1},
    {"kelvin_gpu_nvlink_throughput_bytes_per_second", "direction=\"tx\"", G_NVL_RATE, 0},
    {"kelvin_gpu_nvlink_throughput_bytes_per_second", "direction=\"rx\"", G_NVL_RATE, 1},
};
#define N_GPU_FIXED    (sizeof gpu_fixed / sizeof gpu_fixed[0])
/* + 6 x 2 violations, 1 info, 18 links x (2 rates + 1 error counter) */
#define MAX_GPU_SERIES (N_GPU_FIXED + 12 + 1 + SIM_MAX_NVLINKS * 3)

/* ---- host series -------------------------------------------------------- */

enum {
    H_CPU,         /* node_cpu_seconds_total; arg: cpu * 8 + mode */
    H_CONST,       /* a = value */
    H_WALK,        /* integer random walk in units of arg (4096: pages): a = start units, b = step sd */
    H_SMALL_NOISE, /* small integer gauge around a */
    H_COUNTER,     /* integer counter: a = base rate/s, b = rate/s at full load */
    H_RARE,        /* integer counter, +1 with probability a per scrape */
    H_MS_COUNTER,  /* seconds with ms resolution: a = base ms/s, b = ms/s at full load */
    H_US_COUNTER,  /* seconds with us resolution (pressure) */
    H_LOAD,        /* load average: a = smoothing per interval */
    H_FS_AVAIL,    /* bytes, slowly decreasing, occasional cleanups */
    H_TIME,        /* node_time_seconds: scrape time with ns noise */
    H_TEMP,        /* degrees, a = base, b = load gain; 1/8 C steps */
    H_PACKETS,     /* packets counter following a bytes counter: arg = index of it, a = bytes/packet */
};

typedef struct hspec {
    char *prefix; /* name{labels} */
    int kind, arg;
    double a, b;
} hspec;

typedef struct hstate {
    double v, prev_src;
} hstate;

/* ---- nodes -------------------------------------------------------------- */

typedef struct gpu_prev {
    double act_int[SIM_ACT__COUNT];
    uint64_t pcie_tx, pcie_rx;
    uint64_t nvl_tx[SIM_MAX_NVLINKS], nvl_rx[SIM_MAX_NVLINKS];
} gpu_prev;

typedef struct node {
    sim_node *sim;
    unsigned ngpu;
    gpu_prev prev[SIM_MAX_GPUS];
    /* series of this node: rendered prefixes */
    size_t ng; /* GPU series per GPU */
    gspec gs[MAX_GPU_SERIES];
    char **gprefix; /* ngpu * ng */
    size_t nh;
    hspec *hs;
    hstate *hst;
    double cpu_busy[NCPUS];
    int64_t offset_ms;
    rng r;
} node;

typedef struct opts {
    unsigned nodes;
    double hours;
    int64_t interval_ms, start_ms;
    int openmetrics;
    const char *out, *bodies, *stats;
    unsigned rounds;
    uint64_t seed;
    int per_link; /* DCGM's per-NVLink-link fields (54 series a GPU) */
} opts;

static void die(const char *msg) {
    fprintf(stderr, "tsdb_gen: %s\n", msg);
    exit(1);
}
static void *xmalloc(size_t n) {
    void *p = calloc(1, n ? n : 1);
    if (!p) die("out of memory");
    return p;
}
static char *xstrdup(const char *s) {
    size_t n = strlen(s) + 1;
    char *p = xmalloc(n);
    memcpy(p, s, n);
    return p;
}

static const char *const cpu_modes[8] = {"idle",    "iowait", "irq",    "nice",
                                         "softirq", "steal",  "system", "user"};

static size_t host_add(hspec *hs, size_t n, const char *prefix, int kind, int arg, double a, double b) {
    hs[n].prefix = xstrdup(prefix);
    hs[n].kind = kind;
    hs[n].arg = arg;
    hs[n].a = a;
    hs[n].b = b;
    return n + 1;
}

/* Builds the host series of node `name`; `id` labels go into every series. */
static size_t host_build(hspec *hs, const char *id, rng *r) {
    char p[512];
    size_t n = 0;
    const char *sep = *id ? "," : "";
#define HP(...) (snprintf(p, sizeof p, __VA_ARGS__), p)
    for (int c = 0; c < NCPUS; c++)
        for (int m = 0; m < 8; m++)
            n = host_add(hs, n,
                         HP("node_cpu_seconds_total{%s%scpu=\"%d\",mode=\"%s\"}", id, sep, c, cpu_modes[m]),
                         H_CPU, c * 8 + m, 0, 0);
    static const char *const mem_walk[] = {
        "MemFree",     "MemAvailable",  "Buffers",     "Cached",        "Active",     "Inactive",
        "Active_anon", "Inactive_anon", "Active_file", "Inactive_file", "AnonPages",  "Mapped",
        "Shmem",       "KReclaimable",  "Slab",        "SReclaimable",  "SUnreclaim", "KernelStack",
        "PageTables",  "Committed_AS",  "VmallocUsed", "AnonHugePages", "Dirty",      "Writeback"};
    static const char *const mem_const[] = {
        "MemTotal",     "SwapCached",        "SwapTotal",      "SwapFree",
        "Unevictable",  "Mlocked",           "NFS_Unstable",   "Bounce",
        "WritebackTmp", "CommitLimit",       "VmallocTotal",   "VmallocChunk",
        "Percpu",       "HardwareCorrupted", "ShmemHugePages", "Hugepagesize"};
    for (size_t i = 0; i < sizeof mem_walk / sizeof *mem_walk; i++)
        n = host_add(hs, n, HP("node_memory_%s_bytes{%s}", mem_walk[i], id), H_WALK, 4096,
                     (double)(1000 + rnd(r) % 40000000), i >= 22 ? 3 : 200 + (double)(rnd(r) % 600));
    for (size_t i = 0; i < sizeof mem_const / sizeof *mem_const; i++) {
        double v = 0;
        if (i == 0) v = 2164359524352.0; /* 2 TB */
        if (i == 9) v = 1082179760128.0;
        if (i == 10) v = 35184372087808.0;
        if (i == 12) v = 120586240.0;
        if (i == 15) v = 2097152.0;
        n = host_add(hs, n, HP("node_memory_%s_bytes{%s}", mem_const[i], id), H_CONST, 0, v, 0);
    }
    static const char *const mounts[5][3] = {{"/", "/dev/nvme0n1p2", "ext4"},
                                             {"/boot", "/dev/nvme0n1p1", "ext4"},
                                             {"/boot/efi", "/dev/nvme0n1p0", "vfat"},
                                             {"/var/lib/containerd", "/dev/nvme1n1", "xfs"},
                                             {"/raid", "/dev/md0", "ext4"}};
    for (int m = 0; m < 5; m++) {
        char l[256];
        snprintf(l, sizeof l, "%s%sdevice=\"%s\",fstype=\"%s\",mountpoint=\"%s\"", id, sep, mounts[m][1],
                 mounts[m][2], mounts[m][0]);
        double size = (double)((1ull << (30 + m * 2)) + (rnd(r) % 1000) * 4096);
        n = host_add(hs, n, HP("node_filesystem_size_bytes{%s}", l), H_CONST, 0, size, 0);
        n = host_add(hs, n, HP("node_filesystem_avail_bytes{%s}", l), H_FS_AVAIL, 0, size * 0.6, size * 0.65);
        n = host_add(hs, n, HP("node_filesystem_free_bytes{%s}", l), H_FS_AVAIL, 0, size * 0.62, size * 0.67);
        n = host_add(hs, n, HP("node_filesystem_files{%s}", l), H_CONST, 0, size / 16384, 0);
        n = host_add(hs, n, HP("node_filesystem_files_free{%s}", l), H_WALK, 1, floor(size / 20000), 3);
        n = host_add(hs, n, HP("node_filesystem_readonly{%s}", l), H_CONST, 0, 0, 0);
        n = host_add(hs, n, HP("node_filesystem_device_error{%s}", l), H_CONST, 0, 0, 0);
    }
    static const char *const nets[6] = {"eth0", "eth1", "ibp26s0", "ibp60s0", "ibp77s0", "ibp94s0"};
    for (int d = 0; d < 6; d++) {
        double base = d < 2 ? 2e6 : 1e5, full = d < 2 ? 2e7 : 5e9;
        for (int dir = 0; dir < 2; dir++) {
            const char *io = dir ? "transmit" : "receive";
            size_t bytes_at = n;
            n = host_add(hs, n, HP("node_network_%s_bytes_total{%s%sdevice=\"%s\"}", io, id, sep, nets[d]),
                         H_COUNTER, 0, base, full);
            n = host_add(hs, n, HP("node_network_%s_packets_total{%s%sdevice=\"%s\"}", io, id, sep, nets[d]),
                         H_PACKETS, (int)bytes_at, d < 2 ? 900 : 4000, 0);
            n = host_add(hs, n, HP("node_network_%s_errs_total{%s%sdevice=\"%s\"}", io, id, sep, nets[d]),
                         H_RARE, 0, 0.0005, 0);
            n = host_add(hs, n, HP("node_network_%s_drop_total{%s%sdevice=\"%s\"}", io, id, sep, nets[d]),
                         H_RARE, 0, 0.003, 0);
        }
        n = host_add(hs, n, HP("node_network_up{%s%sdevice=\"%s\"}", id, sep, nets[d]), H_CONST, 0, 1, 0);
        n = host_add(hs, n, HP("node_network_mtu_bytes{%s%sdevice=\"%s\"}", id, sep, nets[d]), H_CONST, 0,
                     d < 2 ? 1500 : 4092, 0);
        n = host_add(hs, n, HP("node_network_speed_bytes{%s%sdevice=\"%s\"}", id, sep, nets[d]), H_CONST, 0,
                     d < 2 ? 3125000000.0 : 50000000000.0, 0);
        n = host_add(hs, n, HP("node_network_carrier_changes_total{%s%sdevice=\"%s\"}", id, sep, nets[d]),
                     H_CONST, 0, (double)(2 + rnd(r) % 6), 0);
    }
    static const char *const disks[4] = {"nvme0n1", "nvme1n1", "nvme2n1", "nvme3n1"};
    for (int d = 0; d < 4; d++) {
        char l[128];
        snprintf(l, sizeof l, "%s%sdevice=\"%s\"", id, sep, disks[d]);
        n = host_add(hs, n, HP("node_disk_reads_completed_total{%s}", l), H_COUNTER, 0, 20, 400);
        n = host_add(hs, n, HP("node_disk_writes_completed_total{%s}", l), H_COUNTER, 0, 60, 300);
        n = host_add(hs, n, HP("node_disk_reads_merged_total{%s}", l), H_COUNTER, 0, 1, 10);
        n = host_add(hs, n, HP("node_disk_writes_merged_total{%s}", l), H_COUNTER, 0, 5, 40);
        n = host_add(hs, n, HP("node_disk_read_bytes_total{%s}", l), H_COUNTER, 0, 8e4, 2e8);
        n = host_add(hs, n, HP("node_disk_written_bytes_total{%s}", l), H_COUNTER, 0, 3e5, 5e7);
        n = host_add(hs, n, HP("node_disk_read_time_seconds_total{%s}", l), H_MS_COUNTER, 0, 4, 80);
        n = host_add(hs, n, HP("node_disk_write_time_seconds_total{%s}", l), H_MS_COUNTER, 0, 10, 60);
        n = host_add(hs, n, HP("node_disk_io_time_seconds_total{%s}", l), H_MS_COUNTER, 0, 12, 120);
        n = host_add(hs, n, HP("node_disk_io_time_weighted_seconds_total{%s}", l), H_MS_COUNTER, 0, 15, 150);
        n = host_add(hs, n, HP("node_disk_io_now{%s}", l), H_SMALL_NOISE, 0, 1, 0);
    }
    n = host_add(hs, n, HP("node_load1{%s}", id), H_LOAD, 0, 0.22, 0);
    n = host_add(hs, n, HP("node_load5{%s}", id), H_LOAD, 0, 0.05, 0);
    n = host_add(hs, n, HP("node_load15{%s}", id), H_LOAD, 0, 0.0165, 0);
    n = host_add(hs, n, HP("node_context_switches_total{%s}", id), H_COUNTER, 0, 4e4, 4e5);
    n = host_add(hs, n, HP("node_intr_total{%s}", id), H_COUNTER, 0, 3e4, 3e5);
    n = host_add(hs, n, HP("node_forks_total{%s}", id), H_COUNTER, 0, 5, 20);
    n = host_add(hs, n, HP("node_procs_running{%s}", id), H_SMALL_NOISE, 0, 3, 0);
    n = host_add(hs, n, HP("node_procs_blocked{%s}", id), H_SMALL_NOISE, 0, 0.2, 0);
    n = host_add(hs, n, HP("node_boot_time_seconds{%s}", id), H_CONST, 0,
                 1703000000 + (double)(rnd(r) % 900000), 0);
    n = host_add(hs, n, HP("node_time_seconds{%s}", id), H_TIME, 0, 0, 0);
    n = host_add(hs, n, HP("node_entropy_available_bits{%s}", id), H_CONST, 0, 256, 0);
    n = host_add(hs, n, HP("node_filefd_allocated{%s}", id), H_WALK, 1, 9000, 4);
    n = host_add(hs, n, HP("node_filefd_maximum{%s}", id), H_CONST, 0, 9223372036854775807.0, 0);
    static const char *const vmstat[7] = {"pgfault", "pgmajfault", "pgpgin",  "pgpgout",
                                          "pswpin",  "pswpout",    "oom_kill"};
    static const double vm_rate[7][2] = {{2e4, 2e5}, {0.5, 2}, {50, 2e5}, {300, 5e4}, {0, 0}, {0, 0}, {0, 0}};
    for (int i = 0; i < 7; i++)
        n = host_add(hs, n, HP("node_vmstat_%s{%s}", vmstat[i], id), vm_rate[i][0] > 0 ? H_COUNTER : H_CONST,
                     0, vm_rate[i][0], vm_rate[i][1]);
    static const char *const netstat[21] = {"Tcp_ActiveOpens",
                                            "Tcp_PassiveOpens",
                                            "Tcp_CurrEstab",
                                            "Tcp_InSegs",
                                            "Tcp_OutSegs",
                                            "Tcp_RetransSegs",
                                            "Tcp_InErrs",
                                            "Tcp_OutRsts",
                                            "Udp_InDatagrams",
                                            "Udp_OutDatagrams",
                                            "Udp_InErrors",
                                            "Udp_NoPorts",
                                            "Ip_Forwarding",
                                            "TcpExt_ListenDrops",
                                            "TcpExt_ListenOverflows",
                                            "TcpExt_SyncookiesSent",
                                            "TcpExt_TCPTimeouts",
                                            "Icmp_InMsgs",
                                            "Icmp_OutMsgs",
                                            "Ip6_InOctets",
                                            "Ip6_OutOctets"};
    for (int i = 0; i < 21; i++) {
        int kind = H_COUNTER;
        double a = 2 + (double)(rnd(r) % 50), b = a * 10;
        if (i == 2) kind = H_WALK, a = 120, b = 1;
        if (i == 12) kind = H_CONST, a = 1;
        if (i == 6 || i == 10 || i == 13 || i == 14 || i == 15) kind = H_RARE, a = 0.002;
        if (i == 3 || i == 4) a = 3000, b = 8e4;
        if (i >= 19) a = 2000, b = 1e4;
        n = host_add(hs, n, HP("node_netstat_%s{%s}", netstat[i], id), kind, kind == H_WALK ? 1 : 0, a, b);
    }
    static const char *const sock[8] = {"TCP_inuse",     "TCP_alloc", "TCP_tw",  "TCP_mem",
                                        "TCP_mem_bytes", "UDP_inuse", "UDP_mem", "sockets_used"};
    for (int i = 0; i < 8; i++)
        n = host_add(hs, n, HP("node_sockstat_%s{%s}", sock[i], id), H_WALK, 1, 20 + (double)(rnd(r) % 400),
                     1);
    for (int i = 0; i < 8; i++)
        n = host_add(hs, n,
                     HP("node_hwmon_temp_celsius{%s%schip=\"platform_coretemp_%d\",sensor=\"temp%d\"}", id,
                        sep, i / 4, i % 4 + 1),
                     H_TEMP, 0, 38 + (double)(rnd(r) % 8), 18);
    static const char *const press[5] = {"cpu_waiting", "io_waiting", "io_stalled", "memory_waiting",
                                         "memory_stalled"};
    for (int i = 0; i < 5; i++)
        n = host_add(hs, n, HP("node_pressure_%s_seconds_total{%s}", press[i], id), H_US_COUNTER, 0,
                     i == 0 ? 2e4 : 500, i == 0 ? 2e5 : 2000);
    n = host_add(
        hs, n,
        HP("node_uname_info{%s%sdomainname=\"(none)\",machine=\"x86_64\",nodename=\"gpu-node\","
           "release=\"6.1.0-18-amd64\",sysname=\"Linux\",version=\"#1 SMP PREEMPT_DYNAMIC Debian 6.1.76-1\"}",
           id, sep),
        H_CONST, 0, 1, 0);
    n = host_add(hs, n,
                 HP("node_os_info{%s%sid=\"debian\",name=\"Debian GNU/Linux\",version_id=\"12\"}", id, sep),
                 H_CONST, 0, 1, 0);
#undef HP
    return n;
}
#define MAX_HOST_SERIES 600

static void host_init(node *nd) {
    for (size_t i = 0; i < nd->nh; i++) {
        hspec *h = &nd->hs[i];
        hstate *s = &nd->hst[i];
        switch (h->kind) {
        case H_CPU: s->v = (double)(rnd(&nd->r) % 100000000) / 100; break;
        case H_WALK: s->v = h->a * h->arg; break;
        case H_COUNTER: s->v = floor(unif(&nd->r) * 1e11); break;
        case H_PACKETS: s->v = floor(nd->hst[h->arg].v / h->a); break;
        case H_RARE: s->v = (double)(rnd(&nd->r) % 3 ? 0 : rnd(&nd->r) % 100); break;
        case H_MS_COUNTER: s->v = (double)(rnd(&nd->r) % 1000000000); break;
        case H_US_COUNTER: s->v = (double)(rnd(&nd->r) % 100000000000ull); break;
        case H_LOAD: s->v = 2; break;
        case H_FS_AVAIL: s->v = floor((h->a + unif(&nd->r) * (h->b - h->a)) / 4096) * 4096; break;
        default: s->v = h->a; break;
        }
    }
}

/* Moves the host series by dt seconds at GPU load `load` (0..1). */
static void host_step(node *nd, double dt, double load, double t_s) {
    rng *r = &nd->r;
    /* CPU: per CPU a busy fraction following load, ticks of 1/100 s */
    for (int c = 0; c < NCPUS; c++) {
        double target = 0.03 + 0.55 * load * (0.7 + 0.6 * (double)((c * 7919) % 13) / 12);
        nd->cpu_busy[c] += (target - nd->cpu_busy[c]) * 0.3 + 0.02 * gauss(r);
        if (nd->cpu_busy[c] < 0.005) nd->cpu_busy[c] = 0.005;
        if (nd->cpu_busy[c] > 0.98) nd->cpu_busy[c] = 0.98;
    }
    for (size_t i = 0; i < nd->nh; i++) {
        hspec *h = &nd->hs[i];
        hstate *s = &nd->hst[i];
        double d;
        switch (h->kind) {
        case H_CPU: {
            int c = h->arg / 8, m = h->arg % 8;
            double b = nd->cpu_busy[c], ticks = dt * 100, frac;
            switch (m) {
            case 0: frac = 1 - b; break;                       /* idle */
            case 1: frac = b * 0.02; break;                    /* iowait */
            case 2: frac = 0; break;                           /* irq */
            case 3: frac = (c % 5 == 0) ? b * 0.01 : 0; break; /* nice */
            case 4: frac = b * 0.03; break;                    /* softirq */
            case 5: frac = 0; break;                           /* steal */
            case 6: frac = b * 0.22; break;                    /* system */
            default: frac = b * 0.72; break;                   /* user */
            }
            d = round(ticks * frac + (frac > 0 ? 0.8 * gauss(r) : 0));
            if (d > 0) s->v = round(s->v * 100 + d) / 100;
            break;
        }
        case H_WALK: {
            double units = round(s->v / h->arg) + round(h->b * gauss(r));
            if (units < 0) units = 0;
            s->v = units * h->arg;
            break;
        }
        case H_SMALL_NOISE: {
            double x = round(h->a * (1 + 0.1 * gauss(r)) + (h->a < 5 ? gauss(r) : 0));
            s->v = x < 0 ? 0 : x;
            break;
        }
        case H_COUNTER:
            d = (h->a + h->b * load) * dt * (1 + 0.25 * gauss(r));
            if (d > 0) s->v += floor(d);
            break;
        case H_PACKETS: {
            double src = nd->hst[h->arg].v;
            if (s->prev_src > 0 && src > s->prev_src) s->v += floor((src - s->prev_src) / h->a);
            s->prev_src = src;
            break;
        }
        case H_RARE:
            if (unif(r) < h->a) s->v += 1;
            break;
        case H_MS_COUNTER:
            d = (h->a + h->b * load) * dt * (1 + 0.3 * gauss(r));
            if (d > 0) s->v += floor(d);
            break;
        case H_US_COUNTER:
            d = (h->a + h->b * load) * dt * (1 + 0.3 * gauss(r));
            if (d > 0) s->v += floor(d);
            break;
        case H_LOAD: {
            double running = NCPUS * (0.05 + 0.5 * load) + 2 * gauss(r);
            s->v += (running - s->v) * h->a;
            if (s->v < 0) s->v = 0;
            break;
        }
        case H_FS_AVAIL:
            if (unif(r) < 0.3) s->v -= 4096 * (double)(rnd(r) % 64);
            if (unif(r) < 0.0005) s->v = floor(h->b / 4096) * 4096;
            break;
        case H_TIME: s->v = t_s + (double)(rnd(r) % 2000000) * 1e-9; break;
        case H_TEMP: s->v = round((h->a + h->b * load + 0.7 * gauss(r)) * 8) / 8; break;
        default: break;
        }
    }
}

static double host_value(const node *nd, size_t i) {
    const hspec *h = &nd->hs[i];
    double v = nd->hst[i].v;
    switch (h->kind) {
    case H_MS_COUNTER: return v / 1000;
    case H_US_COUNTER: return v / 1e6;
    case H_LOAD: return dec(v, 100);
    default: return v;
    }
}

/* ---- GPU values --------------------------------------------------------- */

static double gpu_value(const node *nd, unsigned gi, const sim_gpu_state *g, const gspec *s, double dt) {
    const gpu_prev *p = &nd->prev[gi];
    const sim_model *m = sim_node_config(nd->sim)->model;
    switch (s->src) {
    case G_CLOCK_SM: return floor(g->clock_sm);
    case G_CLOCK_MEM: return floor(g->clock_mem);
    case G_TEMP_MEM: return floor(g->temp_mem);
    case G_TEMP_GPU: return floor(g->temp_gpu);
    case G_POWER: return floor(g->power_w * 1000) / 1000;
    case G_ENERGY: return floor(g->energy_mj);
    case G_PCIE_REPLAY: return g->pcie_replay;
    case G_UTIL_GPU: return floor(g->util_gpu);
    case G_UTIL_MEM: return floor(g->util_mem);
    case G_ENC: return floor(g->enc_util);
    case G_DEC: return floor(g->dec_util);
    case G_ENC_RATIO: return floor(g->enc_util) / 100.0;
    case G_DEC_RATIO: return floor(g->dec_util) / 100.0;
    case G_LAST_XID: return g->last_xid;
    case G_VIOL_NS: return (double)g->violation_ns[s->arg];
    case G_VIOL_S: return (double)g->violation_ns[s->arg] * 1e-9;
    case G_FB_FREE: return (double)((g->mem_total_bytes - g->mem_reserved_bytes - g->mem_used_bytes) >> 20);
    case G_FB_USED: return (double)(g->mem_used_bytes >> 20);
    case G_FB_RESERVED: return (double)(g->mem_reserved_bytes >> 20);
    case G_ECC: {
        const uint64_t e[4] = {g->ecc_sbe_vol, g->ecc_dbe_vol, g->ecc_sbe_agg, g->ecc_dbe_agg};
        return (double)e[s->arg];
    }
    case G_RETIRED_SBE: return g->retired_sbe;
    case G_RETIRED_DBE: return g->retired_dbe;
    case G_RETIRED_PENDING: return g->retired_pending;
    case G_NVL_ERR_TOTAL: {
        uint64_t sum = 0;
        for (unsigned l = 0; l < g->nvlink_count; l++) sum += g->nvl_err[l][s->arg];
        return (double)sum;
    }
    case G_NVL_ERR_LINK: return (double)g->nvl_err[s->arg][SIM_NVL_CRC_FLIT];
    case G_NVL_BYTES:
    case G_NVL_KIB_TOTAL:
    case G_NVL_RATE: {
        uint64_t sum = 0, psum = 0;
        for (unsigned l = 0; l < g->nvlink_count; l++) {
            if (s->src == G_NVL_KIB_TOTAL || s->arg == 0) sum += g->nvl_tx_bytes[l], psum += p->nvl_tx[l];
            if (s->src == G_NVL_KIB_TOTAL || s->arg == 1) sum += g->nvl_rx_bytes[l], psum += p->nvl_rx[l];
        }
        if (s->src == G_NVL_BYTES) return (double)(sum >> 10 << 10);
        if (s->src == G_NVL_KIB_TOTAL) return (double)(sum >> 10);
        return (double)((sum - psum) >> 10) * 1024 / dt;
    }
    case G_NVL_LINK_RATE: {
        unsigned l = (unsigned)s->arg / 2;
        uint64_t now = s->arg % 2 ? g->nvl_rx_bytes[l] : g->nvl_tx_bytes[l];
        uint64_t was = s->arg % 2 ? p->nvl_rx[l] : p->nvl_tx[l];
        return floor((double)(now - was) / dt);
    }
    case G_CONST: return s->arg;
    case G_REMAP_UNC: return g->remap_unc;
    case G_REMAP_COR: return g->remap_cor;
    case G_REMAP_PENDING: return g->remap_pending;
    case G_REMAP_FAILED: return g->remap_failure;
    case G_ACT: return (g->act_int[s->arg] - p->act_int[s->arg]) / dt;
    case G_PCIE_RATE: {
        uint64_t now = s->arg ? g->pcie_rx_bytes : g->pcie_tx_bytes, was = s->arg ? p->pcie_rx : p->pcie_tx;
        return (double)(now - was) / dt / 1048576.0 * 1048576.0;
    }
    case G_PCIE_BYTES: return (double)(s->arg ? g->pcie_rx_bytes : g->pcie_tx_bytes);
    case G_PLIMIT: return g->power_limit_mw / 1000.0;
    case G_CLOCK_MAX: {
        const unsigned mhz[4] = {m->sm_clock_max_mhz, m->sm_clock_max_mhz, m->mem_clock_max_mhz,
                                 m->video_clock_max_mhz};
        return mhz[s->arg] * 1e6;
    }
    case G_REASON: return (g->reasons >> s->arg) & 1 ? 1 : 0;
    default: return 0;
    }
}

static void gpu_remember(node *nd) {
    for (unsigned i = 0; i < nd->ngpu; i++) {
        const sim_gpu_state *g = sim_node_gpu(nd->sim, i);
        gpu_prev *p = &nd->prev[i];
        memcpy(p->act_int, g->act_int, sizeof p->act_int);
        p->pcie_tx = g->pcie_tx_bytes;
        p->pcie_rx = g->pcie_rx_bytes;
        memcpy(p->nvl_tx, g->nvl_tx_bytes, sizeof p->nvl_tx);
        memcpy(p->nvl_rx, g->nvl_rx_bytes, sizeof p->nvl_rx);
    }
}

/* ---- node setup --------------------------------------------------------- */

static void node_init(node *nd, unsigned idx, const opts *o, int with_target) {
    sim_config cfg;
    sim_config_init(&cfg);
    cfg.seed = mix64(o->seed * 1000003 + idx);
    cfg.workload = idx % 8 == 6   ? SIM_WORKLOAD_IDLE
                   : idx % 4 == 3 ? SIM_WORKLOAD_INFERENCE
                                  : SIM_WORKLOAD_TRAINING;
    char err[256];
    if (sim_node_new(&cfg, &nd->sim, err, sizeof err)) die(err);
    nd->ngpu = sim_node_gpu_count(nd->sim);
    nd->r.s = mix64(cfg.seed ^ 0x5bd1e995) | 1;
    nd->offset_ms =
        (int64_t)(mix64(cfg.seed + 17) % (uint64_t)(o->interval_ms > 100 ? o->interval_ms - 100 : 1));

    char host[32], target[96] = "";
    snprintf(host, sizeof host, "node-%04u", idx);
    if (with_target) snprintf(target, sizeof target, "instance=\"%s\",job=\"gpu-node\"", host);

    /* GPU series specs */
    size_t ng = 0;
    for (size_t i = 0; i < N_GPU_FIXED; i++) nd->gs[ng++] = gpu_fixed[i];
    static char extra_viol[6][48];
    static const char *link_names[SIM_MAX_NVLINKS][3];
    static char link_store[SIM_MAX_NVLINKS][3][64];
    for (int k = 0; k < 6; k++) {
        snprintf(extra_viol[k], sizeof extra_viol[k], "policy=\"%s\"", viol_policy[k]);
        nd->gs[ng++] = (gspec){viol_dcgm[k], "", G_VIOL_NS, k};
        nd->gs[ng++] = (gspec){"kelvin_gpu_violation_seconds_total", extra_viol[k], G_VIOL_S, k};
    }
    const sim_gpu_state *g0 = sim_node_gpu(nd->sim, 0);
    unsigned links = g0 && o->per_link ? g0->nvlink_count : 0;
    for (unsigned l = 0; l < links; l++) {
        snprintf(link_store[l][0], sizeof link_store[l][0], "DCGM_FI_PROF_NVLINK_L%u_TX_BYTES", l);
        snprintf(link_store[l][1], sizeof link_store[l][1], "DCGM_FI_PROF_NVLINK_L%u_RX_BYTES", l);
        snprintf(link_store[l][2], sizeof link_store[l][2], "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_L%u", l);
        for (int k = 0; k < 3; k++) link_names[l][k] = link_store[l][k];
        nd->gs[ng++] = (gspec){link_names[l][0], "", G_NVL_LINK_RATE, (int)l * 2};
        nd->gs[ng++] = (gspec){link_names[l][1], "", G_NVL_LINK_RATE, (int)l * 2 + 1};
        nd->gs[ng++] = (gspec){link_names[l][2], "", G_NVL_ERR_LINK, (int)l};
    }
    nd->gs[ng++] = (gspec){"kelvin_gpu_info", "", G_CONST, 1};
    nd->ng = ng;

    const sim_model *m = cfg.model;
    nd->gprefix = xmalloc(sizeof(char *) * ng * nd->ngpu);
    for (unsigned gi = 0; gi < nd->ngpu; gi++) {
        char uuid[64], serial[32], lab[768];
        unsigned dom, bus, dev;
        if (sim_gpu_uuid(nd->sim, gi, uuid, sizeof uuid) < 0 ||
            sim_gpu_serial(nd->sim, gi, serial, sizeof serial) < 0 ||
            sim_gpu_pci(nd->sim, gi, &dom, &bus, &dev))
            die("sim identity");
        snprintf(
            lab, sizeof lab,
            "gpu=\"%u\",UUID=\"%s\",pci_bus_id=\"%08X:%02X:%02X.0\",device=\"nvidia%u\",modelName=\"%s\","
            "Hostname=\"%s\",DCGM_FI_DRIVER_VERSION=\"%s\"%s%s",
            gi, uuid, dom, bus, dev, gi, m->name, host, cfg.driver_version, *target ? "," : "", target);
        for (size_t s = 0; s < ng; s++) {
            char p[1400];
            const gspec *sp = &nd->gs[s];
            if (sp->src == G_CONST && sp->arg == 1 && !strcmp(sp->name, "kelvin_gpu_info"))
                snprintf(p, sizeof p,
                         "%s{%s,driver_version=\"%s\",nvml_version=\"12.%s\",brand=\"NVIDIA\",serial=\"%s\","
                         "vbios_version=\"%s\"}",
                         sp->name, lab, cfg.driver_version, cfg.driver_version, serial, m->vbios);
            else
                snprintf(p, sizeof p, "%s{%s%s%s}", sp->name, lab, *sp->extra ? "," : "", sp->extra);
            nd->gprefix[gi * ng + s] = xstrdup(p);
        }
    }
    nd->hs = xmalloc(sizeof(hspec) * MAX_HOST_SERIES);
    nd->nh = host_build(nd->hs, target, &nd->r);
    if (nd->nh > MAX_HOST_SERIES) die("host series overflow");
    nd->hst = xmalloc(sizeof(hstate) * nd->nh);
    for (int c = 0; c < NCPUS; c++) nd->cpu_busy[c] = 0.1;
    host_init(nd);
    gpu_remember(nd);
}

static size_t node_series(const node *nd) {
    return nd->ng * nd->ngpu + nd->nh;
}

/* Steps the node to model time t_model and the host by dt. */
static void node_step(node *nd, double t_model, double dt, double t_s) {
    gpu_remember(nd);
    if (sim_node_step(nd->sim, t_model)) die("sim step");
    double load = 0;
    for (unsigned i = 0; i < nd->ngpu; i++) load += sim_node_gpu(nd->sim, i)->util_gpu / 100.0;
    load = nd->ngpu ? load / nd->ngpu : 0;
    host_step(nd, dt, load, t_s);
}

/* ---- output ------------------------------------------------------------- */

static void put_sample(base_buf *b, const char *prefix, double v, int64_t ts, int fmt_om) {
    char num[BASE_FMT_DOUBLE_MAX];
    base_buf_puts(b, prefix);
    base_buf_putc(b, ' ');
    size_t n = base_fmt_double_g(num, v);
    base_buf_append(b, num, n);
    if (ts >= 0) {
        base_buf_putc(b, ' ');
        if (fmt_om) {
            char t[48];
            int k = snprintf(t, sizeof t, "%lld.%03lld", (long long)(ts / 1000), (long long)(ts % 1000));
            base_buf_append(b, t, (size_t)k);
        } else {
            base_buf_i64(b, ts);
        }
    }
    base_buf_putc(b, '\n');
}

/* Renders every series of the node at ts (-1: none). Returns the count. */
static size_t node_render(node *nd, base_buf *b, int64_t ts, int fmt_om, double dt) {
    size_t n = 0;
    for (unsigned gi = 0; gi < nd->ngpu; gi++) {
        const sim_gpu_state *g = sim_node_gpu(nd->sim, gi);
        for (size_t s = 0; s < nd->ng; s++, n++)
            put_sample(b, nd->gprefix[gi * nd->ng + s], gpu_value(nd, gi, g, &nd->gs[s], dt), ts, fmt_om);
    }
    for (size_t i = 0; i < nd->nh; i++, n++) put_sample(b, nd->hs[i].prefix, host_value(nd, i), ts, fmt_om);
    return n;
}

static void flush(base_buf *b, FILE *f) {
    if (base_buf_err(b)) die("buffer");
    if (b->len && fwrite(b->data, 1, b->len, f) != b->len) die("write failed");
    base_buf_reset(b);
}

/* Prometheus-like scrape jitter of node n at scrape i, ms. */
static int64_t jitter(uint64_t seed, unsigned n, uint64_t i) {
    uint64_t h = mix64(seed ^ mix64(((uint64_t)n << 40) ^ i));
    if (h % 50 == 0) return 3 + (int64_t)((h >> 8) % 40); /* a slow scrape */
    return 0;                                             /* within 2 ms: aligned */
}

static int parse_u64_arg(const char *s, uint64_t *ret) {
    return base_parse_u64(s, strlen(s), ret);
}

static void usage(void) {
    fprintf(stderr,
            "usage: bench_tsdb_gen [--nodes N] [--hours H] [--interval-ms MS] [--start-ms MS] [--seed S]\n"
            "                      [--format openmetrics|text] [--out FILE] [--stats FILE]\n"
            "                      [--bodies DIR --rounds R] [--per-link 0|1]\n");
    exit(2);
}

int main(int argc, char **argv) {
    opts o = {.nodes = 2,
              .hours = 24,
              .interval_ms = 15000,
              .start_ms = 1704110400000LL,
              .openmetrics = 1,
              .seed = 1,
              .per_link = 1};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        uint64_t u;
        if (!v) usage();
        if (!strcmp(a, "--nodes")) {
            if (parse_u64_arg(v, &u) || u < 1 || u > MAX_NODES) usage();
            o.nodes = (unsigned)u;
        } else if (!strcmp(a, "--hours")) {
            if (base_parse_double(v, strlen(v), &o.hours) || !(o.hours > 0) || o.hours > 24 * 366) usage();
        } else if (!strcmp(a, "--interval-ms")) {
            if (parse_u64_arg(v, &u) || u < 100 || u > 3600000) usage();
            o.interval_ms = (int64_t)u;
        } else if (!strcmp(a, "--start-ms")) {
            if (parse_u64_arg(v, &u) || u > (uint64_t)1 << 50) usage();
            o.start_ms = (int64_t)u;
        } else if (!strcmp(a, "--seed")) {
            if (parse_u64_arg(v, &o.seed)) usage();
        } else if (!strcmp(a, "--format")) {
            if (!strcmp(v, "openmetrics"))
                o.openmetrics = 1;
            else if (!strcmp(v, "text"))
                o.openmetrics = 0;
            else
                usage();
        } else if (!strcmp(a, "--per-link")) {
            if (parse_u64_arg(v, &u) || u > 1) usage();
            o.per_link = (int)u;
        } else if (!strcmp(a, "--out")) {
            o.out = v;
        } else if (!strcmp(a, "--stats")) {
            o.stats = v;
        } else if (!strcmp(a, "--bodies")) {
            o.bodies = v;
        } else if (!strcmp(a, "--rounds")) {
            if (parse_u64_arg(v, &u) || u < 1 || u > 100000) usage();
            o.rounds = (unsigned)u;
        } else {
            usage();
        }
        i++;
    }
    if (o.bodies && !o.rounds) usage();

    node *nodes = xmalloc(sizeof(node) * o.nodes);
    for (unsigned n = 0; n < o.nodes; n++) node_init(&nodes[n], n, &o, !o.bodies);
    size_t series = 0;
    for (unsigned n = 0; n < o.nodes; n++) series += node_series(&nodes[n]);
    double dt = (double)o.interval_ms / 1000;
    base_buf b;
    base_buf_init(&b, 0);
    uint64_t samples = 0, bytes = 0;
    int64_t mint = INT64_MAX, maxt = INT64_MIN;

    if (o.bodies) {
        if (mkdir(o.bodies, 0755) && errno != EEXIST) die("cannot create the bodies directory");
        for (unsigned k = 0; k < o.rounds; k++) {
            char path[4096];
            snprintf(path, sizeof path, "%s/%u", o.bodies, k);
            if (mkdir(path, 0755) && errno != EEXIST) die("cannot create a round directory");
            for (unsigned n = 0; n < o.nodes; n++) {
                node_step(&nodes[n], (k + 1) * dt, dt, (double)o.start_ms / 1000 + k * dt);
                snprintf(path, sizeof path, "%s/%u/node-%04u.txt", o.bodies, k, n);
                FILE *f = fopen(path, "w");
                if (!f) die("cannot write a body");
                samples += node_render(&nodes[n], &b, -1, 0, dt);
                bytes += b.len;
                flush(&b, f);
                if (fclose(f)) die("write failed");
            }
        }
    } else {
        FILE *f = stdout;
        if (o.out && !(f = fopen(o.out, "w"))) die("cannot open --out");
        uint64_t steps = (uint64_t)(o.hours * 3600000.0 / (double)o.interval_ms);
        for (uint64_t i = 0; i < steps; i++) {
            for (unsigned n = 0; n < o.nodes; n++) {
                int64_t ts =
                    o.start_ms + nodes[n].offset_ms + (int64_t)i * o.interval_ms + jitter(o.seed, n, i);
                node_step(&nodes[n], (double)(i + 1) * dt, dt, (double)ts / 1000);
                samples += node_render(&nodes[n], &b, ts, o.openmetrics, dt);
                if (ts < mint) mint = ts;
                if (ts > maxt) maxt = ts;
                if (b.len > (1u << 20)) bytes += b.len, flush(&b, f);
            }
        }
        if (o.openmetrics) base_buf_puts(&b, "# EOF\n");
        bytes += b.len;
        flush(&b, f);
        if (f != stdout ? fclose(f) : fflush(f)) die("write failed");
    }
    fprintf(stderr, "tsdb_gen: %u nodes, %zu series, %llu samples, %llu bytes\n", o.nodes, series,
            (unsigned long long)samples, (unsigned long long)bytes);
    if (o.stats) {
        FILE *s = fopen(o.stats, "w");
        if (!s) die("cannot write --stats");
        fprintf(s, "series %zu\nsamples %llu\nmint %lld\nmaxt %lld\nbytes %llu\n", series,
                (unsigned long long)samples, (long long)(mint == INT64_MAX ? 0 : mint),
                (long long)(maxt == INT64_MIN ? 0 : maxt), (unsigned long long)bytes);
        if (fclose(s)) die("write failed");
    }
    base_buf_free(&b);
    for (unsigned n = 0; n < o.nodes; n++) {
        for (size_t i = 0; i < nodes[n].ng * nodes[n].ngpu; i++) free(nodes[n].gprefix[i]);
        free(nodes[n].gprefix);
        for (size_t i = 0; i < nodes[n].nh; i++) free(nodes[n].hs[i].prefix);
        free(nodes[n].hs);
        free(nodes[n].hst);
        sim_node_free(nodes[n].sim);
    }
    free(nodes);
    return 0;
}
