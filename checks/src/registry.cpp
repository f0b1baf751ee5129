#include "vigil/checks/registry.h"

#include "check_factories.h"

namespace vigil {

std::vector<std::unique_ptr<Check>> all_checks() {
  // Run order: cheap counter reads first, then link state, then bandwidth/compute probes.
  using Factory = std::unique_ptr<Check> (*)();
  static const std::vector<Factory> kChecks = {
      // --- NVML ---
      // --- InfiniBand ---
      // --- CUDA probes ---
      // --- all_reduce ---
  };
  std::vector<std::unique_ptr<Check>> out;
  for (Factory f : kChecks) out.push_back(f());
  return out;
}

}  // namespace vigil
