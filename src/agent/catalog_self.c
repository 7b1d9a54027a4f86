/* catalog_self.c -- the self section of the metric catalog (see catalog.h). */
#include "agent/catalog.h"

static const agent_metric metrics[] = {
    {"kelvin_placeholder_self", EXPO_GAUGE, "", "placeholder", "", ""},
};

const agent_catalog_section agent_catalog_self = {
    .title = "self",
    .collector = "self",
    .entity_labels = "",
    .intro = "",
    .metrics = metrics,
    .count = sizeof metrics / sizeof metrics[0],
};
