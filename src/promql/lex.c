/* lex.c -- the PromQL lexer: Prometheus 2.42's promql/parser/lex.go as a
 * pull lexer, and the token descriptions its parser errors use.
 *
 * MODES (lex.go's state functions, kept by flags here):
 *   statements   the default: operators, numbers, durations, strings,
 *                identifiers and keywords (case-insensitive), ( ) [ ] { ;
 *   braces       after '{' until '}': identifiers (keywords are plain
 *                identifiers here), strings, = != =~ !~ and commas;
 *   duration     right after '[' (blanks skipped): one duration, else
 *                "missing unit character in duration" / "bad duration
 *                syntax"; inside [ ], any letter or ':' is a COLON (so
 *                `x[5m x 1m]` is `x[5m:1m]`, as in 2.42);
 *   strings      "..." and '...' with Go's escapes, `raw` without.
 * Comments (# to the end of the line) are skipped. Characters are runes
 * decoded as Go decodes UTF-8 (a bad byte is U+FFFD of width 1).
 *
 * ERRORS carry lex.go's words; their position is lex.go's l.start (the
 * start of the token being scanned, or the point after the last token when
 * the error is found between tokens), which is what the parser reports.
 */
#include <stdio.h>
#include <string.h>

#include "base/err.h"
#include "base/num.h"
#include "base/utf8.h"
#include "labels/labels.h"
#include "promql/parse_int.h"

#define EOF_R (-1)

void pq__lex_init(pq_lexer *lx, const char *in, size_t n) {
    memset(lx, 0, sizeof *lx);
    lx->in = in;
    lx->n = n;
}

/* ---- runes ---------------------------------------------------------------- */

typedef struct rd {
    int32_t r;
    size_t w;
} rd;

static rd decode_at(const pq_lexer *lx, size_t pos) {
    rd d = {EOF_R, 0};
    if (pos >= lx->n) return d;
    unsigned char c = (unsigned char)lx->in[pos];
    if (c < 0x80) {
        d.r = c;
        d.w = 1;
        return d;
    }
    uint32_t r;
    size_t w = base_utf8_decode((const unsigned char *)lx->in + pos, lx->n - pos, &r);
    if (w == 0) {
        d.r = 0xFFFD;
        d.w = 1;
    } else {
        d.r = (int32_t)r;
        d.w = w;
    }
    return d;
}

/* next/backup as lex.go's: backup undoes the last next (width 0 at EOF). */
typedef struct lexs {
    pq_lexer *lx;
    size_t width;
} lexs;

static int32_t next(lexs *s) {
    rd d = decode_at(s->lx, s->lx->pos);
    s->width = d.w;
    s->lx->pos += d.w;
    return d.r;
}
static void backup(lexs *s) {
    s->lx->pos -= s->width;
}
static int32_t peek(lexs *s) {
    return decode_at(s->lx, s->lx->pos).r;
}
static int accept(lexs *s, const char *valid) {
    int32_t r = next(s);
    if (r > 0 && r < 0x80 && strchr(valid, (int)r)) return 1;
    backup(s);
    return 0;
}
static void accept_run(lexs *s, const char *valid) {
    while (accept(s, valid)) {
    }
}

/* ---- quoting helpers --------------------------------------------------------- */

void pq__quote_rune(base_buf *out, int32_t r) {
    if (r < 0 || r > 0x10FFFF || (r >= 0xD800 && r < 0xE000)) r = 0xFFFD;
    unsigned char u[4];
    size_t w = base_utf8_encode((uint32_t)r, u);
    base_buf tmp;
    base_buf_init(&tmp, 0);
    labels_quote(&tmp, (base_str){(const char *)u, w});
    base_buf_putc(out, '\'');
    if (r == '"')
        base_buf_putc(out, '"');
    else if (r == '\'')
        base_buf_puts(out, "\\'");
    else if (tmp.len >= 2)
        base_buf_append(out, tmp.data + 1, tmp.len - 2);
    base_buf_putc(out, '\'');
    base_buf_free(&tmp);
}

