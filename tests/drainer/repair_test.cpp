// The repair ladder, pure (drainer/src/repair.cpp): a Vigil-drained idle node with a reset or
// reboot remedy is rebooted once the limits and the breaker allow; the registration after the
// reboot moves it to re-checking; no return within the timeout, a service remedy and a repeat
// offender end in `replace`; it never touches a busy node, someone else's drain, or anything in
// dry-run or with reboots off.
#include "vigil/drainer/repair.h"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "drainer_fixtures.h"
#include "ladder_fixture.h"
#include "vigil/base/time.h"
#include "vigil/drainer/breaker.h"
#include "vigil/drainer/drainer.h"
#include "vigil/drainer/policy.h"
#include "vigil/slurm/slurm_api.h"

namespace vigil::drainer {
namespace {

constexpr int64_t kNow = 1'800'000'000;

RepairConfig on() {
  RepairConfig c;
  c.reboot = true;
  return c;
}

NodeRecord drained(std::optional<Remedy> remedy = Remedy::kResetGpu) {
  NodeRecord s;
  s.node = "gpu-2";
  s.drained_by_vigil = true;
  s.reason = "vigil: remap gpu3 row remap pending (1)";
  s.repair.remedy = remedy;
  return s;
}

slurm::SlurmNodeInfo idle_drained() {
  slurm::SlurmNodeInfo n;
  n.name = "gpu-2";
  n.state = "IDLE";
  n.drain = true;
  n.reason = "vigil: remap gpu3 row remap pending (1)";
  n.boot_time = kNow - 86400;
  return n;
}

std::optional<RepairStep> tick(NodeRecord& s, const slurm::SlurmNodeInfo* n,
                               const RepairConfig& c = on(), RepairLoad load = {},
                               BreakerState breaker = {}, bool dry_run = false,
                               int64_t now = kNow) {
  return repair_tick(s, n, /*view_read=*/n != nullptr, c, load, breaker, dry_run, now);
}

// A node in the `rebooting` stage: Vigil's drain, and the reboot rung taken.
NodeRecord rebooting() {
  NodeRecord s = drained();
  const auto n = idle_drained();
  const auto step = repair_tick(s, &n, true, on(), {}, {}, false, kNow);
  EXPECT_TRUE(step && step->move == Action::kReboot);
  return s;
}

// What Slurm shows once its ResumeTimeout ended the reboot: DOWN, its note appended to Vigil's
// reason; the drain kept (24.11, 26.05) or lifted (22.05). Measured: docs/repair.md.
slurm::SlurmNodeInfo reboot_timed_out_view(bool drain) {
  auto n = idle_drained();
  n.down = true;
  n.drain = drain;
  n.state = "DOWN";
  n.reason = "vigil: remap gpu3 row remap pending (1) : reboot issued : reboot timed out";
  return n;
}

TEST(repair, an_idle_node_vigil_drained_for_a_reset_fault_is_rebooted) {
  NodeRecord s = drained();
  const auto n = idle_drained();
  const auto step = tick(s, &n);
  ASSERT_TRUE(step);
  EXPECT_EQ(step->move, Action::kReboot);
  EXPECT_EQ(step->why, "reboot: reset_gpu fault, node idle");
  EXPECT_EQ(s.repair.stage, RepairStage::kRebooting);
  EXPECT_EQ(s.repair.since_unix, kNow);
  EXPECT_EQ(s.repair.reboots, std::vector<int64_t>{kNow});
  EXPECT_EQ(s.reason, "vigil: remap gpu3 row remap pending (1)");  // kept: the node stays Vigil's
}

TEST(repair, nothing_happens_with_reboots_off_in_dry_run_or_without_a_remedy) {
  const auto n = idle_drained();
  NodeRecord s = drained();
  EXPECT_FALSE(tick(s, &n, RepairConfig{}));  // off by default
  EXPECT_FALSE(tick(s, &n, on(), {}, {}, /*dry_run=*/true));
  NodeRecord none = drained(std::nullopt);  // a fault no reset or reboot is known to clear
  EXPECT_FALSE(tick(none, &n));
  EXPECT_EQ(s.repair.stage, RepairStage::kNone);
}

TEST(repair, a_busy_foreign_or_unknown_node_is_not_rebooted) {
  NodeRecord s = drained();
  EXPECT_FALSE(tick(s, nullptr));  // Slurm's view unknown: wait
  auto busy = idle_drained();
  busy.state = "MIXED";  // DRAINING: user jobs still run
  EXPECT_FALSE(tick(s, &busy));
  auto completing = idle_drained();
  completing.completing = true;  // a job's processes are still being cleaned up
  EXPECT_FALSE(tick(s, &completing));
  auto admin = idle_drained();
  admin.reason = "bad dimm, ticket 42";  // someone else's drain now
  EXPECT_FALSE(tick(s, &admin));
  auto down = idle_drained();
  down.down = true;
  down.state = "DOWN";
  EXPECT_FALSE(tick(s, &down));
  NodeRecord mine_not = drained();
  mine_not.drained_by_vigil = false;
  const auto n = idle_drained();
  EXPECT_FALSE(tick(mine_not, &n));
  EXPECT_EQ(s.repair.stage, RepairStage::kNone);
}

TEST(repair, the_limits_and_an_open_breaker_hold_reboots_back) {
  const auto n = idle_drained();
  NodeRecord s = drained();
  RepairConfig c = on();
  c.max_in_repair = 2;
  c.max_per_window = 3;
  EXPECT_FALSE(tick(s, &n, c, RepairLoad{2, 0}));
  EXPECT_FALSE(tick(s, &n, c, RepairLoad{0, 3}));
  BreakerState open;
  open.open = true;
  EXPECT_FALSE(tick(s, &n, c, {}, open));
  EXPECT_TRUE(tick(s, &n, c, RepairLoad{1, 2}));
}

TEST(repair, the_load_counts_nodes_in_the_ladder_and_reboots_in_the_window) {
  RepairConfig c = on();
  c.window_s = 3600;
  std::map<std::string, NodeRecord> nodes;
  nodes["a"].repair.stage = RepairStage::kRebooting;
  nodes["a"].repair.reboots = {kNow - 60};
  nodes["b"].repair.stage = RepairStage::kRechecking;
  nodes["b"].repair.reboots = {kNow - 7200, kNow - 100};  // one outside the window
  nodes["c"].repair.stage = RepairStage::kReplace;        // given up: not in repair
  const RepairLoad load = repair_load(nodes, c, kNow);
  EXPECT_EQ(load.in_repair, 2);
  EXPECT_EQ(load.started_in_window, 2);
}

TEST(repair, a_new_boot_time_moves_the_node_to_its_recheck) {
  NodeRecord s = drained();
  auto n = idle_drained();
  ASSERT_TRUE(tick(s, &n));
  n.state = "DOWN";  // slurmctld issued the reboot
  n.down = true;
  EXPECT_FALSE(tick(s, &n, on(), {}, {}, false, kNow + 5));
  n.state = "IDLE";  // slurmd registered again, with its old boot time (restart, no reboot)
  n.down = false;
  EXPECT_FALSE(tick(s, &n, on(), {}, {}, false, kNow + 10));
  n.boot_time = kNow + 20;
  const auto step = tick(s, &n, on(), {}, {}, false, kNow + 30);
  ASSERT_TRUE(step);
  EXPECT_EQ(step->move, Action::kRebooted);
  EXPECT_EQ(s.repair.stage, RepairStage::kRechecking);
  EXPECT_EQ(s.repair.booted_unix, kNow + 20);  // the node's clock, for the pre-reboot rule
  EXPECT_FALSE(tick(s, &n, on(), {}, {}, false, kNow + 40));  // the re-check decides now
}

TEST(repair, a_node_not_back_from_its_reboot_in_time_is_for_a_person) {
  NodeRecord s = drained();
  auto n = idle_drained();
  ASSERT_TRUE(tick(s, &n));
  n.down = true;
  n.state = "DOWN";
  EXPECT_FALSE(tick(s, &n, on(), {}, {}, false, kNow + 3600));
  const auto step = tick(s, &n, on(), {}, {}, false, kNow + 3601);
  ASSERT_TRUE(step);
  EXPECT_EQ(step->move, Action::kReplace);
  EXPECT_EQ(s.repair.stage, RepairStage::kReplace);
  EXPECT_EQ(s.reason,
            "vigil: replace remap gpu3 row remap pending (1) (not back from reboot within 3600s)");
}

TEST(repair, a_service_remedy_and_a_repeat_offender_go_straight_to_replace) {
  const auto n = idle_drained();
  NodeRecord service = drained(Remedy::kService);
  auto step = tick(service, &n);
  ASSERT_TRUE(step);
  EXPECT_EQ(step->move, Action::kReplace);
  EXPECT_EQ(service.reason, "vigil: replace remap gpu3 row remap pending (1) (remedy: service)");

  NodeRecord again = drained();
  again.repair.reboots = {kNow - 10 * 86400, kNow - 86400};  // 2 reboots in 30 days already
  step = tick(again, &n);
  ASSERT_TRUE(step);
  EXPECT_EQ(step->move, Action::kReplace);
  EXPECT_EQ(step->why, "repeat offender: 2 reboots in 30d");
  NodeRecord old = drained();
  old.repair.reboots = {kNow - 40 * 86400, kNow - 86400};  // one fell out of the window
  step = tick(old, &n);
  ASSERT_TRUE(step);
  EXPECT_EQ(step->move, Action::kReboot);
  EXPECT_EQ(old.repair.reboots, (std::vector<int64_t>{kNow - 86400, kNow}));
}

TEST(repair, replace_stays_replace_and_names_itself_once) {
  NodeRecord s = drained();
  mark_replace(s, "fault back after reboot", kNow);
  mark_replace(s, "again", kNow);
  EXPECT_EQ(s.reason,
            "vigil: replace remap gpu3 row remap pending (1) (fault back after reboot) (again)");
  const auto n = idle_drained();
  EXPECT_FALSE(tick(s, &n));
}

TEST(repair, a_pending_reboot_or_a_replace_reason_is_not_idle_for_the_ladder) {
  NodeRecord s = drained();
  auto pending = idle_drained();
  pending.reboot_pending = true;  // an admin's `scontrol reboot` already waits
  EXPECT_FALSE(tick(s, &pending));
  auto replace = idle_drained();
  replace.reason = "vigil: replace remap gpu3 (fault back after reboot)";
  EXPECT_FALSE(tick(s, &replace));
}

TEST(repair, a_node_resumed_by_someone_else_during_its_reboot_leaves_the_ladder) {
  NodeRecord s = drained();
  auto n = idle_drained();
  ASSERT_TRUE(tick(s, &n));
  n.drain = false;  // an admin resumed it
  n.reason.clear();
  const auto step = tick(s, &n, on(), {}, {}, false, kNow + 7200);  // past the timeout too
  ASSERT_TRUE(step);
  EXPECT_EQ(step->move, Action::kNone);
  EXPECT_EQ(s.repair.stage, RepairStage::kNone);
  EXPECT_EQ(s.reason, "vigil: remap gpu3 row remap pending (1)");  // never "replace"
}

// A held re-check (docs/recheck.md "The hold") lifts the drain for the seconds between its
// UNDRAIN and its allocation, inside reservation vigil-hold-<node>: that is not a drain someone
// lifted. Found on the local cluster: the drainer released the ladder there, adopted the drain
// again when it came back and rebooted the node a second time.
TEST(repair, a_node_undrained_inside_its_hold_keeps_its_stage) {
  NodeRecord s = drained();
  auto n = idle_drained();
  ASSERT_TRUE(tick(s, &n));
  n.boot_time = kNow + 60;  // back from the reboot
  ASSERT_EQ(tick(s, &n, on(), {}, {}, false, kNow + 120)->move, Action::kRebooted);
  ASSERT_EQ(s.repair.stage, RepairStage::kRechecking);
  n.drain = false;
  n.reason.clear();
  n.vigil_hold = true;  // vigil-hold-gpu-2 exists
  n.reserved = true;
  EXPECT_FALSE(tick(s, &n, on(), {}, {}, false, kNow + 130));
  EXPECT_EQ(s.repair.stage, RepairStage::kRechecking);
  // Without the hold, the same view is a drain someone lifted.
  n.vigil_hold = false;
  const auto step = tick(s, &n, on(), {}, {}, false, kNow + 140);
  ASSERT_TRUE(step);
  EXPECT_EQ(step->move, Action::kNone);
}

// Review W2: slurmctld marks a node DOWN "reboot timed out" when it is not back within
// ResumeTimeout (slurm.conf(5), default 60 s), and vigil-reboot's bug report alone may take 130 s.
// With a ResumeTimeout known to be shorter than that and a boot, the rung is refused once, said
// so, and the node waits for its re-checks; a long enough one reboots as before.
TEST(repair, a_resume_timeout_shorter_than_a_reboot_refuses_the_rung_once) {
  RepairConfig c = on();
  c.resume_timeout_s = 60;  // Slurm's default
  NodeRecord s = drained();
  const auto n = idle_drained();
  const auto step = tick(s, &n, c);
  ASSERT_TRUE(step);
  EXPECT_EQ(step->move, Action::kNone);
  EXPECT_NE(step->why.find("reboot refused: Slurm's ResumeTimeout (60 s) is shorter than the bug "
                           "report and a boot (730 s"),
            std::string::npos)
      << step->why;
  EXPECT_EQ(s.repair.stage, RepairStage::kNone);
  EXPECT_TRUE(s.repair.reboots.empty());
  EXPECT_FALSE(tick(s, &n, c)) << "said once, not on every tick";
  c.resume_timeout_s = 1800;
  NodeRecord t = drained();
  ASSERT_TRUE(tick(t, &n, c));
  EXPECT_EQ(t.repair.stage, RepairStage::kRebooting);
}

// Review W2/W15, measured on the local clusters with ReturnToService=2 (docs/repair.md "Slurm's
// own timeout"; reboot_timeout_slurm_test runs it on the real Slurm): a reboot past ResumeTimeout
// leaves the node DOWN with Vigil's reason + " : reboot issued : reboot timed out". On 24.11 and
// 26.05 the drain stays and the node registers IDLE+DRAIN: the ladder waits for it as for any
// reboot and re-checks it.
TEST(repair, a_reboot_slurm_timed_out_is_still_a_reboot_the_ladder_waits_for) {
  NodeRecord s = rebooting();
  auto n = reboot_timed_out_view(true);
  EXPECT_FALSE(tick(s, &n, on(), {}, {}, false, kNow + 60));  // drain still Vigil's: waiting
  EXPECT_EQ(s.repair.stage, RepairStage::kRebooting);
  // It registers again, IDLE+DRAIN (24.11, 26.05): back from its reboot, re-checked next.
  n.down = false;
  n.state = "IDLE";
  n.boot_time = kNow + 90;
  const auto back = tick(s, &n, on(), {}, {}, false, kNow + 100);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->move, Action::kRebooted);
  EXPECT_EQ(s.repair.stage, RepairStage::kRechecking);
  // One that never comes back is replaced at reboot_timeout_s, as any reboot.
  NodeRecord t = rebooting();
  auto m = reboot_timed_out_view(true);
  m.not_responding = true;
  const auto late = tick(t, &m, on(), {}, {}, false, kNow + 7200);
  ASSERT_TRUE(late);
  EXPECT_EQ(late->move, Action::kReplace);
}

// 22.05 lifts the drain with the timeout, and with ReturnToService=2 the node went back into
// service unchecked when it registered (measured). The ladder drains it again while it is DOWN,
// once, and then waits for it as for any reboot.
TEST(repair, a_reboot_timeout_that_lifted_the_drain_drains_the_down_node_again_once) {
  NodeRecord s = rebooting();
  auto n = reboot_timed_out_view(false);
  const auto step = tick(s, &n, on(), {}, {}, false, kNow + 40);
  ASSERT_TRUE(step);
  EXPECT_EQ(step->move, Action::kRedrain);
  EXPECT_NE(step->why.find("drained again while DOWN"), std::string::npos) << step->why;
  EXPECT_EQ(s.reason, "vigil: remap gpu3 row remap pending (1)");  // Vigil's own text
  EXPECT_EQ(s.repair.stage, RepairStage::kRebooting);
  EXPECT_TRUE(s.repair.redrained);
  EXPECT_FALSE(tick(s, &n, on(), {}, {}, false, kNow + 45)) << "asked once, not every tick";
  // The state survives a restart.
  auto again = vigil::drainer::repair_state_from_json(vigil::drainer::to_json(s.repair));
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->redrained);
  // Drained again, DOWN+DRAIN, it registers IDLE+DRAIN: re-checked next.
  n.drain = true;
  n.down = false;
  n.state = "IDLE";
  n.boot_time = kNow + 90;
  const auto back = tick(s, &n, on(), {}, {}, false, kNow + 100);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->move, Action::kRebooted);
  EXPECT_FALSE(s.repair.redrained);
}

