/* utf8.h -- UTF-8 as Go reads it (Prometheus, node_exporter and the
 * Pushgateway are Go programs, so Kelvin accepts and rejects exactly what
 * they do): no overlong forms, no surrogates, nothing above U+10FFFF. */
#ifndef KELVIN_BASE_UTF8_H
#define KELVIN_BASE_UTF8_H

#include <stddef.h>
#include <stdint.h>

/* Decodes the rune at s (n > 0 bytes available): returns its length and
 * writes *ret, or returns 0 when s does not start with a valid rune. */
size_t base_utf8_decode(const unsigned char *s, size_t n, uint32_t *ret);
/* Writes the UTF-8 encoding of r (r <= 0x10FFFF, not a surrogate) to out;
 * returns its length (1-4). */
size_t base_utf8_encode(uint32_t r, unsigned char out[4]);
/* Go's utf8.Valid over s[0..n). ASCII runs are checked eight bytes at a time. */
int base_utf8_valid(const char *s, size_t n);

/* A Go string literal s[0..n), quotes included ("...", '...' or `...`),
 * unquoted into out with Go's escapes: \a \b \f \n \r \t \v \\, \x and
 * three-digit octal bytes, \u and \U runes (not surrogates, at most
 * U+10FFFF) and the literal's own quote; a raw literal is taken as it is.
 * '...' holds any string, as Prometheus's strutil.Unquote (PromQL) reads
 * it -- Go's strconv.Unquote callers pass double or back quotes only.
 * BASE_UNQUOTE_RAW_DROP_CR: carriage returns are dropped from a raw
 * literal, as strconv.Unquote does. Returns 0, BASE_E_PARSE, or
 * BASE_E_NOMEM (out's sticky error). */
#define BASE_UNQUOTE_RAW_DROP_CR 1u
struct base_buf;
int base_go_unquote(const char *s, size_t n, unsigned flags, struct base_buf *out);

#endif
