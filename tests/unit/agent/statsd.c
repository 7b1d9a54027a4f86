/* tests/unit/agent/statsd.c -- the StatsD receiver (src/agent/statsd.c).
 *
 * Each test feeds datagrams through agent_statsd_feed() (one through a
 * real UDP socket on 127.0.0.1), renders the collected set as text 0.0.4
 * and checks exact sample lines and the self-metric counters, so a wrong
 * name, label, value or reason fails.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cmocka.h>

#include "agent/statsd.h"
#include "base/err.h"
#include "base/time.h"

static agent_statsd *mk(const agent_statsd_opts *o) {
    agent_statsd *s = NULL;
    char err[256] = "";
    int rc = agent_statsd_new(o, &s, err, sizeof err);
    if (rc) fprintf(stderr, "agent_statsd_new: %s\n", err);
    assert_int_equal(rc, 0);
    assert_non_null(s);
    return s;
}

static agent_statsd *mk_default(void) {
    agent_statsd_opts o;
    agent_statsd_opts_init(&o);
    return mk(&o);
}

static void feed(agent_statsd *s, const char *p) {
    agent_statsd_feed(s, p, strlen(p));
}

/* Renders everything collected now (clock: now + shift_ms). Caller frees. */
static char *render_at(agent_statsd *s, int64_t shift_ms) {
    expo_mset ms;
    expo_mset_init(&ms);
    assert_int_equal(agent_statsd_collect_at(s, &ms, base_mono_ns() / 1000000 + shift_ms), 0);
    base_buf out = BASE_BUF_INIT;
    expo_mset *sets[] = {&ms};
    assert_int_equal(expo_write(sets, 1, EXPO_FMT_TEXT, &out), 0);
    expo_mset_free(&ms);
    char *p = base_buf_steal(&out, NULL);
    return p ? p : strdup("");
}

static char *render(agent_statsd *s) {
    return render_at(s, 0);
}

/* Whether `line` (without '\n') is one whole line of text. */
static int has_line(const char *text, const char *line) {
    size_t n = strlen(line);
    for (const char *p = text; (p = strstr(p, line)); p++)
        if ((p == text || p[-1] == '\n') && p[n] == '\n') return 1;
    return 0;
}

#define assert_line(text, line)                                                                              \
    do {                                                                                                     \
        if (!has_line(text, line)) fail_msg("missing line %s in:\n%s", line, text);                          \
    } while (0)
#define assert_no_line(text, line)                                                                           \
    do {                                                                                                     \
        if (has_line(text, line)) fail_msg("unexpected line %s in:\n%s", line, text);                        \
    } while (0)

/* Value of the sample whose name{labels} is exactly `series`; fails if absent. */
static double value_of(const char *text, const char *series) {
    size_t n = strlen(series);
    for (const char *p = text; (p = strstr(p, series)); p++)
        if ((p == text || p[-1] == '\n') && p[n] == ' ') return strtod(p + n + 1, NULL);
    fail_msg("no series %s in:\n%s", series, text);
    return 0;
}

static double malformed(const char *text, const char *reason) {
    char k[128];
    snprintf(k, sizeof k, "kelvin_statsd_malformed_total{reason=\"%s\"}", reason);
    return value_of(text, k);
}

static double dropped(const char *text, const char *reason) {
    char k[128];
    snprintf(k, sizeof k, "kelvin_statsd_dropped_total{reason=\"%s\"}", reason);
    return value_of(text, k);
}

static void test_counter(void **state) {
    (void)state;
    agent_statsd *s = mk_default();
    feed(s, "train.steps:1|c\ntrain.steps:2|c|@0.5\ntrain.steps:+3|c");
    char *t = render(s);
    assert_line(t, "# TYPE train_steps counter");
    assert_line(t, "train_steps 8");
    assert_line(t, "kelvin_statsd_packets_total 1");
    assert_line(t, "kelvin_statsd_lines_total 3");
    assert_line(t, "kelvin_statsd_samples_total 3");
    assert_line(t, "kelvin_statsd_series 1");
    free(t);
    agent_statsd_free(s);
}

