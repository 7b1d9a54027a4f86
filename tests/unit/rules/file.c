/* tests/unit/rules/file.c -- rule files (rules_file_load*): every field of
 * a valid file in file order, each of 2.42's errors word for word with its
 * position, several errors from one file, yaml.v3's scalar and merge
 * rules, syntax errors, file errors, limits and garbage. The expected
 * texts are what promtool 2.42 prints for the same input. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/err.h"
#include "rules/rules.h"

static rules_file *load_ok(const char *y) {
    rules_file *f = NULL;
    rules_errors e;
    int rc = rules_file_load_buf(y, strlen(y), "t.yml", &f, &e);
    if (rc != 0) fail_msg("load failed (%d): %s", rc, e.n ? e.e[0].msg : "(no message)");
    assert_int_equal(e.n, 0);
    rules_errors_free(&e);
    return f;
}

/* Loads y; expects code rc and exactly the messages in want (NULL-ended). */
static void load_errs(const char *y, int want_rc, const char *const *want) {
    rules_file *f = NULL;
    rules_errors e;
    int rc = rules_file_load_buf(y, strlen(y), "t.yml", &f, &e);
    size_t n = 0;
    while (want[n]) n++;
    if (rc != want_rc || e.n != n) {
        for (size_t i = 0; i < e.n; i++) fprintf(stderr, "got: %s\n", e.e[i].msg);
        fail_msg("rc %d (want %d), %zu errors (want %zu)", rc, want_rc, e.n, n);
    }
    assert_null(f);
    for (size_t i = 0; i < n; i++) assert_string_equal(e.e[i].msg, want[i]);
    rules_errors_free(&e);
    assert_int_equal(e.n, 0);
}

static void load_err(const char *y, const char *want) {
    const char *w[] = {want, NULL};
    load_errs(y, BASE_E_INVAL, w);
}

static void test_valid_every_field(void **state) {
    (void)state;
    rules_file *f = load_ok("# comment\n"
                            "groups:\n"
                            "  - name: first\n"
                            "    interval: 30s\n"
                            "    limit: 10\n"
                            "    rules:\n"
                            "      - record: job:up:sum\n"
                            "        expr: sum by (job) (up)\n"
                            "        labels:\n"
                            "          zeta: \"1\"\n"
                            "          alpha: two\n"
                            "      - alert: InstanceDown\n"
                            "        expr: |\n"
                            "          up == 0\n"
                            "        for: 5m\n"
                            "        keep_firing_for: 1h30m\n"
                            "        labels: {severity: page, team: gpu}\n"
                            "        annotations:\n"
                            "          summary: \"{{ $labels.instance }} down\"\n"
                            "          description: plain\n"
                            "  - name: second\n"
                            "    rules:\n"
                            "      - alert: AlwaysFiring\n"
                            "        expr: 1\n"
                            "  - name: empty\n");
    assert_string_equal(f->path, "t.yml");
    assert_int_equal(f->ngroups, 3);
    assert_int_equal(rules_file_count(f), 3);
    const rules_group *g = &f->groups[0];
    assert_string_equal(g->name, "first");
    assert_int_equal(g->interval_ms, 30000);
    assert_int_equal(g->limit, 10);
    assert_int_equal(g->line, 3);
    assert_int_equal(g->nrules, 2);
    const rules_rule *r = &g->rules[0];
    assert_int_equal(r->kind, RULES_RECORD);
    assert_string_equal(r->name, "job:up:sum");
    assert_string_equal(r->expr, "sum by (job) (up)");
    assert_non_null(r->parsed);
    assert_int_equal(r->line, 7);
    assert_int_equal(r->nlabels, 2);
    assert_string_equal(r->labels[0].name, "zeta"); /* file order */
    assert_string_equal(r->labels[0].value, "1");
    assert_string_equal(r->labels[1].name, "alpha");
    assert_string_equal(r->labels[1].value, "two");
    assert_int_equal(r->nannotations, 0);
    r = &g->rules[1];
    assert_int_equal(r->kind, RULES_ALERT);
    assert_string_equal(r->name, "InstanceDown");
    assert_string_equal(r->expr, "up == 0\n");
    assert_non_null(r->parsed);
    assert_int_equal(r->for_ms, 300000);
    assert_int_equal(r->keep_firing_for_ms, 5400000);
    assert_int_equal(r->nlabels, 2);
    assert_string_equal(r->labels[1].name, "team");
    assert_int_equal(r->nannotations, 2);
    assert_string_equal(r->annotations[0].name, "summary");
    assert_string_equal(r->annotations[0].value, "{{ $labels.instance }} down");
    assert_string_equal(r->annotations[1].value, "plain");
    g = &f->groups[1];
    assert_int_equal(g->interval_ms, 0);
    assert_int_equal(g->limit, 0);
    assert_string_equal(g->rules[0].expr, "1");
    assert_int_equal(f->groups[2].nrules, 0);
    rules_file_free(f);
}

