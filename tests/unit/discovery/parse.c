/* tests/unit/discovery/parse.c -- target group documents (src/discovery/
 * parse.c): file_sd JSON and YAML, http_sd JSON; sources and origin labels;
 * Prometheus's errors (bad label names, unknown fields, nil groups, bad
 * JSON/YAML); empty inputs; big inputs and the group limit. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/buf.h"
#include "base/err.h"
#include "discovery/discovery.h"
#include "testutil.h"

/* Parses and renders as testutil's text; NULL on error (message in err). */
static char *parse_text(const char *doc, int json, const char *path, int *ret_rc, char *err, size_t errlen) {
    disc_group **g = NULL;
    size_t n = 0;
    int rc = disc_parse_file_sd(doc, strlen(doc), json, path, &g, &n, err, errlen);
    *ret_rc = rc;
    if (rc) return NULL;
    char *t = groups_text((const disc_group *const *)g, n);
    disc_groups_free(g, n);
    return t;
}

static void expect_ok(const char *doc, int json, const char *want) {
    char err[256] = "";
    int rc;
    char *t = parse_text(doc, json, "/sd/x.file", &rc, err, sizeof err);
    if (rc) fprintf(stderr, "unexpected error: %s\n", err);
    assert_int_equal(rc, 0);
    assert_string_equal(t, want);
    free(t);
}

static void expect_err(const char *doc, int json, int code, const char *msg_part) {
    char err[512] = "";
    int rc;
    char *t = parse_text(doc, json, "/sd/x.file", &rc, err, sizeof err);
    assert_null(t);
    assert_int_equal(rc, code);
    if (!strstr(err, msg_part)) fprintf(stderr, "message %s lacks %s\n", err, msg_part);
    assert_non_null(strstr(err, msg_part));
}

static void test_json(void **state) {
    (void)state;
    expect_ok(
        "[{\"targets\": [\"a:1\", \"b:2\"], \"labels\": {\"env\": \"prod\", \"rack\": \"r1\"}},"
        " {\"targets\": [\"c:3\"]}]",
        1,
        "/sd/x.file:0 {__meta_filepath=\"/sd/x.file\", env=\"prod\", rack=\"r1\"} {__address__=\"a:1\"} "
        "{__address__=\"b:2\"}\n"
        "/sd/x.file:1 {__meta_filepath=\"/sd/x.file\"} {__address__=\"c:3\"}\n");
    /* Go's encoding/json: case-insensitive field names, null = empty */
    expect_ok("[{\"Targets\": [\"a:1\"], \"LABELS\": null}, {\"targets\": null, \"labels\": {\"x\": null}}]",
              1,
              "/sd/x.file:0 {__meta_filepath=\"/sd/x.file\"} {__address__=\"a:1\"}\n"
              "/sd/x.file:1 {__meta_filepath=\"/sd/x.file\"}\n");
    /* the origin label wins over a given one; the last duplicate key wins */
    expect_ok(
        "[{\"targets\": [\"a:1\"], \"labels\": {\"__meta_filepath\": \"mine\", \"k\": \"1\", \"k\": \"2\"}}]",
        1, "/sd/x.file:0 {__meta_filepath=\"/sd/x.file\", k=\"2\"} {__address__=\"a:1\"}\n");
    /* top-level null and an empty list: no groups */
    expect_ok("null", 1, "");
    expect_ok(" [ ] ", 1, "");
    /* unicode values survive */
    expect_ok(
        "[{\"targets\": [\"h\\u00e9:1\"], \"labels\": {\"v\": \"\\u65e5\"}}]", 1,
        "/sd/x.file:0 {__meta_filepath=\"/sd/x.file\", v=\"\xe6\x97\xa5\"} {__address__=\"h\xc3\xa9:1\"}\n");
}

