/* tests/unit/relabel/relabel.c -- src/relabel: Prometheus 2.42 relabeling.
 *
 * The process cases are the ones of 2.42's model/relabel/relabel_test.go
 * (TestRelabel; expected hashmod values taken from there), plus cases for
 * what that file leaves implicit: defaults, separators, named groups and
 * $$, labelmap iterating the rule's input (not its own output), 2.42's
 * replace quirks, lowercase/uppercase beyond ASCII, chaining calls on one
 * builder (scratch lifetime). The labelmap, replace-quirk, lowercase/
 * uppercase and hashmod outcomes were checked against a running
 * Prometheus 2.42 (/api/v1/targets after target relabeling). Validation: every message of 2.42's
 * Config.Validate, TestRelabelValidate and TestTargetLabelValidity (the
 * messages and which configs fail were checked against promtool 2.42's
 * `check config`). Also
 * action names, copy/equal/clear, and MD5 against RFC 1321's suite.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/buf.h"
#include "base/err.h"
#include "labels/labels.h"
#include "relabel/relabel.h"
#include "relabel/relabel_int.h"

/* ---- helpers ------------------------------------------------------------ */

static char *dup(const char *s) {
    char *d = strdup(s);
    assert_non_null(d);
    return d;
}

/* A raw rule as the config loader would fill it. src: comma-separated
 * source labels or NULL; any string NULL = unset. */
static void raw(relabel_rule *r, relabel_action a, const char *src, const char *regex, const char *target,
                const char *repl) {
    relabel_rule_init(r);
    r->action = a;
    if (src) {
        size_t n = 1;
        for (const char *p = src; *p; p++) n += *p == ',';
        r->source_labels = calloc(n, sizeof *r->source_labels);
        assert_non_null(r->source_labels);
        const char *p = src;
        for (size_t i = 0; i < n; i++) {
            const char *e = strchr(p, ',');
            size_t l = e ? (size_t)(e - p) : strlen(p);
            r->source_labels[i] = strndup(p, l);
            assert_non_null(r->source_labels[i]);
            p += l + 1;
        }
        r->nsource = n;
    }
    if (regex) {
        r->regex = dup(regex);
        r->has_regex = 1;
    }
    if (target) r->target_label = dup(target);
    if (repl) {
        r->replacement = dup(repl);
        r->has_replacement = 1;
    }
}

static void mk(relabel_rule *r, relabel_action a, const char *src, const char *regex, const char *target,
               const char *repl) {
    raw(r, a, src, regex, target, repl);
    char err[256] = "";
    int rc = relabel_rule_validate(r, err, sizeof err);
    if (rc != 0) fail_msg("validate: %s", err);
}

static void mkmod(relabel_rule *r, const char *src, const char *target, uint64_t modulus) {
    raw(r, RELABEL_HASHMOD, src, NULL, target, NULL);
    r->modulus = modulus;
    char err[256] = "";
    int rc = relabel_rule_validate(r, err, sizeof err);
    if (rc != 0) fail_msg("validate: %s", err);
}

static void free_rules(relabel_rule *r, size_t n) {
    for (size_t i = 0; i < n; i++) relabel_rule_clear(&r[i]);
}

/* Applies rules to in (consumed) and checks the outcome: want is the
 * output as labels_format writes it, or NULL for "dropped". */
static void expect(const relabel_rule *rules, size_t n, labels_set *in, const char *want) {
    labels_builder b;
    labels_builder_init(&b);
    assert_int_equal(labels_builder_from(&b, in), 0);
    int rc = relabel_process(rules, n, &b);
    if (!want) {
        assert_int_equal(rc, 0);
    } else {
        assert_int_equal(rc, 1);
        labels_set *out = NULL;
        char err[256] = "";
        rc = labels_builder_finish(&b, 0, &out, err, sizeof err);
        if (rc) fail_msg("finish: %s", err);
        base_buf f;
        base_buf_init(&f, 0);
        labels_format(out, &f);
        assert_int_equal(base_buf_err(&f), 0);
        assert_string_equal(f.data, want);
        base_buf_free(&f);
        labels_unref(out);
    }
    labels_builder_free(&b);
    labels_unref(in);
}

static labels_set *L(const char *name, ...) __attribute__((sentinel));
static labels_set *L(const char *name, ...) {
    /* up to 8 pairs */
    const char *kv[16] = {0};
    size_t n = 0;
    va_list ap;
    va_start(ap, name);
    for (const char *s = name; s; s = va_arg(ap, const char *)) {
        assert_true(n < 16);
        kv[n++] = s;
    }
    va_end(ap);
    assert_int_equal(n % 2, 0);
    labels_builder b;
    labels_builder_init(&b);
    for (size_t i = 0; i < n; i += 2)
        assert_int_equal(labels_builder_add(&b, base_str_c(kv[i]), base_str_c(kv[i + 1])), 0);
    labels_set *ls = NULL;
    assert_int_equal(labels_builder_finish(&b, 0, &ls, NULL, 0), 0);
    labels_builder_free(&b);
    return ls;
}

/* ---- MD5 and hashmod -------------------------------------------------- */

static void hex(const uint8_t d[16], char out[33]) {
    for (int i = 0; i < 16; i++) snprintf(out + 2 * i, 3, "%02x", d[i]);
}

