// The qualify gate (qualify_gate.h, docs/qualify.md "The gate"): a node first heard from after the
// fleet was learned, and a node back from the repair ladder, are held drained with Vigil's own
// reason until a run of the qualify suite passes; GET /v1/rechecks lists them with that suite; an
// ordinary pass, a run with errors or checks picked by hand never lift the hold; a person's
// resume ends it; metrics, the Node annotation and the reliability figures show it.
#include "vigil/drainer/qualify_gate.h"

#include <gtest/gtest.h>

#include <fstream>

#include "drainer_fixtures.h"
#include "ladder_fixture.h"
#include "vigil/drainer/drainer.h"

namespace vigil::drainer {
namespace {

using namespace testing::drainer_short;

NodeReport of_suite(NodeReport r, const std::string& suite) {
  r.suite = suite;
  return r;
}

TEST(QualifyGate, only_a_clean_run_of_the_gates_suite_or_a_larger_one_passes) {
  GateConfig g;  // suite qualify
  const NodeReport pass = good("gpu-1", "a");
  EXPECT_EQ(*gate_refusal(pass, false, g),
            "a report of checks picked by hand (no suite); the qualify gate waits for a pass of "
            "the qualify suite");
  EXPECT_EQ(*gate_refusal(of_suite(pass, "full"), false, g),
            "a full run; the qualify gate waits for a pass of the qualify suite");
  EXPECT_TRUE(gate_refusal(of_suite(pass, "quick"), false, g));
  EXPECT_FALSE(gate_refusal(of_suite(pass, "qualify"), false, g));
  EXPECT_EQ(*gate_refusal(of_suite(pass, "qualify"), true, g), "the qualify run failed");
  NodeReport errored = of_suite(pass, "qualify");
  errored.checks.push_back(make_check("gpu_soak", Status::kError));
  errored.checks.push_back(make_check("gpu_sdc", Status::kError));
  EXPECT_EQ(*gate_refusal(errored, false, g),
            "the qualify run had errors (gpu_soak,gpu_sdc); the qualify gate waits for a pass of "
            "the qualify suite");
  NodeReport skipped = of_suite(pass, "qualify");  // a check the node cannot run proves nothing,
  skipped.checks.push_back(make_check("ib_port", Status::kSkipped));  // and holds nothing back
  EXPECT_FALSE(gate_refusal(skipped, false, g));
  g.suite = "full";
  EXPECT_FALSE(gate_refusal(of_suite(pass, "full"), false, g));
  EXPECT_FALSE(gate_refusal(of_suite(pass, "qualify"), false, g));
  EXPECT_TRUE(gate_refusal(of_suite(pass, "quick"), false, g));
}

TEST(QualifyGate, a_node_is_new_only_once_the_fleet_was_learned) {
  GateConfig g;
  const int64_t t = 1'800'000'000;
  EXPECT_FALSE(new_to_gate(g, t, t + 2 * 86400));  // new_nodes off
  g.new_nodes = true;
  EXPECT_FALSE(new_to_gate(g, t, t + 86399));  // learn_s: the fleet Vigil was deployed on
  EXPECT_TRUE(new_to_gate(g, t, t + 86400));
  EXPECT_FALSE(new_to_gate(g, 0, t));  // no state time: never new
}

TEST(QualifyGate, a_held_node_is_listed_at_once_then_every_retry_s_never_while_rebooting) {
  GateConfig g;  // retry_s 3600
  const int64_t t = 1'800'000'000;
  NodeRecord s;
  s.node = "gpu-1";
  s.drained_by_vigil = true;
  EXPECT_FALSE(gate_due(s, g, t, 0));  // not held
  s.gate_cause = "new";
  EXPECT_EQ(*gate_due(s, g, t, 0), "qualify: new node, held until the qualify suite passes");
  EXPECT_FALSE(gate_due(s, g, t + 3599, t));
  EXPECT_EQ(*gate_due(s, g, t + 3600, t),
            "qualify: new node, held until the qualify suite passes (again)");
  s.gate_cause = "repaired";
  s.repair.stage = RepairStage::kRebooting;
  EXPECT_FALSE(gate_due(s, g, t, 0));
  s.repair.stage = RepairStage::kRechecking;
  EXPECT_EQ(*gate_due(s, g, t, 0),
            "qualify: back from repair, held until the qualify suite passes");
  s.repair.stage = RepairStage::kReplace;  // a person's: not held, not listed
  EXPECT_EQ(gate_hold(s), "");
  EXPECT_FALSE(gate_due(s, g, t, 0));
  s.repair.stage = RepairStage::kNone;
  s.drained_by_vigil = false;
  EXPECT_FALSE(gate_due(s, g, t, 0));
}

// The drainer with the gate on for new nodes from its first second (learn_s 0).
struct NewNodes {
  TempDir d;
  FakeClock clock;
  std::shared_ptr<FakeSlurm> slurm = cluster(4);
  std::shared_ptr<FakeKube> kube = std::make_shared<FakeKube>();
  DrainerConfig cfg = [this] {
    auto c = test_config(d.str());
    c.policy.gate.new_nodes = true;
    c.policy.gate.learn_s = 0;
    return c;
  }();
  void decide(Drainer& dr, const std::vector<NodeReport>& reports) {
    ASSERT_TRUE(dr.ingest(reports).ok());
    dr.process_pending();
    dr.run_slurm_sink_once();
    dr.run_kube_sink_once();
  }
};

std::vector<RecheckDue> due(Drainer& dr) { return dr.rechecks_due(); }

TEST(QualifyGate, a_new_node_is_held_until_a_qualify_run_passes_and_nothing_else_lifts_it) {
  NewNodes n;
  Drainer dr(n.cfg, n.slurm, n.kube, n.clock);
  ASSERT_TRUE(dr.open().ok());
  n.decide(dr, {good("gpu-1", "hook-1")});  // its first report: a hook's, healthy
  const std::string reason = "vigil: qualify new node, held until the qualify suite passes";
  ASSERT_TRUE(n.slurm->get("gpu-1").drain);
  EXPECT_EQ(n.slurm->get("gpu-1").reason, reason);
  EXPECT_EQ(dr.node("gpu-1")->gate_cause, "new");
  EXPECT_EQ(n.kube->annotations_of("gpu-1").at("vigil.dev/qualify"), "new");
  EXPECT_NE(dr.metrics_text().find(R"(vigil_qualifying_nodes{cause="new"} 1)"), std::string::npos);

  auto listed = due(dr);
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0].node, "gpu-1");
  EXPECT_EQ(listed[0].suite, "qualify");
  EXPECT_TRUE(due(dr).empty());  // listed once, then after retry_s

