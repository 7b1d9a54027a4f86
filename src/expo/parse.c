/* parse.c -- the exposition parsers (text 0.0.4, OpenMetrics 1.0); see
 * parse.h for the contract and the compatibility notes.
 *
 * Design. Two layers, as in Prometheus 2.42's model/textparse:
 *
 *  lexers  lex_text() and lex_om() are hand-written copies of the golex
 *          automata generated from promlex.l and openmetricslex.l. Each
 *          keeps a start condition (p->state) and returns one token per
 *          call. Like golex they take the longest match WITHOUT
 *          backtracking: once a match leaves an accepting state and then
 *          fails, the token is INVALID (`m 1 # x` in OpenMetrics). nx() is
 *          golex's next(): it returns 0 at the end of input, and skips NUL
 *          bytes while the lexer is inside a label value, HELP text or
 *          comment -- a NUL anywhere else looks like the end to the
 *          automaton, exactly as in Go. The text lexer sees a virtual `\n`
 *          at buf[len] (Prometheus appends one), so the last line needs no
 *          newline; it is never read from memory.
 *
 *  parsers next_text() and next_om() follow promparse.go and
 *          openmetricsparse.go token for token, so an input fails at the
 *          same token with the same words. After a series is read, the
 *          checks Prometheus makes later but that fail the whole scrape
 *          (duplicate label names) and the caller's limits run.
 *
 *  fast    the parsers first try the common shapes straight from the
 *  paths   bytes: a metric name at a line start, `{`, ` value`, a newline
 *          after the value, and whole label pairs `name="value"` with the
 *          comma or `}` after them (names 8 bytes at a time, values 16 or
 *          8 at a time up to the next quote, backslash, NUL or newline;
 *          ASCII values skip the UTF-8 check). Each either leaves exactly
 *          the state (p->start, p->i, p->state, tokens) the lexer calls
 *          would have left, or consumes nothing and hands the input to the
 *          lexer: anything involving NUL skipping, text's virtual newline,
 *          free blanks or an error goes the slow way, so no message,
 *          position or acceptance can differ. Short decimal values (at
 *          most 15 digits, no exponent) are read with the same exact
 *          division base_parse_double makes; the duplicate-name check
 *          first tries a 256-bit filter over (length, first and last byte).
 *
 * Token start condition diagram (text; OpenMetrics adds the exemplar states
 * EXEMPLAR -> EVALUE -> ETIMESTAMP after TIMESTAMP's ` # {`):
 *
 *   INIT --name--> VALUE --{--> LABELS --=--> LVALUE --"..."--> LABELS
 *     |              |            '--}--> VALUE
 *     |              '--value--> TIMESTAMP --\n--> INIT
 *     '--# --> COMMENT --HELP/TYPE--> META1 --name--> META2 --text--> INIT
 *
 * Invariants: p->i <= p->end; every view lies in buf[0..len); the label
 * arrays hold p->nlabels/p->nelabels entries of the current series only.
 * Memory: the label arrays start inside the parser and move to the heap
 * (owned by the parser, freed by expo_parser_free) only when a series has
 * more labels than fit; so does the duplicate check's scratch array for
 * series of more than 24 labels. The only other allocation is
 * base_parse_double's temporary copy of a number token of 128+ bytes.
 */
#include "expo/parse.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "base/err.h"
#include "base/num.h"
#include "base/utf8.h"

/* ---- character classes ------------------------------------------------ */

enum {
    C_M = 1 << 0,   /* [a-zA-Z_:] metric name start */
    C_MD = 1 << 1,  /* [a-zA-Z0-9_:] */
    C_L = 1 << 2,   /* [a-zA-Z_] label name start */
    C_LD = 1 << 3,  /* [a-zA-Z0-9_] */
    C_D = 1 << 4,   /* [0-9] */
    C_TV = 1 << 5,  /* text value: not NUL \t \n space { */
    C_TQ = 1 << 6,  /* text quoted: not NUL " \ */
    C_OV = 1 << 7,  /* OpenMetrics value/timestamp: not NUL space \n */
    C_OQ = 1 << 8,  /* OpenMetrics quoted: not NUL \n " \ */
    C_TXT = 1 << 9, /* text of a line: not NUL \n */
};

/* cls[c]: the classes byte c belongs to, computed at compile time. */
#define ALPHA_(c) (((c) >= 'a' && (c) <= 'z') || ((c) >= 'A' && (c) <= 'Z') || (c) == '_')
#define DIGIT_(c) ((c) >= '0' && (c) <= '9')
#define CLS_(c)                                                                                              \
    ((ALPHA_(c) || (c) == ':' ? C_M | C_MD : 0) | (DIGIT_(c) ? C_MD | C_LD | C_D : 0) |                      \
     (ALPHA_(c) ? C_L | C_LD : 0) |                                                                          \
     ((c) == 0 ? 0                                                                                           \
               : (((c) != '\t' && (c) != '\n' && (c) != ' ' && (c) != '{' ? C_TV : 0) |                      \
                  ((c) != '"' && (c) != '\\' ? C_TQ : 0) | ((c) != ' ' && (c) != '\n' ? C_OV : 0) |          \
                  ((c) != '\n' && (c) != '"' && (c) != '\\' ? C_OQ : 0) | ((c) != '\n' ? C_TXT : 0))))
#define R4_(c)  CLS_(c), CLS_((c) + 1), CLS_((c) + 2), CLS_((c) + 3)
#define R16_(c) R4_(c), R4_((c) + 4), R4_((c) + 8), R4_((c) + 12)
#define R64_(c) R16_(c), R16_((c) + 16), R16_((c) + 32), R16_((c) + 48)
static const uint16_t cls[256] = {R64_(0), R64_(64), R64_(128), R64_(192)};

#define IS(c, m) ((cls[(c)] & (m)) != 0)
#define BLANK(c) ((c) == ' ' || (c) == '\t')

/* ---- tokens ----------------------------------------------------------- */

enum {
    T_INVALID = -1,
    T_EOF = 0,
    T_LINEBREAK,
    T_WHITESPACE,
    T_HELP,
    T_TYPE,
    T_UNIT,
    T_EOFWORD,
    T_TEXT,
    T_COMMENT,
    T_BLANK,
    T_MNAME,
    T_BOPEN,
    T_BCLOSE,
    T_LNAME,
    T_LVALUE,
    T_COMMA,
    T_EQUAL,
    T_TIMESTAMP,
    T_VALUE,
};

static const char *tok_name(int t) {
    switch (t) {
    case T_INVALID: return "INVALID";
    case T_EOF: return "EOF";
    case T_LINEBREAK: return "LINEBREAK";
    case T_WHITESPACE: return "WHITESPACE";
    case T_HELP: return "HELP";
    case T_TYPE: return "TYPE";
    case T_UNIT: return "UNIT";
    case T_EOFWORD: return "EOFWORD";
    case T_TEXT: return "TEXT";
    case T_COMMENT: return "COMMENT";
    case T_BLANK: return "BLANK";
    case T_MNAME: return "MNAME";
    case T_BOPEN: return "BOPEN";
    case T_BCLOSE: return "BCLOSE";
    case T_LNAME: return "LNAME";
    case T_LVALUE: return "LVALUE";
    case T_COMMA: return "COMMA";
    case T_EQUAL: return "EQUAL";
    case T_TIMESTAMP: return "TIMESTAMP";
    case T_VALUE: return "VALUE";
    }
    return "?";
}

/* Lexer start conditions, numbered as in the .l files. */
enum {
    S_INIT,
    S_COMMENT,
    S_META1,
    S_META2,
    S_LABELS,
    S_LVALUE,
    S_VALUE,
    S_TIMESTAMP,
    S_EXEMPLAR,
    S_EVALUE,
    S_ETIMESTAMP,
};

/* ---- lexer primitives --------------------------------------------------- */

/* The byte at i (i < end); text's virtual newline sits at len. */
static inline unsigned at(const expo_parser *p, size_t i) {
    return i < p->len ? (unsigned char)p->b[i] : '\n';
}

