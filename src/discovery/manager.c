/* manager.c -- the discovery manager: one thread runs every provider of
 * every set and tells the sink what each set's groups are.
 *
 * THREAD. Everything below `struct disc_manager`'s mutex-protected fields
 * (sets, providers, the inotify table, the curl multi handle) belongs to
 * the manager thread alone. Other threads talk to it through three things
 * under `mu`: `pending` (a plan from disc_manager_apply), `stop`, and
 * `pub` (the stats); curl_multi_wakeup() interrupts its wait. One loop
 * iteration:
 *     adopt a pending plan (merge) -> start new providers -> run due
 *     refreshes (file and DNS synchronously; HTTP starts a transfer on the
 *     multi handle) -> drive curl, finish transfers -> send sets that are
 *     due -> publish stats -> curl_multi_poll(inotify fd, next deadline).
 * DNS lookups block the thread (bounded by dns.c's timeouts, about 4 s per
 * server and candidate name); shutdown waits at most for one of them.
 *
 * APPLY. disc_manager_apply() turns the configuration into a plan on the
 * caller's thread: sets, and per set unstarted providers that own copies
 * of their configuration plus a `key` (their configuration serialized).
 * So the caller's cfg_config is not used after apply returns. The thread
 * merges the plan: a provider of the same set with an equal key is kept
 * (with its groups, timers and watches), the others are stopped; sets that
 * are gone get a last sink call with no groups.
 *
 * PROVIDERS. static: one provider for all static_configs of a set, groups
 * built at apply. file: one per file_sd_configs entry; keeps a sorted list
 * of files, each with its last good groups and last error; inotify
 * watches the directories (shared, reference counted) for renames,
 * deletions and closed writes (IN_MODIFY is ignored so a half-written
 * file is not read); any event in a watched directory schedules a refresh
 * 20 ms later (so a burst of events costs one); a refresh re-globs and
 * re-reads every file. dns: one per dns_sd_configs entry, a group per
 * name. http: one per http_sd_configs entry, a transfer on the multi
 * handle at a time.
 *
 * SENDING. A set is `dirty` when a provider's groups changed; it is sent
 * when dirty and either `urgent` (a new set, a provider's first result, a
 * provider set changed by apply) or update_interval since the last send.
 *
 * Invariants: a provider's groups are replaced only by a successful
 * refresh (a failed one keeps them); a started provider is in exactly one
 * set; a watch entry's refs counts the provider patterns that hold it.
 */
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/log.h"
#include "base/time.h"
#include "discovery/discovery_int.h"
#include "discovery/httpc.h"

#define EVENT_DELAY_NS  (20 * 1000000LL)
#define MAX_WAIT_MS     1000
#define HTTP_TIMEOUT_MS 30000

/* ------------------------------------------------------------------ */
/* Types                                                              */
/* ------------------------------------------------------------------ */

typedef struct wdir {
    char *dir;
    int wd; /* -1: not watched (yet, or any more) */
    int refs;
} wdir;

typedef struct fentry {
    char *path;
    disc_group **g;
    size_t n;
    char *last_err; /* the problem logged last, NULL when fine */
} fentry;

typedef struct dset dset;

typedef struct prov {
    int kind;
    char *key;
    size_t keylen;
    dset *set;
    int started, have_first, taken;
    int64_t interval_ns;
    int64_t next_ns; /* next refresh; 0: none scheduled */
    /* static */
    disc_group **sg;
    size_t nsg;
    /* file */
    char **pats;
    size_t npats;
    wdir **wds; /* per pattern */
    fentry *fe;
    size_t nfe;
    int too_many_logged;
    /* dns */
    char **names;
    size_t nnames;
    cfg_dns_type dtype;
    unsigned port;
    disc_group **dg; /* per name, NULL until a lookup worked */
    char **dns_err;  /* per name */
    /* http */
    char *url;
    cfg_http http;
    CURL *easy;
    struct curl_slist *hdrs;
    base_buf body;
    int inflight;
    int body_too_big;
    disc_group **hg;
    size_t nhg;
    char *http_err;
    char curl_err[CURL_ERROR_SIZE];
} prov;

struct dset {
    char *name;
    prov **provs;
    size_t nprovs;
    int dirty, urgent;
    int64_t last_sent_ns;
};

typedef struct plan {
    dset **sets;
    size_t nsets;
} plan;

struct disc_manager {
    disc_opts o;
    int64_t interval_ns;
    char *dns_server;
    pthread_t th;
    int have_thread;

    pthread_mutex_t mu;
    int stop;       /* under mu */
    plan *pending;  /* under mu */
    disc_stats pub; /* under mu */

    /* manager thread only */
    dset **sets;
    size_t nsets;
    CURLM *multi;
    int ifd;
    wdir **wds;
    size_t nwds;
    unsigned long long refreshes[4], failures[4];
};

/* ------------------------------------------------------------------ */
/* Small helpers                                                      */
/* ------------------------------------------------------------------ */

static int is_stopping(disc_manager *m) {
    pthread_mutex_lock(&m->mu);
    int s = m->stop;
    pthread_mutex_unlock(&m->mu);
    return s;
}

static void key_str(base_buf *k, const char *s) {
    if (!s) {
        base_buf_puts(k, "-;");
        return;
    }
    base_buf_printf(k, "%zu:", strlen(s));
    base_buf_puts(k, s);
    base_buf_putc(k, ';');
}

static void key_int(base_buf *k, long long v) {
    base_buf_printf(k, "%lld;", v);
}

static void strv_free(char **v, size_t n) {
    if (!v) return;
    for (size_t i = 0; i < n; i++) free(v[i]);
    free(v);
}

static char **strv_copy(char *const *v, size_t n) {
    char **r = calloc(n ? n : 1, sizeof *r);
    if (!r) return NULL;
    for (size_t i = 0; i < n; i++) {
        r[i] = strdup(v[i] ? v[i] : "");
        if (!r[i]) {
            strv_free(r, i);
            return NULL;
        }
    }
    return r;
}

