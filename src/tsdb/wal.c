/* wal.c -- segment files, group commit, replay with repair, checkpoints
 * (format and policy in wal.h).
 *
 * State under w->mu: the pending batch (cur), the batch being written by
 * the leader (spare, touched only by the leader while `flushing`), ticket
 * counters (cur_batch: the batch that new enqueues join; done_batch: the
 * last one written), the sticky error, the fd and segment number. The
 * leader writes with mu released; only the leader rolls segments, and the
 * checkpoint's roll waits until no leader is active and becomes one.
 * The hold (wal.h HOLD) is an atomic stored under hold_mu, which a
 * checkpoint's commit holds while it deletes segments; seg_now mirrors
 * seg for lock-free readers. The frame reader and the listing are free
 * functions shared with replay: readers need no tsdb_wal.
 */
#include "tsdb/wal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <snappy-c.h>

#include "base/err.h"

/* ---- CRC-32C ------------------------------------------------------------ */

static uint32_t crc_table[8][256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;
static int crc_hw;

static void crc_init(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = (c >> 1) ^ (0x82f63b78u & (0u - (c & 1)));
        crc_table[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++)
        for (int t = 1; t < 8; t++)
            crc_table[t][i] = (crc_table[t - 1][i] >> 8) ^ crc_table[0][crc_table[t - 1][i] & 0xff];
#if defined(__x86_64__)
    __builtin_cpu_init();
    crc_hw = __builtin_cpu_supports("sse4.2");
#endif
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) static uint32_t crc_sse42(uint32_t c, const uint8_t *p, size_t n) {
    uint64_t c64 = c;
    for (; n >= 8; n -= 8, p += 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        c64 = __builtin_ia32_crc32di(c64, w);
    }
    c = (uint32_t)c64;
    for (; n; n--) c = __builtin_ia32_crc32qi(c, *p++);
    return c;
}
#endif

uint32_t tsdb_crc32c(uint32_t crc, const void *buf, size_t len) {
    pthread_once(&crc_once, crc_init);
    const uint8_t *p = buf;
    uint32_t c = ~crc;
#if defined(__x86_64__)
    if (crc_hw) return ~crc_sse42(c, p, len);
#endif
    for (; len >= 8; len -= 8, p += 8) { /* slicing by 8 (little endian words) */
        uint32_t lo =
            c ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
        c = crc_table[7][lo & 0xff] ^ crc_table[6][(lo >> 8) & 0xff] ^ crc_table[5][(lo >> 16) & 0xff] ^
            crc_table[4][lo >> 24] ^ crc_table[3][p[4]] ^ crc_table[2][p[5]] ^ crc_table[1][p[6]] ^
            crc_table[0][p[7]];
    }
    for (; len; len--) c = (c >> 8) ^ crc_table[0][(c ^ *p++) & 0xff];
    return ~c;
}

/* ---- framing ------------------------------------------------------------ */

static void put32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static uint32_t get32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

size_t tsdb_wal_frame_begin(base_buf *out) {
    size_t start = out->len;
    static const uint8_t zero[TSDB_WAL_FRAME_HDR];
    base_buf_append(out, zero, sizeof zero);
    return start;
}

int tsdb_wal_frame_end(base_buf *out, size_t start) {
    return tsdb_wal_frame_end_z(out, start, 0);
}

int tsdb_wal_frame_end_z(base_buf *out, size_t start, int compress) {
    if (out->err) return out->err;
    if (start + TSDB_WAL_FRAME_HDR > out->len) return BASE_E_INVAL;
    size_t n = out->len - start - TSDB_WAL_FRAME_HDR;
    if (n == 0 || n > TSDB_WAL_RECORD_MAX) return BASE_E_LIMIT;
    uint32_t flag = 0;
    if (compress && n >= TSDB_WAL_COMPRESS_MIN) {
        size_t clen = snappy_max_compressed_length(n);
        char *z = malloc(clen);
        if (!z) return BASE_E_NOMEM;
        /* kept only when it saves an eighth: replay pays for decompression */
        if (snappy_compress((const char *)out->data + start + TSDB_WAL_FRAME_HDR, n, z, &clen) == SNAPPY_OK &&
            clen < n - n / 8) {
            memcpy((uint8_t *)out->data + start + TSDB_WAL_FRAME_HDR, z, clen);
            out->len = start + TSDB_WAL_FRAME_HDR + clen;
            n = clen;
            flag = TSDB_WAL_FRAME_SNAPPY;
        }
        free(z);
    }
    uint8_t *h = (uint8_t *)out->data + start;
    put32(h, (uint32_t)n | flag);
    uint32_t c = tsdb_crc32c(0, h, 4);
    c = tsdb_crc32c(c, h + TSDB_WAL_FRAME_HDR, n);
    put32(h + 4, c);
    return 0;
}

/* ---- the log ------------------------------------------------------------ */

struct tsdb_wal {
    char *dir;
    tsdb_wal_opts o;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int fd;
    uint64_t seg, seg_bytes;
    base_buf cur, spare;
    uint64_t cur_batch, done_batch;
    int flushing;
    int err;
    int64_t last_sync_ns;
    tsdb_wal_stats st;
    uint64_t tail; /* stats.tail_bytes (under mu) */
    /* tsdb_wal_hold's segment (0: none). Stored under hold_mu, which a
     * checkpoint's commit holds while it deletes segments, so a hold that
     * has returned is seen by every later deletion. */
    _Atomic uint64_t hold;
    pthread_mutex_t hold_mu;
    _Atomic uint64_t seg_now; /* seg, for readers that hold no lock */
};

static void seterr(char *err, size_t errlen, const char *what, const char *path, int e) {
    if (errlen) snprintf(err, errlen, "%s %s: %s", what, path, strerror(e));
}

static int64_t mono_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int write_all(int fd, const void *p, size_t n) {
    const char *c = p;
    while (n) {
        ssize_t k = write(fd, c, n);
        if (k < 0) {
            if (errno == EINTR) continue;
            return BASE_E_IO;
        }
        c += k;
        n -= (size_t)k;
    }
    return 0;
}

static void fsync_dir(const char *dir) {
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        (void)fsync(fd);
        close(fd);
    }
}

