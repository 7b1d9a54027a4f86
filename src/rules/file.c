/* file.c -- a rule file read and checked as Prometheus 2.42 does it:
 * rulefmt.ParseFile (yaml.v3 Decode with KnownFields into RuleGroups,
 * yaml.Unmarshal into ruleGroups for the groups' positions, then
 * RuleGroups.Validate).
 *
 * Design. The text becomes the config module's YAML tree (config/yaml.h:
 * bounded, with lines and columns). Two decoders walk it, as 2.42's two
 * calls do: pass A is the strict one and builds the groups; pass B only
 * reads the top level and the position of every `groups` entry (a null
 * entry is dropped by pass A but not by pass B, so positions can shift
 * exactly as 2.42's do). Each pass follows yaml.v3's decoder: duplicate
 * mapping keys, unknown fields, values of the wrong kind are collected as
 * "line N: ..." under one "yaml: unmarshal errors:" message; a bad
 * duration or an explicit tag that does not fit ends the pass with that
 * error alone; a null entry of a list of structs is dropped silently;
 * `<<` merges keep explicit keys first. record, alert and expr are
 * yaml.Node fields in 2.42: any node is accepted and its text (a scalar's
 * raw text, "" for a list or mapping) is what Validate sees. Validate then
 * checks each group and rule in 2.42's order with its words and "L:C:"
 * positions. Every message starts with "NAME: ", as ParseFile wraps them.
 *
 * Templates in an alert's labels and annotations are parsed as
 * testTemplateParsing does (template.h).
 *
 * Known differences from 2.42: errors
 * about labels come in file order (2.42 walks a Go map: random order); an
 * alias (*x) stands for its anchor's node, so a yaml.Node field or a
 * groups entry written as an alias reports the anchor's position and text
 * (2.42 reports the alias's), and an alias inside its own anchor is
 * refused when the text is read (2.42 only when it decodes that part);
 * more than RULES__MAX_ERRORS errors are cut.
 *
 * Ownership: while decoding, strings point into the YAML tree; the
 * rules_file built at the end owns copies of everything.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/str.h"
#include "base/time.h"
#include "base/utf8.h"
#include "config/yaml.h"
#include "labels/labels.h"
#include "promql/promql.h"
#include "rules/rules.h"
#include "rules/rules_int.h"
#include "rules/template.h"

#define RULES__MAX_ERRORS     1000 /* messages kept per file */
#define RULES__MAX_TERRORS    1000 /* "line N:" entries kept per unmarshal error */
#define RULES__MAX_MERGE_NEST 64   /* `<<` inside merged mappings */

/* ---- errors ------------------------------------------------------------- */

typedef struct elist {
    rules_error *e;
    size_t n, cap;
    size_t dropped;
    int nomem;
} elist;

static void elist_free(elist *l) {
    for (size_t i = 0; i < l->n; i++) free(l->e[i].msg);
    free(l->e);
    memset(l, 0, sizeof *l);
}

/* Appends "NAME: " + text (text's bytes as they are: messages may carry
 * any byte of a rule's text). */
static void elist_push(elist *l, char *m, int line) {
    if (l->n == l->cap) {
        size_t nc = l->cap ? l->cap * 2 : 8;
        rules_error *ne = realloc(l->e, nc * sizeof *ne);
        if (!ne) {
            free(m);
            l->nomem = 1;
            return;
        }
        l->e = ne;
        l->cap = nc;
    }
    l->e[l->n++] = (rules_error){m, line};
}

static void elist_add(elist *l, const char *name, int line, const char *text, size_t len) {
    if (l->n >= RULES__MAX_ERRORS) {
        l->dropped++;
        return;
    }
    size_t nl = strlen(name);
    char *m = malloc(nl + 2 + len + 1);
    if (!m) {
        l->nomem = 1;
        return;
    }
    memcpy(m, name, nl);
    memcpy(m + nl, ": ", 2);
    if (len) memcpy(m + nl + 2, text, len);
    m[nl + 2 + len] = 0;
    elist_push(l, m, line);
}

static void elist_addf(elist *l, const char *name, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void elist_addf(elist *l, const char *name, int line, const char *fmt, ...) {
    base_buf b = BASE_BUF_INIT;
    va_list ap;
    va_start(ap, fmt);
    base_buf_vprintf(&b, fmt, ap);
    va_end(ap);
    if (base_buf_err(&b))
        l->nomem = 1;
    else
        elist_add(l, name, line, b.data ? b.data : "", b.len);
    base_buf_free(&b);
}

/* Go's %q of s[0..n). */
static void quote(base_buf *b, const char *s, size_t n) {
    labels_quote(b, (base_str){s, n});
}

/* ---- the decoded file, before it is checked ------------------------------ */

typedef struct kvs {
    rules_kv *v; /* name and value malloc'd */
    size_t n, cap;
    int set; /* the field was present (and not null) */
} kvs;

typedef struct rawrule {
    const cfg_ynode *record, *alert, *expr; /* NULL: absent */
    int64_t for_ms, kff_ms;
    kvs labels, annotations;
    int line;
} rawrule;

typedef struct rawgroup {
    char *name;
    size_t name_len;
    int64_t interval_ms, limit;
    rawrule *rules;
    size_t nrules, cap;
    int line;
} rawgroup;

typedef struct rawfile {
    rawgroup *groups;
    size_t ngroups, cap;
    const cfg_ynode **pos; /* pass B: every groups entry */
    size_t npos, cappos;
} rawfile;

static void kvs_free(kvs *k) {
    for (size_t i = 0; i < k->n; i++) {
        free(k->v[i].name);
        free(k->v[i].value);
    }
    free(k->v);
    memset(k, 0, sizeof *k);
}

static void rawfile_free(rawfile *f) {
    for (size_t g = 0; g < f->ngroups; g++) {
        rawgroup *rg = &f->groups[g];
        for (size_t r = 0; r < rg->nrules; r++) {
            kvs_free(&rg->rules[r].labels);
            kvs_free(&rg->rules[r].annotations);
        }
        free(rg->rules);
        free(rg->name);
    }
    free(f->groups);
    free(f->pos);
    memset(f, 0, sizeof *f);
}

/* ---- a set of keys, for merges ----------------------------------------- */

typedef struct keyset {
    base_str *slot; /* open addressing; p == NULL: empty */
    size_t cap, n;
} keyset;

static uint64_t hash(base_str s) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < s.n; i++) h = (h ^ (unsigned char)s.p[i]) * 1099511628211ull;
    return h;
}

