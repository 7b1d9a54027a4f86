/* fuzz/agent_statsd.c -- fuzz target for the StatsD line parser and series
 * table (src/agent/statsd.c), without a socket.
 *
 * The input is split at the bytes FF FE into datagrams (which may hold NUL
 * bytes and anything else), fed with small limits so
 * the limit paths (series, tags, names, packet size, set values) are
 * reached quickly, then collected twice: once now, once past the TTL so
 * every series expires. Checks: the rendered exposition is well formed
 * line by line (every sample line is `name[{...}] value`, names valid),
 * the served series never exceed the limit, and the series gauge falls to
 * zero after expiry. Sanitizers catch the rest.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/statsd.h"
#include "base/buf.h"
#include "base/log.h"
#include "base/time.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int name_char(char c, int first) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' ||
           (!first && c >= '0' && c <= '9');
}

/* Every non-comment line starts with a valid metric name followed by '{'
 * or ' '. */
static void check_text(const char *p, size_t n) {
    size_t i = 0;
    while (i < n) {
        const char *e = memchr(p + i, '\n', n - i);
        if (!e) abort(); /* every line ends with '\n' */
        size_t len = (size_t)(e - (p + i));
        const char *l = p + i;
        if (len == 0) abort();
        if (l[0] != '#') {
            size_t k = 0;
            while (k < len && name_char(l[k], k == 0)) k++;
            if (k == 0 || k == len || (l[k] != '{' && l[k] != ' ')) abort();
        }
        i += len + 1;
    }
}

static double series_gauge(const char *p) {
    const char *q = strstr(p, "\nkelvin_statsd_series ");
    if (!q) abort();
    return strtod(q + 22, NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    base_log_set_level("error"); /* rejections are logged once at warn */
    agent_statsd_opts o;
    agent_statsd_opts_init(&o);
    o.max_series = 64;
    o.max_tags = 4;
    o.max_name_len = 64;
    o.max_tag_len = 64;
    o.max_packet = 4096;
    o.max_set_values = 8;
    o.ttl_ms = 1000;
    static const double buckets[] = {0.1, 1, 10};
    o.buckets = buckets;
    o.nbuckets = 3;
    agent_statsd *s = NULL;
    if (agent_statsd_new(&o, &s, NULL, 0) != 0) abort();

    const char *p = (const char *)data;
    size_t start = 0;
    for (size_t i = 0; i <= size; i++) {
        if (i < size && !(i + 1 < size && (unsigned char)p[i] == 0xff && (unsigned char)p[i + 1] == 0xfe))
            continue;
        agent_statsd_feed(s, p + start, i - start);
        start = i + 2;
        i++;
    }

    int64_t now = base_mono_ns() / 1000000;
    for (int round = 0; round < 2; round++) {
        expo_mset ms;
        expo_mset_init(&ms);
        if (agent_statsd_collect_at(s, &ms, now + (round ? 5000 : 0)) != 0) abort();
        base_buf out = BASE_BUF_INIT;
        expo_mset *sets[] = {&ms};
        if (expo_write(sets, 1, EXPO_FMT_TEXT, &out) != 0) abort();
        check_text(out.data, out.len);
        double n = series_gauge(out.data);
        if (n > 64 || (round == 1 && n != 0)) abort();
        base_buf_free(&out);
        expo_mset_free(&ms);
    }
    agent_statsd_free(s);
    return 0;
}
