/* host_fs.c -- node_filesystem_*: the mount table and statfs(2) off the
 * collecting thread.
 *
 * Mount table. procfs/1/mounts (procfs/mounts when that is hidden), kept
 * open. On procfs the kernel flags a mount table change with POLLPRI on
 * that descriptor, so the table is re-read only then; a file elsewhere (a
 * test fixture) is re-read every cycle and compared with the last text.
 * Lines go through node_exporter's default exclusions (mount points under
 * /dev /proc /run /sys /mnt /media /var/lib/docker/ and
 * /var/lib/containers/storage/; pseudo and overlay fs types), the rootfs
 * prefix is stripped from mount points as node_exporter does, and a label
 * set seen twice is kept once.
 *
 * statfs. A dead NFS server makes statfs() block, possibly for ever, and
 * the collecting thread must not. Every cycle the collector hands the list
 * of paths to a helper thread and waits; as long as the helper makes
 * progress the wait goes on, but when one call has not returned within the
 * timeout (1 s) the mount is marked stuck, the helper is abandoned to that
 * call (detached; it frees itself when the call returns), and a fresh
 * helper takes the rest of the list. A stuck mount is reported as
 * node_exporter reports it -- node_filesystem_device_error 1 and no other
 * metric -- and is not statfs'd again until its pending call has returned.
 * At most HOST_MAX_STUCK_HELPERS helpers can be stuck; past that the
 * remaining mounts are reported as errors for the cycle.
 *
 * Helper states (fs_helper, all fields under mu):
 *   idle --submit()--> busy --last path done--> idle      (done_gen = gen)
 *   busy --collector times out--> abandoned --call returns--> returned, exits
 *   idle --helper_stop()--> quit, joined
 * refs counts the collector side (the host, or the stuck mount that holds
 * it) and the thread; whoever drops the last reference frees it.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statfs.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include "agent/host_int.h"
#include "base/err.h"

#ifndef PROC_SUPER_MAGIC
#define PROC_SUPER_MAGIC 0x9fa0
#endif

typedef struct fs_helper {
    pthread_t tid;
    pthread_mutex_t mu;
    pthread_cond_t cv_req, cv_done;
    int refs, quit, abandoned, returned;
    uint64_t gen, done_gen;
    size_t n, next;
    char *paths; /* n NUL-terminated paths, in order */
    size_t paths_len, paths_cap;
    size_t *off;
    struct statfs *res;
    int *rc;
    size_t cap;
    agent_host_statfs_fn fn;
} fs_helper;

typedef struct fs_mount {
    char *dev, *mnt, *fstype; /* mnt decoded, rootfs prefix stripped */
    char *path;               /* what statfs gets: rootfs + mnt */
    char *lbl;
    int ro;
    fs_helper *stuck; /* the helper left in statfs on this mount, or NULL */
    /* this cycle */
    int err;
    struct statfs st;
} fs_mount;

struct host_fs_state {
    host_file f_mounts, f_mounts_fallback;
    host_file *src; /* the one in use */
    int on_procfs;
    char *last; /* last text read */
    size_t last_len;
    fs_mount *m;
    size_t nm;
    fs_helper *helper;
    agent_host_statfs_fn fn;
    int timeout_ms;
    size_t *todo; /* mount indices handed to the helper */
    size_t todo_cap;
};

/* ---- mounts lines ---- */

int agent__host_parse_mount(base_str line, base_str *dev, base_str *mnt, base_str *fstype, base_str *opts,
                            char *dec, size_t deccap) {
    *dev = agent__host_next_field(&line);
    base_str raw = agent__host_next_field(&line);
    *fstype = agent__host_next_field(&line);
    *opts = agent__host_next_field(&line);
    if (!opts->n) return 0;
    /* node_exporter decodes only \040 and \011 */
    size_t n = 0;
    for (size_t i = 0; i < raw.n && n < deccap; i++) {
        if (raw.p[i] == '\\' && i + 4 <= raw.n &&
            (memcmp(raw.p + i, "\\040", 4) == 0 || memcmp(raw.p + i, "\\011", 4) == 0)) {
            dec[n++] = raw.p[i + 2] == '4' ? ' ' : '\t';
            i += 3;
        } else {
            dec[n++] = raw.p[i];
        }
    }
    *mnt = (base_str){dec, n};
    return 1;
}

