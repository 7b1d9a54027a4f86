/* parse.c -- the PromQL parser: Prometheus 2.42's generated_parser.y and
 * parse.go (checkAST) as a recursive-descent parser that accepts the same
 * language, builds the same tree and fails with the same first error.
 *
 * GRAMMAR. Precedence climbing over 2.42's table (lowest first):
 *   or < and unless < == != <= < >= > < + - < * / % atan2 < ^ (right)
 * Unary + and - take an operand that binds tighter than * (the grammar's
 * `unary_op expr %prec MUL`): -a^b is -(a^b), -a*b is (-a)*b; a unary
 * sign on a number literal folds into it (-1 is the literal -1, placed at
 * the sign). Postfix [range], [range:step], offset and @ bind tightest and
 * apply to the primary just before them, in any order (yacc shifts).
 * Keywords that 2.42 accepts as metric names (sum, by, offset, and, start,
 * ...) are names when no '(' / by / without follows an aggregator.
 *
 * ERRORS. Only the first error counts (ParseErrors.Error() of 2.42). The
 * generated parser reports a syntax error through the innermost rule with
 * an `error` alternative whose state is on its stack; here each place
 * that can fail names that context: grouping lists ("grouping opts"),
 * label matchers ("label matching"), offset, @, subquery/range brackets,
 * and -- for anything inside an aggregation's modifier or arguments not
 * caught deeper -- "aggregation"; everywhere else a bare "unexpected X".
 * Semantic errors raised while parsing (numbers, durations, regexes,
 * offset/@ placement, unknown functions, aggregation arity, trailing
 * commas) are raised at the point of the yacc reduction, i.e. before or
 * after reading the next token exactly where yacc reads it. The type
 * checks (checkAST) run only on a tree without errors.
 *
 * SELECTORS. promql_parse_selector is 2.42's ParseMetricSelector: the
 * same lexer and vector_selector rule from the START_METRIC_SELECTOR
 * symbol (a name, which may be a keyword, and/or braces, then EOF), no
 * type checks; anything else is the `start: error` rule's bare message.
 *
 * MESSAGES are built whole in a buffer (they may be as long as the query,
 * and a regex error echoes the value's NUL bytes as 2.42 does); the
 * C-string err of the plain entry points is a copy cut to errlen, the
 * _msg entry points hand over the whole message.
 *
 * MEMORY. Nodes, arrays and strings live in the expression's arena;
 * matchers are heap objects listed in the expression and freed with it.
 * Limits: PQ_MAX_QUERY bytes of query, PQ_MAX_DEPTH levels of tree (and of
 * recursion), an arena cap.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/arena.h"
#include "base/err.h"
#include "base/num.h"
#include "promql/parse_int.h"
#include "promql/promql.h"

#define ARENA_LIMIT ((size_t)256 << 20)

struct pq_expr {
    base_arena arena;
    pq_node *root;
    labels_matcher **ms; /* every matcher of the tree (heap) */
    size_t nms, capms;
};

typedef struct parser {
    const char *q;
    size_t n;
    pq_lexer lx;
    pq_token tok; /* the lookahead, when have */
    int have;
    size_t last_closing; /* parse.go's lastClosing */
    pq_expr *x;
    int failed;
    int rc;
    base_buf msg;   /* the first error's whole message (NUL bytes kept) */
    int agg;        /* inside an aggregation's modifier or arguments */
    unsigned depth; /* recursion */
    base_buf sb;    /* scratch */
} parser;

/* ---- errors ---------------------------------------------------------------- */

/* The first error: ParseErr.Error()'s "<line>:<col>: parse error: " and
 * m[0..mlen), which may hold NUL bytes (a regex fragment). */
static void report(parser *p, int rc, size_t pos, const char *m, size_t mlen) {
    if (p->failed) return;
    p->failed = 1;
    p->rc = rc;
    size_t line = 1;
    ptrdiff_t last_nl = -1;
    for (size_t i = 0; i < pos && i < p->n; i++)
        if (p->q[i] == '\n') {
            line++;
            last_nl = (ptrdiff_t)i;
        }
    base_buf_printf(&p->msg, "%zu:%td: parse error: ", line, (ptrdiff_t)pos - last_nl);
    base_buf_append(&p->msg, m, mlen);
}

static void verr(parser *p, int rc, size_t pos, const char *fmt, va_list ap) {
    if (p->failed) return;
    base_buf b;
    base_buf_init(&b, 0);
    base_buf_vprintf(&b, fmt, ap);
    report(p, rc, pos, b.data ? b.data : "", b.len);
    base_buf_free(&b);
}

__attribute__((format(printf, 3, 4))) static void perr(parser *p, size_t pos, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    verr(p, BASE_E_PARSE, pos, fmt, ap);
    va_end(ap);
}

static void nomem(parser *p) {
    if (p->failed) return;
    p->failed = 1;
    p->rc = BASE_E_NOMEM;
}

/* ---- tokens ------------------------------------------------------------------ */

static pq_token *peek(parser *p) {
    if (!p->have) {
        p->tok = pq__lex_next(&p->lx);
        p->have = 1;
        switch (p->tok.type) {
        case PQ_TOK_ERROR: perr(p, p->lx.err_pos, "%s", p->lx.err); break;
        case PQ_TOK_RIGHT_BRACE:
        case PQ_TOK_RIGHT_PAREN:
        case PQ_TOK_RIGHT_BRACKET:
        case PQ_TOK_DURATION:
        case PQ_TOK_NUMBER: p->last_closing = (size_t)p->tok.pos + p->tok.len; break;
        default: break;
        }
    }
    return &p->tok;
}

static pq_token take(parser *p) {
    peek(p);
    p->have = 0;
    return p->tok;
}

/* parse.go's unexpected(): about the token t (the lookahead). */
static void *unexpected_tok(parser *p, pq_token t, const char *ctx, const char *expected) {
    if (t.type == PQ_TOK_ERROR || p->failed) {
        p->failed = 1;
        return NULL;
    }
    base_buf b;
    base_buf_init(&b, 0);
    base_buf_puts(&b, "unexpected ");
    pq__tok_desc(p->q, t, &b);
    if (ctx && *ctx) {
        base_buf_puts(&b, " in ");
        base_buf_puts(&b, ctx);
    }
    if (expected && *expected) {
        base_buf_puts(&b, ", expected ");
        base_buf_puts(&b, expected);
    }
    if (base_buf_err(&b))
        nomem(p);
    else
        perr(p, t.pos, "%.*s", (int)b.len, b.data);
    base_buf_free(&b);
    return NULL;
}

static void *unexpected(parser *p, const char *ctx, const char *expected) {
    return unexpected_tok(p, *peek(p), ctx, expected);
}

