/* host.c -- the host collector's frame: lifecycle, the descriptor cache,
 * directory listings, family and label helpers, the cycle, and the small
 * one-file pieces (loadavg, pressure, entropy, filefd, uname, time).
 *
 * Reading. A host_file is opened relative to a directory descriptor on
 * first use and kept open while h->fds_kept < h->fd_cap (a quarter of
 * RLIMIT_NOFILE, at most 4096); beyond that it is opened per read. A whole
 * file is read with pread() from offset 0 until it returns 0 (seq_file
 * hands out about a page per call), into h->rb, which grows up to
 * HOST_MAX_FILE and then stays; a sysfs attribute is one pread() into
 * h->ab. When a kept descriptor fails (ENODEV, ESTALE: the device or file
 * went away) it is closed and the path opened again once, so a device that
 * was re-created under the same name is picked up.
 *
 * Invariants: h->fds_kept counts the descriptors held in host_files; every
 * string a cycle puts in the set is a catalog string, lives in the set's
 * arena, or is owned by h and unchanged until the next cycle starts.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "agent/host_int.h"
#include "base/err.h"
#include "base/num.h"
#include "base/utf8.h"

/* ---- reading ------------------------------------------------------------ */

static int open_file(const host_file *f) {
    if (f->dirfd < 0) return BASE_E_NOTFOUND;
    int fd = openat(f->dirfd, f->rel, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) return (errno == ENOENT || errno == ENOTDIR) ? BASE_E_NOTFOUND : BASE_E_IO;
    return fd;
}

void agent__host_file_close(agent_host *h, host_file *f) {
    if (f->fd >= 0) {
        close(f->fd);
        f->fd = -1;
        h->fds_kept--;
    }
}

/* Opens f if needed; *ret_temp tells whether the caller must close it. */
static int take_fd(agent_host *h, host_file *f, int *ret_temp) {
    *ret_temp = 0;
    if (f->fd >= 0) return f->fd;
    int fd = open_file(f);
    if (fd < 0) return fd;
    if (h->fds_kept < h->fd_cap) {
        f->fd = fd;
        h->fds_kept++;
    } else {
        *ret_temp = 1;
    }
    return fd;
}

static int gone_errno(int e) {
    return e == ENODEV || e == ESTALE || e == EBADF || e == ENXIO || e == ENOENT;
}

int agent__host_read(agent_host *h, host_file *f, base_str *ret) {
    for (int attempt = 0; attempt < 2; attempt++) {
        int temp;
        int fd = take_fd(h, f, &temp);
        if (fd < 0) return fd;
        size_t len = 0;
        int err = 0;
        for (;;) {
            if (len + 1 >= h->rb_cap) {
                if (h->rb_cap >= HOST_MAX_FILE) {
                    err = BASE_E_LIMIT;
                    break;
                }
                size_t cap = h->rb_cap * 2;
                char *p = realloc(h->rb, cap);
                if (!p) {
                    err = BASE_E_NOMEM;
                    break;
                }
                h->rb = p;
                h->rb_cap = cap;
            }
            ssize_t n = pread(fd, h->rb + len, h->rb_cap - 1 - len, (off_t)len);
            if (n < 0) {
                if (errno == EINTR) continue;
                err = gone_errno(errno) ? BASE_E_NOTFOUND : BASE_E_IO;
                break;
            }
            if (n == 0) break;
            len += (size_t)n;
        }
        if (temp) close(fd);
        if (err == BASE_E_NOTFOUND && !temp && attempt == 0) {
            agent__host_file_close(h, f);
            continue;
        }
        if (err) return err;
        h->rb[len] = '\0';
        *ret = (base_str){h->rb, len};
        return 0;
    }
    return BASE_E_IO;
}

int agent__host_read_attr(agent_host *h, host_file *f, size_t max, base_str *ret) {
    if (max > HOST_ATTR_MAX) max = HOST_ATTR_MAX;
    for (int attempt = 0; attempt < 2; attempt++) {
        int temp;
        int fd = take_fd(h, f, &temp);
        if (fd < 0) return fd;
        ssize_t n;
        do n = pread(fd, h->ab, max, 0);
        while (n < 0 && errno == EINTR);
        int e = errno;
        if (temp) close(fd);
        if (n < 0) {
            if (gone_errno(e) && !temp && attempt == 0) {
                agent__host_file_close(h, f);
                continue;
            }
            return BASE_E_IO;
        }
        h->ab[n] = '\0';
        *ret = (base_str){h->ab, (size_t)n};
        return 0;
    }
    return BASE_E_IO;
}

