/* block_compact.c -- compaction (merging blocks into one), retention by
 * time and size, block deletion, and the data directory's lock.
 *
 * Design: compaction is a k-way merge (merge_int.h) of one select per
 * input block, fed to tsdb_block_write as a tsdb_series_src (ties: the
 * first input wins); the selects skip deleted samples (tombstones), so
 * the merged block holds none of them and no tombstones file. Retention is a pure plan over metas
 * (tsdb_retention_plan) plus a function that lists a data directory,
 * opens its blocks and deletes what the plan says. Deletion renames the
 * block to <ULID>.tmp-delete first, so a crash midway leaves a directory
 * that is never read as a block. The lock is an flock on <dir>/lock.
 *
 * Invariants: the merged source yields strictly ascending labels and
 * timestamps whenever the inputs are valid blocks.
 * Ownership: the merge state lives in tsdb_block_compact's frame. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "base/err.h"
#include "tsdb/block.h"
#include "tsdb/block_int.h"
#include "tsdb/merge_int.h"

/* ---- compaction ------------------------------------------------------------- */

static int cmp_ulid(const void *a, const void *b) {
    return memcmp(a, b, 16);
}

int tsdb_block_compact(const char *parent, tsdb_block *const *blocks, size_t n, const tsdb_block_wopts *o,
                       tsdb_block_meta *ret_meta, char *err, size_t errlen) {
    if (n == 0) return base_errf(err, errlen, BASE_E_INVAL, "nothing to compact");
    tsdb_block_wopts wo = o ? *o : (tsdb_block_wopts){0};
    tsdb_ulid *src = malloc(TSDB_BLOCK_MAX_SOURCES * sizeof *src);
    tsdb_block_set **in = calloc(n, sizeof *in);
    tsdb__merge g = {0};
    int e = BASE_E_NOMEM;
    if (!src || !in) goto out;
    size_t ns = 0;
    int64_t mint = INT64_MAX, maxt = INT64_MIN;
    uint32_t level = 0;
    for (size_t i = 0; i < n; i++) {
        const tsdb_block_meta *m = tsdb_block_get_meta(blocks[i]);
        if (m->mint < mint) mint = m->mint;
        if (m->maxt > maxt) maxt = m->maxt;
        if (m->level > level) level = m->level;
        for (uint32_t j = 0; j < m->nsources; j++) {
            if (ns == TSDB_BLOCK_MAX_SOURCES) {
                e = base_errf(err, errlen, BASE_E_LIMIT, "more than %u source blocks",
                              TSDB_BLOCK_MAX_SOURCES);
                goto out;
            }
            src[ns++] = m->sources[j];
        }
    }
    qsort(src, ns, sizeof *src, cmp_ulid);
    size_t k = 0;
    for (size_t i = 0; i < ns; i++)
        if (k == 0 || memcmp(&src[i], &src[k - 1], 16)) src[k++] = src[i];
    for (size_t i = 0; i < n; i++) { /* ranges: chain mode where blocks do not overlap */
        const tsdb_block_meta *m = tsdb_block_get_meta(blocks[i]);
        if ((e = tsdb_block_select(blocks[i], NULL, 0, m->mint, m->maxt - 1, &in[i])) ||
            (e = tsdb__merge_add_range(&g, &tsdb__merge_block_ops, in[i], m->mint, m->maxt - 1)))
            goto out;
    }
    tsdb_series_src s = {&g, tsdb__merge_src_next, tsdb__merge_src_sample};
    wo.level = level + 1;
    wo.nsources = (uint32_t)k;
    wo.sources = src;
    if (!wo.chunk_samples) wo.chunk_samples = TSDB_BLOCK_CHUNK_SAMPLES;
    e = tsdb_block_write(parent, &s, mint, maxt, &wo, ret_meta, err, errlen);
out:
    tsdb__merge_free(&g);
    if (in)
        for (size_t i = 0; i < n; i++) tsdb_block_set_free(in[i]);
    free(in);
    free(src);
    return e;
}

/* ---- retention -------------------------------------------------------------- */

