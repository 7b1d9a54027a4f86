/* webcfg.c -- the web configuration file, read as exporter-toolkit v0.8.2
 * reads it; see webcfg.h for the format and the steps.
 *
 * Design. The YAML text becomes a small tree (libyaml's event stream; an
 * alias is a node pointing at the anchored one), which a decoder walks
 * with the rules of yaml.v2's UnmarshalStrict for the Go types of
 * exporter-toolkit's Config:
 *   - a scalar is resolved as yaml.v2 does (null, bool, int, float,
 *     timestamp, string; quoted scalars are strings); any non-null scalar
 *     fits a string field (its text), only a bool fits a bool field;
 *   - null zeroes the field it meets (a null tls_server_config zeroes the
 *     min/max versions, a null http2 is false), as reflect.Zero does;
 *   - unknown and repeated struct fields, repeated map keys and type
 *     mismatches are collected as "line N: ..." and reported together under
 *     "yaml: unmarshal errors:", while the custom unmarshalers' errors
 *     ("unknown cipher: X") and structural failures stop at once;
 *   - `<<` merges, aliases (a cycle is "anchor 'x' value contains itself").
 * Only the first document counts, as with yaml.Unmarshal.
 *
 * Invariants: every node belongs to the ydoc and is freed with it; the raw
 * decode target (raw_cfg) owns its strings until they move into the
 * http_webcfg; limits (file size, nesting, nodes, node visits, users) are
 * checked as they are crossed, so a hostile file costs bounded time and
 * memory ("billion laughs" stops at YDEC_MAX_VISITS).
 */
#define _GNU_SOURCE 1
#include "http/webcfg.h"

#include <crypt.h>
#include <errno.h>
#include <fcntl.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/path.h"
#include "base/utf8.h"

#define YDOC_MAX_DEPTH  1000
#define YDOC_MAX_NODES  100000u
#define YDEC_MAX_VISITS 1000000u
#define YDEC_MAX_ITEMS  1000u /* cipher_suites / curve_preferences entries */
#define WEBCFG_MAX_HDRS 1000u

/* ---- Go-compatible text ------------------------------------------------ */

static int go_is_print(uint32_t r) {
    if (r < 0x20 || r == 0x7f) return 0;
    if (r >= 0x80 && r < 0xa0) return 0;
    if (r == 0xad || r == 0x2028 || r == 0x2029 || r == 0xfeff) return 0;
    if (r >= 0xfff9 && r <= 0xfffb) return 0;
    return 1;
}

/* Appends s as Go's strconv.Quote (what %q and %#v print for a string). */
static void go_quote(base_buf *b, const char *s, size_t n) {
    static const char hex[] = "0123456789abcdef";
    base_buf_putc(b, '"');
    for (size_t i = 0; i < n;) {
        unsigned char c = (unsigned char)s[i];
        uint32_t r;
        size_t l = c < 0x80 ? 1 : base_utf8_decode((const unsigned char *)s + i, n - i, &r);
        if (c < 0x80) r = c;
        if (l == 0) {
            char e[4] = {'\\', 'x', hex[c >> 4], hex[c & 15]};
            base_buf_append(b, e, 4);
            i++;
            continue;
        }
        if (r == '"' || r == '\\') {
            base_buf_putc(b, '\\');
            base_buf_putc(b, (char)r);
        } else if (go_is_print(r)) {
            base_buf_append(b, s + i, l);
        } else if (r == '\a' || r == '\b' || r == '\f' || r == '\n' || r == '\r' || r == '\t' || r == '\v') {
            static const char esc[] = "abtnvfr";
            base_buf_putc(b, '\\');
            base_buf_putc(b, esc[r - '\a']);
        } else if (r < 0x80) {
            char e[4] = {'\\', 'x', hex[r >> 4], hex[r & 15]};
            base_buf_append(b, e, 4);
        } else if (r < 0x10000) {
            base_buf_printf(b, "\\u%04x", (unsigned)r);
        } else {
            base_buf_printf(b, "\\U%08x", (unsigned)r);
        }
        i += l;
    }
    base_buf_putc(b, '"');
}

/* Go's text for an errno ("no such file or directory"). */
static void go_errno(char *out, size_t n, int e) {
    snprintf(out, n, "%s", strerror(e));
    if (out[0] >= 'A' && out[0] <= 'Z') out[0] = (char)(out[0] + ('a' - 'A'));
}

static int set_err(char *err, size_t errlen, int code, base_buf *b) {
    if (base_buf_err(b)) code = BASE_E_NOMEM;
    if (err && errlen) snprintf(err, errlen, "%s", b->data ? b->data : "out of memory");
    base_buf_free(b);
    return code;
}

/* config.JoinDir(filepath.Dir(cfgpath), p): absolute and empty paths stay. */
static char *join_dir(const char *cfgpath, const char *p) {
    if (p[0] == '/') return strdup(p);
    const char *slash = cfgpath ? strrchr(cfgpath, '/') : NULL;
    size_t dl = slash ? (size_t)(slash - cfgpath) : 0;
    char *tmp = malloc(dl + strlen(p) + 4);
    if (!tmp) return NULL;
    if (!slash)
        sprintf(tmp, "./%s", p);
    else if (dl == 0)
        sprintf(tmp, "/%s", p);
    else
        sprintf(tmp, "%.*s/%s", (int)dl, cfgpath, p);
    char *c = base_path_clean(tmp);
    free(tmp);
    return c;
}

int http_webcfg_read_file(const char *path, size_t limit, char **ret, size_t *ret_len, char *err,
                          size_t errlen) {
    char e[128];
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        go_errno(e, sizeof e, errno);
        return base_errf(err, errlen, errno == ENOENT ? BASE_E_NOTFOUND : BASE_E_IO, "open %s: %s", path, e);
    }
    base_buf b;
    base_buf_init(&b, limit);
    base_buf_reserve(&b, 4096);
    for (;;) {
        char chunk[8192];
        ssize_t n = read(fd, chunk, sizeof chunk);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            int en = errno;
            close(fd);
            base_buf_free(&b);
            go_errno(e, sizeof e, en);
            return base_errf(err, errlen, BASE_E_IO, "read %s: %s", path, e);
        }
        if (n == 0) break;
        base_buf_append(&b, chunk, (size_t)n);
        if (base_buf_err(&b)) break;
    }
    close(fd);
    if (base_buf_err(&b)) {
        int code = base_buf_err(&b);
        base_buf_free(&b);
        if (code == BASE_E_LIMIT)
            return base_errf(err, errlen, BASE_E_LIMIT, "read %s: file larger than %zu bytes", path, limit);
        return base_errf(err, errlen, BASE_E_NOMEM, "read %s: out of memory", path);
    }
    size_t len;
    char *data = base_buf_steal(&b, &len);
    if (!data) data = calloc(1, 1);
    if (!data) return base_errf(err, errlen, BASE_E_NOMEM, "read %s: out of memory", path);
    *ret = data;
    *ret_len = len;
    return 0;
}

/* ---- YAML tree --------------------------------------------------------- */

enum { N_SCALAR = 1, N_SEQ, N_MAP, N_ALIAS };

typedef struct ynode {
    int kind;
    int line;     /* 1-based */
    int implicit; /* scalar written plain, without a tag */
    char *tag;    /* explicit tag, expanded ("tag:yaml.org,2002:str"), or NULL */
    char *val;    /* scalar text, or the alias's anchor name; NUL-terminated */
    size_t len;
    struct ynode **kids; /* SEQ: items; MAP: key, value, key, value, ... */
    size_t n, cap;
    struct ynode *target; /* ALIAS */
    int busy;             /* ALIAS being decoded (cycle check) */
} ynode;

typedef struct yanchor {
    char *name;
    ynode *node;
} yanchor;

typedef struct ydoc {
    ynode *root; /* NULL: no document, or an empty one */
    ynode **all;
    size_t nall, capall;
    yanchor *anchors;
    size_t nanchors, capanchors;
} ydoc;

static void ydoc_free(ydoc *d) {
    for (size_t i = 0; i < d->nall; i++) {
        ynode *n = d->all[i];
        free(n->tag);
        free(n->val);
        free(n->kids);
        free(n);
    }
    free(d->all);
    for (size_t i = 0; i < d->nanchors; i++) free(d->anchors[i].name);
    free(d->anchors);
    memset(d, 0, sizeof *d);
}

static int grow(void **p, size_t *cap, size_t need, size_t elem) {
    if (need <= *cap) return 0;
    size_t nc = *cap ? *cap * 2 : 8;
    while (nc < need) nc *= 2;
    void *q = realloc(*p, nc * elem);
    if (!q) return BASE_E_NOMEM;
    *p = q;
    *cap = nc;
    return 0;
}

static ynode *ynode_new(ydoc *d, int kind, const yaml_mark_t *mark, const yaml_char_t *tag) {
    if (d->nall >= YDOC_MAX_NODES) return NULL;
    if (grow((void **)&d->all, &d->capall, d->nall + 1, sizeof *d->all)) return NULL;
    ynode *n = calloc(1, sizeof *n);
    if (!n) return NULL;
    n->kind = kind;
    n->line = (int)mark->line + 1;
    if (tag && !(tag[0] == '!' && tag[1] == 0)) {
        n->tag = strdup((const char *)tag);
        if (!n->tag) {
            free(n);
            return NULL;
        }
    }
    d->all[d->nall++] = n;
    return n;
}

static int add_kid(ynode *parent, ynode *kid) {
    if (grow((void **)&parent->kids, &parent->cap, parent->n + 1, sizeof *parent->kids)) return BASE_E_NOMEM;
    parent->kids[parent->n++] = kid;
    return 0;
}

