/* db.c -- the database over head and blocks (design in db.h).
 *
 * Locks, in the order they may nest:
 *   maint_mu  -- one maintenance round at a time (thread or caller).
 *   bl_mu     -- rwlock over the block list; selects hold it for reading
 *                while they take block references and open the head set.
 *   rd_mu     -- the registry of live series sets and the generation each
 *                one started in (see below).
 * A block is reference counted (the list holds one reference, each series
 * set one per block it reads); it is closed by the last release.
 *
 * Readers vs head truncation: a head series set copies a series' chunks
 * only when it moves to that series, so truncating the head below the new
 * block's end while an older set is still iterating could hide samples
 * from it (the set's block list predates the new block). Adding a block
 * bumps `gen`; before the head is truncated, the round waits (bounded)
 * until no set that started in an older generation is alive -- as
 * Prometheus waits for pending readers in the truncated range.
 */
#include "tsdb/db.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "base/err.h"
#include "base/time.h"
#include "tsdb/block_int.h"
#include "tsdb/merge_int.h"

#define DAY_MS            (24LL * 3600 * 1000)
#define MAX_RANGES        16
#define READER_WAIT_MS    60000
#define MAINTAIN_MAX_CUTS 64

/* ---- options and flags -------------------------------------------------- */

void tsdb_db_opts_default(tsdb_db_opts *o) {
    memset(o, 0, sizeof *o);
    o->path = "data/";
    o->retention_ms = TSDB_DB_DEFAULT_RETENTION_MS;
    o->min_block_ms = TSDB_DB_DEFAULT_BLOCK_MS;
    o->wal_compression = 1;
}

void tsdb_db_flagvars_init(tsdb_db_flagvars *v) {
    memset(v, 0, sizeof *v);
    v->path = "data/";
    v->wal_sync = "none";
    v->retention_ms = TSDB_DB_DEFAULT_RETENTION_MS;
    v->min_block_ms = TSDB_DB_DEFAULT_BLOCK_MS;
    v->wal_compression = 1;
    v->wal_checkpoint_size = (int64_t)TSDB_HEAD_CHECKPOINT_BYTES;
}

size_t tsdb_db_flags(tsdb_db_flagvars *v, base_flag *out, size_t cap) {
    const base_flag f[TSDB_DB_NFLAGS] = {
        {"storage.tsdb.path", BASE_FLAG_STRING, &v->path, "Base path for metrics storage."},
        {"storage.tsdb.retention.time", BASE_FLAG_DURATION, &v->retention_ms,
         "How long to retain samples in storage (0: no limit by time)."},
        {"storage.tsdb.retention.size", BASE_FLAG_SIZE, &v->retention_bytes,
         "Maximum number of bytes of storage blocks and WAL (units: KB, MB, GB, ...; 0: no limit)."},
        {"storage.tsdb.min-block-duration", BASE_FLAG_DURATION, &v->min_block_ms,
         "Duration of the head's blocks (and of a WAL checkpoint's span)."},
        {"storage.tsdb.max-block-duration", BASE_FLAG_DURATION, &v->max_block_ms,
         "Largest block compaction builds (0: 10% of the retention time, at most 31d)."},
        {"storage.tsdb.wal-compression", BASE_FLAG_BOOL, &v->wal_compression, "Compress the WAL's records."},
        {"storage.tsdb.out-of-order-time-window", BASE_FLAG_DURATION, &v->ooo_window_ms,
         "How far behind the newest sample out-of-order samples are still accepted (0: never)."},
        {"storage.tsdb.wal-sync", BASE_FLAG_STRING, &v->wal_sync,
         "When the WAL is flushed to the device: none (after write(2): survives kill -9), batch (fdatasync "
         "before every acknowledgement: survives power loss), or a duration such as 1s (fdatasync at most "
         "that often)."},
        {"storage.tsdb.wal-segment-size", BASE_FLAG_SIZE, &v->wal_segment_size,
         "Size at which to split the WAL's segment files (0: 128MiB; at most 256MiB; Prometheus refuses "
         "less than 10MiB, kelvin accepts down to 64KiB for tests). Example: 100MB"},
        {"storage.tsdb.wal-checkpoint-size", BASE_FLAG_SIZE, &v->wal_checkpoint_size,
         "WAL bytes written since the last checkpoint that make the next one due (bounds the WAL a "
         "restart replays sample by sample; at least 64KiB). Kelvin only."},
    };
    for (size_t i = 0; i < TSDB_DB_NFLAGS && i < cap; i++) out[i] = f[i];
    return TSDB_DB_NFLAGS;
}

int tsdb_db_flags_apply(const tsdb_db_flagvars *v, tsdb_db_opts *o, char *err, size_t errlen) {
    tsdb_db_opts_default(o);
    if (!v->path || !v->path[0]) return base_errf(err, errlen, BASE_E_INVAL, "--storage.tsdb.path is empty");
    if (v->retention_ms < 0 || v->retention_bytes < 0 || v->ooo_window_ms < 0 || v->max_block_ms < 0)
        return base_errf(err, errlen, BASE_E_INVAL, "storage flags must not be negative");
    if (v->min_block_ms < 60000)
        return base_errf(err, errlen, BASE_E_INVAL, "--storage.tsdb.min-block-duration must be at least 1m");
    if (v->max_block_ms && v->max_block_ms < v->min_block_ms)
        return base_errf(
            err, errlen, BASE_E_INVAL,
            "--storage.tsdb.max-block-duration must not be below --storage.tsdb.min-block-duration");
    o->path = v->path;
    o->retention_ms = v->retention_ms;
    o->retention_bytes = v->retention_bytes;
    o->min_block_ms = v->min_block_ms;
    o->max_block_ms = v->max_block_ms;
    o->wal_compression = v->wal_compression;
    o->ooo_window_ms = v->ooo_window_ms;
    if (v->wal_segment_size &&
        (v->wal_segment_size < TSDB_DB_WAL_MIN_BYTES || v->wal_segment_size > ((int64_t)256 << 20)))
        return base_errf(err, errlen, BASE_E_INVAL,
                         "--storage.tsdb.wal-segment-size must be 0 or between 64KiB and 256MiB "
                         "(Prometheus: 10MiB..256MiB)");
    if (v->wal_checkpoint_size < TSDB_DB_WAL_MIN_BYTES)
        return base_errf(err, errlen, BASE_E_INVAL,
                         "--storage.tsdb.wal-checkpoint-size must be at least 64KiB");
    o->wal.segment_size = (uint64_t)v->wal_segment_size;
    o->checkpoint_bytes = (uint64_t)v->wal_checkpoint_size;
    if (!strcmp(v->wal_sync, "none")) {
        o->wal.sync = TSDB_WAL_SYNC_NONE;
    } else if (!strcmp(v->wal_sync, "batch")) {
        o->wal.sync = TSDB_WAL_SYNC_BATCH;
    } else {
        int64_t ms;
        if (base_parse_duration_ms(v->wal_sync, &ms) || ms <= 0 || ms > UINT32_MAX)
            return base_errf(err, errlen, BASE_E_INVAL,
                             "--storage.tsdb.wal-sync: want none, batch or a duration, got \"%s\"",
                             v->wal_sync);
        o->wal.sync = TSDB_WAL_SYNC_INTERVAL;
        o->wal.sync_interval_ms = (uint32_t)ms;
    }
    return 0;
}

