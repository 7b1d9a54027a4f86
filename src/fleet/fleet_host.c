/* fleet_host.c -- node_exporter's series for a simulated node, synthesised.
 *
 * One machine's /proc cannot stand for hundreds of different nodes, so the
 * host half of a simulated node is made up, but made up in the agent's
 * vocabulary: every family is looked up in the agent's catalog
 * (node_exporter 1.5's names, types and HELP text), with node_exporter's
 * label names, for the shape of an 8-GPU training node (24 CPUs shown,
 * 1.5 TiB of memory, one Ethernet and four InfiniBand netdevs, two NVMe
 * disks, three filesystems).
 *
 * Design. The template (fleet_host_tmpl, shared by every node) is the list
 * of series: family, pre-rendered labels, and how the value moves:
 *   COUNTER  grows at `rate` per second times a per-node factor (0.6..1.4)
 *            times a per-step factor (0.5..1.5): never decreases;
 *   GAUGE    base x per-node factor x (1 + var x a slow wave + noise);
 *   CONST    base (sizes, limits);
 *   BOOT / NOW / UNAME  node_boot_time_seconds, node_time_seconds and
 *            node_uname_info (whose nodename is the node's hostname).
 * A node (fleet_host) holds only its counters' values and its uname
 * labels. Noise is counter-based (fleet__noise(seed, series, step)), so a
 * node's values depend on its seed and the update times only.
 *
 * Invariants: counters never decrease; integer-valued series (packets,
 * bytes, process counts) are whole numbers, the others have two decimals
 * (as /proc's USER_HZ seconds and load averages do).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/catalog.h"
#include "base/buf.h"
#include "base/err.h"
#include "fleet/fleet_int.h"

enum { K_COUNTER, K_GAUGE, K_CONST, K_BOOT, K_NOW, K_UNAME };

#define HOST_NCPU   24
#define HOST_UPTIME 1.2e6 /* seconds the nodes have been up at model time 0 (~2 weeks) */

typedef struct hser {
    unsigned fam; /* index into tmpl->fams */
    int kind;
    int integer;        /* whole numbers */
    const char *labels; /* owned by the template, or NULL */
    double base;        /* counter: rate per second; gauge/const: value */
    double var;         /* gauge: relative amplitude */
    double period;      /* gauge: seconds */
} hser;

struct fleet_host_tmpl {
    const agent_metric **fams;
    size_t nfams, capfams;
    hser *ser;
    size_t nser, capser;
    int err;
};

struct fleet_host {
    const fleet_host_tmpl *t;
    uint64_t seed;
    double start_unix_s;
    double last_t; /* < 0 before the first fill */
    char *uname_labels;
    double *val; /* per series: counters' values */
};

