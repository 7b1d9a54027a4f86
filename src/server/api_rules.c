/* api_rules.c -- /api/v1/rules, /api/v1/alerts and /api/v1/alertmanagers
 * as 2.42's web/api/v1 answers them, from the rule manager's groups and
 * the notifier's alertmanagers.
 *
 * Shapes (2.42's RuleGroup, AlertingRule, RecordingRule, Alert):
 *   {"groups":[{"name","file","rules":[...],"interval":s,"limit":n,
 *               "evaluationTime":s,"lastEvaluation":RFC3339}]}
 *   alerting: {"state","name","query","duration","keepFiringFor","labels",
 *              "annotations","alerts":[...],"health","lastError"?,
 *              "evaluationTime","lastEvaluation","type":"alerting"}
 *   recording: {"name","query","labels"?,"health","lastError"?,
 *               "evaluationTime","lastEvaluation","type":"recording"}
 *   alert: {"labels","annotations","state","activeAt","keepFiringSince"?,
 *           "value": FormatFloat(v, 'e', -1, 64)}
 * Groups come sorted by file, then name (2.42's RuleGroups); a group's
 * rules in file order; a rule's alerts by labels (2.42 walks a Go map,
 * so its order varies). "query" is the expression as PromQL prints it
 * (2.42's rule.Query().String()). Times are UTC.
 */
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/num.h"
#include "notify/notify.h"
#include "rules/manager.h"
#include "server/server_int.h"

static void json_time_ms(base_buf *b, int64_t ms) {
    if (ms == 0) {
        base_buf_puts(b, "\"0001-01-01T00:00:00Z\""); /* Go's zero time */
        return;
    }
    int64_t sec = ms / 1000, rem = ms % 1000;
    if (rem < 0) sec--, rem += 1000;
    server__json_time(b, sec, rem * 1000000);
}

static int cmp_kv(const void *a, const void *b) {
    return strcmp(((const rules_kv *)a)->name, ((const rules_kv *)b)->name);
}

/* labels.FromMap(m) as JSON: sorted by name. */
static void json_kvs(base_buf *b, const rules_kv *kv, size_t n) {
    rules_kv *s = n ? malloc(n * sizeof *s) : NULL;
    if (n && !s) {
        b->err = b->err ? b->err : BASE_E_NOMEM;
        return;
    }
    if (n) memcpy(s, kv, n * sizeof *s);
    if (n) qsort(s, n, sizeof *s, cmp_kv);
    base_buf_putc(b, '{');
    for (size_t i = 0; i < n; i++) {
        if (i) base_buf_putc(b, ',');
        base_buf_json_str(b, s[i].name, strlen(s[i].name));
        base_buf_putc(b, ':');
        base_buf_json_str(b, s[i].value, strlen(s[i].value));
    }
    base_buf_putc(b, '}');
    free(s);
}

static void json_alert(base_buf *b, const rules_alert *a) {
    base_buf_puts(b, "{\"labels\":");
    server__json_labels(b, a->labels);
    base_buf_puts(b, ",\"annotations\":");
    json_kvs(b, a->annotations, a->nannotations);
    base_buf_printf(b, ",\"state\":\"%s\",\"activeAt\":", rules_astate_str(a->state));
    json_time_ms(b, a->active_at_ms);
    if (a->keep_firing_since_ms) {
        base_buf_puts(b, ",\"keepFiringSince\":");
        json_time_ms(b, a->keep_firing_since_ms);
    }
    base_buf_puts(b, ",\"value\":\"");
    char num[BASE_FMT_DOUBLE_MAX]; /* strconv.FormatFloat(v, 'e', -1, 64) */
    base_buf_append(b, num, base_fmt_double_e(num, a->value, 0));
    base_buf_puts(b, "\"}");
}

static rules_astate rule_state(const rules_rstate *r) {
    rules_astate st = RULES_INACTIVE;
    for (size_t i = 0; i < r->nalerts; i++)
        if (r->alerts[i].state > st) st = r->alerts[i].state;
    return st;
}

