/* self.c -- the agent's own metrics; see self.h. Reads /proc/self/stat and
 * /proc/self/status through descriptors kept open (pread at offset 0). */
#include "agent/self.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "agent/catalog.h"
#include "base/err.h"
#include "base/num.h"

/* Index of each family in agent_catalog_self (catalog_self.c); checked by
 * name in agent_self_new, so the two cannot drift apart silently. */
enum {
    SELF_BUILD_INFO,
    SELF_DURATION,
    SELF_CPU,
    SELF_CYCLES,
    SELF_ERRORS,
    SELF_LAST_SUCCESS,
    SELF_STALE,
    SELF_SAMPLES,
    SELF_SCRAPES,
    SELF_PEAK_RSS,
    SELF_PROC_CPU,
    SELF_MAX_FDS,
    SELF_OPEN_FDS,
    SELF_RSS,
    SELF_START,
    SELF_VMEM,
    SELF__COUNT
};
static const char *const self_names[SELF__COUNT] = {
    "kelvin_agent_build_info",
    "kelvin_agent_collector_duration_seconds",
    "kelvin_agent_collector_cpu_seconds_total",
    "kelvin_agent_collector_cycles_total",
    "kelvin_agent_collector_errors_total",
    "kelvin_agent_collector_last_success_timestamp_seconds",
    "kelvin_agent_collector_stale",
    "kelvin_agent_collector_samples",
    "kelvin_agent_scrapes_total",
    "kelvin_agent_resident_memory_peak_bytes",
    "process_cpu_seconds_total",
    "process_max_fds",
    "process_open_fds",
    "process_resident_memory_bytes",
    "process_start_time_seconds",
    "process_virtual_memory_bytes",
};
#define M(i)           (&agent_catalog_self.metrics[i])
#define OPEN_FDS_EVERY 10

struct agent_self {
    agent_core *core;
    int stat_fd, status_fd;
    char fd_dir[256];
    double start_time;
    long clk_tck, page;
    int open_fds; /* last count, -1 before the first */
    int fd_cycle;
};

static double boot_time(const char *procfs) {
    char path[256], buf[4096];
    snprintf(path, sizeof path, "%s/stat", procfs);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    double bt = 0;
    while (fgets(buf, sizeof buf, f))
        if (strncmp(buf, "btime ", 6) == 0) {
            bt = strtod(buf + 6, NULL);
            break;
        }
    fclose(f);
    return bt;
}

/* Splits /proc/self/stat after the ")" of comm; returns field k (1-based, as
 * in proc(5)) or NULL. */
static const char *stat_field(const char *buf, int k) {
    const char *p = strrchr(buf, ')');
    if (!p) return NULL;
    p += 2; /* now at field 3 */
    for (int i = 3; i < k && p; i++) {
        p = strchr(p, ' ');
        if (p) p++;
    }
    return p;
}

static int read_fd(int fd, char *buf, size_t n) {
    ssize_t r = pread(fd, buf, n - 1, 0);
    if (r <= 0) return -1;
    buf[r] = '\0';
    return 0;
}

int agent_self_new(agent_core *core, const char *procfs, agent_self **ret) {
    if (agent_catalog_self.count != SELF__COUNT) return BASE_E_INVAL;
    for (size_t i = 0; i < SELF__COUNT; i++)
        if (strcmp(agent_catalog_self.metrics[i].name, self_names[i]) != 0) return BASE_E_INVAL;
    agent_self *s = calloc(1, sizeof *s);
    if (!s) return BASE_E_NOMEM;
    s->core = core;
    s->open_fds = -1;
    char path[256];
    snprintf(path, sizeof path, "%s/self/stat", procfs);
    s->stat_fd = open(path, O_RDONLY | O_CLOEXEC);
    snprintf(path, sizeof path, "%s/self/status", procfs);
    s->status_fd = open(path, O_RDONLY | O_CLOEXEC);
    snprintf(s->fd_dir, sizeof s->fd_dir, "%s/self/fd", procfs);
    s->clk_tck = sysconf(_SC_CLK_TCK);
    s->page = sysconf(_SC_PAGESIZE);
    char buf[1024];
    if (s->stat_fd >= 0 && read_fd(s->stat_fd, buf, sizeof buf) == 0) {
        const char *f22 = stat_field(buf, 22);
        if (f22) s->start_time = boot_time(procfs) + strtod(f22, NULL) / (double)s->clk_tck;
    }
    *ret = s;
    return 0;
}

