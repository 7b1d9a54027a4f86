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
 * Decode speed (-d, and at the end of a full run): ns a sample through
 * the batch API the query path uses (tsdb_chunk_it_next_n) and through
 * tsdb_chunk_it_next, per encoding and on "promql mix", the fleet that
 * bench/promql_bench.py queries (see decode_bench below); both decoders
 * are checked against the samples first.
 *
 * Built by CMake as build/bench_chunk_bench; or by hand:
 *   mkdir -p build-bench && cc -O2 -std=c17 -D_GNU_SOURCE -Isrc \
 *     bench/chunk_bench.c src/tsdb/chunk*.c src/base/buf.c src/base/num.c \
 *     src/base/num_shortest.c src/base/utf8.c src/base/err.c -lm \
 *     -o build-bench/chunk_bench && build-bench/chunk_bench
 * Options: -h HOURS (24), -c SAMPLES_PER_CHUNK (120; -d: 480, as blocks),
 * -s SEED (1), -q (totals only), -t (append speed only), -d (decode speed
 * only), -n NODES (fleet nodes for -d, 10), -r REPS (best of, 5), -1 (one
 * batch pass over the mix and nothing else: for callgrind, e.g.
 * valgrind --tool=callgrind --toggle-collect=tsdb_chunk_it_next_n), -e ENC
 * (with -1: only chunks of encoding id ENC, hex).
 * It prints one table per timestamp model, then appends/s on one core,
 * then the decode figures.
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

/* ---- decode speed ---------------------------------------------------------
 * The query path reads chunks through tsdb_chunk_it_next_n (the batch API);
 * this measures it, and the per-sample tsdb_chunk_it_next, in ns a sample:
 * per encoding over every chunk of the node above ("node shapes": 24 h at
 * 15 s, "prom" timestamps) and of the mix, and on "promql mix", a day of
 * the fleet that bench/promql_bench.py queries (tests/lib/promql_data.py's
 * Fleet, same generators: per node 8 GPUs x temperature, memory
 * temperature, utilisation, FB used, energy counter; 16 CPUs x 4 modes of
 * node_cpu_seconds_total with 2 decimals; MemAvailable in pages; an
 * 11-bucket histogram with _sum and _count), one sample every 30 s at the
 * node's own millisecond offset, chunks of 480 as in blocks. Before any
 * timing both decoders' answers are checked against the samples that
 * went in. A figure is the sum over groups of about 20,000 samples of each
 * group's best of R passes (the machine is shared: a pass another process
 * interrupts only loses its group's turn). */

typedef struct dchunk {
    uint32_t off, len, n;
    uint8_t enc;
    uint8_t mix; /* 1: from the promql mix */
} dchunk;

typedef struct dset {
    base_buf bytes;
    dchunk *ck;
    size_t nck, cap;
    int64_t *t; /* every sample that went in, chunk after chunk */
    double *v;
    size_t ns, scap;
} dset;

static void dset_add(dset *d, const int64_t *t, const double *v, size_t n, unsigned max, int mix) {
    tsdb_chunk_app a;
    tsdb_chunk_app_init(&a, max, 0);
    if (d->ns + n > d->scap) {
        d->scap = (d->ns + n) * 2;
        d->t = realloc(d->t, d->scap * sizeof *d->t);
        d->v = realloc(d->v, d->scap * sizeof *d->v);
        if (!d->t || !d->v) abort();
    }
    memcpy(d->t + d->ns, t, n * sizeof *t);
    memcpy(d->v + d->ns, v, n * sizeof *v);
    d->ns += n;
    size_t start = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i < n && tsdb_chunk_app_append(&a, t[i], v[i]) == 0) continue;
        size_t off = d->bytes.len;
        if (tsdb_chunk_app_finish(&a, &d->bytes)) abort();
        if (d->nck == d->cap) {
            d->cap = d->cap ? d->cap * 2 : 1024;
            d->ck = realloc(d->ck, d->cap * sizeof *d->ck);
            if (!d->ck) abort();
        }
        d->ck[d->nck++] = (dchunk){(uint32_t)off, (uint32_t)(d->bytes.len - off), (uint32_t)(i - start),
                                   (uint8_t)d->bytes.data[off], (uint8_t)mix};
        start = i;
        if (i < n && tsdb_chunk_app_append(&a, t[i], v[i])) abort();
    }
    tsdb_chunk_app_free(&a);
}

