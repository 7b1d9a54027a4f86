/* xid.c -- the XID store, its deduplication, the kernel log tail, and
 * NVIDIA's table of XID descriptions. See xid.h for the contract.
 *
 * Design.
 *  - One mutex guards everything in the store. GPUs live in a fixed array
 *    of pointers (allocated on first sight, never moved or freed before
 *    agent_xid_free), each with a sorted array of per-code counters and a
 *    small table of "pending" events: counted events that may still be
 *    reported by the other source.
 *  - agent_xid_record(): normalise the bus id to a 64-bit key
 *    (domain << 16 | bus << 8 | device); look for a pending event with the
 *    same code, from the other source, within the window: if one exists it
 *    is consumed and nothing is counted; otherwise the code's counter grows,
 *    "last" becomes this code, and the event becomes pending itself.
 *    Pending slots whose time is more than the window away from the new
 *    event are free; when none is free the oldest is replaced (it then
 *    cannot match any more, which at worst counts one XID twice).
 *  - The tail thread owns the log's file descriptor. It waits in poll(2) on
 *    the descriptor and an eventfd that agent_xid_free() signals, so it
 *    stops at once. /dev/kmsg returns one record per read(2) and EPIPE when
 *    records were overwritten before we read them (counted, then we go
 *    on). A regular file or FIFO returns 0 at its end; the thread then
 *    sleeps KMSG_IDLE_MS on the eventfd alone and reads again (tail -f).
 *    Bytes are split into lines of at most KMSG_LINE_MAX bytes (longer
 *    lines are cut; the XID sits at the start of the message).
 *
 * Invariants.
 *  - gpus[0..ngpus) are non-NULL; codes[0..ncodes) are sorted by xid,
 *    distinct; counters never decrease.
 *  - The tail thread runs iff kmsg_started; agent_xid_free() joins it
 *    before it frees anything the thread uses.
 *
 * Ownership: the store owns its GPUs, the descriptor and the eventfd.
 */
#include "agent/xid.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/err.h"
#include "base/log.h"
#include "base/time.h"

#define KMSG_IDLE_MS   200
#define KMSG_READ_MAX  8192 /* /dev/kmsg needs room for a whole record */
#define KMSG_LINE_MAX  1024
#define KMSG_DRAIN_MAX (1u << 20) /* bytes discarded from a FIFO at start */

typedef struct xid_pending {
    int64_t t;
    unsigned xid;
    int src; /* 0 = free */
} xid_pending;

typedef struct xid_gpu {
    uint64_t key;
    unsigned ncodes;
    agent_xid_count codes[AGENT_XID_MAX_CODES];
    int has_last;
    unsigned last;
    xid_pending pend[AGENT_XID_PENDING];
} xid_gpu;

struct agent_xid {
    pthread_mutex_t mu;
    unsigned ngpus;
    xid_gpu *gpus[AGENT_XID_MAX_GPUS];
    agent_xid_stats st;

    /* The tail: set up by agent_xid_kmsg_start, read by the thread only. */
    int kmsg_started;
    pthread_t thread;
    int kfd;
    int stopfd;
    int skip_partial; /* regular file whose last line had no newline yet */
    char path[256];
};

/* ---- PCI bus ids ---------------------------------------------------------- */

static int hexdigit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Reads 1..maxd hex digits at s[*pos]. */
static int hex_group(const char *s, size_t n, size_t *pos, unsigned maxd, uint32_t *ret) {
    uint32_t v = 0;
    unsigned d = 0;
    while (*pos < n && hexdigit(s[*pos]) >= 0) {
        if (++d > maxd) return BASE_E_PARSE;
        v = v * 16 + (uint32_t)hexdigit(s[*pos]);
        (*pos)++;
    }
    if (d == 0) return BASE_E_PARSE;
    *ret = v;
    return 0;
}

/* Parses a bus id at the start of s[0..n): "[PCI:][domain:]bus:dev[.fn]".
 * Stops at the first byte that cannot continue it; *ret_used is how many
 * bytes were read. */
