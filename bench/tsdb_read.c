/* tsdb_read.c -- the TSDB read benchmark: how fast the query engine can
 * pull samples out of the database, per sample (tsdb_db_set_sample) and
 * in batches (tsdb_db_set_samples), from blocks and from the head, and
 * what one tsdb_db_select over many series costs.
 *
 * Data: N series x S samples at 15 s (default 10,000 x 2,880 = 12 h),
 * written through the database's appender in scrape order. The series mix
 * what GPU and node exporters serve: a third constant (up, info, limits),
 * a third integer counters with varying increments, a third gauges with
 * two decimals; half the targets scrape with a few ms of jitter, half
 * exactly on time. Two databases are built in a temp dir:
 *   blocks  every sample cut into blocks (2 h head blocks, compacted to
 *           6 h as the database does; a marker series far ahead makes
 *           the head cut everything below it);
 *   head    everything in the head (24 h block range: nothing is cut).
 * For each, one select of all N series over the whole range is read three
 * times over: select + next only, per sample, and in batches of -b
 * samples (default 1024). Figures are the best of -r runs (default 3) in
 * the reading thread's CPU time (the machine may be shared): samples/s of
 * each read, and the select's own time.
 *
 * Usage: bench_tsdb_read [-n SERIES] [-s SAMPLES] [-b BATCH] [-r RUNS]
 *        [-w blocks|head|both] [-d DIR] [-S]
 * (-S: only select + next, RUNS times: for perf record.)
 * (-d: keep the data in DIR, and reuse what an earlier run with the same
 * -n and -s left there instead of writing it again; else a temp dir.)
 * Build it RelWithDebInfo for figures that mean something:
 *   cmake -B build-rel -DCMAKE_BUILD_TYPE=RelWithDebInfo &&
 *   cmake --build build-rel --target bench_tsdb_read && build-rel/bench_tsdb_read
 * With -DTSDB_READ_NO_BATCH it builds against a tsdb without the batch
 * API (the per-sample figures of an older tree). Exit status 1 when the
 * readers disagree on the sample count or checksum.
 */
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "labels/labels.h"
#include "tsdb/db.h"

#define STEP 15000LL
#define BASE 1700000000000LL
#define HOUR 3600000LL
#define MAXB 65536

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Reads are timed in this thread's CPU time: on a shared machine it does
 * not count the time other processes hold the core. */
static double cpu_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* xorshift: reproducible data */
static uint64_t rnd_state = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void) {
    rnd_state ^= rnd_state << 13;
    rnd_state ^= rnd_state >> 7;
    rnd_state ^= rnd_state << 17;
    return rnd_state;
}

static labels_set *series(long i) {
    char inst[32], gpu[16], name[32];
    snprintf(inst, sizeof inst, "node%04ld:9400", i / 64);
    snprintf(gpu, sizeof gpu, "%ld", i % 8);
    snprintf(name, sizeof name, "m_%ld", (i / 8) % 8);
    labels_set *ls;
    if (labels_from_cstrs(&ls, "__name__", name, "bench", "read", "gpu", gpu, "instance", inst, "job", "dcgm",
                          NULL))
        return NULL;
    return ls;
}

static int exists(const char *p) {
    struct stat st;
    return stat(p, &st) == 0;
}

static tsdb_db *open_db(const char *dir, int64_t block_ms, char *err, size_t errlen) {
    tsdb_db_opts o;
    tsdb_db_opts_default(&o);
    o.path = dir;
    o.min_block_ms = block_ms;
    o.retention_ms = 0;
    o.maintain_interval_ms = -1;
    tsdb_db *db;
    return tsdb_db_open(&o, &db, NULL, err, errlen) ? NULL : db;
}

static int fill(tsdb_db *db, long nser, long nsamp) {
    labels_set **ls = malloc((size_t)nser * sizeof *ls);
    double *val = calloc((size_t)nser, sizeof *val);
    if (!ls || !val) return -1;
    for (long i = 0; i < nser; i++)
        if (!(ls[i] = series(i))) return -1;
    tsdb_head_app *a;
    if (tsdb_head_app_new(tsdb_db_head(db), &a)) return -1;
    rnd_state = 0x9e3779b97f4a7c15ull;
    for (long s = 0; s < nsamp; s++) {
        for (long i = 0; i < nser; i++) {
            int64_t t = BASE + s * STEP;
            if ((i / 64) % 2) t += (int64_t)(rnd() % 7) - 3; /* jittery targets */
            switch (i % 3) {
            case 0: val[i] = 1; break;                                 /* constant */
            case 1: val[i] += (double)(rnd() % 4096); break;           /* counter */
            default: val[i] = (double)(rnd() % 100000) / 100.0; break; /* gauge, 2 decimals */
            }
            if (tsdb_head_app_add(a, ls[i], t, val[i])) return -1;
        }
        if (tsdb_head_app_commit(a, NULL)) return -1;
    }
    tsdb_head_app_free(a);
    for (long i = 0; i < nser; i++) labels_unref(ls[i]);
    free(ls);
    free(val);
    return 0;
}

