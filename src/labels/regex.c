/* regex.c -- RE2-syntax regexes, fully anchored, matched by fast paths or
 * PCRE2 (labels_regex; the grammar is in regex_parse.c).
 *
 * Compilation: parse "^(?:" + re + ")$" (Go's grammar and errors) into a
 * tree, then
 *  1. translate the tree into a PCRE2 pattern that means the same thing
 *     under Go's rules (emit()): every literal as \x{..}, `.` as [^\x{a}]
 *     or (?s:.), ^/$ as \A/\z (or (?m:^)/(?m:$) under (?m), with
 *     PCRE2_ALT_CIRCUMFLEX so ^ also matches after a final newline as in
 *     Go), \d \s \w and POSIX classes as explicit ASCII ranges, (?i) as
 *     (?i:...) around the literals and classes it covers, lazy repeats
 *     resolved (no (?U) left), groups non-capturing unless
 *     LABELS_RE_CAPTURE. Compiled in UTF mode, newline LF, JIT when the
 *     library has it;
 *  2. try to express the tree as a finite union of "globs" (fast_build()):
 *     sequences of literal strings (case-sensitive, or ASCII
 *     case-insensitive when no k/s is involved), any-one-character and
 *     any-run wildcards. Concatenation multiplies, alternation and ? add,
 *     small classes like [0-7] enumerate; bounded so the union stays
 *     small. Pure literals go to a sorted set; the others are matched by
 *     shape (prefix, suffix, contains, prefix+suffix) or by the classic
 *     wildcard algorithm that backtracks only to the last star, which is
 *     exact for this language. Wildcards that exclude "\n" (Go's default
 *     `.`) are handled by rejecting subjects that contain "\n", allowed
 *     only when no literal of those globs contains one and all wildcards
 *     agree. Literals containing U+FFFD are left to PCRE2, because Go's
 *     matcher lets them match invalid bytes.
 * When both exist, the fast path answers labels_regex_match; PCRE2 serves
 * captures (labels_regex_exec). A regex too large for PCRE2 (its compiled
 * form is limited to 64 KiB on Debian) still works when it has a fast
 * path.
 *
 * Subjects: Go treats each byte of invalid UTF-8 as U+FFFD. Valid subjects
 * go straight to PCRE2 (after our own validity scan, with
 * PCRE2_NO_UTF_CHECK); invalid ones are copied with U+FFFD substituted
 * into per-thread scratch, and capture offsets are mapped back.
 *
 * Per-thread state (match data, match context with limits, JIT stack,
 * scratch, DFA workspace) hangs off a pthread key, freed at thread exit or
 * by labels_thread_cleanup(). Backtracking blowups are bounded by a match
 * limit; a boolean match that hits it is retried with pcre2_dfa_match
 * (polynomial, no backtracking), so a pathological regex is slow, not
 * wrong.
 */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdlib.h>
#include <string.h>

#include "base/arena.h"
#include "base/err.h"
#include "base/utf8.h"
#include "labels/labels_int.h"

#define ARENA_LIMIT    ((size_t)128 << 20)
#define MATCH_LIMIT    1000000u
#define PARENS_LIMIT   3000u
#define FAST_MAX_GLOBS 100000u    /* globs of any kind after expansion */
#define FAST_MAX_WILD  256u       /* globs that have wildcards */
#define FAST_MAX_ELEMS (1u << 20) /* elements over all globs */
#define FAST_CLASS_MAX 16u        /* classes enumerated up to this size */

/* ---- fast path structures ------------------------------------------ */

enum { E_LIT, E_ILIT, E_ANY1, E_STAR };
enum { G_GENERIC, G_EXACTI, G_PREFIX, G_SUFFIX, G_CONTAINS, G_PRESUF, G_ANY, G_NONEMPTY };

typedef struct felem {
    uint8_t kind;
    uint8_t nl; /* ANY1/STAR: matches "\n" too */
    uint32_t len;
    const uint8_t *p; /* E_LIT/E_ILIT bytes (E_ILIT: lower case) */
} felem;

typedef struct fglob {
    uint8_t shape;
    uint8_t wild; /* has wildcards (so the "\n" rule applies) */
    size_t n;
    felem *e;
} fglob;

typedef struct fastpath {
    base_str *set; /* sorted, unique */
    size_t nset;
    fglob *globs;
    size_t nglob;
    int nl; /* wildcards match "\n" (else subjects with "\n" fail globs that have wildcards) */
    void *mem[4];
} fastpath;

struct labels_regex {
    unsigned flags;
    pcre2_code *code;
    char *pattern;
    size_t pattern_len;
    size_t ngroups;
    base_str *names;
    char *names_blob;
    fastpath *fast;
};

/* ---- per-thread state ---------------------------------------------- */

typedef struct tstate {
    pcre2_match_data *md;
    uint32_t md_pairs;
    pcre2_match_context *mctx;
    pcre2_jit_stack *jit;
    uint8_t *scratch;
    size_t scratch_cap;
    int *ws;
    size_t ws_n;
} tstate;

/* PCRE2 allocates through labels__malloc too (for the failure hook). The
 * context is created once and kept for the process. */
static pcre2_general_context *g_gctx;
static pthread_once_t g_gctx_once = PTHREAD_ONCE_INIT;

static void *pcre_malloc(PCRE2_SIZE n, void *data) {
    (void)data;
    return labels__malloc(n);
}

static void pcre_free(void *p, void *data) {
    (void)data;
    free(p);
}

static void gctx_init(void) {
    g_gctx = pcre2_general_context_create(pcre_malloc, pcre_free, NULL);
}

static pcre2_general_context *gctx(void) {
    pthread_once(&g_gctx_once, gctx_init);
    return g_gctx; /* NULL (PCRE2's malloc) if creation failed */
}

static pthread_key_t g_key;
static pthread_once_t g_key_once = PTHREAD_ONCE_INIT;
static int g_key_ok;
static _Thread_local tstate *t_state;

static void tstate_free(void *p) {
    tstate *t = p;
    if (!t) return;
    pcre2_match_data_free(t->md);
    pcre2_match_context_free(t->mctx);
    pcre2_jit_stack_free(t->jit);
    free(t->scratch);
    free(t->ws);
    free(t);
}

