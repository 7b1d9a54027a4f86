/* fuzz/agent_push.c -- fuzz target for the push endpoint (src/agent/push.c):
 * path parsing, body parsing into families, the consistency check and the
 * store.
 *
 * Input: requests separated by the bytes FF FE (bodies may hold NUL bytes
 * and anything else); in each, the first byte picks
 * the method and content type (PUT, POST, DELETE, PUT as OpenMetrics,
 * POST as protobuf), the bytes up to the first '\n' are the path and the
 * rest is the body. Small limits make the limit paths reachable. After
 * the requests, the store is collected and written in both formats, and
 * the round trip is checked: the expo parser must read every byte the
 * writer wrote back without error, sample for sample. Debug builds also
 * run push.c's invariant checker after every change.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/push.h"
#include "base/buf.h"
#include "expo/parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static size_t reparse(const base_buf *b, expo_format fmt) {
    expo_parser ps;
    expo_parser_init(&ps, b->data ? b->data : "", b->len, fmt, NULL);
    size_t n = 0;
    int e;
    while ((e = expo_parser_next(&ps)) > 0)
        if (e == EXPO_ENTRY_SERIES) n++;
    if (e < 0) abort(); /* the writer wrote something the parser refuses */
    expo_parser_free(&ps);
    return n;
}

static void request(agent_push *p, const char *r, size_t n) {
    static const char *const methods[] = {"PUT", "POST", "DELETE", "PUT", "POST", "GET"};
    static const char *const cts[] = {NULL,
                                      "text/plain; version=0.0.4",
                                      NULL,
                                      "application/openmetrics-text; version=1.0.0",
                                      "application/vnd.google.protobuf; encoding=delimited",
                                      NULL};
    if (n == 0) return;
    unsigned op = (unsigned char)r[0] % 6;
    const char *nl = memchr(r + 1, '\n', n - 1);
    size_t plen = nl ? (size_t)(nl - r - 1) : n - 1;
    char path[512];
    if (plen >= sizeof path) plen = sizeof path - 1;
    memcpy(path, r + 1, plen);
    path[plen] = '\0';
    const char *body = nl ? nl + 1 : "";
    size_t blen = nl ? n - (size_t)(nl + 1 - r) : 0;
    base_buf out = BASE_BUF_INIT;
    int status = 0;
    if (agent_push_handle(p, methods[op], path, cts[op], body, blen, &status, &out) == 0 &&
        (status < 200 || status > 415))
        abort();
    base_buf_free(&out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    agent_push_opts o;
    agent_push_opts_init(&o);
    o.max_body = 4096;
    o.max_groups = 8;
    o.max_series_per_group = 64;
    o.max_series = 128;
    o.max_labels = 16;
    agent_push *p = NULL;
    if (agent_push_new(&o, &p, NULL, 0) != 0) abort();
    const char *s = (const char *)data;
    size_t start = 0;
    for (size_t i = 0; i <= size; i++) {
        if (i < size && !(i + 1 < size && (unsigned char)s[i] == 0xff && (unsigned char)s[i + 1] == 0xfe))
            continue;
        request(p, s + start, i - start);
        start = i + 2;
        i++;
    }
    expo_mset ms;
    expo_mset_init(&ms);
    if (agent_push_collect(p, &ms) != 0) abort();
    expo_mset *sets[] = {&ms};
    base_buf text = BASE_BUF_INIT, om = BASE_BUF_INIT;
    if (expo_write(sets, 1, EXPO_FMT_TEXT, &text) || expo_write(sets, 1, EXPO_FMT_OPENMETRICS, &om)) abort();
    if (reparse(&text, EXPO_FMT_TEXT) != ms.nsamples) abort();
    if (reparse(&om, EXPO_FMT_OPENMETRICS) != ms.nsamples) abort();
    base_buf_free(&text);
    base_buf_free(&om);
    expo_mset_free(&ms);
    agent_push_free(p);
    return 0;
}
