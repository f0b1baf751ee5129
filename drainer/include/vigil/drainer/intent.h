#pragma once
// Sink intents: one action a sink owes, created by a decision and journaled with it. The
// journal spells sinks and actions as strings ("slurm" / "kubernetes", "drain" / "resume" /
// "annotate"); in code they are typed, and a journal with a spelling this build does not know
// is an error on replay, never a silent default.
#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "vigil/base/result.h"

namespace vigil::drainer {

enum class SinkKind { kSlurm, kKubernetes };
inline constexpr SinkKind kAllSinkKinds[] = {SinkKind::kSlurm, SinkKind::kKubernetes};
std::string_view to_string(SinkKind k);  // "slurm" | "kubernetes" (journal, metrics, API)
std::optional<SinkKind> sink_kind_from_string(std::string_view s);

enum class IntentAction { kDrain, kResume, kAnnotate };
std::string_view to_string(IntentAction a);  // "drain" | "resume" | "annotate"
std::optional<IntentAction> intent_action_from_string(std::string_view s);

// Slurm drains and resumes; Kubernetes annotates (annotations, condition, taint).
bool sink_takes(SinkKind sink, IntentAction action);

// One action a sink owes. Drains with the same reason are applied in one Slurm RPC.
struct Intent {
  uint64_t id = 0;
  SinkKind sink = SinkKind::kSlurm;
  IntentAction action = IntentAction::kDrain;
  std::string node;
  std::string reason;        // drain reason
  bool by_operator = false;  // resume requested by `vigil-drainer resume`
  int attempts = 0;          // failed tries so far; not journaled
};

// The journal/snapshot form: {"id", "sink", "action", "node", "reason", "by_operator"}.
nlohmann::json to_json(const Intent& i);
// Rejects a missing or unknown sink or action, and an action its sink does not take.
Result<Intent> intent_from_json(const nlohmann::json& j);

}  // namespace vigil::drainer
