// HBM health: nvml_ecc, nvml_row_remap, nvml_retired_pages against the fixtures.
#include "nvml_test_support.h"

namespace vigil::testing {
namespace {

using nvml_ecc = NvmlCheckTest;
using nvml_row_remap = NvmlCheckTest;
using nvml_retired_pages = NvmlCheckTest;

TEST_F(nvml_ecc, healthy_node_passes_with_a_measurement_per_gpu) {
  use_fixture("healthy_8x_h100");
  const CheckResult r = run(make_nvml_ecc_check());
  EXPECT_EQ(r.status, Status::kPass) << r.message;
  EXPECT_EQ(count(r, "volatile_uncorrected_ecc"), 8);
  EXPECT_EQ(count(r, "aggregate_corrected_ecc"), 8);
  EXPECT_EQ(find(r, "aggregate_corrected_ecc", 4)->value, 11);
  EXPECT_EQ(find(r, "volatile_uncorrected_ecc", 0)->unit, "count");
  EXPECT_TRUE(r.fault_code.empty());
}

TEST_F(nvml_ecc, volatile_dbe_fails_without_any_sku) {
  use_fixture("dbe_gpu3");
  ASSERT_EQ(ctx_.sku, nullptr);
  const CheckResult r = run(make_nvml_ecc_check());
  EXPECT_EQ(r.status, Status::kFail);
  EXPECT_EQ(r.message, "gpu3 volatile DBE 1");
  EXPECT_EQ(r.fault_code, "VIGIL-NVML-DBE");
  EXPECT_EQ(find(r, "volatile_uncorrected_ecc", 3)->status(), Status::kFail);
  EXPECT_EQ(find(r, "volatile_uncorrected_ecc", 2)->status(), Status::kPass);
}

TEST_F(nvml_ecc, corrected_count_is_judged_by_the_sku_threshold_only) {
  use_fixture("healthy_8x_h100");
  EXPECT_EQ(run(make_nvml_ecc_check()).status, Status::kPass);  // 11 corrected, no SKU
  use_sku({{"nvml_ecc", {{"aggregate_corrected_ecc", le(1000, 10, "count")}}}});
  const CheckResult r = run(make_nvml_ecc_check());
  EXPECT_EQ(r.status, Status::kWarn);
  EXPECT_EQ(r.message, "gpu4 corrected ECC 11");
  EXPECT_EQ(r.fault_code, "VIGIL-NVML-SBE");
}

TEST_F(nvml_ecc, other_fixtures_without_ecc_problems_pass) {
  for (const char* name : {"row_remap_pending", "nvlink_down", "thermal_slowdown", "xid_fatal"}) {
    use_fixture(name);
    EXPECT_EQ(run(make_nvml_ecc_check()).status, Status::kPass) << name;
  }
}

TEST_F(nvml_ecc, ecc_disabled_everywhere_is_skipped) {
  nlohmann::json j = load_fixture("healthy_8x_h100");
  j["gpu_defaults"].erase("ecc");
  for (auto& g : j["gpus"]) g.erase("ecc");
  use_fixture_json(j);
  const CheckResult r = run(make_nvml_ecc_check());
  EXPECT_EQ(r.status, Status::kSkipped);
  EXPECT_EQ(r.message, "ECC counters not supported on 8 GPUs");
}

TEST_F(nvml_row_remap, healthy_node_passes) {
  use_fixture("healthy_8x_h100");
  const CheckResult r = run(make_nvml_row_remap_check());
  EXPECT_EQ(r.status, Status::kPass) << r.message;
  EXPECT_EQ(count(r, "row_remap_pending"), 8);
  EXPECT_EQ(count(r, "row_remap_failed"), 8);
}

TEST_F(nvml_row_remap, pending_remap_fails_with_reason_ready_message) {
  use_fixture("row_remap_pending");
  const CheckResult r = run(make_nvml_row_remap_check());
  EXPECT_EQ(r.status, Status::kFail);
  EXPECT_EQ(r.message, "gpu3 row remap pending (1)");
  EXPECT_EQ(r.fault_code, "VIGIL-NVML-REMAP-PENDING");
  EXPECT_EQ(find(r, "row_remap_pending", 3)->value, 1);
  EXPECT_EQ(r.remedy, Remedy::kResetGpu);  // NVIDIA: applied at the next GPU reset
}

TEST_F(nvml_row_remap, sku_threshold_overrides_the_built_in_one) {
  use_fixture("row_remap_pending");
  // An operator who follows DCGM (pending only warns) says so in the SKU file.
  use_sku({{"nvml_row_remap", {{"row_remap_pending", le(1, 0, "count")}}}});
  const CheckResult r = run(make_nvml_row_remap_check());
  EXPECT_EQ(r.status, Status::kWarn);
  EXPECT_EQ(r.message, "gpu3 row remap pending (1)");
  EXPECT_FALSE(r.remedy);  // only a failing check names one
}

TEST_F(nvml_row_remap, failed_remap_fails) {
  nlohmann::json j = load_fixture("healthy_8x_h100");
  j["gpus"][6]["remapped_rows"] = {{"uncorrectable", 512}, {"failure", 1}};
  use_fixture_json(j);
  const CheckResult r = run(make_nvml_row_remap_check());
  EXPECT_EQ(r.status, Status::kFail);
  EXPECT_EQ(r.message, "gpu6 row remap failed (1)");
  EXPECT_EQ(r.fault_code, "VIGIL-NVML-REMAP-FAILED");
  EXPECT_EQ(r.remedy, Remedy::kService);  // NVIDIA's RMA policy thresholds
}

TEST_F(nvml_row_remap, a_failed_remap_beside_a_pending_one_asks_for_service) {
  nlohmann::json j = load_fixture("row_remap_pending");
  j["gpus"][6]["remapped_rows"] = {{"uncorrectable", 512}, {"failure", 1}};
  use_fixture_json(j);
  const CheckResult r = run(make_nvml_row_remap_check());
  EXPECT_EQ(r.status, Status::kFail);
  EXPECT_EQ(r.remedy, Remedy::kService);
}

TEST_F(nvml_row_remap, dbe_fixture_without_pending_remap_passes) {
  use_fixture("dbe_gpu3");
  EXPECT_EQ(run(make_nvml_row_remap_check()).status, Status::kPass);
}

TEST_F(nvml_retired_pages, h100_without_page_retirement_is_skipped) {
  use_fixture("healthy_8x_h100");
  const CheckResult r = run(make_nvml_retired_pages_check());
  EXPECT_EQ(r.status, Status::kSkipped);
  EXPECT_EQ(r.message, "page retirement not supported on 8 GPUs");
  EXPECT_TRUE(r.measurements.empty());
}

TEST_F(nvml_retired_pages, pending_retirement_warns_and_clear_passes) {
  nlohmann::json j = load_fixture("healthy_8x_h100");
  j["gpu_defaults"]["retired_pages_pending"] = false;
  use_fixture_json(j);
  CheckResult r = run(make_nvml_retired_pages_check());
  EXPECT_EQ(r.status, Status::kPass) << r.message;
  EXPECT_EQ(count(r, "retired_pages_pending"), 8);
  EXPECT_EQ(find(r, "retired_pages_pending", 0)->unit, "bool");

  j["gpus"][1]["retired_pages_pending"] = true;
  use_fixture_json(j);
  r = run(make_nvml_retired_pages_check());
  EXPECT_EQ(r.status, Status::kWarn);
  EXPECT_EQ(r.message, "gpu1 retired pages pending");
  EXPECT_EQ(r.fault_code, "VIGIL-NVML-PAGES-PENDING");
}

}  // namespace
}  // namespace vigil::testing
