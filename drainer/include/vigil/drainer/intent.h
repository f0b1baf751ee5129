#pragma once
// Sink intents: one action a sink owes, created by a decision and journaled with it. The
// journal spells sinks and actions as strings ("slurm" / "kubernetes" / "webhook", "drain" /
// "resume" / "annotate" / "notify"); in code they are typed, and a journal with a spelling this
// build does not know is an error on replay, never a silent default. The sinks themselves, and
// which intent each one is owed, are one table: drainer/src/sinks.cpp.
#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "vigil/base/enum_names.h"
#include "vigil/base/result.h"
#include "vigil/drainer/policy.h"

namespace vigil::drainer {

// One per row of the sink table (drainer/src/sinks.cpp), in its order.
enum class SinkKind { kSlurm, kKubernetes, kWebhook };
inline constexpr SinkKind kAllSinkKinds[] = {SinkKind::kSlurm, SinkKind::kKubernetes,
                                             SinkKind::kWebhook};
std::string_view to_string(
    SinkKind k);  // "slurm" | "kubernetes" | "webhook" (journal, metrics, API)
std::optional<SinkKind> sink_kind_from_string(std::string_view s);

// kRelabel: a new reason for a drain that is still Vigil's (the GPU reset rung's "vigil:
// reset-gpu ..." and back); never drains a node that is not drained.
// kRedrain: Vigil's drain back on a node whose reboot Slurm's ResumeTimeout ended, lifting the
// drain (22.05); the one drain of a DOWN node, and only while Slurm still shows it so (a node an
// admin resumed meanwhile is left alone). A kDrain never drains a DOWN node.
enum class IntentAction { kDrain, kResume, kAnnotate, kNotify, kReboot, kRelabel, kRedrain };
inline constexpr EnumName<IntentAction> kIntentActionNames[] = {
    {IntentAction::kDrain, "drain"},       {IntentAction::kResume, "resume"},
    {IntentAction::kAnnotate, "annotate"}, {IntentAction::kNotify, "notify"},
    {IntentAction::kReboot, "reboot"},     {IntentAction::kRelabel, "relabel"},
    {IntentAction::kRedrain, "redrain"}};
inline std::string_view to_string(IntentAction a) {
  return name_of(kIntentActionNames, a, "drain");
}

// Which actions a sink takes (the sink table's row).
bool sink_takes(SinkKind sink, IntentAction action);

// What a decision says, as the sinks see it: copied into every intent the decision creates, so
// a sink acts on its intent alone and never reads the drainer's node table. `type` is what
// happened (action.h Action): kNone for a decision that only changed the node's state; the
// breaker's events have no node.
struct NodeEvent {
  Action type = Action::kNone;
  std::string time;  // when it was decided, RFC 3339
  std::string node;
  NodeState before = NodeState::kUnknown;
  NodeState state = NodeState::kUnknown;    // after the decision
  std::string reason;                       // the Slurm drain reason, if any
  std::string why;                          // the decision's explanation (the node's note)
  std::vector<std::string> checks;          // the checks that drove it
  std::vector<FailingMeasurement> failing;  // of the node's latest report (failing.h)
  std::string last_check_time;
  std::string run_id;
  std::optional<std::string> k8s_node;
  std::string fabric_switch;  // set when the node's leaf switch is suspected
  std::string repair;         // the repair ladder's stage ("rebooting", ...); "" when none
  std::string qualify;        // why the qualify gate holds the node ("new", "repaired"); "" none
  std::string evidence;       // the draining report's evidence file, while repairs are on
  std::string bug_report;     // the GPU reset's bug report on the node (RepairState::bug_report)
  bool dry_run = false;
};
// A node's state as an event of `type` (replay rebuilds the events of sinks that do not journal
// them from the decision's state).
NodeEvent state_event(const NodeRecord& s, Action type);
nlohmann::json to_json(const NodeEvent& e);
Result<NodeEvent> node_event_from_json(const nlohmann::json& j);

// One action a sink owes. Drains with the same reason are applied in one Slurm RPC.
struct Intent {
  uint64_t id = 0;
  SinkKind sink = SinkKind::kSlurm;
  IntentAction action = IntentAction::kDrain;
  std::string node;
  std::string reason;        // drain reason (Slurm)
  bool by_operator = false;  // resume requested by `vigil-drainer resume`
  int attempts = 0;          // failed tries so far; not journaled
  // A reboot's decision time (journaled): a node whose boot time is later was rebooted already
  // (a done record lost in a crash), so the reboot is not repeated.
  int64_t decided_unix = 0;
  NodeEvent event;  // journaled only for sinks that deliver every event (webhook)
};

// The journal/snapshot form: {"id", "sink", "action", "node", "reason", "by_operator"},
// "decided_unix" for a reboot, and,
// for a sink whose table row says it delivers every event, "event".
nlohmann::json to_json(const Intent& i);
// Rejects a missing or unknown sink or action, and an action its sink does not take.
Result<Intent> intent_from_json(const nlohmann::json& j);

}  // namespace vigil::drainer
