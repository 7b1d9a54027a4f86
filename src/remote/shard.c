/* shard.c -- a shard: a ring of samples the reader pushes, a thread that
 * batches them (2.42's runShard) and sends each batch until the receiver
 * acknowledges or refuses it, and the WriteRequest encoder.
 *
 * RING. cap = capacity + max_samples_per_send samples (2.42 buffers
 * `capacity` samples per shard besides the batch being sent). The reader
 * appends at the tail under mu; the shard thread reads the batch, a
 * prefix of the ring, without the lock (the reader never touches samples
 * it already pushed) and removes it only once the batch is done --
 * acknowledged (2xx) or refused (4xx): so the ring is exactly the shard's
 * unacknowledged samples and its runs say which records they came from
 * (remote_int.h ACKNOWLEDGEMENT).
 *
 * BATCHING. A batch is sent when max_samples_per_send samples wait, when
 * the oldest waiting sample has waited batch_send_deadline, or at once
 * after remote__shard_flush (resharding, shutdown). One batch is in flight
 * per shard, so a series' samples leave in ring order.
 *
 * ENCODING (remote__encode_samples). Each series' labels were packed once by
 * protobuf-c when its series record was read (remote_series.lab: the
 * TimeSeries' `labels` fields, field 1). A batch frames them by hand:
 *   WriteRequest.timeseries (field 1, bytes):  0x0a len TimeSeries
 *   TimeSeries = lab[] then, per sample, field 2:  0x12 len Sample
 *   Sample = 0x09 <value: 8 bytes little endian> 0x10 <timestamp: varint>
 * Consecutive samples of one series share a TimeSeries. Both sample fields
 * are always written (proto3 readers accept explicit zeros). The buffer
 * and the snappy output are reused across batches: no allocation per
 * sample or per batch once they have grown.
 *
 * METRICS per batch as 2.42: samples_total += n per attempt,
 * retried_total += n per retry, failed_total += n when refused,
 * bytes_total += compressed size and highest sent timestamp once done,
 * the send duration per attempt, and the shard calculation's data out
 * counters (whatever the outcome).
 */
#include <snappy-c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/err.h"
#include "base/time.h"
#include "remote/remote_int.h"

const double remote__buckets[REMOTE_NBUCKETS] = {.005, .01, .025, .05, .1, .25, .5, 1,
                                                 2.5,  5,   10,   25,  60, 120, 300};

/* ---- encoding ------------------------------------------------------------ */

static inline size_t uv_len(uint64_t v) {
    size_t n = 1;
    while (v >= 0x80) v >>= 7, n++;
    return n;
}

static inline uint8_t *put_uv(uint8_t *p, uint64_t v) {
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}

/* Bytes of one Sample field (tag, length, body). */
static inline size_t sample_field_len(int64_t t) {
    return 2 + 9 + 1 + uv_len((uint64_t)t);
}

int64_t remote__encode_samples(base_buf *out, const remote_sample *ring, size_t cap, size_t head, size_t k) {
    base_buf_reset(out);
    int64_t hi = INT64_MIN;
    /* pass 1: the exact size */
    size_t total = 0;
    for (size_t i = 0, ix = head; i < k;) {
        const remote_series *s = ring[ix].s;
        size_t body = s->len;
        while (i < k && ring[ix].s == s) {
            body += sample_field_len(ring[ix].t);
            if (ring[ix].t > hi) hi = ring[ix].t;
            i++;
            if (++ix == cap) ix = 0;
        }
        total += 1 + uv_len(body) + body;
    }
    if (base_buf_reserve(out, total + 1) != 0) return hi;
    uint8_t *p = (uint8_t *)out->data;
    /* pass 2: write */
    for (size_t i = 0, ix = head; i < k;) {
        const remote_series *s = ring[ix].s;
        size_t body = s->len, j = i, jx = ix;
        while (j < k && ring[jx].s == s) {
            body += sample_field_len(ring[jx].t);
            j++;
            if (++jx == cap) jx = 0;
        }
        *p++ = 0x0a;
        p = put_uv(p, body);
        memcpy(p, s->lab, s->len);
        p += s->len;
        for (; i < j; i++) {
            const remote_sample *x = &ring[ix];
            size_t tl = uv_len((uint64_t)x->t);
            *p++ = 0x12;
            *p++ = (uint8_t)(9 + 1 + tl);
            *p++ = 0x09;
            uint64_t bits;
            memcpy(&bits, &x->v, 8);
            for (int b = 0; b < 8; b++) *p++ = (uint8_t)(bits >> (8 * b));
            *p++ = 0x10;
            p = put_uv(p, (uint64_t)x->t);
            if (++ix == cap) ix = 0;
        }
    }
    out->len = (size_t)(p - (uint8_t *)out->data);
    out->data[out->len] = '\0';
    return hi;
}

