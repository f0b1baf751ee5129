// Drainer core with in-memory Slurm / Kubernetes fakes: idempotency, sinks, batching,
// pending actions, restart, crash (kill -9) without lost reports or repeated actions.
#include "vigil/drainer/drainer.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "drainer_fixtures.h"
#include "fake_clock.h"
#include "fakes.h"
#include "temp_dir.h"
#include "vigil/drainer/run_ids.h"

namespace vigil::drainer {
namespace {

using testing::FakeClock;
using testing::FakeKube;
using testing::FakeSlurm;
using testing::make_check;
using testing::make_report;
using testing::TempDir;

DrainerConfig test_config(const std::string& dir) { return testing::drainer_test_config(dir); }
std::shared_ptr<FakeSlurm> cluster(int n) { return testing::fake_cluster(n); }
int rewrite_state(const std::string& dir, const std::string& prefix, const std::string& from,
                  const std::string& to);
NodeReport bad(const std::string& node, const std::string& run) {
  return testing::ecc_fail_report(node, run);
}
NodeReport good(const std::string& node, const std::string& run) {
  return testing::ecc_pass_report(node, run);
}

TEST(Drainer, same_node_and_run_id_is_stored_once) {
  TempDir d;
  FakeClock clock;
  Drainer dr(test_config(d.str()), cluster(4), nullptr, clock);
  ASSERT_TRUE(dr.open().ok());
  auto a = dr.ingest({good("gpu-0", "r1"), good("gpu-0", "r1"), good("gpu-1", "r1")});
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->accepted, 2);
  EXPECT_EQ(a->duplicates, 1);
  auto b = dr.ingest({good("gpu-0", "r1")});
  EXPECT_EQ(b->accepted, 0);
  EXPECT_EQ(b->duplicates, 1);
  EXPECT_EQ(dr.process_pending(), 2);
  EXPECT_EQ(dr.node("gpu-0")->clean_streak, 1);
}

TEST(Drainer, idempotency_survives_restart) {
  TempDir d;
  FakeClock clock;
  {
    Drainer dr(test_config(d.str()), cluster(4), nullptr, clock);
    ASSERT_TRUE(dr.open().ok());
    ASSERT_EQ(dr.ingest({good("gpu-0", "r1")})->accepted, 1);
  }
  Drainer dr(test_config(d.str()), cluster(4), nullptr, clock);
  ASSERT_TRUE(dr.open().ok());
  EXPECT_EQ(dr.ingest({good("gpu-0", "r1")})->duplicates, 1);
  EXPECT_EQ(dr.process_pending(), 1);  // the undecided report from before the restart
}

// Snapshots keep a digest per run id (run_ids.h); a snapshot written before that keeps the run
// ids themselves and still replays into the same window.
TEST(Drainer, idempotency_survives_a_snapshot_in_either_format) {
  TempDir d;
  FakeClock clock;
  {
    Drainer dr(test_config(d.str()), cluster(4), nullptr, clock);
    ASSERT_TRUE(dr.open().ok());
    ASSERT_EQ(dr.ingest({good("gpu-0", "r1")})->accepted, 1);
    ASSERT_EQ(dr.process_pending(), 1);
    ASSERT_TRUE(dr.snapshot_now().ok());
  }
  RunIdWindow w;
  w.add(RunIdWindow::digest("r1"));
  const std::string digests = R"("run_id_digests":{"gpu-0":")" + w.encode() + R"("})";
  {
    Drainer dr(test_config(d.str()), cluster(4), nullptr, clock);
    ASSERT_TRUE(dr.open().ok());
    EXPECT_EQ(dr.ingest({good("gpu-0", "r1")})->duplicates, 1);
  }
  ASSERT_EQ(rewrite_state(d.str(), "snapshot.json", digests, R"("seen_runs":{"gpu-0":["r1"]})"), 1);
  Drainer dr(test_config(d.str()), cluster(4), nullptr, clock);
  ASSERT_TRUE(dr.open().ok());
  EXPECT_EQ(dr.ingest({good("gpu-0", "r1")})->duplicates, 1);
  EXPECT_EQ(dr.ingest({good("gpu-0", "r2")})->accepted, 1);
}

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
  EXPECT_EQ(dr.node("gpu-2")->health, NodeHealth::kDrained);
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
  EXPECT_EQ(dr.node("gpu-1")->health, NodeHealth::kDrained);
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
    EXPECT_EQ(dr.node(n)->last_action, "drain_skipped") << n;
  }
  EXPECT_EQ(dr.node("gpu-0")->health, NodeHealth::kWarn);
  EXPECT_EQ(dr.node("gpu-1")->health, NodeHealth::kDrained);
  EXPECT_NE(dr.node("gpu-1")->note.find("admin: x"), std::string::npos);
  Drainer again(test_config(d.str()), slurm, nullptr, clock);
  ASSERT_TRUE(again.open().ok());
  EXPECT_FALSE(again.node("gpu-1")->drained_by_vigil);
  EXPECT_EQ(again.pending(SinkKind::kSlurm), 0u);
}

