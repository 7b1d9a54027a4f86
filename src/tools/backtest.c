/* backtest.c -- `kelvin rules backtest`: evaluates rule files over stored
 * history and prints every alert that would have fired, and when, so
 * thresholds can be tuned before they page anyone.
 *
 *   kelvin rules backtest [--storage.tsdb.path=DIR] --from T --to T
 *       [--eval-interval D] [--format text|json] RULES...
 *
 * WHAT IT DOES. The storage directory is opened read-only (blocks and WAL
 * as `kelvin server` would read them; nothing in it is written). Each
 * group of the rule files is evaluated by the server's own evaluator
 * (rules/eval.h) at from, from + interval, ... <= to, its interval being
 * the group's own or --eval-interval (default 1m, the config's
 * evaluation_interval default); rounds of all groups run in time order,
 * so rules that read what other groups record see it. What rules write
 * (recording rules, ALERTS, ALERTS_FOR_STATE) goes into a scratch
 * in-memory head, and queries read the stored history and the scratch
 * head merged, as the server's queries would read one storage.
 *
 * SPEED. Evaluating every rule as an instant query at every round would
 * decode each range window (a predict_linear over 6 h) again every
 * minute. Instead, time is cut into chunks of CHUNK_ROUNDS rounds; for
 * each chunk, the rules are first answered as range queries over the
 * chunk at their group's step (one decoding of the data; a range query's
 * value at each step is the instant query's), in file order, and each
 * recording rule's results are written (with the stale markers a round
 * would write) before the next rule's range query, so a rule that reads
 * an earlier rule's series sees it as in a round. Then the rounds run as
 * before, their rules answered from those results (rules_env.query), so
 * alert states, `for`, templates and ALERTS are the evaluator's own. A
 * rule that reads ALERTS / ALERTS_FOR_STATE, a series recorded by itself
 * or a later rule (or by such a rule), or selects without a metric name,
 * is not precomputed: it is queried at each round. The rounds write the
 * recording results again (the same samples: no-ops).
 *
 * An alert "fires" when its state becomes firing (after its `for`), and
 * is "resolved" when it stops firing (after keep_firing_for); one alert
 * may fire several times. JSON output: an array of
 *   {"alertname": A, "labels": {...}, "firing_at": S, "resolved_at": S|null}
 * (Unix seconds, resolved_at null while still firing at --to), sorted by
 * firing_at, then alertname, then labels. Text output: one line per
 * firing, as a table. Exit status 0 (whether alerts fired or not), 1 on
 * an error (a rule file that fails `kelvin check rules`, an unreadable
 * storage), 2 on bad flags.
 *
 * Rule evaluation failures are counted and reported on stderr once per
 * rule (the first error), as a server would log them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/flag.h"
#include "base/num.h"
#include "promql/promql.h"
#include "rules/eval.h"
#include "rules/rules.h"
#include "tools/tools.h"
#include "tools/tools_int.h"
#include "tsdb/db.h"
#include "tsdb/head.h"

/* ---- two storages read as one ------------------------------------------------- */

/* Series of a and b merged by labels; a series in both has its samples
 * merged by time (a's sample wins on equal times). */
typedef struct merge_set {
    promql_storage a, b;
    void *sa, *sb;
    int ha, hb;  /* the set has a current series */
    int cur;     /* 1: a's series, 2: b's, 3: both */
    int started; /* next() ran once */
    /* merging two series' samples */
    int64_t ta[256], tb[256];
    double va[256], vb[256];
    size_t na, nb, ia, ib;
    int ea, eb; /* a / b exhausted */
} merge_set;

typedef struct merge_ctx {
    promql_storage a, b;
} merge_ctx;

static int m_select(void *ctx, labels_matcher *const *ms, size_t n, int64_t mint, int64_t maxt, void **ret) {
    merge_ctx *m = ctx;
    merge_set *s = calloc(1, sizeof *s);
    if (!s) return BASE_E_NOMEM;
    s->a = m->a;
    s->b = m->b;
    int rc = m->a.ops->select(m->a.ctx, ms, n, mint, maxt, &s->sa);
    if (rc == 0) rc = m->b.ops->select(m->b.ctx, ms, n, mint, maxt, &s->sb);
    if (rc != 0) {
        if (s->sa) m->a.ops->free(s->sa);
        free(s);
        return rc;
    }
    *ret = s;
    return 0;
}

