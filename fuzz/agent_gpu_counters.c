/* fuzz/agent_gpu_counters.c -- fuzzes the GPU collector's counters-file
 * parser (agent__gpu_counters_parse, dcgm-exporter's CSV format).
 *
 * There is no writer for the file, so the target renders the selection
 * back itself and checks invariants instead:
 *   1. the result does not depend on the `skipped` buffer: no buffer, a
 *      tiny one, a mid-sized one and one that cannot fill up (input size +
 *      1) give the same return code and selection; buffers are heap blocks
 *      of exactly the size passed, so ASan sees any write past them; a
 *      short buffer holds the longest prefix of the full list that ends at
 *      a name and fits;
 *   2. on failure *ret is untouched (sentinel bytes), the code is
 *      BASE_E_PARSE or BASE_E_LIMIT and err holds a message;
 *   3. on success every flag is 0 or 1, kelvin_gpu_nvml_up and
 *      kelvin_gpu_lost are on, every selected metric or label names a
 *      catalog entry that occurs in the input, and every skipped name is
 *      non-empty and occurs in the input;
 *   4. CRLF line ends (each "\n" -> "\r\n") change nothing;
 *   5. round trip: the selection written as a counters file (selected rows,
 *      the others commented out, with a label row per selected label)
 *      parses to the same selection with nothing skipped.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/gpu_int.h"
#include "base/err.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FAIL(...)                                                                                            \
    do {                                                                                                     \
        fprintf(stderr, "fuzz_agent_gpu_counters: " __VA_ARGS__);                                            \
        fputc('\n', stderr);                                                                                 \
        abort();                                                                                             \
    } while (0)

#define SKIP_SMALL 24
#define SKIP_MID   100
#define ERR_LEN    96

typedef struct run {
    int rc;
    gpu_counters c;
    char *skipped; /* NULL, or a heap block of skippedlen bytes */
    size_t skippedlen;
    char err[ERR_LEN];
} run;

static void parse(const char *text, size_t n, size_t skippedlen, run *r) {
    memset(r, 0, sizeof *r);
    memset(&r->c, 0xA5, sizeof r->c);
    r->skippedlen = skippedlen;
    r->skipped = skippedlen ? malloc(skippedlen) : NULL;
    if (skippedlen && !r->skipped) abort();
    if (r->skipped) memset(r->skipped, 'Z', skippedlen);
    char *err = malloc(ERR_LEN); /* exact size: an overflow is an ASan report */
    if (!err) abort();
    err[0] = '\0';
    r->rc = agent__gpu_counters_parse(text, n, &r->c, r->skipped, skippedlen, err, ERR_LEN);
    if (memchr(err, '\0', ERR_LEN) == NULL) FAIL("err not NUL-terminated");
    memcpy(r->err, err, ERR_LEN);
    free(err);
    if (r->skipped && r->rc == 0 && memchr(r->skipped, '\0', skippedlen) == NULL)
        FAIL("skipped not NUL-terminated within %zu bytes", skippedlen);
}

static void done(run *r) {
    free(r->skipped);
    r->skipped = NULL;
}

static int has(const char *hay, size_t n, const char *needle) {
    size_t k = strlen(needle);
    return k <= n && memmem(hay, n, needle, k) != NULL;
}

static void check_success(const char *text, size_t n, const run *r) {
    for (int m = 0; m < GPU_M__COUNT; m++) {
        if (r->c.metric[m] > 1) FAIL("metric flag %d is %u", m, r->c.metric[m]);
        if (r->c.metric[m] && m != GPU_M_K_NVML_UP && m != GPU_M_K_LOST &&
            !has(text, n, agent__gpu_metrics[m].name))
            FAIL("metric %s selected but not in the input", agent__gpu_metrics[m].name);
    }
    if (!r->c.metric[GPU_M_K_NVML_UP] || !r->c.metric[GPU_M_K_LOST]) FAIL("always-on metrics are off");
    for (int k = 0; k < GPU_L__COUNT; k++) {
        if (r->c.label[k] > 1) FAIL("label flag %d is %u", k, r->c.label[k]);
        if (r->c.label[k] && !has(text, n, agent__gpu_label_names[k]))
            FAIL("label %s selected but not in the input", agent__gpu_label_names[k]);
    }
    if (!r->skipped) return;
    size_t sl = strlen(r->skipped);
    if (sl >= r->skippedlen) FAIL("skipped overflows");
    const char *p = r->skipped, *end = r->skipped + sl;
    while (p < end) {
        const char *c = memchr(p, ',', (size_t)(end - p));
        const char *e = c ? c : end;
        if (e == p) FAIL("empty name in skipped \"%s\"", r->skipped);
        if (memmem(text, n, p, (size_t)(e - p)) == NULL)
            FAIL("skipped name not in the input: \"%s\"", r->skipped);
        p = c ? c + 1 : end;
    }
}

