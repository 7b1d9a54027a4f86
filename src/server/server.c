/* server.c -- `kelvin server`: flags, wiring, reload, lifecycle.
 *
 * Wiring: the TSDB is opened first (its WAL replayed), then the PromQL
 * engine over it, the notifier and the rule manager (whose groups query
 * the engine, append to the head and send alerts to the notifier), then
 * HTTP, then the scrape manager (which appends to the TSDB's head) and the
 * discovery manager (whose sink is scrape_manager_sync, or notify_sync for
 * alertmanager sets), then the configuration is applied. Shutdown runs the
 * other way: HTTP stops first (no request runs any more), then the rules
 * (the last rounds finish), the notifier (its queue drained within a
 * bound), discovery, scraping and the engine, then the TSDB closes (its
 * WAL is complete).
 *
 * Reload (SIGHUP, POST /-/reload): the new file is loaded and checked in
 * full before anything changes, its rule files too; a file that fails
 * leaves the running configuration and rules untouched, is logged with
 * its reason, answered with 500 on /-/reload, and sets
 * kelvin_config_last_reload_successful to 0. A good one is applied to the
 * scrape manager first (so jobs exist before their targets arrive), then
 * to discovery, the notifier and the rule manager; the old configuration
 * is freed only after all let go of it. Reloads are serialised by
 * reload_mu.
 *
 * Threads: main waits for signals (SIGHUP reloads, SIGINT/SIGTERM stop),
 * libmicrohttpd's pool runs the routes (routes.c), discovery and scrape
 * run their own.
 */
#include "server/server.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/err.h"
#include "base/flag.h"
#include "base/log.h"
#include "base/time.h"
#include "notify/notify.h"
#include "remote/remote.h"
#include "rules/manager.h"
#include "server/server_int.h"

/* The configuration used when --config.file is left at its default and no
 * prometheus.yml exists: Kelvin scrapes itself and a local agent, so
 * `kelvin server` next to `kelvin agent` works with no file at all, and
 * evaluates the GPU alert pack when it runs from a checkout (the glob
 * loads nothing elsewhere). */
static const char default_config_fmt[] = "# kelvin server's embedded default configuration\n"
                                         "global:\n"
                                         "  scrape_interval: 15s\n"
                                         "  evaluation_interval: 15s\n"
                                         "rule_files:\n"
                                         "  - rules/gpu.rules.yml\n"
                                         "scrape_configs:\n"
                                         "  - job_name: kelvin\n"
                                         "    static_configs:\n"
                                         "      - targets: ['%s']\n"
                                         "  - job_name: kelvin-agent\n"
                                         "    scrape_interval: 5s\n"
                                         "    static_configs:\n"
                                         "      - targets: ['localhost:9400']\n";

static const char default_config_file[] = "prometheus.yml";

/* Loads the configuration named by the flags (or the embedded one). */
static int load_config(server *s, cfg_config **ret, char *err, size_t errlen) {
    if (s->use_embedded) {
        char self[300], text[sizeof default_config_fmt + 300];
        snprintf(self, sizeof self, "localhost:%u", s->port ? s->port : 9090);
        int n = snprintf(text, sizeof text, default_config_fmt, self);
        return cfg_load_buf(text, (size_t)n, "<embedded default>", NULL, ret, err, errlen);
    }
    return cfg_load_file(s->flags.config_file, ret, err, errlen);
}

/* The config's external labels as a label set (NULL when none). */
static int external_labels(const cfg_config *c, labels_set **ret, char *err, size_t errlen) {
    *ret = NULL;
    if (c->global.external_labels.n == 0) return 0;
    labels_builder b;
    labels_builder_init(&b);
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < c->global.external_labels.n; i++)
        rc = labels_builder_set(&b, base_str_c(c->global.external_labels.v[i].name),
                                base_str_c(c->global.external_labels.v[i].value));
    if (rc == 0) rc = labels_builder_finish(&b, 0, ret, err, errlen);
    labels_builder_free(&b);
    return rc;
}

/* Reads the rule files a configuration names (2.42 loads them during the
 * reload and keeps the previous rules when one fails). */
