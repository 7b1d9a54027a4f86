/* api_status.c -- the API's status, target, metadata and admin endpoints
 * (Prometheus 2.42's api.serve*, targets, targetMetadata, metricMetadata,
 * deleteSeries, cleanTombstones, snapshot; rules, alerts and
 * alertmanagers are in api_rules.c).
 *
 * SHAPES (2.42's field names and order):
 *   status/flags        every flag of `kelvin server` by name, values as
 *                       strings: durations as model.Duration prints them
 *                       ("5m", "1d12h"), sizes as units.Base2Bytes
 *                       ("1GiB512MiB", "0B"), booleans "true"/"false";
 *                       keys sorted (Go's map order)
 *   status/runtimeinfo  startTime (RFC 3339, nanoseconds), CWD,
 *                       reloadConfigSuccess, lastConfigTime (seconds),
 *                       corruptionCount (WAL damage found at open),
 *                       goroutineCount (our threads), GOMAXPROCS (online
 *                       cores), GOGC and GODEBUG (the environment's),
 *                       storageRetention ("15d", "1GiB", "15d or 1GiB")
 *   status/tsdb         headStats {numSeries, numLabelPairs, chunkCount,
 *                       minTime, maxTime} and the top 10 of
 *                       seriesCountByMetricName, labelValueCountByLabelName,
 *                       memoryInBytesByLabelName, seriesCountByLabelValuePair
 *                       as [{"name":..,"value":..}]. An empty head reports
 *                       the newest block's end as both times, or
 *                       MaxInt64/MinInt64 without blocks, as 2.42 does.
 *                       chunkCount: the head's closed chunks plus one open
 *                       chunk per series (2.42 counts its open chunks too).
 *   admin endpoints     without --web.enable-admin-api: 500
 *                       {"errorType":"unavailable","error":"admin APIs
 *                       disabled"}. delete_series: 204 on success.
 *                       snapshot: not supported by Kelvin's storage yet
 *                       (500 internal "create snapshot: ..." after 2.42's
 *                       skip_head check).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/err.h"
#include "base/num.h"
#include "server/server_int.h"

/* ---- targets and metadata (the scrape manager renders them) ---------------- */

static int limit_arg(api_ctx *c, long *ret) {
    base_str l = http_form_get(&c->form, "limit");
    int64_t v = -1;
    if (l.n && base_parse_i64(l.p, l.n, &v) != 0) {
        server__api_errorf(c, "bad_data", "limit must be a number");
        return -1;
    }
    *ret = (long)v;
    return 0;
}

void server__api_targets(api_ctx *c) {
    base_buf b;
    base_buf_init(&b, 0);
    base_str state = http_form_get(&c->form, "state");
    if (scrape_manager_targets_json(c->s->scrape, state.p, &b) != 0) b.err = BASE_E_NOMEM;
    server__api_send(c, 200, &b);
}

/* `invalid parameter "<param>": ` + 2.42's ParseMetricSelector message,
 * which may hold NUL bytes (a regex's, as 2.42 echoes them). */
static void invalid_selector(api_ctx *c, const char *param, const base_buf *msg) {
    base_buf m;
    base_buf_init(&m, 0);
    base_buf_printf(&m, "invalid parameter \"%s\": ", param);
    base_buf_append(&m, msg->data ? msg->data : "", msg->len);
    server__api_error(c, 400, "bad_data", m.data ? m.data : "", m.len);
    base_buf_free(&m);
}

void server__api_targets_metadata(api_ctx *c) {
    long limit;
    if (limit_arg(c, &limit) != 0) return;
    /* 2.42 parses a non-empty match_target with ParseMetricSelector and
     * filters the targets with those matchers. */
    base_str mt = http_form_get(&c->form, "match_target");
    labels_matcher **ms = NULL;
    size_t nms = 0;
    if (mt.n) {
        base_buf msg;
        base_buf_init(&msg, 0);
        int rc = promql_parse_selector_msg(mt.p, mt.n, &ms, &nms, &msg);
        if (rc == BASE_E_NOMEM || (rc != 0 && base_buf_err(&msg))) {
            base_buf_free(&msg);
            server__api_errorf(c, "internal", "out of memory");
            return;
        }
        if (rc != 0) {
            invalid_selector(c, "match_target", &msg);
            base_buf_free(&msg);
            return;
        }
        base_buf_free(&msg);
    }
    base_buf b;
    base_buf_init(&b, 0);
    server__api_begin(&b); /* 2.42: nothing matched is an empty list, not an error */
    int rc =
        scrape_manager_metadata_json(c->s->scrape, ms, nms, http_form_get(&c->form, "metric"), limit, &b);
    labels_matchers_free(ms, nms);
    if (rc) b.err = rc;
    server__api_end(c, &b);
}

