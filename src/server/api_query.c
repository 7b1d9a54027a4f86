/* api_query.c -- /api/v1/query, /api/v1/query_range, /api/v1/query_exemplars
 * (Prometheus 2.42's api.query, api.queryRange, api.queryExemplars).
 *
 * ORDER OF CHECKS, as 2.42 makes them (each failure answers at once):
 *   query:       time, timeout, the query's parse (`invalid parameter
 *                "query": 1:3: parse error: ...`), then execution.
 *   query_range: start, end, end before start, step, step <= 0, the
 *                11,000-points limit ((end - start) / step in Go's
 *                nanosecond durations, saturating), timeout, the parse
 *                (bare message), the expression's type, then execution.
 * A timeout of zero or less has already expired: 2.42's context is done
 * before the engine starts, so the answer is `query timed out in query
 * execution` (503). A step below one millisecond passes the checks in
 * nanoseconds but is 0 in the engine's milliseconds; 2.42 then panics in
 * the evaluator and answers 422 `unexpected error: runtime error: integer
 * divide by zero`, and so do we.
 *
 * RESULTS (2.42's JSON): vector `{"metric":{...},"value":[t,"v"]}`,
 * matrix `{"metric":{...},"values":[[t,"v"],...]}` with t written by
 * marshalTimestamp and v by marshalValue; scalar and string `[t,"v"]`
 * where t is float64(ms)/1000 through encoding/json and a scalar's v is
 * strconv.FormatFloat(v, 'f', -1, 64) (no exponent form: 1e-7 is
 * "0.0000001"). stats=<anything>: 2.42's stats object; our timings are
 * measured around parse and evaluation (queue time is inside the
 * engine's evaluation time).
 *
 * TIMEOUTS. A request's `timeout` goes to the engine with the query
 * (promql_ctl), which shortens its --query.timeout with it and fails as
 * 2.42's deadline does (errorType timeout, "query timed out in <where>").
 *
 * EXEMPLARS. Kelvin keeps none; 2.42 without exemplar storage answers
 * `{"status":"success","data":[]}` when the query has a selector and 204
 * without one; its errors (times, then the parse) are checked the same.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/num.h"
#include "base/time.h"
#include "server/server_int.h"

/* ---- results ----------------------------------------------------------------- */

/* The text of timestamps already written, by a hash of the time: the
 * series of a range query share their steps, so each step's text is
 * computed once per answer instead of once per point. */
#define TS_SLOTS_LOG 13
typedef struct ts_cache {
    int64_t t[1 << TS_SLOTS_LOG];
    uint8_t len[1 << TS_SLOTS_LOG]; /* 0: empty */
    char s[1 << TS_SLOTS_LOG][SERVER_TS_MAX];
} ts_cache;

static size_t ts_text(ts_cache *tc, int64_t t, char *out) {
    if (!tc) return server__fmt_ts(out, t);
    size_t h = (size_t)(((uint64_t)t * 0x9E3779B97F4A7C15ull) >> (64 - TS_SLOTS_LOG));
    if (!tc->len[h] || tc->t[h] != t) {
        tc->t[h] = t;
        tc->len[h] = (uint8_t)server__fmt_ts(tc->s[h], t);
    }
    memcpy(out, tc->s[h], tc->len[h]);
    return tc->len[h];
}

/* Series i of a vector or matrix, with the comma before it. A value
 * equal (bit for bit) to the point before it reuses its text: a range
 * query's steps are often finer than the scrapes. */
static void write_series(base_buf *b, const promql_result *r, size_t i, ts_cache *tc) {
    int vec = r->type == PROMQL_VECTOR;
    const promql_series *s = &r->series[i];
    if (i) base_buf_putc(b, ',');
    base_buf_puts(b, "{\"metric\":");
    server__json_labels(b, s->ls);
    base_buf_puts(b, vec ? ",\"value\":" : ",\"values\":[");
    char val[BASE_FMT_DOUBLE_MAX];
    size_t vn = 0;
    uint64_t vbits = 0;
    for (size_t k = 0; k < s->n && (!vec || k == 0); k++) {
        char pt[1 + 1 + SERVER_TS_MAX + 2 + BASE_FMT_DOUBLE_MAX + 2];
        size_t n = 0;
        if (k) pt[n++] = ',';
        pt[n++] = '[';
        n += ts_text(tc, s->pts[k].t, pt + n);
        pt[n++] = ',';
        pt[n++] = '"';
        uint64_t bits;
        memcpy(&bits, &s->pts[k].v, sizeof bits);
        if (k == 0 || bits != vbits) {
            vn = base_fmt_double_f(val, s->pts[k].v);
            vbits = bits;
        }
        memcpy(pt + n, val, vn);
        n += vn;
        pt[n++] = '"';
        pt[n++] = ']';
        base_buf_append(b, pt, n);
    }
    base_buf_puts(b, vec ? "}" : "]}");
}

