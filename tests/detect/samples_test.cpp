#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "detect_test_support.h"
#include "vigil/detect/detect.h"

namespace vigil::detect {

using testing::ReportBuilder;

TEST(SamplesFromReport, takes_only_configured_performance_figures) {
  NodeReport r = ReportBuilder("gpu-1")
                     .gemm({790, 800})
                     .nvlink_busbw(478)
                     .node_figure("nvml_ecc", "volatile_uncorrected_ecc", "count", 0)
                     .node_figure("gpu_gemm", "gemm_seconds", "s", 2.5);
  auto samples = samples_from_report(r, DetectConfig::defaults());
  ASSERT_EQ(samples.size(), 3u);
  EXPECT_EQ(samples[0].check, "gpu_gemm");
  EXPECT_EQ(samples[0].measurement, "gemm_bf16_tflops");
  EXPECT_EQ(samples[0].unit_kind, UnitKind::kGpu);
  EXPECT_EQ(samples[0].unit_id, "gpu0");
  EXPECT_EQ(samples[1].unit_id, "gpu1");
  EXPECT_DOUBLE_EQ(samples[1].observed.value, 800);
  EXPECT_EQ(samples[1].unit, "TFLOP/s");
  EXPECT_EQ(samples[1].node, "gpu-1");
  EXPECT_EQ(samples[1].sku, testing::kSku);
  EXPECT_EQ(samples[2].check, "nccl_allreduce_nvlink");
  EXPECT_EQ(samples[2].unit_kind, UnitKind::kNode);
  EXPECT_EQ(samples[2].unit_id, "node");
}

TEST(SamplesFromReport, ports_are_units_and_a_gpu_port_names_both) {
  DetectConfig c = DetectConfig::defaults();
  c.metrics.push_back({"ib_write_bw", "write_bw", "Gb/s", "allreduce", Direction::kHigherIsBetter});
  NodeReport r = ReportBuilder("gpu-1");
  CheckResult ib;
  ib.check = "ib_write_bw";
  Measurement m;
  m.name = "write_bw";
  m.unit = "Gb/s";
  m.value = 380;
  m.port = "mlx5_0/1";
  ib.measurements.push_back(m);
  m.gpu = 2;
  m.port = "nvlink3";
  ib.measurements.push_back(m);
  r.checks.push_back(ib);
  auto samples = samples_from_report(r, c);
  ASSERT_EQ(samples.size(), 2u);
  EXPECT_EQ(samples[0].unit_kind, UnitKind::kPort);
  EXPECT_EQ(samples[0].unit_id, "mlx5_0/1");
  EXPECT_EQ(samples[1].unit_id, "gpu2:nvlink3");
}

TEST(SamplesFromReport, skips_checks_that_could_not_run) {
  NodeReport r = ReportBuilder("gpu-1").gemm({10, 10, 10, 10}).status("gpu_gemm", Status::kError);
  EXPECT_TRUE(samples_from_report(r, DetectConfig::defaults()).empty());
}

TEST(SamplesFromReport, a_figure_below_its_floor_is_marked_from_failed_run) {
  NodeReport r = ReportBuilder("gpu-1").gemm({600, 790});
  Threshold floor;
  floor.fail = 640;
  floor.unit = "TFLOP/s";
  for (Measurement& m : r.checks[0].measurements) m.threshold = floor;
  auto samples = samples_from_report(r, DetectConfig::defaults());
  ASSERT_EQ(samples.size(), 2u);
  EXPECT_TRUE(samples[0].from_failed_run);
  EXPECT_FALSE(samples[1].from_failed_run);
}

TEST(AttachRepeats, sets_the_repeats_of_the_named_unit_only) {
  auto samples =
      samples_from_report(ReportBuilder("gpu-1").gemm({790, 700, 795}), DetectConfig::defaults());
  EXPECT_TRUE(attach_repeats(samples, "gpu_gemm", "gemm_bf16_tflops", "gpu1", {701, 699}));
  EXPECT_EQ(samples[1].observed.repeats, (std::vector<double>{701, 699}));
  EXPECT_TRUE(samples[0].observed.repeats.empty());
  EXPECT_FALSE(attach_repeats(samples, "gpu_gemm", "gemm_bf16_tflops", "gpu9", {1, 2}));
}

TEST(IsSuspicious, flags_a_unit_past_the_warn_margin_against_its_peers) {
  const Margins m{0.03, 0.06};
  const std::vector<double> v{800, 798, 802, 775, 799, 801, 797, 800};  // gpu3 3.1% low
  EXPECT_TRUE(is_suspicious(v, 3, m));
  EXPECT_FALSE(is_suspicious(v, 0, m));
  const std::vector<double> near{800, 798, 802, 780, 799, 801, 797, 800};  // 2.5% low
  EXPECT_FALSE(is_suspicious(near, 3, m));
}

TEST(IsSuspicious, needs_enough_peers_and_honours_direction) {
  const Margins m{0.03, 0.06};
  EXPECT_FALSE(is_suspicious(std::vector<double>{800, 800, 700}, 2, m));  // 2 others < 3
  EXPECT_TRUE(is_suspicious(std::vector<double>{800, 800, 800, 700}, 3, m));
  EXPECT_FALSE(
      is_suspicious(std::vector<double>{800, 800, 800, 700}, 3, m, Direction::kLowerIsBetter));
  EXPECT_TRUE(is_suspicious(std::vector<double>{10, 10, 10, 11}, 3, m, Direction::kLowerIsBetter));
  EXPECT_FALSE(is_suspicious(std::vector<double>{800, 800, 800, 700}, 9, m));  // no such unit
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_TRUE(is_suspicious(std::vector<double>{800, 800, 800, nan}, 3, m));
}

TEST(IsSuspicious, node_figures_compare_with_an_expected_value) {
  const Margins m{0.03, 0.06};
  EXPECT_TRUE(is_suspicious(460.0, 480.0, m));   // 4.2% low
  EXPECT_FALSE(is_suspicious(470.0, 480.0, m));  // 2.1% low
  EXPECT_FALSE(is_suspicious(400.0, 0.0, m));    // no expected figure: nothing to compare
}

}  // namespace vigil::detect
