/* tests/unit/remote/wal.c -- the sender's durability against a receiver on
 * 127.0.0.1 (rx.h): a restart resumes from the position file (nothing lost,
 * nothing sent twice, receiver up or down meanwhile), remote_hold_from
 * keeps the segments a restart needs through checkpoints, checkpoints
 * during an outage lose nothing (the hold), a kill -9 during an outage
 * loses nothing, a segment held past the max hold is given up and counted,
 * and resharding under load keeps every series in order -- with the old
 * shards drained, and with them stopped (the filter path). Every wait is
 * bounded. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/wait.h>

#include <cmocka.h>

#include "rx.h"

#define WAIT_MS 30000
#define T0      1700000000000LL
#define SEG     ((uint64_t)64 << 10)

typedef struct fixture {
    rx r;
    char *dir;
    tsdb_db *db;
} fixture;

static int setup(void **state) {
    fixture *f = calloc(1, sizeof *f);
    rx_start(&f->r);
    f->dir = rx_tmpdir();
    f->db = rx_db_open(f->dir, SEG, 0);
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fixture *f = *state;
    if (rx_live_m) rx_manager_free(rx_live_m);
    if (f->db) assert_int_equal(tsdb_db_close(f->db), 0);
    rx_stop(&f->r);
    rx_rm_rf(f->dir);
    free(f->dir);
    free(f);
    rx_reshard_ms = 0;
    return 0;
}

static uint64_t rx_get(rx *r, uint64_t *field) {
    pthread_mutex_lock(&r->mu);
    uint64_t v = *field;
    pthread_mutex_unlock(&r->mu);
    return v;
}

/* Every series name{i} (i < n) has exactly samples T0 + k*step for k in
 * [k0, k1) with value k + i, and nothing arrived twice or out of order. */
static void expect_all(rx *r, const char *name, int n, int k0, int k1, int64_t step) {
    pthread_mutex_lock(&r->mu);
    assert_int_equal(r->dups, 0);
    assert_int_equal(r->ooo, 0);
    assert_int_equal(r->unsorted, 0);
    for (int i = 0; i < n; i++) {
        char key[128];
        snprintf(key, sizeof key, "__name__=%s,i=%d", name, i);
        const rx_series *s = rx_find(r, key);
        if (!s) fail_msg("no series %s", key);
        if (s->n != (size_t)(k1 - k0)) fail_msg("%s: %zu samples, want %d", key, s->n, k1 - k0);
        for (int k = k0; k < k1; k++) {
            assert_int_equal(s->t[k - k0], T0 + (int64_t)k * step);
            assert_true(s->v[k - k0] == (double)(k + i));
        }
    }
    pthread_mutex_unlock(&r->mu);
}

static cfg_config *cfg_for(rx *r, const char *extra) {
    return rx_cfg("remote_write:\n"
                  "  - url: http://127.0.0.1:%u/write\n"
                  "    queue_config:\n"
                  "      batch_send_deadline: 20ms\n"
                  "      min_backoff: 10ms\n"
                  "      max_backoff: 50ms\n"
                  "%s",
                  r->port, extra ? extra : "");
}

static void reopen(fixture *f, const cfg_config *c) {
    assert_int_equal(tsdb_db_close(f->db), 0);
    f->db = rx_db_open(f->dir, SEG, remote_hold_from(f->dir, c));
}

static void checkpoint(tsdb_db *db) {
    char err[256] = "";
    if (tsdb_head_checkpoint(tsdb_db_head(db), INT64_MIN, err, sizeof err) != 0)
        fail_msg("checkpoint: %s", err);
}

static uint64_t first_segment(const char *dir) {
    char wal[512];
    snprintf(wal, sizeof wal, "%s/wal", dir);
    uint64_t *segs = NULL, ck = 0;
    size_t n = 0;
    assert_int_equal(tsdb_wal_list(wal, &segs, &n, &ck), 0);
    uint64_t first = n ? segs[0] : 0;
    free(segs);
    return first;
}

/* ---- restart ---------------------------------------------------------------- */

