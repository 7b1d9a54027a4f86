/* ast.c -- names of the syntax tree's enums (as Prometheus prints them)
 * and Prometheus's duration syntax (model.ParseDuration of
 * prometheus/common v0.39, which 2.42 uses).
 *
 * Durations: units y w d h m s ms, each at most once and in that order,
 * each a run of decimal digits before it ("1h30m", "90s"); "0" alone is
 * zero. A value past int64 nanoseconds (about 292 years) is "duration out
 * of range". The parser then refuses zero ("duration must be greater than
 * 0"); the API does not.
 */
#include <string.h>

#include "base/err.h"
#include "promql/parse_int.h"
#include "promql/promql.h"

const char *pq_type_name(pq_type t) {
    switch (t) {
    case PQ_T_SCALAR: return "scalar";
    case PQ_T_VECTOR: return "vector";
    case PQ_T_MATRIX: return "matrix";
    case PQ_T_STRING: return "string";
    default: return "none";
    }
}

const char *pq_type_doc(pq_type t) {
    switch (t) {
    case PQ_T_VECTOR: return "instant vector";
    case PQ_T_MATRIX: return "range vector";
    default: return pq_type_name(t);
    }
}

const char *pq_binop_str(pq_binop op) {
    static const char *const s[] = {
        [PQ_OP_ADD] = "+",   [PQ_OP_SUB] = "-", [PQ_OP_MUL] = "*",         [PQ_OP_DIV] = "/",
        [PQ_OP_MOD] = "%",   [PQ_OP_POW] = "^", [PQ_OP_EQL] = "==",        [PQ_OP_NEQ] = "!=",
        [PQ_OP_GTR] = ">",   [PQ_OP_LSS] = "<", [PQ_OP_GTE] = ">=",        [PQ_OP_LTE] = "<=",
        [PQ_OP_AND] = "and", [PQ_OP_OR] = "or", [PQ_OP_UNLESS] = "unless", [PQ_OP_ATAN2] = "atan2",
    };
    if ((unsigned)op < sizeof s / sizeof s[0] && s[op]) return s[op];
    return "?";
}

int pq_binop_is_comparison(pq_binop op) {
    return op >= PQ_OP_EQL && op <= PQ_OP_LTE;
}

int pq_binop_is_set(pq_binop op) {
    return op == PQ_OP_AND || op == PQ_OP_OR || op == PQ_OP_UNLESS;
}

const char *pq_aggop_str(pq_aggop op) {
    static const char *const s[] = {
        [PQ_AGG_SUM] = "sum",
        [PQ_AGG_AVG] = "avg",
        [PQ_AGG_COUNT] = "count",
        [PQ_AGG_MIN] = "min",
        [PQ_AGG_MAX] = "max",
        [PQ_AGG_GROUP] = "group",
        [PQ_AGG_STDDEV] = "stddev",
        [PQ_AGG_STDVAR] = "stdvar",
        [PQ_AGG_TOPK] = "topk",
        [PQ_AGG_BOTTOMK] = "bottomk",
        [PQ_AGG_COUNT_VALUES] = "count_values",
        [PQ_AGG_QUANTILE] = "quantile",
    };
    if ((unsigned)op < sizeof s / sizeof s[0] && s[op]) return s[op];
    return "?";
}

