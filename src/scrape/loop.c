/* loop.c -- scrape workers: threads that each drive a curl multi handle
 * and the loops assigned to them (see scrape_int.h for the state machine).
 *
 * A worker sleeps in curl_multi_poll() until the earliest due loop (a
 * binary min-heap on due time) or a command (curl_multi_wakeup). A due
 * loop starts its transfer; when curl reports it done the worker decodes
 * (gzip with libdeflate: one call over the whole body, faster than curl's
 * streaming zlib), parses and appends on the same thread, with one head
 * appender transaction per scrape (samples, stale markers and report
 * series commit together).
 *
 * Schedule (2.42's scrapeLoop.run): the first scrape waits for the
 * target's offset, so that it lands where wall time modulo the interval
 * equals (target hash ^ identity hash) modulo the interval; then every
 * interval (a late tick is skipped, never doubled). Timestamps snap to the
 * grid of the first scrape when within 2 ms (AlignScrapeTimestamps) for
 * intervals above 200 ms.
 *
 * End of run (2.42's endOfRunStaleness): a loop stopped with staleness
 * takes the time of its next tick as the markers' time, waits one more
 * tick and a tenth of the interval (so a successor that took over the
 * target has written newer samples, which make the markers out of order
 * and ignored), then marks its last series and its report series stale.
 */
#include <errno.h>
#include <inttypes.h>
#include <libdeflate.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/err.h"
#include "base/log.h"
#include "base/num.h"
#include "base/time.h"
#include "scrape/scrape_int.h"

#define SC_ACCEPT                                                                                            \
    "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,"          \
    "text/plain;version=0.0.4;q=0.5,*/*;q=0.1"
#define SC_USER_AGENT    "Prometheus/2.42.0 (kelvin/" KELVIN_VERSION ")"
/* Hard cap on a body without body_size_limit (compressed or not). */
#define SC_BODY_HARD_MAX ((size_t)1 << 30)

static int64_t wall_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* ---- heap ------------------------------------------------------------------ */

static void heap_swap(sc_worker *w, size_t a, size_t b) {
    sc_loop *t = w->heap[a];
    w->heap[a] = w->heap[b];
    w->heap[b] = t;
    w->heap[a]->heap_idx = a;
    w->heap[b]->heap_idx = b;
}

static void heap_up(sc_worker *w, size_t i) {
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (w->heap[p]->due_ns <= w->heap[i]->due_ns) break;
        heap_swap(w, p, i);
        i = p;
    }
}

static void heap_down(sc_worker *w, size_t i) {
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < w->nheap && w->heap[l]->due_ns < w->heap[m]->due_ns) m = l;
        if (r < w->nheap && w->heap[r]->due_ns < w->heap[m]->due_ns) m = r;
        if (m == i) break;
        heap_swap(w, i, m);
        i = m;
    }
}

static int heap_push(sc_worker *w, sc_loop *l) {
    if (w->nheap == w->capheap) {
        size_t nc = w->capheap ? w->capheap * 2 : 64;
        sc_loop **h = realloc(w->heap, nc * sizeof *h);
        if (!h) return BASE_E_NOMEM;
        w->heap = h;
        w->capheap = nc;
    }
    l->heap_idx = w->nheap;
    w->heap[w->nheap++] = l;
    heap_up(w, l->heap_idx);
    return 0;
}

static void heap_remove(sc_worker *w, sc_loop *l) {
    size_t i = l->heap_idx;
    if (i >= w->nheap || w->heap[i] != l) return;
    w->nheap--;
    if (i != w->nheap) {
        w->heap[i] = w->heap[w->nheap];
        w->heap[i]->heap_idx = i;
        heap_down(w, i);
        heap_up(w, i);
    }
    l->heap_idx = SIZE_MAX;
}

/* ---- loops ------------------------------------------------------------------- */

sc_worker *sc__worker_for(scrape_manager *m, uint64_t key2) {
    return &m->workers[key2 % m->nworkers];
}

