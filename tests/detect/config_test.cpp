#include "vigil/detect/config.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

namespace vigil::detect {

using nlohmann::json;

namespace {

bool has_error(const std::vector<std::string>& errors, const std::string& start) {
  for (const std::string& e : errors) {
    if (e.rfind(start, 0) == 0) return true;
  }
  return false;
}

}  // namespace

TEST(DetectConfig, defaults_are_valid) {
  EXPECT_EQ(DetectConfig::defaults().validate(), std::vector<std::string>{});
}

TEST(DetectConfig, defaults_judge_the_figures_the_checks_emit) {
  const DetectConfig c = DetectConfig::defaults();
  // Names from checks/src (add_measurement calls) and checks/thresholds/*.yaml.
  EXPECT_NE(c.find_metric("gpu_gemm", "gemm_bf16_tflops", "TFLOP/s"), nullptr);
  EXPECT_NE(c.find_metric("gpu_gemm", "gemm_fp8_tflops", "TFLOP/s"), nullptr);
  EXPECT_NE(c.find_metric("gpu_hbm", "hbm_bandwidth", "GB/s"), nullptr);
  EXPECT_NE(c.find_metric("gpu_pcie_bw", "h2d_bandwidth", "GB/s"), nullptr);
  EXPECT_NE(c.find_metric("gpu_pcie_bw", "d2h_bandwidth", "GB/s"), nullptr);
  for (const char* check :
       {"nccl_allreduce_nvlink", "nccl_allreduce_ib", "host_allreduce", "fabric_allreduce_ib"}) {
    const MetricSpec* m = c.find_metric(check, "busbw", "GB/s");
    ASSERT_NE(m, nullptr) << check;
    EXPECT_EQ(m->kind, "allreduce");
  }
  // Health counters and link state are not performance figures.
  EXPECT_EQ(c.find_metric("nvml_ecc", "volatile_uncorrected_ecc", "count"), nullptr);
  EXPECT_EQ(c.find_metric("ib_port", "port_rate", "Gb/s"), nullptr);
  EXPECT_EQ(c.find_metric("gpu_gemm", "gemm_duration", "s"), nullptr);  // "*" filters by unit
}

TEST(DetectConfig, validate_names_each_bad_field) {
  DetectConfig c = DetectConfig::defaults();
  c.margins["gemm"] = {0.10, 0.05};
  c.margins["hbm"] = {0.02, 1.5};
  c.history_window = 2;
  c.min_history = 5;
  c.min_fleet = 2;
  c.min_peers = 1;
  c.fleet_spread_k = -1;
  c.cross_margin_scale = 0.5;
  c.drift_tau = 0;
  c.forget_after_s = 0;
  const std::string dup = "metrics[" + std::to_string(c.metrics.size()) + "]";  // one per catalog
  const std::string bad = "metrics[" + std::to_string(c.metrics.size() + 1) + "]";  // metric
  c.metrics.push_back({"gpu_hbm", "hbm_bandwidth", "GB/s", "hbm", Direction::kHigherIsBetter});
  c.metrics.push_back({"x", "*", "", "nope", Direction::kHigherIsBetter});
  const auto errors = c.validate();
  EXPECT_TRUE(has_error(errors, "margins.gemm: warn must be below fail"));
  EXPECT_TRUE(has_error(errors, "margins.hbm.fail: 1.5 must be in (0, 1)"));
  EXPECT_TRUE(has_error(errors, "history_window: 2 must be in [3, 1024]"));
  EXPECT_TRUE(has_error(errors, "min_history: 5"));
  EXPECT_TRUE(has_error(errors, "min_fleet: 2 must be >= 3"));
  EXPECT_TRUE(has_error(errors, "min_peers: 1 must be >= 3"));
  EXPECT_TRUE(has_error(errors, "fleet_spread_k: -1"));
  EXPECT_TRUE(has_error(errors, "cross_margin_scale: 0.5 must be in [1, 5]"));
  EXPECT_TRUE(has_error(errors, "drift_tau: 0"));
  EXPECT_TRUE(has_error(errors, "forget_after_s: must be > 0"));
  EXPECT_TRUE(has_error(errors, dup + ": duplicate"));
  EXPECT_TRUE(has_error(errors, bad + ".unit: required"));
  EXPECT_TRUE(has_error(errors, bad + ".kind: 'nope' has no entry in margins"));
}

TEST(DetectConfig, all_baselines_off_is_invalid) {
  DetectConfig c = DetectConfig::defaults();
  c.use_peers = c.use_history = c.use_fleet = false;
  EXPECT_TRUE(has_error(c.validate(), "baselines:"));
}

TEST(DetectConfig, json_merges_margins_over_defaults) {
  auto c = config_from_json(json::parse(R"({"margins": {"gemm": {"fail": 0.09}},
      "baselines": {"fleet": false}, "min_fleet": 50})"));
  ASSERT_TRUE(c.ok()) << c.error().to_string();
  EXPECT_DOUBLE_EQ(c->margins.at("gemm").fail, 0.09);
  EXPECT_DOUBLE_EQ(c->margins.at("gemm").warn, DetectConfig::defaults().margins.at("gemm").warn);
  EXPECT_FALSE(c->use_fleet);
  EXPECT_TRUE(c->use_peers);
  EXPECT_EQ(c->min_fleet, 50);
  EXPECT_EQ(c->metrics.size(), DetectConfig::defaults().metrics.size());
}

TEST(DetectConfig, json_metrics_replace_the_default_list) {
  auto c = config_from_json(json::parse(R"({"metrics": [{"check": "gpu_hbm",
      "measurement": "hbm_bandwidth", "kind": "hbm", "direction": "higher"}]})"));
  ASSERT_TRUE(c.ok()) << c.error().to_string();
  ASSERT_EQ(c->metrics.size(), 1u);
  EXPECT_EQ(c->find_metric("gpu_gemm", "gemm_bf16_tflops", "TFLOP/s"), nullptr);
}

