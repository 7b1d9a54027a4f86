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
 *    __meta_dns_srv_record_port, __meta_dns_mx_record_target; source is the
 *    name; a failed lookup keeps the previous groups;
 *  - http_sd_configs: GET the URL (libcurl, with the http client config),
 *    a JSON list of groups, every refresh_interval; group label __meta_url;
 *    source "<url>:<index>"; a failed refresh keeps the previous groups.
 * Each target is a label set with at least __address__; group labels are
 * separate (the scraper merges them, target labels winning).
 *
 * The manager runs every provider of every set (a "set" is a job name, or
 * an alertmanager set's name) on its own thread, and calls the sink with
 * the full list of groups of a set whenever it changes, at most once per
 * update interval per set (Prometheus: 5 s), and promptly (< 1 s) after
 * disc_manager_apply() for the first results. The sink runs on the
 * manager's thread and must not call back into the manager.
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
 * order (provider order, then source). The groups live until the call
 * returns: copy (labels_ref) what you keep. */
typedef void (*disc_sink)(void *ctx, const char *set, const disc_group *const *groups, size_t n);

typedef struct disc_manager disc_manager;

typedef struct disc_opts {
    disc_sink sink;
    void *sink_ctx;
    int64_t update_interval_ms; /* 0: 5000 */
} disc_opts;

int disc_manager_new(const disc_opts *o, disc_manager **ret, char *err, size_t errlen);
/* Runs the discovery of every scrape job and alertmanager set of c
 * (alertmanager sets are named "alertmanager/<index>"). c must stay alive
 * until the next apply or the manager's end. */
int disc_manager_apply(disc_manager *m, const cfg_config *c, char *err, size_t errlen);
/* Stops every provider and the thread, frees. */
void disc_manager_free(disc_manager *m);

/* For the server's /metrics: counters of refreshes and failures per
 * mechanism ("file", "dns", "http", "static"). */
typedef struct disc_stats {
    unsigned long long refreshes[4], failures[4];
    size_t providers, groups, targets;
} disc_stats;
void disc_manager_stats(disc_manager *m, disc_stats *ret);

/* Building blocks, exposed for tests and fuzzing: parse a file_sd file's
 * bytes (JSON when is_json, else YAML) or an http_sd body (JSON) into
 * groups. 0, or BASE_E_PARSE with a message in err. */
int disc_parse_file_sd(const char *buf, size_t len, int is_json, const char *path, disc_group ***ret,
                       size_t *ret_n, char *err, size_t errlen);
int disc_parse_http_sd(const char *buf, size_t len, const char *url, disc_group ***ret, size_t *ret_n,
                       char *err, size_t errlen);
void disc_groups_free(disc_group **g, size_t n);

#endif
