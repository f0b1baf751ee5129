// The GPU reset rung of the repair ladder (drainer/src/repair.cpp, docs/repair.md "GPU reset"):
// the drain's reason becomes "vigil: reset-gpu ..." for vigil-submit, the node's report entry
// gpu_reset decides (passed: re-check; refused or failed: the drain's own reason back and the
// reboot rung), a timeout or the rung turned off gives the reason back, and a relabel never
// touches a drain that is not Vigil's. Pure ladder steps first, then the whole rung through the
// drainer core and the Slurm sink on the fake Slurm.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "drainer_fixtures.h"
#include "ladder_fixture.h"
#include "vigil/base/time.h"
#include "vigil/drainer/breaker.h"
#include "vigil/drainer/drainer.h"
#include "vigil/drainer/repair.h"
#include "vigil/report/check_catalog.h"
#include "vigil/slurm/reason.h"
#include "vigil/slurm/slurm_api.h"

namespace vigil::drainer {
namespace {

constexpr int64_t kNow = 1'800'000'000;
constexpr const char* kReason = "vigil: remap gpu3 row remap pending (1)";
constexpr const char* kResetReason = "vigil: reset-gpu remap gpu3 row remap pending (1)";

RepairConfig resets(bool reboots) {
  RepairConfig c;
  c.reset_gpu = true;
  c.reboot = reboots;
  return c;
}

NodeRecord drained() {
  NodeRecord s;
  s.node = "gpu-2";
  s.drained_by_vigil = true;
  s.reason = kReason;
  s.repair.remedy = Remedy::kResetGpu;
  return s;
}

slurm::SlurmNodeInfo idle(const std::string& reason = kReason) {
  slurm::SlurmNodeInfo n;
  n.name = "gpu-2";
  n.state = "IDLE";
  n.drain = true;
  n.reason = reason;
  n.boot_time = kNow - 86400;
  return n;
}

std::optional<RepairStep> tick(NodeRecord& s, const slurm::SlurmNodeInfo& n, const RepairConfig& c,
                               int64_t now = kNow, RepairLoad load = {}) {
  return repair_tick(s, &n, true, c, load, BreakerState{}, false, now);
}

TEST(repair_reset, a_reset_fault_asks_for_a_gpu_reset_first_by_relabelling_the_drain) {
  NodeRecord s = drained();
  const auto step = tick(s, idle(), resets(true));
  ASSERT_TRUE(step);
  EXPECT_EQ(step->move, Action::kResetGpu);
  EXPECT_EQ(s.reason, kResetReason);
  EXPECT_EQ(s.repair.held_reason, kReason);
  EXPECT_EQ(s.repair.stage, RepairStage::kResetting);
  EXPECT_TRUE(s.repair.reset_tried);
  EXPECT_EQ(s.repair.resets, std::vector<int64_t>{kNow});
  EXPECT_TRUE(slurm::is_reset_gpu_reason(s.reason));
  EXPECT_EQ(reset_reason(kResetReason), kResetReason);  // never "reset-gpu reset-gpu"
  // The limits hold resets back as they hold reboots.
  NodeRecord held = drained();
  EXPECT_FALSE(tick(held, idle(), resets(true), kNow, RepairLoad{2, 0}));
  EXPECT_FALSE(tick(held, idle(), resets(true), kNow, RepairLoad{0, 10}));
}

TEST(repair_reset, a_reboot_fault_or_a_node_reset_too_often_goes_to_the_reboot_rung) {
  NodeRecord reboot = drained();
  reboot.repair.remedy = Remedy::kReboot;
  EXPECT_EQ(tick(reboot, idle(), resets(true))->move, Action::kReboot);
  NodeRecord often = drained();
  often.repair.resets = {kNow - 3 * 86400, kNow - 86400};  // max_resets_per_node 2 in 30 days
  EXPECT_EQ(tick(often, idle(), resets(true))->move, Action::kReboot);
  NodeRecord no_reboots = drained();
  no_reboots.repair.resets = often.repair.resets;
  EXPECT_FALSE(tick(no_reboots, idle(), resets(false)));  // waits drained, as before the ladder
}

TEST(repair_reset, no_reset_report_in_time_gives_the_reason_back_and_the_reboot_follows) {
  NodeRecord s = drained();
  ASSERT_TRUE(tick(s, idle(), resets(true)));
  EXPECT_FALSE(tick(s, idle(kResetReason), resets(true), kNow + 7200));
  const auto late = tick(s, idle(kResetReason), resets(true), kNow + 7201);
  ASSERT_TRUE(late);
  EXPECT_EQ(late->move, Action::kResetFailed);
  EXPECT_EQ(late->why, "no GPU reset report within 7200s");
  EXPECT_EQ(s.reason, kReason);
  EXPECT_EQ(s.repair.stage, RepairStage::kNone);
  EXPECT_EQ(tick(s, idle(), resets(true), kNow + 7202)->move, Action::kReboot);
}

TEST(repair_reset, turning_the_rung_off_gives_the_reason_back_but_never_touches_a_foreign_drain) {
  for (bool dry_run : {false, true}) {
    NodeRecord s = drained();
    ASSERT_TRUE(tick(s, idle(), resets(false)));
    RepairConfig off = resets(false);
    off.reset_gpu = dry_run;
    const auto step = repair_tick(s, nullptr, false, off, {}, {}, dry_run, kNow + 1);
    EXPECT_FALSE(step);  // no Slurm table: wait, the reason must come back
    const auto back = idle(kResetReason);
    const auto undone = repair_tick(s, &back, true, off, {}, {}, dry_run, kNow + 2);
    ASSERT_TRUE(undone);
    EXPECT_EQ(undone->move, Action::kResetFailed);
    EXPECT_EQ(s.reason, kReason);
  }
  NodeRecord s = drained();
  ASSERT_TRUE(tick(s, idle(), resets(false)));
  const auto admin = idle("bad dimm, ticket 42");
  EXPECT_EQ(tick(s, admin, resets(false), kNow + 1)->move, Action::kNone);
}

TEST(repair_reset, an_adopted_reset_label_without_a_reset_in_progress_gets_its_own_text_back) {
  NodeRecord s = drained();
  s.repair.remedy.reset();
  s.reason = kResetReason;  // adopted from Slurm: the state dir was lost mid-reset
  const auto step = tick(s, idle(kResetReason), RepairConfig{});  // even with the ladder off
  ASSERT_TRUE(step);
  EXPECT_EQ(step->move, Action::kResetFailed);
  EXPECT_EQ(s.reason, kReason);
  NodeRecord dry = drained();
  dry.reason = kResetReason;
  const auto n = idle(kResetReason);
  EXPECT_FALSE(repair_tick(dry, &n, true, resets(true), {}, {}, /*dry_run=*/true, kNow));
}

TEST(repair_reset, turning_reboots_off_ends_the_reboot_stages_but_not_a_resets_recheck) {
  NodeRecord rebooting = drained();
  rebooting.repair.stage = RepairStage::kRebooting;
  EXPECT_EQ(tick(rebooting, idle(), resets(false))->move, Action::kNone);
  NodeRecord after_reset = drained();
  after_reset.repair.stage = RepairStage::kRechecking;
  after_reset.repair.since_unix = kNow;
  after_reset.repair.via_reset = true;
  EXPECT_FALSE(tick(after_reset, idle(), resets(false)));
}

TEST(repair_reset, the_state_round_trips) {
  NodeRecord s = drained();
  ASSERT_TRUE(tick(s, idle(), resets(true)));
  auto back = repair_state_from_json(to_json(s.repair));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->stage, RepairStage::kResetting);
  EXPECT_EQ(back->held_reason, kReason);
  EXPECT_TRUE(back->reset_tried);
  EXPECT_EQ(back->resets, s.repair.resets);
  s.repair.bug_report = "/var/lib/vigil/evidence/gpu-2.log.gz";
  EXPECT_EQ(repair_state_from_json(to_json(s.repair))->bug_report, s.repair.bug_report);
  NodeEvent e = state_event(s, Action::kResetGpu);
  auto parsed = node_event_from_json(to_json(e));
  ASSERT_TRUE(parsed.ok()) << parsed.error().to_string();
  EXPECT_EQ(parsed->bug_report, s.repair.bug_report);
  // After the node is resumed only the reset history is left: snapshots keep it (the per-node
  // limit survives a restart).
  NodeRecord resumed;
  resumed.node = "gpu-2";
  resumed.repair.resets = {kNow};
  auto node = node_record_from_json(to_json(resumed));
  ASSERT_TRUE(node.ok()) << node.error().to_string();
  EXPECT_EQ(node->repair.resets, std::vector<int64_t>{kNow});
}

// ---- the whole rung through the core -------------------------------------------------------

class ResetRung : public testing::LadderTest {
 protected:
  void SetUp() override {
    LadderTest::SetUp();
    cfg_.repair = resets(true);
  }
  // What `vigil-check repair reset-gpu` reports.
  NodeReport reset_report(const std::string& node, const std::string& run, Status status) {
    CheckResult c;
    c.check = std::string(kGpuResetResult);
    c.status = status;
    c.message = status == Status::kPass ? "reset 8 GPUs; all back" : "GPU busy: gpu1 pid 7";
    if (status == Status::kPass) c.evidence = "/var/lib/vigil/evidence/" + node + ".log.gz";
    NodeReport r = testing::ecc_pass_report(node, run);
    r.checks = {c};
    return at_now(r);
  }
  std::string reason(const std::string& node) { return slurm_->get(node).reason; }
};

TEST_F(ResetRung, a_passed_reset_resumes_after_its_recheck_a_refused_one_reboots) {
  ASSERT_TRUE(slurm_->drain({"gpu-3"}, "bad dimm, ticket 42").ok());  // an admin's
  Drainer dr(cfg_, slurm_, nullptr, clock_);
  ASSERT_TRUE(dr.open().ok());
  decide(dr, {remap_fail("gpu-1", "a"), remap_fail("gpu-2", "a"), remap_fail("gpu-3", "a")});
  const std::string own = reason("gpu-1");
  EXPECT_EQ(own, "vigil: nvml_ecc nvml_ecc failed");

  EXPECT_EQ(dr.tick(), 2);  // both ask for a reset (max_in_repair 2)
  dr.run_slurm_sink_once();
  EXPECT_EQ(reason("gpu-1"), "vigil: reset-gpu nvml_ecc nvml_ecc failed");
  EXPECT_EQ(reason("gpu-2"), "vigil: reset-gpu nvml_ecc nvml_ecc failed");
  EXPECT_EQ(reason("gpu-3"), "bad dimm, ticket 42");
  EXPECT_EQ(dr.node("gpu-1")->repair.stage, RepairStage::kResetting);
  const NodeReport stale = pass("gpu-1", "old");  // started before the reset
  clock_.advance(60);

  decide(dr, {reset_report("gpu-1", "r1", Status::kPass)});
  EXPECT_EQ(dr.node("gpu-1")->last_action, Action::kResetPassed);
  EXPECT_EQ(dr.node("gpu-1")->repair.stage, RepairStage::kRechecking);
  EXPECT_EQ(reason("gpu-1"), own);  // back: vigil-submit re-checks without another reset
  EXPECT_TRUE(dr.node("gpu-1")->checks.count("nvml_ecc"));
  EXPECT_FALSE(dr.node("gpu-1")->checks.count(std::string(kGpuResetResult)));  // not a check
  // The bug report the reset kept on the node, in the state and every event until the episode
  // ends.
  EXPECT_EQ(dr.node("gpu-1")->repair.bug_report, "/var/lib/vigil/evidence/gpu-1.log.gz");
  EXPECT_EQ(state_event(*dr.node("gpu-1"), Action::kResetPassed).bug_report,
            "/var/lib/vigil/evidence/gpu-1.log.gz");
  decide(dr, {stale});
  EXPECT_EQ(dr.node("gpu-1")->note, "report from before the GPU reset; not counted");
  clock_.advance(1);
  decide(dr, {pass("gpu-1", "b")});
  decide(dr, {pass("gpu-1", "c")});
  EXPECT_FALSE(dr.node("gpu-1")->drained_by_vigil);
  EXPECT_FALSE(slurm_->get("gpu-1").drain);
  EXPECT_NE(dr.node("gpu-1")->note.find("after a GPU reset (repaired)"), std::string::npos);
  EXPECT_TRUE(dr.node("gpu-1")->repair.bug_report.empty());  // the episode ended

  decide(dr, {reset_report("gpu-2", "r1", Status::kError)});  // busy: not reset
  EXPECT_EQ(dr.node("gpu-2")->last_action, Action::kResetFailed);
  EXPECT_EQ(reason("gpu-2"), own);
  clock_.advance(10);
  EXPECT_EQ(dr.tick(), 1);  // the reboot rung
  dr.run_slurm_sink_once();
  EXPECT_EQ(slurm_->calls_copy().back().op, "reboot");
  EXPECT_EQ(slurm_->calls_copy().back().reason, own);

  decide(dr, {reset_report("gpu-3", "r1", Status::kPass)});  // outside the ladder
  EXPECT_EQ(dr.node("gpu-3")->note, "GPU reset report outside the repair ladder; not counted");
  EXPECT_EQ(reason("gpu-3"), "bad dimm, ticket 42");
  const std::string m = dr.metrics_text();
  for (const char* line : {R"(vigil_repair_steps_total{step="reset_gpu"} 2)",
                           R"(vigil_repair_steps_total{step="reset_passed"} 1)",
                           R"(vigil_repair_steps_total{step="reset_failed"} 1)",
                           R"(vigil_repair_steps_total{step="repaired"} 1)"})
    EXPECT_NE(m.find(line), std::string::npos) << line;
  dr.stop();

  Drainer again(cfg_, slurm_, nullptr, clock_);  // the journal replays every new record
  ASSERT_TRUE(again.open().ok());
  EXPECT_EQ(again.node("gpu-2")->repair.stage, RepairStage::kRebooting);
  EXPECT_TRUE(again.node("gpu-2")->repair.reset_tried);
}

TEST_F(ResetRung, a_reset_report_from_before_the_request_does_not_answer_it) {
  Drainer dr(cfg_, slurm_, nullptr, clock_);
  ASSERT_TRUE(dr.open().ok());
  const NodeReport old = reset_report("gpu-1", "spooled", Status::kPass);  // an earlier episode
  clock_.advance(3600);
  decide(dr, {remap_fail("gpu-1", "a")});
  EXPECT_EQ(dr.tick(), 1);
  dr.run_slurm_sink_once();
  decide(dr, {old});
  EXPECT_EQ(dr.node("gpu-1")->repair.stage, RepairStage::kResetting);
  EXPECT_EQ(dr.node("gpu-1")->note,
            "GPU reset report from before the reset was asked for; not counted");
  dr.stop();
}

TEST_F(ResetRung, a_fault_back_after_the_reset_reboots_or_without_reboots_is_for_a_person) {
  for (bool reboots : {true, false}) {
    testing::TempDir d;
    auto cfg = cfg_;
    cfg.state_dir = d.str();
    cfg.repair = resets(reboots);
    auto slurm = testing::fake_cluster(2);
    slurm_ = slurm;
    Drainer dr(cfg, slurm, nullptr, clock_);
    ASSERT_TRUE(dr.open().ok());
    decide(dr, {remap_fail("gpu-1", "a")});
    EXPECT_EQ(dr.tick(), 1);
    dr.run_slurm_sink_once();
    clock_.advance(60);
    decide(dr, {reset_report("gpu-1", "r", Status::kPass)});
    clock_.advance(1);
    decide(dr, {remap_fail("gpu-1", "b")});  // the pending remap is still there
    if (reboots) {
      EXPECT_EQ(dr.node("gpu-1")->repair.stage, RepairStage::kNone);
      EXPECT_NE(dr.node("gpu-1")->note.find("; reboot next"), std::string::npos);
      clock_.advance(10);
      EXPECT_EQ(dr.tick(), 1);
      dr.run_slurm_sink_once();
      EXPECT_EQ(slurm->calls_copy().back().op, "reboot");
    } else {
      EXPECT_EQ(dr.node("gpu-1")->repair.stage, RepairStage::kReplace);
      EXPECT_EQ(reason("gpu-1"),
                "vigil: replace nvml_ecc nvml_ecc failed (fault back after GPU reset)");
    }
    dr.stop();
  }
}

TEST_F(ResetRung, a_node_resumed_by_an_admin_during_its_reset_is_never_drained_again) {
  Drainer dr(cfg_, slurm_, nullptr, clock_);
  ASSERT_TRUE(dr.open().ok());
  decide(dr, {remap_fail("gpu-1", "a")});
  EXPECT_EQ(dr.tick(), 1);
  ASSERT_TRUE(slurm_->undrain({"gpu-1"}).ok());  // before the relabel reaches Slurm
  dr.run_slurm_sink_once();
  EXPECT_FALSE(slurm_->get("gpu-1").drain);
  clock_.advance(7300);  // the reset's timeout would give the reason back: nothing to give
  dr.tick();
  dr.run_slurm_sink_once();
  EXPECT_FALSE(slurm_->get("gpu-1").drain);
  dr.stop();
}

}  // namespace
}  // namespace vigil::drainer