/* ---- the database ------------------------------------------------------- */

typedef struct dblock {
    tsdb_block *b;
    _Atomic uint32_t rc;
} dblock;

static void dblock_put(dblock *d) {
    if (d && atomic_fetch_sub_explicit(&d->rc, 1, memory_order_acq_rel) == 1) {
        tsdb_block_close(d->b);
        free(d);
    }
}

struct tsdb_db;

struct tsdb_db_set {
    tsdb_db *db;
    tsdb_db_set *prev, *next; /* registry of live sets */
    uint64_t gen;
    dblock **blocks;
    tsdb_block_set **bsets;
    size_t nb;
    tsdb_series_set *hset;
    tsdb__merge m;
    const labels_set *cur;
    int64_t mint, maxt;
};

struct tsdb_db {
    tsdb_db_opts o;
    char *path, *wal_dir;
    int64_t ranges[MAX_RANGES];
    size_t nranges;
    tsdb_dir_lock *lock;
    tsdb_head *head;

    pthread_rwlock_t bl_mu;
    dblock **blocks; /* sorted by mint, then maxt */
    size_t nblocks, capblocks;

    pthread_mutex_t rd_mu;
    pthread_cond_t rd_cv;
    tsdb_db_set *readers;
    uint64_t gen;

    pthread_mutex_t maint_mu;
    pthread_mutex_t th_mu;
    pthread_cond_t th_cv;
    pthread_t th;
    int th_started, th_stop, th_kick;

    pthread_mutex_t st_mu;
    uint64_t head_cuts, compactions, compactions_failed, retention_deleted, maintain_runs, maintain_failed;
    uint64_t tombstone_cleanups;
    char last_error[256];
};

tsdb_head *tsdb_db_head(tsdb_db *db) {
    return db->head;
}

tsdb_wal *tsdb_db_wal(tsdb_db *db) {
    return tsdb_head_wal(db->head);
}

const char *tsdb_db_wal_dir(const tsdb_db *db) {
    return db->wal_dir;
}

static char *path_join(const char *a, const char *b) {
    size_t la = strlen(a), lb = strlen(b);
    while (la > 1 && a[la - 1] == '/') la--;
    char *p = malloc(la + 1 + lb + 1);
    if (!p) return NULL;
    memcpy(p, a, la);
    p[la] = '/';
    memcpy(p + la + 1, b, lb + 1);
    return p;
}

static int cmp_block(const void *a, const void *b) {
    const tsdb_block_meta *x = tsdb_block_get_meta((*(dblock *const *)a)->b);
    const tsdb_block_meta *y = tsdb_block_get_meta((*(dblock *const *)b)->b);
    if (x->mint != y->mint) return x->mint < y->mint ? -1 : 1;
    if (x->maxt != y->maxt) return x->maxt < y->maxt ? -1 : 1;
    return memcmp(&x->ulid, &y->ulid, sizeof x->ulid);
}

/* Adds a block to the list (takes its reference). */
static int list_add(tsdb_db *db, tsdb_block *b) {
    dblock *d = calloc(1, sizeof *d);
    if (!d) return BASE_E_NOMEM;
    d->b = b;
    atomic_init(&d->rc, 1);
    pthread_rwlock_wrlock(&db->bl_mu);
    if (db->nblocks == db->capblocks) {
        size_t nc = db->capblocks ? db->capblocks * 2 : 16;
        dblock **nb = realloc(db->blocks, nc * sizeof *nb);
        if (!nb) {
            pthread_rwlock_unlock(&db->bl_mu);
            free(d);
            return BASE_E_NOMEM;
        }
        db->blocks = nb;
        db->capblocks = nc;
    }
    db->blocks[db->nblocks++] = d;
    qsort(db->blocks, db->nblocks, sizeof *db->blocks, cmp_block);
    pthread_mutex_lock(&db->rd_mu);
    db->gen++;
    pthread_mutex_unlock(&db->rd_mu);
    pthread_rwlock_unlock(&db->bl_mu);
    return 0;
}

/* Removes the listed blocks that are in del[] from the list, deletes their
 * directories and drops the list's references. */
static int list_remove(tsdb_db *db, dblock *const *del, size_t n, char *err, size_t errlen) {
    pthread_rwlock_wrlock(&db->bl_mu);
    size_t k = 0;
    for (size_t i = 0; i < db->nblocks; i++) {
        int doomed = 0;
        for (size_t j = 0; j < n && !doomed; j++) doomed = db->blocks[i] == del[j];
        if (!doomed) db->blocks[k++] = db->blocks[i];
    }
    db->nblocks = k;
    pthread_rwlock_unlock(&db->bl_mu);
    int first = 0;
    for (size_t j = 0; j < n; j++) {
        /* unlinking a mapped file is fine: the mapping lives until close */
        int e = tsdb_block_delete(tsdb_block_dir(del[j]->b), first ? NULL : err, first ? 0 : errlen);
        if (e && !first) first = e;
        dblock_put(del[j]);
    }
    return first;
}

