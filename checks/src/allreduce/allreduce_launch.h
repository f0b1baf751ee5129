#pragma once
// Shared by the all_reduce checks: find the benchmark binary, launch it through mpirun with
// a hard deadline, read its result (our JSON, or the text table of a site's nccl-tests
// all_reduce_perf via the same parser) and turn it into a CheckResult with the busbw measurement.
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "vigil/checks/check.h"

namespace vigil {

// The transport mode of the multi-node fabric checks: P2P and SHM on, so NVLink carries the
// intra-node hops (review F01), and multi-node NVLink off, so two trays of one NVL72 rack meet
// over the network the check is named for ("fabric" in vigil-allreduce's terms).
inline constexpr const char* kFabricTransport = "fabric";

struct AllreduceSpec {
  std::string_view check;         // registry name
  std::string_view fault_prefix;  // "VIGIL-NCCL" / "VIGIL-ALLREDUCE"
  std::string backend;            // "nccl" | "host"
  std::string transport;          // "nvlink" | "ib" | "fabric"
  int ranks = 2;
  bool map_by_node = false;        // ranks spread over the allocation's nodes (fabric jobs)
  std::vector<std::string> hosts;  // mpirun --host (one pair of a fabric round); empty: all
  std::string min_bytes, max_bytes;
  int step_factor = 2;
  int warmup_iters = 5;
  int iters = 20;
  std::chrono::seconds timeout{120};
};

// Test and site overrides; the registry's factories use the defaults.
struct AllreduceTuning {
  std::optional<std::chrono::seconds> timeout;
  std::optional<std::string> min_bytes, max_bytes;
  std::optional<int> warmup_iters, iters;
};

// ctx.allreduce_binary, else vigil-allreduce next to /proc/self/exe (installed layout), else
// ../nccl-bench/vigil-allreduce (build tree), else "vigil-allreduce" from PATH.
std::string find_allreduce_binary(const CheckContext& ctx);
// True when `binary` is not vigil-allreduce (a site's all_reduce_perf): text output, no --json.
bool is_nccl_tests_binary(const std::string& binary);

// The argv that runs the spec (exposed for tests and docs): mpirun options, then the binary.
std::vector<std::string> allreduce_command(const CheckContext& ctx, const AllreduceSpec& spec,
                                           const std::string& binary, const std::string& json_path);

// With the nccl backend, first asks NVML whether this node's GPUs are used by other work
// (nvml/gpu_busy.h): if so the result is error VIGIL-GPU-BUSY and nothing is launched.
CheckResult run_allreduce_check(const CheckContext& ctx, const AllreduceSpec& spec);

std::unique_ptr<Check> make_nccl_allreduce_nvlink_check(const AllreduceTuning& tuning);
std::unique_ptr<Check> make_nccl_allreduce_ib_check(const AllreduceTuning& tuning);
std::unique_ptr<Check> make_host_allreduce_check(const AllreduceTuning& tuning);
std::unique_ptr<Check> make_fabric_allreduce_ib_check(const AllreduceTuning& tuning);

// Apply tuning over a spec's defaults.
void apply_tuning(AllreduceSpec& spec, const AllreduceTuning& tuning);

}  // namespace vigil
