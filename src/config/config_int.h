/* config_int.h -- the config module's insides: a YAML tree built from
 * libyaml's events, and the helpers the decoder (load.c) and the
 * comparisons (util.c) share.
 *
 * The tree is built by cfg__yaml_parse() from libyaml's event stream (not
 * yaml_parser_load) so that every limit is ours and is checked as soon as
 * it is crossed: nesting depth, node count, scalar bytes. An alias is a
 * pointer to the anchored node (the tree is a DAG); decoders count every
 * node they visit in cfg__doc.visits and stop at CFG__MAX_VISITS, which is
 * what defuses "billion laughs" alias bombs. An alias to an anchor whose
 * node is not finished yet (a cycle) is an error, so the graph is acyclic.
 *
 * Ownership: every node and string belongs to the cfg__doc (one list of
 * allocations); cfg__doc_free() frees them all.
 */
#ifndef KELVIN_CONFIG_CONFIG_INT_H
#define KELVIN_CONFIG_CONFIG_INT_H

#include <stddef.h>
#include <stdint.h>

#define CFG__MAX_FILE   (64u << 20) /* bytes of prometheus.yml */
#define CFG__MAX_DEPTH  64          /* nesting of sequences and mappings */
#define CFG__MAX_NODES  1000000u    /* nodes in the document */
#define CFG__MAX_VISITS 2000000u    /* nodes decoded, aliases expanded */
#define CFG__MAX_MERGES 10000u      /* `<<` merges applied, aliases expanded */

typedef enum { CFG__SCALAR = 1, CFG__SEQ, CFG__MAP } cfg__kind;

typedef struct cfg__node {
    cfg__kind kind;
    int line;                /* 1-based */
    int plain;               /* scalar written without quotes or block style */
    char *tag;               /* explicit tag ("tag:yaml.org,2002:str"), or NULL */
    char *val;               /* scalar text, NUL-terminated */
    size_t len;              /* scalar length */
    struct cfg__node **kids; /* SEQ: n items; MAP: 2n (key, value, ...) */
    size_t n;
    size_t cap;
    int done; /* the node's end event was seen (aliases need that) */
} cfg__node;

typedef struct cfg__doc {
    cfg__node *root; /* NULL: empty document */
    cfg__node **all; /* every node, for freeing */
    size_t nall, capall;
    struct cfg__anchor *anchors;
    size_t nanchors, capanchors;
    uint64_t visits;
    uint64_t merges;
    int full; /* the node limit was reached */
} cfg__doc;

/* Parses buf into doc (zeroed by the caller). 0, or BASE_E_PARSE /
 * BASE_E_LIMIT / BASE_E_NOMEM with "name:line: ..." in err. doc must be
 * freed with cfg__doc_free() whatever the result. */
int cfg__yaml_parse(const char *buf, size_t len, const char *name, cfg__doc *doc, char *err, size_t errlen);
void cfg__doc_free(cfg__doc *doc);

/* Resolution of a scalar as yaml.v2 does it for plain scalars. */
typedef enum { CFG__T_NULL = 1, CFG__T_BOOL, CFG__T_INT, CFG__T_FLOAT, CFG__T_STR, CFG__T_MERGE } cfg__tag;
typedef struct cfg__resolved {
    cfg__tag tag;
    int b;      /* BOOL */
    int64_t i;  /* INT (when it fits int64) */
    uint64_t u; /* INT, when is_u */
    int is_u;   /* INT above INT64_MAX */
    double f;   /* FLOAT (and INT, as a double) */
} cfg__resolved;
void cfg__resolve(const cfg__node *n, cfg__resolved *ret);
/* Whether s is one of list (NULL-terminated). */
int cfg__one_of(const char *s, const char *const *list);
/* "!!str", "!!int", "!!map", ... as yaml.v2 names a node in messages. */
const char *cfg__short_tag(const cfg__node *n);

/* Parses a size with Prometheus's units (alecthomas/units
 * ParseBase2Bytes): 0 or BASE_E_PARSE with units' message in err. */
int cfg__parse_size(const char *s, int64_t *ret, char *err, size_t errlen);

#endif