static int m_next(void *set) {
    merge_set *s = set;
    int rc;
    if (!s->started) {
        s->started = 1;
        if ((rc = s->a.ops->next(s->sa)) < 0) return rc;
        s->ha = rc;
        if ((rc = s->b.ops->next(s->sb)) < 0) return rc;
        s->hb = rc;
    } else {
        if (s->cur & 1) {
            if ((rc = s->a.ops->next(s->sa)) < 0) return rc;
            s->ha = rc;
        }
        if (s->cur & 2) {
            if ((rc = s->b.ops->next(s->sb)) < 0) return rc;
            s->hb = rc;
        }
    }
    if (!s->ha && !s->hb) return s->cur = 0;
    if (s->ha && s->hb) {
        int c = labels_cmp(s->a.ops->labels(s->sa), s->b.ops->labels(s->sb));
        s->cur = c < 0 ? 1 : c > 0 ? 2 : 3;
    } else {
        s->cur = s->ha ? 1 : 2;
    }
    s->na = s->nb = s->ia = s->ib = 0;
    s->ea = s->eb = 0;
    return 1;
}

static const labels_set *m_labels(void *set) {
    merge_set *s = set;
    return (s->cur & 1) ? s->a.ops->labels(s->sa) : s->b.ops->labels(s->sb);
}

static int m_samples(void *set, int64_t *t, double *v, size_t cap) {
    merge_set *s = set;
    if (s->cur == 1) return s->a.ops->samples(s->sa, t, v, cap);
    if (s->cur == 2) return s->b.ops->samples(s->sb, t, v, cap);
    size_t k = 0;
    while (k < cap) {
        if (s->ia == s->na && !s->ea) {
            int r = s->a.ops->samples(s->sa, s->ta, s->va, 256);
            if (r < 0) return r;
            s->na = (size_t)r, s->ia = 0, s->ea = r == 0;
        }
        if (s->ib == s->nb && !s->eb) {
            int r = s->b.ops->samples(s->sb, s->tb, s->vb, 256);
            if (r < 0) return r;
            s->nb = (size_t)r, s->ib = 0, s->eb = r == 0;
        }
        int has_a = s->ia < s->na, has_b = s->ib < s->nb;
        if (!has_a && !has_b) break;
        if (has_a && (!has_b || s->ta[s->ia] <= s->tb[s->ib])) {
            if (has_b && s->ta[s->ia] == s->tb[s->ib]) s->ib++;
            t[k] = s->ta[s->ia], v[k++] = s->va[s->ia++];
        } else {
            t[k] = s->tb[s->ib], v[k++] = s->vb[s->ib++];
        }
    }
    return (int)k;
}

static void m_free(void *set) {
    merge_set *s = set;
    if (!s) return;
    s->a.ops->free(s->sa);
    s->b.ops->free(s->sb);
    free(s);
}

static const promql_storage_ops merge_ops = {m_select, m_next, m_labels, m_samples, m_free};

/* ---- what fired ------------------------------------------------------------------ */

typedef struct firing {
    labels_set *labels; /* the alert's labels (alertname included) */
    const char *alertname;
    int64_t firing_at, resolved_at; /* ms; resolved_at 0: still firing */
    size_t rule;                    /* global rule index */
} firing;

typedef struct bt {
    tsdb_head *scratch;
    tsdb_head_app *app;
    firing *f;
    size_t nf, capf;
    size_t *open; /* indices into f of the firings not resolved yet */
    size_t nopen; /* open has room for capf */
    int err;
} bt;

static int bt_append(void *ctx, const labels_set *ls, int64_t t, double v) {
    bt *b = ctx;
    return tsdb_head_app_add(b->app, ls, t, v);
}

static int bt_commit(void *ctx) {
    bt *b = ctx;
    return tsdb_head_app_commit(b->app, NULL);
}

