/* pos.c -- a queue's position file (remote_int.h POSITION FILE): parse,
 * render, write, and the acknowledgement vectors' helpers.
 *
 * The parser takes the file's bytes with their length, checks every
 * number with base/num.h, and refuses anything but the three line kinds
 * (a file that does not parse counts as absent: the queue starts at the
 * end of the WAL and logs it). Limits: REMOTE_POS_FILE_MAX bytes, 65536
 * shards per vector, `cap` vectors.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/err.h"
#include "base/num.h"
#include "remote/remote_int.h"

#define MAGIC       "kelvin-remote-write-position 1"
#define MAX_VEC_LEN 65536

void remote__filter_free(remote_filter *f) {
    free(f->a);
    f->a = NULL;
    f->n = 0;
}

void remote__filter_bounds(remote_filter *f) {
    f->min = f->max = f->n ? f->a[0].pos : (remote_pos){0, 0};
    for (unsigned i = 1; i < f->n; i++) {
        f->min = remote_pos_min(f->min, f->a[i].pos);
        f->max = remote_pos_max(f->max, f->a[i].pos);
    }
}

remote_pos remote__pos_start(const remote_filter *f, size_t n) {
    remote_pos p = {0, 0};
    for (size_t i = 0; i < n; i++) p = remote_pos_max(p, f[i].min);
    return p;
}

/* Next space-separated token of [*p, end) (no newline inside). */
static base_str token(const char **p, const char *end) {
    const char *s = *p;
    while (s < end && *s == ' ') s++;
    const char *e = s;
    while (e < end && *e != ' ') e++;
    *p = e;
    return (base_str){s, (size_t)(e - s)};
}

static int parse_vector(const char *p, const char *end, remote_filter *f) {
    base_str t = token(&p, end);
    uint64_t n;
    if (base_parse_u64(t.p, t.n, &n) != 0 || n == 0 || n > MAX_VEC_LEN) return BASE_E_PARSE;
    remote_ack *a = malloc((size_t)n * sizeof *a);
    if (!a) return BASE_E_NOMEM;
    for (uint64_t i = 0; i < n; i++) {
        t = token(&p, end);
        const char *c1 = t.n ? memchr(t.p, ':', t.n) : NULL;
        const char *c2 = c1 ? memchr(c1 + 1, ':', t.n - (size_t)(c1 + 1 - t.p)) : NULL;
        if (!c2 || base_parse_u64(t.p, (size_t)(c1 - t.p), &a[i].pos.seg) != 0 ||
            base_parse_u64(c1 + 1, (size_t)(c2 - c1 - 1), &a[i].pos.off) != 0 ||
            base_parse_u64(c2 + 1, t.n - (size_t)(c2 + 1 - t.p), &a[i].ix) != 0) {
            free(a);
            return BASE_E_PARSE;
        }
    }
    if (token(&p, end).n != 0) {
        free(a);
        return BASE_E_PARSE;
    }
    f->n = (unsigned)n;
    f->a = a;
    remote__filter_bounds(f);
    return 0;
}

int remote__pos_parse(const char *buf, size_t len, remote_filter *ret, size_t cap, size_t *ret_n) {
    if (len > REMOTE_POS_FILE_MAX) return BASE_E_PARSE;
    const char *p = buf, *end = buf + len;
    size_t n = 0, line = 0;
    int e = 0;
    remote_filter tmp[REMOTE_MAX_FILTERS + 1];
    if (cap > REMOTE_MAX_FILTERS + 1) cap = REMOTE_MAX_FILTERS + 1;
    while (p < end && !e) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl) {
            e = BASE_E_PARSE; /* every line ends with a newline: a cut file is refused */
            break;
        }
        size_t ll = (size_t)(nl - p);
        if (line == 0) {
            if (ll != strlen(MAGIC) || memcmp(p, MAGIC, ll) != 0) e = BASE_E_PARSE;
        } else if (ll >= 4 && memcmp(p, "url ", 4) == 0) {
            /* informational */
        } else if (ll >= 7 && memcmp(p, "vector ", 7) == 0) {
            if (n == cap) {
                e = BASE_E_PARSE;
            } else if (!(e = parse_vector(p + 7, nl, &tmp[n]))) {
                n++;
            }
        } else {
            e = BASE_E_PARSE;
        }
        line++;
        p = nl + 1;
    }
    if (!e && n == 0) e = BASE_E_PARSE;
    if (e) {
        for (size_t i = 0; i < n; i++) remote__filter_free(&tmp[i]);
        return e;
    }
    memcpy(ret, tmp, n * sizeof *tmp);
    *ret_n = n;
    return 0;
}

int remote__pos_load(const char *path, remote_filter *ret, size_t cap, size_t *ret_n) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return errno == ENOENT ? BASE_E_NOTFOUND : BASE_E_IO;
    char *b = malloc(REMOTE_POS_FILE_MAX + 1);
    if (!b) {
        close(fd);
        return BASE_E_NOMEM;
    }
    size_t got = 0;
    while (got <= REMOTE_POS_FILE_MAX) {
        ssize_t k = read(fd, b + got, REMOTE_POS_FILE_MAX + 1 - got);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) {
            free(b);
            close(fd);
            return BASE_E_IO;
        }
        if (k == 0) break;
        got += (size_t)k;
    }
    close(fd);
    int e = remote__pos_parse(b, got, ret, cap, ret_n);
    free(b);
    return e;
}

void remote__pos_render(base_buf *out, const char *url, const remote_filter *f, size_t n) {
    base_buf_puts(out, MAGIC "\nurl ");
    /* for people only: without credentials a url may carry (user:pass@) */
    const char *s = url, *scheme = strstr(url, "://");
    if (scheme) {
        const char *host = scheme + 3, *end = host + strcspn(host, "/?#");
        const char *at = memchr(host, '@', (size_t)(end - host));
        base_buf_append(out, url, (size_t)(host - url));
        s = at ? at + 1 : host;
    }
    for (; *s; s++) base_buf_putc(out, *s == '\n' ? ' ' : *s);
    base_buf_putc(out, '\n');
    for (size_t i = 0; i < n; i++) {
        base_buf_printf(out, "vector %u", f[i].n);
        for (unsigned k = 0; k < f[i].n; k++)
            base_buf_printf(out, " %" PRIu64 ":%" PRIu64 ":%" PRIu64, f[i].a[k].pos.seg, f[i].a[k].pos.off,
                            f[i].a[k].ix);
        base_buf_putc(out, '\n');
    }
}

int remote__pos_write(const char *path, const base_buf *content) {
    size_t pl = strlen(path);
    char *tmp = malloc(pl + 5);
    if (!tmp) return BASE_E_NOMEM;
    memcpy(tmp, path, pl);
    memcpy(tmp + pl, ".tmp", 5);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    int e = fd < 0 ? BASE_E_IO : 0;
    size_t done = 0;
    while (!e && done < content->len) {
        ssize_t k = write(fd, content->data + done, content->len - done);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0)
            e = BASE_E_IO;
        else
            done += (size_t)k;
    }
    if (fd >= 0 && close(fd) != 0) e = BASE_E_IO;
    if (!e && rename(tmp, path) != 0) e = BASE_E_IO;
    if (e) unlink(tmp);
    free(tmp);
    return e;
}