static int set_anchor(ydoc *d, const yaml_char_t *name, ynode *n) {
    if (!name) return 0;
    for (size_t i = 0; i < d->nanchors; i++) {
        if (strcmp(d->anchors[i].name, (const char *)name) == 0) {
            d->anchors[i].node = n; /* a later anchor of the same name wins */
            return 0;
        }
    }
    if (grow((void **)&d->anchors, &d->capanchors, d->nanchors + 1, sizeof *d->anchors)) return BASE_E_NOMEM;
    char *c = strdup((const char *)name);
    if (!c) return BASE_E_NOMEM;
    d->anchors[d->nanchors].name = c;
    d->anchors[d->nanchors].node = n;
    d->nanchors++;
    return 0;
}

/* yaml.v2's parser.fail(): which line it names, and how. */
static int parser_error(const yaml_parser_t *p, char *err, size_t errlen) {
    int line = 0;
    if (p->problem_mark.line != 0) {
        line = (int)p->problem_mark.line;
        if (p->error == YAML_SCANNER_ERROR) line++;
    } else if (p->context_mark.line != 0) {
        line = (int)p->context_mark.line;
    }
    const char *msg = p->problem && *p->problem ? p->problem : "unknown problem parsing YAML content";
    if (p->error == YAML_MEMORY_ERROR) return base_errf(err, errlen, BASE_E_NOMEM, "yaml: out of memory");
    if (line) return base_errf(err, errlen, BASE_E_PARSE, "yaml: line %d: %s", line, msg);
    return base_errf(err, errlen, BASE_E_PARSE, "yaml: %s", msg);
}

static int ydoc_parse(ydoc *d, const char *data, size_t len, char *err, size_t errlen) {
    yaml_parser_t p;
    if (!yaml_parser_initialize(&p)) return base_errf(err, errlen, BASE_E_NOMEM, "yaml: out of memory");
    static const char nl[] = "\n";
    if (len == 0)
        yaml_parser_set_input_string(&p, (const unsigned char *)nl, 1);
    else
        yaml_parser_set_input_string(&p, (const unsigned char *)data, len);
    ynode **stack = malloc(YDOC_MAX_DEPTH * sizeof *stack);
    size_t depth = 0;
    if (!stack) {
        yaml_parser_delete(&p);
        return base_errf(err, errlen, BASE_E_NOMEM, "yaml: out of memory");
    }
    int rc = 0, done = 0;
    while (!rc && !done) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&p, &ev)) {
            rc = parser_error(&p, err, errlen);
            break;
        }
        ynode *n = NULL;
        switch (ev.type) {
        case YAML_STREAM_END_EVENT:
        case YAML_DOCUMENT_END_EVENT: done = 1; break;
        case YAML_SEQUENCE_END_EVENT:
        case YAML_MAPPING_END_EVENT: depth--; break;
        case YAML_SCALAR_EVENT:
            n = ynode_new(d, N_SCALAR, &ev.start_mark, ev.data.scalar.tag);
            if (!n) break;
            n->val = malloc(ev.data.scalar.length + 1);
            if (!n->val) {
                n = NULL;
                break;
            }
            memcpy(n->val, ev.data.scalar.value, ev.data.scalar.length);
            n->val[ev.data.scalar.length] = '\0';
            n->len = ev.data.scalar.length;
            n->implicit = ev.data.scalar.plain_implicit && !n->tag;
            if (set_anchor(d, ev.data.scalar.anchor, n)) n = NULL;
            break;
        case YAML_SEQUENCE_START_EVENT:
        case YAML_MAPPING_START_EVENT: {
            int seq = ev.type == YAML_SEQUENCE_START_EVENT;
            n = ynode_new(d, seq ? N_SEQ : N_MAP, &ev.start_mark,
                          seq ? ev.data.sequence_start.tag : ev.data.mapping_start.tag);
            if (n && set_anchor(d, seq ? ev.data.sequence_start.anchor : ev.data.mapping_start.anchor, n))
                n = NULL;
            break;
        }
        case YAML_ALIAS_EVENT: {
            ynode *t = NULL;
            for (size_t i = 0; i < d->nanchors; i++)
                if (strcmp(d->anchors[i].name, (const char *)ev.data.alias.anchor) == 0)
                    t = d->anchors[i].node;
            if (!t) {
                rc = base_errf(err, errlen, BASE_E_PARSE, "yaml: unknown anchor '%s' referenced",
                               (const char *)ev.data.alias.anchor);
                break;
            }
            n = ynode_new(d, N_ALIAS, &ev.start_mark, NULL);
            if (!n) break;
            n->target = t;
            n->val = strdup((const char *)ev.data.alias.anchor);
            if (!n->val) n = NULL;
            break;
        }
        default: break; /* stream and document starts */
        }
        int is_node = ev.type == YAML_SCALAR_EVENT || ev.type == YAML_SEQUENCE_START_EVENT ||
                      ev.type == YAML_MAPPING_START_EVENT || ev.type == YAML_ALIAS_EVENT;
        yaml_event_delete(&ev);
        if (rc || !is_node) continue;
        if (!n) {
            rc = d->nall >= YDOC_MAX_NODES
                     ? base_errf(err, errlen, BASE_E_LIMIT, "yaml: more than %u nodes", YDOC_MAX_NODES)
                     : base_errf(err, errlen, BASE_E_NOMEM, "yaml: out of memory");
            break;
        }
        if (depth > 0) {
            if (add_kid(stack[depth - 1], n)) {
                rc = base_errf(err, errlen, BASE_E_NOMEM, "yaml: out of memory");
                break;
            }
        } else if (!d->root) {
            d->root = n;
        }
        if (n->kind == N_SEQ || n->kind == N_MAP) {
            if (depth >= YDOC_MAX_DEPTH) {
                rc = base_errf(err, errlen, BASE_E_LIMIT, "yaml: nesting deeper than %d levels",
                               YDOC_MAX_DEPTH);
                break;
            }
            stack[depth++] = n;
        }
    }
    yaml_parser_delete(&p);
    free(stack);
    return rc;
}

/* ---- scalar resolution (yaml.v2's resolve) ------------------------------ */

#define TAG_PFX "tag:yaml.org,2002:"

enum { R_NULL = 1, R_BOOL, R_INT, R_FLOAT, R_STR, R_TIMESTAMP, R_MERGE, R_OTHER };
static const char *const R_LONG[] = {
    NULL,          TAG_PFX "null",      TAG_PFX "bool",  TAG_PFX "int", TAG_PFX "float",
    TAG_PFX "str", TAG_PFX "timestamp", TAG_PFX "merge", NULL,
};

static int tag_kind(const char *tag) {
    for (int k = R_NULL; k <= R_MERGE; k++)
        if (strcmp(tag, R_LONG[k]) == 0) return k;
    return R_OTHER;
}

/* "!!int" for "tag:yaml.org,2002:int", other tags as they are. */
static void short_tag(base_buf *b, const char *tag) {
    size_t pl = strlen(TAG_PFX);
    if (strncmp(tag, TAG_PFX, pl) == 0) {
        base_buf_puts(b, "!!");
        base_buf_puts(b, tag + pl);
    } else {
        base_buf_puts(b, tag);
    }
}

static int is_digit(char c) {
    return c >= '0' && c <= '9';
}

/* ^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$ and finite. */
static int yaml_style_float(const char *s) {
    const char *p = s;
    if (*p == '-' || *p == '+') p++;
    if (*p == '.') {
        p++;
        if (!is_digit(*p)) return 0;
        while (is_digit(*p)) p++;
    } else {
        if (!is_digit(*p)) return 0;
        while (is_digit(*p)) p++;
        if (*p == '.') {
            p++;
            while (is_digit(*p)) p++;
        }
    }
    if (*p == 'e' || *p == 'E') {
        p++;
        if (*p == '-' || *p == '+') p++;
        if (!is_digit(*p)) return 0;
        while (is_digit(*p)) p++;
    }
    if (*p) return 0;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    return *end == 0 && !(errno == ERANGE && (v > 1 || v < -1));
}

/* strconv.ParseInt(s, 0, 64) succeeds, or ParseUint(s, 0, 64). */
static int go_parse_int(const char *s) {
    const char *p = s;
    int neg = 0, sign = 0;
    if (*p == '-' || *p == '+') {
        neg = *p == '-';
        sign = 1;
        p++;
    }
    unsigned base = 10;
    if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X'))
        base = 16, p += 2;
    else if (p[0] == '0' && (p[1] == 'b' || p[1] == 'B'))
        base = 2, p += 2;
    else if (p[0] == '0' && (p[1] == 'o' || p[1] == 'O'))
        base = 8, p += 2;
    else if (p[0] == '0' && p[1])
        base = 8, p += 1;
    if (!*p) return 0;
    uint64_t v = 0;
    int over = 0;
    for (; *p; p++) {
        unsigned dv;
        if (is_digit(*p))
            dv = (unsigned)(*p - '0');
        else if (*p >= 'a' && *p <= 'f')
            dv = (unsigned)(*p - 'a' + 10);
        else if (*p >= 'A' && *p <= 'F')
            dv = (unsigned)(*p - 'A' + 10);
        else
            return 0;
        if (dv >= base) return 0;
        if (v > (UINT64_MAX - dv) / base) over = 1;
        v = v * base + dv;
    }
    if (over) return 0;
    if (neg) return v <= (uint64_t)INT64_MAX + 1;
    if (v <= (uint64_t)INT64_MAX) return 1;
    return !sign; /* ParseUint takes no sign */
}

static int digits(const char **p, int min, int max, int *ret) {
    int n = 0, v = 0;
    while (is_digit(**p) && n < max) {
        v = v * 10 + (**p - '0');
        (*p)++;
        n++;
    }
    *ret = v;
    return n >= min;
}

