/* parse.h -- a zero-copy pull parser for the exposition formats:
 * Prometheus text 0.0.4 and OpenMetrics 1.0, as Prometheus 2.42 reads them.
 *
 * Design. One parser walks one caller-owned buffer; every name, label value
 * and text it hands out is a view (base_str) into that buffer, valid until
 * the buffer dies. expo_parser_next() advances by one entry (a sample, a
 * HELP/TYPE/UNIT line, a comment) and the accessors below describe it until
 * the next call. Nothing is copied and nothing is allocated per sample: the
 * label slots live inside the parser and grow on the heap only when a series
 * has more labels than any series before it (release with
 * expo_parser_free()). The buffer need not be NUL-terminated and is never
 * read past len.
 *
 * Compatibility. The lexers reproduce Prometheus 2.42's golex automata
 * (model/textparse/promlex.l, openmetricslex.l) state for state, without
 * backtracking, and the parsers reproduce promparse.go and
 * openmetricsparse.go, so the same bodies are accepted and the error
 * messages have the same words (`expected label name, got "BCLOSE"`,
 * `data does not end with # EOF`, `strconv.ParseFloat: parsing "0x10":
 * invalid syntax`, ...). Quirks that follow from that:
 *  - text: a missing last newline is fine; blank lines are skipped; blanks
 *    and tabs may separate any two tokens; a missing or trailing comma in
 *    labels is accepted; unknown escapes stay literal; timestamps are
 *    [0-9]+ milliseconds (so negative ones fail); `#TYPE` (no blank) and
 *    `# anything` are comments; a NUL byte at the start of a line or of a
 *    `#...` comment ends the input as if it were EOF; NUL bytes inside label
 *    values, HELP text and `# ` comments are skipped by the lexer (and stay
 *    in the views); a label value may contain a raw newline.
 *  - OpenMetrics: `# EOF` must end the input (one `\n` after it is
 *    allowed); no blank lines, no free blanks, no trailing comma; HELP and
 *    label values unescape \" too; timestamps are float seconds, truncated
 *    toward zero to ms (a NaN/Inf one is an error; one beyond int64 ms
 *    becomes INT64_MIN, as Go's conversion does on amd64); UNIT must be a
 *    `_`-separated suffix of the name; an exemplar is allowed only on a
 *    name ending in _total or _bucket; ordering, grouping and metadata
 *    repetition are not checked (2.42 does not either).
 *  - values: Go's ParseFloat after rejecting p, P and _ (hex, 1_000):
 *    nan/inf/infinity in any case, +-inf but not +-nan; overflow is an
 *    error, underflow is not. Every NaN reads as 0x7ff8000000000001
 *    (Prometheus's value.NormalNaN); other values keep their exact bits.
 *  - Prometheus checks in storage what a parser cannot see; the parser
 *    checks the one that fails a whole scrape: a label name that occurs
 *    twice (the metric name counts as `__name__`) fails the series with
 *    `label name "a" is not unique: invalid sample`, unless one of its
 *    occurrences has an empty value (Prometheus drops every label of a name
 *    that has an empty value before it checks). Empty-valued labels are
 *    handed out as they are; a consumer that stores series must drop them
 *    (by name), as Prometheus does.
 *  - one deliberate difference: blanks at the start of a text line are not
 *    part of the metric name (2.42 keeps them in it, and so fails the
 *    scrape on an invalid name; the Pushgateway's parser skips them). The
 *    scraper, which must fail as 2.42 does, sees them before the series
 *    view (src/scrape/append.c).
 *
 * Errors. expo_parser_next() returns a negative BASE_E_* code: BASE_E_PARSE
 * (the input is not valid; Prometheus would fail the scrape),
 * BASE_E_LIMIT (a caller's limit was passed), BASE_E_NOMEM. The error is
 * sticky: every later call returns it again. expo_parser_error() gives the
 * message as Prometheus words it; expo_parser_error_at() prefixes
 * `line:column: ` (1-based, bytes) of where it was found.
 *
 * Typical use:
 *     expo_parser p;
 *     expo_parser_init(&p, body, len, EXPO_FMT_TEXT, NULL);
 *     int e;
 *     while ((e = expo_parser_next(&p)) > 0)
 *         if (e == EXPO_ENTRY_SERIES) use(expo_parser_name(&p), ...);
 *     if (e < 0) report(expo_parser_error_at(&p));
 *     expo_parser_free(&p);
 */
