/* encode.c -- what the notifier writes: alerts as the JSON bodies 2.42
 * POSTs (API v2 and v1), Go's two RFC 3339 time formats, and
 * alertmanager URLs as Go's net/url prints them.
 *
 * The bodies were checked byte for byte against what Prometheus 2.42
 * itself sent to a recording receiver (tests/unit/notify/encode.c holds
 * those bodies): v2 is go-swagger's models.PostableAlert, whose
 * MarshalJSON concatenates {annotations, endsAt, startsAt} with the
 * embedded Alert's {generatorURL, labels}; times are strfmt.DateTime
 * (milliseconds, always three digits). v1 is notifier.Alert through
 * encoding/json: {labels, annotations, startsAt, endsAt, generatorURL},
 * times as time.Time's RFC3339Nano (fraction without trailing zeros).
 * Strings go through base_buf_json_str, which escapes as encoding/json
 * does; maps are written with their keys sorted, as encoding/json does.
 *
 * Also the small alert copy (notify__alert_new): annotations sorted by
 * name once, when queued, so every body written from it is in map order.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/buf.h"
#include "notify/notify_int.h"

/* ---- alerts ----------------------------------------------------------------- */

typedef struct ann_ix {
    notify__kv kv;
    size_t i; /* position in the rule: the tie-break that makes qsort stable */
} ann_ix;

static int ann_cmp(const void *a, const void *b) {
    const ann_ix *x = a, *y = b;
    int c = strcmp(x->kv.name, y->kv.name);
    return c ? c : (x->i > y->i) - (x->i < y->i);
}

notify__alert *notify__alert_new(const rules_notice *a, labels_set *ls) {
    notify__alert *n = calloc(1, sizeof *n);
    if (!n) return NULL;
    n->starts_at_ms = a->starts_at_ms;
    n->ends_at_ms = a->ends_at_ms;
    if (a->generator_url && a->generator_url[0] && !(n->generator_url = strdup(a->generator_url))) goto fail;
    if (a->nannotations) {
        if (!(n->ann = calloc(a->nannotations, sizeof *n->ann))) goto fail;
        for (size_t i = 0; i < a->nannotations; i++) {
            const rules_kv *kv = &a->annotations[i];
            n->ann[i].name = strdup(kv->name ? kv->name : "");
            n->ann[i].value = strdup(kv->value ? kv->value : "");
            n->nann = i + 1;
            if (!n->ann[i].name || !n->ann[i].value) goto fail;
        }
        /* sorted by name, stable (equal names keep their order) */
        ann_ix *ix = malloc(n->nann * sizeof *ix);
        if (!ix) goto fail;
        for (size_t i = 0; i < n->nann; i++) ix[i] = (ann_ix){n->ann[i], i};
        qsort(ix, n->nann, sizeof *ix, ann_cmp);
        for (size_t i = 0; i < n->nann; i++) n->ann[i] = ix[i].kv;
        free(ix);
        /* a map keeps the last value of a name */
        size_t w = 0;
        for (size_t i = 0; i < n->nann; i++) {
            if (w > 0 && strcmp(n->ann[w - 1].name, n->ann[i].name) == 0) {
                free(n->ann[w - 1].name);
                free(n->ann[w - 1].value);
                n->ann[w - 1] = n->ann[i];
                continue;
            }
            n->ann[w++] = n->ann[i];
        }
        n->nann = w;
    }
    n->labels = labels_ref(ls);
    return n;
fail:
    notify__alert_free(n);
    return NULL;
}

void notify__alert_free(notify__alert *a) {
    if (!a) return;
    labels_unref(a->labels);
    for (size_t i = 0; i < a->nann; i++) {
        free(a->ann[i].name);
        free(a->ann[i].value);
    }
    free(a->ann);
    free(a->generator_url);
    free(a);
}

/* ---- JSON --------------------------------------------------------------------- */

