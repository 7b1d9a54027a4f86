/* tests/unit/config/config.c -- prometheus.yml loading: defaults, global
 * inheritance, every field, relative paths, each error with its line,
 * YAML corners (merge keys, aliases, YAML 1.1 scalars), equality, limits. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/err.h"
#include "config/config.h"

static char err[1024];

static cfg_config *load_ok(const char *y) {
    cfg_config *c = NULL;
    int rc = cfg_load_buf(y, strlen(y), "t.yml", "/etc/kelvin", &c, err, sizeof err);
    if (rc != 0) fail_msg("load failed: %s", err);
    return c;
}

/* Loads y, expects failure with exactly `want` as the message. */
static void load_err(const char *y, const char *want) {
    cfg_config *c = NULL;
    int rc = cfg_load_buf(y, strlen(y), "t.yml", "/etc/kelvin", &c, err, sizeof err);
    if (rc == 0) {
        cfg_free(c);
        fail_msg("expected error %s", want);
    }
    assert_true(rc < 0);
    assert_string_equal(err, want);
}

static void test_defaults(void **state) {
    (void)state;
    cfg_config *c = load_ok("");
    assert_int_equal(c->global.scrape_interval_ms, 60000);
    assert_int_equal(c->global.scrape_timeout_ms, 10000);
    assert_int_equal(c->global.evaluation_interval_ms, 60000);
    assert_int_equal(c->nscrapes, 0);
    assert_string_equal(c->path, "t.yml");
    assert_int_equal(c->text_len, 0);
    cfg_free(c);

    c = load_ok("global:\nscrape_configs:\n  - job_name: a\n");
    assert_int_equal(c->global.scrape_interval_ms, 60000);
    const cfg_scrape *s = &c->scrapes[0];
    assert_string_equal(s->job_name, "a");
    assert_int_equal(s->scrape_interval_ms, 60000);
    assert_int_equal(s->scrape_timeout_ms, 10000);
    assert_string_equal(s->metrics_path, "/metrics");
    assert_string_equal(s->scheme, "http");
    assert_int_equal(s->honor_labels, 0);
    assert_int_equal(s->honor_timestamps, 1);
    assert_int_equal(s->http.follow_redirects, 1);
    assert_int_equal(s->http.enable_http2, 1);
    assert_int_equal(s->sample_limit, 0);
    assert_int_equal(s->body_size_limit, 0);
    assert_int_equal(s->line, 3);
    assert_string_equal(c->text, "global:\nscrape_configs:\n  - job_name: a\n");
    cfg_free(c);
}

static void test_inheritance(void **state) {
    (void)state;
    cfg_config *c = load_ok("global:\n  scrape_interval: 15s\n  scrape_timeout: 5s\n"
                            "scrape_configs:\n"
                            "  - job_name: inherit\n"
                            "  - job_name: short\n    scrape_interval: 2s\n"
                            "  - job_name: own\n    scrape_interval: 1m\n    scrape_timeout: 30s\n");
    assert_int_equal(c->scrapes[0].scrape_interval_ms, 15000);
    assert_int_equal(c->scrapes[0].scrape_timeout_ms, 5000);
    assert_int_equal(c->scrapes[1].scrape_interval_ms, 2000);
    assert_int_equal(c->scrapes[1].scrape_timeout_ms, 2000); /* capped by its interval */
    assert_int_equal(c->scrapes[2].scrape_interval_ms, 60000);
    assert_int_equal(c->scrapes[2].scrape_timeout_ms, 30000);
    cfg_free(c);
    /* a global interval below the default timeout pulls the timeout down */
    c = load_ok("global:\n  scrape_interval: 5s\n");
    assert_int_equal(c->global.scrape_timeout_ms, 5000);
    cfg_free(c);
    /* a null value is Go's zero value: the job then inherits */
    c = load_ok("scrape_configs:\n  - job_name: a\n    scrape_interval: ~\n    metrics_path:\n");
    assert_int_equal(c->scrapes[0].scrape_interval_ms, 60000);
    assert_string_equal(c->scrapes[0].metrics_path, "");
    cfg_free(c);
}

static const char *fixture(const char *rel, char *buf, size_t n) {
    const char *src = getenv("KELVIN_SOURCE_DIR");
    snprintf(buf, n, "%s/tests/fixtures/configs/%s", src ? src : ".", rel);
    return buf;
}