/* 1 if s was in the set; else adds it and returns 0 (-1: out of memory). */
static int keyset_add(keyset *ks, base_str s) {
    if (ks->n * 2 >= ks->cap) {
        size_t nc = ks->cap ? ks->cap * 2 : 16;
        base_str *ns = calloc(nc, sizeof *ns);
        if (!ns) return -1;
        for (size_t i = 0; i < ks->cap; i++) {
            if (!ks->slot[i].p) continue;
            size_t j = hash(ks->slot[i]) & (nc - 1);
            while (ns[j].p) j = (j + 1) & (nc - 1);
            ns[j] = ks->slot[i];
        }
        free(ks->slot);
        ks->slot = ns;
        ks->cap = nc;
    }
    size_t j = hash(s) & (ks->cap - 1);
    while (ks->slot[j].p) {
        if (base_str_eq(ks->slot[j], s)) return 1;
        j = (j + 1) & (ks->cap - 1);
    }
    ks->slot[j] = s.p ? s : (base_str){"", 0};
    ks->n++;
    return 0;
}

/* ---- the decoder ---------------------------------------------------------- */

typedef struct dec {
    cfg_ydoc *doc;
    int strict; /* pass A: KnownFields */
    int fatal;  /* a fatal error ended the pass (in fmsg) */
    int nomem;  /* out of memory */
    base_buf fmsg;
    int fline;
    base_buf terrs; /* "\n  line N: ..." */
    size_t nterrs;
    int tline;
    char **owned; /* decoded !!binary texts, freed with the pass */
    size_t nowned, capowned;
} dec;

/* Keeps p until the pass ends; 0, or -1 (p freed) when out of memory. */
static int own(dec *d, char *p) {
    if (d->nowned == d->capowned) {
        size_t nc = d->capowned ? d->capowned * 2 : 8;
        char **no = realloc(d->owned, nc * sizeof *no);
        if (!no) {
            free(p);
            d->nomem = 1;
            return -1;
        }
        d->owned = no;
        d->capowned = nc;
    }
    d->owned[d->nowned++] = p;
    return 0;
}

