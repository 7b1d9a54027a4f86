/* yaml.c -- a bounded YAML tree from libyaml's events, scalar resolution
 * as Go's gopkg.in/yaml.v2 does it, and Prometheus's size units.
 *
 * cfg_yaml_parse() reads the first document of the stream event by event
 * and builds cfg_ynode trees (see config/yaml.h). Limits are checked as
 * events arrive: CFG_YAML_MAX_DEPTH open containers, CFG_YAML_MAX_NODES nodes.
 * Anchors are registered when their node starts; an alias to a node that
 * has not ended yet would make a cycle and is refused, as yaml.v2 refuses
 * it ("anchor 'x' value contains itself").
 *
 * cfg_yaml_resolve() decides what a plain scalar is (null, bool, int, float,
 * merge key or string) with yaml.v2's YAML 1.1 rules: "yes"/"on" are
 * booleans, "0x1f" and "1_000" are integers, ".inf" a float. Quoted and
 * block scalars are strings unless an explicit tag says otherwise.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "base/err.h"
#include "base/num.h"
#include "config/config_int.h"
#include "config/yaml.h"

struct cfg_yanchor {
    char *name;
    cfg_ynode *node;
};

static int perr(char *err, size_t errlen, int code, const char *name, int line, const char *msg,
                const char *arg) {
    if (arg) return base_errf(err, errlen, code, "%s:%d: %s '%s'", name, line, msg, arg);
    return base_errf(err, errlen, code, "%s:%d: %s", name, line, msg);
}

/* NULL when out of memory or (doc->full set) over CFG_YAML_MAX_NODES. */
static cfg_ynode *new_node(cfg_ydoc *doc, cfg_ykind kind, int line, int col) {
    if (doc->nall >= CFG_YAML_MAX_NODES) {
        doc->full = 1;
        return NULL;
    }
    if (doc->nall == doc->capall) {
        size_t nc = doc->capall ? doc->capall * 2 : 64;
        cfg_ynode **na = realloc(doc->all, nc * sizeof *na);
        if (!na) return NULL;
        doc->all = na;
        doc->capall = nc;
    }
    cfg_ynode *n = calloc(1, sizeof *n);
    if (!n) return NULL;
    n->kind = kind;
    n->line = line;
    n->col = col;
    doc->all[doc->nall++] = n;
    return n;
}

static int add_kid(cfg_ynode *parent, cfg_ynode *kid) {
    if (parent->n == parent->cap) {
        size_t nc = parent->cap ? parent->cap * 2 : 8;
        cfg_ynode **na = realloc(parent->kids, nc * sizeof *na);
        if (!na) return BASE_E_NOMEM;
        parent->kids = na;
        parent->cap = nc;
    }
    parent->kids[parent->n++] = kid;
    return 0;
}

static int add_anchor(cfg_ydoc *doc, const char *name, cfg_ynode *n) {
    if (doc->nanchors == doc->capanchors) {
        size_t nc = doc->capanchors ? doc->capanchors * 2 : 8;
        struct cfg_yanchor *na = realloc(doc->anchors, nc * sizeof *na);
        if (!na) return BASE_E_NOMEM;
        doc->anchors = na;
        doc->capanchors = nc;
    }
    char *s = strdup(name);
    if (!s) return BASE_E_NOMEM;
    /* a later anchor of the same name shadows the earlier one */
    doc->anchors[doc->nanchors++] = (struct cfg_yanchor){s, n};
    return 0;
}

static cfg_ynode *find_anchor(const cfg_ydoc *doc, const char *name) {
    for (size_t i = doc->nanchors; i > 0; i--)
        if (strcmp(doc->anchors[i - 1].name, name) == 0) return doc->anchors[i - 1].node;
    return NULL;
}

