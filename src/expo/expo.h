/* expo.h -- the exposition formats: a metric set to write, and its writers.
 *
 * An expo_mset is one collector's view of its metrics at one moment:
 * families (name, type, help, unit) in insertion order, each with its
 * samples in insertion order. It is format-neutral; expo_write() renders
 * any number of sets as Prometheus text 0.0.4 or OpenMetrics 1.0.
 *
 * Memory: every family and sample lives in the set's arena and dies with
 * expo_mset_reset()/expo_mset_free(). Strings passed in (names, help,
 * labels) are NOT copied: they must outlive the set. Static catalog
 * strings and strings made with expo_mset_strdup()/expo_mset_labels() do.
 * Errors are sticky (ms->err): check once after building.
 *
 * Labels are carried pre-rendered and pre-escaped, without braces:
 * `gpu="0",UUID="GPU-..."`. A sample has two parts, `labels` (usually
 * shared by many samples, rendered once) and `extra` (sample-specific),
 * joined with a comma; either may be NULL or "". The writer does not
 * check label names or duplicates: builders must.
 *
 * OpenMetrics rendering keeps every sample name identical to the text
 * format, so dashboards see the same series in both: a counter whose name
 * ends in `_total` is typed `counter` under its base name; a counter whose
 * name does not (dcgm-exporter has several) is typed `unknown`, because
 * OpenMetrics would otherwise rename its samples to `<name>_total`.
 */
#ifndef KELVIN_EXPO_EXPO_H
#define KELVIN_EXPO_EXPO_H

#include <stddef.h>
#include <stdint.h>

#include "base/arena.h"
#include "base/buf.h"

typedef enum {
    EXPO_UNTYPED = 0, /* "untyped" in text, "unknown" in OpenMetrics */
    EXPO_COUNTER,
    EXPO_GAUGE,
    EXPO_HISTOGRAM,
    EXPO_SUMMARY,
    EXPO_INFO,
    EXPO_STATESET,
    EXPO_GAUGEHISTOGRAM,
} expo_type;

typedef enum { EXPO_FMT_TEXT = 0, EXPO_FMT_OPENMETRICS = 1 } expo_format;

#define EXPO_NO_TS INT64_MIN

#define EXPO_CT_TEXT        "text/plain; version=0.0.4; charset=utf-8"
#define EXPO_CT_OPENMETRICS "application/openmetrics-text; version=1.0.0; charset=utf-8"

typedef struct expo_sample {
    struct expo_sample *next;
    const char *suffix; /* appended to the family name: "", "_bucket", ... */
    const char *labels; /* pre-escaped, may be NULL */
    const char *extra;  /* pre-escaped, may be NULL */
    double value;
    int64_t ts_ms; /* EXPO_NO_TS for none */
} expo_sample;

typedef struct expo_family {
    struct expo_family *next;
    const char *name;
    const char *help; /* NULL: no HELP line */
    const char *unit; /* NULL or "": no UNIT line */
    expo_type type;
    expo_sample *head, *tail;
    size_t nsamples;
} expo_family;

typedef struct expo_mset {
    base_arena arena;
    expo_family *head, *tail;
    size_t nfamilies, nsamples;
    int err;
} expo_mset;

void expo_mset_init(expo_mset *ms);
/* Drops every family and sample, keeps the arena's memory. */
void expo_mset_reset(expo_mset *ms);
void expo_mset_free(expo_mset *ms);

/* Starts a family; NULL on allocation failure (ms->err is set).
 * name/help/unit must outlive the set (see above). */
expo_family *expo_mset_family(expo_mset *ms, const char *name, expo_type type, const char *help,
                              const char *unit);
/* Appends a sample to f. */
void expo_mset_add(expo_mset *ms, expo_family *f, const char *suffix, const char *labels, const char *extra,
                   double value);
void expo_mset_add_ts(expo_mset *ms, expo_family *f, const char *suffix, const char *labels,
                      const char *extra, double value, int64_t ts_ms);

/* Copies s into the set's arena. */
char *expo_mset_strdup(expo_mset *ms, const char *s);
/* Renders name/value pairs (NULL-terminated list of const char *) as an
 * escaped label string in the set's arena: expo_mset_labels(ms, "cpu",
 * "0", "mode", "idle", NULL) -> `cpu="0",mode="idle"`. */
char *expo_mset_labels(expo_mset *ms, ...) __attribute__((sentinel));

/* Appends `name="value"` (value escaped: \\ \" \n) to b, preceded by a
 * comma when b is not empty. */
void expo_label_append(base_buf *b, const char *name, const char *value);
void expo_label_append_n(base_buf *b, const char *name, const char *value, size_t value_len);

/* Renders the sets in order; for OpenMetrics ends with "# EOF\n".
 * Families with no samples are skipped. Returns 0 or out's sticky error. */
int expo_write(expo_mset *const *sets, size_t nsets, expo_format fmt, base_buf *out);

/* "counter", "gauge", ... as the given format spells the type. */
const char *expo_type_name(expo_type t, expo_format fmt);

#endif
