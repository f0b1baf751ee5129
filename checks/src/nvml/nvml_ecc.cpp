// nvml_ecc: volatile uncorrected (double-bit) ECC errors since the driver loaded, and the
// lifetime count of corrected errors. Any volatile DBE fails without a SKU (DCGM health:
// volatile DBE > 0 is a failure); the corrected count only has a SKU threshold.
#include "check_factories.h"
#include "nvml_common.h"

namespace vigil {
namespace {

using namespace nvml;

class NvmlEccCheck final : public NvmlCheck {
 public:
  std::string_view name() const override { return "nvml_ecc"; }

  CheckResult inspect(const CheckContext& ctx, const Session& s, CheckResult& r,
                      Verdict& v) override {
    unsigned long long corrected_total = 0;
    for (int g = 0; g < s.count(); ++g) {
      if (!s.gpus[g]) continue;
      unsigned long long dbe = 0;
      nvmlReturn_t rc = call(s.api().device_get_total_ecc_errors, s.gpus[g],
                             int{NVML_MEMORY_ERROR_TYPE_UNCORRECTED}, int{NVML_VOLATILE_ECC}, &dbe);
      if (is_not_supported(rc)) {
        v.not_supported(g, "ECC counters");
        continue;
      }
      if (rc != NVML_SUCCESS) {
        v.query_failed(s, g, "nvmlDeviceGetTotalEccErrors", rc);
        continue;
      }
      Measurement& m =
          add_measurement(r, ctx, "volatile_uncorrected_ecc", static_cast<double>(dbe), "count", g);
      default_threshold(m, Op::kLe, 0, std::nullopt,
                        "built-in: volatile DBE > 0 fails (DCGM health watch)");

      unsigned long long corrected = 0;
      rc = call(s.api().device_get_total_ecc_errors, s.gpus[g],
                int{NVML_MEMORY_ERROR_TYPE_CORRECTED}, int{NVML_AGGREGATE_ECC}, &corrected);
      if (rc == NVML_SUCCESS) {
        add_measurement(r, ctx, "aggregate_corrected_ecc", static_cast<double>(corrected), "count",
                        g);
        corrected_total += corrected;
      } else if (is_not_supported(rc)) {
        v.not_supported(g, "aggregate corrected ECC");
      } else {
        v.query_failed(s, g, "nvmlDeviceGetTotalEccErrors", rc);
      }
    }
    v.conclude(
        r,
        [](const Measurement& m, Status) {
          const std::string g = "gpu" + std::to_string(m.gpu.value_or(-1));
          if (m.name == "volatile_uncorrected_ecc") {
            return Described{g + " volatile DBE " + figure(m.value), "VIGIL-NVML-DBE"};
          }
          return Described{g + " corrected ECC " + figure(m.value), "VIGIL-NVML-SBE"};
        },
        std::to_string(s.count()) + " GPUs: no volatile DBE, " + std::to_string(corrected_total) +
            " corrected in total");
    return r;
  }
};

}  // namespace

std::unique_ptr<Check> make_nvml_ecc_check() { return std::make_unique<NvmlEccCheck>(); }

}  // namespace vigil
