// The qualify gate; see qualify_gate.h.
#include "vigil/drainer/qualify_gate.h"

#include <algorithm>

#include "vigil/drainer/policy.h"
#include "vigil/slurm/reason.h"

namespace vigil::drainer {

std::string_view gate_hold(const NodeRecord& s) {
  if (s.repair.stage == RepairStage::kReplace) return {};
  return s.gate_cause;
}

std::string hold_repaired(NodeRecord& s, const GateConfig& g, int64_t now) {
  if (!g.repaired || s.repair.stage != RepairStage::kRechecking) return "";
  s.gate_cause = std::string(kGateRepaired);
  s.gate_since_unix = now;
  return "; held until the " + g.suite + " suite passes (qualify gate)";
}

void release_gate(NodeRecord& s) {
  s.gate_cause.clear();
  s.gate_since_unix = 0;
  s.gate_errors = 0;
}

bool new_to_gate(const GateConfig& g, int64_t state_began_unix, int64_t now) {
  return g.new_nodes && state_began_unix > 0 && now - state_began_unix >= g.learn_s;
}

std::string gate_reason(const GateConfig& g) {
  return slurm::make_reason(kGateWord, "new node, held until the " + g.suite + " suite passes");
}

bool is_gate_reason(std::string_view reason) {
  return reason.starts_with(std::string(slurm::kReasonPrefix) + " " + std::string(kGateWord) + " ");
}

std::optional<std::string> gate_refusal(const NodeReport& r, bool report_fail,
                                        const GateConfig& g) {
  const std::string wanted = "; the qualify gate waits for a pass of the " + g.suite + " suite";
  if (!r.suite) return "a report of checks picked by hand (no suite)" + wanted;
  if (!suite_covers(*r.suite, g.suite)) return "a " + *r.suite + " run" + wanted;
  if (report_fail) return std::optional<std::string>("the " + *r.suite + " run failed");
  std::string errors;
  bool passed = false;
  for (const auto& c : r.checks) {
    if (c.status == Status::kError) errors += (errors.empty() ? "" : ",") + c.check;
    passed = passed || c.status == Status::kPass || c.status == Status::kWarn;
  }
  if (!errors.empty()) return "the " + *r.suite + " run had errors (" + errors + ")" + wanted;
  if (!passed) return "the " + *r.suite + " run passed no check" + wanted;
  return std::nullopt;
}

bool gate_errored(const NodeReport& r, bool report_fail, const GateConfig& g) {
  if (report_fail || !r.suite || !suite_covers(*r.suite, g.suite)) return false;
  return std::any_of(r.checks.begin(), r.checks.end(),
                     [](const CheckResult& c) { return c.status == Status::kError; });
}

std::optional<std::string> gate_due(const NodeRecord& s, const GateConfig& g, int64_t now,
                                    int64_t last_listed) {
  const std::string_view cause = gate_hold(s);
  if (cause.empty() || !s.drained_by_vigil) return std::nullopt;
  if (s.repair.stage == RepairStage::kRebooting || s.repair.stage == RepairStage::kResetting ||
      s.repair.stage == RepairStage::kReplace)
    return std::nullopt;
  if (last_listed > 0 && now - last_listed < g.retry_s) return std::nullopt;
  return "qualify: " + std::string(cause == kGateNew ? "new node" : "back from repair") +
         ", held until the " + g.suite + " suite passes" + (last_listed > 0 ? " (again)" : "");
}

}  // namespace vigil::drainer
