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

namespace ncclbench {
struct BenchRun;
}

// The transport mode of the multi-node fabric checks: P2P and SHM on, so NVLink carries the
// intra-node hops, and multi-node NVLink off, so two trays of one NVL72 rack meet
// over the network the check is named for ("fabric" in vigil-allreduce's terms).
inline constexpr const char* kFabricTransport = "fabric";
// The transport mode of the NVLink domain jobs (GB200/GB300 NVL72): the trays of one domain over
// multi-node NVLink with NVLS, both forced ("domain" in vigil-allreduce's terms).
inline constexpr const char* kDomainTransport = "domain";

// The network a multi-node job measures between its nodes (docs/fabric.md): the check it
// reports, the short name in a drain reason, the fault code prefix, vigil-allreduce's transport
// mode, and how a message names the job.
struct FabricNetwork {
  std::string_view check;
  std::string_view short_name;
  std::string_view fault_prefix;
  std::string_view transport;
  std::string_view job;
};
inline constexpr FabricNetwork kInfinibandFabric{"fabric_allreduce_ib", "fabric-ib", "VIGIL-FABRIC",
                                                 kFabricTransport, "fabric job"};
inline constexpr FabricNetwork kNvlinkDomain{"domain_allreduce_nvlink", "nvl-domain",
                                             "VIGIL-DOMAIN", kDomainTransport, "NVLink domain job"};

struct AllreduceSpec {
  std::string_view check;         // registry name
  std::string_view fault_prefix;  // "VIGIL-NCCL" / "VIGIL-ALLREDUCE"
  std::string backend;            // "nccl" | "host"
  std::string transport;          // "nvlink" | "ib" | "fabric" | "domain"
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

// ctx.allreduce.binary, else vigil-allreduce next to /proc/self/exe (installed layout), else
// ../nccl-bench/vigil-allreduce (build tree), else "vigil-allreduce" from PATH.
std::string find_allreduce_binary(const CheckContext& ctx);
// True when `binary` is not vigil-allreduce (a site's all_reduce_perf): text output, no --json.
bool is_nccl_tests_binary(const std::string& binary);

// NCCL_IB_HCA for a run that crosses the network (transport ib or fabric, nccl backend) on a SKU
// that names its fabric HCAs (infiniband.devices): "NCCL_IB_HCA==<the node's ports of those HCAs
// as hca:port>", so NCCL measures the ports ib_port judges and not a storage or management NIC
// (NCCL's net_ib.cc reads a leading '=' as an exact-name list, '^' as exclusion, and
// "name:port" as one port). Only ports of the SKU's link layer count (a VPI HCA's Ethernet port
// on an InfiniBand SKU does not). nullopt when the
// job's environment or a NCCL configuration file already sets NCCL_IB_HCA (the site's choice
// stays), the SKU lists no devices, or none of them is in sysfs. The names come from the node
// vigil-check runs on; the other nodes of a fabric job are of the same SKU and name their HCAs
// alike.
std::optional<std::string> fabric_hca_setting(const CheckContext& ctx, const AllreduceSpec& spec);

// The argv that runs the spec (exposed for tests and docs): mpirun options, then the binary.
std::vector<std::string> allreduce_command(const CheckContext& ctx, const AllreduceSpec& spec,
                                           const std::string& binary, const std::string& json_path);

// Why a run's figure does not measure the path its spec names, from what NCCL's own log says it
// connected over (ncclbench::parse_transport_log), or nullopt (also when the log did
// not say). `code` is the fault code's suffix after spec.fault_prefix. Such a figure is never
// judged (error, never a drain): the cause is a setting or a node-side fault that ib_port,
// nvml_nvlink, nvml_fabric or nvlink_imex names.
struct WrongPath {
  const char* code;
  std::string why;
};
std::optional<WrongPath> wrong_path(const AllreduceSpec& spec, const ncclbench::BenchRun& run);

// With the nccl backend, first asks NVML whether this node's GPUs are used by other work
// (nvml/gpu_busy.h): if so the result is error VIGIL-GPU-BUSY and nothing is launched.
CheckResult run_allreduce_check(const CheckContext& ctx, const AllreduceSpec& spec);

std::unique_ptr<Check> make_nccl_allreduce_nvlink_check(const AllreduceTuning& tuning);
std::unique_ptr<Check> make_nccl_allreduce_ib_check(const AllreduceTuning& tuning);
std::unique_ptr<Check> make_host_allreduce_check(const AllreduceTuning& tuning);
std::unique_ptr<Check> make_fabric_allreduce_ib_check(const AllreduceTuning& tuning);
std::unique_ptr<Check> make_domain_allreduce_nvlink_check(const AllreduceTuning& tuning);
// The all_reduce of a multi-node job over `network`: its transport, sizes and time box, tuned.
AllreduceSpec fabric_spec(const CheckContext& ctx, const FabricNetwork& network,
                          const AllreduceTuning& tuning);
// That all_reduce across every node of ctx.allreduce.nodes at once (the 2-node job's check, and the
// whole-domain run of an NVLink domain job).
CheckResult run_across_nodes(const CheckContext& ctx, const FabricNetwork& network,
                             const AllreduceTuning& tuning);

// Apply tuning over a spec's defaults.
void apply_tuning(AllreduceSpec& spec, const AllreduceTuning& tuning);

}  // namespace vigil
