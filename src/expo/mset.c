/* mset.c -- building an expo_mset; see expo.h for the ownership rules. */
#include <stdarg.h>
#include <string.h>

#include "base/err.h"
#include "expo/expo.h"

void expo_mset_init(expo_mset *ms) {
    memset(ms, 0, sizeof *ms);
    base_arena_init(&ms->arena, 16384, 0);
}

void expo_mset_reset(expo_mset *ms) {
    base_arena_reset(&ms->arena);
    ms->head = ms->tail = NULL;
    ms->nfamilies = ms->nsamples = 0;
    ms->err = 0;
}

void expo_mset_free(expo_mset *ms) {
    base_arena_free(&ms->arena);
    ms->head = ms->tail = NULL;
    ms->nfamilies = ms->nsamples = 0;
}

expo_family *expo_mset_family(expo_mset *ms, const char *name, expo_type type, const char *help,
                              const char *unit) {
    expo_family *f = base_arena_alloc(&ms->arena, sizeof *f);
    if (!f) {
        ms->err = BASE_E_NOMEM;
        return NULL;
    }
    memset(f, 0, sizeof *f);
    f->name = name;
    f->type = type;
    f->help = help;
    f->unit = unit;
    if (ms->tail)
        ms->tail->next = f;
    else
        ms->head = f;
    ms->tail = f;
    ms->nfamilies++;
    return f;
}

void expo_mset_add_ts(expo_mset *ms, expo_family *f, const char *suffix, const char *labels,
                      const char *extra, double value, int64_t ts_ms) {
    if (!f) return; /* the family failed to allocate; err is already set */
    expo_sample *s = base_arena_alloc(&ms->arena, sizeof *s);
    if (!s) {
        ms->err = BASE_E_NOMEM;
        return;
    }
    s->next = NULL;
    s->suffix = suffix ? suffix : "";
    s->labels = labels;
    s->extra = extra;
    s->value = value;
    s->ts_ms = ts_ms;
    if (f->tail)
        f->tail->next = s;
    else
        f->head = s;
    f->tail = s;
    f->nsamples++;
    ms->nsamples++;
}

void expo_mset_add(expo_mset *ms, expo_family *f, const char *suffix, const char *labels, const char *extra,
                   double value) {
    expo_mset_add_ts(ms, f, suffix, labels, extra, value, EXPO_NO_TS);
}

char *expo_mset_strdup(expo_mset *ms, const char *s) {
    char *p = base_arena_strdup(&ms->arena, s ? s : "");
    if (!p) ms->err = BASE_E_NOMEM;
    return p;
}

void expo_label_append_n(base_buf *b, const char *name, const char *value, size_t n) {
    if (b->len) base_buf_putc(b, ',');
    base_buf_puts(b, name);
    base_buf_append(b, "=\"", 2);
    size_t run = 0;
    for (size_t i = 0; i < n; i++) {
        char c = value[i];
        if (c == '\\' || c == '"' || c == '\n') {
            base_buf_append(b, value + run, i - run);
            base_buf_append(b, c == '\\' ? "\\\\" : c == '"' ? "\\\"" : "\\n", 2);
            run = i + 1;
        }
    }
    base_buf_append(b, value + run, n - run);
    base_buf_putc(b, '"');
}

void expo_label_append(base_buf *b, const char *name, const char *value) {
    expo_label_append_n(b, name, value, strlen(value));
}

char *expo_mset_labels(expo_mset *ms, ...) {
    base_buf b = {.data = NULL};
    base_buf_init(&b, 1 << 20);
    va_list ap;
    va_start(ap, ms);
    for (;;) {
        const char *k = va_arg(ap, const char *);
        if (!k) break;
        const char *v = va_arg(ap, const char *);
        expo_label_append(&b, k, v ? v : "");
    }
    va_end(ap);
    char *p = NULL;
    if (b.err)
        ms->err = b.err;
    else
        p = base_arena_strndup(&ms->arena, b.data ? b.data : "", b.len);
    if (!p && !ms->err) ms->err = BASE_E_NOMEM;
    base_buf_free(&b);
    return p;
}
