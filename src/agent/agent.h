/* agent.h -- `kelvin agent`: the per-node exporter.
 *
 * agent_main() parses the agent's flags, loads NVML (or the simulated
 * library), starts the collectors on their own threads, and serves the
 * latest snapshot on /metrics until SIGINT/SIGTERM.
 */
#ifndef KELVIN_AGENT_AGENT_H
#define KELVIN_AGENT_AGENT_H

int agent_main(int argc, char **argv);

#endif