static void test_gauge_relative(void **state) {
    (void)state;
    agent_statsd *s = mk_default();
    feed(s, "loss:5|g\nloss:+3|g");
    char *t = render(s);
    assert_line(t, "# TYPE loss gauge");
    assert_line(t, "loss 8");
    free(t);
    feed(s, "loss:-10|g");
    t = render(s);
    assert_line(t, "loss -2");
    free(t);
    feed(s, "loss:0.25|g|@0.5"); /* the rate does not scale gauges */
    t = render(s);
    assert_line(t, "loss 0.25");
    free(t);
    feed(s, "fresh:-4|g"); /* relative on a new series starts at 0 */
    t = render(s);
    assert_line(t, "fresh -4");
    free(t);
    agent_statsd_free(s);
}

static void test_timer_histogram(void **state) {
    (void)state;
    agent_statsd *s = mk_default();
    /* ms are observed in seconds; @0.1 counts ten observations */
    feed(s, "step.time:500|ms\nstep.time:20|ms|@0.1");
    char *t = render(s);
    assert_line(t, "# TYPE step_time histogram");
    assert_line(t, "step_time_bucket{le=\"0.005\"} 0");
    assert_line(t, "step_time_bucket{le=\"0.01\"} 0");
    assert_line(t, "step_time_bucket{le=\"0.025\"} 10");
    assert_line(t, "step_time_bucket{le=\"0.25\"} 10");
    assert_line(t, "step_time_bucket{le=\"0.5\"} 11");
    assert_line(t, "step_time_bucket{le=\"10\"} 11");
    assert_line(t, "step_time_bucket{le=\"+Inf\"} 11");
    assert_line(t, "step_time_count 11");
    assert_true(value_of(t, "step_time_sum") > 0.6999 && value_of(t, "step_time_sum") < 0.7001);
    free(t);
    /* h and d are observed as sent */
    feed(s, "tok:3|h\ntok:700|d|#gpu:0\ntok:0.001|h");
    t = render(s);
    assert_line(t, "tok_bucket{le=\"0.005\"} 1");
    assert_line(t, "tok_bucket{le=\"5\"} 2");
    assert_line(t, "tok_bucket{le=\"+Inf\"} 2");
    assert_line(t, "tok_sum 3.001");
    assert_line(t, "tok_bucket{gpu=\"0\",le=\"10\"} 0");
    assert_line(t, "tok_bucket{gpu=\"0\",le=\"+Inf\"} 1");
    assert_line(t, "tok_sum{gpu=\"0\"} 700");
    assert_line(t, "tok_count{gpu=\"0\"} 1");
    free(t);
    agent_statsd_free(s);
}

static void test_custom_buckets(void **state) {
    (void)state;
    agent_statsd_opts o;
    agent_statsd_opts_init(&o);
    const double b[] = {1, 2.5};
    o.buckets = b;
    o.nbuckets = 2;
    agent_statsd *s = mk(&o);
    feed(s, "x:2|h\nx:9|h\nx:1|h");
    char *t = render(s);
    assert_line(t, "x_bucket{le=\"1\"} 1");
    assert_line(t, "x_bucket{le=\"2.5\"} 2");
    assert_line(t, "x_bucket{le=\"+Inf\"} 3");
    assert_no_line(t, "x_bucket{le=\"0.005\"} 0");
    free(t);
    agent_statsd_free(s);

    const double bad[] = {2, 1};
    o.buckets = bad;
    agent_statsd *x = NULL;
    char err[128];
    assert_int_equal(agent_statsd_new(&o, &x, err, sizeof err), BASE_E_INVAL);
    assert_null(x);
}

static void test_extended_aggregation(void **state) {
    (void)state;
    agent_statsd *s = mk_default();
    feed(s, "lat:1:2:3|h|#rank:0\nlat:1000:2000|ms|#rank:1\nbad:1:2|c\nmulti:1|c:2|c");
    char *t = render(s);
    assert_line(t, "lat_count{rank=\"0\"} 3");
    assert_line(t, "lat_sum{rank=\"0\"} 6");
    assert_line(t, "lat_count{rank=\"1\"} 2");
    assert_line(t, "lat_sum{rank=\"1\"} 3");
    assert_int_equal(malformed(t, "invalid_extended_aggregate_type"), 1);
    assert_line(t, "multi 3"); /* plain StatsD: several samples after one name */
    assert_line(t, "kelvin_statsd_samples_total 7");
    free(t);
    agent_statsd_free(s);
}