static int load_rules(const cfg_config *c, rules_loaded **ret, labels_set **ret_ext, char *err,
                      size_t errlen) {
    base_buf errs;
    base_buf_init(&errs, 0);
    int rc = rules_manager_load((const char *const *)c->rule_files, c->nrule_files,
                                c->global.evaluation_interval_ms, ret, &errs);
    if (rc != 0) {
        if (errs.len && errs.data[errs.len - 1] == '\n') errs.data[--errs.len] = '\0';
        for (char *line = errs.data, *nl; line && *line; line = nl ? nl + 1 : NULL) {
            nl = strchr(line, '\n');
            if (nl) *nl = '\0';
            base_log(BASE_LOG_ERROR, "loading groups failed", "err", line, NULL);
            if (nl) *nl = '\n';
        }
        snprintf(err, errlen, "error loading rules, previous rule set restored: %s",
                 errs.data ? errs.data : base_strerror(rc));
        base_buf_free(&errs);
        return rc;
    }
    base_buf_free(&errs);
    if ((rc = external_labels(c, ret_ext, err, errlen)) != 0) {
        rules_loaded_free(*ret);
        *ret = NULL;
    }
    return rc;
}

/* Runs a configuration (loaded by the caller, or NULL after a failed load,
 * whose rc is passed on): the reload_mu critical section of a reload. Takes
 * ownership of c. */
static int apply_config(server *s, cfg_config *c, int rc, int64_t t0, char *err, size_t errlen) {
    rules_loaded *rl = NULL;
    labels_set *ext = NULL;
    if (rc == 0) rc = load_rules(c, &rl, &ext, err, errlen);
    if (rc == 0 && (rc = scrape_manager_apply(s->scrape, c, err, errlen)) == 0)
        rc = disc_manager_apply(s->disc, c, err, errlen);
    if (rc == 0) rc = notify_apply_config(s->notify, c, err, errlen);
    if (rc == 0) rc = remote_manager_apply(s->remote, c, err, errlen);
    if (rc != 0) {
        rules_loaded_free(rl);
        if (ext) labels_unref(ext);
        /* A failed apply may leave a manager pointing at c: re-apply the
         * running configuration before c goes. */
        if (c && s->cfg) {
            char e2[256];
            if (scrape_manager_apply(s->scrape, s->cfg, e2, sizeof e2) != 0 ||
                disc_manager_apply(s->disc, s->cfg, e2, sizeof e2) != 0 ||
                notify_apply_config(s->notify, s->cfg, e2, sizeof e2) != 0 ||
                remote_manager_apply(s->remote, s->cfg, e2, sizeof e2) != 0)
                base_log(BASE_LOG_ERROR, "restoring the previous configuration failed", "err", e2, NULL);
        }
        cfg_free(c);
        s->reload_ok = 0;
        s->reload_failures++;
        base_log(BASE_LOG_ERROR, "Error loading config", "file", s->config_name, "err", err, NULL);
        return rc;
    }
    rules_manager_update(s->rules, rl, ext, s->external_url);
    if (ext) labels_unref(ext);
    cfg_config *old = s->cfg;
    pthread_rwlock_wrlock(&s->cfg_lock);
    s->cfg = c;
    pthread_rwlock_unlock(&s->cfg_lock);
    cfg_free(old);
    s->reload_ok = 1;
    s->reloads++;
    s->reload_success_ms = base_unix_ms();
    char dur[32], jobs[24];
    snprintf(dur, sizeof dur, "%.3fms", (double)(base_mono_ns() - t0) / 1e6);
    snprintf(jobs, sizeof jobs, "%zu", c->nscrapes);
    base_log(BASE_LOG_INFO, "Completed loading of configuration file", "filename", s->config_name, "jobs",
             jobs, "totalDuration", dur, NULL);
    return 0;
}

int server__reload(server *s, char *err, size_t errlen) {
    pthread_mutex_lock(&s->reload_mu);
    int64_t t0 = base_mono_ns();
    cfg_config *c = NULL;
    int rc = load_config(s, &c, err, errlen);
    rc = apply_config(s, c, rc, t0, err, errlen);
    pthread_mutex_unlock(&s->reload_mu);
    return rc;
}

static void on_bad_block(void *ctx, const char *dir, const char *msg) {
    (void)ctx;
    base_log(BASE_LOG_ERROR, "block is damaged and will not be read", "block", dir, "err", msg, NULL);
}

