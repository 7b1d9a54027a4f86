/* labels.h -- label sets, string interning and label matchers: the series
 * identity that the TSDB index, PromQL, relabeling and the scraper share.
 *
 * WHAT IS INTERNED. Every label name and value that is part of a label set
 * lives once in the process-wide intern table (labels_global()). A string
 * there has a 32-bit id (labels_sym) and a reference count; each label set
 * holds one reference per name and per value it contains. When the last
 * set that uses a string is freed (a series garbage-collected from the
 * head, a query result dropped), the string is freed at once and its id is
 * recycled. The table counts its bytes (labels_itab_stats_get) so the server
 * can report memory per series. Private tables (labels_itab_new) exist for
 * callers that want their own string pool; label sets always use the
 * global one, so ids in a set are comparable with each other.
 *
 * REPRESENTATION. A label set is one immutable allocation: an 8-byte header
 * (reference count, byte length, pair count) followed by the pairs, sorted
 * by name, each encoded as LEB128 varint(name id) varint(value id). Names
 * are few and interned early, so their ids take 1-2 bytes; values take
 * 1-4. Equality of two sets is a memcmp of the packed bytes (one table, so
 * equal strings have equal ids). Ordering, hashing, rendering and lookups
 * by name resolve ids to strings through the table's directory (three
 * dependent loads, no lock).
 *
 * MEASURED (bench/labels_bench.c, 1.2 M dcgm-exporter series of 10 labels
 * on 1000 nodes): 48 bytes per label set as malloc sizes it (8 header +
 * ~34 packed + rounding), 49 bytes per series including its share of the
 * 10 k distinct strings. A new distinct string costs ~73 bytes all-in
 * (entry with malloc header, index slot, directory slot) for a 24-byte
 * value at 1 M strings. Prometheus 2.x spends ~32 bytes per label pair
 * plus the strings, twice over for Go's GC.
 *
 * IDS. A sym stays valid (and names the same string) while some reference
 * to it is held -- e.g. while a set containing it is alive. Once the last
 * reference is dropped the id may be given to another string, so an index
 * keyed by sym must hold a reference (or a set) for as long as it keeps
 * the key.
 *
 * LIFETIMES AND OWNERSHIP.
 *  - labels_set: reference counted. Creators get one reference; labels_ref
 *    adds one, labels_unref drops one (NULL is fine). The set and every
 *    base_str view obtained from it (iteration, labels_get, metric name)
 *    stay valid while the caller holds a reference.
 *  - labels_builder: owned by its user (init/free), not thread-safe. It
 *    stores views of the strings passed to it; they must stay valid until
 *    labels_builder_finish returns. A set given to labels_builder_from is
 *    referenced by the builder until the next from/reset/free.
 *  - labels_matcher / labels_regex: owned by the creator, immutable after
 *    creation; they copy the strings they are given.
 *
 * THREAD SAFETY.
 *  - Sets are immutable and their counts atomic: share them freely.
 *  - Intern table: 64 shards chosen by the string's xxh3 hash, each a
 *    mutex-protected open-addressing index. Interning (a lookup that may
 *    insert) takes one shard lock: it happens when a series is created, not
 *    per sample, and 64 shards keep appender threads apart. Resolving an id
 *    to its string is lock-free: ids index a per-shard directory of fixed
 *    chunks that never move (a grown directory is published atomically;
 *    old copies are kept until the table is freed). Dropping a reference is
 *    a lock-free decrement unless it is the last one: the 1 -> 0 transition
 *    happens only under the shard lock, so a concurrent lookup can never
 *    find (and resurrect) a string that is being freed. No epochs needed.
 *  - Matchers and regexes: matching is thread-safe. PCRE2 match data, the
 *    JIT stack and scratch space are per thread (a pthread key frees them
 *    at thread exit; labels_thread_cleanup() frees them earlier).
 *
 * MATCHERS follow Prometheus 2.42 (labels.Matcher, FastRegexMatcher):
 * =, !=, =~, !~; regexes use Go's RE2 syntax, are fully anchored by parsing
 * "^(?:" + re + ")$" (so errors quote that string, as Prometheus does), are
 * parsed here (Go's grammar and error messages) and translated to PCRE2
 * (UTF mode, JIT when available). Semantics kept from Go: `.` does not
 * match "\n" unless (?s); `$` is end of text only; \d \s \w \b are ASCII
 * (\s is [\t\n\f\r ]); an invalid UTF-8 byte in a subject is one U+FFFD
 * character. Rejected as Go rejects them: backreferences, \C, possessive
 * and stacked quantifiers (a++ a**), lookaround, (?<name>, \Z, \e, counts
 * above 1000. Accepted: (?P<name>...), \Q..\E, \pL, \p{Greek}, [[:alpha:]],
 * flags i m s U. Known differences: (?i) combined with \p{Lu}/\p{Ll}/\p{Lt}
 * matches all cased letters; Unicode tables are PCRE2's (14.0) rather than
 * Go's (13.0). Common dashboard shapes never reach PCRE2: literals, sets
 * of literals (a|b|c), prefix/suffix/contains globs (foo.*, .*bar.*),
 * .* and .+, and concatenations/alternations of those.
 *
 * Errors: functions return 0 or a negative BASE_E_* (base/err.h); where an
 * err buffer is taken, a message for humans is written there (truncated to
 * its size, always NUL-terminated when errlen > 0).
 */
