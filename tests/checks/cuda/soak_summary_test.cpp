// gpu_soak's figures (checks/src/cuda/soak_summary.h). The load runs only on a GPU
// (docs/gpu-validation.md); what its samples come to is tested here.
#include "cuda/soak_summary.h"

#include <gtest/gtest.h>

#include <string>

#include "cuda/probe_result.h"
#include "nvml/nvml_api.h"

namespace vigil::cuda_probe {
namespace {

const Measurement* find(const CheckResult& r, const std::string& name, int gpu) {
  for (const Measurement& m : r.measurements)
    if (m.name == name && m.gpu == gpu) return &m;
  return nullptr;
}

SoakSample at(double mhz, double w, double c, unsigned long long events = 0) {
  return {mhz, w, c, events};
}

TEST(SoakSummary, figures_are_the_rate_the_median_clock_and_power_and_the_hottest_sample) {
  CheckContext ctx;
  CheckResult r;
  r.check = "gpu_soak";
  // 60 s, 36,000 GEMMs of 8192^3 = 1.1e12 FLOP each: 659.7 TFLOP/s.
  SoakGpu g{2, 60.0, 36000, 2.0 * 8192 * 8192 * 8192, {}};
  g.samples = {at(1980, 300, 40), at(1755, 690, 61), at(1740, 699, 66), at(1725, 700, 68)};
  add_soak_figures(r, ctx, g);
  ASSERT_NE(find(r, "soak_tflops", 2), nullptr);
  EXPECT_NEAR(find(r, "soak_tflops", 2)->value, 659.7, 0.1);
  EXPECT_EQ(find(r, "soak_tflops", 2)->unit, "TFLOP/s");
  EXPECT_DOUBLE_EQ(find(r, "soak_sm_clock", 2)->value, 1747.5);  // the idle first sample moves it
  EXPECT_EQ(find(r, "soak_sm_clock", 2)->unit, "MHz");           // little
  EXPECT_DOUBLE_EQ(find(r, "soak_power", 2)->value, 694.5);
  EXPECT_DOUBLE_EQ(find(r, "soak_temperature", 2)->value, 68);
  EXPECT_EQ(find(r, "soak_temperature", 2)->unit, "celsius");
  EXPECT_DOUBLE_EQ(find(r, "soak_slowdown", 2)->value, 0);
  EXPECT_EQ(finish_probe_result(ctx, r, 1, {}, {}).status, Status::kPass);
}

TEST(SoakSummary, a_hardware_slowdown_during_the_soak_warns_and_a_power_cap_does_not) {
  CheckContext ctx;
  CheckResult r;
  r.check = "gpu_soak";
  SoakGpu g{0, 10.0, 100, 1e12, {}};
  constexpr unsigned long long kSwPowerCap = 0x4;  // the normal state of a power-bound GEMM
  g.samples = {at(1700, 700, 70, kSwPowerCap), at(1700, 700, 70, kSwPowerCap),
               at(1200, 700, 88, kNvmlClocksEventHwThermal), at(1700, 700, 70)};
  add_soak_figures(r, ctx, g);
  EXPECT_DOUBLE_EQ(find(r, "soak_slowdown", 0)->value, 25);
  const CheckResult done = finish_probe_result(ctx, r, 1, {}, {});
  EXPECT_EQ(done.status, Status::kWarn);
  EXPECT_NE(done.status, Status::kFail);
}

TEST(SoakSummary, what_nvml_never_answered_is_left_out_not_reported_as_zero) {
  CheckContext ctx;
  CheckResult r;
  r.check = "gpu_soak";
  SoakGpu g{1, 10.0, 100, 1e12, {SoakSample{}, SoakSample{}}};
  add_soak_figures(r, ctx, g);
  ASSERT_EQ(r.measurements.size(), 1u);
  EXPECT_EQ(r.measurements[0].name, "soak_tflops");
}

}  // namespace
}  // namespace vigil::cuda_probe