static void disc_to_scrape(void *ctx, const char *set, const disc_group *const *groups, size_t n) {
    server *s = ctx;
    if (strncmp(set, "alertmanager/", 13) == 0)
        notify_sync(s->notify, set, groups, n);
    else
        scrape_manager_sync(s->scrape, set, groups, n);
}

/* remote write's metadata_config source: the scrape cache's HELP/TYPE/UNIT. */
static void remote_metadata(void *ctx, remote_metadata_emit emit, void *ectx) {
    server *s = ctx;
    scrape_manager_metadata_each(s->scrape, emit, ectx);
}

static void notify_rules(void *ctx, const rules_notice *alerts, size_t n) {
    server *s = ctx;
    notify_send(s->notify, alerts, n);
}

/* 2.42's computeExternalURL: the flag, or http://<hostname>:<port>; the
 * path without its trailing slashes. */
static void external_url(server *s) {
    const char *u = s->flags.external_url_flag;
    if (u && u[0]) {
        snprintf(s->external_url, sizeof s->external_url, "%s", u);
    } else {
        char host[256] = "localhost";
        if (gethostname(host, sizeof host) != 0) snprintf(host, sizeof host, "localhost");
        host[sizeof host - 1] = '\0';
        snprintf(s->external_url, sizeof s->external_url, "http://%s:%u", host, s->port);
    }
    size_t n = strlen(s->external_url);
    const char *scheme_end = strstr(s->external_url, "://");
    size_t min = scheme_end ? (size_t)(scheme_end - s->external_url) + 3 : 0;
    while (n > min && s->external_url[n - 1] == '/') s->external_url[--n] = '\0';
}

