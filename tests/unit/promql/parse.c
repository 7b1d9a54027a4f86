/* tests/unit/promql/parse.c -- the PromQL parser's trees (src/promql/parse.c,
 * lex.c, print.c, ast.c, functab.c).
 *
 * What parse_compat.c cannot see from printed text: the shape of trees
 * (precedence, associativity, unary folding, modifiers, vector matching
 * after the type checks, aggregation parameters), values (offsets and @ in
 * ms, unquoted strings, anchored regexes), positions, the limits (query
 * size, nesting depth), model.ParseDuration, the function table -- and
 * that every expression of Prometheus's own PromQL test scripts
 * (/work/shared/promql-testdata, found from KELVIN_SOURCE_DIR) parses and
 * survives print -> parse -> print.
 */
#include <dirent.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/err.h"
#include "base/time.h"
#include "promql/parse_int.h"
#include "promql/promql.h"

static pq_expr *P(const char *q) {
    pq_expr *x = NULL;
    char err[512];
    if (promql_parse(q, strlen(q), &x, err, sizeof err) != 0) fail_msg("parse %s: %s", q, err);
    return x;
}

static void E(const char *q, int want_rc, const char *want_substr) {
    pq_expr *x = NULL;
    char err[512];
    int rc = promql_parse(q, strlen(q), &x, err, sizeof err);
    if (rc == 0) {
        promql_expr_free(x);
        fail_msg("%.60s... parsed, want an error", q);
    }
    assert_int_equal(rc, want_rc);
    if (!strstr(err, want_substr)) fail_msg("%.60s: error %s, want %s", q, err, want_substr);
}

static void assert_printed(const pq_node *n, const char *want) {
    base_buf b;
    base_buf_init(&b, 0);
    promql_print(n, &b);
    assert_false(base_buf_err(&b));
    assert_int_equal(b.len, strlen(want));
    assert_memory_equal(b.data, want, b.len);
    base_buf_free(&b);
}

static void test_precedence(void **state) {
    (void)state;
    pq_expr *x = P("-2^2");
    const pq_node *n = promql_expr_root(x);
    assert_int_equal(n->kind, PQ_UNARY);
    assert_true(n->unary.neg);
    assert_int_equal(n->type, PQ_T_SCALAR);
    assert_int_equal(n->unary.expr->kind, PQ_BIN);
    assert_int_equal(n->unary.expr->bin.op, PQ_OP_POW);
    assert_null(n->unary.expr->bin.vm);
    promql_expr_free(x);

    x = P("a ^ b ^ c");
    n = promql_expr_root(x);
    assert_int_equal(n->bin.op, PQ_OP_POW);
    assert_int_equal(n->bin.lhs->kind, PQ_VSEL);
    assert_int_equal(n->bin.rhs->kind, PQ_BIN);
    assert_int_equal(n->depth, 3);
    promql_expr_free(x);

    x = P("a - b - c");
    n = promql_expr_root(x);
    assert_int_equal(n->bin.lhs->kind, PQ_BIN);
    assert_int_equal(n->bin.rhs->kind, PQ_VSEL);
    promql_expr_free(x);

    x = P("a or b and c unless d == e + f * g ^ h");
    n = promql_expr_root(x);
    static const pq_binop chain[] = {PQ_OP_OR, PQ_OP_UNLESS, PQ_OP_EQL, PQ_OP_ADD, PQ_OP_MUL, PQ_OP_POW};
    assert_int_equal(n->bin.op, PQ_OP_OR);
    const pq_node *r = n->bin.rhs; /* (b and c) unless (...) */
    assert_int_equal(r->bin.op, chain[1]);
    assert_int_equal(r->bin.lhs->bin.op, PQ_OP_AND);
    for (size_t i = 2; i < sizeof chain / sizeof chain[0]; i++) {
        r = r->bin.rhs;
        assert_int_equal(r->kind, PQ_BIN);
        assert_int_equal(r->bin.op, chain[i]);
    }
    promql_expr_free(x);

    /* unary binds weaker than ^ but as strongly as *: (-a) * b */
    x = P("-a * b");
    n = promql_expr_root(x);
    assert_int_equal(n->bin.op, PQ_OP_MUL);
    assert_int_equal(n->bin.lhs->kind, PQ_UNARY);
    promql_expr_free(x);

    /* postfix modifiers bind to the selector inside a unary */
    x = P("-a offset 1m ^ 2");
    n = promql_expr_root(x);
    assert_int_equal(n->kind, PQ_UNARY);
    assert_int_equal(n->unary.expr->kind, PQ_BIN);
    assert_int_equal(n->unary.expr->bin.lhs->vsel.offset_ms, 60000);
    promql_expr_free(x);
    E("-a[5m] offset 1m", BASE_E_PARSE,
      "1:1: parse error: unary expression only allowed on expressions of type scalar or instant vector, got "
      "\"range "
      "vector\"");
}

