/* load.c -- decodes the YAML tree of a prometheus.yml into a cfg_config,
 * strictly, as Prometheus 2.42 does with yaml.UnmarshalStrict and its
 * UnmarshalYAML/Validate methods.
 *
 * One function per Go type (dec_scrape for config.ScrapeConfig, ...). A
 * mapping becomes a list of (key, value) pairs (merge keys `<<` expanded,
 * explicit keys winning); each pair is looked up in the type's field list:
 * an unknown key is `field X not found in type T` with T as yaml.v2 prints
 * Go's type, a known key seen twice `field X already set in type T`, a
 * value of the wrong kind `cannot unmarshal !!str `x` into uint`. Service
 * discovery mechanisms that Prometheus has and Kelvin does not (kubernetes,
 * consul, ...) get their own message. After the fields, the type's
 * validation runs in Prometheus's order with Prometheus's words. Every
 * message is "NAME:LINE: words"; LINE is the line of the value at fault,
 * or of the entry (scrape config, remote write, ...) for whole-entry rules.
 *
 * Ownership: decoders write straight into the cfg_config being built and
 * attach every allocation before the next fallible step, so cfg_free()
 * releases a half-built config after an error.
 *
 * Invariants after a successful load: every scrape has a job_name, a
 * positive interval, 0 < timeout <= interval (Prometheus allows 0 only if
 * the global one is 0, which the defaults prevent), metrics_path and
 * scheme are non-NULL; every relabel rule is validated; paths are
 * absolute and clean.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/err.h"
#include "base/path.h"
#include "base/str.h"
#include "base/time.h"
#include "config/config.h"
#include "config/config_int.h"
#include "labels/labels.h"

typedef struct dec {
    cfg_ydoc *doc;
    const char *name;
    const char *dir;
    char *err;
    size_t errlen;
    char *q[4]; /* recent quoted strings (qs) */
    int qi;
} dec;

typedef struct pair {
    const cfg_ynode *k, *v;
    int explicit;
} pair;

typedef struct pairs {
    pair *v;
    size_t n, cap;
} pairs;

static int derr(dec *d, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int derr(dec *d, int line, const char *fmt, ...) {
    if (d->err && d->errlen) {
        int k = snprintf(d->err, d->errlen, "%s:%d: ", d->name, line);
        if (k >= 0 && (size_t)k < d->errlen) {
            va_list ap;
            va_start(ap, fmt);
            vsnprintf(d->err + k, d->errlen - (size_t)k, fmt, ap);
            va_end(ap);
        }
    }
    return BASE_E_INVAL;
}

static int nomem(dec *d) {
    return base_errf(d->err, d->errlen, BASE_E_NOMEM, "%s: out of memory", d->name);
}

/* Go's %q of s (printable UTF-8 kept, the rest escaped); valid until four
 * more calls. */
static const char *qs(dec *d, const char *s) {
    size_t n = strlen(s);
    char *o = malloc(n * 4 + 3);
    if (!o) return "\"?\"";
    size_t k = 0;
    o[k++] = '"';
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') {
            o[k++] = '\\';
            o[k++] = (char)c;
        } else if (c == '\n') {
            o[k++] = '\\';
            o[k++] = 'n';
        } else if (c == '\t') {
            o[k++] = '\\';
            o[k++] = 't';
        } else if (c == '\r') {
            o[k++] = '\\';
            o[k++] = 'r';
        } else if (c < 0x20 || c == 0x7f) {
            k += (size_t)sprintf(o + k, "\\x%02x", c);
        } else {
            o[k++] = (char)c;
        }
    }
    o[k++] = '"';
    o[k] = 0;
    free(d->q[d->qi]);
    d->q[d->qi] = o;
    d->qi = (d->qi + 1) % 4;
    return o;
}

static int visit(dec *d, const cfg_ynode *n) {
    if (++d->doc->visits > CFG_YAML_MAX_VISITS)
        return base_errf(d->err, d->errlen, BASE_E_LIMIT, "%s:%d: document contains excessive aliasing",
                         d->name, n ? n->line : 0);
    return 0;
}

static int is_null(const cfg_ynode *n) {
    if (!n) return 1;
    if (n->kind != CFG_Y_SCALAR) return 0;
    cfg_yresolved r;
    cfg_yaml_resolve(n, &r);
    return r.tag == CFG_YT_NULL;
}

/* yaml.v2's "cannot unmarshal" (values over 10 bytes shortened). */
static int terr(dec *d, const cfg_ynode *n, const char *type) {
    const char *tag = cfg_yaml_short_tag(n);
    if (n->kind != CFG_Y_SCALAR) return derr(d, n->line, "cannot unmarshal %s into %s", tag, type);
    if (n->len > 10) return derr(d, n->line, "cannot unmarshal %s `%.7s...` into %s", tag, n->val, type);
    return derr(d, n->line, "cannot unmarshal %s `%s` into %s", tag, n->val, type);
}

/* ---- mappings ---------------------------------------------------------- */

static int pairs_push(dec *d, pairs *ps, const cfg_ynode *k, const cfg_ynode *v, int explicit) {
    if (ps->n == ps->cap) {
        size_t nc = ps->cap ? ps->cap * 2 : 16;
        pair *na = realloc(ps->v, nc * sizeof *na);
        if (!na) return nomem(d);
        ps->v = na;
        ps->cap = nc;
    }
    ps->v[ps->n++] = (pair){k, v, explicit};
    return 0;
}

static int is_merge_key(const cfg_ynode *k) {
    if (k->kind != CFG_Y_SCALAR) return 0;
    cfg_yresolved r;
    cfg_yaml_resolve(k, &r);
    return r.tag == CFG_YT_MERGE;
}

static int key_in(const pairs *ps, size_t upto, const cfg_ynode *k) {
    for (size_t i = 0; i < upto; i++)
        if (ps->v[i].k->kind == CFG_Y_SCALAR && k->kind == CFG_Y_SCALAR && ps->v[i].k->len == k->len &&
            memcmp(ps->v[i].k->val, k->val, k->len) == 0)
            return 1;
    return 0;
}

static int collect(dec *d, const cfg_ynode *m, pairs *ps, int explicit, int depth);

/* Adds the pairs of merged mapping m not already in ps. */
static int merge_one(dec *d, const cfg_ynode *m, pairs *ps, int depth) {
    if (m->kind != CFG_Y_MAP)
        return derr(d, m->line, "map merge requires map or sequence of maps as the value");
    if (++d->doc->merges > CFG_YAML_MAX_MERGES)
        return base_errf(d->err, d->errlen, BASE_E_LIMIT, "%s:%d: document contains excessive aliasing",
                         d->name, m->line);
    pairs tmp = {0};
    int rc = collect(d, m, &tmp, 0, depth + 1);
    size_t base = ps->n;
    for (size_t i = 0; rc == 0 && i < tmp.n; i++)
        if (!key_in(ps, base, tmp.v[i].k)) rc = pairs_push(d, ps, tmp.v[i].k, tmp.v[i].v, 0);
    free(tmp.v);
    return rc;
}

static int collect(dec *d, const cfg_ynode *m, pairs *ps, int explicit, int depth) {
    if (depth > CFG_YAML_MAX_DEPTH) return derr(d, m->line, "merge keys nested too deeply");
    int rc = visit(d, m);
    for (size_t i = 0; rc == 0 && i + 1 < m->n; i += 2)
        if (!is_merge_key(m->kids[i])) rc = pairs_push(d, ps, m->kids[i], m->kids[i + 1], explicit);
    for (size_t i = 0; rc == 0 && i + 1 < m->n; i += 2) {
        if (!is_merge_key(m->kids[i])) continue;
        const cfg_ynode *v = m->kids[i + 1];
        if (v->kind == CFG_Y_SEQ) {
            for (size_t j = 0; rc == 0 && j < v->n; j++) rc = merge_one(d, v->kids[j], ps, depth);
        } else {
            rc = merge_one(d, v, ps, depth);
        }
    }
    return rc;
}

/* The pairs of a mapping destined for Go type `type`. */
static int map_pairs(dec *d, const cfg_ynode *n, const char *type, pairs *ret) {
    memset(ret, 0, sizeof *ret);
    if (is_null(n)) return 0;
    if (n->kind != CFG_Y_MAP) return terr(d, n, type);
    int rc = collect(d, n, ret, 1, 0);
    for (size_t i = 0; rc == 0 && i < ret->n; i++)
        if (ret->v[i].k->kind != CFG_Y_SCALAR) rc = terr(d, ret->v[i].k, "string");
    return rc;
}

