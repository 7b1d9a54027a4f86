/* buf.c -- growable byte buffer, see buf.h. Growth doubles; a limit caps
 * the length and turns further appends into BASE_E_LIMIT. */
#include "base/buf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/num.h"
#include "base/utf8.h"

void base_buf_init(base_buf *b, size_t limit) {
    memset(b, 0, sizeof *b);
    b->limit = limit;
}

void base_buf_free(base_buf *b) {
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
    b->err = 0;
}

void base_buf_reset(base_buf *b) {
    b->len = 0;
    b->err = 0;
    if (b->data) b->data[0] = '\0';
}

int base_buf_reserve(base_buf *b, size_t n) {
    if (b->err) return b->err;
    if (n > SIZE_MAX / 2 - b->len) return b->err = BASE_E_NOMEM;
    if (b->limit && b->len + n > b->limit) return b->err = BASE_E_LIMIT;
    size_t need = b->len + n + 1;
    if (need <= b->cap) return 0;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < need) cap *= 2;
    char *p = realloc(b->data, cap);
    if (!p) return b->err = BASE_E_NOMEM;
    b->data = p;
    b->cap = cap;
    return 0;
}

void base__buf_append_slow(base_buf *b, const void *p, size_t n) {
    if (base_buf_reserve(b, n)) return;
    if (n) memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
}

void base_buf_vprintf(base_buf *b, const char *fmt, va_list ap) {
    va_list cp;
    va_copy(cp, ap);
    char small[256];
    int n = vsnprintf(small, sizeof small, fmt, cp);
    va_end(cp);
    if (n < 0) {
        if (!b->err) b->err = BASE_E_INVAL;
        return;
    }
    if ((size_t)n < sizeof small) {
        base_buf_append(b, small, (size_t)n);
        return;
    }
    if (base_buf_reserve(b, (size_t)n)) return;
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    b->len += (size_t)n;
}

void base_buf_printf(base_buf *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    base_buf_vprintf(b, fmt, ap);
    va_end(ap);
}

void base_buf_u64(base_buf *b, uint64_t v) {
    char tmp[24];
    size_t n = base_fmt_u64(tmp, v);
    base_buf_append(b, tmp, n);
}

void base_buf_i64(base_buf *b, int64_t v) {
    char tmp[24];
    size_t n = base_fmt_i64(tmp, v);
    base_buf_append(b, tmp, n);
}

void base_buf_double(base_buf *b, double v) {
    char tmp[BASE_FMT_DOUBLE_MAX];
    size_t n = base_fmt_double_g(tmp, v);
    base_buf_append(b, tmp, n);
}

void base_buf_json_str(base_buf *b, const char *s, size_t n) {
    static const char hex[] = "0123456789abcdef";
    base_buf_putc(b, '"');
    size_t start = 0, i = 0; /* start: first byte not yet copied */
    while (i < n) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x80) {
            if (c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&') {
                i++;
                continue;
            }
            base_buf_append(b, s + start, i - start);
            switch (c) {
            case '"': base_buf_puts(b, "\\\""); break;
            case '\\': base_buf_puts(b, "\\\\"); break;
            case '\n': base_buf_puts(b, "\\n"); break;
            case '\r': base_buf_puts(b, "\\r"); break;
            case '\t': base_buf_puts(b, "\\t"); break;
            default: {
                char u[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
                base_buf_append(b, u, 6);
            }
            }
            start = ++i;
            continue;
        }
        uint32_t r;
        size_t l = base_utf8_decode((const unsigned char *)s + i, n - i, &r);
        if (l == 0 || r == 0x2028 || r == 0x2029) {
            base_buf_append(b, s + start, i - start);
            base_buf_puts(b, l == 0 ? "\\ufffd" : r == 0x2028 ? "\\u2028" : "\\u2029");
            i += l ? l : 1;
            start = i;
            continue;
        }
        i += l;
    }
    base_buf_append(b, s + start, n - start);
    base_buf_putc(b, '"');
}

char *base_buf_steal(base_buf *b, size_t *ret_len) {
    char *p = b->data;
    if (ret_len) *ret_len = b->len;
    b->data = NULL;
    b->len = b->cap = 0;
    return p;
}
