/* tests/unit/tsdb/head_crash.c -- kill -9 durability of the head + WAL.
 *
 * test_crash, 20 rounds: a forked child opens the head on one WAL
 * directory (replaying what earlier rounds left), then appends batches: 50
 * series, each batch one sample per series at the next timestamp t (t =
 * 1, 2, 3, ... per series, value t), with a checkpoint (keeping every
 * sample) every 40 batches and 16 KiB segments so rolls happen. After
 * each acknowledged commit it writes t to a pipe. The parent kills it with
 * SIGKILL after a random 20..200 ms, then opens the head itself and
 * checks, for every series, that the samples are exactly 1..T with value t
 * (so none is missing and none appears twice), with T >= the last
 * acknowledged t and T <= that + 1 (a batch written but not yet
 * acknowledged may survive). Bounded: 20 rounds, each child also stops by
 * itself after 3 s.
 *
 * test_crash_in_checkpoint, 15 rounds: the same with 1,000 series, kills
 * after 150..450 ms and a second thread in the child taking checkpoints
 * back to back while the appends go on, so many kills land inside a
 * checkpoint (its .tmp
 * directory is on disk: counted, and it must happen in some rounds);
 * samples are then both in a checkpoint and in the segments after it,
 * and must still come back exactly once. */
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "labels/labels.h"
#include "tsdb/head.h"

enum { NSER = 50, ROUNDS = 20, NSER2 = 1000, ROUNDS2 = 15 };

static int rm_cb(const char *p, const struct stat *sb, int flag, struct FTW *f) {
    (void)sb;
    (void)flag;
    (void)f;
    return remove(p);
}

static uint64_t seg_size = 16384;

static tsdb_head *open_head(const char *dir, tsdb_wal_report *rep) {
    tsdb_head_opts o = {.wal_dir = dir, .wal = {.segment_size = seg_size}};
    tsdb_head *h;
    char err[256];
    if (tsdb_head_open(&o, &h, rep, err, sizeof err)) return NULL;
    return h;
}

/* Largest T such that every series holds exactly 1..T; -1 if broken. */
static int64_t verify(tsdb_head *h, int nser) {
    tsdb_series_set *ss;
    if (tsdb_head_select(h, NULL, 0, INT64_MIN, INT64_MAX, &ss)) return -1;
    int64_t T = -2;
    size_t n = 0;
    while (tsdb_series_set_next(ss) == 1) {
        int64_t t, want = 1;
        double v;
        while (tsdb_series_set_sample(ss, &t, &v) == 1) {
            if (t != want || v != (double)t) {
                fprintf(stderr, "series %zu: sample t=%lld v=%g, expected t=%lld\n", n, (long long)t, v,
                        (long long)want);
                tsdb_series_set_free(ss);
                return -1;
            }
            want++;
        }
        if (T == -2) T = want - 1;
        if (want - 1 != T) {
            fprintf(stderr, "series %zu ends at %lld, others at %lld\n", n, (long long)want - 1,
                    (long long)T);
            tsdb_series_set_free(ss);
            return -1;
        }
        n++;
    }
    tsdb_series_set_free(ss);
    if (n != 0 && n != (size_t)nser) return -1;
    return n ? T : 0;
}

/* Takes checkpoints back to back until the process is killed. */
static void *ckpt_loop(void *arg) {
    tsdb_head *h = arg;
    for (;;)
        if (tsdb_head_checkpoint(h, 0, NULL, 0)) _exit(9);
    return NULL;
}

