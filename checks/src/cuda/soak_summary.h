#pragma once
// gpu_soak's figures (docs/qualify.md): what one GPU's samples under load come to. Pure C++, unit-
// tested without a GPU; the load and the NVML sampling are in gpu_soak.cu.
#include <optional>
#include <vector>

#include "vigil/checks/check.h"

namespace vigil::cuda_probe {

// One NVML reading of a GPU under load, once a second; what NVML did not answer is empty.
struct SoakSample {
  std::optional<double> sm_clock_mhz;        // nvmlDeviceGetClockInfo(NVML_CLOCK_SM)
  std::optional<double> power_w;             // nvmlDeviceGetPowerUsage / 1000
  std::optional<double> temperature_c;       // nvml::gpu_temperature
  std::optional<unsigned long long> events;  // nvmlDeviceGetCurrentClocksEventReasons
};

struct SoakGpu {
  int gpu = 0;          // CUDA ordinal until relabelled
  double seconds = 0;   // how long its GEMMs ran
  long long gemms = 0;  // GEMMs completed in that time
  double flops_per_gemm = 0;
  std::vector<SoakSample> samples;
};

// Adds one GPU's figures to `r`: soak_tflops (TFLOP/s over the whole soak), soak_sm_clock (MHz,
// the median sample), soak_power (W, median), soak_temperature (celsius, the hottest sample), and
// soak_slowdown (percent of samples with a hardware slowdown, hardware thermal slowdown or power
// brake asserted: warns at any, never fails; nvml_clock_events judges them outside a soak).
// Figures NVML never answered are left out.
void add_soak_figures(CheckResult& r, const CheckContext& ctx, const SoakGpu& g);

}  // namespace vigil::cuda_probe
