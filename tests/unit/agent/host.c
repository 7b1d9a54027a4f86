/* tests/unit/agent/host.c -- the host collector (src/agent/host*.c).
 *
 * What is checked:
 *  - the whole output for the fixture tree tests/fixtures/host equals
 *    tests/fixtures/host/expected.prom line for line (order aside): made
 *    from node_exporter 1.5's own output on the same tree, so names, types,
 *    HELP, label sets, exclusions and every float match it to the digit;
 *  - spot checks that say why some of those values are what they are;
 *  - node_exporter's default exclusions and the small parsers, case by case;
 *  - the CPU counters' jump-back guard;
 *  - devices appearing and disappearing between cycles (tables rebuilt,
 *    descriptors reopened or closed), files going missing, an empty tree;
 *  - a statfs that hangs: the cycle stays bounded, the mount is reported
 *    as node_exporter reports a stuck mount, and recovers;
 *  - the descriptor cap, and no heap allocation in the steady state;
 *  - the cost of a cycle (printed; bounded loosely so the test can fail).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent/catalog.h"
#include "agent/host.h"
#include "agent/host_int.h"
#include "base/err.h"
#include "expo/expo.h"

/* ---- heap allocation counting -------------------------------------------- */

static atomic_int counting;
static atomic_long n_allocs;

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
void __sanitizer_install_malloc_and_free_hooks(void (*malloc_hook)(const volatile void *, size_t),
                                               void (*free_hook)(const volatile void *));
static void on_malloc(const volatile void *p, size_t n) {
    (void)p;
    (void)n;
    if (atomic_load(&counting)) atomic_fetch_add(&n_allocs, 1);
}
static void on_free(const volatile void *p) {
    (void)p;
}
static void hooks_install(void) {
    __sanitizer_install_malloc_and_free_hooks(on_malloc, on_free);
}
#else
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
void *malloc(size_t n);
void *calloc(size_t a, size_t b);
void *realloc(void *p, size_t n);
void *malloc(size_t n) {
    if (atomic_load(&counting)) atomic_fetch_add(&n_allocs, 1);
    return __libc_malloc(n);
}
void *calloc(size_t a, size_t b) {
    if (atomic_load(&counting)) atomic_fetch_add(&n_allocs, 1);
    return __libc_calloc(a, b);
}
void *realloc(void *p, size_t n) {
    if (atomic_load(&counting)) atomic_fetch_add(&n_allocs, 1);
    return __libc_realloc(p, n);
}
static void hooks_install(void) {}
#endif

/* ---- helpers ------------------------------------------------------------ */

static char fixture[4096];

static void fixture_paths(char *proc, char *sys, char *root, size_t n) {
    snprintf(proc, n, "%s/proc", fixture);
    snprintf(sys, n, "%s/sys", fixture);
    snprintf(root, n, "%s/root", fixture);
}

/* The fake statfs: fixed numbers for paths that exist; blocks on paths
 * ending in block_suffix until released. */
static pthread_mutex_t fk_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t fk_cv = PTHREAD_COND_INITIALIZER;
static const char *block_suffix;
static int blocked_now, release_gen;
static atomic_int fake_calls;

static int fake_statfs(const char *path, struct statfs *b) {
    atomic_fetch_add(&fake_calls, 1);
    size_t n = strlen(path);
    pthread_mutex_lock(&fk_mu);
    if (block_suffix && n >= strlen(block_suffix) &&
        strcmp(path + n - strlen(block_suffix), block_suffix) == 0) {
        int gen = release_gen;
        blocked_now++;
        while (gen == release_gen) pthread_cond_wait(&fk_cv, &fk_mu);
        blocked_now--;
    }
    pthread_mutex_unlock(&fk_mu);
    struct stat st;
    if (stat(path, &st) != 0) return -1;
    memset(b, 0, sizeof *b);
    b->f_bsize = 4096;
    b->f_blocks = 2621440;
    b->f_bfree = 1310720;
    b->f_bavail = 1048576;
    b->f_files = 655360;
    b->f_ffree = 600000;
    return 0;
}

static void release_blocked(void) {
    pthread_mutex_lock(&fk_mu);
    release_gen++;
    pthread_cond_broadcast(&fk_cv);
    pthread_mutex_unlock(&fk_mu);
}

static agent_host *new_host(const char *proc, const char *sys, const char *root) {
    agent_host_opts o = {proc, sys, root};
    agent_host *h = NULL;
    char err[256] = "";
    int rc = agent_host_new(&o, &h, err, sizeof err);
    if (rc != 0) fprintf(stderr, "agent_host_new: %s\n", err);
    assert_int_equal(rc, 0);
    agent_host_set_statfs(h, fake_statfs, 0);
    return h;
}

static agent_host *fixture_host(void) {
    char p[4200], s[4200], r[4200];
    fixture_paths(p, s, r, sizeof p);
    return new_host(p, s, r);
}

/* One cycle rendered as text; caller frees. */
static char *cycle_text(agent_host *h, expo_mset *ms) {
    expo_mset_reset(ms);
    assert_int_equal(agent_host_collect(h, ms), 0);
    base_buf out = BASE_BUF_INIT;
    expo_mset *sets[1] = {ms};
    assert_int_equal(expo_write(sets, 1, EXPO_FMT_TEXT, &out), 0);
    char *t = base_buf_steal(&out, NULL);
    return t ? t : strdup("");
}

static char *run_once(agent_host *h) {
    expo_mset ms;
    expo_mset_init(&ms);
    char *t = cycle_text(h, &ms);
    expo_mset_free(&ms);
    return t;
}

/* The line for a series (name plus exact label text), or NULL. */
static const char *find_line(const char *text, const char *series) {
    size_t n = strlen(series);
    for (const char *p = text; p && *p;) {
        if (strncmp(p, series, n) == 0 && p[n] == ' ') return p;
        p = strchr(p, '\n');
        if (p) p++;
    }
    return NULL;
}

static int has_series(const char *text, const char *series) {
    return find_line(text, series) != NULL;
}