/* golex's next(): advance, 0 at the end, NULs skipped in some states. */
static inline unsigned nx(expo_parser *p) {
    size_t i = ++p->i;
    if (i >= p->end) return 0;
    unsigned c = at(p, i);
    if (c == 0 && (p->state == S_LVALUE || p->state == S_META2 || p->state == S_COMMENT)) {
        while (at(p, i) == 0) {
            if (++i >= p->end) {
                p->i = i;
                return 0;
            }
        }
        p->i = i;
        c = at(p, i);
    }
    return c;
}

/* Steps past the current byte and every following byte of class m (never
 * NUL), then one nx(): the same as calling nx() while the class matches,
 * without the per-byte checks. */
static inline unsigned run(expo_parser *p, uint16_t m) {
    const unsigned char *b = (const unsigned char *)p->b;
    size_t i = p->i + 1, n = p->len;
    while (i < n && (cls[b[i]] & m)) i++;
    p->i = i - 1;
    return nx(p);
}

static inline base_str tokbuf(const expo_parser *p) {
    return (base_str){p->b + p->start, p->i - p->start};
}

/* ---- the text lexer (promlex.l) ------------------------------------------ */

static int consume_comment(expo_parser *p) {
    if (p->i >= p->end) return T_EOF;
    for (unsigned c = at(p, p->i);; c = nx(p)) {
        if (c == 0) return T_EOF;
        if (c == '\n') {
            p->state = S_INIT;
            return T_COMMENT;
        }
    }
}

/* Matches the rest of a keyword and the blanks after it. */
static int kw_blanks(expo_parser *p, const char *rest) {
    for (; *rest; rest++)
        if (nx(p) != (unsigned char)*rest) return 0;
    unsigned c = nx(p);
    if (!BLANK(c)) return 0;
    do c = nx(p);
    while (BLANK(c));
    return 1;
}

static int lex_text(expo_parser *p) {
    if (p->i >= p->end) return T_EOF;
    unsigned c = at(p, p->i);
    p->start = p->i;
again:
    switch (p->state) {
    case S_INIT:
        if (c == '#') {
            c = nx(p);
            if (!BLANK(c)) return consume_comment(p);
            do c = nx(p);
            while (BLANK(c));
            p->state = S_COMMENT;
            goto again;
        }
        if (IS(c, C_M)) {
            run(p, C_MD);
            p->state = S_VALUE;
            return T_MNAME;
        }
        if (c == '\n') {
            nx(p);
            p->state = S_INIT;
            return T_LINEBREAK;
        }
        if (BLANK(c)) goto ws;
        if (c == 0) {
            nx(p);
            return T_EOF;
        }
        goto abort;
    case S_COMMENT:
        if (c == 'H') {
            if (!kw_blanks(p, "ELP")) goto abort;
            p->state = S_META1;
            return T_HELP;
        }
        if (c == 'T') {
            if (!kw_blanks(p, "YPE")) goto abort;
            p->state = S_META1;
            return T_TYPE;
        }
        if (BLANK(c)) goto ws;
        goto abort;
    case S_META1:
        if (IS(c, C_M)) {
            run(p, C_MD);
            p->state = S_META2;
            return T_MNAME;
        }
        if (BLANK(c)) goto ws;
        goto abort;
    case S_META2:
        if (BLANK(c)) {
            do c = nx(p);
            while (BLANK(c));
            if (!IS(c, C_TXT)) return T_WHITESPACE;
        }
        while (IS(c, C_TXT)) c = run(p, C_TXT);
        p->state = S_INIT;
        return T_TEXT;
    case S_LABELS:
        switch (c) {
        case ',': nx(p); return T_COMMA;
        case '=':
            nx(p);
            p->state = S_LVALUE;
            return T_EQUAL;
        case '}':
            nx(p);
            p->state = S_VALUE;
            return T_BCLOSE;
        case ' ':
        case '\t': goto ws;
        }
        if (IS(c, C_L)) {
            run(p, C_LD);
            return T_LNAME;
        }
        goto abort;
    case S_LVALUE:
        if (c == '"') {
            c = nx(p);
            for (;;) {
                if (c == '"') {
                    nx(p);
                    p->state = S_LABELS;
                    return T_LVALUE;
                }
                if (c == '\\') {
                    c = nx(p);
                    if (!IS(c, C_TXT)) goto abort;
                    c = nx(p);
                    continue;
                }
                if (!IS(c, C_TQ)) goto abort;
                c = run(p, C_TQ);
            }
        }
        if (BLANK(c)) goto ws;
        goto abort;
    case S_VALUE:
        if (IS(c, C_TV)) {
            run(p, C_TV);
            p->state = S_TIMESTAMP;
            return T_VALUE;
        }
        if (c == '{') {
            nx(p);
            p->state = S_LABELS;
            return T_BOPEN;
        }
        if (BLANK(c)) goto ws;
        goto abort;
    case S_TIMESTAMP:
        if (IS(c, C_D)) {
            run(p, C_D);
            return T_TIMESTAMP;
        }
        if (c == '\n') {
            nx(p);
            p->state = S_INIT;
            return T_LINEBREAK;
        }
        if (BLANK(c)) goto ws;
        goto abort;
    }
abort:
    if (p->state == S_COMMENT) return consume_comment(p);
    return T_INVALID;
ws:
    do c = nx(p);
    while (BLANK(c));
    return T_WHITESPACE;
}

/* ---- the OpenMetrics lexer (openmetricslex.l) ------------------------------ */

static int kw_space(expo_parser *p, const char *rest) {
    for (; *rest; rest++)
        if (nx(p) != (unsigned char)*rest) return 0;
    if (nx(p) != ' ') return 0;
    nx(p);
    return 1;
}

/* A quoted label value from its opening quote; OpenMetrics excludes \n. */
static int om_quoted(expo_parser *p, int next_state) {
    unsigned c = nx(p);
    for (;;) {
        if (c == '"') {
            nx(p);
            p->state = next_state;
            return T_LVALUE;
        }
        if (c == '\\') {
            c = nx(p);
            if (!IS(c, C_TXT)) return T_INVALID;
            c = nx(p);
            continue;
        }
        if (!IS(c, C_OQ)) return T_INVALID;
        c = run(p, C_OQ);
    }
}

