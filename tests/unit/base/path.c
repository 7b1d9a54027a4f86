/* tests/unit/base/path.c -- base_path_clean and base_path_join against Go's
 * own filepath.Clean / Join test table (path/filepath's cleantests, the
 * Unix cases), so the paths Kelvin prints are the ones Prometheus prints. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "base/path.h"

static void test_clean(void **state) {
    (void)state;
    static const char *const cases[][2] = {
        {"abc", "abc"},
        {"abc/def", "abc/def"},
        {"a/b/c", "a/b/c"},
        {".", "."},
        {"..", ".."},
        {"../..", "../.."},
        {"../../abc", "../../abc"},
        {"/abc", "/abc"},
        {"/", "/"},
        {"", "."},
        {"abc/", "abc"},
        {"abc/def/", "abc/def"},
        {"a/b/c/", "a/b/c"},
        {"./", "."},
        {"../", ".."},
        {"../../", "../.."},
        {"/abc/", "/abc"},
        {"abc//def//ghi", "abc/def/ghi"},
        {"//abc", "/abc"},
        {"///abc", "/abc"},
        {"//abc//", "/abc"},
        {"abc//", "abc"},
        {"abc/./def", "abc/def"},
        {"/./abc/def", "/abc/def"},
        {"abc/.", "abc"},
        {"abc/def/ghi/../jkl", "abc/def/jkl"},
        {"abc/def/../ghi/../jkl", "abc/jkl"},
        {"abc/def/..", "abc"},
        {"abc/def/../..", "."},
        {"/abc/def/../..", "/"},
        {"abc/def/../../..", ".."},
        {"/abc/def/../../..", "/"},
        {"abc/def/../../../ghi/jkl/../../../mno", "../../mno"},
        {"/../abc", "/abc"},
        {"abc/./../def", "def"},
        {"abc//./../def", "def"},
        {"abc/../../././../def", "../../def"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *c = base_path_clean(cases[i][0]);
        assert_non_null(c);
        assert_string_equal(c, cases[i][1]);
        /* Clean is idempotent */
        char *c2 = base_path_clean(c);
        assert_string_equal(c2, cases[i][1]);
        free(c);
        free(c2);
    }
}

static void test_join(void **state) {
    (void)state;
    static const char *const cases[][3] = {
        {"a", "b", "a/b"},          {"a", "", "a"},     {"", "b", "b"},  {"/", "a", "/a"},
        {"/", "/a", "/a"},          {"a/", "b", "a/b"}, {"a/", "", "a"}, {"/etc/x", "../r.yml", "/etc/r.yml"},
        {"dir", "/abs", "dir/abs"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *j = base_path_join(cases[i][0], cases[i][1]);
        assert_non_null(j);
        assert_string_equal(j, cases[i][2]);
        free(j);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_clean), cmocka_unit_test(test_join)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
