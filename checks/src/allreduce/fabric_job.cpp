#include "allreduce/fabric_job.h"

#include <algorithm>
#include <cstdio>

#include "vigil/base/files.h"
#include "vigil/base/strings.h"

namespace vigil {

std::map<std::string, CheckResult> fabric_job_results(
    const FabricRoundsResult& rounds, const std::map<std::string, std::string>& leaf_of,
    const FabricNetwork& network) {
  const std::string prefix(network.fault_prefix);
  std::map<std::string, CheckResult> out;
  const detect::FabricVerdict& v = rounds.verdict;
  for (const detect::NodeBlame& b : v.nodes) {
    CheckResult r;
    r.check = std::string(network.check);
    r.short_name = std::string(network.short_name);
    for (const auto& p : rounds.pairs) {
      if (!p.busbw || (p.a != b.node && p.b != b.node)) continue;
      Measurement m;
      m.name = "pair_busbw";
      m.value = *p.busbw;
      m.unit = "GB/s";
      m.port = "pair:" + (p.a == b.node ? p.b : p.a);
      r.measurements.push_back(std::move(m));
    }
    const std::string job =
        std::to_string(v.nodes.size()) + "-node " + std::string(network.job) + ": ";
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
      r.fault_code = prefix + "-LOCALIZED";
      r.message = job + b.message;
    } else if (under_switch) {
      r.status = Status::kWarn;
      r.fault_code = prefix + "-SWITCH";
      r.message = job + b.message;
    } else if (b.call == detect::FabricCall::kPass) {
      r.message = job + b.message + " (pairs >= " + significant(v.slow_below) + " GB/s)";
    } else if (b.slow_pairs > 0) {
      r.status = Status::kWarn;
      r.fault_code = prefix + "-UNLOCALIZED";
      r.message = job + b.message;
    } else {
      r.status = Status::kError;
      r.fault_code = prefix + "-LAUNCH";
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
                                                  const AllreduceTuning& tuning,
                                                  const FabricNetwork& network) {
  FabricRoundsPlan plan;
  plan.nodes = ctx.allreduce.nodes;
  plan.rounds = rounds;
  plan.ranks_per_node = std::max(
      1, ctx.allreduce.ranks / std::max<int>(1, static_cast<int>(ctx.allreduce.nodes.size())));
  plan.seed = seed;
  plan.leaf_of = leaf_of;
  // The floor raises the "slow pair" line only once the site has confirmed it: an unconfirmed
  // floor (docs/thresholds.md, "Calibration") must not make healthy pairs count as slow, which
  // localization would then turn into a fatal VIGIL-FABRIC-LOCALIZED (review of 2026-11-26).
  if (const Threshold* t = ctx.sku ? ctx.sku->find(network.check, "busbw") : nullptr) {
    if (!t->unconfirmed) plan.judge.floor = t->fail;
  }
  auto results = fabric_job_results(run_fabric_rounds(ctx, fabric_spec(ctx, network, tuning), plan),
                                    leaf_of, network);
  if (network.transport != kDomainTransport) return results;
  // The NVLink domain job's rack-scale figure: one all_reduce over every tray of the job at once,
  // NVLS forced, as a training job in one rack runs it. It names no tray (the pairs do), so it is
  // recorded on every node's result, never judged there; its own verdict travels in the message.
  // No SKU and no state: no floor meant for a pair judges it, nothing repeats it past the job's
  // time, and it never joins the 2-tray check's busbw history.
  CheckContext whole_ctx = ctx;
  whole_ctx.sku = nullptr;
  whole_ctx.state_dir.clear();
  const CheckResult whole = run_across_nodes(whole_ctx, network, tuning);
  for (auto& [node, r] : results) {
    const std::string k = std::to_string(ctx.allreduce.nodes.size());
    const std::string all = k + " nodes";
    for (const Measurement& m : whole.measurements) {
      if (m.name != "busbw") continue;
      Measurement d = m;
      d.name = "domain_busbw";
      d.port = "domain:" + k + "-nodes";
      d.gpu.reset();
      d.threshold.reset();
      r.measurements.push_back(std::move(d));
    }
    r.message += "; all " + all + " at once: " + std::string(to_string(whole.status)) +
                 (whole.message.empty() ? "" : " (" + whole.message + ")");
  }
  return results;
}

Result<std::map<std::string, std::string>> load_topology_map(const std::string& path) {
  return load_node_map(path, "switch");
}

}  // namespace vigil