static int lex_om(expo_parser *p) {
    if (p->i >= p->end) return T_EOF;
    unsigned c = at(p, p->i);
    p->start = p->i;
again:
    switch (p->state) {
    case S_INIT:
        if (c == '#') {
            if (nx(p) != ' ') return T_INVALID;
            c = nx(p);
            p->state = S_COMMENT;
            goto again;
        }
        if (IS(c, C_M)) {
            run(p, C_MD);
            p->state = S_VALUE;
            return T_MNAME;
        }
        return T_INVALID;
    case S_COMMENT:
        switch (c) {
        case 'E':
            if (nx(p) != 'O' || nx(p) != 'F') return T_INVALID;
            if (nx(p) == '\n') nx(p);
            p->state = S_INIT;
            return T_EOFWORD;
        case 'H':
            if (!kw_space(p, "ELP")) return T_INVALID;
            p->state = S_META1;
            return T_HELP;
        case 'T':
            if (!kw_space(p, "YPE")) return T_INVALID;
            p->state = S_META1;
            return T_TYPE;
        case 'U':
            if (!kw_space(p, "NIT")) return T_INVALID;
            p->state = S_META1;
            return T_UNIT;
        }
        return T_INVALID;
    case S_META1:
        if (IS(c, C_M)) {
            run(p, C_MD);
            p->state = S_META2;
            return T_MNAME;
        }
        return T_INVALID;
    case S_META2:
        if (c != ' ') return T_INVALID;
        for (c = nx(p); c != '\n'; c = run(p, C_TXT))
            if (!IS(c, C_TXT)) return T_INVALID;
        nx(p);
        p->state = S_INIT;
        return T_TEXT;
    case S_LABELS:
    case S_EXEMPLAR:
        switch (c) {
        case ',': nx(p); return T_COMMA;
        case '=':
            nx(p);
            p->state = p->state == S_LABELS ? S_LVALUE : S_EVALUE;
            return T_EQUAL;
        case '}':
            nx(p);
            p->state = p->state == S_LABELS ? S_VALUE : S_EVALUE;
            return T_BCLOSE;
        }
        if (IS(c, C_L)) {
            run(p, C_LD);
            return T_LNAME;
        }
        return T_INVALID;
    case S_LVALUE:
        if (c == '"') return om_quoted(p, S_LABELS);
        return T_INVALID;
    case S_VALUE:
    case S_EVALUE:
        if (c == ' ') {
            c = nx(p);
            if (!IS(c, C_OV)) return T_INVALID;
            run(p, C_OV);
            p->state = p->state == S_VALUE ? S_TIMESTAMP : S_ETIMESTAMP;
            return T_VALUE;
        }
        if (c == '{' && p->state == S_VALUE) {
            nx(p);
            p->state = S_LABELS;
            return T_BOPEN;
        }
        if (c == '"' && p->state == S_EVALUE) return om_quoted(p, S_EXEMPLAR);
        return T_INVALID;
    case S_TIMESTAMP:
    case S_ETIMESTAMP:
        if (c == '\n') {
            nx(p);
            p->state = S_INIT;
            return T_LINEBREAK;
        }
        if (c != ' ') return T_INVALID;
        c = nx(p);
        if (c == '#' && p->state == S_TIMESTAMP) {
            c = nx(p);
            if (c == ' ') {
                if (nx(p) != '{') return T_INVALID;
                nx(p);
                p->state = S_EXEMPLAR;
                return T_COMMENT;
            }
        } else if (!IS(c, C_OV)) {
            return T_INVALID;
        }
        while (IS(c, C_OV)) c = run(p, C_OV);
        return T_TIMESTAMP;
    }
    return T_INVALID;
}

/* The text parser's nextToken(): skips blanks. */
static int tok_text(expo_parser *p) {
    int t;
    while ((t = lex_text(p)) == T_WHITESPACE) {
    }
    return t;
}

/* ---- fast paths ------------------------------------------------------------
 *
 * The common token shapes, recognised straight from the bytes. Each one
 * either reproduces exactly what the lexer calls above would have done
 * (tokens, p->start, p->i, p->state) or consumes nothing and leaves the
 * input to them: it bails out on every byte whose handling needs nx()'s
 * NUL skipping, text's virtual newline or an error message. */

#define ONES        UINT64_C(0x0101010101010101)
#define HIGHS       UINT64_C(0x8080808080808080)
/* Nonzero iff some byte of w is zero. */
#define HAS_ZERO(w) (((w)-ONES) & ~(w)&HIGHS)

#ifdef __GNUC__
#define ALWAYS_INLINE_ __attribute__((always_inline))
#else
#define ALWAYS_INLINE_
#endif
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ && defined(__GNUC__)
#define LITTLE_ENDIAN_ 1
#else
#define LITTLE_ENDIAN_ 0
#endif

/* The high bit of each byte of w set iff the byte is in [a-zA-Z0-9_], or
 * also ':' when colon (no carry crosses a byte: every sum stays below
 * 0x100). */
static inline uint64_t name_bytes(uint64_t w, int colon) {
    const uint64_t low7 = ONES * 0x7f;
    uint64_t x = w & low7, lc = (w | (ONES * 0x20)) & low7;
    uint64_t alpha = (lc + ONES * (0x80 - 'a')) & ~(lc + ONES * (0x80 - 'z' - 1));
    uint64_t digit = (x + ONES * (0x80 - '0')) & ~(x + ONES * (0x80 - '9' - 1));
    uint64_t u = (w ^ (ONES * '_')) & low7;
    uint64_t under = ~((u + low7) | u);
    if (colon) {
        uint64_t c = (w ^ (ONES * ':')) & low7;
        under |= ~(c + low7);
    }
    return (alpha | digit | under) & ~w & HIGHS;
}

/* The end of the name run that starts at i: bytes of [a-zA-Z0-9_] (and
 * ':' when colon) from i + 1 on. */
static inline size_t name_end(const unsigned char *b, size_t i, size_t n, int colon) {
    size_t k = i + 1;
#if LITTLE_ENDIAN_
    while (k + 8 <= n) {
        uint64_t w;
        memcpy(&w, b + k, 8);
        uint64_t nonname = ~name_bytes(w, colon) & HIGHS;
        if (nonname) return k + ((size_t)__builtin_ctzll(nonname) >> 3);
        k += 8;
    }
#endif
    uint16_t m = colon ? C_MD : C_LD;
    while (k < n && IS(b[k], m)) k++;
    return k;
}

/* State INIT: a metric name, else lex(). */
static inline int tok_line_start(expo_parser *p, int (*lex)(expo_parser *)) {
    size_t i = p->i;
    if (p->state == S_INIT && i < p->len && IS((unsigned char)p->b[i], C_M)) {
        p->start = i;
        p->i = name_end((const unsigned char *)p->b, i, p->len, 1);
        p->state = S_VALUE;
        return T_MNAME;
    }
    return lex(p);
}

/* A label pair `name="value"` at i (state LABELS): on success stores the
 * end of the name (where `=` is), the closing quote q (q + 1 < len), and
 * whether the value token is ASCII. om: OpenMetrics (no raw newline). */
static inline ALWAYS_INLINE_ int scan_pair(const expo_parser *p, size_t i, int om, size_t *ret_eq,
                                           size_t *ret_q, int *ret_ascii) {
    const unsigned char *b = (const unsigned char *)p->b;
    size_t n = p->len;
    if (i >= n || !IS(b[i], C_L)) return 0;
    size_t k = name_end(b, i, n, 0);
    if (k + 2 >= n || b[k] != '=' || b[k + 1] != '"') return 0;
    size_t eq = k;
    k += 2;
    uint64_t hi = 0;
    for (;;) {
#ifdef __SSE2__
        /* sixteen bytes at a time until one is a quote, a backslash, NUL
         * (or a newline) */
        if (k + 16 <= n) {
            const __m128i zero = _mm_setzero_si128();
            __m128i his = zero;
            unsigned mask = 0;
            do {
                __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(b + k));
                __m128i m = _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('"')), _mm_cmpeq_epi8(v, zero));
                m = _mm_or_si128(m, _mm_cmpeq_epi8(v, _mm_set1_epi8('\\')));
                if (om) m = _mm_or_si128(m, _mm_cmpeq_epi8(v, _mm_set1_epi8('\n')));
                his = _mm_or_si128(his, v); /* bytes past a stop too: harmless */
                mask = (unsigned)_mm_movemask_epi8(m);
                if (mask) break;
                k += 16;
            } while (k + 16 <= n);
            if (_mm_movemask_epi8(his)) hi = HIGHS;
            if (mask) {
                k += (size_t)__builtin_ctz(mask);
                goto stop_byte;
            }
        }
#endif
        /* eight bytes at a time until one may be a quote, a backslash, NUL
         * (or a newline) */
        while (k + 8 <= n) {
            uint64_t w;
            memcpy(&w, b + k, 8);
            uint64_t stop = HAS_ZERO(w) | HAS_ZERO(w ^ (ONES * '"')) | HAS_ZERO(w ^ (ONES * '\\'));
            if (om) stop |= HAS_ZERO(w ^ (ONES * '\n'));
            hi |= w; /* bytes past a stop too: at worst a needless UTF-8 check */
            if (stop) {
#if LITTLE_ENDIAN_
                k += (size_t)__builtin_ctzll(stop) >> 3; /* the lowest flag is exact */
#endif
                break;
            }
            k += 8;
        }
        if (k >= n) return 0;
#ifdef __SSE2__
    stop_byte:;
