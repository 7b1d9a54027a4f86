/* host_sys.c -- the host collector's /sys device tables: netclass,
 * infiniband, hwmon, CPU thermal throttles, isolated CPUs, clocksources.
 *
 * Design. Each class directory (/sys/class/net, /sys/class/infiniband,
 * /sys/class/hwmon) stays open; every cycle lists it (getdents64 into a
 * reused buffer) and compares the names with the table's. Equal: the table
 * is read as it is, one pread per attribute through kept-open descriptors.
 * Different: the table is rebuilt (directories walked, names derived,
 * families laid out) and only then read, so a cycle never emits from a
 * half-built table. What a table decides at build time (which sensor
 * files exist, chip names, hwmon family names and HELP, labels) is what
 * node_exporter decides per scrape from the same files; values are always
 * read fresh.
 *
 * hwmon follows node_exporter 1.5: chip = <parent dir>_<dir> of the
 * resolved device link (cleaned: lower case, [^a-z0-9:_] to '_'), else the
 * name file, else the hwmonN directory name; sensor files in hwmonN and in
 * hwmonN/device, split as <type><num>_<property> for the types node_exporter
 * knows; family name, unit, scale and HELP by the same rules (values
 * scaled by `* 0.001` or `/ 1000000.0` exactly as it does, so the floats
 * match bit for bit).
 *
 * Ownership: every string of a table (paths, labels, hwmon names) is
 * malloc'd by the table and freed when it is rebuilt or freed, which
 * happens only at the start of a cycle or in agent_host_free().
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/host_int.h"
#include "base/err.h"
#include "base/num.h"

#define SYS_READ_MAX 128 /* procfs' util.SysReadFile and node_exporter's hwmon read at most this */

/* ---- netclass ------------------------------------------------------------------ */

enum { NCS_ADDRESS, NCS_BROADCAST, NCS_DUPLEX, NCS_IFALIAS, NCS_OPERSTATE, NCS__N };
static const char *const nc_str_files[NCS__N] = {"address", "broadcast", "duplex", "ifalias", "operstate"};

#define NC_COUNT_ONE(id, suffix, file, type) +1
enum { NC_NUM = 0 HOST_NETCLASS(NC_COUNT_ONE) };
#define NC_FILE(id, suffix, file, type) file,
static const char *const nc_num_files[NC_NUM] = {HOST_NETCLASS(NC_FILE)};

typedef struct nc_dev {
    char *name, *lbl;
    host_file num[NC_NUM], str[NCS__N];
} nc_dev;

/* ---- infiniband ---------------------------------------------------------------- */

#define IB_COUNT_ONE(id, suffix, help, file, ext, x4) +1
enum { IB_NCTR = 0 HOST_IB_COUNTERS(IB_COUNT_ONE) };
typedef struct ib_ctr_def {
    const char *file;
    int ext, x4;
} ib_ctr_def;
#define IB_DEF(id, suffix, help, file, ext, x4) {file, ext, x4},
static const ib_ctr_def ib_ctrs[IB_NCTR] = {HOST_IB_COUNTERS(IB_DEF)};

typedef struct ib_port {
    char *lbl;
    host_file state, phys, rate;
    host_file ctr[IB_NCTR];
} ib_port;

typedef struct ib_dev {
    char *name;
    host_file board, fw, hca;
    ib_port *ports;
    size_t nports;
} ib_dev;

/* ---- hwmon --------------------------------------------------------------------- */

enum { HW_CONST, HW_ZERO, HW_BEEP_ENABLE, HW_IDENT, HW_MILLI, HW_MICRO };

typedef struct hw_fam {
    char *name, *help; /* NULL when cat is set */
    const agent_metric *cat;
    expo_type type;
} hw_fam;

typedef struct hw_slot {
    host_file f; /* rel NULL for HW_CONST */
    char *lbl;
    int kind;
    size_t fam;
} hw_slot;

typedef struct hw_table {
    hw_fam *fams;
    size_t nfams, fams_cap;
    hw_slot *slots;
    size_t nslots, slots_cap;
} hw_table;

/* ---- cpu ------------------------------------------------------------------------ */

typedef struct th_ent {
    uint64_t pkg, core;
    host_file f;
    char *lbl;
} th_ent;

typedef struct cs_ent {
    host_file avail, cur;
    char dev[24];
} cs_ent;

struct host_sys_state {
    int net_fd, ib_fd, hw_fd, cpu_fd, cs_fd;
    host_names scratch;
    host_names nc_raw, ib_raw, hw_raw;       /* as listed, for the change check */
    host_names nc_names, ib_names, hw_names; /* sorted, what the tables are built from */
    nc_dev *nc;
    size_t nnc;
    ib_dev *ib;
    size_t nib;
    hw_table hw;
    th_ent *th_core, *th_pkg;
    size_t nth_core, nth_pkg;
    size_t th_ncpu; /* h->ncpu_lines when built; SIZE_MAX: never */
    cs_ent *cs;
    size_t ncs;
    int cs_built;
};

static void free_rel(agent_host *h, host_file *f) {
    agent__host_file_close(h, f);
    free((char *)f->rel);
    f->rel = NULL;
}

static int set_rel(host_file *f, int dirfd, const char *a, const char *b, const char *c) {
    size_t n = strlen(a) + strlen(b) + strlen(c) + 3;
    char *p = malloc(n);
    if (!p) return BASE_E_NOMEM;
    snprintf(p, n, "%s%s%s%s%s", a, *b ? "/" : "", b, *c ? "/" : "", c);
    *f = agent__host_file(dirfd, p);
    return 0;
}

