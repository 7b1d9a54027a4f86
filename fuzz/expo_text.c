/* fuzz/expo_text.c -- fuzz target for the text 0.0.4 parser, with a round
 * trip through the writer. fuzz/expo_openmetrics.c includes this file with
 * EXPO_FUZZ_FORMAT set to OpenMetrics, so both formats share one body.
 *
 * For every input:
 *  1. parse to the end; every view must lie inside the input, every error
 *     must carry a message and a position;
 *  2. parse again under tight limits (exercises the limit paths);
 *  3. if the input parsed fully, rebuild its series as an expo_mset (one
 *     untyped family per series, carrying the HELP text of the same name
 *     if one came right before it), render it with expo_write in the same format,
 *     parse that, and abort() unless the series come back identical: names,
 *     labels (unescaped), value bits, timestamps, HELP texts.
 * Left out of the round trip, because the writer's inputs are C strings or
 * the format cannot carry them: series with a NUL in a label value or an
 * OpenMetrics timestamp beyond +-2^53 ms (float seconds lose it), and HELP
 * texts containing NUL.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/arena.h"
#include "base/buf.h"
#include "expo/expo.h"
#include "expo/parse.h"

#ifndef EXPO_FUZZ_FORMAT
#define EXPO_FUZZ_FORMAT EXPO_FMT_TEXT
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)                                                                                          \
    do {                                                                                                     \
        if (!(cond)) abort();                                                                                \
    } while (0)

/* One series as the round trip compares it. */
typedef struct fz_series {
    const char *name;
    size_t nname;
    const char *labels; /* "name=unescaped\0name=unescaped\0...", canonical */
    size_t nlabels_bytes;
    uint64_t value_bits;
    int has_ts;
    int64_t ts;
    const char *help; /* unescaped HELP for this name, or NULL */
    size_t nhelp;
} fz_series;

typedef struct fz_list {
    fz_series *v;
    size_t n, cap;
} fz_list;

static int in_buf(base_str s, const char *b, size_t n) {
    if (s.n == 0) return 1;
    return s.p >= b && s.p + s.n <= b + n;
}

static void fz_push(fz_list *l, const fz_series *s) {
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 16;
        fz_series *v = realloc(l->v, cap * sizeof *v);
        CHECK(v);
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = *s;
}

/* Parses buf fully into list (strings copied into arena). Returns the
 * parser's final result (0 = clean EOF). */
static int fz_parse(const char *buf, size_t len, expo_format fmt, base_arena *arena, fz_list *list) {
    expo_parser p;
    expo_parser_init(&p, buf, len, fmt, NULL);
    base_buf tmp, help;
    base_buf_init(&tmp, 0);
    base_buf_init(&help, 0);
    base_str help_name = {NULL, 0};
    int have_help = 0, help_nul = 0;
    int e;
    while ((e = expo_parser_next(&p)) > 0) {
        base_str name = expo_parser_name(&p);
        CHECK(in_buf(name, buf, len));
        CHECK(in_buf(expo_parser_text(&p), buf, len));
        switch (e) {
        case EXPO_ENTRY_HELP:
            base_buf_reset(&help);
            CHECK(expo_parser_help(&p, &help) == 0);
            help_name = name;
            have_help = 1;
            help_nul = help.len && memchr(help.data, '\0', help.len) != NULL;
            break;
        case EXPO_ENTRY_SERIES: {
            CHECK(name.n > 0);
            base_str series = expo_parser_series(&p);
            CHECK(in_buf(series, buf, len) && series.p == name.p && series.n >= name.n);
            fz_series s = {0};
            int carry = 1; /* whether the writer can carry this series */
            s.name = base_arena_strndup(arena, name.p, name.n);
            CHECK(s.name);
            s.nname = name.n;
            base_buf_reset(&tmp);
            const expo_label *l = expo_parser_labels(&p);
            for (size_t i = 0; i < expo_parser_nlabels(&p); i++) {
                CHECK(in_buf(l[i].name, buf, len) && in_buf(l[i].value, buf, len));
                base_buf_append(&tmp, l[i].name.p, l[i].name.n);
                base_buf_putc(&tmp, '=');
                size_t at = tmp.len;
                CHECK(expo_unescape_label(l[i].value, &tmp) == 0);
                if (memchr(tmp.data + at, '\0', tmp.len - at)) carry = 0;
                CHECK(tmp.len - at <= l[i].value.n);
                base_buf_putc(&tmp, '\0');
            }
            const expo_label *el = expo_parser_exemplar_labels(&p);
            for (size_t i = 0; i < expo_parser_exemplar_nlabels(&p); i++)
                CHECK(in_buf(el[i].name, buf, len) && in_buf(el[i].value, buf, len));
            CHECK(base_buf_err(&tmp) == 0);
            s.labels = base_arena_strndup(arena, tmp.data ? tmp.data : "", tmp.len);
            CHECK(s.labels);
            s.nlabels_bytes = tmp.len;
            double v = expo_parser_value(&p);
            memcpy(&s.value_bits, &v, sizeof v);
            if (isnan(v)) CHECK(s.value_bits == EXPO_NORMAL_NAN_BITS);
            s.has_ts = expo_parser_has_ts(&p);
            s.ts = expo_parser_ts_ms(&p);
            if (fmt == EXPO_FMT_TEXT && s.has_ts) CHECK(s.ts >= 0);
            if (s.has_ts && (s.ts <= -(INT64_C(1) << 53) || s.ts >= (INT64_C(1) << 53)) &&
                fmt == EXPO_FMT_OPENMETRICS)
                carry = 0;
            if (have_help && !help_nul && base_str_eq(help_name, name)) {
                s.help = base_arena_strndup(arena, help.data ? help.data : "", help.len);
                CHECK(s.help);
                s.nhelp = help.len;
            }
            if (carry) fz_push(list, &s);
            have_help = 0; /* a HELP describes the series right after it */
            break;
        }
        case EXPO_ENTRY_TYPE:
        case EXPO_ENTRY_UNIT:
        case EXPO_ENTRY_COMMENT: break;
        default: abort();
        }
    }
    if (e < 0) {
        CHECK(expo_parser_error(&p)[0] != '\0');
        CHECK(expo_parser_error_line(&p) >= 1 && expo_parser_error_col(&p) >= 1);
        CHECK(expo_parser_next(&p) == e);
    }
    base_buf_free(&tmp);
    base_buf_free(&help);
    expo_parser_free(&p);
    return e;
}