/* parseTimestamp: "2006-1-2", "2006-1-2T15:4:5.999999999Z07:00" (also
 * with 't'), "2006-1-2 15:4:5.999999999". */
static int yaml_timestamp(const char *s) {
    const char *p = s;
    int y, mo, d, h, mi, se;
    if (!digits(&p, 4, 4, &y) || *p++ != '-') return 0;
    if (!digits(&p, 1, 2, &mo) || *p++ != '-' || !digits(&p, 1, 2, &d)) return 0;
    if (mo < 1 || mo > 12 || d < 1) return 0;
    static const int mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    if (d > mdays[mo - 1] || (mo == 2 && d == 29 && !leap)) return 0;
    if (!*p) return 1;
    char sep = *p++;
    if (sep != 'T' && sep != 't' && sep != ' ') return 0;
    if (!digits(&p, 1, 2, &h) || *p++ != ':' || !digits(&p, 1, 2, &mi) || *p++ != ':' ||
        !digits(&p, 1, 2, &se))
        return 0;
    if (h > 23 || mi > 59 || se > 59) return 0;
    if (*p == '.') {
        p++;
        if (!is_digit(*p)) return 0;
        while (is_digit(*p)) p++;
    }
    if (sep == ' ') return *p == 0;
    if (*p == 'Z') return p[1] == 0;
    if (*p != '+' && *p != '-') return 0;
    p++;
    int zh, zm;
    if (!digits(&p, 2, 2, &zh) || *p++ != ':' || !digits(&p, 2, 2, &zm)) return 0;
    return *p == 0 && zh < 24 && zm < 60;
}

static int one_of(const char *s, const char *const *list) {
    for (; *list; list++)
        if (strcmp(s, *list) == 0) return 1;
    return 0;
}

static const char *const Y_TRUE[] = {"y",  "Y",  "yes",  "Yes",  "YES",  "on",
                                     "On", "ON", "true", "True", "TRUE", NULL};
static const char *const Y_FALSE[] = {"n",   "N",   "no",    "No",    "NO",    "off",
                                      "Off", "OFF", "false", "False", "FALSE", NULL};
static const char *const Y_NULL[] = {"", "~", "null", "Null", "NULL", NULL};
static const char *const Y_FLOATS[] = {".nan",  ".NaN",  ".NAN",  ".inf",  ".Inf",  ".INF", "+.inf",
                                       "+.Inf", "+.INF", "-.inf", "-.Inf", "-.INF", NULL};

/* The kind the value resolves to without a tag (and whether that is the
 * timestamp check's business: only untagged or !!timestamp scalars). */
static int resolve_plain(const char *in, size_t len, int ts_ok, int *ret_bool) {
    char hint = 0;
    unsigned char c = len ? (unsigned char)in[0] : 0;
    if (!len)
        hint = 'N';
    else if (c == '+' || c == '-')
        hint = 'S';
    else if (is_digit((char)c))
        hint = 'D';
    else if (strchr("yYnNtTfFoO~<", c))
        hint = 'M';
    else if (c == '.')
        hint = '.';
    if (!hint) return R_STR;
    if (strlen(in) != len) return R_STR; /* a NUL inside: no table entry matches */
    if (one_of(in, Y_NULL)) return R_NULL;
    if (one_of(in, Y_TRUE)) {
        *ret_bool = 1;
        return R_BOOL;
    }
    if (one_of(in, Y_FALSE)) {
        *ret_bool = 0;
        return R_BOOL;
    }
    if (one_of(in, Y_FLOATS)) return R_FLOAT;
    if (strcmp(in, "<<") == 0) return R_MERGE;
    if (hint == '.') return yaml_style_float(in) ? R_FLOAT : R_STR;
    if (hint == 'D' || hint == 'S') {
        if (ts_ok && yaml_timestamp(in)) return R_TIMESTAMP;
        char *plain = malloc(len + 1);
        if (!plain) return R_STR;
        size_t w = 0;
        for (size_t i = 0; i < len; i++)
            if (in[i] != '_') plain[w++] = in[i];
        plain[w] = 0;
        int k = R_STR;
        if (go_parse_int(plain))
            k = R_INT;
        else if (yaml_style_float(plain))
            k = R_FLOAT;
        else if ((strncmp(plain, "0b", 2) == 0 || strncmp(plain, "-0b", 3) == 0)) {
            const char *q = plain + (plain[0] == '-' ? 3 : 2);
            size_t nd = strspn(q, "01");
            if (nd && !q[nd] && nd <= 63) k = R_INT;
        }
        free(plain);
        return k;
    }
    return R_STR;
}

/* ---- decoding (yaml.v2's decoder, strict) ------------------------------- */

typedef struct ystr {
    char *p; /* NULL: unset (Go's "") */
    size_t n;
} ystr;

typedef struct ykv {
    ystr k, v;
} ykv;

typedef struct ymap { /* a decoded map[string]X, in file order */
    ykv *kv;
    size_t n, cap;
    uint32_t *slots; /* open addressing over kv: index + 1, 0 = empty */
    size_t nslots;   /* a power of two, more than twice n */
} ymap;

typedef struct yarr { /* a decoded []Cipher or []Curve */
    uint16_t *v;
    size_t n;
} yarr;

typedef struct raw_tls {
    ystr cert, key, auth, ca;
    uint16_t minv, maxv;
    yarr cs, cv;
    int prefer;
} raw_tls;

typedef struct raw_http {
    int http2;
    ymap hdr;
} raw_http;

typedef struct raw_cfg {
    raw_tls tls;
    raw_http http;
    ymap users;
} raw_cfg;

typedef enum {
    TY_CONFIG,
    TY_TLS,
    TY_HTTP,
    TY_USERS,
    TY_HEADERS,
    TY_STR,
    TY_PLAIN,
    TY_SECRET,
    TY_BOOL,
    TY_CIPHERS,
    TY_CURVES,
    TY_VERSION,
    TY_CIPHER,
    TY_CURVE,
} ytype;

static const char *const TY_NAME[] = {
    "web.Config",
    "web.TLSConfig",
    "web.HTTPConfig",
    "map[string]config.Secret",
    "map[string]string",
    "string",
    "config.plain",
    "config.Secret",
    "bool",
    "[]web.Cipher",
    "[]web.Curve",
    "web.TLSVersion",
    "web.Cipher",
    "web.Curve",
};

typedef struct ydec {
    base_buf terrs; /* "\n  line N: ..." for every type error */
    size_t nterrs;
    base_buf fatal; /* set: decoding stopped with this message */
    int failed;
    int code;
    uint64_t visits;
} ydec;

