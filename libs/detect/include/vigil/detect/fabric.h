#pragma once
// Fabric localization (docs/fabric.md): which node, or which switch, makes pairs of nodes slow.
// A fabric job of k nodes runs r rounds of disjoint pairs with rotating partners (plan_rounds);
// every pair's all_reduce busbw goes into localize(), which decides per node:
//   fail    — slow with >= min_slow_partners partners that are fine with someone else;
//   pass    — at least one good pair (both ends of a good pair carried the traffic);
//   unknown — neither (every pair slow with partners that are slow elsewhere too, or no pair).
// With a topology (node -> leaf switch), a leaf under which most nodes are slow on the pairs that
// leave it, while the pairs that stay inside it are fine or absent, is a switch fault: its nodes
// are `unknown` (never drained for it) and the switch is named instead.
// Pure: no I/O, no clock; deterministic for a given input.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "vigil/base/enum_names.h"

namespace vigil::detect {

// Round r of a job: the disjoint pairs (indices into the job's node list). With an odd k one
// node sits out each round. Partners rotate (circle method) so no two rounds repeat a pair while
// r <= k - 1; `seed` shuffles the node order so partners differ from job to job.
std::vector<std::vector<std::pair<int, int>>> plan_rounds(int k, int rounds, std::uint64_t seed);

struct PairFigure {
  std::string a, b;
  int round = 0;
  std::optional<double> busbw;  // GB/s; nullopt: the pair's run failed (error), proves nothing
};

struct FabricJudgeConfig {
  // A pair is slow when busbw < the reference (the upper quartile of the job's measured pairs:
  // healthy while at least a quarter of the pairs are) x (1 - slow_margin), or below
  // `floor` when set (the SKU's fabric_allreduce_ib fail bound: catches a job where every pair
  // is slow, which the median cannot).
  double slow_margin = 0.10;
  std::optional<double> floor;
  int min_slow_partners = 2;
  // A leaf is suspected when > switch_share of its nodes in the job are slow on pairs that
  // cross it, and at least min_switch_nodes of them.
  double switch_share = 0.5;
  int min_switch_nodes = 2;
};

enum class FabricCall { kPass, kFail, kUnknown };
inline constexpr EnumName<FabricCall> kFabricCallNames[] = {
    {FabricCall::kPass, "pass"}, {FabricCall::kFail, "fail"}, {FabricCall::kUnknown, "unknown"}};
inline std::string_view to_string(FabricCall c) { return name_of(kFabricCallNames, c, "unknown"); }

struct NodeBlame {
  std::string node;
  FabricCall call = FabricCall::kUnknown;
  int good_pairs = 0, slow_pairs = 0;
  std::vector<std::string> proven_partners;  // slow with this node, fine with someone else
  std::string leaf;                          // from the topology, "" when unknown
  std::string message;  // "slow with 3 partners that are fine elsewhere (n2 31.2, ...)"
};

struct SwitchBlame {
  std::string leaf;
  int slow_nodes = 0, nodes = 0;
  std::string message;  // "leaf s1: 4 of 4 nodes slow on pairs that leave it, ..."
};

struct FabricVerdict {
  double reference_busbw = 0;  // upper quartile of the job's measured pairs
  double slow_below = 0;       // the busbw under which a pair was slow
  std::vector<NodeBlame> nodes;
  std::vector<SwitchBlame> switches;
  int slow_pair_count = 0, pair_count = 0;
};

// `nodes`: every node of the job (a node with no measured pair is `unknown`). `leaf_of`: the
// topology, possibly empty or partial.
FabricVerdict localize(const std::vector<std::string>& nodes, const std::vector<PairFigure>& pairs,
                       const std::map<std::string, std::string>& leaf_of,
                       const FabricJudgeConfig& config = {});

}  // namespace vigil::detect
