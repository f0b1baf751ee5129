// The switch verdict of fabric jobs (docs/fabric.md "Switch verdict"): a job with a topology
// names a suspected leaf switch instead of draining its nodes; the drainer keeps the verdict
// on every node known under the switch, exports it (vigil_fabric_switch_suspect) and annotates
// those nodes, until a later job has a good pair leaving the switch.
#include <nlohmann/json.hpp>

#include "commit.h"
#include "ingest_log.h"
#include "outbox.h"
#include "vigil/drainer/drainer.h"

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

void Drainer::spread_switch_verdict_locked(const NodeRecord& from, const NodeReport& r, Commit& c) {
  const std::string why = from.switch_suspect
                              ? "fabric switch " + from.fabric_switch +
                                    " suspected by the fabric job of " + from.node + " (run " +
                                    r.run_id + ")"
                              : "fabric switch " + from.fabric_switch + " cleared: " + from.node +
                                    " had a good pair leaving it (run " + r.run_id + ")";
  for (const auto& [name, s] : nodes_) {
    if (name == from.node || s.fabric_switch != from.fabric_switch ||
        s.switch_suspect == from.switch_suspect)
      continue;
    Decision d;
    d.before = s.state;
    d.after = s.state;
    d.why = why;
    d.record = s;
    d.record.switch_suspect = from.switch_suspect;
    d.breaker = breaker_;
    // Assigns nodes_[name] in place: the iteration stays valid.
    apply_decision_locked(d, nullptr, 0, c);
  }
}

}  // namespace vigil::drainer
