/* tsdb_replay.c -- the WAL replay benchmark: how long a restart after
 * kill -9 takes to rebuild the head of N series x S samples.
 *
 * Writes the data through the database (tsdb_db: head + WAL, compression
 * as configured) the way scrapes do -- one commit per target of 1,000
 * series at one timestamp, 15 s apart -- then abandons the process state
 * the way kill -9 would: the WAL is only closed, and closing writes nothing
 * that replay could use (no snapshot), so reopening replays exactly what a
 * killed server would. Then opens the database again, timing the open, and
 * checks the head holds N series and N x S samples.
 *
 * Usage: bench_tsdb_replay [-n SERIES] [-s SAMPLES] [-t THREADS] [-z 0|1]
 *        [-d DIR] (defaults: 100000 series, 480 samples = 2 h at 15 s,
 *        replay threads = online CPUs, compression on, a temp dir).
 * Prints one line of figures; exit status 1 if the check fails.
 */
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "tsdb/db.h"
#include "tsdb/head_int.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint64_t dir_size(const char *dir) {
    char cmd[4400];
    snprintf(cmd, sizeof cmd, "du -sb '%s'", dir);
    FILE *p = popen(cmd, "r");
    unsigned long long v = 0;
    if (p) {
        if (fscanf(p, "%llu", &v) != 1) v = 0;
        pclose(p);
    }
    return v;
}

int main(int argc, char **argv) {
    long nser = 100000, nsamp = 480, threads = sysconf(_SC_NPROCESSORS_ONLN);
    int z = 1;
    const char *dir = NULL;
    int c;
    while ((c = getopt(argc, argv, "n:s:t:z:d:")) != -1) {
        switch (c) {
        case 'n': nser = atol(optarg); break;
        case 's': nsamp = atol(optarg); break;
        case 't': threads = atol(optarg); break;
        case 'z': z = atoi(optarg); break;
        case 'd': dir = optarg; break;
        default:
            fprintf(stderr, "usage: %s [-n series] [-s samples] [-t threads] [-z 0|1] [-d dir]\n", argv[0]);
            return 2;
        }
    }
    char tmpl[] = "/tmp/kelvin-replay-XXXXXX";
    if (!dir && !(dir = mkdtemp(tmpl))) return 2;
    tsdb_db_opts o;
    tsdb_db_opts_default(&o);
    o.path = dir;
    o.wal_compression = z;
    o.maintain_interval_ms = -1; /* no head cutting: the whole 2 h stays in the WAL */
    o.min_block_ms = 24LL * 3600 * 1000;
    char err[512];
    tsdb_db *db;
    if (tsdb_db_open(&o, &db, NULL, err, sizeof err)) {
        fprintf(stderr, "open: %s\n", err);
        return 1;
    }
    /* series: node_exporter/dcgm-like label sets */
    labels_set **ls = malloc((size_t)nser * sizeof *ls);
    for (long i = 0; i < nser; i++) {
        char inst[32], gpu[16], name[32];
        snprintf(inst, sizeof inst, "node%04ld:9400", i / 1000);
        snprintf(gpu, sizeof gpu, "%ld", i % 8);
        snprintf(name, sizeof name, "DCGM_FI_DEV_METRIC_%ld", (i / 8) % 125);
        if (labels_from_cstrs(&ls[i], "__name__", name, "gpu", gpu, "instance", inst, "job", "dcgm",
                              "modelName", "NVIDIA H100 80GB HBM3", NULL))
            return 1;
    }
    tsdb_head_app *a;
    tsdb_head_app_new(tsdb_db_head(db), &a);
    double t0 = now_s();
    const int64_t base = 1700000000000LL;
    for (long s = 0; s < nsamp; s++) {
        int64_t t = base + s * 15000;
        for (long i = 0; i < nser; i++) {
            /* gauges that move a little, counters that climb */
            double v = i % 3 == 0 ? (double)(s * 7 + i) : (double)(40 + (s + i) % 5);
            tsdb_head_app_add(a, ls[i], t, v);
            if ((i + 1) % 1000 == 0 || i == nser - 1) {
                tsdb_append_result r;
                if (tsdb_head_app_commit(a, &r)) return 1;
            }
        }
    }
    double write_s = now_s() - t0;
    tsdb_head_app_free(a);
    for (long i = 0; i < nser; i++) labels_unref(ls[i]);
    free(ls);
    if (tsdb_db_close(db)) return 1;
    char wal[4200];
    snprintf(wal, sizeof wal, "%s/wal", dir);
    uint64_t wal_bytes = dir_size(wal);

    tsdb__head_replay_threads = (int)threads;
    t0 = now_s();
    tsdb_db_report rep;
    if (tsdb_db_open(&o, &db, &rep, err, sizeof err)) {
        fprintf(stderr, "reopen: %s\n", err);
        return 1;
    }
    double replay_s = now_s() - t0;
    tsdb_head_stats hs;
    tsdb_head_stats_get(tsdb_db_head(db), &hs);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    int ok = hs.series == (uint64_t)nser && hs.samples == (uint64_t)nser * (uint64_t)nsamp;
    printf("replay: %ld series x %ld samples (%.0f M samples), WAL %.1f MiB (%.2f B/sample, compression %s): "
           "written in %.1f s, replayed in %.2f s with %ld threads = %.1f M samples/s; peak RSS %.0f MiB%s\n",
           nser, nsamp, (double)nser * (double)nsamp / 1e6, (double)wal_bytes / 1048576.0,
           (double)wal_bytes / ((double)nser * (double)nsamp), z ? "on" : "off", write_s, replay_s, threads,
           (double)nser * (double)nsamp / replay_s / 1e6, (double)ru.ru_maxrss / 1024.0,
           ok ? "" : " -- WRONG HEAD CONTENT");
    tsdb_db_close(db);
    if (dir == tmpl) {
        char cmd[4400];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        if (system(cmd)) return 1;
    }
    return ok ? 0 : 1;
}