static int open_dir(int at, const char *rel) {
    return openat(at, rel, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

/* Reads a small file once (for build-time values). */
static int read_once(int dirfd, const char *rel, char *buf, size_t cap, size_t *ret_len) {
    int fd = openat(dirfd, rel, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) return BASE_E_NOTFOUND;
    ssize_t n;
    do n = read(fd, buf, cap - 1);
    while (n < 0 && errno == EINTR);
    close(fd);
    if (n < 0) return BASE_E_IO;
    buf[n] = '\0';
    *ret_len = (size_t)n;
    return 0;
}

/* Refreshes a listing; 1 when it changed (an unreadable directory counts
 * as empty), and then *sorted holds the new names in order. */
static int listing_changed(agent_host *h, int fd, host_names *raw, host_names *sorted) {
    host_sys_state *s = h->sys;
    if (agent__host_list(h, fd, &s->scratch) != 0) s->scratch.n = s->scratch.pool_len = 0;
    if (agent__host_names_equal(&s->scratch, raw)) return 0;
    host_names t = *raw;
    *raw = s->scratch;
    s->scratch = t;
    if (agent__host_names_copy(sorted, raw) != 0) sorted->n = sorted->pool_len = 0;
    agent__host_names_sort(sorted);
    h->rebuilds++;
    return 1;
}

/* ---- netclass ---- */

static void nc_free(agent_host *h) {
    host_sys_state *s = h->sys;
    for (size_t i = 0; i < s->nnc; i++) {
        nc_dev *d = &s->nc[i];
        for (int k = 0; k < NC_NUM; k++) free_rel(h, &d->num[k]);
        for (int k = 0; k < NCS__N; k++) free_rel(h, &d->str[k]);
        free(d->name);
        free(d->lbl);
    }
    free(s->nc);
    s->nc = NULL;
    s->nnc = 0;
}

static void nc_build(agent_host *h) {
    host_sys_state *s = h->sys;
    nc_free(h);
    const host_names *l = &s->nc_names;
    if (!l->n) return;
    s->nc = calloc(l->n, sizeof *s->nc);
    if (!s->nc) return;
    for (size_t i = 0; i < l->n; i++) {
        if (agent__host_entry_type(s->net_fd, l, i, 0) == DT_REG) continue; /* bonding_masters */
        const char *name = host_names_at(l, i);
        nc_dev *d = &s->nc[s->nnc];
        for (int k = 0; k < NC_NUM; k++) d->num[k] = NO_FILE;
        for (int k = 0; k < NCS__N; k++) d->str[k] = NO_FILE;
        agent__host_lb_reset(h);
        agent__host_lb_add(h, "device", name, strlen(name));
        d->lbl = agent__host_lb_dup(h);
        d->name = agent__host_strndup(name, strlen(name));
        int bad = !d->lbl || !d->name;
        for (int k = 0; k < NC_NUM && !bad; k++)
            bad = set_rel(&d->num[k], s->net_fd, name, nc_num_files[k], "") != 0;
        for (int k = 0; k < NCS__N && !bad; k++)
            bad = set_rel(&d->str[k], s->net_fd, name, nc_str_files[k], "") != 0;
        if (bad) {
            for (int k = 0; k < NC_NUM; k++) free_rel(h, &d->num[k]);
            for (int k = 0; k < NCS__N; k++) free_rel(h, &d->str[k]);
            free(d->name);
            free(d->lbl);
            d->name = d->lbl = NULL;
            continue;
        }
        s->nnc++;
    }
}

static int read_trim(agent_host *h, host_file *f, base_str *ret) {
    if (!f->rel) return BASE_E_NOTFOUND;
    int rc = agent__host_read_attr(h, f, SYS_READ_MAX, ret);
    if (rc == 0) *ret = agent__host_trim(*ret);
    return rc;
}

static void nc_collect(agent_host *h, expo_mset *ms) {
    host_sys_state *s = h->sys;
    if (s->net_fd < 0) s->net_fd = open_dir(h->sys_fd, "class/net");
    if (s->net_fd < 0) return;
    if (listing_changed(h, s->net_fd, &s->nc_raw, &s->nc_names)) nc_build(h);
    expo_family *fup = NULL, *finfo = NULL, *fnum[NC_NUM];
    for (size_t i = 0; i < s->nnc; i++) {
        nc_dev *d = &s->nc[i];
        base_str sv[NCS__N];
        for (int k = 0; k < NCS__N; k++)
            if (read_trim(h, &d->str[k], &sv[k]) != 0)
                sv[k] = (base_str){"", 0};
            else {
                /* h->ab is reused by the next read: keep a copy in the set's arena */
                char *c = base_arena_strndup(&ms->arena, sv[k].p, sv[k].n);
                if (!c) {
                    ms->err = BASE_E_NOMEM;
                    return;
                }
                sv[k].p = c;
            }
        if (!fup) {
            fup = agent__host_fam(ms, HOST_M_NET_UP);
            finfo = agent__host_fam(ms, HOST_M_NET_INFO);
            for (int k = 0; k < NC_NUM; k++) fnum[k] = agent__host_fam(ms, HOST_M_NC_ADDR_ASSIGN_TYPE + k);
        }
        expo_mset_add(ms, fup, NULL, d->lbl, NULL, base_str_eqc(sv[NCS_OPERSTATE], "up") ? 1 : 0);
        agent__host_lb_reset(h);
        agent__host_lb_add(h, "address", sv[NCS_ADDRESS].p, sv[NCS_ADDRESS].n);
        agent__host_lb_add(h, "broadcast", sv[NCS_BROADCAST].p, sv[NCS_BROADCAST].n);
        agent__host_lb_add(h, "device", d->name, strlen(d->name));
        agent__host_lb_add(h, "duplex", sv[NCS_DUPLEX].p, sv[NCS_DUPLEX].n);
        agent__host_lb_add(h, "ifalias", sv[NCS_IFALIAS].p, sv[NCS_IFALIAS].n);
        agent__host_lb_add(h, "operstate", sv[NCS_OPERSTATE].p, sv[NCS_OPERSTATE].n);
        const char *il = agent__host_lb_arena(h, ms);
        if (il) expo_mset_add(ms, finfo, NULL, il, NULL, 1);
        for (int k = 0; k < NC_NUM; k++) {
            base_str t;
            int64_t v;
            if (read_trim(h, &d->num[k], &t) != 0 || agent__host_parse_int_base0(t, &v) != 0) continue;
            double x = (double)v;
            if (HOST_M_NC_ADDR_ASSIGN_TYPE + k == HOST_M_NC_SPEED) {
                if (v > INT64_MAX / 1000000 || v < INT64_MIN / 1000000) continue;
                x = (double)(v * 1000 * 1000 / 8); /* Go: int64(speed * 1000 * 1000 / 8) */
            }
            expo_mset_add(ms, fnum[k], NULL, d->lbl, NULL, x);
        }
    }
}

/* ---- infiniband ---- */

static void ib_free(agent_host *h) {
    host_sys_state *s = h->sys;
    for (size_t i = 0; i < s->nib; i++) {
        ib_dev *d = &s->ib[i];
        for (size_t p = 0; p < d->nports; p++) {
            ib_port *pt = &d->ports[p];
            free_rel(h, &pt->state);
            free_rel(h, &pt->phys);
            free_rel(h, &pt->rate);
            for (int k = 0; k < IB_NCTR; k++) free_rel(h, &pt->ctr[k]);
            free(pt->lbl);
        }
        free(d->ports);
        free_rel(h, &d->board);
        free_rel(h, &d->fw);
        free_rel(h, &d->hca);
        free(d->name);
    }
    free(s->ib);
    s->ib = NULL;
    s->nib = 0;
}

/* Lists <dev>/ports/<port>/<dir> and adds the counters it knows. */
static void ib_counters(agent_host *h, ib_port *pt, const char *dev, const char *port, int ext) {
    host_sys_state *s = h->sys;
    char rel[PATH_MAX];
    snprintf(rel, sizeof rel, "%s/ports/%s/%s", dev, port, ext ? "counters_ext" : "counters");
    int fd = open_dir(s->ib_fd, rel);
    if (fd < 0) return;
    host_names l = {0};
    if (agent__host_list(h, fd, &l) == 0)
        for (size_t i = 0; i < l.n; i++)
            for (int k = 0; k < IB_NCTR; k++)
                if (ib_ctrs[k].ext == ext && strcmp(ib_ctrs[k].file, host_names_at(&l, i)) == 0 &&
                    agent__host_entry_type(fd, &l, i, 0) == DT_REG)
                    set_rel(&pt->ctr[k], s->ib_fd, rel, ib_ctrs[k].file, "");
    agent__host_names_free(&l);
    close(fd);
}

static void ib_build(agent_host *h) {
    host_sys_state *s = h->sys;
    ib_free(h);
    const host_names *l = &s->ib_names;
    if (!l->n) return;
    s->ib = calloc(l->n, sizeof *s->ib);
    if (!s->ib) return;
    for (size_t i = 0; i < l->n; i++) {
        const char *name = host_names_at(l, i);
        ib_dev *d = &s->ib[s->nib];
        d->board = d->fw = d->hca = NO_FILE;
        d->name = agent__host_strndup(name, strlen(name));
        if (!d->name || set_rel(&d->board, s->ib_fd, name, "board_id", "") ||
            set_rel(&d->fw, s->ib_fd, name, "fw_ver", "") ||
            set_rel(&d->hca, s->ib_fd, name, "hca_type", "")) {
            s->nib++;
            continue; /* freed with the table */
        }
        s->nib++;
        char rel[PATH_MAX];
        snprintf(rel, sizeof rel, "%s/ports", name);
        int pfd = open_dir(s->ib_fd, rel);
        if (pfd < 0) continue;
        host_names pl = {0};
        if (agent__host_list(h, pfd, &pl) == 0 && pl.n) d->ports = calloc(pl.n, sizeof *d->ports);
        agent__host_names_sort(&pl);
        for (size_t p = 0; d->ports && p < pl.n; p++) {
            ib_port *pt = &d->ports[p];
            pt->state = pt->phys = pt->rate = NO_FILE;
            for (int k = 0; k < IB_NCTR; k++) pt->ctr[k] = NO_FILE;
        }
        for (size_t p = 0; d->ports && p < pl.n; p++) {
            const char *port = host_names_at(&pl, p);
            uint64_t num;
            if (base_parse_u64(port, strlen(port), &num) != 0 || num > UINT32_MAX) continue;
            ib_port *pt = &d->ports[d->nports];
            char pnum[24];
            snprintf(pnum, sizeof pnum, "%llu", (unsigned long long)num);
            agent__host_lb_reset(h);
            agent__host_lb_add(h, "device", name, strlen(name));
            agent__host_lb_add(h, "port", pnum, strlen(pnum));
            pt->lbl = agent__host_lb_dup(h);
            d->nports++;
            if (!pt->lbl) continue;
            snprintf(rel, sizeof rel, "%s/ports/%s", name, port);
            set_rel(&pt->state, s->ib_fd, rel, "state", "");
            set_rel(&pt->phys, s->ib_fd, rel, "phys_state", "");
            set_rel(&pt->rate, s->ib_fd, rel, "rate", "");
            ib_counters(h, pt, name, port, 0);
            ib_counters(h, pt, name, port, 1);
        }
        agent__host_names_free(&pl);
        close(pfd);
    }
}

/* "4: ACTIVE" -> 4 */
static int ib_state(base_str t, double *ret) {
    const char *c = memchr(t.p, ':', t.n);
    if (!c || memchr(c + 1, ':', (size_t)(t.p + t.n - c - 1))) return BASE_E_PARSE;
    base_str id = agent__host_trim((base_str){t.p, (size_t)(c - t.p)});
    uint64_t v;
    if (base_parse_u64(id.p, id.n, &v) != 0 || v > UINT32_MAX) return BASE_E_PARSE;
    *ret = (double)v;
    return 0;
}

/* "100 Gb/sec (4X EDR)" -> bytes/s, as procfs: float32 parse, x 125000000, to uint64 */
static int ib_rate(base_str t, double *ret) {
    const char *sp = memchr(t.p, ' ', t.n);
    if (!sp) return BASE_E_PARSE;
    base_str num = agent__host_trim((base_str){t.p, (size_t)(sp - t.p)});
    double v;
    if (agent__host_parse_float(num, &v) != 0) return BASE_E_PARSE;
    v = (double)(float)v;
    double r = v * 125000000;
    if (!(r >= 0) || r >= 18446744073709551616.0) return BASE_E_RANGE;
    *ret = (double)(uint64_t)r;
    return 0;
}

static void ib_collect(agent_host *h, expo_mset *ms) {
    host_sys_state *s = h->sys;
    if (s->ib_fd < 0) s->ib_fd = open_dir(h->sys_fd, "class/infiniband");
    if (s->ib_fd < 0) return;
    if (listing_changed(h, s->ib_fd, &s->ib_raw, &s->ib_names)) ib_build(h);
    expo_family *fam[4 + IB_NCTR] = {0};
    for (size_t i = 0; i < s->nib; i++) {
        ib_dev *d = &s->ib[i];
        if (!d->hca.rel) continue;
        base_str v[3];
        host_file *inf[3] = {&d->board, &d->fw, &d->hca};
        for (int k = 0; k < 3; k++) {
            if (read_trim(h, inf[k], &v[k]) != 0) v[k] = (base_str){"", 0};
            char *c = base_arena_strndup(&ms->arena, v[k].p, v[k].n);
            if (!c) {
                ms->err = BASE_E_NOMEM;
                return;
            }
            v[k].p = c;
        }
        if (!fam[0])
            for (int k = 0; k < 4 + IB_NCTR; k++) fam[k] = agent__host_fam(ms, HOST_M_IB_INFO + k);
        agent__host_lb_reset(h);
        agent__host_lb_add(h, "board_id", v[0].p, v[0].n);
        agent__host_lb_add(h, "device", d->name, strlen(d->name));
        agent__host_lb_add(h, "firmware_version", v[1].p, v[1].n);
        agent__host_lb_add(h, "hca_type", v[2].p, v[2].n);
        const char *il = agent__host_lb_arena(h, ms);
        if (il) expo_mset_add(ms, fam[0], NULL, il, NULL, 1);
        for (size_t p = 0; p < d->nports; p++) {
            ib_port *pt = &d->ports[p];
            if (!pt->lbl) continue;
            base_str t;
            double x;
            if (pt->state.rel && agent__host_read_attr(h, &pt->state, HOST_ATTR_MAX, &t) == 0 &&
                ib_state(t, &x) == 0)
                expo_mset_add(ms, fam[1], NULL, pt->lbl, NULL, x);
            if (pt->phys.rel && agent__host_read_attr(h, &pt->phys, HOST_ATTR_MAX, &t) == 0 &&
                ib_state(t, &x) == 0)
                expo_mset_add(ms, fam[2], NULL, pt->lbl, NULL, x);
            if (pt->rate.rel && agent__host_read_attr(h, &pt->rate, HOST_ATTR_MAX, &t) == 0 &&
                ib_rate(t, &x) == 0)
                expo_mset_add(ms, fam[3], NULL, pt->lbl, NULL, x);
            for (int k = 0; k < IB_NCTR; k++) {
                uint64_t c;
                if (read_trim(h, &pt->ctr[k], &t) != 0 || base_parse_u64(t.p, t.n, &c) != 0)
                    continue; /* "N/A (no PMA)" */
                if (ib_ctrs[k].x4) c *= 4;
                expo_mset_add(ms, fam[4 + k], NULL, pt->lbl, NULL, (double)c);
            }
        }
    }
}

/* ---- hwmon ---- */

size_t agent__host_hwmon_clean(const char *s, size_t n, char *out, size_t cap) {
    size_t len = 0;
    for (size_t i = 0; i < n && len + 1 < cap; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 'A' && c <= 'Z') c = (unsigned char)(c - 'A' + 'a');
        if (c >= 0x80) {
            /* Go lower-cases and replaces per rune: one '_' per UTF-8 sequence */
            size_t k = 1;
            while (i + k < n && ((unsigned char)s[i + k] & 0xc0) == 0x80 && k < 4) k++;
            if ((c & 0xe0) == 0xc0 || (c & 0xf0) == 0xe0 || (c & 0xf8) == 0xf0) i += k - 1;
            c = '_';
        } else if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == ':' || c == '_')) {
            c = '_';
        }
        out[len++] = (char)c;
    }
    size_t a = 0;
    while (a < len && out[a] == '_') a++;
    while (len > a && out[len - 1] == '_') len--;
    memmove(out, out + a, len - a);
    len -= a;
    if (cap) out[len] = '\0';
    return len;
}

