/* api_series.c -- /api/v1/series, /api/v1/labels, /api/v1/label/<name>/values
 * (Prometheus 2.42's api.series, api.labelNames, api.labelValues).
 *
 * CHECKS, in 2.42's order and words:
 *   series: the form parses ("error parsing form values: invalid URL
 *     escape ..."), match[] given ("no match[] parameter provided"),
 *     start, end (default: the minimum and maximum time), the matchers
 *     (`invalid parameter "match[]": ...`, each set needing a matcher
 *     that does not match "").
 *   labels: start, end, the matchers (bare message).
 *   label values: the name ([a-zA-Z_][a-zA-Z0-9_]*: `invalid label name:
 *     "1x"`), start, end, the matchers (bare message).
 *
 * MATCH[]. Each value is parsed as 2.42's parser.ParseMetricSelector does
 * (promql_parse_selector: the PromQL lexer and grammar, one vector
 * selector, its errors and positions), here for every endpoint that takes
 * match[] (server__match_sets). A parse error's message is sent whole,
 * NUL bytes included (2.42 echoes a bad regex with its NUL bytes, JSON
 * "\u0000"), so these answers are built from a buffer, not a C string.
 * A start after the end is no error: the answer is empty.
 *
 * RESULTS. series: the union of each match[]'s series over [start, end],
 * sorted by labels, without repeats, as label objects. labels and values:
 * the union over the match[] sets (or everything without one), sorted,
 * as strings. Storage failures answer 422 (execution), as 2.42.
 *
 * Times given to the storage are timestamp.FromTime of the parameters.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "labels/labels.h"
#include "server/server_int.h"

/* ---- match[] ---------------------------------------------------------------- */

void server__match_sets_free(api_match_sets *m) {
    for (size_t i = 0; i < m->nsets; i++) labels_matchers_free(m->ms[i], m->n[i]);
    free(m->ms);
    free(m->n);
    memset(m, 0, sizeof *m);
}

/* server__match_sets with the whole message in msg (see MATCH[]). */
static int match_sets(api_ctx *c, int nonempty, api_match_sets *ret, base_buf *msg) {
    memset(ret, 0, sizeof *ret);
    size_t n = http_form_values(&c->form, "match[]", NULL, 0);
    if (n == 0) return 0;
    base_str *v = calloc(n, sizeof *v);
    ret->ms = calloc(n, sizeof *ret->ms);
    ret->n = calloc(n, sizeof *ret->n);
    int rc = v && ret->ms && ret->n ? 0 : BASE_E_NOMEM;
    if (rc == 0) http_form_values(&c->form, "match[]", v, n);
    for (size_t i = 0; i < n && rc == 0; i++) {
        rc = promql_parse_selector_msg(v[i].p ? v[i].p : "", v[i].n, &ret->ms[i], &ret->n[i], msg);
        if (rc == 0) ret->nsets++;
    }
    free(v);
    for (size_t i = 0; nonempty && i < ret->nsets && rc == 0; i++) {
        int ok = 0;
        for (size_t k = 0; k < ret->n[i]; k++)
            if (!labels_matcher_matches_empty(ret->ms[i][k])) ok = 1;
        if (!ok) {
            base_buf_puts(msg, "match[] must contain at least one non-empty matcher");
            rc = BASE_E_PARSE;
        }
    }
    if (rc == 0) return 0;
    if (rc == BASE_E_NOMEM || base_buf_err(msg)) {
        base_buf_reset(msg);
        base_buf_puts(msg, "out of memory");
    }
    server__match_sets_free(ret);
    return -1;
}

int server__match_sets(api_ctx *c, int nonempty, api_match_sets *ret, char *err, size_t errlen) {
    base_buf msg;
    base_buf_init(&msg, 0);
    int rc = match_sets(c, nonempty, ret, &msg);
    if (rc != 0) snprintf(err, errlen, "%.*s", (int)msg.len, msg.data ? msg.data : "");
    base_buf_free(&msg);
    return rc;
}

/* ---- endpoints ---------------------------------------------------------------- */

static int start_end(api_ctx *c, int64_t *mint, int64_t *maxt) {
    api_time start, end;
    if (server__api_time_param(c, "start", server__api_min_time, &start) != 0) return -1;
    if (server__api_time_param(c, "end", server__api_max_time, &end) != 0) return -1;
    *mint = server__api_time_ms(start);
    *maxt = server__api_time_ms(end);
    return 0;
}

static int cmp_sets(const void *a, const void *b) {
    return labels_cmp(*(labels_set *const *)a, *(labels_set *const *)b);
}

/* The range and the match[] sets of a series or label request; on a bad
 * one answers 400 (match[] errors prefixed) and returns -1. */
static int range_and_sets(api_ctx *c, const char *prefix, int64_t *mint, int64_t *maxt, api_match_sets *m) {
    if (start_end(c, mint, maxt) != 0) return -1;
    base_buf msg;
    base_buf_init(&msg, 0);
    int rc = match_sets(c, 1, m, &msg);
    if (rc != 0) server__api_bad_data(c, prefix, &msg);
    base_buf_free(&msg);
    return rc != 0 ? -1 : 0;
}

