/* reader.c -- a queue's reader thread: tails the WAL segment by segment
 * (2.42's tsdb/wlog/watcher.go, but from a saved position), keeps the
 * series table, dispatches samples to the shards, and runs the queue:
 * acknowledged position, position file, WAL hold, resharding, giving up
 * segments past the max hold. See remote_int.h for the data flow and the
 * invariants.
 *
 * READING. Segments are files <wal>/NNNNNNNN, read with pread into a
 * buffer (1 MiB, or one frame when larger), frames parsed by
 * tsdb_wal_frame_read. Where a frame is:
 *   whole                  -> handled, the reader moves past it
 *   cut short / absent, in the segment being written -> wait (poll_ms) and
 *                             read again: the writer is still appending
 *   cut short, in a finished segment -> read again after a poll or two
 *                             (the writer's last write may still land),
 *                             then counted as damage and the segment ends
 *   damaged (length, CRC)  -> in a finished segment: counted, logged once,
 *                             the rest of the segment skipped (frames
 *                             cannot be resynchronised); in the segment
 *                             being written: wait for it to finish first
 * A segment is finished once the WAL writes a later one
 * (tsdb_wal_segment); the file is read once more after seeing that, so a
 * last write that landed just before the roll is not missed.
 *
 * START. Records ending at or before the start (the position file's, or
 * the WAL's end when there is none: samples appended from then on are
 * sent, as Prometheus starts at the newest segment) are read for their
 * series only; sample records there are skipped on their type byte (for a
 * compressed frame the snappy stream's first literal), without CRC or
 * decompression. The newest checkpoint's series come first; its chunks
 * are never read (head.c writes a checkpoint's series records before its
 * chunks records: the reader stops at the first chunks record).
 *
 * RECORDS. Series: new refs get external labels (unless the series has the
 * name), write relabeling, then their labels packed (remote_series); a dropped
 * series is remembered as dropped; a known ref only updates its mark (a
 * ref names one series for the head's lifetime). Samples and out-of-order
 * samples: each sample of a kept series goes to shard ref % n, through a
 * per-shard staging array, one ring copy per shard per record; unknown refs
 * and dropped series count as dropped samples. Tombstones and chunks are
 * ignored.
 *
 * SERIES GC (2.42's SeriesReset). Once the queue's position and the reader
 * are both at or past a new checkpoint N, its series records are read
 * again (their mark becomes N) and series marked below N -- defined only
 * in segments the checkpoint replaced, and not live at the checkpoint --
 * leave the table; they are freed once the position passes the reader's
 * position of that moment (invariant 4).
 *
 * RESHARDING (2.42's calculateDesiredShards, every reshard_interval):
 * EWMAs (weight 0.2) of samples in (read and kept for sending), out (sent
 * or refused), dropped, and the time spent sending; delay = newest sample
 * in the head - newest sample sent; desired = time per sample x (in x kept
 * ratio + 5% of the backlog delay x in x kept ratio), rounded up, kept
 * unless it moves more than 30%, not lowered while more than 10 s behind,
 * clamped to min/max_shards, and applied only if a send finished within
 * 2 x batch_send_deadline. Resharding happens between records: the old
 * shards are flushed and waited for (up to the flush deadline), then
 * replaced; if they did not drain, they are stopped and their
 * unacknowledged samples re-read from the WAL (a filter skips what any of
 * them had acknowledged).
 *
 * MAX HOLD. Every max_hold / 4 (within 100 ms .. 10 s): if the queue's
 * position is in a finished segment whose file is older than max_hold_ms
 * (mtime), the segment is given up:
 * the shards are stopped, the samples of that segment still pending or
 * unread are counted as dropped, the reader restarts at the next segment
 * (a filter keeps what was acknowledged after it from being sent again)
 * and the hold moves on. Logged once per segment.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/err.h"
#include "base/log.h"
#include "base/time.h"
#include "remote/prompb.pb-c.h"
#include "remote/remote_int.h"
#include "tsdb/record.h"

#define READ_CHUNK ((size_t)1 << 20)

enum { STEP_REC, STEP_WAIT, STEP_ABORT };
enum { HK_OK, HK_RESET };

static int housekeeping(remote_queue *q, int in_record);

static void log_q(remote_queue *q, base_log_level lvl, const char *msg, const char *k1, const char *v1,
                  const char *k2, const char *v2) {
    const char *rn = q->c.remote_name, *u = q->c.url;
    if (!k1)
        base_log(lvl, msg, "remote_name", rn, "url", u, NULL);
    else if (!k2)
        base_log(lvl, msg, "remote_name", rn, "url", u, k1, v1, NULL);
    else
        base_log(lvl, msg, "remote_name", rn, "url", u, k1, v1, k2, v2, NULL);
}

/* ---- series table ---------------------------------------------------------- */

static inline size_t smap_hash(uint64_t ref) {
    uint64_t x = ref * UINT64_C(0x9E3779B97F4A7C15);
    return (size_t)(x ^ (x >> 31));
}

static remote_series *smap_get(const remote_smap *m, uint64_t ref) {
    if (!m->cap) return NULL;
    size_t mask = m->cap - 1;
    for (size_t i = smap_hash(ref) & mask;; i = (i + 1) & mask) {
        remote_series *s = m->slot[i];
        if (!s || s->ref == ref) return s;
    }
}

static void smap_insert(remote_series **slot, size_t cap, remote_series *s) {
    size_t mask = cap - 1;
    size_t i = smap_hash(s->ref) & mask;
    while (slot[i]) i = (i + 1) & mask;
    slot[i] = s;
}

static int smap_put(remote_smap *m, remote_series *s) {
    if ((m->n + 1) * 10 > m->cap * 7) {
        size_t nc = m->cap ? m->cap * 2 : 1024;
        remote_series **ns = calloc(nc, sizeof *ns);
        if (!ns) return BASE_E_NOMEM;
        for (size_t i = 0; i < m->cap; i++)
            if (m->slot[i]) smap_insert(ns, nc, m->slot[i]);
        free(m->slot);
        m->slot = ns;
        m->cap = nc;
    }
    smap_insert(m->slot, m->cap, s);
    m->n++;
    return 0;
}

/* ---- series records -------------------------------------------------------- */

typedef struct pair {
    base_str n, v;
} pair;

static int pair_cmp(const void *a, const void *b) {
    const pair *x = a, *y = b;
    size_t n = x->n.n < y->n.n ? x->n.n : y->n.n;
    int c = n ? memcmp(x->n.p, y->n.p, n) : 0;
    if (c) return c;
    return x->n.n < y->n.n ? -1 : x->n.n > y->n.n;
}