TEST(Drainer, decisions_reuse_a_young_slurm_view_and_the_sink_always_rereads) {
  TempDir d;
  FakeClock clock;
  auto slurm = cluster(4);
  auto cfg = test_config(d.str());
  cfg.slurm.view_max_age_s = 5;
  Drainer dr(cfg, slurm, nullptr, clock);
  ASSERT_TRUE(dr.open().ok());
  ASSERT_TRUE(dr.ingest({good("gpu-0", "a")}).ok());
  dr.process_pending();
  EXPECT_EQ(slurm->loads, 1);
  ASSERT_TRUE(dr.ingest({good("gpu-1", "a")}).ok());
  dr.process_pending();
  EXPECT_EQ(slurm->loads, 1);  // 0 s old: reused
  // An admin drains gpu-2 after that read; a failing report decided on the old view is
  // still checked against Slurm by the sink, which re-reads before acting.
  slurm->set("gpu-2", [](slurm::SlurmNodeInfo& n) {
    n.drain = true;
    n.reason = "admin: cable";
  });
  ASSERT_TRUE(dr.ingest({bad("gpu-2", "a"), bad("gpu-3", "a")}).ok());
  dr.process_pending();
  EXPECT_EQ(slurm->loads, 1);
  EXPECT_EQ(dr.run_slurm_sink_once(), 0);
  EXPECT_EQ(slurm->loads, 2);
  // Only the batch's nodes were asked for (the REST backend reads just those).
  EXPECT_EQ(slurm->last_named, (std::vector<std::string>{"gpu-2", "gpu-3"}));
  EXPECT_EQ(slurm->get("gpu-2").reason, "admin: cable");
  EXPECT_TRUE(slurm->get("gpu-3").drain);
  EXPECT_FALSE(dr.node("gpu-2")->drained_by_vigil);
  // The sink acted, so its read predates its own drain: the next pass reads again.
  ASSERT_TRUE(dr.ingest({good("gpu-0", "b")}).ok());
  dr.process_pending();
  EXPECT_EQ(slurm->loads, 3);
  // Older than view_max_age_s: read again.
  clock.advance(6);
  ASSERT_TRUE(dr.ingest({good("gpu-0", "c")}).ok());
  dr.process_pending();
  EXPECT_EQ(slurm->loads, 4);
}

// A table read while the sink's RPCs were under way predates them: it is used for that pass
// only and never remembered, so a later pass cannot take vigil's own fresh drain for one
// lifted outside vigil.
TEST(Drainer, a_slurm_view_read_while_the_sink_acted_is_not_reused) {
  TempDir d;
  FakeClock clock;
  auto slurm = cluster(2);
  Drainer dr(test_config(d.str()), slurm, nullptr, clock);
  ASSERT_TRUE(dr.open().ok());
  ASSERT_TRUE(dr.ingest({bad("gpu-0", "a")}).ok());
  dr.process_pending();  // drain intent for gpu-0, not applied yet
  clock.advance(10);     // the remembered view is too old now
  slurm->after_read = [&] { EXPECT_EQ(dr.run_slurm_sink_once(), 0); };  // drains gpu-0
  ASSERT_TRUE(dr.ingest({good("gpu-1", "a")}).ok());
  dr.process_pending();  // its read predates the drain
  ASSERT_TRUE(slurm->get("gpu-0").drain);
  const int loads = slurm->loads;
  ASSERT_TRUE(dr.ingest({bad("gpu-0", "b")}).ok());
  dr.process_pending();
  EXPECT_EQ(slurm->loads, loads + 1);  // read again, not the table from before the drain
  EXPECT_TRUE(dr.node("gpu-0")->drained_by_vigil) << dr.node("gpu-0")->note;
  EXPECT_EQ(dr.pending(SinkKind::kSlurm), 0u);
}

// Under a steady stream of reports a decision pass still ends: it decides what waited when it
// started, hands its intents to the sinks, and leaves later arrivals to the next pass. (A pass
// that ran until the queue was empty never ended in the soak bench: no drain went out and no
// snapshot was taken while reports kept coming.) The Slurm read of the pass is where 600 more
// reports arrive here, after the pass took its first chunk.
TEST(Drainer, a_pass_ends_under_a_steady_stream_of_reports_and_hands_over_its_intents) {
  TempDir d;
  FakeClock clock;
  auto slurm = cluster(8);
  Drainer dr(test_config(d.str()), slurm, nullptr, clock);
  ASSERT_TRUE(dr.open().ok());
  ASSERT_TRUE(dr.ingest({bad("gpu-0", "first"), bad("gpu-1", "first")}).ok());
  slurm->after_read = [&] {
    std::vector<NodeReport> more;
    for (int i = 0; i < 600; ++i)
      more.push_back(good("gpu-" + std::to_string(2 + i % 6), "later-" + std::to_string(i)));
    ASSERT_TRUE(dr.ingest(more).ok());
  };
  EXPECT_EQ(dr.process_pending(), 2);
  EXPECT_EQ(dr.undecided(), 600u);              // the next pass's work
  EXPECT_EQ(dr.pending(SinkKind::kSlurm), 2u);  // the drains are with the sink already
  EXPECT_EQ(dr.process_pending(), 600);
  EXPECT_EQ(dr.undecided(), 0u);
}

// A report from a name Slurm does not know is never drained, so repeated reports cannot count
// towards (and open) the breaker, which would block real drains everywhere.
TEST(Drainer, reports_from_a_node_unknown_to_slurm_never_count_towards_the_breaker) {
  TempDir d;
  FakeClock clock;
  auto slurm = cluster(2);
  auto cfg = test_config(d.str());
  cfg.breaker = {2, 100, 3600};
  Drainer dr(cfg, slurm, nullptr, clock);
  ASSERT_TRUE(dr.open().ok());
  for (const char* run : {"a", "b", "c"}) {
    ASSERT_TRUE(dr.ingest({bad("ghost-7", run)}).ok());
    dr.process_pending();
    dr.run_slurm_sink_once();
  }
  EXPECT_FALSE(dr.breaker().open);
  EXPECT_EQ(dr.node("ghost-7")->health, NodeHealth::kError);
  EXPECT_NE(dr.node("ghost-7")->note.find("Slurm has no node 'ghost-7'"), std::string::npos);
  ASSERT_TRUE(dr.ingest({bad("gpu-1", "a")}).ok());
  dr.process_pending();
  dr.run_slurm_sink_once();
  EXPECT_TRUE(slurm->get("gpu-1").drain);
}

