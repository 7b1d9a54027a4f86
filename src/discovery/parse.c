/* parse.c -- target group documents, as Prometheus 2.42's targetgroup
 * package reads them, and the disc_group helpers.
 *
 * A document is a list of groups, each {targets: [string...], labels:
 * {name: value}}. JSON (jansson) follows Go's encoding/json with the
 * group's DisallowUnknownFields: field names match case-insensitively,
 * unknown fields are errors, `null` stands for an empty list / map / "",
 * a null group is "nil target group item found", the last of duplicate
 * keys wins. YAML (libyaml's document API, first document only) follows
 * yaml.v2's UnmarshalStrict: unknown and duplicate keys are errors, any
 * scalar reads as a string, an empty document is an empty list. Label
 * names must be valid (`"x-y" is not a valid label name`); targets are not
 * checked here (Prometheus checks addresses when it builds scrape targets).
 *
 * Every group gets a source "<origin>:<index>" and the origin as a group
 * label (__meta_filepath or __meta_url) that overrides a given one.
 *
 * Invariants: on error nothing is returned and everything built so far is
 * freed; the work per document is bounded by DISC_MAX_DOC_BYTES,
 * DISC_MAX_GROUPS and DISC_MAX_ITEMS (an alias-heavy YAML document cannot
 * make the walk explode). Ownership: the returned array and its groups
 * belong to the caller (disc_groups_free).
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <yaml.h>

#include "base/buf.h"
#include "base/err.h"
#include "discovery/discovery_int.h"

/* ------------------------------------------------------------------ */
/* Groups                                                             */
/* ------------------------------------------------------------------ */

disc_group *disc__group_new(const char *source) {
    disc_group *g = calloc(1, sizeof *g);
    if (!g) return NULL;
    g->source = strdup(source ? source : "");
    if (!g->source) {
        free(g);
        return NULL;
    }
    g->labels = labels_empty();
    return g;
}

void disc__group_free(disc_group *g) {
    if (!g) return;
    for (size_t i = 0; i < g->ntargets; i++) labels_unref(g->targets[i]);
    free(g->targets);
    labels_unref(g->labels);
    free(g->source);
    free(g);
}

int disc__group_add_target(disc_group *g, labels_set *t) {
    /* grow by powers of two: capacity is implied by the count */
    size_t n = g->ntargets;
    if ((n & (n - 1)) == 0) {
        size_t cap = n ? n * 2 : 1;
        labels_set **nt = realloc(g->targets, cap * sizeof *nt);
        if (!nt) {
            labels_unref(t);
            return BASE_E_NOMEM;
        }
        g->targets = nt;
    }
    g->targets[g->ntargets++] = t;
    return 0;
}

int disc__group_equal(const disc_group *a, const disc_group *b) {
    if (strcmp(a->source, b->source) != 0 || a->ntargets != b->ntargets ||
        !labels_equal(a->labels, b->labels))
        return 0;
    for (size_t i = 0; i < a->ntargets; i++)
        if (!labels_equal(a->targets[i], b->targets[i])) return 0;
    return 1;
}

int disc__groups_equal(disc_group *const *a, size_t na, disc_group *const *b, size_t nb) {
    if (na != nb) return 0;
    for (size_t i = 0; i < na; i++)
        if (!disc__group_equal(a[i], b[i])) return 0;
    return 1;
}

void disc_groups_free(disc_group **g, size_t n) {
    if (!g) return;
    for (size_t i = 0; i < n; i++) disc__group_free(g[i]);
    free(g);
}

/* ------------------------------------------------------------------ */
/* Building a document's groups                                       */
/* ------------------------------------------------------------------ */

typedef struct gb {
    disc_group **g;
    size_t n, cap;
    size_t items;       /* targets and label pairs so far */
    const char *origin; /* path or URL */
    const char *origin_label;
    labels_builder lb;  /* the group's labels */
    labels_builder tlb; /* one target's labels, reused for every target */
    char *err;
    size_t errlen;
} gb;

