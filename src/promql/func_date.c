/* func_date.c -- PromQL's date functions (year, month, day_of_month,
 * day_of_year, day_of_week, days_in_month, hour, minute) as Prometheus 2.42
 * computes them: time.Unix(int64(v), 0).UTC() and Go 1.19's calendar.
 *
 * Design: Go keeps a time as unsigned seconds since its "absolute" epoch
 * (January 1 of year -292277022399) and derives the calendar from that
 * with 400/100/4/1-year cycles (time.absDate). The same arithmetic is done
 * here on uint64 with Go's wrap-around, so even the values Prometheus
 * gets from NaN or +-Inf (int64(NaN) is INT64_MIN on amd64, year() of it
 * is 292277026596) come out as Go's. days_in_month is 2.42's
 * 32 - time.Date(year, month, 32).Day(), with time.Date's own arithmetic.
 *
 * Invariants: pure functions, no allocation; all intermediate arithmetic
 * on uint64 (defined wrap-around) or within int64 range.
 */
#include <math.h>
#include <stdint.h>

#include "promql/func.h"
#include "promql/func_int.h"

#define SECONDS_PER_MINUTE 60u
#define SECONDS_PER_HOUR   3600u
#define SECONDS_PER_DAY    86400u
#define SECONDS_PER_WEEK   (7u * SECONDS_PER_DAY)
#define DAYS_PER_400_YEARS (365u * 400u + 97u)
#define DAYS_PER_100_YEARS (365u * 100u + 24u)
#define DAYS_PER_4_YEARS   (365u * 4u + 1u)
/* The year of Go's absolute epoch, and the seconds from it to the Unix
 * epoch (unixToInternal + internalToAbsolute). */
#define ABSOLUTE_ZERO_YEAR INT64_C(-292277022399)
#define UNIX_TO_ABSOLUTE   UINT64_C(9223372028715321600)

/* Days before the start of each month (Go's daysBefore). */
static const int32_t days_before[13] = {
    0,
    31,
    31 + 28,
    31 + 28 + 31,
    31 + 28 + 31 + 30,
    31 + 28 + 31 + 30 + 31,
    31 + 28 + 31 + 30 + 31 + 30,
    31 + 28 + 31 + 30 + 31 + 30 + 31,
    31 + 28 + 31 + 30 + 31 + 30 + 31 + 31,
    31 + 28 + 31 + 30 + 31 + 30 + 31 + 31 + 30,
    31 + 28 + 31 + 30 + 31 + 30 + 31 + 31 + 30 + 31,
    31 + 28 + 31 + 30 + 31 + 30 + 31 + 31 + 30 + 31 + 30,
    31 + 28 + 31 + 30 + 31 + 30 + 31 + 31 + 30 + 31 + 30 + 31,
};

static int is_leap(int64_t year) {
    return year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
}

typedef struct go_date {
    int64_t year;
    int month; /* 1..12 */
    int day;   /* 1..31 */
    int yday;  /* 0-based */
} go_date;

/* Go 1.19 time.absDate(abs, full = true). */
static go_date abs_date(uint64_t abs) {
    go_date r;
    uint64_t d = abs / SECONDS_PER_DAY;

    uint64_t n = d / DAYS_PER_400_YEARS;
    uint64_t y = 400 * n;
    d -= DAYS_PER_400_YEARS * n;

    /* the last 100-year cycle has one more leap day: cut 4 back to 3 */
    n = d / DAYS_PER_100_YEARS;
    n -= n >> 2;
    y += 100 * n;
    d -= DAYS_PER_100_YEARS * n;

    n = d / DAYS_PER_4_YEARS;
    y += 4 * n;
    d -= DAYS_PER_4_YEARS * n;

    n = d / 365;
    n -= n >> 2;
    y += n;
    d -= 365 * n;

    r.year = (int64_t)y + ABSOLUTE_ZERO_YEAR;
    r.yday = (int)d;

    int day = r.yday;
    if (is_leap(r.year)) {
        if (day > 31 + 29 - 1) {
            day--; /* after the leap day: pretend it was not there */
        } else if (day == 31 + 29 - 1) {
            r.month = 2;
            r.day = 29;
            return r;
        }
    }
    /* estimate assuming 31-day months; too low by at most one */
    int month = day / 31;
    int end = days_before[month + 1];
    int begin;
    if (day >= end) {
        month++;
        begin = end;
    } else {
        begin = days_before[month];
    }
    r.month = month + 1;
    r.day = day - begin + 1;
    return r;
}

/* Go 1.19 time.daysSinceEpoch(year). */
static uint64_t days_since_epoch(int64_t year) {
    uint64_t y = (uint64_t)year - (uint64_t)ABSOLUTE_ZERO_YEAR;
    uint64_t n = y / 400;
    y -= 400 * n;
    uint64_t d = DAYS_PER_400_YEARS * n;
    n = y / 100;
    y -= 100 * n;
    d += DAYS_PER_100_YEARS * n;
    n = y / 4;
    y -= 4 * n;
    d += DAYS_PER_4_YEARS * n;
    d += 365 * y;
    return d;
}

/* 32 - time.Date(year, month, 32, 0, 0, 0, 0, time.UTC).Day(). Month is
 * already 1..12 and nothing else needs normalising; the Time's absolute
 * seconds are days * 86400 (Go converts to Unix seconds and back with the
 * same wrapping constants, which cancel). */
static int days_in_month(int64_t year, int month) {
    uint64_t d = days_since_epoch(year);
    d += (uint64_t)days_before[month - 1];
    if (is_leap(year) && month >= 3) d++;
    d += 32 - 1;
    return 32 - abs_date(d * SECONDS_PER_DAY).day;
}

int pq_fn_is_date(pq_func_id id) {
    switch (id) {
    case PQ_F_DAYS_IN_MONTH:
    case PQ_F_DAY_OF_MONTH:
    case PQ_F_DAY_OF_WEEK:
    case PQ_F_DAY_OF_YEAR:
    case PQ_F_HOUR:
    case PQ_F_MINUTE:
    case PQ_F_MONTH:
    case PQ_F_YEAR: return 1;
    default: return 0;
    }
}

int pq__fn_date(pq_func_id id, double v, double *ret) {
    uint64_t abs = (uint64_t)pq__go_f2i64(v) + UNIX_TO_ABSOLUTE;
    switch (id) {
    case PQ_F_YEAR: *ret = (double)abs_date(abs).year; return 1;
    case PQ_F_MONTH: *ret = abs_date(abs).month; return 1;
    case PQ_F_DAY_OF_MONTH: *ret = abs_date(abs).day; return 1;
    case PQ_F_DAY_OF_YEAR: *ret = abs_date(abs).yday + 1; return 1;
    case PQ_F_DAY_OF_WEEK:
        /* January 1 of the absolute year was a Monday */
        *ret = (double)(((abs + 1u * SECONDS_PER_DAY) % SECONDS_PER_WEEK) / SECONDS_PER_DAY);
        return 1;
    case PQ_F_HOUR: *ret = (double)((abs % SECONDS_PER_DAY) / SECONDS_PER_HOUR); return 1;
    case PQ_F_MINUTE: *ret = (double)((abs % SECONDS_PER_HOUR) / SECONDS_PER_MINUTE); return 1;
    case PQ_F_DAYS_IN_MONTH: {
        go_date dt = abs_date(abs);
        *ret = days_in_month(dt.year, dt.month);
        return 1;
    }
    default: return 0;
    }
}
