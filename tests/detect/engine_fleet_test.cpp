// The fleet baseline, new SKUs, spread allowances, and lower-is-better figures.
#include <gtest/gtest.h>

#include "detect_test_support.h"
#include "vigil/detect/detect.h"

namespace vigil::detect {

using testing::eight;
using testing::find;
using testing::judge_ok;
using testing::kHour;
using testing::kT0;
using testing::ReportBuilder;
using testing::seed_fleet;
using testing::test_config;

TEST(EngineFleet, a_node_slow_from_its_first_report_fails_against_the_fleet) {
  Engine e(test_config());
  seed_fleet(e, 25, kT0);
  auto rv = judge_ok(e, ReportBuilder("new").gemm(eight(690)).nvlink_busbw(410), kT0 + 60);
  for (int g = 0; g < 8; ++g) {
    EXPECT_EQ(find(rv, "gpu_gemm", "gpu" + std::to_string(g))->status, Status::kPass) << g;
  }
  const Verdict* node = find(rv, "gpu_gemm", "node");
  ASSERT_NE(node, nullptr);
  EXPECT_EQ(node->status, Status::kFail);
  EXPECT_EQ(node->baseline, "fleet");
  EXPECT_EQ(node->fleet, 25);
  EXPECT_EQ(node->message, "8-gpu median gemm_bf16_tflops 689 TFLOP/s, 14% below 25 nodes (797)");
  const Verdict* bw = find(rv, "nccl_allreduce_nvlink", "node");
  EXPECT_EQ(bw->status, Status::kFail);
  EXPECT_EQ(bw->message, "busbw 410 GB/s, 15% below 25 nodes (480)");
  EXPECT_EQ(rv.worst_for("gpu_gemm")->unit_id, "node");
}

TEST(EngineFleet, is_used_only_from_min_fleet_other_nodes_of_the_same_sku) {
  Engine e(test_config());
  seed_fleet(e, 19, kT0);
  auto rv = judge_ok(e, ReportBuilder("new").nvlink_busbw(410), kT0 + 60);
  EXPECT_EQ(rv.verdicts[0].fleet, 0);
  EXPECT_EQ(rv.verdicts[0].status, Status::kPass);
  e.reset_node("new");
  seed_fleet(e, 20, kT0 + 120);  // peer-19 is the 20th
  rv = judge_ok(e, ReportBuilder("new").nvlink_busbw(410), kT0 + 180);
  EXPECT_EQ(rv.verdicts[0].fleet, 20);
  EXPECT_EQ(rv.verdicts[0].status, Status::kFail);
}

TEST(EngineFleet, a_new_sku_has_no_fleet_until_its_own_nodes_report) {
  Engine e(test_config());
  seed_fleet(e, 25, kT0);  // H100 nodes
  auto rv = judge_ok(e, ReportBuilder("b1", "B200-SXM-180GB").gemm(eight(2250)).nvlink_busbw(830),
                     kT0 + 60);
  for (const Verdict& v : rv.verdicts) {
    EXPECT_EQ(v.fleet, 0) << v.message;
    EXPECT_NE(v.baseline, "fleet") << v.message;
    EXPECT_EQ(v.status, Status::kPass) << v.message;
  }
  EXPECT_EQ(find(rv, "gpu_gemm", "node"), nullptr);
}

TEST(EngineFleet, a_naturally_wide_fleet_does_not_fail_its_tail) {
  DetectConfig c = test_config();
  Engine wide(c), narrow(c);
  for (int i = 0; i < 40; ++i) {  // wide: 480 +- 10% in even steps; narrow: +- 0.5%
    const double step = (i % 21 - 10) / 100.0;
    judge_ok(wide, ReportBuilder("p" + std::to_string(i)).nvlink_busbw(480 * (1 + step)), kT0);
    judge_ok(narrow, ReportBuilder("p" + std::to_string(i)).nvlink_busbw(480 * (1 + step / 20)),
             kT0);
  }
  const NodeReport slow = ReportBuilder("x").nvlink_busbw(480 * 0.88);  // 12% below the median
  EXPECT_EQ(judge_ok(narrow, slow, kT0 + 1).verdicts[0].status, Status::kFail);
  EXPECT_NE(judge_ok(wide, slow, kT0 + 1).verdicts[0].status, Status::kFail);
}

TEST(EngineFleet, a_node_failing_against_the_fleet_is_not_learned_into_it) {
  Engine e(test_config());
  seed_fleet(e, 25, kT0);
  for (int i = 0; i < 3; ++i) judge_ok(e, ReportBuilder("new").gemm(eight(690)), kT0 + i * kHour);
  auto rv = judge_ok(e, ReportBuilder("new").gemm(eight(690)), kT0 + 3 * kHour);
  EXPECT_EQ(find(rv, "gpu_gemm", "node")->status, Status::kFail);
  EXPECT_EQ(find(rv, "gpu_gemm", "gpu0")->history, 0) << "slow figures entered history";
  EXPECT_EQ(e.size().fleet_entries, 50u) << "25 nodes x (gemm, busbw); none from `new`";
}

TEST(EngineDirection, lower_is_better_figures_fail_when_they_rise) {
  DetectConfig c = test_config();
  c.metrics.push_back({"ib_latency", "latency_us", "us", "allreduce", Direction::kLowerIsBetter});
  Engine e(c);
  for (int i = 0; i < 4; ++i) {
    judge_ok(e, ReportBuilder("n1").node_figure("ib_latency", "latency_us", "us", 2.0),
             kT0 + i * kHour);
  }
  auto rv = judge_ok(e, ReportBuilder("n1").node_figure("ib_latency", "latency_us", "us", 2.4),
                     kT0 + 4 * kHour);
  EXPECT_EQ(rv.verdicts[0].status, Status::kFail);
  EXPECT_NEAR(rv.verdicts[0].deviation, 0.2, 1e-12);
  EXPECT_EQ(rv.verdicts[0].message, "latency_us 2.40 us, 20% above its last 4 runs (2.00)");
}

}  // namespace vigil::detect