static void gb_init(gb *b, const char *origin, const char *origin_label, char *err, size_t errlen) {
    memset(b, 0, sizeof *b);
    b->origin = origin ? origin : "";
    b->origin_label = origin_label;
    b->err = err;
    b->errlen = errlen;
    labels_builder_init(&b->lb);
    labels_builder_init(&b->tlb);
}

static void gb_fail(gb *b) {
    disc_groups_free(b->g, b->n);
    b->g = NULL;
    b->n = b->cap = 0;
    labels_builder_free(&b->lb);
    labels_builder_free(&b->tlb);
}

static int gb_done(gb *b, disc_group ***ret, size_t *ret_n) {
    labels_builder_free(&b->lb);
    labels_builder_free(&b->tlb);
    *ret = b->g;
    *ret_n = b->n;
    return 0;
}

/* Starts group number b->n: pushes it and resets the label builder. */
static int gb_group(gb *b, disc_group **ret) {
    if (b->n >= DISC_MAX_GROUPS)
        return base_errf(b->err, b->errlen, BASE_E_LIMIT, "more than %d target groups", DISC_MAX_GROUPS);
    if (b->n == b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 8;
        disc_group **ng = realloc(b->g, cap * sizeof *ng);
        if (!ng) return base_errf(b->err, b->errlen, BASE_E_NOMEM, "out of memory");
        b->g = ng;
        b->cap = cap;
    }
    base_buf s;
    base_buf_init(&s, 0);
    base_buf_printf(&s, "%s:%zu", b->origin, b->n);
    disc_group *g = base_buf_err(&s) ? NULL : disc__group_new(s.data);
    base_buf_free(&s);
    if (!g) return base_errf(b->err, b->errlen, BASE_E_NOMEM, "out of memory");
    b->g[b->n++] = g;
    labels_builder_reset(&b->lb);
    *ret = g;
    return 0;
}

static int gb_item(gb *b) {
    if (++b->items > DISC_MAX_ITEMS)
        return base_errf(b->err, b->errlen, BASE_E_LIMIT, "more than %d targets and labels", DISC_MAX_ITEMS);
    return 0;
}

static int gb_target(gb *b, disc_group *g, const char *addr, size_t len) {
    int rc = gb_item(b);
    if (rc) return rc;
    labels_builder_reset(&b->tlb);
    labels_set *t = NULL;
    rc = labels_builder_add(&b->tlb, base_str_c("__address__"), (base_str){addr, len});
    if (!rc) rc = labels_builder_finish(&b->tlb, 0, &t, b->err, b->errlen);
    if (rc == BASE_E_INVAL) rc = BASE_E_PARSE;
    if (rc) return rc;
    if (disc__group_add_target(g, t)) return base_errf(b->err, b->errlen, BASE_E_NOMEM, "out of memory");
    return 0;
}

static int gb_label(gb *b, const char *name, size_t nlen, const char *val, size_t vlen) {
    int rc = gb_item(b);
    if (rc) return rc;
    base_str n = {name, nlen};
    if (!labels_valid_label_name(n)) {
        base_buf q;
        base_buf_init(&q, 256);
        labels_quote(&q, n);
        rc = base_errf(b->err, b->errlen, BASE_E_PARSE, "%s is not a valid label name",
                       q.data ? q.data : "\"\"");
        base_buf_free(&q);
        return rc;
    }
    /* JSON objects are unique already (jansson keeps the last); a YAML key
     * given twice fails in labels_builder_finish, as UnmarshalStrict does */
    rc = labels_builder_add(&b->lb, n, (base_str){val, vlen});
    if (rc) return base_errf(b->err, b->errlen, rc, "too many labels");
    return 0;
}

static int gb_end_group(gb *b, disc_group *g) {
    int rc = 0;
    if (b->origin_label) rc = labels_builder_set(&b->lb, base_str_c(b->origin_label), base_str_c(b->origin));
    labels_set *ls = NULL;
    if (!rc) rc = labels_builder_finish(&b->lb, 0, &ls, b->err, b->errlen);
    if (rc == BASE_E_INVAL) rc = BASE_E_PARSE; /* the document's fault, e.g. a key given twice */
    if (rc) return rc;
    labels_unref(g->labels);
    g->labels = ls;
    return 0;
}

/* ------------------------------------------------------------------ */
/* JSON                                                               */
/* ------------------------------------------------------------------ */