static void test_restart_resumes(void **state) {
    fixture *f = *state;
    cfg_config *c = cfg_for(&f->r, NULL);
    remote_manager *m = rx_manager(f->db, f->dir, c, 2000, 0);
    for (int k = 0; k < 30; k++) rx_append_round(f->db, "m", 5, T0 + k * 1000, k);
    assert_true(rx_wait_samples(&f->r, 150, WAIT_MS));
    rx_manager_free(m);
    /* kelvin down: the WAL grows */
    reopen(f, c);
    for (int k = 30; k < 60; k++) rx_append_round(f->db, "m", 5, T0 + k * 1000, k);
    m = rx_manager(f->db, f->dir, c, 2000, 0);
    for (int k = 60; k < 70; k++) rx_append_round(f->db, "m", 5, T0 + k * 1000, k);
    assert_true(rx_wait_samples(&f->r, 350, WAIT_MS));
    usleep(300 * 1000);
    assert_int_equal(rx_get(&f->r, &f->r.samples), 350);
    expect_all(&f->r, "m", 5, 0, 70, 1000);
    /* and once more with the receiver down across the restart */
    rx_down(&f->r);
    for (int k = 70; k < 90; k++) rx_append_round(f->db, "m", 5, T0 + k * 1000, k);
    assert_true(rx_wait_metric(m, "prometheus_remote_storage_samples_retried_total", 1, WAIT_MS));
    rx_manager_free(m); /* cannot flush: the position stays before them */
    reopen(f, c);
    m = rx_manager(f->db, f->dir, c, 2000, 0);
    rx_up(&f->r);
    assert_true(rx_wait_samples(&f->r, 450, WAIT_MS));
    usleep(300 * 1000);
    assert_int_equal(rx_get(&f->r, &f->r.samples), 450);
    expect_all(&f->r, "m", 5, 0, 90, 1000);
    rx_manager_free(m);
    cfg_free(c);
}

/* stopped while records are half acknowledged (batches of 7, records of
 * 10): the position file keeps which samples of a record went */
static void test_restart_mid_record(void **state) {
    fixture *f = *state;
    cfg_config *c = cfg_for(&f->r, "      max_samples_per_send: 7\n");
    f->r.delay_ms = 30;
    remote_manager *m = rx_manager(f->db, f->dir, c, 1, 0);
    for (int k = 0; k < 40; k++) rx_append_round(f->db, "m", 10, T0 + k * 1000, k);
    assert_true(rx_wait_samples(&f->r, 60, WAIT_MS));
    rx_manager_free(m);
    uint64_t sent = rx_get(&f->r, &f->r.samples);
    assert_true(sent < 400);
    f->r.delay_ms = 0;
    reopen(f, c);
    m = rx_manager(f->db, f->dir, c, 2000, 0);
    assert_true(rx_wait_samples(&f->r, 400, WAIT_MS));
    usleep(300 * 1000);
    assert_int_equal(rx_get(&f->r, &f->r.samples), 400);
    expect_all(&f->r, "m", 10, 0, 40, 1000);
    rx_manager_free(m);
    cfg_free(c);
}

/* ---- checkpoints and holds ------------------------------------------------------ */

static void test_checkpoints_during_outage(void **state) {
    fixture *f = *state;
    cfg_config *c = cfg_for(&f->r, NULL);
    remote_manager *m = rx_manager(f->db, f->dir, c, 2000, 0);
    rx_down(&f->r);
    int n = 100, rounds = 600;
    for (int k = 0; k < rounds; k++) {
        rx_append_round(f->db, "m", n, T0 + k * 1000, k);
        if (k % 150 == 149) checkpoint(f->db);
    }
    checkpoint(f->db);
    /* the checkpoints kept every segment the queue has not sent */
    assert_int_equal(first_segment(f->dir), 1);
    assert_true(tsdb_wal_segment(tsdb_db_wal(f->db)) > 4);
    rx_up(&f->r);
    assert_true(rx_wait_samples(&f->r, (uint64_t)n * rounds, WAIT_MS));
    usleep(300 * 1000);
    assert_int_equal(rx_get(&f->r, &f->r.samples), (uint64_t)n * rounds);
    expect_all(&f->r, "m", n, 0, rounds, 1000);
    /* sent: the hold moves on and the next checkpoint deletes them */
    usleep(1500 * 1000);
    checkpoint(f->db);
    assert_true(first_segment(f->dir) > 1);
    assert_true(rx_metric(m, "kelvin_remote_storage_wal_position_segment") > 1);
    rx_manager_free(m);
    cfg_free(c);
}

