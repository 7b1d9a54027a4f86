/* test_rules.c -- `kelvin test rules FILE...`: promtool 2.42's rule unit
 * tests (cmd/promtool/unittest.go), same file format, output and exit
 * status.
 *
 * A test file (yaml.v2, strict: unknown fields are errors):
 *   rule_files: [GLOB...]        (relative to the test file)
 *   evaluation_interval: DUR     (1m)
 *   group_eval_order: [GROUP...]
 *   tests:
 *     - interval: DUR            (the input series' step; also the
 *                                 groups' default interval)
 *       name: TEXT
 *       external_labels: {k: v}
 *       external_url: URL
 *       input_series: [{series: 'up{a="b"}', values: '1+1x10 _ stale'}]
 *       alert_rule_test: [{eval_time, alertname, exp_alerts: [{exp_labels, exp_annotations}]}]
 *       promql_expr_test: [{expr, eval_time, exp_samples: [{labels, value}]}]
 *
 * Each test group runs as 2.42's testGroup.test: the input series become
 * promql/test.go's "load" command (series descriptions, series_desc.h)
 * over a fresh in-memory head (nothing is written to disk); the rule
 * files are loaded (rules_file_load) into one gstate per group
 * (rules/eval.h), ordered by group_eval_order; then at 0, interval, ...
 * up to the largest eval_time, the samples up to that time are appended,
 * every group is evaluated (its ALERTS written: the rules count as
 * restored), a rule error ends the group's test ("rule: NAME, time: T,
 * err: ..."), and the alert tests whose eval_time falls in [t, t +
 * evaluation_interval) compare the firing alerts with the expected ones.
 * The PromQL tests then query the head at their eval_time. Queries run on
 * an engine with 2.42's test limits (10000 samples, 100 s, 5m lookback,
 * subqueries' default step = evaluation_interval).
 *
 * Output: "Unit Testing:  FILE" and "  SUCCESS" on stdout, or "  FAILED:"
 * and each error on stderr (a blank line on stdout after each), a blank
 * line after each file; exit 0 when every file passes, 1 otherwise; 2 for
 * bad usage (promtool's kingpin says 1 there).
 *
 * Known differences: 2.42 walks Go maps for the rule groups, so the order
 * in which groups that group_eval_order does not name are evaluated varies
 * there from run to run; here it is file order. A repetition that expands
 * a series past PROMQL_SERIES_DESC_MAX_VALUES values is an error here (2.42
 * tries to allocate it). A series whose labels name a label twice is a
 * parse error here (2.42 fails each append). A test group that needs more
 * than TEST_MAX_ROUNDS evaluation rounds, or loads more than
 * TEST_MAX_VALUES input values, fails with an error of its own (2.42 runs
 * or allocates until it cannot).
 */
#include <errno.h>
#include <glob.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/num.h"
#include "base/path.h"
#include "base/time.h"
#include "config/yaml.h"
#include "labels/labels.h"
#include "promql/promql.h"
#include "promql/series_desc.h"
#include "rules/eval.h"
#include "rules/rules.h"
#include "tools/tools.h"
#include "tsdb/head.h"

#define TEST_FILE_MAX   ((size_t)64 << 20)
/* Limits 2.42 does not have (it runs or allocates until it cannot): the
 * evaluation rounds of one test group, and the input values it loads. */
#define TEST_MAX_ROUNDS ((int64_t)10000000)
#define TEST_MAX_VALUES ((size_t)1 << 24)

/* ---- errors ------------------------------------------------------------------------ */

typedef struct errlist {
    char **v;
    size_t n, cap;
    int nomem;
} errlist;

static void errs_add(errlist *e, const char *s, size_t n) {
    if (e->n == e->cap) {
        size_t nc = e->cap ? e->cap * 2 : 8;
        char **nv = realloc(e->v, nc * sizeof *nv);
        if (!nv) {
            e->nomem = 1;
            return;
        }
        e->v = nv;
        e->cap = nc;
    }
    char *c = strndup(s, n);
    if (!c) {
        e->nomem = 1;
        return;
    }
    e->v[e->n++] = c;
}