void server__api_metadata(api_ctx *c) {
    long limit;
    if (limit_arg(c, &limit) != 0) return;
    base_buf b;
    base_buf_init(&b, 0);
    server__api_begin(&b);
    if (scrape_manager_metric_metadata_json(c->s->scrape, http_form_get(&c->form, "metric"), limit, &b) != 0)
        b.err = BASE_E_NOMEM;
    server__api_end(c, &b);
}

/* ---- status ------------------------------------------------------------------ */

void server__api_status_config(api_ctx *c) {
    server *s = c->s;
    base_buf b;
    base_buf_init(&b, 0);
    server__api_begin(&b);
    pthread_rwlock_rdlock(&s->cfg_lock);
    base_buf_puts(&b, "{\"yaml\":");
    if (s->cfg)
        base_buf_json_str(&b, s->cfg->text, s->cfg->text_len);
    else
        base_buf_puts(&b, "\"\"");
    base_buf_putc(&b, '}');
    pthread_rwlock_unlock(&s->cfg_lock);
    server__api_end(c, &b);
}

void server__api_status_buildinfo(api_ctx *c) {
    base_buf b;
    base_buf_init(&b, 0);
    server__api_begin(&b);
    base_buf_puts(&b,
                  "{\"version\":\"" KELVIN_VERSION "\",\"revision\":\"\",\"branch\":\"\",\"buildUser\":\"\","
                  "\"buildDate\":\"\",\"goVersion\":\"\"}");
    server__api_end(c, &b);
}

/* units.Base2Bytes's String(). */
static void fmt_bytes(base_buf *b, int64_t n) {
    static const char *const units[] = {"EiB", "PiB", "TiB", "GiB", "MiB", "KiB"};
    if (n == 0) {
        base_buf_puts(b, "0B");
        return;
    }
    if (n < 0) {
        base_buf_putc(b, '-');
        n = -n;
    }
    for (int i = 0; i < 6; i++) {
        int64_t m = (int64_t)1 << (10 * (6 - i));
        if (n >= m) {
            base_buf_printf(b, "%lld%s", (long long)(n / m), units[i]);
            n %= m;
        }
    }
    if (n) base_buf_printf(b, "%lldB", (long long)n);
}

static int cmp_flag(const void *a, const void *b) {
    return strcmp((*(const base_flag *const *)a)->name, (*(const base_flag *const *)b)->name);
}

void server__api_status_flags(api_ctx *c) {
    server *s = c->s;
    const base_flag **f = calloc(s->nflags ? s->nflags : 1, sizeof *f);
    if (!f) {
        server__api_errorf(c, "internal", "out of memory");
        return;
    }
    for (size_t i = 0; i < s->nflags; i++) f[i] = &s->flag_table[i];
    qsort(f, s->nflags, sizeof *f, cmp_flag);
    base_buf b, v;
    base_buf_init(&b, 0);
    base_buf_init(&v, 0);
    server__api_begin(&b);
    base_buf_putc(&b, '{');
    for (size_t i = 0; i < s->nflags; i++) {
        if (i) base_buf_putc(&b, ',');
        base_buf_json_str(&b, f[i]->name, strlen(f[i]->name));
        base_buf_putc(&b, ':');
        base_buf_reset(&v);
        switch (f[i]->kind) {
        case BASE_FLAG_STRING: {
            const char *str = *(const char *const *)f[i]->target;
            base_buf_puts(&v, str ? str : "");
            break;
        }
        case BASE_FLAG_BOOL: base_buf_puts(&v, *(const int *)f[i]->target ? "true" : "false"); break;
        case BASE_FLAG_DURATION: server__fmt_duration(&v, *(const int64_t *)f[i]->target); break;
        case BASE_FLAG_INT: base_buf_i64(&v, *(const int64_t *)f[i]->target); break;
        case BASE_FLAG_SIZE: fmt_bytes(&v, *(const int64_t *)f[i]->target); break;
        }
        base_buf_json_str(&b, v.data ? v.data : "", v.len);
    }
    base_buf_putc(&b, '}');
    base_buf_free(&v);
    free(f);
    server__api_end(c, &b);
}

