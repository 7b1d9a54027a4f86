/* nvml.c -- the NVML loader (see nvml.h).
 *
 * Design: a table generated from NVML_FUNCTIONS maps every symbol name to
 * the offset of its pointer in nvml_lib; nvml_open() walks it and stores
 * each dlsym() result. A second, hand-written table groups the symbols that
 * are versions of one function (newest first); it drives the convenience
 * pointers and nvml_missing(). A symbol in no group is a group of its own.
 *
 * Invariants: every name in `groups` is in NVML_FUNCTIONS (checked by the
 * unit test through nvml_missing/nvml_has on a library lacking nothing);
 * nvml_lib is never modified after nvml_open() returns.
 */
#include "nvml/nvml.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"

typedef struct sym_entry {
    const char *name;
    size_t off;
} sym_entry;

static const sym_entry syms[] = {
#define NVML__SYM(name, params) {#name, offsetof(nvml_lib, name)},
    NVML_FUNCTIONS(NVML__SYM) NVML_STRING_FUNCTIONS(NVML__SYM)
#undef NVML__SYM
};
#define NSYMS (sizeof syms / sizeof syms[0])

/* Versions of one function, newest first; `conv` is the offset of the
 * convenience pointer filled with the first present one (0 = none). */
typedef struct sym_group {
    const char *names[4];
    size_t conv;
} sym_group;

#define CONV(m) offsetof(nvml_lib, m)
static const sym_group groups[] = {
    {{"nvmlInit_v2", "nvmlInit"}, CONV(init)},
    {{"nvmlDeviceGetCount_v2", "nvmlDeviceGetCount"}, CONV(device_get_count)},
    {{"nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex"}, CONV(device_get_handle_by_index)},
    {{"nvmlDeviceGetPciInfo_v3", "nvmlDeviceGetPciInfo_v2", "nvmlDeviceGetPciInfo"},
     CONV(device_get_pci_info)},
    {{"nvmlEventSetWait_v2", "nvmlEventSetWait"}, CONV(event_set_wait)},
    {{"nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons"},
     CONV(device_get_current_clocks_event_reasons)},
    {{"nvmlDeviceGetSupportedClocksEventReasons", "nvmlDeviceGetSupportedClocksThrottleReasons"},
     CONV(device_get_supported_clocks_event_reasons)},
    /* different signatures: grouped only for nvml_missing() */
    {{"nvmlDeviceGetTemperatureV", "nvmlDeviceGetTemperature"}, 0},
    {{"nvmlDeviceGetMemoryInfo_v2", "nvmlDeviceGetMemoryInfo"}, 0},
    {{"nvmlDeviceGetFanSpeed_v2", "nvmlDeviceGetFanSpeed"}, 0},
    {{"nvmlDeviceGetRunningProcessDetailList", "nvmlDeviceGetComputeRunningProcesses_v3",
      "nvmlDeviceGetComputeRunningProcesses_v2", "nvmlDeviceGetComputeRunningProcesses"},
     0},
    {{"nvmlDeviceGetProcessesUtilizationInfo", "nvmlDeviceGetProcessUtilization"}, 0},
};
#define NGROUPS (sizeof groups / sizeof groups[0])

static void *ptr_at(const nvml_lib *lib, size_t off) {
    void *p;
    memcpy(&p, (const char *)lib + off, sizeof p);
    return p;
}

static void set_ptr_at(nvml_lib *lib, size_t off, void *p) {
    memcpy((char *)lib + off, &p, sizeof p);
}

static const sym_entry *find_sym(const char *name) {
    for (size_t i = 0; i < NSYMS; i++)
        if (strcmp(syms[i].name, name) == 0) return &syms[i];
    return NULL;
}

/* The group that lists `name` first or later; NULL when none. */
static const sym_group *group_of(const char *name) {
    for (size_t g = 0; g < NGROUPS; g++)
        for (size_t k = 0; k < 4 && groups[g].names[k]; k++)
            if (strcmp(groups[g].names[k], name) == 0) return &groups[g];
    return NULL;
}

static void errf(char *err, size_t errlen, const char *fmt, const char *a, const char *b) {
    if (err && errlen) snprintf(err, errlen, fmt, a, b ? b : "");
}

