/* head.c -- series tables, postings, appenders, replay, GC, checkpoint
 * (design in head.h).
 *
 * Locks, in the order they may nest:
 *   commit_mu  -- creation/removal of series, applying samples, queueing
 *                 WAL records, GC, checkpoint scans. One at a time.
 *   idx_lock   -- rwlock over the postings index (written only under
 *                 commit_mu).
 *   shard mu   -- each of 256 shards of the hash and ref tables.
 *   stripe mu  -- per-series state (chunks, appender, last sample),
 *                 stripes[ref & 4095].
 * A series is reference counted: the tables hold one reference, appenders
 * and readers take one while they hold a pointer. `dead` is set (under
 * commit_mu) when GC has unlinked it; the last reference frees it.
 * Postings keep their keys' interned ids alive with their own references
 * (ids are recycled once freed).
 */
#include "tsdb/head.h"

#include <inttypes.h>
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/err.h"
#include "tsdb/chunk.h"
#include "tsdb/head_int.h"
#include "tsdb/record.h"

uint64_t tsdb__head_hash_mask = ~(uint64_t)0;

#define NSHARDS         256
#define NSTRIPES        4096
#define MALLOC_OVERHEAD 8

static size_t msize(const void *p) {
    return p ? malloc_usable_size((void *)p) + MALLOC_OVERHEAD : 0;
}

/* ---- series ------------------------------------------------------------- */

typedef struct hchunk {
    int64_t mint, maxt;
    uint8_t *data;
    uint32_t len, n;
} hchunk;

typedef struct hseries {
    uint64_t ref, hash;
    labels_set *ls;
    _Atomic uint32_t rc;
    uint8_t dead;
    uint32_t nch, capch;
    hchunk *ch;
    int64_t open_mint;
    int64_t last_t; /* INT64_MIN: no sample yet */
    uint64_t last_v;
    tsdb_chunk_app app;
} hseries;

static void series_free(hseries *s) {
    for (uint32_t i = 0; i < s->nch; i++) free(s->ch[i].data);
    free(s->ch);
    tsdb_chunk_app_free(&s->app);
    labels_unref(s->ls);
    free(s);
}

static void series_get(hseries *s) {
    atomic_fetch_add_explicit(&s->rc, 1, memory_order_relaxed);
}
static void series_put(hseries *s) {
    if (s && atomic_fetch_sub_explicit(&s->rc, 1, memory_order_acq_rel) == 1) series_free(s);
}

/* ---- open-addressing series tables -------------------------------------- */

/* A slot keeps its series' key (ref for byref, hash for byhash) beside the
 * pointer, so a probe touches only the slot array until the key matches:
 * lookups by ref (every sample on the append and replay paths) cost about
 * one cache miss instead of one per probed series. */
typedef struct sslot {
    uint64_t key;
    hseries *s; /* NULL: empty */
} sslot;

typedef struct smap {
    sslot *slot;
    uint32_t cap, n; /* cap: power of two or 0 */
} smap;

static inline uint64_t mix64(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return x;
}

static inline uint64_t skey(const hseries *s, int byref) {
    return byref ? s->ref : s->hash;
}
/* Home slot of a key. */
static inline uint32_t shome(uint64_t key, int byref, uint32_t mask) {
    return (uint32_t)(byref ? mix64(key) : key) & mask;
}

static int smap_put(smap *m, hseries *s, int byref) {
    if ((m->n + 1) * 4 > (uint64_t)m->cap * 3) {
        uint32_t ncap = m->cap ? m->cap * 2 : 16;
        sslot *ns = calloc(ncap, sizeof *ns);
        if (!ns) return BASE_E_NOMEM;
        for (uint32_t i = 0; i < m->cap; i++) {
            if (!m->slot[i].s) continue;
            uint32_t j = shome(m->slot[i].key, byref, ncap - 1);
            while (ns[j].s) j = (j + 1) & (ncap - 1);
            ns[j] = m->slot[i];
        }
        free(m->slot);
        m->slot = ns;
        m->cap = ncap;
    }
    uint64_t key = skey(s, byref);
    uint32_t j = shome(key, byref, m->cap - 1);
    while (m->slot[j].s) j = (j + 1) & (m->cap - 1);
    m->slot[j] = (sslot){key, s};
    m->n++;
    return 0;
}

static void smap_del(smap *m, hseries *s, int byref) {
    if (!m->cap) return;
    uint32_t mask = m->cap - 1, i = shome(skey(s, byref), byref, mask);
    while (m->slot[i].s && m->slot[i].s != s) i = (i + 1) & mask;
    if (!m->slot[i].s) return;
    m->slot[i] = (sslot){0, NULL};
    m->n--;
    /* backward-shift deletion keeps probe chains intact */
    for (uint32_t j = (i + 1) & mask; m->slot[j].s; j = (j + 1) & mask) {
        uint32_t home = shome(m->slot[j].key, byref, mask);
        if (((j - home) & mask) >= ((j - i) & mask)) {
            m->slot[i] = m->slot[j];
            m->slot[j] = (sslot){0, NULL};
            i = j;
        }
    }
}

static hseries *smap_get_ref(const smap *m, uint64_t ref) {
    if (!m->cap) return NULL;
    uint32_t mask = m->cap - 1;
    for (uint32_t i = shome(ref, 1, mask); m->slot[i].s; i = (i + 1) & mask)
        if (m->slot[i].key == ref) return m->slot[i].s;
    return NULL;
}

static hseries *smap_get_hash(const smap *m, uint64_t hash, const labels_set *ls) {
    if (!m->cap) return NULL;
    uint32_t mask = m->cap - 1;
    for (uint32_t i = shome(hash, 0, mask); m->slot[i].s; i = (i + 1) & mask)
        if (m->slot[i].key == hash && labels_equal(m->slot[i].s->ls, ls)) return m->slot[i].s;
    return NULL;
}

typedef struct shard {
    pthread_mutex_t mu;
    smap byhash, byref;
} shard;

/* ---- postings index ----------------------------------------------------- */

typedef struct post {
    labels_sym value;
    uint32_t n, cap;
    uint64_t *refs; /* sorted ascending */
} post;

typedef struct umap { /* labels_sym -> pointer, open addressing */
    labels_sym *key;
    void **val;
    uint32_t cap, n;
} umap;

typedef struct nament {
    labels_sym name;
    umap values; /* -> post */
} nament;

static void *umap_get(const umap *m, labels_sym k) {
    if (!m->cap) return NULL;
    uint32_t mask = m->cap - 1;
    for (uint32_t i = (uint32_t)mix64(k) & mask; m->val[i]; i = (i + 1) & mask)
        if (m->key[i] == k) return m->val[i];
    return NULL;
}

static int umap_put(umap *m, labels_sym k, void *v) {
    if ((m->n + 1) * 4 > (uint64_t)m->cap * 3) {
        uint32_t ncap = m->cap ? m->cap * 2 : 8;
        labels_sym *nk = calloc(ncap, sizeof *nk);
        void **nv = calloc(ncap, sizeof *nv);
        if (!nk || !nv) {
            free(nk);
            free(nv);
            return BASE_E_NOMEM;
        }
        for (uint32_t i = 0; i < m->cap; i++) {
            if (!m->val[i]) continue;
            uint32_t j = (uint32_t)mix64(m->key[i]) & (ncap - 1);
            while (nv[j]) j = (j + 1) & (ncap - 1);
            nk[j] = m->key[i];
            nv[j] = m->val[i];
        }
        free(m->key);
        free(m->val);
        m->key = nk;
        m->val = nv;
        m->cap = ncap;
    }
    uint32_t j = (uint32_t)mix64(k) & (m->cap - 1);
    while (m->val[j]) j = (j + 1) & (m->cap - 1);
    m->key[j] = k;
    m->val[j] = v;
    m->n++;
    return 0;
}

static void umap_free(umap *m) {
    free(m->key);
    free(m->val);
    memset(m, 0, sizeof *m);
}

