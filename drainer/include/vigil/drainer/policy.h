#pragma once
// The policy engine: pure code. Input: the node's state so far, one new NodeReport, the node's
// current Slurm view (if known) and the circuit breaker; output: a Decision (the next state and
// at most one action). No I/O, no threads; time comes from an injected Clock.
// Semantics: docs/drainer.md "Policy".
#include <cstdint>
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "vigil/base/clock.h"
#include "vigil/base/enum_names.h"
#include "vigil/drainer/action.h"
#include "vigil/drainer/breaker.h"
#include "vigil/drainer/config.h"
#include "vigil/drainer/failing.h"
#include "vigil/drainer/parts.h"
#include "vigil/drainer/repair.h"
#include "vigil/report/report.h"
#include "vigil/slurm/slurm_api.h"

namespace vigil::drainer {

// Node states as exported (metric label form; annotations use "would-drain").
enum class NodeState { kHealthy, kWarn, kDrained, kWouldDrain, kStale, kError, kUnknown };
inline constexpr EnumName<NodeState> kNodeStateNames[] = {
    {NodeState::kHealthy, "healthy"}, {NodeState::kWarn, "warn"},
    {NodeState::kDrained, "drained"}, {NodeState::kWouldDrain, "would_drain"},
    {NodeState::kStale, "stale"},     {NodeState::kError, "error"},
    {NodeState::kUnknown, "unknown"}};
inline std::string_view to_string(NodeState st) { return name_of(kNodeStateNames, st, "unknown"); }
std::string_view annotation_value(NodeState st);

struct CheckState {
  Status last_status = Status::kSkipped;
  int consecutive_fails = 0;
  int consecutive_passes = 0;  // pass and warn count as passes; error/skipped change nothing
  std::string last_reason;     // Slurm reason of the latest fail
  std::string fault_code;
  int64_t last_run_unix = 0;  // when it last passed or failed (the drainer's clock; 0: unknown)
};

struct NodeRecord {
  std::string node;
  std::string sku;
  std::string partition;
  std::optional<std::string> k8s_node;
  NodeState state = NodeState::kUnknown;
  bool drained_by_vigil = false;
  int64_t drained_unix = 0;                 // when Vigil decided its drain (0: unknown)
  std::string reason;                       // vigil drain reason (also for would-drain)
  std::vector<std::string> driving_checks;  // the checks that drove the (would-)drain
  std::map<std::string, CheckState> checks;
  int consecutive_fails = 0;     // consecutive reports with at least one fail
  int consecutive_passes = 0;    // consecutive reports with no fail (and something that ran)
  int64_t last_report_unix = 0;  // when the latest report was accepted
  std::string last_check_time;   // report end_time (RFC 3339)
  std::string last_run_id;
  Action last_action = Action::kNone;       // of the latest decision (kNone: it changed nothing)
  std::string note;                         // why the last decision was what it was
  std::vector<FailingMeasurement> failing;  // of the latest report (failing.h)
  // Switch verdict (docs/fabric.md): the node's leaf switch per its latest fabric job with a
  // topology, and whether that switch is suspected. Every node known under a switch carries
  // the same verdict: the newest job's evidence about the switch, from any of its nodes.
  std::string fabric_switch;
  bool switch_suspect = false;
  RepairState repair;  // the repair ladder (repair.h, docs/repair.md)
  // The qualify gate (qualify_gate.h): why the node is held until a qualify pass ("new": first
  // heard from after the fleet was learned; "repaired": back from the ladder's reboot or GPU
  // reset), and since when; empty: not held.
  std::string gate_cause;
  int64_t gate_since_unix = 0;
  int gate_errors = 0;  // runs of the gate's suite that failed on errors alone (qualify_gate.h)
  // When Vigil last decided a drain of this node (kept after the resume): the reliability
  // figures' time between incidents (metrics.h).
  int64_t last_drain_unix = 0;
  // The part in each GPU slot and when Vigil drained the node for it (parts.h).
  std::vector<PartRecord> parts;
  // Parts that left this node with drains against them (parts.h: their history follows them).
  std::vector<PartRecord> departed_parts;
};

struct Decision {
  Action action = Action::kNone;
  std::string reason;  // Slurm reason for kDrain / kWouldDrain / kBreakerBlocked / kReboot /
                       // kReplace
  std::vector<std::string> driving_checks;
  NodeState before = NodeState::kUnknown;
  NodeState after = NodeState::kUnknown;
  std::string why;
  NodeRecord record;                          // the node's next record
  BreakerState breaker;                       // the breaker's next state
  std::optional<BreakerDrain> counted_drain;  // set when this decision counted a drain
  // An operator's command (`vigil-drainer resume`): its Slurm resume may lift a DOWN, FAIL or
  // MAINT node's drain, which a decision on a report never does (slurm_sink.cpp judge_resume).
  bool by_operator = false;
};

// A decision that moves a node's record from `before` to `after` for `why`, the breaker left as
// `breaker`; reason and driving checks are the caller's to add. Staleness, a switch verdict's
// spread, a repair step and a drain Slurm did not apply are decided as such values.
Decision record_change(const NodeRecord& before, NodeRecord after, std::string why,
                       BreakerState breaker);

// A repair step `step` (repair_tick moved the node from `prev` to `next`) as a decision: a
// redrain is Vigil's drain again, with its own event; the node back from its reboot decides
// nothing new; the other moves are their own action.
Decision repair_decision(const NodeRecord& prev, NodeRecord next, const RepairStep& step,
                         const BreakerState& breaker);

// A drain Slurm did not apply (the node is `state` there, for `why`) undone: the node is no
// longer Vigil's drain, its part history does not count the drain, and it leaves the ladder.
Decision undone_drain(const NodeRecord& s, NodeState state, const std::string& why,
                      const BreakerState& breaker);

// The Slurm reason a failing result drains with: "vigil: <short name> <detail>".
std::string drain_reason(const CheckResult& r, size_t max_len = 200);

class PolicyEngine {
 public:
  // repair: the repair ladder is on (repair.reboot or repair.reset_gpu); a fault back after a
  // reboot is `replace`, after a GPU reset the reboot rung when `reboots` is on, else `replace`.
  // parts: the repeat-offender rule of part history (parts.h), applied while `repair` is on.
  PolicyEngine(PolicyConfig policy, BreakerConfig breaker, bool dry_run, const Clock& clock,
               bool repair = false, PartRule parts = {}, bool reboots = false);