// 22.05 with ReturnToService 0 or 1: drained again while DOWN, the node registers and Slurm keeps
// it DOWN+DRAIN with Vigil's own reason (Slurm's note went with the redrain): released to a
// person, never `replace` (found by review: it was replaced at reboot_timeout_s).
TEST(repair, a_redrained_node_that_registers_but_stays_down_is_released_not_replaced) {
  NodeRecord s = rebooting();
  auto n = reboot_timed_out_view(false);
  ASSERT_EQ(tick(s, &n, on(), {}, {}, false, kNow + 40)->move, Action::kRedrain);
  n.drain = true;
  n.reason = s.reason;                                        // the redrain's
  EXPECT_FALSE(tick(s, &n, on(), {}, {}, false, kNow + 50));  // still booting
  n.boot_time = kNow + 90;                                    // registered, still DOWN
  const auto step = tick(s, &n, on(), {}, {}, false, kNow + 7200);
  ASSERT_TRUE(step);
  EXPECT_EQ(step->move, Action::kNone) << step->why;
  EXPECT_EQ(s.reason.find("replace"), std::string::npos) << s.reason;
}

// With ReturnToService 0 or 1 a node Slurm set DOWN "reboot timed out" registers again and stays
// DOWN: no reboot of Vigil's is pending any more, so the ladder lets a person have it, never
// `replace` (the node is back; Slurm's timeout was too short).
TEST(repair, a_node_back_but_kept_down_by_slurms_reboot_timeout_is_released_not_replaced) {
  NodeRecord s = rebooting();
  auto n = reboot_timed_out_view(true);
  n.boot_time = kNow + 90;                                          // registered again
  const auto step = tick(s, &n, on(), {}, {}, false, kNow + 7200);  // past reboot_timeout_s too
  ASSERT_TRUE(step);
  EXPECT_EQ(step->move, Action::kNone);
  EXPECT_NE(step->why.find("Slurm keeps it DOWN"), std::string::npos) << step->why;
  EXPECT_EQ(s.repair.stage, RepairStage::kNone);
  EXPECT_EQ(s.reason.find("replace"), std::string::npos) << s.reason;
}

