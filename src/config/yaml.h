/* yaml.h -- a bounded YAML tree built from libyaml's events, with the line
 * and column of every node, and scalar resolution as gopkg.in/yaml.v2 does
 * it. The config module decodes prometheus.yml from it; the rules module
 * decodes rule files from it (with yaml.v3's rules, its own).
 *
 * The tree is built by cfg_yaml_parse() from libyaml's event stream (not
 * yaml_parser_load) so that every limit is ours and is checked as soon as
 * it is crossed: nesting depth, node count, scalar bytes. Only the first
 * document of the stream is read. An alias is a pointer to the anchored
 * node (the tree is a DAG); decoders count every node they visit in
 * cfg_ydoc.visits and stop at CFG_YAML_MAX_VISITS, which is what defuses
 * "billion laughs" alias bombs. An alias to an anchor whose node is not
 * finished yet (a cycle) is an error, so the graph is acyclic.
 *
 * Ownership: every node and string belongs to the cfg_ydoc (one list of
 * allocations); cfg_ydoc_free() frees them all.
 */
#ifndef KELVIN_CONFIG_YAML_H
#define KELVIN_CONFIG_YAML_H

#include <stddef.h>
#include <stdint.h>

#define CFG_YAML_MAX_DEPTH  64       /* nesting of sequences and mappings */
#define CFG_YAML_MAX_NODES  1000000u /* nodes in the document */
#define CFG_YAML_MAX_VISITS 2000000u /* nodes decoded, aliases expanded */
#define CFG_YAML_MAX_MERGES 10000u   /* `<<` merges applied, aliases expanded */

typedef enum { CFG_Y_SCALAR = 1, CFG_Y_SEQ, CFG_Y_MAP } cfg_ykind;

typedef struct cfg_ynode {
    cfg_ykind kind;
    int line;                /* 1-based */
    int col;                 /* 1-based, in characters (as libyaml and yaml.v3 count) */
    int plain;               /* scalar written without quotes or block style */
    char *tag;               /* explicit tag ("tag:yaml.org,2002:str"), or NULL */
    char *val;               /* scalar text, NUL-terminated */
    size_t len;              /* scalar length */
    struct cfg_ynode **kids; /* SEQ: n items; MAP: 2n (key, value, ...) */
    size_t n;
    size_t cap;
    int done; /* the node's end event was seen (aliases need that) */
} cfg_ynode;

typedef struct cfg_ydoc {
    cfg_ynode *root; /* NULL: empty document */
    cfg_ynode **all; /* every node, for freeing */
    size_t nall, capall;
    struct cfg_yanchor *anchors;
    size_t nanchors, capanchors;
    uint64_t visits;
    uint64_t merges;
    int full; /* the node limit was reached */
} cfg_ydoc;

/* Parses buf into doc (zeroed by the caller). 0, or BASE_E_PARSE /
 * BASE_E_LIMIT / BASE_E_NOMEM with "name:line: ..." in err. doc must be
 * freed with cfg_ydoc_free() whatever the result. */
int cfg_yaml_parse(const char *buf, size_t len, const char *name, cfg_ydoc *doc, char *err, size_t errlen);
void cfg_ydoc_free(cfg_ydoc *doc);

/* Resolution of a scalar as yaml.v2 does it for plain scalars. */
typedef enum { CFG_YT_NULL = 1, CFG_YT_BOOL, CFG_YT_INT, CFG_YT_FLOAT, CFG_YT_STR, CFG_YT_MERGE } cfg_ytag;
typedef struct cfg_yresolved {
    cfg_ytag tag;
    int b;      /* BOOL */
    int64_t i;  /* INT (when it fits int64) */
    uint64_t u; /* INT, when is_u */
    int is_u;   /* INT above INT64_MAX */
    double f;   /* FLOAT (and INT, as a double) */
} cfg_yresolved;
void cfg_yaml_resolve(const cfg_ynode *n, cfg_yresolved *ret);
/* The pieces of scalar resolution that yaml.v2 and yaml.v3 share (the
 * rules module resolves rule files as v3 does with them): whether s is one
 * of list (NULL-terminated); Go's strconv.ParseInt/ParseUint with base 0
 * over s (underscores already removed) -- 0 and the sign and magnitude
 * (ret_signed: an explicit + or -; may be NULL), -1 when s is not an
 * integer or overflows uint64; and whether s has YAML's float syntax
 * ^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$. */
int cfg_yaml_one_of(const char *s, const char *const *list);
int cfg_yaml_go_int(const char *s, int *ret_neg, int *ret_signed, uint64_t *ret_mag);
int cfg_yaml_float_syntax(const char *s);
/* "!!str", "!!int", "!!map", ... as yaml.v2 names a node in messages. */
const char *cfg_yaml_short_tag(const cfg_ynode *n);

#endif