static void test_hold_from_across_restart(void **state) {
    fixture *f = *state;
    cfg_config *c = cfg_for(&f->r, NULL);
    remote_manager *m = rx_manager(f->db, f->dir, c, 500, 0);
    rx_down(&f->r);
    for (int k = 0; k < 300; k++) rx_append_round(f->db, "m", 100, T0 + k * 1000, k);
    rx_manager_free(m);
    assert_int_equal(remote_hold_from(f->dir, c), 1);
    /* kelvin restarts: the WAL open keeps what the queue needs, even when a
     * checkpoint happens before the queue runs again */
    reopen(f, c);
    checkpoint(f->db);
    assert_int_equal(first_segment(f->dir), 1);
    for (int k = 300; k < 320; k++) rx_append_round(f->db, "m", 100, T0 + k * 1000, k);
    checkpoint(f->db);
    m = rx_manager(f->db, f->dir, c, 2000, 0);
    rx_up(&f->r);
    assert_true(rx_wait_samples(&f->r, 32000, WAIT_MS));
    usleep(300 * 1000);
    assert_int_equal(rx_get(&f->r, &f->r.samples), 32000);
    expect_all(&f->r, "m", 100, 0, 320, 1000);
    rx_manager_free(m);
    cfg_free(c);
}

/* ---- kill -9 ---------------------------------------------------------------------- */

/* The child is forked before any thread of this process exists (no
 * receiver yet: it is down for the whole life of the child), so the test
 * runs under ThreadSanitizer too. */
static int setup_norx(void **state) {
    fixture *f = calloc(1, sizeof *f);
    f->r.port = rx_free_port();
    f->dir = rx_tmpdir();
    *state = f;
    return 0;
}

static int teardown_norx(void **state) {
    fixture *f = *state;
    if (rx_live_m) rx_manager_free(rx_live_m);
    if (f->db) assert_int_equal(tsdb_db_close(f->db), 0);
    if (f->r.acc) rx_stop(&f->r);
    rx_rm_rf(f->dir);
    free(f->dir);
    free(f);
    return 0;
}

static void test_kill9_during_outage(void **state) {
    fixture *f = *state;
    cfg_config *c = cfg_for(&f->r, NULL);
    int pfd[2];
    assert_int_equal(pipe(pfd), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        /* the kelvin that gets killed: appends, acknowledges nothing (the
         * receiver is down), checkpoints, then says so and waits */
        close(pfd[0]);
        tsdb_db *db = rx_db_open(f->dir, SEG, 0);
        remote_manager *cm = rx_manager(db, f->dir, c, 2000, 0);
        (void)cm; /* never freed: this process is killed */
        for (int k = 0; k < 200; k++) {
            rx_append_round(db, "m", 100, T0 + k * 1000, k);
            if (k == 120) checkpoint(db);
        }
        checkpoint(db);
        if (write(pfd[1], "x", 1) != 1) _exit(1);
        for (;;) pause();
    }
    close(pfd[1]);
    char b;
    assert_int_equal(read(pfd[0], &b, 1), 1);
    close(pfd[0]);
    usleep(200 * 1000);
    kill(pid, SIGKILL);
    int st;
    waitpid(pid, &st, 0);
    assert_true(WIFSIGNALED(st));
    f->db = rx_db_open(f->dir, SEG, remote_hold_from(f->dir, c));
    remote_manager *m = rx_manager(f->db, f->dir, c, 2000, 0);
    rx_start_on(&f->r, f->r.port);
    assert_true(rx_wait_samples(&f->r, 20000, WAIT_MS));
    usleep(300 * 1000);
    assert_int_equal(rx_get(&f->r, &f->r.samples), 20000);
    expect_all(&f->r, "m", 100, 0, 200, 1000);
    rx_manager_free(m);
    cfg_free(c);
}

/* ---- max hold -------------------------------------------------------------------------- */