#endif
        unsigned c = b[k];
        hi |= c;
        if (c == '"') break;
        if (c == '\\') {
            if (k + 1 >= n) return 0;
            unsigned d = b[k + 1];
            if (d == 0 || d == '\n') return 0; /* NUL skipping or an error */
            hi |= d;
            k += 2;
            continue;
        }
        if (c == 0 || (om && c == '\n')) return 0;
        k++;
    }
    if (k + 1 >= n || b[k + 1] == 0) return 0; /* nx() would skip NULs */
    *ret_eq = eq;
    *ret_q = k;
    *ret_ascii = (hi & HIGHS) == 0;
    return 1;
}

/* Makes the state what the lexer leaves after the LVALUE of a pair found
 * by scan_pair(); returns the label name. */
static inline base_str take_pair(expo_parser *p, size_t i, size_t eq, size_t q) {
    p->start = eq + 1;
    p->i = q + 1;
    p->state = S_LABELS;
    return (base_str){p->b + i, eq - i};
}

/* State VALUE: `{`, or a blank and a value of class vcls, else lex(). The
 * value token starts after the blank in text (vskip 1) and at it in
 * OpenMetrics (vskip 0), as the two lexers have it. */
static inline int tok_after_name(expo_parser *p, int vcls, size_t vskip, int (*lex)(expo_parser *)) {
    const unsigned char *b = (const unsigned char *)p->b;
    size_t i = p->i, n = p->len;
    if (i + 1 < n) {
        if (b[i] == '{') {
            p->start = i;
            p->i = i + 1;
            p->state = S_LABELS;
            return T_BOPEN;
        }
        if (b[i] == ' ' && IS(b[i + 1], vcls)) {
            size_t k = i + 2;
            while (k < n && IS(b[k], vcls)) k++;
            p->start = i + vskip;
            p->i = k;
            p->state = S_TIMESTAMP;
            return T_VALUE;
        }
    }
    return lex(p);
}

/* State TIMESTAMP: a newline (both formats), else lex(). */
static inline int tok_after_value(expo_parser *p, int (*lex)(expo_parser *)) {
    size_t i = p->i;
    if (i < p->len && p->b[i] == '\n') {
        p->start = i;
        p->i = i + 1;
        p->state = S_INIT;
        return T_LINEBREAK;
    }
    return lex(p);
}

/* ---- error messages ----------------------------------------------------- */

typedef struct msgbuf {
    char *p;
    size_t n, cap;
} msgbuf;

static void m_put(msgbuf *m, const char *s, size_t n) {
    if (m->n + n >= m->cap) {
        n = m->cap - 1 - m->n;
        if (m->cap - 1 - m->n > 3 && n > 3) n -= 3;
    }
    memcpy(m->p + m->n, s, n);
    m->n += n;
    m->p[m->n] = '\0';
}
static void m_puts(msgbuf *m, const char *s) {
    m_put(m, s, strlen(s));
}
static void m_u64(msgbuf *m, uint64_t v) {
    char t[24];
    size_t n = base_fmt_u64(t, v);
    m_put(m, t, n < sizeof t ? n : sizeof t); /* the bound keeps -O3's array-bounds check quiet */
}

/* Approximates Go's strconv.IsPrint for runes >= 0x80: Go consults the full
 * Unicode tables; we treat every assigned-looking rune as printable except
 * controls, format characters, separators and private use. Only affects
 * how error messages quote odd bytes. */
static int go_isprint(uint32_t r) {
    if (r < 0x20 || r == 0x7f) return 0;
    if (r < 0x7f) return 1;
    if (r <= 0xa0 || r == 0xad) return 0;
    if (r == 0x61c || r == 0x180e || r == 0x1680 || r == 0x3000 || r == 0xfeff) return 0;
    if ((r >= 0x2000 && r <= 0x200f) || (r >= 0x2028 && r <= 0x202f) || (r >= 0x205f && r <= 0x206f))
        return 0;
    if ((r >= 0xe000 && r <= 0xf8ff) || (r >= 0xfff9 && r <= 0xfffb) || r == 0xfffe || r == 0xffff) return 0;
    if (r >= 0xf0000) return 0;
    return 1;
}

static const char hexd[] = "0123456789abcdef";

static void m_rune_quoted(msgbuf *m, uint32_t r, const unsigned char *raw, size_t rawlen) {
    char t[12];
    size_t k = 0;
    if (r == '"' || r == '\\') {
        t[k++] = '\\';
        t[k++] = (char)r;
    } else if (go_isprint(r)) {
        m_put(m, (const char *)raw, rawlen);
        return;
    } else if (r < 0x80) {
        const char *esc = NULL;
        switch (r) {
        case '\a': esc = "\\a"; break;
        case '\b': esc = "\\b"; break;
        case '\f': esc = "\\f"; break;
        case '\n': esc = "\\n"; break;
        case '\r': esc = "\\r"; break;
        case '\t': esc = "\\t"; break;
        case '\v': esc = "\\v"; break;
        }
        if (esc) {
            m_puts(m, esc);
            return;
        }
        t[k++] = '\\';
        t[k++] = 'x';
        t[k++] = hexd[r >> 4];
        t[k++] = hexd[r & 15];
    } else {
        int digits = r < 0x10000 ? 4 : 8;
        t[k++] = '\\';
        t[k++] = digits == 4 ? 'u' : 'U';
        for (int s = (digits - 1) * 4; s >= 0; s -= 4) t[k++] = hexd[(r >> s) & 15];
    }
    m_put(m, t, k);
}

/* Appends s as Go's %q (strconv.Quote) writes it. */
static void m_quote(msgbuf *m, const char *s, size_t n) {
    const unsigned char *u = (const unsigned char *)s;
    m_put(m, "\"", 1);
    for (size_t i = 0; i < n && m->n + 1 < m->cap;) {
        uint32_t r;
        size_t k = base_utf8_decode(u + i, n - i, &r);
        if (!k) {
            char t[4] = {'\\', 'x', hexd[u[i] >> 4], hexd[u[i] & 15]};
            m_put(m, t, 4);
            i++;
            continue;
        }
        m_rune_quoted(m, r, u + i, k);
        i += k;
    }
    m_put(m, "\"", 1);
}

/* Go's %q of string(b) for one byte b: the rune U+00bb. */
static void m_quote_byte(msgbuf *m, unsigned b) {
    unsigned char raw[2];
    size_t k;
    if (b < 0x80)
        raw[0] = (unsigned char)b, k = 1;
    else
        raw[0] = (unsigned char)(0xc0 | (b >> 6)), raw[1] = (unsigned char)(0x80 | (b & 0x3f)), k = 2;
    m_put(m, "\"", 1);
    m_rune_quoted(m, b, raw, k);
    m_put(m, "\"", 1);
}

static msgbuf msg_begin(expo_parser *p) {
    msgbuf m = {p->errmsg, 0, sizeof p->errmsg};
    p->errmsg[0] = '\0';
    return m;
}

/* Records the error found at byte pos and makes it sticky. */
static int fail_at(expo_parser *p, int code, size_t pos) {
    if (pos > p->len) pos = p->len;
    size_t line = 1, ls = 0;
    const char *b = p->b, *q;
    size_t off = 0;
    while (off < pos && (q = memchr(b + off, '\n', pos - off)) != NULL) {
        line++;
        off = (size_t)(q - b) + 1;
        ls = off;
    }
    p->err_line = line;
    p->err_col = pos - ls + 1;
    msgbuf a = {p->errmsg_at, 0, sizeof p->errmsg_at};
    m_u64(&a, line);
    m_put(&a, ":", 1);
    m_u64(&a, p->err_col);
    m_put(&a, ": ", 2);
    m_puts(&a, p->errmsg);
    p->err = code;
    return code;
}

/* A syntax error at the current token: "<exp>, got "<TOKEN>"". */
static int perr(expo_parser *p, const char *exp, int got) {
    msgbuf m = msg_begin(p);
    m_puts(&m, exp);
    m_puts(&m, ", got \"");
    m_puts(&m, tok_name(got));
    m_puts(&m, "\"");
    return fail_at(p, BASE_E_PARSE, got == T_INVALID || got == T_EOF ? p->i : p->start);
}