static int open_segment(tsdb_wal *w, uint64_t seg) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%08" PRIu64, w->dir, seg);
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) return BASE_E_IO;
    struct stat sb;
    if (fstat(fd, &sb)) {
        close(fd);
        return BASE_E_IO;
    }
    if (w->fd >= 0) {
        (void)fdatasync(w->fd);
        close(w->fd);
        w->st.syncs++;
    }
    w->fd = fd;
    w->seg = seg;
    atomic_store(&w->seg_now, seg);
    w->seg_bytes = (uint64_t)sb.st_size;
    w->st.segment = seg;
    fsync_dir(w->dir);
    return 0;
}

/* Leader: writes spare (mu not held). Rolls first if the batch would
 * overflow a non-empty segment. */
static int write_batch(tsdb_wal *w, const base_buf *b) {
    if (b->len == 0) return 0;
    if (w->seg_bytes > 0 && w->seg_bytes + b->len > w->o.segment_size) {
        int e = open_segment(w, w->seg + 1);
        if (e) return e;
    }
    int e = write_all(w->fd, b->data, b->len);
    if (e) return e;
    w->seg_bytes += b->len;
    w->st.batches++;
    w->st.bytes += b->len;
    int64_t now = 0;
    if (w->o.sync == TSDB_WAL_SYNC_BATCH ||
        (w->o.sync == TSDB_WAL_SYNC_INTERVAL &&
         (now = mono_ns()) - w->last_sync_ns >= (int64_t)w->o.sync_interval_ms * 1000000)) {
        if (fdatasync(w->fd)) return BASE_E_IO;
        w->st.syncs++;
        w->last_sync_ns = now ? now : mono_ns();
    }
    return 0;
}

int tsdb_wal_enqueue(tsdb_wal *w, const void *frames, size_t len, uint64_t *ret_ticket) {
    pthread_mutex_lock(&w->mu);
    int e = w->err;
    if (!e) {
        base_buf_append(&w->cur, frames, len);
        e = base_buf_err(&w->cur);
        if (e) {
            base_buf_reset(&w->cur); /* drops pending frames: fail them all */
            w->err = e;
        } else {
            w->st.records++;
            *ret_ticket = w->cur_batch;
        }
    }
    pthread_mutex_unlock(&w->mu);
    return e;
}

