/* tests/unit/rules/eval.c -- the rule evaluator (rules/eval.h) against
 * 2.42's rules.Group / AlertingRule / RecordingRule semantics: rules run
 * on an in-memory head through the PromQL engine; every sample a round
 * writes is captured (and appended to the head, so later rounds and the
 * restore read them back) and every notification is recorded. Each test
 * checks exact labels, times, values and texts, as 2.42 produces them:
 * recording rules, their errors and the group limit, stale markers,
 * alert states with `for` and keep_firing_for, ALERTS / ALERTS_FOR_STATE,
 * templates, notifications (needsSending, resend delay, resolved,
 * ValidUntil, generator URL), CopyState, RestoreForState after a restart
 * with pending and firing alerts, and EvalTimestamp's slotting. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include <cmocka.h>

#include "base/err.h"
#include "labels/labels.h"
#include "promql/promql.h"
#include "promql/series_desc.h"
#include "rules/eval.h"
#include "rules/rules.h"
#include "tsdb/head.h"

#define T0  ((int64_t)1700000040000) /* a whole minute */
#define MIN ((int64_t)60000)

typedef struct capsample {
    char *ls;
    int64_t t;
    double v;
} capsample;

typedef struct capnotice {
    char *labels, *anns, *url;
    int64_t start, end;
} capnotice;

typedef struct fx {
    tsdb_head *h;
    tsdb_head_app *app;
    promql_engine *e;
    rules_env env;
    rules_out out;
    capsample *s;
    size_t ns;
    capnotice *n;
    size_t nn, notify_calls;
    int fail_commit;
    rules_file *file;
} fx;

static int cap_append(void *ctx, const labels_set *ls, int64_t t, double v) {
    fx *f = ctx;
    base_buf b;
    base_buf_init(&b, 0);
    labels_format_metric(ls, &b);
    f->s = realloc(f->s, (f->ns + 1) * sizeof *f->s);
    assert_non_null(f->s);
    f->s[f->ns++] = (capsample){base_buf_steal(&b, NULL), t, v};
    base_buf_free(&b);
    assert_int_equal(tsdb_head_app_add(f->app, ls, t, v), 0);
    return 0;
}

static int cap_commit(void *ctx) {
    fx *f = ctx;
    if (f->fail_commit) {
        tsdb_head_app_rollback(f->app);
        return BASE_E_IO;
    }
    return tsdb_head_app_commit(f->app, NULL);
}

static const char *cap_errstr(void *ctx, int rc) {
    (void)ctx;
    return rc == BASE_E_IO ? "write failed" : NULL;
}

static void cap_notify(void *ctx, const rules_notice *a, size_t n) {
    fx *f = ctx;
    f->notify_calls++;
    for (size_t i = 0; i < n; i++) {
        base_buf l, an;
        base_buf_init(&l, 0);
        base_buf_init(&an, 0);
        labels_format(a[i].labels, &l);
        for (size_t k = 0; k < a[i].nannotations; k++)
            base_buf_printf(&an, "%s%s=%s", k ? "," : "", a[i].annotations[k].name,
                            a[i].annotations[k].value);
        f->n = realloc(f->n, (f->nn + 1) * sizeof *f->n);
        assert_non_null(f->n);
        f->n[f->nn++] =
            (capnotice){base_buf_steal(&l, NULL), an.data ? base_buf_steal(&an, NULL) : strdup(""),
                        strdup(a[i].generator_url), a[i].starts_at_ms, a[i].ends_at_ms};
        base_buf_free(&l);
        base_buf_free(&an);
    }
}

static void clear_caps(fx *f) {
    for (size_t i = 0; i < f->ns; i++) free(f->s[i].ls);
    f->ns = 0;
    for (size_t i = 0; i < f->nn; i++) {
        free(f->n[i].labels);
        free(f->n[i].anns);
        free(f->n[i].url);
    }
    f->nn = 0;
    f->notify_calls = 0;
}

static fx *fx_new(void) {
    fx *f = calloc(1, sizeof *f);
    assert_non_null(f);
    tsdb_head_opts o;
    memset(&o, 0, sizeof o);
    char err[256];
    assert_int_equal(tsdb_head_open(&o, &f->h, NULL, err, sizeof err), 0);
    assert_int_equal(tsdb_head_app_new(f->h, &f->app), 0);
    promql_opts po;
    promql_opts_default(&po);
    assert_int_equal(promql_engine_new(&po, promql_storage_head(f->h), &f->e), 0);
    rules_env_default(&f->env);
    f->env.engine = f->e;
    f->env.storage = promql_storage_head(f->h);
    f->out = (rules_out){
        .append = cap_append, .commit = cap_commit, .notify = cap_notify, .errstr = cap_errstr, .ctx = f};
    return f;
}

static void fx_free(fx *f) {
    clear_caps(f);
    free(f->s);
    free(f->n);
    rules_file_free(f->file);
    promql_engine_free(f->e);
    tsdb_head_app_free(f->app);
    tsdb_head_close(f->h);
    free(f);
}

