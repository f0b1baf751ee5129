// A reboot that outlasts Slurm's ResumeTimeout, on this cluster's real Slurm (22.05 here; 24.11
// in the trixie root's lean set, 26.05 by `scripts/slurm-root.sh test --suite forky`), and what
// the repair ladder makes of each state Slurm shows (docs/repair.md "Slurm's own timeout").
// The local RebootProgram (scripts/lib/local-reboot.sh) takes DIR/etc/reboot-delay-s seconds to
// "boot" here: longer than the cluster's ResumeTimeout, as a GPU node whose POST outlasts the
// admin's boot_time_s would. Measured on 2026-12-02 with ReturnToService=2 (the local cluster's):
//   22.05: DOWN, drain lifted, reason "<vigil's> : reboot issued : reboot timed out"; on
//          registering: IDLE, in service, unchecked (why the ladder drains it again while DOWN);
//   24.11: DOWN+DRAIN, the same reason; on registering: IDLE+DRAIN.
#include <gtest/gtest.h>
#include <slurm/slurm.h>

#include <chrono>
#include <functional>
#include <thread>

#include "local_slurm_cluster.h"
#include "vigil/drainer/policy.h"
#include "vigil/drainer/repair.h"
#include "vigil/slurm/reason.h"
#include "vigil/slurm/slurm_api.h"

namespace {

using namespace std::chrono_literals;
using vigil::drainer::Action;
using vigil::drainer::NodeRecord;
using vigil::drainer::RepairConfig;
using vigil::drainer::RepairStage;
using vigil::testing::LocalSlurmCluster;

constexpr int kResumeTimeoutS = 20;
constexpr int kBootS = 60;  // the node's "boot": ResumeTimeout, slurmctld's next check, margin

bool eventually(const std::function<bool()>& done, std::chrono::seconds limit) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    if (done()) return true;
    std::this_thread::sleep_for(1s);
  }
  return done();
}

TEST(SlurmRebootTimeout, a_reboot_past_resume_timeout_comes_back_drained_for_its_recheck) {
  LocalSlurmCluster::Options o;
  o.nodes = 1;
  o.gpus = 2;
  o.extra_conf = "RebootProgram=" + std::string(VIGIL_SOURCE_DIR) +
                 "/scripts/lib/local-reboot.sh\nResumeTimeout=" + std::to_string(kResumeTimeoutS);
  o.etc_files["reboot-delay-s"] = std::to_string(kBootS);
  LocalSlurmCluster cluster(o);
  auto api = vigil::slurm::make_libslurm_api(cluster.slurm_conf());
  auto read = [&] {
    auto nodes = api->load_nodes_named({"gpu-0"});
    EXPECT_TRUE(nodes.ok() && nodes->size() == 1u);
    return nodes.ok() && !nodes->empty() ? nodes->front() : vigil::slurm::SlurmNodeInfo{};
  };

  // Vigil's drain, and the ladder's reboot rung (what its Slurm sink asks slurmctld for). The
  // boot outlasting ResumeTimeout is the case the rung's own check (resume_timeout_s against
  // boot_time_s) cannot see: a node slower than the site said. Unknown here, so not refused.
  NodeRecord s;
  s.node = "gpu-0";
  s.drained_by_vigil = true;
  s.reason = "vigil: remap gpu3 row remap pending (1)";
  s.repair.remedy = vigil::Remedy::kReboot;
  RepairConfig cfg;
  cfg.reboot = true;
  ASSERT_TRUE(api->drain({"gpu-0"}, s.reason).ok());
  const vigil::slurm::SlurmNodeInfo before = read();
  const int64_t t0 = std::time(nullptr);
  auto step = vigil::drainer::repair_tick(s, &before, true, cfg, {}, {}, false, t0);
  ASSERT_TRUE(step);
  ASSERT_EQ(step->move, Action::kReboot) << step->why;
  ASSERT_TRUE(api->reboot({"gpu-0"}, s.reason).ok());

  // Slurm gives up on the reboot.
  vigil::slurm::SlurmNodeInfo timed;
  ASSERT_TRUE(eventually(
      [&] {
        timed = read();
        return timed.down && timed.reason.find("reboot timed out") != std::string::npos;
      },
      std::chrono::seconds(kBootS - 5)))
      << "state " << timed.state << " reason '" << timed.reason << "'";
  EXPECT_EQ(timed.reason.rfind(s.reason, 0), 0u) << timed.reason;  // Vigil's text, appended to
  EXPECT_TRUE(vigil::slurm::reboot_timed_out(timed)) << timed.reason;
  // Slurm stopped lifting the drain in 23.11.6: SchedMD commit de5b9afc94 "Fix removal of drain
  // state in scontrol reboot timeout" (Bug 19298; NEWS of 23.11.6; first tag slurm-23-11-6-1).
#if SLURM_VERSION_NUMBER < SLURM_VERSION_NUM(23, 11, 6)
  const bool slurm_keeps_drain = false;
#else
  const bool slurm_keeps_drain = true;
#endif
  EXPECT_EQ(timed.drain, slurm_keeps_drain) << timed.state;
  step = vigil::drainer::repair_tick(s, &timed, true, cfg, {}, {}, false, std::time(nullptr));
  if (slurm_keeps_drain) {
    EXPECT_FALSE(step) << step->why;  // still Vigil's drain: waiting for the node
  } else {
    ASSERT_TRUE(step);
    EXPECT_EQ(step->move, Action::kRedrain) << step->why;
    // What the Slurm sink then does: drains the DOWN node with Vigil's own reason.
    ASSERT_TRUE(api->drain({"gpu-0"}, s.reason).ok());
    const auto redrained = read();
    EXPECT_TRUE(redrained.down && redrained.drain) << redrained.state;
  }
  EXPECT_EQ(s.repair.stage, RepairStage::kRebooting);

  // The node registers again, after its boot: drained, Vigil's, so the re-check decides.
  vigil::slurm::SlurmNodeInfo back;
  ASSERT_TRUE(eventually(
      [&] {
        back = read();
        return back.boot_time >= t0 && !back.down && !back.not_responding;
      },
      std::chrono::seconds(kBootS + 60)))
      << "state " << back.state << " reason '" << back.reason << "' boot " << back.boot_time;
  EXPECT_EQ(back.state, "IDLE");
  EXPECT_TRUE(back.drain) << "registered into service without a re-check";
  EXPECT_TRUE(vigil::slurm::drained_by_vigil(back)) << back.reason;
  step = vigil::drainer::repair_tick(s, &back, true, cfg, {}, {}, false, std::time(nullptr));
  ASSERT_TRUE(step);
  EXPECT_EQ(step->move, Action::kRebooted) << step->why;
  EXPECT_EQ(s.repair.stage, RepairStage::kRechecking);
}

}  // namespace
