// fabric_allreduce_ib: all_reduce across the two nodes of a fabric job (`sbatch -N 2`, one rank
// per GPU, `--map-by node`), with NCCL's own paths: NVLink inside each node, the InfiniBand
// fabric between them (kFabricTransport). busbw is judged against the SKU's threshold (>=).
// domain_allreduce_nvlink: the same across two trays of one NVLink domain (GB200/GB300 NVL72),
// over multi-node NVLink and NVLS, both forced (kDomainTransport).
//
// Only `vigil-check fabric` runs them (they need the pair in one allocation); `vigil-check run`
// never does. A slow pair cannot tell which node is at fault, so both nodes get the same
// result; vigil-submit pairs nodes at random each run, so a healthy node's fail streak breaks
// at its next partner while a bad node keeps failing (docs/vigil-check.md, "Fabric runs").
#include "allreduce/allreduce_launch.h"
#include "check_factories.h"
#include "cuda/cuda_driver.h"
#include "vigil/checks/gpu_probe.h"

namespace vigil {
namespace {

class FabricAllreduceCheck final : public Check {
 public:
  FabricAllreduceCheck(const FabricNetwork& network, AllreduceTuning tuning)
      : network_(network), tuning_(std::move(tuning)) {}
  std::string_view name() const override { return network_.check; }

  Applies applies(const CheckContext& ctx) const override {
    if (ctx.allreduce.nodes.size() < 2)
      return {false, "runs only in a fabric job (vigil-check fabric)"};
    if (ctx.allreduce.ranks < 2) return {false, "needs at least 2 ranks across the pair"};
    if (ctx.allreduce.backend == "nccl") {
      if (!cuda_built_in()) return {false, "built without CUDA/NCCL"};
      if (!ctx.has_gpu_runtime) return {false, "no CUDA device seen"};
    }
    return {};
  }

  CheckResult run(const CheckContext& ctx) override {
    return run_across_nodes(ctx, network_, tuning_);
  }

 private:
  const FabricNetwork& network_;
  AllreduceTuning tuning_;
};

}  // namespace

AllreduceSpec fabric_spec(const CheckContext& ctx, const FabricNetwork& network,
                          const AllreduceTuning& tuning) {
  AllreduceSpec spec;
  spec.check = network.check;
  spec.fault_prefix = network.fault_prefix;
  spec.backend = ctx.allreduce.backend;
  // P2P and SHM stay on: with them off NCCL marks every intra-node pair PATH_NET
  // (src/graph/paths.cc) and each GPU sends through its own NIC, so busbw is one NIC (~45 GB/s
  // at NDR) against a floor measured with NVLink inside each node (~390 GB/s across two nodes).
  // This way NVLink carries the intra-node hops and the fabric the inter-node ones, as a
  // training job's all_reduce does; the inter-node hop is what a slow link slows.
  spec.transport = std::string(network.transport);
  spec.ranks = ctx.allreduce.ranks;
  // The nodes by name, not from mpirun's view of an allocation: a held fabric re-check runs
  // mpirun with Slurm's allocation reader off (cronjobs/vigil-check.sbatch), and without --host
  // every rank started on mpirun's own node (seen on the local cluster: the drained node never
  // ran a rank, and the pair "passed").
  spec.hosts = ctx.allreduce.nodes;
  spec.map_by_node = true;
  const bool full = long_plans(ctx.suite);
  spec.min_bytes = full ? "512M" : "1G";
  spec.max_bytes = full ? "8G" : "4G";
  spec.timeout = std::chrono::seconds(600);
  apply_tuning(spec, tuning);
  return spec;
}

CheckResult run_across_nodes(const CheckContext& ctx, const FabricNetwork& network,
                             const AllreduceTuning& tuning) {
  // NCCL and vigil-allreduce's CUDA runtime need a driver at least as new (cuda_driver.h).
  if (ctx.allreduce.backend == "nccl")
    if (auto too_old = cuda_probe::skip_if_driver_too_old(network.check)) return *too_old;
  return run_allreduce_check(ctx, fabric_spec(ctx, network, tuning));
}

std::unique_ptr<Check> make_fabric_allreduce_ib_check(const AllreduceTuning& tuning) {
  return std::make_unique<FabricAllreduceCheck>(kInfinibandFabric, tuning);
}

std::unique_ptr<Check> make_domain_allreduce_nvlink_check(const AllreduceTuning& tuning) {
  return std::make_unique<FabricAllreduceCheck>(kNvlinkDomain, tuning);
}

}  // namespace vigil