sc_loop *sc__loop_new(scrape_manager *m, sc_pool *p, labels_set *tls, labels_set *disc) {
    sc_loop *l = calloc(1, sizeof *l);
    if (!l) return NULL;
    pthread_mutex_init(&l->mu, NULL);
    l->m = m;
    l->tls = labels_ref(tls);
    l->discovered = labels_ref(disc);
    l->heap_idx = SIZE_MAX;
    sc__cache_init(&l->cache);
    base_buf_init(&l->body, 0);
    labels_builder b;
    labels_builder_init(&b);
    labels_iter it;
    labels_iter_init(&it, tls);
    base_str n, v;
    int e = 0;
    while (!e && labels_iter_next(&it, &n, &v))
        if (!base_str_has_prefix(n, "__")) e = labels_builder_add(&b, n, v);
    if (!e) e = labels_builder_finish(&b, 0, &l->series_tls, NULL, 0);
    labels_builder_free(&b);
    l->url = sc__target_url(tls, p->cfg);
    base_str ivs = labels_get(tls, base_str_c("__scrape_interval__"));
    base_str tos = labels_get(tls, base_str_c("__scrape_timeout__"));
    l->interval_s = strndup(ivs.p ? ivs.p : "", ivs.n);
    l->timeout_s = strndup(tos.p ? tos.p : "", tos.n);
    if (e || !l->url || !l->interval_s || !l->timeout_s ||
        base_parse_duration_ms(l->interval_s, &l->interval_ms) ||
        base_parse_duration_ms(l->timeout_s, &l->timeout_ms) || l->interval_ms <= 0 || l->timeout_ms <= 0) {
        sc__loop_free(l);
        return NULL;
    }
    char hb[BASE_FMT_DOUBLE_MAX];
    base_fmt_double_f(hb, (double)l->timeout_ms / 1000.0);
    snprintf(l->timeout_hdr, sizeof l->timeout_hdr, "X-Prometheus-Scrape-Timeout-Seconds: %s", hb);
    char hs[24];
    int hn = snprintf(hs, sizeof hs, "%016" PRIu64, labels_hash(tls));
    l->thash = sc__fnv64a(l->url, strlen(l->url), sc__fnv64a(hs, (size_t)hn, SC_FNV_INIT));
    l->key2 = sc__fnv64a(l->url, strlen(l->url), labels_hash(l->series_tls));
    l->pcfg = sc__pcfg_ref(p->pcfg);
    l->w = sc__worker_for(m, l->key2);
    return l;
}

static void meta_free_all(sc_loop *l) {
    for (size_t i = 0; i < l->nmeta_b; i++) {
        sc_meta *m = l->meta[i];
        while (m) {
            sc_meta *nx = m->next;
            sc__meta_free(m);
            m = nx;
        }
    }
    free(l->meta);
    l->meta = NULL;
    l->nmeta = l->nmeta_b = 0;
}

void sc__loop_free(sc_loop *l) {
    if (!l) return;
    if (l->easy) {
        if (l->state == SC_ST_INFLIGHT && l->w) curl_multi_remove_handle(l->w->multi, l->easy);
        curl_easy_cleanup(l->easy);
    }
    curl_slist_free_all(l->hdrs);
    base_buf_free(&l->body);
    sc__cache_free(&l->cache);
    meta_free_all(l);
    labels_unref(l->tls);
    labels_unref(l->series_tls);
    labels_unref(l->discovered);
    free(l->url);
    free(l->interval_s);
    free(l->timeout_s);
    sc__pcfg_unref(l->pcfg);
    sc__pcfg_unref(l->wcfg);
    pthread_mutex_destroy(&l->mu);
    free(l);
}

static size_t on_body(char *ptr, size_t size, size_t nmemb, void *ud) {
    sc_loop *l = ud;
    size_t n = size * nmemb;
    size_t lim =
        l->wcfg && l->wcfg->body_size_limit && !l->gzip ? l->wcfg->body_size_limit : SC_BODY_HARD_MAX;
    if (l->body.len + n > lim) {
        l->body_over = 1;
        return 0;
    }
    base_buf_append(&l->body, ptr, n);
    return base_buf_err(&l->body) ? 0 : n;
}

static int ieq_prefix(const char *s, size_t n, const char *pre) {
    size_t k = strlen(pre);
    return n >= k && strncasecmp(s, pre, k) == 0;
}

static void trim(const char **s, size_t *n) {
    while (*n && (**s == ' ' || **s == '\t')) (*s)++, (*n)--;
    while (*n &&
           ((*s)[*n - 1] == ' ' || (*s)[*n - 1] == '\t' || (*s)[*n - 1] == '\r' || (*s)[*n - 1] == '\n'))
        (*n)--;
}