static const char *const hw_types[] = {
    "vrm",  "beep_enable", "update_interval", "in",     "cpu",      "fan",       "pwm",
    "temp", "curr",        "power",           "energy", "humidity", "intrusion", NULL};

int agent__host_hwmon_split(const char *name, base_str *type, int *num, base_str *prop) {
    /* ^(?P<type>[^0-9]+)(?P<id>[0-9]*)?(_(?P<property>.+))?$ : the greedy type
     * runs to the first digit (or the end), so there is one way to match */
    size_t n = strlen(name), i = 0;
    while (i < n && !(name[i] >= '0' && name[i] <= '9')) i++;
    if (i == 0) return 0;
    *type = (base_str){name, i};
    long v = 0;
    for (size_t start = i; i < n && name[i] >= '0' && name[i] <= '9'; i++) {
        if (i - start >= 9) return 0; /* no sensor number is that long */
        v = v * 10 + (name[i] - '0');
    }
    *num = (int)v;
    if (i == n) {
        *prop = (base_str){name + n, 0};
        return 1;
    }
    if (name[i] != '_' || i + 1 == n) return 0;
    *prop = (base_str){name + i + 1, n - i - 1};
    return 1;
}

static void hw_free(agent_host *h) {
    hw_table *t = &h->sys->hw;
    for (size_t i = 0; i < t->nslots; i++) {
        free_rel(h, &t->slots[i].f);
        free(t->slots[i].lbl);
    }
    for (size_t i = 0; i < t->nfams; i++) {
        free(t->fams[i].name);
        free(t->fams[i].help);
    }
    free(t->slots);
    free(t->fams);
    memset(t, 0, sizeof *t);
}

