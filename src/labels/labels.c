/* labels.c -- label sets and their builder: construction, ordering,
 * equality, hashing, lookups and rendering (design in labels.h).
 *
 * Set layout: struct labels_set (labels_int.h) = refs, nbytes, npairs, then
 * pairs sorted by name as LEB128 varint(name sym) varint(value sym) in
 * labels_global(). Invariants, checked by set_check() in debug builds:
 *  1. names strictly increase (bytewise), so no duplicates;
 *  2. no name and no value is empty;
 *  3. the set holds one table reference per sym it contains;
 *  4. npairs <= LABELS_MAX_PAIRS, so nbytes <= 10 * LABELS_MAX_PAIRS < 65536.
 *
 * The builder keeps views (name, value) plus the syms when they came from
 * a set (labels_builder_from), so rebuilding a modified copy of a set
 * takes lock-free references for the kept strings instead of lookups.
 * Sorting and the duplicate check are cached until the next edit.
 */
#include <assert.h>
#include <malloc.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>

#include "base/err.h"
#include "labels/labels_int.h"

#define MALLOC_OVERHEAD 8u

/* ---- accounting ---------------------------------------------------- */

#define STRIPES 16
static struct { _Atomic int64_t sets, bytes; } __attribute__((aligned(64))) g_stripes[STRIPES];
static _Atomic unsigned g_next_stripe;
static _Thread_local unsigned t_stripe = ~0u;
static _Atomic uint64_t g_regex_errors;

void labels__count_set(int64_t dsets, int64_t dbytes) {
    if (t_stripe == ~0u)
        t_stripe = atomic_fetch_add_explicit(&g_next_stripe, 1, memory_order_relaxed) % STRIPES;
    atomic_fetch_add_explicit(&g_stripes[t_stripe].sets, dsets, memory_order_relaxed);
    atomic_fetch_add_explicit(&g_stripes[t_stripe].bytes, dbytes, memory_order_relaxed);
}

void labels__count_regex_error(void) {
    atomic_fetch_add_explicit(&g_regex_errors, 1, memory_order_relaxed);
}

uint64_t labels_regex_errors(void) {
    return atomic_load_explicit(&g_regex_errors, memory_order_relaxed);
}

void labels_stats_get(labels_stats *ret) {
    labels_stats s = {0};
    int64_t sets = 0, bytes = 0;
    for (unsigned i = 0; i < STRIPES; i++) {
        sets += atomic_load_explicit(&g_stripes[i].sets, memory_order_relaxed);
        bytes += atomic_load_explicit(&g_stripes[i].bytes, memory_order_relaxed);
    }
    s.sets = sets > 0 ? (uint64_t)sets : 0;
    s.set_bytes = bytes > 0 ? (uint64_t)bytes : 0;
    labels_itab_stats_get(labels_global(), &s.strings);
    s.regex_errors = labels_regex_errors();
    *ret = s;
}

/* ---- varints ------------------------------------------------------- */

