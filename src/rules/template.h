/* template.h -- the Go text/template language as Prometheus 2.42's rule
 * labels and annotations use it (template/template.go's Expander): parse
 * once, execute per alert with the alert's labels, value and the config's
 * external labels.
 *
 * The language: text and actions {{ ... }} with trim markers ({{- -}}),
 * comments, pipelines with |, variables ($, $x := ..., $x = ...),
 * fields of maps (.Labels.x, $labels.x, index), if/else if/else/end,
 * range (over query results and maps in key order, with $i, $v :=, else,
 * break, continue), with; define/template/block are not supported (a
 * parse error "{{define}} is not supported"; rule templates never need
 * them);
 * literals (strings with Go escapes, raw strings, numbers, true/false,
 * nil), parenthesised pipelines, and the built-ins Prometheus's rules see:
 * and, or, not, len, index, print, printf, println, eq, ne, lt, le, gt, ge,
 * html, js, urlquery, slice, call; Prometheus's functions: query, first, label, value,
 * strvalue, args, reReplaceAll, safeHtml, match, title, toUpper, toLower,
 * graphLink, tableLink, sortByLabel, humanize, humanize1024,
 * humanizeDuration, humanizePercentage, humanizeTimestamp,
 * toTime, pathPrefix, externalURL, parseDuration, stripPort, stripDomain.
 * Go's fmt verbs for printf (%s %d %f %g %e %v %q %x with widths, precisions
 * and flags) and Go's value printing ({{ $value }} of a float is
 * strconv.FormatFloat(v, 'g', -1, 64) as fmt's %v prints it).
 *
 * The data, as 2.42's rule manager builds it: the template text is
 * prefixed with
 *   {{$labels := .Labels}}{{$externalLabels := .ExternalLabels}}
 *   {{$externalURL := .ExternalURL}}{{$value := .Value}}
 * and executed with .Labels (map), .ExternalLabels (map), .ExternalURL
 * (string), .Value (float64). As 2.42's expander, missingkey=zero: a
 * missing label prints as "" (a missing args key as "<no value>").
 * Error texts are Go's ("template: __alert_NAME:1:12: executing
 * \"__alert_NAME\" at <...>: ..."); the rule manager wraps them as 2.42
 * does ("<error expanding template: error executing template NAME: ...>").
 * Known differences: title and toUpper/toLower change the case of ASCII
 * letters only; methods of values ((toTime x).Unix) are not callable.
 *
 * query: the callback runs an instant PromQL query at the alert's
 * evaluation time and returns its samples (labels + value); the
 * expander sorts nothing unless sortByLabel is used, as Go.
 *
 * Ownership: a rules_tmpl owns its parse tree; execution writes into the
 * caller's base_buf. Limits: a template over RULES_TMPL_MAX bytes, a
 * nesting over 100 levels, or an execution writing more than
 * RULES_TMPL_OUT_MAX bytes or running more than RULES_TMPL_STEPS steps
 * fails with an error instead of running away.
 */
#ifndef KELVIN_RULES_TEMPLATE_H
#define KELVIN_RULES_TEMPLATE_H

#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "labels/labels.h"

#define RULES_TMPL_MAX     ((size_t)1 << 20)
#define RULES_TMPL_OUT_MAX ((size_t)4 << 20)
#define RULES_TMPL_STEPS   1000000u

typedef struct rules_tmpl rules_tmpl;

/* One sample of a query's answer, as the template functions see it. */
typedef struct rules_tmpl_sample {
    labels_set *ls; /* a reference the caller of the callback takes over */
    double v;
} rules_tmpl_sample;

/* Runs an instant query for the `query` function. Returns 0 and *ret (an
 * array of n samples, malloc'd; the expander frees it and unrefs the
 * labels), or < 0 with the error's text in err (the template fails with
 * it, as 2.42's does: "error calling query: <err>"). Without a callback
 * query fails with "no query engine". */
typedef int (*rules_tmpl_query_fn)(void *ctx, const char *expr, int64_t t_ms, rules_tmpl_sample **ret,
                                   size_t *n, char *err, size_t errlen);

typedef struct rules_tmpl_data {
    const labels_set *labels;          /* the alert's labels */
    const labels_set *external_labels; /* may be NULL (empty) */
    const char *external_url;          /* may be NULL ("") */
    double value;
    int64_t t_ms; /* evaluation time (query, humanizeTimestamp of now) */
    rules_tmpl_query_fn query;
    void *query_ctx;
} rules_tmpl_data;

/* The variables 2.42's rule manager puts before every label and
 * annotation template (no newline: line numbers are the text's own). */
#define RULES_TMPL_PREFIX                                                                                    \
    "{{$labels := .Labels}}{{$externalLabels := .ExternalLabels}}{{$externalURL := .ExternalURL}}{{$value "  \
    ":= "                                                                                                    \
    ".Value}}"

/* Parses text as 2.42 does for a rule (name: "__alert_" + alert name for
 * annotations and labels, as the rule manager names them; the caller
 * adds the variable prefix above). 0 and *ret, or BASE_E_PARSE with Go's
 * message in err ("template: NAME:LINE: ..."), BASE_E_LIMIT (text over
 * RULES_TMPL_MAX), BASE_E_NOMEM. The template is immutable: executions
 * may run concurrently. */
int rules_tmpl_parse(const char *name, const char *text, size_t len, rules_tmpl **ret, char *err,
                     size_t errlen);
/* Executes into out (appends). 0, or < 0 with Go's message in err (the
 * output may hold what was written before the failure, as Go's does):
 * BASE_E_INVAL (a template error), BASE_E_LIMIT (output, steps or
 * depth), BASE_E_NOMEM. */
int rules_tmpl_exec(const rules_tmpl *t, const rules_tmpl_data *data, base_buf *out, char *err,
                    size_t errlen);
void rules_tmpl_free(rules_tmpl *t);

/* Prometheus's humanize functions, for callers outside templates too:
 * humanize (SI prefixes), humanize1024, humanizeDuration (seconds),
 * humanizePercentage (ratio), humanizeTimestamp (Unix seconds, UTC). */
void rules_humanize(base_buf *out, double v);
void rules_humanize1024(base_buf *out, double v);
void rules_humanize_duration(base_buf *out, double seconds);
void rules_humanize_percentage(base_buf *out, double ratio);
void rules_humanize_timestamp(base_buf *out, double unix_seconds);

#endif
