/* form.c -- request arguments as Go's r.Form; see form.h.
 *
 * Each pair is one malloc'ed block "name\0value\0", referenced by the
 * pair's two views; the pair array grows by doubling. Decoding happens
 * into a scratch buffer first, so a pair with a bad escape is never
 * half-added.
 */
#include "http/form.h"

#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/utf8.h"

void http_form_init(http_form *f) {
    memset(f, 0, sizeof *f);
}

void http_form_free(http_form *f) {
    for (size_t i = 0; i < f->n; i++) free((void *)f->v[i].name.p);
    free(f->v);
    memset(f, 0, sizeof *f);
}

static int set_err(http_form *f, int rc) {
    if (!f->err) f->err = rc;
    return rc;
}

int http_form_add(http_form *f, base_str name, base_str value) {
    if (f->n >= HTTP_FORM_MAX_PAIRS) return set_err(f, BASE_E_LIMIT);
    if (f->n == f->cap) {
        size_t cap = f->cap ? f->cap * 2 : 16;
        http_form_pair *v = realloc(f->v, cap * sizeof *v);
        if (!v) return set_err(f, BASE_E_NOMEM);
        f->v = v;
        f->cap = cap;
    }
    char *p = malloc(name.n + value.n + 2);
    if (!p) return set_err(f, BASE_E_NOMEM);
    if (name.n) memcpy(p, name.p, name.n);
    p[name.n] = '\0';
    if (value.n) memcpy(p + name.n + 1, value.p, value.n);
    p[name.n + 1 + value.n] = '\0';
    f->v[f->n].name = (base_str){p, name.n};
    f->v[f->n].value = (base_str){p + name.n + 1, value.n};
    f->n++;
    return 0;
}

