/* eval_stream.c -- nodes that produce their output one series at a time:
 * instant vector selectors and calls of range functions (over a matrix
 * selector or a subquery). The evaluator drains a stream into a vector,
 * or an aggregation consumes it series by series without ever holding
 * the whole input (sum(rate(x[5m])) over 10k series keeps a few series'
 * arrays alive, not 10k).
 *
 * PER SERIES. A selector walks the series' samples with a cursor across
 * the steps (eval.c's lookback rule: newest sample <= T, not older than T -
 * lookback, not a stale marker) while reading them in batches. A range
 * function reads the samples of the union of its windows (stale markers
 * dropped), slides the window with two cursors (each sample enters and
 * leaves once) and calls pq_fn_range per step. A series whose timestamps
 * equal the previous one's in the same part (the series of one target
 * share their scrapes') reuses its windows and what pq_fn_range_windows
 * kept from them (pq_wtimes).
 *
 * THREADS (opts.threads > 1, selectors and range functions over a matrix
 * selector, from pq__stream_thread_min_steps steps). Part k of T opens
 * its own select with the same matchers and range and takes the series
 * whose labels_hash % T == k: decoding and computing run in parallel.
 * Parts 1..T-1 are threads that hand their outputs, in storage order, to
 * a small ring each; part 0 is the reader's own, worked when the merge
 * needs its next series (T threads busy on T cores, not T + 1 taking
 * turns). The reader merges the fronts by labels (storage order is label
 * order), so the series, their order, their values and the first error
 * met are those of one thread. Workers touch only their own set, buffers
 * and ring, the stream's read-only parameters and the thread-safe block
 * cache; labels (__name__ dropped), accounting and errors are the
 * reader's. A subquery argument is evaluated first and its series are
 * windowed by the reader alone.
 *
 * Ownership: a stream owns its storage sets, argument values and
 * workers; the series a caller gets from pq__stream_next are the
 * caller's, their cnt points held in q->cur for it.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/time.h"
#include "promql/eval_int.h"
#include "promql/func.h"

int64_t pq__vsel_offset(const pq_q *q, const pq_node *vs, const pq_rng *r);
int pq__select(pq_q *q, const pq_node *vs, int64_t mint, int64_t maxt, void **ret);
int pq__eval_subq(pq_q *q, const pq_node *n, const pq_rng *r, pq_rng *ret_rng, int64_t *ret_off, pq_val *ret);
int pq__vsel_refs(const pq_q *q, const pq_node *n, const pq_rng *r, int ts_mode, int64_t *ret_ref0,
                  int64_t *ret_rstep);

#define RD_BATCH    512
#define RING        64 /* items a worker may be ahead; it wakes a waiting reader at half */
#define MAX_WORKERS 16

enum { ST_VSEL, ST_MSEL, ST_SUBQ };

unsigned pq__stream_thread_min_steps = 256;

/* An output of the per-series work. */
typedef struct item {
    labels_set *ls; /* the input series' labels (a reference) */
    double *v;      /* the arrays (PQ block of r.n steps), NULL when none */
    uint64_t *bm;
    size_t cnt;
    uint64_t total; /* samples seen over the steps (stats) */
    size_t maxwin;  /* the largest window (what 2.42 holds) */
    int rc;         /* < 0: an error for this series (err) */
    char err[256];
} item;

/* What one thread reads with. */
typedef struct part {
    struct pq_stream *s;
    void *set;
    int64_t *t;
    double *v;
    size_t cap;
    double *spare;                   /* arrays to reuse after a series without points */
    uint32_t *wlo, *whi, *wk, *wscr; /* pq_fn_range_windows' windows (r.n) and scratch (wscr_cap) */
    size_t wscr_cap;
    /* the last windows' timestamps: a series with the same ones (another
     * of the same target) reuses the windows and tc */
    int64_t *lt;
    size_t ln, lcap, lnw, lmaxwin;
    uint64_t ltotal;
    pq_wtimes tc;
    unsigned k;
    pthread_t th;
    int started;
    /* the ring (workers only) */
    item ring[RING];
    size_t head, tail;
    int done;
} part;