static void fatalf(ydec *d, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void fatalf(ydec *d, int code, const char *fmt, ...) {
    if (d->failed) return;
    d->failed = 1;
    d->code = code;
    va_list ap;
    va_start(ap, fmt);
    base_buf_vprintf(&d->fatal, fmt, ap);
    va_end(ap);
}

static void ystr_free(ystr *s) {
    free(s->p);
    s->p = NULL;
    s->n = 0;
}

static void ymap_free(ymap *m) {
    for (size_t i = 0; i < m->n; i++) {
        ystr_free(&m->kv[i].k);
        ystr_free(&m->kv[i].v);
    }
    free(m->kv);
    free(m->slots);
    memset(m, 0, sizeof *m);
}

static size_t key_hash(const ystr *k) {
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    for (size_t i = 0; i < k->n; i++) h = (h ^ (unsigned char)k->p[i]) * 1099511628211ULL;
    return (size_t)(h ^ (h >> 29));
}

/* The slot holding key, or the empty one where it would go. */
static uint32_t *ymap_slot(ymap *m, const ystr *k) {
    size_t mask = m->nslots - 1;
    for (size_t i = key_hash(k) & mask;; i = (i + 1) & mask) {
        uint32_t *sl = &m->slots[i];
        if (!*sl) return sl;
        const ystr *o = &m->kv[*sl - 1].k;
        if (o->n == k->n && (k->n == 0 || memcmp(o->p, k->p, k->n) == 0)) return sl;
    }
}

/* Makes room for one more key in the index; 0 or BASE_E_NOMEM. */
static int ymap_grow(ymap *m) {
    if (grow((void **)&m->kv, &m->cap, m->n + 1, sizeof *m->kv)) return BASE_E_NOMEM;
    if ((m->n + 1) * 2 < m->nslots) return 0;
    size_t ns = m->nslots ? m->nslots * 2 : 16;
    uint32_t *sl = calloc(ns, sizeof *sl);
    if (!sl) return BASE_E_NOMEM;
    free(m->slots);
    m->slots = sl;
    m->nslots = ns;
    for (size_t i = 0; i < m->n; i++) *ymap_slot(m, &m->kv[i].k) = (uint32_t)(i + 1);
    return 0;
}

static void yarr_free(yarr *a) {
    free(a->v);
    a->v = NULL;
    a->n = 0;
}

static void raw_tls_free(raw_tls *t) {
    ystr_free(&t->cert);
    ystr_free(&t->key);
    ystr_free(&t->auth);
    ystr_free(&t->ca);
    yarr_free(&t->cs);
    yarr_free(&t->cv);
    memset(t, 0, sizeof *t);
}

static void raw_free(raw_cfg *c) {
    raw_tls_free(&c->tls);
    ymap_free(&c->http.hdr);
    ymap_free(&c->users);
    memset(c, 0, sizeof *c);
}

/* reflect.Zero for a field that met a null. */
static void zero(ytype t, void *out) {
    switch (t) {
    case TY_CONFIG: raw_free(out); break;
    case TY_TLS: raw_tls_free(out); break;
    case TY_HTTP: {
        raw_http *h = out;
        ymap_free(&h->hdr);
        memset(h, 0, sizeof *h);
        break;
    }
    case TY_USERS:
    case TY_HEADERS: ymap_free(out); break;
    case TY_STR:
    case TY_PLAIN:
    case TY_SECRET: ystr_free(out); break;
    case TY_BOOL: *(int *)out = 0; break;
    case TY_CIPHERS:
    case TY_CURVES: yarr_free(out); break;
    case TY_VERSION:
    case TY_CIPHER:
    case TY_CURVE: *(uint16_t *)out = 0; break;
    }
}

/* d.terror(): "line N: cannot unmarshal !!str `abc` into bool". */
static void terror(ydec *d, const ynode *n, const char *longtag, ytype t) {
    base_buf *b = &d->terrs;
    const char *tag = n->tag ? n->tag : longtag;
    base_buf_printf(b, "\n  line %d: cannot unmarshal ", n->line);
    short_tag(b, tag);
    if (strcmp(tag, TAG_PFX "seq") != 0 && strcmp(tag, TAG_PFX "map") != 0) {
        if (n->len > 10) {
            base_buf_puts(b, " `");
            base_buf_append(b, n->val, 7);
            base_buf_puts(b, "...`");
        } else {
            base_buf_puts(b, " `");
            base_buf_append(b, n->val, n->len);
            base_buf_putc(b, '`');
        }
    }
    base_buf_printf(b, " into %s", TY_NAME[t]);
    d->nterrs++;
}

/* The resolved kind of a scalar node; R_OTHER for a tag yaml.v2 does not
 * resolve. A tag that contradicts the value stops the decoding. */
static int resolve(ydec *d, const ynode *n, int *ret_bool, const char **ret_longtag) {
    *ret_bool = 0;
    if (!n->tag && !n->implicit) {
        *ret_longtag = R_LONG[R_STR];
        return R_STR;
    }
    int tk = n->tag ? tag_kind(n->tag) : 0;
    int resolvable =
        !n->tag || tk == R_STR || tk == R_BOOL || tk == R_INT || tk == R_FLOAT || tk == R_TIMESTAMP;
    if (!resolvable) {
        *ret_longtag = n->tag;
        return R_OTHER;
    }
    int rk = tk == R_STR ? R_STR : resolve_plain(n->val, n->len, !n->tag || tk == R_TIMESTAMP, ret_bool);
    if (n->tag && tk != rk && tk != R_STR) {
        if (tk == R_FLOAT && rk == R_INT) {
            rk = R_FLOAT;
        } else {
            base_buf s1 = BASE_BUF_INIT, s2 = BASE_BUF_INIT;
            short_tag(&s1, R_LONG[rk]);
            short_tag(&s2, n->tag);
            fatalf(d, BASE_E_PARSE, "yaml: cannot decode %s `%s` as a %s", s1.data ? s1.data : "", n->val,
                   s2.data ? s2.data : "");
            base_buf_free(&s1);
            base_buf_free(&s2);
            return 0;
        }
    }
    *ret_longtag = R_LONG[rk];
    return rk;
}

/* prepare()'s null test: no custom unmarshaler runs for these. */
static int prepare_null(const ynode *n) {
    if (n->tag && strcmp(n->tag, R_LONG[R_NULL]) == 0) return 1;
    return n->kind == N_SCALAR && !n->tag &&
           (strcmp(n->val, "null") == 0 || strcmp(n->val, "~") == 0 || (n->len == 0 && n->implicit));
}

static int is_merge(const ynode *n) {
    return n->kind == N_SCALAR && n->len == 2 && strcmp(n->val, "<<") == 0 &&
           (n->implicit || (n->tag && strcmp(n->tag, R_LONG[R_MERGE]) == 0));
}

static int unmarshal(ydec *d, ynode *n, ytype t, void *out);

static const struct {
    const char *name;
    uint16_t id;
} GO_VERSIONS[] = {
    {"TLS13", HTTP_TLS13}, {"TLS12", HTTP_TLS12}, {"TLS11", HTTP_TLS11}, {"TLS10", HTTP_TLS10}};

/* Go 1.19's tls.CipherSuites() (the secure ones), with GnuTLS's names for
 * the key exchange, cipher and MAC (kx NULL: a TLS 1.3 suite). */
static const struct {
    const char *name;
    uint16_t id;
    const char *kx, *cipher, *mac;
} GO_CIPHERS[] = {
    {"TLS_RSA_WITH_AES_128_CBC_SHA", 0x002f, "RSA", "AES-128-CBC", "SHA1"},
    {"TLS_RSA_WITH_AES_256_CBC_SHA", 0x0035, "RSA", "AES-256-CBC", "SHA1"},
    {"TLS_RSA_WITH_AES_128_GCM_SHA256", 0x009c, "RSA", "AES-128-GCM", "AEAD"},
    {"TLS_RSA_WITH_AES_256_GCM_SHA384", 0x009d, "RSA", "AES-256-GCM", "AEAD"},
    {"TLS_AES_128_GCM_SHA256", 0x1301, NULL, "AES-128-GCM", "AEAD"},
    {"TLS_AES_256_GCM_SHA384", 0x1302, NULL, "AES-256-GCM", "AEAD"},
    {"TLS_CHACHA20_POLY1305_SHA256", 0x1303, NULL, "CHACHA20-POLY1305", "AEAD"},
    {"TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA", 0xc009, "ECDHE-ECDSA", "AES-128-CBC", "SHA1"},
    {"TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA", 0xc00a, "ECDHE-ECDSA", "AES-256-CBC", "SHA1"},
    {"TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA", 0xc013, "ECDHE-RSA", "AES-128-CBC", "SHA1"},
    {"TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA", 0xc014, "ECDHE-RSA", "AES-256-CBC", "SHA1"},
    {"TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256", 0xc02b, "ECDHE-ECDSA", "AES-128-GCM", "AEAD"},
    {"TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384", 0xc02c, "ECDHE-ECDSA", "AES-256-GCM", "AEAD"},
    {"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", 0xc02f, "ECDHE-RSA", "AES-128-GCM", "AEAD"},
    {"TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384", 0xc030, "ECDHE-RSA", "AES-256-GCM", "AEAD"},
    {"TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256", 0xcca8, "ECDHE-RSA", "CHACHA20-POLY1305", "AEAD"},
    {"TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256", 0xcca9, "ECDHE-ECDSA", "CHACHA20-POLY1305", "AEAD"},
};

static const struct {
    const char *name;
    uint16_t id;
    const char *group;
} GO_CURVES[] = {
    {"CurveP256", 23, "GROUP-SECP256R1"},
    {"CurveP384", 24, "GROUP-SECP384R1"},
    {"CurveP521", 25, "GROUP-SECP521R1"},
    {"X25519", 29, "GROUP-X25519"},
};

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

/* callUnmarshaler for Secret, TLSVersion, Cipher and Curve: the value is
 * first decoded as a string (type errors collected), then looked up. */
static int call_custom(ydec *d, ynode *n, ytype t, void *out) {
    size_t before = d->nterrs;
    ystr s = {0};
    unmarshal(d, n, t == TY_SECRET ? TY_PLAIN : TY_STR, &s);
    if (d->failed || d->nterrs > before) {
        ystr_free(&s);
        return 0;
    }
    const char *v = s.p ? s.p : "";
    int found = -1;
    switch (t) {
    case TY_SECRET:
        ystr_free(out);
        *(ystr *)out = s;
        return 1;
    case TY_VERSION:
        for (size_t i = 0; i < NELEM(GO_VERSIONS); i++)
            if (strcmp(v, GO_VERSIONS[i].name) == 0) found = (int)GO_VERSIONS[i].id;
        if (found < 0) fatalf(d, BASE_E_PARSE, "unknown TLS version: %s", v);
        break;
    case TY_CIPHER:
        for (size_t i = 0; i < NELEM(GO_CIPHERS); i++)
            if (strcmp(v, GO_CIPHERS[i].name) == 0) found = GO_CIPHERS[i].id;
        if (found < 0) fatalf(d, BASE_E_PARSE, "unknown cipher: %s", v);
        break;
    case TY_CURVE:
        for (size_t i = 0; i < NELEM(GO_CURVES); i++)
            if (strcmp(v, GO_CURVES[i].name) == 0) found = GO_CURVES[i].id;
        if (found < 0) fatalf(d, BASE_E_PARSE, "unknown curve: %s", v);
        break;
    default: break;
    }
    ystr_free(&s);
    if (found < 0) return 0;
    *(uint16_t *)out = (uint16_t)found;
    return 1;
}

static int dec_scalar(ydec *d, ynode *n, ytype t, void *out) {
    int b;
    const char *longtag;
    int k = resolve(d, n, &b, &longtag);
    if (!k) return 0;
    if (k == R_NULL) {
        zero(t, out);
        return 1;
    }
    switch (t) {
    case TY_STR:
    case TY_PLAIN: {
        ystr *s = out;
        char *c = malloc(n->len + 1);
        if (!c) {
            fatalf(d, BASE_E_NOMEM, "yaml: out of memory");
            return 0;
        }
        memcpy(c, n->val, n->len + 1);
        ystr_free(s);
        s->p = c;
        s->n = n->len;
        return 1;
    }
    case TY_BOOL:
        if (k == R_BOOL) {
            *(int *)out = b;
            return 1;
        }
        break;
    default: break;
    }
    terror(d, n, longtag, t);
    return 0;
}

static void merge(ydec *d, ynode *n, ytype t, void *out) {
    static const char want_map[] = "yaml: map merge requires map or sequence of maps as the value";
    switch (n->kind) {
    case N_MAP: unmarshal(d, n, t, out); break;
    case N_ALIAS:
        if (n->target->kind != N_MAP) {
            fatalf(d, BASE_E_PARSE, want_map);
            return;
        }
        unmarshal(d, n, t, out);
        break;
    case N_SEQ:
        for (size_t i = n->n; i-- > 0 && !d->failed;) {
            ynode *k = n->kids[i];
            if ((k->kind == N_ALIAS && k->target->kind != N_MAP) ||
                (k->kind != N_ALIAS && k->kind != N_MAP)) {
                fatalf(d, BASE_E_PARSE, want_map);
                return;
            }
            unmarshal(d, k, t, out);
        }
        break;
    default: fatalf(d, BASE_E_PARSE, want_map);
    }
}

typedef struct yfield {
    const char *name;
    ytype t;
    size_t off;
} yfield;

static const yfield CONFIG_FIELDS[] = {
    {"tls_server_config", TY_TLS, offsetof(raw_cfg, tls)},
    {"http_server_config", TY_HTTP, offsetof(raw_cfg, http)},
    {"basic_auth_users", TY_USERS, offsetof(raw_cfg, users)},
    {NULL, 0, 0},
};
static const yfield TLS_FIELDS[] = {
    {"cert_file", TY_STR, offsetof(raw_tls, cert)},
    {"key_file", TY_STR, offsetof(raw_tls, key)},
    {"client_auth_type", TY_STR, offsetof(raw_tls, auth)},
    {"client_ca_file", TY_STR, offsetof(raw_tls, ca)},
    {"cipher_suites", TY_CIPHERS, offsetof(raw_tls, cs)},
    {"curve_preferences", TY_CURVES, offsetof(raw_tls, cv)},
    {"min_version", TY_VERSION, offsetof(raw_tls, minv)},
    {"max_version", TY_VERSION, offsetof(raw_tls, maxv)},
    {"prefer_server_cipher_suites", TY_BOOL, offsetof(raw_tls, prefer)},
    {NULL, 0, 0},
};
static const yfield HTTP_FIELDS[] = {
    {"http2", TY_BOOL, offsetof(raw_http, http2)},
    {"headers", TY_HEADERS, offsetof(raw_http, hdr)},
    {NULL, 0, 0},
};

/* mappingStruct, strict: unknown and repeated fields are type errors. */
static int dec_struct(ydec *d, ynode *n, ytype t, void *out) {
    const yfield *fields = t == TY_CONFIG ? CONFIG_FIELDS : t == TY_TLS ? TLS_FIELDS : HTTP_FIELDS;
    unsigned done = 0;
    for (size_t i = 0; i + 1 < n->n && !d->failed; i += 2) {
        ynode *k = n->kids[i], *v = n->kids[i + 1];
        if (is_merge(k)) {
            merge(d, v, t, out);
            continue;
        }
        ystr name = {0};
        if (!unmarshal(d, k, TY_STR, &name)) {
            ystr_free(&name);
            continue;
        }
        const char *nm = name.p ? name.p : "";
        int f = -1;
        for (int j = 0; fields[j].name; j++)
            if (name.n == strlen(fields[j].name) && strcmp(nm, fields[j].name) == 0) f = j;
        if (f < 0) {
            base_buf_printf(&d->terrs, "\n  line %d: field %s not found in type %s", k->line, nm, TY_NAME[t]);
            d->nterrs++;
        } else if (done & (1u << f)) {
            base_buf_printf(&d->terrs, "\n  line %d: field %s already set in type %s", k->line, nm,
                            TY_NAME[t]);
            d->nterrs++;
        } else {
            done |= 1u << f;
            unmarshal(d, v, fields[f].t, (char *)out + fields[f].off);
        }
        ystr_free(&name);
    }
    return !d->failed;
}

/* A map[string]X: keys decoded as strings, values as X; a repeated key is
 * a type error ("key \"a\" already set in map", at the value's line). */
static int dec_map(ydec *d, ynode *n, ytype t, void *out) {
    ymap *m = out;
    for (size_t i = 0; i + 1 < n->n && !d->failed; i += 2) {
        ynode *k = n->kids[i], *v = n->kids[i + 1];
        if (is_merge(k)) {
            merge(d, v, t, out);
            continue;
        }
        ystr key = {0}, val = {0};
        if (!unmarshal(d, k, TY_STR, &key) || !unmarshal(d, v, t == TY_USERS ? TY_SECRET : TY_STR, &val)) {
            ystr_free(&key);
            ystr_free(&val);
            continue;
        }
        size_t limit = t == TY_USERS ? HTTP_WEBCFG_MAX_USERS : WEBCFG_MAX_HDRS;
        uint32_t *slot = NULL;
        if (m->n >= limit) {
            fatalf(d, BASE_E_LIMIT, "more than %zu entries in %s", limit,
                   t == TY_USERS ? "basic_auth_users" : "headers");
        } else if (ymap_grow(m)) {
            fatalf(d, BASE_E_NOMEM, "yaml: out of memory");
        } else if (*(slot = ymap_slot(m, &key))) {
            base_buf_printf(&d->terrs, "\n  line %d: key ", v->line);
            go_quote(&d->terrs, key.p ? key.p : "", key.n);
            base_buf_puts(&d->terrs, " already set in map");
            d->nterrs++;
        } else {
            m->kv[m->n].k = key;
            m->kv[m->n].v = val;
            *slot = (uint32_t)++m->n;
            continue;
        }
        ystr_free(&key);
        ystr_free(&val);
    }
    return !d->failed;
}

static int dec_sequence(ydec *d, ynode *n, ytype t, void *out) {
    if (t != TY_CIPHERS && t != TY_CURVES) {
        terror(d, n, TAG_PFX "seq", t);
        return 0;
    }
    yarr *a = out;
    yarr_free(a);
    if (n->n > YDEC_MAX_ITEMS) {
        fatalf(d, BASE_E_LIMIT, "more than %u entries in %s", YDEC_MAX_ITEMS,
               t == TY_CIPHERS ? "cipher_suites" : "curve_preferences");
        return 0;
    }
    a->v = calloc(n->n ? n->n : 1, sizeof *a->v);
    if (!a->v) {
        fatalf(d, BASE_E_NOMEM, "yaml: out of memory");
        return 0;
    }
    for (size_t i = 0; i < n->n && !d->failed; i++) {
        uint16_t v = 0;
        if (unmarshal(d, n->kids[i], t == TY_CIPHERS ? TY_CIPHER : TY_CURVE, &v)) a->v[a->n++] = v;
    }
    return !d->failed;
}

static int unmarshal(ydec *d, ynode *n, ytype t, void *out) {
    if (d->failed) return 0;
    if (++d->visits > YDEC_MAX_VISITS) {
        fatalf(d, BASE_E_LIMIT, "yaml: document contains excessive aliasing");
        return 0;
    }
    if (n->kind == N_ALIAS) {
        if (n->busy) {
            fatalf(d, BASE_E_PARSE, "yaml: anchor '%s' value contains itself", n->val);
            return 0;
        }
        n->busy = 1;
        int good = unmarshal(d, n->target, t, out);
        n->busy = 0;
        return good;
    }
    if ((t == TY_SECRET || t == TY_VERSION || t == TY_CIPHER || t == TY_CURVE) && !prepare_null(n))
        return call_custom(d, n, t, out);
    switch (n->kind) {
    case N_SCALAR: return dec_scalar(d, n, t, out);
    case N_MAP:
        if (t == TY_CONFIG || t == TY_TLS || t == TY_HTTP) return dec_struct(d, n, t, out);
        if (t == TY_USERS || t == TY_HEADERS) return dec_map(d, n, t, out);
        terror(d, n, TAG_PFX "map", t);
        return 0;
    default: return dec_sequence(d, n, t, out);
    }
}

/* ---- exporter-toolkit's steps ------------------------------------------ */

static const struct {
    const char *name;
    const char *values[3];
} EXTRA_HEADERS[] = {
    {"Strict-Transport-Security", {NULL}},
    {"X-Content-Type-Options", {"nosniff", NULL}},
    {"X-Frame-Options", {"deny", "sameorigin", NULL}},
    {"X-XSS-Protection", {NULL}},
    {"Content-Security-Policy", {NULL}},
};

/* validateHeaderConfig (in the file's order; Go's map order is random). */
static int check_headers(const raw_http *h, char *err, size_t errlen) {
    for (size_t i = 0; i < h->hdr.n; i++) {
        const ystr *k = &h->hdr.kv[i].k, *v = &h->hdr.kv[i].v;
        const char *kp = k->p ? k->p : "", *vp = v->p ? v->p : "";
        int e = -1;
        for (size_t j = 0; j < NELEM(EXTRA_HEADERS); j++)
            if (k->n == strlen(EXTRA_HEADERS[j].name) && strcmp(kp, EXTRA_HEADERS[j].name) == 0) e = (int)j;
        base_buf b = BASE_BUF_INIT;
        if (e < 0) {
            base_buf_puts(&b, "HTTP header ");
            go_quote(&b, kp, k->n);
            base_buf_puts(&b, " can not be configured");
            return set_err(err, errlen, BASE_E_PARSE, &b);
        }
        const char *const *vals = EXTRA_HEADERS[e].values;
        if (!vals[0]) continue;
        int ok = 0;
        for (size_t j = 0; vals[j]; j++) ok |= v->n == strlen(vals[j]) && strcmp(vp, vals[j]) == 0;
        if (ok) continue;
        base_buf_printf(&b, "invalid value for %s. Expected one of: [", EXTRA_HEADERS[e].name);
        for (size_t j = 0; vals[j]; j++) {
            if (j) base_buf_putc(&b, ' ');
            go_quote(&b, vals[j], strlen(vals[j]));
        }
        base_buf_puts(&b, "], but got: ");
        go_quote(&b, vp, v->n);
        return set_err(err, errlen, BASE_E_PARSE, &b);
    }
    return 0;
}

void http_webcfg_free(http_webcfg *c) {
    if (!c) return;
    free(c->cert_file);
    free(c->key_file);
    free(c->client_ca_file);
    free(c->client_auth_type);
    free(c->cipher_suites);
    free(c->curves);
    for (size_t i = 0; i < c->n_headers; i++) {
        free(c->headers[i].key);
        free(c->headers[i].value);
    }
    free(c->headers);
    for (size_t i = 0; i < c->n_users; i++) {
        free(c->users[i].key);
        free(c->users[i].value);
    }
    free(c->users);
    free(c->cert_pem);
    if (c->key_pem) gnutls_memset(c->key_pem, 0, c->key_pem_len);
    free(c->key_pem);
    free(c->ca_pem);
    free(c);
}

/* Moves the decoded pairs into NUL-terminated http_webcfg_kv. */
static int move_kvs(ymap *in, http_webcfg_kv **ret, size_t *ret_n) {
    if (!in->n) return 0;
    http_webcfg_kv *out = calloc(in->n, sizeof *out);
    if (!out) return BASE_E_NOMEM;
    int rc = 0;
    for (size_t i = 0; i < in->n; i++) {
        ykv *kv = &in->kv[i];
        out[i].key = kv->k.p ? kv->k.p : strdup("");
        out[i].key_len = kv->k.n;
        out[i].value = kv->v.p ? kv->v.p : strdup("");
        out[i].value_len = kv->v.n;
        kv->k.p = kv->v.p = NULL;
        if (!out[i].key || !out[i].value) rc = BASE_E_NOMEM;
    }
    *ret = out;
    *ret_n = in->n;
    return rc;
}

static char *path_field(const ystr *s, const char *cfgpath, int *nomem) {
    if (!s->p || s->n == 0) return NULL;
    char *p = join_dir(cfgpath, s->p);
    if (!p) *nomem = 1;
    return p;
}

int http_webcfg_parse(const char *data, size_t len, const char *path, http_webcfg **ret, char *err,
                      size_t errlen) {
    if (len > HTTP_WEBCFG_MAX_FILE)
        return base_errf(err, errlen, BASE_E_LIMIT, "web config larger than %u bytes", HTTP_WEBCFG_MAX_FILE);
    ydoc doc;
    memset(&doc, 0, sizeof doc);
    int rc = ydoc_parse(&doc, data, len, err, errlen);
    if (rc) {
        ydoc_free(&doc);
        return rc;
    }
    raw_cfg raw;
    memset(&raw, 0, sizeof raw);
    raw.tls.minv = HTTP_TLS12;
    raw.tls.maxv = HTTP_TLS13;
    raw.tls.prefer = 1;
    raw.http.http2 = 1;
    ydec d;
    memset(&d, 0, sizeof d);
    if (doc.root) unmarshal(&d, doc.root, TY_CONFIG, &raw);
    ydoc_free(&doc);
    if (d.failed) {
        rc = set_err(err, errlen, d.code, &d.fatal);
    } else if (d.nterrs) {
        base_buf b = BASE_BUF_INIT;
        base_buf_puts(&b, "yaml: unmarshal errors:");
        base_buf_append(&b, d.terrs.data, d.terrs.len);
        rc = set_err(err, errlen, BASE_E_PARSE, &b);
    }
    base_buf_free(&d.fatal);
    base_buf_free(&d.terrs);
    if (!rc) rc = check_headers(&raw.http, err, errlen);
    if (rc) {
        raw_free(&raw);
        return rc;
    }
    http_webcfg *c = calloc(1, sizeof *c);
    if (!c) {
        raw_free(&raw);
        return base_errf(err, errlen, BASE_E_NOMEM, "out of memory");
    }
    int nomem = 0;
    c->cert_file = path_field(&raw.tls.cert, path, &nomem);
    c->key_file = path_field(&raw.tls.key, path, &nomem);
    c->client_ca_file = path_field(&raw.tls.ca, path, &nomem);
    if (raw.tls.auth.p) {
        c->client_auth_type = raw.tls.auth.p;
        raw.tls.auth.p = NULL;
    }
    c->min_version = raw.tls.minv;
    c->max_version = raw.tls.maxv;
    c->cipher_suites = raw.tls.cs.v;
    c->n_cipher_suites = raw.tls.cs.n;
    c->curves = raw.tls.cv.v;
    c->n_curves = raw.tls.cv.n;
    raw.tls.cs.v = raw.tls.cv.v = NULL;
    c->prefer_server_cipher_suites = raw.tls.prefer;
    c->http2 = raw.http.http2;
    if (move_kvs(&raw.http.hdr, &c->headers, &c->n_headers)) nomem = 1;
    if (move_kvs(&raw.users, &c->users, &c->n_users)) nomem = 1;
    raw_free(&raw);
    if (nomem) {
        http_webcfg_free(c);
        return base_errf(err, errlen, BASE_E_NOMEM, "out of memory");
    }
    *ret = c;
    return 0;
}

/* ---- bcrypt ------------------------------------------------------------- */

static void go_rune(base_buf *b, unsigned char c) {
    unsigned char u[4];
    base_buf_append(b, u, base_utf8_encode(c, u));
}

/* bcrypt's newFromHash, far enough to know the cost and where the salt
 * starts: 0, or BASE_E_PARSE with Go's message. */
static int bcrypt_parse(const char *h, size_t len, int *ret_cost, size_t *ret_salt, char *err,
                        size_t errlen) {
    base_buf b = BASE_BUF_INIT;
    if (len < 59) {
        return base_errf(err, errlen, BASE_E_PARSE,
                         "crypto/bcrypt: hashedSecret too short to be a bcrypted password");
    }
    if (h[0] != '$') {
        base_buf_puts(&b,
                      "crypto/bcrypt: bcrypt hashes must start with '$', but hashedSecret started with '");
        go_rune(&b, (unsigned char)h[0]);
        base_buf_putc(&b, '\'');
        return set_err(err, errlen, BASE_E_PARSE, &b);
    }
    if ((unsigned char)h[1] > '2') {
        base_buf_puts(&b, "crypto/bcrypt: bcrypt algorithm version '");
        go_rune(&b, (unsigned char)h[1]);
        base_buf_puts(&b, "' requested is newer than current version '2'");
        return set_err(err, errlen, BASE_E_PARSE, &b);
    }
    size_t n = h[2] != '$' ? 4 : 3;
    /* strconv.Atoi of two bytes: an optional sign, then digits */
    const char *c = h + n;
    int cost = 0, ok = 1, neg = 0;
    size_t i = 0;
    if (c[0] == '+' || c[0] == '-') {
        neg = c[0] == '-';
        i = 1;
    }
    if (i == 2) ok = 0;
    for (; i < 2; i++) {
        if (!is_digit(c[i]))
            ok = 0;
        else
            cost = cost * 10 + (c[i] - '0');
    }
    if (!ok) {
        base_buf_puts(&b, "strconv.Atoi: parsing ");
        go_quote(&b, c, 2);
        base_buf_puts(&b, ": invalid syntax");
        return set_err(err, errlen, BASE_E_PARSE, &b);
    }
    if (neg) cost = -cost;
    if (cost < 4 || cost > 31)
        return base_errf(err, errlen, BASE_E_PARSE, "crypto/bcrypt: cost %d is outside allowed range (4,31)",
                         cost);
    *ret_cost = cost;
    *ret_salt = n + 3;
    return 0;
}

int http_bcrypt_cost(const char *hash, size_t len, int *ret_cost, char *err, size_t errlen) {
    size_t salt;
    return bcrypt_parse(hash, len, ret_cost, &salt, err, errlen);
}

int http_bcrypt_verify(const char *hash, size_t hlen, const char *pass, size_t plen) {
    int cost;
    size_t salt;
    char e[8];
    if (bcrypt_parse(hash, hlen, &cost, &salt, e, sizeof e) != 0) return 0;
    if (memchr(pass, 0, plen)) return 0; /* crypt() cannot take it */
    char *phrase = malloc(plen + 1);
    struct crypt_data *cd = calloc(1, sizeof *cd);
    if (!phrase || !cd) {
        free(phrase);
        free(cd);
        return BASE_E_NOMEM;
    }
    memcpy(phrase, pass, plen);
    phrase[plen] = '\0';
    char setting[64];
    snprintf(setting, sizeof setting, "$2b$%02d$%.22s", cost, hash + salt);
    const char *out = crypt_rn(phrase, setting, cd, (int)sizeof *cd);
    int match = 0;
    /* "$2b$NN$" + 22 salt + 31 hash characters */
    if (out && out[0] == '$' && strlen(out) == 60) {
        const char *want = hash + salt + 22;
        size_t wl = hlen - salt - 22;
        const char *got = out + 29;
        if (wl == 31) {
            unsigned char diff = 0;
            for (size_t i = 0; i < 31; i++) diff |= (unsigned char)(want[i] ^ got[i]);
            match = diff == 0;
        }
    }
    gnutls_memset(phrase, 0, plen);
    gnutls_memset(cd, 0, sizeof *cd);
    free(phrase);
    free(cd);
    return match;
}

int http_webcfg_check_users(const http_webcfg *c, char *err, size_t errlen) {
    for (size_t i = 0; i < c->n_users; i++) {
        int cost;
        int rc = http_bcrypt_cost(c->users[i].value, c->users[i].value_len, &cost, err, errlen);
        if (rc) return rc;
    }
    return 0;
}

const http_webcfg_kv *http_webcfg_user(const http_webcfg *c, const char *user, size_t len) {
    for (size_t i = 0; i < c->n_users; i++)
        if (c->users[i].key_len == len && memcmp(c->users[i].key, user, len) == 0) return &c->users[i];
    return NULL;
}

/* ---- TLS: tls.X509KeyPair ------------------------------------------------ */

static int b64val(unsigned char c) {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
}

/* base64.StdEncoding.Decode: '\r' and '\n' are skipped, the padding is
 * required, nothing may follow it. out has room for n / 4 * 3 bytes. */
static int go_b64(const char *in, size_t n, unsigned char *out, size_t *ret_n) {
    size_t w = 0, nq = 0, npad = 0;
    int q[4];
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)in[i];
        if (c == '\r' || c == '\n') continue;
        if (npad && c != '=') return -1; /* data after the padding */
        if (c == '=') {
            if (nq < 2) return -1;
            npad++;
            q[nq++] = 0;
        } else {
            int v = b64val(c);
            if (v < 0) return -1;
            q[nq++] = v;
        }
        if (nq == 4) {
            out[w++] = (unsigned char)(q[0] << 2 | q[1] >> 4);
            if (npad < 2) out[w++] = (unsigned char)(q[1] << 4 | q[2] >> 2);
            if (npad < 1) out[w++] = (unsigned char)(q[2] << 6 | q[3]);
            nq = 0;
            if (npad) npad = 3; /* the quantum is complete: only newlines may follow */
        } else if (npad > 2) {
            return -1;
        }
    }
    if (nq != 0) return -1;
    *ret_n = w;
    return 0;
}

