/* agent.c -- `kelvin agent`: flags, wiring, HTTP routes, lifecycle.
 *
 * Threads: one per collector group ("gpu": NVML, so a hung driver call
 * delays only GPU data; "host": /proc and /sys; "app": StatsD, pushes and
 * the agent's own metrics), the StatsD receiver, the XID watchers, and the
 * HTTP pool. main waits for SIGINT/SIGTERM, then stops HTTP first (no
 * scrape sees a half-freed collector), then the groups, then frees.
 *
 * Routes: GET <telemetry path> (text 0.0.4 or OpenMetrics by Accept, gzip by
 * Accept-Encoding), PUT/POST/DELETE /metrics/job/... (Pushgateway API),
 * GET / (links), /health (dcgm-exporter's), /-/healthy, /-/ready.
 */
#include "agent/agent.h"

#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/catalog.h"
#include "agent/core.h"
#include "agent/gpu.h"
#include "agent/host.h"
#include "agent/push.h"
#include "agent/self.h"
#include "agent/statsd.h"
#include "base/buf.h"
#include "base/err.h"
#include "base/flag.h"
#include "base/log.h"
#include "http/http.h"

typedef struct agent_cfg {
    const char *listen, *telemetry_path, *log_level, *log_format, *web_config_file;
    int64_t interval_ms, host_interval_ms;
    const char *nvml_library, *simulate, *simulate_model, *counters_file, *kmsg_path;
    int64_t simulate_count;
    const char *procfs, *sysfs, *rootfs, *statsd_listen, *hostname;
    int64_t push_max_body, statsd_max_series;
    int print_catalog;
} agent_cfg;

typedef struct agent_app {
    agent_cfg cfg;
    agent_core *core;
    agent_push *push;
} agent_app;

static const char landing[] =
    "<!doctype html><html><head><title>Kelvin agent</title></head><body>"
    "<h1>Kelvin agent</h1><p>GPU, host and application metrics for Prometheus.</p>"
    "<ul><li><a href=\"metrics\">metrics</a></li><li><a href=\"health\">health</a></li></ul>"
    "<p>Pushgateway API: PUT/POST/DELETE /metrics/job/&lt;job&gt;{/&lt;label&gt;/&lt;value&gt;}</p>"
    "</body></html>\n";

static void handle(void *ctx, const http_request *req, http_response *resp) {
    agent_app *app = ctx;
    const char *m = req->method;
    int get = strcmp(m, "GET") == 0 || strcmp(m, "HEAD") == 0;
    if (strcmp(req->path, app->cfg.telemetry_path) == 0) {
        if (!get) {
            http_respond_text(resp, 405, "method not allowed\n");
            return;
        }
        expo_format fmt = http_prefers_openmetrics(req->accept) ? EXPO_FMT_OPENMETRICS : EXPO_FMT_TEXT;
        int gz = http_accepts_gzip(req->accept_encoding);
        agent_body *b;
        if (agent_core_body(app->core, fmt, gz, &b) != 0) {
            http_respond_text(resp, 500, "out of memory\n");
            return;
        }
        http_respond_owned(resp, 200, fmt == EXPO_FMT_OPENMETRICS ? EXPO_CT_OPENMETRICS : EXPO_CT_TEXT,
                           gz ? "gzip" : NULL, b->data, b->len, agent_body_unref, b);
        return;
    }
    if (strncmp(req->path, "/metrics/job", 12) == 0 &&
        (req->path[12] == '/' || req->path[12] == '@' || req->path[12] == '\0')) {
        base_buf out;
        base_buf_init(&out, 1 << 16);
        int status = 500;
        if (agent_push_handle(app->push, m, req->path, req->content_type, req->body, req->body_len, &status,
                              &out) != 0)
            status = 500;
        /* Read-your-writes, as with the Pushgateway: the next scrape after a
         * push (refused ones too: they set push_failure_time_seconds)
         * already carries it. */
        agent_core_refresh(app->core, "app", 2000);
        http_respond_buf(resp, status, "text/plain; charset=utf-8", &out);
        return;
    }
    if (get && strcmp(req->path, "/") == 0) {
        http_respond_text(resp, 200, landing);
        resp->content_type = "text/html; charset=utf-8";
        return;
    }
    if (get && (strcmp(req->path, "/health") == 0 || strcmp(req->path, "/-/healthy") == 0 ||
                strcmp(req->path, "/-/ready") == 0)) {
        http_respond_text(resp, 200, "OK\n");
        return;
    }
    http_respond_text(resp, 404, "404 page not found\n");
}