/* Does the answer hold at least min points? (Counts no further.) */
static int points_at_least(const promql_result *r, size_t min) {
    size_t pts = 0;
    for (size_t i = 0; i < r->nseries && pts < min; i++) pts += r->series[i].n;
    return pts >= min;
}

/* A timestamp cache when the answer is worth one (NULL otherwise, or
 * when out of memory: the text is then computed point by point). */
static ts_cache *ts_cache_for(const promql_result *r) {
    return points_at_least(r, 4096) ? calloc(1, sizeof(ts_cache)) : NULL;
}

static void write_result(base_buf *b, const promql_result *r) {
    base_buf_puts(b, "{\"resultType\":\"");
    base_buf_puts(b, promql_vtype_str(r->type));
    base_buf_puts(b, "\",\"result\":");
    switch (r->type) {
    case PROMQL_SCALAR:
        base_buf_putc(b, '[');
        server__json_float(b, (double)r->t / 1000);
        base_buf_puts(b, ",\"");
        server__fmt_float_f(b, r->scalar);
        base_buf_puts(b, "\"]");
        break;
    case PROMQL_STRING:
        base_buf_putc(b, '[');
        server__json_float(b, (double)r->t / 1000);
        base_buf_putc(b, ',');
        base_buf_json_str(b, r->str ? r->str : "", r->str_len);
        base_buf_putc(b, ']');
        break;
    case PROMQL_VECTOR:
    case PROMQL_MATRIX: {
        ts_cache *tc = ts_cache_for(r);
        base_buf_putc(b, '[');
        for (size_t i = 0; i < r->nseries && !base_buf_err(b); i++) write_series(b, r, i, tc);
        base_buf_putc(b, ']');
        free(tc);
        break;
    }
    default: base_buf_puts(b, "null"); break;
    }
}

static void write_stats(base_buf *b, const promql_result *r, int64_t parse_ns, int64_t exec_ns) {
    double prep = (double)parse_ns / 1e9, eval = (double)exec_ns / 1e9;
    base_buf_puts(b, ",\"stats\":{\"timings\":{\"evalTotalTime\":");
    server__json_float(b, eval);
    base_buf_puts(b, ",\"resultSortTime\":0,\"queryPreparationTime\":");
    server__json_float(b, prep);
    base_buf_puts(b, ",\"innerEvalTime\":");
    server__json_float(b, eval);
    base_buf_puts(b, ",\"execQueueTime\":0,\"execTotalTime\":");
    server__json_float(b, eval + prep);
    base_buf_puts(b, "},\"samples\":{\"totalQueryableSamples\":");
    base_buf_u64(b, r->total_samples);
    base_buf_puts(b, ",\"peakSamples\":");
    base_buf_u64(b, r->peak_samples);
    base_buf_puts(b, "}}");
}

/* ---- the shared execution path ------------------------------------------------ */

typedef struct qparams {
    int has_timeout;
    int64_t timeout_ns;
} qparams;

static int timeout_param(api_ctx *c, qparams *q) {
    base_str to = http_form_get(&c->form, "timeout");
    q->has_timeout = to.n > 0;
    if (!q->has_timeout) return 0;
    char msg[512];
    if (server__api_parse_duration(to, &q->timeout_ns, msg, sizeof msg) != 0) {
        server__api_invalid_param(c, "timeout", msg);
        return -1;
    }
    return 0;
}

static void answer_error(api_ctx *c, const promql_result *r) {
    promql_errtype t = r->err ? r->err : PROMQL_ERR_INTERNAL;
    server__api_errorf(c, promql_errtype_str(t), "%s", r->errmsg[0] ? r->errmsg : "query failed");
}

/* ---- streamed answers -------------------------------------------------------- */