  // prev: null for a node never seen. slurm: null when Slurm's view is unknown (unreachable or
  // disabled); the Slurm sink re-checks ownership before acting. group_size: nodes in the
  // node's partition (or SKU when the partition is unknown), for the breaker's percent cap.
  // unknown_to_slurm: Slurm's view was read and has no such node (a name mismatch): such a
  // node is never drained, so its reports cannot count towards the breaker.
  Decision on_report(const NodeRecord* prev, const NodeReport& report,
                     const slurm::SlurmNodeInfo* slurm, const BreakerState& breaker, int group_size,
                     bool unknown_to_slurm = false, const PartLookup& parts_elsewhere = {}) const;
  // Staleness sweep: the new state when the node just became stale, else nullopt.
  std::optional<Decision> on_tick(const NodeRecord& s, const BreakerState& breaker) const;
  // Operator `resume NODE`: lifts a vigil drain regardless of counters (never another owner's).
  Decision on_operator_resume(const NodeRecord& s, const slurm::SlurmNodeInfo* slurm) const;

  static std::string group_key(const NodeRecord& s);
  // When the drainer's state began (its gate file, Drainer::open): the qualify gate's new nodes
  // are those first heard from gate.learn_s after it. Set once before any decision; 0: never new.
  void set_state_began(int64_t unix_s) { state_began_ = unix_s; }

  const PolicyConfig& policy() const { return policy_; }
  bool dry_run() const { return dry_run_; }

 private:
  // on_report's steps (policy.cpp): which failing checks reached drain_after, fatal first;
  // drain, or what stops the drain; with no candidate, resume when the checks passed enough.
  struct Step {  // what a step concluded: the action, the node's state, why (into the note)
    Action action;
    NodeState state;
    std::string why;
  };
  static Decision finish(Decision& d, NodeRecord& s, Step step);
  Step on_reset_report(const NodeRecord* prev, NodeRecord& s, const NodeReport& r,
                       const CheckResult& reset, int64_t now) const;
  std::vector<const CheckResult*> drain_candidates(NodeRecord& s, const NodeReport& r) const;
  Step drain_or_block(Decision& d, NodeRecord& s, const std::vector<const CheckResult*>& cands,
                      const slurm::SlurmNodeInfo* slurm, int group_size, bool unknown_to_slurm,
                      int64_t now) const;
  // The drain begins (counted by the breaker, or blocked by it): reason, part history.
  Step begin_drain(Decision& d, NodeRecord& s, const std::vector<const CheckResult*>& cands,
                   int64_t now) const;
  // A fault found on a node the gate holds as new: the fault takes the drain over.
  Step fault_takes_the_hold(Decision& d, NodeRecord& s,
                            const std::vector<const CheckResult*>& cands, int64_t now) const;
  Step maybe_resume(NodeRecord& s, const NodeReport& r, bool report_fail,
                    const slurm::SlurmNodeInfo* slurm) const;
  // A node held by the qualify gate as new and not drained yet: its hold (qualify_gate.h).
  Step hold_for_gate(Decision& d, NodeRecord& s, const slurm::SlurmNodeInfo* slurm, int group_size,
                     bool unknown_to_slurm, int64_t now) const;
  // A node the gate holds: whether report `r` lets it go (a pass of the gate's suite, or
  // kGateErrorRuns runs that failed on errors alone), else the step that keeps it held.
  // refused: gate_refusal's answer for r, which the caller has.
  std::optional<Step> gate_verdict(NodeRecord& s, const std::optional<std::string>& refused,
                                   const NodeReport& r, bool report_fail) const;

  PolicyConfig policy_;
  Breaker breaker_;
  bool dry_run_;
  bool repair_;
  PartRule parts_;
  bool reboots_;  // the ladder's reboot rung is on: a fault back after a GPU reset reboots next
  const Clock& clock_;
  int64_t state_began_ = 0;
};

// A fabric job's switch evidence in `r` (a `switch_suspected` measurement, port
// `switch:<leaf>`: 1 = suspected, 0 = a good pair left the leaf) set into `s`. Returns whether
// the report carried any; a report without it leaves the node's switch verdict as it was.
bool fold_switch_evidence(NodeRecord& s, const NodeReport& r);
// The switch verdict `from` now holds (from the report of run `run_id`), spread to every other
// node of `nodes` under the same leaf switch whose verdict differs: one decision per node.
std::vector<Decision> switch_spread(const NodeRecord& from, const std::string& run_id,
                                    const std::map<std::string, NodeRecord>& nodes,
                                    const BreakerState& breaker);

// The node's SKU after report `r`: the report's, unless it says "unknown" and the node's is
// known. The breaker sizes the node's group and the policy counts its drain under this SKU.
std::string next_sku(const NodeRecord* prev, const NodeReport& r);

// The state of a node that is not drained, from the latest statuses of its checks.
NodeState state_from_checks(const NodeRecord& s);

nlohmann::json to_json(const NodeRecord& s);
Result<NodeRecord> node_record_from_json(const nlohmann::json& j);

}  // namespace vigil::drainer
