/* print.c -- a PromQL tree written back as Prometheus 2.42's String()
 * methods write it (promql/parser/printer.go):
 *
 *   sum by (a, b) (x)         grouping joined by ", ", `by ()` dropped,
 *                             `without ()` kept; topk(5, x)
 *   a + on (b) group_left (c) d,  a == bool b
 *   foo{a="b",c=~"d"}         matchers sorted by their text, the
 *                             metric-name matcher printed as the name
 *   x[5m] @ 100.000 offset 1h @ (%.3f seconds) before offset
 *   x[1h:5m], x[1h:]          durations as model.Duration.String()
 *   -x, (x), rate(x[5m]), 1e+06, +Inf, NaN, "quoted\n"
 *
 * Known lossy spots, as in Prometheus: group_left/group_right without an
 * on/ignoring label list is not printed, nor is `by ()`.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/time.h"
#include "promql/parse_int.h"
#include "promql/promql.h"

/* model.Duration(ms).String(), appended. */
static void put_duration(base_buf *out, int64_t ms) {
    char b[BASE_FMT_DURATION_MAX];
    size_t n = base_fmt_duration(b, sizeof b, ms);
    base_buf_append(out, b, n);
}

static void offset_at(base_buf *out, int64_t offset_ms, pq_at at, int64_t at_ms) {
    if (at == PQ_AT_TIME)
        base_buf_printf(out, " @ %.3f", (double)at_ms / 1000.0);
    else if (at == PQ_AT_START)
        base_buf_puts(out, " @ start()");
    else if (at == PQ_AT_END)
        base_buf_puts(out, " @ end()");
    if (offset_ms > 0) {
        base_buf_puts(out, " offset ");
        put_duration(out, offset_ms);
    } else if (offset_ms < 0) {
        base_buf_puts(out, " offset -");
        put_duration(out, -offset_ms);
    }
}

typedef struct mstr {
    char *s;
    size_t n;
} mstr;

static int mstr_cmp(const void *a, const void *b) {
    const mstr *x = a, *y = b;
    size_t n = x->n < y->n ? x->n : y->n;
    int c = memcmp(x->s, y->s, n);
    if (c) return c;
    return x->n < y->n ? -1 : x->n > y->n;
}

/* The selector without its offset and @. */
static void vsel_body(const pq_node *n, base_buf *out) {
    size_t name_len = n->vsel.name ? strlen(n->vsel.name) : 0;
    if (n->vsel.name) base_buf_append(out, n->vsel.name, name_len);
    mstr *ms = n->vsel.nms ? calloc(n->vsel.nms, sizeof *ms) : NULL;
    if (n->vsel.nms && !ms) {
        if (!out->err) out->err = BASE_E_NOMEM;
        return;
    }
    size_t k = 0;
    for (size_t i = 0; i < n->vsel.nms; i++) {
        const labels_matcher *m = n->vsel.ms[i];
        base_str name = labels_matcher_name(m), val = labels_matcher_value(m);
        /* Only the __name__ matcher that is the name itself is left out. */
        if (base_str_eqc(name, LABELS_METRIC_NAME) && labels_matcher_type(m) == LABELS_MATCH_EQ &&
            n->vsel.name && val.n == name_len && memcmp(val.p, n->vsel.name, name_len) == 0)
            continue;
        if (!n->vsel.name && base_str_eqc(name, LABELS_METRIC_NAME) &&
            labels_matcher_type(m) == LABELS_MATCH_EQ && val.n == 0)
            continue; /* Go compares with the empty Name too */
        base_buf b;
        base_buf_init(&b, 0);
        labels_matcher_format(m, &b);
        if (base_buf_err(&b)) {
            base_buf_free(&b);
            continue;
        }
        ms[k].s = b.data;
        ms[k].n = b.len;
        k++;
    }
    if (k) {
        qsort(ms, k, sizeof *ms, mstr_cmp);
        base_buf_putc(out, '{');
        for (size_t i = 0; i < k; i++) {
            if (i) base_buf_putc(out, ',');
            base_buf_append(out, ms[i].s, ms[i].n);
        }
        base_buf_putc(out, '}');
    }
    for (size_t i = 0; i < k; i++) free(ms[i].s);
    free(ms);
}