struct pq_stream {
    pq_q *q;
    int kind;
    pq_rng r;
    int ts_mode;
    const pq_node *vs; /* the selector (VSEL, MSEL) */
    int64_t ref0, rstep, mint, maxt;
    pq_func_id id;
    int64_t off, range;
    pq_val mvals[PQ_FUNC_MAX_ARGS];
    double *margs[PQ_FUNC_MAX_ARGS];
    size_t nm;
    pq_val sub;
    pq_rng srng;
    size_t subi;
    int eof;
    size_t arr_bytes; /* bytes of one series' arrays */
    part main;        /* the sequential reader */
    /* workers */
    unsigned nparts;
    part *parts;
    item front[MAX_WORKERS];
    int have_front[MAX_WORKERS];
    pthread_mutex_t mu;
    pthread_cond_t cv_data;  /* the reader waits for a ring to fill */
    pthread_cond_t cv_space; /* workers wait for room in their rings */
    int reader_waits;        /* wake only who waits: a wake-up is a system call */
    unsigned space_waits;
    int quit, sync_init;
};

/* ---- per-series work (any thread) ------------------------------------------------- */

static int deadline_passed(const pq_q *q) {
    return (q->cancel && *q->cancel) || (q->deadline_ns && base_mono_ns() > q->deadline_ns);
}

static int arrays(const pq_stream *s, part *p, item *it) {
    if (p->spare) {
        it->v = p->spare;
        p->spare = NULL;
    } else {
        it->v = pq__mem_alloc(s->arr_bytes);
        if (!it->v) return BASE_E_NOMEM;
    }
    it->bm = (uint64_t *)(it->v + s->r.n);
    memset(it->bm, 0, PQ_BM_WORDS(s->r.n) * sizeof(uint64_t));
    return 0;
}

static void keep_spare(const pq_stream *s, part *p, item *it) {
    if (!it->v) return;
    if (p->spare)
        pq__mem_free(it->v, s->arr_bytes);
    else
        p->spare = it->v;
    it->v = NULL;
    it->bm = NULL;
}

/* A selector's walk over the current series of p's set. */
static int work_vsel(const pq_stream *s, part *p, item *it) {
    const promql_storage_ops *ops = s->q->st.ops;
    const pq_rng *r = &s->r;
    int64_t lb = s->q->o->lookback_ms;
    int64_t tb[RD_BATCH];
    double vb[RD_BATCH];
    size_t k = 0, cnt = 0;
    int have = 0, ts = s->ts_mode;
    int64_t pt = 0, ref = s->ref0;
    double pv = 0;
    int rc = arrays(s, p, it);
    if (rc < 0) return rc;
    double *ov = it->v;
    uint64_t *obm = it->bm;
    for (;;) {
        int c = ops->samples(p->set, tb, vb, RD_BATCH);
        if (c < 0) {
            snprintf(it->err, sizeof it->err, "reading series: %s", base_strerror(c));
            return c;
        }
        if (c == 0) break;
        for (int i = 0; i < c && k < r->n; i++) {
            int64_t t = tb[i];
            while (k < r->n && ref < t) {
                if (have && pt >= ref - lb && !pq__is_stale(pv)) {
                    ov[k] = ts ? (double)pt / 1000 : pv;
                    obm[k >> 6] |= (uint64_t)1 << (k & 63);
                    cnt++;
                }
                k++;
                ref += s->rstep;
            }
            pt = t;
            pv = vb[i];
            have = 1;
        }
        if (k >= r->n) break;
    }
    while (k < r->n) {
        if (have && pt <= ref && pt >= ref - lb && !pq__is_stale(pv)) {
            ov[k] = ts ? (double)pt / 1000 : pv;
            obm[k >> 6] |= (uint64_t)1 << (k & 63);
            cnt++;
        }
        k++;
        ref += s->rstep;
    }
    it->cnt = cnt;
    it->total = cnt;
    return 0;
}

/* A range function's windows over samples t[0..n): first the windows of
 * the steps (two cursors; empty windows left out), then the function over
 * them -- all at once where pq_fn_range_windows computes it, else window
 * by window. */