/* A large vector or matrix is written while it is sent, a block of
 * series at a time into reused buffers, instead of whole into one
 * growing buffer: the growth's copies and page faults cost more than the
 * writing itself (a 310 MB predict_linear answer: ~1 s of 4). The bytes
 * are those of the whole answer; only the transfer is chunked.
 * Compressed answers are built whole (the compressor wants the buffer).
 * From STREAM_MIN_POINTS points (the environment's
 * KELVIN_API_STREAM_MIN_POINTS overrides it: tests stream every answer to
 * compare the bytes with Prometheus's).
 *
 * BLOCKS. The series are cut into blocks of about STREAM_BLOCK_POINTS
 * points (~130 KB of JSON), by their point counts before any is written.
 * Whoever writes takes the next block nobody has taken, at most
 * STREAM_AHEAD ahead of the one being sent, and writes it whole into a
 * slot of its own; blocks are sent in order. The sending thread writes
 * when the block to send is not written yet. From STREAM_HELP_MIN_POINTS
 * points, with --query.threads > 1, a helper thread writes blocks too:
 * writing is most of a large answer's time (predict_linear's 310 MB:
 * ~0.7 s after a 0.6 s evaluation), and two threads halve it. The
 * environment's KELVIN_API_STREAM_HELP_MIN_POINTS overrides that
 * threshold, and blocks are then no larger (tests compare such answers'
 * bytes). */
#define STREAM_MIN_POINTS      65536
#define STREAM_HELP_MIN_POINTS (1u << 20)
#define STREAM_BLOCK_POINTS    4096
#define STREAM_AHEAD           4

typedef struct sblock {
    base_buf buf;
    int done;
} sblock;

typedef struct qstream {
    promql_result r;
    base_buf piece; /* what is being sent, from off */
    size_t off;
    base_buf tail; /* ']', the stats, the closing braces */
    int tail_done;
    size_t *bstart; /* block b is series [bstart[b], bstart[b + 1]) */
    size_t nblocks, bsend, bclaim;
    sblock slot[STREAM_AHEAD]; /* block b is written into slot b % STREAM_AHEAD */
    ts_cache *tc, *htc;        /* the sending thread's, the helper's */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int sync_init, helper, quit;
    pthread_t th;
} qstream;

static int stream_worth(const api_ctx *c, const promql_result *r) {
    if (r->type != PROMQL_MATRIX && r->type != PROMQL_VECTOR) return 0;
    if (server__api_compressed(c)) return 0;
    size_t min = STREAM_MIN_POINTS;
    const char *env = getenv("KELVIN_API_STREAM_MIN_POINTS");
    if (env) min = (size_t)strtoull(env, NULL, 10);
    return points_at_least(r, min);
}

static void write_block(qstream *q, size_t b, base_buf *buf, ts_cache *tc) {
    base_buf_reset(buf);
    for (size_t i = q->bstart[b]; i < q->bstart[b + 1]; i++) write_series(buf, &q->r, i, tc);
}

/* With q->mu held: takes the next block nobody has taken, if one is
 * free to write, writes it without the lock and marks it done: 1; else 0. */
static int take_block(qstream *q, ts_cache *tc) {
    if (q->bclaim >= q->nblocks || q->bclaim - q->bsend >= STREAM_AHEAD) return 0;
    size_t b = q->bclaim++;
    sblock *sb = &q->slot[b % STREAM_AHEAD];
    pthread_mutex_unlock(&q->mu);
    write_block(q, b, &sb->buf, tc);
    pthread_mutex_lock(&q->mu);
    sb->done = 1;
    pthread_cond_broadcast(&q->cv);
    return 1;
}

static void *stream_helper(void *arg) {
    qstream *q = arg;
    pthread_mutex_lock(&q->mu);
    while (!q->quit && q->bclaim < q->nblocks)
        if (!take_block(q, q->htc)) pthread_cond_wait(&q->cv, &q->mu);
    pthread_mutex_unlock(&q->mu);
    return NULL;
}

