/* series_desc.c -- series descriptions (promql/parser.ParseSeriesDesc) and
 * parser.ParseMetric of Prometheus 2.42; see series_desc.h.
 *
 * DESIGN. 2.42 runs its yacc parser from the START_SERIES_DESCRIPTION (or
 * START_METRIC) symbol with its lexer in series mode. The metric part is
 * lexed as any PromQL (pq__lex_next, lex.c); once a word not followed by
 * '{', or a '}', has been lexed, lex.go switches to lexValueSequence,
 * which is value_lex() below: blanks become one SPACE token each run, and
 * + - x _ numbers and words are tokens of their own. The parser is a walk
 * through the same LALR states the yacc tables hold, written out by hand:
 *  - inside an item (after `_`, a sign, `x`, a value followed by a sign),
 *    a wrong token is caught by the `series_values: error` rule, so the
 *    message is "unexpected T in series values";
 *  - between items (where yacc's default reductions run up to `start`),
 *    it is caught by `start: error`: "unexpected T";
 *  - in a label set, by the label_set_item / label_set_list error rules
 *    with their "expected ..." words.
 * Semantic errors (a word other than stale, a number Go cannot parse, a
 * bad repetition count) are recorded where 2.42's reductions record them;
 * only the first error counts (ParseErrors.Error() prints errs[0]), so the
 * walk stops there.
 *
 * Invariants: a result is only written on success; every allocation is
 * freed on failure.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/num.h"
#include "base/utf8.h"
#include "promql/parse_int.h"
#include "promql/promql.h"
#include "promql/series_desc.h"

/* Token kinds of the value sequence beyond lex.c's. */
enum { VT_SPACE = 1000, VT_TIMES, VT_BLANK };

typedef struct tok {
    int type; /* pq_tok or VT_* */
    size_t pos, len;
} tok;

typedef struct sp {
    const char *in;
    size_t n;
    int line_offset;
    base_buf *msg;
    pq_lexer lx;    /* the metric part */
    int values;     /* lexing the value sequence */
    size_t vpos;    /* value lexer position */
    int brace_next; /* a word was followed by '{': the next token is LEFT_BRACE */
    char lexerr[256];
    size_t lexerr_pos;
    /* results */
    labels_builder lb;
    char **names, **vals;
    size_t npairs, cappairs;
    char *metric_name;
    promql_seq_value *seq;
    size_t nseq, capseq;
    int rc;
} sp;

/* ---- errors ------------------------------------------------------------------------- */