/* Input data: a series description's values at start, start + step, ... */
static void load(fx *f, const char *desc, int64_t start, int64_t step) {
    promql_series_desc d;
    memset(&d, 0, sizeof d);
    base_buf msg;
    base_buf_init(&msg, 0);
    int rc = promql_parse_series_desc(desc, strlen(desc), 0, &d, &msg);
    if (rc) fail_msg("%s: %s", desc, msg.data);
    base_buf_free(&msg);
    for (size_t i = 0; i < d.n; i++)
        if (!d.vals[i].omitted)
            assert_int_equal(tsdb_head_app_add(f->app, d.ls, start + (int64_t)i * step, d.vals[i].v), 0);
    assert_int_equal(tsdb_head_app_commit(f->app, NULL), 0);
    promql_series_desc_free(&d);
}

/* The group named `name` of a rule file given as text. */
static rules_gstate *group(fx *f, const char *yaml, size_t idx, int restored) {
    rules_errors errs;
    rules_file_free(f->file);
    f->file = NULL;
    int rc = rules_file_load_buf(yaml, strlen(yaml), "r.yml", &f->file, &errs);
    if (rc) fail_msg("rule file: %s", errs.n ? errs.e[0].msg : "?");
    rules_errors_free(&errs);
    rules_gstate *gs = NULL;
    assert_int_equal(rules_gstate_new(&f->file->groups[idx], "r.yml", MIN, &gs), 0);
    gs->restored = restored;
    return gs;
}

static void eval(fx *f, rules_gstate *gs, int64_t ts) {
    assert_int_equal(rules_gstate_eval(gs, &f->env, ts, &f->out), 0);
}

static int is_stale(double v) {
    uint64_t b;
    memcpy(&b, &v, sizeof b);
    return b == UINT64_C(0x7ff0000000000002);
}

/* The captured sample of series `ls` at t: its index, or -1. */
static int found(const fx *f, const char *ls, int64_t t) {
    for (size_t i = 0; i < f->ns; i++)
        if (f->s[i].t == t && strcmp(f->s[i].ls, ls) == 0) return (int)i;
    return -1;
}

static void expect_sample(const fx *f, const char *ls, int64_t t, double v) {
    int i = found(f, ls, t);
    if (i < 0) {
        for (size_t k = 0; k < f->ns; k++)
            fprintf(stderr, "  got %s @%lld = %g\n", f->s[k].ls, (long long)f->s[k].t, f->s[k].v);
        fail_msg("no sample %s at %lld", ls, (long long)t);
    }
    assert_false(is_stale(f->s[i].v));
    assert_true(f->s[i].v == v);
}

static void expect_stale(const fx *f, const char *ls, int64_t t) {
    int i = found(f, ls, t);
    if (i < 0) fail_msg("no stale marker for %s at %lld", ls, (long long)t);
    assert_true(is_stale(f->s[i].v));
}

/* ---- recording rules -------------------------------------------------------------- */

static void test_recording(void **state) {
    (void)state;
    fx *f = fx_new();
    load(f, "up{job=\"a\",instance=\"1\"} 1", T0, MIN);
    load(f, "up{job=\"a\",instance=\"2\"} 2", T0, MIN);
    load(f, "up{job=\"b\",instance=\"3\"} 5", T0, MIN);
    rules_gstate *gs = group(f,
                             "groups:\n- name: g\n  rules:\n"
                             "  - record: job:up:sum\n    expr: sum by (job) (up)\n    labels: {team: x}\n"
                             "  - record: one\n    expr: '1'\n"
                             "  - record: renamed\n    expr: up{job=\"b\"}\n    labels: {instance: ''}\n",
                             0, 0);
    assert_int_equal(gs->interval_ms, MIN);
    eval(f, gs, T0);
    expect_sample(f, "job:up:sum{job=\"a\", team=\"x\"}", T0, 3);
    expect_sample(f, "job:up:sum{job=\"b\", team=\"x\"}", T0, 5);
    expect_sample(f, "one", T0, 1);
    /* an empty rule label removes the label (Builder.Set) */
    expect_sample(f, "renamed{job=\"b\"}", T0, 5);
    assert_int_equal(f->ns, 4);
    for (size_t i = 0; i < gs->nrules; i++) {
        assert_int_equal(gs->rules[i].health, RULES_HEALTH_OK);
        assert_null(gs->rules[i].last_error);
        assert_int_equal(gs->rules[i].evals, 1);
        assert_int_equal(gs->rules[i].last_eval_ms, T0);
    }
    assert_int_equal(gs->evals, 1);
    assert_int_equal(gs->last_eval_ms, T0);
    assert_string_equal(rules_health_str(gs->rules[0].health), "ok");
    /* the recorded series are in the head: a query sees them */
    promql_result r;
    pq_expr *x;
    char err[128];
    assert_int_equal(promql_parse("job:up:sum", 10, &x, err, sizeof err), 0);
    assert_int_equal(promql_exec_instant(f->e, x, T0, NULL, &r), 0);
    assert_int_equal(r.nseries, 2);
    promql_result_free(&r);
    promql_expr_free(x);
    rules_gstate_free(gs);
    fx_free(f);
}

