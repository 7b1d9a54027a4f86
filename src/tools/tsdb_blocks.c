/* tsdb_blocks.c -- the blocks of a data directory, for dump, analyze and
 * list: open every block directory, skip (and report) damaged ones, order
 * them as Prometheus's DB.Blocks() does (by minTime), and print
 * promtool's `tsdb list` table.
 *
 * A block directory is an entry whose name is a ULID (26 Crockford
 * characters): `<ULID>.tmp` leftovers, the WAL, the lock file and anything
 * else are ignored, as Prometheus ignores them. Opening checks the index
 * CRCs (tsdb_block_open); chunks are checked when they are read.
 *
 * Ownership: tools_blocks owns its blocks (tools_blocks_free closes them).
 */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/err.h"
#include "tools/tools.h"
#include "tools/tools_int.h"

static int cmp_block(const void *a, const void *b) {
    const tsdb_block_meta *x = tsdb_block_get_meta(*(tsdb_block *const *)a);
    const tsdb_block_meta *y = tsdb_block_get_meta(*(tsdb_block *const *)b);
    if (x->mint != y->mint) return x->mint < y->mint ? -1 : 1;
    return memcmp(x->ulid.b, y->ulid.b, sizeof x->ulid.b);
}

int tools_blocks_open(const char *path, tools_bad_fn bad, void *ctx, tools_blocks *ret, char *err,
                      size_t errlen) {
    DIR *d = opendir(path);
    if (!d)
        return base_errf(err, errlen, errno == ENOENT ? BASE_E_NOTFOUND : BASE_E_IO, "open %s: %s", path,
                         strerror(errno));
    tools_blocks bs = {0};
    size_t cap = 0;
    int e = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        tsdb_ulid u;
        if (strlen(de->d_name) != TSDB_ULID_LEN || tsdb_ulid_parse(base_str_c(de->d_name), &u)) continue;
        char p[4200];
        snprintf(p, sizeof p, "%s/%s", path, de->d_name);
        struct stat st;
        if (stat(p, &st) || !S_ISDIR(st.st_mode)) continue;
        tsdb_block *b;
        char msg[512] = "";
        int r = tsdb_block_open(p, &b, msg, sizeof msg);
        if (r == BASE_E_NOMEM) {
            e = base_errf(err, errlen, r, "open block %s: out of memory", p);
            break;
        }
        if (r) {
            bs.nbad++;
            if (bad) bad(ctx, p, *msg ? msg : base_strerror(r));
            continue;
        }
        if (bs.n == cap) {
            size_t nc = cap ? cap * 2 : 16;
            tsdb_block **nb = realloc(bs.b, nc * sizeof *nb);
            if (!nb) {
                tsdb_block_close(b);
                e = base_errf(err, errlen, BASE_E_NOMEM, "out of memory");
                break;
            }
            bs.b = nb;
            cap = nc;
        }
        bs.b[bs.n++] = b;
    }
    closedir(d);
    if (e) {
        tools_blocks_free(&bs);
        return e;
    }
    if (bs.n) qsort(bs.b, bs.n, sizeof *bs.b, cmp_block);
    *ret = bs;
    return 0;
}

void tools_blocks_free(tools_blocks *bs) {
    for (size_t i = 0; i < bs->n; i++) tsdb_block_close(bs->b[i]);
    free(bs->b);
    memset(bs, 0, sizeof *bs);
}

uint64_t tools_block_size(const tsdb_block *b) {
    const tsdb_block_meta *m = tsdb_block_get_meta(b);
    uint64_t n = m->chunk_bytes + m->index_bytes;
    char p[4200];
    struct stat st;
    snprintf(p, sizeof p, "%s/meta.json", tsdb_block_dir(b));
    if (stat(p, &st) == 0) n += (uint64_t)st.st_size;
    return n;
}

void tools_tsdb_print_blocks(FILE *out, const tsdb_block_meta *const *metas, const uint64_t *sizes, size_t n,
                             int header, int human) {
    tools__table t;
    tools__table_init(&t, 8);
    if (header) {
        const char *h[8] = {"BLOCK ULID",  "MIN TIME",   "MAX TIME",   "DURATION",
                            "NUM SAMPLES", "NUM CHUNKS", "NUM SERIES", "SIZE"};
        tools__table_row(&t, h);
    }
    for (size_t i = 0; i < n; i++) {
        const tsdb_block_meta *m = metas[i];
        char id[27], mn[64], mx[64], dur[40], ns[24], nc[24], nser[24], sz[96];
        tsdb_ulid_format(&m->ulid, id);
        if (human) {
            tools__go_time_utc(mn, m->mint / 1000);
            tools__go_time_utc(mx, m->maxt / 1000);
            tools__base2bytes(sz, sizes[i]);
        } else {
            snprintf(mn, sizeof mn, "%lld", (long long)m->mint);
            snprintf(mx, sizeof mx, "%lld", (long long)m->maxt);
            snprintf(sz, sizeof sz, "%llu", (unsigned long long)sizes[i]);
        }
        /* time.Duration(maxt-mint) * time.Millisecond, wrapping as Go's does */
        tools__go_duration(dur, (int64_t)(((uint64_t)m->maxt - (uint64_t)m->mint) * UINT64_C(1000000)));
        snprintf(ns, sizeof ns, "%llu", (unsigned long long)m->num_samples);
        snprintf(nc, sizeof nc, "%llu", (unsigned long long)m->num_chunks);
        snprintf(nser, sizeof nser, "%llu", (unsigned long long)m->num_series);
        const char *row[8] = {id, mn, mx, dur, ns, nc, nser, sz};
        tools__table_row(&t, row);
    }
    tools__table_flush(&t, out, 13, 2);
}
