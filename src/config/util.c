/* util.c -- freeing, finding and comparing loaded configurations.
 *
 * cfg_free() walks the whole tree; it also frees the half-built configs
 * that load.c abandons after an error, so every free here accepts NULL
 * and zeroed members. The equality functions compare every field that
 * changes what a job or a discovery does (so that a reload can keep the
 * pools of unchanged jobs); strings compare NULL equal to "".
 */
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "config/config.h"

static void free_strs(char **v, size_t n) {
    for (size_t i = 0; i < n; i++) free(v[i]);
    free(v);
}

static void free_kvs(cfg_kvs *k) {
    for (size_t i = 0; i < k->n; i++) {
        free(k->v[i].name);
        free(k->v[i].value);
    }
    free(k->v);
}

/* Every string a cfg_http owns, once, for cfg_http_clear and cfg_http_copy. */
#define CFG__HTTP_STRINGS(X)                                                                                 \
    X(basic_auth_username)                                                                                   \
    X(basic_auth_password)                                                                                   \
    X(basic_auth_password_file)                                                                              \
    X(auth_type)                                                                                             \
    X(auth_credentials)                                                                                      \
    X(auth_credentials_file)                                                                                 \
    X(tls.ca_file)                                                                                           \
    X(tls.cert_file)                                                                                         \
    X(tls.key_file)                                                                                          \
    X(tls.server_name)                                                                                       \
    X(tls.min_version)                                                                                       \
    X(tls.max_version)                                                                                       \
    X(proxy_url)

void cfg_http_clear(cfg_http *h) {
#define FREE(f) free(h->f);
    CFG__HTTP_STRINGS(FREE)
#undef FREE
    memset(h, 0, sizeof *h);
}

int cfg_http_copy(cfg_http *dst, const cfg_http *src) {
    *dst = *src;
#define NUL(f) dst->f = NULL;
    CFG__HTTP_STRINGS(NUL)
#undef NUL
#define DUP(f)                                                                                               \
    if (src->f && !(dst->f = strdup(src->f))) goto fail;
    CFG__HTTP_STRINGS(DUP)
#undef DUP
    return 0;
fail:
    cfg_http_clear(dst);
    return BASE_E_NOMEM;
}

static void free_rules(relabel_rule *r, size_t n) {
    for (size_t i = 0; i < n; i++) relabel_rule_clear(&r[i]);
    free(r);
}

static void free_sd(cfg_sd *sd) {
    for (size_t i = 0; i < sd->nstatics; i++) {
        free_strs(sd->statics[i].targets, sd->statics[i].ntargets);
        free_kvs(&sd->statics[i].labels);
    }
    free(sd->statics);
    for (size_t i = 0; i < sd->nfiles; i++) free_strs(sd->files[i].files, sd->files[i].nfiles);
    free(sd->files);
    for (size_t i = 0; i < sd->ndns; i++) free_strs(sd->dns[i].names, sd->dns[i].nnames);
    free(sd->dns);
    for (size_t i = 0; i < sd->nhttps; i++) {
        free(sd->https[i].url);
        cfg_http_clear(&sd->https[i].http);
    }
    free(sd->https);
}

static void free_scrape(cfg_scrape *s) {
    free(s->job_name);
    free(s->metrics_path);
    free(s->scheme);
    for (size_t i = 0; i < s->nparams; i++) {
        free(s->params[i].name);
        free_strs(s->params[i].values, s->params[i].nvalues);
    }
    free(s->params);
    cfg_http_clear(&s->http);
    free_sd(&s->sd);
    free_rules(s->relabel, s->nrelabel);
    free_rules(s->metric_relabel, s->nmetric_relabel);
}

void cfg_free(cfg_config *c) {
    if (!c) return;
    free(c->path);
    free(c->text);
    free_kvs(&c->global.external_labels);
    free(c->global.query_log_file);
    free_strs(c->rule_files, c->nrule_files);
    for (size_t i = 0; i < c->nscrapes; i++) free_scrape(&c->scrapes[i]);
    free(c->scrapes);
    free_rules(c->alerting.alert_relabel, c->alerting.nalert_relabel);
    for (size_t i = 0; i < c->alerting.nams; i++) {
        cfg_alertmanager *a = &c->alerting.ams[i];
        free(a->scheme);
        free(a->path_prefix);
        free(a->api_version);
        cfg_http_clear(&a->http);
        free_sd(&a->sd);
        free_rules(a->relabel, a->nrelabel);
    }
    free(c->alerting.ams);
    for (size_t i = 0; i < c->nremote_writes; i++) {
        cfg_remote_write *w = &c->remote_writes[i];
        free(w->url);
        free(w->name);
        free_kvs(&w->headers);
        free_rules(w->write_relabel, w->nwrite_relabel);
        cfg_http_clear(&w->http);
    }
    free(c->remote_writes);
    free(c);
}

const cfg_scrape *cfg_find_scrape(const cfg_config *c, const char *job) {
    if (!c || !job) return NULL;
    for (size_t i = 0; i < c->nscrapes; i++)
        if (c->scrapes[i].job_name && strcmp(c->scrapes[i].job_name, job) == 0) return &c->scrapes[i];
    return NULL;
}