static int64_t rint_in(int64_t lo, int64_t hi) { /* lo..hi inclusive, as Python's randint */
    return lo + (int64_t)(rnd() % (uint64_t)(hi - lo + 1));
}

/* One node of the fleet, n samples a series, into d. */
static void fleet_node(dset *d, int node, size_t n, unsigned max) {
    int64_t *t = malloc(n * sizeof *t);
    double *v = malloc(n * sizeof *v), *ld = malloc(n * sizeof *ld);
    if (!t || !v || !ld) abort();
    int64_t off = (int64_t)((node * 7919 + 1234) % 30000);
    for (size_t i = 0; i < n; i++) t[i] = 1704067200000 + off + (int64_t)i * 30000;
    static const double phases[] = {0.02, 0.35, 0.9, 0.98};
    for (size_t i = 0, left = 0; i < n; i++, left--) {
        if (!left) {
            ld[i] = phases[rnd() % 4];
            left = (size_t)rint_in(20, 400);
        } else {
            ld[i] = ld[i - 1];
        }
    }
    static const int walk[2][3] = {{32, 84, 40}, {36, 95, 45}}; /* temperature, memory temperature */
    for (int w = 0; w < 2; w++)
        for (int g = 0; g < NGPUS; g++) {
            int64_t x = walk[w][2] + rint_in(0, 10), lo = walk[w][0], hi = walk[w][1];
            for (size_t i = 0; i < n; i++) {
                double target = (double)lo + (double)(hi - lo) * ld[i];
                if (unif() < 0.3) x += (double)x < target ? 1 : (double)x > target ? -1 : 0;
                x += unif() < 0.1 ? 1 : unif() < 0.11 ? -1 : 0;
                x = x < lo ? lo : x > hi ? hi : x;
                v[i] = (double)x;
            }
            dset_add(d, t, v, n, max, 1);
        }
    for (int g = 0; g < NGPUS; g++) { /* utilisation */
        for (size_t i = 0; i < n; i++) {
            int64_t u = (int64_t)(ld[i] * 100) + rint_in(-3, 3);
            v[i] = (double)(u < 0 ? 0 : u > 100 ? 100 : u);
        }
        dset_add(d, t, v, n, max, 1);
    }
    for (int g = 0; g < NGPUS; g++) { /* FB used, MiB */
        int64_t x = 2000 + rint_in(0, 1000);
        for (size_t i = 0; i < n; i++) {
            x += ld[i] > 0.5 ? rint_in(-64, 96) : rint_in(-120, 40);
            x = x < 500 ? 500 : x > 81000 ? 81000 : x;
            v[i] = (double)x;
        }
        dset_add(d, t, v, n, max, 1);
    }
    for (int g = 0; g < NGPUS; g++) { /* energy, mJ */
        int64_t x = 10000000000 + rint_in(0, 1000000000);
        for (size_t i = 0; i < n; i++) {
            x += (70 + (int64_t)(620 * ld[i]) + rint_in(-5, 5)) * 30 * 1000;
            v[i] = (double)x;
        }
        dset_add(d, t, v, n, max, 1);
    }
    for (int c = 0; c < 16; c++) { /* node_cpu_seconds_total: idle, iowait, system, user */
        int64_t acc[4];
        double *cols = malloc(4 * n * sizeof *cols);
        if (!cols) abort();
        for (int m = 0; m < 4; m++) acc[m] = rint_in(1000000, 10000000);
        for (size_t i = 0; i < n; i++) {
            int64_t busy = (int64_t)(3000 * 0.3 * ld[i]) + rint_in(0, 150), sy = busy / 4,
                    io = rint_in(0, 31);
            int64_t inc[4] = {3000 - busy - sy - io, io, sy, busy};
            for (int m = 0; m < 4; m++) {
                acc[m] += inc[m] > 0 ? inc[m] : 0;
                cols[(size_t)m * n + i] = (double)acc[m] / 100;
            }
        }
        for (int m = 0; m < 4; m++) dset_add(d, t, cols + (size_t)m * n, n, max, 1);
        free(cols);
    }
    { /* MemAvailable, pages */
        int64_t x = 1500000000000 / 4096;
        for (size_t i = 0; i < n; i++) {
            x += rint_in(-2000, 2000) - (int64_t)(200 * (ld[i] - 0.5));
            v[i] = (double)(x * 4096);
        }
        dset_add(d, t, v, n, max, 1);
    }
    { /* histogram: 11 buckets, _sum (3 decimals), _count */
        static const double busy_cdf[11] = {0.01, 0.03, 0.1, 0.25, 0.5, 0.75, 0.9, 0.97, 0.995, 0.999, 1.0};
        static const double idle_cdf[11] = {0.05, 0.2, 0.5, 0.8, 0.93, 0.98, 0.995, 0.999, 1.0, 1.0, 1.0};
        int64_t counts[11] = {0};
        double sum = 0, *cols = malloc(12 * n * sizeof *cols);
        if (!cols) abort();
        for (size_t i = 0; i < n; i++) {
            int64_t req = rint_in(0, 40) + (int64_t)(400 * ld[i]);
            const double *cdf = ld[i] > 0.5 ? busy_cdf : idle_cdf;
            for (int b = 0; b < 11; b++) counts[b] += (int64_t)((double)req * cdf[b]);
            if (counts[10] < counts[9]) counts[10] = counts[9];
            sum += (double)req * (ld[i] > 0.5 ? 0.08 : 0.02);
            for (int b = 0; b < 11; b++) cols[(size_t)b * n + i] = (double)counts[b];
            cols[11 * n + i] = dec(sum, 1000);
        }
        for (int b = 0; b < 12; b++) dset_add(d, t, cols + (size_t)b * n, n, max, 1);
        dset_add(d, t, cols + 10 * n, n, max, 1); /* _count = the +Inf bucket */
        free(cols);
    }
    free(t);
    free(v);
    free(ld);
}

