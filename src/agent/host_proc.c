/* host_proc.c -- the /proc text formats of the host collector.
 *
 * Each agent__host_emit_*() takes one file's text (a view into h->rb) and
 * adds node_exporter's families for it; nothing here does I/O except the
 * udev database reads of diskstats. Parsing follows node_exporter 1.5 and
 * procfs 0.8 where it decides what is exported (fields, names, units,
 * float arithmetic such as `ticks * 0.001`), but is more lenient where they
 * give up: a malformed line is skipped, not the whole file.
 *
 * Tables that follow the files' lines (net/dev devices, disks) keep their
 * entries in file order. A cycle first checks that the included lines
 * still name the same entries in the same order (the steady state, no
 * allocation); otherwise it rebuilds the table, moving over the entries
 * that survived, before any sample refers to one.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/host_int.h"
#include "base/err.h"
#include "base/num.h"

#define UDEV_REFRESH_CYCLES 60

static int valid_metric_name(const char *s, size_t n) {
    if (n == 0) return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' ||
              (i > 0 && c >= '0' && c <= '9')))
            return 0;
    }
    return 1;
}

/* A generated single-sample family: name and help built in h->nb. */
static void dyn_sample(agent_host *h, expo_mset *ms, size_t name_len, expo_type type, double v) {
    if (h->nb.err || !valid_metric_name(h->nb.data, name_len)) return;
    expo_family *f = agent__host_fam_dyn(h, ms, h->nb.data, name_len, type, h->nb.data + name_len + 1,
                                         h->nb.len - name_len - 1);
    if (f) expo_mset_add(ms, f, NULL, NULL, NULL, v);
}

/* ---- /proc/stat: cpu and stat ------------------------------------------- */

static const char *const cpu_modes[8] = {"mode=\"user\"",    "mode=\"nice\"",   "mode=\"system\"",
                                         "mode=\"idle\"",    "mode=\"iowait\"", "mode=\"irq\"",
                                         "mode=\"softirq\"", "mode=\"steal\""};

const char *agent__host_cpu_label(agent_host *h, size_t id) {
    if (id >= h->cpu_lbl_n) {
        size_t n = h->cpu_lbl_n ? h->cpu_lbl_n : 64;
        while (n <= id) n *= 2;
        char **p = realloc(h->cpu_lbl, n * sizeof *p);
        if (!p) return NULL;
        memset(p + h->cpu_lbl_n, 0, (n - h->cpu_lbl_n) * sizeof *p);
        h->cpu_lbl = p;
        h->cpu_lbl_n = n;
    }
    if (!h->cpu_lbl[id]) {
        char buf[40];
        int len = snprintf(buf, sizeof buf, "cpu=\"%zu\"", id);
        h->cpu_lbl[id] = agent__host_strndup(buf, (size_t)len);
    }
    return h->cpu_lbl[id];
}

static int ensure_cpu_prev(agent_host *h, size_t id) {
    if (id < h->cpu_cap) return 0;
    size_t n = h->cpu_cap ? h->cpu_cap : 64;
    while (n <= id) n *= 2;
    host_cpu_prev *p = realloc(h->cpu_prev, n * sizeof *p);
    if (!p) return BASE_E_NOMEM;
    unsigned char *s = realloc(h->cpu_seen, n);
    if (!s) {
        h->cpu_prev = p;
        return BASE_E_NOMEM;
    }
    memset(p + h->cpu_cap, 0, (n - h->cpu_cap) * sizeof *p);
    memset(s + h->cpu_cap, 0, n - h->cpu_cap);
    h->cpu_prev = p;
    h->cpu_seen = s;
    h->cpu_cap = n;
    return 0;
}

