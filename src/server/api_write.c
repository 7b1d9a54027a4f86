/* api_write.c -- POST /api/v1/write: the remote write receiver (remote
 * write 1.0), as Prometheus 2.42's storage/remote/write_handler.go with
 * its head's appender behind it. Decoding is src/remote/decode.h.
 *
 * ANSWERS (checked against the real 2.42 binary; tests/compat/
 * remote_write_in.py and tests/integration/remote_write_in.py):
 *   receiver off (no --web.enable-remote-write-receiver): 404 "remote
 *     write receiver needs to be enabled with
 *     --web.enable-remote-write-receiver" (2.42 names its older flag,
 *     --enable-feature=remote-write-receiver, which kelvin does not have);
 *   GET, PUT, HEAD...: 405 with Allow "OPTIONS, POST"; OPTIONS 204 (api.c);
 *   a body that does not decode, or over a limit: 400 with the decoder's
 *     message (decode.h LIMITS: 32 MiB compressed, 64 MiB decoded, 512 MiB
 *     of protobuf structures; bodies over --web.max-request-size get 413
 *     from src/http before this runs);
 *   samples the head refuses: 400 "out of order sample", "duplicate sample
 *     for timestamp", "out of bounds" (too old, no out-of-order window);
 *     with --storage.tsdb.out-of-order-time-window set, a sample older than
 *     the window is 500 "too old sample" (2.42's ErrTooOldSample is not in
 *     its list of 400s);
 *   a series with a repeated label name: 500 `label name "x" is not
 *     unique: invalid sample`; with no label left once empty values are
 *     dropped: 500 "empty labelset: invalid sample" (2.42's ErrInvalidSample
 *     falls to its default case);
 *   a series carrying native histograms: 500 "native histograms are
 *     disabled" (kelvin has none; 2.42 without the feature flag);
 *   anything else (out of memory, the WAL): 500 with the reason;
 *   otherwise 204. Error bodies are text/plain with a newline (Go's
 *   http.Error). Content-Type and Content-Encoding are not checked (2.42
 *   does not check them).
 *
 * 2.42'S ORDER, AND WHAT KELVIN DOES WITH IT. 2.42 appends sample by
 * sample in request order; each Append checks the sample against what is
 * already committed, and the first error rolls the whole request back.
 * Its head checks, per sample: too old (t before max(the head's min valid
 * time, its newest sample - half the block range), with no out-of-order
 * window; an empty head takes the request's first sample as its newest),
 * then the labels, then out of order / duplicate against committed data;
 * a series' histograms come after its samples. Samples that only conflict
 * with earlier samples of the same request pass Append and are dropped
 * silently at commit (204). Kelvin:
 *   1. checks, in that order and before appending anything, the bounds and
 *      labels of every sample and the histograms: a request failing there
 *      changes nothing, as in 2.42;
 *   2. drops what 2.42's commit would drop: per series (the same labels in
 *      two TimeSeries entries are one series), a sample not after the
 *      newest one queued before it in this request (with an out-of-order
 *      window, only one at a time already queued: older ones go to the
 *      head's out-of-order store, as 2.42's commit takes them into its own);
 *   3. commits the rest as one commit (one WAL write) and answers from the
 *      head's counts: 400/500 as above when it refused a sample.
 * THE DIFFERENCES. In step 3 the samples the head accepted stay. 2.42
 * would have rolled them back, but kelvin's head has no way to check a
 * sample against committed data without applying it (an API for that
 * would make this exact). A sender that retries the same request then
 * finds them again as no-ops; senders drop 4xx requests anyway. Also, for
 * a request with several problems in step 3 the answer names out of order
 * first, then duplicates, then too old (2.42 names the first in request
 * order), a problem found in step 1 anywhere in the request is answered
 * before a conflict with committed data in an earlier series, and a
 * sample that conflicts both with an earlier sample of the request and
 * with committed data (2.42: 400) is dropped silently.
 *
 * Series whose labels kelvin cannot hold (decode.h: an empty name, a
 * name or value over 16 MiB, over 4096 labels; 2.42 stores them) are
 * skipped and counted (kelvin_remote_write_invalid_labels_samples_total),
 * as later Prometheus versions skip invalid series. Exemplars and
 * metadata are dropped (2.42 drops exemplars unless its exemplar storage
 * is on).
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/log.h"
#include "expo/expo.h"
#include "labels/labels.h"
#include "remote/decode.h"
#include "server/server_int.h"

#define CT_TEXT_PLAIN "text/plain; charset=utf-8"

static const char disabled_msg[] =
    "remote write receiver needs to be enabled with --web.enable-remote-write-receiver\n";

/* Go's http.Error: msg and a newline, text/plain. */
static void http_error(server *s, http_response *resp, int status, const char *msg) {
    size_t n = strlen(msg);
    char *b = malloc(n + 2);
    if (!b) {
        http_respond_text(resp, 500, "out of memory\n");
        status = 500;
    } else {
        memcpy(b, msg, n);
        b[n] = '\n';
        http_respond_copy(resp, status, CT_TEXT_PLAIN, b, n + 1);
        free(b);
    }
    atomic_fetch_add(&s->rx.requests[status == 400 ? 1 : 2], 1);
}

