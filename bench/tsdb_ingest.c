/* bench/tsdb_ingest.c -- Kelvin's side of the storage benchmarks
 * (bench/tsdb_bench.py): exposition text into the TSDB head, in three modes.
 *
 *   backfill FILE DIR [--max-block-duration-ms D]
 *       An OpenMetrics file with timestamps into blocks under DIR, one per
 *       D-aligned window (default 2 h), through an in-memory head and
 *       tsdb_block_write_head -- what `kelvin tsdb create-blocks-from
 *       openmetrics` does; the benchmark uses that command when the kelvin
 *       binary has it and this mode until then.
 *
 *   scrape WALDIR
 *       A long-lived head with its WAL in WALDIR, fed scrape bodies on the
 *       benchmark's command: each stdin line is one command, answered with
 *       one line on stdout.
 *         ingest T_MS INSTANCE FILE   parses FILE (text format, no
 *             timestamps) and appends every sample at T_MS with
 *             job="gpu-node" and instance=INSTANCE added, plus the five
 *             series a Prometheus scrape adds (up, scrape_duration_seconds,
 *             scrape_samples_scraped, scrape_samples_post_metric_relabeling,
 *             scrape_series_added), in one commit.
 *             -> "ok SAMPLES SERIES_CREATED noop=.. out_of_order=.. duplicate=..
 *             too_old=.. unknown_ref=.."
 *         stats -> "stats series=.. chunks=.. samples=.. bytes_series=..
 *             bytes_chunks=.. bytes_index=.. bytes_labels=.. bytes_total=.."
 *         quit -> "bye", then exits.
 *       No scrape cache: every sample's label set is built and looked up in
 *       the head (Prometheus keeps a per-target cache of series bytes to
 *       refs; its memory is in Prometheus's RSS, not in this one).
 *
 *   append FILE WALDIR [--max-samples N] [--wal-compress 0|1]
 *       Append speed: parses FILE (OpenMetrics) into memory first, cut into
 *       scrapes (runs of samples with one timestamp: one node's scrape in
 *       the generator's time-major order), then appends them into a head
 *       with its WAL on, one appender on one thread, one commit per scrape,
 *       by ref once a series exists (as a scraper with a cache does). Only
 *       the append loop is timed; wall time and the process's CPU time
 *       (the WAL's group-commit writes included) are both reported.
 *       -> "append samples=.. scrapes=.. series=.. wall_s=.. cpu_s=..
 *          per_s=.. per_cpu_s=.. rejected=.."
 *
 *   blockstat DIR
 *       Where the bytes of the blocks under DIR go, by metric name: one line
 *       "family NAME series=.. samples=.. bytes=.." per name (chunk bytes,
 *       each chunk's encoding byte included; the index is not split), then
 *       "total series=.. samples=.. bytes=..". Every chunk is decoded.
 *
 * Errors go to stderr with a non-zero exit. Every input size is bounded by
 * the file (mmap'ed read-only) and by --max-samples.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/num.h"
#include "expo/parse.h"
#include "labels/labels.h"
#include "tsdb/block.h"
#include "tsdb/chunk.h"
#include "tsdb/head.h"

#define COMMIT_EVERY 20000

static void die(const char *what, const char *detail) {
    fprintf(stderr, "tsdb_ingest: %s%s%s\n", what, detail && *detail ? ": " : "", detail ? detail : "");
    exit(1);
}

static void *xcalloc(size_t n, size_t size) {
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p) die("out of memory", NULL);
    return p;
}

static double mono_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
static double cpu_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- a file, mapped ----------------------------------------------------- */

typedef struct mapped {
    const char *p;
    size_t n;
} mapped;

static mapped map_file(const char *path) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) die("cannot open", path);
    struct stat st;
    if (fstat(fd, &st)) die("cannot stat", path);
    mapped m = {NULL, (size_t)st.st_size};
    if (m.n) {
        void *p = mmap(NULL, m.n, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) die("cannot map", path);
        madvise(p, m.n, MADV_SEQUENTIAL);
        m.p = p;
    }
    close(fd);
    return m;
}
static void unmap_file(mapped m) {
    if (m.n) munmap((void *)m.p, m.n);
}

