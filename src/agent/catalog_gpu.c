/* catalog_gpu.c -- the gpu section of the metric catalog (see catalog.h).
 *
 * One entry per GPU_M_* (gpu_int.h), by designated initializer. The
 * DCGM_* entries copy dcgm-exporter's names, types and help text exactly
 * (etc/default-counters.csv; gpu-metrics.md 1.1), units included, so
 * dashboard 12239 and existing alerts work unchanged. Kelvin's own
 * metrics are kelvin_gpu_* in base units with unit suffixes.
 *
 * `source` names the NVML call or field id behind the number; the
 * collector (gpu.c) reads exactly that.
 */
#include "agent/catalog.h"
#include "agent/gpu_int.h"

#define DEV "nvmlDeviceGet"

const agent_metric agent__gpu_metrics[GPU_M__COUNT] = {
    /* ---- dcgm-exporter ---- */
    [GPU_M_SM_CLOCK] = {"DCGM_FI_DEV_SM_CLOCK", EXPO_GAUGE, "MHz", "SM clock frequency (in MHz).", "",
                        DEV "ClockInfo(NVML_CLOCK_SM)"},
    [GPU_M_MEM_CLOCK] = {"DCGM_FI_DEV_MEM_CLOCK", EXPO_GAUGE, "MHz", "Memory clock frequency (in MHz).", "",
                         DEV "ClockInfo(NVML_CLOCK_MEM)"},
    [GPU_M_MEMORY_TEMP] = {"DCGM_FI_DEV_MEMORY_TEMP", EXPO_GAUGE, "C", "Memory temperature (in C).", "",
                           "field NVML_FI_DEV_MEMORY_TEMP (82), per-field status checked; >200 dropped"},
    [GPU_M_GPU_TEMP] = {"DCGM_FI_DEV_GPU_TEMP", EXPO_GAUGE, "C", "GPU temperature (in C).", "",
                        DEV "TemperatureV, else " DEV "Temperature (NVML_TEMPERATURE_GPU); >200 dropped"},
    [GPU_M_POWER_USAGE] = {"DCGM_FI_DEV_POWER_USAGE", EXPO_GAUGE, "W", "Power draw (in W).", "",
                           DEV "PowerUsage (mW / 1000)"},
    [GPU_M_TOTAL_ENERGY_CONSUMPTION] = {"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", EXPO_COUNTER, "mJ",
                                        "Total energy consumption since boot (in mJ).", "",
                                        "field NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION (83), else " DEV
                                        "TotalEnergyConsumption"},
    [GPU_M_PCIE_REPLAY_COUNTER] = {"DCGM_FI_DEV_PCIE_REPLAY_COUNTER", EXPO_COUNTER, "",
                                   "Total number of PCIe retries.", "",
                                   "field NVML_FI_DEV_PCIE_REPLAY_COUNTER (94), else " DEV
                                   "PcieReplayCounter"},
    [GPU_M_GPU_UTIL] = {"DCGM_FI_DEV_GPU_UTIL", EXPO_GAUGE, "%", "GPU utilization (in %).", "",
                        DEV "UtilizationRates .gpu (not under MIG)"},
    [GPU_M_MEM_COPY_UTIL] = {"DCGM_FI_DEV_MEM_COPY_UTIL", EXPO_GAUGE, "%", "Memory utilization (in %).", "",
                             DEV "UtilizationRates .memory (not under MIG)"},
    [GPU_M_ENC_UTIL] = {"DCGM_FI_DEV_ENC_UTIL", EXPO_GAUGE, "%", "Encoder utilization (in %).", "",
                        DEV "EncoderUtilization (not under MIG)"},
    [GPU_M_DEC_UTIL] = {"DCGM_FI_DEV_DEC_UTIL", EXPO_GAUGE, "%", "Decoder utilization (in %).", "",
                        DEV "DecoderUtilization (not under MIG)"},
    [GPU_M_XID_ERRORS] = {"DCGM_FI_DEV_XID_ERRORS", EXPO_GAUGE, "",
                          "Value of the last XID error encountered.", "err_code,err_msg",
                          "last XID from nvmlEventSetWait_v2 (XidCriticalError) and the kernel log; 0 while "
                          "none was seen and a source is watching"},
    [GPU_M_POWER_VIOLATION] = {"DCGM_FI_DEV_POWER_VIOLATION", EXPO_COUNTER, "ns",
                               "Throttling duration due to power constraints (in ns).", "",
                               "field NVML_FI_DEV_PERF_POLICY_POWER (74), else " DEV "ViolationStatus"},
    [GPU_M_THERMAL_VIOLATION] = {"DCGM_FI_DEV_THERMAL_VIOLATION", EXPO_COUNTER, "ns",
                                 "Throttling duration due to thermal constraints (in ns).", "",
                                 "field NVML_FI_DEV_PERF_POLICY_THERMAL (75), else " DEV "ViolationStatus"},
    [GPU_M_SYNC_BOOST_VIOLATION] = {"DCGM_FI_DEV_SYNC_BOOST_VIOLATION", EXPO_COUNTER, "ns",
                                    "Throttling duration due to sync-boost constraints (in ns).", "",
                                    "field NVML_FI_DEV_PERF_POLICY_SYNC_BOOST (76), else " DEV
                                    "ViolationStatus"},
    [GPU_M_BOARD_LIMIT_VIOLATION] = {"DCGM_FI_DEV_BOARD_LIMIT_VIOLATION", EXPO_COUNTER, "ns",
                                     "Throttling duration due to board limit constraints (in ns).", "",
                                     "field NVML_FI_DEV_PERF_POLICY_BOARD_LIMIT (77), else " DEV
                                     "ViolationStatus"},
    [GPU_M_LOW_UTIL_VIOLATION] = {"DCGM_FI_DEV_LOW_UTIL_VIOLATION", EXPO_COUNTER, "ns",
                                  "Throttling duration due to low utilization (in ns).", "",
                                  "field NVML_FI_DEV_PERF_POLICY_LOW_UTILIZATION (78), else " DEV
                                  "ViolationStatus"},
    [GPU_M_RELIABILITY_VIOLATION] = {"DCGM_FI_DEV_RELIABILITY_VIOLATION", EXPO_COUNTER, "ns",
                                     "Throttling duration due to reliability constraints (in ns).", "",
                                     "field NVML_FI_DEV_PERF_POLICY_RELIABILITY (79), else " DEV
                                     "ViolationStatus"},
    [GPU_M_FB_FREE] = {"DCGM_FI_DEV_FB_FREE", EXPO_GAUGE, "MiB", "Framebuffer memory free (in MiB).", "",
                       DEV "MemoryInfo_v2 (version 0x02000028), else " DEV
                           "MemoryInfo; MIG: the instance's handle"},
    [GPU_M_FB_USED] = {"DCGM_FI_DEV_FB_USED", EXPO_GAUGE, "MiB", "Framebuffer memory used (in MiB).", "",
                       DEV "MemoryInfo_v2 .used, else " DEV "MemoryInfo .used; MIG: the instance's handle"},
    [GPU_M_FB_RESERVED] = {"DCGM_FI_DEV_FB_RESERVED", EXPO_GAUGE, "MiB",
                           "Framebuffer memory reserved (in MiB).", "",
                           DEV "MemoryInfo_v2 .reserved (absent with the v1 call)"},
    [GPU_M_ECC_SBE_VOL_TOTAL] = {"DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", EXPO_COUNTER, "",
                                 "Total number of single-bit volatile ECC errors.", "",
                                 "field NVML_FI_DEV_ECC_SBE_VOL_TOTAL (3), else " DEV "TotalEccErrors"},
    [GPU_M_ECC_DBE_VOL_TOTAL] = {"DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", EXPO_COUNTER, "",
                                 "Total number of double-bit volatile ECC errors.", "",
                                 "field NVML_FI_DEV_ECC_DBE_VOL_TOTAL (4), else " DEV "TotalEccErrors"},
    [GPU_M_ECC_SBE_AGG_TOTAL] = {"DCGM_FI_DEV_ECC_SBE_AGG_TOTAL", EXPO_COUNTER, "",
                                 "Total number of single-bit persistent ECC errors.", "",
                                 "field NVML_FI_DEV_ECC_SBE_AGG_TOTAL (5), else " DEV "TotalEccErrors"},
    [GPU_M_ECC_DBE_AGG_TOTAL] = {"DCGM_FI_DEV_ECC_DBE_AGG_TOTAL", EXPO_COUNTER, "",
                                 "Total number of double-bit persistent ECC errors.", "",
                                 "field NVML_FI_DEV_ECC_DBE_AGG_TOTAL (6), else " DEV "TotalEccErrors"},
    [GPU_M_RETIRED_SBE] = {"DCGM_FI_DEV_RETIRED_SBE", EXPO_COUNTER, "",
                           "Total number of retired pages due to single-bit errors.", "",
                           "field NVML_FI_DEV_RETIRED_SBE (29), else " DEV "RetiredPages"},
    [GPU_M_RETIRED_DBE] = {"DCGM_FI_DEV_RETIRED_DBE", EXPO_COUNTER, "",
                           "Total number of retired pages due to double-bit errors.", "",
                           "field NVML_FI_DEV_RETIRED_DBE (30), else " DEV "RetiredPages"},
    [GPU_M_RETIRED_PENDING] = {"DCGM_FI_DEV_RETIRED_PENDING", EXPO_COUNTER, "",
                               "Total number of pages pending retirement.", "",
                               "field NVML_FI_DEV_RETIRED_PENDING (31), else " DEV
                               "RetiredPagesPendingStatus"},
    [GPU_M_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL] = {"DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL",
                                                 EXPO_COUNTER, "",
                                                 "Total number of NVLink flow-control CRC errors.", "",
                                                 "field NVML_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL (38)"},
    [GPU_M_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL] = {"DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL",
                                                 EXPO_COUNTER, "", "Total number of NVLink data CRC errors.",
                                                 "",
                                                 "field NVML_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL (45)"},
    [GPU_M_NVLINK_REPLAY_ERROR_COUNT_TOTAL] = {"DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL", EXPO_COUNTER,
                                               "", "Total number of NVLink retries.", "",
                                               "field NVML_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL (52)"},
    [GPU_M_NVLINK_RECOVERY_ERROR_COUNT_TOTAL] = {"DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL",
                                                 EXPO_COUNTER, "", "Total number of NVLink recovery errors.",
                                                 "",
                                                 "field NVML_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL (59)"},
    [GPU_M_NVLINK_BANDWIDTH_TOTAL] =
        {"DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", EXPO_COUNTER, "",
         "Total number of NVLink bandwidth counters for all lanes.", "",
         "rate as DCGM computes it: delta(fields 138+139, KiB, all links) / seconds / "
         "1000; absent on the first cycle (dcgm-exporter serves 0)"},
    [GPU_M_VGPU_LICENSE_STATUS] = {"DCGM_FI_DEV_VGPU_LICENSE_STATUS", EXPO_GAUGE, "", "vGPU License status",
                                   "",
                                   DEV "GridLicensableFeatures_v4: 0 when licensing is unsupported, else the "
                                       "vGPU feature's state"},
    [GPU_M_UNCORRECTABLE_REMAPPED_ROWS] = {"DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", EXPO_COUNTER, "",
                                           "Number of remapped rows for uncorrectable errors", "",
                                           "field NVML_FI_DEV_REMAPPED_UNC (143), else " DEV "RemappedRows"},
    [GPU_M_CORRECTABLE_REMAPPED_ROWS] = {"DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", EXPO_COUNTER, "",
                                         "Number of remapped rows for correctable errors", "",
                                         "field NVML_FI_DEV_REMAPPED_COR (142), else " DEV "RemappedRows"},
    [GPU_M_ROW_REMAP_FAILURE] = {"DCGM_FI_DEV_ROW_REMAP_FAILURE", EXPO_GAUGE, "",
                                 "Whether remapping of rows has failed", "",
                                 "field NVML_FI_DEV_REMAPPED_FAILURE (145), else " DEV "RemappedRows"},
    [GPU_M_PROF_GR_ENGINE_ACTIVE] =
        {"DCGM_FI_PROF_GR_ENGINE_ACTIVE", EXPO_GAUGE, "ratio", "Ratio of time the graphics engine is active.",
         "", "GPM NVML_GPM_METRIC_GRAPHICS_UTIL (1) / 100; Hopper+; MIG: per instance"},
    [GPU_M_PROF_SM_ACTIVE] = {"DCGM_FI_PROF_SM_ACTIVE", EXPO_GAUGE, "ratio",
                              "The ratio of cycles an SM has at least 1 warp assigned.", "",
                              "GPM NVML_GPM_METRIC_SM_UTIL (2) / 100"},
    [GPU_M_PROF_SM_OCCUPANCY] = {"DCGM_FI_PROF_SM_OCCUPANCY", EXPO_GAUGE, "ratio",
                                 "The ratio of number of warps resident on an SM.", "",
                                 "GPM NVML_GPM_METRIC_SM_OCCUPANCY (3) / 100"},
    [GPU_M_PROF_PIPE_TENSOR_ACTIVE] = {"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", EXPO_GAUGE, "ratio",
                                       "Ratio of cycles the tensor (HMMA) pipe is active.", "",
                                       "GPM NVML_GPM_METRIC_ANY_TENSOR_UTIL (5) / 100"},
    [GPU_M_PROF_DRAM_ACTIVE] =
        {"DCGM_FI_PROF_DRAM_ACTIVE", EXPO_GAUGE, "ratio",
         "Ratio of cycles the device memory interface is active sending or receiving data.", "",
         "GPM NVML_GPM_METRIC_DRAM_BW_UTIL (10) / 100"},
    [GPU_M_PROF_PIPE_FP64_ACTIVE] = {"DCGM_FI_PROF_PIPE_FP64_ACTIVE", EXPO_GAUGE, "ratio",
                                     "Ratio of cycles the fp64 pipes are active.", "",
                                     "GPM NVML_GPM_METRIC_FP64_UTIL (11) / 100"},
    [GPU_M_PROF_PIPE_FP32_ACTIVE] = {"DCGM_FI_PROF_PIPE_FP32_ACTIVE", EXPO_GAUGE, "ratio",
                                     "Ratio of cycles the fp32 pipes are active.", "",
                                     "GPM NVML_GPM_METRIC_FP32_UTIL (12) / 100"},
    [GPU_M_PROF_PIPE_FP16_ACTIVE] = {"DCGM_FI_PROF_PIPE_FP16_ACTIVE", EXPO_GAUGE, "ratio",
                                     "Ratio of cycles the fp16 pipes are active.", "",
                                     "GPM NVML_GPM_METRIC_FP16_UTIL (13) / 100"},
    [GPU_M_PROF_PCIE_TX_BYTES] =
        {"DCGM_FI_PROF_PCIE_TX_BYTES", EXPO_GAUGE, "bytes/s",
         "The rate of data transmitted over the PCIe bus - including both protocol headers "
         "and data payloads - in bytes per second.",
         "", "GPM NVML_GPM_METRIC_PCIE_TX_PER_SEC (20), MiB/s x 1048576"},
    [GPU_M_PROF_PCIE_RX_BYTES] =
        {"DCGM_FI_PROF_PCIE_RX_BYTES", EXPO_GAUGE, "bytes/s",
         "The rate of data received over the PCIe bus - including both protocol headers "
         "and data payloads - in bytes per second.",
         "", "GPM NVML_GPM_METRIC_PCIE_RX_PER_SEC (21), MiB/s x 1048576"},

    /* ---- Kelvin ---- */
    [GPU_M_K_NVML_UP] =
        {"kelvin_gpu_nvml_up", EXPO_GAUGE, "",
         "Whether NVML loaded and initialised (1) or not (0, with the reason). Carries no GPU labels.",
         "reason,simulated", "nvml_open + nvmlInit_v2; retried every 60 s while down"},
    [GPU_M_K_LOST] =
        {"kelvin_gpu_lost", EXPO_GAUGE, "",
         "Whether the GPU returned NVML_ERROR_GPU_IS_LOST (1); its other metrics are then absent.", "",
         "any NVML call returning NVML_ERROR_GPU_IS_LOST (15)"},
    [GPU_M_K_INFO] = {"kelvin_gpu_info", EXPO_GAUGE, "", "GPU identity; always 1.",
                      "driver_version,nvml_version,brand,serial,vbios_version",
                      "nvmlSystemGetDriverVersion, nvmlSystemGetNVMLVersion, " DEV "Brand, " DEV
                      "Serial, " DEV "VbiosVersion (each label left out when unavailable)"},
    [GPU_M_K_MEMORY_TEMP] = {"kelvin_gpu_memory_temperature_celsius", EXPO_GAUGE, "C",
                             "Memory (HBM junction) temperature in degrees Celsius.", "",
                             "field NVML_FI_DEV_MEMORY_TEMP (82)"},
    [GPU_M_K_POWER_LIMIT] = {"kelvin_gpu_power_limit_watts", EXPO_GAUGE, "W",
                             "Power management limit in watts.", "",
                             DEV "PowerManagementLimit (mW / 1000), static"},
    [GPU_M_K_ENFORCED_POWER_LIMIT] = {"kelvin_gpu_power_enforced_limit_watts", EXPO_GAUGE, "W",
                                      "Power limit the driver enforces (the lowest of all limits) in watts.",
                                      "", DEV "EnforcedPowerLimit (mW / 1000), static"},
    [GPU_M_K_CLOCK_MAX] = {"kelvin_gpu_clock_max_hertz", EXPO_GAUGE, "Hz",
                           "Maximum clock frequency in hertz.", "clock",
                           DEV "MaxClockInfo (graphics, sm, mem, video; MHz x 1e6), static"},
    [GPU_M_K_CLOCK_EVENT] =
        {"kelvin_gpu_clock_event_active", EXPO_GAUGE, "",
         "Whether a clock event (throttle) reason is active (1) or not (0); one series per "
         "reason the GPU supports.",
         "reason",
         DEV "CurrentClocksEventReasons, else " DEV "CurrentClocksThrottleReasons, masked by "
             "the supported reasons"},
    [GPU_M_K_VIOLATION] = {"kelvin_gpu_violation_seconds_total", EXPO_COUNTER, "seconds",
                           "Time the GPU was held below its clocks by a policy, in seconds.", "policy",
                           "fields NVML_FI_DEV_PERF_POLICY_* (74-79) in ns / 1e9"},
    [GPU_M_K_ECC_VOLATILE] =
        {"kelvin_gpu_ecc_volatile_errors_total", EXPO_COUNTER, "", "ECC errors since the driver loaded.",
         "type", "fields NVML_FI_DEV_ECC_SBE_VOL_TOTAL (3, corrected), _DBE_VOL_TOTAL (4, uncorrected)"},
    [GPU_M_K_ECC_AGGREGATE] =
        {"kelvin_gpu_ecc_aggregate_errors_total", EXPO_COUNTER, "", "ECC errors over the GPU's lifetime.",
         "type", "fields NVML_FI_DEV_ECC_SBE_AGG_TOTAL (5, corrected), _DBE_AGG_TOTAL (6, uncorrected)"},
    [GPU_M_K_RETIRED_PAGES] = {"kelvin_gpu_retired_pages_total", EXPO_COUNTER, "",
                               "Memory pages retired, by cause.", "cause",
                               "fields NVML_FI_DEV_RETIRED_SBE (29, single_bit), _DBE (30, double_bit)"},
    [GPU_M_K_RETIRED_PENDING] = {"kelvin_gpu_retired_pages_pending", EXPO_GAUGE, "",
                                 "Whether pages are pending retirement (1) until the next reboot.", "",
                                 "field NVML_FI_DEV_RETIRED_PENDING (31)"},
    [GPU_M_K_REMAPPED_ROWS] =
        {"kelvin_gpu_remapped_rows_total", EXPO_COUNTER, "",
         "Memory rows remapped, by the kind of error that caused it.", "type",
         "fields NVML_FI_DEV_REMAPPED_COR (142, correctable), _UNC (143, uncorrectable)"},
    [GPU_M_K_REMAP_PENDING] = {"kelvin_gpu_remapped_rows_pending", EXPO_GAUGE, "",
                               "Whether a row remapping is pending (1) until the GPU is reset.", "",
                               "field NVML_FI_DEV_REMAPPED_PENDING (144)"},
    [GPU_M_K_REMAP_FAILED] = {"kelvin_gpu_remapped_rows_failed", EXPO_GAUGE, "",
                              "Whether a row remapping has failed (1).", "",
                              "field NVML_FI_DEV_REMAPPED_FAILURE (145)"},
    [GPU_M_K_PCIE_REPLAYS] = {"kelvin_gpu_pcie_replays_total", EXPO_COUNTER, "", "PCIe replays (retries).",
                              "", "field NVML_FI_DEV_PCIE_REPLAY_COUNTER (94)"},
    [GPU_M_K_PCIE_BYTES] = {"kelvin_gpu_pcie_bytes_total", EXPO_COUNTER, "bytes",
                            "Bytes moved over PCIe, by direction.", "direction",
                            "fields NVML_FI_DEV_PCIE_COUNT_TX_BYTES (197), _RX_BYTES (198); R555+"},
    [GPU_M_K_NVLINK_ERRORS] =
        {"kelvin_gpu_nvlink_errors_total", EXPO_COUNTER, "", "NVLink errors over all links, by type.", "type",
         "fields NVML_FI_DEV_NVLINK_*_COUNT_TOTAL (38 crc_flit, 45 crc_data, 52 replay, "
         "59 recovery)"},
    [GPU_M_K_NVLINK_BYTES] = {"kelvin_gpu_nvlink_bytes_total", EXPO_COUNTER, "bytes",
                              "NVLink data bytes over all links, by direction.", "direction",
                              "fields NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX (138) / _RX (139), KiB x 1024"},
    [GPU_M_K_FAN_SPEED] = {"kelvin_gpu_fan_speed_ratio", EXPO_GAUGE, "ratio",
                           "Fan speed as a fraction of its maximum.", "fan",
                           DEV "NumFans + " DEV "FanSpeed_v2, else " DEV "FanSpeed (fan 0); % / 100"},
    [GPU_M_K_ENC_UTIL] = {"kelvin_gpu_encoder_utilization_ratio", EXPO_GAUGE, "ratio",
                          "Video encoder utilisation.", "", DEV "EncoderUtilization / 100"},
    [GPU_M_K_DEC_UTIL] = {"kelvin_gpu_decoder_utilization_ratio", EXPO_GAUGE, "ratio",
                          "Video decoder utilisation.", "", DEV "DecoderUtilization / 100"},
    [GPU_M_K_SM_ACTIVE] = {"kelvin_gpu_sm_active_ratio", EXPO_GAUGE, "ratio",
                           "Fraction of cycles an SM has at least one warp assigned.", "",
                           "GPM NVML_GPM_METRIC_SM_UTIL (2) / 100; Hopper+"},
    [GPU_M_K_SM_OCCUPANCY] = {"kelvin_gpu_sm_occupancy_ratio", EXPO_GAUGE, "ratio",
                              "Warps resident on an SM as a fraction of the maximum.", "",
                              "GPM NVML_GPM_METRIC_SM_OCCUPANCY (3) / 100; Hopper+"},
    [GPU_M_K_TENSOR_ACTIVE] = {"kelvin_gpu_tensor_active_ratio", EXPO_GAUGE, "ratio",
                               "Fraction of cycles any tensor pipe is active.", "",
                               "GPM NVML_GPM_METRIC_ANY_TENSOR_UTIL (5) / 100; Hopper+"},
    [GPU_M_K_DRAM_ACTIVE] = {"kelvin_gpu_dram_active_ratio", EXPO_GAUGE, "ratio",
                             "Fraction of cycles the memory interface is busy.", "",
                             "GPM NVML_GPM_METRIC_DRAM_BW_UTIL (10) / 100; Hopper+"},
    [GPU_M_K_PIPE_ACTIVE] = {"kelvin_gpu_pipe_active_ratio", EXPO_GAUGE, "ratio",
                             "Fraction of cycles a floating-point pipe is active.", "pipe",
                             "GPM NVML_GPM_METRIC_FP64_UTIL (11), FP32 (12), FP16 (13) / 100; Hopper+"},
    [GPU_M_K_PCIE_THROUGHPUT] =
        {"kelvin_gpu_pcie_throughput_bytes_per_second", EXPO_GAUGE, "bytes/s",
         "PCIe throughput including protocol headers, by direction.", "direction",
         "GPM NVML_GPM_METRIC_PCIE_TX_PER_SEC (20) / RX (21), MiB/s x 1048576; Hopper+"},
    [GPU_M_K_NVLINK_THROUGHPUT] =
        {"kelvin_gpu_nvlink_throughput_bytes_per_second", EXPO_GAUGE, "bytes/s",
         "NVLink throughput over all links, by direction.", "direction",
         "GPM NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC (61) / RX (60), MiB/s x 1048576; "
         "Hopper+"},
    [GPU_M_K_XID_ERRORS] = {"kelvin_gpu_xid_errors_total", EXPO_COUNTER, "", "XID errors seen, by XID code.",
                            "xid",
                            "NVML XidCriticalError events and the kernel log, deduplicated (agent/xid.h)"},
    [GPU_M_K_PROCESS_MEMORY] = {"kelvin_gpu_process_memory_bytes", EXPO_GAUGE, "bytes",
                                "GPU memory used by a process, with its workload when known.",
                                "pid,command,pod_uid,container_id,slurm_job_id",
                                DEV "RunningProcessDetailList, else " DEV
                                    "ComputeRunningProcesses_v3 (stride "
                                    "probed), _v2, v1; /proc/<pid>/comm and cgroup (empty labels left out)"},
};

