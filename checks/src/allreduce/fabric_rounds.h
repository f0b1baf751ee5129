#pragma once
// The rounds of a k-node fabric job (docs/fabric.md): r rounds of disjoint pairs with rotating
// partners (vigil::detect::plan_rounds); in each round every pair runs its own all_reduce at the
// same time (one mpirun --host a,b per pair, NVLink and shared memory off), and every pair's
// busbw goes into vigil::detect::localize, which names a slow node, or a slow leaf switch when a
// topology is given.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "allreduce/allreduce_launch.h"
#include "vigil/detect/fabric.h"

namespace vigil {

struct FabricRoundsPlan {
  std::vector<std::string> nodes;  // the allocation's nodes, as mpirun --host takes them
  int rounds = 3;
  int ranks_per_node = 1;
  std::uint64_t seed = 0;                      // e.g. the job id: partners differ per job
  std::map<std::string, std::string> leaf_of;  // topology; may be empty
  detect::FabricJudgeConfig judge;
};

struct FabricRoundsResult {
  std::vector<detect::PairFigure> pairs;
  std::map<std::size_t, std::string> pair_errors;  // index into pairs -> why it has no busbw
  std::string job_error;  // why no pair could run at all (e.g. no temporary directory)
  detect::FabricVerdict verdict;
};

// `spec` is the all_reduce each pair runs (backend, transport, sizes, timeout); its ranks and
// hosts are set per pair. vigil-allreduce (JSON) or a site's all_reduce_perf (text table).
FabricRoundsResult run_fabric_rounds(const CheckContext& ctx, AllreduceSpec spec,
                                     const FabricRoundsPlan& plan);

}  // namespace vigil
