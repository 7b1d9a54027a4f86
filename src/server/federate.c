/* federate.c -- GET /federate?match[]=...: the newest sample of every
 * matching series in the text exposition format, for a Prometheus (or
 * kelvin) that scrapes this server with honor_labels: true. Prometheus
 * 2.42's web/federate.go, checked against the real binary
 * (tests/compat/federate.py compares the bodies byte for byte).
 *
 * REQUEST. GET only (2.42 registers GET: POST, PUT, HEAD... answer 405
 * "Method Not Allowed" with Allow "GET, OPTIONS"; OPTIONS answers 200 with
 * that Allow); 503 "Service Unavailable" before the first configuration
 * runs. Arguments as Go's r.Form (src/http/form.h): a form that does not
 * parse is 400 "error parsing form values: ..."; each match[] is parsed
 * as 2.42's parser.ParseMetricSelector (promql_parse_selector_msg), a bad
 * one is 400 with the parser's message. No match[] at all is no error: the
 * answer is empty, as 2.42's. Selectors whose matchers all match "" are
 * allowed (2.42 does not check them here).
 *
 * SELECTION. now = the wall clock in ms; each match[] selects over
 * [now - lookback, now] (--query.lookback-delta, 5m), the sets are
 * merged (a series matched twice is written once) and each series gives
 * its newest sample in that range; a staleness marker there drops the
 * series (the exposition formats cannot carry one), as do series without
 * __name__ (2.42 logs and skips them).
 *
 * ORDER. The series sorted by labels (2.42's merged select), then by
 * metric name with Go 1.19's sort.Sort, which is not stable: series of
 * one name keep their label order when they were already sorted by name,
 * but are shuffled as 2.42 shuffles them otherwise (more than 12 series,
 * some with a label name sorting before __name__, i.e. starting with an
 * upper-case letter) -- so the same algorithm runs here (see below).
 *
 * OUTPUT (expfmt's text 0.0.4 for an untyped family without HELP):
 *   # TYPE <name> untyped
 *   <name>{<labels>,<external labels>} <value> <timestamp ms>
 * for each run of one metric name. The labels: the series' own (sorted,
 * without __name__), then each external label (global.external_labels,
 * plus instance="" when it has none) that the series lacks, sorted by
 * name -- so `instance=""` appears on every series without an instance,
 * as in 2.42. Label values escape \ " and newline; values are Go's
 * FormatFloat 'g' (1 and 0 and -1 exact, NaN, +Inf, -Inf; -0 is "0").
 * Content-Type "text/plain; version=0.0.4; charset=utf-8"; gzip or
 * deflate when Accept-Encoding names it (2.42's CompressionHandler).
 * Text only: 2.42 answers protobuf when asked, kelvin always text (every
 * Prometheus scrape accepts text); OpenMetrics is never negotiated by
 * 2.42's federation either.
 *
 * ERRORS. A storage failure while reading is 500 with the reason and
 * counts in prometheus_web_federation_errors_total.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/err.h"
#include "base/num.h"
#include "expo/expo.h"
#include "labels/labels.h"
#include "server/server_int.h"

#define CT_TEXT_PLAIN "text/plain; charset=utf-8"

typedef struct fed_sample {
    labels_set *ls;
    base_str name; /* __name__'s value, a view into ls */
    int64_t t;
    double v;
} fed_sample;

typedef struct fed_list {
    fed_sample *v;
    size_t n, cap;
} fed_list;

typedef struct ext_label {
    char *name, *value;
} ext_label;

static void fed_list_free(fed_list *l) {
    for (size_t i = 0; i < l->n; i++) labels_unref(l->v[i].ls);
    free(l->v);
}

/* Go's http.Error: msg[0..n) and a newline. */
static void text_error(http_response *resp, int status, const char *msg, size_t n) {
    base_buf b;
    base_buf_init(&b, 0);
    base_buf_append(&b, msg, n);
    base_buf_putc(&b, '\n');
    http_respond_buf(resp, status, CT_TEXT_PLAIN, &b);
}

static int cmp_labels(const void *a, const void *b) {
    return labels_cmp(((const fed_sample *)a)->ls, ((const fed_sample *)b)->ls);
}

