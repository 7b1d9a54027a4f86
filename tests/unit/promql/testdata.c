/* tests/unit/promql/testdata.c -- runs Prometheus 2.42's own PromQL test
 * scripts (shared/promql-testdata/<name>.test, read in place) against the
 * engine, as 2.42's promql/test.go runs them:
 *
 *   load <step>      series in expanding notation (a+bxN, _, _xN, stale)
 *                    appended to an in-memory head (no WAL) at i * step ms;
 *   clear            a new head and a new engine;
 *   eval[_fail|_ordered] instant at <dur> <expr>
 *                    the instant query at <dur>; then, unless the
 *                    expression calls a function whose value depends on
 *                    the evaluation time, the same expression with @ <t>
 *                    put on every selector and subquery (not inside a
 *                    subquery that has one), printed and re-parsed, at
 *                    -10t, 0, t/5, t, 10t (-1s, 0, 1s when t = 0); each of
 *                    these also as a range query t-1m..t+1m step 1m whose
 *                    middle step must match (ordered evals only check that
 *                    it runs).
 *
 * Comparison as test.go's compareResult/almostEqual: every result series
 * must be expected and every expected series present, values equal
 * within relative 1e-6 (NaN equals NaN), positions too for eval_ordered.
 * Engine options as test.go's: 10000 max samples, 100 s timeout, 1m
 * default subquery step, 5m lookback.
 *
 * Every failing eval is printed with file:line, the query and the
 * difference; the test fails if any of them fails or if the scripts do
 * not hold exactly 566 evals. The scripts run twice: with one thread and
 * with worker threads (opts.threads = 2, used for every query). KELVIN_PROMQL_TEST=<name> runs only
 * <dir>/<name> (any script in the language, e.g. one generated with
 * expectations from the real 2.42).
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/num.h"
#include "base/time.h"
#include "labels/labels.h"
#include "promql/ast.h"
#include "promql/eval_int.h"
#include "promql/func.h"
#include "promql/promql.h"
#include "tsdb/head.h"

#define STALE_BITS 0x7ff0000000000002ULL

typedef struct exp_entry {
    labels_set *ls; /* NULL: a scalar */
    double v;
} exp_entry;

typedef struct runner {
    const char *file;
    unsigned threads;
    tsdb_head *head;
    promql_engine *eng;
    int evals, failed;
    uint64_t queries; /* instant and range queries run */
} runner;

/* ---- helpers ------------------------------------------------------------- */

static int almost_equal(double a, double b) {
    const double eps = 0.000001;
    const double min_normal = 2.2250738585072014e-308;
    if (isnan(a) && isnan(b)) return 1;
    if (a == b) return 1;
    double diff = fabs(a - b);
    if (a == 0 || b == 0 || diff < min_normal) return diff < eps * min_normal;
    return diff / (fabs(a) + fabs(b)) < eps;
}

static char *trim(char *s) {
    while (*s == ' ' || *s == '\t' || *s == '\r') s++;
    size_t n = strlen(s);
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r')) s[--n] = 0;
    return s;
}

static void fmt_labels(const labels_set *ls, char *out, size_t cap) {
    base_buf b = BASE_BUF_INIT;
    labels_format(ls, &b);
    snprintf(out, cap, "%s", b.data ? b.data : "{}");
    base_buf_free(&b);
}

/* ---- series descriptions: metric{labels} values ---------------------------- */

/* Splits "name{...} rest" at the end of the selector. */
static int split_series(const char *line, size_t *ret_end) {
    size_t i = 0;
    while (line[i] && line[i] != '{' && line[i] != ' ' && line[i] != '\t') i++;
    if (line[i] == '{') {
        int inq = 0;
        char qc = 0;
        for (; line[i]; i++) {
            char c = line[i];
            if (inq) {
                if (c == '\\' && qc != '`' && line[i + 1]) {
                    i++;
                    continue;
                }
                if (c == qc) inq = 0;
                continue;
            }
            if (c == '"' || c == '\'' || c == '`') {
                inq = 1;
                qc = c;
                continue;
            }
            if (c == '}') {
                i++;
                break;
            }
        }
    }
    *ret_end = i;
    return i > 0 ? 0 : -1;
}

