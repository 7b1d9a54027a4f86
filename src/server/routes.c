/* routes.c -- the server's HTTP routes, and its own /metrics.
 *
 * Routes (Prometheus 2.42's paths, answers and status codes):
 *   GET  /-/healthy, /-/ready (503 until the first configuration runs)
 *   POST|PUT /-/reload, /-/quit  (403 "Lifecycle API is not enabled." without
 *        --web.enable-lifecycle)
 *   /api/v1/...  Prometheus's HTTP API (api.c; remote write: api_write.c)
 *   GET  /federate (federate.c)
 *   GET  /metrics (text 0.0.4 or OpenMetrics by Accept)
 *   GET  / and /ui/... the web UI (src/ui: embedded files, gzip, ETag, caching)
 * Handlers run on libmicrohttpd's threads, several at once.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/log.h"
#include "base/num.h"
#include "base/time.h"
#include "expo/expo.h"
#include "labels/labels.h"
#include "notify/notify.h"
#include "remote/remote.h"
#include "rules/manager.h"
#include "server/server_int.h"
#include "ui/ui.h"

static int is_get(const http_request *req) {
    return strcmp(req->method, "GET") == 0 || strcmp(req->method, "HEAD") == 0;
}

static int is_post(const http_request *req) {
    return strcmp(req->method, "POST") == 0 || strcmp(req->method, "PUT") == 0;
}

/* ---- /metrics ------------------------------------------------------------ */

static void add(expo_mset *ms, const char *name, expo_type t, const char *help, const char *labels,
                double v) {
    expo_family *f = expo_mset_family(ms, name, t, help, "");
    expo_mset_add(ms, f, "", labels, NULL, v);
}