TEST(repair, an_unknown_slurm_view_never_times_a_reboot_out) {
  NodeRecord s = drained();
  const auto n = idle_drained();
  ASSERT_TRUE(tick(s, &n));
  EXPECT_FALSE(tick(s, nullptr, on(), {}, {}, false, kNow + 7200));  // slurmctld unreachable
  EXPECT_EQ(s.repair.stage, RepairStage::kRebooting);
}

TEST(repair, a_node_gone_from_a_readable_slurm_table_leaves_the_ladder) {
  NodeRecord s = drained();
  const auto n = idle_drained();
  ASSERT_TRUE(tick(s, &n));
  const auto step = repair_tick(s, nullptr, /*view_read=*/true, on(), {}, {}, false, kNow + 5);
  ASSERT_TRUE(step);
  EXPECT_EQ(step->move, Action::kNone);
  EXPECT_EQ(step->why, "node unknown to Slurm");
  EXPECT_EQ(s.repair.stage, RepairStage::kNone);
}

TEST(repair, a_recheck_that_never_comes_ends_in_replace) {
  NodeRecord s = drained();
  auto n = idle_drained();
  ASSERT_TRUE(tick(s, &n));
  n.boot_time = kNow + 60;
  ASSERT_EQ(tick(s, &n, on(), {}, {}, false, kNow + 90)->move, Action::kRebooted);
  EXPECT_FALSE(tick(s, &n, on(), {}, {}, false, kNow + 90 + 86400));
  const auto step = tick(s, &n, on(), {}, {}, false, kNow + 91 + 86400);
  ASSERT_TRUE(step);
  EXPECT_EQ(step->move, Action::kReplace);
  EXPECT_EQ(step->why, "no re-check within 86400s");
}