static void test_valid_corners(void **state) {
    (void)state;
    /* empty files and empty lists */
    const char *empties[] = {"", "# only a comment\n", "groups:\n", "groups: []\n", "~\n", "---\n", NULL};
    for (int i = 0; empties[i]; i++) {
        rules_file *f = load_ok(empties[i]);
        assert_int_equal(rules_file_count(f), 0);
        rules_file_free(f);
    }
    /* yaml.v3 scalars: an int or bool text is a string to a string field;
     * limit takes 0x10, 1_000, 017, floats (truncated), negatives */
    rules_file *f = load_ok("groups:\n"
                            "  - {name: 5, limit: 0x10, rules: [{alert: true, expr: 0x10}]}\n"
                            "  - {name: b, limit: 1_000}\n"
                            "  - {name: c, limit: 017}\n"
                            "  - {name: d, limit: 2.9}\n"
                            "  - {name: e, limit: -1}\n"
                            "  - {name: f, limit: ~, interval: ~}\n");
    assert_string_equal(f->groups[0].name, "5");
    assert_int_equal(f->groups[0].limit, 16);
    assert_string_equal(f->groups[0].rules[0].name, "true");
    assert_string_equal(f->groups[0].rules[0].expr, "0x10");
    assert_int_equal(f->groups[1].limit, 1000);
    assert_int_equal(f->groups[2].limit, 15);
    assert_int_equal(f->groups[3].limit, 2);
    assert_int_equal(f->groups[4].limit, -1);
    assert_int_equal(f->groups[5].limit, 0);
    rules_file_free(f);
    /* null entries of lists are dropped; null label values are "" and
     * null keys skipped; !!binary is decoded */
    f = load_ok("groups:\n"
                "  - ~\n"
                "  - name: g\n"
                "    rules:\n"
                "      -\n"
                "      - alert: a\n"
                "        expr: up\n"
                "        labels:\n"
                "          a: ~\n"
                "          ~: skipped\n"
                "          b: !!binary aGVsbG8=\n");
    assert_int_equal(f->ngroups, 1);
    assert_int_equal(f->groups[0].nrules, 1);
    const rules_rule *r = &f->groups[0].rules[0];
    assert_int_equal(r->nlabels, 2);
    assert_string_equal(r->labels[0].value, "");
    assert_string_equal(r->labels[1].name, "b");
    assert_string_equal(r->labels[1].value, "hello");
    rules_file_free(f);
    /* merge keys: explicit keys win, then merged ones in order */
    f = load_ok("groups:\n"
                "  - &base {name: g, interval: 1m}\n"
                "  - <<: *base\n"
                "    name: h\n"
                "    rules:\n"
                "      - alert: x\n"
                "        expr: up\n"
                "        labels:\n"
                "          <<: [{a: 1, c: 3}, {a: 2, d: 4}]\n"
                "          c: explicit\n");
    assert_string_equal(f->groups[1].name, "h");
    assert_int_equal(f->groups[1].interval_ms, 60000);
    r = &f->groups[1].rules[0];
    assert_int_equal(r->nlabels, 3);
    assert_string_equal(r->labels[0].name, "c");
    assert_string_equal(r->labels[0].value, "explicit");
    assert_string_equal(r->labels[1].name, "a");
    assert_string_equal(r->labels[1].value, "1");
    assert_string_equal(r->labels[2].name, "d");
    rules_file_free(f);
    /* only the first document counts; a BOM is fine */
    f = load_ok("\xef\xbb\xbfgroups: [{name: g, rules: [{record: r, expr: up}]}]\n---\ngroups: 5\n");
    assert_int_equal(rules_file_count(f), 1);
    rules_file_free(f);
}