static int work_windows(const pq_stream *s, part *p, const int64_t *t, const double *v, size_t n, item *it) {
    const pq_rng *r = &s->r;
    if (n >= UINT32_MAX || r->n >= UINT32_MAX) {
        snprintf(it->err, sizeof it->err, "too many samples in one series");
        return BASE_E_LIMIT;
    }
    if (!p->wlo) {
        p->wlo = malloc(3 * r->n * sizeof *p->wlo);
        if (!p->wlo) return BASE_E_NOMEM;
        p->whi = p->wlo + r->n;
        p->wk = p->whi + r->n;
    }
    size_t lo = 0, hi = 0, nw = 0, maxwin = 0;
    uint64_t total = 0;
    int64_t ts = r->start;
    int same = p->lt && n == p->ln && memcmp(t, p->lt, n * sizeof *t) == 0;
    if (same) {
        nw = p->lnw;
        maxwin = p->lmaxwin;
        total = p->ltotal;
    } else {
        for (size_t k = 0; k < r->n; k++, ts += r->step) {
            int64_t maxt = ts - s->off, mint = maxt - s->range;
            while (hi < n && t[hi] <= maxt) hi++;
            while (lo < hi && t[lo] < mint) lo++;
            size_t wc = hi - lo;
            if (wc == 0) continue;
            total += wc;
            if (wc > maxwin) maxwin = wc;
            p->wlo[nw] = (uint32_t)lo;
            p->whi[nw] = (uint32_t)hi;
            p->wk[nw] = (uint32_t)k;
            nw++;
        }
        /* kept for the next series; without room, nothing is kept */
        p->ln = SIZE_MAX;
        if (p->lcap < n) {
            int64_t *nl = realloc(p->lt, (n ? n : 1) * sizeof *nl);
            if (nl) {
                p->lt = nl;
                p->lcap = n;
            }
        }
        if (p->lt && p->lcap >= n) {
            memcpy(p->lt, t, n * sizeof *t);
            p->ln = n;
            p->lnw = nw;
            p->lmaxwin = maxwin;
            p->ltotal = total;
        }
    }
    p->tc.same = same;
    it->total = total;
    it->maxwin = maxwin;
    double *ov = it->v;
    uint64_t *obm = it->bm;
    if (pq_fn_range_windowed(s->id)) {
        if (p->wscr_cap < n + 1) {
            free(p->wscr);
            p->wscr_cap = n + 1 > 4096 ? n + 1 : 4096;
            p->wscr = malloc(p->wscr_cap * sizeof *p->wscr);
            if (!p->wscr) {
                p->wscr_cap = 0;
                return BASE_E_NOMEM;
            }
        }
        pq_windows w = {.t = t,
                        .v = v,
                        .n = n,
                        .lo = p->wlo,
                        .hi = p->whi,
                        .k = p->wk,
                        .nw = nw,
                        .start = r->start,
                        .step = r->step,
                        .off = s->off,
                        .range = s->range,
                        .arg = s->nm ? s->margs[0] : NULL,
                        .scratch = p->wscr,
                        .tc = &p->tc};
        it->cnt = pq_fn_range_windows(s->id, &w, ov, obm);
        return 0;
    }
    double args[PQ_FUNC_MAX_ARGS];
    size_t cnt = 0;
    for (size_t j = 0; j < nw; j++) {
        size_t k = p->wk[j];
        ts = r->start + (int64_t)k * r->step;
        int64_t maxt = ts - s->off, mint = maxt - s->range;
        if (s->id == PQ_F_ABSENT_OVER_TIME) {
            ov[k] = 1;
            obm[k >> 6] |= (uint64_t)1 << (k & 63);
            cnt++;
            continue;
        }
        for (size_t a = 0; a < s->nm; a++) args[a] = s->margs[a][k];
        if (s->id == PQ_F_HOLT_WINTERS && pq_fn_range_check(s->id, args, s->nm, it->err, sizeof it->err) < 0)
            return BASE_E_INVAL;
        double val;
        int got = pq_fn_range(s->id, t + p->wlo[j], v + p->wlo[j], p->whi[j] - p->wlo[j], mint, maxt, ts,
                              args, s->nm, &val);
        if (got < 0) return BASE_E_NOMEM;
        if (got) {
            ov[k] = val;
            obm[k >> 6] |= (uint64_t)1 << (k & 63);
            cnt++;
        }
    }
    it->cnt = cnt;
    return 0;
}

static int part_reserve(part *p, size_t need) {
    if (p->cap >= need) return 0;
    size_t nc = p->cap ? p->cap : 1024;
    while (nc < need) nc *= 2;
    int64_t *nt = realloc(p->t, nc * sizeof *nt);
    if (!nt) return BASE_E_NOMEM;
    p->t = nt;
    double *nv = realloc(p->v, nc * sizeof *nv);
    if (!nv) return BASE_E_NOMEM;
    p->v = nv;
    p->cap = nc;
    return 0;
}