/* The series in r->b (just decoded) as the queue sends it. NULL: no memory. */
static remote_series *series_make(remote_queue *q, uint64_t ref, uint64_t mark) {
    remote_reader *r = &q->r;
    labels_builder *b = &r->b;
    int keep = 1;
    for (size_t i = 0; i < q->c.ext.n && keep; i++) {
        base_str n = base_str_c(q->c.ext.v[i].name);
        if (labels_builder_get(b, n).n == 0 && labels_builder_set(b, n, base_str_c(q->c.ext.v[i].value)) != 0)
            keep = 0;
    }
    if (keep && q->c.nrules) keep = relabel_process(q->c.rules, q->c.nrules, b) == 1;
    size_t np = 0, cap = r->npairs_cap;
    pair *ps = r->pairs;
    base_str *nv = r->views; /* names [0, cap), values [cap, 2 cap) */
    if (keep) {
        size_t total = labels_builder_pairs(b, nv, nv + cap, cap);
        if (total > cap) keep = 0;
        for (size_t i = 0; keep && i < total; i++)
            if (nv[cap + i].n > 0) ps[np++] = (pair){nv[i], nv[cap + i]};
    }
    if (keep && np > 1) {
        qsort(ps, np, sizeof *ps, pair_cmp);
        for (size_t i = 1; i < np && keep; i++)
            if (base_str_eq(ps[i].n, ps[i - 1].n)) keep = 0;
    }
    if (keep && np == 0) keep = 0;
    size_t len = 0;
    Prometheus__Label *lb = r->lbl_mem;
    Prometheus__Label **lp = (Prometheus__Label **)(lb + r->npairs_cap);
    Prometheus__TimeSeries ts = PROMETHEUS__TIME_SERIES__INIT;
    if (keep) {
        for (size_t i = 0; i < np; i++) {
            prometheus__label__init(&lb[i]);
            lb[i].name.len = ps[i].n.n;
            lb[i].name.data = (uint8_t *)ps[i].n.p;
            lb[i].value.len = ps[i].v.n;
            lb[i].value.data = (uint8_t *)ps[i].v.p;
            lp[i] = &lb[i];
        }
        ts.n_labels = np;
        ts.labels = lp;
        len = prometheus__time_series__get_packed_size(&ts);
        if (len > UINT32_MAX) keep = 0, len = 0;
    }
    remote_series *s = malloc(sizeof *s + len);
    if (!s) return NULL;
    s->ref = ref;
    s->mark = mark;
    s->len = (uint32_t)len;
    s->dropped = !keep;
    if (keep) prometheus__time_series__pack(&ts, s->lab);
    atomic_fetch_add(&q->st.series, 1);
    atomic_fetch_add(&q->st.series_bytes, sizeof *s + len);
    return s;
}

/* A series record entry: ref with its pairs in r->b. 0 or BASE_E_NOMEM. */
static int series_seen(remote_queue *q, uint64_t ref, uint64_t mark) {
    remote_series *s = smap_get(&q->r.map, ref);
    if (s) {
        if (mark > s->mark) s->mark = mark;
        return 0;
    }
    if (!(s = series_make(q, ref, mark))) return BASE_E_NOMEM;
    if (smap_put(&q->r.map, s) != 0) {
        free(s);
        return BASE_E_NOMEM;
    }
    return 0;
}

static int series_record(remote_queue *q, const uint8_t *rec, size_t len, uint64_t mark) {
    tsdb_rec_dec d;
    uint64_t ref;
    int e = tsdb_rec_dec_init(&d, rec, len);
    if (!e)
        while ((e = tsdb_rec_dec_series(&d, &ref, &q->r.b)) == 1)
            if (series_seen(q, ref, mark) != 0) return BASE_E_NOMEM;
    if (e < 0) atomic_fetch_add(&q->st.decode_failures, 1);
    return 0;
}

/* ---- frames ------------------------------------------------------------------ */

static inline uint32_t le32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* The record type of a frame's payload without decompressing it: the first
 * byte, or in a snappy stream the first byte of its first literal (a
 * stream always starts with one). -1 when it cannot tell. */
static int peek_type(const uint8_t *p, size_t n, int compressed) {
    if (!n) return -1;
    if (!compressed) return p[0];
    size_t i = 0;
    while (i < n && i < 5 && (p[i] & 0x80)) i++;
    i++; /* the varint's last byte */
    if (i >= n) return -1;
    uint8_t tag = p[i++];
    if ((tag & 3) != 0) return -1;
    unsigned l = tag >> 2;
    if (l >= 60) i += l - 59;
    return i < n ? p[i] : -1;
}

static void seg_close(remote_reader *r) {
    if (r->fd >= 0) close(r->fd);
    r->fd = -1;
    r->blen = 0;
    r->boff = 0;
}

static void seg_path(const remote_queue *q, uint64_t seg, char *out, size_t n) {
    snprintf(out, n, "%s/%08" PRIu64, q->wal_dir, seg);
}

/* Bytes of seg available from off, after reading up to need of them (fewer
 * at the end of the file). force: read again even if buffered. */
static size_t seg_avail(remote_reader *r, uint64_t off, size_t need, int force) {
    if (!force && off >= r->boff && off - r->boff <= r->blen && r->blen - (off - r->boff) >= need)
        return r->blen - (size_t)(off - r->boff);
    size_t want = need > READ_CHUNK ? need : READ_CHUNK;
    if (want > r->bcap) {
        uint8_t *nb = realloc(r->buf, want);
        if (!nb) return 0;
        r->buf = nb;
        r->bcap = want;
    }
    size_t got = 0;
    while (got < want) {
        ssize_t k = pread(r->fd, r->buf + got, want - got, (off_t)(off + got));
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) break;
        got += (size_t)k;
    }
    r->boff = off;
    r->blen = got;
    return got;
}

/* ---- positions, filters, hold --------------------------------------------- */

static remote_ack shard_acked(remote_queue *q, remote_shard *sh) {
    remote_ack a;
    pthread_mutex_lock(&sh->mu);
    if (sh->rn) {
        a = (remote_ack){sh->runs[sh->rhead].start, sh->ring[sh->head].ix};
    } else {
        a = (remote_ack){remote_pos_max(sh->pushed_end, q->r.dispatched), 0};
        if (remote_ack_cmp(sh->last_acked, a) > 0) a = sh->last_acked;
    }
    pthread_mutex_unlock(&sh->mu);
    return a;
}

/* The current shards' vector into *f (f->a malloc'd). 0 or BASE_E_NOMEM. */
static int current_vector(remote_queue *q, remote_filter *f) {
    f->n = q->nshards;
    f->a = malloc((q->nshards ? q->nshards : 1) * sizeof *f->a);
    if (!f->a) return BASE_E_NOMEM;
    for (unsigned i = 0; i < q->nshards; i++) f->a[i] = shard_acked(q, q->shards[i]);
    if (!q->nshards) f->n = 1, f->a[0] = (remote_ack){q->r.dispatched, 0};
    remote__filter_bounds(f);
    return 0;
}

static void filters_recompute(remote_reader *r) {
    r->skip_until = remote__pos_start(r->filters, r->nfilters);
    r->filter_until = (remote_pos){0, 0};
    for (size_t i = 0; i < r->nfilters; i++)
        r->filter_until = remote_pos_max(r->filter_until, r->filters[i].max);
}

/* Adds f (taking its memory); drops the least useful one when full. */
static void filter_add(remote_reader *r, remote_filter f) {
    if (r->nfilters == REMOTE_MAX_FILTERS) {
        size_t lo = 0;
        for (size_t i = 1; i < r->nfilters; i++)
            if (remote_pos_cmp(r->filters[i].max, r->filters[lo].max) < 0) lo = i;
        remote__filter_free(&r->filters[lo]);
        r->filters[lo] = r->filters[--r->nfilters];
    }
    r->filters[r->nfilters++] = f;
    filters_recompute(r);
}