static void test_sets(void **state) {
    (void)state;
    agent_statsd_opts o;
    agent_statsd_opts_init(&o);
    o.max_set_values = 3;
    agent_statsd *s = mk(&o);
    feed(s, "users:alice|s\nusers:bob|s\nusers:alice|s\nusers:1.5|s");
    char *t = render(s);
    assert_line(t, "# TYPE users gauge");
    assert_line(t, "users 3");
    free(t);
    feed(s, "users:carol|s\nusers:bob|s");
    t = render(s);
    assert_line(t, "users 3");
    assert_int_equal(dropped(t, "set_limit"), 1);
    free(t);
    agent_statsd_free(s);
}

static void test_tag_styles(void **state) {
    (void)state;
    agent_statsd *s = mk_default();
    feed(s, "dog:1|c|#env:prod,host:a\n"
            "influx,env=prod,host=b:2|c\n"
            "librato#env=prod,host=c:3|c\n"
            "sfx.[env=prod,host=d]sub:4|c\n"
            "dup:1|g|#k:1,k:2\n"
            "esc:1|g|#v:q\"b\\c\n"
            "hash:1|g|##lead:x\n"
            "dash-key:1|g|#my-tag.name:v\n"
            "rate:1|c|@0.5|#t:x\n");
    char *t = render(s);
    assert_line(t, "dog{env=\"prod\",host=\"a\"} 1");
    assert_line(t, "influx{env=\"prod\",host=\"b\"} 2");
    assert_line(t, "librato{env=\"prod\",host=\"c\"} 3");
    assert_line(t, "sfx_sub{env=\"prod\",host=\"d\"} 4");
    assert_line(t, "dup{k=\"2\"} 1");
    assert_line(t, "esc{v=\"q\\\"b\\\\c\"} 1");
    assert_line(t, "hash{lead=\"x\"} 1");
    assert_line(t, "dash_key{my_tag_name=\"v\"} 1");
    assert_line(t, "rate{t=\"x\"} 2");
    assert_line(t, "kelvin_statsd_tag_errors_total 0");
    free(t);
    /* tag errors: no value, empty, reserved name; the sample still counts */
    feed(s, "te:1|c|#novalue,:x,k:,,__r:1,ok:1\nte2,a=b,=c:1|g\nbr[a=b:1|g");
    t = render(s);
    assert_line(t, "te{ok=\"1\"} 1");
    assert_line(t, "te2{a=\"b\"} 1");
    assert_line(t, "br_a_b 1");
    assert_line(t, "kelvin_statsd_tag_errors_total 7");
    free(t);
    agent_statsd_free(s);
}

static void test_name_escaping(void **state) {
    (void)state;
    agent_statsd *s = mk_default();
    feed(s, "my-app.loss--x:1|g\n1abc:2|g\nh\xc3\xa9llo:3|g\na---b:4|g\nok_Name9:5|g");
    char *t = render(s);
    assert_line(t, "my_app_loss_x 1");
    assert_line(t, "_1abc 2");
    assert_line(t, "h_llo 3");
    assert_line(t, "a_b 4");
    assert_line(t, "ok_Name9 5");
    free(t);
    agent_statsd_free(s);
}

static void test_malformed_reasons(void **state) {
    (void)state;
    agent_statsd *s = mk_default();
    feed(s, "good:1|c\n"
            "nocolon\n"
            ":1|c\n"
            "bad\xff:1|c\n"
            "a:1\n"
            "a:x|c\n"
            "a:1|c|x\n"
            "a:1|c|@2\n"
            "a:1|c|@nope\n"
            "a:1|zz\n"
            "a:-1|c\n"
            "a:1|c|\n"
            "a:1|c|@1|#a:b|x\n"
            "a,b=c:1|c|#d:e\n"
            "kelvin_fake:1|g\n"
            "DCGM_FI_DEV_GPU_TEMP:1|g\n"
            "h:1|h|#le:3\n"
            ",a=b:1|c\n"
            "a:nan|c\n"
            "a:nan|h\n"
            "good:1|c\r\n"
            "\n\n");
    static const char nul[] = "nul:1|g|#t:a\0b\nafter:1|g";
    agent_statsd_feed(s, nul, sizeof nul - 1);
    char *t = render(s);
    assert_line(t, "good 2");
    assert_line(t, "kelvin_statsd_lines_total 23");
    assert_int_equal(malformed(t, "malformed_line"), 4);
    assert_line(t, "after 1");
    assert_int_equal(malformed(t, "not_enough_parts_after_colon"), 1);
    assert_int_equal(malformed(t, "malformed_value"), 3);
    assert_int_equal(malformed(t, "invalid_sample_factor"), 3);
    assert_int_equal(malformed(t, "illegal_event"), 1);
    assert_int_equal(malformed(t, "illegal_negative_counter"), 1);
    assert_int_equal(malformed(t, "malformed_component"), 2);
    assert_int_equal(malformed(t, "mixed_tagging_styles"), 1);
    assert_int_equal(malformed(t, "reserved_metric_name"), 2);
    assert_int_equal(malformed(t, "reserved_label_name"), 1);
    assert_int_equal(malformed(t, "empty_metric_name"), 1);
    assert_line(t, "kelvin_statsd_series 2");
    assert_no_line(t, "# TYPE a counter");
    assert_no_line(t, "# TYPE kelvin_fake gauge");
    free(t);
    agent_statsd_free(s);
}

