/* conf.c -- a queue's own copy of its remote_write entry (remote_conf): deep
 * copies (the configuration may be freed after remote_manager_apply),
 * equality for reloads (2.42 restarts a queue whose config hash or external
 * labels changed: every field counts), and the queue's identity.
 *
 * IDENTITY: xxh3-64 of url NUL name NUL rank, rank being the number of
 * earlier entries with the same url and name (two otherwise different
 * entries for one endpoint keep distinct positions). It names the position
 * file; without a name, 6 hex digits of it are the queue's remote_name
 * (2.42 uses 6 hex digits of its config hash there).
 *
 * Queue settings are sanitised as 2.42 would need them to be usable:
 * capacity, max_samples_per_send and the shard counts at least 1,
 * max_shards at least min_shards, backoffs at least 0 (max >= min).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "base/err.h"
#include "remote/remote_int.h"

uint64_t remote__conf_id(const char *url, const char *name, unsigned rank) {
    XXH3_state_t *st = XXH3_createState();
    if (!st) return XXH3_64bits(url, strlen(url)) ^ rank;
    XXH3_64bits_reset(st);
    XXH3_64bits_update(st, url, strlen(url) + 1);
    XXH3_64bits_update(st, name, strlen(name) + 1);
    char r[16];
    int n = snprintf(r, sizeof r, "%u", rank);
    XXH3_64bits_update(st, r, (size_t)n);
    uint64_t h = XXH3_64bits_digest(st);
    XXH3_freeState(st);
    return h;
}

static char *dup(const char *s) {
    return strdup(s ? s : "");
}

static int kvs_copy(cfg_kvs *dst, const cfg_kvs *src) {
    dst->n = 0;
    dst->v = src->n ? calloc(src->n, sizeof *dst->v) : NULL;
    if (src->n && !dst->v) return BASE_E_NOMEM;
    for (size_t i = 0; i < src->n; i++) {
        dst->v[i].name = dup(src->v[i].name);
        dst->v[i].value = dup(src->v[i].value);
        dst->n++;
        if (!dst->v[i].name || !dst->v[i].value) return BASE_E_NOMEM;
    }
    return 0;
}

static void kvs_clear(cfg_kvs *k) {
    for (size_t i = 0; i < k->n; i++) {
        free(k->v[i].name);
        free(k->v[i].value);
    }
    free(k->v);
    k->v = NULL;
    k->n = 0;
}

static int kvs_equal(const cfg_kvs *a, const cfg_kvs *b) {
    if (a->n != b->n) return 0;
    for (size_t i = 0; i < a->n; i++)
        if (strcmp(a->v[i].name, b->v[i].name) || strcmp(a->v[i].value, b->v[i].value)) return 0;
    return 1;
}

int remote__conf_make(remote_conf *c, const cfg_remote_write *w, const cfg_kvs *ext, unsigned rank, char *err,
                      size_t errlen) {
    memset(c, 0, sizeof *c);
    c->url = dup(w->url);
    c->name = dup(w->name);
    int rc = c->url && c->name ? 0 : BASE_E_NOMEM;
    if (!rc) {
        c->id = remote__conf_id(c->url, c->name, rank);
        if (c->name[0]) {
            c->remote_name = dup(c->name);
        } else if ((c->remote_name = malloc(8))) {
            snprintf(c->remote_name, 8, "%06llx", (unsigned long long)(c->id >> 40));
        }
        if (!c->remote_name) rc = BASE_E_NOMEM;
    }
    c->timeout_ms = w->remote_timeout_ms;
    c->capacity = w->q_capacity > 0 ? w->q_capacity : 1;
    c->max_samples = w->q_max_samples_per_send > 0 ? w->q_max_samples_per_send : 1;
    c->min_shards = w->q_min_shards > 0 ? w->q_min_shards : 1;
    c->max_shards = w->q_max_shards > c->min_shards ? w->q_max_shards : c->min_shards;
    if (c->max_shards > 100000) c->max_shards = 100000;
    if (c->min_shards > c->max_shards) c->min_shards = c->max_shards;
    c->deadline_ms = w->q_batch_send_deadline_ms > 0 ? w->q_batch_send_deadline_ms : 1;
    c->min_backoff_ms = w->q_min_backoff_ms > 0 ? w->q_min_backoff_ms : 0;
    c->max_backoff_ms = w->q_max_backoff_ms > c->min_backoff_ms ? w->q_max_backoff_ms : c->min_backoff_ms;
    c->retry_429 = w->q_retry_on_http_429;
    c->md_send = w->md_send;
    c->md_interval_ms = w->md_send_interval_ms > 0 ? w->md_send_interval_ms : 60000;
    c->md_max = w->md_max_samples_per_send > 0 ? w->md_max_samples_per_send : 500;
    if (!rc) rc = kvs_copy(&c->headers, &w->headers);
    if (!rc) rc = kvs_copy(&c->ext, ext);
    if (!rc) rc = cfg_http_copy(&c->http, &w->http);
    if (!rc && w->nwrite_relabel) {
        c->rules = calloc(w->nwrite_relabel, sizeof *c->rules);
        if (!c->rules) rc = BASE_E_NOMEM;
        for (size_t i = 0; !rc && i < w->nwrite_relabel; i++) {
            if ((rc = relabel_rule_copy(&c->rules[i], &w->write_relabel[i], err, errlen)) != 0) break;
            c->nrules++;
        }
        if (rc) {
            remote__conf_clear(c);
            return rc;
        }
    }
    if (rc) {
        remote__conf_clear(c);
        return base_errf(err, errlen, rc, "out of memory");
    }
    return 0;
}

void remote__conf_clear(remote_conf *c) {
    free(c->url);
    free(c->name);
    free(c->remote_name);
    kvs_clear(&c->headers);
    kvs_clear(&c->ext);
    cfg_http_clear(&c->http);
    for (size_t i = 0; i < c->nrules; i++) relabel_rule_clear(&c->rules[i]);
    free(c->rules);
    memset(c, 0, sizeof *c);
}

int remote__conf_equal(const remote_conf *a, const remote_conf *b) {
    if (a->id != b->id || strcmp(a->url, b->url) || strcmp(a->name, b->name)) return 0;
    if (a->timeout_ms != b->timeout_ms || a->capacity != b->capacity || a->max_shards != b->max_shards ||
        a->min_shards != b->min_shards || a->max_samples != b->max_samples ||
        a->deadline_ms != b->deadline_ms || a->min_backoff_ms != b->min_backoff_ms ||
        a->max_backoff_ms != b->max_backoff_ms || a->retry_429 != b->retry_429 || a->md_send != b->md_send ||
        a->md_interval_ms != b->md_interval_ms || a->md_max != b->md_max)
        return 0;
    if (!kvs_equal(&a->headers, &b->headers) || !kvs_equal(&a->ext, &b->ext)) return 0;
    if (!cfg_http_equal(&a->http, &b->http)) return 0;
    if (a->nrules != b->nrules) return 0;
    for (size_t i = 0; i < a->nrules; i++)
        if (!relabel_rule_equal(&a->rules[i], &b->rules[i])) return 0;
    return 1;
}
