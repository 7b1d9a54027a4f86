/* err.c -- names and messages for the BASE_E_* table in err.h, and the
 * error-buffer formatter every module uses. */
#include "base/err.h"

#include <stdarg.h>
#include <stdio.h>

const char *base_strerror(int code) {
    switch (code) {
#define BASE__ERR_MSG(name, c, msg)                                                                          \
    case c: return msg;
        BASE_ERRNO_MAP(BASE__ERR_MSG)
#undef BASE__ERR_MSG
    default: return code >= 0 ? "success" : "unknown error";
    }
}

const char *base_errname(int code) {
    switch (code) {
#define BASE__ERR_NAME(name, c, msg)                                                                         \
    case c: return #name;
        BASE_ERRNO_MAP(BASE__ERR_NAME)
#undef BASE__ERR_NAME
    default: return code >= 0 ? "OK" : "UNKNOWN";
    }
}

int base_errf(char *err, size_t errlen, int code, const char *fmt, ...) {
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return code;
}