static void test_numbers(void **state) {
    (void)state;
    static const struct {
        const char *q;
        double v;
        unsigned start;
    } c[] = {
        {"-1", -1, 0},
        {" - 1", -1, 1},
        {"+1", 1, 0},
        {"- -1", 1, 0},
        {"0x1F", 31, 0},
        {"0755", 493, 0},
        {"08", 8, 0},
        {"1e3", 1000, 0},
        {".5", 0.5, 0},
        {"5.", 5, 0},
        {"1e-400", 0, 0},
        {"-0x10", -16, 0},
        {"9223372036854775808", 9223372036854775808.0, 0},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        pq_expr *x = P(c[i].q);
        const pq_node *n = promql_expr_root(x);
        assert_int_equal(n->kind, PQ_NUM);
        assert_true(n->num.v == c[i].v);
        assert_int_equal(n->pos_start, c[i].start);
        promql_expr_free(x);
    }
    pq_expr *x = P("-0");
    assert_true(signbit(promql_expr_root(x)->num.v));
    promql_expr_free(x);
    x = P("nAn");
    assert_true(isnan(promql_expr_root(x)->num.v));
    promql_expr_free(x);
    x = P("-iNF");
    assert_true(isinf(promql_expr_root(x)->num.v) && promql_expr_root(x)->num.v < 0);
    promql_expr_free(x);
    /* a unary sign on anything but a number literal stays */
    x = P("-(1)");
    assert_int_equal(promql_expr_root(x)->kind, PQ_UNARY);
    promql_expr_free(x);
}

static void test_strings(void **state) {
    (void)state;
    static const struct {
        const char *q;
        const char *v;
        size_t n;
    } c[] = {
        {"\"a\\nb\"", "a\nb", 3},
        {"'it\\'s'", "it's", 4},
        {"\"\\x41\\101\\u00e9\\U0001F600\"", "AA\xc3\xa9\xf0\x9f\x98\x80", 8},
        {"\"a\\x00b\"", "a\0b", 3},
        {"`raw\\n`", "raw\\n", 5},
        {"`a\rb`", "a\rb", 3},
        {"\"\\xff\"", "\xff", 1},
        {"\"\"", "", 0},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        pq_expr *x = P(c[i].q);
        const pq_node *n = promql_expr_root(x);
        assert_int_equal(n->kind, PQ_STR);
        assert_int_equal(n->type, PQ_T_STRING);
        assert_int_equal(n->str.len, c[i].n);
        assert_memory_equal(n->str.s, c[i].v, c[i].n);
        assert_int_equal(n->str.s[n->str.len], 0);
        promql_expr_free(x);
    }
    pq_expr *x = P("\"\\xff\\n\"");
    assert_printed(promql_expr_root(x), "\"\\xff\\n\"");
    promql_expr_free(x);
}

