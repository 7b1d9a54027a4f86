/* target.c -- from discovered labels to a scrape target, as Prometheus 2.42's
 * scrape/target.go: PopulateLabels, the target URL, the target hash, and
 * the snapshot of a job's settings that loops use (sc_pcfg).
 *
 * PopulateLabels, step by step (2.42): job, __scrape_interval__,
 * __scrape_timeout__, __metrics_path__, __scheme__ are set when absent or
 * empty; __param_<name> from `params` (first value) always; that set is
 * the "discovered labels" kept for the API; relabel_configs run; no
 * __address__ is an error; a port is added to an address without one
 * (:80 for http, :443 for https, Go's net.SplitHostPort rules decide);
 * an address with '/' is an error; the interval and timeout labels must
 * parse, be non-zero and timeout <= interval; __meta_* labels are deleted
 * (other __ labels stay on the target: they drive the URL and are left out
 * of series labels); instance defaults to the address; every value must
 * be valid UTF-8.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/time.h"
#include "scrape/scrape_int.h"

uint64_t sc__fnv64a(const void *p, size_t n, uint64_t h) {
    const unsigned char *s = p;
    for (size_t i = 0; i < n; i++) {
        h ^= s[i];
        h *= UINT64_C(1099511628211);
    }
    return h;
}

/* Go's net.SplitHostPort: does s split into host and port? */
static int split_host_port_ok(const char *s, size_t n) {
    size_t i = n;
    while (i > 0 && s[i - 1] != ':') i--;
    if (i == 0) return 0; /* missing port */
    i--;                  /* index of the last ':' */
    size_t j = 0, k = 0;
    if (n > 0 && s[0] == '[') {
        const char *e = memchr(s, ']', n);
        if (!e) return 0;
        size_t end = (size_t)(e - s);
        if (end + 1 == n) return 0;
        if (end + 1 != i) return 0;
        j = 1;
        k = end + 1;
    } else {
        if (memchr(s, ':', i)) return 0; /* too many colons */
    }
    if (memchr(s + j, '[', n - j)) return 0;
    if (memchr(s + k, ']', n - k)) return 0;
    return 1;
}

static int errq(char *err, size_t errlen, int code, const char *pre, base_str v, const char *post) {
    base_buf b;
    base_buf_init(&b, 0);
    base_buf_puts(&b, pre);
    labels_quote(&b, v);
    base_buf_puts(&b, post);
    base_errf(err, errlen, code, "%s", b.data ? b.data : pre);
    base_buf_free(&b);
    return code;
}

static int parse_dur(base_str v, int64_t *ret) {
    char tmp[64];
    if (v.n >= sizeof tmp) return BASE_E_PARSE;
    memcpy(tmp, v.p, v.n);
    tmp[v.n] = '\0';
    return base_parse_duration_ms(tmp, ret);
}

