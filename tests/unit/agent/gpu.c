/* tests/unit/agent/gpu.c -- the GPU collector: catalog, counters file,
 * process-stride probe, and whole collection cycles against the simulated
 * NVML (KELVIN_SIM_LIB, KELVIN_SIM_LEGACY_LIB) rendered to text 0.0.4 and
 * parsed back.
 *
 * The simulator is configured through its environment (KELVIN_SIM_GPUS,
 * KELVIN_SIM_MODEL, KELVIN_SIM_SCENARIO, KELVIN_SIM_MIG, KELVIN_SIM_PIDS,
 * KELVIN_SIM_TIME_SCALE, ...), read at nvmlInit; each test sets what it
 * needs and the collector dlopens a fresh copy.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent/gpu.h"
#include "agent/gpu_int.h"
#include "base/buf.h"
#include "base/err.h"
#include "base/time.h"
#include "expo/expo.h"

/* ---- a tiny text-format reader ---------------------------------------- */

typedef struct sample {
    char name[128];
    char labels[2048];
    double value;
} sample;

typedef struct scrape {
    sample *s;
    size_t n;
    char *text;
} scrape;

static void scrape_free(scrape *sc) {
    free(sc->s);
    free(sc->text);
    memset(sc, 0, sizeof *sc);
}

static void parse_text(const char *text, scrape *sc) {
    size_t cap = 64;
    sc->s = calloc(cap, sizeof *sc->s);
    sc->n = 0;
    const char *p = text;
    while (*p) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        if (len && p[0] != '#') {
            if (sc->n == cap) {
                cap *= 2;
                sc->s = realloc(sc->s, cap * sizeof *sc->s);
            }
            sample *s = &sc->s[sc->n++];
            memset(s, 0, sizeof *s);
            size_t i = 0;
            while (i < len && p[i] != '{' && p[i] != ' ') i++;
            assert_true(i < sizeof s->name);
            memcpy(s->name, p, i);
            if (p[i] == '{') {
                const char *close = NULL;
                int inq = 0;
                for (size_t k = i + 1; k < len; k++) {
                    if (p[k] == '\\') {
                        k++;
                        continue;
                    }
                    if (p[k] == '"') inq = !inq;
                    if (p[k] == '}' && !inq) {
                        close = p + k;
                        break;
                    }
                }
                assert_non_null(close);
                size_t ll = (size_t)(close - (p + i + 1));
                assert_true(ll < sizeof s->labels);
                memcpy(s->labels, p + i + 1, ll);
                i = (size_t)(close - p) + 1;
            }
            char num[64] = "";
            size_t nl2 = len - i;
            assert_true(nl2 < sizeof num);
            memcpy(num, p + i, nl2);
            s->value = strtod(num, NULL);
        }
        p += len + (nl ? 1 : 0);
    }
}

static void collect(agent_gpu *g, scrape *sc) {
    expo_mset ms;
    expo_mset_init(&ms);
    assert_int_equal(agent_gpu_collect(g, &ms), 0);
    base_buf out;
    base_buf_init(&out, 0);
    expo_mset *sets[1] = {&ms};
    assert_int_equal(expo_write(sets, 1, EXPO_FMT_TEXT, &out), 0);
    /* the OpenMetrics rendering must work as well */
    base_buf om;
    base_buf_init(&om, 0);
    assert_int_equal(expo_write(sets, 1, EXPO_FMT_OPENMETRICS, &om), 0);
    base_buf_free(&om);
    sc->text = base_buf_steal(&out, NULL);
    if (!sc->text) sc->text = calloc(1, 1);
    expo_mset_free(&ms);
    parse_text(sc->text, sc);
}

/* Value of label `name` in a rendered label string, into buf; 0 if absent. */
static int label(const char *labels, const char *name, char *buf, size_t n) {
    size_t nl = strlen(name);
    const char *p = labels;
    while (*p) {
        const char *eq = strchr(p, '=');
        if (!eq) return 0;
        int match = (size_t)(eq - p) == nl && memcmp(p, name, nl) == 0;
        const char *v = eq + 2; /* skip =" */
        size_t k = 0;
        while (*v && *v != '"') {
            if (*v == '\\') v++;
            if (match && k + 1 < n) buf[k++] = *v;
            v++;
        }
        if (match) {
            buf[k] = '\0';
            return 1;
        }
        p = *v ? v + 1 : v;
        if (*p == ',') p++;
    }
    return 0;
}

/* Samples of metric `name` whose label `lname` equals `lval` (lname NULL: all). */
static size_t count(const scrape *sc, const char *name, const char *lname, const char *lval) {
    size_t c = 0;
    char buf[256];
    for (size_t i = 0; i < sc->n; i++) {
        if (strcmp(sc->s[i].name, name) != 0) continue;
        if (lname && (!label(sc->s[i].labels, lname, buf, sizeof buf) || strcmp(buf, lval) != 0)) continue;
        c++;
    }
    return c;
}

static const sample *find(const scrape *sc, const char *name, const char *lname, const char *lval) {
    char buf[256];
    for (size_t i = 0; i < sc->n; i++) {
        if (strcmp(sc->s[i].name, name) != 0) continue;
        if (lname && (!label(sc->s[i].labels, lname, buf, sizeof buf) || strcmp(buf, lval) != 0)) continue;
        return &sc->s[i];
    }
    return NULL;
}

static int has_prefix(const scrape *sc, const char *prefix, const char *lname, const char *lval) {
    char buf[256];
    for (size_t i = 0; i < sc->n; i++) {
        if (strncmp(sc->s[i].name, prefix, strlen(prefix)) != 0) continue;
        if (lname && (!label(sc->s[i].labels, lname, buf, sizeof buf) || strcmp(buf, lval) != 0)) continue;
        return 1;
    }
    return 0;
}

/* No sample may carry a DCGM blank sentinel or a non-finite value. */
static void no_sentinels(const scrape *sc) {
    for (size_t i = 0; i < sc->n; i++) {
        double v = sc->s[i].value;
        if (!isfinite(v) || v >= 9.2e18 || v == 140737488355328.0 || v < -1e-9)
            fail_msg("%s{%s} has a sentinel or bad value %g", sc->s[i].name, sc->s[i].labels, v);
    }
}

/* ---- environment ------------------------------------------------------- */

static const char *sim_lib(const char *var) {
    const char *p = getenv(var);
    if (!p || !*p) fail_msg("%s is not set (run through ctest)", var);
    if (access(p, R_OK) != 0) fail_msg("%s=%s does not exist: build the simulated NVML first", var, p);
    return p;
}

static void sim_env(const char *gpus, const char *model, const char *scenario) {
    static const char *const vars[] = {
        "KELVIN_SIM_SCENARIO",   "KELVIN_SIM_GPUS",      "KELVIN_SIM_MODEL",
        "KELVIN_SIM_DRIVER",     "KELVIN_SIM_MIG",       "KELVIN_SIM_PIDS",
        "KELVIN_SIM_TIME_SCALE", "KELVIN_SIM_HANG_MS",   "KELVIN_SIM_PROCESS_STRIDE",
        "KELVIN_SIM_INIT_ERROR", "KELVIN_SIM_SEED",      "KELVIN_SIM_FAULT_GPU",
        "KELVIN_SIM_ONSET",      "KELVIN_SIM_LOST_AFTER"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) unsetenv(vars[i]);
    setenv("KELVIN_SIM_GPUS", gpus, 1);
    setenv("KELVIN_SIM_MODEL", model, 1);
    setenv("KELVIN_SIM_SCENARIO", scenario, 1);
}