static void test_rule_errors(void **state) {
    (void)state;
    load_err("groups:\n  - name: g\n    rules:\n      - expr: up\n",
             "t.yml: 0:0: group \"g\", rule 1, \"\": one of 'record' or 'alert' must be set");
    load_err("groups:\n  - name: g\n    rules:\n      - record: a\n        alert: b\n        expr: up\n",
             "t.yml: 4:17: 5:16: group \"g\", rule 1, \"b\": only one of 'record' and 'alert' must be set");
    load_err("groups:\n  - name: g\n    rules:\n      - alert: a\n",
             "t.yml: 0:0: group \"g\", rule 1, \"a\": field 'expr' must be set in rule");
    load_err("groups:\n  - name: g\n    rules:\n      - alert: a\n        expr: [up]\n",
             "t.yml: 5:15: group \"g\", rule 1, \"a\": field 'expr' must be set in rule");
    load_err("groups:\n  - name: g\n    rules:\n      - alert: a\n        expr: sum(up\n",
             "t.yml: 5:15: group \"g\", rule 1, \"a\": could not parse expression: 1:7: parse error: "
             "unclosed left "
             "parenthesis");
    load_err("groups:\n  - name: g\n    rules:\n      - record: \"bad name\"\n        expr: up\n",
             "t.yml: 4:17: group \"g\", rule 1, \"bad name\": invalid recording rule name: bad name");
    load_err("groups:\n  - name: g\n    rules:\n      - record: ~\n        expr: up\n",
             "t.yml: 4:17: group \"g\", rule 1, \"~\": invalid recording rule name: ~");
    load_err("groups:\n  - name: g\n    rules:\n      - record: r\n        expr: up\n        for: 1m\n",
             "t.yml: 4:17: group \"g\", rule 1, \"r\": invalid field 'for' in recording rule");
    load_err("groups:\n  - name: g\n    rules:\n      - record: r\n        expr: up\n        "
             "keep_firing_for: 1m\n",
             "t.yml: 4:17: group \"g\", rule 1, \"r\": invalid field 'keep_firing_for' in recording rule");
    load_err("groups:\n  - name: g\n    rules:\n      - record: r\n        expr: up\n        annotations: "
             "{a: b}\n",
             "t.yml: 4:17: group \"g\", rule 1, \"r\": invalid field 'annotations' in recording rule");
    load_err(
        "groups:\n  - name: g\n    rules:\n      - alert: a\n        expr: up\n        labels: {a-b: x}\n",
        "t.yml: group \"g\", rule 1, \"a\": invalid label name: a-b");
    load_err("groups:\n  - name: g\n    rules:\n      - alert: a\n        expr: up\n        labels: "
             "{__name__: x}\n",
             "t.yml: group \"g\", rule 1, \"a\": invalid label name: __name__");
    load_err("groups:\n  - name: g\n    rules:\n      - alert: a\n        expr: up\n        annotations: "
             "{1x: y}\n",
             "t.yml: group \"g\", rule 1, \"a\": invalid annotation name: 1x");
    load_err("groups:\n  - name: g\n    rules:\n      - alert: a\n        expr: up\n        labels: {a: "
             "!!binary /w==}\n",
             "t.yml: group \"g\", rule 1, \"a\": invalid label value: \xff");
    /* group names: Go's %q in rule errors, the bare name when repeated */
    load_err("groups:\n  - name: \"g\\\"\\t\"\n    rules:\n      - expr: up\n",
             "t.yml: 0:0: group \"g\\\"\\t\", rule 1, \"\": one of 'record' or 'alert' must be set");
    load_err("groups:\n  - name: g\n  - name: g\n",
             "t.yml: 3:5: groupname: \"g\" is repeated in the same file");
    load_err("groups:\n  - name: \n    rules: []\n", "t.yml: 2:5: Groupname must not be empty");
}