static int bdf_scan(const char *s, size_t n, size_t *ret_used, uint64_t *ret_key) {
    size_t pos = 0;
    if (n >= 4 && memcmp(s, "PCI:", 4) == 0) pos = 4;
    uint32_t g[3];
    unsigned ng = 0;
    for (;;) {
        if (hex_group(s, n, &pos, 8, &g[ng]) != 0) return BASE_E_PARSE;
        ng++;
        if (ng == 3 || pos >= n || s[pos] != ':') break;
        pos++;
    }
    if (ng < 2) return BASE_E_PARSE;
    uint32_t dom = ng == 3 ? g[0] : 0, bus = g[ng - 2], dev = g[ng - 1];
    if (bus > 0xff || dev > 0x1f) return BASE_E_PARSE;
    if (pos < n && s[pos] == '.') {
        if (pos + 1 >= n || s[pos + 1] < '0' || s[pos + 1] > '7') return BASE_E_PARSE;
        pos += 2;
    }
    *ret_used = pos;
    *ret_key = (uint64_t)dom << 16 | (uint64_t)bus << 8 | dev;
    return 0;
}

static void bdf_format(uint64_t key, char out[32]) {
    snprintf(out, 32, "%04x:%02x:%02x", (unsigned)(key >> 16), (unsigned)(key >> 8) & 0xff,
             (unsigned)key & 0xff);
}

static int bdf_key(const char *s, size_t n, uint64_t *ret_key) {
    size_t used;
    uint64_t key;
    if (bdf_scan(s, n, &used, &key) != 0 || used != n) return BASE_E_PARSE;
    *ret_key = key;
    return 0;
}

int agent_xid_bdf_normalize(const char *s, size_t n, char ret[32]) {
    uint64_t key;
    if (!s || bdf_key(s, n, &key) != 0) return BASE_E_PARSE;
    bdf_format(key, ret);
    return 0;
}

/* ---- kernel log lines ----------------------------------------------------- */

/* One candidate at p (just after "NVRM: Xid ("). */
static int parse_xid_at(const char *p, size_t n, uint64_t *ret_key, unsigned *ret_xid) {
    size_t pos;
    uint64_t key;
    if (bdf_scan(p, n, &pos, &key) != 0) return BASE_E_PARSE;
    /* MIG attribution (" GPU-I:05 GPU-CI:00") or anything else printable up
     * to the closing parenthesis, bounded. */
    size_t limit = pos + 64;
    while (pos < n && pos < limit && p[pos] != ')') {
        if ((unsigned char)p[pos] < 0x20 || p[pos] == '(' || p[pos] == 0x7f) return BASE_E_PARSE;
        pos++;
    }
    if (pos + 1 >= n || p[pos] != ')' || p[pos + 1] != ':') return BASE_E_PARSE;
    pos += 2;
    while (pos < n && p[pos] == ' ') pos++;
    uint64_t v = 0;
    size_t digits = 0;
    while (pos < n && p[pos] >= '0' && p[pos] <= '9') {
        if (++digits > 9) return BASE_E_PARSE;
        v = v * 10 + (uint64_t)(p[pos] - '0');
        pos++;
    }
    if (digits == 0 || pos >= n || p[pos] != ',') return BASE_E_PARSE;
    *ret_key = key;
    *ret_xid = (unsigned)v;
    return 0;
}

int agent_xid_parse_kmsg(const char *line, size_t n, char ret_bdf[32], unsigned *ret_xid) {
    static const char tag[] = "NVRM: Xid (";
    const size_t tl = sizeof tag - 1;
    if (!line) return BASE_E_PARSE;
    /* A /dev/kmsg record ends at its first newline; continuation lines
     * (" SUBSYSTEM=...") are not part of the message. */
    const char *nl = memchr(line, '\n', n);
    if (nl) n = (size_t)(nl - line);
    size_t off = 0;
    while (off < n) {
        const char *hit = memmem(line + off, n - off, tag, tl);
        if (!hit) break;
        size_t at = (size_t)(hit - line) + tl;
        uint64_t key;
        unsigned xid;
        if (parse_xid_at(line + at, n - at, &key, &xid) == 0) {
            bdf_format(key, ret_bdf);
            *ret_xid = xid;
            return 0;
        }
        off = at;
    }
    return BASE_E_PARSE;
}

/* ---- the store -------------------------------------------------------------- */

