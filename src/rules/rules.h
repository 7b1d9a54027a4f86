/* rules.h -- Prometheus rule files (2.42's pkg/rulefmt): groups of
 * recording and alerting rules, read and checked as Prometheus reads and
 * checks them, for `kelvin check rules`, `kelvin check config` and (later)
 * the rule evaluator.
 *
 * A rule file is YAML:
 *   groups:
 *     - name: NAME            (required, unique in the file)
 *       interval: DURATION    (optional; 0 = the config's evaluation_interval)
 *       limit: N              (optional; 0 = no limit; 2.42 takes any int)
 *       rules:
 *         - record: NAME      (a valid metric name)   | - alert: NAME
 *           expr: PROMQL                              |   expr: PROMQL
 *           labels: {k: v}                            |   for: DURATION
 *                                                     |   keep_firing_for: DURATION
 *                                                     |   labels: {k: v}
 *                                                     |   annotations: {k: v}
 * The YAML is read as 2.42's yaml.v3 reads it (not yaml.v2 as for
 * prometheus.yml): "yes" is a string, only the first document counts.
 * Unknown fields are errors (2.42 decodes with KnownFields). Every error is
 * collected, not only the first, with 2.42's words and positions, each
 * message exactly as promtool prints it, file name first, e.g.
 *   r.yml: 6:15: group "g", rule 2, "x": could not parse expression: 1:5: parse error: ...
 *   r.yml: yaml: unmarshal errors:\n  line 3: field foo not found in type rulefmt.RuleGroup
 * (the second kind spans lines, one per problem, as 2.42's does).
 *
 * Templates in labels and annotations are stored as text; an alert's are
 * parsed while the file is checked (template.h), as rulefmt's
 * testTemplateParsing does, and their errors are the file's.
 * Labels and annotations keep file order (2.42 holds Go maps, so the order
 * of its label errors varies from run to run).
 *
 * Ownership: rules_file_load returns a rules_file the caller frees with
 * rules_file_free; every string in it is owned by it. Limits: a file over
 * RULES_FILE_MAX bytes is refused.
 */
#ifndef KELVIN_RULES_RULES_H
#define KELVIN_RULES_RULES_H

#include <stddef.h>
#include <stdint.h>

#include "promql/promql.h"

#define RULES_FILE_MAX ((size_t)64 << 20)

typedef struct rules_kv {
    char *name, *value;
} rules_kv;

typedef enum { RULES_RECORD = 1, RULES_ALERT = 2 } rules_kind;

typedef struct rules_rule {
    rules_kind kind;
    char *name;                 /* record: the metric name; alert: the alert name */
    char *expr;                 /* the expression's text as written */
    pq_expr *parsed;            /* the parsed expression (promql_parse) */
    int64_t for_ms;             /* alert only */
    int64_t keep_firing_for_ms; /* alert only */
    rules_kv *labels;           /* in file order */
    size_t nlabels;
    rules_kv *annotations; /* alert only, in file order */
    size_t nannotations;
    int line; /* of the rule's first key, 1-based */
} rules_rule;

typedef struct rules_group {
    char *name;
    int64_t interval_ms; /* 0: not set */
    int64_t limit;       /* 0: no limit */
    rules_rule *rules;
    size_t nrules;
    int line;
} rules_group;

typedef struct rules_file {
    char *path;
    rules_group *groups;
    size_t ngroups;
} rules_file;

/* One problem found in a file: its 2.42 text, "NAME: " first, and the
 * 1-based line it is about: the line 2.42's message names, else the rule's
 * for rule errors 2.42 gives no position (labels), else 0. */
typedef struct rules_error {
    char *msg;
    int line;
} rules_error;

typedef struct rules_errors {
    rules_error *e;
    size_t n;
} rules_errors;

/* Reads and checks a rule file. 0 and *ret when it is valid; otherwise
 * BASE_E_INVAL (rules or fields are wrong: every problem in *errs, at most
 * 1000 and then a count of the rest), BASE_E_PARSE (not YAML: the syntax
 * error twice, as 2.42's two decoders both report it), BASE_E_IO (the
 * file can't be read: one entry, "NAME: open NAME: ..."), BASE_E_LIMIT
 * (over RULES_FILE_MAX bytes, or the YAML tree's limits: nesting, nodes)
 * or BASE_E_NOMEM. Aliases expanded beyond bounds are 2.42's own
 * "yaml: document contains excessive aliasing" (BASE_E_INVAL). errs may be NULL; otherwise it is always
 * filled (empty on success) and the caller frees it with
 * rules_errors_free. */
int rules_file_load(const char *path, rules_file **ret, rules_errors *errs);
/* The same from a buffer; name is used in messages and becomes f->path. */
int rules_file_load_buf(const char *buf, size_t len, const char *name, rules_file **ret, rules_errors *errs);
void rules_file_free(rules_file *f);
void rules_errors_free(rules_errors *errs);

/* The rules in a file (all groups). */
size_t rules_file_count(const rules_file *f);

#endif
