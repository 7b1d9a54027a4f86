/* tests/unit/base/time.c -- clocks and Prometheus duration parsing
 * and formatting (model.ParseDuration and Duration.String as Prometheus
 * 2.42 uses them). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "base/err.h"
#include "base/time.h"

static void test_durations(void **state) {
    (void)state;
    static const struct {
        const char *s;
        int64_t ms;
    } ok[] = {
        {"0", 0},
        {"0s", 0},
        {"1ms", 1},
        {"500ms", 500},
        {"15s", 15000},
        {"1m", 60000},
        {"1m30s", 90000},
        {"2h", 7200000},
        {"1h30m", 5400000},
        {"1d", 86400000},
        {"1w", 604800000},
        {"1y", INT64_C(31536000000)},
        {"1y2w3d4h5m6s7ms",
         INT64_C(31536000000) + 2 * 604800000 + 3 * 86400000 + 4 * 3600000 + 5 * 60000 + 6000 + 7},
        {"01s", 1000},
        {"90m", 5400000},
        {"1m500ms", 60500},
        {"292y", INT64_C(292) * 31536000000}, /* fits a Duration (ns) */
        {"9223372036854ms", INT64_C(9223372036854)},
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        int64_t ms = -1;
        int rc = base_parse_duration_ms(ok[i].s, &ms);
        if (rc != 0 || ms != ok[i].ms) fail_msg("%s: rc %d ms %lld", ok[i].s, rc, (long long)ms);
    }
    static const char *bad[] = {"",     "1",     "00",  "s",   "1.5s", "-1s", "1S",  "1sec", "1m1h", "5ms1s",
                                "1s1s", "1h 1m", " 1s", "1s ", "1x",   "ms",  "1ns", "1us",  "+1s",  "1mm"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int64_t ms = -7;
        if (base_parse_duration_ms(bad[i], &ms) != BASE_E_PARSE) fail_msg("accepted %s", bad[i]);
        assert_true(ms == -7);
    }
    int64_t ms = -7;
    assert_int_equal(base_parse_duration_ms(NULL, &ms), BASE_E_PARSE);
    /* beyond int64 nanoseconds: "duration out of range" */
    assert_int_equal(base_parse_duration_ms("293y", &ms), BASE_E_RANGE);
    assert_int_equal(base_parse_duration_ms("9223372036855ms", &ms), BASE_E_RANGE);
    assert_int_equal(base_parse_duration_ms("292y1000w", &ms), BASE_E_RANGE);
    assert_int_equal(base_parse_duration_ms("99999999999999999999999s", &ms), BASE_E_RANGE);
    assert_true(ms == -7);
}

static void test_fmt_durations(void **state) {
    (void)state;
    const struct {
        int64_t ms;
        const char *s;
    } t[] = {{0, "0s"},          {-1, ""},
             {1500, "1s500ms"},  {31536000000 + 86400000, "366d"},
             {1209600000, "2w"}, {INT64_MAX / 1000000, "106751d23h47m16s854ms"}};
    char b[BASE_FMT_DURATION_MAX];
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        assert_int_equal(base_fmt_duration(b, sizeof b, t[i].ms), strlen(t[i].s));
        assert_string_equal(b, t[i].s);
    }
    /* too small: cut at a whole unit, NUL-terminated */
    char s[6];
    assert_int_equal(base_fmt_duration(s, sizeof s, 90061001), 4);
    assert_string_equal(s, "1d1h");
    assert_int_equal(base_fmt_duration(s, 0, 1), 0);
}

static void test_clocks(void **state) {
    (void)state;
    int64_t a = base_mono_ns();
    int64_t u = base_unix_ms();
    assert_true(u > INT64_C(1600000000000)); /* after 2020 */
    base_sleep_until(a + 2000000);           /* 2 ms */
    int64_t b = base_mono_ns();
    assert_true(b - a >= 2000000);
    assert_true(base_process_cpu_ns() >= 0);
    assert_true(base_thread_cpu_ns() >= 0);
    base_sleep_until(a); /* in the past: returns at once */
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_durations),
        cmocka_unit_test(test_fmt_durations),
        cmocka_unit_test(test_clocks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