uint64_t fleet__mix(uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

double fleet__noise(uint64_t seed, uint64_t a, uint64_t b) {
    uint64_t h = fleet__mix(seed ^ fleet__mix(a * 0x100000001b3ull ^ fleet__mix(b)));
    return (double)(h >> 11) / (double)(1ull << 52) - 1.0;
}

/* ---- template ------------------------------------------------------------- */

static void fam(fleet_host_tmpl *t, const char *name, char *err, size_t errlen) {
    if (t->err) return;
    const agent_metric *m = agent_catalog_find(name);
    if (!m) {
        t->err =
            base_errf(err, errlen, BASE_E_NOTFOUND, "host metric %s is not in the agent's catalog", name);
        return;
    }
    if (t->nfams == t->capfams) {
        size_t cap = t->capfams ? t->capfams * 2 : 64;
        const agent_metric **p = realloc(t->fams, cap * sizeof *p);
        if (!p) {
            t->err = BASE_E_NOMEM;
            return;
        }
        t->fams = p;
        t->capfams = cap;
    }
    t->fams[t->nfams++] = m;
}

/* Adds a series to the family added last; labels (may be NULL) is copied. */
static void ser(fleet_host_tmpl *t, const char *labels, int kind, double base, double var, double period,
                int integer) {
    if (t->err) return;
    if (t->nser == t->capser) {
        size_t cap = t->capser ? t->capser * 2 : 512;
        hser *p = realloc(t->ser, cap * sizeof *p);
        if (!p) {
            t->err = BASE_E_NOMEM;
            return;
        }
        t->ser = p;
        t->capser = cap;
    }
    char *l = NULL;
    if (labels && !(l = strdup(labels))) {
        t->err = BASE_E_NOMEM;
        return;
    }
    t->ser[t->nser++] = (hser){.fam = (unsigned)(t->nfams - 1),
                               .kind = kind,
                               .integer = integer,
                               .labels = l,
                               .base = base,
                               .var = var,
                               .period = period > 0 ? period : 600};
}

/* A family with one unlabelled series. */
static void one(fleet_host_tmpl *t, const char *name, int kind, double base, double var, int integer,
                char *err, size_t errlen) {
    fam(t, name, err, errlen);
    ser(t, NULL, kind, base, var, 900, integer);
}

static const char *lab1(base_buf *b, const char *n1, const char *v1) {
    base_buf_reset(b);
    expo_label_append(b, n1, v1);
    return b->data;
}

static const char *lab2(base_buf *b, const char *n1, const char *v1, const char *n2, const char *v2) {
    base_buf_reset(b);
    expo_label_append(b, n1, v1);
    expo_label_append(b, n2, v2);
    return b->data;
}

#define GIB (1024.0 * 1024 * 1024)

static void build(fleet_host_tmpl *t, base_buf *b, char *err, size_t errlen) {
    /* cpu */
    static const struct {
        const char *mode;
        double rate;
    } modes[] = {{"user", 0.34},   {"nice", 0.002}, {"system", 0.07},  {"idle", 0.55},
                 {"iowait", 0.01}, {"irq", 0.0},    {"softirq", 0.01}, {"steal", 0.0}};
    fam(t, "node_cpu_seconds_total", err, errlen);
    for (int c = 0; c < HOST_NCPU; c++) {
        char cpu[8];
        snprintf(cpu, sizeof cpu, "%d", c);
        for (size_t m = 0; m < sizeof modes / sizeof modes[0]; m++)
            ser(t, lab2(b, "cpu", cpu, "mode", modes[m].mode), K_COUNTER, modes[m].rate, 0, 0, 0);
    }
    one(t, "node_boot_time_seconds", K_BOOT, 0, 0, 1, err, errlen);
    one(t, "node_context_switches_total", K_COUNTER, 250000, 0, 1, err, errlen);
    one(t, "node_forks_total", K_COUNTER, 40, 0, 1, err, errlen);
    one(t, "node_intr_total", K_COUNTER, 400000, 0, 1, err, errlen);
    one(t, "node_procs_running", K_GAUGE, 14, 0.5, 1, err, errlen);
    one(t, "node_procs_blocked", K_GAUGE, 1, 1.0, 1, err, errlen);
    one(t, "node_load1", K_GAUGE, 16, 0.3, 0, err, errlen);
    one(t, "node_load5", K_GAUGE, 16, 0.2, 0, err, errlen);
    one(t, "node_load15", K_GAUGE, 16, 0.1, 0, err, errlen);

    /* meminfo */
    static const struct {
        const char *name;
        int kind;
        double v, var;
    } mem[] = {
        {"node_memory_MemTotal_bytes", K_CONST, 1536 * GIB, 0},
        {"node_memory_MemFree_bytes", K_GAUGE, 420 * GIB, 0.1},
        {"node_memory_MemAvailable_bytes", K_GAUGE, 1000 * GIB, 0.05}, /* x1.4 x1.05 stays under MemTotal */
        {"node_memory_Buffers_bytes", K_GAUGE, 3 * GIB, 0.05},
        {"node_memory_Cached_bytes", K_GAUGE, 680 * GIB, 0.05},
        {"node_memory_Active_bytes", K_GAUGE, 620 * GIB, 0.1},
        {"node_memory_Inactive_bytes", K_GAUGE, 390 * GIB, 0.1},
        {"node_memory_Dirty_bytes", K_GAUGE, 0.2 * GIB, 0.8},
        {"node_memory_Writeback_bytes", K_GAUGE, 0.001 * GIB, 1.0},
        {"node_memory_AnonPages_bytes", K_GAUGE, 380 * GIB, 0.1},
        {"node_memory_Mapped_bytes", K_GAUGE, 6 * GIB, 0.05},
        {"node_memory_Shmem_bytes", K_GAUGE, 48 * GIB, 0.1},
        {"node_memory_Slab_bytes", K_GAUGE, 24 * GIB, 0.05},
        {"node_memory_PageTables_bytes", K_GAUGE, 1.6 * GIB, 0.05},
        {"node_memory_SwapTotal_bytes", K_CONST, 0, 0},
        {"node_memory_SwapFree_bytes", K_CONST, 0, 0},
        {"node_memory_CommitLimit_bytes", K_CONST, 768 * GIB, 0},
        {"node_memory_Committed_AS_bytes", K_GAUGE, 520 * GIB, 0.1},
        {"node_memory_HugePages_Total", K_CONST, 0, 0},
        {"node_memory_HugePages_Free", K_CONST, 0, 0},
    };
    for (size_t i = 0; i < sizeof mem / sizeof mem[0]; i++)
        one(t, mem[i].name, mem[i].kind, mem[i].v, mem[i].var, 1, err, errlen);

    one(t, "node_pressure_cpu_waiting_seconds_total", K_COUNTER, 0.02, 0, 0, err, errlen);
    one(t, "node_pressure_io_waiting_seconds_total", K_COUNTER, 0.006, 0, 0, err, errlen);
    one(t, "node_pressure_io_stalled_seconds_total", K_COUNTER, 0.004, 0, 0, err, errlen);
    one(t, "node_pressure_memory_waiting_seconds_total", K_COUNTER, 0.0002, 0, 0, err, errlen);
    one(t, "node_pressure_memory_stalled_seconds_total", K_COUNTER, 0.0001, 0, 0, err, errlen);

    one(t, "node_vmstat_pgpgin", K_COUNTER, 6000, 0, 1, err, errlen);
    one(t, "node_vmstat_pgpgout", K_COUNTER, 25000, 0, 1, err, errlen);
    one(t, "node_vmstat_pswpin", K_CONST, 0, 0, 1, err, errlen);
    one(t, "node_vmstat_pswpout", K_CONST, 0, 0, 1, err, errlen);
    one(t, "node_vmstat_pgfault", K_COUNTER, 180000, 0, 1, err, errlen);
    one(t, "node_vmstat_pgmajfault", K_COUNTER, 1.5, 0, 1, err, errlen);
    one(t, "node_vmstat_oom_kill", K_CONST, 0, 0, 1, err, errlen);

    /* netdev: Ethernet for the control plane, InfiniBand for the job */
    static const struct {
        const char *dev;
        double bps, mtu, speed;
    } nets[] = {{"eth0", 4e6, 1500, 25e9 / 8},
                {"ib0", 3e9, 4092, 400e9 / 8},
                {"ib1", 3e9, 4092, 400e9 / 8},
                {"ib2", 3e9, 4092, 400e9 / 8},
                {"ib3", 3e9, 4092, 400e9 / 8}};
    static const struct {
        const char *name;
        int what; /* 0 bytes, 1 packets, 2 errors, 3 drops */
    } nfams[] = {{"node_network_receive_bytes_total", 0},  {"node_network_receive_packets_total", 1},
                 {"node_network_receive_errs_total", 2},   {"node_network_receive_drop_total", 3},
                 {"node_network_transmit_bytes_total", 0}, {"node_network_transmit_packets_total", 1},
                 {"node_network_transmit_errs_total", 2},  {"node_network_transmit_drop_total", 3}};
    for (size_t f = 0; f < sizeof nfams / sizeof nfams[0]; f++) {
        fam(t, nfams[f].name, err, errlen);
        for (size_t d = 0; d < sizeof nets / sizeof nets[0]; d++) {
            double r = nfams[f].what == 0   ? nets[d].bps
                       : nfams[f].what == 1 ? nets[d].bps / nets[d].mtu
                       : nfams[f].what == 2 ? 0
                                            : 0.01;
            ser(t, lab1(b, "device", nets[d].dev), r > 0 ? K_COUNTER : K_CONST, r, 0, 0, 1);
        }
    }
    fam(t, "node_network_up", err, errlen);
    for (size_t d = 0; d < sizeof nets / sizeof nets[0]; d++)
        ser(t, lab1(b, "device", nets[d].dev), K_CONST, 1, 0, 0, 1);
    fam(t, "node_network_mtu_bytes", err, errlen);
    for (size_t d = 0; d < sizeof nets / sizeof nets[0]; d++)
        ser(t, lab1(b, "device", nets[d].dev), K_CONST, nets[d].mtu, 0, 0, 1);
    fam(t, "node_network_speed_bytes", err, errlen);
    for (size_t d = 0; d < sizeof nets / sizeof nets[0]; d++)
        ser(t, lab1(b, "device", nets[d].dev), K_CONST, nets[d].speed, 0, 0, 1);

    /* diskstats */
    static const char *const disks[] = {"nvme0n1", "nvme1n1"};
    static const struct {
        const char *name;
        int kind;
        double v;
        int integer;
    } dfams[] = {{"node_disk_reads_completed_total", K_COUNTER, 60, 1},
                 {"node_disk_read_bytes_total", K_COUNTER, 8e6, 1},
                 {"node_disk_read_time_seconds_total", K_COUNTER, 0.02, 0},
                 {"node_disk_writes_completed_total", K_COUNTER, 240, 1},
                 {"node_disk_written_bytes_total", K_COUNTER, 3e7, 1},
                 {"node_disk_write_time_seconds_total", K_COUNTER, 0.12, 0},
                 {"node_disk_io_now", K_GAUGE, 1, 1},
                 {"node_disk_io_time_seconds_total", K_COUNTER, 0.05, 0},
                 {"node_disk_io_time_weighted_seconds_total", K_COUNTER, 0.14, 0}};
    for (size_t f = 0; f < sizeof dfams / sizeof dfams[0]; f++) {
        fam(t, dfams[f].name, err, errlen);
        for (size_t d = 0; d < 2; d++)
            ser(t, lab1(b, "device", disks[d]), dfams[f].kind, dfams[f].v, 1.0, 300, dfams[f].integer);
    }

    /* filesystems */
    static const struct {
        const char *dev, *fstype, *mnt;
        double size, used, files;
    } fss[] = {{"/dev/nvme0n1p2", "ext4", "/", 1.8e12, 0.35, 1.2e8},
               {"/dev/nvme0n1p1", "vfat", "/boot/efi", 5.4e8, 0.01, 0},
               {"/dev/md0", "xfs", "/raid", 28e12, 0.55, 2.8e9}};
    static const char *const fsf[] = {"node_filesystem_avail_bytes", "node_filesystem_device_error",
                                      "node_filesystem_files",       "node_filesystem_files_free",
                                      "node_filesystem_free_bytes",  "node_filesystem_readonly",
                                      "node_filesystem_size_bytes"};
    for (size_t f = 0; f < sizeof fsf / sizeof fsf[0]; f++) {
        fam(t, fsf[f], err, errlen);
        for (size_t k = 0; k < sizeof fss / sizeof fss[0]; k++) {
            base_buf_reset(b);
            expo_label_append(b, "device", fss[k].dev);
            expo_label_append(b, "fstype", fss[k].fstype);
            expo_label_append(b, "mountpoint", fss[k].mnt);
            double free_b = fss[k].size * (1 - fss[k].used);
            switch (f) {
            case 0: ser(t, b->data, K_GAUGE, free_b * 0.95, 0.02, 3600, 1); break;
            case 1: ser(t, b->data, K_CONST, 0, 0, 0, 1); break;
            case 2: ser(t, b->data, K_CONST, fss[k].files, 0, 0, 1); break;
            case 3: ser(t, b->data, K_GAUGE, fss[k].files * 0.9, 0.01, 3600, 1); break;
            case 4: ser(t, b->data, K_GAUGE, free_b, 0.02, 3600, 1); break;
            case 5: ser(t, b->data, K_CONST, 0, 0, 0, 1); break;
            default: ser(t, b->data, K_CONST, fss[k].size, 0, 0, 1); break;
            }
        }
    }

    one(t, "node_netstat_Tcp_CurrEstab", K_GAUGE, 320, 0.2, 1, err, errlen);
    one(t, "node_netstat_Tcp_InSegs", K_COUNTER, 60000, 0, 1, err, errlen);
    one(t, "node_netstat_Tcp_OutSegs", K_COUNTER, 58000, 0, 1, err, errlen);
    one(t, "node_netstat_Tcp_RetransSegs", K_COUNTER, 4, 0, 1, err, errlen);
    one(t, "node_netstat_Udp_InDatagrams", K_COUNTER, 900, 0, 1, err, errlen);
    one(t, "node_netstat_Udp_OutDatagrams", K_COUNTER, 950, 0, 1, err, errlen);
    one(t, "node_netstat_IpExt_InOctets", K_COUNTER, 4e6, 0, 1, err, errlen);
    one(t, "node_netstat_IpExt_OutOctets", K_COUNTER, 4.2e6, 0, 1, err, errlen);
    one(t, "node_sockstat_sockets_used", K_GAUGE, 2100, 0.1, 1, err, errlen);
    one(t, "node_sockstat_TCP_inuse", K_GAUGE, 330, 0.2, 1, err, errlen);
    one(t, "node_sockstat_TCP_tw", K_GAUGE, 120, 0.4, 1, err, errlen);
    one(t, "node_sockstat_UDP_inuse", K_GAUGE, 24, 0.1, 1, err, errlen);
    one(t, "node_filefd_allocated", K_GAUGE, 36000, 0.05, 1, err, errlen);
    one(t, "node_filefd_maximum", K_CONST, 9223372036854775807.0, 0, 0, err, errlen);
    one(t, "node_entropy_available_bits", K_CONST, 256, 0, 1, err, errlen);
    one(t, "node_entropy_pool_size_bits", K_CONST, 256, 0, 1, err, errlen);
    one(t, "node_time_seconds", K_NOW, 0, 0, 0, err, errlen);
    one(t, "node_uname_info", K_UNAME, 1, 0, 1, err, errlen);
}

int fleet__host_tmpl_new(fleet_host_tmpl **ret, char *err, size_t errlen) {
    fleet_host_tmpl *t = calloc(1, sizeof *t);
    if (!t) return BASE_E_NOMEM;
    base_buf b;
    base_buf_init(&b, 0);
    build(t, &b, err, errlen);
    if (!t->err && base_buf_err(&b)) t->err = BASE_E_NOMEM;
    base_buf_free(&b);
    if (t->err) {
        int rc = t->err;
        fleet__host_tmpl_free(t);
        return rc;
    }
    *ret = t;
    return 0;
}

void fleet__host_tmpl_free(fleet_host_tmpl *t) {
    if (!t) return;
    for (size_t i = 0; i < t->nser; i++) free((char *)t->ser[i].labels);
    free(t->ser);
    free(t->fams);
    free(t);
}

size_t fleet__host_tmpl_series(const fleet_host_tmpl *t) {
    return t->nser;
}

/* ---- a node --------------------------------------------------------------- */

static double node_factor(uint64_t seed, size_t i) {
    return 1.0 + 0.4 * fleet__noise(seed, i, 0xFAC7u);
}

int fleet__host_new(const fleet_host_tmpl *tmpl, uint64_t seed, const char *hostname, double start_unix_s,
                    fleet_host **ret) {
    fleet_host *h = calloc(1, sizeof *h);
    if (!h) return BASE_E_NOMEM;
    h->t = tmpl;
    h->seed = seed;
    h->start_unix_s = start_unix_s;
    h->last_t = -1;
    h->val = calloc(tmpl->nser ? tmpl->nser : 1, sizeof *h->val);
    base_buf b;
    base_buf_init(&b, 0);
    expo_label_append(&b, "domainname", "(none)");
    expo_label_append(&b, "machine", "x86_64");
    expo_label_append(&b, "nodename", hostname);
    expo_label_append(&b, "release", "6.1.0-simulated");
    expo_label_append(&b, "sysname", "Linux");
    expo_label_append(&b, "version", "#1 SMP kelvin sim fleet (simulated node)");
    h->uname_labels = base_buf_err(&b) ? NULL : base_buf_steal(&b, NULL);
    base_buf_free(&b);
    if (!h->val || !h->uname_labels) {
        fleet__host_free(h);
        return BASE_E_NOMEM;
    }
    /* counters start where ~2 weeks of uptime put them */
    for (size_t i = 0; i < tmpl->nser; i++) {
        const hser *s = &tmpl->ser[i];
        if (s->kind == K_COUNTER) {
            double v = s->base * node_factor(seed, i) * HOST_UPTIME;
            h->val[i] = s->integer ? floor(v) : v;
        }
    }
    *ret = h;
    return 0;
}

void fleet__host_free(fleet_host *h) {
    if (!h) return;
    free(h->uname_labels);
    free(h->val);
    free(h);
}

int fleet__host_fill(fleet_host *h, double t, expo_mset *ms) {
    const fleet_host_tmpl *T = h->t;
    if (t < h->last_t) t = h->last_t;
    double dt = h->last_t < 0 ? 0 : t - h->last_t;
    h->last_t = t;
    uint64_t key = (uint64_t)llround(t * 1000); /* noise keyed by model time, not by call count */
    expo_family *f = NULL;
    unsigned cur = (unsigned)-1;
    for (size_t i = 0; i < T->nser; i++) {
        const hser *s = &T->ser[i];
        if (s->fam != cur) {
            cur = s->fam;
            const agent_metric *m = T->fams[cur];
            f = expo_mset_family(ms, m->name, m->type, m->help, NULL);
        }
        double v = 0;
        switch (s->kind) {
        case K_COUNTER: {
            double step = 1.0 + 0.5 * fleet__noise(h->seed, i, key);
            double add = s->base * node_factor(h->seed, i) * step * dt;
            h->val[i] += s->integer ? floor(add) : add;
            v = s->integer ? h->val[i] : floor(h->val[i] * 100) / 100; /* USER_HZ-like resolution */
            break;
        }
        case K_GAUGE: {
            double phase = 3.14159265358979 * (1 + fleet__noise(h->seed, i, 0xFA5Eu));
            double wave =
                0.7 * sin(2 * 3.14159265358979 * t / s->period + phase) + 0.3 * fleet__noise(h->seed, i, key);
            v = s->base * node_factor(h->seed, i) * (1 + s->var * wave);
            if (v < 0) v = 0;
            v = s->integer ? round(v) : round(v * 100) / 100;
            break;
        }
        case K_CONST: v = s->base; break;
        case K_BOOT: v = floor(h->start_unix_s - HOST_UPTIME * node_factor(h->seed, i)); break;
        case K_NOW: v = h->start_unix_s + t; break;
        case K_UNAME: v = 1; break;
        }
        if (f) expo_mset_add(ms, f, "", s->kind == K_UNAME ? h->uname_labels : s->labels, NULL, v);
    }
    return ms->err;
}