static size_t on_header(char *buf, size_t size, size_t nitems, void *ud) {
    sc_loop *l = ud;
    size_t n = size * nitems;
    if (ieq_prefix(buf, n, "HTTP/")) {
        /* a status line (again after a redirect or 100-continue) */
        const char *sp = memchr(buf, ' ', n);
        l->status_line[0] = '\0';
        l->content_type[0] = '\0';
        l->gzip = 0;
        if (sp) {
            const char *s = sp + 1;
            size_t k = n - (size_t)(s - buf);
            trim(&s, &k);
            if (k >= sizeof l->status_line) k = sizeof l->status_line - 1;
            memcpy(l->status_line, s, k);
            l->status_line[k] = '\0';
        }
    } else if (ieq_prefix(buf, n, "content-type:")) {
        const char *s = buf + 13;
        size_t k = n - 13;
        trim(&s, &k);
        if (k >= sizeof l->content_type) k = sizeof l->content_type - 1;
        memcpy(l->content_type, s, k);
        l->content_type[k] = '\0';
    } else if (ieq_prefix(buf, n, "content-encoding:")) {
        const char *s = buf + 17;
        size_t k = n - 17;
        trim(&s, &k);
        l->gzip = k == 4 && strncasecmp(s, "gzip", 4) == 0;
    }
    return n;
}

static char *read_secret(const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) return NULL;
    char buf[4096];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' ')) buf[--n] = '\0';
    return strdup(buf);
}

/* Builds the request headers into l->hdrs. They depend only on the loop
 * and its settings, except a credentials file, which (as in Prometheus)
 * is read again for every request. */
static int build_headers(sc_loop *l) {
    const cfg_http *p = &l->wcfg->http;
    curl_slist_free_all(l->hdrs);
    l->hdrs = NULL;
    struct curl_slist *h = NULL, *t;
    const char *hs[] = {"Accept: " SC_ACCEPT, "Accept-Encoding: gzip", l->timeout_hdr};
    for (size_t i = 0; i < 3; i++) {
        if (!(t = curl_slist_append(h, hs[i]))) goto nomem;
        h = t;
    }
    if (p->has_authorization) {
        const char *type = p->auth_type ? p->auth_type : "Bearer";
        char *cred = p->auth_credentials_file ? read_secret(p->auth_credentials_file) : NULL;
        const char *cv = cred ? cred : p->auth_credentials ? p->auth_credentials : "";
        size_t n = strlen(type) + strlen(cv) + 32;
        char *line = malloc(n);
        if (line) snprintf(line, n, "Authorization: %s %s", type, cv);
        free(cred);
        if (!line) goto nomem;
        t = curl_slist_append(h, line);
        free(line);
        if (!t) goto nomem;
        h = t;
    }
    l->hdrs = h;
    return 0;
nomem:
    curl_slist_free_all(h);
    return BASE_E_NOMEM;
}

/* (Re)configures the loop's easy handle for its settings; the headers are
 * rebuilt only when the settings changed or they hold a credentials file. */
static int setup_easy(sc_loop *l, int changed) {
    const cfg_http *p = &l->wcfg->http;
    if ((changed || !l->hdrs || p->auth_credentials_file) && build_headers(l)) return BASE_E_NOMEM;
    if (l->easy)
        curl_easy_reset(l->easy);
    else if (!(l->easy = curl_easy_init()))
        return BASE_E_NOMEM;
    CURL *c = l->easy;
    curl_easy_setopt(c, CURLOPT_URL, l->url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, l->hdrs);
    curl_easy_setopt(c, CURLOPT_USERAGENT, SC_USER_AGENT);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, l);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, l);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)l->timeout_ms);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_PRIVATE, l);
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, p->follow_redirects ? 1L : 0L);
    curl_easy_setopt(c, CURLOPT_MAXREDIRS, 10L);
