/* server_int.h -- the server's state, shared by server.c (wiring, reload)
 * and routes.c (HTTP). */
#ifndef KELVIN_SERVER_SERVER_INT_H
#define KELVIN_SERVER_SERVER_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "config/config.h"
#include "discovery/discovery.h"
#include "http/http.h"
#include "scrape/scrape.h"
#include "tsdb/db.h"

typedef struct server_flags {
    const char *config_file, *listen, *log_level, *log_format;
    int lifecycle, admin_api;
    int64_t max_body, scrape_threads;
} server_flags;

typedef struct server {
    server_flags flags;
    int use_embedded;        /* no file: the embedded default configuration */
    const char *config_name; /* for logs */
    unsigned port;           /* bound HTTP port */
    tsdb_db *db;
    scrape_manager *scrape;
    disc_manager *disc;
    http_server *http;
    pthread_mutex_t reload_mu; /* one reload at a time */
    pthread_rwlock_t cfg_lock; /* readers of cfg (routes) vs the swap */
    cfg_config *cfg;           /* the running configuration */
    atomic_int ready;          /* 1 once the first configuration runs, 0 from shutdown on */
    atomic_int reload_ok;
    atomic_llong reload_success_ms;
    int64_t start_ms;
    atomic_ullong reloads, reload_failures;
} server;

/* Loads and applies the configuration file again (see server.c). 0, or an
 * error with the reason in err; the running configuration stays on error. */
int server__reload(server *s, char *err, size_t errlen);
/* The HTTP routes (routes.c). */
void server__handle(void *ctx, const http_request *req, http_response *resp);

#endif