static void test_every_scrape_field(void **state) {
    (void)state;
    char p[4096], dir[4096];
    cfg_config *c = NULL;
    int rc = cfg_load_file(fixture("good/scrape_all_fields.yml", p, sizeof p), &c, err, sizeof err);
    if (rc) fail_msg("%s", err);
    fixture("good/data", dir, sizeof dir);
    const cfg_scrape *s = cfg_find_scrape(c, "dcgm");
    assert_non_null(s);
    assert_null(cfg_find_scrape(c, "nope"));
    assert_int_equal(s->scrape_interval_ms, 10000);
    assert_int_equal(s->scrape_timeout_ms, 10000);
    assert_string_equal(s->metrics_path, "/custom/metrics");
    assert_string_equal(s->scheme, "https");
    assert_int_equal(s->nparams, 2);
    assert_string_equal(s->params[0].name, "module");
    assert_int_equal(s->params[0].nvalues, 2);
    assert_string_equal(s->params[0].values[1], "host");
    assert_string_equal(s->params[1].values[0], "prometheus");
    assert_int_equal(s->honor_labels, 1);
    assert_int_equal(s->honor_timestamps, 0);
    assert_int_equal(s->sample_limit, 100000);
    assert_int_equal(s->label_limit, 64);
    assert_int_equal(s->label_name_length_limit, 128);
    assert_int_equal(s->label_value_length_limit, 1024);
    assert_int_equal(s->target_limit, 500);
    assert_int_equal(s->body_size_limit, 10u << 20);
    assert_int_equal(s->http.follow_redirects, 0);
    assert_int_equal(s->http.enable_http2, 0);
    assert_string_equal(s->http.proxy_url, "http://proxy.example:3128/");
    /* the config file's directory is absolute when KELVIN_SOURCE_DIR is */
    if (dir[0] == '/') {
        char want[4200];
        snprintf(want, sizeof want, "%s/ca.crt", dir);
        assert_string_equal(s->http.tls.ca_file, want);
        snprintf(want, sizeof want, "%s/password", dir);
        assert_string_equal(s->http.basic_auth_password_file, want);
    }
    assert_string_equal(s->http.tls.server_name, "gpu.example");
    assert_int_equal(s->http.tls.insecure_skip_verify, 1);
    assert_string_equal(s->http.tls.min_version, "TLS12");
    assert_int_equal(s->http.has_basic_auth, 1);
    assert_string_equal(s->http.basic_auth_username, "kelvin");
    assert_int_equal(s->sd.nstatics, 1);
    assert_int_equal(s->sd.statics[0].ntargets, 3);
    assert_string_equal(s->sd.statics[0].targets[2], "gpu-2:9400");
    assert_int_equal(s->sd.statics[0].labels.n, 2);
    assert_string_equal(s->sd.statics[0].labels.v[0].name, "rack");
    assert_string_equal(s->sd.statics[0].labels.v[0].value, "r1");
    cfg_free(c);
}

static void test_fixture_remote_write_alerting(void **state) {
    (void)state;
    char p[4096];
    cfg_config *c = NULL;
    if (cfg_load_file(fixture("good/remote_write.yml", p, sizeof p), &c, err, sizeof err))
        fail_msg("%s", err);
    assert_int_equal(c->nremote_writes, 2);
    const cfg_remote_write *w = &c->remote_writes[0];
    assert_string_equal(w->url, "http://vm.example:8428/api/v1/write");
    assert_string_equal(w->name, "vm");
    assert_int_equal(w->remote_timeout_ms, 10000);
    assert_int_equal(w->headers.n, 1);
    assert_string_equal(w->headers.v[0].name, "X-Scope-OrgID");
    assert_string_equal(w->headers.v[0].value, "tenant-1");
    assert_int_equal(w->send_exemplars, 1);
    assert_int_equal(w->send_native_histograms, 0);
    assert_int_equal(w->nwrite_relabel, 1);
    assert_int_equal(w->write_relabel[0].action, RELABEL_DROP);
    assert_int_equal(w->q_capacity, 10000);
    assert_int_equal(w->q_max_shards, 50);
    assert_int_equal(w->q_min_shards, 2);
    assert_int_equal(w->q_max_samples_per_send, 2000);
    assert_int_equal(w->q_batch_send_deadline_ms, 10000);
    assert_int_equal(w->q_min_backoff_ms, 50);
    assert_int_equal(w->q_max_backoff_ms, 10000);
    assert_int_equal(w->q_retry_on_http_429, 1);
    assert_int_equal(w->md_send, 0);
    assert_int_equal(w->md_send_interval_ms, 120000);
    assert_int_equal(w->md_max_samples_per_send, 100);
    assert_int_equal(w->http.has_authorization, 1);
    assert_string_equal(w->http.auth_type, "Bearer");
    assert_string_equal(w->http.auth_credentials, "xyz");
    assert_int_equal(w->http.tls.insecure_skip_verify, 1);
    assert_null(c->remote_writes[1].name);
    assert_int_equal(c->remote_writes[1].remote_timeout_ms, 30000);
    cfg_free(c);

    if (cfg_load_file(fixture("good/alerting.yml", p, sizeof p), &c, err, sizeof err)) fail_msg("%s", err);
    assert_int_equal(c->alerting.nalert_relabel, 1);
    assert_int_equal(c->alerting.nams, 2);
    const cfg_alertmanager *a = &c->alerting.ams[0];
    assert_string_equal(a->scheme, "https");
    assert_string_equal(a->path_prefix, "/am");
    assert_int_equal(a->timeout_ms, 5000);
    assert_string_equal(a->api_version, "v2");
    assert_int_equal(a->http.has_basic_auth, 1);
    assert_string_equal(a->http.basic_auth_password, "p");
    assert_int_equal(a->sd.statics[0].ntargets, 2);
    assert_int_equal(a->nrelabel, 1);
    assert_string_equal(a->relabel[0].target_label, "am");
    a = &c->alerting.ams[1];
    assert_string_equal(a->api_version, "v1");
    assert_int_equal(a->sd.nfiles, 1);
    assert_int_equal(a->sd.ndns, 1);
    assert_string_equal(a->sd.dns[0].names[0], "_am._tcp.example");
    cfg_free(c);
}

