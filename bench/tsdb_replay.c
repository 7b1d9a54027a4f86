/* tsdb_replay.c -- the WAL replay benchmark: how long a restart after
 * kill -9 takes to rebuild the head of N series x S samples.
 *
 * Writes the data through the database (tsdb_db: head + WAL, compression
 * as configured) the way scrapes do -- one commit per target of 1,000
 * series at one timestamp, 15 s apart -- and runs the database's
 * maintenance round (tsdb_db_maintain) every 1,000 commits, as the
 * server's maintenance thread would while scrapes go on: it takes the
 * size-triggered WAL checkpoints (head.h), whose count and time are
 * printed. Head cutting is off (24 h blocks): the whole 2 h stays in the
 * head and the WAL, as after a crash just before the first cut. Then the
 * process state is abandoned the way kill -9 would: the WAL is only
 * closed, and closing writes nothing that replay could use (no snapshot,
 * no checkpoint), so reopening replays exactly what a killed server would:
 * the newest checkpoint, then the WAL written since. The open is timed
 * (wall and CPU time of all threads) and the head is checked to hold N
 * series and N x S samples.
 *
 * Usage: bench_tsdb_replay [-n SERIES] [-s SAMPLES] [-t THREADS] [-z 0|1]
 *        [-c CHECKPOINT_MIB] [-d DIR] [-r]
 * (defaults: 100000 series, 480 samples = 2 h at 15 s, replay threads =
 * online CPUs, compression on, the head's default checkpoint threshold,
 * a temp dir). -c 0 turns the size-triggered checkpoints off (the old
 * behaviour: everything replays as samples). -r only reopens DIR (written
 * by an earlier run with -d) and times that; -r -k first opens DIR, takes
 * a checkpoint of everything and closes it, so that the timed open only
 * installs the checkpoint (no WAL after it). Prints one line of figures;
 * exit status 1 if the check fails.
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

static double cpu_s(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
           (double)ru.ru_stime.tv_usec / 1e6;
}

int main(int argc, char **argv) {
    long nser = 100000, nsamp = 480, threads = sysconf(_SC_NPROCESSORS_ONLN), ckpt_mib = -1;
    int z = 1, reopen_only = 0, ckpt_first = 0;
    const char *dir = NULL;
    int c;
    while ((c = getopt(argc, argv, "n:s:t:z:c:d:rk")) != -1) {
        switch (c) {
        case 'n': nser = atol(optarg); break;
        case 's': nsamp = atol(optarg); break;
        case 't': threads = atol(optarg); break;
        case 'z': z = atoi(optarg); break;
        case 'c': ckpt_mib = atol(optarg); break;
        case 'd': dir = optarg; break;
        case 'r': reopen_only = 1; break;
        case 'k': ckpt_first = 1; break;
        default:
            fprintf(stderr,
                    "usage: %s [-n series] [-s samples] [-t threads] [-z 0|1] [-c checkpoint_MiB] [-d dir] "
                    "[-r [-k]]\n",
                    argv[0]);
            return 2;
        }
    }
    if ((reopen_only || ckpt_first) && !dir) {
        fprintf(stderr, "-r and -k need -d DIR\n");
        return 2;
    }
    /* -c 0: never due (a threshold no WAL reaches) */
    if (ckpt_mib >= 0) tsdb__head_checkpoint_bytes = ckpt_mib ? (uint64_t)ckpt_mib << 20 : UINT64_MAX;
    char tmpl[] = "/tmp/kelvin-replay-XXXXXX";
    if (!dir && !(dir = mkdtemp(tmpl))) return 2;
    tsdb_db_opts o;
    tsdb_db_opts_default(&o);
    o.path = dir;
    o.wal_compression = z;
    o.maintain_interval_ms = -1;         /* maintenance is run below, in step with the writes */
    o.min_block_ms = 24LL * 3600 * 1000; /* no head cutting: the whole 2 h stays in the head */
    char err[512];
    tsdb_db *db;
    double write_s = 0, ckpt_s = 0, ckpt_max = 0, write_cpu = 0;
    long nckpt = 0;
    uint64_t tail = 0, ckpt_bytes = 0, ckpt_total = 0, wal_total = 0;
    if (reopen_only && ckpt_first) { /* open, checkpoint everything, close: the next open installs only */
        if (tsdb_db_open(&o, &db, NULL, err, sizeof err) ||
            tsdb_head_checkpoint(tsdb_db_head(db), INT64_MIN, err, sizeof err) || tsdb_db_close(db)) {
            fprintf(stderr, "checkpoint: %s\n", err);
            return 1;
        }
    }
    if (reopen_only) goto reopen;
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
    tsdb_head *head = tsdb_db_head(db);
    tsdb_head_app *a;
    tsdb_head_app_new(head, &a);
    double t0 = now_s(), c0 = cpu_s();
    const int64_t base = 1700000000000LL;
    long commits = 0;
    for (long s = 0; s < nsamp; s++) {
        int64_t t = base + s * 15000;
        for (long i = 0; i < nser; i++) {
            /* gauges that move a little, counters that climb */
            double v = i % 3 == 0 ? (double)(s * 7 + i) : (double)(40 + (s + i) % 5);
            tsdb_head_app_add(a, ls[i], t, v);
            if ((i + 1) % 1000 == 0 || i == nser - 1) {
                tsdb_append_result r;
                if (tsdb_head_app_commit(a, &r)) return 1;
                if (++commits % 1000 == 0) {
                    tsdb_head_stats hs0;
                    tsdb_head_stats_get(head, &hs0);
                    uint64_t tail0 = tsdb_head_wal_bytes_since_checkpoint(head);
                    double m0 = now_s();
                    if (tsdb_db_maintain(db, err, sizeof err)) {
                        fprintf(stderr, "maintain: %s\n", err);
                        return 1;
                    }
                    double dm = now_s() - m0;
                    tsdb_head_stats hs1;
                    tsdb_head_stats_get(head, &hs1);
                    if (hs1.checkpoints > hs0.checkpoints) {
                        nckpt++;
                        ckpt_s += dm;
                        if (dm > ckpt_max) ckpt_max = dm;
                        ckpt_bytes = hs1.checkpoint_bytes;
                        ckpt_total += hs1.checkpoint_bytes;
                        wal_total += tail0;
                    }
                }
            }
        }
    }
    write_s = now_s() - t0;
    write_cpu = cpu_s() - c0;
    tail = tsdb_head_wal_bytes_since_checkpoint(head);
    wal_total += tail;
    tsdb_wal_stats ws;
    memset(&ws, 0, sizeof ws);
    tsdb_head_app_free(a);
    for (long i = 0; i < nser; i++) labels_unref(ls[i]);
    free(ls);
    if (tsdb_db_close(db)) return 1;