typedef struct result {
    double select_s, next_s, sample_s, batch_s;
    uint64_t n_sample, n_batch;
    double sum_sample, sum_batch;
} result;

static labels_matcher *bench_matcher(void) {
    labels_matcher *m;
    if (labels_matcher_new(LABELS_MATCH_EQ, base_str_c("bench"), base_str_c("read"), &m, NULL, 0))
        return NULL;
    return m;
}

static int read_once(tsdb_db *db, int mode, size_t batch, int64_t mint, int64_t maxt, result *r, double *tsel,
                     double *tall, uint64_t *ret_n, double *ret_sum) {
    static int64_t tb[MAXB];
    static double vb[MAXB];
    labels_matcher *m = bench_matcher();
    if (!m) return -1;
    double t0 = cpu_s();
    tsdb_db_set *s;
    if (tsdb_db_select(db, &m, 1, mint, maxt, &s)) return -1;
    double t1 = cpu_s();
    uint64_t n = 0;
    double sum = 0;
    int rr;
    while ((rr = tsdb_db_set_next(s)) == 1) {
        if (mode == 1) {
            int64_t t;
            double v;
            while ((rr = tsdb_db_set_sample(s, &t, &v)) == 1) {
                n++;
                sum += v;
            }
        } else if (mode == 2) {
#ifndef TSDB_READ_NO_BATCH
            while ((rr = tsdb_db_set_samples(s, tb, vb, batch)) > 0) {
                n += (uint64_t)rr;
                for (int i = 0; i < rr; i++) sum += vb[i];
            }
#else
            (void)batch;
            (void)tb;
            (void)vb;
#endif
        }
        if (rr < 0) return -1;
    }
    double t2 = cpu_s();
    tsdb_db_set_free(s);
    labels_matcher_free(m);
    (void)r;
    *tsel = t1 - t0;
    *tall = t2 - t0;
    *ret_n = n;
    *ret_sum = sum;
    return rr < 0 ? -1 : 0;
}

static int sel_only;

static int bench(tsdb_db *db, const char *what, long nser, size_t batch, int runs, int64_t mint,
                 int64_t maxt) {
    if (sel_only) { /* select + next only, -r times (for a profiler) */
        double best = 1e30, first = 0, ts, ta, sum;
        uint64_t n;
        for (int k = 0; k < runs; k++) {
            if (read_once(db, 0, batch, mint, maxt, NULL, &ts, &ta, &n, &sum)) return -1;
            if (!k) first = ta;
            if (ta < best) best = ta;
        }
        printf("%-6s %ld series: select+next first %.1f ms (%.2f us/series), best %.1f ms (%.2f us/series)\n",
               what, nser, first * 1e3, first * 1e6 / (double)nser, best * 1e3, best * 1e6 / (double)nser);
        return 0;
    }
    result best = {1e30, 1e30, 1e30, 1e30, 0, 0, 0, 0};
    for (int k = 0; k < runs; k++) {
        double ts, ta, sum;
        uint64_t n;
        if (read_once(db, 0, batch, mint, maxt, &best, &ts, &ta, &n, &sum)) return -1;
        if (ts < best.select_s) best.select_s = ts;
        if (ta < best.next_s) best.next_s = ta;
        if (read_once(db, 1, batch, mint, maxt, &best, &ts, &ta, &n, &sum)) return -1;
        if (ta < best.sample_s) best.sample_s = ta;
        best.n_sample = n;
        best.sum_sample = sum;
#ifndef TSDB_READ_NO_BATCH
        if (read_once(db, 2, batch, mint, maxt, &best, &ts, &ta, &n, &sum)) return -1;
        if (ta < best.batch_s) best.batch_s = ta;
        best.n_batch = n;
        best.sum_batch = sum;
#endif
    }
    printf("%-6s %ld series: select %.1f ms, select+next %.1f ms (%.2f us/series); %llu samples: "
           "per-sample %.1f Msamples/s",
           what, nser, best.select_s * 1e3, best.next_s * 1e3, best.next_s * 1e6 / (double)nser,
           (unsigned long long)best.n_sample, (double)best.n_sample / best.sample_s / 1e6);
#ifndef TSDB_READ_NO_BATCH
    printf(", batch(%zu) %.1f Msamples/s (x%.2f)", batch, (double)best.n_batch / best.batch_s / 1e6,
           best.sample_s / best.batch_s);
    if (best.n_batch != best.n_sample || best.sum_batch != best.sum_sample) {
        printf("\nMISMATCH: per-sample %llu samples sum %.17g, batch %llu sum %.17g\n",
               (unsigned long long)best.n_sample, best.sum_sample, (unsigned long long)best.n_batch,
               best.sum_batch);
        return -1;
    }
#endif
    printf("\n");
    return 0;
}

