/* notify_int.h -- the notifier's insides, shared by its files:
 *   encode.c   alerts as JSON (API v2 and v1), Go's time formats, URLs as
 *              Go's url.URL.String() writes them;
 *   targets.c  alertmanagers from discovered groups (2.42's
 *              alertmanagerFromGroup);
 *   send.c     one batch to many alertmanagers over libcurl's multi
 *              interface;
 *   manager.c  the queue, the configuration, the sets, the sender thread,
 *              the statistics.
 *
 * Ownership: a notify__alert owns its label set reference and its
 * strings; a notify__set owns its copied configuration and URL lists and
 * is reference counted (the sender holds a reference while it sends to
 * the set's alertmanagers; the manager's array holds one).
 */
#ifndef KELVIN_NOTIFY_NOTIFY_INT_H
#define KELVIN_NOTIFY_NOTIFY_INT_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "config/config.h"
#include "discovery/discovery.h"
#include "labels/labels.h"
#include "notify/notify.h"
#include "relabel/relabel.h"

/* Limits on what input can grow. */
#define NOTIFY__MAX_SETS_GROUPS  4096  /* sets whose groups are kept (names) */
#define NOTIFY__MAX_STATS        1024  /* per-alertmanager metric entries */
#define NOTIFY__MAX_URLS         65536 /* alertmanagers (active + dropped) per set */
#define NOTIFY__LAT_KEEP         256   /* latency observations kept per alertmanager */
#define NOTIFY__LAT_AGE_NS       (600LL * 1000000000LL)
#define NOTIFY__DEFAULT_CAPACITY 10000

typedef struct notify__kv {
    char *name, *value;
} notify__kv;

/* One queued alert (2.42's notifier.Alert). */
typedef struct notify__alert {
    labels_set *labels; /* owned reference */
    notify__kv *ann;    /* sorted by name, names unique (the last one wins) */
    size_t nann;
    int64_t starts_at_ms, ends_at_ms; /* 0: not set (Go's zero time) */
    char *generator_url;              /* NULL or "" when none */
} notify__alert;

/* A copy of a rules_notice with labels ls (a reference is taken). NULL on
 * out of memory. */
notify__alert *notify__alert_new(const rules_notice *a, labels_set *ls);
void notify__alert_free(notify__alert *a);

/* JSON bodies, exactly as 2.42 marshals them (encoding/json: map keys
 * sorted, HTML characters and U+2028/9 escaped, invalid UTF-8 as U+FFFD):
 *  v2: [{"annotations":{..},"endsAt":T,"startsAt":T,"generatorURL":"..",
 *       "labels":{..}}] with T as strfmt.DateTime (RFC 3339, milliseconds
 *       always: 2023-01-02T03:04:05.678Z); annotations left out when
 *       empty, generatorURL when "";
 *  v1: [{"labels":{..},"annotations":{..},"startsAt":T,"endsAt":T,
 *       "generatorURL":".."}] with T as time.Time (RFC 3339 with the
 *       fraction's trailing zeros cut: 2023-01-02T03:04:05.67Z); generatorURL
 *       left out when "". */
void notify__json_v2(base_buf *b, notify__alert *const *alerts, size_t n);
void notify__json_v1(base_buf *b, notify__alert *const *alerts, size_t n);
/* A time in UTC, quoted. millis: v2's fixed 3 digits, else v1's trimmed.
 * ms == 0 is Go's zero time, 0001-01-01T00:00:00Z. */
void notify__json_time(base_buf *b, int64_t ms, int millis);

/* Go's url.URL{Scheme, Host, Path}.String(). */
void notify__url(base_buf *b, base_str scheme, base_str host, base_str path);
/* Go's path.Join("/", prefix, "/api/<version>/alerts"). */
void notify__post_path(base_buf *b, const char *prefix, const char *version);
/* Go's net.SplitHostPort succeeds on s (a port is present). */
int notify__has_port(base_str s);

/* A set's settings (a copy of the config's). */
typedef struct notify__set {
    atomic_int refs;
    char *name; /* "alertmanager/<i>" */
    char *scheme, *path_prefix, *api_version;
    int64_t timeout_ms;
    cfg_http http;
    relabel_rule *relabel;
    size_t nrelabel;
    /* Changed by notify_sync / apply under the manager's lock. */
    char **active; /* URLs, deduplicated, in discovery order */
    size_t nactive;
    char **dropped;
    size_t ndropped;
    char group_err[256]; /* the last error logged for a group ("" none) */
} notify__set;

/* Appends the alertmanagers of one group to *active / *dropped (URLs, not
 * yet deduplicated). 0, BASE_E_INVAL with 2.42's message (the group is
 * skipped: nothing appended), BASE_E_NOMEM or BASE_E_LIMIT. */
int notify__from_group(const notify__set *s, const disc_group *g, char ***active, size_t *nactive,
                       char ***dropped, size_t *ndropped, char *err, size_t errlen);

/* One request of a batch. */
typedef struct notify__req {
    notify__set *set; /* referenced */
    char *url;
    int ok;         /* 2xx */
    double latency; /* seconds from the batch's start */
    char err[256];  /* why it failed */
} notify__req;

typedef struct notify__sender notify__sender;
/* The sending side's libcurl state (one multi handle, reused so that
 * connections are kept). */
int notify__sender_new(notify__sender **ret);
void notify__sender_free(notify__sender *s);
/* Wakes a notify__send_batch waiting on the network (any thread). */
void notify__sender_wakeup(notify__sender *s);
/* Sends the batch to every request's URL at once and waits for all of
 * them; fills ok, latency and err. abort(ctx) is checked at least every
 * 100 ms and after each wakeup: when it returns nonzero the requests
 * still in flight fail ("context canceled"). */
void notify__send_batch(notify__sender *s, notify__alert *const *alerts, size_t n, notify__req *reqs,
                        size_t nreqs, const char *user_agent, int (*abort_fn)(void *), void *ctx);

#endif
