/* catalog_gpu.c -- the gpu section of the metric catalog (see catalog.h). */
#include "agent/catalog.h"

static const agent_metric metrics[] = {
    {"kelvin_placeholder_gpu", EXPO_GAUGE, "", "placeholder", "", ""},
};

const agent_catalog_section agent_catalog_gpu = {
    .title = "gpu",
    .collector = "gpu",
    .entity_labels = "",
    .intro = "",
    .metrics = metrics,
    .count = sizeof metrics / sizeof metrics[0],
};