/* Replaces *slot with a copy of msg; 1 if it differs from what was there
 * (the problem is new and should be logged). */
static int note_err(char **slot, const char *msg) {
    if (*slot && strcmp(*slot, msg) == 0) return 0;
    free(*slot);
    *slot = strdup(msg);
    return 1;
}

static void clear_err(char **slot) {
    free(*slot);
    *slot = NULL;
}

/* ------------------------------------------------------------------ */
/* Watches                                                            */
/* ------------------------------------------------------------------ */

static wdir *wd_ref(disc_manager *m, const char *dir) {
    for (size_t i = 0; i < m->nwds; i++)
        if (strcmp(m->wds[i]->dir, dir) == 0) {
            m->wds[i]->refs++;
            return m->wds[i];
        }
    wdir **nw = realloc(m->wds, (m->nwds + 1) * sizeof *nw);
    if (!nw) return NULL;
    m->wds = nw;
    wdir *w = calloc(1, sizeof *w);
    if (!w) return NULL;
    w->dir = strdup(dir);
    if (!w->dir) {
        free(w);
        return NULL;
    }
    w->wd = -1;
    w->refs = 1;
    m->wds[m->nwds++] = w;
    return w;
}

static void wd_unref(disc_manager *m, wdir *w) {
    if (!w || --w->refs > 0) return;
    if (w->wd >= 0 && m->ifd >= 0) inotify_rm_watch(m->ifd, w->wd);
    for (size_t i = 0; i < m->nwds; i++)
        if (m->wds[i] == w) {
            m->wds[i] = m->wds[--m->nwds];
            break;
        }
    free(w->dir);
    free(w);
}

static void wd_ensure(disc_manager *m, wdir *w) {
    if (w->wd >= 0 || m->ifd < 0) return;
    w->wd = inotify_add_watch(m->ifd, w->dir,
                              IN_CREATE | IN_DELETE | IN_CLOSE_WRITE | IN_MOVED_FROM | IN_MOVED_TO |
                                  IN_DELETE_SELF | IN_MOVE_SELF | IN_ATTRIB);
    if (w->wd >= 0) {
        /* two table entries never share a wd (a dir renamed onto another) */
        for (size_t i = 0; i < m->nwds; i++)
            if (m->wds[i] != w && m->wds[i]->wd == w->wd) m->wds[i]->wd = -1;
    }
}

/* ------------------------------------------------------------------ */
/* Providers: construction (caller's thread) and freeing             */
/* ------------------------------------------------------------------ */

static void fentries_free(fentry *fe, size_t n) {
    for (size_t i = 0; i < n; i++) {
        free(fe[i].path);
        disc_groups_free(fe[i].g, fe[i].n);
        free(fe[i].last_err);
    }
    free(fe);
}

/* m is NULL for a provider that was never started. */
static void prov_free(disc_manager *m, prov *p) {
    if (!p) return;
    free(p->key);
    disc_groups_free(p->sg, p->nsg);
    if (m && p->wds)
        for (size_t i = 0; i < p->npats; i++) wd_unref(m, p->wds[i]);
    free(p->wds);
    strv_free(p->pats, p->npats);
    fentries_free(p->fe, p->nfe);
    if (p->dg)
        for (size_t i = 0; i < p->nnames; i++) disc__group_free(p->dg[i]);
    free(p->dg);
    strv_free(p->dns_err, p->nnames);
    strv_free(p->names, p->nnames);
    if (p->easy) {
        if (m && p->inflight) curl_multi_remove_handle(m->multi, p->easy);
        curl_easy_cleanup(p->easy);
    }
    curl_slist_free_all(p->hdrs);
    base_buf_free(&p->body);
    disc_groups_free(p->hg, p->nhg);
    free(p->http_err);
    free(p->url);
    cfg_http_clear(&p->http);
    free(p);
}

static void set_free(disc_manager *m, dset *s) {
    if (!s) return;
    for (size_t i = 0; i < s->nprovs; i++) prov_free(m, s->provs[i]);
    free(s->provs);
    free(s->name);
    free(s);
}

static void plan_free(plan *pl) {
    if (!pl) return;
    for (size_t i = 0; i < pl->nsets; i++) set_free(NULL, pl->sets[i]);
    free(pl->sets);
    free(pl);
}

static int prov_finish_key(prov *p, base_buf *k) {
    if (base_buf_err(k)) return BASE_E_NOMEM;
    p->key = base_buf_steal(k, &p->keylen);
    return p->key ? 0 : BASE_E_NOMEM;
}

static int static_groups(prov *p, const cfg_sd *sd, char *err, size_t errlen) {
    p->sg = calloc(sd->nstatics ? sd->nstatics : 1, sizeof *p->sg);
    if (!p->sg) return BASE_E_NOMEM;
    labels_builder lb;
    labels_builder_init(&lb);
    int rc = 0;
    for (size_t i = 0; i < sd->nstatics && !rc; i++) {
        const cfg_static *st = &sd->statics[i];
        char src[32];
        snprintf(src, sizeof src, "%zu", i);
        disc_group *g = disc__group_new(src);
        if (!g) {
            rc = BASE_E_NOMEM;
            break;
        }
        p->sg[p->nsg++] = g;
        for (size_t j = 0; j < st->ntargets && !rc; j++) {
            labels_builder_reset(&lb);
            labels_set *t = NULL;
            rc = labels_builder_add(&lb, base_str_c("__address__"), base_str_c(st->targets[j]));
            if (!rc) rc = labels_builder_finish(&lb, 0, &t, err, errlen);
            if (!rc) rc = disc__group_add_target(g, t);
        }
        labels_builder_reset(&lb);
        for (size_t j = 0; j < st->labels.n && !rc; j++)
            rc = labels_builder_add(&lb, base_str_c(st->labels.v[j].name), base_str_c(st->labels.v[j].value));
        labels_set *ls = NULL;
        if (!rc) rc = labels_builder_finish(&lb, 0, &ls, err, errlen);
        if (!rc) {
            labels_unref(g->labels);
            g->labels = ls;
        }
    }
    labels_builder_free(&lb);
    return rc;
}