static void errs_addf(errlist *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void errs_addf(errlist *e, const char *fmt, ...) {
    base_buf b;
    base_buf_init(&b, 0);
    va_list ap;
    va_start(ap, fmt);
    base_buf_vprintf(&b, fmt, ap);
    va_end(ap);
    if (base_buf_err(&b))
        e->nomem = 1;
    else
        errs_add(e, b.data ? b.data : "", b.len);
    base_buf_free(&b);
}

static void errs_free(errlist *e) {
    for (size_t i = 0; i < e->n; i++) free(e->v[i]);
    free(e->v);
    memset(e, 0, sizeof *e);
}

/* ---- Go formatting ----------------------------------------------------------------- */

/* strconv.Quote */
static void quote(base_buf *b, const char *s) {
    labels_quote(b, base_str_c(s));
}

/* time.Duration(ms).String() */
static void go_duration(base_buf *b, int64_t ms) {
    char buf[40];
    int w = (int)sizeof buf;
    int neg = ms < 0;
    uint64_t u = neg ? (uint64_t)(-(ms + 1)) + 1 : (uint64_t)ms;
    u *= 1000000; /* ns; the test's times stay below 2^63 ns */
    if (u == 0) {
        base_buf_puts(b, "0s");
        return;
    }
    buf[--w] = 's';
    if (u < 1000000000ULL) {
        /* milliseconds (times here are whole ms) */
        buf[--w] = 'm';
        uint64_t v = u / 1000000;
        do {
            buf[--w] = (char)('0' + v % 10);
            v /= 10;
        } while (v);
    } else {
        uint64_t frac = u % 1000000000ULL;
        u /= 1000000000ULL;
        if (frac) {
            char f[9];
            for (int i = 8; i >= 0; i--) {
                f[i] = (char)('0' + frac % 10);
                frac /= 10;
            }
            int last = 8;
            while (last > 0 && f[last] == '0') last--;
            for (int i = last; i >= 0; i--) buf[--w] = f[i];
            buf[--w] = '.';
        }
        uint64_t v = u % 60;
        do {
            buf[--w] = (char)('0' + v % 10);
            v /= 10;
        } while (v);
        u /= 60;
        if (u) {
            buf[--w] = 'm';
            v = u % 60;
            do {
                buf[--w] = (char)('0' + v % 10);
                v /= 10;
            } while (v);
            u /= 60;
            if (u) {
                buf[--w] = 'h';
                do {
                    buf[--w] = (char)('0' + u % 10);
                    u /= 10;
                } while (u);
            }
        }
    }
    if (neg) buf[--w] = '-';
    base_buf_append(b, buf + w, sizeof buf - (size_t)w);
}

/* model.Duration(ms).String() */
static void model_duration(base_buf *b, int64_t ms) {
    char s[BASE_FMT_DURATION_MAX];
    size_t n = base_fmt_duration(s, sizeof s, ms);
    base_buf_append(b, s, n);
}

/* ---- label pairs as Go's labels.Labels --------------------------------------------- */

typedef struct pairs {
    char **n, **v;
    size_t len;
} pairs;

static void pairs_free(pairs *p) {
    for (size_t i = 0; i < p->len; i++) {
        free(p->n[i]);
        free(p->v[i]);
    }
    free(p->n);
    free(p->v);
    memset(p, 0, sizeof *p);
}

static int pairs_add(pairs *p, const char *n, size_t nl, const char *v, size_t vl) {
    char **nn = realloc(p->n, (p->len + 1) * sizeof *nn);
    if (!nn) return BASE_E_NOMEM;
    p->n = nn;
    char **nv = realloc(p->v, (p->len + 1) * sizeof *nv);
    if (!nv) return BASE_E_NOMEM;
    p->v = nv;
    char *a = strndup(n, nl), *c = strndup(v, vl);
    if (!a || !c) {
        free(a);
        free(c);
        return BASE_E_NOMEM;
    }
    p->n[p->len] = a;
    p->v[p->len] = c;
    p->len++;
    return 0;
}

static int pairs_from_set(pairs *p, const labels_set *ls) {
    labels_iter it;
    base_str n, v;
    labels_iter_init(&it, ls);
    while (labels_iter_next(&it, &n, &v))
        if (pairs_add(p, n.p, n.n, v.p, v.n)) return BASE_E_NOMEM;
    return 0;
}

static void pairs_sort(pairs *p) {
    for (size_t i = 1; i < p->len; i++) /* insertion: tiny lists */
        for (size_t j = i; j > 0 && strcmp(p->n[j - 1], p->n[j]) > 0; j--) {
            char *t = p->n[j];
            p->n[j] = p->n[j - 1];
            p->n[j - 1] = t;
            t = p->v[j];
            p->v[j] = p->v[j - 1];
            p->v[j - 1] = t;
        }
}

/* labels.Compare */
static int pairs_cmp(const pairs *a, const pairs *b) {
    size_t l = a->len < b->len ? a->len : b->len;
    for (size_t i = 0; i < l; i++) {
        int c = strcmp(a->n[i], b->n[i]);
        if (c) return c;
        c = strcmp(a->v[i], b->v[i]);
        if (c) return c;
    }
    return (a->len > b->len) - (a->len < b->len);
}

/* labels.Labels.String() */
static void pairs_fmt(base_buf *b, const pairs *p) {
    base_buf_putc(b, '{');
    for (size_t i = 0; i < p->len; i++) {
        if (i) base_buf_puts(b, ", ");
        base_buf_puts(b, p->n[i]);
        base_buf_putc(b, '=');
        quote(b, p->v[i]);
    }
    base_buf_putc(b, '}');
}

/* ---- the test file ------------------------------------------------------------------- */

typedef struct kv {
    char *k, *v;
} kv;

typedef struct kvs {
    kv *v;
    size_t n;
} kvs;

typedef struct t_series {
    char *series, *values;
} t_series;

typedef struct t_alert {
    kvs labels, annotations;
} t_alert;

typedef struct t_alertcase {
    int64_t eval_time;
    char *alertname;
    t_alert *exp;
    size_t nexp;
} t_alertcase;

typedef struct t_sample {
    char *labels;
    double value;
} t_sample;

typedef struct t_promqlcase {
    char *expr;
    int64_t eval_time;
    t_sample *exp;
    size_t nexp;
} t_promqlcase;

typedef struct t_group {
    int64_t interval;
    t_series *series;
    size_t nseries;
    t_alertcase *alerts;
    size_t nalerts;
    t_promqlcase *promql;
    size_t npromql;
    kvs external_labels;
    char *external_url;
    char *name;
} t_group;

typedef struct t_file {
    char **rule_files;
    size_t nrule_files;
    int64_t eval_interval;
    char **order;
    size_t norder;
    t_group *tests;
    size_t ntests;
} t_file;

static void kvs_free(kvs *k) {
    for (size_t i = 0; i < k->n; i++) {
        free(k->v[i].k);
        free(k->v[i].v);
    }
    free(k->v);
    memset(k, 0, sizeof *k);
}

static void strs_free(char **s, size_t n) {
    for (size_t i = 0; i < n; i++) free(s[i]);
    free(s);
}

static void t_file_free(t_file *f) {
    strs_free(f->rule_files, f->nrule_files);
    strs_free(f->order, f->norder);
    for (size_t i = 0; i < f->ntests; i++) {
        t_group *g = &f->tests[i];
        for (size_t j = 0; j < g->nseries; j++) {
            free(g->series[j].series);
            free(g->series[j].values);
        }
        free(g->series);
        for (size_t j = 0; j < g->nalerts; j++) {
            free(g->alerts[j].alertname);
            for (size_t k = 0; k < g->alerts[j].nexp; k++) {
                kvs_free(&g->alerts[j].exp[k].labels);
                kvs_free(&g->alerts[j].exp[k].annotations);
            }
            free(g->alerts[j].exp);
        }
        free(g->alerts);
        for (size_t j = 0; j < g->npromql; j++) {
            free(g->promql[j].expr);
            for (size_t k = 0; k < g->promql[j].nexp; k++) free(g->promql[j].exp[k].labels);
            free(g->promql[j].exp);
        }
        free(g->promql);
        kvs_free(&g->external_labels);
        free(g->external_url);
        free(g->name);
    }
    free(f->tests);
    memset(f, 0, sizeof *f);
}

/* ---- yaml.v2's strict decoding ----------------------------------------------------------- */

typedef struct ydec {
    cfg_ydoc *doc;
    errlist terrs; /* yaml.v2's type errors, "line N: ..." */
    char *fatal;   /* an error that ends decoding (a custom unmarshaler's) */
    int nomem;
    int depth;
} ydec;

#define Y_STOP(d) ((d)->fatal || (d)->nomem)

static int y_visit(ydec *d) {
    if (++d->doc->visits > CFG_YAML_MAX_VISITS) {
        if (!d->fatal) d->fatal = strdup("yaml: document contains excessive aliasing");
        if (!d->fatal) d->nomem = 1;
        return -1;
    }
    return 0;
}

static int y_null(const cfg_ynode *n) {
    if (!n) return 1;
    if (n->kind != CFG_Y_SCALAR) return 0;
    cfg_yresolved r;
    cfg_yaml_resolve(n, &r);
    return r.tag == CFG_YT_NULL;
}

/* d.terror(): "line N: cannot unmarshal !!str `value` into T" */
static void y_terror(ydec *d, const cfg_ynode *n, const char *type) {
    const char *tag = cfg_yaml_short_tag(n);
    if (n->kind != CFG_Y_SCALAR)
        errs_addf(&d->terrs, "line %d: cannot unmarshal %s into %s", n->line, tag, type);
    else if (n->len > 10)
        errs_addf(&d->terrs, "line %d: cannot unmarshal %s `%.7s...` into %s", n->line, tag, n->val, type);
    else
        errs_addf(&d->terrs, "line %d: cannot unmarshal %s `%s` into %s", n->line, tag, n->val, type);
}

static int y_is_merge(const cfg_ynode *k) {
    if (k->kind != CFG_Y_SCALAR) return 0;
    cfg_yresolved r;
    cfg_yaml_resolve(k, &r);
    return r.tag == CFG_YT_MERGE;
}

/* A string from any scalar (yaml.v2 sets a string from a scalar's text). */
static int y_string(ydec *d, const cfg_ynode *n, char **out) {
    if (y_visit(d)) return -1;
    if (y_null(n)) {
        free(*out);
        *out = strdup("");
        if (!*out) d->nomem = 1;
        return 0;
    }
    if (n->kind != CFG_Y_SCALAR) {
        y_terror(d, n, "string");
        return -1;
    }
    free(*out);
    *out = strndup(n->val, n->len);
    if (!*out) d->nomem = 1;
    return 0;
}

static void y_float(ydec *d, const cfg_ynode *n, double *out) {
    if (y_visit(d) || y_null(n)) return;
    if (n->kind != CFG_Y_SCALAR) {
        y_terror(d, n, "float64");
        return;
    }
    cfg_yresolved r;
    cfg_yaml_resolve(n, &r);
    if (r.tag == CFG_YT_INT || r.tag == CFG_YT_FLOAT)
        *out = r.f;
    else
        y_terror(d, n, "float64");
}

/* model.Duration's UnmarshalYAML. */
static void y_duration(ydec *d, const cfg_ynode *n, int64_t *out) {
    if (y_visit(d) || y_null(n)) return;
    if (n->kind != CFG_Y_SCALAR) {
        y_terror(d, n, "string");
        return;
    }
    int64_t ms;
    int rc = n->len ? base_parse_duration_ms(n->val, &ms) : BASE_E_PARSE;
    if (rc == 0) {
        *out = ms;
        return;
    }
    base_buf b;
    base_buf_init(&b, 0);
    if (n->len == 0)
        base_buf_puts(&b, "empty duration string");
    else if (rc == BASE_E_RANGE)
        base_buf_puts(&b, "duration out of range");
    else {
        base_buf_puts(&b, "not a valid duration string: ");
        quote(&b, n->val);
    }
    if (base_buf_err(&b))
        d->nomem = 1;
    else
        d->fatal = base_buf_steal(&b, NULL);
    base_buf_free(&b);
}

static void y_strseq(ydec *d, const cfg_ynode *n, char ***out, size_t *nout) {
    if (y_visit(d) || y_null(n)) return;
    if (n->kind != CFG_Y_SEQ) {
        y_terror(d, n, "[]string");
        return;
    }
    char **v = calloc(n->n ? n->n : 1, sizeof *v);
    if (!v) {
        d->nomem = 1;
        return;
    }
    size_t k = 0;
    for (size_t i = 0; i < n->n && !Y_STOP(d); i++) {
        char *s = NULL;
        if (y_string(d, n->kids[i], &s) == 0 && s)
            v[k++] = s;
        else {
            free(s);
            v[k++] = strdup(""); /* Go keeps the zero value in place */
            if (!v[k - 1]) d->nomem = 1;
        }
    }
    strs_free(*out, *nout);
    *out = v;
    *nout = k;
}

/* map[string]string (labels.Labels' UnmarshalYAML decodes one too). */
static void y_strmap_into(ydec *d, const cfg_ynode *n, kvs *m) {
    if (y_visit(d)) return;
    for (size_t i = 0; i + 1 < n->n && !Y_STOP(d); i += 2) {
        const cfg_ynode *k = n->kids[i], *v = n->kids[i + 1];
        if (y_is_merge(k)) {
            if (v->kind == CFG_Y_MAP)
                y_strmap_into(d, v, m);
            else if (v->kind == CFG_Y_SEQ) {
                for (size_t j = 0; j < v->n; j++)
                    if (v->kids[j]->kind == CFG_Y_MAP) y_strmap_into(d, v->kids[j], m);
            }
            continue;
        }
        char *ks = NULL, *vs = NULL;
        if (y_string(d, k, &ks)) {
            free(ks);
            continue;
        }
        int dup = 0;
        for (size_t j = 0; j < m->n; j++)
            if (strcmp(m->v[j].k, ks) == 0) {
                dup = 1;
                base_buf q;
                base_buf_init(&q, 0);
                quote(&q, ks);
                errs_addf(&d->terrs, "line %d: key %s already set in map", k->line, q.data ? q.data : "");
                base_buf_free(&q);
                break;
            }
        if (dup) {
            free(ks);
            continue;
        }
        if (y_string(d, v, &vs)) {
            /* the key stays with its zero value */
            free(vs);
            vs = strdup("");
        }
        kv *nv = vs ? realloc(m->v, (m->n + 1) * sizeof *nv) : NULL;
        if (!nv) {
            free(ks);
            free(vs);
            d->nomem = 1;
            return;
        }
        m->v = nv;
        m->v[m->n].k = ks;
        m->v[m->n].v = vs;
        m->n++;
    }
}

static void y_strmap(ydec *d, const cfg_ynode *n, kvs *m) {
    if (y_null(n)) return;
    if (n->kind != CFG_Y_MAP) {
        y_terror(d, n, "map[string]string");
        return;
    }
    kvs_free(m);
    y_strmap_into(d, n, m);
}

/* A struct: fields[] names, fn(d, index, value, ctx); merges decode
 * into the same struct, each with its own set of fields seen. */
typedef void y_field_fn(ydec *d, int f, const cfg_ynode *v, void *ctx);

static void y_struct(ydec *d, const cfg_ynode *n, const char *type, const char *const *fields, y_field_fn *fn,
                     void *ctx) {
    if (y_visit(d) || y_null(n)) return;
    if (n->kind != CFG_Y_MAP) {
        y_terror(d, n, type);
        return;
    }
    if (++d->depth > CFG_YAML_MAX_DEPTH) {
        d->depth--;
        if (!d->fatal && !(d->fatal = strdup("yaml: merge keys nested too deeply"))) d->nomem = 1;
        return;
    }
    unsigned done = 0;
    for (size_t i = 0; i + 1 < n->n && !Y_STOP(d); i += 2) {
        const cfg_ynode *k = n->kids[i], *v = n->kids[i + 1];
        if (y_is_merge(k)) {
            if (v->kind == CFG_Y_SEQ) {
                for (size_t j = 0; j < v->n && !Y_STOP(d); j++)
                    y_struct(d, v->kids[j], type, fields, fn, ctx);
            } else {
                y_struct(d, v, type, fields, fn, ctx);
            }
            continue;
        }
        if (k->kind != CFG_Y_SCALAR) {
            y_terror(d, k, "string");
            continue;
        }
        int f = -1;
        for (int j = 0; fields[j]; j++)
            if (strlen(fields[j]) == k->len && memcmp(fields[j], k->val, k->len) == 0) {
                f = j;
                break;
            }
        if (f < 0) {
            errs_addf(&d->terrs, "line %d: field %s not found in type %s", k->line, k->val, type);
            continue;
        }
        if (done & (1u << f)) {
            errs_addf(&d->terrs, "line %d: field %s already set in type %s", k->line, k->val, type);
            continue;
        }
        done |= 1u << f;
        fn(d, f, v, ctx);
    }
    d->depth--;
}

/* A sequence of structs: each element decoded by one(d, node, elem). */
static void *y_seq(ydec *d, const cfg_ynode *n, const char *type, size_t esize, size_t *ret_n,
                   void (*one)(ydec *d, const cfg_ynode *n, void *elem)) {
    *ret_n = 0;
    if (y_visit(d) || y_null(n)) return NULL;
    if (n->kind != CFG_Y_SEQ) {
        y_terror(d, n, type);
        return NULL;
    }
    char *v = calloc(n->n ? n->n : 1, esize);
    if (!v) {
        d->nomem = 1;
        return NULL;
    }
    for (size_t i = 0; i < n->n && !Y_STOP(d); i++) {
        one(d, n->kids[i], v + i * esize);
        (*ret_n)++;
    }
    return v;
}

static const char *const F_SERIES[] = {"series", "values", NULL};
static void f_series(ydec *d, int f, const cfg_ynode *v, void *ctx) {
    t_series *s = ctx;
    (void)y_string(d, v, f == 0 ? &s->series : &s->values);
}
static void one_series(ydec *d, const cfg_ynode *n, void *e) {
    y_struct(d, n, "main.series", F_SERIES, f_series, e);
}

static const char *const F_ALERT[] = {"exp_labels", "exp_annotations", NULL};
static void f_alert(ydec *d, int f, const cfg_ynode *v, void *ctx) {
    t_alert *a = ctx;
    y_strmap(d, v, f == 0 ? &a->labels : &a->annotations);
}
static void one_alert(ydec *d, const cfg_ynode *n, void *e) {
    y_struct(d, n, "main.alert", F_ALERT, f_alert, e);
}

static const char *const F_ALERTCASE[] = {"eval_time", "alertname", "exp_alerts", NULL};
static void f_alertcase(ydec *d, int f, const cfg_ynode *v, void *ctx) {
    t_alertcase *a = ctx;
    if (f == 0) y_duration(d, v, &a->eval_time);
    if (f == 1) (void)y_string(d, v, &a->alertname);
    if (f == 2) a->exp = y_seq(d, v, "[]main.alert", sizeof *a->exp, &a->nexp, one_alert);
}
static void one_alertcase(ydec *d, const cfg_ynode *n, void *e) {
    y_struct(d, n, "main.alertTestCase", F_ALERTCASE, f_alertcase, e);
}

static const char *const F_SAMPLE[] = {"labels", "value", NULL};
static void f_sample(ydec *d, int f, const cfg_ynode *v, void *ctx) {
    t_sample *s = ctx;
    if (f == 0) (void)y_string(d, v, &s->labels);
    if (f == 1) y_float(d, v, &s->value);
}
static void one_sample(ydec *d, const cfg_ynode *n, void *e) {
    y_struct(d, n, "main.sample", F_SAMPLE, f_sample, e);
}

static const char *const F_PROMQLCASE[] = {"expr", "eval_time", "exp_samples", NULL};
static void f_promqlcase(ydec *d, int f, const cfg_ynode *v, void *ctx) {
    t_promqlcase *p = ctx;
    if (f == 0) (void)y_string(d, v, &p->expr);
    if (f == 1) y_duration(d, v, &p->eval_time);
    if (f == 2) p->exp = y_seq(d, v, "[]main.sample", sizeof *p->exp, &p->nexp, one_sample);
}
static void one_promqlcase(ydec *d, const cfg_ynode *n, void *e) {
    y_struct(d, n, "main.promqlTestCase", F_PROMQLCASE, f_promqlcase, e);
}

static const char *const F_GROUP[] = {"interval",
                                      "input_series",
                                      "alert_rule_test",
                                      "promql_expr_test",
                                      "external_labels",
                                      "external_url",
                                      "name",
                                      NULL};
static void f_group(ydec *d, int f, const cfg_ynode *v, void *ctx) {
    t_group *g = ctx;
    switch (f) {
    case 0: y_duration(d, v, &g->interval); break;
    case 1: g->series = y_seq(d, v, "[]main.series", sizeof *g->series, &g->nseries, one_series); break;
    case 2:
        g->alerts = y_seq(d, v, "[]main.alertTestCase", sizeof *g->alerts, &g->nalerts, one_alertcase);
        break;
    case 3:
        g->promql = y_seq(d, v, "[]main.promqlTestCase", sizeof *g->promql, &g->npromql, one_promqlcase);
        break;
    case 4: y_strmap(d, v, &g->external_labels); break;
    case 5: (void)y_string(d, v, &g->external_url); break;
    case 6: (void)y_string(d, v, &g->name); break;
    default: break;
    }
}
static void one_group(ydec *d, const cfg_ynode *n, void *e) {
    y_struct(d, n, "main.testGroup", F_GROUP, f_group, e);
}

static const char *const F_FILE[] = {"rule_files", "evaluation_interval", "group_eval_order", "tests", NULL};
static void f_file(ydec *d, int f, const cfg_ynode *v, void *ctx) {
    t_file *t = ctx;
    switch (f) {
    case 0: y_strseq(d, v, &t->rule_files, &t->nrule_files); break;
    case 1: y_duration(d, v, &t->eval_interval); break;
    case 2: y_strseq(d, v, &t->order, &t->norder); break;
    case 3: t->tests = y_seq(d, v, "[]main.testGroup", sizeof *t->tests, &t->ntests, one_group); break;
    default: break;
    }
}

/* yaml.UnmarshalStrict(b, &unitTestFile): 0, or the error in errs. */
static int decode_file(const char *buf, size_t len, t_file *out, errlist *errs) {
    cfg_ydoc doc;
    memset(&doc, 0, sizeof doc);
    char err[1024];
    int rc = cfg_yaml_parse(buf, len, "", &doc, err, sizeof err);
    if (rc == BASE_E_NOMEM) {
        cfg_ydoc_free(&doc);
        return rc;
    }
    if (rc) {
        /* ":LINE: yaml: what" -> yaml.v2's "yaml: line LINE: what" */
        int line = 0;
        const char *p = err + 1, *what = strstr(err, ": yaml: ");
        while (*p >= '0' && *p <= '9') line = line * 10 + (*p++ - '0');
        if (what && err[0] == ':')
            errs_addf(errs, "yaml: line %d: %s", line, what + 8);
        else
            errs_addf(errs, "%s", err[0] == ':' ? err + 1 : err);
        cfg_ydoc_free(&doc);
        return BASE_E_INVAL;
    }
    ydec d;
    memset(&d, 0, sizeof d);
    d.doc = &doc;
    if (doc.root) y_struct(&d, doc.root, "main.unitTestFile", F_FILE, f_file, out);
    cfg_ydoc_free(&doc);
    if (d.nomem || d.terrs.nomem) {
        free(d.fatal);
        errs_free(&d.terrs);
        return BASE_E_NOMEM;
    }
    if (d.fatal) {
        errs_add(errs, d.fatal, strlen(d.fatal));
        free(d.fatal);
        errs_free(&d.terrs);
        return BASE_E_INVAL;
    }
    if (d.terrs.n) {
        base_buf b;
        base_buf_init(&b, 0);
        base_buf_puts(&b, "yaml: unmarshal errors:");
        for (size_t i = 0; i < d.terrs.n; i++) {
            base_buf_puts(&b, "\n  ");
            base_buf_puts(&b, d.terrs.v[i]);
        }
        if (!base_buf_err(&b)) errs_add(errs, b.data, b.len);
        base_buf_free(&b);
        errs_free(&d.terrs);
        return BASE_E_INVAL;
    }
    return 0;
}

/* ---- paths ---------------------------------------------------------------------------- */

/* resolveAndGlobFilepaths */
static int resolve_rule_files(const char *test_file, t_file *f, errlist *errs) {
    char *dir = strdup(test_file);
    if (!dir) return BASE_E_NOMEM;
    char *slash = strrchr(dir, '/');
    if (slash == dir)
        dir[1] = 0;
    else if (slash)
        *slash = 0;
    else
        strcpy(dir, ".");
    char **out = NULL;
    size_t nout = 0;
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < f->nrule_files; i++) {
        char *p = f->rule_files[i];
        if (p[0] && p[0] != '/') {
            char *j = base_path_join(dir, p);
            if (!j) {
                rc = BASE_E_NOMEM;
                break;
            }
            free(p);
            f->rule_files[i] = p = j;
        }
        glob_t g;
        memset(&g, 0, sizeof g);
        int grc = glob(p, GLOB_PERIOD, NULL, &g);
        if (grc == GLOB_NOSPACE) {
            rc = BASE_E_NOMEM;
        } else if (grc == GLOB_NOMATCH || g.gl_pathc == 0) {
            fprintf(stderr, "  WARNING: no file match pattern %s\n", p);
        } else if (grc == 0) {
            char **no = realloc(out, (nout + g.gl_pathc) * sizeof *no);
            if (!no)
                rc = BASE_E_NOMEM;
            else {
                out = no;
                for (size_t k = 0; k < g.gl_pathc && rc == 0; k++) {
                    if (!(out[nout] = strdup(g.gl_pathv[k])))
                        rc = BASE_E_NOMEM;
                    else
                        nout++;
                }
            }
        }
        globfree(&g);
    }
    free(dir);
    (void)errs;
    if (rc) {
        strs_free(out, nout);
        return rc;
    }
    strs_free(f->rule_files, f->nrule_files);
    f->rule_files = out;
    f->nrule_files = nout;
    return 0;
}