void cfg_ydoc_free(cfg_ydoc *doc) {
    for (size_t i = 0; i < doc->nall; i++) {
        cfg_ynode *n = doc->all[i];
        free(n->tag);
        free(n->val);
        free(n->kids);
        free(n);
    }
    free(doc->all);
    for (size_t i = 0; i < doc->nanchors; i++) free(doc->anchors[i].name);
    free(doc->anchors);
    memset(doc, 0, sizeof *doc);
}

/* Places a finished or aliased node into its parent (or as the root). */
static int attach(cfg_ydoc *doc, cfg_ynode **stack, size_t depth, cfg_ynode *n) {
    if (depth == 0) {
        if (!doc->root) doc->root = n;
        return 0;
    }
    return add_kid(stack[depth - 1], n);
}

int cfg_yaml_parse(const char *buf, size_t len, const char *name, cfg_ydoc *doc, char *err, size_t errlen) {
    yaml_parser_t p;
    if (!yaml_parser_initialize(&p)) return base_errf(err, errlen, BASE_E_NOMEM, "%s: out of memory", name);
    yaml_parser_set_input_string(&p, (const unsigned char *)buf, len);
    cfg_ynode *stack[CFG_YAML_MAX_DEPTH];
    size_t depth = 0;
    int rc = 0, done = 0;
    while (!done) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&p, &ev)) {
            /* the line as yaml.v2 reports it: 0-based for parser errors,
             * 1-based for scanner errors (its quirk, kept for parity) */
            int line = (int)p.problem_mark.line;
            if (line == 0 && p.error != YAML_SCANNER_ERROR) line = (int)p.context_mark.line;
            if (p.error == YAML_SCANNER_ERROR) line++;
            if (line == 0) line = 1;
            if (p.error == YAML_MEMORY_ERROR)
                rc = base_errf(err, errlen, BASE_E_NOMEM, "%s: out of memory", name);
            else
                rc = base_errf(err, errlen, BASE_E_PARSE, "%s:%d: yaml: %s", name, line,
                               p.problem ? p.problem : "syntax error");
            break;
        }
        int line = (int)ev.start_mark.line + 1, col = (int)ev.start_mark.column + 1;
        const char *anchor = NULL;
        cfg_ynode *n = NULL;
        switch (ev.type) {
        case YAML_DOCUMENT_START_EVENT: break;
        case YAML_DOCUMENT_END_EVENT:
        case YAML_STREAM_END_EVENT: done = 1; break;
        case YAML_ALIAS_EVENT: {
            const char *an = (const char *)ev.data.alias.anchor;
            cfg_ynode *t = find_anchor(doc, an);
            if (!t)
                rc = perr(err, errlen, BASE_E_PARSE, name, line, "yaml: unknown anchor", an);
            else if (!t->done)
                rc = perr(err, errlen, BASE_E_PARSE, name, line, "yaml: anchor value contains itself:", an);
            else
                rc = attach(doc, stack, depth, t);
            break;
        }
        case YAML_SCALAR_EVENT:
            n = new_node(doc, CFG_Y_SCALAR, line, col);
            if (!n) {
                rc = doc->full ? BASE_E_LIMIT : BASE_E_NOMEM;
                break;
            }
            n->val = malloc(ev.data.scalar.length + 1);
            if (!n->val) {
                rc = BASE_E_NOMEM;
                break;
            }
            memcpy(n->val, ev.data.scalar.value, ev.data.scalar.length);
            n->val[ev.data.scalar.length] = 0;
            n->len = ev.data.scalar.length;
            n->plain = ev.data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
            if (ev.data.scalar.tag && !(n->tag = strdup((const char *)ev.data.scalar.tag))) {
                rc = BASE_E_NOMEM;
                break;
            }
            n->done = 1;
            anchor = (const char *)ev.data.scalar.anchor;
            rc = attach(doc, stack, depth, n);
            break;
        case YAML_SEQUENCE_START_EVENT:
        case YAML_MAPPING_START_EVENT: {
            int seq = ev.type == YAML_SEQUENCE_START_EVENT;
            if (depth >= CFG_YAML_MAX_DEPTH) {
                rc = base_errf(err, errlen, BASE_E_LIMIT, "%s:%d: nesting deeper than %d levels", name, line,
                               CFG_YAML_MAX_DEPTH);
                break;
            }
            n = new_node(doc, seq ? CFG_Y_SEQ : CFG_Y_MAP, line, col);
            if (!n) {
                rc = doc->full ? BASE_E_LIMIT : BASE_E_NOMEM;
                break;
            }
            const yaml_char_t *tag = seq ? ev.data.sequence_start.tag : ev.data.mapping_start.tag;
            if (tag && !(n->tag = strdup((const char *)tag))) {
                rc = BASE_E_NOMEM;
                break;
            }
            anchor = (const char *)(seq ? ev.data.sequence_start.anchor : ev.data.mapping_start.anchor);
            rc = attach(doc, stack, depth, n);
            if (rc == 0) stack[depth++] = n;
            break;
        }
        case YAML_SEQUENCE_END_EVENT:
        case YAML_MAPPING_END_EVENT:
            if (depth > 0) stack[--depth]->done = 1;
            break;
        default: break;
        }
        if (rc == 0 && anchor && n) rc = add_anchor(doc, anchor, n);
        if (rc == BASE_E_LIMIT && doc->full)
            rc = base_errf(err, errlen, BASE_E_LIMIT, "%s:%d: more than %u YAML nodes", name, line,
                           CFG_YAML_MAX_NODES);
        if (rc == BASE_E_NOMEM) rc = base_errf(err, errlen, BASE_E_NOMEM, "%s: out of memory", name);
        yaml_event_delete(&ev);
        if (rc) break;
    }
    yaml_parser_delete(&p);
    return rc;
}

