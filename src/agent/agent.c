/* agent.c -- placeholder until the agent core lands. */
#include "agent/agent.h"

int agent_main(int argc, char **argv) {
    (void)argc;
    (void)argv;
    return 0;
}
