// Invalid figures are errors naming the figure, never verdicts; nothing is learned from them.
#include <gtest/gtest.h>

#include <limits>
#include <nlohmann/json.hpp>

#include "detect_test_support.h"
#include "vigil/detect/detect.h"

namespace vigil::detect {

using testing::eight;
using testing::kHour;
using testing::kT0;
using testing::ReportBuilder;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// Judges `bad` after one good report and returns the error; checks the state did not change.
std::string error_of(Engine& e, const NodeReport& bad) {
  const std::string before = e.snapshot().dump();
  auto r = e.judge(bad, kT0 + kHour);
  EXPECT_FALSE(r.ok()) << "an invalid figure was judged";
  EXPECT_EQ(e.snapshot().dump(), before) << "an invalid report changed the state";
  return r.ok() ? "" : r.error().to_string();
}

Engine primed() {
  Engine e(DetectConfig::defaults());
  auto r = e.judge(ReportBuilder("n1").gemm(eight(800)), kT0);
  EXPECT_TRUE(r.ok());
  return e;
}

}  // namespace

TEST(EngineErrors, nan_is_an_error_naming_the_figure) {
  Engine e = primed();
  std::vector<double> g = eight(800);
  g[3] = kNaN;
  EXPECT_EQ(error_of(e, ReportBuilder("n1").gemm(g)),
            "detect::Engine::judge: n1 gpu_gemm/gemm_bf16_tflops gpu3: value NaN is not a number; "
            "fix the probe: fail-slow detection skips this report");
}

TEST(EngineErrors, infinity_and_negative_values_are_errors) {
  Engine e = primed();
  std::vector<double> g = eight(800);
  g[0] = kInf;
  EXPECT_NE(error_of(e, ReportBuilder("n1").gemm(g)).find("gpu0: value infinity is not a figure"),
            std::string::npos);
  EXPECT_NE(error_of(e, ReportBuilder("n1").nvlink_busbw(-5))
                .find("n1 nccl_allreduce_nvlink/busbw node: value -5.00 is negative"),
            std::string::npos);
}

TEST(EngineErrors, a_bad_repeat_is_an_error) {
  Engine e = primed();
  auto samples = samples_from_report(ReportBuilder("n1").gemm(eight(800)), e.config());
  attach_repeats(samples, "gpu_gemm", "gemm_bf16_tflops", "gpu1", {800, kNaN});
  auto r = e.judge(samples, kT0 + kHour);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("gpu1: repeat 1 NaN is not a number"), std::string::npos);
}

TEST(EngineErrors, a_unit_other_than_the_configured_one_is_an_error) {
  Engine e = primed();
  const std::string err =
      error_of(e, ReportBuilder("n1").gpus("gpu_hbm", "hbm_bandwidth", "TB/s", {3, 3, 3, 3}));
  EXPECT_NE(err.find("gpu_hbm/hbm_bandwidth gpu0: unit 'TB/s' differs from the configured 'GB/s'"),
            std::string::npos)
      << err;
}

TEST(EngineErrors, a_unit_other_than_the_one_seen_before_is_an_error) {
  DetectConfig c = DetectConfig::defaults();
  c.metrics.push_back({"site_probe", "copy_bw", "", "hbm", Direction::kHigherIsBetter});
  Engine e(c);
  ASSERT_TRUE(
      e.judge(ReportBuilder("n1").node_figure("site_probe", "copy_bw", "GB/s", 10), kT0).ok());
  const std::string err =
      error_of(e, ReportBuilder("n2").node_figure("site_probe", "copy_bw", "MB/s", 10000));
  EXPECT_NE(err.find("n2 site_probe/copy_bw node: unit 'MB/s' differs from 'GB/s' seen before"),
            std::string::npos)
      << err;
}

TEST(EngineErrors, mixed_units_in_one_report_are_an_error) {
  DetectConfig c = DetectConfig::defaults();
  c.metrics.push_back({"site_probe", "copy_bw", "", "hbm", Direction::kHigherIsBetter});
  Engine e(c);
  NodeReport r = ReportBuilder("n1").gpus("site_probe", "copy_bw", "GB/s", {10, 10, 10, 10});
  r.checks[0].measurements[2].unit = "MB/s";
  auto v = e.judge(r, kT0);
  ASSERT_FALSE(v.ok());
  EXPECT_NE(v.error().message.find("gpu2: unit 'MB/s' differs from 'GB/s'"), std::string::npos);
}

TEST(EngineErrors, the_same_unit_twice_in_one_report_is_an_error) {
  Engine e = primed();
  NodeReport r = ReportBuilder("n1").gemm(eight(800));
  r.checks[0].measurements[5].gpu = 4;
  EXPECT_NE(error_of(e, r).find("gpu4: reported twice in one report"), std::string::npos);
}

TEST(EngineErrors, samples_of_two_nodes_in_one_call_are_an_error) {
  Engine e = primed();
  auto samples = samples_from_report(ReportBuilder("n1").gemm(eight(800)), e.config());
  samples[4].node = "n2";
  auto r = e.judge(samples, kT0 + kHour);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("must share node and sku"), std::string::npos);
}

TEST(EngineErrors, an_invalid_config_is_rejected_at_construction) {
  DetectConfig c = DetectConfig::defaults();
  c.margins["gemm"] = {0.2, 0.1};
  EXPECT_THROW(Engine{c}, std::invalid_argument);
}

}  // namespace vigil::detect