static int parse_labels(const char *s, size_t n, labels_set **ret, char *err, size_t errlen) {
    labels_matcher **ms = NULL;
    size_t nms = 0;
    int rc = labels_parse_selector((base_str){s, n}, &ms, &nms, err, errlen);
    if (rc < 0) return rc;
    labels_builder b;
    labels_builder_init(&b);
    for (size_t i = 0; i < nms; i++)
        labels_builder_add(&b, labels_matcher_name(ms[i]), labels_matcher_value(ms[i]));
    rc = labels_builder_finish(&b, 0, ret, err, errlen);
    labels_builder_free(&b);
    labels_matchers_free(ms, nms);
    return rc;
}

static int parse_num(const char *s, size_t n, double *ret) {
    if (n == 5 && memcmp(s, "stale", 5) == 0) {
        uint64_t b = STALE_BITS;
        memcpy(ret, &b, 8);
        return 0;
    }
    return base_parse_double(s, n, ret);
}

/* Expanding notation: appends (present, value) pairs. */
typedef struct seq {
    double *v;
    unsigned char *present;
    size_t n, cap;
} seq;

static int seq_add(seq *s, int present, double v) {
    if (s->n == s->cap) {
        size_t nc = s->cap ? s->cap * 2 : 64;
        double *nv = realloc(s->v, nc * sizeof *nv);
        if (!nv) return -1;
        s->v = nv;
        unsigned char *np = realloc(s->present, nc);
        if (!np) return -1;
        s->present = np;
        s->cap = nc;
    }
    s->v[s->n] = v;
    s->present[s->n] = (unsigned char)present;
    s->n++;
    return 0;
}

static int parse_values(const char *p, seq *out) {
    while (*p) {
        while (*p == ' ' || *p == '\t') p++;
        if (!*p) break;
        const char *t = p;
        while (*p && *p != ' ' && *p != '\t') p++;
        size_t n = (size_t)(p - t);
        /* a trailing xN */
        size_t xpos = SIZE_MAX;
        for (size_t i = n; i-- > 1;) {
            if (t[i] == 'x') {
                int digits = i + 1 < n;
                for (size_t j = i + 1; j < n; j++)
                    if (t[j] < '0' || t[j] > '9') digits = 0;
                if (digits) xpos = i;
                break;
            }
            if (t[i] < '0' || t[i] > '9') break;
        }
        uint64_t times = 0;
        size_t vn = n;
        if (xpos != SIZE_MAX) {
            if (base_parse_u64(t + xpos + 1, n - xpos - 1, &times) < 0) return -1;
            vn = xpos;
        }
        if (vn == 1 && t[0] == '_') {
            uint64_t c = xpos == SIZE_MAX ? 1 : times;
            for (uint64_t i = 0; i < c; i++)
                if (seq_add(out, 0, 0) < 0) return -1;
            continue;
        }
        if (xpos == SIZE_MAX) {
            double v;
            if (parse_num(t, vn, &v) < 0) return -1;
            if (seq_add(out, 1, v) < 0) return -1;
            continue;
        }
        /* a+bxN or axN */
        size_t split = SIZE_MAX;
        for (size_t i = 1; i < vn; i++)
            if ((t[i] == '+' || t[i] == '-') && t[i - 1] != 'e' && t[i - 1] != 'E') {
                split = i;
                break;
            }
        double a, b = 0;
        if (split == SIZE_MAX) {
            if (parse_num(t, vn, &a) < 0) return -1;
            for (uint64_t i = 0; i <= times; i++)
                if (seq_add(out, 1, a) < 0) return -1;
            continue;
        }
        if (parse_num(t, split, &a) < 0) return -1;
        if (parse_num(t + split, vn - split, &b) < 0) return -1;
        if (seq_add(out, 1, a) < 0) return -1;
        for (uint64_t i = 1; i <= times; i++) {
            a += b;
            if (seq_add(out, 1, a) < 0) return -1;
        }
    }
    return 0;
}

