/* catalog.h -- the one catalog of every metric the agent can serve.
 *
 * Each collector's metrics are a section (catalog_<collector>.c); the
 * collectors take names, types and help text from here, so the catalog is
 * the truth and docs/metrics.md is generated from it
 * (`kelvin agent --print-catalog`; a test checks the two agree).
 *
 * Naming: metrics that dcgm-exporter or node_exporter also export keep
 * their names, types, help and units exactly, so dashboards and alert rules
 * work unchanged. Kelvin's own metrics follow Prometheus conventions:
 * `kelvin_<area>_<what>_<unit>` with base units (_celsius, _watts,
 * _bytes, _seconds, _joules, _ratio) and `_total` on counters.
 */
#ifndef KELVIN_AGENT_CATALOG_H
#define KELVIN_AGENT_CATALOG_H

#include <stddef.h>

#include "base/buf.h"
#include "expo/expo.h"

typedef struct agent_metric {
    const char *name;
    expo_type type;
    const char *unit;   /* what one unit of the value is: "C", "W", "MHz", "MiB", "bytes", "seconds", "ratio",
                           "%", "" */
    const char *help;   /* exactly the HELP text served */
    const char *labels; /* labels beyond the section's entity labels, comma-separated, "" for none */
    const char *source; /* where the number comes from: NVML call or field id, /proc or /sys file */
} agent_metric;

typedef struct agent_catalog_section {
    const char *title;         /* "GPU: dcgm-exporter's metrics" */
    const char *collector;     /* "gpu", "host", ... */
    const char *entity_labels; /* labels every metric of the section carries */
    const char *intro;         /* a paragraph for the docs */
    const agent_metric *metrics;
    size_t count;
} agent_catalog_section;

/* The sections, defined in catalog_*.c. */
extern const agent_catalog_section agent_catalog_gpu;
extern const agent_catalog_section agent_catalog_host;
extern const agent_catalog_section agent_catalog_app;
extern const agent_catalog_section agent_catalog_self;

/* All sections in documentation order. */
const agent_catalog_section *const *agent_catalog_sections(size_t *ret_n);
/* The entry for name, or NULL. */
const agent_metric *agent_catalog_find(const char *name);
/* The OpenMetrics UNIT of a kelvin_* metric whose name ends in its unit
 * ("celsius", "watts", ...), else NULL: dcgm-exporter's names carry no
 * unit suffix, and OpenMetrics requires the name to end in the unit. */
const char *agent_metric_om_unit(const agent_metric *m);
/* Writes the Markdown reference (docs/metrics.md). */
void agent_catalog_markdown(base_buf *out);

#endif
