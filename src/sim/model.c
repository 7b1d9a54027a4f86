/* model.c -- the GPU models the simulator knows, as static tables.
 *
 * Each entry carries what NVML would report for the board (name, PCI ids,
 * memory, power limits, clocks, temperature thresholds, NVLink count,
 * features) and the few constants the physics needs (thermal resistance
 * die/memory to inlet, time constants, idle and full-activity power).
 *
 * Sources: nvidia-smi -q output published for these boards, NVIDIA's data
 * sheets and MIG user guide (profile names, instance counts, GI profile ids
 * 19/20/15/14/9/5/0), go-nvml's mock servers. Thermal constants are tuned so
 * a healthy board under training load sits where such boards are reported to
 * run (H100 die ~63 C, HBM ~70 C; L4 ~70 C).
 *
 * Page retirement is enabled on every board although Ampere and later
 * replaced it with row remapping in practice: keeping both lets tests drive
 * both code paths of an exporter.
 *
 * Invariants: tables are constant; model i has id i; every MIG profile fits
 * in 7 compute slices.
 */
#include <strings.h>

#include "sim/sim_int.h"

#define MIB (1024ULL * 1024ULL)

/* name, nvml_profile, profile_id, slices, max_count, mem_mib, sm, ce, dec, enc, jpg, ofa */
static const sim_mig_profile h100_mig[] = {
    {"1g.10gb", 0, 19, 1, 7, 9984, 16, 1, 1, 0, 1, 0},  {"1g.10gb+me", 7, 20, 1, 1, 9984, 16, 1, 1, 0, 1, 1},
    {"1g.20gb", 9, 15, 1, 4, 20096, 16, 1, 1, 0, 1, 0}, {"2g.20gb", 1, 14, 2, 3, 20096, 32, 2, 2, 0, 2, 0},
    {"3g.40gb", 2, 9, 3, 2, 40320, 60, 3, 3, 0, 3, 0},  {"4g.40gb", 3, 5, 4, 1, 40320, 64, 4, 4, 0, 4, 0},
    {"7g.80gb", 4, 0, 7, 1, 80896, 132, 8, 7, 0, 7, 1},
};

static const sim_mig_profile h200_mig[] = {
    {"1g.18gb", 0, 19, 1, 7, 16384, 16, 1, 1, 0, 1, 0},
    {"1g.18gb+me", 7, 20, 1, 1, 16384, 16, 1, 1, 0, 1, 1},
    {"1g.35gb", 9, 15, 1, 4, 32768, 16, 1, 1, 0, 1, 0},
    {"2g.35gb", 1, 14, 2, 3, 32768, 32, 2, 2, 0, 2, 0},
    {"3g.71gb", 2, 9, 3, 2, 71424, 60, 3, 3, 0, 3, 0},
    {"4g.71gb", 3, 5, 4, 1, 71424, 64, 4, 4, 0, 4, 0},
    {"7g.141gb", 4, 0, 7, 1, 143104, 132, 8, 7, 0, 7, 1},
};

static const sim_mig_profile a100_mig[] = {
    {"1g.10gb", 0, 19, 1, 7, 9728, 14, 1, 0, 0, 0, 0},  {"1g.10gb+me", 7, 20, 1, 1, 9728, 14, 1, 1, 0, 1, 1},
    {"1g.20gb", 9, 15, 1, 4, 19968, 14, 1, 1, 0, 0, 0}, {"2g.20gb", 1, 14, 2, 3, 19968, 28, 2, 1, 0, 0, 0},
    {"3g.40gb", 2, 9, 3, 2, 40192, 42, 3, 2, 0, 0, 0},  {"4g.40gb", 3, 5, 4, 1, 40192, 56, 4, 2, 0, 0, 0},
    {"7g.80gb", 4, 0, 7, 1, 80384, 98, 7, 5, 0, 1, 1},
};

