/* eval_int.h -- what the evaluator's files (engine.c, eval*.c) share: the
 * columnar values, the query context, the step ranges and the helpers
 * that hold them to the query's limits.
 *
 * COLUMNAR VALUES. Every node is evaluated once over all the steps of its
 * range (pq_rng: start, start + step, ..., <= end; an instant query is the
 * one-step case). An instant vector is a list of series (pq_ser), each
 * with its labels, an array of n doubles and a presence bitmap of n bits:
 * bit k set means the series has a sample at step k, with value v[k]
 * (v[k] is garbage otherwise). A scalar is an array of n doubles. Range
 * vectors never exist as values except as the result of an instant query
 * of a range-vector expression (PQ_T_MATRIX, raw points): functions read
 * their range argument series by series (eval_call.c).
 *
 * ORDER. The series of a vector are in the order 2.42 would produce them
 * at one step (selectors: storage order; binary operators: the left-hand
 * side's; aggregations: the groups' first appearance; topk/bottomk and
 * sort/sort_desc: theirs). For an instant query that is the order of the
 * answer; a range query sorts its series by labels at the end.
 *
 * ERRORS. Go's evaluator panics at the first error of the first step that
 * fails; each node here computes all steps at once and notes errors with
 * the step they belong to (pq_perr), raising the one 2.42 would have met
 * first: the lowest step, and at one step the first check in 2.42's order.
 * The query's error (type and message) lives in pq_q; functions return a
 * negative BASE_E_* once it is set.
 *
 * STREAMS. Selectors and range functions produce their series one at a
 * time (eval_stream.c), optionally with worker threads; aggregations of
 * them consume the stream without holding their whole input.
 *
 * LIMITS. q->cur counts the samples held in live values (present points;
 * 2.42's currentSamples, plus the largest window of the range function's
 * current series) and fails the query past max_samples with 2.42's
 * ErrTooManySamples; q->slots counts the array slots allocated (present
 * or not) against twice that, so sparse values cannot grow unchecked.
 * pq__check polls the deadline and the cancel flag.
 *
 * MEMORY. Step arrays come from a process-wide cache of blocks
 * (eval_mem.c) so that a warm process does not fault in fresh pages for
 * every query.
 *
 * Ownership: a pq_val owns its arrays and one reference to each series'
 * labels; pq__val_free releases them and their accounting.
 */
#ifndef KELVIN_PROMQL_EVAL_INT_H
#define KELVIN_PROMQL_EVAL_INT_H

#include <stddef.h>
#include <stdint.h>

#include "base/num.h"
#include "labels/labels.h"
#include "promql/ast.h"
#include "promql/promql.h"

/* ---- bitmaps ------------------------------------------------------------- */

#define PQ_BM_WORDS(n) (((n) + 63) / 64)
static inline int pq__bm_get(const uint64_t *bm, size_t k) {
    return (int)((bm[k >> 6] >> (k & 63)) & 1);
}
static inline void pq__bm_set(uint64_t *bm, size_t k) {
    bm[k >> 6] |= (uint64_t)1 << (k & 63);
}
static inline void pq__bm_clr(uint64_t *bm, size_t k) {
    bm[k >> 6] &= ~((uint64_t)1 << (k & 63));
}

/* ---- steps --------------------------------------------------------------- */

/* The steps a node is evaluated at. quirk_*: 2.42 sets the offsets of
 * nodes with @ relative to the start of the evaluator that last reset
 * them (setOffsetForAtModifier), minus the offsets of the subqueries
 * between (subqueryTimes); a subquery whose first step equals its
 * parent's start does not reset them, so its offset (and @) still count.
 * Carried here so that pq__at_offset reproduces it. */
typedef struct pq_rng {
    int64_t start, end, step;
    size_t n;
    int64_t quirk_sum;
    int quirk_has_ts;
    int64_t quirk_ts;
} pq_rng;

static inline int64_t pq__rng_t(const pq_rng *r, size_t k) {
    return r->start + (int64_t)k * r->step;
}

/* ---- values -------------------------------------------------------------- */

typedef struct pq_ser {
    labels_set *ls; /* owned reference */
    double *v;      /* n values; the allocation also holds bm */
    uint64_t *bm;   /* PQ_BM_WORDS(n) words */
    size_t cnt;     /* present points (kept up to date by pq__vec_settle) */
} pq_ser;