/* A snapshot of the list with a reference on each block. */
static int list_snapshot(tsdb_db *db, dblock ***ret, size_t *ret_n) {
    pthread_rwlock_rdlock(&db->bl_mu);
    size_t n = db->nblocks;
    dblock **v = malloc((n ? n : 1) * sizeof *v);
    if (!v) {
        pthread_rwlock_unlock(&db->bl_mu);
        return BASE_E_NOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        v[i] = db->blocks[i];
        atomic_fetch_add_explicit(&v[i]->rc, 1, memory_order_relaxed);
    }
    pthread_rwlock_unlock(&db->bl_mu);
    *ret = v;
    *ret_n = n;
    return 0;
}

static void snapshot_free(dblock **v, size_t n) {
    for (size_t i = 0; i < n; i++) dblock_put(v[i]);
    free(v);
}

static void note_error(tsdb_db *db, const char *msg) {
    pthread_mutex_lock(&db->st_mu);
    snprintf(db->last_error, sizeof db->last_error, "%s", msg);
    pthread_mutex_unlock(&db->st_mu);
}

static void count(tsdb_db *db, uint64_t *field, uint64_t by) {
    pthread_mutex_lock(&db->st_mu);
    *field += by;
    pthread_mutex_unlock(&db->st_mu);
}

/* ---- open --------------------------------------------------------------- */

static void rep_error(tsdb_db_report *r, const char *msg) {
    if (!r->first_error[0]) snprintf(r->first_error, sizeof r->first_error, "%s", msg);
}

static int is_ulid_name(const char *s, size_t len) {
    tsdb_ulid u;
    return len == TSDB_ULID_LEN && tsdb_ulid_parse((base_str){s, len}, &u) == 0;
}

static int sources_within(const tsdb_block_meta *a, const tsdb_block_meta *b) {
    if (!a->nsources) return 0;
    for (uint32_t i = 0; i < a->nsources; i++) {
        int found = 0;
        for (uint32_t j = 0; j < b->nsources && !found; j++)
            found = !memcmp(&a->sources[i], &b->sources[j], sizeof a->sources[i]);
        if (!found) return 0;
    }
    return 1;
}

static int open_blocks(tsdb_db *db, tsdb_db_report *rep, char *err, size_t errlen) {
    DIR *d = opendir(db->path);
    if (!d) return base_errf(err, errlen, BASE_E_IO, "%s: %s", db->path, strerror(errno));
    struct dirent *de;
    int e = 0;
    char msg[512];
    while ((de = readdir(d)) && !e) {
        size_t l = strlen(de->d_name);
        if (l > TSDB_ULID_LEN && is_ulid_name(de->d_name, TSDB_ULID_LEN) &&
            de->d_name[TSDB_ULID_LEN] == '.') {
            /* <ULID>.tmp (a write that never finished) or .tmp-delete */
            if (db->o.read_only) continue;
            char *p = path_join(db->path, de->d_name);
            if (!p) {
                e = BASE_E_NOMEM;
                break;
            }
            if (tsdb_block_delete(p, msg, sizeof msg) == 0) rep->leftovers++;
            free(p);
            continue;
        }
        if (!is_ulid_name(de->d_name, l)) continue;
        char *p = path_join(db->path, de->d_name);
        if (!p) {
            e = BASE_E_NOMEM;
            break;
        }
        tsdb_block *b;
        int be = tsdb_block_open(p, &b, msg, sizeof msg);
        if (be == BASE_E_NOMEM) {
            e = be;
        } else if (be) {
            rep->blocks_bad++;
            rep_error(rep, msg);
            if (db->o.on_bad_block) db->o.on_bad_block(db->o.bad_ctx, p, msg);
        } else if ((e = list_add(db, b))) {
            tsdb_block_close(b);
        } else {
            rep->blocks++;
        }
        free(p);
    }
    closedir(d);
    if (e) return base_errf(err, errlen, e, "%s: opening blocks: %s", db->path, base_strerror(e));
    /* a compaction that finished but did not get to delete its inputs */
    for (size_t i = 0; i < db->nblocks && !db->o.read_only;) {
        const tsdb_block_meta *a = tsdb_block_get_meta(db->blocks[i]->b);
        int replaced = 0;
        for (size_t j = 0; j < db->nblocks && !replaced; j++) {
            const tsdb_block_meta *b = tsdb_block_get_meta(db->blocks[j]->b);
            replaced = j != i && b->level > a->level && sources_within(a, b);
        }
        if (!replaced) {
            i++;
            continue;
        }
        dblock *victim = db->blocks[i];
        if (list_remove(db, &victim, 1, msg, sizeof msg)) rep_error(rep, msg);
        rep->blocks_replaced++;
        rep->blocks--;
    }
    return 0;
}

static void *maint_thread(void *arg);

static void free_db(tsdb_db *db) {
    for (size_t i = 0; i < db->nblocks; i++) dblock_put(db->blocks[i]);
    free(db->blocks);
    pthread_rwlock_destroy(&db->bl_mu);
    pthread_mutex_destroy(&db->rd_mu);
    pthread_cond_destroy(&db->rd_cv);
    pthread_mutex_destroy(&db->maint_mu);
    pthread_mutex_destroy(&db->th_mu);
    pthread_cond_destroy(&db->th_cv);
    pthread_mutex_destroy(&db->st_mu);
    tsdb_dir_lock_release(db->lock);
    free(db->path);
    free(db->wal_dir);
    free(db);
}

static int newest_block_maxt(tsdb_db *db, int64_t *ret) {
    int have = 0;
    pthread_rwlock_rdlock(&db->bl_mu);
    for (size_t i = 0; i < db->nblocks; i++) {
        int64_t t = tsdb_block_get_meta(db->blocks[i]->b)->maxt;
        if (!have || t > *ret) *ret = t;
        have = 1;
    }
    pthread_rwlock_unlock(&db->bl_mu);
    return have;
}

