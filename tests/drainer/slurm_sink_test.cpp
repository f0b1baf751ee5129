// The Slurm sink with an in-memory Slurm: one RPC per reason, actions waiting out an
// unreachable slurmctld, applied once across restarts and crashes, resumes only of its own
// drains, ownership re-checked right before acting.
#include <gtest/gtest.h>

#include "drainer_fixtures.h"
#include "fake_clock.h"
#include "fakes.h"
#include "temp_dir.h"
#include "vigil/drainer/drainer.h"

namespace vigil::drainer {
namespace {

using namespace testing::drainer_short;

TEST(Drainer, drains_with_identical_reasons_go_out_in_one_call) {
  TempDir d;
  FakeClock clock;
  auto slurm = cluster(8);
  Drainer dr(test_config(d.str()), slurm, nullptr, clock);
  ASSERT_TRUE(dr.open().ok());
  std::vector<NodeReport> rs;
  for (int i = 0; i < 6; ++i) rs.push_back(bad("gpu-" + std::to_string(i), "r1"));
  ASSERT_TRUE(dr.ingest(rs).ok());
  dr.process_pending();
  EXPECT_EQ(dr.pending(SinkKind::kSlurm), 6u);
  EXPECT_EQ(dr.run_slurm_sink_once(), 0);
  auto calls = slurm->calls_copy();
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].op, "drain");
  EXPECT_EQ(calls[0].nodes.size(), 6u);
  EXPECT_TRUE(calls[0].reason.starts_with("vigil: ")) << calls[0].reason;
  EXPECT_TRUE(slurm->get("gpu-5").drain);
  EXPECT_EQ(dr.pending(SinkKind::kSlurm), 0u);
}

TEST(Drainer, actions_wait_while_slurmctld_is_unreachable_and_apply_once_back) {
  TempDir d;
  FakeClock clock;
  auto slurm = cluster(4);
  Drainer dr(test_config(d.str()), slurm, nullptr, clock);
  ASSERT_TRUE(dr.open().ok());
  slurm->reachable = false;
  ASSERT_TRUE(dr.ingest({bad("gpu-2", "r1")}).ok());
  dr.process_pending();
  EXPECT_EQ(dr.node("gpu-2")->state, NodeState::kDrained);
  EXPECT_EQ(dr.run_slurm_sink_once(), 1);
  EXPECT_EQ(dr.run_slurm_sink_once(), 1);
  EXPECT_EQ(dr.pending(SinkKind::kSlurm), 1u);
  EXPECT_NE(dr.metrics_text().find("vigil_pending_actions{sink=\"slurm\"} 1"), std::string::npos);
  slurm->reachable = true;
  EXPECT_EQ(dr.run_slurm_sink_once(), 0);
  EXPECT_TRUE(slurm->get("gpu-2").drain);
  EXPECT_EQ(slurm->calls_copy().size(), 1u);
}

TEST(Drainer, pending_actions_survive_restart_and_are_applied_once) {
  TempDir d;
  FakeClock clock;
  auto slurm = cluster(4);
  slurm->reachable = false;
  {
    Drainer dr(test_config(d.str()), slurm, nullptr, clock);
    ASSERT_TRUE(dr.open().ok());
    ASSERT_TRUE(dr.ingest({bad("gpu-1", "r1")}).ok());
    dr.process_pending();
    EXPECT_EQ(dr.run_slurm_sink_once(), 1);
  }
  slurm->reachable = true;
  Drainer dr(test_config(d.str()), slurm, nullptr, clock);
  ASSERT_TRUE(dr.open().ok());
  EXPECT_EQ(dr.pending(SinkKind::kSlurm), 1u);
  EXPECT_EQ(dr.process_pending(), 0);  // decision was journaled: not decided again
  EXPECT_EQ(dr.run_slurm_sink_once(), 0);
  EXPECT_EQ(slurm->calls_copy().size(), 1u);
  EXPECT_EQ(dr.node("gpu-1")->state, NodeState::kDrained);
}