/* ---- equality ------------------------------------------------------------ */

static int str_eq(const char *a, const char *b) {
    return strcmp(a ? a : "", b ? b : "") == 0;
}

static int strs_eq(char *const *a, size_t na, char *const *b, size_t nb) {
    if (na != nb) return 0;
    for (size_t i = 0; i < na; i++)
        if (!str_eq(a[i], b[i])) return 0;
    return 1;
}

static int kvs_eq(const cfg_kvs *a, const cfg_kvs *b) {
    if (a->n != b->n) return 0;
    for (size_t i = 0; i < a->n; i++)
        if (!str_eq(a->v[i].name, b->v[i].name) || !str_eq(a->v[i].value, b->v[i].value)) return 0;
    return 1;
}

int cfg_http_equal(const cfg_http *a, const cfg_http *b) {
    return a->has_basic_auth == b->has_basic_auth && str_eq(a->basic_auth_username, b->basic_auth_username) &&
           str_eq(a->basic_auth_password, b->basic_auth_password) &&
           str_eq(a->basic_auth_password_file, b->basic_auth_password_file) &&
           a->has_authorization == b->has_authorization && str_eq(a->auth_type, b->auth_type) &&
           str_eq(a->auth_credentials, b->auth_credentials) &&
           str_eq(a->auth_credentials_file, b->auth_credentials_file) &&
           str_eq(a->tls.ca_file, b->tls.ca_file) && str_eq(a->tls.cert_file, b->tls.cert_file) &&
           str_eq(a->tls.key_file, b->tls.key_file) && str_eq(a->tls.server_name, b->tls.server_name) &&
           str_eq(a->tls.min_version, b->tls.min_version) && str_eq(a->tls.max_version, b->tls.max_version) &&
           a->tls.insecure_skip_verify == b->tls.insecure_skip_verify && str_eq(a->proxy_url, b->proxy_url) &&
           a->follow_redirects == b->follow_redirects && a->enable_http2 == b->enable_http2;
}

static int rules_eq(const relabel_rule *a, size_t na, const relabel_rule *b, size_t nb) {
    if (na != nb) return 0;
    for (size_t i = 0; i < na; i++)
        if (!relabel_rule_equal(&a[i], &b[i])) return 0;
    return 1;
}

int cfg_sd_equal(const cfg_sd *a, const cfg_sd *b) {
    if (a->nstatics != b->nstatics || a->nfiles != b->nfiles || a->ndns != b->ndns || a->nhttps != b->nhttps)
        return 0;
    for (size_t i = 0; i < a->nstatics; i++)
        if (!strs_eq(a->statics[i].targets, a->statics[i].ntargets, b->statics[i].targets,
                     b->statics[i].ntargets) ||
            !kvs_eq(&a->statics[i].labels, &b->statics[i].labels))
            return 0;
    for (size_t i = 0; i < a->nfiles; i++)
        if (!strs_eq(a->files[i].files, a->files[i].nfiles, b->files[i].files, b->files[i].nfiles) ||
            a->files[i].refresh_interval_ms != b->files[i].refresh_interval_ms)
            return 0;
    for (size_t i = 0; i < a->ndns; i++)
        if (!strs_eq(a->dns[i].names, a->dns[i].nnames, b->dns[i].names, b->dns[i].nnames) ||
            a->dns[i].type != b->dns[i].type || a->dns[i].port != b->dns[i].port ||
            a->dns[i].refresh_interval_ms != b->dns[i].refresh_interval_ms)
            return 0;
    for (size_t i = 0; i < a->nhttps; i++)
        if (!str_eq(a->https[i].url, b->https[i].url) ||
            a->https[i].refresh_interval_ms != b->https[i].refresh_interval_ms ||
            !cfg_http_equal(&a->https[i].http, &b->https[i].http))
            return 0;
    return 1;
}

int cfg_scrape_equal(const cfg_scrape *a, const cfg_scrape *b) {
    if (!str_eq(a->job_name, b->job_name) || a->scrape_interval_ms != b->scrape_interval_ms ||
        a->scrape_timeout_ms != b->scrape_timeout_ms || !str_eq(a->metrics_path, b->metrics_path) ||
        !str_eq(a->scheme, b->scheme) || a->honor_labels != b->honor_labels ||
        a->honor_timestamps != b->honor_timestamps || a->sample_limit != b->sample_limit ||
        a->label_limit != b->label_limit || a->label_name_length_limit != b->label_name_length_limit ||
        a->label_value_length_limit != b->label_value_length_limit || a->target_limit != b->target_limit ||
        a->body_size_limit != b->body_size_limit || a->nparams != b->nparams)
        return 0;
    for (size_t i = 0; i < a->nparams; i++)
        if (!str_eq(a->params[i].name, b->params[i].name) ||
            !strs_eq(a->params[i].values, a->params[i].nvalues, b->params[i].values, b->params[i].nvalues))
            return 0;
    return cfg_http_equal(&a->http, &b->http) && cfg_sd_equal(&a->sd, &b->sd) &&
           rules_eq(a->relabel, a->nrelabel, b->relabel, b->nrelabel) &&
           rules_eq(a->metric_relabel, a->nmetric_relabel, b->metric_relabel, b->nmetric_relabel);
}
