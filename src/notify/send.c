/* send.c -- one batch of alerts to many alertmanagers at once, over
 * libcurl's multi interface (2.42's sendAll / sendOne).
 *
 * The batch's bodies are written once per API version that some request
 * needs (2.42 caches the v1 and v2 payloads the same way). Every request
 * is a POST of that body with Content-Type application/json and the
 * notifier's User-Agent, under its set's HTTP client settings and with its
 * set's timeout as the whole request's limit; all run at once on one multi
 * handle, which is kept between batches so connections are reused. A
 * request succeeds on any 2xx answer; otherwise its err says why, in 2.42's
 * words: `Post "<url>": <what failed>` (a timeout is "context deadline
 * exceeded", an abort "context canceled"), or `bad response status 500
 * Internal Server Error`. Response bodies are read and thrown away.
 *
 * The HTTP client settings (cfg_http) are applied as src/discovery's
 * http_sd client applies them: basic auth (password or password file),
 * an Authorization header (credentials or credentials file, read again for
 * every request, trimmed), TLS CA / certificate / key / skip verify /
 * minimum version, proxy (none unless configured: the environment's proxy
 * variables are ignored, as Prometheus's client ignores them), redirects
 * (at most 10) and HTTP/2 over TLS.
 *
 * Threads: only the sender thread calls notify__send_batch;
 * notify__sender_wakeup may be called from any thread.
 */
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/time.h"
#include "discovery/httpc.h"
#include "notify/notify_int.h"

struct notify__sender {
    CURLM *multi;
};

int notify__sender_new(notify__sender **ret) {
    notify__sender *s = calloc(1, sizeof *s);
    if (!s) return BASE_E_NOMEM;
    if (!(s->multi = curl_multi_init())) {
        free(s);
        return BASE_E_IO;
    }
    *ret = s;
    return 0;
}

void notify__sender_free(notify__sender *s) {
    if (!s) return;
    curl_multi_cleanup(s->multi);
    free(s);
}

void notify__sender_wakeup(notify__sender *s) {
    if (s) curl_multi_wakeup(s->multi);
}

/* ---- one request ------------------------------------------------------------ */

typedef struct xfer {
    CURL *e;
    notify__req *r;
    struct curl_slist *hdrs;
    char curl_err[CURL_ERROR_SIZE];
    char status[128]; /* the last status line's "500 Internal Server Error" */
    int done;
} xfer;

static size_t on_body(char *p, size_t sz, size_t nm, void *ud) {
    (void)p;
    (void)ud;
    return sz * nm;
}

static size_t on_header(char *p, size_t sz, size_t nm, void *ud) {
    xfer *x = ud;
    size_t n = sz * nm;
    if (n > 5 && memcmp(p, "HTTP/", 5) == 0) {
        const char *s = memchr(p, ' ', n);
        if (s) {
            s++;
            size_t k = n - (size_t)(s - p);
            while (k && (s[k - 1] == '\r' || s[k - 1] == '\n' || s[k - 1] == ' ')) k--;
            if (k >= sizeof x->status) k = sizeof x->status - 1;
            memcpy(x->status, s, k);
            x->status[k] = '\0';
        }
    }
    return n;
}

/* Applies the set's HTTP client settings; the headers go to x->hdrs. */
static int http_apply(xfer *x, const cfg_http *h, const char *ua, char *err, size_t errlen) {
    base_buf hb;
    base_buf_init(&hb, 0);
    struct curl_slist *l = curl_slist_append(NULL, "Content-Type: application/json");
    if (l) l = curl_slist_append(l, "Expect:"); /* Go sends no Expect: 100-continue */
    base_buf_puts(&hb, "User-Agent: ");
    base_buf_puts(&hb, ua);
    if (l && !base_buf_err(&hb)) l = curl_slist_append(l, hb.data);
    int rc = 0;
    if (!l || base_buf_err(&hb)) rc = base_errf(err, errlen, BASE_E_NOMEM, "out of memory");
    base_buf_free(&hb);
    if (!rc) rc = disc_httpc_apply(x->e, h, &l, err, errlen);
    x->hdrs = l;
    if (!rc) curl_easy_setopt(x->e, CURLOPT_HTTPHEADER, l);
    return rc;
}

static int setup(xfer *x, const base_buf *body, const char *ua, char *err, size_t errlen) {
    notify__req *r = x->r;
    if (!(x->e = curl_easy_init())) return base_errf(err, errlen, BASE_E_NOMEM, "curl_easy_init failed");
    CURL *e = x->e;
    curl_easy_setopt(e, CURLOPT_URL, r->url);
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(e, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_PRIVATE, x);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, x->curl_err);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, x);
    curl_easy_setopt(e, CURLOPT_POST, 1L);
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, body->data ? body->data : "");
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body->len);
    /* 301/302/303 turn a POST into a GET, as Go's client does */
    curl_easy_setopt(e, CURLOPT_POSTREDIR, 0L);
    long tmo = r->set->timeout_ms > 0 ? (long)r->set->timeout_ms : 1L;
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, tmo);
    return http_apply(x, &r->set->http, ua, err, errlen);
}