int agent__host_mountpoint_excluded(const char *mp, size_t n) {
    /* ^/(dev|proc|run|sys|mnt|media|var/lib/docker/.+|var/lib/containers/storage/.+)($|/) */
    static const char *const plain[] = {"/dev", "/proc", "/run", "/sys", "/mnt", "/media", NULL};
    for (const char *const *p = plain; *p; p++) {
        size_t l = strlen(*p);
        if (n >= l && memcmp(mp, *p, l) == 0 && (n == l || mp[l] == '/')) return 1;
    }
    static const char *const deep[] = {"/var/lib/docker/", "/var/lib/containers/storage/", NULL};
    for (const char *const *p = deep; *p; p++) {
        size_t l = strlen(*p);
        if (n > l && memcmp(mp, *p, l) == 0 && !memchr(mp + l, '\n', n - l)) return 1;
    }
    return 0;
}

int agent__host_fstype_excluded(const char *t, size_t n) {
    static const char *const types[] = {"autofs",    "binfmt_misc", "bpf",    "cgroup",     "cgroup2",
                                        "configfs",  "debugfs",     "devpts", "devtmpfs",   "fusectl",
                                        "hugetlbfs", "iso9660",     "mqueue", "nsfs",       "overlay",
                                        "proc",      "procfs",      "pstore", "rpc_pipefs", "securityfs",
                                        "selinuxfs", "squashfs",    "sysfs",  "tracefs",    NULL};
    for (const char *const *p = types; *p; p++)
        if (strlen(*p) == n && memcmp(*p, t, n) == 0) return 1;
    return 0;
}

/* ---- helper thread ---- */

static void helper_unref_locked(fs_helper *w, int *ret_free) {
    *ret_free = --w->refs == 0;
}

static void helper_free(fs_helper *w) {
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->cv_req);
    pthread_cond_destroy(&w->cv_done);
    free(w->paths);
    free(w->off);
    free(w->res);
    free(w->rc);
    free(w);
}

static void helper_unref(fs_helper *w) {
    int f;
    pthread_mutex_lock(&w->mu);
    helper_unref_locked(w, &f);
    pthread_mutex_unlock(&w->mu);
    if (f) helper_free(w);
}

static void *helper_main(void *arg) {
    fs_helper *w = arg;
    pthread_mutex_lock(&w->mu);
    for (;;) {
        while (!w->quit && w->done_gen == w->gen) pthread_cond_wait(&w->cv_req, &w->mu);
        if (w->quit) break;
        while (w->next < w->n) {
            size_t i = w->next;
            const char *path = w->paths + w->off[i];
            agent_host_statfs_fn fn = w->fn;
            struct statfs st;
            pthread_mutex_unlock(&w->mu);
            memset(&st, 0, sizeof st);
            int rc = fn(path, &st);
            pthread_mutex_lock(&w->mu);
            if (w->abandoned) {
                w->returned = 1; /* the stuck call is over; the mount may be tried again */
                goto out;
            }
            w->res[i] = st;
            w->rc[i] = rc;
            w->next = i + 1;
            pthread_cond_broadcast(&w->cv_done);
        }
        w->done_gen = w->gen;
        pthread_cond_broadcast(&w->cv_done);
    }
out:;
    int f;
    helper_unref_locked(w, &f);
    pthread_mutex_unlock(&w->mu);
    if (f) helper_free(w);
    return NULL;
}

static fs_helper *helper_new(void) {
    fs_helper *w = calloc(1, sizeof *w);
    if (!w) return NULL;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv_req, &ca);
    pthread_cond_init(&w->cv_done, &ca);
    pthread_condattr_destroy(&ca);
    w->refs = 2;
    if (pthread_create(&w->tid, NULL, helper_main, w) != 0) {
        helper_free(w);
        return NULL;
    }
    return w;
}

/* Stops an idle helper and joins it. */
static void helper_stop(fs_helper *w) {
    pthread_mutex_lock(&w->mu);
    w->quit = 1;
    pthread_cond_signal(&w->cv_req);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->tid, NULL);
    helper_unref(w);
}