/* Go's %#U: U+0067 'g' (the character only when printable). */
static void fmt_sharp_u(char *out, size_t outlen, int32_t r) {
    if (r < 0) r = 0xFFFD; /* not reached: EOF is reported on its own */
    int printable = 0;
    unsigned char u[4];
    size_t w = 0;
    if (r <= 0x10FFFF && !(r >= 0xD800 && r < 0xE000)) {
        w = base_utf8_encode((uint32_t)r, u);
        if (r == '"' || r == '\\') {
            printable = 1;
        } else {
            base_buf tmp;
            base_buf_init(&tmp, 0);
            labels_quote(&tmp, (base_str){(const char *)u, w});
            printable = tmp.len == w + 2 && memcmp(tmp.data + 1, u, w) == 0;
            base_buf_free(&tmp);
        }
    }
    if (printable)
        snprintf(out, outlen, "U+%04X '%.*s'", (unsigned)r, (int)w, (const char *)u);
    else
        snprintf(out, outlen, "U+%04X", (unsigned)r);
}

/* ---- tokens and errors ------------------------------------------------------ */

static pq_token emit(pq_lexer *lx, pq_tok t) {
    pq_token k = {t, (uint32_t)lx->start, (uint32_t)(lx->pos - lx->start)};
    lx->start = lx->pos;
    return k;
}

static pq_token errorf_rune(pq_lexer *lx, const char *prefix, int32_t r, const char *suffix) {
    base_buf b;
    base_buf_init(&b, 0);
    base_buf_puts(&b, prefix);
    pq__quote_rune(&b, r);
    if (suffix) base_buf_puts(&b, suffix);
    snprintf(lx->err, sizeof lx->err, "%.*s", (int)b.len, b.data ? b.data : "");
    base_buf_free(&b);
    lx->err_pos = lx->start;
    lx->done = 1;
    return (pq_token){PQ_TOK_ERROR, (uint32_t)lx->start, 0};
}

static pq_token errorf(pq_lexer *lx, const char *msg) {
    snprintf(lx->err, sizeof lx->err, "%s", msg);
    lx->err_pos = lx->start;
    lx->done = 1;
    return (pq_token){PQ_TOK_ERROR, (uint32_t)lx->start, 0};
}

/* "%s: %q" with the quoted span [start, pos) (Go's %q of a string). */
static pq_token errorf_span(pq_lexer *lx, const char *prefix) {
    base_buf b;
    base_buf_init(&b, 0);
    base_buf_puts(&b, prefix);
    labels_quote(&b, (base_str){lx->in + lx->start, lx->pos - lx->start});
    snprintf(lx->err, sizeof lx->err, "%.*s", (int)b.len, b.data ? b.data : "");
    base_buf_free(&b);
    lx->err_pos = lx->start;
    lx->done = 1;
    return (pq_token){PQ_TOK_ERROR, (uint32_t)lx->start, 0};
}

/* ---- numbers and durations ---------------------------------------------------- */

static int scan_number(lexs *s) {
    const char *digits = "0123456789";
    if (accept(s, "0") && accept(s, "xX")) digits = "0123456789abcdefABCDEF";
    accept_run(s, digits);
    if (accept(s, ".")) accept_run(s, digits);
    if (accept(s, "eE")) {
        accept(s, "+-");
        accept_run(s, "0123456789");
    }
    return !pq__is_alnum(peek(s));
}

static int accept_remaining_duration(lexs *s) {
    if (!accept(s, "smhdwy")) return 0;
    accept(s, "s");
    while (accept(s, "0123456789")) {
        while (accept(s, "0123456789")) {
        }
        if (!accept(s, "smhdw")) return 0;
        accept(s, "s");
    }
    return !pq__is_alnum(next(s));
}

static pq_token lex_duration(lexs *s) {
    pq_lexer *lx = s->lx;
    if (scan_number(s)) return errorf(lx, "missing unit character in duration");
    if (!accept_remaining_duration(s)) return errorf_span(lx, "bad duration syntax: ");
    backup(s);
    return emit(lx, PQ_TOK_DURATION);
}

