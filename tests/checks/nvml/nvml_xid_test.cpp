// nvml_xid: XID events delivered by the fake's event set during the wait window.
#include <chrono>

#include "nvml_test_support.h"

namespace vigil::testing {
namespace {

using nvml_xid = NvmlCheckTest;

TEST_F(nvml_xid, quiet_node_passes_after_waiting_the_window) {
  use_fixture("healthy_8x_h100");
  ctx_.xid_wait = std::chrono::milliseconds(200);
  const auto start = std::chrono::steady_clock::now();
  const CheckResult r = run(make_nvml_xid_check());
  const auto waited = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(r.status, Status::kPass) << r.message;
  EXPECT_GE(waited, std::chrono::milliseconds(190));
  EXPECT_LT(waited, std::chrono::seconds(5));
  EXPECT_EQ(find(r, "xid_fatal_events")->value, 0);
  EXPECT_EQ(find(r, "xid_other_events")->value, 0);
  EXPECT_EQ(r.message, "no critical XID in 0.2s on 8 GPUs");
}

TEST_F(nvml_xid, fatal_xid_fails_and_names_xid_and_gpu) {
  use_fixture("xid_fatal");  // XID 79 on gpu3 (fallen off the bus), XID 13 on gpu1
  const CheckResult r = run(make_nvml_xid_check());
  EXPECT_EQ(r.status, Status::kFail);
  EXPECT_EQ(r.message, "XID 79 gpu3 (reboot)");  // the catalogue's RESTART_BM
  EXPECT_EQ(r.fault_code, "VIGIL-NVML-XID-REBOOT");
  EXPECT_EQ(r.remedy, Remedy::kReboot);
  EXPECT_EQ(find(r, "xid_fatal_events")->value, 1);
  EXPECT_EQ(find(r, "xid_other_events")->value, 1);
  EXPECT_EQ(find(r, "xid_fatal_events")->unit, "count");
  // ... and a figure of gpu3 alone, which the drainer's part history charges (review W7)
  EXPECT_EQ(count(r, "xid_gpu_fatal"), 1);
  ASSERT_NE(find(r, "xid_gpu_fatal", 3), nullptr);
  EXPECT_EQ(find(r, "xid_gpu_fatal", 3)->status(), Status::kFail);
}

TEST_F(nvml_xid, warn_list_xid_warns_and_application_xid_only_reports) {
  nlohmann::json j = load_fixture("healthy_8x_h100");
  j["xid_events"] = {{{"gpu", 5}, {"xid", 94}}, {{"gpu", 5}, {"xid", 94}}};
  use_fixture_json(j);
  CheckResult r = run(make_nvml_xid_check());
  EXPECT_EQ(r.status, Status::kWarn);
  EXPECT_EQ(r.message, "XID 94 gpu5 (watch) x2");
  EXPECT_EQ(r.fault_code, "VIGIL-NVML-XID");
  EXPECT_EQ(find(r, "xid_other_events")->value, 2);

  j["xid_events"] = {{{"gpu", 0}, {"xid", 13}}};
  use_fixture_json(j);
  r = run(make_nvml_xid_check());
  EXPECT_EQ(r.status, Status::kPass);
  EXPECT_EQ(r.message, "XID 13 gpu0 (not health-critical)");
  EXPECT_FALSE(r.remedy);
}

// The catalogue, not a short list, decides: XID 109 (context switch timeout) is RESET_GPU in
// NVIDIA's catalogue, XID 45 (preemptive cleanup) follows the other XID; the worst remedy of
// the window is the check's.
TEST_F(nvml_xid, every_xid_is_judged_by_the_catalogue_and_the_worst_remedy_wins) {
  nlohmann::json j = load_fixture("healthy_8x_h100");
  j["xid_events"] = {{{"gpu", 1}, {"xid", 45}}, {{"gpu", 2}, {"xid", 109}}};
  use_fixture_json(j);
  CheckResult r = run(make_nvml_xid_check());
  EXPECT_EQ(r.status, Status::kFail);
  EXPECT_EQ(r.message, "XID 109 gpu2 (reset_gpu)");
  EXPECT_EQ(r.remedy, Remedy::kResetGpu);
  EXPECT_EQ(r.fault_code, "VIGIL-NVML-XID-RESET-GPU");

  j["xid_events"] = {{{"gpu", 2}, {"xid", 48}}, {{"gpu", 4}, {"xid", 79}}};
  use_fixture_json(j);
  r = run(make_nvml_xid_check());
  EXPECT_EQ(r.remedy, Remedy::kReboot);
  EXPECT_EQ(r.message, "XID 48 gpu2 (reset_gpu), XID 79 gpu4 (reboot)");
}

TEST_F(nvml_xid, sku_threshold_can_fail_on_other_xids) {
  nlohmann::json j = load_fixture("healthy_8x_h100");
  j["xid_events"] = {{{"gpu", 0}, {"xid", 13}}, {{"gpu", 2}, {"xid", 31}}};
  use_fixture_json(j);
  use_sku({{"nvml_xid", {{"xid_other_events", le(1, 0, "count")}}}});
  const CheckResult r = run(make_nvml_xid_check());
  EXPECT_EQ(r.status, Status::kFail);
  EXPECT_EQ(r.message, "XID 13 gpu0, XID 31 gpu2");
  EXPECT_FALSE(r.remedy);  // a site bound, not the catalogue: nothing says what clears it
}

}  // namespace
}  // namespace vigil::testing
