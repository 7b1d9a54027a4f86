/* tsdb_dump.c -- `kelvin tsdb dump`: every sample of the selected series
 * in the blocks and the head (WAL) of a data directory, in promtool 2.42's
 * format (cmd/promtool/tsdb.go
 * dumpSamples): one line per sample,
 *     fmt.Printf("%s %g %d\n", labels, value, timestamp)
 * where labels is labels.Labels.String() ({__name__="x", a="b"}, values
 * quoted as strconv.Quote; labels_format) and %g is Go's shortest 'g'
 * formatting with +Inf/-Inf/NaN (base_fmt_double_g; fmt's %g adds nothing
 * to strconv's for these). The database is opened read-only
 * (tsdb_db_select: blocks and head merged; series sorted by labels, a
 * series present in several places merged by time, one sample per
 * timestamp, the older block first), like the querier promtool dumps
 * through.
 *
 * Differences from promtool, on purpose: blocks that fail to open are
 * reported and skipped (promtool refuses the whole directory), and a chunk
 * with a bad CRC ends that series' samples from that block with a report
 * on stderr while the rest is still dumped; the command then exits 1.
 *
 * OPENMETRICS (tools_tsdb_dump_openmetrics, `kelvin tsdb
 * dump-openmetrics`, as later promtools' dump-openmetrics): the same
 * samples as OpenMetrics text that `create-blocks-from openmetrics` (ours
 * or promtool's) reads back: `name{a="b"} value seconds.mmm` lines (label
 * values escaped as OpenMetrics escapes them: \\, \", \n), no TYPE lines
 * (every family unknown), stale markers left out, `# EOF` at the end.
 * Series come sorted by labels, so each family's lines are together.
 *
 * Memory: one current series per block; output goes through a 64 KiB
 * buffer.
 */
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/num.h"
#include "tools/tools.h"
#include "tools/tools_int.h"

typedef struct dumper {
    FILE *out;
    base_buf ob, prefix;
    tools_bad_fn bad;
    void *ctx;
    tools_dump_result res;
    int series_bad;
    int om; /* OpenMetrics */
} dumper;

static int flush_out(dumper *d, int force) {
    if (base_buf_err(&d->ob)) return BASE_E_NOMEM;
    if (d->ob.len && (force || d->ob.len >= 65536)) {
        if (fwrite(d->ob.data, 1, d->ob.len, d->out) != d->ob.len) return BASE_E_IO;
        base_buf_reset(&d->ob);
    }
    return 0;
}

static int emit(dumper *d, int64_t t, double v) {
    char num[BASE_FMT_DOUBLE_MAX], ts[24];
    if (d->om && base_is_stale(v)) return 0;
    size_t nn = base_fmt_double_g(num, v), tn;
    if (d->om) { /* seconds with the milliseconds */
        int64_t sec = t / 1000, ms = t % 1000;
        if (ms < 0) sec--, ms += 1000;
        tn = base_fmt_i64(ts, sec);
        if (ms) tn += (size_t)snprintf(ts + tn, sizeof ts - tn, ".%03d", (int)ms);
    } else {
        tn = base_fmt_i64(ts, t);
    }
    base_buf_append(&d->ob, d->prefix.data, d->prefix.len);
    base_buf_append(&d->ob, num, nn);
    base_buf_putc(&d->ob, ' ');
    base_buf_append(&d->ob, ts, tn);
    base_buf_putc(&d->ob, '\n');
    d->res.samples++;
    return flush_out(d, 0);
}

/* Reports the current series' damaged chunk. */
static void report(dumper *d, const labels_set *ls, int r) {
    char msg[1024];
    base_buf lb = BASE_BUF_INIT;
    labels_format(ls, &lb);
    snprintf(msg, sizeof msg, "series %s: %s (its remaining samples in that block are skipped)",
             lb.data ? lb.data : "{}", r == BASE_E_TRUNCATED ? "truncated chunk" : "damaged chunk");
    base_buf_free(&lb);
    if (d->bad) d->bad(d->ctx, "", msg);
    d->series_bad = 1;
}