static pq_token lex_number_or_duration(lexs *s) {
    pq_lexer *lx = s->lx;
    if (scan_number(s)) return emit(lx, PQ_TOK_NUMBER);
    if (accept_remaining_duration(s)) {
        backup(s);
        return emit(lx, PQ_TOK_DURATION);
    }
    return errorf_span(lx, "bad number or duration syntax: ");
}

/* ---- strings ------------------------------------------------------------------------ */

static int digit_val(int32_t c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return 16;
}

/* After a backslash. Returns 0, or 1 with an error token in *ret. */
static int lex_escape(lexs *s, pq_token *ret) {
    pq_lexer *lx = s->lx;
    int n;
    uint32_t base, max;
    int32_t ch = next(s);
    char u[48];
    switch (ch) {
    case 'a':
    case 'b':
    case 'f':
    case 'n':
    case 'r':
    case 't':
    case 'v':
    case '\\': return 0;
    case '0':
    case '1':
    case '2':
    case '3':
    case '4':
    case '5':
    case '6':
    case '7':
        n = 3;
        base = 8;
        max = 255;
        break;
    case 'x':
        ch = next(s);
        n = 2;
        base = 16;
        max = 255;
        break;
    case 'u':
        ch = next(s);
        n = 4;
        base = 16;
        max = 0x10FFFF;
        break;
    case 'U':
        ch = next(s);
        n = 8;
        base = 16;
        max = 0x10FFFF;
        break;
    case EOF_R: *ret = errorf(lx, "escape sequence not terminated"); return 1;
    default:
        if (ch == lx->string_open) return 0;
        fmt_sharp_u(u, sizeof u, ch);
        {
            char msg[96];
            snprintf(msg, sizeof msg, "unknown escape sequence %s", u);
            *ret = errorf(lx, msg);
        }
        return 1;
    }
    uint32_t x = 0;
    while (n > 0) {
        uint32_t d = (uint32_t)digit_val(ch);
        if (d >= base) {
            if (ch == EOF_R) {
                *ret = errorf(lx, "escape sequence not terminated");
                return 1;
            }
            fmt_sharp_u(u, sizeof u, ch);
            char msg[96];
            snprintf(msg, sizeof msg, "illegal character %s in escape sequence", u);
            *ret = errorf(lx, msg);
            return 1;
        }
        x = x * base + d;
        n--;
        if (n > 0) ch = next(s);
    }
    if (x > max || (0xD800 <= x && x < 0xE000)) {
        *ret = errorf(lx, "escape sequence is an invalid Unicode code point");
        return 1;
    }
    return 0;
}

static pq_token lex_string(lexs *s) {
    pq_lexer *lx = s->lx;
    for (;;) {
        int32_t r = next(s);
        if (r == '\\') {
            pq_token e;
            if (lex_escape(s, &e)) return e;
            continue;
        }
        if (r == 0xFFFD) return errorf(lx, "invalid UTF-8 rune");
        if (r == EOF_R || r == '\n') return errorf(lx, "unterminated quoted string");
        if (r == lx->string_open) break;
    }
    return emit(lx, PQ_TOK_STRING);
}

static pq_token lex_raw_string(lexs *s) {
    pq_lexer *lx = s->lx;
    for (;;) {
        int32_t r = next(s);
        if (r == 0xFFFD) return errorf(lx, "invalid UTF-8 rune");
        if (r == EOF_R) return errorf(lx, "unterminated raw string");
        if (r == lx->string_open) break;
    }
    return emit(lx, PQ_TOK_STRING);
}

/* ---- identifiers and keywords ---------------------------------------------------------- */

