/* tests/unit/agent/xid.c -- the XID store (src/agent/xid.c): kernel log
 * line parsing, bus id normalisation, deduplication across NVML and the
 * kernel log, bounded memory, and the tail thread on a real file and FIFO
 * written after the tail started. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent/xid.h"
#include "base/err.h"
#include "base/time.h"

#define SEC ((int64_t)1000000000)

/* ---- parsing ------------------------------------------------------------ */

typedef struct parse_case {
    const char *line;
    const char *bdf; /* NULL: must fail */
    unsigned xid;
} parse_case;

static const parse_case parse_cases[] = {
    {"NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python, GPU has fallen off the bus.", "0000:3b:00", 79},
    {"3,1234,5678901,-;NVRM: Xid (PCI:0000:3B:00): 13, Graphics Exception: ESR 0x405840=0x0", "0000:3b:00",
     13},
    {"4,99,1,-;NVRM: Xid (PCI:0000:cb:00): 13, pid='<unknown>', name=<unknown>, Graphics SM Warp Exception "
     "on "
     "(GPC 7, TPC 7, SM 0): Illegal Instruction Parameter",
     "0000:cb:00", 13},
    {"NVRM: Xid (PCI:0000:01:00 GPU-I:05): 94, pid=7194, Contained: CE User Channel (0x9). RST: No, D-RST: "
     "No",
     "0000:01:00", 94},
    {"NVRM: Xid (PCI:0000:3b:00 GPU-I:01 GPU-CI:02): 31, pid=9, name=a, Ch 00000008, intr 10000000. MMU "
     "Fault",
     "0000:3b:00", 31},
    {"[12345.678901] NVRM: Xid (PCI:0000:18:00): 79, pid=1234, GPU has fallen off the bus.", "0000:18:00",
     79},
    {"Oct 02 10:41:07 srv kernel: NVRM: Xid (PCI:0000:3d:00): 119, pid=0, Timeout waiting for RPC",
     "0000:3d:00", 119},
    {"NVRM: Xid (PCI:10000:01:1f): 48, An uncorrectable double bit error", "10000:01:1f", 48},
    {"NVRM: Xid (0000:02:00): 13, 0003 00000000 0000a297 00001b0c", "0000:02:00", 13},
    {"NVRM: Xid (PCI:0000:02:00.0): 74, NVLink: fatal error", "0000:02:00", 74},
    {"NVRM: Xid (PCI:zz): 1, x NVRM: Xid (PCI:0000:41:00): 45, pid=1, Ch 00000010", "0000:41:00", 45},
    {"6,10,20,-;NVRM: Xid (PCI:0000:81:00): 79, x\n SUBSYSTEM=pci\n DEVICE=+pci:0000:81:00.0", "0000:81:00",
     79},
    {"NVRM: Xid (PCI:0000:3b:00):  8, pid=1", "0000:3b:00", 8},
    /* failures */
    {"NVRM: Xid (PCI:0000:3b:00): 79", NULL, 0},
    {"NVRM: Xid (PCI:0000:3b:00): , pid=1", NULL, 0},
    {"NVRM: Xid (PCI:zz:00): 79, x", NULL, 0},
    {"NVRM: GPU at PCI:0000:18:00.0 has fallen off the bus.", NULL, 0},
    {"NVRM: Xid (PCI:0000:3b:00): 1234567890, x", NULL, 0},
    {"NVRM: Xid (PCI:0000:3b:0", NULL, 0},
    {"NVRM: Xid (PCI:0000:3b:20): 79, x", NULL, 0},
    {"NVRM: Xid (PCI:0000:3b:00 (nested)): 79, x", NULL, 0},
    {"6,1,2,-;hello\n NVRM: Xid (PCI:0000:3b:00): 79, x", NULL, 0},
    {"nvrm: xid (pci:0000:3b:00): 79, x", NULL, 0},
    {"", NULL, 0},
};

static void test_parse_kmsg(void **state) {
    (void)state;
    for (size_t i = 0; i < sizeof parse_cases / sizeof parse_cases[0]; i++) {
        const parse_case *c = &parse_cases[i];
        char bdf[32] = "untouched";
        unsigned xid = 4242;
        int rc = agent_xid_parse_kmsg(c->line, strlen(c->line), bdf, &xid);
        if (c->bdf) {
            if (rc != 0) fail_msg("case %zu should parse: %s", i, c->line);
            assert_string_equal(bdf, c->bdf);
            assert_int_equal(xid, c->xid);
        } else {
            if (rc != BASE_E_PARSE) fail_msg("case %zu should fail: %s", i, c->line);
            assert_string_equal(bdf, "untouched");
            assert_int_equal(xid, 4242);
        }
    }
}