static void test_md5_rfc1321(void **state) {
    (void)state;
    static const char *const v[][2] = {
        {"", "d41d8cd98f00b204e9800998ecf8427e"},
        {"a", "0cc175b9c0f1b6a831c399e269772661"},
        {"abc", "900150983cd24fb0d6963f7d28e17f72"},
        {"message digest", "f96b697d7cb7938d525a2f31aaf161d0"},
        {"abcdefghijklmnopqrstuvwxyz", "c3fcd3d76192e4007dfb496cca67e13b"},
        {"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
         "d174ab98d277d9f5a5611c2c9f419d9f"},
        {"12345678901234567890123456789012345678901234567890123456789012345678901234567890",
         "57edf4a22be3c955ac49da2e2107b67a"},
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        uint8_t d[16];
        char h[33];
        relabel__md5(v[i][0], strlen(v[i][0]), d);
        hex(d, h);
        assert_string_equal(h, v[i][1]);
    }
}

static void test_md5_block_edges(void **state) {
    (void)state;
    /* padding edges around 56 and 64 bytes; expected from Python's hashlib
     * over bytes (i * 7 + 3) & 255 */
    static const struct {
        size_t n;
        const char *h;
    } v[] = {
        {55, "52c0e574e1198de5fe3f8f11440dcb1b"},  {56, "46c9907fc908ee68b1e7b8e71286a518"},
        {63, "a62f6d59e837867693f042f5b8f5a236"},  {64, "7160b8fb5e9e4023d549c3971fbaeead"},
        {65, "70bd662e7aefbda85a0f7244167b7897"},  {127, "acce2474d6cc8302120d09c818d17ef7"},
        {128, "10b2da1a82f16d99a81a7203fe9f02cb"}, {1000, "10046f077f2082ac19676b8079f1cb1a"},
    };
    uint8_t buf[1000];
    for (size_t i = 0; i < sizeof buf; i++) buf[i] = (uint8_t)((i * 7 + 3) & 255);
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        uint8_t d[16];
        char h[33];
        relabel__md5(buf, v[i].n, d);
        hex(d, h);
        assert_string_equal(h, v[i].h);
    }
}

static void test_hashmod_values(void **state) {
    (void)state;
    /* relabel_test.go: "baz" % 1000 = 976, "foo\nbar" % 1000 = 734 */
    assert_int_equal(relabel__hashmod("baz", 3, 1000), 976);
    assert_int_equal(relabel__hashmod("foo\nbar", 7, 1000), 734);
    /* Python: int.from_bytes(md5(s).digest()[8:], 'big') % m */
    assert_int_equal(relabel__hashmod("", 0, 1000), 958);
    assert_int_equal(relabel__hashmod("10.0.0.1:9100", 13, 7), 2);
    assert_true(relabel__hashmod("a;b", 3, UINT64_MAX) == 2420134994223480074ull);
}

/* ---- actions ------------------------------------------------------------ */

static void test_action_names(void **state) {
    (void)state;
    static const char *const names[] = {"replace",   "keep",      "drop",     "keepequal",
                                        "dropequal", "hashmod",   "labelmap", "labeldrop",
                                        "labelkeep", "lowercase", "uppercase"};
    for (size_t i = 0; i < 11; i++) {
        relabel_action a = (relabel_action)99;
        assert_string_equal(relabel_action_name((relabel_action)i), names[i]);
        assert_int_equal(relabel_action_parse(names[i], &a, NULL, 0), 0);
        assert_int_equal(a, (relabel_action)i);
    }
    relabel_action a = RELABEL_DROP;
    char err[128];
    assert_int_equal(relabel_action_parse("LabelMap", &a, err, sizeof err), 0);
    assert_int_equal(a, RELABEL_LABELMAP);
    assert_int_equal(relabel_action_parse("KEEPEQUAL", &a, err, sizeof err), 0);
    assert_int_equal(a, RELABEL_KEEPEQUAL);
    /* Go's strings.ToLower maps the Kelvin sign U+212A to 'k' */
    assert_int_equal(relabel_action_parse("\xe2\x84\xaa"
                                          "eep",
                                          &a, err, sizeof err),
                     0);
    assert_int_equal(a, RELABEL_KEEP);
    a = RELABEL_DROP;
    assert_int_equal(relabel_action_parse("foo", &a, err, sizeof err), BASE_E_INVAL);
    assert_string_equal(err, "unknown relabel action \"foo\"");
    assert_int_equal(a, RELABEL_DROP); /* untouched on error */
    assert_int_equal(relabel_action_parse("", &a, err, sizeof err), BASE_E_INVAL);
    assert_string_equal(err, "unknown relabel action \"\"");
}

/* ---- validation ---------------------------------------------------------- */

static void expect_invalid(relabel_rule *r, const char *want) {
    char err[256] = "";
    assert_int_equal(relabel_rule_validate(r, err, sizeof err), BASE_E_INVAL);
    assert_string_equal(err, want);
    assert_null(r->re);
    relabel_rule_clear(r);
}

static void expect_valid(relabel_rule *r) {
    char err[256] = "";
    int rc = relabel_rule_validate(r, err, sizeof err);
    if (rc) fail_msg("validate: %s", err);
    assert_non_null(r->re);
    relabel_rule_clear(r);
}

static void test_validate_defaults(void **state) {
    (void)state;
    relabel_rule r;
    raw(&r, RELABEL_REPLACE, "a", NULL, "b", NULL);
    char err[128];
    assert_int_equal(relabel_rule_validate(&r, err, sizeof err), 0);
    assert_true(base_str_eqc(r.eff_separator, ";"));
    assert_true(base_str_eqc(r.eff_regex, "(.*)"));
    assert_true(base_str_eqc(r.eff_replacement, "$1"));
    assert_true(base_str_eqc(r.eff_target, "b"));
    /* raw fields are left as given */
    assert_null(r.separator);
    assert_null(r.regex);
    assert_null(r.replacement);
    /* validating twice is fine */
    assert_int_equal(relabel_rule_validate(&r, err, sizeof err), 0);
    assert_non_null(r.re);
    relabel_rule_clear(&r);
    /* explicit empty fields are empty, not defaults */
    raw(&r, RELABEL_REPLACE, "a,b", NULL, "c", NULL);
    r.has_separator = 1;
    r.has_replacement = 1;
    assert_int_equal(relabel_rule_validate(&r, err, sizeof err), 0);
    assert_int_equal(r.eff_separator.n, 0);
    assert_int_equal(r.eff_replacement.n, 0);
    relabel_rule_clear(&r);
}