TEST(repair, turning_reboots_off_or_dry_run_on_releases_nodes_in_the_ladder) {
  for (bool dry : {false, true}) {
    NodeRecord s = drained();
    const auto n = idle_drained();
    ASSERT_TRUE(tick(s, &n));
    RepairConfig c = on();
    c.reboot = dry;
    const auto step = tick(s, &n, c, {}, {}, dry);
    ASSERT_TRUE(step) << dry;
    EXPECT_EQ(step->move, Action::kNone);
    EXPECT_EQ(s.repair.stage, RepairStage::kNone);
    EXPECT_FALSE(tick(s, &n, c, {}, {}, dry));  // and nothing after
  }
}

TEST(repair, the_node_returns_with_fresh_counters) {
  NodeRecord s = drained();
  s.checks["nvml_row_remap"].consecutive_fails = 3;
  s.checks["nvml_ecc"].consecutive_passes = 5;
  s.consecutive_fails = 3;
  auto n = idle_drained();
  ASSERT_TRUE(tick(s, &n));
  n.boot_time = kNow + 60;
  ASSERT_EQ(tick(s, &n, on(), {}, {}, false, kNow + 90)->move, Action::kRebooted);
  EXPECT_EQ(s.checks["nvml_row_remap"].consecutive_fails, 0);
  EXPECT_EQ(s.checks["nvml_ecc"].consecutive_passes, 0);
  EXPECT_EQ(s.consecutive_fails, 0);
}