/* ---- label sets from the parser ----------------------------------------- */

typedef struct lbuild {
    labels_builder b;
    base_buf scratch; /* unescaped values */
} lbuild;

/* The label set of the parser's current series plus extra pairs (names and
 * values NUL-free C strings, may be NULL). */
static labels_set *series_labels(lbuild *lb, const expo_parser *p, const char *job, const char *instance) {
    size_t n = expo_parser_nlabels(p);
    const expo_label *l = expo_parser_labels(p);
    base_buf_reset(&lb->scratch);
    size_t *off = xcalloc(n + 1, sizeof *off);
    for (size_t i = 0; i < n; i++) { /* unescape first: the buffer may move */
        off[i] = lb->scratch.len;
        if (expo_label_has_escapes(l[i].value))
            expo_unescape_label(l[i].value, &lb->scratch);
        else
            base_buf_append(&lb->scratch, l[i].value.p, l[i].value.n);
    }
    off[n] = lb->scratch.len;
    if (base_buf_err(&lb->scratch)) die("out of memory", NULL);
    labels_builder_reset(&lb->b);
    int e = labels_builder_add(&lb->b, base_str_c(LABELS_METRIC_NAME), expo_parser_name(p));
    for (size_t i = 0; i < n && !e; i++)
        e = labels_builder_add(
            &lb->b, l[i].name,
            (base_str){lb->scratch.data ? lb->scratch.data + off[i] : "", off[i + 1] - off[i]});
    if (!e && job) e = labels_builder_set(&lb->b, base_str_c("job"), base_str_c(job));
    if (!e && instance) e = labels_builder_set(&lb->b, base_str_c("instance"), base_str_c(instance));
    labels_set *ls = NULL;
    char err[256] = "";
    if (!e) e = labels_builder_finish(&lb->b, 0, &ls, err, sizeof err);
    free(off);
    if (e) die("bad label set", err[0] ? err : base_strerror(e));
    return ls;
}

/* ---- series cache: raw series bytes -> label set and ref ---------------- */

typedef struct centry {
    uint64_t h;
    size_t off, len; /* key bytes in cache.keys */
    labels_set *ls;
    uint64_t ref;
} centry;

typedef struct cache {
    uint32_t *slot; /* entry index + 1, 0 = empty */
    size_t cap;     /* power of two */
    centry *e;
    size_t n, ecap;
    base_buf keys;
} cache;

static void cache_grow(cache *c) {
    size_t ncap = c->cap ? c->cap * 2 : 4096;
    uint32_t *ns = xcalloc(ncap, sizeof *ns);
    for (size_t i = 0; i < c->n; i++) {
        size_t j = c->e[i].h & (ncap - 1);
        while (ns[j]) j = (j + 1) & (ncap - 1);
        ns[j] = (uint32_t)(i + 1);
    }
    free(c->slot);
    c->slot = ns;
    c->cap = ncap;
}

/* The entry of key; *created = 1 when it is new (ls still NULL). */
static size_t cache_get(cache *c, base_str key, int *created) {
    if ((c->n + 1) * 2 > c->cap) cache_grow(c);
    uint64_t h = XXH3_64bits(key.p, key.n);
    size_t j = h & (c->cap - 1);
    while (c->slot[j]) {
        centry *e = &c->e[c->slot[j] - 1];
        if (e->h == h && e->len == key.n && !memcmp(c->keys.data + e->off, key.p, key.n)) {
            *created = 0;
            return c->slot[j] - 1;
        }
        j = (j + 1) & (c->cap - 1);
    }
    if (c->n == c->ecap) {
        c->ecap = c->ecap ? c->ecap * 2 : 4096;
        c->e = realloc(c->e, c->ecap * sizeof *c->e);
        if (!c->e) die("out of memory", NULL);
    }
    if (c->n >= UINT32_MAX - 1) die("too many series", NULL);
    centry *e = &c->e[c->n];
    e->h = h;
    e->off = c->keys.len;
    e->len = key.n;
    e->ls = NULL;
    e->ref = 0;
    base_buf_append(&c->keys, key.p, key.n);
    if (base_buf_err(&c->keys)) die("out of memory", NULL);
    c->slot[j] = (uint32_t)(c->n + 1);
    *created = 1;
    return c->n++;
}