int agent_xid_new(agent_xid **ret) {
    agent_xid *x = calloc(1, sizeof *x);
    if (!x) return BASE_E_NOMEM;
    if (pthread_mutex_init(&x->mu, NULL) != 0) {
        free(x);
        return BASE_E_NOMEM;
    }
    x->kfd = x->stopfd = -1;
    *ret = x;
    return 0;
}

static void kmsg_stop(agent_xid *x) {
    if (!x->kmsg_started) return;
    uint64_t one = 1;
    while (write(x->stopfd, &one, sizeof one) < 0 && errno == EINTR) {
    }
    pthread_join(x->thread, NULL);
    close(x->kfd);
    close(x->stopfd);
    x->kfd = x->stopfd = -1;
    x->kmsg_started = 0;
}

void agent_xid_free(agent_xid *x) {
    if (!x) return;
    kmsg_stop(x);
    for (unsigned i = 0; i < x->ngpus; i++) free(x->gpus[i]);
    pthread_mutex_destroy(&x->mu);
    free(x);
}

static xid_gpu *gpu_find(agent_xid *x, uint64_t key) {
    for (unsigned i = 0; i < x->ngpus; i++)
        if (x->gpus[i]->key == key) return x->gpus[i];
    return NULL;
}

static int64_t absdiff(int64_t a, int64_t b) {
    /* Saturating |a - b| without signed overflow. */
    if (a >= b) return (b < 0 && a > INT64_MAX + b) ? INT64_MAX : a - b;
    return (a < 0 && b > INT64_MAX + a) ? INT64_MAX : b - a;
}

/* Consumes the oldest unmatched event of the other source; 1 if found. */
static int pending_match(xid_gpu *g, unsigned xid, int src, int64_t t) {
    int best = -1;
    for (int i = 0; i < AGENT_XID_PENDING; i++) {
        xid_pending *p = &g->pend[i];
        if (!p->src || p->src == src || p->xid != xid) continue;
        if (absdiff(p->t, t) > AGENT_XID_DEDUP_WINDOW_NS) continue;
        if (best < 0 || p->t < g->pend[best].t) best = i;
    }
    if (best < 0) return 0;
    g->pend[best].src = 0;
    return 1;
}

static void pending_add(xid_gpu *g, unsigned xid, int src, int64_t t) {
    int slot = -1;
    for (int i = 0; i < AGENT_XID_PENDING; i++) {
        xid_pending *p = &g->pend[i];
        if (!p->src || absdiff(p->t, t) > AGENT_XID_DEDUP_WINDOW_NS) {
            slot = i;
            break;
        }
        if (slot < 0 || p->t < g->pend[slot].t) slot = i;
    }
    g->pend[slot] = (xid_pending){.t = t, .xid = xid, .src = src};
}

/* The counter for xid, inserted in order if new; NULL when full. */
static agent_xid_count *code_slot(xid_gpu *g, unsigned xid) {
    unsigned i = 0;
    while (i < g->ncodes && g->codes[i].xid < xid) i++;
    if (i < g->ncodes && g->codes[i].xid == xid) return &g->codes[i];
    if (g->ncodes == AGENT_XID_MAX_CODES) return NULL;
    memmove(&g->codes[i + 1], &g->codes[i], (g->ncodes - i) * sizeof g->codes[0]);
    g->codes[i] = (agent_xid_count){.xid = xid, .count = 0};
    g->ncodes++;
    return &g->codes[i];
}

static void record_key(agent_xid *x, uint64_t key, unsigned xid, int source, int64_t t) {
    pthread_mutex_lock(&x->mu);
    xid_gpu *g = gpu_find(x, key);
    if (!g) {
        if (x->ngpus == AGENT_XID_MAX_GPUS || !(g = calloc(1, sizeof *g))) {
            x->st.dropped++;
            goto out;
        }
        g->key = key;
        x->gpus[x->ngpus++] = g;
    }
    if (pending_match(g, xid, source, t)) {
        x->st.deduplicated++;
        goto out;
    }
    agent_xid_count *c = code_slot(g, xid);
    if (!c) {
        x->st.dropped++;
        goto out;
    }
    c->count++;
    g->last = xid;
    g->has_last = 1;
    x->st.counted[source]++;
    pending_add(g, xid, source, t);
out:
    pthread_mutex_unlock(&x->mu);
}