static void test_validate_messages(void **state) {
    (void)state;
    relabel_rule r;
    /* hashmod */
    raw(&r, RELABEL_HASHMOD, "a", NULL, "b", NULL);
    expect_invalid(&r, "relabel configuration for hashmod requires non-zero modulus");
    raw(&r, RELABEL_HASHMOD, "a", NULL, NULL, NULL);
    r.modulus = 10;
    expect_invalid(&r, "relabel configuration for hashmod action requires 'target_label' value");
    raw(&r, RELABEL_HASHMOD, "a", NULL, "${1}", NULL);
    r.modulus = 10;
    expect_invalid(&r, "\"${1}\" is invalid 'target_label' for hashmod action");
    raw(&r, RELABEL_HASHMOD, "a", NULL, "t", NULL);
    r.modulus = 10;
    expect_valid(&r);
    /* target_label required (TestRelabelValidate) */
    static const relabel_action need_target[] = {RELABEL_REPLACE, RELABEL_LOWERCASE, RELABEL_UPPERCASE,
                                                 RELABEL_KEEPEQUAL, RELABEL_DROPEQUAL};
    for (size_t i = 0; i < 5; i++) {
        char want[128];
        raw(&r, need_target[i], "a", NULL, NULL, NULL);
        snprintf(want, sizeof want, "relabel configuration for %s action requires 'target_label' value",
                 relabel_action_name(need_target[i]));
        expect_invalid(&r, want);
    }
    /* replace target templates (TestRelabelValidate) */
    raw(&r, RELABEL_REPLACE, "a", "some-([^-]+)-([^,]+)", "${3}", "${1}");
    expect_valid(&r);
    raw(&r, RELABEL_REPLACE, "a", "some-([^-]+)-([^,]+)", "0${3}", "${1}");
    expect_invalid(&r, "\"0${3}\" is invalid 'target_label' for replace action");
    raw(&r, RELABEL_REPLACE, "a", "some-([^-]+)-([^,]+)", "-${3}", "${1}");
    expect_invalid(&r, "\"-${3}\" is invalid 'target_label' for replace action");
    raw(&r, RELABEL_REPLACE, "a", NULL, "a-b", NULL);
    expect_invalid(&r, "\"a-b\" is invalid 'target_label' for replace action");
    raw(&r, RELABEL_REPLACE, "a", NULL, "caf\xc3\xa9", NULL);
    expect_invalid(&r, "\"café\" is invalid 'target_label' for replace action");
    /* lowercase/uppercase: the replace pattern, so 2.42 accepts a template
     * (which processing leaves out, see do_case) */
    raw(&r, RELABEL_LOWERCASE, "a", NULL, "${3}", NULL);
    expect_valid(&r);
    raw(&r, RELABEL_UPPERCASE, "a", NULL, "x y", NULL);
    expect_invalid(&r, "\"x y\" is invalid 'target_label' for uppercase action");
    raw(&r, RELABEL_UPPERCASE, "a", NULL, "b", "x");
    expect_invalid(&r, "'replacement' can not be set for uppercase action");
    raw(&r, RELABEL_UPPERCASE, "a", NULL, "b", "$1");
    expect_valid(&r);
    /* keepequal / dropequal */
    raw(&r, RELABEL_KEEPEQUAL, "a", NULL, "b", NULL);
    expect_valid(&r);
    raw(&r, RELABEL_KEEPEQUAL, "a", "(.*)", "b", NULL);
    expect_invalid(&r,
                   "keepequal action requires only 'source_labels' and `target_label`, and no other fields");
    raw(&r, RELABEL_DROPEQUAL, "a", NULL, "b", NULL);
    r.separator = dup(",");
    r.has_separator = 1;
    expect_invalid(&r,
                   "dropequal action requires only 'source_labels' and `target_label`, and no other fields");
    raw(&r, RELABEL_DROPEQUAL, "a", NULL, "b", NULL);
    r.modulus = 3;
    expect_invalid(&r,
                   "dropequal action requires only 'source_labels' and `target_label`, and no other fields");
    raw(&r, RELABEL_DROPEQUAL, "a", NULL, "b", "x");
    expect_invalid(&r, "'replacement' can not be set for dropequal action");
    raw(&r, RELABEL_DROPEQUAL, "a", NULL, "${1}", NULL);
    expect_valid(&r); /* 2.42 checks only relabelTarget here */
    /* labeldrop / labelkeep */
    raw(&r, RELABEL_LABELDROP, NULL, "a.*", NULL, NULL);
    expect_valid(&r);
    raw(&r, RELABEL_LABELDROP, NULL, "a.*", NULL, NULL);
    r.separator = dup(";");
    r.has_separator = 1; /* the default's value is allowed, as in Go */
    expect_valid(&r);
    raw(&r, RELABEL_LABELDROP, "a", "a.*", NULL, NULL);
    expect_invalid(&r, "labeldrop action requires only 'regex', and no other fields");
    raw(&r, RELABEL_LABELDROP, NULL, "a.*", NULL, NULL); /* source_labels: [] */
    r.source_labels = calloc(1, sizeof *r.source_labels);
    assert_non_null(r.source_labels);
    expect_invalid(&r, "labeldrop action requires only 'regex', and no other fields");
    raw(&r, RELABEL_LABELKEEP, NULL, "a.*", "t", NULL);
    expect_invalid(&r, "labelkeep action requires only 'regex', and no other fields");
    raw(&r, RELABEL_LABELKEEP, NULL, "a.*", NULL, "x");
    expect_invalid(&r, "labelkeep action requires only 'regex', and no other fields");
    raw(&r, RELABEL_LABELKEEP, NULL, "a.*", NULL, NULL);
    r.modulus = 1;
    expect_invalid(&r, "labelkeep action requires only 'regex', and no other fields");
    raw(&r, RELABEL_LABELKEEP, NULL, "a.*", NULL, NULL);
    r.has_separator = 1; /* separator: "" */
    expect_invalid(&r, "labelkeep action requires only 'regex', and no other fields");
    /* labelmap replacement */
    raw(&r, RELABEL_LABELMAP, NULL, "__meta_(.*)", NULL, "${1}");
    expect_valid(&r);
    raw(&r, RELABEL_LABELMAP, NULL, "__meta_(.*)", NULL, "x-${1}");
    expect_invalid(&r, "\"x-${1}\" is invalid 'replacement' for labelmap action");
    /* regex errors come from the regex parser, as Go words them */
    raw(&r, RELABEL_KEEP, "a", "(a", NULL, NULL);
    expect_invalid(&r, "error parsing regexp: missing closing ): `^(?:(a)$`");
    /* source label names */
    raw(&r, RELABEL_KEEP, "a,b-c", "x", NULL, NULL);
    expect_invalid(&r, "\"b-c\" is not a valid label name");
    /* keep/drop need nothing else */
    raw(&r, RELABEL_DROP, NULL, NULL, NULL, NULL);
    expect_valid(&r);
}

