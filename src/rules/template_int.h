/* template_int.h -- internals shared by the template engine's files:
 * template_parse.c (Go's text/template lexer and parser: text -> tree),
 * template_exec.c (the executor: Go's exec.go over a small value model)
 * and template_funcs.c (Go's fmt printing, the built-ins and Prometheus
 * 2.42's template functions, the humanizers).
 *
 * Nodes live in the template's arena and are immutable after parsing.
 * Values (tt_val) live for one execution: strings and collections they
 * point at are in the execution's arena; label sets of query results are
 * referenced by the execution and dropped at its end.
 */
#ifndef KELVIN_RULES_TEMPLATE_INT_H
#define KELVIN_RULES_TEMPLATE_INT_H

#include <stddef.h>
#include <stdint.h>

#include "base/arena.h"
#include "base/buf.h"
#include "base/str.h"
#include "labels/labels.h"
#include "rules/template.h"

#define TT_MAX_DEPTH 100

typedef enum tt_ntype {
    TN_TEXT,
    TN_ACTION,
    TN_IF,
    TN_RANGE,
    TN_WITH,
    TN_BREAK,
    TN_CONTINUE,
    TN_LIST,
    TN_PIPE,
    TN_CMD,
    TN_FIELD,
    TN_VAR,
    TN_CHAIN,
    TN_IDENT,
    TN_DOT,
    TN_NIL,
    TN_BOOL,
    TN_NUM,
    TN_STR,
} tt_ntype;

typedef struct tt_node tt_node;
struct tt_node {
    tt_ntype type;
    size_t pos; /* byte offset in the template text */
    int line;
    /* TEXT, STR (value), IDENT (name), NUM/STR (orig: source text) */
    const char *s;
    size_t n;
    const char *orig;
    size_t orig_n;
    /* LIST items, PIPE cmds, CMD args */
    tt_node **kids;
    size_t nkids;
    /* FIELD / VAR / CHAIN identifiers (VAR: [0] is the $name) */
    base_str *ids;
    size_t nids;
    /* PIPE declarations; CHAIN: sub (the operand); ACTION: pipe;
     * IF/RANGE/WITH: pipe, list, elist */
    tt_node **decl;
    size_t ndecl;
    int is_assign;
    tt_node *sub;
    tt_node *list;
    tt_node *elist;
    /* BOOL, NUM */
    int b;
    int is_int, is_float;
    int64_t i;
    double f;
};

struct rules_tmpl {
    base_arena arena;
    char *name;
    char *text; /* a copy, for error positions */
    size_t len;
    tt_node *root;
};

/* Values ---------------------------------------------------------- */

typedef enum tt_kind {
    TK_INVALID, /* no value: prints "<no value>" */
    TK_NIL,     /* a nil interface{} */
    TK_BOOL,
    TK_INT,
    TK_FLOAT,
    TK_STRING,
    TK_HTML,   /* html/template.HTML (a string kind) */
    TK_MAP,    /* map[string]string over a label set */
    TK_ARGS,   /* map[string]interface {} of args */
    TK_DATA,   /* the alert data struct */
    TK_SAMPLE, /* *template.sample (may be nil) */
    TK_VEC,    /* template.queryResult */
    TK_TIME,   /* *time.Time, as Unix milliseconds */
} tt_kind;

typedef struct tt_sample {
    const labels_set *ls;
    double v;
} tt_sample;

typedef struct tt_vec {
    size_t n;
    tt_sample **s;
} tt_vec;

typedef struct tt_val tt_val;
typedef struct tt_args {
    size_t n;
    tt_val *v;
} tt_args;

struct tt_val {
    tt_kind k;
    int b;
    int64_t i; /* INT; TIME: ms */
    double f;
    base_str s; /* STRING, HTML */
    const labels_set *ls;
    tt_sample *smp;
    tt_vec *vec;
    tt_args *args;
    const rules_tmpl_data *data; /* DATA */
};

typedef struct tt_state tt_state;

/* Go's reflect type name of a value ("float64", "map[string]string"). */
const char *rules__tt_type_name(const tt_val *v);
/* fmt.Fprint of one value (%v). */
void rules__tt_print_val(base_buf *out, const tt_val *v);
/* fmt.Sprint / Sprintln / Sprintf over values. */
void rules__tt_sprint(base_buf *out, const tt_val *v, size_t n, int ln);
void rules__tt_sprintf(base_buf *out, base_str format, const tt_val *v, size_t n);
/* Go's %.4g (with +Inf, -Inf, NaN). */
void rules__tt_g4(base_buf *out, double v);
/* Go's time.Time.String() in UTC of Unix milliseconds. */
void rules__tt_time_string(base_buf *out, int64_t ms);
/* url.QueryEscape. */
void rules__tt_query_escape(base_buf *out, base_str s);

#endif