static void test_sd_alerting_remote_write(void **state) {
    (void)state;
    cfg_config *c = load_ok("scrape_configs:\n"
                            "  - job_name: sd\n"
                            "    file_sd_configs: [{files: [a.json, 'b/*.yml']}]\n"
                            "    dns_sd_configs:\n"
                            "      - names: [x.example]\n"
                            "      - {names: [y], type: aaaa, port: 9400, refresh_interval: 10s}\n"
                            "    http_sd_configs: [{url: 'https://sd/x', bearer_token: t}]\n"
                            "alerting:\n"
                            "  alert_relabel_configs: [{action: labeldrop, regex: replica}]\n"
                            "  alertmanagers:\n"
                            "    - static_configs: [{targets: ['am:9093']}]\n"
                            "      path_prefix: /am\n"
                            "      timeout: 3s\n"
                            "    - api_version: v1\n"
                            "remote_write:\n"
                            "  - url: http://vm/write\n"
                            "    headers: {X-A: b}\n"
                            "    queue_config: {capacity: 5, retry_on_http_429: true, min_backoff: 1s}\n"
                            "    metadata_config: {send: false}\n"
                            "  - url: http://b/\n");
    const cfg_sd *sd = &c->scrapes[0].sd;
    assert_int_equal(sd->nfiles, 1);
    assert_string_equal(sd->files[0].files[0], "/etc/kelvin/a.json");
    assert_string_equal(sd->files[0].files[1], "/etc/kelvin/b/*.yml");
    assert_int_equal(sd->files[0].refresh_interval_ms, 300000);
    assert_int_equal(sd->ndns, 2);
    assert_int_equal(sd->dns[0].type, CFG_DNS_SRV);
    assert_int_equal(sd->dns[0].refresh_interval_ms, 30000);
    assert_int_equal(sd->dns[1].type, CFG_DNS_AAAA);
    assert_int_equal(sd->dns[1].port, 9400);
    assert_int_equal(sd->dns[1].refresh_interval_ms, 10000);
    assert_int_equal(sd->nhttps, 1);
    assert_string_equal(sd->https[0].url, "https://sd/x");
    assert_int_equal(sd->https[0].refresh_interval_ms, 60000);
    assert_int_equal(sd->https[0].http.has_authorization, 1);
    assert_string_equal(sd->https[0].http.auth_type, "Bearer");
    assert_string_equal(sd->https[0].http.auth_credentials, "t");

    assert_int_equal(c->alerting.nalert_relabel, 1);
    assert_int_equal(c->alerting.alert_relabel[0].action, RELABEL_LABELDROP);
    assert_int_equal(c->alerting.nams, 2);
    assert_string_equal(c->alerting.ams[0].path_prefix, "/am");
    assert_int_equal(c->alerting.ams[0].timeout_ms, 3000);
    assert_string_equal(c->alerting.ams[0].scheme, "http");
    assert_string_equal(c->alerting.ams[0].api_version, "v2");
    assert_string_equal(c->alerting.ams[1].api_version, "v1");
    assert_string_equal(c->alerting.ams[1].path_prefix, "/");
    assert_int_equal(c->alerting.ams[1].timeout_ms, 10000);
    assert_string_equal(c->alerting.ams[0].sd.statics[0].targets[0], "am:9093");

    assert_int_equal(c->nremote_writes, 2);
    const cfg_remote_write *w = &c->remote_writes[0];
    assert_string_equal(w->url, "http://vm/write");
    assert_int_equal(w->remote_timeout_ms, 30000);
    assert_string_equal(w->headers.v[0].name, "X-A");
    assert_int_equal(w->q_capacity, 5);
    assert_int_equal(w->q_max_shards, 200);
    assert_int_equal(w->q_min_shards, 1);
    assert_int_equal(w->q_max_samples_per_send, 500);
    assert_int_equal(w->q_batch_send_deadline_ms, 5000);
    assert_int_equal(w->q_min_backoff_ms, 1000);
    assert_int_equal(w->q_max_backoff_ms, 5000);
    assert_int_equal(w->q_retry_on_http_429, 1);
    assert_int_equal(w->md_send, 0);
    assert_int_equal(w->md_send_interval_ms, 60000);
    assert_int_equal(c->remote_writes[1].md_send, 1);
    cfg_free(c);
}