void agent__host_emit_stat(agent_host *h, base_str text, expo_mset *ms) {
    expo_family *fsec = NULL, *fguest = NULL;
    uint64_t intr = 0, ctxt = 0, btime = 0, forks = 0, running = 0, blocked = 0;
    int has_intr = 0, has_ctxt = 0, has_btime = 0, has_forks = 0, has_running = 0, has_blocked = 0;
    size_t ncpu = 0;
    /* The jump-back guard's cache is reset when the set of CPUs changes, as
     * node_exporter resets it when their number does. */
    base_str scan = text;
    while (scan.n) {
        base_str line = agent__host_next_line(&scan);
        base_str k = agent__host_next_field(&line);
        if (k.n > 3 && memcmp(k.p, "cpu", 3) == 0) ncpu++;
    }
    if (ncpu != h->ncpu_prev) {
        if (h->cpu_cap) {
            memset(h->cpu_prev, 0, h->cpu_cap * sizeof *h->cpu_prev);
            memset(h->cpu_seen, 0, h->cpu_cap);
        }
        h->ncpu_prev = ncpu;
    }
    h->ncpu_lines = ncpu;

    while (text.n) {
        base_str line = agent__host_next_line(&text);
        base_str k = agent__host_next_field(&line);
        if (k.n > 3 && memcmp(k.p, "cpu", 3) == 0) {
            uint64_t id;
            if (base_parse_u64(k.p + 3, k.n - 3, &id) != 0 || id >= HOST_MAX_CPUS) continue;
            double v[10] = {0};
            int nv = 0, bad = 0;
            for (; nv < 10; nv++) {
                base_str f = agent__host_next_field(&line);
                if (!f.n) break;
                uint64_t t;
                if (base_parse_u64(f.p, f.n, &t) != 0) {
                    bad = 1;
                    break;
                }
                v[nv] = (double)t / 100.0; /* USER_HZ */
            }
            if (bad || nv < 4 || ensure_cpu_prev(h, (size_t)id) != 0) continue;
            const char *lbl = agent__host_cpu_label(h, (size_t)id);
            if (!lbl) continue;
            host_cpu_prev *p = &h->cpu_prev[id];
            /* idle (index 3) going back 3 s or more: hotplug; start over */
            if (p->v[3] - v[3] >= 3.0) memset(p, 0, sizeof *p);
            for (int i = 0; i < 10; i++)
                if (v[i] >= p->v[i]) p->v[i] = v[i];
            h->cpu_seen[id] = 1;
            if (!fsec) {
                fsec = agent__host_fam(ms, HOST_M_CPU_SECONDS);
                fguest = agent__host_fam(ms, HOST_M_CPU_GUEST_SECONDS);
            }
            for (int m = 0; m < 8; m++) expo_mset_add(ms, fsec, NULL, lbl, cpu_modes[m], p->v[m]);
            expo_mset_add(ms, fguest, NULL, lbl, "mode=\"user\"", p->v[8]);
            expo_mset_add(ms, fguest, NULL, lbl, "mode=\"nice\"", p->v[9]);
            continue;
        }
        base_str val = agent__host_next_field(&line);
        uint64_t x;
        if (base_parse_u64(val.p, val.n, &x) != 0) continue;
        if (base_str_eqc(k, "intr"))
            intr = x, has_intr = 1;
        else if (base_str_eqc(k, "ctxt"))
            ctxt = x, has_ctxt = 1;
        else if (base_str_eqc(k, "btime"))
            btime = x, has_btime = 1;
        else if (base_str_eqc(k, "processes"))
            forks = x, has_forks = 1;
        else if (base_str_eqc(k, "procs_running"))
            running = x, has_running = 1;
        else if (base_str_eqc(k, "procs_blocked"))
            blocked = x, has_blocked = 1;
    }
    /* node_exporter's stat collector exports all six or nothing */
    if (!(has_intr && has_ctxt && has_btime && has_forks && has_running && has_blocked)) return;
    expo_mset_add(ms, agent__host_fam(ms, HOST_M_INTR), NULL, NULL, NULL, (double)intr);
    expo_mset_add(ms, agent__host_fam(ms, HOST_M_CONTEXT_SWITCHES), NULL, NULL, NULL, (double)ctxt);
    expo_mset_add(ms, agent__host_fam(ms, HOST_M_FORKS), NULL, NULL, NULL, (double)forks);
    expo_mset_add(ms, agent__host_fam(ms, HOST_M_BOOT_TIME), NULL, NULL, NULL, (double)btime);
    expo_mset_add(ms, agent__host_fam(ms, HOST_M_PROCS_RUNNING), NULL, NULL, NULL, (double)running);
    expo_mset_add(ms, agent__host_fam(ms, HOST_M_PROCS_BLOCKED), NULL, NULL, NULL, (double)blocked);
}

/* ---- /proc/meminfo -------------------------------------------------------- */

void agent__host_emit_meminfo(agent_host *h, base_str text, expo_mset *ms) {
    while (text.n) {
        base_str line = agent__host_next_line(&text);
        base_str key = agent__host_next_field(&line);
        base_str val = agent__host_next_field(&line);
        base_str unit = agent__host_next_field(&line);
        base_str extra = agent__host_next_field(&line);
        if (key.n < 2 || !val.n || extra.n) continue;
        double v;
        if (agent__host_parse_float(val, &v) != 0) continue;
        key.n--; /* the ':' (node_exporter drops the last byte, whatever it is) */
        base_buf_reset(&h->nb);
        base_buf_puts(&h->nb, "node_memory_");
        /* "Active(anon)" -> "Active_anon": the first '(' to the last ')' */
        const char *open = memchr(key.p, '(', key.n);
        const char *close = NULL;
        for (const char *c = key.p + key.n; open && c > open; c--)
            if (c[-1] == ')') {
                close = c - 1;
                break;
            }
        size_t kstart = h->nb.len;
        if (open && close) {
            base_buf_append(&h->nb, key.p, (size_t)(open - key.p));
            base_buf_putc(&h->nb, '_');
            base_buf_append(&h->nb, open + 1, (size_t)(close - open - 1));
            base_buf_append(&h->nb, close + 1, (size_t)(key.p + key.n - close - 1));
        } else {
            base_buf_append(&h->nb, key.p, key.n);
        }
        if (unit.n) {
            v *= 1024;
            base_buf_puts(&h->nb, "_bytes");
        }
        size_t name_len = h->nb.len, klen = name_len - kstart;
        static const char pre[] = "Memory information field ";
        /* the key is copied from the buffer itself: make room first so the
         * append cannot move it */
        if (base_buf_reserve(&h->nb, sizeof pre + klen + 2) != 0) continue;
        base_buf_putc(&h->nb, '\0');
        base_buf_puts(&h->nb, pre);
        base_buf_append(&h->nb, h->nb.data + kstart, klen);
        base_buf_putc(&h->nb, '.');
        dyn_sample(h, ms, name_len, EXPO_GAUGE, v);
    }
}