static int prov_static(const cfg_sd *sd, prov **ret, char *err, size_t errlen) {
    prov *p = calloc(1, sizeof *p);
    if (!p) return BASE_E_NOMEM;
    p->kind = DISC_KIND_STATIC;
    base_buf k;
    base_buf_init(&k, 0);
    base_buf_puts(&k, "static;");
    for (size_t i = 0; i < sd->nstatics; i++) {
        const cfg_static *st = &sd->statics[i];
        key_int(&k, (long long)st->ntargets);
        for (size_t j = 0; j < st->ntargets; j++) key_str(&k, st->targets[j]);
        key_int(&k, (long long)st->labels.n);
        for (size_t j = 0; j < st->labels.n; j++) {
            key_str(&k, st->labels.v[j].name);
            key_str(&k, st->labels.v[j].value);
        }
    }
    int rc = prov_finish_key(p, &k);
    base_buf_free(&k);
    if (!rc) rc = static_groups(p, sd, err, errlen);
    if (rc) {
        prov_free(NULL, p);
        return rc;
    }
    *ret = p;
    return 0;
}

static int64_t interval_ns(int64_t ms, int64_t dflt_ms) {
    if (ms <= 0) ms = dflt_ms;
    if (ms > INT64_MAX / 1000000) ms = INT64_MAX / 1000000;
    return ms * 1000000;
}

static int prov_file(const cfg_file_sd *f, prov **ret, char *err, size_t errlen) {
    for (size_t i = 0; i < f->nfiles; i++)
        if (!f->files[i] || !f->files[i][0])
            return base_errf(err, errlen, BASE_E_INVAL, "file_sd_configs: empty file name");
    prov *p = calloc(1, sizeof *p);
    if (!p) return BASE_E_NOMEM;
    p->kind = DISC_KIND_FILE;
    p->interval_ns = interval_ns(f->refresh_interval_ms, 300000);
    p->pats = strv_copy(f->files, f->nfiles);
    p->npats = p->pats ? f->nfiles : 0;
    p->wds = calloc(f->nfiles ? f->nfiles : 1, sizeof *p->wds);
    base_buf k;
    base_buf_init(&k, 0);
    base_buf_puts(&k, "file;");
    key_int(&k, f->refresh_interval_ms);
    for (size_t i = 0; i < f->nfiles; i++) key_str(&k, f->files[i]);
    int rc = prov_finish_key(p, &k);
    base_buf_free(&k);
    if (!rc && (!p->pats || !p->wds)) rc = BASE_E_NOMEM;
    if (rc) {
        prov_free(NULL, p);
        return rc;
    }
    *ret = p;
    return 0;
}

static int prov_dns(const cfg_dns_sd *d, prov **ret, char *err, size_t errlen) {
    for (size_t i = 0; i < d->nnames; i++)
        if (!d->names[i] || !d->names[i][0])
            return base_errf(err, errlen, BASE_E_INVAL, "dns_sd_configs: empty name");
    prov *p = calloc(1, sizeof *p);
    if (!p) return BASE_E_NOMEM;
    p->kind = DISC_KIND_DNS;
    p->interval_ns = interval_ns(d->refresh_interval_ms, 30000);
    p->dtype = d->type;
    p->port = d->port;
    p->names = strv_copy(d->names, d->nnames);
    p->nnames = p->names ? d->nnames : 0;
    p->dg = calloc(d->nnames ? d->nnames : 1, sizeof *p->dg);
    p->dns_err = calloc(d->nnames ? d->nnames : 1, sizeof *p->dns_err);
    base_buf k;
    base_buf_init(&k, 0);
    base_buf_puts(&k, "dns;");
    key_int(&k, d->refresh_interval_ms);
    key_int(&k, d->type);
    key_int(&k, d->port);
    for (size_t i = 0; i < d->nnames; i++) key_str(&k, d->names[i]);
    int rc = prov_finish_key(p, &k);
    base_buf_free(&k);
    if (!rc && (!p->names || !p->dg || !p->dns_err)) rc = BASE_E_NOMEM;
    if (rc) {
        prov_free(NULL, p);
        return rc;
    }
    *ret = p;
    return 0;
}

static int prov_http(const cfg_http_sd *h, prov **ret, char *err, size_t errlen) {
    if (!h->url || !h->url[0]) return base_errf(err, errlen, BASE_E_INVAL, "http_sd_configs: empty url");
    prov *p = calloc(1, sizeof *p);
    if (!p) return BASE_E_NOMEM;
    p->kind = DISC_KIND_HTTP;
    p->interval_ns = interval_ns(h->refresh_interval_ms, 60000);
    p->url = strdup(h->url);
    base_buf_init(&p->body, DISC_MAX_DOC_BYTES);
    int rc = p->url ? cfg_http_copy(&p->http, &h->http) : BASE_E_NOMEM;
    base_buf k;
    base_buf_init(&k, 0);
    base_buf_puts(&k, "http;");
    key_int(&k, h->refresh_interval_ms);
    key_str(&k, h->url);
    if (!rc) rc = prov_finish_key(p, &k);
    base_buf_free(&k);
    if (rc) {
        prov_free(NULL, p);
        return rc;
    }
    *ret = p;
    return 0;
}

static int set_add(dset *s, prov *p) {
    prov **np = realloc(s->provs, (s->nprovs + 1) * sizeof *np);
    if (!np) {
        prov_free(NULL, p);
        return BASE_E_NOMEM;
    }
    s->provs = np;
    s->provs[s->nprovs++] = p;
    p->set = s;
    return 0;
}