/* ---- the runner ----------------------------------------------------------- */

static void report(runner *r, int line, const char *expr, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void report(runner *r, int line, const char *expr, const char *fmt, ...) {
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "%s:%d: %s\n    %s\n", r->file, line, expr, msg);
}

static void runner_drop(runner *r) {
    if (r->eng) {
        promql_engine_stats st;
        promql_engine_stats_get(r->eng, &st);
        r->queries += st.queries;
        promql_engine_free(r->eng);
    }
    if (r->head) tsdb_head_close(r->head);
    r->eng = NULL;
    r->head = NULL;
}

static void runner_clear(runner *r) {
    runner_drop(r);
    tsdb_head_opts ho;
    memset(&ho, 0, sizeof ho);
    char err[256];
    assert_int_equal(tsdb_head_open(&ho, &r->head, NULL, err, sizeof err), 0);
    promql_opts o;
    promql_opts_default(&o);
    o.max_samples = 10000;
    o.timeout_ms = 100000;
    o.default_subq_step_ms = 60000;
    o.threads = r->threads;
    assert_int_equal(promql_engine_new(&o, promql_storage_head(r->head), &r->eng), 0);
}

typedef struct loaded {
    labels_set *ls;
    seq s;
} loaded;

/* Returns the index of the next line after the block. */
static size_t do_load(runner *r, char **lines, size_t nl, size_t i, int64_t gap) {
    loaded *defs = NULL;
    size_t nd = 0;
    for (i = i + 1; i < nl && lines[i][0]; i++) {
        size_t end;
        const char *l = lines[i];
        labels_set *ls = NULL;
        char err[256];
        if (split_series(l, &end) < 0 || parse_labels(l, end, &ls, err, sizeof err) < 0) {
            report(r, (int)i + 1, l, "bad series: %s", err);
            r->failed++;
            continue;
        }
        seq s = {0};
        if (parse_values(l + end, &s) < 0) {
            report(r, (int)i + 1, l, "bad values");
            r->failed++;
            labels_unref(ls);
            free(s.v);
            free(s.present);
            continue;
        }
        size_t j;
        for (j = 0; j < nd; j++)
            if (labels_equal(defs[j].ls, ls)) break;
        if (j < nd) {
            labels_unref(defs[j].ls);
            free(defs[j].s.v);
            free(defs[j].s.present);
        } else {
            defs = realloc(defs, (nd + 1) * sizeof *defs);
            assert_non_null(defs);
            nd++;
        }
        defs[j].ls = ls;
        defs[j].s = s;
    }
    tsdb_head_app *app = NULL;
    assert_int_equal(tsdb_head_app_new(r->head, &app), 0);
    for (size_t j = 0; j < nd; j++) {
        for (size_t k = 0; k < defs[j].s.n; k++)
            if (defs[j].s.present[k])
                assert_int_equal(tsdb_head_app_add(app, defs[j].ls, (int64_t)k * gap, defs[j].s.v[k]), 0);
        labels_unref(defs[j].ls);
        free(defs[j].s.v);
        free(defs[j].s.present);
    }
    free(defs);
    assert_int_equal(tsdb_head_app_commit(app, NULL), 0);
    tsdb_head_app_free(app);
    return i;
}

static int fn_unsafe(pq_func_id id) {
    if (pq_fn_is_date(id)) return 1;
    switch (id) {
    case PQ_F_PREDICT_LINEAR:
    case PQ_F_TIME:
    case PQ_F_TIMESTAMP: return 1;
    default: return 0;
    }
}

/* test.go's atModifierTestCases: sets @ ts on every selector/subquery not
 * below a subquery with @; notes calls of time-dependent functions. */