#if LIBCURL_VERSION_NUM >= 0x075500
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
#endif
    if (p->has_basic_auth) {
        char *pw = p->basic_auth_password_file ? read_secret(p->basic_auth_password_file) : NULL;
        curl_easy_setopt(c, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
        curl_easy_setopt(c, CURLOPT_USERNAME, p->basic_auth_username ? p->basic_auth_username : "");
        curl_easy_setopt(c, CURLOPT_PASSWORD, pw ? pw : p->basic_auth_password ? p->basic_auth_password : "");
        free(pw); /* curl copies option strings */
    }
    if (p->tls.ca_file) curl_easy_setopt(c, CURLOPT_CAINFO, p->tls.ca_file);
    if (p->tls.cert_file) curl_easy_setopt(c, CURLOPT_SSLCERT, p->tls.cert_file);
    if (p->tls.key_file) curl_easy_setopt(c, CURLOPT_SSLKEY, p->tls.key_file);
    if (p->tls.insecure_skip_verify) {
        curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 0L);
        curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 0L);
    }
    if (p->proxy_url)
        curl_easy_setopt(c, CURLOPT_PROXY, p->proxy_url);
    else
        curl_easy_setopt(c, CURLOPT_PROXY, "");
    return 0;
}

static void set_status(sc_loop *l, int ok, const char *msg, int64_t start_wall_ns, double dur) {
    pthread_mutex_lock(&l->mu);
    l->health = ok ? SC_HEALTH_UP : SC_HEALTH_DOWN;
    snprintf(l->last_error, sizeof l->last_error, "%s", ok ? "" : msg);
    l->last_scrape_ns = start_wall_ns;
    l->last_duration_s = dur;
    l->scrapes++;
    l->mem_bytes = sc__cache_bytes(&l->cache);
    pthread_mutex_unlock(&l->mu);
}

static void log_change(sc_loop *l, int ok, const char *msg) {
    if (!ok && (l->ok_prev || strcmp(l->logged_err, msg) != 0)) {
        base_log(BASE_LOG_WARN, "Scrape failed", "target", l->url, "job", l->wcfg->job, "err", msg, NULL);
        snprintf(l->logged_err, sizeof l->logged_err, "%s", msg);
    } else if (ok && !l->ok_prev && l->logged_err[0]) {
        base_log(BASE_LOG_INFO, "Scrape recovered", "target", l->url, "job", l->wcfg->job, NULL);
        l->logged_err[0] = '\0';
    }
    l->ok_prev = ok;
}

static int is_openmetrics(const char *ct) {
    const char *s = ct;
    size_t n = strcspn(ct, ";");
    trim(&s, &n);
    return n == 28 && strncasecmp(s, "application/openmetrics-text", 28) == 0;
}

/* Decompresses l->body into w->inflate. 0, or a message in msg. */
static int gunzip(sc_worker *w, sc_loop *l, int *reason, char *msg, size_t msglen) {
    size_t in = l->body.len;
    const unsigned char *src = (const unsigned char *)l->body.data;
    size_t lim = l->wcfg->body_size_limit ? l->wcfg->body_size_limit : SC_BODY_HARD_MAX;
    if (in < 18 || src[0] != 0x1f || src[1] != 0x8b) {
        snprintf(msg, msglen, "gzip: invalid header");
        *reason = SC_FAIL_PARSE;
        return BASE_E_PARSE;
    }
    size_t isize = (size_t)src[in - 4] | (size_t)src[in - 3] << 8 | (size_t)src[in - 2] << 16 |
                   (size_t)src[in - 1] << 24;
    size_t cap = isize ? isize : in * 4;
    for (;;) {
        if (cap > lim) cap = lim;
        base_buf_reset(&w->inflate);
        if (base_buf_reserve(&w->inflate, cap + 1)) {
            snprintf(msg, msglen, "out of memory");
            *reason = SC_FAIL_OTHER;
            return BASE_E_NOMEM;
        }
        size_t got = 0;
        enum libdeflate_result r = libdeflate_gzip_decompress(w->dec, src, in, w->inflate.data, cap, &got);
        if (r == LIBDEFLATE_SUCCESS) {
            w->inflate.len = got;
            return 0;
        }
        if (r != LIBDEFLATE_INSUFFICIENT_SPACE) {
            snprintf(msg, msglen, "gzip: invalid checksum or data");
            *reason = SC_FAIL_PARSE;
            return BASE_E_PARSE;
        }
        if (cap >= lim) {
            snprintf(msg, msglen, "body size limit exceeded");
            *reason = SC_FAIL_BODY_SIZE;
            return BASE_E_LIMIT;
        }
        cap = cap * 2 + 4096;
    }
}

