/* bench/labels_bench.c -- memory and speed of src/labels/: bytes per label
 * set and per interned string on a simulated GPU fleet, build/hash rates,
 * and matcher throughput with and without the fast paths.
 *
 * Not part of the CMake build (it is a measurement, not a test). Build it
 * against a Release build of the library and run it:
 *
 *   cmake -S . -B build-rel -G Ninja -DCMAKE_BUILD_TYPE=Release
 *   cmake --build build-rel --target kelvin_labels
 *   cc -O2 -std=c17 -D_GNU_SOURCE -Isrc bench/labels_bench.c \
 *      build-rel/libkelvin_labels.a build-rel/libkelvin_base.a \
 *      -lpcre2-8 -lxxhash -lpthread -lm -o /tmp/labels_bench
 *   /tmp/labels_bench [nodes]        # default 1000 nodes (1.2 M series)
 *
 * Fleet: per node 8 GPUs x 150 dcgm-exporter metrics, each series with 10
 * labels (__name__, DCGM_FI_DRIVER_VERSION, Hostname, UUID, device, gpu,
 * instance, job, modelName, pci_bus_id) -- the shape dcgm-exporter serves.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/err.h"
#include "labels/labels.h"

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static base_str S(const char *s) {
    return base_str_c(s);
}

#define METRICS 150
#define GPUS    8

int main(int argc, char **argv) {
    long nodes = argc > 1 ? strtol(argv[1], NULL, 10) : 1000;
    if (nodes <= 0) nodes = 1000;
    size_t nseries = (size_t)nodes * GPUS * METRICS;
    labels_set **sets = malloc(nseries * sizeof *sets);
    if (!sets) return 1;
    char metric[METRICS][48];
    for (int m = 0; m < METRICS; m++)
        snprintf(metric[m], sizeof metric[m], "DCGM_FI_DEV_METRIC_%03d_TOTAL", m);

    labels_stats s0, s1;
    labels_stats_get(&s0);
    labels_builder b;
    labels_builder_init(&b);
    char host[32], inst[48], uuid[64], dev[16], gpu[8], bus[32];
    double t0 = now();
    size_t k = 0;
    for (long n = 0; n < nodes; n++) {
        snprintf(host, sizeof host, "gpu-node-%05ld", n);
        snprintf(inst, sizeof inst, "gpu-node-%05ld.cluster.local:9400", n);
        for (int g = 0; g < GPUS; g++) {
            snprintf(uuid, sizeof uuid, "GPU-%08lx-%04x-%04x-%04x-%012lx", (unsigned long)n * 7919u, g, g * 3,
                     g * 7, (unsigned long)n * 104729u + (unsigned long)g);
            snprintf(dev, sizeof dev, "nvidia%d", g);
            snprintf(gpu, sizeof gpu, "%d", g);
            snprintf(bus, sizeof bus, "00000000:%02X:00.0", 0x18 + g * 0x10);
            for (int m = 0; m < METRICS; m++) {
                labels_builder_reset(&b);
                labels_builder_add(&b, S("__name__"), S(metric[m]));
                labels_builder_add(&b, S("DCGM_FI_DRIVER_VERSION"), S("535.104.05"));
                labels_builder_add(&b, S("Hostname"), S(host));
                labels_builder_add(&b, S("UUID"), S(uuid));
                labels_builder_add(&b, S("device"), S(dev));
                labels_builder_add(&b, S("gpu"), S(gpu));
                labels_builder_add(&b, S("instance"), S(inst));
                labels_builder_add(&b, S("job"), S("dcgm"));
                labels_builder_add(&b, S("modelName"), S("NVIDIA H100 80GB HBM3"));
                labels_builder_add(&b, S("pci_bus_id"), S(bus));
                if (labels_builder_finish(&b, 0, &sets[k], NULL, 0) != 0) return 1;
                k++;
            }
        }
    }
    double t1 = now();
    labels_stats_get(&s1);
    double set_b = (double)(s1.set_bytes - s0.set_bytes) / (double)nseries;
    double str_b = (double)(s1.strings.bytes - s0.strings.bytes);
    uint64_t nstr = s1.strings.strings - s0.strings.strings;
    printf("fleet: %ld nodes, %zu series, 10 labels each\n", nodes, nseries);
    printf("build: %.0f ns/set (sort + intern + encode, one thread)\n", (t1 - t0) * 1e9 / (double)nseries);
    printf("label set: %.1f bytes/set (malloc usable size + 8-byte header)\n", set_b);
    printf("interned strings: %llu (%.1f MB payload), table %.1f MB, %.1f bytes/string\n",
           (unsigned long long)nstr, (double)(s1.strings.string_bytes - s0.strings.string_bytes) / 1e6,
           str_b / 1e6, str_b / (double)nstr);
    printf("labels memory per series: %.1f bytes (sets + strings)\n", set_b + str_b / (double)nseries);

    /* marginal cost of a string at scale: 1 M distinct 24-byte values in a
     * private table (what a high-cardinality label costs per value) */
    {
        labels_itab *t;
        if (labels_itab_new(&t) != 0) return 1;
        char v[32];
        labels_sym sym;
        t0 = now();
        for (int i = 0; i < 1000000; i++) {
            snprintf(v, sizeof v, "pod-%08d-abcdefghijk", i);
            if (labels_itab_intern(t, S(v), &sym) != 0) return 1;
        }
        t1 = now();
        labels_itab_stats st;
        labels_itab_stats_get(t, &st);
        printf("1M distinct 24-byte strings: %.1f bytes/string all-in, intern %.0f ns/string\n",
               (double)st.bytes / 1e6, (t1 - t0) * 1e9 / 1e6);
        labels_itab_free(t);
    }

    t0 = now();
    uint64_t acc = 0;
    for (size_t i = 0; i < nseries; i++) acc ^= labels_hash(sets[i]);
    t1 = now();
    printf("hash: %.0f ns/set\n", (t1 - t0) * 1e9 / (double)nseries);
    t0 = now();
    int c = 0;
    for (size_t i = 1; i < nseries; i++) c += labels_cmp(sets[i - 1], sets[i]) < 0;
    t1 = now();
    printf("compare: %.0f ns/pair\n", (t1 - t0) * 1e9 / (double)nseries);
    t0 = now();
    size_t hits = 0;
    for (size_t i = 0; i < nseries; i++) hits += labels_get(sets[i], S("instance")).n > 0;
    t1 = now();
    printf("get(instance): %.0f ns/set\n", (t1 - t0) * 1e9 / (double)nseries);

    /* matcher throughput over the distinct instance and metric values */
    static const char *pats[] = {
        "gpu-node-0001.*", /* prefix */
        ".*node-0042.*",   /* contains */
        "gpu-node-00001.cluster.local:9400|gpu-node-00002.cluster.local:9400|gpu-node-00003.cluster.local:"
        "9400",
        ".*",                                     /* match-all */
        ".+:9400",                                /* suffix-ish glob */
        "gpu-node-[0-9]+\\.cluster\\.local:9400", /* PCRE2 */
        "(?i)GPU-NODE-0001.*",                    /* case-insensitive prefix */
        "DCGM_FI_DEV_METRIC_0[0-4][0-9]_TOTAL",   /* enumerated classes */
    };
    size_t nv = (size_t)nodes * 2;
    char **vals = malloc(nv * sizeof *vals);
    for (long n = 0; n < nodes; n++) {
        vals[2 * n] = malloc(48);
        snprintf(vals[2 * n], 48, "gpu-node-%05ld.cluster.local:9400", n);
        vals[2 * n + 1] = malloc(48);
        snprintf(vals[2 * n + 1], 48, "%s", metric[n % METRICS]);
    }
    int rounds = (int)(2000000 / nv) + 1;
    printf("\nmatch throughput (%zu values x %d rounds), fast path vs PCRE2 only:\n", nv, rounds);
    for (size_t p = 0; p < sizeof pats / sizeof *pats; p++) {
        double ns[2];
        size_t m[2] = {0, 0};
        int fast = 0;
        for (int mode = 0; mode < 2; mode++) {
            labels_regex *re;
            char err[200];
            if (labels_regex_compile(S(pats[p]), mode ? LABELS_RE_NOFAST : 0, &re, err, sizeof err) != 0) {
                printf("  %s: %s\n", pats[p], err);
                return 1;
            }
            if (mode == 0) fast = labels_regex_is_fast(re);
            t0 = now();
            for (int r = 0; r < rounds; r++)
                for (size_t i = 0; i < nv; i++) m[mode] += labels_regex_match(re, S(vals[i])) == 1;
            t1 = now();
            ns[mode] = (t1 - t0) * 1e9 / ((double)nv * rounds);
            labels_regex_free(re);
        }
        printf("  %-40.40s %s %6.1f ns  pcre2 %6.1f ns  (%.1fx)%s\n", pats[p], fast ? "fast " : "pcre2",
               ns[0], ns[1], ns[1] / ns[0], m[0] == m[1] ? "" : "  MISMATCH");
    }
    for (size_t i = 0; i < nv; i++) free(vals[i]);
    free(vals);
    for (size_t i = 0; i < nseries; i++) labels_unref(sets[i]);
    free(sets);
    labels_builder_free(&b);
    labels_thread_cleanup();
    labels_stats_get(&s1);
    printf("\nafter freeing: %llu sets, %llu strings left (expect the baseline %llu/%llu)\n",
           (unsigned long long)s1.sets, (unsigned long long)s1.strings.strings, (unsigned long long)s0.sets,
           (unsigned long long)s0.strings.strings);
    return (int)(acc & 0) + (c < 0) + (hits == 0);
}