/* With mu held: become the leader and write the pending batch. */
static void lead(tsdb_wal *w) {
    base_buf tmp = w->spare;
    w->spare = w->cur;
    w->cur = tmp;
    base_buf_reset(&w->cur);
    uint64_t batch = w->cur_batch++;
    w->flushing = 1;
    pthread_mutex_unlock(&w->mu);
    int e = write_batch(w, &w->spare);
    pthread_mutex_lock(&w->mu);
    if (e && !w->err) w->err = e;
    if (!e) w->tail += w->spare.len;
    w->done_batch = batch;
    w->flushing = 0;
    pthread_cond_broadcast(&w->cv);
}

int tsdb_wal_wait(tsdb_wal *w, uint64_t ticket) {
    pthread_mutex_lock(&w->mu);
    while (!w->err && w->done_batch < ticket) {
        if (!w->flushing)
            lead(w);
        else
            pthread_cond_wait(&w->cv, &w->mu);
    }
    int e = w->err;
    pthread_mutex_unlock(&w->mu);
    return e;
}

int tsdb_wal_log(tsdb_wal *w, const void *rec, size_t len) {
    base_buf b = BASE_BUF_INIT;
    size_t s = tsdb_wal_frame_begin(&b);
    base_buf_append(&b, rec, len);
    int e = tsdb_wal_frame_end_z(&b, s, w->o.compress);
    uint64_t t = 0;
    if (!e) e = tsdb_wal_enqueue(w, b.data, b.len, &t);
    base_buf_free(&b);
    return e ? e : tsdb_wal_wait(w, t);
}

int tsdb_wal_compressing(const tsdb_wal *w) {
    return w->o.compress;
}

void tsdb_wal_stats_get(tsdb_wal *w, tsdb_wal_stats *ret) {
    pthread_mutex_lock(&w->mu);
    *ret = w->st;
    ret->tail_bytes = w->tail;
    pthread_mutex_unlock(&w->mu);
}

uint64_t tsdb_wal_tail_bytes(tsdb_wal *w) {
    pthread_mutex_lock(&w->mu);
    uint64_t t = w->tail;
    pthread_mutex_unlock(&w->mu);
    return t;
}

/* Writes everything pending (mu held; returns with mu held, no leader). */
static int drain(tsdb_wal *w) {
    while (!w->err && (w->flushing || w->cur.len)) {
        if (w->flushing)
            pthread_cond_wait(&w->cv, &w->mu);
        else
            lead(w);
    }
    return w->err;
}

int tsdb_wal_flush(tsdb_wal *w) {
    pthread_mutex_lock(&w->mu);
    int e = w->o.read_only ? w->err : drain(w);
    pthread_mutex_unlock(&w->mu);
    return e;
}

int tsdb_wal_close(tsdb_wal *w) {
    if (!w) return 0;
    pthread_mutex_lock(&w->mu);
    int e = w->o.read_only ? 0 : drain(w);
    pthread_mutex_unlock(&w->mu);
    if (w->fd >= 0) {
        if (fdatasync(w->fd) && !e) e = BASE_E_IO;
        close(w->fd);
    }
    pthread_mutex_destroy(&w->mu);
    pthread_mutex_destroy(&w->hold_mu);
    pthread_cond_destroy(&w->cv);
    base_buf_free(&w->cur);
    base_buf_free(&w->spare);
    free(w->dir);
    free(w);
    return e;
}

/* ---- directory scan and replay ------------------------------------------ */

