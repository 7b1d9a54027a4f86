/* notify.h -- the notifier: alerts to Alertmanager, as Prometheus 2.42's
 * notifier package sends them (notifier/notifier.go).
 *
 * FLOW. The rule evaluator hands alerts to notify_send (2.42's
 * Manager.Send). Each alert gets the config's external labels that it
 * does not have itself (its own labels win; an empty value counts as
 * absent), then alerting.alert_relabel_configs; an alert a rule drops is
 * gone. The rest go to the end of a bounded queue (queue_capacity,
 * --alertmanager.notification-queue-capacity, 10000): when they do not
 * fit, the oldest are dropped (from the call's own alerts first when the
 * call alone is larger than the queue) and counted in `dropped`.
 *
 * One sender thread takes batches of at most NOTIFY_MAX_BATCH (64) alerts
 * from the head of the queue and POSTs each batch, at once, to every
 * alertmanager of every set (libcurl's multi interface), each request
 * bounded by its set's timeout, with its set's HTTP client settings
 * (basic auth, authorization, TLS, proxy, redirects). The body is JSON:
 * API v2 (models.PostableAlerts) or, for a set with api_version v1 (2.42
 * still supports it), the v1 list of alerts; the URL is
 * scheme://address + path_prefix + "/api/<version>/alerts". As in 2.42 a
 * batch counts as delivered when at least one alertmanager (of any set)
 * answered 2xx; otherwise its alerts are counted in `dropped` (also when
 * no alertmanager is known at all). Alerts are not retried: the rule
 * evaluator resends firing alerts.
 *
 * ALERTMANAGERS. Discovery runs each alerting.alertmanagers[i]'s service
 * discovery as the set "alertmanager/<i>" and the server forwards its
 * groups to notify_sync. Each target becomes an alertmanager as 2.42's
 * alertmanagerFromGroup does: its labels, __scheme__ (the set's scheme)
 * and __alerts_path__ (path_prefix + "/api/v2/alerts", path-joined), the
 * group's labels it does not have, then the set's relabel_configs; one
 * that a rule drops is listed as dropped (URL from its labels before
 * relabeling); a kept one's URL is __scheme__://__address__ +
 * __alerts_path__ (Go's url.URL.String()). An address with a "/" fails
 * the whole group ("... is not a valid hostname"), as does an address
 * without a port whose scheme is neither http nor https ("invalid scheme");
 * 2.42 adds ":80"/":443" only for that check, not to the URL. Active URLs
 * are deduplicated within a set. The notifier keeps each set's last groups,
 * so a reload that changes a set's settings recomputes its alertmanagers
 * at once (2.42 waits for discovery's next update).
 *
 * METRICS (notify_stats_get; the server renders them under 2.42's names
 * and help texts):
 *   prometheus_notifications_sent_total{alertmanager}    counter
 *       "Total number of alerts sent."  (2.42 counts a batch's alerts
 *       whether or not the request succeeded)
 *   prometheus_notifications_errors_total{alertmanager}  counter
 *       "Total number of errors sending alert notifications." (requests)
 *   prometheus_notifications_latency_seconds{alertmanager} summary
 *       "Latency quantiles for sending alert notifications."
 *       quantiles 0.5 0.9 0.99 over the last 10 minutes, _sum, _count
 *   prometheus_notifications_dropped_total               counter
 *       "Total number of alerts dropped due to errors when sending to
 *       Alertmanager."
 *   prometheus_notifications_queue_length                gauge
 *       "The number of alert notifications in the queue."
 *   prometheus_notifications_queue_capacity              gauge
 *       "The capacity of the alert notifications queue."
 *   prometheus_notifications_alertmanagers_discovered    gauge
 *       "The number of alertmanagers discovered and active."
 * The per-alertmanager series appear (at 0) when the alertmanager is
 * discovered and stay, as 2.42's do.
 *
 * SHUTDOWN. notify_free stops taking alerts; with drain_on_shutdown (the
 * later --alertmanager.drain-notification-queue-on-shutdown, default on;
 * 2.42 itself drops the queue) the sender goes on sending what is queued
 * for at most drain_timeout_ms, then cancels what is in flight.
 *
 * LOGGING. The sender thread logs (base/log.h) a failing alertmanager once
 * per distinct error and its recovery; a group that yields no
 * alertmanagers because of an error, once per distinct error.
 *
 * THREADS. Every function may be called from any thread, concurrently;
 * none blocks on the network (notify_free waits for the drain).
 */