#ifndef KELVIN_LABELS_LABELS_H
#define KELVIN_LABELS_LABELS_H

#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/str.h"

/* ------------------------------------------------------------------ */
/* Limits                                                             */
/* ------------------------------------------------------------------ */

/* Longest interned string (label name or value), in bytes. */
#define LABELS_STRING_MAX ((size_t)1 << 24)
/* Most pairs in one label set. */
#define LABELS_MAX_PAIRS  4096
/* Longest regex pattern a matcher accepts, in bytes. */
#define LABELS_REGEX_MAX  ((size_t)1 << 20)

#define LABELS_METRIC_NAME "__name__"

/* ------------------------------------------------------------------ */
/* String interning                                                   */
/* ------------------------------------------------------------------ */

typedef struct labels_itab labels_itab;
typedef uint32_t labels_sym;
#define LABELS_SYM_NONE UINT32_MAX

typedef struct labels_itab_stats {
    uint64_t strings;      /* live interned strings */
    uint64_t string_bytes; /* their payload bytes */
    uint64_t bytes;        /* everything the table holds: entries (as
                              malloc sizes them, plus 8 bytes of malloc
                              header each), index slots, directory */
    uint64_t interned;     /* strings ever inserted */
    uint64_t freed;        /* strings ever freed */
} labels_itab_stats;

/* The table that label sets use. Never NULL; lives for the process. */
labels_itab *labels_global(void);

int labels_itab_new(labels_itab **ret);
/* Frees the table and every string in it, referenced or not (a no-op for
 * labels_global()). */
void labels_itab_free(labels_itab *t);
/* Returns the id of s, inserting it if new, and takes a reference (drop it
 * with labels_itab_unref). BASE_E_LIMIT if s is longer than
 * LABELS_STRING_MAX or the table is full, BASE_E_NOMEM. */
int labels_itab_intern(labels_itab *t, base_str s, labels_sym *ret_sym);
/* Like intern but never inserts: BASE_E_NOTFOUND when s is not there. */
int labels_itab_find(labels_itab *t, base_str s, labels_sym *ret_sym);
/* Adds a reference to a sym the caller already holds a reference to. */
void labels_itab_ref(labels_itab *t, labels_sym sym);
/* Drops one reference; the last one frees the string. */
void labels_itab_unref(labels_itab *t, labels_sym sym);
/* The string of a sym the caller holds a reference to (NUL-terminated). */
base_str labels_itab_str(const labels_itab *t, labels_sym sym);
void labels_itab_stats_get(const labels_itab *t, labels_itab_stats *ret);

/* ------------------------------------------------------------------ */
/* Label sets                                                         */
/* ------------------------------------------------------------------ */

typedef struct labels_set labels_set;

/* The empty set (a static, immortal object: ref/unref are no-ops). */
labels_set *labels_empty(void);
labels_set *labels_ref(const labels_set *ls);
void labels_unref(labels_set *ls);