static void test_conflicts(void **state) {
    (void)state;
    agent_statsd *s = mk_default();
    feed(s, "m:1|c\nm:1|g\nm:2|c\n"
            "hh:1|h\nhh_count:1|g\nhh_sum:1|c\n"
            "q_sum:1|g\nq:1|ms\n"
            "z:1|s\nz:1|g\n");
    char *t = render(s);
    assert_line(t, "m 3");
    assert_line(t, "hh_count 1");
    assert_line(t, "q_sum 1");
    assert_no_line(t, "# TYPE q histogram");
    assert_int_equal(value_of(t, "kelvin_statsd_conflicts_total{type=\"gauge\"}"), 3);
    assert_int_equal(value_of(t, "kelvin_statsd_conflicts_total{type=\"counter\"}"), 1);
    assert_int_equal(value_of(t, "kelvin_statsd_conflicts_total{type=\"histogram\"}"), 1);
    assert_int_equal(value_of(t, "kelvin_statsd_conflicts_total{type=\"set\"}"), 0);
    free(t);
    agent_statsd_free(s);
}

static void test_events_ignored(void **state) {
    (void)state;
    agent_statsd *s = mk_default();
    feed(s, "_e{5,4}:title|text|#t:1\n_sc|db.up|0|#t:1\n_e{1,1}:a|b\nx:1|c");
    char *t = render(s);
    assert_line(t, "kelvin_statsd_ignored_total{kind=\"event\"} 2");
    assert_line(t, "kelvin_statsd_ignored_total{kind=\"service_check\"} 1");
    assert_line(t, "x 1");
    assert_line(t, "kelvin_statsd_series 1");
    free(t);
    agent_statsd_free(s);
}

static void test_limits(void **state) {
    (void)state;
    agent_statsd_opts o;
    agent_statsd_opts_init(&o);
    o.max_series = 3;
    o.max_tags = 2;
    o.max_name_len = 8;
    o.max_tag_len = 10;
    o.max_packet = 150;
    agent_statsd *s = mk(&o);
    feed(s, "a:1|c\nb:1|c|#k:1\nb:1|c|#k:2\nc:1|c\nb:1|c|#k:1\n" /* 3 series, 1 over */
            "t:1|g|#a:1,b:2,c:3\n"                               /* too many tags */
            "t:1|g|#a:1,b:2,a:3\n"                               /* duplicates: fine, but a 4th series */
            "longname9:1|g\n"                                    /* 9 bytes */
            "u:1|g|#k:123456789\n");                             /* 11-byte tag */
    char *t = render(s);
    assert_line(t, "a 1");
    assert_line(t, "b{k=\"1\"} 2");
    assert_line(t, "b{k=\"2\"} 1");
    assert_no_line(t, "c 1");
    assert_int_equal(dropped(t, "series_limit"), 2);
    assert_int_equal(dropped(t, "too_many_tags"), 1);
    assert_int_equal(dropped(t, "name_too_long"), 1);
    assert_int_equal(dropped(t, "tag_too_long"), 1);
    assert_line(t, "kelvin_statsd_series 3");
    free(t);
    char big[200]; /* > max_packet */
    memset(big, 'x', sizeof big);
    memcpy(big, "a:1|c\n", 6);
    agent_statsd_feed(s, big, sizeof big);
    t = render(s);
    assert_int_equal(dropped(t, "packet_too_large"), 1);
    assert_line(t, "a 1"); /* the oversized packet was dropped whole */
    free(t);
    agent_statsd_free(s);
}