/* ---- one test group ---------------------------------------------------------------------- */

typedef struct loaded {
    labels_set *ls;
    char *bad; /* why the head refuses the series (2.42's append error) */
    int64_t *t;
    double *v;
    size_t n, next;
} loaded;

typedef struct tgrun {
    tsdb_head *head;
    tsdb_head_app *app;
    promql_engine *engine;
    loaded *series;
    size_t nseries;
    rules_file **files;
    size_t nfiles;
    rules_gstate **groups;
    size_t ngroups;
    labels_set *ext;
    size_t nvalues;
} tgrun;

static void tgrun_free(tgrun *r) {
    for (size_t i = 0; i < r->nseries; i++) {
        labels_unref(r->series[i].ls);
        free(r->series[i].bad);
        free(r->series[i].t);
        free(r->series[i].v);
    }
    free(r->series);
    for (size_t i = 0; i < r->ngroups; i++) rules_gstate_free(r->groups[i]);
    free(r->groups);
    for (size_t i = 0; i < r->nfiles; i++) rules_file_free(r->files[i]);
    free(r->files);
    promql_engine_free(r->engine);
    tsdb_head_app_free(r->app);
    if (r->head) tsdb_head_close(r->head);
    labels_unref(r->ext);
}

/* Go's strings.TrimSpace for the ASCII blanks and U+0085 / U+00A0. */
static void trim_space(const char **s, size_t *n) {
    const unsigned char *p = (const unsigned char *)*s;
    size_t b = 0, e = *n;
    for (;;) {
        if (b < e && (p[b] == ' ' || (p[b] >= '\t' && p[b] <= '\r')))
            b++;
        else if (b + 1 < e && p[b] == 0xc2 && (p[b + 1] == 0x85 || p[b + 1] == 0xa0))
            b += 2;
        else
            break;
    }
    for (;;) {
        if (e > b && (p[e - 1] == ' ' || (p[e - 1] >= '\t' && p[e - 1] <= '\r')))
            e--;
        else if (e >= b + 2 && p[e - 2] == 0xc2 && (p[e - 1] == 0x85 || p[e - 1] == 0xa0))
            e -= 2;
        else
            break;
    }
    *s += b;
    *n = e - b;
}