/* Index of pair i's key in names (NULL-terminated); for a field Kelvin
 * does not support whose value is null (FIELD_SKIP); or < 0 with the
 * error written: unknown field, unsupported mechanism, repeated field. */
static const char *const UNSUPPORTED_SD[] = {"azure_sd_configs",        "consul_sd_configs",
                                             "digitalocean_sd_configs", "docker_sd_configs",
                                             "dockerswarm_sd_configs",  "ec2_sd_configs",
                                             "eureka_sd_configs",       "gce_sd_configs",
                                             "hetzner_sd_configs",      "ionos_sd_configs",
                                             "kubernetes_sd_configs",   "kuma_sd_configs",
                                             "lightsail_sd_configs",    "linode_sd_configs",
                                             "marathon_sd_configs",     "nerve_sd_configs",
                                             "nomad_sd_configs",        "openstack_sd_configs",
                                             "ovhcloud_sd_configs",     "puppetdb_sd_configs",
                                             "scaleway_sd_configs",     "serverset_sd_configs",
                                             "triton_sd_configs",       "uyuni_sd_configs",
                                             "vultr_sd_configs",        NULL};
/* fields Prometheus 2.42 reads that Kelvin does not implement yet */
static const char *const UNSUPPORTED[] = {
    "oauth2", "proxy_connect_header", "sigv4", "remote_read", "storage", "tracing", NULL};

#define FIELD_SKIP (-1000) /* below every BASE_E_* */

static int field(dec *d, const pairs *ps, size_t i, const char *const *names, const char *type, int sd) {
    const cfg_ynode *k = ps->v[i].k;
    int idx = -1;
    for (int j = 0; names[j]; j++)
        if (strlen(names[j]) == k->len && memcmp(names[j], k->val, k->len) == 0) {
            idx = j;
            break;
        }
    if (idx < 0) {
        int sd_unsup = sd && cfg_yaml_one_of(k->val, UNSUPPORTED_SD),
            unsup = cfg_yaml_one_of(k->val, UNSUPPORTED);
        /* an unsupported section left empty (null) configures nothing */
        if ((sd_unsup || unsup) && is_null(ps->v[i].v)) return FIELD_SKIP;
        if (sd_unsup)
            return derr(d, k->line,
                        "%s is not supported by Kelvin yet (supported: static_configs, file_sd_configs, "
                        "dns_sd_configs, http_sd_configs)",
                        k->val);
        if (unsup) return derr(d, k->line, "%s is not supported by Kelvin yet", k->val);
        return derr(d, k->line, "field %s not found in type %s", k->val, type);
    }
    if (ps->v[i].explicit)
        for (size_t j = 0; j < i; j++)
            if (ps->v[j].explicit && strcmp(ps->v[j].k->val, k->val) == 0)
                return derr(d, k->line, "field %s already set in type %s", k->val, type);
    return idx;
}

/* Decodes mapping n of Go type `type` whose fields are names: fn(d, index,
 * value, ctx) for each field present, in order; stops at the first error. */
typedef int field_fn(dec *d, int f, const cfg_ynode *v, void *ctx);
static int dec_fields(dec *d, const cfg_ynode *n, const char *type, const char *const *names, field_fn *fn,
                      void *ctx) {
    pairs ps;
    int rc = map_pairs(d, n, type, &ps);
    for (size_t i = 0; rc == 0 && i < ps.n; i++) {
        int f = field(d, &ps, i, names, type, 0);
        if (f != FIELD_SKIP) rc = f < 0 ? BASE_E_INVAL : fn(d, f, ps.v[i].v, ctx);
    }
    free(ps.v);
    return rc;
}

/* ---- scalars ----------------------------------------------------------- */

/* Any scalar's text (yaml.v2 sets a string from any scalar); null: "". */
static int get_str(dec *d, const cfg_ynode *n, const char *type, char **out) {
    int rc = visit(d, n);
    if (rc) return rc;
    if (n->kind != CFG_Y_SCALAR) return terr(d, n, type);
    char *s = strdup(is_null(n) ? "" : n->val);
    if (!s) return nomem(d);
    free(*out);
    *out = s;
    return 0;
}

static int get_bool(dec *d, const cfg_ynode *n, int *out) {
    int rc = visit(d, n);
    if (rc) return rc;
    cfg_yresolved r;
    cfg_yaml_resolve(n, &r);
    if (n->kind == CFG_Y_SCALAR && r.tag == CFG_YT_NULL) {
        *out = 0;
        return 0;
    }
    if (n->kind != CFG_Y_SCALAR || r.tag != CFG_YT_BOOL) return terr(d, n, "bool");
    *out = r.b;
    return 0;
}

static int get_u64(dec *d, const cfg_ynode *n, const char *type, uint64_t *out) {
    int rc = visit(d, n);
    if (rc) return rc;
    cfg_yresolved r;
    cfg_yaml_resolve(n, &r);
    if (n->kind == CFG_Y_SCALAR) {
        if (r.tag == CFG_YT_NULL) {
            *out = 0;
            return 0;
        }
        if (r.tag == CFG_YT_INT && (r.is_u || r.i >= 0)) {
            *out = r.is_u ? r.u : (uint64_t)r.i;
            return 0;
        }
        if (r.tag == CFG_YT_FLOAT && r.f >= 0 && r.f <= 18446744073709551616.0) {
            /* yaml.v2 compares with float64(MaxUint64), which is 2^64 */
            *out = r.f >= 18446744073709551615.0 ? UINT64_MAX : (uint64_t)r.f;
            return 0;
        }
    }
    return terr(d, n, type);
}

static int get_i64(dec *d, const cfg_ynode *n, const char *type, int64_t *out) {
    int rc = visit(d, n);
    if (rc) return rc;
    cfg_yresolved r;
    cfg_yaml_resolve(n, &r);
    if (n->kind == CFG_Y_SCALAR) {
        if (r.tag == CFG_YT_NULL) {
            *out = 0;
            return 0;
        }
        if (r.tag == CFG_YT_INT && !r.is_u) {
            *out = r.i;
            return 0;
        }
        if (r.tag == CFG_YT_FLOAT && r.f >= -9223372036854775808.0 && r.f < 9223372036854775808.0) {
            *out = (int64_t)r.f;
            return 0;
        }
    }
    return terr(d, n, type);
}

/* model.Duration: unmarshalled as a string, then model.ParseDuration. */
static int get_dur(dec *d, const cfg_ynode *n, int64_t *out) {
    int rc = visit(d, n);
    if (rc) return rc;
    if (n->kind != CFG_Y_SCALAR) return terr(d, n, "string");
    if (is_null(n)) {
        *out = 0;
        return 0;
    }
    if (n->len == 0) return derr(d, n->line, "empty duration string");
    int64_t ms;
    rc = base_parse_duration_ms(n->val, &ms);
    if (rc == BASE_E_RANGE) return derr(d, n->line, "duration out of range");
    if (rc) return derr(d, n->line, "not a valid duration string: %s", qs(d, n->val));
    *out = ms;
    return 0;
}

static int get_strs(dec *d, const cfg_ynode *n, char ***out, size_t *nout) {
    int rc = visit(d, n);
    if (rc) return rc;
    if (is_null(n)) return 0;
    if (n->kind != CFG_Y_SEQ) return terr(d, n, "[]string");
    char **v = calloc(n->n ? n->n : 1, sizeof *v);
    if (!v) return nomem(d);
    for (size_t i = 0; i < *nout; i++) free((*out)[i]);
    free(*out);
    *out = v;
    *nout = 0;
    for (size_t i = 0; i < n->n; i++) {
        if ((rc = get_str(d, n->kids[i], "string", &v[i]))) return rc;
        *nout = i + 1;
    }
    return 0;
}

/* A growable array of elem-sized entries; the new one is zeroed. */
static void *push(dec *d, void **arr, size_t *n, size_t elem) {
    size_t k = *n;
    if (k == 0 || (k & (k - 1)) == 0) {
        void *na = realloc(*arr, (k ? 2 * k : 1) * elem);
        if (!na) {
            nomem(d);
            return NULL;
        }
        *arr = na;
    }
    char *e = (char *)*arr + k * elem;
    memset(e, 0, elem);
    (*n)++;
    return e;
}

/* ---- paths -------------------------------------------------------------- */

/* config.JoinDir: "" and absolute paths stay; others go under dir. */
static int join_dir(dec *d, char **path) {
    char *p = *path;
    if (!p || !*p || p[0] == '/') return 0;
    char *j = base_path_join(d->dir, p);
    if (!j) return nomem(d);
    free(p);
    *path = j;
    return 0;
}

