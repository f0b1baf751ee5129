// vigil-drainer calibrate's rewrite of a SKU thresholds file (docs/thresholds.md, "Calibration"),
// on the shipped H100 file, checked by the same loader vigil-check uses.
#include "vigil/drainer/calibrate.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "temp_dir.h"
#include "vigil/checks/registry.h"
#include "vigil/checks/sku.h"

namespace vigil::drainer {

namespace {

const std::string kH100File =
    std::string(VIGIL_SOURCE_DIR) + "/checks/thresholds/h100-sxm5-80gb.yaml";

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

detect::HealthyFigures figure(std::string check, std::string measurement, std::string unit,
                              detect::UnitKind kind, double centre, double spread,
                              std::size_t nodes = 40, std::size_t runs = 900) {
  detect::HealthyFigures f;
  f.check = std::move(check);
  f.measurement = std::move(measurement);
  f.unit = std::move(unit);
  f.kind = kind;
  f.centre = centre;
  f.spread = spread;
  f.nodes = nodes;
  f.runs = runs;
  f.lowest = centre - 4 * spread;
  return f;
}

}  // namespace

TEST(Calibrate, proposes_floors_from_the_fleet_and_the_file_still_loads) {
  const std::vector<detect::HealthyFigures> figures = {
      figure("gpu_gemm", "gemm_bf16_tflops", "TFLOP/s", detect::UnitKind::kGpu, 650, 6.5),
      figure("gpu_pcie_bw", "h2d_bandwidth", "GB/s", detect::UnitKind::kGpu, 41, 4.1),
      figure("nccl_allreduce_nvlink", "busbw", "GB/s", detect::UnitKind::kNode, 470, 4.7, 6, 40),
  };
  CalibrationOptions opt;
  opt.date = "2026-11-26";
  auto plan = plan_calibration(read(kH100File), "h100-sxm5-80gb.yaml", "H100-SXM5-80GB", figures,
                               detect::DetectConfig::defaults(), opt);
  ASSERT_TRUE(plan.ok()) << plan.error().to_string();
  ASSERT_EQ(plan.value().changes.size(), 2u) << plan.value().diff;
  EXPECT_NE(plan.value().diff.find("-    gemm_bf16_tflops: {op: \">=\", fail: 525, warn: 590"),
            std::string::npos)
      << plan.value().diff;
  // Too little data behind the NVLink figure (6 nodes): refused, and said so.
  bool refused = false;
  for (const auto& n : plan.value().notes)
    refused = refused || (n.rfind("nccl_allreduce_nvlink.busbw: not enough healthy data", 0) == 0);
  EXPECT_TRUE(refused);

  testing::TempDir d;
  const std::string path = d.write("h100.yaml", plan.value().text);
  auto loaded = load_sku_file(path, known_check_names());
  ASSERT_TRUE(loaded) << (loaded.errors.empty() ? "" : loaded.errors[0].to_string());
  const Threshold* gemm = loaded.value->find("gpu_gemm", "gemm_bf16_tflops");
  ASSERT_NE(gemm, nullptr);
  EXPECT_FALSE(gemm->unconfirmed);
  EXPECT_DOUBLE_EQ(gemm->fail, 572);   // 650 x (1 - 2 x 0.06)
  EXPECT_DOUBLE_EQ(*gemm->warn, 598);  // 650 x (1 - 2 x 0.04)
  EXPECT_EQ(gemm->calibrated,
            "2026-11-26 from 40 nodes, 900 figures, median 650 TFLOP/s, spread 1.0%");
  const Threshold* h2d = loaded.value->find("gpu_pcie_bw", "h2d_bandwidth");
  EXPECT_DOUBLE_EQ(h2d->fail, 20.5);  // a 10% spread platform: five sigmas below 41
  EXPECT_FALSE(h2d->unconfirmed);
  // Untouched: the floor without enough data, and every other bound.
  EXPECT_TRUE(loaded.value->find("nccl_allreduce_nvlink", "busbw")->unconfirmed);
  EXPECT_TRUE(loaded.value->find("gpu_pcie_bw", "d2h_bandwidth")->unconfirmed);
  EXPECT_EQ(loaded.value->find("nvml_ecc", "volatile_uncorrected_ecc")->fail, 0);
}

// The NVLink floor states the NCCL algorithm it was measured with; calibrating keeps that.
TEST(Calibrate, a_floors_nccl_algorithm_survives_calibration) {
  CalibrationOptions opt;
  opt.date = "2026-11-26";
  auto plan = plan_calibration(
      read(kH100File), "h100-sxm5-80gb.yaml", "H100-SXM5-80GB",
      {figure("nccl_allreduce_nvlink", "busbw", "GB/s", detect::UnitKind::kNode, 470, 4.7)},
      detect::DetectConfig::defaults(), opt);
  ASSERT_TRUE(plan.ok()) << plan.error().to_string();
  ASSERT_EQ(plan.value().changes.size(), 1u) << plan.value().diff;
  testing::TempDir d;
  auto loaded = load_sku_file(d.write("h100.yaml", plan.value().text), known_check_names());
  ASSERT_TRUE(loaded) << (loaded.errors.empty() ? "" : loaded.errors[0].to_string());
  const Threshold* nvlink = loaded.value->find("nccl_allreduce_nvlink", "busbw");
  EXPECT_FALSE(nvlink->calibrated.empty());
  EXPECT_EQ(nvlink->nccl_algorithm, "NVLS");
}

TEST(Calibrate, a_crlf_file_is_calibrated_and_keeps_its_line_ends) {
  std::string text = read(kH100File);
  std::string crlf;
  for (char c : text) crlf += c == '\n' ? std::string("\r\n") : std::string(1, c);
  CalibrationOptions opt;
  opt.date = "2026-11-26";
  auto plan = plan_calibration(
      crlf, "h100.yaml", "H100-SXM5-80GB",
      {figure("gpu_gemm", "gemm_bf16_tflops", "TFLOP/s", detect::UnitKind::kGpu, 650, 6.5)},
      detect::DetectConfig::defaults(), opt);
  ASSERT_TRUE(plan.ok()) << plan.error().to_string();
  EXPECT_EQ(plan.value().changes.size(), 1u);
  EXPECT_EQ(plan.value().text.find("\r\r"), std::string::npos);
  std::size_t lf = 0, cr = 0;
  for (std::size_t i = 0; i < plan.value().text.size(); ++i) {
    lf += plan.value().text[i] == '\n';
    cr += plan.value().text[i] == '\n' && i > 0 && plan.value().text[i - 1] == '\r';
  }
  EXPECT_EQ(lf, cr);  // every line still ends in CRLF
}

TEST(Calibrate, the_wrong_sku_file_is_an_error_naming_it) {
  auto plan = plan_calibration(read(kH100File), "h100-sxm5-80gb.yaml", "H200-SXM-141GB", {},
                               detect::DetectConfig::defaults(), {});
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.error().to_string().find("h100-sxm5-80gb.yaml"), std::string::npos);
  EXPECT_NE(plan.error().to_string().find("not 'H200-SXM-141GB'"), std::string::npos);
}

TEST(Calibrate, healthy_figures_round_trip_through_the_api_json) {
  const auto f = figure("gpu_hbm", "hbm_bandwidth", "GB/s", detect::UnitKind::kGpu, 3000, 30);
  nlohmann::json j = {{"sku", "H100-SXM5-80GB"}, {"figures", {to_json(f)}}};
  auto back = healthy_figures_from_json(j);
  ASSERT_TRUE(back.ok()) << back.error().to_string();
  ASSERT_EQ(back.value().size(), 1u);
  EXPECT_EQ(back.value()[0].measurement, "hbm_bandwidth");
  EXPECT_EQ(back.value()[0].runs, 900u);
  j["figures"][0]["kind"] = "rack";
  EXPECT_FALSE(healthy_figures_from_json(j).ok());
}

}  // namespace vigil::drainer
