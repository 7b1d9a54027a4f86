/* tests/unit/promql/selector.c -- promql_parse_selector (src/promql/parse.c),
 * the match[] parser of the API, against Prometheus 2.42's
 * parser.ParseMetricSelector.
 *
 * The table's errors are what the real Prometheus 2.42.0 answered for
 * /api/v1/series?match[]=<input> (after `invalid parameter "match[]": `),
 * byte for byte: NUL bytes of a regex included (2.42 echoes them; JSON
 * "\u0000"). An accepted input lists its matchers (labels_matcher_format,
 * ", " between) in 2.42's order: those in braces, then the name's. Also:
 * the whole message through the _msg variants (long regexes, long
 * identifiers) against the C-string err cut to errlen, the length limit,
 * and the regex that is well-formed only when anchored (`a)|(b`): refused
 * by matchers, as 2.42's NewFastRegexMatcher parses the value alone,
 * accepted by labels_regex_compile (relabel, label_replace compile only
 * the anchored form in 2.42).
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
#include "promql/promql.h"

static const struct {
    const char *in;
    size_t n;
    int ok;
    const char *out; /* the matchers, or 2.42's message */
    size_t out_n;
} cases[] = {
    {"", 0, 0, "1:1: parse error: unexpected end of input", 41},
    {" ", 1, 0, "1:2: parse error: unexpected end of input", 41},
    {"rate(temp[1m])", 14, 0, "1:5: parse error: unexpected \"(\"", 32},
    {"foo", 3, 1, "__name__=\"foo\"", 14},
    {"foo{}", 5, 1, "__name__=\"foo\"", 14},
    {"{}", 2, 1, "", 0},
    {"{a=\"\"}", 6, 1, "a=\"\"", 4},
    {"foo bar", 7, 0, "1:5: parse error: unexpected identifier \"bar\"", 45},
    {"foo[5m]", 7, 0, "1:4: parse error: unexpected \"[\"", 32},
    {"foo{a=\"b\"}[5m]", 14, 0, "1:11: parse error: unexpected \"[\"", 33},
    {"foo offset 5m", 13, 0, "1:5: parse error: unexpected <offset>", 37},
    {"foo @ 10", 8, 0, "1:5: parse error: unexpected \"<Item 57385>\" <op:@>", 50},
    {"sum(foo)", 8, 0, "1:4: parse error: unexpected \"(\"", 32},
    {"sum", 3, 1, "__name__=\"sum\"", 14},
    {"by", 2, 1, "__name__=\"by\"", 13},
    {"without", 7, 1, "__name__=\"without\"", 18},
    {"offset", 6, 1, "__name__=\"offset\"", 17},
    {"and", 3, 1, "__name__=\"and\"", 14},
    {"or", 2, 1, "__name__=\"or\"", 13},
    {"unless", 6, 1, "__name__=\"unless\"", 17},
    {"start", 5, 1, "__name__=\"start\"", 16},
    {"end", 3, 1, "__name__=\"end\"", 14},
    {"bool", 4, 0, "1:1: parse error: unexpected <bool>", 35},
    {"on", 2, 0, "1:1: parse error: unexpected <on>", 33},
    {"ignoring", 8, 0, "1:1: parse error: unexpected <ignoring>", 39},
    {"group_left", 10, 0, "1:1: parse error: unexpected <group_left>", 41},
    {"group_right", 11, 0, "1:1: parse error: unexpected <group_right>", 42},
    {"atan2", 5, 0, "1:1: parse error: unexpected <op:atan2>", 39},
    {"sum by (a) (foo)", 16, 0, "1:5: parse error: unexpected <by>", 33},
    {"sum{a=\"b\"}", 10, 1, "a=\"b\", __name__=\"sum\"", 21},
    {"count_values", 12, 1, "__name__=\"count_values\"", 23},
    {"topk(1, foo)", 12, 0, "1:5: parse error: unexpected \"(\"", 32},
    {"foo{a=\"b\"} x", 12, 0, "1:12: parse error: unexpected identifier \"x\"", 44},
    {"foo{a=\"b\"}{c=\"d\"}", 17, 0, "1:11: parse error: unexpected \"{\"", 33},
    {"{a=\"b\" x}", 9, 0,
     "1:8: parse error: unexpected identifier \"x\" in label matching, expected \",\" or \"}\"", 82},
    {"{a}", 3, 0, "1:3: parse error: unexpected \"}\" in label matching, expected label matching operator",
     84},
    {"{a=}", 4, 0, "1:4: parse error: unexpected \"}\" in label matching, expected string", 67},
    {"{a=b}", 5, 0, "1:4: parse error: unexpected identifier \"b\" in label matching, expected string", 78},
    {"{=\"b\"}", 6, 0, "1:2: parse error: unexpected \"=\" in label matching, expected identifier or \"}\"",
     78},
    {"{a=\"b\",}", 8, 1, "a=\"b\"", 5},
    {"{a=\"b\",,}", 9, 0,
     "1:8: parse error: unexpected \",\" in label matching, expected identifier or \"}\"", 78},
    {"{,}", 3, 0, "1:2: parse error: unexpected \",\" in label matching, expected identifier or \"}\"", 78},
    {"{a=\"b\"", 6, 0, "1:7: parse error: unexpected end of input inside braces", 55},
    {"{a=\"b", 5, 0, "1:4: parse error: unterminated quoted string", 44},
    {"foo{", 4, 0, "1:5: parse error: unexpected end of input inside braces", 55},
    {"foo}", 4, 0, "1:4: parse error: unexpected character: '}'", 43},
    {"}", 1, 0, "1:1: parse error: unexpected character: '}'", 43},
    {"{", 1, 0, "1:2: parse error: unexpected end of input inside braces", 55},
    {"(foo)", 5, 0, "1:1: parse error: unexpected \"(\"", 32},
    {"-foo", 4, 0, "1:1: parse error: unexpected <op:->", 35},
    {"+foo", 4, 0, "1:1: parse error: unexpected <op:+>", 35},
    {"1", 1, 0, "1:1: parse error: unexpected number \"1\"", 39},
    {"1.5", 3, 0, "1:1: parse error: unexpected number \"1.5\"", 41},
    {"\"foo\"", 5, 0, "1:1: parse error: unexpected string \"\\\"foo\\\"\"", 45},
    {"'foo'", 5, 0, "1:1: parse error: unexpected string \"'foo'\"", 43},
    {"`foo`", 5, 0, "1:1: parse error: unexpected string \"`foo`\"", 43},
    {"foo 1", 5, 0, "1:5: parse error: unexpected number \"1\"", 39},
    {"foo + bar", 9, 0, "1:5: parse error: unexpected <op:+>", 35},
    {"foo == 1", 8, 0, "1:5: parse error: unexpected <op:==>", 36},
    {"foo{a=~\"(\"}", 11, 0, "1:5: parse error: error parsing regexp: missing closing ): `^(\?:()$`", 68},
    {"foo{a=~\"a)|(b\"}", 15, 0, "1:5: parse error: error parsing regexp: unexpected ): `a)|(b`", 61},
    {"{a=~\")\"}", 8, 0, "1:2: parse error: error parsing regexp: unexpected ): `^(\?:))$`", 63},
    {"{a!~\"[\"}", 8, 0, "1:2: parse error: error parsing regexp: missing closing ]: `[)$`", 64},
    {"{a=~\"\\\\\"}", 9, 0, "1:2: parse error: error parsing regexp: missing closing ): `^(\?:\\)$`", 68},
    {"foo{a=\"\\x\"}", 11, 0, "1:7: parse error: illegal character U+0022 '\"' in escape sequence", 65},
    {"foo{a=\"\\u12\"}", 13, 0, "1:7: parse error: illegal character U+0022 '\"' in escape sequence", 65},
    {"foo{__name__=\"bar\"}", 19, 1, "__name__=\"bar\", __name__=\"foo\"", 30},
    {"{__name__=\"bar\"}", 16, 1, "__name__=\"bar\"", 14},
    {"foo:bar", 7, 1, "__name__=\"foo:bar\"", 18},
    {"foo:bar{a=\"b\"}", 14, 1, "a=\"b\", __name__=\"foo:bar\"", 25},
    {":foo", 4, 1, "__name__=\":foo\"", 15},
    {"foo$", 4, 0, "1:4: parse error: unexpected character: '$'", 43},
    {"foo{a=\"b\"}$", 11, 0, "1:11: parse error: unexpected character: '$'", 44},
    {"$", 1, 0, "1:1: parse error: unexpected character: '$'", 43},
    {"#comment\012foo", 12, 1, "__name__=\"foo\"", 14},
    {"foo #comment", 12, 1, "__name__=\"foo\"", 14},
    {"foo\012 bar", 8, 0, "2:2: parse error: unexpected identifier \"bar\"", 45},
    {"\012foo{a=\"b\"\012 x}", 14, 0,
     "3:2: parse error: unexpected identifier \"x\" in label matching, expected \",\" or \"}\"", 82},
    {"foo{a=\"b\"}\012(", 12, 0, "2:1: parse error: unexpected \"(\"", 32},
    {"foo{by=\"x\"}", 11, 1, "by=\"x\", __name__=\"foo\"", 22},
    {"foo{sum=\"x\"}", 12, 1, "sum=\"x\", __name__=\"foo\"", 23},
    {"foo{a!=\"b\", c=~\"d\", e!~\"f\"}", 27, 1, "a!=\"b\", c=~\"d\", e!~\"f\", __name__=\"foo\"", 38},
    {"foo{a==\"b\"}", 11, 0, "1:7: parse error: unexpected \"=\" in label matching, expected string", 67},
    {"foo{a=\"b\"=\"c\"}", 14, 0,
     "1:10: parse error: unexpected \"=\" in label matching, expected \",\" or \"}\"", 72},
    {"foo{a=\"b\" b=\"c\"}", 16, 0,
     "1:11: parse error: unexpected identifier \"b\" in label matching, expected \",\" or \"}\"", 83},
    {"foo{1=\"b\"}", 10, 0, "1:5: parse error: unexpected character inside braces: '1'", 57},
    {"foo{a=1}", 8, 0, "1:7: parse error: unexpected character inside braces: '1'", 57},
    {"foo{a=\"b\"} offset 5m", 20, 0, "1:12: parse error: unexpected <offset>", 38},
    {"foo[5m:1m]", 10, 0, "1:4: parse error: unexpected \"[\"", 32},
    {"foo{a=\"b\"}]", 11, 0, "1:11: parse error: unexpected right bracket ']'", 47},
    {"foo)", 4, 0, "1:5: parse error: unexpected right parenthesis ')'", 50},
    {"foo,", 4, 0, "1:4: parse error: unexpected \",\"", 32},
    {"foo{a=\"b\"},", 11, 0, "1:11: parse error: unexpected \",\"", 33},
    {"foo.bar", 7, 0, "1:4: parse error: unexpected character: '.'", 43},
    {"f\303\266o", 4, 0, "1:2: parse error: unexpected character: '\303\266'", 44},
    {"{\303\244=\"b\"}", 8, 0, "1:2: parse error: unexpected character inside braces: '\303\244'", 58},
    {"foo{a=\"\\\"}", 10, 0, "1:7: parse error: unterminated quoted string", 44},
    {"foo{a='b'}", 10, 1, "a=\"b\", __name__=\"foo\"", 21},
    {"foo{a=`b`}", 10, 1, "a=\"b\", __name__=\"foo\"", 21},
    {"foo{a=~`\\d+`}", 13, 1, "a=~\"\\\\d+\", __name__=\"foo\"", 25},
    {"foo{a=~\"\\\\d+\"}", 14, 1, "a=~\"\\\\d+\", __name__=\"foo\"", 25},
    {"foo{a=~\"\\\\p{Foo}\"}", 18, 0,
     "1:5: parse error: error parsing regexp: invalid character class range: `\\p{Foo}`", 80},
    {"foo{a=~\"x{2,1}\"}", 16, 0, "1:5: parse error: error parsing regexp: invalid repeat count: `{2,1}`",
     69},
    {"foo{a=~\"x**\"}", 13, 0,
     "1:5: parse error: error parsing regexp: invalid nested repetition operator: `**`", 80},
    {"foo{a=~\"(\?P<n>a)(\?P<n>b)\"}", 26, 1, "a=~\"(\?P<n>a)(\?P<n>b)\", __name__=\"foo\"", 37},
    {"foo\011{a=\"b\"}", 11, 1, "a=\"b\", __name__=\"foo\"", 21},
    {"foo  {a=\"b\"}", 12, 1, "a=\"b\", __name__=\"foo\"", 21},
    {"{a=\"b\"} or {c=\"d\"}", 18, 0, "1:9: parse error: unexpected <op:or>", 36},
    {"foo{a=\"b\"} offset", 17, 0, "1:12: parse error: unexpected <offset>", 38},
    {"nan", 3, 0, "1:1: parse error: unexpected number \"nan\"", 41},
    {"inf", 3, 0, "1:1: parse error: unexpected number \"inf\"", 41},
    {"Inf", 3, 0, "1:1: parse error: unexpected number \"Inf\"", 41},
    {"NaN", 3, 0, "1:1: parse error: unexpected number \"NaN\"", 41},
    {"0x1f", 4, 0, "1:1: parse error: unexpected number \"0x1f\"", 42},
    {"1e5", 3, 0, "1:1: parse error: unexpected number \"1e5\"", 41},
    {"5m", 2, 0, "1:1: parse error: unexpected duration \"5m\"", 42},
    {"foo{a=\"b\"}5m", 12, 0, "1:11: parse error: unexpected duration \"5m\"", 43},
    {"foo!", 4, 0, "1:4: parse error: unexpected character after '!': '\357\277\275'", 55},
    {"foo{!}", 6, 0, "1:5: parse error: unexpected character after '!' inside braces: '}'", 67},
    {"foo{a!}", 7, 0, "1:6: parse error: unexpected character after '!' inside braces: '}'", 67},
    {"foo{a!=}", 8, 0, "1:8: parse error: unexpected \"}\" in label matching, expected string", 67},
    {"foo{a~\"b\"}", 10, 0, "1:6: parse error: unexpected character inside braces: '~'", 57},
    {"foo{a=~}", 8, 0, "1:8: parse error: unexpected \"}\" in label matching, expected string", 67},
    {"foo{a=\"b\"]", 10, 0, "1:10: parse error: unexpected character inside braces: ']'", 58},
    {"foo{a=\"b\")", 10, 0, "1:10: parse error: unexpected character inside braces: ')'", 58},
    {"{a=~\")*(\"}", 10, 0, "1:2: parse error: error parsing regexp: unexpected ): `)*(`", 59},
    {"foo{x=\"y\",a!~`)*(`}", 19, 0, "1:11: parse error: error parsing regexp: unexpected ): `)*(`", 60},
    {"{a=~\"a)(b\"}", 11, 0, "1:2: parse error: error parsing regexp: unexpected ): `a)(b`", 60},
    {"foo{x=\"y\",a!~`a)(b`}", 20, 0, "1:11: parse error: error parsing regexp: unexpected ): `a)(b`", 61},
    {"{a=~\"a)|(b\"}", 12, 0, "1:2: parse error: error parsing regexp: unexpected ): `a)|(b`", 61},
    {"foo{x=\"y\",a!~`a)|(b`}", 21, 0, "1:11: parse error: error parsing regexp: unexpected ): `a)|(b`", 62},
    {"{a=~\"(a)|b)|(c\"}", 16, 0, "1:2: parse error: error parsing regexp: unexpected ): `(a)|b)|(c`", 65},
    {"foo{x=\"y\",a!~`(a)|b)|(c`}", 25, 0,
     "1:11: parse error: error parsing regexp: unexpected ): `(a)|b)|(c`", 66},
    {"{a=~\"a)\"}", 9, 0, "1:2: parse error: error parsing regexp: unexpected ): `^(\?:a))$`", 64},
    {"foo{x=\"y\",a!~`a)`}", 18, 0, "1:11: parse error: error parsing regexp: unexpected ): `^(\?:a))$`", 65},
    {"{a=~\"(a\"}", 9, 0, "1:2: parse error: error parsing regexp: missing closing ): `^(\?:(a)$`", 69},
    {"foo{x=\"y\",a!~`(a`}", 18, 0, "1:11: parse error: error parsing regexp: missing closing ): `^(\?:(a)$`",
     70},
    {"foo{x=\"y\",a!~`)`}", 17, 0, "1:11: parse error: error parsing regexp: unexpected ): `^(\?:))$`", 64},
    {"{a=~\"a|)|(\"}", 12, 0, "1:2: parse error: error parsing regexp: unexpected ): `a|)|(`", 61},
    {"foo{x=\"y\",a!~`a|)|(`}", 21, 0, "1:11: parse error: error parsing regexp: unexpected ): `a|)|(`", 62},
    {"{a=~\"\\\\)\"}", 10, 1, "a=~\"\\\\)\"", 8},
    {"foo{x=\"y\",a!~`\\)`}", 18, 1, "x=\"y\", a!~\"\\\\)\", __name__=\"foo\"", 31},
    {"{a=~\"a)(\?i)(b\"}", 15, 0, "1:2: parse error: error parsing regexp: unexpected ): `a)(\?i)(b`", 64},
    {"foo{x=\"y\",a!~`a)(\?i)(b`}", 24, 0,
     "1:11: parse error: error parsing regexp: unexpected ): `a)(\?i)(b`", 65},
    {"{a=~\"(\?i)a)|(b\"}", 16, 0, "1:2: parse error: error parsing regexp: unexpected ): `(\?i)a)|(b`", 65},
    {"foo{x=\"y\",a!~`(\?i)a)|(b`}", 25, 0,
     "1:11: parse error: error parsing regexp: unexpected ): `(\?i)a)|(b`", 66},
    {"{a=~\"[)]\"}", 10, 1, "a=~\"[)]\"", 8},
    {"foo{x=\"y\",a!~`[)]`}", 19, 1, "x=\"y\", a!~\"[)]\", __name__=\"foo\"", 31},
    {"{a=~\"a)|[(]b\"}", 14, 0, "1:2: parse error: error parsing regexp: unexpected ): `^(\?:a)|[(]b)$`", 69},
    {"foo{x=\"y\",a!~`a)|[(]b`}", 23, 0,
     "1:11: parse error: error parsing regexp: unexpected ): `^(\?:a)|[(]b)$`", 70},
    {"{a=~\"a{1001})|(b\"}", 18, 0, "1:2: parse error: error parsing regexp: invalid repeat count: `{1001}`",
     70},
    {"foo{x=\"y\",a!~`a{1001})|(b`}", 27, 0,
     "1:11: parse error: error parsing regexp: invalid repeat count: `{1001}`", 71},
    {"{a=~\"a)|(b{1001}\"}", 18, 0, "1:2: parse error: error parsing regexp: invalid repeat count: `{1001}`",
     70},
    {"foo{x=\"y\",a!~`a)|(b{1001}`}", 27, 0,
     "1:11: parse error: error parsing regexp: invalid repeat count: `{1001}`", 71},
    {"{a=~\"a)|(b**\"}", 14, 0,
     "1:2: parse error: error parsing regexp: invalid nested repetition operator: `**`", 80},
    {"foo{x=\"y\",a!~`a)|(b**`}", 23, 0,
     "1:11: parse error: error parsing regexp: invalid nested repetition operator: `**`", 81},
    {"{a=~\"a)|(b[\"}", 13, 0, "1:2: parse error: error parsing regexp: missing closing ]: `[)$`", 64},
    {"foo{x=\"y\",a!~`a)|(b[`}", 22, 0, "1:11: parse error: error parsing regexp: missing closing ]: `[)$`",
     65},
    {"{a=~\"(\?P<x>a))|((\?P<x>b)\"}", 26, 0,
     "1:2: parse error: error parsing regexp: unexpected ): `(\?P<x>a))|((\?P<x>b)`", 75},
    {"foo{x=\"y\",a!~`(\?P<x>a))|((\?P<x>b)`}", 35, 0,
     "1:11: parse error: error parsing regexp: unexpected ): `(\?P<x>a))|((\?P<x>b)`", 76},
    {"{a=~\"((a))\"}", 12, 1, "a=~\"((a))\"", 10},
    {"foo{x=\"y\",a!~`((a))`}", 21, 1, "x=\"y\", a!~\"((a))\", __name__=\"foo\"", 33},
    {"{a=~\")(\"}", 9, 0, "1:2: parse error: error parsing regexp: unexpected ): `)(`", 58},
    {"foo{x=\"y\",a!~`)(`}", 18, 0, "1:11: parse error: error parsing regexp: unexpected ): `)(`", 59},
    {"{a=~\"a)b(c\"}", 12, 0, "1:2: parse error: error parsing regexp: unexpected ): `a)b(c`", 61},
    {"foo{x=\"y\",a!~`a)b(c`}", 21, 0, "1:11: parse error: error parsing regexp: unexpected ): `a)b(c`", 62},
    {"{a=~\"a)*(b\"}", 12, 0, "1:2: parse error: error parsing regexp: unexpected ): `a)*(b`", 61},
    {"foo{x=\"y\",a!~`a)*(b`}", 21, 0, "1:11: parse error: error parsing regexp: unexpected ): `a)*(b`", 62},
    {"{a=~\"x)|(\?:y\"}", 14, 0, "1:2: parse error: error parsing regexp: unexpected ): `x)|(\?:y`", 63},
    {"foo{x=\"y\",a!~`x)|(\?:y`}", 23, 0, "1:11: parse error: error parsing regexp: unexpected ): `x)|(\?:y`",
     64},
    {"{a=~\"x)|(\?P<n>y\"}", 17, 0, "1:2: parse error: error parsing regexp: unexpected ): `x)|(\?P<n>y`",
     66},
    {"foo{x=\"y\",a!~`x)|(\?P<n>y`}", 26, 0,
     "1:11: parse error: error parsing regexp: unexpected ): `x)|(\?P<n>y`", 67},
    {"{a=~\"\"}", 7, 1, "a=~\"\"", 5},
    {"foo{x=\"y\",a!~``}", 16, 1, "x=\"y\", a!~\"\", __name__=\"foo\"", 28},
    {"{a=~\"|\"}", 8, 1, "a=~\"|\"", 6},
    {"foo{x=\"y\",a!~`|`}", 17, 1, "x=\"y\", a!~\"|\", __name__=\"foo\"", 29},
    {"{a=~\"a)|(\\\\\"}", 13, 0, "1:2: parse error: error parsing regexp: missing closing ): `^(\?:a)|(\\)$`",
     72},
    {"foo{x=\"y\",a!~`a)|(\\`}", 21, 0,
     "1:11: parse error: error parsing regexp: missing closing ): `^(\?:a)|(\\)$`", 73},
    {"{a=~\"\\\\Q)|(\\\\E\"}", 16, 1, "a=~\"\\\\Q)|(\\\\E\"", 14},
    {"foo{x=\"y\",a!~`\\Q)|(\\E`}", 23, 1, "x=\"y\", a!~\"\\\\Q)|(\\\\E\", __name__=\"foo\"", 37},
    {"{a=~\"\\\\Qa)|(b\"}", 15, 0,
     "1:2: parse error: error parsing regexp: missing closing ): `^(\?:\\Qa)|(b)$`", 74},
    {"foo{x=\"y\",a!~`\\Qa)|(b`}", 23, 0,
     "1:11: parse error: error parsing regexp: missing closing ): `^(\?:\\Qa)|(b)$`", 75},
    {"{a=~\"(\?i:a)|(b)\"}", 17, 1, "a=~\"(\?i:a)|(b)\"", 15},
    {"foo{x=\"y\",a!~`(\?i:a)|(b)`}", 26, 1, "x=\"y\", a!~\"(\?i:a)|(b)\", __name__=\"foo\"", 38},
    {"{a=~\"(\?:a)|(\?:b)\"}", 18, 1, "a=~\"(\?:a)|(\?:b)\"", 16},
    {"foo{x=\"y\",a!~`(\?:a)|(\?:b)`}", 27, 1, "x=\"y\", a!~\"(\?:a)|(\?:b)\", __name__=\"foo\"", 39},
    {"{a=~\"a)|(\?\"}", 12, 0, "1:2: parse error: error parsing regexp: unexpected ): `a)|(\?`", 61},
    {"foo{x=\"y\",a!~`a)|(\?`}", 21, 0, "1:11: parse error: error parsing regexp: unexpected ): `a)|(\?`",
     62},
    {"{a=~\"a)|((b\"}", 13, 0, "1:2: parse error: error parsing regexp: missing closing ): `^(\?:a)|((b)$`",
     73},
    {"foo{x=\"y\",a!~`a)|((b`}", 22, 0,
     "1:11: parse error: error parsing regexp: missing closing ): `^(\?:a)|((b)$`", 74},
    {"{a=~\"a))|((b\"}", 14, 0, "1:2: parse error: error parsing regexp: unexpected ): `^(\?:a))|((b)$`", 69},
    {"foo{x=\"y\",a!~`a))|((b`}", 23, 0,
     "1:11: parse error: error parsing regexp: unexpected ): `^(\?:a))|((b)$`", 70},
    {"{a=~\"\000(\"}", 9, 0, "1:2: parse error: error parsing regexp: missing closing ): `^(\?:\000()$`", 69},
    {"{a=~\"(\000\"}", 9, 0, "1:2: parse error: error parsing regexp: missing closing ): `^(\?:(\000)$`", 69},
    {"{a=\"\000\"}", 7, 1, "a=\"\\x00\"", 8},
    {"{a=~\"\\x00(\"}", 12, 0, "1:2: parse error: error parsing regexp: missing closing ): `^(\?:\000()$`",
     69},
    {"{a=~\"a)|(\000\"}", 12, 0, "1:2: parse error: error parsing regexp: unexpected ): `a)|(\000`", 61},
    {"\000", 1, 0, "1:1: parse error: unexpected character: '\\x00'", 46},
    {"foo\000", 4, 0, "1:4: parse error: unexpected character: '\\x00'", 46},
    {"{a\000=\"b\"}", 8, 0, "1:3: parse error: unexpected character inside braces: '\\x00'", 60},
    {"{a=~\"\377(\"}", 9, 0, "1:5: parse error: invalid UTF-8 rune", 36},
    {"{a=~\"(\\xff\"}", 12, 0, "1:2: parse error: error parsing regexp: invalid UTF-8: `\377)$`", 60},
    {"{a=~\"\\xff\"}", 11, 0, "1:2: parse error: error parsing regexp: invalid UTF-8: `\377)$`", 60},
    {"{a=~\"[\\xff-a]\"}", 15, 0, "1:2: parse error: error parsing regexp: invalid UTF-8: `\377-a])$`", 63},
    {"{a=~\"\300\200(\"}", 10, 0, "1:5: parse error: invalid UTF-8 rune", 36},
    {"{a=~\"\300\200\"}", 9, 0, "1:5: parse error: invalid UTF-8 rune", 36},
    {"{a=~\"(\000a)|(\000\"}", 14, 0,
     "1:2: parse error: error parsing regexp: missing closing ): `^(\?:(\000a)|(\000)$`", 74},
};