/* The value of a series as written (Go formatting), "" when absent. */
static const char *value_of(const char *text, const char *series) {
    static char buf[64];
    const char *l = find_line(text, series);
    if (!l) return "";
    l += strlen(series) + 1;
    size_t i = 0;
    while (l[i] && l[i] != '\n' && i + 1 < sizeof buf) buf[i] = l[i], i++;
    buf[i] = '\0';
    return buf;
}

static int has_family(const char *text, const char *name) {
    char h[256];
    snprintf(h, sizeof h, "# TYPE %s ", name);
    return strstr(text, h) != NULL;
}

static size_t count_prefix(const char *text, const char *prefix) {
    size_t c = 0, n = strlen(prefix);
    for (const char *p = text; p && *p;) {
        if (strncmp(p, prefix, n) == 0) c++;
        p = strchr(p, '\n');
        if (p) p++;
    }
    return c;
}

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Splits text into lines (in place), dropping empty ones and, when skip is
 * set, lines naming a skipped family and comments other than HELP/TYPE. */
static size_t split_lines(char *text, char **out, size_t max, int skip) {
    static const char *const skipped[] = {"node_time_seconds", "node_time_zone_offset_seconds",
                                          "node_uname_info", NULL};
    size_t n = 0;
    for (char *p = strtok(text, "\n"); p; p = strtok(NULL, "\n")) {
        if (!*p) continue;
        if (skip) {
            const char *name = p;
            if (p[0] == '#') {
                if (strncmp(p, "# HELP ", 7) != 0 && strncmp(p, "# TYPE ", 7) != 0) continue;
                name = p + 7;
            }
            int drop = 0;
            for (const char *const *s = skipped; *s; s++) {
                size_t l = strlen(*s);
                if (strncmp(name, *s, l) == 0 && (name[l] == ' ' || name[l] == '{')) drop = 1;
            }
            if (drop) continue;
        }
        assert_true(n < max);
        out[n++] = p;
    }
    qsort(out, n, sizeof *out, cmp_str);
    return n;
}

static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    assert_non_null(b);
    assert_int_equal(fread(b, 1, (size_t)n, f), (size_t)n);
    b[n] = '\0';
    fclose(f);
    return b;
}

/* ---- temp trees ---------------------------------------------------------- */

static char tmproot[256];

static void mkdirs(const char *path) {
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            mkdir(buf, 0755);
            *p = '/';
        }
    mkdir(buf, 0755);
}

/* Writes rel under the temp root in place (same inode if it exists, as
 * sysfs and procfs values change). */
static void put(const char *rel, const char *fmt, ...) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", tmproot, rel);
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", path);
    *strrchr(dir, '/') = '\0';
    mkdirs(dir);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    assert_true(fd >= 0);
    va_list ap;
    va_start(ap, fmt);
    char body[8192];
    int n = vsnprintf(body, sizeof body, fmt, ap);
    va_end(ap);
    assert_int_equal(write(fd, body, (size_t)n), n);
    close(fd);
}

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(p);
}

static void rm_tree(const char *rel) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", tmproot, rel);
    nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void tmp_tree(void) {
    snprintf(tmproot, sizeof tmproot, "/tmp/kelvin-host-test-XXXXXX");
    assert_non_null(mkdtemp(tmproot));
    char p[512];
    snprintf(p, sizeof p, "%s/proc", tmproot);
    mkdirs(p);
    snprintf(p, sizeof p, "%s/sys", tmproot);
    mkdirs(p);
    snprintf(p, sizeof p, "%s/root", tmproot);
    mkdirs(p);
}

