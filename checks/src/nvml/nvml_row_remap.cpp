// nvml_row_remap: HBM row remapping (A100 and later). A pending remap only takes effect after
// a GPU reset, so the node must be drained to apply it; a failed remap means the GPU ran out
// of spare rows. Both fail without a SKU: failed per DCGM health, pending per aznhc (DCGM only
// warns on pending, but a pending remap never resolves while jobs keep the GPU busy).
// Remedy (the repair ladder's input, docs/repair.md), from NVIDIA's GPU Memory Error Management
// guide, "Error Recovery and Response Flags" (docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt):
// the pending flag means the remap "will happen at the next GPU reset" -> reset_gpu; a remapping
// failure is defined by the guide's "RMA Policy Thresholds for Row-Remapping" -> service.
#include <algorithm>

#include "check_factories.h"
#include "nvml_common.h"

namespace vigil {
namespace {

using namespace nvml;

class NvmlRowRemapCheck final : public NvmlCheck {
 public:
  std::string_view name() const override { return "nvml_row_remap"; }

  CheckResult inspect(const CheckContext& ctx, const Session& s, CheckResult& r,
                      Verdict& v) override {
    unsigned remapped_total = 0;
    for (int g = 0; g < s.count(); ++g) {
      if (!s.gpus[g]) continue;
      unsigned corr = 0, unc = 0, pending = 0, failure = 0;
      const nvmlReturn_t rc =
          call(s.api().device_get_remapped_rows, s.gpus[g], &corr, &unc, &pending, &failure);
      if (is_not_supported(rc)) {
        v.not_supported(g, "row remapping");
        continue;
      }
      if (rc != NVML_SUCCESS) {
        v.query_failed(s, g, "nvmlDeviceGetRemappedRows", rc);
        continue;
      }
      remapped_total += corr + unc;
      Measurement& p = add_measurement(r, ctx, "row_remap_pending", pending, "count", g);
      default_threshold(p, Op::kLe, 0, std::nullopt,
                        "built-in: remap pending needs a GPU reset (aznhc: pending > 0 fails)");
      Measurement& f = add_measurement(r, ctx, "row_remap_failed", failure, "count", g);
      default_threshold(f, Op::kLe, 0, std::nullopt,
                        "built-in: row remap failure fails (DCGM health watch)");
    }
    v.conclude(
        r,
        [](const Measurement& m, Status) {
          const std::string g = "gpu" + std::to_string(m.gpu.value_or(-1));
          if (m.name == "row_remap_pending") {
            return Described{g + " row remap pending (" + figure(m.value) + ")",
                             "VIGIL-NVML-REMAP-PENDING"};
          }
          return Described{g + " row remap failed (" + figure(m.value) + ")",
                           "VIGIL-NVML-REMAP-FAILED"};
        },
        std::to_string(s.count()) + " GPUs: no remap pending or failed, " +
            std::to_string(remapped_total) + " rows remapped in total");
    if (r.status == Status::kFail) {
      const bool out_of_rows = std::any_of(
          r.measurements.begin(), r.measurements.end(),
          [](auto& m) { return m.name == "row_remap_failed" && m.status() == Status::kFail; });
      r.remedy = out_of_rows ? Remedy::kService : Remedy::kResetGpu;
    }
    return r;
  }
};

}  // namespace

std::unique_ptr<Check> make_nvml_row_remap_check() { return std::make_unique<NvmlRowRemapCheck>(); }

}  // namespace vigil
