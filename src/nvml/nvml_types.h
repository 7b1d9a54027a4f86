/* nvml_types.h -- NVML's C ABI as Kelvin uses it, declared by us.
 *
 * Kelvin never includes NVIDIA's nvml.h: like nvtop, it declares the part of
 * the ABI it needs and loads libnvidia-ml.so.1 with dlopen (src/nvml/nvml.c).
 * The simulated library (src/simnvml/) implements exactly the symbols listed
 * in NVML_FUNCTIONS below, from these same declarations, so agent and fake
 * cannot drift apart.
 *
 * Contents, in order: return codes (NVML_RETURN_MAP), opaque handle types,
 * enums and constants (clock types, sensors, field ids, event types, clock
 * event reason bits, ECC / page retirement / NVLink enums, GPM metric ids, MIG
 * constants), struct layouts (gpu-metrics.md 2.4, x86_64/LP64; checked by
 * _Static_assert on size and offsets), struct version macros, and the
 * function list NVML_FUNCTIONS(X) / NVML_STRING_FUNCTIONS(X).
 *
 * Invariants:
 *  - Every value here is NVML's own ABI value; never renumber.
 *  - Every struct matches NVML's layout byte for byte (asserted below).
 *  - Symbol names in the function lists are the exact exported names: the
 *    versioned name (nvmlInit_v2) and the older unversioned fallback
 *    (nvmlInit) are separate entries because they are separate symbols with
 *    different semantics (see gpu-metrics.md 2.5).
 *  - Prototypes are declared for every listed symbol so that the simulator
 *    gets signature checking; Kelvin's agent never calls them directly (it
 *    calls through the pointers resolved by nvml_open, so it never links
 *    against libnvidia-ml).
 *
 * This header compiles alone and has no code.
 */
#ifndef KELVIN_NVML_TYPES_H
#define KELVIN_NVML_TYPES_H

#include <stddef.h>

/* ------------------------------------------------------------------------ */
/* Return codes                                                              */

#define NVML_RETURN_MAP(X)                                                                                   \
    X(NVML_SUCCESS, 0)                                                                                       \
    X(NVML_ERROR_UNINITIALIZED, 1)                                                                           \
    X(NVML_ERROR_INVALID_ARGUMENT, 2)                                                                        \
    X(NVML_ERROR_NOT_SUPPORTED, 3)                                                                           \
    X(NVML_ERROR_NO_PERMISSION, 4)                                                                           \
    X(NVML_ERROR_ALREADY_INITIALIZED, 5)                                                                     \
    X(NVML_ERROR_NOT_FOUND, 6)                                                                               \
    X(NVML_ERROR_INSUFFICIENT_SIZE, 7)                                                                       \
    X(NVML_ERROR_INSUFFICIENT_POWER, 8)                                                                      \
    X(NVML_ERROR_DRIVER_NOT_LOADED, 9)                                                                       \
    X(NVML_ERROR_TIMEOUT, 10)                                                                                \
    X(NVML_ERROR_IRQ_ISSUE, 11)                                                                              \
    X(NVML_ERROR_LIBRARY_NOT_FOUND, 12)                                                                      \
    X(NVML_ERROR_FUNCTION_NOT_FOUND, 13)                                                                     \
    X(NVML_ERROR_CORRUPTED_INFOROM, 14)                                                                      \
    X(NVML_ERROR_GPU_IS_LOST, 15)                                                                            \
    X(NVML_ERROR_RESET_REQUIRED, 16)                                                                         \
    X(NVML_ERROR_OPERATING_SYSTEM, 17)                                                                       \
    X(NVML_ERROR_LIB_RM_VERSION_MISMATCH, 18)                                                                \
    X(NVML_ERROR_IN_USE, 19)                                                                                 \
    X(NVML_ERROR_MEMORY, 20)                                                                                 \
    X(NVML_ERROR_NO_DATA, 21)                                                                                \
    X(NVML_ERROR_VGPU_ECC_NOT_SUPPORTED, 22)                                                                 \
    X(NVML_ERROR_INSUFFICIENT_RESOURCES, 23)                                                                 \
    X(NVML_ERROR_FREQ_NOT_SUPPORTED, 24)                                                                     \
    X(NVML_ERROR_ARGUMENT_VERSION_MISMATCH, 25)                                                              \
    X(NVML_ERROR_DEPRECATED, 26)                                                                             \
    X(NVML_ERROR_NOT_READY, 27)                                                                              \
    X(NVML_ERROR_GPU_NOT_FOUND, 28)                                                                          \
    X(NVML_ERROR_INVALID_STATE, 29)                                                                          \
    X(NVML_ERROR_RESET_TYPE_NOT_SUPPORTED, 30)                                                               \
    X(NVML_ERROR_UNKNOWN, 999)

typedef enum nvmlReturn_enum {
#define NVML__RET_ENUM(name, code) name = (code),
    NVML_RETURN_MAP(NVML__RET_ENUM)
#undef NVML__RET_ENUM
} nvmlReturn_t;

/* ------------------------------------------------------------------------ */
/* Opaque handles: each is a pointer to an incomplete struct (pointer size). */

typedef struct nvmlDevice_st *nvmlDevice_t;
typedef struct nvmlEventSet_st *nvmlEventSet_t;
typedef struct nvmlGpmSample_st *nvmlGpmSample_t;
typedef struct nvmlGpuInstance_st *nvmlGpuInstance_t;

/* ------------------------------------------------------------------------ */
/* Constants and enums                                                       */

/* nvmlInitWithFlags */
#define NVML_INIT_FLAG_NO_GPUS   1u
#define NVML_INIT_FLAG_NO_ATTACH 2u

/* "no value" marker in 64-bit outputs (e.g. process usedGpuMemory). */
#define NVML_VALUE_NOT_AVAILABLE (~0ULL)

/* Buffer sizes (bytes, including the NUL). */
#define NVML_DEVICE_UUID_V2_BUFFER_SIZE         96
#define NVML_DEVICE_NAME_V2_BUFFER_SIZE         96
#define NVML_DEVICE_SERIAL_BUFFER_SIZE          30
#define NVML_DEVICE_VBIOS_VERSION_BUFFER_SIZE   32
#define NVML_DEVICE_INFOROM_VERSION_BUFFER_SIZE 16
#define NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE      32
#define NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE   16
#define NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE  80
#define NVML_SYSTEM_NVML_VERSION_BUFFER_SIZE    80