void agent_xid_record(agent_xid *x, const char *pci_bus_id, unsigned xid, int source, int64_t mono_ns) {
    if (!x) return;
    uint64_t key;
    if (!pci_bus_id || (source != AGENT_XID_SRC_NVML && source != AGENT_XID_SRC_KMSG) ||
        bdf_key(pci_bus_id, strlen(pci_bus_id), &key) != 0) {
        pthread_mutex_lock(&x->mu);
        x->st.rejected++;
        pthread_mutex_unlock(&x->mu);
        return;
    }
    record_key(x, key, xid, source, mono_ns);
}

size_t agent_xid_counts(agent_xid *x, const char *pci_bus_id, agent_xid_count *out, size_t max) {
    uint64_t key;
    if (!x || !pci_bus_id || bdf_key(pci_bus_id, strlen(pci_bus_id), &key) != 0) return 0;
    size_t n = 0;
    pthread_mutex_lock(&x->mu);
    xid_gpu *g = gpu_find(x, key);
    if (g) {
        n = g->ncodes < max ? g->ncodes : max;
        if (n) memcpy(out, g->codes, n * sizeof *out);
    }
    pthread_mutex_unlock(&x->mu);
    return n;
}

int agent_xid_last(agent_xid *x, const char *pci_bus_id, unsigned *ret_xid) {
    uint64_t key;
    if (!x || !pci_bus_id || bdf_key(pci_bus_id, strlen(pci_bus_id), &key) != 0) return BASE_E_NOTFOUND;
    int rc = BASE_E_NOTFOUND;
    pthread_mutex_lock(&x->mu);
    xid_gpu *g = gpu_find(x, key);
    if (g && g->has_last) {
        *ret_xid = g->last;
        rc = 0;
    }
    pthread_mutex_unlock(&x->mu);
    return rc;
}

void agent_xid_stats_get(agent_xid *x, agent_xid_stats *ret) {
    pthread_mutex_lock(&x->mu);
    *ret = x->st;
    pthread_mutex_unlock(&x->mu);
}

/* ---- the kernel log tail -------------------------------------------------- */

