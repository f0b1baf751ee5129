// nvml_temperature: GPU core temperature, plus board power as a figure for the operator.
// Without a SKU threshold each GPU is judged against its own limits from the driver
// (nvmlDeviceGetTemperatureThreshold), warn only: above the max operating or the slowdown
// temperature warns. gpu_power has no threshold; it is reported for dashboards.
#include <optional>

#include "check_factories.h"
#include "nvml_common.h"

namespace vigil {
namespace {

using namespace nvml;

class NvmlTemperatureCheck final : public NvmlCheck {
 public:
  std::string_view name() const override { return "nvml_temperature"; }

  CheckResult inspect(const CheckContext& ctx, const Session& s, CheckResult& r,
                      Verdict& v) override {
    const Api& api = s.api();
    unsigned hottest = 0;
    for (int g = 0; g < s.count(); ++g) {
      nvmlDevice_t dev = s.gpus[g];
      if (!dev) continue;
      unsigned temp = 0;
      nvmlReturn_t rc = gpu_temperature(api, dev, &temp);
      if (is_not_supported(rc)) {
        v.not_supported(g, "temperature");
      } else if (rc != NVML_SUCCESS) {
        v.query_failed(s, g, "nvmlDeviceGetTemperature", rc);
      } else {
        hottest = std::max(hottest, temp);
        Measurement& m = add_measurement(r, ctx, "gpu_temperature", temp, "celsius", g);
        // Without a SKU bound, the GPU's own limits from the driver, warn-only:
        // the shutdown temperature can never be observed (the GPU powers off first), so a
        // built-in fail would be a bound that cannot fire. Warn above the "max operating"
        // temperature ("GPU Temperature at which the GPU can be throttled below base clock",
        // nvml.h NVML_TEMPERATURE_THRESHOLD_GPU_MAX) and above the HW slowdown temperature; a
        // fail needs a SKU bound. nvml.h also says these thresholds leave this API on Ada and
        // later (NVML_FI_DEV_TEMPERATURE_* fields): there, only a SKU bound judges.
        unsigned slowdown = 0, gpu_max = 0;
        if (!m.threshold &&
            call(api.device_get_temperature_threshold, dev,
                 int{NVML_TEMPERATURE_THRESHOLD_SLOWDOWN}, &slowdown) == NVML_SUCCESS &&
            slowdown > 0) {
          std::optional<double> warn;
          if (call(api.device_get_temperature_threshold, dev,
                   int{NVML_TEMPERATURE_THRESHOLD_GPU_MAX}, &gpu_max) == NVML_SUCCESS &&
              gpu_max > 0 && gpu_max < slowdown)
            warn = gpu_max;
          default_threshold(m, Op::kLe, slowdown, warn,
                            "built-in, warn only: the GPU's own max operating / HW slowdown "
                            "temperature from the driver");
          m.threshold->unconfirmed = true;
        }
      }
      unsigned milliwatts = 0;
      if (call(api.device_get_power_usage, dev, &milliwatts) == NVML_SUCCESS) {
        add_measurement(r, ctx, "gpu_power", milliwatts / 1000.0, "W", g);
      }
    }
    v.conclude(
        r,
        [](const Measurement& m, Status st) {
          const std::string g = "gpu" + std::to_string(m.gpu.value_or(-1));
          if (m.name == "gpu_power") {
            return Described{g + " power " + figure(m.value) + "W", "VIGIL-NVML-POWER"};
          }
          std::string bound;
          if (m.threshold) {
            bound = " (>" +
                    figure(st == Status::kFail ? m.threshold->fail
                                               : m.threshold->warn.value_or(m.threshold->fail)) +
                    "C)";
          }
          return Described{g + " " + figure(m.value) + "C" + bound, "VIGIL-NVML-TEMP"};
        },
        std::to_string(s.count()) + " GPUs: hottest " + std::to_string(hottest) + "C");
    return r;
  }
};

}  // namespace

std::unique_ptr<Check> make_nvml_temperature_check() {
  return std::make_unique<NvmlTemperatureCheck>();
}

}  // namespace vigil
