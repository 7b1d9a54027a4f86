/* push.h -- a Pushgateway-compatible push endpoint inside the agent.
 *
 * Batch jobs and training loops push with the clients they already use
 * (prometheus_client's push_to_gateway / pushadd_to_gateway /
 * delete_from_gateway, curl, client_golang's push package); the agent
 * serves what was pushed on its own /metrics as Prometheus Pushgateway 1.5
 * serves it on its /metrics:
 *
 *   path      /metrics/job/<job>{/<label>/<value>}: the grouping key.
 *             `<name>@base64/<value>` (and `job@base64/<job>`) carry a
 *             value in base64url (RFC 4648, '=' padding optional), so it
 *             may contain '/' or be empty.
 *   PUT       replaces every metric family of the group.
 *   POST      replaces the families whose names are pushed.
 *   DELETE    removes the group (202 even when there was none).
 *   body      text format 0.0.4 (what push_to_gateway sends); OpenMetrics
 *             1.0 when the Content-Type says application/openmetrics-text;
 *             protobuf is refused with 415.
 *   labels    every pushed series gets the grouping labels (their values
 *             win over pushed ones) and `instance=""` when it has no
 *             instance label; labels are served sorted by name.
 *   groups    each has push_time_seconds (last successful change) and
 *             push_failure_time_seconds (last refused change; a refused
 *             push of a new group creates it with push_time_seconds 0).
 *   checks    as the Pushgateway's consistency check, a push is refused
 *             (400, nothing changes, failure time set) when a sample has a
 *             timestamp, a family's type differs from the same name in
 *             other groups, a histogram or summary collides with a
 *             _count/_sum/_bucket family, a series occurs twice (in the
 *             push or across groups), a summary gets a `quantile` grouping
 *             label (or a histogram an `le` one), or a family is named
 *             like the agent's own metrics (DCGM_*, node_*, kelvin_*,
 *             anything in the catalog). Families of one name from
 *             different groups are served as one family; its HELP is the
 *             most recently pushed one.
 *   limits    body size (413), groups, series per group, series in all
 *             (400); a refused push never changes what is served.
 *
 * Status codes: 200 push accepted, 202 delete accepted, 400 bad path,
 * body or push, 404 not a push path, 405 other methods, 413 body too
 * large, 415 protobuf. Error bodies are one line of text ending in '\n'.
 *
 * Thread-safety: agent_push_handle() may run on any number of HTTP
 * threads while agent_push_collect() runs on the collector thread; one
 * mutex guards the store, and bodies are parsed outside it.
 */
#ifndef KELVIN_AGENT_PUSH_H
#define KELVIN_AGENT_PUSH_H

#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "expo/expo.h"

typedef struct agent_push agent_push;

typedef struct agent_push_opts {
    /* Limits; 0 selects the default shown. */
    size_t max_body;             /* 16 MiB: bytes of one push body */
    size_t max_groups;           /* 1000: grouping keys held */
    size_t max_series_per_group; /* 10000: series of one group */
    size_t max_series;           /* 100000: series of all groups */
    size_t max_labels;           /* 64: labels of one pushed series */
    size_t max_path;             /* 8192: bytes of the request path */
} agent_push_opts;

/* Fills opts with the defaults. */
void agent_push_opts_init(agent_push_opts *opts);

/* Creates an empty store. Returns 0 and sets *ret, or BASE_E_NOMEM /
 * BASE_E_INVAL (bad options, catalog entries missing) with a message in
 * err (may be NULL). The caller frees with agent_push_free(). */
int agent_push_new(const agent_push_opts *opts, agent_push **ret, char *err, size_t errlen);

void agent_push_free(agent_push *p);

/* Handles one request. method: "PUT", "POST", "DELETE", ...; path: the
 * decoded URL path ("/metrics/job/train/instance/n1"); content_type: the
 * request's Content-Type header or NULL; body/len: the request body (need
 * not be NUL-terminated). Writes the HTTP status to *ret_status and
 * appends the response text (empty on success) to ret_body. Returns 0
 * when a response was produced (every status above), or BASE_E_NOMEM
 * (answer 500; nothing changed). */
int agent_push_handle(agent_push *p, const char *method, const char *path, const char *content_type,
                      const char *body, size_t len, int *ret_status, base_buf *ret_body);

/* agent_collect_fn: adds the kelvin_push_* self metrics and every pushed
 * family, push_time_seconds and push_failure_time_seconds to ms (families
 * sorted by name, series as the Pushgateway sorts them). ctx is the
 * agent_push. Returns 0 or ms's sticky error. */
int agent_push_collect(void *ctx, expo_mset *ms);

#endif