static const sim_model models[SIM_MODEL__COUNT] = {
    [SIM_MODEL_H100_SXM5_80GB] =
        {
            .id = SIM_MODEL_H100_SXM5_80GB,
            .key = "h100",
            .name = "NVIDIA H100 80GB HBM3",
            .vbios = "96.00.99.00.02",
            .inforom_image = "G520.0200.00.05",
            .inforom_oem = "2.1",
            .inforom_ecc = "7.16",
            .brand = 14,
            .arch = 9,
            .pci_device_id = 0x233010DEu,
            .pci_subsystem_id = 0x16C110DEu,
            .pcie_gen = 5,
            .pcie_width = 16,
            .mem_total_bytes = 81559ULL * MIB,
            .mem_reserved_bytes = 553ULL * MIB,
            .power_limit_mw = 700000,
            .power_min_mw = 200000,
            .power_max_mw = 700000,
            .power_idle_w = 72.0,
            .power_full_w = 800.0,
            .sm_clock_max_mhz = 1980,
            .sm_clock_idle_mhz = 345,
            .sm_clock_min_mhz = 345,
            .sm_clock_base_mhz = 1590,
            .mem_clock_max_mhz = 2619,
            .mem_clock_idle_mhz = 2619,
            .video_clock_max_mhz = 1545,
            .temp_shutdown_c = 92,
            .temp_slowdown_c = 89,
            .temp_max_op_c = 87,
            .temp_mem_max_c = 95,
            .r_die = 0.055,
            .r_mem = 0.067,
            .tau_die_s = 18.0,
            .tau_mem_s = 45.0,
            .nvlink_count = 18,
            .nvlink_link_gbps = 25.0,
            .num_fans = 0,
            .encoders = 0,
            .decoders = 7,
            .sm_count = 132,
            .has_mem_temp = true,
            .has_ecc = true,
            .has_gpm = true,
            .has_remapping = true,
            .has_retirement = true,
            .mig_profiles = h100_mig,
            .mig_profile_count = sizeof h100_mig / sizeof h100_mig[0],
        },
    [SIM_MODEL_H200_SXM_141GB] =
        {
            .id = SIM_MODEL_H200_SXM_141GB,
            .key = "h200",
            .name = "NVIDIA H200",
            .vbios = "96.00.A5.00.01",
            .inforom_image = "G525.0200.00.05",
            .inforom_oem = "2.1",
            .inforom_ecc = "7.16",
            .brand = 14,
            .arch = 9,
            .pci_device_id = 0x233510DEu,
            .pci_subsystem_id = 0x18BE10DEu,
            .pcie_gen = 5,
            .pcie_width = 16,
            .mem_total_bytes = 143771ULL * MIB,
            .mem_reserved_bytes = 619ULL * MIB,
            .power_limit_mw = 700000,
            .power_min_mw = 200000,
            .power_max_mw = 700000,
            .power_idle_w = 76.0,
            .power_full_w = 810.0,
            .sm_clock_max_mhz = 1980,
            .sm_clock_idle_mhz = 345,
            .sm_clock_min_mhz = 345,
            .sm_clock_base_mhz = 1590,
            .mem_clock_max_mhz = 3201,
            .mem_clock_idle_mhz = 3201,
            .video_clock_max_mhz = 1545,
            .temp_shutdown_c = 92,
            .temp_slowdown_c = 89,
            .temp_max_op_c = 87,
            .temp_mem_max_c = 95,
            .r_die = 0.054,
            .r_mem = 0.068,
            .tau_die_s = 18.0,
            .tau_mem_s = 50.0,
            .nvlink_count = 18,
            .nvlink_link_gbps = 25.0,
            .num_fans = 0,
            .encoders = 0,
            .decoders = 7,
            .sm_count = 132,
            .has_mem_temp = true,
            .has_ecc = true,
            .has_gpm = true,
            .has_remapping = true,
            .has_retirement = true,
            .mig_profiles = h200_mig,
            .mig_profile_count = sizeof h200_mig / sizeof h200_mig[0],
        },
    [SIM_MODEL_A100_SXM4_80GB] =
        {
            .id = SIM_MODEL_A100_SXM4_80GB,
            .key = "a100",
            .name = "NVIDIA A100-SXM4-80GB",
            .vbios = "92.00.45.00.06",
            .inforom_image = "G506.0212.00.02",
            .inforom_oem = "2.0",
            .inforom_ecc = "6.16",
            .brand = 14,
            .arch = 7,
            .pci_device_id = 0x20B210DEu,
            .pci_subsystem_id = 0x147F10DEu,
            .pcie_gen = 4,
            .pcie_width = 16,
            .mem_total_bytes = 81920ULL * MIB,
            .mem_reserved_bytes = 543ULL * MIB,
            .power_limit_mw = 400000,
            .power_min_mw = 100000,
            .power_max_mw = 400000,
            .power_idle_w = 62.0,
            .power_full_w = 450.0,
            .sm_clock_max_mhz = 1410,
            .sm_clock_idle_mhz = 210,
            .sm_clock_min_mhz = 210,
            .sm_clock_base_mhz = 1275,
            .mem_clock_max_mhz = 1593,
            .mem_clock_idle_mhz = 1593,
            .video_clock_max_mhz = 1290,
            .temp_shutdown_c = 92,
            .temp_slowdown_c = 89,
            .temp_max_op_c = 85,
            .temp_mem_max_c = 95,
            .r_die = 0.090,
            .r_mem = 0.115,
            .tau_die_s = 15.0,
            .tau_mem_s = 40.0,
            .nvlink_count = 12,
            .nvlink_link_gbps = 25.0,
            .num_fans = 0,
            .encoders = 0,
            .decoders = 5,
            .sm_count = 108,
            .has_mem_temp = true,
            .has_ecc = true,
            .has_gpm = false,
            .has_remapping = true,
            .has_retirement = true,
            .mig_profiles = a100_mig,
            .mig_profile_count = sizeof a100_mig / sizeof a100_mig[0],
        },
    [SIM_MODEL_L4] =
        {
            .id = SIM_MODEL_L4,
            .key = "l4",
            .name = "NVIDIA L4",
            .vbios = "95.04.3C.00.16",
            .inforom_image = "G193.0200.00.01",
            .inforom_oem = "2.1",
            .inforom_ecc = "6.16",
            .brand = 14,
            .arch = 8,
            .pci_device_id = 0x27B810DEu,
            .pci_subsystem_id = 0x16CA10DEu,
            .pcie_gen = 4,
            .pcie_width = 16,
            .mem_total_bytes = 23034ULL * MIB,
            .mem_reserved_bytes = 441ULL * MIB,
            .power_limit_mw = 72000,
            .power_min_mw = 40000,
            .power_max_mw = 72000,
            .power_idle_w = 16.0,
            .power_full_w = 80.0,
            .sm_clock_max_mhz = 2040,
            .sm_clock_idle_mhz = 210,
            .sm_clock_min_mhz = 210,
            .sm_clock_base_mhz = 795,
            .mem_clock_max_mhz = 6251,
            .mem_clock_idle_mhz = 405,
            .video_clock_max_mhz = 1770,
            .temp_shutdown_c = 95,
            .temp_slowdown_c = 92,
            .temp_max_op_c = 87,
            .temp_mem_max_c = 0,
            .r_die = 0.62,
            .r_mem = 0.55,
            .tau_die_s = 25.0,
            .tau_mem_s = 40.0,
            .nvlink_count = 0,
            .nvlink_link_gbps = 0.0,
            .num_fans = 0,
            .encoders = 2,
            .decoders = 4,
            .sm_count = 58,
            .has_mem_temp = false,
            .has_ecc = true,
            .has_gpm = false,
            .has_remapping = true,
            .has_retirement = true,
            .mig_profiles = NULL,
            .mig_profile_count = 0,
        },
    [SIM_MODEL_RTX6000_ADA] =
        {
            .id = SIM_MODEL_RTX6000_ADA,
            .key = "rtx6000ada",
            .name = "NVIDIA RTX 6000 Ada Generation",
            .vbios = "95.02.4D.00.02",
            .inforom_image = "G133.0500.00.05",
            .inforom_oem = "2.1",
            .inforom_ecc = "6.16",
            .brand = 13,
            .arch = 8,
            .pci_device_id = 0x26B110DEu,
            .pci_subsystem_id = 0x16A110DEu,
            .pcie_gen = 4,
            .pcie_width = 16,
            .mem_total_bytes = 49140ULL * MIB,
            .mem_reserved_bytes = 471ULL * MIB,
            .power_limit_mw = 300000,
            .power_min_mw = 100000,
            .power_max_mw = 300000,
            .power_idle_w = 22.0,
            .power_full_w = 330.0,
            .sm_clock_max_mhz = 2505,
            .sm_clock_idle_mhz = 210,
            .sm_clock_min_mhz = 210,
            .sm_clock_base_mhz = 915,
            .mem_clock_max_mhz = 10001,
            .mem_clock_idle_mhz = 405,
            .video_clock_max_mhz = 1965,
            .temp_shutdown_c = 94,
            .temp_slowdown_c = 91,
            .temp_max_op_c = 88,
            .temp_mem_max_c = 0,
            .r_die = 0.14,
            .r_mem = 0.13,
            .tau_die_s = 12.0,
            .tau_mem_s = 30.0,
            .nvlink_count = 0,
            .nvlink_link_gbps = 0.0,
            .num_fans = 1,
            .encoders = 3,
            .decoders = 3,
            .sm_count = 142,
            .has_mem_temp = false,
            .has_ecc = true,
            .has_gpm = false,
            .has_remapping = true,
            .has_retirement = true,
            .mig_profiles = NULL,
            .mig_profile_count = 0,
        },
};

