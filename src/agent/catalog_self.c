/* catalog_self.c -- the agent's metrics about itself (see catalog.h).
 * The process_* families are client_golang's standard process collector,
 * so the usual "exporter overhead" dashboards work on kelvin too. */
#include "agent/catalog.h"

static const agent_metric metrics[] = {
    {"kelvin_agent_build_info", EXPO_GAUGE, "",
     "A metric with a constant '1' value labeled by the kelvin version.", "version", "compiled in"},
    {"kelvin_agent_collector_duration_seconds", EXPO_GAUGE, "seconds",
     "Wall time of the collector's last cycle, rendering included.", "collector", "agent core"},
    {"kelvin_agent_collector_cpu_seconds_total", EXPO_COUNTER, "seconds",
     "CPU time spent in the collector's cycles, rendering included.", "collector",
     "clock_gettime(CLOCK_THREAD_CPUTIME_ID)"},
    {"kelvin_agent_collector_cycles_total", EXPO_COUNTER, "", "Collection cycles run.", "collector",
     "agent core"},
    {"kelvin_agent_collector_errors_total", EXPO_COUNTER, "",
     "Collection cycles that failed as a whole (the previous snapshot was kept).", "collector", "agent core"},
    {"kelvin_agent_collector_last_success_timestamp_seconds", EXPO_GAUGE, "seconds",
     "Unix time of the collector's last successful cycle.", "collector", "agent core"},
    {"kelvin_agent_collector_stale", EXPO_GAUGE, "",
     "1 if the collector's last snapshot is too old and is left out of scrapes (a hung driver call, say).",
     "collector", "agent core"},
    {"kelvin_agent_collector_samples", EXPO_GAUGE, "", "Samples in the collector's last snapshot.",
     "collector", "agent core"},
    {"kelvin_agent_scrapes_total", EXPO_COUNTER, "", "Scrapes of the telemetry path served.", "",
     "agent core"},
    {"kelvin_agent_resident_memory_peak_bytes", EXPO_GAUGE, "bytes", "Peak resident memory size in bytes.",
     "", "/proc/self/status VmHWM"},
    {"process_cpu_seconds_total", EXPO_COUNTER, "seconds", "Total user and system CPU time spent in seconds.",
     "", "/proc/self/stat"},
    {"process_max_fds", EXPO_GAUGE, "", "Maximum number of open file descriptors.", "", "/proc/self/limits"},
    {"process_open_fds", EXPO_GAUGE, "", "Number of open file descriptors.", "", "/proc/self/fd"},
    {"process_resident_memory_bytes", EXPO_GAUGE, "bytes", "Resident memory size in bytes.", "",
     "/proc/self/stat"},
    {"process_start_time_seconds", EXPO_GAUGE, "seconds",
     "Start time of the process since unix epoch in seconds.", "", "/proc/self/stat"},
    {"process_virtual_memory_bytes", EXPO_GAUGE, "bytes", "Virtual memory size in bytes.", "",
     "/proc/self/stat"},
};

const agent_catalog_section agent_catalog_self = {
    .title = "The agent itself",
    .collector = "agent",
    .entity_labels = "",
    .intro = "What the agent costs and whether each collector is keeping up. Collection runs off the HTTP "
             "threads; a collector whose snapshot is older than five cycles (at least 10 s) is left out of "
             "scrapes and reported here as stale, rather than served as if it were current.",
    .metrics = metrics,
    .count = sizeof metrics / sizeof metrics[0],
};