static void matchers_text(labels_matcher **ms, size_t n, base_buf *out) {
    for (size_t i = 0; i < n; i++) {
        if (i) base_buf_puts(out, ", ");
        labels_matcher_format(ms[i], out);
    }
}

static void test_table(void **state) {
    (void)state;
    int bad = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        labels_matcher **ms = NULL;
        size_t nms = 0;
        base_buf got;
        base_buf_init(&got, 0);
        int rc = promql_parse_selector_msg(cases[i].in, cases[i].n, &ms, &nms, &got);
        if (rc == 0) {
            matchers_text(ms, nms, &got);
            labels_matchers_free(ms, nms);
        }
        assert_false(base_buf_err(&got));
        if ((rc == 0) != cases[i].ok || (rc != 0 && rc != BASE_E_PARSE) || got.len != cases[i].out_n ||
            memcmp(got.data ? got.data : "", cases[i].out, got.len) != 0) {
            print_message("case %zu %s: rc %d, got \"%.*s\", want \"%s\"\n", i, cases[i].in, rc, (int)got.len,
                          got.data ? got.data : "", cases[i].out);
            bad++;
        }
        base_buf_free(&got);
        /* The C-string form: the same message, cut at its first NUL. */
        char err[4096];
        memset(err, 'x', sizeof err);
        rc = promql_parse_selector(cases[i].in, cases[i].n, &ms, &nms, err, sizeof err);
        if (rc == 0) {
            labels_matchers_free(ms, nms);
            if (!cases[i].ok) bad++;
        } else if (cases[i].ok || strcmp(err, cases[i].out) != 0) {
            print_message("case %zu %s: C string \"%s\", want \"%s\"\n", i, cases[i].in, err, cases[i].out);
            bad++;
        }
    }
    assert_int_equal(bad, 0);
}

