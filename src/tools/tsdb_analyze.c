/* tsdb_analyze.c -- `kelvin tsdb analyze`: promtool 2.42's report on one
 * block (cmd/promtool/tsdb.go analyzeBlock), plus Kelvin's own figures.
 *
 * promtool's part, same words and order: Block ID, Duration, Series, Label
 * names, Postings (unique label pairs), Postings entries (total label
 * pairs); then the lists "Label pairs most involved in churning", "Label
 * names most involved in churning", "Most common label pairs", "Label
 * names with highest cumulative label value length", "Highest cardinality
 * labels", "Highest cardinality metric names" (each `<count> <key>`, at
 * most --limit lines, largest first), and with --extended the chunk
 * fullness histogram. promtool leaves the order of equal counts to Go's
 * unstable sort of a map; we break ties by key so output is repeatable.
 *
 * Kelvin's part, after the postings lines: samples, chunks, the bytes of
 * the chunk segments and of the index, bytes per sample with and without
 * the index; and at the end the chunk encodings the block uses (chunks,
 * samples, bytes each).
 *
 * Design: one walk over every series (tsdb_block_select with no matcher)
 * reads each chunk's range, encoding byte and sample count; label pairs
 * and names are counted in a string-keyed hash map. Every chunk is read,
 * so its CRC is checked; damaged chunks are counted and make the call
 * fail after the report is printed. Memory: O(distinct label pairs).
 */
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "base/err.h"
#include "tools/tools.h"
#include "tools/tools_int.h"
#include "tsdb/chunk.h"

/* ---- a string -> two counters map ----------------------------------------- */

typedef struct ment {
    char *key; /* "name=value" or "name", owned */
    size_t klen, nlen;
    uint64_t h;
    uint64_t a, b;
} ment;

typedef struct smap {
    ment *v;
    size_t cap, n;
} smap;

static void smap_free(smap *m) {
    for (size_t i = 0; i < m->cap; i++) free(m->v[i].key);
    free(m->v);
    memset(m, 0, sizeof *m);
}

/* The entry of name[=value] (value NULL: the name alone), created at 0. */
static ment *smap_get(smap *m, base_str name, const base_str *value) {
    size_t klen = name.n + (value ? 1 + value->n : 0);
    uint64_t h = XXH3_64bits(name.p ? name.p : "", name.n);
    if (value) h = XXH3_64bits_withSeed(value->p ? value->p : "", value->n, h);
    if (2 * (m->n + 1) > m->cap) {
        size_t nc = m->cap ? m->cap * 2 : 256;
        ment *v = calloc(nc, sizeof *v);
        if (!v) return NULL;
        for (size_t i = 0; i < m->cap; i++) {
            if (!m->v[i].key) continue;
            size_t j = m->v[i].h & (nc - 1);
            while (v[j].key) j = (j + 1) & (nc - 1);
            v[j] = m->v[i];
        }
        free(m->v);
        m->v = v;
        m->cap = nc;
    }
    size_t j = h & (m->cap - 1);
    while (m->v[j].key) {
        ment *e = &m->v[j];
        if (e->h == h && e->klen == klen && e->nlen == name.n && memcmp(e->key, name.p, name.n) == 0 &&
            (!value || memcmp(e->key + name.n + 1, value->p, value->n) == 0))
            return e;
        j = (j + 1) & (m->cap - 1);
    }
    char *k = malloc(klen + 1);
    if (!k) return NULL;
    if (name.n) memcpy(k, name.p, name.n);
    if (value) {
        k[name.n] = '=';
        if (value->n) memcpy(k + name.n + 1, value->p, value->n);
    }
    k[klen] = '\0';
    m->v[j] = (ment){k, klen, name.n, h, 0, 0};
    m->n++;
    return &m->v[j];
}

/* ---- promtool's printInfo ---------------------------------------------------- */

typedef struct info {
    const char *key;
    size_t klen;
    uint64_t metric;
} info;

static int cmp_info(const void *a, const void *b) {
    const info *x = a, *y = b;
    if (x->metric != y->metric) return x->metric > y->metric ? -1 : 1;
    size_t n = x->klen < y->klen ? x->klen : y->klen;
    int c = memcmp(x->key, y->key, n);
    if (c) return c;
    return (x->klen > y->klen) - (x->klen < y->klen);
}

static void print_info(FILE *out, info *v, size_t n, size_t limit) {
    qsort(v, n, sizeof *v, cmp_info);
    for (size_t i = 0; i < n && i < limit; i++)
        fprintf(out, "%llu %.*s\n", (unsigned long long)v[i].metric, (int)v[i].klen, v[i].key);
}

/* ---- the report --------------------------------------------------------------- */

typedef struct encstat {
    uint64_t chunks, samples, bytes;
} encstat;