size_t tsdb_retention_plan(const tsdb_block_meta *metas, size_t n, int64_t retention_ms, uint64_t max_bytes,
                           uint8_t *ret_delete) {
    size_t *ord = malloc((n + 1) * sizeof *ord), cnt = 0;
    memset(ret_delete, 0, n);
    if (n == 0) {
        free(ord);
        return 0;
    }
    if (!ord) return 0; /* nothing is deleted when we cannot plan */
    for (size_t i = 0; i < n; i++) ord[i] = i;
    /* newest first: by maxt descending (insertion sort keeps it simple;
     * a data directory holds hundreds of blocks at most) */
    for (size_t i = 1; i < n; i++) {
        size_t x = ord[i], j = i;
        while (j > 0 && metas[ord[j - 1]].maxt < metas[x].maxt) {
            ord[j] = ord[j - 1];
            j--;
        }
        ord[j] = x;
    }
    int64_t newest = metas[ord[0]].maxt;
    uint64_t total = 0;
    int over = 0;
    for (size_t i = 0; i < n; i++) {
        const tsdb_block_meta *m = &metas[ord[i]];
        int del = 0;
        if (retention_ms > 0 && (uint64_t)newest - (uint64_t)m->maxt >= (uint64_t)retention_ms) del = 1;
        total += m->chunk_bytes + m->index_bytes;
        if (max_bytes > 0 && total > max_bytes) over = 1;
        if (over) del = 1;
        if (del) {
            ret_delete[ord[i]] = 1;
            cnt++;
        }
    }
    free(ord);
    return cnt;
}

int tsdb_block_delete(const char *block_dir, char *err, size_t errlen) {
    char p[4200];
    snprintf(p, sizeof p, "%s.tmp-delete", block_dir);
    if (rename(block_dir, p))
        return base_errf(err, errlen, BASE_E_IO, "rename %s: %s", block_dir, strerror(errno));
    if (tsdb__block_rm_rf(p)) return base_errf(err, errlen, BASE_E_IO, "remove %s: %s", p, strerror(errno));
    return 0;
}

int tsdb_retention_apply(const char *dir, int64_t retention_ms, uint64_t max_bytes, size_t *ret_deleted,
                         size_t *ret_bad, char *err, size_t errlen) {
    DIR *d = opendir(dir);
    if (!d) return base_errf(err, errlen, BASE_E_IO, "opendir %s: %s", dir, strerror(errno));
    tsdb_block_meta *metas = NULL;
    char(*names)[27] = NULL;
    size_t n = 0, cap = 0, bad = 0, deleted = 0;
    int e = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        tsdb_ulid u;
        if (tsdb_ulid_parse(base_str_c(de->d_name), &u)) continue;
        char p[4200];
        snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
        tsdb_block *b;
        if (tsdb_block_open(p, &b, NULL, 0)) {
            bad++;
            continue;
        }
        if (n == cap) {
            size_t nc = cap ? cap * 2 : 16;
            tsdb_block_meta *nm = realloc(metas, nc * sizeof *nm);
            if (nm) metas = nm;
            char(*nn)[27] = nm ? realloc(names, nc * sizeof *nn) : NULL;
            if (!nm || !nn) {
                tsdb_block_close(b);
                e = BASE_E_NOMEM;
                break;
            }
            names = nn;
            cap = nc;
        }
        metas[n] = *tsdb_block_get_meta(b);
        memcpy(names[n], de->d_name, 27);
        n++;
        tsdb_block_close(b);
    }
    closedir(d);
    uint8_t *del = e ? NULL : malloc(n + 1);
    if (!e && !del) e = BASE_E_NOMEM;
    if (!e) {
        tsdb_retention_plan(metas, n, retention_ms, max_bytes, del);
        for (size_t i = 0; i < n && !e; i++) {
            if (!del[i]) continue;
            char p[4200];
            snprintf(p, sizeof p, "%s/%s", dir, names[i]);
            if (!(e = tsdb_block_delete(p, err, errlen))) deleted++;
        }
    }
    free(del);
    free(metas);
    free(names);
    if (!e) {
        if (ret_deleted) *ret_deleted = deleted;
        if (ret_bad) *ret_bad = bad;
    }
    return e;
}

/* ---- lock ------------------------------------------------------------------- */

struct tsdb_dir_lock {
    int fd;
};

int tsdb_dir_lock_take(const char *dir, tsdb_dir_lock **ret, char *err, size_t errlen) {
    char p[4200];
    snprintf(p, sizeof p, "%s/lock", dir);
    int fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return base_errf(err, errlen, BASE_E_IO, "open %s: %s", p, strerror(errno));
    if (flock(fd, LOCK_EX | LOCK_NB)) {
        int en = errno;
        close(fd);
        if (en == EWOULDBLOCK)
            return base_errf(err, errlen, BASE_E_CONFLICT,
                             "%s is locked: another process uses this data directory", p);
        return base_errf(err, errlen, BASE_E_IO, "flock %s: %s", p, strerror(en));
    }
    tsdb_dir_lock *l = malloc(sizeof *l);
    if (!l) {
        close(fd);
        return BASE_E_NOMEM;
    }
    char pid[32];
    int k = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
    if (ftruncate(fd, 0) == 0 && write(fd, pid, (size_t)k) < 0) { /* the pid is informative only */
    }
    l->fd = fd;
    *ret = l;
    return 0;
}

void tsdb_dir_lock_release(tsdb_dir_lock *l) {
    if (!l) return;
    close(l->fd); /* releases the flock */
    free(l);
}