static void set_at(pq_node *n, int64_t ts, int under_at, int *unsafe) {
    if (!n) return;
    if (!under_at) {
        switch (n->kind) {
        case PQ_VSEL:
            if (n->vsel.at != PQ_AT_TIME) {
                n->vsel.at = PQ_AT_TIME;
                n->vsel.at_ms = ts;
            }
            break;
        case PQ_MSEL:
            if (n->msel.vsel->vsel.at != PQ_AT_TIME) {
                n->msel.vsel->vsel.at = PQ_AT_TIME;
                n->msel.vsel->vsel.at_ms = ts;
            }
            break;
        case PQ_SUBQ:
            if (n->subq.at != PQ_AT_TIME) {
                n->subq.at = PQ_AT_TIME;
                n->subq.at_ms = ts;
            }
            break;
        case PQ_CALL:
            if (fn_unsafe(n->call.fn->id)) *unsafe = 1;
            break;
        default: break;
        }
    }
    switch (n->kind) {
    case PQ_MSEL: set_at(n->msel.vsel, ts, under_at, unsafe); break;
    case PQ_CALL:
        for (size_t i = 0; i < n->call.nargs; i++) set_at(n->call.args[i], ts, under_at, unsafe);
        break;
    case PQ_AGG:
        set_at(n->agg.expr, ts, under_at, unsafe);
        set_at(n->agg.param, ts, under_at, unsafe);
        break;
    case PQ_BIN:
        set_at(n->bin.lhs, ts, under_at, unsafe);
        set_at(n->bin.rhs, ts, under_at, unsafe);
        break;
    case PQ_UNARY: set_at(n->unary.expr, ts, under_at, unsafe); break;
    case PQ_PAREN: set_at(n->paren.expr, ts, under_at, unsafe); break;
    case PQ_SUBQ: set_at(n->subq.expr, ts, under_at || n->subq.at == PQ_AT_TIME, unsafe); break;
    default: break;
    }
}

typedef struct evalcmd {
    int line;
    int fail_, ordered;
    const char *expr;
    int64_t t;
    exp_entry *exp;
    size_t nexp;
    int scalar;
} evalcmd;

/* compareResult of test.go over (labels, value) pairs in result order. */
static int compare(const evalcmd *c, const labels_set *const *ls, const double *vals, size_t n, char *msg,
                   size_t cap) {
    char b1[512];
    unsigned char *seen = calloc(c->nexp + 1, 1);
    assert_non_null(seen);
    int rc = 0;
    for (size_t i = 0; i < n && !rc; i++) {
        size_t j;
        for (j = 0; j < c->nexp; j++)
            if (c->exp[j].ls && labels_equal(c->exp[j].ls, ls[i])) break;
        if (j == c->nexp) {
            fmt_labels(ls[i], b1, sizeof b1);
            snprintf(msg, cap, "unexpected metric %s in result (value %.17g)", b1, vals[i]);
            rc = -1;
            break;
        }
        if (c->ordered && j != i) {
            fmt_labels(ls[i], b1, sizeof b1);
            snprintf(msg, cap, "expected metric %s at position %zu but was at %zu", b1, j + 1, i + 1);
            rc = -1;
            break;
        }
        if (!almost_equal(c->exp[j].v, vals[i])) {
            fmt_labels(ls[i], b1, sizeof b1);
            snprintf(msg, cap, "expected %.17g for %s but got %.17g", c->exp[j].v, b1, vals[i]);
            rc = -1;
            break;
        }
        seen[j] = 1;
    }
    for (size_t j = 0; j < c->nexp && !rc; j++)
        if (!seen[j]) {
            if (c->exp[j].ls)
                fmt_labels(c->exp[j].ls, b1, sizeof b1);
            else
                snprintf(b1, sizeof b1, "(scalar)");
            snprintf(msg, cap, "expected metric %s with %.17g not found (%zu series in result)", b1,
                     c->exp[j].v, n);
            rc = -1;
        }
    free(seen);
    return rc;
}

static int compare_scalar(const evalcmd *c, double v, char *msg, size_t cap) {
    if (!c->scalar || c->nexp != 1) {
        snprintf(msg, cap, "got scalar %.17g, expected a vector", v);
        return -1;
    }
    if (!almost_equal(c->exp[0].v, v)) {
        snprintf(msg, cap, "expected scalar %.17g but got %.17g", c->exp[0].v, v);
        return -1;
    }
    return 0;
}

