/* dump.c -- `kelvin tsdb dump` over a live data directory: samples that are
 * already in blocks and samples that are only in the WAL (the head) come
 * out once each, in promtool's line format, from a read-only open that
 * works while the writer still holds the directory's lock. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../tsdb/tmpdir.h"

#include "base/err.h"
#include "promql/promql.h"
#include "tools/tools.h"
#include "tsdb/db.h"

#define HOUR 3600000LL
#define STEP 60000LL

static void test_dump_blocks_and_head(void **st) {
    (void)st;
    char *dir = kelvin_tmpdir("dump");
    tsdb_db_opts o;
    tsdb_db_opts_default(&o);
    o.path = dir;
    o.min_block_ms = HOUR;
    o.maintain_interval_ms = -1;
    tsdb_db *w;
    char err[512];
    assert_int_equal(tsdb_db_open(&o, &w, NULL, err, sizeof err), 0);
    labels_set *a, *b;
    assert_int_equal(labels_from_cstrs(&a, "__name__", "up", "job", "x", NULL), 0);
    assert_int_equal(labels_from_cstrs(&b, "__name__", "temp", "gpu", "0", NULL), 0);
    tsdb_head_app *app;
    assert_int_equal(tsdb_head_app_new(tsdb_db_head(w), &app), 0);
    for (int64_t t = 0; t < 4 * HOUR; t += STEP) {
        assert_int_equal(tsdb_head_app_add(app, a, t, 1), 0);
        assert_int_equal(tsdb_head_app_add(app, b, t, (double)(t / STEP) + 0.5), 0);
        assert_int_equal(tsdb_head_app_commit(app, NULL), 0);
    }
    tsdb_head_app_free(app);
    assert_int_equal(tsdb_db_maintain(w, err, sizeof err), 0);
    tsdb_db_stats s;
    tsdb_db_stats_get(w, &s);
    assert_true(s.blocks >= 1);      /* some samples are in blocks ... */
    assert_true(s.head.samples > 0); /* ... and some only in the head */

    /* read-only, while the writer holds the lock */
    o.read_only = 1;
    tsdb_db *r;
    assert_int_equal(tsdb_db_open(&o, &r, NULL, err, sizeof err), 0);
    labels_matcher **ms;
    size_t n;
    static const char sel[] = "{__name__=~\".+\"}"; /* as --match reads it (promtool's parser) */
    assert_int_equal(promql_parse_selector(sel, sizeof sel - 1, &ms, &n, err, sizeof err), 0);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    tools_dump_result res;
    assert_int_equal(tools_tsdb_dump(r, ms, n, INT64_MIN, INT64_MAX, f, NULL, NULL, &res, err, sizeof err),
                     0);
    fclose(f);
    assert_int_equal(res.series, 2);
    assert_int_equal(res.samples, 2 * 240);
    /* first line: temp sorts before up; values in Go's %g */
    assert_memory_equal(buf, "{__name__=\"temp\", gpu=\"0\"} 0.5 0\n", 33);
    assert_non_null(strstr(buf, "{__name__=\"temp\", gpu=\"0\"} 239.5 14340000\n"));
    assert_non_null(strstr(buf, "{__name__=\"up\", job=\"x\"} 1 14340000\n"));
    size_t lines = 0;
    for (size_t i = 0; i < len; i++) lines += buf[i] == '\n';
    assert_int_equal(lines, 480);
    free(buf);
    labels_matchers_free(ms, n);
    assert_int_equal(tsdb_db_close(r), 0);
    labels_unref(a);
    labels_unref(b);
    assert_int_equal(tsdb_db_close(w), 0);
    kelvin_rm_rf(dir);
    free(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dump_blocks_and_head),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