TEST(Drainer, an_action_applied_before_a_crash_is_not_repeated) {
  TempDir d;
  FakeClock clock;
  auto slurm = cluster(4);
  {
    Drainer dr(test_config(d.str()), slurm, nullptr, clock);
    ASSERT_TRUE(dr.open().ok());
    ASSERT_TRUE(dr.ingest({bad("gpu-1", "r1")}).ok());
    dr.process_pending();
    // Slurm applied it but the "done" record never made it (simulated: apply behind our back).
    ASSERT_TRUE(slurm->drain({"gpu-1"}, dr.pending_intents().front().reason).ok());
  }
  Drainer dr(test_config(d.str()), slurm, nullptr, clock);
  ASSERT_TRUE(dr.open().ok());
  EXPECT_EQ(dr.pending(SinkKind::kSlurm), 1u);
  EXPECT_EQ(dr.run_slurm_sink_once(), 0);
  EXPECT_EQ(slurm->calls_copy().size(), 1u);  // only our simulated call
  EXPECT_EQ(dr.pending(SinkKind::kSlurm), 0u);
}

TEST(Drainer, resume_after_passes_uses_undrain_and_never_touches_other_owners) {
  TempDir d;
  FakeClock clock;
  auto slurm = cluster(4);
  slurm->set("gpu-3", [](slurm::SlurmNodeInfo& n) {
    n.drain = true;
    n.reason = "admin: PSU swap";
  });
  Drainer dr(test_config(d.str()), slurm, nullptr, clock);
  ASSERT_TRUE(dr.open().ok());
  ASSERT_TRUE(dr.ingest({bad("gpu-2", "a"), bad("gpu-3", "a")}).ok());
  dr.process_pending();
  dr.run_slurm_sink_once();
  for (const char* run : {"b", "c"}) {
    ASSERT_TRUE(dr.ingest({good("gpu-2", run), good("gpu-3", run)}).ok());
    dr.process_pending();
    dr.run_slurm_sink_once();
  }
  EXPECT_FALSE(slurm->get("gpu-2").drain);
  EXPECT_TRUE(slurm->get("gpu-3").drain);
  EXPECT_EQ(slurm->get("gpu-3").reason, "admin: PSU swap");
  auto calls = slurm->calls_copy();
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[0].nodes, std::vector<std::string>{"gpu-2"});
  EXPECT_EQ(calls[1].op, "undrain");
  EXPECT_EQ(calls[1].nodes, std::vector<std::string>{"gpu-2"});
}

TEST(Drainer, the_sink_rechecks_ownership_before_acting) {
  TempDir d;
  FakeClock clock;
  auto slurm = cluster(4);
  Drainer dr(test_config(d.str()), slurm, nullptr, clock);
  ASSERT_TRUE(dr.open().ok());
  slurm->reachable = false;  // decided without Slurm's view
  ASSERT_TRUE(dr.ingest({bad("gpu-0", "a"), bad("gpu-1", "a")}).ok());
  dr.process_pending();
  slurm->reachable = true;
  slurm->set("gpu-0", [](slurm::SlurmNodeInfo& n) { n.down = true; });
  slurm->set("gpu-1", [](slurm::SlurmNodeInfo& n) {
    n.drain = true;
    n.reason = "admin: x";
  });
  EXPECT_EQ(dr.run_slurm_sink_once(), 0);
  EXPECT_TRUE(slurm->calls_copy().empty());
  EXPECT_EQ(slurm->get("gpu-1").reason, "admin: x");
  // Neither node is recorded as drained by vigil: status, metrics and a later resume must not
  // treat them as ours. This survives a restart.
  for (const char* n : {"gpu-0", "gpu-1"}) {
    EXPECT_FALSE(dr.node(n)->drained_by_vigil) << n;
    EXPECT_EQ(dr.node(n)->last_action, Action::kDrainSkipped) << n;
  }
  EXPECT_EQ(dr.node("gpu-0")->state, NodeState::kWarn);
  EXPECT_EQ(dr.node("gpu-1")->state, NodeState::kDrained);
  EXPECT_NE(dr.node("gpu-1")->note.find("admin: x"), std::string::npos);
  Drainer again(test_config(d.str()), slurm, nullptr, clock);
  ASSERT_TRUE(again.open().ok());
  EXPECT_FALSE(again.node("gpu-1")->drained_by_vigil);
  EXPECT_EQ(again.pending(SinkKind::kSlurm), 0u);
}

}  // namespace
}  // namespace vigil::drainer
