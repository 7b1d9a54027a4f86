/* fleet.c -- `kelvin sim fleet` (and the dispatch to `kelvin sim history`,
 * history.c): flags, the node table, the body cache, HTTP
 * routes, the file_sd file, lifecycle.
 *
 * Each node (fnode) is a simulated GPU node (fleet_gpu.c) plus a
 * synthesised host (fleet_host.c), its own hostname (node-<i>) and seed.
 * Time is cut into generations of --update-interval since start; model time
 * of generation g is g x interval. The first request for a node in a new
 * generation advances that node (model step, host values) into its two
 * metric sets under the node's lock; each (format, gzip) body is then
 * rendered at most once per generation, on first demand, and kept in the
 * node as a refcounted fleet_body that every scrape of the generation
 * shares: the HTTP layer sends it as is and drops its reference when done
 * (no copy per scrape), and the node drops its own when the next
 * generation replaces it. Formats nobody asks for are never rendered, so
 * 200 nodes scraped by one Prometheus cost one OpenMetrics render and one
 * gzip per node per interval.
 *
 * Routes: GET /node/<i>/metrics (text 0.0.4 or OpenMetrics by Accept, gzip
 * by Accept-Encoding), /nodes (the file_sd JSON, usable as http_sd too),
 * /-/healthy, /-/ready, / (a short page). Anything else is 404.
 *
 * Threads: main waits for SIGINT/SIGTERM; the HTTP pool serves. Stop
 * order: HTTP first (no request sees a freed node), then the nodes.
 * Limits: --nodes <= FLEET_MAX_NODES, --gpus <= SIM_MAX_GPUS; gzip
 * compressors are a fixed pool.
 */
#include "fleet/fleet.h"

#include <libdeflate.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/flag.h"
#include "base/log.h"
#include "base/num.h"
#include "base/time.h"
#include "expo/expo.h"
#include "fleet/fleet_int.h"
#include "fleet/history_int.h"
#include "http/http.h"

#define FLEET_MAX_NODES 10000
#define FLEET_GZ_POOL   8

/* A refcounted body shared by the scrapes of one generation. */
typedef struct fleet_body {
    atomic_int refs;
    size_t len;
    char data[];
} fleet_body;

static void body_unref(void *p) {
    fleet_body *b = p;
    if (b && atomic_fetch_sub(&b->refs, 1) == 1) free(b);
}

static fleet_body *body_new(size_t cap) {
    fleet_body *b = malloc(sizeof *b + cap + 1);
    if (!b) return NULL;
    atomic_init(&b->refs, 1);
    b->len = 0;
    return b;
}

typedef struct fnode {
    pthread_mutex_t mu;
    unsigned index;
    char hostname[32];
    fleet_gpus *gpus;
    fleet_host *host;
    int64_t gen; /* generation the sets hold; -1 = none yet */
    expo_mset gms, hms;
    fleet_body *body[2][2]; /* [format][gzip], for gen; NULL = not rendered */
} fnode;

typedef struct gz_slot {
    pthread_mutex_t mu;
    struct libdeflate_compressor *c;
} gz_slot;

typedef struct fleet_cfg {
    int64_t nodes, gpus, seed, threads;
    int64_t interval_ms;
    const char *listen, *sd_file, *scenario, *model, *log_level, *log_format;
} fleet_cfg;

typedef struct fleet_app {
    fleet_cfg cfg;
    fnode *nodes;
    size_t n;
    fleet_host_tmpl *tmpl;
    int64_t start_ns, interval_ns;
    gz_slot gz[FLEET_GZ_POOL];
    char *sd_json;
    size_t sd_len;
    atomic_uint_fast64_t scrapes;
} fleet_app;

/* ---- bodies --------------------------------------------------------------- */

