/* template_parse.c -- Go's text/template lexer and parser (lex.go and
 * parse/parse.go of Go 1.19, which Prometheus 2.42 is built with).
 *
 * Design: the lexer runs over the whole text first and yields an array of
 * items ending in EOF or one error item, as Go's lexer goroutine would;
 * the parser walks that array with Go's peek/backup discipline, so that
 * error lines match ("template: NAME:LINE: MSG", LINE being the line of
 * the furthest item read). Variables are checked at parse time as Go
 * does; functions must be among the names the executor knows.
 * Invariants: every node and string lives in the template's arena;
 * nesting of actions and parentheses is capped at TT_MAX_DEPTH.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/num.h"
#include "base/utf8.h"
#include "rules/template_int.h"

typedef enum {
    I_ERROR,
    I_EOF,
    I_TEXT,
    I_LDELIM,
    I_RDELIM,
    I_SPACE,
    I_PIPE,
    I_LPAREN,
    I_RPAREN,
    I_CHAR,
    I_STRING,
    I_RAWSTRING,
    I_CHARCONST,
    I_NUMBER,
    I_BOOL,
    I_DOT,
    I_FIELD,
    I_VARIABLE,
    I_IDENT,
    I_DECLARE,
    I_ASSIGN,
    I_KEYWORD, /* marker: everything after is a keyword */
    I_BLOCK,
    I_BREAK,
    I_CONTINUE,
    I_DEFINE,
    I_ELSE,
    I_END,
    I_IF,
    I_NIL,
    I_RANGE,
    I_TEMPLATE,
    I_WITH,
} itype;

typedef struct item {
    itype t;
    size_t pos;
    const char *v;
    size_t n;
    int line;
} item;

typedef struct lexer {
    const char *in;
    size_t len, pos, start;
    int line, start_line;
    int paren;
    item *items;
    size_t nitems, cap;
    int failed;
    char errbuf[160];
} lexer;

static int push(lexer *l, itype t, const char *v, size_t n, size_t pos, int line) {
    if (l->nitems == l->cap) {
        size_t nc = l->cap ? l->cap * 2 : 64;
        item *ni = realloc(l->items, nc * sizeof *ni);
        if (!ni) return BASE_E_NOMEM;
        l->items = ni;
        l->cap = nc;
    }
    l->items[l->nitems++] = (item){t, pos, v, n, line};
    return 0;
}

static int emit(lexer *l, itype t) {
    int rc = push(l, t, l->in + l->start, l->pos - l->start, l->start, l->start_line);
    l->start = l->pos;
    l->start_line = l->line;
    return rc;
}

