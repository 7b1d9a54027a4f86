/* ui.c -- lookups in the embedded asset table and the serving decision
 * (status, encoding, caching headers) for the web UI.
 *
 * Design: the table (ui_int.h) is generated and sorted; a lookup bisects
 * it. ui_serve() is a pure function of (path, gzip allowed, If-None-Match)
 * so it can be tested without a socket; src/server/routes.c turns its
 * answer into an HTTP response.
 * Invariants: nothing here allocates or keeps state.
 */
#include <string.h>

#include "base/err.h"
#include "ui/ui.h"
#include "ui/ui_int.h"

/* Longest path looked up; longer paths are simply not found. */
#define UI_MAX_PATH 256

int ui_asset_get(const char *path, ui_asset *ret) {
    if (!path || strlen(path) > UI_MAX_PATH) return BASE_E_NOTFOUND;
    size_t lo = 0, hi = ui__n_assets;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(ui__assets[mid].path, path);
        if (c == 0) {
            *ret = ui__assets[mid];
            return 0;
        }
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return BASE_E_NOTFOUND;
}

const char *ui_base(void) {
    return ui__base;
}

size_t ui_asset_count(void) {
    return ui__n_assets;
}

const ui_asset *ui_asset_at(size_t i) {
    return i < ui__n_assets ? &ui__assets[i] : NULL;
}

int ui_handles(const char *path) {
    return path && (strcmp(path, "/") == 0 || strncmp(path, "/ui/", 4) == 0);
}

/* Does the If-None-Match list name etag? Comparison is weak (a W/ prefix
 * on either side is ignored), as RFC 9110 13.1.2 asks for GET. */
static int etag_matches(const char *list, const char *etag) {
    const char *e = etag[0] == 'W' && etag[1] == '/' ? etag + 2 : etag;
    size_t elen = strlen(e);
    const char *p = list;
    for (int guard = 0; *p && guard < 1024; guard++) {
        while (*p == ' ' || *p == '\t' || *p == ',') p++;
        if (!*p) break;
        if (*p == '*') return 1;
        if (p[0] == 'W' && p[1] == '/') p += 2;
        const char *start = p;
        if (*p == '"') {
            p++;
            while (*p && *p != '"') p++;
            if (*p == '"') p++;
        } else {
            while (*p && *p != ',' && *p != ' ' && *p != '\t') p++;
        }
        if ((size_t)(p - start) == elen && memcmp(start, e, elen) == 0) return 1;
    }
    return 0;
}

void ui_serve(const char *path, int gzip_ok, const char *if_none_match, ui_reply *ret) {
    ui_asset a;
    if (ui_asset_get(path, &a) != 0) {
        static const char nf[] = "404 page not found\n";
        *ret = (ui_reply){.status = 404,
                          .body = nf,
                          .len = sizeof nf - 1,
                          .content_type = "text/plain; charset=utf-8",
                          .cache_control = "no-cache"};
        return;
    }
    ui_reply r = {.status = 200,
                  .body = a.data,
                  .len = a.len,
                  .content_type = a.content_type,
                  .etag = a.etag,
                  .cache_control = a.immutable ? "public, max-age=31536000, immutable" : "no-cache"};
    if (if_none_match && etag_matches(if_none_match, a.etag)) {
        r.status = 304;
        r.body = "";
        r.len = 0;
    } else if (gzip_ok && a.gz) {
        r.body = a.gz;
        r.len = a.gz_len;
        r.content_encoding = "gzip";
    }
    *ret = r;
}
