/* template_exec.c -- executes a parsed template as Go 1.19's
 * text/template/exec.go does with Prometheus 2.42's function map and
 * Option("missingkey=zero").
 *
 * Design: a tree walk over tt_node with a variable stack ($ first, then
 * declarations; marks pop them at the end of if/with/range bodies as Go
 * does). Values are tt_val (template_int.h): the kinds a rule template
 * can meet, each with Go's type name for error texts. Functions are a
 * table with Go's signatures (parameter kinds, variadic), so that arity
 * and type errors read as Go's ("wrong number of args for humanize: want
 * 1 got 2", "wrong type for value; expected string; got float64").
 * Errors: the first one stops execution; its text is Go's
 * "template: NAME:LINE:COL: executing \"NAME\" at <NODE>: MSG".
 * Limits: output bytes, steps, nesting and the execution arena.
 * Ownership: everything allocated here is freed before rules_tmpl_exec
 * returns (query label sets are unreferenced there).
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/num.h"
#include "base/utf8.h"
#include "rules/template_int.h"

#define TT_ARENA_LIMIT ((size_t)64 << 20)
#define TT_MAX_VARS    10000
#define TT_OK          0
#define TT_ERR         (-1)
#define TT_BREAK       1
#define TT_CONTINUE    2

typedef struct tt_var {
    base_str name;
    tt_val v;
} tt_var;

struct tt_state {
    const rules_tmpl *t;
    const rules_tmpl_data *d;
    base_buf *out;
    size_t out_start;
    char *err;
    size_t errlen;
    base_arena arena;
    const tt_node *node;
    tt_var *vars;
    size_t nvars, capvars;
    labels_set **owned;
    size_t nowned, capowned;
    uint64_t steps;
    int depth;
};

static const tt_val v_invalid = {.k = TK_INVALID};

/* Node printing (Go's Node.String()) -------------------------------- */

static void node_string(base_buf *b, const tt_node *n);

static void pipe_string(base_buf *b, const tt_node *n) {
    for (size_t k = 0; k < n->ndecl; k++) {
        if (k) base_buf_puts(b, ", ");
        node_string(b, n->decl[k]);
    }
    if (n->ndecl) base_buf_puts(b, n->is_assign ? " = " : " := ");
    for (size_t k = 0; k < n->nkids; k++) {
        if (k) base_buf_puts(b, " | ");
        node_string(b, n->kids[k]);
    }
}

static void node_string(base_buf *b, const tt_node *n) {
    switch (n->type) {
    case TN_CMD:
        for (size_t k = 0; k < n->nkids; k++) {
            if (k) base_buf_putc(b, ' ');
            if (n->kids[k]->type == TN_PIPE) {
                base_buf_putc(b, '(');
                pipe_string(b, n->kids[k]);
                base_buf_putc(b, ')');
            } else
                node_string(b, n->kids[k]);
        }
        break;
    case TN_PIPE: pipe_string(b, n); break;
    case TN_FIELD:
    case TN_VAR:
    case TN_IDENT: base_buf_append(b, n->s, n->n); break;
    case TN_CHAIN:
        if (n->sub->type == TN_PIPE) {
            base_buf_putc(b, '(');
            node_string(b, n->sub);
            base_buf_putc(b, ')');
        } else
            node_string(b, n->sub);
        for (size_t k = 0; k < n->nids; k++) {
            base_buf_putc(b, '.');
            base_buf_append(b, n->ids[k].p, n->ids[k].n);
        }
        break;
    case TN_DOT: base_buf_putc(b, '.'); break;
    case TN_NIL: base_buf_puts(b, "nil"); break;
    case TN_BOOL: base_buf_puts(b, n->b ? "true" : "false"); break;
    case TN_NUM:
    case TN_STR: base_buf_append(b, n->orig, n->orig_n); break;
    case TN_ACTION:
        base_buf_puts(b, "{{");
        pipe_string(b, n->sub);
        base_buf_puts(b, "}}");
        break;
    case TN_IF:
    case TN_RANGE:
    case TN_WITH:
        base_buf_puts(b, n->type == TN_IF ? "{{if " : n->type == TN_RANGE ? "{{range " : "{{with ");
        pipe_string(b, n->sub);
        base_buf_puts(b, "}}");
        node_string(b, n->list);
        if (n->elist) {
            base_buf_puts(b, "{{else}}");
            node_string(b, n->elist);
        }
        base_buf_puts(b, "{{end}}");
        break;
    case TN_LIST:
        for (size_t k = 0; k < n->nkids; k++) node_string(b, n->kids[k]);
        break;
    case TN_TEXT: base_buf_append(b, n->s, n->n); break;
    case TN_BREAK: base_buf_puts(b, "{{break}}"); break;
    case TN_CONTINUE: base_buf_puts(b, "{{continue}}"); break;
    default: break;
    }
}

/* Errors ------------------------------------------------------------ */