/* Runs one query variant; 0 or -1 with msg. */
static int run_variant(runner *r, const evalcmd *c, const pq_expr *x, int64_t t, char *msg, size_t cap) {
    promql_result res;
    int rc = promql_exec_instant(r->eng, x, t, NULL, &res);
    if (rc < 0) {
        if (c->fail_) {
            if (getenv("KELVIN_PROMQL_ERRMSG") && t == c->t)
                fprintf(stderr, "%s:%d: error: %s\n", r->file, c->line, res.errmsg);
            return 0;
        }
        snprintf(msg, cap, "error at t=%lld: %.1000s", (long long)t, res.errmsg);
        return -1;
    }
    if (c->fail_) {
        promql_result_free(&res);
        snprintf(msg, cap, "expected an error at t=%lld, got none", (long long)t);
        return -1;
    }
    int scalar = res.type == PROMQL_SCALAR;
    if (res.type == PROMQL_MATRIX) {
        snprintf(msg, cap, "received range result on instant evaluation");
        promql_result_free(&res);
        return -1;
    }
    if (scalar)
        rc = compare_scalar(c, res.scalar, msg, cap);
    else if (res.type == PROMQL_VECTOR) {
        const labels_set **ls = calloc(res.nseries + 1, sizeof *ls);
        double *vals = calloc(res.nseries + 1, sizeof *vals);
        assert_non_null(ls);
        assert_non_null(vals);
        for (size_t i = 0; i < res.nseries; i++) {
            ls[i] = res.series[i].ls;
            vals[i] = res.series[i].pts[0].v;
        }
        rc = compare(c, ls, vals, res.nseries, msg, cap);
        free(ls);
        free(vals);
    } else {
        snprintf(msg, cap, "unexpected result type %s", promql_vtype_str(res.type));
        rc = -1;
    }
    promql_result_free(&res);
    if (rc < 0) {
        char m2[1024];
        snprintf(m2, sizeof m2, "t=%lld: %s", (long long)t, msg);
        snprintf(msg, cap, "%s", m2);
        return rc;
    }
    /* range mode, checked at the middle step */
    promql_result rr;
    rc = promql_exec_range(r->eng, x, t - 60000, t + 60000, 60000, NULL, &rr);
    if (rc < 0) {
        snprintf(msg, cap, "range mode at t=%lld: error: %.1000s", (long long)t, rr.errmsg);
        return -1;
    }
    if (c->ordered) {
        promql_result_free(&rr);
        return 0;
    }
    const labels_set **ls = calloc(rr.nseries + 1, sizeof *ls);
    double *vals = calloc(rr.nseries + 1, sizeof *vals);
    assert_non_null(ls);
    assert_non_null(vals);
    size_t nv = 0;
    for (size_t i = 0; i < rr.nseries; i++)
        for (size_t j = 0; j < rr.series[i].n; j++)
            if (rr.series[i].pts[j].t == t) {
                ls[nv] = rr.series[i].ls;
                vals[nv] = rr.series[i].pts[j].v;
                nv++;
                break;
            }
    if (scalar) {
        if (nv == 0) {
            snprintf(msg, cap, "range mode: no scalar value at the middle step");
            rc = -1;
        } else {
            rc = compare_scalar(c, vals[0], msg, cap);
        }
    } else {
        rc = compare(c, ls, vals, nv, msg, cap);
    }
    free(ls);
    free(vals);
    promql_result_free(&rr);
    if (rc < 0) {
        char m2[1024];
        snprintf(m2, sizeof m2, "range mode at t=%lld: %s", (long long)t, msg);
        snprintf(msg, cap, "%s", m2);
    }
    return rc;
}