static const uint8_t metric_default[GPU_M__COUNT] = {
#define GPU__M_DEF(id, def, scope) [GPU_M_##id] = (def),
    GPU_METRICS(GPU__M_DEF)
#undef GPU__M_DEF
};

static const uint8_t metric_scope[GPU_M__COUNT] = {
#define GPU__M_SCOPE(id, def, scope) [GPU_M_##id] = (scope),
    GPU_METRICS(GPU__M_SCOPE)
#undef GPU__M_SCOPE
};

int agent__gpu_metric_default(int m) {
    return m >= 0 && m < GPU_M__COUNT ? metric_default[m] : 0;
}
int agent__gpu_metric_scope(int m) {
    return m >= 0 && m < GPU_M__COUNT ? metric_scope[m] : 0;
}

const char *const agent__gpu_label_names[GPU_L__COUNT] = {
    [GPU_L_DRIVER_VERSION] = "DCGM_FI_DRIVER_VERSION",
    [GPU_L_NVML_VERSION] = "DCGM_FI_NVML_VERSION",
    [GPU_L_BRAND] = "DCGM_FI_DEV_BRAND",
    [GPU_L_SERIAL] = "DCGM_FI_DEV_SERIAL",
    [GPU_L_OEM_INFOROM_VER] = "DCGM_FI_DEV_OEM_INFOROM_VER",
    [GPU_L_ECC_INFOROM_VER] = "DCGM_FI_DEV_ECC_INFOROM_VER",
    [GPU_L_POWER_INFOROM_VER] = "DCGM_FI_DEV_POWER_INFOROM_VER",
    [GPU_L_INFOROM_IMAGE_VER] = "DCGM_FI_DEV_INFOROM_IMAGE_VER",
    [GPU_L_VBIOS_VERSION] = "DCGM_FI_DEV_VBIOS_VERSION",
};

