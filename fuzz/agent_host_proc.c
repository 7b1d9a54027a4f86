/* fuzz/agent_host_proc.c -- fuzz target for the host collector's parsers
 * (src/agent/host_proc.c, host_sys.c, host_fs.c) without touching /proc.
 *
 * The first byte picks the format, the rest is the file's text:
 *   0 /proc/stat        1 meminfo        2 vmstat         3 net/netstat, snmp
 *   4 net/snmp6         5 net/sockstat   6 sockstat6      7 net/dev
 *   8 diskstats         9 loadavg       10-12 pressure    13 sys/fs/file-nr
 *  14 udev database    15 mounts lines  16 hwmon names    17 CPU lists
 *  18 integers (Go's ParseInt base 0)
 * One collector lives across inputs, so the tables that follow a file's
 * lines (net/dev devices, disks, the CPU jump-back cache) are rebuilt and
 * reused as inputs change. Checks: every family set renders, and the
 * rendered text parses with Kelvin's Prometheus-compatible parser (the round
 * trip a scrape makes), with no duplicate family; helpers stay within their
 * output buffers. Sanitizers catch the rest.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/host.h"
#include "agent/host_int.h"
#include "base/buf.h"
#include "expo/expo.h"
#include "expo/parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static agent_host *host;
static expo_mset set;
static base_buf out;

static void check_rendered(void) {
    base_buf_reset(&out);
    expo_mset *sets[1] = {&set};
    if (expo_write(sets, 1, EXPO_FMT_TEXT, &out) != 0) abort();
    expo_parser p;
    expo_parser_init(&p, out.data ? out.data : "", out.len, EXPO_FMT_TEXT, NULL);
    int e;
    size_t types = 0;
    while ((e = expo_parser_next(&p)) > 0)
        if (e == EXPO_ENTRY_TYPE) types++;
    if (e < 0) { /* we served something Prometheus would refuse */
        fprintf(stderr, "rendered text does not parse: %s\n%.*s\n", expo_parser_error_at(&p), (int)out.len,
                out.data);
        abort();
    }
    expo_parser_free(&p);
    if (types != set.nfamilies) {
        /* empty families are not written; every written one has a TYPE */
        size_t nonempty = 0;
        for (expo_family *f = set.head; f; f = f->next) nonempty += f->nsamples > 0;
        if (types != nonempty) abort();
    }
    /* no family name twice */
    for (expo_family *a = set.head; a; a = a->next)
        for (expo_family *b = a->next; b; b = b->next)
            if (a->nsamples && b->nsamples && strcmp(a->name, b->name) == 0) {
                fprintf(stderr, "family %s twice\n", a->name);
                abort();
            }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!host) {
        agent_host_opts o = {"/", "/", "/nonexistent-kelvin-fuzz-root"};
        char err[256];
        if (agent_host_new(&o, &host, err, sizeof err) != 0) abort();
        expo_mset_init(&set);
        base_buf_init(&out, 0);
    }
    if (size < 1) return 0;
    int kind = data[0] % 19;
    base_str t = {(const char *)data + 1, size - 1};
    expo_mset_reset(&set);
    agent__host_cycle_begin(host);
    switch (kind) {
    case 0: agent__host_emit_stat(host, t, &set); break;
    case 1: agent__host_emit_meminfo(host, t, &set); break;
    case 2: agent__host_emit_vmstat(host, t, &set); break;
    case 3: agent__host_emit_netstat(host, t, 0, &set); break;
    case 4: agent__host_emit_netstat(host, t, 1, &set); break;
    case 5: agent__host_emit_sockstat(host, t, 0, &set); break;
    case 6: agent__host_emit_sockstat(host, t, 1, &set); break;
    case 7: agent__host_emit_netdev(host, t, &set); break;
    case 8: agent__host_emit_diskstats(host, t, &set); break;
    case 9: agent__host_emit_loadavg(host, t, &set); break;
    case 10:
    case 11:
    case 12: agent__host_emit_pressure(host, kind - 10, t, &set); break;
    case 13: agent__host_emit_filefd(host, t, &set); break;
    case 14: {
        host_disk_ent d;
        memset(&d, 0, sizeof d);
        d.name = (char *)"sda";
        agent__host_disk_udev(host, &d, t);
        free(d.info);
        free(d.fsinfo);
        free(d.dminfo);
        break;
    }
    case 15: {
        char *dec = malloc(t.n + 1);
        if (!dec) return 0;
        while (t.n) {
            base_str line = agent__host_next_line(&t), dev, mnt, fst, opts;
            if (agent__host_parse_mount(line, &dev, &mnt, &fst, &opts, dec, line.n + 1)) {
                if (mnt.n > line.n) abort();
                agent__host_mountpoint_excluded(mnt.p, mnt.n);
                agent__host_fstype_excluded(fst.p, fst.n);
            }
        }
        free(dec);
        break;
    }
    case 16: {
        char name[256], clean[300];
        size_t n = t.n < sizeof name - 1 ? t.n : sizeof name - 1;
        memcpy(name, t.p, n);
        name[n] = '\0';
        base_str type, prop;
        int num;
        if (agent__host_hwmon_split(name, &type, &num, &prop)) {
            if (type.n == 0 || type.p != name || prop.p + prop.n > name + strlen(name)) abort();
        }
        size_t l = agent__host_hwmon_clean(t.p, t.n, clean, sizeof clean);
        if (l >= sizeof clean || strlen(clean) != l) abort();
        for (size_t i = 0; i < l; i++)
            if (!((clean[i] >= 'a' && clean[i] <= 'z') || (clean[i] >= '0' && clean[i] <= '9') ||
                  clean[i] == ':' || clean[i] == '_'))
                abort();
        agent__host_netstat_field_wanted(t.p, t.n);
        agent__host_vmstat_field_wanted(t.p, t.n);
        agent__host_disk_excluded(t.p, t.n);
        break;
    }
    case 17: {
        unsigned cpus[64];
        int n = agent__host_parse_cpulist(t, cpus, 64);
        if (n > 64) abort();
        break;
    }
    case 18: {
        int64_t v;
        agent__host_parse_int_base0(t, &v);
        double d;
        agent__host_parse_float(t, &d);
        break;
    }
    }
    check_rendered();
    return 0;
}
