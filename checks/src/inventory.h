#pragma once
// The node's GPUs (name and PCI device id per GPU) as NVML reports them, for SKU detection.
#include <string>

#include "vigil/base/result.h"
#include "vigil/checks/sku.h"

namespace vigil {

Result<GpuInventory> read_gpu_inventory(const std::string& nvml_library);

}  // namespace vigil
