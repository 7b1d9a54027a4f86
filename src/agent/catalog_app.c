/* catalog_app.c -- the app section of the metric catalog (see catalog.h). */
#include "agent/catalog.h"

static const agent_metric metrics[] = {
    {"kelvin_placeholder_app", EXPO_GAUGE, "", "placeholder", "", ""},
};

const agent_catalog_section agent_catalog_app = {
    .title = "app",
    .collector = "app",
    .entity_labels = "",
    .intro = "",
    .metrics = metrics,
    .count = sizeof metrics / sizeof metrics[0],
};
