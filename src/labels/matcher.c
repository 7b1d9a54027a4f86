/* matcher.c -- label matchers (=, !=, =~, !~) with Prometheus 2.42's
 * semantics (labels.Matcher).
 *
 * A matcher is one allocation: the struct, then name and value copies
 * (NUL-terminated for libc's edge), plus the compiled labels_regex for the
 * regex types. It is immutable after labels_matcher_new, so any number of
 * threads may match with it. matches_empty is computed once at creation by
 * matching "" -- Prometheus's way to decide whether a matcher also selects
 * series that lack the label ({a=""}, {a!="x"}, {a=~"|x"}, {a!~"x"}).
 *
 * A regex value must be valid twice, as 2.42's NewFastRegexMatcher checks
 * it: anchored ("^(?:" + v + ")$", labels_regex_compile, whose error comes
 * first) and on its own (syntax.Parse(v, syntax.Perl)), so `a)|(b`, whose
 * anchored form is well-formed, fails with "error parsing regexp:
 * unexpected ): `a)|(b`". Only matchers check the value alone: relabel
 * and label_replace compile the anchored form only, as 2.42 does.
 */
#include <stdlib.h>
#include <string.h>

#include "base/arena.h"
#include "base/err.h"
#include "labels/labels_int.h"

/* The parse of the value alone: 0 or BASE_E_PARSE / BASE_E_NOMEM with err. */
static int parse_alone(base_str v, char *err, size_t errlen) {
    base_arena a;
    base_arena_init(&a, 4096, (size_t)128 << 20);
    labels__rx_tree t;
    int rc = labels__rx_parse(&a, v, &t, err, errlen);
    base_arena_free(&a);
    if (rc == BASE_E_NOMEM) labels__errf(err, errlen, "out of memory compiling regexp");
    return rc;
}

struct labels_matcher {
    labels_match_type type;
    int matches_empty;
    base_str name, value;
    labels_regex *re;
    char buf[];
};

const char *labels_match_type_str(labels_match_type t) {
    switch (t) {
    case LABELS_MATCH_EQ: return "=";
    case LABELS_MATCH_NEQ: return "!=";
    case LABELS_MATCH_RE: return "=~";
    case LABELS_MATCH_NRE: return "!~";
    }
    return "?";
}

int labels_matcher_new(labels_match_type type, base_str name, base_str value, labels_matcher **ret, char *err,
                       size_t errlen) {
    if (type != LABELS_MATCH_EQ && type != LABELS_MATCH_NEQ && type != LABELS_MATCH_RE &&
        type != LABELS_MATCH_NRE) {
        labels__errf(err, errlen, "invalid match type");
        return BASE_E_INVAL;
    }
    if (name.n > LABELS_STRING_MAX || value.n > LABELS_STRING_MAX) {
        labels__errf(err, errlen, "label name or value longer than %zu bytes", (size_t)LABELS_STRING_MAX);
        return BASE_E_LIMIT;
    }
    labels_matcher *m = labels__malloc(sizeof *m + name.n + value.n + 2);
    if (!m) {
        labels__errf(err, errlen, "out of memory");
        return BASE_E_NOMEM;
    }
    m->type = type;
    m->re = NULL;
    if (name.n) memcpy(m->buf, name.p, name.n);
    m->buf[name.n] = '\0';
    if (value.n) memcpy(m->buf + name.n + 1, value.p, value.n);
    m->buf[name.n + 1 + value.n] = '\0';
    m->name = (base_str){m->buf, name.n};
    m->value = (base_str){m->buf + name.n + 1, value.n};
    if (type == LABELS_MATCH_RE || type == LABELS_MATCH_NRE) {
        int rc = labels_regex_compile(m->value, 0, &m->re, err, errlen);
        if (rc == 0 && (rc = parse_alone(m->value, err, errlen)) < 0) {
            labels_regex_free(m->re);
            free(m);
            return rc;
        }
        int r = rc < 0 ? rc : labels_regex_match(m->re, (base_str){"", 0});
        if (r < 0) {
            if (rc == 0) labels__errf(err, errlen, "%s", base_strerror(r));
            labels_regex_free(m->re);
            free(m);
            return r;
        }
        m->matches_empty = type == LABELS_MATCH_RE ? r : !r;
    } else {
        m->matches_empty = labels_matcher_matches(m, (base_str){"", 0});
    }
    *ret = m;
    return 0;
}

void labels_matcher_free(labels_matcher *m) {
    if (!m) return;
    labels_regex_free(m->re);
    free(m);
}

labels_match_type labels_matcher_type(const labels_matcher *m) {
    return m->type;
}
base_str labels_matcher_name(const labels_matcher *m) {
    return m->name;
}
base_str labels_matcher_value(const labels_matcher *m) {
    return m->value;
}
const labels_regex *labels_matcher_regex(const labels_matcher *m) {
    return m->re;
}
int labels_matcher_matches_empty(const labels_matcher *m) {
    return m->matches_empty;
}

int labels_matcher_matches(const labels_matcher *m, base_str s) {
    switch (m->type) {
    case LABELS_MATCH_EQ: return base_str_eq(m->value, s);
    case LABELS_MATCH_NEQ: return !base_str_eq(m->value, s);
    case LABELS_MATCH_RE:
    case LABELS_MATCH_NRE: {
        int r = labels_regex_match(m->re, s);
        if (r < 0) {
            labels__count_regex_error();
            r = 0;
        }
        return m->type == LABELS_MATCH_RE ? r : !r;
    }
    }
    return 0;
}

int labels_matcher_matches_set(const labels_matcher *m, const labels_set *ls) {
    return labels_matcher_matches(m, labels_get(ls, m->name));
}

void labels_matcher_format(const labels_matcher *m, base_buf *out) {
    base_buf_append(out, m->name.p, m->name.n);
    base_buf_puts(out, labels_match_type_str(m->type));
    labels_quote(out, m->value);
}
