/* server_int.h -- the server's state, shared by server.c (wiring, reload),
 * routes.c (HTTP outside the API) and api*.c (Prometheus's HTTP API).
 *
 * API FILES.
 *   api.c         dispatch (paths, methods, readiness), arguments, time
 *                 and duration parameters as 2.42 parses them, the JSON
 *                 writers, error answers, compression
 *   api_query.c   query, query_range, query_exemplars
 *   api_series.c  series, labels, label/<name>/values
 *   api_status.c  status endpoints, targets, metadata, admin
 *   api_rules.c   rules, alerts, alertmanagers
 *   api_write.c   remote write receiver (POST /api/v1/write)
 * And outside /api/v1: federate.c (GET /federate).
 */
#ifndef KELVIN_SERVER_SERVER_INT_H
#define KELVIN_SERVER_SERVER_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/flag.h"
#include "base/str.h"
#include "config/config.h"
#include "discovery/discovery.h"
#include "http/form.h"
#include "http/http.h"
#include "promql/promql.h"
#include "scrape/scrape.h"
#include "tsdb/db.h"

typedef struct server_flags {
    const char *config_file, *listen, *log_level, *log_format, *web_config_file;
    int lifecycle, admin_api;
    int64_t max_body, scrape_threads;
    int64_t lookback_ms, query_timeout_ms, query_max_concurrency, query_max_samples, query_threads;
    const char *external_url_flag;
    int64_t outage_tolerance_ms, grace_period_ms, resend_delay_ms, notify_queue_capacity;
    int drain_notify_queue;
    int remote_write_receiver; /* --web.enable-remote-write-receiver */
} server_flags;

/* The remote write receiver's and federation's counters (api_write.c,
 * federate.c), shown on /metrics by server__rx_metrics. */
typedef struct server_rx_stats {
    atomic_ullong requests[4];            /* answered 204, 400, 500, 404 (receiver disabled) */
    atomic_ullong samples_appended;       /* accepted by the head */
    atomic_ullong samples_rejected;       /* refused by the head: out of order, duplicate, too old */
    atomic_ullong samples_dropped;        /* behind an earlier sample of the same request (2.42 drops them) */
    atomic_ullong samples_invalid_labels; /* in series whose labels kelvin cannot hold */
    atomic_ullong exemplars_dropped;      /* kelvin keeps no exemplars */
    atomic_ullong federate_errors;        /* prometheus_web_federation_errors_total */
} server_rx_stats;

typedef struct server {
    server_flags flags;
    const base_flag *flag_table; /* every flag, for /api/v1/status/flags */
    size_t nflags;
    int use_embedded;        /* no file: the embedded default configuration */
    const char *config_name; /* for logs */
    unsigned port;           /* bound HTTP port */
    tsdb_db *db;
    tsdb_db_opts dbo; /* as applied (retention for runtimeinfo) */
    uint64_t wal_corruptions;
    promql_engine *engine;
    scrape_manager *scrape;
    disc_manager *disc;
    struct rules_manager *rules;
    struct notify_manager *notify;
    struct remote_manager *remote; /* remote_write queues (NULL until started) */
    http_server *http;
    pthread_mutex_t reload_mu; /* one reload at a time */
    pthread_rwlock_t cfg_lock; /* readers of cfg (routes) vs the swap */
    cfg_config *cfg;           /* the running configuration */
    atomic_int ready;          /* 1 once the first configuration runs, 0 from shutdown on */
    atomic_int reload_ok;
    atomic_llong reload_success_ms;
    int64_t start_ms;
    int64_t start_sec, start_nsec; /* the same, to the nanosecond */
    char cwd[4096];
    char external_url[2048]; /* --web.external-url, or http://<hostname>:<port> */
    atomic_ullong reloads, reload_failures;
    server_rx_stats rx;
} server;

/* Loads and applies the configuration file again (see server.c). 0, or an
 * error with the reason in err; the running configuration stays on error. */
int server__reload(server *s, char *err, size_t errlen);
/* The HTTP routes (routes.c). */
void server__handle(void *ctx, const http_request *req, http_response *resp);

/* ---- the API (api*.c) ------------------------------------------------------ */

/* Every /api/v1/ request. */
void server__api(server *s, const http_request *req, http_response *resp);

/* One API request. */
typedef struct api_ctx {
    server *s;
    const http_request *req;
    http_response *resp;
    http_form form;
    int64_t now_sec, now_nsec; /* when the request started (Go's api.now()) */
} api_ctx;

/* A point in time as Go's time.Time holds it: Unix seconds and
 * nanoseconds in [0, 1e9). Arithmetic wraps as Go's int64 does. */
typedef struct api_time {
    int64_t sec, nsec;
} api_time;

extern const api_time server__api_min_time, server__api_max_time;

/* Prometheus's parseTime: Go float seconds (rounded to ms) or RFC 3339
 * with up to 9 fractional digits, or the two formatted bounds. 0 or -1. */
int server__api_parse_time(base_str s, api_time *ret);
/* Prometheus's parseDuration: float seconds or a Prometheus duration, in
 * ns. 0, or -1 with Go's message in msg. */
int server__api_parse_duration(base_str s, int64_t *ret_ns, char *msg, size_t msglen);
/* timestamp.FromTime (storage queries) and UnixNano()/1e6 (the engine's
 * evaluation times): equal except far outside int64 nanoseconds. */
