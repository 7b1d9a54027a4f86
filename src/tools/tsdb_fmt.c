/* tsdb_fmt.c -- Go's ways of printing durations, times and byte sizes, and
 * text/tabwriter's table layout, so `kelvin tsdb list` and the backfill
 * report print what promtool prints, byte for byte.
 *
 * Design: each formatter writes right to left into a caller's buffer the
 * way Go's own code does (time.Duration.format, alecthomas/units
 * ToString), then moves the text to the start. The calendar conversion is
 * Howard Hinnant's days-from-civil inverse on int64, so every timestamp
 * (years far outside 1..9999 included) converts without libc.
 * Invariants: outputs are NUL-terminated; nothing here allocates except
 * the table, which owns copies of its cells.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "tools/tools_int.h"

/* ---- time.Duration.String ------------------------------------------------ */

/* Writes the fraction of v / 10^prec (".12", trailing zeros and a bare
 * point omitted) ending at buf[w]; returns the new start and v / 10^prec. */
static size_t fmt_frac(char *buf, size_t w, uint64_t *v, int prec) {
    int print = 0;
    for (int i = 0; i < prec; i++) {
        unsigned digit = (unsigned)(*v % 10);
        print = print || digit != 0;
        if (print) buf[--w] = (char)('0' + digit);
        *v /= 10;
    }
    if (print) buf[--w] = '.';
    return w;
}

static size_t fmt_int(char *buf, size_t w, uint64_t v) {
    if (v == 0) {
        buf[--w] = '0';
        return w;
    }
    while (v > 0) {
        buf[--w] = (char)('0' + v % 10);
        v /= 10;
    }
    return w;
}

size_t tools__go_duration(char *out, int64_t ns) {
    char buf[40];
    size_t w = sizeof buf;
    uint64_t u = (uint64_t)ns;
    int neg = ns < 0;
    if (neg) u = -u;
    if (u < 1000000000u) {
        int prec;
        buf[--w] = 's';
        if (u == 0) {
            buf[--w] = '0';
            goto done;
        } else if (u < 1000u) {
            prec = 0;
            buf[--w] = 'n';
        } else if (u < 1000000u) {
            prec = 3;
            buf[--w] = (char)0xb5; /* U+00B5 as UTF-8: 0xc2 0xb5 */
            buf[--w] = (char)0xc2;
        } else {
            prec = 6;
            buf[--w] = 'm';
        }
        w = fmt_frac(buf, w, &u, prec);
        w = fmt_int(buf, w, u);
    } else {
        buf[--w] = 's';
        w = fmt_frac(buf, w, &u, 9);
        w = fmt_int(buf, w, u % 60);
        u /= 60;
        if (u > 0) {
            buf[--w] = 'm';
            w = fmt_int(buf, w, u % 60);
            u /= 60;
            if (u > 0) {
                buf[--w] = 'h';
                w = fmt_int(buf, w, u);
            }
        }
    }
done:
    if (neg) buf[--w] = '-';
    size_t n = sizeof buf - w;
    memcpy(out, buf + w, n);
    out[n] = '\0';
    return n;
}

/* ---- time.Time.String in UTC --------------------------------------------- */

/* Days since 1970-01-01 -> proleptic Gregorian y/m/d (any int64 range the
 * caller passes; sec / 86400 keeps days within +-1.1e14). */
static void civil_from_days(int64_t z, int64_t *y, unsigned *m, unsigned *d) {
    z += 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    uint64_t doe = (uint64_t)(z - era * 146097);
    uint64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t yy = (int64_t)yoe + era * 400;
    uint64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    uint64_t mp = (5 * doy + 2) / 153;
    *d = (unsigned)(doy - (153 * mp + 2) / 5 + 1);
    *m = (unsigned)(mp < 10 ? mp + 3 : mp - 9);
    *y = yy + (*m <= 2);
}