static void test_relative_paths(void **state) {
    (void)state;
    cfg_config *c = load_ok("global:\n  query_log_file: logs/q.log\n"
                            "rule_files: [rules/*.yml, /abs/r.yml, ../up.yml]\n"
                            "scrape_configs:\n"
                            "  - job_name: a\n"
                            "    bearer_token_file: ./secrets//token\n"
                            "    tls_config: {ca_file: ca.pem, cert_file: c.pem, key_file: /k.pem}\n"
                            "    file_sd_configs: [{files: [sd/../t.json]}]\n"
                            "  - job_name: b\n"
                            "    basic_auth: {username: u, password_file: pw}\n"
                            "  - job_name: c\n"
                            "    authorization: {credentials_file: ''}\n"
                            "remote_write:\n"
                            "  - url: http://x/\n"
                            "    authorization: {credentials_file: rw.token}\n");
    assert_string_equal(c->global.query_log_file, "/etc/kelvin/logs/q.log");
    assert_string_equal(c->rule_files[0], "/etc/kelvin/rules/*.yml");
    assert_string_equal(c->rule_files[1], "/abs/r.yml");
    assert_string_equal(c->rule_files[2], "/etc/up.yml");
    const cfg_http *h = &c->scrapes[0].http;
    assert_string_equal(h->auth_credentials_file, "/etc/kelvin/secrets/token");
    assert_string_equal(h->auth_type, "Bearer");
    assert_null(h->auth_credentials);
    assert_string_equal(h->tls.ca_file, "/etc/kelvin/ca.pem");
    assert_string_equal(h->tls.cert_file, "/etc/kelvin/c.pem");
    assert_string_equal(h->tls.key_file, "/k.pem");
    assert_string_equal(c->scrapes[0].sd.files[0].files[0], "/etc/kelvin/t.json");
    assert_string_equal(c->scrapes[1].http.basic_auth_password_file, "/etc/kelvin/pw");
    assert_string_equal(c->scrapes[2].http.auth_credentials_file, "");
    assert_string_equal(c->scrapes[2].http.auth_type, "Bearer");
    assert_string_equal(c->remote_writes[0].http.auth_credentials_file, "/etc/kelvin/rw.token");
    cfg_free(c);
}

static void test_yaml_corners(void **state) {
    (void)state;
    cfg_config *c = load_ok("scrape_configs:\n"
                            "  - &base\n"
                            "    job_name: a\n"
                            "    scrape_interval: 5s\n"
                            "    static_configs: [{targets: &t ['x:1', 'y:2']}]\n"
                            "  - <<: *base\n"
                            "    job_name: b\n"
                            "  - job_name: 123\n"
                            "    honor_labels: yes\n"
                            "    honor_timestamps: Off\n"
                            "    sample_limit: 0x10\n"
                            "    label_limit: 1_000\n"
                            "    target_limit: 1e3\n"
                            "    body_size_limit: 1GB512MB\n"
                            "    static_configs: [{targets: *t, labels: {n: 1, b: true}}]\n");
    assert_int_equal(c->nscrapes, 3);
    assert_string_equal(c->scrapes[1].job_name, "b");
    assert_int_equal(c->scrapes[1].scrape_interval_ms, 5000);
    assert_int_equal(c->scrapes[1].sd.statics[0].ntargets, 2);
    const cfg_scrape *s = &c->scrapes[2];
    assert_string_equal(s->job_name, "123");
    assert_int_equal(s->honor_labels, 1);
    assert_int_equal(s->honor_timestamps, 0);
    assert_int_equal(s->sample_limit, 16);
    assert_int_equal(s->label_limit, 1000);
    assert_int_equal(s->target_limit, 1000);
    assert_int_equal(s->body_size_limit, (1ull << 30) + (512ull << 20));
    assert_string_equal(s->sd.statics[0].targets[1], "y:2");
    assert_string_equal(s->sd.statics[0].labels.v[1].value, "true");
    cfg_free(c);
    c = load_ok("scrape_configs: [{job_name: a, body_size_limit: 1.5KiB}]\n");
    assert_int_equal(c->scrapes[0].body_size_limit, 1536);
    cfg_free(c);
    c = load_ok("global:\n  external_labels: {z: 1, a: 2}\n");
    assert_int_equal(c->global.external_labels.n, 2);
    assert_string_equal(c->global.external_labels.v[0].name, "a"); /* sorted, as labels.FromMap */
    cfg_free(c);
}