int sc__populate(const cfg_scrape *c, const labels_set *in, labels_set **ret, labels_set **ret_orig,
                 char *err, size_t errlen) {
    labels_builder b;
    labels_builder_init(&b);
    labels_set *orig = NULL, *post = NULL, *res = NULL;
    base_buf pname;
    base_buf_init(&pname, 0);
    int e = labels_builder_from(&b, in);
    char iv[BASE_FMT_DURATION_MAX], to[BASE_FMT_DURATION_MAX];
    base_fmt_duration(iv, sizeof iv, c->scrape_interval_ms);
    base_fmt_duration(to, sizeof to, c->scrape_timeout_ms);
    const char *defs[5][2] = {{"job", c->job_name},
                              {"__scrape_interval__", iv},
                              {"__scrape_timeout__", to},
                              {"__metrics_path__", c->metrics_path ? c->metrics_path : "/metrics"},
                              {"__scheme__", c->scheme ? c->scheme : "http"}};
    for (int i = 0; i < 5 && !e; i++)
        if (labels_get(in, base_str_c(defs[i][0])).n == 0)
            e = labels_builder_set(&b, base_str_c(defs[i][0]), base_str_c(defs[i][1]));
    /* __param_ names: kept in one buffer, views taken after it stops growing */
    size_t *offs = NULL;
    if (!e && c->nparams) {
        offs = calloc(c->nparams, sizeof *offs);
        if (!offs) e = BASE_E_NOMEM;
        for (size_t i = 0; !e && i < c->nparams; i++) {
            offs[i] = pname.len;
            base_buf_puts(&pname, "__param_");
            base_buf_puts(&pname, c->params[i].name);
        }
        if (!e && base_buf_err(&pname)) e = base_buf_err(&pname);
        for (size_t i = 0; !e && i < c->nparams; i++) {
            if (c->params[i].nvalues == 0) continue;
            size_t end = i + 1 < c->nparams ? offs[i + 1] : pname.len;
            e = labels_builder_set(&b, (base_str){pname.data + offs[i], end - offs[i]},
                                   base_str_c(c->params[i].values[0]));
        }
    }
    free(offs);
    if (e) goto fail_code;
    if ((e = labels_builder_finish(&b, 0, &orig, err, errlen))) goto out;
    e = relabel_process(c->relabel, c->nrelabel, &b);
    if (e < 0) goto fail_code;
    if (e == 0) {
        *ret = NULL;
        *ret_orig = orig;
        orig = NULL;
        e = 0;
        goto out;
    }
    if ((e = labels_builder_finish(&b, 0, &post, err, errlen))) goto out;
    base_str addr = labels_get(post, base_str_c("__address__"));
    if (addr.n == 0) {
        e = base_errf(err, errlen, BASE_E_INVAL, "no address");
        goto out;
    }
    base_str scheme = labels_get(post, base_str_c("__scheme__"));
    char *addrbuf = malloc(addr.n + 8);
    if (!addrbuf) goto nomem;
    memcpy(addrbuf, addr.p, addr.n);
    size_t alen = addr.n;
    addrbuf[alen] = '\0';
    if (!split_host_port_ok(addr.p, addr.n)) {
        memcpy(addrbuf + alen, ":1234", 6);
        int add = split_host_port_ok(addrbuf, alen + 5);
        addrbuf[alen] = '\0';
        if (add) {
            if (scheme.n == 0 || base_str_eqc(scheme, "http")) {
                memcpy(addrbuf + alen, ":80", 4);
                alen += 3;
            } else if (base_str_eqc(scheme, "https")) {
                memcpy(addrbuf + alen, ":443", 5);
                alen += 4;
            } else {
                free(addrbuf);
                e = errq(err, errlen, BASE_E_INVAL,
                         "invalid scheme: ", base_str_c(c->scheme ? c->scheme : ""), "");
                goto out;
            }
            if ((e = labels_builder_set(&b, base_str_c("__address__"), (base_str){addrbuf, alen}))) {
                free(addrbuf);
                goto fail_code;
            }
        }
    }
    if (memchr(addrbuf, '/', alen)) {
        e = errq(err, errlen, BASE_E_INVAL, "", (base_str){addrbuf, alen}, " is not a valid hostname");
        free(addrbuf);
        goto out;
    }
    base_str ivs = labels_get(post, base_str_c("__scrape_interval__"));
    base_str tos = labels_get(post, base_str_c("__scrape_timeout__"));
    int64_t ivms = 0, toms = 0;
    const char *msg = NULL;
    base_str bad = {0};
    if (parse_dur(ivs, &ivms)) {
        msg = "error parsing scrape interval: not a valid duration string: ";
        bad = ivs;
    } else if (ivms == 0) {
        msg = "scrape interval cannot be 0";
    } else if (parse_dur(tos, &toms)) {
        msg = "error parsing scrape timeout: not a valid duration string: ";
        bad = tos;
    } else if (toms == 0) {
        msg = "scrape timeout cannot be 0";
    }
    if (msg) {
        free(addrbuf);
        e = bad.p || bad.n || strstr(msg, "string") ? errq(err, errlen, BASE_E_INVAL, msg, bad, "")
                                                    : base_errf(err, errlen, BASE_E_INVAL, "%s", msg);
        goto out;
    }
    if (toms > ivms) {
        base_buf m;
        base_buf_init(&m, 0);
        base_buf_puts(&m, "scrape timeout cannot be greater than scrape interval (");
        labels_quote(&m, tos);
        base_buf_puts(&m, " > ");
        labels_quote(&m, ivs);
        base_buf_puts(&m, ")");
        e = base_errf(err, errlen, BASE_E_INVAL, "%s", m.data ? m.data : "scrape timeout");
        base_buf_free(&m);
        free(addrbuf);
        goto out;
    }
    labels_iter it;
    labels_iter_init(&it, post);
    base_str ln, lv;
    while (labels_iter_next(&it, &ln, &lv))
        if (base_str_has_prefix(ln, "__meta_")) labels_builder_del(&b, ln);
    if (labels_get(post, base_str_c("instance")).n == 0)
        e = labels_builder_set(&b, base_str_c("instance"), (base_str){addrbuf, alen});
    if (!e) e = labels_builder_finish(&b, 0, &res, err, errlen);
    free(addrbuf);
    if (e) goto out;
    labels_iter_init(&it, res);
    while (labels_iter_next(&it, &ln, &lv)) {
        if (!labels_valid_utf8(lv)) {
            base_buf m;
            base_buf_init(&m, 0);
            base_buf_puts(&m, "invalid label value for ");
            labels_quote(&m, ln);
            base_buf_puts(&m, ": ");
            labels_quote(&m, lv);
            e = base_errf(err, errlen, BASE_E_INVAL, "%s", m.data ? m.data : "invalid label value");
            base_buf_free(&m);
            goto out;
        }
    }
    *ret = res;
    *ret_orig = orig;
    res = orig = NULL;
    e = 1;
    goto out;
nomem:
    e = BASE_E_NOMEM;
fail_code:
    base_errf(err, errlen, e, "%s", base_strerror(e));
out:
    labels_unref(res);
    labels_unref(orig);
    labels_unref(post);
    labels_builder_free(&b);
    base_buf_free(&pname);
    return e;
}