static const char *json_kind(const json_t *v) {
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "object";
    case JSON_ARRAY: return "array";
    case JSON_STRING: return "string";
    case JSON_INTEGER:
    case JSON_REAL: return "number";
    case JSON_TRUE:
    case JSON_FALSE: return "bool";
    default: return "null";
    }
}

static int json_group(gb *b, json_t *obj) {
    if (json_is_null(obj)) return base_errf(b->err, b->errlen, BASE_E_PARSE, "nil target group item found");
    if (!json_is_object(obj))
        return base_errf(b->err, b->errlen, BASE_E_PARSE,
                         "json: cannot unmarshal %s into Go value of type struct { Targets []string "
                         "\"json:\\\"targets\\\"\"; Labels model.LabelSet \"json:\\\"labels\\\"\" }",
                         json_kind(obj));
    disc_group *g;
    int rc = gb_group(b, &g);
    if (rc) return rc;
    const char *key;
    json_t *v;
    json_t *targets = NULL, *labels = NULL;
    json_object_foreach(obj, key, v) {
        if (strcasecmp(key, "targets") == 0)
            targets = v;
        else if (strcasecmp(key, "labels") == 0)
            labels = v;
        else
            return base_errf(b->err, b->errlen, BASE_E_PARSE, "json: unknown field \"%s\"", key);
    }
    if (targets && !json_is_null(targets)) {
        if (!json_is_array(targets))
            return base_errf(b->err, b->errlen, BASE_E_PARSE,
                             "json: cannot unmarshal %s into Go struct field .targets of type []string",
                             json_kind(targets));
        size_t i;
        json_array_foreach(targets, i, v) {
            if (json_is_null(v)) {
                rc = gb_target(b, g, "", 0);
            } else if (!json_is_string(v)) {
                return base_errf(b->err, b->errlen, BASE_E_PARSE,
                                 "json: cannot unmarshal %s into Go struct field .targets of type string",
                                 json_kind(v));
            } else {
                rc = gb_target(b, g, json_string_value(v), json_string_length(v));
            }
            if (rc) return rc;
        }
    }
    if (labels && !json_is_null(labels)) {
        if (!json_is_object(labels))
            return base_errf(b->err, b->errlen, BASE_E_PARSE,
                             "json: cannot unmarshal %s into Go struct field .labels of type model.LabelSet",
                             json_kind(labels));
        json_object_foreach(labels, key, v) {
            if (json_is_null(v)) {
                rc = gb_label(b, key, strlen(key), "", 0);
            } else if (!json_is_string(v)) {
                return base_errf(b->err, b->errlen, BASE_E_PARSE,
                                 "json: cannot unmarshal %s into Go value of type model.LabelValue",
                                 json_kind(v));
            } else {
                rc = gb_label(b, key, strlen(key), json_string_value(v), json_string_length(v));
            }
            if (rc) return rc;
        }
    }
    return gb_end_group(b, g);
}

static int parse_json(const char *buf, size_t len, const char *origin, const char *origin_label,
                      disc_group ***ret, size_t *ret_n, char *err, size_t errlen) {
    if (len > DISC_MAX_DOC_BYTES)
        return base_errf(err, errlen, BASE_E_LIMIT, "document larger than %zu bytes", DISC_MAX_DOC_BYTES);
    json_error_t je;
    json_t *root = json_loadb(buf ? buf : "", len, JSON_DECODE_ANY, &je);
    if (!root)
        return base_errf(err, errlen, BASE_E_PARSE, "json: line %d column %d: %s", je.line, je.column,
                         je.text);
    gb b;
    gb_init(&b, origin, origin_label, err, errlen);
    int rc = 0;
    if (json_is_array(root)) {
        size_t i;
        json_t *v;
        json_array_foreach(root, i, v) {
            rc = json_group(&b, v);
            if (rc) break;
        }
    } else if (!json_is_null(root)) {
        rc = base_errf(err, errlen, BASE_E_PARSE,
                       "json: cannot unmarshal %s into Go value of type []*targetgroup.Group",
                       json_kind(root));
    }
    json_decref(root);
    if (rc) {
        gb_fail(&b);
        return rc;
    }
    return gb_done(&b, ret, ret_n);
}