TEST(Drainer, view_max_age_zero_reads_slurm_for_every_decision_pass) {
  TempDir d;
  FakeClock clock;
  auto slurm = cluster(2);
  auto cfg = test_config(d.str());
  cfg.slurm.view_max_age_s = 0;
  Drainer dr(cfg, slurm, nullptr, clock);
  ASSERT_TRUE(dr.open().ok());
  for (const char* run : {"a", "b", "c"}) {
    ASSERT_TRUE(dr.ingest({good("gpu-0", run)}).ok());
    dr.process_pending();
  }
  EXPECT_EQ(slurm->loads, 3);
}

TEST(Drainer, breaker_caps_a_bad_threshold_file_that_fails_every_node) {
  TempDir d;
  FakeClock clock;
  auto slurm = cluster(100);
  auto cfg = test_config(d.str());
  cfg.breaker = {5, 10, 3600};
  Drainer dr(cfg, slurm, nullptr, clock);
  ASSERT_TRUE(dr.open().ok());
  std::vector<NodeReport> rs;
  for (int i = 0; i < 100; ++i) rs.push_back(bad("gpu-" + std::to_string(i), "a"));
  ASSERT_TRUE(dr.ingest(rs).ok());
  dr.process_pending();
  dr.run_slurm_sink_once();
  int drained = 0;
  for (int i = 0; i < 100; ++i) drained += slurm->get("gpu-" + std::to_string(i)).drain;
  EXPECT_EQ(drained, 5);
  EXPECT_TRUE(dr.breaker().open);
  EXPECT_NE(dr.metrics_text().find("vigil_circuit_breaker_open 1"), std::string::npos);
  // Reset by the operator; survives restart as closed.
  ASSERT_TRUE(dr.reset_breaker().ok());
  EXPECT_FALSE(dr.breaker().open);
}

// A node whose report cannot tell its SKU (NVML broken) stays in its SKU's breaker group, and
// the group is sized as such: sized as the empty "unknown" group (one node, cap 1) while its
// drain counted under the known SKU, the breaker opened for the whole fleet.
TEST(Drainer, a_report_of_unknown_sku_is_sized_in_the_nodes_known_sku_group) {
  TempDir d;
  FakeClock clock;
  auto cfg = test_config(d.str());
  cfg.breaker = {10, 50, 3600};              // 50% of a group of 4: 2 drains
  Drainer dr(cfg, nullptr, nullptr, clock);  // no Slurm view: groups by SKU
  ASSERT_TRUE(dr.open().ok());
  std::vector<NodeReport> rs;
  for (int i = 0; i < 4; ++i) rs.push_back(good("gpu-" + std::to_string(i), "a"));
  ASSERT_TRUE(dr.ingest(rs).ok());
  dr.process_pending();
  ASSERT_TRUE(dr.ingest({bad("gpu-0", "b")}).ok());
  dr.process_pending();
  ASSERT_EQ(dr.node("gpu-0")->last_action, "drain");
  NodeReport unknown = bad("gpu-1", "b");
  unknown.sku = "unknown";
  ASSERT_TRUE(dr.ingest({unknown}).ok());
  dr.process_pending();
  EXPECT_EQ(dr.node("gpu-1")->sku, "h100-sxm-80gb");
  EXPECT_EQ(dr.node("gpu-1")->last_action, "drain") << dr.node("gpu-1")->note;
  EXPECT_FALSE(dr.breaker().open) << dr.breaker().why;
}

TEST(Drainer, breaker_state_survives_restart) {
  TempDir d;
  FakeClock clock;
  auto slurm = cluster(10);
  auto cfg = test_config(d.str());
  cfg.breaker = {1, 100, 3600};
  {
    Drainer dr(cfg, slurm, nullptr, clock);
    ASSERT_TRUE(dr.open().ok());
    ASSERT_TRUE(dr.ingest({bad("gpu-0", "a"), bad("gpu-1", "a")}).ok());
    dr.process_pending();
    ASSERT_TRUE(dr.breaker().open);
  }
  Drainer dr(cfg, slurm, nullptr, clock);
  ASSERT_TRUE(dr.open().ok());
  EXPECT_TRUE(dr.breaker().open);
}

// Journal lines that carry the breaker's whole state (with its list of drain times).
int journal_lines_with(const std::string& dir, const std::string& needle) {
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (!e.path().filename().string().starts_with("journal-")) continue;
    std::ifstream in(e.path());
    for (std::string line; std::getline(in, line);) n += line.find(needle) != std::string::npos;
  }
  return n;
}

