#pragma once
// The small part of the NVML C ABI that Vigil uses, declared by the project because nvml.h is
// not installed on build machines. Only what the checks call is declared. Every name, value,
// size, offset and prototype here is checked (ctest nvml_abi_check) against facts taken from
// NVIDIA's published nvml.h: tests/fake_nvml/nvml_abi_facts.txt names the header's version. The
// fake library (tests/fake_nvml) includes this file too, so a signature mismatch between loader and
// fake is a compile error.
#include <cstddef>
#include <cstdint>

extern "C" {

typedef int nvmlReturn_t;
typedef struct nvmlDevice_st* nvmlDevice_t;
typedef struct nvmlEventSet_st* nvmlEventSet_t;

// nvmlReturn_t values used by Vigil (subset).
enum : int {
  NVML_SUCCESS = 0,
  NVML_ERROR_UNINITIALIZED = 1,
  NVML_ERROR_INVALID_ARGUMENT = 2,
  NVML_ERROR_NOT_SUPPORTED = 3,
  NVML_ERROR_NO_PERMISSION = 4,
  NVML_ERROR_NOT_FOUND = 6,
  NVML_ERROR_INSUFFICIENT_SIZE = 7,
  NVML_ERROR_INSUFFICIENT_POWER = 8,
  NVML_ERROR_DRIVER_NOT_LOADED = 9,
  NVML_ERROR_TIMEOUT = 10,
  NVML_ERROR_IRQ_ISSUE = 11,
  NVML_ERROR_LIBRARY_NOT_FOUND = 12,
  NVML_ERROR_FUNCTION_NOT_FOUND = 13,
  NVML_ERROR_GPU_IS_LOST = 15,
  NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25,
  NVML_ERROR_UNKNOWN = 999,
};

// nvmlEnableState_t
enum : int { NVML_FEATURE_DISABLED = 0, NVML_FEATURE_ENABLED = 1 };
// nvmlMemoryErrorType_t
enum : int { NVML_MEMORY_ERROR_TYPE_CORRECTED = 0, NVML_MEMORY_ERROR_TYPE_UNCORRECTED = 1 };
// nvmlEccCounterType_t
enum : int { NVML_VOLATILE_ECC = 0, NVML_AGGREGATE_ECC = 1 };
// nvmlNvLinkErrorCounter_t
enum : int {
  NVML_NVLINK_ERROR_DL_REPLAY = 0,
  NVML_NVLINK_ERROR_DL_RECOVERY = 1,
  NVML_NVLINK_ERROR_DL_CRC_FLIT = 2,
  NVML_NVLINK_ERROR_DL_CRC_DATA = 3,
};
// nvmlTemperatureSensors_t / nvmlTemperatureThresholds_t
enum : int { NVML_TEMPERATURE_GPU = 0 };
enum : int { NVML_CLOCK_SM = 1 };  // nvmlClockType_t
enum : int {
  NVML_TEMPERATURE_THRESHOLD_SHUTDOWN = 0,
  NVML_TEMPERATURE_THRESHOLD_SLOWDOWN = 1,
  NVML_TEMPERATURE_THRESHOLD_GPU_MAX = 3,
};

// nvmlPciInfo_t as returned by nvmlDeviceGetPciInfo_v3.
struct nvmlPciInfo_t {
  char busIdLegacy[16];  // NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pciDeviceId;  // (device id << 16) | vendor id, e.g. 0x233010DE
  unsigned int pciSubSystemId;
  char busId[32];  // NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE, "00000000:18:00.0"
};

// nvmlEventData_t as filled by nvmlEventSetWait_v2.
struct nvmlEventData_t {
  nvmlDevice_t device;
  unsigned long long eventType;
  unsigned long long eventData;  // the XID for XidCriticalError events
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
};

// nvmlProcessInfo_t (= nvmlProcessInfo_v2_t), as filled by nvmlDeviceGetComputeRunningProcesses_v3.
struct nvmlProcessInfo_t {
  unsigned int pid;
  unsigned long long usedGpuMemory;  // bytes; NVML_VALUE_NOT_AVAILABLE when unknown
  unsigned int gpuInstanceId;        // MIG instance ids; 0xFFFFFFFF when MIG is off
  unsigned int computeInstanceId;
};

// nvmlUtilization_t from nvmlDeviceGetUtilizationRates: percent of the last sample period
// (1/6 s to 1 s, per product) during which a kernel ran / device memory was read or written.
struct nvmlUtilization_t {
  unsigned int gpu;
  unsigned int memory;
};

// nvmlTemperature_t (= nvmlTemperature_v1_t) for nvmlDeviceGetTemperatureV, the call that replaces
// nvmlDeviceGetTemperature (DEPRECATED(13.0) in nvml.h). `version` must be kNvmlTemperatureV1.
struct nvmlTemperature_t {
  unsigned int version;
  int sensorType;  // nvmlTemperatureSensors_t
  int temperature;
};
typedef nvmlTemperature_t nvmlTemperature_v1_t;

// nvmlGpuFabricInfo_t, the unversioned struct of nvmlDeviceGetGpuFabricInfo (DEPRECATED(13.0),
// but the only fabric call of R535-era drivers). `state` is nvmlGpuFabricState_t (unsigned char).
struct nvmlGpuFabricInfo_t {
  unsigned char clusterUuid[16];  // NVML_GPU_FABRIC_UUID_LEN
  nvmlReturn_t status;            // the probe's error; only meaningful once state is COMPLETED
  unsigned int cliqueId;
  unsigned char state;  // NVML_GPU_FABRIC_STATE_*
};
// nvmlGpuFabricInfo_v2_t: version first, healthMask last (nvmlDeviceGetGpuFabricInfoV).
struct nvmlGpuFabricInfo_v2_t {
  unsigned int version;
  unsigned char clusterUuid[16];
  nvmlReturn_t status;
  unsigned int cliqueId;
  unsigned char state;
  unsigned int healthMask;  // NVML_GPU_FABRIC_HEALTH_MASK_* fields
};
// nvmlGpuFabricInfo_v3_t (= nvmlGpuFabricInfoV_t in the CUDA 13 header): adds healthSummary.
struct nvmlGpuFabricInfo_v3_t {
  unsigned int version;
  unsigned char clusterUuid[16];
  nvmlReturn_t status;
  unsigned int cliqueId;
  unsigned char state;
  unsigned int healthMask;
  unsigned char healthSummary;  // NVML_GPU_FABRIC_HEALTH_SUMMARY_*
};
typedef nvmlGpuFabricInfo_v3_t nvmlGpuFabricInfoV_t;

// nvmlValue_t: the value of one field sample; which member is valid is in valueType.
union nvmlValue_t {
  double dVal;
  int siVal;
  unsigned int uiVal;
  unsigned long ulVal;
  unsigned long long ullVal;
  signed long long sllVal;
  unsigned short usVal;
};
// nvmlFieldValue_t for nvmlDeviceGetFieldValues: fieldId (and scopeId) in, the rest out.
struct nvmlFieldValue_t {
  unsigned int fieldId;
  unsigned int scopeId;
  long long timestamp;
  long long latencyUsec;
  int valueType;            // nvmlValueType_t
  nvmlReturn_t nvmlReturn;  // per field: value is undefined unless NVML_SUCCESS
  nvmlValue_t value;
};

// Function signatures (pointer types), one per entry point Vigil resolves.
typedef nvmlReturn_t (*nvmlInit_v2_fn)();
typedef nvmlReturn_t (*nvmlShutdown_fn)();
typedef const char* (*nvmlErrorString_fn)(nvmlReturn_t);
typedef nvmlReturn_t (*nvmlSystemGetDriverVersion_fn)(char*, unsigned int);
typedef nvmlReturn_t (*nvmlDeviceGetCount_v2_fn)(unsigned int*);
typedef nvmlReturn_t (*nvmlDeviceGetHandleByIndex_v2_fn)(unsigned int, nvmlDevice_t*);
typedef nvmlReturn_t (*nvmlDeviceGetName_fn)(nvmlDevice_t, char*, unsigned int);
// nvmlDeviceGetVbiosVersion: the board's VBIOS, "96.00.89.00.01" (nvml.h, Device Queries).
typedef nvmlReturn_t (*nvmlDeviceGetVbiosVersion_fn)(nvmlDevice_t, char*, unsigned int);
// The board serial ("matches the serial number tag that is physically attached to the board",
// nvml.h) and the GPU UUID: which part sits in a slot (part history, docs/repair.md).
typedef nvmlReturn_t (*nvmlDeviceGetSerial_fn)(nvmlDevice_t, char*, unsigned int);
typedef nvmlReturn_t (*nvmlDeviceGetUUID_fn)(nvmlDevice_t, char*, unsigned int);
typedef nvmlReturn_t (*nvmlDeviceGetPciInfo_v3_fn)(nvmlDevice_t, nvmlPciInfo_t*);
typedef nvmlReturn_t (*nvmlDeviceGetTotalEccErrors_fn)(nvmlDevice_t, int, int, unsigned long long*);
typedef nvmlReturn_t (*nvmlDeviceGetRemappedRows_fn)(nvmlDevice_t, unsigned int*, unsigned int*,
                                                     unsigned int*, unsigned int*);
typedef nvmlReturn_t (*nvmlDeviceGetRetiredPagesPendingStatus_fn)(nvmlDevice_t, int*);
typedef nvmlReturn_t (*nvmlDeviceGetCurrentClocksEventReasons_fn)(nvmlDevice_t,
                                                                  unsigned long long*);
// One unsigned out-parameter: PCIe gen/width, PCIe replay counter, power usage.
typedef nvmlReturn_t (*nvmlDeviceGetUInt_fn)(nvmlDevice_t, unsigned int*);
typedef nvmlReturn_t (*nvmlDeviceGetNvLinkState_fn)(nvmlDevice_t, unsigned int, int*);
typedef nvmlReturn_t (*nvmlDeviceGetNvLinkErrorCounter_fn)(nvmlDevice_t, unsigned int, int,
                                                           unsigned long long*);
typedef nvmlReturn_t (*nvmlDeviceGetTemperature_fn)(nvmlDevice_t, int, unsigned int*);
typedef nvmlReturn_t (*nvmlDeviceGetClockInfo_fn)(nvmlDevice_t, int, unsigned int*);
typedef nvmlReturn_t (*nvmlDeviceGetTemperatureV_fn)(nvmlDevice_t, nvmlTemperature_t*);
typedef nvmlReturn_t (*nvmlDeviceGetTemperatureThreshold_fn)(nvmlDevice_t, int, unsigned int*);
typedef nvmlReturn_t (*nvmlEventSetCreate_fn)(nvmlEventSet_t*);
typedef nvmlReturn_t (*nvmlDeviceRegisterEvents_fn)(nvmlDevice_t, unsigned long long,
                                                    nvmlEventSet_t);
typedef nvmlReturn_t (*nvmlEventSetWait_v2_fn)(nvmlEventSet_t, nvmlEventData_t*, unsigned int);
typedef nvmlReturn_t (*nvmlEventSetFree_fn)(nvmlEventSet_t);
typedef nvmlReturn_t (*nvmlDeviceGetComputeRunningProcesses_v3_fn)(nvmlDevice_t, unsigned int*,
                                                                   nvmlProcessInfo_t*);
typedef nvmlReturn_t (*nvmlDeviceGetUtilizationRates_fn)(nvmlDevice_t, nvmlUtilization_t*);
typedef nvmlReturn_t (*nvmlSystemGetProcessName_fn)(unsigned int, char*, unsigned int);
// current and pending mode: NVML_DEVICE_MIG_ENABLE / _DISABLE
typedef nvmlReturn_t (*nvmlDeviceGetMigMode_fn)(nvmlDevice_t, unsigned int*, unsigned int*);
typedef nvmlReturn_t (*nvmlDeviceGetGpuFabricInfo_fn)(nvmlDevice_t, nvmlGpuFabricInfo_t*);
// Takes the v2 or v3 struct, told apart by its version field (nvmlGpuFabricInfoV_t in nvml.h).
typedef nvmlReturn_t (*nvmlDeviceGetGpuFabricInfoV_fn)(nvmlDevice_t, nvmlGpuFabricInfoV_t*);
typedef nvmlReturn_t (*nvmlDeviceGetFieldValues_fn)(nvmlDevice_t, int, nvmlFieldValue_t*);

}  // extern "C"

