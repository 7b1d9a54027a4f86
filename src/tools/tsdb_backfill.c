/* tsdb_backfill.c -- `kelvin tsdb create-blocks-from openmetrics`: an
 * OpenMetrics file (every sample timestamped) into Kelvin blocks, as
 * Prometheus 2.42's promtool backfills it (cmd/promtool/backfill.go).
 *
 * WHAT PROMTOOL DOES, AND SO DO WE.
 *  - A first pass parses the whole input (OpenMetrics only; it must end
 *    with `# EOF`) and finds the lowest and highest timestamp; a sample
 *    without one fails the run ("expected timestamp for series got none").
 *  - The block duration is 2 h, or with --max-block-duration above 2 h the
 *    largest of 2 h * 3^i (i < 10) not above it (getCompatibleBlockDuration).
 *  - Time is cut into ranges [k*d, (k+1)*d); each range with samples
 *    becomes one block whose range is [its first sample, its last + 1)
 *    (the block writer's head range), level 1, its own source.
 *  - Series are the metric name plus the labels, empty-valued labels
 *    dropped (the head's WithoutEmpty). Values keep their bits.
 *  - Per series and range, a sample whose timestamp is not after the last
 *    one kept is dropped: promtool's head appender rejects it at commit
 *    (out of order, or a duplicate timestamp) without a word; the first
 *    one in file order wins.
 *  - Each block is printed as it is written (the `tsdb list` table).
 * WHERE WE DIFFER, AND WHY.
 *  - promtool commits every 5000 samples; a sample that is out of order
 *    (or a duplicate with another value) against an *earlier commit*
 *    fails its run with "add sample: out of order sample" and leaves the
 *    blocks written so far. Which of the two happens depends on where the
 *    5000-sample boundaries fall, so we always drop (and count, and the
 *    command says so on stderr). A failed run of ours leaves no block.
 *  - Ranges start at floor(mint / d) * d; promtool truncates toward zero,
 *    which silently loses samples before 1970. Same result for t >= 0.
 *  - A timestamp of INT64_MAX ms is refused (the block's end would not fit).
 *  - Errors name the input line (promtool's do not).
 *
 * DESIGN. The input is one buffer (the command maps the file). Pass 1
 * (scan) checks it and counts samples per range. Later passes each gather
 * a batch of consecutive ranges whose samples fit max_samples_in_memory:
 * series are found by the raw bytes of their line's series text (a view
 * into the buffer, no copy), then by label set (built once per distinct
 * text); each series keeps its samples in file order. At the end of a
 * batch a series whose samples are not strictly ascending is stably sorted
 * by range and filtered as above; then the batch's series are sorted by
 * labels, cut into per-range runs, and each range goes to tsdb_block_write
 * through a tsdb_series_src that walks its runs.
 *
 * Invariants: nothing is written before pass 1 succeeds; every block
 * written by a failing call is deleted before it returns; memory per pass
 * is O(samples of the batch + distinct series texts).
 * Ownership: the caller's buffer is only read; everything else is freed
 * before returning.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/time.h"
#include "expo/parse.h"
#include "tools/tools.h"
#include "tools/tools_int.h"

#define HOUR_MS ((int64_t)3600 * 1000)

int64_t tools_backfill_block_duration(int64_t max_ms) {
    int64_t d = 2 * HOUR_MS;
    if (max_ms <= d) return d;
    int64_t r = d;
    for (int i = 1; i < 10; i++) {
        int64_t next = r * 3;
        if (next > max_ms) return r;
        r = next;
    }
    return r;
}

/* ---- pass 1: check the input, count samples per range ------------------- */

typedef struct rcount {
    int64_t k;
    uint64_t n;
} rcount;

typedef struct rmap {
    rcount *v;
    uint8_t *used;
    size_t cap, n;
} rmap;

static uint64_t mix64(uint64_t x) {
    x ^= x >> 33;
    x *= UINT64_C(0xff51afd7ed558ccd);
    x ^= x >> 33;
    x *= UINT64_C(0xc4ceb9fe1a85ec53);
    return x ^ (x >> 33);
}

