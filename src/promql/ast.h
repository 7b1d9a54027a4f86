/* ast.h -- the syntax tree of a PromQL expression, as Prometheus 2.42's
 * parser builds it (promql/parser/ast.go), and the table of its functions.
 *
 * The parser (parse.c) builds it, the printer (print.c) writes it back as
 * Prometheus's String() does, and the evaluator (eval*.c) walks it. A tree
 * lives in one arena owned by its pq_expr (promql.h); strings in it are
 * NUL-terminated arena copies; matchers are labels_matcher objects freed
 * with the expression.
 *
 * The tree is already checked as Prometheus's checkAST does: every node
 * has its type, function arguments have the types the function wants,
 * binary operators have legal operands, and so on. Parentheses are kept
 * (PQ_PAREN) because the printer and the round trip need them.
 *
 * Positions are byte offsets into the query text, [start, end).
 */
#ifndef KELVIN_PROMQL_AST_H
#define KELVIN_PROMQL_AST_H

#include <stddef.h>
#include <stdint.h>

#include "labels/labels.h"

/* Value types, as parser.ValueType. */
typedef enum pq_type {
    PQ_T_NONE = 0,
    PQ_T_SCALAR,
    PQ_T_VECTOR,
    PQ_T_MATRIX,
    PQ_T_STRING,
} pq_type;
/* "scalar", "vector", "matrix", "string", "none" (parser.ValueType). */
const char *pq_type_name(pq_type t);
/* The names 2.42's messages use (DocumentedType): "instant vector" and
 * "range vector" for vector and matrix, else pq_type_name. */
const char *pq_type_doc(pq_type t);

typedef enum pq_node_kind {
    PQ_NUM,   /* number literal */
    PQ_STR,   /* string literal */
    PQ_VSEL,  /* instant vector selector */
    PQ_MSEL,  /* range vector selector: a PQ_VSEL and a range */
    PQ_CALL,  /* function call */
    PQ_AGG,   /* aggregation */
    PQ_BIN,   /* binary operation */
    PQ_UNARY, /* unary + or - */
    PQ_PAREN, /* ( expr ) */
    PQ_SUBQ,  /* expr[range:step] */
} pq_node_kind;

/* Binary operators. Order matters: the printer and precedence use it. */
typedef enum pq_binop {
    PQ_OP_ADD,
    PQ_OP_SUB,
    PQ_OP_MUL,
    PQ_OP_DIV,
    PQ_OP_MOD,
    PQ_OP_POW,
    PQ_OP_EQL, /* == */
    PQ_OP_NEQ, /* != */
    PQ_OP_GTR, /* >  */
    PQ_OP_LSS, /* <  */
    PQ_OP_GTE, /* >= */
    PQ_OP_LTE, /* <= */
    PQ_OP_AND,
    PQ_OP_OR,
    PQ_OP_UNLESS,
    PQ_OP_ATAN2,
} pq_binop;
const char *pq_binop_str(pq_binop op); /* "+", "==", "and", "atan2", ... */
int pq_binop_is_comparison(pq_binop op);
int pq_binop_is_set(pq_binop op); /* and, or, unless */

typedef enum pq_aggop {
    PQ_AGG_SUM,
    PQ_AGG_AVG,
    PQ_AGG_COUNT,
    PQ_AGG_MIN,
    PQ_AGG_MAX,
    PQ_AGG_GROUP,
    PQ_AGG_STDDEV,
    PQ_AGG_STDVAR,
    PQ_AGG_TOPK,         /* param: scalar k */
    PQ_AGG_BOTTOMK,      /* param: scalar k */
    PQ_AGG_COUNT_VALUES, /* param: string label name */
    PQ_AGG_QUANTILE,     /* param: scalar q */
} pq_aggop;
const char *pq_aggop_str(pq_aggop op); /* "sum", "count_values", ... */

/* Vector matching of a binary operation between two instant vectors
 * (parser.VectorMatching). */
typedef enum pq_card {
    PQ_CARD_ONE_TO_ONE,
    PQ_CARD_MANY_TO_ONE,  /* group_left */
    PQ_CARD_ONE_TO_MANY,  /* group_right */
    PQ_CARD_MANY_TO_MANY, /* set operators */
} pq_card;

typedef struct pq_vmatch {
    pq_card card;
    int on;        /* on(...) given; else ignoring(...) or nothing */
    char **labels; /* the on / ignoring list */
    size_t nlabels;
    char **include; /* group_left / group_right extra labels */
    size_t ninclude;
} pq_vmatch;

/* The @ modifier. */
typedef enum pq_at {
    PQ_AT_NONE,
    PQ_AT_TIME,  /* @ <timestamp>: at_ms */
    PQ_AT_START, /* @ start() */
    PQ_AT_END,   /* @ end() */
} pq_at;

/* ---- functions ---------------------------------------------------------- */