static int post_add(post *p, uint64_t ref) {
    if (p->n == p->cap) {
        uint32_t nc = p->cap ? p->cap * 2 : 2;
        uint64_t *r = realloc(p->refs, nc * sizeof *r);
        if (!r) return BASE_E_NOMEM;
        p->refs = r;
        p->cap = nc;
    }
    uint32_t i = p->n;
    while (i > 0 && p->refs[i - 1] > ref) i--; /* nearly always appends */
    memmove(p->refs + i + 1, p->refs + i, (p->n - i) * sizeof *p->refs);
    p->refs[i] = ref;
    p->n++;
    return 0;
}

/* ---- the head ----------------------------------------------------------- */

struct tsdb_head {
    tsdb_head_opts o;
    tsdb_wal *wal;
    pthread_mutex_t commit_mu;
    pthread_rwlock_t idx_lock;
    umap names; /* -> nament */
    post all;
    shard shards[NSHARDS];
    pthread_mutex_t stripes[NSTRIPES];
    uint64_t next_ref;
    _Atomic uint64_t nseries;
    int64_t min_valid;
    base_buf cut, frames, rec; /* scratch, under commit_mu */
    tsdb_append_result totals;
    uint64_t created, removed, replay_rejected;
    int replaying;
};

static shard *hshard(tsdb_head *h, uint64_t hash) {
    return &h->shards[hash >> 56];
}
static shard *rshard(tsdb_head *h, uint64_t ref) {
    return &h->shards[mix64(ref) >> 56];
}
static pthread_mutex_t *stripe(tsdb_head *h, const hseries *s) {
    return &h->stripes[s->ref & (NSTRIPES - 1)];
}

static uint64_t series_hash(const labels_set *ls) {
    return labels_hash(ls) & tsdb__head_hash_mask;
}

/* Looks a series up by labels and takes a reference. */
static hseries *lookup_hash(tsdb_head *h, uint64_t hash, const labels_set *ls) {
    shard *sh = hshard(h, hash);
    pthread_mutex_lock(&sh->mu);
    hseries *s = smap_get_hash(&sh->byhash, hash, ls);
    if (s) series_get(s);
    pthread_mutex_unlock(&sh->mu);
    return s;
}

static hseries *lookup_ref(tsdb_head *h, uint64_t ref) {
    shard *sh = rshard(h, ref);
    pthread_mutex_lock(&sh->mu);
    hseries *s = smap_get_ref(&sh->byref, ref);
    if (s) series_get(s);
    pthread_mutex_unlock(&sh->mu);
    return s;
}

static int index_add(tsdb_head *h, hseries *s) {
    labels_itab *it = labels_global();
    labels_iter li;
    labels_sym n, v;
    int e = 0;
    pthread_rwlock_wrlock(&h->idx_lock);
    labels_iter_init(&li, s->ls);
    while (!e && labels_iter_next_sym(&li, &n, &v)) {
        nament *ne = umap_get(&h->names, n);
        if (!ne) {
            if (!(ne = calloc(1, sizeof *ne)) || umap_put(&h->names, n, ne)) {
                free(ne);
                e = BASE_E_NOMEM;
                break;
            }
            ne->name = n;
            labels_itab_ref(it, n);
        }
        post *p = umap_get(&ne->values, v);
        if (!p) {
            if (!(p = calloc(1, sizeof *p)) || umap_put(&ne->values, v, p)) {
                free(p);
                e = BASE_E_NOMEM;
                break;
            }
            p->value = v;
            labels_itab_ref(it, v);
        }
        e = post_add(p, s->ref);
    }
    if (!e) e = post_add(&h->all, s->ref);
    pthread_rwlock_unlock(&h->idx_lock);
    return e;
}

/* Creates series ls with ref (0: the next one). commit_mu held. Returns a
 * referenced series or NULL (out of memory). */
static hseries *series_create(tsdb_head *h, const labels_set *ls, uint64_t hash, uint64_t ref) {
    hseries *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->ref = ref ? ref : h->next_ref;
    s->hash = hash;
    s->ls = labels_ref(ls);
    s->last_t = INT64_MIN;
    atomic_init(&s->rc, 2); /* tables + caller */
    tsdb_chunk_app_init(&s->app, h->o.chunk_samples, 0);
    shard *a = hshard(h, hash), *b = rshard(h, s->ref);
    pthread_mutex_lock(&a->mu);
    int e = smap_put(&a->byhash, s, 0);
    pthread_mutex_unlock(&a->mu);
    if (!e) {
        pthread_mutex_lock(&b->mu);
        e = smap_put(&b->byref, s, 1);
        pthread_mutex_unlock(&b->mu);
        if (e) {
            pthread_mutex_lock(&a->mu);
            smap_del(&a->byhash, s, 0);
            pthread_mutex_unlock(&a->mu);
        }
    }
    if (e) {
        series_free(s);
        return NULL;
    }
    /* On an index failure the series stays reachable by hash/ref but is
     * missing from some postings: only selects miss it. Rare (NOMEM). */
    (void)index_add(h, s);
    if (s->ref >= h->next_ref) h->next_ref = s->ref + 1;
    atomic_fetch_add_explicit(&h->nseries, 1, memory_order_relaxed);
    h->created++;
    return s;
}

enum { AP_OK, AP_NOOP, AP_OOO, AP_DUP, AP_OLD, AP_NOMEM };

/* Appends one sample (commit_mu held, or a replay worker that owns s;
 * takes the stripe lock). cut: scratch for cutting a chunk, one per
 * thread. */
static int series_append_cut(tsdb_head *h, hseries *s, int64_t t, double v, base_buf *cut) {
    uint64_t bits;
    memcpy(&bits, &v, 8);
    if (t < h->min_valid) return AP_OLD;
    pthread_mutex_t *mu = stripe(h, s);
    pthread_mutex_lock(mu);
    int r = AP_OK;
    if (s->last_t != INT64_MIN && t <= s->last_t) {
        r = t < s->last_t ? AP_OOO : bits == s->last_v ? AP_NOOP : AP_DUP;
        goto out;
    }
    uint32_t max = h->o.chunk_samples ? h->o.chunk_samples : TSDB_CHUNK_DEFAULT_SAMPLES;
    if (tsdb_chunk_app_count(&s->app) >= max) {
        if (s->nch == s->capch) {
            uint32_t nc = s->capch ? s->capch * 2 : 2;
            hchunk *c = realloc(s->ch, nc * sizeof *c);
            if (!c) {
                r = AP_NOMEM;
                goto out;
            }
            s->ch = c;
            s->capch = nc;
        }
        base_buf_reset(cut);
        uint32_t n = tsdb_chunk_app_count(&s->app);
        int64_t maxt = tsdb_chunk_app_maxt(&s->app);
        uint8_t *data = NULL;
        if (tsdb_chunk_app_finish(&s->app, cut) || !(data = malloc(cut->len))) {
            r = AP_NOMEM; /* finish leaves the appender unchanged on error */
            goto out;
        }
        memcpy(data, cut->data, cut->len);
        s->ch[s->nch++] = (hchunk){s->open_mint, maxt, data, (uint32_t)cut->len, n};
    }
    if (tsdb_chunk_app_append(&s->app, t, v)) {
        r = AP_NOMEM;
        goto out;
    }
    if (tsdb_chunk_app_count(&s->app) == 1) s->open_mint = t;
    s->last_t = t;
    s->last_v = bits;
out:
    pthread_mutex_unlock(mu);
    return r;
}

static int series_append(tsdb_head *h, hseries *s, int64_t t, double v) {
    return series_append_cut(h, s, t, v, &h->cut);
}

static void count(tsdb_append_result *r, int ap) {
    switch (ap) {
    case AP_OK: r->appended++; break;
    case AP_NOOP: r->noop++; break;
    case AP_OOO: r->out_of_order++; break;
    case AP_DUP: r->duplicate++; break;
    case AP_OLD: r->too_old++; break;
    default: break;
    }
}

