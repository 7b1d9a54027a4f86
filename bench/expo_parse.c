/* bench/expo_parse.c -- speed of the exposition parser (src/expo/parse.c):
 * nanoseconds per sample for text 0.0.4 and OpenMetrics over a realistic
 * scrape body, or over body files named on the command line.
 *
 * Design. With no arguments it generates what `kelvin agent` serves on a
 * node with 8 simulated GPUs: about 1,000 DCGM_FI_* series, each with the
 * dcgm-exporter labels (gpu, UUID, pci_bus_id, device, modelName, Hostname,
 * DCGM_FI_DRIVER_VERSION; some add a MIG or process label), plus node_*
 * host series (cpu, filesystem, network), each family with HELP and TYPE.
 * The same samples are rendered in both formats. Each body is parsed
 * repeatedly (walking every entry and touching every label, as the scrape
 * loop does) for about -s seconds (default 1) of CPU time per round; the
 * best of -r (default 5) rounds is printed, in ns of the thread's CPU time
 * per sample (the measure of issue #4, and steadier than wall time on a
 * shared machine) and MB/s.
 *
 *   build/bench_expo_parse                  # generated bodies
 *   build/bench_expo_parse -r 9 -s 2        # more and longer rounds
 *   build/bench_expo_parse -f om            # one format only (text|om)
 *   build/bench_expo_parse body.prom [body.om]   # .om files: OpenMetrics
 *
 * Owned by the expo module; only reads, never writes files.
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/buf.h"
#include "base/err.h"
#include "expo/parse.h"

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void putf(base_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void putf(base_buf *b, const char *fmt, ...) {
    char tmp[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n > 0) base_buf_append(b, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

static const char *const dcgm_metrics[] = {
    "DCGM_FI_DEV_SM_CLOCK",
    "DCGM_FI_DEV_MEM_CLOCK",
    "DCGM_FI_DEV_MEMORY_TEMP",
    "DCGM_FI_DEV_GPU_TEMP",
    "DCGM_FI_DEV_POWER_USAGE",
    "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
    "DCGM_FI_DEV_PCIE_REPLAY_COUNTER",
    "DCGM_FI_DEV_GPU_UTIL",
    "DCGM_FI_DEV_MEM_COPY_UTIL",
    "DCGM_FI_DEV_ENC_UTIL",
    "DCGM_FI_DEV_DEC_UTIL",
    "DCGM_FI_DEV_XID_ERRORS",
    "DCGM_FI_DEV_FB_FREE",
    "DCGM_FI_DEV_FB_USED",
    "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL",
    "DCGM_FI_DEV_VGPU_LICENSE_STATUS",
    "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS",
    "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS",
    "DCGM_FI_DEV_ROW_REMAP_FAILURE",
    "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
    "DCGM_FI_PROF_SM_ACTIVE",
    "DCGM_FI_PROF_SM_OCCUPANCY",
    "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
    "DCGM_FI_PROF_DRAM_ACTIVE",
    "DCGM_FI_PROF_PIPE_FP64_ACTIVE",
    "DCGM_FI_PROF_PIPE_FP32_ACTIVE",
    "DCGM_FI_PROF_PIPE_FP16_ACTIVE",
    "DCGM_FI_PROF_PCIE_TX_BYTES",
    "DCGM_FI_PROF_PCIE_RX_BYTES",
    "DCGM_FI_PROF_NVLINK_TX_BYTES",
    "DCGM_FI_PROF_NVLINK_RX_BYTES",
    "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS",
    "DCGM_FI_DEV_POWER_MGMT_LIMIT",
    "DCGM_FI_DEV_FAN_SPEED",
    "DCGM_FI_DEV_PSTATE",
    "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL",
    "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL",
    "DCGM_FI_DEV_ECC_SBE_AGG_TOTAL",
    "DCGM_FI_DEV_ECC_DBE_AGG_TOTAL",
    "DCGM_FI_DEV_RETIRED_SBE",
    "DCGM_FI_DEV_RETIRED_DBE",
    "DCGM_FI_DEV_RETIRED_PENDING",
    "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL",
    "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL",
    "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL",
    "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL",
    "DCGM_FI_DEV_FB_TOTAL",
    "DCGM_FI_DEV_FB_RESERVED",
    "DCGM_FI_DEV_SLOWDOWN_TEMP",
    "DCGM_FI_DEV_SHUTDOWN_TEMP",
    "DCGM_FI_DEV_ENFORCED_POWER_LIMIT",
    "DCGM_FI_DEV_POWER_VIOLATION",
    "DCGM_FI_DEV_THERMAL_VIOLATION",
    "DCGM_FI_DEV_SYNC_BOOST_VIOLATION",
    "DCGM_FI_DEV_BOARD_LIMIT_VIOLATION",
    "DCGM_FI_DEV_LOW_UTIL_VIOLATION",
    "DCGM_FI_DEV_RELIABILITY_VIOLATION",
    "DCGM_FI_DEV_COUNT",
    "DCGM_FI_DEV_MIG_MODE",
    "DCGM_FI_DEV_BAR1_USED",
    "DCGM_FI_DEV_BAR1_FREE",
    "DCGM_FI_DEV_BAR1_TOTAL",
    "DCGM_FI_DEV_NVLINK_BANDWIDTH_L0",
    "DCGM_FI_DEV_NVLINK_BANDWIDTH_L1",
    "DCGM_FI_DEV_NVLINK_BANDWIDTH_L2",
    "DCGM_FI_DEV_NVLINK_BANDWIDTH_L3",
    "DCGM_FI_DEV_NVLINK_BANDWIDTH_L4",
    "DCGM_FI_DEV_NVLINK_BANDWIDTH_L5",
    "DCGM_FI_DEV_NVLINK_BANDWIDTH_L6",
    "DCGM_FI_DEV_NVLINK_BANDWIDTH_L7",
    "DCGM_FI_DEV_NVLINK_BANDWIDTH_L8",
    "DCGM_FI_DEV_NVLINK_BANDWIDTH_L9",
    "DCGM_FI_DEV_NVLINK_BANDWIDTH_L10",
    "DCGM_FI_DEV_NVLINK_BANDWIDTH_L11",
    "DCGM_FI_DEV_NVLINK_BANDWIDTH_L12",
    "DCGM_FI_DEV_NVLINK_BANDWIDTH_L13",
    "DCGM_FI_DEV_NVLINK_BANDWIDTH_L14",
    "DCGM_FI_DEV_NVLINK_BANDWIDTH_L15",
    "DCGM_FI_DEV_NVLINK_BANDWIDTH_L16",
    "DCGM_FI_DEV_NVLINK_BANDWIDTH_L17",
    "DCGM_FI_DEV_VIDEO_CLOCK",
    "DCGM_FI_DEV_APP_SM_CLOCK",
    "DCGM_FI_DEV_APP_MEM_CLOCK",
    "DCGM_FI_DEV_MAX_SM_CLOCK",
    "DCGM_FI_DEV_MAX_MEM_CLOCK",
    "DCGM_FI_DEV_MAX_VIDEO_CLOCK",
    "DCGM_FI_DEV_PCIE_LINK_GEN",
    "DCGM_FI_DEV_PCIE_LINK_WIDTH",
    "DCGM_FI_DEV_PCIE_MAX_LINK_GEN",
    "DCGM_FI_DEV_PCIE_MAX_LINK_WIDTH",
    "DCGM_FI_DEV_POWER_USAGE_INSTANT",
    "DCGM_FI_DEV_GPU_MAX_OP_TEMP",
    "DCGM_FI_DEV_MEM_MAX_OP_TEMP",
    "DCGM_FI_DEV_ACCOUNTING_DATA",
    "DCGM_FI_DEV_PERSISTENCE_MODE",
    "DCGM_FI_DEV_COMPUTE_MODE",
    "DCGM_FI_DEV_VIRTUAL_MODE",
    "DCGM_FI_DEV_CUDA_COMPUTE_CAPABILITY",
    "DCGM_FI_DEV_SERIAL_HASH",
    "DCGM_FI_DEV_NVML_INDEX",
    "DCGM_FI_DEV_NUMA_NODE",
    "DCGM_FI_DEV_CPU_AFFINITY_0",
    "DCGM_FI_DEV_ENERGY_DELTA",
    "DCGM_FI_DEV_CLOCKS_EVENT_REASONS",
    "DCGM_FI_DEV_HW_SLOWDOWN",
    "DCGM_FI_DEV_SW_THERMAL_SLOWDOWN",
    "DCGM_FI_DEV_GPU_NVLINK_ERRORS",
    "DCGM_FI_DEV_NVSWITCH_FATAL_ERRORS",
    "DCGM_FI_DEV_NVSWITCH_NON_FATAL_ERRORS",
    "DCGM_FI_DEV_C2C_LINK_COUNT",
    "DCGM_FI_DEV_C2C_LINK_STATUS",
    "DCGM_FI_DEV_MEMORY_UTIL",
    "DCGM_FI_DEV_DIAG_MEMORY_RESULT",
    "DCGM_FI_DEV_DIAG_PCIE_RESULT",
    "DCGM_FI_DEV_THROTTLE_HW_POWER_BRAKE",
    "DCGM_FI_DEV_CLOCK_THROTTLE_SW_POWER",
};
#define NDCGM (sizeof dcgm_metrics / sizeof dcgm_metrics[0])
#define NGPU  8

/* One value in a form dcgm-exporter or node_exporter writes. */
static void put_value(base_buf *b, unsigned k) {
    switch (k % 6) {
    case 0: putf(b, "%u", 1000 + k * 7 % 1000); break;
    case 1: putf(b, "%u", k % 100); break;
    case 2: putf(b, "%u.%02u", k % 400, k % 97); break;
    case 3: putf(b, "%.6f", (double)(k % 1000) / 1024.0); break;
    case 4: putf(b, "%.17g", 1.0e9 + k * 1234.5678); break;
    default: putf(b, "0"); break;
    }
}

