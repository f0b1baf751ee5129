// The qualify gate; see qualify_gate.h. Also the policy engine's steps for it (policy.h): holding a
// new node, a fault found on a held one, and whether a report lets a held node go.
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

// ---- the policy engine's steps for the gate ------------------------------------------------

// Like drain_or_block, without a failing check: the gate's own reason, counted by the breaker as
// any drain (a fleet whose nodes all look new, after a lost state or renamed nodes, must not be
// drained whole), not drained in dry-run. A node Slurm does not know or that is DOWN/FAIL/MAINT
// waits for a later report; one drained by someone else is theirs: the gate lets it go.
PolicyEngine::Step PolicyEngine::hold_for_gate(Decision& d, NodeRecord& s,
                                               const slurm::SlurmNodeInfo* slurm, int group_size,
                                               bool unknown_to_slurm, int64_t now) const {
  const std::string reason = gate_reason(policy_.gate);
  d.reason = reason;
  const std::string what = "qualify gate: new node";
  if (unknown_to_slurm)
    return {Action::kNone, NodeState::kError,
            what + ", but Slurm has no node '" + s.node + "'; not held"};
  if (slurm && slurm::untouchable(*slurm))
    return {Action::kNone, state_from_checks(s),
            what + ", DOWN/FAIL/MAINT in Slurm; held once it is back"};
  if (slurm && slurm::drained_by_other(*slurm)) {
    release_gate(s);
    return {Action::kNone, NodeState::kDrained,
            what + ", drained by another owner (" + slurm->reason + "): theirs, not held"};
  }
  s.reason = reason;
  s.driving_checks.clear();
  if (dry_run_)
    return {Action::kWouldDrain, NodeState::kWouldDrain, "dry-run: would hold: " + what};
  if (d.breaker.open)
    return {Action::kBreakerBlocked, NodeState::kWouldDrain,
            what + "; not held while the circuit breaker is open: " + d.breaker.why};
  d.counted_drain = breaker_.try_count(d.breaker, group_key(s), group_size, now);
  if (!d.counted_drain)
    return {Action::kBreakerBlocked, NodeState::kWouldDrain,
            what + "; circuit breaker opened: " + d.breaker.why};
  s.drained_by_vigil = true;
  s.drained_unix = now;
  return {Action::kDrain, NodeState::kDrained,
          "hold: " + what + ", until the " + policy_.gate.suite + " suite passes"};
}

// The hold's reason says only "held until the qualify suite passes": sinfo -R, the annotation and
// the event must name the fault a run found on the held node (a bit flip on GPU 0, its element),
// and its GPUs are charged as for any drain. The breaker counted the hold when it began, and the
// drain is already in Slurm (the sink relabels it): neither is done again. The gate still holds
// the node until its suite passes; the fault's checks then decide as for any drain.
PolicyEngine::Step PolicyEngine::fault_takes_the_hold(Decision& d, NodeRecord& s,
                                                      const std::vector<const CheckResult*>& cands,
                                                      int64_t now) const {
  if (dry_run_)  // a hold adopted from Slurm, or kept from before dry-run: nothing changes
    return {Action::kWouldDrain, NodeState::kDrained,
            "dry-run: would name the fault in the hold's place: " + d.reason};
  s.reason = d.reason;  // its driving checks are in s already (drain_or_block)
  Step step = begin_drain(d, s, cands, now);
  step.why += " (found while held by the qualify gate)";
  return step;
}

std::optional<PolicyEngine::Step> PolicyEngine::gate_verdict(
    NodeRecord& s, const std::optional<std::string>& refused, const NodeReport& r,
    bool report_fail) const {
  if (!refused) {
    release_gate(s);
    return std::nullopt;
  }
  if (gate_errored(r, report_fail, policy_.gate) && ++s.gate_errors >= kGateErrorRuns) {
    release_gate(s);
    s.note += std::string(s.note.empty() ? "" : "; ") +
              "qualify gate: " + std::to_string(kGateErrorRuns) +
              " runs failed on errors alone; the ordinary re-checks decide";
    return std::nullopt;
  }
  return Step{Action::kNone, NodeState::kDrained, *refused};
}

}  // namespace vigil::drainer