TEST(Drainer, drains_counted_by_the_breaker_survive_restart_as_journaled_deltas) {
  TempDir d;
  FakeClock clock;
  auto slurm = cluster(10);
  auto cfg = test_config(d.str());
  cfg.breaker = {3, 100, 3600};
  {
    Drainer dr(cfg, slurm, nullptr, clock);
    ASSERT_TRUE(dr.open().ok());
    ASSERT_TRUE(dr.ingest({bad("gpu-0", "a"), bad("gpu-1", "a")}).ok());
    dr.process_pending();
    ASSERT_FALSE(dr.breaker().open);
    // Two drains counted, each journaled as one delta: no record repeats the window.
    EXPECT_EQ(journal_lines_with(d.str(), "\"breaker_drain\""), 2);
    EXPECT_EQ(journal_lines_with(d.str(), "recent_drains"), 0);
  }
  Drainer dr(cfg, slurm, nullptr, clock);
  ASSERT_TRUE(dr.open().ok());
  ASSERT_EQ(dr.breaker().recent_drains.size(), 1u);
  EXPECT_EQ(dr.breaker().recent_drains.begin()->second.size(), 2u);
  // The cap is 3: after the restart one more drain fits, the next one opens the breaker.
  ASSERT_TRUE(dr.ingest({bad("gpu-2", "a"), bad("gpu-3", "a")}).ok());
  dr.process_pending();
  EXPECT_TRUE(dr.node("gpu-2")->drained_by_vigil);
  EXPECT_FALSE(dr.node("gpu-3")->drained_by_vigil);
  EXPECT_TRUE(dr.breaker().open);
  EXPECT_EQ(journal_lines_with(d.str(), "recent_drains"), 1);  // the opening, whole
}

TEST(Drainer, replayed_breaker_drains_leave_the_window_when_they_age_out) {
  TempDir d;
  FakeClock clock;
  auto slurm = cluster(10);
  auto cfg = test_config(d.str());
  cfg.breaker = {2, 100, 600};
  {
    Drainer dr(cfg, slurm, nullptr, clock);
    ASSERT_TRUE(dr.open().ok());
    ASSERT_TRUE(dr.ingest({bad("gpu-0", "a")}).ok());
    dr.process_pending();
    clock.advance(400);
    ASSERT_TRUE(dr.ingest({bad("gpu-1", "a")}).ok());
    dr.process_pending();
    ASSERT_FALSE(dr.breaker().open);
  }
  clock.advance(300);  // gpu-0's drain is now outside the 600 s window, gpu-1's is not
  Drainer dr(cfg, slurm, nullptr, clock);
  ASSERT_TRUE(dr.open().ok());
  ASSERT_TRUE(dr.ingest({bad("gpu-2", "a"), bad("gpu-3", "a")}).ok());
  dr.process_pending();
  EXPECT_TRUE(dr.node("gpu-2")->drained_by_vigil);
  EXPECT_FALSE(dr.node("gpu-3")->drained_by_vigil);
  EXPECT_TRUE(dr.breaker().open);
}

// A fabric job's report carries only fabric_allreduce_ib; the node job's report the rest. Each
// replaces the series of its own checks and leaves the other's.
TEST(Drainer, a_report_replaces_the_metric_series_of_the_checks_it_carries_only) {
  TempDir d;
  FakeClock clock;
  auto slurm = cluster(2);
  Drainer dr(test_config(d.str()), slurm, nullptr, clock);
  ASSERT_TRUE(dr.open().ok());
  auto ecc_on = [](std::vector<int> gpus) {
    CheckResult c = make_check("nvml_ecc", Status::kPass, 0, 0);
    c.measurements.clear();
    for (int g : gpus) {
      Measurement m;
      m.name = "volatile_uncorrected_ecc";
      m.value = 0;
      m.unit = "count";
      m.gpu = g;
      c.measurements.push_back(m);
    }
    return c;
  };
  auto series = [&](const std::string& check, const std::string& gpu = "") {
    const std::string text = dr.metrics_text();
    std::string needle = "vigil_check_measurement_value{check=\"" + check + "\"";
    if (!gpu.empty()) needle += ",gpu=\"" + gpu + "\"";
    return text.find(needle) != std::string::npos;
  };
  ASSERT_TRUE(dr.ingest({make_report("gpu-0", "node-1", {ecc_on({0, 1})})}).ok());
  dr.process_pending();
  EXPECT_TRUE(series("nvml_ecc", "1"));
  CheckResult fabric = make_check("fabric_allreduce_ib", Status::kFail, 120, 330, "GB/s");
  ASSERT_TRUE(dr.ingest({make_report("gpu-0", "node-1-fabric", {fabric})}).ok());
  dr.process_pending();
  EXPECT_TRUE(series("fabric_allreduce_ib"));
  EXPECT_TRUE(series("nvml_ecc", "0"));  // the fabric report did not wipe the node's series
  EXPECT_TRUE(series("nvml_ecc", "1"));
  ASSERT_TRUE(dr.ingest({make_report("gpu-0", "node-2", {ecc_on({0})})}).ok());
  dr.process_pending();
  EXPECT_TRUE(series("nvml_ecc", "0"));
  EXPECT_FALSE(series("nvml_ecc", "1"));  // gone from the check's latest report: removed
  EXPECT_TRUE(series("fabric_allreduce_ib"));
}

// A fabric job's result with its switch evidence (checks/src/allreduce/fabric_job.h).
NodeReport fabric_report(const std::string& node, const std::string& run, const std::string& leaf,
                         bool suspected) {
  CheckResult c = make_check("fabric_allreduce_ib", suspected ? Status::kWarn : Status::kPass,
                             suspected ? 20 : 40, 30, "GB/s");
  c.measurements[0].name = "pair_busbw";
  c.measurements[0].port = "pair:other";
  if (suspected) {
    c.fault_code = "VIGIL-FABRIC-SWITCH";
    c.message = "switch " + leaf + " suspected";
  }
  Measurement m;
  m.name = "switch_suspected";
  m.value = suspected ? 1 : 0;
  m.unit = "bool";
  m.port = "switch:" + leaf;
  c.measurements.push_back(m);
  return make_report(node, run, {c});
}

