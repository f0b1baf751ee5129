// The switch verdict of fabric jobs (docs/fabric.md "Switch verdict"): a job with a topology
// names a suspected leaf switch instead of draining its nodes; the drainer keeps the verdict
// on every node known under the switch, exports it (vigil_fabric_switch_suspect) and annotates
// those nodes, until a later job has a good pair leaving the switch.
#include "vigil/drainer/policy.h"

namespace vigil::drainer {

namespace {
constexpr std::string_view kSwitchPort = "switch:";
}  // namespace

bool fold_switch_evidence(NodeRecord& s, const NodeReport& r) {
  bool found = false;
  for (const auto& c : r.checks) {
    for (const auto& m : c.measurements) {
      if (m.name != "switch_suspected" || !m.port || !m.port->starts_with(kSwitchPort)) continue;
      const std::string leaf = m.port->substr(kSwitchPort.size());
      if (leaf.empty()) continue;
      s.fabric_switch = leaf;
      s.switch_suspect = m.value >= 0.5;
      found = true;
    }
  }
  return found;
}

std::vector<Decision> switch_spread(const NodeRecord& from, const std::string& run_id,
                                    const std::map<std::string, NodeRecord>& nodes,
                                    const BreakerState& breaker) {
  const std::string why = from.switch_suspect
                              ? "fabric switch " + from.fabric_switch +
                                    " suspected by the fabric job of " + from.node + " (run " +
                                    run_id + ")"
                              : "fabric switch " + from.fabric_switch + " cleared: " + from.node +
                                    " had a good pair leaving it (run " + run_id + ")";
  std::vector<Decision> out;
  for (const auto& [name, s] : nodes) {
    if (name == from.node || s.fabric_switch != from.fabric_switch ||
        s.switch_suspect == from.switch_suspect)
      continue;
    NodeRecord next = s;
    next.switch_suspect = from.switch_suspect;
    out.push_back(record_change(s, std::move(next), why, breaker));
  }
  return out;
}

}  // namespace vigil::drainer
