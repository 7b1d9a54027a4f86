/* nvml.h -- loads libnvidia-ml with dlopen and resolves NVML's symbols one
 * by one, so that a driver lacking a function disables that function only.
 *
 * Design: nvml_open() opens the library (a given path; else the SONAME
 * libnvidia-ml.so.1; else the dev-package name libnvidia-ml.so), then asks
 * dlsym for every symbol of NVML_FUNCTIONS (nvml_types.h) on its own and
 * stores each in the member of the same name (NULL when absent). Symbols
 * that are versions of one function with the same signature are also
 * resolved into one convenience pointer, newest name first:
 *
 *   init                 nvmlInit_v2 -> nvmlInit
 *   device_get_count     nvmlDeviceGetCount_v2 -> nvmlDeviceGetCount
 *   device_get_handle_by_index  ..._v2 -> plain
 *   device_get_pci_info  nvmlDeviceGetPciInfo_v3 -> _v2 -> plain
 *                        (older ones may leave busId empty: use busIdLegacy)
 *   event_set_wait       nvmlEventSetWait_v2 -> nvmlEventSetWait
 *                        (v1 fills only device, eventType, eventData)
 *   device_get_current_clocks_event_reasons  ...EventReasons -> ...ThrottleReasons
 *   device_get_supported_clocks_event_reasons  likewise
 *
 * Versions with different structs (MemoryInfo_v2/v1, TemperatureV/plain,
 * FanSpeed_v2/plain, the running-process lists) stay separate: the caller
 * picks by which member is non-NULL.
 *
 * Required: init, device_get_count, device_get_handle_by_index and
 * nvmlErrorString. Without one of them nvml_open() fails. Everything else
 * is optional; nvml_missing() lists the functions for which no version was
 * found, so the program can log each once.
 *
 * This is library code: it never logs, prints or exits. It does not call
 * nvmlInit or nvmlShutdown (see nvml_init / nvml_shutdown).
 *
 * Ownership: nvml_open() returns a handle the caller frees with
 * nvml_close(), which dlcloses the library; every function pointer is
 * invalid afterwards. Thread-safety: the handle is immutable after
 * nvml_open(); NVML itself is thread-safe.
 */
#ifndef KELVIN_NVML_NVML_H
#define KELVIN_NVML_NVML_H

#include <stddef.h>

#include "nvml/nvml_types.h"

#define NVML_LIBRARY_SONAME  "libnvidia-ml.so.1"
#define NVML_LIBRARY_DEVNAME "libnvidia-ml.so"

typedef struct nvml_lib {
    /* One pointer per exported symbol, named as the symbol; NULL if absent. */
#define NVML__MEMBER(name, params) nvmlReturn_t(*name) params;
    NVML_FUNCTIONS(NVML__MEMBER)
#undef NVML__MEMBER
#define NVML__SMEMBER(name, params) const char *(*name)params;
    NVML_STRING_FUNCTIONS(NVML__SMEMBER)
#undef NVML__SMEMBER

    /* Same-signature versions resolved newest first (see above). */
    nvmlReturn_t (*init)(void);
    nvmlReturn_t (*device_get_count)(unsigned int *count);
    nvmlReturn_t (*device_get_handle_by_index)(unsigned int index, nvmlDevice_t *device);
    nvmlReturn_t (*device_get_pci_info)(nvmlDevice_t device, nvmlPciInfo_t *pci);
    nvmlReturn_t (*event_set_wait)(nvmlEventSet_t set, nvmlEventData_t *data, unsigned int timeoutms);
    nvmlReturn_t (*device_get_current_clocks_event_reasons)(nvmlDevice_t device, unsigned long long *reasons);
    nvmlReturn_t (*device_get_supported_clocks_event_reasons)(nvmlDevice_t device,
                                                              unsigned long long *reasons);

    void *dl;       /* dlopen handle */
    char path[256]; /* the name that was opened, truncated */
} nvml_lib;

/* Opens the library at `path`, or when path is NULL or "" the SONAME and
 * then the dev name, and resolves every symbol. Returns 0,
 * BASE_E_NOTFOUND (the library cannot be opened: dlerror text in err),
 * BASE_E_UNSUPPORTED (a required symbol is missing: its name in err) or
 * BASE_E_NOMEM. *ret is written only on success. */
int nvml_open(const char *path, nvml_lib **ret, char *err, size_t errlen);
/* dlcloses the library and frees the handle. NULL is a no-op. */
void nvml_close(nvml_lib *lib);

/* Initialises NVML once: nvmlInitWithFlags(flags) when the library has it
 * and flags != 0, else the resolved init. Returns NVML's code. */
nvmlReturn_t nvml_init(const nvml_lib *lib, unsigned int flags);
/* nvmlShutdown if present; NVML's code (NVML_SUCCESS when absent). */
nvmlReturn_t nvml_shutdown(const nvml_lib *lib);

/* Writes up to max names of functions the library lacks in every version
 * (each named by its newest symbol, static strings) to out, in
 * NVML_FUNCTIONS order; returns how many are missing in all (may exceed
 * max). */
size_t nvml_missing(const nvml_lib *lib, const char **out, size_t max);
/* Whether the library exports the symbol `name` (any listed symbol). */
int nvml_has(const nvml_lib *lib, const char *name);

/* The library's message for r (nvmlErrorString), or when lib is NULL the
 * code's name. Never NULL. */
const char *nvml_strerror(const nvml_lib *lib, nvmlReturn_t r);
/* "NVML_ERROR_GPU_IS_LOST" for 15; "NVML_ERROR_UNKNOWN" for codes not in
 * the table. Static storage. */
const char *nvml_return_name(nvmlReturn_t r);

#endif