static int helper_reserve(fs_helper *w, size_t n, size_t bytes) {
    if (n > w->cap) {
        size_t cap = w->cap ? w->cap : 16;
        while (cap < n) cap *= 2;
        size_t *off = realloc(w->off, cap * sizeof *off);
        if (off) w->off = off;
        struct statfs *res = realloc(w->res, cap * sizeof *res);
        if (res) w->res = res;
        int *rc = realloc(w->rc, cap * sizeof *rc);
        if (rc) w->rc = rc;
        if (!off || !res || !rc) return BASE_E_NOMEM;
        w->cap = cap;
    }
    if (bytes > w->paths_cap) {
        size_t cap = w->paths_cap ? w->paths_cap : 4096;
        while (cap < bytes) cap *= 2;
        char *p = realloc(w->paths, cap);
        if (!p) return BASE_E_NOMEM;
        w->paths = p;
        w->paths_cap = cap;
    }
    return 0;
}

static int64_t mono_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int count_stuck(const host_fs_state *s) {
    int n = 0;
    for (size_t i = 0; i < s->nm; i++) n += s->m[i].stuck != NULL;
    return n;
}

/* statfs for the mounts in todo[0..n); fills m->err / m->st. */
static void run_statfs(agent_host *h, size_t *todo, size_t n) {
    host_fs_state *s = h->fs;
    while (n) {
        if (!s->helper) {
            if (count_stuck(s) >= HOST_MAX_STUCK_HELPERS || !(s->helper = helper_new())) {
                for (size_t i = 0; i < n; i++) s->m[todo[i]].err = 1;
                return;
            }
        }
        fs_helper *w = s->helper;
        size_t bytes = 0;
        for (size_t i = 0; i < n; i++) bytes += strlen(s->m[todo[i]].path) + 1;
        pthread_mutex_lock(&w->mu);
        if (helper_reserve(w, n, bytes) != 0) {
            pthread_mutex_unlock(&w->mu);
            for (size_t i = 0; i < n; i++) s->m[todo[i]].err = 1;
            return;
        }
        w->paths_len = 0;
        for (size_t i = 0; i < n; i++) {
            size_t l = strlen(s->m[todo[i]].path) + 1;
            w->off[i] = w->paths_len;
            memcpy(w->paths + w->paths_len, s->m[todo[i]].path, l);
            w->paths_len += l;
        }
        w->n = n;
        w->next = 0;
        w->fn = s->fn;
        w->gen++;
        pthread_cond_signal(&w->cv_req);
        /* wait while it makes progress */
        size_t seen = 0;
        int64_t deadline = mono_ms() + s->timeout_ms;
        int timed_out = 0;
        while (w->done_gen != w->gen) {
            if (w->next != seen) {
                seen = w->next;
                deadline = mono_ms() + s->timeout_ms;
            }
            struct timespec ts = {(time_t)(deadline / 1000), (long)(deadline % 1000) * 1000000};
            int rc = pthread_cond_timedwait(&w->cv_done, &w->mu, &ts);
            if (rc == ETIMEDOUT && w->next == seen && w->done_gen != w->gen) {
                timed_out = 1;
                break;
            }
        }
        size_t done = w->next;
        for (size_t i = 0; i < done; i++) {
            fs_mount *m = &s->m[todo[i]];
            m->st = w->res[i];
            m->err = w->rc[i] != 0;
        }
        if (!timed_out) {
            pthread_mutex_unlock(&w->mu);
            return;
        }
        /* todo[done] is stuck in this helper: leave it there */
        w->abandoned = 1;
        pthread_mutex_unlock(&w->mu);
        pthread_detach(w->tid);
        fs_mount *m = &s->m[todo[done]];
        m->stuck = w; /* the collector's reference moves to the mount */
        m->err = 1;
        s->helper = NULL;
        todo += done + 1;
        n -= done + 1;
    }
}

/* ---- the mount table ---- */

static void mount_free_one(fs_mount *m) {
    if (m->stuck) helper_unref(m->stuck);
    free(m->dev);
    free(m->mnt);
    free(m->fstype);
    free(m->path);
    free(m->lbl);
}

