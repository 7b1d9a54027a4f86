/* tests/unit/discovery/manager.c -- the manager's reload and sending rules:
 * an unchanged configuration keeps its providers (no re-read, no new sink
 * call); a changed provider restarts; a removed set gets a last call with
 * no groups; alertmanager sets are "alertmanager/<i>"; a set with no
 * discovery gets one empty call; updates are debounced by the update
 * interval; bad configurations are refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/err.h"
#include "discovery/discovery.h"
#include "testutil.h"

#define WAIT_MS 5000

static tcfg *make_cfg(const char *file, const char *a_target, int with_b) {
    tcfg *t = tcfg_new();
    cfg_sd *a = tcfg_job(t, "a");
    const char *ta[] = {a_target, NULL};
    const char *la[] = {"team", "x", NULL};
    tcfg_static(a, ta, la);
    const char *files[] = {file, NULL};
    tcfg_file(a, files, 3600 * 1000);
    if (with_b) {
        cfg_sd *b = tcfg_job(t, "b");
        const char *tb[] = {"b:1", "b:2", NULL};
        tcfg_static(b, tb, NULL);
    }
    tcfg_job(t, "empty");
    cfg_sd *am = tcfg_am(t);
    const char *tam[] = {"am:9093", NULL};
    tcfg_static(am, tam, NULL);
    return t;
}

static void wait_stats(disc_manager *m, disc_stats *ret) {
    /* stats settle once the thread has run the new plan */
    sleep_ms(300);
    disc_manager_stats(m, ret);
}

static void test_apply(void **state) {
    (void)state;
    char *dir = tu_tmpdir();
    char *f = tu_path(dir, "t.json");
    tu_write(f, "[{\"targets\": [\"f:1\"]}]");
    char fline[512];
    snprintf(fline, sizeof fline, "%s:0 {__meta_filepath=\"%s\"} {__address__=\"f:1\"}\n", f, f);
    char want_a[1024];
    snprintf(want_a, sizeof want_a, "0 {team=\"x\"} {__address__=\"a:1\"}\n%s", fline);
    const char *want_b = "0 {} {__address__=\"b:1\"} {__address__=\"b:2\"}\n";

    rec r;
    rec_init(&r);
    disc_opts o = {.sink = rec_sink, .sink_ctx = &r, .update_interval_ms = 50};
    disc_manager *m = NULL;
    char err[256];
    assert_int_equal(disc_manager_new(&o, &m, err, sizeof err), 0);
    tcfg *c1 = make_cfg(f, "a:1", 1);
    assert_int_equal(disc_manager_apply(m, &c1->c, err, sizeof err), 0);
    assert_true(rec_wait(&r, "a", want_a, WAIT_MS));
    assert_true(rec_wait(&r, "b", want_b, WAIT_MS));
    assert_true(rec_wait(&r, "alertmanager/0", "0 {} {__address__=\"am:9093\"}\n", WAIT_MS));
    assert_true(rec_wait(&r, "empty", "", WAIT_MS));
    assert_int_equal(rec_calls(&r, "empty"), 1);
    disc_stats s1, s2;
    wait_stats(m, &s1);
    assert_int_equal(s1.providers, 4);
    assert_int_equal(s1.refreshes[0], 1); /* the file read once */
    assert_int_equal(s1.refreshes[3], 3); /* three static providers */
    assert_int_equal(s1.targets, 5);
    int ca = rec_calls(&r, "a"), cb = rec_calls(&r, "b");

    /* the same configuration again (a new object): nothing restarts, the
     * sink hears nothing new */
    tcfg *c2 = make_cfg(f, "a:1", 1);
    tcfg_free(c1);
    assert_int_equal(disc_manager_apply(m, &c2->c, err, sizeof err), 0);
    wait_stats(m, &s2);
    assert_int_equal(s2.refreshes[0], s1.refreshes[0]);
    assert_int_equal(s2.refreshes[3], s1.refreshes[3]);
    assert_int_equal(rec_calls(&r, "a"), ca);
    assert_int_equal(rec_calls(&r, "b"), cb);

    /* job a's static targets change: its static provider restarts, its
     * file provider is kept (not re-read), b is untouched */
    tcfg *c3 = make_cfg(f, "a:2", 1);
    tcfg_free(c2);
    assert_int_equal(disc_manager_apply(m, &c3->c, err, sizeof err), 0);
    snprintf(want_a, sizeof want_a, "0 {team=\"x\"} {__address__=\"a:2\"}\n%s", fline);
    assert_true(rec_wait(&r, "a", want_a, WAIT_MS));
    wait_stats(m, &s2);
    assert_int_equal(s2.refreshes[0], s1.refreshes[0]);
    assert_int_equal(s2.refreshes[3], s1.refreshes[3] + 1);
    assert_int_equal(rec_calls(&r, "b"), cb);

    /* b goes away: one last call with no groups */
    tcfg *c4 = make_cfg(f, "a:2", 0);
    tcfg_free(c3);
    assert_int_equal(disc_manager_apply(m, &c4->c, err, sizeof err), 0);
    assert_true(rec_wait(&r, "b", "", WAIT_MS));
    sleep_ms(200);
    assert_int_equal(rec_calls(&r, "b"), cb + 1);
    wait_stats(m, &s2);
    assert_int_equal(s2.providers, 3);

    /* an empty configuration ends every set */
    tcfg *c5 = tcfg_new();
    assert_int_equal(disc_manager_apply(m, &c5->c, err, sizeof err), 0);
    assert_true(rec_wait(&r, "a", "", WAIT_MS));
    assert_true(rec_wait(&r, "alertmanager/0", "", WAIT_MS));
    wait_stats(m, &s2);
    assert_int_equal(s2.providers, 0);
    assert_int_equal(s2.targets, 0);

    disc_manager_free(m);
    tcfg_free(c4);
    tcfg_free(c5);
    rec_free(&r);
    tu_rm_rf(dir);
    free(dir);
    free(f);
}