typedef struct rules_walk {
    base_buf *b;
    int want_alert, want_record;
    size_t ngroups;
    size_t nalerts; /* /api/v1/alerts */
} rules_walk;

static void json_rule(base_buf *b, const rules_rstate *r) {
    const rules_rule *rule = r->rule;
    base_buf q;
    base_buf_init(&q, 0);
    promql_print(promql_expr_root(rule->parsed), &q);
    int alert = rule->kind == RULES_ALERT;
    base_buf_putc(b, '{');
    if (alert) base_buf_printf(b, "\"state\":\"%s\",", rules_astate_str(rule_state(r)));
    base_buf_puts(b, "\"name\":");
    base_buf_json_str(b, rule->name, strlen(rule->name));
    base_buf_puts(b, ",\"query\":");
    base_buf_json_str(b, q.data ? q.data : "", q.len);
    base_buf_free(&q);
    if (alert) {
        base_buf_puts(b, ",\"duration\":");
        server__json_float(b, (double)rule->for_ms / 1000.0);
        base_buf_puts(b, ",\"keepFiringFor\":");
        server__json_float(b, (double)rule->keep_firing_for_ms / 1000.0);
    }
    if (alert || rule->nlabels) {
        base_buf_puts(b, ",\"labels\":");
        json_kvs(b, rule->labels, rule->nlabels);
    }
    if (alert) {
        base_buf_puts(b, ",\"annotations\":");
        json_kvs(b, rule->annotations, rule->nannotations);
        base_buf_puts(b, ",\"alerts\":[");
        size_t k = 0;
        for (size_t i = 0; i < r->nalerts; i++) {
            if (r->alerts[i].state == RULES_INACTIVE) continue; /* ActiveAlerts */
            if (k++) base_buf_putc(b, ',');
            json_alert(b, &r->alerts[i]);
        }
        base_buf_putc(b, ']');
    }
    base_buf_printf(b, ",\"health\":\"%s\"", rules_health_str(r->health));
    if (r->last_error && r->last_error[0]) {
        base_buf_puts(b, ",\"lastError\":");
        base_buf_json_str(b, r->last_error, strlen(r->last_error));
    }
    base_buf_puts(b, ",\"evaluationTime\":");
    server__json_float(b, (double)r->eval_ns / 1e9);
    base_buf_puts(b, ",\"lastEvaluation\":");
    json_time_ms(b, r->last_eval_ms);
    base_buf_printf(b, ",\"type\":\"%s\"}", alert ? "alerting" : "recording");
}

static void visit_group(void *ctx, rules_gstate *gs, const rules_group_stats *st) {
    (void)st;
    rules_walk *w = ctx;
    base_buf *b = w->b;
    pthread_mutex_lock(&gs->mu);
    if (w->ngroups++) base_buf_putc(b, ',');
    base_buf_puts(b, "{\"name\":");
    base_buf_json_str(b, gs->group->name, strlen(gs->group->name));
    base_buf_puts(b, ",\"file\":");
    base_buf_json_str(b, gs->file, strlen(gs->file));
    base_buf_puts(b, ",\"rules\":[");
    size_t k = 0;
    for (size_t i = 0; i < gs->nrules; i++) {
        int alert = gs->rules[i].rule->kind == RULES_ALERT;
        if ((alert && !w->want_alert) || (!alert && !w->want_record)) continue;
        if (k++) base_buf_putc(b, ',');
        json_rule(b, &gs->rules[i]);
    }
    base_buf_puts(b, "],\"interval\":");
    server__json_float(b, (double)gs->interval_ms / 1000.0);
    base_buf_printf(b, ",\"limit\":%lld,\"evaluationTime\":", (long long)gs->group->limit);
    server__json_float(b, (double)gs->eval_ns / 1e9);
    base_buf_puts(b, ",\"lastEvaluation\":");
    json_time_ms(b, gs->last_eval_ms);
    base_buf_putc(b, '}');
    pthread_mutex_unlock(&gs->mu);
}