TEST(Drainer,
     a_suspected_switch_is_exported_and_annotated_on_its_nodes_until_a_good_pair_clears_it) {
  TempDir d;
  FakeClock clock;
  auto slurm = cluster(7);
  auto kube = std::make_shared<FakeKube>();
  const std::string key = "vigil.dev/fabric-switch-suspect";
  auto gauge = [](const std::string& text, const std::string& leaf) -> std::string {
    const std::string needle = "vigil_fabric_switch_suspect{switch=\"" + leaf + "\"} ";
    auto at = text.find(needle);
    return at == std::string::npos ? "absent" : text.substr(at + needle.size(), 1);
  };
  {
    Drainer dr(test_config(d.str()), slurm, kube, clock);
    ASSERT_TRUE(dr.open().ok());
    // Job 1: gpu-6 is under leaf1 and had a good pair leaving it.
    ASSERT_TRUE(dr.ingest({fabric_report("gpu-6", "j1", "leaf1", false),
                           fabric_report("gpu-0", "j1", "leaf0", false)})
                    .ok());
    dr.process_pending();
    EXPECT_EQ(gauge(dr.metrics_text(), "leaf1"), "0");
    // Job 2 suspects leaf1 through gpu-2 and gpu-3; gpu-6, known under leaf1, takes the verdict.
    ASSERT_TRUE(dr.ingest({fabric_report("gpu-2", "j2", "leaf1", true),
                           fabric_report("gpu-3", "j2", "leaf1", true),
                           fabric_report("gpu-0", "j2", "leaf0", false),
                           fabric_report("gpu-4", "j2", "leaf2", false)})
                    .ok());
    dr.process_pending();
    EXPECT_EQ(dr.run_slurm_sink_once(), 0);
    EXPECT_EQ(dr.run_kube_sink_once(), 0);
    EXPECT_TRUE(slurm->calls_copy().empty()) << "a switch verdict never drains a node";
    const std::string text = dr.metrics_text();
    EXPECT_EQ(gauge(text, "leaf1"), "1");
    EXPECT_EQ(gauge(text, "leaf0"), "0");
    EXPECT_EQ(gauge(text, "leaf2"), "0");
    for (const char* n : {"gpu-2", "gpu-3", "gpu-6"}) {
      EXPECT_EQ(kube->annotations_of(n)[key], "leaf1") << n;
      EXPECT_TRUE(dr.node(n)->switch_suspect) << n;
    }
    EXPECT_EQ(kube->annotations_of("gpu-0").count(key), 0u);
    EXPECT_EQ(kube->annotations_of("gpu-4").count(key), 0u);
  }
  // The verdict survives a restart (journal replay) ...
  Drainer dr(test_config(d.str()), slurm, kube, clock);
  ASSERT_TRUE(dr.open().ok());
  EXPECT_EQ(gauge(dr.metrics_text(), "leaf1"), "1");
  EXPECT_TRUE(dr.node("gpu-6")->switch_suspect);
  EXPECT_EQ(dr.node("gpu-6")->fabric_switch, "leaf1");
  // ... and a later job with a good pair leaving leaf1 (from gpu-6) clears it on every node.
  ASSERT_TRUE(dr.ingest({fabric_report("gpu-6", "j3", "leaf1", false)}).ok());
  dr.process_pending();
  EXPECT_EQ(dr.run_kube_sink_once(), 0);
  EXPECT_EQ(gauge(dr.metrics_text(), "leaf1"), "0");
  for (const char* n : {"gpu-2", "gpu-3", "gpu-6"}) {
    EXPECT_EQ(kube->annotations_of(n).count(key), 0u) << n;
    EXPECT_FALSE(dr.node(n)->switch_suspect) << n;
  }
  // A report without switch evidence (the node job) leaves the verdict alone.
  ASSERT_TRUE(dr.ingest({good("gpu-6", "node-1")}).ok());
  dr.process_pending();
  EXPECT_EQ(dr.node("gpu-6")->fabric_switch, "leaf1");
}

TEST(Drainer, dry_run_changes_nothing_in_slurm_but_annotates_would_drain) {
  TempDir d;
  FakeClock clock;
  auto slurm = cluster(4);
  auto kube = std::make_shared<FakeKube>();
  auto cfg = test_config(d.str());
  cfg.dry_run = true;
  Drainer dr(cfg, slurm, kube, clock);
  ASSERT_TRUE(dr.open().ok());
  ASSERT_TRUE(dr.ingest({bad("gpu-2", "a")}).ok());
  dr.process_pending();
  EXPECT_EQ(dr.run_slurm_sink_once(), 0);
  EXPECT_EQ(dr.run_kube_sink_once(), 0);
  EXPECT_TRUE(slurm->calls_copy().empty());
  EXPECT_EQ(kube->annotations_of("gpu-2")["vigil.dev/state"], "would-drain");
  EXPECT_NE(dr.metrics_text().find(
                R"(vigil_actions_total{action="drain",outcome="dry_run",sink="slurm"} 1)"),
            std::string::npos);
}