static void cache_free(cache *c) {
    for (size_t i = 0; i < c->n; i++) labels_unref(c->e[i].ls);
    free(c->e);
    free(c->slot);
    base_buf_free(&c->keys);
}

/* Fills in the refs of entries [from, c->n) after a commit. */
static void cache_resolve(cache *c, tsdb_head *h, size_t from) {
    for (size_t i = from; i < c->n; i++)
        if (!c->e[i].ref && tsdb_head_ref(h, c->e[i].ls, &c->e[i].ref)) c->e[i].ref = 0;
}

/* ---- head helpers -------------------------------------------------------- */

static tsdb_head *head_open(const char *wal_dir, int compress) {
    tsdb_head_opts ho;
    memset(&ho, 0, sizeof ho);
    ho.wal_dir = wal_dir;
    ho.wal.compress = compress;
    tsdb_head *h = NULL;
    char err[512] = "";
    int e = tsdb_head_open(&ho, &h, NULL, err, sizeof err);
    if (e) die("cannot open the head", err[0] ? err : base_strerror(e));
    return h;
}

static void commit(tsdb_head_app *a, tsdb_append_result *tot) {
    tsdb_append_result r;
    int e = tsdb_head_app_commit(a, &r);
    if (e) die("commit failed", base_strerror(e));
    tot->appended += r.appended;
    tot->noop += r.noop;
    tot->out_of_order += r.out_of_order;
    tot->duplicate += r.duplicate;
    tot->too_old += r.too_old;
    tot->unknown_ref += r.unknown_ref;
    tot->series_created += r.series_created;
}

static uint64_t rejected(const tsdb_append_result *r) {
    return r->out_of_order + r->duplicate + r->too_old + r->unknown_ref;
}

static void print_stats(tsdb_head *h, const char *tag) {
    tsdb_head_stats st;
    tsdb_head_stats_get(h, &st);
    printf("%s series=%llu chunks=%llu samples=%llu bytes_series=%llu bytes_chunks=%llu bytes_index=%llu "
           "bytes_labels=%llu bytes_total=%llu\n",
           tag, (unsigned long long)st.series, (unsigned long long)st.chunks, (unsigned long long)st.samples,
           (unsigned long long)st.bytes_series, (unsigned long long)st.bytes_chunks,
           (unsigned long long)st.bytes_index, (unsigned long long)st.bytes_labels,
           (unsigned long long)st.bytes_total);
    fflush(stdout);
}

static void parse_fail(const expo_parser *p, const char *path) {
    char msg[1024];
    snprintf(msg, sizeof msg, "%s: %s", path, expo_parser_error_at(p));
    die("parse error", msg);
}

/* ---- backfill ----------------------------------------------------------- */