static void process_metrics(server *s, expo_mset *ms) {
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) == 0)
        add(ms, "process_cpu_seconds_total", EXPO_COUNTER, "Total user and system CPU time spent in seconds.",
            NULL,
            (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
                (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6);
    FILE *fp = fopen("/proc/self/statm", "r");
    if (fp) {
        unsigned long long size = 0, rss = 0;
        if (fscanf(fp, "%llu %llu", &size, &rss) == 2) {
            double page = (double)sysconf(_SC_PAGESIZE);
            add(ms, "process_resident_memory_bytes", EXPO_GAUGE, "Resident memory size in bytes.", NULL,
                (double)rss * page);
            add(ms, "process_virtual_memory_bytes", EXPO_GAUGE, "Virtual memory size in bytes.", NULL,
                (double)size * page);
        }
        fclose(fp);
    }
    add(ms, "process_start_time_seconds", EXPO_GAUGE,
        "Start time of the process since unix epoch in seconds.", NULL, (double)s->start_ms / 1e3);
}

static void tsdb_metrics(server *s, expo_mset *ms) {
    tsdb_db_stats st;
    tsdb_db_stats_get(s->db, &st);
    const tsdb_head_stats *h = &st.head;
    add(ms, "kelvin_tsdb_head_series", EXPO_GAUGE, "Series in the head.", NULL, (double)h->series);
    add(ms, "kelvin_tsdb_head_chunks", EXPO_GAUGE, "Closed chunks in the head.", NULL, (double)h->chunks);
    add(ms, "kelvin_tsdb_head_samples", EXPO_GAUGE, "Samples held in the head.", NULL, (double)h->samples);
    add(ms, "kelvin_tsdb_head_series_created_total", EXPO_COUNTER, "Series created in the head.", NULL,
        (double)h->series_created);
    add(ms, "kelvin_tsdb_head_series_removed_total", EXPO_COUNTER, "Series removed from the head.", NULL,
        (double)h->series_removed);
    add(ms, "kelvin_tsdb_head_samples_appended_total", EXPO_COUNTER, "Samples appended to the head.", NULL,
        (double)h->totals.appended);
    expo_family *rej = expo_mset_family(ms, "kelvin_tsdb_head_samples_rejected_total", EXPO_COUNTER,
                                        "Samples the head refused, by reason.", "");
    expo_mset_add(ms, rej, "", "reason=\"out_of_order\"", NULL, (double)h->totals.out_of_order);
    expo_mset_add(ms, rej, "", "reason=\"duplicate\"", NULL, (double)h->totals.duplicate);
    expo_mset_add(ms, rej, "", "reason=\"too_old\"", NULL, (double)h->totals.too_old);
    add(ms, "kelvin_tsdb_blocks_loaded", EXPO_GAUGE, "Blocks on disk being served.", NULL, (double)st.blocks);
    add(ms, "kelvin_tsdb_storage_blocks_bytes", EXPO_GAUGE, "Bytes of the blocks on disk.", NULL,
        (double)st.block_bytes);
    add(ms, "kelvin_tsdb_wal_bytes", EXPO_GAUGE, "Bytes of the write-ahead log on disk.", NULL,
        (double)st.wal_bytes);
    add(ms, "kelvin_tsdb_compactions_total", EXPO_COUNTER, "Compactions run.", NULL, (double)st.compactions);
    add(ms, "kelvin_tsdb_compactions_failed_total", EXPO_COUNTER, "Compactions that failed.", NULL,
        (double)st.compactions_failed);
    add(ms, "kelvin_tsdb_head_cuts_total", EXPO_COUNTER, "Blocks cut from the head.", NULL,
        (double)st.head_cuts);
    expo_family *mem = expo_mset_family(ms, "kelvin_memory_bytes", EXPO_GAUGE,
                                        "Heap memory held, by module and part (malloc's sizes).", "");
    expo_mset_add(ms, mem, "", "module=\"tsdb\",part=\"series\"", NULL, (double)h->bytes_series);
    expo_mset_add(ms, mem, "", "module=\"tsdb\",part=\"chunks\"", NULL, (double)h->bytes_chunks);
    expo_mset_add(ms, mem, "", "module=\"tsdb\",part=\"out_of_order\"", NULL, (double)h->bytes_ooo);
    expo_mset_add(ms, mem, "", "module=\"tsdb\",part=\"index\"", NULL, (double)h->bytes_index);
    expo_mset_add(ms, mem, "", "module=\"labels\",part=\"sets_and_strings\"", NULL, (double)h->bytes_labels);
}

static void disc_metrics(server *s, expo_mset *ms) {
    disc_stats ds;
    disc_manager_stats(s->disc, &ds);
    static const char *const mech[4] = {"mechanism=\"file\"", "mechanism=\"dns\"", "mechanism=\"http\"",
                                        "mechanism=\"static\""};
    expo_family *r = expo_mset_family(ms, "kelvin_sd_refreshes_total", EXPO_COUNTER,
                                      "Service discovery refreshes, by mechanism.", "");
    for (int i = 0; i < 4; i++) expo_mset_add(ms, r, "", mech[i], NULL, (double)ds.refreshes[i]);
    expo_family *fl = expo_mset_family(ms, "kelvin_sd_refresh_failures_total", EXPO_COUNTER,
                                       "Service discovery refreshes that failed, by mechanism.", "");
    for (int i = 0; i < 4; i++) expo_mset_add(ms, fl, "", mech[i], NULL, (double)ds.failures[i]);
    add(ms, "kelvin_sd_discovered_targets", EXPO_GAUGE,
        "Targets found by service discovery (before relabeling).", NULL, (double)ds.targets);
}

static void engine_metrics(server *s, expo_mset *ms) {
    promql_engine_stats es;
    promql_engine_stats_get(s->engine, &es);
    add(ms, "kelvin_engine_queries", EXPO_GAUGE, "Queries being evaluated.", NULL, (double)es.running);
    add(ms, "kelvin_engine_queries_waiting", EXPO_GAUGE,
        "Queries waiting for a slot (--query.max-concurrency).", NULL, (double)es.waiting);
    add(ms, "kelvin_engine_queries_concurrent_max", EXPO_GAUGE, "Queries evaluated at once at most.", NULL,
        (double)s->flags.query_max_concurrency);
    add(ms, "kelvin_engine_queries_total", EXPO_COUNTER, "Queries evaluated.", NULL, (double)es.queries);
    add(ms, "kelvin_engine_queries_failed_total", EXPO_COUNTER, "Queries that failed.", NULL,
        (double)es.queries_failed);
    add(ms, "kelvin_engine_queries_timed_out_total", EXPO_COUNTER, "Queries that ran past their timeout.",
        NULL, (double)es.queries_timed_out);
    add(ms, "kelvin_engine_block_cache_bytes", EXPO_GAUGE,
        "Freed evaluation arrays kept for the next queries (at most 512 MiB), so a warm server does not "
        "fault "
        "in fresh pages.",
        NULL, (double)es.block_cache_bytes);
}

/* 2.42's rule group metrics, labelled rule_group="FILE;NAME". */
typedef struct rule_metrics {
    expo_mset *ms;
    expo_family *f[9];
    double eval_sum, eval_count, round_sum, round_count;
} rule_metrics;

static void rule_group_metrics(void *ctx, rules_gstate *gs, const rules_group_stats *st) {
    rule_metrics *rm = ctx;
    base_buf l;
    base_buf_init(&l, 0);
    base_buf_puts(&l, "rule_group=");
    labels_quote(&l, base_str_c(st->key));
    const char *lab = l.err ? NULL : expo_mset_strdup(rm->ms, l.data);
    base_buf_free(&l);
    if (!lab) return;
    pthread_mutex_lock(&gs->mu);
    uint64_t evals = 0, failures = 0;
    for (size_t i = 0; i < gs->nrules; i++) evals += gs->rules[i].evals, failures += gs->rules[i].failures;
    double v[9] = {(double)evals,
                   (double)failures,
                   (double)st->iterations,
                   (double)st->missed,
                   (double)gs->interval_ms / 1e3,
                   (double)gs->last_eval_ms / 1e3,
                   (double)gs->eval_ns / 1e9,
                   (double)gs->nrules,
                   (double)st->last_samples};
    pthread_mutex_unlock(&gs->mu);
    for (int i = 0; i < 9; i++) expo_mset_add(rm->ms, rm->f[i], "", lab, NULL, v[i]);
    rm->eval_sum += st->rule_sum_s;
    rm->eval_count += (double)st->rule_count;
    rm->round_sum += st->round_sum_s;
    rm->round_count += (double)st->round_count;
}

static void rules_metrics(server *s, expo_mset *ms) {
    static const struct {
        const char *name, *help;
        expo_type t;
    } fam[9] = {
        {"prometheus_rule_evaluations_total", "The total number of rule evaluations.", EXPO_COUNTER},
        {"prometheus_rule_evaluation_failures_total", "The total number of rule evaluation failures.",
         EXPO_COUNTER},
        {"prometheus_rule_group_iterations_total",
         "The total number of scheduled rule group evaluations, whether executed or missed.", EXPO_COUNTER},
        {"prometheus_rule_group_iterations_missed_total",
         "The total number of rule group evaluations missed due to slow rule group evaluation.",
         EXPO_COUNTER},
        {"prometheus_rule_group_interval_seconds", "The interval of a rule group.", EXPO_GAUGE},
        {"prometheus_rule_group_last_evaluation_timestamp_seconds",
         "The timestamp of the last rule group evaluation in seconds.", EXPO_GAUGE},
        {"prometheus_rule_group_last_duration_seconds", "The duration of the last rule group evaluation.",
         EXPO_GAUGE},
        {"prometheus_rule_group_rules", "The number of rules.", EXPO_GAUGE},
        {"prometheus_rule_group_last_evaluation_samples",
         "The number of samples returned during the last rule group evaluation.", EXPO_GAUGE},
    };
    rule_metrics rm = {.ms = ms};
    for (int i = 0; i < 9; i++) rm.f[i] = expo_mset_family(ms, fam[i].name, fam[i].t, fam[i].help, "");
    rules_manager_visit(s->rules, rule_group_metrics, &rm);
    /* the two summaries, without quantiles (sum and count) */
    expo_family *ed = expo_mset_family(ms, "prometheus_rule_evaluation_duration_seconds", EXPO_SUMMARY,
                                       "The duration for a rule to execute.", "");
    expo_mset_add(ms, ed, "_sum", NULL, NULL, rm.eval_sum);
    expo_mset_add(ms, ed, "_count", NULL, NULL, rm.eval_count);
    expo_family *gd = expo_mset_family(ms, "prometheus_rule_group_duration_seconds", EXPO_SUMMARY,
                                       "The duration of rule group evaluations.", "");
    expo_mset_add(ms, gd, "_sum", NULL, NULL, rm.round_sum);
    expo_mset_add(ms, gd, "_count", NULL, NULL, rm.round_count);
}

/* 2.42's notifier metrics. */
static void notify_metrics(server *s, expo_mset *ms) {
    notify_stats st;
    if (notify_stats_get(s->notify, &st) != 0) return;
    expo_family *lat = expo_mset_family(ms, "prometheus_notifications_latency_seconds", EXPO_SUMMARY,
                                        "Latency quantiles for sending alert notifications.", "");
    expo_family *err = expo_mset_family(ms, "prometheus_notifications_errors_total", EXPO_COUNTER,
                                        "Total number of errors sending alert notifications.", "");
    expo_family *sent = expo_mset_family(ms, "prometheus_notifications_sent_total", EXPO_COUNTER,
                                         "Total number of alerts sent.", "");
    for (size_t i = 0; i < st.nams; i++) {
        const notify_am_stats *a = &st.ams[i];
        base_buf l;
        base_buf_init(&l, 0);
        base_buf_puts(&l, "alertmanager=");
        labels_quote(&l, base_str_c(a->url));
        const char *lab = l.err ? NULL : expo_mset_strdup(ms, l.data);
        for (int q = 0; lab && q < NOTIFY_NQUANTILES; q++) {
            base_buf lq;
            base_buf_init(&lq, 0);
            base_buf_printf(&lq, "%s,quantile=\"%g\"", lab, notify_quantiles[q]);
            const char *lqs = lq.err ? NULL : expo_mset_strdup(ms, lq.data);
            if (lqs) expo_mset_add(ms, lat, "", lqs, NULL, a->latency_q[q]);
            base_buf_free(&lq);
        }
        if (lab) {
            expo_mset_add(ms, lat, "_sum", lab, NULL, a->latency_sum);
            expo_mset_add(ms, lat, "_count", lab, NULL, (double)a->latency_count);
            expo_mset_add(ms, err, "", lab, NULL, (double)a->errors);
            expo_mset_add(ms, sent, "", lab, NULL, (double)a->sent);
        }
        base_buf_free(&l);
    }
    add(ms, "prometheus_notifications_dropped_total", EXPO_COUNTER,
        "Total number of alerts dropped due to errors when sending to Alertmanager.", NULL,
        (double)st.dropped);
    add(ms, "prometheus_notifications_queue_length", EXPO_GAUGE,
        "The number of alert notifications in the queue.", NULL, (double)st.queue_length);
    add(ms, "prometheus_notifications_queue_capacity", EXPO_GAUGE,
        "The capacity of the alert notifications queue.", NULL, (double)st.queue_capacity);
    add(ms, "prometheus_notifications_alertmanagers_discovered", EXPO_GAUGE,
        "The number of alertmanagers discovered and active.", NULL, (double)st.alertmanagers_discovered);
    notify_stats_free(&st);
}

static void self_metrics(server *s, const http_request *req, http_response *resp) {
    expo_mset ms;
    expo_mset_init(&ms);
    add(&ms, "kelvin_build_info", EXPO_GAUGE, "Kelvin's version.", "version=\"" KELVIN_VERSION "\"", 1);
    process_metrics(s, &ms);
    add(&ms, "kelvin_config_last_reload_successful", EXPO_GAUGE,
        "Whether the last configuration reload attempt was successful.", NULL, s->reload_ok);
    add(&ms, "kelvin_config_last_reload_success_timestamp_seconds", EXPO_GAUGE,
        "Timestamp of the last successful configuration reload.", NULL, (double)s->reload_success_ms / 1e3);
    add(&ms, "kelvin_config_reloads_total", EXPO_COUNTER, "Configuration loads that succeeded.", NULL,
        (double)s->reloads);
    add(&ms, "kelvin_config_reload_failures_total", EXPO_COUNTER, "Configuration loads that failed.", NULL,
        (double)s->reload_failures);
    if (s->db) tsdb_metrics(s, &ms);
    if (s->engine) engine_metrics(s, &ms);
    if (s->ready) {
        scrape_manager_metrics(s->scrape, &ms);
        disc_metrics(s, &ms);
        if (s->rules) rules_metrics(s, &ms);
        if (s->notify) notify_metrics(s, &ms);
        if (s->remote) remote_metrics(s->remote, &ms);
    }
    server__rx_metrics(s, &ms);
    expo_format fmt = http_prefers_openmetrics(req->accept) ? EXPO_FMT_OPENMETRICS : EXPO_FMT_TEXT;
    base_buf b;
    base_buf_init(&b, 0);
    expo_mset *sets[1] = {&ms};
    if (ms.err || expo_write(sets, 1, fmt, &b) != 0) base_buf_free(&b), b.err = BASE_E_NOMEM;
    expo_mset_free(&ms);
    http_respond_buf(resp, 200, fmt == EXPO_FMT_OPENMETRICS ? EXPO_CT_OPENMETRICS : EXPO_CT_TEXT, &b);
}

/* ---- the web UI ---------------------------------------------------------- */

/* An immutable asset gets its Cache-Control (its URL names the build),
 * index.html "no-cache" and its ETag (so the browser revalidates it and
 * gets 304 while the build is the same); both vary with Accept-Encoding
 * (the gzip variant is served when accepted), so caches keep the two
 * encodings apart. */
static void ui_static(void *arg) {
    (void)arg;
}

static void serve_ui(const http_request *req, http_response *resp) {
    ui_reply r;
    ui_serve(req->path, http_accepts_gzip(req->accept_encoding), http_request_header(req, "If-None-Match"),
             &r);
    http_respond_owned(resp, r.status, r.content_type, r.content_encoding, r.body, r.len, ui_static, NULL);
    if (r.cache_control) http_response_add_header(resp, "Cache-Control", r.cache_control);
    if (r.etag) http_response_add_header(resp, "ETag", r.etag);
    if (r.status != 404) http_response_add_header(resp, "Vary", "Accept-Encoding");
}

/* ---- lifecycle ----------------------------------------------------------- */

static void lifecycle(server *s, const http_request *req, http_response *resp, int quit) {
    if (!is_post(req)) {
        http_respond_text(resp, 405, "Only POST or PUT requests allowed\n");
        return;
    }
    if (!s->flags.lifecycle) {
        http_respond_text(resp, 403, "Lifecycle API is not enabled.\n");
        return;
    }
    if (!s->ready) {
        http_respond_text(resp, 503, "Service Unavailable\n");
        return;
    }
    if (quit) {
        http_respond_text(resp, 200, "Requesting termination... Goodbye!\n");
        kill(getpid(), SIGTERM);
        return;
    }
    char err[1024];
    if (server__reload(s, err, sizeof err) != 0) {
        char msg[1100];
        int n = snprintf(msg, sizeof msg, "failed to reload config: %s\n", err);
        http_respond_copy(resp, 500, "text/plain; charset=utf-8", msg,
                          (size_t)n < sizeof msg ? (size_t)n : 0);
        return;
    }
    http_respond_text(resp, 200, "");
}

void server__handle(void *ctx, const http_request *req, http_response *resp) {
    server *s = ctx;
    const char *p = req->path;
    if (strncmp(p, "/api/v1/", 8) == 0) {
        server__api(s, req, resp);
        return;
    }
    if (strcmp(p, "/-/reload") == 0 || strcmp(p, "/-/quit") == 0) {
        lifecycle(s, req, resp, p[3] == 'q');
        return;
    }
    if (strcmp(p, "/federate") == 0) {
        server__federate(s, req, resp);
        return;
    }
    if (!is_get(req)) {
        http_respond_text(resp, 405, "method not allowed\n");
        return;
    }
    if (strcmp(p, "/-/healthy") == 0) {
        http_respond_text(resp, 200, "Prometheus Server is Healthy.\n");
    } else if (strcmp(p, "/-/ready") == 0) {
        if (s->ready)
            http_respond_text(resp, 200, "Prometheus Server is Ready.\n");
        else
            http_respond_text(resp, 503, "Service Unavailable\n");
    } else if (strcmp(p, "/metrics") == 0) {
        self_metrics(s, req, resp);
    } else if (ui_handles(p)) {
        serve_ui(req, resp);
    } else {
        http_respond_text(resp, 404, "404 page not found\n");
    }
}