/* The same input under tight limits: must not crash, may fail LIMIT. */
static void fz_limited(const char *buf, size_t len, expo_format fmt) {
    expo_parse_limits lim = {.max_labels = 3, .max_name_len = 12, .max_value_len = 6, .max_line_len = 40};
    expo_parser p;
    expo_parser_init(&p, buf, len, fmt, &lim);
    int e;
    while ((e = expo_parser_next(&p)) > 0) CHECK(expo_parser_nlabels(&p) <= 3);
    expo_parser_free(&p);
}

static void fz_round_trip(const fz_list *in, expo_format fmt) {
    expo_mset ms;
    expo_mset_init(&ms);
    base_buf lb;
    base_buf_init(&lb, 0);
    for (size_t i = 0; i < in->n; i++) {
        const fz_series *s = &in->v[i];
        expo_family *f = expo_mset_family(&ms, s->name, EXPO_UNTYPED, s->help, NULL);
        base_buf_reset(&lb);
        for (const char *q = s->labels; q < s->labels + s->nlabels_bytes;) {
            size_t n = strlen(q);
            const char *eq = memchr(q, '=', n);
            CHECK(eq);
            char lname[1024];
            size_t ln = (size_t)(eq - q);
            CHECK(ln < sizeof lname);
            memcpy(lname, q, ln);
            lname[ln] = '\0';
            expo_label_append_n(&lb, lname, eq + 1, n - ln - 1);
            q += n + 1;
        }
        CHECK(base_buf_err(&lb) == 0);
        const char *labels = base_arena_strndup(&ms.arena, lb.data ? lb.data : "", lb.len);
        CHECK(labels);
        double v;
        memcpy(&v, &s->value_bits, sizeof v);
        expo_mset_add_ts(&ms, f, NULL, labels, NULL, v, s->has_ts ? s->ts : EXPO_NO_TS);
    }
    CHECK(ms.err == 0);
    base_buf out;
    base_buf_init(&out, 0);
    expo_mset *sets[] = {&ms};
    CHECK(expo_write(sets, 1, fmt, &out) == 0);

    base_arena arena;
    base_arena_init(&arena, 0, 0);
    fz_list back = {0};
    int e = fz_parse(out.data ? out.data : "", out.len, fmt, &arena, &back);
    CHECK(e == 0);
    CHECK(back.n == in->n);
    for (size_t i = 0; i < in->n; i++) {
        const fz_series *a = &in->v[i], *b = &back.v[i];
        CHECK(a->nname == b->nname && memcmp(a->name, b->name, a->nname) == 0);
        CHECK(a->nlabels_bytes == b->nlabels_bytes && memcmp(a->labels, b->labels, a->nlabels_bytes) == 0);
        CHECK(a->value_bits == b->value_bits);
        CHECK(a->has_ts == b->has_ts);
        if (a->has_ts) CHECK(a->ts == b->ts);
        CHECK((a->help == NULL) == (b->help == NULL));
        if (a->help) CHECK(a->nhelp == b->nhelp && memcmp(a->help, b->help, a->nhelp) == 0);
    }
    free(back.v);
    base_arena_free(&arena);
    base_buf_free(&out);
    base_buf_free(&lb);
    expo_mset_free(&ms);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    /* an exact-size copy, so a read past the end is caught */
    char *buf = malloc(size ? size : 1);
    CHECK(buf);
    if (size) memcpy(buf, data, size);
    expo_format fmt = EXPO_FUZZ_FORMAT;

    base_arena arena;
    base_arena_init(&arena, 0, 0);
    fz_list list = {0};
    int e = fz_parse(buf, size, fmt, &arena, &list);
    fz_limited(buf, size, fmt);
    if (e == 0) fz_round_trip(&list, fmt);
    free(list.v);
    base_arena_free(&arena);
    free(buf);
    return 0;
}