static void test_ttl_expiry(void **state) {
    (void)state;
    agent_statsd_opts o;
    agent_statsd_opts_init(&o);
    o.ttl_ms = 60000;
    agent_statsd *s = mk(&o);
    feed(s, "old:1|c\nold:1|c|#x:y");
    char *t = render_at(s, 30000);
    assert_line(t, "old 1");
    free(t);
    t = render_at(s, 61000);
    assert_no_line(t, "old 1");
    assert_line(t, "kelvin_statsd_expired_total 2");
    assert_line(t, "kelvin_statsd_series 0");
    free(t);
    /* once expired, the name may come back with another type */
    feed(s, "old:7|g");
    t = render(s);
    assert_line(t, "# TYPE old gauge");
    assert_line(t, "old 7");
    free(t);
    agent_statsd_free(s);

    o.ttl_ms = -1;
    s = mk(&o);
    feed(s, "keep:1|c");
    t = render_at(s, 365LL * 24 * 3600 * 1000);
    assert_line(t, "keep 1");
    free(t);
    agent_statsd_free(s);
}

static void test_sorted_output(void **state) {
    (void)state;
    agent_statsd *s = mk_default();
    feed(s, "zz:1|g|#b:2\nzz:1|g|#a:1\naa:1|g\nmm:2|c");
    char *t = render(s);
    const char *aa = strstr(t, "\naa 1"), *mm = strstr(t, "\nmm 2"), *z1 = strstr(t, "zz{a=\"1\"}"),
               *z2 = strstr(t, "zz{b=\"2\"}");
    assert_non_null(aa);
    assert_non_null(mm);
    assert_non_null(z1);
    assert_non_null(z2);
    assert_true(aa < mm && mm < z1 && z1 < z2);
    assert_line(t, "# HELP zz StatsD metric autogenerated by kelvin agent.");
    free(t);
    agent_statsd_free(s);
}

static void test_udp_socket(void **state) {
    (void)state;
    agent_statsd_opts o;
    agent_statsd_opts_init(&o);
    o.listen_udp = "127.0.0.1:0";
    agent_statsd *s = mk(&o);
    int port = agent_statsd_port(s);
    assert_true(port > 0);
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    assert_true(fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    const char *msg = "udp.loss:0.5|g|#rank:0\nudp.steps:1|c";
    assert_int_equal(sendto(fd, msg, strlen(msg), 0, (struct sockaddr *)&a, sizeof a), (ssize_t)strlen(msg));
    char *t = NULL;
    for (int i = 0; i < 200; i++) { /* up to 2 s */
        t = render(s);
        if (has_line(t, "udp_steps 1")) break;
        free(t);
        t = NULL;
        struct timespec ts = {0, 10000000};
        nanosleep(&ts, NULL);
    }
    assert_non_null(t);
    assert_line(t, "udp_loss{rank=\"0\"} 0.5");
    assert_line(t, "kelvin_statsd_packets_total 1");
    free(t);
    close(fd);
    agent_statsd_free(s);
}

static void test_bad_address(void **state) {
    (void)state;
    agent_statsd_opts o;
    agent_statsd_opts_init(&o);
    agent_statsd *s = NULL;
    char err[256] = "";
    o.listen_udp = "nope";
    assert_int_equal(agent_statsd_new(&o, &s, err, sizeof err), BASE_E_INVAL);
    assert_non_null(strstr(err, "nope"));
    o.listen_udp = "127.0.0.1:99999";
    assert_int_equal(agent_statsd_new(&o, &s, err, sizeof err), BASE_E_INVAL);
    o.listen_udp = "127.0.0.1:x";
    assert_int_equal(agent_statsd_new(&o, &s, err, sizeof err), BASE_E_INVAL);
    assert_null(s);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counter),
        cmocka_unit_test(test_gauge_relative),
        cmocka_unit_test(test_timer_histogram),
        cmocka_unit_test(test_custom_buckets),
        cmocka_unit_test(test_extended_aggregation),
        cmocka_unit_test(test_sets),
        cmocka_unit_test(test_tag_styles),
        cmocka_unit_test(test_name_escaping),
        cmocka_unit_test(test_malformed_reasons),
        cmocka_unit_test(test_conflicts),
        cmocka_unit_test(test_events_ignored),
        cmocka_unit_test(test_limits),
        cmocka_unit_test(test_ttl_expiry),
        cmocka_unit_test(test_sorted_output),
        cmocka_unit_test(test_udp_socket),
        cmocka_unit_test(test_bad_address),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