static int backfill(const char *file, const char *dir, int64_t dur) {
    if (mkdir(dir, 0755) && errno != EEXIST) die("cannot create", dir);
    mapped m = map_file(file);
    tsdb_head *h = head_open(NULL, 0);
    tsdb_head_app *a = NULL;
    if (tsdb_head_app_new(h, &a)) die("out of memory", NULL);
    cache c = {0};
    lbuild lb = {0};
    labels_builder_init(&lb.b);
    base_buf_init(&lb.scratch, 0);
    tsdb_append_result tot = {0};
    expo_parser p;
    expo_parser_init(&p, m.p, m.n, EXPO_FMT_OPENMETRICS, NULL);
    size_t queued = 0, unresolved = 0;
    uint64_t lines = 0;
    int e;
    double t0 = mono_s();
    while ((e = expo_parser_next(&p)) > 0) {
        if (e != EXPO_ENTRY_SERIES) continue;
        if (!expo_parser_has_ts(&p)) die("a sample without a timestamp", file);
        int created;
        size_t i = cache_get(&c, expo_parser_series(&p), &created);
        if (created) c.e[i].ls = series_labels(&lb, &p, NULL, NULL);
        int ae = c.e[i].ref
                     ? tsdb_head_app_add_ref(a, c.e[i].ref, expo_parser_ts_ms(&p), expo_parser_value(&p))
                     : tsdb_head_app_add(a, c.e[i].ls, expo_parser_ts_ms(&p), expo_parser_value(&p));
        if (ae) die("append failed", base_strerror(ae));
        lines++;
        if (++queued >= COMMIT_EVERY) {
            commit(a, &tot);
            cache_resolve(&c, h, unresolved);
            unresolved = c.n;
            queued = 0;
        }
    }
    if (e < 0) parse_fail(&p, file);
    commit(a, &tot);
    double t1 = mono_s();
    tsdb_head_stats st;
    tsdb_head_stats_get(h, &st);
    printf("backfill lines=%llu appended=%llu rejected=%llu series=%llu parse_append_s=%.3f\n",
           (unsigned long long)lines, (unsigned long long)tot.appended, (unsigned long long)rejected(&tot),
           (unsigned long long)st.series, t1 - t0);
    if (st.samples) {
        int64_t w = st.mint >= 0 ? st.mint / dur * dur : -((-st.mint + dur - 1) / dur) * dur;
        for (; w <= st.maxt; w += dur) {
            tsdb_block_meta meta;
            char err[512] = "";
            int we = tsdb_block_write_head(dir, h, w, w + dur, NULL, &meta, err, sizeof err);
            if (we) die("block write failed", err[0] ? err : base_strerror(we));
            if (!meta.num_samples) continue;
            char ulid[27];
            tsdb_ulid_format(&meta.ulid, ulid);
            printf("block %s mint=%lld maxt=%lld series=%llu samples=%llu chunks=%llu chunk_bytes=%llu "
                   "index_bytes=%llu\n",
                   ulid, (long long)meta.mint, (long long)meta.maxt, (unsigned long long)meta.num_series,
                   (unsigned long long)meta.num_samples, (unsigned long long)meta.num_chunks,
                   (unsigned long long)meta.chunk_bytes, (unsigned long long)meta.index_bytes);
        }
    }
    printf("backfill_done write_s=%.3f\n", mono_s() - t1);
    expo_parser_free(&p);
    tsdb_head_app_free(a);
    cache_free(&c);
    labels_builder_free(&lb.b);
    base_buf_free(&lb.scratch);
    int ce = tsdb_head_close(h);
    unmap_file(m);
    return ce ? 1 : 0;
}

/* ---- scrape ------------------------------------------------------------- */

static const char *const synth_names[5] = {"up", "scrape_duration_seconds", "scrape_samples_scraped",
                                           "scrape_samples_post_metric_relabeling", "scrape_series_added"};