/* ---- resolution ------------------------------------------------------- */

int cfg_yaml_one_of(const char *s, const char *const *list) {
    for (; *list; list++)
        if (strcmp(s, *list) == 0) return 1;
    return 0;
}

int cfg_yaml_go_int(const char *s, int *ret_neg, int *ret_signed, uint64_t *ret_mag) {
    int neg = 0, sign = 0;
    if (*s == '+' || *s == '-') {
        sign = 1;
        neg = *s++ == '-';
    }
    unsigned base = 10;
    if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
        base = 16;
        s += 2;
    } else if (s[0] == '0' && (s[1] == 'o' || s[1] == 'O')) {
        base = 8;
        s += 2;
    } else if (s[0] == '0' && (s[1] == 'b' || s[1] == 'B')) {
        base = 2;
        s += 2;
    } else if (s[0] == '0' && s[1]) {
        base = 8;
        s += 1;
    }
    if (!*s) return -1;
    uint64_t v = 0;
    for (; *s; s++) {
        unsigned d;
        if (*s >= '0' && *s <= '9')
            d = (unsigned)(*s - '0');
        else if (*s >= 'a' && *s <= 'f')
            d = (unsigned)(*s - 'a' + 10);
        else if (*s >= 'A' && *s <= 'F')
            d = (unsigned)(*s - 'A' + 10);
        else
            return -1;
        if (d >= base) return -1;
        if (v > (UINT64_MAX - d) / base) return -1;
        v = v * base + d;
    }
    *ret_neg = neg;
    if (ret_signed) *ret_signed = sign;
    *ret_mag = v;
    return 0;
}

int cfg_yaml_float_syntax(const char *s) {
    if (*s == '+' || *s == '-') s++;
    if (*s == '.') {
        s++;
        if (!(*s >= '0' && *s <= '9')) return 0;
        while (*s >= '0' && *s <= '9') s++;
    } else {
        if (!(*s >= '0' && *s <= '9')) return 0;
        while (*s >= '0' && *s <= '9') s++;
        if (*s == '.') {
            s++;
            while (*s >= '0' && *s <= '9') s++;
        }
    }
    if (*s == 'e' || *s == 'E') {
        s++;
        if (*s == '+' || *s == '-') s++;
        if (!(*s >= '0' && *s <= '9')) return 0;
        while (*s >= '0' && *s <= '9') s++;
    }
    return *s == 0;
}