static fleet_body *gzip_body(fleet_app *app, const fleet_body *in) {
    gz_slot *s = NULL;
    for (int i = 0; i < FLEET_GZ_POOL && !s; i++)
        if (pthread_mutex_trylock(&app->gz[i].mu) == 0) s = &app->gz[i];
    if (!s) {
        s = &app->gz[0];
        pthread_mutex_lock(&s->mu);
    }
    /* level 1, as the agent: the bodies still shrink ~10x */
    if (!s->c) s->c = libdeflate_alloc_compressor(1);
    fleet_body *out = NULL;
    if (s->c) {
        size_t cap = libdeflate_gzip_compress_bound(s->c, in->len);
        out = body_new(cap);
        if (out) {
            out->len = libdeflate_gzip_compress(s->c, in->data, in->len, out->data, cap);
            if (out->len == 0) {
                free(out);
                out = NULL;
            }
        }
    }
    pthread_mutex_unlock(&s->mu);
    return out;
}

/* Moves the node to generation gen: model step, new sets, old bodies dropped. */
static int advance(fleet_app *app, fnode *nd, int64_t gen) {
    for (int f = 0; f < 2; f++)
        for (int z = 0; z < 2; z++) {
            body_unref(nd->body[f][z]);
            nd->body[f][z] = NULL;
        }
    expo_mset_reset(&nd->gms);
    expo_mset_reset(&nd->hms);
    nd->gen = -1;
    double t = (double)gen * (double)app->cfg.interval_ms / 1000.0;
    int rc = fleet__gpus_fill(nd->gpus, t, &nd->gms);
    if (rc == 0) rc = fleet__host_fill(nd->host, t, &nd->hms);
    if (rc != 0) {
        expo_mset_reset(&nd->gms);
        expo_mset_reset(&nd->hms);
        return rc;
    }
    nd->gen = gen;
    return 0;
}

static int render(fnode *nd, expo_format fmt, fleet_body **ret) {
    base_buf b;
    base_buf_init(&b, 0);
    if (base_buf_reserve(&b, 256 * 1024) != 0) return BASE_E_NOMEM;
    expo_mset *sets[2] = {&nd->gms, &nd->hms};
    int rc = expo_write(sets, 2, fmt, &b);
    if (rc == 0) rc = base_buf_err(&b);
    fleet_body *out = rc == 0 ? body_new(b.len) : NULL;
    if (rc == 0 && !out) rc = BASE_E_NOMEM;
    if (rc == 0) {
        memcpy(out->data, b.data, b.len);
        out->len = b.len;
        *ret = out;
    }
    base_buf_free(&b);
    return rc;
}

/* The node's body for this moment; *ret holds one reference for the caller. */
static int node_body(fleet_app *app, fnode *nd, expo_format fmt, int gz, fleet_body **ret) {
    int64_t gen = (base_mono_ns() - app->start_ns) / app->interval_ns;
    int rc = 0;
    pthread_mutex_lock(&nd->mu);
    if (nd->gen != gen) rc = advance(app, nd, gen);
    if (rc == 0 && !nd->body[fmt][0]) rc = render(nd, fmt, &nd->body[fmt][0]);
    if (rc == 0 && gz && !nd->body[fmt][1]) {
        nd->body[fmt][1] = gzip_body(app, nd->body[fmt][0]);
        if (!nd->body[fmt][1]) rc = BASE_E_NOMEM;
    }
    if (rc == 0) {
        fleet_body *b = nd->body[fmt][gz ? 1 : 0];
        atomic_fetch_add(&b->refs, 1);
        *ret = b;
    }
    pthread_mutex_unlock(&nd->mu);
    return rc;
}

/* ---- HTTP ------------------------------------------------------------------ */

/* "/node/<i>/metrics" -> i; -1 for anything else. */
static long node_of_path(const char *p, size_t nnodes) {
    static const char pre[] = "/node/", post[] = "/metrics";
    if (strncmp(p, pre, sizeof pre - 1) != 0) return -1;
    const char *d = p + sizeof pre - 1, *e = d;
    while (*e >= '0' && *e <= '9' && e - d < 12) e++;
    if (e == d || strcmp(e, post) != 0 || (e - d > 1 && *d == '0')) return -1;
    uint64_t i;
    if (base_parse_u64(d, (size_t)(e - d), &i) != 0 || i >= nnodes) return -1;
    return (long)i;
}

