/* rx.h -- test fixtures for the remote write sender (header-only, included
 * after <cmocka.h> by the tests in tests/unit/remote): a remote write receiver on
 * 127.0.0.1 written on plain sockets (HTTP/1.1 keep-alive, one thread per
 * connection) that decodes bodies with the generated protobuf-c unpacker
 * and keeps every series' samples; it answers a scripted status (the next
 * fail_n requests get fail_status, the rest `status`), can be slow
 * (delay_ms) and can go down (listener closed, connections cut) and come
 * back on the same port. Plus helpers: a database in a temp dir,
 * appending, configurations from YAML, waiting with a bound, and reading
 * a metric from remote_metrics.
 *
 * Every sample is checked as it arrives: a timestamp equal to the
 * series' last one counts as a duplicate, a smaller one as out of order;
 * labels must come sorted by name. */
#ifndef KELVIN_TESTS_REMOTE_RX_H
#define KELVIN_TESTS_REMOTE_RX_H

#include <arpa/inet.h>
#include <errno.h>
#include <ftw.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <snappy-c.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/time.h"
#include "config/config.h"
#include "expo/expo.h"
#include "labels/labels.h"
#include "remote/prompb.pb-c.h"
#include "remote/remote.h"
#include "tsdb/db.h"

#define RX_MAXCONN 256

typedef struct rx_series {
    char *key; /* name=value,name=value */
    int64_t *t;
    double *v;
    size_t n, cap;
} rx_series;

typedef struct rx_md {
    char *line; /* type|family|help|unit */
} rx_md;

typedef struct rx {
    int lfd;
    unsigned port;
    pthread_t acc;
    _Atomic int stop;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int want_down, want_up;
    int status, fail_n, fail_status, delay_ms;
    int no_store; /* answer without decoding (benchmarks) */
    char retry_after[32];
    int cfd[RX_MAXCONN];
    int cstate[RX_MAXCONN]; /* 0 free, 1 running, 2 finished (join before reuse) */
    pthread_t cth[RX_MAXCONN];
    rx_series *s;
    size_t ns, caps;
    rx_md *md;
    size_t nmd, capmd;
    uint64_t samples, dups, ooo, unsorted, requests, ok_requests, bad_bodies;
    int max_conns;
    char ua[128], ctype[128], cenc[64], version[64], custom[128];
} rx;

typedef struct rx_conn_arg {
    rx *r;
    int slot;
} rx_conn_arg;

static inline void rx__hdr(const char *h, size_t hl, const char *name, char *out, size_t outn) {
    size_t nl = strlen(name);
    for (const char *p = h; p < h + hl;) {
        const char *e = memmem(p, (size_t)(h + hl - p), "\r\n", 2);
        if (!e) e = h + hl;
        if ((size_t)(e - p) > nl + 1 && strncasecmp(p, name, nl) == 0 && p[nl] == ':') {
            const char *v = p + nl + 1;
            while (v < e && *v == ' ') v++;
            size_t n = (size_t)(e - v) < outn - 1 ? (size_t)(e - v) : outn - 1;
            memcpy(out, v, n);
            out[n] = '\0';
            return;
        }
        p = e + 2;
    }
}

static inline rx_series *rx__series(rx *r, const char *key) {
    for (size_t i = 0; i < r->ns; i++)
        if (!strcmp(r->s[i].key, key)) return &r->s[i];
    if (r->ns == r->caps) {
        r->caps = r->caps ? r->caps * 2 : 64;
        r->s = realloc(r->s, r->caps * sizeof *r->s);
    }
    rx_series *s = &r->s[r->ns++];
    memset(s, 0, sizeof *s);
    s->key = strdup(key);
    return s;
}

