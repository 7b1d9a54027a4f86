/* fuzz/tools_testrules.c -- fuzz target for `kelvin test rules`: the
 * unit-test YAML (yaml.v2 strict decoding), the series notation of its
 * input series (promql_parse_series_desc), the expected labels
 * (promql_parse_metric) and, for inputs small enough, a whole test group:
 * loading the series into a head, evaluating rule groups round by round
 * and comparing alerts and PromQL results.
 *
 * Input: the test file; optionally followed by a line "%%" and a rule
 * file, which the test's groups then load (written to a memfd and named
 * by its /proc path; `rule_files` of the input itself are ignored, so the
 * target never reads other files).
 *
 * The command's static functions are reached by including test_rules.c
 * (this object then defines tools_test_main itself, so kelvin_tools'
 * copy is never linked in).
 *
 * Checks: decoding returns 0, or an error with at least one non-empty
 * message, never anything else; a test group runs to its end (0 or out
 * of memory) and runs the same way twice (the evaluator is
 * deterministic: the same failures, byte for byte); no crash, leak or
 * runaway: groups with more than 200 evaluation rounds or series
 * expanding to more than 20000 values are decoded but not run.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../src/tools/test_rules.c"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)                                                                                          \
    do {                                                                                                     \
        if (!(cond)) abort();                                                                                \
    } while (0)

/* The group is small enough to evaluate. */
static int small(const t_file *f, const t_group *g) {
    int64_t maxt = 0;
    for (size_t i = 0; i < g->nalerts; i++)
        if (g->alerts[i].eval_time > maxt) maxt = g->alerts[i].eval_time;
    for (size_t i = 0; i < g->npromql; i++)
        if (g->promql[i].eval_time > maxt) maxt = g->promql[i].eval_time;
    if (maxt / f->eval_interval > 200) return 0;
    size_t values = 0;
    for (size_t i = 0; i < g->nseries; i++) {
        const char *s = g->series[i].values ? g->series[i].values : "";
        base_buf line, msg;
        base_buf_init(&line, 0);
        base_buf_init(&msg, 0);
        base_buf_printf(&line, "%s %s", g->series[i].series ? g->series[i].series : "", s);
        promql_series_desc d;
        memset(&d, 0, sizeof d);
        if (!base_buf_err(&line) && promql_parse_series_desc(line.data, line.len, 0, &d, &msg) == 0)
            values += d.n;
        else
            CHECK(base_buf_err(&line) || msg.len > 0 || base_buf_err(&msg));
        promql_series_desc_free(&d);
        base_buf_free(&line);
        base_buf_free(&msg);
    }
    return values <= 20000;
}

static void same_errors(const errlist *a, const errlist *b) {
    CHECK(a->n == b->n);
    for (size_t i = 0; i < a->n; i++) CHECK(strcmp(a->v[i], b->v[i]) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > (1u << 16)) return 0;
    const char *in = (const char *)data;
    size_t tlen = size;
    const char *rules = NULL;
    size_t rlen = 0;
    for (size_t i = 0; i + 4 <= size; i++)
        if (memcmp(in + i, "\n%%\n", 4) == 0) {
            tlen = i + 1;
            rules = in + i + 4;
            rlen = size - i - 4;
            break;
        }
    errlist errs;
    memset(&errs, 0, sizeof errs);
    t_file f;
    memset(&f, 0, sizeof f);
    int rc = decode_file(in, tlen, &f, &errs);
    CHECK(rc == 0 || rc == BASE_E_INVAL || rc == BASE_E_NOMEM);
    if (rc == BASE_E_INVAL) {
        CHECK(errs.n >= 1);
        for (size_t i = 0; i < errs.n; i++) CHECK(errs.v[i][0]);
    }
    if (rc == 0) CHECK(errs.n == 0);
    int fd = -1;
    if (rc == 0) {
        strs_free(f.rule_files, f.nrule_files);
        f.rule_files = NULL;
        f.nrule_files = 0;
        if (rules && (fd = memfd_create("rules", 0)) >= 0) {
            if (write(fd, rules, rlen) == (ssize_t)rlen) {
                char path[64];
                snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
                f.rule_files = calloc(1, sizeof *f.rule_files);
                if (f.rule_files && (f.rule_files[0] = strdup(path))) f.nrule_files = 1;
            }
        }
        if (f.eval_interval == 0) f.eval_interval = 60000;
        for (size_t i = 0; i < f.ntests; i++) {
            if (!small(&f, &f.tests[i])) continue;
            errlist e1, e2;
            memset(&e1, 0, sizeof e1);
            memset(&e2, 0, sizeof e2);
            int r1 = run_group(&f, &f.tests[i], &e1);
            int r2 = run_group(&f, &f.tests[i], &e2);
            CHECK(r1 == 0 || r1 == BASE_E_NOMEM);
            if (r1 == 0 && r2 == 0 && !e1.nomem && !e2.nomem) same_errors(&e1, &e2);
            errs_free(&e1);
            errs_free(&e2);
        }
    }
    if (fd >= 0) close(fd);
    t_file_free(&f);
    errs_free(&errs);
    return 0;
}