/* Struct version encoding: sizeof(struct) | (version << 24). */
#define NVML_STRUCT_VERSION(type, ver) ((unsigned int)(sizeof(type) | ((unsigned int)(ver) << 24)))

typedef enum nvmlEnableState_enum {
    NVML_FEATURE_DISABLED = 0,
    NVML_FEATURE_ENABLED = 1,
} nvmlEnableState_t;

typedef enum nvmlClockType_enum {
    NVML_CLOCK_GRAPHICS = 0,
    NVML_CLOCK_SM = 1,
    NVML_CLOCK_MEM = 2,
    NVML_CLOCK_VIDEO = 3,
    NVML_CLOCK_COUNT = 4,
} nvmlClockType_t;

typedef enum nvmlClockId_enum {
    NVML_CLOCK_ID_CURRENT = 0,
    NVML_CLOCK_ID_APP_CLOCK_TARGET = 1,
    NVML_CLOCK_ID_APP_CLOCK_DEFAULT = 2,
    NVML_CLOCK_ID_CUSTOMER_BOOST_MAX = 3,
    NVML_CLOCK_ID_COUNT = 4,
} nvmlClockId_t;

typedef enum nvmlTemperatureSensors_enum {
    NVML_TEMPERATURE_GPU = 0,
    NVML_TEMPERATURE_COUNT = 1,
} nvmlTemperatureSensors_t;

typedef enum nvmlBrandType_enum {
    NVML_BRAND_UNKNOWN = 0,
    NVML_BRAND_QUADRO = 1,
    NVML_BRAND_TESLA = 2,
    NVML_BRAND_NVS = 3,
    NVML_BRAND_GRID = 4,
    NVML_BRAND_GEFORCE = 5,
    NVML_BRAND_TITAN = 6,
    NVML_BRAND_NVIDIA_VAPPS = 7,
    NVML_BRAND_NVIDIA_VPC = 8,
    NVML_BRAND_NVIDIA_VCS = 9,
    NVML_BRAND_NVIDIA_VWS = 10,
    NVML_BRAND_NVIDIA_CLOUD_GAMING = 11,
    NVML_BRAND_QUADRO_RTX = 12,
    NVML_BRAND_NVIDIA_RTX = 13,
    NVML_BRAND_NVIDIA = 14,
    NVML_BRAND_GEFORCE_RTX = 15,
    NVML_BRAND_TITAN_RTX = 16,
    NVML_BRAND_COUNT = 18,
} nvmlBrandType_t;

typedef enum nvmlInforomObject_enum {
    NVML_INFOROM_OEM = 0,
    NVML_INFOROM_ECC = 1,
    NVML_INFOROM_POWER = 2,
    NVML_INFOROM_COUNT = 3,
} nvmlInforomObject_t;

typedef enum nvmlPerfPolicyType_enum {
    NVML_PERF_POLICY_POWER = 0,
    NVML_PERF_POLICY_THERMAL = 1,
    NVML_PERF_POLICY_SYNC_BOOST = 2,
    NVML_PERF_POLICY_BOARD_LIMIT = 3,
    NVML_PERF_POLICY_LOW_UTILIZATION = 4,
    NVML_PERF_POLICY_RELIABILITY = 5,
    NVML_PERF_POLICY_TOTAL_APP_CLOCKS = 10,
    NVML_PERF_POLICY_TOTAL_BASE_CLOCKS = 11,
    NVML_PERF_POLICY_COUNT = 12,
} nvmlPerfPolicyType_t;

typedef enum nvmlMemoryErrorType_enum {
    NVML_MEMORY_ERROR_TYPE_CORRECTED = 0,
    NVML_MEMORY_ERROR_TYPE_UNCORRECTED = 1,
    NVML_MEMORY_ERROR_TYPE_COUNT = 2,
} nvmlMemoryErrorType_t;

typedef enum nvmlEccCounterType_enum {
    NVML_VOLATILE_ECC = 0,
    NVML_AGGREGATE_ECC = 1,
    NVML_ECC_COUNTER_TYPE_COUNT = 2,
} nvmlEccCounterType_t;

typedef enum nvmlPageRetirementCause_enum {
    NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS = 0,
    NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR = 1,
    NVML_PAGE_RETIREMENT_CAUSE_COUNT = 2,
} nvmlPageRetirementCause_t;

typedef enum nvmlPcieUtilCounter_enum {
    NVML_PCIE_UTIL_TX_BYTES = 0,
    NVML_PCIE_UTIL_RX_BYTES = 1,
    NVML_PCIE_UTIL_COUNT = 2,
} nvmlPcieUtilCounter_t;

typedef enum nvmlNvLinkErrorCounter_enum {
    NVML_NVLINK_ERROR_DL_REPLAY = 0,
    NVML_NVLINK_ERROR_DL_RECOVERY = 1,
    NVML_NVLINK_ERROR_DL_CRC_FLIT = 2,
    NVML_NVLINK_ERROR_DL_CRC_DATA = 3,
    NVML_NVLINK_ERROR_DL_ECC_DATA = 4,
    NVML_NVLINK_ERROR_COUNT = 5,
} nvmlNvLinkErrorCounter_t;

/* Links are numbered 0 .. NVML_NVLINK_MAX_LINKS-1 (gpu-metrics.md 2.1). */
#define NVML_NVLINK_MAX_LINKS 36

/* nvmlValueType_t: which member of nvmlValue_t a field value fills. */
typedef enum nvmlValueType_enum {
    NVML_VALUE_TYPE_DOUBLE = 0,
    NVML_VALUE_TYPE_UNSIGNED_INT = 1,
    NVML_VALUE_TYPE_UNSIGNED_LONG = 2,
    NVML_VALUE_TYPE_UNSIGNED_LONG_LONG = 3,
    NVML_VALUE_TYPE_SIGNED_LONG_LONG = 4,
    NVML_VALUE_TYPE_SIGNED_INT = 5,
    NVML_VALUE_TYPE_UNSIGNED_SHORT = 6,
    NVML_VALUE_TYPE_COUNT = 7,
} nvmlValueType_t;