/* Messages as long as the input, whole through _msg, cut through err. */
static void test_long(void **state) {
    (void)state;
    enum { N = 5000 };
    base_buf q, want, got;
    base_buf_init(&q, 0);
    base_buf_init(&want, 0);
    base_buf_init(&got, 0);
    base_buf_puts(&q, "{a=~\"");
    for (int i = 0; i < N; i++) base_buf_putc(&q, i % 100 ? 'x' : '\0');
    base_buf_puts(&q, ")|(\"}");
    base_buf_puts(&want, "1:2: parse error: error parsing regexp: unexpected ): `");
    base_buf_append(&want, q.data + 5, N + 3);
    base_buf_putc(&want, '`');
    labels_matcher **ms = NULL;
    size_t nms = 0;
    assert_int_equal(promql_parse_selector_msg(q.data, q.len, &ms, &nms, &got), BASE_E_PARSE);
    assert_int_equal(got.len, want.len);
    assert_memory_equal(got.data, want.data, want.len);
    char err[64];
    assert_int_equal(promql_parse_selector(q.data, q.len, &ms, &nms, err, sizeof err), BASE_E_PARSE);
    assert_string_equal(err, "1:2: parse error: error parsing regexp: unexpected ): `"); /* then NUL */
    /* the same regex in a query */
    pq_expr *x = NULL;
    base_buf_reset(&got);
    assert_int_equal(promql_parse_msg(q.data, q.len, &x, &got), BASE_E_PARSE);
    assert_int_equal(got.len, want.len);
    assert_memory_equal(got.data, want.data, want.len);

    /* a long identifier after the selector; err cut to errlen - 1 bytes */
    base_buf_reset(&q);
    base_buf_reset(&want);
    base_buf_reset(&got);
    base_buf_puts(&q, "foo ");
    for (int i = 0; i < N; i++) base_buf_putc(&q, 'y');
    base_buf_puts(&want, "1:5: parse error: unexpected identifier \"");
    base_buf_append(&want, q.data + 4, N);
    base_buf_putc(&want, '"');
    assert_int_equal(promql_parse_selector_msg(q.data, q.len, &ms, &nms, &got), BASE_E_PARSE);
    assert_int_equal(got.len, want.len);
    assert_memory_equal(got.data, want.data, want.len);
    assert_int_equal(promql_parse_selector(q.data, q.len, &ms, &nms, err, sizeof err), BASE_E_PARSE);
    assert_int_equal(strlen(err), sizeof err - 1);
    assert_memory_equal(err, want.data, sizeof err - 1);
    base_buf_free(&q);
    base_buf_free(&want);
    base_buf_free(&got);
}