static int rmap_add(rmap *m, int64_t k) {
    if (2 * (m->n + 1) > m->cap) {
        size_t nc = m->cap ? m->cap * 2 : 64;
        rcount *v = calloc(nc, sizeof *v);
        uint8_t *u = calloc(nc, 1);
        if (!v || !u) {
            free(v);
            free(u);
            return BASE_E_NOMEM;
        }
        for (size_t i = 0; i < m->cap; i++) {
            if (!m->used[i]) continue;
            size_t j = mix64((uint64_t)m->v[i].k) & (nc - 1);
            while (u[j]) j = (j + 1) & (nc - 1);
            u[j] = 1;
            v[j] = m->v[i];
        }
        free(m->v);
        free(m->used);
        m->v = v;
        m->used = u;
        m->cap = nc;
    }
    size_t j = mix64((uint64_t)k) & (m->cap - 1);
    while (m->used[j] && m->v[j].k != k) j = (j + 1) & (m->cap - 1);
    if (!m->used[j]) {
        m->used[j] = 1;
        m->v[j] = (rcount){k, 0};
        m->n++;
    }
    m->v[j].n++;
    return 0;
}

static int cmp_rcount(const void *a, const void *b) {
    int64_t x = ((const rcount *)a)->k, y = ((const rcount *)b)->k;
    return (x > y) - (x < y);
}

static size_t line_of(const char *buf, const char *at) {
    size_t line = 1;
    for (const char *p = buf; p < at; p++)
        if (*p == '\n') line++;
    return line;
}

static void parser_init(expo_parser *p, const char *buf, size_t len) {
    expo_parse_limits lim = {.max_labels = LABELS_MAX_PAIRS - 1,
                             .max_name_len = LABELS_STRING_MAX,
                             .max_value_len = LABELS_STRING_MAX};
    expo_parser_init(p, buf, len, EXPO_FMT_OPENMETRICS, &lim);
}

static int parse_failed(expo_parser *p, int e, const char *what, char *err, size_t errlen) {
    if (e == BASE_E_NOMEM) return base_errf(err, errlen, e, "%s: out of memory", what);
    return base_errf(err, errlen, e, "%s: next: %s (line %zu, column %zu)", what, expo_parser_error(p),
                     expo_parser_error_line(p), expo_parser_error_col(p));
}

/* Returns the sorted non-empty ranges in *ret (caller frees). */
static int scan(const char *buf, size_t len, int64_t d, rcount **ret, size_t *ret_n, uint64_t *ret_samples,
                char *err, size_t errlen) {
    expo_parser p;
    parser_init(&p, buf, len);
    rmap m = {0};
    uint64_t ns = 0;
    int e;
    while ((e = expo_parser_next(&p)) > 0) {
        if (e != EXPO_ENTRY_SERIES) continue;
        base_str s = expo_parser_series(&p);
        if (!expo_parser_has_ts(&p)) {
            e = base_errf(err, errlen, BASE_E_PARSE,
                          "getting min and max timestamp: expected timestamp for series got none (line %zu: "
                          "%.*s)",
                          line_of(buf, s.p), (int)(s.n > 200 ? 200 : s.n), s.p);
            goto out;
        }
        int64_t t = expo_parser_ts_ms(&p);
        if (t == INT64_MAX) {
            e = base_errf(err, errlen, BASE_E_RANGE, "timestamp out of range (line %zu: %.*s)",
                          line_of(buf, s.p), (int)(s.n > 200 ? 200 : s.n), s.p);
            goto out;
        }
        if ((e = rmap_add(&m, tools__floor_div(t, d)))) {
            base_errf(err, errlen, e, "out of memory");
            goto out;
        }
        ns++;
    }
    if (e < 0) {
        e = parse_failed(&p, e, "getting min and max timestamp", err, errlen);
        goto out;
    }
    rcount *v = malloc((m.n ? m.n : 1) * sizeof *v);
    if (!v) {
        e = base_errf(err, errlen, BASE_E_NOMEM, "out of memory");
        goto out;
    }
    size_t k = 0;
    for (size_t i = 0; i < m.cap; i++)
        if (m.used[i]) v[k++] = m.v[i];
    qsort(v, k, sizeof *v, cmp_rcount);
    *ret = v;
    *ret_n = k;
    *ret_samples = ns;
    e = 0;
out:
    expo_parser_free(&p);
    free(m.v);
    free(m.used);
    return e;
}

