/* bench/chunk_bench.c -- bytes per sample and append speed of the chunk
 * codecs (src/tsdb/chunk*.c) on series shaped like a GPU node's metrics,
 * Kelvin's encodings against Prometheus 2.42's XOR chunks, in one run.
 *
 * Data: one node = 8 GPUs (dcgm-exporter fields plus profiling ratios)
 * and node_exporter-like host series, 24 simulated hours at a 15 s
 * interval (5,760 samples a series), values written the way exporters
 * write them (watts to 3 decimals, ratios to 6, CPU seconds to 2, energy
 * in integer mJ, bytes as integers, ...). Timestamps come three ways:
 * exact multiples of 15 s; "prom", as Prometheus 2.42 stores them (scrape
 * jitter, aligned to the interval when within 2 ms, so mostly exact);
 * "jitter", unaligned scrapes (+-5 ms). Every chunk is decoded again and
 * compared bit for bit, so a figure is never printed for a broken codec.
 *
 * Built by CMake as build/bench_chunk_bench; or by hand:
 *   mkdir -p build-bench && cc -O2 -std=c17 -D_GNU_SOURCE -Isrc \
 *     bench/chunk_bench.c src/tsdb/chunk*.c src/base/buf.c src/base/num.c \
 *     src/base/err.c -lm -o build-bench/chunk_bench && build-bench/chunk_bench
 * Options: -h HOURS (24), -c SAMPLES_PER_CHUNK (120), -s SEED (1), -q (totals
 * only), -t (append speed only).
 * It prints one table per timestamp model, then appends/s on one core.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/buf.h"
#include "base/err.h"
#include "tsdb/chunk.h"

#define INTERVAL 15000

/* ---- random numbers ----------------------------------------------------- */

static uint64_t rs = 1;
static uint64_t rnd(void) {
    rs ^= rs >> 12;
    rs ^= rs << 25;
    rs ^= rs >> 27;
    return rs * 0x2545f4914f6cdd1dull;
}
static double unif(void) {
    return (double)(rnd() >> 11) / 9007199254740992.0;
}
static double gauss(void) {
    double u = unif(), v = unif();
    if (u < 1e-300) u = 1e-300;
    return sqrt(-2 * log(u)) * cos(6.283185307179586 * v);
}
static double dec(double x, double scale) {
    return (double)llround(x * scale) / scale;
} /* as text would give */

/* ---- series shapes ------------------------------------------------------ */

typedef struct shape {
    const char *name;
    int per_gpu, per_host; /* series of this shape per GPU / per node */
    void (*gen)(double *v, size_t n, double *load);
} shape;

/* a GPU's load over the day: jobs of 20 min to 4 h, busy or idle */
static void make_load(double *load, size_t n) {
    size_t i = 0;
    while (i < n) {
        size_t len = 80 + rnd() % 900;
        double lv = rnd() % 4 ? 0.6 + 0.4 * unif() : 0.0;
        for (size_t k = 0; k < len && i < n; k++, i++) load[i] = lv;
    }
}