#ifndef KELVIN_NOTIFY_NOTIFY_H
#define KELVIN_NOTIFY_NOTIFY_H

#include <stddef.h>
#include <stdint.h>

#include "config/config.h"
#include "discovery/discovery.h"
#include "rules/eval.h"

#define NOTIFY_MAX_BATCH 64 /* alerts per request (2.42's maxBatchSize) */

typedef struct notify_manager notify_manager;

typedef struct notify_opts {
    size_t queue_capacity;    /* alerts; 0 means 10000 */
    int drain_on_shutdown;    /* 1 */
    int64_t drain_timeout_ms; /* the most notify_free spends draining; 10000 */
    const char *user_agent;   /* NULL: "Kelvin/<version>" */
} notify_opts;
void notify_opts_default(notify_opts *o);

/* Starts the sender thread (no alertmanagers yet). 0, BASE_E_NOMEM or
 * BASE_E_IO (libcurl or the thread could not start). */
int notify_new(const notify_opts *o, notify_manager **ret);

/* On start and on every reload: external labels, alert relabeling, the
 * alertmanager sets (their scheme, path_prefix, timeout, api_version, HTTP
 * client and relabel_configs; discovery is the caller's). The groups that
 * notify_sync gave for a set are kept across reloads. cfg may be NULL (no
 * alerting). 0, or BASE_E_NOMEM / BASE_E_INVAL (a relabel rule that does
 * not copy) with a message, and the previous configuration stays. */
int notify_apply_config(notify_manager *m, const cfg_config *cfg, char *err, size_t errlen);

/* Discovery's sink for the sets "alertmanager/<i>" (other names are kept
 * too, and used once a configuration has a set of that name): all groups
 * of the set; n == 0 forgets the set's groups. The groups are copied
 * (label sets referenced), the caller keeps its own. */
void notify_sync(notify_manager *m, const char *set, const disc_group *const *groups, size_t n);

/* Queues alerts (2.42's Send): see FLOW above. The alerts are copied; the
 * caller keeps its own. A start or end of 0 is "not set" (Go's zero
 * time). Never blocks on the network. */
void notify_send(notify_manager *m, const rules_notice *alerts, size_t n);

/* The URLs of the active (deduplicated) and dropped alertmanagers, set by
 * set in configuration order, for /api/v1/alertmanagers. On success the
 * caller owns both arrays (free with notify_strv_free; an empty list is
 * NULL with count 0). 0 or BASE_E_NOMEM (nothing written). */
int notify_alertmanagers(notify_manager *m, char ***ret_active, size_t *ret_nactive, char ***ret_dropped,
                         size_t *ret_ndropped);
void notify_strv_free(char **v, size_t n);

/* The latency summary's quantiles. */
#define NOTIFY_NQUANTILES 3
extern const double notify_quantiles[NOTIFY_NQUANTILES]; /* 0.5, 0.9, 0.99 */

typedef struct notify_am_stats {
    char *url;                           /* the alertmanager label */
    uint64_t sent;                       /* alerts (see METRICS) */
    uint64_t errors;                     /* failed requests */
    uint64_t latency_count;              /* requests */
    double latency_sum;                  /* seconds, from the batch's start to the answer */
    double latency_q[NOTIFY_NQUANTILES]; /* NaN when no request in the last 10 minutes */
} notify_am_stats;

typedef struct notify_stats {
    uint64_t dropped;
    size_t queue_length, queue_capacity;
    size_t alertmanagers_discovered; /* active, over all sets */
    notify_am_stats *ams;            /* sorted by url */
    size_t nams;
} notify_stats;

/* Fills *ret (free with notify_stats_free). 0 or BASE_E_NOMEM. */
int notify_stats_get(notify_manager *m, notify_stats *ret);
void notify_stats_free(notify_stats *s);

/* Stops the sender (draining as opts say), frees everything. NULL is fine. */
void notify_free(notify_manager *m);

#endif
