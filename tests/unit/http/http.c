/* tests/unit/http/http.c -- the HTTP glue: address parsing, content
 * negotiation, a real server on a loopback port (routing, bodies, the
 * body limit, free callbacks). */
#include <arpa/inet.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/err.h"
#include "http/http.h"

static void test_parse_address(void **state) {
    (void)state;
    struct sockaddr_storage ss;
    unsigned len;
    char err[128];
    assert_int_equal(http_parse_address(":9400", &ss, &len, err, sizeof err), 0);
    assert_int_equal(ss.ss_family, AF_INET6);
    assert_int_equal(http_parse_address("127.0.0.1:0", &ss, &len, err, sizeof err), 0);
    assert_int_equal(ss.ss_family, AF_INET);
    assert_int_equal(http_parse_address("[::1]:80", &ss, &len, err, sizeof err), 0);
    assert_int_equal(ss.ss_family, AF_INET6);
    assert_true(http_parse_address("127.0.0.1", &ss, &len, err, sizeof err) < 0);
    assert_true(http_parse_address("127.0.0.1:99999", &ss, &len, err, sizeof err) < 0);
    assert_true(http_parse_address("nohost:80", &ss, &len, err, sizeof err) < 0);
    assert_true(http_parse_address("1.2.3.4:8x", &ss, &len, err, sizeof err) < 0);
}

static void test_negotiation(void **state) {
    (void)state;
    /* Prometheus 2.42's scrape Accept header prefers OpenMetrics. */
    assert_true(
        http_prefers_openmetrics("application/openmetrics-text;version=1.0.0,application/openmetrics-text;"
                                 "version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"));
    assert_false(http_prefers_openmetrics(NULL));
    assert_false(http_prefers_openmetrics("*/*"));
    assert_false(http_prefers_openmetrics("text/plain"));
    assert_false(http_prefers_openmetrics("application/openmetrics-text;q=0.2,text/plain;q=0.9"));
    assert_false(http_prefers_openmetrics("application/openmetrics-text;q=0"));
    assert_true(http_accepts_gzip("gzip"));
    assert_true(http_accepts_gzip("deflate, gzip;q=0.5"));
    assert_false(http_accepts_gzip("gzip;q=0"));
    assert_false(http_accepts_gzip("identity"));
    assert_false(http_accepts_gzip(NULL));
}

static int freed;
static void count_free(void *p) {
    (void)p;
    freed++;
}

static int hdr_ok, hdr_fifth;

static void handler(void *ctx, const http_request *req, http_response *resp) {
    (void)ctx;
    if (strcmp(req->path, "/echo") == 0) {
        http_respond_copy(resp, 200, "text/plain", req->body ? req->body : "", req->body_len);
        return;
    }
    if (strcmp(req->path, "/owned") == 0) {
        static const char body[] = "owned body";
        resp->status = 200;
        resp->content_type = "text/plain";
        resp->body = body;
        resp->len = sizeof body - 1;
        resp->free_fn = count_free;
        return;
    }
    if (strcmp(req->path, "/arg") == 0) {
        const char *v = http_request_arg(req, "x");
        http_respond_copy(resp, 200, "text/plain", v ? v : "-", v ? strlen(v) : 1);
        return;
    }
    if (strcmp(req->path, "/hdr") == 0) {
        /* a request header, any case; four extra headers, a fifth refused */
        const char *v = http_request_header(req, "x-Test-Header");
        http_respond_copy(resp, 200, "text/plain", v ? v : "-", v ? strlen(v) : 1);
        /* (the server's thread: results are checked by the test's) */
        int rc = http_response_add_header(resp, "Cache-Control", "no-cache");
        rc |= http_response_add_header(resp, "ETag", "\"abc\"");
        rc |= http_response_add_header(resp, "Vary", "Accept-Encoding");
        rc |= http_response_add_header(resp, "X-Four", "4");
        hdr_fifth = http_response_add_header(resp, "X-Five", "5");
        hdr_ok = rc == 0 && http_request_header(req, "X-Absent") == NULL;
        return;
    }
    if (strcmp(req->path, "/one") == 0) {
        /* the single-header fields older handlers set are the first slot */
        http_respond_text(resp, 405, "no\n");
        (void)http_response_add_header(resp, "Allow", "GET, OPTIONS");
        http_response_add_header(resp, "X-Second", "2");
        return;
    }
    http_respond_text(resp, 404, "404 page not found\n");
}

