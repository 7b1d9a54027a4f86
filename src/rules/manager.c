/* manager.c -- the rule manager (manager.h): loading, the per-group
 * threads, reloads that keep unchanged groups running, stale markers for
 * removed groups.
 *
 * Each running group is an mgroup: its rules_gstate, its own copy of the
 * environment (external labels and URL as of the update that started it),
 * a thread, and a stop flag with a condition variable the thread sleeps
 * on between rounds (timed on the wall clock, since rounds are aligned to
 * wall time). A stopped group that must mark its series stale moves to
 * the manager's retired list; its thread waits two intervals (or the
 * manager's end), writes the markers and exits; retired threads are
 * joined at the next update or at free.
 *
 * Locking: m->mu guards the group arrays (update swaps them, visit reads
 * them); g->mu guards g->stop. The gstate's own mutex guards its state.
 */
#include "rules/manager.h"

#include <errno.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/err.h"
#include "base/log.h"
#include "base/time.h"
#include "tsdb/head.h"

struct rules_loaded {
    rules_gstate **gs;
    char **keys;
    size_t n;
    size_t nrules;
};

typedef struct mgroup {
    rules_manager *m;
    rules_gstate *gs;
    char *key;
    rules_env env;
    labels_set *ext;
    char *url;
    pthread_t th;
    int running; /* th was started */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int stop, mark_stale, should_restore, finished;
    rules_group_stats st; /* guarded by gs->mu */
    /* the current round's output */
    tsdb_head_app *app;
    uint64_t round_samples;
} mgroup;

struct rules_manager {
    rules_manager_opts o;
    pthread_mutex_t mu;
    mgroup **groups; /* sorted by file, then name */
    size_t n;
    mgroup **retired;
    size_t nretired;
    int restored; /* an update has run: later groups don't restore */
    pthread_mutex_t done_mu;
    pthread_cond_t done_cv;
    int done; /* free has begun: retired groups stop waiting */
};

/* ---- loading ------------------------------------------------------------------ */

void rules_loaded_free(rules_loaded *l) {
    if (!l) return;
    for (size_t i = 0; i < l->n; i++) {
        rules_gstate_free(l->gs[i]);
        free(l->keys[i]);
    }
    free(l->gs);
    free(l->keys);
    free(l);
}

size_t rules_loaded_groups(const rules_loaded *l) {
    return l ? l->n : 0;
}
size_t rules_loaded_rules(const rules_loaded *l) {
    return l ? l->nrules : 0;
}

static int add_file(rules_loaded *l, const char *path, int64_t interval_ms, base_buf *errs) {
    rules_file *f = NULL;
    rules_errors e = {0};
    int rc = rules_file_load(path, &f, &e);
    if (rc != 0) {
        for (size_t i = 0; i < e.n; i++) base_buf_printf(errs, "%s\n", e.e[i].msg);
        if (e.n == 0) base_buf_printf(errs, "%s: %s\n", path, base_strerror(rc));
        rules_errors_free(&e);
        return rc;
    }
    rules_errors_free(&e);
    rules_gstate **gs = realloc(l->gs, (l->n + f->ngroups + 1) * sizeof *gs);
    if (gs) l->gs = gs;
    char **keys = realloc(l->keys, (l->n + f->ngroups + 1) * sizeof *keys);
    if (keys) l->keys = keys;
    if (!gs || !keys) rc = BASE_E_NOMEM;
    for (size_t i = 0; rc == 0 && i < f->ngroups; i++) {
        rules_gstate *g = NULL;
        char *key = NULL;
        rc = rules_gstate_new(&f->groups[i], path, interval_ms, &g);
        if (rc == 0 && asprintf(&key, "%s;%s", path, f->groups[i].name) < 0) rc = BASE_E_NOMEM, key = NULL;
        if (rc != 0) {
            rules_gstate_free(g);
            break;
        }
        l->gs[l->n] = g;
        l->keys[l->n++] = key;
        l->nrules += f->groups[i].nrules;
    }
    if (rc != 0) base_buf_printf(errs, "%s: %s\n", path, base_strerror(rc));
    rules_file_free(f);
    return rc;
}

