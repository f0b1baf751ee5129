// Holds a killed vigil-submit left behind (docs/recheck.md "The hold"), released by the next run
// against the real local cluster (production profile): a hold still open (the node undrained, its
// drain never back) drains the node before letting it go, so it is re-checked before any user job
// lands; a hold whose drain came back (it has an end) is only deleted, the node left as the
// drainer left it; a hold younger than a re-check and its setup may be another run's, and stays.
// --max-rechecks 0: only the release runs, nothing is submitted.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

#include "local_slurm_cluster.h"

namespace {

using vigil::testing::CommandResult;
using vigil::testing::LocalSlurmCluster;

class StaleHold : public ::testing::Test {
 protected:
  void SetUp() override {
    cluster_ = std::make_unique<LocalSlurmCluster>(LocalSlurmCluster::Options{.nodes = 2});
  }
  CommandResult sc(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {"scontrol"};
    argv.insert(argv.end(), args.begin(), args.end());
    return cluster_->run(argv);
  }
  // A hold of gpu-1 as run_held leaves it after `steps` of its steps (1: reservation + UNDRAIN,
  // killed before the drain came back; 2: the drain back and the reservation given an end).
  void leave_hold(int steps) {
    ASSERT_EQ(sc({"update", "NodeName=gpu-1", "State=DRAIN", "Reason=vigil: remap gpu3 pending"})
                  .exit_code,
              0);
    ASSERT_EQ(sc({"create", "reservation", "ReservationName=vigil-hold-gpu-1", "Nodes=gpu-1",
                  "Users=root", "StartTime=now", "Duration=UNLIMITED", "Flags=IGNORE_JOBS"})
                  .exit_code,
              0);
    ASSERT_EQ(sc({"update", "NodeName=gpu-1", "State=UNDRAIN"}).exit_code, 0);
    if (steps >= 2) {
      ASSERT_EQ(sc({"update", "NodeName=gpu-1", "State=DRAIN", "Reason=vigil: remap gpu3 pending"})
                    .exit_code,
                0);
      ASSERT_EQ(sc({"update", "ReservationName=vigil-hold-gpu-1", "Duration=20"}).exit_code, 0);
    }
    std::this_thread::sleep_for(std::chrono::seconds(2));  // older than --recheck-timeout-s 1
  }
  CommandResult submit(const std::string& setup_s) {
    return cluster_->run({VIGIL_SUBMIT_BINARY,
                          "--job-script=" VIGIL_SOURCE_DIR "/cronjobs/vigil-check.sbatch",
                          "--nodes=gpu-1", "--max-rechecks=0", "--recheck-timeout-s=1",
                          "--hold-setup-s=" + setup_s});
  }
  bool hold_exists() {
    return sc({"-o", "show", "reservation", "vigil-hold-gpu-1"}).out.find("ReservationName=") !=
           std::string::npos;
  }
  std::string node() { return sc({"-o", "show", "node", "gpu-1"}).out; }

  std::unique_ptr<LocalSlurmCluster> cluster_;
};

TEST_F(StaleHold, an_open_hold_drains_its_node_before_it_is_released) {
  if (auto why = LocalSlurmCluster::production_unavailable()) GTEST_SKIP() << *why;
  ASSERT_NO_FATAL_FAILURE(leave_hold(1));
  EXPECT_EQ(node().find("DRAIN"), std::string::npos) << node();  // what the kill left
  const auto r = submit("0");
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_NE(r.err.find("released vigil-hold-gpu-1 and drained gpu-1"), std::string::npos) << r.err;
  EXPECT_FALSE(hold_exists());
  EXPECT_NE(node().find("Reason=vigil: recheck interrupted"), std::string::npos) << node();
}

TEST_F(StaleHold, a_hold_whose_drain_came_back_is_only_deleted) {
  if (auto why = LocalSlurmCluster::production_unavailable()) GTEST_SKIP() << *why;
  ASSERT_NO_FATAL_FAILURE(leave_hold(2));
  // The drainer resumed it meanwhile (its passes reached resume_after inside the allocation).
  ASSERT_EQ(sc({"update", "NodeName=gpu-1", "State=UNDRAIN"}).exit_code, 0);
  const auto r = submit("0");
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_FALSE(hold_exists()) << r.err;
  EXPECT_EQ(node().find("DRAIN"), std::string::npos) << "a healthy node drained again: " << node();
}

TEST_F(StaleHold, a_young_hold_may_be_another_runs_and_stays) {
  if (auto why = LocalSlurmCluster::production_unavailable()) GTEST_SKIP() << *why;
  ASSERT_NO_FATAL_FAILURE(leave_hold(1));
  const auto r = submit("600");
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_TRUE(hold_exists()) << r.err;
  EXPECT_EQ(node().find("DRAIN"), std::string::npos) << node();
  ASSERT_EQ(sc({"delete", "ReservationName=vigil-hold-gpu-1"}).exit_code, 0);
}

}  // namespace
