/* str.h -- a string view: a pointer and a length into someone else's
 * buffer. Views never own memory; whoever owns the buffer states how long
 * the view stays valid. */
#ifndef KELVIN_BASE_STR_H
#define KELVIN_BASE_STR_H

#include <stddef.h>
#include <string.h>

typedef struct base_str {
    const char *p;
    size_t n;
} base_str;

static inline base_str base_str_c(const char *s) {
    return (base_str){s, s ? strlen(s) : 0};
}
static inline int base_str_eq(base_str a, base_str b) {
    return a.n == b.n && (a.n == 0 || memcmp(a.p, b.p, a.n) == 0);
}
static inline int base_str_eqc(base_str a, const char *c) {
    return base_str_eq(a, base_str_c(c));
}
static inline int base_str_has_suffix(base_str a, const char *suf) {
    size_t n = strlen(suf);
    return n == 0 || (a.n >= n && memcmp(a.p + a.n - n, suf, n) == 0);
}
static inline int base_str_has_prefix(base_str a, const char *pre) {
    size_t n = strlen(pre);
    return n == 0 || (a.n >= n && memcmp(a.p, pre, n) == 0);
}

#endif