static int fail_msg(expo_parser *p, int code, size_t pos, const char *msg) {
    msgbuf m = msg_begin(p);
    m_puts(&m, msg);
    return fail_at(p, code, pos);
}

static int fail_nomem(expo_parser *p) {
    return fail_msg(p, BASE_E_NOMEM, p->pstart, "out of memory");
}

/* ---- numbers -------------------------------------------------------------- */

static double normal_nan(void) {
    uint64_t bits = EXPO_NORMAL_NAN_BITS;
    double v;
    memcpy(&v, &bits, sizeof v);
    return v;
}

/* Exact powers of ten (every one is a double without rounding). */
static const double pow10_small[] = {1e0, 1e1, 1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                     1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15};

/* The common value shapes, [0-9]*.?[0-9]* with 1..15 digits: the mantissa
 * is below 2^53 and the power of ten exact, so one IEEE division gives the
 * correctly rounded result -- the very computation base_parse_double's own
 * fast path makes, so the bits are the same. Returns 0 when s has another
 * shape (the caller takes the general path). */
static inline int float_fast(base_str s, double *ret) {
    if (s.n == 0 || s.n > 16) return 0;
    uint64_t mant = 0;
    size_t digits = 0, frac = 0;
    int dot = 0;
    for (size_t k = 0; k < s.n; k++) {
        unsigned d = (unsigned char)s.p[k] - '0';
        if (d < 10) {
            mant = mant * 10 + d;
            digits++;
            frac += (size_t)dot;
        } else if (s.p[k] == '.' && !dot) {
            dot = 1;
        } else {
            return 0;
        }
    }
    if (digits == 0 || digits > 15) return 0;
    double v = (double)mant;
    *ret = frac ? v / pow10_small[frac] : v;
    return 1;
}

/* Prometheus's parseFloat: Go's strconv.ParseFloat after refusing p P _. */
static int go_float(expo_parser *p, base_str s, double *ret) {
    if (float_fast(s, ret)) return 0;
    for (size_t k = 0; k < s.n; k++) {
        char c = s.p[k];
        if (c == 'p' || c == 'P' || c == '_')
            return fail_msg(p, BASE_E_PARSE, (size_t)(s.p - p->b), "unsupported character in float");
    }
    double v;
    int rc = base_parse_double(s.p, s.n, &v);
    if (rc) {
        msgbuf m = msg_begin(p);
        m_puts(&m, "strconv.ParseFloat: parsing ");
        m_quote(&m, s.p, s.n);
        m_puts(&m, rc == BASE_E_RANGE ? ": value out of range" : ": invalid syntax");
        return fail_at(p, BASE_E_PARSE, (size_t)(s.p - p->b));
    }
    *ret = isnan(v) ? normal_nan() : v;
    return 0;
}

/* Go's int64(f) as amd64 computes it: truncation, INT64_MIN when out of
 * range. */
static int64_t go_int64(double f) {
    if (isnan(f) || f >= 9223372036854775808.0 || f < -9223372036854775808.0) return INT64_MIN;
    return (int64_t)f;
}

/* An OpenMetrics timestamp token (with its leading space). */
static int om_ts(expo_parser *p, base_str tok, const char *what, int64_t *ret) {
    base_str s = {tok.p + 1, tok.n - 1};
    double f;
    int rc = go_float(p, s, &f);
    if (rc) return rc;
    if (isnan(f) || isinf(f)) return fail_msg(p, BASE_E_PARSE, (size_t)(s.p - p->b), what);
    *ret = go_int64(f * 1000);
    return 0;
}

/* ---- entries ---------------------------------------------------------------- */

static void reset_entry(expo_parser *p) {
    p->pstart = p->i;
    p->name = p->text = p->series = (base_str){p->b + p->i, 0};
    p->nlabels = p->nelabels = 0;
    p->has_ts = p->has_exemplar = p->has_ets = 0;
    p->ts = p->ets = 0;
    p->value = p->evalue = 0;
    p->type = EXPO_UNTYPED;
}

static int grow(expo_parser *p, expo_label **arr, size_t *cap, expo_label *inl) {
    size_t ncap = *cap * 2;
    expo_label *n;
    if (*arr == inl) {
        n = malloc(ncap * sizeof *n);
        if (n) memcpy(n, inl, *cap * sizeof *n);
    } else {
        n = realloc(*arr, ncap * sizeof *n);
    }
    if (!n) return fail_nomem(p);
    *arr = n;
    *cap = ncap;
    return 0;
}

static void m_name50(msgbuf *m, base_str s) {
    m_put(m, s.p, s.n > 50 ? 50 : s.n);
}

static int name_too_long(expo_parser *p, base_str name, int is_metric) {
    size_t max = p->lim.max_name_len;
    msgbuf m = msg_begin(p);
    if (is_metric) {
        m_puts(&m, "metric name length limit exceeded (metric: ");
        m_name50(&m, name);
    } else {
        m_puts(&m, "label_name_length_limit exceeded (metric: ");
        m_name50(&m, p->name);
        m_puts(&m, ", label name: ");
        m_name50(&m, name);
    }
    m_puts(&m, ", length: ");
    m_u64(&m, name.n);
    m_puts(&m, ", limit: ");
    m_u64(&m, max);
    m_puts(&m, ")");
    return fail_at(p, BASE_E_LIMIT, (size_t)(name.p - p->b));
}

static inline int check_name_len(expo_parser *p, base_str name, int is_metric) {
    if (!p->lim.max_name_len || name.n <= p->lim.max_name_len) return 0;
    return name_too_long(p, name, is_metric);
}

/* Length of a raw label value once unescaped. */
static size_t unescaped_len(base_str raw) {
    size_t n = raw.n;
    for (size_t k = 0; k + 1 < raw.n; k++) {
        if (raw.p[k] != '\\') continue;
        char c = raw.p[k + 1];
        if (c == '\\' || c == '"' || c == 'n') {
            n--;
            k++;
        }
    }
    return n;
}

/* Adds a label whose name is lname and whose LVALUE token is current;
 * ascii: the token is known to be ASCII (so valid UTF-8). */
static int add_label_tok(expo_parser *p, base_str lname, int exemplar, int ascii) {
    base_str tok = tokbuf(p);
    if (!ascii && !base_utf8_valid(tok.p, tok.n))
        return fail_msg(p, BASE_E_PARSE, p->start, "invalid UTF-8 label value");
    base_str v = {tok.p + 1, tok.n - 2};
    size_t *n = exemplar ? &p->nelabels : &p->nlabels;
    if (*n >= p->lim.max_labels) {
        msgbuf m = msg_begin(p);
        m_puts(&m, exemplar ? "exemplar label limit exceeded (metric: " : "label_limit exceeded (metric: ");
        m_name50(&m, p->name);
        m_puts(&m, ", number of labels: more than ");
        m_u64(&m, p->lim.max_labels);
        m_puts(&m, ", limit: ");
        m_u64(&m, p->lim.max_labels);
        m_puts(&m, ")");
        return fail_at(p, BASE_E_LIMIT, (size_t)(lname.p - p->b));
    }
    int rc = check_name_len(p, lname, 0);
    if (rc) return rc;
    size_t vmax = p->lim.max_value_len;
    if (vmax && v.n > vmax) {
        size_t ul = unescaped_len(v);
        if (ul > vmax) {
            msgbuf m = msg_begin(p);
            m_puts(&m, "label_value_length_limit exceeded (metric: ");
            m_name50(&m, p->name);
            m_puts(&m, ", label name: ");
            m_name50(&m, lname);
            m_puts(&m, ", value: ");
            m_quote(&m, v.p, v.n > 50 ? 50 : v.n);
            m_puts(&m, ", length: ");
            m_u64(&m, ul);
            m_puts(&m, ", limit: ");
            m_u64(&m, vmax);
            m_puts(&m, ")");
            return fail_at(p, BASE_E_LIMIT, (size_t)(v.p - p->b));
        }
    }
    if (exemplar) {
        if (p->nelabels == p->cap_elabels && grow(p, &p->elabels, &p->cap_elabels, p->inline_elabels))
            return p->err;
        p->elabels[p->nelabels++] = (expo_label){lname, v};
    } else {
        if (p->nlabels == p->cap_labels && grow(p, &p->labels, &p->cap_labels, p->inline_labels))
            return p->err;
        p->labels[p->nlabels++] = (expo_label){lname, v};
    }
    return 0;
}

