/* config.h -- prometheus.yml, as Prometheus 2.42 reads it (libyaml).
 *
 * cfg_load_file() reads a configuration into an immutable cfg_config that
 * the server, discovery and scrape modules share. Loading is strict, as
 * Prometheus's (yaml.UnmarshalStrict): an unknown field, a wrong type, a bad
 * duration, an invalid regex or relabel rule, a duplicate job name, ... is
 * an error whose message names the file, the line and the field, e.g.
 *     prometheus.yml:12: field scrape_intervall not found in type config.ScrapeConfig
 * and uses Prometheus's words after the position, so `kelvin check config`
 * gives promtool's verdict. Defaults are Prometheus's: global
 * scrape_interval 1m, scrape_timeout 10s, evaluation_interval 1m; a job
 * inherits the global interval and timeout, metrics_path /metrics, scheme
 * http, honor_timestamps true; a timeout above the interval is an error
 * (`scrape timeout greater than scrape interval for scrape config with job
 * name "x"`). Relative file names (file_sd files, rule_files, credential and
 * TLS files) are made absolute against the config file's directory, as
 * Prometheus's SetDirectory does.
 *
 * Sections and fields read: global, rule_files, scrape_configs (static,
 * file, dns and http service discovery), alerting, remote_write, with
 * the common HTTP client fields. What 2.42 has and Kelvin does not yet
 * (kubernetes_sd_configs and the other SD mechanisms, oauth2, sigv4,
 * proxy_connect_header, remote_read, storage, tracing) is refused with
 * "X is not supported by Kelvin yet" -- unless its value is null, which
 * configures nothing. One rule of Kelvin's own: a scrape scheme other
 * than http or https (any case) is refused at load; 2.42 loads it and
 * fails every scrape.
 *
 * Limits (a hostile file gets an error, never a crash or a stall): 64 MiB
 * of text, 64 levels of nesting, 1M YAML nodes, 2M nodes decoded with
 * aliases expanded, 10k merge-key (`<<`) expansions; an alias cycle is an
 * error.
 *
 * Memory: a cfg_config owns every string and array in it (malloc'd) and is
 * freed whole by cfg_free(). It is never modified after loading, so threads
 * may read it freely while they hold it.
 */
#ifndef KELVIN_CONFIG_CONFIG_H
#define KELVIN_CONFIG_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "relabel/relabel.h"

/* name: value pairs, in file order (labels, headers). */
typedef struct cfg_kv {
    char *name;
    char *value;
} cfg_kv;

typedef struct cfg_kvs {
    cfg_kv *v;
    size_t n;
} cfg_kvs;

/* `params:` name -> list of values. */
typedef struct cfg_param {
    char *name;
    char **values;
    size_t nvalues;
} cfg_param;

typedef struct cfg_tls {
    char *ca_file, *cert_file, *key_file, *server_name, *min_version, *max_version; /* NULL or "" if unset */
    int insecure_skip_verify;
} cfg_tls;

/* Prometheus's common HTTPClientConfig. `bearer_token` and
 * `bearer_token_file` are folded into authorization (type "Bearer"), as
 * Validate does; has_authorization then says authorization is in use and
 * auth_type is never NULL. A string field that was not given is NULL. */
typedef struct cfg_http {
    int has_basic_auth;
    char *basic_auth_username, *basic_auth_password, *basic_auth_password_file;
    int has_authorization;
    char *auth_type; /* default "Bearer" */
    char *auth_credentials, *auth_credentials_file;
    cfg_tls tls;
    char *proxy_url;
    int follow_redirects; /* default 1 */
    int enable_http2;     /* default 1 */
} cfg_http;

/* One static_configs entry, or a target group read from a file. */
typedef struct cfg_static {
    char **targets;
    size_t ntargets;
    cfg_kvs labels;
} cfg_static;

typedef struct cfg_file_sd {
    char **files; /* absolute paths or globs (only the last element may be a glob) */
    size_t nfiles;
    int64_t refresh_interval_ms; /* default 5m */
} cfg_file_sd;

typedef enum { CFG_DNS_SRV = 0, CFG_DNS_A, CFG_DNS_AAAA, CFG_DNS_MX } cfg_dns_type;

typedef struct cfg_dns_sd {
    char **names;
    size_t nnames;
    cfg_dns_type type;           /* default SRV */
    unsigned port;               /* required for A, AAAA, MX (2.42 does not range-check it) */
    int64_t refresh_interval_ms; /* default 30s */
} cfg_dns_sd;

typedef struct cfg_http_sd {
    char *url;
    int64_t refresh_interval_ms; /* default 60s */
    cfg_http http;
} cfg_http_sd;

/* The service discovery of a job or of an alertmanager set. */
typedef struct cfg_sd {
    cfg_static *statics;
    size_t nstatics;
    cfg_file_sd *files;
    size_t nfiles;
    cfg_dns_sd *dns;
    size_t ndns;
    cfg_http_sd *https;
    size_t nhttps;
} cfg_sd;

