/* tests/unit/discovery/file_sd.c -- file_sd through the manager: the
 * initial groups arrive; rewrites in place and by rename are seen (inotify,
 * with a refresh interval far too long to matter); a broken rewrite keeps
 * the old groups; a deleted file's groups go; a glob picks up a new file;
 * a missing directory appears later (polling); a Kubernetes-style
 * "..data" symlink swap is seen; static groups come first. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "base/buf.h"
#include "discovery/discovery.h"
#include "testutil.h"

#define WAIT_MS 5000

static char *expect_line(const char *path, int idx, const char *labels, const char *targets) {
    base_buf b = BASE_BUF_INIT;
    base_buf_init(&b, 0);
    base_buf_printf(&b, "%s:%d {__meta_filepath=\"%s\"%s%s}%s\n", path, idx, path, labels[0] ? ", " : "",
                    labels, targets);
    size_t n;
    return base_buf_steal(&b, &n);
}

static void test_file_lifecycle(void **state) {
    (void)state;
    char *dir = tu_tmpdir();
    char *a = tu_path(dir, "a.json");
    char *bf = tu_path(dir, "b.json");
    char *y = tu_path(dir, "c.yml");
    char *glob = tu_path(dir, "*.json");
    tu_write(a, "[{\"targets\": [\"h1:9100\"], \"labels\": {\"env\": \"prod\"}}]");
    tu_write(y, "- targets: ['h9:1']\n");

    tcfg *t = tcfg_new();
    cfg_sd *sd = tcfg_job(t, "job");
    const char *st[] = {"s:1", NULL};
    tcfg_static(sd, st, NULL);
    const char *files[] = {glob, y, NULL};
    tcfg_file(sd, files, 3600 * 1000);

    rec r;
    rec_init(&r);
    disc_opts o = {.sink = rec_sink, .sink_ctx = &r, .update_interval_ms = 50};
    disc_manager *m = NULL;
    char err[256];
    assert_int_equal(disc_manager_new(&o, &m, err, sizeof err), 0);
    int64_t t0 = base_mono_ns();
    assert_int_equal(disc_manager_apply(m, &t->c, err, sizeof err), 0);
    tcfg_free(t); /* apply copies what it needs */

    char *la = expect_line(a, 0, "env=\"prod\"", " {__address__=\"h1:9100\"}");
    char *ly = expect_line(y, 0, "", " {__address__=\"h9:1\"}");
    char want[4096];
    snprintf(want, sizeof want, "0 {} {__address__=\"s:1\"}\n%s%s", la, ly);
    assert_true(rec_wait(&r, "job", want, WAIT_MS));
    assert_true(base_mono_ns() - t0 < 1000000000LL); /* promptly */
    free(la);

    /* rewrite in place */
    tu_write(a, "[{\"targets\": [\"h1:9100\", \"h2:9100\"], \"labels\": {\"env\": \"dev\"}}]");
    la = expect_line(a, 0, "env=\"dev\"", " {__address__=\"h1:9100\"} {__address__=\"h2:9100\"}");
    snprintf(want, sizeof want, "0 {} {__address__=\"s:1\"}\n%s%s", la, ly);
    assert_true(rec_wait(&r, "job", want, WAIT_MS));
    free(la);

    /* rewrite by rename, as editors do; two groups now */
    tu_write_rename(a, "[{\"targets\": [\"h3:1\"]}, {\"targets\": [\"h4:1\"], \"labels\": {\"g\": \"2\"}}]");
    char *la0 = expect_line(a, 0, "", " {__address__=\"h3:1\"}");
    char *la1 = expect_line(a, 1, "g=\"2\"", " {__address__=\"h4:1\"}");
    snprintf(want, sizeof want, "0 {} {__address__=\"s:1\"}\n%s%s%s", la0, la1, ly);
    assert_true(rec_wait(&r, "job", want, WAIT_MS));
    int calls = rec_calls(&r, "job");

    /* a broken rewrite keeps the old groups (and counts a failure) */
    disc_stats s0, s1;
    disc_manager_stats(m, &s0);
    tu_write_rename(a, "[{\"targets\": [\"h5:1\"], \"labels\": {\"bad-name\": \"x\"}}]");
    int64_t end = base_mono_ns() + (int64_t)WAIT_MS * 1000000;
    do {
        sleep_ms(20);
        disc_manager_stats(m, &s1);
    } while (s1.failures[0] == s0.failures[0] && base_mono_ns() < end);
    assert_true(s1.failures[0] > s0.failures[0]);
    sleep_ms(200);
    assert_true(rec_wait(&r, "job", want, 10));
    assert_int_equal(rec_calls(&r, "job"), calls);
    tu_write(a, "not json");
    sleep_ms(300);
    assert_true(rec_wait(&r, "job", want, 10));

    /* the glob picks up a new file */
    tu_write_rename(bf, "[{\"targets\": [\"b1:1\"]}]");
    char *lb = expect_line(bf, 0, "", " {__address__=\"b1:1\"}");
    snprintf(want, sizeof want, "0 {} {__address__=\"s:1\"}\n%s%s%s%s", la0, la1, lb, ly);
    assert_true(rec_wait(&r, "job", want, WAIT_MS));

    /* deleting a file removes its groups, even a broken one's */
    assert_int_equal(unlink(a), 0);
    snprintf(want, sizeof want, "0 {} {__address__=\"s:1\"}\n%s%s", lb, ly);
    assert_true(rec_wait(&r, "job", want, WAIT_MS));
    assert_int_equal(unlink(y), 0);
    snprintf(want, sizeof want, "0 {} {__address__=\"s:1\"}\n%s", lb);
    assert_true(rec_wait(&r, "job", want, WAIT_MS));

    disc_manager_stats(m, &s1);
    assert_int_equal(s1.providers, 2);
    assert_int_equal(s1.groups, 2);
    assert_int_equal(s1.targets, 2);
    assert_true(s1.refreshes[0] >= 5);
    assert_int_equal(s1.refreshes[3], 1);

    disc_manager_free(m);
    rec_free(&r);
    free(la0);
    free(la1);
    free(lb);
    free(ly);
    tu_rm_rf(dir);
    free(dir);
    free(a);
    free(bf);
    free(y);
    free(glob);
}

