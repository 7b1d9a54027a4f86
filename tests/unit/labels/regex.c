/* tests/unit/labels/regex.c -- RE2-syntax regexes (src/labels/regex.c,
 * src/labels/regex_parse.c).
 *
 * 1. Errors: Go's messages, fragments and the "^(?:...)$" wrapping that
 *    Prometheus applies (so `(` reports `^(?:()$`).
 * 2. Semantics table: Go/RE2 behaviour where PCRE2 differs by default
 *    ($ before a final newline, `.` and "\n", \s and \v, ASCII \d \w,
 *    invalid UTF-8 bytes as U+FFFD, {,n} literal, (?i) and the Kelvin
 *    sign, Prometheus's `a)|(b` quirk). Each row is checked through the
 *    normal path, PCRE2 alone and the fast path alone (when it exists).
 * 3. Fast paths: which shapes get one, and agreement with PCRE2 on
 *    thousands of random subjects (multibyte, invalid bytes, newlines).
 * 4. Captures, offsets on invalid UTF-8, Go's Expand, literal sets, and a
 *    catastrophic-backtracking pattern answered correctly via the DFA
 *    fallback.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/err.h"
#include "labels/labels.h"
#include "labels/labels_int.h"

static base_str S(const char *s) {
    return base_str_c(s);
}

static labels_regex *compile(const char *pat, unsigned flags) {
    labels_regex *re = NULL;
    char err[256];
    int rc = labels_regex_compile(S(pat), flags, &re, err, sizeof err);
    if (rc != 0) fail_msg("compile %s: %s", pat, err);
    return re;
}

static void test_errors(void **state) {
    (void)state;
    static const struct {
        const char *pat, *msg;
    } cases[] = {
        {"(", "error parsing regexp: missing closing ): `^(?:()$`"},
        {")", "error parsing regexp: unexpected ): `^(?:))$`"},
        {"a\\", "error parsing regexp: missing closing ): `^(?:a\\)$`"},
        {"*", "error parsing regexp: missing argument to repetition operator: `*`"},
        {"a|*", "error parsing regexp: missing argument to repetition operator: `*`"},
        {"(*)", "error parsing regexp: missing argument to repetition operator: `*`"},
        {"+?", "error parsing regexp: missing argument to repetition operator: `+?`"},
        {"a**", "error parsing regexp: invalid nested repetition operator: `**`"},
        {"a++", "error parsing regexp: invalid nested repetition operator: `++`"},
        {"a*?+", "error parsing regexp: invalid nested repetition operator: `*?+`"},
        {"a{2}{3}", "error parsing regexp: invalid nested repetition operator: `{2}{3}`"},
        {"\\C", "error parsing regexp: invalid escape sequence: `\\C`"},
        {"a\\1", "error parsing regexp: invalid escape sequence: `\\1`"},
        {"\\8", "error parsing regexp: invalid escape sequence: `\\8`"},
        {"\\Z", "error parsing regexp: invalid escape sequence: `\\Z`"},
        {"\\e", "error parsing regexp: invalid escape sequence: `\\e`"},
        {"\\xg1", "error parsing regexp: invalid escape sequence: `\\xg1`"},
        {"\\x{}", "error parsing regexp: invalid escape sequence: `\\x{}`"},
        {"\\x{110000}", "error parsing regexp: invalid escape sequence: `\\x{110000`"},
        {"(?=x)", "error parsing regexp: invalid or unsupported Perl syntax: `(?=`"},
        {"(?!x)", "error parsing regexp: invalid or unsupported Perl syntax: `(?!`"},
        {"(?<n>x)", "error parsing regexp: invalid or unsupported Perl syntax: `(?<`"},
        {"(?#c)", "error parsing regexp: invalid or unsupported Perl syntax: `(?#`"},
        {"(?i-)", "error parsing regexp: invalid or unsupported Perl syntax: `(?i-)`"},
        {"(?P=n)", "error parsing regexp: invalid or unsupported Perl syntax: `(?P`"},
        {"(?P<>x)", "error parsing regexp: invalid named capture: `(?P<>`"},
        {"(?P<a-b>x)", "error parsing regexp: invalid named capture: `(?P<a-b>`"},
        {"[z-a]", "error parsing regexp: invalid character class range: `z-a`"},
        {"[[:foo:]]", "error parsing regexp: invalid character class range: `[:foo:]`"},
        {"\\p{Foo}", "error parsing regexp: invalid character class range: `\\p{Foo}`"},
        {"\\pX", "error parsing regexp: invalid character class range: `\\pX`"},
        {"[a", "error parsing regexp: missing closing ]: `[a)$`"},
        {"x{1001}", "error parsing regexp: invalid repeat count: `{1001}`"},
        {"x{2,1}", "error parsing regexp: invalid repeat count: `{2,1}`"},
        {"(x{100}){100}", "error parsing regexp: invalid repeat count: `{100}`"},
        {"\xff", "error parsing regexp: invalid UTF-8: `\xff)$`"},
        {"(?i", "error parsing regexp: missing closing ): `^(?:(?i)$`"},
        {"\\Qab", "error parsing regexp: missing closing ): `^(?:\\Qab)$`"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        labels_regex *re = NULL;
        char err[256] = "";
        int rc = labels_regex_compile(S(cases[i].pat), 0, &re, err, sizeof err);
        if (rc != BASE_E_PARSE || strcmp(err, cases[i].msg) != 0)
            fail_msg("pattern %s: rc %d, message %s, want %s", cases[i].pat, rc, err, cases[i].msg);
        assert_null(re);
    }
    /* nesting limit */
    char deep[4200];
    size_t n = 0;
    for (int i = 0; i < 1100; i++) deep[n++] = '(';
    deep[n++] = 'a';
    for (int i = 0; i < 1100; i++) deep[n++] = ')';
    deep[n] = '\0';
    labels_regex *re = NULL;
    char err[64];
    assert_int_equal(labels_regex_compile(S(deep), 0, &re, err, sizeof err), BASE_E_PARSE);
    assert_non_null(strstr(err, "expression nests too deeply"));
    /* error buffer truncation is safe */
    char tiny[8];
    assert_int_equal(labels_regex_compile(S("("), 0, &re, tiny, sizeof tiny), BASE_E_PARSE);
    assert_int_equal(strlen(tiny), 7);
}