static void schedule_next(sc_loop *l, int64_t now) {
    int64_t iv = l->interval_ms * 1000000LL;
    l->due_ns += iv;
    if (l->due_ns <= now) l->due_ns += ((now - l->due_ns) / iv + 1) * iv;
}

/* The scrape is over (or failed before a transfer): append, report,
 * commit, record. */
static void finish(sc_worker *w, sc_loop *l, int have_body, const char *err_in, int reason_in) {
    scrape_manager *m = w->m;
    sc_result r;
    memset(&r, 0, sizeof r);
    char msg[SC_ERR_MAX];
    int reason = reason_in;
    snprintf(msg, sizeof msg, "%s", err_in ? err_in : "");
    int ok = 0;
    if (have_body) {
        const char *body = l->body.data ? l->body.data : "";
        size_t len = l->body.len;
        int bad = 0;
        if (l->gzip) {
            if (gunzip(w, l, &reason, msg, sizeof msg))
                bad = 1;
            else {
                body = w->inflate.data ? w->inflate.data : "";
                len = w->inflate.len;
            }
        }
        if (!bad) {
            expo_format fmt = is_openmetrics(l->content_type) ? EXPO_FMT_OPENMETRICS : EXPO_FMT_TEXT;
            sc__append(w, l, body, len, fmt, l->start_ms, &r);
            if (r.err) {
                snprintf(msg, sizeof msg, "%s", r.msg);
                reason = r.reason;
            } else
                ok = 1;
        }
        if (ok && len == 0) have_body = 0; /* an empty body: no cache collection */
    }
    if (!ok) {
        tsdb_head_app_rollback(w->app);
        sc__append_all_stale(w, l, l->start_ms);
    }
    double dur = (double)(base_mono_ns() - l->start_ns) / 1e9;
    sc__report(w, l, l->start_ms, dur, &r, ok, 0);
    tsdb_append_result res;
    memset(&res, 0, sizeof res);
    int ce = tsdb_head_app_commit(w->app, &res);
    if (ce) base_log(BASE_LOG_WARN, "Scrape commit failed", "target", l->url, "err", base_strerror(ce), NULL);
    sc__after_commit(w, l, &res, ok);
    if (ok && have_body) sc__cache_collect(w, l);
    atomic_fetch_add(&m->scrapes, 1);
    if (!ok) atomic_fetch_add(&m->fails[reason > 0 && reason < SC_FAIL_N ? reason : SC_FAIL_OTHER], 1);
    atomic_fetch_add(&m->samples_appended, res.appended);
    atomic_fetch_add(&m->out_of_order, res.out_of_order + r.out_of_order);
    atomic_fetch_add(&m->duplicate, res.duplicate + r.duplicate);
    atomic_fetch_add(&m->out_of_bounds, res.too_old + r.out_of_bounds);
    log_change(l, ok, msg);
    set_status(l, ok, msg, l->start_wall_ns, dur);
    l->last_ts_ms = l->start_ms;
    /* Only a few loops of a worker are in flight at once, while hundreds
     * wait for their next tick: a body buffer kept by each waiting loop
     * would be most of the memory a target costs beyond its series (200
     * targets x ~40 KB of gzip'd body). Small ones are kept; the rest go
     * back to malloc, which hands the same chunks to the next loops due. */
    if (l->body.cap > ((size_t)4 << 10))
        base_buf_free(&l->body);
    else
        base_buf_reset(&l->body);
    if (w->inflate.cap > ((size_t)4 << 20)) base_buf_free(&w->inflate);
}