/* The next piece into q->piece: the next block, then the tail. */
static void next_piece(qstream *q) {
    base_buf_reset(&q->piece);
    q->off = 0;
    if (q->bsend < q->nblocks) {
        pthread_mutex_lock(&q->mu);
        sblock *sb = &q->slot[q->bsend % STREAM_AHEAD];
        /* until the block to send is written (by the helper, or here when
         * nobody had taken it), write the next one nobody has taken */
        while (!sb->done)
            if (!take_block(q, q->tc)) pthread_cond_wait(&q->cv, &q->mu);
        base_buf t = q->piece; /* the block's buffer is sent; the sent one is the slot's */
        q->piece = sb->buf;
        sb->buf = t;
        sb->done = 0;
        q->bsend++;
        pthread_cond_broadcast(&q->cv);
        pthread_mutex_unlock(&q->mu);
    }
    if (q->bsend == q->nblocks && !q->tail_done) {
        base_buf_append(&q->piece, q->tail.data, q->tail.len);
        q->tail_done = 1;
    }
}

static long stream_fill(void *arg, char *buf, size_t max) {
    qstream *q = arg;
    while (q->off == q->piece.len) {
        next_piece(q);
        if (base_buf_err(&q->piece)) return -1; /* out of memory: the connection is cut */
        if (q->piece.len == 0) return 0;
    }
    size_t n = q->piece.len - q->off;
    if (n > max) n = max;
    memcpy(buf, q->piece.data + q->off, n);
    q->off += n;
    return (long)n;
}

static void stream_free(void *arg) {
    qstream *q = arg;
    if (q->helper) {
        pthread_mutex_lock(&q->mu);
        q->quit = 1;
        pthread_cond_broadcast(&q->cv);
        pthread_mutex_unlock(&q->mu);
        pthread_join(q->th, NULL);
    }
    if (q->sync_init) {
        pthread_mutex_destroy(&q->mu);
        pthread_cond_destroy(&q->cv);
    }
    for (size_t i = 0; i < STREAM_AHEAD; i++) base_buf_free(&q->slot[i].buf);
    free(q->bstart);
    free(q->htc);
    promql_result_free(&q->r);
    base_buf_free(&q->piece);
    base_buf_free(&q->tail);
    free(q->tc);
    free(q);
}

/* Cuts the series into blocks of at least `block` points (the last may
 * hold fewer; a series is never cut); 0 or BASE_E_NOMEM. */
static int stream_blocks(qstream *q, size_t block) {
    q->bstart = malloc((q->r.nseries + 1) * sizeof *q->bstart);
    if (!q->bstart) return BASE_E_NOMEM;
    size_t nb = 0, pts = 0;
    q->bstart[nb++] = 0;
    for (size_t i = 0; i < q->r.nseries; i++) {
        pts += q->r.series[i].n + 1;
        if (pts < block && i + 1 < q->r.nseries) continue;
        q->bstart[nb++] = i + 1;
        pts = 0;
    }
    q->nblocks = nb - 1;
    return 0;
}

/* Takes r over. */
static void stream_answer(api_ctx *c, promql_result *r, int stats, int64_t parse_ns, int64_t exec_ns) {
    qstream *q = calloc(1, sizeof *q);
    if (!q) {
        promql_result_free(r);
        server__api_error(c, 500, "internal", "out of memory", strlen("out of memory"));
        return;
    }
    q->r = *r;
    size_t help = STREAM_HELP_MIN_POINTS;
    const char *env = getenv("KELVIN_API_STREAM_HELP_MIN_POINTS");
    if (env) help = (size_t)strtoull(env, NULL, 10);
    size_t block = help < STREAM_BLOCK_POINTS ? (help ? help : 1) : STREAM_BLOCK_POINTS;
    q->tc = ts_cache_for(r); /* NULL: timestamps written point by point */
    base_buf_init(&q->piece, 0);
    base_buf_init(&q->tail, 0);
    for (size_t i = 0; i < STREAM_AHEAD; i++) base_buf_init(&q->slot[i].buf, 0);
    server__api_begin(&q->piece);
    base_buf_puts(&q->piece, "{\"resultType\":\"");
    base_buf_puts(&q->piece, promql_vtype_str(r->type));
    base_buf_puts(&q->piece, "\",\"result\":[");
    base_buf_putc(&q->tail, ']');
    if (stats) write_stats(&q->tail, r, parse_ns, exec_ns);
    base_buf_puts(&q->tail, "}}");
    if (pthread_mutex_init(&q->mu, NULL) == 0) {
        if (pthread_cond_init(&q->cv, NULL) == 0)
            q->sync_init = 1;
        else
            pthread_mutex_destroy(&q->mu);
    }
    if (!q->sync_init || stream_blocks(q, block) < 0 || base_buf_err(&q->piece) || base_buf_err(&q->tail)) {
        stream_free(q);
        server__api_error(c, 500, "internal", "out of memory", strlen("out of memory"));
        return;
    }
    /* the helper, where worth one; without it the sending thread writes all */
    if (c->s->flags.query_threads > 1 && points_at_least(&q->r, help)) {
        q->htc = ts_cache_for(&q->r);
        q->helper = pthread_create(&q->th, NULL, stream_helper, q) == 0;
    }
    http_respond_stream(c->resp, 200, SERVER_CT_JSON, stream_fill, q, stream_free);
}

