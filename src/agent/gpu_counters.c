/* gpu_counters.c -- the counters file: dcgm-exporter's CSV selecting which
 * GPU metrics and label fields to serve.
 *
 * Format (etc/default-counters.csv): one row per field,
 *   DCGM_FI_DEV_SM_CLOCK, gauge, SM clock frequency (in MHz).
 * `#` starts a comment line; blank lines are skipped; fields are trimmed;
 * the help text may itself contain commas (everything after the second
 * comma). Types: gauge, counter, label. Kelvin also accepts its own
 * kelvin_gpu_* names. The type and help text in the file are not used:
 * the catalog's are served (a file cannot turn a gauge into a counter, and
 * output stays identical to dcgm-exporter's defaults). Fields Kelvin cannot serve (DCGM_EXP_*, profiling
 * fields it has no NVML source for) are skipped and reported, not fatal, so a stock dcgm-exporter file works
 * as is.
 */
#include <stdio.h>
#include <string.h>

#include "agent/gpu_int.h"
#include "base/err.h"

#define COUNTERS_MAX_BYTES (1u << 20)
#define COUNTERS_MAX_LINES 10000

void agent__gpu_counters_default(gpu_counters *ret) {
    memset(ret, 0, sizeof *ret);
    for (int m = 0; m < GPU_M__COUNT; m++) ret->metric[m] = (uint8_t)agent__gpu_metric_default(m);
    ret->label[GPU_L_DRIVER_VERSION] = 1;
}

static int is_space(char c) {
    return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v';
}

static void trim(const char **p, size_t *n) {
    while (*n && is_space(**p)) (*p)++, (*n)--;
    while (*n && is_space((*p)[*n - 1])) (*n)--;
}

static int eq(const char *p, size_t n, const char *s) {
    return strlen(s) == n && memcmp(p, s, n) == 0;
}

/* Appends name p to the list; once a name does not fit, *full stops the
 * list there, so it stays a prefix of the whole list. */
static void add_skipped(char *skipped, size_t len, const char *p, size_t n, int *full) {
    if (!skipped || !len || *full) return;
    size_t cur = strlen(skipped);
    if ((cur ? 1 : 0) + n >= len - cur) { /* separator, name and NUL */
        *full = 1;
        return;
    }
    if (cur) {
        skipped[cur++] = ',';
        skipped[cur] = '\0';
    }
    memcpy(skipped + cur, p, n);
    skipped[cur + n] = '\0';
}

int agent__gpu_counters_parse(const char *text, size_t n, gpu_counters *ret, char *skipped, size_t skippedlen,
                              char *err, size_t errlen) {
    if (n > COUNTERS_MAX_BYTES) {
        snprintf(err, errlen, "counters file larger than %u bytes", COUNTERS_MAX_BYTES);
        return BASE_E_LIMIT;
    }
    gpu_counters c;
    memset(&c, 0, sizeof c);
    c.metric[GPU_M_K_NVML_UP] = 1; /* collector health is always served */
    c.metric[GPU_M_K_LOST] = 1;
    if (skipped && skippedlen) skipped[0] = '\0';
    int skipped_full = 0;
    size_t line = 0;
    const char *p = text, *end = text + n;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        if (++line > COUNTERS_MAX_LINES) {
            snprintf(err, errlen, "counters file has more than %d lines", COUNTERS_MAX_LINES);
            return BASE_E_LIMIT;
        }
        const char *l = p;
        size_t ln = (size_t)(le - p);
        p = nl ? nl + 1 : end;
        trim(&l, &ln);
        if (ln == 0 || l[0] == '#') continue;
        if (memchr(l, '\0', ln)) {
            snprintf(err, errlen, "line %zu: NUL byte", line);
            return BASE_E_PARSE;
        }
        const char *c1 = memchr(l, ',', ln);
        const char *c2 = c1 ? memchr(c1 + 1, ',', (size_t)(l + ln - c1 - 1)) : NULL;
        if (!c1 || !c2) {
            snprintf(err, errlen, "line %zu: expected `FIELD, type, help`", line);
            return BASE_E_PARSE;
        }
        const char *f = l, *t = c1 + 1;
        size_t fn = (size_t)(c1 - l), tn = (size_t)(c2 - c1 - 1);
        trim(&f, &fn);
        trim(&t, &tn);
        if (fn == 0) {
            snprintf(err, errlen, "line %zu: empty field name", line);
            return BASE_E_PARSE;
        }
        int type;
        if (eq(t, tn, "gauge"))
            type = EXPO_GAUGE;
        else if (eq(t, tn, "counter"))
            type = EXPO_COUNTER;
        else if (eq(t, tn, "label"))
            type = -1;
        else {
            snprintf(err, errlen, "line %zu: unknown metric type `%.*s` (gauge, counter or label)", line,
                     (int)(tn > 32 ? 32 : tn), t);
            return BASE_E_PARSE;
        }
        int found = 0;
        if (type == -1) {
            for (int k = 0; k < GPU_L__COUNT; k++)
                if (eq(f, fn, agent__gpu_label_names[k])) {
                    c.label[k] = 1;
                    found = 1;
                }
        } else {
            for (int m = 0; m < GPU_M__COUNT; m++) {
                if (!eq(f, fn, agent__gpu_metrics[m].name)) continue;
                found = 1;
                c.metric[m] = 1;
            }
        }
        if (!found) add_skipped(skipped, skippedlen, f, fn, &skipped_full);
    }
    *ret = c;
    return 0;
}
