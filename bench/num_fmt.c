/* bench/num_fmt.c -- speed of base_fmt_double_f (src/base/num.c), the
 * formatter of every Prometheus API sample value: nanoseconds per value.
 *
 * Design. Three fixed sets of 1M values from a seeded xorshift generator:
 * (a) full-precision values in [1e-3, 1e6) (log-uniform, the averages and
 * rates most PromQL results are), (b) integers below 1e9, (c) short
 * decimals (up to 3 fractional digits). Each set is formatted repeatedly for
 * about -s seconds (default 0.5) of thread CPU time per round; the best of
 * -r rounds (default 3) is printed. A checksum of the output lengths keeps
 * the work from being optimised away.
 *
 *   build/bench_num_fmt [-r ROUNDS] [-s SECONDS]
 *
 * Owned by the base module; reads and writes no files.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/num.h"

#define NV (1u << 20)

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint64_t rng = 0x9e3779b97f4a7c15u;
static uint64_t next(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}
static double unit(void) {
    return (double)(next() >> 11) * 0x1p-53;
}

static double run(const double *vals, int rounds, double secs, uint64_t *sum) {
    double best = 1e30;
    char out[BASE_FMT_DOUBLE_MAX];
    for (int r = 0; r < rounds; r++) {
        double t0 = now(), t;
        uint64_t n = 0;
        do {
            for (uint32_t i = 0; i < NV; i++) *sum += base_fmt_double_f(out, vals[i]);
            n += NV;
            t = now() - t0;
        } while (t < secs);
        if (t / (double)n < best) best = t / (double)n;
    }
    return best * 1e9;
}

int main(int argc, char **argv) {
    int rounds = 3;
    double secs = 0.5;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "-r"))
            rounds = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "-s"))
            secs = atof(argv[i + 1]);
        else {
            fprintf(stderr, "usage: %s [-r ROUNDS] [-s SECONDS]\n", argv[0]);
            return 2;
        }
    }
    if (rounds < 1 || secs <= 0) {
        fprintf(stderr, "bad -r/-s\n");
        return 2;
    }
    double *vals = malloc(NV * sizeof *vals);
    if (!vals) return 1;
    uint64_t sum = 0;
    static const char *names[] = {"full-precision [1e-3,1e6)", "integers < 1e9", "short decimals"};
    for (int set = 0; set < 3; set++) {
        for (uint32_t i = 0; i < NV; i++) {
            if (set == 0)
                vals[i] = pow(10, -3 + 9 * unit());
            else if (set == 1)
                vals[i] = (double)(next() % 1000000000u);
            else
                vals[i] = (double)(next() % 100000000u) / 1000.0;
        }
        printf("%-28s %7.1f ns/value\n", names[set], run(vals, rounds, secs, &sum));
    }
    printf("(checksum %llu)\n", (unsigned long long)sum);
    free(vals);
    return 0;
}