static void test_parse_respects_length(void **state) {
    (void)state;
    const char *line = "NVRM: Xid (PCI:0000:3b:00): 79, pid=1";
    char bdf[32];
    unsigned xid;
    size_t comma = (size_t)(strchr(line, ',') - line);
    assert_int_equal(agent_xid_parse_kmsg(line, comma, bdf, &xid), BASE_E_PARSE);
    assert_int_equal(agent_xid_parse_kmsg(line, comma + 1, bdf, &xid), 0);
    assert_int_equal(xid, 79);
    /* Not NUL-terminated: a copy without the terminator, checked by ASan. */
    size_t n = strlen(line);
    char *copy = malloc(n);
    assert_non_null(copy);
    memcpy(copy, line, n);
    assert_int_equal(agent_xid_parse_kmsg(copy, n, bdf, &xid), 0);
    free(copy);
}

static void test_bdf_normalize(void **state) {
    (void)state;
    static const char *const good[][2] = {
        {"00000000:3B:00.0", "0000:3b:00"},
        {"0000:3b:00.0", "0000:3b:00"},
        {"PCI:0000:3b:00", "0000:3b:00"},
        {"3b:00.0", "0000:3b:00"},
        {"3B:1F", "0000:3b:1f"},
        {"0001:00:00.7", "0001:00:00"},
        {"FFFFFFFF:FF:1F.0", "ffffffff:ff:1f"},
    };
    static const char *const bad[] = {"",
                                      "3b",
                                      "0000:3b:00.9",
                                      "0000:3b:20",
                                      "0000:3b:00 ",
                                      "123456789:00:00",
                                      "0000:100:00",
                                      "PCI:",
                                      "0000:3b:00.",
                                      ":3b:00",
                                      "0000:3b:00:00"};
    char out[32];
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        assert_int_equal(agent_xid_bdf_normalize(good[i][0], strlen(good[i][0]), out), 0);
        assert_string_equal(out, good[i][1]);
    }
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        if (agent_xid_bdf_normalize(bad[i], strlen(bad[i]), out) != BASE_E_PARSE)
            fail_msg("accepted %s", bad[i]);
    }
}

/* ---- the store ------------------------------------------------------------ */

static uint64_t count_of(agent_xid *x, const char *bdf, unsigned xid) {
    agent_xid_count c[AGENT_XID_MAX_CODES];
    size_t n = agent_xid_counts(x, bdf, c, AGENT_XID_MAX_CODES);
    for (size_t i = 0; i < n; i++)
        if (c[i].xid == xid) return c[i].count;
    return 0;
}

static void test_dedup_across_sources(void **state) {
    (void)state;
    agent_xid *x;
    assert_int_equal(agent_xid_new(&x), 0);
    agent_xid_record(x, "00000000:3B:00.0", 79, AGENT_XID_SRC_NVML, 100 * SEC);
    agent_xid_record(x, "PCI:0000:3b:00", 79, AGENT_XID_SRC_KMSG, 100 * SEC + SEC / 2);
    assert_int_equal(count_of(x, "0000:3b:00.0", 79), 1);
    unsigned last = 0;
    assert_int_equal(agent_xid_last(x, "00000000:3B:00.0", &last), 0);
    assert_int_equal(last, 79);

    /* The kernel log first, NVML later: the same. */
    agent_xid_record(x, "0000:3b:00", 48, AGENT_XID_SRC_KMSG, 200 * SEC);
    agent_xid_record(x, "00000000:3B:00.0", 48, AGENT_XID_SRC_NVML, 202 * SEC);
    assert_int_equal(count_of(x, "0000:3b:00", 48), 1);

    /* Outside the window both count. */
    agent_xid_record(x, "00000000:3B:00.0", 31, AGENT_XID_SRC_NVML, 300 * SEC);
    agent_xid_record(x, "0000:3b:00", 31, AGENT_XID_SRC_KMSG, 300 * SEC + AGENT_XID_DEDUP_WINDOW_NS + 1);
    assert_int_equal(count_of(x, "0000:3b:00", 31), 2);

    /* Another GPU or another code never matches. */
    agent_xid_record(x, "00000000:3C:00.0", 79, AGENT_XID_SRC_KMSG, 100 * SEC);
    agent_xid_record(x, "0000:3b:00", 13, AGENT_XID_SRC_KMSG, 100 * SEC);
    assert_int_equal(count_of(x, "0000:3c:00", 79), 1);
    assert_int_equal(count_of(x, "0000:3b:00", 13), 1);
    assert_int_equal(count_of(x, "0000:3b:00", 79), 1);

    agent_xid_stats st;
    agent_xid_stats_get(x, &st);
    assert_int_equal(st.deduplicated, 2);
    assert_int_equal(st.counted[AGENT_XID_SRC_NVML], 2);
    assert_int_equal(st.counted[AGENT_XID_SRC_KMSG], 4);
    assert_int_equal(st.dropped, 0);
    agent_xid_free(x);
}