/* 1 when a filter says the sample (ref, index ix in the record [start,
 * end)) was acknowledged already. */
static inline int filtered(const remote_reader *r, uint64_t ref, remote_pos start, remote_pos end,
                           uint64_t ix) {
    for (size_t i = 0; i < r->nfilters; i++) {
        const remote_filter *f = &r->filters[i];
        if (remote_pos_cmp(start, f->max) > 0) continue;
        const remote_ack *a = &f->a[ref % f->n];
        if (remote_pos_cmp(end, a->pos) <= 0) return 1;
        if (remote_pos_cmp(start, a->pos) == 0 && ix < a->ix) return 1;
    }
    return 0;
}

/* The hold: the lower of the position's segment and the reader's. */
static void set_hold(remote_queue *q, remote_pos p) {
    atomic_store(&q->st.pos_seg, p.seg);
    atomic_store(&q->st.pos_off, p.off);
    uint64_t h = p.seg ? p.seg : q->r.seg;
    if (q->r.seg && q->r.seg < h) h = q->r.seg;
    if (atomic_load(&q->hold_seg) != h) {
        atomic_store(&q->hold_seg, h);
        remote__hold_update(q->m);
    }
}

/* Computes the position; saves the file when it changed (or force). */
static remote_pos position(remote_queue *q, int save, int force) {
    remote_reader *r = &q->r;
    remote_filter cur = {0};
    if (current_vector(q, &cur) != 0) return r->pos;
    remote_pos p = remote_pos_max(remote__pos_start(r->filters, r->nfilters), cur.min);
    /* filters whose range the position has passed are of no use any more */
    for (size_t i = 0; i < r->nfilters;) {
        if (remote_pos_cmp(r->filters[i].max, p) < 0 &&
            remote_pos_cmp(r->filters[i].max, r->dispatched) < 0) {
            remote__filter_free(&r->filters[i]);
            r->filters[i] = r->filters[--r->nfilters];
            filters_recompute(r);
            continue;
        }
        i++;
    }
    int64_t now = base_mono_ns();
    if (save && (force || now >= r->next_save_ns)) {
        remote_filter all[REMOTE_MAX_FILTERS + 1];
        size_t n = 0;
        all[n++] = cur;
        for (size_t i = 0; i < r->nfilters; i++) all[n++] = r->filters[i];
        base_buf_reset(&r->pbuf);
        remote__pos_render(&r->pbuf, q->c.url, all, n);
        int same = r->saved_any && r->pbuf.len == r->plast.len &&
                   memcmp(r->pbuf.data, r->plast.data, r->pbuf.len) == 0;
        if (!base_buf_err(&r->pbuf) && (force || !same) && remote__pos_write(q->pos_path, &r->pbuf) == 0) {
            base_buf_reset(&r->plast);
            base_buf_append(&r->plast, r->pbuf.data, r->pbuf.len);
            r->saved_any = !base_buf_err(&r->plast);
        }
        r->next_save_ns = now + REMOTE_HK_MS * 1000000LL;
    }
    remote__filter_free(&cur);
    r->pos = p;
    set_hold(q, p);
    return p;
}

/* ---- shards ---------------------------------------------------------------- */

static int stage_reserve(remote_reader *r, unsigned n) {
    if (n <= r->nstage_shards) return 0;
    remote_sample **st = realloc(r->stage, n * sizeof *st);
    if (!st) return BASE_E_NOMEM;
    r->stage = st;
    size_t *ns = realloc(r->nstage, n * sizeof *ns);
    if (!ns) return BASE_E_NOMEM;
    r->nstage = ns;
    size_t *cs = realloc(r->capstage, n * sizeof *cs);
    if (!cs) return BASE_E_NOMEM;
    r->capstage = cs;
    for (unsigned i = r->nstage_shards; i < n; i++) st[i] = NULL, ns[i] = 0, cs[i] = 0;
    r->nstage_shards = n;
    return 0;
}

/* Starts n shards (q->shards empty). 0 or an error (then none run). */
static int shards_start(remote_queue *q, unsigned n) {
    if (stage_reserve(&q->r, n) != 0) return BASE_E_NOMEM;
    remote_shard **v = calloc(n, sizeof *v);
    if (!v) return BASE_E_NOMEM;
    for (unsigned i = 0; i < n; i++) {
        int e = remote__shard_new(q, i, &v[i]);
        if (e) {
            for (unsigned j = 0; j < i; j++) remote__shard_free(v[j]);
            free(v);
            return e;
        }
        v[i]->pushed_end = q->r.dispatched;
    }
    q->shards = v;
    q->nshards = n;
    atomic_store(&q->st.nshards, n);
    return 0;
}

/* Stops the shard threads: each may finish its attempt in flight for up
 * to wait_ms (its answer says whether those samples arrived), then what
 * is still running is aborted. The rings stay, for position(). */
static void shards_halt(remote_queue *q, int64_t wait_ms) {
    for (unsigned i = 0; i < q->nshards; i++) {
        remote_shard *sh = q->shards[i];
        pthread_mutex_lock(&sh->mu);
        sh->stop = 2;
        atomic_store(&sh->quit, 1);
        pthread_cond_broadcast(&sh->cv);
        pthread_mutex_unlock(&sh->mu);
    }
    pthread_mutex_lock(&q->mu); /* backoff sleeps end at once */
    pthread_cond_broadcast(&q->cv);
    pthread_mutex_unlock(&q->mu);
    int64_t end = base_mono_ns() + wait_ms * 1000000;
    for (unsigned i = 0; i < q->nshards; i++) {
        remote_shard *sh = q->shards[i];
        pthread_mutex_lock(&sh->mu);
        while (sh->started == 1 && base_mono_ns() < end) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_nsec += 20 * 1000000;
            if (ts.tv_nsec >= 1000000000) ts.tv_sec++, ts.tv_nsec -= 1000000000;
            pthread_cond_timedwait(&sh->space, &sh->mu, &ts);
        }
        pthread_mutex_unlock(&sh->mu);
    }
    for (unsigned i = 0; i < q->nshards; i++) atomic_store(&q->shards[i]->abort, 1);
    for (unsigned i = 0; i < q->nshards; i++) remote__shard_join(q->shards[i]);
}

/* Frees the (halted) shards; samples of records in segments <= drop_seg
 * still in their rings count as dropped. */
static void shards_release(remote_queue *q, uint64_t drop_seg) {
    uint64_t lost = 0;
    for (unsigned i = 0; i < q->nshards; i++) {
        remote_shard *sh = q->shards[i];
        if (drop_seg)
            for (size_t k = 0, ix = sh->rhead; k < sh->rn; k++, ix = (ix + 1) % sh->cap)
                if (sh->runs[ix].start.seg <= drop_seg) lost += sh->runs[ix].n;
        remote__shard_free(sh);
    }
    atomic_fetch_add(&q->st.dropped, lost);
    free(q->shards);
    q->shards = NULL;
    q->nshards = 0;
}

/* Halts the shards (wait_ms as shards_halt); *ret_vec (may be NULL) gets
 * their vector; then frees them. */
