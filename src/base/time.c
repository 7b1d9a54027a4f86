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

int64_t base_mono_ns(void) { return ts_ns(CLOCK_MONOTONIC); }
int64_t base_unix_ms(void) { return ts_ns(CLOCK_REALTIME) / 1000000; }
int64_t base_process_cpu_ns(void) { return ts_ns(CLOCK_PROCESS_CPUTIME_ID); }
int64_t base_thread_cpu_ns(void) { return ts_ns(CLOCK_THREAD_CPUTIME_ID); }

void base_sleep_until(int64_t deadline_ns) {
    struct timespec t = {.tv_sec = deadline_ns / 1000000000, .tv_nsec = deadline_ns % 1000000000};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL) == EINTR) {
    }
}

int base_parse_duration_ms(const char *s, int64_t *ret_ms) {
    static const struct {
        const char *u;
        int64_t ms;
    } units[] = {{"ms", 1},          {"s", 1000},          {"m", 60000},           {"h", 3600000},
                 {"d", 86400000LL}, {"w", 604800000LL}, {"y", 31536000000LL}};
    if (!s || !*s) return BASE_E_PARSE;
    int64_t total = 0;
    int last = -1; /* units must come in decreasing order, each once */
    while (*s) {
        int64_t v = 0;
        int digits = 0;
        while (*s >= '0' && *s <= '9') {
            if (v > (INT64_MAX - 9) / 10) return BASE_E_RANGE;
            v = v * 10 + (*s++ - '0');
            digits++;
        }
        if (!digits) return BASE_E_PARSE;
        int found = -1;
        for (int i = 0; i < 7; i++) {
            size_t n = strlen(units[i].u);
            if (strncmp(s, units[i].u, n) == 0 && !(n == 1 && units[i].u[0] == 'm' && s[1] == 's')) {
                found = i;
                s += n;
                break;
            }
        }
        if (found < 0) return BASE_E_PARSE;
        int rank = found == 0 ? 0 : 7 - found; /* ms smallest */
        if (last >= 0 && rank >= last) return BASE_E_PARSE;
        last = rank;
        if (v > INT64_MAX / units[found].ms) return BASE_E_RANGE;
        v *= units[found].ms;
        if (total > INT64_MAX - v) return BASE_E_RANGE;
        total += v;
    }
    *ret_ms = total;
    return 0;
}