TEST(Drainer, kubernetes_annotations_follow_the_node_state) {
  TempDir d;
  FakeClock clock;
  auto kube = std::make_shared<FakeKube>();
  Drainer dr(test_config(d.str()), cluster(4), kube, clock);
  ASSERT_TRUE(dr.open().ok());
  ASSERT_TRUE(dr.ingest({bad("gpu-2", "a"), good("gpu-1", "a")}).ok());
  dr.process_pending();
  EXPECT_EQ(dr.run_kube_sink_once(), 0);
  auto a = kube->annotations_of("gpu-2");
  EXPECT_EQ(a["vigil.dev/state"], "drained");
  EXPECT_TRUE(a["vigil.dev/reason"].starts_with("vigil: "));
  EXPECT_EQ(a["vigil.dev/last-check"], "2026-11-21T10:01:00Z");
  auto failing = nlohmann::json::parse(a["vigil.dev/failing"]);
  ASSERT_EQ(failing.size(), 1u);
  EXPECT_EQ(failing[0]["check"], "nvml_ecc");
  EXPECT_EQ(failing[0]["value"], 2);
  auto h = kube->annotations_of("gpu-1");
  EXPECT_EQ(h["vigil.dev/state"], "healthy");
  EXPECT_EQ(h.count("vigil.dev/reason"), 0u);
  EXPECT_EQ(kube->conditions["gpu-2"].status, "False");
  EXPECT_EQ(kube->conditions["gpu-1"].status, "True");
}

TEST(Drainer, optional_taint_is_set_while_drained_and_removed_on_resume) {
  TempDir d;
  FakeClock clock;
  auto slurm = cluster(4);
  auto kube = std::make_shared<FakeKube>();
  auto cfg = test_config(d.str());
  cfg.kubernetes.taint = true;
  Drainer dr(cfg, slurm, kube, clock);
  ASSERT_TRUE(dr.open().ok());
  ASSERT_TRUE(dr.ingest({bad("gpu-2", "a"), good("gpu-1", "a")}).ok());
  dr.process_pending();
  dr.run_slurm_sink_once();
  EXPECT_EQ(dr.run_kube_sink_once(), 0);
  ASSERT_EQ(kube->taints["gpu-2"].count("vigil.dev/unhealthy"), 1u);
  EXPECT_EQ(kube->taints["gpu-2"]["vigil.dev/unhealthy"].effect, "NoSchedule");
  EXPECT_EQ(kube->taints["gpu-1"].count("vigil.dev/unhealthy"), 0u);
  for (const char* run : {"b", "c"}) {
    ASSERT_TRUE(dr.ingest({good("gpu-2", run)}).ok());
    dr.process_pending();
    dr.run_slurm_sink_once();
    dr.run_kube_sink_once();
  }
  EXPECT_FALSE(slurm->get("gpu-2").drain);
  EXPECT_EQ(kube->taints["gpu-2"].count("vigil.dev/unhealthy"), 0u);
}