/* Field ids for nvmlDeviceGetFieldValues (the ones Kelvin uses). */
#define NVML_FI_DEV_ECC_CURRENT                                 1
#define NVML_FI_DEV_ECC_PENDING                                 2
#define NVML_FI_DEV_ECC_SBE_VOL_TOTAL                           3
#define NVML_FI_DEV_ECC_DBE_VOL_TOTAL                           4
#define NVML_FI_DEV_ECC_SBE_AGG_TOTAL                           5
#define NVML_FI_DEV_ECC_DBE_AGG_TOTAL                           6
#define NVML_FI_DEV_RETIRED_SBE                                 29
#define NVML_FI_DEV_RETIRED_DBE                                 30
#define NVML_FI_DEV_RETIRED_PENDING                             31
#define NVML_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL           38
#define NVML_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL           45
#define NVML_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL             52
#define NVML_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL           59
#define NVML_FI_DEV_PERF_POLICY_POWER                           74
#define NVML_FI_DEV_PERF_POLICY_THERMAL                         75
#define NVML_FI_DEV_PERF_POLICY_SYNC_BOOST                      76
#define NVML_FI_DEV_PERF_POLICY_BOARD_LIMIT                     77
#define NVML_FI_DEV_PERF_POLICY_LOW_UTILIZATION                 78
#define NVML_FI_DEV_PERF_POLICY_RELIABILITY                     79
#define NVML_FI_DEV_MEMORY_TEMP                                 82
#define NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION                    83
#define NVML_FI_DEV_NVLINK_LINK_COUNT                           91
#define NVML_FI_DEV_PCIE_REPLAY_COUNTER                         94
#define NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX                   138
#define NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX                   139
#define NVML_FI_DEV_NVLINK_THROUGHPUT_RAW_TX                    140
#define NVML_FI_DEV_NVLINK_THROUGHPUT_RAW_RX                    141
#define NVML_FI_DEV_REMAPPED_COR                                142
#define NVML_FI_DEV_REMAPPED_UNC                                143
#define NVML_FI_DEV_REMAPPED_PENDING                            144
#define NVML_FI_DEV_REMAPPED_FAILURE                            145
#define NVML_FI_DEV_POWER_AVERAGE                               185
#define NVML_FI_DEV_POWER_INSTANT                               186
#define NVML_FI_DEV_PCIE_COUNT_TX_BYTES                         197
#define NVML_FI_DEV_PCIE_COUNT_RX_BYTES                         198
#define NVML_FI_DEV_NVLINK_COUNT_XMIT_BYTES                     202
#define NVML_FI_DEV_NVLINK_COUNT_RCV_BYTES                      204
#define NVML_FI_DEV_CLOCKS_EVENT_REASON_SW_THERM_SLOWDOWN       269
#define NVML_FI_DEV_CLOCKS_EVENT_REASON_HW_THERM_SLOWDOWN       270
#define NVML_FI_DEV_CLOCKS_EVENT_REASON_HW_POWER_BRAKE_SLOWDOWN 271
/* scopeId meaning "all links" for the NVLink throughput fields (138-141);
 * Kelvin sends it for those and 0 for every other field. */
#define NVML_FI_SCOPE_ALL_LINKS                                 0xFFFFFFFFu

/* Event types (bit mask for nvmlDeviceRegisterEvents). */
#define nvmlEventTypeNone              0x0000000000000000ULL
#define nvmlEventTypeSingleBitEccError 0x0000000000000001ULL
#define nvmlEventTypeDoubleBitEccError 0x0000000000000002ULL
#define nvmlEventTypePState            0x0000000000000004ULL
#define nvmlEventTypeXidCriticalError  0x0000000000000008ULL
#define nvmlEventTypeClock             0x0000000000000010ULL
#define nvmlEventTypePowerSourceChange 0x0000000000000080ULL
#define nvmlEventMigConfigChange       0x0000000000000100ULL
/* eventData value for an XID whose code the driver does not know. */
#define NVML_XID_UNKNOWN               999ULL
/* gpuInstanceId / computeInstanceId meaning "the whole GPU". */
#define NVML_EVENT_INSTANCE_ID_ALL     0xFFFFFFFFu

/* Clock event (throttle) reason bits. */
#define nvmlClocksEventReasonNone                      0x0ULL
#define nvmlClocksEventReasonGpuIdle                   0x1ULL
#define nvmlClocksEventReasonApplicationsClocksSetting 0x2ULL
#define nvmlClocksEventReasonSwPowerCap                0x4ULL
#define nvmlClocksThrottleReasonHwSlowdown             0x8ULL
#define nvmlClocksEventReasonSyncBoost                 0x10ULL
#define nvmlClocksEventReasonSwThermalSlowdown         0x20ULL
#define nvmlClocksThrottleReasonHwThermalSlowdown      0x40ULL
#define nvmlClocksThrottleReasonHwPowerBrakeSlowdown   0x80ULL
#define nvmlClocksEventReasonDisplayClockSetting       0x100ULL

/* MIG */
#define NVML_DEVICE_MIG_DISABLE         0u
#define NVML_DEVICE_MIG_ENABLE          1u
#define NVML_GPU_INSTANCE_PROFILE_COUNT 0x12u

/* vGPU licensing */
#define NVML_GRID_LICENSE_BUFFER_SIZE       128
#define NVML_GRID_LICENSE_FEATURE_MAX_COUNT 3
typedef enum nvmlGridLicenseFeatureCode_enum {
    NVML_GRID_LICENSE_FEATURE_CODE_UNKNOWN = 0,
    NVML_GRID_LICENSE_FEATURE_CODE_VGPU = 1,
    NVML_GRID_LICENSE_FEATURE_CODE_NVIDIA_RTX = 2,
    NVML_GRID_LICENSE_FEATURE_CODE_GAMING = 3,
    NVML_GRID_LICENSE_FEATURE_CODE_COMPUTE = 4,
} nvmlGridLicenseFeatureCode_t;

/* Process detail list modes */
#define NVML_PROCESS_MODE_COMPUTE  0u
#define NVML_PROCESS_MODE_GRAPHICS 1u
#define NVML_PROCESS_MODE_MPS      2u

/* GPM metric ids (nvmlGpmMetricId_t). Values: *_UTIL and SM_OCCUPANCY are
 * percentages 0-100; PCIE_*_PER_SEC and NVLINK_*_PER_SEC are MiB/s (as
 * NVML's header documents them; Kelvin multiplies by 1048576). */
