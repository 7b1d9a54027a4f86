/* tests/unit/nvml/nvml.c -- the NVML loader against the simulated library
 * (KELVIN_SIM_LIB), the legacy one (KELVIN_SIM_LEGACY_LIB), and paths that
 * are missing or not NVML at all.
 *
 * The simulated libraries are build products (build/sim*); ctest passes
 * their paths. A missing library is a failure here, not a skip: these tests
 * exist to prove the loader against them.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/err.h"
#include "nvml/nvml.h"

static const char *env_lib(const char *var) {
    const char *p = getenv(var);
    if (!p || !*p) fail_msg("%s is not set (run through ctest)", var);
    if (access(p, R_OK) != 0) fail_msg("%s=%s does not exist: build the simulated NVML first", var, p);
    return p;
}

static void test_missing_path(void **state) {
    (void)state;
    nvml_lib *lib = (nvml_lib *)0x1;
    char err[256] = "";
    int rc = nvml_open("/nonexistent/dir/libnvidia-ml.so.1", &lib, err, sizeof err);
    assert_int_equal(rc, BASE_E_NOTFOUND);
    assert_ptr_equal(lib, (nvml_lib *)0x1); /* ret_ untouched on failure */
    assert_non_null(strstr(err, "/nonexistent/dir/libnvidia-ml.so.1"));
}

static void test_not_a_library(void **state) {
    (void)state;
    /* a readable file that is not an ELF object */
    const char *src = getenv("KELVIN_SOURCE_DIR");
    char path[1024];
    snprintf(path, sizeof path, "%s/CMakeLists.txt", src ? src : ".");
    nvml_lib *lib = NULL;
    char err[256] = "";
    assert_int_equal(nvml_open(path, &lib, err, sizeof err), BASE_E_NOTFOUND);
    assert_null(lib);
    assert_true(strlen(err) > 0);
}

static void test_library_without_nvml(void **state) {
    (void)state;
    /* a real shared library that exports none of NVML's symbols */
    nvml_lib *lib = NULL;
    char err[256] = "";
    assert_int_equal(nvml_open("libm.so.6", &lib, err, sizeof err), BASE_E_UNSUPPORTED);
    assert_null(lib);
    assert_non_null(strstr(err, "nvmlInit_v2"));
}

static void test_return_names(void **state) {
    (void)state;
    assert_string_equal(nvml_return_name(NVML_SUCCESS), "NVML_SUCCESS");
    assert_string_equal(nvml_return_name(NVML_ERROR_GPU_IS_LOST), "NVML_ERROR_GPU_IS_LOST");
    assert_string_equal(nvml_return_name(NVML_ERROR_ARGUMENT_VERSION_MISMATCH),
                        "NVML_ERROR_ARGUMENT_VERSION_MISMATCH");
    assert_string_equal(nvml_return_name((nvmlReturn_t)12345), "NVML_ERROR_UNKNOWN");
    assert_string_equal(nvml_strerror(NULL, NVML_ERROR_NOT_SUPPORTED), "NVML_ERROR_NOT_SUPPORTED");
}

static void test_struct_versions(void **state) {
    (void)state;
    assert_int_equal(nvmlMemory_v2, 0x02000028);
    assert_int_equal(nvmlProcessDetailList_v1, 0x01000018);
    assert_int_equal(nvmlProcessesUtilizationInfo_v1, 0x01000018);
    assert_int_equal(nvmlGpuInstanceProfileInfo_v2, 0x02000098);
    assert_int_equal(nvmlTemperature_v1, 0x0100000C);
}