static void child(const char *dir, int fd, int nser, int ckpt_thread) {
    tsdb_head *h = open_head(dir, NULL);
    if (!h) _exit(2);
    int64_t t = verify(h, nser);
    if (t < 0) _exit(3);
    labels_set **ls = malloc((size_t)nser * sizeof *ls);
    char buf[16];
    if (!ls) _exit(4);
    for (int i = 0; i < nser; i++) {
        snprintf(buf, sizeof buf, "%d", i);
        if (labels_from_cstrs(&ls[i], "__name__", "crash_test", "series", buf, NULL)) _exit(4);
    }
    tsdb_head_app *a;
    if (tsdb_head_app_new(h, &a)) _exit(5);
    pthread_t th;
    if (ckpt_thread && pthread_create(&th, NULL, ckpt_loop, h)) _exit(10);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int b = 1;; b++) {
        t++;
        for (int i = 0; i < nser; i++)
            if (tsdb_head_app_add(a, ls[i], t, (double)t)) _exit(6);
        tsdb_append_result r;
        if (tsdb_head_app_commit(a, &r) || r.appended != (uint64_t)nser) _exit(7);
        if (write(fd, &t, sizeof t) != sizeof t) _exit(8);
        if (!ckpt_thread && b % 40 == 0 && tsdb_head_checkpoint(h, 0, NULL, 0)) _exit(9);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        if (t1.tv_sec - t0.tv_sec > 3) break;
    }
    _exit(0);
}

/* Whether dir holds a checkpoint being written (checkpoint.N.tmp). */
static int ckpt_in_progress(const char *dir) {
    DIR *d = opendir(dir);
    int found = 0;
    struct dirent *de;
    while (d && (de = readdir(d)))
        if (!strncmp(de->d_name, "checkpoint.", 11) && strstr(de->d_name, ".tmp")) found = 1;
    if (d) closedir(d);
    return found;
}

static void crash_rounds(int rounds, int nser, int ckpt_thread, int min_ms, int max_ms) {
    char dir[] = "/tmp/kelvin-crash-XXXXXX";
    assert_non_null(mkdtemp(dir));
    srand((unsigned)time(NULL));
    int64_t acked = 0;
    uint64_t reports = 0, mid = 0;
    for (int round = 0; round < rounds; round++) {
        int p[2];
        assert_int_equal(pipe(p), 0);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            close(p[0]);
            child(dir, p[1], nser, ckpt_thread);
        }
        close(p[1]);
        struct timespec d = {0, (min_ms + rand() % (max_ms - min_ms)) * 1000000L};
        nanosleep(&d, NULL);
        kill(pid, SIGKILL);
        int status;
        assert_int_equal(waitpid(pid, &status, 0), pid);
        if (!WIFSIGNALED(status)) fprintf(stderr, "child exited with %d\n", WEXITSTATUS(status));
        assert_true(WIFSIGNALED(status) || (WIFEXITED(status) && WEXITSTATUS(status) == 0));
        int64_t t;
        ssize_t k;
        while ((k = read(p[0], &t, sizeof t)) == sizeof t) acked = t;
        close(p[0]);
        mid += ckpt_in_progress(dir);
        tsdb_wal_report rep;
        tsdb_head *h = open_head(dir, &rep);
        assert_non_null(h);
        if (rep.corruptions) reports++;
        int64_t T = verify(h, nser);
        tsdb_head_close(h);
        if (T < acked || T > acked + 1)
            fprintf(stderr, "round %d: head holds 1..%lld, last acknowledged %lld\n", round, (long long)T,
                    (long long)acked);
        assert_true(T >= acked && T <= acked + 1);
        acked = T; /* the next child continues from what is there */
    }
    printf(
        "crash: %d rounds of %d series%s, %lld batches acknowledged in total, %llu replays reported a torn "
        "tail, %llu kills during a checkpoint\n",
        rounds, nser, ckpt_thread ? " (checkpoints back to back)" : "", (long long)acked,
        (unsigned long long)reports, (unsigned long long)mid);
    if (ckpt_thread) assert_true(mid > 0);
    nftw(dir, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

static void test_crash(void **st) {
    (void)st;
    seg_size = 16384;
    crash_rounds(ROUNDS, NSER, 0, 20, 200);
}

static void test_crash_in_checkpoint(void **st) {
    (void)st;
    seg_size = 65536;
    crash_rounds(ROUNDS2, NSER2, 1, 150, 450); /* past the child's open and first commits */
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_crash),
                                       cmocka_unit_test(test_crash_in_checkpoint)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