#define NVML_GPM_METRIC_GRAPHICS_UTIL           1
#define NVML_GPM_METRIC_SM_UTIL                 2
#define NVML_GPM_METRIC_SM_OCCUPANCY            3
#define NVML_GPM_METRIC_INTEGER_UTIL            4
#define NVML_GPM_METRIC_ANY_TENSOR_UTIL         5
#define NVML_GPM_METRIC_DFMA_TENSOR_UTIL        6
#define NVML_GPM_METRIC_HMMA_TENSOR_UTIL        7
#define NVML_GPM_METRIC_IMMA_TENSOR_UTIL        9
#define NVML_GPM_METRIC_DRAM_BW_UTIL            10
#define NVML_GPM_METRIC_FP64_UTIL               11
#define NVML_GPM_METRIC_FP32_UTIL               12
#define NVML_GPM_METRIC_FP16_UTIL               13
#define NVML_GPM_METRIC_PCIE_TX_PER_SEC         20
#define NVML_GPM_METRIC_PCIE_RX_PER_SEC         21
#define NVML_GPM_METRIC_NVDEC_0_UTIL            30
#define NVML_GPM_METRIC_NVJPG_0_UTIL            40
#define NVML_GPM_METRIC_NVOFA_0_UTIL            50
#define NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC 60
#define NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC 61
#define NVML_GPM_METRIC_NVLINK_L0_RX_PER_SEC    62
#define NVML_GPM_METRIC_NVLINK_L0_TX_PER_SEC    63
/* Size of the metrics[] array in nvmlGpmMetricsGet_t as declared here (NVML
 * 13.2 headers). Callers must set numMetrics <= this; the library must not
 * touch metrics[numMetrics..]. */
#define NVML_GPM_METRIC_MAX                     333
#define NVML_GPM_METRICS_GET_VERSION            1u
#define NVML_GPM_SUPPORT_VERSION                1u

/* ------------------------------------------------------------------------ */
/* Structs (x86_64 layouts, gpu-metrics.md 2.4)                              */

typedef struct nvmlUtilization_st {
    unsigned int gpu;
    unsigned int memory;
} nvmlUtilization_t;

typedef struct nvmlMemory_st { /* v1 */
    unsigned long long total;
    unsigned long long free;
    unsigned long long used; /* since R510 includes reserved */
} nvmlMemory_t;

typedef struct nvmlMemory_v2_st {
    unsigned int version; /* nvmlMemory_v2 */
    unsigned long long total;
    unsigned long long reserved;
    unsigned long long free;
    unsigned long long used;
} nvmlMemory_v2_t;
#define nvmlMemory_v2 NVML_STRUCT_VERSION(nvmlMemory_v2_t, 2) /* 0x02000028 */

typedef union nvmlValue_st {
    double dVal;
    int siVal;
    unsigned int uiVal;
    unsigned long ulVal;
    unsigned long long ullVal;
    signed long long sllVal;
    unsigned short usVal;
} nvmlValue_t;

typedef struct nvmlFieldValue_st {
    unsigned int fieldId;
    unsigned int scopeId; /* link id for NVLink fields; UINT_MAX = all */
    long long timestamp;  /* microseconds since 1970 */
    long long latencyUsec;
    nvmlValueType_t valueType;
    nvmlReturn_t nvmlReturn; /* per-field status: always check */
    nvmlValue_t value;
} nvmlFieldValue_t;

typedef struct nvmlEventData_st { /* v2 layout; v1 lacked the two ids */
    nvmlDevice_t device;
    unsigned long long eventType;
    unsigned long long eventData; /* XID code for XidCriticalError */
    unsigned int gpuInstanceId;
    unsigned int computeInstanceId;
} nvmlEventData_t;

typedef struct nvmlProcessInfo_v1_st {
    unsigned int pid;
    unsigned long long usedGpuMemory; /* bytes or NVML_VALUE_NOT_AVAILABLE */
} nvmlProcessInfo_v1_t;

typedef struct nvmlProcessInfo_v2_st {
    unsigned int pid;
    unsigned long long usedGpuMemory;
    unsigned int gpuInstanceId;
    unsigned int computeInstanceId;
} nvmlProcessInfo_v2_t;
/* Used by *RunningProcesses_v2 and _v3. Some R535 builds wrote 32-byte
 * entries (nvmlProcessDetail_v1_t layout) into it: probe the stride. */
typedef nvmlProcessInfo_v2_t nvmlProcessInfo_t;

typedef struct nvmlProcessDetail_v1_st {
    unsigned int pid;
    unsigned long long usedGpuMemory;
    unsigned int gpuInstanceId;
    unsigned int computeInstanceId;
    unsigned long long usedGpuCcProtectedMemory;
} nvmlProcessDetail_v1_t;

typedef struct nvmlProcessDetailList_v1_st {
    unsigned int version; /* nvmlProcessDetailList_v1 */
    unsigned int mode;    /* NVML_PROCESS_MODE_* */
    unsigned int numProcArrayEntries;
    nvmlProcessDetail_v1_t *procArray;
} nvmlProcessDetailList_v1_t;
typedef nvmlProcessDetailList_v1_t nvmlProcessDetailList_t;
#define nvmlProcessDetailList_v1 NVML_STRUCT_VERSION(nvmlProcessDetailList_v1_t, 1) /* 0x01000018 */

typedef struct nvmlProcessUtilizationSample_st {
    unsigned int pid;
    unsigned long long timeStamp; /* microseconds */
    unsigned int smUtil;
    unsigned int memUtil;
    unsigned int encUtil;
    unsigned int decUtil;
} nvmlProcessUtilizationSample_t;

typedef struct nvmlProcessUtilizationInfo_v1_st {
    unsigned long long timeStamp;
    unsigned int pid;
    unsigned int smUtil;
    unsigned int memUtil;
    unsigned int encUtil;
    unsigned int decUtil;
    unsigned int jpgUtil;
    unsigned int ofaUtil;
} nvmlProcessUtilizationInfo_v1_t;

