/* procs.c -- PID to workload attribution from /proc; see procs.h.
 *
 * Design.
 *  - agent_proc_lookup() reads <root>/<pid>/stat first: its field 22 (start
 *    time in clock ticks since boot) plus the PID and the procfs root form
 *    the cache key, so a PID reused by a new process misses the cache. On a
 *    miss it reads comm and cgroup, then stat again: if the start time
 *    changed (or stat vanished) the process was replaced while we read, and
 *    the lookup is retried once, then reported as not found.
 *  - The cache is 4-way set associative (AGENT_PROC_CACHE_SIZE entries in
 *    sets of CACHE_WAYS), least recently used way replaced, one mutex; file
 *    I/O happens outside the lock.
 *  - agent_cgroup_parse() walks each "id:controllers:path" line's path
 *    segment by segment; see the rules on each matcher below. It never
 *    allocates and is linear in n.
 *
 * Invariants: every string in an agent_proc is NUL-terminated within its
 * array; pod_uid is "" or a validated UID; container_id is "" or 64
 * lowercase hex; slurm_job_id is "" or 1..20 digits; comm is valid UTF-8
 * without control bytes.
 */
#include "agent/procs.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/err.h"
#include "base/num.h"
#include "base/utf8.h"

#define CACHE_WAYS 4
#define CACHE_SETS (AGENT_PROC_CACHE_SIZE / CACHE_WAYS)
#define STAT_MAX   2048
#define COMM_MAX   256
#define CGROUP_MAX 16384

/* ---- cgroup paths ------------------------------------------------------------ */

typedef struct seg {
    const char *p;
    size_t n;
} seg;

static int has_prefix(seg s, const char *pre) {
    size_t n = strlen(pre);
    return s.n >= n && memcmp(s.p, pre, n) == 0;
}

static int has_suffix(seg s, const char *suf) {
    size_t n = strlen(suf);
    return s.n >= n && memcmp(s.p + s.n - n, suf, n) == 0;
}

static int contains(seg s, const char *needle) {
    return memmem(s.p, s.n, needle, strlen(needle)) != NULL;
}

static int is_lower_hex(char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

static int all_hex(const char *p, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!is_lower_hex(p[i])) return 0;
    return 1;
}

/* A pod UID: a UUID (8-4-4-4-12) or, for static pods, a 32-hex hash. In the
 * systemd form the UUID's dashes are underscores (sep == '_'). Writes the
 * dashed form. */
static int pod_uid(const char *p, size_t n, char sep, char out[40]) {
    if (n == 32) {
        if (!all_hex(p, n)) return 0;
    } else if (n == 36) {
        for (size_t i = 0; i < n; i++) {
            int dash = i == 8 || i == 13 || i == 18 || i == 23;
            if (dash ? p[i] != sep : !is_lower_hex(p[i])) return 0;
        }
    } else {
        return 0;
    }
    for (size_t i = 0; i < n; i++) out[i] = p[i] == sep ? '-' : p[i];
    out[n] = '\0';
    return 1;
}

/* cgroupfs "pod<uid>" or systemd "...-pod<uid_with_underscores>.slice". */
static int match_pod(seg s, char out[40]) {
    if (has_prefix(s, "pod") && pod_uid(s.p + 3, s.n - 3, '-', out)) return 1;
    if (!has_suffix(s, ".slice")) return 0;
    size_t end = s.n - 6;
    for (size_t i = end; i >= 4; i--) { /* the last "-pod" before ".slice" */
        if (memcmp(s.p + i - 4, "-pod", 4) == 0) return pod_uid(s.p + i, end - i, '_', out);
    }
    return 0;
}