static void test_several_errors(void **state) {
    (void)state;
    const char *want[] = {
        "t.yml: 4:17: 5:16: group \"g\", rule 1, \"foo\": only one of 'record' and 'alert' must be set",
        "t.yml: 6:15: group \"g\", rule 1, \"foo\": could not parse expression: 1:17: parse error: unclosed "
        "left "
        "parenthesis",
        "t.yml: 4:17: group \"g\", rule 1, \"foo\": invalid field 'annotations' in recording rule",
        "t.yml: 4:17: group \"g\", rule 1, \"foo\": invalid field 'for' in recording rule",
        "t.yml: group \"g\", rule 1, \"foo\": invalid label name: a-b",
        "t.yml: group \"g\", rule 1, \"foo\": invalid label name: __name__",
        "t.yml: group \"g\", rule 1, \"foo\": invalid annotation name: 1x",
        "t.yml: 0:0: group \"g\", rule 2, \"\": one of 'record' or 'alert' must be set",
        "t.yml: 0:0: group \"g\", rule 3, \"bad name\": field 'expr' must be set in rule",
        "t.yml: 11:17: group \"g\", rule 3, \"bad name\": invalid recording rule name: bad name",
        "t.yml: 12:5: groupname: \"g\" is repeated in the same file",
        "t.yml: 14:5: Groupname must not be empty",
        NULL};
    load_errs("groups:\n"
              "  - name: g\n"
              "    rules:\n"
              "      - record: job:up:sum\n"
              "        alert: foo\n"
              "        expr: sum by (job) (up\n"
              "        for: 1m\n"
              "        labels: {\"a-b\": x, __name__: y}\n"
              "        annotations: {\"1x\": y}\n"
              "      - expr: up\n"
              "      - record: \"bad name\"\n"
              "  - name: g\n"
              "    rules:\n"
              "  - rules: []\n",
              BASE_E_INVAL, want);
    /* the line of each error: its node's, or the rule's */
    rules_file *f = NULL;
    rules_errors e;
    const char *y = "groups:\n  - name: g\n    rules:\n      - alert: a\n        expr: up(\n"
                    "        labels: {a-b: 1}\n";
    assert_int_equal(rules_file_load_buf(y, strlen(y), "t.yml", &f, &e), BASE_E_INVAL);
    assert_int_equal(e.n, 2);
    assert_int_equal(e.e[0].line, 5);
    assert_int_equal(e.e[1].line, 4);
    rules_errors_free(&e);
    /* a null position shifts 2.42's group positions: its second decoder
     * keeps the null entry the first one drops */
    load_err("groups: [~, {name: \"\"}]\n", "t.yml: 1:10: Groupname must not be empty");
}

static void test_yaml_errors(void **state) {
    (void)state;
    load_err(
        "groups:\n  - name: g\n    foo: 1\n    rules:\n      - record: x\n        bar: 2\n        expr: up\n",
        "t.yml: yaml: unmarshal errors:\n  line 3: field foo not found in type rulefmt.RuleGroup\n"
        "  line 6: field bar not found in type rulefmt.RuleNode");
    load_err("foo: 5\n",
             "t.yml: yaml: unmarshal errors:\n  line 1: field foo not found in type rulefmt.RuleGroups");
    const char *two[] = {
        "t.yml: yaml: unmarshal errors:\n  line 1: cannot unmarshal !!int `5` into []rulefmt.RuleGroup",
        "t.yml: yaml: unmarshal errors:\n  line 1: cannot unmarshal !!int `5` into []yaml.Node", NULL};
    load_errs("groups: 5\n", BASE_E_INVAL, two);
    const char *seq[] = {
        "t.yml: yaml: unmarshal errors:\n  line 1: cannot unmarshal !!seq into rulefmt.RuleGroups",
        "t.yml: yaml: unmarshal errors:\n  line 1: cannot unmarshal !!seq into rulefmt.ruleGroups", NULL};
    load_errs("[1, 2]\n", BASE_E_INVAL, seq);
    load_err("groups:\n  - name: g\n    rules:\n      - alert: x\n        alert: y\n        expr: up\n",
             "t.yml: yaml: unmarshal errors:\n  line 5: mapping key \"alert\" already defined at line 4");
    load_err(
        "groups:\n  - name: g\n    limit: true\n  - name: h\n    limit: 99999999999999999999\n"
        "  - name: i\n    limit: \"5\"\n  - name: j\n    limit: yes\n  - name: k\n    limit: 2001-12-14\n",
        "t.yml: yaml: unmarshal errors:\n  line 3: cannot unmarshal !!bool `true` into int\n"
        "  line 5: cannot unmarshal !!float `9999999...` into int\n"
        "  line 7: cannot unmarshal !!str `5` into int\n  line 9: cannot unmarshal !!str `yes` into int\n"
        "  line 11: cannot unmarshal !!timestamp `2001-12-14` into int");
    load_err("groups:\n  - name: g\n    rules: [5]\n",
             "t.yml: yaml: unmarshal errors:\n  line 3: cannot unmarshal !!int `5` into rulefmt.RuleNode");
    load_err(
        "groups:\n  - name: g\n    rules:\n      - alert: x\n        expr: up\n        labels: {a: [1]}\n",
        "t.yml: yaml: unmarshal errors:\n  line 6: cannot unmarshal !!seq into string");
    load_err("groups:\n  - name: g\n    rules:\n      - alert: x\n        expr: up\n        labels: 5\n",
             "t.yml: yaml: unmarshal errors:\n  line 6: cannot unmarshal !!int `5` into map[string]string");
    /* fatal ones: the pass ends with that error alone */
    load_err("groups:\n  - name: g\n    foo: 1\n    interval: abc\n",
             "t.yml: not a valid duration string: \"abc\"");
    load_err("groups:\n  - name: g\n    interval: \"\"\n", "t.yml: empty duration string");
    load_err("groups:\n  - name: g\n    interval: 300000y\n", "t.yml: duration out of range");
    load_err("groups:\n  - name: g\n    interval: 5\n", "t.yml: not a valid duration string: \"5\"");
    load_err("groups:\n  - name: g\n    limit: !!int abc\n",
             "t.yml: yaml: cannot decode !!str `abc` as a !!int");
    load_err("groups:\n  - <<: 5\n    name: h\n",
             "t.yml: yaml: map merge requires map or sequence of maps as the value");
    load_err("groups:\n  - name: g\n    rules:\n      - alert: a\n        expr: up\n        labels: {a: "
             "!!binary x}\n",
             "t.yml: yaml: !!binary value contains invalid base64 data");
}