static void do_eval(runner *r, evalcmd *c) {
    r->evals++;
    char err[1024], msg[2048];
    pq_expr *x = NULL;
    if (promql_parse(c->expr, strlen(c->expr), &x, err, sizeof err) < 0) {
        report(r, c->line, c->expr, "parse error: %s", err);
        r->failed++;
        return;
    }
    int bad = 0;
    if (run_variant(r, c, x, c->t, msg, sizeof msg) < 0) {
        report(r, c->line, c->expr, "%s", msg);
        bad = 1;
    }
    /* the @ variants */
    int unsafe = 0;
    set_at((pq_node *)promql_expr_root(x), c->t, 0, &unsafe);
    if (!bad && !unsafe) {
        base_buf b = BASE_BUF_INIT;
        promql_print(promql_expr_root(x), &b);
        pq_expr *ax = NULL;
        if (!b.data || promql_parse(b.data, b.len, &ax, err, sizeof err) < 0) {
            report(r, c->line, c->expr, "re-parse of %s: %s", b.data ? b.data : "", err);
            bad = 1;
        } else {
            int64_t ts = c->t;
            int64_t times5[5] = {-10 * ts, 0, ts / 5, ts, 10 * ts};
            int64_t times3[3] = {-1000, 0, 1000};
            const int64_t *tt = ts == 0 ? times3 : times5;
            size_t nt = ts == 0 ? 3 : 5;
            for (size_t i = 0; i < nt && !bad; i++)
                if (run_variant(r, c, ax, tt[i], msg, sizeof msg) < 0) {
                    report(r, c->line, b.data, "%s", msg);
                    bad = 1;
                }
            promql_expr_free(ax);
        }
        base_buf_free(&b);
    }
    promql_expr_free(x);
    if (bad) r->failed++;
}

static size_t parse_eval(runner *r, char **lines, size_t nl, size_t i) {
    char *l = lines[i];
    evalcmd c;
    memset(&c, 0, sizeof c);
    c.line = (int)i + 1;
    char *p = l;
    while (*p && *p != ' ' && *p != '\t') p++;
    size_t kw = (size_t)(p - l);
    if (kw == 9 && memcmp(l, "eval_fail", 9) == 0) c.fail_ = 1;
    if (kw == 12 && memcmp(l, "eval_ordered", 12) == 0) c.ordered = 1;
    p = trim(p);
    if (strncmp(p, "instant", 7) != 0) {
        report(r, c.line, l, "bad eval command");
        r->failed++;
        r->evals++;
        return i + 1;
    }
    p = trim(p + 7);
    if (strncmp(p, "at", 2) == 0 && (p[2] == ' ' || p[2] == '\t')) {
        p = trim(p + 2);
        char *d = p;
        while (*p && *p != ' ' && *p != '\t') p++;
        char save = *p;
        *p = 0;
        int64_t ms = 0;
        if (base_parse_duration_ms(d, &ms) < 0) {
            report(r, c.line, l, "bad duration %s", d);
            r->failed++;
            r->evals++;
            return i + 1;
        }
        *p = save;
        c.t = ms;
    }
    c.expr = trim(p);
    size_t j = i + 1;
    for (; j < nl && lines[j][0]; j++) {
        const char *el = lines[j];
        double v;
        int64_t iv;
        if (base_parse_i64(el, strlen(el), &iv) == 0 || base_parse_double(el, strlen(el), &v) == 0) {
            if (base_parse_i64(el, strlen(el), &iv) == 0) v = (double)iv;
            c.exp = realloc(c.exp, (c.nexp + 1) * sizeof *c.exp);
            assert_non_null(c.exp);
            c.exp[c.nexp].ls = NULL;
            c.exp[c.nexp].v = v;
            c.nexp++;
            c.scalar = 1;
            j++;
            break;
        }
        size_t end;
        labels_set *ls = NULL;
        char err[256] = "";
        seq s = {0};
        if (split_series(el, &end) < 0 || parse_labels(el, end, &ls, err, sizeof err) < 0 ||
            parse_values(el + end, &s) < 0 || s.n != 1) {
            report(r, j + 1 > 0 ? (int)j + 1 : 0, el, "bad expectation %s", err);
            labels_unref(ls);
            free(s.v);
            free(s.present);
            continue;
        }
        c.exp = realloc(c.exp, (c.nexp + 1) * sizeof *c.exp);
        assert_non_null(c.exp);
        c.exp[c.nexp].ls = ls;
        c.exp[c.nexp].v = s.v[0];
        c.nexp++;
        free(s.v);
        free(s.present);
    }
    do_eval(r, &c);
    for (size_t k = 0; k < c.nexp; k++) labels_unref(c.exp[k].ls);
    free(c.exp);
    return j;
}