static const char landing[] =
    "<!doctype html><html><head><title>Kelvin simulated fleet</title></head><body>"
    "<h1>Kelvin simulated fleet</h1><p>SIMULATED GPU nodes, one per path: /node/&lt;i&gt;/metrics.</p>"
    "<ul><li><a href=\"nodes\">nodes</a> (file_sd JSON)</li><li><a href=\"node/0/metrics\">node 0</a></li>"
    "</ul></body></html>\n";

static void handle(void *ctx, const http_request *req, http_response *resp) {
    fleet_app *app = ctx;
    int get = strcmp(req->method, "GET") == 0 || strcmp(req->method, "HEAD") == 0;
    long i = node_of_path(req->path, app->n);
    if (i >= 0) {
        if (!get) {
            http_respond_text(resp, 405, "method not allowed\n");
            return;
        }
        expo_format fmt = http_prefers_openmetrics(req->accept) ? EXPO_FMT_OPENMETRICS : EXPO_FMT_TEXT;
        int gz = http_accepts_gzip(req->accept_encoding);
        fleet_body *b;
        int rc = node_body(app, &app->nodes[i], fmt, gz, &b);
        if (rc != 0) {
            http_respond_text(resp, 500, rc == BASE_E_NOMEM ? "out of memory\n" : "simulation failed\n");
            return;
        }
        atomic_fetch_add(&app->scrapes, 1);
        http_respond_owned(resp, 200, fmt == EXPO_FMT_OPENMETRICS ? EXPO_CT_OPENMETRICS : EXPO_CT_TEXT,
                           gz ? "gzip" : NULL, b->data, b->len, body_unref, b);
        return;
    }
    if (get && strcmp(req->path, "/nodes") == 0) {
        http_respond_owned(resp, 200, "application/json", NULL, app->sd_json, app->sd_len, NULL, NULL);
        return;
    }
    if (get && (strcmp(req->path, "/-/healthy") == 0 || strcmp(req->path, "/-/ready") == 0)) {
        http_respond_text(resp, 200, "OK\n");
        return;
    }
    if (get && strcmp(req->path, "/") == 0) {
        http_respond_text(resp, 200, landing);
        resp->content_type = "text/html; charset=utf-8";
        return;
    }
    http_respond_text(resp, 404, "404 page not found\n");
}

/* ---- the file_sd document --------------------------------------------------- */

/* host:port scrapers should use: the listen host, loopback for a wildcard. */
static void target_of(const char *listen, unsigned port, char *out, size_t n) {
    const char *colon = strrchr(listen, ':');
    size_t hl = colon ? (size_t)(colon - listen) : 0;
    const char *host = "127.0.0.1";
    char hbuf[128];
    if (hl > 0 && hl < sizeof hbuf) {
        memcpy(hbuf, listen, hl);
        hbuf[hl] = '\0';
        if (strcmp(hbuf, "0.0.0.0") == 0)
            host = "127.0.0.1";
        else if (strcmp(hbuf, "[::]") == 0)
            host = "[::1]";
        else
            host = hbuf;
    }
    snprintf(out, n, "%s:%u", host, port);
}

static int build_sd(fleet_app *app, const char *target) {
    base_buf b;
    base_buf_init(&b, 0);
    base_buf_puts(&b, "[\n");
    for (size_t i = 0; i < app->n; i++) {
        char path[48];
        snprintf(path, sizeof path, "/node/%zu/metrics", i);
        base_buf_puts(&b, "  {\"targets\": [");
        base_buf_json_str(&b, target, strlen(target));
        base_buf_puts(&b, "], \"labels\": {\"__metrics_path__\": ");
        base_buf_json_str(&b, path, strlen(path));
        base_buf_puts(&b, ", \"node\": ");
        base_buf_json_str(&b, app->nodes[i].hostname, strlen(app->nodes[i].hostname));
        base_buf_puts(&b, i + 1 < app->n ? "}},\n" : "}}\n");
    }
    base_buf_puts(&b, "]\n");
    if (base_buf_err(&b)) {
        base_buf_free(&b);
        return BASE_E_NOMEM;
    }
    app->sd_json = base_buf_steal(&b, &app->sd_len);
    return app->sd_json ? 0 : BASE_E_NOMEM;
}