void server__json_time(base_buf *b, int64_t sec, int64_t nsec) {
    time_t t = (time_t)sec;
    struct tm tm;
    gmtime_r(&t, &tm);
    base_buf_printf(b, "\"%04d-%02d-%02dT%02d:%02d:%02d", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                    tm.tm_hour, tm.tm_min, tm.tm_sec);
    if (nsec) {
        char frac[16];
        snprintf(frac, sizeof frac, "%09lld", (long long)nsec);
        size_t n = 9;
        while (n && frac[n - 1] == '0') n--;
        base_buf_putc(b, '.');
        base_buf_append(b, frac, n);
    }
    base_buf_puts(b, "Z\"");
}

static long threads_now(void) {
    FILE *f = fopen("/proc/self/status", "r");
    long n = 0;
    if (!f) return 0;
    char line[256];
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "Threads:", 8) == 0) {
            n = strtol(line + 8, NULL, 10); /* kernel's own text, not input */
            break;
        }
    fclose(f);
    return n;
}

void server__api_status_runtimeinfo(api_ctx *c) {
    server *s = c->s;
    base_buf b;
    base_buf_init(&b, 0);
    server__api_begin(&b);
    base_buf_puts(&b, "{\"startTime\":");
    server__json_time(&b, s->start_sec, s->start_nsec);
    base_buf_puts(&b, ",\"CWD\":");
    base_buf_json_str(&b, s->cwd, strlen(s->cwd));
    base_buf_puts(&b, s->reload_ok ? ",\"reloadConfigSuccess\":true" : ",\"reloadConfigSuccess\":false");
    base_buf_puts(&b, ",\"lastConfigTime\":");
    server__json_time(&b, s->reload_success_ms / 1000, 0);
    base_buf_printf(&b, ",\"corruptionCount\":%llu,\"goroutineCount\":%ld,\"GOMAXPROCS\":%ld,\"GOGC\":",
                    (unsigned long long)s->wal_corruptions, threads_now(), sysconf(_SC_NPROCESSORS_ONLN));
    const char *gogc = getenv("GOGC"), *godebug = getenv("GODEBUG");
    base_buf_json_str(&b, gogc ? gogc : "", gogc ? strlen(gogc) : 0);
    base_buf_puts(&b, ",\"GODEBUG\":");
    base_buf_json_str(&b, godebug ? godebug : "", godebug ? strlen(godebug) : 0);
    base_buf_puts(&b, ",\"storageRetention\":\"");
    if (s->dbo.retention_ms) server__fmt_duration(&b, s->dbo.retention_ms);
    if (s->dbo.retention_ms && s->dbo.retention_bytes) base_buf_puts(&b, " or ");
    if (s->dbo.retention_bytes) fmt_bytes(&b, s->dbo.retention_bytes);
    base_buf_puts(&b, "\"}");
    server__api_end(c, &b);
}

static void card_list(base_buf *b, const char *key, const tsdb_head_card_entry *e, size_t n) {
    base_buf_printf(b, ",\"%s\":[", key);
    for (size_t i = 0; i < n; i++) {
        if (i) base_buf_putc(b, ',');
        base_buf_puts(b, "{\"name\":");
        base_buf_json_str(b, e[i].name.p, e[i].name.n);
        base_buf_printf(b, ",\"value\":%llu}", (unsigned long long)e[i].count);
    }
    base_buf_putc(b, ']');
}

void server__api_status_tsdb(api_ctx *c) {
    server *s = c->s;
    tsdb_head_card card;
    if (tsdb_head_postings_stats(tsdb_db_head(s->db), 10, &card) != 0) {
        server__api_errorf(c, "internal", "out of memory");
        return;
    }
    tsdb_db_stats st;
    tsdb_db_stats_get(s->db, &st);
    int64_t mint = st.head.mint, maxt = st.head.maxt;
    if (st.head.samples == 0) {
        if (st.blocks) {
            mint = maxt = st.blocks_maxt;
        } else {
            mint = INT64_MAX;
            maxt = INT64_MIN;
        }
    }
    base_buf b;
    base_buf_init(&b, 0);
    server__api_begin(&b);
    base_buf_printf(&b,
                    "{\"headStats\":{\"numSeries\":%llu,\"numLabelPairs\":%llu,\"chunkCount\":%llu,"
                    "\"minTime\":%lld,\"maxTime\":%lld}",
                    (unsigned long long)card.num_series, (unsigned long long)card.num_label_pairs,
                    (unsigned long long)(st.head.chunks + st.head.series), (long long)mint, (long long)maxt);
    card_list(&b, "seriesCountByMetricName", card.series_by_metric, card.n_series_by_metric);
    card_list(&b, "labelValueCountByLabelName", card.values_by_name, card.n_values_by_name);
    card_list(&b, "memoryInBytesByLabelName", card.memory_by_name, card.n_memory_by_name);
    card_list(&b, "seriesCountByLabelValuePair", card.series_by_pair, card.n_series_by_pair);
    base_buf_putc(&b, '}');
    tsdb_head_card_free(&card);
    server__api_end(c, &b);
}