/* Sends a raw request and returns the whole response (caller frees). */
static char *roundtrip(unsigned port, const char *req, size_t reqlen) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
    size_t off = 0;
    while (off < reqlen) {
        ssize_t w = write(fd, req + off, reqlen - off);
        if (w <= 0) break; /* the server may close early (413) */
        off += (size_t)w;
    }
    size_t cap = 1 << 16, len = 0;
    char *out = malloc(cap + 1);
    for (int i = 0; i < 1000; i++) {
        ssize_t r = read(fd, out + len, cap - len);
        if (r <= 0) break;
        len += (size_t)r;
    }
    out[len] = '\0';
    close(fd);
    return out;
}

static void test_server(void **state) {
    (void)state;
    http_server *s;
    char err[256];
    http_server_opts o = {.listen_address = "127.0.0.1:0", .max_body = 64};
    assert_int_equal(http_server_start(&o, handler, NULL, &s, err, sizeof err), 0);
    unsigned port = http_server_port(s);
    assert_true(port > 0);

    const char r1[] = "POST /echo HTTP/1.0\r\nContent-Length: 5\r\n\r\nhello";
    char *resp = roundtrip(port, r1, sizeof r1 - 1);
    assert_non_null(strstr(resp, "200 OK"));
    assert_non_null(strstr(resp, "\r\n\r\nhello"));
    free(resp);

    char big[512];
    int n = snprintf(big, sizeof big, "POST /echo HTTP/1.0\r\nContent-Length: 100\r\n\r\n%0100d", 0);
    resp = roundtrip(port, big, (size_t)n);
    assert_non_null(strstr(resp, " 413 "));
    free(resp);

    const char r3[] = "GET /owned HTTP/1.0\r\n\r\n";
    resp = roundtrip(port, r3, sizeof r3 - 1);
    assert_non_null(strstr(resp, "owned body"));
    free(resp);

    const char r4[] = "GET /arg?x=a%20b HTTP/1.0\r\n\r\n";
    resp = roundtrip(port, r4, sizeof r4 - 1);
    assert_non_null(strstr(resp, "\r\n\r\na b"));
    free(resp);

    const char r6[] = "GET /hdr HTTP/1.0\r\nX-TEST-HEADER: hello there\r\n\r\n";
    resp = roundtrip(port, r6, sizeof r6 - 1);
    assert_non_null(strstr(resp, "\r\n\r\nhello there"));
    assert_non_null(strstr(resp, "\r\nCache-Control: no-cache\r\n"));
    assert_non_null(strstr(resp, "\r\nETag: \"abc\"\r\n"));
    assert_non_null(strstr(resp, "\r\nVary: Accept-Encoding\r\n"));
    assert_non_null(strstr(resp, "\r\nX-Four: 4\r\n"));
    assert_null(strstr(resp, "X-Five"));
    assert_true(hdr_ok);
    assert_int_equal(hdr_fifth, BASE_E_LIMIT);
    free(resp);
    http_request noconn = {.method = "GET", .path = "/"};
    assert_null(http_request_header(&noconn, "Accept"));
    const char r7[] = "GET /hdr HTTP/1.0\r\n\r\n";
    resp = roundtrip(port, r7, sizeof r7 - 1);
    assert_non_null(strstr(resp, "\r\n\r\n-"));
    free(resp);
    const char r8[] = "GET /one HTTP/1.0\r\n\r\n";
    resp = roundtrip(port, r8, sizeof r8 - 1);
    assert_non_null(strstr(resp, " 405 "));
    assert_non_null(strstr(resp, "\r\nAllow: GET, OPTIONS\r\n"));
    assert_non_null(strstr(resp, "\r\nX-Second: 2\r\n"));
    free(resp);

    const char r5[] = "GET /nope HTTP/1.0\r\n\r\n";
    resp = roundtrip(port, r5, sizeof r5 - 1);
    assert_non_null(strstr(resp, " 404 "));
    free(resp);

    http_server_stop(s);
    assert_int_equal(freed, 1);

    /* A port in use is reported, not ignored. */
    http_server *s2, *s3;
    assert_int_equal(http_server_start(&o, handler, NULL, &s2, err, sizeof err), 0);
    char addr[64];
    snprintf(addr, sizeof addr, "127.0.0.1:%u", http_server_port(s2));
    http_server_opts o2 = {.listen_address = addr};
    assert_true(http_server_start(&o2, handler, NULL, &s3, err, sizeof err) < 0);
    assert_non_null(strstr(err, "listen on"));
    http_server_stop(s2);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_address),
        cmocka_unit_test(test_negotiation),
        cmocka_unit_test(test_server),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