/* The alert of rs with labels ls (rs->alerts is sorted by labels). */
static const rules_alert *alert_of(const rules_rstate *rs, const labels_set *ls) {
    size_t lo = 0, hi = rs->nalerts;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = labels_cmp(rs->alerts[mid].labels, ls);
        if (c == 0) return &rs->alerts[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

static int has_open(const bt *b, size_t rule, const labels_set *ls) {
    for (size_t i = 0; i < b->nopen; i++) {
        const firing *f = &b->f[b->open[i]];
        if (f->rule == rule && labels_equal(f->labels, ls)) return 1;
    }
    return 0;
}

/* After a round of group gs (whose first rule has global index base):
 * closes the open firings of its rules whose alert no longer fires, and
 * opens one for each alert that fires and has none open. */
static void track(bt *b, rules_gstate *gs, size_t base, int64_t ts) {
    pthread_mutex_lock(&gs->mu);
    for (size_t i = 0; i < b->nopen;) {
        firing *f = &b->f[b->open[i]];
        if (f->rule < base || f->rule >= base + gs->nrules) {
            i++;
            continue;
        }
        const rules_alert *a = alert_of(&gs->rules[f->rule - base], f->labels);
        if (a && a->state == RULES_FIRING) {
            i++;
            continue;
        }
        f->resolved_at = a && a->resolved_at_ms ? a->resolved_at_ms : ts;
        b->open[i] = b->open[--b->nopen];
    }
    for (size_t r = 0; r < gs->nrules && !b->err; r++) {
        const rules_rstate *rs = &gs->rules[r];
        if (rs->rule->kind != RULES_ALERT) continue;
        for (size_t j = 0; j < rs->nalerts; j++) {
            const rules_alert *a = &rs->alerts[j];
            if (a->state != RULES_FIRING || has_open(b, base + r, a->labels)) continue;
            if (b->nf == b->capf) {
                size_t nc = b->capf ? b->capf * 2 : 64;
                firing *nf = realloc(b->f, nc * sizeof *nf);
                size_t *no = realloc(b->open, nc * sizeof *no);
                if (nf) b->f = nf;
                if (no) b->open = no;
                if (!nf || !no) {
                    b->err = BASE_E_NOMEM;
                    break;
                }
                b->capf = nc;
            }
            firing *f = &b->f[b->nf];
            f->labels = labels_ref(a->labels);
            f->alertname = rs->rule->name;
            f->firing_at = a->fired_at_ms ? a->fired_at_ms : ts;
            f->resolved_at = 0;
            f->rule = base + r;
            b->open[b->nopen++] = b->nf++;
        }
    }
    pthread_mutex_unlock(&gs->mu);
}

static int cmp_firing(const void *x, const void *y) {
    const firing *a = x, *b = y;
    if (a->firing_at != b->firing_at) return a->firing_at < b->firing_at ? -1 : 1;
    int c = strcmp(a->alertname, b->alertname);
    return c ? c : labels_cmp(a->labels, b->labels);
}

static void fmt_secs(base_buf *out, int64_t ms) {
    if (ms % 1000 == 0) {
        base_buf_printf(out, "%lld", (long long)(ms / 1000));
        return;
    }
    char tmp[BASE_FMT_DOUBLE_MAX];
    size_t n = base_fmt_double_g(tmp, (double)ms / 1000.0);
    base_buf_append(out, tmp, n);
}

static void print_json(bt *b, FILE *out) {
    base_buf o;
    base_buf_init(&o, 0);
    base_buf_putc(&o, '[');
    for (size_t i = 0; i < b->nf; i++) {
        firing *f = &b->f[i];
        base_buf_puts(&o, i ? ",\n " : "\n ");
        base_buf_puts(&o, "{\"alertname\":");
        base_buf_json_str(&o, f->alertname, strlen(f->alertname));
        base_buf_puts(&o, ",\"labels\":{");
        labels_iter it;
        labels_iter_init(&it, f->labels);
        base_str n, v;
        int k = 0;
        while (labels_iter_next(&it, &n, &v)) {
            if (k++) base_buf_putc(&o, ',');
            base_buf_json_str(&o, n.p, n.n);
            base_buf_putc(&o, ':');
            base_buf_json_str(&o, v.p, v.n);
        }
        base_buf_puts(&o, "},\"firing_at\":");
        fmt_secs(&o, f->firing_at);
        base_buf_puts(&o, ",\"resolved_at\":");
        if (f->resolved_at)
            fmt_secs(&o, f->resolved_at);
        else
            base_buf_puts(&o, "null");
        base_buf_putc(&o, '}');
    }
    base_buf_puts(&o, b->nf ? "\n]\n" : "]\n");
    fwrite(o.data, 1, o.len, out);
    base_buf_free(&o);
}

static void print_text(bt *b, FILE *out) {
    tools__table t;
    tools__table_init(&t, 5);
    const char *hdr[5] = {"ALERT", "FIRING AT", "RESOLVED AT", "FOR", "LABELS"};
    tools__table_row(&t, hdr);
    for (size_t i = 0; i < b->nf; i++) {
        firing *f = &b->f[i];
        char fa[64], ra[64] = "still firing", dur[48] = "-";
        tools__go_time_utc(fa, f->firing_at / 1000);
        if (f->resolved_at) {
            tools__go_time_utc(ra, f->resolved_at / 1000);
            tools__go_duration(dur, (f->resolved_at - f->firing_at) * 1000000);
        }
        base_buf l;
        base_buf_init(&l, 0);
        labels_format(f->labels, &l);
        const char *row[5] = {f->alertname, fa, ra, dur, l.data ? l.data : "{}"};
        tools__table_row(&t, row);
        base_buf_free(&l);
    }
    tools__table_flush(&t, out, 0, 2);
    fprintf(out, "%zu alert firing%s\n", b->nf, b->nf == 1 ? "" : "s");
}

/* ---- precomputed rule queries ------------------------------------------------------- */

#define CHUNK_ROUNDS 240

/* One rule's range result over the current chunk. */
typedef struct pre {
    const pq_expr *x; /* the gstate's copy of the rule's expression */
    int range;        /* answered from a range query (else per round) */
    int record;       /* a recording rule */
    const rules_rule *rule;
    int64_t limit;     /* the group's */
    promql_result res; /* PROMQL_MATRIX over the chunk */
    size_t *cur;       /* per series: the next point not yet passed */
    int ready;         /* res holds this chunk's answers */
    labels_set **prev; /* recording: the series written at the last step */
    size_t nprev;
} pre;

typedef struct pres {
    pre *p;
    size_t n;
    rules_sample *out; /* the vector answered last */
    size_t cap;
    uint64_t precomputed, per_round;
} pres;

/* Names a selector may read: the metric name, or NULL (any). */
static void sel_names(const pq_node *n, void (*fn)(void *ctx, const char *name, size_t len), void *ctx) {
    if (!n) return;
    switch (n->kind) {
    case PQ_VSEL: {
        for (size_t i = 0; i < n->vsel.nms; i++) {
            base_str mn = labels_matcher_name(n->vsel.ms[i]);
            if (base_str_eqc(mn, "__name__") && labels_matcher_type(n->vsel.ms[i]) == LABELS_MATCH_EQ) {
                base_str v = labels_matcher_value(n->vsel.ms[i]);
                fn(ctx, v.p, v.n);
                return;
            }
        }
        fn(ctx, NULL, 0);
        return;
    }
    case PQ_MSEL: sel_names(n->msel.vsel, fn, ctx); return;
    case PQ_CALL:
        for (size_t i = 0; i < n->call.nargs; i++) sel_names(n->call.args[i], fn, ctx);
        return;
    case PQ_AGG:
        sel_names(n->agg.expr, fn, ctx);
        sel_names(n->agg.param, fn, ctx);
        return;
    case PQ_BIN:
        sel_names(n->bin.lhs, fn, ctx);
        sel_names(n->bin.rhs, fn, ctx);
        return;
    case PQ_UNARY: sel_names(n->unary.expr, fn, ctx); return;
    case PQ_PAREN: sel_names(n->paren.expr, fn, ctx); return;
    case PQ_SUBQ: sel_names(n->subq.expr, fn, ctx); return;
    default: return;
    }
}

/* Whether rule j's expression can be precomputed: it reads no ALERTS*,
 * no series of a rule at or after j and none of a rule that is not
 * precomputed, and names every metric it selects. */
typedef struct dep_check {
    pres *ps;
    size_t j;
    int ok;
} dep_check;

static void dep_name(void *ctx, const char *name, size_t len) {
    dep_check *d = ctx;
    if (!name) {
        d->ok = 0;
        return;
    }
    base_str n = {name, len};
    if (base_str_eqc(n, "ALERTS") || base_str_eqc(n, "ALERTS_FOR_STATE")) d->ok = 0;
    for (size_t k = 0; k < d->ps->n; k++) {
        const pre *p = &d->ps->p[k];
        if (!p->record || !base_str_eqc(n, p->rule->name)) continue;
        if (k >= d->j || !p->range) d->ok = 0;
    }
}

static int pre_query(void *ctx, const pq_expr *x, int64_t ts, const rules_sample **ret, size_t *ret_n) {
    pres *ps = ctx;
    pre *p = NULL;
    for (size_t i = 0; i < ps->n && !p; i++)
        if (ps->p[i].x == x) p = &ps->p[i];
    if (!p || !p->ready) {
        ps->per_round++;
        return 1;
    }
    ps->precomputed++;
    size_t k = 0;
    for (size_t i = 0; i < p->res.nseries; i++) {
        const promql_series *se = &p->res.series[i];
        size_t c = p->cur[i];
        while (c < se->n && se->pts[c].t < ts) c++;
        p->cur[i] = c;
        if (c == se->n || se->pts[c].t != ts) continue;
        if (k == ps->cap) {
            size_t nc = ps->cap ? ps->cap * 2 : 256;
            rules_sample *no = realloc(ps->out, nc * sizeof *no);
            if (!no) return BASE_E_NOMEM;
            ps->out = no, ps->cap = nc;
        }
        ps->out[k].ls = se->ls;
        ps->out[k++].v = se->pts[c].v;
    }
    *ret = ps->out;
    *ret_n = k;
    return 0;
}

typedef struct rec_sample {
    labels_set *ls;
    double v;
} rec_sample;

static int cmp_rec(const void *a, const void *b) {
    return labels_cmp(((const rec_sample *)a)->ls, ((const rec_sample *)b)->ls);
}

/* A recording rule's range result written step by step as rounds would:
 * renamed, the rule's labels set; a step with two equal label sets or
 * over the group's limit writes nothing (the round fails); stale markers
 * for the series the step lost. */
static int materialize(pre *p, bt *b, int64_t first, int64_t last, int64_t step) {
    const rules_rule *r = p->rule;
    labels_builder lb;
    labels_builder_init(&lb);
    rec_sample *now = NULL;
    size_t cap = 0, n = 0;
    int rc = 0;
    const double stale = base_stale_nan();
    size_t *cur = calloc(p->res.nseries + 1, sizeof *cur);
    if (!cur) return BASE_E_NOMEM;
    for (int64_t ts = first; rc == 0 && ts <= last; ts += step) {
        for (size_t i = 0; i < n; i++) labels_unref(now[i].ls);
        n = 0;
        for (size_t i = 0; rc == 0 && i < p->res.nseries; i++) {
            const promql_series *se = &p->res.series[i];
            while (cur[i] < se->n && se->pts[cur[i]].t < ts) cur[i]++;
            if (cur[i] == se->n || se->pts[cur[i]].t != ts) continue;
            labels_builder_reset(&lb);
            if ((rc = labels_builder_from(&lb, se->ls)) != 0) break;
            labels_builder_set(&lb, base_str_c("__name__"), base_str_c(r->name));
            for (size_t k = 0; k < r->nlabels; k++)
                labels_builder_set(&lb, base_str_c(r->labels[k].name), base_str_c(r->labels[k].value));
            if (n == cap) {
                size_t nc = cap ? cap * 2 : 64;
                rec_sample *nn = realloc(now, nc * sizeof *nn);
                if (!nn) {
                    rc = BASE_E_NOMEM;
                    break;
                }
                now = nn, cap = nc;
            }
            char e[256];
            if ((rc = labels_builder_finish(&lb, 0, &now[n].ls, e, sizeof e)) != 0) break;
            now[n++].v = se->pts[cur[i]].v;
        }
        if (rc != 0) break;
        if (n > 1) qsort(now, n, sizeof *now, cmp_rec);
        int bad = p->limit > 0 && (int64_t)n > p->limit;
        for (size_t i = 1; i < n && !bad; i++) bad = labels_equal(now[i - 1].ls, now[i].ls);
        if (bad) continue; /* nothing written; the last written series stay */
        for (size_t i = 0; rc == 0 && i < n; i++) rc = bt_append(b, now[i].ls, ts, now[i].v);
        for (size_t i = 0, j = 0; rc == 0 && i < p->nprev; i++) {
            while (j < n && labels_cmp(now[j].ls, p->prev[i]) < 0) j++;
            if (j < n && labels_equal(now[j].ls, p->prev[i])) continue;
            rc = bt_append(b, p->prev[i], ts, stale);
        }
        for (size_t i = 0; i < p->nprev; i++) labels_unref(p->prev[i]);
        p->nprev = 0;
        if (n > 0 && rc == 0) {
            labels_set **np = realloc(p->prev, n * sizeof *np);
            if (!np) {
                rc = BASE_E_NOMEM;
                break;
            }
            p->prev = np;
            for (size_t i = 0; i < n; i++) p->prev[i] = labels_ref(now[i].ls);
            p->nprev = n;
        }
    }
    for (size_t i = 0; i < n; i++) labels_unref(now[i].ls);
    if (rc == 0) rc = bt_commit(b);
    free(cur);
    free(now);
    labels_builder_free(&lb);
    return rc;
}

static void pre_clear(pre *p) {
    promql_result_free(&p->res);
    memset(&p->res, 0, sizeof p->res);
    free(p->cur);
    p->cur = NULL;
    p->ready = 0;
}

/* The range results of every precomputable rule for the rounds up to
 * chunk_end (group g's from next[g] on), recording rules written as they
 * come. A rule whose range query fails is answered per round in this
 * chunk, and so is every rule after it (they may read its series). */
static int precompute(pres *ps, rules_gstate **gs, size_t ngs, const int64_t *next, int64_t chunk_end,
                      promql_engine *eng, bt *b) {
    size_t j = 0;
    int fallback = 0;
    for (size_t g = 0; g < ngs; g++) {
        int64_t iv = gs[g]->interval_ms, first = next[g];
        int64_t last = first > chunk_end ? first - iv : first + (chunk_end - first) / iv * iv;
        for (size_t r = 0; r < gs[g]->nrules; r++, j++) {
            pre *p = &ps->p[j];
            pre_clear(p);
            if (!p->range || fallback || first > last) continue;
            int rc = promql_exec_range(eng, p->x, first, last, iv, NULL, &p->res);
            if (rc == BASE_E_NOMEM) return rc;
            if (rc < 0 || p->res.type != PROMQL_MATRIX) {
                pre_clear(p);
                fallback = p->record;
                continue;
            }
            if (!(p->cur = calloc(p->res.nseries + 1, sizeof *p->cur))) return BASE_E_NOMEM;
            p->ready = 1;
            if (p->record && (rc = materialize(p, b, first, last, iv)) != 0) return rc;
        }
    }
    return 0;
}

/* ---- the command ------------------------------------------------------------------ */

static void usage(FILE *out) {
    fprintf(out, "usage: kelvin rules backtest [flags] --from T --to T RULES...\n\n"
                 "Evaluates the alerting and recording rules of RULES over stored history and prints\n"
                 "every alert that would have fired, and when.\n\n"
                 "Flags:\n"
                 "  --storage.tsdb.path DIR  the storage to read (default data/); read only\n"
                 "  --from T                 first evaluation time (Unix seconds or RFC 3339)\n"
                 "  --to T                   last evaluation time\n"
                 "  --eval-interval D        interval of groups without their own (default 1m)\n"
                 "  --lookback-delta D       PromQL's lookback (default 5m)\n"
                 "  --format text|json       output (default text); json: [{\"alertname\", \"labels\",\n"
                 "                           \"firing_at\", \"resolved_at\"}], Unix seconds, resolved_at\n"
                 "                           null while still firing at --to\n");
}

static const char *const value_flags[] = {"storage.tsdb.path", "from",           "to",
                                          "eval-interval",     "lookback-delta", "format"};

static int run(const char *path, int64_t from, int64_t to, int64_t interval, int64_t lookback, int json,
               const char *const *files, size_t nfiles) {
    int rc = 0, status = 1;
    rules_file **rf = calloc(nfiles + 1, sizeof *rf);
    rules_gstate **gs = NULL;
    size_t ngs = 0, *base = NULL;
    int64_t *next = NULL;
    tsdb_db *db = NULL;
    promql_engine *eng = NULL;
    bt b = {0};
    pres ps = {0};
    char err[1024] = "";
    if (!rf) goto out;
    size_t total = 0;
    for (size_t i = 0; i < nfiles; i++) {
        rules_errors e = {0};
        if (rules_file_load(files[i], &rf[i], &e) != 0) {
            for (size_t k = 0; k < e.n; k++) fprintf(stderr, "%s\n", e.e[k].msg);
            if (!e.n) fprintf(stderr, "%s: cannot be read\n", files[i]);
            rules_errors_free(&e);
            goto out;
        }
        rules_errors_free(&e);
        total += rf[i]->ngroups;
    }
    gs = calloc(total + 1, sizeof *gs);
    base = calloc(total + 1, sizeof *base);
    next = calloc(total + 1, sizeof *next);
    if (!gs || !base || !next) goto out;
    size_t nrules = 0;
    for (size_t i = 0; i < nfiles; i++)
        for (size_t g = 0; g < rf[i]->ngroups; g++) {
            if ((rc = rules_gstate_new(&rf[i]->groups[g], files[i], interval, &gs[ngs])) != 0) goto out;
            gs[ngs]->restored = 1; /* nothing to restore: ALERTS from the first round */
            base[ngs] = nrules;
            nrules += rf[i]->groups[g].nrules;
            next[ngs] = from;
            ngs++;
        }

    tsdb_db_opts o;
    tsdb_db_opts_default(&o);
    o.path = path;
    o.read_only = 1;
    o.retention_ms = 0;
    o.maintain_interval_ms = -1;
    tsdb_db_report rep;
    if ((rc = tsdb_db_open(&o, &db, &rep, err, sizeof err)) != 0) {
        fprintf(stderr, "opening storage %s: %s\n", path, err);
        goto out;
    }
    tsdb_head_opts ho = {0};
    if ((rc = tsdb_head_open(&ho, &b.scratch, NULL, err, sizeof err)) != 0 ||
        (rc = tsdb_head_app_new(b.scratch, &b.app)) != 0) {
        fprintf(stderr, "scratch storage: %s\n", err[0] ? err : base_strerror(rc));
        goto out;
    }
    merge_ctx mc = {promql_storage_db(db), promql_storage_head(b.scratch)};
    promql_storage st = {&merge_ops, &mc};
    promql_opts qo;
    promql_opts_default(&qo);
    qo.lookback_ms = lookback;
    qo.default_subq_step_ms = interval;
    qo.timeout_ms = 3600 * 1000;
    qo.max_samples = 1000000000;
    if ((rc = promql_engine_new(&qo, st, &eng)) != 0) goto out;
    ps.p = calloc(nrules + 1, sizeof *ps.p);
    if (!ps.p) goto out;
    int64_t min_iv = INT64_MAX;
    for (size_t g = 0; g < ngs; g++) {
        if (gs[g]->interval_ms < min_iv) min_iv = gs[g]->interval_ms;
        for (size_t r = 0; r < gs[g]->nrules; r++) {
            pre *p = &ps.p[ps.n++];
            p->rule = gs[g]->rules[r].rule;
            p->x = p->rule->parsed;
            p->record = p->rule->kind == RULES_RECORD;
            p->limit = gs[g]->group->limit;
        }
    }
    /* KELVIN_BACKTEST_PER_ROUND=1: every rule queried at each round (the
     * tests compare both ways) */
    int per_round = getenv("KELVIN_BACKTEST_PER_ROUND") != NULL;
    for (size_t j = 0; j < ps.n; j++) {
        dep_check d = {&ps, j, 1};
        sel_names(promql_expr_root(ps.p[j].x), dep_name, &d);
        ps.p[j].range = d.ok && !per_round;
    }
    rules_env env;
    rules_env_default(&env);
    env.engine = eng;
    env.storage = st;
    env.query = pre_query;
    env.query_ctx = &ps;
    rules_out out = {bt_append, bt_commit, NULL, &b};
    uint64_t *reported = calloc(nrules + 1, sizeof *reported);
    if (!reported) goto out;
    int64_t chunk_end = from - 1;
    /* rounds of every group in time order (ties: file order), chunk by chunk */
    for (;;) {
        size_t g = ngs;
        for (size_t i = 0; i < ngs; i++)
            if (next[i] <= to && (g == ngs || next[i] < next[g])) g = i;
        if (g == ngs) break;
        int64_t ts = next[g];
        if (ts > chunk_end) {
            chunk_end = ts + CHUNK_ROUNDS * min_iv - 1;
            if (chunk_end > to) chunk_end = to;
            if ((rc = precompute(&ps, gs, ngs, next, chunk_end, eng, &b)) != 0) {
                free(reported);
                goto out;
            }
        }
        if ((rc = rules_gstate_eval(gs[g], &env, ts, &out)) != 0) {
            free(reported);
            goto out;
        }
        tsdb_head_app_commit(b.app, NULL);
        track(&b, gs[g], base[g], ts);
        for (size_t r = 0; r < gs[g]->nrules; r++) {
            const rules_rstate *rs = &gs[g]->rules[r];
            if (rs->failures && !reported[base[g] + r]) {
                reported[base[g] + r] = 1;
                fprintf(stderr, "rule %s (group %s) failed at %lld: %s\n", rs->rule->name, gs[g]->group->name,
                        (long long)(ts / 1000), rs->last_error ? rs->last_error : "?");
            }
        }
        if (b.err) {
            free(reported);
            goto out;
        }
        next[g] = ts + gs[g]->interval_ms;
    }
    free(reported);
    if (b.nf > 1) qsort(b.f, b.nf, sizeof *b.f, cmp_firing);
    if (json)
        print_json(&b, stdout);
    else
        print_text(&b, stdout);
    status = 0;
out:
    if (status && rc) fprintf(stderr, "kelvin rules backtest: %s\n", base_strerror(rc));
    for (size_t i = 0; i < b.nf; i++) labels_unref(b.f[i].labels);
    free(b.f);
    free(b.open);
    for (size_t i = 0; i < ps.n; i++) {
        pre_clear(&ps.p[i]);
        for (size_t k = 0; k < ps.p[i].nprev; k++) labels_unref(ps.p[i].prev[k]);
        free(ps.p[i].prev);
    }
    free(ps.p);
    free(ps.out);
    if (getenv("KELVIN_BACKTEST_STATS"))
        fprintf(stderr, "rule queries: %llu answered from range queries, %llu per round\n",
                (unsigned long long)ps.precomputed, (unsigned long long)ps.per_round);
    if (eng) promql_engine_free(eng);
    for (size_t i = 0; i < ngs; i++) rules_gstate_free(gs[i]);
    if (b.app) tsdb_head_app_free(b.app);
    if (b.scratch) tsdb_head_close(b.scratch);
    if (db) tsdb_db_close(db);
    for (size_t i = 0; rf && i < nfiles; i++) rules_file_free(rf[i]);
    free(rf);
    free(gs);
    free(base);
    free(next);
    return status;
}

static int backtest_main(int argc, char **argv) {
    const char *path = "data/", *from_s = NULL, *to_s = NULL, *format = "text";
    int64_t interval = 60000, lookback = 300000;
    base_flag flags[] = {
        {"storage.tsdb.path", BASE_FLAG_STRING, &path, "storage to read"},
        {"from", BASE_FLAG_STRING, &from_s, "first evaluation time"},
        {"to", BASE_FLAG_STRING, &to_s, "last evaluation time"},
        {"eval-interval", BASE_FLAG_DURATION, &interval, "interval of groups without their own"},
        {"lookback-delta", BASE_FLAG_DURATION, &lookback, "PromQL's lookback"},
        {"format", BASE_FLAG_STRING, &format, "text or json"},
    };
    /* flags to base_flags_parse, the rest are rule files */
    char **fargv = calloc((size_t)argc + 1, sizeof *fargv);
    const char **files = calloc((size_t)argc + 1, sizeof *files);
    int fargc = 1, nfiles = 0, status = 2;
    if (!fargv || !files) goto done;
    fargv[0] = argv[0];
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strncmp(a, "--", 2) != 0 || strcmp(a, "--") == 0) {
            if (strcmp(a, "--") != 0)
                files[nfiles++] = a;
            else
                while (++i < argc) files[nfiles++] = argv[i];
            continue;
        }
        fargv[fargc++] = argv[i];
        if (!strchr(a, '='))
            for (size_t k = 0; k < sizeof value_flags / sizeof *value_flags; k++)
                if (strcmp(a + 2, value_flags[k]) == 0 && i + 1 < argc) fargv[fargc++] = argv[++i];
    }
    char err[512];
    int rc = base_flags_parse(flags, sizeof flags / sizeof *flags, fargc, fargv, err, sizeof err);
    if (rc == 1) {
        usage(stdout);
        status = 0;
        goto done;
    }
    if (rc != 0) {
        fprintf(stderr, "kelvin rules backtest: %s\n", err);
        goto done;
    }
    double from, to;
    if (!from_s || !to_s || tools__parse_time(from_s, &from) != 0 || tools__parse_time(to_s, &to) != 0) {
        fprintf(stderr, "kelvin rules backtest: --from and --to are required: Unix seconds or RFC 3339\n");
        goto done;
    }
    if (to < from) {
        fprintf(stderr, "kelvin rules backtest: --to is before --from\n");
        goto done;
    }
    if (strcmp(format, "text") != 0 && strcmp(format, "json") != 0) {
        fprintf(stderr, "kelvin rules backtest: --format must be text or json\n");
        goto done;
    }
    if (interval <= 0 || lookback <= 0) {
        fprintf(stderr, "kelvin rules backtest: --eval-interval and --lookback-delta must be positive\n");
        goto done;
    }
    if (nfiles == 0) {
        fprintf(stderr, "kelvin rules backtest: no rule files given\n");
        goto done;
    }
    status = run(path, (int64_t)(from * 1000.0), (int64_t)(to * 1000.0), interval, lookback,
                 strcmp(format, "json") == 0, files, (size_t)nfiles);
done:
    free(fargv);
    free(files);
    return status;
}

int tools_rules_main(int argc, char **argv) {
    if (argc >= 2 && strcmp(argv[1], "backtest") == 0) return backtest_main(argc - 1, argv + 1);
    FILE *out = argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) ? stdout : stderr;
    fprintf(out, "usage: kelvin rules backtest [flags] --from T --to T RULES...  (see kelvin rules backtest "
                 "--help)\n");
    return out == stdout ? 0 : 2;
}
