#include "nvml_loader.h"

#include <dlfcn.h>

namespace vigil::nvml {
namespace {

template <typename Fn>
void resolve(void* handle, const char* symbol, Fn& out) {
  out = reinterpret_cast<Fn>(dlsym(handle, symbol));
}

std::string last_dl_error(const std::string& fallback) {
  const char* e = dlerror();
  return e ? std::string(e) : fallback;
}

}  // namespace

Result<std::unique_ptr<Library>> Library::open(const std::string& path) {
  dlerror();  // clear any stale error
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    return Error{last_dl_error("cannot load " + path), "dlopen(" + path + ")"};
  }
  std::unique_ptr<Library> lib(new Library());
  lib->handle_ = handle;
  Api& a = lib->api_;
  resolve(handle, "nvmlInit_v2", a.init);
  resolve(handle, "nvmlShutdown", a.shutdown);
  resolve(handle, "nvmlErrorString", a.error_string);
  resolve(handle, "nvmlDeviceGetCount_v2", a.device_get_count);
  resolve(handle, "nvmlDeviceGetHandleByIndex_v2", a.device_get_handle_by_index);
  const std::pair<const char*, bool> required[] = {
      {"nvmlInit_v2", a.init != nullptr},
      {"nvmlShutdown", a.shutdown != nullptr},
      {"nvmlErrorString", a.error_string != nullptr},
      {"nvmlDeviceGetCount_v2", a.device_get_count != nullptr},
      {"nvmlDeviceGetHandleByIndex_v2", a.device_get_handle_by_index != nullptr},
  };
  for (const auto& [symbol, found] : required) {
    if (!found) {
      return Error{std::string("missing symbol ") + symbol + " (driver too old?)",
                   "dlsym(" + path + ")"};
    }
  }
  resolve(handle, "nvmlSystemGetDriverVersion", a.system_get_driver_version);
  resolve(handle, "nvmlDeviceGetName", a.device_get_name);
  resolve(handle, "nvmlDeviceGetVbiosVersion", a.device_get_vbios_version);
  resolve(handle, "nvmlDeviceGetSerial", a.device_get_serial);
  resolve(handle, "nvmlDeviceGetUUID", a.device_get_uuid);
  resolve(handle, "nvmlDeviceGetPciInfo_v3", a.device_get_pci_info);
  resolve(handle, "nvmlDeviceGetTotalEccErrors", a.device_get_total_ecc_errors);
  resolve(handle, "nvmlDeviceGetRemappedRows", a.device_get_remapped_rows);
  resolve(handle, "nvmlDeviceGetRetiredPagesPendingStatus", a.device_get_retired_pages_pending);
  resolve(handle, "nvmlDeviceGetCurrentClocksEventReasons", a.device_get_clocks_event_reasons);
  if (!a.device_get_clocks_event_reasons) {  // drivers before 535 only have the old name
    resolve(handle, "nvmlDeviceGetCurrentClocksThrottleReasons", a.device_get_clocks_event_reasons);
  }
  resolve(handle, "nvmlDeviceGetCurrPcieLinkGeneration", a.device_get_curr_pcie_gen);
  resolve(handle, "nvmlDeviceGetCurrPcieLinkWidth", a.device_get_curr_pcie_width);
  resolve(handle, "nvmlDeviceGetMaxPcieLinkGeneration", a.device_get_max_pcie_gen);
  resolve(handle, "nvmlDeviceGetMaxPcieLinkWidth", a.device_get_max_pcie_width);
  resolve(handle, "nvmlDeviceGetPcieReplayCounter", a.device_get_pcie_replay_counter);
  resolve(handle, "nvmlDeviceGetNvLinkState", a.device_get_nvlink_state);
  resolve(handle, "nvmlDeviceGetNvLinkErrorCounter", a.device_get_nvlink_error_counter);
  resolve(handle, "nvmlDeviceGetTemperature", a.device_get_temperature);
  resolve(handle, "nvmlDeviceGetTemperatureV", a.device_get_temperature_v);
  resolve(handle, "nvmlDeviceGetTemperatureThreshold", a.device_get_temperature_threshold);
  resolve(handle, "nvmlDeviceGetPowerUsage", a.device_get_power_usage);
  resolve(handle, "nvmlDeviceGetClockInfo", a.device_get_clock_info);
  resolve(handle, "nvmlEventSetCreate", a.event_set_create);
  resolve(handle, "nvmlDeviceRegisterEvents", a.device_register_events);
  resolve(handle, "nvmlEventSetWait_v2", a.event_set_wait);
  resolve(handle, "nvmlEventSetFree", a.event_set_free);
  resolve(handle, "nvmlDeviceGetComputeRunningProcesses_v3",
          a.device_get_compute_running_processes);
  resolve(handle, "nvmlDeviceGetUtilizationRates", a.device_get_utilization_rates);
  resolve(handle, "nvmlSystemGetProcessName", a.system_get_process_name);
  resolve(handle, "nvmlDeviceGetMigMode", a.device_get_mig_mode);
  resolve(handle, "nvmlDeviceGetGpuFabricInfoV", a.device_get_gpu_fabric_info_v);
  resolve(handle, "nvmlDeviceGetGpuFabricInfo", a.device_get_gpu_fabric_info);
  resolve(handle, "nvmlDeviceGetFieldValues", a.device_get_field_values);
  dlerror();  // optional symbols that were not found leave an error behind; drop it

  const nvmlReturn_t rc = a.init();
  if (rc != NVML_SUCCESS) {
    return Error{lib->error_string(rc), "nvmlInit_v2"};
  }
  lib->initialised_ = true;
  return lib;
}

Library::~Library() {
  if (initialised_ && api_.shutdown) api_.shutdown();
  if (handle_) dlclose(handle_);
}

std::string Library::error_string(nvmlReturn_t rc) const {
  const char* s = api_.error_string ? api_.error_string(rc) : nullptr;
  if (s && *s) return std::string(s) + " (" + std::to_string(rc) + ")";
  return "NVML error " + std::to_string(rc);
}

}  // namespace vigil::nvml