/* ---- a batch: series and their samples ----------------------------------- */

typedef struct smp {
    int64_t t;
    double v;
} smp;

typedef struct bseries {
    labels_set *ls;
    uint64_t hash;
    smp *s;
    size_t n, cap;
    int unsorted; /* a timestamp not after its predecessor was appended */
} bseries;

typedef struct rawent {
    const char *p;
    size_t n;
    uint64_t h;
    uint32_t sid1; /* series index + 1; 0: empty slot */
} rawent;

typedef struct run {
    uint32_t sid;
    uint32_t pos; /* range position within the batch */
    size_t off, len;
} run;

typedef struct batch {
    bseries *ser;
    size_t nser, capser;
    uint32_t *canon; /* series index + 1, by labels hash */
    size_t canon_cap;
    rawent *raw;
    size_t raw_cap, nraw;
    labels_builder lb;
    base_buf esc;
    size_t *escoff;
    size_t escoff_cap;
} batch;

static void batch_free(batch *b) {
    for (size_t i = 0; i < b->nser; i++) {
        labels_unref(b->ser[i].ls);
        free(b->ser[i].s);
    }
    free(b->ser);
    free(b->canon);
    free(b->raw);
    free(b->escoff);
    labels_builder_free(&b->lb);
    base_buf_free(&b->esc);
    memset(b, 0, sizeof *b);
}

static int canon_grow(batch *b) {
    size_t nc = b->canon_cap ? b->canon_cap * 2 : 1024;
    uint32_t *c = calloc(nc, sizeof *c);
    if (!c) return BASE_E_NOMEM;
    for (size_t i = 0; i < b->nser; i++) {
        size_t j = b->ser[i].hash & (nc - 1);
        while (c[j]) j = (j + 1) & (nc - 1);
        c[j] = (uint32_t)i + 1;
    }
    free(b->canon);
    b->canon = c;
    b->canon_cap = nc;
    return 0;
}

static int raw_grow(batch *b) {
    size_t nc = b->raw_cap ? b->raw_cap * 2 : 1024;
    rawent *r = calloc(nc, sizeof *r);
    if (!r) return BASE_E_NOMEM;
    for (size_t i = 0; i < b->raw_cap; i++) {
        if (!b->raw[i].sid1) continue;
        size_t j = b->raw[i].h & (nc - 1);
        while (r[j].sid1) j = (j + 1) & (nc - 1);
        r[j] = b->raw[i];
    }
    free(b->raw);
    b->raw = r;
    b->raw_cap = nc;
    return 0;
}

