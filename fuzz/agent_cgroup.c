/* fuzz/agent_cgroup.c -- fuzzes the /proc/<pid>/cgroup parser
 * (agent_cgroup_parse): outputs must be NUL-terminated and well formed
 * (pod UID in dashed form, 64 lowercase hex container ID, decimal job ID),
 * and the round trip holds: the fields written back as canonical cgroup
 * lines parse to the same fields. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/procs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_charset(const char *s, size_t cap, const char *allowed) {
    size_t n = strnlen(s, cap);
    if (n >= cap) abort();
    for (size_t i = 0; i < n; i++)
        if (!strchr(allowed, s[i])) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    agent_proc p;
    memset(&p, 0, sizeof p);
    if (agent_cgroup_parse((const char *)data, size, &p) != 0) return 0;
    check_charset(p.pod_uid, sizeof p.pod_uid, "0123456789abcdef-");
    check_charset(p.container_id, sizeof p.container_id, "0123456789abcdef");
    check_charset(p.slurm_job_id, sizeof p.slurm_job_id, "0123456789");
    size_t pl = strlen(p.pod_uid), cl = strlen(p.container_id), jl = strlen(p.slurm_job_id);
    if ((pl && pl != 32 && pl != 36) || (cl && cl != 64) || jl > 20) abort();

    char text[512];
    int n = 0;
    if (pl || cl)
        n += snprintf(text + n, sizeof text - (size_t)n, "1:memory:/kubepods/burstable/%s%s/%s%s\n",
                      pl ? "pod" : "", p.pod_uid, cl ? "cri-containerd-" : "", cl ? p.container_id : "");
    if (jl)
        n += snprintf(text + n, sizeof text - (size_t)n, "2:devices:/slurm/uid_0/job_%s/step_0\n",
                      p.slurm_job_id);
    n += snprintf(text + n, sizeof text - (size_t)n, "0::/\n");
    agent_proc q;
    memset(&q, 0, sizeof q);
    if (agent_cgroup_parse(text, (size_t)n, &q) != 0) abort();
    if (strcmp(p.pod_uid, q.pod_uid) || strcmp(p.container_id, q.container_id) ||
        strcmp(p.slurm_job_id, q.slurm_job_id))
        abort();
    return 0;
}