/* ---- directory listings --------------------------------------------------- */

static int names_push(host_names *l, const char *name, unsigned char type) {
    size_t n = strlen(name);
    if (l->n >= HOST_MAX_LISTING) return BASE_E_LIMIT;
    if (l->pool_len + n + 1 > l->pool_cap) {
        size_t cap = l->pool_cap ? l->pool_cap : 1024;
        while (cap < l->pool_len + n + 1) cap *= 2;
        char *p = realloc(l->pool, cap);
        if (!p) return BASE_E_NOMEM;
        l->pool = p;
        l->pool_cap = cap;
    }
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 32;
        host_dent *e = realloc(l->e, cap * sizeof *e);
        if (!e) return BASE_E_NOMEM;
        l->e = e;
        l->cap = cap;
    }
    memcpy(l->pool + l->pool_len, name, n + 1);
    l->e[l->n].off = (uint32_t)l->pool_len;
    l->e[l->n].type = type;
    l->n++;
    l->pool_len += n + 1;
    return 0;
}

static int dent_cmp(const void *a, const void *b, void *pool) {
    return strcmp((const char *)pool + ((const host_dent *)a)->off,
                  (const char *)pool + ((const host_dent *)b)->off);
}

int agent__host_list(agent_host *h, int dirfd, host_names *out) {
    out->n = 0;
    out->pool_len = 0;
    if (dirfd < 0) return BASE_E_NOTFOUND;
    if (lseek(dirfd, 0, SEEK_SET) < 0) return BASE_E_IO;
    for (;;) {
        ssize_t n = getdents64(dirfd, h->dents, sizeof h->dents);
        if (n < 0) {
            if (errno == EINTR) continue;
            return BASE_E_IO;
        }
        if (n == 0) break;
        for (ssize_t off = 0; off < n;) {
            struct dirent64 *d = (struct dirent64 *)(void *)(h->dents + off);
            off += d->d_reclen;
            if (d->d_name[0] == '.' &&
                (d->d_name[1] == '\0' || (d->d_name[1] == '.' && d->d_name[2] == '\0')))
                continue;
            int rc = names_push(out, d->d_name, d->d_type);
            if (rc) return rc;
        }
    }
    return 0;
}

void agent__host_names_sort(host_names *l) {
    if (l->n > 1) qsort_r(l->e, l->n, sizeof *l->e, dent_cmp, l->pool);
}

int agent__host_names_copy(host_names *dst, const host_names *src) {
    if (src->pool_len > dst->pool_cap) {
        char *p = realloc(dst->pool, src->pool_len);
        if (!p) return BASE_E_NOMEM;
        dst->pool = p;
        dst->pool_cap = src->pool_len;
    }
    if (src->n > dst->cap) {
        host_dent *e = realloc(dst->e, src->n * sizeof *e);
        if (!e) return BASE_E_NOMEM;
        dst->e = e;
        dst->cap = src->n;
    }
    if (src->pool_len) memcpy(dst->pool, src->pool, src->pool_len);
    if (src->n) memcpy(dst->e, src->e, src->n * sizeof *src->e);
    dst->pool_len = src->pool_len;
    dst->n = src->n;
    return 0;
}

int agent__host_names_equal(const host_names *a, const host_names *b) {
    if (a->n != b->n) return 0;
    for (size_t i = 0; i < a->n; i++)
        if (strcmp(host_names_at(a, i), host_names_at(b, i)) != 0) return 0;
    return 1;
}

void agent__host_names_free(host_names *l) {
    free(l->pool);
    free(l->e);
    memset(l, 0, sizeof *l);
}

int agent__host_entry_type(int dirfd, const host_names *l, size_t i, int follow) {
    int t = l->e[i].type;
    if (t != DT_UNKNOWN && !(follow && t == DT_LNK)) return t;
    struct stat st;
    if (fstatat(dirfd, host_names_at(l, i), &st, follow ? 0 : AT_SYMLINK_NOFOLLOW) != 0) return DT_UNKNOWN;
    if (S_ISDIR(st.st_mode)) return DT_DIR;
    if (S_ISREG(st.st_mode)) return DT_REG;
    if (S_ISLNK(st.st_mode)) return DT_LNK;
    return DT_UNKNOWN;
}

