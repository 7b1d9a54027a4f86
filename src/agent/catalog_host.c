/* catalog_host.c -- the host section of the metric catalog (see catalog.h). */
#include "agent/catalog.h"

static const agent_metric metrics[] = {
    {"kelvin_placeholder_host", EXPO_GAUGE, "", "placeholder", "", ""},
};

const agent_catalog_section agent_catalog_host = {
    .title = "host",
    .collector = "host",
    .entity_labels = "",
    .intro = "",
    .metrics = metrics,
    .count = sizeof metrics / sizeof metrics[0],
};
