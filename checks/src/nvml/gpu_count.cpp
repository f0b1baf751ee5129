// gpu_count: how many GPUs NVML sees, against the node's count in Slurm (--expected-gpus,
// VIGIL_EXPECTED_GPUS) or else the SKU's expected count. A GPU that fell off
// the bus usually disappears from NVML entirely, so this is the check that catches it.
#include <set>

#include "check_factories.h"
#include "nvml_common.h"

namespace vigil {
namespace {

using namespace nvml;

class GpuCountCheck final : public Check {
 public:
  std::string_view name() const override { return "gpu_count"; }
  Applies applies(const CheckContext&) const override { return {}; }

  CheckResult run(const CheckContext& ctx) override {
    auto session = open_session(ctx);
    if (!session) return unavailable(name(), session.error());
    const Session& s = session.value();

    CheckResult r;
    r.check = std::string(name());
    Measurement& m = add_measurement(r, ctx, "gpu_count", s.count(), "count");
    // The site's own count first: Slurm's Gres for the node (slurmd refuses to register a node
    // with fewer GPUs than its gres.conf and slurm.conf say, slurm.conf(5) Gres), so a 4-GPU
    // board of a GPU whose catalogue board has 8 is judged against 4.
    if (ctx.expected_gpus > 0) {
      m.threshold.reset();
      default_threshold(m, Op::kGe, ctx.expected_gpus, std::nullopt,
                        ctx.expected_gpus_from + " gpu:" + std::to_string(ctx.expected_gpus));
    }
    if (!m.threshold && ctx.sku && ctx.sku->match.gpu_count > 0) {
      default_threshold(m, Op::kGe, ctx.sku->match.gpu_count, std::nullopt,
                        "SKU " + ctx.sku->name + " match.gpu_count");
    }
    std::string seen = std::to_string(s.count()) + " GPUs" + models(s);
    if (m.threshold) seen += ", expected by " + m.threshold->source;
    Verdict v;
    v.gpus_lost(s);
    if (!r.measurements[0].threshold && s.no_handle.empty()) {
      r.status = Status::kSkipped;
      r.message = "unknown SKU: " + seen + " seen, expected count unknown";
      return r;
    }
    const int expected =
        r.measurements[0].threshold ? static_cast<int>(r.measurements[0].threshold->fail) : 0;
    v.conclude(
        r,
        [&](const Measurement& mm, Status) {
          return Described{figure(mm.value) + " of " + std::to_string(expected) + " GPUs visible",
                           "VIGIL-NVML-GPU-COUNT"};
        },
        seen);
    return r;
  }

 private:
  // " (NVIDIA H100 80GB HBM3)": the distinct model names, for the operator reading the result.
  static std::string models(const Session& s) {
    std::set<std::string> names;
    for (nvmlDevice_t dev : s.gpus) {
      char buf[kNvmlDeviceNameBufferSize] = {};
      if (dev && call(s.api().device_get_name, dev, buf, unsigned{sizeof buf}) == NVML_SUCCESS) {
        buf[sizeof buf - 1] = '\0';
        names.insert(buf);
      }
    }
    std::string out;
    for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
    return out.empty() ? "" : " (" + out + ")";
  }
};

}  // namespace

std::unique_ptr<Check> make_gpu_count_check() { return std::make_unique<GpuCountCheck>(); }

}  // namespace vigil