static void test_errors(void **state) {
    (void)state;
    static const struct {
        const char *yaml, *want;
    } T[] = {
        {"scrape_configs:\n  - job_name: a\n    scrape_intervall: 5s\n",
         "t.yml:3: field scrape_intervall not found in type config.ScrapeConfig"},
        {"foo: 1\n", "t.yml:1: field foo not found in type config.plain"},
        {"scrape_configs:\n  - job_name: a\n    job_name: b\n",
         "t.yml:3: field job_name already set in type config.ScrapeConfig"},
        {"global:\n  external_labels:\n    a: x\n    a: y\n", "t.yml:4: key \"a\" already set in map"},
        {"scrape_configs:\n  - job_name: a\n    sample_limit: abc\n",
         "t.yml:3: cannot unmarshal !!str `abc` into uint"},
        {"scrape_configs:\n  - job_name: a\n    sample_limit: -1\n",
         "t.yml:3: cannot unmarshal !!int `-1` into uint"},
        {"scrape_configs:\n  - job_name: a\n    honor_labels: 3\n",
         "t.yml:3: cannot unmarshal !!int `3` into bool"},
        {"scrape_configs:\n  - job_name: a\n    honor_labels: \"a long string\"\n",
         "t.yml:3: cannot unmarshal !!str `a long ...` into bool"},
        {"scrape_configs: {a: 1}\n", "t.yml:1: cannot unmarshal !!map into []*config.ScrapeConfig"},
        {"global:\n  scrape_interval: 5x\n", "t.yml:2: not a valid duration string: \"5x\""},
        {"global:\n  scrape_interval: ''\n", "t.yml:2: empty duration string"},
        {"global:\n  scrape_interval: 300000y\n", "t.yml:2: duration out of range"},
        {"global:\n  scrape_interval: [1]\n", "t.yml:2: cannot unmarshal !!seq into string"},
        {"scrape_configs:\n  - job_name: a\n    body_size_limit: 10XB\n",
         "t.yml:3: units: unknown unit XB in 10XB"},
        {"scrape_configs:\n  - job_name: a\n    body_size_limit: 10\n",
         "t.yml:3: units: unknown unit  in 10"},
        {"scrape_configs:\n  - scrape_interval: 5s\n", "t.yml:2: job_name is empty"},
        {"scrape_configs:\n  -\n", "t.yml:2: empty or null scrape config section"},
        {"scrape_configs:\n  - job_name: a\n  - job_name: a\n",
         "t.yml:3: found multiple scrape configs with job name \"a\""},
        {"scrape_configs:\n  - job_name: a\n    scrape_interval: 5s\n    scrape_timeout: 6s\n",
         "t.yml:2: scrape timeout greater than scrape interval for scrape config with job name \"a\""},
        {"global:\n  scrape_interval: 5s\n  scrape_timeout: 6s\n",
         "t.yml:2: global scrape timeout greater than scrape interval"},
        {"global:\n  external_labels:\n    a-b: x\n", "t.yml:3: \"a-b\" is not a valid label name"},
        {"scrape_configs:\n  - job_name: a\n    static_configs: [{targets: [a], labels: {1a: x}}]\n",
         "t.yml:3: \"1a\" is not a valid label name"},
        {"scrape_configs:\n  - job_name: a\n    static_configs: [{targets: ['http://a:1']}]\n",
         "t.yml:2: \"http://a:1\" is not a valid hostname"},
        {"scrape_configs:\n  - job_name: a\n    basic_auth: {username: u, password: p, password_file: f}\n",
         "t.yml:2: at most one of basic_auth password & password_file must be configured"},
        {"scrape_configs:\n  - job_name: a\n    bearer_token: x\n    bearer_token_file: y\n",
         "t.yml:2: at most one of bearer_token & bearer_token_file must be configured"},
        {"scrape_configs:\n  - job_name: a\n    bearer_token: x\n    basic_auth: {username: u}\n",
         "t.yml:2: at most one of basic_auth, oauth2, bearer_token & bearer_token_file must be configured"},
        {"scrape_configs:\n  - job_name: a\n    bearer_token_file: x\n    authorization: {credentials: y}\n",
         "t.yml:2: authorization is not compatible with bearer_token & bearer_token_file"},
        {"scrape_configs:\n  - job_name: a\n    authorization: {credentials: y, credentials_file: z}\n",
         "t.yml:2: at most one of authorization credentials & credentials_file must be configured"},
        {"scrape_configs:\n  - job_name: a\n    authorization: {type: Basic}\n",
         "t.yml:2: authorization type cannot be set to \"basic\", use \"basic_auth\" instead"},
        {"scrape_configs:\n  - job_name: a\n    authorization: {}\n    basic_auth: {username: u}\n",
         "t.yml:2: at most one of basic_auth, oauth2 & authorization must be configured"},
        {"scrape_configs:\n  - job_name: a\n    tls_config: {min_version: TLS14}\n",
         "t.yml:3: unknown TLS version: TLS14"},
        {"scrape_configs:\n  - job_name: a\n    scheme: ftp\n",
         "t.yml:2: scheme \"ftp\" is not supported for scrape config with job name \"a\" (http or https)"},
        {"scrape_configs:\n  - job_name: a\n    kubernetes_sd_configs: [{role: pod}]\n",
         "t.yml:3: kubernetes_sd_configs is not supported by Kelvin yet (supported: static_configs, "
         "file_sd_configs, dns_sd_configs, http_sd_configs)"},
        {"scrape_configs:\n  - job_name: a\n    oauth2: {}\n",
         "t.yml:3: oauth2 is not supported by Kelvin yet"},
        {"scrape_configs:\n  - job_name: a\n    file_sd_configs:\n      - files: [a.txt]\n",
         "t.yml:4: path name \"a.txt\" is not valid for file discovery"},
        {"scrape_configs:\n  - job_name: a\n    file_sd_configs:\n      - files: ['a*/b.json']\n",
         "t.yml:4: path name \"a*/b.json\" is not valid for file discovery"},
        {"scrape_configs:\n  - job_name: a\n    file_sd_configs:\n      - {}\n",
         "t.yml:4: file service discovery config must contain at least one path name"},
        {"scrape_configs:\n  - job_name: a\n    dns_sd_configs:\n      - {names: [x], type: A}\n",
         "t.yml:4: a port is required in DNS-SD configs for all record types except SRV"},
        {"scrape_configs:\n  - job_name: a\n    dns_sd_configs:\n      - {names: [x], type: ns, port: 1}\n",
         "t.yml:4: invalid DNS-SD records type NS"},
        {"scrape_configs:\n  - job_name: a\n    dns_sd_configs:\n      - {names: []}\n",
         "t.yml:4: DNS-SD config must contain at least one SRV record name"},
        {"scrape_configs:\n  - job_name: a\n    http_sd_configs:\n      - url: ftp://x\n",
         "t.yml:4: URL scheme must be 'http' or 'https'"},
        {"scrape_configs:\n  - job_name: a\n    http_sd_configs:\n      - url: http://\n",
         "t.yml:4: host is missing in URL"},
        {"scrape_configs:\n  - job_name: a\n    http_sd_configs:\n      - refresh_interval: 1m\n",
         "t.yml:4: URL is missing"},
        {"remote_write:\n  - name: x\n", "t.yml:2: url for remote_write is empty"},
        {"remote_write:\n  -\n", "t.yml:2: empty or null remote write config section"},
        {"remote_write:\n  - {url: 'http://a', name: x}\n  - {url: 'http://b', name: x}\n",
         "t.yml:1: found multiple remote write configs with job name \"x\""},
        {"remote_write:\n  - url: http://a\n    headers: {authorization: x}\n",
         "t.yml:2: authorization header must be changed via the basic_auth, authorization, oauth2, or sigv4 "
         "parameter"},
        {"remote_write:\n  - url: http://a\n    headers: {Content-Type: x}\n",
         "t.yml:2: Content-Type is a reserved header. It must not be changed"},
        {"remote_write:\n  - url: http://a\n    queue_config: {capacity: x}\n",
         "t.yml:3: cannot unmarshal !!str `x` into int"},
        {"remote_write:\n  - url: 'http://a b/'\n",
         "t.yml:2: parse \"http://a b/\": invalid character \" \" in host name"},
        {"alerting:\n  alertmanagers:\n    - api_version: v3\n",
         "t.yml:3: expected Alertmanager api version to be one of [v1 v2] but got v3"},
        {"alerting:\n  alertmanagers:\n    - static_configs: [{targets: ['http://x']}]\n",
         "t.yml:3: \"http://x\" is not a valid hostname"},
        {"alerting:\n  alert_relabel_configs:\n    -\n", "t.yml:3: empty or null alert relabeling rule"},
        {"rule_files: ['a/*/b.yml']\n", "t.yml:1: invalid rule file path \"a/*/b.yml\""},
        {"scrape_configs:\n  - job_name: a\n    relabel_configs:\n      - source_labels: [a]\n",
         "t.yml:4: relabel configuration for replace action requires 'target_label' value"},
        {"scrape_configs:\n  - job_name: a\n    relabel_configs:\n      - action: nope\n",
         "t.yml:4: unknown relabel action \"nope\""},
        {"scrape_configs:\n  - job_name: a\n    relabel_configs:\n      - source_labels: [a.b]\n",
         "t.yml:4: \"a.b\" is not a valid label name"},
        {"scrape_configs:\n  - job_name: a\n    metric_relabel_configs:\n      -\n",
         "t.yml:4: empty or null metric relabeling rule in scrape config"},
        {"scrape_configs:\n  - job_name: a\n   foo: [\n",
         "t.yml:2: yaml: did not find expected '-' indicator"},
        {"global:\n\tscrape_interval: 5s\n", "t.yml:2: yaml: found character that cannot start any token"},
        {"a: *nope\n", "t.yml:1: yaml: unknown anchor 'nope'"},
        {"hello\n", "t.yml:1: cannot unmarshal !!str `hello` into config.plain"},
        {"scrape_configs:\n  - job_name: a\n    static_configs:\n      -\n",
         "t.yml:4: empty or null section in static_configs"},
        {"scrape_configs:\n  - job_name: a\n    dns_sd_configs: [{names: [x], type: ''}]\n",
         "t.yml:3: invalid DNS-SD records type "},
        {"scrape_configs:\n  - job_name: a\n    tls_config: {min_version: ''}\n",
         "t.yml:3: unknown TLS version: "},
        {"scrape_configs:\n  - job_name: a\n    proxy_url: '%zz'\n",
         "t.yml:3: parse \"%zz\": invalid URL escape \"%zz\""},
        {"scrape_configs:\n  - {job_name: a, <<: {foo: b}}\n",
         "t.yml:2: field foo not found in type config.ScrapeConfig"},
        {"global: {}\nglobal: {}\n", "t.yml:2: field global already set in type config.plain"},
        {"storage: {tsdb: {}}\n", "t.yml:1: storage is not supported by Kelvin yet"},
    };
    for (size_t i = 0; i < sizeof T / sizeof T[0]; i++) load_err(T[i].yaml, T[i].want);
}

