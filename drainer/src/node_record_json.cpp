// NodeRecord as JSON: the journal's decisions, snapshots and the API (policy.h). Reading is
// lenient about absent fields (snapshots written before a field existed) and strict about the
// values of known ones (an unknown state, status, last action, repair stage or part record is an
// error naming the node).
#include <nlohmann/json.hpp>

#include "vigil/drainer/parts.h"
#include "vigil/drainer/policy.h"
#include "vigil/drainer/repair.h"

namespace vigil::drainer {
namespace {

// last_action as snapshots and /v1/nodes have always spelt it: "" when the decision changed
// nothing.
std::string last_action_name(Action a) {
  return a == Action::kNone ? "" : std::string(to_string(a));
}

}  // namespace

nlohmann::json to_json(const NodeRecord& s) {
  nlohmann::json checks = nlohmann::json::object();
  for (const auto& [name, c] : s.checks) {
    checks[name] = {{"last_status", std::string(to_string(c.last_status))},
                    {"consecutive_fails", c.consecutive_fails},
                    {"consecutive_passes", c.consecutive_passes},
                    {"last_reason", c.last_reason},
                    {"fault_code", c.fault_code}};
    if (c.last_run_unix) checks[name]["last_run_unix_s"] = c.last_run_unix;
  }
  nlohmann::json j{{"node", s.node},
                   {"sku", s.sku},
                   {"partition", s.partition},
                   {"state", std::string(to_string(s.state))},
                   {"drained_by_vigil", s.drained_by_vigil},
                   {"reason", s.reason},
                   {"driving_checks", s.driving_checks},
                   {"checks", std::move(checks)},
                   {"consecutive_fails", s.consecutive_fails},
                   {"consecutive_passes", s.consecutive_passes},
                   {"last_report_unix_s", s.last_report_unix},
                   {"last_check_time", s.last_check_time},
                   {"last_run_id", s.last_run_id},
                   {"last_action", last_action_name(s.last_action)},
                   {"note", s.note},
                   {"failing", failing_to_json(s.failing)}};
  if (s.k8s_node) j["k8s_node"] = *s.k8s_node;
  if (s.drained_unix) j["drained_unix_s"] = s.drained_unix;
  if (!s.gate_cause.empty()) {
    j["gate_cause"] = s.gate_cause;
    j["gate_since_unix_s"] = s.gate_since_unix;
    if (s.gate_errors) j["gate_errors"] = s.gate_errors;
  }
  if (s.last_drain_unix) j["last_drain_unix_s"] = s.last_drain_unix;
  // Only once the ladder touched the node: snapshots of nodes it never saw stay as they were.
  if (s.repair.stage != RepairStage::kNone || s.repair.remedy || !s.repair.reboots.empty() ||
      s.repair.part_drain_unix || !s.repair.offender.empty() || !s.repair.resets.empty() ||
      !s.repair.held_reason.empty() || s.repair.reset_tried || s.repair.via_reset ||
      s.repair.redrained)
    j["repair"] = to_json(s.repair);
  if (!s.fabric_switch.empty()) {
    j["fabric_switch"] = s.fabric_switch;
    j["switch_suspect"] = s.switch_suspect;
  }
  if (!s.parts.empty()) j["parts"] = parts_to_json(s.parts);  // absent before part history
  if (!s.departed_parts.empty()) j["departed_parts"] = parts_to_json(s.departed_parts);
  return j;
}

Result<NodeRecord> node_record_from_json(const nlohmann::json& j) {
  try {
    NodeRecord s;
    s.node = j.at("node").get<std::string>();
    s.sku = j.value("sku", "");
    s.partition = j.value("partition", "");
    auto st = value_of(kNodeStateNames, j.value("state", "unknown"));
    if (!st) return Error{"unknown state " + j.value("state", ""), "node_record_from_json"};
    s.state = *st;
    s.drained_by_vigil = j.value("drained_by_vigil", false);
    s.reason = j.value("reason", "");
    s.driving_checks = j.value("driving_checks", std::vector<std::string>{});
    if (j.contains("checks")) {
      for (const auto& [name, c] : j.at("checks").items()) {
        CheckState cs;
        const std::string status = c.value("last_status", "skipped");
        auto st = value_of(kStatusNames, status);
        if (!st)
          return Error{"unknown status '" + status + "' of check " + name, "node_record_from_json"};
        cs.last_status = *st;
        cs.consecutive_fails = c.value("consecutive_fails", 0);
        cs.consecutive_passes = c.value("consecutive_passes", 0);
        cs.last_reason = c.value("last_reason", "");
        cs.fault_code = c.value("fault_code", "");
        cs.last_run_unix = c.value("last_run_unix_s", int64_t{0});
        s.checks[name] = cs;
      }
    }
    s.consecutive_fails = j.value("consecutive_fails", 0);
    s.consecutive_passes = j.value("consecutive_passes", 0);
    s.last_report_unix = j.value("last_report_unix_s", int64_t{0});
    s.drained_unix = j.value("drained_unix_s", int64_t{0});
    s.gate_cause = j.value("gate_cause", "");  // absent before the qualify gate
    s.gate_since_unix = j.value("gate_since_unix_s", int64_t{0});
    s.gate_errors = j.value("gate_errors", 0);
    s.last_drain_unix = j.value("last_drain_unix_s", int64_t{0});
    s.last_check_time = j.value("last_check_time", "");
    s.last_run_id = j.value("last_run_id", "");
    const std::string last = j.value("last_action", "");
    auto la = last.empty() ? Action::kNone : value_of(kActionNames, last);
    if (la && (*la == Action::kNone) != last.empty()) la.reset();  // none is spelt ""
    if (la && !is_decided(*la) && *la != Action::kDrainSkipped) la.reset();
    if (!la)
      return Error{"unknown last_action '" + last + "'", "node_record_from_json(" + s.node + ")"};
    s.last_action = *la;
    s.note = j.value("note", "");
    if (j.contains("failing")) {  // an array; a JSON string before 2026-11-27
      auto failing = failing_from_json(j.at("failing"));
      if (!failing.ok())
        return Error{failing.error().to_string(), "node_record_from_json(" + s.node + ")"};
      s.failing = std::move(failing.value());
    }
    if (j.contains("k8s_node")) s.k8s_node = j.at("k8s_node").get<std::string>();
    s.fabric_switch = j.value("fabric_switch", "");
    s.switch_suspect = j.value("switch_suspect", false);
    if (j.contains("repair")) {  // absent before the repair ladder
      auto r = repair_state_from_json(j.at("repair"));
      if (!r.ok()) return Error{r.error().to_string(), "node_record_from_json(" + s.node + ")"};
      s.repair = std::move(r.value());
    }
    if (j.contains("parts")) {  // absent before part history
      auto parts = parts_from_json(j.at("parts"));
      if (!parts.ok())
        return Error{parts.error().to_string(), "node_record_from_json(" + s.node + ")"};
      s.parts = std::move(parts.value());
    }
    if (j.contains("departed_parts")) {  // absent before 2026-11-27
      auto gone = parts_from_json(j.at("departed_parts"), /*one_per_slot=*/false);
      if (!gone.ok())
        return Error{"departed_" + gone.error().to_string(),
                     "node_record_from_json(" + s.node + ")"};
      s.departed_parts = std::move(gone.value());
    }
    return s;
  } catch (const std::exception& e) {
    return Error{e.what(), "node_record_from_json"};
  }
}

}  // namespace vigil::drainer