static void test_limits(void **state) {
    (void)state;
    size_t n = (size_t)PQ_MAX_QUERY + 1;
    char *q = malloc(n);
    assert_non_null(q);
    memset(q, 'a', n);
    labels_matcher **ms = NULL;
    size_t nms = 0;
    char err[256];
    assert_int_equal(promql_parse_selector(q, n, &ms, &nms, err, sizeof err), BASE_E_LIMIT);
    assert_non_null(strstr(err, "too long"));
    base_buf msg;
    base_buf_init(&msg, 0);
    assert_int_equal(promql_parse_selector_msg(q, n, &ms, &nms, &msg), BASE_E_LIMIT);
    assert_non_null(strstr(msg.data, "too long"));
    base_buf_free(&msg);
    /* the name alone is fine at the limit */
    assert_int_equal(promql_parse_selector(q, n - 1, &ms, &nms, err, sizeof err), 0);
    assert_int_equal(nms, 1);
    assert_int_equal(labels_matcher_value(ms[0]).n, n - 1);
    labels_matchers_free(ms, nms);
    free(q);
    /* output parameters untouched on failure */
    ms = (labels_matcher **)&nms;
    nms = 7;
    assert_int_equal(promql_parse_selector("foo(", 4, &ms, &nms, err, sizeof err), BASE_E_PARSE);
    assert_ptr_equal(ms, (labels_matcher **)&nms);
    assert_int_equal(nms, 7);
    /* errlen 0 and 1 */
    assert_int_equal(promql_parse_selector("foo(", 4, &ms, &nms, NULL, 0), BASE_E_PARSE);
    err[0] = 'x';
    assert_int_equal(promql_parse_selector("foo(", 4, &ms, &nms, err, 1), BASE_E_PARSE);
    assert_int_equal(err[0], 0);
}