static agent_gpu *new_gpu(const char *lib, const char *counters) {
    agent_gpu_opts o = {.nvml_library = lib,
                        .counters_file = counters,
                        .hostname = "testhost",
                        .kmsg_path = NULL,
                        .procfs = "/proc",
                        .simulated = 1,
                        .interval_ms = 1000};
    agent_gpu *g = NULL;
    char err[256] = "";
    int rc = agent_gpu_new(&o, &g, err, sizeof err);
    if (rc != 0) fail_msg("agent_gpu_new: %d %s", rc, err);
    return g;
}

static void sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* ---- catalog ------------------------------------------------------------ */

static void test_catalog(void **state) {
    (void)state;
    for (int m = 0; m < GPU_M__COUNT; m++) {
        const agent_metric *a = &agent__gpu_metrics[m];
        if (!a->name || !a->help || !a->unit || !a->labels || !a->source)
            fail_msg("catalog entry %d incomplete", m);
        assert_true(*a->help && *a->source);
        for (int k = 0; k < m; k++) assert_string_not_equal(a->name, agent__gpu_metrics[k].name);
        if (strncmp(a->name, "kelvin_gpu_", 11) == 0) {
            size_t n = strlen(a->name);
            int total = n > 6 && strcmp(a->name + n - 6, "_total") == 0;
            assert_int_equal(total, a->type == EXPO_COUNTER);
        } else {
            assert_true(strncmp(a->name, "DCGM_FI_", 8) == 0);
        }
        assert_ptr_equal(agent_catalog_find(a->name), a);
    }
    assert_int_equal(agent_catalog_gpu.count, GPU_M__COUNT);
    /* dcgm-exporter's names, types and help text, verbatim */
    static const struct {
        int m;
        const char *name;
        expo_type type;
        const char *help;
    } dcgm[] = {
        {GPU_M_SM_CLOCK, "DCGM_FI_DEV_SM_CLOCK", EXPO_GAUGE, "SM clock frequency (in MHz)."},
        {GPU_M_MEMORY_TEMP, "DCGM_FI_DEV_MEMORY_TEMP", EXPO_GAUGE, "Memory temperature (in C)."},
        {GPU_M_TOTAL_ENERGY_CONSUMPTION, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", EXPO_COUNTER,
         "Total energy consumption since boot (in mJ)."},
        {GPU_M_XID_ERRORS, "DCGM_FI_DEV_XID_ERRORS", EXPO_GAUGE, "Value of the last XID error encountered."},
        {GPU_M_FB_RESERVED, "DCGM_FI_DEV_FB_RESERVED", EXPO_GAUGE, "Framebuffer memory reserved (in MiB)."},
        {GPU_M_NVLINK_BANDWIDTH_TOTAL, "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", EXPO_COUNTER,
         "Total number of NVLink bandwidth counters for all lanes."},
        {GPU_M_VGPU_LICENSE_STATUS, "DCGM_FI_DEV_VGPU_LICENSE_STATUS", EXPO_GAUGE, "vGPU License status"},
        {GPU_M_ROW_REMAP_FAILURE, "DCGM_FI_DEV_ROW_REMAP_FAILURE", EXPO_GAUGE,
         "Whether remapping of rows has failed"},
        {GPU_M_PROF_DRAM_ACTIVE, "DCGM_FI_PROF_DRAM_ACTIVE", EXPO_GAUGE,
         "Ratio of cycles the device memory interface is active sending or receiving data."},
        {GPU_M_PROF_PCIE_TX_BYTES, "DCGM_FI_PROF_PCIE_TX_BYTES", EXPO_GAUGE,
         "The rate of data transmitted over the PCIe bus - including both protocol headers and data payloads "
         "- in "
         "bytes per second."},
        {GPU_M_RELIABILITY_VIOLATION, "DCGM_FI_DEV_RELIABILITY_VIOLATION", EXPO_COUNTER,
         "Throttling duration due to reliability constraints (in ns)."},
    };
    for (size_t i = 0; i < sizeof dcgm / sizeof dcgm[0]; i++) {
        const agent_metric *a = &agent__gpu_metrics[dcgm[i].m];
        assert_string_equal(a->name, dcgm[i].name);
        assert_int_equal(a->type, dcgm[i].type);
        assert_string_equal(a->help, dcgm[i].help);
    }
    /* the default set is dcgm-exporter's 25 enabled rows plus Kelvin's */
    int dcgm_on = 0;
    for (int m = 0; m < GPU_M__COUNT; m++)
        if (strncmp(agent__gpu_metrics[m].name, "DCGM_", 5) == 0)
            dcgm_on += agent__gpu_metric_default(m);
        else
            assert_true(agent__gpu_metric_default(m));
    assert_int_equal(dcgm_on, 25);
}

/* ---- counters file ---------------------------------------------------------- */