static void run_file(runner *r, const char *path, const char *name) {
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    base_buf b = BASE_BUF_INIT;
    char chunk[4096];
    size_t got;
    while ((got = fread(chunk, 1, sizeof chunk, f)) > 0) base_buf_append(&b, chunk, got);
    fclose(f);
    assert_int_equal(base_buf_err(&b), 0);
    size_t nl = 0;
    for (size_t i = 0; i < b.len; i++) nl += b.data[i] == '\n';
    char **lines = calloc(nl + 2, sizeof *lines);
    assert_non_null(lines);
    size_t k = 0;
    char *s = b.data;
    for (;;) {
        char *e = strchr(s, '\n');
        if (e) *e = 0;
        char *t = trim(s);
        if (t[0] == '#') t[0] = 0;
        lines[k++] = t;
        if (!e) break;
        s = e + 1;
    }
    r->file = name;
    runner_clear(r);
    for (size_t i = 0; i < k;) {
        char *l = lines[i];
        if (!l[0]) {
            i++;
            continue;
        }
        if (strcmp(l, "clear") == 0) {
            runner_clear(r);
            i++;
        } else if (strncmp(l, "load", 4) == 0) {
            int64_t gap = 0;
            if (base_parse_duration_ms(trim(l + 4), &gap) < 0) {
                report(r, (int)i + 1, l, "bad load step");
                r->failed++;
                gap = 1000;
            }
            i = do_load(r, lines, k, i, gap);
        } else if (strncmp(l, "eval", 4) == 0) {
            i = parse_eval(r, lines, k, i);
        } else {
            report(r, (int)i + 1, l, "unknown command");
            r->failed++;
            i++;
        }
    }
    free(lines);
    base_buf_free(&b);
}

/* All the scripts with an engine of `threads` worker threads. */
static void run_all(unsigned threads) {
    const char *src = getenv("KELVIN_SOURCE_DIR");
    assert_non_null(src);
    static const char *files[] = {"aggregators.test", "at_modifier.test",   "collision.test",
                                  "functions.test",   "histograms.test",    "literals.test",
                                  "operators.test",   "selectors.test",     "staleness.test",
                                  "subquery.test",    "trig_functions.test"};
    const char *only = getenv("KELVIN_PROMQL_TEST");
    runner r;
    memset(&r, 0, sizeof r);
    r.threads = threads;
    int64_t t0 = base_mono_ns();
    size_t nfiles = sizeof files / sizeof files[0];
    for (size_t i = 0; i < (only ? 1 : nfiles); i++) {
        const char *name = only ? only : files[i];
        char path[4096];
        snprintf(path, sizeof path, "%s/../shared/promql-testdata/%s", src, name);
        int before_e = r.evals, before_f = r.failed;
        run_file(&r, path, name);
        fprintf(stderr, "%-20s %3d evals, %3d passed\n", name, r.evals - before_e,
                (r.evals - before_e) - (r.failed - before_f));
    }
    runner_drop(&r);
    fprintf(stderr, "promql testdata (threads %u): %d/%d evals passed (%llu queries, %.1f s)\n", threads,
            r.evals - r.failed, r.evals, (unsigned long long)r.queries, (double)(base_mono_ns() - t0) / 1e9);
    assert_int_equal(r.failed, 0);
    if (!only) assert_int_equal(r.evals, 566);
}

static void test_promql_testdata(void **state) {
    (void)state;
    run_all(0);
}

/* The same with worker threads (each selector read by two threads, even
 * for the three steps of a range check). */
static void test_promql_testdata_threads(void **state) {
    (void)state;
    unsigned save = pq__stream_thread_min_steps;
    pq__stream_thread_min_steps = 1;
    run_all(2);
    pq__stream_thread_min_steps = save;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_promql_testdata),
        cmocka_unit_test(test_promql_testdata_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
