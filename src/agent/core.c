/* core.c -- collector threads, fragments and scrape composition; see core.h.
 *
 * Fragment lifecycle (per collector slot):
 *   thread: reset mset -> collect() -> render text + OpenMetrics into a
 *   fragment (the slot's spare, or a new one) -> publish under core->mu
 *   (slot->cur = new, old is unref'd) -> core->gen++.
 *   scrape: under core->mu take refs on every fresh slot->cur, compose,
 *   unref. A fragment whose refs reach 0 becomes the slot's spare.
 *
 * Cache: one composed body per (format, gzip), valid for (gen, mask of
 * included slots). A scrape after the cache is built costs one refcount.
 */
#include "agent/core.h"

#include <libdeflate.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/time.h"

#define MAX_SLOTS      16
#define MAX_GROUPS     8
/* A format nobody has scraped for this long is no longer rendered each
 * cycle (Prometheus asks for OpenMetrics, curl and node_exporter-era
 * scrapers for text: most agents serve one of the two). The first scrape
 * of a format not rendered lately runs the collectors once at once. */
#define FORMAT_IDLE_NS (600LL * 1000000000LL)

typedef struct frag {
    atomic_int refs;
    struct slot *slot;
    base_buf text, om;
    int has[2]; /* which formats were rendered (see wanted_formats) */
    int64_t mono_ns;
} frag;

typedef struct slot {
    agent_collector col;
    struct group *group;
    frag *cur;   /* guarded by core->mu */
    frag *spare; /* guarded by core->mu */
    agent_collector_stats st;
    expo_mset ms; /* used only by the group thread */
} slot;

typedef struct group {
    char name[32];
    int64_t interval_ns;
    int64_t stale_ns;
    slot *slots[MAX_SLOTS];
    size_t nslots;
    pthread_t thread;
    int started;
    int first_done;    /* guarded by core->mu */
    uint64_t req_seq;  /* refresh requests (agent_core_refresh), guarded by core->mu */
    uint64_t done_seq; /* the req_seq that the last finished cycle covered */
    struct agent_core *core;
} group;

typedef struct cached {
    agent_body *body;
    uint64_t gen;
    uint32_t mask;
} cached;

struct agent_core {
    pthread_mutex_t mu;
    pthread_cond_t cv; /* signalled on stop */
    int stopping;
    slot slots[MAX_SLOTS];
    size_t nslots;
    group groups[MAX_GROUPS];
    size_t ngroups;
    uint64_t gen;
    cached cache[2][2];
    atomic_uint_fast64_t scrapes;
    int64_t start_ns;
    _Atomic int64_t last_req[2]; /* monotonic time each format was last scraped */
    int64_t format_idle_ns;      /* FORMAT_IDLE_NS, or a test's value */
    pthread_mutex_t gz_mu;       /* guards gz */
    struct libdeflate_compressor *gz;
};

int agent_core_new(agent_core **ret) {
    agent_core *c = calloc(1, sizeof *c);
    if (!c) return BASE_E_NOMEM;
    pthread_mutex_init(&c->mu, NULL);
    pthread_mutex_init(&c->gz_mu, NULL);
    c->format_idle_ns = FORMAT_IDLE_NS;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&c->cv, &ca);
    pthread_condattr_destroy(&ca);
    *ret = c;
    return 0;
}

int agent_core_add(agent_core *c, const char *gname, int64_t interval_ms, const agent_collector *col) {
    if (c->nslots == MAX_SLOTS) return BASE_E_LIMIT;
    group *g = NULL;
    for (size_t i = 0; i < c->ngroups; i++)
        if (strcmp(c->groups[i].name, gname) == 0) g = &c->groups[i];
    if (!g) {
        if (c->ngroups == MAX_GROUPS) return BASE_E_LIMIT;
        g = &c->groups[c->ngroups++];
        snprintf(g->name, sizeof g->name, "%s", gname);
        g->interval_ns = (interval_ms > 0 ? interval_ms : 1000) * 1000000LL;
        /* Left out of scrapes after 5 missed cycles, and never before 10 s. */
        g->stale_ns = 5 * g->interval_ns;
        if (g->stale_ns < 10000000000LL) g->stale_ns = 10000000000LL;
        g->core = c;
    }
    if (g->nslots == MAX_SLOTS) return BASE_E_LIMIT;
    slot *s = &c->slots[c->nslots++];
    s->col = *col;
    s->st.name = col->name;
    s->group = g;
    expo_mset_init(&s->ms);
    g->slots[g->nslots++] = s;
    return 0;
}

static void frag_unref(agent_core *c, frag *f) {
    if (!f || atomic_fetch_sub(&f->refs, 1) != 1) return;
    pthread_mutex_lock(&c->mu);
    slot *s = f->slot;
    if (!s->spare) {
        s->spare = f;
        f = NULL;
    }
    pthread_mutex_unlock(&c->mu);
    if (f) {
        base_buf_free(&f->text);
        base_buf_free(&f->om);
        free(f);
    }
}