/* ---- catalog lookup and families ----------------------------------------- */

static uint64_t hash_name(const char *s, size_t n) {
    uint64_t x = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) x = (x ^ (unsigned char)s[i]) * 1099511628211ull;
    return x;
}

static int cat_build(agent_host *h) {
    size_t size = 64;
    while (size < 2 * (size_t)HOST_M__COUNT) size *= 2;
    h->cat_slots = calloc(size, sizeof *h->cat_slots);
    h->cat_stamp = calloc(HOST_M__COUNT, sizeof *h->cat_stamp);
    if (!h->cat_slots || !h->cat_stamp) return BASE_E_NOMEM;
    h->cat_mask = size - 1;
    for (int i = 0; i < HOST_M__COUNT; i++) {
        const char *nm = agent__host_metrics[i].name;
        size_t s = hash_name(nm, strlen(nm)) & h->cat_mask;
        while (h->cat_slots[s]) s = (s + 1) & h->cat_mask;
        h->cat_slots[s] = i + 1;
    }
    return 0;
}

const agent_metric *agent__host_cat_find(const agent_host *h, const char *name, size_t n) {
    size_t s = hash_name(name, n) & h->cat_mask;
    while (h->cat_slots[s]) {
        const agent_metric *m = &agent__host_metrics[h->cat_slots[s] - 1];
        if (strncmp(m->name, name, n) == 0 && m->name[n] == '\0') return m;
        s = (s + 1) & h->cat_mask;
    }
    return NULL;
}

expo_family *agent__host_fam(expo_mset *ms, int id) {
    const agent_metric *m = &agent__host_metrics[id];
    return expo_mset_family(ms, m->name, m->type, m->help, NULL);
}

/* Families made this cycle from generated names, so one name is never
 * started twice (a malformed file could repeat a field): catalog entries by
 * a cycle stamp, others by a short list. */
static int dyn_seen(agent_host *h, const agent_metric *m, const char *name) {
    if (m) {
        uint64_t *stamp = &h->cat_stamp[m - agent__host_metrics];
        if (*stamp == h->cycle) return 1;
        *stamp = h->cycle;
        return 0;
    }
    for (size_t i = 0; i < h->ndyn; i++)
        if (strcmp(h->dyn[i], name) == 0) return 1;
    if (h->ndyn == h->dyn_cap) {
        size_t cap = h->dyn_cap ? h->dyn_cap * 2 : 64;
        const char **d = realloc(h->dyn, cap * sizeof *d);
        if (!d) return 0;
        h->dyn = d;
        h->dyn_cap = cap;
    }
    h->dyn[h->ndyn++] = name;
    return 0;
}

expo_family *agent__host_fam_dyn(agent_host *h, expo_mset *ms, const char *name, size_t n, expo_type type,
                                 const char *help, size_t helpn) {
    const agent_metric *m = agent__host_cat_find(h, name, n);
    if (m) {
        if (dyn_seen(h, m, NULL)) return NULL;
        return expo_mset_family(ms, m->name, m->type, m->help, NULL);
    }
    char *nm = base_arena_strndup(&ms->arena, name, n);
    char *hp = base_arena_strndup(&ms->arena, help, helpn);
    if (!nm || !hp) {
        ms->err = BASE_E_NOMEM;
        return NULL;
    }
    if (dyn_seen(h, NULL, nm)) return NULL;
    return expo_mset_family(ms, nm, type, hp, NULL);
}

/* ---- labels ---------------------------------------------------------------- */

void agent__host_lb_reset(agent_host *h) {
    base_buf_reset(&h->lb);
    h->lb_bad = 0;
}

void agent__host_lb_add(agent_host *h, const char *name, const char *value, size_t n) {
    if (!value) value = ""; /* an empty view may have no pointer */
    /* not UTF-8, or a NUL our C strings cannot carry: the series is left out */
    if (!agent__host_utf8_valid(value, n) || memchr(value, '\0', n)) h->lb_bad = 1;
    expo_label_append_n(&h->lb, name, value, n);
}