/* ---- the shard thread --------------------------------------------------- */

static void deadline_ts(struct timespec *ts, int64_t mono_deadline_ns) {
    int64_t wait = mono_deadline_ns - base_mono_ns();
    if (wait < 0) wait = 0;
    clock_gettime(CLOCK_REALTIME, ts);
    int64_t ns = ts->tv_nsec + wait;
    ts->tv_sec += (time_t)(ns / 1000000000);
    ts->tv_nsec = (long)(ns % 1000000000);
}

typedef struct attempt_ctx {
    remote_shard *sh;
    uint64_t n;
} attempt_ctx;

static void on_attempt(void *ctx) {
    attempt_ctx *a = ctx;
    atomic_fetch_add(&a->sh->q->st.samples, a->n);
}

static void on_retry(void *ctx) {
    attempt_ctx *a = ctx;
    atomic_fetch_add(&a->sh->q->st.retried, a->n);
}

/* Removes the first k samples (and their runs) from the ring, noting
 * how far the shard is acknowledged. */
static void pop(remote_shard *sh, size_t k) {
    if (!k) return;
    uint32_t last_ix = sh->ring[(sh->head + k - 1) % sh->cap].ix;
    remote_pos last_rec = {0, 0};
    sh->head = (sh->head + k) % sh->cap;
    sh->n -= k;
    while (k > 0 && sh->rn > 0) {
        remote_run *r = &sh->runs[sh->rhead];
        last_rec = r->start;
        if (r->n > k) {
            r->n -= k;
            break;
        }
        k -= r->n;
        sh->rhead = (sh->rhead + 1) % sh->cap;
        sh->rn--;
    }
    sh->last_acked = (remote_ack){last_rec, (uint64_t)last_ix + 1};
    sh->oldest_ns = sh->n ? base_mono_ns() : 0;
}

static void *shard_main(void *arg) {
    remote_shard *sh = arg;
    remote_queue *q = sh->q;
    remote_stats *st = &q->st;
    size_t maxb = (size_t)q->c.max_samples;
    int64_t deadline_ns = q->c.deadline_ms * 1000000;
    char why[512];
    pthread_mutex_lock(&sh->mu);
    for (;;) {
        if (sh->stop == 2 || (sh->stop == 1 && sh->n == 0)) break;
        int ready = sh->n >= maxb ||
                    (sh->n > 0 && (sh->flush || sh->stop || base_mono_ns() - sh->oldest_ns >= deadline_ns));
        if (!ready) {
            if (sh->n == 0) {
                sh->flush = 0;
                pthread_cond_wait(&sh->cv, &sh->mu);
            } else {
                struct timespec ts;
                deadline_ts(&ts, sh->oldest_ns + deadline_ns);
                pthread_cond_timedwait(&sh->cv, &sh->mu, &ts);
            }
            continue;
        }
        size_t k = sh->n < maxb ? sh->n : maxb;
        size_t head = sh->head;
        pthread_mutex_unlock(&sh->mu);

        int64_t begin = base_mono_ns();
        int64_t hi = remote__encode_samples(&sh->pb, sh->ring, sh->cap, head, k);
        int r;
        size_t zlen = 0;
        if (base_buf_err(&sh->pb)) {
            r = REMOTE_RETRY; /* out of memory: try again later */
        } else {
            size_t need = snappy_max_compressed_length(sh->pb.len);
            if (need > sh->zcap) {
                char *nz = realloc(sh->z, need);
                if (nz) sh->z = nz, sh->zcap = need;
            }
            zlen = sh->zcap;
            r = need <= sh->zcap && snappy_compress(sh->pb.data, sh->pb.len, sh->z, &zlen) == SNAPPY_OK
                    ? REMOTE_SENT
                    : REMOTE_RETRY;
        }
        if (r == REMOTE_RETRY) { /* no memory for the request: wait, keep the samples */
            snprintf(why, sizeof why, "out of memory encoding a batch of %zu samples", k);
            remote__log_send(q, 0, why);
            remote__sleep_abortable(q, &sh->abort, q->c.max_backoff_ms > 0 ? q->c.max_backoff_ms : 1000);
            pthread_mutex_lock(&sh->mu);
            continue;
        }
        attempt_ctx ac = {.sh = sh, .n = k};
        r = remote__client_send(&sh->cl, sh->z, zlen, on_attempt, on_retry, &ac, why, sizeof why);
        if (r == REMOTE_ABORTED) {
            pthread_mutex_lock(&sh->mu);
            break;
        }
        if (r == REMOTE_FAIL) {
            atomic_fetch_add(&st->failed, k);
            remote__log_send(q, -1, why);
        } else {
            remote__log_send(q, 1, NULL);
        }
        atomic_fetch_add(&st->bytes, zlen);
        int64_t prev = atomic_load(&st->highest_sent_ms);
        while (hi > prev && !atomic_compare_exchange_weak(&st->highest_sent_ms, &prev, hi)) {
        }
        atomic_fetch_add(&st->data_out, k);
        atomic_fetch_add(&st->data_out_ns, (uint64_t)(base_mono_ns() - begin));
        atomic_store(&st->last_send_ms, base_unix_ms());
        atomic_fetch_sub(&st->pending, k);
        pthread_mutex_lock(&sh->mu);
        pop(sh, k);
        pthread_cond_broadcast(&sh->space);
    }
    sh->started = 2; /* exited */
    pthread_cond_broadcast(&sh->space);
    pthread_mutex_unlock(&sh->mu);
    return NULL;
}