/* ---- /proc/vmstat ---------------------------------------------------------- */

int agent__host_vmstat_field_wanted(const char *k, size_t n) {
    /* ^(oom_kill|pgpg|pswp|pg.*fault).* */
    base_str s = {k, n};
    if (base_str_has_prefix(s, "oom_kill") || base_str_has_prefix(s, "pgpg") ||
        base_str_has_prefix(s, "pswp"))
        return 1;
    if (!base_str_has_prefix(s, "pg")) return 0;
    for (size_t i = 2; i + 5 <= n; i++)
        if (memcmp(k + i, "fault", 5) == 0) return 1;
    return 0;
}

void agent__host_emit_vmstat(agent_host *h, base_str text, expo_mset *ms) {
    while (text.n) {
        base_str line = agent__host_next_line(&text);
        base_str key = agent__host_next_field(&line);
        base_str val = agent__host_next_field(&line);
        double v;
        if (!agent__host_vmstat_field_wanted(key.p, key.n) || agent__host_parse_float(val, &v) != 0) continue;
        base_buf_reset(&h->nb);
        base_buf_puts(&h->nb, "node_vmstat_");
        base_buf_append(&h->nb, key.p, key.n);
        size_t name_len = h->nb.len;
        base_buf_putc(&h->nb, '\0');
        base_buf_puts(&h->nb, "/proc/vmstat information field ");
        base_buf_append(&h->nb, key.p, key.n);
        base_buf_putc(&h->nb, '.');
        dyn_sample(h, ms, name_len, EXPO_UNTYPED, v);
    }
}

/* ---- netstat, snmp, snmp6 ---------------------------------------------------- */

static int str_in(base_str s, const char *const *set) {
    for (; *set; set++)
        if (base_str_eqc(s, *set)) return 1;
    return 0;
}

int agent__host_netstat_field_wanted(const char *k, size_t n) {
    /* ^(.*_(InErrors|InErrs)|Ip_Forwarding|Ip(6|Ext)_(InOctets|OutOctets)|Icmp6?_(InMsgs|OutMsgs)|
     *   TcpExt_(Listen.*|Syncookies.*|TCPSynRetrans|TCPTimeouts)|Tcp_(ActiveOpens|InSegs|OutSegs|OutRsts|
     *   PassiveOpens|RetransSegs|CurrEstab)|Udp6?_(InDatagrams|OutDatagrams|NoPorts|RcvbufErrors|SndbufErrors))$
     */
    base_str s = {k, n};
    if (base_str_has_suffix(s, "_InErrors") || base_str_has_suffix(s, "_InErrs")) return 1;
    if (base_str_eqc(s, "Ip_Forwarding")) return 1;
    static const char *const octets[] = {"Ip6_InOctets",
                                         "Ip6_OutOctets",
                                         "IpExt_InOctets",
                                         "IpExt_OutOctets",
                                         "Icmp_InMsgs",
                                         "Icmp_OutMsgs",
                                         "Icmp6_InMsgs",
                                         "Icmp6_OutMsgs",
                                         "TcpExt_TCPSynRetrans",
                                         "TcpExt_TCPTimeouts",
                                         NULL};
    if (str_in(s, octets)) return 1;
    if (base_str_has_prefix(s, "TcpExt_Listen") || base_str_has_prefix(s, "TcpExt_Syncookies")) return 1;
    static const char *const tcp[] = {"ActiveOpens",  "InSegs",      "OutSegs",   "OutRsts",
                                      "PassiveOpens", "RetransSegs", "CurrEstab", NULL};
    if (base_str_has_prefix(s, "Tcp_") && str_in((base_str){k + 4, n - 4}, tcp)) return 1;
    static const char *const udp[] = {"InDatagrams",  "OutDatagrams", "NoPorts",
                                      "RcvbufErrors", "SndbufErrors", NULL};
    if (base_str_has_prefix(s, "Udp_") && str_in((base_str){k + 4, n - 4}, udp)) return 1;
    if (base_str_has_prefix(s, "Udp6_") && str_in((base_str){k + 5, n - 5}, udp)) return 1;
    return 0;
}

