// The journal records' strict codec (drainer/src/records.cpp): every kind round-trips; a type,
// field, action or outcome this build does not know is an error naming it, never a default.
#include "records.h"

#include <gtest/gtest.h>

#include "fakes.h"

namespace vigil::drainer {
namespace {

using nlohmann::json;

// What the journal stores: the record with its "seq".
json stored(const RecordBody& b, uint64_t seq) {
  json j = to_json(b);
  j["seq"] = seq;
  return j;
}

std::string error_of(const json& j) {
  auto r = record_from_json(j);
  return r.ok() ? "" : r.error().to_string();
}

Decided a_drain() {
  Decided d;
  d.action = Action::kDrain;
  d.record.node = "gpu-3";
  d.record.state = NodeState::kDrained;
  d.record.drained_by_vigil = true;
  d.record.checks["nvml_ecc"].last_status = Status::kFail;
  d.report_seq = 12;
  Intent i;
  i.id = 7;
  i.node = "gpu-3";
  i.reason = "vigil: ecc gpu1 dbe 2";
  d.intents.push_back(i);
  d.breaker_drain = BreakerDrain{"partition:gpu", 1'800'000'000};
  return d;
}

TEST(records, every_kind_round_trips_with_its_seq) {
  std::vector<RecordBody> bodies = {
      ReportAccepted{1'800'000'000, testing::make_report("gpu-3", "r1", {})}, a_drain(),
      IntentsDone{{7, 8}, DoneOutcome::kSuperseded}, BreakerReset{BreakerState{}, {}}};
  uint64_t seq = 1;
  for (const auto& b : bodies) {
    auto r = record_from_json(stored(b, seq));
    ASSERT_TRUE(r.ok()) << r.error().to_string();
    EXPECT_EQ(r->seq, seq);
    EXPECT_EQ(r->body.index(), b.index());
    EXPECT_EQ(to_json(r->body), to_json(b));
    ++seq;
  }
}

TEST(records, a_decision_keeps_its_breaker_whole_or_as_the_drain_it_counted) {
  auto r = record_from_json(stored(a_drain(), 3));
  ASSERT_TRUE(r.ok());
  const auto& d = std::get<Decided>(r->body);
  ASSERT_TRUE(d.breaker_drain);
  EXPECT_EQ(d.breaker_drain->group, "partition:gpu");
  EXPECT_FALSE(d.breaker);
  Decided opened = a_drain();
  opened.breaker_drain.reset();
  opened.breaker = BreakerState{true, "drain #4 exceeds cap", 1'800'000'000, {}};
  auto o = record_from_json(stored(opened, 4));
  ASSERT_TRUE(o.ok());
  EXPECT_TRUE(std::get<Decided>(o->body).breaker->open);
  json both = stored(a_drain(), 5);
  both["breaker"] = to_json(BreakerState{});
  EXPECT_NE(error_of(both).find("both breaker and breaker_drain"), std::string::npos);
}

TEST(records, an_unknown_type_is_an_error_naming_it) {
  EXPECT_NE(error_of({{"seq", 1}, {"t", "repair"}}).find("unknown record type 'repair'"),
            std::string::npos);
  EXPECT_NE(error_of({{"seq", 1}}).find("record"), std::string::npos);  // no "t"
  EXPECT_NE(error_of(json::array()).find("not a JSON object"), std::string::npos);
}

TEST(records, every_done_outcome_is_spelt_once_and_read_back) {
  for (size_t i = 0; i < std::size(kDoneOutcomeNames); ++i) {
    const auto [o, name] = kDoneOutcomeNames[i];
    EXPECT_EQ(static_cast<size_t>(o), i) << name;
    json j = stored(IntentsDone{{1}, o}, 2);
    EXPECT_EQ(j["outcome"], name);
    EXPECT_TRUE(error_of(j).empty()) << name;
  }
  EXPECT_EQ(std::size(kDoneOutcomeNames), static_cast<size_t>(DoneOutcome::kSuperseded) + 1);
}

TEST(records, an_unknown_or_missing_field_is_an_error_naming_it) {
  json j = stored(IntentsDone{{1}, DoneOutcome::kOk}, 2);
  j["by"] = "someone";
  EXPECT_NE(error_of(j).find("done.by"), std::string::npos) << error_of(j);
  json k = stored(a_drain(), 2);
  k["breaker_drain"]["extra"] = 1;
  EXPECT_NE(error_of(k).find("decision.breaker_drain.extra"), std::string::npos) << error_of(k);
  json m = stored(BreakerReset{}, 2);
  m.erase("breaker");
  EXPECT_FALSE(error_of(m).empty());
}

TEST(records, an_unknown_action_outcome_or_check_status_is_an_error) {
  json a = stored(a_drain(), 2);
  a["action"] = "reinstall";
  EXPECT_NE(error_of(a).find("unknown action 'reinstall'"), std::string::npos) << error_of(a);
  a["action"] = "breaker_opened";  // an event's type, never a decision's action
  EXPECT_NE(error_of(a).find("'breaker_opened' is not a decision's action"), std::string::npos)
      << error_of(a);
  json o = stored(IntentsDone{{1}, DoneOutcome::kOk}, 2);
  o["outcome"] = "maybe";
  EXPECT_NE(error_of(o).find("unknown outcome 'maybe'"), std::string::npos) << error_of(o);
  // A node state's check status was read as "skipped" when unknown; now it stops replay.
  json s = stored(a_drain(), 2);
  s["state"]["checks"]["nvml_ecc"]["last_status"] = "degraded";
  EXPECT_NE(error_of(s).find("unknown status 'degraded' of check nvml_ecc"), std::string::npos)
      << error_of(s);
}

TEST(records, a_report_record_must_agree_with_its_report) {
  json j = stored(ReportAccepted{1, testing::make_report("gpu-3", "r1", {})}, 2);
  j["node"] = "gpu-4";
  EXPECT_NE(error_of(j).find("differs from the report's own"), std::string::npos) << error_of(j);
  json bad = stored(ReportAccepted{1, testing::make_report("gpu-3", "r1", {})}, 2);
  bad["report"]["checks"] = 3;
  EXPECT_NE(error_of(bad).find("report.report"), std::string::npos) << error_of(bad);
}

// The ingest path journals each report's JSON as it was received (parse_node_reports'
// `validated`), not built again from the struct: replay must read the same report from it.
TEST(records, a_report_journaled_as_received_replays_as_the_report_built_from_it) {
  const NodeReport made =
      testing::make_report("gpu-3", "r1", {testing::make_check("nvml_ecc", Status::kFail, 2)});
  // The same report as a client may send it: with fields set to null that the struct reads as
  // absent and to_json leaves out, so a record built again from the struct would differ.
  json sent = to_json(made);
  sent["k8s_node"] = nullptr;
  sent["checks"][0]["evidence"] = nullptr;
  ASSERT_NE(sent.dump(), to_json(made).dump());
  const std::string body = json::array({sent}).dump();
  std::vector<json> received;
  auto parsed = parse_node_reports(body, &received);
  ASSERT_TRUE(parsed) << parsed.error;
  ASSERT_EQ(received.size(), 1u);
  EXPECT_EQ(received[0].dump(), sent.dump());
  json as_received = report_record(5, parsed.value->at(0), std::move(received[0]));
  as_received["seq"] = 9;
  auto back = record_from_json(as_received);
  ASSERT_TRUE(back.ok()) << back.error().to_string();
  const auto& accepted = std::get<ReportAccepted>(back->body);
  EXPECT_EQ(accepted.received_unix_s, 5);
  EXPECT_EQ(to_json(accepted.report).dump(), to_json(made).dump());
  EXPECT_EQ(as_received.at("report").dump(), sent.dump());  // journaled as it came
  // A batch that fails the strict reading hands back nothing.
  received.assign(1, json("stale"));
  EXPECT_FALSE(parse_node_reports(R"([{"node": "gpu-3"}])", &received));
  EXPECT_EQ(received, std::vector<json>{json("stale")});
}

}  // namespace
}  // namespace vigil::drainer