static void test_recording_stale(void **state) {
    (void)state;
    fx *f = fx_new();
    load(f, "up{job=\"a\"} 1 1 1 1 1 1 1 1 1 1 1", T0, MIN);
    load(f, "up{job=\"b\"} 2", T0, MIN);
    rules_gstate *gs = group(f, "groups:\n- name: g\n  rules:\n  - record: r\n    expr: up * 10\n", 0, 0);
    eval(f, gs, T0);
    expect_sample(f, "r{job=\"a\"}", T0, 10);
    expect_sample(f, "r{job=\"b\"}", T0, 20);
    clear_caps(f);
    /* b is gone after the 5m lookback: its series gets a stale marker,
     * once, and a's does not */
    eval(f, gs, T0 + 6 * MIN);
    expect_sample(f, "r{job=\"a\"}", T0 + 6 * MIN, 10);
    expect_stale(f, "r{job=\"b\"}", T0 + 6 * MIN);
    assert_int_equal(f->ns, 2);
    clear_caps(f);
    eval(f, gs, T0 + 7 * MIN);
    assert_int_equal(f->ns, 1);
    expect_sample(f, "r{job=\"a\"}", T0 + 7 * MIN, 10);
    clear_caps(f);
    /* a group removed by a reload: every series it wrote goes stale */
    assert_int_equal(rules_gstate_mark_stale(gs, T0 + 8 * MIN, &f->out), 0);
    assert_int_equal(f->ns, 1);
    expect_stale(f, "r{job=\"a\"}", T0 + 8 * MIN);
    rules_gstate_free(gs);
    fx_free(f);
}

static void test_recording_errors(void **state) {
    (void)state;
    fx *f = fx_new();
    load(f, "up{job=\"a\",instance=\"1\"} 1 1", T0, MIN);
    load(f, "up{job=\"a\",instance=\"2\"} _ 2", T0, MIN);
    load(f, "other{x=\"1\"} 1 1", T0, MIN);
    load(f, "other{x=\"1\",y=\"2\"} 1 1", T0, MIN);
    rules_gstate *gs = group(f,
                             "groups:\n- name: g\n  limit: 1\n  rules:\n"
                             "  - record: dup\n    expr: up\n    labels: {instance: same}\n"
                             "  - record: many\n    expr: other + on(x) up\n"
                             "  - record: lim\n    expr: up\n"
                             "  - record: str\n    expr: '\"s\"'\n",
                             0, 0);
    eval(f, gs, T0);
    /* one series each: dup and lim pass; `many` matches nothing */
    assert_int_equal(gs->rules[0].health, RULES_HEALTH_OK);
    assert_int_equal(gs->rules[1].health, RULES_HEALTH_OK);
    assert_int_equal(gs->rules[2].health, RULES_HEALTH_OK);
    assert_int_equal(gs->rules[3].health, RULES_HEALTH_ERR);
    assert_string_equal(gs->rules[3].last_error, "rule result is not a vector or scalar");
    expect_sample(f, "lim{instance=\"1\", job=\"a\"}", T0, 1);
    clear_caps(f);
    eval(f, gs, T0 + MIN);
    assert_int_equal(gs->rules[0].health, RULES_HEALTH_ERR);
    assert_string_equal(gs->rules[0].last_error,
                        "vector contains metrics with the same labelset after applying rule labels");
    assert_int_equal(gs->rules[2].health, RULES_HEALTH_ERR);
    assert_string_equal(gs->rules[2].last_error, "exceeded limit of 1 with 2 series");
    assert_int_equal(gs->rules[0].failures, 1);
    assert_int_equal(gs->rules[2].failures, 1);
    /* the query's own error: up's two series share on(x)'s group now */
    assert_int_equal(gs->rules[1].health, RULES_HEALTH_ERR);
    assert_non_null(strstr(gs->rules[1].last_error,
                           "found duplicate series for the match group {} on the right "
                           "hand-side of the operation"));
    assert_int_equal(gs->failures, 3 + 2); /* str failed twice */
    /* a failed rule writes nothing, not even the stale markers of the
     * series it wrote last round (2.42 returns before appending) */
    assert_int_equal(f->ns, 0);
    /* success clears the error */
    clear_caps(f);
    rules_gstate_free(gs);
    gs = group(f, "groups:\n- name: g\n  rules:\n  - record: ok\n    expr: up\n", 0, 0);
    f->fail_commit = 1;
    eval(f, gs, T0 + MIN);
    assert_int_equal(gs->rules[0].health, RULES_HEALTH_ERR);
    assert_string_equal(gs->rules[0].last_error, "write failed");
    assert_int_equal(gs->rules[0].failures, 1);
    f->fail_commit = 0;
    eval(f, gs, T0 + MIN);
    assert_int_equal(gs->rules[0].health, RULES_HEALTH_OK);
    assert_null(gs->rules[0].last_error);
    rules_gstate_free(gs);
    fx_free(f);
}