/* short's list is the longest prefix of full's (whole names) that fits. */
static void check_prefix(const run *sh, const run *full) {
    size_t ls = strlen(sh->skipped), lf = strlen(full->skipped);
    if (ls > lf || strncmp(sh->skipped, full->skipped, ls) != 0)
        FAIL("skipped \"%s\" is not a prefix of \"%s\"", sh->skipped, full->skipped);
    if (ls == lf) return;
    if (full->skipped[ls] != ',' && ls != 0)
        FAIL("skipped \"%s\" cuts a name of \"%s\"", sh->skipped, full->skipped);
    const char *next = full->skipped + ls + (ls ? 1 : 0);
    const char *c = strchr(next, ',');
    size_t nn = c ? (size_t)(c - next) : strlen(next);
    if (ls + (ls ? 1 : 0) + nn + 1 <= sh->skippedlen)
        FAIL("skipped \"%s\" (%zu bytes) stops before a name that fits", sh->skipped, sh->skippedlen);
}

static void same(const run *a, const run *b, const char *what) {
    if (a->rc != b->rc) FAIL("%s: rc %d vs %d (%s | %s)", what, a->rc, b->rc, a->err, b->err);
    if (a->rc == 0 && memcmp(&a->c, &b->c, sizeof a->c) != 0) FAIL("%s: different selection", what);
}

/* Writes sel as a counters file: every metric and label as a row, the
 * unselected ones commented out. Returns the length. */
static size_t render(const gpu_counters *sel, char *out, size_t cap) {
    size_t n = 0;
    int w = snprintf(out, cap, "# rendered by the fuzz target\n");
    if (w < 0 || (size_t)w >= cap) abort();
    n = (size_t)w;
    for (int m = 0; m < GPU_M__COUNT; m++) {
        const agent_metric *a = &agent__gpu_metrics[m];
        w = snprintf(out + n, cap - n, "%s%s, %s, %s\n", sel->metric[m] ? "" : "# ", a->name,
                     a->type == EXPO_COUNTER ? "counter" : "gauge", a->help);
        if (w < 0 || (size_t)w >= cap - n) abort();
        n += (size_t)w;
    }
    for (int k = 0; k < GPU_L__COUNT; k++) {
        w = snprintf(out + n, cap - n, "%s%s, label, a label, with, commas\n", sel->label[k] ? "" : "#",
                     agent__gpu_label_names[k]);
        if (w < 0 || (size_t)w >= cap - n) abort();
        n += (size_t)w;
    }
    return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *text = (const char *)data;
    run none, small, mid, large;
    parse(text, size, 0, &none);
    parse(text, size, SKIP_SMALL, &small);
    parse(text, size, SKIP_MID, &mid);
    parse(text, size, size + 1, &large);
    same(&none, &small, "no skipped buffer vs a small one");
    same(&none, &mid, "no skipped buffer vs a mid-sized one");
    same(&none, &large, "no skipped buffer vs a large one");

    if (none.rc != 0) {
        if (none.rc != BASE_E_PARSE && none.rc != BASE_E_LIMIT) FAIL("unexpected rc %d", none.rc);
        if (none.err[0] == '\0') FAIL("failure without a message");
        gpu_counters sentinel;
        memset(&sentinel, 0xA5, sizeof sentinel);
        if (memcmp(&none.c, &sentinel, sizeof sentinel) != 0) FAIL("*ret written on failure");
    } else {
        check_success(text, size, &none);
        check_success(text, size, &small);
        check_success(text, size, &mid);
        check_success(text, size, &large);
        check_prefix(&small, &large);
        check_prefix(&mid, &large);
    }

    /* CRLF line ends are whitespace at the end of a line */
    size_t nl = 0;
    for (size_t i = 0; i < size; i++) nl += data[i] == '\n';
    if (size + nl <= (1u << 20)) {
        char *crlf = malloc(size + nl + 1);
        if (!crlf) abort();
        size_t j = 0;
        for (size_t i = 0; i < size; i++) {
            if (data[i] == '\n') crlf[j++] = '\r';
            crlf[j++] = (char)data[i];
        }
        run r;
        parse(crlf, j, j + 1, &r);
        same(&large, &r, "LF vs CRLF");
        if (r.rc == 0 && strcmp(r.skipped, large.skipped) != 0) FAIL("CRLF changes skipped");
        done(&r);
        free(crlf);
    }

    if (none.rc == 0) {
        static char buf[64 * 1024];
        size_t n = render(&none.c, buf, sizeof buf);
        run r;
        parse(buf, n, n + 1, &r);
        if (r.rc != 0) FAIL("rendered selection does not parse: %s", r.err);
        if (memcmp(&r.c, &none.c, sizeof r.c) != 0) FAIL("round trip changes the selection");
        if (r.skipped[0] != '\0') FAIL("round trip skips \"%s\"", r.skipped);
        done(&r);
    }
    done(&none);
    done(&small);
    done(&mid);
    done(&large);
    return 0;
}
