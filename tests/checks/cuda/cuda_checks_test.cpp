// The four CUDA probes through their factories. On a machine without a usable GPU (CI) this
// covers names, applies() and the run-time "CUDA unavailable" path; the GPU paths themselves are
// validated with scripts/gpu-validate.sh (docs/cuda-probes.md).
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "check_factories.h"
#include "cuda/cuda_driver.h"
#include "scoped_env.h"
#include "temp_dir.h"
#include "vigil/checks/registry.h"
#include "vigil/report/check_catalog.h"

#ifdef VIGIL_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "cuda/cublaslt_loader.h"
#endif

namespace vigil {
namespace {

struct Probe {
  std::unique_ptr<Check> (*make)();
  const char* name;
};
const Probe kProbes[] = {{make_gpu_gemm_check, "gpu_gemm"},
                         {make_gpu_hbm_check, "gpu_hbm"},
                         {make_gpu_pcie_bw_check, "gpu_pcie_bw"},
                         {make_gpu_memtest_check, "gpu_memtest"},
                         {make_gpu_sanity_check, "gpu_sanity"}};

TEST(CudaProbes, factories_make_checks_named_as_in_the_threshold_files) {
  for (const Probe& p : kProbes) {
    std::unique_ptr<Check> c = p.make();
    ASSERT_TRUE(c);
    EXPECT_EQ(c->name(), p.name);
    EXPECT_FALSE(find_check_spec(p.name)->full_only()) << p.name;
  }
}

TEST(CudaProbes, registry_lists_the_four_probes_in_order) {
  std::vector<std::string> names;
  for (const auto& c : all_checks()) names.emplace_back(c->name());
  auto it = std::find(names.begin(), names.end(), "gpu_gemm");
  ASSERT_NE(it, names.end());
  std::vector<std::string> run(it, names.end() - it >= 4 ? it + 4 : names.end());
  EXPECT_EQ(run, (std::vector<std::string>{"gpu_gemm", "gpu_hbm", "gpu_pcie_bw", "gpu_memtest"}));
}

// Minor version compatibility: only an older major version is too old (cuda_driver.h).
TEST(CudaDriver, only_an_older_major_version_is_too_old) {
  using cuda_probe::DriverCompat;
  EXPECT_TRUE((DriverCompat{12020, 13000}.too_old()));   // R535 under a CUDA 13 build
  EXPECT_TRUE((DriverCompat{12080, 13000}.too_old()));   // R570
  EXPECT_FALSE((DriverCompat{13000, 13010}.too_old()));  // 13.1 runtime on a 13.0 driver
  EXPECT_FALSE((DriverCompat{12020, 12080}.too_old()));  // 12.8 build on R535
  EXPECT_FALSE((DriverCompat{0, 13000}.too_old()));      // no driver: the caller's error
  EXPECT_EQ(
      cuda_probe::driver_too_old_message({11080, 12040})
          .find("the NVIDIA driver supports CUDA 11.8, this build of Vigil needs CUDA 12.x (driver "
                "branch R525 or newer)"),
      0u);
}

#ifndef VIGIL_HAVE_CUDA

TEST(CudaProbes, without_cuda_every_probe_is_not_applicable_and_never_fails) {
  CheckContext ctx;
  ctx.gpu_count = 8;
  for (const Probe& p : kProbes) {
    std::unique_ptr<Check> c = p.make();
    Applies a = c->applies(ctx);
    EXPECT_FALSE(a.yes) << p.name;
    EXPECT_EQ(a.why_not, "built without CUDA (VIGIL_WITH_CUDA=OFF)") << p.name;
    CheckResult r = c->run(ctx);
    EXPECT_EQ(r.status, Status::kSkipped) << p.name;
    EXPECT_EQ(r.check, p.name);
  }
}

#else

TEST(CudaProbes, applies_skips_a_node_where_nvml_counts_no_gpu) {
  CheckContext ctx;
  ctx.gpu_count = 0;
  for (const Probe& p : kProbes) {
    Applies a = p.make()->applies(ctx);
    EXPECT_FALSE(a.yes) << p.name;
    EXPECT_NE(a.why_not.find("no GPUs"), std::string::npos) << a.why_not;
  }
}

TEST(CudaProbes, applies_leaves_the_verdict_to_run_when_nvml_is_unavailable_or_sees_gpus) {
  for (int gpus : {-1, 8}) {
    CheckContext ctx;
    ctx.gpu_count = gpus;
    for (const Probe& p : kProbes) EXPECT_TRUE(p.make()->applies(ctx).yes) << p.name << gpus;
  }
}

// gpu_gemm opens cuBLASLt itself (vigil-check does not link it): every entry point resolves, and
// the library answers a call that needs no GPU.
TEST(CudaProbes, cublaslt_is_loaded_at_run_time_with_every_entry_point) {
  Result<const cuda_probe::CublasLtApi*> lt = cuda_probe::load_cublaslt();
  ASSERT_TRUE(lt) << lt.error().message;
  EXPECT_STREQ((*lt)->get_status_name(CUBLAS_STATUS_NOT_INITIALIZED),
               "CUBLAS_STATUS_NOT_INITIALIZED");
  EXPECT_NE((*lt)->matmul, nullptr);
  EXPECT_EQ(cuda_probe::load_cublaslt().value(), *lt) << "loaded once per process";
}

TEST(CudaProbes, run_without_a_usable_cuda_driver_is_an_error_with_cudas_message) {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e == cudaSuccess && count > 0) {
    GTEST_SKIP() << count << " CUDA device(s) visible: the GPU path runs here, see "
                 << "scripts/gpu-validate.sh";
  }
  const std::string expected =
      e != cudaSuccess ? std::string(cudaGetErrorString(e)) : "no visible CUDA device";
  CheckContext ctx;
  ctx.gpu_count = -1;
  for (const Probe& p : kProbes) {
    CheckResult r = p.make()->run(ctx);
    EXPECT_EQ(r.check, p.name);
    EXPECT_EQ(r.status, Status::kError) << p.name << ": " << r.message;
    EXPECT_EQ(r.fault_code, "VIGIL-CUDA-UNAVAILABLE") << p.name;
    EXPECT_NE(r.message.find(expected), std::string::npos) << r.message;
    EXPECT_NE(r.message.find("cudaGetDeviceCount"), std::string::npos) << r.message;
    EXPECT_TRUE(r.measurements.empty()) << p.name;
  }
}

// Busy GPUs are judged through NVML before the first CUDA call: on this machine (no CUDA device)
// a probe that reached CUDA would report VIGIL-CUDA-UNAVAILABLE instead.
TEST(CudaProbes, a_gpu_busy_with_another_process_makes_every_probe_error_before_cuda_is_touched) {
  vigil::testing::ScopedEnv fixture(
      "VIGIL_FAKE_NVML_FIXTURE",
      std::string(VIGIL_SOURCE_DIR) + "/tests/fixtures/nvml/busy_gpu2.json");
  CheckContext ctx;
  ctx.gpu_count = 8;
  ctx.nvml_library = VIGIL_FAKE_NVML_LIBRARY;
  ctx.proc_root = "/nonexistent/proc";  // the process name comes from the fixture
  for (const Probe& p : kProbes) {
    CheckResult r = p.make()->run(ctx);
    EXPECT_EQ(r.check, p.name);
    EXPECT_EQ(r.status, Status::kError) << p.name << ": " << r.message;
    EXPECT_EQ(r.fault_code, "VIGIL-GPU-BUSY") << p.name << ": " << r.message;
    EXPECT_EQ(r.message.rfind("GPU busy: gpu2 pid 4194305 python 40 GiB", 0), 0u) << r.message;
    EXPECT_TRUE(r.measurements.empty()) << p.name;
  }
}

// A node in MIG mode: every probe skips (a slice would read as a slow GPU), before CUDA.
TEST(CudaProbes, mig_mode_makes_every_probe_skip_before_cuda_is_touched) {
  vigil::testing::TempDir tmp;
  std::ifstream in(std::string(VIGIL_SOURCE_DIR) + "/tests/fixtures/nvml/healthy_8x_h100.json");
  nlohmann::json j = nlohmann::json::parse(in);
  j["gpus"][3]["mig"] = true;
  vigil::testing::ScopedEnv fixture("VIGIL_FAKE_NVML_FIXTURE", tmp.write("mig.json", j.dump()));
  CheckContext ctx;
  ctx.gpu_count = 8;
  ctx.nvml_library = VIGIL_FAKE_NVML_LIBRARY;
  for (const Probe& p : kProbes) {
    CheckResult r = p.make()->run(ctx);
    EXPECT_EQ(r.status, Status::kSkipped) << p.name << ": " << r.message;
    EXPECT_EQ(r.message.rfind("MIG enabled on gpu3: ", 0), 0u) << r.message;
    EXPECT_TRUE(r.measurements.empty()) << p.name;
  }
}

#endif

}  // namespace
}  // namespace vigil
