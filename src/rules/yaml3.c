/* yaml3.c -- scalars and syntax errors as gopkg.in/yaml.v3 (3.0.1, the
 * version 2.42's rulefmt uses) reads them, over the config module's YAML
 * tree (config/yaml.h).
 *
 * rules__resolve() follows v3's parser and decoder: a scalar's tag is its
 * explicit tag, !!str when quoted or block, else what resolve() makes of
 * the text (null, bool, int, float, timestamp, merge or str); an explicit
 * tag the text does not fit ("!!int abc") is v3's fatal "cannot decode".
 * rules__syntax_error() runs libyaml over the text again, only after the
 * tree builder failed, to word the failure as v3 does.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "base/buf.h"
#include "base/num.h"
#include "rules/rules_int.h"

static void short_tag(const char *tag, char *out, size_t outlen) {
    static const char long_prefix[] = "tag:yaml.org,2002:";
    if (strncmp(tag, long_prefix, sizeof long_prefix - 1) == 0)
        snprintf(out, outlen, "!!%s", tag + sizeof long_prefix - 1);
    else
        snprintf(out, outlen, "%s", tag);
}

/* Reads 1 to max digits at *p into *ret. */
static int digits(const char **p, int min, int max, int *ret) {
    int v = 0, k = 0;
    while (k < max && **p >= '0' && **p <= '9') {
        v = v * 10 + (**p - '0');
        (*p)++;
        k++;
    }
    if (k < min) return -1;
    *ret = v;
    return 0;
}

/* v3's parseTimestamp: Go's time.Parse with "2006-1-2T15:4:5.999999999Z07:00"
 * (or t), "2006-1-2 15:4:5.999999999" and "2006-1-2". */
static int is_timestamp(const char *s) {
    int y, mo, d, h, mi, sec;
    const char *p = s;
    if (digits(&p, 4, 4, &y) || *p++ != '-' || digits(&p, 1, 2, &mo) || *p++ != '-' || digits(&p, 1, 2, &d))
        return 0;
    static const int mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1]) return 0;
    if (mo == 2 && d == 29 && !((y % 4 == 0 && y % 100 != 0) || y % 400 == 0)) return 0;
    if (*p == 0) return 1;
    char sep = *p++;
    if (sep != 'T' && sep != 't' && sep != ' ') return 0;
    if (digits(&p, 1, 2, &h) || *p++ != ':' || digits(&p, 1, 2, &mi) || *p++ != ':' || digits(&p, 1, 2, &sec))
        return 0;
    if (h > 23 || mi > 59 || sec > 59) return 0;
    if (*p == '.' && p[1] >= '0' && p[1] <= '9')
        for (p++; *p >= '0' && *p <= '9'; p++) {
        }
    if (sep == ' ') return *p == 0;
    if (*p == 'Z') return p[1] == 0;
    if (*p != '+' && *p != '-') return 0;
    p++;
    int zh, zm;
    if (digits(&p, 2, 2, &zh) || *p++ != ':' || digits(&p, 2, 2, &zm)) return 0;
    return *p == 0 && zh < 24 && zm < 60;
}

static const char *const NULLS[] = {"", "~", "null", "Null", "NULL", NULL};
static const char *const TRUES[] = {"true", "True", "TRUE", NULL};
static const char *const FALSES[] = {"false", "False", "FALSE", NULL};
static const char *const NANS[] = {".nan", ".NaN", ".NAN", NULL};
static const char *const PINFS[] = {".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", NULL};
static const char *const NINFS[] = {"-.inf", "-.Inf", "-.INF", NULL};

/* v3's resolve() of plain text s under tag (a short tag, "" for none):
 * the kind and tag it resolves to, numbers in r. */