/* Renders the node's body in text (om = 0) or OpenMetrics (om = 1). */
static void gen_body(base_buf *b, int om, size_t *ret_samples) {
    size_t n = 0;
    unsigned k = 0;
    for (size_t m = 0; m < NDCGM; m++) {
        putf(b, "# HELP %s Generated %s (simulated).\n", dcgm_metrics[m], dcgm_metrics[m] + 8);
        putf(b, "# TYPE %s gauge\n", dcgm_metrics[m]);
        for (unsigned g = 0; g < NGPU; g++, n++, k++) {
            putf(b,
                 "%s{gpu=\"%u\",UUID=\"GPU-%08x-%04x-4%03x-a%03x-%012llx\",pci_bus_id=\"00000000:%02X:00.0\","
                 "device=\"nvidia%u\",modelName=\"NVIDIA H100 80GB HBM3\",Hostname=\"gpu-node-%03u\","
                 "DCGM_FI_DRIVER_VERSION=\"550.54.15\"",
                 dcgm_metrics[m], g, 0x5fd4d2c8u + g * 0x1111u, 0x0ae2u + g, 0x3d1u + g, 0x0d0u + g,
                 0x2bbb0a4b8f0dULL + g, 0x18 + g * 0x10, g, 17u);
            if (m % 9 == 4) putf(b, ",GPU_I_PROFILE=\"1g.10gb\",GPU_I_ID=\"%u\"", g);
            putf(b, "} ");
            put_value(b, k);
            putf(b, "\n");
        }
    }
    static const char *const modes[] = {"user",   "nice", "system",  "idle",
                                        "iowait", "irq",  "softirq", "steal"};
    putf(b, "# HELP node_cpu_seconds Seconds the CPUs spent in each mode.\n# TYPE node_cpu_seconds %s\n",
         om ? "counter" : "counter");
    for (unsigned c = 0; c < 16; c++)
        for (unsigned md = 0; md < 8; md++, n++, k++) {
            putf(b, "node_cpu_seconds%s{cpu=\"%u\",mode=\"%s\"} ", om ? "_total" : "_total", c, modes[md]);
            put_value(b, k);
            putf(b, "\n");
        }
    static const char *const fsm[] = {"node_filesystem_avail_bytes", "node_filesystem_size_bytes",
                                      "node_filesystem_free_bytes",  "node_filesystem_files",
                                      "node_filesystem_files_free",  "node_filesystem_readonly"};
    for (size_t f = 0; f < 6; f++) {
        putf(b, "# HELP %s Filesystem data.\n# TYPE %s gauge\n", fsm[f], fsm[f]);
        for (unsigned d = 0; d < 5; d++, n++, k++) {
            putf(b, "%s{device=\"/dev/nvme%un1p%u\",fstype=\"ext4\",mountpoint=\"/data%u\"} ", fsm[f], d,
                 d + 1, d);
            put_value(b, k);
            putf(b, "\n");
        }
    }
    static const char *const netm[] = {"node_network_receive_bytes",   "node_network_transmit_bytes",
                                       "node_network_receive_packets", "node_network_transmit_packets",
                                       "node_network_receive_errs",    "node_network_transmit_errs"};
    static const char *const devs[] = {"eth0", "ib0", "ib1", "ib2", "ib3", "lo"};
    for (size_t f = 0; f < 6; f++) {
        putf(b, "# HELP %s Network device statistic.\n# TYPE %s counter\n", netm[f], netm[f]);
        for (size_t d = 0; d < 6; d++, n++, k++) {
            putf(b, "%s_total{device=\"%s\"} ", netm[f], devs[d]);
            put_value(b, k);
            putf(b, "\n");
        }
    }
    static const char *const single[] = {"node_load1",
                                         "node_load5",
                                         "node_load15",
                                         "node_memory_MemTotal_bytes",
                                         "node_memory_MemAvailable_bytes",
                                         "node_boot_time_seconds",
                                         "node_time_seconds",
                                         "node_procs_running"};
    for (size_t s = 0; s < 8; s++, n++, k++) {
        putf(b, "# HELP %s Host statistic.\n# TYPE %s gauge\n%s ", single[s], single[s], single[s]);
        put_value(b, k);
        putf(b, "\n");
    }
    if (om) putf(b, "# EOF\n");
    *ret_samples = n;
}