  // The hourly re-check (the full suite), twice: not the gate's suite.
  n.decide(dr,
           {of_suite(good("gpu-1", "full-1"), "full"), of_suite(good("gpu-1", "full-2"), "full")});
  EXPECT_TRUE(n.slurm->get("gpu-1").drain);
  EXPECT_NE(dr.node("gpu-1")->note.find("a full run; the qualify gate waits"), std::string::npos)
      << dr.node("gpu-1")->note;
  // A qualify run whose soak could not run proves nothing.
  NodeReport errored = of_suite(good("gpu-1", "q-1"), "qualify");
  errored.checks.push_back(make_check("gpu_soak", Status::kError));
  n.decide(dr, {errored});
  EXPECT_TRUE(n.slurm->get("gpu-1").drain);
  EXPECT_NE(dr.node("gpu-1")->note.find("had errors (gpu_soak)"), std::string::npos);

  n.clock.advance(1200);
  n.decide(dr, {of_suite(good("gpu-1", "q-2"), "qualify")});
  EXPECT_FALSE(n.slurm->get("gpu-1").drain);
  EXPECT_EQ(dr.node("gpu-1")->gate_cause, "");
  EXPECT_NE(dr.node("gpu-1")->note.find("resume: the qualify suite passed (qualify gate, new)"),
            std::string::npos)
      << dr.node("gpu-1")->note;
  EXPECT_EQ(n.kube->annotations_of("gpu-1").count("vigil.dev/qualify"), 0u);
  const std::string m = dr.metrics_text();
  for (const char* line : {R"(vigil_qualifying_nodes{cause="new"} 0)",
                           R"(vigil_drain_duration_seconds_count{cause="qualify"} 1)",
                           R"(vigil_held_node_seconds_total{cause="qualify"} 1200)"})
    EXPECT_NE(m.find(line), std::string::npos) << line << "\n" << m;
  EXPECT_TRUE(due(dr).empty());