static void fatalf(dec *d, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void fatalf(dec *d, int line, const char *fmt, ...) {
    if (d->fatal) return;
    d->fatal = 1;
    d->fline = line;
    va_list ap;
    va_start(ap, fmt);
    base_buf_vprintf(&d->fmsg, fmt, ap);
    va_end(ap);
}

static int stop(const dec *d) {
    return d->fatal || d->nomem;
}

/* Counts a node visit: aliases can make a small file a huge tree. */
static int visit(dec *d, const cfg_ynode *n) {
    if (stop(d)) return -1;
    if (++d->doc->visits > CFG_YAML_MAX_VISITS) {
        fatalf(d, n->line, "yaml: document contains excessive aliasing");
        return -1;
    }
    return 0;
}

static void terrorf(dec *d, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void terrorf(dec *d, int line, const char *fmt, ...) {
    if (d->nterrs++ == 0) d->tline = line;
    if (d->nterrs > RULES__MAX_TERRORS) return;
    base_buf_printf(&d->terrs, "\n  line %d: ", line);
    va_list ap;
    va_start(ap, fmt);
    base_buf_vprintf(&d->terrs, fmt, ap);
    va_end(ap);
}

/* yaml.v3's "cannot unmarshal !!str `abc` into int". */
static void terror(dec *d, const cfg_ynode *n, const char *type) {
    char tag[96];
    rules__node_tag(n, tag, sizeof tag);
    if (strcmp(tag, "!!seq") == 0 || strcmp(tag, "!!map") == 0) {
        terrorf(d, n->line, "cannot unmarshal %s into %s", tag, type);
        return;
    }
    const char *v = n->kind == CFG_Y_SCALAR ? n->val : "";
    size_t len = n->kind == CFG_Y_SCALAR ? n->len : 0;
    if (len > 10)
        terrorf(d, n->line, "cannot unmarshal %s `%.*s...` into %s", tag, 7, v, type);
    else
        terrorf(d, n->line, "cannot unmarshal %s `%.*s` into %s", tag, (int)len, v, type);
}

/* A scalar's resolution, with v3's fatal errors. -1: the pass ended. */
static int resolve(dec *d, const cfg_ynode *n, rules__scalar *r) {
    rules__resolve(n, r);
    if (r->kind == RULES__V_BAD) {
        fatalf(d, n->line, "yaml: cannot decode %s `%s` as a %s", r->rtag, n->val, r->tag);
        return -1;
    }
    return 0;
}

static int is_null(const cfg_ynode *n) {
    if (n->kind != CFG_Y_SCALAR) return 0;
    rules__scalar r;
    rules__resolve(n, &r);
    return r.kind == RULES__V_NULL;
}

static size_t dup_keys(dec *d, const cfg_ynode *n);

/* A scalar decoded into a Go string: 0 and the text (valid until the pass
 * ends), 1 for null (the string stays ""), -1 when it failed (a type
 * error was recorded, or the pass ended). */
static int get_string(dec *d, const cfg_ynode *n, const char **ret, size_t *ret_len) {
    if (visit(d, n)) return -1;
    if (n->kind != CFG_Y_SCALAR) {
        /* decoder.mapping checks the keys before it finds the type wrong */
        if (n->kind == CFG_Y_MAP && dup_keys(d, n)) return -1;
        terror(d, n, "string");
        return -1;
    }
    rules__scalar r;
    if (resolve(d, n, &r)) return -1;
    if (r.kind == RULES__V_NULL) return 1;
    if (r.kind == RULES__V_BINARY) {
        char *out = malloc(n->len + 1);
        if (!out) {
            d->nomem = 1;
            return -1;
        }
        long k = rules__base64(n->val, n->len, out);
        if (k < 0) {
            free(out);
            fatalf(d, n->line, "yaml: !!binary value contains invalid base64 data");
            return -1;
        }
        out[k] = 0;
        if (own(d, out)) return -1;
        *ret = out;
        *ret_len = (size_t)k;
        return 0;
    }
    *ret = n->val;
    *ret_len = n->len;
    return 0;
}

static char *dup_mem(dec *d, const char *s, size_t n) {
    char *o = malloc(n + 1);
    if (!o) {
        d->nomem = 1;
        return NULL;
    }
    if (n) memcpy(o, s, n);
    o[n] = 0;
    return o;
}

/* ---- mappings ------------------------------------------------------------- */

/* A key as the repeated-key check compares it: kind and text. */
typedef struct keyref {
    const cfg_ynode *k;
    size_t idx; /* position among the mapping's keys */
} keyref;

static base_str key_text(const cfg_ynode *k) {
    return k->kind == CFG_Y_SCALAR ? (base_str){k->val, k->len} : (base_str){"", 0};
}

static int keyref_cmp(const void *pa, const void *pb) {
    const keyref *a = pa, *b = pb;
    if (a->k->kind != b->k->kind) return a->k->kind < b->k->kind ? -1 : 1;
    base_str x = key_text(a->k), y = key_text(b->k);
    size_t n = x.n < y.n ? x.n : y.n;
    int c = n ? memcmp(x.p, y.p, n) : 0;
    if (c) return c;
    if (x.n != y.n) return x.n < y.n ? -1 : 1;
    return a->idx < b->idx ? -1 : a->idx > b->idx;
}

/* yaml.v3's decoder.mapping check: every pair of equal keys (same kind,
 * same text) is an error, in v3's order (by the first key, then the
 * second). Sorting keeps it O(n log n) where v3 is quadratic; it stops
 * once RULES__MAX_TERRORS errors are recorded. Returns how many it found. */
static size_t dup_keys(dec *d, const cfg_ynode *n) {
    size_t nk = n->n / 2, found = 0;
    if (nk < 2) return 0;
    keyref *ks = malloc(nk * sizeof *ks);
    size_t *next = malloc(nk * sizeof *next); /* by key index: the next equal key's index, or nk */
    if (!ks || !next) {
        free(ks);
        free(next);
        d->nomem = 1;
        return 1;
    }
    for (size_t i = 0; i < nk; i++) ks[i] = (keyref){n->kids[2 * i], i};
    qsort(ks, nk, sizeof *ks, keyref_cmp);
    for (size_t i = 0; i < nk; i++) {
        int same = i + 1 < nk && ks[i].k->kind == ks[i + 1].k->kind &&
                   base_str_eq(key_text(ks[i].k), key_text(ks[i + 1].k));
        next[ks[i].idx] = same ? ks[i + 1].idx : nk;
    }
    for (size_t i = 0; i < nk && d->nterrs < RULES__MAX_TERRORS; i++) {
        const cfg_ynode *a = n->kids[2 * i];
        for (size_t j = next[i]; j < nk && d->nterrs < RULES__MAX_TERRORS; j = next[j]) {
            const cfg_ynode *b = n->kids[2 * j];
            base_buf q = BASE_BUF_INIT;
            base_str t = key_text(b);
            quote(&q, t.p, t.n);
            terrorf(d, b->line, "mapping key %s already defined at line %d", q.data ? q.data : "\"\"",
                    a->line);
            base_buf_free(&q);
            found++;
        }
    }
    free(ks);
    free(next);
    return found;
}

/* Called for each key of a mapping that the walk keeps: the key's text and
 * node, and its value. */
typedef void pair_fn(dec *d, const char *key, size_t klen, const cfg_ynode *k, const cfg_ynode *v, void *ctx);

/* yaml.v3's mappingStruct / mapping-into-a-map walk over mapping n: the
 * repeated-key check, each key decoded as a string (null keys skipped,
 * others of the wrong kind a type error), keys already given by an outer
 * mapping skipped when merging (seen), then the `<<` mapping(s). */
static void walk_map(dec *d, const cfg_ynode *n, pair_fn *fn, void *ctx, keyset *seen, int nest) {
    if (visit(d, n)) return;
    if (dup_keys(d, n)) return;
    const cfg_ynode *merge = NULL;
    for (size_t i = 0; i + 1 < n->n && !stop(d); i += 2) {
        const cfg_ynode *k = n->kids[i], *v = n->kids[i + 1];
        if (rules__is_merge(k)) {
            merge = v;
            continue;
        }
        const char *key;
        size_t klen;
        if (get_string(d, k, &key, &klen) != 0) continue;
        if (seen) {
            int r = keyset_add(seen, (base_str){key, klen});
            if (r < 0) d->nomem = 1;
            if (r != 0) continue;
        }
        fn(d, key, klen, k, v, ctx);
    }
    if (!merge || stop(d)) return;
    if (nest >= RULES__MAX_MERGE_NEST) {
        fatalf(d, merge->line, "yaml: merge keys nested more than %d deep", RULES__MAX_MERGE_NEST);
        return;
    }
    if (++d->doc->merges > CFG_YAML_MAX_MERGES) {
        fatalf(d, merge->line, "yaml: document contains excessive aliasing");
        return;
    }
    keyset own_seen = {0};
    keyset *s = seen;
    if (!s) {
        /* decoder.merge: the keys of the mapping holding `<<` come first */
        s = &own_seen;
        for (size_t i = 0; i + 1 < n->n; i += 2) {
            const cfg_ynode *k = n->kids[i];
            if (k->kind != CFG_Y_SCALAR || rules__is_merge(k) || is_null(k)) continue;
            if (keyset_add(s, (base_str){k->val, k->len}) < 0) d->nomem = 1;
        }
    }
    if (merge->kind == CFG_Y_MAP) {
        walk_map(d, merge, fn, ctx, s, nest + 1);
    } else if (merge->kind == CFG_Y_SEQ) {
        for (size_t i = 0; i < merge->n && !stop(d); i++) {
            if (merge->kids[i]->kind != CFG_Y_MAP) {
                fatalf(d, merge->kids[i]->line,
                       "yaml: map merge requires map or sequence of maps as the value");
                break;
            }
            walk_map(d, merge->kids[i], fn, ctx, s, nest + 1);
        }
    } else {
        fatalf(d, merge->line, "yaml: map merge requires map or sequence of maps as the value");
    }
    free(own_seen.slot);
}

/* A mapping where the target type wants a mapping: 1 to walk it, 0 when
 * it is null (the zero value), -1 when it is of the wrong kind (recorded). */
static int want_map(dec *d, const cfg_ynode *n, const char *type) {
    if (n->kind == CFG_Y_MAP) return 1;
    if (visit(d, n)) return -1;
    if (n->kind == CFG_Y_SCALAR) {
        rules__scalar r;
        if (resolve(d, n, &r)) return -1;
        if (r.kind == RULES__V_NULL) return 0;
    }
    terror(d, n, type);
    return -1;
}

/* Same for a list. */
static int want_seq(dec *d, const cfg_ynode *n, const char *type) {
    if (n->kind == CFG_Y_SEQ) return visit(d, n) ? -1 : 1;
    if (n->kind == CFG_Y_MAP) {
        if (visit(d, n)) return -1;
        if (dup_keys(d, n)) return -1;
        terror(d, n, type);
        return -1;
    }
    return want_map(d, n, type) == 0 ? 0 : -1;
}

/* ---- fields ---------------------------------------------------------------- */

static int key_is(const char *key, size_t klen, const char *name) {
    return strlen(name) == klen && memcmp(key, name, klen) == 0;
}

static void unknown_field(dec *d, const char *key, size_t klen, const cfg_ynode *k, const char *type) {
    if (d->strict) terrorf(d, k->line, "field %.*s not found in type %s", (int)klen, key, type);
}

/* model.Duration: decoded as a string, then model.ParseDuration (its
 * errors end the pass). A null leaves 0. */
static void get_duration(dec *d, const cfg_ynode *v, int64_t *out) {
    if (v->kind == CFG_Y_SCALAR && is_null(v)) {
        if (!visit(d, v)) *out = 0;
        return;
    }
    const char *s;
    size_t n;
    if (get_string(d, v, &s, &n) != 0) return;
    char *z = dup_mem(d, s, n);
    if (!z) return;
    int64_t ms = 0;
    int rc = n == 0 ? BASE_E_PARSE : base_parse_duration_ms(z, &ms);
    if (n == 0) {
        fatalf(d, v->line, "empty duration string");
    } else if (rc == BASE_E_RANGE) {
        fatalf(d, v->line, "duration out of range");
    } else if (rc != 0 || strlen(z) != n) {
        base_buf q = BASE_BUF_INIT;
        quote(&q, z, n);
        fatalf(d, v->line, "not a valid duration string: %s", q.data ? q.data : "\"\"");
        base_buf_free(&q);
    } else {
        *out = ms;
    }
    free(z);
}

/* Go int: integers that fit, floats up to 2^63 (converted as amd64 does). */
static void get_int(dec *d, const cfg_ynode *v, int64_t *out) {
    if (visit(d, v)) return;
    if (v->kind != CFG_Y_SCALAR) {
        if (v->kind == CFG_Y_MAP && dup_keys(d, v)) return;
        terror(d, v, "int");
        return;
    }
    rules__scalar r;
    if (resolve(d, v, &r)) return;
    switch (r.kind) {
    case RULES__V_NULL: *out = 0; return;
    case RULES__V_INT:
        if (!r.is_u) {
            *out = r.i;
            return;
        }
        break;
    case RULES__V_FLOAT:
        if (r.f <= 9223372036854775808.0) {
            /* cvttsd2si: out of range (below -2^63, or 2^63) gives INT64_MIN */
            *out = r.f >= -9223372036854775808.0 && r.f < 9223372036854775808.0 ? (int64_t)r.f : INT64_MIN;
            return;
        }
        break;
    default: break;
    }
    terror(d, v, "int");
}

/* map[string]string: entries in file order (merged ones after). */
static void kv_pair(dec *d, const char *key, size_t klen, const cfg_ynode *k, const cfg_ynode *v, void *ctx) {
    (void)k;
    kvs *m = ctx;
    const char *s = "";
    size_t n = 0;
    int rc = get_string(d, v, &s, &n);
    if (rc < 0) return;
    if (m->n == m->cap) {
        size_t nc = m->cap ? m->cap * 2 : 4;
        rules_kv *nv = realloc(m->v, nc * sizeof *nv);
        if (!nv) {
            d->nomem = 1;
            return;
        }
        m->v = nv;
        m->cap = nc;
    }
    char *kn = dup_mem(d, key, klen), *vn = dup_mem(d, rc == 1 ? "" : s, rc == 1 ? 0 : n);
    if (!kn || !vn) {
        free(kn);
        free(vn);
        return;
    }
    m->v[m->n++] = (rules_kv){kn, vn};
}

static void get_map(dec *d, const cfg_ynode *v, kvs *out) {
    int w = want_map(d, v, "map[string]string");
    if (w <= 0) return;
    out->set = 1;
    walk_map(d, v, kv_pair, out, NULL, 0);
}

static void rule_field(dec *d, const char *key, size_t klen, const cfg_ynode *k, const cfg_ynode *v,
                       void *ctx) {
    rawrule *r = ctx;
    if (key_is(key, klen, "record")) {
        if (!visit(d, v)) r->record = v;
    } else if (key_is(key, klen, "alert")) {
        if (!visit(d, v)) r->alert = v;
    } else if (key_is(key, klen, "expr")) {
        if (!visit(d, v)) r->expr = v;
    } else if (key_is(key, klen, "for")) {
        get_duration(d, v, &r->for_ms);
    } else if (key_is(key, klen, "keep_firing_for")) {
        get_duration(d, v, &r->kff_ms);
    } else if (key_is(key, klen, "labels")) {
        get_map(d, v, &r->labels);
    } else if (key_is(key, klen, "annotations")) {
        get_map(d, v, &r->annotations);
    } else {
        unknown_field(d, key, klen, k, "rulefmt.RuleNode");
    }
}

static void get_rules(dec *d, const cfg_ynode *v, rawgroup *g) {
    if (want_seq(d, v, "[]rulefmt.RuleNode") <= 0) return;
    for (size_t i = 0; i < v->n && !stop(d); i++) {
        const cfg_ynode *e = v->kids[i];
        if (want_map(d, e, "rulefmt.RuleNode") <= 0) continue; /* null: dropped */
        if (g->nrules == g->cap) {
            size_t nc = g->cap ? g->cap * 2 : 8;
            rawrule *nr = realloc(g->rules, nc * sizeof *nr);
            if (!nr) {
                d->nomem = 1;
                return;
            }
            g->rules = nr;
            g->cap = nc;
        }
        rawrule *r = &g->rules[g->nrules++];
        memset(r, 0, sizeof *r);
        r->line = e->line;
        walk_map(d, e, rule_field, r, NULL, 0);
    }
}

static void group_field(dec *d, const char *key, size_t klen, const cfg_ynode *k, const cfg_ynode *v,
                        void *ctx) {
    rawgroup *g = ctx;
    if (key_is(key, klen, "name")) {
        const char *s = "";
        size_t n = 0;
        int rc = get_string(d, v, &s, &n);
        if (rc < 0) return;
        char *c = dup_mem(d, rc == 1 ? "" : s, rc == 1 ? 0 : n);
        if (!c) return;
        free(g->name);
        g->name = c;
        g->name_len = rc == 1 ? 0 : n;
    } else if (key_is(key, klen, "interval")) {
        get_duration(d, v, &g->interval_ms);
    } else if (key_is(key, klen, "limit")) {
        get_int(d, v, &g->limit);
    } else if (key_is(key, klen, "rules")) {
        get_rules(d, v, g);
    } else {
        unknown_field(d, key, klen, k, "rulefmt.RuleGroup");
    }
}

static void top_field_a(dec *d, const char *key, size_t klen, const cfg_ynode *k, const cfg_ynode *v,
                        void *ctx) {
    rawfile *f = ctx;
    if (!key_is(key, klen, "groups")) {
        unknown_field(d, key, klen, k, "rulefmt.RuleGroups");
        return;
    }
    if (want_seq(d, v, "[]rulefmt.RuleGroup") <= 0) return;
    for (size_t i = 0; i < v->n && !stop(d); i++) {
        const cfg_ynode *e = v->kids[i];
        if (want_map(d, e, "rulefmt.RuleGroup") <= 0) continue; /* null: dropped */
        if (f->ngroups == f->cap) {
            size_t nc = f->cap ? f->cap * 2 : 8;
            rawgroup *ng = realloc(f->groups, nc * sizeof *ng);
            if (!ng) {
                d->nomem = 1;
                return;
            }
            f->groups = ng;
            f->cap = nc;
        }
        rawgroup *g = &f->groups[f->ngroups++];
        memset(g, 0, sizeof *g);
        g->line = e->line;
        walk_map(d, e, group_field, g, NULL, 0);
    }
}

/* Pass B: ruleGroups{Groups []yaml.Node}, not strict. */
static void top_field_b(dec *d, const char *key, size_t klen, const cfg_ynode *k, const cfg_ynode *v,
                        void *ctx) {
    (void)k;
    rawfile *f = ctx;
    if (!key_is(key, klen, "groups")) return;
    if (want_seq(d, v, "[]yaml.Node") <= 0) return;
    f->npos = 0;
    if (v->n > f->cappos) {
        const cfg_ynode **np = realloc(f->pos, v->n * sizeof *np);
        if (!np) {
            d->nomem = 1;
            return;
        }
        f->pos = np;
        f->cappos = v->n;
    }
    for (size_t i = 0; i < v->n; i++) f->pos[f->npos++] = v->kids[i];
}

/* One pass over the document; its errors (one message) go to errs. */
static int run_pass(cfg_ydoc *doc, int strict, rawfile *f, const char *name, elist *errs) {
    dec d = {.doc = doc, .strict = strict};
    doc->visits = 0;
    doc->merges = 0;
    const cfg_ynode *root = doc->root;
    if (root && want_map(&d, root, strict ? "rulefmt.RuleGroups" : "rulefmt.ruleGroups") > 0)
        walk_map(&d, root, strict ? top_field_a : top_field_b, f, NULL, 0);
    int rc = 0;
    if (d.nomem || base_buf_err(&d.fmsg) || base_buf_err(&d.terrs)) {
        rc = BASE_E_NOMEM;
    } else if (d.fatal) {
        elist_add(errs, name, d.fline, d.fmsg.data ? d.fmsg.data : "", d.fmsg.len);
        rc = BASE_E_INVAL;
    } else if (d.nterrs) {
        if (d.nterrs > RULES__MAX_TERRORS)
            base_buf_printf(&d.terrs, "\n  (%zu more errors not shown)", d.nterrs - RULES__MAX_TERRORS);
        elist_addf(errs, name, d.tline, "yaml: unmarshal errors:%.*s", (int)d.terrs.len,
                   d.terrs.data ? d.terrs.data : "");
        rc = BASE_E_INVAL;
    }
    base_buf_free(&d.fmsg);
    base_buf_free(&d.terrs);
    for (size_t i = 0; i < d.nowned; i++) free(d.owned[i]);
    free(d.owned);
    return rc;
}

/* ---- Validate -------------------------------------------------------------- */

/* A yaml.Node field's Value: a scalar's raw text, "" for anything else. */
static base_str node_value(const cfg_ynode *n) {
    if (!n || n->kind != CFG_Y_SCALAR) return (base_str){"", 0};
    return (base_str){n->val, n->len};
}

typedef struct vctx {
    elist *errs;
    const char *name;
    const rawgroup *g;
    size_t ruleno;
    base_str rule_name;
} vctx;

/* rulefmt.Error: "[L:C: [L:C: ]]group %q, rule %d, %q: msg". n and alt
 * are the yaml.Node fields (NULL: absent, printed 0:0); pos says how many
 * positions 2.42 prints. */
static void rule_err(vctx *v, int pos, const cfg_ynode *n, const cfg_ynode *alt, int line, const char *fmt,
                     ...) __attribute__((format(printf, 6, 7)));
static void rule_err(vctx *v, int pos, const cfg_ynode *n, const cfg_ynode *alt, int line, const char *fmt,
                     ...) {
    base_buf b = BASE_BUF_INIT;
    if (pos >= 1) base_buf_printf(&b, "%d:%d: ", n ? n->line : 0, n ? n->col : 0);
    if (pos >= 2) base_buf_printf(&b, "%d:%d: ", alt ? alt->line : 0, alt ? alt->col : 0);
    base_buf_puts(&b, "group ");
    quote(&b, v->g->name ? v->g->name : "", v->g->name_len);
    base_buf_printf(&b, ", rule %zu, ", v->ruleno);
    quote(&b, v->rule_name.p, v->rule_name.n);
    base_buf_puts(&b, ": ");
    va_list ap;
    va_start(ap, fmt);
    base_buf_vprintf(&b, fmt, ap);
    va_end(ap);
    if (base_buf_err(&b))
        v->errs->nomem = 1;
    else
        elist_add(v->errs, v->name, pos && n ? n->line : line, b.data, b.len);
    base_buf_free(&b);
}

/* 2.42's testTemplateParsing for one label or annotation of alert al:
 * the text after the rule manager's variables, parsed as template
 * "__alert_" + al; a failure is `label "k": template: ...`. */
static void template_err(vctx *v, elist *errs, base_str al, const char *what, const rules_kv *e, int line) {
    base_buf text = BASE_BUF_INIT, name = BASE_BUF_INIT;
    base_buf_puts(&text, RULES_TMPL_PREFIX);
    base_buf_puts(&text, e->value ? e->value : "");
    base_buf_puts(&name, "__alert_");
    base_buf_append(&name, al.p, al.n);
    char err[1024];
    rules_tmpl *t = NULL;
    int rc = base_buf_err(&text) || base_buf_err(&name)
                 ? BASE_E_NOMEM
                 : rules_tmpl_parse(name.data, text.data, text.len, &t, err, sizeof err);
    if (rc == BASE_E_NOMEM)
        errs->nomem = 1;
    else if (rc < 0) {
        base_buf q = BASE_BUF_INIT;
        quote(&q, e->name ? e->name : "", e->name ? strlen(e->name) : 0);
        if (base_buf_err(&q))
            errs->nomem = 1;
        else
            rule_err(v, 0, NULL, NULL, line, "%s %.*s: %s", what, (int)q.len, q.data, err);
        base_buf_free(&q);
    }
    rules_tmpl_free(t);
    base_buf_free(&text);
    base_buf_free(&name);
}

/* Compiles each rule's expression (kept in exprs[] when valid) and
 * records every problem 2.42's Validate finds. */
static void validate(const rawfile *f, const char *name, elist *errs, pq_expr ***exprs) {
    keyset names = {0};
    for (size_t j = 0; j < f->ngroups; j++) {
        const rawgroup *g = &f->groups[j];
        const cfg_ynode *gp = j < f->npos ? f->pos[j] : NULL;
        int gl = gp ? gp->line : 0, gc = gp ? gp->col : 0;
        base_str gname = {g->name ? g->name : "", g->name_len};
        if (gname.n == 0) elist_addf(errs, name, gl, "%d:%d: Groupname must not be empty", gl, gc);
        int dup = keyset_add(&names, gname);
        if (dup < 0) errs->nomem = 1;
        if (dup == 1) {
            base_buf b = BASE_BUF_INIT;
            base_buf_printf(&b, "%d:%d: groupname: \"", gl, gc);
            base_buf_append(&b, gname.p, gname.n);
            base_buf_puts(&b, "\" is repeated in the same file");
            if (base_buf_err(&b))
                errs->nomem = 1;
            else
                elist_add(errs, name, gl, b.data, b.len);
            base_buf_free(&b);
        }
        for (size_t i = 0; i < g->nrules; i++) {
            const rawrule *r = &g->rules[i];
            base_str rec = node_value(r->record), al = node_value(r->alert), ex = node_value(r->expr);
            vctx v = {errs, name, g, i + 1, al.n ? al : rec};
            if (rec.n && al.n)
                rule_err(&v, 2, r->record, r->alert, r->line, "only one of 'record' and 'alert' must be set");
            if (!rec.n && !al.n)
                rule_err(&v, 1, r->record, NULL, r->line, "one of 'record' or 'alert' must be set");
            if (!ex.n) {
                rule_err(&v, 1, r->expr, NULL, r->line, "field 'expr' must be set in rule");
            } else {
                base_buf msg = BASE_BUF_INIT;
                pq_expr *x = NULL;
                int rc = promql_parse_msg(ex.p, ex.n, &x, &msg);
                if (rc == 0)
                    exprs[j][i] = x;
                else if (rc == BASE_E_NOMEM)
                    errs->nomem = 1;
                else
                    rule_err(&v, 1, r->expr, NULL, r->line, "could not parse expression: %.*s", (int)msg.len,
                             msg.data ? msg.data : "");
                base_buf_free(&msg);
            }
            if (rec.n) {
                if (r->annotations.n > 0)
                    rule_err(&v, 1, r->record, NULL, r->line,
                             "invalid field 'annotations' in recording rule");
                if (r->for_ms != 0)
                    rule_err(&v, 1, r->record, NULL, r->line, "invalid field 'for' in recording rule");
                if (r->kff_ms != 0)
                    rule_err(&v, 1, r->record, NULL, r->line,
                             "invalid field 'keep_firing_for' in recording rule");
                if (!labels_valid_metric_name(rec))
                    rule_err(&v, 1, r->record, NULL, r->line, "invalid recording rule name: %.*s", (int)rec.n,
                             rec.p);
            }
            for (size_t k = 0; k < r->labels.n; k++) {
                base_str ln = base_str_c(r->labels.v[k].name), lv = base_str_c(r->labels.v[k].value);
                if (!labels_valid_label_name(ln) || base_str_eqc(ln, "__name__"))
                    rule_err(&v, 0, NULL, NULL, r->line, "invalid label name: %.*s", (int)ln.n, ln.p);
                if (!base_utf8_valid(lv.p, lv.n))
                    rule_err(&v, 0, NULL, NULL, r->line, "invalid label value: %.*s", (int)lv.n, lv.p);
            }
            for (size_t k = 0; k < r->annotations.n; k++) {
                base_str an = base_str_c(r->annotations.v[k].name);
                if (!labels_valid_label_name(an))
                    rule_err(&v, 0, NULL, NULL, r->line, "invalid annotation name: %.*s", (int)an.n, an.p);
            }
            if (al.n) { /* testTemplateParsing: labels, then annotations */
                for (size_t k = 0; k < r->labels.n; k++)
                    template_err(&v, errs, al, "label", &r->labels.v[k], r->line);
                for (size_t k = 0; k < r->annotations.n; k++)
                    template_err(&v, errs, al, "annotation", &r->annotations.v[k], r->line);
            }
        }
    }
    free(names.slot);
}

/* ---- the result -------------------------------------------------------------- */

void rules_file_free(rules_file *f) {
    if (!f) return;
    for (size_t g = 0; g < f->ngroups; g++) {
        rules_group *rg = &f->groups[g];
        for (size_t r = 0; r < rg->nrules; r++) {
            rules_rule *rr = &rg->rules[r];
            free(rr->name);
            free(rr->expr);
            promql_expr_free(rr->parsed);
            for (size_t k = 0; k < rr->nlabels; k++) {
                free(rr->labels[k].name);
                free(rr->labels[k].value);
            }
            free(rr->labels);
            for (size_t k = 0; k < rr->nannotations; k++) {
                free(rr->annotations[k].name);
                free(rr->annotations[k].value);
            }
            free(rr->annotations);
        }
        free(rg->rules);
        free(rg->name);
    }
    free(f->groups);
    free(f->path);
    free(f);
}

void rules_errors_free(rules_errors *errs) {
    if (!errs) return;
    for (size_t i = 0; i < errs->n; i++) free(errs->e[i].msg);
    free(errs->e);
    errs->e = NULL;
    errs->n = 0;
}

size_t rules_file_count(const rules_file *f) {
    size_t n = 0;
    for (size_t g = 0; f && g < f->ngroups; g++) n += f->groups[g].nrules;
    return n;
}

/* Moves raw (valid) into a new rules_file; exprs are taken. */
static int build(rawfile *raw, pq_expr ***exprs, const char *name, rules_file **ret) {
    rules_file *f = calloc(1, sizeof *f);
    if (!f) return BASE_E_NOMEM;
    f->path = strdup(name);
    f->groups = calloc(raw->ngroups ? raw->ngroups : 1, sizeof *f->groups);
    if (!f->path || !f->groups) goto nomem;
    for (size_t j = 0; j < raw->ngroups; j++) {
        rawgroup *rg = &raw->groups[j];
        rules_group *g = &f->groups[f->ngroups++];
        g->name = rg->name ? rg->name : strdup("");
        rg->name = NULL;
        g->interval_ms = rg->interval_ms;
        g->limit = rg->limit;
        g->line = rg->line;
        g->rules = calloc(rg->nrules ? rg->nrules : 1, sizeof *g->rules);
        if (!g->name || !g->rules) goto nomem;
        for (size_t i = 0; i < rg->nrules; i++) {
            rawrule *rr = &rg->rules[i];
            rules_rule *r = &g->rules[g->nrules++];
            base_str rec = node_value(rr->record), al = node_value(rr->alert), ex = node_value(rr->expr);
            r->kind = al.n ? RULES_ALERT : RULES_RECORD;
            r->parsed = exprs[j][i];
            exprs[j][i] = NULL;
            r->name = strndup(al.n ? al.p : rec.p, al.n ? al.n : rec.n);
            r->expr = strndup(ex.p, ex.n);
            if (!r->name || !r->expr) goto nomem;
            r->for_ms = rr->for_ms;
            r->keep_firing_for_ms = rr->kff_ms;
            r->labels = rr->labels.v;
            r->nlabels = rr->labels.n;
            r->annotations = rr->annotations.v;
            r->nannotations = rr->annotations.n;
            memset(&rr->labels, 0, sizeof rr->labels);
            memset(&rr->annotations, 0, sizeof rr->annotations);
            r->line = rr->line;
        }
    }
    *ret = f;
    return 0;
nomem:
    rules_file_free(f);
    return BASE_E_NOMEM;
}

static int give_errors(elist *l, rules_errors *errs, int rc, const char *name) {
    if (l->nomem) rc = BASE_E_NOMEM;
    if (l->dropped) {
        char *m = NULL;
        if (asprintf(&m, "%s: %zu more errors not shown", name, l->dropped) < 0)
            l->nomem = 1;
        else
            elist_push(l, m, 0);
    }
    if (l->nomem) rc = BASE_E_NOMEM;
    if (errs) {
        errs->e = l->e;
        errs->n = l->n;
        l->e = NULL;
        l->n = 0;
    }
    elist_free(l);
    return rc;
}

int rules_file_load_buf(const char *buf, size_t len, const char *name, rules_file **ret, rules_errors *errs) {
    if (errs) memset(errs, 0, sizeof *errs);
    elist l = {0};
    if (len > RULES_FILE_MAX) {
        elist_addf(&l, name, 0, "the file is larger than %zu bytes", RULES_FILE_MAX);
        return give_errors(&l, errs, BASE_E_LIMIT, name);
    }
    cfg_ydoc doc = {0};
    char perr[512];
    int rc = cfg_yaml_parse(buf, len, name, &doc, perr, sizeof perr);
    if (rc == BASE_E_PARSE) {
        base_buf m = BASE_BUF_INIT;
        int line = 0;
        if (rules__syntax_error(buf, len, &m, &line) == 0 && !base_buf_err(&m)) {
            /* both of 2.42's decoders fail on it: it is reported twice */
            elist_add(&l, name, line, m.data, m.len);
            elist_add(&l, name, line, m.data, m.len);
        } else {
            char *c = strdup(perr); /* the builder's message names the file */
            if (c)
                elist_push(&l, c, 0);
            else
                l.nomem = 1;
        }
        base_buf_free(&m);
    } else if (rc != 0) {
        /* a limit, or no memory: the builder's message names the file */
        char *m = strdup(perr);
        if (m)
            elist_push(&l, m, 0);
        else
            l.nomem = 1;
    }
    if (rc != 0) {
        cfg_ydoc_free(&doc);
        return give_errors(&l, errs, rc, name);
    }
    rawfile raw = {0};
    int ra = run_pass(&doc, 1, &raw, name, &l);
    int rb = run_pass(&doc, 0, &raw, name, &l);
    if (ra == BASE_E_NOMEM || rb == BASE_E_NOMEM)
        rc = BASE_E_NOMEM;
    else if (ra || rb)
        rc = BASE_E_INVAL;
    pq_expr ***exprs = NULL;
    if (rc == 0) {
        exprs = calloc(raw.ngroups ? raw.ngroups : 1, sizeof *exprs);
        for (size_t j = 0; exprs && j < raw.ngroups; j++)
            if (!(exprs[j] = calloc(raw.groups[j].nrules ? raw.groups[j].nrules : 1, sizeof **exprs))) {
                for (size_t k = 0; k < j; k++) free(exprs[k]);
                free(exprs);
                exprs = NULL;
            }
        if (!exprs) rc = BASE_E_NOMEM;
    }
    if (rc == 0) {
        validate(&raw, name, &l, exprs);
        if (l.nomem)
            rc = BASE_E_NOMEM;
        else if (l.n)
            rc = BASE_E_INVAL;
        else
            rc = build(&raw, exprs, name, ret);
    }
    if (exprs) {
        for (size_t j = 0; j < raw.ngroups; j++) {
            for (size_t i = 0; i < raw.groups[j].nrules; i++) promql_expr_free(exprs[j][i]);
            free(exprs[j]);
        }
        free(exprs);
    }
    rawfile_free(&raw);
    cfg_ydoc_free(&doc);
    return give_errors(&l, errs, rc, name);
}

/* strerror as Go's syscall errors read: "no such file or directory". */
static void go_errno(int e, char *buf, size_t n) {
    snprintf(buf, n, "%s", strerror(e));
    if (buf[0] >= 'A' && buf[0] <= 'Z') buf[0] = (char)(buf[0] + 32);
}

int rules_file_load(const char *path, rules_file **ret, rules_errors *errs) {
    if (errs) memset(errs, 0, sizeof *errs);
    elist l = {0};
    char eb[128];
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        go_errno(errno, eb, sizeof eb);
        elist_addf(&l, path, 0, "open %s: %s", path, eb);
        return give_errors(&l, errs, BASE_E_IO, path);
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || S_ISDIR(st.st_mode) || !S_ISREG(st.st_mode)) {
        int e = errno;
        int dir = S_ISDIR(st.st_mode), reg = S_ISREG(st.st_mode);
        close(fd);
        if (dir)
            elist_addf(&l, path, 0, "read %s: is a directory", path);
        else if (!reg)
            elist_addf(&l, path, 0, "read %s: not a regular file", path);
        else {
            go_errno(e, eb, sizeof eb);
            elist_addf(&l, path, 0, "stat %s: %s", path, eb);
        }
        return give_errors(&l, errs, BASE_E_IO, path);
    }
    if ((uint64_t)st.st_size > RULES_FILE_MAX) {
        close(fd);
        elist_addf(&l, path, 0, "the file is larger than %zu bytes", RULES_FILE_MAX);
        return give_errors(&l, errs, BASE_E_LIMIT, path);
    }
    size_t n = (size_t)st.st_size;
    char *buf = malloc(n + 1);
    if (!buf) {
        close(fd);
        return give_errors(&l, errs, BASE_E_NOMEM, path);
    }
    size_t got = 0;
    int rerr = 0;
    while (got < n) {
        ssize_t r = read(fd, buf + got, n - got);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) rerr = errno;
        if (r <= 0) break;
        got += (size_t)r;
    }
    close(fd);
    if (got != n) {
        free(buf);
        if (rerr) {
            go_errno(rerr, eb, sizeof eb);
            elist_addf(&l, path, 0, "read %s: %s", path, eb);
        } else {
            elist_addf(&l, path, 0, "read %s: short read", path);
        }
        return give_errors(&l, errs, BASE_E_IO, path);
    }
    int rc = rules_file_load_buf(buf, n, path, ret, errs);
    free(buf);
    return rc;
}
