/* tsdb_dump.c -- `kelvin tsdb dump`: every sample of the selected series
 * over all blocks, in promtool 2.42's format (cmd/promtool/tsdb.go
 * dumpSamples): one line per sample,
 *     fmt.Printf("%s %g %d\n", labels, value, timestamp)
 * where labels is labels.Labels.String() ({__name__="x", a="b"}, values
 * quoted as strconv.Quote; labels_format) and %g is Go's shortest 'g'
 * formatting with +Inf/-Inf/NaN (base_fmt_double_g; fmt's %g adds nothing
 * to strconv's for these). Series come sorted by labels; a series present
 * in several blocks is merged by time (Prometheus's chained merge: one
 * sample per timestamp), like the querier promtool dumps through.
 *
 * Differences from promtool, on purpose: blocks that fail to open are
 * reported and skipped (promtool refuses the whole directory), and a chunk
 * with a bad CRC ends that series' samples from that block with a report
 * on stderr while the rest is still dumped; the command then exits 1.
 * The WAL / head is not read yet (blocks only).
 *
 * Design: one tsdb_block_set per block, all sorted by labels; a binary
 * heap over their current series gives the next series in order; the sets
 * holding it are merged sample by sample (usually one set: blocks rarely
 * overlap). Memory: one current series per block; output goes through a
 * 64 KiB buffer.
 */
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/num.h"
#include "tools/tools.h"
#include "tools/tools_int.h"

typedef struct cur {
    tsdb_block_set *s;
    size_t bi; /* block index: lower wins ties */
    int64_t t; /* pending sample while merging */
    double v;
    int has;
} cur;

typedef struct heap {
    cur **v;
    size_t n;
} heap;

static int cur_less(const cur *a, const cur *b) {
    int c = labels_cmp(tsdb_block_set_labels(a->s), tsdb_block_set_labels(b->s));
    return c < 0 || (c == 0 && a->bi < b->bi);
}

static void heap_push(heap *h, cur *c) {
    size_t i = h->n++;
    h->v[i] = c;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!cur_less(h->v[i], h->v[p])) break;
        cur *x = h->v[i];
        h->v[i] = h->v[p];
        h->v[p] = x;
        i = p;
    }
}

static cur *heap_pop(heap *h) {
    cur *top = h->v[0];
    h->v[0] = h->v[--h->n];
    size_t i = 0;
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < h->n && cur_less(h->v[l], h->v[m])) m = l;
        if (r < h->n && cur_less(h->v[r], h->v[m])) m = r;
        if (m == i) break;
        cur *x = h->v[i];
        h->v[i] = h->v[m];
        h->v[m] = x;
        i = m;
    }
    return top;
}

typedef struct dumper {
    const tools_blocks *bs;
    FILE *out;
    base_buf ob, prefix;
    tools_bad_fn bad;
    void *ctx;
    tools_dump_result res;
    int series_bad;
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
    size_t nn = base_fmt_double_g(num, v), tn = base_fmt_i64(ts, t);
    base_buf_append(&d->ob, d->prefix.data, d->prefix.len);
    base_buf_append(&d->ob, num, nn);
    base_buf_putc(&d->ob, ' ');
    base_buf_append(&d->ob, ts, tn);
    base_buf_putc(&d->ob, '\n');
    d->res.samples++;
    return flush_out(d, 0);
}

/* Next sample of c into c->t/c->v (c->has); a damaged chunk is reported. */
static void fetch(dumper *d, cur *c) {
    int r = tsdb_block_set_sample(c->s, &c->t, &c->v);
    c->has = r == 1;
    if (r < 0) {
        char msg[1024];
        base_buf lb = BASE_BUF_INIT;
        labels_format(tsdb_block_set_labels(c->s), &lb);
        snprintf(msg, sizeof msg, "series %s: %s (its remaining samples in this block are skipped)",
                 lb.data ? lb.data : "{}", r == BASE_E_TRUNCATED ? "truncated chunk" : "damaged chunk");
        base_buf_free(&lb);
        if (d->bad) d->bad(d->ctx, tsdb_block_dir(d->bs->b[c->bi]), msg);
        d->series_bad = 1;
    }
}