static void shards_stop(remote_queue *q, remote_filter *ret_vec, uint64_t drop_seg, int64_t wait_ms) {
    shards_halt(q, wait_ms);
    if (ret_vec && current_vector(q, ret_vec) != 0) ret_vec->a = NULL;
    shards_release(q, drop_seg);
}

/* Flushes the shards and waits until they are empty or deadline_ns
 * (monotonic) passes: 1 when all drained. */
static int shards_drain(remote_queue *q, int64_t deadline_ns, int honour_stop) {
    for (unsigned i = 0; i < q->nshards; i++) remote__shard_flush(q->shards[i]);
    int all = 1;
    for (unsigned i = 0; i < q->nshards; i++) {
        remote_shard *sh = q->shards[i];
        pthread_mutex_lock(&sh->mu);
        while (sh->n > 0 && base_mono_ns() < deadline_ns && !(honour_stop && atomic_load(&q->stopping))) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_nsec += 50 * 1000000;
            if (ts.tv_nsec >= 1000000000) ts.tv_sec++, ts.tv_nsec -= 1000000000;
            pthread_cond_timedwait(&sh->space, &sh->mu, &ts);
        }
        if (sh->n > 0) all = 0;
        pthread_mutex_unlock(&sh->mu);
    }
    return all;
}

/* Moves the reader to p (a record boundary) and forgets the open file. */
static void rewind_to(remote_queue *q, remote_pos p) {
    remote_reader *r = &q->r;
    seg_close(r);
    if (p.seg == 0) {
        uint64_t *segs = NULL, ck = 0;
        size_t ns = 0;
        if (tsdb_wal_list(q->wal_dir, &segs, &ns, &ck) == 0 && ns) p = (remote_pos){segs[0], 0};
        free(segs);
    }
    r->seg = p.seg;
    r->off = p.off;
    r->dispatched = p;
    r->partial_wait = 0;
}

/* Replaces the shards by n new ones. drained: the old ones are empty (a
 * clean handover); else they are stopped and the reader re-reads from the
 * position with a filter of what they had acknowledged. */
static void shards_replace(remote_queue *q, unsigned n, int drained, uint64_t drop_seg, remote_pos floor) {
    remote_reader *r = &q->r;
    if (drained && !drop_seg) {
        shards_stop(q, NULL, 0, 0);
    } else {
        /* the vector is taken once they stopped: an attempt that finished
         * meanwhile counts as acknowledged */
        remote_filter vec = {0};
        shards_stop(q, &vec, drop_seg, q->c.timeout_ms + 1000);
        remote_pos p = remote__pos_start(r->filters, r->nfilters);
        if (vec.a) {
            p = remote_pos_max(p, vec.min);
            filter_add(r, vec); /* even a flat one: its ix may skip part of a record */
        } else {
            p = r->pos; /* no memory for the vector: what was acknowledged after it goes again */
        }
        if (drop_seg) {
            remote_filter fl = {.n = 1, .a = malloc(sizeof(remote_ack))};
            if (fl.a) {
                fl.a[0] = (remote_ack){floor, 0};
                remote__filter_bounds(&fl);
                filter_add(r, fl);
            }
            p = remote_pos_max(p, floor);
        }
        /* back to the position; never forward past records not read yet
         * (their series records are needed: the filters skip their samples) */
        if (remote_pos_cmp(p, (remote_pos){r->seg, r->off}) < 0) rewind_to(q, p);
    }
    while (shards_start(q, n) != 0) {
        log_q(q, BASE_LOG_ERROR, "cannot start remote write shards, retrying", NULL, NULL, NULL, NULL);
        if (remote__sleep_abortable(q, &q->stopping, 1000))
            break; /* stopping: the loop ends without shards */
    }
}

/* ---- pushing ---------------------------------------------------------------- */

/* Appends k samples of the record starting at start to the shard's ring,
 * waiting while it is full. 0, or 1 when the reader must abandon the
 * record (stop, or housekeeping reset the shards: sh may be gone). */
static int push(remote_queue *q, remote_shard *sh, const remote_sample *v, size_t k, remote_pos start) {
    size_t maxb = (size_t)q->c.max_samples;
    int counted = 0;
    pthread_mutex_lock(&sh->mu);
    while (k > 0) {
        size_t room = sh->cap - sh->n;
        if (room == 0) {
            if (!counted) atomic_fetch_add(&q->st.enqueue_retries, 1), counted = 1;
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_nsec += 200 * 1000000;
            if (ts.tv_nsec >= 1000000000) ts.tv_sec++, ts.tv_nsec -= 1000000000;
            pthread_cond_timedwait(&sh->space, &sh->mu, &ts);
            if (sh->cap - sh->n > 0) continue;
            pthread_mutex_unlock(&sh->mu);
            if (atomic_load(&q->stopping) || housekeeping(q, 1) == HK_RESET) return 1;
            pthread_mutex_lock(&sh->mu);
            continue;
        }
        size_t m = room < k ? room : k;
        size_t tail = (sh->head + sh->n) % sh->cap;
        size_t first = sh->cap - tail < m ? sh->cap - tail : m;
        memcpy(sh->ring + tail, v, first * sizeof *v);
        if (m > first) memcpy(sh->ring, v + first, (m - first) * sizeof *v);
        if (sh->rn > 0 && remote_pos_cmp(sh->runs[(sh->rhead + sh->rn - 1) % sh->cap].start, start) == 0) {
            sh->runs[(sh->rhead + sh->rn - 1) % sh->cap].n += m;
        } else {
            sh->runs[(sh->rhead + sh->rn) % sh->cap] = (remote_run){start, m};
            sh->rn++;
        }
        int was_empty = sh->n == 0;
        if (was_empty) sh->oldest_ns = base_mono_ns();
        sh->n += m;
        atomic_fetch_add(&q->st.pending, m);
        if (was_empty || sh->n >= maxb) pthread_cond_signal(&sh->cv);
        v += m;
        k -= m;
    }
    pthread_mutex_unlock(&sh->mu);
    return 0;
}

