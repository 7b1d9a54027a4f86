/* server.h -- `kelvin server`: scrape, store and serve, as Prometheus does.
 *
 * The process: flags with Prometheus's names, the configuration (with
 * reload on SIGHUP and POST /-/reload), discovery feeding the scrape
 * manager, the TSDB, and the HTTP endpoints (/-/healthy, /-/ready,
 * /api/v1/targets, /api/v1/targets/metadata, /api/v1/metadata, /metrics).
 */
#ifndef KELVIN_SERVER_SERVER_H
#define KELVIN_SERVER_SERVER_H

/* `kelvin server [flags]`: argv[0] is "server". Returns the exit status. */
int server_main(int argc, char **argv);

#endif