static void tmp_tree_done(void) {
    nftw(tmproot, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    tmproot[0] = '\0';
}

static agent_host *tmp_host(void) {
    char p[512], s[512], r[512];
    snprintf(p, sizeof p, "%s/proc", tmproot);
    snprintf(s, sizeof s, "%s/sys", tmproot);
    snprintf(r, sizeof r, "%s/root", tmproot);
    return new_host(p, s, r);
}

/* ---- the fixture tree ------------------------------------------------------ */

static void test_fixture_matches_node_exporter(void **state) {
    (void)state;
    agent_host *h = fixture_host();
    expo_mset ms;
    expo_mset_init(&ms);
    char *ours = NULL;
    for (int i = 0; i < 3; i++) { /* the steady state, not just the first cycle */
        free(ours);
        ours = cycle_text(h, &ms);
    }
    char path[4300];
    snprintf(path, sizeof path, "%s/expected.prom", fixture);
    char *exp = slurp(path);
    enum { MAX = 4096 };
    char **a = malloc(MAX * sizeof *a), **b = malloc(MAX * sizeof *b);
    char *ours_copy = strdup(ours);
    size_t na = split_lines(ours_copy, a, MAX, 1), nb = split_lines(exp, b, MAX, 1);
    size_t i = 0, j = 0, diffs = 0;
    while (i < na || j < nb) {
        int c = i == na ? 1 : j == nb ? -1 : strcmp(a[i], b[j]);
        if (c == 0) {
            i++, j++;
            continue;
        }
        if (diffs++ < 40)
            fprintf(stderr, "%s %s\n", c < 0 ? "unexpected:" : "missing:   ", c < 0 ? a[i] : b[j]);
        if (c < 0)
            i++;
        else
            j++;
    }
    assert_int_equal(diffs, 0);
    assert_true(na > 1000);

    /* the host-dependent families are there and right */
    struct utsname u;
    assert_int_equal(uname(&u), 0);
    char want[1024];
    snprintf(want, sizeof want,
             "node_uname_info{domainname=\"%s\",machine=\"%s\",nodename=\"%s\",release=\"%s\"", u.domainname,
             u.machine, u.nodename, u.release);
    assert_non_null(strstr(ours, want));
    const char *t = value_of(ours, "node_time_seconds");
    double now = (double)time(NULL);
    assert_true(*t && strtod(t, NULL) > now - 5 && strtod(t, NULL) < now + 5);
    assert_true(has_family(ours, "node_time_zone_offset_seconds"));
    free(a);
    free(b);
    free(ours_copy);
    free(exp);
    free(ours);
    expo_mset_free(&ms);
    agent_host_free(h);
}

/* Why some of the expected values are what they are. */
static void test_fixture_values(void **state) {
    (void)state;
    agent_host *h = fixture_host();
    char *t = run_once(h);
    /* /proc/stat cpu1: 250094 user ticks at USER_HZ 100; guest 3, guest_nice 1 */
    assert_string_equal(value_of(t, "node_cpu_seconds_total{cpu=\"1\",mode=\"user\"}"), "2500.94");
    assert_string_equal(value_of(t, "node_cpu_guest_seconds_total{cpu=\"1\",mode=\"user\"}"), "0.03");
    assert_string_equal(value_of(t, "node_cpu_guest_seconds_total{cpu=\"1\",mode=\"nice\"}"), "0.01");
    assert_string_equal(value_of(t, "node_boot_time_seconds"), "1.7e+09");
    assert_string_equal(value_of(t, "node_procs_blocked"), "1");
    /* isolated 1,3; throttles counted once per core and per package */
    assert_string_equal(value_of(t, "node_cpu_isolated{cpu=\"3\"}"), "1");
    assert_false(has_series(t, "node_cpu_isolated{cpu=\"0\"}"));
    assert_string_equal(value_of(t, "node_cpu_core_throttles_total{core=\"1\",package=\"0\"}"), "7");
    assert_int_equal(count_prefix(t, "node_cpu_package_throttles_total{"), 1);
    /* meminfo: kB x 1024, "(anon)" -> "_anon", HugePages_* unscaled */
    assert_string_equal(value_of(t, "node_memory_MemTotal_bytes"), "2.70192345088e+11");
    assert_string_equal(value_of(t, "node_memory_Active_anon_bytes"), "2.15605248e+08");
    assert_string_equal(value_of(t, "node_memory_HugePages_Total"), "16");
    /* pressure: microseconds, divided twice as node_exporter does */
    assert_string_equal(value_of(t, "node_pressure_cpu_waiting_seconds_total"), "3023.8701269999997");
    assert_false(has_family(t, "node_pressure_cpu_stalled_seconds_total"));
    /* vmstat: only the default fields */
    assert_string_equal(value_of(t, "node_vmstat_pgmajfault"), "1.072139e+06");
    assert_false(has_family(t, "node_vmstat_pgfree"));
    assert_false(has_family(t, "node_vmstat_thp_fault_alloc"));
    /* netstat: default fields only, untyped */
    assert_string_equal(value_of(t, "node_netstat_Tcp_RetransSegs"), "5");
    assert_false(has_family(t, "node_netstat_Tcp_MaxConn"));
    assert_false(has_family(t, "node_netstat_TcpExt_TCPOFODrop"));
    assert_non_null(strstr(t, "# TYPE node_netstat_Icmp6_InMsgs untyped\n"));
    /* sockstat: mem in pages, mem_bytes x page size */
    char want[64];
    snprintf(want, sizeof want, "%ld", 17 * sysconf(_SC_PAGESIZE));
    assert_string_equal(value_of(t, "node_sockstat_TCP_mem_bytes"), want);
    /* netdev: lo excluded; netclass keeps it */
    assert_false(has_series(t, "node_network_receive_bytes_total{device=\"lo\"}"));
    assert_true(has_series(t, "node_network_up{device=\"lo\"}"));
    assert_string_equal(value_of(t, "node_network_receive_nohandler_total{device=\"eth0\"}"), "42");
    assert_string_equal(value_of(t, "node_network_flags{device=\"eth0\"}"), "4099"); /* 0x1003 */
    assert_string_equal(value_of(t, "node_network_speed_bytes{device=\"docker0\"}"), "-125000");
    assert_false(has_series(t, "node_network_speed_bytes{device=\"lo\"}"));
    assert_false(has_series(t, "node_network_up{device=\"bonding_masters\"}"));
    /* diskstats: partitions and loop devices excluded; fields as the line has them */
    assert_false(has_series(t, "node_disk_io_now{device=\"sda1\"}"));
    assert_false(has_series(t, "node_disk_io_now{device=\"loop0\"}"));
    assert_false(has_series(t, "node_disk_io_now{device=\"nvme0n1p1\"}"));
    assert_string_equal(value_of(t, "node_disk_write_time_seconds_total{device=\"dm-0\"}"),
                        "7.890000000000001");
    assert_false(has_series(t, "node_disk_discards_completed_total{device=\"dm-0\"}")); /* 14-field line */
    assert_true(has_series(t, "node_disk_discards_completed_total{device=\"nvme0n1\"}"));
    assert_false(has_series(t, "node_disk_flush_requests_total{device=\"nvme0n1\"}")); /* 18-field line */
    assert_string_equal(value_of(t, "node_disk_read_bytes_total{device=\"sr0\"}"), "49152");
    /* filesystem: exclusions, \040, ro, failed statfs */
    assert_true(has_series(
        t, "node_filesystem_readonly{device=\"/dev/nvme0n1p1\",fstype=\"xfs\",mountpoint=\"/data\"}"));
    assert_string_equal(
        value_of(t,
                 "node_filesystem_readonly{device=\"/dev/nvme0n1p1\",fstype=\"xfs\",mountpoint=\"/data\"}"),
        "1");
    assert_true(has_series(t, "node_filesystem_size_bytes{device=\"/dev/mapper/vg0-scratch\",fstype=\"ext4\","
                              "mountpoint=\"/scratch space\"}"));
    assert_string_equal(
        value_of(t,
                 "node_filesystem_device_error{device=\"/dev/sdz1\",fstype=\"ext4\",mountpoint=\"/gone\"}"),
        "1");
    assert_false(has_series(
        t, "node_filesystem_size_bytes{device=\"/dev/sdz1\",fstype=\"ext4\",mountpoint=\"/gone\"}"));
    assert_null(strstr(t, "mountpoint=\"/run\""));
    assert_null(strstr(t, "mountpoint=\"/mnt/nfs\""));
    assert_null(strstr(t, "fstype=\"overlay\""));
    assert_null(strstr(t, "fstype=\"proc\""));
    assert_int_equal(count_prefix(t, "node_filesystem_device_error{device=\"/dev/sda1\""),
                     1); /* listed twice */
    /* infiniband: data counters x 4, N/A counters left out, legacy counters_ext */
    assert_string_equal(
        value_of(t, "node_infiniband_port_data_received_bytes_total{device=\"mlx4_0\",port=\"1\"}"), "492");
    assert_string_equal(
        value_of(t, "node_infiniband_legacy_data_received_bytes_total{device=\"mlx4_0\",port=\"1\"}"),
        "4000");
    assert_false(has_series(t, "node_infiniband_port_transmit_wait_total{device=\"mlx5_1\",port=\"1\"}"));
    assert_string_equal(value_of(t, "node_infiniband_rate_bytes_per_second{device=\"mlx5_1\",port=\"1\"}"),
                        "3.125e+08");
    assert_string_equal(value_of(t, "node_infiniband_state_id{device=\"mlx5_1\",port=\"1\"}"), "1");
    /* hwmon: chip from the device path, scaling, raw labels, garbage skipped */
    assert_string_equal(value_of(t, "node_hwmon_temp_celsius{chip=\"platform_coretemp_0\",sensor=\"temp3\"}"),
                        "44.5");
    assert_string_equal(value_of(t, "node_hwmon_temp_max_celsius{chip=\"nvme_nvme0\",sensor=\"temp1\"}"),
                        "84.85000000000001");
    assert_string_equal(
        value_of(t, "node_hwmon_power_average_watt{chip=\"lnxsybus:00_acpi000d:00\",sensor=\"power1\"}"),
        "345");
    assert_true(has_series(
        t, "node_hwmon_sensor_label{chip=\"platform_coretemp_0\",label=\"Package id 0\",sensor=\"temp1\"}"));
    assert_true(has_series(t, "node_hwmon_chip_names{chip=\"acpitz\",chip_name=\"acpitz\"}"));
    assert_false(has_series(t, "node_hwmon_fan_rpm{chip=\"platform_nct6775_656\",sensor=\"fan3\"}"));
    assert_non_null(strstr(t, "# HELP node_hwmon_pwm Hardware monitor pwm element \n"));
    free(t);
    agent_host_free(h);
}

/* ---- the catalog --------------------------------------------------------------- */

static void test_catalog(void **state) {
    (void)state;
    for (int i = 0; i < HOST_M__COUNT; i++) {
        const agent_metric *m = &agent__host_metrics[i];
        if (!m->name || strncmp(m->name, "node_", 5) != 0) fail_msg("entry %d has no node_ name", i);
        for (const char *c = m->name; *c; c++)
            if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
                  *c == '_'))
                fail_msg("%s: bad name", m->name);
        if (!m->help || !*m->help || !m->source || !*m->source || !m->labels || !m->unit)
            fail_msg("%s: empty field", m->name);
        if (m->type == EXPO_COUNTER && !strstr(m->name, "_total"))
            fail_msg("%s: counter without _total", m->name);
        for (int j = 0; j < i; j++)
            if (strcmp(agent__host_metrics[j].name, m->name) == 0) fail_msg("%s twice", m->name);
        /* the one catalog finds it, in the host section */
        assert_ptr_equal(agent_catalog_find(m->name), m);
    }
    assert_ptr_equal(agent_catalog_host.metrics, agent__host_metrics);
    assert_int_equal(agent_catalog_host.count, HOST_M__COUNT);
}