static void test_consecutive_identical(void **state) {
    (void)state;
    agent_xid *x;
    assert_int_equal(agent_xid_new(&x), 0);
    const char *g = "00000000:07:00.0";
    /* Two genuine XID 13s from NVML, then the kernel's two copies of them. */
    agent_xid_record(x, g, 13, AGENT_XID_SRC_NVML, 10 * SEC);
    agent_xid_record(x, g, 13, AGENT_XID_SRC_NVML, 10 * SEC + 1000);
    assert_int_equal(count_of(x, g, 13), 2);
    agent_xid_record(x, g, 13, AGENT_XID_SRC_KMSG, 10 * SEC + 5000);
    agent_xid_record(x, g, 13, AGENT_XID_SRC_KMSG, 10 * SEC + 6000);
    assert_int_equal(count_of(x, g, 13), 2);
    /* A third from the kernel has nothing left to match. */
    agent_xid_record(x, g, 13, AGENT_XID_SRC_KMSG, 10 * SEC + 7000);
    assert_int_equal(count_of(x, g, 13), 3);
    /* A single source alone: every event counts. */
    for (int i = 0; i < 5; i++) agent_xid_record(x, g, 79, AGENT_XID_SRC_KMSG, 20 * SEC + i);
    assert_int_equal(count_of(x, g, 79), 5);
    agent_xid_free(x);
}

static void test_counts_sorted_and_last(void **state) {
    (void)state;
    agent_xid *x;
    assert_int_equal(agent_xid_new(&x), 0);
    const char *g = "0000:65:00.0";
    unsigned last = 7;
    assert_int_equal(agent_xid_last(x, g, &last), BASE_E_NOTFOUND);
    assert_int_equal(last, 7);
    agent_xid_record(x, g, 79, AGENT_XID_SRC_NVML, 1);
    agent_xid_record(x, g, 13, AGENT_XID_SRC_NVML, 2);
    agent_xid_record(x, g, 31, AGENT_XID_SRC_NVML, 3);
    agent_xid_record(x, g, 13, AGENT_XID_SRC_NVML, 4);
    agent_xid_count c[8];
    assert_int_equal(agent_xid_counts(x, g, c, 8), 3);
    assert_int_equal(c[0].xid, 13);
    assert_int_equal(c[0].count, 2);
    assert_int_equal(c[1].xid, 31);
    assert_int_equal(c[2].xid, 79);
    assert_int_equal(agent_xid_counts(x, g, c, 2), 2);
    assert_int_equal(agent_xid_counts(x, "0000:66:00.0", c, 8), 0);
    assert_int_equal(agent_xid_counts(x, "garbage", c, 8), 0);
    assert_int_equal(agent_xid_last(x, g, &last), 0);
    assert_int_equal(last, 13);
    /* A deduplicated event does not move "last". */
    agent_xid_record(x, g, 79, AGENT_XID_SRC_NVML, 5 * SEC);
    agent_xid_record(x, g, 31, AGENT_XID_SRC_NVML, 5 * SEC);
    agent_xid_record(x, g, 79, AGENT_XID_SRC_KMSG, 5 * SEC);
    assert_int_equal(agent_xid_last(x, g, &last), 0);
    assert_int_equal(last, 31);
    agent_xid_free(x);
}

