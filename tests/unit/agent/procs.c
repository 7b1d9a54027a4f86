/* tests/unit/agent/procs.c -- PID to workload attribution
 * (src/agent/procs.c): the cgroup path parser, lookups over the fixture
 * /proc tree in tests/fixtures/procs/basic (see its README), the cache's
 * PID-reuse guard and its bound. */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent/procs.h"
#include "base/err.h"

#define HEX_A "3f2b9c1d8e7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f3a2b1c"
#define HEX_B "9d8c7b6a5f4e3d2c1b0a9f8e7d6c5b4a3f2e1d0c9b8a7f6e5d4c3b2a1f0e9d8c"
#define HEX_C "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define HEX_D "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"
#define HEX_E "1111111111111111111111111111111111111111111111111111111111111111"
#define HEX_F "2222222222222222222222222222222222222222222222222222222222222222"
#define HEX_G "4a4b4c4d4e4f40414243444546474849404142434445464748494a4b4c4d4e4f"
#define UID_1 "0f5a1c2e-3b4d-4e5f-8a9b-0c1d2e3f4a5b"

/* ---- agent_cgroup_parse ------------------------------------------------ */

typedef struct cg_case {
    const char *text;
    int rc;
    const char *pod, *cid, *job;
} cg_case;

static const cg_case cg_cases[] = {
    /* systemd driver, v2 */
    {"0::/kubepods.slice/kubepods-burstable.slice/"
     "kubepods-burstable-pod0f5a1c2e_3b4d_4e5f_8a9b_0c1d2e3f4a5b.slice/"
     "cri-containerd-" HEX_A ".scope\n",
     0, UID_1, HEX_A, ""},
    {"0::/kubepods.slice/kubepods-besteffort.slice/"
     "kubepods-besteffort-pod0f5a1c2e_3b4d_4e5f_8a9b_0c1d2e3f4a5b.slice/"
     "docker-" HEX_B ".scope",
     0, UID_1, HEX_B, ""},
    {"0::/kubepods.slice/kubepods-pod0f5a1c2e_3b4d_4e5f_8a9b_0c1d2e3f4a5b.slice/crio-" HEX_C ".scope\n", 0,
     UID_1, HEX_C, ""},
    /* cgroupfs driver, v1 and v2 */
    {"4:memory:/kubepods/burstable/pod" UID_1 "/" HEX_D "\n", 0, UID_1, HEX_D, ""},
    {"0::/kubepods/pod" UID_1 "/" HEX_D "\n", 0, UID_1, HEX_D, ""},
    {"0::/kubepods/besteffort/pod" UID_1 "/crio-" HEX_D "\n", 0, UID_1, HEX_D, ""},
    {"0::/kubepods/besteffort/pod" UID_1 "/containerd-" HEX_D "\n", 0, UID_1, HEX_D, ""},
    /* the pod level itself (a process in the sandbox cgroup) */
    {"0::/kubepods/burstable/pod" UID_1 "\n", 0, UID_1, "", ""},
    /* static pod: 32-hex UID */
    {"0::/kubepods/pod6e0f1a2b3c4d5e6f7a8b9c0d1e2f3a4b/" HEX_A "\n", 0, "6e0f1a2b3c4d5e6f7a8b9c0d1e2f3a4b",
     HEX_A, ""},
    /* kind: innermost container */
    {"0::/system.slice/docker-" HEX_E
     ".scope/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-besteffort.slice/"
     "kubelet-kubepods-besteffort-pod0f5a1c2e_3b4d_4e5f_8a9b_0c1d2e3f4a5b.slice/cri-containerd-" HEX_F
     ".scope\n",
     0, UID_1, HEX_F, ""},
    /* Slurm */
    {"11:devices:/slurm/uid_1000/job_4242/step_0/task_0\n4:memory:/slurm/uid_1000/job_4242/step_0/"
     "task_0\n0::/\n",
     0, "", "", "4242"},
    {"0::/system.slice/slurmstepd.scope/job_987654/step_batch/user/task_0\n", 0, "", "", "987654"},
    {"4:memory:/slurm_node7/uid_0/job_12/step_extern\n", 0, "", "", "12"},
    /* not Slurm: job_ without a slurm ancestor; bad job ids */
    {"0::/system.slice/job_12\n", 0, "", "", ""},
    {"0::/slurm/uid_1/job_12a/step_0\n", 0, "", "", ""},
    {"0::/slurm/uid_1/job_/step_0\n", 0, "", "", ""},
    {"0::/slurm/uid_1/job_123456789012345678901/step_0\n", 0, "", "", ""},
    /* plain docker, podman */
    {"12:memory:/docker/" HEX_G "\n0::/docker/" HEX_G "\n", 0, "", HEX_G, ""},
    {"0::/user.slice/user-1000.slice/user@1000.service/libpod-" HEX_G ".scope\n", 0, "", HEX_G, ""},
    /* near misses */
    {"0::/kubepods.slice/kubepods-burstable.slice/"
     "kubepods-burstable-pod0f5a1c2e_3b4d_4e5f_8a9b_0c1d2e3f4a5b.slice/"
     "crio-conmon-" HEX_C ".scope\n",
     0, UID_1, "", ""},
    {"0::/notkube/pod" UID_1 "/" HEX_A "\n", 0, "", HEX_A, ""},
    {"0::/kubepods/burstable/pod0f5a1c2e-3b4d-4e5f-8a9b-0c1d2e3f4a5\n", 0, "", "", ""},
    {"0::/kubepods/burstable/pod0F5A1C2E-3B4D-4E5F-8A9B-0C1D2E3F4A5B\n", 0, "", "", ""},
    {"0::/kubepods.slice/kubepods-pod0f5a1c2e-3b4d-4e5f-8a9b-0c1d2e3f4a5b.slice\n", 0, "", "", ""},
    {"0::/docker/" HEX_G "0\n", 0, "", "", ""},
    {"0::/docker/"
     "4A4B4C4D4E4F40414243444546474849404142434445464748494A4B4C4D4E4F"
     "\n",
     0, "", "", ""},
    {"0::/user.slice/user-1000.slice/session-3.scope\n", 0, "", "", ""},
    {"0::/\n", 0, "", "", ""},
    /* first line naming a field wins; malformed lines are skipped */
    {"garbage\n1:name=systemd:/kubepods/pod" UID_1 "/" HEX_A
     "\n0::/kubepods/pod6e0f1a2b3c4d5e6f7a8b9c0d1e2f3a4b/" HEX_B "\n",
     0, UID_1, HEX_A, ""},
    {"x:y:/kubepods/pod" UID_1 "\n:memory:/a\n1:memory\n1:memory:relative/path\n", BASE_E_PARSE, NULL, NULL,
     NULL},
    {"", BASE_E_PARSE, NULL, NULL, NULL},
    {"\n\n\n", BASE_E_PARSE, NULL, NULL, NULL},
};