static void join(base_buf *out, char **l, size_t n) {
    for (size_t i = 0; i < n; i++) {
        if (i) base_buf_puts(out, ", ");
        base_buf_puts(out, l[i]);
    }
}

void promql_print(const pq_node *n, base_buf *out) {
    if (!n) return;
    switch (n->kind) {
    case PQ_NUM: pq__fmt_float(out, n->num.v); break;
    case PQ_STR: labels_quote(out, (base_str){n->str.s, n->str.len}); break;
    case PQ_VSEL:
        vsel_body(n, out);
        offset_at(out, n->vsel.offset_ms, n->vsel.at, n->vsel.at_ms);
        break;
    case PQ_MSEL: {
        const pq_node *v = n->msel.vsel;
        vsel_body(v, out);
        base_buf_putc(out, '[');
        put_duration(out, n->msel.range_ms);
        base_buf_putc(out, ']');
        offset_at(out, v->vsel.offset_ms, v->vsel.at, v->vsel.at_ms);
        break;
    }
    case PQ_SUBQ:
        promql_print(n->subq.expr, out);
        base_buf_putc(out, '[');
        put_duration(out, n->subq.range_ms);
        base_buf_putc(out, ':');
        if (n->subq.step_ms != 0) put_duration(out, n->subq.step_ms);
        base_buf_putc(out, ']');
        offset_at(out, n->subq.offset_ms, n->subq.at, n->subq.at_ms);
        break;
    case PQ_CALL:
        base_buf_puts(out, n->call.fn->name);
        base_buf_putc(out, '(');
        for (size_t i = 0; i < n->call.nargs; i++) {
            if (i) base_buf_puts(out, ", ");
            promql_print(n->call.args[i], out);
        }
        base_buf_putc(out, ')');
        break;
    case PQ_AGG:
        base_buf_puts(out, pq_aggop_str(n->agg.op));
        if (n->agg.without) {
            base_buf_puts(out, " without (");
            join(out, n->agg.grouping, n->agg.ngrouping);
            base_buf_puts(out, ") ");
        } else if (n->agg.ngrouping > 0) {
            base_buf_puts(out, " by (");
            join(out, n->agg.grouping, n->agg.ngrouping);
            base_buf_puts(out, ") ");
        }
        base_buf_putc(out, '(');
        if (n->agg.param) {
            promql_print(n->agg.param, out);
            base_buf_puts(out, ", ");
        }
        promql_print(n->agg.expr, out);
        base_buf_putc(out, ')');
        break;
    case PQ_BIN: {
        promql_print(n->bin.lhs, out);
        base_buf_putc(out, ' ');
        base_buf_puts(out, pq_binop_str(n->bin.op));
        if (n->bin.return_bool) base_buf_puts(out, " bool");
        const pq_vmatch *vm = n->bin.vm;
        if (vm && (vm->nlabels > 0 || vm->on)) {
            base_buf_puts(out, vm->on ? " on (" : " ignoring (");
            join(out, vm->labels, vm->nlabels);
            base_buf_putc(out, ')');
            if (vm->card == PQ_CARD_MANY_TO_ONE || vm->card == PQ_CARD_ONE_TO_MANY) {
                base_buf_puts(out, vm->card == PQ_CARD_MANY_TO_ONE ? " group_left (" : " group_right (");
                join(out, vm->include, vm->ninclude);
                base_buf_putc(out, ')');
            }
        }
        base_buf_putc(out, ' ');
        promql_print(n->bin.rhs, out);
        break;
    }
    case PQ_UNARY:
        base_buf_putc(out, n->unary.neg ? '-' : '+');
        promql_print(n->unary.expr, out);
        break;
    case PQ_PAREN:
        base_buf_putc(out, '(');
        promql_print(n->paren.expr, out);
        base_buf_putc(out, ')');
        break;
    }
}
