/* text.c -- UTF-8 with Go's decoding rules, Prometheus name validation and
 * Go's strconv.Quote, shared by label rendering, matcher rendering and the
 * regex engine.
 *
 * Go decodes UTF-8 strictly (no overlongs, no surrogates, nothing above
 * U+10FFFF) and turns each byte that does not start a valid sequence into
 * U+FFFD of width 1; the regex engine relies on exactly that rule.
 *
 * strconv.Quote keeps printable characters (unicode.IsPrint) and escapes
 * the rest. The printable test here knows every control, format,
 * separator, private-use and noncharacter code point; unassigned code
 * points (which Go escapes) are written as they are -- the one documented
 * difference, and it only concerns characters no real label carries.
 */
#include <stdarg.h>
#include <stdio.h>

#include "base/utf8.h"
#include "labels/labels_int.h"

/* Go's utf8.DecodeRune: an invalid or cut sequence is U+FFFD, one byte wide. */
size_t labels__utf8_decode(const uint8_t *p, size_t n, uint32_t *ret_rune) {
    size_t k = base_utf8_decode(p, n, ret_rune);
    if (k) return k;
    *ret_rune = 0xFFFD;
    return 1;
}

size_t labels__utf8_invalid_at(const uint8_t *p, size_t n) {
    size_t i = 0;
    while (i < n) {
        /* ASCII fast path, 8 bytes at a time. */
        while (i + 8 <= n) {
            uint64_t w;
            memcpy(&w, p + i, 8);
            if (w & 0x8080808080808080ull) break;
            i += 8;
        }
        if (i >= n) break;
        if (p[i] < 0x80) {
            i++;
            continue;
        }
        uint32_t r;
        size_t w = labels__utf8_decode(p + i, n - i, &r);
        if (r == 0xFFFD && w == 1) return i;
        i += w;
    }
    return n;
}

int labels_valid_utf8(base_str s) {
    return labels__utf8_invalid_at((const uint8_t *)s.p, s.n) == s.n;
}

static int is_alpha_(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

int labels_valid_label_name(base_str s) {
    if (s.n == 0 || !is_alpha_(s.p[0])) return 0;
    for (size_t i = 1; i < s.n; i++)
        if (!is_alpha_(s.p[i]) && !(s.p[i] >= '0' && s.p[i] <= '9')) return 0;
    return 1;
}

int labels_valid_metric_name(base_str s) {
    if (s.n == 0 || !(is_alpha_(s.p[0]) || s.p[0] == ':')) return 0;
    for (size_t i = 1; i < s.n; i++)
        if (!is_alpha_(s.p[i]) && !(s.p[i] >= '0' && s.p[i] <= '9') && s.p[i] != ':') return 0;
    return 1;
}

/* Code points above U+00FF that Go's unicode.IsPrint rejects (categories
 * Cc Cf Co Cs Zs Zl Zp and noncharacters), as sorted inclusive ranges. */
static const uint32_t nonprint[][2] = {
    {0x0600, 0x0605},   {0x061C, 0x061C},   {0x06DD, 0x06DD},   {0x070F, 0x070F},    {0x08E2, 0x08E2},
    {0x1680, 0x1680},   {0x180E, 0x180E},   {0x2000, 0x200F},   {0x2028, 0x202F},    {0x205F, 0x2064},
    {0x2066, 0x206F},   {0x3000, 0x3000},   {0xD800, 0xF8FF},   {0xFDD0, 0xFDEF},    {0xFEFF, 0xFEFF},
    {0xFFF9, 0xFFFB},   {0x110BD, 0x110BD}, {0x110CD, 0x110CD}, {0x13430, 0x13438},  {0x1BCA0, 0x1BCA3},
    {0x1D173, 0x1D17A}, {0xE0001, 0xE0001}, {0xE0020, 0xE007F}, {0xF0000, 0x10FFFF},
};

static int is_print(uint32_t r) {
    if (r < 0x80) return r >= 0x20 && r < 0x7F;
    if (r <= 0xFF) return r >= 0xA1 && r != 0xAD;
    if ((r & 0xFFFE) == 0xFFFE) return 0;
    size_t lo = 0, hi = sizeof nonprint / sizeof nonprint[0];
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (r < nonprint[mid][0])
            hi = mid;
        else if (r > nonprint[mid][1])
            lo = mid + 1;
        else
            return 0;
    }
    return 1;
}

static const char hexd[] = "0123456789abcdef";

void labels_quote(base_buf *out, base_str s) {
    const uint8_t *p = (const uint8_t *)s.p;
    base_buf_putc(out, '"');
    size_t i = 0;
    while (i < s.n) {
        /* Copy a run of plain printable ASCII at once. */
        size_t j = i;
        while (j < s.n && p[j] >= 0x20 && p[j] < 0x7F && p[j] != '"' && p[j] != '\\') j++;
        if (j > i) {
            base_buf_append(out, p + i, j - i);
            i = j;
            if (i >= s.n) break;
        }
        uint32_t r;
        size_t w = labels__utf8_decode(p + i, s.n - i, &r);
        if (w == 1 && r == 0xFFFD) {
            char e[4] = {'\\', 'x', hexd[p[i] >> 4], hexd[p[i] & 15]};
            base_buf_append(out, e, 4);
            i++;
            continue;
        }
        if (r == '"' || r == '\\') {
            char e[2] = {'\\', (char)r};
            base_buf_append(out, e, 2);
        } else if (is_print(r)) {
            base_buf_append(out, p + i, w);
        } else {
            switch (r) {
            case '\a': base_buf_puts(out, "\\a"); break;
            case '\b': base_buf_puts(out, "\\b"); break;
            case '\f': base_buf_puts(out, "\\f"); break;
            case '\n': base_buf_puts(out, "\\n"); break;
            case '\r': base_buf_puts(out, "\\r"); break;
            case '\t': base_buf_puts(out, "\\t"); break;
            case '\v': base_buf_puts(out, "\\v"); break;
            default:
                if (r < 0x20 || r == 0x7F) {
                    char e[4] = {'\\', 'x', hexd[r >> 4], hexd[r & 15]};
                    base_buf_append(out, e, 4);
                } else if (r < 0x10000) {
                    char e[6] = {'\\',        'u', hexd[r >> 12], hexd[(r >> 8) & 15], hexd[(r >> 4) & 15],
                                 hexd[r & 15]};
                    base_buf_append(out, e, 6);
                } else {
                    char e[10] = {'\\', 'U'};
                    for (int k = 0; k < 8; k++) e[2 + k] = hexd[(r >> (28 - 4 * k)) & 15];
                    base_buf_append(out, e, 10);
                }
            }
        }
        i += w;
    }
    base_buf_putc(out, '"');
}

void labels__errf(char *err, size_t errlen, const char *fmt, ...) {
    if (!err || errlen == 0) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}