  // Known now: its later reports are judged as anyone's, never held again.
  n.decide(dr, {good("gpu-1", "hook-2")});
  EXPECT_FALSE(n.slurm->get("gpu-1").drain);
}

// The first day (learn_s) is the fleet Vigil was deployed on; the time survives a restart.
TEST(QualifyGate, nodes_heard_from_while_the_fleet_is_learned_are_not_held_across_a_restart) {
  NewNodes n;
  n.cfg.policy.gate.learn_s = 3600;
  {
    Drainer dr(n.cfg, n.slurm, nullptr, n.clock);
    ASSERT_TRUE(dr.open().ok());
    n.decide(dr, {good("gpu-0", "a")});
    EXPECT_FALSE(n.slurm->get("gpu-0").drain);
  }
  n.clock.advance(3600);
  Drainer dr(n.cfg, n.slurm, nullptr, n.clock);
  ASSERT_TRUE(dr.open().ok());
  n.decide(dr, {good("gpu-0", "b"), good("gpu-2", "b")});
  EXPECT_FALSE(n.slurm->get("gpu-0").drain);  // known
  EXPECT_TRUE(n.slurm->get("gpu-2").drain);   // new an hour after the state began
  std::ofstream(n.d.str() + "/gate-since", std::ios::trunc) << "yesterday\n";
  Drainer bad_file(n.cfg, n.slurm, nullptr, n.clock);
  const auto opened = bad_file.open();
  ASSERT_FALSE(opened.ok());
  EXPECT_NE(opened.error().to_string().find("/gate-since: not a unix time"), std::string::npos)
      << opened.error().to_string();
}

// A person who resumes the node (scontrol or `vigil-drainer resume`) decides: the gate lets go.
// A new node that is failing is drained for its fault and still has to qualify.
TEST(QualifyGate, a_persons_resume_ends_the_hold_and_a_failing_new_node_still_has_to_qualify) {
  NewNodes n;
  Drainer dr(n.cfg, n.slurm, nullptr, n.clock);
  ASSERT_TRUE(dr.open().ok());
  n.decide(dr, {good("gpu-1", "a"), bad("gpu-2", "a")});
  ASSERT_TRUE(n.slurm->get("gpu-1").drain);
  ASSERT_TRUE(n.slurm->undrain({"gpu-1"}).ok());  // an admin's scontrol resume
  n.decide(dr, {good("gpu-1", "b")});
  EXPECT_FALSE(n.slurm->get("gpu-1").drain);
  EXPECT_EQ(dr.node("gpu-1")->gate_cause, "");

  EXPECT_EQ(n.slurm->get("gpu-2").reason, "vigil: nvml_ecc nvml_ecc failed");
  EXPECT_EQ(dr.node("gpu-2")->gate_cause, "new");
  n.decide(dr, {good("gpu-2", "b"), good("gpu-2", "c")});  // resume_after 2 ordinary passes
  EXPECT_TRUE(n.slurm->get("gpu-2").drain);
  n.decide(dr, {of_suite(good("gpu-2", "q"), "qualify")});
  EXPECT_FALSE(n.slurm->get("gpu-2").drain);
}