static void run_slot(agent_core *c, slot *s) {
    int64_t t0 = base_mono_ns(), c0 = base_thread_cpu_ns();
    expo_mset_reset(&s->ms);
    int rc = s->col.collect(s->col.ctx, &s->ms);
    if (rc == 0 && s->ms.err) rc = s->ms.err;
    frag *f = NULL;
    if (rc == 0) {
        pthread_mutex_lock(&c->mu);
        f = s->spare;
        s->spare = NULL;
        pthread_mutex_unlock(&c->mu);
        if (!f) {
            f = calloc(1, sizeof *f);
            if (f) {
                base_buf_init(&f->text, 0);
                base_buf_init(&f->om, 0);
                f->slot = s;
            }
        }
        if (!f) rc = BASE_E_NOMEM;
    }
    if (rc == 0) {
        base_buf_reset(&f->text);
        base_buf_reset(&f->om);
        expo_mset *one = &s->ms;
        /* The OpenMetrics fragment has no "# EOF": composition adds it. */
        int64_t now = base_mono_ns();
        for (int k = 0; k < 2; k++) f->has[k] = now - atomic_load(&c->last_req[k]) < c->format_idle_ns;
        if (f->has[EXPO_FMT_TEXT]) expo_write(&one, 1, EXPO_FMT_TEXT, &f->text);
        if (f->has[EXPO_FMT_OPENMETRICS]) expo_write(&one, 1, EXPO_FMT_OPENMETRICS, &f->om);
        if (f->om.len >= 6) f->om.len -= 6;
        rc = f->text.err ? f->text.err : f->om.err;
        f->mono_ns = base_mono_ns();
        atomic_store(&f->refs, 1);
    }
    int64_t t1 = base_mono_ns(), c1 = base_thread_cpu_ns();
    pthread_mutex_lock(&c->mu);
    s->st.cycles++;
    s->st.last_duration_ns = t1 - t0;
    s->st.last_cpu_ns = c1 - c0;
    s->st.cpu_ns_total += c1 - c0;
    frag *old = NULL;
    if (rc == 0) {
        old = s->cur;
        s->cur = f;
        s->st.last_success_unix_ms = base_unix_ms();
        s->st.last_samples = s->ms.nsamples;
        s->st.last_bytes = f->has[EXPO_FMT_TEXT] ? f->text.len : f->om.len;
        c->gen++;
    } else {
        s->st.errors++;
    }
    pthread_mutex_unlock(&c->mu);
    if (rc != 0 && f) {
        atomic_store(&f->refs, 1);
        frag_unref(c, f);
    }
    frag_unref(c, old);
}

static void *group_main(void *arg) {
    group *g = arg;
    agent_core *c = g->core;
    int64_t next = base_mono_ns(); /* the first cycle runs at once */
    for (;;) {
        pthread_mutex_lock(&c->mu);
        while (!c->stopping && base_mono_ns() < next && g->done_seq == g->req_seq) {
            struct timespec ts = {.tv_sec = next / 1000000000, .tv_nsec = next % 1000000000};
            pthread_cond_timedwait(&c->cv, &c->mu, &ts);
        }
        int stop = c->stopping;
        uint64_t seq = g->req_seq;
        pthread_mutex_unlock(&c->mu);
        if (stop) break;
        for (size_t i = 0; i < g->nslots; i++) run_slot(c, g->slots[i]);
        pthread_mutex_lock(&c->mu);
        g->first_done = 1;
        g->done_seq = seq;
        pthread_cond_broadcast(&c->cv);
        pthread_mutex_unlock(&c->mu);
        /* Keep the phase; skip ticks that a slow cycle missed. */
        int64_t now = base_mono_ns();
        next += g->interval_ns;
        if (next <= now) next = now + g->interval_ns - (now - next) % g->interval_ns;
    }
    return NULL;
}

int agent_core_start(agent_core *c, int64_t wait_first_ms) {
    c->start_ns = base_mono_ns();
    /* Text is rendered from the start; OpenMetrics from its first scrape. */
    atomic_store(&c->last_req[EXPO_FMT_TEXT], c->start_ns);
    atomic_store(&c->last_req[EXPO_FMT_OPENMETRICS], c->start_ns - c->format_idle_ns - 1);
    for (size_t i = 0; i < c->ngroups; i++) {
        if (pthread_create(&c->groups[i].thread, NULL, group_main, &c->groups[i]) != 0) {
            agent_core_stop(c);
            return BASE_E_NOMEM;
        }
        c->groups[i].started = 1;
    }
    /* Give every group the chance to publish once, so the first scrape has
     * data; a group stuck in a driver call does not hold the start up. */
    int64_t deadline = base_mono_ns() + wait_first_ms * 1000000;
    pthread_mutex_lock(&c->mu);
    for (;;) {
        size_t done = 0;
        for (size_t i = 0; i < c->ngroups; i++) done += c->groups[i].first_done;
        if (done == c->ngroups || base_mono_ns() >= deadline) break;
        struct timespec ts = {.tv_sec = deadline / 1000000000, .tv_nsec = deadline % 1000000000};
        pthread_cond_timedwait(&c->cv, &c->mu, &ts);
    }
    pthread_mutex_unlock(&c->mu);
    return 0;
}