/* `a)|(b`: well-formed anchored ("^(?:a)|(b)$"), not on its own. */
static void test_regex_alone(void **state) {
    (void)state;
    static const char want[] = "error parsing regexp: unexpected ): `a)|(b`";
    for (int t = 0; t < 2; t++) {
        labels_matcher *m = NULL;
        char err[256] = "";
        int rc = labels_matcher_new(t ? LABELS_MATCH_NRE : LABELS_MATCH_RE, base_str_c("a"),
                                    base_str_c("a)|(b"), &m, err, sizeof err);
        assert_int_equal(rc, BASE_E_PARSE);
        assert_null(m);
        assert_string_equal(err, want);
    }
    /* the anchored error comes first, as 2.42 compiles that first */
    labels_matcher *m = NULL;
    char err[256] = "";
    assert_int_equal(
        labels_matcher_new(LABELS_MATCH_RE, base_str_c("a"), base_str_c("a)|(b{1001}"), &m, err, sizeof err),
        BASE_E_PARSE);
    assert_string_equal(err, "error parsing regexp: invalid repeat count: `{1001}`");
    /* what relabel and label_replace compile: accepted, as in 2.42 */
    labels_regex *re = NULL;
    assert_int_equal(labels_regex_compile(base_str_c("a)|(b"), LABELS_RE_CAPTURE, &re, err, sizeof err), 0);
    assert_int_equal(labels_regex_match(re, base_str_c("a")), 1);
    assert_int_equal(labels_regex_match(re, base_str_c("xb")), 1);
    assert_int_equal(labels_regex_match(re, base_str_c("x")), 0);
    labels_regex_free(re);
    /* balanced ones still work as matchers */
    assert_int_equal(
        labels_matcher_new(LABELS_MATCH_RE, base_str_c("a"), base_str_c("(a)|(b)"), &m, err, sizeof err), 0);
    assert_int_equal(labels_matcher_matches(m, base_str_c("b")), 1);
    assert_int_equal(labels_matcher_matches(m, base_str_c("ab")), 0);
    labels_matcher_free(m);
    /* and through the query parser, at the label */
    pq_expr *x = NULL;
    const char *q = "rate(foo{b=\"c\", a=~\"a)|(b\"}[5m])";
    assert_int_equal(promql_parse(q, strlen(q), &x, err, sizeof err), BASE_E_PARSE);
    assert_string_equal(err, "1:17: parse error: error parsing regexp: unexpected ): `a)|(b`");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table),
        cmocka_unit_test(test_long),
        cmocka_unit_test(test_limits),
        cmocka_unit_test(test_regex_alone),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