int tsdb_db_open(const tsdb_db_opts *o, tsdb_db **ret, tsdb_db_report *rep_out, char *err, size_t errlen) {
    tsdb_db_report rep;
    memset(&rep, 0, sizeof rep);
    if (!o || !o->path || !o->path[0]) return base_errf(err, errlen, BASE_E_INVAL, "no data directory");
    if (o->min_block_ms <= 0)
        return base_errf(err, errlen, BASE_E_INVAL, "min block duration must be positive");
    tsdb_db *db = calloc(1, sizeof *db);
    if (!db) return BASE_E_NOMEM;
    db->o = *o;
    pthread_rwlock_init(&db->bl_mu, NULL);
    pthread_mutex_init(&db->rd_mu, NULL);
    pthread_cond_init(&db->rd_cv, NULL);
    pthread_mutex_init(&db->maint_mu, NULL);
    pthread_mutex_init(&db->th_mu, NULL);
    pthread_cond_init(&db->th_cv, NULL);
    pthread_mutex_init(&db->st_mu, NULL);
    db->path = strdup(o->path);
    db->wal_dir = path_join(o->path, "wal");
    int e = 0;
    if (!db->path || !db->wal_dir) {
        e = BASE_E_NOMEM;
        goto fail;
    }
    db->o.path = db->path;
    /* block ranges: min_block x 3^k up to max_block */
    int64_t maxb = o->max_block_ms;
    if (!maxb) {
        maxb = o->retention_ms ? o->retention_ms / 10 : 31 * DAY_MS;
        if (maxb > 31 * DAY_MS) maxb = 31 * DAY_MS;
    }
    if (maxb < o->min_block_ms) maxb = o->min_block_ms;
    for (int64_t r = o->min_block_ms; r <= maxb && db->nranges < MAX_RANGES; r *= 3)
        db->ranges[db->nranges++] = r;
    if (!o->read_only) {
        if (mkdir(db->path, 0755) && errno != EEXIST) {
            e = base_errf(err, errlen, BASE_E_IO, "%s: %s", db->path, strerror(errno));
            goto fail;
        }
        if ((e = tsdb_dir_lock_take(db->path, &db->lock, err, errlen))) goto fail;
    }
    if ((e = open_blocks(db, &rep, err, errlen))) goto fail;
    tsdb_head_opts ho = {.wal_dir = db->wal_dir,
                         .wal = o->wal,
                         .checkpoint_bytes = o->checkpoint_bytes,
                         .chunk_samples = o->chunk_samples,
                         .ooo_window_ms = o->ooo_window_ms};
    ho.wal.read_only = o->read_only;
    ho.wal.compress = o->wal_compression;
    if ((e = tsdb_head_open(&ho, &db->head, &rep.wal, err, errlen))) goto fail;
    if (rep.wal.first_error[0]) rep_error(&rep, rep.wal.first_error);
    int64_t bmax = 0;
    if (newest_block_maxt(db, &bmax) && (e = tsdb_head_gc(db->head, bmax, NULL))) {
        base_errf(err, errlen, e, "dropping head data the blocks already hold: %s", base_strerror(e));
        goto fail;
    }
    if (!o->read_only && o->maintain_interval_ms >= 0) {
        if (pthread_create(&db->th, NULL, maint_thread, db)) {
            e = base_errf(err, errlen, BASE_E_NOMEM, "cannot start the maintenance thread");
            goto fail;
        }
        db->th_started = 1;
    }
    if (rep_out) *rep_out = rep;
    *ret = db;
    return 0;
fail:
    if (db->head) tsdb_head_close(db->head);
    free_db(db);
    return e;
}

int tsdb_db_close(tsdb_db *db) {
    if (!db) return 0;
    if (db->th_started) {
        pthread_mutex_lock(&db->th_mu);
        db->th_stop = 1;
        pthread_cond_signal(&db->th_cv);
        pthread_mutex_unlock(&db->th_mu);
        pthread_join(db->th, NULL);
    }
    int e = tsdb_head_close(db->head);
    free_db(db);
    return e;
}

/* ---- maintenance -------------------------------------------------------- */

/* Waits until no series set from a generation before `gen` is alive. */
static void wait_readers(tsdb_db *db, uint64_t gen) {
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    dl.tv_sec += READER_WAIT_MS / 1000;
    pthread_mutex_lock(&db->rd_mu);
    for (;;) {
        int old = 0;
        for (tsdb_db_set *s = db->readers; s && !old; s = s->next) old = s->gen < gen;
        if (!old || pthread_cond_timedwait(&db->rd_cv, &db->rd_mu, &dl) == ETIMEDOUT) break;
    }
    pthread_mutex_unlock(&db->rd_mu);
}