/* A range function over the current series of p's set. */
static int work_msel(const pq_stream *s, part *p, item *it) {
    const promql_storage_ops *ops = s->q->st.ops;
    size_t n = 0;
    int rc;
    for (;;) {
        if ((rc = part_reserve(p, n + RD_BATCH)) < 0) return rc;
        int c = ops->samples(p->set, p->t + n, p->v + n, p->cap - n);
        if (c < 0) {
            snprintf(it->err, sizeof it->err, "reading series: %s", base_strerror(c));
            return c;
        }
        if (c == 0) break;
        /* one series alone may not exceed the samples limit */
        if (n + (size_t)c > s->q->max_samples) {
            snprintf(it->err, sizeof it->err,
                     "query processing would load too many samples into memory in query execution");
            return BASE_E_LIMIT;
        }
        size_t w = n;
        for (size_t i = n; i < n + (size_t)c; i++) {
            if (pq__is_stale(p->v[i])) continue;
            p->t[w] = p->t[i];
            p->v[w] = p->v[i];
            w++;
        }
        n = w;
    }
    if ((rc = arrays(s, p, it)) < 0) return rc;
    return work_windows(s, p, p->t, p->v, n, it);
}

/* The next series of p's set that p owns, worked: 1, 0 at the end, < 0
 * (it->err says why, it->ls may be set). */
static int part_next(pq_stream *s, part *p, unsigned nparts, item *it) {
    const promql_storage_ops *ops = s->q->st.ops;
    memset(it, 0, sizeof *it);
    for (;;) {
        if (deadline_passed(s->q)) return BASE_E_TIMEOUT;
        int rc = ops->next(p->set);
        if (rc < 0) {
            snprintf(it->err, sizeof it->err, "expanding series: %s", base_strerror(rc));
            return rc;
        }
        if (rc == 0) return 0;
        const labels_set *ls = ops->labels(p->set);
        if (nparts > 1 && labels_hash(ls) % nparts != p->k) continue;
        rc = s->kind == ST_VSEL ? work_vsel(s, p, it) : work_msel(s, p, it);
        if (rc < 0) {
            keep_spare(s, p, it);
            it->ls = labels_ref(ls);
            return rc;
        }
        if (it->cnt == 0) {
            keep_spare(s, p, it);
            continue;
        }
        it->ls = labels_ref(ls);
        return 1;
    }
}

/* ---- workers ------------------------------------------------------------------------ */

static void *worker(void *arg) {
    part *p = arg;
    pq_stream *s = p->s;
    for (;;) {
        item it;
        int rc = part_next(s, p, s->nparts, &it);
        if (rc < 0) it.rc = rc;
        pthread_mutex_lock(&s->mu);
        if (rc == 0) {
            p->done = 1;
            if (s->reader_waits) pthread_cond_signal(&s->cv_data);
            pthread_mutex_unlock(&s->mu);
            return NULL;
        }
        while (!s->quit && p->tail - p->head == RING) {
            s->space_waits++;
            pthread_cond_wait(&s->cv_space, &s->mu);
            s->space_waits--;
        }
        if (s->quit) {
            pthread_mutex_unlock(&s->mu);
            labels_unref(it.ls);
            if (it.v) pq__mem_free(it.v, s->arr_bytes);
            return NULL;
        }
        p->ring[p->tail % RING] = it;
        p->tail++;
        if (rc < 0) p->done = 1;
        /* the reader, when it waits, is woken once half a ring is ready:
         * a wake-up per series would cost more than the series */
        if (s->reader_waits && (p->done || p->tail - p->head >= RING / 2)) pthread_cond_signal(&s->cv_data);
        pthread_mutex_unlock(&s->mu);
        if (rc < 0) return NULL;
    }
}