/* The newest sample queued per series in this request (step 2). */
typedef struct newest {
    const labels_set *ls; /* NULL: free slot */
    uint64_t hash;
    int64_t t;
} newest;

typedef struct newest_map {
    newest *v;
    size_t mask;
} newest_map;

static newest *newest_get(newest_map *m, const labels_set *ls) {
    uint64_t h = labels_hash(ls);
    for (size_t i = h & m->mask;; i = (i + 1) & m->mask) {
        newest *e = &m->v[i];
        if (!e->ls) {
            e->ls = ls;
            e->hash = h;
            e->t = INT64_MIN;
            return e;
        }
        if (e->hash == h && labels_equal(e->ls, ls)) return e;
    }
}

/* With an out-of-order window: every (series, time) queued in this
 * request, so a second sample at a time already queued is dropped as
 * 2.42's commit drops it (its OOO insert refuses a time it holds). */
typedef struct queued_set {
    uint64_t *key; /* series slot + 1 (0: free) */
    int64_t *t;
    size_t mask;
} queued_set;

/* 1 if (id, t) was there already, else adds it and returns 0. */
static int queued_test_add(queued_set *q, uint64_t id, int64_t t) {
    uint64_t h = (id * 0x9E3779B97F4A7C15u) ^ ((uint64_t)t * 0xC2B2AE3D27D4EB4Fu);
    h ^= h >> 29;
    for (size_t i = h & q->mask;; i = (i + 1) & q->mask) {
        if (q->key[i] == 0) {
            q->key[i] = id + 1;
            q->t[i] = t;
            return 0;
        }
        if (q->key[i] == id + 1 && q->t[i] == t) return 1;
    }
}

/* Go's int64 subtraction (wraps). */
static int64_t go_sub(int64_t a, int64_t b) {
    return (int64_t)((uint64_t)a - (uint64_t)b);
}

/* Step 1: 0, or the status and message of the first problem. */
static int check(server *s, const remote_rx_request *r, const char **ret_msg) {
    tsdb_head *h = tsdb_db_head(s->db);
    int window = s->dbo.ooo_window_ms > 0;
    int64_t min_valid = INT64_MIN;
    if (!window) {
        int64_t mint, maxt;
        tsdb_head_bounds(h, &mint, &maxt);
        if (mint > maxt) { /* empty head: 2.42's initAppender takes the first sample's time */
            maxt = INT64_MIN;
            for (size_t i = 0; i < r->nseries && maxt == INT64_MIN; i++)
                if (r->series[i].nsamples) maxt = r->series[i].samples[0].t;
        }
        /* 2.42's appendableMinValidTime: max(minValidTime, MaxTime() - chunkRange/2) */
        min_valid = tsdb_head_min_valid_time(h);
        if (maxt != INT64_MIN) {
            int64_t cw = go_sub(maxt, s->dbo.min_block_ms / 2);
            if (cw > min_valid) min_valid = cw;
        }
    }
    for (size_t i = 0; i < r->nseries; i++) {
        const remote_rx_series *x = &r->series[i];
        if (x->err == REMOTE_RX_UNSUPPORTED) continue; /* skipped, see above */
        for (size_t j = 0; j < x->nsamples; j++) {
            if (x->samples[j].t < min_valid) {
                *ret_msg = "out of bounds";
                return 400;
            }
            if (x->err != REMOTE_RX_OK) {
                *ret_msg = x->msg;
                return 500;
            }
        }
        if (x->nhistograms) {
            *ret_msg = "native histograms are disabled";
            return 500;
        }
    }
    return 0;
}