static const struct {
    const char *w;
    pq_tok t;
} keywords[] = {
    {"and", PQ_TOK_LAND},
    {"or", PQ_TOK_LOR},
    {"unless", PQ_TOK_LUNLESS},
    {"atan2", PQ_TOK_ATAN2},
    {"sum", PQ_TOK_SUM},
    {"avg", PQ_TOK_AVG},
    {"count", PQ_TOK_COUNT},
    {"min", PQ_TOK_MIN},
    {"max", PQ_TOK_MAX},
    {"group", PQ_TOK_GROUP},
    {"stddev", PQ_TOK_STDDEV},
    {"stdvar", PQ_TOK_STDVAR},
    {"topk", PQ_TOK_TOPK},
    {"bottomk", PQ_TOK_BOTTOMK},
    {"count_values", PQ_TOK_COUNT_VALUES},
    {"quantile", PQ_TOK_QUANTILE},
    {"offset", PQ_TOK_OFFSET},
    {"by", PQ_TOK_BY},
    {"without", PQ_TOK_WITHOUT},
    {"on", PQ_TOK_ON},
    {"ignoring", PQ_TOK_IGNORING},
    {"group_left", PQ_TOK_GROUP_LEFT},
    {"group_right", PQ_TOK_GROUP_RIGHT},
    {"bool", PQ_TOK_BOOL},
    {"start", PQ_TOK_START},
    {"end", PQ_TOK_END},
    {"inf", PQ_TOK_NUMBER},
    {"nan", PQ_TOK_NUMBER},
};

static int word_is(const char *w, const char *p, size_t n) {
    size_t k = strlen(w);
    if (k != n) return 0;
    for (size_t i = 0; i < n; i++) {
        char c = p[i];
        if (c >= 'A' && c <= 'Z') c = (char)(c - 'A' + 'a');
        if (c != w[i]) return 0;
    }
    return 1;
}

pq_tok pq__word_token(const char *w, size_t n) {
    for (size_t i = 0; i < sizeof keywords / sizeof keywords[0]; i++)
        if (word_is(keywords[i].w, w, n)) return keywords[i].t;
    return memchr(w, ':', n) ? PQ_TOK_METRIC_IDENTIFIER : PQ_TOK_IDENTIFIER;
}

static pq_token lex_keyword_or_identifier(lexs *s) {
    pq_lexer *lx = s->lx;
    for (;;) {
        int32_t r = next(s);
        if (!(pq__is_alnum(r) || r == ':')) break;
    }
    backup(s);
    return emit(lx, pq__word_token(lx->in + lx->start, lx->pos - lx->start));
}

/* ---- the states ------------------------------------------------------------------------------ */

static pq_token lex_comment(lexs *s) {
    pq_lexer *lx = s->lx;
    lx->pos += 1;
    int32_t r = next(s);
    while (r != '\r' && r != '\n' && r != EOF_R) r = next(s);
    backup(s);
    return emit(lx, PQ_TOK_COMMENT);
}

static pq_token lex_inside_braces(lexs *s) {
    pq_lexer *lx = s->lx;
    for (;;) {
        if (lx->pos < lx->n && lx->in[lx->pos] == '#') return lex_comment(s);
        int32_t r = next(s);
        if (r == EOF_R) return errorf(lx, "unexpected end of input inside braces");
        if (pq__is_space(r)) {
            while (pq__is_space(peek(s))) next(s);
            lx->start = lx->pos;
            continue;
        }
        if (pq__is_alpha(r)) {
            backup(s);
            while (pq__is_alnum(next(s))) {
            }
            backup(s);
            return emit(lx, PQ_TOK_IDENTIFIER);
        }
        switch (r) {
        case ',': return emit(lx, PQ_TOK_COMMA);
        case '"':
        case '\'': lx->string_open = (char)r; return lex_string(s);
        case '`': lx->string_open = '`'; return lex_raw_string(s);
        case '=':
            if (next(s) == '~') return emit(lx, PQ_TOK_EQL_REGEX);
            backup(s);
            return emit(lx, PQ_TOK_EQL);
        case '!': {
            int32_t nr = next(s);
            if (nr == '~') return emit(lx, PQ_TOK_NEQ_REGEX);
            if (nr == '=') return emit(lx, PQ_TOK_NEQ);
            return errorf_rune(lx, "unexpected character after '!' inside braces: ", nr, NULL);
        }
        case '{': return errorf_rune(lx, "unexpected left brace ", r, NULL);
        case '}': {
            pq_token t = emit(lx, PQ_TOK_RIGHT_BRACE);
            lx->brace_open = 0;
            return t;
        }
        default: return errorf_rune(lx, "unexpected character inside braces: ", r, NULL);
        }
    }
}

