/* path.c -- Go's filepath.Clean and Join (path.h). */
#include "base/path.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *base_path_clean(const char *p) {
    size_t n = strlen(p);
    if (n == 0) return strdup(".");
    char *out = malloc(n + 2);
    if (!out) return NULL;
    int rooted = p[0] == '/';
    size_t w = 0, r = 0, dotdot = 0;
    if (rooted) {
        out[w++] = '/';
        r = 1;
        dotdot = 1;
    }
    while (r < n) {
        if (p[r] == '/') {
            r++;
        } else if (p[r] == '.' && (r + 1 == n || p[r + 1] == '/')) {
            r++;
        } else if (p[r] == '.' && p[r + 1] == '.' && (r + 2 == n || p[r + 2] == '/')) {
            r += 2;
            if (w > dotdot) { /* remove the last element */
                w--;
                while (w > dotdot && out[w] != '/') w--;
            } else if (!rooted) { /* nothing to remove: keep the ".." */
                if (w > 0) out[w++] = '/';
                out[w++] = '.';
                out[w++] = '.';
                dotdot = w;
            }
        } else {
            if ((rooted && w != 1) || (!rooted && w != 0)) out[w++] = '/';
            while (r < n && p[r] != '/') out[w++] = p[r++];
        }
    }
    if (w == 0) out[w++] = '.';
    out[w] = '\0';
    return out;
}

char *base_path_join(const char *dir, const char *name) {
    if (!dir[0]) return base_path_clean(name);
    size_t n = strlen(dir) + strlen(name) + 2;
    char *in = malloc(n);
    if (!in) return NULL;
    snprintf(in, n, "%s/%s", dir, name);
    char *out = base_path_clean(in);
    free(in);
    return out;
}