/* ---- Go 1.19's sort.Sort ------------------------------------------------------
 * 2.42 orders the samples with sort.Sort(byName(vec)): pattern-defeating
 * quicksort (Go 1.19, sort/zsortinterface.go), not stable, so series of
 * one name come out in an order that depends on the whole input. To give
 * the same bytes, this is the same algorithm, step for step (indices are
 * Go's ints; partialInsertionSort's shifts go down to index 1, as Go's do;
 * xorshift with Go 1.19's shifts 13, 17, 5), with 2.42's Less: the metric
 * names compared as Go strings. */

typedef struct gosort {
    fed_sample *v;
} gosort;

static int go_less(const gosort *d, long i, long j) {
    base_str x = d->v[i].name, y = d->v[j].name;
    size_t n = x.n < y.n ? x.n : y.n;
    int c = n ? memcmp(x.p, y.p, n) : 0;
    return c < 0 || (c == 0 && x.n < y.n);
}

static void go_swap(gosort *d, long i, long j) {
    fed_sample t = d->v[i];
    d->v[i] = d->v[j];
    d->v[j] = t;
}

static void insertion_sort(gosort *d, long a, long b) {
    for (long i = a + 1; i < b; i++)
        for (long j = i; j > a && go_less(d, j, j - 1); j--) go_swap(d, j, j - 1);
}

static void sift_down(gosort *d, long lo, long hi, long first) {
    long root = lo;
    for (;;) {
        long child = 2 * root + 1;
        if (child >= hi) break;
        if (child + 1 < hi && go_less(d, first + child, first + child + 1)) child++;
        if (!go_less(d, first + root, first + child)) return;
        go_swap(d, first + root, first + child);
        root = child;
    }
}

static void heap_sort(gosort *d, long a, long b) {
    long first = a, lo = 0, hi = b - a;
    for (long i = (hi - 1) / 2; i >= 0; i--) sift_down(d, i, hi, first);
    for (long i = hi - 1; i >= 0; i--) {
        go_swap(d, first, first + i);
        sift_down(d, lo, i, first);
    }
}

enum { HINT_UNKNOWN, HINT_INCREASING, HINT_DECREASING };

static long order2(const gosort *d, long a, long b, int *swaps, long *ret_b) {
    if (go_less(d, b, a)) {
        (*swaps)++;
        *ret_b = a;
        return b;
    }
    *ret_b = b;
    return a;
}

static long median(const gosort *d, long a, long b, long c, int *swaps) {
    a = order2(d, a, b, swaps, &b);
    b = order2(d, b, c, swaps, &c);
    a = order2(d, a, b, swaps, &b);
    (void)a;
    (void)c;
    return b;
}

static long choose_pivot(const gosort *d, long a, long b, int *ret_hint) {
    long l = b - a, i = a + l / 4 * 1, j = a + l / 4 * 2, k = a + l / 4 * 3;
    int swaps = 0;
    if (l >= 8) {
        if (l >= 50) { /* Tukey's ninther */
            i = median(d, i - 1, i, i + 1, &swaps);
            j = median(d, j - 1, j, j + 1, &swaps);
            k = median(d, k - 1, k, k + 1, &swaps);
        }
        j = median(d, i, j, k, &swaps);
    }
    *ret_hint = swaps == 0 ? HINT_INCREASING : swaps == 12 ? HINT_DECREASING : HINT_UNKNOWN;
    return j;
}

static void reverse_range(gosort *d, long a, long b) {
    for (long i = a, j = b - 1; i < j; i++, j--) go_swap(d, i, j);
}

static int partial_insertion_sort(gosort *d, long a, long b) {
    long i = a + 1;
    for (int step = 0; step < 5; step++) {
        while (i < b && !go_less(d, i, i - 1)) i++;
        if (i == b) return 1;
        if (b - a < 50) return 0;
        go_swap(d, i, i - 1);
        if (i - a >= 2)
            for (long j = i - 1; j >= 1; j--) {
                if (!go_less(d, j, j - 1)) break;
                go_swap(d, j, j - 1);
            }
        if (b - i >= 2)
            for (long j = i + 1; j < b; j++) {
                if (!go_less(d, j, j - 1)) break;
                go_swap(d, j, j - 1);
            }
    }
    return 0;
}

static void break_patterns(gosort *d, long a, long b) {
    long length = b - a;
    if (length < 8) return;
    uint64_t r = (uint64_t)length;
    unsigned bits = 0;
    while (((uint64_t)length >> bits) != 0) bits++;
    uint64_t modulus = (uint64_t)1 << bits;
    for (long idx = a + (length / 4) * 2 - 1; idx <= a + (length / 4) * 2 + 1; idx++) {
        r ^= r << 13;
        r ^= r >> 17;
        r ^= r << 5;
        long other = (long)(r & (modulus - 1));
        if (other >= length) other -= length;
        go_swap(d, idx, a + other);
    }
}