/* ---- parsers and exclusions -------------------------------------------------- */

static void test_exclusions(void **state) {
    (void)state;
    static const struct {
        const char *s;
        int want;
    } disks[] = {{"sda", 0},      {"sda1", 1},    {"sdaa1", 0},     {"xvda1", 1},       {"xvda", 0},
                 {"vdb12", 1},    {"hdc3", 1},    {"loop0", 1},     {"loop", 0},        {"ram15", 1},
                 {"fd0", 1},      {"nvme0n1", 0}, {"nvme0n1p1", 1}, {"nvme10n12p3", 1}, {"nvmen1p1", 0},
                 {"nvme0n1p", 0}, {"dm-0", 0},    {"md127", 0},     {"sr0", 0},         {"mmcblk0p1", 0},
                 {"zram0", 0},    {"sda1x", 0}};
    for (size_t i = 0; i < sizeof disks / sizeof disks[0]; i++)
        if (agent__host_disk_excluded(disks[i].s, strlen(disks[i].s)) != disks[i].want)
            fail_msg("disk %s", disks[i].s);
    static const struct {
        const char *s;
        int want;
    } mps[] = {{"/", 0},
               {"/dev", 1},
               {"/dev/shm", 1},
               {"/devices", 0},
               {"/run/user/1", 1},
               {"/running", 0},
               {"/sys/fs/cgroup", 1},
               {"/mnt", 1},
               {"/mnt2", 0},
               {"/media/usb", 1},
               {"/var/lib/docker", 0},
               {"/var/lib/docker/", 0},
               {"/var/lib/docker/overlay2/x/merged", 1},
               {"/var/lib/containers/storage/o", 1},
               {"/var/lib/kubelet/pods/x", 0},
               {"/home", 0}};
    for (size_t i = 0; i < sizeof mps / sizeof mps[0]; i++)
        if (agent__host_mountpoint_excluded(mps[i].s, strlen(mps[i].s)) != mps[i].want)
            fail_msg("mount point %s", mps[i].s);
    assert_true(agent__host_fstype_excluded("cgroup2", 7));
    assert_true(agent__host_fstype_excluded("tracefs", 7));
    assert_false(agent__host_fstype_excluded("cgroup3", 7));
    assert_false(agent__host_fstype_excluded("tmpfs", 5));
    assert_false(agent__host_fstype_excluded("nfs4", 4));
    static const struct {
        const char *s;
        int want;
    } ns[] = {{"Tcp_InErrs", 1},
              {"Udp_InErrors", 1},
              {"UdpLite6_InErrors", 1},
              {"Ip_Forwarding", 1},
              {"Ip_DefaultTTL", 0},
              {"IpExt_InOctets", 1},
              {"Ip6_OutOctets", 1},
              {"IpExt_InMcastOctets", 0},
              {"Icmp_InMsgs", 1},
              {"Icmp6_OutMsgs", 1},
              {"Icmp_InDestUnreachs", 0},
              {"TcpExt_ListenDrops", 1},
              {"TcpExt_SyncookiesSent", 1},
              {"TcpExt_TCPSynRetrans", 1},
              {"TcpExt_TCPOFODrop", 0},
              {"Tcp_CurrEstab", 1},
              {"Tcp_MaxConn", 0},
              {"Udp6_NoPorts", 1},
              {"UdpLite_InDatagrams", 0},
              {"Udp_IgnoredMulti", 0}};
    for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++)
        if (agent__host_netstat_field_wanted(ns[i].s, strlen(ns[i].s)) != ns[i].want)
            fail_msg("netstat %s", ns[i].s);
    static const struct {
        const char *s;
        int want;
    } vm[] = {{"pgfault", 1},         {"pgmajfault", 1},    {"pgpgin", 1},
              {"pswpout", 1},         {"oom_kill", 1},      {"pgfree", 0},
              {"thp_fault_alloc", 0}, {"nr_free_pages", 0}, {"pgscan_kswapd", 0}};
    for (size_t i = 0; i < sizeof vm / sizeof vm[0]; i++)
        if (agent__host_vmstat_field_wanted(vm[i].s, strlen(vm[i].s)) != vm[i].want)
            fail_msg("vmstat %s", vm[i].s);
}