/* "<runtime>-<64hex>[.scope]" or a bare 64-hex segment. */
static int match_container(seg s, char out[72]) {
    static const char *const prefixes[] = {"docker-", "cri-containerd-", "crio-", "containerd-", "libpod-"};
    if (has_suffix(s, ".scope")) s.n -= 6;
    if (s.n != 64) {
        for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++) {
            size_t pl = strlen(prefixes[i]);
            if (s.n == pl + 64 && has_prefix(s, prefixes[i])) {
                s.p += pl;
                s.n -= pl;
                break;
            }
        }
    }
    if (s.n != 64 || !all_hex(s.p, 64)) return 0;
    memcpy(out, s.p, 64);
    out[64] = '\0';
    return 1;
}

/* "job_<digits>", under a "slurm*" ancestor (checked by the caller). */
static int match_job(seg s, char out[24]) {
    if (!has_prefix(s, "job_") || s.n == 4 || s.n > 4 + 20) return 0;
    for (size_t i = 4; i < s.n; i++)
        if (s.p[i] < '0' || s.p[i] > '9') return 0;
    memcpy(out, s.p + 4, s.n - 4);
    out[s.n - 4] = '\0';
    return 1;
}

typedef struct cg_fields {
    char pod[40];
    char cid[72];
    char job[24];
} cg_fields;

static void scan_path(const char *p, size_t n, cg_fields *f) {
    int kube = 0, slurm = 0;
    size_t i = 0;
    while (i < n) {
        while (i < n && p[i] == '/') i++;
        size_t b = i;
        while (i < n && p[i] != '/') i++;
        seg s = {p + b, i - b};
        if (s.n == 0) continue;
        if (contains(s, "kubepods")) kube = 1;
        if (has_prefix(s, "slurm")) slurm = 1;
        char tmp[72];
        if (kube && !f->pod[0] && match_pod(s, tmp)) memcpy(f->pod, tmp, sizeof f->pod);
        if (match_container(s, tmp)) memcpy(f->cid, tmp, sizeof f->cid); /* innermost wins */
        if (slurm && !f->job[0] && match_job(s, tmp)) memcpy(f->job, tmp, sizeof f->job);
    }
}

int agent_cgroup_parse(const char *text, size_t n, agent_proc *ret) {
    if (!text || !ret) return BASE_E_PARSE;
    cg_fields all = {{0}, {0}, {0}};
    int good = 0;
    size_t i = 0;
    while (i < n) {
        const char *line = text + i;
        const char *nl = memchr(line, '\n', n - i);
        size_t ll = nl ? (size_t)(nl - line) : n - i;
        i += ll + (nl ? 1 : 0);
        /* hierarchy id: digits */
        size_t k = 0;
        while (k < ll && line[k] >= '0' && line[k] <= '9') k++;
        if (k == 0 || k >= ll || line[k] != ':') continue;
        const char *c2 = memchr(line + k + 1, ':', ll - k - 1);
        if (!c2) continue;
        size_t po = (size_t)(c2 - line) + 1;
        if (po >= ll || line[po] != '/') continue;
        good = 1;
        cg_fields f = {{0}, {0}, {0}};
        scan_path(line + po, ll - po, &f);
        if (!all.pod[0]) memcpy(all.pod, f.pod, sizeof all.pod);
        if (!all.cid[0]) memcpy(all.cid, f.cid, sizeof all.cid);
        if (!all.job[0]) memcpy(all.job, f.job, sizeof all.job);
    }
    if (!good) return BASE_E_PARSE;
    memcpy(ret->pod_uid, all.pod, sizeof ret->pod_uid);
    memcpy(ret->container_id, all.cid, sizeof ret->container_id);
    memcpy(ret->slurm_job_id, all.job, sizeof ret->slurm_job_id);
    return 0;
}

/* ---- comm --------------------------------------------------------------------- */

/* Copies a process name: trailing blanks trimmed, control bytes and invalid
 * UTF-8 replaced by '?', cut (on a character boundary) to fit out. */
static void comm_copy(const char *s, size_t n, char out[64]) {
    while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r')) n--;
    size_t o = 0, i = 0;
    while (i < n) {
        const unsigned char *u = (const unsigned char *)s + i;
        uint32_t rune;
        size_t len = base_utf8_decode(u, n - i, &rune);
        if (len == 1 && (u[0] < 0x20 || u[0] == 0x7f)) len = 0;
        size_t w = len ? len : 1;
        if (o + w > 63) break;
        if (len)
            memcpy(out + o, u, len);
        else
            out[o] = '?';
        o += w;
        i += len ? len : 1;
    }
    out[o] = '\0';
}