int nvml_open(const char *path, nvml_lib **ret, char *err, size_t errlen) {
    const char *tries[2];
    size_t ntries = 0;
    if (path && *path) {
        tries[ntries++] = path;
    } else {
        tries[ntries++] = NVML_LIBRARY_SONAME;
        tries[ntries++] = NVML_LIBRARY_DEVNAME;
    }
    void *dl = NULL;
    const char *opened = NULL;
    char why[512] = "";
    for (size_t i = 0; i < ntries && !dl; i++) {
        dlerror();
        dl = dlopen(tries[i], RTLD_NOW | RTLD_LOCAL);
        if (dl) {
            opened = tries[i];
        } else if (i == 0) {
            const char *e = dlerror();
            snprintf(why, sizeof why, "%s", e ? e : "unknown dlopen error");
        }
    }
    if (!dl) {
        errf(err, errlen, "cannot load NVML: %s%s", why, NULL);
        return BASE_E_NOTFOUND;
    }
    nvml_lib *lib = calloc(1, sizeof *lib);
    if (!lib) {
        dlclose(dl);
        errf(err, errlen, "%s%s", "out of memory", NULL);
        return BASE_E_NOMEM;
    }
    lib->dl = dl;
    snprintf(lib->path, sizeof lib->path, "%s", opened);
    for (size_t i = 0; i < NSYMS; i++) set_ptr_at(lib, syms[i].off, dlsym(dl, syms[i].name));
    for (size_t g = 0; g < NGROUPS; g++) {
        if (!groups[g].conv) continue;
        for (size_t k = 0; k < 4 && groups[g].names[k]; k++) {
            const sym_entry *s = find_sym(groups[g].names[k]);
            void *p = s ? ptr_at(lib, s->off) : NULL;
            if (p) {
                set_ptr_at(lib, groups[g].conv, p);
                break;
            }
        }
    }
    const char *missing = NULL;
    if (!lib->init)
        missing = "nvmlInit_v2";
    else if (!lib->device_get_count)
        missing = "nvmlDeviceGetCount_v2";
    else if (!lib->device_get_handle_by_index)
        missing = "nvmlDeviceGetHandleByIndex_v2";
    else if (!lib->nvmlErrorString)
        missing = "nvmlErrorString";
    if (missing) {
        errf(err, errlen, "%s lacks the required symbol %s", lib->path, missing);
        nvml_close(lib);
        return BASE_E_UNSUPPORTED;
    }
    *ret = lib;
    return 0;
}

void nvml_close(nvml_lib *lib) {
    if (!lib) return;
    if (lib->dl) dlclose(lib->dl);
    free(lib);
}

nvmlReturn_t nvml_init(const nvml_lib *lib, unsigned int flags) {
    if (flags && lib->nvmlInitWithFlags) return lib->nvmlInitWithFlags(flags);
    return lib->init();
}

nvmlReturn_t nvml_shutdown(const nvml_lib *lib) {
    if (!lib->nvmlShutdown) return NVML_SUCCESS;
    return lib->nvmlShutdown();
}

size_t nvml_missing(const nvml_lib *lib, const char **out, size_t max) {
    size_t n = 0;
    for (size_t i = 0; i < NSYMS; i++) {
        const sym_group *g = group_of(syms[i].name);
        if (g) {
            /* report a group once, under its first (newest) name */
            if (strcmp(g->names[0], syms[i].name) != 0) continue;
            int any = 0;
            for (size_t k = 0; k < 4 && g->names[k] && !any; k++) any = nvml_has(lib, g->names[k]);
            if (any) continue;
        } else if (ptr_at(lib, syms[i].off)) {
            continue;
        }
        if (n < max) out[n] = syms[i].name;
        n++;
    }
    return n;
}

int nvml_has(const nvml_lib *lib, const char *name) {
    const sym_entry *s = find_sym(name);
    return s && ptr_at(lib, s->off) != NULL;
}

const char *nvml_return_name(nvmlReturn_t r) {
    switch (r) {
#define NVML__RET_CASE(name, code)                                                                           \
    case name: return #name;
        NVML_RETURN_MAP(NVML__RET_CASE)
#undef NVML__RET_CASE
    }
    return "NVML_ERROR_UNKNOWN";
}

const char *nvml_strerror(const nvml_lib *lib, nvmlReturn_t r) {
    if (lib && lib->nvmlErrorString) {
        const char *s = lib->nvmlErrorString(r);
        if (s) return s;
    }
    return nvml_return_name(r);
}
