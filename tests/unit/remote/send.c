/* tests/unit/remote/send.c -- the remote write sender against a receiver
 * on 127.0.0.1 (rx.h): what arrives (every sample once, in order per
 * series, labels sorted, external labels unless the series has the name,
 * write relabeling, staleness markers bit for bit), the headers, 5xx
 * retried, 4xx dropped and counted, 429 with and without
 * retry_on_http_429 (Retry-After honoured), a receiver that is down then
 * up, metadata, and reloads (kept, changed, removed queues). Every wait is
 * bounded. */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "base/num.h"
#include "rx.h"

#define WAIT_MS 20000
#define T0      1700000000000LL

typedef struct fixture {
    rx r;
    char *dir;
    tsdb_db *db;
} fixture;

static int setup(void **state) {
    fixture *f = calloc(1, sizeof *f);
    rx_start(&f->r);
    f->dir = rx_tmpdir();
    f->db = rx_db_open(f->dir, 0, 0);
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fixture *f = *state;
    if (rx_live_m) rx_manager_free(rx_live_m);
    assert_int_equal(tsdb_db_close(f->db), 0);
    rx_stop(&f->r);
    rx_rm_rf(f->dir);
    free(f->dir);
    free(f);
    return 0;
}

static uint64_t rx_get(rx *r, uint64_t *field) {
    pthread_mutex_lock(&r->mu);
    uint64_t v = *field;
    pthread_mutex_unlock(&r->mu);
    return v;
}

static void expect_clean(rx *r) {
    pthread_mutex_lock(&r->mu);
    assert_int_equal(r->dups, 0);
    assert_int_equal(r->ooo, 0);
    assert_int_equal(r->unsorted, 0);
    assert_int_equal(r->bad_bodies, 0);
    pthread_mutex_unlock(&r->mu);
}

/* Series m{i} has samples T0 + k*1000 = k + i for k in [k0, k1). */
static void expect_series(rx *r, const char *key, int k0, int k1, int i) {
    pthread_mutex_lock(&r->mu);
    const rx_series *s = rx_find(r, key);
    if (!s) fail_msg("no series %s", key);
    assert_int_equal(s->n, (size_t)(k1 - k0));
    for (int k = k0; k < k1; k++) {
        assert_int_equal(s->t[k - k0], T0 + (int64_t)k * 1000);
        assert_true(s->v[k - k0] == (double)(k + i));
    }
    pthread_mutex_unlock(&r->mu);
}

static void test_delivery(void **state) {
    fixture *f = *state;
    cfg_config *c = rx_cfg("global:\n"
                           "  external_labels:\n"
                           "    cluster: a\n"
                           "    i: never\n"
                           "remote_write:\n"
                           "  - url: http://127.0.0.1:%u/api/v1/write\n"
                           "    headers:\n"
                           "      X-Test: hello\n"
                           "    queue_config:\n"
                           "      batch_send_deadline: 50ms\n"
                           "      max_samples_per_send: 7\n"
                           "    write_relabel_configs:\n"
                           "      - source_labels: [drop]\n"
                           "        regex: 'yes'\n"
                           "        action: drop\n"
                           "      - target_label: rw\n"
                           "        replacement: x\n",
                           f->r.port);
    remote_manager *m = rx_manager(f->db, f->dir, c, 2000, 0);
    for (int k = 0; k < 50; k++) {
        rx_append_round(f->db, "m", 10, T0 + k * 1000, k);
        rx_append(f->db, "d", 0, "drop", "yes", T0 + k * 1000, k);
    }
    rx_append(f->db, "s", 0, NULL, NULL, T0, 1);
    rx_append(f->db, "s", 0, NULL, NULL, T0 + 1000, base_stale_nan());
    assert_true(rx_wait_samples(&f->r, 502, WAIT_MS));
    usleep(200 * 1000);
    assert_int_equal(rx_get(&f->r, &f->r.samples), 502);
    expect_clean(&f->r);
    for (int i = 0; i < 10; i++) {
        char key[128];
        snprintf(key, sizeof key, "__name__=m,cluster=a,i=%d,rw=x", i);
        expect_series(&f->r, key, 0, 50, i);
    }
    pthread_mutex_lock(&f->r.mu);
    const rx_series *s = rx_find(&f->r, "__name__=s,cluster=a,i=0,rw=x");
    assert_non_null(s);
    assert_int_equal(s->n, 2);
    assert_true(base_is_stale(s->v[1]));
    for (size_t i = 0; i < f->r.ns; i++) assert_null(strstr(f->r.s[i].key, "__name__=d"));
    assert_true(strncmp(f->r.ua, "kelvin/", 7) == 0);
    assert_string_equal(f->r.ctype, "application/x-protobuf");
    assert_string_equal(f->r.cenc, "snappy");
    assert_string_equal(f->r.version, "0.1.0");
    assert_string_equal(f->r.custom, "hello");
    pthread_mutex_unlock(&f->r.mu);
    assert_true(rx_metric(m, "prometheus_remote_storage_samples_total") == 502);
    assert_true(rx_metric(m, "prometheus_remote_storage_samples_dropped_total") == 50);
    assert_true(rx_metric(m, "prometheus_remote_storage_samples_failed_total") == 0);
    assert_true(rx_metric(m, "prometheus_remote_storage_samples_pending") == 0);
    assert_true(rx_metric(m, "prometheus_remote_storage_queue_highest_sent_timestamp_seconds") ==
                (double)((T0 + 49000) / 1000));
    assert_true(rx_metric(m, "prometheus_remote_storage_shards") == 1);
    assert_true(rx_metric(m, "prometheus_remote_storage_bytes_total") > 0);
    assert_true(rx_metric(m, "prometheus_remote_storage_sent_batch_duration_seconds_count") > 0);
    rx_manager_free(m);
    cfg_free(c);
}

