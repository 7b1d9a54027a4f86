/* self.h -- the collector of the agent's own metrics (catalog_self.c):
 * per-collector cost and health from the core, and the process_* family.
 * It runs in the "app" group, after the collectors it reports on. */
#ifndef KELVIN_AGENT_SELF_H
#define KELVIN_AGENT_SELF_H

#include "agent/core.h"
#include "expo/expo.h"

typedef struct agent_self agent_self;

/* core is borrowed and must outlive the collector. */
int agent_self_new(agent_core *core, const char *procfs, agent_self **ret);
int agent_self_collect(void *ctx, expo_mset *ms);
void agent_self_free(agent_self *s);

#endif