static void stop_workers(pq_stream *s) {
    if (!s->sync_init) return;
    pthread_mutex_lock(&s->mu);
    s->quit = 1;
    pthread_cond_broadcast(&s->cv_space);
    pthread_mutex_unlock(&s->mu);
    for (unsigned k = 0; k < s->nparts; k++) {
        part *p = &s->parts[k];
        if (p->started) pthread_join(p->th, NULL);
        p->started = 0;
        for (; p->head < p->tail; p->head++) {
            item *it = &p->ring[p->head % RING];
            labels_unref(it->ls);
            if (it->v) pq__mem_free(it->v, s->arr_bytes);
        }
    }
    for (unsigned k = 0; k < s->nparts; k++) {
        if (s->have_front[k]) {
            labels_unref(s->front[k].ls);
            if (s->front[k].v) pq__mem_free(s->front[k].v, s->arr_bytes);
            s->have_front[k] = 0;
        }
    }
}

static void part_free(pq_stream *s, part *p) {
    if (p->set) s->q->st.ops->free(p->set);
    p->set = NULL;
    free(p->t);
    free(p->v);
    p->t = NULL;
    p->v = NULL;
    if (p->spare) pq__mem_free(p->spare, s->arr_bytes);
    p->spare = NULL;
    free(p->wlo);
    free(p->wscr);
    p->wlo = p->whi = p->wk = p->wscr = NULL;
    p->wscr_cap = 0;
    free(p->lt);
    p->lt = NULL;
    p->ln = p->lcap = 0;
    pq_wtimes_free(&p->tc);
}

/* Starts T workers, each with its own select. 0, or < 0 with nothing
 * started (the stream then runs sequentially). */
static int start_workers(pq_q *q, pq_stream *s, unsigned t) {
    if (t > MAX_WORKERS) t = MAX_WORKERS;
    s->parts = calloc(t, sizeof *s->parts);
    if (!s->parts) return BASE_E_NOMEM;
    if (pthread_mutex_init(&s->mu, NULL) != 0) goto fail_alloc;
    if (pthread_cond_init(&s->cv_data, NULL) != 0) {
        pthread_mutex_destroy(&s->mu);
        goto fail_alloc;
    }
    if (pthread_cond_init(&s->cv_space, NULL) != 0) {
        pthread_cond_destroy(&s->cv_data);
        pthread_mutex_destroy(&s->mu);
        goto fail_alloc;
    }
    s->sync_init = 1;
    s->nparts = t;
    for (unsigned k = 0; k < t; k++) {
        part *p = &s->parts[k];
        p->s = s;
        p->k = k;
        int rc = pq__select(q, s->vs, s->mint, s->maxt, &p->set);
        if (rc < 0) return rc;
    }
    for (unsigned k = 1; k < t; k++) { /* part 0 is the reader's own */
        part *p = &s->parts[k];
        if (pthread_create(&p->th, NULL, worker, p) != 0)
            return pq__fail(q, PROMQL_ERR_INTERNAL, "cannot start threads");
        p->started = 1;
    }
    return 0;
fail_alloc:
    free(s->parts);
    s->parts = NULL;
    return BASE_E_NOMEM;
}

/* ---- opening ------------------------------------------------------------------------- */