/* A syntax error with no rule of its own: the enclosing aggregation's, or
 * the start rule's bare one. */
static void *unexpected_here(parser *p) {
    return unexpected(p, p->agg ? "aggregation" : "", "");
}

/* ---- allocation ---------------------------------------------------------------- */

static void *alloc(parser *p, size_t sz) {
    if (p->failed) return NULL;
    void *m = base_arena_alloc(&p->x->arena, sz ? sz : 1);
    if (!m) {
        nomem(p);
        return NULL;
    }
    memset(m, 0, sz);
    return m;
}

static char *sdup(parser *p, const char *s, size_t n) {
    if (p->failed) return NULL;
    char *c = base_arena_strndup(&p->x->arena, s, n);
    if (!c) nomem(p);
    return c;
}

static pq_node *mknode(parser *p, pq_node_kind k, pq_type t, size_t start, size_t end) {
    pq_node *n = alloc(p, sizeof *n);
    if (!n) return NULL;
    n->kind = k;
    n->type = t;
    n->pos_start = (uint32_t)start;
    n->pos_end = (uint32_t)end;
    n->depth = 1;
    return n;
}

/* Sets n's depth from a child's; fails past PQ_MAX_DEPTH. */
static int deepen(parser *p, pq_node *n, const pq_node *child) {
    if (!n || !child) return -1;
    if (child->depth + 1 > n->depth) n->depth = child->depth + 1;
    if (n->depth > PQ_MAX_DEPTH) {
        perr(p, n->pos_start, "expression nesting too deep (more than %d levels)", PQ_MAX_DEPTH);
        return -1;
    }
    return 0;
}

/* A growable array of pointers in the arena. */
typedef struct pvec {
    void **v;
    size_t n, cap;
} pvec;

static int pvec_push(parser *p, pvec *a, void *e) {
    if (a->n == a->cap) {
        size_t nc = a->cap ? a->cap * 2 : 4;
        void **nv = alloc(p, nc * sizeof *nv);
        if (!nv) return -1;
        if (a->n) memcpy(nv, a->v, a->n * sizeof *nv);
        a->v = nv;
        a->cap = nc;
    }
    a->v[a->n++] = e;
    return 0;
}

static int track_matcher(parser *p, labels_matcher *m) {
    pq_expr *x = p->x;
    if (x->nms == x->capms) {
        size_t nc = x->capms ? x->capms * 2 : 8;
        labels_matcher **nv = realloc(x->ms, nc * sizeof *nv);
        if (!nv) {
            labels_matcher_free(m);
            nomem(p);
            return -1;
        }
        x->ms = nv;
        x->capms = nc;
    }
    x->ms[x->nms++] = m;
    return 0;
}

/* ---- literals -------------------------------------------------------------------- */

/* strconv.ParseInt(s, 0, 64) for what the lexer lets through (no sign, no
 * underscores): 0x hex, leading-0 octal, decimal. 0 or -1. */