/* ---- URLs --------------------------------------------------------------- */

/* Enough of Go's url.Parse for the checks Prometheus makes: the scheme
 * (lowercased) and the host. Returns -1 with the error for the bytes Go
 * refuses (control characters, spaces in the host). */
static int url_parts(dec *d, int line, const char *u, char *scheme, size_t sl, const char **host,
                     size_t *hl) {
    for (const char *c = u; *c; c++)
        if ((unsigned char)*c < 0x20 || *c == 0x7f)
            return derr(d, line, "parse %s: net/url: invalid control character in URL", qs(d, u));
    scheme[0] = 0;
    *host = "";
    *hl = 0;
    const char *c = u;
    if ((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z')) {
        while ((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
               *c == '+' || *c == '-' || *c == '.')
            c++;
        if (*c == ':') {
            size_t n = (size_t)(c - u);
            if (n >= sl) n = sl - 1;
            for (size_t i = 0; i < n; i++) scheme[i] = (char)(u[i] >= 'A' && u[i] <= 'Z' ? u[i] + 32 : u[i]);
            scheme[n] = 0;
            c++;
        } else {
            c = u;
        }
    } else if (*c == ':') {
        return derr(d, line, "parse %s: missing protocol scheme", qs(d, u));
    }
    /* percent escapes before the query must be well formed */
    for (const char *x = u; *x && *x != '?'; x++) {
        if (*x != '%') continue;
        if (!isxdigit((unsigned char)x[1]) || !isxdigit((unsigned char)x[2]))
            return derr(d, line, "parse %s: invalid URL escape \"%.*s\"", qs(d, u), (int)strnlen(x, 3), x);
    }
    if (c[0] == '/' && c[1] == '/') {
        c += 2;
        const char *e = c + strcspn(c, "/?#");
        const char *at = memrchr(c, '@', (size_t)(e - c));
        if (at) c = at + 1;
        for (const char *x = c; x < e; x++)
            if (*x == ' ') return derr(d, line, "parse %s: invalid character \" \" in host name", qs(d, u));
        *host = c;
        *hl = (size_t)(e - c);
    }
    return 0;
}

static int get_url(dec *d, const cfg_ynode *n, char **out) {
    int rc = get_str(d, n, "string", out);
    if (rc) return rc;
    char scheme[32];
    const char *h;
    size_t hl;
    return url_parts(d, n->line, *out, scheme, sizeof scheme, &h, &hl);
}

/* ---- common HTTP client ------------------------------------------------- */

typedef struct http_raw {
    char *bearer_token, *bearer_token_file;
    int has_oauth2;
} http_raw;

/* The HTTP client fields, inlined in scrape, alertmanager, remote write
 * and http_sd configs, in this order: basic_auth, authorization,
 * bearer_token, bearer_token_file, tls_config, proxy_url, follow_redirects,
 * enable_http2 (see dec_http_field). */

static int basic_auth_field(dec *d, int f, const cfg_ynode *v, void *ctx) {
    cfg_http *h = ctx;
    if (f == 0) return get_str(d, v, "string", &h->basic_auth_username);
    if (f == 1) return get_str(d, v, "config.Secret", &h->basic_auth_password);
    return get_str(d, v, "string", &h->basic_auth_password_file);
}

static int dec_basic_auth(dec *d, const cfg_ynode *n, cfg_http *h) {
    static const char *const F[] = {"username", "password", "password_file", NULL};
    if (is_null(n)) return 0;
    h->has_basic_auth = 1;
    return dec_fields(d, n, "config.plain", F, basic_auth_field, h);
}

static int authorization_field(dec *d, int f, const cfg_ynode *v, void *ctx) {
    cfg_http *h = ctx;
    if (f == 0) return get_str(d, v, "string", &h->auth_type);
    if (f == 1) return get_str(d, v, "config.Secret", &h->auth_credentials);
    return get_str(d, v, "string", &h->auth_credentials_file);
}

static int dec_authorization(dec *d, const cfg_ynode *n, cfg_http *h) {
    static const char *const F[] = {"type", "credentials", "credentials_file", NULL};
    if (is_null(n)) return 0;
    h->has_authorization = 1;
    return dec_fields(d, n, "config.Authorization", F, authorization_field, h);
}

static int tls_version(dec *d, const cfg_ynode *n, char **out) {
    int rc = get_str(d, n, "string", out);
    if (rc || is_null(n)) return rc; /* null: the unmarshaler is not called */
    static const char *const V[] = {"TLS10", "TLS11", "TLS12", "TLS13", NULL};
    if (cfg_yaml_one_of(*out, V)) return 0;
    return derr(d, n->line, "unknown TLS version: %s", *out);
}

static int tls_field(dec *d, int f, const cfg_ynode *v, void *ctx) {
    cfg_tls *t = ctx;
    switch (f) {
    case 0: return get_str(d, v, "string", &t->ca_file);
    case 1: return get_str(d, v, "string", &t->cert_file);
    case 2: return get_str(d, v, "string", &t->key_file);
    case 3: return get_str(d, v, "string", &t->server_name);
    case 4: return get_bool(d, v, &t->insecure_skip_verify);
    case 5: return tls_version(d, v, &t->min_version);
    default: return tls_version(d, v, &t->max_version);
    }
}

static int dec_tls(dec *d, const cfg_ynode *n, cfg_tls *t) {
    static const char *const F[] = {
        "ca_file",     "cert_file",   "key_file", "server_name", "insecure_skip_verify",
        "min_version", "max_version", NULL};
    return dec_fields(d, n, "config.plain", F, tls_field, t);
}

/* One HTTP client field (idx into HTTP_FIELDS). */
static int dec_http_field(dec *d, int idx, const cfg_ynode *v, cfg_http *h, http_raw *raw) {
    switch (idx) {
    case 0: return dec_basic_auth(d, v, h);
    case 1: return dec_authorization(d, v, h);
    case 2: return get_str(d, v, "config.Secret", &raw->bearer_token);
    case 3: return get_str(d, v, "string", &raw->bearer_token_file);
    case 4: return dec_tls(d, v, &h->tls);
    case 5: return get_url(d, v, &h->proxy_url);
    case 6: return get_bool(d, v, &h->follow_redirects);
    case 7: return get_bool(d, v, &h->enable_http2);
    }
    return 0;
}

static void http_defaults(cfg_http *h) {
    h->follow_redirects = 1;
    h->enable_http2 = 1;
}

static int set_str(dec *d, char **dst, const char *s) {
    char *c = strdup(s);
    if (!c) return nomem(d);
    free(*dst);
    *dst = c;
    return 0;
}

/* bearer_token (bt set) or bearer_token_file becomes an authorization of
 * type Bearer; the string moves from raw to h. */
static int fold_bearer(dec *d, cfg_http *h, http_raw *raw, int bt) {
    h->has_authorization = 1;
    int rc = set_str(d, &h->auth_type, "Bearer");
    if (rc) return rc;
    char **from = bt ? &raw->bearer_token : &raw->bearer_token_file;
    *(bt ? &h->auth_credentials : &h->auth_credentials_file) = *from;
    *from = NULL;
    return 0;
}

static const char SPACES[] = " \t\n\r\v\f"; /* the ASCII white space strings.TrimSpace trims */

/* HTTPClientConfig.Validate (common 0.39) and SetDirectory. With
 * lenient (http_sd_configs, whose 2.42 UnmarshalYAML does not validate),
 * only the folding of bearer_token(_file) into authorization is done. */
static int http_validate_mode(dec *d, int line, cfg_http *h, http_raw *raw, int lenient) {
    int bt = raw->bearer_token && *raw->bearer_token, btf = raw->bearer_token_file && *raw->bearer_token_file;
    int rc = 0;
    if (lenient) {
        if (!h->has_authorization && (bt || btf)) {
            if ((rc = fold_bearer(d, h, raw, bt))) return rc;
        } else if (h->has_authorization && (!h->auth_type || !*h->auth_type)) {
            if ((rc = set_str(d, &h->auth_type, "Bearer"))) return rc;
        }
        goto paths;
    }
    if (bt && btf) return derr(d, line, "at most one of bearer_token & bearer_token_file must be configured");
    if ((h->has_basic_auth || raw->has_oauth2) && (bt || btf))
        return derr(d, line,
                    "at most one of basic_auth, oauth2, bearer_token & bearer_token_file must be configured");
    if (h->has_basic_auth && h->basic_auth_password && *h->basic_auth_password &&
        h->basic_auth_password_file && *h->basic_auth_password_file)
        return derr(d, line, "at most one of basic_auth password & password_file must be configured");
    if (h->has_authorization) {
        if (bt || btf)
            return derr(d, line, "authorization is not compatible with bearer_token & bearer_token_file");
        if (h->auth_credentials && *h->auth_credentials && h->auth_credentials_file &&
            *h->auth_credentials_file)
            return derr(d, line,
                        "at most one of authorization credentials & credentials_file must be configured");
        /* strings.TrimSpace of the type */
        char *t = h->auth_type ? h->auth_type : (char *)"";
        while (*t && strchr(SPACES, *t)) t++;
        size_t tl = strlen(t);
        while (tl && strchr(SPACES, t[tl - 1])) tl--;
        char *trimmed = strndup(t, tl);
        if (!trimmed) return nomem(d);
        free(h->auth_type);
        h->auth_type = trimmed;
        if (!*h->auth_type && (rc = set_str(d, &h->auth_type, "Bearer"))) return rc;
        if (strcasecmp(h->auth_type, "basic") == 0)
            return derr(d, line, "authorization type cannot be set to \"basic\", use \"basic_auth\" instead");
        if (h->has_basic_auth || raw->has_oauth2)
            return derr(d, line, "at most one of basic_auth, oauth2 & authorization must be configured");
    } else if (bt || btf) {
        if ((rc = fold_bearer(d, h, raw, bt))) return rc;
    }
paths:
    if ((rc = join_dir(d, &h->basic_auth_password_file))) return rc;
    if ((rc = join_dir(d, &h->auth_credentials_file))) return rc;
    if ((rc = join_dir(d, &h->tls.ca_file))) return rc;
    if ((rc = join_dir(d, &h->tls.cert_file))) return rc;
    return join_dir(d, &h->tls.key_file);
}

static int http_validate(dec *d, int line, cfg_http *h, http_raw *raw) {
    return http_validate_mode(d, line, h, raw, 0);
}

static void http_raw_free(http_raw *r) {
    free(r->bearer_token);
    free(r->bearer_token_file);
}

/* ---- relabel rules ------------------------------------------------------ */

static int rule_field(dec *d, int f, const cfg_ynode *v, void *ctx) {
    relabel_rule *r = ctx;
    int rc;
    switch (f) {
    case 0:
        if ((rc = get_strs(d, v, &r->source_labels, &r->nsource))) return rc;
        for (size_t j = 0; j < r->nsource; j++)
            if (!(v->kind == CFG_Y_SEQ && is_null(v->kids[j])) &&
                !labels_valid_label_name(base_str_c(r->source_labels[j])))
                return derr(d, v->kind == CFG_Y_SEQ ? v->kids[j]->line : v->line,
                            "%s is not a valid label name", qs(d, r->source_labels[j]));
        return 0;
    case 1: r->has_separator = 1; return get_str(d, v, "string", &r->separator);
    case 2: r->has_regex = 1; return get_str(d, v, "string", &r->regex);
    case 3: return get_u64(d, v, "uint64", &r->modulus);
    case 4: return get_str(d, v, "string", &r->target_label);
    case 5: r->has_replacement = 1; return get_str(d, v, "string", &r->replacement);
    default: {
        char *a = NULL;
        rc = get_str(d, v, "string", &a);
        if (rc == 0 && *a) {
            char msg[256];
            if (relabel_action_parse(a, &r->action, msg, sizeof msg) != 0) rc = derr(d, v->line, "%s", msg);
        }
        free(a);
        return rc;
    }
    }
}

static int dec_rule(dec *d, const cfg_ynode *n, relabel_rule *r) {
    static const char *const F[] = {"source_labels", "separator",   "regex",  "modulus",
                                    "target_label",  "replacement", "action", NULL};
    r->line = n->line;
    int rc = dec_fields(d, n, "relabel.plain", F, rule_field, r);
    if (rc) return rc;
    char msg[512];
    msg[0] = 0;
    if (relabel_rule_validate(r, msg, sizeof msg) != 0) return derr(d, n->line, "%s", msg);
    return 0;
}

/* A list of relabel rules; a null entry is `nullmsg`. */
static int dec_rules(dec *d, const cfg_ynode *n, relabel_rule **out, size_t *nout, const char *nullmsg) {
    int rc = visit(d, n);
    if (rc || is_null(n)) return rc;
    if (n->kind != CFG_Y_SEQ) return terr(d, n, "[]*relabel.Config");
    relabel_rule *v = calloc(n->n ? n->n : 1, sizeof *v);
    if (!v) return nomem(d);
    for (size_t i = 0; i < *nout; i++) relabel_rule_clear(&(*out)[i]);
    free(*out);
    *out = v;
    *nout = 0;
    for (size_t i = 0; i < n->n; i++) {
        relabel_rule_init(&v[i]);
        *nout = i + 1;
        if (is_null(n->kids[i])) return derr(d, n->kids[i]->line, "%s", nullmsg);
        if ((rc = dec_rule(d, n->kids[i], &v[i]))) return rc;
    }
    return 0;
}

/* ---- labels and maps ---------------------------------------------------- */

static int cmp_key(const void *a, const void *b) {
    const cfg_ynode *x = *(const cfg_ynode *const *)a, *y = *(const cfg_ynode *const *)b;
    int c = strcmp(x->val, y->val);
    return c ? c : (x->line > y->line) - (x->line < y->line);
}

/* A map of strings (model.LabelSet when labels, else map[string]string). */
static int dec_kvs(dec *d, const cfg_ynode *n, cfg_kvs *out, int labels, const char *type) {
    pairs ps;
    int rc = map_pairs(d, n, type, &ps);
    for (size_t i = 0; rc == 0 && i < out->n; i++) free(out->v[i].name), free(out->v[i].value);
    if (rc == 0) {
        free(out->v);
        out->v = NULL;
        out->n = 0;
    }
    if (rc == 0 && ps.n && !(out->v = calloc(ps.n, sizeof *out->v))) rc = nomem(d);
    /* duplicates: sort a copy of the explicit keys */
    for (size_t i = 0; rc == 0 && i < ps.n; i++) {
        const cfg_ynode *k = ps.v[i].k;
        if (labels && !labels_valid_label_name((base_str){k->val, k->len}))
            rc = derr(d, k->line, "%s is not a valid label name", qs(d, k->val));
        cfg_kv *kv = &out->v[i];
        if (rc == 0) rc = get_str(d, k, "string", &kv->name);
        if (rc == 0) out->n = i + 1;
        if (rc == 0) rc = get_str(d, ps.v[i].v, labels ? "model.LabelValue" : "string", &kv->value);
    }
    if (rc == 0 && ps.n > 1) {
        /* O(n log n) duplicate check over the explicit keys */
        const cfg_ynode **ks = malloc(ps.n * sizeof *ks);
        size_t nk = 0;
        if (!ks) rc = nomem(d);
        for (size_t i = 0; rc == 0 && i < ps.n; i++)
            if (ps.v[i].explicit) ks[nk++] = ps.v[i].k;
        if (rc == 0) {
            qsort(ks, nk, sizeof *ks, cmp_key);
            for (size_t i = 1; i < nk; i++)
                if (strcmp(ks[i - 1]->val, ks[i]->val) == 0) {
                    const cfg_ynode *later = ks[i - 1]->line > ks[i]->line ? ks[i - 1] : ks[i];
                    rc = derr(d, later->line, "key %s already set in map", qs(d, ks[i]->val));
                    break;
                }
        }
        free(ks);
    }
    free(ps.v);
    return rc;
}

/* ---- service discovery --------------------------------------------------- */

static const char STATIC_TYPE[] =
    "struct { Targets []string \"yaml:\\\"targets\\\"\"; Labels model.LabelSet \"yaml:\\\"labels\\\"\" }";

static int dec_static(dec *d, const cfg_ynode *n, cfg_static *st) {
    static const char *const F[] = {"targets", "labels", NULL};
    pairs ps;
    int rc = map_pairs(d, n, STATIC_TYPE, &ps);
    for (size_t i = 0; rc == 0 && i < ps.n; i++) {
        int f = field(d, &ps, i, F, STATIC_TYPE, 0);
        if (f == FIELD_SKIP) continue;
        if (f < 0) {
            rc = BASE_E_INVAL;
            break;
        }
        if (f == 0) rc = get_strs(d, ps.v[i].v, &st->targets, &st->ntargets);
        if (f == 1) rc = dec_kvs(d, ps.v[i].v, &st->labels, 1, "model.LabelSet");
    }
    free(ps.v);
    return rc;
}

/* ^[^*]*(\*[^/]*)?\.(json|yml|yaml|JSON|YML|YAML)$ */
static int file_sd_name_ok(const char *s) {
    const char *star = strchr(s, '*');
    if (star && strchr(star, '/')) return 0;
    static const char *const EXT[] = {".json", ".yml", ".yaml", ".JSON", ".YML", ".YAML", NULL};
    size_t n = strlen(s);
    for (int i = 0; EXT[i]; i++) {
        size_t e = strlen(EXT[i]);
        if (n >= e && strcmp(s + n - e, EXT[i]) == 0) return 1; /* the suffix has no star */
    }
    return 0;
}

static int file_sd_field(dec *d, int k, const cfg_ynode *v, void *ctx) {
    cfg_file_sd *f = ctx;
    if (k == 0) return get_strs(d, v, &f->files, &f->nfiles);
    return get_dur(d, v, &f->refresh_interval_ms);
}

static int dec_file_sd(dec *d, const cfg_ynode *n, cfg_file_sd *f) {
    static const char *const F[] = {"files", "refresh_interval", NULL};
    f->refresh_interval_ms = 5 * 60 * 1000;
    int rc = dec_fields(d, n, "file.plain", F, file_sd_field, f);
    if (rc) return rc;
    if (f->nfiles == 0)
        return derr(d, n->line, "file service discovery config must contain at least one path name");
    for (size_t i = 0; i < f->nfiles; i++) {
        if (!file_sd_name_ok(f->files[i]))
            return derr(d, n->line, "path name %s is not valid for file discovery", qs(d, f->files[i]));
        if ((rc = join_dir(d, &f->files[i]))) return rc;
    }
    return 0;
}

static int dec_dns_sd(dec *d, const cfg_ynode *n, cfg_dns_sd *s) {
    static const char *const F[] = {"names", "refresh_interval", "type", "port", NULL};
    s->refresh_interval_ms = 30 * 1000;
    char *type = NULL;
    int64_t port = 0;
    pairs ps;
    int rc = map_pairs(d, n, "dns.plain", &ps);
    for (size_t i = 0; rc == 0 && i < ps.n; i++) {
        int k = field(d, &ps, i, F, "dns.plain", 0);
        if (k == FIELD_SKIP) continue;
        if (k < 0) {
            rc = BASE_E_INVAL;
            break;
        }
        const cfg_ynode *v = ps.v[i].v;
        if (k == 0) rc = get_strs(d, v, &s->names, &s->nnames);
        if (k == 1) rc = get_dur(d, v, &s->refresh_interval_ms);
        if (k == 2) rc = get_str(d, v, "string", &type);
        if (k == 3) rc = get_i64(d, v, "int", &port);
    }
    free(ps.v);
    if (rc == 0 && s->nnames == 0)
        rc = derr(d, n->line, "DNS-SD config must contain at least one SRV record name");
    if (rc == 0) {
        const char *t = type ? type : "SRV"; /* an explicit null or "" is invalid */
        for (char *c = type; c && *c; c++)
            if (*c >= 'a' && *c <= 'z') *c = (char)(*c - 32);
        if (strcmp(t, "SRV") == 0) {
            s->type = CFG_DNS_SRV;
        } else if (strcmp(t, "A") == 0 || strcmp(t, "AAAA") == 0 || strcmp(t, "MX") == 0) {
            s->type = t[0] == 'M' ? CFG_DNS_MX : t[1] == 'A' ? CFG_DNS_AAAA : CFG_DNS_A;
            if (port == 0)
                rc = derr(d, n->line, "a port is required in DNS-SD configs for all record types except SRV");
        } else {
            rc = derr(d, n->line, "invalid DNS-SD records type %s", t);
        }
    }
    /* 2.42 takes any int as the port (-1, 70000, ...); kept as given */
    s->port = (unsigned)port;
    free(type);
    return rc;
}

static int dec_http_sd(dec *d, const cfg_ynode *n, cfg_http_sd *s) {
    static const char *const F[] = {"url",
                                    "refresh_interval",
                                    "basic_auth",
                                    "authorization",
                                    "bearer_token",
                                    "bearer_token_file",
                                    "tls_config",
                                    "proxy_url",
                                    "follow_redirects",
                                    "enable_http2",
                                    NULL};
    s->refresh_interval_ms = 60 * 1000;
    http_defaults(&s->http);
    http_raw raw = {0};
    pairs ps;
    int rc = map_pairs(d, n, "http.plain", &ps);
    for (size_t i = 0; rc == 0 && i < ps.n; i++) {
        int k = field(d, &ps, i, F, "http.plain", 0);
        if (k == FIELD_SKIP) continue;
        if (k < 0) {
            rc = BASE_E_INVAL;
            break;
        }
        const cfg_ynode *v = ps.v[i].v;
        if (k == 0) rc = get_str(d, v, "string", &s->url);
        if (k == 1) rc = get_dur(d, v, &s->refresh_interval_ms);
        if (k >= 2) rc = dec_http_field(d, k - 2, v, &s->http, &raw);
    }
    free(ps.v);
    if (rc == 0) {
        if (!s->url || !*s->url) {
            rc = derr(d, n->line, "URL is missing");
        } else {
            char scheme[32];
            const char *h;
            size_t hl;
            rc = url_parts(d, n->line, s->url, scheme, sizeof scheme, &h, &hl);
            if (rc == 0 && strcmp(scheme, "http") != 0 && strcmp(scheme, "https") != 0)
                rc = derr(d, n->line, "URL scheme must be 'http' or 'https'");
            if (rc == 0 && hl == 0) rc = derr(d, n->line, "host is missing in URL");
        }
    }
    if (rc == 0) rc = http_validate_mode(d, n->line, &s->http, &raw, 1);
    http_raw_free(&raw);
    return rc;
}

static const char *const SD_FIELDS[] = {"static_configs", "file_sd_configs", "dns_sd_configs",
                                        "http_sd_configs", NULL};

/* One SD list (idx into SD_FIELDS) appended to sd. */
static int dec_sd_field(dec *d, int idx, const cfg_ynode *v, cfg_sd *sd) {
    static const char *const TYPES[] = {"discovery.StaticConfig", "[]*file.SDConfig", "[]*dns.SDConfig",
                                        "[]*http.SDConfig"};
    int rc = visit(d, v);
    if (rc || is_null(v)) return rc;
    if (v->kind != CFG_Y_SEQ) return terr(d, v, TYPES[idx]);
    for (size_t i = 0; i < v->n; i++) {
        const cfg_ynode *e = v->kids[i];
        if (is_null(e)) return derr(d, e->line, "empty or null section in %s", SD_FIELDS[idx]);
        switch (idx) {
        case 0: {
            cfg_static *st = push(d, (void **)&sd->statics, &sd->nstatics, sizeof *st);
            rc = st ? dec_static(d, e, st) : BASE_E_NOMEM;
            break;
        }
        case 1: {
            cfg_file_sd *f = push(d, (void **)&sd->files, &sd->nfiles, sizeof *f);
            rc = f ? dec_file_sd(d, e, f) : BASE_E_NOMEM;
            break;
        }
        case 2: {
            cfg_dns_sd *s = push(d, (void **)&sd->dns, &sd->ndns, sizeof *s);
            rc = s ? dec_dns_sd(d, e, s) : BASE_E_NOMEM;
            break;
        }
        case 3: {
            cfg_http_sd *s = push(d, (void **)&sd->https, &sd->nhttps, sizeof *s);
            rc = s ? dec_http_sd(d, e, s) : BASE_E_NOMEM;
            break;
        }
        }
        if (rc) return rc;
    }
    return 0;
}

/* config.CheckTargetAddress over the static targets (Prometheus runs it
 * only when the job has no relabel_configs). */
static int check_static_targets(dec *d, const cfg_ynode *entry, const cfg_sd *sd) {
    for (size_t i = 0; i < sd->nstatics; i++)
        for (size_t j = 0; j < sd->statics[i].ntargets; j++)
            if (strchr(sd->statics[i].targets[j], '/'))
                return derr(d, entry->line, "%s is not a valid hostname", qs(d, sd->statics[i].targets[j]));
    return 0;
}

/* ---- scrape configs ------------------------------------------------------ */

/* Field lists: the type's own fields, then HTTP_FIELDS, then SD_FIELDS. */
#define NHTTP 8
#define NSD   4

static const char *const SCRAPE_F[] = {
    "job_name", "honor_labels", "honor_timestamps", "params", "scrape_interval", "scrape_timeout",
    "metrics_path", "scheme", "body_size_limit", "sample_limit", "target_limit", "label_limit",
    "label_name_length_limit", "label_value_length_limit", "relabel_configs", "metric_relabel_configs",
    /* HTTP */
    "basic_auth", "authorization", "bearer_token", "bearer_token_file", "tls_config", "proxy_url",
    "follow_redirects", "enable_http2",
    /* SD */
    "static_configs", "file_sd_configs", "dns_sd_configs", "http_sd_configs", NULL};
#define SCRAPE_OWN 16

static int dec_params(dec *d, const cfg_ynode *n, cfg_scrape *s) {
    pairs ps;
    int rc = map_pairs(d, n, "url.Values", &ps);
    if (rc == 0 && ps.n && !(s->params = calloc(ps.n, sizeof *s->params))) rc = nomem(d);
    for (size_t i = 0; rc == 0 && i < ps.n; i++) {
        cfg_param *p = &s->params[i];
        s->nparams = i + 1;
        if (ps.v[i].explicit && key_in(&ps, i, ps.v[i].k)) {
            rc = derr(d, ps.v[i].k->line, "key %s already set in map", qs(d, ps.v[i].k->val));
            break;
        }
        if ((rc = get_str(d, ps.v[i].k, "string", &p->name))) break;
        rc = get_strs(d, ps.v[i].v, &p->values, &p->nvalues);
    }
    free(ps.v);
    return rc;
}

static int dec_scrape(dec *d, const cfg_ynode *n, cfg_scrape *s) {
    s->line = n->line;
    http_defaults(&s->http);
    s->honor_timestamps = 1;
    http_raw raw = {0};
    int rc = 0;
    if ((rc = set_str(d, &s->metrics_path, "/metrics")) || (rc = set_str(d, &s->scheme, "http"))) return rc;
    pairs ps;
    rc = map_pairs(d, n, "config.ScrapeConfig", &ps);
    for (size_t i = 0; rc == 0 && i < ps.n; i++) {
        int k = field(d, &ps, i, SCRAPE_F, "config.ScrapeConfig", 1);
        if (k == FIELD_SKIP) continue;
        if (k < 0) {
            rc = BASE_E_INVAL;
            break;
        }
        const cfg_ynode *v = ps.v[i].v;
        switch (k) {
        case 0: rc = get_str(d, v, "string", &s->job_name); break;
        case 1: rc = get_bool(d, v, &s->honor_labels); break;
        case 2: rc = get_bool(d, v, &s->honor_timestamps); break;
        case 3: rc = dec_params(d, v, s); break;
        case 4: rc = get_dur(d, v, &s->scrape_interval_ms); break;
        case 5: rc = get_dur(d, v, &s->scrape_timeout_ms); break;
        case 6: rc = get_str(d, v, "string", &s->metrics_path); break;
        case 7: rc = get_str(d, v, "string", &s->scheme); break;
        case 8: {
            char *t = NULL;
            rc = get_str(d, v, "units.Base2Bytes", &t);
            if (rc == 0 && *t) {
                int64_t b;
                char msg[256];
                if (cfg__parse_size(t, &b, msg, sizeof msg) != 0)
                    rc = derr(d, v->line, "%s", msg);
                else
                    s->body_size_limit = b > 0 ? (uint64_t)b : 0;
            } else if (rc == 0) {
                s->body_size_limit = 0;
            }
            free(t);
            break;
        }
        case 9: rc = get_u64(d, v, "uint", &s->sample_limit); break;
        case 10: rc = get_u64(d, v, "uint", &s->target_limit); break;
        case 11: rc = get_u64(d, v, "uint", &s->label_limit); break;
        case 12: rc = get_u64(d, v, "uint", &s->label_name_length_limit); break;
        case 13: rc = get_u64(d, v, "uint", &s->label_value_length_limit); break;
        case 14:
            rc = dec_rules(d, v, &s->relabel, &s->nrelabel,
                           "empty or null target relabeling rule in scrape config");
            break;
        case 15:
            rc = dec_rules(d, v, &s->metric_relabel, &s->nmetric_relabel,
                           "empty or null metric relabeling rule in scrape config");
            break;
        default:
            if (k < SCRAPE_OWN + NHTTP)
                rc = dec_http_field(d, k - SCRAPE_OWN, v, &s->http, &raw);
            else
                rc = dec_sd_field(d, k - SCRAPE_OWN - NHTTP, v, &s->sd);
        }
    }
    free(ps.v);
    if (rc == 0 && (!s->job_name || !*s->job_name)) rc = derr(d, n->line, "job_name is empty");
    if (rc == 0) rc = http_validate(d, n->line, &s->http, &raw);
    if (rc == 0 && s->nrelabel == 0) rc = check_static_targets(d, n, &s->sd);
    if (rc == 0 && strcasecmp(s->scheme, "http") != 0 && strcasecmp(s->scheme, "https") != 0)
        /* Kelvin's own rule: 2.42 accepts any scheme and fails every scrape */
        rc = derr(d, n->line, "scheme %s is not supported for scrape config with job name %s (http or https)",
                  qs(d, s->scheme), qs(d, s->job_name));
    http_raw_free(&raw);
    return rc;
}

/* ---- alerting ------------------------------------------------------------ */

static const char *const AM_F[] = {"scheme", "path_prefix", "timeout", "api_version", "relabel_configs",
                                   /* HTTP */
                                   "basic_auth", "authorization", "bearer_token", "bearer_token_file",
                                   "tls_config", "proxy_url", "follow_redirects", "enable_http2",
                                   /* SD */
                                   "static_configs", "file_sd_configs", "dns_sd_configs", "http_sd_configs",
                                   NULL};
#define AM_OWN 5

static int dec_am(dec *d, const cfg_ynode *n, cfg_alertmanager *a) {
    http_defaults(&a->http);
    a->timeout_ms = 10000;
    http_raw raw = {0};
    int rc;
    if ((rc = set_str(d, &a->scheme, "http")) || (rc = set_str(d, &a->path_prefix, "/")) ||
        (rc = set_str(d, &a->api_version, "v2")))
        return rc;
    pairs ps;
    rc = map_pairs(d, n, "config.AlertmanagerConfig", &ps);
    for (size_t i = 0; rc == 0 && i < ps.n; i++) {
        int k = field(d, &ps, i, AM_F, "config.AlertmanagerConfig", 1);
        if (k == FIELD_SKIP) continue;
        if (k < 0) {
            rc = BASE_E_INVAL;
            break;
        }
        const cfg_ynode *v = ps.v[i].v;
        switch (k) {
        case 0: rc = get_str(d, v, "string", &a->scheme); break;
        case 1: rc = get_str(d, v, "string", &a->path_prefix); break;
        case 2: rc = get_dur(d, v, &a->timeout_ms); break;
        case 3:
            rc = get_str(d, v, "string", &a->api_version);
            if (rc == 0 && strcmp(a->api_version, "v1") != 0 && strcmp(a->api_version, "v2") != 0)
                rc = derr(d, v->line, "expected Alertmanager api version to be one of [v1 v2] but got %s",
                          a->api_version);
            break;
        case 4:
            rc = dec_rules(d, v, &a->relabel, &a->nrelabel,
                           "empty or null Alertmanager target relabeling rule");
            break;
        default:
            if (k < AM_OWN + NHTTP)
                rc = dec_http_field(d, k - AM_OWN, v, &a->http, &raw);
            else
                rc = dec_sd_field(d, k - AM_OWN - NHTTP, v, &a->sd);
        }
    }
    free(ps.v);
    if (rc == 0 && !*a->path_prefix && (rc = set_str(d, &a->path_prefix, "/"))) return rc;
    if (rc == 0) rc = http_validate(d, n->line, &a->http, &raw);
    if (rc == 0 && a->nrelabel == 0) rc = check_static_targets(d, n, &a->sd);
    http_raw_free(&raw);
    return rc;
}

static int alerting_field(dec *d, int k, const cfg_ynode *v, void *ctx) {
    cfg_alerting *al = ctx;
    if (k == 0)
        return dec_rules(d, v, &al->alert_relabel, &al->nalert_relabel,
                         "empty or null alert relabeling rule");
    int rc = visit(d, v);
    if (rc || is_null(v)) return rc;
    if (v->kind != CFG_Y_SEQ) return terr(d, v, "config.AlertmanagerConfigs");
    for (size_t j = 0; j < v->n; j++) {
        if (is_null(v->kids[j]))
            return derr(d, v->kids[j]->line, "empty or null alertmanager config section");
        cfg_alertmanager *a = push(d, (void **)&al->ams, &al->nams, sizeof *a);
        if (!a) return BASE_E_NOMEM;
        if ((rc = dec_am(d, v->kids[j], a))) return rc;
    }
    return 0;
}

static int dec_alerting(dec *d, const cfg_ynode *n, cfg_alerting *al) {
    static const char *const F[] = {"alert_relabel_configs", "alertmanagers", NULL};
    return dec_fields(d, n, "config.plain", F, alerting_field, al);
}

/* ---- remote write -------------------------------------------------------- */

static int queue_field(dec *d, int k, const cfg_ynode *v, void *ctx) {
    cfg_remote_write *w = ctx;
    switch (k) {
    case 0: return get_i64(d, v, "int", &w->q_capacity);
    case 1: return get_i64(d, v, "int", &w->q_max_shards);
    case 2: return get_i64(d, v, "int", &w->q_min_shards);
    case 3: return get_i64(d, v, "int", &w->q_max_samples_per_send);
    case 4: return get_dur(d, v, &w->q_batch_send_deadline_ms);
    case 5: return get_dur(d, v, &w->q_min_backoff_ms);
    case 6: return get_dur(d, v, &w->q_max_backoff_ms);
    default: return get_bool(d, v, &w->q_retry_on_http_429);
    }
}

static int dec_queue(dec *d, const cfg_ynode *n, cfg_remote_write *w) {
    static const char *const F[] = {"capacity",
                                    "max_shards",
                                    "min_shards",
                                    "max_samples_per_send",
                                    "batch_send_deadline",
                                    "min_backoff",
                                    "max_backoff",
                                    "retry_on_http_429",
                                    NULL};
    return dec_fields(d, n, "config.QueueConfig", F, queue_field, w);
}

static int metadata_field(dec *d, int k, const cfg_ynode *v, void *ctx) {
    cfg_remote_write *w = ctx;
    if (k == 0) return get_bool(d, v, &w->md_send);
    if (k == 1) return get_dur(d, v, &w->md_send_interval_ms);
    return get_i64(d, v, "int", &w->md_max_samples_per_send);
}

static int dec_metadata(dec *d, const cfg_ynode *n, cfg_remote_write *w) {
    static const char *const F[] = {"send", "send_interval", "max_samples_per_send", NULL};
    return dec_fields(d, n, "config.MetadataConfig", F, metadata_field, w);
}

static const char *const RESERVED_HEADERS[] = {"host",
                                               "content-encoding",
                                               "content-length",
                                               "content-type",
                                               "user-agent",
                                               "connection",
                                               "keep-alive",
                                               "proxy-authenticate",
                                               "proxy-authorization",
                                               "www-authenticate",
                                               "accept-encoding",
                                               "x-prometheus-remote-write-version",
                                               "x-prometheus-remote-read-version",
                                               "x-amz-date",
                                               "x-amz-security-token",
                                               "x-amz-content-sha256",
                                               NULL};

static const char *const RW_F[] = {"url", "remote_timeout", "headers", "name", "send_exemplars",
                                   "send_native_histograms", "write_relabel_configs", "queue_config",
                                   "metadata_config",
                                   /* HTTP */
                                   "basic_auth", "authorization", "bearer_token", "bearer_token_file",
                                   "tls_config", "proxy_url", "follow_redirects", "enable_http2", NULL};
#define RW_OWN 9

static int dec_rw(dec *d, const cfg_ynode *n, cfg_remote_write *w) {
    http_defaults(&w->http);
    w->remote_timeout_ms = 30000;
    w->q_capacity = 2500;
    w->q_max_shards = 200;
    w->q_min_shards = 1;
    w->q_max_samples_per_send = 500;
    w->q_batch_send_deadline_ms = 5000;
    w->q_min_backoff_ms = 30;
    w->q_max_backoff_ms = 5000;
    w->md_send = 1;
    w->md_send_interval_ms = 60000;
    w->md_max_samples_per_send = 500;
    http_raw raw = {0};
    int has_url = 0;
    pairs ps;
    int rc = map_pairs(d, n, "config.plain", &ps);
    for (size_t i = 0; rc == 0 && i < ps.n; i++) {
        int k = field(d, &ps, i, RW_F, "config.plain", 0);
        if (k == FIELD_SKIP) continue;
        if (k < 0) {
            rc = BASE_E_INVAL;
            break;
        }
        const cfg_ynode *v = ps.v[i].v;
        switch (k) {
        case 0:
            has_url = !is_null(v);
            rc = get_url(d, v, &w->url);
            break;
        case 1: rc = get_dur(d, v, &w->remote_timeout_ms); break;
        case 2: rc = dec_kvs(d, v, &w->headers, 0, "map[string]string"); break;
        case 3: rc = get_str(d, v, "string", &w->name); break;
        case 4: rc = get_bool(d, v, &w->send_exemplars); break;
        case 5: rc = get_bool(d, v, &w->send_native_histograms); break;
        case 6:
            rc = dec_rules(d, v, &w->write_relabel, &w->nwrite_relabel,
                           "empty or null relabeling rule in remote write config");
            break;
        case 7: rc = dec_queue(d, v, w); break;
        case 8: rc = dec_metadata(d, v, w); break;
        default: rc = dec_http_field(d, k - RW_OWN, v, &w->http, &raw);
        }
    }
    free(ps.v);
    if (rc == 0 && !has_url) rc = derr(d, n->line, "url for remote_write is empty");
    for (size_t i = 0; rc == 0 && i < w->headers.n; i++) {
        const char *h = w->headers.v[i].name;
        if (strcasecmp(h, "authorization") == 0) {
            rc = derr(
                d, n->line,
                "authorization header must be changed via the basic_auth, authorization, oauth2, or sigv4 "
                "parameter");
            break;
        }
        for (int j = 0; RESERVED_HEADERS[j]; j++)
            if (strcasecmp(h, RESERVED_HEADERS[j]) == 0) {
                rc = derr(d, n->line, "%s is a reserved header. It must not be changed", h);
                break;
            }
    }
    if (rc == 0) rc = http_validate(d, n->line, &w->http, &raw);
    http_raw_free(&raw);
    return rc;
}

/* ---- global and the whole file ------------------------------------------- */

static int cmp_kv(const void *a, const void *b) {
    return strcmp(((const cfg_kv *)a)->name, ((const cfg_kv *)b)->name);
}

static int dec_global(dec *d, const cfg_ynode *n, cfg_global *g) {
    static const char *const F[] = {"scrape_interval", "scrape_timeout", "evaluation_interval",
                                    "external_labels", "query_log_file", NULL};
    pairs ps;
    int rc = map_pairs(d, n, "config.plain", &ps);
    const cfg_ynode *el = NULL;
    for (size_t i = 0; rc == 0 && i < ps.n; i++) {
        int k = field(d, &ps, i, F, "config.plain", 0);
        if (k == FIELD_SKIP) continue;
        if (k < 0) {
            rc = BASE_E_INVAL;
            break;
        }
        const cfg_ynode *v = ps.v[i].v;
        switch (k) {
        case 0: rc = get_dur(d, v, &g->scrape_interval_ms); break;
        case 1: rc = get_dur(d, v, &g->scrape_timeout_ms); break;
        case 2: rc = get_dur(d, v, &g->evaluation_interval_ms); break;
        case 3:
            el = v;
            rc = dec_kvs(d, v, &g->external_labels, 0, "map[string]string");
            break;
        case 4: rc = get_str(d, v, "string", &g->query_log_file); break;
        }
    }
    free(ps.v);
    if (rc) return rc;
    if (g->external_labels.n) {
        qsort(g->external_labels.v, g->external_labels.n, sizeof *g->external_labels.v, cmp_kv);
        for (size_t i = 0; i < g->external_labels.n; i++)
            if (!labels_valid_label_name(base_str_c(g->external_labels.v[i].name)))
                return derr(d, el->line, "%s is not a valid label name", qs(d, g->external_labels.v[i].name));
    }
    if (g->scrape_interval_ms == 0) g->scrape_interval_ms = 60000;
    if (g->scrape_timeout_ms > g->scrape_interval_ms)
        return derr(d, n->line, "global scrape timeout greater than scrape interval");
    if (g->scrape_timeout_ms == 0)
        g->scrape_timeout_ms = g->scrape_interval_ms < 10000 ? g->scrape_interval_ms : 10000;
    if (g->evaluation_interval_ms == 0) g->evaluation_interval_ms = 60000;
    return join_dir(d, &g->query_log_file);
}

/* patRulePath: ^[^*]*(\*[^/]*)?$ */
static int rule_path_ok(const char *s) {
    const char *star = strchr(s, '*');
    return !star || !strchr(star, '/');
}

static const char *const TOP_F[] = {"global",         "alerting",     "rule_files",
                                    "scrape_configs", "remote_write", NULL};

static int dec_top(dec *d, const cfg_ynode *n, cfg_config *c) {
    pairs ps;
    int rc = map_pairs(d, n, "config.plain", &ps);
    for (size_t i = 0; rc == 0 && i < ps.n; i++) {
        int k = field(d, &ps, i, TOP_F, "config.plain", 0);
        if (k == FIELD_SKIP) continue;
        if (k < 0) {
            rc = BASE_E_INVAL;
            break;
        }
        const cfg_ynode *v = ps.v[i].v;
        if ((rc = visit(d, v))) break;
        switch (k) {
        case 0:
            if (!is_null(v)) {
                memset(&c->global, 0, sizeof c->global);
                rc = dec_global(d, v, &c->global);
            }
            break;
        case 1: rc = dec_alerting(d, v, &c->alerting); break;
        case 2:
            if ((rc = get_strs(d, v, &c->rule_files, &c->nrule_files))) break;
            break;
        case 3:
            if (is_null(v)) break;
            if (v->kind != CFG_Y_SEQ) {
                rc = terr(d, v, "[]*config.ScrapeConfig");
                break;
            }
            for (size_t j = 0; rc == 0 && j < v->n; j++) {
                if (is_null(v->kids[j])) {
                    rc = derr(d, v->kids[j]->line, "empty or null scrape config section");
                    break;
                }
                cfg_scrape *s = push(d, (void **)&c->scrapes, &c->nscrapes, sizeof *s);
                rc = s ? dec_scrape(d, v->kids[j], s) : BASE_E_NOMEM;
            }
            break;
        case 4:
            if (is_null(v)) break;
            if (v->kind != CFG_Y_SEQ) {
                rc = terr(d, v, "[]*config.RemoteWriteConfig");
                break;
            }
            for (size_t j = 0; rc == 0 && j < v->n; j++) {
                if (is_null(v->kids[j])) {
                    rc = derr(d, v->kids[j]->line, "empty or null remote write config section");
                    break;
                }
                cfg_remote_write *w = push(d, (void **)&c->remote_writes, &c->nremote_writes, sizeof *w);
                rc = w ? dec_rw(d, v->kids[j], w) : BASE_E_NOMEM;
            }
            break;
        }
    }
    free(ps.v);
    if (rc) return rc;
    int line = n && n->kind == CFG_Y_MAP ? n->line : 1;
    for (size_t i = 0; i < c->nrule_files; i++) {
        if (!rule_path_ok(c->rule_files[i]))
            return derr(d, line, "invalid rule file path %s", qs(d, c->rule_files[i]));
        if ((rc = join_dir(d, &c->rule_files[i]))) return rc;
    }
    for (size_t i = 0; i < c->nscrapes; i++) {
        cfg_scrape *s = &c->scrapes[i];
        if (s->scrape_interval_ms == 0) s->scrape_interval_ms = c->global.scrape_interval_ms;
        if (s->scrape_timeout_ms > s->scrape_interval_ms)
            return derr(d, s->line,
                        "scrape timeout greater than scrape interval for scrape config with job name %s",
                        qs(d, s->job_name));
        if (s->scrape_timeout_ms == 0)
            s->scrape_timeout_ms = c->global.scrape_timeout_ms > s->scrape_interval_ms
                                       ? s->scrape_interval_ms
                                       : c->global.scrape_timeout_ms;
        for (size_t j = 0; j < i; j++)
            if (strcmp(c->scrapes[j].job_name, s->job_name) == 0)
                return derr(d, s->line, "found multiple scrape configs with job name %s", qs(d, s->job_name));
    }
    for (size_t i = 0; i < c->nremote_writes; i++) {
        const char *nm = c->remote_writes[i].name;
        for (size_t j = 0; nm && *nm && j < i; j++)
            if (c->remote_writes[j].name && strcmp(c->remote_writes[j].name, nm) == 0)
                return derr(d, line, "found multiple remote write configs with job name %s", qs(d, nm));
    }
    return 0;
}

static char *cwd_dup(void) {
    char buf[4096];
    if (!getcwd(buf, sizeof buf)) return strdup("/");
    return strdup(buf);
}

int cfg_load_buf(const char *buf, size_t len, const char *name, const char *dir, cfg_config **ret, char *err,
                 size_t errlen) {
    if (err && errlen) err[0] = 0;
    if (!name) name = "<config>";
    if (len > CFG__MAX_FILE)
        return base_errf(err, errlen, BASE_E_LIMIT, "%s: the file is larger than %u bytes", name,
                         CFG__MAX_FILE);
    cfg_config *c = calloc(1, sizeof *c);
    if (!c) return base_errf(err, errlen, BASE_E_NOMEM, "%s: out of memory", name);
    char *absdir = NULL;
    if (!dir || dir[0] != '/') {
        char *cwd = cwd_dup();
        if (cwd && dir && *dir) {
            char *j = malloc(strlen(cwd) + strlen(dir) + 2);
            if (j) sprintf(j, "%s/%s", cwd, dir);
            free(cwd);
            cwd = j;
        }
        absdir = cwd;
    } else {
        absdir = strdup(dir);
    }
    if (absdir) { /* filepath.Clean */
        char *cl = base_path_clean(absdir);
        free(absdir);
        absdir = cl;
    }
    c->path = strdup(name);
    c->text = malloc(len + 1);
    if (!absdir || !c->path || !c->text) {
        free(absdir);
        cfg_free(c);
        return base_errf(err, errlen, BASE_E_NOMEM, "%s: out of memory", name);
    }
    memcpy(c->text, buf, len);
    c->text[len] = 0;
    c->text_len = len;
    c->global.scrape_interval_ms = 60000;
    c->global.scrape_timeout_ms = 10000;
    c->global.evaluation_interval_ms = 60000;

    cfg_ydoc doc = {0};
    dec d = {.doc = &doc, .name = name, .dir = absdir, .err = err, .errlen = errlen};
    int rc = cfg_yaml_parse(buf, len, name, &doc, err, errlen);
    if (rc == 0 && doc.root) rc = dec_top(&d, doc.root, c);
    for (int i = 0; i < 4; i++) free(d.q[i]);
    cfg_ydoc_free(&doc);
    free(absdir);
    if (rc) {
        cfg_free(c);
        return rc;
    }
    *ret = c;
    return 0;
}

/* strerror as Go's syscall errors read: "no such file or directory". */
static const char *go_errno(int e, char buf[128]) {
    snprintf(buf, 128, "%s", strerror(e));
    if (buf[0] >= 'A' && buf[0] <= 'Z') buf[0] = (char)(buf[0] + 32);
    return buf;
}

int cfg_load_file(const char *path, cfg_config **ret, char *err, size_t errlen) {
    char eb[128];
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return base_errf(err, errlen, BASE_E_IO, "open %s: %s", path, go_errno(errno, eb));
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return base_errf(err, errlen, BASE_E_IO, "stat %s: %s", path, go_errno(e, eb));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return base_errf(err, errlen, BASE_E_IO, "read %s: %s", path,
                         S_ISDIR(st.st_mode) ? "is a directory" : "not a regular file");
    }
    if ((uint64_t)st.st_size > CFG__MAX_FILE) {
        close(fd);
        return base_errf(err, errlen, BASE_E_LIMIT, "%s: the file is larger than %u bytes", path,
                         CFG__MAX_FILE);
    }
    size_t n = (size_t)st.st_size;
    char *buf = malloc(n + 1);
    if (!buf) {
        close(fd);
        return base_errf(err, errlen, BASE_E_NOMEM, "%s: out of memory", path);
    }
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, buf + got, n - got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        got += (size_t)r;
    }
    close(fd);
    if (got != n) {
        free(buf);
        return base_errf(err, errlen, BASE_E_IO, "read %s: short read", path);
    }
    /* the directory of the file, made absolute */
    char *dir = strdup(path);
    if (!dir) {
        free(buf);
        return base_errf(err, errlen, BASE_E_NOMEM, "%s: out of memory", path);
    }
    char *slash = strrchr(dir, '/');
    if (slash == dir)
        dir[1] = 0;
    else if (slash)
        *slash = 0;
    else
        strcpy(dir, ".");
    int rc = cfg_load_buf(buf, n, path, dir, ret, err, errlen);
    free(dir);
    free(buf);
    return rc;
}