static pq_token lex_statements(lexs *s) {
    pq_lexer *lx = s->lx;
    if (lx->want_duration) {
        lx->want_duration = 0;
        return lex_duration(s);
    }
    for (;;) {
        if (lx->brace_open) return lex_inside_braces(s);
        if (lx->pos < lx->n && lx->in[lx->pos] == '#') return lex_comment(s);
        int32_t r = next(s);
        if (r == EOF_R) {
            if (lx->paren_depth != 0) return errorf(lx, "unclosed left parenthesis");
            if (lx->bracket_open) return errorf(lx, "unclosed left bracket");
            lx->done = 1;
            return emit(lx, PQ_TOK_EOF);
        }
        if (pq__is_space(r)) {
            while (pq__is_space(peek(s))) next(s);
            lx->start = lx->pos;
            continue;
        }
        switch (r) {
        case ',': return emit(lx, PQ_TOK_COMMA);
        case '*': return emit(lx, PQ_TOK_MUL);
        case '/': return emit(lx, PQ_TOK_DIV);
        case '%': return emit(lx, PQ_TOK_MOD);
        case '+': return emit(lx, PQ_TOK_ADD);
        case '-': return emit(lx, PQ_TOK_SUB);
        case '^': return emit(lx, PQ_TOK_POW);
        case '=': {
            int32_t t = peek(s);
            if (t == '=') {
                next(s);
                return emit(lx, PQ_TOK_EQLC);
            }
            if (t == '~') return errorf_rune(lx, "unexpected character after '=': ", t, NULL);
            return emit(lx, PQ_TOK_EQL);
        }
        case '!': {
            int32_t t = next(s);
            if (t != '=') return errorf_rune(lx, "unexpected character after '!': ", t, NULL);
            return emit(lx, PQ_TOK_NEQ);
        }
        case '<':
            if (peek(s) == '=') {
                next(s);
                return emit(lx, PQ_TOK_LTE);
            }
            return emit(lx, PQ_TOK_LSS);
        case '>':
            if (peek(s) == '=') {
                next(s);
                return emit(lx, PQ_TOK_GTE);
            }
            return emit(lx, PQ_TOK_GTR);
        case '"':
        case '\'': lx->string_open = (char)r; return lex_string(s);
        case '`': lx->string_open = '`'; return lex_raw_string(s);
        case '(': {
            pq_token t = emit(lx, PQ_TOK_LEFT_PAREN);
            lx->paren_depth++;
            return t;
        }
        case ')': {
            pq_token t = emit(lx, PQ_TOK_RIGHT_PAREN);
            lx->paren_depth--;
            /* lex.go emits, then overwrites the item with the error: the
             * ')' is never seen, the error sits just after it. */
            if (lx->paren_depth < 0) return errorf_rune(lx, "unexpected right parenthesis ", r, NULL);
            return t;
        }
        case '{': {
            pq_token t = emit(lx, PQ_TOK_LEFT_BRACE);
            lx->brace_open = 1;
            return t;
        }
        case '[': {
            if (lx->bracket_open) return errorf_rune(lx, "unexpected left bracket ", r, NULL);
            lx->got_colon = 0;
            pq_token t = emit(lx, PQ_TOK_LEFT_BRACKET);
            while (pq__is_space(peek(s))) next(s);
            lx->start = lx->pos;
            lx->bracket_open = 1;
            lx->want_duration = 1;
            return t;
        }
        case ']':
            if (!lx->bracket_open) return errorf_rune(lx, "unexpected right bracket ", r, NULL);
            lx->bracket_open = 0;
            return emit(lx, PQ_TOK_RIGHT_BRACKET);
        case '@': return emit(lx, PQ_TOK_AT);
        default: break;
        }
        if (pq__is_digit(r) || (r == '.' && pq__is_digit(peek(s)))) {
            backup(s);
            return lex_number_or_duration(s);
        }
        if (pq__is_alpha(r) || r == ':') {
            if (!lx->bracket_open) {
                backup(s);
                return lex_keyword_or_identifier(s);
            }
            if (lx->got_colon) return errorf_rune(lx, "unexpected colon ", r, NULL);
            lx->got_colon = 1;
            return emit(lx, PQ_TOK_COLON);
        }
        return errorf_rune(lx, "unexpected character: ", r, NULL);
    }
}

