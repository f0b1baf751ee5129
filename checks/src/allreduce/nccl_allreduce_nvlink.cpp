// nccl_allreduce_nvlink: NCCL all_reduce across all local GPUs of the node with NCCL's default
// transports (NVLink/NVSwitch), busbw against the SKU threshold (>=).
#include "allreduce/allreduce_launch.h"
#include "check_factories.h"

namespace vigil {
namespace {

constexpr std::string_view kName = "nccl_allreduce_nvlink";

class NcclAllreduceNvlinkCheck final : public Check {
 public:
  explicit NcclAllreduceNvlinkCheck(AllreduceTuning tuning) : tuning_(std::move(tuning)) {}
  std::string_view name() const override { return kName; }
  // NCCL init on 8 GPUs plus a sweep up to 16 GB (full) fits well inside this.
  std::chrono::seconds timeout() const override { return std::chrono::seconds(330); }

  Applies applies(const CheckContext& ctx) const override {
    if (!allreduce_has_nccl_backend()) return {false, "built without CUDA/NCCL"};
    if (!ctx.has_gpu_runtime) return {false, "no CUDA device seen"};
    if (ctx.gpu_count < 2)
      return {false, "needs at least 2 GPUs (NVML saw " + std::to_string(ctx.gpu_count) + ")"};
    return {};
  }

  CheckResult run(const CheckContext& ctx) override {
    AllreduceSpec spec;
    spec.check = kName;
    spec.fault_prefix = "VIGIL-NCCL";
    spec.backend = "nccl";
    spec.transport = "nvlink";
    spec.ranks = ctx.gpu_count > 0 ? ctx.gpu_count : 1;
    const bool full = ctx.suite == Suite::kFull;
    // Peak busbw needs large messages (>= 1-8 GB on A100/H100, anchors.md section 2).
    spec.min_bytes = full ? "512M" : "1G";
    spec.max_bytes = full ? "16G" : "4G";
    spec.timeout = std::chrono::seconds(full ? 300 : 120);
    apply_tuning(spec, tuning_);
    return run_allreduce_check(ctx, spec);
  }

 private:
  AllreduceTuning tuning_;
};

}  // namespace

std::unique_ptr<Check> make_nccl_allreduce_nvlink_check(const AllreduceTuning& tuning) {
  return std::make_unique<NcclAllreduceNvlinkCheck>(tuning);
}
std::unique_ptr<Check> make_nccl_allreduce_nvlink_check() {
  return make_nccl_allreduce_nvlink_check(AllreduceTuning{});
}

}  // namespace vigil
