/* server.h -- `kelvin server`: scrape, store and serve, as Prometheus does.
 *
 * The process: flags with Prometheus's names, the configuration (with
 * reload on SIGHUP and POST /-/reload), discovery feeding the scrape
 * manager, the TSDB, the PromQL engine, and the HTTP endpoints (/-/healthy,
 * /-/ready, /-/reload, /metrics and Prometheus 2.42's HTTP API under
 * /api/v1/: query, query_range, series, labels, label values, metadata,
 * targets, status, admin; see api.c).
 */
#ifndef KELVIN_SERVER_SERVER_H
#define KELVIN_SERVER_SERVER_H

/* `kelvin server [flags]`: argv[0] is "server". Returns the exit status. */
int server_main(int argc, char **argv);

#endif
