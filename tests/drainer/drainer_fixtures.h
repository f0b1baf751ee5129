#pragma once
// What the drainer's unit tests share: a test configuration, a fake cluster of gpu-N nodes and
// one fatal-failing / passing report.
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "fake_clock.h"
#include "fakes.h"
#include "temp_dir.h"
#include "vigil/drainer/config.h"

namespace vigil::testing {

inline drainer::DrainerConfig drainer_test_config(const std::string& state_dir) {
  drainer::DrainerConfig c;
  c.auth_enabled = false;
  c.state_dir = state_dir;
  c.policy = drainer::default_policy();
  c.kubernetes.enabled = true;
  c.breaker.max_drains = 1000;
  c.breaker.max_percent = 100;
  return c;
}

inline std::shared_ptr<FakeSlurm> fake_cluster(int n) {
  auto s = std::make_shared<FakeSlurm>();
  for (int i = 0; i < n; ++i) s->add_node("gpu-" + std::to_string(i));
  return s;
}

inline NodeReport ecc_fail_report(const std::string& node, const std::string& run) {
  return make_report(node, run,
                     {make_check("nvml_ecc", Status::kFail, 2, 0, "count", "VIGIL-NVML-DBE")});
}

// gpu_gemm with 8 GPUs at ~800 TFLOP/s (a floor of 640 passes them all); gpu3 at `gpu3`,
// repeated `repeats` times at the same figure.
inline CheckResult gemm_result(double gpu3, int repeats = 0) {
  CheckResult c;
  c.check = "gpu_gemm";
  c.short_name = "gemm";
  c.status = Status::kPass;
  const double healthy[] = {801, 798, 803, 0, 799, 802, 800, 797};
  for (int g = 0; g < 8; ++g) {
    Measurement m;
    m.name = "gemm_bf16_tflops";
    m.unit = "TFLOP/s";
    m.gpu = g;
    m.value = g == 3 ? gpu3 : healthy[g];
    m.threshold = Threshold{Op::kGe, 640, 700, "TFLOP/s", {}, false, {}};
    if (g == 3) m.repeats.assign(repeats, gpu3);
    c.measurements.push_back(m);
  }
  return c;
}

inline NodeReport ecc_pass_report(const std::string& node, const std::string& run) {
  return make_report(node, run, {make_check("nvml_ecc", Status::kPass, 0, 0)});
}

// Replaces `from` by `to` in every file of dir whose name starts with prefix; returns how often.
inline int rewrite_state(const std::string& dir, const std::string& prefix, const std::string& from,
                         const std::string& to) {
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (!e.path().filename().string().starts_with(prefix)) continue;
    std::string text;
    {
      std::ifstream in(e.path());
      text.assign(std::istreambuf_iterator<char>(in), {});
    }
    for (size_t at = 0; (at = text.find(from, at)) != std::string::npos; at += to.size(), ++n)
      text.replace(at, from.size(), to);
    std::ofstream(e.path(), std::ios::trunc) << text;
  }
  return n;
}

// The short names the drainer's tests use: `using namespace testing::drainer_short;`.
namespace drainer_short {
inline drainer::DrainerConfig test_config(const std::string& dir) {
  return drainer_test_config(dir);
}
inline std::shared_ptr<FakeSlurm> cluster(int n) { return fake_cluster(n); }
inline NodeReport bad(const std::string& node, const std::string& run) {
  return ecc_fail_report(node, run);
}
inline NodeReport good(const std::string& node, const std::string& run) {
  return ecc_pass_report(node, run);
}
using testing::rewrite_state;
// The fakes and builders the drainer's tests name without a prefix.
using testing::FakeClock;
using testing::FakeKube;
using testing::FakeSlurm;
using testing::make_check;
using testing::make_report;
using testing::TempDir;
}  // namespace drainer_short

}  // namespace vigil::testing