int tools_tsdb_analyze(tsdb_block *b, size_t limit, int extended, FILE *out, char *err, size_t errlen) {
    const tsdb_block_meta *m = tsdb_block_get_meta(b);
    smap pairs = {0}, names = {0};
    tsdb_strs *lnames = NULL;
    tsdb_block_set *set = NULL;
    info *iv = NULL;
    encstat enc[256];
    memset(enc, 0, sizeof enc);
    uint64_t hist[10] = {0}, total_chunks = 0, bad_chunks = 0, entries = 0;
    int e = 0;
    char id[27];
    tsdb_ulid_format(&m->ulid, id);
    uint64_t span = (uint64_t)m->maxt - (uint64_t)m->mint;

    if ((e = tsdb_block_label_names(b, NULL, 0, &lnames))) goto fail;
    if ((e = tsdb_block_select(b, NULL, 0, INT64_MIN, INT64_MAX, &set))) goto fail;
    int r;
    while ((r = tsdb_block_set_next(set)) == 1) {
        int64_t cmint, cmaxt, first = 0, last = 0;
        const uint8_t *data;
        size_t len;
        int any = 0, rc;
        while ((rc = tsdb_block_set_chunk(set, &cmint, &cmaxt, &data, &len)) == 1) {
            if (!any) first = cmint;
            last = cmaxt;
            any = 1;
            tsdb_chunk_it it;
            tsdb_chunk_it_init(&it, data, len);
            uint32_t ns = tsdb_chunk_it_count(&it);
            encstat *es = &enc[len ? data[0] : 0];
            es->chunks++;
            es->samples += ns;
            es->bytes += len;
            double full = ns < 120 ? (double)ns : 120.0;
            int bucket = (int)((10.0 * full + 119.0) / 120.0) - 1; /* ceil(10 * full / 120) - 1 */
            if (bucket < 0) bucket = 0;
            hist[bucket]++;
            total_chunks++;
        }
        if (rc < 0) bad_chunks++;
        /* Amount of the block's range this series does not cover. */
        uint64_t uncovered = span - (any ? (uint64_t)last - (uint64_t)first : 0);
        labels_iter li;
        labels_iter_init(&li, tsdb_block_set_labels(set));
        base_str ln, lv;
        while (labels_iter_next(&li, &ln, &lv)) {
            ment *pe = smap_get(&pairs, ln, &lv), *ne = smap_get(&names, ln, NULL);
            if (!pe || !ne) {
                e = BASE_E_NOMEM;
                goto fail;
            }
            ne->a += uncovered;
            pe->a += uncovered;
            pe->b++;
            entries++;
        }
    }
    if (r < 0) {
        e = r;
        goto fail;
    }

    fprintf(out, "Block ID: %s\n", id);
    char dur[40];
    tools__go_duration(dur, (int64_t)(span * UINT64_C(1000000)));
    fprintf(out, "Duration: %s\n", dur);
    fprintf(out, "Series: %llu\n", (unsigned long long)m->num_series);
    fprintf(out, "Label names: %zu\n", lnames->n);
    fprintf(out, "Postings (unique label pairs): %zu\n", pairs.n);
    fprintf(out, "Postings entries (total label pairs): %llu\n", (unsigned long long)entries);
    fprintf(out, "Samples: %llu\n", (unsigned long long)m->num_samples);
    fprintf(out, "Chunks: %llu\n", (unsigned long long)m->num_chunks);
    fprintf(out, "Chunk bytes: %llu\n", (unsigned long long)m->chunk_bytes);
    fprintf(out, "Index bytes: %llu\n", (unsigned long long)m->index_bytes);
    if (m->num_samples) {
        fprintf(out, "Bytes per sample (index included): %.3f\n",
                (double)(m->chunk_bytes + m->index_bytes) / (double)m->num_samples);
        fprintf(out, "Bytes per sample (chunks only): %.3f\n",
                (double)m->chunk_bytes / (double)m->num_samples);
    } else {
        fprintf(out, "Bytes per sample (index included): n/a\nBytes per sample (chunks only): n/a\n");
    }

    size_t cap = pairs.n > lnames->n ? pairs.n : lnames->n;
    if (names.n > cap) cap = names.n;
    iv = malloc((cap ? cap : 1) * sizeof *iv);
    if (!iv) {
        e = BASE_E_NOMEM;
        goto fail;
    }
    size_t k;
    /* promtool: uint64(float64(uncovered) / float64(maxt - mint)) */
    fprintf(out, "\nLabel pairs most involved in churning:\n");
    k = 0;
    for (size_t i = 0; i < pairs.cap; i++)
        if (pairs.v[i].key)
            iv[k++] =
                (info){pairs.v[i].key, pairs.v[i].klen, (uint64_t)((double)pairs.v[i].a / (double)span)};
    print_info(out, iv, k, limit);
    fprintf(out, "\nLabel names most involved in churning:\n");
    k = 0;
    for (size_t i = 0; i < names.cap; i++)
        if (names.v[i].key)
            iv[k++] =
                (info){names.v[i].key, names.v[i].klen, (uint64_t)((double)names.v[i].a / (double)span)};
    print_info(out, iv, k, limit);
    fprintf(out, "\nMost common label pairs:\n");
    k = 0;
    for (size_t i = 0; i < pairs.cap; i++)
        if (pairs.v[i].key) iv[k++] = (info){pairs.v[i].key, pairs.v[i].klen, pairs.v[i].b};
    print_info(out, iv, k, limit);

    /* Per label name: the cumulative length and the number of its values. */
    uint64_t *vlen = calloc(lnames->n ? lnames->n : 1, sizeof *vlen);
    uint64_t *vcnt = calloc(lnames->n ? lnames->n : 1, sizeof *vcnt);
    if (!vlen || !vcnt) {
        free(vlen);
        free(vcnt);
        e = BASE_E_NOMEM;
        goto fail;
    }
    for (size_t i = 0; i < lnames->n; i++) {
        tsdb_strs *vals;
        if ((e = tsdb_block_label_values(b, lnames->v[i], NULL, 0, &vals))) {
            free(vlen);
            free(vcnt);
            goto fail;
        }
        for (size_t j = 0; j < vals->n; j++) vlen[i] += vals->v[j].n;
        vcnt[i] = vals->n;
        tsdb_strs_free(vals);
    }
    fprintf(out, "\nLabel names with highest cumulative label value length:\n");
    for (size_t i = 0; i < lnames->n; i++) iv[i] = (info){lnames->v[i].p, lnames->v[i].n, vlen[i]};
    print_info(out, iv, lnames->n, limit);
    fprintf(out, "\nHighest cardinality labels:\n");
    for (size_t i = 0; i < lnames->n; i++) iv[i] = (info){lnames->v[i].p, lnames->v[i].n, vcnt[i]};
    print_info(out, iv, lnames->n, limit);
    free(vlen);
    free(vcnt);

    fprintf(out, "\nHighest cardinality metric names:\n");
    k = 0;
    size_t nl = strlen(LABELS_METRIC_NAME);
    for (size_t i = 0; i < pairs.cap; i++) {
        const ment *pe = &pairs.v[i];
        if (pe->key && pe->nlen == nl && memcmp(pe->key, LABELS_METRIC_NAME, nl) == 0)
            iv[k++] = (info){pe->key + nl + 1, pe->klen - nl - 1, pe->b};
    }
    print_info(out, iv, k, limit);

    fprintf(out, "\nChunk encodings:\n");
    int order[256], no = 0;
    for (int i = 0; i < 256; i++)
        if (enc[i].chunks) order[no++] = i;
    for (int i = 1; i < no; i++) /* by bytes, largest first (few entries) */
        for (int j = i; j > 0 && enc[order[j]].bytes > enc[order[j - 1]].bytes; j--) {
            int x = order[j];
            order[j] = order[j - 1];
            order[j - 1] = x;
        }
    for (int i = 0; i < no; i++) {
        const encstat *es = &enc[order[i]];
        int regular = order[i] >= 0x49 && order[i] <= 0x4e;
        fprintf(out, "%s%s: %llu chunks, %llu samples, %llu bytes (%.3f bytes/sample)\n",
                tsdb_chunk_enc_name((uint8_t)order[i]), regular ? " (regular)" : "",
                (unsigned long long)es->chunks, (unsigned long long)es->samples,
                (unsigned long long)es->bytes, es->samples ? (double)es->bytes / (double)es->samples : 0.0);
    }

    if (extended) {
        fprintf(out, "\nCompaction analysis:\n");
        fprintf(out, "Fullness: Amount of samples in chunks (100%% is 120 samples)\n");
        for (int i = 0; i < 10; i++) {
            uint64_t pct = total_chunks ? 100 * hist[i] / total_chunks : 0;
            fprintf(out, "%7d%%: ", (i + 1) * 10);
            for (uint64_t j = 0; j < pct; j++) fputc('#', out);
            fputc('\n', out);
        }
    }
    if (bad_chunks) {
        e = base_errf(err, errlen, BASE_E_PARSE, "block %s: %llu series have a damaged chunk", id,
                      (unsigned long long)bad_chunks);
        goto out;
    }
    if (fflush(out) != 0) e = base_errf(err, errlen, BASE_E_IO, "write error");
    goto out;
fail:
    base_errf(err, errlen, e, "analyze block %s: %s", id, base_strerror(e));
out:
    free(iv);
    tsdb_block_set_free(set);
    tsdb_strs_free(lnames);
    smap_free(&pairs);
    smap_free(&names);
    return e;
}
