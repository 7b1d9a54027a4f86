/* client.c -- one remote write POST and 2.42's retry loop around it
 * (storage/remote/client.go Store, queue_manager.go
 * sendWriteRequestWithBackoff).
 *
 * A client is a libcurl easy handle used by one thread (a shard or the
 * metadata sender), so its connection is kept alive between batches. The
 * header list is built once: Content-Encoding: snappy, Content-Type:
 * application/x-protobuf, User-Agent, X-Prometheus-Remote-Write-Version:
 * 0.1.0, the entry's `headers`, "Expect:" (Go sends no 100-continue),
 * and the Authorization header of the HTTP client settings
 * (disc_httpc_apply); when credentials come from files they are applied
 * again before every request, as Prometheus reads them per request.
 *
 * Answers, as 2.42's Store: a transport error (refused, reset, timeout) is
 * recoverable; 2xx is success; 5xx is recoverable (default backoff: 2.42
 * ignores Retry-After there); 429 is recoverable with retry_on_http_429,
 * honouring Retry-After (seconds or an HTTP date); anything else is final.
 * The error reads `server returned HTTP status 400 Bad Request: <first
 * line of the body>` as 2.42 logs it.
 *
 * Aborting: *abort (set by the queue to stop a shard now) is checked by
 * curl's progress callback (about once a second at worst, at once during
 * transfers) and by the backoff sleeps.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "base/err.h"
#include "base/num.h"
#include "base/time.h"
#include "discovery/httpc.h"
#include "remote/remote_int.h"

static size_t on_body(char *p, size_t sz, size_t nm, void *ud) {
    remote_client *c = ud;
    size_t n = sz * nm;
    for (size_t i = 0; i < n && !c->body_done; i++) {
        if (p[i] == '\n' || c->body_len >= REMOTE_ERR_BODY_MAX) {
            c->body_done = 1;
            break;
        }
        c->body[c->body_len++] = p[i];
    }
    c->body[c->body_len] = '\0';
    return n;
}

static size_t on_header(char *p, size_t sz, size_t nm, void *ud) {
    remote_client *c = ud;
    size_t n = sz * nm;
    size_t k = n;
    while (k && (p[k - 1] == '\r' || p[k - 1] == '\n' || p[k - 1] == ' ')) k--;
    if (k > 5 && memcmp(p, "HTTP/", 5) == 0) {
        const char *s = memchr(p, ' ', k);
        c->status[0] = '\0';
        c->retry_after[0] = '\0';
        if (s) {
            s++;
            size_t m = k - (size_t)(s - p);
            if (m >= sizeof c->status) m = sizeof c->status - 1;
            memcpy(c->status, s, m);
            c->status[m] = '\0';
        }
    } else if (k > 12 && strncasecmp(p, "retry-after:", 12) == 0) {
        const char *s = p + 12;
        size_t m = k - 12;
        while (m && (*s == ' ' || *s == '\t')) s++, m--;
        if (m >= sizeof c->retry_after) m = sizeof c->retry_after - 1;
        memcpy(c->retry_after, s, m);
        c->retry_after[m] = '\0';
    }
    return n;
}

static int on_progress(void *ud, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un) {
    (void)dt, (void)dn, (void)ut, (void)un;
    remote_client *c = ud;
    return atomic_load(c->abort) ? 1 : 0;
}

/* Builds the header list and applies the HTTP client settings. */
static int apply(remote_client *c, char *err, size_t errlen) {
    const remote_conf *cf = &c->q->c;
    curl_slist_free_all(c->hdrs);
    c->hdrs = NULL;
    base_buf hb;
    base_buf_init(&hb, 0);
    struct curl_slist *l = NULL;
    const char *fixed[] = {"Content-Encoding: snappy", "Content-Type: application/x-protobuf",
                           "X-Prometheus-Remote-Write-Version: 0.1.0", "Expect:"};
    int rc = 0;
    for (size_t i = 0; i < 4 && !rc; i++) {
        struct curl_slist *n = curl_slist_append(l, fixed[i]);
        if (!n) rc = BASE_E_NOMEM;
        l = n ? n : l;
    }
    base_buf_puts(&hb, "User-Agent: ");
    base_buf_puts(&hb, c->q->user_agent);
    for (size_t i = 0; !rc && i <= cf->headers.n; i++) {
        if (i > 0) {
            base_buf_reset(&hb);
            base_buf_puts(&hb, cf->headers.v[i - 1].name);
            base_buf_puts(&hb, cf->headers.v[i - 1].value[0] ? ": " : ";");
            base_buf_puts(&hb, cf->headers.v[i - 1].value);
        }
        struct curl_slist *n = base_buf_err(&hb) ? NULL : curl_slist_append(l, hb.data);
        if (!n) rc = BASE_E_NOMEM;
        l = n ? n : l;
    }
    base_buf_free(&hb);
    if (rc) {
        curl_slist_free_all(l);
        return base_errf(err, errlen, BASE_E_NOMEM, "out of memory");
    }
    rc = disc_httpc_apply(c->e, &cf->http, &l, err, errlen);
    c->hdrs = l;
    curl_easy_setopt(c->e, CURLOPT_HTTPHEADER, l);
    return rc;
}