static void test_json_errors(void **state) {
    (void)state;
    expect_err("[{\"targets\": [\"a:1\"], \"labels\": {\"x-y\": \"1\"}}]", 1, BASE_E_PARSE,
               "\"x-y\" is not a valid label name");
    expect_err("[{\"targets\": [\"a:1\"], \"labels\": {\"1abc\": \"1\"}}]", 1, BASE_E_PARSE,
               "\"1abc\" is not a valid label name");
    expect_err("[{\"targets\": [\"a:1\"], \"labels\": {\"\": \"1\"}}]", 1, BASE_E_PARSE,
               "\"\" is not a valid label name");
    expect_err("[{\"targets\": [\"a:1\"], \"extra\": 1}]", 1, BASE_E_PARSE, "json: unknown field \"extra\"");
    expect_err("[null]", 1, BASE_E_PARSE, "nil target group item found");
    expect_err("[{\"targets\": [\"a:1\"]", 1, BASE_E_PARSE, "json:");
    expect_err("", 1, BASE_E_PARSE, "json:");
    expect_err("{\"targets\": []}", 1, BASE_E_PARSE, "cannot unmarshal object");
    expect_err("[{\"targets\": [1]}]", 1, BASE_E_PARSE, "cannot unmarshal number");
    expect_err("[{\"targets\": \"a:1\"}]", 1, BASE_E_PARSE, "cannot unmarshal string");
    expect_err("[{\"labels\": {\"a\": 1}}]", 1, BASE_E_PARSE, "cannot unmarshal number");
    expect_err("[{\"labels\": [\"a\"]}]", 1, BASE_E_PARSE, "cannot unmarshal array");
    expect_err("[1]", 1, BASE_E_PARSE, "cannot unmarshal number");
}

static void test_yaml(void **state) {
    (void)state;
    expect_ok("- targets: ['a:1', b:2]\n"
              "  labels:\n"
              "    env: prod\n"
              "    n: 42\n"
              "    t: true\n"
              "- targets:\n"
              "  - c:3\n",
              0,
              "/sd/x.file:0 {__meta_filepath=\"/sd/x.file\", env=\"prod\", n=\"42\", t=\"true\"} "
              "{__address__=\"a:1\"} {__address__=\"b:2\"}\n"
              "/sd/x.file:1 {__meta_filepath=\"/sd/x.file\"} {__address__=\"c:3\"}\n");
    /* empty documents, null and an empty list are no groups */
    expect_ok("", 0, "");
    expect_ok("# just a comment\n", 0, "");
    expect_ok("~\n", 0, "");
    expect_ok("[]\n", 0, "");
    /* nulls inside: no targets, empty labels */
    expect_ok("- targets:\n  labels:\n", 0, "/sd/x.file:0 {__meta_filepath=\"/sd/x.file\"}\n");
    /* anchors and aliases */
    expect_ok("- targets: &t [a:1]\n  labels: &l {x: y}\n- targets: *t\n  labels: *l\n", 0,
              "/sd/x.file:0 {__meta_filepath=\"/sd/x.file\", x=\"y\"} {__address__=\"a:1\"}\n"
              "/sd/x.file:1 {__meta_filepath=\"/sd/x.file\", x=\"y\"} {__address__=\"a:1\"}\n");
}

static void test_yaml_errors(void **state) {
    (void)state;
    expect_err("- targets: [a:1]\n  labels: {x-y: 1}\n", 0, BASE_E_PARSE,
               "\"x-y\" is not a valid label name");
    expect_err("- targets: [a:1]\n  foo: 1\n", 0, BASE_E_PARSE, "line 2: field foo not found");
    expect_err("- ~\n", 0, BASE_E_PARSE, "nil target group item found");
    expect_err("- targets: [a:1]\n  labels: {a: 1, a: 2}\n", 0, BASE_E_PARSE, "not unique");
    expect_err("- targets: [a:1]\n  targets: [b:2]\n", 0, BASE_E_PARSE, "already set");
    expect_err("targets: [a:1]\n", 0, BASE_E_PARSE, "cannot unmarshal !!map");
    expect_err("- targets: a:1\n", 0, BASE_E_PARSE, "cannot unmarshal !!str into []string");
    expect_err("- targets: [[a]]\n", 0, BASE_E_PARSE, "cannot unmarshal !!seq");
    expect_err("- labels: {a: [1]}\n", 0, BASE_E_PARSE, "line 1");
    expect_err("- targets: [a:1\n", 0, BASE_E_PARSE, "yaml: line");
    expect_err("- {targets: [a], labels: {x: \"unterminated}\n", 0, BASE_E_PARSE, "yaml: line");
}