static void test_accepts(void **state) {
    (void)state;
    static const char *ok[] = {
        "",
        "a{,2}",
        "a{2",
        "{",
        "a{1000}",
        "(?P<name>x)(?P<name>y)",
        "(?i)(?-i)a",
        "(?ims-U:a)",
        "(?)",
        "[]a]",
        "[^]a]",
        "[a-]",
        "[-a]",
        "[\\d\\D]",
        "[[:^alpha:][:word:]]",
        "\\pL\\p{Greek}\\PN\\p{^Lu}",
        "\\Q*+?\\E",
        "\\x{10FFFF}",
        "\\x{D800}",
        "\\0\\07\\101",
        "\\_\\ \\-",
        "^$\\A\\z\\b\\B",
        "(?m)^a$",
        "(?s).",
        "(?U)a*?",
        "x*(?i)*",
        "[\\x{0}-\\x{10FFFF}]",
        "[^\\x{0}-\\x{10FFFF}]",
        "\\p{Any}",
        "\\P{Any}",
        "\\p{C}",
        "(?i)\\p{Lu}",
        "[a-z\\p{Han}]",
    };
    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) labels_regex_free(compile(ok[i], 0));
}

typedef struct row {
    const char *pat;
    const char *subj;
    size_t subj_len; /* 0: strlen */
    int want;
} row;

