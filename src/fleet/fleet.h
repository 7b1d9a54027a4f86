/* fleet.h -- `kelvin sim fleet`: many simulated GPU nodes from one process.
 *
 * Serves N simulated nodes (the agent's simulated GPUs and host metrics,
 * each node its own seed, hostname and values) on one listen address, one
 * node per path (/node/<i>/metrics), and writes a file_sd file that lists
 * them (Prometheus, VictoriaMetrics and kelvin server read it unchanged).
 * Built for load: bodies are rendered once per update interval and shared
 * by every scrape until the next, so the simulator is never the bottleneck.
 */
#ifndef KELVIN_FLEET_FLEET_H
#define KELVIN_FLEET_FLEET_H

/* `kelvin sim ...`: argv[0] is "sim", argv[1] the subcommand ("fleet"). */
int fleet_sim_main(int argc, char **argv);

#endif