/* Finds or adds the family; SIZE_MAX when the name exists with another HELP
 * (client_golang drops such a metric). */
static size_t hw_family(agent_host *h, const char *name, const char *help, expo_type type) {
    hw_table *t = &h->sys->hw;
    for (size_t i = 0; i < t->nfams; i++) {
        hw_fam *f = &t->fams[i];
        const char *fn = f->cat ? f->cat->name : f->name, *fh = f->cat ? f->cat->help : f->help;
        if (strcmp(fn, name) == 0) return strcmp(fh, help) == 0 ? i : SIZE_MAX;
    }
    if (t->nfams == t->fams_cap) {
        size_t cap = t->fams_cap ? t->fams_cap * 2 : 32;
        hw_fam *p = realloc(t->fams, cap * sizeof *p);
        if (!p) return SIZE_MAX;
        t->fams = p;
        t->fams_cap = cap;
    }
    hw_fam *f = &t->fams[t->nfams];
    memset(f, 0, sizeof *f);
    f->cat = agent__host_cat_find(h, name, strlen(name));
    if (f->cat && strcmp(f->cat->help, help) != 0) f->cat = NULL;
    if (!f->cat) {
        f->name = agent__host_strndup(name, strlen(name));
        f->help = agent__host_strndup(help, strlen(help));
        if (!f->name || !f->help) {
            free(f->name);
            free(f->help);
            return SIZE_MAX;
        }
    }
    f->type = type;
    return t->nfams++;
}

/* Adds a slot; takes ownership of rel. A label set already in the family
 * (two chips with one name) is dropped, as client_golang drops the
 * duplicate. */
static void hw_slot_add(agent_host *h, size_t fam, int kind, int dirfd, char *rel, const char *lbl) {
    hw_table *t = &h->sys->hw;
    if (fam == SIZE_MAX || !lbl) {
        free(rel);
        return;
    }
    for (size_t i = 0; i < t->nslots; i++)
        if (t->slots[i].fam == fam && strcmp(t->slots[i].lbl, lbl) == 0) {
            free(rel);
            return;
        }
    if (t->nslots == t->slots_cap) {
        size_t cap = t->slots_cap ? t->slots_cap * 2 : 64;
        hw_slot *p = realloc(t->slots, cap * sizeof *p);
        if (!p) {
            free(rel);
            return;
        }
        t->slots = p;
        t->slots_cap = cap;
    }
    char *l = agent__host_strndup(lbl, strlen(lbl));
    if (!l) {
        free(rel);
        return;
    }
    t->slots[t->nslots++] = (hw_slot){agent__host_file(dirfd, rel), l, kind, fam};
}

typedef struct hw_rec {
    char sensor[48]; /* type + number */
    char prop[64];
    char type[24];
    char *rel; /* relative to the class dir */
} hw_rec;

typedef struct hw_recs {
    hw_rec *r;
    size_t n, cap;
} hw_recs;

