/* utf8.c -- Go-compatible UTF-8 decoding and validation, and Go's string
 * literal unquoting (PromQL's strings, text/template's); see utf8.h. */
#include "base/utf8.h"

#include <string.h>

#include "base/buf.h"
#include "base/err.h"

size_t base_utf8_decode(const unsigned char *s, size_t n, uint32_t *ret) {
    unsigned c = s[0];
    if (c < 0x80) {
        *ret = c;
        return 1;
    }
    size_t len;
    uint32_t r;
    unsigned lo = 0x80, hi = 0xbf; /* the range of the second byte */
    if (c >= 0xc2 && c <= 0xdf) {
        len = 2, r = c & 0x1f;
    } else if (c >= 0xe0 && c <= 0xef) {
        len = 3, r = c & 0x0f;
        if (c == 0xe0) lo = 0xa0; /* no overlongs */
        if (c == 0xed) hi = 0x9f; /* no surrogates */
    } else if (c >= 0xf0 && c <= 0xf4) {
        len = 4, r = c & 0x07;
        if (c == 0xf0) lo = 0x90;
        if (c == 0xf4) hi = 0x8f; /* nothing above U+10FFFF */
    } else {
        return 0;
    }
    if (n < len) return 0;
    for (size_t k = 1; k < len; k++) {
        unsigned d = s[k];
        if (d < (k == 1 ? lo : 0x80) || d > (k == 1 ? hi : 0xbf)) return 0;
        r = (r << 6) | (d & 0x3f);
    }
    *ret = r;
    return len;
}

int base_utf8_valid(const char *s, size_t n) {
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0;
    while (i < n) {
        while (i + 8 <= n) {
            uint64_t w;
            memcpy(&w, u + i, 8);
            if (w & UINT64_C(0x8080808080808080)) break;
            i += 8;
        }
        if (i >= n) break;
        if (u[i] < 0x80) {
            i++;
            continue;
        }
        uint32_t r;
        size_t k = base_utf8_decode(u + i, n - i, &r);
        if (!k) return 0;
        i += k;
    }
    return 1;
}

size_t base_utf8_encode(uint32_t r, unsigned char out[4]) {
    if (r < 0x80) {
        out[0] = (uint8_t)r;
        return 1;
    }
    if (r < 0x800) {
        out[0] = (uint8_t)(0xC0 | r >> 6);
        out[1] = (uint8_t)(0x80 | (r & 0x3F));
        return 2;
    }
    if (r < 0x10000) {
        out[0] = (uint8_t)(0xE0 | r >> 12);
        out[1] = (uint8_t)(0x80 | ((r >> 6) & 0x3F));
        out[2] = (uint8_t)(0x80 | (r & 0x3F));
        return 3;
    }
    out[0] = (uint8_t)(0xF0 | r >> 18);
    out[1] = (uint8_t)(0x80 | ((r >> 12) & 0x3F));
    out[2] = (uint8_t)(0x80 | ((r >> 6) & 0x3F));
    out[3] = (uint8_t)(0x80 | (r & 0x3F));
    return 4;
}

/* ---- Go string literals --------------------------------------------------------------------- */

static int hex_val(unsigned c) {
    if (c >= '0' && c <= '9') return (int)(c - '0');
    if (c >= 'a' && c <= 'f') return (int)(c - 'a' + 10);
    if (c >= 'A' && c <= 'F') return (int)(c - 'A' + 10);
    return -1;
}

static void put_rune(base_buf *out, uint32_t r) {
    unsigned char u[4];
    base_buf_append(out, u, base_utf8_encode(r, u));
}

int base_go_unquote(const char *s, size_t n, unsigned flags, struct base_buf *out) {
    if (n < 2 || s[0] != s[n - 1]) return BASE_E_PARSE;
    char q = s[0];
    s++;
    n -= 2;
    if (q == '`') {
        for (size_t i = 0; i < n; i++) {
            if (s[i] == '`') return BASE_E_PARSE;
            if (s[i] == '\r' && (flags & BASE_UNQUOTE_RAW_DROP_CR)) continue;
            base_buf_putc(out, s[i]);
        }
        return base_buf_err(out) ? BASE_E_NOMEM : 0;
    }
    if (q != '"' && q != '\'') return BASE_E_PARSE;
    size_t i = 0;
    while (i < n) {
        unsigned char c = (unsigned char)s[i];
        if (c == (unsigned char)q || c == '\n') return BASE_E_PARSE;
        if (c != '\\') {
            base_buf_putc(out, (char)c);
            i++;
            continue;
        }
        if (++i >= n) return BASE_E_PARSE;
        c = (unsigned char)s[i++];
        switch (c) {
        case 'a': base_buf_putc(out, '\a'); break;
        case 'b': base_buf_putc(out, '\b'); break;
        case 'f': base_buf_putc(out, '\f'); break;
        case 'n': base_buf_putc(out, '\n'); break;
        case 'r': base_buf_putc(out, '\r'); break;
        case 't': base_buf_putc(out, '\t'); break;
        case 'v': base_buf_putc(out, '\v'); break;
        case '\\': base_buf_putc(out, '\\'); break;
        case 'x':
        case 'u':
        case 'U': {
            int k = c == 'x' ? 2 : c == 'u' ? 4 : 8;
            if (i + (size_t)k > n) return BASE_E_PARSE;
            uint32_t v = 0;
            for (int j = 0; j < k; j++) {
                int d = hex_val((unsigned char)s[i + (size_t)j]);
                if (d < 0) return BASE_E_PARSE;
                v = v * 16 + (uint32_t)d;
            }
            i += (size_t)k;
            if (c == 'x') {
                base_buf_putc(out, (char)v);
            } else {
                if (v > 0x10FFFF || (v >= 0xD800 && v < 0xE000)) return BASE_E_PARSE;
                put_rune(out, v);
            }
            break;
        }
        case '0':
        case '1':
        case '2':
        case '3':
        case '4':
        case '5':
        case '6':
        case '7': {
            if (i + 2 > n) return BASE_E_PARSE;
            uint32_t v = (uint32_t)(c - '0');
            for (int j = 0; j < 2; j++) {
                unsigned char d = (unsigned char)s[i + (size_t)j];
                if (d < '0' || d > '7') return BASE_E_PARSE;
                v = v * 8 + (uint32_t)(d - '0');
            }
            i += 2;
            if (v > 255) return BASE_E_PARSE;
            base_buf_putc(out, (char)v);
            break;
        }
        default:
            if (c == (unsigned char)q) {
                base_buf_putc(out, (char)c);
                break;
            }
            return BASE_E_PARSE;
        }
    }
    return base_buf_err(out) ? BASE_E_NOMEM : 0;
}