static void start_scrape(sc_worker *w, sc_loop *l, int64_t now) {
    char forced[256];
    pthread_mutex_lock(&l->mu);
    int changed = l->pcfg != l->wcfg;
    if (changed) {
        sc__pcfg_unref(l->wcfg);
        l->wcfg = sc__pcfg_ref(l->pcfg);
        if (l->pcfg_flush) sc__cache_flush_raw(&l->cache);
        l->pcfg_flush = 0;
    }
    snprintf(forced, sizeof forced, "%s", l->forced_err);
    pthread_mutex_unlock(&l->mu);
    l->start_ns = now;
    int64_t t = base_unix_ms();
    if (!l->aligned_ms) l->aligned_ms = t;
    if (l->interval_ms > 200) {
        while (t - l->aligned_ms >= l->interval_ms) l->aligned_ms += l->interval_ms;
        if (t - l->aligned_ms <= 2) t = l->aligned_ms;
    }
    l->start_ms = t;
    l->start_wall_ns = wall_ns();
    schedule_next(l, now);
    if (forced[0]) {
        finish(w, l, 0, forced, SC_FAIL_TARGET_LIMIT);
        heap_push(w, l);
        return;
    }
    if ((changed || !l->easy) && setup_easy(l, changed)) {
        curl_easy_cleanup(l->easy); /* half set up: the next scrape starts over */
        l->easy = NULL;
        finish(w, l, 0, "out of memory", SC_FAIL_OTHER);
        heap_push(w, l);
        return;
    }
    base_buf_reset(&l->body);
    l->body_over = 0;
    l->gzip = 0;
    l->status_line[0] = l->content_type[0] = '\0';
    if (curl_multi_add_handle(w->multi, l->easy) != CURLM_OK) {
        finish(w, l, 0, "curl: cannot start the transfer", SC_FAIL_OTHER);
        heap_push(w, l);
        return;
    }
    l->state = SC_ST_INFLIGHT;
}

static void transfer_done(sc_worker *w, sc_loop *l, CURLcode rc) {
    curl_multi_remove_handle(w->multi, l->easy);
    l->state = SC_ST_WAITING;
    char msg[SC_ERR_MAX];
    if (rc == CURLE_OK) {
        long code = 0;
        curl_easy_getinfo(l->easy, CURLINFO_RESPONSE_CODE, &code);
        if (code != 200) {
            snprintf(msg, sizeof msg, "server returned HTTP status %s",
                     l->status_line[0] ? l->status_line : "(none)");
            finish(w, l, 0, msg, SC_FAIL_HTTP);
        } else {
            finish(w, l, 1, NULL, 0);
        }
    } else if (rc == CURLE_OPERATION_TIMEDOUT) {
        snprintf(msg, sizeof msg, "Get \"%s\": context deadline exceeded", l->url);
        finish(w, l, 0, msg, SC_FAIL_TIMEOUT);
    } else if (rc == CURLE_WRITE_ERROR && l->body_over) {
        finish(w, l, 0, "body size limit exceeded", SC_FAIL_BODY_SIZE);
    } else {
        snprintf(msg, sizeof msg, "Get \"%s\": %s", l->url, curl_easy_strerror(rc));
        finish(w, l, 0, msg, SC_FAIL_CONNECT);
    }
    /* An easy handle is ~20 KB (its receive buffer included) and a loop
     * waits far longer than it scrapes: give it back; the connection stays
     * in the multi handle's cache for the next scrape's new handle. */
    curl_easy_cleanup(l->easy);
    l->easy = NULL;
    if (l->state == SC_ST_WAITING) heap_push(w, l);
}

static void all_remove(sc_worker *w, sc_loop *l) {
    for (size_t i = 0; i < w->nall; i++)
        if (w->all[i] == l) {
            w->all[i] = w->all[--w->nall];
            return;
        }
}

static void drop_loop(sc_worker *w, sc_loop *l) {
    heap_remove(w, l);
    if (l->state == SC_ST_INFLIGHT) {
        curl_multi_remove_handle(w->multi, l->easy);
        l->state = SC_ST_WAITING;
    }
    all_remove(w, l);
    sc__loop_free(l);
}

static void end_of_run_tick(sc_worker *w, sc_loop *l, int64_t now) {
    int64_t iv = l->interval_ms * 1000000LL;
    if (l->ending_ticks == 0) {
        l->stale_ts_ms = base_unix_ms();
        l->ending_ticks = 1;
        l->due_ns += iv;
        if (l->due_ns <= now) l->due_ns = now + iv;
        heap_push(w, l);
        return;
    }
    if (l->ending_ticks == 1) {
        l->ending_ticks = 2;
        l->due_ns = now + iv / 10;
        heap_push(w, l);
        return;
    }
    if (!l->wcfg) l->wcfg = sc__pcfg_ref(l->pcfg);
    sc__append_all_stale(w, l, l->stale_ts_ms);
    sc_result r;
    memset(&r, 0, sizeof r);
    sc__report(w, l, l->stale_ts_ms, 0, &r, 0, 1);
    tsdb_append_result res;
    if (tsdb_head_app_commit(w->app, &res) == 0) atomic_fetch_add(&w->m->samples_appended, res.appended);
    all_remove(w, l);
    sc__loop_free(l);
}