/* Decodes and stores a body (under r->mu). 0, or -1 when it is not a valid request. */
static inline int rx__store(rx *r, const char *body, size_t len) {
    size_t ul = 0;
    if (r->no_store) return 0;
    if (snappy_uncompressed_length(body, len, &ul) != SNAPPY_OK) return -1;
    char *u = malloc(ul ? ul : 1);
    if (snappy_uncompress(body, len, u, &ul) != SNAPPY_OK) {
        free(u);
        return -1;
    }
    Prometheus__WriteRequest *wr = prometheus__write_request__unpack(NULL, ul, (const uint8_t *)u);
    free(u);
    if (!wr) return -1;
    base_buf key;
    base_buf_init(&key, 0);
    for (size_t i = 0; i < wr->n_timeseries; i++) {
        Prometheus__TimeSeries *ts = wr->timeseries[i];
        base_buf_reset(&key);
        for (size_t k = 0; k < ts->n_labels; k++) {
            Prometheus__Label *l = ts->labels[k];
            if (k) {
                Prometheus__Label *p = ts->labels[k - 1];
                size_t m = p->name.len < l->name.len ? p->name.len : l->name.len;
                int c = m ? memcmp(p->name.data, l->name.data, m) : 0;
                if (c > 0 || (c == 0 && p->name.len >= l->name.len)) r->unsorted++;
                base_buf_putc(&key, ',');
            }
            base_buf_append(&key, l->name.data, l->name.len);
            base_buf_putc(&key, '=');
            base_buf_append(&key, l->value.data, l->value.len);
        }
        rx_series *s = rx__series(r, key.data ? key.data : "");
        for (size_t k = 0; k < ts->n_samples; k++) {
            int64_t t = ts->samples[k]->timestamp;
            if (s->n && t == s->t[s->n - 1])
                r->dups++, fprintf(stderr, "DUP %s t=%lld n=%zu\n", s->key, (long long)t, s->n);
            if (s->n && t < s->t[s->n - 1]) r->ooo++;
            if (s->n == s->cap) {
                s->cap = s->cap ? s->cap * 2 : 16;
                s->t = realloc(s->t, s->cap * sizeof *s->t);
                s->v = realloc(s->v, s->cap * sizeof *s->v);
            }
            s->t[s->n] = t;
            s->v[s->n++] = ts->samples[k]->value;
            r->samples++;
        }
    }
    for (size_t i = 0; i < wr->n_metadata; i++) {
        Prometheus__MetricMetadata *m = wr->metadata[i];
        base_buf_reset(&key);
        base_buf_printf(&key, "%d|%.*s|%.*s|%.*s", (int)m->type, (int)m->metric_family_name.len,
                        (const char *)m->metric_family_name.data, (int)m->help.len,
                        (const char *)m->help.data, (int)m->unit.len, (const char *)m->unit.data);
        if (r->nmd == r->capmd) {
            r->capmd = r->capmd ? r->capmd * 2 : 16;
            r->md = realloc(r->md, r->capmd * sizeof *r->md);
        }
        r->md[r->nmd++].line = strdup(key.data);
    }
    base_buf_free(&key);
    prometheus__write_request__free_unpacked(wr, NULL);
    return 0;
}

