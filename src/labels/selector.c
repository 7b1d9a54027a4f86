/* selector.c -- a PromQL series selector for code below the promql module
 * (test fixtures); what users see goes through promql_parse_selector, 2.42's
 * own grammar. The shapes a selector can take: an optional metric name, then optional braces with
 * `name op string` matchers separated by commas (a trailing comma is
 * fine), blanks anywhere between tokens.
 *
 * Strings are PromQL's: "..." and '...' with Go's escapes (\a \b \f \n \r
 * \t \v \\, the enclosing quote, \xHH, \NNN octal, \uHHHH, \UHHHHHHHH; the
 * other quote escaped is an error, as in Prometheus's strutil.Unquote),
 * or `raw` without escapes. Errors read as Prometheus words them:
 * `1:7: parse error: unterminated quoted string`, with the 1-based byte
 * column of the token at fault (the string's quote, the matcher's name
 * for a bad regex).
 *
 * Ownership: the matchers and the array are the caller's
 * (labels_matchers_free). Nothing is kept between calls.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/utf8.h"
#include "labels/labels.h"

typedef struct sel {
    const char *p;
    size_t n, i;
    labels_matcher **ms;
    size_t nms, cap;
    base_buf val;
    char *err;
    size_t errlen;
} sel;

static int perr(sel *s, size_t at, const char *fmt, const char *arg) {
    char msg[512];
    snprintf(msg, sizeof msg, fmt, arg ? arg : "");
    /* Prometheus counts lines and columns from 1. */
    size_t line = 1, col = 1;
    for (size_t k = 0; k < at && k < s->n; k++) {
        if (s->p[k] == '\n') {
            line++;
            col = 1;
        } else
            col++;
    }
    return base_errf(s->err, s->errlen, BASE_E_PARSE, "%zu:%zu: parse error: %s", line, col, msg);
}

static void skip_ws(sel *s) {
    while (s->i < s->n &&
           (s->p[s->i] == ' ' || s->p[s->i] == '\t' || s->p[s->i] == '\n' || s->p[s->i] == '\r'))
        s->i++;
}