static const struct {
    const char *alias;
    sim_model_id id;
} aliases[] = {
    {"h100-sxm", SIM_MODEL_H100_SXM5_80GB},  {"h100-sxm5", SIM_MODEL_H100_SXM5_80GB},
    {"h100-80gb", SIM_MODEL_H100_SXM5_80GB}, {"h200-141gb", SIM_MODEL_H200_SXM_141GB},
    {"h200-sxm", SIM_MODEL_H200_SXM_141GB},  {"a100-80gb", SIM_MODEL_A100_SXM4_80GB},
    {"a100-sxm4", SIM_MODEL_A100_SXM4_80GB}, {"a100-sxm4-80gb", SIM_MODEL_A100_SXM4_80GB},
    {"rtx6000", SIM_MODEL_RTX6000_ADA},      {"rtx-6000-ada", SIM_MODEL_RTX6000_ADA},
};

static int eq_ci(const char *s, size_t n, const char *c) {
    return strlen(c) == n && (n == 0 || strncasecmp(s, c, n) == 0);
}

const sim_model *sim_model_get(sim_model_id id) {
    if ((unsigned)id >= SIM_MODEL__COUNT) return NULL;
    return &models[id];
}

const sim_model *sim_model_find(const char *s, size_t n) {
    if (!s) return NULL;
    for (unsigned i = 0; i < SIM_MODEL__COUNT; i++)
        if (eq_ci(s, n, models[i].key) || eq_ci(s, n, models[i].name)) return &models[i];
    for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
        if (eq_ci(s, n, aliases[i].alias)) return &models[aliases[i].id];
    return NULL;
}

const sim_mig_profile *sim_mig_profile_find(const sim_model *m, const char *name, size_t n) {
    if (!m || !name) return NULL;
    if (n > 4 && strncasecmp(name, "MIG ", 4) == 0) {
        name += 4;
        n -= 4;
    }
    for (unsigned i = 0; i < m->mig_profile_count; i++)
        if (eq_ci(name, n, m->mig_profiles[i].name)) return &m->mig_profiles[i];
    return NULL;
}