static void hw_scan(agent_host *h, int classfd, const char *entry, const char *sub, hw_recs *rs) {
    char rel[PATH_MAX];
    snprintf(rel, sizeof rel, "%s%s%s", entry, *sub ? "/" : "", sub);
    int fd = open_dir(classfd, rel);
    if (fd < 0) return;
    host_names l = {0};
    if (agent__host_list(h, fd, &l) == 0) {
        for (size_t i = 0; i < l.n; i++) {
            const char *fn = host_names_at(&l, i);
            base_str type, prop;
            int num;
            if (!agent__host_hwmon_split(fn, &type, &num, &prop)) continue;
            int known = 0;
            for (const char *const *t = hw_types; *t; t++)
                if (base_str_eqc(type, *t)) known = 1;
            if (!known || prop.n >= sizeof rs->r->prop || type.n >= sizeof rs->r->type) continue;
            if (agent__host_entry_type(fd, &l, i, 1) != DT_REG) continue; /* a directory reads as an error */
            char sensor[48];
            snprintf(sensor, sizeof sensor, "%.*s%d", (int)type.n, type.p, num);
            size_t k;
            for (k = 0; k < rs->n; k++)
                if (strcmp(rs->r[k].sensor, sensor) == 0 && strncmp(rs->r[k].prop, prop.p, prop.n) == 0 &&
                    rs->r[k].prop[prop.n] == '\0')
                    break;
            if (k == rs->n) {
                if (rs->n == rs->cap) {
                    size_t cap = rs->cap ? rs->cap * 2 : 32;
                    hw_rec *p = realloc(rs->r, cap * sizeof *p);
                    if (!p) break;
                    rs->r = p;
                    rs->cap = cap;
                }
                hw_rec *r = &rs->r[rs->n++];
                memset(r, 0, sizeof *r);
                memcpy(r->sensor, sensor, strlen(sensor) + 1);
                memcpy(r->prop, prop.p, prop.n);
                memcpy(r->type, type.p, type.n);
            } else {
                free(rs->r[k].rel); /* hwmonN/device overrides hwmonN, as in node_exporter */
            }
            size_t rl = strlen(rel) + strlen(fn) + 2;
            rs->r[k].rel = malloc(rl);
            if (rs->r[k].rel) snprintf(rs->r[k].rel, rl, "%s/%s", rel, fn);
        }
    }
    agent__host_names_free(&l);
    close(fd);
}

static int rec_cmp(const void *a, const void *b) {
    const hw_rec *x = a, *y = b;
    int c = strcmp(x->sensor, y->sensor);
    return c ? c : strcmp(x->prop, y->prop);
}

/* node_exporter's chip label for class/hwmon/<entry>. */
static int hw_chip_name(agent_host *h, int classfd, const char *entry, char *out, size_t cap) {
    char path[PATH_MAX], real[PATH_MAX];
    snprintf(path, sizeof path, "%s/class/hwmon/%s/device", h->sysfs, entry);
    if (realpath(path, real)) {
        char *base = strrchr(real, '/');
        if (base) {
            *base++ = '\0';
            char *parent = strrchr(real, '/');
            parent = parent ? parent + 1 : real;
            char cn[256], ct[256];
            size_t ln = agent__host_hwmon_clean(base, strlen(base), cn, sizeof cn);
            size_t lt = agent__host_hwmon_clean(parent, strlen(parent), ct, sizeof ct);
            if (lt && ln) {
                snprintf(out, cap, "%s_%s", ct, cn);
                return 1;
            }
            if (ln) {
                snprintf(out, cap, "%s", cn);
                return 1;
            }
        }
    }
    char buf[256];
    size_t n;
    snprintf(path, sizeof path, "%s/name", entry);
    if (read_once(classfd, path, buf, sizeof buf, &n) == 0 && n > 0 &&
        agent__host_hwmon_clean(buf, n, out, cap) > 0)
        return 1;
    snprintf(path, sizeof path, "%s/class/hwmon/%s", h->sysfs, entry);
    if (realpath(path, real)) {
        char *base = strrchr(real, '/');
        base = base ? base + 1 : real;
        if (agent__host_hwmon_clean(base, strlen(base), out, cap) > 0) return 1;
    }
    return 0;
}

static void lb_chip_sensor(agent_host *h, const char *chip, const char *sensor) {
    agent__host_lb_reset(h);
    agent__host_lb_add(h, "chip", chip, strlen(chip));
    agent__host_lb_add(h, "sensor", sensor, strlen(sensor));
}

static char *dup_s(const char *s) {
    return s ? agent__host_strndup(s, strlen(s)) : NULL;
}

static void hw_element(agent_host *h, int classfd, const char *chip, const hw_rec *r, int has_plain) {
    const char *type = r->type, *el = r->prop;
    char name[256], help[512], clean[128];
    int kind = HW_IDENT;
    expo_type et = EXPO_GAUGE;
    size_t nl;
    if (strcmp(el, "input") == 0)
        nl = (size_t)snprintf(name, sizeof name, "node_hwmon_%s%s", type, has_plain ? "_input" : "");
    else if (*el) {
        agent__host_hwmon_clean(el, strlen(el), clean, sizeof clean);
        nl = (size_t)snprintf(name, sizeof name, "node_hwmon_%s_%s", type, clean);
    } else
        nl = (size_t)snprintf(name, sizeof name, "node_hwmon_%s", type);
    if (nl >= sizeof name - 24) return;
    char *end = name + nl;
    if (strcmp(el, "fault") == 0 || strcmp(el, "alarm") == 0) {
        snprintf(help, sizeof help, "Hardware sensor %s status (%s)", el, type);
    } else if (strcmp(el, "beep") == 0) {
        strcpy(end, "_enabled");
        snprintf(help, sizeof help, "Hardware monitor sensor has beeping enabled");
    } else if (strcmp(type, "in") == 0 || strcmp(type, "cpu") == 0) {
        strcpy(end, "_volts");
        snprintf(help, sizeof help, "Hardware monitor for voltage (%s)", el);
        kind = HW_MILLI;
    } else if (strcmp(type, "temp") == 0 && strcmp(el, "type") != 0) {
        strcpy(end, "_celsius");
        snprintf(help, sizeof help, "Hardware monitor for temperature (%s)", *el ? el : "input");
        kind = HW_MILLI;
    } else if (strcmp(type, "curr") == 0) {
        strcpy(end, "_amps");
        snprintf(help, sizeof help, "Hardware monitor for current (%s)", el);
        kind = HW_MILLI;
    } else if (strcmp(type, "energy") == 0) {
        strcpy(end, "_joule_total");
        snprintf(help, sizeof help, "Hardware monitor for joules used so far (%s)", el);
        kind = HW_MICRO;
        et = EXPO_COUNTER;
    } else if (strcmp(type, "power") == 0 && strcmp(el, "accuracy") == 0) {
        snprintf(help, sizeof help, "Hardware monitor power meter accuracy, as a ratio");
        kind = HW_MICRO;
    } else if (strcmp(type, "power") == 0 &&
               (strcmp(el, "average_interval") == 0 || strcmp(el, "average_interval_min") == 0 ||
                strcmp(el, "average_interval_max") == 0)) {
        strcpy(end, "_seconds");
        snprintf(help, sizeof help, "Hardware monitor power usage update interval (%s)", el);
        kind = HW_MILLI;
    } else if (strcmp(type, "power") == 0) {
        strcpy(end, "_watt");
        snprintf(help, sizeof help, "Hardware monitor for power usage in watts (%s)", el);
        kind = HW_MICRO;
    } else if (strcmp(type, "humidity") == 0) {
        snprintf(help, sizeof help,
                 "Hardware monitor for humidity, as a ratio (multiply with 100.0 to get the humidity as a "
                 "percentage) (%s)",
                 el);
        kind = HW_MICRO;
    } else if (strcmp(type, "fan") == 0 && (strcmp(el, "input") == 0 || strcmp(el, "min") == 0 ||
                                            strcmp(el, "max") == 0 || strcmp(el, "target") == 0)) {
        strcpy(end, "_rpm");
        snprintf(help, sizeof help, "Hardware monitor for fan revolutions per minute (%s)", el);
    } else {
        snprintf(help, sizeof help, "Hardware monitor %s element %s", type, el);
    }
    size_t fam = hw_family(h, name, help, et);
    lb_chip_sensor(h, chip, r->sensor);
    char *lbl = agent__host_lb_dup(h);
    hw_slot_add(h, fam, kind, classfd, dup_s(r->rel), lbl);
    free(lbl);
}