#ifndef KELVIN_EXPO_PARSE_H
#define KELVIN_EXPO_PARSE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "base/buf.h"
#include "base/str.h"
#include "expo/expo.h"

/* What expo_parser_next() found. */
typedef enum {
    EXPO_ENTRY_EOF = 0,     /* the end (OpenMetrics: `# EOF` was read) */
    EXPO_ENTRY_SERIES = 1,  /* a sample: name, labels, value, [ts], [exemplar] */
    EXPO_ENTRY_HELP = 2,    /* name and help text */
    EXPO_ENTRY_TYPE = 3,    /* name and type */
    EXPO_ENTRY_UNIT = 4,    /* name and unit (OpenMetrics only) */
    EXPO_ENTRY_COMMENT = 5, /* any other `#` line (text format only) */
} expo_entry;

/* Caller limits; a field of 0 takes the default given. Passing one makes
 * expo_parser_next() fail with BASE_E_LIMIT and a message naming it. */
typedef struct expo_parse_limits {
    size_t max_labels;    /* label pairs per series (and per exemplar), not
                             counting the name; 0: EXPO_PARSE_DEFAULT_MAX_LABELS */
    size_t max_name_len;  /* bytes of a metric or label name; 0: none */
    size_t max_value_len; /* bytes of a label value once unescaped; 0: none */
    size_t max_line_len;  /* bytes of one entry without its newline (a text
                             label value may run over several lines); 0: none */
} expo_parse_limits;

#define EXPO_PARSE_DEFAULT_MAX_LABELS 10000

/* The bits of every NaN the parser returns (Prometheus's value.NormalNaN). */
#define EXPO_NORMAL_NAN_BITS UINT64_C(0x7ff8000000000001)

/* One label: both views point into the parsed buffer. `value` is raw: still
 * escaped, without its quotes; see expo_unescape_label(). */
typedef struct expo_label {
    base_str name;
    base_str value;
} expo_label;

#define EXPO__INLINE_LABELS  16
#define EXPO__INLINE_ELABELS 4
#define EXPO__ERR_MAX        512

/* The parser. Its fields are private: use the functions below. It holds
 * pointers into itself, so it must not be copied once initialised. */
typedef struct expo_parser {
    const char *b; /* the buffer */
    size_t len;    /* its length */
    size_t end;    /* len, or len + 1 for text's virtual last newline */
    expo_format fmt;
    expo_parse_limits lim;
    size_t i, start; /* lexer: position and start of the current token */
    int state;       /* lexer start condition */
    int err;         /* sticky error */
    int eof;         /* the end was reached */
    size_t pstart;   /* where the current entry began */
    size_t err_line, err_col;
    /* the current entry */
    base_str name, text, series;
    expo_type type;
    double value;
    int64_t ts;
    int has_ts;
    expo_label *labels;
    size_t nlabels, cap_labels;
    int has_exemplar, has_ets;
    double evalue;
    int64_t ets;
    expo_label *elabels;
    size_t nelabels, cap_elabels;
    const expo_label **scratch; /* duplicate check of big label sets */
    size_t cap_scratch;
    expo_label inline_labels[EXPO__INLINE_LABELS];
    expo_label inline_elabels[EXPO__INLINE_ELABELS];
    char errmsg[EXPO__ERR_MAX];
    char errmsg_at[EXPO__ERR_MAX + 48];
} expo_parser;

/* Starts parsing buf[0..len) as fmt. lim may be NULL (defaults); it is
 * copied. buf must stay alive and unchanged while views from it are used.
 * Never allocates. */
