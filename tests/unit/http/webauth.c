/* tests/unit/http/webauth.c -- the HTTP server with a web config file:
 * basic auth (401 with WWW-Authenticate and "Unauthorized", no handler
 * run, no upload read), the configured response headers on every answer,
 * the file read again when it changes (users and headers apply to the next
 * request), a broken file keeping the last good config, TLS that cannot be
 * switched on at run time, and a bad file refusing the start. Hashes are
 * made here with libcrypt (cost 4, so the test stays fast). */
#include <arpa/inet.h>
#include <crypt.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "http/http.h"

static int handled;

static void handler(void *ctx, const http_request *req, http_response *resp) {
    (void)ctx;
    handled++;
    if (strcmp(req->path, "/loc") == 0) {
        http_respond_text(resp, 200, "ok\n");
        (void)http_response_add_header(resp, "X-Frame-Options", "from-handler");
        return;
    }
    http_respond_copy(resp, 200, "text/plain", req->body ? req->body : "hello",
                      req->body ? req->body_len : 5);
}

static char *roundtrip(unsigned port, const char *req) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
    size_t reqlen = strlen(req), off = 0;
    while (off < reqlen) {
        ssize_t w = write(fd, req + off, reqlen - off);
        if (w <= 0) break;
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

/* GET path with an optional "user:password"; returns the response. */
static char *get(unsigned port, const char *path, const char *userpass) {
    char req[512];
    if (userpass) {
        static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        char enc[256];
        size_t n = strlen(userpass), w = 0;
        const unsigned char *s = (const unsigned char *)userpass;
        for (size_t i = 0; i < n; i += 3) {
            unsigned v = s[i] << 16 | (i + 1 < n ? s[i + 1] << 8 : 0) | (i + 2 < n ? s[i + 2] : 0);
            enc[w++] = b64[v >> 18 & 63];
            enc[w++] = b64[v >> 12 & 63];
            enc[w++] = i + 1 < n ? b64[v >> 6 & 63] : '=';
            enc[w++] = i + 2 < n ? b64[v & 63] : '=';
        }
        enc[w] = 0;
        snprintf(req, sizeof req, "GET %s HTTP/1.0\r\nAuthorization: Basic %s\r\n\r\n", path, enc);
    } else {
        snprintf(req, sizeof req, "GET %s HTTP/1.0\r\n\r\n", path);
    }
    return roundtrip(port, req);
}

static int status_of(const char *resp) {
    int st = 0;
    if (sscanf(resp, "HTTP/1.%*d %d", &st) != 1) return -1;
    return st;
}

static char dir[64], path[128];

static void hash_of(const char *pass, char *out, size_t n) {
    char salt[64];
    struct crypt_data *cd = calloc(1, sizeof *cd);
    assert_non_null(crypt_gensalt_rn("$2y$", 4, NULL, 0, salt, sizeof salt));
    const char *h = crypt_rn(pass, salt, cd, (int)sizeof *cd);
    assert_non_null(h);
    snprintf(out, n, "%s", h);
    free(cd);
}

/* Replaces the web config atomically (rename), with a new mtime. */
static void write_cfg(const char *body) {
    char tmp[160];
    snprintf(tmp, sizeof tmp, "%s/.web.yml.tmp", dir);
    FILE *f = fopen(tmp, "w");
    assert_non_null(f);
    fputs(body, f);
    fclose(f);
    assert_int_equal(rename(tmp, path), 0);
}

static int has_header(const char *resp, const char *line) {
    const char *end = strstr(resp, "\r\n\r\n");
    const char *h = strstr(resp, line);
    return h && end && h < end;
}

static void test_basic_auth(void **state) {
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/kelvin-webauth-XXXXXX");
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/web.yml", dir);
    char ha[128], hb[128], cfg[1024];
    hash_of("s3cret", ha, sizeof ha);
    hash_of("other", hb, sizeof hb);
    snprintf(cfg, sizeof cfg,
             "basic_auth_users:\n  alice: %s\nhttp_server_config:\n  headers:\n    X-Frame-Options: deny\n"
             "    Content-Security-Policy: \"default-src 'self'\"\n",
             ha);
    write_cfg(cfg);

    http_server *s;
    char err[512];
    http_server_opts o = {.listen_address = "127.0.0.1:0", .max_body = 1024, .web_config_file = path};
    assert_int_equal(http_server_start(&o, handler, NULL, &s, err, sizeof err), 0);
    unsigned port = http_server_port(s);

    handled = 0;
    const char *bad[] = {NULL, "alice:wrong", "bob:s3cret", "alice:", "alice", "ALICE:s3cret"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *r = get(port, "/x", bad[i]);
        if (status_of(r) != 401) fail_msg("%s: want 401, got %s", bad[i] ? bad[i] : "(none)", r);
        assert_true(has_header(r, "\r\nWWW-Authenticate: Basic\r\n"));
        assert_true(has_header(r, "\r\nContent-Type: text/plain; charset=utf-8\r\n"));
        assert_true(has_header(r, "\r\nX-Content-Type-Options: nosniff\r\n"));
        assert_true(has_header(r, "\r\nX-Frame-Options: deny\r\n"));
        assert_non_null(strstr(r, "\r\n\r\nUnauthorized\n"));
        free(r);
    }
    /* A wrong Authorization scheme, and a POST whose body must not reach the handler. */
    char *r = roundtrip(port, "GET /x HTTP/1.0\r\nAuthorization: Bearer abc\r\n\r\n");
    assert_int_equal(status_of(r), 401);
    free(r);
    r = roundtrip(port, "POST /x HTTP/1.0\r\nContent-Length: 5\r\n\r\nhello");
    assert_int_equal(status_of(r), 401);
    free(r);
    assert_int_equal(handled, 0);

    for (int i = 0; i < 3; i++) { /* the second and third hit the cache */
        r = get(port, "/x", "alice:s3cret");
        if (status_of(r) != 200) fail_msg("want 200, got %s", r);
        assert_true(has_header(r, "\r\nX-Frame-Options: deny\r\n"));
        assert_true(has_header(r, "\r\nContent-Security-Policy: default-src 'self'\r\n"));
        assert_non_null(strstr(r, "\r\n\r\nhello"));
        free(r);
    }
    assert_int_equal(handled, 3);
    /* The handler's own header wins over the configured one. */
    r = get(port, "/loc", "alice:s3cret");
    assert_true(has_header(r, "\r\nX-Frame-Options: from-handler\r\n"));
    assert_false(has_header(r, "\r\nX-Frame-Options: deny\r\n"));
    free(r);

    /* The file changes: new users and headers apply to the next request. */
    snprintf(cfg, sizeof cfg,
             "basic_auth_users:\n  bob: %s\nhttp_server_config:\n  headers:\n"
             "    X-Frame-Options: sameorigin\n",
             hb);
    write_cfg(cfg);
    r = get(port, "/x", "alice:s3cret");
    assert_int_equal(status_of(r), 401);
    assert_true(has_header(r, "\r\nX-Frame-Options: sameorigin\r\n"));
    free(r);
    r = get(port, "/x", "bob:other");
    assert_int_equal(status_of(r), 200);
    assert_false(has_header(r, "Content-Security-Policy"));
    free(r);

    /* A broken file: the last good config keeps serving. */
    write_cfg("basic_auth_users: [\n");
    for (int i = 0; i < 2; i++) {
        r = get(port, "/x", "bob:other");
        assert_int_equal(status_of(r), 200);
        free(r);
        r = get(port, "/x", NULL);
        assert_int_equal(status_of(r), 401);
        free(r);
    }
    /* Turning TLS on needs a restart: refused like a broken file. */
    write_cfg("tls_server_config:\n  cert_file: a.crt\n  key_file: a.key\n");
    r = get(port, "/x", NULL);
    assert_int_equal(status_of(r), 401);
    free(r);
    /* A file with no users: auth is off from the next request. */
    write_cfg("http_server_config:\n  http2: false\n");
    r = get(port, "/x", NULL);
    assert_int_equal(status_of(r), 200);
    free(r);
    /* The file removed: kept as it was (the error is logged once). */
    unlink(path);
    r = get(port, "/x", NULL);
    assert_int_equal(status_of(r), 200);
    free(r);
    http_server_stop(s);

    /* A bad file at start: no server, a message naming the file. */
    write_cfg("basic_auth_users:\n  a: b\n");
    assert_true(http_server_start(&o, handler, NULL, &s, err, sizeof err) < 0);
    char want[512];
    snprintf(want, sizeof want,
             "web configuration file %s: crypto/bcrypt: hashedSecret too short to be a bcrypted password",
             path);
    assert_string_equal(err, want);
    write_cfg("tls_server_config:\n  cert_file: nope.crt\n  key_file: nope.key\n");
    assert_true(http_server_start(&o, handler, NULL, &s, err, sizeof err) < 0);
    assert_non_null(strstr(err, "failed to load X509KeyPair: open "));
    unlink(path);
    assert_true(http_server_start(&o, handler, NULL, &s, err, sizeof err) < 0);
    assert_non_null(strstr(err, "no such file or directory"));
    rmdir(dir);
}

/* Clients on several threads while the file keeps changing: every answer
 * is a 200 or a 401 (never a broken one), and the sanitizers (ASan, TSan)
 * see the config states shared, reloaded and released without a race. */
static unsigned cport;
static int bad_answers;
static pthread_mutex_t bad_mu = PTHREAD_MUTEX_INITIALIZER;

static void *client(void *arg) {
    const char *cred = arg;
    for (int i = 0; i < 25; i++) {
        char *r = get(cport, "/x", cred);
        int st = status_of(r);
        if (st != 200 && st != 401) {
            pthread_mutex_lock(&bad_mu);
            bad_answers++;
            pthread_mutex_unlock(&bad_mu);
        }
        free(r);
    }
    return NULL;
}

static void test_concurrent_reload(void **state) {
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/kelvin-webauth-XXXXXX");
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/web.yml", dir);
    char ha[128], hb[128], ca[512], cb[512];
    hash_of("pa", ha, sizeof ha);
    hash_of("pb", hb, sizeof hb);
    snprintf(ca, sizeof ca, "basic_auth_users:\n  a: %s\n", ha);
    snprintf(cb, sizeof cb,
             "basic_auth_users:\n  b: %s\nhttp_server_config:\n  headers:\n    X-Frame-Options: deny\n", hb);
    write_cfg(ca);
    http_server *s;
    char err[256];
    http_server_opts o = {.listen_address = "127.0.0.1:0", .threads = 4, .web_config_file = path};
    assert_int_equal(http_server_start(&o, handler, NULL, &s, err, sizeof err), 0);
    cport = http_server_port(s);
    pthread_t t[4];
    char *creds[4] = {"a:pa", "b:pb", NULL, "a:wrong"};
    for (int i = 0; i < 4; i++) assert_int_equal(pthread_create(&t[i], NULL, client, creds[i]), 0);
    for (int i = 0; i < 40; i++) {
        write_cfg(i % 3 == 2 ? "basic_auth_users: [\n" : i % 2 ? cb : ca);
        struct timespec ts = {0, 5000000};
        nanosleep(&ts, NULL);
    }
    for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
    http_server_stop(s);
    assert_int_equal(bad_answers, 0);
    unlink(path);
    rmdir(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_basic_auth),
        cmocka_unit_test(test_concurrent_reload),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
