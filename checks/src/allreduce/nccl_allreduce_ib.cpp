// nccl_allreduce_ib: IB loopback. NCCL all_reduce across the local GPUs with NVLink and shared
// memory disabled (NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_ALGO=Ring), so every byte goes
// out through the NICs and back; busbw against the SKU threshold (>=).
#include <filesystem>

#include "allreduce/allreduce_launch.h"
#include "check_factories.h"

namespace vigil {
namespace {

constexpr std::string_view kName = "nccl_allreduce_ib";

bool has_infiniband(const CheckContext& ctx) {
  std::error_code ec;
  const std::filesystem::path dir = std::filesystem::path(ctx.sysfs_root) / "sys/class/infiniband";
  return std::filesystem::is_directory(dir, ec) && !std::filesystem::is_empty(dir, ec);
}

class NcclAllreduceIbCheck final : public Check {
 public:
  explicit NcclAllreduceIbCheck(AllreduceTuning tuning) : tuning_(std::move(tuning)) {}
  std::string_view name() const override { return kName; }
  std::chrono::seconds timeout() const override { return std::chrono::seconds(330); }

  Applies applies(const CheckContext& ctx) const override {
    if (!allreduce_has_nccl_backend()) return {false, "built without CUDA/NCCL"};
    if (!ctx.has_gpu_runtime) return {false, "no CUDA device seen"};
    if (ctx.sku && ctx.sku->infiniband.ports == 0) return {false, "SKU expects no InfiniBand"};
    if (!has_infiniband(ctx)) return {false, "no InfiniBand devices in sysfs"};
    if (ctx.gpu_count < 2)
      return {false, "needs at least 2 GPUs (NVML saw " + std::to_string(ctx.gpu_count) + ")"};
    return {};
  }

  CheckResult run(const CheckContext& ctx) override {
    AllreduceSpec spec;
    spec.check = kName;
    spec.fault_prefix = "VIGIL-NCCL";
    spec.backend = "nccl";
    spec.transport = "ib";
    spec.ranks = ctx.gpu_count > 0 ? ctx.gpu_count : 1;
    const bool full = ctx.suite == Suite::kFull;
    spec.min_bytes = full ? "512M" : "256M";
    spec.max_bytes = full ? "4G" : "1G";
    spec.timeout = std::chrono::seconds(full ? 300 : 120);
    apply_tuning(spec, tuning_);
    return run_allreduce_check(ctx, spec);
  }

 private:
  AllreduceTuning tuning_;
};

}  // namespace

std::unique_ptr<Check> make_nccl_allreduce_ib_check(const AllreduceTuning& tuning) {
  return std::make_unique<NcclAllreduceIbCheck>(tuning);
}
std::unique_ptr<Check> make_nccl_allreduce_ib_check() {
  return make_nccl_allreduce_ib_check(AllreduceTuning{});
}

}  // namespace vigil