static void test_small_parsers(void **state) {
    (void)state;
    int64_t v;
    assert_int_equal(agent__host_parse_int_base0((base_str){"0x1003", 6}, &v), 0);
    assert_int_equal(v, 4099);
    assert_int_equal(agent__host_parse_int_base0((base_str){"-1", 2}, &v), 0);
    assert_int_equal(v, -1);
    assert_int_equal(agent__host_parse_int_base0((base_str){"010", 3}, &v), 0);
    assert_int_equal(v, 8);
    assert_int_equal(agent__host_parse_int_base0((base_str){"0", 1}, &v), 0);
    assert_int_equal(v, 0);
    assert_int_not_equal(agent__host_parse_int_base0((base_str){"08", 2}, &v), 0);
    assert_int_not_equal(agent__host_parse_int_base0((base_str){"", 0}, &v), 0);
    assert_int_not_equal(agent__host_parse_int_base0((base_str){"0x", 2}, &v), 0);
    assert_int_equal(agent__host_parse_int_base0((base_str){"9223372036854775808", 19}, &v), BASE_E_RANGE);

    char out[64];
    assert_int_equal(agent__host_hwmon_clean("Package id 0", 12, out, sizeof out), 12);
    assert_string_equal(out, "package_id_0");
    agent__host_hwmon_clean("__Core.0-x__\n", 13, out, sizeof out);
    assert_string_equal(out, "core_0_x");
    agent__host_hwmon_clean("0000:00:01.3", 12, out, sizeof out);
    assert_string_equal(out, "0000:00:01_3");

    base_str type, prop;
    int num;
    assert_true(agent__host_hwmon_split("temp1_input", &type, &num, &prop));
    assert_true(base_str_eqc(type, "temp") && num == 1 && base_str_eqc(prop, "input"));
    assert_true(agent__host_hwmon_split("power1_average_interval_max", &type, &num, &prop));
    assert_true(base_str_eqc(prop, "average_interval_max"));
    assert_true(agent__host_hwmon_split("beep_enable", &type, &num, &prop));
    assert_true(base_str_eqc(type, "beep_enable") && num == 0 && prop.n == 0);
    assert_true(agent__host_hwmon_split("pwm1", &type, &num, &prop));
    assert_true(base_str_eqc(type, "pwm") && num == 1 && prop.n == 0);
    assert_true(agent__host_hwmon_split("temp01_max", &type, &num, &prop));
    assert_int_equal(num, 1);
    assert_false(agent__host_hwmon_split("temp1x", &type, &num, &prop));
    assert_false(agent__host_hwmon_split("in0_", &type, &num, &prop));
    assert_false(agent__host_hwmon_split("1temp", &type, &num, &prop));

    unsigned cpus[16];
    assert_int_equal(agent__host_parse_cpulist((base_str){"1,3-5,9\n", 8}, cpus, 16), 5);
    assert_int_equal(cpus[0], 1);
    assert_int_equal(cpus[3], 5);
    assert_int_equal(cpus[4], 9);
    assert_int_equal(agent__host_parse_cpulist((base_str){"\n", 1}, cpus, 16), 0);
    assert_true(agent__host_parse_cpulist((base_str){"x", 1}, cpus, 16) < 0);
    assert_true(agent__host_parse_cpulist((base_str){"0-100", 5}, cpus, 16) < 0);

    char dec[128];
    base_str dev, mnt, fst, opts;
    const char *line = "srv:/a\\040b /mnt/a\\040b\\011c\\134 nfs rw,ro 0 0";
    assert_true(
        agent__host_parse_mount((base_str){line, strlen(line)}, &dev, &mnt, &fst, &opts, dec, sizeof dec));
    assert_true(base_str_eqc(dev, "srv:/a\\040b")); /* only the mount point is decoded */
    assert_true(base_str_eqc(mnt, "/mnt/a b\tc\\134"));
    assert_true(base_str_eqc(fst, "nfs"));
    assert_false(agent__host_parse_mount((base_str){"a b c", 5}, &dev, &mnt, &fst, &opts, dec, sizeof dec));
}

/* ---- behaviour over cycles ----------------------------------------------------- */