void expo_parser_init(expo_parser *p, const char *buf, size_t len, expo_format fmt,
                      const expo_parse_limits *lim);
/* Releases label storage the parser may have grown. Views stay valid (they
 * point into the caller's buffer). The parser may be re-initialised. */
void expo_parser_free(expo_parser *p);

/* Advances to the next entry: returns an expo_entry (> 0), EXPO_ENTRY_EOF
 * at the end, or a negative BASE_E_* (sticky; see above). */
int expo_parser_next(expo_parser *p);

/* The message of the error returned (Prometheus's words), "" if none. */
const char *expo_parser_error(const expo_parser *p);
/* The same, prefixed with "line:column: ". */
const char *expo_parser_error_at(const expo_parser *p);
/* Where the error was found: 1-based line and byte column; 0 if none. */
size_t expo_parser_error_line(const expo_parser *p);
size_t expo_parser_error_col(const expo_parser *p);

/* SERIES: the metric name. HELP/TYPE/UNIT: the family name. */
static inline base_str expo_parser_name(const expo_parser *p) {
    return p->name;
}
/* SERIES: the labels in input order (names unchecked for duplicates only
 * if they were legal, see above). */
static inline size_t expo_parser_nlabels(const expo_parser *p) {
    return p->nlabels;
}
static inline const expo_label *expo_parser_labels(const expo_parser *p) {
    return p->labels;
}
/* SERIES: the raw bytes from the metric name to the end of the labels, as
 * written (a cache key: equal bytes mean equal series). */
static inline base_str expo_parser_series(const expo_parser *p) {
    return p->series;
}
/* SERIES: the value (exact bits; NaN is EXPO_NORMAL_NAN_BITS). */
static inline double expo_parser_value(const expo_parser *p) {
    return p->value;
}
/* SERIES: whether a timestamp was given, and it in ms since the epoch. */
static inline int expo_parser_has_ts(const expo_parser *p) {
    return p->has_ts;
}
static inline int64_t expo_parser_ts_ms(const expo_parser *p) {
    return p->ts;
}
/* SERIES (OpenMetrics): the exemplar, if the line has one. */
static inline int expo_parser_has_exemplar(const expo_parser *p) {
    return p->has_exemplar;
}
static inline size_t expo_parser_exemplar_nlabels(const expo_parser *p) {
    return p->nelabels;
}
static inline const expo_label *expo_parser_exemplar_labels(const expo_parser *p) {
    return p->elabels;
}
static inline double expo_parser_exemplar_value(const expo_parser *p) {
    return p->evalue;
}
static inline int expo_parser_exemplar_has_ts(const expo_parser *p) {
    return p->has_ets;
}
static inline int64_t expo_parser_exemplar_ts_ms(const expo_parser *p) {
    return p->ets;
}
/* HELP: the raw (escaped) text; see expo_parser_help(). UNIT: the unit.
 * COMMENT: the whole line from `#`, without the newline. */
static inline base_str expo_parser_text(const expo_parser *p) {
    return p->text;
}
/* TYPE: the type ("untyped" and "unknown" are EXPO_UNTYPED). */
static inline expo_type expo_parser_type(const expo_parser *p) {
    return p->type;
}

/* HELP: appends the unescaped text to out (text format: \\ and \n;
 * OpenMetrics: \\, \n and \"; other escapes stay as written). Returns 0 or
 * out's sticky error. */
int expo_parser_help(const expo_parser *p, base_buf *out);
/* Appends the unescaped form of a raw label value (\\ \" \n; other escapes
 * stay as written) to out. Returns 0 or out's sticky error. */
int expo_unescape_label(base_str raw, base_buf *out);
/* Whether a raw label value needs unescaping at all (has a backslash). */
static inline int expo_label_has_escapes(base_str raw) {
    return raw.n && memchr(raw.p, '\\', raw.n) != NULL;
}

#endif