static void test_syntax_errors(void **state) {
    (void)state;
    const char *w1[] = {"t.yml: yaml: line 1: did not find expected '-' indicator",
                        "t.yml: yaml: line 1: did not find expected '-' indicator", NULL};
    load_errs("groups:\n  - name: g\n   rules:\n", BASE_E_PARSE, w1);
    const char *w2[] = {"t.yml: yaml: line 2: found character that cannot start any token",
                        "t.yml: yaml: line 2: found character that cannot start any token", NULL};
    load_errs("groups:\n\t- name: g\n", BASE_E_PARSE, w2);
    const char *w3[] = {"t.yml: yaml: unknown anchor 'x' referenced",
                        "t.yml: yaml: unknown anchor 'x' referenced", NULL};
    load_errs("x: *x\n", BASE_E_PARSE, w3);
    const char *w4[] = {"t.yml: yaml: invalid leading UTF-8 octet",
                        "t.yml: yaml: invalid leading UTF-8 octet", NULL};
    load_errs("groups: [\xff]\n", BASE_E_PARSE, w4);
    /* the line of the problem itself */
    rules_file *f = NULL;
    rules_errors e;
    assert_int_equal(rules_file_load_buf("a: 1\nb: [\n", 10, "t.yml", &f, &e), BASE_E_PARSE);
    assert_int_equal(e.n, 2);
    assert_int_equal(e.e[0].line, 3);
    rules_errors_free(&e);
}

