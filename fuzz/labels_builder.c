/* fuzz/labels_builder.c -- fuzz target for label sets and the builder
 * (src/labels/labels.c, intern.c, text.c).
 *
 * Input: name NUL value NUL name NUL value ... (a trailing odd field is a
 * name with an empty value). The first byte's low bit turns on
 * LABELS_VALIDATE. Checks: finish succeeds or fails with a message; on
 * success the set is sorted with unique non-empty names and non-empty
 * values, its hash equals the builder's, the builder says equal, a set
 * rebuilt from the iteration is equal (same bytes, same hash, compare 0),
 * both renderings are well formed, and after freeing everything the
 * global counters are back where they started.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "labels/labels.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size == 0) return 0;
    unsigned flags = (data[0] & 1) ? LABELS_VALIDATE : 0;
    const char *p = (const char *)data + 1, *end = (const char *)data + size;
    labels_stats before, after;
    labels_stats_get(&before);
    labels_builder b;
    labels_builder_init(&b);
    while (p < end) {
        const char *e = memchr(p, '\0', (size_t)(end - p));
        base_str name = {p, e ? (size_t)(e - p) : (size_t)(end - p)};
        p += name.n + 1;
        base_str value = {"", 0};
        if (p < end) {
            e = memchr(p, '\0', (size_t)(end - p));
            value = (base_str){p, e ? (size_t)(e - p) : (size_t)(end - p)};
            p += value.n + 1;
        }
        if (labels_builder_add(&b, name, value) < 0) break;
    }
    char err[128];
    labels_set *ls = NULL;
    int rc = labels_builder_finish(&b, flags, &ls, err, sizeof err);
    if (rc < 0) {
        if (ls || !err[0]) abort();
    } else {
        uint64_t h;
        if (labels_builder_hash(&b, &h, err, sizeof err) != 0 || h != labels_hash(ls)) abort();
        if (!labels_builder_equal(&b, ls)) abort();
        labels_builder r;
        labels_builder_init(&r);
        labels_iter it;
        base_str n, v, prev = {NULL, 0};
        size_t k = 0;
        labels_iter_init(&it, ls);
        while (labels_iter_next(&it, &n, &v)) {
            if (n.n == 0 || v.n == 0) abort();
            if (prev.p) {
                size_t m = prev.n < n.n ? prev.n : n.n;
                int c = memcmp(prev.p, n.p, m);
                if (c > 0 || (c == 0 && prev.n >= n.n)) abort(); /* strictly increasing */
            }
            if (!base_str_eq(labels_get(ls, n), v)) abort();
            prev = n;
            k++;
            if (labels_builder_add(&r, v, n) < 0) abort(); /* swapped: a different set */
        }
        if (k != labels_len(ls)) abort();
        labels_builder_reset(&r);
        if (labels_builder_from(&r, ls) != 0) abort();
        labels_set *again = NULL;
        if (labels_builder_finish(&r, 0, &again, err, sizeof err) != 0) abort();
        if (!labels_equal(ls, again) || labels_cmp(ls, again) != 0 || labels_hash(ls) != labels_hash(again))
            abort();
        labels_unref(again);
        labels_builder_free(&r);
        base_buf out;
        base_buf_init(&out, 0);
        labels_format(ls, &out);
        if (base_buf_err(&out) || out.len < 2 || out.data[0] != '{' || out.data[out.len - 1] != '}') abort();
        base_buf_reset(&out);
        labels_format_metric(ls, &out);
        if (base_buf_err(&out) || out.len == 0) abort();
        base_buf_free(&out);
        labels_unref(ls);
    }
    labels_builder_free(&b);
    labels_stats_get(&after);
    if (after.sets != before.sets || after.set_bytes != before.set_bytes ||
        after.strings.strings != before.strings.strings)
        abort();
    return 0;
}
