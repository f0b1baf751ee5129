// Intent spellings and the journal codec. The strings are the journal format: never rename.
#include "vigil/drainer/intent.h"

#include <nlohmann/json.hpp>

namespace vigil::drainer {

std::string_view to_string(SinkKind k) {
  switch (k) {
    case SinkKind::kSlurm:
      return "slurm";
    case SinkKind::kKubernetes:
      return "kubernetes";
  }
  return "slurm";
}

std::optional<SinkKind> sink_kind_from_string(std::string_view s) {
  for (SinkKind k : kAllSinkKinds)
    if (to_string(k) == s) return k;
  return std::nullopt;
}

std::string_view to_string(IntentAction a) {
  switch (a) {
    case IntentAction::kDrain:
      return "drain";
    case IntentAction::kResume:
      return "resume";
    case IntentAction::kAnnotate:
      return "annotate";
  }
  return "drain";
}

std::optional<IntentAction> intent_action_from_string(std::string_view s) {
  for (IntentAction a : {IntentAction::kDrain, IntentAction::kResume, IntentAction::kAnnotate})
    if (to_string(a) == s) return a;
  return std::nullopt;
}

bool sink_takes(SinkKind sink, IntentAction action) {
  return sink == SinkKind::kSlurm ? action != IntentAction::kAnnotate
                                  : action == IntentAction::kAnnotate;
}

nlohmann::json to_json(const Intent& i) {
  return {{"id", i.id},
          {"sink", std::string(to_string(i.sink))},
          {"action", std::string(to_string(i.action))},
          {"node", i.node},
          {"reason", i.reason},
          {"by_operator", i.by_operator}};
}

Result<Intent> intent_from_json(const nlohmann::json& j) {
  try {
    Intent i;
    i.id = j.at("id").get<uint64_t>();
    const std::string where = "intent_from_json(id " + std::to_string(i.id) + ")";
    const std::string sink = j.value("sink", "");
    const std::string action = j.value("action", "");
    auto k = sink_kind_from_string(sink);
    if (!k)
      return Error{"unknown intent sink '" + sink +
                       "' (this build knows slurm and kubernetes; was the state dir written by a "
                       "newer vigil-drainer?)",
                   where};
    auto a = intent_action_from_string(action);
    if (!a)
      return Error{"unknown intent action '" + action +
                       "' (this build knows drain, resume and annotate; was the state dir written "
                       "by a newer vigil-drainer?)",
                   where};
    if (!sink_takes(*k, *a))
      return Error{"the " + sink + " sink does not take '" + action + "' intents", where};
    i.sink = *k;
    i.action = *a;
    i.node = j.value("node", "");
    i.reason = j.value("reason", "");
    i.by_operator = j.value("by_operator", false);
    return i;
  } catch (const std::exception& e) {
    return Error{e.what(), "intent_from_json"};
  }
}

}  // namespace vigil::drainer