int remote__client_init(remote_client *c, remote_queue *q, _Atomic int *abort, _Atomic int *quit, char *err,
                        size_t errlen) {
    memset(c, 0, sizeof *c);
    c->q = q;
    c->abort = abort;
    c->quit = quit ? quit : abort;
    const cfg_http *h = &q->c.http;
    c->creds_files = (h->has_authorization && h->auth_credentials_file && h->auth_credentials_file[0]) ||
                     (h->has_basic_auth && h->basic_auth_password_file && h->basic_auth_password_file[0]);
    if (!(c->e = curl_easy_init())) return base_errf(err, errlen, BASE_E_NOMEM, "curl_easy_init failed");
    CURL *e = c->e;
    curl_easy_setopt(e, CURLOPT_URL, q->c.url);
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(e, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, c->curl_err);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, c);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, c);
    curl_easy_setopt(e, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(e, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(e, CURLOPT_XFERINFODATA, c);
    curl_easy_setopt(e, CURLOPT_POST, 1L);
    curl_easy_setopt(e, CURLOPT_POSTREDIR, 0L);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, q->c.timeout_ms > 0 ? (long)q->c.timeout_ms : 1L);
    curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
    return apply(c, err, errlen);
}

void remote__client_free(remote_client *c) {
    if (c->e) curl_easy_cleanup(c->e);
    curl_slist_free_all(c->hdrs);
    c->e = NULL;
    c->hdrs = NULL;
}

/* Retry-After as 2.42's retryAfterDuration: an HTTP date (time until it,
 * whole seconds, may be negative) or whole seconds; anything else 0. */
static int64_t retry_after_ms(const char *v) {
    if (!v[0]) return 0;
    struct tm tm;
    memset(&tm, 0, sizeof tm);
    const char *end = strptime(v, "%a, %d %b %Y %H:%M:%S GMT", &tm);
    if (end && *end == '\0') {
        time_t when = timegm(&tm);
        int64_t d = (int64_t)when * 1000 - base_unix_ms();
        return d / 1000 * 1000;
    }
    int64_t s;
    if (base_parse_i64(v, strlen(v), &s) != 0 || s > INT64_MAX / 1000 || s < INT64_MIN / 1000) return 0;
    return s * 1000;
}