/* Runs x (instant when step_ms < 0) and answers. Takes nothing over. */
static void run(api_ctx *c, const qparams *q, const pq_expr *x, int64_t t0, int64_t end, int64_t step_ms,
                int64_t parse_ns) {
    if (q->has_timeout && q->timeout_ns <= 0) {
        server__api_errorf(c, "timeout", "query timed out in query execution");
        return;
    }
    promql_ctl ctl = {.timeout_ns = q->has_timeout ? q->timeout_ns : 0};
    promql_result r;
    memset(&r, 0, sizeof r);
    int64_t start_ns = base_mono_ns();
    int rc = step_ms < 0 ? promql_exec_instant(c->s->engine, x, t0, &ctl, &r)
                         : promql_exec_range(c->s->engine, x, t0, end, step_ms, &ctl, &r);
    int64_t exec_ns = base_mono_ns() - start_ns;
    if (rc != 0) {
        answer_error(c, &r);
        promql_result_free(&r);
        return;
    }
    int stats = http_form_get(&c->form, "stats").n > 0;
    if (stream_worth(c, &r)) {
        stream_answer(c, &r, stats, parse_ns, exec_ns);
        return;
    }
    base_buf b;
    base_buf_init(&b, 0);
    server__api_begin(&b);
    write_result(&b, &r);
    if (stats) write_stats(&b, &r, parse_ns, exec_ns);
    base_buf_putc(&b, '}');
    promql_result_free(&r);
    server__api_end(c, &b);
}

/* Parses the query; on failure answers (bad_data: prefix + the parser's
 * whole message, which may hold NUL bytes -- 2.42 echoes a bad regex's --
 * so the answer is built from a buffer; internal when out of memory) and
 * returns non-zero. */
static int parse(api_ctx *c, base_str qs, pq_expr **ret, const char *prefix) {
    base_buf msg;
    base_buf_init(&msg, 0);
    int rc = promql_parse_msg(qs.p ? qs.p : "", qs.n, ret, &msg);
    if (rc == 0) {
        base_buf_free(&msg);
        return 0;
    }
    if (rc == BASE_E_NOMEM || base_buf_err(&msg)) {
        base_buf_free(&msg);
        server__api_errorf(c, "internal", "out of memory");
        return rc;
    }
    server__api_bad_data(c, prefix, &msg);
    base_buf_free(&msg);
    return rc;
}

void server__api_query(api_ctx *c) {
    api_time now = {c->now_sec, c->now_nsec}, ts;
    if (server__api_time_param(c, "time", now, &ts) != 0) return;
    qparams q;
    if (timeout_param(c, &q) != 0) return;
    base_str qs = http_form_get(&c->form, "query");
    pq_expr *x = NULL;
    int64_t t0 = base_mono_ns();
    int rc = parse(c, qs, &x, "invalid parameter \"query\": ");
    int64_t parse_ns = base_mono_ns() - t0;
    if (rc != 0) return;
    run(c, &q, x, server__api_time_engine_ms(ts), 0, -1, parse_ns);
    promql_expr_free(x);
}

/* end.Sub(start) / step in Go's Durations (Sub saturates). */
static int64_t points(api_time start, api_time end, int64_t step_ns) {
    __int128 d = ((__int128)end.sec - start.sec) * 1000000000 + (end.nsec - start.nsec);
    if (d > INT64_MAX) d = INT64_MAX;
    if (d < INT64_MIN) d = INT64_MIN;
    return (int64_t)d / step_ns;
}

