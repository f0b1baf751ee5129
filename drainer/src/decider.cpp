#include "decider.h"

#include <algorithm>

namespace vigil::drainer {

namespace {

std::map<std::string, int> known_per_group(const std::map<std::string, NodeRecord>& table) {
  std::map<std::string, int> known;
  for (const auto& [n, s] : table) known[PolicyEngine::group_key(s)]++;
  return known;
}

}  // namespace

Decider::Decider(const PolicyEngine& engine, const std::map<std::string, NodeRecord>& table,
                 const SlurmView& view, const std::map<std::string, int>& partition_counts)
    : engine_(engine),
      table_(table),
      view_(view),
      groups_(partition_counts, !view.empty(), known_per_group(table)) {}

Decider::Outcome Decider::decide(const NodeReport& report, const NodeReport& judged,
                                 const BreakerState& breaker) {
  const auto it = table_.find(report.node);
  const NodeRecord* prev = it == table_.end() ? nullptr : &it->second;
  const auto sv = view_.find(report.node);
  const slurm::SlurmNodeInfo* info = sv == view_.end() ? nullptr : &sv->second;
  // The node's breaker group: its partition per Slurm (else as known), else its SKU.
  std::string partition = prev ? prev->partition : "";
  if (info && !info->partitions.empty()) partition = info->partitions.front();
  const int gsize =
      groups_.size(partition, breaker_group(partition, next_sku(prev, report)), !prev);
  // Slurm's view was read and has no such node (a name mismatch): never drained.
  const bool unknown_to_slurm = !info && !view_.empty();
  const std::string node = report.node;
  Outcome out{engine_.on_report(
                  prev, judged, info, breaker, gsize, unknown_to_slurm,
                  [this, node](const PartRecord& part) { return drains_elsewhere(node, part); }),
              false};
  out.switch_evidence = fold_switch_evidence(out.decision.record, report);
  return out;
}

std::vector<int64_t> Decider::drains_elsewhere(const std::string& node, const PartRecord& part) {
  if (!with_drains_) {
    with_drains_.emplace();
    auto drained = [](const PartRecord& p) { return !p.drains.empty(); };
    for (const auto& [name, s] : table_)
      if (!s.departed_parts.empty() || std::any_of(s.parts.begin(), s.parts.end(), drained))
        with_drains_->emplace_back(name, &s);  // map nodes stay put while records change
  }
  std::vector<int64_t> drains;
  for (const auto& [name, s] : *with_drains_) {
    if (name == node) continue;  // the node's own parts: update_parts looks at them itself
    collect_drains(s->parts, part, drains);
    collect_drains(s->departed_parts, part, drains);
  }
  return drains;
}

}  // namespace vigil::drainer