/* dcgm-exporter's etc/default-counters.csv, rows as shipped (a trimmed copy). */
static const char default_csv[] =
    "# Format\n"
    "# If line starts with a '#' it is considered a comment\n"
    "# DCGM FIELD, Prometheus metric type, help message\n"
    "\n"
    "# Clocks\n"
    "DCGM_FI_DEV_SM_CLOCK,  gauge, SM clock frequency (in MHz).\n"
    "DCGM_FI_DEV_MEM_CLOCK, gauge, Memory clock frequency (in MHz).\n"
    "# DCGM_EXP_CLOCK_EVENTS_COUNT, gauge, Count of clock events within the user-specified time window (see "
    "clock-events-count-window-size param).\n"
    "\n"
    "# Temperature\n"
    "DCGM_FI_DEV_MEMORY_TEMP, gauge, Memory temperature (in C).\n"
    "DCGM_FI_DEV_GPU_TEMP,    gauge, GPU temperature (in C).\n"
    "\n"
    "# Power\n"
    "DCGM_FI_DEV_POWER_USAGE,              gauge, Power draw (in W).\n"
    "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION, counter, Total energy consumption since boot (in mJ).\n"
    "\n"
    "# PCIE\n"
    "# DCGM_FI_PROF_PCIE_TX_BYTES,  counter, Total number of bytes transmitted through PCIe TX via NVML.\n"
    "# DCGM_FI_PROF_PCIE_RX_BYTES,  counter, Total number of bytes received through PCIe RX via NVML.\n"
    "DCGM_FI_DEV_PCIE_REPLAY_COUNTER, counter, Total number of PCIe retries.\n"
    "\n"
    "# Utilization (the sample period varies depending on the product)\n"
    "DCGM_FI_DEV_GPU_UTIL,      gauge, GPU utilization (in %).\n"
    "DCGM_FI_DEV_MEM_COPY_UTIL, gauge, Memory utilization (in %).\n"
    "DCGM_FI_DEV_ENC_UTIL,      gauge, Encoder utilization (in %).\n"
    "DCGM_FI_DEV_DEC_UTIL ,     gauge, Decoder utilization (in %).\n"
    "\n"
    "# Errors and violations\n"
    "DCGM_FI_DEV_XID_ERRORS,              gauge,   Value of the last XID error encountered.\n"
    "# DCGM_FI_DEV_POWER_VIOLATION,       counter, Throttling duration due to power constraints (in us).\n"
    "# DCGM_EXP_XID_ERRORS_COUNT, gauge, Count of XID Errors within user-specified time window (see "
    "xid-count-window-size param).\n"
    "\n"
    "# Memory usage\n"
    "DCGM_FI_DEV_FB_FREE, gauge, Framebuffer memory free (in MiB).\n"
    "DCGM_FI_DEV_FB_USED, gauge, Framebuffer memory used (in MiB).\n"
    "DCGM_FI_DEV_FB_RESERVED, gauge, Framebuffer memory reserved (in MiB).\n"
    "\n"
    "# NVLink\n"
    "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL,            counter, Total number of NVLink bandwidth counters for "
    "all lanes.\n"
    "\n"
    "# VGPU License status\n"
    "DCGM_FI_DEV_VGPU_LICENSE_STATUS, gauge, vGPU License status\n"
    "\n"
    "# Remapped rows\n"
    "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS, counter, Number of remapped rows for uncorrectable errors\n"
    "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS,   counter, Number of remapped rows for correctable errors\n"
    "DCGM_FI_DEV_ROW_REMAP_FAILURE,           gauge,   Whether remapping of rows has failed\n"
    "\n"
    "# Static configuration information. These appear as labels on the other metrics\n"
    "DCGM_FI_DRIVER_VERSION,        label, Driver Version\n"
    "# DCGM_FI_NVML_VERSION,        label, NVML Version\n"
    "\n"
    "# DCP metrics\n"
    "DCGM_FI_PROF_GR_ENGINE_ACTIVE,   gauge, Ratio of time the graphics engine is active.\n"
    "# DCGM_FI_PROF_SM_ACTIVE,        gauge, The ratio of cycles an SM has at least 1 warp assigned.\n"
    "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE, gauge, Ratio of cycles the tensor (HMMA) pipe is active.\n"
    "DCGM_FI_PROF_DRAM_ACTIVE,        gauge, Ratio of cycles the device memory interface is active sending "
    "or receiving data.\n"
    "DCGM_FI_PROF_PCIE_TX_BYTES,      gauge, The rate of data transmitted over the PCIe bus - including both "
    "protocol headers and data payloads - in bytes per second.\n"
    "DCGM_FI_PROF_PCIE_RX_BYTES,      gauge, The rate of data received over the PCIe bus - including both "
    "protocol headers and data payloads - in bytes per second.\n";

static void test_counters_default_csv(void **state) {
    (void)state;
    gpu_counters c, def;
    char skipped[256], err[256];
    assert_int_equal(agent__gpu_counters_parse(default_csv, strlen(default_csv), &c, skipped, sizeof skipped,
                                               err, sizeof err),
                     0);
    assert_string_equal(skipped, "");
    agent__gpu_counters_default(&def);
    /* dcgm-exporter's file selects exactly the DCGM part of the default set */
    for (int m = 0; m < GPU_M__COUNT; m++) {
        int is_dcgm = strncmp(agent__gpu_metrics[m].name, "DCGM_", 5) == 0;
        if (is_dcgm)
            assert_int_equal(c.metric[m], def.metric[m]);
        else if (m == GPU_M_K_NVML_UP || m == GPU_M_K_LOST)
            assert_int_equal(c.metric[m], 1);
        else
            assert_int_equal(c.metric[m], 0);
    }
    assert_int_equal(c.label[GPU_L_DRIVER_VERSION], 1);
    assert_int_equal(c.label[GPU_L_NVML_VERSION], 0);
    assert_int_equal(def.label[GPU_L_DRIVER_VERSION], 1);
}

static void test_counters_rows(void **state) {
    (void)state;
    gpu_counters c;
    char skipped[256], err[256];
    const char *t = "DCGM_FI_DEV_ECC_DBE_AGG_TOTAL, counter, x\r\n"
                    "  kelvin_gpu_power_limit_watts ,gauge, help, with, commas\n"
                    "DCGM_EXP_XID_ERRORS_COUNT, gauge, window\n"
                    "DCGM_FI_DEV_SERIAL, label, Device Serial Number\n"
                    "DCGM_FI_PROF_PCIE_RX_BYTES, counter, the duplicate row\n"
                    "DCGM_FI_DEV_NO_SUCH_THING, gauge, nope";
    assert_int_equal(agent__gpu_counters_parse(t, strlen(t), &c, skipped, sizeof skipped, err, sizeof err),
                     0);
    assert_int_equal(c.metric[GPU_M_ECC_DBE_AGG_TOTAL], 1);
    assert_int_equal(c.metric[GPU_M_K_POWER_LIMIT], 1);
    assert_int_equal(c.metric[GPU_M_PROF_PCIE_RX_BYTES], 1);
    assert_int_equal(c.metric[GPU_M_SM_CLOCK], 0);
    assert_int_equal(c.label[GPU_L_SERIAL], 1);
    assert_int_equal(c.label[GPU_L_DRIVER_VERSION], 0);
    assert_string_equal(skipped, "DCGM_EXP_XID_ERRORS_COUNT,DCGM_FI_DEV_NO_SUCH_THING");

    /* errors name the line */
    gpu_counters before = c;
    const char *bad1 = "# ok\nDCGM_FI_DEV_SM_CLOCK gauge SM clock\n";
    assert_int_equal(
        agent__gpu_counters_parse(bad1, strlen(bad1), &c, skipped, sizeof skipped, err, sizeof err),
        BASE_E_PARSE);
    assert_non_null(strstr(err, "line 2"));
    assert_memory_equal(&c, &before, sizeof c); /* ret written only on success */
    const char *bad2 = "DCGM_FI_DEV_SM_CLOCK, histogram, x\n";
    assert_int_equal(
        agent__gpu_counters_parse(bad2, strlen(bad2), &c, skipped, sizeof skipped, err, sizeof err),
        BASE_E_PARSE);
    assert_non_null(strstr(err, "line 1"));
    const char *bad3 = " , gauge, x\n";
    assert_int_equal(
        agent__gpu_counters_parse(bad3, strlen(bad3), &c, skipped, sizeof skipped, err, sizeof err),
        BASE_E_PARSE);
    /* an empty file serves only the collector's health */
    assert_int_equal(agent__gpu_counters_parse("", 0, &c, skipped, sizeof skipped, err, sizeof err), 0);
    for (int m = 0; m < GPU_M__COUNT; m++)
        assert_int_equal(c.metric[m], m == GPU_M_K_NVML_UP || m == GPU_M_K_LOST);
    /* limits */
    size_t big = (1u << 20) + 1;
    char *huge = malloc(big);
    memset(huge, '\n', big);
    assert_int_equal(agent__gpu_counters_parse(huge, big, &c, skipped, sizeof skipped, err, sizeof err),
                     BASE_E_LIMIT);
    assert_int_equal(agent__gpu_counters_parse(huge, 20001, &c, skipped, sizeof skipped, err, sizeof err),
                     BASE_E_LIMIT);
    free(huge);
}