int server_main(int argc, char **argv) {
    server s;
    memset(&s, 0, sizeof s);
    server_flags *f = &s.flags;
    f->config_file = default_config_file;
    f->listen = "0.0.0.0:9090";
    f->log_level = "info";
    f->log_format = "logfmt";
    f->max_body = 64 << 20;
    f->web_config_file = "";
    promql_opts qo;
    promql_opts_default(&qo);
    f->lookback_ms = qo.lookback_ms;
    f->query_timeout_ms = qo.timeout_ms;
    f->query_max_concurrency = qo.max_concurrency;
    f->query_max_samples = (int64_t)qo.max_samples;
    /* One query may use up to this many cores for its range functions
     * (eval_stream.c): all of them, as Go's GOMAXPROCS lets Prometheus. */
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    f->query_threads = ncpu < 1 ? 1 : ncpu > 16 ? 16 : ncpu;
    tsdb_db_flagvars tv;
    tsdb_db_flagvars_init(&tv);
    remote_flagvars rv;
    remote_flagvars_init(&rv);
    f->external_url_flag = "";
    f->outage_tolerance_ms = 3600 * 1000;
    f->grace_period_ms = 600 * 1000;
    f->resend_delay_ms = 60 * 1000;
    f->notify_queue_capacity = 10000;

    base_flag flags[24 + TSDB_DB_NFLAGS + REMOTE_NFLAGS] = {
        {"config.file", BASE_FLAG_STRING, &f->config_file,
         "Prometheus configuration file path. Without the flag and without a prometheus.yml here, an "
         "embedded configuration scrapes this server and a local agent on :9400."},
        {"web.listen-address", BASE_FLAG_STRING, &f->listen,
         "Address to listen on for UI, API, and telemetry."},
        {"web.enable-lifecycle", BASE_FLAG_BOOL, &f->lifecycle,
         "Enable shutdown and reload via HTTP request."},
        {"web.enable-admin-api", BASE_FLAG_BOOL, &f->admin_api,
         "Enable API endpoints for admin control actions."},
        {"web.enable-remote-write-receiver", BASE_FLAG_BOOL, &f->remote_write_receiver,
         "Enable API endpoint accepting remote write requests."},
        {"web.max-request-size", BASE_FLAG_SIZE, &f->max_body, "Largest request body accepted."},
        {"web.config.file", BASE_FLAG_STRING, &f->web_config_file,
         "[EXPERIMENTAL] Path to configuration file that can enable TLS or authentication."},
        {"query.lookback-delta", BASE_FLAG_DURATION, &f->lookback_ms,
         "The maximum lookback duration for retrieving metrics during expression evaluations and "
         "federation."},
        {"query.timeout", BASE_FLAG_DURATION, &f->query_timeout_ms,
         "Maximum time a query may take before being aborted."},
        {"query.max-concurrency", BASE_FLAG_INT, &f->query_max_concurrency,
         "Maximum number of queries executed concurrently."},
        {"query.max-samples", BASE_FLAG_INT, &f->query_max_samples,
         "Maximum number of samples a single query can load into memory. Note that queries will fail if they "
         "try to load more samples than this into memory, so this also limits the number of samples a query "
         "can return."},
        {"query.threads", BASE_FLAG_INT, &f->query_threads,
         "Threads one query may use for range functions over many series (default: the cores, at most 16)."},
        {"scrape.threads", BASE_FLAG_INT, &f->scrape_threads,
         "Scraper threads (each drives many targets through libcurl's multi interface); 0: one per two "
         "cores."},
        {"log.level", BASE_FLAG_STRING, &f->log_level,
         "Only log messages with the given severity or above: debug, info, warn, error."},
        {"log.format", BASE_FLAG_STRING, &f->log_format, "Output format of log messages: logfmt or json."},
        {"web.external-url", BASE_FLAG_STRING, &f->external_url_flag,
         "The URL under which Kelvin is externally reachable (alerts' generator URLs, $externalURL in "
         "templates). Default: http://<hostname>:<port>."},
        {"rules.alert.for-outage-tolerance", BASE_FLAG_DURATION, &f->outage_tolerance_ms,
         "Max time to tolerate prometheus outage for restoring \"for\" state of alert."},
        {"rules.alert.for-grace-period", BASE_FLAG_DURATION, &f->grace_period_ms,
         "Minimum duration between alert and restored \"for\" state. This is maintained only for alerts with "
         "configured \"for\" time greater than grace period."},
        {"rules.alert.resend-delay", BASE_FLAG_DURATION, &f->resend_delay_ms,
         "Minimum amount of time to wait before resending an alert to Alertmanager."},
        {"alertmanager.notification-queue-capacity", BASE_FLAG_INT, &f->notify_queue_capacity,
         "The capacity of the queue for pending Alertmanager notifications."},
    };
    size_t nflags = 20;
    nflags += tsdb_db_flags(&tv, flags + nflags, TSDB_DB_NFLAGS);
    nflags += remote_flags(&rv, flags + nflags, REMOTE_NFLAGS);
    s.flag_table = flags;
    s.nflags = nflags;

    char err[1024] = "";
    int rc = base_flags_parse(flags, nflags, argc, argv, err, sizeof err);
    if (rc == 1) {
        base_flags_usage(stdout, "kelvin server [flags]",
                         "Scrapes the targets of a Prometheus configuration, stores the samples, and serves\n"
                         "Prometheus's HTTP API.",
                         flags, nflags);
        return 0;
    }
    if (rc) {
        fprintf(stderr, "kelvin server: %s (see --help)\n", err);
        return 2;
    }
    if (base_log_set_level(f->log_level) || base_log_set_format(f->log_format)) {
        fprintf(stderr, "kelvin server: invalid --log.level or --log.format\n");
        return 2;
    }
    tsdb_db_opts dbo;
    remote_opts rmo;
    remote_opts_default(&rmo);
    if (tsdb_db_flags_apply(&tv, &dbo, err, sizeof err) != 0 ||
        remote_flags_apply(&rv, &rmo, err, sizeof err) != 0) {
        fprintf(stderr, "kelvin server: %s (see --help)\n", err);
        return 2;
    }
    if (f->outage_tolerance_ms <= 0 || f->grace_period_ms < 0 || f->resend_delay_ms < 0 ||
        f->notify_queue_capacity <= 0 || f->notify_queue_capacity > 100000000) {
        fprintf(stderr,
                "kelvin server: --rules.alert.* and --alertmanager.notification-queue-capacity must be "
                "positive (see --help)\n");
        return 2;
    }
    if (f->lookback_ms <= 0 || f->query_timeout_ms <= 0 || f->query_max_concurrency <= 0 ||
        f->query_max_concurrency > 100000 || f->query_max_samples <= 0) {
        fprintf(stderr, "kelvin server: --query.lookback-delta, --query.timeout, --query.max-concurrency and "
                        "--query.max-samples must be positive (see --help)\n");
        return 2;
    }
    qo.lookback_ms = f->lookback_ms;
    qo.timeout_ms = f->query_timeout_ms;
    qo.max_concurrency = (unsigned)f->query_max_concurrency;
    qo.max_samples = (uint64_t)f->query_max_samples;
    qo.threads = f->query_threads < 1 ? 1 : f->query_threads > 16 ? 16 : (unsigned)f->query_threads;
    dbo.on_bad_block = on_bad_block;
    struct stat st;
    s.use_embedded = f->config_file == default_config_file && stat(default_config_file, &st) != 0;
    s.config_name = s.use_embedded ? "<embedded default>" : f->config_file;

    /* Check the configuration before anything is opened: a typo must not
     * cost a WAL replay. */
    cfg_config *first = NULL;
    if (load_config(&s, &first, err, sizeof err) != 0) {
        base_log(BASE_LOG_ERROR, "Error loading config", "file", s.config_name, "err", err, NULL);
        return 1;
    }
    if (s.use_embedded) { /* names the port, which is known once HTTP is bound: loaded again then */
        cfg_free(first);
        first = NULL;
    }
    if (s.use_embedded)
        base_log(BASE_LOG_WARN,
                 "no prometheus.yml here and no --config.file: using the embedded default "
                 "configuration (this server and a local agent on :9400)",
                 NULL);

    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGHUP);
    sigaddset(&sigs, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL); /* every thread created below inherits this */
    pthread_mutex_init(&s.reload_mu, NULL);
    pthread_rwlock_init(&s.cfg_lock, NULL);
    {
        struct timespec now;
        clock_gettime(CLOCK_REALTIME, &now);
        s.start_sec = now.tv_sec;
        s.start_nsec = now.tv_nsec;
        s.start_ms = (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
        if (!getcwd(s.cwd, sizeof s.cwd)) s.cwd[0] = '\0';
    }

    int exit_code = 1;
    tsdb_db_report rep;
    int64_t t0 = base_mono_ns();
    base_log(BASE_LOG_INFO, "Starting TSDB ...", "path", dbo.path, NULL);
    /* The WAL segments the remote_write queues have not finished stay
     * (the embedded default configuration has no remote_write). */
    dbo.wal.hold_from = first ? remote_hold_from(dbo.path, first) : 0;
    if ((rc = tsdb_db_open(&dbo, &s.db, &rep, err, sizeof err)) != 0) {
        base_log(BASE_LOG_ERROR, "Opening storage failed", "path", dbo.path, "err", err, NULL);
        goto out;
    }
    {
        char dur[32], series[24], blocks[24];
        snprintf(dur, sizeof dur, "%.3fs", (double)(base_mono_ns() - t0) / 1e9);
        snprintf(series, sizeof series, "%llu",
                 (unsigned long long)tsdb_head_series_count(tsdb_db_head(s.db)));
        snprintf(blocks, sizeof blocks, "%zu", rep.blocks);
        base_log(BASE_LOG_INFO, "TSDB started", "duration", dur, "head_series", series, "blocks", blocks,
                 NULL);
        if (rep.first_error[0])
            base_log(BASE_LOG_WARN, "storage repaired at open", "first_problem", rep.first_error, NULL);
    }
    s.dbo = dbo;
    s.wal_corruptions = rep.wal.corruptions;
    if ((rc = promql_engine_new(&qo, promql_storage_db(s.db), &s.engine)) != 0) {
        base_log(BASE_LOG_ERROR, "cannot start the query engine", "err", base_strerror(rc), NULL);
        goto out;
    }
    {
        notify_opts no;
        notify_opts_default(&no);
        no.queue_capacity = (size_t)f->notify_queue_capacity;
        if ((rc = notify_new(&no, &s.notify)) != 0) {
            base_log(BASE_LOG_ERROR, "cannot start the notifier", "err", base_strerror(rc), NULL);
            goto out;
        }
        rules_manager_opts ro = {.engine = s.engine,
                                 .storage = promql_storage_db(s.db),
                                 .head = tsdb_db_head(s.db),
                                 .notify = notify_rules,
                                 .notify_ctx = &s,
                                 .resend_delay_ms = f->resend_delay_ms,
                                 .outage_tolerance_ms = f->outage_tolerance_ms,
                                 .for_grace_period_ms = f->grace_period_ms};
        if ((rc = rules_manager_new(&ro, &s.rules)) != 0) {
            base_log(BASE_LOG_ERROR, "cannot start the rule manager", "err", base_strerror(rc), NULL);
            goto out;
        }
    }

    /* Queries run on the HTTP threads: enough of them that slow queries
     * leave room for health checks and scrapes of /metrics. */
    http_server_opts hs = {.listen_address = f->listen,
                           .max_body = (size_t)f->max_body,
                           .threads = 16,
                           .web_config_file = f->web_config_file[0] ? f->web_config_file : NULL};
    if ((rc = http_server_start(&hs, server__handle, &s, &s.http, err, sizeof err)) != 0) {
        base_log(BASE_LOG_ERROR, "cannot serve HTTP", "err", err, NULL);
        goto out;
    }
    s.port = http_server_port(s.http);
    external_url(&s);

    scrape_opts so = {.db = s.db, .threads = (unsigned)f->scrape_threads, .identity = f->listen};
    if ((rc = scrape_manager_new(&so, &s.scrape, err, sizeof err)) != 0) {
        base_log(BASE_LOG_ERROR, "cannot start the scrape manager", "err", err, NULL);
        goto out;
    }
    rmo.data_dir = dbo.path;
    rmo.db = s.db;
    rmo.metadata = remote_metadata;
    rmo.metadata_ctx = &s;
    if ((rc = remote_manager_new(&rmo, &s.remote, err, sizeof err)) != 0) {
        base_log(BASE_LOG_ERROR, "cannot start remote write", "err", err, NULL);
        goto out;
    }
    disc_opts dopt = {.sink = disc_to_scrape, .sink_ctx = &s};
    if ((rc = disc_manager_new(&dopt, &s.disc, err, sizeof err)) != 0) {
        base_log(BASE_LOG_ERROR, "cannot start service discovery", "err", err, NULL);
        goto out;
    }
    {
        pthread_mutex_lock(&s.reload_mu);
        int64_t t1 = base_mono_ns();
        rc = first ? 0 : load_config(&s, &first, err, sizeof err);
        rc = apply_config(&s, first, rc, t1, err, sizeof err);
        first = NULL; /* apply_config owns it */
        pthread_mutex_unlock(&s.reload_mu);
        if (rc != 0) goto out;
    }
    s.ready = 1;
    {
        char port[16];
        snprintf(port, sizeof port, "%u", s.port);
        base_log(BASE_LOG_INFO, "Server is ready to receive web requests.", "address", f->listen, "port",
                 port, "version", KELVIN_VERSION, NULL);
    }

    for (;;) {
        int sig = 0;
        sigwait(&sigs, &sig);
        if (sig == SIGPIPE) continue;
        if (sig == SIGHUP) {
            server__reload(&s, err, sizeof err); /* logged inside */
            continue;
        }
        base_log(BASE_LOG_INFO, "Received termination request, exiting gracefully...", "signal",
                 sig == SIGINT ? "SIGINT" : "SIGTERM", NULL);
        break;
    }
    exit_code = 0;

out:
    s.ready = 0;
    http_server_stop(s.http);
    /* the rules first (their last round may still notify), then the
     * notifier, which drains its queue within a bound */
    rules_manager_free(s.rules);
    s.rules = NULL;
    notify_free(s.notify);
    s.notify = NULL;
    disc_manager_free(s.disc);
    /* remote write flushes (bounded by --storage.remote.flush-deadline)
     * and saves its positions; its metadata source is the scrape manager */
    remote_manager_free(s.remote);
    s.remote = NULL;
    scrape_manager_free(s.scrape);
    if (s.engine) promql_engine_free(s.engine);
    if (s.db && tsdb_db_close(s.db) != 0) {
        base_log(BASE_LOG_ERROR, "closing the TSDB failed", NULL);
        exit_code = 1;
    }
    cfg_free(first); /* when start-up failed before running it */
    cfg_free(s.cfg);
    pthread_rwlock_destroy(&s.cfg_lock);
    pthread_mutex_destroy(&s.reload_mu);
    if (exit_code == 0) base_log(BASE_LOG_INFO, "See you next time!", NULL);
    return exit_code;
}