static cfg_config *simple_cfg(rx *r, const char *extra) {
    return rx_cfg("remote_write:\n"
                  "  - url: http://127.0.0.1:%u/write\n"
                  "    queue_config:\n"
                  "      batch_send_deadline: 20ms\n"
                  "      min_backoff: 10ms\n"
                  "      max_backoff: 40ms\n"
                  "%s",
                  r->port, extra ? extra : "");
}

static void test_5xx_retried(void **state) {
    fixture *f = *state;
    cfg_config *c = simple_cfg(&f->r, NULL);
    rx_script(&f->r, 204, 5, 503, NULL);
    remote_manager *m = rx_manager(f->db, f->dir, c, 2000, 0);
    for (int k = 0; k < 20; k++) rx_append_round(f->db, "m", 5, T0 + k * 1000, k);
    assert_true(rx_wait_samples(&f->r, 100, WAIT_MS));
    usleep(100 * 1000);
    assert_int_equal(rx_get(&f->r, &f->r.samples), 100);
    expect_clean(&f->r);
    assert_true(rx_get(&f->r, &f->r.requests) >= 6);
    assert_true(rx_metric(m, "prometheus_remote_storage_samples_retried_total") > 0);
    assert_true(rx_metric(m, "prometheus_remote_storage_samples_failed_total") == 0);
    for (int i = 0; i < 5; i++) {
        char key[64];
        snprintf(key, sizeof key, "__name__=m,i=%d", i);
        expect_series(&f->r, key, 0, 20, i);
    }
    rx_manager_free(m);
    cfg_free(c);
}

static void test_4xx_dropped(void **state) {
    fixture *f = *state;
    cfg_config *c = simple_cfg(&f->r, NULL);
    rx_script(&f->r, 400, 0, 0, NULL);
    remote_manager *m = rx_manager(f->db, f->dir, c, 2000, 0);
    for (int k = 0; k < 10; k++) rx_append_round(f->db, "m", 3, T0 + k * 1000, k);
    assert_true(rx_wait_metric(m, "prometheus_remote_storage_samples_failed_total", 30, WAIT_MS));
    assert_int_equal(rx_get(&f->r, &f->r.samples), 0);
    assert_true(rx_metric(m, "prometheus_remote_storage_samples_retried_total") == 0);
    /* the queue goes on with what follows */
    rx_script(&f->r, 204, 0, 0, NULL);
    for (int k = 10; k < 20; k++) rx_append_round(f->db, "m", 3, T0 + k * 1000, k);
    assert_true(rx_wait_samples(&f->r, 30, WAIT_MS));
    usleep(100 * 1000);
    assert_int_equal(rx_get(&f->r, &f->r.samples), 30);
    expect_series(&f->r, "__name__=m,i=2", 10, 20, 2);
    assert_true(rx_metric(m, "prometheus_remote_storage_samples_failed_total") == 30);
    expect_clean(&f->r);
    rx_manager_free(m);
    cfg_free(c);
}