static int cmp_bi(const void *a, const void *b) {
    const cur *x = *(cur *const *)a, *y = *(cur *const *)b;
    return (x->bi > y->bi) - (x->bi < y->bi);
}

static int dump_series(dumper *d, cur **g, size_t k) {
    base_buf_reset(&d->prefix);
    labels_format(tsdb_block_set_labels(g[0]->s), &d->prefix);
    base_buf_putc(&d->prefix, ' ');
    if (base_buf_err(&d->prefix)) return BASE_E_NOMEM;
    d->series_bad = 0;
    d->res.series++;
    int e;
    for (size_t i = 0; i < k; i++) fetch(d, g[i]);
    if (k == 1) {
        while (g[0]->has) {
            if ((e = emit(d, g[0]->t, g[0]->v))) return e;
            fetch(d, g[0]);
        }
    } else {
        for (;;) {
            cur *m = NULL;
            for (size_t i = 0; i < k; i++) /* g is in block order: first wins */
                if (g[i]->has && (!m || g[i]->t < m->t)) m = g[i];
            if (!m) break;
            int64_t t = m->t;
            if ((e = emit(d, t, m->v))) return e;
            for (size_t i = 0; i < k; i++)
                if (g[i]->has && g[i]->t == t) fetch(d, g[i]);
        }
    }
    if (d->series_bad) d->res.bad_series++;
    return 0;
}

int tools_tsdb_dump(const tools_blocks *bs, labels_matcher *const *ms, size_t n, int64_t mint, int64_t maxt,
                    FILE *out, tools_bad_fn bad, void *ctx, tools_dump_result *ret, char *err,
                    size_t errlen) {
    dumper d = {.bs = bs, .out = out, .bad = bad, .ctx = ctx};
    base_buf_init(&d.ob, 0);
    base_buf_init(&d.prefix, 0);
    cur *curs = calloc(bs->n ? bs->n : 1, sizeof *curs);
    cur **hv = calloc(bs->n ? bs->n : 1, sizeof *hv);
    cur **group = calloc(bs->n ? bs->n : 1, sizeof *group);
    heap h = {hv, 0};
    int e = 0;
    if (!curs || !hv || !group) {
        e = BASE_E_NOMEM;
        goto out;
    }
    if (n == 0 || mint > maxt) goto done; /* promtool's `{}` selects nothing */
    for (size_t i = 0; i < bs->n; i++) {
        curs[i].bi = i;
        if ((e = tsdb_block_select(bs->b[i], ms, n, mint, maxt, &curs[i].s))) goto out;
        int r = tsdb_block_set_next(curs[i].s);
        if (r < 0) {
            e = r;
            goto out;
        }
        if (r) heap_push(&h, &curs[i]);
    }
    while (h.n) {
        size_t k = 0;
        group[k++] = heap_pop(&h);
        while (h.n && labels_equal(tsdb_block_set_labels(h.v[0]->s), tsdb_block_set_labels(group[0]->s)))
            group[k++] = heap_pop(&h);
        if (k > 1) qsort(group, k, sizeof *group, cmp_bi);
        if ((e = dump_series(&d, group, k))) goto out;
        for (size_t i = 0; i < k; i++) {
            int r = tsdb_block_set_next(group[i]->s);
            if (r < 0) {
                e = r;
                goto out;
            }
            if (r) heap_push(&h, group[i]);
        }
    }
done:
    e = flush_out(&d, 1);
    if (!e && fflush(out) != 0) e = BASE_E_IO;
out:
    if (e == BASE_E_NOMEM)
        tools__errf(err, errlen, e, "dump: out of memory");
    else if (e == BASE_E_IO)
        tools__errf(err, errlen, e, "dump: write error");
    else if (e)
        tools__errf(err, errlen, e, "dump: %s", base_strerror(e));
    if (curs)
        for (size_t i = 0; i < bs->n; i++) tsdb_block_set_free(curs[i].s);
    free(curs);
    free(hv);
    free(group);
    base_buf_free(&d.ob);
    base_buf_free(&d.prefix);
    if (!e && ret) *ret = d.res;
    return e;
}