/* ---- alerting rules ------------------------------------------------------------------- */

static const char *ALERT_RULES = "groups:\n- name: g\n  interval: 30s\n  rules:\n"
                                 "  - alert: Hot\n    expr: temp > 80\n    for: 2m\n"
                                 "    labels: {severity: page}\n"
                                 "    annotations: {summary: 'hot {{ $value }}'}\n";

static const rules_alert *only_alert(const rules_gstate *gs) {
    assert_int_equal(gs->rules[0].nalerts, 1);
    return &gs->rules[0].alerts[0];
}

static void test_alert_states(void **state) {
    (void)state;
    fx *f = fx_new();
    /* 0m 1m ... : below, above for 4 minutes, then gone */
    load(f, "temp{gpu=\"0\"} 50 90 91 92 93 94 10 10 10 10 10 10 10 10 10 10 10 10 10 10 10 10 10 10 10", T0,
         MIN);
    rules_gstate *gs = group(f, ALERT_RULES, 0, 1);
    assert_int_equal(gs->interval_ms, 30000);
    eval(f, gs, T0);
    assert_int_equal(gs->rules[0].nalerts, 0);
    assert_int_equal(f->ns, 0);

    eval(f, gs, T0 + MIN);
    const rules_alert *a = only_alert(gs);
    assert_int_equal(a->state, RULES_PENDING);
    assert_int_equal(a->active_at_ms, T0 + MIN);
    assert_true(a->value == 90);
    base_buf b;
    base_buf_init(&b, 0);
    labels_format(a->labels, &b);
    assert_string_equal(b.data, "{alertname=\"Hot\", gpu=\"0\", severity=\"page\"}");
    base_buf_free(&b);
    assert_int_equal(a->nannotations, 1);
    assert_string_equal(a->annotations[0].value, "hot 90");
    expect_sample(f, "ALERTS{alertname=\"Hot\", alertstate=\"pending\", gpu=\"0\", severity=\"page\"}",
                  T0 + MIN, 1);
    expect_sample(f, "ALERTS_FOR_STATE{alertname=\"Hot\", gpu=\"0\", severity=\"page\"}", T0 + MIN,
                  (double)((T0 + MIN) / 1000));
    assert_int_equal(f->ns, 2);
    clear_caps(f);

    eval(f, gs, T0 + 2 * MIN);
    a = only_alert(gs);
    assert_int_equal(a->state, RULES_PENDING); /* 1m of 2m */
    assert_string_equal(a->annotations[0].value, "hot 91");
    clear_caps(f);

    eval(f, gs, T0 + 3 * MIN);
    a = only_alert(gs);
    assert_int_equal(a->state, RULES_FIRING);
    assert_int_equal(a->fired_at_ms, T0 + 3 * MIN);
    assert_int_equal(a->active_at_ms, T0 + MIN);
    expect_sample(f, "ALERTS{alertname=\"Hot\", alertstate=\"firing\", gpu=\"0\", severity=\"page\"}",
                  T0 + 3 * MIN, 1);
    /* the pending series ended */
    expect_stale(f, "ALERTS{alertname=\"Hot\", alertstate=\"pending\", gpu=\"0\", severity=\"page\"}",
                 T0 + 3 * MIN);
    expect_sample(f, "ALERTS_FOR_STATE{alertname=\"Hot\", gpu=\"0\", severity=\"page\"}", T0 + 3 * MIN,
                  (double)((T0 + MIN) / 1000));
    assert_int_equal(f->ns, 3);
    clear_caps(f);

    eval(f, gs, T0 + 6 * MIN); /* the condition cleared */
    a = only_alert(gs);
    assert_int_equal(a->state, RULES_INACTIVE);
    assert_int_equal(a->resolved_at_ms, T0 + 6 * MIN);
    expect_stale(f, "ALERTS{alertname=\"Hot\", alertstate=\"firing\", gpu=\"0\", severity=\"page\"}",
                 T0 + 6 * MIN);
    expect_stale(f, "ALERTS_FOR_STATE{alertname=\"Hot\", gpu=\"0\", severity=\"page\"}", T0 + 6 * MIN);
    assert_int_equal(f->ns, 2);
    clear_caps(f);

    /* kept 15 minutes after its resolution, then dropped */
    eval(f, gs, T0 + 21 * MIN);
    assert_int_equal(gs->rules[0].nalerts, 1);
    assert_int_equal(f->ns, 0);
    eval(f, gs, T0 + 21 * MIN + 1);
    assert_int_equal(gs->rules[0].nalerts, 0);
    assert_string_equal(rules_astate_str(RULES_FIRING), "firing");
    rules_gstate_free(gs);
    fx_free(f);
}