TEST(repair, the_state_round_trips_and_an_unknown_stage_is_an_error) {
  RepairState r;
  r.stage = RepairStage::kRechecking;
  r.remedy = Remedy::kReboot;
  r.since_unix = kNow;
  r.reboots = {kNow - 5};
  const auto back = repair_state_from_json(to_json(r));
  ASSERT_TRUE(back.ok()) << back.error().to_string();
  EXPECT_EQ(back->stage, r.stage);
  EXPECT_EQ(back->remedy, r.remedy);
  EXPECT_EQ(back->since_unix, r.since_unix);
  EXPECT_EQ(back->reboots, r.reboots);
  auto j = to_json(r);
  j["stage"] = "reimaging";
  EXPECT_FALSE(repair_state_from_json(j).ok());
  j = to_json(r);
  j["remedy"] = "pray";
  EXPECT_FALSE(repair_state_from_json(j).ok());
}

TEST(repair, the_stronger_remedy_wins) {
  EXPECT_EQ(stronger(Remedy::kResetGpu, Remedy::kReboot), Remedy::kReboot);
  EXPECT_EQ(stronger(Remedy::kService, Remedy::kReboot), Remedy::kService);
  EXPECT_EQ(stronger(std::nullopt, Remedy::kResetGpu), Remedy::kResetGpu);
  EXPECT_EQ(stronger(Remedy::kResetGpu, std::nullopt), Remedy::kResetGpu);
}

// The whole ladder through the drainer core and the Slurm sink, on a fake Slurm that behaves as
// slurmctld 22.05 did on the local cluster (FakeSlurm::reboot): one node at a time
// (max_in_repair 1); gpu-1's reboot clears its fault and it is resumed; gpu-2's fault comes back
// and it is left for a person; gpu-3, drained by an admin, is never touched.
class RepairLadder : public testing::LadderTest {
 protected:
  void SetUp() override {
    LadderTest::SetUp();
    cfg_.repair = on();
    cfg_.repair.max_in_repair = 1;
  }
  std::vector<std::string> ops() {
    std::vector<std::string> out;
    for (const auto& c : slurm_->calls_copy())
      for (const auto& n : c.nodes) out.push_back(c.op + " " + n);
    return out;
  }
  // What 22.05 shows when a reboot outlasts ResumeTimeout: DOWN, the drain lifted, Vigil's reason
  // with Slurm's note (reboot_timeout_slurm_test measured it).
  void reboot_times_out(const std::string& node) {
    const std::string reason = slurm_->get(node).reason;
    slurm_->set(node, [&](slurm::SlurmNodeInfo& n) {
      n.down = true;
      n.drain = false;
      n.reboot_pending = false;
      n.state = "DOWN";
      n.reason = reason + " : reboot issued : reboot timed out";
    });
  }
};

