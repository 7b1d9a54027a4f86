/* tests/unit/base/buf.c -- the growable buffer: appends, sticky errors,
 * limits, steal; plus the error table (err.c) and string views (str.h). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/str.h"

static void test_append(void **state) {
    (void)state;
    base_buf b = BASE_BUF_INIT;
    base_buf_init(&b, 0);
    assert_int_equal(b.len, 0);
    base_buf_puts(&b, "abc");
    base_buf_putc(&b, '-');
    base_buf_append(&b, "xyz", 2);
    base_buf_append(&b, NULL, 0);
    base_buf_printf(&b, "[%d:%s]", 42, "q");
    base_buf_u64(&b, UINT64_MAX);
    base_buf_putc(&b, ' ');
    base_buf_i64(&b, INT64_MIN);
    base_buf_putc(&b, ' ');
    base_buf_double(&b, 1e6);
    base_buf_putc(&b, ' ');
    base_buf_double(&b, NAN);
    assert_int_equal(base_buf_err(&b), 0);
    assert_string_equal(b.data, "abc-xy[42:q]18446744073709551615 -9223372036854775808 1e+06 NaN");
    assert_int_equal(b.len, strlen(b.data));

    /* long printf output takes the second path */
    base_buf_reset(&b);
    assert_int_equal(b.len, 0);
    assert_string_equal(b.data, "");
    char big[1000];
    memset(big, 'z', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    base_buf_printf(&b, "<%s>", big);
    assert_int_equal(b.len, 1001);
    assert_int_equal(b.data[0], '<');
    assert_int_equal(b.data[1000], '>');
    assert_int_equal(b.data[1001], '\0');

    /* growth keeps contents */
    base_buf_reset(&b);
    for (int i = 0; i < 10000; i++) base_buf_putc(&b, (char)('a' + i % 26));
    assert_int_equal(b.len, 10000);
    assert_int_equal(b.data[9999], 'a' + 9999 % 26);
    assert_true(b.cap > b.len);

    size_t n = 0;
    char *s = base_buf_steal(&b, &n);
    assert_int_equal(n, 10000);
    assert_null(b.data);
    assert_int_equal(b.len, 0);
    free(s);
    base_buf_puts(&b, "again"); /* usable after steal */
    assert_string_equal(b.data, "again");
    base_buf_free(&b);
    assert_null(b.data);
    base_buf_free(&b); /* twice is fine */
}

static void test_limit_sticky(void **state) {
    (void)state;
    base_buf b;
    base_buf_init(&b, 8);
    base_buf_puts(&b, "12345");
    assert_int_equal(base_buf_err(&b), 0);
    base_buf_puts(&b, "6789"); /* would pass 8 */
    assert_int_equal(base_buf_err(&b), BASE_E_LIMIT);
    assert_string_equal(b.data, "12345"); /* nothing partial */
    base_buf_putc(&b, 'x');               /* sticky: no-op */
    base_buf_printf(&b, "%d", 1);
    base_buf_u64(&b, 1);
    base_buf_double(&b, 1);
    assert_int_equal(b.len, 5);
    assert_int_equal(base_buf_reserve(&b, 1), BASE_E_LIMIT);
    /* reset clears the error, keeps the limit */
    base_buf_reset(&b);
    assert_int_equal(base_buf_err(&b), 0);
    base_buf_puts(&b, "12345678");
    assert_int_equal(base_buf_err(&b), 0);
    assert_int_equal(b.len, 8);
    base_buf_putc(&b, '9');
    assert_int_equal(base_buf_err(&b), BASE_E_LIMIT);
    base_buf_free(&b);

    /* an impossible reservation is an error, not a wrap-around */
    base_buf c;
    base_buf_init(&c, 0);
    base_buf_puts(&c, "x");
    assert_int_equal(base_buf_reserve(&c, SIZE_MAX - 1), BASE_E_NOMEM);
    assert_int_equal(base_buf_err(&c), BASE_E_NOMEM);
    base_buf_free(&c);
}

static void test_err_table(void **state) {
    (void)state;
    assert_string_equal(base_strerror(BASE_E_NOMEM), "out of memory");
    assert_string_equal(base_strerror(BASE_E_LIMIT), "limit exceeded");
    assert_string_equal(base_strerror(BASE_E_TRUNCATED), "input ended early");
    assert_string_equal(base_strerror(0), "success");
    assert_string_equal(base_strerror(-999), "unknown error");
    assert_string_equal(base_errname(BASE_E_PARSE), "PARSE");
    assert_string_equal(base_errname(0), "OK");
    assert_string_equal(base_errname(-999), "UNKNOWN");
}

static void test_str(void **state) {
    (void)state;
    base_str a = base_str_c("node_cpu_seconds_total");
    assert_int_equal(a.n, 22);
    assert_true(base_str_has_suffix(a, "_total"));
    assert_false(base_str_has_suffix(a, "_bucket"));
    assert_true(base_str_has_prefix(a, "node_"));
    assert_false(base_str_has_prefix(base_str_c("no"), "node_"));
    assert_true(base_str_eqc(a, "node_cpu_seconds_total"));
    assert_false(base_str_eqc(a, "node_cpu_seconds"));
    base_str e = base_str_c(NULL);
    assert_int_equal(e.n, 0);
    assert_true(base_str_eq(e, (base_str){"x", 0}));
    assert_true(base_str_has_suffix(base_str_c("x"), ""));
}

/* Go's encoding/json escaping, byte for byte (expected strings written by
 * hand from json.Marshal's rules). */
static void test_json_str(void **state) {
    (void)state;
    static const struct {
        const char *in;
        size_t n;
        const char *want;
    } cases[] = {
        {"plain", 5, "\"plain\""},
        {"a\"b\\c", 5, "\"a\\\"b\\\\c\""},
        {"l\n\r\t", 4, "\"l\\n\\r\\t\""},
        {"<a&b>", 5, "\"\\u003ca\\u0026b\\u003e\""},
        {"\x01\x1f", 2, "\"\\u0001\\u001f\""},
        {"x\0y", 3, "\"x\\u0000y\""},
        {"\xe2\x80\xa8|\xe2\x80\xa9", 7, "\"\\u2028|\\u2029\""},
        {"\xc3\xa9", 2, "\"\xc3\xa9\""},
        {"a\xff\xc3", 3, "\"a\\ufffd\\ufffd\""}, /* invalid UTF-8: one U+FFFD a byte, as Go */
        {"", 0, "\"\""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        base_buf b;
        base_buf_init(&b, 0);
        base_buf_json_str(&b, cases[i].in, cases[i].n);
        base_buf_putc(&b, '\0');
        assert_string_equal(b.data, cases[i].want);
        base_buf_free(&b);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_append), cmocka_unit_test(test_limit_sticky), cmocka_unit_test(test_err_table),
        cmocka_unit_test(test_str),    cmocka_unit_test(test_json_str),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
