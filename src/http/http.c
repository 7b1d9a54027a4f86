/* http.c -- libmicrohttpd glue; see http.h.
 *
 * Request lifecycle in MHD's access-handler protocol:
 *   first call  (*con_cls == NULL): allocate a req_state, return MHD_YES;
 *   upload calls (*upload_data_size > 0): append to the body up to
 *                max_body, else remember "too large" and discard the rest;
 *   final call  (*upload_data_size == 0): run the handler once, queue the
 *                response; req_state is freed in the completion callback.
 */
#include "http/http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/num.h"

struct http_server {
    struct MHD_Daemon *mhd;
    int fd;
    unsigned port;
    size_t max_body;
    http_handler handler;
    void *ctx;
};

typedef struct req_state {
    base_buf body;
    int too_large;
} req_state;

int http_parse_address(const char *addr, struct sockaddr_storage *ret, unsigned *ret_len, char *err,
                       size_t errlen) {
    if (!addr) addr = "";
    const char *colon = strrchr(addr, ':');
    if (!colon) {
        snprintf(err, errlen, "address %s: missing port", addr);
        return BASE_E_PARSE;
    }
    uint64_t port;
    if (base_parse_u64(colon + 1, strlen(colon + 1), &port) || port > 65535) {
        snprintf(err, errlen, "address %s: invalid port", addr);
        return BASE_E_PARSE;
    }
    char host[256];
    size_t hl = (size_t)(colon - addr);
    if (hl >= sizeof host) {
        snprintf(err, errlen, "address %s: host too long", addr);
        return BASE_E_PARSE;
    }
    memcpy(host, addr, hl);
    host[hl] = '\0';
    memset(ret, 0, sizeof *ret);
    if (hl == 0 || strcmp(host, "[::]") == 0) {
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)ret;
        a->sin6_family = AF_INET6;
        a->sin6_addr = in6addr_any;
        a->sin6_port = htons((uint16_t)port);
        *ret_len = sizeof *a;
        return 0;
    }
    if (host[0] == '[' && hl > 2 && host[hl - 1] == ']') {
        host[hl - 1] = '\0';
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)ret;
        if (inet_pton(AF_INET6, host + 1, &a->sin6_addr) != 1) {
            snprintf(err, errlen, "address %s: invalid IPv6 address", addr);
            return BASE_E_PARSE;
        }
        a->sin6_family = AF_INET6;
        a->sin6_port = htons((uint16_t)port);
        *ret_len = sizeof *a;
        return 0;
    }
    struct sockaddr_in *a = (struct sockaddr_in *)ret;
    if (strcmp(host, "localhost") == 0) strcpy(host, "127.0.0.1");
    if (inet_pton(AF_INET, host, &a->sin_addr) != 1) {
        snprintf(err, errlen, "address %s: invalid IPv4 address (use an IP, not a host name)", addr);
        return BASE_E_PARSE;
    }
    a->sin_family = AF_INET;
    a->sin_port = htons((uint16_t)port);
    *ret_len = sizeof *a;
    return 0;
}

static int open_listener(const char *addr, unsigned *ret_port, char *err, size_t errlen) {
    struct sockaddr_storage ss;
    unsigned len;
    int rc = http_parse_address(addr, &ss, &len, err, errlen);
    if (rc) return rc;
    int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 && ss.ss_family == AF_INET6 && ((struct sockaddr_in6 *)&ss)->sin6_addr.s6_addr[0] == 0) {
        /* No IPv6 on this host: ":port" falls back to IPv4 any. */
        struct sockaddr_in6 six = *(struct sockaddr_in6 *)&ss;
        struct sockaddr_in *a = (struct sockaddr_in *)&ss;
        memset(&ss, 0, sizeof ss);
        a->sin_family = AF_INET;
        a->sin_port = six.sin6_port;
        a->sin_addr.s_addr = htonl(INADDR_ANY);
        len = sizeof *a;
        fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    }
    if (fd < 0) {
        snprintf(err, errlen, "socket: %s", strerror(errno));
        return BASE_E_IO;
    }
    int one = 1, zero = 0;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (ss.ss_family == AF_INET6) setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
    if (bind(fd, (struct sockaddr *)&ss, len) != 0 || listen(fd, 128) != 0) {
        snprintf(err, errlen, "listen on %s: %s", addr, strerror(errno));
        close(fd);
        return BASE_E_IO;
    }
    struct sockaddr_storage bound;
    socklen_t bl = sizeof bound;
    getsockname(fd, (struct sockaddr *)&bound, &bl);
    *ret_port = ntohs(bound.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&bound)->sin6_port
                                                  : ((struct sockaddr_in *)&bound)->sin_port);
    return fd;
}

