// Intent spellings and the journal codec. The strings are the journal format: never rename.
#include "vigil/drainer/intent.h"

#include <nlohmann/json.hpp>

#include "sinks.h"
#include "vigil/drainer/qualify_gate.h"

namespace vigil::drainer {

std::string_view to_string(SinkKind k) { return sink_spec(k).name; }

std::optional<SinkKind> sink_kind_from_string(std::string_view s) {
  for (const SinkSpec& spec : sink_specs())
    if (spec.name == s) return spec.kind;
  return std::nullopt;
}

bool sink_takes(SinkKind sink, IntentAction action) { return sink_spec(sink).takes(action); }

NodeEvent state_event(const NodeRecord& s, Action type) {
  NodeEvent e;
  e.type = type;
  e.node = s.node;
  e.before = e.state = s.state;
  e.reason = s.reason;
  e.why = s.note;
  e.checks = s.driving_checks;
  e.failing = s.failing;
  e.last_check_time = s.last_check_time;
  e.run_id = s.last_run_id;
  e.k8s_node = s.k8s_node;
  if (s.switch_suspect) e.fabric_switch = s.fabric_switch;
  if (s.repair.stage != RepairStage::kNone) e.repair = std::string(to_string(s.repair.stage));
  e.qualify = std::string(gate_hold(s));
  e.evidence = s.repair.evidence;
  e.bug_report = s.repair.bug_report;
  return e;
}

nlohmann::json to_json(const NodeEvent& e) {
  nlohmann::json j{{"type", std::string(to_string(e.type))},
                   {"time", e.time},
                   {"node", e.node},
                   {"before", std::string(to_string(e.before))},
                   {"state", std::string(to_string(e.state))},
                   // The same value under the event format's first name (until 2026-11-27):
                   // receivers written against it keep working (docs/drainer.md).
                   {"health", std::string(to_string(e.state))},
                   {"reason", e.reason},
                   {"why", e.why},
                   {"checks", e.checks},
                   {"failing", failing_to_json(e.failing)},
                   {"last_check_time", e.last_check_time},
                   {"run_id", e.run_id},
                   {"fabric_switch", e.fabric_switch},
                   {"dry_run", e.dry_run}};
  if (e.k8s_node) j["k8s_node"] = *e.k8s_node;
  if (!e.repair.empty()) j["repair"] = e.repair;     // optional: events journaled before the ladder
  if (!e.qualify.empty()) j["qualify"] = e.qualify;  // optional: before the qualify gate
  if (!e.evidence.empty()) j["evidence"] = e.evidence;
  if (!e.bug_report.empty()) j["bug_report"] = e.bug_report;
  return j;
}

Result<NodeEvent> node_event_from_json(const nlohmann::json& j) {
  try {
    NodeEvent e;
    const std::string type = j.at("type").get<std::string>();
    auto a = value_of(kActionNames, type);
    if (!a) return Error{"type: unknown event type '" + type + "'", "event"};
    e.type = *a;
    e.time = j.at("time").get<std::string>();
    e.node = j.at("node").get<std::string>();
    // "state" since 2026-11-27; events journaled before have only "health".
    const char* state_key = j.contains("state") ? "state" : "health";
    for (auto [field, out] : {std::pair{"before", &e.before}, std::pair{state_key, &e.state}}) {
      const std::string v = j.at(field).get<std::string>();
      auto st = value_of(kNodeStateNames, v);
      if (!st) return Error{std::string(field) + ": unknown node state '" + v + "'", "event"};
      *out = *st;
    }
    e.reason = j.at("reason").get<std::string>();
    e.why = j.at("why").get<std::string>();
    e.checks = j.at("checks").get<std::vector<std::string>>();
    auto failing = failing_from_json(j.at("failing"));  // an array, or a string before 11-27
    if (!failing.ok()) return Error{failing.error().to_string(), "event"};
    e.failing = std::move(failing.value());
    e.last_check_time = j.at("last_check_time").get<std::string>();
    e.run_id = j.at("run_id").get<std::string>();
    e.fabric_switch = j.at("fabric_switch").get<std::string>();
    e.dry_run = j.at("dry_run").get<bool>();
    if (j.contains("k8s_node")) e.k8s_node = j.at("k8s_node").get<std::string>();
    e.repair = j.value("repair", "");
    e.qualify = j.value("qualify", "");
    e.evidence = j.value("evidence", "");
    e.bug_report = j.value("bug_report", "");
    return e;
  } catch (const std::exception& ex) {
    return Error{ex.what(), "event"};
  }
}

nlohmann::json to_json(const Intent& i) {
  nlohmann::json j{{"id", i.id},
                   {"sink", std::string(to_string(i.sink))},
                   {"action", std::string(to_string(i.action))},
                   {"node", i.node},
                   {"reason", i.reason},
                   {"by_operator", i.by_operator}};
  if (i.decided_unix) j["decided_unix"] = i.decided_unix;
  if (sink_spec(i.sink).ordered) j["event"] = to_json(i.event);
  return j;
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
                       "' (this build knows slurm, kubernetes and webhook; was the state dir "
                       "written by a newer vigil-drainer?)",
                   where};
    auto a = value_of(kIntentActionNames, action);
    if (!a)
      return Error{"unknown intent action '" + action + "' (this build knows " +
                       joined_names(kIntentActionNames) +
                       "; was the state dir written by a newer vigil-drainer?)",
                   where};
    if (!sink_takes(*k, *a))
      return Error{"the " + sink + " sink does not take '" + action + "' intents", where};
    i.sink = *k;
    i.action = *a;
    i.node = j.value("node", "");
    i.reason = j.value("reason", "");
    i.by_operator = j.value("by_operator", false);
    i.decided_unix = j.value("decided_unix", int64_t{0});
    if (sink_spec(*k).ordered) {
      // The event is what such a sink delivers: it cannot be rebuilt from the node's state.
      if (!j.contains("event")) return Error{"a " + sink + " intent without its event", where};
      auto e = node_event_from_json(j.at("event"));
      if (!e.ok()) return Error{"event." + e.error().to_string(), where};
      i.event = std::move(*e);
    }
    return i;
  } catch (const std::exception& e) {
    return Error{e.what(), "intent_from_json"};
  }
}

}  // namespace vigil::drainer