static void cmd_start(sc_worker *w, sc_loop *l, int64_t now) {
    int64_t iv = l->interval_ms * 1000000LL;
    int64_t wn = wall_ns();
    int64_t base = iv - wn % iv;
    int64_t off = (int64_t)((l->thash ^ w->m->jitter) % (uint64_t)iv);
    int64_t next = base + off;
    if (next > iv) next -= iv;
    l->due_ns = now + next;
    l->state = SC_ST_WAITING;
    if (w->nall == w->capall) {
        size_t nc = w->capall ? w->capall * 2 : 64;
        sc_loop **a = realloc(w->all, nc * sizeof *a);
        if (!a) {
            sc__loop_free(l);
            return;
        }
        w->all = a;
        w->capall = nc;
    }
    w->all[w->nall++] = l;
    if (heap_push(w, l)) {
        all_remove(w, l);
        sc__loop_free(l);
    }
}

static void cmd_stop(sc_worker *w, sc_loop *l, int64_t now) {
    if (l->state == SC_ST_NEW) { /* never started: nothing to mark */
        sc__loop_free(l);
        return;
    }
    if (l->state == SC_ST_INFLIGHT) {
        curl_multi_remove_handle(w->multi, l->easy);
        l->state = SC_ST_WAITING;
        heap_push(w, l);
    }
    if (l->stop_mode == SC_STOP_TAKEOVER && l->takeover) {
        sc_loop *n = l->takeover;
        n->cache = l->cache;
        sc__cache_init(&l->cache);
        pthread_mutex_lock(&n->mu);
        pthread_mutex_lock(&l->mu);
        n->meta = l->meta;
        n->nmeta = l->nmeta;
        n->nmeta_b = l->nmeta_b;
        l->meta = NULL;
        l->nmeta = l->nmeta_b = 0;
        n->health = l->health;
        memcpy(n->last_error, l->last_error, sizeof n->last_error);
        n->last_scrape_ns = l->last_scrape_ns;
        n->last_duration_s = l->last_duration_s;
        pthread_mutex_unlock(&l->mu);
        pthread_mutex_unlock(&n->mu);
        n->aligned_ms = l->aligned_ms;
        n->last_ts_ms = l->last_ts_ms;
        n->ok_prev = l->ok_prev;
        memcpy(n->logged_err, l->logged_err, sizeof n->logged_err);
        drop_loop(w, l);
        return;
    }
    if (l->stop_mode == SC_STOP_STALE && l->last_ts_ms) {
        heap_remove(w, l);
        l->state = SC_ST_ENDING;
        l->ending_ticks = 0;
        if (l->due_ns <= now) l->due_ns = now + 1;
        heap_push(w, l);
        return;
    }
    drop_loop(w, l);
}

void sc__worker_cmd(sc_worker *w, int kind, sc_loop *l) {
    sc_cmd *c = calloc(1, sizeof *c);
    if (!c) return; /* the loop leaks into limbo: only when out of memory */
    c->kind = kind;
    c->l = l;
    pthread_mutex_lock(&w->mu);
    if (w->q_tail)
        w->q_tail->next = c;
    else
        w->q_head = c;
    w->q_tail = c;
    pthread_mutex_unlock(&w->mu);
    curl_multi_wakeup(w->multi);
}