static void res_add(tsdb_append_result *a, const tsdb_append_result *b) {
    a->appended += b->appended;
    a->noop += b->noop;
    a->out_of_order += b->out_of_order;
    a->duplicate += b->duplicate;
    a->too_old += b->too_old;
    a->unknown_ref += b->unknown_ref;
    a->series_created += b->series_created;
}

/* ---- appenders ---------------------------------------------------------- */

typedef struct aent {
    hseries *s;     /* referenced, or NULL until commit */
    labels_set *ls; /* referenced when added by labels */
    uint64_t hash, ref;
    int64_t t;
    double v;
} aent;

struct tsdb_head_app {
    tsdb_head *h;
    aent *e;
    size_t n, cap;
    tsdb_rec_sample *acc;
    size_t acccap;
    tsdb_rec_series *news;
    size_t nnews, newscap;
    const labels_set *last_ls; /* cache: consecutive adds of one set */
    hseries *last_s;
    uint64_t last_hash;
};

int tsdb_head_app_new(tsdb_head *h, tsdb_head_app **ret) {
    tsdb_head_app *a = calloc(1, sizeof *a);
    if (!a) return BASE_E_NOMEM;
    a->h = h;
    *ret = a;
    return 0;
}

void tsdb_head_app_rollback(tsdb_head_app *a) {
    for (size_t i = 0; i < a->n; i++) {
        series_put(a->e[i].s);
        labels_unref(a->e[i].ls);
    }
    a->n = 0;
    a->last_ls = NULL;
    a->last_s = NULL;
}

void tsdb_head_app_free(tsdb_head_app *a) {
    if (!a) return;
    tsdb_head_app_rollback(a);
    free(a->e);
    free(a->acc);
    free(a->news);
    free(a);
}

static aent *app_slot(tsdb_head_app *a) {
    if (a->n == a->cap) {
        size_t nc = a->cap ? a->cap * 2 : 64;
        aent *e = realloc(a->e, nc * sizeof *e);
        if (!e) return NULL;
        a->e = e;
        a->cap = nc;
    }
    aent *e = &a->e[a->n];
    memset(e, 0, sizeof *e);
    return e;
}

int tsdb_head_app_add(tsdb_head_app *a, const labels_set *ls, int64_t t, double v) {
    aent *e = app_slot(a);
    if (!e) return BASE_E_NOMEM;
    if (ls == a->last_ls && a->last_s) { /* consecutive samples of one set */
        e->hash = a->last_hash;
        e->s = a->last_s;
        series_get(e->s);
    } else {
        e->hash = series_hash(ls);
        e->s = lookup_hash(a->h, e->hash, ls);
        a->last_ls = e->s ? ls : NULL;
        a->last_hash = e->hash;
        a->last_s = e->s;
    }
    if (!e->s) e->ls = labels_ref(ls);
    e->t = t;
    e->v = v;
    a->n++;
    return 0;
}

int tsdb_head_app_add_ref(tsdb_head_app *a, uint64_t ref, int64_t t, double v) {
    aent *e = app_slot(a);
    if (!e) return BASE_E_NOMEM;
    e->ref = ref;
    e->s = lookup_ref(a->h, ref);
    e->t = t;
    e->v = v;
    a->n++;
    return 0;
}

static int grow(void **p, size_t *cap, size_t need, size_t size) {
    if (need <= *cap) return 0;
    size_t nc = *cap ? *cap : 64;
    while (nc < need) nc *= 2;
    void *q = realloc(*p, nc * size);
    if (!q) return BASE_E_NOMEM;
    *p = q;
    *cap = nc;
    return 0;
}

int tsdb_head_app_commit(tsdb_head_app *a, tsdb_append_result *res) {
    tsdb_head *h = a->h;
    tsdb_append_result r;
    memset(&r, 0, sizeof r);
    int err = grow((void **)&a->acc, &a->acccap, a->n, sizeof *a->acc);
    if (err) {
        tsdb_head_app_rollback(a);
        return err;
    }
    size_t nacc = 0;
    a->nnews = 0;
    uint64_t ticket = 0;
    int queued = 0;
    pthread_mutex_lock(&h->commit_mu);
    for (size_t i = 0; i < a->n && !err; i++) {
        aent *e = &a->e[i];
        if (e->s && e->s->dead) {
            series_put(e->s);
            e->s = NULL;
        }
        if (!e->s && e->ls) {
            e->s = lookup_hash(h, e->hash, e->ls);
            if (!e->s) {
                if ((err = grow((void **)&a->news, &a->newscap, a->nnews + 1, sizeof *a->news))) break;
                if (!(e->s = series_create(h, e->ls, e->hash, 0))) {
                    err = BASE_E_NOMEM;
                    break;
                }
                a->news[a->nnews++] = (tsdb_rec_series){e->s->ref, e->s->ls};
                r.series_created++;
            }
        } else if (!e->s) {
            e->s = lookup_ref(h, e->ref);
            if (!e->s) {
                r.unknown_ref++;
                continue;
            }
        }
        int ap = series_append(h, e->s, e->t, e->v);
        if (ap == AP_NOMEM) {
            err = BASE_E_NOMEM;
            break;
        }
        count(&r, ap);
        if (ap == AP_OK) a->acc[nacc++] = (tsdb_rec_sample){e->s->ref, e->t, e->v};
    }
    res_add(&h->totals, &r);
    /* Log what was applied, even after an error part way through: the head
     * holds it, and the WAL must match the head. */
    if (h->wal && (a->nnews || nacc)) {
        base_buf *f = &h->frames;
        base_buf_reset(f);
        size_t st;
        int e2 = 0;
        if (a->nnews) {
            st = tsdb_wal_frame_begin(f);
            tsdb_rec_enc_series(f, a->news, a->nnews);
            e2 = tsdb_wal_frame_end(f, st);
        }
        if (!e2 && nacc) {
            st = tsdb_wal_frame_begin(f);
            tsdb_rec_enc_samples(f, a->acc, nacc);
            e2 = tsdb_wal_frame_end(f, st);
        }
        if (!e2) e2 = tsdb_wal_enqueue(h->wal, f->data, f->len, &ticket);
        if (!e2) queued = 1;
        if (!err) err = e2;
    }
    pthread_mutex_unlock(&h->commit_mu);
    if (queued) {
        int e2 = tsdb_wal_wait(h->wal, ticket);
        if (!err) err = e2;
    }
    tsdb_head_app_rollback(a);
    if (!err && res) *res = r;
    return err;
}

int tsdb_head_ref(tsdb_head *h, const labels_set *ls, uint64_t *ret_ref) {
    hseries *s = lookup_hash(h, series_hash(ls), ls);
    if (!s) return BASE_E_NOTFOUND;
    *ret_ref = s->ref;
    series_put(s);
    return 0;
}

/* ---- replay ------------------------------------------------------------- */

/* Replay runs on the thread that opens the WAL (the reader: the WAL reads
 * and CRC-checks frames in order and calls replay_rec) and, when more than
 * one core is online, on nw - 1 helper threads. Series records are applied
 * by the reader. Sample records are copied into a batch; when it is full,
 * or before a series record is applied, the batch is handed to all nw
 * workers (the reader is worker 0): each decodes every record of the batch
 * in order and applies only the samples of the series it owns (series ref
 * % nw), then they meet at a barrier. So each series' samples are applied
 * by one thread in WAL order, series exist before later samples refer to
 * them and not before earlier ones, and the tables and the alias map are
 * read-only while workers run: the result equals a sequential replay. */

int tsdb__head_replay_threads;

#define REPLAY_MAX_WORKERS 4
#define REPLAY_BATCH_BYTES ((size_t)4 << 20)

struct replay;

typedef struct rworker {
    struct replay *rp;
    pthread_t th;
    unsigned id;
    base_buf cut;      /* chunk cut scratch (worker 0 uses h->cut) */
    uint64_t rejected; /* samples not applied, summed after each batch */
    int err;
} rworker;