typedef struct pq_mser {
    labels_set *ls;
    int64_t *t;
    double *v;
    size_t n;
} pq_mser;

typedef struct pq_val {
    pq_type t; /* PQ_T_SCALAR, PQ_T_VECTOR, PQ_T_MATRIX, PQ_T_STRING */
    size_t n;  /* steps */
    double *sc;
    pq_ser *s;
    size_t ns, cap;
    pq_mser *m;
    size_t nm;
    const char *str;
    size_t slen;
    int ordered;   /* instant: the order is an ordering operator's */
    uint64_t held; /* samples accounted in q->cur */
} pq_val;

/* ---- per-node errors ----------------------------------------------------- */

typedef struct pq_perr {
    int set;
    size_t step;
    int prio;
    promql_errtype type;
    char msg[8192];
} pq_perr;

/* ---- the query ----------------------------------------------------------- */

typedef struct pq_ninfo pq_ninfo;

typedef struct pq_q {
    const promql_opts *o;
    promql_storage st;
    int64_t qstart, qend; /* for start() / end() */
    int64_t deadline_ns;
    const volatile int *cancel;
    uint64_t max_samples, cur, peak, total;
    uint64_t slots, max_slots;
    unsigned poll;
    /* the error */
    int failed;
    promql_errtype etype;
    char emsg[8192];
    /* invariance of every node (PreprocessExpr) */
    pq_ninfo *ni;
    size_t ni_cap;
    labels_builder lb;
} pq_q;

