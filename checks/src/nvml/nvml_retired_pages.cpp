// nvml_retired_pages: dynamic page retirement waiting for a reboot (pre-Ampere GPUs; A100 and
// later use row remapping and report "not supported", which makes this check skipped).
// Built-in: pending warns (DCGM health watch); a SKU threshold may make it fail.
#include "check_factories.h"
#include "nvml_common.h"

namespace vigil {
namespace {

using namespace nvml;

class NvmlRetiredPagesCheck final : public NvmlCheck {
 public:
  std::string_view name() const override { return "nvml_retired_pages"; }

  CheckResult inspect(const CheckContext& ctx, const Session& s, CheckResult& r,
                      Verdict& v) override {
    for (int g = 0; g < s.count(); ++g) {
      if (!s.gpus[g]) continue;
      int pending = NVML_FEATURE_DISABLED;
      const nvmlReturn_t rc = call(s.api().device_get_retired_pages_pending, s.gpus[g], &pending);
      if (is_not_supported(rc)) {
        v.not_supported(g, "page retirement");
        continue;
      }
      if (rc != NVML_SUCCESS) {
        v.query_failed(s, g, "nvmlDeviceGetRetiredPagesPendingStatus", rc);
        continue;
      }
      Measurement& m = add_measurement(r, ctx, "retired_pages_pending",
                                       pending == NVML_FEATURE_ENABLED ? 1 : 0, "bool", g);
      default_threshold(m, Op::kLe, 1, 0,
                        "built-in: pending page retirement warns (DCGM health watch)");
    }
    v.conclude(
        r,
        [](const Measurement& m, Status) {
          return Described{"gpu" + std::to_string(m.gpu.value_or(-1)) + " retired pages pending",
                           "VIGIL-NVML-PAGES-PENDING"};
        },
        std::to_string(s.count()) + " GPUs: no page retirement pending");
    return r;
  }
};

}  // namespace

std::unique_ptr<Check> make_nvml_retired_pages_check() {
  return std::make_unique<NvmlRetiredPagesCheck>();
}

}  // namespace vigil
