/* tests/unit/sim/simnvml.c -- the simulated libnvidia-ml.so.1, called the way
 * an NVML client calls it: dlopen(KELVIN_SIM_LIB), dlsym every symbol in
 * NVML_FUNCTIONS, and drive it through NVML's C interface. The legacy build
 * (KELVIN_SIM_LEGACY_LIB) is checked for the symbols an R470 driver lacks.
 *
 * Configuration goes through the environment the library reads at nvmlInit
 * (each test sets it, inits, and shuts down). Scenario tests use a large
 * KELVIN_SIM_TIME_SCALE so a half-hour failure unfolds in a second or two.
 * The test links only kelvin_sim, so it must load the library, not link it.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "nvml/nvml_types.h"

static void *lib;

#define X_PTR(name, params) static nvmlReturn_t(*p_##name) params;
NVML_FUNCTIONS(X_PTR)
#undef X_PTR
static const char *(*p_nvmlErrorString)(nvmlReturn_t);

#define N(name) p_##name

static const char *env_lib(const char *var) {
    const char *p = getenv(var);
    if (!p || !*p) fail_msg("%s is not set (run through ctest)", var);
    if (access(p, R_OK) != 0) fail_msg("%s=%s does not exist: build the simulated NVML first", var, p);
    return p;
}

static int setup(void **state) {
    (void)state;
    lib = dlopen(env_lib("KELVIN_SIM_LIB"), RTLD_NOW | RTLD_LOCAL);
    if (!lib) fail_msg("dlopen: %s", dlerror());
#define X_LOAD(name, params)                                                                                 \
    *(void **)&p_##name = dlsym(lib, #name);                                                                 \
    if (!p_##name) fail_msg("missing symbol %s", #name);
    NVML_FUNCTIONS(X_LOAD)
#undef X_LOAD
    *(void **)&p_nvmlErrorString = dlsym(lib, "nvmlErrorString");
    if (!p_nvmlErrorString) fail_msg("missing nvmlErrorString");
    return 0;
}

static int teardown(void **state) {
    (void)state;
    dlclose(lib);
    return 0;
}

/* After each test: drop every init reference a failed test left behind, so
 * the next test starts from its own environment. */
static int reset(void **state) {
    (void)state;
    for (int i = 0; i < 16 && N(nvmlShutdown)() == NVML_SUCCESS; i++) {
    }
    return 0;
}

static const char *const env_vars[] = {
    "KELVIN_SIM_SCENARIO",   "KELVIN_SIM_GPUS",           "KELVIN_SIM_MODEL",
    "KELVIN_SIM_DRIVER",     "KELVIN_SIM_SEED",           "KELVIN_SIM_TIME_SCALE",
    "KELVIN_SIM_MIG",        "KELVIN_SIM_PIDS",           "KELVIN_SIM_HANG_MS",
    "KELVIN_SIM_INIT_ERROR", "KELVIN_SIM_PROCESS_STRIDE", "KELVIN_SIM_LOST_AFTER",
    "KELVIN_SIM_ONSET",      "KELVIN_SIM_FAULT_GPU",      "KELVIN_SIM_WORKLOAD",
    "KELVIN_SIM_VERBOSE",
};

/* Clears every KELVIN_SIM_* variable, then sets "NAME=value" pairs. */
static void env(const char *kv, ...) {
    for (size_t i = 0; i < sizeof env_vars / sizeof env_vars[0]; i++) unsetenv(env_vars[i]);
    va_list ap;
    va_start(ap, kv);
    for (const char *p = kv; p; p = va_arg(ap, const char *)) {
        char buf[256];
        snprintf(buf, sizeof buf, "%s", p);
        char *eq = strchr(buf, '=');
        assert_non_null(eq);
        *eq = 0;
        setenv(buf, eq + 1, 1);
    }
    va_end(ap);
}

static void init_ok(void) {
    assert_int_equal(N(nvmlInit_v2)(), NVML_SUCCESS);
}
static void shutdown_ok(void) {
    assert_int_equal(N(nvmlShutdown)(), NVML_SUCCESS);
}

static nvmlDevice_t dev(unsigned i) {
    nvmlDevice_t d = NULL;
    assert_int_equal(N(nvmlDeviceGetHandleByIndex_v2)(i, &d), NVML_SUCCESS);
    assert_non_null(d);
    return d;
}