/* Writes the file whole (temp file + rename), so a watcher never reads half. */
static int write_sd(const char *path, const char *data, size_t len, char *err, size_t errlen) {
    char tmp[4096];
    if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp", path) >= sizeof tmp)
        return base_errf(err, errlen, BASE_E_RANGE, "%s: path too long", path);
    FILE *f = fopen(tmp, "w");
    if (!f) return base_errf(err, errlen, BASE_E_IO, "%s: cannot create", tmp);
    int ok = fwrite(data, 1, len, f) == len;
    ok = fclose(f) == 0 && ok;
    if (!ok || rename(tmp, path) != 0) {
        remove(tmp);
        return base_errf(err, errlen, BASE_E_IO, "%s: cannot write", path);
    }
    return 0;
}

/* ---- nodes ----------------------------------------------------------------- */

static int nodes_new(fleet_app *app, const sim_config *base_cfg, char *err, size_t errlen) {
    app->nodes = calloc(app->n, sizeof *app->nodes);
    if (!app->nodes) return BASE_E_NOMEM;
    double start_unix = (double)base_unix_ms() / 1000.0;
    for (size_t i = 0; i < app->n; i++) {
        fnode *nd = &app->nodes[i];
        pthread_mutex_init(&nd->mu, NULL);
        nd->index = (unsigned)i;
        nd->gen = -1;
        expo_mset_init(&nd->gms);
        expo_mset_init(&nd->hms);
        snprintf(nd->hostname, sizeof nd->hostname, "node-%zu", i);
        sim_config cfg = *base_cfg;
        cfg.seed = fleet__mix((uint64_t)app->cfg.seed * 1000003u + i);
        /* a quarter of the fleet serves inference, the rest trains */
        cfg.workload = i % 4 == 3 ? SIM_WORKLOAD_INFERENCE : SIM_WORKLOAD_TRAINING;
        int rc = fleet__gpus_new(&cfg, nd->hostname, &nd->gpus, err, errlen);
        if (rc == 0) rc = fleet__host_new(app->tmpl, cfg.seed, nd->hostname, start_unix, &nd->host);
        if (rc != 0) return rc;
    }
    return 0;
}

static void nodes_free(fleet_app *app) {
    if (!app->nodes) return;
    for (size_t i = 0; i < app->n; i++) {
        fnode *nd = &app->nodes[i];
        for (int f = 0; f < 2; f++)
            for (int z = 0; z < 2; z++) body_unref(nd->body[f][z]);
        expo_mset_free(&nd->gms);
        expo_mset_free(&nd->hms);
        fleet__gpus_free(nd->gpus);
        fleet__host_free(nd->host);
        pthread_mutex_destroy(&nd->mu);
    }
    free(app->nodes);
    app->nodes = NULL;
}

/* ---- main ------------------------------------------------------------------ */

static const char usage_line[] = "kelvin sim fleet [flags]";
static const char summary[] =
    "Serves many SIMULATED GPU nodes from one process, one per path (/node/<i>/metrics), with the\n"
    "agent's metric names (dcgm-exporter's, node_exporter's, kelvin_gpu_*), and writes a file_sd\n"
    "JSON file listing them for Prometheus, VictoriaMetrics or kelvin server. For load tests.";