static void netstat_one(agent_host *h, base_str proto, base_str field, base_str val, expo_mset *ms) {
    base_buf_reset(&h->nb);
    base_buf_append(&h->nb, proto.p, proto.n);
    base_buf_putc(&h->nb, '_');
    base_buf_append(&h->nb, field.p, field.n);
    if (h->nb.err || !agent__host_netstat_field_wanted(h->nb.data, h->nb.len)) return;
    double v;
    if (agent__host_parse_float(val, &v) != 0) return;
    base_buf_reset(&h->nb);
    base_buf_puts(&h->nb, "node_netstat_");
    base_buf_append(&h->nb, proto.p, proto.n);
    base_buf_putc(&h->nb, '_');
    base_buf_append(&h->nb, field.p, field.n);
    size_t name_len = h->nb.len;
    base_buf_putc(&h->nb, '\0');
    base_buf_puts(&h->nb, "Statistic ");
    base_buf_append(&h->nb, proto.p, proto.n);
    base_buf_append(&h->nb, field.p, field.n);
    base_buf_putc(&h->nb, '.');
    dyn_sample(h, ms, name_len, EXPO_UNTYPED, v);
}

void agent__host_emit_netstat(agent_host *h, base_str text, int snmp6, expo_mset *ms) {
    while (text.n) {
        base_str names = agent__host_next_line(&text);
        if (snmp6) {
            base_str key = agent__host_next_field(&names);
            base_str val = agent__host_next_field(&names);
            const char *six = key.n ? memchr(key.p, '6', key.n) : NULL;
            if (!val.n || !six) continue;
            size_t pl = (size_t)(six - key.p) + 1;
            netstat_one(h, (base_str){key.p, pl}, (base_str){key.p + pl, key.n - pl}, val, ms);
            continue;
        }
        if (!text.n) break;
        base_str vals = agent__host_next_line(&text);
        base_str proto = agent__host_next_field(&names);
        base_str vproto = agent__host_next_field(&vals);
        if (proto.n < 2 || !base_str_eq(proto, vproto)) continue;
        proto.n--; /* the ':' */
        /* both lines must have the same number of fields */
        base_str cn = names, cv = vals;
        size_t nn = 0, nv = 0;
        while (agent__host_next_field(&cn).n) nn++;
        while (agent__host_next_field(&cv).n) nv++;
        if (nn != nv) continue;
        for (;;) {
            base_str f = agent__host_next_field(&names);
            base_str v = agent__host_next_field(&vals);
            if (!f.n) break;
            netstat_one(h, proto, f, v, ms);
        }
    }
}

/* ---- sockstat --------------------------------------------------------------- */

static void sockstat_one(agent_host *h, expo_mset *ms, base_str proto, const char *state, double v) {
    base_buf_reset(&h->nb);
    base_buf_puts(&h->nb, "node_sockstat_");
    base_buf_append(&h->nb, proto.p, proto.n);
    base_buf_putc(&h->nb, '_');
    base_buf_puts(&h->nb, state);
    size_t name_len = h->nb.len;
    base_buf_putc(&h->nb, '\0');
    base_buf_puts(&h->nb, "Number of ");
    base_buf_append(&h->nb, proto.p, proto.n);
    base_buf_puts(&h->nb, " sockets in state ");
    base_buf_puts(&h->nb, state);
    base_buf_putc(&h->nb, '.');
    dyn_sample(h, ms, name_len, EXPO_GAUGE, v);
}

void agent__host_emit_sockstat(agent_host *h, base_str text, int ipv6, expo_mset *ms) {
    (void)ipv6;
    static const char *const keys[] = {"inuse", "orphan", "tw", "alloc", "mem", "memory"};
    while (text.n) {
        base_str line = agent__host_next_line(&text);
        base_str proto = agent__host_next_field(&line);
        if (proto.n < 2 || proto.p[proto.n - 1] != ':') continue;
        proto.n--;
        int64_t val[6] = {0};
        int has[6] = {0}, ok = 1, pairs = 0;
        int64_t used = 0;
        int has_used = 0;
        for (;;) {
            base_str k = agent__host_next_field(&line);
            if (!k.n) break;
            base_str v = agent__host_next_field(&line);
            int64_t x;
            if (!v.n || base_parse_i64(v.p, v.n, &x) != 0) {
                ok = 0;
                break;
            }
            pairs++;
            if (base_str_eqc(k, "used")) used = x, has_used = 1;
            for (int i = 0; i < 6; i++)
                if (base_str_eqc(k, keys[i])) val[i] = x, has[i] = 1;
        }
        if (!ok || pairs == 0) continue;
        if (base_str_eqc(proto, "sockets")) {
            if (has_used) {
                expo_family *f = agent__host_fam_dyn(h, ms, agent__host_metrics[HOST_M_SOCK_USED].name,
                                                     strlen(agent__host_metrics[HOST_M_SOCK_USED].name),
                                                     EXPO_GAUGE, agent__host_metrics[HOST_M_SOCK_USED].help,
                                                     strlen(agent__host_metrics[HOST_M_SOCK_USED].help));
                if (f) expo_mset_add(ms, f, NULL, NULL, NULL, (double)used);
            }
            continue;
        }
        sockstat_one(h, ms, proto, "inuse", (double)val[0]); /* always, as node_exporter */
        for (int i = 1; i < 6; i++)
            if (has[i]) sockstat_one(h, ms, proto, keys[i], (double)val[i]);
        if (has[4]) /* pages x page size in Go's int: wraps rather than overflows */
            sockstat_one(h, ms, proto, "mem_bytes",
                         (double)(int64_t)((uint64_t)val[4] * (uint64_t)h->page_size));
    }
}

