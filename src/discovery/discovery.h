/* discovery.h -- service discovery: where the targets are.
 *
 * Providers turn a job's service discovery configuration (cfg_sd) into
 * target groups, as Prometheus 2.42's discovery package does:
 *  - static_configs: one group per entry, source "0", "1", ... (its index);
 *  - file_sd_configs: JSON (.json) or YAML (.yml/.yaml) files, globs in the
 *    last path element; re-read on change (inotify) and every
 *    refresh_interval; source "<file>:<index>"; group label
 *    __meta_filepath; a file that fails to parse keeps its previous groups
 *    and is logged; a deleted file's groups are removed;
 *  - dns_sd_configs: A, AAAA, SRV (and MX) records, every refresh_interval;
 *    target labels __meta_dns_name, __meta_dns_srv_record_target,
 *    __meta_dns_srv_record_port, __meta_dns_mx_record_target (those that
 *    do not apply to the record type are absent: Prometheus sets them to
 *    "", which a label set drops); source is the name; a failed lookup
 *    (SERVFAIL, timeout) keeps the previous groups, NXDOMAIN or an empty
 *    answer leaves the name's group without targets;
 *  - http_sd_configs: GET the URL (libcurl, with the http client config),
 *    a JSON list of groups, every refresh_interval; group label __meta_url;
 *    source "<url>:<index>"; a failed refresh keeps the previous groups.
 * Each target is a label set with __address__ (absent only when a document
 * gave an empty target string, which the scraper then reports as having no
 * address, as Prometheus does); group labels are separate (the scraper
 * merges them, target labels winning). Documents are read as Prometheus's
 * targetgroup package reads them: label names are checked, addresses are
 * not (the scraper checks them).
 *
 * Logging: the manager's thread logs (base/log.h) once per problem: a file
 * that cannot be read or parsed, a DNS name that fails, a URL that fails;
 * again only when the reason changes.
 *
 * The manager runs every provider of every set (a "set" is a job name, or
 * an alertmanager set's name) on its own thread, and calls the sink with
 * the full list of groups of a set whenever it changes, at most once per
 * update interval per set (Prometheus: 5 s), and promptly (< 1 s) after
 * disc_manager_apply() for the first results: a new set is sent at once
 * (with no groups if it has no discovery or nothing was found yet), and
 * again at once when each provider has its first result. The sink runs on
 * the manager's thread and must not call back into the manager.
 *
 * Reload: disc_manager_apply() with a new configuration keeps providers
 * whose configuration did not change (with their groups), stops the others
 * and starts new ones; sets that disappear get a last call with no groups.
 *
 * Test hook: the environment variable KELVIN_DNS_SERVER=host:port (a
 * loopback address) sends DNS queries there instead of /etc/resolv.conf's
 * servers, so tests run their own DNS server.
 */
#ifndef KELVIN_DISCOVERY_DISCOVERY_H
#define KELVIN_DISCOVERY_DISCOVERY_H

#include <stddef.h>

#include "config/config.h"
#include "labels/labels.h"

typedef struct disc_group {
    char *source;         /* unique within the set */
    labels_set *labels;   /* group labels (may be empty) */
    labels_set **targets; /* each with __address__ */
    size_t ntargets;
} disc_group;

/* Called with every group of `set`, from all its providers, in a stable
 * order: static groups, then each file_sd entry's (files sorted by path,
 * then by index in the file), each dns_sd entry's (names in configuration
 * order), each http_sd entry's (by index). The groups live until the call
 * returns: copy (labels_ref) what you keep. n = 0 (groups NULL) when the
 * set has no groups, and once more when a reload removes the set. */
typedef void (*disc_sink)(void *ctx, const char *set, const disc_group *const *groups, size_t n);

typedef struct disc_manager disc_manager;

typedef struct disc_opts {
    disc_sink sink;
    void *sink_ctx;
    int64_t update_interval_ms; /* 0: 5000 */
} disc_opts;

/* Starts the manager's thread (with no sets). Reads KELVIN_DNS_SERVER.
 * 0, BASE_E_INVAL (no sink), BASE_E_NOMEM, BASE_E_IO. */
int disc_manager_new(const disc_opts *o, disc_manager **ret, char *err, size_t errlen);
/* Runs the discovery of every scrape job and alertmanager set of c
 * (alertmanager sets are named "alertmanager/<index>"); c NULL means no
 * sets. apply copies what it needs from c before it returns (c may be
 * freed then) and does not wait for the thread: the thread adopts the new
 * configuration at once (a later apply before that replaces it). 0, or
 * BASE_E_INVAL with a message (an empty file name, DNS name or URL, two
 * sets of the same name) and nothing changes; BASE_E_NOMEM. */
int disc_manager_apply(disc_manager *m, const cfg_config *c, char *err, size_t errlen);
/* Stops every provider and the thread, frees. */
void disc_manager_free(disc_manager *m);

/* For the server's /metrics: counters of refreshes and failures per
 * mechanism, indexed by DISC_STATS_* ("file", "dns", "http", "static"): a
 * refresh is one provider's re-read / lookup of all its names / request;
 * it counts as failed when any part of it failed. providers, groups and
 * targets are the current totals over all sets. */
enum { DISC_STATS_FILE = 0, DISC_STATS_DNS = 1, DISC_STATS_HTTP = 2, DISC_STATS_STATIC = 3 };
typedef struct disc_stats {
    unsigned long long refreshes[4], failures[4];
    size_t providers, groups, targets;
} disc_stats;
void disc_manager_stats(disc_manager *m, disc_stats *ret);

/* Building blocks, exposed for tests and fuzzing: parse a file_sd file's
 * bytes (JSON when is_json, else YAML) or an http_sd body (JSON) into
 * groups, with sources "<path>:<i>" / "<url>:<i>" and the group label
 * __meta_filepath / __meta_url. 0, or BASE_E_PARSE with a message in err
 * (Prometheus's words: `"x-y" is not a valid label name`, `nil target
 * group item found`, `json: unknown field "x"`, ...), BASE_E_LIMIT (over
 * 64 MiB, 100000 groups, or 4 M targets and labels), BASE_E_NOMEM. The
 * caller frees *ret with disc_groups_free. */
int disc_parse_file_sd(const char *buf, size_t len, int is_json, const char *path, disc_group ***ret,
                       size_t *ret_n, char *err, size_t errlen);
int disc_parse_http_sd(const char *buf, size_t len, const char *url, disc_group ***ret, size_t *ret_n,
                       char *err, size_t errlen);
void disc_groups_free(disc_group **g, size_t n);

#endif