TEST(Drainer, a_failing_kubernetes_api_never_blocks_slurm) {
  TempDir d;
  FakeClock clock;
  auto slurm = cluster(4);
  auto kube = std::make_shared<FakeKube>();
  kube->fail = true;
  Drainer dr(test_config(d.str()), slurm, kube, clock);
  ASSERT_TRUE(dr.open().ok());
  dr.start();
  ASSERT_TRUE(dr.ingest({bad("gpu-2", "a")}).ok());
  for (int i = 0; i < 100 && !slurm->get("gpu-2").drain; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_TRUE(slurm->get("gpu-2").drain);
  EXPECT_EQ(dr.pending(SinkKind::kKubernetes), 1u);
  kube->fail = false;
  for (int i = 0; i < 100 && dr.pending(SinkKind::kKubernetes); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(dr.pending(SinkKind::kKubernetes), 0u);
  EXPECT_EQ(kube->annotations_of("gpu-2")["vigil.dev/state"], "drained");
  dr.stop();
}

TEST(Drainer, process_pending_returns_only_once_what_was_accepted_is_decided) {
  // The processor thread (start) races a caller for the queue. Here it is caught holding the
  // report, halfway through its pass (reading Slurm's node table): the caller's process_pending
  // must wait for that pass, not return with the report undecided. Without the pass lock this
  // was a rare failure of the hook's spool tests; here it fails every time.
  TempDir d;
  FakeClock clock;
  auto slurm = cluster(4);
  Drainer dr(test_config(d.str()), slurm, nullptr, clock);
  ASSERT_TRUE(dr.open().ok());
  dr.start();
  std::atomic<bool> reading{false};
  {
    std::lock_guard lk(slurm->mu);  // the tick thread may read Slurm meanwhile
    slurm->after_read = [&] {
      reading = true;
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
    };
  }
  ASSERT_TRUE(dr.ingest({bad("gpu-2", "a")}).ok());
  for (int i = 0; i < 500 && !reading; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_TRUE(reading);
  dr.process_pending();
  auto st = dr.node("gpu-2");
  ASSERT_TRUE(st);
  EXPECT_EQ(st->last_run_id, "a");
  dr.stop();
}

TEST(Drainer, kubernetes_node_from_report_or_pod_lookup) {
  TempDir d;
  FakeClock clock;
  auto kube = std::make_shared<FakeKube>();
  kube->pods["slurm/gpu-1"] = "k8s-worker-7";
  auto cfg = test_config(d.str());
  cfg.kubernetes.node_mapping = NodeMapping::kPodLookup;
  cfg.kubernetes.pod_namespace = "slurm";
  {
    Drainer dr(cfg, cluster(4), kube, clock);
    ASSERT_TRUE(dr.open().ok());
    ASSERT_TRUE(dr.ingest({good("gpu-1", "a")}).ok());
    dr.process_pending();
    dr.run_kube_sink_once();
    EXPECT_EQ(kube->annotations_of("k8s-worker-7")["vigil.dev/state"], "healthy");
  }
  TempDir d2;
  cfg.state_dir = d2.str();
  cfg.kubernetes.node_mapping = NodeMapping::kReport;
  Drainer dr(cfg, cluster(4), kube, clock);
  ASSERT_TRUE(dr.open().ok());
  auto r = good("gpu-0", "a");
  r.k8s_node = "k8s-worker-0";
  ASSERT_TRUE(dr.ingest({r}).ok());
  dr.process_pending();
  dr.run_kube_sink_once();
  EXPECT_EQ(kube->annotations_of("k8s-worker-0")["vigil.dev/state"], "healthy");
}

TEST(Drainer, stale_nodes_are_marked_not_drained) {
  TempDir d;
  FakeClock clock;
  auto slurm = cluster(4);
  auto kube = std::make_shared<FakeKube>();
  auto cfg = test_config(d.str());
  cfg.policy.staleness_s = 3600;
  Drainer dr(cfg, slurm, kube, clock);
  ASSERT_TRUE(dr.open().ok());
  ASSERT_TRUE(dr.ingest({good("gpu-0", "a")}).ok());
  dr.process_pending();
  clock.advance(3601);
  EXPECT_EQ(dr.tick(), 1);
  dr.run_kube_sink_once();
  EXPECT_EQ(dr.node("gpu-0")->health, NodeHealth::kStale);
  EXPECT_EQ(kube->annotations_of("gpu-0")["vigil.dev/state"], "stale");
  EXPECT_TRUE(slurm->calls_copy().empty());
  EXPECT_NE(dr.metrics_text().find(R"(vigil_node_report_age_seconds{node="gpu-0"} 3601)"),
            std::string::npos);
}

TEST(Drainer, operator_resume_and_snapshot_restart) {
  TempDir d;
  FakeClock clock;
  auto slurm = cluster(4);
  auto cfg = test_config(d.str());
  cfg.snapshot_every = 3;
  {
    Drainer dr(cfg, slurm, nullptr, clock);
    ASSERT_TRUE(dr.open().ok());
    ASSERT_TRUE(dr.ingest({bad("gpu-2", "a")}).ok());
    dr.process_pending();
    dr.run_slurm_sink_once();
    ASSERT_TRUE(dr.snapshot_now().ok());
    EXPECT_FALSE(dr.resume("gpu-9").ok());
    auto r = dr.resume("gpu-2");
    ASSERT_TRUE(r.ok()) << r.error().to_string();
    dr.run_slurm_sink_once();
    EXPECT_FALSE(slurm->get("gpu-2").drain);
  }
  Drainer dr(cfg, slurm, nullptr, clock);
  ASSERT_TRUE(dr.open().ok());
  EXPECT_FALSE(dr.node("gpu-2")->drained_by_vigil);
  EXPECT_EQ(dr.pending(SinkKind::kSlurm), 0u);
}

// Replaces `from` by `to` in every file of dir whose name starts with prefix; returns how often.
int rewrite_state(const std::string& dir, const std::string& prefix, const std::string& from,
                  const std::string& to) {
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (!e.path().filename().string().starts_with(prefix)) continue;
    std::string text;
    {
      std::ifstream in(e.path());
      text.assign(std::istreambuf_iterator<char>(in), {});
    }
    for (size_t at = 0; (at = text.find(from, at)) != std::string::npos; at += to.size(), ++n)
      text.replace(at, from.size(), to);
    std::ofstream(e.path(), std::ios::trunc) << text;
  }
  return n;
}

// The journal spells intents as strings; one this build does not know stops startup with an
// error that names it and where it is, instead of being read as some default sink or action.
TEST(Drainer, an_unknown_intent_spelling_in_the_state_dir_stops_replay) {
  FakeClock clock;
  auto slurm = cluster(4);
  for (const char* where : {"journal-", "snapshot.json"}) {
    TempDir d;
    {
      Drainer dr(test_config(d.str()), slurm, nullptr, clock);
      ASSERT_TRUE(dr.open().ok());
      ASSERT_TRUE(dr.ingest({bad("gpu-1", "a")}).ok());
      dr.process_pending();
      if (std::string(where) == "snapshot.json") {
        ASSERT_TRUE(dr.snapshot_now().ok());
      }
    }
    {  // written with the same strings as ever: it replays
      Drainer dr(test_config(d.str()), slurm, nullptr, clock);
      ASSERT_TRUE(dr.open().ok()) << where;
      ASSERT_EQ(dr.pending(SinkKind::kSlurm), 1u) << where;
      EXPECT_EQ(dr.pending_intents().front().action, IntentAction::kDrain) << where;
    }
    ASSERT_EQ(rewrite_state(d.str(), where, R"("sink":"slurm")", R"("sink":"pagerduty")"), 1)
        << where;
    Drainer dr(test_config(d.str()), slurm, nullptr, clock);
    auto o = dr.open();
    ASSERT_FALSE(o.ok()) << where;
    EXPECT_NE(o.error().to_string().find("unknown intent sink 'pagerduty'"), std::string::npos)
        << o.error().to_string();
    EXPECT_NE(o.error().to_string().find("replay("), std::string::npos) << o.error().to_string();
    EXPECT_FALSE(dr.ready());
  }
}

TEST(Drainer, spool_dir_is_ingested_and_bad_files_set_aside) {
  TempDir d, spool;
  FakeClock clock;
  Drainer dr(test_config(d.str()), cluster(4), nullptr, clock);
  ASSERT_TRUE(dr.open().ok());
  std::ofstream(spool / "gpu-0-a.json") << to_json(good("gpu-0", "a")).dump();
  std::ofstream(spool / "junk.json") << "{not json";
  auto n = dr.ingest_dir(spool.str());
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(n.value(), 1);
  EXPECT_FALSE(std::filesystem::exists(spool / "gpu-0-a.json"));
  EXPECT_TRUE(std::filesystem::exists(spool / "rejected/junk.json"));
  EXPECT_EQ(dr.process_pending(), 1);
}

// A Slurm stand-in whose state lives in a file, so it survives the kill -9 of the drainer.
class FileSlurm : public slurm::SlurmApi {
 public:
  FileSlurm(std::string path, int nodes) : path_(std::move(path)), nodes_(nodes) {}
  std::map<std::string, std::pair<int, std::string>> read() const {  // node -> (drains, reason)
    std::map<std::string, std::pair<int, std::string>> m;
    std::ifstream in(path_);
    std::string op, node, reason;
    while (in >> op >> node && std::getline(in, reason)) {
      auto& e = m[node];
      if (op == "drain") {
        e.first++;
        e.second = reason.substr(1);
      } else {
        e.second.clear();
      }
    }
    return m;
  }
  Result<std::vector<slurm::SlurmNodeInfo>> load_nodes() override {
    auto m = read();
    std::vector<slurm::SlurmNodeInfo> v;
    for (int i = 0; i < nodes_; ++i) {
      slurm::SlurmNodeInfo n;
      n.name = "n" + std::to_string(i);
      n.partitions = {"gpu"};
      if (auto it = m.find(n.name); it != m.end() && !it->second.second.empty()) {
        n.drain = true;
        n.reason = it->second.second;
      }
      v.push_back(n);
    }
    return v;
  }
  VoidResult drain(const std::vector<std::string>& ns, const std::string& reason) override {
    std::ofstream out(path_, std::ios::app);
    for (const auto& n : ns) out << "drain " << n << " " << reason << "\n";
    return ok_result();
  }
  VoidResult undrain(const std::vector<std::string>& ns) override {
    std::ofstream out(path_, std::ios::app);
    for (const auto& n : ns) out << "undrain " << n << " -\n";
    return ok_result();
  }

 private:
  std::string path_;
  int nodes_;
};

TEST(Drainer, kill_9_at_any_moment_loses_no_report_and_repeats_no_drain) {
  constexpr int kNodes = 400;
  for (int round = 0; round < 4; ++round) {
    TempDir d;
    const std::string slurm_log = d / "slurm.log";
    auto cfg = test_config(d / "state");
    cfg.kubernetes.enabled = false;
    cfg.snapshot_every = 50;  // snapshots happen during the run too
    int fds[2];
    ASSERT_EQ(::pipe(fds), 0);
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ::close(fds[0]);
      SystemClock clock;
      Drainer dr(cfg, std::make_shared<FileSlurm>(slurm_log, kNodes), nullptr, clock);
      if (!dr.open().ok()) ::_exit(3);
      for (int i = 0; i < kNodes; ++i) {
        if (!dr.ingest({bad("n" + std::to_string(i), "r")}).ok()) ::_exit(4);
        if (::write(fds[1], &i, sizeof i) != sizeof i) ::_exit(5);  // acknowledged (202)
        if (i % 3 == 0) {
          dr.process_pending();
          dr.run_slurm_sink_once();
          if (i % 50 == 0) (void)dr.snapshot_now();
        }
      }
      ::pause();
      ::_exit(0);
    }
    ::close(fds[1]);
    int last_ack = -1, v = 0;
    const int want = 30 + round * 90;
    while (last_ack < want && ::read(fds[0], &v, sizeof v) == sizeof v) last_ack = v;
    std::this_thread::sleep_for(std::chrono::microseconds(300 * round));
    ::kill(pid, SIGKILL);
    while (::read(fds[0], &v, sizeof v) == sizeof v) last_ack = v;
    int status = 0;
    ::waitpid(pid, &status, 0);
    ::close(fds[0]);
    ASSERT_TRUE(WIFSIGNALED(status)) << "child exited " << WEXITSTATUS(status);

    auto slurm = std::make_shared<FileSlurm>(slurm_log, kNodes);
    FakeClock clock;
    Drainer dr(cfg, slurm, nullptr, clock);
    auto o = dr.open();
    ASSERT_TRUE(o.ok()) << o.error().to_string();
    dr.process_pending();
    EXPECT_EQ(dr.run_slurm_sink_once(), 0);
    auto log = slurm->read();
    for (int i = 0; i <= last_ack; ++i) {
      const std::string n = "n" + std::to_string(i);
      auto s = dr.node(n);
      ASSERT_TRUE(s) << "lost acknowledged report of " << n << " (round " << round << ")";
      EXPECT_EQ(s->health, NodeHealth::kDrained) << n;
      ASSERT_TRUE(log.count(n)) << n << " never drained";
      EXPECT_EQ(log[n].first, 1) << n << " drained " << log[n].first << " times";
    }
    for (const auto& [n, e] : log) EXPECT_EQ(e.first, 1) << n;
  }
}

}  // namespace
}  // namespace vigil::drainer