/* getLine: the line up to '\n' with trailing " \t\r" trimmed; *rest after it. */
static void get_line(const char *p, const char *end, const char **ret_line_end, const char **rest) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    const char *le = nl ? nl : end;
    *rest = nl ? nl + 1 : end;
    while (le > p && (le[-1] == ' ' || le[-1] == '\t' || le[-1] == '\r')) le--;
    *ret_line_end = le;
}

typedef struct pem_block {
    char type[64];
    unsigned char *der;
    size_t len;
} pem_block;

static const char *find_mem(const char *h, size_t hl, const char *needle) {
    size_t nl = strlen(needle);
    return nl <= hl ? memmem(h, hl, needle, nl) : NULL;
}

/* encoding/pem.Decode: the next block of p[0..end) or 0 when none is left;
 * *next is where to continue. -1: out of memory. */
static int pem_next(const char *p, const char *end, pem_block *blk, const char **next) {
    static const char start[] = "\n-----BEGIN ", pend[] = "\n-----END ";
    const char *rest = p;
    for (;;) {
        size_t left = (size_t)(end - rest);
        if (left >= sizeof start - 2 && memcmp(rest, start + 1, sizeof start - 2) == 0) {
            rest += sizeof start - 2;
        } else {
            const char *s = find_mem(rest, left, start);
            if (!s) return 0;
            rest = s + sizeof start - 1;
        }
        const char *tl_end;
        const char *type = rest;
        get_line(rest, end, &tl_end, &rest);
        if (tl_end - type < 5 || memcmp(tl_end - 5, "-----", 5) != 0) continue;
        size_t typelen = (size_t)(tl_end - 5 - type);
        int headers = 0;
        for (;;) {
            if (rest == end) return 0;
            const char *le, *nx;
            get_line(rest, end, &le, &nx);
            if (!memchr(rest, ':', (size_t)(le - rest))) break;
            headers = 1;
            rest = nx;
        }
        const char *endi, *trailer;
        if (!headers && (size_t)(end - rest) >= sizeof pend - 2 &&
            memcmp(rest, pend + 1, sizeof pend - 2) == 0) {
            endi = rest;
            trailer = rest + sizeof pend - 2;
        } else {
            endi = find_mem(rest, (size_t)(end - rest), pend);
            if (!endi) continue;
            trailer = endi + sizeof pend - 1;
        }
        if ((size_t)(end - trailer) < typelen + 5) continue;
        if (memcmp(trailer, type, typelen) != 0 || memcmp(trailer + typelen, "-----", 5) != 0) continue;
        const char *le, *nx;
        get_line(trailer + typelen + 5, end, &le, &nx);
        if (le != trailer + typelen + 5) continue;
        size_t bl = (size_t)(endi - rest);
        char *b64 = malloc(bl + 1);
        unsigned char *der = malloc(bl / 4 * 3 + 4);
        if (!b64 || !der) {
            free(b64);
            free(der);
            return -1;
        }
        size_t w = 0;
        for (size_t i = 0; i < bl; i++)
            if (rest[i] != ' ' && rest[i] != '\t') b64[w++] = rest[i];
        size_t dl;
        int bad = go_b64(b64, w, der, &dl);
        free(b64);
        if (bad) {
            free(der);
            continue;
        }
        snprintf(blk->type, sizeof blk->type, "%.*s", (int)typelen, type);
        blk->der = der;
        blk->len = dl;
        *next = nx;
        return 1;
    }
}