static int is_alpha(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
static int is_digit(char c) {
    return c >= '0' && c <= '9';
}

static int hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static void put_utf8(base_buf *b, uint32_t r) {
    unsigned char t[4];
    base_buf_append(b, t, base_utf8_encode(r, t));
}

/* Go's %#U of a byte: U+0067 'g' (the quoted form only when printable). */
static void go_u(char *out, size_t outlen, char c) {
    unsigned u = (unsigned char)c;
    if (u >= 0x20 && u < 0x7f)
        snprintf(out, outlen, "U+%04X '%c'", u, c);
    else
        snprintf(out, outlen, "U+%04X", u);
}

/* Reads the string at s->i (which is a quote) into s->val. */
static int read_string(sel *s) {
    size_t start = s->i;
    char q = s->p[s->i++];
    base_buf_reset(&s->val);
    if (q == '`') {
        size_t k = s->i;
        while (k < s->n && s->p[k] != '`') k++;
        if (k >= s->n) return perr(s, start, "unterminated raw string", NULL);
        base_buf_append(&s->val, s->p + s->i, k - s->i);
        s->i = k + 1;
        return base_buf_err(&s->val);
    }
    for (;;) {
        if (s->i >= s->n || s->p[s->i] == '\n') return perr(s, start, "unterminated quoted string", NULL);
        char c = s->p[s->i++];
        if (c == q) break;
        if (c != '\\') {
            base_buf_putc(&s->val, c);
            continue;
        }
        if (s->i >= s->n) return perr(s, start, "unterminated quoted string", NULL);
        char e = s->p[s->i++];
        switch (e) {
        case 'a': base_buf_putc(&s->val, '\a'); break;
        case 'b': base_buf_putc(&s->val, '\b'); break;
        case 'f': base_buf_putc(&s->val, '\f'); break;
        case 'n': base_buf_putc(&s->val, '\n'); break;
        case 'r': base_buf_putc(&s->val, '\r'); break;
        case 't': base_buf_putc(&s->val, '\t'); break;
        case 'v': base_buf_putc(&s->val, '\v'); break;
        case '\\': base_buf_putc(&s->val, '\\'); break;
        case '"':
        case '\'':
            if (e != q) {
                char what[32];
                go_u(what, sizeof what, e);
                return perr(s, start, "unknown escape sequence %s", what);
            }
            base_buf_putc(&s->val, e);
            break;
        case 'x':
        case 'u':
        case 'U': {
            int nd = e == 'x' ? 2 : e == 'u' ? 4 : 8;
            uint32_t r = 0;
            for (int k = 0; k < nd; k++) {
                int h = s->i < s->n ? hexval(s->p[s->i]) : -1;
                if (h < 0) {
                    if (s->i >= s->n) return perr(s, start, "unterminated quoted string", NULL);
                    char bad[32];
                    go_u(bad, sizeof bad, s->p[s->i]);
                    return perr(s, start, "illegal character %s in escape sequence", bad);
                }
                r = r * 16 + (uint32_t)h;
                s->i++;
            }
            if (e == 'x')
                base_buf_putc(&s->val, (char)r);
            else if (r > 0x10ffff || (r >= 0xd800 && r < 0xe000))
                return perr(s, start, "escape sequence is an invalid Unicode code point", NULL);
            else
                put_utf8(&s->val, r);
            break;
        }
        default:
            if (e >= '0' && e <= '7') {
                uint32_t r = (uint32_t)(e - '0');
                for (int k = 0; k < 2; k++) {
                    if (s->i >= s->n || s->p[s->i] < '0' || s->p[s->i] > '7') {
                        if (s->i >= s->n) return perr(s, start, "unterminated quoted string", NULL);
                        char bad[32];
                        go_u(bad, sizeof bad, s->p[s->i]);
                        return perr(s, start, "illegal character %s in escape sequence", bad);
                    }
                    r = r * 8 + (uint32_t)(s->p[s->i++] - '0');
                }
                if (r > 255) return perr(s, start, "escape sequence is an invalid Unicode code point", NULL);
                base_buf_putc(&s->val, (char)r);
                break;
            }
            char what[32];
            go_u(what, sizeof what, e);
            return perr(s, start, "unknown escape sequence %s", what);
        }
    }
    return base_buf_err(&s->val);
}

static int add_matcher(sel *s, labels_match_type t, base_str name, base_str value, size_t at) {
    if (s->nms == s->cap) {
        size_t nc = s->cap ? s->cap * 2 : 8;
        labels_matcher **p = realloc(s->ms, nc * sizeof *p);
        if (!p) return BASE_E_NOMEM;
        s->ms = p;
        s->cap = nc;
    }
    char msg[512];
    labels_matcher *m;
    int e = labels_matcher_new(t, name, value, &m, msg, sizeof msg);
    if (e == BASE_E_NOMEM) return e;
    if (e) return perr(s, at, "%s", msg);
    s->ms[s->nms++] = m;
    return 0;
}

/* The token at s->i, described as Prometheus's errors do. */
static void describe(sel *s, char *out, size_t outlen) {
    if (s->i >= s->n) {
        snprintf(out, outlen, "end of input");
    } else if (is_alpha(s->p[s->i])) {
        size_t k = s->i;
        while (k < s->n && (is_alpha(s->p[k]) || is_digit(s->p[k]) || s->p[k] == ':')) k++;
        snprintf(out, outlen, "identifier \"%.*s\"", (int)(k - s->i), s->p + s->i);
    } else if (is_digit(s->p[s->i])) {
        size_t k = s->i;
        while (k < s->n && (is_digit(s->p[k]) || is_alpha(s->p[k]) || s->p[k] == '.')) k++;
        snprintf(out, outlen, "number \"%.*s\"", (int)(k - s->i), s->p + s->i);
    } else {
        snprintf(out, outlen, "character: '%c'", s->p[s->i]);
    }
}

static int parse_braces(sel *s) {
    s->i++; /* '{' */
    for (;;) {
        skip_ws(s);
        if (s->i >= s->n) return perr(s, s->i, "unexpected end of input inside braces", NULL);
        if (s->p[s->i] == '}') {
            s->i++;
            return 0;
        }
        if (s->p[s->i] == ',')
            return perr(s, s->i, "unexpected \",\" in label matching, expected identifier or \"}\"", NULL);
        if (!is_alpha(s->p[s->i])) {
            char c[8];
            snprintf(c, sizeof c, "%c", s->p[s->i]);
            return perr(s, s->i, "unexpected character inside braces: '%s'", c);
        }
        size_t at = s->i;
        while (s->i < s->n && (is_alpha(s->p[s->i]) || is_digit(s->p[s->i]))) s->i++;
        base_str name = {s->p + at, s->i - at};
        skip_ws(s);
        labels_match_type t;
        if (s->i + 1 < s->n && s->p[s->i] == '=' && s->p[s->i + 1] == '~') {
            t = LABELS_MATCH_RE;
            s->i += 2;
        } else if (s->i + 1 < s->n && s->p[s->i] == '!' && s->p[s->i + 1] == '=') {
            t = LABELS_MATCH_NEQ;
            s->i += 2;
        } else if (s->i + 1 < s->n && s->p[s->i] == '!' && s->p[s->i + 1] == '~') {
            t = LABELS_MATCH_NRE;
            s->i += 2;
        } else if (s->i < s->n && s->p[s->i] == '=') {
            t = LABELS_MATCH_EQ;
            s->i += 1;
        } else {
            if (s->i >= s->n) return perr(s, s->i, "unexpected end of input inside braces", NULL);
            if (s->p[s->i] == '!') {
                char c[8];
                if (s->i + 1 >= s->n) return perr(s, s->i + 1, "unexpected end of input inside braces", NULL);
                snprintf(c, sizeof c, "%c", s->p[s->i + 1]);
                return perr(s, s->i, "unexpected character after '!' inside braces: '%s'", c);
            }
            if (!is_alpha(s->p[s->i])) {
                char c[8];
                snprintf(c, sizeof c, "%c", s->p[s->i]);
                return perr(s, s->i, "unexpected character inside braces: '%s'", c);
            }
            char d[160];
            describe(s, d, sizeof d);
            return perr(s, s->i, "unexpected %s in label matching, expected label matching operator", d);
        }
        skip_ws(s);
        if (s->i >= s->n) return perr(s, s->i, "unexpected end of input inside braces", NULL);
        char q = s->p[s->i];
        if (q != '"' && q != '\'' && q != '`') {
            if (is_alpha(q)) {
                char d[160];
                describe(s, d, sizeof d);
                return perr(s, s->i, "unexpected %s in label matching, expected string", d);
            }
            char c[8];
            snprintf(c, sizeof c, "%c", q);
            return perr(s, s->i, "unexpected character inside braces: '%s'", c);
        }
        int e = read_string(s);
        if (e) return e;
        if ((e = add_matcher(s, t, name, (base_str){s->val.data ? s->val.data : "", s->val.len}, at)))
            return e;
        skip_ws(s);
        if (s->i < s->n && s->p[s->i] == ',') {
            s->i++;
            continue;
        }
        if (s->i < s->n && s->p[s->i] == '}') continue;
        if (s->i >= s->n) return perr(s, s->i, "unexpected end of input inside braces", NULL);
        if (!is_alpha(s->p[s->i])) {
            char c[8];
            snprintf(c, sizeof c, "%c", s->p[s->i]);
            return perr(s, s->i, "unexpected character inside braces: '%s'", c);
        }
        char d[160];
        describe(s, d, sizeof d);
        return perr(s, s->i, "unexpected %s in label matching, expected \",\" or \"}\"", d);
    }
}

int labels_parse_selector(base_str in, labels_matcher ***ret, size_t *ret_n, char *err, size_t errlen) {
    sel s = {.p = in.p ? in.p : "", .n = in.n, .err = err, .errlen = errlen};
    base_buf_init(&s.val, 0);
    int e = 0;
    skip_ws(&s);
    if (s.i >= s.n) {
        e = perr(&s, s.i, "unexpected end of input", NULL);
        goto out;
    }
    if (is_alpha(s.p[s.i]) || s.p[s.i] == ':') {
        size_t at = s.i;
        while (s.i < s.n && (is_alpha(s.p[s.i]) || is_digit(s.p[s.i]) || s.p[s.i] == ':')) s.i++;
        if ((e = add_matcher(&s, LABELS_MATCH_EQ, base_str_c(LABELS_METRIC_NAME),
                             (base_str){s.p + at, s.i - at}, at)))
            goto out;
        skip_ws(&s);
    } else if (s.p[s.i] != '{') {
        char d[160];
        describe(&s, d, sizeof d);
        e = perr(&s, s.i, "unexpected %s", d);
        goto out;
    }
    if (s.i < s.n && s.p[s.i] == '{' && (e = parse_braces(&s))) goto out;
    skip_ws(&s);
    if (s.i < s.n) {
        char d[160];
        describe(&s, d, sizeof d);
        e = perr(&s, s.i, "unexpected %s", d);
        goto out;
    }
out:
    base_buf_free(&s.val);
    if (e) {
        labels_matchers_free(s.ms, s.nms);
        return e;
    }
    *ret = s.ms;
    *ret_n = s.nms;
    return 0;
}

void labels_matchers_free(labels_matcher **ms, size_t n) {
    for (size_t i = 0; i < n; i++) labels_matcher_free(ms[i]);
    free(ms);
}