static int dispatch_samples(remote_queue *q, const uint8_t *rec, size_t len, remote_pos start,
                            remote_pos end) {
    remote_reader *r = &q->r;
    unsigned n = q->nshards;
    for (unsigned i = 0; i < n; i++) r->nstage[i] = 0;
    int filtering = remote_pos_cmp(start, r->filter_until) <= 0;
    tsdb_rec_dec d;
    tsdb_rec_sample x;
    uint64_t in = 0, dropped = 0, unknown = 0, ix = 0;
    int64_t hi = INT64_MIN;
    int e = tsdb_rec_dec_init(&d, rec, len);
    for (; !e && (e = tsdb_rec_dec_sample(&d, &x)) == 1; ix++) {
        e = 0;
        const remote_series *s = smap_get(&r->map, x.ref);
        if (!s || s->dropped) {
            dropped++;
            unknown += !s;
            continue;
        }
        if (filtering && filtered(r, x.ref, start, end, ix)) continue;
        unsigned i = (unsigned)(x.ref % n);
        if (r->nstage[i] == r->capstage[i]) {
            size_t nc = r->capstage[i] ? r->capstage[i] * 2 : 256;
            remote_sample *ns = realloc(r->stage[i], nc * sizeof *ns);
            if (!ns) return STEP_WAIT; /* no memory: the record is read again */
            r->stage[i] = ns;
            r->capstage[i] = nc;
        }
        r->stage[i][r->nstage[i]++] = (remote_sample){s, x.t, x.v, (uint32_t)ix};
        in++;
        if (x.t > hi) hi = x.t;
    }
    if (e < 0) atomic_fetch_add(&q->st.decode_failures, 1);
    if (unknown && !r->unknown_logged) {
        r->unknown_logged = 1;
        log_q(q, BASE_LOG_WARN, "Dropped sample for series that was not explicitly dropped via relabelling",
              NULL, NULL, NULL, NULL);
    }
    atomic_fetch_add(&q->st.data_in, in);
    atomic_fetch_add(&q->st.data_dropped, dropped);
    atomic_fetch_add(&q->st.dropped, dropped);
    for (unsigned i = 0; i < n; i++) {
        if (r->nstage[i] && push(q, q->shards[i], r->stage[i], r->nstage[i], start)) return STEP_ABORT;
        q->shards[i]->pushed_end = end;
    }
    return STEP_REC;
}

/* ---- records ------------------------------------------------------------------ */

static int handle_record(remote_queue *q, const uint8_t *rec, size_t len, remote_pos start, remote_pos end,
                         int series_only) {
    remote_stats *st = &q->st;
    switch (len ? rec[0] : 0) {
    case TSDB_REC_SERIES:
        atomic_fetch_add(&st->rec_series, 1);
        return series_record(q, rec, len, end.seg) == 0 ? STEP_REC : STEP_WAIT;
    case TSDB_REC_SAMPLES:
    case TSDB_REC_OOO_SAMPLES:
        atomic_fetch_add(rec[0] == TSDB_REC_SAMPLES ? &st->rec_samples : &st->rec_ooo, 1);
        return series_only ? STEP_REC : dispatch_samples(q, rec, len, start, end);
    case TSDB_REC_TOMBSTONES: atomic_fetch_add(&st->rec_tombstones, 1); return STEP_REC;
    case TSDB_REC_CHUNKS: atomic_fetch_add(&st->rec_chunks, 1); return STEP_REC;
    default: atomic_fetch_add(&st->decode_failures, 1); return STEP_REC;
    }
}

/* Reads checkpoint ck's series records (marks become ck). 0,
 * BASE_E_NOTFOUND (gone: a newer one replaced it), BASE_E_NOMEM. */
static int read_ckpt_series(remote_queue *q, uint64_t ck) {
    char path[4200];
    snprintf(path, sizeof path, "%s/checkpoint.%08" PRIu64 "/00000000", q->wal_dir, ck);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return errno == ENOENT ? BASE_E_NOTFOUND : 0;
    remote_reader tmp = {.fd = fd};
    uint64_t off = 0;
    int e = 0;
    for (;;) {
        size_t av = seg_avail(&tmp, off, TSDB_WAL_FRAME_HDR, 0);
        if (av < TSDB_WAL_FRAME_HDR) break;
        const uint8_t *p = tmp.buf + (off - tmp.boff);
        uint32_t h = le32(p), n = h & ~TSDB_WAL_FRAME_SNAPPY;
        if (n == 0 || n > TSDB_WAL_RECORD_MAX) break;
        if (av < TSDB_WAL_FRAME_HDR + (size_t)n) {
            av = seg_avail(&tmp, off, TSDB_WAL_FRAME_HDR + (size_t)n, 0);
            if (av < TSDB_WAL_FRAME_HDR + (size_t)n) break;
            p = tmp.buf;
        }
        int t = peek_type(p + TSDB_WAL_FRAME_HDR, n, (h & TSDB_WAL_FRAME_SNAPPY) != 0);
        if (t == TSDB_REC_CHUNKS) break; /* series records come first */
        if (t < 0 || t == TSDB_REC_SERIES) {
            const uint8_t *rec;
            size_t rl, used;
            int fe = tsdb_wal_frame_read(p, av, &tmp.zbuf, &tmp.zcap, &rec, &rl, &used);
            if (fe == BASE_E_NOMEM) {
                e = fe;
                break;
            }
            if (fe) {
                atomic_fetch_add(&q->st.damaged, 1);
                break;
            }
            if (rl && rec[0] == TSDB_REC_SERIES) {
                atomic_fetch_add(&q->st.rec_series, 1);
                if ((e = series_record(q, rec, rl, ck)) != 0) break;
            }
            if (rl && rec[0] == TSDB_REC_CHUNKS) break;
        }
        off += TSDB_WAL_FRAME_HDR + (size_t)n;
    }
    close(fd);
    free(tmp.buf);
    free(tmp.zbuf);
    return e;
}

/* Reads the newest checkpoint's series (retrying when it is replaced
 * meanwhile); returns its number (0: none). */
static uint64_t read_newest_ckpt(remote_queue *q) {
    for (int tries = 0; tries < 5; tries++) {
        uint64_t *segs = NULL, ck = 0;
        size_t ns = 0;
        if (tsdb_wal_list(q->wal_dir, &segs, &ns, &ck) != 0) return 0;
        free(segs);
        if (!ck) return 0;
        int e = read_ckpt_series(q, ck);
        if (e != BASE_E_NOTFOUND) return ck;
    }
    return 0;
}

/* ---- moving between segments --------------------------------------------- */

/* The smallest segment > after in the directory (0: none). */
static uint64_t next_existing(remote_queue *q, uint64_t after, uint64_t *ret_ckpt) {
    uint64_t *segs = NULL, ck = 0, next = 0;
    size_t ns = 0;
    if (tsdb_wal_list(q->wal_dir, &segs, &ns, &ck) == 0) {
        for (size_t i = 0; i < ns && !next; i++)
            if (segs[i] > after) next = segs[i];
    }
    free(segs);
    if (ret_ckpt) *ret_ckpt = ck;
    return next;
}

static void go_to_segment(remote_queue *q, uint64_t seg) {
    remote_reader *r = &q->r;
    seg_close(r);
    if (remote_pos_cmp(r->dispatched, (remote_pos){seg, 0}) < 0) r->dispatched = (remote_pos){seg, 0};
    r->seg = seg;
    r->off = 0;
    r->partial_wait = 0;
    atomic_store(&q->st.cur_segment, seg);
    set_hold(q, r->pos);
}

static void next_segment(remote_queue *q) {
    char path[4200];
    struct stat sb;
    uint64_t next = q->r.seg + 1;
    seg_path(q, next, path, sizeof path);
    if (stat(path, &sb) != 0) {
        uint64_t n2 = next_existing(q, q->r.seg, NULL);
        if (n2) next = n2;
    }
    go_to_segment(q, next);
}