static int scrape(const char *wal_dir) {
    tsdb_head *h = head_open(wal_dir, 1);
    tsdb_head_app *a = NULL;
    if (tsdb_head_app_new(h, &a)) die("out of memory", NULL);
    lbuild lb = {0};
    labels_builder_init(&lb.b);
    base_buf_init(&lb.scratch, 0);
    char line[8192];
    int rc = 0;
    labels_set **held = NULL;
    size_t held_cap = 0;
    for (uint64_t cmd = 0; cmd < 100000000 && fgets(line, sizeof line, stdin); cmd++) {
        size_t ln = strlen(line);
        while (ln && (line[ln - 1] == '\n' || line[ln - 1] == '\r')) line[--ln] = 0;
        if (!strcmp(line, "quit")) {
            printf("bye\n");
            fflush(stdout);
            break;
        }
        if (!strcmp(line, "stats")) {
            print_stats(h, "stats");
            continue;
        }
        char *save = NULL, *verb = strtok_r(line, " ", &save), *ts_s = strtok_r(NULL, " ", &save);
        char *inst = strtok_r(NULL, " ", &save), *path = strtok_r(NULL, " ", &save);
        int64_t ts;
        if (!verb || strcmp(verb, "ingest") || !ts_s || !inst || !path ||
            base_parse_i64(ts_s, strlen(ts_s), &ts)) {
            printf("error bad command\n");
            fflush(stdout);
            rc = 1;
            continue;
        }
        double c0 = mono_s();
        mapped m = map_file(path);
        expo_parser p;
        expo_parser_init(&p, m.p, m.n, EXPO_FMT_TEXT, NULL);
        int e;
        uint64_t n = 0;
        while ((e = expo_parser_next(&p)) > 0) {
            if (e != EXPO_ENTRY_SERIES) continue;
            labels_set *ls = series_labels(&lb, &p, "gpu-node", inst);
            int ae = tsdb_head_app_add(a, ls, ts, expo_parser_value(&p));
            if (ae) die("append failed", base_strerror(ae));
            /* held until the commit: the head's appender recognises a
             * repeated set by its address without a reference of its own
             * when the series exists, so a freed and reused address would
             * be taken for the previous series */
            if (n == held_cap) {
                held_cap = held_cap ? held_cap * 2 : 4096;
                held = realloc(held, held_cap * sizeof *held);
                if (!held) die("out of memory", NULL);
            }
            held[n++] = ls;
        }
        if (e < 0) parse_fail(&p, path);
        expo_parser_free(&p);
        unmap_file(m);
        tsdb_append_result r = {0};
        commit(a, &r);
        for (uint64_t k = 0; k < n; k++) labels_unref(held[k]);
        double vals[5] = {1, mono_s() - c0, (double)n, (double)n, (double)r.series_created};
        labels_set *synth[5] = {NULL};
        for (int k = 0; k < 5; k++) {
            if (labels_from_cstrs(&synth[k], LABELS_METRIC_NAME, synth_names[k], "instance", inst, "job",
                                  "gpu-node", (char *)NULL))
                die("bad label set", synth_names[k]);
            int ae = tsdb_head_app_add(a, synth[k], ts, vals[k]);
            if (ae) die("append failed", base_strerror(ae));
        }
        tsdb_append_result r2 = {0};
        commit(a, &r2);
        for (int k = 0; k < 5; k++) labels_unref(synth[k]);
        printf("ok %llu %llu noop=%llu out_of_order=%llu duplicate=%llu too_old=%llu unknown_ref=%llu\n",
               (unsigned long long)(r.appended + r2.appended),
               (unsigned long long)(r.series_created + r2.series_created),
               (unsigned long long)(r.noop + r2.noop), (unsigned long long)(r.out_of_order + r2.out_of_order),
               (unsigned long long)(r.duplicate + r2.duplicate), (unsigned long long)(r.too_old + r2.too_old),
               (unsigned long long)(r.unknown_ref + r2.unknown_ref));
        fflush(stdout);
    }
    free(held);
    tsdb_head_app_free(a);
    labels_builder_free(&lb.b);
    base_buf_free(&lb.scratch);
    if (tsdb_head_close(h)) rc = 1;
    return rc;
}

/* ---- append speed -------------------------------------------------------- */