static void test_cgroup_parse(void **state) {
    (void)state;
    for (size_t i = 0; i < sizeof cg_cases / sizeof cg_cases[0]; i++) {
        const cg_case *c = &cg_cases[i];
        agent_proc p;
        memset(&p, 'Z', sizeof p);
        p.pod_uid[sizeof p.pod_uid - 1] = p.container_id[sizeof p.container_id - 1] =
            p.slurm_job_id[sizeof p.slurm_job_id - 1] = '\0';
        p.pid = 77;
        int rc = agent_cgroup_parse(c->text, strlen(c->text), &p);
        if (rc != c->rc) fail_msg("case %zu: rc %d, want %d", i, rc, c->rc);
        assert_int_equal(p.pid, 77);
        if (rc != 0) {
            assert_int_equal(p.pod_uid[0], 'Z'); /* untouched */
            continue;
        }
        if (strcmp(p.pod_uid, c->pod) || strcmp(p.container_id, c->cid) || strcmp(p.slurm_job_id, c->job))
            fail_msg("case %zu: got pod=%s cid=%s job=%s", i, p.pod_uid, p.container_id, p.slurm_job_id);
    }
}

static void test_cgroup_parse_length(void **state) {
    (void)state;
    /* The length bounds the input: a cut container ID is no ID. */
    const char *t = "0::/docker/" HEX_G "\n";
    agent_proc p;
    memset(&p, 0, sizeof p);
    assert_int_equal(agent_cgroup_parse(t, strlen(t) - 2, &p), 0);
    assert_string_equal(p.container_id, "");
    assert_int_equal(agent_cgroup_parse(t, strlen(t) - 1, &p), 0);
    assert_string_equal(p.container_id, HEX_G);
}