static void test_cpu_jump_back(void **state) {
    (void)state;
    tmp_tree();
    put("proc/stat", "cpu 0 0 0 0\ncpu0 100 0 50 10000 7 0 0 0 0 0\nintr 1\nctxt 1\nbtime 1\nprocesses 1\n"
                     "procs_running 1\nprocs_blocked 0\n");
    agent_host *h = tmp_host();
    char *t = run_once(h);
    assert_string_equal(value_of(t, "node_cpu_seconds_total{cpu=\"0\",mode=\"idle\"}"), "100");
    assert_string_equal(value_of(t, "node_cpu_seconds_total{cpu=\"0\",mode=\"iowait\"}"), "0.07");
    free(t);
    /* iowait and idle go back a little: the old values stay */
    put("proc/stat", "cpu 0 0 0 0\ncpu0 101 0 50 9950 5 0 0 0 0 0\nintr 1\nctxt 1\nbtime 1\nprocesses 1\n"
                     "procs_running 1\nprocs_blocked 0\n");
    t = run_once(h);
    assert_string_equal(value_of(t, "node_cpu_seconds_total{cpu=\"0\",mode=\"idle\"}"), "100");
    assert_string_equal(value_of(t, "node_cpu_seconds_total{cpu=\"0\",mode=\"iowait\"}"), "0.07");
    assert_string_equal(value_of(t, "node_cpu_seconds_total{cpu=\"0\",mode=\"user\"}"), "1.01");
    free(t);
    /* idle back by 3 s or more: a hotplugged CPU, start over */
    put("proc/stat", "cpu 0 0 0 0\ncpu0 5 0 1 200 1 0 0 0 0 0\nintr 1\nctxt 1\nbtime 1\nprocesses 1\n"
                     "procs_running 1\nprocs_blocked 0\n");
    t = run_once(h);
    assert_string_equal(value_of(t, "node_cpu_seconds_total{cpu=\"0\",mode=\"idle\"}"), "2");
    assert_string_equal(value_of(t, "node_cpu_seconds_total{cpu=\"0\",mode=\"user\"}"), "0.05");
    free(t);
    /* a second CPU appears: the cache starts over for all */
    put("proc/stat",
        "cpu 0 0 0 0\ncpu0 4 0 1 100 1 0 0 0 0 0\ncpu1 1 1 1 1 1 1 1 1\nintr 1\nctxt 1\nbtime 1\n"
        "processes 1\nprocs_running 1\nprocs_blocked 0\n");
    t = run_once(h);
    assert_string_equal(value_of(t, "node_cpu_seconds_total{cpu=\"0\",mode=\"idle\"}"), "1");
    assert_string_equal(value_of(t, "node_cpu_seconds_total{cpu=\"1\",mode=\"steal\"}"), "0.01");
    assert_string_equal(value_of(t, "node_cpu_guest_seconds_total{cpu=\"1\",mode=\"user\"}"), "0");
    free(t);
    agent_host_free(h);
    tmp_tree_done();
}

static void net_dev(const char *name, int ifindex, const char *oper) {
    char rel[256];
    snprintf(rel, sizeof rel, "sys/class/net/%s/ifindex", name);
    put(rel, "%d\n", ifindex);
    snprintf(rel, sizeof rel, "sys/class/net/%s/operstate", name);
    put(rel, "%s\n", oper);
    snprintf(rel, sizeof rel, "sys/class/net/%s/mtu", name);
    put(rel, "1500\n");
    snprintf(rel, sizeof rel, "sys/class/net/%s/statistics/rx_nohandler", name);
    put(rel, "%d\n", ifindex * 10);
}

static void test_devices_come_and_go(void **state) {
    (void)state;
    tmp_tree();
    net_dev("eth0", 2, "up");
    put("proc/net/dev", "h1\nh2\n  eth0: 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16\n");
    put("sys/class/infiniband/mlx5_0/hca_type", "MT4123\n");
    put("sys/class/infiniband/mlx5_0/ports/1/state", "4: ACTIVE\n");
    put("sys/class/infiniband/mlx5_0/ports/1/counters/port_rcv_data", "10\n");
    put("sys/class/hwmon/hwmon0/name", "k10temp\n");
    put("sys/class/hwmon/hwmon0/temp1_input", "41000\n");
    agent_host *h = tmp_host();
    char *t = run_once(h);
    assert_string_equal(value_of(t, "node_network_up{device=\"eth0\"}"), "1");
    assert_string_equal(value_of(t, "node_network_receive_nohandler_total{device=\"eth0\"}"), "20");
    assert_string_equal(value_of(t, "node_network_transmit_compressed_total{device=\"eth0\"}"), "16");
    assert_string_equal(
        value_of(t, "node_infiniband_port_data_received_bytes_total{device=\"mlx5_0\",port=\"1\"}"), "40");
    assert_true(has_series(
        t,
        "node_infiniband_info{board_id=\"\",device=\"mlx5_0\",firmware_version=\"\",hca_type=\"MT4123\"}"));
    assert_string_equal(value_of(t, "node_hwmon_temp_celsius{chip=\"k10temp\",sensor=\"temp1\"}"), "41");
    free(t);
    agent_host_stats st1;
    agent_host_get_stats(h, &st1);
    assert_true(st1.fds_open > 0);

    /* values change in place: read fresh through the kept descriptors */
    put("sys/class/net/eth0/operstate", "down\n");
    put("sys/class/hwmon/hwmon0/temp1_input", "42500\n");
    t = run_once(h);
    assert_string_equal(value_of(t, "node_network_up{device=\"eth0\"}"), "0");
    assert_string_equal(value_of(t, "node_hwmon_temp_celsius{chip=\"k10temp\",sensor=\"temp1\"}"), "42.5");
    free(t);
    agent_host_stats st2;
    agent_host_get_stats(h, &st2);
    assert_int_equal(st2.rebuilds, st1.rebuilds); /* nothing rebuilt */

    /* a device appears, another goes; an InfiniBand HCA goes; a chip appears */
    net_dev("eth1", 3, "up");
    put("proc/net/dev",
        "h1\nh2\n  eth1: 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1\n  eth0: 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2\n");
    rm_tree("sys/class/infiniband/mlx5_0");
    put("sys/class/hwmon/hwmon1/name", "nvme\n");
    put("sys/class/hwmon/hwmon1/temp1_input", "30000\n");
    t = run_once(h);
    assert_string_equal(value_of(t, "node_network_up{device=\"eth1\"}"), "1");
    assert_string_equal(value_of(t, "node_network_receive_nohandler_total{device=\"eth1\"}"), "30");
    assert_string_equal(value_of(t, "node_network_receive_bytes_total{device=\"eth0\"}"), "2");
    assert_false(has_family(t, "node_infiniband_info"));
    assert_string_equal(value_of(t, "node_hwmon_temp_celsius{chip=\"nvme\",sensor=\"temp1\"}"), "30");
    free(t);
    rm_tree("sys/class/net/eth0");
    put("proc/net/dev", "h1\nh2\n  eth1: 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1\n");
    t = run_once(h);
    assert_false(has_series(t, "node_network_up{device=\"eth0\"}"));
    assert_false(has_series(t, "node_network_receive_bytes_total{device=\"eth0\"}"));
    assert_true(has_series(t, "node_network_up{device=\"eth1\"}"));
    free(t);
    agent_host_stats st3;
    agent_host_get_stats(h, &st3);
    assert_true(st3.rebuilds > st2.rebuilds);
    /* kept open now: eth1's ifindex, operstate, mtu and rx_nohandler, the two
     * hwmon inputs, net/dev; eth0's and the HCA's were closed */
    assert_int_equal(st3.fds_open, 7);

    agent_host_free(h);
    tmp_tree_done();
}