static int has_suffix(const char *s, const char *suf) {
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && strcmp(s + a - b, suf) == 0;
}

/* The types of skipped blocks, as Go's %v prints a []string: [A B]. */
static void skipped_list(base_buf *b, const base_buf *types) {
    base_buf_putc(b, '[');
    if (types->len) base_buf_append(b, types->data, types->len);
    base_buf_putc(b, ']');
}

/* tls.X509KeyPair's checks on the two PEM inputs (message without the
 * "failed to load X509KeyPair: " prefix). */
static int key_pair_check(const char *cert, size_t cl, const char *key, size_t kl, char *err, size_t errlen) {
    base_buf skipped = BASE_BUF_INIT, msg = BASE_BUF_INIT;
    pem_block first = {{0}, NULL, 0}, keyblk = {{0}, NULL, 0}, blk;
    size_t nskipped = 0, ncerts = 0;
    int rc = 0, lastpk = 0;
    const char *p = cert, *end = cert + cl, *next;
    int r;
    while ((r = pem_next(p, end, &blk, &next)) == 1) {
        p = next;
        if (strcmp(blk.type, "CERTIFICATE") == 0) {
            if (!ncerts++)
                first = blk;
            else
                free(blk.der);
        } else {
            lastpk = has_suffix(blk.type, "PRIVATE KEY");
            if (nskipped++) base_buf_putc(&skipped, ' ');
            base_buf_puts(&skipped, blk.type);
            free(blk.der);
        }
    }
    if (r < 0) {
        rc = base_errf(err, errlen, BASE_E_NOMEM, "out of memory");
        goto out;
    }
    if (!ncerts) {
        if (!nskipped) {
            base_buf_puts(&msg, "tls: failed to find any PEM data in certificate input");
        } else if (nskipped == 1 && lastpk) {
            base_buf_puts(&msg,
                          "tls: failed to find certificate PEM data in certificate input, but did find a "
                          "private key; PEM inputs may have been switched");
        } else {
            base_buf_puts(&msg, "tls: failed to find \"CERTIFICATE\" PEM block in certificate input after "
                                "skipping PEM blocks of the following types: ");
            skipped_list(&msg, &skipped);
        }
        rc = set_err(err, errlen, BASE_E_PARSE, &msg);
        goto out;
    }
    base_buf_reset(&skipped);
    nskipped = 0;
    int lastcert = 0;
    p = key;
    end = key + kl;
    for (;;) {
        r = pem_next(p, end, &blk, &next);
        if (r < 0) {
            rc = base_errf(err, errlen, BASE_E_NOMEM, "out of memory");
            goto out;
        }
        if (r == 0) {
            if (!nskipped) {
                base_buf_puts(&msg, "tls: failed to find any PEM data in key input");
            } else if (nskipped == 1 && lastcert) {
                base_buf_puts(&msg,
                              "tls: found a certificate rather than a key in the PEM for the private key");
            } else {
                base_buf_puts(&msg,
                              "tls: failed to find PEM block with type ending in \"PRIVATE KEY\" in key "
                              "input after skipping PEM blocks of the following types: ");
                skipped_list(&msg, &skipped);
            }
            rc = set_err(err, errlen, BASE_E_PARSE, &msg);
            goto out;
        }
        p = next;
        if (strcmp(blk.type, "PRIVATE KEY") == 0 || has_suffix(blk.type, " PRIVATE KEY")) {
            keyblk = blk;
            break;
        }
        lastcert = strcmp(blk.type, "CERTIFICATE") == 0;
        if (nskipped++) base_buf_putc(&skipped, ' ');
        base_buf_puts(&skipped, blk.type);
        free(blk.der);
    }
    gnutls_x509_crt_t crt = NULL;
    gnutls_x509_privkey_t pk = NULL;
    gnutls_datum_t cd = {first.der, (unsigned)first.len}, kd = {keyblk.der, (unsigned)keyblk.len};
    if (gnutls_x509_crt_init(&crt) < 0 || gnutls_x509_privkey_init(&pk) < 0) {
        rc = base_errf(err, errlen, BASE_E_NOMEM, "out of memory");
    } else if (gnutls_x509_crt_import(crt, &cd, GNUTLS_X509_FMT_DER) < 0) {
        rc = base_errf(err, errlen, BASE_E_PARSE, "x509: malformed certificate");
    } else if (gnutls_x509_privkey_import(pk, &kd, GNUTLS_X509_FMT_DER) < 0 &&
               gnutls_x509_privkey_import_pkcs8(pk, &kd, GNUTLS_X509_FMT_DER, NULL, GNUTLS_PKCS_PLAIN) < 0) {
        rc = base_errf(err, errlen, BASE_E_PARSE, "tls: failed to parse private key");
    } else {
        int ca = gnutls_x509_crt_get_pk_algorithm(crt, NULL);
        int ka = gnutls_x509_privkey_get_pk_algorithm2(pk, NULL);
        unsigned char id1[64], id2[64];
        size_t l1 = sizeof id1, l2 = sizeof id2;
        if (ca != GNUTLS_PK_RSA && ca != GNUTLS_PK_ECDSA && ca != GNUTLS_PK_EDDSA_ED25519) {
            rc = base_errf(err, errlen, BASE_E_PARSE, "tls: unknown public key algorithm");
        } else if (ca != ka) {
            rc = base_errf(err, errlen, BASE_E_PARSE, "tls: private key type does not match public key type");
        } else if (gnutls_x509_crt_get_key_id(crt, GNUTLS_KEYID_USE_SHA256, id1, &l1) < 0 ||
                   gnutls_x509_privkey_get_key_id(pk, GNUTLS_KEYID_USE_SHA256, id2, &l2) < 0 || l1 != l2 ||
                   memcmp(id1, id2, l1) != 0) {
            rc = base_errf(err, errlen, BASE_E_PARSE, "tls: private key does not match public key");
        }
    }
    if (crt) gnutls_x509_crt_deinit(crt);
    if (pk) gnutls_x509_privkey_deinit(pk);
out:
    free(first.der);
    if (keyblk.der) gnutls_memset(keyblk.der, 0, keyblk.len);
    free(keyblk.der);
    base_buf_free(&skipped);
    base_buf_free(&msg);
    return rc;
}

