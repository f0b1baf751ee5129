#include "cuda/soak_summary.h"

#include <algorithm>
#include <functional>

#include "cuda/probe_math.h"
#include "nvml/nvml_api.h"

namespace vigil::cuda_probe {
namespace {

std::vector<double> values(const std::vector<SoakSample>& samples,
                           const std::function<std::optional<double>(const SoakSample&)>& pick) {
  std::vector<double> out;
  for (const SoakSample& s : samples)
    if (auto v = pick(s)) out.push_back(*v);
  return out;
}

// The clock-event bits that mean the hardware, not the workload or a setting, held the clocks
// down (nvml.h's nvmlClocksEventReasons; nvml_clock_events judges the same bits).
constexpr unsigned long long kHardwareEvents =
    kNvmlClocksEventHwSlowdown | kNvmlClocksEventHwThermal | kNvmlClocksEventHwPowerBrake;

}  // namespace

void add_soak_figures(CheckResult& r, const CheckContext& ctx, const SoakGpu& g) {
  if (g.seconds > 0 && g.gemms > 0)
    add_measurement(r, ctx, "soak_tflops",
                    tflops_per_second(g.flops_per_gemm * static_cast<double>(g.gemms), g.seconds),
                    "TFLOP/s", g.gpu);
  if (auto v = values(g.samples, [](const SoakSample& s) { return s.sm_clock_mhz; }); !v.empty())
    add_measurement(r, ctx, "soak_sm_clock", median(v), "MHz", g.gpu);
  if (auto v = values(g.samples, [](const SoakSample& s) { return s.power_w; }); !v.empty())
    add_measurement(r, ctx, "soak_power", median(v), "W", g.gpu);
  if (auto v = values(g.samples, [](const SoakSample& s) { return s.temperature_c; }); !v.empty())
    add_measurement(r, ctx, "soak_temperature", *std::max_element(v.begin(), v.end()), "celsius",
                    g.gpu);
  std::size_t known = 0, slowed = 0;
  for (const SoakSample& s : g.samples) {
    if (!s.events) continue;
    ++known;
    slowed += (*s.events & kHardwareEvents) != 0;
  }
  if (known > 0) {
    Measurement& m = add_measurement(
        r, ctx, "soak_slowdown", 100.0 * static_cast<double>(slowed) / static_cast<double>(known),
        "percent", g.gpu);
    // Warns only: a percentage never exceeds the fail bound of 100.
    default_threshold(m, Op::kLe, 100.0, 0.0);
  }
}

}  // namespace vigil::cuda_probe