/* Steps 2 and 3: 0 (204), or the status and message. */
static int append(server *s, const remote_rx_request *r, const char **ret_msg, char *err, size_t errlen) {
    size_t nok = 0, nsamples = 0;
    for (size_t i = 0; i < r->nseries; i++)
        if (r->series[i].err == REMOTE_RX_OK && r->series[i].nsamples) {
            nok++;
            nsamples += r->series[i].nsamples;
        }
    if (nok == 0) return 0;
    int window = s->dbo.ooo_window_ms > 0;
    size_t cap = 16, qcap = 16;
    while (cap < nok * 2) cap *= 2;
    while (window && qcap < nsamples * 2) qcap *= 2;
    newest_map m = {calloc(cap, sizeof(newest)), cap - 1};
    queued_set qs = {window ? calloc(qcap, sizeof *qs.key) : NULL,
                     window ? malloc(qcap * sizeof *qs.t) : NULL, qcap - 1};
    tsdb_head_app *a = NULL;
    if (!m.v || (window && (!qs.key || !qs.t)) || tsdb_head_app_new(tsdb_db_head(s->db), &a) != 0) {
        free(m.v);
        free(qs.key);
        free(qs.t);
        snprintf(err, errlen, "%s", base_strerror(BASE_E_NOMEM));
        *ret_msg = err;
        return 500;
    }
    uint64_t dropped = 0;
    int rc = 0;
    for (size_t i = 0; i < r->nseries && rc == 0; i++) {
        const remote_rx_series *x = &r->series[i];
        if (x->err != REMOTE_RX_OK || !x->nsamples) continue;
        newest *e = newest_get(&m, x->ls);
        for (size_t j = 0; j < x->nsamples && rc == 0; j++) {
            int64_t t = x->samples[j].t;
            /* 2.42's commit drops it: a time already queued, or out of
             * order (with an out-of-order window its commit takes those
             * into the OOO store, and so does kelvin's head) */
            if (window ? queued_test_add(&qs, (uint64_t)(e - m.v), t) : t <= e->t) {
                dropped++;
                continue;
            }
            if (t > e->t) e->t = t;
            rc = tsdb_head_app_add(a, x->ls, x->samples[j].t, x->samples[j].v);
        }
    }
    free(m.v);
    free(qs.key);
    free(qs.t);
    tsdb_append_result res;
    memset(&res, 0, sizeof res);
    if (rc == 0) {
        rc = tsdb_head_app_commit(a, &res);
    } else {
        tsdb_head_app_rollback(a);
    }
    tsdb_head_app_free(a);
    atomic_fetch_add(&s->rx.samples_dropped, dropped);
    if (rc != 0) {
        snprintf(err, errlen, "%s", base_strerror(rc));
        *ret_msg = err;
        return 500;
    }
    atomic_fetch_add(&s->rx.samples_appended, res.appended);
    atomic_fetch_add(&s->rx.samples_rejected,
                     res.out_of_order + res.duplicate + res.too_old + res.unknown_ref);
    if (res.out_of_order) {
        *ret_msg = "out of order sample";
        return 400;
    }
    if (res.duplicate) {
        *ret_msg = "duplicate sample for timestamp";
        return 400;
    }
    if (res.too_old) {
        *ret_msg = window ? "too old sample" : "out of bounds";
        return window ? 500 : 400;
    }
    if (res.unknown_ref) { /* cannot happen: samples are added by labels */
        *ret_msg = "not found";
        return 500;
    }
    return 0;
}