static rules__vkind plain_resolve(const char *tag, const char *s, size_t len, rules__scalar *r,
                                  const char **ret_tag) {
    char hint = 0;
    unsigned char c = (unsigned char)s[0];
    if (len == 0)
        hint = 'N';
    else if (c == '+' || c == '-')
        hint = 'S';
    else if (c >= '0' && c <= '9')
        hint = 'D';
    else if (strchr("yYnNtTfFoO~", c))
        hint = 'M';
    else if (c == '.')
        hint = '.';
    *ret_tag = "!!str";
    if (!hint || strcmp(tag, "!!str") == 0 || strcmp(tag, "!!binary") == 0) return RULES__V_STR;
    if (strlen(s) != len) return RULES__V_STR; /* a NUL inside: no number or keyword */
    if (cfg_yaml_one_of(s, NULLS)) {
        *ret_tag = "!!null";
        return RULES__V_NULL;
    }
    if (cfg_yaml_one_of(s, TRUES) || cfg_yaml_one_of(s, FALSES)) {
        *ret_tag = "!!bool";
        r->i = cfg_yaml_one_of(s, TRUES);
        return RULES__V_BOOL;
    }
    if (cfg_yaml_one_of(s, NANS) || cfg_yaml_one_of(s, PINFS) || cfg_yaml_one_of(s, NINFS)) {
        *ret_tag = "!!float";
        r->f = cfg_yaml_one_of(s, NANS)    ? __builtin_nan("")
               : cfg_yaml_one_of(s, PINFS) ? __builtin_inf()
                                           : -__builtin_inf();
        return RULES__V_FLOAT;
    }
    if (strcmp(s, "<<") == 0) {
        *ret_tag = "!!merge";
        return RULES__V_OTHER;
    }
    if (hint == '.') {
        double d;
        if (base_parse_double(s, len, &d) == 0) {
            *ret_tag = "!!float";
            r->f = d;
            return RULES__V_FLOAT;
        }
        return RULES__V_STR;
    }
    if (hint != 'D' && hint != 'S') return RULES__V_STR;
    if ((tag[0] == 0 || strcmp(tag, "!!timestamp") == 0) && is_timestamp(s)) {
        *ret_tag = "!!timestamp";
        return RULES__V_TIMESTAMP;
    }
    if (len > 200) return RULES__V_STR;
    char plain[208];
    size_t k = 0;
    for (size_t i = 0; i < len; i++)
        if (s[i] != '_') plain[k++] = s[i];
    plain[k] = 0;
    int neg, sign;
    uint64_t mag;
    if (cfg_yaml_go_int(plain, &neg, &sign, &mag) == 0) {
        if (neg && mag <= (uint64_t)INT64_MAX + 1) {
            *ret_tag = "!!int";
            r->i = mag == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)mag;
            r->f = -(double)mag;
            return RULES__V_INT;
        }
        if (!neg && mag <= (uint64_t)INT64_MAX) {
            *ret_tag = "!!int";
            r->i = (int64_t)mag;
            r->f = (double)mag;
            return RULES__V_INT;
        }
        if (!sign) { /* ParseUint takes no sign */
            *ret_tag = "!!int";
            r->is_u = 1;
            r->u = mag;
            r->f = (double)mag;
            return RULES__V_INT;
        }
    }
    if (cfg_yaml_float_syntax(plain)) {
        double d;
        if (base_parse_double(plain, k, &d) == 0) {
            *ret_tag = "!!float";
            r->f = d;
            return RULES__V_FLOAT;
        }
    }
    return RULES__V_STR;
}

int rules__is_merge(const cfg_ynode *n) {
    return n->kind == CFG_Y_SCALAR && n->plain && (!n->tag || strcmp(n->tag, "!") == 0) && n->len == 2 &&
           memcmp(n->val, "<<", 2) == 0;
}

void rules__resolve(const cfg_ynode *n, rules__scalar *r) {
    memset(r, 0, sizeof *r);
    int explicit = n->tag && strcmp(n->tag, "!") != 0;
    const char *rt;
    if (explicit)
        short_tag(n->tag, r->tag, sizeof r->tag);
    else if (!n->plain)
        snprintf(r->tag, sizeof r->tag, "!!str");
    else if (rules__is_merge(n))
        snprintf(r->tag, sizeof r->tag, "!!merge");
    else {
        rules__scalar tmp;
        memset(&tmp, 0, sizeof tmp);
        plain_resolve("", n->val, n->len, &tmp, &rt);
        snprintf(r->tag, sizeof r->tag, "%s", rt);
    }
    /* decoder.scalar: an indicated string, else resolve(tag, value) */
    if (strcmp(r->tag, "!!str") == 0) {
        r->kind = RULES__V_STR;
        return;
    }
    static const char *const RESOLVABLE[] = {"!!bool", "!!int", "!!float", "!!timestamp", "!!null", NULL};
    if (!cfg_yaml_one_of(r->tag, RESOLVABLE)) {
        r->kind = strcmp(r->tag, "!!binary") == 0 ? RULES__V_BINARY : RULES__V_OTHER;
        return;
    }
    rules__vkind k = plain_resolve(r->tag, n->val, n->len, r, &rt);
    if (strcmp(rt, r->tag) == 0) {
        r->kind = k;
        return;
    }
    if (strcmp(r->tag, "!!float") == 0 && k == RULES__V_INT) {
        r->kind = RULES__V_FLOAT;
        return;
    }
    r->kind = RULES__V_BAD;
    snprintf(r->rtag, sizeof r->rtag, "%s", rt);
}

void rules__node_tag(const cfg_ynode *n, char *out, size_t outlen) {
    if (n->kind != CFG_Y_SCALAR) {
        if (n->tag && strcmp(n->tag, "!") != 0)
            short_tag(n->tag, out, outlen);
        else
            snprintf(out, outlen, "%s", n->kind == CFG_Y_SEQ ? "!!seq" : "!!map");
        return;
    }
    rules__scalar r;
    rules__resolve(n, &r);
    snprintf(out, outlen, "%s", r.tag);
}

