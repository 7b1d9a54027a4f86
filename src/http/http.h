/* http.h -- Kelvin's HTTP server: libmicrohttpd underneath, one handler on top.
 *
 * The server owns its listening socket (so a bad address or a port in use
 * is reported with the reason before anything starts, and port 0 picks a
 * free port that http_server_port() tells), runs a small pool of threads,
 * reads request bodies up to a limit (413 beyond it), and calls one handler
 * per complete request. The handler fills an http_response; a body it hands
 * over is released through the response's free callback once sent, so a
 * refcounted snapshot can be served without copying.
 *
 * With web_config_file (Prometheus's --web.config.file, see webcfg.h) the
 * server does what exporter-toolkit does for Prometheus: TLS (GnuTLS through
 * libmicrohttpd) with optional client certificates, basic auth against
 * bcrypt hashes (401 before any handler runs) and extra response headers.
 * The file is read again when it (or a certificate, key or CA file it
 * names) changes, checked on every request and new connection; a broken
 * file keeps the last good config (logged once), and turning TLS on or off
 * needs a restart. A file that does not validate at start fails
 * http_server_start() with exporter-toolkit's message.
 *
 * Thread-safety: the handler runs on several server threads at once.
 */
#ifndef KELVIN_HTTP_HTTP_H
#define KELVIN_HTTP_HTTP_H

#include <stddef.h>

#include "base/buf.h"

typedef struct http_request {
    const char *method;          /* "GET", "PUT", ... */
    const char *path;            /* URL path, percent-decoded by libmicrohttpd, no query */
    const char *accept;          /* header or NULL */
    const char *accept_encoding; /* header or NULL */
    const char *content_type;    /* header or NULL */
    const char *body;            /* NULL when empty */
    size_t body_len;
    void *conn; /* for http_request_arg() */
} http_request;

/* A response header the handler sets (static strings, or strings that
 * outlive the response). */
typedef struct http_header {
    const char *name;
    const char *value;
} http_header;

/* How many extra headers one response carries. */
#define HTTP_MAX_EXTRA_HEADERS 4

typedef struct http_response {
    int status;
    const char *content_type;     /* static string */
    const char *content_encoding; /* static string or NULL */
    const void *body;
    size_t len;
    /* Called with free_arg once the body is no longer needed (also on
     * error). NULL: body is static or was copied by http_respond_copy(). */
    void (*free_fn)(void *free_arg);
    void *free_arg;
    /* Up to HTTP_MAX_EXTRA_HEADERS extra headers, sent in order; a NULL
     * name ends the list. http_response_add_header() appends one. A header
     * set here replaces a web config header of the same name (as Go's
     * Header().Set does). */
    http_header extra[HTTP_MAX_EXTRA_HEADERS];
    /* A body written while it is sent (http_respond_stream), or NULL. */
    long (*fill)(void *arg, char *buf, size_t max);
} http_response;

typedef void (*http_handler)(void *ctx, const http_request *req, http_response *resp);

typedef struct http_server http_server;

typedef struct http_server_opts {
    const char *listen_address;  /* ":9400", "127.0.0.1:9400", "[::1]:0" */
    size_t max_body;             /* bytes; larger uploads get 413 */
    unsigned threads;            /* 0 = 2 */
    unsigned timeout_s;          /* idle connection timeout, 0 = 30 */
    unsigned max_connections;    /* connections served at once, 0 = 256 */
    const char *web_config_file; /* Prometheus web-config (TLS, basic auth), NULL: plain HTTP, no auth */
} http_server_opts;

/* Binds and starts serving. On error returns a negative BASE_E_* code and a
 * message in err. */
int http_server_start(const http_server_opts *opts, http_handler handler, void *ctx, http_server **ret,
                      char *err, size_t errlen);
/* The bound port (useful with port 0). */
unsigned http_server_port(const http_server *s);
/* Stops accepting, finishes or drops connections, joins threads, frees. */
void http_server_stop(http_server *s);

/* A query-string argument of the request, or NULL. */
const char *http_request_arg(const http_request *req, const char *name);
/* A request header (name matched without regard to case), or NULL; the
 * string lives as long as the request. NULL too for a request without a
 * connection (one built by a test). */
const char *http_request_header(const http_request *req, const char *name);

/* Appends a response header (name and value must outlive the response):
 * 0, or BASE_E_LIMIT when HTTP_MAX_EXTRA_HEADERS are already set. */
int http_response_add_header(http_response *resp, const char *name, const char *value);

/* Copies body into the response (for small dynamic answers). */
void http_respond_copy(http_response *resp, int status, const char *content_type, const void *body,
                       size_t len);
/* Hands a body over without copying: free_fn(free_arg) (may be NULL) runs
 * once it has been sent or dropped. content_encoding may be NULL. */
void http_respond_owned(http_response *resp, int status, const char *content_type,
                        const char *content_encoding, const void *body, size_t len, void (*free_fn)(void *),
                        void *free_arg);
/* Hands a built buffer over (it is left empty); a buffer whose sticky error
 * is set (out of memory, over its limit) becomes a 500 instead. */
void http_respond_buf(http_response *resp, int status, const char *content_type, base_buf *b);
/* A body produced while it is sent, for answers too large to build whole
 * first (a range query's hundreds of megabytes): fill(arg, buf, max)
 * writes up to max bytes into buf and returns how many (> 0), 0 at the
 * end, or < 0 to cut the connection (the status line is gone by then).
 * Sent chunked, without Content-Length. free_fn(arg) runs once, when the
 * answer ends or is dropped. */
void http_respond_stream(http_response *resp, int status, const char *content_type,
                         long (*fill)(void *arg, char *buf, size_t max), void *arg, void (*free_fn)(void *));
/* A static text answer. */
void http_respond_text(http_response *resp, int status, const char *text);

/* Parses "host:port", ":port", "[v6]:port" into a sockaddr; 0 or
 * BASE_E_PARSE with a message. Exposed for flag validation and tests. */
struct sockaddr_storage;
int http_parse_address(const char *addr, struct sockaddr_storage *ret, unsigned *ret_len, char *err,
                       size_t errlen);

/* Does the Accept-Encoding header allow gzip? Does Accept prefer
 * OpenMetrics over text 0.0.4 (as Prometheus's scrape header does)? */
int http_accepts_gzip(const char *accept_encoding);
int http_prefers_openmetrics(const char *accept);

#endif
