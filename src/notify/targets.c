/* targets.c -- alertmanagers from discovered target groups, as 2.42's
 * notifier.alertmanagerFromGroup makes them.
 *
 * For each target of a group: the target's labels, then __scheme__ (the
 * set's scheme) and __alerts_path__ (path.Join("/", path_prefix,
 * "/api/<version>/alerts")) set over them, then the group's labels that
 * the target does not have; then the set's relabel_configs. A target the
 * rules drop is a dropped alertmanager, its URL taken from the labels
 * before relabeling. A kept one's URL is __scheme__://__address__ +
 * __alerts_path__ after relabeling. The address is checked as 2.42 does:
 * without a port (net.SplitHostPort fails, but would succeed with one) it
 * gets ":80"/":443" by scheme -- for the check only, 2.42 appends the
 * labels from before that to its list -- and any other scheme is the
 * group's error `invalid scheme: "<set scheme>"`; an address with a "/"
 * is the group's error `"<addr>" is not a valid hostname`. An error drops
 * the whole group (2.42 returns nil for it).
 *
 * Lifetimes: the builder holds views into the target set, the rules and
 * relabel's per-thread scratch; each set is finished before the next
 * relabel_process call.
 */
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "notify/notify_int.h"

static const base_str L_ADDR = {"__address__", 11};
static const base_str L_SCHEME = {"__scheme__", 10};
static const base_str L_PATH = {"__alerts_path__", 15};

typedef struct strv {
    char **v;
    size_t n, cap;
} strv;

static int strv_push(strv *s, base_buf *b) {
    if (base_buf_err(b)) return base_buf_err(b);
    if (s->n == s->cap) {
        size_t nc = s->cap ? s->cap * 2 : 8;
        char **nv = realloc(s->v, nc * sizeof *nv);
        if (!nv) return BASE_E_NOMEM;
        s->v = nv;
        s->cap = nc;
    }
    char *c = strdup(b->data ? b->data : "");
    if (!c) return BASE_E_NOMEM;
    s->v[s->n++] = c;
    return 0;
}

static void strv_clear(strv *s) {
    for (size_t i = 0; i < s->n; i++) free(s->v[i]);
    free(s->v);
    memset(s, 0, sizeof *s);
}

static void url_of(base_buf *b, const labels_set *ls) {
    base_buf_reset(b);
    notify__url(b, labels_get(ls, L_SCHEME), labels_get(ls, L_ADDR), labels_get(ls, L_PATH));
}

/* Makes room for s->n more strings at the end of *v (count n). */
static int strv_reserve(const strv *s, char ***v, size_t n) {
    if (!s->n) return 0;
    if (n + s->n > NOTIFY__MAX_URLS) return BASE_E_LIMIT;
    char **nv = realloc(*v, (n + s->n) * sizeof *nv);
    if (!nv) return BASE_E_NOMEM;
    *v = nv;
    return 0;
}

/* Moves the strings of s to the end of v (room reserved). */
static void strv_move(strv *s, char **v, size_t *n) {
    if (s->n) memcpy(v + *n, s->v, s->n * sizeof *v);
    *n += s->n;
    free(s->v);
    memset(s, 0, sizeof *s);
}

int notify__from_group(const notify__set *s, const disc_group *g, char ***active, size_t *nactive,
                       char ***dropped, size_t *ndropped, char *err, size_t errlen) {
    int rc = 0;
    strv act = {0}, drp = {0};
    labels_builder b;
    labels_builder_init(&b);
    base_buf path, url, addr;
    base_buf_init(&path, 0);
    base_buf_init(&url, 0);
    base_buf_init(&addr, 0);
    notify__post_path(&path, s->path_prefix, s->api_version);
    if ((rc = base_buf_err(&path))) goto out;
    for (size_t t = 0; t < g->ntargets; t++) {
        const labels_set *tl = g->targets[t];
        labels_set *pre = NULL, *post = NULL;
        if ((rc = labels_builder_from(&b, tl))) goto out;
        if ((rc = labels_builder_set(&b, L_SCHEME, base_str_c(s->scheme)))) goto out;
        if ((rc = labels_builder_set(&b, L_PATH, (base_str){path.data, path.len}))) goto out;
        if (g->labels) {
            labels_iter it;
            labels_iter_init(&it, g->labels);
            base_str n, v;
            while (labels_iter_next(&it, &n, &v))
                if (!labels_has(tl, n) && (rc = labels_builder_set(&b, n, v))) goto out;
        }
        if ((rc = labels_builder_finish(&b, 0, &pre, err, errlen))) goto out;
        int keep = relabel_process(s->relabel, s->nrelabel, &b);
        if (keep < 0) {
            labels_unref(pre);
            rc = base_errf(err, errlen, keep, "relabeling failed: %s", base_strerror(keep));
            goto out;
        }
        if (!keep) {
            url_of(&url, pre);
            labels_unref(pre);
            if ((rc = strv_push(&drp, &url))) goto out;
            continue;
        }
        labels_unref(pre);
        if ((rc = labels_builder_finish(&b, 0, &post, err, errlen))) goto out;
        base_str a = labels_get(post, L_ADDR);
        base_buf_reset(&addr);
        base_buf_append(&addr, a.p, a.n);
        base_buf_puts(&addr, ":1234");
        if (!notify__has_port(a) && notify__has_port((base_str){addr.data, addr.len})) {
            base_str sch = labels_get(post, L_SCHEME);
            base_buf_reset(&addr);
            base_buf_append(&addr, a.p, a.n);
            if (sch.n == 0 || base_str_eqc(sch, "http")) {
                base_buf_puts(&addr, ":80");
            } else if (base_str_eqc(sch, "https")) {
                base_buf_puts(&addr, ":443");
            } else {
                base_buf q;
                base_buf_init(&q, 0);
                labels_quote(&q, base_str_c(s->scheme));
                rc = base_errf(err, errlen, BASE_E_INVAL, "invalid scheme: %s", q.data ? q.data : "\"\"");
                base_buf_free(&q);
                labels_unref(post);
                goto out;
            }
        } else {
            base_buf_reset(&addr);
            base_buf_append(&addr, a.p, a.n);
        }
        if ((rc = base_buf_err(&addr))) {
            labels_unref(post);
            goto out;
        }
        if (addr.len && memchr(addr.data, '/', addr.len)) {
            base_buf q;
            base_buf_init(&q, 0);
            labels_quote(&q, (base_str){addr.data, addr.len});
            rc = base_errf(err, errlen, BASE_E_INVAL, "%s is not a valid hostname", q.data ? q.data : "\"\"");
            base_buf_free(&q);
            labels_unref(post);
            goto out;
        }
        url_of(&url, post);
        labels_unref(post);
        if ((rc = strv_push(&act, &url))) goto out;
    }
    if ((rc = strv_reserve(&act, active, *nactive)) || (rc = strv_reserve(&drp, dropped, *ndropped)))
        goto out;
    strv_move(&act, *active, nactive);
    strv_move(&drp, *dropped, ndropped);
out:
    strv_clear(&act);
    strv_clear(&drp);
    labels_builder_free(&b);
    base_buf_free(&path);
    base_buf_free(&url);
    base_buf_free(&addr);
    return rc;
}