static void test_missing_and_empty(void **state) {
    (void)state;
    tmp_tree();
    agent_host *h = tmp_host();
    char *t = run_once(h);
    /* nothing to read: only what needs no file */
    assert_true(has_family(t, "node_uname_info"));
    assert_true(has_family(t, "node_time_seconds"));
    assert_false(has_family(t, "node_cpu_seconds_total"));
    assert_false(has_family(t, "node_memory_MemTotal_bytes"));
    assert_false(has_family(t, "node_filesystem_size_bytes"));
    free(t);
    /* malformed files leave their pieces out, the rest stays */
    put("proc/meminfo", "MemTotal: x kB\nMemFree:   10 kB\nweird line with many fields here\n");
    put("proc/loadavg", "1.0 nope 3\n");
    put("proc/stat", "cpu0 a b c d\nctxt 5\n");
    put("proc/pressure/io", "some avg10=0.00 total=12\n");
    put("proc/diskstats", "8 0\n x y sda 1 2\n");
    put("proc/net/dev", "h\nh\n eth0: 1 2 3\n");
    put("proc/1/mounts", "short line\n");
    put("proc/sys/fs/file-nr", "1\n");
    t = run_once(h);
    assert_false(has_family(t, "node_memory_MemTotal_bytes"));
    assert_string_equal(value_of(t, "node_memory_MemFree_bytes"), "10240");
    assert_false(has_family(t, "node_load1"));
    assert_false(has_family(t, "node_cpu_seconds_total"));
    assert_false(has_family(t, "node_context_switches_total")); /* all six or none */
    assert_string_equal(value_of(t, "node_pressure_io_waiting_seconds_total"), "1.2e-05");
    assert_false(has_family(t, "node_pressure_io_stalled_seconds_total"));
    assert_false(has_family(t, "node_disk_io_now"));
    assert_false(has_family(t, "node_network_receive_bytes_total"));
    assert_false(has_family(t, "node_filefd_allocated"));
    free(t);
    agent_host_free(h);
    tmp_tree_done();

    agent_host_opts o = {"/nonexistent-procfs", "/sys", "/"};
    agent_host *bad = NULL;
    char err[256] = "";
    assert_int_equal(agent_host_new(&o, &bad, err, sizeof err), BASE_E_NOTFOUND);
    assert_null(bad);
    assert_non_null(strstr(err, "/nonexistent-procfs"));
}

static void test_mounts_change(void **state) {
    (void)state;
    tmp_tree();
    mkdirs(tmproot); /* root exists */
    char d[512];
    snprintf(d, sizeof d, "%s/root/data", tmproot);
    mkdirs(d);
    put("proc/1/mounts", "/dev/sda1 / ext4 rw 0 0\n");
    agent_host *h = tmp_host();
    char *t = run_once(h);
    assert_true(
        has_series(t, "node_filesystem_size_bytes{device=\"/dev/sda1\",fstype=\"ext4\",mountpoint=\"/\"}"));
    assert_false(has_series(
        t, "node_filesystem_size_bytes{device=\"/dev/sdb1\",fstype=\"xfs\",mountpoint=\"/data\"}"));
    free(t);
    put("proc/1/mounts", "/dev/sda1 / ext4 rw 0 0\n/dev/sdb1 /data xfs ro 0 0\n");
    t = run_once(h);
    assert_string_equal(
        value_of(t, "node_filesystem_readonly{device=\"/dev/sdb1\",fstype=\"xfs\",mountpoint=\"/data\"}"),
        "1");
    free(t);
    /* /proc/1/mounts hidden (hidepid): /proc/mounts */
    char p[512];
    snprintf(p, sizeof p, "%s/proc/1/mounts", tmproot);
    unlink(p);
    put("proc/mounts", "/dev/sdc1 /data ext4 rw 0 0\n");
    agent_host_free(h);
    h = tmp_host();
    t = run_once(h);
    assert_true(has_series(
        t, "node_filesystem_size_bytes{device=\"/dev/sdc1\",fstype=\"ext4\",mountpoint=\"/data\"}"));
    free(t);
    agent_host_free(h);
    tmp_tree_done();
}