static size_t varint_len(uint32_t v) {
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

static uint8_t *varint_put(uint8_t *p, uint32_t v) {
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}

static const uint8_t *varint_get(const uint8_t *p, uint32_t *ret) {
    uint32_t v = 0;
    unsigned shift = 0;
    for (;;) {
        uint8_t b = *p++;
        v |= (uint32_t)(b & 0x7F) << shift;
        if (!(b & 0x80)) break;
        shift += 7;
    }
    *ret = v;
    return p;
}

/* ---- basic set operations ------------------------------------------ */

static labels_set g_empty = {LABELS__IMMORTAL, 0, 0};

labels_set *labels_empty(void) {
    return &g_empty;
}

labels_set *labels_ref(const labels_set *ls) {
    labels_set *s = (labels_set *)ls;
    uint32_t r = atomic_load_explicit(&s->refs, memory_order_relaxed);
    while (r < LABELS__IMMORTAL)
        if (atomic_compare_exchange_weak_explicit(&s->refs, &r, r + 1, memory_order_relaxed,
                                                  memory_order_relaxed))
            break;
    return s;
}

static size_t heap_bytes(const labels_set *ls) {
    return malloc_usable_size((void *)ls) + MALLOC_OVERHEAD;
}

void labels_unref(labels_set *ls) {
    if (!ls) return;
    uint32_t r = atomic_load_explicit(&ls->refs, memory_order_relaxed);
    for (;;) {
        if (r >= LABELS__IMMORTAL) return;
        if (atomic_compare_exchange_weak_explicit(&ls->refs, &r, r - 1, memory_order_acq_rel,
                                                  memory_order_relaxed))
            break;
    }
    if (r != 1) return;
    labels_itab *t = labels_global();
    const uint8_t *p = ls->data, *end = ls->data + ls->nbytes;
    while (p < end) {
        uint32_t s;
        p = varint_get(p, &s);
        labels_itab_unref(t, s);
    }
    labels__count_set(-1, -(int64_t)heap_bytes(ls));
    free(ls);
}

size_t labels_len(const labels_set *ls) {
    return ls->npairs;
}

size_t labels_set_bytes(const labels_set *ls) {
    return ls == &g_empty ? 0 : heap_bytes(ls);
}

void labels_iter_init(labels_iter *it, const labels_set *ls) {
    it->p = ls->data;
    it->end = ls->data + ls->nbytes;
}

int labels_iter_next_sym(labels_iter *it, labels_sym *ret_name, labels_sym *ret_value) {
    if (it->p >= it->end) return 0;
    it->p = varint_get(it->p, ret_name);
    it->p = varint_get(it->p, ret_value);
    return 1;
}

int labels_iter_next(labels_iter *it, base_str *ret_name, base_str *ret_value) {
    labels_sym n, v;
    if (!labels_iter_next_sym(it, &n, &v)) return 0;
    *ret_name = labels__sym_str(n);
    *ret_value = labels__sym_str(v);
    return 1;
}

static int find(const labels_set *ls, base_str name, base_str *ret) {
    labels_iter it;
    base_str n, v;
    labels_iter_init(&it, ls);
    while (labels_iter_next(&it, &n, &v)) {
        int c = labels__strcmp(n, name);
        if (c == 0) {
            *ret = v;
            return 1;
        }
        if (c > 0) break;
    }
    return 0;
}

base_str labels_get(const labels_set *ls, base_str name) {
    base_str v = {"", 0};
    find(ls, name, &v);
    return v;
}

int labels_has(const labels_set *ls, base_str name) {
    base_str v;
    return find(ls, name, &v);
}

base_str labels_metric_name(const labels_set *ls) {
    return labels_get(ls, base_str_c(LABELS_METRIC_NAME));
}

int labels_cmp(const labels_set *a, const labels_set *b) {
    if (a == b) return 0;
    labels_iter ia, ib;
    labels_iter_init(&ia, a);
    labels_iter_init(&ib, b);
    labels_sym an, av, bn, bv;
    for (;;) {
        int ha = labels_iter_next_sym(&ia, &an, &av);
        int hb = labels_iter_next_sym(&ib, &bn, &bv);
        if (!ha || !hb) return ha - hb;
        if (an != bn) {
            int c = labels__strcmp(labels__sym_str(an), labels__sym_str(bn));
            if (c) return c;
        }
        if (av != bv) {
            int c = labels__strcmp(labels__sym_str(av), labels__sym_str(bv));
            if (c) return c;
        }
    }
}

int labels_equal(const labels_set *a, const labels_set *b) {
    return a == b || (a->nbytes == b->nbytes && memcmp(a->data, b->data, a->nbytes) == 0);
}

/* ---- hashing ------------------------------------------------------- */

typedef struct hasher {
    size_t n;
    int streaming;
    uint8_t buf[1024];
    XXH3_state_t st;
} hasher;

static void hput(hasher *h, const void *p, size_t n) {
    if (!h->streaming) {
        if (h->n + n <= sizeof h->buf) {
            if (n) memcpy(h->buf + h->n, p, n);
            h->n += n;
            return;
        }
        XXH3_64bits_reset(&h->st);
        XXH3_64bits_update(&h->st, h->buf, h->n);
        h->streaming = 1;
    }
    XXH3_64bits_update(&h->st, p, n);
}

static void hpair(hasher *h, base_str n, base_str v) {
    static const uint8_t sep = 0xff;
    hput(h, n.p, n.n);
    hput(h, &sep, 1);
    hput(h, v.p, v.n);
    hput(h, &sep, 1);
}

static uint64_t hdigest(hasher *h) {
    return h->streaming ? XXH3_64bits_digest(&h->st) : XXH3_64bits(h->buf, h->n);
}

/* mode 0: all pairs; 1: only names in the list; 2: neither those nor
 * __name__. names is sorted. */
static uint64_t hash_sel(const labels_set *ls, const base_str *names, size_t nn, int mode) {
    hasher h;
    h.n = 0;
    h.streaming = 0;
    labels_iter it;
    base_str n, v;
    size_t j = 0;
    labels_iter_init(&it, ls);
    while (labels_iter_next(&it, &n, &v)) {
        if (mode) {
            while (j < nn && labels__strcmp(names[j], n) < 0) j++;
            int listed = j < nn && base_str_eq(names[j], n);
            if (mode == 1 && !listed) continue;
            if (mode == 2 && (listed || base_str_eqc(n, LABELS_METRIC_NAME))) continue;
        }
        hpair(&h, n, v);
    }
    return hdigest(&h);
}

uint64_t labels_hash(const labels_set *ls) {
    return hash_sel(ls, NULL, 0, 0);
}

uint64_t labels_hash_for(const labels_set *ls, const base_str *names, size_t n) {
    return hash_sel(ls, names, n, 1);
}

uint64_t labels_hash_without(const labels_set *ls, const base_str *names, size_t n) {
    return hash_sel(ls, names, n, 2);
}

/* ---- rendering ----------------------------------------------------- */

void labels_format(const labels_set *ls, base_buf *out) {
    labels_iter it;
    base_str n, v;
    int first = 1;
    base_buf_putc(out, '{');
    labels_iter_init(&it, ls);
    while (labels_iter_next(&it, &n, &v)) {
        if (!first) base_buf_append(out, ", ", 2);
        first = 0;
        base_buf_append(out, n.p, n.n);
        base_buf_putc(out, '=');
        labels_quote(out, v);
    }
    base_buf_putc(out, '}');
}

typedef struct piece {
    size_t off, len;
} piece;

static int piece_cmp_r(const void *a, const void *b, void *base) {
    const piece *x = a, *y = b;
    const char *p = base;
    size_t n = x->len < y->len ? x->len : y->len;
    int c = memcmp(p + x->off, p + y->off, n);
    if (c) return c;
    return x->len < y->len ? -1 : x->len > y->len;
}

void labels_format_metric(const labels_set *ls, base_buf *out) {
    base_str name = {"", 0};
    int has_name = find(ls, base_str_c(LABELS_METRIC_NAME), &name);
    size_t others = ls->npairs - (has_name ? 1 : 0);
    if (others == 0) {
        if (has_name)
            base_buf_append(out, name.p, name.n);
        else
            base_buf_append(out, "{}", 2);
        return;
    }
    /* Go sorts the rendered `k="v"` strings, which differs from label
     * order when one name is a prefix of another followed by a digit. */
    base_buf tmp;
    base_buf_init(&tmp, 0);
    piece stackp[64];
    piece *pcs = others <= 64 ? stackp : labels__malloc(others * sizeof *pcs);
    if (!pcs) {
        if (!out->err) out->err = BASE_E_NOMEM;
        return;
    }
    labels_iter it;
    base_str n, v;
    size_t k = 0;
    labels_iter_init(&it, ls);
    while (labels_iter_next(&it, &n, &v)) {
        if (base_str_eqc(n, LABELS_METRIC_NAME)) continue;
        size_t off = tmp.len;
        base_buf_append(&tmp, n.p, n.n);
        base_buf_putc(&tmp, '=');
        labels_quote(&tmp, v);
        pcs[k].off = off;
        pcs[k].len = tmp.len - off;
        k++;
    }
    if (base_buf_err(&tmp)) {
        if (!out->err) out->err = base_buf_err(&tmp);
    } else {
        qsort_r(pcs, k, sizeof *pcs, piece_cmp_r, tmp.data);
        base_buf_append(out, name.p, name.n);
        base_buf_putc(out, '{');
        for (size_t i = 0; i < k; i++) {
            if (i) base_buf_append(out, ", ", 2);
            base_buf_append(out, tmp.data + pcs[i].off, pcs[i].len);
        }
        base_buf_putc(out, '}');
    }
    if (pcs != stackp) free(pcs);
    base_buf_free(&tmp);
}

/* ---- builder ------------------------------------------------------- */

struct labels__bpair {
    base_str name, value;
    labels_sym nsym, vsym; /* LABELS_SYM_NONE unless taken from b->base */
};

void labels_builder_init(labels_builder *b) {
    memset(b, 0, sizeof *b);
}

void labels_builder_reset(labels_builder *b) {
    b->n = 0;
    b->sorted = 0;
    labels_unref(b->base);
    b->base = NULL;
}

void labels_builder_free(labels_builder *b) {
    labels_builder_reset(b);
    free(b->pairs);
    memset(b, 0, sizeof *b);
}

static int reserve(labels_builder *b, size_t n) {
    if (n > LABELS_MAX_PAIRS) return BASE_E_LIMIT;
    if (n <= b->cap) return 0;
    size_t cap = b->cap ? b->cap * 2 : 16;
    while (cap < n) cap *= 2;
    if (cap > LABELS_MAX_PAIRS) cap = LABELS_MAX_PAIRS;
    labels__bpair *p = labels__realloc(b->pairs, cap * sizeof *p);
    if (!p) return BASE_E_NOMEM;
    b->pairs = p;
    b->cap = cap;
    return 0;
}

int labels_builder_from(labels_builder *b, const labels_set *ls) {
    labels_set *keep = labels_ref(ls); /* ls may be b->base itself */
    labels_builder_reset(b);
    b->base = keep;
    int rc = reserve(b, ls->npairs);
    if (rc < 0) return rc;
    labels_iter it;
    labels_sym n, v;
    labels_iter_init(&it, ls);
    while (labels_iter_next_sym(&it, &n, &v)) {
        labels__bpair *p = &b->pairs[b->n++];
        p->name = labels__sym_str(n);
        p->value = labels__sym_str(v);
        p->nsym = n;
        p->vsym = v;
    }
    b->sorted = 1;
    return 0;
}

int labels_builder_add(labels_builder *b, base_str name, base_str value) {
    int rc = reserve(b, b->n + 1);
    if (rc < 0) return rc;
    b->pairs[b->n++] = (labels__bpair){name, value, LABELS_SYM_NONE, LABELS_SYM_NONE};
    b->sorted = 0;
    return 0;
}

static ssize_t bfind(const labels_builder *b, base_str name) {
    for (size_t i = 0; i < b->n; i++)
        if (base_str_eq(b->pairs[i].name, name)) return (ssize_t)i;
    return -1;
}

void labels_builder_del(labels_builder *b, base_str name) {
    ssize_t i;
    while ((i = bfind(b, name)) >= 0) {
        memmove(&b->pairs[i], &b->pairs[i + 1], (b->n - (size_t)i - 1) * sizeof *b->pairs);
        b->n--;
    }
}

int labels_builder_set(labels_builder *b, base_str name, base_str value) {
    if (value.n == 0) {
        labels_builder_del(b, name);
        return 0;
    }
    ssize_t i = bfind(b, name);
    if (i >= 0) {
        b->pairs[i].value = value;
        b->pairs[i].vsym = LABELS_SYM_NONE;
        return 0;
    }
    return labels_builder_add(b, name, value);
}

base_str labels_builder_get(const labels_builder *b, base_str name) {
    ssize_t i = bfind(b, name);
    return i >= 0 ? b->pairs[i].value : (base_str){"", 0};
}

size_t labels_builder_pairs(const labels_builder *b, base_str *ret_names, base_str *ret_values, size_t cap) {
    size_t k = b->n < cap ? b->n : cap;
    for (size_t i = 0; i < k; i++) {
        ret_names[i] = b->pairs[i].name;
        ret_values[i] = b->pairs[i].value;
    }
    return b->n;
}

static int pair_cmp(const void *a, const void *b) {
    return labels__strcmp(((const labels__bpair *)a)->name, ((const labels__bpair *)b)->name);
}

static void sort_pairs(labels__bpair *p, size_t n) {
    if (n <= 16) {
        for (size_t i = 1; i < n; i++) {
            labels__bpair x = p[i];
            size_t j = i;
            while (j > 0 && labels__strcmp(p[j - 1].name, x.name) > 0) {
                p[j] = p[j - 1];
                j--;
            }
            p[j] = x;
        }
        return;
    }
    qsort(p, n, sizeof *p, pair_cmp);
}

static void err_name(char *err, size_t errlen, const char *what, base_str s) {
    if (!err || !errlen) return;
    base_buf b;
    base_buf_init(&b, errlen > 1 ? errlen - 1 : 1);
    base_buf_puts(&b, what);
    base_buf_putc(&b, ' ');
    labels_quote(&b, s);
    size_t n = b.len < errlen - 1 ? b.len : errlen - 1;
    if (n) memcpy(err, b.data, n);
    err[n] = '\0';
    base_buf_free(&b);
}

static int prepare(labels_builder *b, unsigned flags, char *err, size_t errlen) {
    if (!b->sorted) {
        sort_pairs(b->pairs, b->n);
        for (size_t i = 0; i < b->n; i++) {
            if (b->pairs[i].name.n == 0) {
                labels__errf(err, errlen, "empty label name");
                return BASE_E_INVAL;
            }
            if (i > 0 && base_str_eq(b->pairs[i].name, b->pairs[i - 1].name)) {
                err_name(err, errlen, "label name", b->pairs[i].name);
                if (err && errlen) {
                    size_t l = strlen(err);
                    labels__errf(err + l, errlen - l, " is not unique");
                }
                return BASE_E_INVAL;
            }
        }
        b->sorted = 1;
    }
    if (flags & LABELS_VALIDATE) {
        for (size_t i = 0; i < b->n; i++) {
            const labels__bpair *p = &b->pairs[i];
            if (p->value.n == 0) continue;
            if (!labels_valid_label_name(p->name)) {
                err_name(err, errlen, "invalid label name", p->name);
                return BASE_E_INVAL;
            }
            if (base_str_eqc(p->name, LABELS_METRIC_NAME) && !labels_valid_metric_name(p->value)) {
                err_name(err, errlen, "invalid metric name", p->value);
                return BASE_E_INVAL;
            }
            if (!labels_valid_utf8(p->value)) {
                err_name(err, errlen, "invalid UTF-8 label value for", p->name);
                return BASE_E_INVAL;
            }
        }
    }
    for (size_t i = 0; i < b->n; i++)
        if (b->pairs[i].name.n > LABELS_STRING_MAX || b->pairs[i].value.n > LABELS_STRING_MAX) {
            labels__errf(err, errlen, "label name or value longer than %zu bytes", (size_t)LABELS_STRING_MAX);
            return BASE_E_LIMIT;
        }
    return 0;
}

#ifndef NDEBUG
static void set_check(const labels_set *ls) {
    labels_iter it;
    base_str n, v, prev = {NULL, 0};
    size_t k = 0;
    labels_iter_init(&it, ls);
    while (labels_iter_next(&it, &n, &v)) {
        assert(n.n > 0 && v.n > 0);
        assert(!prev.p || labels__strcmp(prev, n) < 0);
        prev = n;
        k++;
    }
    assert(k == ls->npairs && it.p == it.end);
}
#endif

int labels_builder_finish(labels_builder *b, unsigned flags, labels_set **ret, char *err, size_t errlen) {
    int rc = prepare(b, flags, err, errlen);
    if (rc < 0) return rc;
    size_t keep = 0;
    for (size_t i = 0; i < b->n; i++) keep += b->pairs[i].value.n > 0;
    if (keep == 0) {
        *ret = &g_empty;
        return 0;
    }
    labels_sym stack_syms[128];
    labels_sym *syms = keep * 2 <= 128 ? stack_syms : labels__malloc(keep * 2 * sizeof *syms);
    if (!syms) {
        labels__errf(err, errlen, "%s", base_strerror(BASE_E_NOMEM));
        return BASE_E_NOMEM;
    }
    labels_itab *t = labels_global();
    size_t k = 0, nbytes = 0;
    for (size_t i = 0; i < b->n && rc == 0; i++) {
        const labels__bpair *p = &b->pairs[i];
        if (p->value.n == 0) continue;
        for (int w = 0; w < 2; w++) {
            labels_sym s = w ? p->vsym : p->nsym;
            if (s != LABELS_SYM_NONE)
                labels_itab_ref(t, s);
            else if ((rc = labels_itab_intern(t, w ? p->value : p->name, &s)) < 0)
                break;
            syms[k++] = s;
            nbytes += varint_len(s);
        }
    }
    labels_set *ls = NULL;
    if (rc == 0 && !(ls = labels__malloc(sizeof *ls + nbytes))) rc = BASE_E_NOMEM;
    if (rc < 0) {
        for (size_t i = 0; i < k; i++) labels_itab_unref(t, syms[i]);
        if (syms != stack_syms) free(syms);
        labels__errf(err, errlen, "%s", base_strerror(rc));
        return rc;
    }
    atomic_init(&ls->refs, 1);
    ls->nbytes = (uint16_t)nbytes;
    ls->npairs = (uint16_t)keep;
    uint8_t *p = ls->data;
    for (size_t i = 0; i < k; i++) p = varint_put(p, syms[i]);
    if (syms != stack_syms) free(syms);
    labels__count_set(1, (int64_t)heap_bytes(ls));
#ifndef NDEBUG
    set_check(ls);
#endif
    *ret = ls;
    return 0;
}

int labels_builder_hash(labels_builder *b, uint64_t *ret_hash, char *err, size_t errlen) {
    int rc = prepare(b, 0, err, errlen);
    if (rc < 0) return rc;
    hasher h;
    h.n = 0;
    h.streaming = 0;
    for (size_t i = 0; i < b->n; i++)
        if (b->pairs[i].value.n) hpair(&h, b->pairs[i].name, b->pairs[i].value);
    *ret_hash = hdigest(&h);
    return 0;
}

int labels_builder_equal(labels_builder *b, const labels_set *ls) {
    if (!b->sorted) return 0;
    labels_iter it;
    labels_sym n, v;
    size_t i = 0;
    labels_iter_init(&it, ls);
    while (labels_iter_next_sym(&it, &n, &v)) {
        while (i < b->n && b->pairs[i].value.n == 0) i++;
        if (i == b->n) return 0;
        const labels__bpair *p = &b->pairs[i++];
        if (p->nsym != n && !base_str_eq(p->name, labels__sym_str(n))) return 0;
        if (p->vsym != v && !base_str_eq(p->value, labels__sym_str(v))) return 0;
    }
    while (i < b->n && b->pairs[i].value.n == 0) i++;
    return i == b->n;
}

int labels_from_cstrs(labels_set **ret, const char *name, ...) {
    labels_builder b;
    labels_builder_init(&b);
    va_list ap;
    va_start(ap, name);
    int rc = 0;
    for (const char *n = name; n && rc == 0; n = va_arg(ap, const char *)) {
        const char *v = va_arg(ap, const char *);
        if (!v) {
            rc = BASE_E_INVAL;
            break;
        }
        rc = labels_builder_add(&b, base_str_c(n), base_str_c(v));
    }
    va_end(ap);
    if (rc == 0) rc = labels_builder_finish(&b, 0, ret, NULL, 0);
    labels_builder_free(&b);
    return rc;
}