static void key_init(void) {
    g_key_ok = pthread_key_create(&g_key, tstate_free) == 0;
}

static tstate *tstate_get(void) {
    if (t_state) return t_state;
    pthread_once(&g_key_once, key_init);
    if (!g_key_ok) return NULL;
    tstate *t = labels__calloc(1, sizeof *t);
    if (!t) return NULL;
    t->mctx = pcre2_match_context_create(gctx());
    t->md = pcre2_match_data_create(8, gctx());
    t->md_pairs = 8;
    if (!t->mctx || !t->md) {
        tstate_free(t);
        return NULL;
    }
    pcre2_set_match_limit(t->mctx, MATCH_LIMIT);
    t->jit = pcre2_jit_stack_create(32 * 1024, 1024 * 1024, gctx());
    if (t->jit) pcre2_jit_stack_assign(t->mctx, NULL, t->jit);
    if (pthread_setspecific(g_key, t) != 0) {
        tstate_free(t);
        return NULL;
    }
    t_state = t;
    return t;
}

void labels_thread_cleanup(void) {
    if (!t_state) return;
    tstate_free(t_state);
    t_state = NULL;
    pthread_setspecific(g_key, NULL);
}

/* ---- PCRE2 pattern emission ---------------------------------------- */

static void put_cp(base_buf *b, uint32_t r) {
    if (r < 0x80 && ((r >= '0' && r <= '9') || (r >= 'A' && r <= 'Z') || (r >= 'a' && r <= 'z'))) {
        base_buf_putc(b, (char)r);
        return;
    }
    base_buf_printf(b, "\\x{%x}", r);
}

static int is_surrogate(uint32_t r) {
    return r >= 0xD800 && r <= 0xDFFF;
}

static void emit_prop(base_buf *b, const labels__rx_prop *pr, int fold) {
    const char *n = pr->name;
    if (!strcmp(n, "Any")) {
        if (!pr->neg) base_buf_puts(b, "\\x{0}-\\x{10ffff}");
    } else if (!strcmp(n, "C")) {
        /* Go's C is Cc|Cf|Co|Cs; PCRE2's also has Cn (unassigned). */
        base_buf_puts(b, pr->neg ? "\\p{L}\\p{M}\\p{N}\\p{P}\\p{S}\\p{Z}\\p{Cn}"
                                 : "\\p{Cc}\\p{Cf}\\p{Co}\\p{Cs}");
    } else if (fold && (!strcmp(n, "Lu") || !strcmp(n, "Ll") || !strcmp(n, "Lt"))) {
        base_buf_puts(b, pr->neg ? "\\P{L&}" : "\\p{L&}");
    } else {
        base_buf_printf(b, "\\%c{%s}", pr->neg ? 'P' : 'p', n);
    }
}

/* Number of items a class emits (0 = the class is empty). */
static size_t class_items(const labels__rx_class *c) {
    size_t k = 0;
    for (size_t i = 0; i < c->nranges; i++) {
        uint32_t lo = c->ranges[2 * i], hi = c->ranges[2 * i + 1];
        if (!(is_surrogate(lo) && is_surrogate(hi))) k++;
    }
    for (size_t i = 0; i < c->nprops; i++)
        if (strcmp(c->props[i].name, "Any") || !c->props[i].neg) k++;
    return k;
}

static void emit_class(base_buf *b, const labels__rx_node *n) {
    const labels__rx_class *c = n->cls;
    if (class_items(c) == 0) {
        base_buf_puts(b, c->neg ? "(?s:.)" : "(?!)");
        return;
    }
    if (n->fold) base_buf_puts(b, "(?i:");
    base_buf_puts(b, c->neg ? "[^" : "[");
    for (size_t i = 0; i < c->nranges; i++) {
        uint32_t lo = c->ranges[2 * i], hi = c->ranges[2 * i + 1];
        /* PCRE2 refuses surrogates; they never occur in a subject. */
        if (is_surrogate(lo) && is_surrogate(hi)) continue;
        if (is_surrogate(lo)) lo = 0xE000;
        if (is_surrogate(hi)) hi = 0xD7FF;
        if (lo < 0xD800 && hi > 0xDFFF) {
            put_cp(b, lo);
            base_buf_putc(b, '-');
            put_cp(b, 0xD7FF);
            lo = 0xE000;
        }
        put_cp(b, lo);
        if (hi != lo) {
            base_buf_putc(b, '-');
            put_cp(b, hi);
        }
    }
    for (size_t i = 0; i < c->nprops; i++) emit_prop(b, &c->props[i], n->fold);
    base_buf_putc(b, ']');
    if (n->fold) base_buf_putc(b, ')');
}