/* A directory that does not exist yet: the refresh interval finds it, and
 * from then on inotify watches it. */
static void test_file_late_dir(void **state) {
    (void)state;
    char *dir = tu_tmpdir();
    char *sub = tu_path(dir, "later");
    char *pat = tu_path(sub, "*.yaml");
    char *f = tu_path(sub, "t.yaml");
    tcfg *t = tcfg_new();
    const char *files[] = {pat, NULL};
    tcfg_file(tcfg_job(t, "late"), files, 200);
    rec r;
    rec_init(&r);
    disc_opts o = {.sink = rec_sink, .sink_ctx = &r, .update_interval_ms = 50};
    disc_manager *m = NULL;
    char err[256];
    assert_int_equal(disc_manager_new(&o, &m, err, sizeof err), 0);
    assert_int_equal(disc_manager_apply(m, &t->c, err, sizeof err), 0);
    assert_true(rec_wait(&r, "late", "", WAIT_MS)); /* a first, empty result */
    assert_int_equal(mkdir(sub, 0755), 0);
    tu_write(f, "- targets: [x:1]\n");
    char *l = expect_line(f, 0, "", " {__address__=\"x:1\"}");
    assert_true(rec_wait(&r, "late", l, WAIT_MS));
    free(l);
    tu_write_rename(f, "- targets: [x:2]\n");
    l = expect_line(f, 0, "", " {__address__=\"x:2\"}");
    assert_true(rec_wait(&r, "late", l, WAIT_MS));
    free(l);
    disc_manager_free(m);
    tcfg_free(t);
    rec_free(&r);
    tu_rm_rf(dir);
    free(dir);
    free(sub);
    free(pat);
    free(f);
}

/* Kubernetes ConfigMap updates: the file is a symlink through "..data",
 * and an update renames a new "..data" symlink into place. */
static void test_file_symlink_swap(void **state) {
    (void)state;
    char *dir = tu_tmpdir();
    char *r1 = tu_path(dir, "v1");
    char *r2 = tu_path(dir, "v2");
    char *data = tu_path(dir, "..data");
    char *tmp = tu_path(dir, "..data_tmp");
    char *f = tu_path(dir, "t.json");
    char *f1 = tu_path(r1, "t.json");
    char *f2 = tu_path(r2, "t.json");
    assert_int_equal(mkdir(r1, 0755), 0);
    assert_int_equal(mkdir(r2, 0755), 0);
    tu_write(f1, "[{\"targets\": [\"one:1\"]}]");
    tu_write(f2, "[{\"targets\": [\"two:2\"]}]");
    assert_int_equal(symlink("v1", data), 0);
    assert_int_equal(symlink("..data/t.json", f), 0);
    tcfg *t = tcfg_new();
    const char *files[] = {f, NULL};
    tcfg_file(tcfg_job(t, "k8s"), files, 3600 * 1000);
    rec r;
    rec_init(&r);
    disc_opts o = {.sink = rec_sink, .sink_ctx = &r, .update_interval_ms = 50};
    disc_manager *m = NULL;
    char err[256];
    assert_int_equal(disc_manager_new(&o, &m, err, sizeof err), 0);
    assert_int_equal(disc_manager_apply(m, &t->c, err, sizeof err), 0);
    char *l = expect_line(f, 0, "", " {__address__=\"one:1\"}");
    assert_true(rec_wait(&r, "k8s", l, WAIT_MS));
    free(l);
    assert_int_equal(symlink("v2", tmp), 0);
    assert_int_equal(rename(tmp, data), 0);
    l = expect_line(f, 0, "", " {__address__=\"two:2\"}");
    assert_true(rec_wait(&r, "k8s", l, WAIT_MS));
    free(l);
    disc_manager_free(m);
    tcfg_free(t);
    rec_free(&r);
    tu_rm_rf(dir);
    free(dir);
    free(r1);
    free(r2);
    free(data);
    free(tmp);
    free(f);
    free(f1);
    free(f2);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_file_lifecycle),
        cmocka_unit_test(test_file_late_dir),
        cmocka_unit_test(test_file_symlink_swap),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