int http_webcfg_tls_enabled(const http_webcfg *c) {
    return c->cert_file || c->key_file || (c->client_auth_type && *c->client_auth_type) || c->client_ca_file;
}

int http_webcfg_check_tls(http_webcfg *c, char *err, size_t errlen) {
    if (!http_webcfg_tls_enabled(c)) return 0;
    if (!c->cert_file) return base_errf(err, errlen, BASE_E_PARSE, "missing cert_file");
    if (!c->key_file) return base_errf(err, errlen, BASE_E_PARSE, "missing key_file");
    char e[1024];
    char *cert = NULL, *key = NULL, *ca = NULL;
    size_t cl = 0, kl = 0, al = 0;
    int rc = http_webcfg_read_file(c->cert_file, HTTP_WEBCFG_MAX_PEM, &cert, &cl, e, sizeof e);
    if (!rc) rc = http_webcfg_read_file(c->key_file, HTTP_WEBCFG_MAX_PEM, &key, &kl, e, sizeof e);
    if (!rc) rc = key_pair_check(cert, cl, key, kl, e, sizeof e);
    if (rc) {
        free(cert);
        if (key) gnutls_memset(key, 0, kl);
        free(key);
        return base_errf(err, errlen, rc, "failed to load X509KeyPair: %s", e);
    }
    if (c->client_ca_file)
        rc = http_webcfg_read_file(c->client_ca_file, HTTP_WEBCFG_MAX_PEM, &ca, &al, err, errlen);
    http_client_auth auth = HTTP_CLIENT_AUTH_NONE;
    const char *a = c->client_auth_type ? c->client_auth_type : "";
    if (rc) {
        /* the CA file's error, as os.ReadFile gave it */
    } else if (!*a || strcmp(a, "NoClientCert") == 0) {
        auth = HTTP_CLIENT_AUTH_NONE;
    } else if (strcmp(a, "RequestClientCert") == 0) {
        auth = HTTP_CLIENT_AUTH_REQUEST;
    } else if (strcmp(a, "RequireAnyClientCert") == 0 || strcmp(a, "RequireClientCert") == 0) {
        auth = HTTP_CLIENT_AUTH_REQUIRE_ANY;
    } else if (strcmp(a, "VerifyClientCertIfGiven") == 0) {
        auth = HTTP_CLIENT_AUTH_VERIFY_IF_GIVEN;
    } else if (strcmp(a, "RequireAndVerifyClientCert") == 0) {
        auth = HTTP_CLIENT_AUTH_REQUIRE_VERIFY;
    } else {
        rc = base_errf(err, errlen, BASE_E_PARSE, "Invalid ClientAuth: %s", a);
    }
    if (!rc && ca && auth == HTTP_CLIENT_AUTH_NONE)
        rc = base_errf(err, errlen, BASE_E_PARSE,
                       "Client CA's have been configured without a Client Auth Policy");
    if (rc) {
        free(cert);
        gnutls_memset(key, 0, kl);
        free(key);
        free(ca);
        return rc;
    }
    free(c->cert_pem);
    free(c->key_pem);
    free(c->ca_pem);
    c->cert_pem = cert;
    c->cert_pem_len = cl;
    c->key_pem = key;
    c->key_pem_len = kl;
    c->ca_pem = ca;
    c->ca_pem_len = al;
    c->client_auth = auth;
    return 0;
}