static void test_selectors(void **state) {
    (void)state;
    pq_expr *x = P("foo{a=\"b\", c=~\"x.*\"} offset 5m @ 100");
    const pq_node *n = promql_expr_root(x);
    assert_int_equal(n->kind, PQ_VSEL);
    assert_string_equal(n->vsel.name, "foo");
    assert_int_equal(n->vsel.nms, 3);
    /* the name's matcher comes last */
    assert_true(base_str_eqc(labels_matcher_name(n->vsel.ms[2]), "__name__"));
    assert_true(base_str_eqc(labels_matcher_value(n->vsel.ms[2]), "foo"));
    assert_int_equal(labels_matcher_type(n->vsel.ms[1]), LABELS_MATCH_RE);
    /* regexes are anchored */
    assert_true(labels_matcher_matches(n->vsel.ms[1], base_str_c("xyz")));
    assert_false(labels_matcher_matches(n->vsel.ms[1], base_str_c("axyz")));
    assert_int_equal(n->vsel.offset_ms, 300000);
    assert_int_equal(n->vsel.at, PQ_AT_TIME);
    assert_int_equal(n->vsel.at_ms, 100000);
    assert_int_equal(n->pos_start, 0);
    assert_int_equal(n->pos_end, strlen("foo{a=\"b\", c=~\"x.*\"} offset 5m @ 100"));
    assert_printed(n, "foo{a=\"b\",c=~\"x.*\"} @ 100.000 offset 5m");
    promql_expr_free(x);

    x = P("{__name__=\"up\"}");
    n = promql_expr_root(x);
    assert_null(n->vsel.name);
    assert_int_equal(n->vsel.nms, 1);
    promql_expr_free(x);

    x = P("foo @ -1.5 offset -1h");
    n = promql_expr_root(x);
    assert_int_equal(n->vsel.at_ms, -1500);
    assert_int_equal(n->vsel.offset_ms, -3600000);
    assert_printed(n, "foo @ -1.500 offset -1h");
    promql_expr_free(x);

    /* math.Round(ts * 1000): halves away from zero */
    x = P("foo @ -0.0005");
    assert_int_equal(promql_expr_root(x)->vsel.at_ms, -1);
    promql_expr_free(x);

    x = P("foo[5m] @ end() offset 1m");
    n = promql_expr_root(x);
    assert_int_equal(n->kind, PQ_MSEL);
    assert_int_equal(n->type, PQ_T_MATRIX);
    assert_int_equal(n->msel.range_ms, 300000);
    assert_int_equal(n->msel.vsel->vsel.at, PQ_AT_END);
    assert_int_equal(n->msel.vsel->vsel.offset_ms, 60000);
    promql_expr_free(x);

    /* keywords that 2.42 accepts as metric names */
    static const char *kw[] = {"offset", "by",  "without", "and",  "or",          "unless",
                               "start",  "end", "sum",     "topk", "count_values"};
    for (size_t i = 0; i < sizeof kw / sizeof kw[0]; i++) {
        x = P(kw[i]);
        assert_int_equal(promql_expr_root(x)->kind, PQ_VSEL);
        assert_string_equal(promql_expr_root(x)->vsel.name, kw[i]);
        promql_expr_free(x);
    }
    x = P("offset offset 5m");
    assert_int_equal(promql_expr_root(x)->vsel.offset_ms, 300000);
    promql_expr_free(x);

    E("foo{a=~\"(\"}", BASE_E_PARSE, "1:5: parse error: error parsing regexp: missing closing ): `^(?:()$`");
    E("{a=\"\"}", BASE_E_PARSE, "vector selector must contain at least one non-empty matcher");
}

static void test_subqueries(void **state) {
    (void)state;
    pq_expr *x = P("rate(x[1m])[1h:5m] offset 10m @ start()");
    const pq_node *n = promql_expr_root(x);
    assert_int_equal(n->kind, PQ_SUBQ);
    assert_int_equal(n->type, PQ_T_MATRIX);
    assert_int_equal(n->subq.range_ms, 3600000);
    assert_int_equal(n->subq.step_ms, 300000);
    assert_int_equal(n->subq.offset_ms, 600000);
    assert_int_equal(n->subq.at, PQ_AT_START);
    assert_int_equal(n->subq.expr->kind, PQ_CALL);
    assert_ptr_equal(n->subq.expr->call.fn, &pq_funcs[PQ_F_RATE]);
    promql_expr_free(x);

    x = P("x[5m:]");
    assert_int_equal(promql_expr_root(x)->subq.step_ms, 0);
    promql_expr_free(x);

    /* 2.42's lexer takes any letter inside [ ] for the colon */
    x = P("x[5m x 1m]");
    assert_int_equal(promql_expr_root(x)->subq.step_ms, 60000);
    promql_expr_free(x);
}

static void test_aggregations(void **state) {
    (void)state;
    pq_expr *x = P("sum by (a, on) (x)");
    const pq_node *n = promql_expr_root(x);
    assert_int_equal(n->kind, PQ_AGG);
    assert_int_equal(n->agg.op, PQ_AGG_SUM);
    assert_int_equal(n->agg.ngrouping, 2);
    assert_string_equal(n->agg.grouping[1], "on");
    assert_true(n->agg.grouping_given);
    assert_false(n->agg.without);
    assert_null(n->agg.param);
    promql_expr_free(x);

    x = P("SUM(x) WITHOUT ()");
    n = promql_expr_root(x);
    assert_true(n->agg.without && n->agg.grouping_given);
    assert_int_equal(n->agg.ngrouping, 0);
    assert_printed(n, "sum without () (x)");
    promql_expr_free(x);

    x = P("sum(x)");
    assert_false(promql_expr_root(x)->agg.grouping_given);
    promql_expr_free(x);

    x = P("count_values(\"v\", topk(3, x))");
    n = promql_expr_root(x);
    assert_int_equal(n->agg.op, PQ_AGG_COUNT_VALUES);
    assert_int_equal(n->agg.param->kind, PQ_STR);
    assert_int_equal(n->agg.expr->agg.op, PQ_AGG_TOPK);
    assert_int_equal(n->agg.expr->agg.param->num.v, 3);
    promql_expr_free(x);
}

