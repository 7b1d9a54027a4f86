/* utf8.c -- Go-compatible UTF-8 decoding and validation; see utf8.h. */
#include "base/utf8.h"

#include <string.h>

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