size_t tools__go_time_utc(char *out, int64_t sec) {
    int64_t days = tools__floor_div(sec, 86400);
    int64_t rem = sec - days * 86400;
    int64_t y;
    unsigned mo, d;
    civil_from_days(days, &y, &mo, &d);
    /* Go's appendInt(year, 4): a sign, then at least 4 digits. */
    char ys[32];
    uint64_t ay = y < 0 ? -(uint64_t)y : (uint64_t)y;
    snprintf(ys, sizeof ys, "%s%04llu", y < 0 ? "-" : "", (unsigned long long)ay);
    return (size_t)snprintf(out, 64, "%s-%02u-%02u %02u:%02u:%02u +0000 UTC", ys, mo, d,
                            (unsigned)(rem / 3600), (unsigned)(rem / 60 % 60), (unsigned)(rem % 60));
}

/* ---- units.Base2Bytes.String --------------------------------------------- */

size_t tools__base2bytes(char *out, uint64_t n) {
    static const char *const units[] = {"", "K", "M", "G", "T", "P", "E"};
    char parts[7][24];
    int have[7] = {0};
    for (int i = 0; i < 7; i++) {
        if (n % 1024 != 0 || (i == 0 && n == 0)) {
            snprintf(parts[i], sizeof parts[i], "%u%s%s", (unsigned)(n % 1024), units[i],
                     i == 0 ? "B" : "iB");
            have[i] = 1;
        }
        n /= 1024;
        if (n == 0) break;
    }
    size_t len = 0;
    out[0] = '\0';
    for (int i = 6; i >= 0; i--)
        if (have[i]) {
            size_t l = strlen(parts[i]);
            memcpy(out + len, parts[i], l + 1);
            len += l;
        }
    return len;
}

/* ---- text/tabwriter -------------------------------------------------------- */

void tools__table_init(tools__table *t, size_t ncols) {
    memset(t, 0, sizeof *t);
    t->ncols = ncols;
}

void tools__table_free(tools__table *t) {
    for (size_t i = 0; i < t->nrows * t->ncols; i++) free(t->cells[i]);
    free(t->cells);
    t->cells = NULL;
    t->nrows = t->cap = 0;
}

void tools__table_row(tools__table *t, const char *const *cells) {
    if (t->err) return;
    if (t->nrows == t->cap) {
        size_t nc = t->cap ? t->cap * 2 : 8;
        char **p = realloc(t->cells, nc * t->ncols * sizeof *p);
        if (!p) {
            t->err = BASE_E_NOMEM;
            return;
        }
        t->cells = p;
        t->cap = nc;
    }
    char **row = t->cells + t->nrows * t->ncols;
    for (size_t c = 0; c < t->ncols; c++) {
        row[c] = strdup(cells[c] ? cells[c] : "");
        if (!row[c]) {
            for (size_t k = 0; k < c; k++) free(row[k]);
            t->err = BASE_E_NOMEM;
            return;
        }
    }
    t->nrows++;
}

/* Display width as tabwriter counts it: UTF-8 runes. */
static size_t runes(const char *s) {
    size_t n = 0;
    for (; *s; s++)
        if (((unsigned char)*s & 0xc0) != 0x80) n++;
    return n;
}

int tools__table_flush(tools__table *t, FILE *out, size_t minwidth, size_t padding) {
    if (t->err) {
        int e = t->err;
        tools__table_free(t);
        return e;
    }
    size_t *w = calloc(t->ncols ? t->ncols : 1, sizeof *w);
    if (!w) {
        tools__table_free(t);
        return BASE_E_NOMEM;
    }
    for (size_t c = 0; c + 1 < t->ncols; c++) {
        w[c] = minwidth;
        for (size_t r = 0; r < t->nrows; r++) {
            size_t cw = runes(t->cells[r * t->ncols + c]) + padding;
            if (cw > w[c]) w[c] = cw;
        }
    }
    for (size_t r = 0; r < t->nrows; r++) {
        for (size_t c = 0; c < t->ncols; c++) {
            const char *s = t->cells[r * t->ncols + c];
            fputs(s, out);
            if (c + 1 < t->ncols)
                for (size_t k = runes(s); k < w[c]; k++) fputc(' ', out);
        }
        fputc('\n', out);
    }
    free(w);
    tools__table_free(t);
    return 0;
}