/* ---- /proc files ---------------------------------------------------------------- */

/* Reads up to cap bytes; 0, BASE_E_NOTFOUND or BASE_E_IO. *ret_full is 1
 * when the file may have been longer than cap. */
static int read_small(const char *path, char *buf, size_t cap, size_t *ret_n, int *ret_full) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return (errno == ENOENT || errno == ESRCH || errno == ENOTDIR) ? BASE_E_NOTFOUND : BASE_E_IO;
    size_t got = 0;
    while (got < cap) {
        ssize_t r = read(fd, buf + got, cap - got);
        if (r < 0) {
            if (errno == EINTR) continue;
            int e = errno;
            close(fd);
            return e == ESRCH ? BASE_E_NOTFOUND : BASE_E_IO;
        }
        if (r == 0) break;
        got += (size_t)r;
    }
    close(fd);
    *ret_n = got;
    if (ret_full) *ret_full = got == cap;
    return 0;
}

/* "pid (comm) state ppid ... starttime(22) ...": the start time, and the
 * name between the first '(' and the last ')' (a name may hold both). */
static int stat_parse(const char *s, size_t n, int pid, uint64_t *ret_start, char ret_comm[64]) {
    const char *open_p = memchr(s, '(', n);
    const char *close_p = memrchr(s, ')', n);
    if (!open_p || !close_p || close_p < open_p || open_p == s || open_p[-1] != ' ') return BASE_E_PARSE;
    int64_t spid;
    if (base_parse_i64(s, (size_t)(open_p - 1 - s), &spid) != 0 || spid != pid) return BASE_E_PARSE;
    size_t i = (size_t)(close_p - s) + 1;
    /* Fields after ')' start at field 3 (state); field 22 is the 20th. */
    for (int field = 3; field <= 22; field++) {
        if (i >= n || s[i] != ' ') return BASE_E_PARSE;
        i++;
        size_t b = i;
        while (i < n && s[i] != ' ' && s[i] != '\n') i++;
        if (field == 22) {
            uint64_t v;
            if (base_parse_u64(s + b, i - b, &v) != 0) return BASE_E_PARSE;
            *ret_start = v;
            comm_copy(open_p + 1, (size_t)(close_p - open_p - 1), ret_comm);
            return 0;
        }
    }
    return BASE_E_PARSE;
}

static int read_stat(const char *root, int pid, uint64_t *ret_start, char ret_comm[64]) {
    char path[PATH_MAX], buf[STAT_MAX];
    size_t n;
    int full;
    if ((size_t)snprintf(path, sizeof path, "%s/%d/stat", root, pid) >= sizeof path) return BASE_E_INVAL;
    int rc = read_small(path, buf, sizeof buf, &n, &full);
    if (rc == BASE_E_IO) return BASE_E_PARSE;
    if (rc) return rc;
    return stat_parse(buf, n, pid, ret_start, ret_comm);
}

/* ---- the cache ------------------------------------------------------------------ */

typedef struct cache_entry {
    uint64_t root;
    uint64_t start;
    uint64_t used; /* tick of last use; 0 = empty */
    agent_proc p;
} cache_entry;

static pthread_mutex_t cache_mu = PTHREAD_MUTEX_INITIALIZER;
static cache_entry cache[CACHE_SETS][CACHE_WAYS];
static uint64_t cache_tick, cache_hits, cache_misses;

static uint64_t fnv1a(const char *s) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    return h;
}

static size_t cache_set(uint64_t root, int pid) {
    uint64_t h = (root ^ (uint64_t)(unsigned)pid) * 0x9e3779b97f4a7c15ull;
    return (size_t)(h >> 32) % CACHE_SETS;
}

