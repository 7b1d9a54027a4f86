/* relabel.h -- Prometheus 2.42's relabeling: rules and their application.
 *
 * A relabel_rule is one entry of `relabel_configs`, `metric_relabel_configs`,
 * `write_relabel_configs` or `alert_relabel_configs`. The config loader
 * fills the raw fields (strings it owns, malloc'd), then calls
 * relabel_rule_validate(), which applies Prometheus's defaults to unset
 * fields, checks the rule as model/relabel.Config.Validate and
 * UnmarshalYAML do (same words in the messages) and compiles the regex
 * (RE2 syntax, fully anchored, through labels_regex with capture groups).
 *
 * relabel_process() applies rules in order to a label builder, exactly as
 * relabel.ProcessBuilder in 2.42: every action (replace, keep, drop,
 * keepequal, dropequal, hashmod, labelmap, labeldrop, labelkeep, lowercase,
 * uppercase), `${1}`/`$name` expansion, the hashmod of md5 as Prometheus
 * computes it, an empty replacement result deleting the target label.
 *
 * Thread-safety: a validated rule is immutable; relabel_process may run on
 * many threads at once over the same rules (each with its own builder).
 */
#ifndef KELVIN_RELABEL_RELABEL_H
#define KELVIN_RELABEL_RELABEL_H

#include <stddef.h>
#include <stdint.h>

#include "labels/labels.h"

typedef enum relabel_action {
    RELABEL_REPLACE = 0,
    RELABEL_KEEP,
    RELABEL_DROP,
    RELABEL_KEEPEQUAL,
    RELABEL_DROPEQUAL,
    RELABEL_HASHMOD,
    RELABEL_LABELMAP,
    RELABEL_LABELDROP,
    RELABEL_LABELKEEP,
    RELABEL_LOWERCASE,
    RELABEL_UPPERCASE,
} relabel_action;

typedef struct relabel_rule {
    /* raw fields, as the config gave them (NULL / 0 / unset = default) */
    char **source_labels; /* malloc'd array of malloc'd strings */
    size_t nsource;
    char *separator;    /* NULL: ";" */
    char *target_label; /* NULL: "" */
    char *regex;        /* NULL: "(.*)" */
    char *replacement;  /* NULL: "$1" */
    uint64_t modulus;
    relabel_action action; /* default RELABEL_REPLACE */
    int has_separator, has_regex, has_replacement;
    int line; /* where the rule began in its file (1-based), 0 if unknown */
    /* set by relabel_rule_validate */
    labels_regex *re;
} relabel_rule;

/* The action's name as written in YAML ("replace", "labelmap", ...). */
const char *relabel_action_name(relabel_action a);
/* Parses an action name, case-insensitively as 2.42 does. 0 or
 * BASE_E_INVAL with `unknown relabel action "foo"` in err. */
int relabel_action_parse(const char *s, relabel_action *ret, char *err, size_t errlen);

/* Zeroes a rule (all defaults). */
void relabel_rule_init(relabel_rule *r);
/* Applies defaults, checks and compiles. 0 or BASE_E_INVAL with
 * Prometheus's message in err (e.g. `relabel configuration for replace
 * action requires 'target_label' value`). */
int relabel_rule_validate(relabel_rule *r, char *err, size_t errlen);
/* Frees everything the rule owns and zeroes it. */
void relabel_rule_clear(relabel_rule *r);
/* Deep copy of a validated rule (dst gets its own strings and regex). */
int relabel_rule_copy(relabel_rule *dst, const relabel_rule *src, char *err, size_t errlen);
/* Whether two rules are the same configuration (for config reloads). */
int relabel_rule_equal(const relabel_rule *a, const relabel_rule *b);

/* Applies validated rules in order to b. Returns 1 if the label set is
 * kept, 0 if a rule dropped it (b's contents are then unspecified), or a
 * negative BASE_E_* (BASE_E_NOMEM). */
int relabel_process(const relabel_rule *rules, size_t n, labels_builder *b);

#endif
