/* promql.h -- PromQL as Prometheus 2.42 speaks it: parse, print, evaluate.
 *
 * PARSING (parse.c) accepts exactly what 2.42's parser accepts and fails
 * with its words and position: err gets e.g.
 *   1:8: parse error: unexpected <op:+>
 * (Prometheus's ParseErr.Error(): "<line>:<col>: parse error: <msg>",
 * the first error only). The tree is checked (ast.h).
 *
 * PRINTING (print.c) writes a tree as Prometheus's String() does; parsing
 * the printed text gives the same tree (the fuzz target checks this).
 *
 * EVALUATION (eval*.c) runs a parsed expression on a storage (a tsdb
 * database, or a bare head for tests) at one time (instant query) or at
 * start, start + step, ..., <= end (range query), with Prometheus's
 * semantics: 5-minute lookback (opts), stale markers ending a series,
 * offset, @, subqueries aligned to absolute multiples of their step, and
 * 2.42's exact arithmetic. Limits as Prometheus's flags:
 * --query.max-samples (samples held at once), --query.timeout,
 * --query.max-concurrency (queries beyond it wait for a slot, within
 * their timeout). A query that hits one fails with Prometheus's error
 * type and message.
 *
 * THREADS. One engine serves queries from any threads at once. A parsed
 * pq_expr is read-only during evaluation and may be shared.
 *
 * Errors: 0 or a negative BASE_E_*.
 */
#ifndef KELVIN_PROMQL_PROMQL_H
#define KELVIN_PROMQL_PROMQL_H

#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "labels/labels.h"
#include "promql/ast.h"

typedef struct tsdb_db tsdb_db;
typedef struct tsdb_head tsdb_head;

/* ---- parsing and printing ------------------------------------------------ */

typedef struct pq_expr pq_expr;

/* BASE_E_PARSE with Prometheus's message in err (see PARSING),
 * BASE_E_NOMEM. Queries longer than PQ_MAX_QUERY bytes are refused. */
#define PQ_MAX_QUERY (1u << 20)
int promql_parse(const char *q, size_t n, pq_expr **ret, char *err, size_t errlen);
const pq_node *promql_expr_root(const pq_expr *e);
void promql_expr_free(pq_expr *e);

/* Prometheus 2.42's parser.ParseMetricSelector, as the API parses each
 * match[] (series, labels, label values, delete_series, federation): the
 * PromQL grammar from its START_METRIC_SELECTOR symbol, i.e. one vector
 * selector (`name`, `name{...}`, `{...}`; the name may be a keyword
 * 2.42 takes as one: sum, by, offset, ...), nothing before or after it,
 * with the PromQL lexer's tokens and 2.42's errors and positions
 * ("1:5: parse error: unexpected \"(\""). No type checks (checkAST):
 * `{}` gives 0 matchers, `a{__name__="b"}` two __name__ matchers. The
 * matchers come in 2.42's order (those in braces, then the name's);
 * the caller frees them with labels_matchers_free. BASE_E_PARSE /
 * BASE_E_LIMIT / BASE_E_NOMEM with err filled. */
int promql_parse_selector(const char *s, size_t n, labels_matcher ***ret_ms, size_t *ret_n, char *err,
                          size_t errlen);

/* The same two with the whole message appended to msg instead of a C
 * string cut to errlen: 2.42 prints a regex fragment's NUL bytes as they
 * are, and messages as long as the query (the API answers with these). */
int promql_parse_msg(const char *q, size_t n, pq_expr **ret, base_buf *msg);
int promql_parse_selector_msg(const char *s, size_t n, labels_matcher ***ret_ms, size_t *ret_n,
                              base_buf *msg);

/* Prometheus's String() of a node, appended to out. */
void promql_print(const pq_node *n, base_buf *out);

/* Parses a Prometheus duration ("5m", "1h30m", "1y"; units ms s m h d w y)
 * into milliseconds; also used by the API for step/timeout. 0 or
 * BASE_E_PARSE / BASE_E_RANGE. */
int promql_parse_duration(const char *s, size_t n, int64_t *ret_ms);

/* ---- storage -------------------------------------------------------------- */

/* What the evaluator reads: series matching matchers with samples in
 * [mint, maxt] (inclusive), sorted by labels, each with its samples in
 * time order (stale markers included: the evaluator handles them). */
typedef struct promql_storage_ops {
    int (*select)(void *ctx, labels_matcher *const *ms, size_t n, int64_t mint, int64_t maxt, void **ret_set);
    /* 1 and the next series, 0 at the end, < 0 error */
    int (*next)(void *set);
    const labels_set *(*labels)(void *set);
    /* Up to cap samples of the current series within [mint, maxt]:
     * returns how many (0 at its end) or < 0. */
    int (*samples)(void *set, int64_t *t, double *v, size_t cap);
    void (*free)(void *set);
} promql_storage_ops;

typedef struct promql_storage {
    const promql_storage_ops *ops;
    void *ctx;
} promql_storage;