/* The series of the parser's current entry: its index in *ret_sid. */
static int batch_series(batch *b, expo_parser *p, uint32_t *ret_sid, char *err, size_t errlen) {
    base_str key = expo_parser_series(p);
    uint64_t h = XXH3_64bits(key.p, key.n);
    if (2 * (b->nraw + 1) > b->raw_cap && raw_grow(b)) return BASE_E_NOMEM;
    size_t j = h & (b->raw_cap - 1);
    while (b->raw[j].sid1) {
        rawent *r = &b->raw[j];
        if (r->h == h && r->n == key.n && memcmp(r->p, key.p, key.n) == 0) {
            *ret_sid = r->sid1 - 1;
            return 0;
        }
        j = (j + 1) & (b->raw_cap - 1);
    }
    /* A new series text: build its label set. Unescape every value first
     * (the buffer may move), then hand the builder views into it. */
    size_t nl = expo_parser_nlabels(p);
    const expo_label *l = expo_parser_labels(p);
    if (nl + 1 > b->escoff_cap) {
        size_t nc = (nl + 1) * 2;
        size_t *o = realloc(b->escoff, nc * sizeof *o);
        if (!o) return BASE_E_NOMEM;
        b->escoff = o;
        b->escoff_cap = nc;
    }
    base_buf_reset(&b->esc);
    for (size_t i = 0; i < nl; i++) {
        b->escoff[i] = b->esc.len;
        if (expo_label_has_escapes(l[i].value)) expo_unescape_label(l[i].value, &b->esc);
    }
    b->escoff[nl] = b->esc.len;
    if (base_buf_err(&b->esc)) return BASE_E_NOMEM;
    labels_builder_reset(&b->lb);
    int e = labels_builder_add(&b->lb, base_str_c(LABELS_METRIC_NAME), expo_parser_name(p));
    for (size_t i = 0; i < nl && !e; i++) {
        base_str v = l[i].value;
        if (expo_label_has_escapes(v))
            v = (base_str){b->esc.data + b->escoff[i], b->escoff[i + 1] - b->escoff[i]};
        e = labels_builder_add(&b->lb, l[i].name, v);
    }
    labels_set *ls = NULL;
    char msg[256] = "";
    if (!e) e = labels_builder_finish(&b->lb, 0, &ls, msg, sizeof msg);
    if (e) {
        if (e == BASE_E_NOMEM) return e;
        return base_errf(err, errlen, e, "series %.*s: %s", (int)(key.n > 200 ? 200 : key.n), key.p,
                         *msg ? msg : base_strerror(e));
    }
    uint64_t lh = labels_hash(ls);
    if (2 * (b->nser + 1) > b->canon_cap && canon_grow(b)) {
        labels_unref(ls);
        return BASE_E_NOMEM;
    }
    size_t c = lh & (b->canon_cap - 1);
    uint32_t sid = UINT32_MAX;
    while (b->canon[c]) {
        bseries *s = &b->ser[b->canon[c] - 1];
        if (s->hash == lh && labels_equal(s->ls, ls)) {
            sid = b->canon[c] - 1;
            break;
        }
        c = (c + 1) & (b->canon_cap - 1);
    }
    if (sid != UINT32_MAX) {
        labels_unref(ls);
    } else {
        if (b->nser >= UINT32_MAX - 1) {
            labels_unref(ls);
            return base_errf(err, errlen, BASE_E_LIMIT, "too many series");
        }
        if (b->nser == b->capser) {
            size_t nc = b->capser ? b->capser * 2 : 256;
            bseries *s = realloc(b->ser, nc * sizeof *s);
            if (!s) {
                labels_unref(ls);
                return BASE_E_NOMEM;
            }
            b->ser = s;
            b->capser = nc;
        }
        sid = (uint32_t)b->nser;
        b->ser[b->nser++] = (bseries){.ls = ls, .hash = lh};
        b->canon[c] = sid + 1;
    }
    j = h & (b->raw_cap - 1);
    while (b->raw[j].sid1) j = (j + 1) & (b->raw_cap - 1);
    b->raw[j] = (rawent){key.p, key.n, h, sid + 1};
    b->nraw++;
    *ret_sid = sid;
    return 0;
}

static int series_add(bseries *s, int64_t t, double v) {
    if (s->n == s->cap) {
        size_t nc = s->cap ? s->cap * 2 : 8;
        smp *p = realloc(s->s, nc * sizeof *p);
        if (!p) return BASE_E_NOMEM;
        s->s = p;
        s->cap = nc;
    }
    if (s->n && t <= s->s[s->n - 1].t) s->unsorted = 1;
    s->s[s->n++] = (smp){t, v};
    return 0;
}

/* Stable bottom-up merge sort of a[0..n) by range index floor(t / d). */
static int sort_by_range(smp *a, size_t n, int64_t d) {
    smp *tmp = malloc(n * sizeof *tmp);
    if (!tmp) return BASE_E_NOMEM;
    smp *src = a, *dst = tmp;
    for (size_t w = 1; w < n; w *= 2) {
        for (size_t lo = 0; lo < n; lo += 2 * w) {
            size_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            size_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi)
                dst[k++] =
                    tools__floor_div(src[j].t, d) < tools__floor_div(src[i].t, d) ? src[j++] : src[i++];
            while (i < mid) dst[k++] = src[i++];
            while (j < hi) dst[k++] = src[j++];
        }
        smp *x = src;
        src = dst;
        dst = x;
    }
    if (src != a) memcpy(a, src, n * sizeof *a);
    free(tmp);
    return 0;
}

