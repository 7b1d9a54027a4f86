/* form.h -- a request's arguments as Go's net/http hands them to
 * Prometheus's API (r.Form, r.FormValue, r.ParseForm).
 *
 * WHAT GO DOES, AND SO DOES THIS. r.Form holds every value of every
 * argument, repeated ones included (match[]=a&match[]=b), from two
 * sources, in this order:
 *   1. the body, for POST, PUT and PATCH requests whose Content-Type is
 *      application/x-www-form-urlencoded (media type compared without case,
 *      parameters such as charset ignored);
 *   2. the URL's query string.
 * So r.FormValue(name) -- the first value -- prefers the body. Both are
 * parsed as url.ParseQuery does (Go 1.19, Prometheus 2.42's toolchain):
 * pairs separated by '&'; a pair containing ';' is skipped with the error
 * `invalid semicolon separator in query`; empty pairs are skipped; the
 * name and the value are split at the first '='; '+' is a space; %XX is a
 * byte; a pair with a bad escape is skipped with the error
 * `invalid URL escape "%zz"`. The first escape error is kept, except that
 * a later semicolon error replaces it (Go assigns that one
 * unconditionally). Prometheus's series and delete_series endpoints
 * report it as "error parsing form values: <err>"; the others ignore it.
 *
 * WHERE WE DIFFER. The URL's query string comes from libmicrohttpd, which
 * has already split and decoded it: a bad escape there is kept literally
 * and a ';' is an ordinary byte, so those two errors are only found in
 * bodies. (A raw query string from src/http would fix this.) Multipart
 * bodies (multipart/form-data), which Go also reads, are not parsed.
 *
 * Values are binary-safe views (%00 is a NUL inside a value).
 * Limits: at most HTTP_FORM_MAX_PAIRS pairs; the body is limited by the
 * server's request size limit already.
 *
 * Ownership: an http_form owns copies of every name and value; views stay
 * valid until http_form_free. Not thread-safe; one per request.
 */
#ifndef KELVIN_HTTP_FORM_H
#define KELVIN_HTTP_FORM_H

#include <stddef.h>

#include "base/str.h"
#include "http/http.h"

#define HTTP_FORM_MAX_PAIRS 100000

typedef struct http_form_pair {
    base_str name, value; /* NUL-terminated too, for libc's edge */
} http_form_pair;

typedef struct http_form {
    http_form_pair *v;
    size_t n, cap;
    int err;          /* 0, or the first BASE_E_* from parsing or memory */
    char errmsg[128]; /* for BASE_E_PARSE: Go's ParseForm error text */
} http_form;

void http_form_init(http_form *f);
void http_form_free(http_form *f);

/* Appends the pairs of the urlencoded text s[0..n) as url.ParseQuery
 * does (see above). Returns 0; BASE_E_PARSE when a pair was skipped for a
 * bad escape or a ';' (f->errmsg says why; the other pairs are kept);
 * BASE_E_NOMEM, BASE_E_LIMIT (more than HTTP_FORM_MAX_PAIRS pairs). The
 * first error also stays in f->err. */
int http_form_parse(http_form *f, const char *s, size_t n);
/* Appends one pair (copied). 0, BASE_E_NOMEM or BASE_E_LIMIT. */
int http_form_add(http_form *f, base_str name, base_str value);

/* Fills an initialised form from a request: the body first (see above),
 * then the URL's arguments. Returns f->err (BASE_E_PARSE is not fatal:
 * the form holds every pair that parsed). */
int http_form_from_request(http_form *f, const http_request *req);

/* The first value of name (Go's FormValue); {NULL, 0} when absent. */
base_str http_form_get(const http_form *f, const char *name);
/* Every value of name in order: writes the first min(n, cap) to ret and
 * returns n (call with cap 0 to count). */
size_t http_form_values(const http_form *f, const char *name, base_str *ret, size_t cap);

#endif