/* ---- /proc/net/dev ------------------------------------------------------------ */

static void netdev_ent_free(agent_host *h, host_netdev_ent *e) {
    agent__host_file_close(h, &e->nohandler);
    free(e->name);
    free(e->lbl);
    free(e->rel);
}

/* "  eth0: 1 2 3 ..." -> name and the 16 counters. */
static int netdev_line(base_str line, base_str *name, uint64_t v[16]) {
    const char *colon = NULL;
    for (size_t i = line.n; i > 0; i--)
        if (line.p[i - 1] == ':') {
            colon = line.p + i - 1;
            break;
        }
    if (!colon) return 0;
    *name = agent__host_trim((base_str){line.p, (size_t)(colon - line.p)});
    base_str rest = {colon + 1, (size_t)(line.p + line.n - colon - 1)};
    for (int i = 0; i < 16; i++) {
        base_str f = agent__host_next_field(&rest);
        if (base_parse_u64(f.p, f.n, &v[i]) != 0) return 0;
    }
    return name->n > 0 && agent__host_next_field(&rest).n == 0;
}

static int netdev_rebuild(agent_host *h, base_str text) {
    host_netdev_ent *old = h->nd;
    size_t nold = h->nnd;
    size_t cap = 0, n = 0;
    host_netdev_ent *nw = NULL;
    int rc = 0;
    while (text.n) {
        base_str line = agent__host_next_line(&text), name;
        uint64_t v[16];
        if (!netdev_line(line, &name, v) || base_str_eqc(name, "lo")) continue;
        if (n == HOST_MAX_DEVICES) break;
        if (n == cap) {
            cap = cap ? cap * 2 : 16;
            host_netdev_ent *p = realloc(nw, cap * sizeof *p);
            if (!p) {
                rc = BASE_E_NOMEM;
                break;
            }
            nw = p;
        }
        host_netdev_ent *e = &nw[n];
        size_t j;
        for (j = 0; j < nold; j++)
            if (old[j].name && base_str_eqc(name, old[j].name)) break;
        if (j < nold) {
            *e = old[j];
            old[j].name = NULL;
            e->nohandler.dirfd = h->net_class_fd;
        } else {
            memset(e, 0, sizeof *e);
            e->name = agent__host_strndup(name.p, name.n);
            agent__host_lb_reset(h);
            agent__host_lb_add(h, "device", name.p, name.n);
            e->lbl = agent__host_lb_dup(h);
            size_t rl = name.n + sizeof "/statistics/rx_nohandler";
            e->rel = malloc(rl);
            if (!e->name || !e->lbl || !e->rel) {
                netdev_ent_free(h, e);
                if (!h->lb_bad) {
                    rc = BASE_E_NOMEM;
                    break;
                }
                continue; /* a name that is not UTF-8: left out */
            }
            snprintf(e->rel, rl, "%s/statistics/rx_nohandler", e->name);
            e->nohandler = agent__host_file(h->net_class_fd, e->rel);
        }
        n++;
    }
    for (size_t j = 0; j < nold; j++)
        if (old[j].name) netdev_ent_free(h, &old[j]);
    free(old);
    h->nd = nw;
    h->nnd = n;
    h->rebuilds++;
    return rc;
}