enum { SEL_ALL, SEL_MIX, SEL_NODE };

static int dsel(const dchunk *k, int sel, int enc) {
    return !((sel == SEL_MIX && !k->mix) || (sel == SEL_NODE && k->mix) || (enc && k->enc != enc));
}

/* Decodes the chunks [c0, c1) that match (sel, enc: 0 any) once; returns
 * samples. */
static uint64_t decode_pass(const dset *d, size_t c0, size_t c1, int sel, int enc, int batch, int64_t *tb,
                            double *vb, double *sink) {
    uint64_t cnt = 0;
    double acc = 0;
    for (size_t c = c0; c < c1; c++) {
        const dchunk *k = &d->ck[c];
        if (!dsel(k, sel, enc)) continue;
        tsdb_chunk_it it;
        tsdb_chunk_it_init(&it, (const uint8_t *)d->bytes.data + k->off, k->len);
        if (batch) {
            size_t r;
            while ((r = tsdb_chunk_it_next_n(&it, tb, vb, TSDB_CHUNK_MAX_SAMPLES)) > 0) {
                acc += vb[r - 1] + (double)tb[0];
                cnt += r;
            }
        } else {
            while (tsdb_chunk_it_next(&it)) {
                acc += it.v;
                cnt++;
            }
        }
    }
    *sink += acc;
    return cnt;
}