static void test_alert_pending_dropped_and_not_restored(void **state) {
    (void)state;
    fx *f = fx_new();
    load(f, "temp{gpu=\"0\"} 90 10", T0, MIN);
    rules_gstate *gs = group(f, ALERT_RULES, 0, 0); /* not restored: no ALERTS */
    eval(f, gs, T0);
    assert_int_equal(only_alert(gs)->state, RULES_PENDING);
    assert_int_equal(f->ns, 0);
    eval(f, gs, T0 + MIN);
    /* a pending alert whose condition clears is forgotten, not resolved */
    assert_int_equal(gs->rules[0].nalerts, 0);
    assert_int_equal(f->nn, 0);
    rules_gstate_free(gs);
    fx_free(f);
}

static void test_keep_firing_for(void **state) {
    (void)state;
    fx *f = fx_new();
    /* above at 0..1m, below at 2m, above at 3m, below from 4m */
    load(f, "temp{gpu=\"0\"} 90 90 10 90 10 10 10 10 10 10", T0, MIN);
    rules_gstate *gs = group(f,
                             "groups:\n- name: g\n  rules:\n  - alert: Hot\n    expr: temp > 80\n"
                             "    keep_firing_for: 3m\n",
                             0, 1);
    eval(f, gs, T0);
    assert_int_equal(only_alert(gs)->state, RULES_FIRING); /* for: 0 fires at once */
    eval(f, gs, T0 + 2 * MIN);
    const rules_alert *a = only_alert(gs);
    assert_int_equal(a->state, RULES_FIRING);
    assert_int_equal(a->keep_firing_since_ms, T0 + 2 * MIN);
    eval(f, gs, T0 + 3 * MIN); /* back: the keep timer resets */
    a = only_alert(gs);
    assert_int_equal(a->keep_firing_since_ms, 0);
    clear_caps(f);
    eval(f, gs, T0 + 4 * MIN);
    eval(f, gs, T0 + 5 * MIN);
    eval(f, gs, T0 + 6 * MIN);
    a = only_alert(gs);
    assert_int_equal(a->state, RULES_FIRING); /* 2m of 3m */
    assert_int_equal(a->keep_firing_since_ms, T0 + 4 * MIN);
    expect_sample(f, "ALERTS{alertname=\"Hot\", alertstate=\"firing\", gpu=\"0\"}", T0 + 6 * MIN, 1);
    eval(f, gs, T0 + 7 * MIN);
    a = only_alert(gs);
    assert_int_equal(a->state, RULES_INACTIVE);
    assert_int_equal(a->resolved_at_ms, T0 + 7 * MIN);
    rules_gstate_free(gs);
    fx_free(f);
}

static void test_alert_errors_and_limit(void **state) {
    (void)state;
    fx *f = fx_new();
    load(f, "temp{gpu=\"0\",host=\"a\"} 90 90", T0, MIN);
    load(f, "temp{gpu=\"1\",host=\"a\"} _ 95", T0, MIN);
    rules_gstate *gs = group(f,
                             "groups:\n- name: g\n  limit: 1\n  rules:\n"
                             "  - alert: Lim\n    expr: temp > 80\n"
                             "  - alert: Dup\n    expr: temp > 80\n    labels: {gpu: all}\n",
                             0, 1);
    eval(f, gs, T0);
    assert_int_equal(gs->rules[0].nalerts, 1);
    assert_int_equal(gs->rules[1].health, RULES_HEALTH_OK);
    clear_caps(f);
    eval(f, gs, T0 + MIN);
    assert_int_equal(gs->rules[0].health, RULES_HEALTH_ERR);
    assert_string_equal(gs->rules[0].last_error, "exceeded limit of 1 with 2 alerts");
    assert_int_equal(gs->rules[0].nalerts, 0); /* 2.42 forgets them all */
    assert_int_equal(gs->rules[1].health, RULES_HEALTH_ERR);
    assert_string_equal(gs->rules[1].last_error,
                        "vector contains metrics with the same labelset after applying alert labels");
    assert_int_equal(gs->rules[1].nalerts, 1); /* the state before the failed round stays */
    assert_int_equal(f->ns, 0);
    assert_int_equal(f->nn, 0);
    rules_gstate_free(gs);
    fx_free(f);
}

