/* host.h -- the host collector: /proc, /sys and statfs into node_exporter's
 * metrics.
 *
 * What it serves. The node_* families of node_exporter 1.5 (Debian's
 * prometheus-node-exporter 1.5.0) with their exact names, types, HELP text
 * and labels, for the collectors that matter on GPU nodes: cpu (with guest,
 * thermal throttles and isolated CPUs), meminfo, loadavg, pressure, stat,
 * vmstat (default field set), netdev, netclass, diskstats (with udev
 * properties), filesystem, infiniband, hwmon, uname, time (with
 * clocksources), entropy, filefd, sockstat and netstat (default field set).
 * Device exclusions are node_exporter's defaults. The catalog section
 * (catalog_host.c) lists every fixed family and the patterns of the
 * generated ones (node_memory_*, node_hwmon_*, ...).
 *
 * Design. agent_host_new() opens the procfs and sysfs roots once. Every
 * file is opened relative to them on first use and kept open; each cycle
 * re-reads it with pread(2) at offset 0 (a bounded number of descriptors is
 * kept, the rest are opened per read). Per-device files (network classes,
 * InfiniBand ports, hwmon chips, CPU throttle counters) are discovered by
 * listing their class directory each cycle (getdents64 on a kept-open
 * directory descriptor); when the listing changes the device table is
 * rebuilt and its descriptors reopened. A descriptor whose read fails
 * (device gone, file replaced) is closed and reopened once. No subprocess
 * is started; in the steady state a cycle allocates nothing but the metric
 * set's arena.
 *
 * statfs(2) of mounted filesystems runs on a helper thread, never on the
 * collecting thread: a mount whose statfs does not return within a
 * timeout (1 s) is marked stuck and reported like node_exporter does
 * (node_filesystem_device_error 1, no size metrics) until its pending call
 * returns; the collector carries on with a fresh helper.
 *
 * Failure model: a missing or malformed file leaves that piece's metrics
 * out for the cycle; it never fails the cycle (agent_host_collect() returns
 * an error only when the set ran out of memory).
 *
 * Ownership and threads: opts' strings are copied. The sets filled by
 * agent_host_collect() may point at strings owned by h: render or reset a
 * set before the next collect() on the same h and before agent_host_free()
 * (the agent core renders every set as soon as collect() returns).
 * collect() must be called from one thread at a time.
 */
#ifndef KELVIN_AGENT_HOST_H
#define KELVIN_AGENT_HOST_H

#include <stddef.h>
#include <stdint.h>

#include "expo/expo.h"

typedef struct agent_host agent_host;

typedef struct agent_host_opts {
    const char *procfs; /* procfs mount point; NULL or "" = "/proc" */
    const char *sysfs;  /* sysfs mount point; NULL or "" = "/sys" */
    const char *rootfs; /* the host's root, prefixed to mount points for statfs and to
                           run/udev/data for disk properties; NULL or "" = "/" */
} agent_host_opts;

/* Creates the collector. Returns 0, BASE_E_NOTFOUND (procfs or sysfs is
 * not a readable directory: message in err), BASE_E_INVAL or BASE_E_NOMEM.
 * *ret is written only on success. */
int agent_host_new(const agent_host_opts *opts, agent_host **ret, char *err, size_t errlen);

/* An agent_collect_fn (agent/collector.h): fills ms (empty) with one
 * cycle's host metrics. Returns 0, or BASE_E_NOMEM when the set could not
 * hold them. ctx is the agent_host. */
int agent_host_collect(void *ctx, expo_mset *ms);

/* Stops the statfs helper and closes every descriptor. NULL is fine. A
 * helper stuck in statfs is detached and frees its own state when the call
 * returns. */
void agent_host_free(agent_host *h);

/* Counters for tests and the agent's own metrics. */
typedef struct agent_host_stats {
    uint64_t cycles;
    size_t fds_open;     /* descriptors kept open for re-reading */
    size_t mounts_stuck; /* mounts whose statfs has not returned */
    size_t rebuilds;     /* device tables rebuilt since start */
} agent_host_stats;
void agent_host_get_stats(const agent_host *h, agent_host_stats *ret);

/* Testing hooks. agent_host_set_statfs() replaces statfs(2) (called on the
 * helper thread with the full path) and sets the stuck timeout in ms
 * (0 keeps the current one); agent_host_set_fd_limit() caps the kept-open
 * descriptors. Call between cycles. */
struct statfs;
typedef int (*agent_host_statfs_fn)(const char *path, struct statfs *buf);
void agent_host_set_statfs(agent_host *h, agent_host_statfs_fn fn, int timeout_ms);
void agent_host_set_fd_limit(agent_host *h, size_t max_fds);

#endif