size_t labels_len(const labels_set *ls);
/* Bytes this set holds itself (header and pairs, as malloc sizes them),
 * not counting the shared strings. */
size_t labels_set_bytes(const labels_set *ls);

/* The value of label `name`, or an empty view when absent (Prometheus's
 * Get). labels_has tells absent from empty (never stored) apart. */
base_str labels_get(const labels_set *ls, base_str name);
int labels_has(const labels_set *ls, base_str name);
/* The value of __name__, or an empty view. */
base_str labels_metric_name(const labels_set *ls);

/* Prometheus's labels.Compare: pairwise by name then value (bytewise),
 * then the shorter set first. Returns <0, 0, >0. */
int labels_cmp(const labels_set *a, const labels_set *b);
int labels_equal(const labels_set *a, const labels_set *b);

/* xxh3-64 (seed 0) over name 0xff value 0xff for every pair in order:
 * the series key. 0xff never occurs in UTF-8, so {a="bc"} and {ab="c"}
 * differ; collisions are still possible and callers compare sets. */
uint64_t labels_hash(const labels_set *ls);
/* The hash of the subset whose names are in `names` (sorted ascending,
 * no duplicates) -- PromQL `by`. Equals labels_hash of that subset. */
uint64_t labels_hash_for(const labels_set *ls, const base_str *names, size_t n);
/* The hash of the subset without `names` (sorted, no duplicates) and
 * without __name__ -- PromQL `without` (Prometheus HashWithoutLabels). */
uint64_t labels_hash_without(const labels_set *ls, const base_str *names, size_t n);

/* Iteration in order. Views stay valid while the set is referenced. */
typedef struct labels_iter {
    const uint8_t *p;
    const uint8_t *end;
} labels_iter;

void labels_iter_init(labels_iter *it, const labels_set *ls);
/* 1 and the next pair, or 0 at the end. */
int labels_iter_next(labels_iter *it, base_str *ret_name, base_str *ret_value);
/* Same, as ids in labels_global() (for indexes keyed by id). */
int labels_iter_next_sym(labels_iter *it, labels_sym *ret_name, labels_sym *ret_value);

/* Prometheus's labels.Labels.String(): {__name__="up", job="x"}; values
 * quoted as Go's strconv.Quote does (printable Unicode kept, the rest
 * escaped; unassigned code points are kept as they are). */
void labels_format(const labels_set *ls, base_buf *out);
/* Prometheus's model.Metric.String(): up{job="x"}, `up` alone, `{}` for
 * the empty set, {job="x"} without a name. */
void labels_format_metric(const labels_set *ls, base_buf *out);

/* Convenience: a set from name, value, name, value, ..., NULL (sorted and
 * checked as a builder would). For tests, tables and literals in code. */
int labels_from_cstrs(labels_set **ret, const char *name, ...) __attribute__((sentinel));

/* ------------------------------------------------------------------ */
/* Builder                                                            */
/* ------------------------------------------------------------------ */

typedef struct labels__bpair labels__bpair;
typedef struct labels_builder {
    labels__bpair *pairs;
    size_t n;
    size_t cap;
    labels_set *base; /* referenced by the builder, see labels_builder_from */
    int sorted;       /* internal: pairs sorted and duplicate-free */
} labels_builder;

/* Flags for labels_builder_finish. */
#define LABELS_VALIDATE 1u /* check names, metric name, UTF-8 of values */

void labels_builder_init(labels_builder *b);
void labels_builder_free(labels_builder *b);
/* Empties the builder (keeps its memory). */
void labels_builder_reset(labels_builder *b);
/* Starts from the contents of ls (takes a reference to it). */
int labels_builder_from(labels_builder *b, const labels_set *ls);
/* Appends a pair; duplicates are reported by finish, empty values are
 * dropped there. BASE_E_LIMIT past LABELS_MAX_PAIRS, BASE_E_NOMEM. */
int labels_builder_add(labels_builder *b, base_str name, base_str value);
/* Replaces the value of `name` or appends it; an empty value deletes
 * (Prometheus's Builder.Set). */