static void test_bounded(void **state) {
    (void)state;
    agent_xid *x;
    assert_int_equal(agent_xid_new(&x), 0);
    char bdf[32];
    for (unsigned i = 0; i < AGENT_XID_MAX_GPUS + 3; i++) {
        snprintf(bdf, sizeof bdf, "%08x:%02x:00.0", i / 256, i % 256);
        agent_xid_record(x, bdf, 79, AGENT_XID_SRC_NVML, 0);
    }
    agent_xid_stats st;
    agent_xid_stats_get(x, &st);
    assert_int_equal(st.dropped, 3);
    assert_int_equal(st.counted[AGENT_XID_SRC_NVML], AGENT_XID_MAX_GPUS);
    snprintf(bdf, sizeof bdf, "%08x:%02x:00.0", 0, AGENT_XID_MAX_GPUS + 1);
    assert_int_equal(agent_xid_counts(x, bdf, (agent_xid_count[1]){{0}}, 1), 0);

    /* Distinct codes per GPU. */
    for (unsigned c = 0; c < AGENT_XID_MAX_CODES + 5; c++)
        agent_xid_record(x, "0000:00:00.0", 1000 + c, AGENT_XID_SRC_NVML, 0);
    agent_xid_count out[AGENT_XID_MAX_CODES + 5];
    assert_int_equal(agent_xid_counts(x, "0000:00:00.0", out, AGENT_XID_MAX_CODES + 5), AGENT_XID_MAX_CODES);
    agent_xid_stats_get(x, &st);
    /* 79 was already there, so one slot fewer for the new codes. */
    assert_int_equal(st.dropped, 3 + 6);
    /* Known codes keep counting at the cap. */
    agent_xid_record(x, "0000:00:00.0", 79, AGENT_XID_SRC_NVML, 100 * SEC);
    assert_int_equal(count_of(x, "0000:00:00.0", 79), 2);

    /* Many pending events: the oldest is replaced, memory stays fixed. */
    for (int i = 0; i < 10 * AGENT_XID_PENDING; i++)
        agent_xid_record(x, "0000:01:00.0", 13, AGENT_XID_SRC_NVML, 200 * SEC + i);
    assert_int_equal(count_of(x, "0000:01:00.0", 13), 10 * AGENT_XID_PENDING);
    for (int i = 0; i < 10 * AGENT_XID_PENDING; i++)
        agent_xid_record(x, "0000:01:00.0", 13, AGENT_XID_SRC_KMSG, 200 * SEC + i);
    /* Only the AGENT_XID_PENDING newest could still be matched. */
    assert_int_equal(count_of(x, "0000:01:00.0", 13), 20 * AGENT_XID_PENDING - AGENT_XID_PENDING);
    agent_xid_free(x);
}

static void test_rejected(void **state) {
    (void)state;
    agent_xid *x;
    assert_int_equal(agent_xid_new(&x), 0);
    agent_xid_record(x, "not a bus id", 79, AGENT_XID_SRC_NVML, 0);
    agent_xid_record(x, NULL, 79, AGENT_XID_SRC_NVML, 0);
    agent_xid_record(x, "0000:3b:00.0", 79, 0, 0);
    agent_xid_record(x, "0000:3b:00.0", 79, 3, 0);
    agent_xid_record(NULL, "0000:3b:00.0", 79, AGENT_XID_SRC_NVML, 0);
    agent_xid_stats st;
    agent_xid_stats_get(x, &st);
    assert_int_equal(st.rejected, 4);
    assert_int_equal(count_of(x, "0000:3b:00.0", 79), 0);
    agent_xid_free(x);
    agent_xid_free(NULL);
}

typedef struct hammer_arg {
    agent_xid *x;
    int source;
} hammer_arg;

static void *hammer(void *p) {
    hammer_arg *a = p;
    for (int i = 0; i < 5000; i++)
        agent_xid_record(a->x, "0000:3b:00.0", (unsigned)(i % 3), a->source,
                         (int64_t)i * 3 * AGENT_XID_DEDUP_WINDOW_NS);
    return NULL;
}

static void test_threads(void **state) {
    (void)state;
    agent_xid *x;
    assert_int_equal(agent_xid_new(&x), 0);
    /* Both sources report the same 5000 events, each far apart in time:
     * whatever the interleaving, each pair counts exactly once. */
    hammer_arg a = {x, AGENT_XID_SRC_NVML}, b = {x, AGENT_XID_SRC_KMSG};
    pthread_t ta, tb;
    assert_int_equal(pthread_create(&ta, NULL, hammer, &a), 0);
    assert_int_equal(pthread_create(&tb, NULL, hammer, &b), 0);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    uint64_t total = 0;
    for (unsigned c = 0; c < 3; c++) total += count_of(x, "0000:3b:00.0", c);
    agent_xid_stats st;
    agent_xid_stats_get(x, &st);
    assert_int_equal(total + st.deduplicated, 10000);
    assert_true(total >= 5000);
    agent_xid_free(x);
}

