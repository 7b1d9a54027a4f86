/* time.c -- clocks and Prometheus duration parsing; see time.h. */
#include "base/time.h"

#include <errno.h>
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