static void mounts_rebuild(agent_host *h, base_str text) {
    host_fs_state *s = h->fs;
    fs_mount *old = s->m, *nw = NULL;
    size_t nold = s->nm, n = 0, cap = 0;
    size_t rl = strcmp(h->rootfs, "/") == 0 ? 0 : strlen(h->rootfs);
    size_t deccap = text.n + 1;
    char *dec = malloc(deccap);
    if (!dec) return;
    while (text.n) {
        base_str line = agent__host_next_line(&text), dev, mnt, fstype, opts;
        if (!agent__host_parse_mount(line, &dev, &mnt, &fstype, &opts, dec, deccap)) continue;
        /* strip the rootfs prefix (node_exporter's rootfsStripPrefix) */
        if (rl && mnt.n >= rl && memcmp(mnt.p, h->rootfs, rl) == 0) {
            mnt.p += rl;
            mnt.n -= rl;
            if (!mnt.n) mnt = (base_str){"/", 1};
        }
        if (agent__host_mountpoint_excluded(mnt.p, mnt.n) || agent__host_fstype_excluded(fstype.p, fstype.n))
            continue;
        int dup = 0;
        for (size_t i = 0; i < n && !dup; i++)
            dup = base_str_eqc(dev, nw[i].dev) && base_str_eqc(mnt, nw[i].mnt) &&
                  base_str_eqc(fstype, nw[i].fstype);
        if (dup || n == HOST_MAX_DEVICES) continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 16;
            fs_mount *p = realloc(nw, cap * sizeof *p);
            if (!p) break;
            nw = p;
        }
        fs_mount *m = &nw[n];
        memset(m, 0, sizeof *m);
        m->dev = agent__host_strndup(dev.p, dev.n);
        m->mnt = agent__host_strndup(mnt.p, mnt.n);
        m->fstype = agent__host_strndup(fstype.p, fstype.n);
        agent__host_lb_reset(h);
        agent__host_lb_add(h, "device", dev.p, dev.n);
        agent__host_lb_add(h, "fstype", fstype.p, fstype.n);
        agent__host_lb_add(h, "mountpoint", mnt.p, mnt.n);
        m->lbl = agent__host_lb_dup(h);
        size_t pl = rl + mnt.n + 2;
        m->path = malloc(pl);
        if (m->path) {
            if (rl && mnt.n == 1 && mnt.p[0] == '/')
                snprintf(m->path, pl, "%s", h->rootfs);
            else
                snprintf(m->path, pl, "%.*s%.*s", (int)rl, h->rootfs, (int)mnt.n, mnt.p);
        }
        for (base_str o = opts; o.n;) {
            const char *c = memchr(o.p, ',', o.n);
            size_t l = c ? (size_t)(c - o.p) : o.n;
            if (l == 2 && memcmp(o.p, "ro", 2) == 0) m->ro = 1;
            o.p += l + (c ? 1 : 0);
            o.n -= l + (c ? 1 : 0);
        }
        if (!m->dev || !m->mnt || !m->fstype || !m->lbl || !m->path) {
            mount_free_one(m);
            continue;
        }
        /* a mount still stuck stays stuck (node_exporter keys it by mount point) */
        for (size_t j = 0; j < nold; j++)
            if (old[j].stuck && strcmp(old[j].mnt, m->mnt) == 0) {
                m->stuck = old[j].stuck;
                old[j].stuck = NULL;
                break;
            }
        n++;
    }
    free(dec);
    for (size_t j = 0; j < nold; j++) mount_free_one(&old[j]);
    free(old);
    s->m = nw;
    s->nm = n;
    h->rebuilds++;
}

static int statfs_default(const char *path, struct statfs *buf) {
    return statfs(path, buf);
}

int agent__host_fs_new(agent_host *h) {
    host_fs_state *s = calloc(1, sizeof *s);
    if (!s) return BASE_E_NOMEM;
    h->fs = s;
    s->f_mounts = agent__host_file(h->proc_fd, "1/mounts");
    s->f_mounts_fallback = agent__host_file(h->proc_fd, "mounts");
    s->fn = statfs_default;
    s->timeout_ms = HOST_STATFS_TIMEOUT_MS;
    return 0;
}

void agent__host_fs_set_statfs(agent_host *h, agent_host_statfs_fn fn, int timeout_ms) {
    h->fs->fn = fn ? fn : statfs_default;
    if (timeout_ms > 0) h->fs->timeout_ms = timeout_ms;
}

size_t agent__host_fs_stuck(const agent_host *h) {
    return h->fs ? (size_t)count_stuck(h->fs) : 0;
}

