// nvml_clock_events: why clocks are held down right now (nvmlDeviceGetCurrentClocksEventReasons).
// Hardware thermal slowdown and power brake mean the board protects itself (overheating, a
// PSU/power-brake signal) and the GPU runs at a fraction of its speed: these fail without a SKU.
// The generic HW slowdown bit alone only warns: nvml.h says it is also set when
// "Power draw is too high and Fast Trigger protection is reducing the clocks" and "May be also
// reported during PState or clock change", both normal under a job's load or right after one,
// when HealthCheckProgram and the Epilog run; DCGM's health watch only warns on it. When it comes
// with a specific cause, that cause's bit fails. Software thermal slowdown (the driver keeping
// the GPU under its target temperature) only warns. Idle, application-clock and power-cap
// reasons are normal and ignored (on an H200 under a PyTorch matmul load: SW power cap active,
// no HW bit, docs/gpu-validation.md).
#include "check_factories.h"
#include "nvml_common.h"

namespace vigil {
namespace {

using namespace nvml;

struct Reason {
  const char* measurement;
  unsigned long long bit;
  bool fails;        // built-in: fail (true) or warn (false)
  const char* text;  // for the message
  const char* fault;
};

constexpr Reason kReasons[] = {
    {"hw_slowdown", kNvmlClocksEventHwSlowdown, false, "HW slowdown", "VIGIL-NVML-HW-SLOWDOWN"},
    {"hw_thermal_slowdown", kNvmlClocksEventHwThermal, true, "HW thermal slowdown",
     "VIGIL-NVML-HW-THERMAL"},
    {"hw_power_brake", kNvmlClocksEventHwPowerBrake, true, "HW power brake",
     "VIGIL-NVML-POWER-BRAKE"},
    {"sw_thermal_slowdown", kNvmlClocksEventSwThermal, false, "SW thermal slowdown",
     "VIGIL-NVML-SW-THERMAL"},
};

const Reason* find_reason(std::string_view measurement) {
  for (const Reason& r : kReasons) {
    if (measurement == r.measurement) return &r;
  }
  return nullptr;
}

class NvmlClockEventsCheck final : public NvmlCheck {
 public:
  std::string_view name() const override { return "nvml_clock_events"; }

  CheckResult inspect(const CheckContext& ctx, const Session& s, CheckResult& r,
                      Verdict& v) override {
    for (int g = 0; g < s.count(); ++g) {
      if (!s.gpus[g]) continue;
      unsigned long long reasons = 0;
      const nvmlReturn_t rc = call(s.api().device_get_clocks_event_reasons, s.gpus[g], &reasons);
      if (is_not_supported(rc)) {
        v.not_supported(g, "clock event reasons");
        continue;
      }
      if (rc != NVML_SUCCESS) {
        v.query_failed(s, g, "nvmlDeviceGetCurrentClocksEventReasons", rc);
        continue;
      }
      for (const Reason& reason : kReasons) {
        Measurement& m =
            add_measurement(r, ctx, reason.measurement, (reasons & reason.bit) ? 1 : 0, "bool", g);
        if (reason.fails) {
          default_threshold(m, Op::kLe, 0, std::nullopt,
                            "built-in: hardware-asserted slowdown fails");
        } else {
          default_threshold(m, Op::kLe, 1, 0,
                            "built-in: warns (software thermal slowdown; HW slowdown without a "
                            "specific cause)");
        }
      }
    }
    v.conclude(
        r,
        [](const Measurement& m, Status) {
          const Reason* reason = find_reason(m.name);
          const std::string g = "gpu" + std::to_string(m.gpu.value_or(-1));
          if (!reason) return Described{g + " " + m.name, "VIGIL-NVML-CLOCKS"};
          return Described{g + " " + reason->text, reason->fault};
        },
        std::to_string(s.count()) + " GPUs: no slowdown asserted");
    return r;
  }
};

}  // namespace

std::unique_ptr<Check> make_nvml_clock_events_check() {
  return std::make_unique<NvmlClockEventsCheck>();
}

}  // namespace vigil