static void test_messages(void **state) {
    (void)state;
    assert_string_equal(agent_xid_message(79), "GPU has fallen off the bus");
    assert_string_equal(agent_xid_message(13), "Graphics Engine Exception");
    assert_string_equal(agent_xid_message(31), "GPU memory page fault");
    assert_string_equal(agent_xid_message(48), "Double Bit ECC Error");
    assert_string_equal(agent_xid_message(119), "GSP RPC Timeout");
    assert_string_equal(agent_xid_message(999), "");
    assert_string_equal(agent_xid_message(100000), "");
    static const unsigned required[] = {13,  31,  32,  43,  45,  48,  61,  62,  63,  64,
                                        68,  69,  74,  79,  92,  94,  95,  109, 119, 120,
                                        121, 140, 143, 144, 145, 146, 147, 148, 149, 150};
    for (size_t i = 0; i < sizeof required / sizeof required[0]; i++)
        if (agent_xid_message(required[i])[0] == '\0') fail_msg("no text for XID %u", required[i]);
}

/* ---- the tail thread ------------------------------------------------------------ */

typedef struct tmpdir {
    char dir[64];
    char path[128];
} tmpdir;

static void tmp_make(tmpdir *t, const char *name) {
    snprintf(t->dir, sizeof t->dir, "/tmp/kelvin-xid-XXXXXX");
    assert_non_null(mkdtemp(t->dir));
    snprintf(t->path, sizeof t->path, "%s/%s", t->dir, name);
}

static void tmp_remove(tmpdir *t) {
    unlink(t->path);
    rmdir(t->dir);
}

static void write_all(int fd, const char *s) {
    size_t n = strlen(s);
    while (n > 0) {
        ssize_t w = write(fd, s, n);
        assert_true(w > 0);
        s += w;
        n -= (size_t)w;
    }
}

/* Waits (up to 5 s) until the GPU's count of xid reaches want. */
static int wait_count(agent_xid *x, const char *bdf, unsigned xid, uint64_t want) {
    int64_t deadline = base_mono_ns() + 5 * SEC;
    while (base_mono_ns() < deadline) {
        if (count_of(x, bdf, xid) >= want) return 1;
        usleep(10000);
    }
    return 0;
}

static void test_tail_file(void **state) {
    (void)state;
    tmpdir t;
    tmp_make(&t, "kern.log");
    int fd = open(t.path, O_WRONLY | O_CREAT | O_APPEND, 0600);
    assert_true(fd >= 0);
    /* History: must not be counted. The last line has no newline yet. */
    write_all(fd, "Jan 1 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off the bus.\n"
                  "Jan 1 kernel: NVRM: Xid (PCI:0000:3b:00): 13, pid=1, Graphics Exc");

    agent_xid *x;
    assert_int_equal(agent_xid_new(&x), 0);
    char err[256] = "";
    assert_int_equal(agent_xid_kmsg_start(x, t.path, err, sizeof err), 0);
    assert_int_equal(agent_xid_kmsg_start(x, t.path, err, sizeof err), BASE_E_EXISTS);
    agent_xid_stats st;
    agent_xid_stats_get(x, &st);
    assert_int_equal(st.kmsg_running, 1);

    /* The end of the old line, then a new line in two pieces. */
    write_all(fd, "eption\n");
    write_all(fd, "Jan 2 kernel: NVRM: Xid (PCI:0000:3b:00): 4");
    usleep(50000);
    write_all(fd, "8, pid=2, An uncorrectable double bit error\nJan 2 kernel: unrelated\n");
    assert_true(wait_count(x, "00000000:3B:00.0", 48, 1));
    write_all(fd, "Jan 2 kernel: NVRM: Xid (PCI:0000:3b:00): 48, pid=3, again\n");
    assert_true(wait_count(x, "00000000:3B:00.0", 48, 2));
    assert_int_equal(count_of(x, "0000:3b:00", 79), 0);
    assert_int_equal(count_of(x, "0000:3b:00", 13), 0);
    agent_xid_stats_get(x, &st);
    assert_int_equal(st.kmsg_xids, 2);
    assert_int_equal(st.kmsg_records, 3);
    assert_int_equal(st.counted[AGENT_XID_SRC_KMSG], 2);

    /* A truncated (copytruncate-rotated) file is read from its start. */
    assert_int_equal(ftruncate(fd, 0), 0);
    usleep(2 * 200 * 1000 + 100000);
    write_all(fd, "NVRM: Xid (PCI:0000:3b:00): 79, pid=4, GPU has fallen off the bus.\n");
    assert_true(wait_count(x, "0000:3b:00", 79, 1));

    int64_t t0 = base_mono_ns();
    agent_xid_free(x);
    assert_true(base_mono_ns() - t0 < SEC);
    close(fd);
    tmp_remove(&t);
}