// NVML_NVLINK_MAX_LINKS: 36 since the CUDA 13.3 nvml.h (18 before). Links past a board's own
// count answer NVML_ERROR_INVALID_ARGUMENT, so scanning all 36 costs nothing on older GPUs.
inline constexpr unsigned kNvmlNvLinkMaxLinks = 36;
inline constexpr unsigned kNvmlDeviceNameBufferSize = 96;    // NVML_DEVICE_NAME_V2_BUFFER_SIZE
inline constexpr unsigned kNvmlDeviceSerialBufferSize = 30;  // NVML_DEVICE_SERIAL_BUFFER_SIZE
inline constexpr unsigned kNvmlDeviceUuidBufferSize = 96;    // NVML_DEVICE_UUID_V2_BUFFER_SIZE
inline constexpr unsigned kNvmlVbiosVersionBufferSize =
    32;  // NVML_DEVICE_VBIOS_VERSION_BUFFER_SIZE
inline constexpr unsigned kNvmlDriverVersionBufferSize = 80;  // NVML_SYSTEM_DRIVER_VERSION_...

// nvmlClocksEventReasons bits (formerly "throttle reasons").
inline constexpr unsigned long long kNvmlClocksEventHwSlowdown = 0x8ULL;
inline constexpr unsigned long long kNvmlClocksEventSwThermal = 0x20ULL;
inline constexpr unsigned long long kNvmlClocksEventHwThermal = 0x40ULL;
inline constexpr unsigned long long kNvmlClocksEventHwPowerBrake = 0x80ULL;