/* ParseErr.Error(): "LINE:COL: parse error: MSG". */
static int fail_at(sp *p, size_t pos, int code, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int fail_at(sp *p, size_t pos, int code, const char *fmt, ...) {
    base_buf_printf(p->msg, "%d:%zu: parse error: ", p->line_offset + 1, pos + 1);
    va_list ap;
    va_start(ap, fmt);
    base_buf_vprintf(p->msg, fmt, ap);
    va_end(ap);
    p->rc = code;
    return code;
}

static void tok_desc(sp *p, tok t, base_buf *out) {
    if (t.type == VT_SPACE || t.type == VT_TIMES || t.type == VT_BLANK) {
        labels_quote(out, (base_str){p->in + t.pos, t.len});
        return;
    }
    pq__tok_desc(p->in, (pq_token){(pq_tok)t.type, (uint32_t)t.pos, (uint32_t)t.len}, out);
}

/* p.unexpected(context, expected); a lexer error is reported as itself. */
static int unexpected(sp *p, tok t, const char *context, const char *expected) {
    if (t.type == PQ_TOK_ERROR) return fail_at(p, p->lexerr_pos, BASE_E_PARSE, "%s", p->lexerr);
    base_buf d;
    base_buf_init(&d, 0);
    tok_desc(p, t, &d);
    fail_at(p, t.pos, BASE_E_PARSE, "unexpected %.*s%s%s%s%s", (int)d.len, d.data ? d.data : "",
            context ? " in " : "", context ? context : "", expected ? ", expected " : "",
            expected ? expected : "");
    base_buf_free(&d);
    return BASE_E_PARSE;
}

/* ---- lexing ---------------------------------------------------------------------------- */

static int32_t rune_at(const sp *p, size_t pos, size_t *ret_w) {
    if (pos >= p->n) {
        *ret_w = 0;
        return -1;
    }
    unsigned char c = (unsigned char)p->in[pos];
    if (c < 0x80) {
        *ret_w = 1;
        return c;
    }
    uint32_t r;
    size_t w = base_utf8_decode((const unsigned char *)p->in + pos, p->n - pos, &r);
    if (w == 0) {
        *ret_w = 1;
        return 0xFFFD;
    }
    *ret_w = w;
    return (int32_t)r;
}

static tok lex_error(sp *p, size_t pos, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static tok lex_error(sp *p, size_t pos, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->lexerr, sizeof p->lexerr, fmt, ap);
    va_end(ap);
    p->lexerr_pos = pos;
    return (tok){PQ_TOK_ERROR, pos, 0};
}

/* lex.go's lexValueSequence (with lexNumber's scanNumber in series mode
 * and lexKeywordOrIdentifier). */
static tok value_lex(sp *p) {
    size_t w;
    size_t start = p->vpos;
    if (p->brace_next) {
        /* lex.go went back to lexStatements after a word followed by '{':
         * that brace is a LEFT_BRACE, and whatever it is, it is an error
         * in the value sequence, so nothing after it is lexed. */
        p->brace_next = 0;
        p->vpos = p->n;
        return (tok){PQ_TOK_LEFT_BRACE, start, 1};
    }
    int32_t r = rune_at(p, start, &w);
    if (r < 0) return (tok){PQ_TOK_EOF, start, 0};
    if (pq__is_space(r)) {
        p->vpos = start + w;
        size_t w2;
        while (pq__is_space(rune_at(p, p->vpos, &w2))) p->vpos += w2;
        return (tok){VT_SPACE, start, w};
    }
    switch (r) {
    case '+': p->vpos = start + 1; return (tok){PQ_TOK_ADD, start, 1};
    case '-': p->vpos = start + 1; return (tok){PQ_TOK_SUB, start, 1};
    case 'x': p->vpos = start + 1; return (tok){VT_TIMES, start, 1};
    case '_': p->vpos = start + 1; return (tok){VT_BLANK, start, 1};
    default: break;
    }
    size_t w2;
    if (pq__is_digit(r) || (r == '.' && pq__is_digit(rune_at(p, start + 1, &w2)))) {
        size_t q = start;
        while (q < p->n && pq__is_digit(p->in[q])) q++;
        if (q < p->n && p->in[q] == '.') {
            q++;
            while (q < p->n && pq__is_digit(p->in[q])) q++;
        }
        if (q < p->n && (p->in[q] == 'e' || p->in[q] == 'E')) {
            q++;
            if (q < p->n && (p->in[q] == '+' || p->in[q] == '-')) q++;
            while (q < p->n && pq__is_digit(p->in[q])) q++;
        }
        int32_t nx = rune_at(p, q, &w2);
        if (nx != 'x' && pq__is_alnum(nx)) {
            base_buf b;
            base_buf_init(&b, 0);
            labels_quote(&b, (base_str){p->in + start, q - start});
            tok t = lex_error(p, start, "bad number syntax: %.*s", (int)b.len, b.data ? b.data : "");
            base_buf_free(&b);
            return t;
        }
        p->vpos = q;
        return (tok){PQ_TOK_NUMBER, start, q - start};
    }
    if (pq__is_alpha(r)) {
        size_t q = start;
        while (q < p->n && (pq__is_alnum((unsigned char)p->in[q]) || p->in[q] == ':')) q++;
        p->vpos = q;
        if (q < p->n && p->in[q] == '{') p->brace_next = 1;
        return (tok){pq__word_token(p->in + start, q - start), start, q - start};
    }
    base_buf b;
    base_buf_init(&b, 0);
    pq__quote_rune(&b, r);
    tok t = lex_error(p, start, "unexpected character in series sequence: %.*s", (int)b.len,
                      b.data ? b.data : "");
    base_buf_free(&b);
    return t;
}

/* The metric part: lex.c's lexer, switching to the value sequence as
 * lex.go does in series mode. */
static tok metric_lex(sp *p, int series) {
    if (p->values) return value_lex(p);
    pq_token t = pq__lex_next(&p->lx);
    if (t.type == PQ_TOK_ERROR) {
        snprintf(p->lexerr, sizeof p->lexerr, "%s", p->lx.err);
        p->lexerr_pos = p->lx.err_pos;
        return (tok){PQ_TOK_ERROR, t.pos, 0};
    }
    if (series) {
        int word = t.len > 0 && (pq__is_alpha((unsigned char)p->in[t.pos]) || p->in[t.pos] == ':') &&
                   !p->lx.brace_open;
        if (t.type == PQ_TOK_RIGHT_BRACE || (word && (p->lx.pos >= p->n || p->in[p->lx.pos] != '{'))) {
            p->values = 1;
            p->vpos = p->lx.pos;
        }
    }
    return (tok){t.type, t.pos, t.len};
}

/* ---- numbers ------------------------------------------------------------------------------ */

/* Go's strconv.ParseInt(s, 0, 64) for the digit strings the lexer makes
 * (no sign): 0 and *ret, or -1 (syntax or range). */
static int go_parse_int0(const char *s, size_t n, int64_t *ret) {
    if (n == 0) return -1;
    unsigned base = 10;
    size_t i = 0;
    if (n > 1 && s[0] == '0') {
        base = 8;
        i = 1;
    }
    uint64_t v = 0;
    for (; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return -1;
        unsigned d = (unsigned)(s[i] - '0');
        if (d >= base) return -1;
        if (v > (UINT64_C(1) << 63) / base) return -1;
        v = v * base + d;
        if (v > (uint64_t)INT64_MAX) return -1;
    }
    *ret = (int64_t)v;
    return 0;
}

/* p.number(): ParseInt with base 0, else ParseFloat. */
static int number(sp *p, tok t, double *ret) {
    const char *s = p->in + t.pos;
    int64_t iv;
    if (go_parse_int0(s, t.len, &iv) == 0) {
        *ret = (double)iv;
        return 0;
    }
    double d;
    int rc = base_parse_double(s, t.len, &d);
    if (rc == 0) {
        *ret = d;
        return 0;
    }
    if (rc == BASE_E_NOMEM) return p->rc = BASE_E_NOMEM;
    base_buf b;
    base_buf_init(&b, 0);
    labels_quote(&b, (base_str){s, t.len});
    fail_at(p, t.pos, BASE_E_PARSE, "error parsing number: strconv.ParseFloat: parsing %.*s: %s", (int)b.len,
            b.data ? b.data : "", rc == BASE_E_RANGE ? "value out of range" : "invalid syntax");
    base_buf_free(&b);
    return BASE_E_PARSE;
}

/* The uint rule: strconv.ParseUint(s, 10, 64). */
static int uint_rule(sp *p, tok t, uint64_t *ret) {
    const char *s = p->in + t.pos;
    uint64_t v = 0;
    const char *why = NULL;
    for (size_t i = 0; i < t.len && !why; i++) {
        if (s[i] < '0' || s[i] > '9') why = "invalid syntax";
    }
    for (size_t i = 0; i < t.len && !why; i++) {
        unsigned d = (unsigned)(s[i] - '0');
        if (v > (UINT64_MAX - d) / 10) {
            why = "value out of range";
            break;
        }
        v = v * 10 + d;
    }
    if (t.len == 0) why = "invalid syntax";
    if (why) {
        base_buf b;
        base_buf_init(&b, 0);
        labels_quote(&b, (base_str){s, t.len});
        fail_at(p, t.pos, BASE_E_PARSE,
                "invalid repetition in series values: strconv.ParseUint: parsing %.*s: %s", (int)b.len,
                b.data ? b.data : "", why);
        base_buf_free(&b);
        return BASE_E_PARSE;
    }
    *ret = v;
    return 0;
}

/* ---- results -------------------------------------------------------------------------------- */

static int push_value(sp *p, tok at, double v, int omitted) {
    if (p->nseq >= PROMQL_SERIES_DESC_MAX_VALUES)
        return fail_at(p, at.pos, BASE_E_LIMIT, "too many values in series description (more than %zu)",
                       PROMQL_SERIES_DESC_MAX_VALUES);
    if (p->nseq == p->capseq) {
        size_t nc = p->capseq ? p->capseq * 2 : 16;
        promql_seq_value *na = realloc(p->seq, nc * sizeof *na);
        if (!na) return p->rc = BASE_E_NOMEM;
        p->seq = na;
        p->capseq = nc;
    }
    p->seq[p->nseq++] = (promql_seq_value){v, omitted};
    return 0;
}

/* Room for `more` values, checked before a repetition is expanded. */
static int want_values(sp *p, tok at, uint64_t more) {
    if (more > PROMQL_SERIES_DESC_MAX_VALUES - p->nseq)
        return fail_at(p, at.pos, BASE_E_LIMIT, "too many values in series description (more than %zu)",
                       PROMQL_SERIES_DESC_MAX_VALUES);
    return 0;
}

static int push_pair(sp *p, const char *name, size_t nlen, const char *val, size_t vlen) {
    if (p->npairs == p->cappairs) {
        size_t nc = p->cappairs ? p->cappairs * 2 : 8;
        char **nn = realloc(p->names, nc * sizeof *nn);
        if (!nn) return p->rc = BASE_E_NOMEM;
        p->names = nn;
        char **nv = realloc(p->vals, nc * sizeof *nv);
        if (!nv) return p->rc = BASE_E_NOMEM;
        p->vals = nv;
        p->cappairs = nc;
    }
    char *a = strndup(name, nlen), *b = malloc(vlen + 1);
    if (!a || !b) {
        free(a);
        free(b);
        return p->rc = BASE_E_NOMEM;
    }
    memcpy(b, val, vlen);
    b[vlen] = 0;
    p->names[p->npairs] = a;
    p->vals[p->npairs] = b;
    p->npairs++;
    return 0;
}

/* ---- the grammar ------------------------------------------------------------------------------ */

/* metric_identifier: AVG | BOTTOMK | BY | COUNT | COUNT_VALUES | GROUP |
 * IDENTIFIER | LAND | LOR | LUNLESS | MAX | METRIC_IDENTIFIER | MIN |
 * OFFSET | QUANTILE | STDDEV | STDVAR | SUM | TOPK | WITHOUT | START | END */
static int is_metric_identifier(int t) {
    switch (t) {
    case PQ_TOK_IDENTIFIER:
    case PQ_TOK_METRIC_IDENTIFIER:
    case PQ_TOK_BY:
    case PQ_TOK_WITHOUT:
    case PQ_TOK_LAND:
    case PQ_TOK_LOR:
    case PQ_TOK_LUNLESS:
    case PQ_TOK_OFFSET:
    case PQ_TOK_START:
    case PQ_TOK_END: return 1;
    default: return t > PQ_TOK_AGG_START && t < PQ_TOK_AGG_END;
    }
}

/* label_set after its LEFT_BRACE: LEFT_BRACE label_set_list [COMMA]
 * RIGHT_BRACE | LEFT_BRACE RIGHT_BRACE. */
static int label_set(sp *p, int series) {
    tok t = metric_lex(p, series);
    if (t.type == PQ_TOK_RIGHT_BRACE) return 0;
    for (;;) {
        if (t.type != PQ_TOK_IDENTIFIER) return unexpected(p, t, "label set", "identifier or \"}\"");
        tok name = t;
        t = metric_lex(p, series);
        if (t.type != PQ_TOK_EQL) return unexpected(p, t, "label set", "\"=\"");
        t = metric_lex(p, series);
        if (t.type != PQ_TOK_STRING) return unexpected(p, t, "label set", "string");
        base_buf v;
        base_buf_init(&v, 0);
        int rc = pq__unquote(p->in + t.pos, t.len, &v);
        if (rc == 0 && base_buf_err(&v)) rc = base_buf_err(&v);
        if (rc == 0) rc = push_pair(p, p->in + name.pos, name.len, v.data ? v.data : "", v.len);
        base_buf_free(&v);
        if (rc == BASE_E_PARSE) return fail_at(p, t.pos, BASE_E_PARSE, "invalid string"); /* not reached */
        if (rc) return p->rc = rc;
        t = metric_lex(p, series);
        if (t.type == PQ_TOK_RIGHT_BRACE) return 0;
        if (t.type != PQ_TOK_COMMA) return unexpected(p, t, "label set", "\",\" or \"}\"");
        t = metric_lex(p, series);
        if (t.type == PQ_TOK_RIGHT_BRACE) return 0;
    }
}

/* metric: metric_identifier label_set | label_set (label_set may be
 * empty). *ret_la is the lookahead after the metric when one was read
 * (type -1 when not). */
static int metric(sp *p, int series, tok *ret_la) {
    ret_la->type = -1;
    tok t = metric_lex(p, series);
    if (is_metric_identifier(t.type)) {
        if (!(p->metric_name = strndup(p->in + t.pos, t.len))) return p->rc = BASE_E_NOMEM;
        if (p->values) return 0; /* not followed by '{' */
        t = metric_lex(p, series);
    }
    if (t.type == PQ_TOK_LEFT_BRACE) return label_set(p, series);
    *ret_la = t; /* label_set is empty: the token belongs to what follows */
    return 0;
}

/* series_values, from the state after `metric` (B) or after a SPACE (A). */
static int series_values(sp *p, tok la) {
    tok t = la.type == -1 ? metric_lex(p, 1) : la;
    for (int first = 1;; first = 0) {
        /* state B: series_values . SPACE series_item, or the end; right
         * after the metric, where `series_values: error` can still be
         * shifted, a wrong token is "in series values" */
        if (t.type == PQ_TOK_ERROR) return unexpected(p, t, NULL, NULL);
        if (t.type == PQ_TOK_EOF) return 0;
        if (t.type != VT_SPACE) return unexpected(p, t, first ? "series values" : NULL, NULL);
        /* state A: after SPACE */
        t = metric_lex(p, 1);
        int rc;
        if (t.type == VT_BLANK) {
            tok at = t;
            t = metric_lex(p, 1);
            if (t.type != VT_TIMES) {
                if ((rc = push_value(p, at, 0, 1))) return rc;
                continue; /* t is the lookahead of state B */
            }
            t = metric_lex(p, 1);
            if (t.type != PQ_TOK_NUMBER) return unexpected(p, t, "series values", NULL);
            uint64_t k;
            if ((rc = uint_rule(p, t, &k)) || (rc = want_values(p, t, k))) return rc;
            for (uint64_t i = 0; i < k; i++)
                if ((rc = push_value(p, t, 0, 1))) return rc;
            t = metric_lex(p, 1);
            continue;
        }
        double v;
        tok at = t;
        if (t.type == PQ_TOK_IDENTIFIER) {
            if (t.len != 5 || memcmp(p->in + t.pos, "stale", 5) != 0)
                return unexpected(p, t, "series values", "number or \"stale\"");
            v = base_stale_nan();
        } else if (t.type == PQ_TOK_NUMBER) {
            if ((rc = number(p, t, &v))) return rc;
        } else if (t.type == PQ_TOK_ADD || t.type == PQ_TOK_SUB) {
            int neg = t.type == PQ_TOK_SUB;
            t = metric_lex(p, 1);
            if (t.type != PQ_TOK_NUMBER) return unexpected(p, t, "series values", NULL);
            if ((rc = number(p, t, &v))) return rc;
            if (neg) v = -v;
        } else {
            continue; /* `series_values SPACE` reduces; t is B's lookahead */
        }
        /* after series_value */
        t = metric_lex(p, 1);
        if (t.type == VT_TIMES) {
            t = metric_lex(p, 1);
            if (t.type != PQ_TOK_NUMBER) return unexpected(p, t, "series values", NULL);
            uint64_t k;
            if ((rc = uint_rule(p, t, &k)) || (rc = want_values(p, t, k == UINT64_MAX ? k : k + 1)))
                return rc;
            for (uint64_t i = 0; i <= k; i++)
                if ((rc = push_value(p, t, v, 0))) return rc;
            t = metric_lex(p, 1);
            continue;
        }
        if (t.type == PQ_TOK_ADD || t.type == PQ_TOK_SUB) {
            int neg = t.type == PQ_TOK_SUB;
            t = metric_lex(p, 1);
            if (t.type != PQ_TOK_NUMBER) return unexpected(p, t, "series values", NULL);
            double d;
            if ((rc = number(p, t, &d))) return rc;
            if (neg) d = -d;
            t = metric_lex(p, 1);
            if (t.type != VT_TIMES) return unexpected(p, t, "series values", NULL);
            t = metric_lex(p, 1);
            if (t.type != PQ_TOK_NUMBER) return unexpected(p, t, "series values", NULL);
            uint64_t k;
            if ((rc = uint_rule(p, t, &k)) || (rc = want_values(p, t, k == UINT64_MAX ? k : k + 1)))
                return rc;
            for (uint64_t i = 0; i <= k; i++) {
                if ((rc = push_value(p, t, v, 0))) return rc;
                v += d;
            }
            t = metric_lex(p, 1);
            continue;
        }
        if ((rc = push_value(p, at, v, 0))) return rc;
        /* t is the lookahead of state B */
    }
}

static void sp_init(sp *p, const char *s, size_t n, int line_offset, base_buf *msg) {
    memset(p, 0, sizeof *p);
    p->in = s;
    p->n = n;
    p->line_offset = line_offset;
    p->msg = msg;
    pq__lex_init(&p->lx, s, n);
}

static void sp_free(sp *p) {
    for (size_t i = 0; i < p->npairs; i++) {
        free(p->names[i]);
        free(p->vals[i]);
    }
    free(p->names);
    free(p->vals);
    free(p->metric_name);
    free(p->seq);
}

static int pair_cmp(const void *a, const void *b) {
    const char *const *x = a, *const *y = b;
    return strcmp(x[0], y[0]);
}

/* The parsed pairs as labels.New sorts them, the metric name set over a
 * __name__ of the braces (the grammar's NewBuilder(...).Set); moved out
 * of p. */
static int take_pairs(sp *p, promql_metric_desc *ret) {
    size_t k = p->npairs;
    char **pairs = malloc((k + 1) * 2 * sizeof *pairs);
    if (!pairs) return BASE_E_NOMEM;
    size_t m = 0;
    for (size_t i = 0; i < k; i++) {
        if (p->metric_name && strcmp(p->names[i], LABELS_METRIC_NAME) == 0) continue;
        pairs[2 * m] = p->names[i];
        pairs[2 * m + 1] = p->vals[i];
        m++;
    }
    char *nm = NULL;
    if (p->metric_name) {
        if (!(nm = strdup(LABELS_METRIC_NAME))) {
            free(pairs);
            return BASE_E_NOMEM;
        }
        pairs[2 * m] = nm;
        pairs[2 * m + 1] = p->metric_name;
        m++;
    }
    qsort(pairs, m, 2 * sizeof *pairs, pair_cmp);
    ret->names = malloc((m ? m : 1) * sizeof *ret->names);
    ret->values = malloc((m ? m : 1) * sizeof *ret->values);
    if (!ret->names || !ret->values) {
        free(ret->names);
        free(ret->values);
        ret->names = ret->values = NULL;
        free(nm);
        free(pairs);
        return BASE_E_NOMEM;
    }
    for (size_t i = 0; i < m; i++) {
        ret->names[i] = pairs[2 * i];
        ret->values[i] = pairs[2 * i + 1];
    }
    ret->n = m;
    free(pairs);
    /* what moved is no longer p's; the replaced __name__ pairs are freed */
    for (size_t i = 0; i < k; i++)
        if (p->metric_name && strcmp(p->names[i], LABELS_METRIC_NAME) == 0) {
            free(p->names[i]);
            free(p->vals[i]);
        }
    p->npairs = 0;
    p->metric_name = NULL;
    return 0;
}

int promql_parse_series_desc(const char *s, size_t n, int line_offset, promql_series_desc *ret,
                             base_buf *msg) {
    if (n > PQ_MAX_QUERY) {
        base_buf_printf(msg, "series description longer than %u bytes", PQ_MAX_QUERY);
        return BASE_E_LIMIT;
    }
    sp p;
    sp_init(&p, s, n, line_offset, msg);
    tok la;
    int rc = metric(&p, 1, &la);
    if (rc == 0) rc = series_values(&p, la);
    promql_metric_desc md;
    memset(&md, 0, sizeof md);
    if (rc == 0) rc = take_pairs(&p, &md);
    labels_set *ls = NULL;
    if (rc == 0) {
        labels_builder b;
        labels_builder_init(&b);
        for (size_t i = 0; rc == 0 && i < md.n; i++)
            rc = labels_builder_add(&b, base_str_c(md.names[i]), base_str_c(md.values[i]));
        char err[256] = "";
        if (rc == 0) rc = labels_builder_finish(&b, 0, &ls, err, sizeof err);
        labels_builder_free(&b);
        if (rc == BASE_E_INVAL) {
            rc = 0; /* a name twice: no set */
            ls = NULL;
        } else if (rc == BASE_E_LIMIT) {
            base_buf_printf(msg, "%d:1: parse error: %s", line_offset + 1, err);
        }
    }
    if (rc == 0) {
        ret->metric = md;
        ret->ls = ls;
        ret->vals = p.seq;
        ret->n = p.nseq;
        p.seq = NULL;
    } else {
        promql_metric_desc_free(&md);
    }
    sp_free(&p);
    return rc;
}

void promql_series_desc_free(promql_series_desc *d) {
    if (!d) return;
    promql_metric_desc_free(&d->metric);
    labels_unref(d->ls);
    free(d->vals);
    memset(d, 0, sizeof *d);
}

int promql_parse_metric(const char *s, size_t n, promql_metric_desc *ret, base_buf *msg) {
    if (n > PQ_MAX_QUERY) {
        base_buf_printf(msg, "metric longer than %u bytes", PQ_MAX_QUERY);
        return BASE_E_LIMIT;
    }
    sp p;
    sp_init(&p, s, n, 0, msg);
    tok la;
    int rc = metric(&p, 0, &la);
    if (rc == 0) {
        tok t = la.type == -1 ? metric_lex(&p, 0) : la;
        if (t.type != PQ_TOK_EOF) rc = unexpected(&p, t, NULL, NULL);
    }
    promql_metric_desc md;
    memset(&md, 0, sizeof md);
    if (rc == 0) rc = take_pairs(&p, &md);
    if (rc == 0) *ret = md;
    sp_free(&p);
    return rc;
}

void promql_metric_desc_free(promql_metric_desc *m) {
    if (!m) return;
    for (size_t i = 0; i < m->n; i++) {
        free(m->names[i]);
        free(m->values[i]);
    }
    free(m->names);
    free(m->values);
    memset(m, 0, sizeof *m);
}