/* name{a="b",...} as OpenMetrics writes a series. */
static void om_series(base_buf *b, const labels_set *ls) {
    base_str name = labels_metric_name(ls);
    base_buf_append(b, name.p, name.n);
    labels_iter it;
    labels_iter_init(&it, ls);
    base_str n, v;
    int k = 0;
    while (labels_iter_next(&it, &n, &v)) {
        if (base_str_eqc(n, "__name__")) continue;
        base_buf_putc(b, k++ ? ',' : '{');
        base_buf_append(b, n.p, n.n);
        base_buf_puts(b, "=\"");
        for (size_t i = 0; i < v.n; i++) {
            char c = v.p[i];
            if (c == '\\' || c == '"')
                base_buf_putc(b, '\\'), base_buf_putc(b, c);
            else if (c == '\n')
                base_buf_puts(b, "\\n");
            else
                base_buf_putc(b, c);
        }
        base_buf_putc(b, '"');
    }
    if (k) base_buf_putc(b, '}');
}

static int dump_series(dumper *d, tsdb_db_set *s) {
    const labels_set *ls = tsdb_db_set_labels(s);
    base_buf_reset(&d->prefix);
    if (d->om)
        om_series(&d->prefix, ls);
    else
        labels_format(ls, &d->prefix);
    base_buf_putc(&d->prefix, ' ');
    if (base_buf_err(&d->prefix)) return BASE_E_NOMEM;
    d->series_bad = 0;
    int64_t t;
    double v;
    int r, e, any = 0;
    /* a damaged chunk returns an error once; the samples from elsewhere
     * follow (bounded: each error ends one source) */
    while ((r = tsdb_db_set_sample(s, &t, &v)) != 0) {
        if (r == BASE_E_NOMEM) return r;
        if (r < 0) {
            report(d, ls, r);
            continue;
        }
        if ((e = emit(d, t, v))) return e;
        any = 1;
    }
    if (any) d->res.series++;
    if (d->series_bad) d->res.bad_series++;
    return 0;
}

static int dump(tsdb_db *db, labels_matcher *const *ms, size_t n, int64_t mint, int64_t maxt, FILE *out,
                tools_bad_fn bad, void *ctx, tools_dump_result *ret, char *err, size_t errlen, int om) {
    dumper d = {.out = out, .bad = bad, .ctx = ctx, .om = om};
    base_buf_init(&d.ob, 0);
    base_buf_init(&d.prefix, 0);
    tsdb_db_set *s = NULL;
    int e = 0;
    if (n == 0 || mint > maxt) goto done; /* promtool's `{}` selects nothing */
    if ((e = tsdb_db_select(db, ms, n, mint, maxt, &s))) goto out;
    int r;
    while ((r = tsdb_db_set_next(s)) == 1)
        if ((e = dump_series(&d, s))) goto out;
    if (r < 0) {
        e = r;
        goto out;
    }
done:
    if (om) base_buf_puts(&d.ob, "# EOF\n");
    e = flush_out(&d, 1);
    if (!e && fflush(out) != 0) e = BASE_E_IO;
out:
    if (e == BASE_E_NOMEM)
        base_errf(err, errlen, e, "dump: out of memory");
    else if (e == BASE_E_IO)
        base_errf(err, errlen, e, "dump: write error");
    else if (e)
        base_errf(err, errlen, e, "dump: %s", base_strerror(e));
    tsdb_db_set_free(s);
    base_buf_free(&d.ob);
    base_buf_free(&d.prefix);
    if (!e && ret) *ret = d.res;
    return e;
}

int tools_tsdb_dump(tsdb_db *db, labels_matcher *const *ms, size_t n, int64_t mint, int64_t maxt, FILE *out,
                    tools_bad_fn bad, void *ctx, tools_dump_result *ret, char *err, size_t errlen) {
    return dump(db, ms, n, mint, maxt, out, bad, ctx, ret, err, errlen, 0);
}

int tools_tsdb_dump_openmetrics(tsdb_db *db, labels_matcher *const *ms, size_t n, int64_t mint, int64_t maxt,
                                FILE *out, tools_bad_fn bad, void *ctx, tools_dump_result *ret, char *err,
                                size_t errlen) {
    return dump(db, ms, n, mint, maxt, out, bad, ctx, ret, err, errlen, 1);
}