int remote__shard_new(remote_queue *q, unsigned idx, remote_shard **ret) {
    remote_shard *sh = calloc(1, sizeof *sh);
    if (!sh) return BASE_E_NOMEM;
    sh->q = q;
    sh->idx = idx;
    sh->cap = (size_t)q->c.capacity + (size_t)q->c.max_samples;
    sh->ring = malloc(sh->cap * sizeof *sh->ring);
    sh->runs = malloc(sh->cap * sizeof *sh->runs);
    base_buf_init(&sh->pb, 0);
    char err[256];
    int rc = sh->ring && sh->runs ? 0 : BASE_E_NOMEM;
    if (!rc && remote__client_init(&sh->cl, q, &sh->abort, &sh->quit, err, sizeof err) != 0) {
        remote__log_send(q, 0, err);
        rc = BASE_E_NOMEM;
    }
    if (!rc) {
        pthread_mutex_init(&sh->mu, NULL);
        pthread_cond_init(&sh->cv, NULL);
        pthread_cond_init(&sh->space, NULL);
        if (pthread_create(&sh->th, NULL, shard_main, sh) != 0) {
            pthread_mutex_destroy(&sh->mu);
            pthread_cond_destroy(&sh->cv);
            pthread_cond_destroy(&sh->space);
            rc = BASE_E_IO;
        } else {
            sh->started = 1;
        }
    }
    if (rc) {
        remote__client_free(&sh->cl);
        free(sh->ring);
        free(sh->runs);
        free(sh);
        return rc;
    }
    *ret = sh;
    return 0;
}

void remote__shard_flush(remote_shard *sh) {
    pthread_mutex_lock(&sh->mu);
    sh->flush = 1;
    pthread_cond_broadcast(&sh->cv);
    pthread_mutex_unlock(&sh->mu);
}

void remote__shard_join(remote_shard *sh) {
    if (sh->started == 3) return;
    pthread_mutex_lock(&sh->mu);
    sh->stop = 2;
    atomic_store(&sh->quit, 1);
    atomic_store(&sh->abort, 1);
    pthread_cond_broadcast(&sh->cv);
    pthread_mutex_unlock(&sh->mu);
    pthread_mutex_lock(&sh->q->mu); /* a backoff sleep ends at once */
    pthread_cond_broadcast(&sh->q->cv);
    pthread_mutex_unlock(&sh->q->mu);
    pthread_join(sh->th, NULL);
    sh->started = 3;
}

void remote__shard_free(remote_shard *sh) {
    if (!sh) return;
    remote__shard_join(sh);
    atomic_fetch_sub(&sh->q->st.pending, sh->n);
    pthread_mutex_destroy(&sh->mu);
    pthread_cond_destroy(&sh->cv);
    pthread_cond_destroy(&sh->space);
    remote__client_free(&sh->cl);
    base_buf_free(&sh->pb);
    free(sh->z);
    free(sh->ring);
    free(sh->runs);
    free(sh);
}