// NVML_VALUE_NOT_AVAILABLE ((-1) in nvml.h) as it reads in an unsigned long long field.
inline constexpr unsigned long long kNvmlValueNotAvailable = ~0ULL;

// The layouts above must match nvml.h byte for byte (the library writes into them); the
// ctest nvml_abi_check asserts every size and offset against nvml_abi_facts.txt.

inline constexpr unsigned kNvmlDeviceMigEnable = 1;  // NVML_DEVICE_MIG_ENABLE
// nvmlTemperature_v1: NVML_STRUCT_VERSION(Temperature, 1) = sizeof | (1 << 24)
inline constexpr unsigned kNvmlTemperatureV1 = sizeof(nvmlTemperature_v1_t) | (1u << 24);

// nvmlGpuFabricInfo_v2 / _v3: NVML_STRUCT_VERSION(GpuFabricInfo, N) = sizeof | (N << 24).
inline constexpr unsigned kNvmlGpuFabricInfoV2 = sizeof(nvmlGpuFabricInfo_v2_t) | (2u << 24);
inline constexpr unsigned kNvmlGpuFabricInfoV3 = sizeof(nvmlGpuFabricInfo_v3_t) | (3u << 24);
// NVML_GPU_FABRIC_STATE_* (the probe of the GPU's registration with Fabric Manager).
inline constexpr unsigned char kNvmlGpuFabricStateNotSupported = 0;
inline constexpr unsigned char kNvmlGpuFabricStateNotStarted = 1;
inline constexpr unsigned char kNvmlGpuFabricStateInProgress = 2;
inline constexpr unsigned char kNvmlGpuFabricStateCompleted = 3;
// NVML_GPU_FABRIC_HEALTH_SUMMARY_* (v3 only).
inline constexpr unsigned char kNvmlGpuFabricHealthSummaryNotSupported = 0;
inline constexpr unsigned char kNvmlGpuFabricHealthSummaryHealthy = 1;
inline constexpr unsigned char kNvmlGpuFabricHealthSummaryUnhealthy = 2;
inline constexpr unsigned char kNvmlGpuFabricHealthSummaryLimitedCapacity = 3;
// healthMask fields: NVML_GPU_FABRIC_HEALTH_GET(mask, type) = (mask >> SHIFT) & WIDTH. Every
// two-bit field reads 0 not supported, 1 TRUE, 2 FALSE; INCORRECT_CONFIGURATION (4 bits) reads
// 0 not supported, 1 NONE (correct), 2..8 the kind of misconfiguration.
inline constexpr unsigned kNvmlGpuFabricHealthShiftDegradedBw = 0;
inline constexpr unsigned kNvmlGpuFabricHealthShiftRouteRecovery = 2;
inline constexpr unsigned kNvmlGpuFabricHealthShiftRouteUnhealthy = 4;
inline constexpr unsigned kNvmlGpuFabricHealthShiftAccessTimeoutRecovery = 6;
inline constexpr unsigned kNvmlGpuFabricHealthShiftIncorrectConfiguration = 8;
inline constexpr unsigned kNvmlGpuFabricHealthWidthTwoBit = 0x3;
inline constexpr unsigned kNvmlGpuFabricHealthWidthIncorrectConfiguration = 0xf;
inline constexpr unsigned kNvmlGpuFabricHealthTrue = 1;        // NVML_GPU_FABRIC_HEALTH_MASK_*_TRUE
inline constexpr unsigned kNvmlGpuFabricHealthConfigNone = 1;  // ..._INCORRECT_CONFIGURATION_NONE