static void test_target_validity(void **state) {
    (void)state;
    /* TestTargetLabelValidity */
    static const struct {
        const char *s;
        int ok;
    } v[] = {
        {"-label", 0}, {"label", 1},        {"label${1}", 1}, {"${1}label", 1},
        {"${1}", 1},   {"${", 0},           {"$", 0},         {"${}", 0},
        {"foo${", 0},  {"$1", 1},           {"asd$2asd", 1},  {"-foo${1}bar-", 0},
        {"_${1}_", 1}, {"foo${bar}foo", 1}, {"", 0},          {"1abc", 0},
        {"$1abc", 1},  {"${a}${b}", 1},     {"a${b", 0},      {"a$", 0},
        {"a.b", 0},    {"${a-b}", 0},
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
        if (relabel__valid_target(v[i].s, strlen(v[i].s)) != v[i].ok)
            fail_msg("%s: want %d", v[i].s, v[i].ok);
}

/* ---- TestRelabel ---------------------------------------------------------- */

static void test_relabel_go_cases(void **state) {
    (void)state;
    relabel_rule r[3];

    mk(&r[0], RELABEL_REPLACE, "a", "f(.*)", "d", "ch${1}-ch${1}");
    expect(r, 1, L("a", "foo", "b", "bar", "c", "baz", NULL),
           "{a=\"foo\", b=\"bar\", c=\"baz\", d=\"choo-choo\"}");
    free_rules(r, 1);

    mk(&r[0], RELABEL_REPLACE, "a,b", "f(.*);(.*)r", "a", "b${1}${2}m");
    mk(&r[1], RELABEL_REPLACE, "c,a", "(b).*b(.*)ba(.*)", "d", "$1$2$2$3");
    expect(r, 2, L("a", "foo", "b", "bar", "c", "baz", NULL),
           "{a=\"boobam\", b=\"bar\", c=\"baz\", d=\"boooom\"}");
    free_rules(r, 2);

    mk(&r[0], RELABEL_DROP, "a", ".*o.*", NULL, NULL);
    mk(&r[1], RELABEL_REPLACE, "a", "f(.*)", "d", "ch$1-ch$1");
    expect(r, 2, L("a", "foo", NULL), NULL);
    free_rules(r, 2);

    mk(&r[0], RELABEL_DROP, "a", ".*o.*", NULL, NULL);
    expect(r, 1, L("a", "foo", "b", "bar", NULL), NULL);
    free_rules(r, 1);

    mk(&r[0], RELABEL_REPLACE, "a", ".*(b).*", "d", "$1");
    expect(r, 1, L("a", "abc", NULL), "{a=\"abc\", d=\"b\"}");
    free_rules(r, 1);

    mk(&r[0], RELABEL_DROP, "a", "no-match", NULL, NULL);
    expect(r, 1, L("a", "foo", NULL), "{a=\"foo\"}");
    free_rules(r, 1);

    mk(&r[0], RELABEL_DROP, "a", "f|o", NULL, NULL); /* anchored: no match */
    expect(r, 1, L("a", "foo", NULL), "{a=\"foo\"}");
    free_rules(r, 1);

    mk(&r[0], RELABEL_KEEP, "a", "no-match", NULL, NULL);
    expect(r, 1, L("a", "foo", NULL), NULL);
    free_rules(r, 1);

    mk(&r[0], RELABEL_KEEP, "a", "f.*", NULL, NULL);
    expect(r, 1, L("a", "foo", NULL), "{a=\"foo\"}");
    free_rules(r, 1);

    /* No replacement must be applied if there is no match. */
    mk(&r[0], RELABEL_REPLACE, "a", "f", "b", "bar");
    expect(r, 1, L("a", "boo", NULL), "{a=\"boo\"}");
    free_rules(r, 1);

    mkmod(&r[0], "c", "d", 1000);
    expect(r, 1, L("a", "foo", "b", "bar", "c", "baz", NULL), "{a=\"foo\", b=\"bar\", c=\"baz\", d=\"976\"}");
    free_rules(r, 1);

    mkmod(&r[0], "a", "b", 1000);
    expect(r, 1, L("a", "foo\nbar", NULL), "{a=\"foo\\nbar\", b=\"734\"}");
    free_rules(r, 1);

    mk(&r[0], RELABEL_LABELMAP, NULL, "(b.*)", NULL, "bar_${1}");
    expect(r, 1, L("a", "foo", "b1", "bar", "b2", "baz", NULL),
           "{a=\"foo\", b1=\"bar\", b2=\"baz\", bar_b1=\"bar\", bar_b2=\"baz\"}");
    free_rules(r, 1);

    mk(&r[0], RELABEL_LABELMAP, NULL, "__meta_(my.*)", NULL, "${1}");
    expect(r, 1, L("a", "foo", "__meta_my_bar", "aaa", "__meta_my_baz", "bbb", "__meta_other", "ccc", NULL),
           "{__meta_my_bar=\"aaa\", __meta_my_baz=\"bbb\", __meta_other=\"ccc\", a=\"foo\", my_bar=\"aaa\", "
           "my_baz=\"bbb\"}");
    free_rules(r, 1);

    /* valid case */
    mk(&r[0], RELABEL_REPLACE, "a", "some-([^-]+)-([^,]+)", "${1}", "${2}");
    expect(r, 1, L("a", "some-name-value", NULL), "{a=\"some-name-value\", name=\"value\"}");
    free_rules(r, 1);

    /* invalid replacement "" */
    mk(&r[0], RELABEL_REPLACE, "a", "some-([^-]+)-([^,]+)", "${1}", "${3}");
    expect(r, 1, L("a", "some-name-value", NULL), "{a=\"some-name-value\"}");
    free_rules(r, 1);

    /* invalid target_labels */
    mk(&r[0], RELABEL_REPLACE, "a", "some-([^-]+)-([^,]+)", "${3}", "${1}");
    mk(&r[1], RELABEL_REPLACE, "a", "some-([^-]+)-([^,]+)", "${3}", "${1}");
    mk(&r[2], RELABEL_REPLACE, "a", "some-([^-]+)(-[^,]+)", "${3}", "${1}");
    expect(r, 3, L("a", "some-name-0", NULL), "{a=\"some-name-0\"}");
    free_rules(r, 3);

    /* more complex real-life like usecase */
    mk(&r[0], RELABEL_REPLACE, "__meta_sd_tags", "(?:.+,|^)path:(/[^,]+).*", "__metrics_path__", "${1}");
    mk(&r[1], RELABEL_REPLACE, "__meta_sd_tags", "(?:.+,|^)job:([^,]+).*", "job", "${1}");
    mk(&r[2], RELABEL_REPLACE, "__meta_sd_tags", "(?:.+,|^)label:([^=]+)=([^,]+).*", "${1}", "${2}");
    expect(r, 3, L("__meta_sd_tags", "path:/secret,job:some-job,label:foo=bar", NULL),
           "{__meta_sd_tags=\"path:/secret,job:some-job,label:foo=bar\", __metrics_path__=\"/secret\", "
           "foo=\"bar\", job=\"some-job\"}");
    free_rules(r, 3);

    /* prometheus/prometheus#12283 */
    mk(&r[0], RELABEL_LABELDROP, NULL, "^__meta_kubernetes_pod_container_port_name$", NULL, NULL);
    mk(&r[1], RELABEL_REPLACE, "__meta_kubernetes_pod_annotation_XXX_metrics_port", "(.+)",
       "__meta_kubernetes_pod_container_port_name", "metrics");
    mk(&r[2], RELABEL_KEEP, "__meta_kubernetes_pod_container_port_name", "^metrics$", NULL, NULL);
    expect(r, 3,
           L("__meta_kubernetes_pod_container_port_name", "foo",
             "__meta_kubernetes_pod_annotation_XXX_metrics_port", "9091", NULL),
           "{__meta_kubernetes_pod_annotation_XXX_metrics_port=\"9091\", "
           "__meta_kubernetes_pod_container_port_name=\"metrics\"}");
    free_rules(r, 3);

    mk(&r[0], RELABEL_LABELKEEP, NULL, "(b.*)", NULL, NULL);
    expect(r, 1, L("a", "foo", "b1", "bar", "b2", "baz", NULL), "{b1=\"bar\", b2=\"baz\"}");
    free_rules(r, 1);

    mk(&r[0], RELABEL_LABELDROP, NULL, "(b.*)", NULL, NULL);
    expect(r, 1, L("a", "foo", "b1", "bar", "b2", "baz", NULL), "{a=\"foo\"}");
    free_rules(r, 1);

    mk(&r[0], RELABEL_UPPERCASE, "foo", NULL, "foo_uppercase", NULL);
    mk(&r[1], RELABEL_LOWERCASE, "foo", NULL, "foo_lowercase", NULL);
    expect(r, 2, L("foo", "bAr123Foo", NULL),
           "{foo=\"bAr123Foo\", foo_lowercase=\"bar123foo\", foo_uppercase=\"BAR123FOO\"}");
    free_rules(r, 2);

    const char *ports = "{__port1=\"1234\", __port2=\"5678\", __tmp_port=\"1234\"}";
    mk(&r[0], RELABEL_KEEPEQUAL, "__tmp_port", NULL, "__port1", NULL);
    expect(r, 1, L("__tmp_port", "1234", "__port1", "1234", "__port2", "5678", NULL), ports);
    free_rules(r, 1);
    mk(&r[0], RELABEL_DROPEQUAL, "__tmp_port", NULL, "__port1", NULL);
    expect(r, 1, L("__tmp_port", "1234", "__port1", "1234", "__port2", "5678", NULL), NULL);
    free_rules(r, 1);
    mk(&r[0], RELABEL_DROPEQUAL, "__tmp_port", NULL, "__port2", NULL);
    expect(r, 1, L("__tmp_port", "1234", "__port1", "1234", "__port2", "5678", NULL), ports);
    free_rules(r, 1);
    mk(&r[0], RELABEL_KEEPEQUAL, "__tmp_port", NULL, "__port2", NULL);
    expect(r, 1, L("__tmp_port", "1234", "__port1", "1234", "__port2", "5678", NULL), NULL);
    free_rules(r, 1);
}

/* ---- beyond relabel_test.go ---------------------------------------------- */

static void test_replace_details(void **state) {
    (void)state;
    relabel_rule r[2];

    /* defaults: (.*) -> $1, separator ";" over several sources */
    mk(&r[0], RELABEL_REPLACE, "a,b,missing", NULL, "t", NULL);
    expect(r, 1, L("a", "x", "b", "y", NULL), "{a=\"x\", b=\"y\", t=\"x;y;\"}");
    free_rules(r, 1);

    /* explicit empty separator */
    raw(&r[0], RELABEL_REPLACE, "a,b", NULL, "t", NULL);
    r[0].has_separator = 1;
    assert_int_equal(relabel_rule_validate(&r[0], NULL, 0), 0);
    expect(r, 1, L("a", "x", "b", "y", NULL), "{a=\"x\", b=\"y\", t=\"xy\"}");
    free_rules(r, 1);

    /* no source labels: adds a constant label (default regex matches "") */
    mk(&r[0], RELABEL_REPLACE, NULL, NULL, "env", "prod");
    expect(r, 1, L("a", "x", NULL), "{a=\"x\", env=\"prod\"}");
    free_rules(r, 1);

    /* empty result deletes the target */
    mk(&r[0], RELABEL_REPLACE, "missing", NULL, "a", NULL);
    expect(r, 1, L("a", "x", "b", "y", NULL), "{b=\"y\"}");
    free_rules(r, 1);

    /* named groups, $name, ${name}, $$ and unknown groups */
    mk(&r[0], RELABEL_REPLACE, "__address__", "(?P<host>[^:]+):(?P<port>\\d+)", "instance",
       "${host}-$port-$$-${nope}-$9");
    expect(r, 1, L("__address__", "node1:9100", NULL),
           "{__address__=\"node1:9100\", instance=\"node1-9100-$--\"}");
    free_rules(r, 1);

    /* $1x is the group named "1x" (Go's longest name rule): empty */
    mk(&r[0], RELABEL_REPLACE, "a", "(.*)", "t", "$1x");
    expect(r, 1, L("a", "v", NULL), "{a=\"v\"}");
    free_rules(r, 1);

    /* "$1" over a regex without groups gives "" (and deletes) */
    mk(&r[0], RELABEL_REPLACE, "a", "v", "a", NULL);
    expect(r, 1, L("a", "v", "b", "w", NULL), "{b=\"w\"}");
    free_rules(r, 1);

    /* unmatched optional group over several sources */
    mk(&r[0], RELABEL_REPLACE, "a,b", "(x)?;(.*)", "t", "[$1|$2]");
    expect(r, 1, L("a", "", "b", "w", NULL), "{b=\"w\", t=\"[|w]\"}");
    free_rules(r, 1);

    /* templated target expanding to an invalid name: no change */
    mk(&r[0], RELABEL_REPLACE, "a", "(.*)", "x${1}", "v");
    expect(r, 1, L("a", "-bad", NULL), "{a=\"-bad\"}");
    free_rules(r, 1);

    /* 2.42 quirk: an empty value deletes the *unexpanded* target_label, so
     * a templated target is left alone (2.49 deletes the expanded name) */
    mk(&r[0], RELABEL_REPLACE, "a", "(.*)", "${1}", "${2}");
    expect(r, 1, L("a", "b", "b", "keep", NULL), "{a=\"b\", b=\"keep\"}");
    free_rules(r, 1);

    /* overwrite an existing label; the regex sees the value joined before
     * the rule; rules see each other's output */
    mk(&r[0], RELABEL_REPLACE, "a", "(.)(.)", "a", "$2$1");
    mk(&r[1], RELABEL_REPLACE, "a", NULL, "b", "<$1>");
    expect(r, 2, L("a", "xy", NULL), "{a=\"yx\", b=\"<yx>\"}");
    free_rules(r, 2);

    /* `.` matches newlines? No: Go's default, (?s) not set in 2.42 */
    mk(&r[0], RELABEL_KEEP, "a", "foo.bar", NULL, NULL);
    expect(r, 1, L("a", "foo\nbar", NULL), NULL);
    free_rules(r, 1);
}

static void test_labelmap_input_snapshot(void **state) {
    (void)state;
    relabel_rule r[1];
    /* 2.42 iterates the rule's input set: x_a is mapped with its original
     * value even though mapping a overwrote it first */
    mk(&r[0], RELABEL_LABELMAP, NULL, "(.*)", NULL, "x_$1");
    expect(r, 1, L("a", "1", "x_a", "2", NULL), "{a=\"1\", x_a=\"1\", x_x_a=\"2\"}");
    free_rules(r, 1);
    /* literal replacement: every matching label maps onto one name */
    mk(&r[0], RELABEL_LABELMAP, NULL, "b(.*)", NULL, "same");
    expect(r, 1, L("b1", "v", "c", "w", NULL), "{b1=\"v\", c=\"w\", same=\"v\"}");
    free_rules(r, 1);
    /* labelkeep with nothing matching empties the set */
    mk(&r[0], RELABEL_LABELKEEP, NULL, "zzz", NULL, NULL);
    expect(r, 1, L("a", "1", NULL), "{}");
    free_rules(r, 1);
}

static void test_case_unicode(void **state) {
    (void)state;
    relabel_rule r[2];
    mk(&r[0], RELABEL_LOWERCASE, "a", NULL, "lo", NULL);
    mk(&r[1], RELABEL_UPPERCASE, "a", NULL, "up", NULL);
    /* Ä Σ ß; ß has no simple uppercase in Go */
    expect(r, 2,
           L("a",
             "\xc3\x84x\xce\xa3stra\xc3\x9f"
             "e",
             NULL),
           "{a=\"ÄxΣstraße\", lo=\"äxσstraße\", up=\"ÄXΣSTRAßE\"}");
    /* an invalid byte becomes U+FFFD, as strings.Map does */
    free_rules(r, 2);
    mk(&r[0], RELABEL_LOWERCASE, "a", NULL, "lo", NULL);
    labels_builder b;
    labels_builder_init(&b);
    assert_int_equal(labels_builder_add(&b, base_str_c("a"), (base_str){"A\xff", 2}), 0);
    assert_int_equal(relabel_process(r, 1, &b), 1);
    base_str lo = labels_builder_get(&b, base_str_c("lo"));
    assert_int_equal(lo.n, 4);
    assert_memory_equal(lo.p, "a\xef\xbf\xbd", 4);
    labels_builder_free(&b);
    /* empty source: lowercase sets "" which deletes the target */
    mk(&r[1], RELABEL_LOWERCASE, "missing", NULL, "a", NULL);
    expect(&r[1], 1, L("a", "X", NULL), "{}");
    free_rules(r, 2);
}

static void test_hashmod_process(void **state) {
    (void)state;
    relabel_rule r[2];
    mkmod(&r[0], "__address__", "__tmp_hash", 7);
    mk(&r[1], RELABEL_KEEP, "__tmp_hash", "2", NULL, NULL);
    expect(r, 2, L("__address__", "10.0.0.1:9100", NULL),
           "{__address__=\"10.0.0.1:9100\", __tmp_hash=\"2\"}");
    free_rules(r, 2);
    mkmod(&r[0], "a,b", "h", UINT64_MAX);
    expect(r, 1, L("a", "a", "b", "b", NULL), "{a=\"a\", b=\"b\", h=\"2420134994223480074\"}");
    free_rules(r, 1);
}

/* Scratch strings survive several calls on one builder and are recycled
 * once the builder no longer holds them. */
static void test_chained_calls_and_reuse(void **state) {
    (void)state;
    relabel_rule r[2];
    mk(&r[0], RELABEL_REPLACE, "a,b", "(.*)", "j", "<$1>");
    mk(&r[1], RELABEL_UPPERCASE, "j", NULL, "k", NULL);
    labels_builder b;
    labels_builder_init(&b);
    for (int it = 0; it < 300; it++) {
        char v[32];
        snprintf(v, sizeof v, "val%d", it);
        labels_set *in = L("a", v, "b", "x", NULL);
        assert_int_equal(labels_builder_from(&b, in), 0);
        labels_unref(in);
        assert_int_equal(relabel_process(&r[0], 1, &b), 1);
        assert_int_equal(relabel_process(&r[1], 1, &b), 1); /* chained: j must still be valid */
        labels_set *out;
        assert_int_equal(labels_builder_finish(&b, LABELS_VALIDATE, &out, NULL, 0), 0);
        char want[96];
        snprintf(want, sizeof want, "<VAL%d;X>", it);
        base_str k = labels_get(out, base_str_c("k"));
        assert_int_equal(k.n, strlen(want));
        assert_memory_equal(k.p, want, k.n);
        labels_unref(out);
    }
    labels_builder_free(&b);
    free_rules(r, 2);
    relabel_thread_cleanup();
    relabel_thread_cleanup(); /* idempotent */
}

/* Rules are shared read-only by threads, each with its own builder; each
 * thread's scratch is freed at thread exit (LeakSanitizer checks). */
typedef struct thr_arg {
    const relabel_rule *rules;
    int id, ok;
} thr_arg;

static void *thr_main(void *p) {
    thr_arg *a = p;
    labels_builder b;
    labels_builder_init(&b);
    a->ok = 1;
    for (int it = 0; it < 200 && a->ok; it++) {
        char v[32], want[64];
        snprintf(v, sizeof v, "t%d-%d", a->id, it);
        snprintf(want, sizeof want, "x_T%d-%d", a->id, it);
        labels_builder_reset(&b);
        if (labels_builder_add(&b, base_str_c("a"), base_str_c(v)) < 0) a->ok = 0;
        if (relabel_process(a->rules, 2, &b) != 1) a->ok = 0;
        base_str got = labels_builder_get(&b, base_str_c("u"));
        if (got.n != strlen(want) || memcmp(got.p, want, got.n) != 0) a->ok = 0;
    }
    labels_builder_free(&b);
    labels_thread_cleanup();
    return NULL;
}

static void test_threads(void **state) {
    (void)state;
    relabel_rule r[2];
    mk(&r[0], RELABEL_UPPERCASE, "a", NULL, "up", NULL);
    mk(&r[1], RELABEL_REPLACE, "up", "(.*)", "u", "x_$1");
    pthread_t t[4];
    thr_arg args[4];
    for (int i = 0; i < 4; i++) {
        args[i] = (thr_arg){r, i, 0};
        assert_int_equal(pthread_create(&t[i], NULL, thr_main, &args[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        assert_int_equal(pthread_join(t[i], NULL), 0);
        assert_true(args[i].ok);
    }
    free_rules(r, 2);
}

static void test_unvalidated_and_empty(void **state) {
    (void)state;
    relabel_rule r;
    raw(&r, RELABEL_KEEP, "a", "x", NULL, NULL);
    labels_builder b;
    labels_builder_init(&b);
    assert_int_equal(relabel_process(&r, 1, &b), BASE_E_INVAL);
    assert_int_equal(relabel_process(NULL, 0, &b), 1);
    labels_builder_free(&b);
    relabel_rule_clear(&r);
}

/* ---- copy / equal -------------------------------------------------------- */

static void test_copy_equal(void **state) {
    (void)state;
    relabel_rule a, c;
    mk(&a, RELABEL_REPLACE, "x,y", "(.*);(.*)", "t_${1}", "$2");
    a.line = 12;
    char err[128];
    assert_int_equal(relabel_rule_copy(&c, &a, err, sizeof err), 0);
    assert_true(relabel_rule_equal(&a, &c));
    assert_non_null(c.re);
    assert_ptr_not_equal(c.re, a.re);
    assert_ptr_not_equal(c.source_labels, a.source_labels);
    assert_ptr_not_equal(c.source_labels[0], a.source_labels[0]);
    assert_int_equal(c.line, 12);
    /* the copy works on its own */
    relabel_rule_clear(&a);
    expect(&c, 1, L("x", "k", "y", "v", NULL), "{t_k=\"v\", x=\"k\", y=\"v\"}");

    /* each field matters */
    relabel_rule d;
    mk(&a, RELABEL_REPLACE, "x,y", "(.*);(.*)", "t_${1}", "$2");
    assert_true(relabel_rule_equal(&a, &c));
    free(a.replacement);
    a.replacement = dup("$1");
    assert_false(relabel_rule_equal(&a, &c));
    relabel_rule_clear(&a);
    mk(&a, RELABEL_REPLACE, "x", "(.*);(.*)", "t_${1}", "$2");
    assert_false(relabel_rule_equal(&a, &c));
    relabel_rule_clear(&a);
    mk(&a, RELABEL_REPLACE, "x,z", "(.*);(.*)", "t_${1}", "$2");
    assert_false(relabel_rule_equal(&a, &c));
    relabel_rule_clear(&a);
    mk(&a, RELABEL_REPLACE, "x,y", "(.*);(.+)", "t_${1}", "$2");
    assert_false(relabel_rule_equal(&a, &c));
    relabel_rule_clear(&a);
    mk(&a, RELABEL_REPLACE, "x,y", "(.*);(.*)", "u_${1}", "$2");
    assert_false(relabel_rule_equal(&a, &c));
    relabel_rule_clear(&a);
    relabel_rule_clear(&c);

    /* explicit defaults equal implicit ones */
    raw(&a, RELABEL_REPLACE, "x", NULL, "t", NULL);
    raw(&d, RELABEL_REPLACE, "x", "(.*)", "t", "$1");
    d.separator = dup(";");
    d.has_separator = 1;
    assert_true(relabel_rule_equal(&a, &d));
    d.modulus = 5;
    assert_false(relabel_rule_equal(&a, &d));
    d.modulus = 0;
    d.action = RELABEL_LOWERCASE;
    assert_false(relabel_rule_equal(&a, &d));
    /* copying an unvalidated rule leaves it unvalidated */
    assert_int_equal(relabel_rule_copy(&c, &d, err, sizeof err), 0);
    assert_null(c.re);
    assert_true(relabel_rule_equal(&c, &d));
    relabel_rule_clear(&c);
    /* copying a rule that fails validation fails and zeroes dst */
    relabel_rule_clear(&d);
    mk(&d, RELABEL_KEEP, "x", "a", NULL, NULL);
    d.action = RELABEL_HASHMOD; /* now invalid: no modulus */
    assert_int_equal(relabel_rule_copy(&c, &d, err, sizeof err), BASE_E_INVAL);
    assert_string_equal(err, "relabel configuration for hashmod requires non-zero modulus");
    assert_null(c.re);
    assert_null(c.source_labels);
    relabel_rule_clear(&a);
    relabel_rule_clear(&d);
}

static int teardown(void **state) {
    (void)state;
    relabel_thread_cleanup();
    labels_thread_cleanup();
    return 0;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_md5_rfc1321),
        cmocka_unit_test(test_md5_block_edges),
        cmocka_unit_test(test_hashmod_values),
        cmocka_unit_test(test_action_names),
        cmocka_unit_test(test_validate_defaults),
        cmocka_unit_test(test_validate_messages),
        cmocka_unit_test(test_target_validity),
        cmocka_unit_test(test_relabel_go_cases),
        cmocka_unit_test(test_replace_details),
        cmocka_unit_test(test_labelmap_input_snapshot),
        cmocka_unit_test(test_case_unicode),
        cmocka_unit_test(test_hashmod_process),
        cmocka_unit_test(test_chained_calls_and_reuse),
        cmocka_unit_test(test_unvalidated_and_empty),
        cmocka_unit_test(test_threads),
        cmocka_unit_test(test_copy_equal),
    };
    return cmocka_run_group_tests(tests, NULL, teardown);
}