static void test_binary(void **state) {
    (void)state;
    pq_expr *x = P("a + on(b) group_left(c) d");
    const pq_node *n = promql_expr_root(x);
    assert_non_null(n->bin.vm);
    assert_true(n->bin.vm->on);
    assert_int_equal(n->bin.vm->card, PQ_CARD_MANY_TO_ONE);
    assert_int_equal(n->bin.vm->nlabels, 1);
    assert_string_equal(n->bin.vm->include[0], "c");
    promql_expr_free(x);

    x = P("a unless ignoring(b) d");
    n = promql_expr_root(x);
    assert_int_equal(n->bin.vm->card, PQ_CARD_MANY_TO_MANY);
    assert_false(n->bin.vm->on);
    promql_expr_free(x);

    x = P("1 + on() a");
    n = promql_expr_root(x);
    assert_null(n->bin.vm);
    assert_int_equal(n->type, PQ_T_VECTOR);
    promql_expr_free(x);

    x = P("a > bool 1");
    n = promql_expr_root(x);
    assert_true(n->bin.return_bool);
    assert_null(n->bin.vm);
    promql_expr_free(x);

    x = P("1 atan2 2");
    n = promql_expr_root(x);
    assert_int_equal(n->bin.op, PQ_OP_ATAN2);
    assert_int_equal(n->type, PQ_T_SCALAR);
    promql_expr_free(x);

    /* positions: the bool error points at the operator */
    E("sum(x)  \n + bool 1", BASE_E_PARSE,
      "2:2: parse error: bool modifier can only be used on comparison operators");
}

static void test_functions(void **state) {
    (void)state;
    for (int i = 0; i < PQ_F__COUNT; i++) {
        assert_int_equal(pq_funcs[i].id, i);
        assert_ptr_equal(pq_func_lookup(pq_funcs[i].name, strlen(pq_funcs[i].name)), &pq_funcs[i]);
        assert_true(pq_funcs[i].nargs <= PQ_FUNC_MAX_ARGS);
    }
    assert_null(pq_func_lookup("mad_over_time", 13));
    assert_null(pq_func_lookup("double_exponential_smoothing", 28));
    assert_null(pq_func_lookup("Rate", 4));
    assert_int_equal(pq_funcs[PQ_F_LABEL_JOIN].variadic, -1);
    assert_int_equal(pq_funcs[PQ_F_ROUND].variadic, 1);

    pq_expr *x = P("label_join(x, \"d\", \",\", \"a\", \"b\", \"c\")");
    assert_int_equal(promql_expr_root(x)->call.nargs, 6);
    promql_expr_free(x);
    x = P("days_in_month()");
    assert_int_equal(promql_expr_root(x)->call.nargs, 0);
    promql_expr_free(x);
    E("label_join(x, \"d\", \",\", \"a\", 1)", BASE_E_PARSE,
      "1:30: parse error: expected type string in call to function \"label_join\", got scalar");
    E("mad_over_time(x[5m])", BASE_E_PARSE, "1:1: parse error: unknown function with name \"mad_over_time\"");
}