/* Sorts by range and keeps, per range, only samples after the last one
 * kept (promtool's appender). */
static int series_settle(bseries *s, int64_t d, tools_backfill_result *res) {
    if (!s->unsorted) return 0;
    int e = sort_by_range(s->s, s->n, d);
    if (e) return e;
    size_t w = 0;
    int64_t gk = 0;
    for (size_t i = 0; i < s->n; i++) {
        int64_t k = tools__floor_div(s->s[i].t, d);
        if (w > 0 && k == gk) {
            const smp *last = &s->s[w - 1];
            if (s->s[i].t < last->t) {
                res->dropped_ooo++;
                continue;
            }
            if (s->s[i].t == last->t) {
                uint64_t a, b;
                memcpy(&a, &last->v, 8);
                memcpy(&b, &s->s[i].v, 8);
                if (a == b)
                    res->dropped_dup++;
                else
                    res->dropped_dup_diff++;
                continue;
            }
        }
        gk = k;
        s->s[w++] = s->s[i];
    }
    s->n = w;
    s->unsorted = 0;
    return 0;
}

/* ---- writing a range ------------------------------------------------------ */

typedef struct wsrc {
    const batch *b;
    const run *r;
    size_t n, i;
    const smp *cur;
    size_t left;
} wsrc;

static int wsrc_next(void *ctx, const labels_set **ret) {
    wsrc *w = ctx;
    if (w->i >= w->n) return 0;
    const run *r = &w->r[w->i++];
    const bseries *s = &w->b->ser[r->sid];
    w->cur = s->s + r->off;
    w->left = r->len;
    *ret = s->ls;
    return 1;
}

static int wsrc_sample(void *ctx, int64_t *ret_t, double *ret_v) {
    wsrc *w = ctx;
    if (!w->left) return 0;
    *ret_t = w->cur->t;
    *ret_v = w->cur->v;
    w->cur++;
    w->left--;
    return 1;
}

static int cmp_sid(const void *a, const void *b, void *arg) {
    const batch *bt = arg;
    return labels_cmp(bt->ser[*(const uint32_t *)a].ls, bt->ser[*(const uint32_t *)b].ls);
}

typedef struct created {
    char **dirs;
    size_t n, cap;
} created;

static int created_add(created *c, const char *dir) {
    if (c->n == c->cap) {
        size_t nc = c->cap ? c->cap * 2 : 16;
        char **d = realloc(c->dirs, nc * sizeof *d);
        if (!d) return BASE_E_NOMEM;
        c->dirs = d;
        c->cap = nc;
    }
    if (!(c->dirs[c->n] = strdup(dir))) return BASE_E_NOMEM;
    c->n++;
    return 0;
}

typedef struct ctx {
    const char *out_dir;
    const tools_backfill_opts *o;
    int64_t d;
    int64_t last_ulid_ms;
    created made;
    tools_backfill_result res;
} ctx;

