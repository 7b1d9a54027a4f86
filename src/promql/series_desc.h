/* series_desc.h -- Prometheus 2.42's series descriptions, the notation of
 * promtool's rule unit tests and of PromQL's test scripts
 * (promql/parser.ParseSeriesDesc), and parser.ParseMetric.
 *
 * A series description is a metric followed by values, separated by
 * blanks:
 *   up{job="a"} 1 2 _ 3+2x4 stale _x3 -1-1x2 Inf
 * each item being
 *   N           one value (a number as PromQL reads it: 10, 0.5, 1e3,
 *               010 (octal, as Go's ParseInt with base 0), Inf, NaN,
 *               with a sign: -1, +Inf)
 *   stale       a stale marker (the NaN 0x7ff0000000000002)
 *   _           no value at this step
 *   _xN         N steps without a value
 *   NxM         M+1 values N
 *   N+DxM       M+1 values N, N+D, N+2D, ... (each the previous plus D,
 *   N-DxM       added as Go adds them, so the float rounding is the same)
 * The metric is `name`, `name{labels}` or `{labels}`; the name may be
 * a word PromQL reserves (sum, by, offset, ...) as 2.42's grammar allows.
 *
 * Errors are 2.42's ParseErr texts, the first error only, positioned in
 * the description as Go positions them: "LINE:COL: parse error: MSG" with
 * LINE = line_offset + 1 (the load command's line, as promql/test.go's
 * parseSeries sets it) and COL the 1-based byte column, e.g.
 *   1:17: parse error: unexpected identifier "foo" in series values, expected number or "stale"
 *   1:19: parse error: unexpected <op:-> in series values
 *   1:19: parse error: unexpected "x"
 * (the words depend on where 2.42's yacc parser notices the error: within
 * an item, "in series values"; between items, only the token; they are
 * reproduced by walking the same states).
 *
 * Limits: a description over PQ_MAX_QUERY bytes is refused, and one that
 * expands to more than PROMQL_SERIES_DESC_MAX_VALUES values fails with
 * "too many values in series description (more than N)" (2.42 tries to
 * allocate them).
 *
 * Ownership: the caller frees a description with
 * promql_series_desc_free and a metric with promql_metric_desc_free.
 */
#ifndef KELVIN_PROMQL_SERIES_DESC_H
#define KELVIN_PROMQL_SERIES_DESC_H

#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "labels/labels.h"

#define PROMQL_SERIES_DESC_MAX_VALUES ((size_t)1 << 22)

typedef struct promql_seq_value {
    double v;
    int omitted; /* `_`: no sample at this step */
} promql_seq_value;

/* A metric's labels as Go keeps them: sorted by name (labels.New), a
 * name may repeat and a value may be empty, which a labels_set would not
 * hold. */
typedef struct promql_metric_desc {
    char **names, **values;
    size_t n;
} promql_metric_desc;

typedef struct promql_series_desc {
    promql_metric_desc metric;
    /* The series' labels without empty values (a reference), or NULL when
     * a name repeats (2.42 parses that and fails each append). */
    labels_set *ls;
    promql_seq_value *vals;
    size_t n;
} promql_series_desc;

/* Parses s[0..n). 0 and *ret, or BASE_E_PARSE with the message appended
 * to msg, BASE_E_LIMIT (too long, too many values; message in msg),
 * BASE_E_NOMEM. */
int promql_parse_series_desc(const char *s, size_t n, int line_offset, promql_series_desc *ret,
                             base_buf *msg);
void promql_series_desc_free(promql_series_desc *d);

/* parser.ParseMetric: `name`, `name{labels}` or `{labels}`, nothing else. */

int promql_parse_metric(const char *s, size_t n, promql_metric_desc *ret, base_buf *msg);
void promql_metric_desc_free(promql_metric_desc *m);

#endif