/* promql/test.go's load command built from the input series (as
 * seriesLoadingString writes it) and parsed as the LazyLoader parses it:
 * samples at i * interval for every value that is not `_`; a series
 * described twice keeps its last description. */
static int load_series(tgrun *r, const t_group *g, errlist *errs) {
    base_buf text;
    base_buf_init(&text, 0);
    base_buf_puts(&text, "load ");
    model_duration(&text, g->interval);
    base_buf_putc(&text, '\n');
    for (size_t i = 0; i < g->nseries; i++)
        base_buf_printf(&text, "  %s %s\n", g->series[i].series ? g->series[i].series : "",
                        g->series[i].values ? g->series[i].values : "");
    if (base_buf_err(&text)) {
        base_buf_free(&text);
        return BASE_E_NOMEM;
    }
    int rc = 0, started = 0;
    const char *p = text.data, *end = text.data + text.len;
    int lineno = 0;
    base_buf msg;
    base_buf_init(&msg, 0);
    while (p <= end && rc == 0) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t ln = nl ? (size_t)(nl - p) : (size_t)(end - p);
        const char *l = p;
        trim_space(&l, &ln);
        if (ln && l[0] == '#') ln = 0;
        if (!started) {
            /* the first line is always "load INTERVAL" and always valid */
            started = 1;
        } else {
            if (ln == 0) break; /* a blank line ends the load command */
            promql_series_desc sd;
            memset(&sd, 0, sizeof sd);
            base_buf_reset(&msg);
            rc = promql_parse_series_desc(l, ln, 0, &sd, &msg);
            if (rc == BASE_E_NOMEM) break;
            if (rc) {
                errs_add(errs, msg.data ? msg.data : "", msg.len);
                rc = BASE_E_INVAL;
                break;
            }
            /* the head's checks: headAppender.Append */
            char *bad = NULL;
            if (!sd.ls) {
                const char *dupname = "";
                const promql_metric_desc *m = &sd.metric;
                for (size_t a = 0; !dupname[0] && a < m->n; a++)
                    for (size_t b = a + 1; b < m->n; b++)
                        if (m->values[a][0] && m->values[b][0] && strcmp(m->names[a], m->names[b]) == 0) {
                            dupname = m->names[a];
                            break;
                        }
                base_buf q;
                base_buf_init(&q, 0);
                base_buf_puts(&q, "label name ");
                quote(&q, dupname);
                base_buf_puts(&q, " is not unique: invalid sample");
                bad = base_buf_err(&q) ? NULL : base_buf_steal(&q, NULL);
                base_buf_free(&q);
            } else if (labels_len(sd.ls) == 0) {
                bad = strdup("empty labelset: invalid sample");
            }
            size_t k = 0;
            for (; sd.ls && !bad && k < r->nseries; k++)
                if (!r->series[k].bad && labels_equal(r->series[k].ls, sd.ls)) break;
            if (bad || !sd.ls) k = r->nseries;
            if (k == r->nseries) {
                loaded *ns = realloc(r->series, (r->nseries + 1) * sizeof *ns);
                if (!ns) {
                    promql_series_desc_free(&sd);
                    rc = BASE_E_NOMEM;
                    break;
                }
                r->series = ns;
                memset(&r->series[k], 0, sizeof r->series[k]);
                r->series[k].ls = sd.ls ? labels_ref(sd.ls) : NULL;
                r->series[k].bad = bad;
                bad = NULL;
                r->nseries++;
            }
            free(bad);
            loaded *s = &r->series[k];
            free(s->t);
            free(s->v);
            s->t = malloc((sd.n ? sd.n : 1) * sizeof *s->t);
            s->v = malloc((sd.n ? sd.n : 1) * sizeof *s->v);
            s->n = s->next = 0;
            if (!s->t || !s->v) {
                promql_series_desc_free(&sd);
                rc = BASE_E_NOMEM;
                break;
            }
            r->nvalues += sd.n;
            if (r->nvalues > TEST_MAX_VALUES) {
                errs_addf(errs, "input series: more than %zu values in all", TEST_MAX_VALUES);
                promql_series_desc_free(&sd);
                rc = BASE_E_INVAL;
                break;
            }
            int64_t ts = 0;
            for (size_t j = 0; j < sd.n; j++) {
                if (!sd.vals[j].omitted) {
                    s->t[s->n] = ts;
                    s->v[s->n] = sd.vals[j].v;
                    s->n++;
                }
                ts += g->interval;
            }
            promql_series_desc_free(&sd);
        }
        lineno++;
        if (!nl) break;
        p = nl + 1;
    }
    base_buf_free(&msg);
    base_buf_free(&text);
    return rc;
}