/* Every function of Prometheus 2.42 (promql/parser/functions.go). */
typedef enum pq_func_id {
    PQ_F_ABS,
    PQ_F_ABSENT,
    PQ_F_ABSENT_OVER_TIME,
    PQ_F_ACOS,
    PQ_F_ACOSH,
    PQ_F_ASIN,
    PQ_F_ASINH,
    PQ_F_ATAN,
    PQ_F_ATANH,
    PQ_F_AVG_OVER_TIME,
    PQ_F_CEIL,
    PQ_F_CHANGES,
    PQ_F_CLAMP,
    PQ_F_CLAMP_MAX,
    PQ_F_CLAMP_MIN,
    PQ_F_COS,
    PQ_F_COSH,
    PQ_F_COUNT_OVER_TIME,
    PQ_F_DAYS_IN_MONTH,
    PQ_F_DAY_OF_MONTH,
    PQ_F_DAY_OF_WEEK,
    PQ_F_DAY_OF_YEAR,
    PQ_F_DEG,
    PQ_F_DELTA,
    PQ_F_DERIV,
    PQ_F_EXP,
    PQ_F_FLOOR,
    PQ_F_HISTOGRAM_COUNT,
    PQ_F_HISTOGRAM_SUM,
    PQ_F_HISTOGRAM_FRACTION,
    PQ_F_HISTOGRAM_QUANTILE,
    PQ_F_HOLT_WINTERS,
    PQ_F_HOUR,
    PQ_F_IDELTA,
    PQ_F_INCREASE,
    PQ_F_IRATE,
    PQ_F_LABEL_REPLACE,
    PQ_F_LABEL_JOIN,
    PQ_F_LAST_OVER_TIME,
    PQ_F_LN,
    PQ_F_LOG10,
    PQ_F_LOG2,
    PQ_F_MAX_OVER_TIME,
    PQ_F_MIN_OVER_TIME,
    PQ_F_MINUTE,
    PQ_F_MONTH,
    PQ_F_PI,
    PQ_F_PREDICT_LINEAR,
    PQ_F_PRESENT_OVER_TIME,
    PQ_F_QUANTILE_OVER_TIME,
    PQ_F_RAD,
    PQ_F_RATE,
    PQ_F_RESETS,
    PQ_F_ROUND,
    PQ_F_SCALAR,
    PQ_F_SGN,
    PQ_F_SIN,
    PQ_F_SINH,
    PQ_F_SORT,
    PQ_F_SORT_DESC,
    PQ_F_SQRT,
    PQ_F_STDDEV_OVER_TIME,
    PQ_F_STDVAR_OVER_TIME,
    PQ_F_SUM_OVER_TIME,
    PQ_F_TAN,
    PQ_F_TANH,
    PQ_F_TIME,
    PQ_F_TIMESTAMP,
    PQ_F_VECTOR,
    PQ_F_YEAR,
    PQ_F__COUNT
} pq_func_id;

#define PQ_FUNC_MAX_ARGS 5

typedef struct pq_func {
    pq_func_id id;
    const char *name;
    pq_type args[PQ_FUNC_MAX_ARGS];
    unsigned nargs; /* len(ArgTypes) */
    int variadic;   /* as parser.Function.Variadic: 0 fixed, k up to k
                       optional trailing args of the last type, -1 any number */
    pq_type ret;
} pq_func;

/* The table, by id (pq_funcs[id].id == id), and a lookup by name (NULL
 * when there is no such function). functab.c. */
extern const pq_func pq_funcs[PQ_F__COUNT];
const pq_func *pq_func_lookup(const char *name, size_t n);

/* ---- nodes -------------------------------------------------------------- */

/* The deepest tree the parser builds (a leaf has depth 1); deeper
 * queries fail to parse, so walking a tree recursively is safe. */
#define PQ_MAX_DEPTH 1000

typedef struct pq_node pq_node;
struct pq_node {
    pq_node_kind kind;
    pq_type type; /* the node's value type */
    uint32_t pos_start, pos_end;
    uint32_t depth; /* of this subtree: 1 for a leaf, <= PQ_MAX_DEPTH */
    union {
        struct {
            double v;
        } num;
        struct {
            char *s; /* unquoted value (may hold NULs: len) */
            size_t len;
        } str;
        struct {
            char *name;          /* metric name as written before '{', or NULL */
            labels_matcher **ms; /* all matchers, the name's __name__="x" included
                                    (appended last, as Prometheus does) */
            size_t nms;
            int64_t offset_ms; /* may be negative */
            pq_at at;
            int64_t at_ms; /* PQ_AT_TIME */
        } vsel;
        struct {
            pq_node *vsel; /* PQ_VSEL: holds offset and @ */
            int64_t range_ms;
        } msel;
        struct {
            const pq_func *fn;
            pq_node **args;
            size_t nargs;
        } call;
        struct {
            pq_aggop op;
            pq_node *expr;
            pq_node *param;  /* topk/bottomk/quantile/count_values, else NULL */
            char **grouping; /* by / without labels, as written */
            size_t ngrouping;
            int without;
            int grouping_given; /* a by/without clause was written (even empty) */
        } agg;
        struct {
            pq_binop op;
            pq_node *lhs, *rhs;
            int return_bool; /* bool modifier */
            pq_vmatch *vm;   /* both sides vectors: the matching (never NULL
                                then; set operators have
                                PQ_CARD_MANY_TO_MANY); else NULL */
        } bin;
        struct {
            int neg; /* '-' (else '+') */
            pq_node *expr;
        } unary;
        struct {
            pq_node *expr;
        } paren;
        struct {
            pq_node *expr;
            int64_t range_ms;
            int64_t step_ms; /* 0: not given (the engine's default step) */
            int64_t offset_ms;
            pq_at at;
            int64_t at_ms;
        } subq;
    };
};

#endif