/* Checks that both decoders give back exactly the samples that went in. */
static void decode_check(const dset *d, int64_t *tb, double *vb) {
    size_t s = 0;
    for (size_t c = 0; c < d->nck; c++) {
        const dchunk *k = &d->ck[c];
        tsdb_chunk_it it, it2;
        tsdb_chunk_it_init(&it, (const uint8_t *)d->bytes.data + k->off, k->len);
        tsdb_chunk_it_init(&it2, (const uint8_t *)d->bytes.data + k->off, k->len);
        size_t r = tsdb_chunk_it_next_n(&it, tb, vb, TSDB_CHUNK_MAX_SAMPLES);
        int ok = r == k->n && !tsdb_chunk_it_err(&it);
        for (size_t i = 0; ok && i < r; i++) {
            ok = tsdb_chunk_it_next(&it2) && tb[i] == d->t[s + i] && !memcmp(&vb[i], &d->v[s + i], 8) &&
                 it2.t == tb[i] && !memcmp(&it2.v, &vb[i], 8);
        }
        if (!ok || tsdb_chunk_it_next(&it2) || tsdb_chunk_it_err(&it2)) {
            fprintf(stderr, "chunk_bench: decode check failed in chunk %zu (%s)\n", c,
                    tsdb_chunk_enc_name(k->enc));
            exit(1);
        }
        s += k->n;
    }
}

/* ns a sample: the chunks are timed in groups of about 20,000 samples
 * (a few hundred microseconds), each group's best of reps passes, summed:
 * a pass that another process interrupts only loses its group's turn. */
static double decode_time(const dset *d, int sel, int enc, int batch, int reps, int64_t *tb, double *vb,
                          uint64_t *ret_n) {
    double total = 0, sink = 0;
    uint64_t cnt = 0;
    for (size_t c0 = 0; c0 < d->nck;) {
        size_t c1 = c0;
        uint64_t gs = 0;
        while (c1 < d->nck && gs < 20000) gs += dsel(&d->ck[c1], sel, enc) ? d->ck[c1].n : 0, c1++;
        double best = 1e30;
        uint64_t gc = 0;
        for (int r = 0; r < reps; r++) {
            double t0 = now();
            gc = decode_pass(d, c0, c1, sel, enc, batch, tb, vb, &sink);
            double el = now() - t0;
            if (el < best) best = el;
        }
        if (gc) total += best;
        cnt += gc;
        c0 = c1;
    }
    if (sink == 1.2345e300) printf("!");
    *ret_n = cnt;
    return cnt ? total / (double)cnt * 1e9 : 0;
}

/* -d: the decode figures over the node's shapes (not with once) and
 * nodes nodes of the fleet; once: one batch pass over the fleet's chunks
 * of encoding only_enc (0: all), unchecked, for instruction counts. */