static void check_row(const row *r) {
    base_str s = {r->subj, r->subj_len ? r->subj_len : strlen(r->subj)};
    labels_regex *re = compile(r->pat, 0);
    int got = labels_regex_match(re, s);
    if (got != r->want) fail_msg("%s on \"%s\": got %d want %d", r->pat, r->subj, got, r->want);
    int fast = labels__regex_match_fast(re, s);
    if (fast >= 0 && fast != r->want)
        fail_msg("fast %s on \"%s\": got %d want %d", r->pat, r->subj, fast, r->want);
    labels_regex_free(re);
    re = compile(r->pat, LABELS_RE_NOFAST);
    got = labels_regex_match(re, s);
    if (got != r->want)
        fail_msg("pcre %s on \"%s\": got %d want %d (pattern %s)", r->pat, r->subj, got, r->want,
                 labels__regex_pcre_pattern(re).p);
    labels_regex_free(re);
}

static void test_semantics(void **state) {
    (void)state;
    static const row rows[] = {
        /* full anchoring */
        {"foo", "foo", 0, 1},
        {"foo", "foobar", 0, 0},
        {"foo", "xfoo", 0, 0},
        {"foo", "foo\n", 0, 0},
        {"foo|bar", "foobar", 0, 0},
        {"^foo$", "foo", 0, 1},
        {"", "", 0, 1},
        {"", "a", 0, 0},
        /* dot and newlines */
        {"foo.*", "foobar", 0, 1},
        {"foo.*", "foo\nbar", 0, 0},
        {"(?s)foo.*", "foo\nbar", 0, 1},
        {".*", "", 0, 1},
        {".*", "a\nb", 0, 0},
        {".+", "", 0, 0},
        {".+", "x", 0, 1},
        {".", "\n", 0, 0},
        {"(?s).", "\n", 0, 1},
        {"[^a]", "\n", 0, 1},
        {"a\nb", "a\nb", 0, 1},
        {".*\n.*", "a\nb", 0, 1},
        {"(?m)foo$\n^bar", "foo\nbar", 0, 1},
        {"(?m)a$", "a", 0, 1},
        {"(?m)(?:a\n^)", "a\n", 0, 1},
        /* alternations and sets */
        {"a|b|c", "b", 0, 1},
        {"a|b|c", "ab", 0, 0},
        {"a|b|", "", 0, 1},
        {"(foo|bar)-.*", "bar-1", 0, 1},
        {"(foo|bar)-.*", "baz-1", 0, 0},
        {"gpu[0-7]", "gpu3", 0, 1},
        {"gpu[0-7]", "gpu8", 0, 0},
        {"host.example.com:9100", "hostXexample.com:9100", 0, 1},
        {"host\\.example", "hostXexample", 0, 0},
        /* contains / prefix / suffix */
        {".*bar.*", "foobarbaz", 0, 1},
        {".*bar", "xbar", 0, 1},
        {".*bar", "barx", 0, 0},
        {"a.*b.*c", "aXbYc", 0, 1},
        {"a.*b.*c", "acb", 0, 0},
        {".*a.+b", "ab", 0, 0},
        {".*a.+b", "aXb", 0, 1},
        /* case folding */
        {"(?i)foo", "FoO", 0, 1},
        {"(?i)k", "\xe2\x84\xaa", 0, 1}, /* Kelvin sign */
        {"(?i)s", "\xc5\xbf", 0, 1},     /* long s */
        {"(?i)[^k]", "\xe2\x84\xaa", 0, 0},
        {"(?i)[a-c]", "B", 0, 1},
        {"(?i)\\W", "\xe2\x84\xaa", 0, 0},
        {"\\W", "\xe2\x84\xaa", 0, 1},
        {"(?i:a)b", "Ab", 0, 1},
        {"(?i:a)b", "AB", 0, 0},
        {"(?i)p\n2", "P\n2", 0, 1}, /* found by the fuzzer */
        {"(?i)p\n2|x.*", "P\n2", 0, 1},
        /* ASCII classes */
        {"\\d+", "123", 0, 1},
        {"\\d", "\xd9\xa3", 0, 0}, /* Arabic-Indic 3 */
        {"\\w+", "h\xc3\xa9llo", 0, 0},
        {"\\s", "\v", 0, 0},
        {"\\s", "\t", 0, 1},
        {"[[:space:]]", "\v", 0, 1},
        {"[[:^alpha:]]", "1", 0, 1},
        {"[[:word:]]+", "a_1", 0, 1},
        {"\\bfoo\\b", "foo", 0, 1},
        /* Unicode */
        {"\\pL+", "h\xc3\xa9llo", 0, 1},
        {"\\p{Greek}+", "\xce\xb1\xce\xb2", 0, 1},
        {"\\PL", "1", 0, 1},
        {"\\p{^L}", "a", 0, 0},
        {"\\p{C}", "\x01", 0, 1},
        {"\\pN", "\xd9\xa3", 0, 1},
        {".", "\xc3\xa9", 0, 1},
        {"..", "\xc3\xa9", 0, 0},
        {"\xc3\xa9", "\xc3\xa9", 0, 1},
        {"\\x{e9}", "\xc3\xa9", 0, 1},
        {"\\x{D800}", "\xed\xa0\x80", 0, 0},
        /* invalid UTF-8 subjects: each bad byte is one U+FFFD */
        {"a.c",
         "a\xff"
         "c",
         0, 1},
        {"a..c",
         "a\xe2\x82"
         "c",
         0, 1},
        {"a\\x{FFFD}c",
         "a\xff"
         "c",
         0, 1},
        {"a[^b]c",
         "a\xff"
         "c",
         0, 1},
        {".*", "\xff\xfe", 0, 1},
        {"a", "a\xff", 0, 0},
        /* escapes and repetition */
        {"a{2,3}", "aa", 0, 1},
        {"a{2,3}", "aaaa", 0, 0},
        {"a{,2}", "a{,2}", 0, 1},
        {"a{2", "a{2", 0, 1},
        {"\\Q.*\\E", ".*", 0, 1},
        {"\\Q.*\\E", "ab", 0, 0},
        {"\\x41\\101\\0", "AA\0", 3, 1},
        {"x*", "", 0, 1},
        {"(a|ab)(c|bcd)(d*)", "abcd", 0, 1},
        {"(?U)a+", "aaa", 0, 1},
        {"\\.", ".", 0, 1},
        {"\\.", "a", 0, 0},
        {"a.{2,4}b", "aXXb", 0, 1},
        {"a.{2,4}b", "aXb", 0, 0},
        {"a.{2,4}b", "aXXXXXb", 0, 0},
        {"(?:ab){2}", "abab", 0, 1},
        {"(?:ab){2}", "ab", 0, 0},
        {"(?:ab)*c", "ababc", 0, 1},
        {"x(?:ab)*", "xabab", 0, 1},
        {"x(?:ab)*", "xabb", 0, 0},
        {"(?:ab)c*", "abcc", 0, 1},
        {"\\Qab\\E*", "abbb", 0, 1},
        {"\\Qab\\E*", "abab", 0, 0},
        {"a?b", "b", 0, 1},
        {"\\^\\$", "^$", 0, 1},
        {"[\\d]", "5", 0, 1},
        {"[^\\x{0}-\\x{10FFFF}]", "a", 0, 0},
        /* Prometheus's wrapping quirk: "^(?:a)|(b)$" is not anchored at
         * both ends */
        {"a)|(b", "axyz", 0, 1},
        {"a)|(b", "xyzb", 0, 1},
        {"a)|(b", "xyz", 0, 0},
    };
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) check_row(&rows[i]);
}