/* LazyLoader.appendTill: every loaded sample at or before ts, committed
 * together (rejections are dropped silently, as the head's commit does). */
static int append_till(tgrun *r, int64_t ts, const char **ret_bad) {
    int any = 0;
    *ret_bad = NULL;
    for (size_t i = 0; i < r->nseries; i++)
        if (r->series[i].bad && r->series[i].next < r->series[i].n &&
            r->series[i].t[r->series[i].next] <= ts) {
            /* 2.42 returns at the failed append, committing nothing */
            *ret_bad = r->series[i].bad;
            return BASE_E_INVAL;
        }
    for (size_t i = 0; i < r->nseries; i++) {
        if (r->series[i].bad) continue;
        loaded *s = &r->series[i];
        while (s->next < s->n && s->t[s->next] <= ts) {
            int rc = tsdb_head_app_add(r->app, s->ls, s->t[s->next], s->v[s->next]);
            if (rc) return rc;
            s->next++;
            any = 1;
        }
    }
    return any ? tsdb_head_app_commit(r->app, NULL) : 0;
}

/* The rules' appender: one sample at a time, so that each gets the
 * error 2.42's head appender gives it. */
#define E_OOO BASE_E_RANGE
#define E_DUP BASE_E_CONFLICT
#define E_OLD BASE_E_LIMIT

static int out_append(void *ctx, const labels_set *ls, int64_t t, double v) {
    tgrun *r = ctx;
    int rc = tsdb_head_app_add(r->app, ls, t, v);
    if (rc) return rc;
    tsdb_append_result res;
    memset(&res, 0, sizeof res);
    rc = tsdb_head_app_commit(r->app, &res);
    if (rc) return rc;
    if (res.duplicate) return E_DUP;
    if (res.out_of_order) return E_OOO;
    if (res.too_old) return E_OLD;
    return 0;
}

static const char *out_errstr(void *ctx, int rc) {
    (void)ctx;
    switch (rc) {
    case E_DUP: return "duplicate sample for timestamp";
    case E_OOO: return "out of order sample";
    case E_OLD: return "too old sample";
    default: return NULL;
    }
}

/* An alert as the test compares it. */
typedef struct la {
    pairs labels, anns;
} la;

static int la_cmp(const void *a, const void *b) {
    const la *x = a, *y = b;
    int c = pairs_cmp(&x->labels, &y->labels);
    return c ? c : pairs_cmp(&x->anns, &y->anns);
}

static void las_free(la *v, size_t n) {
    for (size_t i = 0; i < n; i++) {
        pairs_free(&v[i].labels);
        pairs_free(&v[i].anns);
    }
    free(v);
}

/* indentLines */
static void indent_lines(base_buf *out, const char *s, size_t n, const char *indent) {
    for (size_t i = 0; i < n; i++) {
        base_buf_putc(out, s[i]);
        if (s[i] == '\n') base_buf_puts(out, indent);
    }
}

/* labelsAndAnnotations.String() */
static void las_fmt(base_buf *out, const la *v, size_t n) {
    if (n == 0) {
        base_buf_puts(out, "[]");
        return;
    }
    base_buf one;
    base_buf_init(&one, 0);
    base_buf_putc(out, '[');
    for (size_t i = 0; i < n; i++) {
        base_buf_printf(out, i ? ",\n%zu:" : "\n%zu:", i);
        base_buf_reset(&one);
        base_buf_puts(&one, "\nLabels:");
        pairs_fmt(&one, &v[i].labels);
        base_buf_puts(&one, "\nAnnotations:");
        pairs_fmt(&one, &v[i].anns);
        indent_lines(out, one.data ? one.data : "", one.len, "  ");
    }
    base_buf_puts(out, "\n]");
    if (base_buf_err(&one)) out->err = BASE_E_NOMEM;
    base_buf_free(&one);
}

static int la_equal(const la *a, size_t na, const la *b, size_t nb) {
    if (na != nb) return 0;
    for (size_t i = 0; i < na; i++)
        if (la_cmp(&a[i], &b[i]) != 0 || a[i].labels.len != b[i].labels.len || a[i].anns.len != b[i].anns.len)
            return 0;
    return 1;
}