void server__api_write(server *s, const http_request *req, http_response *resp) {
    if (!s->flags.remote_write_receiver) {
        http_respond_copy(resp, 404, CT_TEXT_PLAIN, disabled_msg, sizeof disabled_msg - 1);
        atomic_fetch_add(&s->rx.requests[3], 1);
        return;
    }
    remote_rx_request r;
    char err[512];
    int rc = remote_rx_decode(req->body, req->body_len, NULL, &r, err, sizeof err);
    if (rc != 0) {
        base_log(BASE_LOG_ERROR, "Error decoding remote write request", "err", err, NULL);
        http_error(s, resp, rc == BASE_E_NOMEM ? 500 : 400, err);
        return;
    }
    uint64_t invalid = 0;
    const char *first_invalid = NULL;
    for (size_t i = 0; i < r.nseries; i++)
        if (r.series[i].err == REMOTE_RX_UNSUPPORTED) {
            invalid += r.series[i].nsamples;
            if (!first_invalid) first_invalid = r.series[i].msg;
        }
    if (first_invalid) {
        atomic_fetch_add(&s->rx.samples_invalid_labels, invalid);
        base_log(BASE_LOG_WARN, "Invalid labels in a remote write request: series skipped", "err",
                 first_invalid, NULL);
    }
    atomic_fetch_add(&s->rx.exemplars_dropped, r.nexemplars);
    const char *msg = NULL;
    int status = check(s, &r, &msg);
    if (status == 0) status = append(s, &r, &msg, err, sizeof err);
    if (status != 0) {
        base_log(BASE_LOG_ERROR,
                 status == 400 ? "Out of order sample from remote write" : "Error appending remote write",
                 "err", msg, NULL);
        http_error(s, resp, status, msg);
    } else {
        http_respond_copy(resp, 204, NULL, "", 0);
        atomic_fetch_add(&s->rx.requests[0], 1);
    }
    remote_rx_free(&r);
}

void server__rx_metrics(server *s, struct expo_mset *ms) {
    expo_family *req =
        expo_mset_family(ms, "kelvin_remote_write_requests_total", EXPO_COUNTER,
                         "Remote write requests received (POST /api/v1/write), by answer.", "");
    static const char *const codes[4] = {"code=\"204\"", "code=\"400\"", "code=\"500\"", "code=\"404\""};
    for (int i = 0; i < 4; i++) expo_mset_add(ms, req, "", codes[i], NULL, (double)s->rx.requests[i]);
    static const struct {
        const char *name, *help;
        size_t off;
    } c[] = {
        {"kelvin_remote_write_samples_appended_total", "Remote write samples the head accepted.",
         offsetof(server_rx_stats, samples_appended)},
        {"kelvin_remote_write_samples_rejected_total",
         "Remote write samples the head refused (out of order, duplicate, too old).",
         offsetof(server_rx_stats, samples_rejected)},
        {"kelvin_remote_write_samples_dropped_total",
         "Remote write samples not after an earlier sample of the same series in the same request "
         "(dropped, as Prometheus 2.42 does).",
         offsetof(server_rx_stats, samples_dropped)},
        {"kelvin_remote_write_invalid_labels_samples_total",
         "Remote write samples of series whose labels kelvin cannot store (skipped).",
         offsetof(server_rx_stats, samples_invalid_labels)},
        {"kelvin_remote_write_exemplars_dropped_total", "Remote write exemplars dropped (kelvin keeps none).",
         offsetof(server_rx_stats, exemplars_dropped)},
        {"prometheus_web_federation_errors_total",
         "Total number of errors that occurred while sending federation responses.",
         offsetof(server_rx_stats, federate_errors)},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        expo_family *f = expo_mset_family(ms, c[i].name, EXPO_COUNTER, c[i].help, "");
        const atomic_ullong *v = (const atomic_ullong *)((const char *)&s->rx + c[i].off);
        expo_mset_add(ms, f, "", NULL, NULL, (double)atomic_load(v));
    }
}