static void test_fast_shapes(void **state) {
    (void)state;
    static const char *fast[] = {
        "foo",
        "foo|bar|baz",
        "foo.*",
        ".*foo",
        ".*foo.*",
        ".*",
        ".+",
        "gpu[0-7]",
        "(a|b)-c.*",
        "host.example.com:9100",
        "(?i)foo",
        "foo.*bar",
        "a?b",
        "",
        "(?s).*",
        "a.{2,4}b",
        "(?:x|y)(?:1|2)",
    };
    static const char *slow[] = {
        "[a-z]+",         "\\d+",      "(?i)kube", "foo.*\n.*",       "a*",
        "(a.*|b(?s:.*))", "\\x{FFFD}", "\\bfoo",   "(?i)caf\xc3\xa9",
    };
    for (size_t i = 0; i < sizeof fast / sizeof *fast; i++) {
        labels_regex *re = compile(fast[i], 0);
        if (!labels_regex_is_fast(re)) fail_msg("expected a fast path for %s", fast[i]);
        labels_regex_free(re);
    }
    for (size_t i = 0; i < sizeof slow / sizeof *slow; i++) {
        labels_regex *re = compile(slow[i], 0);
        if (labels_regex_is_fast(re)) fail_msg("expected no fast path for %s", slow[i]);
        labels_regex_free(re);
    }
    /* literal sets for index lookups */
    labels_regex *re = compile("c|a|b|a", 0);
    const base_str *v;
    size_t n;
    assert_true(labels_regex_literals(re, &v, &n));
    assert_int_equal(n, 3);
    assert_true(base_str_eq(v[0], S("a")) && base_str_eq(v[1], S("b")) && base_str_eq(v[2], S("c")));
    labels_regex_free(re);
    re = compile("foo.*", 0);
    assert_false(labels_regex_literals(re, &v, &n));
    labels_regex_free(re);
    re = compile("gpu-(0|1)", 0);
    assert_true(labels_regex_literals(re, &v, &n));
    assert_int_equal(n, 2);
    assert_true(base_str_eq(v[1], S("gpu-1")));
    labels_regex_free(re);
}