// A fault found on a held node takes the drain over: sinfo -R names it, not the hold (found on the
// real Slurm with the H200's bit flip, drainer_slurm_test); the breaker is not asked again; the
// gate still waits for its suite, then the fault's checks decide.
TEST(QualifyGate, a_fault_found_on_a_held_node_takes_the_drains_reason) {
  NewNodes n;
  Drainer dr(n.cfg, n.slurm, n.kube, n.clock);
  ASSERT_TRUE(dr.open().ok());
  n.decide(dr, {good("gpu-1", "a")});
  ASSERT_EQ(n.slurm->get("gpu-1").reason,
            "vigil: qualify new node, held until the qualify suite passes");
  auto drains = [&] {
    int k = 0;
    for (const auto& c : n.slurm->calls_copy()) k += c.op == "drain";
    return k;
  };
  const int before = drains();
  n.decide(dr, {of_suite(bad("gpu-1", "q-1"), "qualify")});
  EXPECT_TRUE(n.slurm->get("gpu-1").drain);
  EXPECT_EQ(n.slurm->get("gpu-1").reason, "vigil: nvml_ecc nvml_ecc failed");
  EXPECT_EQ(drains(), before + 1);  // the relabel
  EXPECT_EQ(dr.node("gpu-1")->gate_cause, "new");
  EXPECT_EQ(dr.node("gpu-1")->driving_checks, std::vector<std::string>{"nvml_ecc"});
  EXPECT_NE(dr.node("gpu-1")->note.find("found while held by the qualify gate"), std::string::npos)
      << dr.node("gpu-1")->note;
  std::size_t counted = 0;  // the hold only
  for (const auto& [group, times] : dr.breaker().recent_drains) counted += times.size();
  EXPECT_EQ(counted, 1u);
  n.decide(dr, {good("gpu-1", "b"), good("gpu-1", "c")});  // ordinary passes: the gate holds
  EXPECT_TRUE(n.slurm->get("gpu-1").drain);
  n.decide(dr, {of_suite(good("gpu-1", "q-2"), "qualify")});
  EXPECT_FALSE(n.slurm->get("gpu-1").drain);
  EXPECT_EQ(dr.node("gpu-1")->gate_cause, "");
}

// Not taken over while the node is DOWN (Slurm would refuse the relabel; the sink would read the
// refusal as an undone drain), nor in dry-run (a hold kept from before it): the hold stays as it
// is; the next failing report once the node is back, with dry-run off, names the fault.
TEST(QualifyGate, a_down_node_or_dry_run_keeps_the_holds_reason) {
  NewNodes n;
  const std::string hold = "vigil: qualify new node, held until the qualify suite passes";
  {
    Drainer dr(n.cfg, n.slurm, nullptr, n.clock);
    ASSERT_TRUE(dr.open().ok());
    n.decide(dr, {good("gpu-1", "a")});
    ASSERT_EQ(n.slurm->get("gpu-1").reason, hold);
    n.slurm->set("gpu-1", [](slurm::SlurmNodeInfo& i) {
      i.state = "DOWN";
      i.down = true;
    });
    n.decide(dr, {of_suite(bad("gpu-1", "q-1"), "qualify")});
    EXPECT_EQ(n.slurm->get("gpu-1").reason, hold);
    EXPECT_TRUE(dr.node("gpu-1")->drained_by_vigil);
    EXPECT_EQ(dr.node("gpu-1")->gate_cause, "new");
    n.slurm->finish_reboot("gpu-1", n.clock.now_unix());  // back, still drained
  }
  n.cfg.dry_run = true;
  {
    Drainer dr(n.cfg, n.slurm, nullptr, n.clock);
    ASSERT_TRUE(dr.open().ok());
    n.decide(dr, {of_suite(bad("gpu-1", "q-2"), "qualify")});
    EXPECT_EQ(n.slurm->get("gpu-1").reason, hold);
    EXPECT_NE(dr.node("gpu-1")->note.find("dry-run: would name the fault"), std::string::npos)
        << dr.node("gpu-1")->note;
  }
  n.cfg.dry_run = false;
  Drainer dr(n.cfg, n.slurm, nullptr, n.clock);
  ASSERT_TRUE(dr.open().ok());
  n.decide(dr, {of_suite(bad("gpu-1", "q-3"), "qualify")});
  EXPECT_EQ(n.slurm->get("gpu-1").reason, "vigil: nvml_ecc nvml_ecc failed");
}