int labels_builder_set(labels_builder *b, base_str name, base_str value);
void labels_builder_del(labels_builder *b, base_str name);
/* The current value of `name` (empty view when absent). */
base_str labels_builder_get(const labels_builder *b, base_str name);
/* Copies the builder's current pairs (views, valid as the strings given
 * to the builder are) into ret_names/ret_values[0..min(n, cap)) and
 * returns n, the number of pairs. The order is unspecified; pairs added
 * with an empty value are included. Call again with cap >= n for all. */
size_t labels_builder_pairs(const labels_builder *b, base_str *ret_names, base_str *ret_values, size_t cap);
/* Sorts and checks the pairs, interns them and returns a new set. The
 * builder keeps its contents. Errors (err gets the message):
 * BASE_E_INVAL `empty label name`, `label name "a" is not unique`, and
 * with LABELS_VALIDATE `invalid label name "a-b"`, `invalid metric name
 * "1x"`, `invalid UTF-8 label value for "a"`; BASE_E_LIMIT, BASE_E_NOMEM. */
int labels_builder_finish(labels_builder *b, unsigned flags, labels_set **ret, char *err, size_t errlen);
/* labels_hash of the set finish would build, without interning anything
 * (the TSDB's "does this series exist?" check). Same errors as finish. */
int labels_builder_hash(labels_builder *b, uint64_t *ret_hash, char *err, size_t errlen);
/* 1 if finish would build a set equal to ls (call after a successful
 * labels_builder_hash, which sorts and checks), else 0. */
int labels_builder_equal(labels_builder *b, const labels_set *ls);

/* ------------------------------------------------------------------ */
/* Validation                                                         */
/* ------------------------------------------------------------------ */

/* [a-zA-Z_][a-zA-Z0-9_]* (Prometheus 2.42 model.LabelName.IsValid). */
int labels_valid_label_name(base_str s);
/* [a-zA-Z_:][a-zA-Z0-9_:]* */
int labels_valid_metric_name(base_str s);
int labels_valid_utf8(base_str s);

/* Appends s as Go's strconv.Quote writes it (with the quotes). */
void labels_quote(base_buf *out, base_str s);

/* ------------------------------------------------------------------ */
/* Regular expressions (RE2 syntax, fully anchored)                   */
/* ------------------------------------------------------------------ */

typedef struct labels_regex labels_regex;

/* Flags for labels_regex_compile. */
#define LABELS_RE_CAPTURE 1u /* keep capture groups (labels_regex_exec) */
#define LABELS_RE_NOFAST  2u /* never use a fast path (tests, fuzzing) */

typedef struct labels_span {
    size_t start; /* byte offsets into the subject; SIZE_MAX when the */
    size_t end;   /* group did not take part in the match */
} labels_span;

/* Compiles "^(?:" + pattern + ")$" with Go's syntax. Errors: BASE_E_PARSE
 * with Go's message ("error parsing regexp: missing closing ): `^(?:(a)$`"),
 * BASE_E_LIMIT (pattern over LABELS_REGEX_MAX), BASE_E_NOMEM. */
int labels_regex_compile(base_str pattern, unsigned flags, labels_regex **ret, char *err, size_t errlen);
void labels_regex_free(labels_regex *re);
/* 1 if s matches, 0 if not, negative BASE_E_* on failure (out of memory,
 * or PCRE2 resource limits on a pathological pattern). */
int labels_regex_match(const labels_regex *re, base_str s);
/* Number of capture groups (0 without LABELS_RE_CAPTURE). */
size_t labels_regex_groups(const labels_regex *re);
/* Index of the first group named `name`, or -1. */
int labels_regex_group_index(const labels_regex *re, base_str name);
/* Matches and fills ret_spans[0..n) (0 is the whole match, then groups;
 * entries past the groups are set to SIZE_MAX). Returns 1, 0 or <0;
 * BASE_E_UNSUPPORTED for a regex too large for PCRE2 that only its fast
 * path can match (only possible without LABELS_RE_CAPTURE). */