static int cmp_gstate(const rules_gstate *a, const rules_gstate *b) {
    int c = strcmp(a->file, b->file);
    return c ? c : strcmp(a->group->name, b->group->name);
}

int rules_manager_load(const char *const *patterns, size_t n, int64_t default_interval_ms, rules_loaded **ret,
                       base_buf *errs) {
    rules_loaded *l = calloc(1, sizeof *l);
    if (!l) return BASE_E_NOMEM;
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        glob_t g;
        memset(&g, 0, sizeof g);
        int grc = glob(patterns[i], GLOB_ERR, NULL, &g);
        if (grc == GLOB_NOMATCH) {
            globfree(&g);
            continue;
        }
        if (grc != 0) {
            base_buf_printf(errs, "%s: %s\n", patterns[i],
                            grc == GLOB_NOSPACE ? "out of memory" : "error reading files for the pattern");
            globfree(&g);
            rc = grc == GLOB_NOSPACE ? BASE_E_NOMEM : BASE_E_IO;
            break;
        }
        for (size_t j = 0; rc == 0 && j < g.gl_pathc; j++)
            rc = add_file(l, g.gl_pathv[j], default_interval_ms, errs);
        globfree(&g);
    }
    /* the same file through two patterns: 2.42 loads it twice into one map,
     * the later groups replacing the earlier; keep one of each key */
    for (size_t i = 0; rc == 0 && i < l->n; i++)
        for (size_t j = i + 1; j < l->n; j++)
            if (strcmp(l->keys[i], l->keys[j]) == 0) {
                rules_gstate_free(l->gs[i]);
                free(l->keys[i]);
                l->gs[i] = l->gs[j];
                l->keys[i] = l->keys[j];
                memmove(&l->gs[j], &l->gs[j + 1], (l->n - j - 1) * sizeof *l->gs);
                memmove(&l->keys[j], &l->keys[j + 1], (l->n - j - 1) * sizeof *l->keys);
                l->n--;
                j--;
            }
    if (rc != 0) {
        rules_loaded_free(l);
        return rc;
    }
    /* sort by file, then name (insertion: a handful of groups) */
    for (size_t i = 1; i < l->n; i++)
        for (size_t j = i; j > 0 && cmp_gstate(l->gs[j - 1], l->gs[j]) > 0; j--) {
            rules_gstate *t = l->gs[j];
            l->gs[j] = l->gs[j - 1];
            l->gs[j - 1] = t;
            char *k = l->keys[j];
            l->keys[j] = l->keys[j - 1];
            l->keys[j - 1] = k;
        }
    *ret = l;
    return 0;
}

/* ---- a group's thread ------------------------------------------------------------ */

static int out_append(void *ctx, const labels_set *ls, int64_t t, double v) {
    mgroup *g = ctx;
    if (!g->app && tsdb_head_app_new(g->m->o.head, &g->app) != 0) return BASE_E_NOMEM;
    int rc = tsdb_head_app_add(g->app, ls, t, v);
    if (rc == 0) g->round_samples++;
    return rc;
}

static int out_commit(void *ctx) {
    mgroup *g = ctx;
    if (!g->app) return 0;
    return tsdb_head_app_commit(g->app, NULL);
}

static void out_notify(void *ctx, const rules_notice *a, size_t n) {
    mgroup *g = ctx;
    if (g->m->o.notify) g->m->o.notify(g->m->o.notify_ctx, a, n);
}

static rules_out group_out(mgroup *g) {
    rules_out o = {out_append, out_commit, out_notify, g};
    return o;
}

/* Sleeps until wall time t_ms or until stopped; returns 1 when stopped. */
static int wait_until(mgroup *g, int64_t t_ms) {
    struct timespec ts = {(time_t)(t_ms / 1000), (long)(t_ms % 1000) * 1000000L};
    pthread_mutex_lock(&g->mu);
    while (!g->stop && base_unix_ms() < t_ms)
        if (pthread_cond_timedwait(&g->cv, &g->mu, &ts) == ETIMEDOUT) break;
    int stop = g->stop;
    pthread_mutex_unlock(&g->mu);
    return stop;
}