static int64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void test_stuck_statfs(void **state) {
    (void)state;
    agent_host *h = fixture_host();
    agent_host_set_statfs(h, fake_statfs, 150);
    block_suffix = "/home";
    const char *home_err = "node_filesystem_device_error{device=\"fileserver:/export/"
                           "home\",fstype=\"nfs4\",mountpoint=\"/home\"}";
    const char *home_size =
        "node_filesystem_size_bytes{device=\"fileserver:/export/home\",fstype=\"nfs4\",mountpoint=\"/home\"}";
    const char *data_size =
        "node_filesystem_size_bytes{device=\"/dev/nvme0n1p1\",fstype=\"xfs\",mountpoint=\"/data\"}";
    int64_t t0 = now_ms();
    char *t = run_once(h);
    int64_t dt = now_ms() - t0;
    assert_true(dt >= 140 && dt < 1500); /* waited for the timeout, not for the mount */
    assert_string_equal(value_of(t, home_err), "1");
    assert_false(has_series(t, home_size));
    assert_string_equal(value_of(t, data_size), "1.073741824e+10"); /* the others were done */
    free(t);
    agent_host_stats st;
    agent_host_get_stats(h, &st);
    assert_int_equal(st.mounts_stuck, 1);
    /* still stuck: skipped at once, not called again */
    int calls = atomic_load(&fake_calls);
    t0 = now_ms();
    t = run_once(h);
    assert_true(now_ms() - t0 < 140);
    assert_string_equal(value_of(t, home_err), "1");
    assert_string_equal(value_of(t, data_size), "1.073741824e+10");
    free(t);
    /* one call per other mount (5 = /, /data, /scratch space, /var/lib/kubelet/..., /gone) */
    assert_int_equal(atomic_load(&fake_calls) - calls, 5);
    /* the call returns: the mount recovers */
    block_suffix = NULL;
    release_blocked();
    for (int i = 0; i < 200; i++) {
        pthread_mutex_lock(&fk_mu);
        int b = blocked_now;
        pthread_mutex_unlock(&fk_mu);
        if (!b) break;
        usleep(5000);
    }
    usleep(20000);
    t = run_once(h);
    assert_string_equal(value_of(t, home_err), "0");
    assert_string_equal(value_of(t, home_size), "1.073741824e+10");
    free(t);
    agent_host_get_stats(h, &st);
    assert_int_equal(st.mounts_stuck, 0);

    /* freed while stuck: returns at once; the helper frees itself later */
    block_suffix = "/home";
    t = run_once(h);
    assert_string_equal(value_of(t, home_err), "1");
    free(t);
    t0 = now_ms();
    agent_host_free(h);
    assert_true(now_ms() - t0 < 100);
    block_suffix = NULL;
    release_blocked();
    for (int i = 0; i < 200; i++) {
        pthread_mutex_lock(&fk_mu);
        int b = blocked_now;
        pthread_mutex_unlock(&fk_mu);
        if (!b) break;
        usleep(5000);
    }
    usleep(50000); /* let the detached helper finish freeing */
}

static void test_fd_cap(void **state) {
    (void)state;
    agent_host *h = fixture_host();
    char *a = run_once(h);
    agent_host_stats st;
    agent_host_get_stats(h, &st);
    assert_true(st.fds_open > 100); /* the fixture has a few hundred files */
    agent_host_free(h);
    h = fixture_host();
    agent_host_set_fd_limit(h, 0);
    char *b = run_once(h);
    agent_host_get_stats(h, &st);
    assert_int_equal(st.fds_open, 0);
    /* same output, time aside */
    char **la = malloc(4096 * sizeof *la), **lb = malloc(4096 * sizeof *lb);
    size_t na = split_lines(a, la, 4096, 1), nb = split_lines(b, lb, 4096, 1);
    assert_int_equal(na, nb);
    for (size_t i = 0; i < na; i++) assert_string_equal(la[i], lb[i]);
    free(la);
    free(lb);
    free(a);
    free(b);
    agent_host_free(h);
}

static void test_no_allocation_in_steady_state(void **state) {
    (void)state;
    hooks_install();
    agent_host *h = fixture_host();
    expo_mset ms;
    expo_mset_init(&ms);
    for (int i = 0; i < 3; i++) {
        expo_mset_reset(&ms);
        assert_int_equal(agent_host_collect(h, &ms), 0);
    }
    size_t samples = ms.nsamples;
    atomic_store(&n_allocs, 0);
    atomic_store(&counting, 1);
    for (int i = 0; i < 70; i++) { /* past one udev refresh (60 cycles) */
        expo_mset_reset(&ms);
        assert_int_equal(agent_host_collect(h, &ms), 0);
    }
    atomic_store(&counting, 0);
    assert_int_equal(ms.nsamples, samples);
    long n = atomic_load(&n_allocs);
    if (n) fprintf(stderr, "%ld allocations in 70 steady cycles\n", n);
    assert_int_equal(n, 0);
    expo_mset_free(&ms);
    agent_host_free(h);
}

static double thread_cpu_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void measure(const char *what, agent_host *h, int cycles) {
    expo_mset ms;
    expo_mset_init(&ms);
    expo_mset_reset(&ms);
    agent_host_collect(h, &ms);
    double c0 = thread_cpu_ms();
    int64_t w0 = now_ms();
    for (int i = 0; i < cycles; i++) {
        expo_mset_reset(&ms);
        assert_int_equal(agent_host_collect(h, &ms), 0);
    }
    double cpu = (thread_cpu_ms() - c0) / cycles, wall = (double)(now_ms() - w0) / cycles;
    fprintf(stderr, "host cycle on %s: %.3f ms CPU (collecting thread), %.3f ms wall, %zu samples\n", what,
            cpu, wall, ms.nsamples);
    /* loose: a sanitizer build on a loaded 2-core box; the point is that a
     * pathological slowdown fails */
    assert_true(cpu < 50);
    expo_mset_free(&ms);
}

static void test_cycle_cost(void **state) {
    (void)state;
    agent_host *h = fixture_host();
    measure("the fixture tree", h, 200);
    agent_host_free(h);
    struct stat st;
    if (stat("/proc/stat", &st) == 0 && stat("/sys/class", &st) == 0) {
        agent_host_opts o = {NULL, NULL, NULL};
        char err[256];
        assert_int_equal(agent_host_new(&o, &h, err, sizeof err), 0);
        measure("this machine's /proc and /sys", h, 200);
        agent_host_free(h);
    }
}

int main(void) {
    const char *src = getenv("KELVIN_SOURCE_DIR");
    snprintf(fixture, sizeof fixture, "%s/tests/fixtures/host", src ? src : ".");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fixture_matches_node_exporter),
        cmocka_unit_test(test_fixture_values),
        cmocka_unit_test(test_catalog),
        cmocka_unit_test(test_exclusions),
        cmocka_unit_test(test_small_parsers),
        cmocka_unit_test(test_cpu_jump_back),
        cmocka_unit_test(test_devices_come_and_go),
        cmocka_unit_test(test_missing_and_empty),
        cmocka_unit_test(test_mounts_change),
        cmocka_unit_test(test_stuck_statfs),
        cmocka_unit_test(test_fd_cap),
        cmocka_unit_test(test_no_allocation_in_steady_state),
        cmocka_unit_test(test_cycle_cost),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