TEST(QualifyGate, dry_run_holds_nothing_and_the_node_is_held_later) {
  NewNodes n;
  n.cfg.dry_run = true;
  {
    Drainer dr(n.cfg, n.slurm, nullptr, n.clock);
    ASSERT_TRUE(dr.open().ok());
    n.decide(dr, {good("gpu-1", "a")});
    EXPECT_FALSE(n.slurm->get("gpu-1").drain);
    EXPECT_EQ(dr.node("gpu-1")->state, NodeState::kWouldDrain);
    EXPECT_TRUE(dr.rechecks_due().empty());
  }
  n.cfg.dry_run = false;  // turned off: the node's next report holds it
  Drainer dr(n.cfg, n.slurm, nullptr, n.clock);
  ASSERT_TRUE(dr.open().ok());
  n.decide(dr, {good("gpu-1", "b")});
  EXPECT_TRUE(n.slurm->get("gpu-1").drain);
}

// Holds are counted by the breaker like any drain: a fleet whose nodes all look new (a lost
// state, renamed nodes) is not drained whole. A rack that joins is held up to the cap.
TEST(QualifyGate, holds_are_counted_by_the_breaker) {
  NewNodes n;
  n.cfg.breaker.max_drains = 2;
  Drainer dr(n.cfg, n.slurm, nullptr, n.clock);
  ASSERT_TRUE(dr.open().ok());
  n.decide(dr, {good("gpu-0", "a"), good("gpu-1", "a"), good("gpu-2", "a")});
  EXPECT_TRUE(n.slurm->get("gpu-0").drain);
  EXPECT_TRUE(n.slurm->get("gpu-1").drain);
  EXPECT_FALSE(n.slurm->get("gpu-2").drain);
  EXPECT_TRUE(dr.breaker().open);
  EXPECT_NE(dr.node("gpu-2")->note.find("qualify gate: new node; circuit breaker opened"),
            std::string::npos)
      << dr.node("gpu-2")->note;
}

// A node whose first report is a clean qualify run has qualified where it stands; one drained by
// someone else when first heard from is theirs, and stays theirs after they resume it; the gate
// lets go after two qualify runs that failed on errors alone (Vigil's trouble as likely as the
// node's) and the ordinary re-checks decide.
TEST(QualifyGate, a_qualified_node_an_admins_node_and_repeated_errors_are_let_go) {
  NewNodes n;
  ASSERT_TRUE(n.slurm->drain({"gpu-3"}, "burn-in by hand").ok());
  Drainer dr(n.cfg, n.slurm, nullptr, n.clock);
  ASSERT_TRUE(dr.open().ok());
  n.decide(dr, {of_suite(good("gpu-0", "q"), "qualify"), good("gpu-3", "a"), good("gpu-1", "a")});
  EXPECT_FALSE(n.slurm->get("gpu-0").drain);
  EXPECT_EQ(dr.node("gpu-0")->gate_cause, "");
  EXPECT_EQ(n.slurm->get("gpu-3").reason, "burn-in by hand");
  EXPECT_EQ(dr.node("gpu-3")->gate_cause, "");
  ASSERT_TRUE(n.slurm->undrain({"gpu-3"}).ok());
  n.decide(dr, {good("gpu-3", "b")});
  EXPECT_FALSE(n.slurm->get("gpu-3").drain);

  ASSERT_TRUE(n.slurm->get("gpu-1").drain);  // held
  NodeReport errored = of_suite(good("gpu-1", "q-1"), "qualify");
  errored.checks.push_back(make_check("gpu_soak", Status::kError));
  n.decide(dr, {errored});
  EXPECT_TRUE(n.slurm->get("gpu-1").drain);
  EXPECT_EQ(dr.node("gpu-1")->gate_errors, 1);
  errored.run_id = "q-2";
  n.decide(dr, {errored});
  EXPECT_FALSE(n.slurm->get("gpu-1").drain);  // resume_after ordinary passes: it has 3
  EXPECT_EQ(dr.node("gpu-1")->gate_cause, "");
  EXPECT_NE(dr.node("gpu-1")->note.find("2 runs failed on errors alone"), std::string::npos)
      << dr.node("gpu-1")->note;
  // A qualify run that passed nothing (every check skipped) proves nothing either.
  NodeReport empty = of_suite(make_report("gpu-2", "q", {}), "qualify");
  EXPECT_EQ(*gate_refusal(empty, false, n.cfg.policy.gate),
            "the qualify run passed no check; the qualify gate waits for a pass of the qualify "
            "suite");
}