/* ------------------------------------------------------------------ */
/* YAML                                                               */
/* ------------------------------------------------------------------ */

static int ynull(const yaml_node_t *n) {
    if (!n) return 1;
    if (n->type != YAML_SCALAR_NODE || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE) return 0;
    const char *v = (const char *)n->data.scalar.value;
    size_t l = n->data.scalar.length;
    return l == 0 || (l == 1 && v[0] == '~') ||
           (l == 4 && (!memcmp(v, "null", 4) || !memcmp(v, "Null", 4) || !memcmp(v, "NULL", 4)));
}

static const char *ykind(const yaml_node_t *n) {
    if (n->type == YAML_MAPPING_NODE) return "!!map";
    if (n->type == YAML_SEQUENCE_NODE) return "!!seq";
    return "!!str";
}

static int yline(const yaml_node_t *n) {
    return (int)n->start_mark.line + 1;
}

/* A scalar as a string (yaml.v2 reads any scalar into a string; null is
 * ""). 0 when n is not a scalar. */
static int yscalar(const yaml_node_t *n, const char **ret, size_t *ret_len) {
    if (ynull(n)) {
        *ret = "";
        *ret_len = 0;
        return 1;
    }
    if (n->type != YAML_SCALAR_NODE) return 0;
    *ret = (const char *)n->data.scalar.value;
    *ret_len = n->data.scalar.length;
    return 1;
}

static int yaml_group(gb *b, yaml_document_t *d, yaml_node_t *n) {
    if (ynull(n)) return base_errf(b->err, b->errlen, BASE_E_PARSE, "nil target group item found");
    if (n->type != YAML_MAPPING_NODE)
        return base_errf(b->err, b->errlen, BASE_E_PARSE,
                         "yaml: unmarshal errors:\n  line %d: cannot unmarshal %s into targetgroup.Group",
                         yline(n), ykind(n));
    disc_group *g;
    int rc = gb_group(b, &g);
    if (rc) return rc;
    yaml_node_t *targets = NULL, *labels = NULL;
    int seen_t = 0, seen_l = 0;
    for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
        yaml_node_t *k = yaml_document_get_node(d, p->key);
        yaml_node_t *v = yaml_document_get_node(d, p->value);
        const char *ks;
        size_t kl;
        if (!k || !yscalar(k, &ks, &kl))
            return base_errf(b->err, b->errlen, BASE_E_PARSE, "yaml: line %d: invalid map key",
                             k ? yline(k) : 0);
        int *seen;
        if (kl == 7 && !memcmp(ks, "targets", 7)) {
            targets = v;
            seen = &seen_t;
        } else if (kl == 6 && !memcmp(ks, "labels", 6)) {
            labels = v;
            seen = &seen_l;
        } else {
            return base_errf(b->err, b->errlen, BASE_E_PARSE,
                             "yaml: unmarshal errors:\n  line %d: field %.*s not found in type "
                             "struct { Targets []string \"yaml:\\\"targets\\\"\"; Labels model.LabelSet "
                             "\"yaml:\\\"labels\\\"\" }",
                             yline(k), (int)(kl > 200 ? 200 : kl), ks);
        }
        if ((*seen)++)
            return base_errf(b->err, b->errlen, BASE_E_PARSE,
                             "yaml: unmarshal errors:\n  line %d: field %.*s already set", yline(k), (int)kl,
                             ks);
    }
    if (targets && !ynull(targets)) {
        if (targets->type != YAML_SEQUENCE_NODE)
            return base_errf(b->err, b->errlen, BASE_E_PARSE,
                             "yaml: unmarshal errors:\n  line %d: cannot unmarshal %s into []string",
                             yline(targets), ykind(targets));
        for (yaml_node_item_t *it = targets->data.sequence.items.start; it < targets->data.sequence.items.top;
             it++) {
            yaml_node_t *v = yaml_document_get_node(d, *it);
            const char *s;
            size_t sl;
            if (!v || !yscalar(v, &s, &sl))
                return base_errf(b->err, b->errlen, BASE_E_PARSE,
                                 "yaml: unmarshal errors:\n  line %d: cannot unmarshal %s into string",
                                 v ? yline(v) : 0, v ? ykind(v) : "?");
            rc = gb_target(b, g, s, sl);
            if (rc) return rc;
        }
    }
    if (labels && !ynull(labels)) {
        if (labels->type != YAML_MAPPING_NODE)
            return base_errf(b->err, b->errlen, BASE_E_PARSE,
                             "yaml: unmarshal errors:\n  line %d: cannot unmarshal %s into model.LabelSet",
                             yline(labels), ykind(labels));
        for (yaml_node_pair_t *p = labels->data.mapping.pairs.start; p < labels->data.mapping.pairs.top;
             p++) {
            yaml_node_t *k = yaml_document_get_node(d, p->key);
            yaml_node_t *v = yaml_document_get_node(d, p->value);
            const char *ks, *vs;
            size_t kl, vl;
            if (!k || !yscalar(k, &ks, &kl) || !v || !yscalar(v, &vs, &vl))
                return base_errf(b->err, b->errlen, BASE_E_PARSE,
                                 "yaml: unmarshal errors:\n  line %d: cannot unmarshal !!seq or !!map into "
                                 "model.LabelValue",
                                 k ? yline(k) : 0);
            rc = gb_label(b, ks, kl, vs, vl);
            if (rc) return rc;
        }
    }
    return gb_end_group(b, g);
}