static int append_bench(const char *file, const char *wal_dir, uint64_t max_samples, int compress) {
    mapped m = map_file(file);
    cache c = {0};
    lbuild lb = {0};
    labels_builder_init(&lb.b);
    base_buf_init(&lb.scratch, 0);
    /* load: sample series ids and values, scrapes as [start, end) + ts */
    size_t cap = 1 << 20, n = 0, gcap = 4096, ng = 0;
    uint32_t *sid = xcalloc(cap, sizeof *sid);
    double *val = xcalloc(cap, sizeof *val);
    size_t *gstart = xcalloc(gcap + 1, sizeof *gstart);
    int64_t *gts = xcalloc(gcap, sizeof *gts);
    expo_parser p;
    expo_parser_init(&p, m.p, m.n, EXPO_FMT_OPENMETRICS, NULL);
    int e;
    double l0 = mono_s();
    while (n < max_samples && (e = expo_parser_next(&p)) > 0) {
        if (e != EXPO_ENTRY_SERIES) continue;
        if (!expo_parser_has_ts(&p)) die("a sample without a timestamp", file);
        int created;
        size_t i = cache_get(&c, expo_parser_series(&p), &created);
        if (created) c.e[i].ls = series_labels(&lb, &p, NULL, NULL);
        int64_t ts = expo_parser_ts_ms(&p);
        if (!ng || gts[ng - 1] != ts) {
            if (ng == gcap) {
                gcap *= 2;
                gstart = realloc(gstart, (gcap + 1) * sizeof *gstart);
                gts = realloc(gts, gcap * sizeof *gts);
                if (!gstart || !gts) die("out of memory", NULL);
            }
            gstart[ng] = n;
            gts[ng++] = ts;
        }
        if (n == cap) {
            cap *= 2;
            sid = realloc(sid, cap * sizeof *sid);
            val = realloc(val, cap * sizeof *val);
            if (!sid || !val) die("out of memory", NULL);
        }
        sid[n] = (uint32_t)i;
        val[n++] = expo_parser_value(&p);
    }
    if (n < max_samples && e < 0) parse_fail(&p, file);
    gstart[ng] = n;
    expo_parser_free(&p);
    unmap_file(m);
    double load_s = mono_s() - l0;

    tsdb_head *h = head_open(wal_dir, compress);
    tsdb_head_app *a = NULL;
    if (tsdb_head_app_new(h, &a)) die("out of memory", NULL);
    tsdb_append_result tot = {0};
    double t0 = mono_s(), c0 = cpu_s();
    for (size_t g = 0; g < ng; g++) {
        int64_t ts = gts[g];
        int fresh = 0;
        for (size_t k = gstart[g]; k < gstart[g + 1]; k++) {
            centry *ce = &c.e[sid[k]];
            int ae;
            if (ce->ref) {
                ae = tsdb_head_app_add_ref(a, ce->ref, ts, val[k]);
            } else {
                ae = tsdb_head_app_add(a, ce->ls, ts, val[k]);
                fresh = 1;
            }
            if (ae) die("append failed", base_strerror(ae));
        }
        commit(a, &tot);
        if (fresh) { /* the first scrape of new series: look their refs up once */
            for (size_t k = gstart[g]; k < gstart[g + 1]; k++) {
                centry *ce = &c.e[sid[k]];
                if (!ce->ref && tsdb_head_ref(h, ce->ls, &ce->ref)) ce->ref = 0;
            }
        }
    }
    double wall = mono_s() - t0, cpu = cpu_s() - c0;
    printf("append samples=%llu scrapes=%zu series=%zu load_s=%.3f wall_s=%.4f cpu_s=%.4f per_s=%.0f "
           "per_cpu_s=%.0f appended=%llu rejected=%llu compress=%d\n",
           (unsigned long long)n, ng, c.n, load_s, wall, cpu, wall > 0 ? (double)n / wall : 0,
           cpu > 0 ? (double)n / cpu : 0, (unsigned long long)tot.appended,
           (unsigned long long)rejected(&tot), compress);
    print_stats(h, "append_stats");
    tsdb_head_app_free(a);
    int rc = tsdb_head_close(h) ? 1 : 0;
    if (tot.appended + tot.noop != n) {
        fprintf(stderr, "tsdb_ingest: %llu of %llu samples appended\n", (unsigned long long)tot.appended,
                (unsigned long long)n);
        rc = 1;
    }
    free(sid);
    free(val);
    free(gstart);
    free(gts);
    cache_free(&c);
    labels_builder_free(&lb.b);
    base_buf_free(&lb.scratch);
    return rc;
}

/* ---- blockstat ------------------------------------------------------------ */

typedef struct fam {
    char *name;
    uint64_t series, samples, bytes;
} fam;

static int fam_cmp(const void *a, const void *b) {
    const fam *x = a, *y = b;
    return x->bytes < y->bytes ? 1 : x->bytes > y->bytes ? -1 : strcmp(x->name, y->name);
}

