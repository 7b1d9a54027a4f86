/* tests/unit/discovery/dns_sd.c -- dns_sd against a tiny DNS server that
 * runs in the test (UDP on 127.0.0.1, wire format built by hand), reached
 * through the KELVIN_DNS_SERVER hook.
 *
 * The server knows:
 *   web.kelvin.test   A 10.0.0.1, 10.0.0.2; AAAA ::1 and 2001:db8::5
 *   _node._tcp.kelvin.test  SRV node1.kelvin.test:9100, node2.kelvin.test:9101
 *                     (plus a CNAME record, which is skipped)
 *   mx.kelvin.test    MX mail.kelvin.test
 * and answers NXDOMAIN for anything else. `mode` switches web.kelvin.test to
 * SERVFAIL (1: the previous targets stay) or NXDOMAIN (2: they go, the
 * group stays without targets), as Prometheus 2.42's dns.go does.
 */
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
#include <strings.h>
#include <sys/socket.h>

#include <cmocka.h>

#include "discovery/discovery.h"
#include "testutil.h"

#define WAIT_MS 5000

typedef struct dnssrv {
    int fd;
    unsigned port;
    pthread_t th;
    atomic_int stop;
    atomic_int mode; /* 0 normal, 1 SERVFAIL, 2 NXDOMAIN for web.kelvin.test */
    atomic_int queries;
} dnssrv;

typedef struct wbuf {
    uint8_t b[1500];
    size_t n;
} wbuf;

static void put8(wbuf *w, unsigned v) {
    if (w->n < sizeof w->b) w->b[w->n++] = (uint8_t)v;
}
static void put16(wbuf *w, unsigned v) {
    put8(w, v >> 8);
    put8(w, v & 0xff);
}
static void put32(wbuf *w, uint32_t v) {
    put16(w, v >> 16);
    put16(w, v & 0xffff);
}
static void putname(wbuf *w, const char *name) {
    while (*name) {
        const char *dot = strchr(name, '.');
        size_t l = dot ? (size_t)(dot - name) : strlen(name);
        put8(w, (unsigned)l);
        for (size_t i = 0; i < l; i++) put8(w, (uint8_t)name[i]);
        name += l;
        if (*name == '.') name++;
    }
    put8(w, 0);
}

/* An answer record whose owner is the question's name (pointer 0xc00c). */
static void rr_begin(wbuf *w, unsigned type, size_t *rdlen_at) {
    put16(w, 0xc00c);
    put16(w, type);
    put16(w, 1);
    put32(w, 60);
    *rdlen_at = w->n;
    put16(w, 0);
}
static void rr_end(wbuf *w, size_t rdlen_at) {
    size_t l = w->n - rdlen_at - 2;
    w->b[rdlen_at] = (uint8_t)(l >> 8);
    w->b[rdlen_at + 1] = (uint8_t)(l & 0xff);
}