static inline int rx__send_all(int fd, const char *p, size_t n) {
    while (n) {
        ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
        if (k <= 0) return -1;
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

static inline void *rx__conn(void *arg) {
    rx_conn_arg *a = arg;
    rx *r = a->r;
    int slot = a->slot;
    free(a);
    pthread_mutex_lock(&r->mu);
    int fd = r->cfd[slot];
    pthread_mutex_unlock(&r->mu);
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    for (;;) {
        char *he = len ? memmem(buf, len, "\r\n\r\n", 4) : NULL;
        if (!he) {
            if (len == cap) buf = realloc(buf, cap *= 2);
            ssize_t k = recv(fd, buf + len, cap - len, 0);
            if (k <= 0) break;
            len += (size_t)k;
            continue;
        }
        size_t hl = (size_t)(he - buf) + 4;
        char cl[32] = "0", ua[128] = "", ct[128] = "", ce[64] = "", ver[64] = "", cu[128] = "";
        rx__hdr(buf, hl, "Content-Length", cl, sizeof cl);
        rx__hdr(buf, hl, "User-Agent", ua, sizeof ua);
        rx__hdr(buf, hl, "Content-Type", ct, sizeof ct);
        rx__hdr(buf, hl, "Content-Encoding", ce, sizeof ce);
        rx__hdr(buf, hl, "X-Prometheus-Remote-Write-Version", ver, sizeof ver);
        rx__hdr(buf, hl, "X-Test", cu, sizeof cu);
        size_t bl = (size_t)strtoull(cl, NULL, 10);
        while (len < hl + bl) {
            if (len == cap) buf = realloc(buf, cap *= 2);
            ssize_t k = recv(fd, buf + len, cap - len, 0);
            if (k <= 0) goto out;
            len += (size_t)k;
        }
        pthread_mutex_lock(&r->mu);
        r->requests++;
        snprintf(r->ua, sizeof r->ua, "%s", ua);
        snprintf(r->ctype, sizeof r->ctype, "%s", ct);
        snprintf(r->cenc, sizeof r->cenc, "%s", ce);
        snprintf(r->version, sizeof r->version, "%s", ver);
        snprintf(r->custom, sizeof r->custom, "%s", cu);
        int status = r->status;
        if (r->fail_n > 0) {
            r->fail_n--;
            status = r->fail_status;
        }
        int delay = r->delay_ms;
        char ra[32];
        snprintf(ra, sizeof ra, "%s", r->retry_after);
        pthread_mutex_unlock(&r->mu);
        if (delay) usleep((useconds_t)delay * 1000);
        pthread_mutex_lock(&r->mu);
        if (status / 100 == 2) {
            if (rx__store(r, buf + hl, bl) != 0) {
                r->bad_bodies++;
                status = 400;
            } else {
                r->ok_requests++;
            }
        }
        pthread_cond_broadcast(&r->cv);
        pthread_mutex_unlock(&r->mu);
        char resp[256];
        const char *body = status / 100 == 2 ? "" : "boom\nsecond line\n";
        int n = snprintf(resp, sizeof resp, "HTTP/1.1 %d %s\r\nContent-Length: %zu\r\n%s%s%s\r\n%s", status,
                         status / 100 == 2 ? "No Content" : "Trouble", strlen(body),
                         ra[0] && status == 429 ? "Retry-After: " : "", ra[0] && status == 429 ? ra : "",
                         ra[0] && status == 429 ? "\r\n" : "", body);
        if (rx__send_all(fd, resp, (size_t)n) != 0) break;
        memmove(buf, buf + hl + bl, len - hl - bl);
        len -= hl + bl;
    }
out:
    free(buf);
    pthread_mutex_lock(&r->mu);
    close(fd);
    r->cfd[slot] = -1;
    r->cstate[slot] = 2;
    pthread_mutex_unlock(&r->mu);
    return NULL;
}

static inline int rx__listen(unsigned port) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(fd, 64) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static inline void rx__cut(rx *r) {
    for (int i = 0; i < RX_MAXCONN; i++)
        if (r->cstate[i] == 1 && r->cfd[i] >= 0) shutdown(r->cfd[i], SHUT_RDWR);
}

static inline void *rx__accept(void *arg) {
    rx *r = arg;
    while (!atomic_load(&r->stop)) {
        pthread_mutex_lock(&r->mu);
        if (r->want_down && r->lfd >= 0) {
            close(r->lfd);
            r->lfd = -1;
            rx__cut(r);
            r->want_down = 0;
            pthread_cond_broadcast(&r->cv);
        }
        if (r->want_up && r->lfd < 0) {
            for (int i = 0; i < 100 && r->lfd < 0; i++) {
                r->lfd = rx__listen(r->port);
                if (r->lfd < 0) usleep(10000);
            }
            r->want_up = 0;
            pthread_cond_broadcast(&r->cv);
        }
        int lfd = r->lfd;
        pthread_mutex_unlock(&r->mu);
        if (lfd < 0) {
            usleep(10000);
            continue;
        }
        struct pollfd p = {.fd = lfd, .events = POLLIN};
        if (poll(&p, 1, 20) <= 0) continue;
        int c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
        if (c < 0) continue;
        pthread_mutex_lock(&r->mu);
        int slot = -1, running = 0;
        for (int i = 0; i < RX_MAXCONN; i++) {
            if (r->cstate[i] == 2) {
                pthread_join(r->cth[i], NULL);
                r->cstate[i] = 0;
            }
            if (r->cstate[i] == 0 && slot < 0) slot = i;
            running += r->cstate[i] == 1;
        }
        if (slot < 0) {
            close(c);
        } else {
            r->cfd[slot] = c;
            r->cstate[slot] = 1;
            if (running + 1 > r->max_conns) r->max_conns = running + 1;
            rx_conn_arg *a = malloc(sizeof *a);
            a->r = r;
            a->slot = slot;
            pthread_create(&r->cth[slot], NULL, rx__conn, a);
        }
        pthread_mutex_unlock(&r->mu);
    }
    return NULL;
}

/* A free port on 127.0.0.1 (for a receiver started later). */
static inline unsigned rx_free_port(void) {
    int fd = rx__listen(0);
    assert_true(fd >= 0);
    struct sockaddr_in a;
    socklen_t al = sizeof a;
    getsockname(fd, (struct sockaddr *)&a, &al);
    close(fd);
    return ntohs(a.sin_port);
}

/* Starts a receiver on port (0: any). */
static inline void rx_start_on(rx *r, unsigned port) {
    memset(r, 0, sizeof *r);
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->cv, NULL);
    r->status = 204;
    for (int i = 0; i < RX_MAXCONN; i++) r->cfd[i] = -1;
    r->lfd = rx__listen(port);
    assert_true(r->lfd >= 0);
    struct sockaddr_in a;
    socklen_t al = sizeof a;
    getsockname(r->lfd, (struct sockaddr *)&a, &al);
    r->port = ntohs(a.sin_port);
    pthread_create(&r->acc, NULL, rx__accept, r);
}

static inline void rx_start(rx *r) {
    rx_start_on(r, 0);
}

/* Closes the listener and cuts every connection (returns once done). */
static inline void rx_down(rx *r) {
    pthread_mutex_lock(&r->mu);
    r->want_down = 1;
    while (r->want_down) pthread_cond_wait(&r->cv, &r->mu);
    pthread_mutex_unlock(&r->mu);
}

static inline void rx_up(rx *r) {
    pthread_mutex_lock(&r->mu);
    r->want_up = 1;
    while (r->want_up) pthread_cond_wait(&r->cv, &r->mu);
    int ok = r->lfd >= 0;
    pthread_mutex_unlock(&r->mu);
    assert_true(ok);
}

static inline void rx_script(rx *r, int status, int fail_n, int fail_status, const char *retry_after) {
    pthread_mutex_lock(&r->mu);
    r->status = status;
    r->fail_n = fail_n;
    r->fail_status = fail_status;
    snprintf(r->retry_after, sizeof r->retry_after, "%s", retry_after ? retry_after : "");
    pthread_mutex_unlock(&r->mu);
}

static inline void rx_stop(rx *r) {
    atomic_store(&r->stop, 1);
    pthread_join(r->acc, NULL);
    pthread_mutex_lock(&r->mu);
    if (r->lfd >= 0) close(r->lfd);
    rx__cut(r);
    pthread_mutex_unlock(&r->mu);
    for (int i = 0; i < RX_MAXCONN; i++)
        if (r->cstate[i]) pthread_join(r->cth[i], NULL);
    for (size_t i = 0; i < r->ns; i++) {
        free(r->s[i].key);
        free(r->s[i].t);
        free(r->s[i].v);
    }
    free(r->s);
    for (size_t i = 0; i < r->nmd; i++) free(r->md[i].line);
    free(r->md);
    pthread_cond_destroy(&r->cv);
    pthread_mutex_destroy(&r->mu);
}

static inline uint64_t rx_samples(rx *r) {
    pthread_mutex_lock(&r->mu);
    uint64_t n = r->samples;
    pthread_mutex_unlock(&r->mu);
    return n;
}

/* Waits (bounded) until the receiver holds at least n samples: 1 if so. */
static inline int rx_wait_samples(rx *r, uint64_t n, int ms) {
    int64_t end = base_mono_ns() + (int64_t)ms * 1000000;
    pthread_mutex_lock(&r->mu);
    while (r->samples < n && base_mono_ns() < end) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 20 * 1000000;
        if (ts.tv_nsec >= 1000000000) ts.tv_sec++, ts.tv_nsec -= 1000000000;
        pthread_cond_timedwait(&r->cv, &r->mu, &ts);
    }
    int ok = r->samples >= n;
    pthread_mutex_unlock(&r->mu);
    return ok;
}

