/* ui.h -- the server's web UI: its files, embedded in the binary at build
 * time, and how they are served.
 *
 * The UI's sources (web/src: plain ES modules, CSS, index.html) and
 * uPlot's dist files (from the npm registry, installed into the build
 * directory) are compiled into a table by src/ui/embed/ui_embed.c: each
 * file's bytes, a gzip variant made once at build time (libdeflate, level
 * 12; absent when it would not be smaller), its content type and an ETag
 * (xxh3-64 of the bytes). Every file but index.html lives under
 * /ui/<build hash>/ (the hash covers every file), so those URLs never
 * change meaning: they are served "immutable" for a year. index.html is
 * served at "/" with its ETag; a browser revalidates it and gets 304 while
 * the build is the same.
 *
 * Invariants: the table is static, sorted by path, never changes at run
 * time; lookups allocate nothing and are safe from any thread.
 */
#ifndef KELVIN_UI_UI_H
#define KELVIN_UI_UI_H

#include <stddef.h>

typedef struct ui_asset {
    const char *path;          /* "/" or "/ui/<hash>/<name>" */
    const unsigned char *data; /* followed by a NUL byte that len does not count */
    size_t len;
    const unsigned char *gz; /* gzip of data, or NULL */
    size_t gz_len;
    const char *content_type; /* static */
    const char *etag;         /* quoted strong ETag, static */
    int immutable;            /* under the hashed prefix: cache for a year */
} ui_asset;

/* The asset served at path (the URL path, no query): "/" is index.html.
 * 0 and *ret, or BASE_E_NOTFOUND. */
int ui_asset_get(const char *path, ui_asset *ret);

/* The hashed prefix every asset but index.html lives under ("/ui/<hash>/"). */
const char *ui_base(void);

/* Number of embedded assets, and the i-th (for tests and listings). */
size_t ui_asset_count(void);
const ui_asset *ui_asset_at(size_t i);

/* What to answer to a GET of path. */
typedef struct ui_reply {
    int status; /* 200, 304 or 404 */
    const void *body;
    size_t len;
    const char *content_type;     /* static */
    const char *content_encoding; /* "gzip" or NULL */
    const char *etag;             /* static or NULL */
    const char *cache_control;    /* static */
} ui_reply;

/* Does the UI serve this path ("/" and "/ui/...")? */
int ui_handles(const char *path);

/* The answer to a GET: gzip_ok says whether Accept-Encoding allows gzip,
 * if_none_match is the request's If-None-Match header (NULL when absent;
 * a list of ETags or "*", W/ prefixes compared weakly as RFC 9110 says).
 * Fills *ret (a 404 for a path the UI does not have). */
void ui_serve(const char *path, int gzip_ok, const char *if_none_match, ui_reply *ret);

#endif