typedef struct nvmlProcessesUtilizationInfo_v1_st {
    unsigned int version; /* nvmlProcessesUtilizationInfo_v1 */
    unsigned int processSamplesCount;
    unsigned long long lastSeenTimeStamp;
    nvmlProcessUtilizationInfo_v1_t *procUtilArray;
} nvmlProcessesUtilizationInfo_v1_t;
typedef nvmlProcessesUtilizationInfo_v1_t nvmlProcessesUtilizationInfo_t;
#define nvmlProcessesUtilizationInfo_v1                                                                      \
    NVML_STRUCT_VERSION(nvmlProcessesUtilizationInfo_v1_t, 1) /* 0x01000018 */

typedef struct nvmlViolationTime_st {
    unsigned long long referenceTime;
    unsigned long long violationTime; /* ns */
} nvmlViolationTime_t;

typedef struct nvmlPciInfo_st {
    char busIdLegacy[NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE];
    unsigned int domain;
    unsigned int bus;
    unsigned int device;
    unsigned int pciDeviceId;
    unsigned int pciSubSystemId;
    char busId[NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE]; /* "00000000:07:00.0" */
} nvmlPciInfo_t;

typedef struct nvmlTemperature_v1_st {
    unsigned int version; /* nvmlTemperature_v1 */
    nvmlTemperatureSensors_t sensorType;
    int temperature;
} nvmlTemperature_v1_t;
typedef nvmlTemperature_v1_t nvmlTemperature_t;
#define nvmlTemperature_v1 NVML_STRUCT_VERSION(nvmlTemperature_v1_t, 1) /* 0x0100000C */

typedef struct nvmlGpmSupport_st {
    unsigned int version; /* NVML_GPM_SUPPORT_VERSION (plain 1) */
    unsigned int isSupportedDevice;
} nvmlGpmSupport_t;

typedef struct nvmlGpmMetric_st {
    unsigned int metricId;   /* NVML_GPM_METRIC_* (in) */
    nvmlReturn_t nvmlReturn; /* per-metric status (out) */
    double value;            /* out */
    struct {
        char *shortName;
        char *longName;
        char *unit;
    } metricInfo; /* out; strings owned by the library */
} nvmlGpmMetric_t;

typedef struct nvmlGpmMetricsGet_st {
    unsigned int version; /* NVML_GPM_METRICS_GET_VERSION (plain 1) */
    unsigned int numMetrics;
    nvmlGpmSample_t sample1;
    nvmlGpmSample_t sample2;
    nvmlGpmMetric_t metrics[NVML_GPM_METRIC_MAX];
} nvmlGpmMetricsGet_t;

typedef struct nvmlGpuInstancePlacement_st {
    unsigned int start;
    unsigned int size;
} nvmlGpuInstancePlacement_t;

typedef struct nvmlGpuInstanceInfo_st {
    nvmlDevice_t device;
    unsigned int id;
    unsigned int profileId;
    nvmlGpuInstancePlacement_t placement;
} nvmlGpuInstanceInfo_t;

typedef struct nvmlGpuInstanceProfileInfo_v2_st {
    unsigned int version; /* nvmlGpuInstanceProfileInfo_v2 */
    unsigned int id;
    unsigned int isP2pSupported;
    unsigned int sliceCount;
    unsigned int instanceCount;
    unsigned int multiprocessorCount;
    unsigned int copyEngineCount;
    unsigned int decoderCount;
    unsigned int encoderCount;
    unsigned int jpegCount;
    unsigned int ofaCount;
    unsigned long long memorySizeMB;
    char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE]; /* e.g. "MIG 1g.10gb" */
} nvmlGpuInstanceProfileInfo_v2_t;
#define nvmlGpuInstanceProfileInfo_v2                                                                        \
    NVML_STRUCT_VERSION(nvmlGpuInstanceProfileInfo_v2_t, 2) /* 0x02000098                                    \
                                                             */

typedef struct nvmlGridLicenseExpiry_st {
    unsigned int year;
    unsigned short month;
    unsigned short day;
    unsigned short hour;
    unsigned short min;
    unsigned short sec;
    unsigned char status;
} nvmlGridLicenseExpiry_t;

typedef struct nvmlGridLicensableFeature_st {
    nvmlGridLicenseFeatureCode_t featureCode;
    unsigned int featureState; /* 0 = unlicensed */
    char licenseInfo[NVML_GRID_LICENSE_BUFFER_SIZE];
    char productName[NVML_GRID_LICENSE_BUFFER_SIZE];
    unsigned int featureEnabled;
    nvmlGridLicenseExpiry_t licenseExpiry;
} nvmlGridLicensableFeature_t;

typedef struct nvmlGridLicensableFeatures_st { /* _v4 layout */
    int isGridLicenseSupported;
    unsigned int licensableFeaturesCount;
    nvmlGridLicensableFeature_t gridLicensableFeatures[NVML_GRID_LICENSE_FEATURE_MAX_COUNT];
} nvmlGridLicensableFeatures_t;

/* ------------------------------------------------------------------------ */
/* Layout checks (LP64)                                                      */

