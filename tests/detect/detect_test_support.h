#pragma once
// Builders for NodeReports carrying performance figures, shared by the vigil::detect tests.
#include <gtest/gtest.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "vigil/detect/detect.h"
#include "vigil/report/report.h"

namespace vigil::detect::testing {

inline constexpr std::int64_t kT0 = 1'795'000'000;  // 2026-11-18, a fixed "now"
inline constexpr std::int64_t kHour = 3600;
inline const std::string kSku = "H100-SXM5-80GB";

class ReportBuilder {
 public:
  explicit ReportBuilder(std::string node, std::string sku = kSku) {
    r_.node = std::move(node);
    r_.sku = std::move(sku);
    r_.run_id = r_.node + "-1";
    r_.start_time = "2026-11-23T10:00:00Z";
    r_.end_time = "2026-11-23T10:05:00Z";
  }

  // One figure per GPU (index = GPU number).
  ReportBuilder& gpus(const std::string& check, const std::string& name, const std::string& unit,
                      const std::vector<double>& values) {
    CheckResult& c = check_named(check);
    for (std::size_t g = 0; g < values.size(); ++g) {
      Measurement m;
      m.name = name;
      m.value = values[g];
      m.unit = unit;
      m.gpu = static_cast<int>(g);
      c.measurements.push_back(m);
    }
    return *this;
  }
  ReportBuilder& gemm(const std::vector<double>& tflops) {
    return gpus("gpu_gemm", "gemm_bf16_tflops", "TFLOP/s", tflops);
  }
  ReportBuilder& node_figure(const std::string& check, const std::string& name,
                             const std::string& unit, double value) {
    Measurement m;
    m.name = name;
    m.value = value;
    m.unit = unit;
    check_named(check).measurements.push_back(m);
    return *this;
  }
  ReportBuilder& nvlink_busbw(double gbps) {
    return node_figure("nccl_allreduce_nvlink", "busbw", "GB/s", gbps);
  }
  ReportBuilder& status(const std::string& check, Status s) {
    check_named(check).status = s;
    return *this;
  }
  NodeReport build() const { return r_; }
  operator NodeReport() const { return r_; }  // NOLINT(google-explicit-constructor)

 private:
  CheckResult& check_named(const std::string& check) {
    for (CheckResult& c : r_.checks) {
      if (c.check == check) return c;
    }
    CheckResult c;
    c.check = check;
    r_.checks.push_back(c);
    return r_.checks.back();
  }
  NodeReport r_;
};

// Eight GPUs at `tflops`, with a small fixed spread (+-0.5%) so medians are not degenerate.
inline std::vector<double> eight(double tflops) {
  std::vector<double> v;
  for (int g = 0; g < 8; ++g) v.push_back(tflops * (1 + 0.0025 * ((g * 3) % 5 - 2)));
  return v;
}

// Judges `nodes` healthy nodes (names "peer-<i>") once each at `now`, so the fleet of the SKU
// has that many GEMM and NVLink all_reduce figures.
inline void seed_fleet(Engine& e, int nodes, std::int64_t now, const std::string& sku = kSku) {
  for (int i = 0; i < nodes; ++i) {
    const double f = 1 + 0.004 * ((i * 7) % 5 - 2);
    auto r = e.judge(
        ReportBuilder("peer-" + std::to_string(i), sku).gemm(eight(798 * f)).nvlink_busbw(480 * f),
        now);
    if (!r.ok()) throw std::runtime_error(r.error().to_string());
  }
}

// Fixed margins so the tests do not move when the tuned defaults do.
inline DetectConfig test_config() {
  DetectConfig c = DetectConfig::defaults();
  for (auto& [kind, m] : c.margins) m = {0.03, 0.06};  // peers and fleet: x1.5 = 4.5% / 9%
  c.cross_margin_scale = 1.5;
  return c;
}

inline ReportVerdicts judge_ok(Engine& e, const NodeReport& r, std::int64_t now,
                               Learn learn = Learn::kYes) {
  auto v = e.judge(r, now, learn);
  EXPECT_TRUE(v.ok()) << v.error().to_string();
  return v.ok() ? *v : ReportVerdicts{};
}

inline const Verdict* find(const ReportVerdicts& rv, const std::string& check,
                           const std::string& unit_id) {
  for (const Verdict& v : rv.verdicts) {
    if (v.check == check && v.unit_id == unit_id) return &v;
  }
  return nullptr;
}

}  // namespace vigil::detect::testing
