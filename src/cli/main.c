/* main.c -- the `kelvin` binary: one program, one subcommand per job.
 *
 * Dispatches argv[1] to the subcommand's entry point; each subcommand owns
 * its flags and its --help. Nothing else lives here.
 */
#include <stdio.h>
#include <string.h>

#include "agent/agent.h"
#include "fleet/fleet.h"
#include "server/server.h"
#include "tools/tools.h"

typedef struct {
    const char *name;
    int (*main)(int argc, char **argv);
    const char *summary;
} command;

static const command commands[] = {
    {"agent", agent_main, "run on every GPU node: GPU, host and application metrics on /metrics"},
    {"server", server_main, "scrape a prometheus.yml's targets, store the samples, serve the API"},
    {"check", tools_check_main, "promtool's checks: check config|rules|web-config FILE..."},
    {"query", tools_query_main, "PromQL against a server's API, as promtool query: query [range] EXPR"},
    {"test", tools_test_main, "promtool's rule unit tests: test rules FILE..."},
    {"tsdb", tools_tsdb_main, "promtool's tsdb tools for Kelvin's blocks: backfill, dump, analyze, list"},
    {"rules", tools_rules_main, "rules backtest: which alerts would have fired over stored history"},
    {"sim", fleet_sim_main, "simulators for demos, tests and benchmarks: sim fleet (many GPU nodes)"},
};

static void usage(FILE *out) {
    fprintf(out,
            "usage: kelvin <command> [flags]\n\nKelvin %s: observability for GPU clusters.\n\ncommands:\n",
            KELVIN_VERSION);
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(out, "\n'kelvin <command> --help' shows a command's flags.\n");
}

int main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "help") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "version") == 0) {
        printf("kelvin version %s\n", KELVIN_VERSION);
        return 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(argv[1], commands[i].name) == 0) return commands[i].main(argc - 1, argv + 1);
    fprintf(stderr, "kelvin: unknown command %s\n\n", argv[1]);
    usage(stderr);
    return 2;
}