static unsigned rnd(unsigned *s) {
    *s = *s * 1103515245u + 12345u;
    return *s >> 8;
}

static void test_fast_agrees_with_pcre(void **state) {
    (void)state;
    static const char *pats[] = {
        "foo",        "foo|bar|baz",
        "foo.*",      ".*foo",
        ".*foo.*",    "f.o",
        ".*",         ".+",
        "a.*b.*c",    ".*a.+b",
        "(?i)foo",    "(?i)fo.*",
        "x?y",        "(ab|cd)(ef|gh).*",
        "gpu[0-3]",   "a.{2,4}b",
        ".{3}",       "(?s).*a",
        "(?s)a.+",    "\xc3\xa9.*",
        "(?s).*\n.*", "a|b.*",
        "",           "|a",
        "(a|)b",      "a(?:b|c)?d",
        "\\.",        "a\\.b.*",
        ".*(?i)ab.*", "(?s)a.b",
        "f(o|oo)?",   ".*o.*o.*",
        "(?:.*a){2}", "\xe2\x84\xaa.",
        "ab.*ab.*ab",
    };
    static const char *alpha[] = {
        "a", "b", "c", "f", "o", "x", "y", "\xc3\xa9",     "\n",       "\xff", "\xc3", "A", "F",
        "O", "g", "p", "u", "0", "3", ".", "\xe2\x84\xaa", "\xc5\xbf", "d",    "e",    "h"};
    unsigned seed = 12345;
    char subj[64];
    size_t checked = 0;
    for (size_t i = 0; i < sizeof pats / sizeof *pats; i++) {
        labels_regex *re = compile(pats[i], 0);
        if (!labels_regex_is_fast(re)) fail_msg("no fast path for %s", pats[i]);
        for (int k = 0; k < 3000; k++) {
            size_t len = 0, parts = rnd(&seed) % 9;
            for (size_t j = 0; j < parts; j++) {
                const char *a = alpha[rnd(&seed) % (sizeof alpha / sizeof *alpha)];
                size_t al = strlen(a);
                memcpy(subj + len, a, al);
                len += al;
            }
            base_str s = {subj, len};
            int f = labels__regex_match_fast(re, s), p = labels__regex_match_pcre(re, s);
            if (f != p) {
                base_buf b;
                base_buf_init(&b, 0);
                labels_quote(&b, s);
                fail_msg("%s on %s: fast %d, pcre %d", pats[i], b.data, f, p);
            }
            checked++;
        }
        labels_regex_free(re);
    }
    assert_true(checked > 100000);
    /* random glob-shaped patterns: concatenations of pieces that the fast
     * path handles, against random subjects */
    static const char *pieces[] = {"a",     "b",  "ab",       "ba",  ".",      ".*",   ".+",    "\xc3\xa9",
                                   "(a|b)", "x?", "(?:aa|b)", "a.b", ".{1,2}", "[ab]", "(?i)A", "\n"};
    size_t npat = 0;
    for (int k = 0; k < 400; k++) {
        char pat[128] = "";
        int dotnl = rnd(&seed) % 4 == 0;
        if (dotnl) strcat(pat, "(?s)");
        for (unsigned j = 0, m = 1 + rnd(&seed) % 5; j < m; j++)
            strcat(pat, pieces[rnd(&seed) % (sizeof pieces / sizeof *pieces)]);
        labels_regex *re = compile(pat, 0);
        if (labels_regex_is_fast(re)) npat++;
        for (int q = 0; q < 400; q++) {
            size_t len = 0, parts = rnd(&seed) % 7;
            for (size_t j = 0; j < parts; j++) {
                const char *a = alpha[rnd(&seed) % 10];
                size_t al = strlen(a);
                memcpy(subj + len, a, al);
                len += al;
            }
            base_str s = {subj, len};
            int f = labels__regex_match_fast(re, s), p = labels__regex_match_pcre(re, s);
            if (f >= 0 && f != p) fail_msg("%s on %.*s: fast %d, pcre %d", pat, (int)len, subj, f, p);
        }
        labels_regex_free(re);
    }
    assert_true(npat > 200);
}