TEST_F(RepairLadder, reboots_one_node_at_a_time_resumes_the_repaired_and_keeps_the_broken) {
  ASSERT_TRUE(slurm_->drain({"gpu-3"}, "bad dimm, ticket 42").ok());  // an admin's
  Drainer dr(cfg_, slurm_, nullptr, clock_);
  ASSERT_TRUE(dr.open().ok());
  decide(dr, {remap_fail("gpu-1", "a"), remap_fail("gpu-2", "a"), remap_fail("gpu-3", "a")});
  EXPECT_EQ(ops(), (std::vector<std::string>{"drain gpu-3", "drain gpu-1", "drain gpu-2"}));

  EXPECT_EQ(dr.tick(), 1);  // one reboot: max_in_repair 1
  dr.run_slurm_sink_once();
  const auto reboot = slurm_->calls_copy().back();
  EXPECT_EQ(reboot.op, "reboot");
  EXPECT_EQ(reboot.nodes, std::vector<std::string>{"gpu-1"});
  EXPECT_EQ(reboot.reason, "vigil: nvml_ecc nvml_ecc failed");  // Vigil's reason, kept
  EXPECT_EQ(dr.node("gpu-1")->repair.stage, RepairStage::kRebooting);
  EXPECT_EQ(dr.node("gpu-1")->last_action, Action::kReboot);
  clock_.advance(30);
  EXPECT_EQ(dr.tick(), 0);  // gpu-1 still down; gpu-2 waits its turn

  slurm_->finish_reboot("gpu-1", clock_.now_unix());
  clock_.advance(10);       // past the drainer's cached Slurm view (slurm.view_max_age_s 5)
  EXPECT_EQ(dr.tick(), 1);  // rebooted: now the re-check decides
  EXPECT_EQ(dr.node("gpu-1")->repair.stage, RepairStage::kRechecking);
  decide(dr, {pass("gpu-1", "b")});
  decide(dr, {pass("gpu-1", "c")});  // resume_after 2
  EXPECT_EQ(ops().back(), "undrain gpu-1");
  EXPECT_FALSE(dr.node("gpu-1")->drained_by_vigil);
  EXPECT_EQ(dr.node("gpu-1")->repair.stage, RepairStage::kNone);
  EXPECT_EQ(dr.node("gpu-1")->repair.reboots.size(), 1u);  // history for the repeat rule

  EXPECT_EQ(dr.tick(), 1);  // gpu-2's turn
  dr.run_slurm_sink_once();
  EXPECT_EQ(ops().back(), "reboot gpu-2");
  slurm_->finish_reboot("gpu-2", clock_.now_unix());
  clock_.advance(10);  // past the drainer's cached Slurm view (slurm.view_max_age_s 5)
  EXPECT_EQ(dr.tick(), 1);
  decide(dr, {remap_fail("gpu-2", "b")});  // the fault is back after the reboot
  const auto last = slurm_->calls_copy().back();
  EXPECT_EQ(last.op, "drain");
  EXPECT_EQ(last.reason, "vigil: replace nvml_ecc nvml_ecc failed (fault back after reboot)");
  EXPECT_EQ(dr.node("gpu-2")->repair.stage, RepairStage::kReplace);
  decide(dr, {pass("gpu-2", "c")});
  decide(dr, {pass("gpu-2", "d")});
  EXPECT_TRUE(dr.node("gpu-2")->drained_by_vigil);  // never resumed by Vigil
  EXPECT_EQ(dr.node("gpu-2")->note, "replace: stays drained until a person resumes it");
  clock_.advance(7200);
  EXPECT_EQ(dr.tick(), 0);

  for (const auto& c : slurm_->calls_copy()) EXPECT_NE(c.nodes.at(0) + c.op, "gpu-3reboot");
  EXPECT_EQ(slurm_->get("gpu-3").reason, "bad dimm, ticket 42");
  const std::string m = dr.metrics_text();
  for (const char* line :
       {R"(vigil_repair_steps_total{step="reboot"} 2)",
        R"(vigil_repair_steps_total{step="rebooted"} 2)",
        R"(vigil_repair_steps_total{step="repaired"} 1)",
        R"(vigil_repair_steps_total{step="replace"} 1)", R"(vigil_repair_nodes{stage="replace"} 1)",
        R"(vigil_repair_nodes{stage="rebooting"} 0)"})
    EXPECT_NE(m.find(line), std::string::npos) << line;
  dr.stop();

  // The ladder survives a restart: replayed from the journal, gpu-2 is still for a person.
  Drainer again(cfg_, slurm_, nullptr, clock_);
  ASSERT_TRUE(again.open().ok());
  EXPECT_EQ(again.node("gpu-2")->repair.stage, RepairStage::kReplace);
  EXPECT_EQ(again.node("gpu-1")->repair.reboots.size(), 1u);
}

// 22.05's reboot timeout through the core and the Slurm sink: slurmctld sets the rebooting node
// DOWN "reboot timed out" and lifts Vigil's drain (measured, reboot_timeout_slurm_test); the
// ladder drains the DOWN node again (the one DOWN node the sink drains) with Vigil's own reason,
// so it registers IDLE+DRAIN and is re-checked before any job.
TEST_F(RepairLadder, a_reboot_slurm_timed_out_and_undrained_is_drained_again_while_down) {
  Drainer dr(cfg_, slurm_, nullptr, clock_);
  ASSERT_TRUE(dr.open().ok());
  decide(dr, {remap_fail("gpu-1", "a")});
  EXPECT_EQ(dr.tick(), 1);
  dr.run_slurm_sink_once();
  ASSERT_EQ(ops().back(), "reboot gpu-1");
  reboot_times_out("gpu-1");
  clock_.advance(10);  // past the cached Slurm view
  EXPECT_EQ(dr.tick(), 1);
  dr.run_slurm_sink_once();
  EXPECT_EQ(ops().back(), "drain gpu-1");
  EXPECT_EQ(slurm_->get("gpu-1").reason, "vigil: nvml_ecc nvml_ecc failed");
  EXPECT_TRUE(slurm_->get("gpu-1").drain);
  EXPECT_EQ(dr.node("gpu-1")->repair.stage, RepairStage::kRebooting);
  clock_.advance(10);
  EXPECT_EQ(dr.tick(), 0);  // once
  // The node registers again IDLE+DRAIN; rebooted, its re-checks decide.
  slurm_->finish_reboot("gpu-1", clock_.now_unix());
  clock_.advance(10);
  EXPECT_EQ(dr.tick(), 1);
  EXPECT_EQ(dr.node("gpu-1")->repair.stage, RepairStage::kRechecking);
  decide(dr, {pass("gpu-1", "b")});
  decide(dr, {pass("gpu-1", "c")});
  EXPECT_EQ(ops().back(), "undrain gpu-1");
  // A redrain is its own step, and its own Slurm action.
  const std::string m = dr.metrics_text();
  for (const char* line : {R"(vigil_repair_steps_total{step="redrain"} 1)",
                           R"(vigil_actions_total{action="redrain",outcome="ok",sink="slurm"} 1)"})
    EXPECT_NE(m.find(line), std::string::npos) << line;
}