static int64_t floor_div(int64_t a, int64_t b) {
    int64_t q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

/* Cuts the head into blocks while it spans more than 1.5 block ranges. */
static int cut_head(tsdb_db *db, char *err, size_t errlen) {
    int64_t r = db->o.min_block_ms;
    for (int i = 0; i < MAINTAIN_MAX_CUTS; i++) {
        int64_t mint, maxt;
        tsdb_head_bounds(db->head, &mint, &maxt);
        /* GC keeps open chunks whole: samples below the floor are in blocks */
        int64_t floor = tsdb_head_min_valid_time(db->head);
        if (mint < floor) mint = floor;
        if (mint > maxt || maxt - mint <= r / 2 * 3) return 0;
        int64_t a = floor_div(mint, r) * r, b = a + r;
        tsdb_block_wopts wo = {.chunk_samples = TSDB_BLOCK_CHUNK_SAMPLES};
        tsdb_block_meta meta;
        int e = tsdb_block_write_head(db->path, db->head, a, b, &wo, &meta, err, errlen);
        if (e) return e;
        char ulid[27], *dir;
        tsdb_ulid_format(&meta.ulid, ulid);
        if (!(dir = path_join(db->path, ulid))) return BASE_E_NOMEM;
        if (meta.num_series == 0) {
            e = tsdb_block_delete(dir, err, errlen);
            free(dir);
            if (e) return e;
        } else {
            tsdb_block *blk;
            e = tsdb_block_open(dir, &blk, err, errlen);
            free(dir);
            if (e || (e = list_add(db, blk))) return e;
        }
        pthread_mutex_lock(&db->rd_mu);
        uint64_t gen = db->gen;
        pthread_mutex_unlock(&db->rd_mu);
        wait_readers(db, gen);
        if ((e = tsdb_head_gc(db->head, b, NULL)))
            return base_errf(err, errlen, e, "head GC: %s", base_strerror(e));
        if ((e = tsdb_head_checkpoint(db->head, b, err, errlen))) return e;
        count(db, &db->head_cuts, 1);
    }
    return 0;
}

/* Plans one compaction over the list (oldest first). Returns the number
 * of inputs written to idx (0: nothing to do). */
static size_t plan(tsdb_db *db, dblock *const *v, size_t n, size_t *idx) {
    if (n < 2) return 0;
    /* overlapping blocks first (backfill, out-of-order) */
    int64_t end = tsdb_block_get_meta(v[0]->b)->maxt;
    for (size_t i = 1; i < n; i++) {
        const tsdb_block_meta *m = tsdb_block_get_meta(v[i]->b);
        if (m->mint < end) {
            size_t k = 0, s = i - 1;
            while (s > 0 && tsdb_block_get_meta(v[s - 1]->b)->maxt > m->mint) s--;
            int64_t gend = end;
            for (size_t j = s; j < n && k < TSDB_BLOCK_MAX_SOURCES / 8; j++) {
                const tsdb_block_meta *x = tsdb_block_get_meta(v[j]->b);
                if (j > s && x->mint >= gend) break;
                if (x->maxt > gend) gend = x->maxt;
                idx[k++] = j;
            }
            return k;
        }
        if (m->maxt > end) end = m->maxt;
    }
    /* leveled: never the newest block */
    size_t m = n - 1;
    for (size_t ri = 1; ri < db->nranges; ri++) {
        int64_t r = db->ranges[ri];
        for (size_t i = 0; i < m;) {
            const tsdb_block_meta *first = tsdb_block_get_meta(v[i]->b);
            int64_t t0 = floor_div(first->mint, r) * r, t1 = t0 + r;
            size_t j = i;
            while (j < m && tsdb_block_get_meta(v[j]->b)->mint >= t0 &&
                   tsdb_block_get_meta(v[j]->b)->maxt <= t1)
                j++;
            if (j == i) { /* a block wider than r: skip it */
                i++;
                continue;
            }
            if (j - i >= 2) {
                int64_t gmaxt = tsdb_block_get_meta(v[j - 1]->b)->maxt;
                /* the group fills its range, or newer blocks come after it */
                int newer = tsdb_block_get_meta(v[n - 1]->b)->mint >= t1;
                if (gmaxt - first->mint == r || newer) {
                    size_t k = 0;
                    for (size_t x = i; x < j && k < TSDB_BLOCK_MAX_SOURCES / 8; x++) idx[k++] = x;
                    return k;
                }
            }
            i = j;
        }
    }
    /* one block rewritten for its tombstones (Prometheus 2.42's planner),
     * newest first, never the newest: one at least half the largest range
     * wide with more than 5% of its series deleted, or a narrower one
     * where every series has a tombstone */
    for (size_t i = n - 1; i-- > 0;) {
        const tsdb_block_meta *bm = tsdb_block_get_meta(v[i]->b);
        uint64_t nt = tsdb_block_num_tombstones(v[i]->b);
        if (bm->maxt - bm->mint < db->ranges[db->nranges / 2]) {
            if (nt > 0 && nt >= bm->num_series) {
                idx[0] = i;
                return 1;
            }
            break;
        }
        if ((double)nt / (double)(bm->num_series + 1) > 0.05) {
            idx[0] = i;
            return 1;
        }
    }
    return 0;
}

/* Replaces blocks din[0..k) by one merged from them (k == 1: the block
 * rewritten without its deleted samples). The new block is in place
 * before the old ones go, and it lists their sources at a higher level,
 * so a crash in between leaves what open removes; a result without series
 * is not kept. */
static int replace_blocks(tsdb_db *db, dblock *const *din, size_t k, char *err, size_t errlen) {
    tsdb_block **in = malloc(k * sizeof *in);
    if (!in) return BASE_E_NOMEM;
    for (size_t i = 0; i < k; i++) in[i] = din[i]->b;
    tsdb_block_meta meta;
    tsdb_block_wopts wo = {.chunk_samples = TSDB_BLOCK_CHUNK_SAMPLES};
    int e = tsdb_block_compact(db->path, in, k, &wo, &meta, err, errlen);
    free(in);
    if (e) return e;
    char ulid[27], *dir;
    tsdb_ulid_format(&meta.ulid, ulid);
    tsdb_block *nb;
    if (!(dir = path_join(db->path, ulid))) {
        e = BASE_E_NOMEM;
    } else if (meta.num_series == 0) {
        e = tsdb_block_delete(dir, err, errlen);
    } else if (!(e = tsdb_block_open(dir, &nb, err, errlen)) && (e = list_add(db, nb))) {
        tsdb_block_close(nb);
    }
    free(dir);
    if (!e) e = list_remove(db, din, k, err, errlen);
    return e;
}

static int compact(tsdb_db *db, char *err, size_t errlen) {
    for (int round = 0; round < 64; round++) {
        dblock **v;
        size_t n;
        int e = list_snapshot(db, &v, &n);
        if (e) return e;
        size_t *idx = malloc((n ? n : 1) * sizeof *idx);
        dblock **din = malloc((n ? n : 1) * sizeof *din);
        size_t k = idx && din ? plan(db, v, n, idx) : 0;
        if (!idx || !din) e = BASE_E_NOMEM;
        for (size_t i = 0; i < k; i++) din[i] = v[idx[i]];
        if (k) {
            e = replace_blocks(db, din, k, err, errlen);
            count(db, e ? &db->compactions_failed : &db->compactions, 1);
        }
        free(idx);
        free(din);
        snapshot_free(v, n);
        if (e || !k) return e;
    }
    return 0;
}

static uint64_t dir_bytes(const char *dir) {
    uint64_t total = 0;
    DIR *d = opendir(dir);
    if (!d) return 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.') continue;
        char *p = path_join(dir, de->d_name);
        struct stat sb;
        if (p && !lstat(p, &sb)) total += S_ISDIR(sb.st_mode) ? dir_bytes(p) : (uint64_t)sb.st_size;
        free(p);
    }
    closedir(d);
    return total;
}