int remote__client_post(remote_client *c, const void *body, size_t len, int64_t *ret_retry_after_ms,
                        char *why, size_t whylen) {
    *ret_retry_after_ms = 0;
    if (atomic_load(c->abort)) return REMOTE_ABORTED;
    if (c->creds_files) {
        char err[256];
        if (apply(c, err, sizeof err) != 0) {
            snprintf(why, whylen, "Post \"%s\": %s", c->q->c.url, err);
            return REMOTE_RETRY;
        }
    }
    c->curl_err[0] = '\0';
    c->status[0] = '\0';
    c->body[0] = '\0';
    c->body_len = 0;
    c->body_done = 0;
    c->retry_after[0] = '\0';
    curl_easy_setopt(c->e, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(c->e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
    CURLcode res = curl_easy_perform(c->e);
    if (res == CURLE_ABORTED_BY_CALLBACK || atomic_load(c->abort)) return REMOTE_ABORTED;
    if (res != CURLE_OK) {
        const char *w = res == CURLE_OPERATION_TIMEDOUT ? "context deadline exceeded"
                        : c->curl_err[0]                ? c->curl_err
                                                        : curl_easy_strerror(res);
        snprintf(why, whylen, "Post \"%s\": %s", c->q->c.url, w);
        return REMOTE_RETRY;
    }
    long code = 0;
    curl_easy_getinfo(c->e, CURLINFO_RESPONSE_CODE, &code);
    if (code / 100 == 2) return REMOTE_SENT;
    snprintf(why, whylen, "server returned HTTP status %s: %s", c->status[0] ? c->status : "?", c->body);
    if (code / 100 == 5) return REMOTE_RETRY;
    if (code == 429 && c->q->c.retry_429) {
        *ret_retry_after_ms = retry_after_ms(c->retry_after);
        return REMOTE_RETRY;
    }
    return REMOTE_FAIL;
}

int remote__sleep_abortable(remote_queue *q, _Atomic int *abort, int64_t ms) {
    int64_t end = base_mono_ns() + ms * 1000000;
    pthread_mutex_lock(&q->mu);
    while (!atomic_load(abort)) {
        int64_t now = base_mono_ns();
        if (now >= end) break;
        int64_t wait = end - now;
        if (wait > 200 * 1000000LL) wait = 200 * 1000000LL; /* abort is also set without the cv */
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        int64_t ns = ts.tv_nsec + wait;
        ts.tv_sec += (time_t)(ns / 1000000000);
        ts.tv_nsec = (long)(ns % 1000000000);
        pthread_cond_timedwait(&q->cv, &q->mu, &ts);
    }
    int a = atomic_load(abort) != 0;
    pthread_mutex_unlock(&q->mu);
    return a;
}

/* One attempt's duration into prometheus_remote_storage_sent_batch_duration_seconds. */
static void observe(remote_stats *st, double secs) {
    pthread_mutex_lock(&st->mu);
    for (int b = 0; b < REMOTE_NBUCKETS; b++)
        if (secs <= remote__buckets[b]) st->hist[b]++;
    st->hcount++;
    st->hsum += secs;
    pthread_mutex_unlock(&st->mu);
}

int remote__client_send(remote_client *c, const void *body, size_t len, void (*on_attempt)(void *ctx),
                        void (*on_retry)(void *ctx), void *ctx, char *why, size_t whylen) {
    const remote_conf *cf = &c->q->c;
    int64_t backoff = cf->min_backoff_ms;
    for (;;) {
        if (atomic_load(c->abort) || atomic_load(c->quit)) return REMOTE_ABORTED;
        if (on_attempt) on_attempt(ctx);
        int64_t ra = 0, t0 = base_mono_ns();
        int r = remote__client_post(c, body, len, &ra, why, whylen);
        if (r != REMOTE_ABORTED) observe(&c->q->st, (double)(base_mono_ns() - t0) / 1e9);
        if (r != REMOTE_RETRY) return r;
        remote__log_send(c->q, 0, why);
        int64_t sleep = ra > 0 ? ra : backoff;
        if (remote__sleep_abortable(c->q, c->quit, sleep) || atomic_load(c->abort)) return REMOTE_ABORTED;
        if (on_retry) on_retry(ctx);
        backoff = sleep > INT64_MAX / 2 ? INT64_MAX : sleep * 2;
        if (backoff > cf->max_backoff_ms) backoff = cf->max_backoff_ms;
    }
}