static const char *const NULLS[] = {"", "~", "null", "Null", "NULL", NULL};
static const char *const TRUES[] = {"y",  "Y",  "yes",  "Yes",  "YES",  "on",
                                    "On", "ON", "true", "True", "TRUE", NULL};
static const char *const FALSES[] = {"n",   "N",   "no",    "No",    "NO",    "off",
                                     "Off", "OFF", "false", "False", "FALSE", NULL};

static void resolve_plain(const char *v, size_t len, cfg_yresolved *r) {
    memset(r, 0, sizeof *r);
    r->tag = CFG_YT_STR;
    if (cfg_yaml_one_of(v, NULLS)) {
        r->tag = CFG_YT_NULL;
        return;
    }
    if (cfg_yaml_one_of(v, TRUES) || cfg_yaml_one_of(v, FALSES)) {
        r->tag = CFG_YT_BOOL;
        r->b = cfg_yaml_one_of(v, TRUES);
        return;
    }
    if (strcmp(v, "<<") == 0) {
        r->tag = CFG_YT_MERGE;
        return;
    }
    static const char *const PINF[] = {".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", NULL};
    static const char *const NINF[] = {"-.inf", "-.Inf", "-.INF", NULL};
    static const char *const NANS[] = {".nan", ".NaN", ".NAN", NULL};
    if (cfg_yaml_one_of(v, PINF) || cfg_yaml_one_of(v, NINF) || cfg_yaml_one_of(v, NANS)) {
        r->tag = CFG_YT_FLOAT;
        r->f = cfg_yaml_one_of(v, NANS) ? NAN : cfg_yaml_one_of(v, PINF) ? INFINITY : -INFINITY;
        return;
    }
    char c = v[0];
    if (!(c == '+' || c == '-' || c == '.' || (c >= '0' && c <= '9'))) return;
    if (len > 128) return;
    char plain[130];
    size_t k = 0;
    for (size_t i = 0; i < len; i++)
        if (v[i] != '_') plain[k++] = v[i];
    plain[k] = 0;
    int neg;
    uint64_t mag;
    if (cfg_yaml_go_int(plain, &neg, NULL, &mag) == 0) {
        if (neg && mag <= (uint64_t)INT64_MAX + 1) {
            r->tag = CFG_YT_INT;
            r->i = mag == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)mag;
            r->f = -(double)mag;
            return;
        }
        if (!neg) {
            r->tag = CFG_YT_INT;
            if (mag > (uint64_t)INT64_MAX) {
                r->is_u = 1;
                r->u = mag;
            } else {
                r->i = (int64_t)mag;
            }
            r->f = (double)mag;
            return;
        }
    }
    if (cfg_yaml_float_syntax(plain)) {
        double d;
        if (base_parse_double(plain, k, &d) == 0) {
            r->tag = CFG_YT_FLOAT;
            r->f = d;
        }
    }
}

void cfg_yaml_resolve(const cfg_ynode *n, cfg_yresolved *r) {
    memset(r, 0, sizeof *r);
    if (n->kind != CFG_Y_SCALAR) {
        r->tag = CFG_YT_STR;
        return;
    }
    if (n->tag) {
        const char *t = n->tag;
        if (strncmp(t, "tag:yaml.org,2002:", 18) == 0) t += 18;
        if (strcmp(t, "str") == 0 || strcmp(t, "!") == 0 || strcmp(t, "binary") == 0 || n->tag[0] != 't') {
            r->tag = CFG_YT_STR;
            return;
        }
        resolve_plain(n->val, n->len, r);
        if (strcmp(t, "null") == 0) r->tag = CFG_YT_NULL;
        return;
    }
    if (!n->plain) {
        r->tag = CFG_YT_STR;
        return;
    }
    resolve_plain(n->val, n->len, r);
}