static void g_sm_clock(double *v, size_t n, double *load) {
    for (size_t i = 0; i < n; i++) {
        double c = load[i] > 0 ? 1980 : 1755;
        if (load[i] > 0.9 && (i / 40) % 7 == 3)
            c = 1980 - 15 * (double)(1 + (i / 40) % 5); /* power capping */
        v[i] = c;
    }
}
static void g_const(double *v, size_t n, double *load) {
    (void)load;
    static const double k[] = {81559, 700, 2619, 0, 1, 90, 1410, 350000};
    double c = k[rnd() % 8];
    for (size_t i = 0; i < n; i++) v[i] = c;
}
static void g_zero_counter(double *v, size_t n, double *load) { /* ECC, XID, replays: 0, rare increments */
    (void)load;
    double c = rnd() % 3 ? 0 : (double)(rnd() % 50);
    for (size_t i = 0; i < n; i++) {
        if (rnd() % 4000 == 0) c += 1;
        v[i] = c;
    }
}
static void g_temp(double *v, size_t n, double *load) {
    double t = 35;
    for (size_t i = 0; i < n; i++) {
        double target = 35 + 45 * load[i];
        t += (target - t) * 0.05 + 0.3 * gauss();
        v[i] = round(t);
    }
}
static void g_power(double *v, size_t n, double *load) {
    for (size_t i = 0; i < n; i++) v[i] = dec(70 + 550 * load[i] + (load[i] > 0 ? 12 : 1.5) * gauss(), 1000);
}
static void g_energy(double *v, size_t n, double *load) { /* integer mJ */
    double e = 1e12 * unif();
    for (size_t i = 0; i < n; i++) {
        double p = 70 + 550 * load[i] + (load[i] > 0 ? 12 : 1.5) * gauss();
        e += p * INTERVAL;
        v[i] = floor(e);
    }
}
static void g_util(double *v, size_t n, double *load) {
    for (size_t i = 0; i < n; i++) {
        double u = load[i] > 0 ? 100 * load[i] + 4 * gauss() : 0;
        v[i] = u < 0 ? 0 : u > 100 ? 100 : round(u);
    }
}
static void g_fb_used(double *v, size_t n, double *load) { /* MiB */
    for (size_t i = 0; i < n; i++)
        v[i] = load[i] > 0 ? round(60000 * load[i]) + (double)(rnd() % 3 == 0 ? rnd() % 64 : 0) : 3;
}
static void g_ratio6(double *v, size_t n, double *load) { /* DCGM profiling fields via %f */
    double f = 0.3 + 0.6 * unif();
    for (size_t i = 0; i < n; i++) {
        double x = load[i] * f + 0.01 * gauss();
        v[i] = dec(x < 0 ? 0 : x > 1 ? 1 : x, 1e6);
    }
}
static void g_pcie_rate(double *v, size_t n, double *load) { /* bytes/s, integer, noisy */
    for (size_t i = 0; i < n; i++)
        v[i] = load[i] > 0 ? floor(2e9 * load[i] * (1 + 0.2 * gauss()) + 5e9) : (double)(rnd() % 100000);
}
static void g_nvlink_counter(double *v, size_t n, double *load) {
    double c = floor(1e13 * unif());
    for (size_t i = 0; i < n; i++) {
        c += floor(load[i] * 3e10 * (1 + 0.1 * gauss()) + (load[i] > 0 ? 3e10 : 0));
        v[i] = c;
    }
}
static void g_throttle(double *v, size_t n, double *load) {
    for (size_t i = 0; i < n; i++) v[i] = load[i] > 0.9 && (i / 40) % 7 == 3 ? 4 : load[i] > 0 ? 0 : 1;
}
/* host */
static void g_cpu_busy(double *v, size_t n, double *load) { /* user/system/idle seconds, 2 decimals */
    (void)load;
    double ticks = (double)(rnd() % 100000000), busy = unif();
    for (size_t i = 0; i < n; i++) {
        if (i % 400 == 0) busy = unif();
        double d = 1500 * busy + 40 * gauss();
        ticks += d < 0 ? 0 : round(d);
        v[i] = ticks / 100;
    }
}
static void g_cpu_rare(double *v, size_t n, double *load) { /* iowait/irq/softirq/nice/steal */
    (void)load;
    double ticks = (double)(rnd() % 10000);
    int zero = rnd() % 2;
    for (size_t i = 0; i < n; i++) {
        if (!zero && rnd() % 3 == 0) ticks += (double)(rnd() % 4);
        v[i] = ticks / 100;
    }
}
static void g_mem_bytes(double *v, size_t n, double *load) {
    (void)load;
    double pages = 1e6 + (double)(rnd() % 30000000);
    for (size_t i = 0; i < n; i++) {
        pages += round(300 * gauss());
        v[i] = pages * 4096;
    }
}
static void g_fs_bytes(double *v, size_t n, double *load) {
    (void)load;
    double blocks = (double)(rnd() % 500000000);
    for (size_t i = 0; i < n; i++) {
        if (rnd() % 20 == 0) blocks -= (double)(rnd() % 2000);
        v[i] = blocks * 4096;
    }
}
static void g_net_bytes(double *v, size_t n, double *load) {
    (void)load;
    double c = floor(1e12 * unif()), rate = 1e6 + 1e8 * unif();
    for (size_t i = 0; i < n; i++) {
        double d = rate * 15 * (1 + 0.3 * gauss());
        c += d < 0 ? 0 : floor(d);
        v[i] = c;
    }
}
static void g_disk_seconds(double *v, size_t n, double *load) { /* io time, ms / 1000 */
    (void)load;
    double ms = (double)(rnd() % 1000000000);
    for (size_t i = 0; i < n; i++) {
        ms += (double)(rnd() % 3000);
        v[i] = ms / 1000;
    }
}
static void g_load(double *v, size_t n, double *load) {
    (void)load;
    double l = 4 * unif();
    for (size_t i = 0; i < n; i++) {
        l += 0.1 * gauss();
        if (l < 0) l = 0;
        v[i] = dec(l, 100);
    }
}
static void g_float(double *v, size_t n, double *load) { /* computed floats: no short decimal */
    (void)load;
    double x = unif();
    for (size_t i = 0; i < n; i++) {
        x += 0.001 * gauss();
        v[i] = x / 3;
    }
}