static int retention(tsdb_db *db, char *err, size_t errlen) {
    if (!db->o.retention_ms && !db->o.retention_bytes) return 0;
    dblock **v;
    size_t n;
    int e = list_snapshot(db, &v, &n);
    if (e) return e;
    tsdb_block_meta *metas = malloc((n ? n : 1) * sizeof *metas);
    uint8_t *del = malloc(n ? n : 1);
    dblock **doomed = malloc((n ? n : 1) * sizeof *doomed);
    if (!metas || !del || !doomed) {
        e = BASE_E_NOMEM;
    } else {
        for (size_t i = 0; i < n; i++) metas[i] = *tsdb_block_get_meta(v[i]->b);
        uint64_t budget = 0;
        if (db->o.retention_bytes) {
            uint64_t wal = dir_bytes(db->wal_dir);
            budget = (uint64_t)db->o.retention_bytes > wal ? (uint64_t)db->o.retention_bytes - wal : 1;
        }
        size_t k = 0;
        if (tsdb_retention_plan(metas, n, db->o.retention_ms, budget, del))
            for (size_t i = 0; i < n; i++)
                if (del[i]) doomed[k++] = v[i];
        if (k) {
            e = list_remove(db, doomed, k, err, errlen);
            count(db, &db->retention_deleted, k);
        }
    }
    free(metas);
    free(del);
    free(doomed);
    snapshot_free(v, n);
    return e;
}

/* Size-triggered WAL checkpoint (head.h SIZE-TRIGGERED CHECKPOINTS): when
 * the WAL written since the newest checkpoint passes the head's threshold,
 * checkpoint at the head's min valid time, which drops nothing (cut_head's
 * checkpoints, at a block boundary, reset the count too). Bounds what a
 * restart replays sample by sample; appenders are not stopped. */
static int checkpoint_if_due(tsdb_db *db, char *err, size_t errlen) {
    if (!tsdb_head_checkpoint_due(db->head)) return 0;
    return tsdb_head_checkpoint(db->head, tsdb_head_min_valid_time(db->head), err, errlen);
}

int tsdb_db_maintain(tsdb_db *db, char *err, size_t errlen) {
    if (db->o.read_only) return base_errf(err, errlen, BASE_E_INVAL, "database opened read-only");
    char msg[512] = "";
    pthread_mutex_lock(&db->maint_mu);
    int e = cut_head(db, msg, sizeof msg), first = e;
    if (e) note_error(db, msg);
    if ((e = checkpoint_if_due(db, msg, sizeof msg))) note_error(db, msg);
    if (e && !first) first = e;
    if ((e = compact(db, msg, sizeof msg))) note_error(db, msg);
    if (e && !first) first = e;
    if ((e = retention(db, msg, sizeof msg))) note_error(db, msg);
    if (e && !first) first = e;
    pthread_mutex_unlock(&db->maint_mu);
    count(db, &db->maintain_runs, 1);
    if (first) {
        count(db, &db->maintain_failed, 1);
        pthread_mutex_lock(&db->st_mu);
        base_errf(err, errlen, first, "%s", db->last_error);
        pthread_mutex_unlock(&db->st_mu);
    }
    return first;
}

void tsdb_db_kick(tsdb_db *db) {
    pthread_mutex_lock(&db->th_mu);
    db->th_kick = 1;
    pthread_cond_signal(&db->th_cv);
    pthread_mutex_unlock(&db->th_mu);
}

/* CLOCK_REALTIME plus ms, for pthread_cond_timedwait. */
static struct timespec deadline_in(int64_t ms) {
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    int64_t ns = dl.tv_nsec + (ms % 1000) * 1000000;
    dl.tv_sec += ms / 1000 + ns / 1000000000;
    dl.tv_nsec = ns % 1000000000;
    return dl;
}

/* A round every `every` ms, on a kick, and within DB_CKPT_POLL_MS of the
 * WAL growing past the checkpoint threshold (so the threshold, not the
 * round's period, bounds what a restart replays). */
#define DB_CKPT_POLL_MS 5000

static void *maint_thread(void *arg) {
    tsdb_db *db = arg;
    int64_t every = db->o.maintain_interval_ms ? db->o.maintain_interval_ms : 60000;
    pthread_mutex_lock(&db->th_mu);
    while (!db->th_stop) {
        struct timespec dl = deadline_in(every);
        while (!db->th_stop && !db->th_kick) {
            struct timespec sl = deadline_in(DB_CKPT_POLL_MS);
            int last = sl.tv_sec > dl.tv_sec || (sl.tv_sec == dl.tv_sec && sl.tv_nsec >= dl.tv_nsec);
            if (pthread_cond_timedwait(&db->th_cv, &db->th_mu, last ? &dl : &sl) != ETIMEDOUT) continue;
            if (last) break; /* the round is due */
            pthread_mutex_unlock(&db->th_mu);
            int due = tsdb_head_checkpoint_due(db->head);
            pthread_mutex_lock(&db->th_mu);
            if (due) break;
        }
        if (db->th_stop) break;
        db->th_kick = 0;
        pthread_mutex_unlock(&db->th_mu);
        (void)tsdb_db_maintain(db, NULL, 0); /* failures are counted and kept */
        pthread_mutex_lock(&db->th_mu);
    }
    pthread_mutex_unlock(&db->th_mu);
    return NULL;
}

/* ---- deletion ----------------------------------------------------------- */

static int overlaps(const tsdb_block_meta *m, int64_t mint, int64_t maxt);

/* Takes maint_mu and a snapshot of the blocks (the caller frees it, then
 * unlocks); on failure holds nothing and returns the error ("what: ..."). */
