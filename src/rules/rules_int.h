/* rules_int.h -- the rules module's insides: gopkg.in/yaml.v3's reading of
 * scalars (2.42's rulefmt decodes with yaml.v3, not with the yaml.v2 of
 * prometheus.yml), and its syntax error messages.
 *
 * yaml.v3 differs from v2 where rule files can see it: only true/false
 * (True, TRUE, ...) are booleans ("yes" and "on" are strings); a plain
 * 2001-12-14 is a !!timestamp; parse errors read "yaml: line N: what" with
 * N taken from libyaml's context mark first (0-based for parser errors,
 * 1-based for scanner errors).
 */
#ifndef KELVIN_RULES_RULES_INT_H
#define KELVIN_RULES_RULES_INT_H

#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "config/yaml.h"

typedef enum {
    RULES__V_NULL = 1,
    RULES__V_BOOL,
    RULES__V_INT,
    RULES__V_FLOAT,
    RULES__V_STR,
    RULES__V_TIMESTAMP,
    RULES__V_BINARY, /* explicit !!binary: base64 text */
    RULES__V_OTHER,  /* a tag yaml.v3 does not resolve (!!merge, !foo): the text */
    RULES__V_BAD     /* an explicit tag the text does not fit: "cannot decode ..." */
} rules__vkind;

/* A scalar as yaml.v3's decoder sees it. */
typedef struct rules__scalar {
    rules__vkind kind;
    char tag[96];  /* the node's tag as yaml.v3 prints it: "!!int", "!!str", "!foo" */
    char rtag[16]; /* RULES__V_BAD: what the text resolves to ("!!str") */
    int64_t i;     /* INT that fits int64 */
    uint64_t u;    /* INT above INT64_MAX (is_u) */
    int is_u;
    double f; /* FLOAT */
} rules__scalar;

/* Resolves scalar node n (n->kind == CFG_Y_SCALAR). */
void rules__resolve(const cfg_ynode *n, rules__scalar *ret);

/* The tag yaml.v3 names node n by in "cannot unmarshal": "!!seq",
 * "!!map", or a scalar's tag. */
void rules__node_tag(const cfg_ynode *n, char *out, size_t outlen);

/* Whether n is a `<<` merge key. */
int rules__is_merge(const cfg_ynode *n);

/* Go's base64.StdEncoding.DecodeString (\r and \n ignored) into out
 * (at least len bytes). The decoded length, or -1 if s is not base64. */
long rules__base64(const char *s, size_t len, char *out);

/* yaml.v3's message for the first syntax problem of buf's first
 * document, as "yaml: line N: what" (or "yaml: what" without a line),
 * appended to msg; *ret_line is the 1-based line of the problem. 0, or -1
 * when libyaml finds no problem. Anchors are followed as yaml.v3 does:
 * "yaml: unknown anchor 'x' referenced". */
int rules__syntax_error(const char *buf, size_t len, base_buf *msg, int *ret_line);

#endif