/* atom: the output must be a single quantifiable item. */
static void emit(base_buf *b, const labels__rx_node *n, int capture, int atom) {
    switch (n->op) {
    case RX_EMPTY: base_buf_puts(b, atom ? "(?:)" : ""); return;
    case RX_NOMATCH: base_buf_puts(b, "(?!)"); return;
    case RX_LIT: {
        int sur = 0;
        for (size_t i = 0; i < n->nrunes; i++) sur |= is_surrogate(n->runes[i]);
        if (sur) { /* Go: a surrogate literal can never match */
            base_buf_puts(b, "(?!)");
            return;
        }
        int wrap = n->fold || (atom && n->nrunes > 1);
        if (wrap) base_buf_puts(b, n->fold ? "(?i:" : "(?:");
        for (size_t i = 0; i < n->nrunes; i++) put_cp(b, n->runes[i]);
        if (wrap) base_buf_putc(b, ')');
        return;
    }
    case RX_CLASS: emit_class(b, n); return;
    case RX_ANY: base_buf_puts(b, n->dotnl ? "(?s:.)" : "[^\\x{a}]"); return;
    case RX_BOL: base_buf_puts(b, "(?m:^)"); return;
    case RX_EOL: base_buf_puts(b, "(?m:$)"); return;
    case RX_BOT: base_buf_puts(b, atom ? "(?:\\A)" : "\\A"); return;
    case RX_EOT: base_buf_puts(b, atom ? "(?:\\z)" : "\\z"); return;
    case RX_WORDB: base_buf_puts(b, atom ? "(?:\\b)" : "\\b"); return;
    case RX_NWORDB: base_buf_puts(b, atom ? "(?:\\B)" : "\\B"); return;
    case RX_CAP:
        base_buf_puts(b, capture ? "(" : "(?:");
        emit(b, n->sub[0], capture, 0);
        base_buf_putc(b, ')');
        return;
    case RX_STAR:
    case RX_PLUS:
    case RX_QUEST:
    case RX_REPEAT:
        if (atom) base_buf_puts(b, "(?:"); /* x*(?i)* repeats a repeat */
        emit(b, n->sub[0], capture, 1);
        if (n->op == RX_STAR)
            base_buf_putc(b, '*');
        else if (n->op == RX_PLUS)
            base_buf_putc(b, '+');
        else if (n->op == RX_QUEST)
            base_buf_putc(b, '?');
        else if (n->max == n->min)
            base_buf_printf(b, "{%d}", n->min);
        else if (n->max < 0)
            base_buf_printf(b, "{%d,}", n->min);
        else
            base_buf_printf(b, "{%d,%d}", n->min, n->max);
        if (n->nongreedy) base_buf_putc(b, '?');
        if (atom) base_buf_putc(b, ')');
        return;
    case RX_CAT:
        if (atom) base_buf_puts(b, "(?:");
        for (size_t i = 0; i < n->nsub; i++) emit(b, n->sub[i], capture, 0);
        if (atom) base_buf_putc(b, ')');
        return;
    case RX_ALT:
        base_buf_puts(b, "(?:");
        for (size_t i = 0; i < n->nsub; i++) {
            if (i) base_buf_putc(b, '|');
            emit(b, n->sub[i], capture, 0);
        }
        base_buf_putc(b, ')');
        return;
    default: return;
    }
}

/* ---- fast path construction ---------------------------------------- */

typedef struct gl { /* a glob under construction */
    felem *e;
    size_t n;
} gl;

typedef struct glist {
    gl *g;
    size_t n;
} glist;

typedef struct fctx {
    base_arena *a;
    size_t elems;
} fctx;

static int fl_alloc(fctx *x, glist *out, size_t n) {
    out->n = n;
    out->g = n ? base_arena_alloc(x->a, n * sizeof *out->g) : NULL;
    return n && !out->g ? -1 : 0;
}

static int fl_one(fctx *x, glist *out, const felem *e) {
    if (fl_alloc(x, out, 1) < 0) return -1;
    out->g[0].n = e ? 1 : 0;
    out->g[0].e = NULL;
    if (e) {
        if (!(out->g[0].e = base_arena_alloc(x->a, sizeof *e))) return -1;
        out->g[0].e[0] = *e;
    }
    x->elems += e ? 1 : 0;
    return x->elems > FAST_MAX_ELEMS ? -1 : 0;
}

static int fl_union(fctx *x, glist *acc, const glist *add) {
    if ((uint64_t)acc->n + add->n > FAST_MAX_GLOBS) return -1;
    gl *g = base_arena_alloc(x->a, (acc->n + add->n) * sizeof *g + 1);
    if (!g) return -1;
    if (acc->n) memcpy(g, acc->g, acc->n * sizeof *g);
    if (add->n) memcpy(g + acc->n, add->g, add->n * sizeof *g);
    acc->g = g;
    acc->n += add->n;
    return 0;
}

static int fl_product(fctx *x, glist *acc, const glist *add) {
    uint64_t n = (uint64_t)acc->n * add->n;
    if (n > FAST_MAX_GLOBS) return -1;
    glist out;
    if (fl_alloc(x, &out, (size_t)n) < 0) return -1;
    size_t k = 0;
    for (size_t i = 0; i < acc->n; i++)
        for (size_t j = 0; j < add->n; j++) {
            gl *g = &out.g[k++];
            g->n = acc->g[i].n + add->g[j].n;
            x->elems += g->n;
            if (x->elems > FAST_MAX_ELEMS) return -1;
            g->e = g->n ? base_arena_alloc(x->a, g->n * sizeof *g->e) : NULL;
            if (g->n && !g->e) return -1;
            if (acc->g[i].n) memcpy(g->e, acc->g[i].e, acc->g[i].n * sizeof *g->e);
            if (add->g[j].n) memcpy(g->e + acc->g[i].n, add->g[j].e, add->g[j].n * sizeof *g->e);
        }
    *acc = out;
    return 0;
}

static int fold_sensitive(uint32_t r) {
    return r == 'k' || r == 'K' || r == 's' || r == 'S';
}

static int lit_elem(fctx *x, const uint32_t *runes, size_t n, int fold, felem *ret) {
    int has_letter = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t r = runes[i];
        if (r == 0xFFFD || is_surrogate(r)) return -1;
        if (fold) {
            if (r >= 0x80 || fold_sensitive(r)) return -1;
            if ((r | 0x20) >= 'a' && (r | 0x20) <= 'z') has_letter = 1;
        }
    }
    uint8_t *p = base_arena_alloc(x->a, n * 4 + 1);
    if (!p) return -1;
    size_t len = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t r = runes[i];
        if (fold && r >= 'A' && r <= 'Z') r += 32;
        len += base_utf8_encode(r, p + len);
    }
    *ret = (felem){(uint8_t)(has_letter ? E_ILIT : E_LIT), 0, (uint32_t)len, p};
    return 0;
}