static int maint_snapshot(tsdb_db *db, dblock ***ret_v, size_t *ret_nb, const char *what, char *err,
                          size_t errlen) {
    pthread_mutex_lock(&db->maint_mu);
    int e = list_snapshot(db, ret_v, ret_nb);
    if (e) {
        pthread_mutex_unlock(&db->maint_mu);
        return base_errf(err, errlen, e, "%s: %s", what, base_strerror(e));
    }
    return 0;
}

int tsdb_db_delete(tsdb_db *db, labels_matcher *const *ms, size_t n, int64_t mint, int64_t maxt, char *err,
                   size_t errlen) {
    if (db->o.read_only) return base_errf(err, errlen, BASE_E_INVAL, "database opened read-only");
    if (mint > maxt) return 0;
    /* as Prometheus: not while blocks are cut or compacted (maint_mu), so
     * no block that a deletion missed can replace one it hit */
    dblock **v = NULL;
    size_t nb = 0;
    int e = maint_snapshot(db, &v, &nb, "delete", err, errlen);
    if (e) return e;
    /* every place is tried; the first error is returned */
    for (size_t i = 0; i < nb; i++) {
        if (!overlaps(tsdb_block_get_meta(v[i]->b), mint, maxt)) continue;
        int be = tsdb_block_tombstone(v[i]->b, ms, n, mint, maxt, NULL, e ? NULL : err, e ? 0 : errlen);
        if (be && !e) e = be;
    }
    int he = tsdb_head_delete(db->head, ms, n, mint, maxt, NULL);
    if (he && !e) e = base_errf(err, errlen, he, "head: %s", base_strerror(he));
    snapshot_free(v, nb);
    pthread_mutex_unlock(&db->maint_mu);
    return e;
}

int tsdb_db_clean_tombstones(tsdb_db *db, char *err, size_t errlen) {
    if (db->o.read_only) return base_errf(err, errlen, BASE_E_INVAL, "database opened read-only");
    dblock **v = NULL;
    size_t nb = 0;
    int e = maint_snapshot(db, &v, &nb, "clean tombstones", err, errlen);
    if (e) return e;
    for (size_t i = 0; i < nb && !e; i++) {
        if (!tsdb_block_num_tombstones(v[i]->b)) continue;
        e = replace_blocks(db, &v[i], 1, err, errlen);
        if (!e) count(db, &db->tombstone_cleanups, 1);
    }
    snapshot_free(v, nb);
    pthread_mutex_unlock(&db->maint_mu);
    return e;
}

/* ---- reading ------------------------------------------------------------ */

void tsdb_db_set_free(tsdb_db_set *s) {
    if (!s) return;
    tsdb_db *db = s->db;
    pthread_mutex_lock(&db->rd_mu);
    if (s->prev)
        s->prev->next = s->next;
    else if (db->readers == s)
        db->readers = s->next;
    if (s->next) s->next->prev = s->prev;
    pthread_cond_broadcast(&db->rd_cv);
    pthread_mutex_unlock(&db->rd_mu);
    tsdb__merge_free(&s->m);
    tsdb_series_set_free(s->hset);
    for (size_t i = 0; i < s->nb; i++) {
        tsdb_block_set_free(s->bsets[i]);
        dblock_put(s->blocks[i]);
    }
    free(s->bsets);
    free(s->blocks);
    free(s);
}

/* Head samples below this are in blocks (or were dropped). */
static int64_t head_floor(tsdb_db *db) {
    return tsdb_head_min_valid_time(db->head);
}

static int overlaps(const tsdb_block_meta *m, int64_t mint, int64_t maxt) {
    return m->mint <= maxt && m->maxt > mint;
}

int tsdb_db_select(tsdb_db *db, labels_matcher *const *ms, size_t n, int64_t mint, int64_t maxt,
                   tsdb_db_set **ret) {
    tsdb_db_set *s = calloc(1, sizeof *s);
    if (!s) return BASE_E_NOMEM;
    s->db = db;
    s->mint = mint;
    s->maxt = maxt;
    int e = 0;
    pthread_rwlock_rdlock(&db->bl_mu);
    pthread_mutex_lock(&db->rd_mu);
    s->gen = db->gen;
    s->next = db->readers;
    if (s->next) s->next->prev = s;
    db->readers = s;
    pthread_mutex_unlock(&db->rd_mu);
    size_t cnt = 0;
    for (size_t i = 0; i < db->nblocks; i++)
        cnt += overlaps(tsdb_block_get_meta(db->blocks[i]->b), mint, maxt);
    s->blocks = calloc(cnt ? cnt : 1, sizeof *s->blocks);
    s->bsets = calloc(cnt ? cnt : 1, sizeof *s->bsets);
    if (!s->blocks || !s->bsets) e = BASE_E_NOMEM;
    /* each source reads exactly its own range (a block's [mint, maxt - 1],
     * the head above its floor): where those do not overlap, a series is
     * the concatenation of its pieces (merge_int.h CHAIN MODE) */
    for (size_t i = 0; i < db->nblocks && !e; i++) {
        dblock *d = db->blocks[i];
        const tsdb_block_meta *bm = tsdb_block_get_meta(d->b);
        if (!overlaps(bm, mint, maxt)) continue;
        int64_t lo = bm->mint > mint ? bm->mint : mint, hi = bm->maxt - 1 < maxt ? bm->maxt - 1 : maxt;
        if ((e = tsdb_block_select(d->b, ms, n, lo, hi, &s->bsets[s->nb]))) break;
        atomic_fetch_add_explicit(&d->rc, 1, memory_order_relaxed);
        s->blocks[s->nb++] = d;
        e = tsdb__merge_add_range(&s->m, &tsdb__merge_block_ops, s->bsets[s->nb - 1], lo, hi);
    }
    int64_t hmin = head_floor(db);
    if (!e && (hmin > mint ? hmin : mint) <= maxt) {
        int64_t lo = hmin > mint ? hmin : mint;
        e = tsdb_head_select(db->head, ms, n, lo, maxt, &s->hset);
        if (!e) e = tsdb__merge_add_range(&s->m, &tsdb__merge_head_ops, s->hset, lo, maxt);
    }
    pthread_rwlock_unlock(&db->bl_mu);
    if (e) {
        tsdb_db_set_free(s);
        return e;
    }
    *ret = s;
    return 0;
}

