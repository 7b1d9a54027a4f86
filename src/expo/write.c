/* write.c -- rendering expo_msets as text 0.0.4 or OpenMetrics 1.0.
 *
 * Text 0.0.4: `# HELP name text` (escapes \\ and \n), `# TYPE name type`,
 * then `name{labels} value[ timestamp_ms]`. Values as client_golang writes
 * them (Go 'g', shortest round-trip), so a diff against node_exporter is
 * byte-for-byte where the values agree.
 *
 * OpenMetrics 1.0: `# TYPE`, `# UNIT`, `# HELP` (escapes \\ \n \"), samples
 * with float-second timestamps (chosen so that Prometheus's parser reads
 * back the same millisecond, see put_om_ts), `# EOF` at the end. See
 * expo.h for how counters keep their sample names.
 */
#include <math.h>
#include <string.h>

#include "base/num.h"
#include "expo/expo.h"

const char *expo_type_name(expo_type t, expo_format fmt) {
    switch (t) {
    case EXPO_COUNTER: return "counter";
    case EXPO_GAUGE: return "gauge";
    case EXPO_HISTOGRAM: return "histogram";
    case EXPO_SUMMARY: return "summary";
    case EXPO_INFO: return fmt == EXPO_FMT_OPENMETRICS ? "info" : "untyped";
    case EXPO_STATESET: return fmt == EXPO_FMT_OPENMETRICS ? "stateset" : "untyped";
    case EXPO_GAUGEHISTOGRAM: return fmt == EXPO_FMT_OPENMETRICS ? "gaugehistogram" : "untyped";
    case EXPO_UNTYPED: break;
    }
    return fmt == EXPO_FMT_OPENMETRICS ? "unknown" : "untyped";
}

static void put_help(base_buf *out, const char *h, int om) {
    if (!strpbrk(h, om ? "\\\n\"" : "\\\n")) { /* the usual case: nothing to escape */
        base_buf_puts(out, h);
        return;
    }
    size_t run = 0, i = 0;
    for (; h[i]; i++) {
        char c = h[i];
        if (c == '\\' || c == '\n' || (om && c == '"')) {
            base_buf_append(out, h + run, i - run);
            base_buf_append(out, c == '\\' ? "\\\\" : c == '\n' ? "\\n" : "\\\"", 2);
            run = i + 1;
        }
    }
    base_buf_append(out, h + run, i - run);
}

/* An OpenMetrics timestamp: float seconds. Prometheus reads it back as
 * int64(seconds * 1000), which truncates; for about 0.6% of millisecond
 * values the double nearest to "sec.mmm" times 1000 falls just below the
 * integer (1078098474.429 -> ...428). For those we write the next double
 * away from zero instead (1078098474.4290001), which reads back exactly. */
static void put_om_ts(base_buf *out, int64_t ts_ms) {
    if (ts_ms > -(INT64_C(1) << 53) && ts_ms < (INT64_C(1) << 53)) {
        double d = (double)ts_ms / 1000.0; /* = strtod("sec.mmm"): both correctly rounded */
        if ((int64_t)(d * 1000.0) != ts_ms) {
            char tmp[BASE_FMT_DOUBLE_MAX];
            d = nextafter(d, ts_ms < 0 ? -INFINITY : INFINITY);
            base_buf_append(out, tmp, base_fmt_double_f(tmp, d));
            return;
        }
    }
    uint64_t ms = ts_ms < 0 ? (uint64_t)0 - (uint64_t)ts_ms : (uint64_t)ts_ms;
    if (ts_ms < 0) base_buf_putc(out, '-');
    base_buf_u64(out, ms / 1000);
    unsigned rem = (unsigned)(ms % 1000);
    if (rem) base_buf_printf(out, ".%03u", rem);
}

static int has_suffix(const char *s, size_t n, const char *suf) {
    size_t m = strlen(suf);
    return n >= m && memcmp(s + n - m, suf, m) == 0;
}

static void write_family(const expo_family *f, expo_format fmt, base_buf *out) {
    int om = fmt == EXPO_FMT_OPENMETRICS;
    size_t nlen = strlen(f->name);
    size_t mflen = nlen; /* the MetricFamily name used in metadata lines */
    expo_type t = f->type;
    if (om) {
        if (t == EXPO_COUNTER) {
            if (has_suffix(f->name, nlen, "_total"))
                mflen = nlen - 6;
            else
                t = EXPO_UNTYPED;
        } else if (t == EXPO_INFO) {
            if (has_suffix(f->name, nlen, "_info"))
                mflen = nlen - 5;
            else
                t = EXPO_GAUGE;
        }
    }
    if (!om && f->help) {
        base_buf_append(out, "# HELP ", 7);
        base_buf_append(out, f->name, nlen);
        base_buf_putc(out, ' ');
        put_help(out, f->help, 0);
        base_buf_putc(out, '\n');
    }
    base_buf_append(out, "# TYPE ", 7);
    base_buf_append(out, f->name, mflen);
    base_buf_putc(out, ' ');
    base_buf_puts(out, expo_type_name(t, fmt));
    base_buf_putc(out, '\n');
    if (om && f->unit && *f->unit && has_suffix(f->name, mflen, f->unit)) {
        base_buf_append(out, "# UNIT ", 7);
        base_buf_append(out, f->name, mflen);
        base_buf_putc(out, ' ');
        base_buf_puts(out, f->unit);
        base_buf_putc(out, '\n');
    }
    if (om && f->help) {
        base_buf_append(out, "# HELP ", 7);
        base_buf_append(out, f->name, mflen);
        base_buf_putc(out, ' ');
        put_help(out, f->help, 1);
        base_buf_putc(out, '\n');
    }
    for (const expo_sample *s = f->head; s; s = s->next) {
        /* A suffixed sample of a stripped counter (_created) hangs off the
         * base name; every other sample name is family name + suffix. */
        if (*s->suffix && mflen != nlen)
            base_buf_append(out, f->name, mflen);
        else
            base_buf_append(out, f->name, nlen);
        base_buf_puts(out, s->suffix);
        int hl = s->labels && *s->labels, he = s->extra && *s->extra;
        if (hl || he) {
            base_buf_putc(out, '{');
            if (hl) base_buf_puts(out, s->labels);
            if (hl && he) base_buf_putc(out, ',');
            if (he) base_buf_puts(out, s->extra);
            base_buf_putc(out, '}');
        }
        base_buf_putc(out, ' ');
        base_buf_double(out, s->value);
        if (s->ts_ms != EXPO_NO_TS) {
            base_buf_putc(out, ' ');
            if (om) {
                put_om_ts(out, s->ts_ms);
            } else {
                base_buf_i64(out, s->ts_ms);
            }
        }
        base_buf_putc(out, '\n');
    }
}

int expo_write(expo_mset *const *sets, size_t nsets, expo_format fmt, base_buf *out) {
    for (size_t i = 0; i < nsets; i++) {
        if (!sets[i]) continue;
        for (const expo_family *f = sets[i]->head; f; f = f->next)
            if (f->nsamples) write_family(f, fmt, out);
    }
    if (fmt == EXPO_FMT_OPENMETRICS) base_buf_append(out, "# EOF\n", 6);
    return base_buf_err(out);
}
