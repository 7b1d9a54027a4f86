/* tests/unit/http/form.c -- request arguments as Go's r.Form: url.ParseQuery's
 * splitting, decoding and errors (Go 1.19), repeated values in order, which
 * bodies are read, and a real request through libmicrohttpd (URL arguments
 * after body ones). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>
#include <cmocka.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/err.h"
#include "http/form.h"
#include "http/http.h"

static void assert_str(base_str s, const char *want) {
    assert_non_null(s.p);
    assert_int_equal(s.n, strlen(want));
    assert_memory_equal(s.p, want, s.n);
}

static void test_basic(void **state) {
    (void)state;
    http_form f;
    http_form_init(&f);
    const char q[] = "query=up%7Bjob%3D%22a%22%7D&time=1.5&match[]=a&match%5B%5D=b+c&empty=&bare&&=v";
    assert_int_equal(http_form_parse(&f, q, strlen(q)), 0);
    assert_str(http_form_get(&f, "query"), "up{job=\"a\"}");
    assert_str(http_form_get(&f, "time"), "1.5");
    base_str v[4];
    assert_int_equal(http_form_values(&f, "match[]", v, 4), 2);
    assert_str(v[0], "a");
    assert_str(v[1], "b c");
    assert_str(http_form_get(&f, "empty"), "");
    assert_str(http_form_get(&f, "bare"), "");
    assert_str(http_form_get(&f, ""), "v"); /* "=v": an empty name, as Go keeps it */
    assert_null(http_form_get(&f, "nope").p);
    assert_int_equal(http_form_values(&f, "nope", NULL, 0), 0);
    assert_int_equal(f.n, 7);
    http_form_free(&f);
}

static void test_binary_and_plus(void **state) {
    (void)state;
    http_form f;
    http_form_init(&f);
    const char q[] = "a=x%00y&b=%2B%20+&c=%e2%80%a8&d=%C3%A9";
    assert_int_equal(http_form_parse(&f, q, strlen(q)), 0);
    base_str a = http_form_get(&f, "a");
    assert_int_equal(a.n, 3);
    assert_memory_equal(a.p, "x\0y", 3);
    assert_str(http_form_get(&f, "b"), "+  ");
    assert_str(http_form_get(&f, "c"), "\xe2\x80\xa8");
    assert_str(http_form_get(&f, "d"), "\xc3\xa9");
    http_form_free(&f);
}

static void test_errors(void **state) {
    (void)state;
    http_form f;
    http_form_init(&f);
    /* a bad escape skips its pair; the others stay */
    const char q1[] = "a=1&b=%zz&c=3&d=%4";
    assert_int_equal(http_form_parse(&f, q1, strlen(q1)), BASE_E_PARSE);
    assert_string_equal(f.errmsg, "invalid URL escape \"%zz\"");
    assert_str(http_form_get(&f, "a"), "1");
    assert_null(http_form_get(&f, "b").p);
    assert_str(http_form_get(&f, "c"), "3");
    assert_null(http_form_get(&f, "d").p);
    assert_int_equal(f.err, BASE_E_PARSE);
    http_form_free(&f);

    /* the escape at the end of the text: Go quotes what is left */
    http_form_init(&f);
    assert_int_equal(http_form_parse(&f, "x=%4", 4), BASE_E_PARSE);
    assert_string_equal(f.errmsg, "invalid URL escape \"%4\"");
    http_form_free(&f);
    http_form_init(&f);
    assert_int_equal(http_form_parse(&f, "%=1", 3), BASE_E_PARSE);
    assert_string_equal(f.errmsg, "invalid URL escape \"%\"");
    http_form_free(&f);
    /* non-printable bytes quoted as strconv.Quote does */
    http_form_init(&f);
    assert_int_equal(http_form_parse(&f, "x=%\x01\xff", 5), BASE_E_PARSE);
    assert_string_equal(f.errmsg, "invalid URL escape \"%\\x01\\xff\"");
    http_form_free(&f);

    /* a ';' skips the pair; its error replaces an escape error, not the
     * other way round (Go sets that one unconditionally) */
    http_form_init(&f);
    const char q2[] = "a=%zz&b=1;2&c=3";
    assert_int_equal(http_form_parse(&f, q2, strlen(q2)), BASE_E_PARSE);
    assert_string_equal(f.errmsg, "invalid semicolon separator in query");
    assert_null(http_form_get(&f, "b").p);
    assert_str(http_form_get(&f, "c"), "3");
    http_form_free(&f);
    http_form_init(&f);
    const char q3[] = "b=1;2&a=%zz";
    assert_int_equal(http_form_parse(&f, q3, strlen(q3)), BASE_E_PARSE);
    assert_string_equal(f.errmsg, "invalid semicolon separator in query");
    http_form_free(&f);
}