static void test_templates(void **state) {
    (void)state;
    fx *f = fx_new();
    load(f, "temp{gpu=\"0\",node=\"n1\"} 1234", T0, MIN);
    load(f, "fleet_size 8", T0, MIN);
    labels_set *ext = NULL;
    assert_int_equal(labels_from_cstrs(&ext, "dc", "east", NULL), 0);
    f->env.external_labels = ext;
    f->env.external_url = "http://k:9090";
    rules_gstate *gs = group(f,
                             "groups:\n- name: g\n  rules:\n"
                             "  - alert: T\n    expr: temp > 0\n"
                             "    labels:\n"
                             "      node: 'host-{{ $labels.node }}'\n"
                             "      dc: '{{ $externalLabels.dc }}'\n"
                             "      empty: '{{ if false }}x{{ end }}'\n"
                             "    annotations:\n"
                             "      z: '{{ $value | humanize }} of {{ with query \"fleet_size\" }}{{ . | "
                             "first | value }}{{ end }}'\n"
                             "      a: '{{ $externalURL }} {{ $labels.__name__ }}'\n"
                             "      bad: '{{ index $labels 1 }}'\n",
                             0, 1);
    eval(f, gs, T0);
    const rules_alert *a = only_alert(gs);
    base_buf b;
    base_buf_init(&b, 0);
    labels_format(a->labels, &b);
    /* template output replaces the sample's node; the empty one is gone */
    assert_string_equal(b.data, "{alertname=\"T\", dc=\"east\", gpu=\"0\", node=\"host-n1\"}");
    base_buf_free(&b);
    /* annotations sorted by name, as labels.FromMap sorts them */
    assert_int_equal(a->nannotations, 3);
    assert_string_equal(a->annotations[0].name, "a");
    assert_string_equal(a->annotations[0].value, "http://k:9090 temp");
    assert_string_equal(a->annotations[1].name, "bad");
    assert_string_equal(
        a->annotations[1].value,
        "<error expanding template: error executing template __alert_T: template: __alert_T:1:115: "
        "executing \"__alert_T\" at <index $labels 1>: error calling index: value has type int; "
        "should be string>");
    assert_string_equal(a->annotations[2].name, "z");
    assert_string_equal(a->annotations[2].value, "1.234k of 8");
    /* ALERTS start from the raw rule labels, as 2.42's sample() does */
    expect_sample(
        f,
        "ALERTS{alertname=\"T\", alertstate=\"firing\", dc=\"east\", empty=\"{{ if false }}x{{ end }}\", "
        "gpu=\"0\", node=\"host-n1\"}",
        T0, 1);
    rules_gstate_free(gs);
    labels_unref(ext);
    fx_free(f);
}

static void test_notify(void **state) {
    (void)state;
    fx *f = fx_new();
    load(f, "temp{gpu=\"0\"} 90 90 90 90 90 10 10 10 10", T0, MIN);
    f->env.external_url = "http://x";
    f->env.resend_delay_ms = MIN;
    rules_gstate *gs = group(f,
                             "groups:\n- name: g\n  interval: 2m\n  rules:\n"
                             "  - alert: Hot\n    expr: temp   >   80\n    for: 1m\n"
                             "    annotations: {s: v}\n",
                             0, 1);
    eval(f, gs, T0);
    assert_int_equal(f->notify_calls, 0); /* pending is never sent */
    eval(f, gs, T0 + MIN);
    assert_int_equal(f->nn, 1);
    assert_string_equal(f->n[0].labels, "{alertname=\"Hot\", gpu=\"0\"}");
    assert_string_equal(f->n[0].anns, "s=v");
    assert_string_equal(f->n[0].url, "http://x/graph?g0.expr=temp+%3E+80&g0.tab=1");
    assert_int_equal(f->n[0].start, T0 + MIN); /* FiredAt */
    /* ValidUntil: 4 x max(resend delay, interval) */
    assert_int_equal(f->n[0].end, T0 + MIN + 4 * 2 * MIN);
    assert_int_equal(only_alert(gs)->last_sent_ms, T0 + MIN);
    assert_int_equal(only_alert(gs)->valid_until_ms, T0 + MIN + 8 * MIN);
    clear_caps(f);
    /* sent again only once the resend delay has passed */
    eval(f, gs, T0 + 2 * MIN);
    assert_int_equal(f->nn, 0);
    eval(f, gs, T0 + 2 * MIN + 1);
    assert_int_equal(f->nn, 1);
    clear_caps(f);
    /* resolved: sent at once with its resolution as the end */
    eval(f, gs, T0 + 5 * MIN);
    assert_int_equal(f->nn, 1);
    assert_int_equal(f->n[0].end, T0 + 5 * MIN);
    assert_int_equal(f->n[0].start, T0 + MIN);
    clear_caps(f);
    eval(f, gs, T0 + 5 * MIN + 30000);
    assert_int_equal(f->nn, 0);
    eval(f, gs, T0 + 6 * MIN + 1); /* still resent while retained */
    assert_int_equal(f->nn, 1);
    assert_int_equal(f->n[0].end, T0 + 5 * MIN);
    rules_gstate_free(gs);
    fx_free(f);
}

/* ---- CopyState ------------------------------------------------------------------------- */

