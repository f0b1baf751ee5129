#pragma once
// The journal's records, typed. Every record the drainer writes is one of four kinds, each with
// one strict codec: a record this build cannot read (an unknown "t", an unknown or missing
// field of the record, an unknown action, outcome, sink, intent action, node state or check
// status) is an error, never skipped or defaulted, so replay stops and names where. (The node
// state and breaker inside a decision still read absent optional fields as their defaults and
// ignore fields they do not know, as snapshots always have.) Replay is a visit over these
// (replay.cpp); live decisions and replay change the node table through the same
// Drainer::apply_locked(const Decided&).
//
// On disk (one JSON line each, "seq" spliced in by the journal):
//   {"t":"report","node","run_id","received_unix_s","report"}
//   {"t":"decision","node","action","state","intents"[,"report_seq"][,"breaker"|"breaker_drain"]}
//   {"t":"done","ids","outcome"}
//   {"t":"breaker_reset","breaker"[,"intents"]}
// The spelling is the one journals have had since the first release, so old journals replay:
// a decision's "state" holds the node's whole NodeRecord (named NodeState until 2026-11-27).
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "vigil/base/enum_names.h"
#include "vigil/base/result.h"
#include "vigil/drainer/intent.h"
#include "vigil/drainer/policy.h"
#include "vigil/report/report.h"

namespace vigil::drainer {

// A report ingest accepted (durable before the reply).
struct ReportAccepted {
  int64_t received_unix_s = 0;
  NodeReport report;
};

// One decision: the node's next state and the sink intents it created. The breaker goes in
// whole when it opens or its reason changes, else as the one drain it counted (if any): the
// whole state holds every drain time in the window, and writing it with each of 1,000 drains
// made the journal grow quadratically.
struct Decided {
  Action action = Action::kNone;
  NodeRecord record;
  std::vector<Intent> intents;
  uint64_t report_seq = 0;  // the ReportAccepted it decided; 0: staleness, operator, switch
  std::optional<BreakerState> breaker;
  std::optional<BreakerDrain> breaker_drain;
};

// Why intents left the outbox.
enum class DoneOutcome { kOk, kSkipped, kError, kSuperseded };
inline constexpr EnumName<DoneOutcome> kDoneOutcomeNames[] = {
    {DoneOutcome::kOk, "ok"},
    {DoneOutcome::kSkipped, "skipped"},
    {DoneOutcome::kError, "error"},
    {DoneOutcome::kSuperseded, "superseded"}};
inline std::string_view to_string(DoneOutcome o) { return name_of(kDoneOutcomeNames, o, "error"); }

struct IntentsDone {
  std::vector<uint64_t> ids;
  DoneOutcome outcome = DoneOutcome::kOk;
};

// `vigil-drainer breaker reset`: the breaker as it is after the reset, and the intents the
// reset owes (a webhook's breaker_reset event; journaled only when there are any).
struct BreakerReset {
  BreakerState breaker;
  std::vector<Intent> intents;
};

using RecordBody = std::variant<ReportAccepted, Decided, IntentsDone, BreakerReset>;

struct JournalRecord {
  uint64_t seq = 0;
  RecordBody body;
};

// std::visit(Overloaded{[](const ReportAccepted&) {...}, ...}, record.body)
template <class... F>
struct Overloaded : F... {
  using F::operator()...;
};

// The journal form, without "seq" (Journal::append assigns it). The per-kind overloads spare
// the hot paths (ingest, decisions) a copy of the report or state into a RecordBody.
nlohmann::json to_json(const RecordBody& r);
nlohmann::json report_record(int64_t received_unix_s, const NodeReport& report);
// The same record with the report's JSON as it was received and strictly read
// (parse_node_reports' `validated`), not built again from the struct: one JSON tree per report
// fewer on the ingest path. Replay reads either form with the same codec.
nlohmann::json report_record(int64_t received_unix_s, const NodeReport& report,
                             nlohmann::json received);
nlohmann::json to_json(const Decided& d);
// Strict: see the header comment. Errors name the field ("decision.state: ...").
Result<JournalRecord> record_from_json(const nlohmann::json& j);

}  // namespace vigil::drainer