static void test_limit(void **state) {
    (void)state;
    http_form f;
    http_form_init(&f);
    size_t n = HTTP_FORM_MAX_PAIRS + 1;
    char *q = malloc(n * 4);
    for (size_t i = 0; i < n; i++) memcpy(q + 4 * i, "a=1&", 4);
    assert_int_equal(http_form_parse(&f, q, n * 4), BASE_E_LIMIT);
    assert_int_equal(f.n, HTTP_FORM_MAX_PAIRS);
    free(q);
    http_form_free(&f);
}

static void test_bodies(void **state) {
    (void)state;
    static const struct {
        const char *method, *ct;
        int read;
    } cases[] = {
        {"POST", "application/x-www-form-urlencoded", 1},
        {"PUT", "application/x-www-form-urlencoded; charset=UTF-8", 1},
        {"PATCH", "Application/X-WWW-Form-Urlencoded", 1},
        {"POST", " application/x-www-form-urlencoded ;x=y", 1},
        {"POST", "text/plain", 0},
        {"POST", NULL, 0},
        {"GET", "application/x-www-form-urlencoded", 0},
        {"DELETE", "application/x-www-form-urlencoded", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char body[] = "query=up";
        http_request req = {.method = cases[i].method,
                            .path = "/",
                            .content_type = cases[i].ct,
                            .body = body,
                            .body_len = strlen(body)};
        http_form f;
        http_form_init(&f);
        assert_int_equal(http_form_from_request(&f, &req), 0);
        if (cases[i].read)
            assert_str(http_form_get(&f, "query"), "up");
        else
            assert_null(http_form_get(&f, "query").p);
        http_form_free(&f);
    }
}

/* A real request: body values come before the URL's. */
static char seen[256];

static void handler(void *ctx, const http_request *req, http_response *resp) {
    (void)ctx;
    http_form f;
    http_form_init(&f);
    int rc = http_form_from_request(&f, req);
    base_str v[8];
    size_t n = http_form_values(&f, "match[]", v, 8);
    int at = snprintf(seen, sizeof seen, "rc=%d q=%s", rc, http_form_get(&f, "query").p);
    for (size_t i = 0; i < n && i < 8; i++)
        at += snprintf(seen + at, sizeof seen - (size_t)at, " m=%s", v[i].p);
    http_form_free(&f);
    http_respond_text(resp, 200, "ok");
}

/* Sends a raw request and reads the answer to its end. */
static void roundtrip(unsigned port, const char *req) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
    size_t len = strlen(req), off = 0;
    while (off < len) {
        ssize_t w = write(fd, req + off, len - off);
        assert_true(w > 0);
        off += (size_t)w;
    }
    char buf[4096];
    for (int i = 0; i < 1000 && read(fd, buf, sizeof buf) > 0; i++) {
    }
    close(fd);
}

static void test_request(void **state) {
    (void)state;
    http_server *s;
    char err[256];
    http_server_opts o = {.listen_address = "127.0.0.1:0"};
    assert_int_equal(http_server_start(&o, handler, NULL, &s, err, sizeof err), 0);
    static const char body[] = "query=frombody&match[]=b1&x=%zz";
    char req[512];
    snprintf(
        req, sizeof req,
        "POST /api?match%%5B%%5D=u1&query=fromurl&match[]=u+2 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
        "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: %zu\r\n\r\n%s",
        strlen(body), body);
    roundtrip(http_server_port(s), req);
    assert_string_equal(seen, "rc=-3 q=frombody m=b1 m=u1 m=u 2");
    /* GET: the URL only */
    roundtrip(
        http_server_port(s),
        "GET /api?match%5B%5D=u1&query=fromurl&match[]=u+2 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    assert_string_equal(seen, "rc=0 q=fromurl m=u1 m=u 2");
    http_server_stop(s);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_basic), cmocka_unit_test(test_binary_and_plus), cmocka_unit_test(test_errors),
        cmocka_unit_test(test_limit), cmocka_unit_test(test_bodies),          cmocka_unit_test(test_request),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