/* The current segment cannot be opened. */
static int seg_missing(remote_queue *q) {
    remote_reader *r = &q->r;
    uint64_t ck = 0, next = next_existing(q, r->seg, &ck);
    if (!next) return STEP_WAIT; /* not written yet */
    if (remote_pos_cmp((remote_pos){r->seg, UINT64_MAX}, r->skip_until) > 0) {
        char sg[24];
        snprintf(sg, sizeof sg, "%08" PRIu64, r->seg);
        log_q(q, BASE_LOG_WARN, "WAL segment deleted before it was sent: its samples are lost", "segment", sg,
              NULL, NULL);
        atomic_fetch_add(&q->st.damaged, 1);
    }
    if (ck > r->seg) read_ckpt_series(q, ck); /* the refs of the segments it replaced */
    go_to_segment(q, next);
    return STEP_REC;
}

static int damaged(remote_queue *q, const char *what) {
    remote_reader *r = &q->r;
    uint64_t cur = q->wal ? tsdb_wal_segment(q->wal) : 0;
    if (cur && r->seg >= cur) return STEP_WAIT; /* the segment being written: wait for the roll */
    char sg[24], off[24];
    snprintf(sg, sizeof sg, "%08" PRIu64, r->seg);
    snprintf(off, sizeof off, "%" PRIu64, r->off);
    base_log(BASE_LOG_WARN, "damaged WAL segment: the rest of it is skipped", "remote_name", q->c.remote_name,
             "url", q->c.url, "segment", sg, "offset", off, "err", what, NULL);
    atomic_fetch_add(&q->st.damaged, 1);
    next_segment(q);
    return STEP_REC;
}

/* At the end of what the file holds (partial: a frame cut short there). */
static int at_end(remote_queue *q, int partial) {
    remote_reader *r = &q->r;
    uint64_t cur = q->wal ? tsdb_wal_segment(q->wal) : 0;
    if (!cur || r->seg >= cur) return STEP_WAIT;
    /* a later segment exists: read once more, its last write may have
     * landed after the read that found the end */
    size_t before =
        r->off >= r->boff && r->off - r->boff <= r->blen ? r->blen - (size_t)(r->off - r->boff) : 0;
    size_t av = seg_avail(r, r->off, TSDB_WAL_FRAME_HDR, 1);
    if (av > before) return STEP_REC;
    if (partial) {
        if (r->partial_wait++ < 2) return STEP_WAIT;
        return damaged(q, "torn frame at the end of the segment");
    }
    next_segment(q);
    return STEP_REC;
}

/* Reads and handles one record. */
static int step(remote_queue *q) {
    remote_reader *r = &q->r;
    if (r->fd < 0) {
        char path[4200];
        seg_path(q, r->seg, path, sizeof path);
        r->fd = open(path, O_RDONLY | O_CLOEXEC);
        if (r->fd < 0) return errno == ENOENT ? seg_missing(q) : STEP_WAIT;
        r->blen = 0;
        atomic_store(&q->st.cur_segment, r->seg);
    }
    size_t av = seg_avail(r, r->off, TSDB_WAL_FRAME_HDR, 0);
    if (av < TSDB_WAL_FRAME_HDR) return at_end(q, av > 0);
    const uint8_t *p = r->buf + (r->off - r->boff);
    uint32_t h = le32(p), n = h & ~TSDB_WAL_FRAME_SNAPPY;
    if (n == 0 || n > TSDB_WAL_RECORD_MAX) return damaged(q, "bad record length");
    size_t fl = TSDB_WAL_FRAME_HDR + (size_t)n;
    if (av < fl) {
        av = seg_avail(r, r->off, fl, 1);
        if (av < fl) return at_end(q, 1);
        p = r->buf;
    }
    r->partial_wait = 0;
    remote_pos start = {r->seg, r->off}, end = {r->seg, r->off + fl};
    int series_only = remote_pos_cmp(end, r->skip_until) <= 0;
    if (series_only) {
        int t = peek_type(p + TSDB_WAL_FRAME_HDR, n, (h & TSDB_WAL_FRAME_SNAPPY) != 0);
        if (t >= 0 && t != TSDB_REC_SERIES) {
            if (t == TSDB_REC_SAMPLES) atomic_fetch_add(&q->st.rec_samples, 1);
            r->off += fl;
            r->dispatched = end;
            return STEP_REC;
        }
    }
    const uint8_t *rec;
    size_t rl, used;
    int e = tsdb_wal_frame_read(p, av, &r->zbuf, &r->zcap, &rec, &rl, &used);
    if (e == BASE_E_TRUNCATED) return at_end(q, 1);
    if (e == BASE_E_PARSE) return damaged(q, "bad CRC or compressed record");
    if (e) return STEP_WAIT;
    int s = handle_record(q, rec, rl, start, end, series_only);
    if (s != STEP_REC) return s;
    r->off += used;
    r->dispatched = end;
    return STEP_REC;
}

/* ---- series GC --------------------------------------------------------------- */

static void grave_free(remote_queue *q, remote_pos p, int all) {
    remote_reader *r = &q->r;
    size_t k = 0;
    for (size_t i = 0; i < r->ngrave; i++) {
        if (all || remote_pos_cmp(r->grave[i].after, p) <= 0) {
            atomic_fetch_sub(&q->st.series, 1);
            atomic_fetch_sub(&q->st.series_bytes, sizeof *r->grave[i].s + r->grave[i].s->len);
            free(r->grave[i].s);
        } else {
            r->grave[k++] = r->grave[i];
        }
    }
    r->ngrave = k;
}

static void ckpt_gc(remote_queue *q, remote_pos p) {
    remote_reader *r = &q->r;
    uint64_t *segs = NULL, ck = 0;
    size_t ns = 0;
    if (tsdb_wal_list(q->wal_dir, &segs, &ns, &ck) != 0) return;
    free(segs);
    if (!ck || ck <= r->gc_ckpt || p.seg < ck || r->seg < ck) return;
    if (read_ckpt_series(q, ck) != 0) return;
    r->gc_ckpt = ck;
    remote_smap *m = &r->map;
    size_t victims = 0;
    for (size_t i = 0; i < m->cap; i++)
        if (m->slot[i] && m->slot[i]->mark < ck) victims++;
    if (!victims) return;
    if (r->ngrave + victims > r->capgrave) {
        size_t nc = (r->ngrave + victims) * 2;
        remote_grave *g = realloc(r->grave, nc * sizeof *g);
        if (!g) return;
        r->grave = g;
        r->capgrave = nc;
    }
    remote_series **ns2 = calloc(m->cap, sizeof *ns2);
    if (!ns2) return;
    size_t kept = 0;
    for (size_t i = 0; i < m->cap; i++) {
        remote_series *s = m->slot[i];
        if (!s) continue;
        if (s->mark < ck) {
            r->grave[r->ngrave++] = (remote_grave){s, r->dispatched};
        } else {
            smap_insert(ns2, m->cap, s);
            kept++;
        }
    }
    free(m->slot);
    m->slot = ns2;
    m->n = kept;
}

/* ---- resharding ------------------------------------------------------------- */

static void ewma_tick(remote_ewma *e, uint64_t events, double secs) {
    double inst = (double)events / secs;
    if (e->init)
        e->rate += REMOTE_EWMA_WEIGHT * (inst - e->rate);
    else if (events > 0) {
        e->init = 1;
        e->rate = inst;
    }
}