static int plan_set(plan *pl, const char *name, const cfg_sd *sd, char *err, size_t errlen) {
    for (size_t i = 0; i < pl->nsets; i++)
        if (strcmp(pl->sets[i]->name, name) == 0)
            return base_errf(err, errlen, BASE_E_INVAL, "duplicate discovery set %s", name);
    dset *s = calloc(1, sizeof *s);
    if (!s) return BASE_E_NOMEM;
    s->name = strdup(name);
    dset **ns = realloc(pl->sets, (pl->nsets + 1) * sizeof *ns);
    if (ns) pl->sets = ns;
    if (!s->name || !ns) {
        set_free(NULL, s);
        return BASE_E_NOMEM;
    }
    pl->sets = ns;
    pl->sets[pl->nsets++] = s;
    int rc = 0;
    prov *p = NULL;
    if (sd->nstatics) {
        rc = prov_static(sd, &p, err, errlen);
        if (!rc) rc = set_add(s, p);
    }
    for (size_t i = 0; i < sd->nfiles && !rc; i++) {
        rc = prov_file(&sd->files[i], &p, err, errlen);
        if (!rc) rc = set_add(s, p);
    }
    for (size_t i = 0; i < sd->ndns && !rc; i++) {
        rc = prov_dns(&sd->dns[i], &p, err, errlen);
        if (!rc) rc = set_add(s, p);
    }
    for (size_t i = 0; i < sd->nhttps && !rc; i++) {
        rc = prov_http(&sd->https[i], &p, err, errlen);
        if (!rc) rc = set_add(s, p);
    }
    if (rc && err && errlen && !err[0]) base_errf(err, errlen, rc, "%s: %s", name, base_strerror(rc));
    return rc;
}

/* ------------------------------------------------------------------ */
/* Results                                                            */
/* ------------------------------------------------------------------ */

static void prov_result(prov *p, int changed) {
    if (!p->have_first) {
        p->have_first = 1;
        p->set->dirty = 1;
        p->set->urgent = 1;
    } else if (changed) {
        p->set->dirty = 1;
    }
}

typedef struct gvec {
    const disc_group **v;
    size_t n, cap;
    int err;
} gvec;

static void gvec_push(gvec *g, const disc_group *x) {
    if (g->err) return;
    if (g->n == g->cap) {
        size_t cap = g->cap ? g->cap * 2 : 16;
        const disc_group **nv = realloc(g->v, cap * sizeof *nv);
        if (!nv) {
            g->err = 1;
            return;
        }
        g->v = nv;
        g->cap = cap;
    }
    g->v[g->n++] = x;
}

static void prov_collect(const prov *p, gvec *out) {
    switch (p->kind) {
    case DISC_KIND_STATIC:
        for (size_t i = 0; i < p->nsg; i++) gvec_push(out, p->sg[i]);
        break;
    case DISC_KIND_FILE:
        for (size_t i = 0; i < p->nfe; i++)
            for (size_t j = 0; j < p->fe[i].n; j++) gvec_push(out, p->fe[i].g[j]);
        break;
    case DISC_KIND_DNS:
        for (size_t i = 0; i < p->nnames; i++)
            if (p->dg[i]) gvec_push(out, p->dg[i]);
        break;
    default:
        for (size_t i = 0; i < p->nhg; i++) gvec_push(out, p->hg[i]);
        break;
    }
}

/* ------------------------------------------------------------------ */
/* file_sd                                                            */
/* ------------------------------------------------------------------ */

static int read_file(const char *path, char **ret, size_t *ret_len, char *err, size_t errlen) {
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return base_errf(err, errlen, BASE_E_IO, "open %s: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return base_errf(err, errlen, BASE_E_IO, "%s: not a regular file", path);
    }
    if ((unsigned long long)st.st_size > DISC_MAX_DOC_BYTES) {
        close(fd);
        return base_errf(err, errlen, BASE_E_LIMIT, "%s: larger than %zu bytes", path, DISC_MAX_DOC_BYTES);
    }
    size_t cap = (size_t)st.st_size + 1, len = 0;
    char *b = malloc(cap);
    if (!b) {
        close(fd);
        return base_errf(err, errlen, BASE_E_NOMEM, "out of memory");
    }
    for (;;) {
        if (len == cap) {
            if (cap > DISC_MAX_DOC_BYTES) {
                free(b);
                close(fd);
                return base_errf(err, errlen, BASE_E_LIMIT, "%s: larger than %zu bytes", path,
                                 DISC_MAX_DOC_BYTES);
            }
            size_t nc = cap * 2;
            char *nb = realloc(b, nc);
            if (!nb) {
                free(b);
                close(fd);
                return base_errf(err, errlen, BASE_E_NOMEM, "out of memory");
            }
            b = nb;
            cap = nc;
        }
        ssize_t r = read(fd, b + len, cap - len);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            int e = errno;
            free(b);
            close(fd);
            return base_errf(err, errlen, BASE_E_IO, "read %s: %s", path, strerror(e));
        }
        if (r == 0) break;
        len += (size_t)r;
    }
    close(fd);
    *ret = b;
    *ret_len = len;
    return 0;
}

static int is_json_path(const char *p) {
    size_t n = strlen(p);
    return n >= 5 && strcasecmp(p + n - 5, ".json") == 0;
}

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The dir part of a pattern ("." for a bare name). */
static void pat_dir(const char *pat, char *out, size_t outlen) {
    const char *sl = strrchr(pat, '/');
    if (!sl)
        snprintf(out, outlen, ".");
    else if (sl == pat)
        snprintf(out, outlen, "/");
    else
        snprintf(out, outlen, "%.*s", (int)(sl - pat), pat);
}