static int parse_yaml(const char *buf, size_t len, const char *origin, const char *origin_label,
                      disc_group ***ret, size_t *ret_n, char *err, size_t errlen) {
    if (len > DISC_MAX_DOC_BYTES)
        return base_errf(err, errlen, BASE_E_LIMIT, "document larger than %zu bytes", DISC_MAX_DOC_BYTES);
    yaml_parser_t p;
    yaml_document_t d;
    if (!yaml_parser_initialize(&p)) return base_errf(err, errlen, BASE_E_NOMEM, "out of memory");
    yaml_parser_set_input_string(&p, (const unsigned char *)(buf ? buf : ""), len);
    if (!yaml_parser_load(&p, &d)) {
        int rc = base_errf(err, errlen, p.error == YAML_MEMORY_ERROR ? BASE_E_NOMEM : BASE_E_PARSE,
                           "yaml: line %zu: %s", p.problem_mark.line + 1, p.problem ? p.problem : "error");
        yaml_parser_delete(&p);
        return rc;
    }
    gb b;
    gb_init(&b, origin, origin_label, err, errlen);
    int rc = 0;
    yaml_node_t *root = yaml_document_get_root_node(&d);
    if (root && !ynull(root)) {
        if (root->type != YAML_SEQUENCE_NODE) {
            rc = base_errf(err, errlen, BASE_E_PARSE,
                           "yaml: unmarshal errors:\n  line %d: cannot unmarshal %s into "
                           "[]*targetgroup.Group",
                           yline(root), ykind(root));
        } else {
            for (yaml_node_item_t *it = root->data.sequence.items.start; it < root->data.sequence.items.top;
                 it++) {
                rc = yaml_group(&b, &d, yaml_document_get_node(&d, *it));
                if (rc) break;
            }
        }
    }
    yaml_document_delete(&d);
    yaml_parser_delete(&p);
    if (rc) {
        gb_fail(&b);
        return rc;
    }
    return gb_done(&b, ret, ret_n);
}

/* ------------------------------------------------------------------ */
/* Public                                                             */
/* ------------------------------------------------------------------ */

int disc_parse_file_sd(const char *buf, size_t len, int is_json, const char *path, disc_group ***ret,
                       size_t *ret_n, char *err, size_t errlen) {
    if (is_json) return parse_json(buf, len, path, "__meta_filepath", ret, ret_n, err, errlen);
    return parse_yaml(buf, len, path, "__meta_filepath", ret, ret_n, err, errlen);
}

int disc_parse_http_sd(const char *buf, size_t len, const char *url, disc_group ***ret, size_t *ret_n,
                       char *err, size_t errlen) {
    return parse_json(buf, len, url, "__meta_url", ret, ret_n, err, errlen);
}