const agent_catalog_section agent_catalog_gpu = {
    .title = "GPU: dcgm-exporter's metrics and Kelvin's",
    .collector = "gpu",
    .entity_labels = "gpu, UUID, pci_bus_id, device, modelName, GPU_I_PROFILE and GPU_I_ID (MIG instances), "
                     "Hostname, DCGM_FI_DRIVER_VERSION; simulated=\"true\" on every series when the GPUs are "
                     "simulated (--gpu.simulate)",
    .intro =
        "Read from NVML (loaded with dlopen) every collection interval; static data (names, limits, driver "
        "version) about every 60 s. The set is chosen by a counters file in dcgm-exporter's CSV format "
        "(--collector.gpu.counters-file); the default is dcgm-exporter's default set plus every kelvin_gpu_* "
        "metric. `label` rows (DCGM_FI_DRIVER_VERSION, DCGM_FI_NVML_VERSION, DCGM_FI_DEV_BRAND, "
        "DCGM_FI_DEV_SERIAL, DCGM_FI_DEV_OEM_INFOROM_VER, DCGM_FI_DEV_ECC_INFOROM_VER, "
        "DCGM_FI_DEV_POWER_INFOROM_VER, DCGM_FI_DEV_INFOROM_IMAGE_VER, DCGM_FI_DEV_VBIOS_VERSION) become "
        "labels on every GPU metric. A value the GPU cannot report is left out, never served as 0. With MIG "
        "enabled, memory, profiling and process metrics are served per instance (GPU_I_PROFILE, GPU_I_ID) "
        "and the rest per GPU. Profiling metrics (DCGM_FI_PROF_*) come from NVML GPM, so Hopper and newer.",
    .metrics = agent__gpu_metrics,
    .count = GPU_M__COUNT,
};