static void hw_chip(agent_host *h, int classfd, const char *entry) {
    char chip[512];
    if (!hw_chip_name(h, classfd, entry, chip, sizeof chip)) return;
    char buf[256], rel[PATH_MAX];
    size_t n;
    snprintf(rel, sizeof rel, "%s/name", entry);
    if (read_once(classfd, rel, buf, sizeof buf, &n) == 0 && n > 0) {
        char human[256];
        if (agent__host_hwmon_clean(buf, n, human, sizeof human) > 0) {
            agent__host_lb_reset(h);
            agent__host_lb_add(h, "chip", chip, strlen(chip));
            agent__host_lb_add(h, "chip_name", human, strlen(human));
            char *lbl = agent__host_lb_dup(h);
            const agent_metric *m = &agent__host_metrics[HOST_M_HWMON_CHIP_NAMES];
            hw_slot_add(h, hw_family(h, m->name, m->help, m->type), HW_CONST, classfd, NULL, lbl);
            free(lbl);
        }
    }
    hw_recs rs = {0};
    hw_scan(h, classfd, entry, "", &rs);
    struct stat st;
    snprintf(rel, sizeof rel, "%s/device", entry);
    if (fstatat(classfd, rel, &st, 0) == 0) hw_scan(h, classfd, entry, "device", &rs);
    if (rs.n > 1) qsort(rs.r, rs.n, sizeof *rs.r, rec_cmp);
    for (size_t a = 0; a < rs.n;) {
        size_t b = a;
        while (b < rs.n && strcmp(rs.r[b].sensor, rs.r[a].sensor) == 0) b++;
        const char *sensor = rs.r[a].sensor, *type = rs.r[a].type;
        const hw_rec *plain = NULL, *label = NULL;
        for (size_t k = a; k < b; k++) {
            if (!rs.r[k].rel) continue;
            if (!rs.r[k].prop[0]) plain = &rs.r[k];
            if (strcmp(rs.r[k].prop, "label") == 0) label = &rs.r[k];
        }
        if (label && read_once(classfd, label->rel, buf, SYS_READ_MAX + 1, &n) == 0) {
            base_str t = {buf, n};
            while (t.n && t.p[0] == '\n') t.p++, t.n--;
            while (t.n && t.p[t.n - 1] == '\n') t.n--;
            agent__host_lb_reset(h);
            agent__host_lb_add(h, "chip", chip, strlen(chip));
            agent__host_lb_add(h, "label", t.p, t.n);
            agent__host_lb_add(h, "sensor", sensor, strlen(sensor));
            char *lbl = agent__host_lb_dup(h);
            const agent_metric *m = &agent__host_metrics[HOST_M_HWMON_SENSOR_LABEL];
            hw_slot_add(h, hw_family(h, m->name, m->help, m->type), HW_CONST, classfd, NULL, lbl);
            free(lbl);
        }
        int special = strcmp(type, "beep_enable") == 0       ? HOST_M_HWMON_BEEP_ENABLED
                      : strcmp(type, "vrm") == 0             ? HOST_M_HWMON_VRM
                      : strcmp(type, "update_interval") == 0 ? HOST_M_HWMON_UPDATE_INTERVAL
                                                             : -1;
        if (special >= 0) {
            const agent_metric *m = &agent__host_metrics[special];
            lb_chip_sensor(h, chip, sensor);
            char *lbl = agent__host_lb_dup(h);
            int kind = special == HOST_M_HWMON_BEEP_ENABLED ? HW_BEEP_ENABLE
                       : special == HOST_M_HWMON_VRM        ? HW_IDENT
                                                            : HW_MILLI;
            if (plain)
                hw_slot_add(h, hw_family(h, m->name, m->help, m->type), kind, classfd, dup_s(plain->rel),
                            lbl);
            else if (kind ==
                     HW_BEEP_ENABLE) /* no beep_enable file itself: node_exporter compares "" with "1" */
                hw_slot_add(h, hw_family(h, m->name, m->help, m->type), HW_ZERO, classfd, NULL, lbl);
            free(lbl);
        } else {
            for (size_t k = a; k < b; k++)
                if (rs.r[k].rel && strcmp(rs.r[k].prop, "label") != 0)
                    hw_element(h, classfd, chip, &rs.r[k], plain != NULL);
        }
        a = b;
    }
    for (size_t k = 0; k < rs.n; k++) free(rs.r[k].rel);
    free(rs.r);
}

static int slot_cmp(const void *a, const void *b, void *table) {
    const hw_table *t = table;
    const hw_slot *x = a, *y = b;
    const hw_fam *fx = &t->fams[x->fam], *fy = &t->fams[y->fam];
    int c = strcmp(fx->cat ? fx->cat->name : fx->name, fy->cat ? fy->cat->name : fy->name);
    if (c) return c;
    return strcmp(x->lbl, y->lbl);
}

static void hw_build(agent_host *h) {
    host_sys_state *s = h->sys;
    hw_free(h);
    for (size_t i = 0; i < s->hw_names.n; i++) {
        if (agent__host_entry_type(s->hw_fd, &s->hw_names, i, 1) != DT_DIR) continue;
        hw_chip(h, s->hw_fd, host_names_at(&s->hw_names, i));
    }
    /* families by name, slots by family then labels: a stable layout */
    if (s->hw.nslots > 1) qsort_r(s->hw.slots, s->hw.nslots, sizeof *s->hw.slots, slot_cmp, &s->hw);
}