const char *cfg_yaml_short_tag(const cfg_ynode *n) {
    if (n->kind == CFG_Y_SEQ) return "!!seq";
    if (n->kind == CFG_Y_MAP) return "!!map";
    cfg_yresolved r;
    cfg_yaml_resolve(n, &r);
    switch (r.tag) {
    case CFG_YT_NULL: return "!!null";
    case CFG_YT_BOOL: return "!!bool";
    case CFG_YT_INT: return "!!int";
    case CFG_YT_FLOAT: return "!!float";
    case CFG_YT_MERGE: return "!!merge";
    default: return "!!str";
    }
}

/* ---- sizes ------------------------------------------------------------ */

/* One of alecthomas/units' unit maps: "B" and K M G T P E with suffix. */
static int unit_value(const char *u, size_t n, const char *suffix, double *ret) {
    static const char pre[] = "KMGTPE";
    if (n == 1 && u[0] == 'B') {
        *ret = 1;
        return 0;
    }
    size_t sl = strlen(suffix);
    if (n != 1 + sl || memcmp(u + 1, suffix, sl) != 0) return -1;
    const char *q = strchr(pre, u[0]);
    if (!q || !u[0]) return -1;
    double v = 1;
    for (long i = 0; i <= q - pre; i++) v *= 1024;
    *ret = v;
    return 0;
}

/* units.ParseUnit over one unit map. */
static int parse_unit(const char *orig, const char *suffix, int64_t *ret, char *err, size_t errlen) {
    const char *s = orig;
    int neg = 0;
    double f = 0;
    if (*s == '-' || *s == '+') neg = *s++ == '-';
    if (strcmp(s, "0") == 0) {
        *ret = 0;
        return 0;
    }
    if (!*s) return base_errf(err, errlen, BASE_E_PARSE, "units: invalid %s", orig);
    while (*s) {
        if (!(*s == '.' || (*s >= '0' && *s <= '9')))
            return base_errf(err, errlen, BASE_E_PARSE, "units: invalid %s", orig);
        double g = 0;
        int pre = 0, post = 0;
        int64_t x = 0;
        for (; *s >= '0' && *s <= '9'; s++, pre = 1) {
            if (x > (INT64_MAX - 9) / 10)
                return base_errf(err, errlen, BASE_E_PARSE, "units: invalid %s", orig);
            x = x * 10 + (*s - '0');
        }
        g = (double)x;
        if (*s == '.') {
            s++;
            double scale = 1;
            x = 0;
            for (; *s >= '0' && *s <= '9'; s++, post = 1) {
                if (x > (INT64_MAX - 9) / 10)
                    return base_errf(err, errlen, BASE_E_PARSE, "units: invalid %s", orig);
                x = x * 10 + (*s - '0');
                scale *= 10;
            }
            g += (double)x / scale;
        }
        if (!pre && !post) return base_errf(err, errlen, BASE_E_PARSE, "units: invalid %s", orig);
        const char *u = s;
        while (*s && !(*s == '.' || (*s >= '0' && *s <= '9'))) s++;
        double uv;
        if (unit_value(u, (size_t)(s - u), suffix, &uv) != 0)
            return base_errf(err, errlen, BASE_E_PARSE, "units: unknown unit %.*s in %s", (int)(s - u), u,
                             orig);
        f += g * uv;
    }
    if (neg) f = -f;
    if (f < -9223372036854775808.0 || f > 9223372036854775807.0)
        return base_errf(err, errlen, BASE_E_PARSE, "units: overflow parsing unit");
    *ret = f >= 9223372036854775807.0 ? INT64_MAX : (int64_t)f;
    return 0;
}

int cfg__parse_size(const char *s, int64_t *ret, char *err, size_t errlen) {
    int64_t v;
    if (parse_unit(s, "iB", &v, NULL, 0) == 0) {
        *ret = v;
        return 0;
    }
    int rc = parse_unit(s, "B", &v, err, errlen);
    if (rc == 0) *ret = v;
    return rc;
}