static void file_refresh(disc_manager *m, prov *p) {
    char dir[PATH_MAX];
    for (size_t i = 0; i < p->npats; i++) {
        if (!p->wds[i]) {
            pat_dir(p->pats[i], dir, sizeof dir);
            p->wds[i] = wd_ref(m, dir);
        }
        if (p->wds[i]) wd_ensure(m, p->wds[i]);
    }
    /* the files, sorted and unique */
    char **paths = NULL;
    size_t npaths = 0, cap = 0;
    int oom = 0, too_many = 0;
    for (size_t i = 0; i < p->npats && !oom; i++) {
        glob_t gl;
        memset(&gl, 0, sizeof gl);
        if (glob(p->pats[i], 0, NULL, &gl) == 0) {
            for (size_t j = 0; j < gl.gl_pathc; j++) {
                if (npaths >= DISC_MAX_FILES) {
                    too_many = 1;
                    break;
                }
                if (npaths == cap) {
                    cap = cap ? cap * 2 : 16;
                    char **np = realloc(paths, cap * sizeof *np);
                    if (!np) {
                        oom = 1;
                        break;
                    }
                    paths = np;
                }
                paths[npaths] = strdup(gl.gl_pathv[j]);
                if (!paths[npaths]) {
                    oom = 1;
                    break;
                }
                npaths++;
            }
        }
        globfree(&gl);
    }
    m->refreshes[DISC_KIND_FILE]++;
    if (oom) {
        strv_free(paths, npaths);
        m->failures[DISC_KIND_FILE]++;
        return; /* keep everything as it was */
    }
    if (too_many && !p->too_many_logged) {
        base_logf(BASE_LOG_ERROR, "file_sd: more than %d files match, ignoring the rest", DISC_MAX_FILES);
        p->too_many_logged = 1;
    }
    if (npaths) qsort(paths, npaths, sizeof *paths, cmp_str);
    size_t u = 0;
    for (size_t i = 0; i < npaths; i++) {
        if (u && strcmp(paths[u - 1], paths[i]) == 0) {
            free(paths[i]);
            continue;
        }
        paths[u++] = paths[i];
    }
    npaths = u;

    fentry *nfe = calloc(npaths ? npaths : 1, sizeof *nfe);
    if (!nfe) {
        strv_free(paths, npaths);
        m->failures[DISC_KIND_FILE]++;
        return;
    }
    int changed = 0, failed = 0;
    size_t oi = 0;
    for (size_t i = 0; i < npaths; i++) {
        fentry *e = &nfe[i];
        e->path = paths[i];
        /* both lists are sorted: walk the old one along */
        while (oi < p->nfe && strcmp(p->fe[oi].path, e->path) < 0) {
            if (p->fe[oi].n) changed = 1;
            oi++;
        }
        fentry *old = (oi < p->nfe && strcmp(p->fe[oi].path, e->path) == 0) ? &p->fe[oi++] : NULL;
        if (old) {
            e->g = old->g;
            e->n = old->n;
            e->last_err = old->last_err;
            old->g = NULL;
            old->n = 0;
            old->last_err = NULL;
        }
        char err[512] = "";
        char *buf = NULL;
        size_t len = 0;
        disc_group **g = NULL;
        size_t n = 0;
        int rc = read_file(e->path, &buf, &len, err, sizeof err);
        if (!rc) rc = disc_parse_file_sd(buf, len, is_json_path(e->path), e->path, &g, &n, err, sizeof err);
        free(buf);
        if (rc) {
            failed = 1;
            if (note_err(&e->last_err, err))
                base_log(BASE_LOG_ERROR, "Error reading file", "path", e->path, "err", err, NULL);
            continue;
        }
        clear_err(&e->last_err);
        if (disc__groups_equal(e->g, e->n, g, n)) {
            disc_groups_free(g, n);
        } else {
            disc_groups_free(e->g, e->n);
            e->g = g;
            e->n = n;
            changed = 1;
        }
    }
    for (; oi < p->nfe; oi++)
        if (p->fe[oi].n) changed = 1;
    free(paths);
    fentries_free(p->fe, p->nfe);
    p->fe = nfe;
    p->nfe = npaths;
    if (failed) m->failures[DISC_KIND_FILE]++;
    prov_result(p, changed);
}

static void read_inotify(disc_manager *m, int64_t now) {
    char buf[16384] __attribute__((aligned(__alignof__(struct inotify_event))));
    for (int rounds = 0; rounds < 64; rounds++) {
        ssize_t r = read(m->ifd, buf, sizeof buf);
        if (r <= 0) return;
        for (char *q = buf; q < buf + r;) {
            const struct inotify_event *ev = (const struct inotify_event *)(void *)q;
            q += sizeof *ev + ev->len;
            wdir *w = NULL;
            for (size_t i = 0; ev->wd >= 0 && i < m->nwds; i++)
                if (m->wds[i]->wd == ev->wd) w = m->wds[i];
            if (!w && !(ev->mask & IN_Q_OVERFLOW)) continue;
            if (w && (ev->mask & IN_IGNORED)) w->wd = -1;
            for (size_t s = 0; s < m->nsets; s++)
                for (size_t k = 0; k < m->sets[s]->nprovs; k++) {
                    prov *p = m->sets[s]->provs[k];
                    if (p->kind != DISC_KIND_FILE || !p->started) continue;
                    /* any event in a watched directory: Kubernetes
                     * ConfigMaps swap a "..data" symlink, so the name
                     * need not match the pattern */
                    int hit = 0;
                    for (size_t i = 0; i < p->npats && !hit; i++) hit = !w || p->wds[i] == w;
                    if (hit && (p->next_ns == 0 || p->next_ns > now + EVENT_DELAY_NS))
                        p->next_ns = now + EVENT_DELAY_NS;
                }
        }
    }
}

/* ------------------------------------------------------------------ */
/* dns_sd                                                             */
/* ------------------------------------------------------------------ */

static void dns_refresh(disc_manager *m, prov *p) {
    int changed = 0, failed = 0;
    m->refreshes[DISC_KIND_DNS]++;
    for (size_t i = 0; i < p->nnames; i++) {
        if (is_stopping(m)) return;
        char err[512] = "";
        disc_group *g = NULL;
        int rc = disc__dns_lookup(p->names[i], p->dtype, p->port, m->dns_server, &g, err, sizeof err);
        if (rc) {
            failed = 1;
            if (note_err(&p->dns_err[i], err))
                base_log(BASE_LOG_ERROR, "Error refreshing DNS targets", "name", p->names[i], "err", err,
                         NULL);
            continue;
        }
        clear_err(&p->dns_err[i]);
        if (p->dg[i] && disc__group_equal(p->dg[i], g)) {
            disc__group_free(g);
        } else {
            disc__group_free(p->dg[i]);
            p->dg[i] = g;
            changed = 1;
        }
    }
    if (failed) m->failures[DISC_KIND_DNS]++;
    prov_result(p, changed);
}

