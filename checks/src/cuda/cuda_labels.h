#pragma once
// Which NVML index is each CUDA device? The CUDA probes measure by CUDA ordinal, but every report
// names GPUs by NVML index (PCI bus order), as the NVML checks do, and a probe's healthy history is
// kept per GPU. CUDA_DEVICE_ORDER=PCI_BUS_ID (set when unset) makes ordinals follow bus order only
// when the process sees every GPU: with CUDA_VISIBLE_DEVICES as a subset, reordered or by UUID
// (srun steps, --gpu-bind) ordinal k is some other physical GPU, and its figures would be named
// and remembered as another's. The PCI bus id is the one name both APIs share.
#include <string>
#include <vector>

namespace vigil::cuda_probe {

// "00000000:18:00.0" (NVML) and "0000:18:00.0" (cudaDeviceGetPCIBusId) name the same device:
// domain as a number, bus:device.function lowercase.
std::string normal_bus_id(const std::string& id);

// label[ordinal] = the NVML index whose bus id equals CUDA device `ordinal`'s. When any device
// cannot be matched (no NVML, an unreadable id, a duplicate), the ordinals themselves and
// `matched` false: the report then says its GPU numbers are CUDA's.
struct CudaLabels {
  std::vector<int> label;
  bool matched = false;
  int ordinal_of(int label) const;  // -1 when none
};
CudaLabels cuda_labels(const std::vector<std::string>& nvml_bus_ids,
                       const std::vector<std::string>& cuda_bus_ids);

}  // namespace vigil::cuda_probe