int pq__parse_duration(const char *s, size_t n, int64_t *ret_ms, const char **ret_msg) {
    if (n == 1 && s[0] == '0') {
        *ret_ms = 0;
        return 0;
    }
    if (n == 0) {
        *ret_msg = "empty duration string";
        return BASE_E_PARSE;
    }
    /* Units in the order the regex wants them, with their size in ms. */
    static const struct {
        const char *u;
        int64_t ms;
    } units[] = {
        {"y", 1000LL * 60 * 60 * 24 * 365},
        {"w", 1000LL * 60 * 60 * 24 * 7},
        {"d", 1000LL * 60 * 60 * 24},
        {"h", 1000LL * 60 * 60},
        {"m", 1000LL * 60},
        {"s", 1000},
        {"ms", 1},
    };
    const size_t nunits = sizeof units / sizeof units[0];
    size_t i = 0, next_unit = 0;
    int64_t dur_ns = 0;
    int overflow = 0;
    while (i < n) {
        size_t d0 = i;
        uint64_t v = 0;
        int sat = 0;
        while (i < n && s[i] >= '0' && s[i] <= '9') {
            if (v > (uint64_t)INT64_MAX / 10 || (v == (uint64_t)INT64_MAX / 10 && (uint64_t)(s[i] - '0') > 7))
                sat = 1;
            else
                v = v * 10 + (uint64_t)(s[i] - '0');
            i++;
        }
        if (i == d0 || i >= n) goto bad;
        size_t u;
        if (s[i] == 'm' && i + 1 < n && s[i + 1] == 's')
            u = nunits - 1;
        else {
            for (u = 0; u < nunits - 1; u++)
                if (s[i] == units[u].u[0]) break;
            if (u == nunits - 1) goto bad;
        }
        if (u < next_unit) goto bad;
        next_unit = u + 1;
        i += strlen(units[u].u);
        if (sat) v = (uint64_t)INT64_MAX; /* strconv.Atoi clamps */
        /* common's check: n > MaxInt64 / mult / time.Millisecond */
        if (v > (uint64_t)(INT64_MAX / units[u].ms / 1000000)) overflow = 1;
        int64_t add = (int64_t)((uint64_t)v * 1000000u * (uint64_t)units[u].ms);
        dur_ns = (int64_t)((uint64_t)dur_ns + (uint64_t)add);
        if (dur_ns < 0) overflow = 1;
    }
    if (overflow) {
        *ret_msg = "duration out of range";
        return BASE_E_RANGE;
    }
    *ret_ms = dur_ns / 1000000;
    return 0;
bad:
    *ret_msg = NULL; /* the caller words it: not a valid duration string: %q */
    return BASE_E_PARSE;
}

int promql_parse_duration(const char *s, size_t n, int64_t *ret_ms) {
    const char *msg = NULL;
    int64_t ms;
    int rc = pq__parse_duration(s, n, &ms, &msg);
    if (rc) return rc;
    *ret_ms = ms;
    return 0;
}

/* ---- tree equality (tests, fuzzing) ---------------------------------------------- */

static int strs_eq(char **a, size_t na, char **b, size_t nb) {
    if (na != nb) return 0;
    for (size_t i = 0; i < na; i++)
        if (strcmp(a[i], b[i]) != 0) return 0;
    return 1;
}

/* Does the printer write matcher m of selector n? (printer.go leaves out
 * the __name__="x" matcher whose value is the selector's name, "" when it
 * has none.) */
static int printed_matcher(const pq_node *n, const labels_matcher *m) {
    base_str name = labels_matcher_name(m), val = labels_matcher_value(m);
    if (!base_str_eqc(name, LABELS_METRIC_NAME) || labels_matcher_type(m) != LABELS_MATCH_EQ) return 1;
    const char *nm = n->vsel.name ? n->vsel.name : "";
    return !(val.n == strlen(nm) && memcmp(val.p, nm, val.n) == 0);
}

static int matcher_eq(const labels_matcher *a, const labels_matcher *b) {
    base_str an = labels_matcher_name(a), bn = labels_matcher_name(b);
    base_str av = labels_matcher_value(a), bv = labels_matcher_value(b);
    return labels_matcher_type(a) == labels_matcher_type(b) && an.n == bn.n &&
           memcmp(an.p, bn.p, an.n) == 0 && av.n == bv.n && memcmp(av.p, bv.p, av.n) == 0;
}