/* Sets the query's error (the first one wins) and returns BASE_E_INVAL. */
int pq__fail(pq_q *q, promql_errtype type, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int pq__nomem(pq_q *q);
/* Finishes b into *ret (a new set); when the builder fails, fails the
 * query with its message (PROMQL_ERR_INTERNAL) and returns that error. */
int pq__lb_finish(pq_q *q, labels_builder *b, labels_set **ret);
/* 2.42's ErrTooManySamples. */
int pq__too_many(pq_q *q);
/* Deadline and cancel: 0 or the error ("... in expression evaluation"). */
int pq__check(pq_q *q);
/* The same, every 64th call (inner loops). */
static inline int pq__poll(pq_q *q) {
    if ((++q->poll & 63) != 0) return 0;
    return pq__check(q);
}

void pq__perr_note(pq_perr *e, size_t step, int prio, promql_errtype type, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
int pq__perr_raise(pq_q *q, const pq_perr *e);

/* Accounting of held samples (points). */
int pq__hold(pq_q *q, uint64_t n);
void pq__release(pq_q *q, uint64_t n);

/* Large blocks, cached process-wide across queries (eval_mem.c); free
 * with the size given to alloc. */
void *pq__mem_alloc(size_t bytes);
void pq__mem_free(void *p, size_t bytes);
/* Bytes held in the cache's free lists now. */
size_t pq__mem_retained(void);

/* Series and values. pq__ser_alloc: arrays for n steps (bitmap zero);
 * takes ownership of ls (also on failure). */
int pq__ser_alloc(pq_q *q, pq_ser *s, size_t n, labels_set *ls);
void pq__ser_free(pq_q *q, pq_ser *s, size_t n);
size_t pq__ser_count(const pq_ser *s, size_t n);

void pq__val_init(pq_val *v, pq_type t, size_t n);
void pq__val_free(pq_q *q, pq_val *v);
int pq__val_scalar(pq_q *q, pq_val *v, size_t n);
/* Appends s (ownership moves into v; on failure s is freed). */
int pq__vec_push(pq_q *q, pq_val *v, pq_ser *s);
/* Recounts every series, drops those without points, and accounts the
 * new total (fails past max_samples). */
int pq__vec_settle(pq_q *q, pq_val *v);

/* Series that now have equal labels: PQ_MERGE_STEPS merges them when
 * they occupy different steps (2.42's rangeEval output map) and notes
 * "vector cannot contain metrics with the same labelset" at the first
 * step two share; PQ_MERGE_FAIL fails on any two equal sets holding
 * points (Matrix.ContainsSameLabelset). Keeps the first one's place.
 * Settles v. */
enum { PQ_MERGE_STEPS, PQ_MERGE_FAIL };
int pq__vec_merge(pq_q *q, pq_val *v, int mode, pq_perr *pe);

/* The labels without __name__ (a new reference; the same set when it
 * has none). NULL on failure (q's error set). */
labels_set *pq__drop_name(pq_q *q, const labels_set *ls);

/* Labels -> index table (keys borrowed). */
typedef struct pq_lmap {
    uint64_t *h;
    const labels_set **k;
    size_t *idx;
    size_t cap, n;
} pq_lmap;
int pq__lmap_init(pq_lmap *m, size_t hint);
void pq__lmap_free(pq_lmap *m);
/* SIZE_MAX when absent. */
size_t pq__lmap_get(const pq_lmap *m, const labels_set *ls, uint64_t h);
int pq__lmap_put(pq_lmap *m, const labels_set *ls, uint64_t h, size_t idx);

/* ---- evaluation ---------------------------------------------------------- */

/* 2.42's PreprocessExpr: whether the node is step invariant. */
int pq__node_inv(const pq_q *q, const pq_node *n);
int pq__ninfo_build(pq_q *q, const pq_node *root);
void pq__ninfo_free(pq_q *q);

/* Evaluates n over r. wrap: 2.42 wraps n in a StepInvariantExpr
 * (evaluated once at r->start and repeated). */
int pq__eval(pq_q *q, const pq_node *n, const pq_rng *r, int wrap, pq_val *ret);
/* A child's wrap flag under its parent (PreprocessExpr's rules). */
int pq__child_wrap(const pq_q *q, const pq_node *parent, const pq_node *child);

/* The effective offset of a node with @ (2.42's Offset after
 * setOffsetForAtModifier), or its offset without. */
int64_t pq__eff_offset(const pq_q *q, const pq_rng *r, pq_at at, int64_t at_ms, int64_t offset_ms);

const pq_node *pq__unparen(const pq_node *n);

/* Instant vector selector; ts_mode: timestamp()'s special case (values are
 * the samples' times in seconds, __name__ dropped, @ pins the time). */
int pq__eval_vsel(pq_q *q, const pq_node *n, const pq_rng *r, int ts_mode, pq_val *ret);
/* Instant query of a range vector: raw points. */
int pq__eval_matrix(pq_q *q, const pq_node *n, const pq_rng *r, pq_val *ret);

/* Streams (eval_stream.c): the output series of an instant vector
 * selector (ts_mode as above) or of a call with a range argument, one at
 * a time in order. open: 0, BASE_E_UNSUPPORTED (not such a node) or an
 * error. next: 1 and a series (the caller's; its cnt points are held in
 * q->cur for the caller), 0 at the end, < 0. */
typedef struct pq_stream pq_stream;
int pq__stream_open(pq_q *q, const pq_node *n, const pq_rng *r, int ts_mode, pq_stream **ret);
int pq__stream_next(pq_q *q, pq_stream *s, pq_ser *ret);
void pq__stream_close(pq_q *q, pq_stream *s);
/* Streams use worker threads (opts.threads > 1) from this many steps up:
 * below, a select per thread costs more than it saves. Tests lower it. */
extern unsigned pq__stream_thread_min_steps;

int pq__eval_call(pq_q *q, const pq_node *n, const pq_rng *r, pq_val *ret);
int pq__eval_agg(pq_q *q, const pq_node *n, const pq_rng *r, pq_val *ret);
int pq__eval_bin(pq_q *q, const pq_node *n, const pq_rng *r, pq_val *ret);

/* Go's sort.Sort(sort.Reverse(...)) of a vector by value, as sort and
 * sort_desc and topk/bottomk's output use it: idx[0..n) reordered by
 * vals[idx[i]]; desc selects vectorByValueHeap (sort_desc, topk) or
 * vectorByReverseValueHeap (sort, bottomk). */
void pq__go_sort_rev(size_t *idx, size_t n, const double *vals, int desc);

/* Reads one series' samples from a storage set in batches. */
typedef struct pq_rd {
    const promql_storage *st;
    void *set;
    int64_t *t;
    double *v;
    size_t lo, hi, cap;
    int eof;
    int drop_stale;
} pq_rd;
void pq__rd_init(pq_rd *rd, const promql_storage *st, void *set, int drop_stale);
void pq__rd_reset(pq_rd *rd); /* for the next series */
void pq__rd_free(pq_rd *rd);
/* Reads until the buffer holds a sample after maxt (or the series ends). */
int pq__rd_fill(pq_q *q, pq_rd *rd, int64_t maxt);
/* Drops buffered samples before mint. */
void pq__rd_trim(pq_rd *rd, int64_t mint);

static inline int pq__is_stale(double v) {
    return base_is_stale(v);
}

#endif
