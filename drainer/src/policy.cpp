// Pure policy engine: see policy.h and docs/drainer.md "Policy".
#include "vigil/drainer/policy.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <nlohmann/json.hpp>

#include "vigil/base/time.h"
#include "vigil/drainer/qualify_gate.h"
#include "vigil/report/check_catalog.h"
#include "vigil/slurm/reason.h"

namespace vigil::drainer {
namespace {

bool is_pass_like(Status s) { return s == Status::kPass || s == Status::kWarn; }

bool contains(const std::vector<std::string>& v, const std::string& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

}  // namespace

std::string_view annotation_value(NodeState st) {
  return st == NodeState::kWouldDrain ? "would-drain" : to_string(st);
}

std::string drain_reason(const CheckResult& r, size_t max_len) {
  return slurm::make_reason(reason_name(r), reason_detail(r), max_len);
}

NodeState state_from_checks(const NodeRecord& s) {
  bool any_fail = false, any_warn = false, any_ok = false, any_error = false;
  for (const auto& [name, c] : s.checks) {
    switch (c.last_status) {
      case Status::kFail:
        any_fail = true;
        break;
      case Status::kWarn:
        any_warn = true;
        break;
      case Status::kPass:
        any_ok = true;
        break;
      case Status::kError:
        any_error = true;
        break;
      case Status::kSkipped:
        break;
    }
  }
  // A fail that has not (yet) reached drain_after is a suspect node: warn.
  if (any_fail || any_warn) return NodeState::kWarn;
  if (any_error) return NodeState::kError;
  if (any_ok) return NodeState::kHealthy;
  return s.checks.empty() ? NodeState::kUnknown : NodeState::kHealthy;
}

PolicyEngine::PolicyEngine(PolicyConfig policy, BreakerConfig breaker, bool dry_run,
                           const Clock& clock, bool repair, PartRule parts, bool reboots)
    : policy_(std::move(policy)),
      breaker_(breaker),
      dry_run_(dry_run),
      repair_(repair),
      parts_(parts),
      reboots_(reboots),
      clock_(clock) {}

std::string next_sku(const NodeRecord* prev, const NodeReport& r) {
  // A report that could not tell the SKU (NVML broken on the node, or a fabric job whose batch
  // host could not detect it) keeps the node in its known SKU group.
  if (r.sku == "unknown" && prev && !prev->sku.empty()) return prev->sku;
  return r.sku;
}

std::string PolicyEngine::group_key(const NodeRecord& s) {
  return breaker_group(s.partition, s.sku);
}

namespace {

// The node's state carried over from `prev`, refreshed with what every report says.
NodeRecord start_state(const NodeRecord* prev, const NodeReport& r,
                       const slurm::SlurmNodeInfo* slurm, int64_t now) {
  NodeRecord s = prev ? *prev : NodeRecord{};
  s.node = r.node;
  s.sku = next_sku(prev, r);
  if (r.k8s_node) s.k8s_node = r.k8s_node;
  if (slurm && !slurm->partitions.empty()) s.partition = slurm->partitions.front();
  s.last_report_unix = now;
  s.last_check_time = r.end_time;
  s.last_run_id = r.run_id;
  s.failing = failing_of(r);
  s.last_action = Action::kNone;
  s.note.clear();
  return s;
}

// The strongest remedy the candidates' reports name.
std::optional<Remedy> remedy_of(const std::vector<const CheckResult*>& cands) {
  std::optional<Remedy> r;
  for (const auto* c : cands) r = stronger(r, c->remedy);
  return r;
}

// Slurm is the truth about who owns a drain.
void sync_ownership(NodeRecord& s, const slurm::SlurmNodeInfo* slurm) {
  // Undrained for the seconds of a held re-check: the drain comes back before the check runs.
  if (!slurm || slurm::held_by_vigil(*slurm)) return;
  if (s.drained_by_vigil && !slurm::drained_by_vigil(*slurm)) {
    s.drained_by_vigil = false;
    s.drained_unix = 0;
    s.note = slurm->drain ? "drain taken over by another owner: " + slurm->reason
                          : "vigil drain lifted outside vigil";
    s.reason.clear();
    s.driving_checks.clear();
    end_repair(s);
    release_gate(s);  // a person's call: the gate does not hold the node again
  } else if (!s.drained_by_vigil && slurm::drained_by_vigil(*slurm)) {
    // Adopt a vigil drain we have no record of (state dir lost, one-shot runs, ...). One the
    // repair ladder gave up on stays a person's.
    s.drained_by_vigil = true;
    s.drained_unix = 0;  // adopted: when it began is not known
    s.reason = slurm->reason;
    s.driving_checks.clear();
    if (is_replace_reason(slurm->reason)) s.repair.stage = RepairStage::kReplace;
    if (is_gate_reason(slurm->reason) && s.gate_cause.empty()) s.gate_cause = std::string(kGateNew);
  }
}

const CheckResult* find_result(const NodeReport& r, std::string_view name) {
  for (const auto& c : r.checks)
    if (c.check == name) return &c;
  return nullptr;
}

// The per-check and per-node counters; returns whether the report failed.
bool count_report(NodeRecord& s, const NodeReport& r) {
  bool report_fail = false, report_ran = false;
  for (const auto& c : r.checks) {
    CheckState& cs = s.checks[c.check];
    cs.last_status = c.status;
    if (c.status == Status::kFail || is_pass_like(c.status)) cs.last_run_unix = s.last_report_unix;
    if (c.status == Status::kFail) {
      cs.consecutive_fails++;
      cs.consecutive_passes = 0;
      cs.last_reason = drain_reason(c);
      cs.fault_code = c.fault_code;
      report_fail = true;
      report_ran = true;
    } else if (is_pass_like(c.status)) {
      cs.consecutive_passes++;
      cs.consecutive_fails = 0;
      cs.fault_code.clear();
      report_ran = true;
    }  // error / skipped: counters unchanged; they neither drain nor prove health.
  }
  if (report_fail) {
    s.consecutive_fails++;
    s.consecutive_passes = 0;
  } else if (report_ran) {
    s.consecutive_passes++;
    s.consecutive_fails = 0;
  }
  return report_fail;
}

}  // namespace

Decision PolicyEngine::finish(Decision& d, NodeRecord& s, Step step) {
  d.action = step.action;
  s.state = step.state;
  s.last_action = step.action;
  if (!step.why.empty()) s.note = s.note.empty() ? step.why : s.note + "; " + step.why;
  d.why = s.note;
  d.after = step.state;
  d.record = std::move(s);
  return d;
}

Decision PolicyEngine::on_report(const NodeRecord* prev, const NodeReport& r,
                                 const slurm::SlurmNodeInfo* slurm, const BreakerState& breaker,
                                 int group_size, bool unknown_to_slurm,
                                 const PartLookup& parts_elsewhere) const {
  const int64_t now = clock_.now_unix();
  Decision d;
  d.breaker = breaker;
  d.before = prev ? prev->state : NodeState::kUnknown;
  NodeRecord s = start_state(prev, r, slurm, now);
  sync_ownership(s, slurm);
  if (!prev && new_to_gate(policy_.gate, state_began_, now)) {
    s.gate_cause = std::string(kGateNew);
    s.gate_since_unix = now;
  }
  for (const auto& swap : update_parts(s.parts, s.departed_parts, r.gpus, parts_elsewhere))
    s.note += (s.note.empty() ? "" : "; ") + swap;
  if (const CheckResult* reset = find_result(r, kGpuResetResult)) {
    Step step = on_reset_report(prev, s, r, *reset, now);
    d.reason = s.reason;  // the drain's own reason, back in Slurm after the reset
    return finish(d, s, std::move(step));
  }
  // A check that started before the node's new boot (or its GPU reset) says nothing about the
  // node after it: neither a pass nor a fail of it counts while it is re-checked. Both times are
  // the node's own clock (the report's start, slurmd's boot time or the reset report's start),
  // so a drainer clock apart does not matter. (While it is still rebooting or resetting, passes
  // are held back and fails change nothing.)
  if (s.repair.stage == RepairStage::kRechecking && s.repair.booted_unix > 0) {
    const auto started = parse_rfc3339(r.start_time);
    if (started && *started < s.repair.booted_unix)
      return finish(d, s,
                    {Action::kNone, NodeState::kDrained,
                     s.repair.via_reset ? "report from before the GPU reset; not counted"
                                        : "report from before the reboot; not counted"});
  }
  const bool report_fail = count_report(s, r);
  const auto cands = drain_candidates(s, r);
  if (!cands.empty())
    return finish(d, s, drain_or_block(d, s, cands, slurm, group_size, unknown_to_slurm, now));
  if (s.gate_cause == kGateNew && !s.drained_by_vigil) {
    // Not held yet (its first report, or the hold waited for the breaker or dry-run): a pass of
    // the gate's suite qualifies it where it stands.
    if (gate_refusal(r, report_fail, policy_.gate))
      return finish(d, s, hold_for_gate(d, s, slurm, group_size, unknown_to_slurm, now));
    release_gate(s);
    s.note += std::string(s.note.empty() ? "" : "; ") + "qualify gate: the " + *r.suite +
              " suite passed before the node was held";
  }
  return finish(d, s, maybe_resume(s, r, report_fail, slurm));
}

constexpr int64_t kResetSkewS = 600;

// The report of `vigil-check repair reset-gpu` (the entry gpu_reset): the reset rung's outcome
// (repair.h), never a check of the node's health, so nothing of it is counted.
PolicyEngine::Step PolicyEngine::on_reset_report(const NodeRecord* prev, NodeRecord& s,
                                                 const NodeReport& r, const CheckResult& reset,
                                                 int64_t now) const {
  s.failing = prev ? prev->failing : std::vector<FailingMeasurement>{};
  const NodeState state = prev ? prev->state : NodeState::kUnknown;
  if (!s.drained_by_vigil || s.repair.stage != RepairStage::kResetting || dry_run_)
    return {Action::kNone, state, "GPU reset report outside the repair ladder; not counted"};
  // A reset started well before this one was asked for (a spooled report of an earlier episode, a
  // reset run by hand) does not answer it. The report's time is the node's clock, the request
  // the drainer's: kResetSkewS of disagreement is tolerated.
  const auto started = parse_rfc3339(r.start_time);
  if (started && *started < s.repair.since_unix - kResetSkewS)
    return {Action::kNone, state,
            "GPU reset report from before the reset was asked for; not counted"};
  const std::string what = "GPU reset " + std::string(to_string(reset.status)) +
                           (reset.message.empty() ? "" : ": " + reset.message);
  if (reset.evidence) s.repair.bug_report = *reset.evidence;
  // Checks that started before the reset ended say nothing about the GPUs after it.
  const auto ended = parse_rfc3339(r.end_time);
  if (apply_reset_result(s, reset.status, ended.value_or(started.value_or(now)), now) ==
      ResetOutcome::kPassed) {
    const std::string held = hold_repaired(s, policy_.gate, now);
    return {Action::kResetPassed, NodeState::kDrained,
            what + (held.empty() ? "; waiting for the re-check" : held)};
  }
  return {Action::kResetFailed, NodeState::kDrained,
          what + (reboots_ ? "; reboot next" : "; the node waits for its re-checks or a person")};
}

std::vector<const CheckResult*> PolicyEngine::drain_candidates(NodeRecord& s,
                                                               const NodeReport& r) const {
  // Failing now and reached drain_after. Fatal ones (drain_after 1) first.
  std::vector<const CheckResult*> cands;
  for (const auto& c : r.checks) {
    if (c.status != Status::kFail) continue;
    int need = policy_.for_check(c.check, c.fault_code).drain_after;
    if (s.checks[c.check].consecutive_fails >= need) cands.push_back(&c);
  }
  std::stable_sort(cands.begin(), cands.end(), [&](const CheckResult* a, const CheckResult* b) {
    return policy_.for_check(a->check, a->fault_code).drain_after <
           policy_.for_check(b->check, b->fault_code).drain_after;
  });
  return cands;
}

PolicyEngine::Step PolicyEngine::drain_or_block(Decision& d, NodeRecord& s,
                                                const std::vector<const CheckResult*>& cands,
                                                const slurm::SlurmNodeInfo* slurm, int group_size,
                                                bool unknown_to_slurm, int64_t now) const {
  const std::string reason = drain_reason(*cands.front());
  std::vector<std::string> driving;
  for (const auto* c : cands) driving.push_back(c->check);
  d.reason = reason;
  d.driving_checks = driving;
  if (s.drained_by_vigil) {
    for (const auto& c : driving)
      if (!contains(s.driving_checks, c)) s.driving_checks.push_back(c);
    s.repair.remedy = stronger(s.repair.remedy, remedy_of(cands));
    if (s.repair.stage == RepairStage::kRechecking && repair_ && !dry_run_) {  // not cleared
      if (s.repair.via_reset && reboots_) {  // the reset did not clear it: the reboot rung next
        s.repair.stage = RepairStage::kNone;
        s.repair.via_reset = false;
        s.repair.booted_unix = 0;
        s.repair.since_unix = now;
        return {Action::kNone, NodeState::kDrained,
                "fault back after GPU reset: " + reason + "; reboot next"};
      }
      const char* after = s.repair.via_reset ? "GPU reset" : "reboot";
      mark_replace(s, std::string("fault back after ") + after, now);
      release_gate(s);  // a person's now
      d.reason = s.reason;
      return {Action::kReplace, NodeState::kDrained, "replace: " + reason + " after " + after};
    }
    // Not while the node is DOWN/FAIL/MAINT (Slurm refuses the relabel, and the sink would take
    // the refusal for an undone drain): the next report after it is back takes the hold over.
    if (is_gate_reason(s.reason) && !(slurm && slurm::untouchable(*slurm)))
      return fault_takes_the_hold(d, s, cands, now);
    return {Action::kNone, NodeState::kDrained, "already drained by vigil"};
  }
  if (unknown_to_slurm)
    return {Action::kNone, NodeState::kError,
            "would drain but Slurm has no node '" + s.node +
                "' (does the report's node name match a Slurm NodeName?)"};
  if (slurm && slurm::untouchable(*slurm))
    return {Action::kNone, NodeState::kWarn,
            "would drain but node is " +
                std::string(slurm->down   ? "DOWN"
                            : slurm->fail ? "FAIL"
                                          : "MAINT") +
                "; not touched"};
  if (slurm && slurm::drained_by_other(*slurm))
    return {Action::kNone, NodeState::kDrained,
            "already drained by another owner: " + slurm->reason};
  s.reason = reason;
  s.driving_checks = driving;
  end_repair(s);
  s.repair.remedy = remedy_of(cands);
  if (dry_run_) return {Action::kWouldDrain, NodeState::kWouldDrain, "dry-run: would drain"};
  if (d.breaker.open)
    return {Action::kBreakerBlocked, NodeState::kWouldDrain,
            "circuit breaker open: " + d.breaker.why};
  d.counted_drain = breaker_.try_count(d.breaker, group_key(s), group_size, now);
  if (!d.counted_drain)
    return {Action::kBreakerBlocked, NodeState::kWouldDrain,
            "circuit breaker opened: " + d.breaker.why};
  s.drained_by_vigil = true;
  s.drained_unix = now;
  return begin_drain(d, s, cands, now);
}

PolicyEngine::Step PolicyEngine::begin_drain(Decision& d, NodeRecord& s,
                                             const std::vector<const CheckResult*>& cands,
                                             int64_t now) const {
  s.last_drain_unix = now;
  // Part history: this drain counts against the part of each GPU whose figures fail (parts.h);
  // with the ladder on, a repeat offender's drain is relabelled `replace` by the ladder's next
  // tick, once Slurm shows it (repair.cpp): the drain itself goes out as any other.
  const RecordedDrain counted = record_drain(s.parts, failing_gpus(cands, s.parts), now, parts_);
  if (counted.counted) s.repair.part_drain_unix = now;
  if (counted.offender && repair_) {
    s.repair.offender = offender_text(*counted.offender, parts_);
    return {Action::kDrain, NodeState::kDrained,
            "drain: " + d.reason + "; repeat offender: " + s.repair.offender};
  }
  return {Action::kDrain, NodeState::kDrained, "drain: " + d.reason};
}

PolicyEngine::Step PolicyEngine::maybe_resume(NodeRecord& s, const NodeReport& r, bool report_fail,
                                              const slurm::SlurmNodeInfo* slurm) const {
  if (!s.drained_by_vigil) {
    if (slurm && slurm::drained_by_other(*slurm))
      return {Action::kNone, NodeState::kDrained, "drained by another owner: " + slurm->reason};
    s.reason.clear();
    s.driving_checks.clear();
    return {Action::kNone, state_from_checks(s), ""};
  }
  // Held by the qualify gate: only a pass of its suite lets the node go; then the checks that
  // drove its drain decide as for any drain (the qualify run counts as one of their passes).
  const std::string gate(gate_hold(s));  // a copy: a pass releases the gate
  const auto refused = gate.empty() ? std::nullopt : gate_refusal(r, report_fail, policy_.gate);
  const bool gate_passed = !gate.empty() && !refused;
  if (!gate.empty())
    if (auto held = gate_verdict(s, refused, r, report_fail)) return *held;
  bool ready = !report_fail;
  if (ready && s.driving_checks.empty()) {
    int need = policy_.defaults.resume_after;
    for (const auto& c : r.checks) need = std::max(need, policy_.for_check(c.check).resume_after);
    ready = s.consecutive_passes >= need;
  } else if (ready) {
    for (const auto& c : s.driving_checks) {
      auto it = s.checks.find(c);
      if (it == s.checks.end() || it->second.consecutive_passes < policy_.for_check(c).resume_after)
        ready = false;
    }
  }
  if (s.repair.stage == RepairStage::kReplace)
    return {Action::kNone, NodeState::kDrained, "replace: stays drained until a person resumes it"};
  if (!ready)
    return {Action::kNone, NodeState::kDrained,
            gate_passed ? "qualify gate: the " + *r.suite +
                              " suite passed; the checks that drove the drain wait for "
                              "resume_after passes"
                        : ""};
  if (s.repair.stage == RepairStage::kRebooting)
    return {Action::kNone, NodeState::kDrained, "passes before the reboot; resume deferred"};
  if (s.repair.stage == RepairStage::kResetting)
    return {Action::kNone, NodeState::kDrained, "passes before the GPU reset; resume deferred"};
  if (slurm && slurm::untouchable(*slurm))
    return {Action::kNone, NodeState::kDrained,
            "passes reached resume_after but node is DOWN/FAIL/MAINT; resume deferred"};
  if (dry_run_) return {Action::kWouldResume, NodeState::kDrained, "dry-run: would resume"};
  const bool repaired = s.repair.stage == RepairStage::kRechecking;
  const bool via_reset = s.repair.via_reset;
  s.drained_by_vigil = false;
  s.drained_unix = 0;
  s.reason.clear();
  s.driving_checks.clear();
  end_repair(s);
  if (gate_passed)
    return {Action::kResume, state_from_checks(s),
            "resume: the " + *r.suite + " suite passed (qualify gate, " + gate +
                (gate != kGateRepaired ? ""
                 : via_reset           ? " after a GPU reset"
                                       : " after a reboot") +
                ")"};
  return {Action::kResume, state_from_checks(s),
          std::string("resume: checks passed resume_after times") +
              (!repaired   ? ""
               : via_reset ? " after a GPU reset (repaired)"
                           : " after a reboot (repaired)")};
}

std::optional<Decision> PolicyEngine::on_tick(const NodeRecord& s,
                                              const BreakerState& breaker) const {
  if (s.drained_by_vigil || s.state == NodeState::kStale || s.state == NodeState::kDrained ||
      s.last_report_unix == 0)
    return std::nullopt;
  if (clock_.now_unix() - s.last_report_unix <= policy_.staleness_s) return std::nullopt;
  NodeRecord n = s;
  n.state = NodeState::kStale;
  n.note = "no report for more than " + std::to_string(policy_.staleness_s) + "s";
  n.last_action = Action::kNone;
  std::string why = n.note;
  return record_change(s, std::move(n), std::move(why), breaker);
}

Decision record_change(const NodeRecord& before, NodeRecord after, std::string why,
                       BreakerState breaker) {
  Decision d;
  d.before = before.state;
  d.after = after.state;
  d.why = std::move(why);
  d.record = std::move(after);
  d.breaker = std::move(breaker);
  return d;
}

Decision repair_decision(const NodeRecord& prev, NodeRecord next, const RepairStep& step,
                         const BreakerState& breaker) {
  // Only a DOWN node whose reboot Slurm timed out is drained by a redrain's Slurm intent
  // (slurm_sink.cpp judge_redrain).
  const Action action = step.move == Action::kRedrain    ? Action::kDrain
                        : step.move == Action::kRebooted ? Action::kNone
                                                         : step.move;
  next.last_action = action;
  next.note = step.why;
  Decision d = record_change(prev, std::move(next), step.why, breaker);
  d.action = action;
  d.reason = d.record.reason;
  d.driving_checks = d.record.driving_checks;
  return d;
}

Decision undone_drain(const NodeRecord& s, NodeState state, const std::string& why,
                      const BreakerState& breaker) {
  NodeRecord n = s;
  n.drained_by_vigil = false;
  n.drained_unix = 0;
  n.reason.clear();
  forget_drain(n.parts, n.repair.part_drain_unix);  // never applied: not counted
  end_repair(n);
  release_gate(n);  // a hold Slurm refused lets the node go
  n.state = state;
  n.last_action = Action::kDrainSkipped;
  n.note = "drain not applied: " + why;
  Decision d = record_change(s, std::move(n), "drain not applied: " + why, breaker);
  d.driving_checks = d.record.driving_checks;
  return d;
}

Decision PolicyEngine::on_operator_resume(const NodeRecord& s,
                                          const slurm::SlurmNodeInfo* slurm) const {
  Decision d;
  d.by_operator = true;
  d.before = s.state;
  NodeRecord n = s;
  const bool owned = slurm ? slurm::drained_by_vigil(*slurm) : s.drained_by_vigil;
  if (!owned) {
    d.action = Action::kNone;
    d.why = slurm && slurm::drained_by_other(*slurm)
                ? "not resumed: drained by another owner: " + slurm->reason
                : "not resumed: node is not drained by vigil";
    n.note = d.why;
    d.after = n.state;
    d.record = std::move(n);
    return d;
  }
  for (const auto& c : n.driving_checks) {
    n.checks[c].consecutive_fails = 0;
  }
  n.consecutive_fails = 0;
  n.drained_by_vigil = false;
  n.drained_unix = 0;
  n.reason.clear();
  n.driving_checks.clear();
  end_repair(n);
  release_gate(n);
  if (dry_run_) {
    d.action = Action::kWouldResume;
    n.state = NodeState::kDrained;
  } else {
    d.action = Action::kResume;
    // Until the next report proves otherwise, the node is what its checks last said, minus
    // the fails the operator overrode.
    for (auto& [name, c] : n.checks)
      if (c.last_status == Status::kFail) c.last_status = Status::kSkipped;
    n.state = state_from_checks(n);
  }
  n.last_action = d.action;
  n.note = "operator resume";
  d.why = n.note;
  d.after = n.state;
  d.record = std::move(n);
  return d;
}

}  // namespace vigil::drainer