void agent__host_emit_netdev(agent_host *h, base_str text, expo_mset *ms) {
    if (h->net_class_fd < 0)
        h->net_class_fd = openat(h->sys_fd, "class/net", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    /* steady state: the same devices in the same order */
    base_str scan = text;
    size_t k = 0;
    int same = 1;
    while (scan.n && same) {
        base_str line = agent__host_next_line(&scan), name;
        uint64_t v[16];
        if (!netdev_line(line, &name, v) || base_str_eqc(name, "lo")) continue;
        if (k >= h->nnd || !base_str_eqc(name, h->nd[k].name)) same = 0;
        k++;
    }
    if (!same || k != h->nnd) netdev_rebuild(h, text);

    expo_family *fam[17] = {0};
    k = 0;
    while (text.n && k < h->nnd) {
        base_str line = agent__host_next_line(&text), name;
        uint64_t v[16];
        if (!netdev_line(line, &name, v) || base_str_eqc(name, "lo")) continue;
        host_netdev_ent *e = &h->nd[k];
        if (!base_str_eqc(name, e->name)) continue; /* a name left out of the table */
        k++;
        e->nohandler.dirfd = h->net_class_fd;
        if (!fam[0])
            for (int i = 0; i < 17; i++) fam[i] = agent__host_fam(ms, HOST_M_NET_receive_bytes + i);
        for (int i = 0; i < 16; i++) expo_mset_add(ms, fam[i], NULL, e->lbl, NULL, (double)v[i]);
        base_str t;
        uint64_t nh;
        if (agent__host_read_attr(h, &e->nohandler, 128, &t) == 0) {
            t = agent__host_trim(t);
            if (base_parse_u64(t.p, t.n, &nh) == 0)
                expo_mset_add(ms, fam[16], NULL, e->lbl, NULL, (double)nh);
        }
    }
}

/* ---- /proc/diskstats ------------------------------------------------------------ */

int agent__host_disk_excluded(const char *s, size_t n) {
    /* ^(ram|loop|fd|(h|s|v|xv)d[a-z]|nvme\d+n\d+p)\d+$ */
    size_t i = 0;
    base_str str = {s, n};
    if (base_str_has_prefix(str, "ram"))
        i = 3;
    else if (base_str_has_prefix(str, "loop"))
        i = 4;
    else if (base_str_has_prefix(str, "fd"))
        i = 2;
    else if (n >= 3 && (s[0] == 'h' || s[0] == 's' || s[0] == 'v') && s[1] == 'd' && s[2] >= 'a' &&
             s[2] <= 'z')
        i = 3;
    else if (n >= 4 && memcmp(s, "xvd", 3) == 0 && s[3] >= 'a' && s[3] <= 'z')
        i = 4;
    else if (base_str_has_prefix(str, "nvme")) {
        i = 4;
        size_t d = i;
        while (i < n && s[i] >= '0' && s[i] <= '9') i++;
        if (i == d || i >= n || s[i] != 'n') return 0;
        d = ++i;
        while (i < n && s[i] >= '0' && s[i] <= '9') i++;
        if (i == d || i >= n || s[i] != 'p') return 0;
        i++;
    } else {
        return 0;
    }
    if (i >= n) return 0;
    for (; i < n; i++)
        if (s[i] < '0' || s[i] > '9') return 0;
    return 1;
}

typedef struct disk_line {
    unsigned maj, min;
    base_str name;
    uint64_t v[17];
    int nv;
} disk_line;

static int parse_disk_line(base_str line, disk_line *d) {
    uint64_t x;
    base_str f = agent__host_next_field(&line);
    if (base_parse_u64(f.p, f.n, &x) != 0 || x > UINT32_MAX) return 0;
    d->maj = (unsigned)x;
    f = agent__host_next_field(&line);
    if (base_parse_u64(f.p, f.n, &x) != 0 || x > UINT32_MAX) return 0;
    d->min = (unsigned)x;
    d->name = agent__host_next_field(&line);
    if (!d->name.n) return 0;
    for (d->nv = 0; d->nv < 17; d->nv++) {
        f = agent__host_next_field(&line);
        if (!f.n) break;
        if (base_parse_u64(f.p, f.n, &d->v[d->nv]) != 0) break;
    }
    return d->nv > 0;
}

static void disk_ent_clear_udev(host_disk_ent *d) {
    free(d->info);
    free(d->fsinfo);
    free(d->dminfo);
    d->info = d->fsinfo = d->dminfo = NULL;
    memset(d->has_ata, 0, sizeof d->has_ata);
}

static void disk_ent_free(host_disk_ent *d) {
    disk_ent_clear_udev(d);
    free(d->name);
    free(d->lbl);
}

/* The udev properties node_exporter uses. */
enum {
    U_PATH,
    U_WWN,
    U_MODEL,
    U_SERIAL_SHORT,
    U_REVISION,
    U_FS_TYPE,
    U_FS_USAGE,
    U_FS_UUID,
    U_FS_VERSION,
    U_DM_NAME,
    U_DM_UUID,
    U_DM_VG,
    U_DM_LV,
    U_DM_LAYER,
    U_ATA,
    U_ATA_WC,
    U_ATA_WCE,
    U_ATA_RPM,
    U__N
};
static const char *const udev_keys[U__N] = {"ID_PATH",
                                            "ID_WWN",
                                            "ID_MODEL",
                                            "ID_SERIAL_SHORT",
                                            "ID_REVISION",
                                            "ID_FS_TYPE",
                                            "ID_FS_USAGE",
                                            "ID_FS_UUID",
                                            "ID_FS_VERSION",
                                            "DM_NAME",
                                            "DM_UUID",
                                            "DM_VG_NAME",
                                            "DM_LV_NAME",
                                            "DM_LV_LAYER",
                                            "ID_ATA",
                                            "ID_ATA_WRITE_CACHE",
                                            "ID_ATA_WRITE_CACHE_ENABLED",
                                            "ID_ATA_ROTATION_RATE_RPM"};

/* Makes *slot the label string in h->lb (or NULL when !want), reusing the
 * old string when it is the same. */
static void lb_keep(agent_host *h, char **slot, int want) {
    if (want && !h->lb_bad && !h->lb.err && *slot && strlen(*slot) == h->lb.len &&
        memcmp(*slot, h->lb.data, h->lb.len) == 0)
        return;
    free(*slot);
    *slot = want ? agent__host_lb_dup(h) : NULL;
}

void agent__host_disk_udev(agent_host *h, host_disk_ent *d, base_str text) {
    base_str u[U__N];
    int has[U__N] = {0};
    memset(u, 0, sizeof u);
    while (text.n) {
        base_str line = agent__host_next_line(&text);
        if (line.n < 2 || line.p[0] != 'E' || line.p[1] != ':') continue;
        line.p += 2;
        line.n -= 2;
        const char *eq = memchr(line.p, '=', line.n);
        if (!eq) continue;
        base_str k = {line.p, (size_t)(eq - line.p)}, v = {eq + 1, (size_t)(line.p + line.n - eq - 1)};
        for (int i = 0; i < U__N; i++)
            if (base_str_eqc(k, udev_keys[i])) u[i] = v, has[i] = 1; /* the last one wins */
    }
    /* labels are rebuilt and replaced only when they changed, so the
     * periodic refresh allocates nothing in the steady state */
    char mm[16];
    base_str serial = u[U_SERIAL_SHORT]; /* 1.5 ignores SCSI_IDENT_SERIAL */
    agent__host_lb_reset(h);
    agent__host_lb_add(h, "device", d->name, strlen(d->name));
    int n = snprintf(mm, sizeof mm, "%u", d->maj);
    agent__host_lb_add(h, "major", mm, (size_t)n);
    n = snprintf(mm, sizeof mm, "%u", d->min);
    agent__host_lb_add(h, "minor", mm, (size_t)n);
    agent__host_lb_add(h, "model", u[U_MODEL].p, u[U_MODEL].n);
    agent__host_lb_add(h, "path", u[U_PATH].p, u[U_PATH].n);
    agent__host_lb_add(h, "revision", u[U_REVISION].p, u[U_REVISION].n);
    agent__host_lb_add(h, "serial", serial.p, serial.n);
    agent__host_lb_add(h, "wwn", u[U_WWN].p, u[U_WWN].n);
    lb_keep(h, &d->info, 1);
    agent__host_lb_reset(h);
    agent__host_lb_add(h, "device", d->name, strlen(d->name));
    agent__host_lb_add(h, "type", u[U_FS_TYPE].p, u[U_FS_TYPE].n);
    agent__host_lb_add(h, "usage", u[U_FS_USAGE].p, u[U_FS_USAGE].n);
    agent__host_lb_add(h, "uuid", u[U_FS_UUID].p, u[U_FS_UUID].n);
    agent__host_lb_add(h, "version", u[U_FS_VERSION].p, u[U_FS_VERSION].n);
    lb_keep(h, &d->fsinfo, u[U_FS_TYPE].n > 0);
    agent__host_lb_reset(h);
    agent__host_lb_add(h, "device", d->name, strlen(d->name));
    agent__host_lb_add(h, "lv_layer", u[U_DM_LAYER].p, u[U_DM_LAYER].n);
    agent__host_lb_add(h, "lv_name", u[U_DM_LV].p, u[U_DM_LV].n);
    agent__host_lb_add(h, "name", u[U_DM_NAME].p, u[U_DM_NAME].n);
    agent__host_lb_add(h, "uuid", u[U_DM_UUID].p, u[U_DM_UUID].n);
    agent__host_lb_add(h, "vg_name", u[U_DM_VG].p, u[U_DM_VG].n);
    lb_keep(h, &d->dminfo, u[U_DM_NAME].n > 0);
    memset(d->has_ata, 0, sizeof d->has_ata);
    if (u[U_ATA].n)
        for (int i = 0; i < 3; i++) {
            double v;
            if (has[U_ATA_WC + i] && agent__host_parse_float(u[U_ATA_WC + i], &v) == 0) {
                d->ata[i] = v;
                d->has_ata[i] = 1;
            }
        }
}

static void disk_read_udev(agent_host *h, host_disk_ent *d) {
    char path[4096];
    d->udev_cycle = h->cycle;
    snprintf(path, sizeof path, "%s/b%u:%u", h->udev_dir, d->maj, d->min);
    char buf[16384];
    size_t len = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (fd >= 0) {
        for (;;) {
            ssize_t n = read(fd, buf + len, sizeof buf - len);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) break;
            len += (size_t)n;
            if (len == sizeof buf) break;
        }
        close(fd);
    }
    agent__host_disk_udev(h, d, (base_str){buf, len});
}