typedef struct replay {
    tsdb_head *h;
    labels_builder b;
    smap alias; /* ref -> series, for refs whose labels already had a series */
    hseries **aliases;
    size_t nalias, capalias;
    uint64_t maxref;
    /* parallel replay (nw > 1) */
    unsigned nw;
    rworker w[REPLAY_MAX_WORKERS];
    base_buf batch; /* sample records, each as u32 length + payload */
    pthread_mutex_t mu;
    pthread_cond_t start, done;
    uint64_t gen; /* batches started (under mu) */
    unsigned ndone;
    int quit;
    int sync; /* mu, start, done initialized */
} replay;

/* The series a sample's ref names: by ref, else through an alias. */
static hseries *replay_resolve(const replay *rp, uint64_t ref) {
    hseries *s = smap_get_ref(&rp->h->shards[mix64(ref) >> 56].byref, ref);
    if (!s && rp->nalias) {
        hseries *al = smap_get_ref(&rp->alias, ref);
        if (al) s = (hseries *)al->ls;
    }
    return s;
}

/* Applies the samples of one record that worker id of nw owns. Replay is
 * bound by cache misses on the ref table and the series: samples are
 * decoded a window at a time, their slots prefetched, then their series,
 * then applied in order. */
#define REPLAY_WINDOW 32
static int replay_samples(replay *rp, tsdb_rec_dec *d, unsigned id, unsigned nw, base_buf *cut,
                          uint64_t *rejected) {
    tsdb_head *h = rp->h;
    tsdb_rec_sample win[REPLAY_WINDOW];
    hseries *ser[REPLAY_WINDOW];
    int more = 1;
    while (more) {
        size_t n = 0;
        while (n < REPLAY_WINDOW) {
            if (tsdb_rec_dec_sample(d, &win[n]) != 1) {
                more = 0;
                break;
            }
            /* Without aliases a series' ref is the sample's ref (or it has
             * no series): filter before the lookup. */
            if (nw > 1 && !rp->nalias && win[n].ref % nw != id) continue;
            uint64_t x = mix64(win[n].ref);
            const smap *m = &h->shards[x >> 56].byref;
            if (m->cap) __builtin_prefetch(&m->slot[x & (m->cap - 1)]);
            n++;
        }
        for (size_t k = 0; k < n; k++) {
            ser[k] = replay_resolve(rp, win[k].ref);
            if (ser[k]) {
                __builtin_prefetch(ser[k]);
                __builtin_prefetch(&ser[k]->app);
            }
        }
        for (size_t k = 0; k < n; k++) {
            hseries *s = ser[k];
            if (nw > 1 && (s ? s->ref : win[k].ref) % nw != id) continue;
            if (!s) {
                (*rejected)++;
                continue;
            }
            int ap = series_append_cut(h, s, win[k].t, win[k].v, cut);
            if (ap == AP_NOMEM) return BASE_E_NOMEM;
            if (ap != AP_OK) (*rejected)++;
        }
    }
    return 0;
}

static void replay_series(replay *rp, tsdb_rec_dec *d) {
    tsdb_head *h = rp->h;
    uint64_t ref;
    while (tsdb_rec_dec_series(d, &ref, &rp->b) == 1) {
        if (ref == 0) continue;
        if (ref > rp->maxref) rp->maxref = ref;
        labels_set *ls;
        if (labels_builder_finish(&rp->b, 0, &ls, NULL, 0)) continue;
        uint64_t hash = series_hash(ls);
        hseries *s = lookup_hash(h, hash, ls);
        if (s && s->ref != ref) { /* same labels under another ref */
            hseries *old = lookup_ref(h, ref);
            if (!old && !smap_get_ref(&rp->alias, ref) &&
                !grow((void **)&rp->aliases, &rp->capalias, rp->nalias + 1, sizeof *rp->aliases)) {
                hseries *al = calloc(1, sizeof *al);
                if (al) {
                    al->ref = ref;
                    al->ls = (labels_set *)s; /* alias target, not a set */
                    if (smap_put(&rp->alias, al, 1))
                        free(al);
                    else
                        rp->aliases[rp->nalias++] = al;
                }
            }
            series_put(old);
        } else if (!s) {
            hseries *old = lookup_ref(h, ref);
            if (!old) s = series_create(h, ls, hash, ref);
            series_put(old);
        }
        series_put(s);
        labels_unref(ls);
    }
}

/* One worker's share of the current batch. */
static void replay_work(rworker *w) {
    replay *rp = w->rp;
    const uint8_t *p = (const uint8_t *)rp->batch.data, *end = p + rp->batch.len;
    base_buf *cut = w->id ? &w->cut : &rp->h->cut;
    while (p < end && !w->err) {
        uint32_t n;
        memcpy(&n, p, 4);
        tsdb_rec_dec d;
        if (!tsdb_rec_dec_init(&d, p + 4, n))
            w->err = replay_samples(rp, &d, w->id, rp->nw, cut, &w->rejected);
        p += 4 + (size_t)n;
    }
}

static void *replay_thread(void *arg) {
    rworker *w = arg;
    replay *rp = w->rp;
    uint64_t seen = 0;
    pthread_mutex_lock(&rp->mu);
    for (;;) {
        while (!rp->quit && rp->gen == seen) pthread_cond_wait(&rp->start, &rp->mu);
        if (rp->quit) break;
        seen = rp->gen;
        pthread_mutex_unlock(&rp->mu);
        replay_work(w);
        pthread_mutex_lock(&rp->mu);
        if (++rp->ndone == rp->nw - 1) pthread_cond_signal(&rp->done);
    }
    pthread_mutex_unlock(&rp->mu);
    return NULL;
}

/* Applies the batched sample records on all workers and waits for them. */
static int replay_flush(replay *rp) {
    if (rp->batch.err) return BASE_E_NOMEM;
    if (!rp->batch.len) return 0;
    pthread_mutex_lock(&rp->mu);
    rp->gen++;
    rp->ndone = 0;
    pthread_cond_broadcast(&rp->start);
    pthread_mutex_unlock(&rp->mu);
    replay_work(&rp->w[0]);
    pthread_mutex_lock(&rp->mu);
    while (rp->ndone < rp->nw - 1) pthread_cond_wait(&rp->done, &rp->mu);
    pthread_mutex_unlock(&rp->mu);
    base_buf_reset(&rp->batch);
    int e = 0;
    for (unsigned i = 0; i < rp->nw; i++) {
        rp->h->replay_rejected += rp->w[i].rejected;
        rp->w[i].rejected = 0;
        if (!e) e = rp->w[i].err;
    }
    return e;
}

static int replay_rec(void *ctx, const uint8_t *rec, size_t len, int from_ckpt) {
    (void)from_ckpt;
    replay *rp = ctx;
    tsdb_rec_dec d;
    if (tsdb_rec_dec_init(&d, rec, len)) return 0; /* CRC-valid but unknown: skip */
    if (d.type == TSDB_REC_SERIES) {
        if (rp->nw > 1) {
            int e = replay_flush(rp); /* earlier samples see only earlier series */
            if (e) return e;
        }
        replay_series(rp, &d);
    } else if (d.type == TSDB_REC_SAMPLES) {
        if (rp->nw <= 1) return replay_samples(rp, &d, 0, 1, &rp->h->cut, &rp->h->replay_rejected);
        uint8_t n[4];
        uint32_t l = (uint32_t)len; /* <= TSDB_WAL_RECORD_MAX */
        memcpy(n, &l, 4);
        base_buf_append(&rp->batch, n, 4);
        base_buf_append(&rp->batch, rec, len);
        if (rp->batch.len >= REPLAY_BATCH_BYTES) return replay_flush(rp);
        if (rp->batch.err) return BASE_E_NOMEM;
    }
    return 0;
}

/* Starts the helper threads (as many as can be started). */
static void replay_start(replay *rp) {
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    unsigned nw = tsdb__head_replay_threads > 0 ? (unsigned)tsdb__head_replay_threads
                  : cores > 0                   ? (unsigned)cores
                                                : 1;
    if (nw > REPLAY_MAX_WORKERS) nw = REPLAY_MAX_WORKERS;
    for (unsigned i = 0; i < REPLAY_MAX_WORKERS; i++) {
        rp->w[i].rp = rp;
        rp->w[i].id = i;
    }
    rp->nw = 1;
    if (nw < 2) return;
    pthread_mutex_init(&rp->mu, NULL);
    pthread_cond_init(&rp->start, NULL);
    pthread_cond_init(&rp->done, NULL);
    rp->sync = 1;
    while (rp->nw < nw && !pthread_create(&rp->w[rp->nw].th, NULL, replay_thread, &rp->w[rp->nw])) rp->nw++;
}