static void round_once(mgroup *g, int64_t ts) {
    rules_gstate *gs = g->gs;
    int64_t t0 = base_mono_ns();
    g->round_samples = 0;
    rules_out out = group_out(g);
    int rc = rules_gstate_eval(gs, &g->env, ts, &out);
    if (g->app) tsdb_head_app_commit(g->app, NULL);
    double dur = (double)(base_mono_ns() - t0) / 1e9;
    pthread_mutex_lock(&gs->mu);
    g->st.iterations++;
    g->st.last_samples = g->round_samples;
    g->st.round_sum_s += dur;
    g->st.round_count++;
    for (size_t i = 0; i < gs->nrules; i++) {
        g->st.rule_sum_s += (double)gs->rules[i].eval_ns / 1e9;
        g->st.rule_count++;
    }
    pthread_mutex_unlock(&gs->mu);
    if (rc != 0)
        base_log(BASE_LOG_ERROR, "Rule group evaluation failed", "group", g->key, "err", base_strerror(rc),
                 NULL);
}

/* The next round after ts: the first aligned time after now, counting the
 * rounds skipped as missed (2.42's ticker). */
static int64_t next_round(mgroup *g, int64_t ts) {
    int64_t iv = g->gs->interval_ms;
    int64_t now = base_unix_ms();
    int64_t missed = (now - ts) / iv - 1;
    if (missed > 0) {
        pthread_mutex_lock(&g->gs->mu);
        g->st.missed += (uint64_t)missed;
        g->st.iterations += (uint64_t)missed;
        g->gs->missed += (uint64_t)missed;
        pthread_mutex_unlock(&g->gs->mu);
    } else {
        missed = 0;
    }
    return ts + (missed + 1) * iv;
}

static void *group_main(void *arg) {
    mgroup *g = arg;
    int64_t iv = g->gs->interval_ms;
    int64_t ts = rules_gstate_eval_ts(g->gs, base_unix_ms()) + iv;
    if (!wait_until(g, ts)) {
        round_once(g, ts);
        int stopped = 0;
        if (g->should_restore) {
            if (wait_until(g, ts + iv))
                stopped = 1;
            else {
                ts = next_round(g, ts);
                round_once(g, ts);
                if (rules_gstate_restore(g->gs, &g->env, base_unix_ms()) != 0)
                    base_log(BASE_LOG_WARN, "Failed to restore 'for' state", "group", g->key, NULL);
            }
        }
        while (!stopped && !wait_until(g, ts + iv)) {
            ts = next_round(g, ts);
            round_once(g, ts);
        }
    }
    if (g->mark_stale) {
        int64_t now = base_unix_ms();
        /* two intervals for a renamed rule to take the series over */
        int64_t until = now + 2 * iv;
        struct timespec dl = {(time_t)(until / 1000), (long)(until % 1000) * 1000000L};
        rules_manager *m = g->m;
        pthread_mutex_lock(&m->done_mu);
        while (!m->done && base_unix_ms() < until)
            if (pthread_cond_timedwait(&m->done_cv, &m->done_mu, &dl) == ETIMEDOUT) break;
        int done = m->done;
        pthread_mutex_unlock(&m->done_mu);
        if (!done) {
            rules_out out = group_out(g);
            if (rules_gstate_mark_stale(g->gs, now, &out) == 0 && g->app) tsdb_head_app_commit(g->app, NULL);
        }
    }
    pthread_mutex_lock(&g->mu);
    g->finished = 1;
    pthread_mutex_unlock(&g->mu);
    return NULL;
}

static void mgroup_free(mgroup *g) {
    if (!g) return;
    if (g->running) pthread_join(g->th, NULL);
    if (g->app) tsdb_head_app_free(g->app);
    rules_gstate_free(g->gs);
    if (g->ext) labels_unref(g->ext);
    free(g->url);
    free(g->key);
    pthread_mutex_destroy(&g->mu);
    pthread_cond_destroy(&g->cv);
    free(g);
}

/* Tells g's thread to stop after its round (it may still mark stale). */
static void mgroup_signal_stop(mgroup *g, int mark_stale) {
    pthread_mutex_lock(&g->mu);
    g->stop = 1;
    g->mark_stale = mark_stale;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
}