int main(int argc, char **argv) {
    long nser = 10000, nsamp = 2880;
    size_t batch = 1024;
    int runs = 3;
    const char *which = "both";
    int c;
    const char *keep = NULL;
    while ((c = getopt(argc, argv, "n:s:b:r:w:d:S")) != -1) {
        switch (c) {
        case 'n': nser = atol(optarg); break;
        case 's': nsamp = atol(optarg); break;
        case 'b': batch = (size_t)atol(optarg); break;
        case 'r': runs = atoi(optarg); break;
        case 'w': which = optarg; break;
        case 'd': keep = optarg; break;
        case 'S': sel_only = 1; break; /* the static above */
        default:
            fprintf(
                stderr,
                "usage: %s [-n series] [-s samples] [-b batch] [-r runs] [-w blocks|head|both] [-d dir]\n",
                argv[0]);
            return 2;
        }
    }
    if (nser < 1 || nsamp < 2 || batch < 1 || batch > MAXB || runs < 1) return 2;
    char tmpl[] = "/tmp/kelvin-read-XXXXXX";
    char *dir = keep ? (char *)keep : mkdtemp(tmpl);
    if (!dir || (keep && mkdir(dir, 0755) && errno != EEXIST)) return 2;
    char err[512], p[256];
    int rc = 0;
    int64_t mint = BASE - HOUR, maxt = BASE + nsamp * STEP + HOUR;
    if (!strcmp(which, "blocks") || !strcmp(which, "both")) {
        snprintf(p, sizeof p, "%s/blocks", dir);
        int have = exists(p);
        tsdb_db *db = open_db(p, 2 * HOUR, err, sizeof err);
        double t0 = now_s();
        if (!db || (!have && fill(db, nser, nsamp))) {
            fprintf(stderr, "blocks: %s\n", err);
            return 1;
        }
        /* a marker far ahead: the head cuts every block below it */
        labels_set *mk;
        tsdb_head_app *a;
        if (!have &&
            (labels_from_cstrs(&mk, "__name__", "marker", NULL) || tsdb_head_app_new(tsdb_db_head(db), &a) ||
             tsdb_head_app_add(a, mk, BASE + nsamp * STEP + 48 * HOUR, 0) || tsdb_head_app_commit(a, NULL)))
            return 1;
        if (!have) {
            tsdb_head_app_free(a);
            labels_unref(mk);
        }
        for (int i = 0; i < 4; i++)
            if (tsdb_db_maintain(db, err, sizeof err)) {
                fprintf(stderr, "maintain: %s\n", err);
                return 1;
            }
        tsdb_db_stats st;
        tsdb_db_stats_get(db, &st);
        printf("blocks: %s in %.1f s: %zu blocks, %llu samples in blocks, %llu in the head\n",
               have ? "opened" : "written", now_s() - t0, st.blocks, (unsigned long long)st.block_samples,
               (unsigned long long)st.head.samples);
        if (bench(db, "blocks", nser, batch, runs, mint, maxt)) rc = 1;
        tsdb_db_close(db);
    }
    if (!strcmp(which, "head") || !strcmp(which, "both")) {
        snprintf(p, sizeof p, "%s/head", dir);
        int have = exists(p);
        tsdb_db *db = open_db(p, 24 * HOUR, err, sizeof err);
        double t0 = now_s();
        if (!db || (!have && fill(db, nser, nsamp))) {
            fprintf(stderr, "head: %s\n", err);
            return 1;
        }
        tsdb_db_stats st;
        tsdb_db_stats_get(db, &st);
        printf("head: %s in %.1f s: %llu samples in the head, %llu closed chunks\n",
               have ? "opened" : "written", now_s() - t0, (unsigned long long)st.head.samples,
               (unsigned long long)st.head.chunks);
        if (bench(db, "head", nser, batch, runs, mint, maxt)) rc = 1;
        tsdb_db_close(db);
    }
    if (!keep) {
        char cmd[300];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        if (system(cmd) != 0) rc = 1;
    }
    return rc;
}