static int add_label(expo_parser *p, base_str lname, int exemplar) {
    return add_label_tok(p, lname, exemplar, 0);
}

/* add_label_tok() for a series label, its checks short-cut when no limit
 * but max_labels is set, the value is ASCII and the array has room. */
static inline int add_pair(expo_parser *p, base_str lname, int ascii) {
    size_t n = p->nlabels;
    if (ascii && n < p->cap_labels && n < p->lim.max_labels && !p->lim.max_name_len &&
        !p->lim.max_value_len) {
        p->labels[n] = (expo_label){lname, {p->b + p->start + 1, p->i - p->start - 2}};
        p->nlabels = n + 1;
        return 0;
    }
    return add_label_tok(p, lname, 0, ascii);
}

static int str_cmp(base_str a, base_str b) {
    size_t n = a.n < b.n ? a.n : b.n;
    int c = n ? memcmp(a.p, b.p, n) : 0;
    if (c) return c;
    return a.n < b.n ? -1 : a.n > b.n;
}

static int lp_cmp(const void *x, const void *y) {
    const expo_label *a = *(const expo_label *const *)x, *b = *(const expo_label *const *)y;
    return str_cmp(a->name, b->name);
}

/* A bit of the duplicate filter for a (non-empty) label name. */
static inline unsigned name_bit(base_str a) {
    uint32_t h = (uint32_t)a.n * 0x9e3779b1u ^ (uint32_t)(unsigned char)a.p[0] * 0x85ebca77u ^
                 (uint32_t)(unsigned char)a.p[a.n - 1] * 0xc2b2ae3du;
    return h >> 24;
}

/* Prometheus's HasDuplicateLabelNames, after its builder has dropped every
 * label of a name that has an empty value. The metric name is __name__. */
static int check_dups(expo_parser *p) {
    size_t n = p->nlabels;
    if (n == 0) return 0;
    expo_label self = {{"__name__", 8}, p->name};
    base_str dup = {NULL, 0};
    int found = 0;
    if (n <= 24) {
        /* the common case first: all names differ. A 256-bit filter over
         * (length, first byte, last byte) proves it without comparing
         * pairs when no two names, __name__ included, share a bit. */
        uint64_t seen[4] = {0};
        unsigned h = name_bit(self.name);
        seen[h >> 6] |= UINT64_C(1) << (h & 63);
        size_t k = 0;
        for (; k < n; k++) {
            h = name_bit(p->labels[k].name);
            uint64_t bit = UINT64_C(1) << (h & 63);
            if (seen[h >> 6] & bit) break;
            seen[h >> 6] |= bit;
        }
        if (k == n) return 0;
        int any = 0;
        for (size_t i = 0; i < n && !any; i++) {
            base_str a = p->labels[i].name; /* label names are never empty */
            if (a.n == 8 && memcmp(a.p, "__name__", 8) == 0) any = 1;
            for (size_t j = 0; j < i && !any; j++) {
                base_str b = p->labels[j].name;
                any = a.n == b.n && a.p[0] == b.p[0] && memcmp(a.p, b.p, a.n) == 0;
            }
        }
        if (!any) return 0;
        for (size_t i = 0; i <= n; i++) {
            const expo_label *a = i < n ? &p->labels[i] : &self;
            if (found && str_cmp(a->name, dup) >= 0) continue;
            int count = 1, empty = a->value.n == 0;
            for (size_t j = 0; j <= n; j++) {
                if (j == i) continue;
                const expo_label *b = j < n ? &p->labels[j] : &self;
                if (base_str_eq(a->name, b->name)) {
                    if (j < i) goto next; /* counted from its first occurrence */
                    count++;
                    empty |= b->value.n == 0;
                }
            }
            if (count > 1 && !empty) {
                dup = a->name;
                found = 1;
            }
        next:;
        }
    } else {
        if (p->cap_scratch < n + 1) {
            const expo_label **s = realloc(p->scratch, (n + 1) * sizeof *s);
            if (!s) return fail_nomem(p);
            p->scratch = s;
            p->cap_scratch = n + 1;
        }
        for (size_t i = 0; i < n; i++) p->scratch[i] = &p->labels[i];
        p->scratch[n] = &self;
        qsort(p->scratch, n + 1, sizeof *p->scratch, lp_cmp);
        for (size_t i = 0; i <= n && !found;) {
            size_t j = i + 1;
            int empty = p->scratch[i]->value.n == 0;
            while (j <= n && base_str_eq(p->scratch[j]->name, p->scratch[i]->name)) {
                empty |= p->scratch[j]->value.n == 0;
                j++;
            }
            if (j - i > 1 && !empty) {
                dup = p->scratch[i]->name;
                found = 1;
            }
            i = j;
        }
    }
    if (!found) return 0;
    msgbuf m = msg_begin(p);
    m_puts(&m, "label name ");
    m_quote(&m, dup.p, dup.n);
    m_puts(&m, " is not unique: invalid sample");
    return fail_at(p, BASE_E_PARSE, p->pstart);
}

/* Checks that run once an entry was read. */
static int finish_entry(expo_parser *p, int entry) {
    if (p->lim.max_line_len) {
        size_t n = p->i - p->pstart;
        if (n && at(p, p->i - 1) == '\n') n--;
        if (n > p->lim.max_line_len) {
            msgbuf m = msg_begin(p);
            m_puts(&m, "line too long (length: ");
            m_u64(&m, n);
            m_puts(&m, ", limit: ");
            m_u64(&m, p->lim.max_line_len);
            m_puts(&m, ")");
            return fail_at(p, BASE_E_LIMIT, p->pstart);
        }
    }
    if (entry == EXPO_ENTRY_SERIES) {
        int rc = check_dups(p);
        if (rc) return rc;
    }
    return entry;
}

/* ---- the text parser (promparse.go) ------------------------------------------ */

/* promparse.go's label loop: LNAME EQUAL LVALUE, each pair optionally
 * followed by a COMMA, until BCLOSE. `have` says t already holds the token
 * that starts the next pair (no comma came); otherwise a pair is first
 * tried on the fast path. */
static int lvals_text(expo_parser *p) {
    int t = T_EOF, have = 0;
    for (;;) {
        if (!have) {
            size_t i = p->i, eq, q;
            int ascii, pair = scan_pair(p, i, 0, &eq, &q, &ascii);
            if (pair) {
                int rc = add_pair(p, take_pair(p, i, eq, q), ascii);
                if (rc) return rc;
                unsigned c = (unsigned char)p->b[q + 1];
                if (c == ',' || c == '}') {
                    p->start = q + 1;
                    p->i = q + 2;
                    if (c == '}') {
                        p->state = S_VALUE;
                        return 0;
                    }
                    continue;
                }
            }
            t = tok_text(p);
            if (pair && t == T_COMMA) continue;
        }
        have = 0;
        if (t == T_BCLOSE) return 0;
        if (t != T_LNAME) return perr(p, "expected label name", t);
        base_str lname = tokbuf(p);
        if ((t = tok_text(p)) != T_EQUAL) return perr(p, "expected equal", t);
        if ((t = tok_text(p)) != T_LVALUE) return perr(p, "expected label value", t);
        int rc = add_label(p, lname, 0);
        if (rc) return rc;
        if ((t = tok_text(p)) != T_COMMA) have = 1;
    }
}