static mgroup *mgroup_new(rules_manager *m, rules_gstate *gs, char *key, const labels_set *ext,
                          const char *url) {
    mgroup *g = calloc(1, sizeof *g);
    if (!g) return NULL;
    g->m = m;
    g->gs = gs;
    g->key = key;
    g->ext = ext ? labels_ref(ext) : NULL;
    g->url = strdup(url ? url : "");
    pthread_mutex_init(&g->mu, NULL);
    pthread_cond_init(&g->cv, NULL);
    rules_env_default(&g->env);
    g->env.engine = m->o.engine;
    g->env.storage = m->o.storage;
    g->env.external_labels = g->ext;
    g->env.external_url = g->url;
    if (m->o.resend_delay_ms > 0) g->env.resend_delay_ms = m->o.resend_delay_ms;
    if (m->o.outage_tolerance_ms > 0) g->env.outage_tolerance_ms = m->o.outage_tolerance_ms;
    if (m->o.for_grace_period_ms > 0) g->env.for_grace_period_ms = m->o.for_grace_period_ms;
    g->st.key = g->key;
    if (!g->url) {
        g->gs = NULL;
        g->key = NULL;
        mgroup_free(g);
        return NULL;
    }
    return g;
}

/* ---- the manager ------------------------------------------------------------------ */

int rules_manager_new(const rules_manager_opts *o, rules_manager **ret) {
    rules_manager *m = calloc(1, sizeof *m);
    if (!m) return BASE_E_NOMEM;
    m->o = *o;
    pthread_mutex_init(&m->mu, NULL);
    pthread_mutex_init(&m->done_mu, NULL);
    pthread_cond_init(&m->done_cv, NULL);
    *ret = m;
    return 0;
}

static int kv_equal(const rules_kv *a, size_t na, const rules_kv *b, size_t nb) {
    if (na != nb) return 0;
    for (size_t i = 0; i < na; i++)
        if (strcmp(a[i].name, b[i].name) || strcmp(a[i].value, b[i].value)) return 0;
    return 1;
}

/* 2.42's Group.Equals: name, file, interval, limit and every rule's text
 * (the environment too here: a changed external label or URL restarts the
 * group, with its state, so templates see the new values). */
static int group_equal(const mgroup *old, const rules_gstate *ng, const labels_set *ext, const char *url) {
    const rules_gstate *og = old->gs;
    const rules_group *a = og->group, *b = ng->group;
    if (strcmp(og->file, ng->file) || strcmp(a->name, b->name) || og->interval_ms != ng->interval_ms ||
        a->limit != b->limit || a->nrules != b->nrules)
        return 0;
    for (size_t i = 0; i < a->nrules; i++) {
        const rules_rule *x = &a->rules[i], *y = &b->rules[i];
        if (x->kind != y->kind || strcmp(x->name, y->name) || strcmp(x->expr, y->expr) ||
            x->for_ms != y->for_ms || x->keep_firing_for_ms != y->keep_firing_for_ms ||
            !kv_equal(x->labels, x->nlabels, y->labels, y->nlabels) ||
            !kv_equal(x->annotations, x->nannotations, y->annotations, y->nannotations))
            return 0;
    }
    if ((old->ext == NULL) != (ext == NULL) || (ext && !labels_equal(old->ext, ext))) return 0;
    return strcmp(old->url, url ? url : "") == 0;
}

static void reap_retired(rules_manager *m, int all) {
    size_t k = 0;
    for (size_t i = 0; i < m->nretired; i++) {
        mgroup *g = m->retired[i];
        pthread_mutex_lock(&g->mu);
        int fin = g->finished;
        pthread_mutex_unlock(&g->mu);
        if (fin || all)
            mgroup_free(g);
        else
            m->retired[k++] = g;
    }
    m->nretired = k;
}