static int disk_rebuild(agent_host *h, base_str text) {
    host_disk_ent *old = h->dk, *nw = NULL;
    size_t nold = h->ndk, n = 0, cap = 0;
    int rc = 0;
    while (text.n) {
        disk_line dl;
        if (!parse_disk_line(agent__host_next_line(&text), &dl) ||
            agent__host_disk_excluded(dl.name.p, dl.name.n))
            continue;
        if (n == HOST_MAX_DEVICES) break;
        if (n == cap) {
            cap = cap ? cap * 2 : 16;
            host_disk_ent *p = realloc(nw, cap * sizeof *p);
            if (!p) {
                rc = BASE_E_NOMEM;
                break;
            }
            nw = p;
        }
        host_disk_ent *e = &nw[n];
        size_t j;
        for (j = 0; j < nold; j++)
            if (old[j].name && base_str_eqc(dl.name, old[j].name) && old[j].maj == dl.maj &&
                old[j].min == dl.min)
                break;
        if (j < nold) {
            *e = old[j];
            old[j].name = NULL;
        } else {
            memset(e, 0, sizeof *e);
            e->name = agent__host_strndup(dl.name.p, dl.name.n);
            e->maj = dl.maj;
            e->min = dl.min;
            agent__host_lb_reset(h);
            agent__host_lb_add(h, "device", dl.name.p, dl.name.n);
            e->lbl = agent__host_lb_dup(h);
            if (!e->name || !e->lbl) {
                disk_ent_free(e);
                if (!h->lb_bad) {
                    rc = BASE_E_NOMEM;
                    break;
                }
                continue;
            }
            disk_read_udev(h, e);
        }
        n++;
    }
    for (size_t j = 0; j < nold; j++)
        if (old[j].name) disk_ent_free(&old[j]);
    free(old);
    h->dk = nw;
    h->ndk = n;
    h->rebuilds++;
    return rc;
}