static int st_errf(tt_state *st, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int st_errf(tt_state *st, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (!st->node) {
        base_errf(st->err, st->errlen, BASE_E_INVAL, "template: %s: %s", st->t->name, msg);
        return TT_ERR;
    }
    size_t pos = st->node->pos;
    int line = 1;
    size_t ls = 0;
    for (size_t k = 0; k < pos && k < st->t->len; k++)
        if (st->t->text[k] == '\n') line++, ls = k + 1;
    base_buf ctx = BASE_BUF_INIT;
    node_string(&ctx, st->node);
    base_errf(st->err, st->errlen, BASE_E_INVAL, "template: %s:%d:%zu: executing \"%s\" at <%s>: %s",
              st->t->name, line, pos - ls, st->t->name, ctx.data ? ctx.data : "", msg);
    base_buf_free(&ctx);
    return TT_ERR;
}

static int nomem(tt_state *st) {
    base_errf(st->err, st->errlen, BASE_E_NOMEM, "template: %s: out of memory", st->t->name);
    return TT_ERR;
}

static void *st_alloc(tt_state *st, size_t n) {
    return base_arena_alloc(&st->arena, n ? n : 1);
}

static int own_labels(tt_state *st, labels_set *ls) {
    if (st->nowned == st->capowned) {
        size_t nc = st->capowned ? st->capowned * 2 : 16;
        labels_set **no = realloc(st->owned, nc * sizeof *no);
        if (!no) return -1;
        st->owned = no;
        st->capowned = nc;
    }
    st->owned[st->nowned++] = ls;
    return 0;
}

/* Values ------------------------------------------------------------ */

static tt_val v_str(const char *p, size_t n) {
    tt_val v = {.k = TK_STRING};
    v.s = (base_str){p, n};
    return v;
}
static tt_val v_float(double f) {
    tt_val v = {.k = TK_FLOAT};
    v.f = f;
    return v;
}
static tt_val v_int(int64_t i) {
    tt_val v = {.k = TK_INT};
    v.i = i;
    return v;
}
static tt_val v_bool(int b) {
    tt_val v = {.k = TK_BOOL};
    v.b = b;
    return v;
}

/* Copies a buffer's contents into the arena as a string value. */
static int buf_to_val(tt_state *st, base_buf *b, tt_kind k, tt_val *ret) {
    if (base_buf_err(b)) {
        base_buf_free(b);
        return nomem(st);
    }
    char *s = base_arena_strndup(&st->arena, b->data ? b->data : "", b->len);
    size_t n = b->len;
    base_buf_free(b);
    if (!s) return nomem(st);
    *ret = v_str(s, n);
    ret->k = k;
    return TT_OK;
}

static int is_true(const tt_val *v, int *ok) {
    *ok = 1;
    switch (v->k) {
    case TK_INVALID: /* "a form of nil": false, and no error */
    case TK_NIL: return 0;
    case TK_BOOL: return v->b;
    case TK_INT: return v->i != 0;
    case TK_FLOAT: return v->f != 0;
    case TK_STRING:
    case TK_HTML: return v->s.n > 0;
    case TK_MAP: return labels_len(v->ls) > 0;
    case TK_ARGS: return v->args->n > 0;
    case TK_DATA:
    case TK_TIME: return 1;
    case TK_SAMPLE: return v->smp != NULL;
    case TK_VEC: return v->vec && v->vec->n > 0;
    }
    return 0;
}

/* Variables --------------------------------------------------------- */

static int push_var(tt_state *st, base_str name, tt_val v) {
    if (st->nvars == st->capvars) {
        if (st->capvars >= TT_MAX_VARS) return st_errf(st, "too many variables");
        size_t nc = st->capvars ? st->capvars * 2 : 16;
        tt_var *nv = realloc(st->vars, nc * sizeof *nv);
        if (!nv) return nomem(st);
        st->vars = nv;
        st->capvars = nc;
    }
    st->vars[st->nvars++] = (tt_var){name, v};
    return TT_OK;
}

static int set_var(tt_state *st, base_str name, tt_val v) {
    for (size_t k = st->nvars; k-- > 0;)
        if (base_str_eq(st->vars[k].name, name)) {
            st->vars[k].v = v;
            return TT_OK;
        }
    return st_errf(st, "undefined variable: %.*s", (int)name.n, name.p);
}

/* Functions --------------------------------------------------------- */

typedef enum { P_ANY, P_RV, P_STR, P_FLOAT, P_SAMPLE, P_VEC } ptype;

static const char *ptype_name(ptype p) {
    switch (p) {
    case P_ANY: return "interface {}";
    case P_RV: return "reflect.Value";
    case P_STR: return "string";
    case P_FLOAT: return "float64";
    case P_SAMPLE: return "*template.sample";
    case P_VEC: return "template.queryResult";
    }
    return "?";
}

/* An implementation: 0 and *ret, or -1 with the error's text in msg
 * ("error calling NAME: " is added), or TT_ERR when it set the error. */
typedef int (*tt_fn)(tt_state *st, tt_val *a, size_t n, tt_val *ret, base_buf *msg);

typedef struct tt_func {
    const char *name;
    tt_fn fn;
    int nparams; /* including the variadic one */
    int variadic;
    ptype p[3];
} tt_func;

/* builtins (template_exec.c) */
static int f_not(tt_state *st, tt_val *a, size_t n, tt_val *ret, base_buf *msg);
static int f_len(tt_state *st, tt_val *a, size_t n, tt_val *ret, base_buf *msg);
static int f_index(tt_state *st, tt_val *a, size_t n, tt_val *ret, base_buf *msg);
static int f_slice(tt_state *st, tt_val *a, size_t n, tt_val *ret, base_buf *msg);
static int f_call(tt_state *st, tt_val *a, size_t n, tt_val *ret, base_buf *msg);
static int f_html(tt_state *st, tt_val *a, size_t n, tt_val *ret, base_buf *msg);
static int f_js(tt_state *st, tt_val *a, size_t n, tt_val *ret, base_buf *msg);
static int f_urlquery(tt_state *st, tt_val *a, size_t n, tt_val *ret, base_buf *msg);
static int f_print(tt_state *st, tt_val *a, size_t n, tt_val *ret, base_buf *msg);
static int f_println(tt_state *st, tt_val *a, size_t n, tt_val *ret, base_buf *msg);
static int f_printf(tt_state *st, tt_val *a, size_t n, tt_val *ret, base_buf *msg);
static int f_eq(tt_state *st, tt_val *a, size_t n, tt_val *ret, base_buf *msg);
static int f_ne(tt_state *st, tt_val *a, size_t n, tt_val *ret, base_buf *msg);
static int f_lt(tt_state *st, tt_val *a, size_t n, tt_val *ret, base_buf *msg);
static int f_le(tt_state *st, tt_val *a, size_t n, tt_val *ret, base_buf *msg);
static int f_gt(tt_state *st, tt_val *a, size_t n, tt_val *ret, base_buf *msg);
static int f_ge(tt_state *st, tt_val *a, size_t n, tt_val *ret, base_buf *msg);
/* Prometheus's */
static int f_query(tt_state *st, tt_val *a, size_t n, tt_val *ret, base_buf *msg);
static int f_first(tt_state *st, tt_val *a, size_t n, tt_val *ret, base_buf *msg);
static int f_label(tt_state *st, tt_val *a, size_t n, tt_val *ret, base_buf *msg);
static int f_value(tt_state *st, tt_val *a, size_t n, tt_val *ret, base_buf *msg);
static int f_strvalue(tt_state *st, tt_val *a, size_t n, tt_val *ret, base_buf *msg);
static int f_args(tt_state *st, tt_val *a, size_t n, tt_val *ret, base_buf *msg);
static int f_rereplaceall(tt_state *st, tt_val *a, size_t n, tt_val *ret, base_buf *msg);
static int f_safehtml(tt_state *st, tt_val *a, size_t n, tt_val *ret, base_buf *msg);
static int f_match(tt_state *st, tt_val *a, size_t n, tt_val *ret, base_buf *msg);
static int f_title(tt_state *st, tt_val *a, size_t n, tt_val *ret, base_buf *msg);
static int f_toupper(tt_state *st, tt_val *a, size_t n, tt_val *ret, base_buf *msg);
static int f_tolower(tt_state *st, tt_val *a, size_t n, tt_val *ret, base_buf *msg);
static int f_graphlink(tt_state *st, tt_val *a, size_t n, tt_val *ret, base_buf *msg);
static int f_tablelink(tt_state *st, tt_val *a, size_t n, tt_val *ret, base_buf *msg);
static int f_sortbylabel(tt_state *st, tt_val *a, size_t n, tt_val *ret, base_buf *msg);
static int f_humanize(tt_state *st, tt_val *a, size_t n, tt_val *ret, base_buf *msg);
static int f_humanize1024(tt_state *st, tt_val *a, size_t n, tt_val *ret, base_buf *msg);
static int f_humanizeduration(tt_state *st, tt_val *a, size_t n, tt_val *ret, base_buf *msg);
static int f_humanizepercentage(tt_state *st, tt_val *a, size_t n, tt_val *ret, base_buf *msg);
static int f_humanizetimestamp(tt_state *st, tt_val *a, size_t n, tt_val *ret, base_buf *msg);
static int f_pathprefix(tt_state *st, tt_val *a, size_t n, tt_val *ret, base_buf *msg);
static int f_externalurl(tt_state *st, tt_val *a, size_t n, tt_val *ret, base_buf *msg);
static int f_parseduration(tt_state *st, tt_val *a, size_t n, tt_val *ret, base_buf *msg);
static int f_totime(tt_state *st, tt_val *a, size_t n, tt_val *ret, base_buf *msg);
static int f_stripport(tt_state *st, tt_val *a, size_t n, tt_val *ret, base_buf *msg);
static int f_stripdomain(tt_state *st, tt_val *a, size_t n, tt_val *ret, base_buf *msg);

static const tt_func funcs[] = {
    {"and", NULL, 2, 1, {P_RV, P_RV}},
    {"or", NULL, 2, 1, {P_RV, P_RV}},
    {"not", f_not, 1, 0, {P_RV}},
    {"len", f_len, 1, 0, {P_RV}},
    {"index", f_index, 2, 1, {P_RV, P_RV}},
    {"slice", f_slice, 2, 1, {P_RV, P_RV}},
    {"call", f_call, 2, 1, {P_RV, P_RV}},
    {"html", f_html, 1, 1, {P_ANY}},
    {"js", f_js, 1, 1, {P_ANY}},
    {"urlquery", f_urlquery, 1, 1, {P_ANY}},
    {"print", f_print, 1, 1, {P_ANY}},
    {"println", f_println, 1, 1, {P_ANY}},
    {"printf", f_printf, 2, 1, {P_STR, P_ANY}},
    {"eq", f_eq, 2, 1, {P_RV, P_RV}},
    {"ne", f_ne, 2, 0, {P_RV, P_RV}},
    {"lt", f_lt, 2, 0, {P_RV, P_RV}},
    {"le", f_le, 2, 0, {P_RV, P_RV}},
    {"gt", f_gt, 2, 0, {P_RV, P_RV}},
    {"ge", f_ge, 2, 0, {P_RV, P_RV}},
    {"query", f_query, 1, 0, {P_STR}},
    {"first", f_first, 1, 0, {P_VEC}},
    {"label", f_label, 2, 0, {P_STR, P_SAMPLE}},
    {"value", f_value, 1, 0, {P_SAMPLE}},
    {"strvalue", f_strvalue, 1, 0, {P_SAMPLE}},
    {"args", f_args, 1, 1, {P_ANY}},
    {"reReplaceAll", f_rereplaceall, 3, 0, {P_STR, P_STR, P_STR}},
    {"safeHtml", f_safehtml, 1, 0, {P_STR}},
    {"match", f_match, 2, 0, {P_STR, P_STR}},
    {"title", f_title, 1, 0, {P_STR}},
    {"toUpper", f_toupper, 1, 0, {P_STR}},
    {"toLower", f_tolower, 1, 0, {P_STR}},
    {"graphLink", f_graphlink, 1, 0, {P_STR}},
    {"tableLink", f_tablelink, 1, 0, {P_STR}},
    {"sortByLabel", f_sortbylabel, 2, 0, {P_STR, P_VEC}},
    {"humanize", f_humanize, 1, 0, {P_ANY}},
    {"humanize1024", f_humanize1024, 1, 0, {P_ANY}},
    {"humanizeDuration", f_humanizeduration, 1, 0, {P_ANY}},
    {"humanizePercentage", f_humanizepercentage, 1, 0, {P_ANY}},
    {"humanizeTimestamp", f_humanizetimestamp, 1, 0, {P_ANY}},
    {"pathPrefix", f_pathprefix, 0, 0, {P_ANY}},
    {"externalURL", f_externalurl, 0, 0, {P_ANY}},
    {"parseDuration", f_parseduration, 1, 0, {P_STR}},
    {"toTime", f_totime, 1, 0, {P_ANY}},
    {"stripPort", f_stripport, 1, 0, {P_STR}},
    {"stripDomain", f_stripdomain, 1, 0, {P_STR}},
};

static const tt_func *find_func(base_str name) {
    for (size_t k = 0; k < sizeof funcs / sizeof funcs[0]; k++)
        if (base_str_eqc(name, funcs[k].name)) return &funcs[k];
    return NULL;
}

/* Evaluation -------------------------------------------------------- */

static int eval_pipeline(tt_state *st, const tt_val *dot, const tt_node *pipe, tt_val *ret);
static int eval_command(tt_state *st, const tt_val *dot, const tt_node *cmd, const tt_val *final,
                        tt_val *ret);

static int contains_any(const char *s, size_t n, const char *set) {
    for (size_t k = 0; k < n; k++)
        if (strchr(set, s[k])) return 1;
    return 0;
}

static int ideal_constant(tt_state *st, const tt_node *n, tt_val *ret) {
    st->node = n;
    const char *s = n->orig;
    size_t len = n->orig_n;
    size_t o = (len && (s[0] == '+' || s[0] == '-')) ? 1 : 0;
    int hexint =
        len > o + 1 && s[o] == '0' && (s[o + 1] == 'x' || s[o + 1] == 'X') && !contains_any(s, len, "pP");
    int rune = len && s[0] == '\'';
    if (n->is_float && !hexint && !rune && contains_any(s, len, ".eEpP")) {
        *ret = v_float(n->f);
        return TT_OK;
    }
    if (n->is_int) {
        *ret = v_int(n->i);
        return TT_OK;
    }
    return st_errf(st, "%.*s overflows int", (int)len, s);
}

static int validate(tt_state *st, const tt_val *v, ptype t, tt_val *ret) {
    if (v->k == TK_INVALID) {
        switch (t) {
        case P_ANY: *ret = (tt_val){.k = TK_NIL}; return TT_OK;
        case P_RV: *ret = v_invalid; return TT_OK;
        case P_SAMPLE: *ret = (tt_val){.k = TK_SAMPLE}; return TT_OK;
        case P_VEC: *ret = (tt_val){.k = TK_VEC}; return TT_OK;
        default: return st_errf(st, "invalid value; expected %s", ptype_name(t));
        }
    }
    int ok = 0;
    switch (t) {
    case P_ANY:
    case P_RV: ok = 1; break;
    case P_STR: ok = v->k == TK_STRING; break;
    case P_FLOAT: ok = v->k == TK_FLOAT; break;
    case P_SAMPLE: ok = v->k == TK_SAMPLE; break;
    case P_VEC: ok = v->k == TK_VEC; break;
    }
    if (!ok)
        return st_errf(st, "wrong type for value; expected %s; got %s", ptype_name(t),
                       rules__tt_type_name(v));
    *ret = *v;
    return TT_OK;
}

static int eval_field_node(tt_state *st, const tt_val *dot, const tt_node *field, const tt_node *const *args,
                           size_t nargs, const tt_val *final, tt_val *ret);
static int eval_variable_node(tt_state *st, const tt_val *dot, const tt_node *var, const tt_node *const *args,
                              size_t nargs, const tt_val *final, tt_val *ret);
static int eval_chain_node(tt_state *st, const tt_val *dot, const tt_node *chain, const tt_node *const *args,
                           size_t nargs, const tt_val *final, tt_val *ret);
static int eval_function(tt_state *st, const tt_val *dot, const tt_node *ident, const tt_node *cmd,
                         const tt_node *const *args, size_t nargs, const tt_val *final, tt_val *ret);

static int eval_arg(tt_state *st, const tt_val *dot, ptype t, const tt_node *n, tt_val *ret) {
    st->node = n;
    tt_val v;
    int rc;
    switch (n->type) {
    case TN_DOT: return validate(st, dot, t, ret);
    case TN_NIL:
        if (t == P_ANY) {
            *ret = (tt_val){.k = TK_NIL};
            return TT_OK;
        }
        if (t == P_RV) {
            *ret = v_invalid;
            return TT_OK;
        }
        if (t == P_SAMPLE || t == P_VEC) {
            *ret = (tt_val){.k = t == P_SAMPLE ? TK_SAMPLE : TK_VEC};
            return TT_OK;
        }
        return st_errf(st, "cannot assign nil to %s", ptype_name(t));
    case TN_FIELD: {
        const tt_node *self = n;
        rc = eval_field_node(st, dot, n, &self, 1, NULL, &v);
        break;
    }
    case TN_VAR: rc = eval_variable_node(st, dot, n, NULL, 0, NULL, &v); break;
    case TN_PIPE: rc = eval_pipeline(st, dot, n, &v); break;
    case TN_IDENT: rc = eval_function(st, dot, n, n, NULL, 0, NULL, &v); break;
    case TN_CHAIN: rc = eval_chain_node(st, dot, n, NULL, 0, NULL, &v); break;
    default: goto literal;
    }
    if (rc) return rc;
    return validate(st, &v, t, ret);
literal:
    st->node = n;
    switch (t) {
    case P_ANY:
    case P_RV:
        switch (n->type) {
        case TN_BOOL: *ret = v_bool(n->b); return TT_OK;
        case TN_NUM: return ideal_constant(st, n, ret);
        case TN_STR: *ret = v_str(n->s, n->n); return TT_OK;
        default: break;
        }
        break;
    case P_STR: {
        if (n->type == TN_STR) {
            *ret = v_str(n->s, n->n);
            return TT_OK;
        }
        base_buf b = BASE_BUF_INIT;
        node_string(&b, n);
        st_errf(st, "expected string; found %s", b.data ? b.data : "");
        base_buf_free(&b);
        return TT_ERR;
    }
    case P_FLOAT: {
        if (n->type == TN_NUM && n->is_float) {
            *ret = v_float(n->f);
            return TT_OK;
        }
        base_buf b = BASE_BUF_INIT;
        node_string(&b, n);
        st_errf(st, "expected float; found %s", b.data ? b.data : "");
        base_buf_free(&b);
        return TT_ERR;
    }
    default: break;
    }
    base_buf b = BASE_BUF_INIT;
    node_string(&b, n);
    st_errf(st, "can't handle %s for arg of type %s", b.data ? b.data : "", ptype_name(t));
    base_buf_free(&b);
    return TT_ERR;
}

static int not_a_function(tt_state *st, const tt_node *const *args, size_t nargs, const tt_val *final) {
    if (nargs > 1 || final) {
        base_buf b = BASE_BUF_INIT;
        node_string(&b, args[0]);
        st_errf(st, "can't give argument to non-function %s", b.data ? b.data : "");
        base_buf_free(&b);
        return TT_ERR;
    }
    return TT_OK;
}

static const char data_type[] = "struct { Labels map[string]string; ExternalLabels map[string]string; "
                                "ExternalURL string; Value float64 }";

static int eval_field(tt_state *st, base_str name, int has_args, const tt_val *recv, tt_val *ret) {
    switch (recv->k) {
    case TK_INVALID: *ret = v_invalid; return TT_OK;
    case TK_NIL: return st_errf(st, "nil pointer evaluating interface {}.%.*s", (int)name.n, name.p);
    case TK_DATA: {
        const rules_tmpl_data *d = st->d;
        if (base_str_eqc(name, "Labels") || base_str_eqc(name, "ExternalLabels")) {
            const labels_set *ls = name.n == 6 ? d->labels : d->external_labels;
            *ret = (tt_val){.k = TK_MAP, .ls = ls ? ls : labels_empty()};
        } else if (base_str_eqc(name, "ExternalURL")) {
            *ret =
                v_str(d->external_url ? d->external_url : "", d->external_url ? strlen(d->external_url) : 0);
        } else if (base_str_eqc(name, "Value")) {
            *ret = v_float(d->value);
        } else
            break;
        if (has_args)
            return st_errf(st, "%.*s has arguments but cannot be invoked as function", (int)name.n, name.p);
        return TT_OK;
    }
    case TK_SAMPLE:
        if (!base_str_eqc(name, "Labels") && !base_str_eqc(name, "Value")) break;
        if (!recv->smp)
            return st_errf(st, "nil pointer evaluating *template.sample.%.*s", (int)name.n, name.p);
        if (has_args)
            return st_errf(st, "%.*s has arguments but cannot be invoked as function", (int)name.n, name.p);
        if (name.n == 6)
            *ret = (tt_val){.k = TK_MAP, .ls = recv->smp->ls};
        else
            *ret = v_float(recv->smp->v);
        return TT_OK;
    case TK_MAP: {
        if (has_args) return st_errf(st, "%.*s is not a method but has arguments", (int)name.n, name.p);
        base_str v = labels_get(recv->ls, name);
        *ret = v_str(v.p ? v.p : "", v.n);
        return TT_OK;
    }
    case TK_ARGS: {
        if (has_args) return st_errf(st, "%.*s is not a method but has arguments", (int)name.n, name.p);
        *ret = (tt_val){.k = TK_NIL};
        if (name.n > 3 && memcmp(name.p, "arg", 3) == 0 && !(name.n > 4 && name.p[3] == '0')) {
            uint64_t i;
            if (base_parse_u64(name.p + 3, name.n - 3, &i) == 0 && i < recv->args->n) *ret = recv->args->v[i];
        }
        return TT_OK;
    }
    default: break;
    }
    return st_errf(st, "can't evaluate field %.*s in type %s", (int)name.n, name.p,
                   recv->k == TK_DATA ? data_type : rules__tt_type_name(recv));
}

static int eval_field_chain(tt_state *st, const tt_val *recv, const tt_node *node, const base_str *ids,
                            size_t n, const tt_node *const *args, size_t nargs, const tt_val *final,
                            tt_val *ret) {
    (void)node, (void)args;
    tt_val cur = *recv;
    for (size_t k = 0; k + 1 < n; k++) {
        tt_val next;
        if (eval_field(st, ids[k], 0, &cur, &next)) return TT_ERR;
        cur = next;
    }
    return eval_field(st, ids[n - 1], nargs > 1 || final, &cur, ret);
}

static int eval_field_node(tt_state *st, const tt_val *dot, const tt_node *field, const tt_node *const *args,
                           size_t nargs, const tt_val *final, tt_val *ret) {
    st->node = field;
    return eval_field_chain(st, dot, field, field->ids, field->nids, args, nargs, final, ret);
}

static int eval_variable_node(tt_state *st, const tt_val *dot, const tt_node *var, const tt_node *const *args,
                              size_t nargs, const tt_val *final, tt_val *ret) {
    (void)dot;
    st->node = var;
    const tt_val *v = NULL;
    for (size_t k = st->nvars; k-- > 0;)
        if (base_str_eq(st->vars[k].name, var->ids[0])) {
            v = &st->vars[k].v;
            break;
        }
    if (!v) return st_errf(st, "undefined variable: %.*s", (int)var->ids[0].n, var->ids[0].p);
    if (var->nids == 1) {
        if (not_a_function(st, args, nargs, final)) return TT_ERR;
        *ret = *v;
        return TT_OK;
    }
    tt_val copy = *v;
    return eval_field_chain(st, &copy, var, var->ids + 1, var->nids - 1, args, nargs, final, ret);
}

static int eval_chain_node(tt_state *st, const tt_val *dot, const tt_node *chain, const tt_node *const *args,
                           size_t nargs, const tt_val *final, tt_val *ret) {
    st->node = chain;
    if (chain->sub->type == TN_NIL) {
        base_buf b = BASE_BUF_INIT;
        node_string(&b, chain);
        st_errf(st, "indirection through explicit nil in %s", b.data ? b.data : "");
        base_buf_free(&b);
        return TT_ERR;
    }
    tt_val pipe;
    if (eval_arg(st, dot, P_RV, chain->sub, &pipe)) return TT_ERR;
    st->node = chain;
    return eval_field_chain(st, &pipe, chain, chain->ids, chain->nids, args, nargs, final, ret);
}

static int eval_call(tt_state *st, const tt_val *dot, const tt_func *f, const tt_node *node,
                     const tt_node *const *args, size_t nargs, const tt_val *final, tt_val *ret) {
    /* args[0] is the function's name */
    if (args)
        args++, nargs--;
    else
        nargs = 0;
    size_t num_in = nargs + (final ? 1 : 0);
    size_t num_fixed = nargs;
    if (f->variadic) {
        num_fixed = (size_t)f->nparams - 1;
        if (num_in < num_fixed)
            return st_errf(st, "wrong number of args for %s: want at least %d got %zu", f->name,
                           f->nparams - 1, nargs);
    } else if (num_in != (size_t)f->nparams)
        return st_errf(st, "wrong number of args for %s: want %d got %zu", f->name, f->nparams, num_in);
    if (!f->fn) { /* and, or: short-circuit */
        int is_or = f->name[0] == 'o';
        tt_val v = v_invalid;
        for (size_t k = 0; k < nargs; k++) {
            if (eval_arg(st, dot, P_RV, args[k], &v)) return TT_ERR;
            int ok;
            tt_val u = v.k == TK_NIL ? v_invalid : v;
            if (is_true(&u, &ok) == is_or) {
                *ret = u;
                return TT_OK;
            }
        }
        if (final) v = *final;
        *ret = v.k == TK_NIL ? v_invalid : v;
        return TT_OK;
    }
    tt_val *argv = st_alloc(st, (num_in + 1) * sizeof *argv);
    if (!argv) return nomem(st);
    size_t i = 0;
    for (; i < num_fixed && i < nargs; i++)
        if (eval_arg(st, dot, f->p[i], args[i], &argv[i])) return TT_ERR;
    if (f->variadic)
        for (; i < nargs; i++)
            if (eval_arg(st, dot, f->p[f->nparams - 1], args[i], &argv[i])) return TT_ERR;
    if (final) {
        ptype t = f->p[f->nparams - 1];
        if (f->variadic && num_in - 1 < num_fixed) t = f->p[num_in - 1];
        if (validate(st, final, t, &argv[i])) return TT_ERR;
    }
    base_buf msg = BASE_BUF_INIT;
    tt_val r = v_invalid;
    int rc = f->fn(st, argv, num_in, &r, &msg);
    if (rc == TT_ERR && !msg.len) {
        base_buf_free(&msg);
        return TT_ERR;
    }
    if (rc) {
        st->node = node;
        st_errf(st, "error calling %s: %s", f->name, msg.data ? msg.data : "");
        base_buf_free(&msg);
        return TT_ERR;
    }
    base_buf_free(&msg);
    *ret = r;
    return TT_OK;
}

static int eval_function(tt_state *st, const tt_val *dot, const tt_node *ident, const tt_node *cmd,
                         const tt_node *const *args, size_t nargs, const tt_val *final, tt_val *ret) {
    st->node = ident;
    const tt_func *f = find_func((base_str){ident->s, ident->n});
    if (!f) return st_errf(st, "\"%.*s\" is not a defined function", (int)ident->n, ident->s);
    return eval_call(st, dot, f, cmd, args, nargs, final, ret);
}

static int eval_command(tt_state *st, const tt_val *dot, const tt_node *cmd, const tt_val *final,
                        tt_val *ret) {
    const tt_node *first = cmd->kids[0];
    const tt_node *const *args = (const tt_node *const *)cmd->kids;
    switch (first->type) {
    case TN_FIELD: return eval_field_node(st, dot, first, args, cmd->nkids, final, ret);
    case TN_CHAIN: return eval_chain_node(st, dot, first, args, cmd->nkids, final, ret);
    case TN_IDENT: return eval_function(st, dot, first, cmd, args, cmd->nkids, final, ret);
    case TN_PIPE:
        st->node = first;
        if (not_a_function(st, args, cmd->nkids, final)) return TT_ERR;
        return eval_pipeline(st, dot, first, ret);
    case TN_VAR: return eval_variable_node(st, dot, first, args, cmd->nkids, final, ret);
    default: break;
    }
    st->node = first;
    if (not_a_function(st, args, cmd->nkids, final)) return TT_ERR;
    switch (first->type) {
    case TN_BOOL: *ret = v_bool(first->b); return TT_OK;
    case TN_DOT: *ret = *dot; return TT_OK;
    case TN_NIL: return st_errf(st, "nil is not a command");
    case TN_NUM: return ideal_constant(st, first, ret);
    case TN_STR: *ret = v_str(first->s, first->n); return TT_OK;
    default: return st_errf(st, "can't evaluate command");
    }
}

static int eval_pipeline(tt_state *st, const tt_val *dot, const tt_node *pipe, tt_val *ret) {
    st->node = pipe;
    if (++st->depth > TT_MAX_DEPTH * 2)
        return st_errf(st, "exceeded maximum template depth (%d)", TT_MAX_DEPTH);
    tt_val value = v_invalid;
    for (size_t k = 0; k < pipe->nkids; k++) {
        tt_val next;
        if (eval_command(st, dot, pipe->kids[k], k ? &value : NULL, &next)) return TT_ERR;
        value = next;
    }
    st->depth--;
    if (value.k == TK_NIL) value = v_invalid;
    for (size_t k = 0; k < pipe->ndecl; k++) {
        base_str name = pipe->decl[k]->ids[0];
        int rc = pipe->is_assign ? set_var(st, name, value) : push_var(st, name, value);
        if (rc) return rc;
    }
    *ret = value;
    return TT_OK;
}

/* Walking ----------------------------------------------------------- */

static int walk(tt_state *st, const tt_val *dot, const tt_node *n);

static int check_limits(tt_state *st) {
    if (++st->steps > RULES_TMPL_STEPS)
        return st_errf(st, "exceeded the limit of %u steps", RULES_TMPL_STEPS);
    if (st->out->len - st->out_start > RULES_TMPL_OUT_MAX)
        return st_errf(st, "output exceeds the limit of %zu bytes", RULES_TMPL_OUT_MAX);
    if (base_buf_err(st->out)) return nomem(st);
    return TT_OK;
}

static int walk_list(tt_state *st, const tt_val *dot, const tt_node *list) {
    for (size_t k = 0; k < list->nkids; k++) {
        int rc = walk(st, dot, list->kids[k]);
        if (rc) return rc;
    }
    return TT_OK;
}

typedef struct kv {
    base_str k;
    tt_val v;
} kv;

static int cmp_kv(const void *a, const void *b) {
    const kv *x = a, *y = b;
    size_t n = x->k.n < y->k.n ? x->k.n : y->k.n;
    int c = n ? memcmp(x->k.p, y->k.p, n) : 0;
    return c ? c : (x->k.n > y->k.n) - (x->k.n < y->k.n);
}

static int range_one(tt_state *st, const tt_node *r, tt_val index, tt_val elem, size_t mark) {
    const tt_node *pipe = r->sub;
    if (pipe->ndecl > 0) {
        if (pipe->is_assign) {
            if (pipe->ndecl > 1) {
                if (set_var(st, pipe->decl[0]->ids[0], index)) return TT_ERR;
                if (set_var(st, pipe->decl[1]->ids[0], elem)) return TT_ERR;
            } else if (set_var(st, pipe->decl[0]->ids[0], elem))
                return TT_ERR;
        } else {
            st->vars[st->nvars - 1].v = elem;
            if (pipe->ndecl > 1) st->vars[st->nvars - 2].v = index;
        }
    }
    int rc = walk_list(st, &elem, r->list);
    st->nvars = mark;
    return rc;
}

static int walk_range(tt_state *st, const tt_val *dot, const tt_node *r) {
    st->node = r;
    size_t mark0 = st->nvars;
    tt_val val;
    if (eval_pipeline(st, dot, r->sub, &val)) return TT_ERR;
    size_t mark = st->nvars;
    int rc = TT_OK;
    size_t count = 0;
    switch (val.k) {
    case TK_VEC:
        count = val.vec ? val.vec->n : 0;
        for (size_t k = 0; k < count; k++) {
            if (check_limits(st)) return TT_ERR;
            rc = range_one(st, r, v_int((int64_t)k), (tt_val){.k = TK_SAMPLE, .smp = val.vec->s[k]}, mark);
            if (rc == TT_BREAK) break;
            if (rc == TT_ERR) return rc;
        }
        break;
    case TK_MAP: {
        labels_iter it;
        base_str name, value;
        labels_iter_init(&it, val.ls);
        while (labels_iter_next(&it, &name, &value)) {
            count++;
            if (check_limits(st)) return TT_ERR;
            rc = range_one(st, r, v_str(name.p, name.n), v_str(value.p, value.n), mark);
            if (rc == TT_BREAK) break;
            if (rc == TT_ERR) return rc;
        }
        break;
    }
    case TK_ARGS: {
        count = val.args->n;
        kv *kvs = st_alloc(st, count * sizeof *kvs);
        if (!kvs) return nomem(st);
        for (size_t k = 0; k < count; k++) {
            char *key = st_alloc(st, 32);
            if (!key) return nomem(st);
            int kl = snprintf(key, 32, "arg%zu", k);
            kvs[k] = (kv){{key, (size_t)kl}, val.args->v[k]};
        }
        qsort(kvs, count, sizeof *kvs, cmp_kv);
        for (size_t k = 0; k < count; k++) {
            if (check_limits(st)) return TT_ERR;
            rc = range_one(st, r, v_str(kvs[k].k.p, kvs[k].k.n), kvs[k].v, mark);
            if (rc == TT_BREAK) break;
            if (rc == TT_ERR) return rc;
        }
        break;
    }
    case TK_INVALID: break;
    default: {
        base_buf b = BASE_BUF_INIT;
        rules__tt_print_val(&b, &val);
        st_errf(st, "range can't iterate over %s", b.data ? b.data : "");
        base_buf_free(&b);
        return TT_ERR;
    }
    }
    if (count == 0 && r->elist) {
        rc = walk_list(st, dot, r->elist);
        if (rc) return rc;
    }
    st->nvars = mark0;
    return TT_OK;
}

static int walk(tt_state *st, const tt_val *dot, const tt_node *n) {
    st->node = n;
    if (check_limits(st)) return TT_ERR;
    switch (n->type) {
    case TN_TEXT: base_buf_append(st->out, n->s, n->n); return TT_OK;
    case TN_ACTION: {
        tt_val v;
        if (eval_pipeline(st, dot, n->sub, &v)) return TT_ERR;
        if (n->sub->ndecl == 0) {
            if (v.k == TK_INVALID)
                base_buf_puts(st->out, "<no value>");
            else
                rules__tt_print_val(st->out, &v);
        }
        return TT_OK;
    }
    case TN_IF:
    case TN_WITH: {
        size_t mark = st->nvars;
        tt_val v;
        if (++st->depth > TT_MAX_DEPTH * 2)
            return st_errf(st, "exceeded maximum template depth (%d)", TT_MAX_DEPTH);
        if (eval_pipeline(st, dot, n->sub, &v)) return TT_ERR;
        int ok;
        int truth = is_true(&v, &ok);
        if (!ok) {
            return st_errf(st, "if/with can't use <invalid reflect.Value>");
        }
        int rc = TT_OK;
        if (truth)
            rc = walk_list(st, n->type == TN_WITH ? &v : dot, n->list);
        else if (n->elist)
            rc = walk_list(st, dot, n->elist);
        st->depth--;
        st->nvars = mark;
        return rc;
    }
    case TN_RANGE: {
        if (++st->depth > TT_MAX_DEPTH * 2)
            return st_errf(st, "exceeded maximum template depth (%d)", TT_MAX_DEPTH);
        int rc = walk_range(st, dot, n);
        st->depth--;
        return rc;
    }
    case TN_BREAK: return TT_BREAK;
    case TN_CONTINUE: return TT_CONTINUE;
    case TN_LIST: return walk_list(st, dot, n);
    default: return st_errf(st, "unknown node");
    }
}

int rules_tmpl_exec(const rules_tmpl *t, const rules_tmpl_data *data, base_buf *out, char *err,
                    size_t errlen) {
    tt_state st = {.t = t, .d = data, .out = out, .out_start = out->len, .err = err, .errlen = errlen};
    base_arena_init(&st.arena, 4096, TT_ARENA_LIMIT);
    tt_val root = {.k = TK_DATA, .data = data};
    int rc = push_var(&st, (base_str){"$", 1}, root);
    if (rc == TT_OK) {
        rc = walk(&st, &root, t->root);
        if (rc == TT_BREAK || rc == TT_CONTINUE) rc = TT_OK;
    }
    if (rc == TT_OK && base_buf_err(out)) rc = nomem(&st);
    for (size_t k = 0; k < st.nowned; k++) labels_unref(st.owned[k]);
    free(st.owned);
    free(st.vars);
    base_arena_free(&st.arena);
    if (rc == TT_OK) return 0;
    if (err && errlen && strstr(err, "out of memory")) return BASE_E_NOMEM;
    if (err && errlen &&
        (strstr(err, "exceeded the limit") || strstr(err, "exceeds the limit") ||
         strstr(err, "maximum template depth")))
        return BASE_E_LIMIT;
    return BASE_E_INVAL;
}

/* Built-ins --------------------------------------------------------- */

static const tt_val *ind(const tt_val *v) {
    return v->k == TK_NIL ? &v_invalid : v;
}

static int f_not(tt_state *st, tt_val *a, size_t n, tt_val *ret, base_buf *msg) {
    (void)st, (void)n, (void)msg;
    int ok;
    *ret = v_bool(!is_true(ind(&a[0]), &ok));
    return 0;
}

static int f_len(tt_state *st, tt_val *a, size_t n, tt_val *ret, base_buf *msg) {
    (void)st, (void)n;
    const tt_val *v = ind(&a[0]);
    switch (v->k) {
    case TK_INVALID: base_buf_puts(msg, "len of nil pointer"); return -1;
    case TK_STRING:
    case TK_HTML: *ret = v_int((int64_t)v->s.n); return 0;
    case TK_MAP: *ret = v_int((int64_t)labels_len(v->ls)); return 0;
    case TK_ARGS: *ret = v_int((int64_t)v->args->n); return 0;
    case TK_VEC: *ret = v_int(v->vec ? (int64_t)v->vec->n : 0); return 0;
    case TK_SAMPLE:
        if (!v->smp) {
            base_buf_puts(msg, "len of nil pointer");
            return -1;
        }
        break;
    default: break;
    }
    base_buf_printf(msg, "len of type %s", v->k == TK_DATA ? data_type : rules__tt_type_name(v));
    return -1;
}

static int index_int(const tt_val *x, int64_t *ret, base_buf *msg) {
    if (x->k == TK_INT) {
        *ret = x->i;
        return 0;
    }
    if (x->k == TK_INVALID) {
        base_buf_puts(msg, "cannot index slice/array with nil");
        return -1;
    }
    base_buf_printf(msg, "cannot index slice/array with type %s", rules__tt_type_name(x));
    return -1;
}

static int f_index(tt_state *st, tt_val *a, size_t n, tt_val *ret, base_buf *msg) {
    (void)st;
    tt_val item = *ind(&a[0]);
    if (item.k == TK_INVALID) {
        base_buf_puts(msg, "index of untyped nil");
        return -1;
    }
    for (size_t k = 1; k < n; k++) {
        const tt_val *x = ind(&a[k]);
        switch (item.k) {
        case TK_STRING:
        case TK_HTML:
        case TK_VEC: {
            int64_t i;
            if (index_int(x, &i, msg)) return -1;
            size_t len = item.k == TK_VEC ? (item.vec ? item.vec->n : 0) : item.s.n;
            if (i < 0 || (uint64_t)i >= len) {
                base_buf_printf(msg, "index out of range: %lld", (long long)i);
                return -1;
            }
            if (item.k == TK_VEC)
                item = (tt_val){.k = TK_SAMPLE, .smp = item.vec->s[i]};
            else
                item = v_int((unsigned char)item.s.p[i]); /* a byte (uint8) */
            break;
        }
        case TK_MAP:
        case TK_ARGS:
            if (x->k == TK_INVALID) {
                base_buf_puts(msg, "value is nil; should be of type string");
                return -1;
            }
            if (x->k != TK_STRING) {
                base_buf_printf(msg, "value has type %s; should be string", rules__tt_type_name(x));
                return -1;
            }
            if (item.k == TK_MAP) {
                base_str v = labels_get(item.ls, x->s);
                item = v_str(v.p ? v.p : "", v.n);
            } else {
                tt_val r = {.k = TK_NIL};
                base_str s = x->s;
                uint64_t i;
                if (s.n > 3 && memcmp(s.p, "arg", 3) == 0 && !(s.n > 4 && s.p[3] == '0') &&
                    base_parse_u64(s.p + 3, s.n - 3, &i) == 0 && i < item.args->n)
                    r = item.args->v[i];
                item = r;
            }
            break;
        case TK_NIL:
        case TK_INVALID: base_buf_puts(msg, "index of untyped nil"); return -1;
        default:
            base_buf_printf(msg, "can't index item of type %s",
                            item.k == TK_DATA ? data_type : rules__tt_type_name(&item));
            return -1;
        }
    }
    *ret = item;
    return 0;
}

static int f_slice(tt_state *st, tt_val *a, size_t n, tt_val *ret, base_buf *msg) {
    tt_val item = *ind(&a[0]);
    if (item.k == TK_INVALID) {
        base_buf_puts(msg, "slice of untyped nil");
        return -1;
    }
    if (n > 4) {
        base_buf_printf(msg, "too many slice indexes: %zu", n - 1);
        return -1;
    }
    size_t len;
    if (item.k == TK_STRING || item.k == TK_HTML) {
        if (n == 4) {
            base_buf_puts(msg, "cannot 3-index slice a string");
            return -1;
        }
        len = item.s.n;
    } else if (item.k == TK_VEC)
        len = item.vec ? item.vec->n : 0;
    else {
        base_buf_printf(msg, "can't slice item of type %s",
                        item.k == TK_DATA ? data_type : rules__tt_type_name(&item));
        return -1;
    }
    int64_t idx[3] = {0, (int64_t)len, (int64_t)len};
    for (size_t k = 1; k < n; k++) {
        if (index_int(ind(&a[k]), &idx[k - 1], msg)) return -1;
        if (idx[k - 1] < 0 || (uint64_t)idx[k - 1] > len) {
            base_buf_printf(msg, "index out of range: %lld", (long long)idx[k - 1]);
            return -1;
        }
    }
    if (idx[0] > idx[1]) {
        base_buf_printf(msg, "invalid slice index: %lld > %lld", (long long)idx[0], (long long)idx[1]);
        return -1;
    }
    if (item.k == TK_VEC) {
        tt_vec *v = st_alloc(st, sizeof *v);
        if (!v) return nomem(st);
        v->n = (size_t)(idx[1] - idx[0]);
        v->s = item.vec ? item.vec->s + idx[0] : NULL;
        *ret = (tt_val){.k = TK_VEC, .vec = v};
    } else {
        *ret = item;
        ret->s = (base_str){item.s.p + idx[0], (size_t)(idx[1] - idx[0])};
    }
    return 0;
}

static int f_call(tt_state *st, tt_val *a, size_t n, tt_val *ret, base_buf *msg) {
    (void)st, (void)n, (void)ret;
    const tt_val *f = ind(&a[0]);
    if (f->k == TK_INVALID)
        base_buf_puts(msg, "call of nil");
    else
        base_buf_printf(msg, "non-function of type %s", f->k == TK_DATA ? data_type : rules__tt_type_name(f));
    return -1;
}

/* evalArgs: one string argument is used as is, else fmt.Sprint. */
static void eval_args(base_buf *b, const tt_val *a, size_t n) {
    if (n == 1 && a[0].k == TK_STRING)
        base_buf_append(b, a[0].s.p, a[0].s.n);
    else
        rules__tt_sprint(b, a, n, 0);
}

static int f_html(tt_state *st, tt_val *a, size_t n, tt_val *ret, base_buf *msg) {
    (void)msg;
    base_buf s = BASE_BUF_INIT, o = BASE_BUF_INIT;
    eval_args(&s, a, n);
    for (size_t k = 0; k < s.len; k++) {
        char c = s.data[k];
        switch (c) {
        case '"': base_buf_puts(&o, "&#34;"); break;
        case '\'': base_buf_puts(&o, "&#39;"); break;
        case '&': base_buf_puts(&o, "&amp;"); break;
        case '<': base_buf_puts(&o, "&lt;"); break;
        case '>': base_buf_puts(&o, "&gt;"); break;
        case '\0': base_buf_puts(&o, "\xef\xbf\xbd"); break;
        default: base_buf_putc(&o, c);
        }
    }
    base_buf_free(&s);
    return buf_to_val(st, &o, TK_STRING, ret);
}

static int f_js(tt_state *st, tt_val *a, size_t n, tt_val *ret, base_buf *msg) {
    (void)msg;
    base_buf s = BASE_BUF_INIT, o = BASE_BUF_INIT;
    eval_args(&s, a, n);
    for (size_t k = 0; k < s.len; k++) {
        unsigned char c = (unsigned char)s.data[k];
        switch (c) {
        case '\\': base_buf_puts(&o, "\\\\"); break;
        case '\'': base_buf_puts(&o, "\\'"); break;
        case '"': base_buf_puts(&o, "\\\""); break;
        case '<': base_buf_puts(&o, "\\u003C"); break;
        case '>': base_buf_puts(&o, "\\u003E"); break;
        case '&': base_buf_puts(&o, "\\u0026"); break;
        case '=': base_buf_puts(&o, "\\u003D"); break;
        default:
            if (c < ' ')
                base_buf_printf(&o, "\\u%04X", c);
            else
                base_buf_putc(&o, (char)c);
        }
    }
    base_buf_free(&s);
    return buf_to_val(st, &o, TK_STRING, ret);
}

static int f_urlquery(tt_state *st, tt_val *a, size_t n, tt_val *ret, base_buf *msg) {
    (void)msg;
    base_buf s = BASE_BUF_INIT, o = BASE_BUF_INIT;
    eval_args(&s, a, n);
    rules__tt_query_escape(&o, (base_str){s.data, s.len});
    base_buf_free(&s);
    return buf_to_val(st, &o, TK_STRING, ret);
}

static int f_print(tt_state *st, tt_val *a, size_t n, tt_val *ret, base_buf *msg) {
    (void)msg;
    base_buf o = BASE_BUF_INIT;
    rules__tt_sprint(&o, a, n, 0);
    return buf_to_val(st, &o, TK_STRING, ret);
}

static int f_println(tt_state *st, tt_val *a, size_t n, tt_val *ret, base_buf *msg) {
    (void)msg;
    base_buf o = BASE_BUF_INIT;
    rules__tt_sprint(&o, a, n, 1);
    return buf_to_val(st, &o, TK_STRING, ret);
}

static int f_printf(tt_state *st, tt_val *a, size_t n, tt_val *ret, base_buf *msg) {
    (void)msg;
    base_buf o = BASE_BUF_INIT;
    rules__tt_sprintf(&o, a[0].s, a + 1, n - 1);
    return buf_to_val(st, &o, TK_STRING, ret);
}

/* Comparison (funcs.go) */
enum { K_INVALID, K_BOOL, K_INT, K_FLOAT, K_STRING, K_OTHER };

static int basic_kind(const tt_val *v) {
    switch (v->k) {
    case TK_INVALID:
    case TK_NIL: return K_INVALID;
    case TK_BOOL: return K_BOOL;
    case TK_INT: return K_INT;
    case TK_FLOAT: return K_FLOAT;
    case TK_STRING:
    case TK_HTML: return K_STRING;
    default: return K_OTHER;
    }
}

static int str_cmp(base_str a, base_str b) {
    size_t n = a.n < b.n ? a.n : b.n;
    int c = n ? memcmp(a.p, b.p, n) : 0;
    return c ? c : (a.n > b.n) - (a.n < b.n);
}

static int eq2(const tt_val *x, const tt_val *y, int *truth, base_buf *msg) {
    int k1 = basic_kind(x), k2 = basic_kind(y);
    *truth = 0;
    if (k1 != k2) {
        if (k1 != K_INVALID && k2 != K_INVALID) {
            base_buf_puts(msg, "incompatible types for comparison");
            return -1;
        }
        return 0;
    }
    switch (k1) {
    case K_BOOL: *truth = x->b == y->b; break;
    case K_INT: *truth = x->i == y->i; break;
    case K_FLOAT: *truth = x->f == y->f; break;
    case K_STRING: *truth = base_str_eq(x->s, y->s); break;
    case K_INVALID: break;
    default:
        if (x->k != y->k) {
            base_buf_puts(msg, "incompatible types for comparison");
            return -1;
        }
        if (x->k == TK_SAMPLE) {
            *truth = x->smp == y->smp;
            break;
        }
        if (x->k == TK_TIME) {
            *truth = x->i == y->i;
            break;
        }
        base_buf_puts(msg, "non-comparable type ");
        rules__tt_print_val(msg, x);
        base_buf_printf(msg, ": %s", x->k == TK_DATA ? data_type : rules__tt_type_name(x));
        return -1;
    }
    return 0;
}

static int f_eq(tt_state *st, tt_val *a, size_t n, tt_val *ret, base_buf *msg) {
    (void)st;
    if (n < 2) {
        base_buf_puts(msg, "missing argument for comparison");
        return -1;
    }
    for (size_t k = 1; k < n; k++) {
        int t;
        if (eq2(ind(&a[0]), ind(&a[k]), &t, msg)) return -1;
        if (t) {
            *ret = v_bool(1);
            return 0;
        }
    }
    *ret = v_bool(0);
    return 0;
}

static int f_ne(tt_state *st, tt_val *a, size_t n, tt_val *ret, base_buf *msg) {
    if (f_eq(st, a, n, ret, msg)) return -1;
    ret->b = !ret->b;
    return 0;
}

static int lt2(const tt_val *x, const tt_val *y, int *truth, base_buf *msg) {
    int k1 = basic_kind(x), k2 = basic_kind(y);
    if (k1 == K_INVALID || k1 == K_OTHER || k2 == K_INVALID || k2 == K_OTHER) {
        base_buf_puts(msg, "invalid type for comparison");
        return -1;
    }
    if (k1 != k2) {
        base_buf_puts(msg, "incompatible types for comparison");
        return -1;
    }
    switch (k1) {
    case K_BOOL: base_buf_puts(msg, "invalid type for comparison"); return -1;
    case K_INT: *truth = x->i < y->i; break;
    case K_FLOAT: *truth = x->f < y->f; break;
    default: *truth = str_cmp(x->s, y->s) < 0;
    }
    return 0;
}

static int f_lt(tt_state *st, tt_val *a, size_t n, tt_val *ret, base_buf *msg) {
    (void)st, (void)n;
    int t;
    if (lt2(ind(&a[0]), ind(&a[1]), &t, msg)) return -1;
    *ret = v_bool(t);
    return 0;
}

static int f_le(tt_state *st, tt_val *a, size_t n, tt_val *ret, base_buf *msg) {
    (void)st, (void)n;
    int t, e;
    if (lt2(ind(&a[0]), ind(&a[1]), &t, msg)) return -1;
    if (!t && eq2(ind(&a[0]), ind(&a[1]), &e, msg)) return -1;
    *ret = v_bool(t || e);
    return 0;
}

static int f_gt(tt_state *st, tt_val *a, size_t n, tt_val *ret, base_buf *msg) {
    if (f_le(st, a, n, ret, msg)) return -1;
    ret->b = !ret->b;
    return 0;
}

static int f_ge(tt_state *st, tt_val *a, size_t n, tt_val *ret, base_buf *msg) {
    if (f_lt(st, a, n, ret, msg)) return -1;
    ret->b = !ret->b;
    return 0;
}

/* Prometheus's functions -------------------------------------------- */

static int f_query(tt_state *st, tt_val *a, size_t n, tt_val *ret, base_buf *msg) {
    (void)n;
    if (!st->d->query) {
        base_buf_puts(msg, "no query engine");
        return -1;
    }
    char *expr = base_arena_strndup(&st->arena, a[0].s.p ? a[0].s.p : "", a[0].s.n);
    if (!expr) return nomem(st);
    rules_tmpl_sample *ss = NULL;
    size_t cnt = 0;
    char qerr[512] = "";
    int rc = st->d->query(st->d->query_ctx, expr, st->d->t_ms, &ss, &cnt, qerr, sizeof qerr);
    if (rc < 0) {
        base_buf_puts(msg, qerr[0] ? qerr : base_strerror(rc));
        return -1;
    }
    int fail = 0;
    tt_vec *v = st_alloc(st, sizeof *v);
    tt_sample **arr = st_alloc(st, (cnt + 1) * sizeof *arr);
    if (!v || !arr) fail = 1;
    for (size_t k = 0; k < cnt; k++) {
        if (!fail && own_labels(st, ss[k].ls)) fail = 1;
        if (fail) {
            labels_unref(ss[k].ls);
            continue;
        }
        tt_sample *s = st_alloc(st, sizeof *s);
        if (!s) {
            fail = 1;
            continue;
        }
        s->ls = ss[k].ls;
        s->v = ss[k].v;
        arr[k] = s;
    }
    free(ss);
    if (fail) return nomem(st);
    v->n = cnt;
    v->s = arr;
    *ret = (tt_val){.k = TK_VEC, .vec = v};
    return 0;
}

static int f_first(tt_state *st, tt_val *a, size_t n, tt_val *ret, base_buf *msg) {
    (void)st, (void)n;
    if (a[0].vec && a[0].vec->n > 0) {
        *ret = (tt_val){.k = TK_SAMPLE, .smp = a[0].vec->s[0]};
        return 0;
    }
    base_buf_puts(msg, "first() called on vector with no elements");
    return -1;
}

static int nil_sample(base_buf *msg) {
    base_buf_puts(msg, "runtime error: invalid memory address or nil pointer dereference");
    return -1;
}

static int f_label(tt_state *st, tt_val *a, size_t n, tt_val *ret, base_buf *msg) {
    (void)st, (void)n;
    if (!a[1].smp) return nil_sample(msg);
    base_str v = labels_get(a[1].smp->ls, a[0].s);
    *ret = v_str(v.p ? v.p : "", v.n);
    return 0;
}

static int f_value(tt_state *st, tt_val *a, size_t n, tt_val *ret, base_buf *msg) {
    (void)st, (void)n;
    if (!a[0].smp) return nil_sample(msg);
    *ret = v_float(a[0].smp->v);
    return 0;
}

static int f_strvalue(tt_state *st, tt_val *a, size_t n, tt_val *ret, base_buf *msg) {
    (void)st, (void)n;
    if (!a[0].smp) return nil_sample(msg);
    base_str v = labels_get(a[0].smp->ls, base_str_c("__value__"));
    *ret = v_str(v.p ? v.p : "", v.n);
    return 0;
}

static int f_args(tt_state *st, tt_val *a, size_t n, tt_val *ret, base_buf *msg) {
    (void)msg;
    tt_args *args = st_alloc(st, sizeof *args);
    tt_val *v = st_alloc(st, (n + 1) * sizeof *v);
    if (!args || !v) return nomem(st);
    memcpy(v, a, n * sizeof *v);
    args->n = n;
    args->v = v;
    *ret = (tt_val){.k = TK_ARGS, .args = args};
    return 0;
}

/* Compiles a Go regexp for unanchored search: (?s:.*?)(P)(?s:.*) inside
 * labels' anchoring, so group 1 is the match and group k+1 the pattern's
 * group k. With ctx, one more rune (?s:.) comes first: searching from a
 * position p > 0 then runs over the text from the rune before p, which
 * gives ^, \A, \b and \B (the assertions look one rune back at most) the
 * context they have in the whole text. Errors read as Go's
 * regexp.Compile(pattern) (must: MustCompile's panic text). */
static int compile_search(tt_state *st, base_str pat, int must, int ctx, labels_regex **ret, base_buf *msg) {
    char err[512];
    labels_regex *re = NULL;
    int rc = labels_regex_compile(pat, LABELS_RE_NOFAST, &re, err, sizeof err);
    if (rc == 0) labels_regex_free(re);
    if (rc == BASE_E_NOMEM) return nomem(st);
    if (rc < 0) {
        /* Go's error names the pattern itself, not the anchored form */
        base_buf anch = BASE_BUF_INIT;
        base_buf_puts(&anch, "`^(?:");
        base_buf_append(&anch, pat.p, pat.n);
        base_buf_puts(&anch, ")$`");
        char *at = anch.data ? memmem(err, strlen(err), anch.data, anch.len) : NULL;
        if (must) {
            base_buf_puts(msg, "regexp: Compile(");
            base_buf_putc(msg, '`');
            base_buf_append(msg, pat.p, pat.n);
            base_buf_puts(msg, "`): ");
        }
        if (at) {
            base_buf_append(msg, err, (size_t)(at - err));
            base_buf_putc(msg, '`');
            base_buf_append(msg, pat.p, pat.n);
            base_buf_putc(msg, '`');
            base_buf_puts(msg, at + anch.len);
        } else
            base_buf_puts(msg, err);
        base_buf_free(&anch);
        return -1;
    }
    base_buf w = BASE_BUF_INIT;
    base_buf_puts(&w, ctx ? "(?s:.)(?s:.*?)(" : "(?s:.*?)(");
    base_buf_append(&w, pat.p, pat.n);
    base_buf_puts(&w, ")(?s:.*)");
    if (base_buf_err(&w)) {
        base_buf_free(&w);
        return nomem(st);
    }
    rc = labels_regex_compile((base_str){w.data, w.len}, LABELS_RE_CAPTURE | LABELS_RE_NOFAST, ret, err,
                              sizeof err);
    base_buf_free(&w);
    if (rc == BASE_E_NOMEM) return nomem(st);
    if (rc < 0) {
        base_buf_puts(msg, err);
        return -1;
    }
    return 0;
}

static int f_match(tt_state *st, tt_val *a, size_t n, tt_val *ret, base_buf *msg) {
    (void)n;
    labels_regex *re;
    /* regexp.MatchString returns the error (no panic, no prefix) */
    int rc = compile_search(st, a[0].s, 0, 0, &re, msg);
    if (rc) return rc;
    int m = labels_regex_match(re, a[1].s);
    labels_regex_free(re);
    if (m < 0) {
        base_buf_puts(msg, "regexp: match failed");
        return -1;
    }
    *ret = v_bool(m);
    return 0;
}

/* Go's Regexp.Expand for the wrapped regex (groups shifted by one). */
static void expand(const labels_regex *re, base_str tmpl, base_str s, const labels_span *sp, size_t nsp,
                   base_buf *out) {
    size_t k = 0;
    while (k < tmpl.n) {
        char c = tmpl.p[k];
        if (c != '$') {
            base_buf_putc(out, c);
            k++;
            continue;
        }
        k++;
        if (k < tmpl.n && tmpl.p[k] == '$') {
            base_buf_putc(out, '$');
            k++;
            continue;
        }
        int brace = k < tmpl.n && tmpl.p[k] == '{';
        size_t st = k + (size_t)brace, e = st;
        while (e < tmpl.n &&
               (tmpl.p[e] == '_' || (tmpl.p[e] >= 'a' && tmpl.p[e] <= 'z') ||
                (tmpl.p[e] >= 'A' && tmpl.p[e] <= 'Z') || (tmpl.p[e] >= '0' && tmpl.p[e] <= '9')))
            e++;
        if (e == st || (brace && (e >= tmpl.n || tmpl.p[e] != '}'))) {
            base_buf_putc(out, '$'); /* malformed: a literal $ */
            continue;
        }
        base_str name = {tmpl.p + st, e - st};
        k = e + (size_t)brace;
        long g = -1;
        int num = 1;
        for (size_t j = 0; j < name.n; j++)
            if (name.p[j] < '0' || name.p[j] > '9') num = 0;
        if (num) {
            g = 0;
            for (size_t j = 0; j < name.n && g < 100000; j++) g = g * 10 + (name.p[j] - '0');
            g = g + 1;
        } else {
            int gi = labels_regex_group_index(re, name);
            g = gi >= 0 ? gi : -1;
        }
        if (g >= 1 && (size_t)g < nsp && sp[g].start != SIZE_MAX)
            base_buf_append(out, s.p + sp[g].start, sp[g].end - sp[g].start);
    }
}

/* regexp.ReplaceAllString: Go's loop (replace.go's replaceAll), each
 * search over the rest of the text with one rune of left context. */
static int f_rereplaceall(tt_state *st, tt_val *a, size_t n, tt_val *ret, base_buf *msg) {
    (void)n;
    labels_regex *re0 = NULL, *re1 = NULL;
    int rc = compile_search(st, a[0].s, 1, 0, &re0, msg);
    if (rc) return rc;
    rc = compile_search(st, a[0].s, 1, 1, &re1, msg);
    if (rc) {
        labels_regex_free(re0);
        return rc;
    }
    size_t ng = labels_regex_groups(re0) + 1;
    labels_span *sp = calloc(ng, sizeof *sp);
    if (!sp) {
        labels_regex_free(re0);
        labels_regex_free(re1);
        return nomem(st);
    }
    base_str src = a[2].s;
    base_buf o = BASE_BUF_INIT;
    size_t search = 0, last_end = 0;
    int err = 0;
    uint64_t iters = 0;
    while (search <= src.n) {
        if (++iters > RULES_TMPL_STEPS) {
            base_buf_puts(msg, "too many matches");
            err = -1;
            break;
        }
        size_t from = search;
        if (search > 0) { /* back to the start of the rune before search */
            from--;
            while (from > 0 && search - from < 4 && ((unsigned char)src.p[from] & 0xC0) == 0x80) from--;
            uint32_t r;
            if (base_utf8_decode((const unsigned char *)src.p + from, src.n - from, &r) != search - from)
                from = search - 1;
        }
        base_str sub = {src.p + from, src.n - from};
        const labels_regex *re = search > 0 ? re1 : re0;
        int m = labels_regex_exec(re, sub, sp, ng);
        if (m < 0) {
            base_buf_puts(msg, "regexp: match failed");
            err = -1;
            break;
        }
        if (m == 0) break;
        size_t ms = from + sp[1].start, me = from + sp[1].end;
        base_buf_append(&o, src.p + last_end, ms - last_end);
        if (me > last_end || ms == 0) expand(re, a[1].s, sub, sp, ng, &o);
        last_end = me;
        size_t width = 1;
        if (search < src.n) {
            uint32_t r;
            width = base_utf8_decode((const unsigned char *)src.p + search, src.n - search, &r);
            if (width == 0) width = 1;
        }
        if (search + width > me)
            search += width;
        else if (search + 1 > me)
            search++;
        else
            search = me;
    }
    if (!err && last_end < src.n) base_buf_append(&o, src.p + last_end, src.n - last_end);
    free(sp);
    labels_regex_free(re0);
    labels_regex_free(re1);
    if (err) {
        base_buf_free(&o);
        return -1;
    }
    return buf_to_val(st, &o, TK_STRING, ret);
}

static int f_safehtml(tt_state *st, tt_val *a, size_t n, tt_val *ret, base_buf *msg) {
    (void)st, (void)n, (void)msg;
    *ret = a[0];
    ret->k = TK_HTML;
    return 0;
}

/* strings.Title (2.42): a letter after a separator is upper-cased; ASCII
 * other than letters, digits and '_' separates, non-ASCII runes do not
 * (only ASCII letters change case here). */
static int f_title(tt_state *st, tt_val *a, size_t n, tt_val *ret, base_buf *msg) {
    (void)n, (void)msg;
    base_buf o = BASE_BUF_INIT;
    base_str s = a[0].s;
    int prev_sep = 1;
    for (size_t k = 0; k < s.n; k++) {
        unsigned char c = (unsigned char)s.p[k];
        if (prev_sep && c >= 'a' && c <= 'z') c = (unsigned char)(c - 32);
        if (c < 0x80)
            prev_sep =
                !(c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'));
        else
            prev_sep = 0;
        base_buf_putc(&o, (char)c);
    }
    return buf_to_val(st, &o, TK_STRING, ret);
}

static int f_case(tt_state *st, tt_val *a, tt_val *ret, int up) {
    base_buf o = BASE_BUF_INIT;
    for (size_t k = 0; k < a[0].s.n; k++) {
        char c = a[0].s.p[k];
        if (up && c >= 'a' && c <= 'z') c = (char)(c - 32);
        if (!up && c >= 'A' && c <= 'Z') c = (char)(c + 32);
        base_buf_putc(&o, c);
    }
    return buf_to_val(st, &o, TK_STRING, ret);
}

static int f_toupper(tt_state *st, tt_val *a, size_t n, tt_val *ret, base_buf *msg) {
    (void)n, (void)msg;
    return f_case(st, a, ret, 1);
}

static int f_tolower(tt_state *st, tt_val *a, size_t n, tt_val *ret, base_buf *msg) {
    (void)n, (void)msg;
    return f_case(st, a, ret, 0);
}

static int f_link(tt_state *st, tt_val *a, tt_val *ret, int tab) {
    base_buf o = BASE_BUF_INIT;
    base_buf_puts(&o, "/graph?g0.expr=");
    rules__tt_query_escape(&o, a[0].s);
    base_buf_printf(&o, "&g0.tab=%d", tab);
    return buf_to_val(st, &o, TK_STRING, ret);
}

static int f_graphlink(tt_state *st, tt_val *a, size_t n, tt_val *ret, base_buf *msg) {
    (void)n, (void)msg;
    return f_link(st, a, ret, 0);
}

static int f_tablelink(tt_state *st, tt_val *a, size_t n, tt_val *ret, base_buf *msg) {
    (void)n, (void)msg;
    return f_link(st, a, ret, 1);
}

static int f_sortbylabel(tt_state *st, tt_val *a, size_t n, tt_val *ret, base_buf *msg) {
    (void)st, (void)n, (void)msg;
    tt_vec *v = a[1].vec;
    if (v) {
        /* stable insertion sort by the label's value (n is bounded by the
         * query's answer; merge sort is not worth it here) */
        for (size_t i = 1; i < v->n; i++) {
            tt_sample *x = v->s[i];
            base_str xv = labels_get(x->ls, a[0].s);
            size_t j = i;
            while (j > 0 && str_cmp(xv, labels_get(v->s[j - 1]->ls, a[0].s)) < 0) {
                v->s[j] = v->s[j - 1];
                j--;
            }
            v->s[j] = x;
            if (check_limits(st)) return TT_ERR;
        }
    }
    *ret = a[1];
    return 0;
}

/* convertToFloat */
static int to_float(const tt_val *v, double *ret, base_buf *msg) {
    switch (v->k) {
    case TK_FLOAT: *ret = v->f; return 0;
    case TK_INT: *ret = (double)v->i; return 0;
    case TK_STRING: {
        int rc = base_parse_double(v->s.p ? v->s.p : "", v->s.n, ret);
        if (rc == 0) return 0;
        base_buf_puts(msg, "strconv.ParseFloat: parsing ");
        labels_quote(msg, v->s);
        base_buf_puts(msg, rc == BASE_E_RANGE ? ": value out of range" : ": invalid syntax");
        return -1;
    }
    default:
        base_buf_printf(msg, "can't convert %s to float",
                        v->k == TK_NIL    ? "<nil>"
                        : v->k == TK_DATA ? data_type
                                          : rules__tt_type_name(v));
        return -1;
    }
}

typedef void (*humanizer)(base_buf *out, double v);

static int f_hum(tt_state *st, tt_val *a, tt_val *ret, base_buf *msg, humanizer h) {
    double v;
    if (to_float(&a[0], &v, msg)) return -1;
    base_buf o = BASE_BUF_INIT;
    h(&o, v);
    return buf_to_val(st, &o, TK_STRING, ret);
}

static int f_humanize(tt_state *st, tt_val *a, size_t n, tt_val *ret, base_buf *msg) {
    (void)n;
    return f_hum(st, a, ret, msg, rules_humanize);
}
static int f_humanize1024(tt_state *st, tt_val *a, size_t n, tt_val *ret, base_buf *msg) {
    (void)n;
    return f_hum(st, a, ret, msg, rules_humanize1024);
}
static int f_humanizeduration(tt_state *st, tt_val *a, size_t n, tt_val *ret, base_buf *msg) {
    (void)n;
    return f_hum(st, a, ret, msg, rules_humanize_duration);
}
static int f_humanizepercentage(tt_state *st, tt_val *a, size_t n, tt_val *ret, base_buf *msg) {
    (void)n;
    return f_hum(st, a, ret, msg, rules_humanize_percentage);
}

/* floatToTime: ms, or -1 with the error (NaN/Inf: 1 without text). */
static int float_to_time(double v, int64_t *ms, base_buf *msg) {
    if (isnan(v) || isinf(v)) return 1;
    double ts = v * 1e9;
    if (ts >= 9223372036854775808.0 || ts < -9223372036854775808.0) {
        rules__tt_print_val(msg, &(tt_val){.k = TK_FLOAT, .f = v});
        base_buf_puts(msg, " cannot be represented as a nanoseconds timestamp since it overflows int64");
        return -1;
    }
    *ms = (int64_t)ts / 1000000;
    return 0;
}

static int f_humanizetimestamp(tt_state *st, tt_val *a, size_t n, tt_val *ret, base_buf *msg) {
    (void)n;
    double v;
    if (to_float(&a[0], &v, msg)) return -1;
    int64_t ms;
    int rc = float_to_time(v, &ms, msg);
    if (rc < 0) return -1;
    base_buf o = BASE_BUF_INIT;
    if (rc == 1)
        rules__tt_g4(&o, v);
    else
        rules__tt_time_string(&o, ms);
    return buf_to_val(st, &o, TK_STRING, ret);
}

static int f_totime(tt_state *st, tt_val *a, size_t n, tt_val *ret, base_buf *msg) {
    (void)st, (void)n;
    double v;
    if (to_float(&a[0], &v, msg)) return -1;
    int64_t ms;
    int rc = float_to_time(v, &ms, msg);
    if (rc == 1) base_buf_puts(msg, "value is NaN or Inf");
    if (rc) return -1;
    *ret = (tt_val){.k = TK_TIME, .i = ms};
    return 0;
}

/* The URL's path: after scheme://authority, up to ? or #. */
static int f_pathprefix(tt_state *st, tt_val *a, size_t n, tt_val *ret, base_buf *msg) {
    (void)a, (void)n, (void)msg;
    const char *u = st->d->external_url ? st->d->external_url : "";
    const char *p = strstr(u, "://");
    p = p ? strchr(p + 3, '/') : (u[0] == '/' ? u : NULL);
    if (!p) {
        *ret = v_str("", 0);
        return 0;
    }
    size_t len = strcspn(p, "?#");
    *ret = v_str(p, len);
    return 0;
}

static int f_externalurl(tt_state *st, tt_val *a, size_t n, tt_val *ret, base_buf *msg) {
    (void)a, (void)n, (void)msg;
    const char *u = st->d->external_url ? st->d->external_url : "";
    *ret = v_str(u, strlen(u));
    return 0;
}

/* model.ParseDuration (prometheus/common 0.39). */
static int f_parseduration(tt_state *st, tt_val *a, size_t n, tt_val *ret, base_buf *msg) {
    (void)st, (void)n;
    base_str s = a[0].s;
    static const struct {
        const char *u;
        int64_t ms;
    } units[] = {{"y", 365LL * 86400000},
                 {"w", 7LL * 86400000},
                 {"d", 86400000},
                 {"h", 3600000},
                 {"m", 60000},
                 {"s", 1000},
                 {"ms", 1}};
    if (s.n == 1 && s.p[0] == '0') {
        *ret = v_float(0);
        return 0;
    }
    size_t k = 0, next_unit = 0;
    int64_t total = 0;
    int overflow = 0;
    if (s.n == 0) goto bad;
    while (k < s.n) {
        size_t ds = k;
        while (k < s.n && s.p[k] >= '0' && s.p[k] <= '9') k++;
        if (k == ds) goto bad;
        size_t us = k;
        while (k < s.n && s.p[k] >= 'a' && s.p[k] <= 'z') k++;
        base_str u = {s.p + us, k - us};
        size_t ui = next_unit;
        while (ui < 7 && !base_str_eqc(u, units[ui].u)) ui++;
        if (ui == 7) goto bad;
        next_unit = ui + 1;
        uint64_t num;
        if (base_parse_u64(s.p + ds, us - ds, &num) || num > (uint64_t)(INT64_MAX / 1000000 / units[ui].ms))
            overflow = 1;
        else {
            total += (int64_t)num * units[ui].ms;
            if (total > INT64_MAX / 1000000) overflow = 1;
        }
    }
    if (overflow) {
        base_buf_puts(msg, "duration out of range");
        return -1;
    }
    *ret = v_float((double)(total * 1000000) / 1e9);
    return 0;
bad:
    base_buf_puts(msg, "not a valid duration string: ");
    labels_quote(msg, s);
    return -1;
}

/* net.SplitHostPort: 0 and host/port views, or -1. */
static int split_host_port(base_str hp, base_str *host, base_str *port) {
    const char *c = NULL;
    for (size_t k = hp.n; k-- > 0;)
        if (hp.p[k] == ':') {
            c = hp.p + k;
            break;
        }
    if (!c) return -1;
    size_t i = (size_t)(c - hp.p), j = 0, kk = 0;
    if (hp.p[0] == '[') {
        const char *e = memchr(hp.p, ']', hp.n);
        if (!e) return -1;
        size_t end = (size_t)(e - hp.p);
        if (end + 1 != i) return -1;
        *host = (base_str){hp.p + 1, end - 1};
        j = 1, kk = end + 1;
    } else {
        *host = (base_str){hp.p, i};
        if (memchr(hp.p, ':', i)) return -1;
    }
    if (memchr(hp.p + j, '[', hp.n - j)) return -1;
    if (memchr(hp.p + kk, ']', hp.n - kk)) return -1;
    *port = (base_str){hp.p + i + 1, hp.n - i - 1};
    return 0;
}

static int f_stripport(tt_state *st, tt_val *a, size_t n, tt_val *ret, base_buf *msg) {
    (void)st, (void)n, (void)msg;
    base_str h, p;
    if (split_host_port(a[0].s, &h, &p))
        *ret = a[0];
    else
        *ret = v_str(h.p, h.n);
    return 0;
}

#include <arpa/inet.h>

static int parse_ip(base_str s) {
    char tmp[64];
    unsigned char addr[16];
    if (s.n == 0 || s.n >= sizeof tmp) return 0;
    memcpy(tmp, s.p, s.n);
    tmp[s.n] = 0;
    return inet_pton(AF_INET, tmp, addr) == 1 || inet_pton(AF_INET6, tmp, addr) == 1;
}

static int f_stripdomain(tt_state *st, tt_val *a, size_t n, tt_val *ret, base_buf *msg) {
    (void)n, (void)msg;
    base_str h, p = {"", 0};
    if (split_host_port(a[0].s, &h, &p)) {
        h = a[0].s;
        p = (base_str){"", 0};
    }
    if (parse_ip(h)) {
        *ret = a[0];
        return 0;
    }
    const char *dot = h.n ? memchr(h.p, '.', h.n) : NULL;
    if (dot) h.n = (size_t)(dot - h.p);
    if (p.n == 0) {
        *ret = v_str(h.p, h.n);
        return 0;
    }
    base_buf o = BASE_BUF_INIT;
    int v6 = memchr(h.p, ':', h.n) != NULL;
    if (v6) base_buf_putc(&o, '[');
    base_buf_append(&o, h.p, h.n);
    if (v6) base_buf_putc(&o, ']');
    base_buf_putc(&o, ':');
    base_buf_append(&o, p.p, p.n);
    return buf_to_val(st, &o, TK_STRING, ret);
}