/* Adapters (storage.c). */
promql_storage promql_storage_db(tsdb_db *db);
promql_storage promql_storage_head(tsdb_head *h);

/* ---- the engine ------------------------------------------------------------ */

typedef struct promql_opts {
    int64_t lookback_ms;          /* --query.lookback-delta, 5m */
    uint64_t max_samples;         /* --query.max-samples, 50000000 */
    int64_t timeout_ms;           /* --query.timeout, 2m */
    unsigned max_concurrency;     /* --query.max-concurrency, 20 */
    int64_t default_subq_step_ms; /* subqueries without a step: the global
                                    evaluation_interval, 1m */
    unsigned threads;             /* worker threads a query may use (0: 1) */
} promql_opts;
void promql_opts_default(promql_opts *o);

typedef struct promql_engine promql_engine;
int promql_engine_new(const promql_opts *o, promql_storage st, promql_engine **ret);
void promql_engine_free(promql_engine *e);

/* Prometheus's API error types (web/api/v1 errorType*). */
typedef enum promql_errtype {
    PROMQL_ERR_NONE = 0,
    PROMQL_ERR_BAD_DATA,  /* 400 */
    PROMQL_ERR_EXECUTION, /* 422: evaluation errors, too many samples */
    PROMQL_ERR_TIMEOUT,   /* 503: "query timed out in ..." */
    PROMQL_ERR_CANCELED,  /* 503 (client went away) */
    PROMQL_ERR_INTERNAL,  /* 500: storage errors */
} promql_errtype;
const char *promql_errtype_str(promql_errtype t); /* "bad_data", ... */
int promql_errtype_http(promql_errtype t);        /* 400, 422, 503, 500 */

typedef enum promql_vtype {
    PROMQL_NONE = 0,
    PROMQL_SCALAR,
    PROMQL_VECTOR,
    PROMQL_MATRIX,
    PROMQL_STRING,
} promql_vtype;
const char *promql_vtype_str(promql_vtype t); /* "scalar", "vector", "matrix", "string" */

typedef struct promql_point {
    int64_t t; /* ms */
    double v;
} promql_point;

typedef struct promql_series {
    labels_set *ls; /* a reference, released by promql_result_free */
    promql_point *pts;
    size_t n;
} promql_series;

typedef struct promql_result {
    promql_vtype type;
    /* PROMQL_SCALAR / PROMQL_STRING: the value at t. */
    int64_t t;
    double scalar;
    char *str;
    size_t str_len;
    /* PROMQL_VECTOR: one point each (at the evaluation time), in the order
     * 2.42 returns them: a selector's in storage (label) order, groups of
     * an aggregation in first-seen order, a binary operation's in its
     * left-hand side's order, sort/sort_desc/topk/bottomk's own. PROMQL_MATRIX: series sorted by labels,
     * points in time order (a range query, or an instant query of a range
     * vector). */
    promql_series *series;
    size_t nseries;
    /* On failure: the type and Prometheus's message. */
    promql_errtype err;
    char errmsg[8192]; /* longer messages (label sets of huge series) are cut */
    /* Accounting, as 2.42's stats=all: the most samples held at once, and
     * the samples read from storage in all. */
    uint64_t peak_samples;
    uint64_t total_samples;
} promql_result;

/* What a caller adds to one query (ctl may be NULL): a cancel flag,
 * polled -- when it becomes non-zero the query stops with
 * PROMQL_ERR_CANCELED -- and a timeout of its own (the API's `timeout`
 * parameter; 0: none) that shortens the engine's --query.timeout, failing
 * as 2.42's deadline does (PROMQL_ERR_TIMEOUT, "query timed out in ..."). */
typedef struct promql_ctl {
    const volatile int *cancel;
    int64_t timeout_ns;
} promql_ctl;

/* Instant query at t (ms). Returns 0 with *ret filled, or < 0 with
 * ret->err / ret->errmsg set. */
int promql_exec_instant(promql_engine *e, const pq_expr *x, int64_t t_ms, const promql_ctl *ctl,
                        promql_result *ret);
/* Range query: start <= end, step > 0 (the API checks the 11,000 points
 * limit before). The expression must be scalar or instant vector typed
 * (else BAD_DATA with Prometheus's message). Result: PROMQL_MATRIX. */
int promql_exec_range(promql_engine *e, const pq_expr *x, int64_t start_ms, int64_t end_ms, int64_t step_ms,
                      const promql_ctl *ctl, promql_result *ret);
void promql_result_free(promql_result *r);

/* Engine counters for the server's /metrics (prometheus_engine_*). */
typedef struct promql_engine_stats {
    uint64_t queries, queries_failed, queries_timed_out;
    unsigned running, waiting;
    uint64_t block_cache_bytes; /* freed evaluation arrays kept for the next
                                   queries (process-wide, at most 512 MiB) */
} promql_engine_stats;
void promql_engine_stats_get(promql_engine *e, promql_engine_stats *ret);

#endif