static int write_batch(ctx *c, batch *b, const rcount *ranges, size_t nr, char *err, size_t errlen) {
    int e = 0;
    uint32_t *order = NULL;
    run *runs = NULL, *byr = NULL;
    size_t *start = NULL;
    for (size_t i = 0; i < b->nser; i++)
        if ((e = series_settle(&b->ser[i], c->d, &c->res))) goto nomem;
    order = malloc((b->nser ? b->nser : 1) * sizeof *order);
    if (!order) goto nomem;
    for (size_t i = 0; i < b->nser; i++) order[i] = (uint32_t)i;
    qsort_r(order, b->nser, sizeof *order, cmp_sid, b);
    /* Runs: per series (labels order), one per range it has samples in. */
    size_t nruns = 0, capruns = 0;
    for (size_t oi = 0; oi < b->nser; oi++) {
        const bseries *s = &b->ser[order[oi]];
        size_t i = 0, pos = 0;
        while (i < s->n) {
            int64_t k = tools__floor_div(s->s[i].t, c->d);
            size_t j = i + 1;
            while (j < s->n && tools__floor_div(s->s[j].t, c->d) == k) j++;
            while (pos < nr && ranges[pos].k < k) pos++; /* both ascend */
            if (pos >= nr || ranges[pos].k != k) {       /* pass 1 counted every range */
                e = base_errf(err, errlen, BASE_E_INVAL,
                              "block creation: internal error: range %lld not counted", (long long)k);
                goto out;
            }
            if (nruns == capruns) {
                size_t ncap = capruns ? capruns * 2 : 1024;
                run *r = realloc(runs, ncap * sizeof *r);
                if (!r) goto nomem;
                runs = r;
                capruns = ncap;
            }
            runs[nruns++] = (run){order[oi], (uint32_t)pos, i, j - i};
            i = j;
        }
    }
    /* Group the runs by range, keeping labels order within each. */
    start = calloc(nr + 1, sizeof *start);
    byr = malloc((nruns ? nruns : 1) * sizeof *byr);
    if (!start || !byr) goto nomem;
    for (size_t i = 0; i < nruns; i++) start[runs[i].pos + 1]++;
    for (size_t p = 0; p < nr; p++) start[p + 1] += start[p];
    {
        size_t *fill = calloc(nr + 1, sizeof *fill);
        if (!fill) goto nomem;
        memcpy(fill, start, (nr + 1) * sizeof *fill);
        for (size_t i = 0; i < nruns; i++) byr[fill[runs[i].pos]++] = runs[i];
        free(fill);
    }
    for (size_t p = 0; p < nr; p++) {
        const run *r = byr + start[p];
        size_t n = start[p + 1] - start[p];
        if (!n) continue;
        int64_t mint = INT64_MAX, maxt = INT64_MIN;
        uint64_t ns = 0;
        for (size_t i = 0; i < n; i++) {
            const smp *s = b->ser[r[i].sid].s + r[i].off;
            if (s[0].t < mint) mint = s[0].t;
            if (s[r[i].len - 1].t > maxt) maxt = s[r[i].len - 1].t;
            ns += r[i].len;
        }
        wsrc w = {.b = b, .r = r, .n = n};
        tsdb_series_src src = {&w, wsrc_next, wsrc_sample};
        int64_t now = base_unix_ms();
        if (now <= c->last_ulid_ms) now = c->last_ulid_ms + 1; /* names sort by creation */
        c->last_ulid_ms = now;
        tsdb_block_wopts wo = {.ulid_ms = now, .chunk_samples = TSDB_BLOCK_CHUNK_SAMPLES};
        tsdb_block_meta meta;
        char msg[512] = "";
        e = tsdb_block_write(c->out_dir, &src, mint, maxt + 1, &wo, &meta, msg, sizeof msg);
        if (e) {
            base_errf(err, errlen, e, "block creation: process blocks: write block for [%lld, %lld]: %s",
                      (long long)mint, (long long)maxt, *msg ? msg : base_strerror(e));
            goto out;
        }
        char id[27], dir[4200];
        tsdb_ulid_format(&meta.ulid, id);
        snprintf(dir, sizeof dir, "%s/%s", c->out_dir, id);
        if ((e = created_add(&c->made, dir))) {
            /* Not tracked: remove it now so the rollback misses nothing. */
            tsdb_block_delete(dir, NULL, 0);
            goto nomem;
        }
        c->res.blocks++;
        c->res.samples_written += ns;
        if (c->o->on_block) c->o->on_block(c->o->ctx, &meta, dir);
    }
    goto out;
nomem:
    e = base_errf(err, errlen, BASE_E_NOMEM, "block creation: process blocks: out of memory");
out:
    free(order);
    free(runs);
    free(byr);
    free(start);
    return e;
}