void agent__host_emit_diskstats(agent_host *h, base_str text, expo_mset *ms) {
    base_str scan = text;
    size_t k = 0;
    int same = 1;
    while (scan.n && same) {
        disk_line dl;
        if (!parse_disk_line(agent__host_next_line(&scan), &dl) ||
            agent__host_disk_excluded(dl.name.p, dl.name.n))
            continue;
        if (k >= h->ndk || !base_str_eqc(dl.name, h->dk[k].name) || h->dk[k].maj != dl.maj ||
            h->dk[k].min != dl.min)
            same = 0;
        k++;
    }
    if (!same || k != h->ndk) disk_rebuild(h, text);

    expo_family *fam[17 + 6] = {0};
    k = 0;
    while (text.n && k < h->ndk) {
        disk_line dl;
        if (!parse_disk_line(agent__host_next_line(&text), &dl) ||
            agent__host_disk_excluded(dl.name.p, dl.name.n))
            continue;
        host_disk_ent *e = &h->dk[k];
        if (!base_str_eqc(dl.name, e->name)) continue; /* a name left out of the table */
        k++;
        if (h->cycle - e->udev_cycle >= UDEV_REFRESH_CYCLES) disk_read_udev(h, e);
        if (!fam[0])
            for (int i = 0; i < 23; i++) fam[i] = agent__host_fam(ms, HOST_M_DISK_READS + i);
        if (e->info) expo_mset_add(ms, fam[HOST_M_DISK_INFO - HOST_M_DISK_READS], NULL, e->info, NULL, 1);
        for (int i = 0; i < dl.nv; i++) {
            double v = (double)dl.v[i];
            if (i == 2 || i == 6)
                v *= 512.0;
            else if (i == 3 || i == 7 || i == 9 || i == 10 || i == 14 || i == 16)
                v *= 1.0 / 1000.0;
            expo_mset_add(ms, fam[i], NULL, e->lbl, NULL, v);
        }
        if (e->fsinfo)
            expo_mset_add(ms, fam[HOST_M_DISK_FILESYSTEM_INFO - HOST_M_DISK_READS], NULL, e->fsinfo, NULL, 1);
        if (e->dminfo)
            expo_mset_add(ms, fam[HOST_M_DISK_DEVICE_MAPPER_INFO - HOST_M_DISK_READS], NULL, e->dminfo, NULL,
                          1);
        for (int i = 0; i < 3; i++)
            if (e->has_ata[i])
                expo_mset_add(ms, fam[HOST_M_DISK_ATA_WRITE_CACHE - HOST_M_DISK_READS + i], NULL, e->lbl,
                              NULL, e->ata[i]);
    }
}

void agent__host_proc_free(agent_host *h) {
    for (size_t i = 0; i < h->nnd; i++) netdev_ent_free(h, &h->nd[i]);
    free(h->nd);
    h->nd = NULL;
    h->nnd = 0;
    for (size_t i = 0; i < h->ndk; i++) disk_ent_free(&h->dk[i]);
    free(h->dk);
    h->dk = NULL;
    h->ndk = 0;
    for (size_t i = 0; i < h->cpu_lbl_n; i++) free(h->cpu_lbl[i]);
    free(h->cpu_lbl);
    free(h->cpu_prev);
    free(h->cpu_seen);
    free(h->isolated);
    if (h->net_class_fd >= 0) close(h->net_class_fd);
    h->net_class_fd = -1;
}
