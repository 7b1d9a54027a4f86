/* fuzz/promql_parse.c -- fuzz target for the PromQL parser and printer
 * (src/promql/lex.c, parse.c, print.c).
 *
 * Input: a query. Checks:
 *  - parsing never crashes, leaks or overflows the stack (the depth limit);
 *  - a rejected query gets Prometheus's shape of message,
 *    "<line>:<col>: parse error: <msg>", with a position inside the query;
 *  - an accepted one round-trips: its printed form parses, prints the
 *    same, and gives an equal tree (pq__tree_equal); every node's type is
 *    set and its depth within PQ_MAX_DEPTH;
 *  - as a match[] selector (promql_parse_selector): accepted exactly when
 *    the query is a bare vector selector (no offset, no @), with the same
 *    matchers, or when only the query's type checks refuse it (a doubled
 *    metric name, no non-empty matcher); its whole message (_msg) and the
 *    C string agree up to the first NUL byte.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "promql/parse_int.h"
#include "promql/promql.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_msg(const char *q, size_t n, const char *err) {
    /* line:col: parse error: ... */
    size_t line = 0, col = 0;
    const char *p = err;
    while (*p >= '0' && *p <= '9') line = line * 10 + (size_t)(*p++ - '0');
    if (p == err || *p++ != ':') abort();
    const char *c0 = p;
    while (*p >= '0' && *p <= '9') col = col * 10 + (size_t)(*p++ - '0');
    if (p == c0 || strncmp(p, ": parse error: ", 15) != 0 || p[15] == 0) abort();
    size_t lines = 1;
    for (size_t i = 0; i < n; i++) lines += q[i] == '\n';
    if (line < 1 || line > lines || col < 1 || col > n + 1) abort();
}

static void walk(const pq_node *x) {
    if (!x) return;
    if (x->depth < 1 || x->depth > PQ_MAX_DEPTH) abort();
    if (x->type == PQ_T_NONE) abort();
    switch (x->kind) {
    case PQ_MSEL: walk(x->msel.vsel); break;
    case PQ_CALL:
        for (size_t i = 0; i < x->call.nargs; i++) walk(x->call.args[i]);
        break;
    case PQ_AGG:
        walk(x->agg.param);
        walk(x->agg.expr);
        break;
    case PQ_BIN:
        walk(x->bin.lhs);
        walk(x->bin.rhs);
        if ((x->bin.vm != NULL) != (x->bin.lhs->type == PQ_T_VECTOR && x->bin.rhs->type == PQ_T_VECTOR))
            abort();
        break;
    case PQ_UNARY: walk(x->unary.expr); break;
    case PQ_PAREN: walk(x->paren.expr); break;
    case PQ_SUBQ: walk(x->subq.expr); break;
    default: break;
    }
}

static void format_matchers(labels_matcher *const *ms, size_t n, base_buf *out) {
    for (size_t i = 0; i < n; i++) {
        labels_matcher_format(ms[i], out);
        base_buf_putc(out, '\n');
    }
}

/* q as a match[] selector, against its parse as a query (x or err). */
static void check_selector(const char *q, size_t n, const pq_expr *x, const char *qerr) {
    labels_matcher **ms = NULL;
    size_t nms = 0;
    base_buf msg;
    base_buf_init(&msg, 0);
    int rc = promql_parse_selector_msg(q, n, &ms, &nms, &msg);
    const pq_node *r = x ? promql_expr_root(x) : NULL;
    int bare = r && r->kind == PQ_VSEL && r->vsel.offset_ms == 0 && r->vsel.at == PQ_AT_NONE;
    if (rc == 0) {
        if (!bare &&
            (x || (!strstr(qerr, ": parse error: metric name must not be set twice") &&
                   !strstr(qerr, ": parse error: vector selector must contain at least one non-empty"))))
            abort();
        if (bare) {
            base_buf a, b;
            base_buf_init(&a, 0);
            base_buf_init(&b, 0);
            format_matchers(ms, nms, &a);
            format_matchers(r->vsel.ms, r->vsel.nms, &b);
            if (a.len != b.len || memcmp(a.data, b.data, a.len) != 0) abort();
            base_buf_free(&a);
            base_buf_free(&b);
        }
        labels_matchers_free(ms, nms);
    } else {
        if (bare) abort();
        if (rc != BASE_E_PARSE && rc != BASE_E_LIMIT && rc != BASE_E_NOMEM) abort();
        char err[1024];
        if (promql_parse_selector(q, n, &ms, &nms, err, sizeof err) != rc) abort();
        size_t k = strlen(err);
        if (k > msg.len || memcmp(err, msg.data, k) != 0) abort();
        if (k < msg.len && k != sizeof err - 1 && msg.data[k] != 0) abort();
        if (rc == BASE_E_PARSE) check_msg(q, n, err);
    }
    base_buf_free(&msg);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *q = (const char *)data;
    pq_expr *x = NULL;
    char err[1024];
    int rc = promql_parse(q, size, &x, err, sizeof err);
    if (rc != 0) {
        if (rc == BASE_E_PARSE)
            check_msg(q, size, err);
        else if (rc != BASE_E_LIMIT && rc != BASE_E_NOMEM)
            abort();
        check_selector(q, size, NULL, err);
        return 0;
    }
    check_selector(q, size, x, NULL);
    walk(promql_expr_root(x));
    base_buf a, b;
    base_buf_init(&a, 0);
    base_buf_init(&b, 0);
    promql_print(promql_expr_root(x), &a);
    if (base_buf_err(&a)) abort();
    pq_expr *y = NULL;
    if (promql_parse(a.data, a.len, &y, err, sizeof err) != 0) abort();
    promql_print(promql_expr_root(y), &b);
    if (a.len != b.len || memcmp(a.data, b.data, a.len) != 0) abort();
    if (!pq__tree_equal(promql_expr_root(x), promql_expr_root(y))) abort();
    promql_expr_free(y);
    base_buf_free(&a);
    base_buf_free(&b);
    promql_expr_free(x);
    return 0;
}
