// NodeRecord's JSON (drainer/src/node_record_json.cpp): what the journal's decisions, snapshots
// and the API hold round-trips, a value this build does not know is an error naming it, and a
// snapshot written before a field existed (parts, repair) still reads.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "fake_clock.h"
#include "fakes.h"
#include "vigil/drainer/policy.h"

namespace vigil::drainer {
namespace {

using testing::FakeClock;
using testing::make_check;
using testing::make_report;
constexpr Status F = Status::kFail;

TEST(NodeRecordJson, state_round_trips_through_json) {
  FakeClock clock;
  PolicyEngine eng(default_policy(), {}, false, clock);
  auto d = eng.on_report(nullptr, make_report("a", "1", {make_check("nvml_ecc", F, 1, 0)}), nullptr,
                         {}, 4);
  auto back = node_record_from_json(to_json(d.record));
  ASSERT_TRUE(back.ok()) << back.error().to_string();
  EXPECT_EQ(to_json(back.value()), to_json(d.record));
  auto b = breaker_state_from_json(to_json(d.breaker));
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(to_json(b.value()), to_json(d.breaker));
}

// last_action is typed: every spelling round-trips, and one this build does not know is an
// error rather than a state that silently lost what the node's last decision did.
TEST(NodeRecordJson, last_action_is_typed_and_strict) {
  NodeRecord s;
  s.node = "gpu-1";
  for (auto [a, name] : kActionNames) {
    if (!is_decided(a) && a != Action::kDrainSkipped) continue;
    s.last_action = a;
    auto back = node_record_from_json(to_json(s));
    ASSERT_TRUE(back.ok()) << name;
    EXPECT_EQ(back->last_action, a) << name;
  }
  s.last_action = Action::kDrainSkipped;
  EXPECT_EQ(to_json(s)["last_action"], "drain_skipped");
  s.last_action = Action::kNone;
  EXPECT_EQ(to_json(s)["last_action"], "");  // as snapshots have always spelt it
  auto j = to_json(s);
  j["last_action"] = "repair";
  auto back = node_record_from_json(j);
  ASSERT_FALSE(back.ok());
  EXPECT_NE(back.error().to_string().find("unknown last_action 'repair'"), std::string::npos);
  // Spellings of what happened that no decision leaves as a node's last action, and "none",
  // which snapshots spell "".
  for (const char* never : {"none", "rebooted", "redrain", "breaker_opened", "breaker_reset"}) {
    j["last_action"] = never;
    EXPECT_FALSE(node_record_from_json(j).ok()) << never;
  }
}

TEST(NodeRecordJson, part_history_round_trips_and_old_snapshots_have_none) {
  NodeRecord s;
  s.node = "gpu-2";
  s.parts = {{3, "1652823054323", "GPU-3", {1'800'000'000}}};
  auto j = to_json(s);
  EXPECT_EQ(j["parts"][0]["serial"], "1652823054323");
  auto back = node_record_from_json(j);
  ASSERT_TRUE(back.ok()) << back.error().to_string();
  ASSERT_EQ(back->parts.size(), 1u);
  EXPECT_EQ(back->parts[0].drains, std::vector<int64_t>{1'800'000'000});
  j.erase("parts");  // written before part history
  back = node_record_from_json(j);
  ASSERT_TRUE(back.ok());
  EXPECT_TRUE(back->parts.empty());
  EXPECT_FALSE(to_json(*back).contains("parts"));
  j["parts"] = nlohmann::json::parse(R"([{"index": 3, "drains": "often"}])");
  back = node_record_from_json(j);
  ASSERT_FALSE(back.ok());
  EXPECT_NE(back.error().to_string().find("gpu-2"), std::string::npos) << back.error().to_string();
}

// Parts that left the node: several may have left the same slot, unlike the slots themselves.
TEST(NodeRecordJson, departed_parts_round_trip_with_repeated_slots) {
  NodeRecord s;
  s.node = "gpu-2";
  s.departed_parts = {{3, "S1", "GPU-1", {100}}, {3, "S2", "GPU-2", {200}}};
  auto j = to_json(s);
  ASSERT_EQ(j["departed_parts"].size(), 2u);
  auto back = node_record_from_json(j);
  ASSERT_TRUE(back.ok()) << back.error().to_string();
  ASSERT_EQ(back->departed_parts.size(), 2u);
  EXPECT_EQ(back->departed_parts[1].serial, "S2");
  j.erase("departed_parts");  // written before 2026-11-27
  EXPECT_TRUE(node_record_from_json(j)->departed_parts.empty());
  EXPECT_FALSE(to_json(NodeRecord{}).contains("departed_parts"));
  s.parts = s.departed_parts;  // but a slot holds one part
  EXPECT_FALSE(node_record_from_json(to_json(s)).ok());
}

}  // namespace
}  // namespace vigil::drainer