static void test_counters_shipped_file(void **state) {
    (void)state;
    /* docs/gpu-counters.csv is the built-in default, written out */
    const char *src = getenv("KELVIN_SOURCE_DIR");
    if (!src) fail_msg("KELVIN_SOURCE_DIR is not set (run through ctest)");
    char path[1024];
    snprintf(path, sizeof path, "%s/docs/gpu-counters.csv", src);
    FILE *f = fopen(path, "rb");
    if (!f) fail_msg("cannot open %s", path);
    static char text[1 << 16];
    size_t n = fread(text, 1, sizeof text, f);
    fclose(f);
    assert_true(n > 0 && n < sizeof text);
    gpu_counters c, def;
    char skipped[256], err[256];
    if (agent__gpu_counters_parse(text, n, &c, skipped, sizeof skipped, err, sizeof err) != 0)
        fail_msg("%s", err);
    assert_string_equal(skipped, "");
    agent__gpu_counters_default(&def);
    for (int m = 0; m < GPU_M__COUNT; m++)
        if (c.metric[m] != def.metric[m])
            fail_msg("%s: file %d, default %d", agent__gpu_metrics[m].name, c.metric[m], def.metric[m]);
    assert_memory_equal(c.label, def.label, sizeof c.label);
    /* and every catalog metric is listed, on or commented out */
    for (int m = 0; m < GPU_M__COUNT; m++)
        if (m != GPU_M_K_NVML_UP && m != GPU_M_K_LOST && !strstr(text, agent__gpu_metrics[m].name))
            fail_msg("%s not listed in %s", agent__gpu_metrics[m].name, path);
}

static void test_counters_file_errors(void **state) {
    (void)state;
    agent_gpu_opts o = {.nvml_library = "/nonexistent/libnvidia-ml.so.1",
                        .counters_file = "/nonexistent/counters.csv"};
    agent_gpu *g = (agent_gpu *)0x1;
    char err[256] = "";
    assert_int_equal(agent_gpu_new(&o, &g, err, sizeof err), BASE_E_IO);
    assert_ptr_equal(g, (agent_gpu *)0x1);
    assert_non_null(strstr(err, "/nonexistent/counters.csv"));

    char path[] = "/tmp/kelvin-gpu-counters-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    const char *bad = "DCGM_FI_DEV_SM_CLOCK, summary, x\n";
    assert_int_equal(write(fd, bad, strlen(bad)), (ssize_t)strlen(bad));
    close(fd);
    o.counters_file = path;
    assert_int_equal(agent_gpu_new(&o, &g, err, sizeof err), BASE_E_PARSE);
    assert_non_null(strstr(err, "line 1"));
    unlink(path);
}

/* ---- process stride probe ------------------------------------------------- */

static void test_stride_probe(void **state) {
    (void)state;
    unsigned char buf[8 * 32];
    /* 24-byte entries: nothing past 24*n is touched */
    memset(buf, GPU_STRIDE_SENTINEL, sizeof buf);
    for (int i = 0; i < 3; i++) {
        nvmlProcessInfo_v2_t e = {.pid = 100u + (unsigned)i, .usedGpuMemory = 1ull << 20};
        memcpy(buf + i * 24, &e, sizeof e);
    }
    assert_int_equal(agent__gpu_probe_stride(buf, 8, 3), 24);
    /* 32-byte entries (R535): bytes between 24*n and 32*n are written */
    memset(buf, GPU_STRIDE_SENTINEL, sizeof buf);
    for (int i = 0; i < 3; i++) {
        nvmlProcessDetail_v1_t e = {.pid = 100u + (unsigned)i, .usedGpuMemory = 1ull << 20};
        memcpy(buf + i * 32, &e, sizeof e);
    }
    assert_int_equal(agent__gpu_probe_stride(buf, 8, 3), 32);
    /* one entry with a zero protected-memory field is still detected */
    memset(buf, GPU_STRIDE_SENTINEL, sizeof buf);
    nvmlProcessDetail_v1_t one = {.pid = 7, .usedGpuMemory = 5};
    memcpy(buf, &one, sizeof one);
    assert_int_equal(agent__gpu_probe_stride(buf, 8, 1), 32);
    assert_int_equal(agent__gpu_probe_stride(buf, 8, 0), 24);
}

/* ---- NVML absent ------------------------------------------------------------ */

static void test_nvml_absent(void **state) {
    (void)state;
    agent_gpu_opts o = {.nvml_library = "/nonexistent/libnvidia-ml.so.1", .hostname = "h", .procfs = "/proc"};
    agent_gpu *g = NULL;
    char err[256] = "";
    assert_int_equal(agent_gpu_new(&o, &g, err, sizeof err), 0);
    assert_non_null(g);
    scrape sc = {0};
    collect(g, &sc);
    assert_int_equal(sc.n, 1);
    assert_string_equal(sc.s[0].name, "kelvin_gpu_nvml_up");
    assert_true(sc.s[0].value == 0);
    char reason[256];
    assert_true(label(sc.s[0].labels, "reason", reason, sizeof reason));
    assert_non_null(strstr(reason, "/nonexistent/libnvidia-ml.so.1"));
    assert_null(strstr(sc.text, "DCGM_"));
    scrape_free(&sc);
    /* a second cycle (no retry yet) says the same */
    collect(g, &sc);
    assert_int_equal(sc.n, 1);
    scrape_free(&sc);
    agent_gpu_free(g);

    /* a library that is not NVML */
    o.nvml_library = "libm.so.6";
    assert_int_equal(agent_gpu_new(&o, &g, err, sizeof err), 0);
    collect(g, &sc);
    assert_int_equal(sc.n, 1);
    assert_true(label(sc.s[0].labels, "reason", reason, sizeof reason));
    assert_non_null(strstr(reason, "nvmlInit_v2"));
    scrape_free(&sc);
    agent_gpu_free(g);
}

/* ---- against the simulator --------------------------------------------------- */

static const char *const default_dcgm[] = {
    "DCGM_FI_DEV_SM_CLOCK",
    "DCGM_FI_DEV_MEM_CLOCK",
    "DCGM_FI_DEV_MEMORY_TEMP",
    "DCGM_FI_DEV_GPU_TEMP",
    "DCGM_FI_DEV_POWER_USAGE",
    "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
    "DCGM_FI_DEV_PCIE_REPLAY_COUNTER",
    "DCGM_FI_DEV_GPU_UTIL",
    "DCGM_FI_DEV_MEM_COPY_UTIL",
    "DCGM_FI_DEV_ENC_UTIL",
    "DCGM_FI_DEV_DEC_UTIL",
    "DCGM_FI_DEV_XID_ERRORS",
    "DCGM_FI_DEV_FB_FREE",
    "DCGM_FI_DEV_FB_USED",
    "DCGM_FI_DEV_FB_RESERVED",
    "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL",
    "DCGM_FI_DEV_VGPU_LICENSE_STATUS",
    "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS",
    "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS",
    "DCGM_FI_DEV_ROW_REMAP_FAILURE",
    "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
    "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
    "DCGM_FI_PROF_DRAM_ACTIVE",
    "DCGM_FI_PROF_PCIE_TX_BYTES",
    "DCGM_FI_PROF_PCIE_RX_BYTES",
};