static void answer(dnssrv *s, const uint8_t *q, size_t qn, wbuf *w, char *qname) {
    /* question: name labels, type, class */
    size_t off = 12, o = 0;
    while (off < qn && q[off]) {
        size_t l = q[off++];
        if (off + l > qn || o + l + 2 > 255) return;
        if (o) qname[o++] = '.';
        memcpy(qname + o, q + off, l);
        o += l;
        off += l;
    }
    qname[o] = '\0';
    off++;
    if (off + 4 > qn) return;
    unsigned qtype = ((unsigned)q[off] << 8) | q[off + 1];
    size_t qend = off + 4;

    int rcode = 0, nans = 0;
    wbuf ans = {.n = 0};
    size_t at;
    int mode = atomic_load(&s->mode);
    if (strcasecmp(qname, "web.kelvin.test") == 0 && mode == 1) {
        rcode = 2;
    } else if (strcasecmp(qname, "web.kelvin.test") == 0 && mode == 2) {
        rcode = 3;
    } else if (strcasecmp(qname, "web.kelvin.test") == 0) {
        if (qtype == 1) {
            for (unsigned i = 1; i <= 2; i++) {
                rr_begin(&ans, 1, &at);
                put8(&ans, 10), put8(&ans, 0), put8(&ans, 0), put8(&ans, i);
                rr_end(&ans, at);
                nans++;
            }
        } else if (qtype == 28) {
            uint8_t a6[2][16];
            inet_pton(AF_INET6, "::1", a6[0]);
            inet_pton(AF_INET6, "2001:db8::5", a6[1]);
            for (int i = 0; i < 2; i++) {
                rr_begin(&ans, 28, &at);
                for (int j = 0; j < 16; j++) put8(&ans, a6[i][j]);
                rr_end(&ans, at);
                nans++;
            }
        }
    } else if (strcasecmp(qname, "_node._tcp.kelvin.test") == 0 && qtype == 33) {
        rr_begin(&ans, 5, &at); /* a CNAME first: skipped */
        putname(&ans, "elsewhere.kelvin.test");
        rr_end(&ans, at);
        nans++;
        for (unsigned i = 1; i <= 2; i++) {
            char t[64];
            snprintf(t, sizeof t, "node%u.kelvin.test", i);
            rr_begin(&ans, 33, &at);
            put16(&ans, 10), put16(&ans, 5), put16(&ans, 9099 + i);
            putname(&ans, t);
            rr_end(&ans, at);
            nans++;
        }
    } else if (strcasecmp(qname, "mx.kelvin.test") == 0 && qtype == 15) {
        rr_begin(&ans, 15, &at);
        put16(&ans, 10);
        putname(&ans, "mail.kelvin.test");
        rr_end(&ans, at);
        nans++;
    } else if (strcasecmp(qname, "mx.kelvin.test") != 0) {
        rcode = 3;
    }
    /* header */
    put8(w, q[0]), put8(w, q[1]);
    put8(w, 0x81 | (q[2] & 0x01)), put8(w, 0x80 | (unsigned)rcode);
    put16(w, 1), put16(w, (unsigned)nans), put16(w, 0), put16(w, 0);
    for (size_t i = 12; i < qend; i++) put8(w, q[i]);
    for (size_t i = 0; i < ans.n; i++) put8(w, ans.b[i]);
}

static void *dns_main(void *arg) {
    dnssrv *s = arg;
    while (!atomic_load(&s->stop)) {
        struct pollfd p = {.fd = s->fd, .events = POLLIN};
        if (poll(&p, 1, 50) <= 0) continue;
        uint8_t q[512];
        struct sockaddr_in from;
        socklen_t fl = sizeof from;
        ssize_t n = recvfrom(s->fd, q, sizeof q, 0, (struct sockaddr *)&from, &fl);
        if (n < 12) continue;
        atomic_fetch_add(&s->queries, 1);
        wbuf w = {.n = 0};
        char qname[256];
        answer(s, q, (size_t)n, &w, qname);
        if (w.n) sendto(s->fd, w.b, w.n, 0, (struct sockaddr *)&from, fl);
    }
    return NULL;
}

static void dns_start(dnssrv *s) {
    memset(s, 0, sizeof *s);
    s->fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    assert_true(s->fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(s->fd, (struct sockaddr *)&a, sizeof a), 0);
    socklen_t al = sizeof a;
    assert_int_equal(getsockname(s->fd, (struct sockaddr *)&a, &al), 0);
    s->port = ntohs(a.sin_port);
    assert_int_equal(pthread_create(&s->th, NULL, dns_main, s), 0);
    char env[64];
    snprintf(env, sizeof env, "127.0.0.1:%u", s->port);
    setenv("KELVIN_DNS_SERVER", env, 1);
}

static void dns_stop(dnssrv *s) {
    atomic_store(&s->stop, 1);
    pthread_join(s->th, NULL);
    close(s->fd);
    unsetenv("KELVIN_DNS_SERVER");
}