static void set_err(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void set_err(char *err, size_t errlen, const char *fmt, ...) {
    if (!err || !errlen) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

/* strerror is not thread-safe; the GNU strerror_r returns the text. */
#define ERRSTR(e, eb) strerror_r((e), (eb), sizeof(eb))

static void kmsg_line(agent_xid *x, const char *line, size_t n) {
    if (n > 0 && line[0] == ' ') return; /* /dev/kmsg continuation (dictionary) line */
    char bdf[32];
    unsigned xid;
    int ok = agent_xid_parse_kmsg(line, n, bdf, &xid) == 0;
    uint64_t key = 0;
    if (ok) ok = bdf_key(bdf, strlen(bdf), &key) == 0;
    pthread_mutex_lock(&x->mu);
    x->st.kmsg_records++;
    if (ok) x->st.kmsg_xids++;
    pthread_mutex_unlock(&x->mu);
    if (ok) record_key(x, key, xid, AGENT_XID_SRC_KMSG, base_mono_ns());
}

typedef struct kmsg_lines {
    char buf[KMSG_LINE_MAX];
    size_t len;
    int skipping; /* discarding up to the next newline */
} kmsg_lines;

static void kmsg_feed(agent_xid *x, kmsg_lines *l, const char *p, size_t n) {
    while (n > 0) {
        const char *nl = memchr(p, '\n', n);
        size_t take = nl ? (size_t)(nl - p) : n;
        if (!l->skipping) {
            size_t room = sizeof l->buf - l->len;
            size_t c = take < room ? take : room;
            memcpy(l->buf + l->len, p, c);
            l->len += c;
        }
        if (!nl) return;
        if (!l->skipping) kmsg_line(x, l->buf, l->len);
        l->len = 0;
        l->skipping = 0;
        p = nl + 1;
        n -= take + 1;
    }
}

static void log_errno(const char *msg, const char *path, int e) {
    char eb[128];
    base_log(BASE_LOG_WARN, msg, "path", path, "err", strerror_r(e, eb, sizeof eb), NULL);
}

/* Restarts a regular file that was truncated under us (copytruncate). */
static void kmsg_check_truncated(int fd) {
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return;
    off_t cur = lseek(fd, 0, SEEK_CUR);
    if (cur > st.st_size) lseek(fd, 0, SEEK_SET);
}

static void *kmsg_thread(void *arg) {
    agent_xid *x = arg;
    kmsg_lines *l = calloc(1, sizeof *l);
    char *rd = malloc(KMSG_READ_MAX);
    if (!l || !rd) {
        base_log(BASE_LOG_ERROR, "kernel log tail stopped: out of memory", "path", x->path, NULL);
        goto done;
    }
    l->skipping = x->skip_partial;
    int idle = 0, logged = 0;
    for (;;) {
        struct pollfd p[2] = {{.fd = x->stopfd, .events = POLLIN}, {.fd = x->kfd, .events = POLLIN}};
        int r = poll(p, idle ? 1 : 2, idle ? KMSG_IDLE_MS : -1);
        if (r < 0) {
            if (errno == EINTR) continue;
            log_errno("kernel log tail stopped: poll failed", x->path, errno);
            break;
        }
        if (p[0].revents) break;
        if (!idle && !p[1].revents) continue;
        if (!idle && (p[1].revents & POLLNVAL)) break;
        if (idle) kmsg_check_truncated(x->kfd);
        idle = 0;
        ssize_t n = read(x->kfd, rd, KMSG_READ_MAX);
        if (n > 0) {
            kmsg_feed(x, l, rd, (size_t)n);
            continue;
        }
        if (n == 0) { /* end of a file, or a FIFO with no writer */
            idle = 1;
            continue;
        }
        if (errno == EINTR || errno == EAGAIN) continue;
        if (errno == EPIPE) { /* /dev/kmsg: records overwritten; the next read goes on */
            pthread_mutex_lock(&x->mu);
            x->st.kmsg_lost++;
            pthread_mutex_unlock(&x->mu);
            continue;
        }
        if (!logged) log_errno("kernel log read failed", x->path, errno);
        logged = 1;
        idle = 1;
    }
done:
    free(l);
    free(rd);
    pthread_mutex_lock(&x->mu);
    x->st.kmsg_running = 0;
    pthread_mutex_unlock(&x->mu);
    return NULL;
}

int agent_xid_kmsg_start(agent_xid *x, const char *path, char *err, size_t errlen) {
    if (!x || !path) return BASE_E_INVAL;
    char eb[128];
    if (x->kmsg_started) {
        set_err(err, errlen, "kernel log tail already started");
        return BASE_E_EXISTS;
    }
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        set_err(err, errlen, "open %s: %s", path, ERRSTR(errno, eb));
        return BASE_E_IO;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        set_err(err, errlen, "stat %s: %s", path, ERRSTR(errno, eb));
        close(fd);
        return BASE_E_IO;
    }
    x->skip_partial = 0;
    if (S_ISFIFO(st.st_mode)) {
        /* Whatever is already queued is the past: drop it (bounded). */
        char tmp[4096];
        size_t total = 0;
        ssize_t r;
        while (total < KMSG_DRAIN_MAX && (r = read(fd, tmp, sizeof tmp)) > 0) total += (size_t)r;
    } else if (lseek(fd, 0, SEEK_END) < 0 && !S_ISCHR(st.st_mode)) {
        set_err(err, errlen, "seek %s: %s", path, ERRSTR(errno, eb));
        close(fd);
        return BASE_E_IO;
    } else if (S_ISREG(st.st_mode) && st.st_size > 0) {
        char c;
        if (pread(fd, &c, 1, st.st_size - 1) == 1 && c != '\n') x->skip_partial = 1;
    }
    int sfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (sfd < 0) {
        set_err(err, errlen, "eventfd: %s", ERRSTR(errno, eb));
        close(fd);
        return BASE_E_IO;
    }
    x->kfd = fd;
    x->stopfd = sfd;
    snprintf(x->path, sizeof x->path, "%s", path);
    pthread_mutex_lock(&x->mu);
    x->st.kmsg_running = 1;
    pthread_mutex_unlock(&x->mu);
    if (pthread_create(&x->thread, NULL, kmsg_thread, x) != 0) {
        set_err(err, errlen, "cannot start the kernel log thread");
        close(fd);
        close(sfd);
        x->kfd = x->stopfd = -1;
        pthread_mutex_lock(&x->mu);
        x->st.kmsg_running = 0;
        pthread_mutex_unlock(&x->mu);
        return BASE_E_NOMEM;
    }
    x->kmsg_started = 1;
    return 0;
}

/* ---- descriptions ------------------------------------------------------------ */

/* NVIDIA's XID catalog (docs.nvidia.com/deploy/xid-errors), in the wording
 * dcgm-exporter puts in its err_msg label, so dashboards and alerts that
 * match on that label keep working. */
static const char *const xid_text[] = {
    [0] = "No Error",
    [1] = "Invalid or corrupted push buffer stream",
    [2] = "Invalid or corrupted push buffer stream",
    [3] = "Invalid or corrupted push buffer stream",
    [4] = "Invalid or corrupted push buffer stream",
    [5] = "Unused",
    [6] = "Invalid or corrupted push buffer stream",
    [7] = "Invalid or corrupted push buffer address",
    [8] = "GPU stopped processing",
    [9] = "Driver error programming GPU",
    [10] = "Unused",
    [11] = "Invalid or corrupted push buffer stream",
    [12] = "Driver error handling GPU exception",
    [13] = "Graphics Engine Exception",
    [14] = "Unused",
    [15] = "Unused",
    [16] = "Display engine hung",
    [17] = "Unused",
    [18] = "Bus mastering disabled in PCI Config Space",
    [19] = "Display Engine error",
    [20] = "Invalid or corrupted Mpeg push buffer",
    [21] = "Invalid or corrupted Motion Estimation push buffer",
    [22] = "Invalid or corrupted Video Processor push buffer",
    [23] = "Unused",
    [24] = "GPU semaphore timeout",
    [25] = "Invalid or illegal push buffer stream",
    [26] = "Framebuffer timeout",
    [27] = "Video processor exception",
    [28] = "Video processor exception",
    [29] = "Video processor exception",
    [30] = "GPU semaphore access error",
    [31] = "GPU memory page fault",
    [32] = "Invalid or corrupted push buffer stream",
    [33] = "Internal micro-controller error",
    [34] = "Video processor exception",
    [35] = "Video processor exception",
    [36] = "Video processor exception",
    [37] = "Driver firmware error",
    [38] = "Driver firmware error",
    [39] = "Unused",
    [40] = "Unused",
    [41] = "Unused",
    [42] = "Video processor exception",
    [43] = "GPU stopped processing",
    [44] = "Graphics Engine fault during context switch",
    [45] = "Preemptive cleanup, due to previous errors -- Most likely to see when running multiple cuda",
    [46] = "GPU stopped processing",
    [47] = "Video processor exception",
    [48] = "Double Bit ECC Error",
    [49] = "Unused",
    [50] = "Unused",
    [51] = "Unused",
    [52] = "Unused",
    [53] = "Unused",
    [54] = "Auxiliary power is not connected to the GPU board",
    [55] = "Unused",
    [56] = "Display Engine error",
    [57] = "Error programming video memory interface",
    [58] = "Unstable video memory interface detected",
    [59] = "Internal micro-controller error",
    [60] = "Video processor exception",
    [61] = "Internal micro-controller breakpoint/warning",
    [62] = "Internal micro-controller halt",
    [63] = "ECC page retirement or row remapping recording event",
    [64] = "ECC page retirement or row remapper recording failure",
    [65] = "Video processor exception",
    [66] = "Illegal access by driver",
    [67] = "Illegal access by driver",
    [68] = "NVDEC0 Exception",
    [69] = "Graphics Engine class error",
    [70] = "CE3: Unknown Error",
    [71] = "CE4: Unknown Error",
    [72] = "CE5: Unknown Error",
    [73] = "NVENC2 Error",
    [74] = "NVLINK Error",
    [75] = "CE6: Unknown Error",
    [76] = "CE7: Unknown Error",
    [77] = "CE8: Unknown Error",
    [78] = "vGPU Start Error",
    [79] = "GPU has fallen off the bus",
    [80] = "Corrupted data sent to GPU",
    [81] = "VGA Subsystem Error",
    [82] = "NVJPG0 Error",
    [83] = "NVDEC1 Error",
    [84] = "NVDEC2 Error",
    [85] = "CE9: Unknown Error",
    [86] = "OFA Exception",
    [87] = "Reserved",
    [88] = "NVDEC3 Error",
    [89] = "NVDEC4 Error",
    [90] = "Reserved",
    [91] = "Reserved",
    [92] = "High single-bit ECC error rate",
    [93] = "Non-fatal violation of provisioned InfoROM wear limit",
    [94] = "Contained ECC error",
    [95] = "Uncontained ECC error",
    [96] = "NVDEC5 Error",
    [97] = "NVDEC6 Error",
    [98] = "NVDEC7 Error",
    [99] = "NVJPG1 Error",
    [100] = "NVJPG2 Error",
    [101] = "NVJPG3 Error",
    [102] = "NVJPG4 Error",
    [103] = "NVJPG5 Error",
    [104] = "NVJPG6 Error",
    [105] = "NVJPG7 Error",
    [106] = "SMBPBI Test Message",
    [107] = "SMBPBI Test Message Silent",
    [108] = "Reserved",
    [109] = "Context Switch Timeout Error",
    [110] = "Security Fault Error",
    [111] = "Display Bundle Error Event",
    [112] = "Display Supervisor Error",
    [113] = "DP Link Training Error",
    [114] = "Display Pipeline Underflow Error",
    [115] = "Display Core Channel Error",
    [116] = "Display Window Channel Error",
    [117] = "Display Cursor Channel Error",
    [118] = "Display Pixel Pipeline Error",
    [119] = "GSP RPC Timeout",
    [120] = "GSP Error",
    [121] = "C2C Link Error",
    [122] = "SPI PMU RPC Read Failure",
    [123] = "SPI PMU RPC Write Failure",
    [124] = "SPI PMU RPC Erase Failure",
    [125] = "Inforom FS Failure",
    [126] = "Robust Channel CE10 Error",
    [127] = "Robust Channel CE11 Error",
    [128] = "Robust Channel CE12 Error",
    [129] = "Robust Channel CE13 Error",
    [130] = "Robust Channel CE14 Error",
    [131] = "Robust Channel CE15 Error",
    [132] = "Robust Channel CE16 Error",
    [133] = "Robust Channel CE17 Error",
    [134] = "Robust Channel CE18 Error",
    [135] = "Robust Channel CE19 Error",
    [136] = "ALI Training Fail",
    [137] = "NVLink Privilege Error",
    [138] = "Robust Channel DLA Error",
    [139] = "Robust Channel OFA1 Error",
    [140] = "Unrecovered ECC Error",
    [141] = "Robust Channel Fast Path Error",
    [142] = "Robust Channel NVENVC3 Error",
    [143] = "GPU Initialization Failure",
    [144] = "NVLINK: Saw Error",
    [145] = "NVLINK: RLW Error",
    [146] = "NVLINK: TLW Error",
    [147] = "NVLINK: TREX Error",
    [148] = "NVLINK: NVLPW_CTRL Error",
    [149] = "NVLINK: NETIR Error",
    [150] = "NVLINK: MSE Error",
    [151] = "Robust Channel Key rotation Error",
    [152] = "Robust Channel DLA SMMU Error",
    [153] = "Robust Channel DLA timeout Error",
    [154] = "GPU Recovery Action Changed",
    [155] = "NVLINK: SW Defined Error",
    [156] = "Resource Retirement Event",
    [157] = "Resource Retirement Failure",
    [158] = "GPU Fatal Timeout",
    [159] = "Robust Channel CHI Non-Data Error",
    [160] = "Channel Retirement Event",
    [161] = "Channel Retirement Failure",
    [162] = "Power Smoothing HW Circuitry Reengaged",
    [163] = "Power Smoothing HW Circuitry Disengaged",
    [164] = "Power Smoothing HW Circuitry Low Lifetime",
    [165] = "Power Smoothing HW Circuitry Lifetime Exhausted",
    [166] = "NVLINK Secure Crypto Error",
    [167] = "PCIE Fatal Timeout",
    [168] = "Reduced GPU Memory Capacity (Errors found in write protection region)",
    [169] = "Internal micro-controller halt",
    [170] = "NVLINK: Interrupt seen in CC mode",
    [171] = "Uncorrectable DRAM Error",
    [172] = "Uncorrectable SRAM Error",
};

const char *agent_xid_message(unsigned xid) {
    if (xid >= sizeof xid_text / sizeof xid_text[0] || !xid_text[xid]) return "";
    return xid_text[xid];
}