static int expand(fctx *x, const labels__rx_node *n, glist *out) {
    switch (n->op) {
    case RX_EMPTY: return fl_one(x, out, NULL);
    case RX_LIT: {
        felem e;
        if (lit_elem(x, n->runes, n->nrunes, n->fold, &e) < 0) return -1;
        return fl_one(x, out, &e);
    }
    case RX_ANY: {
        felem e = {E_ANY1, n->dotnl, 0, NULL};
        return fl_one(x, out, &e);
    }
    case RX_CLASS: {
        const labels__rx_class *c = n->cls;
        if (n->fold || c->neg || c->nprops) return -1;
        uint64_t count = 0;
        for (size_t i = 0; i < c->nranges; i++) count += c->ranges[2 * i + 1] - c->ranges[2 * i] + 1;
        if (count == 0 || count > FAST_CLASS_MAX) return -1;
        out->n = 0;
        out->g = NULL;
        for (size_t i = 0; i < c->nranges; i++)
            for (uint32_t r = c->ranges[2 * i]; r <= c->ranges[2 * i + 1]; r++) {
                felem e;
                glist one;
                if (lit_elem(x, &r, 1, 0, &e) < 0 || fl_one(x, &one, &e) < 0 || fl_union(x, out, &one) < 0)
                    return -1;
            }
        return 0;
    }
    case RX_CAP: return expand(x, n->sub[0], out);
    case RX_STAR:
    case RX_PLUS: {
        const labels__rx_node *s = n->sub[0];
        if (s->op != RX_ANY) return -1;
        felem any1 = {E_ANY1, s->dotnl, 0, NULL}, star = {E_STAR, s->dotnl, 0, NULL};
        if (n->op == RX_STAR) return fl_one(x, out, &star);
        glist tail;
        if (fl_one(x, out, &any1) < 0 || fl_one(x, &tail, &star) < 0) return -1;
        return fl_product(x, out, &tail);
    }
    case RX_QUEST: {
        glist empty;
        if (expand(x, n->sub[0], out) < 0 || fl_one(x, &empty, NULL) < 0) return -1;
        return fl_union(x, out, &empty);
    }
    case RX_REPEAT: {
        /* x{n} for small n, and .{n,m} / .{n,} */
        const labels__rx_node *s = n->sub[0];
        if (s->op == RX_ANY) {
            felem any1 = {E_ANY1, s->dotnl, 0, NULL}, star = {E_STAR, s->dotnl, 0, NULL};
            if (n->max >= 0 && n->max - n->min > 4) return -1;
            if (n->min > 16) return -1;
            if (fl_one(x, out, NULL) < 0) return -1;
            for (int i = 0; i < n->min; i++) {
                glist one;
                if (fl_one(x, &one, &any1) < 0 || fl_product(x, out, &one) < 0) return -1;
            }
            if (n->max < 0) {
                glist one;
                return fl_one(x, &one, &star) < 0 ? -1 : fl_product(x, out, &one);
            }
            for (int i = n->min; i < n->max; i++) { /* (.)? repeated max-min times */
                glist one, empty;
                if (fl_one(x, &one, &any1) < 0 || fl_one(x, &empty, NULL) < 0 ||
                    fl_union(x, &one, &empty) < 0 || fl_product(x, out, &one) < 0)
                    return -1;
            }
            return 0;
        }
        if (n->max != n->min || n->min > 4) return -1;
        glist sub;
        if (fl_one(x, out, NULL) < 0 || expand(x, s, &sub) < 0) return -1;
        for (int i = 0; i < n->min; i++)
            if (fl_product(x, out, &sub) < 0) return -1;
        return 0;
    }
    case RX_CAT:
        if (fl_one(x, out, NULL) < 0) return -1;
        for (size_t i = 0; i < n->nsub; i++) {
            glist sub;
            if (expand(x, n->sub[i], &sub) < 0 || fl_product(x, out, &sub) < 0) return -1;
        }
        return 0;
    case RX_ALT: { /* expand every branch, then copy once (no quadratic unions) */
        glist *subs = base_arena_alloc(x->a, n->nsub * sizeof *subs);
        if (!subs) return -1;
        size_t total = 0;
        for (size_t i = 0; i < n->nsub; i++) {
            if (expand(x, n->sub[i], &subs[i]) < 0) return -1;
            total += subs[i].n;
            if (total > FAST_MAX_GLOBS) return -1;
        }
        if (fl_alloc(x, out, total) < 0) return -1;
        size_t k = 0;
        for (size_t i = 0; i < n->nsub; i++) {
            if (subs[i].n) memcpy(out->g + k, subs[i].g, subs[i].n * sizeof *out->g);
            k += subs[i].n;
        }
        return 0;
    }
    default: return -1;
    }
}

/* Merges adjacent literals of one kind and adjacent stars. */
static int normalize(fctx *x, gl *g) {
    size_t w = 0;
    for (size_t i = 0; i < g->n; i++) {
        felem e = g->e[i];
        if (w > 0) {
            felem *prev = &g->e[w - 1];
            if ((e.kind == E_LIT || e.kind == E_ILIT) && prev->kind == e.kind) {
                if (e.len == 0) continue;
                uint8_t *p = base_arena_alloc(x->a, (size_t)prev->len + e.len + 1);
                if (!p) return -1;
                memcpy(p, prev->p, prev->len);
                memcpy(p + prev->len, e.p, e.len);
                prev->p = p;
                prev->len += e.len;
                continue;
            }
            if (e.kind == E_STAR && prev->kind == E_STAR) {
                prev->nl |= e.nl;
                continue;
            }
        }
        if ((e.kind == E_LIT || e.kind == E_ILIT) && e.len == 0) continue;
        g->e[w++] = e;
    }
    g->n = w;
    return 0;
}

static int str_cmp(const void *a, const void *b) {
    return labels__strcmp(*(const base_str *)a, *(const base_str *)b);
}

static void fast_free(fastpath *f) {
    if (!f) return;
    for (size_t i = 0; i < sizeof f->mem / sizeof *f->mem; i++) free(f->mem[i]);
    free(f);
}

static uint8_t shape_of(const fglob *g) {
    const felem *e = g->e;
    if (g->n == 1 && e[0].kind == E_ILIT) return G_EXACTI;
    if (g->n == 1 && e[0].kind == E_STAR) return G_ANY;
    if (g->n == 2 && e[0].kind == E_ANY1 && e[1].kind == E_STAR) return G_NONEMPTY;
    if (g->n == 2 && e[0].kind == E_LIT && e[1].kind == E_STAR) return G_PREFIX;
    if (g->n == 2 && e[0].kind == E_STAR && e[1].kind == E_LIT) return G_SUFFIX;
    if (g->n == 3 && e[0].kind == E_STAR && e[1].kind == E_LIT && e[2].kind == E_STAR) return G_CONTAINS;
    if (g->n == 3 && e[0].kind == E_LIT && e[1].kind == E_STAR && e[2].kind == E_LIT) return G_PRESUF;
    return G_GENERIC;
}

/* Builds the fast path of a parsed tree, or returns NULL (none, or out of
 * memory: either way PCRE2 does the work). */