/* What 2.42 accepts that a stricter reading would refuse. */
static void test_lenient_like_prometheus(void **state) {
    (void)state;
    cfg_config *c =
        load_ok("storage: ~\ntracing: ~\nremote_read: ~\n"
                "scrape_configs:\n"
                "  - job_name: a\n"
                "    scheme: HTTPS\n"
                "    sample_limit: 18446744073709551616\n"
                "    kubernetes_sd_configs: ~\n"
                "    dns_sd_configs: [{names: [x], type: a, port: 70000}]\n"
                "    http_sd_configs: [{url: 'http://sd', bearer_token: x, bearer_token_file: y}]\n"
                "    tls_config: {min_version: ~}\n");
    const cfg_scrape *s = &c->scrapes[0];
    assert_string_equal(s->scheme, "HTTPS");
    assert_true(s->sample_limit == UINT64_MAX);
    assert_int_equal(s->sd.ndns, 1);
    assert_int_equal(s->sd.dns[0].type, CFG_DNS_A);
    /* http_sd does not validate in 2.42; the token wins */
    assert_string_equal(s->sd.https[0].http.auth_credentials, "x");
    assert_string_equal(s->sd.https[0].http.auth_type, "Bearer");
    cfg_free(c);
}

static void test_equality(void **state) {
    (void)state;
    const char *y = "scrape_configs:\n"
                    "  - job_name: a\n"
                    "    params: {x: [1]}\n"
                    "    static_configs: [{targets: ['a:1'], labels: {k: v}}]\n"
                    "    file_sd_configs: [{files: [f.json]}]\n"
                    "    relabel_configs: [{source_labels: [x], target_label: y, regex: '(.+)'}]\n";
    cfg_config *a = load_ok(y), *b = load_ok(y);
    assert_true(cfg_scrape_equal(&a->scrapes[0], &b->scrapes[0]));
    assert_true(cfg_sd_equal(&a->scrapes[0].sd, &b->scrapes[0].sd));
    cfg_free(b);
    /* a different regex: same discovery, different job */
    b = load_ok("scrape_configs:\n"
                "  - job_name: a\n"
                "    params: {x: [1]}\n"
                "    static_configs: [{targets: ['a:1'], labels: {k: v}}]\n"
                "    file_sd_configs: [{files: [f.json]}]\n"
                "    relabel_configs: [{source_labels: [x], target_label: y, regex: '(.*)'}]\n");
    assert_false(cfg_scrape_equal(&a->scrapes[0], &b->scrapes[0]));
    assert_true(cfg_sd_equal(&a->scrapes[0].sd, &b->scrapes[0].sd));
    cfg_free(b);
    /* a different label value: different discovery */
    b = load_ok("scrape_configs:\n"
                "  - job_name: a\n"
                "    params: {x: [1]}\n"
                "    static_configs: [{targets: ['a:1'], labels: {k: w}}]\n"
                "    file_sd_configs: [{files: [f.json]}]\n"
                "    relabel_configs: [{source_labels: [x], target_label: y, regex: '(.+)'}]\n");
    assert_false(cfg_scrape_equal(&a->scrapes[0], &b->scrapes[0]));
    assert_false(cfg_sd_equal(&a->scrapes[0].sd, &b->scrapes[0].sd));
    cfg_free(b);
    /* a different interval or param */
    b = load_ok("scrape_configs:\n"
                "  - job_name: a\n"
                "    scrape_interval: 30s\n"
                "    params: {x: [1]}\n"
                "    static_configs: [{targets: ['a:1'], labels: {k: v}}]\n"
                "    file_sd_configs: [{files: [f.json]}]\n"
                "    relabel_configs: [{source_labels: [x], target_label: y, regex: '(.+)'}]\n");
    assert_false(cfg_scrape_equal(&a->scrapes[0], &b->scrapes[0]));
    cfg_free(b);
    cfg_free(a);
}