static void test_durations(void **state) {
    (void)state;
    static const struct {
        const char *s;
        int rc;
        int64_t ms;
    } c[] = {
        {"5m", 0, 300000},
        {"1h30m", 0, 5400000},
        {"0", 0, 0},
        {"0s", 0, 0},
        {"1ms", 0, 1},
        {"1y2w3d4h5m6s7ms", 0, 31536000000 + 1209600000 + 259200000 + 14400000 + 300000 + 6000 + 7},
        {"292y", 0, 292LL * 31536000000},
        {"293y", BASE_E_RANGE, 0},
        {"99999999999999999999s", BASE_E_RANGE, 0},
        {"200y200y", BASE_E_PARSE, 0},
        {"", BASE_E_PARSE, 0},
        {"1h1d", BASE_E_PARSE, 0},
        {"5m30", BASE_E_PARSE, 0},
        {"m", BASE_E_PARSE, 0},
        {"-5m", BASE_E_PARSE, 0},
        {"1.5m", BASE_E_PARSE, 0},
        {"5 m", BASE_E_PARSE, 0},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        int64_t ms = -42;
        int rc = promql_parse_duration(c[i].s, strlen(c[i].s), &ms);
        if (rc != c[i].rc) fail_msg("%s: rc %d, want %d", c[i].s, rc, c[i].rc);
        assert_int_equal(ms, rc == 0 ? c[i].ms : -42);
    }
    /* and back: model.Duration.String() */
    static const struct {
        int64_t ms;
        const char *s;
    } f[] = {{0, "0s"},
             {1, "1ms"},
             {90 * 60000, "1h30m"},
             {31536000000, "1y"},
             {31536000000 + 86400000, "366d"},
             {14 * 86400000LL, "2w"},
             {15 * 86400000LL, "15d"},
             {61001, "1m1s1ms"}};
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
        char b[BASE_FMT_DURATION_MAX];
        assert_int_equal(base_fmt_duration(b, sizeof b, f[i].ms), strlen(f[i].s));
        assert_string_equal(b, f[i].s);
    }
}

static char *repeat(const char *pre, size_t n, const char *mid, const char *post, size_t m) {
    size_t lp = strlen(pre), lm = strlen(mid), lq = strlen(post);
    char *s = malloc(lp * n + lm + lq * m + 1);
    assert_non_null(s);
    size_t k = 0;
    for (size_t i = 0; i < n; i++, k += lp) memcpy(s + k, pre, lp);
    memcpy(s + k, mid, lm);
    k += lm;
    for (size_t i = 0; i < m; i++, k += lq) memcpy(s + k, post, lq);
    s[k] = 0;
    return s;
}

static void test_limits(void **state) {
    (void)state;
    /* within the limit: PQ_MAX_DEPTH - 1 parentheses around a leaf */
    char *q = repeat("(", PQ_MAX_DEPTH - 1, "x", ")", PQ_MAX_DEPTH - 1);
    pq_expr *x = P(q);
    assert_int_equal(promql_expr_root(x)->depth, PQ_MAX_DEPTH);
    base_buf b;
    base_buf_init(&b, 0);
    promql_print(promql_expr_root(x), &b);
    assert_string_equal(b.data, q);
    base_buf_free(&b);
    promql_expr_free(x);
    free(q);

    q = repeat("(", PQ_MAX_DEPTH, "x", ")", PQ_MAX_DEPTH);
    E(q, BASE_E_PARSE, "nesting too deep");
    free(q);
    q = repeat("-", 100000, "x", "", 0);
    E(q, BASE_E_PARSE, "nesting too deep");
    free(q);
    q = repeat("", 0, "x", "+x", 5000);
    E(q, BASE_E_PARSE, "nesting too deep");
    free(q);
    q = repeat("sum(", 50000, "x", ")", 50000);
    E(q, BASE_E_PARSE, "nesting too deep");
    free(q);
    /* a long flat query is fine */
    q = repeat("vector(1", 0, "vector(1", ",1", 20000);
    {
        size_t l = strlen(q);
        q = realloc(q, l + 2);
        q[l] = ')';
        q[l + 1] = 0;
    }
    E(q, BASE_E_PARSE, "expected 1 argument(s) in call to \"vector\", got 20001");
    free(q);

    size_t big = PQ_MAX_QUERY + 1;
    q = malloc(big);
    assert_non_null(q);
    memset(q, ' ', big);
    q[0] = '1';
    pq_expr *y = NULL;
    char err[256];
    assert_int_equal(promql_parse(q, big, &y, err, sizeof err), BASE_E_LIMIT);
    assert_int_equal(promql_parse(q, big - 1, &y, err, sizeof err), 0);
    promql_expr_free(y);
    free(q);

    /* NUL bytes are characters like any other */
    assert_int_equal(promql_parse("1\0", 2, &y, err, sizeof err), BASE_E_PARSE);
    assert_string_equal(err, "1:2: parse error: unexpected character: '\\x00'");
    assert_int_equal(promql_parse("\"a\0b\"", 5, &y, err, sizeof err), 0);
    assert_int_equal(promql_expr_root(y)->str.len, 3);
    promql_expr_free(y);
    /* an error buffer of any size, or none */
    assert_int_equal(promql_parse("1 +", 3, &y, err, 5), BASE_E_PARSE);
    assert_string_equal(err, "1:4:");
    assert_int_equal(promql_parse("1 +", 3, &y, NULL, 0), BASE_E_PARSE);
    assert_int_equal(promql_parse("", 0, &y, err, sizeof err), BASE_E_PARSE);
    assert_string_equal(err, "1:1: parse error: no expression found in input");
}