int http_webcfg_parse_file(const char *path, http_webcfg **ret, char *err, size_t errlen) {
    char *data;
    size_t len;
    int rc = http_webcfg_read_file(path, HTTP_WEBCFG_MAX_FILE, &data, &len, err, errlen);
    if (rc) return rc;
    rc = http_webcfg_parse(data, len, path, ret, err, errlen);
    free(data);
    return rc;
}

int http_webcfg_load(const char *path, http_webcfg **ret, char *err, size_t errlen) {
    http_webcfg *c = NULL;
    int rc = http_webcfg_parse_file(path, &c, err, errlen);
    if (rc) return rc;
    rc = http_webcfg_check_users(c, err, errlen);
    if (!rc) rc = http_webcfg_check_tls(c, err, errlen);
    if (rc) {
        http_webcfg_free(c);
        return rc;
    }
    *ret = c;
    return 0;
}

/* ---- basic auth ------------------------------------------------------------ */

int http_basic_auth_parse(const char *header, size_t len, char **ret_decoded, size_t *ret_len,
                          size_t *ret_colon) {
    static const char prefix[] = "Basic ";
    if (!header || len < sizeof prefix - 1 || strncasecmp(header, prefix, sizeof prefix - 1) != 0) return 0;
    const char *b = header + sizeof prefix - 1;
    size_t bl = len - (sizeof prefix - 1);
    char *out = malloc(bl / 4 * 3 + 4);
    if (!out) return BASE_E_NOMEM;
    size_t n;
    if (go_b64(b, bl, (unsigned char *)out, &n) != 0) {
        free(out);
        return 0;
    }
    char *colon = memchr(out, ':', n);
    if (!colon) {
        gnutls_memset(out, 0, n);
        free(out);
        return 0;
    }
    out[n] = '\0';
    *ret_decoded = out;
    *ret_len = n;
    *ret_colon = (size_t)(colon - out);
    return 1;
}

/* ---- GnuTLS priorities --------------------------------------------------- */

static void prio_add(base_buf *b, const char *item) {
    /* once each: "+AES-128-GCM" may come from several suites */
    char pat[64];
    snprintf(pat, sizeof pat, ":+%s", item);
    size_t pl = strlen(pat);
    if (b->len >= pl) {
        for (const char *s = b->data; (s = strstr(s, pat)) != NULL; s += pl)
            if (s[pl] == ':' || s[pl] == 0) return;
    }
    base_buf_puts(b, pat);
}

int http_webcfg_priority(const http_webcfg *c, char *out, size_t outlen) {
    unsigned minv = c->min_version ? c->min_version : HTTP_TLS10;
    unsigned maxv = c->max_version ? c->max_version : HTTP_TLS13;
    if (minv > maxv) return BASE_E_RANGE;
    base_buf b = BASE_BUF_INIT;
    base_buf_puts(&b, "NORMAL:-VERS-ALL");
    static const char *const VERS[] = {"VERS-TLS1.0", "VERS-TLS1.1", "VERS-TLS1.2", "VERS-TLS1.3"};
    for (unsigned v = maxv; v >= minv; v--) prio_add(&b, VERS[v - HTTP_TLS10]);
    if (c->n_cipher_suites) {
        base_buf_puts(&b, ":-CIPHER-ALL:-MAC-ALL:-KX-ALL");
        for (size_t i = 0; i < c->n_cipher_suites; i++) {
            for (size_t j = 0; j < NELEM(GO_CIPHERS); j++) {
                if (GO_CIPHERS[j].id != c->cipher_suites[i] || !GO_CIPHERS[j].kx) continue;
                prio_add(&b, GO_CIPHERS[j].kx);
                prio_add(&b, GO_CIPHERS[j].cipher);
                prio_add(&b, GO_CIPHERS[j].mac);
            }
        }
        if (maxv >= HTTP_TLS13) {
            /* Go does not let cipher_suites restrict TLS 1.3: all three stay */
            prio_add(&b, "AES-128-GCM");
            prio_add(&b, "AES-256-GCM");
            prio_add(&b, "CHACHA20-POLY1305");
            prio_add(&b, "AEAD");
            prio_add(&b, "ECDHE-RSA");
            prio_add(&b, "ECDHE-ECDSA");
        }
    }
    if (c->n_curves) {
        base_buf_puts(&b, ":-GROUP-ALL");
        for (size_t i = 0; i < c->n_curves; i++)
            for (size_t j = 0; j < NELEM(GO_CURVES); j++)
                if (GO_CURVES[j].id == c->curves[i]) prio_add(&b, GO_CURVES[j].group);
    }
    int rc = 0;
    if (base_buf_err(&b))
        rc = BASE_E_NOMEM;
    else if (b.len + 1 > outlen)
        rc = BASE_E_LIMIT;
    else
        memcpy(out, b.data, b.len + 1);
    base_buf_free(&b);
    return rc;
}