static void free_static(void *arg) {
    (void)arg;
}

static enum MHD_Result queue(struct MHD_Connection *conn, http_response *r) {
    struct MHD_Response *mr;
    if (r->free_fn)
        mr = MHD_create_response_from_buffer_with_free_callback_cls(r->len, (void *)r->body, r->free_fn,
                                                                    r->free_arg);
    else
        mr = MHD_create_response_from_buffer(r->len, (void *)r->body, MHD_RESPMEM_MUST_COPY);
    if (!mr) {
        if (r->free_fn) r->free_fn(r->free_arg);
        return MHD_NO;
    }
    if (r->content_type) MHD_add_response_header(mr, MHD_HTTP_HEADER_CONTENT_TYPE, r->content_type);
    if (r->content_encoding)
        MHD_add_response_header(mr, MHD_HTTP_HEADER_CONTENT_ENCODING, r->content_encoding);
    if (r->extra_header_name) MHD_add_response_header(mr, r->extra_header_name, r->extra_header_value);
    enum MHD_Result ret = MHD_queue_response(conn, (unsigned)r->status, mr);
    MHD_destroy_response(mr);
    return ret;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
                                  const char *version, const char *upload_data, size_t *upload_data_size,
                                  void **con_cls) {
    (void)version;
    http_server *s = cls;
    req_state *st = *con_cls;
    if (!st) {
        st = calloc(1, sizeof *st);
        if (!st) return MHD_NO;
        base_buf_init(&st->body, s->max_body);
        *con_cls = st;
        return MHD_YES;
    }
    if (*upload_data_size) {
        if (!st->too_large) {
            base_buf_append(&st->body, upload_data, *upload_data_size);
            if (st->body.err) st->too_large = 1;
        }
        *upload_data_size = 0;
        return MHD_YES;
    }
    http_response r = {.status = 500, .content_type = "text/plain; charset=utf-8"};
    if (st->too_large) {
        char msg[96];
        int n = snprintf(msg, sizeof msg, "request body larger than the limit of %zu bytes\n", s->max_body);
        http_respond_copy(&r, 413, "text/plain; charset=utf-8", msg, (size_t)n);
        return queue(conn, &r);
    }
    http_request req = {
        .method = method,
        .path = url,
        .accept = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT),
        .accept_encoding =
            MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT_ENCODING),
        .content_type = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE),
        .body = st->body.len ? st->body.data : NULL,
        .body_len = st->body.len,
        .conn = conn,
    };
    s->handler(s->ctx, &req, &r);
    return queue(conn, &r);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe) {
    (void)cls;
    (void)conn;
    (void)toe;
    req_state *st = *con_cls;
    if (st) {
        base_buf_free(&st->body);
        free(st);
        *con_cls = NULL;
    }
}

int http_server_start(const http_server_opts *opts, http_handler handler, void *ctx, http_server **ret,
                      char *err, size_t errlen) {
    http_server *s = calloc(1, sizeof *s);
    if (!s) return BASE_E_NOMEM;
    s->handler = handler;
    s->ctx = ctx;
    s->max_body = opts->max_body ? opts->max_body : (1u << 20);
    int fd = open_listener(opts->listen_address, &s->port, err, errlen);
    if (fd < 0) {
        free(s);
        return fd;
    }
    s->fd = fd;
    unsigned threads = opts->threads ? opts->threads : 2;
    s->mhd = MHD_start_daemon(
        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ITC, 0, NULL, NULL, on_request, s,
        MHD_OPTION_LISTEN_SOCKET, fd, MHD_OPTION_THREAD_POOL_SIZE, threads, MHD_OPTION_NOTIFY_COMPLETED,
        on_completed, s, MHD_OPTION_CONNECTION_TIMEOUT, opts->timeout_s ? opts->timeout_s : 30u,
        MHD_OPTION_CONNECTION_LIMIT, opts->max_connections ? opts->max_connections : 256u, MHD_OPTION_END);
    if (!s->mhd) {
        snprintf(err, errlen, "libmicrohttpd failed to start on %s", opts->listen_address);
        close(fd);
        free(s);
        return BASE_E_IO;
    }
    *ret = s;
    return 0;
}