/* ------------------------------------------------------------------ */
/* http_sd                                                            */
/* ------------------------------------------------------------------ */

static size_t http_write(char *ptr, size_t size, size_t nmemb, void *ud) {
    prov *p = ud;
    size_t n = size * nmemb;
    base_buf_append(&p->body, ptr, n);
    if (base_buf_err(&p->body)) {
        p->body_too_big = 1;
        return 0;
    }
    return n;
}

static int http_setup(prov *p, char *err, size_t errlen) {
    if (!p->easy) {
        p->easy = curl_easy_init();
        if (!p->easy) return base_errf(err, errlen, BASE_E_NOMEM, "curl_easy_init failed");
    }
    CURL *e = p->easy;
    const cfg_http *h = &p->http;
    curl_easy_reset(e);
    curl_easy_setopt(e, CURLOPT_URL, p->url);
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(e, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_PRIVATE, p);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, http_write);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, p);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, p->curl_err);
    curl_easy_setopt(e, CURLOPT_USERAGENT, "Kelvin/" KELVIN_VERSION);
    curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, "");
    long tmo = (long)(p->interval_ns / 1000000);
    if (tmo > HTTP_TIMEOUT_MS || tmo <= 0) tmo = HTTP_TIMEOUT_MS;
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, tmo);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, tmo < 10000 ? tmo : 10000L);
    curl_slist_free_all(p->hdrs);
    p->hdrs = NULL;
    base_buf hb;
    base_buf_init(&hb, 0);
    int rc = 0;
    struct curl_slist *l = curl_slist_append(NULL, "Accept: application/json");
    base_buf_puts(&hb, "X-Prometheus-Refresh-Interval-Seconds: ");
    base_buf_i64(&hb, p->interval_ns / 1000000000);
    int64_t frac = (p->interval_ns / 1000000) % 1000;
    if (frac) {
        char fb[8];
        snprintf(fb, sizeof fb, ".%03d", (int)frac);
        size_t fl = strlen(fb);
        while (fl > 1 && fb[fl - 1] == '0') fb[--fl] = '\0';
        base_buf_puts(&hb, fb);
    }
    if (l && !base_buf_err(&hb)) l = curl_slist_append(l, hb.data);
    base_buf_free(&hb);
    if (l) rc = disc_httpc_apply(e, h, &l, err, errlen);
    if (!l) {
        if (!rc) rc = base_errf(err, errlen, BASE_E_NOMEM, "out of memory");
    }
    p->hdrs = l;
    if (rc) return rc;
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, p->hdrs);
    return 0;
}

static void http_fail(disc_manager *m, prov *p, const char *err) {
    m->failures[DISC_KIND_HTTP]++;
    if (note_err(&p->http_err, err))
        base_log(BASE_LOG_ERROR, "Unable to refresh target groups", "url", p->url, "err", err, NULL);
    prov_result(p, 0);
}

static void http_start(disc_manager *m, prov *p, int64_t now) {
    char err[512] = "";
    base_buf_reset(&p->body);
    p->body_too_big = 0;
    p->curl_err[0] = '\0';
    p->next_ns = 0;
    int rc = http_setup(p, err, sizeof err);
    if (!rc && curl_multi_add_handle(m->multi, p->easy) != CURLM_OK)
        rc = base_errf(err, sizeof err, BASE_E_IO, "curl_multi_add_handle failed");
    if (rc) {
        m->refreshes[DISC_KIND_HTTP]++;
        p->next_ns = now + p->interval_ns;
        http_fail(m, p, err);
        return;
    }
    p->inflight = 1;
}

/* Prometheus's ^(?i:application/json(;\s*charset=("utf-8"|utf-8))?)$
 * after trimming blanks. */
static int json_content_type(const char *ct) {
    if (!ct) return 0;
    while (*ct == ' ' || *ct == '\t') ct++;
    size_t n = strlen(ct);
    while (n && (ct[n - 1] == ' ' || ct[n - 1] == '\t' || ct[n - 1] == '\r' || ct[n - 1] == '\n')) n--;
    if (n < 16 || strncasecmp(ct, "application/json", 16) != 0) return 0;
    const char *s = ct + 16, *e = ct + n;
    if (s == e) return 1;
    if (*s++ != ';') return 0;
    while (s < e && strchr(" \t\r\n\v\f", *s)) s++;
    if ((size_t)(e - s) < 8 || strncasecmp(s, "charset=", 8) != 0) return 0;
    s += 8;
    size_t l = (size_t)(e - s);
    return (l == 5 && strncasecmp(s, "utf-8", 5) == 0) || (l == 7 && strncasecmp(s, "\"utf-8\"", 7) == 0);
}