static void test_copy_state(void **state) {
    (void)state;
    fx *f = fx_new();
    load(f, "temp{gpu=\"0\"} 90 90 90 90", T0, MIN);
    const char *old_rules = "groups:\n- name: g\n  rules:\n"
                            "  - record: r1\n    expr: temp\n"
                            "  - alert: Hot\n    expr: temp > 80\n    for: 5m\n    labels: {a: b}\n"
                            "  - record: gone\n    expr: temp * 2\n";
    const char *new_rules = "groups:\n- name: g\n  rules:\n"
                            "  - alert: Hot\n    expr: temp > 81\n    for: 5m\n    labels: {a: b}\n"
                            "  - alert: Hot\n    expr: temp > 80\n    labels: {a: c}\n"
                            "  - record: r1\n    expr: temp + 0\n";
    rules_gstate *from = group(f, old_rules, 0, 1);
    eval(f, from, T0);
    eval(f, from, T0 + MIN);
    assert_int_equal(from->rules[1].nalerts, 1);
    rules_gstate *to = group(f, new_rules, 0, 1);
    rules_gstate_copy_state(to, from);
    assert_int_equal(to->last_eval_ms, T0 + MIN);
    assert_int_equal(to->evals, 2);
    /* matched by name and labels: the alert keeps its active_at */
    assert_int_equal(to->rules[0].nalerts, 1);
    assert_int_equal(to->rules[0].alerts[0].active_at_ms, T0);
    assert_int_equal(to->rules[1].nalerts, 0);
    assert_int_equal(from->rules[1].nalerts, 0);
    /* 2.42 does not carry health over */
    assert_int_equal(to->rules[2].health, RULES_HEALTH_UNKNOWN);
    rules_gstate_free(from);
    clear_caps(f);
    eval(f, to, T0 + 2 * MIN);
    assert_int_equal(to->rules[0].alerts[0].active_at_ms, T0);
    /* the removed rule's series goes stale; r1's does not */
    expect_stale(f, "gone{gpu=\"0\"}", T0 + 2 * MIN);
    expect_sample(f, "r1{gpu=\"0\"}", T0 + 2 * MIN, 90);
    assert_int_equal(found(f, "r1{gpu=\"0\"}", T0 + 2 * MIN) >= 0, 1);
    size_t stale = 0;
    for (size_t i = 0; i < f->ns; i++) stale += is_stale(f->s[i].v);
    assert_int_equal(stale, 1);
    clear_caps(f);
    eval(f, to, T0 + 3 * MIN); /* once only */
    for (size_t i = 0; i < f->ns; i++) assert_false(is_stale(f->s[i].v));
    rules_gstate_free(to);
    fx_free(f);
}

/* ---- RestoreForState --------------------------------------------------------------------- */

static const char *RESTORE_RULES = "groups:\n- name: g\n  rules:\n"
                                   "  - alert: Pending30\n    expr: m > 0\n    for: 30m\n"
                                   "  - alert: Firing10\n    expr: m > 0\n    for: 10m\n"
                                   "  - alert: Short5\n    expr: m > 0\n    for: 5m\n"
                                   "  - alert: Grace20\n    expr: m > 0\n    for: 20m\n";

static void test_restore(void **state) {
    (void)state;
    fx *f = fx_new();
    load(f, "m{x=\"1\"} 1x40", T0, MIN);
    rules_gstate *gs = group(f, RESTORE_RULES, 0, 1);
    for (int64_t k = 0; k <= 15; k++) eval(f, gs, T0 + k * MIN);
    assert_int_equal(gs->rules[0].alerts[0].state, RULES_PENDING);
    assert_int_equal(gs->rules[1].alerts[0].state, RULES_FIRING);
    rules_gstate_free(gs); /* the process stops at T0+15m ... */

    /* ... and starts again at T0+20m (and some ms): a new gstate, not
     * restored, evaluates once and then restores */
    const int64_t R = T0 + 20 * MIN + 250;
    gs = group(f, RESTORE_RULES, 0, 0);
    clear_caps(f);
    eval(f, gs, R);
    assert_int_equal(f->ns, 0);
    for (size_t i = 0; i < 4; i++) {
        assert_int_equal(gs->rules[i].alerts[0].state, RULES_PENDING);
        assert_int_equal(gs->rules[i].alerts[0].active_at_ms, R);
    }
    assert_int_equal(rules_gstate_restore(gs, &f->env, R), 0);
    assert_true(gs->restored);
    const int64_t down = T0 + 15 * MIN;
    /* 15m spent of 30m: the rest (>= the grace period) after the downtime */
    assert_int_equal(gs->rules[0].alerts[0].active_at_ms, T0 + (R - down));
    /* it was firing: its old active_at, so the next round fires it */
    assert_int_equal(gs->rules[1].alerts[0].active_at_ms, T0);
    /* `for` below the grace period: not restored */
    assert_int_equal(gs->rules[2].alerts[0].active_at_ms, R);
    /* 5m left, less than the 10m grace period: fires 10m after the restart */
    assert_int_equal(gs->rules[3].alerts[0].active_at_ms, R + 10 * MIN - 20 * MIN);
    eval(f, gs, R + MIN);
    assert_int_equal(gs->rules[0].alerts[0].state, RULES_PENDING);
    assert_int_equal(gs->rules[1].alerts[0].state, RULES_FIRING);
    assert_int_equal(gs->rules[2].alerts[0].state, RULES_PENDING);
    assert_int_equal(gs->rules[3].alerts[0].state, RULES_PENDING);
    /* now restored: ALERTS_FOR_STATE carries the restored active_at */
    expect_sample(f, "ALERTS_FOR_STATE{alertname=\"Firing10\", x=\"1\"}", R + MIN, (double)(T0 / 1000));
    expect_sample(f, "ALERTS{alertname=\"Firing10\", alertstate=\"firing\", x=\"1\"}", R + MIN, 1);
    eval(f, gs, R + 10 * MIN);
    assert_int_equal(gs->rules[3].alerts[0].state, RULES_FIRING);
    rules_gstate_free(gs);
    fx_free(f);
}