/* One pass: gathers the samples of ranges[0..nr) and writes their blocks. */
static int do_batch(ctx *c, const char *buf, size_t len, const rcount *ranges, size_t nr, char *err,
                    size_t errlen) {
    batch b;
    memset(&b, 0, sizeof b);
    labels_builder_init(&b.lb);
    base_buf_init(&b.esc, 0);
    expo_parser p;
    parser_init(&p, buf, len);
    int64_t klo = ranges[0].k, khi = ranges[nr - 1].k;
    int e;
    c->res.passes++;
    while ((e = expo_parser_next(&p)) > 0) {
        if (e != EXPO_ENTRY_SERIES || !expo_parser_has_ts(&p)) continue;
        int64_t t = expo_parser_ts_ms(&p);
        int64_t k = tools__floor_div(t, c->d);
        if (k < klo || k > khi) continue;
        uint32_t sid = 0;
        if ((e = batch_series(&b, &p, &sid, err, errlen)) ||
            (e = series_add(&b.ser[sid], t, expo_parser_value(&p)))) {
            if (e == BASE_E_NOMEM) base_errf(err, errlen, e, "block creation: process blocks: out of memory");
            goto out;
        }
    }
    if (e < 0) {
        /* The first pass read the same bytes without error. */
        e = parse_failed(&p, e, "block creation: process blocks: parse", err, errlen);
        goto out;
    }
    e = write_batch(c, &b, ranges, nr, err, errlen);
out:
    expo_parser_free(&p);
    batch_free(&b);
    return e;
}

/* mkdir -p; the directories it made go to made (deepest last). */
static int mkdir_p(const char *path, created *made, char *err, size_t errlen) {
    size_t n = strlen(path);
    if (n == 0 || n > 4000) return base_errf(err, errlen, BASE_E_INVAL, "create output dir: bad path");
    char p[4096];
    memcpy(p, path, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (p[i] != '/' && p[i] != '\0') continue;
        char save = p[i];
        p[i] = '\0';
        struct stat st;
        if (stat(p, &st) != 0) {
            if (mkdir(p, 0777) != 0 && errno != EEXIST)
                return base_errf(err, errlen, BASE_E_IO, "create output dir: mkdir %s: %s", p,
                                 strerror(errno));
            if (created_add(made, p)) return base_errf(err, errlen, BASE_E_NOMEM, "out of memory");
        } else if (!S_ISDIR(st.st_mode)) {
            return base_errf(err, errlen, BASE_E_IO, "create output dir: mkdir %s: not a directory", p);
        }
        p[i] = save;
    }
    return 0;
}

int tools_backfill_openmetrics(const char *buf, size_t len, const char *out_dir, const tools_backfill_opts *o,
                               tools_backfill_result *ret, char *err, size_t errlen) {
    static const tools_backfill_opts dflt = {0};
    if (!o) o = &dflt;
    ctx c = {.out_dir = out_dir, .o = o, .d = tools_backfill_block_duration(o->max_block_duration_ms)};
    uint64_t budget = o->max_samples_in_memory ? o->max_samples_in_memory : TOOLS_BACKFILL_DEFAULT_BATCH;
    rcount *ranges = NULL;
    size_t nr = 0;
    created dirs = {0};
    int e = scan(buf ? buf : "", buf ? len : 0, c.d, &ranges, &nr, &c.res.samples_read, err, errlen);
    if (e) goto out;
    c.res.passes = 1;
    if ((e = mkdir_p(out_dir, &dirs, err, errlen))) goto out;
    for (size_t i = 0; i < nr;) {
        size_t j = i + 1;
        uint64_t total = ranges[i].n;
        while (j < nr && total + ranges[j].n <= budget) total += ranges[j++].n;
        if ((e = do_batch(&c, buf, len, ranges + i, j - i, err, errlen))) goto out;
        i = j;
    }
out:
    if (e) {
        /* All or nothing: take back the blocks and directories we made. */
        for (size_t i = c.made.n; i-- > 0;) tsdb_block_delete(c.made.dirs[i], NULL, 0);
        for (size_t i = dirs.n; i-- > 0;) rmdir(dirs.dirs[i]);
    } else if (ret) {
        *ret = c.res;
    }
    for (size_t i = 0; i < c.made.n; i++) free(c.made.dirs[i]);
    free(c.made.dirs);
    for (size_t i = 0; i < dirs.n; i++) free(dirs.dirs[i]);
    free(dirs.dirs);
    free(ranges);
    return e;
}