static fastpath *fast_build(base_arena *a, const labels__rx_node *root) {
    if (root->op != RX_CAT || root->nsub < 2) return NULL;
    size_t from = 0, to = root->nsub;
    while (from < to && root->sub[from]->op == RX_BOT) from++;
    while (to > from && root->sub[to - 1]->op == RX_EOT) to--;
    if (from == 0 || to == root->nsub) return NULL;
    fctx x = {a, 0};
    glist all;
    if (fl_one(&x, &all, NULL) < 0) return NULL;
    for (size_t i = from; i < to; i++) {
        glist sub;
        if (expand(&x, root->sub[i], &sub) < 0 || fl_product(&x, &all, &sub) < 0) return NULL;
    }
    size_t nset = 0, nglob = 0, bytes = 0, elems = 0;
    int nl = -1;
    for (size_t i = 0; i < all.n; i++) {
        gl *g = &all.g[i];
        if (normalize(&x, g) < 0) return NULL;
        int wild = 0, ilit = 0;
        for (size_t k = 0; k < g->n; k++) {
            if (g->e[k].kind == E_ANY1 || g->e[k].kind == E_STAR) {
                if (nl >= 0 && nl != g->e[k].nl) return NULL;
                nl = g->e[k].nl;
                wild = 1;
            }
            ilit |= g->e[k].kind == E_ILIT;
            bytes += g->e[k].len;
        }
        if (wild || ilit) {
            nglob++;
            elems += g->n;
        } else {
            nset++;
        }
    }
    if (nglob > FAST_MAX_WILD) return NULL;
    /* Without (?s), wildcards reject subjects containing "\n": only sound
     * if no literal next to them contains one. */
    if (nl == 0)
        for (size_t i = 0; i < all.n; i++) {
            gl *g = &all.g[i];
            int wild = 0;
            for (size_t k = 0; k < g->n; k++) wild |= g->e[k].kind == E_ANY1 || g->e[k].kind == E_STAR;
            for (size_t k = 0; wild && k < g->n; k++)
                if (g->e[k].len && memchr(g->e[k].p, '\n', g->e[k].len)) return NULL;
        }
    fastpath *f = labels__calloc(1, sizeof *f);
    if (!f) return NULL;
    f->nl = nl > 0;
    uint8_t *blob = labels__malloc(bytes + 1);
    f->set = labels__malloc((nset ? nset : 1) * sizeof *f->set);
    f->globs = labels__malloc((nglob ? nglob : 1) * sizeof *f->globs);
    felem *ev = labels__malloc((elems ? elems : 1) * sizeof *ev);
    f->mem[0] = blob;
    f->mem[1] = f->set;
    f->mem[2] = f->globs;
    f->mem[3] = ev;
    if (!blob || !f->set || !f->globs || !ev) {
        fast_free(f);
        return NULL;
    }
    size_t off = 0;
    for (size_t i = 0; i < all.n; i++) {
        gl *g = &all.g[i];
        int lit_only = 1;
        for (size_t k = 0; k < g->n; k++) lit_only &= g->e[k].kind == E_LIT;
        if (lit_only) {
            size_t start = off;
            for (size_t k = 0; k < g->n; k++) {
                memcpy(blob + off, g->e[k].p, g->e[k].len);
                off += g->e[k].len;
            }
            f->set[f->nset++] = (base_str){(const char *)blob + start, off - start};
            continue;
        }
        fglob *fg = &f->globs[f->nglob++];
        fg->e = ev;
        fg->n = g->n;
        fg->wild = 0;
        for (size_t k = 0; k < g->n; k++) fg->wild |= g->e[k].kind == E_ANY1 || g->e[k].kind == E_STAR;
        for (size_t k = 0; k < g->n; k++) {
            felem e = g->e[k];
            if (e.len) {
                memcpy(blob + off, e.p, e.len);
                e.p = blob + off;
                off += e.len;
            }
            *ev++ = e;
        }
        fg->shape = shape_of(fg);
    }
    if (f->nset > 1) {
        qsort(f->set, f->nset, sizeof *f->set, str_cmp);
        size_t w = 1;
        for (size_t i = 1; i < f->nset; i++)
            if (!base_str_eq(f->set[i], f->set[w - 1])) f->set[w++] = f->set[i];
        f->nset = w;
    }
    return f;
}

/* ---- fast path matching -------------------------------------------- */

static size_t rune_width(const uint8_t *p, size_t n) {
    if (p[0] < 0x80) return 1;
    uint32_t r;
    return labels__utf8_decode(p, n, &r);
}

static int lit_at(const felem *e, const uint8_t *s, size_t n, size_t pos) {
    if (n - pos < e->len) return 0;
    if (e->kind == E_LIT) return memcmp(s + pos, e->p, e->len) == 0;
    for (size_t i = 0; i < e->len; i++) {
        uint8_t c = s[pos + i];
        if (c >= 'A' && c <= 'Z') c += 32;
        if (c != e->p[i]) return 0;
    }
    return 1;
}

/* Finds needle in [s, s + n): memchr on the first byte, then memcmp
 * (label values are short; this beats memmem's setup cost). */
static const uint8_t *find(const uint8_t *s, size_t n, const uint8_t *needle, size_t len) {
    if (len == 0) return s;
    if (len > n) return NULL;
    const uint8_t *end = s + n - len + 1;
    for (const uint8_t *p = s; p < end; p++) {
        p = memchr(p, needle[0], (size_t)(end - p));
        if (!p) return NULL;
        if (memcmp(p + 1, needle + 1, len - 1) == 0) return p;
    }
    return NULL;
}

/* Matches elements e[0..k) (no stars) at pos; returns the end or SIZE_MAX. */
static size_t seg_at(const felem *e, size_t k, const uint8_t *s, size_t n, size_t pos) {
    for (size_t i = 0; i < k; i++) {
        if (e[i].kind == E_ANY1) {
            if (pos >= n) return SIZE_MAX;
            pos += rune_width(s + pos, n - pos);
        } else {
            if (!lit_at(&e[i], s, n, pos)) return SIZE_MAX;
            pos += e[i].len;
        }
    }
    return pos;
}

/* Classic wildcard matching, backtracking to the last star only: exact
 * for literals, one-rune and any-run wildcards. O(n * m). */