static void roundtrip(const char *where, const char *q, size_t n, int *bad) {
    pq_expr *x = NULL, *y = NULL;
    char err[512];
    if (promql_parse(q, n, &x, err, sizeof err) != 0) {
        print_error("%s: %.*s: %s\n", where, (int)n, q, err);
        (*bad)++;
        return;
    }
    base_buf a, b;
    base_buf_init(&a, 0);
    base_buf_init(&b, 0);
    promql_print(promql_expr_root(x), &a);
    if (promql_parse(a.data, a.len, &y, err, sizeof err) != 0) {
        print_error("%s: printed %.*s does not parse: %s\n", where, (int)a.len, a.data, err);
        (*bad)++;
    } else {
        promql_print(promql_expr_root(y), &b);
        if (a.len != b.len || memcmp(a.data, b.data, a.len) != 0 ||
            !pq__tree_equal(promql_expr_root(x), promql_expr_root(y))) {
            print_error("%s: %.*s: round trip differs: %.*s\n", where, (int)n, q, (int)b.len, b.data);
            (*bad)++;
        }
        promql_expr_free(y);
    }
    base_buf_free(&a);
    base_buf_free(&b);
    promql_expr_free(x);
}

static int cmp_names(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every `eval`, `eval_ordered` and `eval_fail` expression of 2.42's test
 * scripts. None of the eval_fail ones fails at parse time in 2.42 (they
 * fail in evaluation), so all must parse. */
static void test_prometheus_testdata(void **state) {
    (void)state;
    const char *src = getenv("KELVIN_SOURCE_DIR");
    assert_non_null(src);
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/../shared/promql-testdata", src);
    DIR *d = opendir(dir);
    if (!d) fail_msg("cannot open %s", dir);
    char *names[64];
    size_t nn = 0;
    struct dirent *de;
    while ((de = readdir(d)) && nn < 64) {
        size_t l = strlen(de->d_name);
        if (l > 5 && strcmp(de->d_name + l - 5, ".test") == 0) names[nn++] = strdup(de->d_name);
    }
    closedir(d);
    qsort(names, nn, sizeof *names, cmp_names);
    assert_true(nn >= 10);
    int bad = 0, count = 0;
    for (size_t i = 0; i < nn; i++) {
        char path[8192];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        FILE *f = fopen(path, "r");
        assert_non_null(f);
        char *line = NULL;
        size_t cap = 0;
        ssize_t len;
        int lineno = 0;
        while ((len = getline(&line, &cap, f)) > 0) {
            lineno++;
            while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r')) line[--len] = 0;
            char *s = line;
            while (*s == ' ' || *s == '\t') s++;
            if (strncmp(s, "eval", 4) != 0) continue;
            /* eval[_ordered|_fail] instant|range at <t> [...] <expr> */
            char *at = strstr(s, " at ");
            if (!at) continue;
            char *p = at + 4;
            while (*p == ' ') p++;
            while (*p && *p != ' ') p++; /* the time */
            while (*p == ' ') p++;
            if (strncmp(s, "eval instant", 12) != 0 && strncmp(s, "eval_ordered instant", 20) != 0 &&
                strncmp(s, "eval_fail instant", 17) != 0 && strncmp(s, "eval range", 10) != 0)
                continue;
            char where[256];
            snprintf(where, sizeof where, "%s:%d", names[i], lineno);
            roundtrip(where, p, strlen(p), &bad);
            count++;
        }
        free(line);
        fclose(f);
        free(names[i]);
    }
    assert_true(count > 500);
    assert_int_equal(bad, 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_precedence),
        cmocka_unit_test(test_numbers),
        cmocka_unit_test(test_strings),
        cmocka_unit_test(test_selectors),
        cmocka_unit_test(test_subqueries),
        cmocka_unit_test(test_aggregations),
        cmocka_unit_test(test_binary),
        cmocka_unit_test(test_functions),
        cmocka_unit_test(test_durations),
        cmocka_unit_test(test_limits),
        cmocka_unit_test(test_prometheus_testdata),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