static void hw_collect(agent_host *h, expo_mset *ms) {
    host_sys_state *s = h->sys;
    if (s->hw_fd < 0) s->hw_fd = open_dir(h->sys_fd, "class/hwmon");
    if (s->hw_fd < 0) return;
    if (listing_changed(h, s->hw_fd, &s->hw_raw, &s->hw_names)) hw_build(h);
    hw_table *t = &s->hw;
    expo_family *f = NULL;
    size_t cur = SIZE_MAX;
    for (size_t i = 0; i < t->nslots; i++) {
        hw_slot *sl = &t->slots[i];
        double v = sl->kind == HW_ZERO ? 0 : 1;
        if (sl->kind != HW_CONST && sl->kind != HW_ZERO) {
            base_str r;
            if (agent__host_read_attr(h, &sl->f, SYS_READ_MAX, &r) != 0) continue;
            while (r.n && r.p[0] == '\n') r.p++, r.n--;
            while (r.n && r.p[r.n - 1] == '\n') r.n--;
            if (sl->kind == HW_BEEP_ENABLE)
                v = base_str_eqc(r, "1") ? 1 : 0;
            else if (agent__host_parse_float(r, &v) != 0)
                continue;
            else if (sl->kind == HW_MILLI)
                v = v * 0.001;
            else if (sl->kind == HW_MICRO)
                v = v / 1000000.0;
        }
        if (sl->fam != cur) {
            hw_fam *hf = &t->fams[sl->fam];
            f = hf->cat ? expo_mset_family(ms, hf->cat->name, hf->cat->type, hf->cat->help, NULL)
                        : expo_mset_family(ms, hf->name, hf->type, hf->help, NULL);
            cur = sl->fam;
        }
        expo_mset_add(ms, f, NULL, sl->lbl, NULL, v);
    }
}

/* ---- cpu: thermal throttles, isolated ---- */

static void th_free(agent_host *h) {
    host_sys_state *s = h->sys;
    for (size_t i = 0; i < s->nth_core; i++) {
        free_rel(h, &s->th_core[i].f);
        free(s->th_core[i].lbl);
    }
    for (size_t i = 0; i < s->nth_pkg; i++) {
        free_rel(h, &s->th_pkg[i].f);
        free(s->th_pkg[i].lbl);
    }
    free(s->th_core);
    free(s->th_pkg);
    s->th_core = s->th_pkg = NULL;
    s->nth_core = s->nth_pkg = 0;
}

static int read_u64_once(int dirfd, const char *rel, uint64_t *ret) {
    char buf[64];
    size_t n;
    if (read_once(dirfd, rel, buf, sizeof buf, &n) != 0) return BASE_E_NOTFOUND;
    base_str t = agent__host_trim((base_str){buf, n});
    return base_parse_u64(t.p, t.n, ret);
}

static void th_build(agent_host *h) {
    host_sys_state *s = h->sys;
    th_free(h);
    s->th_ncpu = h->ncpu_lines;
    if (s->cpu_fd < 0) return;
    host_names l = {0};
    if (agent__host_list(h, s->cpu_fd, &l) != 0 || !l.n) {
        agent__host_names_free(&l);
        return;
    }
    agent__host_names_sort(&l);
    s->th_core = calloc(l.n, sizeof *s->th_core);
    s->th_pkg = calloc(l.n, sizeof *s->th_pkg);
    for (size_t i = 0; s->th_core && s->th_pkg && i < l.n; i++) {
        const char *cpu = host_names_at(&l, i); /* lexical order, as filepath.Glob */
        if (strncmp(cpu, "cpu", 3) != 0 || cpu[3] < '0' || cpu[3] > '9') continue;
        char rel[256];
        uint64_t pkg, core;
        snprintf(rel, sizeof rel, "%s/topology/physical_package_id", cpu);
        if (read_u64_once(s->cpu_fd, rel, &pkg) != 0) continue;
        snprintf(rel, sizeof rel, "%s/topology/core_id", cpu);
        if (read_u64_once(s->cpu_fd, rel, &core) != 0) continue;
        char ps[24], cs[24];
        snprintf(ps, sizeof ps, "%llu", (unsigned long long)pkg);
        snprintf(cs, sizeof cs, "%llu", (unsigned long long)core);
        size_t k;
        for (k = 0; k < s->nth_core; k++)
            if (s->th_core[k].pkg == pkg && s->th_core[k].core == core) break;
        snprintf(rel, sizeof rel, "%s/thermal_throttle/core_throttle_count", cpu);
        if (k == s->nth_core && faccessat(s->cpu_fd, rel, R_OK, 0) == 0) {
            th_ent *e = &s->th_core[s->nth_core];
            agent__host_lb_reset(h);
            agent__host_lb_add(h, "core", cs, strlen(cs));
            agent__host_lb_add(h, "package", ps, strlen(ps));
            e->lbl = agent__host_lb_dup(h);
            if (e->lbl && set_rel(&e->f, s->cpu_fd, rel, "", "") == 0) {
                e->pkg = pkg;
                e->core = core;
                s->nth_core++;
            } else {
                free(e->lbl);
                e->lbl = NULL;
            }
        }
        for (k = 0; k < s->nth_pkg; k++)
            if (s->th_pkg[k].pkg == pkg) break;
        snprintf(rel, sizeof rel, "%s/thermal_throttle/package_throttle_count", cpu);
        if (k == s->nth_pkg && faccessat(s->cpu_fd, rel, R_OK, 0) == 0) {
            th_ent *e = &s->th_pkg[s->nth_pkg];
            agent__host_lb_reset(h);
            agent__host_lb_add(h, "package", ps, strlen(ps));
            e->lbl = agent__host_lb_dup(h);
            if (e->lbl && set_rel(&e->f, s->cpu_fd, rel, "", "") == 0) {
                e->pkg = pkg;
                s->nth_pkg++;
            } else {
                free(e->lbl);
                e->lbl = NULL;
            }
        }
    }
    agent__host_names_free(&l);
    h->rebuilds++;
}

static void th_collect(agent_host *h, expo_mset *ms) {
    host_sys_state *s = h->sys;
    if (s->th_ncpu != h->ncpu_lines) th_build(h);
    expo_family *fp = NULL, *fc = NULL;
    for (size_t i = 0; i < s->nth_pkg; i++) {
        base_str t;
        uint64_t v;
        if (read_trim(h, &s->th_pkg[i].f, &t) != 0 || base_parse_u64(t.p, t.n, &v) != 0) continue;
        if (!fp) fp = agent__host_fam(ms, HOST_M_CPU_PACKAGE_THROTTLES);
        expo_mset_add(ms, fp, NULL, s->th_pkg[i].lbl, NULL, (double)v);
    }
    for (size_t i = 0; i < s->nth_core; i++) {
        base_str t;
        uint64_t v;
        if (read_trim(h, &s->th_core[i].f, &t) != 0 || base_parse_u64(t.p, t.n, &v) != 0) continue;
        if (!fc) fc = agent__host_fam(ms, HOST_M_CPU_CORE_THROTTLES);
        expo_mset_add(ms, fc, NULL, s->th_core[i].lbl, NULL, (double)v);
    }
    if (h->nisolated) {
        expo_family *fi = agent__host_fam(ms, HOST_M_CPU_ISOLATED);
        for (size_t i = 0; i < h->nisolated; i++) {
            const char *l = agent__host_cpu_label(h, h->isolated[i]);
            if (l) expo_mset_add(ms, fi, NULL, l, NULL, 1);
        }
    }
}

