#include "cuda/cuda_driver.h"

#ifdef VIGIL_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace vigil::cuda_probe {

DriverCompat cuda_driver_compat() {
  DriverCompat c;
#ifdef VIGIL_HAVE_CUDA
  c.runtime = CUDART_VERSION;
  if (cudaDriverGetVersion(&c.driver) != cudaSuccess) c.driver = 0;
#endif
  return c;
}

std::string cuda_version_text(int v) {
  return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10);
}

std::string driver_too_old_message(const DriverCompat& c) {
  const std::string need = std::to_string(c.runtime / 1000) + ".x";
  // R580 is the first branch for CUDA 13.x, R525 for 12.x (NVIDIA "CUDA Compatibility", minor
  // version compatibility table).
  const std::string branch = c.runtime >= 13000 ? "R580" : c.runtime >= 12000 ? "R525" : "";
  return "the NVIDIA driver supports CUDA " + cuda_version_text(c.driver) +
         ", this build of Vigil needs CUDA " + need +
         (branch.empty() ? "" : " (driver branch " + branch + " or newer)") +
         "; fix: upgrade the driver, or install the CUDA forward compatibility package "
         "(cuda-compat-" +
         std::to_string(c.runtime / 1000) + "-" + std::to_string(c.runtime % 1000 / 10) +
         ", data center GPUs only), or run a Vigil build made with the CUDA toolkit the driver "
         "supports (docs/driver-matrix.md)";
}

std::optional<CheckResult> skip_if_driver_too_old(std::string_view check) {
  const DriverCompat c = cuda_driver_compat();
  if (!c.too_old()) return std::nullopt;
  CheckResult r = skipped(std::string(check), driver_too_old_message(c));
  r.fault_code = "VIGIL-CUDA-DRIVER-TOO-OLD";
  return r;
}

}  // namespace vigil::cuda_probe
