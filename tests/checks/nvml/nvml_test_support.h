#pragma once
// Shared gtest fixture for the NVML checks: points CheckContext at the fake NVML library and
// the env var VIGIL_FAKE_NVML_FIXTURE at a fixture file; owns a temp dir (state, ad-hoc
// fixtures) that is removed after each test.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "check_factories.h"
#include "vigil/checks/check.h"

namespace vigil::testing {

class NvmlCheckTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (std::filesystem::temp_directory_path() / "vigil-nvml-test-XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    tmp_ = tmpl;
    ctx_.node = "test-node";
    ctx_.nvml_library = VIGIL_FAKE_NVML_LIBRARY;
    ctx_.xid_wait = std::chrono::milliseconds(50);
  }
  void TearDown() override {
    unsetenv("VIGIL_FAKE_NVML_FIXTURE");
    std::error_code ec;
    std::filesystem::remove_all(tmp_, ec);
  }

  static std::string fixture_path(const std::string& name) {
    return std::string(VIGIL_SOURCE_DIR) + "/tests/fixtures/nvml/" + name + ".json";
  }
  static nlohmann::json load_fixture(const std::string& name) {
    std::ifstream in(fixture_path(name));
    return nlohmann::json::parse(in);
  }
  void use_fixture(const std::string& name) {
    setenv("VIGIL_FAKE_NVML_FIXTURE", fixture_path(name).c_str(), 1);
  }
  // Writes j (or raw text) as this test's fixture and selects it.
  void use_fixture_json(const nlohmann::json& j) { use_fixture_text(j.dump(2)); }
  void use_fixture_text(const std::string& text) {
    const std::string path = (tmp_ / "fixture.json").string();
    std::ofstream(path, std::ios::trunc) << text;
    setenv("VIGIL_FAKE_NVML_FIXTURE", path.c_str(), 1);
  }
  void use_state_dir() { ctx_.state_dir = (tmp_ / "state").string(); }

  // A SKU with the given thresholds (check -> measurement -> threshold).
  void use_sku(std::map<std::string, std::map<std::string, Threshold>> thresholds,
               int gpu_count = 8) {
    sku_.name = "H100-SXM5-80GB";
    sku_.match.gpu_names = {"NVIDIA H100 80GB HBM3"};
    sku_.match.pci_device_ids = {0x2330};
    sku_.match.gpu_count = gpu_count;
    sku_.thresholds = std::move(thresholds);
    ctx_.sku = &sku_;
  }
  static Threshold le(double fail, std::optional<double> warn, std::string unit) {
    Threshold t;
    t.op = Op::kLe;
    t.fail = fail;
    t.warn = warn;
    t.unit = std::move(unit);
    t.source = "test";
    return t;
  }
  static Threshold ge(double fail, std::optional<double> warn, std::string unit) {
    Threshold t = le(fail, warn, std::move(unit));
    t.op = Op::kGe;
    return t;
  }

  CheckResult run(std::unique_ptr<Check> check) {
    EXPECT_TRUE(check->applies(ctx_).yes);
    CheckResult r = check->run(ctx_);
    EXPECT_EQ(r.check, check->name());
    return r;
  }

  static const Measurement* find(const CheckResult& r, std::string_view name,
                                 std::optional<int> gpu = {}) {
    for (const Measurement& m : r.measurements) {
      if (m.name == name && (!gpu || m.gpu == gpu)) return &m;
    }
    return nullptr;
  }
  static int count(const CheckResult& r, std::string_view name) {
    int n = 0;
    for (const Measurement& m : r.measurements) n += m.name == name;
    return n;
  }

  CheckContext ctx_;
  SkuConfig sku_;
  std::filesystem::path tmp_;
};

}  // namespace vigil::testing