int labels_regex_exec(const labels_regex *re, base_str s, labels_span *ret_spans, size_t n);
/* Go's Regexp.Expand: appends tmpl to out with $1, ${1}, $name, ${name}
 * replaced by the groups of a labels_regex_exec result over s ($$ is $;
 * unknown or unmatched groups are empty). Relabel and label_replace use
 * this. */
void labels_regex_expand(const labels_regex *re, base_str tmpl, base_str s, const labels_span *spans,
                         size_t n, base_buf *out);
/* 1 and the sorted, duplicate-free list of strings when the regex matches
 * exactly a finite set of literals (a, a|b|c), else 0. The views live as
 * long as the regex. For index lookups instead of scans. */
int labels_regex_literals(const labels_regex *re, const base_str **ret_vals, size_t *ret_n);
/* 1 if matching never reaches PCRE2. */
int labels_regex_is_fast(const labels_regex *re);

/* ------------------------------------------------------------------ */
/* Matchers                                                           */
/* ------------------------------------------------------------------ */

typedef enum labels_match_type {
    LABELS_MATCH_EQ,  /* =  */
    LABELS_MATCH_NEQ, /* != */
    LABELS_MATCH_RE,  /* =~ */
    LABELS_MATCH_NRE, /* !~ */
} labels_match_type;

typedef struct labels_matcher labels_matcher;

/* Copies name and value. Regex errors as labels_regex_compile. */
int labels_matcher_new(labels_match_type type, base_str name, base_str value, labels_matcher **ret, char *err,
                       size_t errlen);
void labels_matcher_free(labels_matcher *m);
labels_match_type labels_matcher_type(const labels_matcher *m);
base_str labels_matcher_name(const labels_matcher *m);
base_str labels_matcher_value(const labels_matcher *m);
/* The compiled regex of =~ / !~ (NULL otherwise). */
const labels_regex *labels_matcher_regex(const labels_matcher *m);
/* 1 if the value s matches. When a regex fails (see labels_regex_match)
 * it counts as not matching (=~ gives 0, !~ gives 1) and is counted in
 * labels_regex_errors(). */
int labels_matcher_matches(const labels_matcher *m, base_str s);
/* 1 if the matcher matches "": it then also selects series that lack the
 * label (Prometheus's semantics for {a=""}, {a!="x"}, {a=~".*"}). */
int labels_matcher_matches_empty(const labels_matcher *m);

/* Parses a PromQL series selector (`up{job="x"}`, `{a=~"b.*"}`; strings
 * in "", '' or ``) into matchers (selector.c): a small parser for code
 * below the promql module (tests' fixtures). Whatever answers users uses
 * promql_parse_selector (promql.h), 2.42's own grammar and errors. Errors: BASE_E_PARSE with
 * Prometheus's shape of message (`1:7: parse error: ...`), BASE_E_NOMEM.
 * Free with labels_matchers_free. A selector may yield 0 matchers (`{}`). */
int labels_parse_selector(base_str s, labels_matcher ***ret, size_t *ret_n, char *err, size_t errlen);
void labels_matchers_free(labels_matcher **ms, size_t n);

/* Applies the matcher to the value of its label in ls ("" if absent). */
int labels_matcher_matches_set(const labels_matcher *m, const labels_set *ls);
/* Appends Prometheus's Matcher.String(): name="value", name=~"a.*". */
void labels_matcher_format(const labels_matcher *m, base_buf *out);
/* "=", "!=", "=~", "!~". */
const char *labels_match_type_str(labels_match_type t);

/* ------------------------------------------------------------------ */
/* Process-wide accounting and per-thread state                       */
/* ------------------------------------------------------------------ */

typedef struct labels_stats {
    uint64_t sets;             /* live label sets (heap ones) */
    uint64_t set_bytes;        /* their bytes (as labels_set_bytes) */
    labels_itab_stats strings; /* labels_global()'s table */
    uint64_t regex_errors;     /* matches that failed (see matchers) */
} labels_stats;

void labels_stats_get(labels_stats *ret);
/* Regex match failures so far (resource limits, allocation). */
uint64_t labels_regex_errors(void);
/* Frees this thread's regex scratch state now (it is also freed at thread
 * exit). Safe to call at any time; the next match recreates it. */
void labels_thread_cleanup(void);

#endif