static void sleep_ms(unsigned ms) {
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ------------------------------------------------------------------------ */

static void test_symbols(void **state) {
    (void)state;
    /* non-NVML internals are not exported */
    assert_null(dlsym(lib, "sim_node_new"));
    assert_null(dlsym(lib, "simnvml__ctx"));
    assert_null(dlsym(lib, "simnvml__enter_dev"));
    assert_null(dlsym(lib, "base_mono_ns"));

    void *legacy = dlopen(env_lib("KELVIN_SIM_LEGACY_LIB"), RTLD_NOW | RTLD_LOCAL);
    assert_non_null(legacy);
    static const char *const newer[] = {
        "nvmlDeviceGetMemoryInfo_v2",
        "nvmlDeviceGetCurrentClocksEventReasons",
        "nvmlDeviceGetSupportedClocksEventReasons",
        "nvmlDeviceGetRunningProcessDetailList",
        "nvmlDeviceGetTemperatureV",
        "nvmlDeviceGetProcessesUtilizationInfo",
        "nvmlDeviceGetComputeRunningProcesses_v3",
        "nvmlDeviceGetNumFans",
        "nvmlDeviceGetGpuInstanceProfileInfoV",
        "nvmlGpmQueryDeviceSupport",
        "nvmlGpmSampleAlloc",
        "nvmlGpmSampleFree",
        "nvmlGpmSampleGet",
        "nvmlGpmMigSampleGet",
        "nvmlGpmMetricsGet",
    };
    int missing_in_legacy = 0, total = 0;
#define X_CHECK(name, params)                                                                                \
    do {                                                                                                     \
        int is_newer = 0;                                                                                    \
        for (size_t i = 0; i < sizeof newer / sizeof newer[0]; i++)                                          \
            is_newer |= strcmp(newer[i], #name) == 0;                                                        \
        void *sym = dlsym(legacy, #name);                                                                    \
        if (is_newer && sym) fail_msg("legacy library exports %s", #name);                                   \
        if (!is_newer && !sym) fail_msg("legacy library lacks %s", #name);                                   \
        missing_in_legacy += !sym;                                                                           \
        total++;                                                                                             \
    } while (0);
    NVML_FUNCTIONS(X_CHECK)
#undef X_CHECK
    assert_int_equal(missing_in_legacy, (int)(sizeof newer / sizeof newer[0]));
    assert_true(total > 60);
    assert_non_null(dlsym(legacy, "nvmlErrorString"));

    /* the legacy library looks like an R470 driver */
    env("KELVIN_SIM_GPUS=2", NULL);
    nvmlReturn_t (*init)(void) = (nvmlReturn_t(*)(void))dlsym(legacy, "nvmlInit_v2");
    nvmlReturn_t (*shut)(void) = (nvmlReturn_t(*)(void))dlsym(legacy, "nvmlShutdown");
    nvmlReturn_t (*ver)(char *, unsigned) =
        (nvmlReturn_t(*)(char *, unsigned))dlsym(legacy, "nvmlSystemGetDriverVersion");
    nvmlReturn_t (*hbi)(unsigned, nvmlDevice_t *) =
        (nvmlReturn_t(*)(unsigned, nvmlDevice_t *))dlsym(legacy, "nvmlDeviceGetHandleByIndex_v2");
    nvmlReturn_t (*fv)(nvmlDevice_t, int, nvmlFieldValue_t *) =
        (nvmlReturn_t(*)(nvmlDevice_t, int, nvmlFieldValue_t *))dlsym(legacy, "nvmlDeviceGetFieldValues");
    assert_int_equal(init(), NVML_SUCCESS);
    char v[80];
    assert_int_equal(ver(v, sizeof v), NVML_SUCCESS);
    assert_string_equal(v, "470.256.02");
    nvmlDevice_t d;
    assert_int_equal(hbi(0, &d), NVML_SUCCESS);
    nvmlFieldValue_t f[2] = {{.fieldId = NVML_FI_DEV_POWER_INSTANT}, {.fieldId = NVML_FI_DEV_MEMORY_TEMP}};
    assert_int_equal(fv(d, 2, f), NVML_SUCCESS);
    assert_int_equal(f[0].nvmlReturn, NVML_ERROR_NOT_SUPPORTED);
    assert_int_equal(f[1].nvmlReturn, NVML_SUCCESS);
    assert_int_equal(shut(), NVML_SUCCESS);
    dlclose(legacy);
}

static void test_init_lifecycle(void **state) {
    (void)state;
    env(NULL);
    unsigned n = 99;
    assert_int_equal(N(nvmlDeviceGetCount_v2)(&n), NVML_ERROR_UNINITIALIZED);
    assert_int_equal(n, 99);
    assert_int_equal(N(nvmlShutdown)(), NVML_ERROR_UNINITIALIZED);
    nvmlEventSet_t set;
    assert_int_equal(N(nvmlEventSetCreate)(&set), NVML_ERROR_UNINITIALIZED);
    char buf[80];
    assert_int_equal(N(nvmlSystemGetDriverVersion)(buf, sizeof buf), NVML_ERROR_UNINITIALIZED);

    env("KELVIN_SIM_INIT_ERROR=DRIVER_NOT_LOADED", NULL);
    assert_int_equal(N(nvmlInit_v2)(), NVML_ERROR_DRIVER_NOT_LOADED);
    assert_int_equal(N(nvmlDeviceGetCount_v2)(&n), NVML_ERROR_UNINITIALIZED);
    env("KELVIN_SIM_INIT_ERROR=NVML_ERROR_LIB_RM_VERSION_MISMATCH", NULL);
    assert_int_equal(N(nvmlInitWithFlags)(0), NVML_ERROR_LIB_RM_VERSION_MISMATCH);
    env("KELVIN_SIM_INIT_ERROR=12", NULL);
    assert_int_equal(N(nvmlInit)(), NVML_ERROR_LIBRARY_NOT_FOUND);
    env("KELVIN_SIM_SCENARIO=meltdown", NULL);
    assert_int_equal(N(nvmlInit_v2)(), NVML_ERROR_UNKNOWN);
    env("KELVIN_SIM_GPUS=17", NULL);
    assert_int_equal(N(nvmlInit_v2)(), NVML_ERROR_UNKNOWN);
    env("KELVIN_SIM_MIG=0:5g.50gb", NULL);
    assert_int_equal(N(nvmlInit_v2)(), NVML_ERROR_UNKNOWN);
    env("KELVIN_SIM_PROCESS_STRIDE=28", NULL);
    assert_int_equal(N(nvmlInit_v2)(), NVML_ERROR_UNKNOWN);
    assert_int_equal(N(nvmlInitWithFlags)(0x80), NVML_ERROR_INVALID_ARGUMENT);

    /* reference counted */
    env("KELVIN_SIM_GPUS=3", NULL);
    init_ok();
    assert_int_equal(N(nvmlInitWithFlags)(NVML_INIT_FLAG_NO_GPUS), NVML_SUCCESS);
    assert_int_equal(N(nvmlDeviceGetCount_v2)(&n), NVML_SUCCESS);
    assert_int_equal(n, 3);
    assert_int_equal(N(nvmlDeviceGetCount)(&n), NVML_SUCCESS);
    nvmlDevice_t d = dev(1);
    shutdown_ok();
    assert_int_equal(N(nvmlDeviceGetCount_v2)(&n), NVML_SUCCESS);
    shutdown_ok();
    assert_int_equal(N(nvmlDeviceGetCount_v2)(&n), NVML_ERROR_UNINITIALIZED);
    unsigned t;
    assert_int_equal(N(nvmlDeviceGetTemperature)(d, NVML_TEMPERATURE_GPU, &t), NVML_ERROR_UNINITIALIZED);
    assert_int_equal(N(nvmlShutdown)(), NVML_ERROR_UNINITIALIZED);

    env("KELVIN_SIM_GPUS=0", NULL);
    init_ok();
    assert_int_equal(N(nvmlDeviceGetCount_v2)(&n), NVML_SUCCESS);
    assert_int_equal(n, 0);
    assert_int_equal(N(nvmlDeviceGetHandleByIndex_v2)(0, &d), NVML_ERROR_INVALID_ARGUMENT);
    shutdown_ok();
}

static void test_error_strings(void **state) {
    (void)state;
#define X_STR(name, code)                                                                                    \
    assert_non_null(N(nvmlErrorString)(name));                                                               \
    if ((code) != 999) assert_string_not_equal(N(nvmlErrorString)(name), "Unknown Error");
    NVML_RETURN_MAP(X_STR)
#undef X_STR
    assert_string_equal(N(nvmlErrorString)(NVML_ERROR_GPU_IS_LOST), "GPU is lost");
    assert_string_equal(N(nvmlErrorString)(NVML_ERROR_UNKNOWN), "Unknown Error");
    assert_string_equal(N(nvmlErrorString)((nvmlReturn_t)12345), "Unknown Error");
}

static void test_identity(void **state) {
    (void)state;
    env("KELVIN_SIM_GPUS=8", "KELVIN_SIM_SEED=77", NULL);
    init_ok();
    char buf[NVML_DEVICE_UUID_V2_BUFFER_SIZE], other[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
    nvmlDevice_t d0 = dev(0), d3 = dev(3), found = NULL;
    assert_int_equal(N(nvmlDeviceGetHandleByIndex_v2)(8, &found), NVML_ERROR_INVALID_ARGUMENT);
    assert_int_equal(N(nvmlDeviceGetHandleByIndex_v2)(0, NULL), NVML_ERROR_INVALID_ARGUMENT);
    assert_int_equal(N(nvmlDeviceGetName)(d0, buf, sizeof buf), NVML_SUCCESS);
    assert_string_equal(buf, "NVIDIA H100 80GB HBM3");
    assert_int_equal(N(nvmlDeviceGetName)(d0, buf, 5), NVML_ERROR_INSUFFICIENT_SIZE);
    assert_int_equal(N(nvmlDeviceGetUUID)(d3, buf, sizeof buf), NVML_SUCCESS);
    assert_int_equal(strlen(buf), 40);
    assert_memory_equal(buf, "GPU-", 4);
    assert_int_equal(N(nvmlDeviceGetUUID)(d0, other, sizeof other), NVML_SUCCESS);
    assert_string_not_equal(buf, other);
    assert_int_equal(N(nvmlDeviceGetHandleByUUID)(buf, &found), NVML_SUCCESS);
    assert_ptr_equal(found, d3);
    assert_int_equal(N(nvmlDeviceGetHandleByUUID)("GPU-00000000-0000-0000-0000-000000000000", &found),
                     NVML_ERROR_NOT_FOUND);
    nvmlPciInfo_t pci;
    assert_int_equal(N(nvmlDeviceGetPciInfo_v3)(d3, &pci), NVML_SUCCESS);
    assert_int_equal(strlen(pci.busId), 16);
    assert_int_equal(pci.pciDeviceId, 0x233010DEu);
    assert_int_equal(N(nvmlDeviceGetHandleByPciBusId_v2)(pci.busId, &found), NVML_SUCCESS);
    assert_ptr_equal(found, d3);
    assert_int_equal(N(nvmlDeviceGetHandleByPciBusId_v2)(pci.busIdLegacy, &found), NVML_SUCCESS);
    assert_ptr_equal(found, d3);
    assert_int_equal(N(nvmlDeviceGetHandleByPciBusId_v2)("0000:FF:00.0", &found), NVML_ERROR_NOT_FOUND);
    assert_int_equal(N(nvmlDeviceGetHandleByPciBusId_v2)("not-a-bus-id", &found),
                     NVML_ERROR_INVALID_ARGUMENT);
    assert_int_equal(N(nvmlDeviceGetSerial)(d0, buf, sizeof buf), NVML_SUCCESS);
    assert_memory_equal(buf, "SIM", 3);
    assert_int_equal(N(nvmlDeviceGetVbiosVersion)(d0, buf, sizeof buf), NVML_SUCCESS);
    assert_int_equal(N(nvmlDeviceGetInforomImageVersion)(d0, buf, sizeof buf), NVML_SUCCESS);
    assert_int_equal(N(nvmlDeviceGetInforomVersion)(d0, NVML_INFOROM_ECC, buf, sizeof buf), NVML_SUCCESS);
    assert_int_equal(N(nvmlDeviceGetInforomVersion)(d0, (nvmlInforomObject_t)7, buf, sizeof buf),
                     NVML_ERROR_INVALID_ARGUMENT);
    unsigned minor;
    assert_int_equal(N(nvmlDeviceGetMinorNumber)(d3, &minor), NVML_SUCCESS);
    assert_int_equal(minor, 3);
    nvmlBrandType_t brand;
    assert_int_equal(N(nvmlDeviceGetBrand)(d0, &brand), NVML_SUCCESS);
    assert_int_equal(brand, NVML_BRAND_NVIDIA);
    char ver[80];
    assert_int_equal(N(nvmlSystemGetDriverVersion)(ver, sizeof ver), NVML_SUCCESS);
    assert_string_equal(ver, "550.54.15");
    assert_int_equal(N(nvmlSystemGetDriverVersion)(ver, 9), NVML_ERROR_INSUFFICIENT_SIZE);
    assert_int_equal(N(nvmlSystemGetNVMLVersion)(ver, sizeof ver), NVML_SUCCESS);
    assert_string_equal(ver, "12.550.54.15");

    /* a handle this library did not issue, and NULL outputs */
    struct {
        void *a, *b;
    } fake = {0};
    unsigned t;
    assert_int_equal(N(nvmlDeviceGetTemperature)((nvmlDevice_t)&fake, NVML_TEMPERATURE_GPU, &t),
                     NVML_ERROR_INVALID_ARGUMENT);
    assert_int_equal(N(nvmlDeviceGetTemperature)(NULL, NVML_TEMPERATURE_GPU, &t),
                     NVML_ERROR_INVALID_ARGUMENT);
    assert_int_equal(N(nvmlDeviceGetTemperature)(d0, NVML_TEMPERATURE_GPU, NULL),
                     NVML_ERROR_INVALID_ARGUMENT);
    assert_int_equal(N(nvmlDeviceGetTemperature)(d0, (nvmlTemperatureSensors_t)1, &t),
                     NVML_ERROR_INVALID_ARGUMENT);
    shutdown_ok();
}

static void test_readings(void **state) {
    (void)state;
    env("KELVIN_SIM_GPUS=2", NULL);
    init_ok();
    nvmlDevice_t d = dev(0);
    unsigned t, mw, lim, mn, mx, clk, maxclk;
    assert_int_equal(N(nvmlDeviceGetTemperature)(d, NVML_TEMPERATURE_GPU, &t), NVML_SUCCESS);
    assert_true(t >= 20 && t < 87);
    assert_int_equal(N(nvmlDeviceGetPowerUsage)(d, &mw), NVML_SUCCESS);
    assert_int_equal(N(nvmlDeviceGetEnforcedPowerLimit)(d, &lim), NVML_SUCCESS);
    assert_int_equal(lim, 700000);
    assert_true(mw > 50000 && mw <= lim + lim / 100);
    assert_int_equal(N(nvmlDeviceGetPowerManagementLimitConstraints)(d, &mn, &mx), NVML_SUCCESS);
    assert_true(mn < mx && mx == lim);
    assert_int_equal(N(nvmlDeviceGetClockInfo)(d, NVML_CLOCK_SM, &clk), NVML_SUCCESS);
    assert_int_equal(N(nvmlDeviceGetMaxClockInfo)(d, NVML_CLOCK_SM, &maxclk), NVML_SUCCESS);
    assert_int_equal(maxclk, 1980);
    assert_true(clk > 0 && clk <= maxclk);
    assert_int_equal(N(nvmlDeviceGetClockInfo)(d, NVML_CLOCK_COUNT, &clk), NVML_ERROR_INVALID_ARGUMENT);
    assert_int_equal(N(nvmlDeviceGetClock)(d, NVML_CLOCK_MEM, NVML_CLOCK_ID_CUSTOMER_BOOST_MAX, &clk),
                     NVML_SUCCESS);
    assert_int_equal(clk, 2619);
    unsigned long long e1, e2;
    assert_int_equal(N(nvmlDeviceGetTotalEnergyConsumption)(d, &e1), NVML_SUCCESS);
    sleep_ms(50);
    assert_int_equal(N(nvmlDeviceGetTotalEnergyConsumption)(d, &e2), NVML_SUCCESS);
    assert_true(e2 > e1);
    nvmlUtilization_t u;
    assert_int_equal(N(nvmlDeviceGetUtilizationRates)(d, &u), NVML_SUCCESS);
    assert_true(u.gpu <= 100 && u.memory <= 100);
    unsigned enc, period;
    assert_int_equal(N(nvmlDeviceGetEncoderUtilization)(d, &enc, &period), NVML_SUCCESS);
    assert_true(period > 0);
    unsigned long long reasons, supported;
    assert_int_equal(N(nvmlDeviceGetCurrentClocksEventReasons)(d, &reasons), NVML_SUCCESS);
    assert_int_equal(N(nvmlDeviceGetSupportedClocksEventReasons)(d, &supported), NVML_SUCCESS);
    assert_int_equal(reasons & ~supported, 0);
    nvmlViolationTime_t vt;
    assert_int_equal(N(nvmlDeviceGetViolationStatus)(d, NVML_PERF_POLICY_POWER, &vt), NVML_SUCCESS);
    assert_true(vt.referenceTime > 0);
    assert_int_equal(N(nvmlDeviceGetViolationStatus)(d, NVML_PERF_POLICY_TOTAL_APP_CLOCKS, &vt),
                     NVML_ERROR_NOT_SUPPORTED);
    assert_int_equal(N(nvmlDeviceGetViolationStatus)(d, (nvmlPerfPolicyType_t)99, &vt),
                     NVML_ERROR_INVALID_ARGUMENT);
    nvmlEnableState_t cur, pend;
    assert_int_equal(N(nvmlDeviceGetEccMode)(d, &cur, &pend), NVML_SUCCESS);
    assert_int_equal(cur, NVML_FEATURE_ENABLED);
    unsigned long long ecc;
    assert_int_equal(
        N(nvmlDeviceGetTotalEccErrors)(d, NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC, &ecc),
        NVML_SUCCESS);
    assert_int_equal(ecc, 0);
    nvmlEnableState_t st;
    assert_int_equal(N(nvmlDeviceGetNvLinkState)(d, 17, &st), NVML_SUCCESS);
    assert_int_equal(N(nvmlDeviceGetNvLinkState)(d, 18, &st), NVML_ERROR_NOT_SUPPORTED);
    assert_int_equal(N(nvmlDeviceGetNvLinkState)(d, 36, &st), NVML_ERROR_INVALID_ARGUMENT);
    unsigned fans, speed;
    assert_int_equal(N(nvmlDeviceGetNumFans)(d, &fans), NVML_SUCCESS);
    assert_int_equal(fans, 0);
    assert_int_equal(N(nvmlDeviceGetFanSpeed_v2)(d, 0, &speed), NVML_ERROR_NOT_SUPPORTED);
    unsigned kbps;
    assert_int_equal(N(nvmlDeviceGetPcieThroughput)(d, NVML_PCIE_UTIL_RX_BYTES, &kbps), NVML_SUCCESS);
    nvmlGridLicensableFeatures_t grid;
    assert_int_equal(N(nvmlDeviceGetGridLicensableFeatures_v4)(d, &grid), NVML_SUCCESS);
    assert_int_equal(grid.isGridLicenseSupported, 0);
    shutdown_ok();

    env("KELVIN_SIM_GPUS=1", "KELVIN_SIM_MODEL=rtx6000ada", NULL); /* the board with a fan */
    init_ok();
    d = dev(0);
    assert_int_equal(N(nvmlDeviceGetNumFans)(d, &fans), NVML_SUCCESS);
    assert_int_equal(fans, 1);
    assert_int_equal(N(nvmlDeviceGetFanSpeed_v2)(d, 0, &speed), NVML_SUCCESS);
    assert_true(speed >= 30 && speed <= 100);
    assert_int_equal(N(nvmlDeviceGetFanSpeed_v2)(d, 1, &speed), NVML_ERROR_INVALID_ARGUMENT);
    assert_int_equal(N(nvmlDeviceGetFanSpeed)(d, &speed), NVML_SUCCESS);
    shutdown_ok();
}

static void test_struct_versions(void **state) {
    (void)state;
    env("KELVIN_SIM_GPUS=1", "KELVIN_SIM_MIG=0:", NULL);
    init_ok();
    nvmlDevice_t d = dev(0);
    nvmlMemory_v2_t m2 = {.version = 2}; /* nvtop's literal: not the encoded version */
    assert_int_equal(N(nvmlDeviceGetMemoryInfo_v2)(d, &m2), NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
    m2.version = nvmlMemory_v2;
    assert_int_equal(N(nvmlDeviceGetMemoryInfo_v2)(d, &m2), NVML_SUCCESS);
    assert_int_equal(m2.total, 81559ULL << 20);
    assert_true(m2.reserved > 0);
    assert_int_equal(m2.used + m2.free + m2.reserved, m2.total);
    nvmlMemory_t m1;
    assert_int_equal(N(nvmlDeviceGetMemoryInfo)(d, &m1), NVML_SUCCESS);
    assert_true(m1.used >= m2.reserved); /* v1 counts the reservation as used */
    assert_int_equal(m1.used + m1.free, m1.total);
    nvmlTemperature_t tv = {.version = 1, .sensorType = NVML_TEMPERATURE_GPU};
    assert_int_equal(N(nvmlDeviceGetTemperatureV)(d, &tv), NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
    tv.version = nvmlTemperature_v1;
    assert_int_equal(N(nvmlDeviceGetTemperatureV)(d, &tv), NVML_SUCCESS);
    assert_true(tv.temperature > 10 && tv.temperature < 100);
    nvmlProcessDetailList_t pl = {.version = nvmlProcessDetailList_v1 + 1};
    assert_int_equal(N(nvmlDeviceGetRunningProcessDetailList)(d, &pl), NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
    nvmlProcessesUtilizationInfo_t pu = {.version = 0x02000018};
    assert_int_equal(N(nvmlDeviceGetProcessesUtilizationInfo)(d, &pu), NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
    nvmlGpuInstanceProfileInfo_v2_t gp = {.version = 0x01000098};
    assert_int_equal(N(nvmlDeviceGetGpuInstanceProfileInfoV)(d, 0, &gp),
                     NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
    nvmlGpmSupport_t gs = {.version = 2};
    assert_int_equal(N(nvmlGpmQueryDeviceSupport)(d, &gs), NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
    shutdown_ok();
}

static void test_processes(void **state) {
    (void)state;
    env("KELVIN_SIM_GPUS=3", "KELVIN_SIM_PIDS=111,222,333", "KELVIN_SIM_MIG=2:3g.40gb,2g.20gb,1g.10gb", NULL);
    init_ok();
    nvmlDevice_t d0 = dev(0), d1 = dev(1), d2 = dev(2);
    unsigned n = 0;
    assert_int_equal(N(nvmlDeviceGetComputeRunningProcesses_v3)(d0, &n, NULL), NVML_ERROR_INSUFFICIENT_SIZE);
    assert_int_equal(n, 1);
    nvmlProcessInfo_t infos[8];
    n = 8;
    assert_int_equal(N(nvmlDeviceGetComputeRunningProcesses_v3)(d0, &n, infos), NVML_SUCCESS);
    assert_int_equal(n, 1);
    assert_int_equal(infos[0].pid, 111);
    assert_true(infos[0].usedGpuMemory > (1ULL << 30));
    assert_int_equal(infos[0].gpuInstanceId, 0xFFFFFFFFu);
    n = 8;
    assert_int_equal(N(nvmlDeviceGetComputeRunningProcesses_v2)(d1, &n, infos), NVML_SUCCESS);
    assert_int_equal(infos[0].pid, 222);
    n = 2; /* too small for the MIG GPU's three */
    assert_int_equal(N(nvmlDeviceGetComputeRunningProcesses_v3)(d2, &n, infos), NVML_ERROR_INSUFFICIENT_SIZE);
    assert_int_equal(n, 3);
    n = 3;
    assert_int_equal(N(nvmlDeviceGetComputeRunningProcesses_v3)(d2, &n, infos), NVML_SUCCESS);
    unsigned gis[3];
    for (unsigned i = 0; i < 3; i++) {
        assert_int_not_equal(infos[i].gpuInstanceId, 0xFFFFFFFFu);
        assert_int_equal(infos[i].computeInstanceId, 0);
        gis[i] = infos[i].gpuInstanceId;
    }
    nvmlProcessInfo_v1_t v1[4];
    n = 4;
    assert_int_equal(N(nvmlDeviceGetComputeRunningProcesses)(d2, &n, v1), NVML_SUCCESS);
    assert_int_equal(n, 3);
    assert_int_equal(v1[1].pid, infos[1].pid); /* 16-byte entries */
    /* a MIG handle lists only its own process */
    nvmlDevice_t mig;
    assert_int_equal(N(nvmlDeviceGetMigDeviceHandleByIndex)(d2, 1, &mig), NVML_SUCCESS);
    n = 8;
    assert_int_equal(N(nvmlDeviceGetComputeRunningProcesses_v3)(mig, &n, infos), NVML_SUCCESS);
    assert_int_equal(n, 1);
    assert_int_equal(infos[0].gpuInstanceId, gis[1]);
    /* detail list */
    nvmlProcessDetail_v1_t det[4];
    nvmlProcessDetailList_t pl = {.version = nvmlProcessDetailList_v1, .mode = NVML_PROCESS_MODE_COMPUTE};
    assert_int_equal(N(nvmlDeviceGetRunningProcessDetailList)(d2, &pl), NVML_ERROR_INSUFFICIENT_SIZE);
    assert_int_equal(pl.numProcArrayEntries, 3);
    pl.procArray = det;
    assert_int_equal(N(nvmlDeviceGetRunningProcessDetailList)(d2, &pl), NVML_SUCCESS);
    assert_int_equal(det[2].gpuInstanceId, gis[2]);
    pl.mode = NVML_PROCESS_MODE_GRAPHICS;
    assert_int_equal(N(nvmlDeviceGetRunningProcessDetailList)(d2, &pl), NVML_SUCCESS);
    assert_int_equal(pl.numProcArrayEntries, 0);
    /* per-process utilisation: not under MIG; NULL buffer asks for the count */
    unsigned cnt = 0;
    assert_int_equal(N(nvmlDeviceGetProcessUtilization)(d2, NULL, &cnt, 0), NVML_ERROR_NOT_SUPPORTED);
    assert_int_equal(N(nvmlDeviceGetProcessUtilization)(d0, NULL, &cnt, 0), NVML_ERROR_INSUFFICIENT_SIZE);
    assert_int_equal(cnt, 1);
    nvmlProcessUtilizationSample_t smp[2];
    cnt = 2;
    assert_int_equal(N(nvmlDeviceGetProcessUtilization)(d0, smp, &cnt, 0), NVML_SUCCESS);
    assert_int_equal(cnt, 1);
    assert_int_equal(smp[0].pid, 111);
    assert_true(smp[0].smUtil <= 100 && smp[0].timeStamp > 0);
    cnt = 2;
    assert_int_equal(N(nvmlDeviceGetProcessUtilization)(d0, smp, &cnt, smp[0].timeStamp),
                     NVML_ERROR_NOT_FOUND);
    nvmlProcessUtilizationInfo_v1_t pui[2];
    nvmlProcessesUtilizationInfo_t pu = {.version = nvmlProcessesUtilizationInfo_v1};
    assert_int_equal(N(nvmlDeviceGetProcessesUtilizationInfo)(d1, &pu), NVML_ERROR_INSUFFICIENT_SIZE);
    assert_int_equal(pu.processSamplesCount, 1);
    pu.procUtilArray = pui;
    assert_int_equal(N(nvmlDeviceGetProcessesUtilizationInfo)(d1, &pu), NVML_SUCCESS);
    assert_int_equal(pui[0].pid, 222);
    shutdown_ok();

    /* default pid: the caller's own */
    env("KELVIN_SIM_GPUS=1", NULL);
    init_ok();
    n = 8;
    assert_int_equal(N(nvmlDeviceGetComputeRunningProcesses_v3)(dev(0), &n, infos), NVML_SUCCESS);
    assert_int_equal(infos[0].pid, (unsigned)getpid());
    shutdown_ok();
}

/* The R535 bug: _v3 writes 32-byte entries into a 24-byte-entry array. */
static void test_process_stride(void **state) {
    (void)state;
    env("KELVIN_SIM_GPUS=1", "KELVIN_SIM_PIDS=4242,4343,4444", "KELVIN_SIM_PROCESS_STRIDE=32",
        "KELVIN_SIM_MIG=0:3g.40gb,3g.40gb", NULL);
    init_ok();
    unsigned char buf[4 * 32];
    memset(buf, 0xA5, sizeof buf);
    unsigned n = 4;
    assert_int_equal(N(nvmlDeviceGetComputeRunningProcesses_v3)(dev(0), &n, (nvmlProcessInfo_t *)buf),
                     NVML_SUCCESS);
    assert_int_equal(n, 2);
    unsigned pid0, pid1_at24, pid1_at32;
    memcpy(&pid0, buf, 4);
    memcpy(&pid1_at24, buf + 24, 4);
    memcpy(&pid1_at32, buf + 32, 4);
    assert_int_equal(pid0, 4242);
    assert_int_equal(pid1_at32, 4343);
    assert_int_not_equal(pid1_at24, 4343);
    assert_int_equal(buf[64], 0xA5); /* nothing past the second entry */
    /* _v2 keeps 24-byte entries */
    memset(buf, 0xA5, sizeof buf);
    n = 4;
    assert_int_equal(N(nvmlDeviceGetComputeRunningProcesses_v2)(dev(0), &n, (nvmlProcessInfo_v2_t *)buf),
                     NVML_SUCCESS);
    memcpy(&pid1_at24, buf + 24, 4);
    assert_int_equal(pid1_at24, 4343);
    shutdown_ok();
}

static nvmlFieldValue_t *field(nvmlFieldValue_t *v, int n, unsigned id, unsigned scope) {
    for (int i = 0; i < n; i++)
        if (v[i].fieldId == id && v[i].scopeId == scope) return &v[i];
    fail_msg("field %u not in the request", id);
    return NULL;
}

static void test_field_values(void **state) {
    (void)state;
    static const unsigned ids[] = {
        NVML_FI_DEV_MEMORY_TEMP,
        NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION,
        NVML_FI_DEV_ECC_SBE_VOL_TOTAL,
        NVML_FI_DEV_ECC_DBE_AGG_TOTAL,
        NVML_FI_DEV_PCIE_REPLAY_COUNTER,
        NVML_FI_DEV_PERF_POLICY_THERMAL,
        NVML_FI_DEV_REMAPPED_COR,
        NVML_FI_DEV_RETIRED_PENDING,
        NVML_FI_DEV_NVLINK_LINK_COUNT,
        NVML_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL,
        NVML_FI_DEV_PCIE_COUNT_TX_BYTES,
        NVML_FI_DEV_POWER_INSTANT,
        9999,
    };
    enum { NF = sizeof ids / sizeof ids[0] };
    nvmlFieldValue_t v[NF + 2];

    env("KELVIN_SIM_GPUS=2", NULL); /* H100, driver 550 */
    init_ok();
    memset(v, 0, sizeof v);
    for (int i = 0; i < NF; i++) v[i].fieldId = ids[i];
    v[NF] = (nvmlFieldValue_t){.fieldId = NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX,
                               .scopeId = NVML_FI_SCOPE_ALL_LINKS};
    v[NF + 1] = (nvmlFieldValue_t){.fieldId = NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX, .scopeId = 30};
    sleep_ms(50); /* let some NVLink traffic accumulate */
    assert_int_equal(N(nvmlDeviceGetFieldValues)(dev(0), NF + 2, v), NVML_SUCCESS);
    nvmlFieldValue_t *f = field(v, NF + 2, NVML_FI_DEV_MEMORY_TEMP, 0);
    assert_int_equal(f->nvmlReturn, NVML_SUCCESS);
    assert_int_equal(f->valueType, NVML_VALUE_TYPE_UNSIGNED_INT);
    assert_true(f->value.uiVal > 20 && f->value.uiVal < 95);
    assert_true(f->timestamp > 1600000000000000LL);
    f = field(v, NF + 2, NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION, 0);
    assert_int_equal(f->nvmlReturn, NVML_SUCCESS);
    assert_int_equal(f->valueType, NVML_VALUE_TYPE_UNSIGNED_LONG_LONG);
    assert_int_equal(field(v, NF + 2, NVML_FI_DEV_ECC_SBE_VOL_TOTAL, 0)->nvmlReturn, NVML_SUCCESS);
    assert_int_equal(field(v, NF + 2, NVML_FI_DEV_REMAPPED_COR, 0)->nvmlReturn, NVML_SUCCESS);
    f = field(v, NF + 2, NVML_FI_DEV_NVLINK_LINK_COUNT, 0);
    assert_int_equal(f->value.uiVal, 18);
    assert_int_equal(field(v, NF + 2, NVML_FI_DEV_PCIE_COUNT_TX_BYTES, 0)->nvmlReturn,
                     NVML_ERROR_NOT_SUPPORTED);
    assert_int_equal(field(v, NF + 2, NVML_FI_DEV_POWER_INSTANT, 0)->nvmlReturn, NVML_SUCCESS);
    assert_int_equal(field(v, NF + 2, 9999, 0)->nvmlReturn, NVML_ERROR_NOT_SUPPORTED);
    f = field(v, NF + 2, NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX, NVML_FI_SCOPE_ALL_LINKS);
    assert_int_equal(f->nvmlReturn, NVML_SUCCESS);
    assert_true(f->value.ullVal > 0);
    assert_int_equal(field(v, NF + 2, NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX, 30)->nvmlReturn,
                     NVML_ERROR_INVALID_ARGUMENT);
    assert_int_equal(N(nvmlDeviceGetFieldValues)(dev(0), 0, v), NVML_ERROR_INVALID_ARGUMENT);
    assert_int_equal(N(nvmlDeviceGetFieldValues)(dev(0), 1, NULL), NVML_ERROR_INVALID_ARGUMENT);
    shutdown_ok();

    env("KELVIN_SIM_GPUS=1", "KELVIN_SIM_MODEL=l4", "KELVIN_SIM_DRIVER=560.35.03", NULL);
    init_ok();
    memset(v, 0, sizeof v);
    for (int i = 0; i < NF; i++) v[i].fieldId = ids[i];
    assert_int_equal(N(nvmlDeviceGetFieldValues)(dev(0), NF, v), NVML_SUCCESS);
    assert_int_equal(field(v, NF, NVML_FI_DEV_MEMORY_TEMP, 0)->nvmlReturn, NVML_ERROR_NOT_SUPPORTED);
    assert_int_equal(field(v, NF, NVML_FI_DEV_MEMORY_TEMP, 0)->value.ullVal, 0);
    assert_int_equal(field(v, NF, NVML_FI_DEV_NVLINK_LINK_COUNT, 0)->nvmlReturn, NVML_ERROR_NOT_SUPPORTED);
    assert_int_equal(field(v, NF, NVML_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL, 0)->nvmlReturn,
                     NVML_ERROR_NOT_SUPPORTED);
    assert_int_equal(field(v, NF, NVML_FI_DEV_PCIE_COUNT_TX_BYTES, 0)->nvmlReturn, NVML_SUCCESS);
    assert_int_equal(field(v, NF, NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION, 0)->nvmlReturn, NVML_SUCCESS);
    unsigned kb;
    nvmlEnableState_t st;
    assert_int_equal(N(nvmlDeviceGetNvLinkState)(dev(0), 0, &st), NVML_ERROR_NOT_SUPPORTED);
    unsigned cur, pend;
    assert_int_equal(N(nvmlDeviceGetMigMode)(dev(0), &cur, &pend), NVML_ERROR_NOT_SUPPORTED);
    (void)kb;
    shutdown_ok();

    env("KELVIN_SIM_GPUS=1", "KELVIN_SIM_DRIVER=545.23.08", NULL); /* the R545 MEMORY_TEMP mislabel */
    init_ok();
    nvmlFieldValue_t mt = {.fieldId = NVML_FI_DEV_MEMORY_TEMP};
    assert_int_equal(N(nvmlDeviceGetFieldValues)(dev(0), 1, &mt), NVML_SUCCESS);
    assert_int_equal(mt.nvmlReturn, NVML_SUCCESS);
    assert_int_equal(mt.valueType, NVML_VALUE_TYPE_DOUBLE);
    assert_true(mt.value.uiVal > 20 && mt.value.uiVal < 100);
    shutdown_ok();
}

static int allowed_xid(unsigned long long x) {
    static const unsigned xs[] = {13, 31, 43, 48, 63, 64, 74, 79};
    for (size_t i = 0; i < sizeof xs / sizeof xs[0]; i++)
        if (x == xs[i]) return 1;
    return 0;
}

static void test_events(void **state) {
    (void)state;
    /* storm bursts every 240 model s, first at onset: at x120 that is a
     * burst every 2 s of wall time, the first 0.3 s after init */
    env("KELVIN_SIM_GPUS=2", "KELVIN_SIM_SCENARIO=xid-storm", "KELVIN_SIM_TIME_SCALE=120",
        "KELVIN_SIM_ONSET=0.3", "KELVIN_SIM_MIG=0:3g.40gb,2g.20gb,1g.10gb", "KELVIN_SIM_SEED=5", NULL);
    init_ok();
    nvmlDevice_t d0 = dev(0), d1 = dev(1);
    unsigned long long sup;
    assert_int_equal(N(nvmlDeviceGetSupportedEventTypes)(d0, &sup), NVML_SUCCESS);
    assert_true(sup & nvmlEventTypeXidCriticalError);
    nvmlEventSet_t set, other;
    assert_int_equal(N(nvmlEventSetCreate)(&set), NVML_SUCCESS);
    assert_int_equal(N(nvmlEventSetCreate)(&other), NVML_SUCCESS);
    nvmlEventData_t ev;
    assert_int_equal(N(nvmlEventSetWait_v2)(set, &ev, 0), NVML_ERROR_TIMEOUT);
    /* all-or-nothing: an unsupported bit registers nothing */
    assert_int_equal(N(nvmlDeviceRegisterEvents)(d0, nvmlEventTypeXidCriticalError | 0x8000ULL, set),
                     NVML_ERROR_NOT_SUPPORTED);
    assert_int_equal(N(nvmlDeviceRegisterEvents)(d1, nvmlEventTypeXidCriticalError, set), NVML_SUCCESS);
    struct {
        void *p;
    } bogus;
    assert_int_equal(N(nvmlDeviceRegisterEvents)(d0, nvmlEventTypeXidCriticalError, (nvmlEventSet_t)&bogus),
                     NVML_ERROR_INVALID_ARGUMENT);
    /* GPU 1 is healthy and GPU 0 is not registered in `set` */
    double t0 = now_s();
    assert_int_equal(N(nvmlEventSetWait_v2)(set, &ev, 600), NVML_ERROR_TIMEOUT);
    assert_true(now_s() - t0 >= 0.55);
    assert_int_equal(
        N(nvmlDeviceRegisterEvents)(d0, sup & (nvmlEventTypeXidCriticalError | nvmlEventTypePState), set),
        NVML_SUCCESS);
    assert_int_equal(N(nvmlDeviceRegisterEvents)(d0, nvmlEventTypeXidCriticalError, other), NVML_SUCCESS);
    unsigned gis[3];
    for (unsigned k = 0; k < 3; k++) {
        nvmlDevice_t mig;
        assert_int_equal(N(nvmlDeviceGetMigDeviceHandleByIndex)(d0, k, &mig), NVML_SUCCESS);
        assert_int_equal(N(nvmlDeviceGetGpuInstanceId)(mig, &gis[k]), NVML_SUCCESS);
    }
    int got = 0, with_gi = 0;
    t0 = now_s();
    while (now_s() - t0 < 6.0 && got < 12) {
        nvmlReturn_t r = N(nvmlEventSetWait_v2)(set, &ev, 500);
        if (r == NVML_ERROR_TIMEOUT) continue;
        assert_int_equal(r, NVML_SUCCESS);
        assert_ptr_equal(ev.device, d0);
        assert_int_equal(ev.eventType, nvmlEventTypeXidCriticalError);
        assert_true(allowed_xid(ev.eventData));
        if (ev.gpuInstanceId != NVML_EVENT_INSTANCE_ID_ALL) {
            assert_true(ev.gpuInstanceId == gis[0] || ev.gpuInstanceId == gis[1] ||
                        ev.gpuInstanceId == gis[2]);
            assert_int_equal(ev.computeInstanceId, 0);
            assert_true(ev.eventData == 13 || ev.eventData == 31 || ev.eventData == 43);
            with_gi++;
        }
        got++;
    }
    assert_true(got >= 5);
    assert_true(with_gi >= 1);
    /* a second set sees the same events independently; v1 writes 24 bytes */
    nvmlEventData_t v1;
    memset(&v1, 0x5A, sizeof v1);
    assert_int_equal(N(nvmlEventSetWait)(other, &v1, 3000), NVML_SUCCESS);
    assert_true(allowed_xid(v1.eventData));
    assert_int_equal(v1.gpuInstanceId, 0x5A5A5A5Au);
    assert_int_equal(N(nvmlEventSetFree)(other), NVML_SUCCESS);
    assert_int_equal(N(nvmlEventSetFree)(other), NVML_ERROR_INVALID_ARGUMENT);
    assert_int_equal(N(nvmlEventSetFree)(set), NVML_SUCCESS);
    nvmlEventSet_t leaked;
    assert_int_equal(N(nvmlEventSetCreate)(&leaked), NVML_SUCCESS); /* freed by shutdown */
    shutdown_ok();
}

static void test_gpm(void **state) {
    (void)state;
    env("KELVIN_SIM_GPUS=2", "KELVIN_SIM_MIG=1:3g.40gb,3g.40gb", NULL);
    init_ok();
    nvmlDevice_t d = dev(0);
    nvmlGpmSupport_t sup = {.version = NVML_GPM_SUPPORT_VERSION};
    assert_int_equal(N(nvmlGpmQueryDeviceSupport)(d, &sup), NVML_SUCCESS);
    assert_int_equal(sup.isSupportedDevice, 1);
    nvmlGpmSample_t a, b;
    assert_int_equal(N(nvmlGpmSampleAlloc)(&a), NVML_SUCCESS);
    assert_int_equal(N(nvmlGpmSampleAlloc)(&b), NVML_SUCCESS);
    assert_int_equal(N(nvmlGpmSampleGet)(d, a), NVML_SUCCESS);
    sleep_ms(150);
    assert_int_equal(N(nvmlGpmSampleGet)(d, b), NVML_SUCCESS);
    static nvmlGpmMetricsGet_t mgs;
    nvmlGpmMetricsGet_t *mg = &mgs;
    memset(mg, 0, sizeof *mg);
    static const unsigned ids[] = {NVML_GPM_METRIC_SM_UTIL,
                                   NVML_GPM_METRIC_ANY_TENSOR_UTIL,
                                   NVML_GPM_METRIC_DRAM_BW_UTIL,
                                   NVML_GPM_METRIC_FP16_UTIL,
                                   NVML_GPM_METRIC_PCIE_RX_PER_SEC,
                                   NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC,
                                   NVML_GPM_METRIC_NVLINK_L0_RX_PER_SEC + 2 * 17,
                                   NVML_GPM_METRIC_NVLINK_L0_RX_PER_SEC + 2 * 18,
                                   NVML_GPM_METRIC_NVDEC_0_UTIL,
                                   999};
    enum { NM = sizeof ids / sizeof ids[0] };
    mg->version = NVML_GPM_METRICS_GET_VERSION;
    mg->numMetrics = NM;
    mg->sample1 = a;
    mg->sample2 = b;
    for (unsigned i = 0; i < NM; i++) mg->metrics[i].metricId = ids[i];
    mg->metrics[NM].metricId = NVML_GPM_METRIC_SM_UTIL; /* beyond numMetrics: untouched */
    mg->metrics[NM].value = -7.0;
    assert_int_equal(N(nvmlGpmMetricsGet)(mg), NVML_SUCCESS);
    for (unsigned i = 0; i < 4; i++) {
        assert_int_equal(mg->metrics[i].nvmlReturn, NVML_SUCCESS);
        assert_true(mg->metrics[i].value >= 0.0 && mg->metrics[i].value <= 100.0);
        assert_non_null(mg->metrics[i].metricInfo.shortName);
    }
    assert_int_equal(mg->metrics[4].nvmlReturn, NVML_SUCCESS);
    assert_true(mg->metrics[4].value > 0); /* MiB/s */
    assert_int_equal(mg->metrics[5].nvmlReturn, NVML_SUCCESS);
    assert_int_equal(mg->metrics[6].nvmlReturn, NVML_SUCCESS);             /* link 17 exists */
    assert_int_equal(mg->metrics[7].nvmlReturn, NVML_ERROR_NOT_SUPPORTED); /* link 18 does not */
    assert_int_equal(mg->metrics[8].nvmlReturn, NVML_SUCCESS);
    assert_int_equal(mg->metrics[9].nvmlReturn, NVML_ERROR_NOT_SUPPORTED);
    assert_true(mg->metrics[NM].value == -7.0);
    mg->sample1 = b; /* older second sample */
    mg->sample2 = a;
    assert_int_equal(N(nvmlGpmMetricsGet)(mg), NVML_ERROR_INVALID_ARGUMENT);
    mg->sample1 = a;
    mg->sample2 = b;
    mg->version = 2;
    assert_int_equal(N(nvmlGpmMetricsGet)(mg), NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
    mg->version = NVML_GPM_METRICS_GET_VERSION;
    mg->numMetrics = 0;
    assert_int_equal(N(nvmlGpmMetricsGet)(mg), NVML_ERROR_INVALID_ARGUMENT);
    mg->numMetrics = NVML_GPM_METRIC_MAX + 1;
    assert_int_equal(N(nvmlGpmMetricsGet)(mg), NVML_ERROR_INVALID_ARGUMENT);

    /* per GPU instance on the MIG GPU; bus traffic is per GPU only */
    nvmlDevice_t d1 = dev(1), mig;
    unsigned gi;
    assert_int_equal(N(nvmlDeviceGetMigDeviceHandleByIndex)(d1, 1, &mig), NVML_SUCCESS);
    assert_int_equal(N(nvmlDeviceGetGpuInstanceId)(mig, &gi), NVML_SUCCESS);
    assert_int_equal(N(nvmlGpmMigSampleGet)(d1, gi, a), NVML_SUCCESS);
    sleep_ms(120);
    assert_int_equal(N(nvmlGpmMigSampleGet)(d1, gi, b), NVML_SUCCESS);
    assert_int_equal(N(nvmlGpmMigSampleGet)(d1, 99, b), NVML_ERROR_NOT_FOUND);
    mg->numMetrics = NM;
    assert_int_equal(N(nvmlGpmMetricsGet)(mg), NVML_SUCCESS);
    assert_int_equal(mg->metrics[0].nvmlReturn, NVML_SUCCESS);
    assert_int_equal(mg->metrics[4].nvmlReturn, NVML_ERROR_NOT_SUPPORTED);
    assert_int_equal(N(nvmlGpmMigSampleGet)(d, 1, b),
                     NVML_ERROR_INVALID_STATE); /* GPU 0 is not in MIG mode */
    assert_int_equal(N(nvmlGpmSampleGet)(d, b), NVML_SUCCESS);
    assert_int_equal(N(nvmlGpmMetricsGet)(mg),
                     NVML_ERROR_INVALID_ARGUMENT); /* samples of different devices */

    assert_int_equal(N(nvmlGpmSampleFree)(a), NVML_SUCCESS);
    assert_int_equal(N(nvmlGpmSampleFree)(a), NVML_ERROR_INVALID_ARGUMENT);
    assert_int_equal(N(nvmlGpmSampleFree)(b), NVML_SUCCESS);
    shutdown_ok();

    env("KELVIN_SIM_GPUS=1", "KELVIN_SIM_MODEL=a100", NULL); /* pre-Hopper: no GPM */
    init_ok();
    assert_int_equal(N(nvmlGpmQueryDeviceSupport)(dev(0), &sup), NVML_SUCCESS);
    assert_int_equal(sup.isSupportedDevice, 0);
    assert_int_equal(N(nvmlGpmSampleAlloc)(&a), NVML_SUCCESS);
    assert_int_equal(N(nvmlGpmSampleGet)(dev(0), a), NVML_ERROR_NOT_SUPPORTED);
    shutdown_ok(); /* frees the sample */
}

static void test_mig(void **state) {
    (void)state;
    env("KELVIN_SIM_GPUS=3", "KELVIN_SIM_MIG=0:3g.40gb,2g.20gb,1g.10gb;1:", NULL);
    init_ok();
    nvmlDevice_t d0 = dev(0), d1 = dev(1), d2 = dev(2), mig[3], x;
    unsigned cur, pend, maxc;
    assert_int_equal(N(nvmlDeviceGetMigMode)(d0, &cur, &pend), NVML_SUCCESS);
    assert_int_equal(cur, NVML_DEVICE_MIG_ENABLE);
    assert_int_equal(N(nvmlDeviceGetMigMode)(d2, &cur, &pend), NVML_SUCCESS);
    assert_int_equal(cur, NVML_DEVICE_MIG_DISABLE);
    assert_int_equal(N(nvmlDeviceGetMaxMigDeviceCount)(d0, &maxc), NVML_SUCCESS);
    assert_int_equal(maxc, 7);
    static const char *const names[] = {"NVIDIA H100 80GB HBM3 MIG 3g.40gb",
                                        "NVIDIA H100 80GB HBM3 MIG 2g.20gb",
                                        "NVIDIA H100 80GB HBM3 MIG 1g.10gb"};
    unsigned gi[3];
    for (unsigned k = 0; k < 3; k++) {
        assert_int_equal(N(nvmlDeviceGetMigDeviceHandleByIndex)(d0, k, &mig[k]), NVML_SUCCESS);
        char buf[96];
        assert_int_equal(N(nvmlDeviceGetName)(mig[k], buf, sizeof buf), NVML_SUCCESS);
        assert_string_equal(buf, names[k]);
        assert_int_equal(N(nvmlDeviceGetUUID)(mig[k], buf, sizeof buf), NVML_SUCCESS);
        assert_memory_equal(buf, "MIG-", 4);
        assert_int_equal(N(nvmlDeviceGetHandleByUUID)(buf, &x), NVML_SUCCESS);
        assert_ptr_equal(x, mig[k]);
        unsigned is;
        assert_int_equal(N(nvmlDeviceIsMigDeviceHandle)(mig[k], &is), NVML_SUCCESS);
        assert_int_equal(is, 1);
        assert_int_equal(N(nvmlDeviceGetDeviceHandleFromMigDeviceHandle)(mig[k], &x), NVML_SUCCESS);
        assert_ptr_equal(x, d0);
        unsigned ci;
        assert_int_equal(N(nvmlDeviceGetGpuInstanceId)(mig[k], &gi[k]), NVML_SUCCESS);
        assert_int_equal(N(nvmlDeviceGetComputeInstanceId)(mig[k], &ci), NVML_SUCCESS);
        assert_int_equal(ci, 0);
        for (unsigned j = 0; j < k; j++) assert_int_not_equal(gi[j], gi[k]);
        unsigned t;
        assert_int_equal(N(nvmlDeviceGetTemperature)(mig[k], NVML_TEMPERATURE_GPU, &t),
                         NVML_ERROR_NOT_SUPPORTED);
    }
    assert_int_equal(N(nvmlDeviceGetMigDeviceHandleByIndex)(d0, 3, &x), NVML_ERROR_NOT_FOUND);
    assert_int_equal(N(nvmlDeviceGetMigDeviceHandleByIndex)(d0, 7, &x), NVML_ERROR_INVALID_ARGUMENT);
    assert_int_equal(N(nvmlDeviceGetMigDeviceHandleByIndex)(d1, 0, &x), NVML_ERROR_NOT_FOUND);
    assert_int_equal(N(nvmlDeviceGetMigDeviceHandleByIndex)(d2, 0, &x), NVML_ERROR_NOT_FOUND);
    assert_int_equal(N(nvmlDeviceGetDeviceHandleFromMigDeviceHandle)(d0, &x), NVML_ERROR_INVALID_ARGUMENT);
    unsigned id;
    assert_int_equal(N(nvmlDeviceGetGpuInstanceId)(d0, &id), NVML_ERROR_NOT_SUPPORTED);
    /* memory per MIG device; utilisation not under MIG */
    nvmlMemory_v2_t m = {.version = nvmlMemory_v2};
    assert_int_equal(N(nvmlDeviceGetMemoryInfo_v2)(mig[0], &m), NVML_SUCCESS);
    assert_int_equal(m.total, 40320ULL << 20);
    assert_true(m.used > 0 && m.used < m.total);
    nvmlUtilization_t u;
    unsigned pct, per;
    assert_int_equal(N(nvmlDeviceGetUtilizationRates)(d0, &u), NVML_ERROR_NOT_SUPPORTED);
    assert_int_equal(N(nvmlDeviceGetUtilizationRates)(d1, &u), NVML_ERROR_NOT_SUPPORTED);
    assert_int_equal(N(nvmlDeviceGetUtilizationRates)(mig[0], &u), NVML_ERROR_NOT_SUPPORTED);
    assert_int_equal(N(nvmlDeviceGetDecoderUtilization)(d0, &pct, &per), NVML_ERROR_NOT_SUPPORTED);
    assert_int_equal(N(nvmlDeviceGetEncoderUtilization)(d0, &pct, &per), NVML_ERROR_NOT_SUPPORTED);
    assert_int_equal(N(nvmlDeviceGetUtilizationRates)(d2, &u), NVML_SUCCESS);
    unsigned c1, c2, c3, c4;
    assert_int_equal(N(nvmlDeviceGetRemappedRows)(d0, &c1, &c2, &c3, &c4), NVML_ERROR_NOT_SUPPORTED);
    assert_int_equal(N(nvmlDeviceGetRemappedRows)(d2, &c1, &c2, &c3, &c4), NVML_SUCCESS);
    /* GPU instances and profiles */
    nvmlGpuInstance_t gih;
    nvmlGpuInstanceInfo_t info;
    assert_int_equal(N(nvmlDeviceGetGpuInstanceById)(d0, gi[0], &gih), NVML_SUCCESS);
    assert_int_equal(N(nvmlGpuInstanceGetInfo)(gih, &info), NVML_SUCCESS);
    assert_ptr_equal(info.device, d0);
    assert_int_equal(info.id, gi[0]);
    assert_int_equal(info.profileId, 9);
    assert_int_equal(info.placement.size, 3);
    assert_int_equal(N(nvmlDeviceGetGpuInstanceById)(d0, 55, &gih), NVML_ERROR_NOT_FOUND);
    assert_int_equal(N(nvmlDeviceGetGpuInstanceById)(d2, 1, &gih), NVML_ERROR_INVALID_STATE);
    nvmlGpuInstanceProfileInfo_v2_t pi = {.version = nvmlGpuInstanceProfileInfo_v2};
    assert_int_equal(N(nvmlDeviceGetGpuInstanceProfileInfoV)(d2, 2, &pi), NVML_SUCCESS);
    assert_string_equal(pi.name, "MIG 3g.40gb");
    assert_int_equal(pi.sliceCount, 3);
    assert_int_equal(pi.instanceCount, 2);
    assert_int_equal(pi.version, nvmlGpuInstanceProfileInfo_v2);
    pi.version = nvmlGpuInstanceProfileInfo_v2;
    assert_int_equal(N(nvmlDeviceGetGpuInstanceProfileInfoV)(d2, 6, &pi), NVML_ERROR_NOT_SUPPORTED);
    assert_int_equal(N(nvmlDeviceGetGpuInstanceProfileInfoV)(d2, NVML_GPU_INSTANCE_PROFILE_COUNT, &pi),
                     NVML_ERROR_INVALID_ARGUMENT);
    shutdown_ok();
}

static void test_lost(void **state) {
    (void)state;
    env("KELVIN_SIM_GPUS=3", "KELVIN_SIM_SCENARIO=fell-off-bus", "KELVIN_SIM_FAULT_GPU=1",
        "KELVIN_SIM_LOST_AFTER=0.4", NULL);
    init_ok();
    nvmlDevice_t d1 = dev(1), d2 = dev(2);
    char uuid[96];
    assert_int_equal(N(nvmlDeviceGetUUID)(d1, uuid, sizeof uuid), NVML_SUCCESS);
    nvmlEventSet_t set;
    assert_int_equal(N(nvmlEventSetCreate)(&set), NVML_SUCCESS);
    assert_int_equal(N(nvmlDeviceRegisterEvents)(d1, nvmlEventTypeXidCriticalError, set), NVML_SUCCESS);
    nvmlEventData_t ev;
    assert_int_equal(N(nvmlEventSetWait_v2)(set, &ev, 3000), NVML_SUCCESS);
    assert_int_equal(ev.eventData, 79);
    assert_ptr_equal(ev.device, d1);
    unsigned t, c;
    assert_int_equal(N(nvmlDeviceGetTemperature)(d1, NVML_TEMPERATURE_GPU, &t), NVML_ERROR_GPU_IS_LOST);
    assert_int_equal(N(nvmlDeviceGetName)(d1, uuid, sizeof uuid), NVML_ERROR_GPU_IS_LOST);
    nvmlFieldValue_t f = {.fieldId = NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION};
    assert_int_equal(N(nvmlDeviceGetFieldValues)(d1, 1, &f), NVML_ERROR_GPU_IS_LOST);
    nvmlDevice_t x;
    assert_int_equal(N(nvmlDeviceGetHandleByIndex_v2)(1, &x), NVML_ERROR_GPU_IS_LOST);
    unsigned n = 4;
    nvmlProcessInfo_t pi[4];
    assert_int_equal(N(nvmlDeviceGetComputeRunningProcesses_v3)(d1, &n, pi), NVML_ERROR_GPU_IS_LOST);
    /* the rest of the node carries on */
    assert_int_equal(N(nvmlDeviceGetTemperature)(d2, NVML_TEMPERATURE_GPU, &t), NVML_SUCCESS);
    assert_int_equal(N(nvmlDeviceGetCount_v2)(&c), NVML_SUCCESS);
    assert_int_equal(c, 3);
    shutdown_ok();
    /* nvmlInit (v1) refuses a node with a lost GPU; _v2 does not */
    env("KELVIN_SIM_GPUS=2", "KELVIN_SIM_SCENARIO=fell-off-bus", "KELVIN_SIM_LOST_AFTER=0", NULL);
    assert_int_equal(N(nvmlInit)(), NVML_ERROR_GPU_IS_LOST);
    init_ok();
    assert_int_equal(N(nvmlDeviceGetHandleByIndex_v2)(0, &x), NVML_ERROR_GPU_IS_LOST);
    shutdown_ok();
}

/* Scenarios seen through NVML, at a time scale that makes them quick. */
static void test_cooling_failure(void **state) {
    (void)state;
    env("KELVIN_SIM_GPUS=2", "KELVIN_SIM_SCENARIO=cooling-failure", "KELVIN_SIM_TIME_SCALE=1000",
        "KELVIN_SIM_ONSET=0.05", NULL);
    init_ok();
    nvmlDevice_t d = dev(0);
    nvmlFieldValue_t f = {.fieldId = NVML_FI_DEV_MEMORY_TEMP};
    assert_int_equal(N(nvmlDeviceGetFieldValues)(d, 1, &f), NVML_SUCCESS);
    unsigned mem0 = f.value.uiVal;
    sleep_ms(1800); /* 1800 model seconds */
    double sum_clk = 0, sum_mem = 0;
    unsigned long long reasons = 0;
    for (int i = 0; i < 20; i++) {
        unsigned clk;
        unsigned long long r;
        assert_int_equal(N(nvmlDeviceGetClockInfo)(d, NVML_CLOCK_SM, &clk), NVML_SUCCESS);
        assert_int_equal(N(nvmlDeviceGetFieldValues)(d, 1, &f), NVML_SUCCESS);
        assert_int_equal(N(nvmlDeviceGetCurrentClocksEventReasons)(d, &r), NVML_SUCCESS);
        sum_clk += clk;
        sum_mem += f.value.uiVal;
        reasons |= r;
        sleep_ms(20);
    }
    assert_true(sum_mem / 20 >= 91.0 && sum_mem / 20 > mem0 + 10.0);
    assert_true(sum_clk / 20 < 0.8 * 1980);
    assert_true(reasons & nvmlClocksEventReasonSwThermalSlowdown);
    nvmlViolationTime_t vt;
    assert_int_equal(N(nvmlDeviceGetViolationStatus)(d, NVML_PERF_POLICY_THERMAL, &vt), NVML_SUCCESS);
    assert_true(vt.violationTime > 100ULL * 1000000000ULL);
    assert_int_equal(N(nvmlDeviceGetViolationStatus)(dev(1), NVML_PERF_POLICY_THERMAL, &vt), NVML_SUCCESS);
    assert_int_equal(vt.violationTime, 0);
    shutdown_ok();
}

static void test_memory_leak(void **state) {
    (void)state;
    env("KELVIN_SIM_GPUS=1", "KELVIN_SIM_SCENARIO=memory-leak", "KELVIN_SIM_TIME_SCALE=600",
        "KELVIN_SIM_ONSET=0.05", NULL);
    init_ok();
    nvmlDevice_t d = dev(0);
    unsigned long long prev = 0;
    for (int i = 0; i < 5; i++) {
        sleep_ms(300); /* 180 model seconds each */
        /* the model runs 600x real time, so the process's memory is read
         * between two reads of the device's (a loaded machine can take
         * model seconds between calls): first <= process <= second */
        nvmlMemory_v2_t m = {.version = nvmlMemory_v2}, m2 = {.version = nvmlMemory_v2};
        assert_int_equal(N(nvmlDeviceGetMemoryInfo_v2)(d, &m), NVML_SUCCESS);
        unsigned n = 1;
        nvmlProcessInfo_t pi;
        assert_int_equal(N(nvmlDeviceGetComputeRunningProcesses_v3)(d, &n, &pi), NVML_SUCCESS);
        assert_int_equal(N(nvmlDeviceGetMemoryInfo_v2)(d, &m2), NVML_SUCCESS);
        assert_true(pi.usedGpuMemory >= m.used && pi.usedGpuMemory <= m2.used);
        assert_true(m.used > prev);
        prev = m.used;
    }
    shutdown_ok();
}

static void test_ecc_degradation(void **state) {
    (void)state;
    env("KELVIN_SIM_GPUS=1", "KELVIN_SIM_SCENARIO=ecc-degradation", "KELVIN_SIM_TIME_SCALE=1500",
        "KELVIN_SIM_ONSET=0", NULL);
    init_ok();
    nvmlDevice_t d = dev(0);
    nvmlEventSet_t set;
    assert_int_equal(N(nvmlEventSetCreate)(&set), NVML_SUCCESS);
    assert_int_equal(N(nvmlDeviceRegisterEvents)(d, nvmlEventTypeXidCriticalError, set), NVML_SUCCESS);
    sleep_ms(400);
    unsigned long long sbe1, sbe2, dbe;
    assert_int_equal(
        N(nvmlDeviceGetTotalEccErrors)(d, NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_VOLATILE_ECC, &sbe1),
        NVML_SUCCESS);
    nvmlEventData_t ev;
    assert_int_equal(N(nvmlEventSetWait_v2)(set, &ev, 3000), NVML_SUCCESS); /* at 1800 model s */
    assert_int_equal(ev.eventData, 48);
    assert_int_equal(N(nvmlEventSetWait_v2)(set, &ev, 100), NVML_SUCCESS);
    assert_int_equal(ev.eventData, 63);
    assert_int_equal(
        N(nvmlDeviceGetTotalEccErrors)(d, NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_VOLATILE_ECC, &sbe2),
        NVML_SUCCESS);
    assert_int_equal(
        N(nvmlDeviceGetTotalEccErrors)(d, NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_AGGREGATE_ECC, &dbe),
        NVML_SUCCESS);
    assert_true(sbe1 > 0 && sbe2 > sbe1);
    assert_int_equal(dbe, 1);
    nvmlEnableState_t pending;
    assert_int_equal(N(nvmlDeviceGetRetiredPagesPendingStatus)(d, &pending), NVML_SUCCESS);
    assert_int_equal(pending, NVML_FEATURE_ENABLED);
    unsigned corr, unc, pend, fail;
    assert_int_equal(N(nvmlDeviceGetRemappedRows)(d, &corr, &unc, &pend, &fail), NVML_SUCCESS);
    assert_true(corr >= 1);
    assert_int_equal(unc, 1);
    assert_int_equal(pend, 1);
    unsigned cnt = 0;
    assert_int_equal(
        N(nvmlDeviceGetRetiredPages)(d, NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR, &cnt, NULL),
        NVML_ERROR_INSUFFICIENT_SIZE);
    assert_int_equal(cnt, 1);
    unsigned long long addr[2];
    cnt = 2;
    assert_int_equal(
        N(nvmlDeviceGetRetiredPages)(d, NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR, &cnt, addr),
        NVML_SUCCESS);
    assert_int_equal(cnt, 1);
    assert_int_equal(addr[0] & 0xFFF, 0);
    nvmlFieldValue_t f[2] = {{.fieldId = NVML_FI_DEV_ECC_DBE_VOL_TOTAL},
                             {.fieldId = NVML_FI_DEV_RETIRED_PENDING}};
    assert_int_equal(N(nvmlDeviceGetFieldValues)(d, 2, f), NVML_SUCCESS);
    assert_int_equal(f[0].value.ullVal, 1);
    assert_int_equal(f[1].value.uiVal, 1);
    shutdown_ok();
}

/* A hung driver: device calls block, enumeration does not, and another
 * thread keeps making progress on its own calls. */
typedef struct hang_arg {
    nvmlDevice_t d;
    double took;
} hang_arg;

static void *hang_thread(void *p) {
    hang_arg *a = p;
    double t0 = now_s();
    unsigned t;
    N(nvmlDeviceGetTemperature)(a->d, NVML_TEMPERATURE_GPU, &t);
    a->took = now_s() - t0;
    return NULL;
}

static void test_hang_and_threads(void **state) {
    (void)state;
    env("KELVIN_SIM_GPUS=2", "KELVIN_SIM_HANG_MS=300", NULL);
    init_ok();
    nvmlDevice_t d = dev(0);
    hang_arg a = {.d = d};
    pthread_t th;
    double t0 = now_s();
    assert_int_equal(pthread_create(&th, NULL, hang_thread, &a), 0);
    sleep_ms(20);
    unsigned n;
    double t1 = now_s();
    assert_int_equal(N(nvmlDeviceGetCount_v2)(&n), NVML_SUCCESS); /* not a device call */
    assert_true(now_s() - t1 < 0.2);
    pthread_join(th, NULL);
    assert_true(a.took >= 0.29);
    assert_true(now_s() - t0 >= 0.29);
    shutdown_ok();
}

typedef struct race_arg {
    int calls;
    int errors;
} race_arg;

static void *collector(void *p) {
    race_arg *a = p;
    double t0 = now_s();
    while (now_s() - t0 < 0.4) {
        for (unsigned g = 0; g < 4; g++) {
            nvmlDevice_t d;
            if (N(nvmlDeviceGetHandleByIndex_v2)(g, &d) != NVML_SUCCESS) {
                a->errors++;
                continue;
            }
            nvmlFieldValue_t f[3] = {{.fieldId = NVML_FI_DEV_MEMORY_TEMP},
                                     {.fieldId = NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION},
                                     {.fieldId = NVML_FI_DEV_ECC_SBE_VOL_TOTAL}};
            unsigned mw;
            a->errors += N(nvmlDeviceGetFieldValues)(d, 3, f) != NVML_SUCCESS;
            a->errors += N(nvmlDeviceGetPowerUsage)(d, &mw) != NVML_SUCCESS;
            a->calls += 3;
        }
    }
    return NULL;
}

static void test_concurrent(void **state) {
    (void)state;
    env("KELVIN_SIM_GPUS=4", "KELVIN_SIM_SCENARIO=xid-storm", "KELVIN_SIM_TIME_SCALE=100",
        "KELVIN_SIM_ONSET=0.1", NULL);
    init_ok();
    nvmlEventSet_t set;
    assert_int_equal(N(nvmlEventSetCreate)(&set), NVML_SUCCESS);
    assert_int_equal(N(nvmlDeviceRegisterEvents)(dev(0), nvmlEventTypeXidCriticalError, set), NVML_SUCCESS);
    race_arg a = {0};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, collector, &a), 0);
    int events = 0;
    double t0 = now_s();
    while (now_s() - t0 < 0.4) {
        nvmlEventData_t ev;
        if (N(nvmlEventSetWait_v2)(set, &ev, 50) == NVML_SUCCESS) events++;
    }
    pthread_join(th, NULL);
    assert_int_equal(a.errors, 0);
    assert_true(a.calls > 30);
    assert_true(events >= 1);
    shutdown_ok();
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_symbols, reset),
        cmocka_unit_test_teardown(test_init_lifecycle, reset),
        cmocka_unit_test_teardown(test_error_strings, reset),
        cmocka_unit_test_teardown(test_identity, reset),
        cmocka_unit_test_teardown(test_readings, reset),
        cmocka_unit_test_teardown(test_struct_versions, reset),
        cmocka_unit_test_teardown(test_processes, reset),
        cmocka_unit_test_teardown(test_process_stride, reset),
        cmocka_unit_test_teardown(test_field_values, reset),
        cmocka_unit_test_teardown(test_events, reset),
        cmocka_unit_test_teardown(test_gpm, reset),
        cmocka_unit_test_teardown(test_mig, reset),
        cmocka_unit_test_teardown(test_lost, reset),
        cmocka_unit_test_teardown(test_cooling_failure, reset),
        cmocka_unit_test_teardown(test_memory_leak, reset),
        cmocka_unit_test_teardown(test_ecc_degradation, reset),
        cmocka_unit_test_teardown(test_hang_and_threads, reset),
        cmocka_unit_test_teardown(test_concurrent, reset),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