unsigned http_server_port(const http_server *s) {
    return s->port;
}

void http_server_stop(http_server *s) {
    if (!s) return;
    MHD_stop_daemon(s->mhd);
    close(s->fd);
    free(s);
}

const char *http_request_arg(const http_request *req, const char *name) {
    return MHD_lookup_connection_value(req->conn, MHD_GET_ARGUMENT_KIND, name);
}

void http_respond_copy(http_response *resp, int status, const char *content_type, const void *body,
                       size_t len) {
    void *p = malloc(len ? len : 1);
    resp->status = status;
    resp->content_type = content_type;
    if (!p) {
        resp->status = 500;
        resp->body = "";
        resp->len = 0;
        resp->free_fn = NULL;
        return;
    }
    if (len) memcpy(p, body, len);
    resp->body = p;
    resp->len = len;
    resp->free_fn = free;
    resp->free_arg = p;
}

void http_respond_owned(http_response *resp, int status, const char *content_type,
                        const char *content_encoding, const void *body, size_t len, void (*free_fn)(void *),
                        void *free_arg) {
    resp->status = status;
    resp->content_type = content_type;
    resp->content_encoding = content_encoding;
    resp->body = body;
    resp->len = len;
    resp->free_fn = free_fn;
    resp->free_arg = free_arg;
}

void http_respond_buf(http_response *resp, int status, const char *content_type, base_buf *b) {
    if (base_buf_err(b)) {
        base_buf_free(b);
        http_respond_text(resp, 500, "out of memory\n");
        return;
    }
    size_t len;
    char *data = base_buf_steal(b, &len);
    http_respond_owned(resp, status, content_type, NULL, data ? data : "", len, data ? free : NULL, data);
}

void http_respond_text(http_response *resp, int status, const char *text) {
    resp->status = status;
    resp->content_type = "text/plain; charset=utf-8";
    resp->body = text;
    resp->len = strlen(text);
    resp->free_fn = free_static;
    resp->free_arg = NULL;
}

/* Finds the q value of a media range or coding token in an Accept-style
 * header: -1 if absent, else 0..1000 (q in thousandths). */
static int token_q(const char *hdr, const char *token, int prefix_match) {
    if (!hdr) return -1;
    size_t tl = strlen(token);
    int best = -1;
    const char *p = hdr;
    while (*p) {
        while (*p == ' ' || *p == ',') p++;
        const char *start = p;
        while (*p && *p != ',' && *p != ';') p++;
        const char *end = p;
        while (end > start && end[-1] == ' ') end--;
        int q = 1000;
        while (*p == ';') {
            p++;
            while (*p == ' ') p++;
            if ((p[0] == 'q' || p[0] == 'Q') && p[1] == '=') {
                p += 2;
                double v = 0;
                const char *qs = p;
                while (*p && *p != ',' && *p != ';' && *p != ' ') p++;
                if (base_parse_double(qs, (size_t)(p - qs), &v) == 0 && v >= 0 && v <= 1)
                    q = (int)(v * 1000 + 0.5);
            } else {
                while (*p && *p != ',' && *p != ';') p++;
            }
        }
        size_t n = (size_t)(end - start);
        if ((n == tl || (prefix_match && n > tl)) && strncasecmp(start, token, tl) == 0 && q > best) best = q;
        while (*p && *p != ',') p++;
    }
    return best;
}

int http_accepts_gzip(const char *accept_encoding) {
    return token_q(accept_encoding, "gzip", 0) > 0;
}

int http_prefers_openmetrics(const char *accept) {
    int om = token_q(accept, "application/openmetrics-text", 0);
    if (om <= 0) return 0;
    int text = token_q(accept, "text/plain", 0);
    if (text < 0) text = token_q(accept, "text/*", 0);
    if (text < 0) text = token_q(accept, "*/*", 0);
    return om >= text;
}