pq_token pq__lex_next(pq_lexer *lx) {
    lexs s = {lx, 0};
    for (;;) {
        if (lx->done) return (pq_token){PQ_TOK_EOF, (uint32_t)lx->start, 0};
        pq_token t = lex_statements(&s);
        if (t.type != PQ_TOK_COMMENT) return t;
    }
}

/* ---- token descriptions ------------------------------------------------------------------ */

/* fmt's %.10q: the first 10 runes, quoted. */
static void quote_trunc(base_buf *out, const char *p, size_t n, int *ret_cut) {
    size_t i = 0, runes = 0;
    while (i < n && runes < 10) {
        uint32_t r;
        size_t w = base_utf8_decode((const unsigned char *)p + i, n - i, &r);
        i += w ? w : 1;
        runes++;
    }
    labels_quote(out, (base_str){p, i});
    *ret_cut = i < n;
}

void pq__tok_desc(const char *in, pq_token t, base_buf *out) {
    const char *v = in + t.pos;
    size_t n = t.len;
    switch (t.type) {
    case PQ_TOK_EOF: base_buf_puts(out, "end of input"); return;
    case PQ_TOK_ERROR: return;
    case PQ_TOK_IDENTIFIER:
    case PQ_TOK_METRIC_IDENTIFIER:
        base_buf_puts(out, t.type == PQ_TOK_IDENTIFIER ? "identifier " : "metric identifier ");
        labels_quote(out, (base_str){v, n});
        return;
    default: break;
    }
    if (t.type > PQ_TOK_KW_START && t.type < PQ_TOK_KW_END) {
        base_buf_printf(out, "<%.*s>", (int)n, v);
        return;
    }
    if (t.type == PQ_TOK_AT) {
        /* AT is missing from 2.42's ItemTypeStr: desc() falls back to
         * "%q %s" of the type's number and the item. */
        base_buf_printf(out, "\"<Item 57385>\" <op:%.*s>", (int)n, v);
        return;
    }
    if (t.type > PQ_TOK_OPS_START && t.type < PQ_TOK_OPS_END) {
        base_buf_printf(out, "<op:%.*s>", (int)n, v);
        return;
    }
    if (t.type > PQ_TOK_AGG_START && t.type < PQ_TOK_AGG_END) {
        base_buf_printf(out, "<aggr:%.*s>", (int)n, v);
        return;
    }
    switch (t.type) {
    case PQ_TOK_NUMBER: base_buf_puts(out, "number "); break;
    case PQ_TOK_DURATION: base_buf_puts(out, "duration "); break;
    case PQ_TOK_STRING: base_buf_puts(out, "string "); break;
    default: break; /* punctuation, start, end: just the quoted text */
    }
    int cut = 0;
    if (n > 10) {
        quote_trunc(out, v, n, &cut);
        base_buf_puts(out, "...");
    } else {
        labels_quote(out, (base_str){v, n});
    }
    (void)cut;
}

/* ---- unquoting ------------------------------------------------------------------------------ */

int pq__unquote(const char *s, size_t n, base_buf *out) {
    return base_go_unquote(s, n, 0, out);
}

/* ---- number formatting ------------------------------------------------------ */

void pq__fmt_float(base_buf *out, double v) {
    char b[BASE_FMT_DOUBLE_MAX];
    size_t n = base_fmt_double_g(b, v);
    base_buf_append(out, b, n);
}