static void test_restore_outage(void **state) {
    (void)state;
    fx *f = fx_new();
    load(f, "m{x=\"1\"} 1x100", T0, MIN);
    rules_gstate *gs = group(f, RESTORE_RULES, 0, 1);
    for (int64_t k = 0; k <= 15; k++) eval(f, gs, T0 + k * MIN);
    rules_gstate_free(gs);
    /* down longer than the outage tolerance (1h): nothing is restored */
    const int64_t late = T0 + 15 * MIN + 61 * MIN;
    gs = group(f, RESTORE_RULES, 0, 0);
    eval(f, gs, late);
    assert_int_equal(rules_gstate_restore(gs, &f->env, late), 0);
    for (size_t i = 0; i < 4; i++) assert_int_equal(gs->rules[i].alerts[0].active_at_ms, late);
    rules_gstate_free(gs);
    /* within it, with a tolerance made shorter, the same */
    gs = group(f, RESTORE_RULES, 0, 0);
    const int64_t soon = T0 + 20 * MIN;
    f->env.outage_tolerance_ms = 4 * MIN;
    eval(f, gs, soon);
    assert_int_equal(rules_gstate_restore(gs, &f->env, soon), 0);
    assert_int_equal(gs->rules[1].alerts[0].active_at_ms, soon);
    f->env.outage_tolerance_ms = 6 * MIN;
    assert_int_equal(rules_gstate_restore(gs, &f->env, soon), 0);
    assert_int_equal(gs->rules[1].alerts[0].active_at_ms, T0);
    rules_gstate_free(gs);
    fx_free(f);
}

/* ---- EvalTimestamp ------------------------------------------------------------------------- */

static void test_eval_ts(void **state) {
    (void)state;
    fx *f = fx_new();
    rules_gstate *gs = group(f, "groups:\n- name: mygroup\n  rules:\n  - record: r\n    expr: '1'\n", 0, 0);
    /* labels.FromStrings("name", "mygroup", "file", "r.yml").Hash() */
    const char key[] = "file\xffr.yml\xffname\xffmygroup\xff";
    uint64_t h = XXH64(key, sizeof key - 1, 0);
    int64_t iv = MIN * 1000000; /* ns */
    int64_t offset = (int64_t)(h % (uint64_t)iv);
    const int64_t now = T0 + 12345;
    int64_t ts = rules_gstate_eval_ts(gs, now);
    assert_true(ts <= now && ts > now - MIN);
    /* ts is the slot (offset past a multiple of the interval, in ns)
     * cut to whole milliseconds */
    int64_t r = ((ts * 1000000 - offset) % iv + iv) % iv;
    assert_true(r == 0 || r > iv - 1000000);
    /* the same slot until the next one (the slot itself lies within the
     * millisecond after ts) */
    assert_int_equal(rules_gstate_eval_ts(gs, ts + 1), ts);
    assert_int_equal(rules_gstate_eval_ts(gs, ts + MIN - 1), ts);
    int64_t at_min = rules_gstate_eval_ts(gs, ts + MIN);
    assert_true(at_min == ts || at_min == ts + MIN);
    assert_int_equal(rules_gstate_eval_ts(gs, ts + MIN + 1), ts + MIN);
    assert_int_equal(rules_gstate_eval_ts(gs, ts + 1 + 5 * MIN), ts + 5 * MIN);
    rules_gstate_free(gs);
    fx_free(f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_recording),
        cmocka_unit_test(test_recording_stale),
        cmocka_unit_test(test_recording_errors),
        cmocka_unit_test(test_alert_states),
        cmocka_unit_test(test_alert_pending_dropped_and_not_restored),
        cmocka_unit_test(test_keep_firing_for),
        cmocka_unit_test(test_alert_errors_and_limit),
        cmocka_unit_test(test_templates),
        cmocka_unit_test(test_notify),
        cmocka_unit_test(test_copy_state),
        cmocka_unit_test(test_restore),
        cmocka_unit_test(test_restore_outage),
        cmocka_unit_test(test_eval_ts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