const char *agent__host_lb_arena(agent_host *h, expo_mset *ms) {
    if (h->lb_bad) return NULL;
    if (h->lb.err) {
        ms->err = h->lb.err == BASE_E_NOMEM ? BASE_E_NOMEM : ms->err;
        return NULL;
    }
    char *p = base_arena_strndup(&ms->arena, h->lb.data ? h->lb.data : "", h->lb.len);
    if (!p) ms->err = BASE_E_NOMEM;
    return p;
}

char *agent__host_strndup(const char *s, size_t n) {
    char *p = malloc(n + 1);
    if (!p) return NULL;
    if (n) memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

char *agent__host_lb_dup(agent_host *h) {
    if (h->lb_bad || h->lb.err) return NULL;
    return agent__host_strndup(h->lb.data ? h->lb.data : "", h->lb.len);
}

/* ---- text ------------------------------------------------------------------ */

base_str agent__host_next_line(base_str *rest) {
    const char *nl = rest->n ? memchr(rest->p, '\n', rest->n) : NULL;
    base_str line;
    if (nl) {
        line = (base_str){rest->p, (size_t)(nl - rest->p)};
        rest->n -= line.n + 1;
        rest->p = nl + 1;
    } else {
        line = *rest;
        rest->p += rest->n;
        rest->n = 0;
    }
    return line;
}

static int is_blank(char c) {
    return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

static int is_space(char c) {
    return is_blank(c) || c == '\n';
}

base_str agent__host_next_field(base_str *line) {
    size_t i = 0;
    while (i < line->n && is_space(line->p[i])) i++;
    size_t start = i;
    while (i < line->n && !is_space(line->p[i])) i++;
    base_str f = {line->p + start, i - start};
    line->p += i;
    line->n -= i;
    return f;
}

base_str agent__host_trim(base_str s) {
    while (s.n && (is_blank(s.p[0]) || s.p[0] == '\n')) {
        s.p++;
        s.n--;
    }
    while (s.n && (is_blank(s.p[s.n - 1]) || s.p[s.n - 1] == '\n')) s.n--;
    return s;
}

int agent__host_utf8_valid(const char *s, size_t n) {
    return base_utf8_valid(s, n);
}

int agent__host_parse_int_base0(base_str s, int64_t *ret) {
    size_t i = 0;
    int neg = 0;
    if (i < s.n && (s.p[i] == '+' || s.p[i] == '-')) neg = s.p[i++] == '-';
    unsigned base = 10;
    if (i + 1 < s.n && s.p[i] == '0') {
        char c = s.p[i + 1];
        if (c == 'x' || c == 'X')
            base = 16, i += 2;
        else if (c == 'o' || c == 'O')
            base = 8, i += 2;
        else if (c == 'b' || c == 'B')
            base = 2, i += 2;
        else
            base = 8, i += 1;
    }
    if (i >= s.n) return BASE_E_PARSE;
    uint64_t v = 0, lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    for (; i < s.n; i++) {
        char c = s.p[i];
        unsigned d;
        if (c == '_') continue;
        if (c >= '0' && c <= '9')
            d = (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f')
            d = (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            d = (unsigned)(c - 'A' + 10);
        else
            return BASE_E_PARSE;
        if (d >= base) return BASE_E_PARSE;
        if (v > (lim - d) / base) return BASE_E_RANGE;
        v = v * base + d;
    }
    *ret = neg ? (int64_t)(0 - v) : (int64_t)v;
    return 0;
}

int agent__host_parse_float(base_str s, double *ret) {
    if (s.n == 0) return BASE_E_PARSE;
    return base_parse_double(s.p, s.n, ret);
}

/* ---- small pieces ------------------------------------------------------------ */

static void add1(expo_mset *ms, int id, double v) {
    expo_mset_add(ms, agent__host_fam(ms, id), NULL, NULL, NULL, v);
}

void agent__host_emit_loadavg(agent_host *h, base_str text, expo_mset *ms) {
    (void)h;
    double v[3];
    for (int i = 0; i < 3; i++)
        if (agent__host_parse_float(agent__host_next_field(&text), &v[i])) return;
    add1(ms, HOST_M_LOAD1, v[0]);
    add1(ms, HOST_M_LOAD5, v[1]);
    add1(ms, HOST_M_LOAD15, v[2]);
}

/* "some avg10=.. avg60=.. avg300=.. total=N" */
static int psi_total(base_str text, const char *which, uint64_t *ret) {
    while (text.n) {
        base_str line = agent__host_next_line(&text);
        base_str kind = agent__host_next_field(&line);
        if (!base_str_eqc(kind, which)) continue;
        for (base_str f = agent__host_next_field(&line); f.n; f = agent__host_next_field(&line))
            if (base_str_has_prefix(f, "total=")) return base_parse_u64(f.p + 6, f.n - 6, ret);
        return BASE_E_PARSE;
    }
    return BASE_E_NOTFOUND;
}

void agent__host_emit_pressure(agent_host *h, int kind, base_str text, expo_mset *ms) {
    (void)h;
    uint64_t some, full;
    int has_some = psi_total(text, "some", &some) == 0;
    int has_full = psi_total(text, "full", &full) == 0;
    /* node_exporter divides twice; keep its rounding */
    if (kind == 0) {
        if (has_some) add1(ms, HOST_M_PSI_CPU_WAITING, (double)some / 1000.0 / 1000.0);
    } else if (kind == 1) {
        if (has_some) add1(ms, HOST_M_PSI_IO_WAITING, (double)some / 1000.0 / 1000.0);
        if (has_full) add1(ms, HOST_M_PSI_IO_STALLED, (double)full / 1000.0 / 1000.0);
    } else {
        if (has_some) add1(ms, HOST_M_PSI_MEM_WAITING, (double)some / 1000.0 / 1000.0);
        if (has_full) add1(ms, HOST_M_PSI_MEM_STALLED, (double)full / 1000.0 / 1000.0);
    }
}

void agent__host_emit_filefd(agent_host *h, base_str text, expo_mset *ms) {
    (void)h;
    base_str a = agent__host_next_field(&text);
    agent__host_next_field(&text);
    base_str m = agent__host_next_field(&text);
    double va, vm;
    if (agent__host_parse_float(a, &va) || agent__host_parse_float(m, &vm)) return;
    add1(ms, HOST_M_FILEFD_ALLOCATED, va);
    add1(ms, HOST_M_FILEFD_MAXIMUM, vm);
}

static void emit_entropy(agent_host *h, expo_mset *ms) {
    base_str t;
    uint64_t v;
    if (agent__host_read(h, &h->f_entropy, &t) != 0) return;
    t = agent__host_trim(t);
    if (base_parse_u64(t.p, t.n, &v) != 0) return;
    add1(ms, HOST_M_ENTROPY_AVAIL, (double)v);
    if (agent__host_read(h, &h->f_poolsize, &t) != 0) return;
    t = agent__host_trim(t);
    if (base_parse_u64(t.p, t.n, &v) != 0) return;
    add1(ms, HOST_M_ENTROPY_POOL, (double)v);
}

static void emit_uname(agent_host *h, expo_mset *ms) {
    struct utsname u;
    if (uname(&u) != 0) return;
    agent__host_lb_reset(h);
    agent__host_lb_add(h, "domainname", u.domainname, strlen(u.domainname));
    agent__host_lb_add(h, "machine", u.machine, strlen(u.machine));
    agent__host_lb_add(h, "nodename", u.nodename, strlen(u.nodename));
    agent__host_lb_add(h, "release", u.release, strlen(u.release));
    agent__host_lb_add(h, "sysname", u.sysname, strlen(u.sysname));
    agent__host_lb_add(h, "version", u.version, strlen(u.version));
    const char *l = agent__host_lb_arena(h, ms);
    if (l) expo_mset_add(ms, agent__host_fam(ms, HOST_M_UNAME_INFO), NULL, l, NULL, 1);
}

static void emit_time(agent_host *h, expo_mset *ms) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    /* Go: float64(now.UnixNano()) / 1e9 */
    add1(ms, HOST_M_TIME_SECONDS, (double)((int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec) / 1e9);
    struct tm tm;
    time_t now = ts.tv_sec;
    if (!localtime_r(&now, &tm)) return;
    const char *zone = tm.tm_zone ? tm.tm_zone : "UTC";
    agent__host_lb_reset(h);
    agent__host_lb_add(h, "time_zone", zone, strlen(zone));
    const char *l = agent__host_lb_arena(h, ms);
    if (l)
        expo_mset_add(ms, agent__host_fam(ms, HOST_M_TIME_ZONE_OFFSET), NULL, l, NULL, (double)tm.tm_gmtoff);
}

/* ---- lifecycle ------------------------------------------------------------- */

static char *dup_root(const char *s, const char *def) {
    if (!s || !*s) s = def;
    size_t n = strlen(s);
    while (n > 1 && s[n - 1] == '/') n--;
    return agent__host_strndup(s, n);
}

static void set_err(char *err, size_t errlen, const char *fmt, const char *arg) {
    if (err && errlen) snprintf(err, errlen, fmt, arg);
}

int agent_host_new(const agent_host_opts *opts, agent_host **ret, char *err, size_t errlen) {
    agent_host_opts none = {0};
    if (!opts) opts = &none;
    agent_host *h = calloc(1, sizeof *h);
    if (!h) return BASE_E_NOMEM;
    h->proc_fd = h->sys_fd = h->net_class_fd = -1;
    host_file *files[] = {&h->f_stat,     &h->f_meminfo,   &h->f_loadavg, &h->f_psi[0],   &h->f_psi[1],
                          &h->f_psi[2],   &h->f_vmstat,    &h->f_netstat, &h->f_snmp,     &h->f_snmp6,
                          &h->f_sockstat, &h->f_sockstat6, &h->f_entropy, &h->f_poolsize, &h->f_filenr,
                          &h->f_netdev,   &h->f_diskstats};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) *files[i] = NO_FILE;
    base_buf_init(&h->lb, 1 << 20);
    base_buf_init(&h->nb, 1 << 16);
    h->procfs = dup_root(opts->procfs, "/proc");
    h->sysfs = dup_root(opts->sysfs, "/sys");
    h->rootfs = dup_root(opts->rootfs, "/");
    h->rb_cap = 65536;
    h->rb = malloc(h->rb_cap);
    int rc = BASE_E_NOMEM;
    if (!h->procfs || !h->sysfs || !h->rootfs || !h->rb || cat_build(h) != 0) goto fail;

    h->proc_fd = open(h->procfs, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (h->proc_fd < 0) {
        set_err(err, errlen, "cannot open procfs %s", h->procfs);
        rc = BASE_E_NOTFOUND;
        goto fail;
    }
    h->sys_fd = open(h->sysfs, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (h->sys_fd < 0) {
        set_err(err, errlen, "cannot open sysfs %s", h->sysfs);
        rc = BASE_E_NOTFOUND;
        goto fail;
    }
    struct rlimit rl = {0, 0};
    size_t cap = 256;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
        cap = (size_t)rl.rlim_cur / 4;
    else if (rl.rlim_cur == RLIM_INFINITY)
        cap = 4096;
    if (cap > 4096) cap = 4096;
    h->fd_cap = cap;
    h->page_size = sysconf(_SC_PAGESIZE);

    int p = h->proc_fd;
    h->f_stat = agent__host_file(p, "stat");
    h->f_meminfo = agent__host_file(p, "meminfo");
    h->f_loadavg = agent__host_file(p, "loadavg");
    h->f_psi[0] = agent__host_file(p, "pressure/cpu");
    h->f_psi[1] = agent__host_file(p, "pressure/io");
    h->f_psi[2] = agent__host_file(p, "pressure/memory");
    h->f_vmstat = agent__host_file(p, "vmstat");
    h->f_netstat = agent__host_file(p, "net/netstat");
    h->f_snmp = agent__host_file(p, "net/snmp");
    h->f_snmp6 = agent__host_file(p, "net/snmp6");
    h->f_sockstat = agent__host_file(p, "net/sockstat");
    h->f_sockstat6 = agent__host_file(p, "net/sockstat6");
    h->f_entropy = agent__host_file(p, "sys/kernel/random/entropy_avail");
    h->f_poolsize = agent__host_file(p, "sys/kernel/random/poolsize");
    h->f_filenr = agent__host_file(p, "sys/fs/file-nr");
    h->f_netdev = agent__host_file(p, "net/dev");
    h->f_diskstats = agent__host_file(p, "diskstats");

    size_t un = strlen(h->rootfs) + sizeof "/run/udev/data";
    h->udev_dir = malloc(un);
    if (!h->udev_dir) goto fail;
    snprintf(h->udev_dir, un, "%s/run/udev/data", strcmp(h->rootfs, "/") == 0 ? "" : h->rootfs);

    if ((rc = agent__host_sys_new(h)) != 0) goto fail;
    if ((rc = agent__host_fs_new(h)) != 0) goto fail;
    *ret = h;
    return 0;
fail:
    if (rc == BASE_E_NOMEM) set_err(err, errlen, "%s", "out of memory");
    agent_host_free(h);
    return rc;
}

static void close_file(agent_host *h, host_file *f) {
    agent__host_file_close(h, f);
}

void agent_host_free(agent_host *h) {
    if (!h) return;
    agent__host_fs_free(h);
    agent__host_sys_free(h);
    agent__host_proc_free(h);
    host_file *files[] = {&h->f_stat,     &h->f_meminfo,   &h->f_loadavg, &h->f_psi[0],   &h->f_psi[1],
                          &h->f_psi[2],   &h->f_vmstat,    &h->f_netstat, &h->f_snmp,     &h->f_snmp6,
                          &h->f_sockstat, &h->f_sockstat6, &h->f_entropy, &h->f_poolsize, &h->f_filenr,
                          &h->f_netdev,   &h->f_diskstats};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) close_file(h, files[i]);
    if (h->proc_fd >= 0) close(h->proc_fd);
    if (h->sys_fd >= 0) close(h->sys_fd);
    free(h->procfs);
    free(h->sysfs);
    free(h->rootfs);
    free(h->udev_dir);
    free(h->rb);
    free(h->cat_slots);
    free(h->cat_stamp);
    free(h->dyn);
    base_buf_free(&h->lb);
    base_buf_free(&h->nb);
    free(h);
}

void agent_host_get_stats(const agent_host *h, agent_host_stats *ret) {
    ret->cycles = h->cycle;
    ret->fds_open = h->fds_kept;
    ret->mounts_stuck = agent__host_fs_stuck(h);
    ret->rebuilds = h->rebuilds;
}

void agent_host_set_statfs(agent_host *h, agent_host_statfs_fn fn, int timeout_ms) {
    agent__host_fs_set_statfs(h, fn, timeout_ms);
}

void agent_host_set_fd_limit(agent_host *h, size_t max_fds) {
    h->fd_cap = max_fds;
}

/* ---- the cycle ------------------------------------------------------------- */

typedef void (*text_fn)(agent_host *, base_str, expo_mset *);

static void from_file(agent_host *h, host_file *f, text_fn fn, expo_mset *ms) {
    base_str t;
    if (agent__host_read(h, f, &t) == 0) fn(h, t, ms);
}

void agent__host_cycle_begin(agent_host *h) {
    h->cycle++;
    h->ndyn = 0;
}

int agent_host_collect(void *ctx, expo_mset *ms) {
    agent_host *h = ctx;
    agent__host_cycle_begin(h);
    base_str t;

    from_file(h, &h->f_stat, agent__host_emit_stat, ms); /* cpu + stat */
    from_file(h, &h->f_meminfo, agent__host_emit_meminfo, ms);
    from_file(h, &h->f_loadavg, agent__host_emit_loadavg, ms);
    for (int k = 0; k < 3; k++)
        if (agent__host_read(h, &h->f_psi[k], &t) == 0) agent__host_emit_pressure(h, k, t, ms);
    from_file(h, &h->f_vmstat, agent__host_emit_vmstat, ms);
    from_file(h, &h->f_netdev, agent__host_emit_netdev, ms);
    from_file(h, &h->f_diskstats, agent__host_emit_diskstats, ms);
    agent__host_sys_collect(h, ms); /* throttles, isolated, netclass, infiniband, hwmon, clocksources */
    agent__host_fs_collect(h, ms);
    emit_uname(h, ms);
    emit_time(h, ms);
    emit_entropy(h, ms);
    from_file(h, &h->f_filenr, agent__host_emit_filefd, ms);
    if (agent__host_read(h, &h->f_sockstat, &t) == 0) agent__host_emit_sockstat(h, t, 0, ms);
    if (agent__host_read(h, &h->f_sockstat6, &t) == 0) agent__host_emit_sockstat(h, t, 1, ms);
    if (agent__host_read(h, &h->f_netstat, &t) == 0) agent__host_emit_netstat(h, t, 0, ms);
    if (agent__host_read(h, &h->f_snmp, &t) == 0) agent__host_emit_netstat(h, t, 0, ms);
    if (agent__host_read(h, &h->f_snmp6, &t) == 0) agent__host_emit_netstat(h, t, 1, ms);
    return ms->err == BASE_E_NOMEM ? BASE_E_NOMEM : 0;
}