static void *worker_main(void *arg) {
    sc_worker *w = arg;
    for (;;) {
        pthread_mutex_lock(&w->mu);
        sc_cmd *q = w->q_head;
        w->q_head = w->q_tail = NULL;
        int quit = w->quit;
        pthread_mutex_unlock(&w->mu);
        int64_t now = base_mono_ns();
        while (q) {
            sc_cmd *nx = q->next;
            if (q->kind == SC_CMD_START)
                cmd_start(w, q->l, now);
            else
                cmd_stop(w, q->l, now);
            free(q);
            q = nx;
        }
        if (quit) break;
        now = base_mono_ns();
        while (w->nheap && w->heap[0]->due_ns <= now) {
            sc_loop *l = w->heap[0];
            heap_remove(w, l);
            if (l->state == SC_ST_ENDING)
                end_of_run_tick(w, l, now);
            else
                start_scrape(w, l, now);
        }
        int running = 0;
        curl_multi_perform(w->multi, &running);
        CURLMsg *msg;
        int left;
        while ((msg = curl_multi_info_read(w->multi, &left))) {
            if (msg->msg != CURLMSG_DONE) continue;
            sc_loop *l = NULL;
            curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&l);
            if (l && l->state == SC_ST_INFLIGHT) transfer_done(w, l, msg->data.result);
        }
        now = base_mono_ns();
        int64_t wait_ms = 1000;
        if (w->nheap) {
            int64_t d = (w->heap[0]->due_ns - now + 999999) / 1000000;
            if (d < wait_ms) wait_ms = d < 0 ? 0 : d;
        }
        if (wait_ms > 0) curl_multi_poll(w->multi, NULL, 0, (int)wait_ms, NULL);
    }
    /* shutdown: no end-of-run markers */
    for (size_t i = 0; i < w->nall; i++) {
        sc_loop *l = w->all[i];
        if (l->state == SC_ST_INFLIGHT) {
            curl_multi_remove_handle(w->multi, l->easy);
            l->state = SC_ST_WAITING;
        }
        sc__loop_free(l);
    }
    w->nall = 0;
    w->nheap = 0;
    labels_thread_cleanup();
    return NULL;
}

int sc__worker_start(scrape_manager *m, sc_worker *w, char *err, size_t errlen) {
    w->m = m;
    pthread_mutex_init(&w->mu, NULL);
    labels_builder_init(&w->b);
    base_buf_init(&w->scratch, 0);
    base_buf_init(&w->inflate, 0);
    base_buf_init(&w->help, 0);
    if (!(w->multi = curl_multi_init()))
        return base_errf(err, errlen, BASE_E_NOMEM, "curl_multi_init failed");
    /* Loops hold an easy handle only while a scrape is in flight (see
     * transfer_done), so curl's default cache size (4 x the handles added)
     * would close most keep-alive connections between scrapes: keep one per
     * target instead (curl closes the oldest past this). */
    curl_multi_setopt(w->multi, CURLMOPT_MAXCONNECTS, 100000L);
    if (!(w->dec = libdeflate_alloc_decompressor()))
        return base_errf(err, errlen, BASE_E_NOMEM, "libdeflate_alloc_decompressor failed");
    int e = tsdb_head_app_new(m->head, &w->app);
    if (e) return base_errf(err, errlen, e, "tsdb appender: %s", base_strerror(e));
    if ((e = pthread_create(&w->th, NULL, worker_main, w)))
        return base_errf(err, errlen, BASE_E_NOMEM, "pthread_create: %s", strerror(e));
    w->started = 1;
    return 0;
}

void sc__worker_stop(sc_worker *w) {
    if (w->started) {
        pthread_mutex_lock(&w->mu);
        w->quit = 1;
        pthread_mutex_unlock(&w->mu);
        curl_multi_wakeup(w->multi);
        pthread_join(w->th, NULL);
        w->started = 0;
    }
    /* commands that arrived too late */
    sc_cmd *q = w->q_head;
    while (q) {
        sc_cmd *nx = q->next;
        if (q->kind == SC_CMD_START || q->l->state == SC_ST_NEW) sc__loop_free(q->l);
        free(q);
        q = nx;
    }
    w->q_head = w->q_tail = NULL;
    free(w->heap);
    free(w->all);
    w->heap = NULL;
    w->all = NULL;
    labels_builder_free(&w->b);
    base_buf_free(&w->scratch);
    base_buf_free(&w->inflate);
    base_buf_free(&w->help);
    free(w->voff);
    w->voff = NULL;
    free(w->seq);
    w->seq = NULL;
    w->nseq = w->capseq = 0;
    if (w->app) tsdb_head_app_free(w->app);
    w->app = NULL;
    if (w->dec) libdeflate_free_decompressor(w->dec);
    w->dec = NULL;
    if (w->multi) curl_multi_cleanup(w->multi);
    w->multi = NULL;
    pthread_mutex_destroy(&w->mu);
}