static void test_captures(void **state) {
    (void)state;
    labels_regex *re = compile("(\\w+)-(?P<num>\\d+)(x)?", LABELS_RE_CAPTURE);
    assert_int_equal(labels_regex_groups(re), 3);
    assert_int_equal(labels_regex_group_index(re, S("num")), 2);
    assert_int_equal(labels_regex_group_index(re, S("nope")), -1);
    labels_span sp[6];
    base_str s = S("gpu-12");
    assert_int_equal(labels_regex_exec(re, s, sp, 6), 1);
    assert_int_equal(sp[0].start, 0);
    assert_int_equal(sp[0].end, 6);
    assert_int_equal(sp[1].start, 0);
    assert_int_equal(sp[1].end, 3);
    assert_int_equal(sp[2].start, 4);
    assert_int_equal(sp[2].end, 6);
    assert_true(sp[3].start == SIZE_MAX); /* (x)? did not take part */
    assert_true(sp[5].start == SIZE_MAX);
    base_buf out;
    base_buf_init(&out, 0);
    labels_regex_expand(re, S("$1 ${num} $2x $$ ${1}x $num $ ${bad $3|$99|$01|${0}"), s, sp, 6, &out);
    assert_string_equal(out.data, "gpu 12  $ gpux 12 $ ${bad |||gpu-12");
    base_buf_free(&out);
    assert_int_equal(labels_regex_exec(re, S("gpu-"), sp, 6), 0);
    labels_regex_free(re);
    /* offsets stay in the caller's bytes when invalid UTF-8 is mapped */
    re = compile("(.)(b)(.*)", LABELS_RE_CAPTURE);
    s = (base_str){"\xff"
                   "b\xfe\xc3\xa9",
                   5};
    assert_int_equal(labels_regex_exec(re, s, sp, 4), 1);
    assert_int_equal(sp[1].start, 0);
    assert_int_equal(sp[1].end, 1);
    assert_int_equal(sp[2].start, 1);
    assert_int_equal(sp[2].end, 2);
    assert_int_equal(sp[3].start, 2);
    assert_int_equal(sp[3].end, 5);
    labels_regex_free(re);
    /* relabel-style: whole value, replacement with a group */
    re = compile("(.*):9100", LABELS_RE_CAPTURE);
    s = S("node1:9100");
    assert_int_equal(labels_regex_exec(re, s, sp, 2), 1);
    base_buf_init(&out, 0);
    labels_regex_expand(re, S("${1}:9400"), s, sp, 2, &out);
    assert_string_equal(out.data, "node1:9400");
    base_buf_free(&out);
    labels_regex_free(re);
    /* without LABELS_RE_CAPTURE only the whole match is reported */
    re = compile("(a)(b)", 0);
    assert_int_equal(labels_regex_groups(re), 0);
    assert_int_equal(labels_regex_exec(re, S("ab"), sp, 3), 1);
    assert_int_equal(sp[0].end, 2);
    assert_true(sp[1].start == SIZE_MAX);
    labels_regex_free(re);
}