/* One full parse; returns the number of samples, or -1 with a message. */
static long parse_once(const char *body, size_t len, expo_format fmt, uint64_t *sink) {
    expo_parser p;
    expo_parser_init(&p, body, len, fmt, NULL);
    long n = 0;
    int e;
    uint64_t acc = 0;
    while ((e = expo_parser_next(&p)) > 0) {
        if (e != EXPO_ENTRY_SERIES) continue;
        n++;
        const expo_label *l = expo_parser_labels(&p);
        for (size_t i = 0; i < expo_parser_nlabels(&p); i++) acc += l[i].name.n + l[i].value.n;
        double v = expo_parser_value(&p);
        uint64_t bits;
        memcpy(&bits, &v, sizeof bits);
        acc ^= bits + (uint64_t)expo_parser_name(&p).n;
    }
    if (e < 0) {
        fprintf(stderr, "bench_expo_parse: %s\n", expo_parser_error_at(&p));
        expo_parser_free(&p);
        return -1;
    }
    expo_parser_free(&p);
    *sink += acc;
    return n;
}

static int bench(const char *what, const char *body, size_t len, expo_format fmt, int rounds, double secs) {
    uint64_t sink = 0;
    long ns = parse_once(body, len, fmt, &sink);
    if (ns < 0) return -1;
    double best = 1e30;
    for (int r = 0; r < rounds; r++) {
        long iters = 0;
        double t0 = now(), t;
        do {
            for (int k = 0; k < 20; k++) parse_once(body, len, fmt, &sink);
            iters += 20;
            t = now() - t0;
        } while (t < secs);
        double per = t / (double)iters;
        if (per < best) best = per;
    }
    printf("%-12s %7zu bytes %6ld samples  %7.1f ns/sample  %7.1f MB/s  (best of %d; sink %llu)\n", what, len,
           ns, best * 1e9 / (double)ns, (double)len / best / 1e6, rounds, (unsigned long long)(sink & 0xff));
    return 0;
}