reopen:;
    char wal[4200];
    snprintf(wal, sizeof wal, "%s/wal", dir);
    uint64_t wal_bytes = dir_size(wal);

    tsdb__head_replay_threads = (int)threads;
    t0 = now_s();
    double c1 = cpu_s();
    tsdb_db_report rep;
    if (tsdb_db_open(&o, &db, &rep, err, sizeof err)) {
        fprintf(stderr, "reopen: %s\n", err);
        return 1;
    }
    double replay_s = now_s() - t0, replay_cpu = cpu_s() - c1;
    tsdb_head_stats hs;
    tsdb_head_stats_get(tsdb_db_head(db), &hs);
    if (reopen_only) tail = tsdb_head_wal_bytes_since_checkpoint(tsdb_db_head(db));
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    int ok = hs.series == (uint64_t)nser && hs.samples == (uint64_t)nser * (uint64_t)nsamp &&
             !rep.wal.corruptions && !hs.replay_corrupt;
    double nsm = (double)nser * (double)nsamp;
    if (!reopen_only) {
        char thr[32] = "off";
        if (ckpt_mib != 0)
            snprintf(thr, sizeof thr, "%.0f MiB",
                     (double)(ckpt_mib > 0 ? (uint64_t)ckpt_mib << 20 : TSDB_HEAD_CHECKPOINT_BYTES) /
                         1048576.0);
        printf(
            "write: %ld series x %ld samples (%.0f M) in %.1f s (%.1f CPU s) = %.2f M samples/s; WAL written "
            "%.0f MiB (%.2f B/sample); %ld checkpoints (threshold %s) took %.1f s (max %.2f s), last %.0f "
            "MiB, "
            "all %.0f MiB = %.2f x the WAL\n",
            nser, nsamp, nsm / 1e6, write_s, write_cpu, nsm / write_s / 1e6, (double)wal_total / 1048576.0,
            (double)wal_total / nsm, nckpt, thr, ckpt_s, ckpt_max, (double)ckpt_bytes / 1048576.0,
            (double)ckpt_total / 1048576.0, wal_total ? (double)ckpt_total / (double)wal_total : 0.0);
    }
    printf("replay: %ld series x %ld samples (%.0f M samples), WAL dir %.1f MiB (compression %s; checkpoint "
           "%llu, "
           "%.1f MiB of WAL after it): replayed in %.2f s (%.2f CPU s) with %ld threads = %.1f M samples/s; "
           "peak RSS %.0f MiB%s\n",
           nser, nsamp, nsm / 1e6, (double)wal_bytes / 1048576.0, z ? "on" : "off",
           (unsigned long long)rep.wal.checkpoint, (double)tail / 1048576.0, replay_s, replay_cpu, threads,
           nsm / replay_s / 1e6, (double)ru.ru_maxrss / 1024.0, ok ? "" : " -- WRONG HEAD CONTENT");
    if (!ok && rep.wal.first_error[0]) fprintf(stderr, "%s\n", rep.wal.first_error);
    tsdb_db_close(db);
    if (dir == tmpl && !reopen_only) {
        char cmd[4400];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        if (system(cmd)) return 1;
    }
    return ok ? 0 : 1;
}