// gate.repaired: a node back from its reboot is resumed by a qualify pass only.
class RepairedGate : public testing::LadderTest {
 protected:
  void SetUp() override {
    LadderTest::SetUp();
    cfg_.repair.reboot = true;
    cfg_.policy.gate.repaired = true;
  }
};

TEST_F(RepairedGate, a_rebooted_node_is_held_until_the_qualify_suite_passes) {
  Drainer dr(cfg_, slurm_, nullptr, clock_);
  ASSERT_TRUE(dr.open().ok());
  decide(dr, {remap_fail("gpu-1", "a")});
  EXPECT_EQ(dr.tick(), 1);  // the reboot
  dr.run_slurm_sink_once();
  slurm_->finish_reboot("gpu-1", clock_.now_unix());
  clock_.advance(10);
  EXPECT_EQ(dr.tick(), 1);  // rebooted
  ASSERT_EQ(dr.node("gpu-1")->repair.stage, RepairStage::kRechecking);
  EXPECT_EQ(dr.node("gpu-1")->gate_cause, "repaired");
  EXPECT_NE(dr.node("gpu-1")->note.find("held until the qualify suite passes (qualify gate)"),
            std::string::npos)
      << dr.node("gpu-1")->note;
  const auto listed = dr.rechecks_due();
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0].suite, "qualify");
  decide(dr, {pass("gpu-1", "b"), pass("gpu-1", "c")});  // resume_after ordinary passes
  EXPECT_TRUE(slurm_->get("gpu-1").drain);
  EXPECT_NE(dr.metrics_text().find(R"(vigil_qualifying_nodes{cause="repaired"} 1)"),
            std::string::npos);
  decide(dr, {of_suite(pass("gpu-1", "q"), "qualify")});
  EXPECT_FALSE(slurm_->get("gpu-1").drain);
  EXPECT_NE(dr.node("gpu-1")->note.find("(qualify gate, repaired after a reboot)"),
            std::string::npos)
      << dr.node("gpu-1")->note;
  EXPECT_EQ(dr.node("gpu-1")->repair.stage, RepairStage::kNone);

  // The next drain of the node is an incident, a known interval after the last.
  clock_.advance(7200);
  decide(dr, {remap_fail("gpu-1", "d")});
  EXPECT_NE(dr.metrics_text().find("vigil_incident_interval_seconds_count 1"), std::string::npos);
}

// A qualify run that fails brings the ladder's verdict: the fault is back after the reboot.
TEST_F(RepairedGate, a_rebooted_node_that_fails_its_qualify_run_is_for_a_person) {
  Drainer dr(cfg_, slurm_, nullptr, clock_);
  ASSERT_TRUE(dr.open().ok());
  decide(dr, {remap_fail("gpu-1", "a")});
  dr.tick();
  dr.run_slurm_sink_once();
  slurm_->finish_reboot("gpu-1", clock_.now_unix());
  clock_.advance(10);
  dr.tick();
  decide(dr, {of_suite(remap_fail("gpu-1", "q"), "qualify")});
  EXPECT_EQ(dr.node("gpu-1")->repair.stage, RepairStage::kReplace);
  EXPECT_EQ(gate_hold(*dr.node("gpu-1")), "");
  EXPECT_TRUE(dr.rechecks_due().empty());
}

}  // namespace
}  // namespace vigil::drainer