static int series_text(expo_parser *p) {
    p->name = p->series = tokbuf(p);
    int rc = check_name_len(p, p->name, 1);
    if (rc) return rc;
    int t = tok_after_name(p, C_TV, 1, tok_text);
    if (t == T_BOPEN) {
        if ((rc = lvals_text(p))) return rc;
        p->series.n = p->i - (size_t)(p->series.p - p->b);
        t = tok_after_name(p, C_TV, 1, tok_text);
    }
    if (t != T_VALUE) return perr(p, "expected value after metric", t);
    if ((rc = go_float(p, tokbuf(p), &p->value))) return rc;
    switch ((t = tok_after_value(p, tok_text))) {
    case T_LINEBREAK: break;
    case T_TIMESTAMP: {
        base_str s = tokbuf(p);
        rc = base_parse_i64(s.p, s.n, &p->ts);
        if (rc) {
            msgbuf m = msg_begin(p);
            m_puts(&m, "strconv.ParseInt: parsing ");
            m_quote(&m, s.p, s.n);
            m_puts(&m, rc == BASE_E_RANGE ? ": value out of range" : ": invalid syntax");
            return fail_at(p, BASE_E_PARSE, p->start);
        }
        p->has_ts = 1;
        if ((t = tok_text(p)) != T_LINEBREAK) return perr(p, "expected next entry after timestamp", t);
        break;
    }
    default: return perr(p, "expected timestamp or new record", t);
    }
    return finish_entry(p, EXPO_ENTRY_SERIES);
}

static int meta_text(expo_parser *p, int kind) {
    const char *what = kind == T_HELP ? "HELP" : "TYPE";
    int t = tok_text(p);
    if (t != T_MNAME) {
        char exp[40] = "expected metric name after ";
        strcat(exp, what);
        return perr(p, exp, t);
    }
    p->name = tokbuf(p);
    int rc = check_name_len(p, p->name, 1);
    if (rc) return rc;
    if (tok_text(p) != T_TEXT) {
        char msg[40] = "expected text in ";
        strcat(msg, what);
        return fail_msg(p, BASE_E_PARSE, p->start, msg);
    }
    base_str b = tokbuf(p);
    p->text = b.n > 1 ? (base_str){b.p + 1, b.n - 1} : (base_str){b.p + b.n, 0};
    if (kind == T_TYPE) {
        base_str s = p->text;
        if (base_str_eqc(s, "counter"))
            p->type = EXPO_COUNTER;
        else if (base_str_eqc(s, "gauge"))
            p->type = EXPO_GAUGE;
        else if (base_str_eqc(s, "histogram"))
            p->type = EXPO_HISTOGRAM;
        else if (base_str_eqc(s, "summary"))
            p->type = EXPO_SUMMARY;
        else if (base_str_eqc(s, "untyped"))
            p->type = EXPO_UNTYPED;
        else {
            msgbuf m = msg_begin(p);
            m_puts(&m, "invalid metric type ");
            m_quote(&m, s.p, s.n);
            return fail_at(p, BASE_E_PARSE, (size_t)(s.p - p->b));
        }
    } else if (!base_utf8_valid(p->text.p, p->text.n)) {
        return fail_msg(p, BASE_E_PARSE, (size_t)(p->text.p - p->b), "help text is not a valid utf8 string");
    }
    if ((t = tok_text(p)) != T_LINEBREAK) return perr(p, "linebreak expected after metadata", t);
    return finish_entry(p, kind == T_HELP ? EXPO_ENTRY_HELP : EXPO_ENTRY_TYPE);
}

static int next_text(expo_parser *p) {
    for (;;) {
        reset_entry(p);
        int t = tok_line_start(p, tok_text);
        switch (t) {
        case T_EOF: p->eof = 1; return EXPO_ENTRY_EOF;
        case T_LINEBREAK: continue; /* blank line */
        case T_HELP:
        case T_TYPE: return meta_text(p, t);
        case T_COMMENT:
            p->text = tokbuf(p);
            if ((t = tok_text(p)) != T_LINEBREAK) return perr(p, "linebreak expected after comment", t);
            return finish_entry(p, EXPO_ENTRY_COMMENT);
        case T_MNAME: return series_text(p);
        default: {
            msgbuf m = msg_begin(p);
            m_puts(&m, "\"");
            m_puts(&m, tok_name(t));
            m_puts(&m, "\" is not a valid start token");
            return fail_at(p, BASE_E_PARSE, t == T_INVALID ? p->i : p->start);
        }
        }
    }
}

/* ---- the OpenMetrics parser (openmetricsparse.go) ------------------------------ */

static int lvals_om(expo_parser *p, int exemplar) {
    int first = 1;
    for (;;) {
        if (!exemplar && p->i + 1 < p->len) {
            /* the fast path: `}` or [`,`]name="value" */
            size_t i = p->i, eq, q;
            int ascii, ok = 1;
            if (!first) {
                if (p->b[i] == '}') {
                    p->start = i;
                    p->i = i + 1;
                    p->state = S_VALUE;
                    return 0;
                }
                ok = p->b[i++] == ','; /* else the lexer words the error */
            }
            if (ok && scan_pair(p, i, 1, &eq, &q, &ascii)) {
                int rc = add_pair(p, take_pair(p, i, eq, q), ascii);
                if (rc) return rc;
                first = 0;
                continue;
            }
        }
        int t = lex_om(p);
        switch (t) {
        case T_BCLOSE: return 0;
        case T_COMMA:
            if (first) return perr(p, "expected label name or left brace", t);
            if ((t = lex_om(p)) != T_LNAME) return perr(p, "expected label name", t);
            break;
        case T_LNAME:
            if (!first) return perr(p, "expected comma", t);
            break;
        default:
            return perr(p, first ? "expected label name or left brace" : "expected comma or left brace", t);
        }
        first = 0;
        base_str lname = tokbuf(p);
        if ((t = lex_om(p)) != T_EQUAL) return perr(p, "expected equal", t);
        if ((t = lex_om(p)) != T_LVALUE) return perr(p, "expected label value", t);
        int rc = add_label(p, lname, exemplar);
        if (rc) return rc;
    }
}

/* getFloatValue: a VALUE token (with its leading space). */
static int om_value(expo_parser *p, int t, const char *after, double *ret) {
    if (t != T_VALUE) {
        char exp[48] = "expected value after ";
        strcat(exp, after);
        return perr(p, exp, t);
    }
    base_str b = tokbuf(p);
    return go_float(p, (base_str){b.p + 1, b.n - 1}, ret);
}

static int om_exemplar(expo_parser *p) {
    if (!base_str_has_suffix(p->name, "_total") && !base_str_has_suffix(p->name, "_bucket")) {
        msgbuf m = msg_begin(p);
        m_puts(&m, "metric name ");
        m_put(&m, p->name.p, p->name.n);
        m_puts(&m, " does not support exemplars");
        return fail_at(p, BASE_E_PARSE, p->start);
    }
    int rc = lvals_om(p, 1);
    if (rc) return rc;
    if ((rc = om_value(p, lex_om(p), "exemplar labels", &p->evalue))) return rc;
    int t = lex_om(p);
    switch (t) {
    case T_EOF: return fail_msg(p, BASE_E_PARSE, p->i, "data does not end with # EOF");
    case T_LINEBREAK: break;
    case T_TIMESTAMP:
        if ((rc = om_ts(p, tokbuf(p), "invalid exemplar timestamp", &p->ets))) return rc;
        p->has_ets = 1;
        if ((t = lex_om(p)) != T_LINEBREAK) return perr(p, "expected next entry after exemplar timestamp", t);
        break;
    default: return perr(p, "expected timestamp or comment", t);
    }
    p->has_exemplar = 1;
    return 0;
}