static unsigned desired_shards(remote_queue *q) {
    remote_reader *r = &q->r;
    remote_stats *st = &q->st;
    double secs = (double)q->reshard_ms / 1000.0;
    ewma_tick(&r->out, atomic_exchange(&st->data_out, 0), secs);
    ewma_tick(&r->dropped, atomic_exchange(&st->data_dropped, 0), secs);
    ewma_tick(&r->out_ns, atomic_exchange(&st->data_out_ns, 0), secs);
    ewma_tick(&r->in, atomic_exchange(&st->data_in, 0), secs);
    double in = r->in.rate, out = r->out.rate;
    double kept = out / (r->dropped.rate + out);
    double dur = r->out_ns.rate / 1e9;
    int64_t sent_ms = atomic_load(&st->highest_sent_ms);
    int64_t mint = 0, maxt = 0;
    tsdb_head_bounds(tsdb_db_head(q->db), &mint, &maxt);
    double hs = sent_ms == INT64_MIN ? 0 : (double)(sent_ms / 1000);
    double hr = maxt < mint ? 0 : (double)(maxt / 1000);
    double delay = hr - hs;
    double pending = delay * in * kept;
    unsigned cur = q->nshards;
    if (out <= 0) return cur;
    double catchup = 0.05 * pending;
    double tps = dur / out;
    double desired = tps * (in * kept + catchup);
    pthread_mutex_lock(&st->mu);
    st->desired = desired;
    pthread_mutex_unlock(&st->mu);
    double lo = cur * (1 - REMOTE_SHARD_TOLERANCE), hi = cur * (1 + REMOTE_SHARD_TOLERANCE);
    desired = ceil(desired);
    if (!(desired == desired)) return cur; /* NaN */
    if (lo <= desired && desired <= hi) return cur;
    double want = desired;
    if (want < cur && delay > 10.0) return cur;
    if (want > (double)q->c.max_shards) want = (double)q->c.max_shards;
    if (want < (double)q->c.min_shards) want = (double)q->c.min_shards;
    return (unsigned)want;
}

static void maybe_reshard(remote_queue *q) {
    unsigned want = desired_shards(q);
    if (want == q->nshards) return;
    int64_t min_send = base_unix_ms() - 2 * q->c.deadline_ms;
    if (atomic_load(&q->st.last_send_ms) < min_send) return; /* 2.42: no send finished lately */
    char from[16], to[16];
    snprintf(from, sizeof from, "%u", q->nshards);
    snprintf(to, sizeof to, "%u", want);
    log_q(q, BASE_LOG_INFO, "Remote storage resharding", "from", from, "to", to);
    int drained = shards_drain(q, base_mono_ns() + q->flush_deadline_ms * 1000000, 1);
    shards_replace(q, want, drained, 0, (remote_pos){0, 0});
}

/* ---- max hold ---------------------------------------------------------------- */

/* Counts the samples of seg from off to its end. */
static uint64_t count_rest(remote_queue *q, uint64_t seg, uint64_t off) {
    char path[4200];
    seg_path(q, seg, path, sizeof path);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    remote_reader tmp = {.fd = fd};
    uint64_t n = 0;
    for (;;) {
        size_t av = seg_avail(&tmp, off, TSDB_WAL_FRAME_HDR, 0);
        if (av < TSDB_WAL_FRAME_HDR) break;
        uint32_t h = le32(tmp.buf + (off - tmp.boff)), len = h & ~TSDB_WAL_FRAME_SNAPPY;
        if (len == 0 || len > TSDB_WAL_RECORD_MAX) break;
        av = seg_avail(&tmp, off, TSDB_WAL_FRAME_HDR + (size_t)len, 0);
        if (av < TSDB_WAL_FRAME_HDR + (size_t)len) break;
        const uint8_t *rec;
        size_t rl, used;
        if (tsdb_wal_frame_read(tmp.buf + (off - tmp.boff), av, &tmp.zbuf, &tmp.zcap, &rec, &rl, &used))
            break;
        tsdb_rec_dec d;
        if (rl && (rec[0] == TSDB_REC_SAMPLES || rec[0] == TSDB_REC_OOO_SAMPLES) &&
            tsdb_rec_dec_init(&d, rec, rl) == 0)
            n += d.count;
        off += used;
    }
    close(fd);
    free(tmp.buf);
    free(tmp.zbuf);
    return n;
}

/* Gives up segment p.seg if it is finished and older than the max hold. */
static int check_expiry(remote_queue *q, remote_pos p) {
    remote_reader *r = &q->r;
    if (q->max_hold_ms <= 0 || p.seg == 0) return HK_OK;
    uint64_t cur = q->wal ? tsdb_wal_segment(q->wal) : 0;
    if (!cur || p.seg >= cur) return HK_OK;
    char path[4200];
    struct stat sb;
    seg_path(q, p.seg, path, sizeof path);
    if (stat(path, &sb) != 0) return HK_OK;
    int64_t mtime_ms = (int64_t)sb.st_mtim.tv_sec * 1000 + sb.st_mtim.tv_nsec / 1000000;
    if (base_unix_ms() - mtime_ms < q->max_hold_ms) return HK_OK;
    uint64_t s = p.seg;
    char sg[24];
    snprintf(sg, sizeof sg, "%08" PRIu64, s);
    log_q(q, BASE_LOG_WARN,
          "WAL segment held longer than --storage.remote.max-wal-hold: its unsent samples are dropped",
          "segment", sg, NULL, NULL);
    atomic_fetch_add(&q->st.expired, 1);
    if (r->seg <= s) atomic_fetch_add(&q->st.dropped, count_rest(q, s, r->seg == s ? r->off : 0));
    uint64_t next = next_existing(q, s, NULL);
    remote_pos floor = {next ? next : s + 1, 0};
    shards_replace(q, q->nshards, 0, s, floor);
    position(q, 1, 1); /* the new position and hold at once */
    return HK_RESET;
}

/* ---- housekeeping ------------------------------------------------------------ */

static int housekeeping(remote_queue *q, int in_record) {
    remote_reader *r = &q->r;
    int64_t now = base_mono_ns();
    if (now < r->next_hk_ns) return HK_OK;
    r->next_hk_ns = now + REMOTE_HK_MS * 1000000LL;
    remote_pos p = position(q, 1, 0);
    grave_free(q, p, 0);
    if (now >= r->next_expiry_ns) {
        int64_t every = q->max_hold_ms / 4;
        if (every > REMOTE_EXPIRY_CHECK_MS) every = REMOTE_EXPIRY_CHECK_MS;
        if (every < 100) every = 100;
        r->next_expiry_ns = now + every * 1000000LL;
        if (check_expiry(q, p) == HK_RESET) return HK_RESET;
    }
    if (in_record) return HK_OK;
    ckpt_gc(q, p);
    if (now >= r->next_reshard_ns) {
        r->next_reshard_ns = now + q->reshard_ms * 1000000LL;
        maybe_reshard(q);
    }
    return HK_OK;
}

/* ---- the thread ---------------------------------------------------------------- */

static void poll_wait(remote_queue *q) {
    pthread_mutex_lock(&q->mu);
    if (!atomic_load(&q->stopping)) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        int64_t ns = ts.tv_nsec + q->poll_ms * 1000000;
        ts.tv_sec += (time_t)(ns / 1000000000);
        ts.tv_nsec = (long)(ns % 1000000000);
        pthread_cond_timedwait(&q->cv, &q->mu, &ts);
    }
    pthread_mutex_unlock(&q->mu);
}