static void test_pathological(void **state) {
    (void)state;
    uint64_t before = labels_regex_errors();
    labels_regex *re = compile("(a|aa)*(b|c)*(a|aa)*d", 0);
    char s[80];
    memset(s, 'a', sizeof s - 1);
    s[sizeof s - 1] = '\0';
    assert_int_equal(labels_regex_match(re, S(s)), 0);
    s[sizeof s - 2] = 'd';
    assert_int_equal(labels_regex_match(re, S(s)), 1);
    labels_regex_free(re);
    assert_int_equal(labels_regex_errors(), before);
    /* a large alternation of literals works even past PCRE2's size */
    base_buf b;
    base_buf_init(&b, 0);
    for (int i = 0; i < 20000; i++) base_buf_printf(&b, "%shost-%05d\\.example\\.org", i ? "|" : "", i);
    re = compile(b.data, 0);
    assert_true(labels_regex_is_fast(re));
    assert_int_equal(labels_regex_match(re, S("host-12345.example.org")), 1);
    assert_int_equal(labels_regex_match(re, S("host-12345.example.orgx")), 0);
    labels_regex_free(re);
    base_buf_free(&b);
    /* too long */
    char *big = malloc(LABELS_REGEX_MAX + 2);
    memset(big, 'a', LABELS_REGEX_MAX + 1);
    big[LABELS_REGEX_MAX + 1] = '\0';
    char err[128];
    assert_int_equal(labels_regex_compile(S(big), 0, &re, err, sizeof err), BASE_E_LIMIT);
    free(big);
}

/* Compiling and matching while the k-th allocation fails, for every k:
 * each step returns BASE_E_NOMEM or the right answer, never anything else
 * (a failed fast path build just leaves the regex on PCRE2). */
static void test_alloc_failure(void **state) {
    (void)state;
    static const char *pats[] = {"(\\w+)-(?P<n>\\d+)", "foo.*|bar", "a.c"};
    static const char *subj[] = {"gpu-12", "foobar",
                                 "a\xff"
                                 "c"};
    labels_regex_free(compile("x", 0)); /* PCRE2's context exists before the hook */
    for (size_t p = 0; p < sizeof pats / sizeof *pats; p++) {
        int done = 0;
        for (long k = 0; !done && k < 500; k++) {
            labels_thread_cleanup(); /* per-thread state is rebuilt under failure too */
            labels__fail_alloc(k);
            labels_regex *re = NULL;
            char err[128];
            int rc = labels_regex_compile(S(pats[p]), LABELS_RE_CAPTURE, &re, err, sizeof err);
            int m = rc == 0 ? labels_regex_match(re, S(subj[p])) : rc;
            labels_span sp[3];
            int x = rc == 0 ? labels_regex_exec(re, S(subj[p]), sp, 3) : rc;
            labels__fail_alloc(-1);
            if (rc == 0) {
                assert_true(m == 1 || m == BASE_E_NOMEM);
                assert_true(x == 1 || x == BASE_E_NOMEM);
                done = m == 1 && x == 1;
                labels_regex_free(re);
            } else {
                assert_int_equal(rc, BASE_E_NOMEM);
                assert_null(re);
            }
        }
        assert_true(done);
    }
}

static int teardown(void **state) {
    (void)state;
    labels_thread_cleanup();
    return 0;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_accepts),
        cmocka_unit_test(test_semantics),
        cmocka_unit_test(test_fast_shapes),
        cmocka_unit_test(test_fast_agrees_with_pcre),
        cmocka_unit_test(test_captures),
        cmocka_unit_test(test_pathological),
        cmocka_unit_test(test_alloc_failure),
    };
    return cmocka_run_group_tests(tests, NULL, teardown);
}
