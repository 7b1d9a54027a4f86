/* relabel.c -- Prometheus 2.42's relabeling (model/relabel/relabel.go):
 * rule validation and relabel_process over a labels_builder.
 *
 * Design:
 *  - A rule keeps its raw fields as the config gave them; validate derives
 *    the effective values (eff_*: views of the raw strings or of static
 *    defaults), compiles "^(?:regex)$" with capture groups and records
 *    facts the hot path needs (target/replacement contain '$', replacement
 *    is plain "$1"). Checks and messages follow 2.42's Config.Validate in
 *    its order; see relabel.h for the one deliberate difference.
 *  - relabel_process applies each rule to the builder as 2.42's relabel()
 *    does to its label set. Rules that iterate labels (labelmap, labeldrop,
 *    labelkeep) iterate a snapshot of the pairs taken before the rule, as
 *    2.42 iterates the rule's input set while writing to a builder.
 *  - Replace keeps 2.42's quirks: no match or an invalid expanded target
 *    name leaves the set alone except for deleting the *unexpanded*
 *    target_label; an empty expanded value deletes the unexpanded
 *    target_label (2.49 changed both to the expanded name).
 *  - Memory: every buffer (joined value, expansion, spans, snapshot) lives
 *    in a per-thread scratch struct reused across calls. Strings handed to
 *    the builder are either views that are already stable (rule strings,
 *    builder values, substrings of a single source value) or copies in the
 *    scratch's chunk list, whose chunks never move. The chunks are recycled
 *    at the start of a call once the builder holds none of their strings.
 *
 * Invariants: a rule with RELABEL__F_VALID has re != NULL and eff_* set;
 * relabel_process never writes to a rule; a chunk's bytes [0, used) are
 * never rewritten until the chunk list is recycled.
 */
#include <locale.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <wctype.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/utf8.h"
#include "relabel/relabel.h"
#include "relabel/relabel_int.h"

/* ---- actions --------------------------------------------------------- */

static const char *const g_action_names[] = {
    [RELABEL_REPLACE] = "replace",     [RELABEL_KEEP] = "keep",           [RELABEL_DROP] = "drop",
    [RELABEL_KEEPEQUAL] = "keepequal", [RELABEL_DROPEQUAL] = "dropequal", [RELABEL_HASHMOD] = "hashmod",
    [RELABEL_LABELMAP] = "labelmap",   [RELABEL_LABELDROP] = "labeldrop", [RELABEL_LABELKEEP] = "labelkeep",
    [RELABEL_LOWERCASE] = "lowercase", [RELABEL_UPPERCASE] = "uppercase",
};
#define NACTIONS (sizeof g_action_names / sizeof g_action_names[0])

const char *relabel_action_name(relabel_action a) {
    return (unsigned)a < NACTIONS ? g_action_names[a] : "unknown";
}

/* ---- errors ------------------------------------------------------------ */

static void err_from_buf(char *err, size_t errlen, base_buf *b) {
    if (err && errlen) {
        size_t n = b->len < errlen - 1 ? b->len : errlen - 1;
        if (n) memcpy(err, b->data, n);
        err[n] = '\0';
    }
    base_buf_free(b);
}

/* `"<q>"<rest>` with q quoted as Go's %q; rest contains one %s for the
 * action name. */
static int fail_q(char *err, size_t errlen, base_str q, const char *rest, relabel_action a) {
    base_buf b;
    base_buf_init(&b, 0);
    labels_quote(&b, q);
    base_buf_printf(&b, rest, relabel_action_name(a));
    err_from_buf(err, errlen, &b);
    return BASE_E_INVAL;
}

/* ---- UTF-8 and case mapping (Go's strings.ToLower / ToUpper) ----------- */

/* One rune as Go's utf8.DecodeRune reads it: an invalid sequence is
 * U+FFFD of width 1. */
static size_t utf8_dec(const uint8_t *p, size_t n, uint32_t *ret) {
    size_t w = base_utf8_decode(p, n, ret);
    if (w == 0) {
        *ret = 0xFFFD;
        w = 1;
    }
    return w;
}