/* Starts the family of catalog entry m (looked up once, at creation). */
static expo_family *fam(expo_mset *ms, const agent_metric *m) {
    return m ? expo_mset_family(ms, m->name, m->type, m->help, m->unit) : NULL;
}

int agent_self_collect(void *ctx, expo_mset *ms) {
    agent_self *s = ctx;
    expo_mset_add(ms, fam(ms, M(SELF_BUILD_INFO)), "", "version=\"" KELVIN_VERSION "\"", NULL, 1);

    agent_collector_stats st[16];
    size_t n = agent_core_stats(s->core, st, 16);
    if (n > 16) n = 16;
    char *lab[16];
    for (size_t i = 0; i < n; i++) lab[i] = expo_mset_labels(ms, "collector", st[i].name, NULL);
    for (size_t k = 0; k <= SELF_SAMPLES - SELF_DURATION; k++) {
        expo_family *f = fam(ms, M(SELF_DURATION + k));
        for (size_t i = 0; i < n; i++) {
            double v = 0;
            switch (k) {
            case 0: v = (double)st[i].last_duration_ns / 1e9; break;
            case 1: v = (double)st[i].cpu_ns_total / 1e9; break;
            case 2: v = (double)st[i].cycles; break;
            case 3: v = (double)st[i].errors; break;
            case 4:
                if (!st[i].last_success_unix_ms) continue;
                v = (double)st[i].last_success_unix_ms / 1e3;
                break;
            case 5: v = st[i].stale; break;
            case 6: v = (double)st[i].last_samples; break;
            }
            expo_mset_add(ms, f, "", lab[i], NULL, v);
        }
    }
    expo_mset_add(ms, fam(ms, M(SELF_SCRAPES)), "", NULL, NULL, (double)agent_core_scrapes(s->core));

    char buf[2048];
    if (s->status_fd >= 0 && read_fd(s->status_fd, buf, sizeof buf) == 0) {
        const char *p = strstr(buf, "VmHWM:");
        if (p) expo_mset_add(ms, fam(ms, M(SELF_PEAK_RSS)), "", NULL, NULL, strtod(p + 6, NULL) * 1024);
    }
    if (s->stat_fd >= 0 && read_fd(s->stat_fd, buf, sizeof buf) == 0) {
        const char *ut = stat_field(buf, 14), *st2 = stat_field(buf, 15), *vs = stat_field(buf, 23),
                   *rss = stat_field(buf, 24);
        if (ut && st2)
            expo_mset_add(ms, fam(ms, M(SELF_PROC_CPU)), "", NULL, NULL,
                          (strtod(ut, NULL) + strtod(st2, NULL)) / (double)s->clk_tck);
        struct rlimit rl;
        if (getrlimit(RLIMIT_NOFILE, &rl) == 0)
            expo_mset_add(ms, fam(ms, M(SELF_MAX_FDS)), "", NULL, NULL, (double)rl.rlim_cur);
        /* Listing /proc/self/fd costs the kernel ~0.3 ms with the host
         * collector's ~130 descriptors held open, more than everything else
         * here together: count them every OPEN_FDS_EVERY cycles. */
        if (s->open_fds < 0 || ++s->fd_cycle >= OPEN_FDS_EVERY) {
            s->fd_cycle = 0;
            DIR *d = opendir(s->fd_dir);
            if (d) {
                int count = 0;
                struct dirent *e;
                while ((e = readdir(d)))
                    if (e->d_name[0] != '.') count++;
                closedir(d);
                s->open_fds = count - 1; /* minus the listing's own descriptor */
            }
        }
        if (s->open_fds >= 0) expo_mset_add(ms, fam(ms, M(SELF_OPEN_FDS)), "", NULL, NULL, s->open_fds);
        if (rss) expo_mset_add(ms, fam(ms, M(SELF_RSS)), "", NULL, NULL, strtod(rss, NULL) * (double)s->page);
        if (s->start_time > 0) expo_mset_add(ms, fam(ms, M(SELF_START)), "", NULL, NULL, s->start_time);
        if (vs) expo_mset_add(ms, fam(ms, M(SELF_VMEM)), "", NULL, NULL, strtod(vs, NULL));
    }
    return 0;
}

void agent_self_free(agent_self *s) {
    if (!s) return;
    if (s->stat_fd >= 0) close(s->stat_fd);
    if (s->status_fd >= 0) close(s->status_fd);
    free(s);
}
