#include "allreduce/fabric_job.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "vigil/base/strings.h"

namespace vigil {

namespace {

constexpr std::string_view kCheck = "fabric_allreduce_ib";

}  // namespace

std::map<std::string, CheckResult> fabric_job_results(
    const FabricRoundsResult& rounds, const std::map<std::string, std::string>& leaf_of) {
  std::map<std::string, CheckResult> out;
  const detect::FabricVerdict& v = rounds.verdict;
  for (const detect::NodeBlame& b : v.nodes) {
    CheckResult r;
    r.check = std::string(kCheck);
    r.short_name = "fabric-ib";
    for (const auto& p : rounds.pairs) {
      if (!p.busbw || (p.a != b.node && p.b != b.node)) continue;
      Measurement m;
      m.name = "pair_busbw";
      m.value = *p.busbw;
      m.unit = "GB/s";
      m.port = "pair:" + (p.a == b.node ? p.b : p.a);
      r.measurements.push_back(std::move(m));
    }
    const std::string job = std::to_string(v.nodes.size()) + "-node fabric job: ";
    bool under_switch = false;
    if (auto it = leaf_of.find(b.node); it != leaf_of.end()) {
      const std::string& leaf = it->second;
      for (const auto& s : v.switches) under_switch = under_switch || s.leaf == leaf;
      // The switch verdict travels as a measurement, so older drainers accept the report:
      // 1 = this job suspects the node's leaf; 0 = the node had a good pair leaving the leaf,
      // which clears an earlier suspicion; absent = no evidence either way.
      bool good_crossing = false;
      for (const auto& p : rounds.pairs) {
        if (!p.busbw || *p.busbw < v.slow_below || (p.a != b.node && p.b != b.node)) continue;
        auto other = leaf_of.find(p.a == b.node ? p.b : p.a);
        good_crossing = good_crossing || (other != leaf_of.end() && other->second != leaf);
      }
      if (under_switch || good_crossing) {
        Measurement m;
        m.name = "switch_suspected";
        m.value = under_switch ? 1 : 0;
        m.unit = "bool";
        m.port = "switch:" + leaf;
        r.measurements.push_back(std::move(m));
      }
    }
    if (b.call == detect::FabricCall::kFail) {
      r.status = Status::kFail;
      r.fault_code = "VIGIL-FABRIC-LOCALIZED";
      r.message = job + b.message;
    } else if (under_switch) {
      r.status = Status::kWarn;
      r.fault_code = "VIGIL-FABRIC-SWITCH";
      r.message = job + b.message;
    } else if (b.call == detect::FabricCall::kPass) {
      r.message = job + b.message + " (pairs >= " + significant(v.slow_below) + " GB/s)";
    } else if (b.slow_pairs > 0) {
      r.status = Status::kWarn;
      r.fault_code = "VIGIL-FABRIC-UNLOCALIZED";
      r.message = job + b.message;
    } else {
      r.status = Status::kError;
      r.fault_code = "VIGIL-FABRIC-LAUNCH";
      r.message = job + "no pair of this node could be measured";
      if (!rounds.job_error.empty()) r.message += "; " + rounds.job_error;
    }
    // Every pair of this node that gave no figure, and why: a missing pair is why a node is
    // unknown, and the admin reading the report should not have to dig for it.
    for (const auto& [i, why] : rounds.pair_errors) {
      const detect::PairFigure& p = rounds.pairs.at(i);
      if (p.a == b.node || p.b == b.node)
        r.message += "; round " + std::to_string(p.round + 1) + " " + p.a + "+" + p.b + ": " + why;
    }
    out[b.node] = std::move(r);
  }
  return out;
}

std::map<std::string, CheckResult> run_fabric_job(const CheckContext& ctx, int rounds,
                                                  std::uint64_t seed,
                                                  const std::map<std::string, std::string>& leaf_of,
                                                  const AllreduceTuning& tuning) {
  AllreduceSpec spec;
  spec.check = kCheck;
  spec.fault_prefix = "VIGIL-FABRIC";
  spec.backend = ctx.fabric_backend;
  // P2P and SHM stay on (review F01): with them off NCCL marks every intra-node pair PATH_NET
  // (src/graph/paths.cc) and each GPU sends through its own NIC, so busbw is one NIC (~45 GB/s
  // at NDR) against a floor measured with NVLink inside each node (~390 GB/s across two nodes).
  // This way NVLink carries the intra-node hops and the fabric the inter-node ones, as a
  // training job's all_reduce does; the inter-node hop is what a slow link slows.
  spec.transport = kFabricTransport;
  const bool full = ctx.suite == Suite::kFull;
  spec.min_bytes = full ? "512M" : "1G";
  spec.max_bytes = full ? "8G" : "4G";
  spec.timeout = std::chrono::seconds(600);
  apply_tuning(spec, tuning);
  FabricRoundsPlan plan;
  plan.nodes = ctx.fabric_nodes;
  plan.rounds = rounds;
  plan.ranks_per_node =
      std::max(1, ctx.fabric_ranks / std::max<int>(1, static_cast<int>(ctx.fabric_nodes.size())));
  plan.seed = seed;
  plan.leaf_of = leaf_of;
  // The floor raises the "slow pair" line only once the site has confirmed it: an unconfirmed
  // floor (docs/thresholds.md, "Calibration") must not make healthy pairs count as slow, which
  // localization would then turn into a fatal VIGIL-FABRIC-LOCALIZED (review of 2026-11-26).
  if (const Threshold* t = ctx.sku ? ctx.sku->find(kCheck, "busbw") : nullptr) {
    if (!t->unconfirmed) plan.judge.floor = t->fail;
  }
  return fabric_job_results(run_fabric_rounds(ctx, spec, plan), leaf_of);
}

Result<std::map<std::string, std::string>> load_topology_map(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Error{"cannot read the topology map", path};
  std::map<std::string, std::string> leaf_of;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (auto hash = line.find('#'); hash != std::string::npos) line.erase(hash);
    std::istringstream words(line);
    std::string node, leaf, extra;
    if (!(words >> node)) continue;
    const std::string where = path + ":" + std::to_string(n);
    if (!(words >> leaf) || (words >> extra))
      return Error{"expected '<node> <switch>', got '" + line + "'", where};
    if (!leaf_of.emplace(node, leaf).second) return Error{"node " + node + " listed twice", where};
  }
  return leaf_of;
}

}  // namespace vigil