static void test_http(void **state) {
    (void)state;
    const char *doc = "[{\"targets\": [\"a:1\"], \"labels\": {\"__meta_url\": \"x\", \"dc\": \"eu\"}}, {}]";
    disc_group **g = NULL;
    size_t n = 0;
    char err[256];
    assert_int_equal(disc_parse_http_sd(doc, strlen(doc), "http://127.0.0.1:1/sd", &g, &n, err, sizeof err),
                     0);
    char *t = groups_text((const disc_group *const *)g, n);
    assert_string_equal(t, "http://127.0.0.1:1/sd:0 {__meta_url=\"http://127.0.0.1:1/sd\", dc=\"eu\"} "
                           "{__address__=\"a:1\"}\n"
                           "http://127.0.0.1:1/sd:1 {__meta_url=\"http://127.0.0.1:1/sd\"}\n");
    free(t);
    disc_groups_free(g, n);
    assert_int_equal(disc_parse_http_sd("<html>", 6, "u", &g, &n, err, sizeof err), BASE_E_PARSE);
    disc_groups_free(NULL, 0);
}

static void test_big(void **state) {
    (void)state;
    /* 20000 groups of 5 targets and 3 labels, both syntaxes */
    for (int json = 0; json < 2; json++) {
        base_buf b = BASE_BUF_INIT;
        base_buf_init(&b, 0);
        if (json) base_buf_putc(&b, '[');
        for (int i = 0; i < 20000; i++) {
            if (json) {
                base_buf_printf(&b, "%s{\"targets\":[", i ? "," : "");
                for (int j = 0; j < 5; j++)
                    base_buf_printf(&b, "%s\"10.%d.%d.%d:9100\"", j ? "," : "", i / 256, i % 256, j);
                base_buf_printf(&b, "],\"labels\":{\"a\":\"%d\",\"b\":\"x\",\"c\":\"y\"}}", i);
            } else {
                base_buf_puts(&b, "- targets: [");
                for (int j = 0; j < 5; j++)
                    base_buf_printf(&b, "%s'10.%d.%d.%d:9100'", j ? "," : "", i / 256, i % 256, j);
                base_buf_printf(&b, "]\n  labels: {a: '%d', b: x, c: y}\n", i);
            }
        }
        if (json) base_buf_putc(&b, ']');
        assert_int_equal(base_buf_err(&b), 0);
        disc_group **g = NULL;
        size_t n = 0;
        char err[256] = "";
        int rc = disc_parse_file_sd(b.data, b.len, json, "/big", &g, &n, err, sizeof err);
        if (rc) fprintf(stderr, "%s\n", err);
        assert_int_equal(rc, 0);
        assert_int_equal(n, 20000);
        assert_string_equal(g[19999]->source, "/big:19999");
        assert_int_equal(g[19999]->ntargets, 5);
        base_str v = labels_get(g[19999]->targets[4], base_str_c("__address__"));
        assert_true(base_str_eqc(v, "10.78.31.4:9100"));
        v = labels_get(g[19999]->labels, base_str_c("a"));
        assert_true(base_str_eqc(v, "19999"));
        disc_groups_free(g, n);
        base_buf_free(&b);
    }
    /* past the group limit: BASE_E_LIMIT, nothing returned */
    base_buf b = BASE_BUF_INIT;
    base_buf_init(&b, 0);
    base_buf_putc(&b, '[');
    for (int i = 0; i < 100001; i++) base_buf_puts(&b, i ? ",{}" : "{}");
    base_buf_putc(&b, ']');
    disc_group **g = NULL;
    size_t n = 0;
    char err[256] = "";
    assert_int_equal(disc_parse_file_sd(b.data, b.len, 1, "/big", &g, &n, err, sizeof err), BASE_E_LIMIT);
    assert_null(g);
    assert_non_null(strstr(err, "target groups"));
    base_buf_free(&b);
    /* a document over the byte limit is refused before parsing */
    assert_int_equal(disc_parse_file_sd("[]", (size_t)65 << 20, 1, "/big", &g, &n, err, sizeof err),
                     BASE_E_LIMIT);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_json),        cmocka_unit_test(test_json_errors), cmocka_unit_test(test_yaml),
        cmocka_unit_test(test_yaml_errors), cmocka_unit_test(test_http),        cmocka_unit_test(test_big),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
