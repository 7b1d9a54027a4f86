/* fuzz/labels_matcher.c -- fuzz target for the RE2-syntax regex compiler
 * and matchers (src/labels/regex_parse.c, regex.c, matcher.c).
 *
 * Input: pattern NUL subject NUL subject ... (no subject: a few derived
 * ones). Checks:
 *  - compiling never crashes; a parse error says "error parsing regexp: ";
 *  - when the regex has both a fast path and a PCRE2 program, both give
 *    the same answer on every subject (the fast path is an optimisation,
 *    never a semantic);
 *  - a PCRE2-only compile (LABELS_RE_NOFAST) and a capturing compile agree
 *    with the normal one, capture spans lie inside the subject and group 0
 *    is ordered;
 *  - the =~ matcher agrees with the regex, !~ is its negation, and
 *    matches_empty is the answer for ""; a matcher refuses only a
 *    pattern that does not parse alone (an unbalanced ')', as 2.42).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "labels/labels.h"
#include "labels/labels_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_SUBJECTS 16

static void check_subject(labels_regex *re, labels_regex *slow, labels_regex *cap, labels_matcher *m,
                          labels_matcher *nm, base_str s) {
    int r = labels_regex_match(re, s);
    if (r < 0) return; /* resource limit on a pathological pattern */
    int f = labels__regex_match_fast(re, s);
    int p = labels__regex_match_pcre(re, s);
    if (f >= 0 && p >= 0 && f != p) abort();
    if (slow) {
        int q = labels_regex_match(slow, s);
        if (q >= 0 && q != r) abort();
    }
    if (cap) {
        labels_span sp[4];
        int q = labels_regex_exec(cap, s, sp, 4);
        if (q >= 0 && q != r) abort();
        if (q == 1) {
            if (sp[0].start > sp[0].end || sp[0].end > s.n) abort();
            for (int i = 1; i < 4; i++)
                if (sp[i].start != SIZE_MAX && (sp[i].start > sp[i].end || sp[i].end > s.n)) abort();
            base_buf out;
            base_buf_init(&out, 1 << 16);
            labels_regex_expand(cap, (base_str){"$1-${2}$$x", 10}, s, sp, 4, &out);
            base_buf_free(&out);
        }
    }
    if (m && labels_matcher_matches(m, s) != r) abort();
    if (nm && labels_matcher_matches(nm, s) != !r) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *p = (const char *)data;
    const char *end = p + size;
    const char *nul = memchr(p, '\0', size);
    base_str pat = {p, nul ? (size_t)(nul - p) : size};
    base_str subj[MAX_SUBJECTS];
    size_t ns = 0;
    for (const char *q = nul ? nul + 1 : end; q < end && ns < MAX_SUBJECTS;) {
        const char *e = memchr(q, '\0', (size_t)(end - q));
        size_t n = e ? (size_t)(e - q) : (size_t)(end - q);
        subj[ns++] = (base_str){q, n};
        q += n + 1;
    }
    if (ns == 0) { /* derived subjects: the pattern and its halves */
        subj[ns++] = pat;
        subj[ns++] = (base_str){"", 0};
        subj[ns++] = (base_str){pat.p, pat.n / 2};
        subj[ns++] = (base_str){pat.p + pat.n / 2, pat.n - pat.n / 2};
    }
    char err[256];
    labels_regex *re = NULL;
    int rc = labels_regex_compile(pat, 0, &re, err, sizeof err);
    if (rc < 0) {
        if (rc == BASE_E_PARSE && strncmp(err, "error parsing regexp: ", 22) != 0) abort();
        if (re) abort();
        labels_thread_cleanup();
        return 0;
    }
    labels_regex *slow = NULL, *cap = NULL;
    if (labels_regex_compile(pat, LABELS_RE_NOFAST, &slow, err, sizeof err) < 0) slow = NULL;
    if (labels_regex_compile(pat, LABELS_RE_CAPTURE, &cap, err, sizeof err) < 0) cap = NULL;
    /* A matcher also parses the pattern alone (2.42's NewFastRegexMatcher):
     * once the anchored form compiled, only a ')' without its '(' can
     * fail that, and then both matcher types fail. */
    labels_matcher *m = NULL, *nm = NULL;
    static const char unexp[] = "error parsing regexp: unexpected ): `";
    rc = labels_matcher_new(LABELS_MATCH_RE, (base_str){"a", 1}, pat, &m, err, sizeof err);
    if (rc < 0 && (rc != BASE_E_PARSE || strncmp(err, unexp, sizeof unexp - 1) != 0)) abort();
    int rc2 = labels_matcher_new(LABELS_MATCH_NRE, (base_str){"a", 1}, pat, &nm, err, sizeof err);
    if ((rc2 < 0) != (rc < 0)) abort();
    int empty = labels_regex_match(re, (base_str){"", 0});
    if (m && empty >= 0 && labels_matcher_matches_empty(m) != empty) abort();
    for (size_t i = 0; i < ns; i++) check_subject(re, slow, cap, m, nm, subj[i]);
    const base_str *lits;
    size_t nl;
    if (labels_regex_literals(re, &lits, &nl))
        for (size_t i = 0; i < nl; i++)
            if (labels_regex_match(re, lits[i]) != 1) abort();
    base_buf b;
    base_buf_init(&b, 0);
    if (m) labels_matcher_format(m, &b);
    base_buf_free(&b);
    labels_matcher_free(m);
    labels_matcher_free(nm);
    labels_regex_free(cap);
    labels_regex_free(slow);
    labels_regex_free(re);
    labels_thread_cleanup();
    return 0;
}