void server__api_rules(api_ctx *c) {
    base_str typ = http_form_get(&c->form, "type");
    base_buf low;
    base_buf_init(&low, 0);
    for (size_t i = 0; i < typ.n; i++) /* strings.ToLower (ASCII) */
        base_buf_putc(&low, (char)(typ.p[i] >= 'A' && typ.p[i] <= 'Z' ? typ.p[i] + 32 : typ.p[i]));
    base_str t = {low.data ? low.data : "", low.len};
    if (t.n && !base_str_eqc(t, "alert") && !base_str_eqc(t, "record")) {
        base_buf q;
        base_buf_init(&q, 0);
        server__quote(&q, t.p, t.n);
        char msg[600];
        snprintf(msg, sizeof msg, "not supported value %s", q.err ? "\"\"" : q.data);
        base_buf_free(&q);
        base_buf_free(&low);
        server__api_invalid_param(c, "type", msg);
        return;
    }
    base_buf b;
    base_buf_init(&b, 0);
    rules_walk w = {&b, !t.n || base_str_eqc(t, "alert"), !t.n || base_str_eqc(t, "record"), 0, 0};
    base_buf_free(&low);
    server__api_begin(&b);
    base_buf_puts(&b, "{\"groups\":[");
    if (c->s->rules) rules_manager_visit(c->s->rules, visit_group, &w);
    base_buf_puts(&b, "]}");
    server__api_end(c, &b);
}

static void visit_alerts(void *ctx, rules_gstate *gs, const rules_group_stats *st) {
    (void)st;
    rules_walk *w = ctx;
    pthread_mutex_lock(&gs->mu);
    for (size_t i = 0; i < gs->nrules; i++)
        for (size_t j = 0; j < gs->rules[i].nalerts; j++) {
            const rules_alert *a = &gs->rules[i].alerts[j];
            if (a->state == RULES_INACTIVE) continue;
            if (w->nalerts++) base_buf_putc(w->b, ',');
            json_alert(w->b, a);
        }
    pthread_mutex_unlock(&gs->mu);
}

void server__api_alerts(api_ctx *c) {
    base_buf b;
    base_buf_init(&b, 0);
    rules_walk w = {&b, 1, 1, 0, 0};
    server__api_begin(&b);
    base_buf_puts(&b, "{\"alerts\":[");
    if (c->s->rules) rules_manager_visit(c->s->rules, visit_alerts, &w);
    base_buf_puts(&b, "]}");
    server__api_end(c, &b);
}

static void json_urls(base_buf *b, char **urls, size_t n) {
    base_buf_putc(b, '[');
    for (size_t i = 0; i < n; i++) {
        if (i) base_buf_putc(b, ',');
        base_buf_puts(b, "{\"url\":");
        base_buf_json_str(b, urls[i], strlen(urls[i]));
        base_buf_putc(b, '}');
    }
    base_buf_putc(b, ']');
}

void server__api_alertmanagers(api_ctx *c) {
    char **act = NULL, **drop = NULL;
    size_t nact = 0, ndrop = 0;
    base_buf b;
    base_buf_init(&b, 0);
    if (c->s->notify && notify_alertmanagers(c->s->notify, &act, &nact, &drop, &ndrop) != 0)
        b.err = BASE_E_NOMEM;
    server__api_begin(&b);
    base_buf_puts(&b, "{\"activeAlertmanagers\":");
    json_urls(&b, act, nact);
    base_buf_puts(&b, ",\"droppedAlertmanagers\":");
    json_urls(&b, drop, ndrop);
    base_buf_putc(&b, '}');
    server__api_end(c, &b);
    notify_strv_free(act, nact);
    notify_strv_free(drop, ndrop);
}