/* Go's url.QueryEscape. */
static void query_escape(base_buf *b, const char *s, size_t n) {
    static const char hex[] = "0123456789ABCDEF";
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
            c == '_' || c == '.' || c == '~')
            base_buf_putc(b, (char)c);
        else if (c == ' ')
            base_buf_putc(b, '+');
        else {
            char t[3] = {'%', hex[c >> 4], hex[c & 15]};
            base_buf_append(b, t, 3);
        }
    }
}

/* Go's url escaping of a path (encodePath). */
static void path_escape(base_buf *b, const char *s, size_t n) {
    static const char hex[] = "0123456789ABCDEF";
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
            strchr("-_.~$&+,/:;=@", c) != NULL)
            base_buf_putc(b, (char)c);
        else {
            char t[3] = {'%', hex[c >> 4], hex[c & 15]};
            base_buf_append(b, t, 3);
        }
    }
}

typedef struct qparam {
    base_str k;
    base_str first; /* overridden first value (or the config's) */
    int has_first;
    const cfg_param *cp;
} qparam;

static int qparam_cmp(const void *a, const void *b) {
    const qparam *x = a, *y = b;
    size_t n = x->k.n < y->k.n ? x->k.n : y->k.n;
    int c = memcmp(x->k.p, y->k.p, n);
    if (c) return c;
    return x->k.n < y->k.n ? -1 : x->k.n > y->k.n;
}

