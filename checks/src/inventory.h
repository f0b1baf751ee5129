#pragma once
// The node's GPUs (name and PCI device id per GPU) as NVML reports them, for SKU detection.
#include <chrono>
#include <string>

#include "vigil/base/result.h"
#include "vigil/checks/sku.h"

namespace vigil {

// In a child process, killed after `timeout` (a hung driver: error).
Result<GpuInventory> read_gpu_inventory(
    const std::string& nvml_library, std::chrono::milliseconds timeout = std::chrono::seconds(60));

// The report's "gpus" from an inventory: one entry per GPU with its serial and UUID, none when
// the driver gave neither for any GPU (nothing to tell parts apart by).
std::vector<GpuPart> gpu_parts(const GpuInventory& inventory);

// The same, in this process: only for code that already runs in a child (the passive suite).
Result<GpuInventory> read_gpu_inventory_here(const std::string& nvml_library);

}  // namespace vigil
