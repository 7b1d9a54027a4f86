/* tests/unit/discovery/http_sd.c -- http_sd against a tiny HTTP server
 * thread on 127.0.0.1 (one request per connection): the groups arrive with
 * __meta_url and "<url>:<i>" sources; the request carries Prometheus's
 * headers and basic auth; a new body is seen at the next refresh; a 500, a
 * wrong Content-Type and bad JSON keep the previous groups. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <cmocka.h>

#include "discovery/discovery.h"
#include "testutil.h"

#define WAIT_MS 5000

typedef struct httpsrv {
    int fd;
    unsigned port;
    pthread_t th;
    atomic_int stop;
    atomic_int requests;
    pthread_mutex_t mu;
    int status;
    char ctype[64];
    char body[1024];
    char last_req[2048];
} httpsrv;

static void serve(httpsrv *s, int c) {
    char req[2048];
    size_t n = 0;
    for (int tries = 0; tries < 100 && n < sizeof req - 1; tries++) {
        struct pollfd p = {.fd = c, .events = POLLIN};
        if (poll(&p, 1, 50) <= 0) continue;
        ssize_t r = recv(c, req + n, sizeof req - 1 - n, 0);
        if (r <= 0) break;
        n += (size_t)r;
        req[n] = '\0';
        if (strstr(req, "\r\n\r\n")) break;
    }
    req[n] = '\0';
    char resp[2048];
    pthread_mutex_lock(&s->mu);
    snprintf(s->last_req, sizeof s->last_req, "%s", req);
    int len =
        snprintf(resp, sizeof resp,
                 "HTTP/1.1 %d X\r\nContent-Type: %s\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n%s",
                 s->status, s->ctype, strlen(s->body), s->body);
    pthread_mutex_unlock(&s->mu);
    send(c, resp, (size_t)len, MSG_NOSIGNAL);
    atomic_fetch_add(&s->requests, 1);
}

static void *http_main(void *arg) {
    httpsrv *s = arg;
    while (!atomic_load(&s->stop)) {
        struct pollfd p = {.fd = s->fd, .events = POLLIN};
        if (poll(&p, 1, 50) <= 0) continue;
        int c = accept4(s->fd, NULL, NULL, SOCK_CLOEXEC);
        if (c < 0) continue;
        serve(s, c);
        close(c);
    }
    return NULL;
}

static void srv_set(httpsrv *s, int status, const char *ctype, const char *body) {
    pthread_mutex_lock(&s->mu);
    s->status = status;
    snprintf(s->ctype, sizeof s->ctype, "%s", ctype);
    snprintf(s->body, sizeof s->body, "%s", body);
    pthread_mutex_unlock(&s->mu);
}

static void srv_start(httpsrv *s) {
    memset(s, 0, sizeof *s);
    pthread_mutex_init(&s->mu, NULL);
    s->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(s->fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(s->fd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(s->fd, 16), 0);
    socklen_t al = sizeof a;
    assert_int_equal(getsockname(s->fd, (struct sockaddr *)&a, &al), 0);
    s->port = ntohs(a.sin_port);
    assert_int_equal(pthread_create(&s->th, NULL, http_main, s), 0);
}

static void srv_stop(httpsrv *s) {
    atomic_store(&s->stop, 1);
    pthread_join(s->th, NULL);
    close(s->fd);
    pthread_mutex_destroy(&s->mu);
}

/* Waits until the server has answered `more` further requests. */
static void wait_requests(httpsrv *s, int more) {
    int target = atomic_load(&s->requests) + more;
    int64_t end = base_mono_ns() + (int64_t)WAIT_MS * 1000000;
    while (atomic_load(&s->requests) < target && base_mono_ns() < end) sleep_ms(10);
    assert_true(atomic_load(&s->requests) >= target);
}