char *sc__target_url(const labels_set *tls, const cfg_scrape *c) {
    base_buf b;
    base_buf_init(&b, 0);
    base_str scheme = labels_get(tls, base_str_c("__scheme__"));
    base_str addr = labels_get(tls, base_str_c("__address__"));
    base_str path = labels_get(tls, base_str_c("__metrics_path__"));
    base_buf_append(&b, scheme.p, scheme.n);
    base_buf_puts(&b, "://");
    base_buf_append(&b, addr.p, addr.n);
    if (path.n && path.p[0] != '/' && addr.n) base_buf_putc(&b, '/');
    path_escape(&b, path.p, path.n);
    /* params: the config's, then __param_ labels */
    size_t cap = c->nparams + labels_len(tls), n = 0;
    qparam *qp = cap ? calloc(cap, sizeof *qp) : NULL;
    if (cap && !qp) {
        base_buf_free(&b);
        return NULL;
    }
    for (size_t i = 0; i < c->nparams; i++) {
        qp[n].k = base_str_c(c->params[i].name);
        qp[n].cp = &c->params[i];
        if (c->params[i].nvalues) {
            qp[n].first = base_str_c(c->params[i].values[0]);
            qp[n].has_first = 1;
        }
        n++;
    }
    labels_iter it;
    labels_iter_init(&it, tls);
    base_str ln, lv;
    while (labels_iter_next(&it, &ln, &lv)) {
        if (!base_str_has_prefix(ln, "__param_")) continue;
        base_str k = {ln.p + 8, ln.n - 8};
        size_t j = 0;
        for (; j < n; j++)
            if (base_str_eq(qp[j].k, k)) break;
        if (j == n) {
            qp[n].k = k;
            n++;
        }
        qp[j].first = lv;
        qp[j].has_first = 1;
    }
    if (n) qsort(qp, n, sizeof *qp, qparam_cmp);
    int first = 1;
    for (size_t i = 0; i < n; i++) {
        size_t nv = qp[i].cp ? qp[i].cp->nvalues : 0;
        if (nv == 0 && qp[i].has_first) nv = 1;
        for (size_t v = 0; v < nv; v++) {
            base_str val = v == 0 ? qp[i].first : base_str_c(qp[i].cp->values[v]);
            base_buf_putc(&b, first ? '?' : '&');
            first = 0;
            query_escape(&b, qp[i].k.p, qp[i].k.n);
            base_buf_putc(&b, '=');
            query_escape(&b, val.p, val.n);
        }
    }
    free(qp);
    if (base_buf_err(&b)) {
        base_buf_free(&b);
        return NULL;
    }
    size_t len;
    char *s = base_buf_steal(&b, &len);
    if (!s) s = strdup("");
    return s;
}

/* ---- settings snapshots -------------------------------------------------- */

sc_pcfg *sc__pcfg_new(const cfg_scrape *c, char *err, size_t errlen) {
    sc_pcfg *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    atomic_init(&p->refs, 1);
    p->job = c->job_name ? strdup(c->job_name) : NULL;
    p->honor_labels = c->honor_labels;
    p->honor_timestamps = c->honor_timestamps;
    p->sample_limit = c->sample_limit;
    p->label_limit = c->label_limit;
    p->name_len_limit = c->label_name_length_limit;
    p->value_len_limit = c->label_value_length_limit;
    p->body_size_limit = c->body_size_limit;
    int bad = !p->job || cfg_http_copy(&p->http, &c->http);
    if (!bad && c->nmetric_relabel) {
        p->mrelabel = calloc(c->nmetric_relabel, sizeof *p->mrelabel);
        if (!p->mrelabel) bad = 1;
        for (size_t i = 0; !bad && i < c->nmetric_relabel; i++) {
            if (relabel_rule_copy(&p->mrelabel[i], &c->metric_relabel[i], err, errlen))
                bad = 1;
            else
                p->nmrelabel++;
        }
    }
    if (bad) {
        sc__pcfg_unref(p);
        return NULL;
    }
    return p;
}

sc_pcfg *sc__pcfg_ref(sc_pcfg *p) {
    if (p) atomic_fetch_add(&p->refs, 1);
    return p;
}

void sc__pcfg_unref(sc_pcfg *p) {
    if (!p || atomic_fetch_sub(&p->refs, 1) != 1) return;
    free(p->job);
    cfg_http_clear(&p->http);
    for (size_t i = 0; i < p->nmrelabel; i++) relabel_rule_clear(&p->mrelabel[i]);
    free(p->mrelabel);
    free(p);
}

int sc__cache_reusable(const cfg_scrape *a, const cfg_scrape *b) {
    if (a->honor_labels != b->honor_labels) return 0;
    if (a->nmetric_relabel != b->nmetric_relabel) return 0;
    for (size_t i = 0; i < a->nmetric_relabel; i++)
        if (!relabel_rule_equal(&a->metric_relabel[i], &b->metric_relabel[i])) return 0;
    return 1;
}