void agent_core_set_format_idle(agent_core *c, int64_t ms) {
    c->format_idle_ns = ms * 1000000;
}

int agent_core_refresh(agent_core *c, const char *gname, int64_t wait_ms) {
    group *g = NULL;
    for (size_t i = 0; i < c->ngroups; i++)
        if (strcmp(c->groups[i].name, gname) == 0) g = &c->groups[i];
    if (!g) return BASE_E_NOTFOUND;
    int64_t deadline = base_mono_ns() + wait_ms * 1000000;
    pthread_mutex_lock(&c->mu);
    uint64_t mine = ++g->req_seq;
    pthread_cond_broadcast(&c->cv);
    int rc = 0;
    while (g->done_seq < mine && !c->stopping) {
        if (base_mono_ns() >= deadline) {
            rc = BASE_E_TIMEOUT;
            break;
        }
        struct timespec ts = {.tv_sec = deadline / 1000000000, .tv_nsec = deadline % 1000000000};
        pthread_cond_timedwait(&c->cv, &c->mu, &ts);
    }
    pthread_mutex_unlock(&c->mu);
    return rc;
}

void agent_core_stop(agent_core *c) {
    pthread_mutex_lock(&c->mu);
    c->stopping = 1;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
    for (size_t i = 0; i < c->ngroups; i++)
        if (c->groups[i].started) {
            pthread_join(c->groups[i].thread, NULL);
            c->groups[i].started = 0;
        }
}

/* Stale: the last snapshot (or, before the first one, the start) is older
 * than the group's limit. core->mu held. */
static int slot_stale(const agent_core *c, const slot *s, int64_t now) {
    int64_t since = s->cur ? s->cur->mono_ns : c->start_ns;
    return c->start_ns && now - since > s->group->stale_ns;
}

void agent_body_unref(void *p) {
    agent_body *b = p;
    if (b && atomic_fetch_sub(&b->refs, 1) == 1) free(b);
}

static agent_body *body_new(size_t len) {
    agent_body *b = malloc(sizeof *b + len + 1);
    if (!b) return NULL;
    atomic_init(&b->refs, 1);
    b->len = len;
    return b;
}

/* gzip with libdeflate at level 1: about three times zlib's speed at the
 * same level, and the text still compresses about 10x. Compression runs
 * once per generation (the cache), never per scrape. The compressor's
 * tables are allocated once and reused (allocating them per body cost more
 * than compressing). */
static agent_body *gzip_body(agent_core *c, const agent_body *in) {
    pthread_mutex_lock(&c->gz_mu);
    if (!c->gz) c->gz = libdeflate_alloc_compressor(1);
    agent_body *out = NULL;
    if (c->gz) {
        size_t cap = libdeflate_gzip_compress_bound(c->gz, in->len);
        out = body_new(cap);
        if (out) {
            out->len = libdeflate_gzip_compress(c->gz, in->data, in->len, out->data, cap);
            if (out->len == 0) {
                free(out);
                out = NULL;
            }
        }
    }
    pthread_mutex_unlock(&c->gz_mu);
    return out;
}