static int glob_backtrack(const felem *e, size_t ne, const uint8_t *s, size_t n, size_t p) {
    size_t i = 0, star_i = SIZE_MAX, star_p = 0;
    for (;;) {
        if (i < ne) {
            if (e[i].kind == E_STAR) {
                star_i = i++;
                star_p = p;
                continue;
            }
            if (e[i].kind == E_ANY1) {
                if (p < n) {
                    p += rune_width(s + p, n - p);
                    i++;
                    continue;
                }
            } else if (lit_at(&e[i], s, n, p)) {
                p += e[i].len;
                i++;
                continue;
            }
        } else if (p == n) {
            return 1;
        }
        if (star_i == SIZE_MAX || star_p >= n) return 0;
        star_p += rune_width(s + star_p, n - star_p);
        p = star_p;
        i = star_i + 1;
    }
}

/* A glob with at least one star: the part before the first star is
 * anchored at the start; a literal-only part after the last star is
 * anchored at the end; each segment between stars is placed at its
 * leftmost match (optimal when stars absorb anything), located with
 * find() when it starts with a case-sensitive literal. A tail with
 * one-rune wildcards falls back to backtracking. */
static int glob_generic(const fglob *g, const uint8_t *s, size_t n) {
    const felem *e = g->e;
    size_t first = 0, last = g->n;
    while (first < g->n && e[first].kind != E_STAR) first++;
    if (first == g->n) return seg_at(e, g->n, s, n, 0) == n;
    size_t cur = seg_at(e, first, s, n, 0);
    if (cur == SIZE_MAX) return 0;
    while (e[last - 1].kind != E_STAR) last--;
    size_t end = n;
    for (size_t i = last; i < g->n; i++)
        if (e[i].kind == E_ANY1) return glob_backtrack(e + first, g->n - first, s, n, cur);
    for (size_t i = g->n; i > last; i--) {
        if (end < cur + e[i - 1].len || !lit_at(&e[i - 1], s, n, end - e[i - 1].len)) return 0;
        end -= e[i - 1].len;
    }
    /* segments between stars, each [a, b) with no star inside */
    for (size_t a = first + 1; a < last;) {
        size_t b = a;
        while (e[b].kind != E_STAR) b++;
        if (b == a) {
            a++;
            continue;
        }
        size_t pos = cur, got = SIZE_MAX;
        while (pos <= end) {
            if (e[a].kind == E_LIT) {
                const uint8_t *f = find(s + pos, end - pos, e[a].p, e[a].len);
                if (!f) return 0;
                pos = (size_t)(f - s);
            }
            got = seg_at(e + a, b - a, s, end, pos);
            if (got != SIZE_MAX) break;
            if (pos >= end) return 0;
            pos += rune_width(s + pos, end - pos);
        }
        if (got == SIZE_MAX) return 0;
        cur = got;
        a = b + 1;
    }
    return cur <= end;
}

static int glob_match(const fglob *g, const uint8_t *s, size_t n) {
    const felem *e = g->e;
    switch (g->shape) {
    case G_ANY: return 1;
    case G_NONEMPTY: return n > 0;
    case G_EXACTI: return n == e[0].len && lit_at(&e[0], s, n, 0);
    case G_PREFIX: return n >= e[0].len && memcmp(s, e[0].p, e[0].len) == 0;
    case G_SUFFIX: return n >= e[1].len && memcmp(s + n - e[1].len, e[1].p, e[1].len) == 0;
    case G_CONTAINS: return find(s, n, e[1].p, e[1].len) != NULL;
    case G_PRESUF:
        return n >= (size_t)e[0].len + e[2].len && memcmp(s, e[0].p, e[0].len) == 0 &&
               memcmp(s + n - e[2].len, e[2].p, e[2].len) == 0;
    default: return glob_generic(g, s, n);
    }
}

static int set_has(const fastpath *f, base_str s) {
    if (f->nset <= 8) {
        for (size_t i = 0; i < f->nset; i++)
            if (base_str_eq(f->set[i], s)) return 1;
        return 0;
    }
    size_t lo = 0, hi = f->nset;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int c = labels__strcmp(f->set[mid], s);
        if (c == 0) return 1;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return 0;
}

static int fast_match(const fastpath *f, base_str s) {
    const uint8_t *p = (const uint8_t *)(s.p ? s.p : "");
    if (f->nset && set_has(f, (base_str){(const char *)p, s.n})) return 1;
    int has_nl = !f->nl && s.n && memchr(p, '\n', s.n);
    for (size_t i = 0; i < f->nglob; i++)
        if (!(has_nl && f->globs[i].wild) && glob_match(&f->globs[i], p, s.n)) return 1;
    return 0;
}

/* ---- compile ------------------------------------------------------- */

void labels_regex_free(labels_regex *re) {
    if (!re) return;
    pcre2_code_free(re->code);
    free(re->pattern);
    free(re->names);
    free(re->names_blob);
    fast_free(re->fast);
    free(re);
}

static void pcre_errmsg(char *out, size_t outlen, int code) {
    PCRE2_UCHAR buf[160];
    if (pcre2_get_error_message(code, buf, sizeof buf) < 0) strcpy((char *)buf, "unknown PCRE2 error");
    labels__errf(out, outlen, "%s", (const char *)buf);
}