static int check_alerts(tgrun *r, const t_group *g, int64_t t, errlist *errs) {
    int rc = 0;
    for (size_t c = 0; rc == 0 && c < g->nalerts; c++) {
        const t_alertcase *tc = &g->alerts[c];
        if (tc->eval_time != t) continue;
        la *got = NULL, *exp = NULL;
        size_t ngot = 0, nexp = 0;
        for (size_t i = 0; rc == 0 && i < r->ngroups; i++) {
            rules_gstate *gs = r->groups[i];
            for (size_t j = 0; rc == 0 && j < gs->nrules; j++) {
                rules_rstate *rs = &gs->rules[j];
                if (rs->rule->kind != RULES_ALERT || strcmp(rs->rule->name, tc->alertname) != 0) continue;
                for (size_t k = 0; rc == 0 && k < rs->nalerts; k++) {
                    const rules_alert *a = &rs->alerts[k];
                    if (a->resolved_at_ms != 0 || a->state != RULES_FIRING) continue;
                    la *ng = realloc(got, (ngot + 1) * sizeof *ng);
                    if (!ng) {
                        rc = BASE_E_NOMEM;
                        break;
                    }
                    got = ng;
                    memset(&got[ngot], 0, sizeof got[ngot]);
                    ngot++;
                    rc = pairs_from_set(&got[ngot - 1].labels, a->labels);
                    for (size_t x = 0; rc == 0 && x < a->nannotations; x++)
                        rc = pairs_add(&got[ngot - 1].anns, a->annotations[x].name,
                                       strlen(a->annotations[x].name), a->annotations[x].value,
                                       strlen(a->annotations[x].value));
                    pairs_sort(&got[ngot - 1].anns);
                }
            }
        }
        if (rc == 0 && tc->nexp) {
            exp = calloc(tc->nexp, sizeof *exp);
            if (!exp) rc = BASE_E_NOMEM;
            nexp = exp ? tc->nexp : 0;
        }
        for (size_t i = 0; rc == 0 && i < nexp; i++) {
            const t_alert *ea = &tc->exp[i];
            for (size_t k = 0; rc == 0 && k < ea->labels.n; k++) {
                if (strcmp(ea->labels.v[k].k, "alertname") == 0) continue;
                rc = pairs_add(&exp[i].labels, ea->labels.v[k].k, strlen(ea->labels.v[k].k),
                               ea->labels.v[k].v, strlen(ea->labels.v[k].v));
            }
            if (rc == 0) rc = pairs_add(&exp[i].labels, "alertname", 9, tc->alertname, strlen(tc->alertname));
            for (size_t k = 0; rc == 0 && k < ea->annotations.n; k++)
                rc = pairs_add(&exp[i].anns, ea->annotations.v[k].k, strlen(ea->annotations.v[k].k),
                               ea->annotations.v[k].v, strlen(ea->annotations.v[k].v));
            pairs_sort(&exp[i].labels);
            pairs_sort(&exp[i].anns);
        }
        if (rc == 0) {
            if (ngot > 1) qsort(got, ngot, sizeof *got, la_cmp);
            if (nexp > 1) qsort(exp, nexp, sizeof *exp, la_cmp);
            if (!la_equal(exp, nexp, got, ngot)) {
                base_buf e, es, gs2;
                base_buf_init(&e, 0);
                base_buf_init(&es, 0);
                base_buf_init(&gs2, 0);
                las_fmt(&es, exp, nexp);
                las_fmt(&gs2, got, ngot);
                if (g->name && g->name[0]) base_buf_printf(&e, "    name: %s,\n", g->name);
                base_buf_printf(&e, "    alertname: %s, time: ", tc->alertname);
                model_duration(&e, tc->eval_time);
                base_buf_puts(&e, ", \n        exp:");
                indent_lines(&e, es.data ? es.data : "", es.len, "            ");
                base_buf_puts(&e, ", \n        got:");
                indent_lines(&e, gs2.data ? gs2.data : "", gs2.len, "            ");
                if (base_buf_err(&e) || base_buf_err(&es) || base_buf_err(&gs2))
                    rc = BASE_E_NOMEM;
                else
                    errs_add(errs, e.data, e.len);
                base_buf_free(&e);
                base_buf_free(&es);
                base_buf_free(&gs2);
            }
        }
        las_free(got, ngot);
        las_free(exp, nexp);
    }
    return rc;
}

typedef struct psample {
    pairs labels;
    double v;
} psample;

static int ps_cmp(const void *a, const void *b) {
    return pairs_cmp(&((const psample *)a)->labels, &((const psample *)b)->labels);
}

static void ps_free(psample *v, size_t n) {
    for (size_t i = 0; i < n; i++) pairs_free(&v[i].labels);
    free(v);
}

/* parsedSamplesString */
static void ps_fmt(base_buf *b, const psample *v, size_t n) {
    if (!n) {
        base_buf_puts(b, "nil");
        return;
    }
    for (size_t i = 0; i < n; i++) {
        if (i) base_buf_puts(b, ", ");
        pairs_fmt(b, &v[i].labels);
        base_buf_putc(b, ' ');
        char num[BASE_FMT_DOUBLE_MAX]; /* strconv.FormatFloat(v, 'E', -1, 64) */
        base_buf_append(b, num, base_fmt_double_e(num, v[i].v, 1));
    }
}

static void expr_head(base_buf *e, const t_promqlcase *pc) {
    base_buf_puts(e, "    expr: ");
    quote(e, pc->expr ? pc->expr : "");
    base_buf_puts(e, ", time: ");
    model_duration(e, pc->eval_time);
}

static int check_promql(tgrun *r, const t_group *g, errlist *errs) {
    int rc = 0;
    for (size_t c = 0; rc == 0 && c < g->npromql; c++) {
        const t_promqlcase *pc = &g->promql[c];
        const char *expr = pc->expr ? pc->expr : "";
        base_buf e;
        base_buf_init(&e, 0);
        pq_expr *x = NULL;
        base_buf perr;
        base_buf_init(&perr, 0);
        int prc = promql_parse_msg(expr, strlen(expr), &x, &perr);
        psample *got = NULL, *exp = NULL;
        size_t ngot = 0, nexp = 0;
        promql_result res;
        memset(&res, 0, sizeof res);
        int qrc = prc;
        if (prc == 0) qrc = promql_exec_instant(r->engine, x, pc->eval_time, NULL, &res);
        if (prc == BASE_E_NOMEM || qrc == BASE_E_NOMEM) {
            rc = BASE_E_NOMEM;
        } else if (prc) {
            expr_head(&e, pc);
            base_buf_printf(&e, ", err: %.*s", (int)perr.len, perr.data ? perr.data : "");
        } else if (qrc < 0) {
            expr_head(&e, pc);
            base_buf_printf(&e, ", err: %s", res.errmsg);
        } else if (res.type != PROMQL_VECTOR && res.type != PROMQL_SCALAR) {
            expr_head(&e, pc);
            base_buf_puts(&e, ", err: rule result is not a vector or scalar");
        } else {
            size_t n = res.type == PROMQL_VECTOR ? res.nseries : 1;
            got = calloc(n ? n : 1, sizeof *got);
            if (!got) rc = BASE_E_NOMEM;
            for (size_t i = 0; rc == 0 && i < n; i++) {
                ngot++;
                if (res.type == PROMQL_VECTOR) {
                    rc = pairs_from_set(&got[i].labels, res.series[i].ls);
                    got[i].v = res.series[i].n ? res.series[i].pts[0].v : NAN;
                } else {
                    got[i].v = res.scalar;
                }
            }
            if (rc == 0 && pc->nexp) {
                exp = calloc(pc->nexp, sizeof *exp);
                if (!exp) rc = BASE_E_NOMEM;
            }
            int bad = 0;
            for (size_t i = 0; rc == 0 && !bad && i < pc->nexp; i++) {
                const char *ls = pc->exp[i].labels ? pc->exp[i].labels : "";
                promql_metric_desc md;
                memset(&md, 0, sizeof md);
                base_buf merr;
                base_buf_init(&merr, 0);
                int mrc = promql_parse_metric(ls, strlen(ls), &md, &merr);
                if (mrc == BASE_E_NOMEM) {
                    rc = mrc;
                } else if (mrc) {
                    expr_head(&e, pc);
                    base_buf_puts(&e, ", err: labels ");
                    quote(&e, ls);
                    base_buf_printf(&e, ": %.*s", (int)merr.len, merr.data ? merr.data : "");
                    bad = 1;
                } else {
                    nexp++;
                    for (size_t k = 0; rc == 0 && k < md.n; k++)
                        rc = pairs_add(&exp[i].labels, md.names[k], strlen(md.names[k]), md.values[k],
                                       strlen(md.values[k]));
                    exp[i].v = pc->exp[i].value;
                }
                promql_metric_desc_free(&md);
                base_buf_free(&merr);
            }
            if (rc == 0 && !bad) {
                if (nexp > 1) qsort(exp, nexp, sizeof *exp, ps_cmp);
                if (ngot > 1) qsort(got, ngot, sizeof *got, ps_cmp);
                int eq = nexp == ngot;
                for (size_t i = 0; eq && i < nexp; i++)
                    eq = pairs_cmp(&exp[i].labels, &got[i].labels) == 0 && exp[i].v == got[i].v;
                if (!eq) {
                    expr_head(&e, pc);
                    base_buf_puts(&e, ",\n        exp: ");
                    ps_fmt(&e, exp, nexp);
                    base_buf_puts(&e, "\n        got: ");
                    ps_fmt(&e, got, ngot);
                }
            }
        }
        if (rc == 0 && base_buf_err(&e)) rc = BASE_E_NOMEM;
        if (rc == 0 && e.len) errs_add(errs, e.data, e.len);
        ps_free(got, ngot);
        ps_free(exp, exp ? pc->nexp : 0);
        promql_result_free(&res);
        promql_expr_free(x);
        base_buf_free(&perr);
        base_buf_free(&e);
    }
    return rc;
}

