// What the engine learns: snapshot/restore, determinism, reset, forgetting, bounded memory.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "detect_test_support.h"
#include "vigil/detect/detect.h"

namespace vigil::detect {

using nlohmann::json;
using testing::eight;
using testing::judge_ok;
using testing::kHour;
using testing::kT0;
using testing::ReportBuilder;
using testing::seed_fleet;

namespace {

// A fleet of 25, node n1 with 5 hours of history (GPU 6 slightly slow, busbw wobbling).
void build_history(Engine& e) {
  seed_fleet(e, 25, kT0);
  for (int i = 0; i < 5; ++i) {
    std::vector<double> g = eight(800 + i);
    g[6] = 770 + i;
    judge_ok(e, ReportBuilder("n1").gemm(g).nvlink_busbw(478.3 + 0.7 * i), kT0 + i * kHour);
  }
}

// Three more reports, each with something to say.
std::vector<NodeReport> next_reports() {
  std::vector<double> slow = eight(800);
  slow[2] = 705.5;
  return {ReportBuilder("n1").gemm(slow).nvlink_busbw(470.1),
          ReportBuilder("n1").gemm(eight(730)).nvlink_busbw(431.9),
          ReportBuilder("fresh").gemm(eight(700)).nvlink_busbw(401)};
}

std::vector<std::string> messages(Engine& e, const std::vector<NodeReport>& reports) {
  std::vector<std::string> out;
  std::int64_t now = kT0 + 10 * kHour;
  for (const NodeReport& r : reports) {
    for (const Verdict& v : judge_ok(e, r, now += kHour).verdicts) {
      out.push_back(std::string(to_string(v.status)) + (v.confirmed ? "+" : "") + " " + v.message);
    }
  }
  return out;
}

}  // namespace

TEST(EngineSnapshot, restore_gives_the_same_state_and_the_same_verdicts) {
  Engine a(DetectConfig::defaults());
  build_history(a);
  const json snap = a.snapshot();
  auto b = Engine::restore(json::parse(snap.dump()), DetectConfig::defaults());
  ASSERT_TRUE(b.ok()) << b.error().to_string();
  EXPECT_EQ(b->snapshot(), snap);
  const auto from_a = messages(a, next_reports());
  const auto from_b = messages(*b, next_reports());
  EXPECT_EQ(from_a, from_b);
  EXPECT_EQ(a.snapshot(), b->snapshot());
  // The verdicts had something to say: failures against history and fleet.
  std::string all;
  for (const auto& m : from_a) all += m + "\n";
  EXPECT_NE(all.find("below its last"), std::string::npos) << all;
  EXPECT_NE(all.find("nodes ("), std::string::npos) << all;
}

TEST(EngineSnapshot, judging_is_deterministic) {
  Engine a(DetectConfig::defaults()), b(DetectConfig::defaults());
  build_history(a);
  build_history(b);
  EXPECT_EQ(messages(a, next_reports()), messages(b, next_reports()));
  EXPECT_EQ(a.snapshot().dump(), b.snapshot().dump());
}

TEST(EngineSnapshot, restore_names_the_damaged_field) {
  Engine a(DetectConfig::defaults());
  build_history(a);
  json snap = a.snapshot();
  snap["nodes"][0]["history"][0]["values"][1] = "fast";
  auto r = Engine::restore(snap, DetectConfig::defaults());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message.rfind("/nodes/0/history/0/values/1: must be a finite number >= 0", 0),
            0u)
      << r.error().message;
  snap = a.snapshot();
  snap["detect_snapshot_version"] = 7;
  r = Engine::restore(snap, DetectConfig::defaults());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("unsupported version 7"), std::string::npos);
}

TEST(EngineSnapshot, restore_with_a_shorter_window_keeps_the_latest_values) {
  Engine a(DetectConfig::defaults());
  for (int i = 0; i < 8; ++i)
    judge_ok(a, ReportBuilder("n1").nvlink_busbw(470 + i), kT0 + i * kHour);
  DetectConfig c = DetectConfig::defaults();
  c.history_window = 4;
  c.min_history = 3;
  auto b = Engine::restore(a.snapshot(), c);
  ASSERT_TRUE(b.ok()) << b.error().to_string();
  EXPECT_EQ(b->snapshot()["nodes"][0]["history"][0]["values"],
            json::parse("[474.0, 475.0, 476.0, 477.0]"));
}

TEST(EngineSnapshot, restore_rejects_an_invalid_config) {
  DetectConfig c = DetectConfig::defaults();
  c.min_fleet = 0;
  auto r = Engine::restore(Engine(DetectConfig::defaults()).snapshot(), c);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("min_fleet"), std::string::npos);
}

TEST(EngineState, reset_node_clears_its_history_and_fleet_figures) {
  Engine e(DetectConfig::defaults());
  for (int i = 0; i < 5; ++i) judge_ok(e, ReportBuilder("n1").gemm(eight(800)), kT0 + i * kHour);
  ASSERT_EQ(e.size().history_units, 9u);  // 8 GPUs and the node's level
  e.reset_node("n1");
  EXPECT_EQ(e.size().nodes, 0u);
  EXPECT_EQ(e.size().history_values, 0u);
  EXPECT_EQ(e.size().fleet_entries, 0u);
  auto rv = judge_ok(e, ReportBuilder("n1").gemm(eight(700)), kT0 + 6 * kHour);
  EXPECT_EQ(testing::find(rv, "gpu_gemm", "gpu0")->history, 0);
  EXPECT_EQ(testing::find(rv, "gpu_gemm", "gpu0")->status, Status::kPass);
}

TEST(EngineState, history_stays_within_its_window_over_a_thousand_reports) {
  Engine e(DetectConfig::defaults());
  for (int i = 0; i < 1000; ++i) {
    judge_ok(e, ReportBuilder("n1").gemm(eight(800 + (i % 7))).nvlink_busbw(480 - (i % 5)),
             kT0 + i * kHour);
  }
  const EngineSize s = e.size();
  EXPECT_EQ(s.nodes, 1u);
  EXPECT_EQ(s.history_units, 10u);        // 8 GPUs, the node's GEMM level, the node's busbw
  EXPECT_EQ(s.history_values, 10u * 8u);  // history_window = 8
  EXPECT_EQ(s.fleet_entries, 2u);         // one per figure per node
  EXPECT_EQ(e.snapshot()["nodes"][0]["history"][0]["values"].size(), 8u);
}

TEST(EngineState, nodes_not_seen_for_forget_after_s_are_dropped) {
  DetectConfig c = DetectConfig::defaults();
  c.forget_after_s = 24 * kHour;
  Engine e(c);
  for (int i = 0; i < 1000; ++i) {  // a new node every hour: at most 25 are remembered
    judge_ok(e, ReportBuilder("n" + std::to_string(i)).gemm(eight(800)).nvlink_busbw(480),
             kT0 + i * kHour);
    ASSERT_LE(e.size().nodes, 25u) << i;
  }
  EXPECT_EQ(e.size().nodes, 25u);
  EXPECT_EQ(e.size().fleet_entries, 50u);
  EXPECT_EQ(e.size().history_units, 25u * 10u);
}

}  // namespace vigil::detect
