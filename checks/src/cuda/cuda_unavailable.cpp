// Built instead of the CUDA probes when CUDA is off (VIGIL_WITH_CUDA=OFF or no nvcc found): the
// five checks still exist, by the same names, and report themselves as not applicable.
#include <string>

#include "check_factories.h"

namespace vigil {
namespace {

constexpr const char* kWhy = "built without CUDA (VIGIL_WITH_CUDA=OFF)";

class CudaUnavailableCheck final : public Check {
 public:
  CudaUnavailableCheck(std::string name, std::string short_name)
      : name_(std::move(name)), short_name_(std::move(short_name)) {}
  std::string_view name() const override { return name_; }
  std::string_view short_name() const override { return short_name_; }
  Applies applies(const CheckContext&) const override { return {false, kWhy}; }
  CheckResult run(const CheckContext&) override { return skipped(name_, kWhy); }

 private:
  std::string name_;
  std::string short_name_;
};

}  // namespace

std::unique_ptr<Check> make_gpu_gemm_check() {
  return std::make_unique<CudaUnavailableCheck>("gpu_gemm", "gemm");
}
std::unique_ptr<Check> make_gpu_hbm_check() {
  return std::make_unique<CudaUnavailableCheck>("gpu_hbm", "hbm");
}
std::unique_ptr<Check> make_gpu_pcie_bw_check() {
  return std::make_unique<CudaUnavailableCheck>("gpu_pcie_bw", "h2d");
}
std::unique_ptr<Check> make_gpu_memtest_check() {
  return std::make_unique<CudaUnavailableCheck>("gpu_memtest", "memtest");
}
std::unique_ptr<Check> make_gpu_sanity_check() {
  return std::make_unique<CudaUnavailableCheck>("gpu_sanity", "sanity");
}

}  // namespace vigil