int pq__stream_open(pq_q *q, const pq_node *n, const pq_rng *r, int ts_mode, pq_stream **ret) {
    n = pq__unparen(n);
    int rc = 0;
    size_t mi = SIZE_MAX;
    if (n->kind == PQ_CALL) {
        for (size_t i = 0; i < n->call.nargs && mi == SIZE_MAX; i++) {
            const pq_node *a = pq__unparen(n->call.args[i]);
            if (a->kind == PQ_MSEL || a->kind == PQ_SUBQ) mi = i;
        }
    }
    if (n->kind != PQ_VSEL && mi == SIZE_MAX) return BASE_E_UNSUPPORTED;
    pq_stream *s = calloc(1, sizeof *s);
    if (!s) return pq__nomem(q);
    s->q = q;
    s->r = *r;
    s->main.s = s;
    s->arr_bytes = r->n * sizeof(double) + PQ_BM_WORDS(r->n) * sizeof(uint64_t) + 8;
    pq__val_init(&s->sub, PQ_T_VECTOR, 0);
    if (n->kind == PQ_VSEL) {
        s->kind = ST_VSEL;
        s->vs = n;
        s->ts_mode = ts_mode;
        if (r->n > 0) {
            pq__vsel_refs(q, n, r, ts_mode, &s->ref0, &s->rstep);
            s->mint = s->ref0 - q->o->lookback_ms;
            s->maxt = s->ref0 + (int64_t)(r->n - 1) * s->rstep;
        }
    } else {
        const pq_node *marg = pq__unparen(n->call.args[mi]);
        s->id = n->call.fn->id;
        /* 2.42 evaluates a subquery argument first, then the others */
        if (marg->kind == PQ_SUBQ) {
            s->kind = ST_SUBQ;
            rc = pq__eval_subq(q, marg, r, &s->srng, &s->off, &s->sub);
            s->range = marg->subq.range_ms;
        }
        for (size_t i = 0; i < n->call.nargs && rc >= 0; i++) {
            if (i == mi) continue;
            rc = pq__eval(q, n->call.args[i], r, pq__child_wrap(q, n, n->call.args[i]), &s->mvals[s->nm]);
            if (rc < 0) break;
            s->margs[s->nm] = s->mvals[s->nm].sc;
            s->nm++;
        }
        if (marg->kind == PQ_MSEL) {
            s->kind = ST_MSEL;
            s->vs = marg->msel.vsel;
            s->off = pq__vsel_offset(q, s->vs, r);
            s->range = marg->msel.range_ms;
            if (r->n > 0) {
                s->maxt = pq__rng_t(r, r->n - 1) - s->off;
                s->mint = r->start - s->off - s->range;
            }
        }
    }
    if (r->n == 0) s->eof = 1;
    if (rc >= 0 && !s->eof && s->kind != ST_SUBQ) {
        /* selectors too: decoding is most of their time, and with
         * wake-ups only at half a ring two readers halve it (avg over
         * 1,600 series x 5,761 steps: 101 -> 68 ms on 2 cores) */
        if (q->o->threads > 1 && r->n >= pq__stream_thread_min_steps)
            rc = start_workers(q, s, q->o->threads);
        else
            rc = pq__select(q, s->vs, s->mint, s->maxt, &s->main.set);
    }
    if (rc < 0) {
        pq__stream_close(q, s);
        return rc;
    }
    *ret = s;
    return 0;
}

void pq__stream_close(pq_q *q, pq_stream *s) {
    if (!s) return;
    stop_workers(s);
    if (s->sync_init) {
        pthread_mutex_destroy(&s->mu);
        pthread_cond_destroy(&s->cv_data);
        pthread_cond_destroy(&s->cv_space);
    }
    for (unsigned k = 0; k < s->nparts; k++) part_free(s, &s->parts[k]);
    free(s->parts);
    part_free(s, &s->main);
    for (size_t i = 0; i < s->nm; i++) pq__val_free(q, &s->mvals[i]);
    pq__val_free(q, &s->sub);
    free(s);
}

/* ---- handing out ------------------------------------------------------------------------ */

/* Turns a worked item into the caller's series (labels per the function,
 * accounting); frees the item's arrays on failure. */
static int hand_out(pq_q *q, pq_stream *s, item *it, pq_ser *ret) {
    int rc;
    if (it->rc < 0) {
        int e = it->rc;
        labels_unref(it->ls);
        if (it->v) pq__mem_free(it->v, s->arr_bytes);
        if (e == BASE_E_TIMEOUT)
            return (rc = pq__check(q)) < 0
                       ? rc
                       : pq__fail(q, PROMQL_ERR_TIMEOUT, "query timed out in expression evaluation");
        if (e == BASE_E_NOMEM) return pq__nomem(q);
        if (e == BASE_E_LIMIT) return pq__too_many(q);
        if (e == BASE_E_INVAL) return pq__fail(q, PROMQL_ERR_EXECUTION, "%s", it->err);
        return pq__fail(q, PROMQL_ERR_INTERNAL, "%s", it->err[0] ? it->err : base_strerror(e));
    }
    q->total += it->total;
    rc = pq__hold(q, it->maxwin);
    pq__release(q, it->maxwin);
    if (rc < 0 || it->cnt == 0) {
        labels_unref(it->ls);
        if (it->v) pq__mem_free(it->v, s->arr_bytes);
        return rc < 0 ? rc : 0;
    }
    labels_set *ls;
    if (s->kind == ST_VSEL)
        ls = s->ts_mode ? pq__drop_name(q, it->ls) : labels_ref(it->ls);
    else
        ls = s->id == PQ_F_LAST_OVER_TIME ? labels_ref(it->ls) : pq__drop_name(q, it->ls);
    labels_unref(it->ls);
    if (!ls) {
        pq__mem_free(it->v, s->arr_bytes);
        return BASE_E_NOMEM;
    }
    memset(ret, 0, sizeof *ret);
    ret->ls = ls;
    ret->v = it->v;
    ret->bm = it->bm;
    ret->cnt = it->cnt;
    q->slots += s->r.n; /* pq__ser_free gives them back */
    if ((rc = pq__hold(q, it->cnt)) < 0 || (q->slots > q->max_slots && (rc = pq__too_many(q)) < 0)) {
        pq__ser_free(q, ret, s->r.n);
        return rc;
    }
    return 1;
}

