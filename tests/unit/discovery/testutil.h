/* testutil.h -- shared pieces of the discovery unit tests (header-only,
 * included after <cmocka.h>):
 *  - rec: a disc_sink that keeps, per set, the last groups it was given,
 *    rendered as text (one line per group: "source {labels} {t1} {t2}..."),
 *    and the number of calls; rec_wait() waits (bounded) for a text;
 *  - tcfg: a cfg_config built by hand (jobs with static/file/dns/http
 *    discovery), freed with tcfg_free;
 *  - scratch directories and file writing.
 */
#ifndef KELVIN_TESTS_DISCOVERY_TESTUTIL_H
#define KELVIN_TESTS_DISCOVERY_TESTUTIL_H

#include <ftw.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/time.h"
#include "config/config.h"
#include "discovery/discovery.h"

#define REC_MAX_SETS 16

typedef struct rec_set {
    char name[64];
    char *text;
    int calls;
    size_t n;
} rec_set;

typedef struct rec {
    pthread_mutex_t mu;
    rec_set sets[REC_MAX_SETS];
    size_t nsets;
} rec;

static inline void rec_init(rec *r) {
    memset(r, 0, sizeof *r);
    pthread_mutex_init(&r->mu, NULL);
}

static inline void rec_free(rec *r) {
    for (size_t i = 0; i < r->nsets; i++) free(r->sets[i].text);
    pthread_mutex_destroy(&r->mu);
}

static inline char *groups_text(const disc_group *const *g, size_t n) {
    base_buf b = BASE_BUF_INIT;
    base_buf_init(&b, 0);
    base_buf_puts(&b, "");
    for (size_t i = 0; i < n; i++) {
        base_buf_puts(&b, g[i]->source);
        base_buf_putc(&b, ' ');
        labels_format(g[i]->labels, &b);
        for (size_t j = 0; j < g[i]->ntargets; j++) {
            base_buf_putc(&b, ' ');
            labels_format(g[i]->targets[j], &b);
        }
        base_buf_putc(&b, '\n');
    }
    size_t len;
    char *s = base_buf_steal(&b, &len);
    return s ? s : strdup("");
}

static inline void rec_sink(void *ctx, const char *set, const disc_group *const *g, size_t n) {
    rec *r = ctx;
    char *t = groups_text(g, n);
    pthread_mutex_lock(&r->mu);
    rec_set *s = NULL;
    for (size_t i = 0; i < r->nsets; i++)
        if (strcmp(r->sets[i].name, set) == 0) s = &r->sets[i];
    if (!s && r->nsets < REC_MAX_SETS) {
        s = &r->sets[r->nsets++];
        snprintf(s->name, sizeof s->name, "%s", set);
    }
    if (s) {
        free(s->text);
        s->text = t;
        s->calls++;
        s->n = n;
    } else {
        free(t);
    }
    pthread_mutex_unlock(&r->mu);
}

/* A copy of set's last text (NULL if never called); calls in *ret_calls. */
static inline char *rec_get(rec *r, const char *set, int *ret_calls) {
    char *t = NULL;
    int calls = 0;
    pthread_mutex_lock(&r->mu);
    for (size_t i = 0; i < r->nsets; i++)
        if (strcmp(r->sets[i].name, set) == 0) {
            t = strdup(r->sets[i].text ? r->sets[i].text : "");
            calls = r->sets[i].calls;
        }
    pthread_mutex_unlock(&r->mu);
    if (ret_calls) *ret_calls = calls;
    return t;
}

static inline int rec_calls(rec *r, const char *set) {
    int c;
    free(rec_get(r, set, &c));
    return c;
}

static inline void sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Waits up to timeout_ms for set's text to equal want; 1 if it did.
 * Prints the last text seen when it did not. */
static inline int rec_wait(rec *r, const char *set, const char *want, int timeout_ms) {
    int64_t end = base_mono_ns() + (int64_t)timeout_ms * 1000000;
    char *t = NULL;
    for (;;) {
        free(t);
        t = rec_get(r, set, NULL);
        if (t && strcmp(t, want) == 0) {
            free(t);
            return 1;
        }
        if (base_mono_ns() > end) break;
        sleep_ms(10);
    }
    fprintf(stderr, "set %s: want\n%s---- got\n%s----\n", set, want, t ? t : "(never called)\n");
    free(t);
    return 0;
}

/* ---- hand-built configurations ---- */

typedef struct tcfg {
    cfg_config c;
} tcfg;

static inline tcfg *tcfg_new(void) {
    tcfg *t = calloc(1, sizeof *t);
    assert_non_null(t);
    return t;
}

static inline cfg_sd *tcfg_job(tcfg *t, const char *name) {
    cfg_scrape *s = realloc(t->c.scrapes, (t->c.nscrapes + 1) * sizeof *s);
    assert_non_null(s);
    t->c.scrapes = s;
    cfg_scrape *j = &s[t->c.nscrapes++];
    memset(j, 0, sizeof *j);
    j->job_name = strdup(name);
    return &j->sd;
}

static inline cfg_sd *tcfg_am(tcfg *t) {
    cfg_alertmanager *a = realloc(t->c.alerting.ams, (t->c.alerting.nams + 1) * sizeof *a);
    assert_non_null(a);
    t->c.alerting.ams = a;
    cfg_alertmanager *x = &a[t->c.alerting.nams++];
    memset(x, 0, sizeof *x);
    return &x->sd;
}

static inline char **strv(const char *const *v, size_t *ret_n) {
    size_t n = 0;
    while (v[n]) n++;
    char **r = calloc(n + 1, sizeof *r);
    assert_non_null(r);
    for (size_t i = 0; i < n; i++) r[i] = strdup(v[i]);
    *ret_n = n;
    return r;
}