// The redrain is judged on the node as Slurm shows it when the intent goes out: an admin who
// resumed the DOWN node meanwhile (RESUME makes it IDLE and clears the reason) is not overruled,
// the drain's own bookkeeping is untouched (skipped, not "drain_skipped"), and the ladder lets go.
TEST_F(RepairLadder, a_redrain_of_a_node_an_admin_resumed_meanwhile_leaves_it_in_service) {
  Drainer dr(cfg_, slurm_, nullptr, clock_);
  ASSERT_TRUE(dr.open().ok());
  decide(dr, {remap_fail("gpu-1", "a")});
  EXPECT_EQ(dr.tick(), 1);
  dr.run_slurm_sink_once();
  reboot_times_out("gpu-1");
  clock_.advance(10);
  EXPECT_EQ(dr.tick(), 1);                             // the redrain, queued
  slurm_->set("gpu-1", [&](slurm::SlurmNodeInfo& n) {  // scontrol update state=resume
    n.down = false;
    n.state = "IDLE";
    n.reason.clear();
  });
  const size_t calls = slurm_->calls_copy().size();
  dr.run_slurm_sink_once();
  EXPECT_EQ(slurm_->calls_copy().size(), calls);  // nothing sent
  EXPECT_FALSE(slurm_->get("gpu-1").drain);
  EXPECT_NE(dr.node("gpu-1")->last_action, Action::kDrainSkipped);
  EXPECT_NE(dr.metrics_text().find(
                R"(vigil_actions_total{action="redrain",outcome="skipped",sink="slurm"} 1)"),
            std::string::npos);
  clock_.advance(10);
  EXPECT_EQ(dr.tick(), 1);  // released: the drain is no longer Vigil's
  EXPECT_EQ(dr.node("gpu-1")->repair.stage, RepairStage::kNone);
  dr.run_slurm_sink_once();
  EXPECT_EQ(slurm_->calls_copy().size(), calls);
}

// Only a redrain drains a DOWN node: an ordinary drain whose node Slurm shows DOWN from a
// timed-out reboot by the time it goes out is refused as for any DOWN node.
TEST_F(RepairLadder, an_ordinary_drain_never_drains_a_down_node) {
  Drainer dr(cfg_, slurm_, nullptr, clock_);
  ASSERT_TRUE(dr.open().ok());
  slurm_->reachable = false;  // decided without Slurm's view
  ASSERT_TRUE(dr.ingest({remap_fail("gpu-2", "a")}).ok());
  dr.process_pending();
  slurm_->reachable = true;
  slurm_->set("gpu-2", [](slurm::SlurmNodeInfo& n) {
    n.down = true;
    n.state = "DOWN";
    n.reason = "vigil: nvml_ecc : reboot issued : reboot timed out";
  });
  dr.run_slurm_sink_once();
  EXPECT_TRUE(slurm_->calls_copy().empty());
  EXPECT_FALSE(slurm_->get("gpu-2").drain);
  EXPECT_EQ(dr.node("gpu-2")->last_action, Action::kDrainSkipped);
}

TEST_F(RepairLadder, dry_run_and_reboots_off_touch_nothing) {
  for (bool dry : {true, false}) {
    testing::TempDir d;
    auto cfg = cfg_;
    cfg.state_dir = d.str();
    cfg.dry_run = dry;
    cfg.repair.reboot = dry;  // dry-run with reboots on; reboots off without dry-run
    auto slurm = testing::fake_cluster(2);
    Drainer dr(cfg, slurm, nullptr, clock_);
    ASSERT_TRUE(dr.open().ok());
    ASSERT_TRUE(dr.ingest({remap_fail("gpu-1", "a")}).ok());
    dr.process_pending();
    dr.run_slurm_sink_once();
    clock_.advance(60);
    EXPECT_EQ(dr.tick(), 0);
    dr.run_slurm_sink_once();
    for (const auto& c : slurm->calls_copy()) EXPECT_NE(c.op, "reboot") << dry;
    dr.stop();
  }
}

TEST_F(RepairLadder, a_reboot_slurm_refuses_is_retried_until_the_timeout_replaces_it) {
  slurm_->can_reboot = false;  // no RebootProgram in slurm.conf
  Drainer dr(cfg_, slurm_, nullptr, clock_);
  ASSERT_TRUE(dr.open().ok());
  decide(dr, {remap_fail("gpu-1", "a")});
  EXPECT_EQ(dr.tick(), 1);
  EXPECT_EQ(dr.run_slurm_sink_once(), 1);  // retried, like every Slurm call
  EXPECT_EQ(dr.pending(SinkKind::kSlurm), 1u);
  clock_.advance(cfg_.repair.reboot_timeout_s + 1);
  EXPECT_EQ(dr.tick(), 1);
  dr.run_slurm_sink_once();
  EXPECT_EQ(dr.node("gpu-1")->repair.stage, RepairStage::kReplace);
  EXPECT_EQ(slurm_->get("gpu-1").reason,
            "vigil: replace nvml_ecc nvml_ecc failed (not back from reboot within 3600s)");
  dr.stop();
}