// NVML_FI_DEV_NVLINK_LINK_COUNT: "Number of NVLinks present on the device" (nvml.h, CUDA 13.3
// header line 2503; in every header since NVML 11). Present, not active: a link's state is
// nvmlDeviceGetNvLinkState. DCGM sizes its NVLink scan with it (DcgmCacheManager
// InitializeNvLinkCount), as nvml_nvlink does.
inline constexpr unsigned kNvmlFieldNvLinkLinkCount = 91;

// NVLink5 (Blackwell) link counters, read with nvmlDeviceGetFieldValues with the link in
// scopeId ("NVLink counter field id 201-225 - Link ID needs to be specified in the scopeId
// field", nvml.h 13.3.29 line 2743). They replace the DL counters of
// nvmlDeviceGetNvLinkErrorCounter, which nvml.h marks "unsupported for Blackwell+" (lines
// 2649-2666). Names and comments: nvml.h lines 2752-2786.
inline constexpr unsigned kNvmlFieldNvLinkMalformedPacketErrors = 206;
inline constexpr unsigned kNvmlFieldNvLinkBufferOverrunErrors = 207;
inline constexpr unsigned kNvmlFieldNvLinkRcvErrors = 208;
inline constexpr unsigned kNvmlFieldNvLinkRcvRemoteErrors = 209;
inline constexpr unsigned kNvmlFieldNvLinkRcvGeneralErrors = 210;
inline constexpr unsigned kNvmlFieldNvLinkLocalLinkIntegrityErrors = 211;
inline constexpr unsigned kNvmlFieldNvLinkRecoverySuccessfulEvents = 213;
inline constexpr unsigned kNvmlFieldNvLinkRecoveryFailedEvents = 214;
inline constexpr unsigned kNvmlFieldNvLinkEffectiveErrors = 219;
inline constexpr unsigned kNvmlFieldNvLinkEffectiveBer = 220;
inline constexpr unsigned kNvmlFieldNvLinkSymbolErrors = 221;
// The BER fields' encoding: "Bit [0:7]: BER Exponent value, Bit [8:11]: BER MANTISSA value"
// (NVML_NVLINK_BER_EXP_SHIFT/WIDTH, NVML_NVLINK_BER_MANTISSA_SHIFT/WIDTH, nvml.h lines 9372-9376).
inline constexpr unsigned kNvmlNvLinkBerExpShift = 0;
inline constexpr unsigned kNvmlNvLinkBerExpMask = 0xff;
inline constexpr unsigned kNvmlNvLinkBerMantissaShift = 8;
inline constexpr unsigned kNvmlNvLinkBerMantissaMask = 0xf;

