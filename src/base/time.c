/* time.c -- clocks and Prometheus duration parsing and formatting; see time.h. */
#include "base/time.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "base/err.h"

static int64_t ts_ns(clockid_t id) {
    struct timespec t;
    clock_gettime(id, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

int64_t base_mono_ns(void) {
    return ts_ns(CLOCK_MONOTONIC);
}
int64_t base_unix_ms(void) {
    return ts_ns(CLOCK_REALTIME) / 1000000;
}
int64_t base_process_cpu_ns(void) {
    return ts_ns(CLOCK_PROCESS_CPUTIME_ID);
}
int64_t base_thread_cpu_ns(void) {
    return ts_ns(CLOCK_THREAD_CPUTIME_ID);
}

void base_sleep_until(int64_t deadline_ns) {
    struct timespec t = {.tv_sec = deadline_ns / 1000000000, .tv_nsec = deadline_ns % 1000000000};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL) == EINTR) {
    }
}

/* Prometheus's model.ParseDuration (common v0.39, as 2.42 uses it):
 * `^((\d+)y)?((\d+)w)?((\d+)d)?((\d+)h)?((\d+)m)?((\d+)s)?((\d+)ms)?$`, or
 * a bare "0"; every unit at most once and in that order; the total must
 * fit a Go time.Duration (int64 nanoseconds), so at most 9223372036854 ms. */
int base_parse_duration_ms(const char *s, int64_t *ret_ms) {
    static const struct {
        const char *u;
        int64_t ms;
    } units[] = {{"y", 31536000000LL}, {"w", 604800000LL}, {"d", 86400000LL}, {"h", 3600000},
                 {"m", 60000},         {"s", 1000},        {"ms", 1}};
    const int64_t max_ms = INT64_MAX / 1000000; /* Duration is in ns */
    if (!s || !*s) return BASE_E_PARSE;
    if (strcmp(s, "0") == 0) {
        *ret_ms = 0;
        return 0;
    }
    int64_t total = 0;
    int range = 0;
    int next = 0; /* the first unit still allowed */
    while (*s) {
        int64_t v = 0;
        int digits = 0;
        while (*s >= '0' && *s <= '9') {
            if (v <= max_ms) v = v * 10 + (*s - '0');
            s++;
            digits++;
        }
        if (!digits) return BASE_E_PARSE;
        int found = -1;
        for (int i = next; i < 7; i++) {
            size_t n = strlen(units[i].u);
            /* "m" must not take the m of "ms" */
            if (strncmp(s, units[i].u, n) == 0 && !(i == 4 && s[1] == 's')) {
                found = i;
                s += n;
                break;
            }
        }
        if (found < 0) return BASE_E_PARSE;
        next = found + 1;
        if (v > max_ms / units[found].ms)
            range = 1;
        else
            total += v * units[found].ms;
        if (total > max_ms) range = 1;
    }
    if (range) return BASE_E_RANGE;
    *ret_ms = total;
    return 0;
}

/* model.Duration.String() (common v0.39): units largest first, y and w only
 * when they divide the whole duration exactly. */
size_t base_fmt_duration(char *out, size_t n, int64_t ms) {
    static const struct {
        const char *u;
        int64_t mult;
        int exact;
    } units[] = {
        {"y", 1000LL * 60 * 60 * 24 * 365, 1},
        {"w", 1000LL * 60 * 60 * 24 * 7, 1},
        {"d", 1000LL * 60 * 60 * 24, 0},
        {"h", 1000LL * 60 * 60, 0},
        {"m", 1000LL * 60, 0},
        {"s", 1000, 0},
        {"ms", 1, 0},
    };
    if (n == 0) return 0;
    out[0] = '\0';
    if (ms == 0) {
        int k = snprintf(out, n, "0s");
        return (size_t)k < n ? (size_t)k : n - 1;
    }
    size_t len = 0;
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (units[i].exact && ms % units[i].mult != 0) continue;
        int64_t v = ms / units[i].mult;
        if (v > 0) {
            int k = snprintf(out + len, n - len, "%" PRId64 "%s", v, units[i].u);
            if (k < 0 || (size_t)k >= n - len) {
                out[len] = '\0';
                return len;
            }
            len += (size_t)k;
            ms -= v * units[i].mult;
        }
    }
    return len;
}