// Evidence and visibility: the draining report is kept before the reboot, and the Node's
// annotations follow the ladder (rebooting, then rechecking) with the evidence file's path.
TEST_F(RepairLadder, the_draining_report_is_kept_and_the_stage_is_annotated) {
  auto kube = std::make_shared<testing::FakeKube>();
  Drainer dr(cfg_, slurm_, kube, clock_);
  ASSERT_TRUE(dr.open().ok());
  decide(dr, {remap_fail("gpu-1", "evidence-run")});
  const std::string evidence = dr.node("gpu-1")->repair.evidence;
  ASSERT_EQ(evidence.rfind(dir_.str() + "/evidence/gpu-1-", 0), 0u) << evidence;
  const auto doc = nlohmann::json::parse(std::ifstream(evidence));
  EXPECT_EQ(doc.at("report").at("run_id"), "evidence-run");
  EXPECT_EQ(doc.at("reason"), "vigil: nvml_ecc nvml_ecc failed");
  ASSERT_EQ(dr.tick(), 1);
  dr.run_kube_sink_once();
  auto a = kube->annotations_of("gpu-1");
  EXPECT_EQ(a["vigil.dev/repair"], "rebooting");
  EXPECT_EQ(a["vigil.dev/evidence"], evidence);
  dr.run_slurm_sink_once();
  slurm_->finish_reboot("gpu-1", clock_.now_unix());
  clock_.advance(10);
  ASSERT_EQ(dr.tick(), 1);
  dr.run_kube_sink_once();
  EXPECT_EQ(kube->annotations_of("gpu-1")["vigil.dev/repair"], "rechecking");
  decide(dr, {pass("gpu-1", "b")});
  decide(dr, {pass("gpu-1", "c")});
  dr.run_kube_sink_once();
  a = kube->annotations_of("gpu-1");
  EXPECT_EQ(a.count("vigil.dev/repair"), 0u);  // resumed: the ladder's annotations are removed
  EXPECT_EQ(a.count("vigil.dev/evidence"), 0u);
  dr.stop();
}

// A node that never comes back is DOWN+DRAIN: the replace still relabels Vigil's drain there.
TEST_F(RepairLadder, a_node_that_does_not_come_back_is_relabelled_replace_while_down) {
  Drainer dr(cfg_, slurm_, nullptr, clock_);
  ASSERT_TRUE(dr.open().ok());
  decide(dr, {remap_fail("gpu-1", "a")});
  ASSERT_EQ(dr.tick(), 1);
  dr.run_slurm_sink_once();
  ASSERT_TRUE(slurm_->get("gpu-1").down);
  clock_.advance(cfg_.repair.reboot_timeout_s + 10);
  ASSERT_EQ(dr.tick(), 1);
  dr.run_slurm_sink_once();
  EXPECT_EQ(slurm_->get("gpu-1").reason,
            "vigil: replace nvml_ecc nvml_ecc failed (not back from reboot within 3600s)");
  EXPECT_TRUE(dr.node("gpu-1")->drained_by_vigil);
  EXPECT_EQ(dr.node("gpu-1")->repair.stage, RepairStage::kReplace);
  dr.stop();
}

// After a crash that lost the reboot's done record, the replayed intent finds the node booted
// after the decision and is not sent again.
TEST_F(RepairLadder, a_reboot_replayed_after_a_crash_is_not_repeated) {
  {
    Drainer dr(cfg_, slurm_, nullptr, clock_);
    ASSERT_TRUE(dr.open().ok());
    decide(dr, {remap_fail("gpu-1", "a")});
    ASSERT_EQ(dr.tick(), 1);
    ASSERT_EQ(dr.pending(SinkKind::kSlurm), 1u);  // the reboot, not yet sent
    dr.stop();
  }
  // Someone else's reboot (or ours, before the crash) already brought the node back.
  clock_.advance(120);
  slurm_->finish_reboot("gpu-1", clock_.now_unix() - 60);
  Drainer again(cfg_, slurm_, nullptr, clock_);
  ASSERT_TRUE(again.open().ok());
  again.run_slurm_sink_once();
  for (const auto& c : slurm_->calls_copy()) EXPECT_NE(c.op, "reboot");
  EXPECT_EQ(again.pending(SinkKind::kSlurm), 0u);
  again.stop();
}

// The fault-back replace and a report that predates the reboot.
TEST_F(RepairLadder, a_report_from_before_the_reboot_neither_replaces_nor_resumes) {
  Drainer dr(cfg_, slurm_, nullptr, clock_);
  ASSERT_TRUE(dr.open().ok());
  const NodeReport old_fail = remap_fail("gpu-1", "old");  // its check ran before the reboot
  const NodeReport old_pass = pass("gpu-1", "old-pass");
  decide(dr, {remap_fail("gpu-1", "a")});
  clock_.advance(1);
  ASSERT_EQ(dr.tick(), 1);
  dr.run_slurm_sink_once();
  slurm_->finish_reboot("gpu-1", clock_.now_unix());
  clock_.advance(10);
  ASSERT_EQ(dr.tick(), 1);
  decide(dr, {old_fail, old_pass});
  EXPECT_EQ(dr.node("gpu-1")->repair.stage, RepairStage::kRechecking);
  EXPECT_EQ(dr.node("gpu-1")->note, "report from before the reboot; not counted");
  dr.stop();
}

// A "vigil: replace" drain Vigil has no record of (state dir lost) stays a person's.
TEST_F(RepairLadder, an_adopted_replace_drain_is_never_rebooted_or_resumed) {
  ASSERT_TRUE(slurm_->drain({"gpu-1"}, "vigil: replace remap gpu3 (fault back after reboot)").ok());
  Drainer dr(cfg_, slurm_, nullptr, clock_);
  ASSERT_TRUE(dr.open().ok());
  decide(dr, {remap_fail("gpu-1", "a")});
  EXPECT_EQ(dr.node("gpu-1")->repair.stage, RepairStage::kReplace);
  clock_.advance(10);
  EXPECT_EQ(dr.tick(), 0);
  decide(dr, {pass("gpu-1", "b")});
  decide(dr, {pass("gpu-1", "c")});
  EXPECT_TRUE(dr.node("gpu-1")->drained_by_vigil);
  for (const auto& c : slurm_->calls_copy()) EXPECT_TRUE(c.op == "drain") << c.op;
  dr.stop();
}

}  // namespace
}  // namespace vigil::drainer