static const shape shapes[] = {
    {"gpu clock MHz (int, rare changes)", 2, 0, g_sm_clock},
    {"gpu constants (memory total, limits)", 6, 0, g_const},
    {"gpu error counters (0, rare +1)", 8, 0, g_zero_counter},
    {"gpu temperature C (int)", 2, 0, g_temp},
    {"gpu power W (3 decimals)", 1, 0, g_power},
    {"gpu energy mJ (int counter)", 1, 0, g_energy},
    {"gpu utilisation % (int)", 3, 0, g_util},
    {"gpu framebuffer MiB (int)", 2, 0, g_fb_used},
    {"gpu profiling ratios (6 decimals)", 8, 0, g_ratio6},
    {"gpu pcie bytes/s (int, noisy)", 2, 0, g_pcie_rate},
    {"gpu nvlink bytes (int counter)", 1, 0, g_nvlink_counter},
    {"gpu throttle reasons (bitmask)", 1, 0, g_throttle},
    {"host cpu seconds busy (2 decimals)", 0, 96, g_cpu_busy},
    {"host cpu seconds rare (2 decimals)", 0, 160, g_cpu_rare},
    {"host memory bytes (int)", 0, 40, g_mem_bytes},
    {"host filesystem bytes (int)", 0, 20, g_fs_bytes},
    {"host network bytes (int counter)", 0, 40, g_net_bytes},
    {"host disk io seconds (3 decimals)", 0, 40, g_disk_seconds},
    {"host load average (2 decimals)", 0, 3, g_load},
    {"host constants (info, sizes)", 0, 120, g_const},
    {"host computed floats (no decimal)", 0, 10, g_float},
};
#define NSHAPES (sizeof shapes / sizeof shapes[0])
#define NGPUS   8

/* ---- timestamps --------------------------------------------------------- */

enum { TS_EXACT, TS_PROM, TS_JITTER, TS_MODELS };
static const char *ts_names[] = {"exact 15 s", "prom (aligned within 2 ms)", "jitter (+-5 ms, unaligned)"};