void agent__host_fs_free(agent_host *h) {
    host_fs_state *s = h->fs;
    if (!s) return;
    if (s->helper) helper_stop(s->helper);
    for (size_t i = 0; i < s->nm; i++) mount_free_one(&s->m[i]);
    free(s->m);
    agent__host_file_close(h, &s->f_mounts);
    agent__host_file_close(h, &s->f_mounts_fallback);
    free(s->last);
    free(s->todo);
    free(s);
    h->fs = NULL;
}

/* Reads the mount table when it may have changed; 0 when the table is usable. */
static int refresh_mounts(agent_host *h) {
    host_fs_state *s = h->fs;
    if (s->src && s->src->fd >= 0 && s->on_procfs) {
        struct pollfd p = {s->src->fd, POLLPRI, 0};
        if (poll(&p, 1, 0) == 0) return 0; /* unchanged since the last read */
    }
    base_str t;
    int rc = agent__host_read(h, &s->f_mounts, &t);
    s->src = &s->f_mounts;
    if (rc == BASE_E_NOTFOUND) {
        rc = agent__host_read(h, &s->f_mounts_fallback, &t);
        s->src = &s->f_mounts_fallback;
    }
    if (rc != 0) {
        s->src = NULL;
        return rc;
    }
    if (s->src->fd >= 0) {
        struct statfs sf;
        s->on_procfs = fstatfs(s->src->fd, &sf) == 0 && sf.f_type == PROC_SUPER_MAGIC;
    }
    if (s->last && s->last_len == t.n && memcmp(s->last, t.p, t.n) == 0) return 0;
    char *copy = realloc(s->last, t.n + 1);
    if (!copy) return BASE_E_NOMEM;
    memcpy(copy, t.p, t.n);
    s->last = copy;
    s->last_len = t.n;
    mounts_rebuild(h, (base_str){copy, t.n});
    return 0;
}

void agent__host_fs_collect(agent_host *h, expo_mset *ms) {
    host_fs_state *s = h->fs;
    if (refresh_mounts(h) != 0 || !s->nm) return;
    if (s->nm > s->todo_cap) {
        size_t *p = realloc(s->todo, s->nm * sizeof *p);
        if (!p) return;
        s->todo = p;
        s->todo_cap = s->nm;
    }
    size_t n = 0;
    for (size_t i = 0; i < s->nm; i++) {
        fs_mount *m = &s->m[i];
        m->err = 0;
        if (m->stuck) {
            pthread_mutex_lock(&m->stuck->mu);
            int back = m->stuck->returned;
            pthread_mutex_unlock(&m->stuck->mu);
            if (!back) {
                m->err = 1;
                continue;
            }
            helper_unref(m->stuck); /* recovered: statfs it again */
            m->stuck = NULL;
        }
        s->todo[n++] = i;
    }
    run_statfs(h, s->todo, n);

    expo_family *f[7];
    for (int k = 0; k < 7; k++) f[k] = agent__host_fam(ms, HOST_M_FS_AVAIL + k);
    for (size_t i = 0; i < s->nm; i++) {
        fs_mount *m = &s->m[i];
        expo_mset_add(ms, f[HOST_M_FS_DEVICE_ERROR - HOST_M_FS_AVAIL], NULL, m->lbl, NULL, m->err ? 1 : 0);
        if (m->err) continue;
        double bs = (double)m->st.f_bsize;
        expo_mset_add(ms, f[HOST_M_FS_SIZE - HOST_M_FS_AVAIL], NULL, m->lbl, NULL,
                      (double)m->st.f_blocks * bs);
        expo_mset_add(ms, f[HOST_M_FS_FREE - HOST_M_FS_AVAIL], NULL, m->lbl, NULL,
                      (double)m->st.f_bfree * bs);
        expo_mset_add(ms, f[HOST_M_FS_AVAIL - HOST_M_FS_AVAIL], NULL, m->lbl, NULL,
                      (double)m->st.f_bavail * bs);
        expo_mset_add(ms, f[HOST_M_FS_FILES - HOST_M_FS_AVAIL], NULL, m->lbl, NULL, (double)m->st.f_files);
        expo_mset_add(ms, f[HOST_M_FS_FILES_FREE - HOST_M_FS_AVAIL], NULL, m->lbl, NULL,
                      (double)m->st.f_ffree);
        expo_mset_add(ms, f[HOST_M_FS_READONLY - HOST_M_FS_AVAIL], NULL, m->lbl, NULL, m->ro ? 1 : 0);
    }
}
