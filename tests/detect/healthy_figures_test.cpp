// The data and the rule behind `vigil-drainer calibrate` (docs/thresholds.md, "Calibration").
#include <gtest/gtest.h>

#include "detect_test_support.h"

namespace vigil::detect {

using testing::kHour;
using testing::kSku;
using testing::kT0;
using testing::ReportBuilder;

TEST(HealthyFigures, pools_every_learned_figure_of_the_sku_and_counts_nodes_and_figures) {
  Engine e(DetectConfig::defaults());
  // 12 nodes x 3 runs, 8 GPUs each at 640..647 TFLOP/s; one node of another SKU.
  for (int run = 0; run < 3; ++run) {
    for (int n = 0; n < 12; ++n) {
      std::vector<double> g;
      for (int k = 0; k < 8; ++k) g.push_back(640 + k);
      ASSERT_TRUE(e.judge(ReportBuilder("gpu-" + std::to_string(n)).gemm(g).nvlink_busbw(470),
                          kT0 + run * kHour));
    }
    ASSERT_TRUE(e.judge(ReportBuilder("other-0", "A100-SXM4-80GB").gemm({200, 201, 202, 203}),
                        kT0 + run * kHour));
  }
  const auto figures = e.healthy_figures(kSku);
  ASSERT_EQ(figures.size(), 2u);
  const HealthyFigures& gemm = figures[0];
  EXPECT_EQ(gemm.check, "gpu_gemm");
  EXPECT_EQ(gemm.measurement, "gemm_bf16_tflops");
  EXPECT_EQ(gemm.unit, "TFLOP/s");
  EXPECT_EQ(gemm.kind, UnitKind::kGpu);
  EXPECT_EQ(gemm.nodes, 12u);
  EXPECT_EQ(gemm.runs, 12u * 3 * 8);
  EXPECT_DOUBLE_EQ(gemm.centre, 643.5);
  EXPECT_DOUBLE_EQ(gemm.lowest, 640);
  EXPECT_GT(gemm.spread, 0);
  EXPECT_EQ(figures[1].check, "nccl_allreduce_nvlink");
  EXPECT_EQ(figures[1].runs, 36u);
  EXPECT_TRUE(e.healthy_figures("B200-SXM-180GB").empty());
}

TEST(HealthyFigures, a_figure_past_its_fail_bound_never_enters_the_calibration_data) {
  Engine e(DetectConfig::defaults());
  NodeReport r = ReportBuilder("gpu-0").gemm({100, 100, 100, 100, 100, 100, 100, 100});
  for (auto& m : r.checks[0].measurements)
    m.threshold = Threshold{Op::kGe, 500, std::nullopt, "TFLOP/s", {}, false, {}};
  ASSERT_TRUE(e.judge(r, kT0));
  EXPECT_TRUE(e.healthy_figures(kSku).empty());
}

TEST(ProposeFloor, twice_the_engine_margins_or_five_sigmas_and_refused_without_enough_data) {
  HealthyFigures f;
  f.centre = 650;
  f.spread = 6.5;  // 1%
  f.nodes = 40;
  f.runs = 1000;
  const Margins gemm{0.04, 0.06};
  // Quiet figure: twice the engine's margins decide (0.12 and 0.08 below the centre).
  ProposedFloor quiet = propose_floor(f, gemm, 10, 50);
  EXPECT_TRUE(quiet.refused.empty());
  EXPECT_DOUBLE_EQ(quiet.fail, 650 * 0.88);
  EXPECT_DOUBLE_EQ(quiet.warn, 650 * 0.92);
  // A wide platform (H2D 35-53 GB/s, 10% spread): five sigmas below the centre.
  f.centre = 48;
  f.spread = 4.8;
  ProposedFloor wide = propose_floor(f, gemm, 10, 50);
  EXPECT_DOUBLE_EQ(wide.fail, 48 * 0.5);
  EXPECT_DOUBLE_EQ(wide.warn, 48 * 0.7);
  f.nodes = 9;
  EXPECT_NE(propose_floor(f, gemm, 10, 50).refused.find("9 nodes"), std::string::npos);
  f.nodes = 40;
  f.runs = 49;
  EXPECT_NE(propose_floor(f, gemm, 10, 50).refused.find("49 figures"), std::string::npos);
}

}  // namespace vigil::detect