/* After the first results, a set is sent at most once per update interval. */
static void test_debounce(void **state) {
    (void)state;
    char *dir = tu_tmpdir();
    char *f = tu_path(dir, "t.yml");
    tu_write(f, "- targets: [v0:1]\n");
    tcfg *t = tcfg_new();
    const char *files[] = {f, NULL};
    tcfg_file(tcfg_job(t, "j"), files, 3600 * 1000);
    rec r;
    rec_init(&r);
    disc_opts o = {.sink = rec_sink, .sink_ctx = &r, .update_interval_ms = 1000};
    disc_manager *m = NULL;
    char err[256];
    assert_int_equal(disc_manager_new(&o, &m, err, sizeof err), 0);
    int64_t t0 = base_mono_ns();
    assert_int_equal(disc_manager_apply(m, &t->c, err, sizeof err), 0);
    char want[512];
    snprintf(want, sizeof want, "%s:0 {__meta_filepath=\"%s\"} {__address__=\"v0:1\"}\n", f, f);
    assert_true(rec_wait(&r, "j", want, WAIT_MS));
    assert_true(base_mono_ns() - t0 < 800000000LL); /* the first one at once */
    int calls = rec_calls(&r, "j");
    /* five quick rewrites: the last one arrives, in one call, after the
     * interval */
    for (int i = 1; i <= 5; i++) {
        char body[64];
        snprintf(body, sizeof body, "- targets: [v%d:1]\n", i);
        tu_write_rename(f, body);
        sleep_ms(30);
    }
    snprintf(want, sizeof want, "%s:0 {__meta_filepath=\"%s\"} {__address__=\"v5:1\"}\n", f, f);
    assert_true(rec_wait(&r, "j", want, WAIT_MS));
    assert_true(base_mono_ns() - t0 >= 1000000000LL);
    assert_true(rec_calls(&r, "j") <= calls + 2);
    disc_manager_free(m);
    tcfg_free(t);
    rec_free(&r);
    tu_rm_rf(dir);
    free(dir);
    free(f);
}

static void test_bad_config(void **state) {
    (void)state;
    rec r;
    rec_init(&r);
    disc_opts o = {.sink = rec_sink, .sink_ctx = &r};
    disc_manager *m = NULL;
    char err[256] = "";
    disc_opts none = {0};
    assert_int_equal(disc_manager_new(&none, &m, err, sizeof err), BASE_E_INVAL);
    assert_int_equal(disc_manager_new(&o, &m, err, sizeof err), 0);
    tcfg *t = tcfg_new();
    tcfg_http(tcfg_job(t, "h"), "", 1000);
    assert_int_equal(disc_manager_apply(m, &t->c, err, sizeof err), BASE_E_INVAL);
    assert_non_null(strstr(err, "empty url"));
    tcfg_free(t);
    t = tcfg_new();
    tcfg_job(t, "dup");
    tcfg_job(t, "dup");
    assert_int_equal(disc_manager_apply(m, &t->c, err, sizeof err), BASE_E_INVAL);
    assert_non_null(strstr(err, "duplicate"));
    tcfg_free(t);
    disc_manager_free(m);
    rec_free(&r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_apply),
        cmocka_unit_test(test_debounce),
        cmocka_unit_test(test_bad_config),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