static void check_gpu_labels(const scrape *sc, const char *metric, unsigned idx, const char *model) {
    char gi[16], dev[32], buf[256];
    snprintf(gi, sizeof gi, "%u", idx);
    snprintf(dev, sizeof dev, "nvidia%u", idx);
    const sample *s = find(sc, metric, "gpu", gi);
    if (!s) fail_msg("%s{gpu=\"%u\"} missing", metric, idx);
    assert_true(label(s->labels, "UUID", buf, sizeof buf));
    assert_true(strncmp(buf, "GPU-", 4) == 0);
    assert_true(label(s->labels, "pci_bus_id", buf, sizeof buf));
    assert_int_equal(strlen(buf), 16); /* 00000000:07:00.0 */
    assert_true(label(s->labels, "device", buf, sizeof buf));
    assert_string_equal(buf, dev);
    assert_true(label(s->labels, "modelName", buf, sizeof buf));
    assert_string_equal(buf, model);
    assert_true(label(s->labels, "Hostname", buf, sizeof buf));
    assert_string_equal(buf, "testhost");
    assert_true(label(s->labels, "DCGM_FI_DRIVER_VERSION", buf, sizeof buf));
    assert_true(strlen(buf) > 0);
    assert_false(label(s->labels, "GPU_I_ID", buf, sizeof buf));
}

