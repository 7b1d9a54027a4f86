/* tests/unit/ui/asset.c -- the web UI's embedded assets: lookup (index at
 * "/", everything else under the hashed prefix, the table sorted), ETags,
 * the gzip variants (inflate back to the same bytes), content types, and
 * ui_serve's answers (gzip by Accept-Encoding, 304 on If-None-Match lists
 * and weak tags, 404, cache headers). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <libdeflate.h>

#include "base/err.h"
#include "ui/ui.h"

static void test_lookup(void **state) {
    (void)state;
    ui_asset a;
    assert_int_equal(ui_asset_get("/", &a), 0);
    assert_string_equal(a.content_type, "text/html; charset=utf-8");
    assert_false(a.immutable);
    assert_non_null(strstr((const char *)a.data, "<!doctype html>"));
    /* %BASE% was replaced by the hashed prefix, relative */
    assert_null(strstr((const char *)a.data, "%BASE%"));
    const char *base = ui_base();
    assert_int_equal(strncmp(base, "/ui/", 4), 0);
    assert_int_equal(strlen(base), 4 + 12 + 1);
    assert_non_null(strstr((const char *)a.data, base + 1));

    char path[128];
    snprintf(path, sizeof path, "%sapp.js", base);
    assert_int_equal(ui_asset_get(path, &a), 0);
    assert_string_equal(a.content_type, "text/javascript; charset=utf-8");
    assert_true(a.immutable);
    snprintf(path, sizeof path, "%sapp.css", base);
    assert_int_equal(ui_asset_get(path, &a), 0);
    assert_string_equal(a.content_type, "text/css; charset=utf-8");
    snprintf(path, sizeof path, "%svendor/uPlot.iife.min.js", base);
    assert_int_equal(ui_asset_get(path, &a), 0);
    assert_true(a.len > 10000);
    snprintf(path, sizeof path, "%sviews/fleet.js", base);
    assert_int_equal(ui_asset_get(path, &a), 0);

    assert_int_equal(ui_asset_get("/ui/000000000000/app.js", &a), BASE_E_NOTFOUND);
    assert_int_equal(ui_asset_get("/app.js", &a), BASE_E_NOTFOUND);
    assert_int_equal(ui_asset_get("", &a), BASE_E_NOTFOUND);
    assert_int_equal(ui_asset_get(NULL, &a), BASE_E_NOTFOUND);
    char longp[600];
    memset(longp, 'a', sizeof longp - 1);
    longp[0] = '/';
    longp[sizeof longp - 1] = 0;
    assert_int_equal(ui_asset_get(longp, &a), BASE_E_NOTFOUND);

    assert_true(ui_handles("/"));
    assert_true(ui_handles("/ui/x"));
    assert_false(ui_handles("/api/v1/query"));
    assert_false(ui_handles("/metrics"));
}

static void test_table(void **state) {
    (void)state;
    size_t n = ui_asset_count();
    assert_true(n >= 10);
    assert_null(ui_asset_at(n));
    struct libdeflate_decompressor *d = libdeflate_alloc_decompressor();
    assert_non_null(d);
    for (size_t i = 0; i < n; i++) {
        const ui_asset *a = ui_asset_at(i);
        if (i > 0) assert_true(strcmp(ui_asset_at(i - 1)->path, a->path) < 0);
        /* each entry is found by its own path */
        ui_asset b;
        assert_int_equal(ui_asset_get(a->path, &b), 0);
        assert_ptr_equal(b.data, a->data);
        /* a strong ETag: 16 hex digits in quotes, distinct per content */
        assert_int_equal(strlen(a->etag), 18);
        assert_int_equal(a->etag[0], '"');
        assert_int_equal(a->etag[17], '"');
        for (size_t j = 0; j < i; j++)
            if (ui_asset_at(j)->len != a->len || memcmp(ui_asset_at(j)->data, a->data, a->len) != 0)
                assert_string_not_equal(ui_asset_at(j)->etag, a->etag);
        assert_int_equal(a->immutable, strcmp(a->path, "/") != 0);
        if (a->gz) {
            assert_true(a->gz_len < a->len);
            unsigned char *out = malloc(a->len + 1);
            assert_non_null(out);
            size_t got = 0;
            assert_int_equal(libdeflate_gzip_decompress(d, a->gz, a->gz_len, out, a->len + 1, &got),
                             LIBDEFLATE_SUCCESS);
            assert_int_equal(got, a->len);
            assert_memory_equal(out, a->data, a->len);
            free(out);
        }
    }
    libdeflate_free_decompressor(d);
    /* text assets compress: index.html and uPlot have gzip variants */
    ui_asset a;
    assert_int_equal(ui_asset_get("/", &a), 0);
    assert_non_null(a.gz);
}

static void test_serve(void **state) {
    (void)state;
    ui_asset idx;
    assert_int_equal(ui_asset_get("/", &idx), 0);
    ui_reply r;
    ui_serve("/", 0, NULL, &r);
    assert_int_equal(r.status, 200);
    assert_ptr_equal(r.body, idx.data);
    assert_int_equal(r.len, idx.len);
    assert_null(r.content_encoding);
    assert_string_equal(r.etag, idx.etag);
    assert_string_equal(r.cache_control, "no-cache");

    ui_serve("/", 1, NULL, &r);
    assert_int_equal(r.status, 200);
    assert_string_equal(r.content_encoding, "gzip");
    assert_ptr_equal(r.body, idx.gz);
    assert_int_equal(r.len, idx.gz_len);

    /* If-None-Match: the tag, a list holding it, a weak form, "*" */
    ui_serve("/", 1, idx.etag, &r);
    assert_int_equal(r.status, 304);
    assert_int_equal(r.len, 0);
    assert_null(r.content_encoding);
    assert_string_equal(r.etag, idx.etag);
    char list[128];
    snprintf(list, sizeof list, "\"aaaa\", W/%s ,\"bbbb\"", idx.etag);
    ui_serve("/", 0, list, &r);
    assert_int_equal(r.status, 304);
    ui_serve("/", 0, "*", &r);
    assert_int_equal(r.status, 304);
    ui_serve("/", 0, "\"0000000000000000\"", &r);
    assert_int_equal(r.status, 200);
    ui_serve("/", 0, "", &r);
    assert_int_equal(r.status, 200);
    ui_serve("/", 0, "\"unterminated", &r);
    assert_int_equal(r.status, 200);

    char path[128];
    snprintf(path, sizeof path, "%sapp.js", ui_base());
    ui_serve(path, 1, NULL, &r);
    assert_int_equal(r.status, 200);
    assert_string_equal(r.cache_control, "public, max-age=31536000, immutable");

    ui_serve("/ui/nope", 1, NULL, &r);
    assert_int_equal(r.status, 404);
    assert_null(r.etag);
    assert_null(r.content_encoding);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lookup),
        cmocka_unit_test(test_table),
        cmocka_unit_test(test_serve),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
