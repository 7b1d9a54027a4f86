/* statsd.h -- the agent's StatsD / DogStatsD receiver.
 *
 * A training loop reports loss, step time or tokens/s with any StatsD
 * client (python3-statsd, datadog, statsd-ruby ...); the agent keeps the
 * aggregated values and serves them on /metrics exactly as Prometheus's
 * statsd_exporter does by default, so dashboards move over unchanged:
 *
 *   line       name:value|type[|@rate][|#tag:val,tag2:val2]   (several
 *              lines per datagram, separated by '\n'; DogStatsD's
 *              name:v1:v2:v3|ms packs several timer values into one line)
 *   c          counter: value / rate added; negative values rejected
 *   g          gauge: set, or added when the value is signed (+3, -3)
 *   ms         timer: observed in seconds (value / 1000) in a histogram
 *   h, d       histogram, distribution: observed as is in a histogram
 *   s          set: gauge of the number of distinct values seen
 *   tags       DogStatsD (|#k:v,k2:v2), InfluxDB (name,k=v,k2=v2),
 *              Librato (name#k=v,k2=v2), SignalFx (na[k=v,k2=v2]me)
 *   names      every character outside [a-zA-Z0-9_] becomes '_' (a run
 *              of '-' becomes one '_'), a leading digit gets a '_'
 *              prefix; tag names likewise; no suffix is added, so a
 *              counter `steps` is served as `steps`, as statsd_exporter
 *              serves it
 *   _e{..}, _sc|..   DogStatsD events and service checks: accepted,
 *              counted, ignored
 *
 * A name keeps the type it first arrived with; a sample of another type
 * (or one whose histogram suffixes would collide) is rejected and counted
 * in kelvin_statsd_conflicts_total until the series expire. Every
 * rejected sample is counted under kelvin_statsd_malformed_total{reason}
 * or kelvin_statsd_dropped_total{reason} and never disturbs other series.
 * Series not updated for ttl_ms are removed.
 *
 * Threads: agent_statsd_new() starts one receiver thread (recvmmsg
 * batches) when a listen address is given. agent_statsd_feed() and
 * agent_statsd_collect() may be called from any thread; one mutex guards
 * the series table.
 */
#ifndef KELVIN_AGENT_STATSD_H
#define KELVIN_AGENT_STATSD_H

#include <stddef.h>
#include <stdint.h>

#include "expo/expo.h"

typedef struct agent_statsd agent_statsd;

typedef struct agent_statsd_opts {
    /* "host:port", ":port" (all interfaces, IPv6 and IPv4), "[::1]:port";
     * port 0 picks a free port (see agent_statsd_port()). NULL or "": no
     * socket and no thread, input only through agent_statsd_feed(). */
    const char *listen_udp;
    /* Limits; 0 selects the default shown. */
    size_t max_series;     /* 10000: series (name + label set) held at once */
    size_t max_tags;       /* 32: distinct tags on one line */
    size_t max_name_len;   /* 256: bytes of a metric name as received */
    size_t max_tag_len;    /* 512: bytes of one tag, name and value */
    size_t max_packet;     /* 65535: bytes of one datagram */
    size_t max_set_values; /* 1000: distinct values a set counts */
    /* Histogram upper bounds, strictly increasing and finite; NULL selects
     * Prometheus's default (.005 .01 .025 .05 .1 .25 .5 1 2.5 5 10). The
     * array is copied. At most 64 bounds. */
    const double *buckets;
    size_t nbuckets;
    /* Series idle for longer than this are removed; 0 selects 5 minutes,
     * a negative value keeps series forever. */
    int64_t ttl_ms;
} agent_statsd_opts;

/* Fills opts with the defaults (no listen address). */
void agent_statsd_opts_init(agent_statsd_opts *opts);

/* Creates the receiver and, with a listen address, binds the socket and
 * starts its thread. Returns 0 and sets *ret, or BASE_E_INVAL (bad
 * options or address), BASE_E_IO (socket, bind, thread) or BASE_E_NOMEM,
 * with a message in err (may be NULL). The caller frees with
 * agent_statsd_free(). */
int agent_statsd_new(const agent_statsd_opts *opts, agent_statsd **ret, char *err, size_t errlen);

/* Stops the thread, closes the socket, frees everything. NULL is a no-op. */
void agent_statsd_free(agent_statsd *s);

/* The bound UDP port, or 0 without a socket. */
int agent_statsd_port(const agent_statsd *s);

/* Processes one datagram's worth of lines (packet need not be
 * NUL-terminated). Counted as one packet; a packet longer than max_packet
 * is dropped whole. */
void agent_statsd_feed(agent_statsd *s, const char *packet, size_t n);

/* agent_collect_fn: drops series idle past the TTL, then adds the
 * kelvin_statsd_* self metrics and every StatsD series to ms (families
 * sorted by name, series by labels). ctx is the agent_statsd. Returns 0
 * or ms's sticky error. */
int agent_statsd_collect(void *ctx, expo_mset *ms);

/* Like agent_statsd_collect() with the clock given (tests of expiry). */
int agent_statsd_collect_at(agent_statsd *s, expo_mset *ms, int64_t now_mono_ms);

#endif