static void test_sim_default_set(void **state) {
    (void)state;
    sim_env("2", "h100", "healthy");
    agent_gpu *g = new_gpu(sim_lib("KELVIN_SIM_LIB"), NULL);
    scrape sc = {0};
    collect(g, &sc);
    assert_non_null(find(&sc, "kelvin_gpu_nvml_up", NULL, NULL));
    assert_true(find(&sc, "kelvin_gpu_nvml_up", NULL, NULL)->value == 1);
    scrape_free(&sc);
    sleep_ms(150);
    collect(g, &sc); /* the second cycle has the NVLink rate too */
    no_sentinels(&sc);
    for (unsigned gpu = 0; gpu < 2; gpu++) {
        char gi[16];
        snprintf(gi, sizeof gi, "%u", gpu);
        for (size_t i = 0; i < sizeof default_dcgm / sizeof default_dcgm[0]; i++) {
            if (count(&sc, default_dcgm[i], "gpu", gi) != 1)
                fail_msg("%s{gpu=\"%u\"}: %zu samples\n%s", default_dcgm[i], gpu,
                         count(&sc, default_dcgm[i], "gpu", gi), sc.text);
            check_gpu_labels(&sc, default_dcgm[i], gpu, "NVIDIA H100 80GB HBM3");
        }
        /* off by default in dcgm-exporter's file */
        assert_int_equal(count(&sc, "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "gpu", gi), 0);
        assert_int_equal(count(&sc, "DCGM_FI_PROF_SM_ACTIVE", "gpu", gi), 0);
        /* Kelvin's extras */
        assert_int_equal(count(&sc, "kelvin_gpu_lost", "gpu", gi), 1);
        assert_true(find(&sc, "kelvin_gpu_lost", "gpu", gi)->value == 0);
        assert_int_equal(count(&sc, "kelvin_gpu_info", "gpu", gi), 1);
        assert_int_equal(count(&sc, "kelvin_gpu_power_limit_watts", "gpu", gi), 1);
        assert_int_equal(count(&sc, "kelvin_gpu_power_enforced_limit_watts", "gpu", gi), 1);
        assert_int_equal(count(&sc, "kelvin_gpu_memory_temperature_celsius", "gpu", gi), 1);
        assert_true(count(&sc, "kelvin_gpu_clock_event_active", "gpu", gi) >= 1);
        assert_int_equal(count(&sc, "kelvin_gpu_violation_seconds_total", "gpu", gi), 6);
        assert_int_equal(count(&sc, "kelvin_gpu_ecc_volatile_errors_total", "gpu", gi), 2);
        assert_int_equal(count(&sc, "kelvin_gpu_ecc_aggregate_errors_total", "gpu", gi), 2);
        assert_int_equal(count(&sc, "kelvin_gpu_remapped_rows_total", "gpu", gi), 2);
        assert_int_equal(count(&sc, "kelvin_gpu_nvlink_errors_total", "gpu", gi), 4);
        assert_int_equal(count(&sc, "kelvin_gpu_nvlink_bytes_total", "gpu", gi), 2);
        assert_int_equal(count(&sc, "kelvin_gpu_pcie_replays_total", "gpu", gi), 1);
        assert_int_equal(count(&sc, "kelvin_gpu_sm_active_ratio", "gpu", gi), 1);
        assert_int_equal(count(&sc, "kelvin_gpu_pipe_active_ratio", "gpu", gi), 3);
        assert_int_equal(count(&sc, "kelvin_gpu_pcie_throughput_bytes_per_second", "gpu", gi), 2);
        /* values in dcgm-exporter's units */
        const sample *t = find(&sc, "DCGM_FI_DEV_GPU_TEMP", "gpu", gi);
        assert_true(t->value > 10 && t->value < 120);
        const sample *p = find(&sc, "DCGM_FI_DEV_POWER_USAGE", "gpu", gi);
        assert_true(p->value > 20 && p->value < 1000); /* W, not mW */
        const sample *r = find(&sc, "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "gpu", gi);
        assert_true(r->value >= 0 && r->value <= 1); /* a ratio */
        const sample *fu = find(&sc, "DCGM_FI_DEV_FB_USED", "gpu", gi);
        const sample *ff = find(&sc, "DCGM_FI_DEV_FB_FREE", "gpu", gi);
        assert_true(fu->value + ff->value > 70000 &&
                    fu->value + ff->value < 82000); /* MiB of an 80 GB part */
        const sample *x = find(&sc, "DCGM_FI_DEV_XID_ERRORS", "gpu", gi);
        char code[16];
        assert_true(label(x->labels, "err_code", code, sizeof code));
    }
    /* HELP and TYPE lines as dcgm-exporter writes them */
    assert_non_null(strstr(sc.text, "# HELP DCGM_FI_DEV_SM_CLOCK SM clock frequency (in MHz).\n"
                                    "# TYPE DCGM_FI_DEV_SM_CLOCK gauge\n"));
    assert_non_null(strstr(sc.text, "# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter\n"));
    scrape_free(&sc);
    agent_gpu_free(g);
}

static void test_sim_unsupported_absent(void **state) {
    (void)state;
    /* L4: no HBM temperature sensor, no NVLink, no GPM (Ada) */
    sim_env("1", "l4", "healthy");
    agent_gpu *g = new_gpu(sim_lib("KELVIN_SIM_LIB"), NULL);
    scrape sc = {0};
    collect(g, &sc);
    scrape_free(&sc);
    sleep_ms(120);
    collect(g, &sc);
    no_sentinels(&sc);
    assert_int_equal(count(&sc, "DCGM_FI_DEV_MEMORY_TEMP", NULL, NULL), 0);
    assert_int_equal(count(&sc, "kelvin_gpu_memory_temperature_celsius", NULL, NULL), 0);
    assert_false(has_prefix(&sc, "DCGM_FI_PROF_", NULL, NULL));
    assert_int_equal(count(&sc, "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", NULL, NULL), 0);
    /* the rest is there */
    assert_int_equal(count(&sc, "DCGM_FI_DEV_GPU_TEMP", "gpu", "0"), 1);
    assert_int_equal(count(&sc, "DCGM_FI_DEV_FB_USED", "gpu", "0"), 1);
    assert_int_equal(count(&sc, "DCGM_FI_DEV_POWER_USAGE", "gpu", "0"), 1);
    check_gpu_labels(&sc, "DCGM_FI_DEV_GPU_TEMP", 0, "NVIDIA L4");
    scrape_free(&sc);
    agent_gpu_free(g);
}

static void test_sim_legacy(void **state) {
    (void)state;
    sim_env("2", "h100", "healthy");
    agent_gpu *g = new_gpu(sim_lib("KELVIN_SIM_LEGACY_LIB"), NULL);
    scrape sc = {0};
    collect(g, &sc);
    scrape_free(&sc);
    sleep_ms(120);
    collect(g, &sc);
    no_sentinels(&sc);
    /* GPM and MemoryInfo_v2 are newer than the legacy driver */
    assert_false(has_prefix(&sc, "DCGM_FI_PROF_", NULL, NULL));
    assert_int_equal(count(&sc, "kelvin_gpu_sm_active_ratio", NULL, NULL), 0);
    assert_int_equal(count(&sc, "DCGM_FI_DEV_FB_RESERVED", NULL, NULL), 0);
    /* what the old driver has is still served, for every GPU */
    static const char *const present[] = {"DCGM_FI_DEV_SM_CLOCK",    "DCGM_FI_DEV_GPU_TEMP",
                                          "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_GPU_UTIL",
                                          "DCGM_FI_DEV_FB_USED",     "DCGM_FI_DEV_FB_FREE",
                                          "DCGM_FI_DEV_XID_ERRORS",  "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"};
    for (size_t i = 0; i < sizeof present / sizeof present[0]; i++) {
        assert_int_equal(count(&sc, present[i], "gpu", "0"), 1);
        assert_int_equal(count(&sc, present[i], "gpu", "1"), 1);
    }
    scrape_free(&sc);
    agent_gpu_free(g);
}

static void test_sim_fell_off_bus(void **state) {
    (void)state;
    /* GPU 0 is lost at model second 300; at 1000x that is 0.3 s after init */
    sim_env("2", "h100", "fell-off-bus");
    setenv("KELVIN_SIM_TIME_SCALE", "1000", 1);
    agent_gpu *g = new_gpu(sim_lib("KELVIN_SIM_LIB"), NULL);
    scrape sc = {0};
    collect(g, &sc);
    scrape_free(&sc);
    int lost = 0;
    for (int i = 0; i < 40 && !lost; i++) {
        sleep_ms(50);
        collect(g, &sc);
        const sample *l = find(&sc, "kelvin_gpu_lost", "gpu", "0");
        assert_non_null(l);
        lost = l->value == 1;
        if (!lost) scrape_free(&sc);
    }
    assert_true(lost);
    no_sentinels(&sc);
    /* its metrics are gone; its labels are kept on the lost gauge */
    char buf[256];
    assert_true(label(find(&sc, "kelvin_gpu_lost", "gpu", "0")->labels, "UUID", buf, sizeof buf));
    assert_int_equal(count(&sc, "DCGM_FI_DEV_GPU_TEMP", "gpu", "0"), 0);
    assert_int_equal(count(&sc, "DCGM_FI_DEV_FB_USED", "gpu", "0"), 0);
    assert_int_equal(count(&sc, "kelvin_gpu_lost", "gpu", "0"), 1);
    /* the other GPU carries on */
    assert_int_equal(count(&sc, "DCGM_FI_DEV_GPU_TEMP", "gpu", "1"), 1);
    assert_true(find(&sc, "kelvin_gpu_lost", "gpu", "1")->value == 0);
    scrape_free(&sc);
    /* and stays that way, keeping the XID 79 that went with it */
    int xid79 = 0;
    for (int i = 0; i < 20 && !xid79; i++) {
        collect(g, &sc);
        assert_true(find(&sc, "kelvin_gpu_lost", "gpu", "0")->value == 1);
        assert_int_equal(count(&sc, "DCGM_FI_DEV_SM_CLOCK", "gpu", "0"), 0);
        for (size_t k = 0; k < sc.n; k++) {
            char gpu[16], xid[16];
            if (strcmp(sc.s[k].name, "kelvin_gpu_xid_errors_total") == 0 &&
                label(sc.s[k].labels, "gpu", gpu, sizeof gpu) && strcmp(gpu, "0") == 0 &&
                label(sc.s[k].labels, "xid", xid, sizeof xid) && strcmp(xid, "79") == 0)
                xid79 = sc.s[k].value >= 1;
        }
        if (xid79) {
            const sample *last = find(&sc, "DCGM_FI_DEV_XID_ERRORS", "gpu", "0");
            assert_non_null(last);
            assert_true(last->value == 79);
        }
        scrape_free(&sc);
        if (!xid79) sleep_ms(50);
    }
    assert_true(xid79);
    agent_gpu_free(g);
}

static void test_sim_mig(void **state) {
    (void)state;
    sim_env("2", "h100", "healthy");
    setenv("KELVIN_SIM_MIG", "0:3g.40gb,2g.20gb,1g.10gb", 1);
    agent_gpu *g = new_gpu(sim_lib("KELVIN_SIM_LIB"), NULL);
    scrape sc = {0};
    collect(g, &sc);
    scrape_free(&sc);
    sleep_ms(120);
    collect(g, &sc);
    no_sentinels(&sc);
    /* three instances on GPU 0, each its own entity */
    size_t inst = 0;
    char buf[256], ids[3][16] = {{0}};
    for (size_t i = 0; i < sc.n; i++) {
        if (strcmp(sc.s[i].name, "DCGM_FI_DEV_FB_USED") != 0) continue;
        char gpu[16];
        assert_true(label(sc.s[i].labels, "gpu", gpu, sizeof gpu));
        if (strcmp(gpu, "0") != 0) {
            assert_false(label(sc.s[i].labels, "GPU_I_ID", buf, sizeof buf));
            continue;
        }
        assert_true(label(sc.s[i].labels, "GPU_I_PROFILE", buf, sizeof buf));
        assert_true(strcmp(buf, "3g.40gb") == 0 || strcmp(buf, "2g.20gb") == 0 ||
                    strcmp(buf, "1g.10gb") == 0);
        assert_true(inst < 3);
        assert_true(label(sc.s[i].labels, "GPU_I_ID", ids[inst], sizeof ids[inst]));
        for (size_t k = 0; k < inst; k++) assert_string_not_equal(ids[k], ids[inst]);
        assert_true(sc.s[i].value < 41000); /* an instance's memory, not the GPU's */
        inst++;
    }
    assert_int_equal(inst, 3);
    /* profiling per instance (GPM MIG samples) */
    assert_int_equal(count(&sc, "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "GPU_I_PROFILE", "3g.40gb"), 1);
    /* device-level metrics stay on the GPU, once */
    assert_int_equal(count(&sc, "DCGM_FI_DEV_GPU_TEMP", "gpu", "0"), 1);
    assert_false(label(find(&sc, "DCGM_FI_DEV_GPU_TEMP", "gpu", "0")->labels, "GPU_I_ID", buf, sizeof buf));
    /* not available under MIG: absent, not 0 */
    assert_int_equal(count(&sc, "DCGM_FI_DEV_GPU_UTIL", "gpu", "0"), 0);
    assert_int_equal(count(&sc, "DCGM_FI_DEV_GPU_UTIL", "gpu", "1"), 1);
    scrape_free(&sc);
    agent_gpu_free(g);
}

static void test_sim_processes(void **state) {
    (void)state;
    const char *libs[2] = {"KELVIN_SIM_LIB", "KELVIN_SIM_LEGACY_LIB"};
    const char *strides[2] = {"24", "32"};
    for (int li = 0; li < 2; li++)
        for (int si = 0; si < 2; si++) {
            sim_env("1", "h100", "healthy");
            char pids[64];
            snprintf(pids, sizeof pids, "%d", (int)getpid());
            setenv("KELVIN_SIM_PIDS", pids, 1);
            setenv("KELVIN_SIM_PROCESS_STRIDE", strides[si], 1);
            agent_gpu *g = new_gpu(sim_lib(libs[li]), NULL);
            scrape sc = {0};
            collect(g, &sc);
            char me[16];
            snprintf(me, sizeof me, "%d", (int)getpid());
            const sample *p = find(&sc, "kelvin_gpu_process_memory_bytes", "pid", me);
            if (!p)
                fail_msg("%s stride %s: no process sample for pid %s\n%s", libs[li], strides[si], me,
                         sc.text);
            assert_true(p->value > 0);
            char comm[64];
            assert_true(label(p->labels, "command", comm, sizeof comm));
            assert_true(strlen(comm) > 0);
            /* every reported pid is a real pid, never a misread stride */
            for (size_t i = 0; i < sc.n; i++) {
                if (strcmp(sc.s[i].name, "kelvin_gpu_process_memory_bytes") != 0) continue;
                char pid[16];
                assert_true(label(sc.s[i].labels, "pid", pid, sizeof pid));
                assert_true(atoi(pid) > 0);
                assert_true(sc.s[i].value < 90e9);
            }
            scrape_free(&sc);
            agent_gpu_free(g);
        }
}

static void test_sim_process_list_versions(void **state) {
    (void)state;
    /* every version of the process list, against the simulator's entries:
     * DetailList, _v3 with 24- and 32-byte (R535) strides, _v2, v1 */
    for (int variant = 0; variant < 5; variant++) {
        sim_env("1", "h100", "healthy");
        setenv("KELVIN_SIM_PIDS", "111,222,333", 1);
        /* three MIG instances: the GPU's handle lists one process in each */
        setenv("KELVIN_SIM_MIG", "0:1g.10gb,1g.10gb,1g.10gb", 1);
        setenv("KELVIN_SIM_PROCESS_STRIDE", variant == 2 ? "32" : "24", 1);
        nvml_lib *lib = NULL;
        char err[256];
        assert_int_equal(nvml_open(sim_lib("KELVIN_SIM_LIB"), &lib, err, sizeof err), 0);
        assert_int_equal(nvml_init(lib, 0), NVML_SUCCESS);
        /* hide the newer versions so the older path is the one taken */
        if (variant >= 1) lib->nvmlDeviceGetRunningProcessDetailList = NULL;
        if (variant >= 3) lib->nvmlDeviceGetComputeRunningProcesses_v3 = NULL;
        if (variant >= 4) lib->nvmlDeviceGetComputeRunningProcesses_v2 = NULL;
        nvmlDevice_t dev;
        assert_int_equal(lib->device_get_handle_by_index(0, &dev), NVML_SUCCESS);
        gpu_procinfo out[16];
        size_t n = 0;
        assert_int_equal(agent__gpu_processes(lib, dev, out, 16, &n), NVML_SUCCESS);
        if (n != 3) fail_msg("variant %d: %zu processes", variant, n);
        for (size_t i = 0; i < n; i++) {
            if (out[i].pid != 111 + 111 * i) fail_msg("variant %d: entry %zu pid %u", variant, i, out[i].pid);
            assert_true(out[i].used_bytes > 0 && out[i].used_bytes < (100ull << 30));
        }
        /* a short buffer: as many as fit */
        assert_int_equal(agent__gpu_processes(lib, dev, out, 2, &n), NVML_SUCCESS);
        assert_int_equal(n, 2);
        assert_int_equal(nvml_shutdown(lib), NVML_SUCCESS);
        nvml_close(lib);
    }
}

static void test_sim_init_error(void **state) {
    (void)state;
    sim_env("2", "h100", "healthy");
    setenv("KELVIN_SIM_INIT_ERROR", "DRIVER_NOT_LOADED", 1);
    agent_gpu *g = new_gpu(sim_lib("KELVIN_SIM_LIB"), NULL);
    scrape sc = {0};
    collect(g, &sc);
    unsetenv("KELVIN_SIM_INIT_ERROR");
    assert_int_equal(sc.n, 1);
    assert_string_equal(sc.s[0].name, "kelvin_gpu_nvml_up");
    assert_true(sc.s[0].value == 0);
    char reason[256], sim[16];
    assert_true(label(sc.s[0].labels, "reason", reason, sizeof reason));
    assert_non_null(strstr(reason, "nvmlInit"));
    assert_true(label(sc.s[0].labels, "simulated", sim, sizeof sim));
    assert_string_equal(sim, "true");
    scrape_free(&sc);
    agent_gpu_free(g);
}

static void test_sim_driver_versions(void **state) {
    (void)state;
    /* R560 has the PCIe byte counters (fields 197/198, R555+) */
    sim_env("1", "h100", "healthy");
    setenv("KELVIN_SIM_DRIVER", "560.35.03", 1);
    agent_gpu *g = new_gpu(sim_lib("KELVIN_SIM_LIB"), NULL);
    scrape sc = {0};
    collect(g, &sc);
    assert_int_equal(count(&sc, "kelvin_gpu_pcie_bytes_total", "direction", "tx"), 1);
    assert_int_equal(count(&sc, "kelvin_gpu_pcie_bytes_total", "direction", "rx"), 1);
    scrape_free(&sc);
    agent_gpu_free(g);
    /* R550 does not: absent, not 0 */
    setenv("KELVIN_SIM_DRIVER", "550.54.15", 1);
    g = new_gpu(sim_lib("KELVIN_SIM_LIB"), NULL);
    collect(g, &sc);
    assert_int_equal(count(&sc, "kelvin_gpu_pcie_bytes_total", NULL, NULL), 0);
    scrape_free(&sc);
    agent_gpu_free(g);
    /* R545 labels the memory temperature a double while it sits in uiVal:
     * read it as DCGM does, never as a garbage double */
    setenv("KELVIN_SIM_DRIVER", "545.23.08", 1);
    g = new_gpu(sim_lib("KELVIN_SIM_LIB"), NULL);
    collect(g, &sc);
    const sample *t = find(&sc, "DCGM_FI_DEV_MEMORY_TEMP", "gpu", "0");
    assert_non_null(t);
    assert_true(t->value > 10 && t->value < 120);
    scrape_free(&sc);
    agent_gpu_free(g);
}

static double sum_xids(const scrape *sc, const char *gpu) {
    double s = 0;
    char buf[16];
    for (size_t i = 0; i < sc->n; i++)
        if (strcmp(sc->s[i].name, "kelvin_gpu_xid_errors_total") == 0 &&
            label(sc->s[i].labels, "gpu", buf, sizeof buf) && strcmp(buf, gpu) == 0)
            s += sc->s[i].value;
    return s;
}

static void test_sim_xid_counted_once(void **state) {
    (void)state;
    /* one XID burst (5-20 events) at wall 0.6 s, the next at 3.0 s: an
     * independent event set on the same library sees the same events, and
     * the collector must have counted each exactly once */
    sim_env("1", "h100", "xid-storm");
    setenv("KELVIN_SIM_TIME_SCALE", "100", 1);
    int64_t t0 = base_mono_ns();
    agent_gpu *g = new_gpu(sim_lib("KELVIN_SIM_LIB"), NULL);
    scrape sc = {0};
    collect(g, &sc); /* loads NVML, registers the collector's event set */
    assert_int_equal(sum_xids(&sc, "0"), 0);
    scrape_free(&sc);

    nvml_lib *lib = NULL;
    char err[256];
    assert_int_equal(nvml_open(sim_lib("KELVIN_SIM_LIB"), &lib, err, sizeof err), 0);
    assert_int_equal(nvml_init(lib, 0), NVML_SUCCESS);
    nvmlDevice_t dev;
    assert_int_equal(lib->device_get_handle_by_index(0, &dev), NVML_SUCCESS);
    nvmlEventSet_t set;
    assert_int_equal(lib->nvmlEventSetCreate(&set), NVML_SUCCESS);
    assert_int_equal(lib->nvmlDeviceRegisterEvents(dev, nvmlEventTypeXidCriticalError, set), NVML_SUCCESS);
    assert_true(base_mono_ns() - t0 < 500000000LL); /* armed before the burst */

    base_sleep_until(t0 + 1600000000LL);
    unsigned mine[1024] = {0};
    unsigned total = 0;
    for (int i = 0; i < 1000; i++) {
        nvmlEventData_t ev;
        nvmlReturn_t r = lib->nvmlEventSetWait_v2(set, &ev, 0);
        if (r == NVML_ERROR_TIMEOUT) break;
        assert_int_equal(r, NVML_SUCCESS);
        assert_true(ev.eventData < 1024);
        mine[ev.eventData]++;
        total++;
    }
    assert_true(total >= 1);
    sleep_ms(3 * GPU_EVENT_WAIT_MS); /* the collector's watcher drains too */
    collect(g, &sc);
    assert_true(base_mono_ns() - t0 < 2900000000LL); /* still before the second burst */
    assert_true(sum_xids(&sc, "0") == total);
    for (unsigned code = 0; code < 1024; code++) {
        if (!mine[code]) continue;
        char c[16];
        snprintf(c, sizeof c, "%u", code);
        const sample *s = find(&sc, "kelvin_gpu_xid_errors_total", "xid", c);
        if (!s || s->value != mine[code])
            fail_msg("XID %u: collector counted %g, the driver delivered %u", code, s ? s->value : -1.0,
                     mine[code]);
    }
    scrape_free(&sc);
    lib->nvmlEventSetFree(set);
    nvml_shutdown(lib);
    nvml_close(lib);
    agent_gpu_free(g);
}

static void test_sim_xid_storm(void **state) {
    (void)state;
    /* bursts of 5-20 XIDs every 240 model seconds from onset 60 s; at
     * 1000x the first burst lands within 0.1 s of wall time */
    sim_env("2", "h100", "xid-storm");
    setenv("KELVIN_SIM_TIME_SCALE", "1000", 1);
    agent_gpu *g = new_gpu(sim_lib("KELVIN_SIM_LIB"), NULL);
    scrape sc = {0};
    double total = 0;
    for (int i = 0; i < 30 && total == 0; i++) {
        sleep_ms(50);
        collect(g, &sc);
        total = sum_xids(&sc, "0");
        if (total == 0) scrape_free(&sc);
    }
    assert_true(total >= 1);
    /* the last-XID gauge names one of the counted codes */
    const sample *last = find(&sc, "DCGM_FI_DEV_XID_ERRORS", "gpu", "0");
    assert_non_null(last);
    char code[16], msg[256];
    assert_true(label(last->labels, "err_code", code, sizeof code));
    assert_true(label(last->labels, "err_msg", msg, sizeof msg));
    assert_true(last->value == atof(code));
    assert_int_equal(count(&sc, "kelvin_gpu_xid_errors_total", "xid", code) >= 1, 1);
    /* the healthy GPU has none */
    assert_true(sum_xids(&sc, "1") == 0);
    const sample *l1 = find(&sc, "DCGM_FI_DEV_XID_ERRORS", "gpu", "1");
    assert_non_null(l1);
    assert_true(l1->value == 0);
    scrape_free(&sc);
    /* counters never go down */
    double prev = total;
    for (int i = 0; i < 3; i++) {
        collect(g, &sc);
        double now = sum_xids(&sc, "0");
        assert_true(now >= prev);
        prev = now;
        scrape_free(&sc);
    }
    agent_gpu_free(g);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_catalog),
        cmocka_unit_test(test_counters_default_csv),
        cmocka_unit_test(test_counters_rows),
        cmocka_unit_test(test_counters_shipped_file),
        cmocka_unit_test(test_counters_file_errors),
        cmocka_unit_test(test_stride_probe),
        cmocka_unit_test(test_nvml_absent),
        cmocka_unit_test(test_sim_default_set),
        cmocka_unit_test(test_sim_unsupported_absent),
        cmocka_unit_test(test_sim_legacy),
        cmocka_unit_test(test_sim_fell_off_bus),
        cmocka_unit_test(test_sim_mig),
        cmocka_unit_test(test_sim_processes),
        cmocka_unit_test(test_sim_xid_storm),
        cmocka_unit_test(test_sim_xid_counted_once),
        cmocka_unit_test(test_sim_process_list_versions),
        cmocka_unit_test(test_sim_init_error),
        cmocka_unit_test(test_sim_driver_versions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
