/* fuzz/promql_parse.c -- fuzz target for the PromQL parser and printer
 * (src/promql/lex.c, parse.c, print.c).
 *
 * Input: a query. Checks:
 *  - parsing never crashes, leaks or overflows the stack (the depth limit);
 *  - a rejected query gets Prometheus's shape of message,
 *    "<line>:<col>: parse error: <msg>", with a position inside the query;
 *  - an accepted one round-trips: its printed form parses, prints the
 *    same, and gives an equal tree (pq__tree_equal); every node's type is
 *    set and its depth within PQ_MAX_DEPTH.
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
        return 0;
    }
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