TEST(DetectConfig, json_reports_every_problem_at_once) {
  auto c = config_from_json(json::parse(R"({"min_peers": "three", "margin": {},
      "margins": {"pcie": {"warn": 0.2, "fail": 0.1, "bad": 1}},
      "metrics": [{"check": "a", "measurement": "b", "kind": "gemm", "direction": "up"}]})"));
  ASSERT_FALSE(c.ok());
  const std::string e = c.error().message;
  EXPECT_NE(e.find("min_peers: must be an integer"), std::string::npos) << e;
  EXPECT_NE(e.find("margin: unknown field"), std::string::npos) << e;
  EXPECT_NE(e.find("margins.pcie.bad: unknown field"), std::string::npos) << e;
  EXPECT_NE(e.find("metrics[0].direction: 'up'"), std::string::npos) << e;
}

TEST(DetectConfig, json_runs_validate_after_defaults) {
  auto c = config_from_json(json::parse(R"({"margins": {"pcie": {"warn": 0.2, "fail": 0.1}}})"));
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().message.find("margins.pcie: warn must be below fail"), std::string::npos);
}

TEST(DetectConfig, to_json_round_trips) {
  DetectConfig c = DetectConfig::defaults();
  c.margins["gemm"] = {0.025, 0.07};
  c.metrics.push_back({"my_probe", "latency_us", "us", "gemm", Direction::kLowerIsBetter});
  c.use_history = false;
  c.forget_after_s = 3600;
  auto back = config_from_json(to_json(c));
  ASSERT_TRUE(back.ok()) << back.error().to_string();
  EXPECT_EQ(to_json(*back), to_json(c));
  EXPECT_EQ(back->metrics.back().direction, Direction::kLowerIsBetter);
}

TEST(DetectConfigFile, the_shared_file_loads_and_its_errors_name_it) {
  char dir[] = "/tmp/vigil-detect-XXXXXX";
  ASSERT_TRUE(::mkdtemp(dir));
  const std::string path = std::string(dir) + "/" + kDetectionFileName;
  auto missing = load_config_file(path);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().to_string().find(path), std::string::npos);
  std::ofstream(path) << R"({"min_peers": 5})";
  auto ok = load_config_file(path);
  ASSERT_TRUE(ok.ok()) << ok.error().to_string();
  EXPECT_EQ(ok->min_peers, 5);
  std::ofstream(path, std::ios::trunc) << "{not json";
  auto bad = load_config_file(path);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find(path + ": not valid JSON"), std::string::npos);
  std::filesystem::remove_all(dir);
}

}  // namespace vigil::detect
