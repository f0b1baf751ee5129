#pragma once
// A fabric job of k > 2 nodes (docs/fabric.md): the rounds of pairs (fabric_rounds.h), then one
// fabric_allreduce_ib result per node from the localization:
//   fail  VIGIL-FABRIC-LOCALIZED  slow with >= 2 partners that are fine elsewhere (drains after
//                                 one job: the blame is proven, unlike a 2-node job's);
//   warn  VIGIL-FABRIC-SWITCH     under a leaf switch suspected by this job (the node is not
//                                 blamed; the message names the switch);
//   warn  VIGIL-FABRIC-UNLOCALIZED slow, but only with partners that are slow elsewhere too;
//   error VIGIL-FABRIC-LAUNCH     no pair of the node could be measured;
//   pass                           a good pair.
// Every pair the node took part in is a measurement `pair_busbw` with port `pair:<partner>`.
// With a topology, a node whose leaf this job suspects carries `switch_suspected` = 1 (unit
// bool, port `switch:<leaf>`), and a node with a good pair to another leaf carries 0: the
// drainer exports and annotates the switch from these, and a 0 clears an earlier suspicion.
#include <cstdint>
#include <map>
#include <string>

#include "allreduce/fabric_rounds.h"
#include "vigil/base/result.h"
#include "vigil/checks/check.h"

namespace vigil {

// Results keyed by node, from what the rounds measured, as `network`'s check (fault codes
// <prefix>-LOCALIZED, -SWITCH, -UNLOCALIZED, -LAUNCH).
std::map<std::string, CheckResult> fabric_job_results(
    const FabricRoundsResult& rounds, const std::map<std::string, std::string>& leaf_of,
    const FabricNetwork& network = kInfinibandFabric);

// Runs the rounds for ctx.allreduce.nodes (ctx.allreduce.ranks spread evenly,
// ctx.allreduce.backend) over `network`, judged against the SKU's busbw fail bound of its check
// when there is one and it is confirmed. An NVLink domain job then runs one all_reduce over all its
// nodes at once and records its busbw on every node's result as `domain_busbw` (port
// "domain:<k>-nodes").
std::map<std::string, CheckResult> run_fabric_job(const CheckContext& ctx, int rounds,
                                                  std::uint64_t seed,
                                                  const std::map<std::string, std::string>& leaf_of,
                                                  const AllreduceTuning& tuning = {},
                                                  const FabricNetwork& network = kInfinibandFabric);

// A topology map file: one "<node> <leaf switch>" per line; blank lines and '#' comments are
// ignored. Errors name the file and line ("topo.txt:3: expected '<node> <switch>'").
Result<std::map<std::string, std::string>> load_topology_map(const std::string& path);

}  // namespace vigil