/* ---- lookups over the fixture tree ------------------------------------------ */

static char fixture_root[4096];

static int setup_fixture(void **state) {
    (void)state;
    const char *src = getenv("KELVIN_SOURCE_DIR");
    snprintf(fixture_root, sizeof fixture_root, "%s/tests/fixtures/procs/basic", src ? src : ".");
    agent_proc_cache_clear();
    return 0;
}

typedef struct lookup_case {
    int pid;
    const char *comm, *pod, *cid, *job;
} lookup_case;

static void test_lookup_fixture(void **state) {
    (void)state;
    static const lookup_case cases[] = {
        {1001, "python3", UID_1, HEX_A, ""},
        {1002, "pt_main_thread", "6b1e2f3a-4c5d-4e7f-8a9b-0c1d2e3f4a5b", HEX_B, ""},
        {1003, "slurm_script", "", "", "4242"},
        {1004, "torchrun", "", "", "987654"},
        {1005, "my app", "", "", ""},
        {1006, "vllm", "11112222-3333-4444-5555-666677778888", HEX_C, ""},
        {1007, "a) b (c", "6e0f1a2b3c4d5e6f7a8b9c0d1e2f3a4b", HEX_D, ""},
        {1008, "train", "aaaabbbb-cccc-dddd-eeee-ffff00001111", HEX_F, ""},
        {1009, "nocgroup", "", "", ""},
        {1011, "conmon", UID_1, "", ""},
        {1012, "dockerd-app", "", HEX_G, ""},
        {1013, "?bad?name", "", "", ""},
        {1014, "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", "", "", ""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const lookup_case *c = &cases[i];
        agent_proc p;
        int rc = agent_proc_lookup(fixture_root, c->pid, &p);
        if (rc != 0) fail_msg("pid %d: rc %d (root %s)", c->pid, rc, fixture_root);
        assert_int_equal(p.pid, c->pid);
        if (strcmp(p.comm, c->comm) || strcmp(p.pod_uid, c->pod) || strcmp(p.container_id, c->cid) ||
            strcmp(p.slurm_job_id, c->job))
            fail_msg("pid %d: comm=%s pod=%s cid=%s job=%s", c->pid, p.comm, p.pod_uid, p.container_id,
                     p.slurm_job_id);
    }
    agent_proc p;
    p.pid = -5;
    assert_int_equal(agent_proc_lookup(fixture_root, 9999, &p), BASE_E_NOTFOUND);
    assert_int_equal(agent_proc_lookup(fixture_root, 1010, &p), BASE_E_PARSE);
    assert_int_equal(agent_proc_lookup(fixture_root, 0, &p), BASE_E_INVAL);
    assert_int_equal(agent_proc_lookup(fixture_root, -3, &p), BASE_E_INVAL);
    assert_int_equal(agent_proc_lookup("/nonexistent-procfs", 1001, &p), BASE_E_NOTFOUND);
    assert_int_equal(p.pid, -5);

    /* The second round comes from the cache. */
    agent_proc_cache_stats st0, st1;
    agent_proc_cache_stats_get(&st0);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        assert_int_equal(agent_proc_lookup(fixture_root, cases[i].pid, &p), 0);
    agent_proc_cache_stats_get(&st1);
    assert_int_equal(st1.hits - st0.hits, sizeof cases / sizeof cases[0]);
    assert_int_equal(st1.misses, st0.misses);
}

static void test_lookup_real_proc(void **state) {
    (void)state;
    agent_proc p;
    assert_int_equal(agent_proc_lookup("/proc", (int)getpid(), &p), 0);
    assert_int_equal(p.pid, (int)getpid());
    assert_true(strlen(p.comm) > 0);
}

/* ---- PID reuse and the bound, on a writable tree ------------------------------------ */

typedef struct tree {
    char root[64];
} tree;

static void put(const char *root, int pid, const char *file, const char *text) {
    char path[256];
    snprintf(path, sizeof path, "%s/%d", root, pid);
    mkdir(path, 0700);
    snprintf(path, sizeof path, "%s/%d/%s", root, pid, file);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void put_stat(const char *root, int pid, const char *comm, unsigned long long start) {
    char s[512];
    snprintf(s, sizeof s, "%d (%s) S 1 %d %d 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 %llu 1000 10 0 0\n", pid,
             comm, pid, pid, start);
    put(root, pid, "stat", s);
}

static void rm_tree(const char *root, int maxpid) {
    char path[256];
    static const char *const files[] = {"stat", "comm", "cgroup"};
    for (int pid = 1; pid <= maxpid; pid++) {
        for (size_t i = 0; i < 3; i++) {
            snprintf(path, sizeof path, "%s/%d/%s", root, pid, files[i]);
            unlink(path);
        }
        snprintf(path, sizeof path, "%s/%d", root, pid);
        rmdir(path);
    }
    rmdir(root);
}

static void test_pid_reuse(void **state) {
    (void)state;
    tree t;
    snprintf(t.root, sizeof t.root, "/tmp/kelvin-procs-XXXXXX");
    assert_non_null(mkdtemp(t.root));
    agent_proc_cache_clear();

    put_stat(t.root, 4242, "trainer", 1000);
    put(t.root, 4242, "comm", "trainer\n");
    put(t.root, 4242, "cgroup", "0::/kubepods/pod" UID_1 "/" HEX_A "\n");
    agent_proc p;
    assert_int_equal(agent_proc_lookup(t.root, 4242, &p), 0);
    assert_string_equal(p.pod_uid, UID_1);

    /* Same process (same start time): served from the cache even though
     * the files changed, which proves the cache is used. */
    put(t.root, 4242, "cgroup", "0::/slurm/uid_0/job_7/step_0\n");
    assert_int_equal(agent_proc_lookup(t.root, 4242, &p), 0);
    assert_string_equal(p.pod_uid, UID_1);
    assert_string_equal(p.slurm_job_id, "");

    /* The PID is reused by a new process: new start time, new answer. */
    put_stat(t.root, 4242, "other", 2000);
    put(t.root, 4242, "comm", "other\n");
    assert_int_equal(agent_proc_lookup(t.root, 4242, &p), 0);
    assert_string_equal(p.comm, "other");
    assert_string_equal(p.pod_uid, "");
    assert_string_equal(p.slurm_job_id, "7");

    /* The same PID under another procfs root is another process. */
    agent_proc q;
    assert_int_equal(agent_proc_lookup(fixture_root, 1001, &q), 0);
    assert_string_equal(q.comm, "python3");

    agent_proc_cache_stats st;
    agent_proc_cache_stats_get(&st);
    assert_int_equal(st.hits, 1);
    assert_int_equal(st.misses, 3);
    assert_int_equal(st.entries, 2);
    rm_tree(t.root, 5000);
}

static void test_cache_bounded(void **state) {
    (void)state;
    tree t;
    snprintf(t.root, sizeof t.root, "/tmp/kelvin-procs-XXXXXX");
    assert_non_null(mkdtemp(t.root));
    agent_proc_cache_clear();
    const int n = AGENT_PROC_CACHE_SIZE + 64;
    for (int pid = 1; pid <= n; pid++) put_stat(t.root, pid, "w", (unsigned long long)pid * 10);
    agent_proc p;
    for (int pid = 1; pid <= n; pid++) {
        assert_int_equal(agent_proc_lookup(t.root, pid, &p), 0);
        assert_string_equal(p.comm, "w"); /* no comm file: the name from stat */
    }
    agent_proc_cache_stats st;
    agent_proc_cache_stats_get(&st);
    assert_true(st.entries <= AGENT_PROC_CACHE_SIZE);
    assert_true(st.entries >= AGENT_PROC_CACHE_SIZE / 2);
    assert_int_equal(st.misses, (uint64_t)n);
    /* The most recent lookup is still cached. */
    assert_int_equal(agent_proc_lookup(t.root, n, &p), 0);
    agent_proc_cache_stats_get(&st);
    assert_int_equal(st.hits, 1);
    rm_tree(t.root, n);
    agent_proc_cache_clear();
    agent_proc_cache_stats_get(&st);
    assert_int_equal(st.entries, 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cgroup_parse),
        cmocka_unit_test(test_cgroup_parse_length),
        cmocka_unit_test_setup(test_lookup_fixture, setup_fixture),
        cmocka_unit_test(test_lookup_real_proc),
        cmocka_unit_test_setup(test_pid_reuse, setup_fixture),
        cmocka_unit_test(test_cache_bounded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