static void test_limits(void **state) {
    (void)state;
    cfg_config *c = NULL;
    /* nesting */
    char deep[400];
    size_t k = 0;
    for (int i = 0; i < 100; i++) deep[k++] = '[';
    for (int i = 0; i < 100; i++) deep[k++] = ']';
    deep[k] = 0;
    assert_int_equal(cfg_load_buf(deep, k, "t.yml", NULL, &c, err, sizeof err), BASE_E_LIMIT);
    assert_string_equal(err, "t.yml:1: nesting deeper than 64 levels");
    /* node count */
    size_t big = 1100000;
    char *many = malloc(big * 2 + 8);
    assert_non_null(many);
    k = 0;
    many[k++] = '[';
    for (size_t i = 0; i < big; i++) {
        many[k++] = 'a';
        many[k++] = ',';
    }
    many[k - 1] = ']';
    assert_int_equal(cfg_load_buf(many, k, "t.yml", NULL, &c, err, sizeof err), BASE_E_LIMIT);
    assert_string_equal(err, "t.yml:1: more than 1000000 YAML nodes");
    /* decoding work: 3000 aliases of a 1000-target group */
    k = (size_t)snprintf(many, big * 2,
                         "scrape_configs:\n  - job_name: a\n    static_configs:\n"
                         "      - &g {targets: &t [");
    for (int i = 0; i < 1000; i++) k += (size_t)snprintf(many + k, big * 2 - k, "%sx", i ? "," : "");
    k += (size_t)snprintf(many + k, big * 2 - k, "]}\n");
    for (int i = 0; i < 3000; i++) k += (size_t)snprintf(many + k, big * 2 - k, "      - *g\n");
    assert_int_equal(cfg_load_buf(many, k, "t.yml", NULL, &c, err, sizeof err), BASE_E_LIMIT);
    assert_non_null(strstr(err, "document contains excessive aliasing"));
    free(many);
    /* an alias cycle: refused */
    const char *cyc = "scrape_configs: &a\n  - *a\n";
    assert_int_equal(cfg_load_buf(cyc, strlen(cyc), "t.yml", NULL, &c, err, sizeof err), BASE_E_PARSE);
    assert_non_null(strstr(err, "yaml: anchor value contains itself"));
    /* file size */
    assert_int_equal(cfg_load_buf("", (size_t)65 << 20, "t.yml", NULL, &c, err, sizeof err), BASE_E_LIMIT);
    /* missing file */
    assert_int_equal(cfg_load_file("/nonexistent/prometheus.yml", &c, err, sizeof err), BASE_E_IO);
    assert_non_null(strstr(err, "/nonexistent/prometheus.yml"));
}