static void lex_errorf(lexer *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void lex_errorf(lexer *l, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(l->errbuf, sizeof l->errbuf, fmt, ap);
    va_end(ap);
    l->failed = 1;
    (void)push(l, I_ERROR, l->errbuf, strlen(l->errbuf), l->start, l->start_line);
}

static int is_space(int c) {
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}
static int is_alnum(int c) {
    return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c >= 0x80;
}
static int at(const lexer *l, size_t off, const char *s) {
    size_t n = strlen(s);
    return l->pos + off + n <= l->len && memcmp(l->in + l->pos + off, s, n) == 0;
}
static int peekc(const lexer *l) {
    return l->pos < l->len ? (unsigned char)l->in[l->pos] : -1;
}
static void adv(lexer *l, size_t n) {
    for (size_t i = 0; i < n && l->pos < l->len; i++)
        if (l->in[l->pos++] == '\n') l->line++;
}

/* Go's %#U of the rune at pos. */
static void fmt_rune(char *out, size_t cap, const lexer *l, size_t *ret_w) {
    uint32_t r = 0;
    size_t w = base_utf8_decode((const unsigned char *)l->in + l->pos, l->len - l->pos, &r);
    if (w == 0) w = 1, r = 0xFFFD; /* Go's utf8.RuneError */
    *ret_w = w;
    if (r == 0xFFFD)
        snprintf(out, cap, "U+FFFD '\xef\xbf\xbd'");
    else if (r >= 0x20 && r != 0x7f && !(r >= 0x80 && r < 0xa0))
        snprintf(out, cap, "U+%04X '%.*s'", r, (int)w, l->in + l->pos);
    else
        snprintf(out, cap, "U+%04X", r);
}

static int at_terminator(const lexer *l) {
    int c = peekc(l);
    if (c < 0 || is_space(c)) return 1;
    switch (c) {
    case '.':
    case ',':
    case '|':
    case ':':
    case ')':
    case '(':
    case '}': return 1;
    }
    return 0;
}

static int at_right_delim(const lexer *l, int *trim) {
    if (at(l, 0, " -}}") || at(l, 0, "\t-}}") || at(l, 0, "\r-}}") || at(l, 0, "\n-}}")) {
        *trim = 1;
        return 1;
    }
    *trim = 0;
    return at(l, 0, "}}");
}

static int scan_number(lexer *l) {
    const char *digits = "0123456789_";
    if (peekc(l) == '+' || peekc(l) == '-') adv(l, 1);
    if (peekc(l) == '0' && l->pos + 1 < l->len) {
        int c = l->in[l->pos + 1];
        if (c == 'x' || c == 'X') {
            adv(l, 2);
            digits = "0123456789abcdefABCDEF_";
        } else if (c == 'o' || c == 'O') {
            adv(l, 2);
            digits = "01234567_";
        } else if (c == 'b' || c == 'B') {
            adv(l, 2);
            digits = "01_";
        }
    }
    while (peekc(l) > 0 && strchr(digits, peekc(l))) adv(l, 1);
    if (peekc(l) == '.') {
        adv(l, 1);
        while (peekc(l) > 0 && strchr(digits, peekc(l))) adv(l, 1);
    }
    if (strlen(digits) == 11 && (peekc(l) == 'e' || peekc(l) == 'E')) {
        adv(l, 1);
        if (peekc(l) == '+' || peekc(l) == '-') adv(l, 1);
        while (peekc(l) > 0 && strchr("0123456789_", peekc(l))) adv(l, 1);
    }
    if (strlen(digits) > 11 && (peekc(l) == 'p' || peekc(l) == 'P')) {
        adv(l, 1);
        if (peekc(l) == '+' || peekc(l) == '-') adv(l, 1);
        while (peekc(l) > 0 && strchr("0123456789_", peekc(l))) adv(l, 1);
    }
    if (peekc(l) == 'i') adv(l, 1);
    if (peekc(l) >= 0 && is_alnum(peekc(l))) {
        uint32_t r;
        size_t w = base_utf8_decode((const unsigned char *)l->in + l->pos, l->len - l->pos, &r);
        adv(l, w ? w : 1);
        return 0;
    }
    return 1;
}

/* Go's %q of a short string (the texts here are ASCII-ish). */
static void quote_into(char *out, size_t cap, const char *s, size_t n) {
    base_buf b = BASE_BUF_INIT;
    labels_quote(&b, (base_str){s, n});
    snprintf(out, cap, "%s", b.data ? b.data : "\"\"");
    base_buf_free(&b);
}

static const struct {
    const char *w;
    itype t;
} keywords[] = {{"block", I_BLOCK},
                {"break", I_BREAK},
                {"continue", I_CONTINUE},
                {"define", I_DEFINE},
                {"else", I_ELSE},
                {"end", I_END},
                {"if", I_IF},
                {"range", I_RANGE},
                {"nil", I_NIL},
                {"template", I_TEMPLATE},
                {"with", I_WITH},
                {"true", I_BOOL},
                {"false", I_BOOL}};

/* One action's inside, after the left delimiter; returns when the right
 * delimiter has been emitted (1: trim the following text) or on error. */
static int lex_action(lexer *l, int *ret_trim) {
    for (;;) {
        int trim;
        if (l->failed) return 0;
        if (at_right_delim(l, &trim)) {
            if (l->paren) {
                lex_errorf(l, "unclosed left paren");
                return 0;
            }
            if (trim) adv(l, 2);
            l->start = l->pos;
            l->start_line = l->line;
            adv(l, 2);
            if (emit(l, I_RDELIM)) return BASE_E_NOMEM;
            *ret_trim = trim;
            return 0;
        }
        int c = peekc(l);
        if (c < 0) {
            lex_errorf(l, "unclosed action");
            return 0;
        }
        if (is_space(c)) {
            while (peekc(l) >= 0 && is_space(peekc(l))) {
                if (at(l, 0, " -}}") || at(l, 0, "\t-}}") || at(l, 0, "\r-}}") || at(l, 0, "\n-}}")) break;
                adv(l, 1);
            }
            if (l->pos == l->start) adv(l, 1); /* a space before " -}}" */
            if (at(l, 0, "-}}")) {             /* the space belongs to the trim marker */
                l->pos--;
                if (l->in[l->pos] == '\n') l->line--;
            }
            if (l->pos > l->start && emit(l, I_SPACE)) return BASE_E_NOMEM;
            continue;
        }
        if (c == '=') {
            adv(l, 1);
            if (emit(l, I_ASSIGN)) return BASE_E_NOMEM;
        } else if (c == ':') {
            adv(l, 1);
            if (peekc(l) != '=') {
                lex_errorf(l, "expected :=");
                return 0;
            }
            adv(l, 1);
            if (emit(l, I_DECLARE)) return BASE_E_NOMEM;
        } else if (c == '|') {
            adv(l, 1);
            if (emit(l, I_PIPE)) return BASE_E_NOMEM;
        } else if (c == '"' || c == '\'') {
            adv(l, 1);
            for (;;) {
                int d = peekc(l);
                if (d == '\\') {
                    adv(l, 1);
                    d = peekc(l);
                    if (d >= 0 && d != '\n') {
                        adv(l, 1);
                        continue;
                    }
                }
                if (d < 0 || d == '\n') {
                    lex_errorf(l,
                               c == '"' ? "unterminated quoted string" : "unterminated character constant");
                    return 0;
                }
                adv(l, 1);
                if (d == c) break;
            }
            if (emit(l, c == '"' ? I_STRING : I_CHARCONST)) return BASE_E_NOMEM;
        } else if (c == '`') {
            adv(l, 1);
            while (peekc(l) >= 0 && peekc(l) != '`') adv(l, 1);
            if (peekc(l) < 0) {
                lex_errorf(l, "unterminated raw quoted string");
                return 0;
            }
            adv(l, 1);
            if (emit(l, I_RAWSTRING)) return BASE_E_NOMEM;
        } else if (c == '$' || (c == '.' && !(l->pos + 1 < l->len && l->in[l->pos + 1] >= '0' &&
                                              l->in[l->pos + 1] <= '9'))) {
            adv(l, 1);
            if (at_terminator(l)) {
                if (emit(l, c == '$' ? I_VARIABLE : I_DOT)) return BASE_E_NOMEM;
                continue;
            }
            while (peekc(l) >= 0 && is_alnum(peekc(l))) adv(l, 1);
            if (!at_terminator(l)) {
                char r[32];
                size_t w;
                fmt_rune(r, sizeof r, l, &w);
                lex_errorf(l, "bad character %s", r);
                return 0;
            }
            if (emit(l, c == '$' ? I_VARIABLE : I_FIELD)) return BASE_E_NOMEM;
        } else if (c == '.' || c == '+' || c == '-' || (c >= '0' && c <= '9')) {
            if (!scan_number(l)) {
                char q[96];
                quote_into(q, sizeof q, l->in + l->start, l->pos - l->start);
                lex_errorf(l, "bad number syntax: %s", q);
                return 0;
            }
            if (emit(l, I_NUMBER)) return BASE_E_NOMEM;
        } else if (c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                   (c >= 0x80 && base_utf8_decode((const unsigned char *)l->in + l->pos, l->len - l->pos,
                                                  &(uint32_t){0}) > 0)) {
            /* non-ASCII runes count as letters (Go asks unicode.IsLetter) */
            while (peekc(l) >= 0 && is_alnum(peekc(l))) adv(l, 1);
            if (!at_terminator(l)) {
                char r[32];
                size_t w;
                fmt_rune(r, sizeof r, l, &w);
                lex_errorf(l, "bad character %s", r);
                return 0;
            }
            itype t = I_IDENT;
            size_t n = l->pos - l->start;
            for (size_t k = 0; k < sizeof keywords / sizeof keywords[0]; k++)
                if (strlen(keywords[k].w) == n && memcmp(keywords[k].w, l->in + l->start, n) == 0)
                    t = keywords[k].t;
            if (emit(l, t)) return BASE_E_NOMEM;
        } else if (c == '(') {
            adv(l, 1);
            if (++l->paren > TT_MAX_DEPTH) {
                lex_errorf(l, "nesting too deep");
                return 0;
            }
            if (emit(l, I_LPAREN)) return BASE_E_NOMEM;
        } else if (c == ')') {
            char r[32];
            size_t w;
            fmt_rune(r, sizeof r, l, &w);
            adv(l, 1);
            if (emit(l, I_RPAREN)) return BASE_E_NOMEM;
            if (--l->paren < 0) {
                lex_errorf(l, "unexpected right paren %s", r);
                return 0;
            }
        } else if (c < 0x80 && c >= 0x20 && c != 0x7f) {
            adv(l, 1);
            if (emit(l, I_CHAR)) return BASE_E_NOMEM;
        } else {
            char r[32];
            size_t w;
            fmt_rune(r, sizeof r, l, &w);
            lex_errorf(l, "unrecognized character in action: %s", r);
            return 0;
        }
    }
}

static int lex_all(lexer *l) {
    int trim_next = 0;
    for (;;) {
        /* text up to the next "{{" */
        const char *p = NULL;
        for (size_t i = l->pos; i + 1 < l->len; i++)
            if (l->in[i] == '{' && l->in[i + 1] == '{') {
                p = l->in + i;
                break;
            }
        size_t end = p ? (size_t)(p - l->in) : l->len;
        size_t tstart = l->pos;
        if (trim_next)
            while (tstart < end && is_space((unsigned char)l->in[tstart])) tstart++;
        int ltrim = p && end + 3 < l->len && l->in[end + 2] == '-' && is_space((unsigned char)l->in[end + 3]);
        size_t tend = end;
        if (ltrim)
            while (tend > tstart && is_space((unsigned char)l->in[tend - 1])) tend--;
        adv(l, tstart - l->pos);
        l->start = l->pos;
        l->start_line = l->line;
        if (tend > tstart) {
            adv(l, tend - tstart);
            if (emit(l, I_TEXT)) return BASE_E_NOMEM;
        }
        adv(l, end - l->pos);
        l->start = l->pos;
        l->start_line = l->line;
        if (!p) return push(l, I_EOF, l->in + l->len, 0, l->len, l->line);
        /* left delimiter */
        adv(l, 2);
        if (ltrim) adv(l, 2);
        if (at(l, 0, "/*")) {
            /* comment */
            const char *q = NULL;
            for (size_t i = l->pos + 2; i + 1 < l->len; i++)
                if (l->in[i] == '*' && l->in[i + 1] == '/') {
                    q = l->in + i;
                    break;
                }
            if (!q) {
                lex_errorf(l, "unclosed comment");
                return 0;
            }
            adv(l, (size_t)(q - l->in) + 2 - l->pos);
            int trim;
            if (!at_right_delim(l, &trim)) {
                lex_errorf(l, "comment ends before closing delimiter");
                return 0;
            }
            adv(l, trim ? 4 : 2);
            l->start = l->pos;
            l->start_line = l->line;
            trim_next = trim;
            continue;
        }
        if (push(l, I_LDELIM, l->in + end, 2, end, l->start_line)) return BASE_E_NOMEM;
        l->start = l->pos;
        l->start_line = l->line;
        l->paren = 0;
        int rc = lex_action(l, &trim_next);
        if (rc || l->failed) return rc;
    }
}

/* Parser ---------------------------------------------------------- */

typedef struct parser {
    rules_tmpl *t;
    item *items;
    size_t n, i, maxi;
    char *err;
    size_t errlen;
    int failed;
    base_str vars[256 + 1];
    size_t nvars;
    int range_depth;
    int depth;
} parser;

static const char *const known_funcs[] = {"and",
                                          "call",
                                          "html",
                                          "index",
                                          "slice",
                                          "js",
                                          "len",
                                          "not",
                                          "or",
                                          "print",
                                          "printf",
                                          "println",
                                          "urlquery",
                                          "eq",
                                          "ge",
                                          "gt",
                                          "le",
                                          "lt",
                                          "ne",
                                          "query",
                                          "first",
                                          "label",
                                          "value",
                                          "strvalue",
                                          "args",
                                          "reReplaceAll",
                                          "safeHtml",
                                          "match",
                                          "title",
                                          "toUpper",
                                          "toLower",
                                          "graphLink",
                                          "tableLink",
                                          "sortByLabel",
                                          "humanize",
                                          "humanize1024",
                                          "humanizeDuration",
                                          "humanizePercentage",
                                          "humanizeTimestamp",
                                          "pathPrefix",
                                          "externalURL",
                                          "parseDuration",
                                          "toTime",
                                          "stripPort",
                                          "stripDomain"};

static int has_function(base_str name) {
    for (size_t k = 0; k < sizeof known_funcs / sizeof known_funcs[0]; k++)
        if (base_str_eqc(name, known_funcs[k])) return 1;
    return 0;
}

/* The items end in EOF or an error item, which reads forever. */
static item *pnext(parser *p) {
    item *it = &p->items[p->i < p->n ? p->i : p->n - 1];
    p->i++;
    if (p->i > p->maxi) p->maxi = p->i;
    return it;
}
static item *ppeek(parser *p) {
    if (p->i + 1 > p->maxi) p->maxi = p->i + 1;
    return &p->items[p->i < p->n ? p->i : p->n - 1];
}
static void pbackup(parser *p) {
    p->i--;
}
static item *pnext_ns(parser *p) {
    item *it;
    do it = pnext(p);
    while (it->t == I_SPACE);
    return it;
}
static item *ppeek_ns(parser *p) {
    item *it = pnext_ns(p);
    pbackup(p);
    return it;
}

static void perrorf(parser *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void perrorf(parser *p, const char *fmt, ...) {
    if (p->failed) return;
    p->failed = 1;
    /* the line of the furthest item read, as Go's token[0] */
    size_t k = p->maxi > 0 ? p->maxi - 1 : 0;
    if (k >= p->n) k = p->n - 1;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    base_errf(p->err, p->errlen, BASE_E_PARSE, "template: %s:%d: %s", p->t->name, p->items[k].line, msg);
}

/* Go's item.String(). */
static void item_str(const item *it, char *out, size_t cap) {
    if (it->t == I_EOF)
        snprintf(out, cap, "EOF");
    else if (it->t == I_ERROR)
        snprintf(out, cap, "%.*s", (int)it->n, it->v);
    else if (it->t > I_KEYWORD)
        snprintf(out, cap, "<%.*s>", (int)it->n, it->v);
    else if (it->n > 10) {
        char q[64];
        quote_into(q, sizeof q, it->v, 10);
        snprintf(out, cap, "%s...", q);
    } else
        quote_into(out, cap, it->v, it->n);
}

static void unexpected(parser *p, const item *it, const char *context) {
    char s[96];
    item_str(it, s, sizeof s);
    if (it->t == I_ERROR)
        perrorf(p, "%s", s);
    else
        perrorf(p, "unexpected %s in %s", s, context);
}

static tt_node *newnode(parser *p, tt_ntype t, size_t pos, int line) {
    tt_node *n = base_arena_alloc(&p->t->arena, sizeof *n);
    if (!n) {
        if (!p->failed) base_errf(p->err, p->errlen, BASE_E_NOMEM, "template: out of memory");
        p->failed = 2;
        return NULL;
    }
    memset(n, 0, sizeof *n);
    n->type = t;
    n->pos = pos;
    n->line = line;
    return n;
}

static int append_kid(parser *p, tt_node ***arr, size_t *n, tt_node *k) {
    if ((*n & (*n - 1)) == 0) { /* grow at powers of two */
        size_t nc = *n ? *n * 2 : 1;
        tt_node **na = base_arena_alloc(&p->t->arena, nc * sizeof *na);
        if (!na) {
            p->failed = 2;
            base_errf(p->err, p->errlen, BASE_E_NOMEM, "template: out of memory");
            return -1;
        }
        if (*n) memcpy(na, *arr, *n * sizeof *na);
        *arr = na;
    }
    (*arr)[(*n)++] = k;
    return 0;
}

/* Splits ".a.b" / "$x.a" into identifiers (a variable keeps its $name). */
static int split_ids(parser *p, tt_node *n, const char *s, size_t len, int is_var) {
    size_t cnt = 0;
    for (size_t k = 0; k < len; k++)
        if (s[k] == '.') cnt++;
    n->ids = base_arena_alloc(&p->t->arena, (cnt + 1) * sizeof *n->ids);
    if (!n->ids) return -1;
    size_t k = is_var ? 0 : 1, st = k;
    for (; k <= len; k++)
        if (k == len || s[k] == '.') {
            n->ids[n->nids++] = (base_str){s + st, k - st};
            st = k + 1;
        }
    return 0;
}

static tt_node *pipeline(parser *p, const char *context, itype end);

static int use_var(parser *p, base_str name) {
    for (size_t k = p->nvars; k-- > 0;)
        if (base_str_eq(p->vars[k], name)) return 1;
    perrorf(p, "undefined variable \"%.*s\"", (int)name.n, name.p);
    return 0;
}

static int parse_number(parser *p, tt_node *n, const item *it);

static int unquote(parser *p, const item *it, char **ret, size_t *ret_n);

static tt_node *term(parser *p) {
    item *it = pnext_ns(p);
    tt_node *n;
    switch (it->t) {
    case I_IDENT:
        if (!has_function((base_str){it->v, it->n})) {
            perrorf(p, "function \"%.*s\" not defined", (int)it->n, it->v);
            return NULL;
        }
        if (!(n = newnode(p, TN_IDENT, it->pos, it->line))) return NULL;
        n->s = it->v;
        n->n = it->n;
        return n;
    case I_DOT: return newnode(p, TN_DOT, it->pos, it->line);
    case I_NIL: return newnode(p, TN_NIL, it->pos, it->line);
    case I_VARIABLE: {
        size_t dot = 0;
        while (dot < it->n && it->v[dot] != '.') dot++;
        if (!use_var(p, (base_str){it->v, dot})) return NULL;
        if (!(n = newnode(p, TN_VAR, it->pos, it->line))) return NULL;
        n->s = it->v;
        n->n = it->n;
        if (split_ids(p, n, it->v, it->n, 1)) return NULL;
        return n;
    }
    case I_FIELD:
        if (!(n = newnode(p, TN_FIELD, it->pos, it->line))) return NULL;
        n->s = it->v;
        n->n = it->n;
        if (split_ids(p, n, it->v, it->n, 0)) return NULL;
        return n;
    case I_BOOL:
        if (!(n = newnode(p, TN_BOOL, it->pos, it->line))) return NULL;
        n->b = it->n == 4;
        return n;
    case I_CHARCONST:
    case I_NUMBER:
        if (!(n = newnode(p, TN_NUM, it->pos, it->line))) return NULL;
        n->orig = it->v;
        n->orig_n = it->n;
        if (parse_number(p, n, it)) return NULL;
        return n;
    case I_LPAREN:
        if (++p->depth > TT_MAX_DEPTH) {
            perrorf(p, "nesting too deep");
            return NULL;
        }
        n = pipeline(p, "parenthesized pipeline", I_RPAREN);
        p->depth--;
        return n;
    case I_STRING:
    case I_RAWSTRING: {
        if (!(n = newnode(p, TN_STR, it->pos, it->line))) return NULL;
        n->orig = it->v;
        n->orig_n = it->n;
        char *s;
        size_t sn;
        if (unquote(p, it, &s, &sn)) return NULL;
        n->s = s;
        n->n = sn;
        return n;
    }
    default: pbackup(p); return NULL;
    }
}

static tt_node *operand(parser *p) {
    tt_node *node = term(p);
    if (!node || p->failed) return NULL;
    if (ppeek(p)->t == I_FIELD) {
        tt_node *chain = newnode(p, TN_CHAIN, ppeek(p)->pos, node->line);
        if (!chain) return NULL;
        chain->sub = node;
        /* collect the fields as one dotted run */
        size_t cnt = 0;
        for (size_t k = p->i; k < p->n && p->items[k].t == I_FIELD; k++)
            for (size_t j = 0; j < p->items[k].n; j++) cnt += p->items[k].v[j] == '.';
        chain->ids = base_arena_alloc(&p->t->arena, cnt * sizeof *chain->ids);
        if (!chain->ids) return NULL;
        while (ppeek(p)->t == I_FIELD) {
            item *f = pnext(p);
            /* a field item may hold several: ".a.b" */
            const char *s = f->v + 1;
            size_t len = f->n - 1, st = 0;
            for (size_t k = 0; k <= len; k++)
                if (k == len || s[k] == '.') {
                    if (chain->nids == cnt) break;
                    chain->ids[chain->nids++] = (base_str){s + st, k - st};
                    st = k + 1;
                }
        }
        switch (node->type) {
        case TN_FIELD:
        case TN_VAR: {
            /* Go folds these into one field / variable node */
            size_t total = node->nids + chain->nids;
            base_str *ids = base_arena_alloc(&p->t->arena, total * sizeof *ids);
            if (!ids) return NULL;
            memcpy(ids, node->ids, node->nids * sizeof *ids);
            memcpy(ids + node->nids, chain->ids, chain->nids * sizeof *ids);
            node->ids = ids;
            node->nids = total;
            node->pos = chain->pos; /* Go positions the folded node at the first field */
            /* the source text spans from node->s to the end of the last field */
            item *last = &p->items[p->i - 1];
            node->n = (size_t)(last->v + last->n - node->s);
            return node;
        }
        case TN_BOOL:
        case TN_STR:
        case TN_NUM:
        case TN_NIL:
        case TN_DOT: {
            const char *s = node->type == TN_BOOL  ? (node->b ? "true" : "false")
                            : node->type == TN_NIL ? "nil"
                            : node->type == TN_DOT ? "."
                                                   : NULL;
            char q[96];
            if (s)
                quote_into(q, sizeof q, s, strlen(s));
            else
                quote_into(q, sizeof q, node->orig, node->orig_n);
            perrorf(p, "unexpected . after term %s", q);
            return NULL;
        }
        default: return chain;
        }
    }
    return node;
}

static tt_node *command(parser *p) {
    tt_node *cmd = newnode(p, TN_CMD, ppeek_ns(p)->pos, ppeek_ns(p)->line);
    if (!cmd) return NULL;
    for (;;) {
        ppeek_ns(p);
        tt_node *op = operand(p);
        if (p->failed) return NULL;
        if (op && append_kid(p, &cmd->kids, &cmd->nkids, op)) return NULL;
        item *it = pnext(p);
        if (it->t == I_SPACE) continue;
        if (it->t == I_RDELIM || it->t == I_RPAREN)
            pbackup(p);
        else if (it->t != I_PIPE) {
            unexpected(p, it, "operand");
            return NULL;
        }
        break;
    }
    if (cmd->nkids == 0) {
        perrorf(p, "empty command");
        return NULL;
    }
    return cmd;
}

static tt_node *new_var_node(parser *p, const item *v) {
    tt_node *n = newnode(p, TN_VAR, v->pos, v->line);
    if (!n) return NULL;
    n->s = v->v;
    n->n = v->n;
    if (split_ids(p, n, v->v, v->n, 1)) return NULL;
    return n;
}

static int push_var(parser *p, base_str name) {
    if (p->nvars >= 256) {
        perrorf(p, "too many variables");
        return -1;
    }
    p->vars[p->nvars++] = name;
    return 0;
}

static tt_node *pipeline(parser *p, const char *context, itype end) {
    item *tok = ppeek_ns(p);
    tt_node *pipe = newnode(p, TN_PIPE, tok->pos, tok->line);
    if (!pipe) return NULL;
    item *v = ppeek_ns(p);
    if (v->t == I_VARIABLE) {
    decls:
        v = pnext_ns(p);
        item *after = ppeek(p);
        item *next = ppeek_ns(p);
        if (next->t == I_ASSIGN || next->t == I_DECLARE) {
            pipe->is_assign = next->t == I_ASSIGN;
            pnext_ns(p);
            tt_node *vn = new_var_node(p, v);
            if (!vn || append_kid(p, &pipe->decl, &pipe->ndecl, vn)) return NULL;
            /* Go declares the name even for "=": an undefined one fails
             * at run time */
            if (push_var(p, (base_str){v->v, v->n})) return NULL;
        } else if (next->t == I_CHAR && next->n == 1 && next->v[0] == ',') {
            pnext_ns(p);
            tt_node *vn = new_var_node(p, v);
            if (!vn || append_kid(p, &pipe->decl, &pipe->ndecl, vn)) return NULL;
            if (push_var(p, (base_str){v->v, v->n})) return NULL;
            if (strcmp(context, "range") == 0 && pipe->ndecl < 2) {
                itype t = ppeek_ns(p)->t;
                if (t == I_VARIABLE || t == I_RDELIM || t == I_RPAREN) goto decls;
                perrorf(p, "range can only initialize variables");
                return NULL;
            }
            perrorf(p, "too many declarations in %s", context);
            return NULL;
        } else if (after->t == I_SPACE) {
            /* back up to the variable */
            while (&p->items[p->i] != v) pbackup(p);
        } else {
            pbackup(p);
        }
    }
    for (;;) {
        item *t = pnext_ns(p);
        if (t->t == end) {
            if (pipe->nkids == 0) {
                perrorf(p, "missing value for %s", context);
                return NULL;
            }
            for (size_t k = 1; k < pipe->nkids; k++) {
                tt_ntype a = pipe->kids[k]->kids[0]->type;
                if (a == TN_BOOL || a == TN_DOT || a == TN_NIL || a == TN_NUM || a == TN_STR) {
                    perrorf(p, "non executable command in pipeline stage %zu", k + 1);
                    return NULL;
                }
            }
            return pipe;
        }
        switch (t->t) {
        case I_BOOL:
        case I_CHARCONST:
        case I_DOT:
        case I_FIELD:
        case I_IDENT:
        case I_NUMBER:
        case I_NIL:
        case I_RAWSTRING:
        case I_STRING:
        case I_VARIABLE:
        case I_LPAREN: {
            pbackup(p);
            tt_node *c = command(p);
            if (!c || append_kid(p, &pipe->kids, &pipe->nkids, c)) return NULL;
            break;
        }
        default: unexpected(p, t, context); return NULL;
        }
    }
}

/* A parsed {{end}} / {{else}} comes back as a marker. */
static tt_node end_marker, else_marker;

static tt_node *text_or_action(parser *p);

static tt_node *item_list(parser *p, tt_node **ret_next) {
    tt_node *list = newnode(p, TN_LIST, ppeek_ns(p)->pos, ppeek_ns(p)->line);
    if (!list) return NULL;
    while (ppeek_ns(p)->t != I_EOF) {
        tt_node *n = text_or_action(p);
        if (!n) return NULL;
        if (n == &end_marker || n == &else_marker) {
            *ret_next = n;
            return list;
        }
        if (n->type == TN_ACTION && n->sub == &else_marker) { /* "else if" */
            *ret_next = n;
            return list;
        }
        if (append_kid(p, &list->kids, &list->nkids, n)) return NULL;
    }
    perrorf(p, "unexpected EOF");
    return NULL;
}

static tt_node *parse_control(parser *p, tt_ntype type, const char *context, const item *kw) {
    size_t mark = p->nvars;
    tt_node *n = newnode(p, type, kw->pos, kw->line);
    if (!n) return NULL;
    if (++p->depth > TT_MAX_DEPTH) {
        perrorf(p, "nesting too deep");
        return NULL;
    }
    n->sub = pipeline(p, context, I_RDELIM);
    if (!n->sub) return NULL;
    n->pos = n->sub->pos;
    if (type == TN_RANGE) p->range_depth++;
    tt_node *next = NULL;
    n->list = item_list(p, &next);
    if (type == TN_RANGE) p->range_depth--;
    if (!n->list) return NULL;
    if (next == &else_marker || (next != &end_marker && next->type == TN_ACTION)) {
        int else_if = next != &else_marker;
        if (else_if && type == TN_IF) {
            /* {{else if ...}}: an if inside the else list, one {{end}} */
            n->elist = newnode(p, TN_LIST, next->pos, next->line);
            if (!n->elist) return NULL;
            item *ifkw = pnext_ns(p); /* the "if" */
            tt_node *inner = parse_control(p, TN_IF, "if", ifkw);
            if (!inner || append_kid(p, &n->elist->kids, &n->elist->nkids, inner)) return NULL;
        } else {
            if (else_if) {
                /* else followed by if in range/with: Go expects a right delim */
                item *t = pnext_ns(p);
                unexpected(p, t, "input");
                return NULL;
            }
            n->elist = item_list(p, &next);
            if (!n->elist) return NULL;
            if (next != &end_marker) {
                perrorf(p, "expected end; found {{else}}");
                return NULL;
            }
        }
    }
    p->depth--;
    p->nvars = mark;
    return n;
}

static tt_node else_if_marker_node = {.type = TN_ACTION, .sub = &else_marker};

static tt_node *action(parser *p) {
    item *it = pnext_ns(p);
    switch (it->t) {
    case I_BLOCK:
    case I_DEFINE:
    case I_TEMPLATE: perrorf(p, "{{%.*s}} is not supported", (int)it->n, it->v); return NULL;
    case I_BREAK:
    case I_CONTINUE: {
        const char *w = it->t == I_BREAK ? "break" : "continue";
        if (p->range_depth == 0) {
            perrorf(p, "{{%s}} outside {{range}}", w);
            return NULL;
        }
        item *t = pnext_ns(p);
        if (t->t != I_RDELIM) {
            char ctx[32];
            snprintf(ctx, sizeof ctx, "{{%s}}", w);
            unexpected(p, t, ctx);
            return NULL;
        }
        return newnode(p, it->t == I_BREAK ? TN_BREAK : TN_CONTINUE, it->pos, it->line);
    }
    case I_ELSE: {
        item *pk = ppeek_ns(p);
        if (pk->t == I_IF) return &else_if_marker_node;
        item *t = pnext_ns(p);
        if (t->t != I_RDELIM) {
            unexpected(p, t, "else");
            return NULL;
        }
        return &else_marker;
    }
    case I_END: {
        item *t = pnext_ns(p);
        if (t->t != I_RDELIM) {
            unexpected(p, t, "end");
            return NULL;
        }
        return &end_marker;
    }
    case I_IF: return parse_control(p, TN_IF, "if", it);
    case I_RANGE: return parse_control(p, TN_RANGE, "range", it);
    case I_WITH: return parse_control(p, TN_WITH, "with", it);
    default: break;
    }
    pbackup(p);
    item *tok = ppeek(p);
    tt_node *a = newnode(p, TN_ACTION, tok->pos, tok->line);
    if (!a) return NULL;
    a->sub = pipeline(p, "command", I_RDELIM);
    return a->sub ? a : NULL;
}

static tt_node *text_or_action(parser *p) {
    item *it = pnext_ns(p);
    if (it->t == I_TEXT) {
        tt_node *n = newnode(p, TN_TEXT, it->pos, it->line);
        if (!n) return NULL;
        n->s = it->v;
        n->n = it->n;
        return n;
    }
    if (it->t == I_LDELIM) return action(p);
    unexpected(p, it, "input");
    return NULL;
}

static int hexval(int c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static int unquote(parser *p, const item *it, char **ret, size_t *ret_n) {
    base_buf b = BASE_BUF_INIT;
    /* strconv.Unquote of a "..." or `...` literal; errors are "invalid syntax" */
    int urc = base_go_unquote(it->v, it->n, BASE_UNQUOTE_RAW_DROP_CR, &b);
    if (urc == BASE_E_PARSE) {
        base_buf_free(&b);
        perrorf(p, "invalid syntax");
        return -1;
    }
    if (base_buf_err(&b)) {
        base_buf_free(&b);
        perrorf(p, "out of memory");
        return -1;
    }
    *ret = base_arena_strndup(&p->t->arena, b.data ? b.data : "", b.len);
    *ret_n = b.len;
    base_buf_free(&b);
    if (!*ret) {
        perrorf(p, "out of memory");
        return -1;
    }
    return 0;
}

/* strconv.ParseInt(s, 0, 64) without underscores. */
static int parse_int0(const char *s, size_t n, int64_t *ret) {
    int neg = 0;
    size_t k = 0;
    if (n && (s[0] == '+' || s[0] == '-')) {
        neg = s[0] == '-';
        k = 1;
    }
    int base = 10;
    if (n - k > 1 && s[k] == '0') {
        char c = s[k + 1];
        if (c == 'x' || c == 'X')
            base = 16, k += 2;
        else if (c == 'o' || c == 'O')
            base = 8, k += 2;
        else if (c == 'b' || c == 'B')
            base = 2, k += 2;
        else
            base = 8, k += 1;
    }
    if (k >= n) return -1;
    uint64_t v = 0;
    for (; k < n; k++) {
        int d = hexval((unsigned char)s[k]);
        if (d < 0 || d >= base) return -1;
        if (v > (UINT64_MAX - (uint64_t)d) / (uint64_t)base) return -1;
        v = v * (uint64_t)base + (uint64_t)d;
    }
    if (neg ? v > (uint64_t)INT64_MAX + 1 : v > (uint64_t)INT64_MAX) return -1;
    *ret = neg ? (int64_t)(0 - v) : (int64_t)v;
    return 0;
}

static int contains_any(const char *s, size_t n, const char *set) {
    for (size_t k = 0; k < n; k++)
        if (strchr(set, s[k])) return 1;
    return 0;
}

/* A character constant 'c' as text/template reads it: strconv.UnquoteChar
 * over what follows the first quote (-1: its ErrSyntax), which must leave
 * exactly the closing quote (-2: "malformed character constant"). */
static int char_const(const char *text, size_t len, uint32_t *ret) {
    const unsigned char *s = (const unsigned char *)text + 1;
    size_t n = len ? len - 1 : 0, used;
    if (n == 0 || s[0] == '\'') return -1;
    uint32_t v;
    if (s[0] >= 0x80) {
        used = base_utf8_decode(s, n, &v);
        if (used == 0) v = 0xFFFD, used = 1; /* utf8.RuneError, one byte */
    } else if (s[0] != '\\') {
        v = s[0];
        used = 1;
    } else {
        if (n < 2) return -1;
        unsigned char c = s[1];
        used = 2;
        switch (c) {
        case 'a': v = '\a'; break;
        case 'b': v = '\b'; break;
        case 'f': v = '\f'; break;
        case 'n': v = '\n'; break;
        case 'r': v = '\r'; break;
        case 't': v = '\t'; break;
        case 'v': v = '\v'; break;
        case '\\': v = '\\'; break;
        case '\'': v = '\''; break;
        case 'x':
        case 'u':
        case 'U': {
            size_t w = c == 'x' ? 2 : c == 'u' ? 4 : 8;
            if (n < 2 + w) return -1;
            v = 0;
            for (size_t j = 0; j < w; j++) {
                int h = hexval(s[2 + j]);
                if (h < 0) return -1;
                v = v << 4 | (uint32_t)h;
            }
            used += w;
            if (c != 'x' && (v > 0x10FFFF || (v >= 0xD800 && v < 0xE000))) return -1;
            break;
        }
        case '0':
        case '1':
        case '2':
        case '3':
        case '4':
        case '5':
        case '6':
        case '7':
            if (n < 4) return -1;
            v = (uint32_t)(c - '0');
            for (size_t j = 2; j < 4; j++) {
                if (s[j] < '0' || s[j] > '7') return -1;
                v = v << 3 | (uint32_t)(s[j] - '0');
            }
            if (v > 255) return -1;
            used = 4;
            break;
        default: return -1; /* \" included: only in double quotes */
        }
    }
    if (n - used != 1 || s[used] != '\'') return -2;
    *ret = v;
    return 0;
}

static int parse_number(parser *p, tt_node *n, const item *it) {
    const char *s = it->v;
    size_t len = it->n;
    if (it->t == I_CHARCONST) {
        uint32_t r = 0;
        int rc = char_const(s, len, &r);
        if (rc == -1) {
            perrorf(p, "invalid syntax");
            return -1;
        }
        if (rc == -2) {
            perrorf(p, "malformed character constant: %.*s", (int)len, s);
            return -1;
        }
        n->is_int = n->is_float = 1;
        n->i = r;
        n->f = r;
        return 0;
    }
    if (len && s[len - 1] == 'i') {
        perrorf(p, "complex numbers are not supported: %.*s", (int)len, s);
        return -1;
    }
    for (size_t k = 0; k < len; k++)
        if (s[k] == '_') {
            char q[96];
            quote_into(q, sizeof q, s, len);
            perrorf(p, "illegal number syntax: %s", q);
            return -1;
        }
    int64_t iv;
    if (parse_int0(s, len, &iv) == 0) {
        n->is_int = 1;
        n->i = iv;
        n->is_float = 1;
        n->f = (double)iv;
        return 0;
    }
    if (!contains_any(s, len, ".eEpP") ||
        (len > 1 && (s[1] == 'x' || s[1] == 'X') && !contains_any(s, len, "pP"))) {
        /* an integer that is no int64: a uint64 overflows int at run
         * time, anything bigger is rejected here (Go's newNumber) */
        uint64_t u;
        double uf;
        if (base_parse_u64(s, len, &u) == 0) {
            n->is_float = 1;
            n->f = (double)u;
            return 0;
        }
        if (base_parse_double(s, len, &uf) == 0) {
            char q[96];
            quote_into(q, sizeof q, s, len);
            perrorf(p, "integer overflow: %s", q);
            return -1;
        }
    }
    double f;
    const char *fs = s;
    size_t fl = len;
    if (fl && fs[0] == '+') fs++, fl--;
    if (fl > 1 && fs[0] == '0' && (fs[1] == 'x' || fs[1] == 'X')) {
        char tmp[128];
        if (len >= sizeof tmp) goto bad;
        memcpy(tmp, s, len);
        tmp[len] = 0;
        char *e;
        f = strtod(tmp, &e);
        if (*e) goto bad;
    } else if (base_parse_double(s, len, &f) != 0) {
        goto bad;
    }
    {
        /* only decimal digits, a point and an exponent (no inf/nan) */
        for (size_t k = 0; k < len; k++)
            if (!strchr("0123456789.eE+-xXpPabcdefABCDEF", s[k])) goto bad;
    }
    n->is_float = 1;
    n->f = f;
    if (f >= -9.2e18 && f <= 9.2e18 && f == (double)(int64_t)f) {
        n->is_int = 1;
        n->i = (int64_t)f;
    }
    return 0;
bad : {
    char q[96];
    quote_into(q, sizeof q, s, len);
    perrorf(p, "illegal number syntax: %s", q);
    return -1;
}
}

int rules_tmpl_parse(const char *name, const char *text, size_t len, rules_tmpl **ret, char *err,
                     size_t errlen) {
    if (len > RULES_TMPL_MAX)
        return base_errf(err, errlen, BASE_E_LIMIT,
                         "template: %s: template of %zu bytes is over the limit of %zu", name, len,
                         RULES_TMPL_MAX);
    rules_tmpl *t = calloc(1, sizeof *t);
    if (!t) return base_errf(err, errlen, BASE_E_NOMEM, "template: out of memory");
    base_arena_init(&t->arena, 4096, 0);
    t->name = base_arena_strdup(&t->arena, name);
    t->text = base_arena_strndup(&t->arena, text ? text : "", len);
    t->len = len;
    if (!t->name || !t->text) {
        rules_tmpl_free(t);
        return base_errf(err, errlen, BASE_E_NOMEM, "template: out of memory");
    }
    lexer l = {.in = t->text, .len = len, .line = 1, .start_line = 1};
    int rc = lex_all(&l);
    if (rc) {
        free(l.items);
        rules_tmpl_free(t);
        return base_errf(err, errlen, rc, "template: out of memory");
    }
    /* "$" (the data) is defined from the start, as Go's parser does */
    parser p = {.t = t,
                .items = l.items,
                .n = l.nitems,
                .err = err,
                .errlen = errlen,
                .vars = {{"$", 1}},
                .nvars = 1};
    tt_node *root = newnode(&p, TN_LIST, 0, 1);
    while (root && !p.failed && ppeek_ns(&p)->t != I_EOF) {
        tt_node *n = text_or_action(&p);
        if (!n) break;
        if (n == &end_marker || n == &else_marker || n == &else_if_marker_node) {
            perrorf(&p, "unexpected {{%s}}", n == &end_marker ? "end" : "else");
            break;
        }
        if (append_kid(&p, &root->kids, &root->nkids, n)) break;
    }
    free(l.items);
    if (p.failed || !root) {
        rules_tmpl_free(t);
        return p.failed == 2 || !root ? BASE_E_NOMEM : BASE_E_PARSE;
    }
    t->root = root;
    *ret = t;
    return 0;
}

void rules_tmpl_free(rules_tmpl *t) {
    if (!t) return;
    base_arena_free(&t->arena);
    free(t);
}