static void finish(xfer *x, CURLcode res, int64_t begin_ns) {
    notify__req *r = x->r;
    x->done = 1;
    r->latency = (double)(base_mono_ns() - begin_ns) / 1e9;
    if (res != CURLE_OK) {
        const char *why = res == CURLE_OPERATION_TIMEDOUT ? "context deadline exceeded"
                          : x->curl_err[0]                ? x->curl_err
                                                          : curl_easy_strerror(res);
        snprintf(r->err, sizeof r->err, "Post \"%s\": %.200s", r->url, why);
        return;
    }
    long code = 0;
    curl_easy_getinfo(x->e, CURLINFO_RESPONSE_CODE, &code);
    if (code / 100 == 2) {
        r->ok = 1;
        return;
    }
    if (x->status[0])
        snprintf(r->err, sizeof r->err, "bad response status %s", x->status);
    else
        snprintf(r->err, sizeof r->err, "bad response status %ld", code);
}

void notify__send_batch(notify__sender *s, notify__alert *const *alerts, size_t n, notify__req *reqs,
                        size_t nreqs, const char *user_agent, int (*abort_fn)(void *), void *ctx) {
    int64_t begin = base_mono_ns();
    base_buf v1, v2;
    base_buf_init(&v1, 0);
    base_buf_init(&v2, 0);
    int have_v1 = 0, have_v2 = 0;
    xfer *xs = calloc(nreqs ? nreqs : 1, sizeof *xs);
    if (!xs) {
        for (size_t i = 0; i < nreqs; i++) snprintf(reqs[i].err, sizeof reqs[i].err, "out of memory");
        return;
    }
    size_t running_total = 0;
    for (size_t i = 0; i < nreqs; i++) {
        xfer *x = &xs[i];
        notify__req *r = &reqs[i];
        x->r = r;
        r->ok = 0;
        r->err[0] = '\0';
        int v1api = r->set->api_version && strcmp(r->set->api_version, "v1") == 0;
        base_buf *body = v1api ? &v1 : &v2;
        if (v1api && !have_v1) notify__json_v1(&v1, alerts, n), have_v1 = 1;
        if (!v1api && !have_v2) notify__json_v2(&v2, alerts, n), have_v2 = 1;
        char err[256] = "";
        int rc = base_buf_err(body)
                     ? base_errf(err, sizeof err, BASE_E_NOMEM, "encoding alerts: out of memory")
                     : setup(x, body, user_agent, err, sizeof err);
        if (!rc && curl_multi_add_handle(s->multi, x->e) != CURLM_OK)
            rc = base_errf(err, sizeof err, BASE_E_IO, "curl_multi_add_handle failed");
        if (rc) {
            snprintf(r->err, sizeof r->err, "Post \"%s\": %.200s", r->url, err);
            x->done = 1;
            r->latency = (double)(base_mono_ns() - begin) / 1e9;
            if (x->e) curl_easy_cleanup(x->e), x->e = NULL;
            continue;
        }
        running_total++;
    }
    size_t left = running_total;
    while (left > 0) {
        int running = 0;
        curl_multi_perform(s->multi, &running);
        CURLMsg *msg;
        int q;
        while ((msg = curl_multi_info_read(s->multi, &q))) {
            if (msg->msg != CURLMSG_DONE) continue;
            xfer *x = NULL;
            curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&x);
            if (!x || x->done) continue;
            finish(x, msg->data.result, begin);
            left--;
        }
        if (left == 0) break;
        if (abort_fn && abort_fn(ctx)) {
            for (size_t i = 0; i < nreqs; i++) {
                if (xs[i].done) continue;
                xs[i].done = 1;
                xs[i].r->latency = (double)(base_mono_ns() - begin) / 1e9;
                snprintf(xs[i].r->err, sizeof xs[i].r->err, "Post \"%s\": context canceled", xs[i].r->url);
            }
            break;
        }
        curl_multi_poll(s->multi, NULL, 0, 100, NULL);
    }
    for (size_t i = 0; i < nreqs; i++) {
        if (xs[i].e) {
            curl_multi_remove_handle(s->multi, xs[i].e);
            curl_easy_cleanup(xs[i].e);
        }
        curl_slist_free_all(xs[i].hdrs);
    }
    free(xs);
    base_buf_free(&v1);
    base_buf_free(&v2);
}