#define NVML__CHECK_OFF(type, member, off)                                                                   \
    _Static_assert(offsetof(type, member) == (off), #type "." #member " offset")
#define NVML__CHECK_SIZE(type, size) _Static_assert(sizeof(type) == (size), #type " size")

_Static_assert(sizeof(nvmlReturn_t) == 4, "nvmlReturn_t is a 4-byte int");
_Static_assert(sizeof(nvmlDevice_t) == sizeof(void *), "handles are pointers");
_Static_assert(sizeof(nvmlClockType_t) == 4, "enums are 4-byte ints");
NVML__CHECK_SIZE(nvmlUtilization_t, 8);
NVML__CHECK_SIZE(nvmlMemory_t, 24);
NVML__CHECK_SIZE(nvmlMemory_v2_t, 40);
NVML__CHECK_OFF(nvmlMemory_v2_t, total, 8);
NVML__CHECK_OFF(nvmlMemory_v2_t, reserved, 16);
NVML__CHECK_OFF(nvmlMemory_v2_t, free, 24);
NVML__CHECK_OFF(nvmlMemory_v2_t, used, 32);
_Static_assert(nvmlMemory_v2 == 0x02000028u, "nvmlMemory_v2 version");
NVML__CHECK_SIZE(nvmlValue_t, 8);
NVML__CHECK_SIZE(nvmlFieldValue_t, 40);
NVML__CHECK_OFF(nvmlFieldValue_t, scopeId, 4);
NVML__CHECK_OFF(nvmlFieldValue_t, timestamp, 8);
NVML__CHECK_OFF(nvmlFieldValue_t, latencyUsec, 16);
NVML__CHECK_OFF(nvmlFieldValue_t, valueType, 24);
NVML__CHECK_OFF(nvmlFieldValue_t, nvmlReturn, 28);
NVML__CHECK_OFF(nvmlFieldValue_t, value, 32);
NVML__CHECK_SIZE(nvmlEventData_t, 32);
NVML__CHECK_OFF(nvmlEventData_t, eventType, 8);
NVML__CHECK_OFF(nvmlEventData_t, eventData, 16);
NVML__CHECK_OFF(nvmlEventData_t, gpuInstanceId, 24);
NVML__CHECK_OFF(nvmlEventData_t, computeInstanceId, 28);
NVML__CHECK_SIZE(nvmlProcessInfo_v1_t, 16);
NVML__CHECK_SIZE(nvmlProcessInfo_v2_t, 24);
NVML__CHECK_OFF(nvmlProcessInfo_v2_t, usedGpuMemory, 8);
NVML__CHECK_OFF(nvmlProcessInfo_v2_t, gpuInstanceId, 16);
NVML__CHECK_OFF(nvmlProcessInfo_v2_t, computeInstanceId, 20);
NVML__CHECK_SIZE(nvmlProcessDetail_v1_t, 32);
NVML__CHECK_OFF(nvmlProcessDetail_v1_t, usedGpuCcProtectedMemory, 24);
NVML__CHECK_SIZE(nvmlProcessDetailList_v1_t, 24);
NVML__CHECK_OFF(nvmlProcessDetailList_v1_t, procArray, 16);
_Static_assert(nvmlProcessDetailList_v1 == 0x01000018u, "nvmlProcessDetailList_v1 version");
NVML__CHECK_SIZE(nvmlProcessUtilizationSample_t, 32);
NVML__CHECK_OFF(nvmlProcessUtilizationSample_t, timeStamp, 8);
NVML__CHECK_OFF(nvmlProcessUtilizationSample_t, smUtil, 16);
NVML__CHECK_OFF(nvmlProcessUtilizationSample_t, decUtil, 28);
NVML__CHECK_SIZE(nvmlProcessUtilizationInfo_v1_t, 40);
NVML__CHECK_SIZE(nvmlProcessesUtilizationInfo_v1_t, 24);
_Static_assert(nvmlProcessesUtilizationInfo_v1 == 0x01000018u, "nvmlProcessesUtilizationInfo_v1 version");
NVML__CHECK_SIZE(nvmlViolationTime_t, 16);
NVML__CHECK_SIZE(nvmlPciInfo_t, 68);
NVML__CHECK_OFF(nvmlPciInfo_t, domain, 16);
NVML__CHECK_OFF(nvmlPciInfo_t, pciSubSystemId, 32);
NVML__CHECK_OFF(nvmlPciInfo_t, busId, 36);
NVML__CHECK_SIZE(nvmlTemperature_v1_t, 12);
_Static_assert(nvmlTemperature_v1 == 0x0100000Cu, "nvmlTemperature_v1 version");
NVML__CHECK_SIZE(nvmlGpmSupport_t, 8);
NVML__CHECK_SIZE(nvmlGpmMetric_t, 40);
NVML__CHECK_OFF(nvmlGpmMetric_t, nvmlReturn, 4);
NVML__CHECK_OFF(nvmlGpmMetric_t, value, 8);
NVML__CHECK_OFF(nvmlGpmMetric_t, metricInfo, 16);
NVML__CHECK_OFF(nvmlGpmMetricsGet_t, sample1, 8);
NVML__CHECK_OFF(nvmlGpmMetricsGet_t, sample2, 16);
NVML__CHECK_OFF(nvmlGpmMetricsGet_t, metrics, 24);
NVML__CHECK_SIZE(nvmlGpmMetricsGet_t, 13344);
NVML__CHECK_SIZE(nvmlGpuInstanceInfo_t, 24);
NVML__CHECK_SIZE(nvmlGpuInstanceProfileInfo_v2_t, 152);
NVML__CHECK_OFF(nvmlGpuInstanceProfileInfo_v2_t, memorySizeMB, 48);
NVML__CHECK_OFF(nvmlGpuInstanceProfileInfo_v2_t, name, 56);
_Static_assert(nvmlGpuInstanceProfileInfo_v2 == 0x02000098u, "nvmlGpuInstanceProfileInfo_v2 version");
NVML__CHECK_SIZE(nvmlGridLicenseExpiry_t, 16);
NVML__CHECK_SIZE(nvmlGridLicensableFeature_t, 284);
NVML__CHECK_SIZE(nvmlGridLicensableFeatures_t, 860);

/* ------------------------------------------------------------------------ */
/* Functions                                                                 */
/*
 * NVML_FUNCTIONS(X): every nvmlReturn_t-returning symbol the agent may
 * resolve, as X(symbol, (parameters)). Within a group, the newest versioned
 * symbol comes first and its older fallbacks follow; the loader
 * (src/nvml/nvml.c) tries them in that order. Fallbacks with a different
 * struct layout are noted.
 *
 * NVML_STRING_FUNCTIONS(X): the one symbol returning const char * instead.
 */
#define NVML_FUNCTIONS(X)                                                                                    \
    /* init / system */                                                                                      \
    X(nvmlInit_v2, (void))                                                                                   \
    X(nvmlInit, (void)) /* v1: fails if any GPU is bad */                                                    \
    X(nvmlInitWithFlags, (unsigned int flags))                                                               \
    X(nvmlShutdown, (void))                                                                                  \
    X(nvmlSystemGetDriverVersion, (char *version, unsigned int length))                                      \
    X(nvmlSystemGetNVMLVersion, (char *version, unsigned int length))                                        \
    /* enumeration */                                                                                        \
    X(nvmlDeviceGetCount_v2, (unsigned int *deviceCount))                                                    \
    X(nvmlDeviceGetCount, (unsigned int *deviceCount)) /* v1: skips GPUs without permission */               \
    X(nvmlDeviceGetHandleByIndex_v2, (unsigned int index, nvmlDevice_t *device))                             \
    X(nvmlDeviceGetHandleByIndex, (unsigned int index, nvmlDevice_t *device))                                \
    X(nvmlDeviceGetHandleByUUID, (const char *uuid, nvmlDevice_t *device))                                   \
    X(nvmlDeviceGetHandleByPciBusId_v2, (const char *pciBusId, nvmlDevice_t *device))                        \
    /* identity (static) */                                                                                  \
    X(nvmlDeviceGetUUID, (nvmlDevice_t device, char *uuid, unsigned int length))                             \
    X(nvmlDeviceGetName, (nvmlDevice_t device, char *name, unsigned int length))                             \
    X(nvmlDeviceGetSerial, (nvmlDevice_t device, char *serial, unsigned int length))                         \
    X(nvmlDeviceGetVbiosVersion, (nvmlDevice_t device, char *version, unsigned int length))                  \
    X(nvmlDeviceGetInforomVersion,                                                                           \
      (nvmlDevice_t device, nvmlInforomObject_t object, char *version, unsigned int length))                 \
    X(nvmlDeviceGetInforomImageVersion, (nvmlDevice_t device, char *version, unsigned int length))           \
    X(nvmlDeviceGetBrand, (nvmlDevice_t device, nvmlBrandType_t * type))                                     \
    X(nvmlDeviceGetMinorNumber, (nvmlDevice_t device, unsigned int *minorNumber))                            \
    X(nvmlDeviceGetPciInfo_v3, (nvmlDevice_t device, nvmlPciInfo_t * pci))                                   \
    X(nvmlDeviceGetPciInfo_v2, (nvmlDevice_t device, nvmlPciInfo_t * pci))                                   \
    X(nvmlDeviceGetPciInfo, (nvmlDevice_t device, nvmlPciInfo_t * pci))                                      \
    /* clocks */                                                                                             \
    X(nvmlDeviceGetClockInfo, (nvmlDevice_t device, nvmlClockType_t type, unsigned int *clock))              \
    X(nvmlDeviceGetMaxClockInfo, (nvmlDevice_t device, nvmlClockType_t type, unsigned int *clock))           \
    X(nvmlDeviceGetClock,                                                                                    \
      (nvmlDevice_t device, nvmlClockType_t clockType, nvmlClockId_t clockId, unsigned int *clockMHz))       \
    /* temperature */                                                                                        \
    X(nvmlDeviceGetTemperatureV, (nvmlDevice_t device, nvmlTemperature_t * temperature))                     \
    X(nvmlDeviceGetTemperature,                                                                              \
      (nvmlDevice_t device, nvmlTemperatureSensors_t sensorType, unsigned int *temp))                        \
    /* power */                                                                                              \
    X(nvmlDeviceGetPowerUsage, (nvmlDevice_t device, unsigned int *power))                                   \
    X(nvmlDeviceGetTotalEnergyConsumption, (nvmlDevice_t device, unsigned long long *energy))                \
    X(nvmlDeviceGetPowerManagementLimit, (nvmlDevice_t device, unsigned int *limit))                         \
    X(nvmlDeviceGetEnforcedPowerLimit, (nvmlDevice_t device, unsigned int *limit))                           \
    X(nvmlDeviceGetPowerManagementDefaultLimit, (nvmlDevice_t device, unsigned int *defaultLimit))           \
    X(nvmlDeviceGetPowerManagementLimitConstraints,                                                          \
      (nvmlDevice_t device, unsigned int *minLimit, unsigned int *maxLimit))                                 \
    /* utilisation */                                                                                        \
    X(nvmlDeviceGetUtilizationRates, (nvmlDevice_t device, nvmlUtilization_t * utilization))                 \
    X(nvmlDeviceGetEncoderUtilization,                                                                       \
      (nvmlDevice_t device, unsigned int *utilization, unsigned int *samplingPeriodUs))                      \
    X(nvmlDeviceGetDecoderUtilization,                                                                       \
      (nvmlDevice_t device, unsigned int *utilization, unsigned int *samplingPeriodUs))                      \
    /* memory */                                                                                             \
    X(nvmlDeviceGetMemoryInfo_v2, (nvmlDevice_t device, nvmlMemory_v2_t * memory))                           \
    X(nvmlDeviceGetMemoryInfo, (nvmlDevice_t device, nvmlMemory_t * memory))                                 \
    /* clock event (throttle) reasons */                                                                     \
    X(nvmlDeviceGetCurrentClocksEventReasons, (nvmlDevice_t device, unsigned long long *clocksEventReasons)) \
    X(nvmlDeviceGetCurrentClocksThrottleReasons,                                                             \
      (nvmlDevice_t device, unsigned long long *clocksThrottleReasons))                                      \
    X(nvmlDeviceGetSupportedClocksEventReasons,                                                              \
      (nvmlDevice_t device, unsigned long long *supportedClocksEventReasons))                                \
    X(nvmlDeviceGetSupportedClocksThrottleReasons,                                                           \
      (nvmlDevice_t device, unsigned long long *supportedClocksThrottleReasons))                             \
    X(nvmlDeviceGetViolationStatus,                                                                          \
      (nvmlDevice_t device, nvmlPerfPolicyType_t perfPolicyType, nvmlViolationTime_t * violTime))            \
    /* ECC, page retirement, row remapping */                                                                \
    X(nvmlDeviceGetEccMode, (nvmlDevice_t device, nvmlEnableState_t * current, nvmlEnableState_t * pending)) \
    X(nvmlDeviceGetTotalEccErrors, (nvmlDevice_t device, nvmlMemoryErrorType_t errorType,                    \
                                    nvmlEccCounterType_t counterType, unsigned long long *eccCounts))        \
    X(nvmlDeviceGetRetiredPages, (nvmlDevice_t device, nvmlPageRetirementCause_t cause,                      \
                                  unsigned int *pageCount, unsigned long long *addresses))                   \
    X(nvmlDeviceGetRetiredPagesPendingStatus, (nvmlDevice_t device, nvmlEnableState_t * isPending))          \
    X(nvmlDeviceGetRemappedRows, (nvmlDevice_t device, unsigned int *corrRows, unsigned int *uncRows,        \
                                  unsigned int *isPending, unsigned int *failureOccurred))                   \
    /* PCIe */                                                                                               \
    X(nvmlDeviceGetPcieReplayCounter, (nvmlDevice_t device, unsigned int *value))                            \
    X(nvmlDeviceGetPcieThroughput,                                                                           \
      (nvmlDevice_t device, nvmlPcieUtilCounter_t counter, unsigned int *value))                             \
    /* NVLink */                                                                                             \
    X(nvmlDeviceGetNvLinkState, (nvmlDevice_t device, unsigned int link, nvmlEnableState_t *isActive))       \
    X(nvmlDeviceGetNvLinkErrorCounter, (nvmlDevice_t device, unsigned int link,                              \
                                        nvmlNvLinkErrorCounter_t counter, unsigned long long *counterValue)) \
    /* fans */                                                                                               \
    X(nvmlDeviceGetNumFans, (nvmlDevice_t device, unsigned int *numFans))                                    \
    X(nvmlDeviceGetFanSpeed_v2, (nvmlDevice_t device, unsigned int fan, unsigned int *speed))                \
    X(nvmlDeviceGetFanSpeed, (nvmlDevice_t device, unsigned int *speed))                                     \
    /* field values (batched) */                                                                             \
    X(nvmlDeviceGetFieldValues, (nvmlDevice_t device, int valuesCount, nvmlFieldValue_t *values))            \
    /* events */                                                                                             \
    X(nvmlDeviceGetSupportedEventTypes, (nvmlDevice_t device, unsigned long long *eventTypes))               \
    X(nvmlEventSetCreate, (nvmlEventSet_t * set))                                                            \
    X(nvmlDeviceRegisterEvents, (nvmlDevice_t device, unsigned long long eventTypes, nvmlEventSet_t set))    \
    X(nvmlEventSetWait_v2, (nvmlEventSet_t set, nvmlEventData_t * data, unsigned int timeoutms))             \
    /* v1 writes only device/eventType/eventData (24 bytes) */                                               \
    X(nvmlEventSetWait, (nvmlEventSet_t set, nvmlEventData_t * data, unsigned int timeoutms))                \
    X(nvmlEventSetFree, (nvmlEventSet_t set))                                                                \
    /* processes */                                                                                          \
    X(nvmlDeviceGetRunningProcessDetailList, (nvmlDevice_t device, nvmlProcessDetailList_t * plist))         \
    X(nvmlDeviceGetComputeRunningProcesses_v3,                                                               \
      (nvmlDevice_t device, unsigned int *infoCount, nvmlProcessInfo_t *infos))                              \
    X(nvmlDeviceGetComputeRunningProcesses_v2,                                                               \
      (nvmlDevice_t device, unsigned int *infoCount, nvmlProcessInfo_v2_t *infos))                           \
    X(nvmlDeviceGetComputeRunningProcesses, /* v1: 16-byte entries */                                        \
      (nvmlDevice_t device, unsigned int *infoCount, nvmlProcessInfo_v1_t *infos))                           \
    X(nvmlDeviceGetProcessesUtilizationInfo,                                                                 \
      (nvmlDevice_t device, nvmlProcessesUtilizationInfo_t * procesesUtilInfo))                              \
    X(nvmlDeviceGetProcessUtilization,                                                                       \
      (nvmlDevice_t device, nvmlProcessUtilizationSample_t * utilization, unsigned int *processSamplesCount, \
       unsigned long long lastSeenTimeStamp))                                                                \
    /* MIG */                                                                                                \
    X(nvmlDeviceGetMigMode, (nvmlDevice_t device, unsigned int *currentMode, unsigned int *pendingMode))     \
    X(nvmlDeviceGetMaxMigDeviceCount, (nvmlDevice_t device, unsigned int *count))                            \
    X(nvmlDeviceGetMigDeviceHandleByIndex,                                                                   \
      (nvmlDevice_t device, unsigned int index, nvmlDevice_t *migDevice))                                    \
    X(nvmlDeviceGetDeviceHandleFromMigDeviceHandle, (nvmlDevice_t migDevice, nvmlDevice_t * device))         \
    X(nvmlDeviceIsMigDeviceHandle, (nvmlDevice_t device, unsigned int *isMigDevice))                         \
    X(nvmlDeviceGetGpuInstanceId, (nvmlDevice_t device, unsigned int *id))                                   \
    X(nvmlDeviceGetComputeInstanceId, (nvmlDevice_t device, unsigned int *id))                               \
    X(nvmlDeviceGetGpuInstanceById, (nvmlDevice_t device, unsigned int id, nvmlGpuInstance_t *gpuInstance))  \
    X(nvmlGpuInstanceGetInfo, (nvmlGpuInstance_t gpuInstance, nvmlGpuInstanceInfo_t * info))                 \
    X(nvmlDeviceGetGpuInstanceProfileInfoV,                                                                  \
      (nvmlDevice_t device, unsigned int profile, nvmlGpuInstanceProfileInfo_v2_t *info))                    \
    /* GPM (Hopper+) */                                                                                      \
    X(nvmlGpmQueryDeviceSupport, (nvmlDevice_t device, nvmlGpmSupport_t * gpmSupport))                       \
    X(nvmlGpmSampleAlloc, (nvmlGpmSample_t * gpmSample))                                                     \
    X(nvmlGpmSampleFree, (nvmlGpmSample_t gpmSample))                                                        \
    X(nvmlGpmSampleGet, (nvmlDevice_t device, nvmlGpmSample_t gpmSample))                                    \
    X(nvmlGpmMigSampleGet, (nvmlDevice_t device, unsigned int gpuInstanceId, nvmlGpmSample_t gpmSample))     \
    X(nvmlGpmMetricsGet, (nvmlGpmMetricsGet_t * metricsGet))                                                 \
    /* vGPU */                                                                                               \
    X(nvmlDeviceGetGridLicensableFeatures_v4,                                                                \
      (nvmlDevice_t device, nvmlGridLicensableFeatures_t * pGridLicensableFeatures))

#define NVML_STRING_FUNCTIONS(X) X(nvmlErrorString, (nvmlReturn_t result))

/* Prototypes, for the simulator's benefit (see the invariants above). */
#define NVML__PROTO(name, params) nvmlReturn_t name params;
NVML_FUNCTIONS(NVML__PROTO)
#undef NVML__PROTO
#define NVML__SPROTO(name, params) const char *name params;
NVML_STRING_FUNCTIONS(NVML__SPROTO)
#undef NVML__SPROTO

#endif /* KELVIN_NVML_TYPES_H */
