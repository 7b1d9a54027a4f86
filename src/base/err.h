/* err.h -- Kelvin's one table of error codes.
 *
 * Every fallible function in the project returns 0 (or a count) on success
 * and a negative BASE_E_* code on failure, as libuv does. The names and
 * messages live in one X-macro table so that a code can always be printed.
 * Detail for humans (a position, a file name) goes into the caller's error
 * buffer, never into the code itself.
 */
#ifndef KELVIN_BASE_ERR_H
#define KELVIN_BASE_ERR_H

#include <stddef.h>

#define BASE_ERRNO_MAP(X)                                                                                    \
    X(NOMEM, -1, "out of memory")                                                                            \
    X(INVAL, -2, "invalid argument")                                                                         \
    X(PARSE, -3, "malformed input")                                                                          \
    X(RANGE, -4, "value out of range")                                                                       \
    X(LIMIT, -5, "limit exceeded")                                                                           \
    X(IO, -6, "input/output error")                                                                          \
    X(NOTFOUND, -7, "not found")                                                                             \
    X(UNSUPPORTED, -8, "not supported")                                                                      \
    X(AGAIN, -9, "try again")                                                                                \
    X(TIMEOUT, -10, "timed out")                                                                             \
    X(EXISTS, -11, "already exists")                                                                         \
    X(CONFLICT, -12, "conflicts with existing data")                                                         \
    X(TRUNCATED, -13, "input ended early")

enum {
#define BASE__ERR_ENUM(name, code, msg) BASE_E_##name = (code),
    BASE_ERRNO_MAP(BASE__ERR_ENUM)
#undef BASE__ERR_ENUM
};

/* The message for a BASE_E_* code ("unknown error" for anything else). */
const char *base_strerror(int code);
/* The short name ("NOMEM") for a BASE_E_* code. */
const char *base_errname(int code);
/* Formats the detail into a caller's error buffer (when err && errlen) and
 * returns code: `return base_errf(err, errlen, BASE_E_IO, "%s: ...", p);`. */
int base_errf(char *err, size_t errlen, int code, const char *fmt, ...) __attribute__((format(printf, 4, 5)));

#endif
