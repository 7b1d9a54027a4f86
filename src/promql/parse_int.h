/* parse_int.h -- what the PromQL lexer (lex.c) and parser (parse.c) share.
 *
 * The lexer is Prometheus 2.42's promql/parser/lex.go state machine
 * rewritten as a pull lexer: pq__lex_next() hands out one token at a time,
 * skipping blanks and comments, with the same modes (statements, inside
 * braces, after '[' a duration, a string until its quote) and the same
 * lexical errors, worded and positioned as lex.go words and positions
 * them. A lexical error is a token of type PQ_TOK_ERROR whose message is in
 * lx->err; the lexer then stays at its end (every later call returns EOF).
 *
 * Token texts are views into the query (pos, len): nothing is allocated.
 */
#ifndef KELVIN_PROMQL_PARSE_INT_H
#define KELVIN_PROMQL_PARSE_INT_H

#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"

/* Token types, grouped as lex.go groups them: the groups decide how an
 * unexpected token is described ("<op:+>", "<aggr:sum>", "<by>", ...). */
typedef enum pq_tok {
    PQ_TOK_EOF,
    PQ_TOK_ERROR,
    PQ_TOK_COMMENT,
    PQ_TOK_IDENTIFIER,
    PQ_TOK_METRIC_IDENTIFIER,
    PQ_TOK_NUMBER,
    PQ_TOK_DURATION,
    PQ_TOK_STRING,
    PQ_TOK_LEFT_PAREN,
    PQ_TOK_RIGHT_PAREN,
    PQ_TOK_LEFT_BRACE,
    PQ_TOK_RIGHT_BRACE,
    PQ_TOK_LEFT_BRACKET,
    PQ_TOK_RIGHT_BRACKET,
    PQ_TOK_COMMA,
    PQ_TOK_EQL, /* = */
    PQ_TOK_COLON,
    /* operators (IsOperator) */
    PQ_TOK_OPS_START,
    PQ_TOK_ADD,
    PQ_TOK_SUB,
    PQ_TOK_MUL,
    PQ_TOK_DIV,
    PQ_TOK_MOD,
    PQ_TOK_POW,
    PQ_TOK_EQLC, /* == */
    PQ_TOK_NEQ,
    PQ_TOK_GTR,
    PQ_TOK_LSS,
    PQ_TOK_GTE,
    PQ_TOK_LTE,
    PQ_TOK_LAND,
    PQ_TOK_LOR,
    PQ_TOK_LUNLESS,
    PQ_TOK_ATAN2,
    PQ_TOK_EQL_REGEX,
    PQ_TOK_NEQ_REGEX,
    PQ_TOK_AT,
    PQ_TOK_OPS_END,
    /* aggregators (IsAggregator), in pq_aggop order */
    PQ_TOK_AGG_START,
    PQ_TOK_SUM,
    PQ_TOK_AVG,
    PQ_TOK_COUNT,
    PQ_TOK_MIN,
    PQ_TOK_MAX,
    PQ_TOK_GROUP,
    PQ_TOK_STDDEV,
    PQ_TOK_STDVAR,
    PQ_TOK_TOPK,
    PQ_TOK_BOTTOMK,
    PQ_TOK_COUNT_VALUES,
    PQ_TOK_QUANTILE,
    PQ_TOK_AGG_END,
    /* keywords (IsKeyword) */
    PQ_TOK_KW_START,
    PQ_TOK_BOOL,
    PQ_TOK_BY,
    PQ_TOK_GROUP_LEFT,
    PQ_TOK_GROUP_RIGHT,
    PQ_TOK_IGNORING,
    PQ_TOK_OFFSET,
    PQ_TOK_ON,
    PQ_TOK_WITHOUT,
    PQ_TOK_KW_END,
    /* preprocessors: neither keywords nor operators */
    PQ_TOK_START,
    PQ_TOK_END,
} pq_tok;

typedef struct pq_token {
    pq_tok type;
    uint32_t pos; /* byte offset of the token's first byte */
    uint32_t len; /* its length in bytes */
} pq_token;

typedef struct pq_lexer {
    const char *in;
    size_t n;
    size_t pos;   /* next byte to read */
    size_t start; /* start of the token being scanned (lex.go's l.start) */
    int paren_depth;
    int brace_open;
    int bracket_open;
    int got_colon;
    int want_duration; /* the token after '[' is a duration */
    char string_open;  /* the quote of the string being scanned */
    int done;          /* EOF or an error was returned */
    char err[256];     /* PQ_TOK_ERROR: the message */
    size_t err_pos;    /* PQ_TOK_ERROR: where Prometheus puts it (l.start) */
} pq_lexer;

void pq__lex_init(pq_lexer *lx, const char *in, size_t n);
/* The next token that is not a comment. */
pq_token pq__lex_next(pq_lexer *lx);
/* The token a word is to the lexer: a keyword (any case), else a metric
 * identifier (it holds ':') or an identifier. */
pq_tok pq__word_token(const char *w, size_t n);

/* Appends Item.desc() of a token ("end of input", "<op:+>", "identifier
 * \"foo\"", "\",\"", ...), as the parser's "unexpected ..." errors need it. */
void pq__tok_desc(const char *in, pq_token t, base_buf *out);

/* Go's strconv.Quote / fmt %q of a rune (-1: EOF, written as U+FFFD). */
void pq__quote_rune(base_buf *out, int32_t r);

/* Unquotes a string token the lexer accepted (Prometheus's
 * strutil.Unquote): appends the value to out. 0, or BASE_E_PARSE (never for
 * a token the lexer produced). */
int pq__unquote(const char *s, size_t n, base_buf *out);

/* Go's fmt.Sprint(float64): strconv 'g' shortest, "+Inf", "-Inf", "NaN". */
void pq__fmt_float(base_buf *out, double v);

/* model.ParseDuration: 0 and *ret_ms, or BASE_E_PARSE / BASE_E_RANGE with
 * *ret_msg set to Prometheus's message (NULL for "not a valid duration
 * string: %q", which the caller formats with the text). */
int pq__parse_duration(const char *s, size_t n, int64_t *ret_ms, const char **ret_msg);

/* 1 if two trees are the same up to positions and what the printer
 * cannot carry (a `by ()`, group_left without on/ignoring labels, a
 * __name__="" matcher of a nameless selector): the round-trip check of
 * the tests and the fuzz target. */
struct pq_node;
int pq__tree_equal(const struct pq_node *a, const struct pq_node *b);

/* Characters, as lex.go classifies them. */
static inline int pq__is_alpha(int r) {
    return r == '_' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z');
}
static inline int pq__is_digit(int r) {
    return r >= '0' && r <= '9';
}
static inline int pq__is_alnum(int r) {
    return pq__is_alpha(r) || pq__is_digit(r);
}
static inline int pq__is_space(int r) {
    return r == ' ' || r == '\t' || r == '\n' || r == '\r';
}

#endif
