// host_allreduce: MPI_Allreduce on host memory between 2 local ranks (vigil-allreduce --backend
// host). Runs where there is no GPU runtime (CPU-only nodes, CI, the demo) so the whole path
// (mpirun, the harness, the data check, JSON, the parser) is exercised with real MPI. busbw is
// reported as a figure; SKU files carry no threshold for it. Fails on wrong results or a hang.
#include "allreduce/allreduce_launch.h"
#include "check_factories.h"

namespace vigil {
namespace {

constexpr std::string_view kName = "host_allreduce";

class HostAllreduceCheck final : public Check {
 public:
  explicit HostAllreduceCheck(AllreduceTuning tuning) : tuning_(std::move(tuning)) {}
  std::string_view name() const override { return kName; }

  Applies applies(const CheckContext& ctx) const override {
    if (ctx.has_gpu_runtime) return {false, "GPU node: the nccl_allreduce checks run instead"};
    return {};
  }

  CheckResult run(const CheckContext& given) override {
    // CPU-only test clusters: no heat or noisy neighbour to wait out, repeats run at once.
    CheckContext ctx = given;
    ctx.repeat_spacing = std::chrono::seconds(0);
    AllreduceSpec spec;
    spec.check = kName;
    spec.fault_prefix = "VIGIL-ALLREDUCE";
    spec.backend = "host";
    spec.transport = "nvlink";  // no effect on the host backend
    spec.ranks = 2;
    spec.min_bytes = "1M";
    spec.max_bytes = long_plans(ctx.suite) ? "64M" : "16M";
    spec.step_factor = 4;
    spec.warmup_iters = 2;
    spec.iters = 10;
    spec.timeout = std::chrono::seconds(60);
    apply_tuning(spec, tuning_);
    return run_allreduce_check(ctx, spec);
  }

 private:
  AllreduceTuning tuning_;
};

}  // namespace

std::unique_ptr<Check> make_host_allreduce_check(const AllreduceTuning& tuning) {
  return std::make_unique<HostAllreduceCheck>(tuning);
}
std::unique_ptr<Check> make_host_allreduce_check() {
  return make_host_allreduce_check(AllreduceTuning{});
}

}  // namespace vigil