int labels_regex_compile(base_str pattern, unsigned flags, labels_regex **ret, char *err, size_t errlen) {
    if (pattern.n > LABELS_REGEX_MAX) {
        labels__errf(err, errlen, "error parsing regexp: expression too large: longer than %zu bytes",
                     (size_t)LABELS_REGEX_MAX);
        return BASE_E_LIMIT;
    }
    base_buf wrapped;
    base_buf_init(&wrapped, 0);
    base_buf_puts(&wrapped, "^(?:");
    base_buf_append(&wrapped, pattern.p, pattern.n);
    base_buf_puts(&wrapped, ")$");
    if (base_buf_err(&wrapped)) {
        base_buf_free(&wrapped);
        return BASE_E_NOMEM;
    }
    base_arena a;
    base_arena_init(&a, 16384, ARENA_LIMIT);
    labels__rx_tree tree;
    int rc = labels__rx_parse(&a, (base_str){wrapped.data, wrapped.len}, &tree, err, errlen);
    int parsed = rc == 0;
    labels_regex *re = NULL;
    base_buf pat;
    base_buf_init(&pat, 0);
    if (rc < 0) goto out;
    rc = BASE_E_NOMEM;
    if (!(re = labels__calloc(1, sizeof *re))) goto out;
    re->flags = flags;
    if (!(flags & LABELS_RE_NOFAST)) re->fast = fast_build(&a, tree.root);
    int capture = (flags & LABELS_RE_CAPTURE) != 0;
    if (capture && tree.ncap > 0) {
        size_t blob = 0;
        for (int i = 0; i < tree.ncap; i++) blob += tree.names[i].n;
        re->ngroups = (size_t)tree.ncap;
        re->names = labels__calloc((size_t)tree.ncap, sizeof *re->names);
        re->names_blob = labels__malloc(blob + 1);
        if (!re->names || !re->names_blob) goto out;
        size_t off = 0;
        for (int i = 0; i < tree.ncap; i++) {
            memcpy(re->names_blob + off, tree.names[i].p, tree.names[i].n);
            re->names[i] = (base_str){re->names_blob + off, tree.names[i].n};
            off += tree.names[i].n;
        }
    }
    emit(&pat, tree.root, capture, 0);
    if (base_buf_err(&pat)) goto out;
    re->pattern_len = pat.len;
    re->pattern = base_buf_steal(&pat, NULL);
    if (!re->pattern) {
        if (!(re->pattern = labels__calloc(1, 1))) goto out;
    }
    pcre2_compile_context *cc = pcre2_compile_context_create(gctx());
    if (!cc) goto out;
    pcre2_set_newline(cc, PCRE2_NEWLINE_LF);
    pcre2_set_parens_nest_limit(cc, PARENS_LIMIT);
    int ecode;
    PCRE2_SIZE eoff;
    uint32_t opts = PCRE2_UTF | PCRE2_NO_UTF_CHECK | PCRE2_ALT_CIRCUMFLEX | PCRE2_NEVER_BACKSLASH_C |
                    PCRE2_NEVER_UCP | (capture ? 0 : PCRE2_NO_AUTO_CAPTURE);
    re->code = pcre2_compile((PCRE2_SPTR)re->pattern, re->pattern_len, opts, &ecode, &eoff, cc);
    pcre2_compile_context_free(cc);
    if (!re->code) {
        /* Only size and nesting limits can fail a pattern we generated. */
        if (ecode == PCRE2_ERROR_HEAP_FAILED) goto out;
        if (!re->fast || capture) {
            char why[120];
            pcre_errmsg(why, sizeof why, ecode);
            labels__errf(err, errlen, "error parsing regexp: expression too large: `%s` (PCRE2: %s)",
                         wrapped.data, why);
            rc = BASE_E_LIMIT;
            goto out;
        }
    } else {
        pcre2_jit_compile(re->code, PCRE2_JIT_COMPLETE); /* the interpreter serves if this fails */
    }
    rc = 0;
out:
    if (rc == BASE_E_NOMEM && parsed) labels__errf(err, errlen, "out of memory compiling regexp");
    base_buf_free(&pat);
    base_buf_free(&wrapped);
    base_arena_free(&a);
    if (rc < 0) {
        labels_regex_free(re);
        return rc;
    }
    *ret = re;
    return 0;
}

/* ---- PCRE2 matching ------------------------------------------------ */

static int ensure_md(tstate *t, uint32_t pairs) {
    if (t->md_pairs >= pairs) return 0;
    pcre2_match_data *md = pcre2_match_data_create(pairs, gctx());
    if (!md) return BASE_E_NOMEM;
    pcre2_match_data_free(t->md);
    t->md = md;
    t->md_pairs = pairs;
    return 0;
}

/* Copies s with every invalid byte replaced by U+FFFD into scratch. */
static int sanitize(tstate *t, const uint8_t *s, size_t n, size_t *ret_len) {
    if (n > SIZE_MAX / 3) return BASE_E_NOMEM;
    if (t->scratch_cap < n * 3 + 1) {
        uint8_t *p = labels__realloc(t->scratch, n * 3 + 1);
        if (!p) return BASE_E_NOMEM;
        t->scratch = p;
        t->scratch_cap = n * 3 + 1;
    }
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        uint32_t r;
        size_t w = labels__utf8_decode(s + i, n - i, &r);
        if (r == 0xFFFD && w == 1) {
            memcpy(t->scratch + o, "\xEF\xBF\xBD", 3);
            o += 3;
        } else {
            memcpy(t->scratch + o, s + i, w);
            o += w;
        }
        i += w;
    }
    *ret_len = o;
    return 0;
}

static size_t unmap(const uint8_t *s, size_t n, size_t off) {
    size_t i = 0, j = 0;
    while (j < off && i < n) {
        uint32_t r;
        size_t w = labels__utf8_decode(s + i, n - i, &r);
        j += (r == 0xFFFD && w == 1) ? 3 : w;
        i += w;
    }
    return i;
}

static int is_limit(int rc) {
    return rc == PCRE2_ERROR_MATCHLIMIT || rc == PCRE2_ERROR_DEPTHLIMIT || rc == PCRE2_ERROR_HEAPLIMIT ||
           rc == PCRE2_ERROR_JIT_STACKLIMIT;
}

static int dfa_match(tstate *t, const labels_regex *re, const uint8_t *s, size_t n) {
    for (size_t want = t->ws_n ? t->ws_n : 1024; want <= (1u << 20); want *= 2) {
        if (t->ws_n < want) {
            int *ws = labels__realloc(t->ws, want * sizeof *ws);
            if (!ws) return BASE_E_NOMEM;
            t->ws = ws;
            t->ws_n = want;
        }
        int rc = pcre2_dfa_match(re->code, s, n, 0, PCRE2_NO_UTF_CHECK, t->md, t->mctx, t->ws, t->ws_n);
        if (rc >= 0) return 1;
        if (rc == PCRE2_ERROR_NOMATCH) return 0;
        if (rc == PCRE2_ERROR_NOMEMORY) return BASE_E_NOMEM;
        if (rc != PCRE2_ERROR_DFA_WSSIZE) return BASE_E_LIMIT;
    }
    return BASE_E_LIMIT;
}

