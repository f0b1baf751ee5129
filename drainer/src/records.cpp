// The journal's records and their one strict codec; see records.h.
#include "records.h"

#include <initializer_list>
#include <string_view>

#include "vigil/report/json_keys.h"

// GCC 12 warns that the vector inside a moved-from RecordBody "may be used uninitialized" when a
// record kind is wrapped in Result<RecordBody>: a known false positive of -Wmaybe-uninitialized
// with std::variant (GCC bugzilla 105562 and its duplicates); clang and GCC 13 do not warn.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace vigil::drainer {
namespace {

using nlohmann::json;

// The first field of `j` outside `known` (and the journal's own "seq" and "t"), if any.
std::optional<std::string> stray_field(const json& j,
                                       std::initializer_list<std::string_view> known) {
  for (const std::string& k : unknown_keys(j, known))
    if (k != "seq" && k != "t") return k;  // every record's envelope
  return std::nullopt;
}

Result<RecordBody> report_from_json(const json& j) {
  auto parsed = parse_node_report(j.at("report"));
  if (!parsed) return Error{parsed.error, "report.report"};
  if (parsed.value->node != j.at("node").get<std::string>() ||
      parsed.value->run_id != j.at("run_id").get<std::string>())
    return Error{"node or run_id differs from the report's own", "report"};
  return RecordBody{ReportAccepted{j.at("received_unix_s").get<int64_t>(), *parsed.value}};
}

// The record's "intents", if any.
Result<std::vector<Intent>> intents_from_json(const json& j, const std::string& where) {
  std::vector<Intent> out;
  if (!j.contains("intents")) return out;
  for (const auto& ij : j.at("intents")) {
    auto i = intent_from_json(ij);
    if (!i.ok()) return Error{i.error().to_string(), where};
    out.push_back(std::move(*i));
  }
  return out;
}

Result<RecordBody> decision_from_json(const json& j) {
  Decided d;
  const auto action = j.at("action").get<std::string>();
  auto a = value_of(kActionNames, action);
  if (!a) return Error{"unknown action '" + action + "'", "decision.action"};
  if (!is_decided(*a))
    return Error{"'" + action + "' is not a decision's action", "decision.action"};
  d.action = *a;
  auto s = node_record_from_json(j.at("state"));
  if (!s.ok()) return Error{s.error().to_string(), "decision.state"};
  d.record = std::move(*s);
  if (d.record.node != j.at("node").get<std::string>())
    return Error{"differs from state.node", "decision.node"};
  VIGIL_TRY(d.intents, intents_from_json(j, "decision.intents"));
  d.report_seq = j.value("report_seq", uint64_t{0});
  if (j.contains("breaker") && j.contains("breaker_drain"))
    return Error{"both breaker and breaker_drain", "decision"};
  if (j.contains("breaker")) {
    auto b = breaker_state_from_json(j.at("breaker"));
    if (!b.ok()) return Error{b.error().to_string(), "decision.breaker"};
    d.breaker = std::move(*b);
  } else if (j.contains("breaker_drain")) {
    const auto& bd = j.at("breaker_drain");
    if (!bd.is_object()) return Error{"not an object", "decision.breaker_drain"};
    if (auto k = stray_field(bd, {"group", "at"}))
      return Error{"unknown field", "decision.breaker_drain." + *k};
    d.breaker_drain = BreakerDrain{bd.at("group").get<std::string>(), bd.at("at").get<int64_t>()};
  }
  return RecordBody{std::move(d)};
}

Result<RecordBody> done_from_json(const json& j) {
  IntentsDone d;
  d.ids = j.at("ids").get<std::vector<uint64_t>>();
  const auto outcome = j.at("outcome").get<std::string>();
  auto o = value_of(kDoneOutcomeNames, outcome);
  if (!o) return Error{"unknown outcome '" + outcome + "'", "done.outcome"};
  d.outcome = *o;
  return RecordBody{std::move(d)};
}

Result<RecordBody> reset_from_json(const json& j) {
  auto b = breaker_state_from_json(j.at("breaker"));
  if (!b.ok()) return Error{b.error().to_string(), "breaker_reset.breaker"};
  VIGIL_TRY(auto intents, intents_from_json(j, "breaker_reset.intents"));
  return RecordBody{BreakerReset{std::move(*b), std::move(intents)}};
}

struct Kind {
  std::string_view t;
  std::initializer_list<std::string_view> fields;  // "seq" and "t" besides
  Result<RecordBody> (*decode)(const json&);
};

const Kind kKinds[] = {
    {"report", {"node", "run_id", "received_unix_s", "report"}, report_from_json},
    {"decision",
     {"node", "action", "state", "intents", "report_seq", "breaker", "breaker_drain"},
     decision_from_json},
    {"done", {"ids", "outcome"}, done_from_json},
    {"breaker_reset", {"breaker", "intents"}, reset_from_json},
};

}  // namespace

json report_record(int64_t received_unix_s, const NodeReport& report) {
  return report_record(received_unix_s, report, to_json(report));
}

json report_record(int64_t received_unix_s, const NodeReport& report, json received) {
  json r = json::object();
  r["t"] = "report";
  r["node"] = report.node;
  r["run_id"] = report.run_id;
  r["received_unix_s"] = received_unix_s;
  r["report"] = std::move(received);
  return r;
}

json to_json(const Decided& d) {
  json intents = json::array();
  for (const auto& i : d.intents) intents.push_back(to_json(i));
  json j{{"t", "decision"},
         {"node", d.record.node},
         {"action", std::string(to_string(d.action))},
         {"state", to_json(d.record)},
         {"intents", intents}};
  if (d.report_seq) j["report_seq"] = d.report_seq;
  if (d.breaker) j["breaker"] = to_json(*d.breaker);
  if (d.breaker_drain)
    j["breaker_drain"] = {{"group", d.breaker_drain->group}, {"at", d.breaker_drain->at}};
  return j;
}

json to_json(const RecordBody& r) {
  return std::visit(
      Overloaded{
          [](const ReportAccepted& a) { return report_record(a.received_unix_s, a.report); },
          [](const Decided& d) { return to_json(d); },
          [](const IntentsDone& d) -> json {
            return {{"t", "done"}, {"ids", d.ids}, {"outcome", std::string(to_string(d.outcome))}};
          },
          [](const BreakerReset& b) -> json {
            json j{{"t", "breaker_reset"}, {"breaker", to_json(b.breaker)}};
            for (const auto& i : b.intents) j["intents"].push_back(to_json(i));
            return j;
          },
      },
      r);
}

Result<JournalRecord> record_from_json(const json& j) {
  try {
    if (!j.is_object()) return Error{"not a JSON object", "record"};
    const auto seq = j.at("seq").get<uint64_t>();
    const auto t = j.at("t").get<std::string>();
    for (const auto& kind : kKinds) {
      if (kind.t != t) continue;
      if (auto k = stray_field(j, kind.fields)) return Error{"unknown field", t + "." + *k};
      auto body = kind.decode(j);
      if (!body.ok()) return body.error();
      return JournalRecord{seq, std::move(*body)};
    }
    return Error{"unknown record type '" + t + "' (written by a newer vigil-drainer?)", "record.t"};
  } catch (const std::exception& e) {
    return Error{e.what(), "record"};
  }
}

}  // namespace vigil::drainer
