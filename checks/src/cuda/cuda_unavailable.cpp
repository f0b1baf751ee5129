// Built instead of the CUDA probes when CUDA is off (VIGIL_WITH_CUDA=OFF or no nvcc found): the
// seven checks still exist, by the same names and short names (the check catalog's), and report
// themselves as not applicable.
#include <string_view>

#include "check_factories.h"
#include "vigil/report/check_catalog.h"

namespace vigil {
namespace {

constexpr const char* kWhy = "built without CUDA (VIGIL_WITH_CUDA=OFF)";

class CudaUnavailableCheck final : public Check {
 public:
  // Named as the catalog names the real probe (vigil/report/check_catalog.h).
  explicit CudaUnavailableCheck(std::string_view name) : name_(name) {}
  std::string_view name() const override { return name_; }
  Applies applies(const CheckContext&) const override { return {false, kWhy}; }
  CheckResult run(const CheckContext&) override { return skipped(name_, kWhy); }

 private:
  std::string_view name_;
};

}  // namespace

std::unique_ptr<Check> make_gpu_gemm_check() {
  return std::make_unique<CudaUnavailableCheck>("gpu_gemm");
}
std::unique_ptr<Check> make_gpu_hbm_check() {
  return std::make_unique<CudaUnavailableCheck>("gpu_hbm");
}
std::unique_ptr<Check> make_gpu_pcie_bw_check() {
  return std::make_unique<CudaUnavailableCheck>("gpu_pcie_bw");
}
std::unique_ptr<Check> make_gpu_memtest_check() {
  return std::make_unique<CudaUnavailableCheck>("gpu_memtest");
}
std::unique_ptr<Check> make_gpu_sdc_check() {
  return std::make_unique<CudaUnavailableCheck>("gpu_sdc");
}
std::unique_ptr<Check> make_gpu_soak_check() {
  return std::make_unique<CudaUnavailableCheck>("gpu_soak");
}
std::unique_ptr<Check> make_gpu_sanity_check() {
  return std::make_unique<CudaUnavailableCheck>("gpu_sanity");
}

}  // namespace vigil