static long partition_equal(gosort *d, long a, long b, long pivot) {
    go_swap(d, a, pivot);
    long i = a + 1, j = b - 1;
    for (;;) {
        while (i <= j && !go_less(d, a, i)) i++;
        while (i <= j && go_less(d, a, j)) j--;
        if (i > j) break;
        go_swap(d, i, j);
        i++;
        j--;
    }
    return i;
}

static long partition(gosort *d, long a, long b, long pivot, int *ret_already) {
    go_swap(d, a, pivot);
    long i = a + 1, j = b - 1;
    while (i <= j && go_less(d, i, a)) i++;
    while (i <= j && !go_less(d, j, a)) j--;
    if (i > j) {
        go_swap(d, j, a);
        *ret_already = 1;
        return j;
    }
    go_swap(d, i, j);
    i++;
    j--;
    for (;;) {
        while (i <= j && go_less(d, i, a)) i++;
        while (i <= j && !go_less(d, j, a)) j--;
        if (i > j) break;
        go_swap(d, i, j);
        i++;
        j--;
    }
    go_swap(d, j, a);
    *ret_already = 0;
    return j;
}

static void pdqsort(gosort *d, long a, long b, int limit) {
    int was_balanced = 1, was_partitioned = 1;
    for (;;) {
        long length = b - a;
        if (length <= 12) {
            insertion_sort(d, a, b);
            return;
        }
        if (limit == 0) {
            heap_sort(d, a, b);
            return;
        }
        if (!was_balanced) {
            break_patterns(d, a, b);
            limit--;
        }
        int hint;
        long pivot = choose_pivot(d, a, b, &hint);
        if (hint == HINT_DECREASING) {
            reverse_range(d, a, b);
            pivot = (b - 1) - (pivot - a);
            hint = HINT_INCREASING;
        }
        if (was_balanced && was_partitioned && hint == HINT_INCREASING && partial_insertion_sort(d, a, b))
            return;
        if (a > 0 && !go_less(d, a - 1, pivot)) {
            a = partition_equal(d, a, b, pivot);
            continue;
        }
        int already;
        long mid = partition(d, a, b, pivot, &already);
        was_partitioned = already;
        long left = mid - a, right = b - mid, balance = length / 8;
        if (left < right) {
            was_balanced = left >= balance;
            pdqsort(d, a, mid, limit);
            a = mid + 1;
        } else {
            was_balanced = right >= balance;
            pdqsort(d, mid + 1, b, limit);
            b = mid;
        }
    }
}

/* sort.Sort */
static void go_sort_by_name(fed_sample *v, size_t n) {
    if (n <= 1) return;
    int limit = 0; /* bits.Len(n) */
    while ((n >> limit) != 0) limit++;
    gosort d = {v};
    pdqsort(&d, 0, (long)n, limit);
}

/* The newest sample of every series of every set: 0, or a BASE_E_* with
 * the reason in err. */
static int select_all(server *s, const api_match_sets *m, int64_t mint, int64_t maxt, fed_list *out,
                      char *err, size_t errlen) {
    enum { CAP = 256 };
    int64_t ts[CAP];
    double vs[CAP];
    for (size_t i = 0; i < m->nsets; i++) {
        tsdb_db_set *ss = NULL;
        int rc = tsdb_db_select(s->db, m->ms[i], m->n[i], mint, maxt, &ss);
        while (rc == 0) {
            int more = tsdb_db_set_next(ss);
            if (more <= 0) {
                rc = more;
                break;
            }
            int64_t t = 0;
            double v = 0;
            int have = 0, k;
            while ((k = tsdb_db_set_samples(ss, ts, vs, CAP)) > 0) {
                t = ts[k - 1];
                v = vs[k - 1];
                have = 1;
            }
            if (k < 0) {
                rc = k;
                break;
            }
            if (!have || base_is_stale(v)) continue;
            if (out->n == out->cap) {
                size_t nc = out->cap ? out->cap * 2 : 256;
                fed_sample *nv = realloc(out->v, nc * sizeof *nv);
                if (!nv) {
                    rc = BASE_E_NOMEM;
                    break;
                }
                out->v = nv;
                out->cap = nc;
            }
            labels_set *ls = labels_ref(tsdb_db_set_labels(ss));
            out->v[out->n++] = (fed_sample){ls, labels_metric_name(ls), t, v};
        }
        tsdb_db_set_free(ss);
        if (rc != 0) return base_errf(err, errlen, rc, "%s", base_strerror(rc));
    }
    return 0;
}