static int unhex(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Go's strconv.Quote of the (at most 3) bytes of a bad escape. */
static void quote_escape(char *out, size_t outlen, const char *s, size_t n) {
    base_buf b;
    base_buf_init(&b, 0);
    base_buf_putc(&b, '"');
    for (size_t i = 0; i < n;) {
        unsigned char c = (unsigned char)s[i];
        uint32_t r;
        size_t l = c >= 0x80 ? base_utf8_decode((const unsigned char *)s + i, n - i, &r) : 0;
        if (c >= 0x80 && l > 0) {
            if (r < 0xa0 || r == 0xad) /* not printable for Go */
                base_buf_printf(&b, "\\u%04x", (unsigned)r);
            else
                base_buf_append(&b, s + i, l);
            i += l;
            continue;
        }
        switch (c) {
        case '"': base_buf_puts(&b, "\\\""); break;
        case '\\': base_buf_puts(&b, "\\\\"); break;
        case '\a': base_buf_puts(&b, "\\a"); break;
        case '\b': base_buf_puts(&b, "\\b"); break;
        case '\f': base_buf_puts(&b, "\\f"); break;
        case '\n': base_buf_puts(&b, "\\n"); break;
        case '\r': base_buf_puts(&b, "\\r"); break;
        case '\t': base_buf_puts(&b, "\\t"); break;
        case '\v': base_buf_puts(&b, "\\v"); break;
        default:
            if (c < 0x20 || c == 0x7f || c >= 0x80)
                base_buf_printf(&b, "\\x%02x", c);
            else
                base_buf_putc(&b, (char)c);
        }
        i++;
    }
    base_buf_putc(&b, '"');
    snprintf(out, outlen, "invalid URL escape %s", b.err ? "\"%\"" : b.data);
    base_buf_free(&b);
}

/* url.QueryUnescape of s[0..n) into out. 0, or BASE_E_PARSE with Go's
 * message in msg. */
static int unescape(const char *s, size_t n, base_buf *out, char *msg, size_t msglen) {
    base_buf_reset(out);
    for (size_t i = 0; i < n;) {
        char c = s[i];
        if (c == '%') {
            if (i + 2 >= n || unhex(s[i + 1]) < 0 || unhex(s[i + 2]) < 0) {
                size_t l = n - i > 3 ? 3 : n - i;
                quote_escape(msg, msglen, s + i, l);
                return BASE_E_PARSE;
            }
            base_buf_putc(out, (char)(unhex(s[i + 1]) << 4 | unhex(s[i + 2])));
            i += 3;
            continue;
        }
        base_buf_putc(out, c == '+' ? ' ' : c);
        i++;
    }
    return base_buf_err(out);
}

int http_form_parse(http_form *f, const char *s, size_t n) {
    int perr = 0;
    base_buf name, value;
    base_buf_init(&name, 0);
    base_buf_init(&value, 0);
    size_t i = 0;
    while (i < n) {
        const char *amp = memchr(s + i, '&', n - i);
        size_t end = amp ? (size_t)(amp - s) : n;
        const char *pair = s + i;
        size_t plen = end - i;
        i = amp ? end + 1 : n;
        if (memchr(pair, ';', plen)) {
            snprintf(f->errmsg, sizeof f->errmsg, "invalid semicolon separator in query");
            perr = BASE_E_PARSE;
            continue;
        }
        if (plen == 0) continue;
        const char *eq = memchr(pair, '=', plen);
        size_t klen = eq ? (size_t)(eq - pair) : plen;
        char msg[sizeof f->errmsg];
        int rc = unescape(pair, klen, &name, msg, sizeof msg);
        if (rc == 0 && eq) rc = unescape(eq + 1, plen - klen - 1, &value, msg, sizeof msg);
        if (rc == 0 && !eq) base_buf_reset(&value);
        if (rc == BASE_E_PARSE) {
            if (!perr) {
                memcpy(f->errmsg, msg, sizeof msg);
                perr = BASE_E_PARSE;
            }
            continue;
        }
        if (rc == 0)
            rc = http_form_add(f, (base_str){name.data ? name.data : "", name.len},
                               (base_str){value.data ? value.data : "", value.len});
        if (rc) {
            base_buf_free(&name);
            base_buf_free(&value);
            return set_err(f, rc);
        }
    }
    base_buf_free(&name);
    base_buf_free(&value);
    return perr ? set_err(f, perr) : 0;
}

static enum MHD_Result add_arg(void *cls, enum MHD_ValueKind kind, const char *key, size_t key_size,
                               const char *value, size_t value_size) {
    (void)kind;
    http_form *f = cls;
    if (http_form_add(f, (base_str){key ? key : "", key ? key_size : 0},
                      (base_str){value ? value : "", value ? value_size : 0}) != 0)
        return MHD_NO;
    return MHD_YES;
}

/* mime.ParseMediaType(ct) == "application/x-www-form-urlencoded". */
static int is_urlencoded(const char *ct) {
    static const char want[] = "application/x-www-form-urlencoded";
    if (!ct) return 0;
    while (*ct == ' ' || *ct == '\t') ct++;
    size_t n = strcspn(ct, ";");
    while (n && (ct[n - 1] == ' ' || ct[n - 1] == '\t')) n--;
    return n == sizeof want - 1 && strncasecmp(ct, want, n) == 0;
}

int http_form_from_request(http_form *f, const http_request *req) {
    const char *m = req->method;
    if ((strcmp(m, "POST") == 0 || strcmp(m, "PUT") == 0 || strcmp(m, "PATCH") == 0) &&
        is_urlencoded(req->content_type) && req->body_len) {
        int rc = http_form_parse(f, req->body, req->body_len);
        if (rc && rc != BASE_E_PARSE) return rc;
    }
    if (req->conn) MHD_get_connection_values_n(req->conn, MHD_GET_ARGUMENT_KIND, add_arg, f);
    return f->err;
}

base_str http_form_get(const http_form *f, const char *name) {
    size_t n = strlen(name);
    for (size_t k = 0; k < f->n; k++)
        if (f->v[k].name.n == n && memcmp(f->v[k].name.p, name, n) == 0) return f->v[k].value;
    return (base_str){NULL, 0};
}

size_t http_form_values(const http_form *f, const char *name, base_str *ret, size_t cap) {
    size_t n = strlen(name), c = 0;
    for (size_t k = 0; k < f->n; k++)
        if (f->v[k].name.n == n && memcmp(f->v[k].name.p, name, n) == 0) {
            if (c < cap) ret[c] = f->v[k].value;
            c++;
        }
    return c;
}