static void test_sim_full(void **state) {
    (void)state;
    const char *path = env_lib("KELVIN_SIM_LIB");
    nvml_lib *lib = NULL;
    char err[256] = "";
    int rc = nvml_open(path, &lib, err, sizeof err);
    if (rc != 0) fail_msg("nvml_open(%s): %d %s", path, rc, err);
    assert_string_equal(lib->path, path);
    /* newest versions preferred */
    assert_non_null(lib->nvmlInit_v2);
    assert_true(lib->init == lib->nvmlInit_v2);
    assert_true(lib->device_get_count == lib->nvmlDeviceGetCount_v2);
    assert_true(lib->device_get_handle_by_index == lib->nvmlDeviceGetHandleByIndex_v2);
    assert_non_null(lib->nvmlDeviceGetPciInfo_v3);
    assert_true(lib->device_get_pci_info == lib->nvmlDeviceGetPciInfo_v3);
    assert_non_null(lib->nvmlEventSetWait_v2);
    assert_true(lib->event_set_wait == lib->nvmlEventSetWait_v2);
    assert_true(lib->device_get_current_clocks_event_reasons == lib->nvmlDeviceGetCurrentClocksEventReasons);
    /* the full simulator implements every function Kelvin lists */
    const char *missing[128];
    size_t n = nvml_missing(lib, missing, 128);
    for (size_t i = 0; i < n && i < 128; i++) print_message("missing: %s\n", missing[i]);
    assert_int_equal(n, 0);
    assert_true(nvml_has(lib, "nvmlGpmMetricsGet"));
    assert_false(nvml_has(lib, "nvmlNoSuchFunction"));

    /* it works: init, enumerate, a real call through a resolved pointer */
    assert_int_equal(nvml_init(lib, 0), NVML_SUCCESS);
    unsigned count = 0;
    assert_int_equal(lib->device_get_count(&count), NVML_SUCCESS);
    assert_true(count >= 1);
    nvmlDevice_t dev = NULL;
    assert_int_equal(lib->device_get_handle_by_index(0, &dev), NVML_SUCCESS);
    nvmlPciInfo_t pci;
    memset(&pci, 0, sizeof pci);
    assert_int_equal(lib->device_get_pci_info(dev, &pci), NVML_SUCCESS);
    assert_true(strlen(pci.busId) > 0);
    nvmlMemory_v2_t mem;
    memset(&mem, 0, sizeof mem);
    mem.version = nvmlMemory_v2;
    assert_int_equal(lib->nvmlDeviceGetMemoryInfo_v2(dev, &mem), NVML_SUCCESS);
    assert_true(mem.total > 0);
    assert_true(mem.used <= mem.total);
    /* a wrong struct version is refused, as the real driver does */
    mem.version = 2;
    assert_int_equal(lib->nvmlDeviceGetMemoryInfo_v2(dev, &mem), NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
    assert_non_null(nvml_strerror(lib, NVML_ERROR_GPU_IS_LOST));
    assert_true(strlen(nvml_strerror(lib, NVML_ERROR_GPU_IS_LOST)) > 0);
    /* out-of-range index */
    assert_int_not_equal(lib->device_get_handle_by_index(count + 100, &dev), NVML_SUCCESS);
    assert_int_equal(nvml_shutdown(lib), NVML_SUCCESS);
    nvml_close(lib);
}

static void test_sim_init_with_flags(void **state) {
    (void)state;
    const char *path = env_lib("KELVIN_SIM_LIB");
    nvml_lib *lib = NULL;
    char err[256] = "";
    assert_int_equal(nvml_open(path, &lib, err, sizeof err), 0);
    assert_non_null(lib->nvmlInitWithFlags);
    assert_int_equal(nvml_init(lib, NVML_INIT_FLAG_NO_GPUS), NVML_SUCCESS);
    assert_int_equal(nvml_shutdown(lib), NVML_SUCCESS);
    nvml_close(lib);
}

static void test_sim_legacy(void **state) {
    (void)state;
    const char *path = env_lib("KELVIN_SIM_LEGACY_LIB");
    nvml_lib *lib = NULL;
    char err[256] = "";
    int rc = nvml_open(path, &lib, err, sizeof err);
    if (rc != 0) fail_msg("nvml_open(%s): %d %s", path, rc, err);
    /* the required functions resolve, whatever version the library has */
    assert_non_null(lib->init);
    assert_non_null(lib->device_get_count);
    assert_non_null(lib->device_get_handle_by_index);
    /* newer symbols are absent and reported; GPM is the canonical case */
    assert_null(lib->nvmlGpmMetricsGet);
    const char *missing[128];
    size_t n = nvml_missing(lib, missing, 128);
    assert_true(n >= 1);
    int saw_gpm = 0;
    for (size_t i = 0; i < n && i < 128; i++) {
        assert_false(nvml_has(lib, missing[i]));
        if (strcmp(missing[i], "nvmlGpmMetricsGet") == 0) saw_gpm = 1;
        /* the required functions are never reported missing */
        assert_string_not_equal(missing[i], "nvmlInit_v2");
        assert_string_not_equal(missing[i], "nvmlDeviceGetCount_v2");
    }
    assert_true(saw_gpm);
    /* a fallback version fills the convenience pointer when the newest is gone */
    if (!lib->nvmlDeviceGetMemoryInfo_v2) assert_non_null(lib->nvmlDeviceGetMemoryInfo);
    if (!lib->nvmlDeviceGetCurrentClocksEventReasons && lib->nvmlDeviceGetCurrentClocksThrottleReasons)
        assert_true(lib->device_get_current_clocks_event_reasons ==
                    lib->nvmlDeviceGetCurrentClocksThrottleReasons);
    assert_int_equal(nvml_init(lib, 0), NVML_SUCCESS);
    unsigned count = 0;
    assert_int_equal(lib->device_get_count(&count), NVML_SUCCESS);
    assert_true(count >= 1);
    assert_int_equal(nvml_shutdown(lib), NVML_SUCCESS);
    nvml_close(lib);
}

static void test_missing_truncates(void **state) {
    (void)state;
    const char *path = env_lib("KELVIN_SIM_LEGACY_LIB");
    nvml_lib *lib = NULL;
    char err[256] = "";
    assert_int_equal(nvml_open(path, &lib, err, sizeof err), 0);
    size_t total = nvml_missing(lib, NULL, 0);
    assert_true(total >= 1);
    const char *one[1] = {NULL};
    assert_int_equal(nvml_missing(lib, one, 1), total);
    assert_non_null(one[0]);
    nvml_close(lib);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_missing_path),         cmocka_unit_test(test_not_a_library),
        cmocka_unit_test(test_library_without_nvml), cmocka_unit_test(test_return_names),
        cmocka_unit_test(test_struct_versions),      cmocka_unit_test(test_sim_full),
        cmocka_unit_test(test_sim_init_with_flags),  cmocka_unit_test(test_sim_legacy),
        cmocka_unit_test(test_missing_truncates),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