static void test_max_hold(void **state) {
    fixture *f = *state;
    cfg_config *c = cfg_for(&f->r, NULL);
    remote_manager *m = rx_manager(f->db, f->dir, c, 500, 600);
    rx_down(&f->r);
    int rounds = 0;
    tsdb_wal *w = tsdb_db_wal(f->db);
    while (tsdb_wal_segment(w) < 4 && rounds < 5000) {
        rx_append_round(f->db, "m", 100, T0 + rounds * 1000LL, rounds);
        rounds++;
    }
    assert_true(tsdb_wal_segment(w) >= 4);
    uint64_t total = (uint64_t)rounds * 100;
    /* the finished segments get older than 600 ms: given up one by one */
    assert_true(rx_wait_metric(m, "kelvin_remote_storage_wal_segments_given_up_total", 3, WAIT_MS));
    int64_t hend = base_mono_ns() + 5000LL * 1000000;
    while (tsdb_wal_held(w) < 4 && base_mono_ns() < hend) usleep(20000);
    assert_true(tsdb_wal_held(w) >= 4);
    double dropped = rx_metric(m, "prometheus_remote_storage_samples_dropped_total");
    assert_true(dropped > 0);
    rx_up(&f->r);
    /* what the newest segment holds still goes */
    assert_true(rx_wait_samples(&f->r, 1, WAIT_MS));
    int64_t end = base_mono_ns() + 5000LL * 1000000;
    while (rx_get(&f->r, &f->r.samples) + (uint64_t)dropped < total && base_mono_ns() < end) usleep(20000);
    usleep(300 * 1000);
    uint64_t got = rx_get(&f->r, &f->r.samples);
    assert_true(got + (uint64_t)dropped >= total);
    assert_true(got < total);
    pthread_mutex_lock(&f->r.mu);
    assert_int_equal(f->r.dups, 0);
    assert_int_equal(f->r.ooo, 0);
    pthread_mutex_unlock(&f->r.mu);
    rx_manager_free(m);
    cfg_free(c);
}

/* ---- resharding ------------------------------------------------------------------- */

static void reshard_run(fixture *f, int64_t flush_ms) {
    cfg_config *c = cfg_for(&f->r, "      max_samples_per_send: 50\n"
                                   "      capacity: 100\n"
                                   "      min_shards: 1\n"
                                   "      max_shards: 6\n");
    rx_reshard_ms = 150;
    f->r.delay_ms = 4;
    remote_manager *m = rx_manager(f->db, f->dir, c, flush_ms, 0);
    int n = 60, rounds = 400;
    double max_shards = 0;
    for (int k = 0; k < rounds; k++) {
        rx_append_round(f->db, "m", n, T0 + k * 15000LL, k);
        if (k % 20 == 0) {
            double s = rx_metric(m, "prometheus_remote_storage_shards");
            if (s > max_shards) max_shards = s;
        }
    }
    int64_t end = base_mono_ns() + (int64_t)WAIT_MS * 1000000;
    while (rx_get(&f->r, &f->r.samples) < (uint64_t)n * rounds && base_mono_ns() < end) {
        double s = rx_metric(m, "prometheus_remote_storage_shards");
        if (s > max_shards) max_shards = s;
        usleep(20000);
    }
    usleep(300 * 1000);
    assert_true(max_shards > 1);
    assert_true(rx_metric(m, "prometheus_remote_storage_shards_desired") > 0);
    assert_int_equal(rx_get(&f->r, &f->r.samples), (uint64_t)n * rounds);
    expect_all(&f->r, "m", n, 0, rounds, 15000);
    rx_manager_free(m);
    cfg_free(c);
}

static void test_reshard_drained(void **state) {
    reshard_run(*state, 10000);
}

/* a flush deadline too short to drain: the old shards are stopped and the
 * WAL is read again from the position, skipping what they acknowledged */
static void test_reshard_stopped(void **state) {
    reshard_run(*state, 1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_restart_resumes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_restart_mid_record, setup, teardown),
        cmocka_unit_test_setup_teardown(test_checkpoints_during_outage, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hold_from_across_restart, setup, teardown),
        cmocka_unit_test_setup_teardown(test_kill9_during_outage, setup_norx, teardown_norx),
        cmocka_unit_test_setup_teardown(test_max_hold, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reshard_drained, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reshard_stopped, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