int tsdb_db_set_next(tsdb_db_set *s) {
    for (;;) {
        int r = tsdb__merge_next(&s->m, &s->cur);
        if (r <= 0) return r;
        /* a block may list a series whose chunks overlap the range but
         * whose samples do not: skip series without a sample in range */
        int any = 0;
        for (size_t i = 0; i < s->m.n && !any; i++) any = s->m.in[i].in_group && s->m.in[i].has;
        if (any || s->m.pending) return 1; /* a damaged chunk shows at the first sample */
    }
}

const labels_set *tsdb_db_set_labels(const tsdb_db_set *s) {
    return s->cur;
}

int tsdb_db_set_sample(tsdb_db_set *s, int64_t *ret_t, double *ret_v) {
    return tsdb__merge_sample(&s->m, ret_t, ret_v);
}

int tsdb_db_set_samples(tsdb_db_set *s, int64_t *t, double *v, size_t cap) {
    if (!cap) return BASE_E_INVAL;
    return tsdb__merge_samples(&s->m, t, v, cap);
}

/* ---- label listings ----------------------------------------------------- */

/* The union of sorted lists, as one allocation. */
static int strs_union(tsdb_strs *const *lists, size_t n, tsdb_strs **ret) {
    size_t total = 0, k = 0;
    for (size_t i = 0; i < n; i++) total += lists[i] ? lists[i]->n : 0;
    base_str *v = malloc((total ? total : 1) * sizeof *v);
    if (!v) return BASE_E_NOMEM;
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; lists[i] && j < lists[i]->n; j++) v[k++] = lists[i]->v[j];
    int e = tsdb__strs_make(v, k, ret);
    free(v);
    return e;
}

static int labels_list(tsdb_db *db, const base_str *name, labels_matcher *const *ms, size_t n, int64_t mint,
                       int64_t maxt, tsdb_strs **ret) {
    dblock **v;
    size_t nb;
    int e = list_snapshot(db, &v, &nb);
    if (e) return e;
    tsdb_strs **lists = calloc(nb + 1, sizeof *lists);
    size_t k = 0;
    if (!lists) e = BASE_E_NOMEM;
    for (size_t i = 0; i < nb && !e; i++) {
        if (!overlaps(tsdb_block_get_meta(v[i]->b), mint, maxt)) continue;
        e = tsdb__block_label_list(v[i]->b, name, ms, n, mint, maxt, &lists[k]);
        if (!e) k++;
    }
    int64_t hmin = head_floor(db);
    if (!e && (hmin > mint ? hmin : mint) <= maxt) {
        int64_t lo = hmin > mint ? hmin : mint;
        e = name ? tsdb_head_label_values(db->head, *name, ms, n, lo, maxt, &lists[k])
                 : tsdb_head_label_names(db->head, ms, n, lo, maxt, &lists[k]);
        if (!e) k++;
    }
    if (!e) e = strs_union(lists, k, ret);
    for (size_t i = 0; lists && i < k; i++) tsdb_strs_free(lists[i]);
    free(lists);
    snapshot_free(v, nb);
    return e;
}

int tsdb_db_label_names(tsdb_db *db, labels_matcher *const *ms, size_t n, int64_t mint, int64_t maxt,
                        tsdb_strs **ret) {
    return labels_list(db, NULL, ms, n, mint, maxt, ret);
}

int tsdb_db_label_values(tsdb_db *db, base_str name, labels_matcher *const *ms, size_t n, int64_t mint,
                         int64_t maxt, tsdb_strs **ret) {
    return labels_list(db, &name, ms, n, mint, maxt, ret);
}

/* ---- accounting --------------------------------------------------------- */

void tsdb_db_stats_get(tsdb_db *db, tsdb_db_stats *ret) {
    memset(ret, 0, sizeof *ret);
    tsdb_head_stats_get(db->head, &ret->head);
    pthread_rwlock_rdlock(&db->bl_mu);
    ret->blocks = db->nblocks;
    ret->tombstones = ret->head.tombstones;
    for (size_t i = 0; i < db->nblocks; i++) {
        const tsdb_block_meta *m = tsdb_block_get_meta(db->blocks[i]->b);
        ret->tombstones += tsdb_block_num_tombstones(db->blocks[i]->b);
        ret->block_bytes += m->chunk_bytes + m->index_bytes;
        ret->block_series += m->num_series;
        ret->block_samples += m->num_samples;
        if (i == 0 || m->mint < ret->blocks_mint) ret->blocks_mint = m->mint;
        if (i == 0 || m->maxt > ret->blocks_maxt) ret->blocks_maxt = m->maxt;
    }
    pthread_rwlock_unlock(&db->bl_mu);
    ret->wal_bytes = dir_bytes(db->wal_dir);
    pthread_mutex_lock(&db->st_mu);
    ret->head_cuts = db->head_cuts;
    ret->compactions = db->compactions;
    ret->compactions_failed = db->compactions_failed;
    ret->retention_deleted = db->retention_deleted;
    ret->maintain_runs = db->maintain_runs;
    ret->maintain_failed = db->maintain_failed;
    ret->tombstone_cleanups = db->tombstone_cleanups;
    snprintf(ret->last_error, sizeof ret->last_error, "%s", db->last_error);
    pthread_mutex_unlock(&db->st_mu);
}

int tsdb_db_blocks(tsdb_db *db, tsdb_block_meta **ret, size_t *ret_n) {
    pthread_rwlock_rdlock(&db->bl_mu);
    size_t n = db->nblocks;
    tsdb_block_meta *v = malloc((n ? n : 1) * sizeof *v);
    if (v)
        for (size_t i = 0; i < n; i++) v[i] = *tsdb_block_get_meta(db->blocks[i]->b);
    pthread_rwlock_unlock(&db->bl_mu);
    if (!v) return BASE_E_NOMEM;
    *ret = v;
    *ret_n = n;
    return 0;
}