/* Applies what is batched (when e is 0), stops the helpers and frees the
 * replay state. Returns e or the flush's error. */
static int replay_finish(replay *rp, int e) {
    if (rp->nw > 1 && !e) e = replay_flush(rp);
    if (rp->sync) {
        pthread_mutex_lock(&rp->mu);
        rp->quit = 1;
        pthread_cond_broadcast(&rp->start);
        pthread_mutex_unlock(&rp->mu);
        for (unsigned i = 1; i < rp->nw; i++) pthread_join(rp->w[i].th, NULL);
        pthread_mutex_destroy(&rp->mu);
        pthread_cond_destroy(&rp->start);
        pthread_cond_destroy(&rp->done);
    }
    for (unsigned i = 0; i < REPLAY_MAX_WORKERS; i++) base_buf_free(&rp->w[i].cut);
    base_buf_free(&rp->batch);
    labels_builder_free(&rp->b);
    for (size_t i = 0; i < rp->nalias; i++) free(rp->aliases[i]);
    free(rp->aliases);
    free(rp->alias.slot);
    return e;
}

/* ---- open / close ------------------------------------------------------- */

static void index_free(tsdb_head *h) {
    labels_itab *it = labels_global();
    for (uint32_t i = 0; i < h->names.cap; i++) {
        nament *ne = h->names.val[i];
        if (!ne) continue;
        for (uint32_t j = 0; j < ne->values.cap; j++) {
            post *p = ne->values.val[j];
            if (!p) continue;
            labels_itab_unref(it, p->value);
            free(p->refs);
            free(p);
        }
        umap_free(&ne->values);
        labels_itab_unref(it, ne->name);
        free(ne);
    }
    umap_free(&h->names);
    free(h->all.refs);
}

static void head_free(tsdb_head *h) {
    for (int i = 0; i < NSHARDS; i++) {
        shard *sh = &h->shards[i];
        for (uint32_t j = 0; j < sh->byref.cap; j++)
            if (sh->byref.slot[j].s) series_put(sh->byref.slot[j].s);
        free(sh->byref.slot);
        free(sh->byhash.slot);
        pthread_mutex_destroy(&sh->mu);
    }
    for (int i = 0; i < NSTRIPES; i++) pthread_mutex_destroy(&h->stripes[i]);
    index_free(h);
    pthread_mutex_destroy(&h->commit_mu);
    pthread_rwlock_destroy(&h->idx_lock);
    base_buf_free(&h->cut);
    base_buf_free(&h->frames);
    base_buf_free(&h->rec);
    free(h);
}

int tsdb_head_open(const tsdb_head_opts *opts, tsdb_head **ret, tsdb_wal_report *rep, char *err,
                   size_t errlen) {
    tsdb_head *h = calloc(1, sizeof *h);
    if (!h) return BASE_E_NOMEM;
    if (opts) h->o = *opts;
    h->o.wal_dir = NULL; /* not kept: the caller owns the string */
    if (h->o.chunk_samples > TSDB_CHUNK_MAX_SAMPLES) h->o.chunk_samples = TSDB_CHUNK_MAX_SAMPLES;
    h->next_ref = 1;
    h->min_valid = INT64_MIN;
    pthread_mutex_init(&h->commit_mu, NULL);
    pthread_rwlock_init(&h->idx_lock, NULL);
    for (int i = 0; i < NSHARDS; i++) pthread_mutex_init(&h->shards[i].mu, NULL);
    for (int i = 0; i < NSTRIPES; i++) pthread_mutex_init(&h->stripes[i], NULL);
    if (opts && opts->wal_dir) {
        replay rp;
        memset(&rp, 0, sizeof rp);
        rp.h = h;
        labels_builder_init(&rp.b);
        replay_start(&rp);
        h->replaying = 1;
        pthread_mutex_lock(&h->commit_mu);
        int e = tsdb_wal_open(opts->wal_dir, &opts->wal, replay_rec, &rp, rep, &h->wal, err, errlen);
        int fe = replay_finish(&rp, e);
        pthread_mutex_unlock(&h->commit_mu);
        h->replaying = 0;
        if (rp.maxref >= h->next_ref) h->next_ref = rp.maxref + 1;
        h->created = 0;
        if (fe && !e) { /* the WAL is open, the last batch failed */
            if (errlen) snprintf(err, errlen, "WAL replay: out of memory");
            (void)tsdb_wal_close(h->wal);
            h->wal = NULL;
            e = fe;
        }
        if (e) {
            head_free(h);
            return e;
        }
    }
    *ret = h;
    return 0;
}

int tsdb_head_close(tsdb_head *h) {
    if (!h) return 0;
    int e = tsdb_wal_close(h->wal);
    head_free(h);
    return e;
}

/* ---- selecting ---------------------------------------------------------- */

typedef struct refvec {
    uint64_t *v;
    size_t n, cap;
} refvec;