void server__api_series(api_ctx *c) {
    if (c->form.err == BASE_E_PARSE) {
        server__api_errorf(c, "bad_data", "error parsing form values: %s", c->form.errmsg);
        return;
    }
    if (http_form_values(&c->form, "match[]", NULL, 0) == 0) {
        server__api_errorf(c, "bad_data", "no match[] parameter provided");
        return;
    }
    int64_t mint, maxt;
    api_match_sets m;
    if (range_and_sets(c, "invalid parameter \"match[]\": ", &mint, &maxt, &m) != 0) return;
    labels_set **sets = NULL;
    size_t n = 0, cap = 0;
    int rc = 0;
    for (size_t i = 0; i < m.nsets && rc == 0; i++) {
        tsdb_db_set *ss = NULL;
        rc = tsdb_db_select(c->s->db, m.ms[i], m.n[i], mint, maxt, &ss);
        while (rc == 0) {
            int more = tsdb_db_set_next(ss);
            if (more <= 0) {
                rc = more;
                break;
            }
            if (n == cap) {
                size_t nc = cap ? cap * 2 : 64;
                labels_set **ns = realloc(sets, nc * sizeof *ns);
                if (!ns) {
                    rc = BASE_E_NOMEM;
                    break;
                }
                sets = ns;
                cap = nc;
            }
            sets[n++] = labels_ref(tsdb_db_set_labels(ss));
        }
        tsdb_db_set_free(ss);
    }
    server__match_sets_free(&m);
    if (rc != 0) {
        for (size_t i = 0; i < n; i++) labels_unref(sets[i]);
        free(sets);
        server__api_errorf(c, "execution", "%s", base_strerror(rc));
        return;
    }
    if (n > 1) qsort(sets, n, sizeof *sets, cmp_sets);
    base_buf b;
    base_buf_init(&b, 0);
    server__api_begin(&b);
    base_buf_putc(&b, '[');
    for (size_t i = 0, out = 0; i < n; i++) {
        if (i > 0 && labels_equal(sets[i], sets[i - 1])) continue;
        if (out++) base_buf_putc(&b, ',');
        server__json_labels(&b, sets[i]);
    }
    base_buf_putc(&b, ']');
    for (size_t i = 0; i < n; i++) labels_unref(sets[i]);
    free(sets);
    server__api_end(c, &b);
}

static int cmp_str(const void *a, const void *b) {
    const base_str *x = a, *y = b;
    size_t n = x->n < y->n ? x->n : y->n;
    int r = n ? memcmp(x->p, y->p, n) : 0;
    if (r) return r;
    return x->n < y->n ? -1 : x->n > y->n;
}

/* Writes the sorted union of lists[0..n) as a JSON array of strings. */
static void write_union(base_buf *b, tsdb_strs **lists, size_t n) {
    size_t total = 0;
    for (size_t i = 0; i < n; i++) total += lists[i]->n;
    base_str *all = total ? malloc(total * sizeof *all) : NULL;
    if (total && !all) {
        b->err = BASE_E_NOMEM;
        return;
    }
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < lists[i]->n; j++) all[k++] = lists[i]->v[j];
    if (n > 1 && total > 1) qsort(all, total, sizeof *all, cmp_str);
    base_buf_putc(b, '[');
    for (size_t i = 0, out = 0; i < total; i++) {
        if (i > 0 && cmp_str(&all[i], &all[i - 1]) == 0) continue;
        if (out++) base_buf_putc(b, ',');
        base_buf_json_str(b, all[i].p, all[i].n);
    }
    base_buf_putc(b, ']');
    free(all);
}

/* names (values == NULL) or values of *name, answered. */
static void label_lists(api_ctx *c, const base_str *name) {
    int64_t mint, maxt;
    api_match_sets m;
    if (range_and_sets(c, "", &mint, &maxt, &m) != 0) return;
    size_t nl = m.nsets ? m.nsets : 1;
    tsdb_strs **lists = calloc(nl, sizeof *lists);
    int rc = lists ? 0 : BASE_E_NOMEM;
    for (size_t i = 0; i < nl && rc == 0; i++) {
        labels_matcher *const *ms = m.nsets ? m.ms[i] : NULL;
        size_t n = m.nsets ? m.n[i] : 0;
        rc = name ? tsdb_db_label_values(c->s->db, *name, ms, n, mint, maxt, &lists[i])
                  : tsdb_db_label_names(c->s->db, ms, n, mint, maxt, &lists[i]);
    }
    server__match_sets_free(&m);
    base_buf b;
    base_buf_init(&b, 0);
    if (rc == 0) {
        server__api_begin(&b);
        write_union(&b, lists, nl);
    }
    for (size_t i = 0; lists && i < nl; i++)
        if (lists[i]) tsdb_strs_free(lists[i]);
    free(lists);
    if (rc != 0) {
        base_buf_free(&b);
        server__api_errorf(c, "execution", "%s", base_strerror(rc));
        return;
    }
    server__api_end(c, &b);
}

void server__api_labels(api_ctx *c) {
    label_lists(c, NULL);
}

void server__api_label_values(api_ctx *c, base_str name) {
    if (!labels_valid_label_name(name)) {
        base_buf q;
        base_buf_init(&q, 0);
        server__quote(&q, name.p, name.n);
        server__api_errorf(c, "bad_data", "invalid label name: %s", q.err ? "\"\"" : q.data);
        base_buf_free(&q);
        return;
    }
    label_lists(c, &name);
}
