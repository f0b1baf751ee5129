#include "inventory.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "nvml/nvml_loader.h"
#include "vigil/checks/runner.h"

namespace vigil {

namespace {

// An identifier as the report's "gpus" takes it; empty otherwise, as if the driver had not said
// (a part is then told apart by its other identifier).
std::string printable(const char* s) { return is_part_identifier(s) ? std::string(s) : ""; }

// Reads the inventory in this process; JSON {"names", "ids", "serials", "uuids", "vbios",
// "indices", "driver"} or {"error"}.
nlohmann::json inventory_json(const std::string& nvml_library) {
  nlohmann::json j;
  auto lib = nvml::Library::open(nvml_library);
  if (!lib) return nlohmann::json{{"error", lib.error().to_string()}};
  const auto& api = (*lib)->api();
  unsigned count = 0;
  if (nvmlReturn_t rc = api.device_get_count(&count); rc != NVML_SUCCESS) {
    return nlohmann::json{{"error", "nvmlDeviceGetCount: " + (*lib)->error_string(rc)}};
  }
  j["names"] = nlohmann::json::array();
  j["ids"] = nlohmann::json::array();
  j["serials"] = nlohmann::json::array();
  j["uuids"] = nlohmann::json::array();
  j["vbios"] = nlohmann::json::array();
  j["indices"] = nlohmann::json::array();
  char driver[kNvmlDriverVersionBufferSize] = {};
  if (nvml::call(api.system_get_driver_version, driver, kNvmlDriverVersionBufferSize) !=
      NVML_SUCCESS)
    driver[0] = '\0';
  j["driver"] = printable(driver);
  for (unsigned i = 0; i < count; ++i) {
    nvmlDevice_t dev{};
    if (api.device_get_handle_by_index(i, &dev) != NVML_SUCCESS) continue;
    char name[96] = {};
    nvml::call(api.device_get_name, dev, name, static_cast<unsigned>(sizeof name));
    nvmlPciInfo_t pci{};
    unsigned id = 0;
    if (nvml::call(api.device_get_pci_info, dev, &pci) == NVML_SUCCESS) id = pci.pciDeviceId >> 16;
    char serial[kNvmlDeviceSerialBufferSize] = {};
    if (nvml::call(api.device_get_serial, dev, serial, kNvmlDeviceSerialBufferSize) != NVML_SUCCESS)
      serial[0] = '\0';
    char uuid[kNvmlDeviceUuidBufferSize] = {};
    if (nvml::call(api.device_get_uuid, dev, uuid, kNvmlDeviceUuidBufferSize) != NVML_SUCCESS)
      uuid[0] = '\0';
    char vbios[kNvmlVbiosVersionBufferSize] = {};
    if (nvml::call(api.device_get_vbios_version, dev, vbios, kNvmlVbiosVersionBufferSize) !=
        NVML_SUCCESS)
      vbios[0] = '\0';
    j["names"].push_back(name);
    j["vbios"].push_back(printable(vbios));
    j["ids"].push_back(id);
    j["serials"].push_back(printable(serial));
    j["uuids"].push_back(printable(uuid));
    j["indices"].push_back(i);
  }
  return j;
}

Result<GpuInventory> from_json(const nlohmann::json& j) {
  if (j.is_discarded()) return Error{"unreadable answer from the inventory child", "GPU inventory"};
  if (j.contains("error")) return Error{j["error"].get<std::string>(), "GPU inventory"};
  GpuInventory inv;
  inv.gpu_names = j["names"].get<std::vector<std::string>>();
  inv.pci_device_ids = j["ids"].get<std::vector<unsigned>>();
  inv.serials = j["serials"].get<std::vector<std::string>>();
  inv.uuids = j["uuids"].get<std::vector<std::string>>();
  inv.indices = j["indices"].get<std::vector<int>>();
  inv.vbios = j["vbios"].get<std::vector<std::string>>();
  inv.driver = j["driver"].get<std::string>();
  return inv;
}

}  // namespace

Result<GpuInventory> read_gpu_inventory(const std::string& nvml_library,
                                        std::chrono::milliseconds timeout) {
  // NVML is opened in a child process: the parent forks a child per check afterwards.
  auto out = run_in_child([&] { return inventory_json(nvml_library).dump(); }, timeout);
  if (!out) return Error{out.error().message, "GPU inventory via " + nvml_library};
  return from_json(nlohmann::json::parse(*out, nullptr, false));
}

std::vector<GpuPart> gpu_parts(const GpuInventory& inventory) {
  std::vector<GpuPart> out;
  bool any = false;
  for (size_t i = 0; i < inventory.gpu_names.size(); ++i) {
    GpuPart p;
    p.index = i < inventory.indices.size() ? inventory.indices[i] : static_cast<int>(i);
    if (i < inventory.serials.size()) p.serial = inventory.serials[i];
    if (i < inventory.uuids.size()) p.uuid = inventory.uuids[i];
    if (i < inventory.vbios.size()) p.vbios = inventory.vbios[i];
    any |= !p.serial.empty() || !p.uuid.empty() || !p.vbios.empty();
    out.push_back(std::move(p));
  }
  if (!any) out.clear();
  return out;
}

Result<GpuInventory> read_gpu_inventory_here(const std::string& nvml_library) {
  return from_json(inventory_json(nvml_library));
}

}  // namespace vigil