long rules__base64(const char *s, size_t len, char *out) {
    static const char A[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    unsigned q[4];
    size_t nq = 0, pad = 0;
    long k = 0;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        if (c == '\r' || c == '\n') continue;
        if (c == '=') {
            if (nq < 2) return -1;
            pad++;
            q[nq++] = 0;
        } else {
            const char *p = c ? strchr(A, c) : NULL;
            if (!p || pad) return -1;
            q[nq++] = (unsigned)(p - A);
        }
        if (nq == 4) {
            unsigned v = q[0] << 18 | q[1] << 12 | q[2] << 6 | q[3];
            out[k++] = (char)(v >> 16);
            if (pad < 2) out[k++] = (char)(v >> 8 & 255);
            if (pad < 1) out[k++] = (char)(v & 255);
            nq = 0;
            if (pad) {
                /* nothing but line breaks may follow the padding */
                for (i++; i < len; i++)
                    if (s[i] != '\r' && s[i] != '\n') return -1;
                return k;
            }
        }
    }
    return nq == 0 ? k : -1;
}

/* ---- syntax errors ------------------------------------------------------ */

typedef struct anchor {
    char *name;
    int open; /* its node has not ended */
} anchor;

int rules__syntax_error(const char *buf, size_t len, base_buf *msg, int *ret_line) {
    yaml_parser_t p;
    if (!yaml_parser_initialize(&p)) return -1;
    yaml_parser_set_input_string(&p, (const unsigned char *)buf, len);
    anchor *as = NULL;
    size_t na = 0, cap = 0;
    size_t stack[CFG_YAML_MAX_DEPTH + 1]; /* anchor index + 1 of each open node, 0: none */
    size_t depth = 0;
    int found = -1, done = 0;
    while (!done && found < 0) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&p, &ev)) {
            /* yaml.v3's parser.fail(): the context mark first */
            size_t line = 0;
            int scanner = p.error == YAML_SCANNER_ERROR;
            if (p.context_mark.line != 0)
                line = p.context_mark.line + (size_t)scanner;
            else if (p.problem_mark.line != 0)
                line = p.problem_mark.line + (size_t)scanner;
            const char *what = p.problem ? p.problem : "unknown problem parsing YAML content";
            if (line)
                base_buf_printf(msg, "yaml: line %zu: %s", line, what);
            else
                base_buf_printf(msg, "yaml: %s", what);
            *ret_line = (int)(p.problem_mark.line + 1);
            found = 0;
            break;
        }
        const char *an = NULL;
        int opens = 0;
        switch (ev.type) {
        case YAML_DOCUMENT_END_EVENT:
        case YAML_STREAM_END_EVENT: done = 1; break;
        case YAML_ALIAS_EVENT: {
            const char *name = (const char *)ev.data.alias.anchor;
            size_t i = na;
            while (i > 0 && strcmp(as[i - 1].name, name) != 0) i--;
            if (i == 0)
                base_buf_printf(msg, "yaml: unknown anchor '%s' referenced", name);
            else if (as[i - 1].open)
                base_buf_printf(msg, "yaml: anchor '%s' value contains itself", name);
            if (i == 0 || as[i - 1].open) {
                *ret_line = (int)ev.start_mark.line + 1;
                found = 0;
            }
            break;
        }
        case YAML_SCALAR_EVENT: an = (const char *)ev.data.scalar.anchor; break;
        case YAML_SEQUENCE_START_EVENT:
            an = (const char *)ev.data.sequence_start.anchor;
            opens = 1;
            break;
        case YAML_MAPPING_START_EVENT:
            an = (const char *)ev.data.mapping_start.anchor;
            opens = 1;
            break;
        case YAML_SEQUENCE_END_EVENT:
        case YAML_MAPPING_END_EVENT:
            if (depth > 0 && stack[--depth]) as[stack[depth] - 1].open = 0;
            break;
        default: break;
        }
        if (an) {
            if (na == cap) {
                size_t nc = cap ? cap * 2 : 8;
                anchor *nas = realloc(as, nc * sizeof *nas);
                if (!nas)
                    done = 1;
                else {
                    as = nas;
                    cap = nc;
                }
            }
            if (na < cap && (as[na].name = strdup(an)) != NULL)
                as[na++].open = opens;
            else
                done = 1;
        }
        if (opens) {
            if (depth > CFG_YAML_MAX_DEPTH)
                done = 1;
            else
                stack[depth++] = an && na ? na : 0;
        }
        yaml_event_delete(&ev);
    }
    for (size_t i = 0; i < na; i++) free(as[i].name);
    free(as);
    yaml_parser_delete(&p);
    return found;
}