static int blockstat(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) die("cannot open", dir);
    fam *f = NULL;
    size_t nf = 0, cf = 0;
    uint64_t blocks = 0;
    struct dirent *de;
    for (uint64_t guard = 0; guard < 1000000 && (de = readdir(d)); guard++) {
        if (de->d_name[0] == '.') continue;
        char path[4096], probe[4200];
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        snprintf(probe, sizeof probe, "%s/index", path);
        if (access(probe, R_OK)) continue;
        tsdb_block *b = NULL;
        char err[512] = "";
        int e = tsdb_block_open(path, &b, err, sizeof err);
        if (e) die("cannot open block", err[0] ? err : base_strerror(e));
        blocks++;
        tsdb_block_set *set = NULL;
        if (tsdb_block_select(b, NULL, 0, INT64_MIN, INT64_MAX, &set)) die("select failed", path);
        while ((e = tsdb_block_set_next(set)) > 0) {
            base_str name = labels_metric_name(tsdb_block_set_labels(set));
            size_t i = 0;
            while (i < nf && (strlen(f[i].name) != name.n || memcmp(f[i].name, name.p, name.n))) i++;
            if (i == nf) {
                if (nf == cf) {
                    cf = cf ? cf * 2 : 256;
                    f = realloc(f, cf * sizeof *f);
                    if (!f) die("out of memory", NULL);
                }
                f[nf].name = xcalloc(name.n + 1, 1);
                memcpy(f[nf].name, name.p, name.n);
                f[nf].series = f[nf].samples = f[nf].bytes = 0;
                nf++;
            }
            f[i].series++;
            int64_t cmin, cmax;
            const uint8_t *data;
            size_t len;
            int ce;
            while ((ce = tsdb_block_set_chunk(set, &cmin, &cmax, &data, &len)) > 0) {
                tsdb_chunk_it it;
                if (tsdb_chunk_it_init(&it, data, len)) die("bad chunk", path);
                f[i].samples += tsdb_chunk_it_count(&it);
                f[i].bytes += len;
            }
            if (ce < 0) die("bad chunk", path);
        }
        if (e < 0) die("select failed", path);
        tsdb_block_set_free(set);
        tsdb_block_close(b);
    }
    closedir(d);
    qsort(f, nf, sizeof *f, fam_cmp);
    uint64_t ts = 0, tn = 0, tb = 0;
    for (size_t i = 0; i < nf; i++) {
        printf("family %s series=%llu samples=%llu bytes=%llu\n", f[i].name, (unsigned long long)f[i].series,
               (unsigned long long)f[i].samples, (unsigned long long)f[i].bytes);
        ts += f[i].series, tn += f[i].samples, tb += f[i].bytes;
        free(f[i].name);
    }
    printf("total blocks=%llu series=%llu samples=%llu bytes=%llu\n", (unsigned long long)blocks,
           (unsigned long long)ts, (unsigned long long)tn, (unsigned long long)tb);
    free(f);
    return 0;
}

static void usage(void) {
    fprintf(stderr, "usage: bench_tsdb_ingest backfill FILE DIR [--max-block-duration-ms D]\n"
                    "       bench_tsdb_ingest scrape WALDIR\n"
                    "       bench_tsdb_ingest append FILE WALDIR [--max-samples N] [--wal-compress 0|1]\n"
                    "       bench_tsdb_ingest blockstat DIR\n");
    exit(2);
}

static uint64_t u64_arg(const char *s) {
    uint64_t v;
    if (base_parse_u64(s, strlen(s), &v)) usage();
    return v;
}

int main(int argc, char **argv) {
    if (argc < 3) usage();
    if (!strcmp(argv[1], "backfill") && argc >= 4) {
        int64_t dur = 2 * 3600 * 1000;
        for (int i = 4; i < argc; i++) {
            if (!strcmp(argv[i], "--max-block-duration-ms") && i + 1 < argc)
                dur = (int64_t)u64_arg(argv[++i]);
            else
                usage();
        }
        if (dur < 1000) usage();
        return backfill(argv[2], argv[3], dur);
    }
    if (!strcmp(argv[1], "scrape") && argc == 3) return scrape(argv[2]);
    if (!strcmp(argv[1], "blockstat") && argc == 3) return blockstat(argv[2]);
    if (!strcmp(argv[1], "append") && argc >= 4) {
        uint64_t max = UINT64_MAX;
        int compress = 1;
        for (int i = 4; i < argc; i++) {
            if (!strcmp(argv[i], "--max-samples") && i + 1 < argc)
                max = u64_arg(argv[++i]);
            else if (!strcmp(argv[i], "--wal-compress") && i + 1 < argc)
                compress = u64_arg(argv[++i]) ? 1 : 0;
            else
                usage();
        }
        return append_bench(argv[2], argv[3], max, compress);
    }
    usage();
    return 2;
}