void rules_manager_update(rules_manager *m, rules_loaded *l, const labels_set *ext, const char *url) {
    mgroup **ng = calloc(l->n + 1, sizeof *ng);
    mgroup **replaced = calloc(l->n + 1, sizeof *replaced); /* freed once no reader can see them */
    size_t nreplaced = 0;
    size_t nold = m->n;
    /* a copy to strike out matched groups in: readers walk m->groups meanwhile */
    mgroup **old = calloc(nold + 1, sizeof *old);
    if (old && nold) memcpy(old, m->groups, nold * sizeof *old);
    int should_restore = !m->restored;
    m->restored = 1;
    reap_retired(m, 0);
    mgroup **ret = realloc(m->retired, (m->nretired + nold + 1) * sizeof *ret);
    if (!ng || !replaced || !ret || !old) {
        free(ng);
        free(replaced);
        free(old);
        if (ret) m->retired = ret;
        base_log(BASE_LOG_ERROR, "Out of memory applying rule files; the previous rules keep running", NULL);
        rules_loaded_free(l);
        return;
    }
    m->retired = ret;
    size_t n = 0;
    for (size_t i = 0; i < l->n; i++) {
        rules_gstate *gs = l->gs[i];
        mgroup *prev = NULL;
        for (size_t j = 0; j < nold; j++)
            if (old[j] && strcmp(old[j]->key, l->keys[i]) == 0) {
                prev = old[j];
                old[j] = NULL;
                break;
            }
        if (prev && group_equal(prev, gs, ext, url)) {
            ng[n++] = prev;
            rules_gstate_free(gs);
            free(l->keys[i]);
            continue;
        }
        mgroup *g = mgroup_new(m, gs, l->keys[i], ext, url);
        if (!g) {
            rules_gstate_free(gs);
            free(l->keys[i]);
            if (prev) ng[n++] = prev; /* keep the old one rather than none */
            base_log(BASE_LOG_ERROR, "Out of memory starting a rule group", NULL);
            continue;
        }
        g->should_restore = should_restore;
        /* groups of later updates start restored (2.42 creates their rules
         * with restored = true): they write ALERTS from their first round */
        if (!should_restore) g->gs->restored = 1;
        if (prev) {
            mgroup_signal_stop(prev, 0);
            pthread_join(prev->th, NULL);
            prev->running = 0;
            rules_gstate_copy_state(g->gs, prev->gs);
            replaced[nreplaced++] = prev;
        }
        if (pthread_create(&g->th, NULL, group_main, g) == 0)
            g->running = 1;
        else
            base_log(BASE_LOG_ERROR, "Cannot start a rule group's thread", "group", g->key, NULL);
        ng[n++] = g;
    }
    /* groups no longer configured: stop, and mark their series stale later */
    for (size_t j = 0; j < nold; j++)
        if (old[j]) {
            mgroup_signal_stop(old[j], 1);
            m->retired[m->nretired++] = old[j];
        }
    free(l->gs);
    free(l->keys);
    free(l);
    pthread_mutex_lock(&m->mu);
    mgroup **prev_arr = m->groups;
    m->groups = ng;
    m->n = n;
    pthread_mutex_unlock(&m->mu);
    free(prev_arr);
    free(old);
    for (size_t i = 0; i < nreplaced; i++) mgroup_free(replaced[i]);
    free(replaced);
}

void rules_manager_free(rules_manager *m) {
    if (!m) return;
    pthread_mutex_lock(&m->done_mu);
    m->done = 1;
    pthread_cond_broadcast(&m->done_cv);
    pthread_mutex_unlock(&m->done_mu);
    for (size_t i = 0; i < m->n; i++) mgroup_signal_stop(m->groups[i], 0);
    for (size_t i = 0; i < m->n; i++) mgroup_free(m->groups[i]);
    reap_retired(m, 1);
    free(m->groups);
    free(m->retired);
    pthread_mutex_destroy(&m->mu);
    pthread_mutex_destroy(&m->done_mu);
    pthread_cond_destroy(&m->done_cv);
    free(m);
}

void rules_manager_visit(rules_manager *m,
                         void (*fn)(void *ctx, rules_gstate *gs, const rules_group_stats *st), void *ctx) {
    pthread_mutex_lock(&m->mu);
    for (size_t i = 0; i < m->n; i++) {
        mgroup *g = m->groups[i];
        rules_group_stats st;
        pthread_mutex_lock(&g->gs->mu);
        st = g->st;
        pthread_mutex_unlock(&g->gs->mu);
        fn(ctx, g->gs, &st);
    }
    pthread_mutex_unlock(&m->mu);
}