static void test_tail_fifo_dedup_and_stop(void **state) {
    (void)state;
    tmpdir t;
    tmp_make(&t, "kmsg");
    assert_int_equal(mkfifo(t.path, 0600), 0);

    agent_xid *x;
    assert_int_equal(agent_xid_new(&x), 0);
    char err[256] = "";
    assert_int_equal(agent_xid_kmsg_start(x, t.path, err, sizeof err), 0);
    int fd = open(t.path, O_WRONLY);
    assert_true(fd >= 0);

    /* NVML saw it first; the kernel's record of it must not count again. */
    agent_xid_record(x, "00000000:3B:00.0", 79, AGENT_XID_SRC_NVML, base_mono_ns());
    write_all(fd, "3,100,123456,-;NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off the bus.\n"
                  " SUBSYSTEM=pci\n"
                  "3,101,123457,-;NVRM: Xid (PCI:0000:3b:00 GPU-I:01): 31, pid=2, name=app, Ch 00000008\n");
    assert_true(wait_count(x, "0000:3b:00", 31, 1));
    agent_xid_stats st;
    agent_xid_stats_get(x, &st);
    assert_int_equal(st.kmsg_xids, 2);
    assert_int_equal(st.deduplicated, 1);
    assert_int_equal(count_of(x, "0000:3b:00", 79), 1);

    /* The thread is blocked in poll() on a FIFO with a live writer: free
     * must still return promptly. */
    int64_t t0 = base_mono_ns();
    agent_xid_free(x);
    assert_true(base_mono_ns() - t0 < SEC / 2);
    close(fd);

    /* Again with no writer (the thread polls idle) and stale data queued
     * before the start, which must be ignored. */
    int rw = open(t.path, O_RDWR);
    assert_true(rw >= 0);
    write_all(rw, "NVRM: Xid (PCI:0000:3b:00): 79, pid=1, old\n");
    assert_int_equal(agent_xid_new(&x), 0);
    assert_int_equal(agent_xid_kmsg_start(x, t.path, err, sizeof err), 0);
    write_all(rw, "NVRM: Xid (PCI:0000:3b:00): 43, pid=1, new\n");
    assert_true(wait_count(x, "0000:3b:00", 43, 1));
    assert_int_equal(count_of(x, "0000:3b:00", 79), 0);
    close(rw);
    usleep(100000);
    t0 = base_mono_ns();
    agent_xid_free(x);
    assert_true(base_mono_ns() - t0 < SEC / 2);
    tmp_remove(&t);
}

static void test_tail_open_fails(void **state) {
    (void)state;
    agent_xid *x;
    assert_int_equal(agent_xid_new(&x), 0);
    char err[256] = "";
    assert_int_equal(agent_xid_kmsg_start(x, "/nonexistent/kmsg", err, sizeof err), BASE_E_IO);
    assert_non_null(strstr(err, "/nonexistent/kmsg"));
    agent_xid_stats st;
    agent_xid_stats_get(x, &st);
    assert_int_equal(st.kmsg_running, 0);
    agent_xid_free(x);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_kmsg),
        cmocka_unit_test(test_parse_respects_length),
        cmocka_unit_test(test_bdf_normalize),
        cmocka_unit_test(test_dedup_across_sources),
        cmocka_unit_test(test_consecutive_identical),
        cmocka_unit_test(test_counts_sorted_and_last),
        cmocka_unit_test(test_bounded),
        cmocka_unit_test(test_rejected),
        cmocka_unit_test(test_threads),
        cmocka_unit_test(test_messages),
        cmocka_unit_test(test_tail_file),
        cmocka_unit_test(test_tail_fifo_dedup_and_stop),
        cmocka_unit_test(test_tail_open_fails),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