/* "%08u" names: 1 and the number when name is all digits (1..20 of them). */
static int parse_num(const char *s, uint64_t *ret) {
    uint64_t v = 0;
    size_t i = 0;
    for (; s[i]; i++) {
        if (s[i] < '0' || s[i] > '9' || i >= 19) return 0;
        v = v * 10 + (uint64_t)(s[i] - '0');
    }
    if (i == 0) return 0;
    *ret = v;
    return 1;
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

typedef struct scan {
    uint64_t *segs;
    size_t nsegs;
    uint64_t ckpt; /* newest checkpoint number, 0 if none */
    int has_ckpt;
} scan;

static void rm_tree(const char *path) {
    DIR *d = opendir(path);
    if (d) {
        struct dirent *de;
        while ((de = readdir(d))) {
            if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
            char p[4096];
            snprintf(p, sizeof p, "%s/%s", path, de->d_name);
            (void)unlink(p);
        }
        closedir(d);
    }
    (void)rmdir(path);
}

static int scan_dir(const char *dir, scan *s, int ro) {
    memset(s, 0, sizeof *s);
    DIR *d = opendir(dir);
    if (!d) return BASE_E_IO;
    size_t cap = 0;
    struct dirent *de;
    int e = 0;
    while ((de = readdir(d))) {
        uint64_t n;
        if (parse_num(de->d_name, &n)) {
            if (s->nsegs == cap) {
                cap = cap ? cap * 2 : 16;
                uint64_t *g = realloc(s->segs, cap * sizeof *g);
                if (!g) {
                    e = BASE_E_NOMEM;
                    break;
                }
                s->segs = g;
            }
            s->segs[s->nsegs++] = n;
        } else if (!strncmp(de->d_name, "checkpoint.", 11)) {
            const char *num = de->d_name + 11;
            size_t l = strlen(num);
            if (l > 4 && !strcmp(num + l - 4, ".tmp")) {
                if (ro) continue;
                char p[4096];
                snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
                rm_tree(p);
            } else if (parse_num(num, &n) && (!s->has_ckpt || n > s->ckpt)) {
                s->ckpt = n;
                s->has_ckpt = 1;
            }
        }
    }
    closedir(d);
    if (s->nsegs) qsort(s->segs, s->nsegs, sizeof *s->segs, cmp_u64);
    return e;
}

static void report(tsdb_wal_report *r, const char *path, const char *why, uint64_t off, const char *what) {
    r->corruptions++;
    /* a long path is cut short: the message is for one log line */
    if (!r->first_error[0] && snprintf(r->first_error, sizeof r->first_error,
                                       "WAL %s: %s at offset %" PRIu64 "; %s", path, why, off, what) < 0)
        r->first_error[0] = '\0';
}

/* Decompresses a snappy record into *buf (grown as needed): 0,
 * BASE_E_PARSE (not valid snappy, or larger than a record may be) or
 * BASE_E_NOMEM. */
static int unsnappy(const uint8_t *in, size_t n, uint8_t **buf, size_t *cap, size_t *ret_len) {
    size_t ulen;
    if (snappy_uncompressed_length((const char *)in, n, &ulen) != SNAPPY_OK || ulen == 0 ||
        ulen > TSDB_WAL_RECORD_MAX)
        return BASE_E_PARSE;
    if (ulen > *cap) {
        uint8_t *nb = realloc(*buf, ulen);
        if (!nb) return BASE_E_NOMEM;
        *buf = nb;
        *cap = ulen;
    }
    if (snappy_uncompress((const char *)in, n, (char *)*buf, &ulen) != SNAPPY_OK) return BASE_E_PARSE;
    *ret_len = ulen;
    return 0;
}

/* Reads one frame (see tsdb_wal_frame_read); *why gets the reason of a
 * BASE_E_TRUNCATED or BASE_E_PARSE, for replay's report. */
static int frame_read(const uint8_t *p, size_t len, uint8_t **zbuf, size_t *zcap, const uint8_t **ret_rec,
                      size_t *ret_len, size_t *ret_used, const char **why) {
    if (len < TSDB_WAL_FRAME_HDR) {
        *why = "torn frame header";
        return BASE_E_TRUNCATED;
    }
    uint32_t h = get32(p);
    uint32_t n = h & ~TSDB_WAL_FRAME_SNAPPY;
    if (n == 0 || n > TSDB_WAL_RECORD_MAX) {
        *why = "bad record length";
        return BASE_E_PARSE;
    }
    if (len - TSDB_WAL_FRAME_HDR < n) {
        *why = "record runs past the end of the file";
        return BASE_E_TRUNCATED;
    }
    if (tsdb_crc32c(tsdb_crc32c(0, p, 4), p + TSDB_WAL_FRAME_HDR, n) != get32(p + 4)) {
        *why = "CRC mismatch";
        return BASE_E_PARSE;
    }
    const uint8_t *rec = p + TSDB_WAL_FRAME_HDR;
    size_t rlen = n;
    if (h & TSDB_WAL_FRAME_SNAPPY) {
        int e = unsnappy(rec, n, zbuf, zcap, &rlen);
        if (e) {
            *why = "bad compressed record";
            return e;
        }
        rec = *zbuf;
    }
    *ret_rec = rec;
    *ret_len = rlen;
    *ret_used = TSDB_WAL_FRAME_HDR + (size_t)n;
    return 0;
}

int tsdb_wal_frame_read(const uint8_t *p, size_t len, uint8_t **zbuf, size_t *zcap, const uint8_t **ret_rec,
                        size_t *ret_len, size_t *ret_used) {
    const char *why = NULL;
    return frame_read(p, len, zbuf, zcap, ret_rec, ret_len, ret_used, &why);
}

/* Replays one file. last: 1 truncates at the first bad frame (2: the tail
 * of a read-only open, skipped instead). Returns 0 or
 * fn's error / BASE_E_IO / BASE_E_NOMEM. */
static int replay_file(const char *path, int last, int ckpt, tsdb_wal_replay_fn fn, void *ctx,
                       tsdb_wal_report *r) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return errno == ENOENT ? 0 : BASE_E_IO;
    struct stat sb;
    if (fstat(fd, &sb)) {
        close(fd);
        return BASE_E_IO;
    }
    size_t size = (size_t)sb.st_size;
    const uint8_t *m = NULL;
    if (size) {
        void *mm = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (mm == MAP_FAILED) {
            close(fd);
            return BASE_E_IO;
        }
        m = mm;
        (void)madvise(mm, size, MADV_SEQUENTIAL);
    }
    close(fd);
    size_t off = 0, zcap = 0;
    uint8_t *zbuf = NULL;
    int e = 0;
    const char *why = NULL;
    while (off < size) {
        const uint8_t *rec;
        size_t rlen, used;
        e = frame_read(m + off, size - off, &zbuf, &zcap, &rec, &rlen, &used, &why);
        if (e == BASE_E_TRUNCATED || e == BASE_E_PARSE) {
            e = 0;
            break;
        }
        why = NULL;
        if (e) break;
        if (fn && (e = fn(ctx, rec, rlen, ckpt))) break;
        r->records++;
        r->bytes += rlen;
        off += used;
    }
    if (m) munmap((void *)m, size);
    free(zbuf);
    if (e) return e;
    if (why) {
        if (last && !ckpt && last != 2) {
            report(r, path, why, off, "truncated there");
            r->truncated_bytes += size - off;
            if (truncate(path, (off_t)off)) return BASE_E_IO;
        } else {
            report(r, path, why, off, "rest of the file skipped");
            r->skipped_bytes += size - off;
        }
    }
    return 0;
}