void notify__json_time(base_buf *b, int64_t ms, int millis) {
    char out[64];
    int len;
    if (ms == 0) {
        len = snprintf(out, sizeof out, "\"0001-01-01T00:00:00%sZ\"", millis ? ".000" : "");
    } else {
        int64_t sec = ms / 1000, frac = ms % 1000;
        if (frac < 0) frac += 1000, sec--;
        time_t t = (time_t)sec;
        struct tm tm;
        if (!gmtime_r(&t, &tm)) memset(&tm, 0, sizeof tm);
        char fr[8] = "";
        if (millis) {
            snprintf(fr, sizeof fr, ".%03d", (int)frac);
        } else if (frac) {
            snprintf(fr, sizeof fr, ".%03d", (int)frac);
            size_t k = strlen(fr);
            while (k > 1 && fr[k - 1] == '0') fr[--k] = '\0';
        }
        len = snprintf(out, sizeof out, "\"%04d-%02d-%02dT%02d:%02d:%02d%sZ\"", tm.tm_year + 1900,
                       tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, fr);
    }
    if (len > 0) base_buf_append(b, out, (size_t)len < sizeof out ? (size_t)len : sizeof out - 1);
}

static void json_cstr(base_buf *b, const char *s) {
    base_buf_json_str(b, s, strlen(s));
}

static void json_labels(base_buf *b, const labels_set *ls) {
    base_buf_putc(b, '{');
    labels_iter it;
    labels_iter_init(&it, ls);
    base_str n, v;
    int first = 1;
    while (labels_iter_next(&it, &n, &v)) {
        if (!first) base_buf_putc(b, ',');
        first = 0;
        base_buf_json_str(b, n.p, n.n);
        base_buf_putc(b, ':');
        base_buf_json_str(b, v.p, v.n);
    }
    base_buf_putc(b, '}');
}

static void json_ann(base_buf *b, const notify__alert *a) {
    base_buf_putc(b, '{');
    for (size_t i = 0; i < a->nann; i++) {
        if (i) base_buf_putc(b, ',');
        json_cstr(b, a->ann[i].name);
        base_buf_putc(b, ':');
        json_cstr(b, a->ann[i].value);
    }
    base_buf_putc(b, '}');
}

void notify__json_v2(base_buf *b, notify__alert *const *alerts, size_t n) {
    base_buf_putc(b, '[');
    for (size_t i = 0; i < n; i++) {
        const notify__alert *a = alerts[i];
        if (i) base_buf_putc(b, ',');
        base_buf_putc(b, '{');
        if (a->nann) {
            base_buf_puts(b, "\"annotations\":");
            json_ann(b, a);
            base_buf_putc(b, ',');
        }
        base_buf_puts(b, "\"endsAt\":");
        notify__json_time(b, a->ends_at_ms, 1);
        base_buf_puts(b, ",\"startsAt\":");
        notify__json_time(b, a->starts_at_ms, 1);
        if (a->generator_url && a->generator_url[0]) {
            base_buf_puts(b, ",\"generatorURL\":");
            json_cstr(b, a->generator_url);
        }
        base_buf_puts(b, ",\"labels\":");
        json_labels(b, a->labels);
        base_buf_putc(b, '}');
    }
    base_buf_putc(b, ']');
}

void notify__json_v1(base_buf *b, notify__alert *const *alerts, size_t n) {
    base_buf_putc(b, '[');
    for (size_t i = 0; i < n; i++) {
        const notify__alert *a = alerts[i];
        if (i) base_buf_putc(b, ',');
        base_buf_puts(b, "{\"labels\":");
        json_labels(b, a->labels);
        base_buf_puts(b, ",\"annotations\":");
        json_ann(b, a);
        base_buf_puts(b, ",\"startsAt\":");
        notify__json_time(b, a->starts_at_ms, 0);
        base_buf_puts(b, ",\"endsAt\":");
        notify__json_time(b, a->ends_at_ms, 0);
        if (a->generator_url && a->generator_url[0]) {
            base_buf_puts(b, ",\"generatorURL\":");
            json_cstr(b, a->generator_url);
        }
        base_buf_putc(b, '}');
    }
    base_buf_putc(b, ']');
}

/* ---- URLs --------------------------------------------------------------------- */

enum { ENC_HOST, ENC_PATH };

/* Go's net/url shouldEscape for the two modes used here: unreserved
 * characters stay; a host keeps RFC 3986's sub-delims plus ":[]<>\"";
 * a path keeps the reserved characters but "?". */
