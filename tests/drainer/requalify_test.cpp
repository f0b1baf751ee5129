// Re-qualifying drains on performance alone within minutes (requalify.h, docs/recheck.md
// "Re-qualifying a performance drain"): which drains, when, and GET /v1/rechecks' list through
// the drainer, across a restart.
#include "vigil/drainer/requalify.h"

#include <gtest/gtest.h>

#include <map>

#include "drainer_fixtures.h"
#include "vigil/drainer/drainer.h"

namespace vigil::drainer {
namespace {

using namespace testing::drainer_short;

NodeRecord drained(std::vector<std::string> checks, int64_t at) {
  NodeRecord s;
  s.node = "gpu-1";
  s.drained_by_vigil = true;
  s.drained_unix = at;
  s.driving_checks = std::move(checks);
  return s;
}

TEST(Requalify, only_drains_every_driving_check_of_which_is_a_performance_probe) {
  EXPECT_TRUE(performance_only(drained({"gpu_gemm"}, 1)));
  EXPECT_TRUE(performance_only(drained({"gpu_hbm", "nccl_allreduce_ib", "gpu_pcie_bw"}, 1)));
  EXPECT_TRUE(performance_only(drained({"fabric_allreduce_ib"}, 1)));
  EXPECT_FALSE(performance_only(drained({"gpu_gemm", "nvml_ecc"}, 1)));
  EXPECT_FALSE(performance_only(drained({"nvml_row_remap"}, 1)));
  EXPECT_FALSE(performance_only(drained({"ib_port"}, 1)));
  EXPECT_FALSE(performance_only(drained({"a_site_check"}, 1)));  // unknown: not assumed
  EXPECT_FALSE(performance_only(drained({}, 1)));
}

// What the probe said decides too: slow (a slow verdict, a floor of its figure, a fabric
// localization) is a performance drain; wrong results, an ECC error, a timeout are not.
TEST(Requalify, a_probe_that_failed_for_anything_but_being_slow_is_not_a_performance_drain) {
  auto with_code = [](const std::string& check, const std::string& code) {
    NodeRecord s = drained({check}, 1);
    s.checks[check].last_status = Status::kFail;
    s.checks[check].fault_code = code;
    return performance_only(s);
  };
  EXPECT_TRUE(with_code("gpu_gemm", "VIGIL-SLOW-CONFIRMED"));
  EXPECT_TRUE(with_code("gpu_hbm", "VIGIL-SLOW"));
  EXPECT_TRUE(with_code("gpu_gemm", "VIGIL-CUDA-GEMM-BF16-TFLOPS"));  // a floor
  EXPECT_TRUE(with_code("gpu_gemm", "VIGIL-CUDA-GEMM-FP8-TFLOPS"));
  EXPECT_TRUE(with_code("gpu_hbm", "VIGIL-CUDA-HBM-BANDWIDTH"));
  EXPECT_TRUE(with_code("gpu_pcie_bw", "VIGIL-CUDA-D2H-BANDWIDTH"));
  EXPECT_TRUE(with_code("nccl_allreduce_ib", "VIGIL-NCCL-BUSBW"));
  EXPECT_TRUE(with_code("fabric_allreduce_ib", "VIGIL-FABRIC-LOCALIZED"));
  EXPECT_FALSE(with_code("gpu_gemm", "VIGIL-CUDA-ECC-UNCORRECTABLE"));
  EXPECT_FALSE(with_code("nccl_allreduce_nvlink", "VIGIL-NCCL-WRONG-RESULTS"));
  EXPECT_FALSE(with_code("nccl_allreduce_ib", "VIGIL-NCCL-TIMEOUT"));
  EXPECT_FALSE(with_code("gpu_hbm", "VIGIL-CUDA-HBM-BANDWIDTH-X"));
  EXPECT_FALSE(with_code("gpu_count", "VIGIL-SLOW"));  // not a probe of figures
}

TEST(Requalify, is_due_from_after_s_until_the_window_closes_and_never_in_repair) {
  PolicyConfig p;  // 60 s, 6 h
  const int64_t t = 1'800'000'000;
  NodeRecord s = drained({"gpu_gemm"}, t);
  EXPECT_FALSE(requalify_due(s, p, t + 59));
  const auto why = requalify_due(s, p, t + 60);
  ASSERT_TRUE(why);
  EXPECT_EQ(*why, "requalify: drained 60 s ago on performance alone (gpu_gemm)");
  EXPECT_TRUE(requalify_due(s, p, t + 6 * 3600));
  EXPECT_FALSE(requalify_due(s, p, t + 6 * 3600 + 1));  // the hourly re-checks go on
  s.repair.stage = RepairStage::kRebooting;
  EXPECT_FALSE(requalify_due(s, p, t + 300));
  s.repair.stage = RepairStage::kNone;
  s.drained_unix = 0;  // a drain adopted after the state was lost: its age is unknown
  EXPECT_FALSE(requalify_due(s, p, t + 300));
  s.drained_unix = t;
  s.drained_by_vigil = false;
  EXPECT_FALSE(requalify_due(s, p, t + 300));
  s.drained_by_vigil = true;
  p.requalify_after_s = 0;  // off
  EXPECT_FALSE(requalify_due(s, p, t + 300));
}

// A re-check that fails again pushes the next one out: it waits half as long as the drain was old
// at the last one (each try at 1.5 times the age of the one before); one that passes makes the
// confirming one due at once.
TEST(Requalify,
     a_node_still_slow_is_rechecked_less_and_less_often_and_a_pass_is_confirmed_at_once) {
  PolicyConfig p;
  const int64_t t = 1'800'000'000;
  NodeRecord s = drained({"gpu_gemm", "gpu_hbm"}, t);
  s.checks["gpu_gemm"] = {Status::kFail, 2, 0, "", "", t};  // the drain's report
  s.checks["gpu_hbm"] = {Status::kFail, 1, 0, "", "", t};
  ASSERT_TRUE(requalify_due(s, p, t + 130));
  s.checks["gpu_gemm"].last_run_unix = t + 200;  // the re-check failed again at age 200
  EXPECT_FALSE(requalify_due(s, p, t + 299));
  EXPECT_TRUE(requalify_due(s, p, t + 300));
  s.checks["gpu_hbm"].last_run_unix = t + 500;  // and again at 500: the next from 750
  EXPECT_FALSE(requalify_due(s, p, t + 749));
  EXPECT_TRUE(requalify_due(s, p, t + 750));
  // Both passed at 1100: the confirming re-check is due at once; one of them passing is not
  // enough.
  s.checks["gpu_gemm"] = {Status::kPass, 0, 1, "", "", t + 1100};
  EXPECT_FALSE(requalify_due(s, p, t + 1101));
  s.checks["gpu_hbm"] = {Status::kPass, 0, 1, "", "", t + 1100};
  const auto why = requalify_due(s, p, t + 1101);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("passed once: confirming"), std::string::npos) << *why;
}

NodeReport gemm_fail(const std::string& node, const std::string& run) {
  return testing::make_report(node, run,
                              {testing::make_check("gpu_gemm", Status::kFail, 500, 640, "TFLOP/s",
                                                   "VIGIL-SLOW-CONFIRMED")});
}
NodeReport gemm_pass(const std::string& node, const std::string& run) {
  return testing::make_report(
      node, run, {testing::make_check("gpu_gemm", Status::kPass, 800, 640, "TFLOP/s")});
}

std::vector<std::string> due_nodes(Drainer& dr) {
  std::vector<std::string> out;
  for (const auto& r : dr.rechecks_due()) out.push_back(r.node);
  return out;
}

// The test drainer with GEMM drains after one report; `decide` ingests, decides and sends.
struct GemmDrains {
  TempDir d;
  FakeClock clock;
  std::shared_ptr<testing::FakeSlurm> slurm = cluster(4);
  DrainerConfig cfg = [this] {
    auto c = test_config(d.str());
    c.policy.checks["gpu_gemm"].drain_after = 1;
    return c;
  }();
  static void decide(Drainer& dr, const std::vector<NodeReport>& reports) {
    ASSERT_TRUE(dr.ingest(reports).ok());
    dr.process_pending();
    dr.run_slurm_sink_once();
  }
};

// A GEMM drain is listed a minute after it (and after a restart, from the journal), an ECC
// drain never; two passing re-checks resume the node as for any drain, and the list is empty.
TEST(Requalify, the_drainer_lists_a_performance_drain_and_two_passes_resume_it) {
  GemmDrains g;
  auto& [d, clock, slurm, cfg] = g;
  {
    Drainer dr(cfg, slurm, nullptr, clock);
    ASSERT_TRUE(dr.open().ok());
    GemmDrains::decide(dr, {gemm_fail("gpu-1", "a"), bad("gpu-2", "a")});
    ASSERT_TRUE(slurm->get("gpu-1").drain);
    ASSERT_TRUE(slurm->get("gpu-2").drain);
    EXPECT_TRUE(due_nodes(dr).empty());
    clock.advance(59);
    EXPECT_TRUE(due_nodes(dr).empty());
    clock.advance(1);
    EXPECT_EQ(due_nodes(dr), std::vector<std::string>{"gpu-1"});
  }
  Drainer dr(cfg, slurm, nullptr, clock);  // replayed: the drain's time came back
  ASSERT_TRUE(dr.open().ok());
  EXPECT_EQ(due_nodes(dr), std::vector<std::string>{"gpu-1"});
  GemmDrains::decide(dr, {gemm_pass("gpu-1", "r1")});
  EXPECT_TRUE(slurm->get("gpu-1").drain);                       // resume_after 2
  EXPECT_EQ(due_nodes(dr), std::vector<std::string>{"gpu-1"});  // the confirming one, at once
  GemmDrains::decide(dr, {gemm_pass("gpu-1", "r2")});
  EXPECT_FALSE(slurm->get("gpu-1").drain);
  EXPECT_TRUE(due_nodes(dr).empty());
  clock.advance(900);
  EXPECT_TRUE(due_nodes(dr).empty());
  EXPECT_EQ(dr.node("gpu-1")->checks.at("gpu_gemm").last_run_unix, clock.now_unix() - 900);
  EXPECT_EQ(dr.node("gpu-1")->drained_unix, 0);
}

// A drain by the soak is listed with the qualify suite, the only one that runs gpu_soak: the
// CronJob's quick re-checks would never pass it. A GEMM drain keeps the CronJob's own suite.
TEST(Requalify, a_soaks_drain_is_listed_with_the_suite_that_runs_the_soak) {
  GemmDrains g;
  g.cfg.policy.checks["gpu_soak"].drain_after = 1;
  Drainer dr(g.cfg, g.slurm, nullptr, g.clock);
  ASSERT_TRUE(dr.open().ok());
  GemmDrains::decide(
      dr, {testing::make_report("gpu-1", "a",
                                {testing::make_check("gpu_soak", Status::kFail, 580, 640, "TFLOP/s",
                                                     "VIGIL-SLOW-CONFIRMED")}),
           gemm_fail("gpu-2", "a")});
  ASSERT_TRUE(g.slurm->get("gpu-1").drain);
  g.clock.advance(60);
  std::map<std::string, std::string> suites;
  for (const auto& r : dr.rechecks_due()) suites[r.node] = r.suite;
  EXPECT_EQ(suites, (std::map<std::string, std::string>{{"gpu-1", "qualify"}, {"gpu-2", ""}}));
}

// A listing that brings no report (the hold refused, the step killed, the report spooled) is a
// try too: the node is not listed on every CronJob run but after the same backoff.
TEST(Requalify, a_listing_that_brings_no_report_backs_off_like_a_failed_recheck) {
  GemmDrains g;
  Drainer dr(g.cfg, g.slurm, nullptr, g.clock);
  ASSERT_TRUE(dr.open().ok());
  GemmDrains::decide(dr, {gemm_fail("gpu-1", "a")});
  std::vector<int> listed_at;
  for (int age = 0; age <= 1000; age += 10, g.clock.advance(10))
    if (!due_nodes(dr).empty()) listed_at.push_back(age);
  EXPECT_EQ(listed_at, (std::vector<int>{60, 120, 180, 270, 410, 620, 930}));
}

}  // namespace
}  // namespace vigil::drainer