static void test_429(void **state) {
    fixture *f = *state;
    /* without retry_on_http_429: a 429 is final */
    cfg_config *c = simple_cfg(&f->r, NULL);
    rx_script(&f->r, 204, 1, 429, "1");
    remote_manager *m = rx_manager(f->db, f->dir, c, 2000, 0);
    for (int k = 0; k < 4; k++) rx_append_round(f->db, "m", 2, T0 + k * 1000, k);
    assert_true(rx_wait_metric(m, "prometheus_remote_storage_samples_failed_total", 1, WAIT_MS));
    rx_manager_free(m);
    cfg_free(c);
    /* with it: retried after Retry-After (1s each, not the 10ms backoff) */
    uint64_t before = rx_get(&f->r, &f->r.samples);
    c = simple_cfg(&f->r, "      retry_on_http_429: true\n");
    rx_script(&f->r, 204, 2, 429, "1");
    m = rx_manager(f->db, f->dir, c, 2000, 0);
    int64_t t0 = base_mono_ns();
    for (int k = 10; k < 14; k++) rx_append_round(f->db, "m", 2, T0 + k * 1000, k);
    assert_true(rx_wait_samples(&f->r, before + 8, WAIT_MS));
    assert_true(base_mono_ns() - t0 >= 1900LL * 1000000);
    assert_true(rx_metric(m, "prometheus_remote_storage_samples_retried_total") > 0);
    assert_true(rx_metric(m, "prometheus_remote_storage_samples_failed_total") == 0);
    expect_clean(&f->r);
    rx_manager_free(m);
    cfg_free(c);
}

static void test_down_then_up(void **state) {
    fixture *f = *state;
    cfg_config *c = simple_cfg(&f->r, NULL);
    remote_manager *m = rx_manager(f->db, f->dir, c, 2000, 0);
    rx_append_round(f->db, "m", 4, T0, 0);
    assert_true(rx_wait_samples(&f->r, 4, WAIT_MS));
    rx_down(&f->r);
    for (int k = 1; k < 100; k++) rx_append_round(f->db, "m", 4, T0 + k * 1000, k);
    assert_true(rx_wait_metric(m, "prometheus_remote_storage_samples_retried_total", 1, WAIT_MS));
    usleep(300 * 1000);
    assert_true(rx_metric(m, "prometheus_remote_storage_samples_pending") > 0);
    rx_up(&f->r);
    assert_true(rx_wait_samples(&f->r, 400, WAIT_MS));
    usleep(200 * 1000);
    assert_int_equal(rx_get(&f->r, &f->r.samples), 400);
    expect_clean(&f->r);
    for (int i = 0; i < 4; i++) {
        char key[64];
        snprintf(key, sizeof key, "__name__=m,i=%d", i);
        expect_series(&f->r, key, 0, 100, i);
    }
    assert_true(rx_metric(m, "prometheus_remote_storage_samples_failed_total") == 0);
    rx_manager_free(m);
    cfg_free(c);
}

/* ---- metadata ------------------------------------------------------------------ */

static void md_source(void *sctx, remote_metadata_emit emit, void *ectx) {
    (void)sctx;
    for (int rep = 0; rep < 3; rep++) { /* as many targets would: repeats */
        emit(ectx, base_str_c("gpu_temp"), EXPO_GAUGE, base_str_c("GPU temperature."), base_str_c("celsius"));
        emit(ectx, base_str_c("http_requests"), EXPO_COUNTER, base_str_c("Requests."), base_str_c(""));
        emit(ectx, base_str_c("lat"), EXPO_HISTOGRAM, base_str_c("Latency."), base_str_c(""));
    }
}