static int parse_int0(const char *s, size_t n, int64_t *ret) {
    unsigned base = 10;
    size_t i = 0;
    if (n >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
        base = 16;
        i = 2;
    } else if (n >= 2 && s[0] == '0') {
        base = 8;
        i = 1;
    }
    if (i >= n) return -1;
    uint64_t v = 0;
    for (; i < n; i++) {
        unsigned d;
        char c = s[i];
        if (c >= '0' && c <= '9')
            d = (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f')
            d = (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            d = (unsigned)(c - 'A' + 10);
        else
            return -1;
        if (d >= base) return -1;
        if (v > ((uint64_t)INT64_MAX - d) / base) return -1;
        v = v * base + d;
    }
    *ret = (int64_t)v;
    return 0;
}

/* parse.go's number(). */
static double number(parser *p, pq_token t) {
    const char *s = p->q + t.pos;
    int64_t i;
    if (parse_int0(s, t.len, &i) == 0) return (double)i;
    double f = 0;
    int rc = base_parse_double(s, t.len, &f);
    if (rc == 0) return f;
    if (rc == BASE_E_NOMEM) {
        nomem(p);
        return 0;
    }
    base_buf b;
    base_buf_init(&b, 0);
    labels_quote(&b, (base_str){s, t.len});
    perr(p, t.pos, "error parsing number: strconv.ParseFloat: parsing %.*s: %s", (int)b.len,
         b.data ? b.data : "", rc == BASE_E_RANGE ? "value out of range" : "invalid syntax");
    base_buf_free(&b);
    return 0;
}

/* parse.go's parseDuration(): model.ParseDuration and > 0. */
static int64_t duration(parser *p, pq_token t) {
    const char *s = p->q + t.pos;
    const char *msg = NULL;
    int64_t ms = 0;
    int rc = pq__parse_duration(s, t.len, &ms, &msg);
    if (rc) {
        if (msg) {
            perr(p, t.pos, "%s", msg);
        } else {
            base_buf b;
            base_buf_init(&b, 0);
            labels_quote(&b, (base_str){s, t.len});
            perr(p, t.pos, "not a valid duration string: %.*s", (int)b.len, b.data ? b.data : "");
            base_buf_free(&b);
        }
        return 0;
    }
    if (ms == 0) perr(p, t.pos, "duration must be greater than 0");
    return ms;
}

/* The unquoted value of a string token, in the arena. */
static char *unquote(parser *p, pq_token t, size_t *ret_len) {
    base_buf_reset(&p->sb);
    if (pq__unquote(p->q + t.pos, t.len, &p->sb) != 0) {
        base_buf b;
        base_buf_init(&b, 0);
        labels_quote(&b, (base_str){p->q + t.pos, t.len});
        perr(p, t.pos, "error unquoting string %.*s: invalid syntax", (int)b.len, b.data ? b.data : "");
        base_buf_free(&b);
        return NULL;
    }
    if (base_buf_err(&p->sb)) {
        nomem(p);
        return NULL;
    }
    *ret_len = p->sb.len;
    return sdup(p, p->sb.data ? p->sb.data : "", p->sb.len);
}

/* ---- token classes ---------------------------------------------------------------- */

static int is_agg_tok(pq_tok t) {
    return t > PQ_TOK_AGG_START && t < PQ_TOK_AGG_END;
}

/* metric_identifier of 2.42's grammar, beyond IDENTIFIER / METRIC_IDENTIFIER. */
static int is_metric_kw(pq_tok t) {
    switch (t) {
    case PQ_TOK_BY:
    case PQ_TOK_WITHOUT:
    case PQ_TOK_LAND:
    case PQ_TOK_LOR:
    case PQ_TOK_LUNLESS:
    case PQ_TOK_OFFSET:
    case PQ_TOK_START:
    case PQ_TOK_END: return 1;
    default: return is_agg_tok(t);
    }
}

/* maybe_label: what may stand as a label name in a grouping list. */
static int is_maybe_label(pq_tok t) {
    switch (t) {
    case PQ_TOK_IDENTIFIER:
    case PQ_TOK_METRIC_IDENTIFIER:
    case PQ_TOK_BOOL:
    case PQ_TOK_BY:
    case PQ_TOK_GROUP_LEFT:
    case PQ_TOK_GROUP_RIGHT:
    case PQ_TOK_IGNORING:
    case PQ_TOK_LAND:
    case PQ_TOK_LOR:
    case PQ_TOK_LUNLESS:
    case PQ_TOK_OFFSET:
    case PQ_TOK_ON:
    case PQ_TOK_START:
    case PQ_TOK_END:
    case PQ_TOK_ATAN2: return 1;
    default: return is_agg_tok(t);
    }
}

/* Tokens an expression can start with. */
static int starts_expr(pq_tok t) {
    switch (t) {
    case PQ_TOK_NUMBER:
    case PQ_TOK_STRING:
    case PQ_TOK_LEFT_PAREN:
    case PQ_TOK_LEFT_BRACE:
    case PQ_TOK_IDENTIFIER:
    case PQ_TOK_METRIC_IDENTIFIER:
    case PQ_TOK_ADD:
    case PQ_TOK_SUB: return 1;
    default: return is_metric_kw(t);
    }
}

/* Binary operators: precedence (0: not one) and the AST operator. */
static int binop_prec(pq_tok t, pq_binop *ret_op) {
    switch (t) {
    case PQ_TOK_LOR: *ret_op = PQ_OP_OR; return 1;
    case PQ_TOK_LAND: *ret_op = PQ_OP_AND; return 2;
    case PQ_TOK_LUNLESS: *ret_op = PQ_OP_UNLESS; return 2;
    case PQ_TOK_EQLC: *ret_op = PQ_OP_EQL; return 3;
    case PQ_TOK_NEQ: *ret_op = PQ_OP_NEQ; return 3;
    case PQ_TOK_LTE: *ret_op = PQ_OP_LTE; return 3;
    case PQ_TOK_LSS: *ret_op = PQ_OP_LSS; return 3;
    case PQ_TOK_GTE: *ret_op = PQ_OP_GTE; return 3;
    case PQ_TOK_GTR: *ret_op = PQ_OP_GTR; return 3;
    case PQ_TOK_ADD: *ret_op = PQ_OP_ADD; return 4;
    case PQ_TOK_SUB: *ret_op = PQ_OP_SUB; return 4;
    case PQ_TOK_MUL: *ret_op = PQ_OP_MUL; return 5;
    case PQ_TOK_DIV: *ret_op = PQ_OP_DIV; return 5;
    case PQ_TOK_MOD: *ret_op = PQ_OP_MOD; return 5;
    case PQ_TOK_ATAN2: *ret_op = PQ_OP_ATAN2; return 5;
    case PQ_TOK_POW: *ret_op = PQ_OP_POW; return 6;
    default: return 0;
    }
}
#define PREC_POW 6

/* ---- grouping lists ---------------------------------------------------------------- */

static int is_label(const char *s, size_t n) {
    if (n == 0 || !pq__is_alpha((unsigned char)s[0])) return 0;
    for (size_t i = 1; i < n; i++)
        if (!pq__is_alnum((unsigned char)s[i])) return 0;
    return 1;
}

/* grouping_labels: "(" [label {"," label} [","]] ")". */
static int grouping_labels(parser *p, char ***ret, size_t *ret_n) {
    pq_token t = *peek(p);
    if (t.type != PQ_TOK_LEFT_PAREN) {
        unexpected(p, "grouping opts", "\"(\"");
        return -1;
    }
    take(p);
    pvec v = {0};
    if (peek(p)->type == PQ_TOK_RIGHT_PAREN) {
        take(p);
        *ret = NULL;
        *ret_n = 0;
        return p->failed ? -1 : 0;
    }
    for (;;) {
        t = *peek(p);
        if (!is_maybe_label(t.type)) {
            unexpected(p, "grouping opts", "label");
            return -1;
        }
        take(p);
        if (!is_label(p->q + t.pos, t.len)) {
            unexpected_tok(p, t, "grouping opts", "label");
            return -1;
        }
        char *s = sdup(p, p->q + t.pos, t.len);
        if (!s || pvec_push(p, &v, s)) return -1;
        t = *peek(p);
        if (t.type == PQ_TOK_COMMA) {
            take(p);
            if (peek(p)->type == PQ_TOK_RIGHT_PAREN) {
                take(p);
                break;
            }
            continue;
        }
        if (t.type == PQ_TOK_RIGHT_PAREN) {
            take(p);
            break;
        }
        unexpected(p, "grouping opts", "\",\" or \")\"");
        return -1;
    }
    if (p->failed) return -1;
    *ret = (char **)v.v;
    *ret_n = v.n;
    return 0;
}

/* ---- expressions --------------------------------------------------------------------- */

static pq_node *expr(parser *p, int min_prec);

/* function_call_body: "(" [expr {"," expr}] ")" (no trailing comma). */
static int call_body(parser *p, pq_node ***ret, size_t *ret_n) {
    take(p); /* ( */
    pvec v = {0};
    if (peek(p)->type == PQ_TOK_RIGHT_PAREN) {
        take(p);
    } else {
        for (;;) {
            pq_node *e = expr(p, 0);
            if (!e || pvec_push(p, &v, e)) return -1;
            pq_token t = *peek(p);
            if (t.type == PQ_TOK_COMMA) {
                take(p);
                /* `function_call_args COMMA .` reduces unless an
                 * expression follows. */
                if (!starts_expr(peek(p)->type)) {
                    if (p->failed) return -1;
                    perr(p, t.pos, "trailing commas not allowed in function call args");
                    return -1;
                }
                continue;
            }
            if (t.type == PQ_TOK_RIGHT_PAREN) {
                take(p);
                break;
            }
            unexpected_here(p);
            return -1;
        }
    }
    if (p->failed) return -1;
    *ret = (pq_node **)v.v;
    *ret_n = v.n;
    return 0;
}

/* labels.NewMatcher for the label token t and the unquoted value, with
 * its error at the label. A regex error echoes (part of) the value, NUL
 * bytes included as 2.42 prints them: the buffer is zeroed and sized for
 * the whole value, so the message runs to its last non-NUL byte (every
 * labels message ends in text or '`'). */
static int matcher(parser *p, labels_match_type mt, pq_token t, const char *val, size_t vlen,
                   labels_matcher **ret) {
    size_t elen = vlen + 512;
    char *e = calloc(1, elen);
    if (!e) {
        nomem(p);
        return -1;
    }
    int rc = labels_matcher_new(mt, (base_str){p->q + t.pos, t.len}, (base_str){val, vlen}, ret, e, elen);
    if (rc == BASE_E_NOMEM) {
        nomem(p);
    } else if (rc) {
        size_t k = elen;
        while (k && !e[k - 1]) k--;
        report(p, BASE_E_PARSE, t.pos, e, k);
    }
    free(e);
    return rc ? -1 : 0;
}

static pq_node *vector_selector(parser *p, const pq_token *name, pq_token brace) {
    size_t start = name ? name->pos : brace.pos;
    size_t end = name ? (size_t)name->pos + name->len : 0;
    pvec ms = {0};
    if (!name || brace.type == PQ_TOK_LEFT_BRACE) {
        take(p); /* { */
        for (;;) {
            pq_token t = *peek(p);
            if (t.type == PQ_TOK_RIGHT_BRACE && ms.n == 0) {
                take(p);
                end = (size_t)t.pos + 1;
                break;
            }
            if (t.type != PQ_TOK_IDENTIFIER) return unexpected(p, "label matching", "identifier or \"}\"");
            take(p);
            pq_token op = *peek(p);
            labels_match_type mt;
            switch (op.type) {
            case PQ_TOK_EQL: mt = LABELS_MATCH_EQ; break;
            case PQ_TOK_NEQ: mt = LABELS_MATCH_NEQ; break;
            case PQ_TOK_EQL_REGEX: mt = LABELS_MATCH_RE; break;
            case PQ_TOK_NEQ_REGEX: mt = LABELS_MATCH_NRE; break;
            default: return unexpected(p, "label matching", "label matching operator");
            }
            take(p);
            pq_token sv = *peek(p);
            if (sv.type != PQ_TOK_STRING) return unexpected(p, "label matching", "string");
            take(p);
            size_t vlen = 0;
            char *val = unquote(p, sv, &vlen);
            if (!val) return NULL;
            labels_matcher *m = NULL;
            if (matcher(p, mt, t, val, vlen, &m)) return NULL;
            if (track_matcher(p, m) || pvec_push(p, &ms, m)) return NULL;
            t = *peek(p);
            if (t.type == PQ_TOK_COMMA) {
                take(p);
                pq_token c = *peek(p);
                if (c.type == PQ_TOK_RIGHT_BRACE) {
                    take(p);
                    end = (size_t)c.pos + 1;
                    break;
                }
                continue;
            }
            if (t.type == PQ_TOK_RIGHT_BRACE) {
                take(p);
                end = (size_t)t.pos + 1;
                break;
            }
            return unexpected(p, "label matching", "\",\" or \"}\"");
        }
    }
    if (p->failed) return NULL;
    pq_node *n = mknode(p, PQ_VSEL, PQ_T_VECTOR, start, end);
    if (!n) return NULL;
    if (name) {
        /* assembleVectorSelector: the name's matcher goes last. */
        labels_matcher *m = NULL;
        char e[256];
        int rc = labels_matcher_new(LABELS_MATCH_EQ, base_str_c(LABELS_METRIC_NAME),
                                    (base_str){p->q + name->pos, name->len}, &m, e, sizeof e);
        if (rc) {
            nomem(p);
            return NULL;
        }
        if (track_matcher(p, m) || pvec_push(p, &ms, m)) return NULL;
        n->vsel.name = sdup(p, p->q + name->pos, name->len);
        if (!n->vsel.name) return NULL;
    }
    n->vsel.ms = (labels_matcher **)ms.v;
    n->vsel.nms = ms.n;
    return n;
}

/* parse.go's newAggregateExpr() checks. */
static pq_node *aggregate(parser *p, pq_token op) {
    pq_node *n = mknode(p, PQ_AGG, PQ_T_VECTOR, op.pos, 0);
    if (!n) return NULL;
    n->agg.op = (pq_aggop)(op.type - PQ_TOK_SUM);
    pq_node **args = NULL;
    size_t nargs = 0;
    p->agg++;
    pq_token t = *peek(p);
    if (t.type == PQ_TOK_BY || t.type == PQ_TOK_WITHOUT) {
        take(p);
        n->agg.without = t.type == PQ_TOK_WITHOUT;
        n->agg.grouping_given = 1;
        if (grouping_labels(p, &n->agg.grouping, &n->agg.ngrouping)) return NULL;
        if (peek(p)->type != PQ_TOK_LEFT_PAREN) return unexpected_here(p);
        if (call_body(p, &args, &nargs)) return NULL;
    } else {
        if (call_body(p, &args, &nargs)) return NULL;
        /* `aggregate_op function_call_body .` looks ahead for a modifier. */
        t = *peek(p);
        if (p->failed) return NULL;
        if (t.type == PQ_TOK_BY || t.type == PQ_TOK_WITHOUT) {
            take(p);
            n->agg.without = t.type == PQ_TOK_WITHOUT;
            n->agg.grouping_given = 1;
            if (grouping_labels(p, &n->agg.grouping, &n->agg.ngrouping)) return NULL;
        }
    }
    p->agg--;
    n->pos_end = (uint32_t)p->last_closing;
    if (nargs == 0) {
        perr(p, n->pos_start, "no arguments for aggregate expression provided");
        return NULL;
    }
    size_t want = 1;
    if (n->agg.op == PQ_AGG_TOPK || n->agg.op == PQ_AGG_BOTTOMK || n->agg.op == PQ_AGG_COUNT_VALUES ||
        n->agg.op == PQ_AGG_QUANTILE) {
        want = 2;
        n->agg.param = args[0];
    }
    if (nargs != want) {
        perr(p, n->pos_start,
             "wrong number of arguments for aggregate expression provided, expected %zu, got %zu", want,
             nargs);
        return NULL;
    }
    n->agg.expr = args[want - 1];
    if (deepen(p, n, n->agg.expr) || (n->agg.param && deepen(p, n, n->agg.param))) return NULL;
    return n;
}

static pq_node *primary(parser *p) {
    pq_token t = *peek(p);
    switch (t.type) {
    case PQ_TOK_NUMBER: {
        take(p);
        double v = number(p, t);
        pq_node *n = mknode(p, PQ_NUM, PQ_T_SCALAR, t.pos, (size_t)t.pos + t.len);
        if (n) n->num.v = v;
        return n;
    }
    case PQ_TOK_STRING: {
        take(p);
        size_t len = 0;
        char *s = unquote(p, t, &len);
        if (!s) return NULL;
        pq_node *n = mknode(p, PQ_STR, PQ_T_STRING, t.pos, (size_t)t.pos + t.len);
        if (n) {
            n->str.s = s;
            n->str.len = len;
        }
        return n;
    }
    case PQ_TOK_LEFT_PAREN: {
        take(p);
        pq_node *e = expr(p, 0);
        if (!e) return NULL;
        pq_token c = *peek(p);
        if (c.type != PQ_TOK_RIGHT_PAREN) return unexpected_here(p);
        take(p);
        pq_node *n = mknode(p, PQ_PAREN, e->type, t.pos, (size_t)c.pos + 1);
        if (!n) return NULL;
        n->paren.expr = e;
        if (deepen(p, n, e)) return NULL;
        return n;
    }
    case PQ_TOK_LEFT_BRACE: return vector_selector(p, NULL, t);
    case PQ_TOK_IDENTIFIER: {
        take(p);
        pq_token nx = *peek(p);
        if (nx.type != PQ_TOK_LEFT_PAREN) return vector_selector(p, &t, nx);
        pq_node **args = NULL;
        size_t nargs = 0;
        if (call_body(p, &args, &nargs)) return NULL;
        const pq_func *fn = pq_func_lookup(p->q + t.pos, t.len);
        if (!fn) {
            base_buf b;
            base_buf_init(&b, 0);
            labels_quote(&b, (base_str){p->q + t.pos, t.len});
            perr(p, t.pos, "unknown function with name %.*s", (int)b.len, b.data ? b.data : "");
            base_buf_free(&b);
            return NULL;
        }
        pq_node *n = mknode(p, PQ_CALL, fn->ret, t.pos, p->last_closing);
        if (!n) return NULL;
        n->call.fn = fn;
        n->call.args = args;
        n->call.nargs = nargs;
        for (size_t i = 0; i < nargs; i++)
            if (deepen(p, n, args[i])) return NULL;
        return n;
    }
    case PQ_TOK_METRIC_IDENTIFIER: take(p); return vector_selector(p, &t, *peek(p));
    default: break;
    }
    if (is_agg_tok(t.type)) {
        take(p);
        pq_token nx = *peek(p);
        if (nx.type == PQ_TOK_LEFT_PAREN || nx.type == PQ_TOK_BY || nx.type == PQ_TOK_WITHOUT)
            return aggregate(p, t);
        return vector_selector(p, &t, nx);
    }
    if (is_metric_kw(t.type)) {
        take(p);
        return vector_selector(p, &t, *peek(p));
    }
    return unexpected_here(p);
}

/* The node whose offset / @ a modifier sets (parse.go's
 * getAtModifierVars / addOffset targets), or NULL. */
typedef struct modvars {
    int64_t *offset;
    pq_at *at;
    int64_t *at_ms;
} modvars;

static int mod_vars(pq_node *e, modvars *v) {
    switch (e->kind) {
    case PQ_VSEL:
        v->offset = &e->vsel.offset_ms;
        v->at = &e->vsel.at;
        v->at_ms = &e->vsel.at_ms;
        return 0;
    case PQ_MSEL:
        v->offset = &e->msel.vsel->vsel.offset_ms;
        v->at = &e->msel.vsel->vsel.at;
        v->at_ms = &e->msel.vsel->vsel.at_ms;
        return 0;
    case PQ_SUBQ:
        v->offset = &e->subq.offset_ms;
        v->at = &e->subq.at;
        v->at_ms = &e->subq.at_ms;
        return 0;
    default: return -1;
    }
}

static int add_offset(parser *p, pq_node *e, int64_t off) {
    modvars v;
    if (mod_vars(e, &v)) {
        perr(p, e->pos_start,
             "offset modifier must be preceded by an instant vector selector or range vector selector or a "
             "subquery");
        return -1;
    }
    if (*v.offset != 0) {
        perr(p, e->pos_start, "offset may not be set multiple times");
        return -1;
    }
    *v.offset = off;
    e->pos_end = (uint32_t)p->last_closing;
    return 0;
}

static int at_vars(parser *p, pq_node *e, modvars *v) {
    if (mod_vars(e, v)) {
        perr(p, e->pos_start,
             "@ modifier must be preceded by an instant vector selector or range vector selector or a "
             "subquery");
        return -1;
    }
    if (*v->at != PQ_AT_NONE) {
        perr(p, e->pos_start, "@ <timestamp> may not be set multiple times");
        return -1;
    }
    return 0;
}

/* Go's int64(f) on amd64: out of range and NaN give MinInt64. */
static int64_t go_int64(double f) {
    if (!(f >= -9223372036854775808.0 && f < 9223372036854775808.0)) return INT64_MIN;
    return (int64_t)f;
}

static int set_timestamp(parser *p, pq_node *e, double ts) {
    if (isinf(ts) || isnan(ts) || ts >= 9223372036854775807.0 || ts <= -9223372036854775808.0) {
        base_buf b;
        base_buf_init(&b, 0);
        if (isnan(ts))
            base_buf_puts(&b, "NaN");
        else if (isinf(ts))
            base_buf_puts(&b, ts > 0 ? "+Inf" : "-Inf");
        else
            base_buf_printf(&b, "%f", ts);
        perr(p, e->pos_start, "timestamp out of bounds for @ modifier: %.*s", (int)b.len,
             b.data ? b.data : "");
        base_buf_free(&b);
        return -1;
    }
    modvars v;
    if (at_vars(p, e, &v)) return -1;
    *v.at = PQ_AT_TIME;
    *v.at_ms = go_int64(round(ts * 1000));
    e->pos_end = (uint32_t)p->last_closing;
    return 0;
}

/* [range], [range:step], offset, @ after a primary. */
static pq_node *postfix(parser *p, pq_node *e) {
    for (;;) {
        if (!e) return NULL;
        pq_token t = *peek(p);
        if (t.type == PQ_TOK_LEFT_BRACKET) {
            take(p);
            pq_token d = *peek(p);
            if (d.type != PQ_TOK_DURATION) return unexpected(p, "subquery selector", "duration");
            take(p);
            int64_t range = duration(p, d);
            if (p->failed) return NULL;
            pq_token c = *peek(p);
            if (c.type == PQ_TOK_RIGHT_BRACKET) {
                take(p);
                const char *msg = NULL;
                if (e->kind != PQ_VSEL)
                    msg = "ranges only allowed for vector selectors";
                else if (e->vsel.offset_ms != 0)
                    msg = "no offset modifiers allowed before range";
                else if (e->vsel.at == PQ_AT_TIME)
                    msg = "no @ modifiers allowed before range";
                if (msg) {
                    perr(p, t.pos, "%s", msg);
                    return NULL;
                }
                pq_node *m = mknode(p, PQ_MSEL, PQ_T_MATRIX, e->pos_start, p->last_closing);
                if (!m) return NULL;
                m->msel.vsel = e;
                m->msel.range_ms = range;
                if (deepen(p, m, e)) return NULL;
                e = m;
                continue;
            }
            if (c.type != PQ_TOK_COLON) return unexpected(p, "subquery or range", "\":\" or \"]\"");
            take(p);
            int64_t step = 0;
            pq_token s = *peek(p);
            if (s.type == PQ_TOK_DURATION) {
                take(p);
                step = duration(p, s);
                if (p->failed) return NULL;
                s = *peek(p);
                if (s.type != PQ_TOK_RIGHT_BRACKET) return unexpected(p, "subquery selector", "\"]\"");
            } else if (s.type != PQ_TOK_RIGHT_BRACKET) {
                return unexpected(p, "subquery selector", "duration or \"]\"");
            }
            take(p);
            pq_node *q = mknode(p, PQ_SUBQ, PQ_T_MATRIX, e->pos_start, (size_t)s.pos + 1);
            if (!q) return NULL;
            q->subq.expr = e;
            q->subq.range_ms = range;
            q->subq.step_ms = step;
            if (deepen(p, q, e)) return NULL;
            e = q;
            continue;
        }
        if (t.type == PQ_TOK_OFFSET) {
            take(p);
            pq_token d = *peek(p);
            int neg = 0;
            if (d.type == PQ_TOK_SUB) {
                take(p);
                neg = 1;
                d = *peek(p);
            }
            if (d.type != PQ_TOK_DURATION) return unexpected(p, "offset", "duration");
            take(p);
            int64_t off = duration(p, d);
            if (p->failed || add_offset(p, e, neg ? -off : off)) return NULL;
            continue;
        }
        if (t.type == PQ_TOK_AT) {
            take(p);
            pq_token a = *peek(p);
            if (a.type == PQ_TOK_START || a.type == PQ_TOK_END) {
                take(p);
                if (peek(p)->type != PQ_TOK_LEFT_PAREN) return unexpected(p, "@", "timestamp");
                take(p);
                if (peek(p)->type != PQ_TOK_RIGHT_PAREN) return unexpected(p, "@", "timestamp");
                take(p);
                modvars v;
                if (at_vars(p, e, &v)) return NULL;
                *v.at = a.type == PQ_TOK_START ? PQ_AT_START : PQ_AT_END;
                e->pos_end = (uint32_t)p->last_closing;
                continue;
            }
            int neg = 0;
            if (a.type == PQ_TOK_ADD || a.type == PQ_TOK_SUB) {
                take(p);
                neg = a.type == PQ_TOK_SUB;
                a = *peek(p);
            }
            if (a.type != PQ_TOK_NUMBER) return unexpected(p, "@", "timestamp");
            take(p);
            double ts = number(p, a);
            if (p->failed || set_timestamp(p, e, neg ? -ts : ts)) return NULL;
            continue;
        }
        return e;
    }
}

static pq_node *unary(parser *p) {
    pq_token t = *peek(p);
    if (t.type == PQ_TOK_ADD || t.type == PQ_TOK_SUB) {
        take(p);
        pq_node *e = expr(p, PREC_POW);
        if (!e) return NULL;
        if (e->kind == PQ_NUM) {
            if (t.type == PQ_TOK_SUB) e->num.v = -e->num.v;
            e->pos_start = t.pos;
            return e;
        }
        pq_node *n = mknode(p, PQ_UNARY, e->type, t.pos, e->pos_end);
        if (!n) return NULL;
        n->unary.neg = t.type == PQ_TOK_SUB;
        n->unary.expr = e;
        if (deepen(p, n, e)) return NULL;
        return n;
    }
    return postfix(p, primary(p));
}

/* bin_modifier: [bool] [(on|ignoring) (labels) [(group_left|group_right) [(labels)]]]. */
static int bin_modifier(parser *p, pq_node *n) {
    pq_vmatch *vm = alloc(p, sizeof *vm);
    if (!vm) return -1;
    vm->card = PQ_CARD_ONE_TO_ONE;
    n->bin.vm = vm;
    pq_token t = *peek(p);
    if (t.type == PQ_TOK_BOOL) {
        take(p);
        n->bin.return_bool = 1;
        t = *peek(p);
    }
    if (t.type == PQ_TOK_ON || t.type == PQ_TOK_IGNORING) {
        take(p);
        vm->on = t.type == PQ_TOK_ON;
        if (grouping_labels(p, &vm->labels, &vm->nlabels)) return -1;
        t = *peek(p);
        if (t.type == PQ_TOK_GROUP_LEFT || t.type == PQ_TOK_GROUP_RIGHT) {
            take(p);
            vm->card = t.type == PQ_TOK_GROUP_LEFT ? PQ_CARD_MANY_TO_ONE : PQ_CARD_ONE_TO_MANY;
            pq_token g = *peek(p);
            if (g.type == PQ_TOK_LEFT_PAREN) {
                if (grouping_labels(p, &vm->include, &vm->ninclude)) return -1;
            } else if (!starts_expr(g.type)) {
                unexpected(p, "grouping opts", "\"(\"");
                return -1;
            }
        }
    }
    return p->failed ? -1 : 0;
}

static pq_node *expr(parser *p, int min_prec) {
    if (++p->depth > PQ_MAX_DEPTH) {
        perr(p, peek(p)->pos, "expression nesting too deep (more than %d levels)", PQ_MAX_DEPTH);
        return NULL;
    }
    pq_node *lhs = unary(p);
    while (lhs) {
        pq_binop op;
        int prec = binop_prec(peek(p)->type, &op);
        if (!prec || prec < min_prec) break;
        take(p);
        pq_node *n = mknode(p, PQ_BIN, PQ_T_VECTOR, lhs->pos_start, 0);
        if (!n) return NULL;
        n->bin.op = op;
        n->bin.lhs = lhs;
        if (bin_modifier(p, n)) return NULL;
        pq_node *rhs = expr(p, prec == PREC_POW ? prec : prec + 1);
        if (!rhs) return NULL;
        n->bin.rhs = rhs;
        n->pos_end = rhs->pos_end;
        if (lhs->type == PQ_T_SCALAR && rhs->type == PQ_T_SCALAR) n->type = PQ_T_SCALAR;
        if (deepen(p, n, lhs) || deepen(p, n, rhs)) return NULL;
        lhs = n;
    }
    p->depth--;
    return p->failed ? NULL : lhs;
}

/* ---- type checks (parse.go's checkAST) -------------------------------------------------- */

static pq_type check(parser *p, pq_node *n);

static void expect_type(parser *p, pq_node *n, pq_type want, const char *ctx, const char *fn) {
    pq_type t = check(p, n);
    if (t != want) {
        if (fn)
            perr(p, n->pos_start, "expected type %s in call to function \"%s\", got %s", pq_type_doc(want),
                 fn, pq_type_doc(t));
        else
            perr(p, n->pos_start, "expected type %s in %s, got %s", pq_type_doc(want), ctx ? ctx : "",
                 pq_type_doc(t));
    }
}

/* The operator's position: after the lhs, blanks skipped. */
static size_t op_pos(parser *p, const pq_node *n) {
    size_t s = n->bin.lhs->pos_end;
    while (s < p->n && pq__is_space((unsigned char)p->q[s])) s++;
    return s;
}

static pq_type check(parser *p, pq_node *n) {
    pq_type typ = n->type;
    switch (n->kind) {
    case PQ_AGG:
        expect_type(p, n->agg.expr, PQ_T_VECTOR, "aggregation expression", NULL);
        if (n->agg.op == PQ_AGG_TOPK || n->agg.op == PQ_AGG_BOTTOMK || n->agg.op == PQ_AGG_QUANTILE)
            expect_type(p, n->agg.param, PQ_T_SCALAR, "aggregation parameter", NULL);
        if (n->agg.op == PQ_AGG_COUNT_VALUES)
            expect_type(p, n->agg.param, PQ_T_STRING, "aggregation parameter", NULL);
        break;
    case PQ_BIN: {
        pq_type lt = check(p, n->bin.lhs);
        pq_type rt = check(p, n->bin.rhs);
        pq_vmatch *vm = n->bin.vm;
        pq_binop op = n->bin.op;
        if (n->bin.return_bool && !pq_binop_is_comparison(op))
            perr(p, op_pos(p, n), "bool modifier can only be used on comparison operators");
        if (pq_binop_is_comparison(op) && !n->bin.return_bool && n->bin.rhs->type == PQ_T_SCALAR &&
            n->bin.lhs->type == PQ_T_SCALAR)
            perr(p, op_pos(p, n), "comparisons between scalars must use BOOL modifier");
        if (pq_binop_is_set(op) && vm && vm->card == PQ_CARD_ONE_TO_ONE) vm->card = PQ_CARD_MANY_TO_MANY;
        if (vm && vm->on)
            for (size_t i = 0; i < vm->nlabels; i++)
                for (size_t j = 0; j < vm->ninclude; j++)
                    if (strcmp(vm->labels[i], vm->include[j]) == 0) {
                        base_buf b;
                        base_buf_init(&b, 0);
                        labels_quote(&b, base_str_c(vm->labels[i]));
                        perr(p, op_pos(p, n), "label %.*s must not occur in ON and GROUP clause at once",
                             (int)b.len, b.data ? b.data : "");
                        base_buf_free(&b);
                    }
        if (lt != PQ_T_SCALAR && lt != PQ_T_VECTOR)
            perr(p, n->bin.lhs->pos_start,
                 "binary expression must contain only scalar and instant vector types");
        if (rt != PQ_T_SCALAR && rt != PQ_T_VECTOR)
            perr(p, n->bin.rhs->pos_start,
                 "binary expression must contain only scalar and instant vector types");
        if ((lt != PQ_T_VECTOR || rt != PQ_T_VECTOR) && vm) {
            if (vm->nlabels > 0)
                perr(p, n->pos_start, "vector matching only allowed between instant vectors");
            n->bin.vm = NULL;
        } else if (pq_binop_is_set(op)) {
            if (vm->card == PQ_CARD_ONE_TO_MANY || vm->card == PQ_CARD_MANY_TO_ONE)
                perr(p, n->pos_start, "no grouping allowed for \"%s\" operation", pq_binop_str(op));
            if (vm->card != PQ_CARD_MANY_TO_MANY)
                perr(p, n->pos_start, "set operations must always be many-to-many");
        }
        if ((lt == PQ_T_SCALAR || rt == PQ_T_SCALAR) && pq_binop_is_set(op))
            perr(p, n->pos_start, "set operator \"%s\" not allowed in binary scalar expression",
                 pq_binop_str(op));
        break;
    }
    case PQ_CALL: {
        const pq_func *fn = n->call.fn;
        size_t nargs = fn->nargs;
        if (fn->variadic == 0) {
            if (nargs != n->call.nargs)
                perr(p, n->pos_start, "expected %zu argument(s) in call to \"%s\", got %zu", nargs, fn->name,
                     n->call.nargs);
        } else {
            size_t na = nargs - 1;
            if (na > n->call.nargs)
                perr(p, n->pos_start, "expected at least %zu argument(s) in call to \"%s\", got %zu", na,
                     fn->name, n->call.nargs);
            else if (fn->variadic > 0 && na + (size_t)fn->variadic < n->call.nargs)
                perr(p, n->pos_start, "expected at most %zu argument(s) in call to \"%s\", got %zu",
                     na + (size_t)fn->variadic, fn->name, n->call.nargs);
        }
        for (size_t i = 0; i < n->call.nargs; i++) {
            size_t k = i;
            if (k >= nargs) {
                if (fn->variadic == 0) break;
                k = nargs - 1;
            }
            expect_type(p, n->call.args[i], fn->args[k], NULL, fn->name);
        }
        break;
    }
    case PQ_PAREN: check(p, n->paren.expr); break;
    case PQ_UNARY: {
        pq_type t = check(p, n->unary.expr);
        if (t != PQ_T_SCALAR && t != PQ_T_VECTOR)
            perr(p, n->pos_start,
                 "unary expression only allowed on expressions of type scalar or instant vector, got \"%s\"",
                 pq_type_doc(t));
        break;
    }
    case PQ_SUBQ: {
        pq_type t = check(p, n->subq.expr);
        if (t != PQ_T_VECTOR)
            perr(p, n->pos_start, "subquery is only allowed on instant vector, got %s instead",
                 pq_type_name(t));
        break;
    }
    case PQ_MSEL: check(p, n->msel.vsel); break;
    case PQ_VSEL:
        if (n->vsel.name) {
            for (size_t i = 0; i + 1 < n->vsel.nms; i++) {
                base_str nm = labels_matcher_name(n->vsel.ms[i]);
                if (base_str_eqc(nm, LABELS_METRIC_NAME)) {
                    base_str v = labels_matcher_value(n->vsel.ms[i]);
                    base_buf b;
                    base_buf_init(&b, 0);
                    labels_quote(&b, base_str_c(n->vsel.name));
                    base_buf_putc(&b, 0);
                    size_t mid = b.len;
                    labels_quote(&b, v);
                    perr(p, n->pos_start, "metric name must not be set twice: %s or %.*s",
                         b.data ? b.data : "", (int)(b.len - mid), b.data ? b.data + mid : "");
                    base_buf_free(&b);
                }
            }
            break;
        }
        {
            int not_empty = 0;
            for (size_t i = 0; i < n->vsel.nms; i++)
                if (!labels_matcher_matches_empty(n->vsel.ms[i])) {
                    not_empty = 1;
                    break;
                }
            if (!not_empty)
                perr(p, n->pos_start, "vector selector must contain at least one non-empty matcher");
        }
        break;
    case PQ_NUM:
    case PQ_STR: break;
    }
    return typ;
}

/* ---- the API -------------------------------------------------------------------------------- */

void promql_expr_free(pq_expr *x) {
    if (!x) return;
    for (size_t i = 0; i < x->nms; i++) labels_matcher_free(x->ms[i]);
    free(x->ms);
    base_arena_free(&x->arena);
    free(x);
}

const pq_node *promql_expr_root(const pq_expr *x) {
    return x ? x->root : NULL;
}

/* The state every entry point starts from; NULL when out of memory. */
static pq_expr *parser_init(parser *p, const char *q, size_t n) {
    pq_expr *x = calloc(1, sizeof *x);
    if (!x) return NULL;
    base_arena_init(&x->arena, 4096, ARENA_LIMIT);
    memset(p, 0, sizeof *p);
    p->q = q ? q : "";
    p->n = n;
    p->x = x;
    base_buf_init(&p->msg, 0);
    base_buf_init(&p->sb, 0);
    pq__lex_init(&p->lx, p->q, n);
    return x;
}

/* Ends a parse: the message to the caller (msg appended, or err as a C
 * string cut to errlen), the parser's buffers freed. Returns rc. */
static int parser_done(parser *p, int rc, base_buf *msg, char *err, size_t errlen) {
    const char *m = p->msg.data ? p->msg.data : "";
    size_t mlen = p->msg.len;
    if (rc == BASE_E_NOMEM || base_buf_err(&p->msg)) {
        m = "out of memory";
        mlen = strlen(m);
    }
    if (rc && msg) base_buf_append(msg, m, mlen);
    if (rc && err && errlen) {
        size_t k = mlen < errlen - 1 ? mlen : errlen - 1;
        memcpy(err, m, k);
        err[k] = 0;
    }
    base_buf_free(&p->msg);
    base_buf_free(&p->sb);
    return rc;
}

/* PQ_MAX_QUERY: BASE_E_LIMIT with a message, or 0. */
static int too_long(size_t n, base_buf *msg, char *err, size_t errlen) {
    if (n <= PQ_MAX_QUERY) return 0;
    if (msg) base_buf_printf(msg, "query too long: %zu bytes, the limit is %u", n, PQ_MAX_QUERY);
    if (err && errlen) snprintf(err, errlen, "query too long: %zu bytes, the limit is %u", n, PQ_MAX_QUERY);
    return BASE_E_LIMIT;
}

static int parse_expr(const char *q, size_t n, pq_expr **ret, base_buf *msg, char *err, size_t errlen) {
    if (err && errlen) err[0] = 0;
    if (too_long(n, msg, err, errlen)) return BASE_E_LIMIT;
    parser p;
    pq_expr *x = parser_init(&p, q, n);
    if (!x) {
        if (msg) base_buf_puts(msg, "out of memory");
        if (err && errlen) snprintf(err, errlen, "out of memory");
        return BASE_E_NOMEM;
    }
    pq_node *root = NULL;
    if (peek(&p)->type == PQ_TOK_EOF) {
        perr(&p, 0, "no expression found in input");
    } else if (!p.failed) {
        root = expr(&p, 0);
        if (root && peek(&p)->type != PQ_TOK_EOF) unexpected_here(&p);
        if (!p.failed) check(&p, root);
    }
    if (p.failed) {
        promql_expr_free(x);
        return parser_done(&p, p.rc ? p.rc : BASE_E_PARSE, msg, err, errlen);
    }
    x->root = root;
    *ret = x;
    return parser_done(&p, 0, msg, err, errlen);
}

int promql_parse(const char *q, size_t n, pq_expr **ret, char *err, size_t errlen) {
    return parse_expr(q, n, ret, NULL, err, errlen);
}

int promql_parse_msg(const char *q, size_t n, pq_expr **ret, base_buf *msg) {
    return parse_expr(q, n, ret, msg, NULL, 0);
}

/* START_METRIC_SELECTOR vector_selector EOF: a metric_identifier (a name
 * or a keyword 2.42 takes as one) with or without braces, or braces
 * alone. No checkAST: a doubled __name__ and {} pass (the API checks for
 * a non-empty matcher itself). Any other token, first or after the
 * selector, is the `start: error` rule's bare "unexpected X". */
static int parse_selector(const char *s, size_t n, labels_matcher ***ret_ms, size_t *ret_n, base_buf *msg,
                          char *err, size_t errlen) {
    if (err && errlen) err[0] = 0;
    if (too_long(n, msg, err, errlen)) return BASE_E_LIMIT;
    parser p;
    pq_expr *x = parser_init(&p, s, n);
    if (!x) {
        if (msg) base_buf_puts(msg, "out of memory");
        if (err && errlen) snprintf(err, errlen, "out of memory");
        return BASE_E_NOMEM;
    }
    pq_node *vs = NULL;
    pq_token t = *peek(&p);
    if (!p.failed) {
        if (t.type == PQ_TOK_LEFT_BRACE) {
            vs = vector_selector(&p, NULL, t);
        } else if (t.type == PQ_TOK_IDENTIFIER || t.type == PQ_TOK_METRIC_IDENTIFIER ||
                   is_metric_kw(t.type)) {
            take(&p);
            vs = vector_selector(&p, &t, *peek(&p));
        } else {
            unexpected_here(&p);
        }
        if (vs && peek(&p)->type != PQ_TOK_EOF) unexpected_here(&p);
    }
    labels_matcher **ms = NULL;
    if (!p.failed && vs->vsel.nms) {
        ms = malloc(vs->vsel.nms * sizeof *ms);
        if (!ms) nomem(&p);
    }
    if (p.failed) {
        promql_expr_free(x);
        return parser_done(&p, p.rc ? p.rc : BASE_E_PARSE, msg, err, errlen);
    }
    /* Every matcher tracked is one of this selector's: hand them over. */
    size_t nms = vs->vsel.nms;
    if (nms) memcpy(ms, vs->vsel.ms, nms * sizeof *ms);
    x->nms = 0;
    promql_expr_free(x);
    *ret_ms = ms;
    *ret_n = nms;
    return parser_done(&p, 0, msg, err, errlen);
}

int promql_parse_selector(const char *s, size_t n, labels_matcher ***ret_ms, size_t *ret_n, char *err,
                          size_t errlen) {
    return parse_selector(s, n, ret_ms, ret_n, NULL, err, errlen);
}

int promql_parse_selector_msg(const char *s, size_t n, labels_matcher ***ret_ms, size_t *ret_n,
                              base_buf *msg) {
    return parse_selector(s, n, ret_ms, ret_n, msg, NULL, 0);
}