int64_t server__api_time_ms(api_time t);
int64_t server__api_time_engine_ms(api_time t);
/* t.Before(u) */
int server__api_time_before(api_time t, api_time u);

/* parseTimeParam: the form value of name, or def when absent or empty.
 * On a bad value answers 400 (`invalid parameter "start": Invalid time
 * value for 'start': cannot parse "x" to a valid timestamp`) and returns -1. */
int server__api_time_param(api_ctx *c, const char *name, api_time def, api_time *ret);

#define SERVER_CT_JSON "application/json"

/* Will the answer be compressed (the request's Accept-Encoding, as
 * Prometheus's CompressionHandler chooses)? */
int server__api_compressed(const api_ctx *c);

/* The answers. Each takes care of the whole response. */
/* The one error writer (2.42's respondError): status, then
 * {"status":"error","errorType":<type>,"error":<msg>} with msg's len
 * bytes as Go's encoding/json writes them (NUL bytes included: 2.42
 * echoes a regex's). */
void server__api_error(api_ctx *c, int status, const char *type, const char *msg, size_t len);
/* The status 2.42 gives an errorType: bad_data 400, execution 422,
 * canceled and timeout 503, not_found 404, others (internal,
 * unavailable) 500. */
int server__api_status(const char *type);
/* server__api_error with that status and a formatted message (no length
 * limit). */
void server__api_errorf(api_ctx *c, const char *type, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* A bad_data answer of prefix + msg (msg may hold NUL bytes: 2.42 echoes
 * a regex's). */
void server__api_bad_data(api_ctx *c, const char *prefix, const base_buf *msg);
/* "invalid parameter %q: " + msg, bad_data. */
void server__api_invalid_param(api_ctx *c, const char *param, const char *msg);
/* Sends b (a complete JSON document) with status, compressed if asked. */
void server__api_send(api_ctx *c, int status, base_buf *b);
/* Answers b with content type ct, gzip- or deflate-compressed when the
 * request's Accept-Encoding takes it (b is consumed). */
void server__send_encoded(const http_request *req, http_response *resp, int status, const char *ct,
                          base_buf *b);
void server__api_no_content(api_ctx *c);
/* {"status":"success","data": ... } around what the caller writes. */
void server__api_begin(base_buf *b);
void server__api_end(api_ctx *c, base_buf *b);

/* JSON as Go writes it (strings: base_buf_json_str): label sets as
 * objects, sample timestamps as Prometheus's marshalTimestamp, values as
 * its marshalValue, float64 as encoding/json, and
 * strconv.FormatFloat(v, 'f', -1, 64). */
void server__json_labels(base_buf *b, const labels_set *ls);
#define SERVER_TS_MAX 32 /* marshalTimestamp's text: at most this, no NUL */
size_t server__fmt_ts(char out[SERVER_TS_MAX], int64_t ms);
void server__json_float(base_buf *b, double v);
void server__fmt_float_f(base_buf *b, double v);
/* Go's time.Time JSON (RFC 3339, fraction without trailing zeros), UTC. */
void server__json_time(base_buf *b, int64_t sec, int64_t nsec);
/* Go's strconv.Quote. */
void server__quote(base_buf *b, const char *s, size_t n);

/* Endpoint handlers. */
void server__api_query(api_ctx *c);
void server__api_query_range(api_ctx *c);
void server__api_query_exemplars(api_ctx *c);
void server__api_series(api_ctx *c);
void server__api_labels(api_ctx *c);
void server__api_label_values(api_ctx *c, base_str name);
void server__api_targets(api_ctx *c);
void server__api_targets_metadata(api_ctx *c);
void server__api_metadata(api_ctx *c);
void server__api_status_config(api_ctx *c);
void server__api_status_buildinfo(api_ctx *c);
void server__api_status_flags(api_ctx *c);
void server__api_status_runtimeinfo(api_ctx *c);
void server__api_status_tsdb(api_ctx *c);
void server__api_status_walreplay(api_ctx *c);
void server__api_rules(api_ctx *c);
void server__api_alerts(api_ctx *c);
void server__api_alertmanagers(api_ctx *c);
void server__api_delete_series(api_ctx *c);
void server__api_clean_tombstones(api_ctx *c);
void server__api_snapshot(api_ctx *c);
/* POST /api/v1/write (api_write.c), before any form parsing. */
void server__api_write(server *s, const http_request *req, http_response *resp);
/* GET /federate (federate.c): every method, readiness included. */
void server__federate(server *s, const http_request *req, http_response *resp);
/* The receiver's and federation's counters, for /metrics. */
struct expo_mset;
void server__rx_metrics(server *s, struct expo_mset *ms);

/* Parses every match[] of the form into matcher sets. nonempty: refuse a
 * set whose matchers all match "" (2.42's parseMatchersParam). 0, or -1
 * with Prometheus's message in err. Free with server__match_sets_free. */
typedef struct api_match_sets {
    labels_matcher ***ms;
    size_t *n;
    size_t nsets;
} api_match_sets;
int server__match_sets(api_ctx *c, int nonempty, api_match_sets *ret, char *err, size_t errlen);
void server__match_sets_free(api_match_sets *m);

/* model.Duration's String() of ms ("1d12h", "0s"). */
void server__fmt_duration(base_buf *b, int64_t ms);

#endif