static void test_metadata(void **state) {
    fixture *f = *state;
    cfg_config *c = simple_cfg(&f->r, "    metadata_config:\n"
                                      "      send_interval: 100ms\n"
                                      "      max_samples_per_send: 2\n");
    rx_md_fn = md_source;
    remote_manager *m = rx_manager(f->db, f->dir, c, 2000, 0);
    rx_md_fn = NULL;
    assert_true(rx_wait_metric(m, "prometheus_remote_storage_metadata_total", 6, WAIT_MS));
    rx_manager_free(m);
    pthread_mutex_lock(&f->r.mu);
    assert_true(f->r.nmd >= 6);
    int seen[3] = {0};
    for (size_t i = 0; i < f->r.nmd; i++) {
        const char *l = f->r.md[i].line;
        if (!strcmp(l, "2|gpu_temp|GPU temperature.|celsius"))
            seen[0]++;
        else if (!strcmp(l, "1|http_requests|Requests.|"))
            seen[1]++;
        else if (!strcmp(l, "3|lat|Latency.|"))
            seen[2]++;
        else
            fail_msg("unexpected metadata %s", l);
    }
    /* one of each per round: the repeats are not sent */
    assert_true(seen[0] >= 2 && seen[0] == seen[1] && seen[1] == seen[2]);
    pthread_mutex_unlock(&f->r.mu);
    cfg_free(c);
}

/* ---- reloads ---------------------------------------------------------------------- */

static void test_reload(void **state) {
    fixture *f = *state;
    cfg_config *c1 = simple_cfg(&f->r, NULL);
    remote_manager *m = rx_manager(f->db, f->dir, c1, 2000, 0);
    for (int k = 0; k < 10; k++) rx_append_round(f->db, "m", 2, T0 + k * 1000, k);
    assert_true(rx_wait_samples(&f->r, 20, WAIT_MS));
    /* the same configuration again: nothing restarts, nothing is sent twice */
    cfg_config *c2 = simple_cfg(&f->r, NULL);
    char err[256];
    assert_int_equal(remote_manager_apply(m, c2, err, sizeof err), 0);
    cfg_free(c1);
    for (int k = 10; k < 20; k++) rx_append_round(f->db, "m", 2, T0 + k * 1000, k);
    assert_true(rx_wait_samples(&f->r, 40, WAIT_MS));
    /* a changed relabeling: the queue restarts from its position */
    cfg_config *c3 = simple_cfg(&f->r, "    write_relabel_configs:\n"
                                       "      - target_label: v\n"
                                       "        replacement: '2'\n");
    assert_int_equal(remote_manager_apply(m, c3, err, sizeof err), 0);
    cfg_free(c2);
    for (int k = 20; k < 30; k++) rx_append_round(f->db, "m", 2, T0 + k * 1000, k);
    assert_true(rx_wait_samples(&f->r, 60, WAIT_MS));
    usleep(200 * 1000);
    assert_int_equal(rx_get(&f->r, &f->r.samples), 60);
    expect_clean(&f->r);
    expect_series(&f->r, "__name__=m,i=1", 0, 20, 1);
    expect_series(&f->r, "__name__=m,i=1,v=2", 20, 30, 1);
    /* removed: stopped, and its position file is gone */
    char rw[512];
    snprintf(rw, sizeof rw, "%s/remote-write", f->dir);
    cfg_config *c4 = rx_cfg("global:\n  scrape_interval: 15s\n");
    assert_int_equal(remote_manager_apply(m, c4, err, sizeof err), 0);
    cfg_free(c3);
    assert_true(rx_metric(m, "prometheus_remote_storage_shards") == 0);
    DIR *d = opendir(rw);
    assert_non_null(d);
    struct dirent *de;
    int files = 0;
    while ((de = readdir(d)))
        if (de->d_name[0] != '.') files++;
    closedir(d);
    assert_int_equal(files, 0);
    rx_manager_free(m);
    cfg_free(c4);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_delivery, setup, teardown),
        cmocka_unit_test_setup_teardown(test_5xx_retried, setup, teardown),
        cmocka_unit_test_setup_teardown(test_4xx_dropped, setup, teardown),
        cmocka_unit_test_setup_teardown(test_429, setup, teardown),
        cmocka_unit_test_setup_teardown(test_down_then_up, setup, teardown),
        cmocka_unit_test_setup_teardown(test_metadata, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reload, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
