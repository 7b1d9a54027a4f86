/* gpu.h -- the GPU collector: NVML into dcgm-exporter's metrics and Kelvin's.
 *
 * agent_gpu_new() parses the counters file (dcgm-exporter's CSV format)
 * and starts the kernel-log XID tail (agent/xid.h) when kmsg_path is set;
 * it makes no NVML call, so a hung driver cannot hold up the agent's start.
 * The first agent_gpu_collect() loads NVML (nvml_open + nvmlInit once),
 * enumerates the GPUs, reads their static data (names, UUIDs, PCI ids,
 * limits, driver version), renders each GPU's label string once and starts
 * the NVML XID watcher (a thread in nvmlEventSetWait_v2).
 *
 * agent_gpu_collect() is an agent_collect_fn (agent/collector.h): one
 * cycle reads every GPU's dynamic values (one batched
 * nvmlDeviceGetFieldValues per GPU plus direct calls), GPM profiling
 * samples, MIG instances and per-process memory, and fills the set. Static
 * data is re-read about every 60 s, and a failed NVML load is retried at
 * the same pace.
 *
 * Failure model: NVML missing or failing to initialise is not an error:
 * the collector then serves `kelvin_gpu_nvml_up{reason="..."} 0` and
 * nothing else, so the agent keeps serving host and application metrics.
 * A missing symbol or unsupported field leaves that metric out for that
 * GPU (never 0, never a sentinel) and is logged once. A GPU returning
 * NVML_ERROR_GPU_IS_LOST is marked lost: its metrics disappear and
 * `kelvin_gpu_lost` says so.
 *
 * Ownership: opts' strings are copied. agent_gpu_free() stops the threads,
 * shuts NVML down and unloads it. collect() must be called from one thread
 * at a time (the agent core's collector thread).
 */
#ifndef KELVIN_AGENT_GPU_H
#define KELVIN_AGENT_GPU_H

#include <stddef.h>
#include <stdint.h>

#include "expo/expo.h"

typedef struct agent_gpu agent_gpu;

typedef struct agent_gpu_opts {
    const char *nvml_library;  /* path, or NULL: libnvidia-ml.so.1, then libnvidia-ml.so */
    const char *counters_file; /* dcgm-exporter CSV, or NULL: the default set plus Kelvin's */
    const char *hostname;      /* the Hostname label; NULL or "" leaves it out */
    const char *kmsg_path;     /* kernel log for XIDs (/dev/kmsg), or NULL: none */
    const char *procfs;        /* /proc, for process attribution; NULL = "/proc" */
    int simulated;             /* the library is Kelvin's simulator (shown in kelvin_gpu_nvml_up) */
    int64_t interval_ms;       /* collection interval (GPM needs >= 100 ms between samples) */
} agent_gpu_opts;

/* Creates the collector (no NVML call yet). Returns 0, or BASE_E_PARSE /
 * BASE_E_IO / BASE_E_LIMIT (a counters file that is unreadable, malformed
 * or over 1 MiB: message in err) or BASE_E_NOMEM. NVML being absent is NOT
 * an error (see above). */
int agent_gpu_new(const agent_gpu_opts *opts, agent_gpu **ret, char *err, size_t errlen);
/* One collection cycle into ms (agent_collect_fn). Returns 0, or
 * BASE_E_NOMEM when the set ran out of memory. */
int agent_gpu_collect(void *ctx, expo_mset *ms);
/* Stops the threads, shuts NVML down, frees. NULL is a no-op. */
void agent_gpu_free(agent_gpu *g);

#endif
