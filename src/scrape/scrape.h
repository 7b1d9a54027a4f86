/* scrape.h -- scrape pools and loops: from target groups to stored samples.
 *
 * One pool per job. A pool turns the job's discovered groups into targets
 * as Prometheus 2.42's scrape.populateLabels does (group and target labels,
 * job, __address__, __scheme__, __metrics_path__, __param_*,
 * __scrape_interval__, __scrape_timeout__, relabel_configs, then
 * __meta_*, __tmp_* and other __ labels dropped, instance defaulting to
 * __address__); targets dropped by relabeling are kept for the API.
 * Identical targets are deduplicated (by label hash); target_limit fails
 * the pool's targets as Prometheus does.
 *
 * One loop per target, phase-spread over the interval by a hash of the
 * target and the server's identity; all loops run on a few threads driving
 * libcurl's multi interface. A scrape sends Prometheus's Accept header
 * (OpenMetrics preferred) and Accept-Encoding gzip, honours the timeout
 * (X-Prometheus-Scrape-Timeout-Seconds header too), parses with expo (the
 * format chosen by Content-Type), applies label limits, honor_labels
 * (conflicts renamed exported_*), honor_timestamps, metric_relabel_configs
 * and sample_limit (a scrape over it fails whole, `sample limit exceeded`),
 * appends to the TSDB head in one transaction, and adds the report series
 * up, scrape_duration_seconds, scrape_samples_scraped,
 * scrape_samples_post_metric_relabeling, scrape_series_added. Series that
 * disappear from a target, and every series of a target that disappears or
 * fails, get a staleness marker (the NaN 0x7ff0000000000002), as 2.42.
 * HELP/TYPE/UNIT per target are kept for /api/v1/targets/metadata.
 *
 * Reload: scrape_manager_apply() keeps the pools (loops, state, phase) of
 * jobs whose cfg_scrape did not change; changed jobs get new loops that
 * continue their targets' series without staleness; removed jobs stop and
 * mark their series stale.
 *
 * Thread-safety: every function may be called from any thread.
 */
#ifndef KELVIN_SCRAPE_SCRAPE_H
#define KELVIN_SCRAPE_SCRAPE_H

#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/str.h"
#include "config/config.h"
#include "discovery/discovery.h"
#include "expo/expo.h"
#include "labels/labels.h"
#include "tsdb/db.h"

typedef struct scrape_manager scrape_manager;

typedef struct scrape_opts {
    tsdb_db *db;          /* where samples go (its head) */
    unsigned threads;     /* scraper threads; 0: 1 per 2 cores, at least 1 */
    const char *identity; /* mixed into the phase hash (e.g. the listen address) */
} scrape_opts;

int scrape_manager_new(const scrape_opts *o, scrape_manager **ret, char *err, size_t errlen);
/* Takes a new configuration (c must stay alive until the next apply or
 * the manager's end). */
int scrape_manager_apply(scrape_manager *m, const cfg_config *c, char *err, size_t errlen);
/* The discovery sink: every group of a job. Cheap when nothing changed
 * (the groups are compared with the last ones first). Groups of a job the
 * configuration does not have (yet) are kept and used when an apply brings
 * the job. */
void scrape_manager_sync(scrape_manager *m, const char *job, const disc_group *const *groups, size_t n);
/* Stops every loop (no end-of-run staleness markers, as Prometheus at
 * shutdown), joins the threads, frees. */
void scrape_manager_free(scrape_manager *m);

/* The JSON of GET /api/v1/targets (Prometheus 2.42's shape, the whole
 * {"status":"success","data":{...}} document). state: NULL or "any",
 * "active", "dropped". */
int scrape_manager_targets_json(scrape_manager *m, const char *state, base_buf *out);
/* The JSON of GET /api/v1/targets/metadata: only the `data` array
 * ([{"target":{..},"metric":"x","type":..,"help":..,"unit":..}], without
 * "metric" when one is asked for, as 2.42); "[]" when nothing matched.
 * ms/nms: match_target as the caller parsed it (2.42 parses it with
 * parser.ParseMetricSelector: promql_parse_selector), every one must
 * match a target's labels (a missing label matches as ""); nms == 0: all
 * targets. metric: exact bytes, empty for all. limit as 2.42 applies it:
 * checked before each target, so a target's whole list goes in once
 * fewer than limit rows are there (limit 0: []); limit < 0: none.
 * 0 or BASE_E_NOMEM. */
int scrape_manager_metadata_json(scrape_manager *m, labels_matcher *const *ms, size_t nms, base_str metric,
                                 long limit, base_buf *out);
/* The JSON of GET /api/v1/metadata: only the `data` object
 * ({"x":[{"type":..,"help":..,"unit":..}]}, per metric over all targets,
 * distinct entries, names sorted; limit counts metrics, 0: {}, < 0: none;
 * metric: exact bytes, empty for all). */
int scrape_manager_metric_metadata_json(scrape_manager *m, base_str metric, long limit, base_buf *out);
/* Every metadata entry (HELP/TYPE/UNIT of a metric family) of every active
 * target, one call of fn each, in no particular order and with repeats
 * across targets (remote write's metadata_config source: it keeps one of
 * each). The views are valid during the call only; fn runs under the
 * manager's and the target's locks, so it must be quick and must not call
 * the scrape manager. */
typedef void (*scrape_metadata_fn)(void *ctx, base_str family, expo_type type, base_str help, base_str unit);
void scrape_manager_metadata_each(scrape_manager *m, scrape_metadata_fn fn, void *ctx);
/* Kelvin's own figures (targets, scrapes, failures by reason, samples
 * appended, memory of the pools) as kelvin_scrape_* families. */
void scrape_manager_metrics(scrape_manager *m, expo_mset *ms);

#endif