static void utf8_put(base_buf *b, uint32_t r) {
    unsigned char t[4];
    base_buf_append(b, t, base_utf8_encode(r, t));
}

static pthread_once_t g_loc_once = PTHREAD_ONCE_INIT;
static locale_t g_loc; /* C.UTF-8 for towlower_l / towupper_l; never freed */

static void loc_init(void) {
    g_loc = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0);
}

static uint32_t map_rune(uint32_t r, int upper) {
    if (r < 0x80) {
        if (upper && r >= 'a' && r <= 'z') return r - 32;
        if (!upper && r >= 'A' && r <= 'Z') return r + 32;
        return r;
    }
    pthread_once(&g_loc_once, loc_init);
    if (!g_loc) return r;
    wint_t m = upper ? towupper_l((wint_t)r, g_loc) : towlower_l((wint_t)r, g_loc);
    return (uint32_t)m;
}

/* 1 if mapping s would change nothing (ASCII without letters to map). */
static int case_noop(base_str s, int upper) {
    for (size_t i = 0; i < s.n; i++) {
        unsigned char c = (unsigned char)s.p[i];
        if (c >= 0x80) return 0;
        if (upper ? (c >= 'a' && c <= 'z') : (c >= 'A' && c <= 'Z')) return 0;
    }
    return 1;
}

static void case_map(base_str s, int upper, base_buf *out) {
    const uint8_t *p = (const uint8_t *)s.p;
    size_t i = 0;
    while (i < s.n) {
        uint32_t r;
        size_t w = utf8_dec(p + i, s.n - i, &r);
        utf8_put(out, map_rune(r, upper));
        i += w;
    }
}

int relabel_action_parse(const char *s, relabel_action *ret, char *err, size_t errlen) {
    base_str in = base_str_c(s);
    base_buf low;
    base_buf_init(&low, 0);
    case_map(in, 0, &low);
    int rc = base_buf_err(&low);
    if (rc == 0) {
        for (size_t a = 0; a < NACTIONS; a++)
            if (low.len == strlen(g_action_names[a]) && memcmp(low.data, g_action_names[a], low.len) == 0) {
                base_buf_free(&low);
                *ret = (relabel_action)a;
                return 0;
            }
        rc = BASE_E_INVAL;
    }
    base_buf_free(&low);
    if (rc != BASE_E_INVAL) {
        base_errf(err, errlen, rc, "%s", base_strerror(rc));
        return rc;
    }
    base_buf b;
    base_buf_init(&b, 0);
    base_buf_puts(&b, "unknown relabel action ");
    labels_quote(&b, in);
    err_from_buf(err, errlen, &b);
    return BASE_E_INVAL;
}

/* ---- rules ----------------------------------------------------------- */