static void test_dns(void **state) {
    (void)state;
    dnssrv srv;
    dns_start(&srv);
    tcfg *t = tcfg_new();
    const char *web[] = {"web.kelvin.test", NULL};
    const char *srvn[] = {"_node._tcp.kelvin.test", NULL};
    const char *mx[] = {"mx.kelvin.test", NULL};
    tcfg_dns(tcfg_job(t, "a"), web, CFG_DNS_A, 9100, 100);
    tcfg_dns(tcfg_job(t, "aaaa"), web, CFG_DNS_AAAA, 80, 3600 * 1000);
    tcfg_dns(tcfg_job(t, "srv"), srvn, CFG_DNS_SRV, 0, 3600 * 1000);
    tcfg_dns(tcfg_job(t, "mx"), mx, CFG_DNS_MX, 25, 3600 * 1000);
    rec r;
    rec_init(&r);
    disc_opts o = {.sink = rec_sink, .sink_ctx = &r, .update_interval_ms = 50};
    disc_manager *m = NULL;
    char err[256];
    assert_int_equal(disc_manager_new(&o, &m, err, sizeof err), 0);
    assert_int_equal(disc_manager_apply(m, &t->c, err, sizeof err), 0);

    const char *want_a =
        "web.kelvin.test {} {__address__=\"10.0.0.1:9100\", __meta_dns_name=\"web.kelvin.test\"} "
        "{__address__=\"10.0.0.2:9100\", __meta_dns_name=\"web.kelvin.test\"}\n";
    assert_true(rec_wait(&r, "a", want_a, WAIT_MS));
    assert_true(rec_wait(&r, "aaaa",
                         "web.kelvin.test {} {__address__=\"[::1]:80\", __meta_dns_name=\"web.kelvin.test\"} "
                         "{__address__=\"[2001:db8::5]:80\", __meta_dns_name=\"web.kelvin.test\"}\n",
                         WAIT_MS));
    assert_true(rec_wait(
        &r, "srv",
        "_node._tcp.kelvin.test {} {__address__=\"node1.kelvin.test:9100\", "
        "__meta_dns_name=\"_node._tcp.kelvin.test\", __meta_dns_srv_record_port=\"9100\", "
        "__meta_dns_srv_record_target=\"node1.kelvin.test.\"} "
        "{__address__=\"node2.kelvin.test:9101\", __meta_dns_name=\"_node._tcp.kelvin.test\", "
        "__meta_dns_srv_record_port=\"9101\", __meta_dns_srv_record_target=\"node2.kelvin.test.\"}\n",
        WAIT_MS));
    assert_true(
        rec_wait(&r, "mx",
                 "mx.kelvin.test {} {__address__=\"mail.kelvin.test:25\", __meta_dns_mx_record_target="
                 "\"mail.kelvin.test.\", __meta_dns_name=\"mx.kelvin.test\"}\n",
                 WAIT_MS));

    /* SERVFAIL: an error, the targets stay */
    disc_stats s0, s1;
    disc_manager_stats(m, &s0);
    atomic_store(&srv.mode, 1);
    int64_t end = base_mono_ns() + (int64_t)WAIT_MS * 1000000;
    do {
        sleep_ms(20);
        disc_manager_stats(m, &s1);
    } while (s1.failures[1] < s0.failures[1] + 2 && base_mono_ns() < end);
    assert_true(s1.failures[1] >= s0.failures[1] + 2);
    assert_true(rec_wait(&r, "a", want_a, 10));

    /* NXDOMAIN: the name has no targets any more */
    atomic_store(&srv.mode, 2);
    assert_true(rec_wait(&r, "a", "web.kelvin.test {}\n", WAIT_MS));
    /* and back */
    atomic_store(&srv.mode, 0);
    assert_true(rec_wait(&r, "a", want_a, WAIT_MS));
    assert_true(atomic_load(&srv.queries) > 4);

    disc_manager_free(m);
    tcfg_free(t);
    rec_free(&r);
    dns_stop(&srv);
}

/* The hook takes loopback addresses only. */
static void test_dns_hook(void **state) {
    (void)state;
    tcfg *t = tcfg_new();
    const char *web[] = {"web.kelvin.test", NULL};
    tcfg_dns(tcfg_job(t, "a"), web, CFG_DNS_A, 9100, 100);
    setenv("KELVIN_DNS_SERVER", "192.0.2.1:53", 1);
    rec r;
    rec_init(&r);
    disc_opts o = {.sink = rec_sink, .sink_ctx = &r, .update_interval_ms = 50};
    disc_manager *m = NULL;
    char err[256];
    assert_int_equal(disc_manager_new(&o, &m, err, sizeof err), 0);
    assert_int_equal(disc_manager_apply(m, &t->c, err, sizeof err), 0);
    disc_stats s;
    int64_t end = base_mono_ns() + (int64_t)WAIT_MS * 1000000;
    do {
        sleep_ms(20);
        disc_manager_stats(m, &s);
    } while (s.failures[1] == 0 && base_mono_ns() < end);
    assert_true(s.failures[1] > 0);
    assert_true(rec_wait(&r, "a", "", 10)); /* the first result: nothing */
    disc_manager_free(m);
    unsetenv("KELVIN_DNS_SERVER");
    tcfg_free(t);
    rec_free(&r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dns),
        cmocka_unit_test(test_dns_hook),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