static int cache_get(uint64_t root, int pid, uint64_t start, agent_proc *ret) {
    int hit = 0;
    pthread_mutex_lock(&cache_mu);
    cache_entry *set = cache[cache_set(root, pid)];
    for (int w = 0; w < CACHE_WAYS; w++) {
        cache_entry *e = &set[w];
        if (e->used && e->root == root && e->p.pid == pid && e->start == start) {
            e->used = ++cache_tick;
            *ret = e->p;
            hit = 1;
            break;
        }
    }
    if (hit)
        cache_hits++;
    else
        cache_misses++;
    pthread_mutex_unlock(&cache_mu);
    return hit;
}

static void cache_put(uint64_t root, uint64_t start, const agent_proc *p) {
    pthread_mutex_lock(&cache_mu);
    cache_entry *set = cache[cache_set(root, p->pid)];
    cache_entry *victim = &set[0];
    for (int w = 0; w < CACHE_WAYS; w++) {
        cache_entry *e = &set[w];
        if (e->used && e->root == root && e->p.pid == p->pid) { /* same PID, older process */
            victim = e;
            break;
        }
        if (e->used < victim->used) victim = e;
    }
    victim->root = root;
    victim->start = start;
    victim->used = ++cache_tick;
    victim->p = *p;
    pthread_mutex_unlock(&cache_mu);
}

void agent_proc_cache_stats_get(agent_proc_cache_stats *ret) {
    pthread_mutex_lock(&cache_mu);
    size_t n = 0;
    for (size_t s = 0; s < CACHE_SETS; s++)
        for (int w = 0; w < CACHE_WAYS; w++) n += cache[s][w].used != 0;
    *ret = (agent_proc_cache_stats){.hits = cache_hits, .misses = cache_misses, .entries = n};
    pthread_mutex_unlock(&cache_mu);
}

void agent_proc_cache_clear(void) {
    pthread_mutex_lock(&cache_mu);
    memset(cache, 0, sizeof cache);
    cache_tick = cache_hits = cache_misses = 0;
    pthread_mutex_unlock(&cache_mu);
}

/* ---- lookup ------------------------------------------------------------------------ */

int agent_proc_lookup(const char *procfs_root, int pid, agent_proc *ret) {
    if (!procfs_root || !ret || pid <= 0) return BASE_E_INVAL;
    uint64_t root = fnv1a(procfs_root);
    char path[PATH_MAX];
    for (int attempt = 0; attempt < 2; attempt++) {
        uint64_t start, start2;
        char scomm[64], scomm2[64];
        int rc = read_stat(procfs_root, pid, &start, scomm);
        if (rc) return rc;
        if (cache_get(root, pid, start, ret)) return 0;

        agent_proc p;
        memset(&p, 0, sizeof p);
        p.pid = pid;
        char buf[CGROUP_MAX];
        size_t n;
        int full;
        if ((size_t)snprintf(path, sizeof path, "%s/%d/comm", procfs_root, pid) >= sizeof path)
            return BASE_E_INVAL;
        if (read_small(path, buf, COMM_MAX, &n, NULL) == 0)
            comm_copy(buf, n, p.comm);
        else
            memcpy(p.comm, scomm, sizeof p.comm);

        if ((size_t)snprintf(path, sizeof path, "%s/%d/cgroup", procfs_root, pid) >= sizeof path)
            return BASE_E_INVAL;
        if (read_small(path, buf, sizeof buf, &n, &full) == 0) {
            if (full) { /* drop a cut last line rather than half a path */
                const char *nl = memrchr(buf, '\n', n);
                n = nl ? (size_t)(nl - buf) : 0;
            }
            agent_cgroup_parse(buf, n, &p);
        }

        rc = read_stat(procfs_root, pid, &start2, scomm2);
        if (rc == BASE_E_NOTFOUND) return rc;
        if (rc == 0 && start2 == start) {
            cache_put(root, start, &p);
            *ret = p;
            return 0;
        }
    }
    return BASE_E_NOTFOUND;
}