static void test_http(void **state) {
    (void)state;
    httpsrv s;
    srv_start(&s);
    srv_set(&s, 200, "application/json",
            "[{\"targets\": [\"a:1\", \"b:2\"], \"labels\": {\"dc\": \"eu\"}}, {\"targets\": [\"c:3\"]}]");
    char url[128];
    snprintf(url, sizeof url, "http://127.0.0.1:%u/sd", s.port);

    tcfg *t = tcfg_new();
    cfg_http_sd *h = tcfg_http(tcfg_job(t, "web"), url, 150);
    h->http.has_basic_auth = 1;
    h->http.basic_auth_username = strdup("user");
    h->http.basic_auth_password = strdup("pass");
    rec r;
    rec_init(&r);
    disc_opts o = {.sink = rec_sink, .sink_ctx = &r, .update_interval_ms = 50};
    disc_manager *m = NULL;
    char err[256];
    assert_int_equal(disc_manager_new(&o, &m, err, sizeof err), 0);
    assert_int_equal(disc_manager_apply(m, &t->c, err, sizeof err), 0);

    char want[2048];
    snprintf(want, sizeof want,
             "%s:0 {__meta_url=\"%s\", dc=\"eu\"} {__address__=\"a:1\"} {__address__=\"b:2\"}\n"
             "%s:1 {__meta_url=\"%s\"} {__address__=\"c:3\"}\n",
             url, url, url, url);
    assert_true(rec_wait(&r, "web", want, WAIT_MS));
    pthread_mutex_lock(&s.mu);
    assert_non_null(strstr(s.last_req, "GET /sd HTTP/1.1\r\n"));
    assert_non_null(strstr(s.last_req, "X-Prometheus-Refresh-Interval-Seconds: 0.15\r\n"));
    assert_non_null(strstr(s.last_req, "Accept: application/json\r\n"));
    assert_non_null(strstr(s.last_req, "User-Agent: Kelvin/"));
    assert_non_null(strstr(s.last_req, "Authorization: Basic dXNlcjpwYXNz\r\n"));
    pthread_mutex_unlock(&s.mu);

    /* a new body (content type with a charset) */
    srv_set(&s, 200, "application/json; charset=utf-8", "[{\"targets\": [\"d:4\"]}]");
    snprintf(want, sizeof want, "%s:0 {__meta_url=\"%s\"} {__address__=\"d:4\"}\n", url, url);
    assert_true(rec_wait(&r, "web", want, WAIT_MS));
    int calls = rec_calls(&r, "web");

    /* failures keep the groups */
    disc_stats s0, s1;
    disc_manager_stats(m, &s0);
    srv_set(&s, 500, "application/json", "[]");
    wait_requests(&s, 2);
    srv_set(&s, 200, "text/plain", "[]");
    wait_requests(&s, 2);
    srv_set(&s, 200, "application/json", "[{\"targets\": [\"x\"], \"labels\": {\"0\": \"1\"}}]");
    wait_requests(&s, 2);
    sleep_ms(100);
    disc_manager_stats(m, &s1);
    assert_true(s1.failures[2] >= s0.failures[2] + 5);
    assert_true(rec_wait(&r, "web", want, 10));
    assert_int_equal(rec_calls(&r, "web"), calls);

    /* an empty list clears */
    srv_set(&s, 200, "application/json", "[]");
    assert_true(rec_wait(&r, "web", "", WAIT_MS));

    disc_manager_free(m);
    tcfg_free(t);
    rec_free(&r);
    srv_stop(&s);
}

/* Nobody listening: failures, no groups, and shutdown does not hang. */
static void test_http_refused(void **state) {
    (void)state;
    httpsrv s;
    srv_start(&s);
    unsigned port = s.port;
    srv_stop(&s); /* the port is free again */
    char url[128];
    snprintf(url, sizeof url, "http://127.0.0.1:%u/sd", port);
    tcfg *t = tcfg_new();
    tcfg_http(tcfg_job(t, "web"), url, 100);
    rec r;
    rec_init(&r);
    disc_opts o = {.sink = rec_sink, .sink_ctx = &r, .update_interval_ms = 50};
    disc_manager *m = NULL;
    char err[256];
    assert_int_equal(disc_manager_new(&o, &m, err, sizeof err), 0);
    assert_int_equal(disc_manager_apply(m, &t->c, err, sizeof err), 0);
    disc_stats st;
    int64_t end = base_mono_ns() + (int64_t)WAIT_MS * 1000000;
    do {
        sleep_ms(20);
        disc_manager_stats(m, &st);
    } while (st.failures[2] < 2 && base_mono_ns() < end);
    assert_true(st.failures[2] >= 2);
    assert_true(rec_wait(&r, "web", "", 10));
    int64_t t0 = base_mono_ns();
    disc_manager_free(m);
    assert_true(base_mono_ns() - t0 < 2000000000LL);
    tcfg_free(t);
    rec_free(&r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_http),
        cmocka_unit_test(test_http_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