typedef struct gref {
    rules_gstate *gs;
    size_t order, seq;
} gref;

static int gref_cmp(const void *a, const void *b) {
    const gref *x = a, *y = b;
    if (x->order != y->order) return x->order < y->order ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* testGroup.test */
static int run_group(const t_file *f, const t_group *g, errlist *errs) {
    tgrun r;
    memset(&r, 0, sizeof r);
    char err[512];
    tsdb_head_opts ho;
    memset(&ho, 0, sizeof ho);
    int rc = tsdb_head_open(&ho, &r.head, NULL, err, sizeof err);
    if (rc == 0) rc = tsdb_head_app_new(r.head, &r.app);
    if (rc) {
        errs_addf(errs, "%s", err[0] ? err : base_strerror(rc));
        tgrun_free(&r);
        return rc == BASE_E_NOMEM ? rc : 0;
    }
    rc = load_series(&r, g, errs);
    if (rc) {
        tgrun_free(&r);
        return rc == BASE_E_NOMEM ? rc : 0;
    }
    promql_opts po;
    promql_opts_default(&po);
    po.max_samples = 10000;
    po.timeout_ms = 100000;
    po.default_subq_step_ms = f->eval_interval;
    if ((rc = promql_engine_new(&po, promql_storage_head(r.head), &r.engine))) {
        tgrun_free(&r);
        return rc;
    }
    /* the rule files: LoadGroups */
    for (size_t i = 0; i < f->nrule_files; i++) {
        rules_file *rf = NULL;
        rules_errors re;
        memset(&re, 0, sizeof re);
        rc = rules_file_load(f->rule_files[i], &rf, &re);
        if (rc) {
            for (size_t k = 0; k < re.n; k++) errs_add(errs, re.e[k].msg, strlen(re.e[k].msg));
            if (re.n == 0) errs_addf(errs, "%s: %s", f->rule_files[i], base_strerror(rc));
            rules_errors_free(&re);
            tgrun_free(&r);
            return rc == BASE_E_NOMEM ? rc : 0;
        }
        rules_errors_free(&re);
        rules_file **nf = realloc(r.files, (r.nfiles + 1) * sizeof *nf);
        if (!nf) {
            rules_file_free(rf);
            tgrun_free(&r);
            return BASE_E_NOMEM;
        }
        r.files = nf;
        r.files[r.nfiles++] = rf;
    }
    gref *refs = NULL;
    size_t nrefs = 0;
    for (size_t i = 0; rc == 0 && i < r.nfiles; i++) {
        for (size_t j = 0; rc == 0 && j < r.files[i]->ngroups; j++) {
            const rules_group *rg = &r.files[i]->groups[j];
            int dup = 0; /* the same file matched twice: one GroupKey */
            for (size_t k = 0; k < nrefs; k++)
                if (strcmp(refs[k].gs->file, r.files[i]->path) == 0 &&
                    strcmp(refs[k].gs->group->name, rg->name) == 0)
                    dup = 1;
            if (dup) continue;
            gref *nr = realloc(refs, (nrefs + 1) * sizeof *nr);
            if (!nr) {
                rc = BASE_E_NOMEM;
                break;
            }
            refs = nr;
            rules_gstate *gs = NULL;
            if ((rc = rules_gstate_new(rg, r.files[i]->path, g->interval, &gs))) break;
            gs->restored = 1; /* "Mark alerting rules as restored" */
            size_t order = 0;
            for (size_t k = 0; k < f->norder; k++)
                if (strcmp(f->order[k], rg->name) == 0) order = k;
            refs[nrefs] = (gref){gs, order, nrefs};
            nrefs++;
        }
    }
    if (nrefs > 1) qsort(refs, nrefs, sizeof *refs, gref_cmp);
    r.groups = calloc(nrefs ? nrefs : 1, sizeof *r.groups);
    if (!r.groups) rc = BASE_E_NOMEM;
    for (size_t i = 0; i < nrefs; i++) {
        if (r.groups)
            r.groups[r.ngroups++] = refs[i].gs;
        else
            rules_gstate_free(refs[i].gs);
    }
    free(refs);
    if (rc) {
        tgrun_free(&r);
        return rc;
    }
    /* the alert tests: every one needs its alertname */
    for (size_t i = 0; i < g->nalerts; i++) {
        if (g->alerts[i].alertname && g->alerts[i].alertname[0]) continue;
        base_buf e;
        base_buf_init(&e, 0);
        base_buf_puts(&e, "an item under alert_rule_test misses required attribute alertname at eval_time ");
        model_duration(&e, g->alerts[i].eval_time);
        if (g->name && g->name[0]) base_buf_printf(&e, " (in TestGroup %s)", g->name);
        if (!base_buf_err(&e)) errs_add(errs, e.data, e.len);
        base_buf_free(&e);
        tgrun_free(&r);
        return 0;
    }
    if (g->external_labels.n) {
        labels_builder b;
        labels_builder_init(&b);
        for (size_t i = 0; rc == 0 && i < g->external_labels.n; i++)
            rc = labels_builder_add(&b, base_str_c(g->external_labels.v[i].k),
                                    base_str_c(g->external_labels.v[i].v));
        if (rc == 0) rc = labels_builder_finish(&b, 0, &r.ext, err, sizeof err);
        labels_builder_free(&b);
        if (rc) {
            tgrun_free(&r);
            return rc == BASE_E_NOMEM ? rc : 0;
        }
    }
    rules_env env;
    rules_env_default(&env);
    env.engine = r.engine;
    env.storage = promql_storage_head(r.head);
    env.external_labels = r.ext;
    env.external_url = g->external_url ? g->external_url : "";
    rules_out out = {.append = out_append, .errstr = out_errstr, .ctx = &r};

    int64_t maxt = 0;
    for (size_t i = 0; i < g->nalerts; i++)
        if (g->alerts[i].eval_time > maxt) maxt = g->alerts[i].eval_time;
    for (size_t i = 0; i < g->npromql; i++)
        if (g->promql[i].eval_time > maxt) maxt = g->promql[i].eval_time;
    int64_t iv = f->eval_interval;
    if (maxt / iv >= TEST_MAX_ROUNDS) {
        base_buf e;
        base_buf_init(&e, 0);
        base_buf_puts(&e, "evaluation up to ");
        model_duration(&e, maxt);
        base_buf_puts(&e, " every ");
        model_duration(&e, iv);
        base_buf_printf(&e, " needs more than %lld rounds", (long long)TEST_MAX_ROUNDS);
        if (!base_buf_err(&e)) errs_add(errs, e.data, e.len);
        base_buf_free(&e);
        tgrun_free(&r);
        return 0;
    }
    /* the alert tests' times, sorted and unique */
    int64_t *times = calloc(g->nalerts ? g->nalerts : 1, sizeof *times);
    size_t ntimes = 0;
    if (!times) {
        tgrun_free(&r);
        return BASE_E_NOMEM;
    }
    for (size_t i = 0; i < g->nalerts; i++) {
        size_t k = 0;
        while (k < ntimes && times[k] < g->alerts[i].eval_time) k++;
        if (k < ntimes && times[k] == g->alerts[i].eval_time) continue;
        memmove(times + k + 1, times + k, (ntimes - k) * sizeof *times);
        times[k] = g->alerts[i].eval_time;
        ntimes++;
    }
    size_t curr = 0;
    int stop = 0;
    for (int64_t ts = 0; rc == 0 && !stop && ts <= maxt; ts += iv) {
        const char *bad = NULL;
        int arc = append_till(&r, ts, &bad);
        if (arc == BASE_E_NOMEM) {
            rc = arc;
            break;
        }
        size_t before = errs->n;
        if (arc < 0) {
            errs_addf(errs, "%s", bad ? bad : base_strerror(arc));
        } else {
            for (size_t i = 0; rc == 0 && i < r.ngroups; i++) {
                rc = rules_gstate_eval(r.groups[i], &env, ts, &out);
                rules_gstate *gs = r.groups[i];
                for (size_t j = 0; rc == 0 && j < gs->nrules; j++) {
                    if (gs->rules[j].health != RULES_HEALTH_ERR) continue;
                    base_buf e;
                    base_buf_init(&e, 0);
                    base_buf_printf(&e, "    rule: %s, time: ", gs->rules[j].rule->name);
                    go_duration(&e, ts);
                    base_buf_printf(&e, ", err: %s", gs->rules[j].last_error ? gs->rules[j].last_error : "");
                    if (base_buf_err(&e))
                        rc = BASE_E_NOMEM;
                    else
                        errs_add(errs, e.data, e.len);
                    base_buf_free(&e);
                }
            }
            if (rc) break;
            if (errs->n > before) {
                stop = 1; /* errors evaluating: the test ends here */
                break;
            }
        }
        while (curr < ntimes && ts <= times[curr] && times[curr] < ts + iv) {
            if ((rc = check_alerts(&r, g, times[curr], errs))) break;
            curr++;
        }
        if (ts > INT64_MAX - iv) break;
    }
    free(times);
    if (rc == 0 && !stop) rc = check_promql(&r, g, errs);
    tgrun_free(&r);
    return rc;
}

/* ---- files and the command ---------------------------------------------------------------- */

/* ruleUnitTest: the file's errors in errs (empty: it passed). */
static int unit_test_file(const char *path, errlist *errs) {
    printf("Unit Testing:  %s\n", path);
    FILE *fp = fopen(path, "rb");
    if (!fp) {
        char e[128];
        snprintf(e, sizeof e, "%s", strerror(errno));
        if (e[0] >= 'A' && e[0] <= 'Z') e[0] = (char)(e[0] + 32);
        errs_addf(errs, "open %s: %s", path, e);
        return 0;
    }
    base_buf b;
    base_buf_init(&b, TEST_FILE_MAX);
    char chunk[65536];
    size_t k;
    while ((k = fread(chunk, 1, sizeof chunk, fp)) > 0) base_buf_append(&b, chunk, k);
    int rerr = ferror(fp);
    fclose(fp);
    if (base_buf_err(&b) == BASE_E_LIMIT) {
        errs_addf(errs, "%s: larger than %zu bytes", path, TEST_FILE_MAX);
        base_buf_free(&b);
        return 0;
    }
    if (base_buf_err(&b)) {
        base_buf_free(&b);
        return BASE_E_NOMEM;
    }
    if (rerr) {
        errs_addf(errs, "read %s: input/output error", path);
        base_buf_free(&b);
        return 0;
    }
    t_file f;
    memset(&f, 0, sizeof f);
    int rc = decode_file(b.data ? b.data : "", b.len, &f, errs);
    base_buf_free(&b);
    if (rc == 0) rc = resolve_rule_files(path, &f, errs);
    if (rc == 0 && f.eval_interval == 0) f.eval_interval = 60000;
    for (size_t i = 0; rc == 0 && i < f.norder; i++)
        for (size_t j = 0; j < i; j++)
            if (strcmp(f.order[i], f.order[j]) == 0) {
                errs_addf(errs, "group name repeated in evaluation order: %s", f.order[i]);
                rc = BASE_E_INVAL;
                break;
            }
    for (size_t i = 0; rc == 0 && i < f.ntests; i++) rc = run_group(&f, &f.tests[i], errs);
    t_file_free(&f);
    return rc == BASE_E_NOMEM ? rc : 0;
}

static void usage(FILE *out) {
    fprintf(out,
            "usage: kelvin test rules <test-rule-file>...\n\n"
            "Unit tests for rules.\n\n"
            "Flags:\n"
            "      --enable-feature= ...  Accepted for promtool's command lines; PromQL's @ modifier and\n"
            "                             negative offsets are always on\n\n"
            "Args:\n"
            "  <test-rule-file>  The unit test file.\n");
}

/* kingpin's ExistingFiles check: 0, or 2 after the error. */
static int existing_file(const char *a) {
    struct stat st;
    if (stat(a, &st) != 0) {
        fprintf(stderr, "kelvin test rules: error: path '%s' does not exist, try --help\n", a);
        return 2;
    }
    if (S_ISDIR(st.st_mode)) {
        size_t n = strlen(a);
        while (n > 1 && a[n - 1] == '/') n--;
        size_t s = n;
        while (s > 0 && a[s - 1] != '/') s--;
        fprintf(stderr, "kelvin test rules: error: '%.*s' is a directory, try --help\n", (int)(n - s), a + s);
        return 2;
    }
    return 0;
}

int tools_test_main(int argc, char **argv) {
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        if (argc >= 2) {
            usage(stdout);
            return 0;
        }
        fprintf(stderr, "kelvin test: error: must select a subcommand of 'test', try --help\n");
        return 2;
    }
    if (strcmp(argv[1], "rules") != 0) {
        fprintf(stderr, "kelvin test: error: expected command but got \"%s\", try --help\n", argv[1]);
        return 2;
    }
    const char **files = calloc((size_t)argc, sizeof *files);
    if (!files) {
        fprintf(stderr, "kelvin test rules: out of memory\n");
        return 1;
    }
    size_t nfiles = 0;
    int only_args = 0;
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        if (!only_args && strcmp(a, "--") == 0) {
            only_args = 1;
            continue;
        }
        if (!only_args && (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0)) {
            usage(stdout);
            free(files);
            return 0;
        }
        if (!only_args && strncmp(a, "--enable-feature", 16) == 0) {
            if (a[16] == 0) i++; /* its value is the next argument */
            continue;
        }
        if (!only_args && a[0] == '-' && a[1]) {
            fprintf(stderr, "kelvin test rules: error: unknown long flag '%s', try --help\n", a);
            free(files);
            return 2;
        }
        files[nfiles++] = a;
    }
    if (nfiles == 0) {
        fprintf(stderr,
                "kelvin test rules: error: required argument 'test-rule-file' not provided, try --help\n");
        free(files);
        return 2;
    }
    for (size_t i = 0; i < nfiles; i++) {
        int u = existing_file(files[i]);
        if (u) {
            free(files);
            return u;
        }
    }
    int failed = 0;
    for (size_t i = 0; i < nfiles; i++) {
        errlist errs;
        memset(&errs, 0, sizeof errs);
        int rc = unit_test_file(files[i], &errs);
        if (rc == BASE_E_NOMEM || errs.nomem) {
            fflush(stdout);
            fprintf(stderr, "  FAILED:\nout of memory\n");
            errs_free(&errs);
            free(files);
            return 1;
        }
        if (errs.n) {
            fflush(stdout);
            fputs("  FAILED:\n", stderr);
            for (size_t k = 0; k < errs.n; k++) {
                fputs(errs.v[k], stderr);
                fputc('\n', stderr);
                fflush(stderr);
                fputc('\n', stdout);
            }
            failed = 1;
        } else {
            fputs("  SUCCESS\n", stdout);
        }
        fputc('\n', stdout);
        fflush(stdout);
        errs_free(&errs);
    }
    free(files);
    return failed ? 1 : 0;
}
