// The pure decision step (drainer/src/decider.h) on plain values: a report, a node table and
// Slurm's view in, one Decision out (the Decider holds them const: applying is the caller's).
#include "decider.h"

#include <gtest/gtest.h>

#include "fake_clock.h"
#include "fakes.h"

namespace vigil::drainer {
namespace {

using testing::make_check;
using testing::make_report;
constexpr Status kFail = Status::kFail;
constexpr Status kPass = Status::kPass;

slurm::SlurmNodeInfo idle(const std::string& name, const std::string& partition) {
  slurm::SlurmNodeInfo n;
  n.name = name;
  n.state = "IDLE";
  n.partitions = {partition};
  return n;
}

class DeciderTest : public ::testing::Test {
 protected:
  DeciderTest() : engine_(default_policy(), BreakerConfig{10, 50, 3600}, false, clock_) {
    for (const char* n : {"gpu-0", "gpu-1", "gpu-2", "gpu-3"}) view_[n] = idle(n, "batch");
    counts_["batch"] = 4;
  }
  testing::FakeClock clock_;
  PolicyEngine engine_;
  std::map<std::string, NodeRecord> table_;
  SlurmView view_;
  std::map<std::string, int> counts_;
};

TEST_F(DeciderTest, a_fatal_fail_drains_and_nothing_but_the_decision_changes) {
  NodeRecord known;
  known.node = "gpu-1";
  known.state = NodeState::kHealthy;
  table_["gpu-1"] = known;
  Decider decider(engine_, table_, view_, counts_);
  const NodeReport r = make_report("gpu-1", "run-1", {make_check("nvml_ecc", kFail, 2)});
  const Decider::Outcome rd = decider.decide(r, r, BreakerState{});
  EXPECT_EQ(rd.decision.action, Action::kDrain) << rd.decision.why;
  EXPECT_EQ(rd.decision.before, NodeState::kHealthy);
  EXPECT_EQ(rd.decision.record.state, NodeState::kDrained);
  EXPECT_TRUE(rd.decision.record.drained_by_vigil);
  EXPECT_FALSE(rd.switch_evidence);
  ASSERT_TRUE(rd.decision.counted_drain);  // in the breaker's next state; applying is the core's
}

TEST_F(DeciderTest, a_node_slurm_does_not_know_is_never_drained) {
  Decider decider(engine_, table_, view_, counts_);
  const NodeReport r = make_report("ghost-7", "run-1", {make_check("nvml_ecc", kFail, 2)});
  const Decider::Outcome rd = decider.decide(r, r, BreakerState{});
  EXPECT_NE(rd.decision.action, Action::kDrain);
  EXPECT_FALSE(rd.decision.record.drained_by_vigil);
  // With Slurm's view unknown (unreachable) the same report drains: the Slurm sink re-checks
  // ownership before it acts.
  const SlurmView unknown;
  const std::map<std::string, int> none;
  Decider blind(engine_, table_, unknown, none);
  EXPECT_EQ(blind.decide(r, r, BreakerState{}).decision.action, Action::kDrain);
}

TEST_F(DeciderTest, the_breaker_group_is_the_nodes_partition_in_slurms_view) {
  // 50 % of a 4-node partition: two drains in the window, the third is held.
  Decider decider(engine_, table_, view_, counts_);
  BreakerState breaker;
  std::vector<Action> actions;
  for (const char* n : {"gpu-0", "gpu-1", "gpu-2"}) {
    const NodeReport r = make_report(n, "run-1", {make_check("nvml_ecc", kFail, 2)});
    const Decider::Outcome rd = decider.decide(r, r, breaker);
    actions.push_back(rd.decision.action);
    breaker = rd.decision.breaker;
    table_[n] = rd.decision.record;  // what the core's apply does between two decisions
  }
  EXPECT_EQ(actions,
            (std::vector<Action>{Action::kDrain, Action::kDrain, Action::kBreakerBlocked}));
}

TEST_F(DeciderTest, switch_evidence_of_the_report_is_folded_into_the_record) {
  Decider decider(engine_, table_, view_, counts_);
  CheckResult c = make_check("fabric_allreduce_ib", kPass, 40, 30, "GB/s");
  Measurement m;
  m.name = "switch_suspected";
  m.value = 1;
  m.unit = "bool";
  m.port = "switch:leaf-3";
  c.measurements.push_back(m);
  const NodeReport r = make_report("gpu-2", "run-1", {c});
  const Decider::Outcome rd = decider.decide(r, r, BreakerState{});
  EXPECT_TRUE(rd.switch_evidence);
  EXPECT_EQ(rd.decision.record.fabric_switch, "leaf-3");
  EXPECT_TRUE(rd.decision.record.switch_suspect);
  // The judged report is what the policy counts; the switch evidence comes from the report.
  const NodeReport plain = make_report("gpu-2", "run-2", {make_check("gpu_gemm", kPass)});
  EXPECT_TRUE(decider.decide(r, plain, BreakerState{}).switch_evidence);
  EXPECT_FALSE(decider.decide(plain, plain, BreakerState{}).switch_evidence);
}

}  // namespace
}  // namespace vigil::drainer