static void http_done(disc_manager *m, prov *p, CURLcode res, int64_t now) {
    curl_multi_remove_handle(m->multi, p->easy);
    p->inflight = 0;
    p->next_ns = now + p->interval_ns;
    m->refreshes[DISC_KIND_HTTP]++;
    char err[512];
    if (res != CURLE_OK) {
        if (p->body_too_big)
            snprintf(err, sizeof err, "response body larger than %zu bytes", DISC_MAX_DOC_BYTES);
        else
            snprintf(err, sizeof err, "%s", p->curl_err[0] ? p->curl_err : curl_easy_strerror(res));
        http_fail(m, p, err);
        return;
    }
    long code = 0;
    char *ct = NULL;
    curl_easy_getinfo(p->easy, CURLINFO_RESPONSE_CODE, &code);
    curl_easy_getinfo(p->easy, CURLINFO_CONTENT_TYPE, &ct);
    if (code != 200) {
        snprintf(err, sizeof err, "server returned HTTP status %ld", code);
        http_fail(m, p, err);
        return;
    }
    if (!json_content_type(ct)) {
        snprintf(err, sizeof err, "unsupported content type \"%s\"", ct ? ct : "");
        http_fail(m, p, err);
        return;
    }
    disc_group **g = NULL;
    size_t n = 0;
    if (disc_parse_http_sd(p->body.data, p->body.len, p->url, &g, &n, err, sizeof err)) {
        http_fail(m, p, err);
        return;
    }
    base_buf_reset(&p->body);
    clear_err(&p->http_err);
    int changed = 0;
    if (disc__groups_equal(p->hg, p->nhg, g, n)) {
        disc_groups_free(g, n);
    } else {
        disc_groups_free(p->hg, p->nhg);
        p->hg = g;
        p->nhg = n;
        changed = 1;
    }
    prov_result(p, changed);
}

/* ------------------------------------------------------------------ */
/* The thread                                                         */
/* ------------------------------------------------------------------ */

static void merge(disc_manager *m, plan *pl) {
    for (size_t i = 0; i < pl->nsets; i++) {
        dset *ns = pl->sets[i];
        dset *os = NULL;
        size_t oidx = 0;
        for (size_t j = 0; j < m->nsets; j++)
            if (m->sets[j] && strcmp(m->sets[j]->name, ns->name) == 0) {
                os = m->sets[j];
                oidx = j;
            }
        if (!os) {
            ns->dirty = ns->urgent = 1;
            continue;
        }
        int same = os->nprovs == ns->nprovs;
        for (size_t k = 0; k < ns->nprovs; k++) {
            prov *np = ns->provs[k];
            int reused = 0;
            for (size_t j = 0; j < os->nprovs; j++) {
                prov *op = os->provs[j];
                if (op->taken || op->keylen != np->keylen || memcmp(op->key, np->key, np->keylen) != 0 ||
                    !cfg_http_equal(&op->http, &np->http)) /* zeroed but for http_sd */
                    continue;
                op->taken = 1;
                op->set = ns;
                ns->provs[k] = op;
                prov_free(NULL, np);
                if (j != k) same = 0;
                reused = 1;
                break;
            }
            if (!reused) same = 0;
        }
        for (size_t j = 0; j < os->nprovs; j++) {
            if (os->provs[j]->taken) {
                os->provs[j]->taken = 0;
                os->provs[j] = NULL;
            }
        }
        ns->last_sent_ns = os->last_sent_ns;
        ns->dirty = os->dirty || !same;
        ns->urgent = os->urgent || !same;
        for (size_t j = 0; j < os->nprovs; j++) prov_free(m, os->provs[j]);
        os->nprovs = 0;
        set_free(m, os);
        m->sets[oidx] = NULL;
    }
    /* sets that are gone */
    for (size_t j = 0; j < m->nsets; j++) {
        if (!m->sets[j]) continue;
        m->o.sink(m->o.sink_ctx, m->sets[j]->name, NULL, 0);
        set_free(m, m->sets[j]);
    }
    free(m->sets);
    m->sets = pl->sets;
    m->nsets = pl->nsets;
    pl->sets = NULL;
    pl->nsets = 0;
    free(pl);
}

static void flush(disc_manager *m, int64_t now) {
    for (size_t i = 0; i < m->nsets; i++) {
        dset *s = m->sets[i];
        if (!s->dirty) continue;
        if (!s->urgent && s->last_sent_ns && now - s->last_sent_ns < m->interval_ns) continue;
        gvec g = {0};
        for (size_t k = 0; k < s->nprovs; k++) prov_collect(s->provs[k], &g);
        if (g.err) {
            free(g.v);
            continue; /* out of memory: try again next round */
        }
        m->o.sink(m->o.sink_ctx, s->name, g.v, g.n);
        free(g.v);
        s->dirty = s->urgent = 0;
        s->last_sent_ns = now;
    }
}

static void publish(disc_manager *m) {
    disc_stats st;
    memset(&st, 0, sizeof st);
    memcpy(st.refreshes, m->refreshes, sizeof st.refreshes);
    memcpy(st.failures, m->failures, sizeof st.failures);
    gvec g = {0}; /* one vector for every provider: reset, not reallocated */
    for (size_t i = 0; i < m->nsets; i++)
        for (size_t k = 0; k < m->sets[i]->nprovs; k++) {
            g.n = 0;
            g.err = 0;
            prov_collect(m->sets[i]->provs[k], &g);
            st.providers++;
            st.groups += g.n;
            for (size_t j = 0; j < g.n; j++) st.targets += g.v[j]->ntargets;
        }
    free(g.v);
    pthread_mutex_lock(&m->mu);
    m->pub = st;
    pthread_mutex_unlock(&m->mu);
}