/* Finds the simulated NVML next to the binary (build tree or install). */
static int find_sim_library(char *out, size_t n) {
    char exe[PATH_MAX - 64];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len > 0) {
        exe[len] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash) *slash = '\0';
        const char *rel[] = {"sim/libnvidia-ml.so.1", "../lib/kelvin/sim/libnvidia-ml.so.1"};
        for (size_t i = 0; i < 2; i++) {
            if ((size_t)snprintf(out, n, "%s/%s", exe, rel[i]) >= n) continue;
            if (access(out, R_OK) == 0) return 0;
        }
    }
    const char *env = getenv("KELVIN_SIM_LIB");
    if (env && access(env, R_OK) == 0) {
        snprintf(out, n, "%s", env);
        return 0;
    }
    return BASE_E_NOTFOUND;
}

static const char *default_hostname(char *buf, size_t n) {
    const char *env = getenv("NODE_NAME");
    if (env && *env) return env;
    if (gethostname(buf, n) != 0) snprintf(buf, n, "localhost");
    buf[n - 1] = '\0';
    return buf;
}

int agent_main(int argc, char **argv) {
    agent_app app;
    memset(&app, 0, sizeof app);
    agent_cfg *cfg = &app.cfg;
    *cfg = (agent_cfg){
        .listen = ":9400",
        .telemetry_path = "/metrics",
        .web_config_file = "",
        .log_level = "info",
        .log_format = "logfmt",
        .interval_ms = 1000,
        .host_interval_ms = 5000,
        .nvml_library = "",
        .simulate = "",
        .simulate_model = "h100",
        .counters_file = "",
        .kmsg_path = "/dev/kmsg",
        .simulate_count = 8,
        .procfs = "/proc",
        .sysfs = "/sys",
        .rootfs = "/",
        .statsd_listen = ":8125",
        .hostname = "",
        .push_max_body = 16 << 20,
        .statsd_max_series = 10000,
    };
    const base_flag flags[] = {
        {"web.listen-address", BASE_FLAG_STRING, &cfg->listen,
         "Address on which to expose metrics and the push API."},
        {"web.telemetry-path", BASE_FLAG_STRING, &cfg->telemetry_path, "Path under which to expose metrics."},
        {"web.config.file", BASE_FLAG_STRING, &cfg->web_config_file,
         "Path to a configuration file that can enable TLS or authentication (Prometheus's web config); "
         "read again when it changes, but turning TLS on or off needs a restart."},
        {"log.level", BASE_FLAG_STRING, &cfg->log_level,
         "Only log messages with the given severity or above: debug, info, warn, error."},
        {"log.format", BASE_FLAG_STRING, &cfg->log_format, "Output format of log messages: logfmt or json."},
        {"collect.interval", BASE_FLAG_DURATION, &cfg->interval_ms,
         "How often GPU fields, StatsD and push metrics are collected into the snapshot."},
        {"collect.host-interval", BASE_FLAG_DURATION, &cfg->host_interval_ms,
         "How often host metrics (/proc, /sys) are collected. Host counters move slowly next to GPU fields "
         "and are scraped every 15-60 s; 5 s keeps them fresh at a fifth of the cost."},
        {"nvml.library", BASE_FLAG_STRING, &cfg->nvml_library,
         "Path of libnvidia-ml.so.1 (default: the system's)."},
        {"gpu.simulate", BASE_FLAG_STRING, &cfg->simulate,
         "Use simulated GPUs instead of NVML: healthy, cooling-failure, memory-leak, xid-storm, "
         "ecc-degradation, fell-off-bus."},
        {"gpu.simulate.count", BASE_FLAG_INT, &cfg->simulate_count, "Number of simulated GPUs."},
        {"gpu.simulate.model", BASE_FLAG_STRING, &cfg->simulate_model,
         "Simulated GPU model: h100, h200, a100, l4."},
        {"collector.gpu.counters-file", BASE_FLAG_STRING, &cfg->counters_file,
         "dcgm-exporter counters CSV selecting the GPU metrics (default: dcgm-exporter's default set plus "
         "Kelvin's)."},
        {"collector.xid.kmsg-path", BASE_FLAG_STRING, &cfg->kmsg_path,
         "Kernel log to watch for NVRM Xid lines (empty disables)."},
        {"path.procfs", BASE_FLAG_STRING, &cfg->procfs, "procfs mountpoint."},
        {"path.sysfs", BASE_FLAG_STRING, &cfg->sysfs, "sysfs mountpoint."},
        {"path.rootfs", BASE_FLAG_STRING, &cfg->rootfs, "rootfs mountpoint."},
        {"statsd.listen-udp", BASE_FLAG_STRING, &cfg->statsd_listen,
         "UDP address of the StatsD/DogStatsD listener (empty disables)."},
        {"statsd.max-series", BASE_FLAG_INT, &cfg->statsd_max_series,
         "Most StatsD series kept; lines creating more are dropped and counted."},
        {"push.max-body-size", BASE_FLAG_SIZE, &cfg->push_max_body, "Largest push body accepted."},
        {"hostname", BASE_FLAG_STRING, &cfg->hostname,
         "Value of the Hostname label on GPU metrics (default: $NODE_NAME, else the host name)."},
        {"print-catalog", BASE_FLAG_BOOL, &cfg->print_catalog,
         "Print the Markdown reference of every metric (docs/metrics.md) and exit."},
    };
    const size_t nflags = sizeof flags / sizeof flags[0];
    char err[512] = "";
    int rc = base_flags_parse(flags, nflags, argc, argv, err, sizeof err);
    if (rc == 1) {
        base_flags_usage(stdout, "kelvin agent [flags]",
                         "Serves GPU (NVML), host (/proc, /sys) and application (StatsD, push) metrics on\n"
                         "/metrics with dcgm-exporter's and node_exporter's names.",
                         flags, nflags);
        return 0;
    }
    if (rc) {
        fprintf(stderr, "kelvin agent: %s (see --help)\n", err);
        return 2;
    }
    if (base_log_set_level(cfg->log_level) || base_log_set_format(cfg->log_format)) {
        fprintf(stderr, "kelvin agent: invalid --log.level or --log.format\n");
        return 2;
    }
    if (cfg->print_catalog) {
        base_buf b;
        base_buf_init(&b, 0);
        agent_catalog_markdown(&b);
        fwrite(b.data, 1, b.len, stdout);
        base_buf_free(&b);
        return 0;
    }
    char hostbuf[256];
    const char *hostname = *cfg->hostname ? cfg->hostname : default_hostname(hostbuf, sizeof hostbuf);

    char simlib[PATH_MAX];
    const char *nvml_library = *cfg->nvml_library ? cfg->nvml_library : NULL;
    if (*cfg->simulate) {
        if (!nvml_library) {
            if (find_sim_library(simlib, sizeof simlib) != 0) {
                base_log(
                    BASE_LOG_ERROR,
                    "the simulated NVML library (sim/libnvidia-ml.so.1) was not found next to the binary",
                    NULL);
                return 1;
            }
            nvml_library = simlib;
        }
        char count[24];
        snprintf(count, sizeof count, "%lld", (long long)cfg->simulate_count);
        setenv("KELVIN_SIM_SCENARIO", cfg->simulate, 1);
        setenv("KELVIN_SIM_GPUS", count, 1);
        setenv("KELVIN_SIM_MODEL", cfg->simulate_model, 1);
        base_log(BASE_LOG_WARN, "using SIMULATED GPUs, not real hardware", "scenario", cfg->simulate, "count",
                 count, "model", cfg->simulate_model, "library", nvml_library, NULL);
    }

    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL); /* every thread created below inherits this */

    int exit_code = 1;
    agent_gpu *gpu = NULL;
    agent_host *host = NULL;
    agent_statsd *statsd = NULL;
    agent_self *self = NULL;
    http_server *http = NULL;
    if (agent_core_new(&app.core) != 0) return 1;

    agent_gpu_opts gopts = {
        .nvml_library = nvml_library,
        .counters_file = *cfg->counters_file ? cfg->counters_file : NULL,
        .hostname = hostname,
        .kmsg_path = *cfg->kmsg_path ? cfg->kmsg_path : NULL,
        .procfs = cfg->procfs,
        .simulated = *cfg->simulate != '\0',
        .interval_ms = cfg->interval_ms,
    };
    if ((rc = agent_gpu_new(&gopts, &gpu, err, sizeof err)) != 0) {
        base_log(BASE_LOG_ERROR, "GPU collector failed to start", "err", err, NULL);
        goto out;
    }
    agent_host_opts hopts = {.procfs = cfg->procfs, .sysfs = cfg->sysfs, .rootfs = cfg->rootfs};
    if ((rc = agent_host_new(&hopts, &host, err, sizeof err)) != 0) {
        base_log(BASE_LOG_ERROR, "host collector failed to start", "err", err, NULL);
        goto out;
    }
    agent_statsd_opts sopts;
    agent_statsd_opts_init(&sopts);
    sopts.listen_udp = *cfg->statsd_listen ? cfg->statsd_listen : NULL;
    sopts.max_series = (size_t)cfg->statsd_max_series;
    if ((rc = agent_statsd_new(&sopts, &statsd, err, sizeof err)) != 0) {
        base_log(BASE_LOG_ERROR, "StatsD listener failed to start", "err", err, NULL);
        goto out;
    }
    agent_push_opts popts;
    agent_push_opts_init(&popts);
    popts.max_body = (size_t)cfg->push_max_body;
    if ((rc = agent_push_new(&popts, &app.push, err, sizeof err)) != 0) {
        base_log(BASE_LOG_ERROR, "push endpoint failed to start", "err", err, NULL);
        goto out;
    }
    if ((rc = agent_self_new(app.core, cfg->procfs, &self)) != 0) goto out;

    const agent_collector cols[] = {
        {"gpu", agent_gpu_collect, gpu},          {"host", agent_host_collect, host},
        {"statsd", agent_statsd_collect, statsd}, {"push", agent_push_collect, app.push},
        {"agent", agent_self_collect, self},
    };
    const char *groups[] = {"gpu", "host", "app", "app", "app"};
    for (size_t i = 0; i < sizeof cols / sizeof cols[0]; i++) {
        int64_t iv = strcmp(groups[i], "host") == 0 ? cfg->host_interval_ms : cfg->interval_ms;
        if (agent_core_add(app.core, groups[i], iv, &cols[i]) != 0) goto out;
    }
    if (agent_core_start(app.core, 2000) != 0) goto out;

    http_server_opts hs = {.listen_address = cfg->listen,
                           .max_body = (size_t)cfg->push_max_body,
                           .threads = 2,
                           .web_config_file = *cfg->web_config_file ? cfg->web_config_file : NULL};
    if ((rc = http_server_start(&hs, handle, &app, &http, err, sizeof err)) != 0) {
        base_log(BASE_LOG_ERROR, "cannot serve HTTP", "err", err, NULL);
        goto out;
    }
    char port[16];
    snprintf(port, sizeof port, "%u", http_server_port(http));
    base_log(BASE_LOG_INFO, "kelvin agent listening", "address", cfg->listen, "port", port, "telemetry_path",
             cfg->telemetry_path, "version", KELVIN_VERSION, NULL);

    int sig = 0;
    do sigwait(&sigs, &sig);
    while (sig == SIGPIPE);
    base_log(BASE_LOG_INFO, "shutting down", "signal", sig == SIGINT ? "SIGINT" : "SIGTERM", NULL);
    exit_code = 0;

out:
    http_server_stop(http);
    agent_core_free(app.core);
    agent_self_free(self);
    agent_push_free(app.push);
    agent_statsd_free(statsd);
    agent_host_free(host);
    agent_gpu_free(gpu);
    return exit_code;
}