static int isword(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

int relabel__valid_target(const char *s, size_t n) {
    if (n == 0) return 0;
    size_t i = 0;
    while (i < n) {
        if (s[i] == '$') {
            i++;
            size_t j = i;
            if (j < n && s[j] == '{') {
                j++;
                while (j < n && isword(s[j])) j++;
                if (j == i + 1 || j >= n || s[j] != '}') return 0;
                j++;
            } else {
                while (j < n && isword(s[j])) j++;
                if (j == i) return 0;
            }
            i = j;
        } else if (isword(s[i])) {
            if (i == 0 && s[i] >= '0' && s[i] <= '9') return 0;
            i++;
        } else {
            return 0;
        }
    }
    return 1;
}

void relabel_rule_init(relabel_rule *r) {
    memset(r, 0, sizeof *r);
}

void relabel_rule_clear(relabel_rule *r) {
    if (r->source_labels)
        for (size_t i = 0; i < r->nsource; i++) free(r->source_labels[i]);
    free(r->source_labels);
    free(r->separator);
    free(r->target_label);
    free(r->regex);
    free(r->replacement);
    labels_regex_free(r->re);
    memset(r, 0, sizeof *r);
}

typedef struct eff {
    base_str sep, regex, repl, target;
} eff;

/* The values 2.42 would hold after UnmarshalYAML: an explicit field wins
 * (an explicit empty or null one is ""), else DefaultRelabelConfig's. */
static eff effective(const relabel_rule *r) {
    eff e;
    e.sep = r->separator ? base_str_c(r->separator) : r->has_separator ? base_str_c("") : base_str_c(";");
    e.regex = r->regex ? base_str_c(r->regex) : r->has_regex ? base_str_c("") : base_str_c("(.*)");
    e.repl = r->replacement       ? base_str_c(r->replacement)
             : r->has_replacement ? base_str_c("")
                                  : base_str_c("$1");
    e.target = base_str_c(r->target_label ? r->target_label : "");
    return e;
}

static int has_dollar(base_str s) {
    return s.n && memchr(s.p, '$', s.n) != NULL;
}

/* 2.42's checks, in Config.Validate's order (source label names and the
 * regex are checked while unmarshalling in 2.42, so they come first). */
static int check(const relabel_rule *r, const eff *e, char *err, size_t errlen) {
    relabel_action a = r->action;
    int rep = a == RELABEL_REPLACE, hm = a == RELABEL_HASHMOD;
    int lu = a == RELABEL_LOWERCASE || a == RELABEL_UPPERCASE;
    int eq = a == RELABEL_KEEPEQUAL || a == RELABEL_DROPEQUAL;
    const char *inv_target = " is invalid 'target_label' for %s action";
    if (r->modulus == 0 && hm)
        return base_errf(err, errlen, BASE_E_INVAL,
                         "relabel configuration for hashmod requires non-zero modulus");
    if ((rep || hm || lu || eq) && e->target.n == 0)
        return base_errf(err, errlen, BASE_E_INVAL,
                         "relabel configuration for %s action requires 'target_label' value",
                         relabel_action_name(a));
    if ((rep || lu || eq) && !relabel__valid_target(e->target.p, e->target.n))
        return fail_q(err, errlen, e->target, inv_target, a);
    if ((lu || eq) && !base_str_eqc(e->repl, "$1"))
        return base_errf(err, errlen, BASE_E_INVAL, "'replacement' can not be set for %s action",
                         relabel_action_name(a));
    if (a == RELABEL_LABELMAP && !relabel__valid_target(e->repl.p, e->repl.n))
        return fail_q(err, errlen, e->repl, " is invalid 'replacement' for %s action", a);
    if (hm && !labels_valid_label_name(e->target)) return fail_q(err, errlen, e->target, inv_target, a);
    if (eq && (r->has_regex || r->regex || r->modulus != 0 || !base_str_eqc(e->sep, ";") ||
               !base_str_eqc(e->repl, "$1")))
        return base_errf(err, errlen, BASE_E_INVAL,
                         "%s action requires only 'source_labels' and `target_label`, and no other fields",
                         relabel_action_name(a));
    if ((a == RELABEL_LABELDROP || a == RELABEL_LABELKEEP) &&
        (r->source_labels || r->nsource || e->target.n || r->modulus != 0 || !base_str_eqc(e->sep, ";") ||
         !base_str_eqc(e->repl, "$1")))
        return base_errf(err, errlen, BASE_E_INVAL, "%s action requires only 'regex', and no other fields",
                         relabel_action_name(a));
    return 0;
}

int relabel_rule_validate(relabel_rule *r, char *err, size_t errlen) {
    labels_regex_free(r->re);
    r->re = NULL;
    r->eff_flags = 0;
    if ((unsigned)r->action >= NACTIONS)
        return base_errf(err, errlen, BASE_E_INVAL, "unknown relabel action %d", (int)r->action);
    if (r->nsource && !r->source_labels) return base_errf(err, errlen, BASE_E_INVAL, "source_labels missing");
    for (size_t i = 0; i < r->nsource; i++) {
        base_str s = base_str_c(r->source_labels[i] ? r->source_labels[i] : "");
        if (!labels_valid_label_name(s))
            return fail_q(err, errlen, s, " is not a valid label name%.0s", r->action);
    }
    eff e = effective(r);
    labels_regex *re = NULL;
    int rc = labels_regex_compile(e.regex, LABELS_RE_CAPTURE, &re, err, errlen);
    if (rc < 0) return rc == BASE_E_PARSE ? BASE_E_INVAL : rc;
    rc = check(r, &e, err, errlen);
    if (rc < 0) {
        labels_regex_free(re);
        return rc;
    }
    r->re = re;
    r->eff_separator = e.sep;
    r->eff_regex = e.regex;
    r->eff_replacement = e.repl;
    r->eff_target = e.target;
    r->eff_flags = RELABEL__F_VALID;
    if (has_dollar(e.target)) r->eff_flags |= RELABEL__F_TARGET_VAR;
    if (has_dollar(e.repl)) r->eff_flags |= RELABEL__F_REPL_VAR;
    if (base_str_eqc(e.repl, "$1") || base_str_eqc(e.repl, "${1}")) r->eff_flags |= RELABEL__F_REPL_DOLLAR1;
    return 0;
}

static int dup_str(char **dst, const char *src) {
    *dst = NULL;
    if (!src) return 0;
    *dst = strdup(src);
    return *dst ? 0 : BASE_E_NOMEM;
}

int relabel_rule_copy(relabel_rule *dst, const relabel_rule *src, char *err, size_t errlen) {
    relabel_rule t;
    relabel_rule_init(&t);
    t.action = src->action;
    t.modulus = src->modulus;
    t.has_separator = src->has_separator;
    t.has_regex = src->has_regex;
    t.has_replacement = src->has_replacement;
    t.line = src->line;
    int rc = 0;
    if (src->source_labels) {
        t.source_labels = calloc(src->nsource ? src->nsource : 1, sizeof *t.source_labels);
        if (!t.source_labels) rc = BASE_E_NOMEM;
        for (size_t i = 0; rc == 0 && i < src->nsource; i++) {
            rc = dup_str(&t.source_labels[i], src->source_labels[i]);
            if (rc == 0) t.nsource = i + 1;
        }
    }
    if (rc == 0) rc = dup_str(&t.separator, src->separator);
    if (rc == 0) rc = dup_str(&t.target_label, src->target_label);
    if (rc == 0) rc = dup_str(&t.regex, src->regex);
    if (rc == 0) rc = dup_str(&t.replacement, src->replacement);
    if (rc < 0) {
        base_errf(err, errlen, rc, "%s", base_strerror(rc));
    } else if (src->eff_flags & RELABEL__F_VALID) {
        t.nsource = src->nsource;
        rc = relabel_rule_validate(&t, err, errlen);
    } else {
        t.nsource = src->nsource;
    }
    if (rc < 0) {
        relabel_rule_clear(&t);
        memset(dst, 0, sizeof *dst);
        return rc;
    }
    *dst = t;
    return 0;
}

int relabel_rule_equal(const relabel_rule *a, const relabel_rule *b) {
    if (a->action != b->action || a->modulus != b->modulus || a->nsource != b->nsource) return 0;
    for (size_t i = 0; i < a->nsource; i++) {
        const char *x = a->source_labels[i] ? a->source_labels[i] : "";
        const char *y = b->source_labels[i] ? b->source_labels[i] : "";
        if (strcmp(x, y) != 0) return 0;
    }
    eff ea = effective(a), eb = effective(b);
    return base_str_eq(ea.sep, eb.sep) && base_str_eq(ea.regex, eb.regex) && base_str_eq(ea.repl, eb.repl) &&
           base_str_eq(ea.target, eb.target);
}

/* ---- per-thread scratch ------------------------------------------------ */

typedef struct chunk {
    struct chunk *next;
    size_t cap, used;
    char data[];
} chunk;

typedef struct scratch {
    base_buf val; /* joined source values */
    base_buf tmp; /* expansions, case mapping */
    labels_span *spans;
    size_t nspans;
    base_str *names, *values; /* snapshot of the builder's pairs */
    size_t npairs;
    chunk *chunks; /* strings handed to builders; newest (largest) first */
} scratch;

static pthread_once_t g_key_once = PTHREAD_ONCE_INIT;
static pthread_key_t g_key;
static int g_key_ok;
static _Thread_local scratch *t_scratch;

static void chunks_free(chunk *c) {
    while (c) {
        chunk *n = c->next;
        free(c);
        c = n;
    }
}

static void scratch_destroy(void *p) {
    scratch *s = p;
    if (!s) return;
    base_buf_free(&s->val);
    base_buf_free(&s->tmp);
    free(s->spans);
    free(s->names);
    free(s->values);
    chunks_free(s->chunks);
    free(s);
}

static void key_init(void) {
    g_key_ok = pthread_key_create(&g_key, scratch_destroy) == 0;
}

static scratch *get_scratch(void) {
    if (t_scratch) return t_scratch;
    pthread_once(&g_key_once, key_init);
    scratch *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    base_buf_init(&s->val, LABELS_STRING_MAX);
    base_buf_init(&s->tmp, LABELS_STRING_MAX);
    if (g_key_ok) pthread_setspecific(g_key, s);
    t_scratch = s;
    return s;
}

void relabel_thread_cleanup(void) {
    if (!t_scratch) return;
    if (g_key_ok) pthread_setspecific(g_key, NULL);
    scratch_destroy(t_scratch);
    t_scratch = NULL;
}

/* A stable copy of p[0..n) (n > 0), or NULL when out of memory. */
static const char *keep(scratch *s, const char *p, size_t n) {
    chunk *c = s->chunks;
    if (!c || c->cap - c->used < n) {
        size_t cap = c ? c->cap * 2 : 4096;
        while (cap < n) cap *= 2;
        chunk *nc = malloc(sizeof *nc + cap);
        if (!nc) return NULL;
        nc->next = c;
        nc->cap = cap;
        nc->used = 0;
        s->chunks = c = nc;
    }
    char *d = c->data + c->used;
    memcpy(d, p, n);
    c->used += n;
    return d;
}

static int keep_str(scratch *s, base_str in, base_str *ret) {
    if (in.n == 0) {
        *ret = (base_str){"", 0};
        return 0;
    }
    const char *p = keep(s, in.p, in.n);
    if (!p) return BASE_E_NOMEM;
    *ret = (base_str){p, in.n};
    return 0;
}

/* Fills s->names/values with b's pairs; returns their number or <0. */
static ssize_t snapshot(scratch *s, const labels_builder *b) {
    size_t n = labels_builder_pairs(b, s->names, s->values, s->npairs);
    if (n > s->npairs) {
        size_t cap = n < 16 ? 16 : n;
        base_str *nn = realloc(s->names, cap * sizeof *nn);
        if (!nn) return BASE_E_NOMEM;
        s->names = nn;
        base_str *nv = realloc(s->values, cap * sizeof *nv);
        if (!nv) return BASE_E_NOMEM;
        s->values = nv;
        s->npairs = cap;
        n = labels_builder_pairs(b, s->names, s->values, s->npairs);
    }
    return (ssize_t)n;
}

static int in_chunks(const chunk *c, const char *p) {
    uintptr_t x = (uintptr_t)p;
    for (; c; c = c->next)
        if (x >= (uintptr_t)c->data && x < (uintptr_t)c->data + c->used) return 1;
    return 0;
}

/* Recycles the chunks unless b still holds strings in them. */
static int begin(scratch *s, const labels_builder *b) {
    int used = 0;
    for (chunk *c = s->chunks; c; c = c->next) used |= c->used != 0;
    if (!used) return 0;
    ssize_t n = snapshot(s, b);
    if (n < 0) return (int)n;
    for (ssize_t i = 0; i < n; i++)
        if (in_chunks(s->chunks, s->names[i].p) || in_chunks(s->chunks, s->values[i].p)) return 0;
    chunks_free(s->chunks->next);
    s->chunks->next = NULL;
    s->chunks->used = 0;
    return 0;
}

static int reserve_spans(scratch *s, size_t n) {
    if (n <= s->nspans) return 0;
    size_t cap = n < 16 ? 16 : n;
    labels_span *p = realloc(s->spans, cap * sizeof *p);
    if (!p) return BASE_E_NOMEM;
    s->spans = p;
    s->nspans = cap;
    return 0;
}

/* ---- relabel_process ----------------------------------------------------- */

/* The source values joined by the separator. *ret_stable tells whether
 * the view outlives this rule (a builder value) or lives in s->val. */
static int join(scratch *s, const relabel_rule *r, const labels_builder *b, base_str *ret, int *ret_stable) {
    if (r->nsource == 0) {
        *ret = (base_str){"", 0};
        *ret_stable = 1;
        return 0;
    }
    if (r->nsource == 1) {
        *ret = labels_builder_get(b, base_str_c(r->source_labels[0]));
        *ret_stable = 1;
        return 0;
    }
    base_buf_reset(&s->val);
    for (size_t i = 0; i < r->nsource; i++) {
        if (i) base_buf_append(&s->val, r->eff_separator.p, r->eff_separator.n);
        base_str v = labels_builder_get(b, base_str_c(r->source_labels[i]));
        base_buf_append(&s->val, v.p, v.n);
    }
    if (base_buf_err(&s->val)) return base_buf_err(&s->val);
    *ret = (base_str){s->val.len ? s->val.data : "", s->val.len};
    *ret_stable = 0;
    return 0;
}

static int do_replace(scratch *s, const relabel_rule *r, labels_builder *b, base_str val, int stable) {
    size_t ns = labels_regex_groups(r->re) + 1;
    int rc = reserve_spans(s, ns);
    if (rc < 0) return rc;
    int m = labels_regex_exec(r->re, val, s->spans, ns);
    if (m <= 0) return m; /* no match: no replacement */
    base_str target = r->eff_target;
    if (r->eff_flags & RELABEL__F_TARGET_VAR) {
        base_buf_reset(&s->tmp);
        labels_regex_expand(r->re, r->eff_target, val, s->spans, ns, &s->tmp);
        if (base_buf_err(&s->tmp)) return base_buf_err(&s->tmp);
        base_str t = {s->tmp.data, s->tmp.len};
        if (!labels_valid_label_name(t)) {
            labels_builder_del(b, r->eff_target);
            return 0;
        }
        if ((rc = keep_str(s, t, &target)) < 0) return rc;
    }
    base_str res;
    if (!(r->eff_flags & RELABEL__F_REPL_VAR)) {
        res = r->eff_replacement;
    } else if ((r->eff_flags & RELABEL__F_REPL_DOLLAR1) && stable) {
        if (ns > 1 && s->spans[1].start != SIZE_MAX)
            res = (base_str){val.p + s->spans[1].start, s->spans[1].end - s->spans[1].start};
        else
            res = (base_str){"", 0};
    } else {
        base_buf_reset(&s->tmp);
        labels_regex_expand(r->re, r->eff_replacement, val, s->spans, ns, &s->tmp);
        if (base_buf_err(&s->tmp)) return base_buf_err(&s->tmp);
        if ((rc = keep_str(s, (base_str){s->tmp.data, s->tmp.len}, &res)) < 0) return rc;
    }
    if (res.n == 0) {
        labels_builder_del(b, r->eff_target);
        return 0;
    }
    return labels_builder_set(b, target, res);
}

static int do_case(scratch *s, const relabel_rule *r, labels_builder *b, base_str val, int stable,
                   int upper) {
    base_str res;
    int rc;
    if (case_noop(val, upper)) {
        if (stable)
            res = val;
        else if ((rc = keep_str(s, val, &res)) < 0)
            return rc;
    } else {
        base_buf_reset(&s->tmp);
        case_map(val, upper, &s->tmp);
        if (base_buf_err(&s->tmp)) return base_buf_err(&s->tmp);
        if ((rc = keep_str(s, (base_str){s->tmp.data, s->tmp.len}, &res)) < 0) return rc;
    }
    /* 2.42 accepts a template as lowercase/uppercase's target_label (it
     * checks only the replace pattern) and writes it unexpanded, an invalid
     * label name; Kelvin accepts the same configurations but leaves such a
     * label out rather than storing a name no query could match. */
    if (!labels_valid_label_name(r->eff_target)) return 0;
    return labels_builder_set(b, r->eff_target, res);
}

static int do_hashmod(scratch *s, const relabel_rule *r, labels_builder *b, base_str val) {
    char num[24];
    int k = snprintf(num, sizeof num, "%llu", (unsigned long long)relabel__hashmod(val.p, val.n, r->modulus));
    base_str res;
    int rc = keep_str(s, (base_str){num, (size_t)k}, &res);
    if (rc < 0) return rc;
    return labels_builder_set(b, r->eff_target, res);
}

static int do_labels(scratch *s, const relabel_rule *r, labels_builder *b) {
    ssize_t n = snapshot(s, b);
    if (n < 0) return (int)n;
    size_t ns = labels_regex_groups(r->re) + 1;
    int rc = reserve_spans(s, ns);
    if (rc < 0) return rc;
    for (ssize_t i = 0; i < n; i++) {
        base_str name = s->names[i], value = s->values[i];
        if (value.n == 0) continue; /* not part of the set */
        if (r->action != RELABEL_LABELMAP) {
            int m = labels_regex_match(r->re, name);
            if (m < 0) return m;
            if (m == (r->action == RELABEL_LABELDROP)) labels_builder_del(b, name);
            continue;
        }
        int m = labels_regex_exec(r->re, name, s->spans, ns);
        if (m < 0) return m;
        if (m == 0) continue;
        base_str res = r->eff_replacement;
        if (r->eff_flags & RELABEL__F_REPL_VAR) {
            base_buf_reset(&s->tmp);
            labels_regex_expand(r->re, r->eff_replacement, name, s->spans, ns, &s->tmp);
            if (base_buf_err(&s->tmp)) return base_buf_err(&s->tmp);
            if ((rc = keep_str(s, (base_str){s->tmp.data, s->tmp.len}, &res)) < 0) return rc;
        }
        if ((rc = labels_builder_set(b, res, value)) < 0) return rc;
    }
    return 0;
}

static int apply(scratch *s, const relabel_rule *r, labels_builder *b) {
    base_str val;
    int stable = 0, m;
    int rc = join(s, r, b, &val, &stable);
    if (rc < 0) return rc;
    switch (r->action) {
    case RELABEL_DROP: m = labels_regex_match(r->re, val); return m < 0 ? m : !m;
    case RELABEL_KEEP: return labels_regex_match(r->re, val);
    case RELABEL_DROPEQUAL: return !base_str_eq(labels_builder_get(b, r->eff_target), val);
    case RELABEL_KEEPEQUAL: return base_str_eq(labels_builder_get(b, r->eff_target), val);
    case RELABEL_REPLACE: rc = do_replace(s, r, b, val, stable); break;
    case RELABEL_LOWERCASE:
    case RELABEL_UPPERCASE: rc = do_case(s, r, b, val, stable, r->action == RELABEL_UPPERCASE); break;
    case RELABEL_HASHMOD: rc = do_hashmod(s, r, b, val); break;
    case RELABEL_LABELMAP:
    case RELABEL_LABELDROP:
    case RELABEL_LABELKEEP: rc = do_labels(s, r, b); break;
    default: return BASE_E_INVAL;
    }
    return rc < 0 ? rc : 1;
}

int relabel_process(const relabel_rule *rules, size_t n, labels_builder *b) {
    if (n == 0) return 1;
    scratch *s = get_scratch();
    if (!s) return BASE_E_NOMEM;
    int rc = begin(s, b);
    if (rc < 0) return rc;
    for (size_t i = 0; i < n; i++) {
        if (!(rules[i].eff_flags & RELABEL__F_VALID)) return BASE_E_INVAL;
        rc = apply(s, &rules[i], b);
        if (rc <= 0) return rc;
    }
    return 1;
}