/* The series with this key, or NULL (call with no sender running, or
 * accept a snapshot that may move). */
static inline const rx_series *rx_find(rx *r, const char *key) {
    for (size_t i = 0; i < r->ns; i++)
        if (!strcmp(r->s[i].key, key)) return &r->s[i];
    return NULL;
}

/* ---- helpers ------------------------------------------------------------------ */

static inline int rx__rm_cb(const char *p, const struct stat *sb, int flag, struct FTW *f) {
    (void)sb, (void)flag, (void)f;
    return remove(p);
}

static inline void rx_rm_rf(const char *p) {
    nftw(p, rx__rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

static inline char *rx_tmpdir(void) {
    char *d = strdup("/tmp/kelvin-remote-XXXXXX");
    assert_non_null(mkdtemp(d));
    return d;
}

static inline tsdb_db *rx_db_open(const char *dir, uint64_t seg_size, uint64_t hold_from) {
    tsdb_db_opts o;
    tsdb_db_opts_default(&o);
    o.path = dir;
    o.maintain_interval_ms = -1;
    o.wal.segment_size = seg_size;
    o.wal.hold_from = hold_from;
    tsdb_db *db = NULL;
    char err[256] = "";
    if (tsdb_db_open(&o, &db, NULL, err, sizeof err) != 0) fail_msg("tsdb_db_open: %s", err);
    return db;
}

static inline cfg_config *rx_cfg(const char *fmt, ...) {
    char yaml[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(yaml, sizeof yaml, fmt, ap);
    va_end(ap);
    cfg_config *c = NULL;
    char err[512] = "";
    if (cfg_load_buf(yaml, strlen(yaml), "test.yml", NULL, &c, err, sizeof err) != 0)
        fail_msg("config: %s", err);
    return c;
}

/* Appends one sample to series {__name__=name, i=<i>, plus extra pairs}. */
static inline void rx_append(tsdb_db *db, const char *name, int i, const char *k2, const char *v2, int64_t t,
                             double v) {
    char iv[16];
    snprintf(iv, sizeof iv, "%d", i);
    labels_set *ls = NULL;
    if (k2)
        assert_int_equal(labels_from_cstrs(&ls, "__name__", name, "i", iv, k2, v2, NULL), 0);
    else
        assert_int_equal(labels_from_cstrs(&ls, "__name__", name, "i", iv, NULL), 0);
    tsdb_head_app *a = NULL;
    assert_int_equal(tsdb_head_app_new(tsdb_db_head(db), &a), 0);
    assert_int_equal(tsdb_head_app_add(a, ls, t, v), 0);
    tsdb_append_result res;
    assert_int_equal(tsdb_head_app_commit(a, &res), 0);
    assert_int_equal(res.appended, 1);
    tsdb_head_app_free(a);
    labels_unref(ls);
}

/* One commit: n series "name" i = 0..n-1 at time t, value base + i. */
static inline void rx_append_round(tsdb_db *db, const char *name, int n, int64_t t, double base) {
    tsdb_head_app *a = NULL;
    assert_int_equal(tsdb_head_app_new(tsdb_db_head(db), &a), 0);
    for (int i = 0; i < n; i++) {
        char iv[16];
        snprintf(iv, sizeof iv, "%d", i);
        labels_set *ls = NULL;
        assert_int_equal(labels_from_cstrs(&ls, "__name__", name, "i", iv, NULL), 0);
        assert_int_equal(tsdb_head_app_add(a, ls, t, base + i), 0);
        labels_unref(ls);
    }
    tsdb_append_result res;
    assert_int_equal(tsdb_head_app_commit(a, &res), 0);
    assert_int_equal(res.appended, (uint64_t)n);
    tsdb_head_app_free(a);
}

/* The sum of a metric's samples (all label sets) in remote_metrics. */
static inline double rx_metric(remote_manager *m, const char *name) {
    expo_mset ms;
    expo_mset_init(&ms);
    remote_metrics(m, &ms);
    expo_mset *sets[1] = {&ms};
    base_buf out;
    base_buf_init(&out, 0);
    expo_write(sets, 1, EXPO_FMT_TEXT, &out);
    double sum = 0;
    size_t nl = strlen(name);
    for (char *p = out.data; p && *p;) {
        char *e = strchr(p, '\n');
        if (!e) break;
        if (!strncmp(p, name, nl) && (p[nl] == ' ' || p[nl] == '{')) {
            char *sp = e;
            while (sp > p && sp[-1] != ' ') sp--;
            sum += strtod(sp, NULL);
        }
        p = e + 1;
    }
    base_buf_free(&out);
    expo_mset_free(&ms);
    return sum;
}

/* Optional settings for rx_manager. */
static int64_t rx_reshard_ms;
static remote_manager *rx_live_m; /* the running manager, for teardown after a failure */
static remote_metadata_source rx_md_fn;
static void *rx_md_ctx;

static inline remote_manager *rx_manager(tsdb_db *db, const char *dir, const cfg_config *c, int64_t flush_ms,
                                         int64_t max_hold_ms) {
    remote_opts o;
    remote_opts_default(&o);
    o.reshard_interval_ms = rx_reshard_ms;
    o.metadata = rx_md_fn;
    o.metadata_ctx = rx_md_ctx;
    o.data_dir = dir;
    o.db = db;
    o.poll_ms = 10;
    o.flush_deadline_ms = flush_ms;
    o.max_hold_ms = max_hold_ms;
    remote_manager *m = NULL;
    char err[256] = "";
    if (remote_manager_new(&o, &m, err, sizeof err) != 0) fail_msg("remote_manager_new: %s", err);
    if (c && remote_manager_apply(m, c, err, sizeof err) != 0) fail_msg("apply: %s", err);
    rx_live_m = m;
    return m;
}

static inline void rx_manager_free(remote_manager *m) {
    remote_manager_free(m);
    if (m == rx_live_m) rx_live_m = NULL;
}

/* Waits (bounded) until metric >= v: 1 if so. */
static inline int rx_wait_metric(remote_manager *m, const char *name, double v, int ms) {
    int64_t end = base_mono_ns() + (int64_t)ms * 1000000;
    while (rx_metric(m, name) < v) {
        if (base_mono_ns() >= end) return 0;
        usleep(20000);
    }
    return 1;
}

#endif
