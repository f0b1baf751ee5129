#pragma once
// Private NVML loader: dlopen()s the library named by CheckContext::nvml_library (the real
// libnvidia-ml.so.1, or the fake one in tests) and resolves the entry points Vigil uses.
// Required entry points missing -> the library is unusable; optional ones missing -> the
// probes that need them report "not supported".
#include <memory>
#include <string>

#include "nvml_api.h"
#include "vigil/base/result.h"

namespace vigil::nvml {

// Resolved entry points. Optional ones are nullptr when the library does not export them.
struct Api {
  // required
  nvmlInit_v2_fn init = nullptr;
  nvmlShutdown_fn shutdown = nullptr;
  nvmlErrorString_fn error_string = nullptr;
  nvmlDeviceGetCount_v2_fn device_get_count = nullptr;
  nvmlDeviceGetHandleByIndex_v2_fn device_get_handle_by_index = nullptr;
  // optional
  nvmlSystemGetDriverVersion_fn system_get_driver_version = nullptr;
  nvmlDeviceGetName_fn device_get_name = nullptr;
  nvmlDeviceGetVbiosVersion_fn device_get_vbios_version = nullptr;
  nvmlDeviceGetSerial_fn device_get_serial = nullptr;
  nvmlDeviceGetUUID_fn device_get_uuid = nullptr;
  nvmlDeviceGetPciInfo_v3_fn device_get_pci_info = nullptr;
  nvmlDeviceGetTotalEccErrors_fn device_get_total_ecc_errors = nullptr;
  nvmlDeviceGetRemappedRows_fn device_get_remapped_rows = nullptr;
  nvmlDeviceGetRetiredPagesPendingStatus_fn device_get_retired_pages_pending = nullptr;
  // nvmlDeviceGetCurrentClocksEventReasons, or the older ...ClocksThrottleReasons (same ABI).
  nvmlDeviceGetCurrentClocksEventReasons_fn device_get_clocks_event_reasons = nullptr;
  nvmlDeviceGetUInt_fn device_get_curr_pcie_gen = nullptr;
  nvmlDeviceGetUInt_fn device_get_curr_pcie_width = nullptr;
  nvmlDeviceGetUInt_fn device_get_max_pcie_gen = nullptr;
  nvmlDeviceGetUInt_fn device_get_max_pcie_width = nullptr;
  nvmlDeviceGetUInt_fn device_get_pcie_replay_counter = nullptr;
  nvmlDeviceGetNvLinkState_fn device_get_nvlink_state = nullptr;
  nvmlDeviceGetNvLinkErrorCounter_fn device_get_nvlink_error_counter = nullptr;
  nvmlDeviceGetTemperature_fn device_get_temperature = nullptr;
  // Preferred when the driver has it (nvmlDeviceGetTemperature is deprecated since CUDA 13.0).
  nvmlDeviceGetTemperatureV_fn device_get_temperature_v = nullptr;
  nvmlDeviceGetTemperatureThreshold_fn device_get_temperature_threshold = nullptr;
  nvmlDeviceGetUInt_fn device_get_power_usage = nullptr;      // milliwatts
  nvmlDeviceGetClockInfo_fn device_get_clock_info = nullptr;  // MHz, by nvmlClockType_t
  nvmlEventSetCreate_fn event_set_create = nullptr;
  nvmlDeviceRegisterEvents_fn device_register_events = nullptr;
  nvmlEventSetWait_v2_fn event_set_wait = nullptr;
  nvmlEventSetFree_fn event_set_free = nullptr;
  // Who else uses a GPU (gpu_busy.h): compute processes (_v3 exists from driver 510 on),
  // utilization, and a process's name.
  nvmlDeviceGetComputeRunningProcesses_v3_fn device_get_compute_running_processes = nullptr;
  nvmlDeviceGetUtilizationRates_fn device_get_utilization_rates = nullptr;
  nvmlSystemGetProcessName_fn system_get_process_name = nullptr;
  // MIG mode (A100 and later): the CUDA probes measure whole GPUs, not MIG slices.
  nvmlDeviceGetMigMode_fn device_get_mig_mode = nullptr;
  // NVLink fabric registration (Hopper and later on NVSwitch systems): the versioned call of
  // R550+ drivers, and the unversioned one, which is all R535 drivers export.
  nvmlDeviceGetGpuFabricInfoV_fn device_get_gpu_fabric_info_v = nullptr;
  nvmlDeviceGetGpuFabricInfo_fn device_get_gpu_fabric_info = nullptr;
  // Field values (here: NVML_FI_DEV_GET_GPU_RECOVERY_ACTION).
  nvmlDeviceGetFieldValues_fn device_get_field_values = nullptr;
};

// An opened and initialised NVML. Destruction calls nvmlShutdown and dlclose.
class Library {
 public:
  // dlopen(path, RTLD_NOW), resolve, nvmlInit_v2. The Error message is the dlerror() text or
  // the NVML error string; `where` names the failing step.
  static Result<std::unique_ptr<Library>> open(const std::string& path);
  ~Library();
  Library(const Library&) = delete;
  Library& operator=(const Library&) = delete;

  const Api& api() const { return api_; }
  // nvmlErrorString(rc), or "NVML error <rc>".
  std::string error_string(nvmlReturn_t rc) const;

 private:
  Library() = default;
  void* handle_ = nullptr;
  bool initialised_ = false;
  Api api_;
};

// Calls an optional entry point; a missing one reads as NVML_ERROR_FUNCTION_NOT_FOUND.
template <typename Fn, typename... Args>
nvmlReturn_t call(Fn fn, Args... args) {
  return fn ? fn(args...) : NVML_ERROR_FUNCTION_NOT_FOUND;
}

// True for return codes that mean "this probe does not exist here" rather than "it failed".
inline bool is_not_supported(nvmlReturn_t rc) {
  return rc == NVML_ERROR_NOT_SUPPORTED || rc == NVML_ERROR_FUNCTION_NOT_FOUND;
}

}  // namespace vigil::nvml
