/* procs.h -- who is using a GPU: a process's name, Kubernetes pod UID,
 * container ID and Slurm job ID, read from /proc.
 *
 * NVML lists the PIDs running on a GPU; this module turns a PID into the
 * labels that attribute GPU use to a workload without asking the kubelet:
 * /proc/<pid>/comm gives the name and /proc/<pid>/cgroup gives the pod UID
 * (cgroupfs "/kubepods/burstable/pod<uid>/<cid>" and systemd
 * "kubepods-burstable-pod<uid_with_underscores>.slice" forms), the
 * container ID (docker-, cri-containerd-, crio-, containerd-, libpod-
 * prefixes, or a bare 64-hex segment) and the Slurm job
 * ("/slurm/uid_<u>/job_<id>/..." and "/system.slice/slurmstepd.scope/job_<id>/...").
 *
 * Lookups are cached, keyed by procfs root, PID and the process start time
 * (field 22 of /proc/<pid>/stat), so a reused PID is never attributed to the
 * previous process; the cache holds at most AGENT_PROC_CACHE_SIZE entries
 * (least recently used replaced). All functions are thread-safe.
 */
#ifndef KELVIN_AGENT_PROCS_H
#define KELVIN_AGENT_PROCS_H

#include <stddef.h>
#include <stdint.h>

typedef struct agent_proc {
    int pid;
    char comm[64];         /* trimmed, valid UTF-8, control bytes replaced by '?' */
    char pod_uid[40];      /* "0f5a1c2e-...", "" if not in a Kubernetes pod */
    char container_id[72]; /* 64 lowercase hex, no runtime prefix; "" if none */
    char slurm_job_id[24]; /* decimal; "" if not in a Slurm job */
} agent_proc;

#define AGENT_PROC_CACHE_SIZE 256

/* Looks up pid under procfs_root (normally "/proc"). Returns 0,
 * BASE_E_NOTFOUND (no such process, or it changed while being read),
 * BASE_E_INVAL (pid <= 0, path too long) or BASE_E_PARSE (unreadable stat).
 * A missing or unreadable cgroup file leaves the three workload fields
 * empty; a missing comm file falls back to the name in stat. */
int agent_proc_lookup(const char *procfs_root, int pid, agent_proc *ret);

/* Fills ret->pod_uid, ret->container_id and ret->slurm_job_id (each ""
 * when absent) from the text of /proc/<pid>/cgroup; other fields are left
 * alone. Lines that are not "id:controllers:path" are skipped. Within one
 * path the innermost container ID wins (a kind node's own container is
 * outside the pod's); across lines the first line that names a field wins.
 * Returns 0, or BASE_E_PARSE (no well-formed line; ret untouched). */
int agent_cgroup_parse(const char *text, size_t n, agent_proc *ret);

typedef struct agent_proc_cache_stats {
    uint64_t hits;
    uint64_t misses;
    size_t entries;
} agent_proc_cache_stats;

void agent_proc_cache_stats_get(agent_proc_cache_stats *ret);
/* Empties the cache and zeroes its statistics. */
void agent_proc_cache_clear(void);

#endif