static char *read_file(const char *path, size_t *ret_len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    base_buf b;
    base_buf_init(&b, 0);
    char tmp[65536];
    size_t n;
    while ((n = fread(tmp, 1, sizeof tmp, f)) > 0) base_buf_append(&b, tmp, n);
    fclose(f);
    if (base_buf_err(&b)) {
        base_buf_free(&b);
        return NULL;
    }
    *ret_len = b.len;
    return b.data;
}

int main(int argc, char **argv) {
    int rounds = 5, only = -1; /* -f text|om: one format only */
    double secs = 1.0;
    int a = 1;
    for (; a < argc; a++) {
        if (!strcmp(argv[a], "-r") && a + 1 < argc)
            rounds = atoi(argv[++a]);
        else if (!strcmp(argv[a], "-f") && a + 1 < argc)
            only = !strcmp(argv[++a], "om");
        else if (!strcmp(argv[a], "-s") && a + 1 < argc)
            secs = atof(argv[++a]);
        else
            break;
    }
    if (rounds < 1) rounds = 1;
    int rc = 0;
    if (a == argc) {
        for (int om = 0; om <= 1; om++) {
            if (only >= 0 && om != only) continue;
            base_buf b;
            base_buf_init(&b, 0);
            size_t n;
            gen_body(&b, om, &n);
            if (base_buf_err(&b)) return 1;
            if (bench(om ? "openmetrics" : "text", b.data, b.len, om ? EXPO_FMT_OPENMETRICS : EXPO_FMT_TEXT,
                      rounds, secs))
                rc = 1;
            base_buf_free(&b);
        }
        return rc;
    }
    for (; a < argc; a++) {
        size_t len;
        char *body = read_file(argv[a], &len);
        if (!body) {
            fprintf(stderr, "bench_expo_parse: cannot read %s\n", argv[a]);
            return 1;
        }
        size_t pl = strlen(argv[a]);
        int om = pl > 3 && !strcmp(argv[a] + pl - 3, ".om");
        if (bench(argv[a], body, len, om ? EXPO_FMT_OPENMETRICS : EXPO_FMT_TEXT, rounds, secs)) rc = 1;
        free(body);
    }
    return rc;
}