static void *run(void *arg) {
    disc_manager *m = arg;
    for (;;) {
        pthread_mutex_lock(&m->mu);
        int stop = m->stop;
        plan *pl = m->pending;
        m->pending = NULL;
        pthread_mutex_unlock(&m->mu);
        if (stop) {
            plan_free(pl);
            break;
        }
        int changed = 0;
        if (pl) {
            merge(m, pl);
            changed = 1;
        }
        int64_t now = base_mono_ns();
        for (size_t i = 0; i < m->nsets && !is_stopping(m); i++) {
            dset *s = m->sets[i];
            for (size_t k = 0; k < s->nprovs; k++) {
                prov *p = s->provs[k];
                if (!p->started) {
                    p->started = 1;
                    changed = 1;
                    if (p->kind == DISC_KIND_STATIC) {
                        m->refreshes[DISC_KIND_STATIC]++;
                        prov_result(p, 1);
                    } else {
                        p->next_ns = now;
                    }
                }
                if (!p->next_ns || p->next_ns > now) continue;
                changed = 1;
                if (p->kind == DISC_KIND_FILE) {
                    p->next_ns = now + p->interval_ns;
                    file_refresh(m, p);
                } else if (p->kind == DISC_KIND_DNS) {
                    p->next_ns = now + p->interval_ns;
                    dns_refresh(m, p);
                    now = base_mono_ns();
                } else if (p->kind == DISC_KIND_HTTP && !p->inflight) {
                    http_start(m, p, now);
                }
            }
        }
        int running = 0;
        curl_multi_perform(m->multi, &running);
        CURLMsg *msg;
        int left;
        now = base_mono_ns();
        while ((msg = curl_multi_info_read(m->multi, &left))) {
            if (msg->msg != CURLMSG_DONE) continue;
            prov *p = NULL;
            curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&p);
            CURLcode res = msg->data.result;
            if (p) http_done(m, p, res, now);
            changed = 1;
        }
        flush(m, now);
        if (changed) publish(m);

        /* how long to wait */
        int64_t wait_ns = (int64_t)MAX_WAIT_MS * 1000000;
        for (size_t i = 0; i < m->nsets; i++) {
            dset *s = m->sets[i];
            if (s->dirty) {
                int64_t due = s->urgent ? now : s->last_sent_ns + m->interval_ns;
                if (due - now < wait_ns) wait_ns = due - now;
            }
            for (size_t k = 0; k < s->nprovs; k++) {
                prov *p = s->provs[k];
                if (!p->started) wait_ns = 0;
                if (p->next_ns && p->next_ns - now < wait_ns) wait_ns = p->next_ns - now;
            }
        }
        if (wait_ns < 0) wait_ns = 0;
        struct curl_waitfd wfd = {.fd = m->ifd, .events = CURL_WAIT_POLLIN, .revents = 0};
        curl_multi_poll(m->multi, m->ifd >= 0 ? &wfd : NULL, m->ifd >= 0 ? 1 : 0,
                        (int)((wait_ns + 999999) / 1000000), NULL);
        if (m->ifd >= 0 && (wfd.revents & CURL_WAIT_POLLIN)) read_inotify(m, base_mono_ns());
    }
    return NULL;
}

/* ------------------------------------------------------------------ */
/* Public                                                             */
/* ------------------------------------------------------------------ */

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static int curl_ok;
static void curl_init_once(void) {
    curl_ok = curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK;
}

void disc_manager_free(disc_manager *m) {
    if (!m) return;
    if (m->have_thread) {
        pthread_mutex_lock(&m->mu);
        m->stop = 1;
        pthread_mutex_unlock(&m->mu);
        curl_multi_wakeup(m->multi);
        pthread_join(m->th, NULL);
    }
    plan_free(m->pending);
    for (size_t i = 0; i < m->nsets; i++) set_free(m, m->sets[i]);
    free(m->sets);
    for (size_t i = 0; i < m->nwds; i++) {
        free(m->wds[i]->dir);
        free(m->wds[i]);
    }
    free(m->wds);
    if (m->multi) curl_multi_cleanup(m->multi);
    if (m->ifd >= 0) close(m->ifd);
    free(m->dns_server);
    pthread_mutex_destroy(&m->mu);
    free(m);
}

int disc_manager_new(const disc_opts *o, disc_manager **ret, char *err, size_t errlen) {
    if (!o || !o->sink) return base_errf(err, errlen, BASE_E_INVAL, "discovery: no sink");
    pthread_once(&curl_once, curl_init_once);
    if (!curl_ok) return base_errf(err, errlen, BASE_E_IO, "curl_global_init failed");
    disc_manager *m = calloc(1, sizeof *m);
    if (!m) return base_errf(err, errlen, BASE_E_NOMEM, "out of memory");
    m->o = *o;
    m->interval_ns = (o->update_interval_ms > 0 ? o->update_interval_ms : 5000) * 1000000;
    m->ifd = -1;
    pthread_mutex_init(&m->mu, NULL);
    const char *srv = getenv("KELVIN_DNS_SERVER");
    if (srv && srv[0] && !(m->dns_server = strdup(srv))) {
        disc_manager_free(m);
        return base_errf(err, errlen, BASE_E_NOMEM, "out of memory");
    }
    m->multi = curl_multi_init();
    if (!m->multi) {
        disc_manager_free(m);
        return base_errf(err, errlen, BASE_E_NOMEM, "curl_multi_init failed");
    }
    /* without inotify, file_sd still works by polling */
    m->ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (pthread_create(&m->th, NULL, run, m) != 0) {
        disc_manager_free(m);
        return base_errf(err, errlen, BASE_E_IO, "discovery: cannot start thread");
    }
    m->have_thread = 1;
    *ret = m;
    return 0;
}

int disc_manager_apply(disc_manager *m, const cfg_config *c, char *err, size_t errlen) {
    if (err && errlen) err[0] = '\0';
    plan *pl = calloc(1, sizeof *pl);
    if (!pl) return base_errf(err, errlen, BASE_E_NOMEM, "out of memory");
    int rc = 0;
    for (size_t i = 0; c && i < c->nscrapes && !rc; i++)
        rc = plan_set(pl, c->scrapes[i].job_name ? c->scrapes[i].job_name : "", &c->scrapes[i].sd, err,
                      errlen);
    for (size_t i = 0; c && i < c->alerting.nams && !rc; i++) {
        char name[48];
        snprintf(name, sizeof name, "alertmanager/%zu", i);
        rc = plan_set(pl, name, &c->alerting.ams[i].sd, err, errlen);
    }
    if (rc) {
        plan_free(pl);
        return rc;
    }
    pthread_mutex_lock(&m->mu);
    plan *old = m->pending;
    m->pending = pl;
    pthread_mutex_unlock(&m->mu);
    plan_free(old);
    curl_multi_wakeup(m->multi);
    return 0;
}

void disc_manager_stats(disc_manager *m, disc_stats *ret) {
    pthread_mutex_lock(&m->mu);
    *ret = m->pub;
    pthread_mutex_unlock(&m->mu);
}