static void make_ts(int64_t *t, size_t n, int model) {
    int64_t base = 1700000000000 + (int64_t)(rnd() % INTERVAL);
    for (size_t i = 0; i < n; i++) {
        int64_t ideal = base + (int64_t)i * INTERVAL, off = 0;
        if (model == TS_PROM) {
            off = (int64_t)llround(1.2 * gauss());
            if (rnd() % 50 == 0) off += 3 + (int64_t)(rnd() % 40); /* a slow scrape */
            if (off >= -2 && off <= 2) off = 0;
        } else if (model == TS_JITTER) {
            off = (int64_t)(rnd() % 11) - 5;
        }
        t[i] = ideal + off;
    }
}

/* ---- measuring ---------------------------------------------------------- */

typedef struct stats {
    uint64_t bytes, samples, chunks;
    uint64_t enc[256];
} stats;

static double now(void);
static double decode_s[2]; /* time spent decoding: kelvin, xor */
static uint64_t decode_n[2];

static base_buf out;

/* Encodes one series into chunks of max samples, checks the round trip. */
static void encode_series(const int64_t *t, const double *v, size_t n, unsigned max, unsigned flags,
                          stats *st) {
    tsdb_chunk_app a;
    tsdb_chunk_app_init(&a, max, flags);
    size_t start = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i < n && tsdb_chunk_app_append(&a, t[i], v[i]) == 0) continue;
        base_buf_reset(&out);
        if (tsdb_chunk_app_finish(&a, &out)) abort();
        tsdb_chunk_it it;
        double d0 = now();
        double sum = 0;
        tsdb_chunk_it_init(&it, (const uint8_t *)out.data, out.len);
        while (tsdb_chunk_it_next(&it)) sum += it.v;
        decode_s[flags ? 1 : 0] += now() - d0;
        decode_n[flags ? 1 : 0] += i - start;
        if (sum == 1.2345e300) printf("!"); /* keep the loop */
        tsdb_chunk_it_init(&it, (const uint8_t *)out.data, out.len);
        size_t k = start;
        while (tsdb_chunk_it_next(&it)) {
            if (it.t != t[k] || memcmp(&it.v, &v[k], 8)) {
                fprintf(stderr, "chunk_bench: round trip failed at sample %zu\n", k);
                exit(1);
            }
            k++;
        }
        if (k != i || tsdb_chunk_it_err(&it)) {
            fprintf(stderr, "chunk_bench: decode failed\n");
            exit(1);
        }
        st->bytes += out.len;
        st->samples += i - start;
        st->chunks++;
        st->enc[(uint8_t)out.data[0]]++;
        start = i;
        if (i < n && tsdb_chunk_app_append(&a, t[i], v[i])) abort();
    }
    tsdb_chunk_app_free(&a);
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
    double hours = 24;
    unsigned max = TSDB_CHUNK_DEFAULT_SAMPLES;
    int quiet = 0, speed_only = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") && i + 1 < argc)
            hours = atof(argv[++i]);
        else if (!strcmp(argv[i], "-c") && i + 1 < argc)
            max = (unsigned)atoi(argv[++i]);
        else if (!strcmp(argv[i], "-s") && i + 1 < argc)
            rs = (uint64_t)atoll(argv[++i]) * 0x9e3779b97f4a7c15ull + 1;
        else if (!strcmp(argv[i], "-q"))
            quiet = 1;
        else if (!strcmp(argv[i], "-t"))
            speed_only = 1;
        else {
            fprintf(stderr, "usage: chunk_bench [-h HOURS] [-c SAMPLES_PER_CHUNK] [-s SEED] [-q] [-t]\n");
            return 2;
        }
    }
    size_t n = (size_t)(hours * 3600 * 1000 / INTERVAL);
    if (n < 2) n = 2;
    int64_t *t = malloc(n * sizeof *t);
    double *v = malloc(n * sizeof *v), *load = malloc(n * sizeof *load);
    if (!t || !v || !load) return 1;
    base_buf_init(&out, 0);

    printf("chunk_bench: one node (%d GPUs + host), %.0f h at 15 s = %zu samples a series, chunks of %u\n",
           NGPUS, hours, n, max);
    uint64_t total_series = 0;
    for (size_t s = 0; s < NSHAPES; s++)
        total_series += (uint64_t)shapes[s].per_gpu * NGPUS + shapes[s].per_host;
    printf("%llu series a node\n", (unsigned long long)total_series);

    for (int model = 0; model < (speed_only ? 0 : TS_MODELS); model++) {
        uint64_t seed = rs;
        stats tot_x = {0}, tot_k = {0}, gpu_x = {0}, gpu_k = {0};
        if (!quiet) {
            printf("\ntimestamps: %s\n", ts_names[model]);
            printf("%-40s %7s %9s %9s %6s  %s\n", "series", "count", "xor B/s", "kelvin B/s", "ratio",
                   "kelvin encodings");
        }
        for (size_t s = 0; s < NSHAPES; s++) {
            const shape *sh = &shapes[s];
            int count = sh->per_gpu * NGPUS + sh->per_host;
            stats x = {0}, k = {0};
            for (int c = 0; c < count; c++) {
                make_load(load, n);
                make_ts(t, n, model);
                sh->gen(v, n, load);
                encode_series(t, v, n, max, TSDB_CHUNK_PROM_XOR, &x);
                encode_series(t, v, n, max, 0, &k);
            }
            if (!quiet) {
                char encs[160] = "";
                size_t el = 0;
                for (int e = 0; e < 256; e++) {
                    if (!k.enc[e] || el > sizeof encs - 40) continue;
                    el += (size_t)snprintf(encs + el, sizeof encs - el, "%s%s%s %.0f%%", el ? ", " : "",
                                           tsdb_chunk_enc_name((uint8_t)e), e & TSDB_ENC_REGULAR ? "+r" : "",
                                           100.0 * (double)k.enc[e] / (double)k.chunks);
                }
                printf("%-40s %7d %9.3f %9.3f %6.3f  %s\n", sh->name, count,
                       (double)x.bytes / (double)x.samples, (double)k.bytes / (double)k.samples,
                       (double)k.bytes / (double)x.bytes, encs);
            }
            tot_x.bytes += x.bytes, tot_x.samples += x.samples;
            tot_k.bytes += k.bytes, tot_k.samples += k.samples;
            if (sh->per_gpu) {
                gpu_x.bytes += x.bytes, gpu_x.samples += x.samples;
                gpu_k.bytes += k.bytes, gpu_k.samples += k.samples;
            }
        }
        printf("%s%-40s %7s %9.3f %9.3f %6.3f\n", quiet ? "" : "\n", "GPU series only", "",
               (double)gpu_x.bytes / (double)gpu_x.samples, (double)gpu_k.bytes / (double)gpu_k.samples,
               (double)gpu_k.bytes / (double)gpu_x.bytes);
        printf("%-40s %7llu %9.3f %9.3f %6.3f   <- %s\n", "whole node", (unsigned long long)total_series,
               (double)tot_x.bytes / (double)tot_x.samples, (double)tot_k.bytes / (double)tot_k.samples,
               (double)tot_k.bytes / (double)tot_x.bytes, ts_names[model]);
        rs = seed + 1;
    }

    if (decode_n[0])
        printf("\ndecode (iterate a chunk): kelvin %.1f million samples/s, prometheus xor %.1f million "
               "samples/s\n",
               (double)decode_n[0] / decode_s[0] / 1e6, (double)decode_n[1] / decode_s[1] / 1e6);

    /* Append speed on one core: every series of 25 nodes gets one sample per
     * scrape, in turn, as a head does (cold appenders), cutting chunks as
     * they fill. The samples are generated first; only appends and cuts are
     * timed. */
    {
        enum { NODES = 25, SCRAPES = 480 };
        size_t ns = (size_t)total_series * NODES;
        double *vals = malloc(ns * SCRAPES * sizeof *vals);
        int64_t *ts = malloc(SCRAPES * sizeof *ts);
        tsdb_chunk_app *apps = malloc(ns * sizeof *apps);
        if (!vals || !ts || !apps) return 1;
        make_ts(ts, SCRAPES, TS_PROM);
        size_t si = 0;
        for (int node = 0; node < NODES; node++)
            for (size_t s = 0; s < NSHAPES; s++)
                for (int c = 0; c < shapes[s].per_gpu * NGPUS + shapes[s].per_host; c++, si++) {
                    make_load(load, SCRAPES);
                    shapes[s].gen(v, SCRAPES, load);
                    for (size_t k = 0; k < SCRAPES; k++) vals[k * ns + si] = v[k];
                }
        for (int flags = 0; flags <= TSDB_CHUNK_PROM_XOR; flags += TSDB_CHUNK_PROM_XOR) {
            for (size_t i = 0; i < ns; i++) tsdb_chunk_app_init(&apps[i], max, (unsigned)flags);
            uint64_t bytes = 0;
            double t0 = now();
            for (size_t k = 0; k < SCRAPES; k++) {
                const double *row = vals + k * ns;
                for (size_t i = 0; i < ns; i++) {
                    if (tsdb_chunk_app_append(&apps[i], ts[k], row[i]) == 0) continue;
                    base_buf_reset(&out);
                    tsdb_chunk_app_finish(&apps[i], &out);
                    bytes += out.len;
                    tsdb_chunk_app_append(&apps[i], ts[k], row[i]);
                }
            }
            double el = now() - t0;
            size_t mem = 0;
            for (size_t i = 0; i < ns; i++) {
                mem += tsdb_chunk_app_mem(&apps[i]);
                tsdb_chunk_app_free(&apps[i]);
            }
            printf("\nappend, %s: %zu series x %d scrapes in %.3f s = %.2f million samples/s on one core "
                   "(%.0f ns each); open-chunk buffers %.0f B a series\n",
                   flags ? "prometheus xor" : "kelvin", ns, SCRAPES, el, (double)ns * SCRAPES / el / 1e6,
                   el / ((double)ns * SCRAPES) * 1e9, (double)mem / (double)ns);
            (void)bytes;
        }
        /* one series at a time (hot appender) */
        make_ts(t, n, TS_PROM);
        for (int flags = 0; flags <= TSDB_CHUNK_PROM_XOR; flags += TSDB_CHUNK_PROM_XOR) {
            double el = 0;
            uint64_t cnt = 0;
            tsdb_chunk_app a;
            tsdb_chunk_app_init(&a, max, (unsigned)flags);
            for (size_t s = 0; s < NSHAPES; s++) {
                make_load(load, n);
                shapes[s].gen(v, n, load);
                double t0 = now();
                for (size_t i = 0; i < n; i++) {
                    if (tsdb_chunk_app_append(&a, t[i], v[i]) == 0) continue;
                    base_buf_reset(&out);
                    tsdb_chunk_app_finish(&a, &out);
                    tsdb_chunk_app_append(&a, t[i], v[i]);
                }
                base_buf_reset(&out);
                tsdb_chunk_app_finish(&a, &out);
                double e1 = now() - t0;
                if (speed_only) printf("  %-40s %6.0f ns a sample\n", shapes[s].name, e1 / (double)n * 1e9);
                el += e1;
                cnt += n;
            }
            tsdb_chunk_app_free(&a);
            printf("append, %s, one series at a time: %.2f million samples/s (%.0f ns each)\n",
                   flags ? "prometheus xor" : "kelvin", (double)cnt / el / 1e6, el / (double)cnt * 1e9);
        }
        free(vals);
        free(ts);
        free(apps);
    }
    base_buf_free(&out);
    free(t);
    free(v);
    free(load);
    return 0;
}