// NVML_FI_DEV_GET_GPU_RECOVERY_ACTION: the action the driver says this GPU needs, as
// nvmlDeviceGpuRecoveryAction_t (NVML_GPU_RECOVERY_ACTION_*), read with nvmlDeviceGetFieldValues.
inline constexpr unsigned kNvmlFieldGpuRecoveryAction = 230;
inline constexpr unsigned kNvmlGpuRecoveryActionNone = 0;
inline constexpr unsigned kNvmlGpuRecoveryActionGpuReset = 1;
inline constexpr unsigned kNvmlGpuRecoveryActionNodeReboot = 2;
inline constexpr unsigned kNvmlGpuRecoveryActionDrainP2p = 3;
inline constexpr unsigned kNvmlGpuRecoveryActionDrainAndReset = 4;
inline constexpr unsigned kNvmlGpuRecoveryActionRecoverImexDomain = 5;
// nvmlValueType_t: which nvmlValue_t member a field value arrived in.
inline constexpr int kNvmlValueTypeDouble = 0;
inline constexpr int kNvmlValueTypeUnsignedInt = 1;
inline constexpr int kNvmlValueTypeUnsignedLong = 2;
inline constexpr int kNvmlValueTypeUnsignedLongLong = 3;
inline constexpr int kNvmlValueTypeSignedLongLong = 4;
inline constexpr int kNvmlValueTypeSignedInt = 5;
inline constexpr int kNvmlValueTypeUnsignedShort = 6;

// nvmlEventType bit for critical XID errors.
inline constexpr unsigned long long kNvmlEventTypeXidCriticalError = 0x8ULL;