static void *reader_main(void *arg) {
    remote_queue *q = arg;
    remote_reader *r = &q->r;
    unsigned n0 = (unsigned)q->c.min_shards;
    while (shards_start(q, n0) != 0) {
        log_q(q, BASE_LOG_ERROR, "cannot start remote write shards, retrying", NULL, NULL, NULL, NULL);
        if (remote__sleep_abortable(q, &q->stopping, 1000)) break;
    }
    r->gc_ckpt = read_newest_ckpt(q);
    int64_t now = base_mono_ns();
    r->next_reshard_ns = now + q->reshard_ms * 1000000LL;
    r->next_expiry_ns = now;
    while (!atomic_load(&q->stopping) && q->nshards) {
        housekeeping(q, 0);
        int s = step(q);
        if (s == STEP_WAIT) poll_wait(q);
    }
    /* shutdown: flush for up to the deadline, then the position */
    if (q->nshards) shards_drain(q, base_mono_ns() + q->flush_deadline_ms * 1000000, 0);
    if (q->forget) {
        unlink(q->pos_path);
    } else if (q->nshards) {
        /* the attempts in flight may finish (a little), then the position */
        shards_halt(q, 2000);
        position(q, 1, 1);
    }
    shards_stop(q, NULL, 0, 0);
    return NULL;
}

/* ---- start / stop ------------------------------------------------------------- */

int remote__queue_start(remote_queue *q, char *err, size_t errlen) {
    remote_reader *r = &q->r;
    r->fd = -1;
    labels_builder_init(&r->b);
    r->npairs_cap = LABELS_MAX_PAIRS + q->c.ext.n + 16;
    r->pairs = malloc(r->npairs_cap * sizeof(pair));
    r->views = malloc(2 * r->npairs_cap * sizeof *r->views);
    r->lbl_mem = malloc(r->npairs_cap * (sizeof(Prometheus__Label) + sizeof(Prometheus__Label *)));
    base_buf_init(&r->pbuf, 0);
    base_buf_init(&r->plast, 0);
    if (!r->pairs || !r->views || !r->lbl_mem) return base_errf(err, errlen, BASE_E_NOMEM, "out of memory");
    atomic_store(&q->st.highest_sent_ms, INT64_MIN);
    /* where to start */
    remote_filter fs[REMOTE_MAX_FILTERS + 1];
    size_t nf = 0;
    int e = remote__pos_load(q->pos_path, fs, REMOTE_MAX_FILTERS + 1, &nf);
    if (e && e != BASE_E_NOTFOUND) {
        log_q(q, BASE_LOG_WARN, "unreadable remote write position: starting at the end of the WAL", "file",
              q->pos_path, "err", base_strerror(e));
        nf = 0;
    }
    uint64_t *segs = NULL, ck = 0;
    size_t ns = 0;
    if ((e = tsdb_wal_list(q->wal_dir, &segs, &ns, &ck)) != 0) {
        for (size_t i = 0; i < nf; i++) remote__filter_free(&fs[i]);
        return base_errf(err, errlen, e, "%s: cannot list the WAL", q->wal_dir);
    }
    uint64_t first = ns ? segs[0] : 1, last = ns ? segs[ns - 1] : 0;
    int fresh = nf == 0;
    if (nf == 0) {
        /* no position: the end of the WAL now */
        remote_pos end = {0, 0};
        if (last) {
            char path[4200];
            struct stat sb;
            seg_path(q, last, path, sizeof path);
            end = (remote_pos){last, stat(path, &sb) == 0 ? (uint64_t)sb.st_size : 0};
        }
        fs[0].n = 1;
        fs[0].a = malloc(sizeof(remote_ack));
        if (fs[0].a) {
            fs[0].a[0] = (remote_ack){end, 0};
            remote__filter_bounds(&fs[0]);
            nf = 1;
        }
    } else {
        remote_pos st = remote__pos_start(fs, nf);
        if (st.seg && st.seg < first) {
            char sg[24];
            snprintf(sg, sizeof sg, "%08" PRIu64, st.seg);
            log_q(q, BASE_LOG_WARN,
                  "the WAL no longer has the segment of the saved position: samples from there to the oldest "
                  "segment are lost",
                  "segment", sg, NULL, NULL);
            atomic_fetch_add(&q->st.damaged, 1);
        }
    }
    free(segs);
    for (size_t i = 0; i < nf && i < REMOTE_MAX_FILTERS; i++) r->filters[r->nfilters++] = fs[i];
    for (size_t i = REMOTE_MAX_FILTERS; i < nf; i++) remote__filter_free(&fs[i]);
    filters_recompute(r);
    if (fresh && r->nfilters) {
        /* written now: a kill before the first save must not move the start
         * to a later end of the WAL */
        remote__pos_render(&r->pbuf, q->c.url, r->filters, r->nfilters);
        if (base_buf_err(&r->pbuf) || remote__pos_write(q->pos_path, &r->pbuf) != 0)
            log_q(q, BASE_LOG_WARN, "cannot write the remote write position file", "file", q->pos_path, NULL,
                  NULL);
        base_buf_reset(&r->pbuf);
    }
    r->seg = first;
    r->off = 0;
    r->dispatched = (remote_pos){first, 0};
    r->pos = r->skip_until;
    atomic_store(&q->st.cur_segment, first);
    atomic_store(&q->st.pos_seg, r->skip_until.seg);
    atomic_store(&q->st.pos_off, r->skip_until.off);
    atomic_store(&q->hold_seg, first);
    (void)ck;
    if (pthread_create(&q->reader_th, NULL, reader_main, q) != 0)
        return base_errf(err, errlen, BASE_E_IO, "cannot start the reader thread");
    q->reader_started = 1;
    return 0;
}

void remote__queue_stop(remote_queue *q) {
    atomic_store(&q->stopping, 1);
    atomic_store(&q->md_abort, 1);
    pthread_mutex_lock(&q->mu);
    pthread_cond_broadcast(&q->cv);
    pthread_mutex_unlock(&q->mu);
    if (q->reader_started) pthread_join(q->reader_th, NULL);
    if (q->md_started) pthread_join(q->md_th, NULL);
    q->reader_started = q->md_started = 0;
    remote_reader *r = &q->r;
    seg_close(r);
    for (size_t i = 0; i < r->map.cap; i++) free(r->map.slot[i]);
    free(r->map.slot);
    grave_free(q, (remote_pos){0, 0}, 1);
    free(r->grave);
    for (size_t i = 0; i < r->nfilters; i++) remote__filter_free(&r->filters[i]);
    for (unsigned i = 0; i < r->nstage_shards; i++) free(r->stage[i]);
    free(r->stage);
    free(r->nstage);
    free(r->capstage);
    free(r->buf);
    free(r->zbuf);
    free(r->pairs);
    free(r->views);
    free(r->lbl_mem);
    base_buf_free(&r->pbuf);
    base_buf_free(&r->plast);
    labels_builder_free(&r->b);
    memset(r, 0, sizeof *r);
    r->fd = -1;
    atomic_store(&q->hold_seg, 0);
}