/* The external labels with instance="" added when missing, sorted by
 * name (copied: the configuration may be swapped meanwhile). */
static int external_labels(server *s, ext_label **ret, size_t *ret_n) {
    pthread_rwlock_rdlock(&s->cfg_lock);
    const cfg_kvs *e = s->cfg ? &s->cfg->global.external_labels : NULL;
    size_t n = e ? e->n : 0;
    ext_label *v = calloc(n + 1, sizeof *v);
    int rc = v ? 0 : BASE_E_NOMEM, have_instance = 0;
    size_t k = 0;
    for (size_t i = 0; rc == 0 && i < n; i++, k++) {
        v[k].name = strdup(e->v[i].name);
        v[k].value = strdup(e->v[i].value);
        if (!v[k].name || !v[k].value) rc = BASE_E_NOMEM;
        if (strcmp(e->v[i].name, "instance") == 0) have_instance = 1;
    }
    pthread_rwlock_unlock(&s->cfg_lock);
    if (rc == 0 && !have_instance) {
        v[k].name = strdup("instance");
        v[k].value = strdup("");
        if (!v[k].name || !v[k].value) rc = BASE_E_NOMEM;
        k++;
        /* keep them sorted: move instance into place */
        for (size_t i = k - 1; i > 0 && strcmp(v[i - 1].name, v[i].name) > 0; i--) {
            ext_label x = v[i];
            v[i] = v[i - 1];
            v[i - 1] = x;
        }
    }
    if (rc != 0) {
        for (size_t i = 0; v && i <= n; i++) free(v[i].name), free(v[i].value);
        free(v);
        return rc;
    }
    *ret = v;
    *ret_n = k;
    return 0;
}

/* expfmt's writeEscapedString with the double quote. */
static void put_escaped(base_buf *b, base_str s) {
    size_t from = 0;
    for (size_t i = 0; i < s.n; i++) {
        const char *rep = s.p[i] == '\\' ? "\\\\" : s.p[i] == '"' ? "\\\"" : s.p[i] == '\n' ? "\\n" : NULL;
        if (!rep) continue;
        base_buf_append(b, s.p + from, i - from);
        base_buf_puts(b, rep);
        from = i + 1;
    }
    base_buf_append(b, s.p + from, s.n - from);
}

static void put_pair(base_buf *b, int *first, base_str name, base_str value) {
    base_buf_putc(b, *first ? '{' : ',');
    *first = 0;
    base_buf_append(b, name.p, name.n);
    base_buf_append(b, "=\"", 2);
    put_escaped(b, value);
    base_buf_putc(b, '"');
}

/* expfmt's writeFloat. */
static void put_value(base_buf *b, double v) {
    if (v == 0)
        base_buf_putc(b, '0');
    else
        base_buf_double(b, v); /* 1, -1, NaN, +Inf, -Inf come out as expfmt writes them */
}

static void render(const fed_list *l, const ext_label *ext, size_t next, base_buf *b) {
    base_str last = {NULL, 0};
    for (size_t i = 0; i < l->n; i++) {
        const labels_set *ls = l->v[i].ls;
        base_str name = labels_metric_name(ls);
        if (name.n == 0) continue; /* nameless: 2.42 skips it */
        if (!last.p || !base_str_eq(name, last)) {
            base_buf_puts(b, "# TYPE ");
            base_buf_append(b, name.p, name.n);
            base_buf_puts(b, " untyped\n");
            last = name;
        }
        base_buf_append(b, name.p, name.n);
        int first = 1;
        labels_iter it;
        base_str ln, lv;
        labels_iter_init(&it, ls);
        while (labels_iter_next(&it, &ln, &lv)) {
            if (base_str_eqc(ln, LABELS_METRIC_NAME)) continue;
            put_pair(b, &first, ln, lv);
        }
        for (size_t e = 0; e < next; e++) {
            base_str en = base_str_c(ext[e].name);
            if (!labels_has(ls, en)) put_pair(b, &first, en, base_str_c(ext[e].value));
        }
        if (!first) base_buf_putc(b, '}');
        base_buf_putc(b, ' ');
        put_value(b, l->v[i].v);
        base_buf_putc(b, ' ');
        base_buf_i64(b, l->v[i].t);
        base_buf_putc(b, '\n');
    }
}