static int rv_push(refvec *r, const uint64_t *refs, size_t n) {
    if (n == 0) return 0;
    if (grow((void **)&r->v, &r->cap, r->n + n, sizeof *r->v)) return BASE_E_NOMEM;
    memcpy(r->v + r->n, refs, n * sizeof *refs);
    r->n += n;
    return 0;
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static void rv_sort_uniq(refvec *r) {
    if (r->n < 2) return;
    qsort(r->v, r->n, sizeof *r->v, cmp_u64);
    size_t k = 1;
    for (size_t i = 1; i < r->n; i++)
        if (r->v[i] != r->v[k - 1]) r->v[k++] = r->v[i];
    r->n = k;
}

/* Refs whose value for m's name satisfies m. idx_lock held (read). */
static int postings_for(tsdb_head *h, const labels_matcher *m, refvec *out) {
    labels_itab *it = labels_global();
    labels_sym ns;
    nament *ne = NULL;
    if (!labels_itab_find(it, labels_matcher_name(m), &ns)) {
        ne = umap_get(&h->names, ns);
        labels_itab_unref(it, ns); /* the index holds its own reference */
    }
    int inv = labels_matcher_matches_empty(m);
    refvec acc = {0};
    int e = 0;
    const base_str *lits;
    size_t nlits;
    if (ne) {
        if (!inv && labels_matcher_type(m) == LABELS_MATCH_EQ) {
            labels_sym vs;
            if (!labels_itab_find(it, labels_matcher_value(m), &vs)) {
                post *p = umap_get(&ne->values, vs);
                labels_itab_unref(it, vs);
                if (p) e = rv_push(&acc, p->refs, p->n);
            }
        } else if (!inv && labels_matcher_type(m) == LABELS_MATCH_RE &&
                   labels_regex_literals(labels_matcher_regex(m), &lits, &nlits)) {
            for (size_t i = 0; i < nlits && !e; i++) {
                labels_sym vs;
                if (labels_itab_find(it, lits[i], &vs)) continue;
                post *p = umap_get(&ne->values, vs);
                labels_itab_unref(it, vs);
                if (p) e = rv_push(&acc, p->refs, p->n);
            }
        } else {
            for (uint32_t i = 0; i < ne->values.cap && !e; i++) {
                post *p = ne->values.val[i];
                if (!p || !p->n) continue;
                int mt = labels_matcher_matches(m, labels_itab_str(it, p->value));
                if (mt != inv) e = rv_push(&acc, p->refs, p->n); /* inv: collect the non-matching */
            }
        }
        rv_sort_uniq(&acc);
    }
    if (!e && inv) { /* all refs minus acc */
        refvec r = {0};
        if (grow((void **)&r.v, &r.cap, h->all.n + 1, sizeof *r.v)) e = BASE_E_NOMEM;
        size_t j = 0;
        for (uint32_t i = 0; !e && i < h->all.n; i++) {
            uint64_t x = h->all.refs[i];
            while (j < acc.n && acc.v[j] < x) j++;
            if (j < acc.n && acc.v[j] == x) continue;
            r.v[r.n++] = x;
        }
        free(acc.v);
        acc = r;
    }
    if (e) {
        free(acc.v);
        return e;
    }
    *out = acc;
    return 0;
}

static void rv_intersect(refvec *a, const refvec *b) {
    size_t i = 0, j = 0, k = 0;
    while (i < a->n && j < b->n) {
        if (a->v[i] < b->v[j])
            i++;
        else if (a->v[i] > b->v[j])
            j++;
        else {
            a->v[k++] = a->v[i];
            i++;
            j++;
        }
    }
    a->n = k;
}

/* Referenced series matching ms with samples in [mint, maxt], unsorted. */
static int select_series(tsdb_head *h, labels_matcher *const *ms, size_t n, int64_t mint, int64_t maxt,
                         hseries ***ret, size_t *ret_n) {
    refvec res = {0};
    int e = 0;
    pthread_rwlock_rdlock(&h->idx_lock);
    if (n == 0) {
        e = rv_push(&res, h->all.refs, h->all.n);
    } else {
        for (size_t i = 0; i < n && !e; i++) {
            refvec r;
            if ((e = postings_for(h, ms[i], &r))) break;
            if (i == 0) {
                res = r;
            } else {
                rv_intersect(&res, &r);
                free(r.v);
            }
            if (res.n == 0) break;
        }
    }
    pthread_rwlock_unlock(&h->idx_lock);
    hseries **out = NULL;
    size_t k = 0;
    if (!e && res.n && !(out = malloc(res.n * sizeof *out))) e = BASE_E_NOMEM;
    for (size_t i = 0; !e && i < res.n; i++) {
        hseries *s = lookup_ref(h, res.v[i]);
        if (!s) continue;
        pthread_mutex_t *mu = stripe(h, s);
        pthread_mutex_lock(mu);
        int64_t first = s->nch ? s->ch[0].mint : s->open_mint;
        int keep = s->last_t != INT64_MIN && s->last_t >= mint && first <= maxt;
        pthread_mutex_unlock(mu);
        if (keep)
            out[k++] = s;
        else
            series_put(s);
    }
    free(res.v);
    if (e) {
        free(out);
        return e;
    }
    *ret = out;
    *ret_n = k;
    return 0;
}

static int cmp_series(const void *a, const void *b) {
    return labels_cmp((*(hseries *const *)a)->ls, (*(hseries *const *)b)->ls);
}

typedef struct ckref {
    size_t off, len;
} ckref;

struct tsdb_series_set {
    tsdb_head *h;
    hseries **s;
    size_t n, i; /* i: 1 + index of the current series, 0 before the first */
    int64_t mint, maxt;
    base_buf buf;
    ckref *ck;
    size_t nck, capck, ci;
    tsdb_chunk_it it;
    int in_chunk;
};

int tsdb_head_select(tsdb_head *h, labels_matcher *const *ms, size_t n, int64_t mint, int64_t maxt,
                     tsdb_series_set **ret) {
    tsdb_series_set *ss = calloc(1, sizeof *ss);
    if (!ss) return BASE_E_NOMEM;
    int e = select_series(h, ms, n, mint, maxt, &ss->s, &ss->n);
    if (e) {
        free(ss);
        return e;
    }
    if (ss->n > 1) qsort(ss->s, ss->n, sizeof *ss->s, cmp_series);
    ss->h = h;
    ss->mint = mint;
    ss->maxt = maxt;
    *ret = ss;
    return 0;
}

size_t tsdb_series_set_count(const tsdb_series_set *ss) {
    return ss->n;
}

int tsdb_series_set_next(tsdb_series_set *ss) {
    if (ss->i >= ss->n) {
        ss->i = ss->n + 1;
        return 0;
    }
    hseries *s = ss->s[ss->i++];
    base_buf_reset(&ss->buf);
    ss->nck = ss->ci = 0;
    ss->in_chunk = 0;
    pthread_mutex_t *mu = stripe(ss->h, s);
    pthread_mutex_lock(mu);
    int e = 0;
    for (uint32_t i = 0; i < s->nch && !e; i++) {
        const hchunk *c = &s->ch[i];
        if (c->maxt < ss->mint || c->mint > ss->maxt) continue;
        if ((e = grow((void **)&ss->ck, &ss->capck, ss->nck + 1, sizeof *ss->ck))) break;
        ss->ck[ss->nck++] = (ckref){ss->buf.len, c->len};
        base_buf_append(&ss->buf, c->data, c->len);
        e = base_buf_err(&ss->buf);
    }
    if (!e && tsdb_chunk_app_count(&s->app) && s->open_mint <= ss->maxt && s->last_t >= ss->mint) {
        size_t off = ss->buf.len;
        if (!(e = grow((void **)&ss->ck, &ss->capck, ss->nck + 1, sizeof *ss->ck)) &&
            !(e = tsdb_chunk_app_snapshot(&s->app, &ss->buf)))
            ss->ck[ss->nck++] = (ckref){off, ss->buf.len - off};
    }
    pthread_mutex_unlock(mu);
    return e ? e : 1;
}

const labels_set *tsdb_series_set_labels(const tsdb_series_set *ss) {
    return ss->i && ss->i <= ss->n ? ss->s[ss->i - 1]->ls : labels_empty();
}

uint64_t tsdb_series_set_ref(const tsdb_series_set *ss) {
    return ss->i && ss->i <= ss->n ? ss->s[ss->i - 1]->ref : 0;
}

int tsdb_series_set_sample(tsdb_series_set *ss, int64_t *ret_t, double *ret_v) {
    if (!ss->i || ss->i > ss->n) return 0;
    for (;;) {
        if (!ss->in_chunk) {
            if (ss->ci >= ss->nck) return 0;
            const ckref *c = &ss->ck[ss->ci++];
            tsdb_chunk_it_init(&ss->it, (const uint8_t *)ss->buf.data + c->off, c->len);
            ss->in_chunk = 1;
            if (!tsdb_chunk_it_seek(&ss->it, ss->mint)) {
                ss->in_chunk = 0;
                if (tsdb_chunk_it_err(&ss->it)) return tsdb_chunk_it_err(&ss->it);
                continue;
            }
        } else if (!tsdb_chunk_it_next(&ss->it)) {
            ss->in_chunk = 0;
            if (tsdb_chunk_it_err(&ss->it)) return tsdb_chunk_it_err(&ss->it);
            continue;
        }
        if (ss->it.t > ss->maxt) {
            ss->in_chunk = 0;
            ss->ci = ss->nck;
            return 0;
        }
        *ret_t = ss->it.t;
        *ret_v = ss->it.v;
        return 1;
    }
}

void tsdb_series_set_free(tsdb_series_set *ss) {
    if (!ss) return;
    for (size_t i = 0; i < ss->n; i++) series_put(ss->s[i]);
    free(ss->s);
    free(ss->ck);
    base_buf_free(&ss->buf);
    free(ss);
}

/* ---- label names and values --------------------------------------------- */

static int cmp_str(const void *a, const void *b) {
    const base_str *x = a, *y = b;
    size_t n = x->n < y->n ? x->n : y->n;
    int c = n ? memcmp(x->p, y->p, n) : 0;
    return c ? c : (x->n > y->n) - (x->n < y->n);
}

/* Sorts, dedupes and copies views into one allocation. */
static int strs_make(base_str *v, size_t n, tsdb_strs **ret) {
    if (n > 1) qsort(v, n, sizeof *v, cmp_str);
    size_t k = 0, bytes = 0;
    for (size_t i = 0; i < n; i++)
        if (k == 0 || !base_str_eq(v[i], v[k - 1])) {
            v[k++] = v[i];
            bytes += v[i].n + 1;
        }
    tsdb_strs *s = malloc(sizeof *s + k * sizeof(base_str) + bytes);
    if (!s) return BASE_E_NOMEM;
    s->n = k;
    s->v = (base_str *)(s + 1);
    char *p = (char *)(s->v + k);
    for (size_t i = 0; i < k; i++) {
        memcpy(p, v[i].p, v[i].n);
        p[v[i].n] = '\0';
        s->v[i] = (base_str){p, v[i].n};
        p += v[i].n + 1;
    }
    *ret = s;
    return 0;
}

void tsdb_strs_free(tsdb_strs *s) {
    free(s);
}

static int labels_list(tsdb_head *h, const base_str *name, labels_matcher *const *ms, size_t n, int64_t mint,
                       int64_t maxt, tsdb_strs **ret) {
    labels_itab *it = labels_global();
    base_str *v = NULL;
    size_t nv = 0, cap = 0;
    int e = 0;
    if (n == 0) {
        pthread_rwlock_rdlock(&h->idx_lock);
        nament *only = NULL;
        if (name) {
            labels_sym ns;
            if (!labels_itab_find(it, *name, &ns)) {
                only = umap_get(&h->names, ns);
                labels_itab_unref(it, ns);
            }
        }
        for (uint32_t i = 0; i < h->names.cap && !e; i++) {
            nament *ne = h->names.val[i];
            if (!ne || (name && ne != only)) continue;
            for (uint32_t j = 0; j < ne->values.cap && !e; j++) {
                post *p = ne->values.val[j];
                if (!p || !p->n) continue;
                if ((e = grow((void **)&v, &cap, nv + 1, sizeof *v))) break;
                v[nv++] = labels_itab_str(it, name ? p->value : ne->name);
                if (!name) break; /* one live value is enough for a name */
            }
        }
        if (!e) e = strs_make(v, nv, ret);
        pthread_rwlock_unlock(&h->idx_lock);
        free(v);
        return e;
    }
    hseries **ss;
    size_t ns;
    if ((e = select_series(h, ms, n, mint, maxt, &ss, &ns))) return e;
    for (size_t i = 0; i < ns && !e; i++) {
        labels_iter li;
        base_str nm, val;
        labels_iter_init(&li, ss[i]->ls);
        while (labels_iter_next(&li, &nm, &val)) {
            if (name && !base_str_eq(nm, *name)) continue;
            if ((e = grow((void **)&v, &cap, nv + 1, sizeof *v))) break;
            v[nv++] = name ? val : nm;
        }
    }
    if (!e) e = strs_make(v, nv, ret);
    for (size_t i = 0; i < ns; i++) series_put(ss[i]);
    free(ss);
    free(v);
    return e;
}

int tsdb_head_label_names(tsdb_head *h, labels_matcher *const *ms, size_t n, int64_t mint, int64_t maxt,
                          tsdb_strs **ret) {
    return labels_list(h, NULL, ms, n, mint, maxt, ret);
}

int tsdb_head_label_values(tsdb_head *h, base_str name, labels_matcher *const *ms, size_t n, int64_t mint,
                           int64_t maxt, tsdb_strs **ret) {
    return labels_list(h, &name, ms, n, mint, maxt, ret);
}

/* ---- GC ----------------------------------------------------------------- */

static int has_ref(const refvec *dead, uint64_t ref) {
    size_t lo = 0, hi = dead->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (dead->v[mid] < ref)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < dead->n && dead->v[lo] == ref;
}

static void post_filter(post *p, const refvec *dead) {
    uint32_t k = 0;
    for (uint32_t i = 0; i < p->n; i++)
        if (!has_ref(dead, p->refs[i])) p->refs[k++] = p->refs[i];
    p->n = k;
}

/* Drops dead refs, then empty postings and names (idx_lock held for
 * writing). The maps are rebuilt from the survivors; if memory runs out
 * for a rebuilt map, the old one is kept with its (empty) entries, which
 * stays correct and is retried at the next GC. */
static void index_prune(tsdb_head *h, const refvec *dead) {
    labels_itab *it = labels_global();
    post_filter(&h->all, dead);
    umap keepn = {0};
    int failn = 0;
    for (uint32_t i = 0; i < h->names.cap; i++) {
        nament *ne = h->names.val[i];
        if (!ne) continue;
        umap keepv = {0};
        int fail = 0;
        for (uint32_t j = 0; j < ne->values.cap; j++) {
            post *p = ne->values.val[j];
            if (!p) continue;
            post_filter(p, dead);
            if (p->n && !fail && umap_put(&keepv, p->value, p)) fail = 1;
        }
        if (!fail) {
            for (uint32_t j = 0; j < ne->values.cap; j++) {
                post *p = ne->values.val[j];
                if (!p || p->n) continue;
                labels_itab_unref(it, p->value);
                free(p->refs);
                free(p);
            }
            umap_free(&ne->values);
            ne->values = keepv;
        } else {
            umap_free(&keepv);
        }
        if (ne->values.n == 0 && !failn) {
            continue; /* freed below, once keepn is known to be complete */
        }
        if (!failn && umap_put(&keepn, ne->name, ne)) failn = 1;
    }
    if (failn) { /* keep the old name map */
        umap_free(&keepn);
        return;
    }
    for (uint32_t i = 0; i < h->names.cap; i++) {
        nament *ne = h->names.val[i];
        if (!ne || ne->values.n) continue;
        labels_itab_unref(it, ne->name);
        umap_free(&ne->values);
        free(ne);
    }
    umap_free(&h->names);
    h->names = keepn;
}

int tsdb_head_gc(tsdb_head *h, int64_t mint, uint64_t *ret_removed) {
    refvec dead = {0};
    hseries **victims = NULL;
    size_t nv = 0, capv = 0;
    int e = 0;
    pthread_mutex_lock(&h->commit_mu);
    if (mint > h->min_valid) h->min_valid = mint;
    for (int i = 0; i < NSHARDS && !e; i++) {
        shard *sh = &h->shards[i];
        pthread_mutex_lock(&sh->mu);
        for (uint32_t j = 0; j < sh->byref.cap && !e; j++) {
            hseries *s = sh->byref.slot[j].s;
            if (!s) continue;
            pthread_mutex_t *mu = stripe(h, s);
            pthread_mutex_lock(mu);
            uint32_t k = 0;
            while (k < s->nch && s->ch[k].maxt < mint) free(s->ch[k++].data);
            if (k) {
                memmove(s->ch, s->ch + k, (s->nch - k) * sizeof *s->ch);
                s->nch -= k;
            }
            int gone = s->last_t == INT64_MIN || s->last_t < mint;
            pthread_mutex_unlock(mu);
            if (gone) {
                if ((e = grow((void **)&victims, &capv, nv + 1, sizeof *victims)) ||
                    (e = rv_push(&dead, &s->ref, 1)))
                    break;
                victims[nv++] = s;
            }
        }
        pthread_mutex_unlock(&sh->mu);
    }
    if (!e) {
        for (size_t i = 0; i < nv; i++) {
            hseries *s = victims[i];
            shard *a = hshard(h, s->hash), *b = rshard(h, s->ref);
            pthread_mutex_lock(&a->mu);
            smap_del(&a->byhash, s, 0);
            pthread_mutex_unlock(&a->mu);
            pthread_mutex_lock(&b->mu);
            smap_del(&b->byref, s, 1);
            pthread_mutex_unlock(&b->mu);
            s->dead = 1;
        }
        rv_sort_uniq(&dead);
        pthread_rwlock_wrlock(&h->idx_lock);
        index_prune(h, &dead);
        pthread_rwlock_unlock(&h->idx_lock);
        for (size_t i = 0; i < nv; i++) series_put(victims[i]);
        atomic_fetch_sub_explicit(&h->nseries, nv, memory_order_relaxed);
        h->removed += nv;
    }
    pthread_mutex_unlock(&h->commit_mu);
    free(victims);
    free(dead.v);
    if (!e && ret_removed) *ret_removed = nv;
    return e;
}

/* ---- checkpoint --------------------------------------------------------- */

static int cmp_ref(const void *a, const void *b) {
    uint64_t x = (*(hseries *const *)a)->ref, y = (*(hseries *const *)b)->ref;
    return x < y ? -1 : x > y;
}

/* Every live series, referenced, sorted by ref. */
static int all_series(tsdb_head *h, hseries ***ret, size_t *ret_n) {
    hseries **v = NULL;
    size_t n = 0, cap = 0;
    int e = 0;
    for (int i = 0; i < NSHARDS && !e; i++) {
        shard *sh = &h->shards[i];
        pthread_mutex_lock(&sh->mu);
        for (uint32_t j = 0; j < sh->byref.cap; j++) {
            hseries *s = sh->byref.slot[j].s;
            if (!s) continue;
            if ((e = grow((void **)&v, &cap, n + 1, sizeof *v))) break;
            series_get(s);
            v[n++] = s;
        }
        pthread_mutex_unlock(&sh->mu);
    }
    if (e) {
        for (size_t i = 0; i < n; i++) series_put(v[i]);
        free(v);
        return e;
    }
    if (n > 1) qsort(v, n, sizeof *v, cmp_ref);
    *ret = v;
    *ret_n = n;
    return 0;
}

#define CKPT_BATCH 4096

int tsdb_head_checkpoint(tsdb_head *h, int64_t cutoff, char *err, size_t errlen) {
    if (!h->wal) return BASE_E_INVAL;
    tsdb_wal_ckpt *c;
    int e = tsdb_wal_ckpt_begin(h->wal, &c, err, errlen);
    if (e) return e;
    hseries **v = NULL;
    size_t n = 0;
    if ((e = all_series(h, &v, &n))) {
        tsdb_wal_ckpt_abort(c);
        return e;
    }
    base_buf rec = BASE_BUF_INIT, chunks = BASE_BUF_INIT;
    tsdb_rec_series *sr = malloc(CKPT_BATCH * sizeof *sr);
    tsdb_rec_sample *smp = NULL;
    size_t nsmp = 0, capsmp = 0;
    if (!sr) e = BASE_E_NOMEM;
    /* series records first (in batches), then samples per series */
    for (size_t i = 0; i < n && !e; i += CKPT_BATCH) {
        size_t k = n - i < CKPT_BATCH ? n - i : CKPT_BATCH;
        for (size_t j = 0; j < k; j++) sr[j] = (tsdb_rec_series){v[i + j]->ref, v[i + j]->ls};
        base_buf_reset(&rec);
        if (!(e = tsdb_rec_enc_series(&rec, sr, k))) e = tsdb_wal_ckpt_add(c, rec.data, rec.len);
    }
    for (size_t i = 0; i < n && !e; i++) {
        hseries *s = v[i];
        base_buf_reset(&chunks);
        pthread_mutex_t *mu = stripe(h, s);
        pthread_mutex_lock(mu);
        /* collect chunks overlapping [cutoff, inf) plus the open one, as
         * concatenated (len u32, bytes) */
        for (uint32_t j = 0; j < s->nch && !e; j++) {
            if (s->ch[j].maxt < cutoff && j + 1 < s->nch) continue;
            if (s->ch[j].maxt < cutoff && tsdb_chunk_app_count(&s->app)) continue;
            uint32_t l = s->ch[j].len;
            base_buf_append(&chunks, &l, 4);
            base_buf_append(&chunks, s->ch[j].data, l);
        }
        if (tsdb_chunk_app_count(&s->app)) {
            size_t off = chunks.len;
            uint32_t l = 0;
            base_buf_append(&chunks, &l, 4);
            if (!tsdb_chunk_app_snapshot(&s->app, &chunks)) {
                l = (uint32_t)(chunks.len - off - 4);
                memcpy(chunks.data + off, &l, 4);
            }
        }
        int64_t last_t = s->last_t;
        pthread_mutex_unlock(mu);
        if ((e = base_buf_err(&chunks))) break;
        size_t off = 0;
        while (off + 4 <= chunks.len && !e) {
            uint32_t l;
            memcpy(&l, chunks.data + off, 4);
            tsdb_chunk_it it;
            tsdb_chunk_it_init(&it, (const uint8_t *)chunks.data + off + 4, l);
            off += 4 + (size_t)l;
            while (tsdb_chunk_it_next(&it)) {
                if (it.t < cutoff && it.t != last_t) continue;
                if ((e = grow((void **)&smp, &capsmp, nsmp + 1, sizeof *smp))) break;
                smp[nsmp++] = (tsdb_rec_sample){s->ref, it.t, it.v};
            }
        }
        if (!e && (nsmp >= CKPT_BATCH || (i + 1 == n && nsmp))) {
            base_buf_reset(&rec);
            if (!(e = tsdb_rec_enc_samples(&rec, smp, nsmp))) e = tsdb_wal_ckpt_add(c, rec.data, rec.len);
            nsmp = 0;
        }
    }
    for (size_t i = 0; i < n; i++) series_put(v[i]);
    free(v);
    free(sr);
    free(smp);
    base_buf_free(&rec);
    base_buf_free(&chunks);
    if (e) {
        tsdb_wal_ckpt_abort(c);
        return e;
    }
    return tsdb_wal_ckpt_commit(c, err, errlen);
}

/* ---- accounting --------------------------------------------------------- */

uint64_t tsdb_head_series_count(tsdb_head *h) {
    return atomic_load_explicit(&h->nseries, memory_order_relaxed);
}

void tsdb_head_stats_get(tsdb_head *h, tsdb_head_stats *ret) {
    tsdb_head_stats st;
    memset(&st, 0, sizeof st);
    pthread_mutex_lock(&h->commit_mu);
    st.totals = h->totals;
    st.series_created = h->created;
    st.series_removed = h->removed;
    st.replay_rejected = h->replay_rejected;
    int first = 1;
    for (int i = 0; i < NSHARDS; i++) {
        shard *sh = &h->shards[i];
        pthread_mutex_lock(&sh->mu);
        st.bytes_index += msize(sh->byref.slot) + msize(sh->byhash.slot);
        for (uint32_t j = 0; j < sh->byref.cap; j++) {
            hseries *s = sh->byref.slot[j].s;
            if (!s) continue;
            pthread_mutex_t *mu = stripe(h, s);
            pthread_mutex_lock(mu);
            st.series++;
            st.bytes_series += msize(s) + tsdb_chunk_app_mem(&s->app);
            st.bytes_chunks += msize(s->ch);
            st.chunks += s->nch;
            for (uint32_t k = 0; k < s->nch; k++) {
                st.bytes_chunks += msize(s->ch[k].data);
                st.samples += s->ch[k].n;
            }
            st.samples += tsdb_chunk_app_count(&s->app);
            st.bytes_labels += labels_set_bytes(s->ls);
            if (s->last_t != INT64_MIN) {
                int64_t f = s->nch ? s->ch[0].mint : s->open_mint;
                if (first || f < st.mint) st.mint = f;
                if (first || s->last_t > st.maxt) st.maxt = s->last_t;
                first = 0;
            }
            pthread_mutex_unlock(mu);
        }
        pthread_mutex_unlock(&sh->mu);
    }
    pthread_rwlock_rdlock(&h->idx_lock);
    st.bytes_index += msize(h->all.refs) + msize(h->names.key) + msize(h->names.val);
    for (uint32_t i = 0; i < h->names.cap; i++) {
        nament *ne = h->names.val[i];
        if (!ne) continue;
        st.bytes_index += msize(ne) + msize(ne->values.key) + msize(ne->values.val);
        for (uint32_t j = 0; j < ne->values.cap; j++) {
            post *p = ne->values.val[j];
            if (p) st.bytes_index += msize(p) + msize(p->refs);
        }
    }
    pthread_rwlock_unlock(&h->idx_lock);
    pthread_mutex_unlock(&h->commit_mu);
    labels_itab_stats is;
    labels_itab_stats_get(labels_global(), &is);
    st.bytes_labels += is.bytes; /* strings are shared process-wide */
    st.bytes_total = st.bytes_series + st.bytes_chunks + st.bytes_index + st.bytes_labels;
    *ret = st;
}