static int run(fleet_app *app) {
    fleet_cfg *cfg = &app->cfg;
    char err[512] = "";
    sim_config sc;
    sim_config_init(&sc);
    sc.model = sim_model_find(cfg->model, strlen(cfg->model));
    if (!sc.model) {
        fprintf(stderr, "kelvin sim fleet: unknown --model %s (h100, h200, a100, l4, rtx6000ada)\n",
                cfg->model);
        return 2;
    }
    if (sim_scenario_parse(cfg->scenario, strlen(cfg->scenario), &sc.scenario) != 0) {
        fprintf(stderr,
                "kelvin sim fleet: unknown --scenario %s (healthy, cooling-failure, memory-leak, xid-storm, "
                "ecc-degradation, fell-off-bus)\n",
                cfg->scenario);
        return 2;
    }
    if (cfg->nodes < 1 || cfg->nodes > FLEET_MAX_NODES || cfg->gpus < 0 || cfg->gpus > SIM_MAX_GPUS ||
        cfg->interval_ms < 100 || cfg->threads < 1 || cfg->threads > 64 || cfg->seed < 0) {
        fprintf(stderr,
                "kelvin sim fleet: --nodes must be 1..%d, --gpus 0..%d, --update-interval >= 100ms, "
                "--threads 1..64, --seed >= 0\n",
                FLEET_MAX_NODES, SIM_MAX_GPUS);
        return 2;
    }
    sc.gpu_count = (unsigned)cfg->gpus;
    app->n = (size_t)cfg->nodes;
    app->interval_ns = cfg->interval_ms * 1000000;

    int rc = fleet__gpu_catalog_check(err, sizeof err);
    if (rc == 0) rc = fleet__host_tmpl_new(&app->tmpl, err, sizeof err);
    if (rc == 0) rc = nodes_new(app, &sc, err, sizeof err);
    if (rc != 0) {
        base_log(BASE_LOG_ERROR, "cannot create the simulated nodes", "err", *err ? err : base_strerror(rc),
                 NULL);
        return 1;
    }

    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL); /* the HTTP threads inherit it */

    app->start_ns = base_mono_ns();
    http_server *http = NULL;
    /* every node may be scraped at the same moment, by more than one scraper */
    http_server_opts hs = {.listen_address = cfg->listen,
                           .max_body = 4096,
                           .threads = (unsigned)cfg->threads,
                           .max_connections = (unsigned)(2 * cfg->nodes + 64)};
    if ((rc = http_server_start(&hs, handle, app, &http, err, sizeof err)) != 0) {
        base_log(BASE_LOG_ERROR, "cannot listen", "address", cfg->listen, "err", err, NULL);
        return 1;
    }
    char target[160];
    target_of(cfg->listen, http_server_port(http), target, sizeof target);
    rc = build_sd(app, target);
    if (rc == 0 && *cfg->sd_file) rc = write_sd(cfg->sd_file, app->sd_json, app->sd_len, err, sizeof err);
    if (rc != 0) {
        base_log(BASE_LOG_ERROR, "cannot write the file_sd file", "file", cfg->sd_file, "err",
                 *err ? err : base_strerror(rc), NULL);
        http_server_stop(http);
        return 1;
    }
    char nodes[24], series[24], interval[24];
    snprintf(nodes, sizeof nodes, "%zu", app->n);
    snprintf(series, sizeof series, "%zu", fleet__host_tmpl_series(app->tmpl));
    snprintf(interval, sizeof interval, "%lldms", (long long)cfg->interval_ms);
    base_log(BASE_LOG_WARN, "serving a SIMULATED fleet, not real hardware", "nodes", nodes, "address", target,
             "sd_file", cfg->sd_file, "scenario", cfg->scenario, "update_interval", interval, "host_series",
             series, NULL);

    int sig = 0;
    do sigwait(&sigs, &sig);
    while (sig == SIGPIPE);
    char served[24];
    snprintf(served, sizeof served, "%llu", (unsigned long long)atomic_load(&app->scrapes));
    base_log(BASE_LOG_INFO, "shutting down", "signal", sig == SIGINT ? "SIGINT" : "SIGTERM", "scrapes",
             served, NULL);
    http_server_stop(http);
    return 0;
}