static void test_files_and_limits(void **state) {
    (void)state;
    rules_file *f = NULL;
    rules_errors e;
    assert_int_equal(rules_file_load("/nonexistent/r.yml", &f, &e), BASE_E_IO);
    assert_int_equal(e.n, 1);
    assert_string_equal(e.e[0].msg, "/nonexistent/r.yml: open /nonexistent/r.yml: no such file or directory");
    rules_errors_free(&e);
    assert_int_equal(rules_file_load("/tmp", &f, &e), BASE_E_IO);
    assert_string_equal(e.e[0].msg, "/tmp: read /tmp: is a directory");
    rules_errors_free(&e);
    /* a real file, and one just over the size limit (sparse) */
    char path[] = "/tmp/kelvin-rules-test-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    const char *y = "groups: [{name: g, rules: [{record: r, expr: up}]}]\n";
    assert_int_equal(write(fd, y, strlen(y)), (ssize_t)strlen(y));
    assert_int_equal(rules_file_load(path, &f, NULL), 0);
    assert_int_equal(rules_file_count(f), 1);
    assert_string_equal(f->path, path);
    rules_file_free(f);
    assert_int_equal(ftruncate(fd, (off_t)RULES_FILE_MAX + 1), 0);
    f = NULL;
    assert_int_equal(rules_file_load(path, &f, &e), BASE_E_LIMIT);
    assert_null(f);
    assert_int_equal(e.n, 1);
    assert_non_null(strstr(e.e[0].msg, "larger than"));
    rules_errors_free(&e);
    close(fd);
    unlink(path);
    /* the buffer form checks the length before reading anything */
    assert_int_equal(rules_file_load_buf(y, RULES_FILE_MAX + 1, "big.yml", &f, &e), BASE_E_LIMIT);
    rules_errors_free(&e);
    /* errs may be NULL */
    assert_int_equal(rules_file_load_buf("groups: 5\n", 10, "t.yml", &f, NULL), BASE_E_INVAL);
    /* deep nesting and alias bombs hit the YAML tree's limits */
    char deep[400];
    memset(deep, '[', 300);
    deep[300] = 0;
    assert_int_equal(rules_file_load_buf(deep, 300, "t.yml", &f, &e), BASE_E_LIMIT);
    assert_int_equal(e.n, 1);
    rules_errors_free(&e);
    /* merges walk what they merge: 10^6 mappings from 8 lines (a label
     * value that is a list is not walked: a type error, as in 2.42) */
    const char *bomb = "a: &a {x0: 1, x1: 1, x2: 1, x3: 1, x4: 1, x5: 1, x6: 1, x7: 1, x8: 1, x9: 1}\n"
                       "b: &b {<<: [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]}\n"
                       "c: &c {<<: [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]}\n"
                       "d: &d {<<: [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]}\n"
                       "e: &e {<<: [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]}\n"
                       "f: &f {<<: [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]}\n"
                       "g: &g {<<: [*f, *f, *f, *f, *f, *f, *f, *f, *f, *f]}\n"
                       "groups: [{name: g, rules: [{alert: a, expr: up, labels: {<<: *g}}]}]\n";
    load_err(bomb, "t.yml: yaml: document contains excessive aliasing");
}

static void test_many_errors(void **state) {
    (void)state;
    /* 3000 rules without a name: errors are kept up to a limit and the
     * rest counted */
    size_t n = 3000;
    char *y = malloc(64 + n * 24);
    assert_non_null(y);
    size_t k = (size_t)sprintf(y, "groups:\n  - name: g\n    rules:\n");
    for (size_t i = 0; i < n; i++) k += (size_t)sprintf(y + k, "      - expr: up\n");
    rules_file *f = NULL;
    rules_errors e;
    assert_int_equal(rules_file_load_buf(y, k, "t.yml", &f, &e), BASE_E_INVAL);
    assert_true(e.n > 100 && e.n < n);
    assert_string_equal(e.e[e.n - 1].msg, "t.yml: 2000 more errors not shown");
    rules_errors_free(&e);
    free(y);
}

static void test_garbage(void **state) {
    (void)state;
    /* arbitrary bytes: an error or a file, never a crash or a leak */
    unsigned seed = 12345;
    char buf[512];
    for (int round = 0; round < 300; round++) {
        size_t n = (size_t)(round % 64) * 8;
        for (size_t i = 0; i < n; i++) {
            seed = seed * 1103515245u + 12345u;
            const char alphabet[] = "groups:namerulesexpralertrecord -[]{}:,&*!|>'\"\n\t#~0123456789<>";
            buf[i] = round % 3 == 0 ? (char)(seed >> 16) : alphabet[(seed >> 16) % (sizeof alphabet - 1)];
        }
        rules_file *f = NULL;
        rules_errors e;
        int rc = rules_file_load_buf(buf, n, "g.yml", &f, &e);
        if (rc == 0) {
            assert_non_null(f);
            assert_int_equal(e.n, 0);
            rules_file_free(f);
        } else {
            assert_true(rc < 0);
            assert_null(f);
            assert_true(e.n >= 1);
            for (size_t i = 0; i < e.n; i++) assert_memory_equal(e.e[i].msg, "g.yml: ", 7);
        }
        rules_errors_free(&e);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid_every_field), cmocka_unit_test(test_valid_corners),
        cmocka_unit_test(test_rule_errors),       cmocka_unit_test(test_several_errors),
        cmocka_unit_test(test_yaml_errors),       cmocka_unit_test(test_syntax_errors),
        cmocka_unit_test(test_files_and_limits),  cmocka_unit_test(test_many_errors),
        cmocka_unit_test(test_garbage),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