static int should_escape(unsigned char c, int mode) {
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return 0;
    if (c == 0 || c >= 0x80) return 1;
    if (mode == ENC_HOST && strchr("!$&'()*+,;=:[]<>\"", c)) return 0;
    if (strchr("-_.~", c)) return 0;
    if (strchr("$&+,/:;=?@", c)) return mode == ENC_PATH ? c == '?' : 1;
    return 1;
}

static void escape(base_buf *b, base_str s, int mode) {
    static const char hex[] = "0123456789ABCDEF";
    for (size_t i = 0; i < s.n; i++) {
        unsigned char c = (unsigned char)s.p[i];
        if (should_escape(c, mode)) {
            char e[3] = {'%', hex[c >> 4], hex[c & 15]};
            base_buf_append(b, e, 3);
        } else {
            base_buf_putc(b, (char)c);
        }
    }
}

void notify__url(base_buf *b, base_str scheme, base_str host, base_str path) {
    size_t start = b->len;
    if (scheme.n) {
        base_buf_append(b, scheme.p, scheme.n);
        base_buf_putc(b, ':');
    }
    if (scheme.n || host.n) {
        if (host.n || path.n) base_buf_puts(b, "//");
        escape(b, host, ENC_HOST);
    }
    if (path.n && path.p[0] != '/' && host.n) base_buf_putc(b, '/');
    if (b->len == start && path.n) {
        /* RFC 3986 4.2: a first segment with a colon would read as a scheme */
        const char *sl = memchr(path.p, '/', path.n);
        size_t seg = sl ? (size_t)(sl - path.p) : path.n;
        if (memchr(path.p, ':', seg)) base_buf_puts(b, "./");
    }
    escape(b, path, ENC_PATH);
}

/* Go's path.Clean of a rooted path, appended to b. */
static void clean_rooted(base_buf *b, const char *p, size_t n) {
    size_t start = b->len;
    size_t i = 0;
    while (i < n) {
        while (i < n && p[i] == '/') i++;
        size_t j = i;
        while (j < n && p[j] != '/') j++;
        size_t seg = j - i;
        if (seg == 0 || (seg == 1 && p[i] == '.')) {
            /* skip */
        } else if (seg == 2 && p[i] == '.' && p[i + 1] == '.') {
            /* back to the previous slash, never above the root */
            while (b->len > start && b->data[b->len - 1] != '/') b->len--;
            if (b->len > start) b->len--;
            if (b->data) b->data[b->len] = '\0';
        } else {
            base_buf_putc(b, '/');
            base_buf_append(b, p + i, seg);
        }
        i = j;
    }
    if (b->len == start) base_buf_putc(b, '/');
}

void notify__post_path(base_buf *b, const char *prefix, const char *version) {
    base_buf t;
    base_buf_init(&t, 0);
    base_buf_puts(&t, "/");
    if (prefix && prefix[0]) {
        base_buf_puts(&t, "/");
        base_buf_puts(&t, prefix);
    }
    base_buf_puts(&t, "//api/");
    base_buf_puts(&t, version);
    base_buf_puts(&t, "/alerts");
    if (base_buf_err(&t))
        b->err = b->err ? b->err : base_buf_err(&t);
    else
        clean_rooted(b, t.data, t.len);
    base_buf_free(&t);
}

/* Go's net.SplitHostPort: whether it succeeds. */
int notify__has_port(base_str s) {
    const char *p = s.p;
    size_t n = s.n;
    size_t i = n; /* the last colon */
    while (i > 0 && p[i - 1] != ':') i--;
    if (i == 0) return 0; /* missing port */
    i--;
    size_t j = 0, k = 0;
    if (p[0] == '[') {
        const char *e = memchr(p, ']', n);
        if (!e) return 0;
        size_t end = (size_t)(e - p);
        if (end + 1 == n) return 0; /* missing port */
        if (end + 1 != i) return 0; /* too many colons, or missing port */
        j = 1;
        k = end + 1;
    } else {
        if (memchr(p, ':', i)) return 0; /* too many colons */
    }
    if (memchr(p + j, '[', n - j)) return 0;
    if (memchr(p + k, ']', n - k)) return 0;
    return 1;
}
