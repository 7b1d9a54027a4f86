/* catalog_app.c -- the application-metrics section of the metric catalog
 * (see catalog.h): the self metrics of the StatsD receiver (statsd.c) and
 * of the Pushgateway-compatible push endpoint (push.c), and the two
 * per-group families the Pushgateway itself serves.
 *
 * The metrics applications send are not listed: their names are the
 * applications' (StatsD names mapped as statsd_exporter maps them, pushed
 * families as pushed). statsd.c and push.c look their own families up here
 * by name when they start, so a rename in this table is a rename on
 * /metrics.
 */
#include "agent/catalog.h"

#define SRC_STATSD "StatsD/DogStatsD datagrams received on --statsd.listen-udp"
#define SRC_PUSH   "pushes to /metrics/job/<job>{/<label>/<value>} (Pushgateway API)"

static const agent_metric metrics[] = {
    {"kelvin_statsd_packets_total", EXPO_COUNTER, "", "StatsD datagrams received.", "", SRC_STATSD},
    {"kelvin_statsd_lines_total", EXPO_COUNTER, "", "Non-empty StatsD lines received.", "", SRC_STATSD},
    {"kelvin_statsd_samples_total", EXPO_COUNTER, "", "StatsD samples parsed (a line carries one or more).",
     "", SRC_STATSD},
    {"kelvin_statsd_malformed_total", EXPO_COUNTER, "",
     "StatsD lines or samples rejected as malformed, by reason.", "reason", SRC_STATSD},
    {"kelvin_statsd_tag_errors_total", EXPO_COUNTER, "",
     "StatsD tags ignored because they were empty, had no value or a reserved name.", "", SRC_STATSD},
    {"kelvin_statsd_dropped_total", EXPO_COUNTER, "",
     "StatsD datagrams, lines or samples dropped because a limit was reached, by reason.", "reason",
     SRC_STATSD},
    {"kelvin_statsd_conflicts_total", EXPO_COUNTER, "",
     "StatsD samples rejected because their name is already served with another type, by the "
     "sample's type.",
     "type", SRC_STATSD},
    {"kelvin_statsd_ignored_total", EXPO_COUNTER, "",
     "DogStatsD events and service checks received and ignored, by kind.", "kind", SRC_STATSD},
    {"kelvin_statsd_series", EXPO_GAUGE, "", "StatsD series currently served.", "", SRC_STATSD},
    {"kelvin_statsd_expired_total", EXPO_COUNTER, "",
     "StatsD series removed because they were not updated within the TTL.", "", SRC_STATSD},
    {"kelvin_statsd_receive_errors_total", EXPO_COUNTER, "", "Errors reading from the StatsD UDP socket.", "",
     SRC_STATSD},
    {"kelvin_push_requests_total", EXPO_COUNTER, "",
     "Push API requests answered, by method and HTTP status code.", "method,code", SRC_PUSH},
    {"kelvin_push_rejected_total", EXPO_COUNTER, "", "Push API requests rejected, by reason.", "reason",
     SRC_PUSH},
    {"kelvin_push_groups", EXPO_GAUGE, "", "Push groups (grouping keys) currently held.", "", SRC_PUSH},
    {"kelvin_push_series", EXPO_GAUGE, "",
     "Pushed series currently held (a histogram or summary counts once).", "", SRC_PUSH},
    {"push_time_seconds", EXPO_GAUGE, "seconds",
     "Last Unix time when changing this group in the Pushgateway succeeded.",
     "job,instance,<grouping labels>", SRC_PUSH},
    {"push_failure_time_seconds", EXPO_GAUGE, "seconds",
     "Last Unix time when changing this group in the Pushgateway failed.", "job,instance,<grouping labels>",
     SRC_PUSH},
};

const agent_catalog_section agent_catalog_app = {
    .title = "Application metrics: StatsD and push",
    .collector = "statsd, push",
    .entity_labels = "",
    .intro = "Training jobs report their own numbers (loss, step time, tokens/s) with existing clients: "
             "StatsD/DogStatsD over UDP (served as Prometheus's statsd_exporter serves them: dots and "
             "other invalid characters become `_`, counters keep their name, timers and "
             "distributions become histograms in seconds), or Pushgateway pushes "
             "(`push_to_gateway`), served with the job and grouping labels as the Pushgateway "
             "serves them. The families below are the receivers' own.",
    .metrics = metrics,
    .count = sizeof metrics / sizeof metrics[0],
};
