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
 *
 * Lifetimes: a builder stores views, so the strings relabel_process sets
 * in it point either into the rules (target labels, literal replacements;
 * keep the rules alive until the builder is finished) or into a per-thread
 * scratch area. The scratch strings stay valid until the same thread calls
 * relabel_process with a builder that no longer holds any of them (so
 * chaining several relabel_process calls on one builder is fine; relabel
 * b1, then b2, then finish b1 is not) or relabel_thread_cleanup(). The
 * common path (keep/drop, replace with a literal or "$1" over one source
 * label) allocates nothing; scratch memory is reused across calls.
 *
 * Known differences from 2.42: lowercase/uppercase also require a target
 * that is a valid label name (2.42 accepts `${1}` there and then produces
 * an invalid label); lowercase/uppercase map non-ASCII letters with glibc's
 * C.UTF-8 tables (Unicode 14/15) rather than Go's (Unicode 13).
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
    /* set by relabel_rule_validate: the compiled regex and the effective
     * values (views of the fields above or of static defaults) */
    labels_regex *re;
    base_str eff_separator, eff_regex, eff_replacement, eff_target;
    unsigned eff_flags; /* internal (RELABEL__F_* in relabel_int.h) */
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
 * action requires 'target_label' value`, or the regex parser's `error
 * parsing regexp: ...`); BASE_E_LIMIT / BASE_E_NOMEM from the regex
 * compiler. The raw fields are left as they are (defaults go to eff_*);
 * validating again recompiles. On error r->re is NULL. */
int relabel_rule_validate(relabel_rule *r, char *err, size_t errlen);
/* Frees everything the rule owns and zeroes it. */
void relabel_rule_clear(relabel_rule *r);
/* Deep copy of a rule (dst gets its own strings; a validated src gives a
 * validated dst with its own regex). dst is overwritten (not cleared
 * first); on error dst is left zeroed. 0, BASE_E_NOMEM, or the errors of
 * relabel_rule_validate. */
int relabel_rule_copy(relabel_rule *dst, const relabel_rule *src, char *err, size_t errlen);
/* Whether two rules are the same configuration (for config reloads):
 * action, source labels, modulus and the effective separator, regex,
 * replacement and target (an explicit ";" equals the default). `line` and
 * the has_* flags are ignored. Works on unvalidated rules too. */
int relabel_rule_equal(const relabel_rule *a, const relabel_rule *b);

/* Applies validated rules in order to b. Returns 1 if the label set is
 * kept, 0 if a rule dropped it (b's contents are then unspecified), or a
 * negative BASE_E_*: BASE_E_NOMEM, BASE_E_LIMIT (a joined source value or
 * an expansion longer than LABELS_STRING_MAX), or a regex matching failure
 * (see labels_regex_match). See "Lifetimes" above for the strings it
 * stores in b. */
int relabel_process(const relabel_rule *rules, size_t n, labels_builder *b);

/* Frees this thread's scratch memory now (also freed at thread exit).
 * Strings relabel_process stored in builders on this thread become
 * invalid. */
void relabel_thread_cleanup(void);

#endif