/* targets and labels: NULL-terminated; labels as name, value, ... */
static inline void tcfg_static(cfg_sd *sd, const char *const *targets, const char *const *labels) {
    cfg_static *s = realloc(sd->statics, (sd->nstatics + 1) * sizeof *s);
    assert_non_null(s);
    sd->statics = s;
    cfg_static *x = &s[sd->nstatics++];
    memset(x, 0, sizeof *x);
    x->targets = strv(targets, &x->ntargets);
    size_t n = 0;
    while (labels && labels[n]) n++;
    x->labels.n = n / 2;
    x->labels.v = calloc(n / 2 + 1, sizeof *x->labels.v);
    for (size_t i = 0; i < n / 2; i++) {
        x->labels.v[i].name = strdup(labels[2 * i]);
        x->labels.v[i].value = strdup(labels[2 * i + 1]);
    }
}

static inline void tcfg_file(cfg_sd *sd, const char *const *files, int64_t refresh_ms) {
    cfg_file_sd *f = realloc(sd->files, (sd->nfiles + 1) * sizeof *f);
    assert_non_null(f);
    sd->files = f;
    cfg_file_sd *x = &f[sd->nfiles++];
    memset(x, 0, sizeof *x);
    x->files = strv(files, &x->nfiles);
    x->refresh_interval_ms = refresh_ms;
}

static inline void tcfg_dns(cfg_sd *sd, const char *const *names, cfg_dns_type type, unsigned port,
                            int64_t refresh_ms) {
    cfg_dns_sd *d = realloc(sd->dns, (sd->ndns + 1) * sizeof *d);
    assert_non_null(d);
    sd->dns = d;
    cfg_dns_sd *x = &d[sd->ndns++];
    memset(x, 0, sizeof *x);
    x->names = strv(names, &x->nnames);
    x->type = type;
    x->port = port;
    x->refresh_interval_ms = refresh_ms;
}

static inline cfg_http_sd *tcfg_http(cfg_sd *sd, const char *url, int64_t refresh_ms) {
    cfg_http_sd *h = realloc(sd->https, (sd->nhttps + 1) * sizeof *h);
    assert_non_null(h);
    sd->https = h;
    cfg_http_sd *x = &h[sd->nhttps++];
    memset(x, 0, sizeof *x);
    x->url = strdup(url);
    x->refresh_interval_ms = refresh_ms;
    x->http.follow_redirects = 1;
    x->http.enable_http2 = 1;
    return x;
}

static inline void tstrv_free(char **v, size_t n) {
    for (size_t i = 0; i < n; i++) free(v[i]);
    free(v);
}

static inline void tcfg_sd_free(cfg_sd *sd) {
    for (size_t i = 0; i < sd->nstatics; i++) {
        tstrv_free(sd->statics[i].targets, sd->statics[i].ntargets);
        for (size_t j = 0; j < sd->statics[i].labels.n; j++) {
            free(sd->statics[i].labels.v[j].name);
            free(sd->statics[i].labels.v[j].value);
        }
        free(sd->statics[i].labels.v);
    }
    free(sd->statics);
    for (size_t i = 0; i < sd->nfiles; i++) tstrv_free(sd->files[i].files, sd->files[i].nfiles);
    free(sd->files);
    for (size_t i = 0; i < sd->ndns; i++) tstrv_free(sd->dns[i].names, sd->dns[i].nnames);
    free(sd->dns);
    for (size_t i = 0; i < sd->nhttps; i++) {
        cfg_http *h = &sd->https[i].http;
        free(sd->https[i].url);
        free(h->basic_auth_username);
        free(h->basic_auth_password);
        free(h->basic_auth_password_file);
        free(h->auth_type);
        free(h->auth_credentials);
        free(h->auth_credentials_file);
    }
    free(sd->https);
}

static inline void tcfg_free(tcfg *t) {
    if (!t) return;
    for (size_t i = 0; i < t->c.nscrapes; i++) {
        free(t->c.scrapes[i].job_name);
        tcfg_sd_free(&t->c.scrapes[i].sd);
    }
    free(t->c.scrapes);
    for (size_t i = 0; i < t->c.alerting.nams; i++) tcfg_sd_free(&t->c.alerting.ams[i].sd);
    free(t->c.alerting.ams);
    free(t);
}

/* ---- files ---- */

static inline int tu_rm_cb(const char *p, const struct stat *sb, int flag, struct FTW *f) {
    (void)sb;
    (void)flag;
    (void)f;
    return remove(p);
}

static inline void tu_rm_rf(const char *p) {
    nftw(p, tu_rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

static inline char *tu_tmpdir(void) {
    char *d = strdup("/tmp/kelvin-disc-XXXXXX");
    assert_non_null(d);
    assert_non_null(mkdtemp(d));
    return d;
}

static inline char *tu_path(const char *dir, const char *name) {
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = malloc(n);
    assert_non_null(p);
    snprintf(p, n, "%s/%s", dir, name);
    return p;
}

/* Writes the file in place (truncate and write). */
static inline void tu_write(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    assert_int_equal(fwrite(text, 1, strlen(text), f), strlen(text));
    assert_int_equal(fclose(f), 0);
}

/* Writes a temporary file next to path and renames it over path. */
static inline void tu_write_rename(const char *path, const char *text) {
    size_t n = strlen(path) + 8;
    char *tmp = malloc(n);
    assert_non_null(tmp);
    snprintf(tmp, n, "%s.tmp~", path);
    tu_write(tmp, text);
    assert_int_equal(rename(tmp, path), 0);
    free(tmp);
}

#endif