void server__api_query_range(api_ctx *c) {
    api_time start, end;
    char msg[512];
    base_str v = http_form_get(&c->form, "start");
    const char *bad = NULL;
    if (server__api_parse_time(v, &start) != 0)
        bad = "start";
    else if (v = http_form_get(&c->form, "end"), server__api_parse_time(v, &end) != 0)
        bad = "end";
    if (bad) {
        base_buf qv;
        base_buf_init(&qv, 0);
        server__quote(&qv, v.p ? v.p : "", v.n);
        snprintf(msg, sizeof msg, "cannot parse %s to a valid timestamp", qv.err ? "\"\"" : qv.data);
        base_buf_free(&qv);
        server__api_invalid_param(c, bad, msg);
        return;
    }
    if (server__api_time_before(end, start)) {
        server__api_invalid_param(c, "end", "end timestamp must not be before start time");
        return;
    }
    int64_t step_ns;
    if (server__api_parse_duration(http_form_get(&c->form, "step"), &step_ns, msg, sizeof msg) != 0) {
        server__api_invalid_param(c, "step", msg);
        return;
    }
    if (step_ns <= 0) {
        server__api_invalid_param(
            c, "step",
            "zero or negative query resolution step widths are not accepted. Try a positive integer");
        return;
    }
    if (points(start, end, step_ns) > 11000) {
        server__api_errorf(c, "bad_data",
                           "exceeded maximum resolution of 11,000 points per timeseries. Try decreasing the "
                           "query resolution (?step=XX)");
        return;
    }
    qparams q;
    if (timeout_param(c, &q) != 0) return;
    base_str qs = http_form_get(&c->form, "query");
    pq_expr *x = NULL;
    int64_t t0 = base_mono_ns();
    int rc = parse(c, qs, &x, "");
    int64_t parse_ns = base_mono_ns() - t0;
    if (rc != 0) return;
    pq_type t = promql_expr_root(x)->type;
    if (t != PQ_T_SCALAR && t != PQ_T_VECTOR) {
        server__api_errorf(c, "bad_data",
                           "invalid expression type \"%s\" for range query, must be Scalar or instant Vector",
                           pq_type_doc(t));
    } else if (q.has_timeout && q.timeout_ns <= 0) {
        server__api_errorf(c, "timeout", "query timed out in query execution");
    } else if (step_ns / 1000000 == 0) {
        server__api_errorf(c, "execution", "unexpected error: runtime error: integer divide by zero");
    } else {
        run(c, &q, x, server__api_time_engine_ms(start), server__api_time_engine_ms(end), step_ns / 1000000,
            parse_ns);
    }
    promql_expr_free(x);
}

/* ---- exemplars ------------------------------------------------------------------ */

static int has_selector(const pq_node *n) {
    if (!n) return 0;
    switch (n->kind) {
    case PQ_NUM:
    case PQ_STR: return 0;
    case PQ_VSEL:
    case PQ_MSEL: return 1;
    case PQ_CALL:
        for (size_t i = 0; i < n->call.nargs; i++)
            if (has_selector(n->call.args[i])) return 1;
        return 0;
    case PQ_AGG: return has_selector(n->agg.expr) || has_selector(n->agg.param);
    case PQ_BIN: return has_selector(n->bin.lhs) || has_selector(n->bin.rhs);
    case PQ_UNARY: return has_selector(n->unary.expr);
    case PQ_PAREN: return has_selector(n->paren.expr);
    case PQ_SUBQ: return has_selector(n->subq.expr);
    }
    return 0;
}

void server__api_query_exemplars(api_ctx *c) {
    api_time start, end;
    if (server__api_time_param(c, "start", server__api_min_time, &start) != 0) return;
    if (server__api_time_param(c, "end", server__api_max_time, &end) != 0) return;
    if (server__api_time_before(end, start)) {
        server__api_errorf(c, "bad_data", "end timestamp must not be before start timestamp");
        return;
    }
    base_str qs = http_form_get(&c->form, "query");
    pq_expr *x = NULL;
    int rc = parse(c, qs, &x, "");
    if (rc != 0) return;
    int sel = has_selector(promql_expr_root(x));
    promql_expr_free(x);
    if (!sel) {
        server__api_no_content(c);
        return;
    }
    base_buf b;
    base_buf_init(&b, 0);
    server__api_begin(&b);
    base_buf_puts(&b, "[]");
    server__api_end(c, &b);
}