int fleet_sim_main(int argc, char **argv) {
    fleet_app *app = calloc(1, sizeof *app);
    if (!app) return 1;
    fleet_cfg *cfg = &app->cfg;
    *cfg = (fleet_cfg){.nodes = 200,
                       .gpus = 8,
                       .seed = 1,
                       .threads = 4,
                       .interval_ms = 1000,
                       .listen = "127.0.0.1:9500",
                       .sd_file = "",
                       .scenario = "healthy",
                       .model = "h100",
                       .log_level = "info",
                       .log_format = "logfmt"};
    const base_flag flags[] = {
        {"nodes", BASE_FLAG_INT, &cfg->nodes, "Number of simulated nodes (1..10000)."},
        {"listen", BASE_FLAG_STRING, &cfg->listen,
         "Address to serve the nodes on (port 0 picks a free one)."},
        {"sd-file", BASE_FLAG_STRING, &cfg->sd_file,
         "Write a file_sd JSON file listing the nodes here (empty: none; /nodes serves it too)."},
        {"gpus", BASE_FLAG_INT, &cfg->gpus, "Simulated GPUs per node (0..16)."},
        {"model", BASE_FLAG_STRING, &cfg->model, "Simulated GPU model: h100, h200, a100, l4, rtx6000ada."},
        {"scenario", BASE_FLAG_STRING, &cfg->scenario,
         "Scenario of every node: healthy, cooling-failure, memory-leak, xid-storm, ecc-degradation, "
         "fell-off-bus."},
        {"update-interval", BASE_FLAG_DURATION, &cfg->interval_ms,
         "How often each node's values change (bodies are rendered at most once per interval)."},
        {"seed", BASE_FLAG_INT, &cfg->seed, "Seed of the fleet; node i's seed derives from it and i."},
        {"threads", BASE_FLAG_INT, &cfg->threads, "HTTP serving threads."},
        {"log.level", BASE_FLAG_STRING, &cfg->log_level,
         "Only log messages with the given severity or above: debug, info, warn, error."},
        {"log.format", BASE_FLAG_STRING, &cfg->log_format, "Output format of log messages: logfmt or json."},
    };
    const size_t nflags = sizeof flags / sizeof flags[0];
    int ret;
    if (argc >= 2 && strcmp(argv[1], "history") == 0) {
        ret = fleet__history_main(argc - 1, argv + 1);
        goto out;
    }
    if (argc < 2 || strcmp(argv[1], "fleet") != 0) {
        int help = argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0);
        FILE *out = help ? stdout : stderr;
        fprintf(out,
                "usage: kelvin sim fleet|history [flags]\n\nSubcommands:\n  fleet    %s\n  history  %s\n",
                "serve many simulated GPU nodes for load tests (see kelvin sim fleet --help)",
                "write a failure scenario's simulated telemetry into storage blocks, days in seconds (see "
                "kelvin sim history --help)");
        ret = help ? 0 : 2;
        goto out;
    }
    char err[512] = "";
    int rc = base_flags_parse(flags, nflags, argc - 1, argv + 1, err, sizeof err);
    if (rc == 1) {
        base_flags_usage(stdout, usage_line, summary, flags, nflags);
        ret = 0;
        goto out;
    }
    if (rc) {
        fprintf(stderr, "kelvin sim fleet: %s (see --help)\n", err);
        ret = 2;
        goto out;
    }
    if (base_log_set_level(cfg->log_level) || base_log_set_format(cfg->log_format)) {
        fprintf(stderr, "kelvin sim fleet: invalid --log.level or --log.format\n");
        ret = 2;
        goto out;
    }
    for (int i = 0; i < FLEET_GZ_POOL; i++) pthread_mutex_init(&app->gz[i].mu, NULL);
    ret = run(app);
    nodes_free(app);
    fleet__host_tmpl_free(app->tmpl);
    for (int i = 0; i < FLEET_GZ_POOL; i++) {
        if (app->gz[i].c) libdeflate_free_compressor(app->gz[i].c);
        pthread_mutex_destroy(&app->gz[i].mu);
    }
    free(app->sd_json);
out:
    free(app);
    return ret;
}