static int pcre_exec(const labels_regex *re, base_str subj, labels_span *spans, size_t nspans) {
    if (!re->code) return BASE_E_UNSUPPORTED;
    tstate *t = tstate_get();
    if (!t) return BASE_E_NOMEM;
    const uint8_t *s = (const uint8_t *)(subj.p ? subj.p : "");
    size_t n = subj.n, sn = n;
    const uint8_t *sp = s;
    int mapped = 0;
    if (labels__utf8_invalid_at(s, n) != n) {
        int rc = sanitize(t, s, n, &sn);
        if (rc < 0) return rc;
        sp = t->scratch;
        mapped = 1;
    }
    if (nspans && ensure_md(t, (uint32_t)re->ngroups + 1) < 0) return BASE_E_NOMEM;
    int rc = pcre2_match(re->code, sp, sn, 0, PCRE2_NO_UTF_CHECK, t->md, t->mctx);
    if (rc == PCRE2_ERROR_NOMATCH) return 0;
    if (rc == PCRE2_ERROR_NOMEMORY) return BASE_E_NOMEM;
    if (rc < 0) {
        if (!nspans && is_limit(rc)) return dfa_match(t, re, sp, sn);
        return BASE_E_LIMIT;
    }
    if (nspans) {
        PCRE2_SIZE *ov = pcre2_get_ovector_pointer(t->md);
        uint32_t have = pcre2_get_ovector_count(t->md);
        for (size_t i = 0; i < nspans; i++) {
            labels_span sp0 = {SIZE_MAX, SIZE_MAX};
            if (i < have && i <= re->ngroups && ov[2 * i] != PCRE2_UNSET) {
                sp0.start = mapped ? unmap(s, n, ov[2 * i]) : ov[2 * i];
                sp0.end = mapped ? unmap(s, n, ov[2 * i + 1]) : ov[2 * i + 1];
            }
            spans[i] = sp0;
        }
    }
    return 1;
}

int labels__regex_match_pcre(const labels_regex *re, base_str s) {
    return pcre_exec(re, s, NULL, 0);
}

int labels__regex_match_fast(const labels_regex *re, base_str s) {
    return re->fast ? fast_match(re->fast, s) : -1;
}

base_str labels__regex_pcre_pattern(const labels_regex *re) {
    return (base_str){re->pattern, re->pattern_len};
}

int labels_regex_match(const labels_regex *re, base_str s) {
    if (re->fast) return fast_match(re->fast, s);
    return pcre_exec(re, s, NULL, 0);
}

int labels_regex_exec(const labels_regex *re, base_str s, labels_span *ret_spans, size_t n) {
    if (n == 0) return labels_regex_match(re, s);
    return pcre_exec(re, s, ret_spans, n);
}

size_t labels_regex_groups(const labels_regex *re) {
    return re->ngroups;
}

int labels_regex_group_index(const labels_regex *re, base_str name) {
    if (name.n == 0) return -1;
    for (size_t i = 0; i < re->ngroups; i++)
        if (base_str_eq(re->names[i], name)) return (int)i + 1;
    return -1;
}

int labels_regex_literals(const labels_regex *re, const base_str **ret_vals, size_t *ret_n) {
    if (!re->fast || re->fast->nglob) return 0;
    *ret_vals = re->fast->set;
    *ret_n = re->fast->nset;
    return 1;
}

int labels_regex_is_fast(const labels_regex *re) {
    return re->fast != NULL;
}

/* ---- Go's Regexp.Expand -------------------------------------------- */

static int name_char(const uint8_t *p, size_t n, size_t *w) {
    if (p[0] < 0x80) {
        *w = 1;
        return (p[0] >= '0' && p[0] <= '9') || (p[0] >= 'a' && p[0] <= 'z') || (p[0] >= 'A' && p[0] <= 'Z') ||
               p[0] == '_';
    }
    /* Go accepts Unicode letters and digits; any other valid non-ASCII
     * rune is treated as one too (no group name can contain it anyway). */
    uint32_t r;
    *w = labels__utf8_decode(p, n, &r);
    return !(r == 0xFFFD && *w == 1);
}

void labels_regex_expand(const labels_regex *re, base_str tmpl, base_str s, const labels_span *spans,
                         size_t n, base_buf *out) {
    const uint8_t *t = (const uint8_t *)tmpl.p;
    size_t len = tmpl.n, i = 0;
    while (i < len) {
        const uint8_t *d = memchr(t + i, '$', len - i);
        if (!d) break;
        size_t k = (size_t)(d - t);
        base_buf_append(out, t + i, k - i);
        i = k + 1;
        if (i < len && t[i] == '$') {
            base_buf_putc(out, '$');
            i++;
            continue;
        }
        /* extract(): name or {name} */
        size_t j = i;
        int brace = 0;
        if (j < len && t[j] == '{') {
            brace = 1;
            j++;
        }
        size_t nstart = j, w;
        while (j < len && name_char(t + j, len - j, &w)) j += w;
        size_t nend = j;
        if (nend == nstart || (brace && (j >= len || t[j] != '}'))) {
            base_buf_putc(out, '$'); /* malformed: $ is literal */
            continue;
        }
        if (brace) j++;
        i = j;
        base_str name = {(const char *)t + nstart, nend - nstart};
        long num = 0;
        for (size_t q = 0; q < name.n; q++) {
            if (name.p[q] < '0' || name.p[q] > '9' || num >= 100000000) {
                num = -1;
                break;
            }
            num = num * 10 + (name.p[q] - '0');
        }
        if (name.p[0] == '0' && name.n > 1) num = -1;
        if (num >= 0) {
            if ((size_t)num < n && spans[num].start != SIZE_MAX)
                base_buf_append(out, s.p + spans[num].start, spans[num].end - spans[num].start);
        } else if (re) {
            for (size_t g = 0; g < re->ngroups; g++)
                if (base_str_eq(re->names[g], name) && g + 1 < n && spans[g + 1].start != SIZE_MAX) {
                    base_buf_append(out, s.p + spans[g + 1].start, spans[g + 1].end - spans[g + 1].start);
                    break;
                }
        }
    }
    if (i < len) base_buf_append(out, t + i, len - i);
}
