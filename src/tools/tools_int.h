/* tools_int.h -- helpers shared by the files of src/tools (module-internal): Go's
 * formatting of durations, times and byte sizes as promtool prints them,
 * and a text/tabwriter-compatible table. */
#ifndef KELVIN_TOOLS_TOOLS_INT_H
#define KELVIN_TOOLS_TOOLS_INT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Go's time.Duration(ns).String(): "1h59m0.001s", "1ms", "0s". out >= 40. */
size_t tools__go_duration(char *out, int64_t ns);
/* Go's time.Unix(sec, 0).UTC().String(): "1970-01-01 00:16:40 +0000 UTC".
 * out >= 64. */
size_t tools__go_time_utc(char *out, int64_t sec);
/* alecthomas/units Base2Bytes(n).String() for n >= 0: "5KiB522B". out >= 96. */
size_t tools__base2bytes(char *out, uint64_t n);

/* A table printed as Go's text/tabwriter.NewWriter(out, minwidth, 0,
 * padding, ' ', 0) prints tab-separated lines: every cell but the last of
 * a line is padded with spaces to its column's width (the widest cell +
 * padding, at least minwidth); the last cell is written as it is. */
typedef struct tools__table {
    char **cells; /* row-major, ncols per row, owned */
    size_t ncols, nrows, cap;
    int err;
} tools__table;

void tools__table_init(tools__table *t, size_t ncols);
/* Appends a row of ncols strings (copied). */
void tools__table_row(tools__table *t, const char *const *cells);
/* Prints and frees the table. Returns 0 or BASE_E_NOMEM (nothing printed). */
int tools__table_flush(tools__table *t, FILE *out, size_t minwidth, size_t padding);
void tools__table_free(tools__table *t);

/* Unix seconds or RFC 3339 (as the API takes them) into seconds. 0 or -1. */
int tools__parse_time(const char *s, double *ret);

/* floor(a / b) for b > 0. */
static inline int64_t tools__floor_div(int64_t a, int64_t b) {
    int64_t q = a / b;
    return (a % b < 0) ? q - 1 : q;
}

#endif