int tsdb_wal_list(const char *dir, uint64_t **ret, size_t *ret_n, uint64_t *ret_ckpt) {
    scan s;
    int e = scan_dir(dir, &s, 1);
    if (e) {
        free(s.segs);
        return e;
    }
    *ret = s.segs;
    *ret_n = s.nsegs;
    *ret_ckpt = s.has_ckpt ? s.ckpt : 0;
    return 0;
}

int tsdb_wal_open(const char *dir, const tsdb_wal_opts *opts, tsdb_wal_replay_fn fn, void *ctx,
                  tsdb_wal_report *ret_report, tsdb_wal **ret, char *err, size_t errlen) {
    tsdb_wal_report rep;
    memset(&rep, 0, sizeof rep);
    if (strlen(dir) > 3800) { /* paths are built in 4 KiB buffers */
        if (errlen) snprintf(err, errlen, "WAL directory path too long");
        return BASE_E_LIMIT;
    }
    int ro = opts && opts->read_only;
    uint64_t hold_from = opts ? opts->hold_from : 0;
    struct stat dsb;
    if (ro ? stat(dir, &dsb) && errno != ENOENT : mkdir(dir, 0755) && errno != EEXIST) {
        seterr(err, errlen, ro ? "stat" : "mkdir", dir, errno);
        return BASE_E_IO;
    }
    scan s = {0};
    int e = ro && stat(dir, &dsb) ? 0 : scan_dir(dir, &s, ro);
    if (e) {
        seterr(err, errlen, "scan", dir, errno);
        free(s.segs);
        return e;
    }
    char path[4096];
    if (s.has_ckpt) {
        rep.checkpoint = s.ckpt;
        snprintf(path, sizeof path, "%s/checkpoint.%08" PRIu64 "/00000000", dir, s.ckpt);
        e = replay_file(path, 0, 1, fn, ctx, &rep);
    }
    uint64_t last = s.has_ckpt ? s.ckpt : 1, prev = 0, tail_bytes = 0;
    int have_prev = 0;
    for (size_t i = 0; i < s.nsegs && !e; i++) {
        snprintf(path, sizeof path, "%s/%08" PRIu64, dir, s.segs[i]);
        if (s.has_ckpt && s.segs[i] < s.ckpt) { /* covered by the checkpoint */
            if (!ro && !(hold_from && s.segs[i] >= hold_from)) (void)unlink(path);
            continue;
        }
        if (have_prev && s.segs[i] != prev + 1)
            report(&rep, path, "segment(s) missing before it", 0, "replaying on");
        /* the tail is the last segment with data: later ones may be empty
         * files created by opens that wrote nothing */
        int tail = 1;
        for (size_t j = i + 1; j < s.nsegs && tail; j++) {
            char p2[4096];
            struct stat sb;
            snprintf(p2, sizeof p2, "%s/%08" PRIu64, dir, s.segs[j]);
            if (stat(p2, &sb) || sb.st_size > 0) tail = 0;
        }
        e = replay_file(path, tail && ro ? 2 : tail, 0, fn, ctx, &rep);
        struct stat ssb;
        if (!stat(path, &ssb)) tail_bytes += (uint64_t)ssb.st_size; /* after any truncation */
        rep.segments++;
        prev = last = s.segs[i];
        have_prev = 1;
    }
    free(s.segs);
    if (e) {
        if (e == BASE_E_IO) seterr(err, errlen, "replay", dir, errno);
        return e;
    }
    tsdb_wal *w = calloc(1, sizeof *w);
    if (!w || !(w->dir = strdup(dir))) {
        free(w);
        return BASE_E_NOMEM;
    }
    w->o = opts ? *opts : (tsdb_wal_opts){0};
    if (!w->o.segment_size) w->o.segment_size = TSDB_WAL_SEGMENT_SIZE;
    if (!w->o.sync_interval_ms) w->o.sync_interval_ms = 1000;
    w->fd = -1;
    w->tail = tail_bytes;
    w->cur_batch = 1;
    w->last_sync_ns = mono_ns();
    atomic_init(&w->hold, hold_from);
    pthread_mutex_init(&w->mu, NULL);
    pthread_mutex_init(&w->hold_mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    if (ro) {
        w->err = BASE_E_INVAL; /* sticky: every append fails */
    } else if (open_segment(w, have_prev ? last + 1 : last)) {
        snprintf(path, sizeof path, "%s/%08" PRIu64, dir, have_prev ? last + 1 : last);
        seterr(err, errlen, "open", path, errno);
        w->fd = -1;
        tsdb_wal_close(w);
        return BASE_E_IO;
    }
    if (ret_report) *ret_report = rep;
    *ret = w;
    return 0;
}

void tsdb_wal_hold(tsdb_wal *w, uint64_t seg) {
    pthread_mutex_lock(&w->hold_mu);
    atomic_store(&w->hold, seg);
    pthread_mutex_unlock(&w->hold_mu);
}

uint64_t tsdb_wal_held(tsdb_wal *w) {
    return atomic_load_explicit(&w->hold, memory_order_relaxed);
}

uint64_t tsdb_wal_segment(tsdb_wal *w) {
    return atomic_load(&w->seg_now);
}

/* ---- checkpoints -------------------------------------------------------- */

struct tsdb_wal_ckpt {
    tsdb_wal *w;
    uint64_t n;
    uint64_t roll_tail; /* w->tail at the roll: what segments < n hold */
    uint64_t bytes;     /* framed so far */
    int fd;
    int err;
    base_buf buf;
    char tmp[4096], final[4096];
};

int tsdb_wal_ckpt_begin(tsdb_wal *w, tsdb_wal_ckpt **ret, char *err, size_t errlen) {
    tsdb_wal_ckpt *c = calloc(1, sizeof *c);
    if (!c) return BASE_E_NOMEM;
    pthread_mutex_lock(&w->mu);
    int e = drain(w);
    if (!e && (e = open_segment(w, w->seg + 1))) {
        w->err = e;
        seterr(err, errlen, "roll", w->dir, errno);
    }
    uint64_t n = w->seg, roll_tail = w->tail;
    pthread_mutex_unlock(&w->mu);
    if (e) {
        free(c);
        return e;
    }
    c->w = w;
    c->n = n;
    c->roll_tail = roll_tail;
    snprintf(c->tmp, sizeof c->tmp, "%s/checkpoint.%08" PRIu64 ".tmp", w->dir, n);
    snprintf(c->final, sizeof c->final, "%s/checkpoint.%08" PRIu64, w->dir, n);
    rm_tree(c->tmp);
    char path[4200];
    snprintf(path, sizeof path, "%s/00000000", c->tmp);
    if (mkdir(c->tmp, 0755) || (c->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) < 0) {
        seterr(err, errlen, "create", c->tmp, errno);
        rm_tree(c->tmp);
        free(c);
        return BASE_E_IO;
    }
    *ret = c;
    return 0;
}

int tsdb_wal_ckpt_add(tsdb_wal_ckpt *c, const void *rec, size_t len) {
    return tsdb_wal_ckpt_add_z(c, rec, len, c->w->o.compress);
}

uint64_t tsdb_wal_ckpt_number(const tsdb_wal_ckpt *c) {
    return c->n;
}

uint64_t tsdb_wal_ckpt_bytes(const tsdb_wal_ckpt *c) {
    return c->bytes;
}

int tsdb_wal_ckpt_add_z(tsdb_wal_ckpt *c, const void *rec, size_t len, int compress) {
    if (c->err) return c->err;
    size_t s = tsdb_wal_frame_begin(&c->buf);
    base_buf_append(&c->buf, rec, len);
    int e = tsdb_wal_frame_end_z(&c->buf, s, compress);
    if (!e) c->bytes += c->buf.len - s;
    if (!e && c->buf.len >= (1u << 20)) {
        e = write_all(c->fd, c->buf.data, c->buf.len);
        base_buf_reset(&c->buf);
    }
    return c->err = e;
}

void tsdb_wal_ckpt_abort(tsdb_wal_ckpt *c) {
    if (!c) return;
    close(c->fd);
    rm_tree(c->tmp);
    base_buf_free(&c->buf);
    free(c);
}

int tsdb_wal_ckpt_commit(tsdb_wal_ckpt *c, char *err, size_t errlen) {
    int e = c->err;
    if (!e && c->buf.len) e = write_all(c->fd, c->buf.data, c->buf.len);
    if (!e && fsync(c->fd)) e = BASE_E_IO;
    if (e) {
        seterr(err, errlen, "write", c->tmp, errno);
        tsdb_wal_ckpt_abort(c);
        return e;
    }
    fsync_dir(c->tmp);
    if (rename(c->tmp, c->final)) {
        seterr(err, errlen, "rename", c->tmp, errno);
        tsdb_wal_ckpt_abort(c);
        return BASE_E_IO;
    }
    fsync_dir(c->w->dir);
    pthread_mutex_lock(&c->w->mu);
    c->w->tail = c->w->tail > c->roll_tail ? c->w->tail - c->roll_tail : 0;
    pthread_mutex_unlock(&c->w->mu);
    /* The checkpoint is in place: drop what it replaces, but the held
     * segments (hold_mu keeps the hold from moving down meanwhile). */
    pthread_mutex_lock(&c->w->hold_mu);
    uint64_t hold = atomic_load(&c->w->hold);
    scan s;
    if (!scan_dir(c->w->dir, &s, 0)) {
        char path[4200];
        for (size_t i = 0; i < s.nsegs; i++) {
            if (s.segs[i] >= c->n || (hold && s.segs[i] >= hold)) continue;
            snprintf(path, sizeof path, "%s/%08" PRIu64, c->w->dir, s.segs[i]);
            (void)unlink(path);
        }
        DIR *d = opendir(c->w->dir);
        struct dirent *de;
        uint64_t n;
        while (d && (de = readdir(d))) {
            if (!strncmp(de->d_name, "checkpoint.", 11) && parse_num(de->d_name + 11, &n) && n < c->n) {
                snprintf(path, sizeof path, "%s/%s", c->w->dir, de->d_name);
                rm_tree(path);
            }
        }
        if (d) closedir(d);
    }
    pthread_mutex_unlock(&c->w->hold_mu);
    free(s.segs);
    close(c->fd);
    base_buf_free(&c->buf);
    free(c);
    return 0;
}