/* An alias chain whose expansion is enormous ("billion laughs" through
 * merge keys): stopped by the visit count, not by time or memory. */
static void test_alias_bomb(void **state) {
    (void)state;
    char bomb[4096];
    size_t k = (size_t)snprintf(bomb, sizeof bomb, "m0: &m0 {a: 1, b: 2}\n");
    for (int i = 1; i < 9; i++) {
        k += (size_t)snprintf(bomb + k, sizeof bomb - k, "m%d: &m%d {<<: [", i, i);
        for (int j = 0; j < 10; j++)
            k += (size_t)snprintf(bomb + k, sizeof bomb - k, "%s*m%d", j ? ", " : "", i - 1);
        k += (size_t)snprintf(bomb + k, sizeof bomb - k, "]}\n");
    }
    k += (size_t)snprintf(bomb + k, sizeof bomb - k, "<<: *m8\n");
    cfg_config *c = NULL;
    assert_int_equal(cfg_load_buf(bomb, k, "t.yml", NULL, &c, err, sizeof err), BASE_E_LIMIT);
    assert_non_null(strstr(err, "document contains excessive aliasing"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_inheritance),
        cmocka_unit_test(test_every_scrape_field),
        cmocka_unit_test(test_sd_alerting_remote_write),
        cmocka_unit_test(test_relative_paths),
        cmocka_unit_test(test_yaml_corners),
        cmocka_unit_test(test_fixture_remote_write_alerting),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_lenient_like_prometheus),
        cmocka_unit_test(test_equality),
        cmocka_unit_test(test_limits),
        cmocka_unit_test(test_alias_bomb),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