static void decode_bench(int nodes, double hours, unsigned max, int reps, int once, int only_enc) {
    dset d = {0};
    base_buf_init(&d.bytes, 0);
    size_t n = (size_t)(hours * 3600 / 15);
    double *load = malloc(n * sizeof *load), *v = malloc(n * sizeof *v);
    int64_t *t = malloc(n * sizeof *t);
    int64_t *tb = malloc(TSDB_CHUNK_MAX_SAMPLES * sizeof *tb);
    double *vb = malloc(TSDB_CHUNK_MAX_SAMPLES * sizeof *vb);
    if (!load || !v || !t || !tb || !vb) abort();
    if (!once)
        for (size_t s = 0; s < NSHAPES; s++)
            for (int c = 0; c < shapes[s].per_gpu * NGPUS + shapes[s].per_host; c++) {
                make_load(load, n);
                make_ts(t, n, TS_PROM);
                shapes[s].gen(v, n, load);
                dset_add(&d, t, v, n, max, 0);
            }
    for (int node = 0; node < nodes; node++) fleet_node(&d, node, (size_t)(hours * 120), max);
    if (!once) decode_check(&d, tb, vb);
    uint64_t cnt;
    if (once) { /* one pass over the mix, for callgrind or perf */
        double sink = 0;
        cnt = decode_pass(&d, 0, d.nck, SEL_MIX, only_enc, 1, tb, vb, &sink);
        printf("decoded %llu samples (%g)\n", (unsigned long long)cnt, sink);
    } else {
        printf("\ndecode speed, ns a sample (best of %d), chunks of %u: batch = tsdb_chunk_it_next_n, "
               "iter = tsdb_chunk_it_next\n",
               reps, max);
        printf("%-24s %10s %9s %9s %8s\n", "chunks", "samples", "batch", "iter", "B/sample");
        for (int e = 1; e < 256; e++) {
            uint64_t bytes = 0, ns = 0;
            for (size_t c = 0; c < d.nck; c++)
                if (d.ck[c].enc == e) bytes += d.ck[c].len, ns += d.ck[c].n;
            if (!ns) continue;
            char name[32];
            snprintf(name, sizeof name, "%s%s", tsdb_chunk_enc_name((uint8_t)e),
                     e & TSDB_ENC_REGULAR ? "+r" : "");
            double b = decode_time(&d, SEL_ALL, e, 1, reps, tb, vb, &cnt);
            double it = decode_time(&d, SEL_ALL, e, 0, reps, tb, vb, &cnt);
            printf("%-24s %10llu %9.2f %9.2f %8.3f\n", name, (unsigned long long)cnt, b, it,
                   (double)bytes / (double)ns);
        }
        for (int sel = SEL_MIX; sel <= SEL_NODE; sel++) {
            double b = decode_time(&d, sel, 0, 1, reps, tb, vb, &cnt);
            double it = decode_time(&d, sel, 0, 0, reps, tb, vb, &cnt);
            printf("%-24s %10llu %9.2f %9.2f\n", sel == SEL_MIX ? "promql mix (30 s)" : "node shapes (15 s)",
                   (unsigned long long)cnt, b, it);
        }
    }
    base_buf_free(&d.bytes);
    free(d.ck);
    free(d.t);
    free(d.v);
    free(load);
    free(v);
    free(t);
    free(tb);
    free(vb);
}

int main(int argc, char **argv) {
    double hours = 24;
    unsigned max = TSDB_CHUNK_DEFAULT_SAMPLES;
    int quiet = 0, speed_only = 0, decode_only = 0, cset = 0, once = 0, nodes = 10, reps = 5, only_enc = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") && i + 1 < argc)
            hours = atof(argv[++i]);
        else if (!strcmp(argv[i], "-c") && i + 1 < argc)
            max = (unsigned)atoi(argv[++i]), cset = 1;
        else if (!strcmp(argv[i], "-s") && i + 1 < argc)
            rs = (uint64_t)atoll(argv[++i]) * 0x9e3779b97f4a7c15ull + 1;
        else if (!strcmp(argv[i], "-q"))
            quiet = 1;
        else if (!strcmp(argv[i], "-t"))
            speed_only = 1;
        else if (!strcmp(argv[i], "-d"))
            decode_only = 1;
        else if (!strcmp(argv[i], "-1"))
            decode_only = once = 1;
        else if (!strcmp(argv[i], "-n") && i + 1 < argc)
            nodes = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-r") && i + 1 < argc)
            reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-e") && i + 1 < argc)
            only_enc = (int)strtol(argv[++i], NULL, 16);
        else {
            fprintf(stderr,
                    "usage: chunk_bench [-h HOURS] [-c SAMPLES_PER_CHUNK] [-s SEED] [-q] [-t] [-d] [-1] "
                    "[-n NODES] [-r REPS] [-e ENC]\n");
            return 2;
        }
    }
    if (decode_only) {
        decode_bench(nodes, hours, max == TSDB_CHUNK_DEFAULT_SAMPLES && !cset ? 480 : max, reps, once,
                     only_enc);
        return 0;
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
    if (!speed_only) decode_bench(quiet ? 2 : nodes, hours, 480, 3, 0, 0);
    base_buf_free(&out);
    free(t);
    free(v);
    free(load);
    return 0;
}