/* Parses every match[] (see REQUEST): 0, or answers 400 and returns -1. */
static int parse_matchers(http_form *form, http_response *resp, api_match_sets *m) {
    memset(m, 0, sizeof *m);
    size_t n = http_form_values(form, "match[]", NULL, 0);
    if (n == 0) return 0;
    base_str *v = calloc(n, sizeof *v);
    m->ms = calloc(n, sizeof *m->ms);
    m->n = calloc(n, sizeof *m->n);
    if (!v || !m->ms || !m->n) {
        free(v);
        server__match_sets_free(m);
        http_respond_text(resp, 500, "out of memory\n");
        return -1;
    }
    http_form_values(form, "match[]", v, n);
    base_buf msg;
    base_buf_init(&msg, 0);
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        rc = promql_parse_selector_msg(v[i].p ? v[i].p : "", v[i].n, &m->ms[i], &m->n[i], &msg);
        if (rc == 0) m->nsets++;
    }
    free(v);
    if (rc != 0) {
        server__match_sets_free(m);
        if (rc == BASE_E_NOMEM || base_buf_err(&msg))
            http_respond_text(resp, 500, "out of memory\n");
        else
            text_error(resp, 400, msg.data ? msg.data : "", msg.len);
        base_buf_free(&msg);
        return -1;
    }
    base_buf_free(&msg);
    return 0;
}

void server__federate(server *s, const http_request *req, http_response *resp) {
    if (strcmp(req->method, "GET") != 0) {
        if (strcmp(req->method, "OPTIONS") == 0)
            http_respond_copy(resp, 200, NULL, "", 0);
        else
            http_respond_text(resp, 405, "Method Not Allowed\n");
        (void)http_response_add_header(resp, "Allow", "GET, OPTIONS");
        return;
    }
    if (!s->ready) {
        http_respond_text(resp, 503, "Service Unavailable");
        return;
    }
    http_form form;
    http_form_init(&form);
    int rc = http_form_from_request(&form, req);
    if (rc == BASE_E_PARSE || rc == BASE_E_LIMIT) {
        char msg[256];
        int n = snprintf(msg, sizeof msg, "error parsing form values: %s",
                         rc == BASE_E_PARSE ? form.errmsg : "too many arguments");
        http_form_free(&form);
        text_error(resp, 400, msg, n > 0 && (size_t)n < sizeof msg ? (size_t)n : strlen(msg));
        return;
    }
    if (rc != 0) {
        http_form_free(&form);
        http_respond_text(resp, 500, "out of memory\n");
        return;
    }
    api_match_sets m;
    rc = parse_matchers(&form, resp, &m);
    http_form_free(&form);
    if (rc != 0) return;

    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    int64_t maxt = (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
    int64_t mint = maxt - s->flags.lookback_ms;
    fed_list l = {0};
    char err[256];
    rc = select_all(s, &m, mint, maxt, &l, err, sizeof err);
    server__match_sets_free(&m);
    ext_label *ext = NULL;
    size_t next = 0;
    if (rc == 0) rc = external_labels(s, &ext, &next);
    if (rc != 0) {
        atomic_fetch_add(&s->rx.federate_errors, 1);
        fed_list_free(&l);
        if (rc == BASE_E_NOMEM) snprintf(err, sizeof err, "%s", base_strerror(rc));
        text_error(resp, 500, err, strlen(err));
        return;
    }
    /* merge: sort by labels, drop repeats (a series several sets matched) */
    if (l.n > 1) qsort(l.v, l.n, sizeof *l.v, cmp_labels);
    size_t k = 0;
    for (size_t i = 0; i < l.n; i++) {
        if (k > 0 && labels_equal(l.v[k - 1].ls, l.v[i].ls)) {
            labels_unref(l.v[i].ls);
            continue;
        }
        l.v[k++] = l.v[i];
    }
    l.n = k;
    go_sort_by_name(l.v, l.n);
    base_buf b;
    base_buf_init(&b, 0);
    render(&l, ext, next, &b);
    for (size_t i = 0; i < next; i++) free(ext[i].name), free(ext[i].value);
    free(ext);
    fed_list_free(&l);
    if (base_buf_err(&b)) atomic_fetch_add(&s->rx.federate_errors, 1);
    server__send_encoded(req, resp, 200, EXPO_CT_TEXT, &b);
}