static int next_subq(pq_q *q, pq_stream *s, pq_ser *ret) {
    part *p = &s->main;
    for (;;) {
        if (s->subi >= s->sub.ns) return 0;
        int rc = pq__check(q);
        if (rc < 0) return rc;
        pq_ser *ss = &s->sub.s[s->subi++];
        if ((rc = part_reserve(p, s->srng.n + 1)) < 0) return pq__nomem(q);
        size_t c = 0;
        for (size_t k = 0; k < s->srng.n; k++) {
            if (!pq__bm_get(ss->bm, k) || pq__is_stale(ss->v[k])) continue;
            p->t[c] = pq__rng_t(&s->srng, k);
            p->v[c] = ss->v[k];
            c++;
        }
        item it;
        memset(&it, 0, sizeof it);
        if (arrays(s, p, &it) < 0) return pq__nomem(q);
        it.rc = work_windows(s, p, p->t, p->v, c, &it);
        it.ls = labels_ref(ss->ls);
        rc = hand_out(q, s, &it, ret);
        if (rc != 0) return rc;
    }
}

int pq__stream_next(pq_q *q, pq_stream *s, pq_ser *ret) {
    if (s->eof) return 0;
    if (s->kind == ST_SUBQ) return next_subq(q, s, ret);
    int rc;
    if (!s->nparts) {
        /* one thread */
        for (;;) {
            item it;
            rc = part_next(s, &s->main, 1, &it);
            if (rc == 0) {
                s->eof = 1;
                return 0;
            }
            if (rc < 0) it.rc = rc;
            rc = hand_out(q, s, &it, ret);
            if (rc != 0) return rc;
        }
    }
    /* workers: the smallest labels among their fronts */
    for (;;) {
        /* part 0 is the reader's own (T threads in all, not T + 1 on T
         * cores): it works its next series when its front is taken */
        part *p0 = &s->parts[0];
        if (!s->have_front[0] && !p0->done) {
            item it;
            int rc0 = part_next(s, p0, s->nparts, &it);
            if (rc0 == 0) {
                p0->done = 1;
            } else {
                if (rc0 < 0) {
                    it.rc = rc0;
                    p0->done = 1;
                }
                s->front[0] = it;
                s->have_front[0] = 1;
            }
        }
        pthread_mutex_lock(&s->mu);
        for (unsigned k = 1; k < s->nparts; k++) {
            part *p = &s->parts[k];
            while (!s->have_front[k] && p->head == p->tail && !p->done) {
                s->reader_waits = 1;
                pthread_cond_wait(&s->cv_data, &s->mu);
                s->reader_waits = 0;
            }
            if (!s->have_front[k] && p->head < p->tail) {
                s->front[k] = p->ring[p->head % RING];
                p->head++;
                s->have_front[k] = 1;
                /* a full ring's worker resumes once half of it is read */
                if (s->space_waits && p->tail - p->head <= RING / 2) pthread_cond_broadcast(&s->cv_space);
            }
        }
        pthread_mutex_unlock(&s->mu);
        int best = -1;
        for (unsigned k = 0; k < s->nparts; k++) {
            if (!s->have_front[k]) continue;
            item *f = &s->front[k];
            if (f->rc < 0 && !f->ls) { /* an error without a series: now */
                best = (int)k;
                break;
            }
            if (best < 0 || labels_cmp(f->ls, s->front[best].ls) < 0) best = (int)k;
        }
        if (best < 0) {
            s->eof = 1;
            return 0;
        }
        item it = s->front[best];
        s->have_front[best] = 0;
        rc = hand_out(q, s, &it, ret);
        if (rc != 0) return rc;
    }
}