void server__api_status_walreplay(api_ctx *c) {
    base_buf b;
    base_buf_init(&b, 0);
    server__api_begin(&b);
    base_buf_puts(&b, "{\"min\":0,\"max\":0,\"current\":0}");
    server__api_end(c, &b);
}

/* ---- admin ----------------------------------------------------------------------- */

static int admin_enabled(api_ctx *c) {
    if (c->s->flags.admin_api) return 1;
    server__api_errorf(c, "unavailable", "admin APIs disabled");
    return 0;
}

void server__api_delete_series(api_ctx *c) {
    if (!admin_enabled(c)) return;
    if (c->form.err == BASE_E_PARSE) {
        server__api_errorf(c, "bad_data", "error parsing form values: %s", c->form.errmsg);
        return;
    }
    size_t n = http_form_values(&c->form, "match[]", NULL, 0);
    if (n == 0) {
        server__api_errorf(c, "bad_data", "no match[] parameter provided");
        return;
    }
    api_time start, end;
    if (server__api_time_param(c, "start", server__api_min_time, &start) != 0) return;
    if (server__api_time_param(c, "end", server__api_max_time, &end) != 0) return;
    int64_t mint = server__api_time_ms(start), maxt = server__api_time_ms(end);
    base_str *v = calloc(n, sizeof *v);
    if (!v) {
        server__api_errorf(c, "internal", "out of memory");
        return;
    }
    http_form_values(&c->form, "match[]", v, n);
    /* 2.42 parses and deletes one match[] at a time: a bad second one
     * leaves the first one's deletion done. */
    for (size_t i = 0; i < n; i++) {
        labels_matcher **ms;
        size_t nms;
        char err[1024];
        base_buf msg;
        base_buf_init(&msg, 0);
        if (promql_parse_selector_msg(v[i].p ? v[i].p : "", v[i].n, &ms, &nms, &msg) != 0) {
            free(v);
            invalid_selector(c, "match[]", &msg);
            base_buf_free(&msg);
            return;
        }
        base_buf_free(&msg);
        int rc = tsdb_db_delete(c->s->db, ms, nms, mint, maxt, err, sizeof err);
        labels_matchers_free(ms, nms);
        if (rc != 0) {
            free(v);
            server__api_errorf(c, "internal", "%s", err);
            return;
        }
    }
    free(v);
    server__api_no_content(c);
}

void server__api_clean_tombstones(api_ctx *c) {
    if (!admin_enabled(c)) return;
    char err[512];
    if (tsdb_db_clean_tombstones(c->s->db, err, sizeof err) != 0) {
        server__api_errorf(c, "internal", "%s", err);
        return;
    }
    server__api_no_content(c);
}

/* strconv.ParseBool */
static int parse_bool(base_str s, int *ret) {
    static const char *const t[] = {"1", "t", "T", "TRUE", "true", "True"};
    static const char *const f[] = {"0", "f", "F", "FALSE", "false", "False"};
    for (int i = 0; i < 6; i++) {
        if (base_str_eqc(s, t[i])) return *ret = 1, 0;
        if (base_str_eqc(s, f[i])) return *ret = 0, 0;
    }
    return -1;
}

void server__api_snapshot(api_ctx *c) {
    if (!admin_enabled(c)) return;
    base_str sh = http_form_get(&c->form, "skip_head");
    int skip_head = 0;
    if (sh.n && parse_bool(sh, &skip_head) != 0) {
        base_buf q;
        base_buf_init(&q, 0);
        server__quote(&q, sh.p, sh.n);
        char msg[600];
        snprintf(msg, sizeof msg, "unable to parse boolean: strconv.ParseBool: parsing %s: invalid syntax",
                 q.err ? "\"\"" : q.data);
        base_buf_free(&q);
        server__api_invalid_param(c, "skip_head", msg);
        return;
    }
    (void)skip_head;
    server__api_errorf(c, "internal", "create snapshot: not supported by Kelvin's storage yet");
}
