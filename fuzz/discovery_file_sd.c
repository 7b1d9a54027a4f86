/* fuzz/discovery_file_sd.c -- fuzz target for the file_sd document parser
 * (JSON and YAML). fuzz/discovery_http_sd.c includes this file with
 * DISC_FUZZ_HTTP set, so both share one body.
 *
 * Input: for file_sd, the first byte picks the syntax ('j': JSON, anything
 * else: YAML) and the rest is the document; for http_sd the whole input is
 * the body. For every input:
 *  1. parse; an error must carry a message and return nothing;
 *  2. on success check the invariants: sources "<origin>:<i>" in order,
 *     the origin label on every group, every target a set with at most
 *     __address__;
 *  3. write the groups back as JSON (targets and labels), parse that, and
 *     abort() unless the groups come back identical (the round trip).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "discovery/discovery.h"
#include "labels/labels.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)                                                                                          \
    do {                                                                                                     \
        if (!(cond)) abort();                                                                                \
    } while (0)

#ifdef DISC_FUZZ_HTTP
#define ORIGIN       "http://127.0.0.1:9/sd"
#define ORIGIN_LABEL "__meta_url"
static int parse(const char *b, size_t n, int json, disc_group ***g, size_t *ng, char *err, size_t errlen) {
    (void)json;
    return disc_parse_http_sd(b, n, ORIGIN, g, ng, err, errlen);
}
#else
#define ORIGIN       "/sd/targets"
#define ORIGIN_LABEL "__meta_filepath"
static int parse(const char *b, size_t n, int json, disc_group ***g, size_t *ng, char *err, size_t errlen) {
    return disc_parse_file_sd(b, n, json, ORIGIN, g, ng, err, errlen);
}
#endif

static void put_str(base_buf *b, base_str s) {
    base_buf_json_str(b, s.p, s.n);
}

static int has_nul(base_str s) {
    return s.n && memchr(s.p, '\0', s.n) != NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    int json = 1;
#ifndef DISC_FUZZ_HTTP
    if (size == 0) return 0;
    json = data[0] == 'j';
    data++;
    size--;
#endif
    disc_group **g = NULL;
    size_t n = 0;
    char err[256] = "";
    int rc = parse((const char *)data, size, json, &g, &n, err, sizeof err);
    if (rc) {
        CHECK(rc < 0 && err[0] && g == NULL);
        return 0;
    }
    /* invariants, and the JSON rendering */
    base_buf out = BASE_BUF_INIT;
    base_buf_init(&out, 0);
    base_buf_putc(&out, '[');
    int skip = 0;
    for (size_t i = 0; i < n; i++) {
        char src[64];
        snprintf(src, sizeof src, ORIGIN ":%zu", i);
        CHECK(strcmp(g[i]->source, src) == 0);
        CHECK(base_str_eqc(labels_get(g[i]->labels, base_str_c(ORIGIN_LABEL)), ORIGIN));
        base_buf_puts(&out, i ? ",{\"targets\":[" : "{\"targets\":[");
        for (size_t j = 0; j < g[i]->ntargets; j++) {
            CHECK(labels_len(g[i]->targets[j]) <= 1);
            base_str a = labels_get(g[i]->targets[j], base_str_c("__address__"));
            CHECK(labels_len(g[i]->targets[j]) == (a.n ? 1u : 0u));
            skip |= has_nul(a);
            if (j) base_buf_putc(&out, ',');
            put_str(&out, a);
        }
        base_buf_puts(&out, "],\"labels\":{");
        labels_iter it;
        labels_iter_init(&it, g[i]->labels);
        base_str ln, lv;
        int first = 1;
        while (labels_iter_next(&it, &ln, &lv)) {
            CHECK(labels_valid_label_name(ln));
            skip |= has_nul(lv);
            if (!first) base_buf_putc(&out, ',');
            first = 0;
            put_str(&out, ln);
            base_buf_putc(&out, ':');
            put_str(&out, lv);
        }
        base_buf_puts(&out, "}}");
    }
    base_buf_putc(&out, ']');
    if (!skip && !base_buf_err(&out)) {
        disc_group **g2 = NULL;
        size_t n2 = 0;
        rc = parse(out.data, out.len, 1, &g2, &n2, err, sizeof err);
        if (rc) fprintf(stderr, "round trip failed: %s\n%s\n", err, out.data);
        CHECK(rc == 0 && n2 == n);
        for (size_t i = 0; i < n; i++) {
            CHECK(strcmp(g[i]->source, g2[i]->source) == 0);
            CHECK(labels_equal(g[i]->labels, g2[i]->labels));
            CHECK(g[i]->ntargets == g2[i]->ntargets);
            for (size_t j = 0; j < g[i]->ntargets; j++)
                CHECK(labels_equal(g[i]->targets[j], g2[i]->targets[j]));
        }
        disc_groups_free(g2, n2);
    }
    base_buf_free(&out);
    disc_groups_free(g, n);
    return 0;
}
