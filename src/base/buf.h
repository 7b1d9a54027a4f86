/* buf.h -- a growable byte buffer with a sticky error flag.
 *
 * Writers append without checking each call; an allocation failure or a
 * size limit sets buf->err once (BASE_E_NOMEM / BASE_E_LIMIT) and every
 * later append is a no-op, so the caller checks base_buf_err() once at the
 * end (the dav1d "sticky error" habit). The data is always NUL-terminated
 * when len > 0 or cap > 0, for libc's edge, but the length is what counts.
 *
 * Ownership: the buffer owns data; base_buf_free() releases it;
 * base_buf_steal() hands it to the caller (free with free()).
 */
#ifndef KELVIN_BASE_BUF_H
#define KELVIN_BASE_BUF_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef struct base_buf {
    char *data;
    size_t len;
    size_t cap;
    size_t limit; /* 0 = no limit; otherwise len never exceeds it */
    int err;      /* 0 or the first BASE_E_* that happened */
} base_buf;

#define BASE_BUF_INIT                                                                                        \
    { 0 }

void base_buf_init(base_buf *b, size_t limit);
void base_buf_free(base_buf *b);
/* Empties the buffer but keeps its memory and clears the error. */
void base_buf_reset(base_buf *b);
/* Makes room for n more bytes; returns 0 or the sticky error. */
int base_buf_reserve(base_buf *b, size_t n);
/* The slow paths behind the inline appenders below. */
void base__buf_append_slow(base_buf *b, const void *p, size_t n);
/* Appends n bytes. Inline fast path: one compare and a memcpy when the
 * buffer has room, which is almost always (the exposition writer calls
 * this several times per sample). */
static inline void base_buf_append(base_buf *b, const void *p, size_t n) {
    if (n && n < b->cap - b->len && !b->err && (!b->limit || b->len + n <= b->limit)) {
        memcpy(b->data + b->len, p, n);
        b->len += n;
        b->data[b->len] = '\0';
        return;
    }
    base__buf_append_slow(b, p, n);
}
static inline void base_buf_puts(base_buf *b, const char *s) {
    base_buf_append(b, s, strlen(s));
}
static inline void base_buf_putc(base_buf *b, char c) {
    base_buf_append(b, &c, 1);
}
void base_buf_printf(base_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void base_buf_vprintf(base_buf *b, const char *fmt, va_list ap);
void base_buf_u64(base_buf *b, uint64_t v);
void base_buf_i64(base_buf *b, int64_t v);
/* Appends v as Go's strconv.FormatFloat(v, 'g', -1, 64) (client_golang's
 * exposition format): shortest round-trip digits, NaN, +Inf, -Inf. */
void base_buf_double(base_buf *b, double v);
/* Appends s[0..n) as a JSON string, quotes included, escaped as Go's
 * encoding/json does (\" \\ \n \r \t, other control bytes and < > &
 * U+2028 U+2029 as \u00XX / \u20XX), so API answers match Prometheus's
 * byte for byte. Each byte of invalid UTF-8 becomes \ufffd, as in Go. */
void base_buf_json_str(base_buf *b, const char *s, size_t n);
/* Takes the data out; the buffer is left empty. Caller frees with free(). */
char *base_buf_steal(base_buf *b, size_t *ret_len);
static inline int base_buf_err(const base_buf *b) {
    return b->err;
}

#endif