static int vsel_eq(const pq_node *a, const pq_node *b) {
    if ((a->vsel.name == NULL) != (b->vsel.name == NULL)) return 0;
    if (a->vsel.name && strcmp(a->vsel.name, b->vsel.name) != 0) return 0;
    if (a->vsel.offset_ms != b->vsel.offset_ms || a->vsel.at != b->vsel.at) return 0;
    if (a->vsel.at == PQ_AT_TIME && a->vsel.at_ms != b->vsel.at_ms) return 0;
    /* The printed matchers, as multisets (the printer sorts them). */
    size_t na = 0, nb = 0;
    for (size_t i = 0; i < a->vsel.nms; i++) na += printed_matcher(a, a->vsel.ms[i]);
    for (size_t i = 0; i < b->vsel.nms; i++) nb += printed_matcher(b, b->vsel.ms[i]);
    if (na != nb) return 0;
    for (size_t i = 0; i < a->vsel.nms; i++) {
        const labels_matcher *m = a->vsel.ms[i];
        if (!printed_matcher(a, m)) continue;
        size_t ca = 0, cb = 0;
        for (size_t j = 0; j < a->vsel.nms; j++)
            ca += printed_matcher(a, a->vsel.ms[j]) && matcher_eq(m, a->vsel.ms[j]);
        for (size_t j = 0; j < b->vsel.nms; j++)
            cb += printed_matcher(b, b->vsel.ms[j]) && matcher_eq(m, b->vsel.ms[j]);
        if (ca != cb) return 0;
    }
    return 1;
}

int pq__tree_equal(const pq_node *a, const pq_node *b) {
    if (!a || !b) return a == b;
    if (a->kind != b->kind || a->type != b->type) return 0;
    switch (a->kind) {
    case PQ_NUM:
        return memcmp(&a->num.v, &b->num.v, sizeof(double)) == 0 ||
               (a->num.v != a->num.v && b->num.v != b->num.v);
    case PQ_STR: return a->str.len == b->str.len && memcmp(a->str.s, b->str.s, a->str.len) == 0;
    case PQ_VSEL: return vsel_eq(a, b);
    case PQ_MSEL: return a->msel.range_ms == b->msel.range_ms && pq__tree_equal(a->msel.vsel, b->msel.vsel);
    case PQ_CALL:
        if (a->call.fn != b->call.fn || a->call.nargs != b->call.nargs) return 0;
        for (size_t i = 0; i < a->call.nargs; i++)
            if (!pq__tree_equal(a->call.args[i], b->call.args[i])) return 0;
        return 1;
    case PQ_AGG:
        return a->agg.op == b->agg.op && a->agg.without == b->agg.without &&
               strs_eq(a->agg.grouping, a->agg.ngrouping, b->agg.grouping, b->agg.ngrouping) &&
               pq__tree_equal(a->agg.param, b->agg.param) && pq__tree_equal(a->agg.expr, b->agg.expr);
    case PQ_BIN: {
        if (a->bin.op != b->bin.op || a->bin.return_bool != b->bin.return_bool) return 0;
        const pq_vmatch *x = a->bin.vm, *y = b->bin.vm;
        if ((x == NULL) != (y == NULL)) return 0;
        if (x) {
            if (x->on != y->on || !strs_eq(x->labels, x->nlabels, y->labels, y->nlabels)) return 0;
            /* group_x is printed only with on / a non-empty ignoring */
            if (x->on || x->nlabels > 0) {
                if (x->card != y->card || !strs_eq(x->include, x->ninclude, y->include, y->ninclude))
                    return 0;
            }
        }
        return pq__tree_equal(a->bin.lhs, b->bin.lhs) && pq__tree_equal(a->bin.rhs, b->bin.rhs);
    }
    case PQ_UNARY: return a->unary.neg == b->unary.neg && pq__tree_equal(a->unary.expr, b->unary.expr);
    case PQ_PAREN: return pq__tree_equal(a->paren.expr, b->paren.expr);
    case PQ_SUBQ:
        return a->subq.range_ms == b->subq.range_ms && a->subq.step_ms == b->subq.step_ms &&
               a->subq.offset_ms == b->subq.offset_ms && a->subq.at == b->subq.at &&
               (a->subq.at != PQ_AT_TIME || a->subq.at_ms == b->subq.at_ms) &&
               pq__tree_equal(a->subq.expr, b->subq.expr);
    }
    return 0;
}