int agent_core_body(agent_core *c, expo_format fmt, int gzip, agent_body **ret) {
    atomic_fetch_add(&c->scrapes, 1);
    atomic_store(&c->last_req[fmt], base_mono_ns());
    frag *frags[MAX_SLOTS];
    size_t nf = 0;
    uint32_t mask = 0;
    pthread_mutex_lock(&c->mu);
    for (int attempt = 0;; attempt++) {
        int64_t now = base_mono_ns();
        const char *lacking[MAX_GROUPS];
        size_t nl = 0;
        mask = 0;
        for (size_t i = 0; i < c->nslots; i++) {
            slot *s = &c->slots[i];
            s->st.stale = slot_stale(c, s, now);
            if (!s->cur || s->st.stale) continue;
            if (s->cur->has[fmt]) {
                mask |= 1u << i;
            } else if (nl < MAX_GROUPS && (nl == 0 || lacking[nl - 1] != s->group->name)) {
                lacking[nl++] = s->group->name;
            }
        }
        if (!nl || attempt) break;
        /* This format was not rendered lately: have those groups run a
         * cycle now (it renders the format, as it was just requested). */
        pthread_mutex_unlock(&c->mu);
        for (size_t k = 0; k < nl; k++) agent_core_refresh(c, lacking[k], 2000);
        pthread_mutex_lock(&c->mu);
    }
    uint64_t gen = c->gen;
    cached *ce = &c->cache[fmt][gzip ? 1 : 0];
    if (ce->body && ce->gen == gen && ce->mask == mask) {
        atomic_fetch_add(&ce->body->refs, 1);
        *ret = ce->body;
        pthread_mutex_unlock(&c->mu);
        return 0;
    }
    /* A plain body of the same generation can be compressed directly. */
    agent_body *plain = NULL;
    cached *pe = &c->cache[fmt][0];
    if (gzip && pe->body && pe->gen == gen && pe->mask == mask) {
        plain = pe->body;
        atomic_fetch_add(&plain->refs, 1);
    } else {
        for (size_t i = 0; i < c->nslots; i++)
            if (mask & (1u << i)) {
                frags[nf] = c->slots[i].cur;
                atomic_fetch_add(&frags[nf]->refs, 1);
                nf++;
            }
    }
    pthread_mutex_unlock(&c->mu);

    if (!plain) {
        size_t len = fmt == EXPO_FMT_OPENMETRICS ? 6 : 0;
        for (size_t i = 0; i < nf; i++)
            len += fmt == EXPO_FMT_OPENMETRICS ? frags[i]->om.len : frags[i]->text.len;
        plain = body_new(len);
        if (plain) {
            size_t off = 0;
            for (size_t i = 0; i < nf; i++) {
                const base_buf *b = fmt == EXPO_FMT_OPENMETRICS ? &frags[i]->om : &frags[i]->text;
                if (b->len) memcpy(plain->data + off, b->data, b->len);
                off += b->len;
            }
            if (fmt == EXPO_FMT_OPENMETRICS) memcpy(plain->data + off, "# EOF\n", 6);
        }
        for (size_t i = 0; i < nf; i++) frag_unref(c, frags[i]);
        if (!plain) return BASE_E_NOMEM;
    }
    agent_body *out = plain;
    if (gzip) {
        out = gzip_body(c, plain);
        if (!out) {
            agent_body_unref(plain);
            return BASE_E_NOMEM;
        }
    }
    pthread_mutex_lock(&c->mu);
    cached *slots_to_fill[2] = {&c->cache[fmt][0], gzip ? &c->cache[fmt][1] : NULL};
    agent_body *bodies[2] = {plain, gzip ? out : NULL};
    agent_body *drop[2] = {NULL, NULL};
    for (int k = 0; k < 2; k++) {
        cached *e = slots_to_fill[k];
        if (!e || (e->body && e->gen == gen && e->mask == mask)) continue;
        if (e->body && e->gen > gen) continue; /* a newer one is there */
        drop[k] = e->body;
        e->body = bodies[k];
        e->gen = gen;
        e->mask = mask;
        atomic_fetch_add(&bodies[k]->refs, 1);
    }
    pthread_mutex_unlock(&c->mu);
    agent_body_unref(drop[0]);
    agent_body_unref(drop[1]);
    if (gzip) agent_body_unref(plain);
    *ret = out;
    return 0;
}

size_t agent_core_stats(agent_core *c, agent_collector_stats *out, size_t max) {
    pthread_mutex_lock(&c->mu);
    int64_t now = base_mono_ns();
    for (size_t i = 0; i < c->nslots && i < max; i++) {
        slot *s = &c->slots[i];
        s->st.stale = slot_stale(c, s, now);
        out[i] = s->st;
    }
    size_t n = c->nslots;
    pthread_mutex_unlock(&c->mu);
    return n;
}

uint64_t agent_core_scrapes(agent_core *c) {
    return atomic_load(&c->scrapes);
}

void agent_core_free(agent_core *c) {
    if (!c) return;
    agent_core_stop(c);
    for (size_t i = 0; i < c->nslots; i++) {
        slot *s = &c->slots[i];
        frag *fs[2] = {s->cur, s->spare};
        for (int k = 0; k < 2; k++)
            if (fs[k]) {
                base_buf_free(&fs[k]->text);
                base_buf_free(&fs[k]->om);
                free(fs[k]);
            }
        expo_mset_free(&s->ms);
    }
    for (int f = 0; f < 2; f++)
        for (int z = 0; z < 2; z++) agent_body_unref(c->cache[f][z].body);
    if (c->gz) libdeflate_free_compressor(c->gz);
    pthread_mutex_destroy(&c->gz_mu);
    pthread_cond_destroy(&c->cv);
    pthread_mutex_destroy(&c->mu);
    free(c);
}
