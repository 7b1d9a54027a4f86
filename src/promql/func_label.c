/* func_label.c -- label_replace() and label_join() on one series' label
 * set, as Prometheus 2.42's funcLabelReplace / funcLabelJoin.
 *
 * Design: label_replace matches the regex (compiled by the labels
 * module's RE2-compatible engine, anchored "^(?:re)$") against the source
 * label's value ("" when absent); no match leaves the set as it is; a
 * match expands the replacement as Go's Regexp.ExpandString ($1, ${1},
 * $name, ${name}, $$), deletes the destination and sets it to the
 * expansion unless that is empty. label_join joins the source labels'
 * values (empty for absent ones) with the separator and sets the
 * destination, or deletes it when the join is empty. The result is not
 * validated (2.42 does not either): any value bytes the regex produced
 * are kept.
 *
 * Ownership: results are new references the caller drops with
 * labels_unref; on error nothing is returned. The compiled regex belongs
 * to the caller (labels_regex_free).
 */
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/err.h"
#include "promql/func.h"

/* Stack room for the capture spans of a typical regex; more spans are
 * allocated. */
#define SPANS_INLINE 16

int pq_label_regex_compile(const char *re, size_t n, labels_regex **ret, char *err, size_t errlen) {
    labels_regex *rx = NULL;
    char detail[256];
    int rc = labels_regex_compile((base_str){re, n}, LABELS_RE_CAPTURE, &rx, detail, sizeof detail);
    if (rc == BASE_E_NOMEM)
        return base_errf(err, errlen, rc,
                         "out of memory compiling the regular expression of label_replace()");
    if (rc < 0)
        return base_errf(err, errlen, BASE_E_INVAL, "invalid regular expression in label_replace(): %.*s",
                         (int)(n > 4096 ? 4096 : n), re);
    *ret = rx;
    return 0;
}

int pq_fn_label_check(pq_func_id id, const char *dst, const char *const *srcs, size_t nsrcs, char *err,
                      size_t errlen) {
    if (id == PQ_F_LABEL_JOIN) {
        for (size_t i = 0; i < nsrcs; i++)
            if (!labels_valid_label_name(base_str_c(srcs[i])))
                return base_errf(err, errlen, BASE_E_INVAL, "invalid source label name in label_join(): %s",
                                 srcs[i]);
        if (!labels_valid_label_name(base_str_c(dst)))
            return base_errf(err, errlen, BASE_E_INVAL, "invalid destination label name in label_join(): %s",
                             dst);
        return 0;
    }
    if (id == PQ_F_LABEL_REPLACE) {
        if (!labels_valid_label_name(base_str_c(dst)))
            return base_errf(err, errlen, BASE_E_INVAL,
                             "invalid destination label name in label_replace(): %s", dst);
        return 0;
    }
    return 0;
}

/* A copy of `in` with dst set to val (deleted when val is empty). */
static int with_label(const labels_set *in, base_str dst, base_str val, labels_set **ret, char *err,
                      size_t errlen) {
    labels_builder b;
    labels_builder_init(&b);
    int rc = labels_builder_from(&b, in);
    if (rc == 0) {
        labels_builder_del(&b, dst);
        if (val.n > 0) rc = labels_builder_set(&b, dst, val);
    }
    if (rc == 0)
        rc = labels_builder_finish(&b, 0, ret, err, errlen);
    else
        rc = base_errf(err, errlen, rc, "label_replace/label_join: %s", base_strerror(rc));
    labels_builder_free(&b);
    return rc;
}

int pq_fn_label_replace(const labels_set *in, const char *dst, const char *repl, const char *src,
                        const labels_regex *re, labels_set **ret, char *err, size_t errlen) {
    int rc = pq_fn_label_check(PQ_F_LABEL_REPLACE, dst, NULL, 0, err, errlen);
    if (rc < 0) return rc;
    base_str sv = labels_get(in, base_str_c(src));
    size_t nspans = labels_regex_groups(re) + 1;
    labels_span inline_spans[SPANS_INLINE];
    labels_span *spans = inline_spans;
    if (nspans > SPANS_INLINE) {
        spans = calloc(nspans, sizeof *spans);
        if (!spans) return base_errf(err, errlen, BASE_E_NOMEM, "out of memory in label_replace()");
    }
    rc = labels_regex_exec(re, sv, spans, nspans);
    if (rc < 0) {
        rc = base_errf(err, errlen, rc, "label_replace(): matching the regular expression failed: %s",
                       base_strerror(rc));
    } else if (rc == 0) {
        /* no match: no replacement */
        *ret = labels_ref(in);
    } else {
        base_buf out;
        base_buf_init(&out, LABELS_STRING_MAX);
        labels_regex_expand(re, base_str_c(repl), sv, spans, nspans, &out);
        rc = base_buf_err(&out);
        if (rc < 0)
            rc = base_errf(err, errlen, rc, "label_replace(): expanding the replacement: %s",
                           base_strerror(rc));
        else
            rc = with_label(in, base_str_c(dst), (base_str){out.data, out.len}, ret, err, errlen);
        base_buf_free(&out);
    }
    if (spans != inline_spans) free(spans);
    return rc < 0 ? rc : 0;
}

int pq_fn_label_join(const labels_set *in, const char *dst, const char *sep, const char *const *srcs,
                     size_t nsrcs, labels_set **ret, char *err, size_t errlen) {
    int rc = pq_fn_label_check(PQ_F_LABEL_JOIN, dst, srcs, nsrcs, err, errlen);
    if (rc < 0) return rc;
    base_buf out;
    base_buf_init(&out, LABELS_STRING_MAX);
    size_t seplen = strlen(sep);
    for (size_t i = 0; i < nsrcs; i++) {
        if (i > 0) base_buf_append(&out, sep, seplen);
        base_str v = labels_get(in, base_str_c(srcs[i]));
        base_buf_append(&out, v.p, v.n);
    }
    rc = base_buf_err(&out);
    if (rc < 0)
        rc = base_errf(err, errlen, rc, "label_join(): joining the values: %s", base_strerror(rc));
    else
        rc = with_label(in, base_str_c(dst), (base_str){out.data, out.len}, ret, err, errlen);
    base_buf_free(&out);
    return rc;
}