typedef struct cfg_scrape {
    char *job_name;
    int64_t scrape_interval_ms, scrape_timeout_ms;
    char *metrics_path; /* default "/metrics" */
    char *scheme;       /* default "http"; "http" or "https" in any case, as given */
    cfg_param *params;
    size_t nparams;
    int honor_labels;     /* default 0 */
    int honor_timestamps; /* default 1 */
    uint64_t sample_limit, label_limit, label_name_length_limit, label_value_length_limit, target_limit,
        body_size_limit; /* 0 = none; body_size_limit in bytes (units are powers of 1024) */
    cfg_http http;
    cfg_sd sd;
    relabel_rule *relabel;
    size_t nrelabel;
    relabel_rule *metric_relabel;
    size_t nmetric_relabel;
    int line; /* where the entry began */
} cfg_scrape;

typedef struct cfg_alertmanager {
    char *scheme;       /* default "http" */
    char *path_prefix;  /* default "/" */
    int64_t timeout_ms; /* default 10s */
    char *api_version;  /* default "v2" */
    cfg_http http;
    cfg_sd sd;
    relabel_rule *relabel;
    size_t nrelabel;
} cfg_alertmanager;

typedef struct cfg_alerting {
    relabel_rule *alert_relabel;
    size_t nalert_relabel;
    cfg_alertmanager *ams;
    size_t nams;
} cfg_alerting;

typedef struct cfg_remote_write {
    char *url;
    char *name;
    int64_t remote_timeout_ms; /* default 30s */
    cfg_kvs headers;
    relabel_rule *write_relabel;
    size_t nwrite_relabel;
    cfg_http http;
    int send_exemplars;
    int send_native_histograms;
    /* queue_config, Prometheus's defaults */
    int64_t q_capacity, q_max_shards, q_min_shards, q_max_samples_per_send;
    int64_t q_batch_send_deadline_ms, q_min_backoff_ms, q_max_backoff_ms;
    int q_retry_on_http_429;
    /* metadata_config */
    int md_send;                 /* default 1 */
    int64_t md_send_interval_ms; /* default 1m */
    int64_t md_max_samples_per_send;
} cfg_remote_write;

/* external_labels are sorted by name (labels.FromMap). */
typedef struct cfg_global {
    int64_t scrape_interval_ms;     /* default 1m */
    int64_t scrape_timeout_ms;      /* default 10s */
    int64_t evaluation_interval_ms; /* default 1m */
    cfg_kvs external_labels;
    char *query_log_file;
} cfg_global;

typedef struct cfg_config {
    char *path; /* the file it was read from (absolute), or the name given */
    char *text; /* the file's bytes, NUL-terminated (for /api/v1/status/config) */
    size_t text_len;
    cfg_global global;
    char **rule_files;
    size_t nrule_files;
    cfg_scrape *scrapes;
    size_t nscrapes;
    cfg_alerting alerting;
    cfg_remote_write *remote_writes;
    size_t nremote_writes;
} cfg_config;

/* Reads and checks a configuration file. 0, or a negative BASE_E_* with
 * "FILE:LINE: message" in err: BASE_E_INVAL (a field or a rule is wrong),
 * BASE_E_PARSE (not YAML), BASE_E_LIMIT, BASE_E_NOMEM, BASE_E_IO (the file
 * can't be read). *ret is written only on success; free it with cfg_free. */
int cfg_load_file(const char *path, cfg_config **ret, char *err, size_t errlen);
/* The same over bytes in memory; `name` stands for the file in messages and
 * relative paths resolve against `dir` (NULL: the current directory). */
int cfg_load_buf(const char *buf, size_t len, const char *name, const char *dir, cfg_config **ret, char *err,
                 size_t errlen);
void cfg_free(cfg_config *c);

/* Frees the strings of an HTTP client configuration and zeroes it. */
void cfg_http_clear(cfg_http *h);
/* Whether two HTTP client configurations are the same (every field). */
int cfg_http_equal(const cfg_http *a, const cfg_http *b);
/* A deep copy (dst gets its own strings): 0 or BASE_E_NOMEM (dst zeroed). */
int cfg_http_copy(cfg_http *dst, const cfg_http *src);

/* A scrape config by job name, or NULL. */
const cfg_scrape *cfg_find_scrape(const cfg_config *c, const char *job);
/* Whether two scrape configs are the same (every field, relabel rules
 * included): a reload keeps the pool of an unchanged job as it is. */
int cfg_scrape_equal(const cfg_scrape *a, const cfg_scrape *b);
/* Whether two service discovery configurations are the same. */
int cfg_sd_equal(const cfg_sd *a, const cfg_sd *b);

#endif