int agent__host_parse_cpulist(base_str s, unsigned *out, size_t max) {
    size_t n = 0;
    while (s.n && s.p[s.n - 1] == '\n') s.n--;
    while (s.n) {
        const char *comma = memchr(s.p, ',', s.n);
        base_str item = {s.p, comma ? (size_t)(comma - s.p) : s.n};
        s.p += item.n + (comma ? 1 : 0);
        s.n -= item.n + (comma ? 1 : 0);
        if (!item.n) continue;
        const char *dash = memchr(item.p, '-', item.n);
        uint64_t a, b;
        if (base_parse_u64(item.p, dash ? (size_t)(dash - item.p) : item.n, &a) != 0 || a > 65535)
            return BASE_E_PARSE;
        b = a;
        if (dash && (base_parse_u64(dash + 1, (size_t)(item.p + item.n - dash - 1), &b) != 0 || b > 65535))
            return BASE_E_PARSE;
        for (uint64_t c = a; c <= b; c++) {
            if (n == max) return BASE_E_LIMIT;
            out[n++] = (unsigned)c;
        }
    }
    return (int)n;
}

/* ---- clocksources ---- */

static void cs_build(agent_host *h) {
    host_sys_state *s = h->sys;
    s->cs_built = 1;
    if (s->cs_fd < 0) return;
    host_names l = {0};
    if (agent__host_list(h, s->cs_fd, &l) == 0 && l.n) s->cs = calloc(l.n, sizeof *s->cs);
    agent__host_names_sort(&l);
    for (size_t i = 0; s->cs && i < l.n; i++) {
        const char *nm = host_names_at(&l, i);
        if (strncmp(nm, "clocksource", 11) != 0 || nm[11] < '0' || nm[11] > '9') continue;
        cs_ent *e = &s->cs[s->ncs];
        e->avail = e->cur = NO_FILE;
        if (set_rel(&e->avail, s->cs_fd, nm, "available_clocksource", "") ||
            set_rel(&e->cur, s->cs_fd, nm, "current_clocksource", "")) {
            free_rel(h, &e->avail);
            continue;
        }
        snprintf(e->dev, sizeof e->dev, "%zu", s->ncs); /* node_exporter labels by index */
        s->ncs++;
    }
    agent__host_names_free(&l);
}

static void cs_collect(agent_host *h, expo_mset *ms) {
    host_sys_state *s = h->sys;
    if (!s->cs_built) cs_build(h);
    expo_family *fa = NULL, *fc = NULL;
    for (size_t i = 0; i < s->ncs; i++) {
        cs_ent *e = &s->cs[i];
        base_str t;
        if (agent__host_read_attr(h, &e->avail, HOST_ATTR_MAX, &t) != 0) continue;
        char *avail = base_arena_strndup(&ms->arena, t.p, t.n); /* h->ab is reused by the next read */
        if (!avail) {
            ms->err = BASE_E_NOMEM;
            return;
        }
        base_str av = {avail, t.n}, cur;
        if (agent__host_read_attr(h, &e->cur, HOST_ATTR_MAX, &cur) != 0) continue;
        cur = agent__host_trim(cur);
        for (base_str f = agent__host_next_field(&av); f.n; f = agent__host_next_field(&av)) {
            f = agent__host_trim(f);
            if (!f.n) continue;
            agent__host_lb_reset(h);
            agent__host_lb_add(h, "clocksource", f.p, f.n);
            agent__host_lb_add(h, "device", e->dev, strlen(e->dev));
            const char *l = agent__host_lb_arena(h, ms);
            if (!l) continue;
            if (!fa) fa = agent__host_fam(ms, HOST_M_CLOCKSOURCE_AVAILABLE);
            expo_mset_add(ms, fa, NULL, l, NULL, 1);
        }
        agent__host_lb_reset(h);
        agent__host_lb_add(h, "clocksource", cur.p, cur.n);
        agent__host_lb_add(h, "device", e->dev, strlen(e->dev));
        const char *l = agent__host_lb_arena(h, ms);
        if (!l) continue;
        if (!fc) fc = agent__host_fam(ms, HOST_M_CLOCKSOURCE_CURRENT);
        expo_mset_add(ms, fc, NULL, l, NULL, 1);
    }
}

static void cs_free(agent_host *h) {
    host_sys_state *s = h->sys;
    for (size_t i = 0; i < s->ncs; i++) {
        free_rel(h, &s->cs[i].avail);
        free_rel(h, &s->cs[i].cur);
    }
    free(s->cs);
    s->cs = NULL;
    s->ncs = 0;
}

/* ---- lifecycle ---- */

int agent__host_sys_new(agent_host *h) {
    host_sys_state *s = calloc(1, sizeof *s);
    if (!s) return BASE_E_NOMEM;
    h->sys = s;
    s->net_fd = s->ib_fd = s->hw_fd = -1;
    s->th_ncpu = SIZE_MAX;
    s->cpu_fd = open_dir(h->sys_fd, "devices/system/cpu");
    s->cs_fd = open_dir(h->sys_fd, "devices/system/clocksource");
    /* isolated CPUs: read once, as node_exporter does at start */
    char buf[4096];
    size_t n;
    if (read_once(h->sys_fd, "devices/system/cpu/isolated", buf, sizeof buf, &n) == 0) {
        unsigned tmp[1024];
        int c = agent__host_parse_cpulist((base_str){buf, n}, tmp, 1024);
        if (c > 0) {
            h->isolated = malloc((size_t)c * sizeof *h->isolated);
            if (h->isolated) {
                memcpy(h->isolated, tmp, (size_t)c * sizeof *tmp);
                h->nisolated = (size_t)c;
            }
        }
    }
    return 0;
}

void agent__host_sys_free(agent_host *h) {
    host_sys_state *s = h->sys;
    if (!s) return;
    nc_free(h);
    ib_free(h);
    hw_free(h);
    th_free(h);
    cs_free(h);
    agent__host_names_free(&s->scratch);
    agent__host_names_free(&s->nc_raw);
    agent__host_names_free(&s->ib_raw);
    agent__host_names_free(&s->hw_raw);
    agent__host_names_free(&s->nc_names);
    agent__host_names_free(&s->ib_names);
    agent__host_names_free(&s->hw_names);
    int fds[] = {s->net_fd, s->ib_fd, s->hw_fd, s->cpu_fd, s->cs_fd};
    for (size_t i = 0; i < sizeof fds / sizeof fds[0]; i++)
        if (fds[i] >= 0) close(fds[i]);
    free(s);
    h->sys = NULL;
}

void agent__host_sys_collect(agent_host *h, expo_mset *ms) {
    th_collect(h, ms);
    nc_collect(h, ms);
    ib_collect(h, ms);
    hw_collect(h, ms);
    cs_collect(h, ms);
}
