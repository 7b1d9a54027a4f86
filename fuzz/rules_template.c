/* fuzz/rules_template.c -- fuzz target for the rule template engine.
 *
 * For every input: rules_tmpl_parse must return 0 or a negative BASE_E_*
 * with a message starting "template: f:"; never crash, leak or run away.
 * When the input parses, it is executed twice with fixed alert data and a
 * query callback that answers two samples (or fails for the expression
 * "fail"): both runs must give the same result, code and output (the
 * engine is deterministic), and an error must carry a "template: f"
 * message. Parsing the same bytes again must succeed again.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "labels/labels.h"
#include "rules/template.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)                                                                                          \
    do {                                                                                                     \
        if (!(cond)) abort();                                                                                \
    } while (0)

static int query(void *ctx, const char *expr, int64_t t_ms, rules_tmpl_sample **ret, size_t *n, char *err,
                 size_t errlen) {
    (void)ctx, (void)t_ms;
    if (strcmp(expr, "fail") == 0) {
        snprintf(err, errlen, "query failed");
        return BASE_E_INVAL;
    }
    rules_tmpl_sample *s = calloc(2, sizeof *s);
    if (!s) return BASE_E_NOMEM;
    for (size_t k = 0; k < 2; k++) {
        if (labels_from_cstrs(&s[k].ls, "__name__", "up", "instance", k ? "b:1" : "a.example.com:2", NULL)) {
            for (size_t j = 0; j < k; j++) labels_unref(s[j].ls);
            free(s);
            return BASE_E_NOMEM;
        }
        s[k].v = (double)k + 0.5;
    }
    *ret = s;
    *n = 2;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char err[512];
    rules_tmpl *t = NULL;
    int rc = rules_tmpl_parse("f", (const char *)data, size, &t, err, sizeof err);
    if (rc != 0) {
        CHECK(rc < 0);
        CHECK(rc == BASE_E_NOMEM || strncmp(err, "template: f", 11) == 0);
        return 0;
    }
    labels_set *ls = NULL, *ext = NULL;
    CHECK(labels_from_cstrs(&ls, "alertname", "A", "instance", "h.example.com:9100", "job", "node", NULL) ==
          0);
    CHECK(labels_from_cstrs(&ext, "cluster", "c1", NULL) == 0);
    rules_tmpl_data d = {.labels = ls,
                         .external_labels = ext,
                         .external_url = "http://x:9090/p",
                         .value = 12.5,
                         .t_ms = 1700000000000,
                         .query = query};
    base_buf a = BASE_BUF_INIT, b = BASE_BUF_INIT;
    char err2[512];
    int r1 = rules_tmpl_exec(t, &d, &a, err, sizeof err);
    int r2 = rules_tmpl_exec(t, &d, &b, err2, sizeof err2);
    CHECK(r1 == r2);
    CHECK(a.len == b.len && (a.len == 0 || memcmp(a.data, b.data, a.len) == 0));
    if (r1 != 0) {
        CHECK(r1 < 0);
        CHECK(strcmp(err, err2) == 0);
        CHECK(r1 == BASE_E_NOMEM || strncmp(err, "template: f", 11) == 0);
    }
    base_buf_free(&a);
    base_buf_free(&b);
    rules_tmpl_free(t);
    rules_tmpl *t2 = NULL;
    CHECK(rules_tmpl_parse("f", (const char *)data, size, &t2, err, sizeof err) == 0);
    rules_tmpl_free(t2);
    labels_unref(ls);
    labels_unref(ext);
    return 0;
}