static int series_om(expo_parser *p) {
    p->name = p->series = tokbuf(p);
    int rc = check_name_len(p, p->name, 1);
    if (rc) return rc;
    int t = tok_after_name(p, C_OV, 0, lex_om);
    if (t == T_BOPEN) {
        if ((rc = lvals_om(p, 0))) return rc;
        p->series.n = p->i - (size_t)(p->series.p - p->b);
        t = tok_after_name(p, C_OV, 0, lex_om);
    }
    if ((rc = om_value(p, t, "metric", &p->value))) return rc;
    switch ((t = tok_after_value(p, lex_om))) {
    case T_EOF: return fail_msg(p, BASE_E_PARSE, p->i, "data does not end with # EOF");
    case T_LINEBREAK: break;
    case T_COMMENT:
        if ((rc = om_exemplar(p))) return rc;
        break;
    case T_TIMESTAMP:
        if ((rc = om_ts(p, tokbuf(p), "invalid timestamp", &p->ts))) return rc;
        p->has_ts = 1;
        switch ((t = lex_om(p))) {
        case T_LINEBREAK: break;
        case T_COMMENT:
            if ((rc = om_exemplar(p))) return rc;
            break;
        default: return perr(p, "expected next entry after timestamp", t);
        }
        break;
    default: return perr(p, "expected timestamp or # symbol", t);
    }
    return finish_entry(p, EXPO_ENTRY_SERIES);
}

static int meta_om(expo_parser *p, int kind) {
    const char *what = tok_name(kind);
    int t = lex_om(p);
    if (t != T_MNAME) {
        char exp[40] = "expected metric name after ";
        strcat(exp, what);
        return perr(p, exp, t);
    }
    p->name = tokbuf(p);
    int rc = check_name_len(p, p->name, 1);
    if (rc) return rc;
    if (lex_om(p) != T_TEXT) {
        char msg[40] = "expected text in ";
        strcat(msg, what);
        return fail_msg(p, BASE_E_PARSE, p->start, msg);
    }
    base_str b = tokbuf(p); /* " text\n" */
    p->text = b.n > 1 ? (base_str){b.p + 1, b.n - 2} : (base_str){b.p + b.n, 0};
    base_str s = p->text;
    switch (kind) {
    case T_TYPE:
        if (base_str_eqc(s, "counter"))
            p->type = EXPO_COUNTER;
        else if (base_str_eqc(s, "gauge"))
            p->type = EXPO_GAUGE;
        else if (base_str_eqc(s, "histogram"))
            p->type = EXPO_HISTOGRAM;
        else if (base_str_eqc(s, "gaugehistogram"))
            p->type = EXPO_GAUGEHISTOGRAM;
        else if (base_str_eqc(s, "summary"))
            p->type = EXPO_SUMMARY;
        else if (base_str_eqc(s, "info"))
            p->type = EXPO_INFO;
        else if (base_str_eqc(s, "stateset"))
            p->type = EXPO_STATESET;
        else if (base_str_eqc(s, "unknown"))
            p->type = EXPO_UNTYPED;
        else {
            msgbuf m = msg_begin(p);
            m_puts(&m, "invalid metric type ");
            m_quote(&m, s.p, s.n);
            return fail_at(p, BASE_E_PARSE, (size_t)(s.p - p->b));
        }
        return finish_entry(p, EXPO_ENTRY_TYPE);
    case T_HELP:
        if (!base_utf8_valid(s.p, s.n))
            return fail_msg(p, BASE_E_PARSE, (size_t)(s.p - p->b), "help text is not a valid utf8 string");
        return finish_entry(p, EXPO_ENTRY_HELP);
    default: { /* UNIT */
        base_str m_ = p->name;
        int suffix = m_.n >= s.n && memcmp(m_.p + m_.n - s.n, s.p, s.n) == 0;
        if (s.n > 0 && (!suffix || m_.n < s.n + 1 || m_.p[m_.n - s.n - 1] != '_')) {
            msgbuf m = msg_begin(p);
            m_puts(&m, "unit not a suffix of metric ");
            m_quote(&m, m_.p, m_.n);
            return fail_at(p, BASE_E_PARSE, (size_t)(s.p - p->b));
        }
        return finish_entry(p, EXPO_ENTRY_UNIT);
    }
    }
}

static int next_om(expo_parser *p) {
    reset_entry(p);
    int t = tok_line_start(p, lex_om);
    switch (t) {
    case T_EOFWORD:
        if (lex_om(p) != T_EOF) return fail_msg(p, BASE_E_PARSE, p->start, "unexpected data after # EOF");
        p->eof = 1;
        return EXPO_ENTRY_EOF;
    case T_EOF: return fail_msg(p, BASE_E_PARSE, p->i, "data does not end with # EOF");
    case T_HELP:
    case T_TYPE:
    case T_UNIT: return meta_om(p, t);
    case T_MNAME: return series_om(p);
    default: {
        msgbuf m = msg_begin(p);
        m_puts(&m, "\"");
        m_puts(&m, tok_name(t));
        m_puts(&m, "\" ");
        m_quote_byte(&m, p->i < p->len ? (unsigned char)p->b[p->i] : ' ');
        m_puts(&m, " is not a valid start token");
        return fail_at(p, BASE_E_PARSE, p->i);
    }
    }
}

/* ---- public --------------------------------------------------------------- */

void expo_parser_init(expo_parser *p, const char *buf, size_t len, expo_format fmt,
                      const expo_parse_limits *lim) {
    memset(p, 0, offsetof(expo_parser, inline_labels));
    p->b = buf ? buf : "";
    p->len = buf ? len : 0;
    p->fmt = fmt;
    p->end = fmt == EXPO_FMT_TEXT ? p->len + 1 : p->len;
    if (lim) p->lim = *lim;
    if (!p->lim.max_labels) p->lim.max_labels = EXPO_PARSE_DEFAULT_MAX_LABELS;
    p->labels = p->inline_labels;
    p->cap_labels = EXPO__INLINE_LABELS;
    p->elabels = p->inline_elabels;
    p->cap_elabels = EXPO__INLINE_ELABELS;
    p->errmsg[0] = p->errmsg_at[0] = '\0';
    reset_entry(p);
}

void expo_parser_free(expo_parser *p) {
    if (p->labels != p->inline_labels) free(p->labels);
    if (p->elabels != p->inline_elabels) free(p->elabels);
    free(p->scratch);
    p->labels = p->inline_labels;
    p->elabels = p->inline_elabels;
    p->cap_labels = EXPO__INLINE_LABELS;
    p->cap_elabels = EXPO__INLINE_ELABELS;
    p->scratch = NULL;
    p->cap_scratch = 0;
    p->nlabels = p->nelabels = 0;
}

int expo_parser_next(expo_parser *p) {
    if (p->err) return p->err;
    if (p->eof) return EXPO_ENTRY_EOF;
    return p->fmt == EXPO_FMT_OPENMETRICS ? next_om(p) : next_text(p);
}

const char *expo_parser_error(const expo_parser *p) {
    return p->errmsg;
}
const char *expo_parser_error_at(const expo_parser *p) {
    return p->errmsg_at;
}
size_t expo_parser_error_line(const expo_parser *p) {
    return p->err ? p->err_line : 0;
}
size_t expo_parser_error_col(const expo_parser *p) {
    return p->err ? p->err_col : 0;
}

/* Appends raw with the escapes of `map` (pairs: escaped char, result)
 * replaced, as Go's strings.Replacer does: left to right, others kept. */
static int unescape(base_str raw, const char *map, base_buf *out) {
    size_t run_start = 0, k = 0;
    while (k < raw.n) {
        const char *q = memchr(raw.p + k, '\\', raw.n - k);
        if (!q) break;
        k = (size_t)(q - raw.p);
        if (k + 1 < raw.n) {
            const char *r = NULL;
            for (const char *m = map; *m; m += 2)
                if (raw.p[k + 1] == m[0]) r = m + 1;
            if (r) {
                base_buf_append(out, raw.p + run_start, k - run_start);
                base_buf_putc(out, *r);
                k += 2;
                run_start = k;
                continue;
            }
        }
        k++;
    }
    base_buf_append(out, raw.p + run_start, raw.n - run_start);
    return base_buf_err(out);
}

int expo_unescape_label(base_str raw, base_buf *out) {
    return unescape(raw, "\\\\\"\"n\n", out);
}

int expo_parser_help(const expo_parser *p, base_buf *out) {
    return unescape(p->text, p->fmt == EXPO_FMT_OPENMETRICS ? "\\\\\"\"n\n" : "\\\\n\n", out);
}
