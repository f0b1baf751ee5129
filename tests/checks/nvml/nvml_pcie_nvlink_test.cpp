// nvml_pcie and nvml_nvlink: link state, width/generation and counter deltas kept in the
// state dir between runs.
#include "nvml_test_support.h"

namespace vigil::testing {
namespace {

using nvml_pcie = NvmlCheckTest;
using nvml_nvlink = NvmlCheckTest;

TEST_F(nvml_pcie, healthy_gen5_x16_passes) {
  use_fixture("healthy_8x_h100");
  use_sku({{"nvml_pcie",
            {{"pcie_link_width", ge(16, std::nullopt, "lanes")},
             {"pcie_link_gen", ge(5, std::nullopt, "gen")}}}});
  const CheckResult r = run(make_nvml_pcie_check());
  EXPECT_EQ(r.status, Status::kPass) << r.message;
  EXPECT_EQ(count(r, "pcie_link_width"), 8);
  EXPECT_EQ(find(r, "pcie_link_width", 0)->value, 16);
  EXPECT_EQ(find(r, "pcie_link_width", 0)->unit, "lanes");
  EXPECT_EQ(find(r, "pcie_link_gen", 0)->value, 5);
  EXPECT_EQ(find(r, "pcie_link_gen", 0)->unit, "gen");
  EXPECT_EQ(count(r, "pcie_replay_delta"), 0);  // no state dir: no deltas
  EXPECT_NE(r.message.find("replay deltas not measured"), std::string::npos) << r.message;
}

TEST_F(nvml_pcie, width_below_sku_threshold_fails) {
  use_fixture("pcie_degraded");  // gpu6 at x8
  use_sku({{"nvml_pcie", {{"pcie_link_width", ge(16, std::nullopt, "lanes")}}}});
  const CheckResult r = run(make_nvml_pcie_check());
  EXPECT_EQ(r.status, Status::kFail);
  EXPECT_EQ(r.message, "gpu6 PCIe x8 (<16)");
  EXPECT_EQ(r.fault_code, "VIGIL-NVML-PCIE-WIDTH");
}

TEST_F(nvml_pcie, width_below_max_without_sku_only_warns) {
  use_fixture("pcie_degraded");
  const CheckResult r = run(make_nvml_pcie_check());
  EXPECT_EQ(r.status, Status::kWarn);
  EXPECT_EQ(r.message, "gpu6 PCIe x8 (<16)");
}

TEST_F(nvml_pcie, idle_gen_downshift_never_fails) {
  nlohmann::json j = load_fixture("healthy_8x_h100");
  j["gpu_defaults"]["pcie"]["current_gen"] = 1;  // idle H100s report gen 1 of 5
  use_fixture_json(j);
  CheckResult r = run(make_nvml_pcie_check());
  EXPECT_EQ(r.status, Status::kPass) << r.message;  // no SKU: reported, not judged
  EXPECT_NE(r.message.find("8 below max gen"), std::string::npos) << r.message;

  use_sku({{"nvml_pcie", {{"pcie_link_gen", ge(5, std::nullopt, "gen")}}}});
  r = run(make_nvml_pcie_check());
  EXPECT_EQ(r.status, Status::kWarn);  // the SKU's fail bound is demoted to warn
  EXPECT_EQ(r.fault_code, "VIGIL-NVML-PCIE-GEN");
  EXPECT_NE(r.message.find("gpu0 PCIe gen1 (<5)"), std::string::npos) << r.message;
  ASSERT_TRUE(find(r, "pcie_link_gen", 0)->threshold);
  EXPECT_EQ(find(r, "pcie_link_gen", 0)->threshold->warn, 5);
  EXPECT_EQ(find(r, "pcie_link_gen", 0)->threshold->validate(), "");
}

TEST_F(nvml_pcie, replay_delta_baseline_then_growth_against_sku) {
  use_state_dir();
  use_sku({{"nvml_pcie", {{"pcie_replay_delta", le(100, 10, "count")}}}});
  nlohmann::json j = load_fixture("healthy_8x_h100");
  j["gpus"][1]["pcie"] = {{"replay_counter", 40}};
  use_fixture_json(j);
  CheckResult r = run(make_nvml_pcie_check());
  EXPECT_EQ(r.status, Status::kPass) << r.message;
  EXPECT_EQ(find(r, "pcie_replay_delta", 1)->value, 0);
  EXPECT_NE(r.message.find("baseline recorded"), std::string::npos) << r.message;
  EXPECT_TRUE(std::filesystem::exists(tmp_ / "state" / "nvml_pcie.test-node.json"));

  j["gpus"][1]["pcie"] = {{"replay_counter", 190}};  // +150 since the previous run
  use_fixture_json(j);
  r = run(make_nvml_pcie_check());
  EXPECT_EQ(r.status, Status::kFail);
  EXPECT_EQ(find(r, "pcie_replay_delta", 1)->value, 150);
  EXPECT_EQ(find(r, "pcie_replay_delta", 0)->value, 0);
  EXPECT_EQ(r.message, "gpu1 PCIe replays +150");
  EXPECT_EQ(r.fault_code, "VIGIL-NVML-PCIE-REPLAY");

  r = run(make_nvml_pcie_check());  // unchanged counter: delta 0 again
  EXPECT_EQ(r.status, Status::kPass) << r.message;
  EXPECT_EQ(find(r, "pcie_replay_delta", 1)->value, 0);
}

TEST_F(nvml_pcie, reset_counter_counts_from_zero) {
  use_state_dir();
  nlohmann::json j = load_fixture("healthy_8x_h100");
  j["gpus"][0]["pcie"] = {{"replay_counter", 500}};
  use_fixture_json(j);
  (void)run(make_nvml_pcie_check());
  j["gpus"][0]["pcie"] = {{"replay_counter", 7}};  // driver reloaded
  use_fixture_json(j);
  const CheckResult r = run(make_nvml_pcie_check());
  EXPECT_EQ(find(r, "pcie_replay_delta", 0)->value, 7);
}

TEST_F(nvml_nvlink, healthy_h100_has_18_links_up_per_gpu) {
  use_fixture("healthy_8x_h100");
  const CheckResult r = run(make_nvml_nvlink_check());
  EXPECT_EQ(r.status, Status::kPass) << r.message;
  EXPECT_EQ(count(r, "nvlink_links_down"), 8);
  EXPECT_EQ(find(r, "nvlink_links_down", 0)->value, 0);
  EXPECT_EQ(count(r, "nvlink_replay_delta"), 0);  // no state dir
  EXPECT_EQ(r.message.rfind("144 NVLinks up", 0), 0u) << r.message;
}

// A SKU file (every link of an NVSwitch board is wired) fails a link that is down; without one
// the board's link count is unknown (a bridgeless H100 PCIe may report unused links inactive:
// DCGM judges only NVML_FI_DEV_NVLINK_LINK_COUNT links), so it warns (review F17).
TEST_F(nvml_nvlink, link_down_fails_under_a_sku_file_and_warns_without_one) {
  use_fixture("nvlink_down");  // gpu5 nvlink4
  const CheckResult unknown = run(make_nvml_nvlink_check());
  EXPECT_EQ(unknown.status, Status::kWarn) << unknown.message;
  EXPECT_EQ(unknown.message, "gpu5 nvlink4 down");
  ASSERT_NE(find(unknown, "nvlink_links_down", 5), nullptr);
  EXPECT_TRUE(find(unknown, "nvlink_links_down", 5)->threshold->unconfirmed);
  use_sku({{"nvml_nvlink",
            {{"nvlink_links_down", le(0, std::nullopt, "count")}}}});  // an NVSwitch board
  const CheckResult r = run(make_nvml_nvlink_check());
  EXPECT_EQ(r.status, Status::kFail);
  EXPECT_EQ(r.message, "gpu5 nvlink4 down");
  EXPECT_EQ(r.fault_code, "VIGIL-NVML-NVLINK-DOWN");
  EXPECT_EQ(find(r, "nvlink_links_down", 5)->value, 1);
}

// nvml.h (CUDA 13.3) raised NVML_NVLINK_MAX_LINKS from 18 to 36; a link past 17 must be seen.
TEST_F(nvml_nvlink, links_past_18_are_scanned) {
  use_sku({{"nvml_nvlink",
            {{"nvlink_links_down", le(0, std::nullopt, "count")}}}});  // an NVSwitch board
  nlohmann::json j = load_fixture("healthy_8x_h100");
  j["gpus"][1]["nvlink"] = {{"link_count", 36}, {"down", {30}}};
  use_fixture_json(j);
  const CheckResult r = run(make_nvml_nvlink_check());
  EXPECT_EQ(r.status, Status::kFail) << r.message;
  EXPECT_EQ(r.message, "gpu1 nvlink30 down");
  EXPECT_EQ(find(r, "nvlink_links_down", 1)->value, 1);
}

// Where the driver answers NVML_FI_DEV_NVLINK_LINK_COUNT (nvml.h field 91), the count is reported
// so a SKU file can require every link of the board: a GPU whose driver counts 16 of NVLink 5's
// 18 fails it. The count never narrows the scan: a link past it that is down is still seen.
TEST_F(nvml_nvlink, the_drivers_link_count_is_a_figure_the_sku_judges_and_never_hides_a_link) {
  nlohmann::json j = load_fixture("healthy_8x_h100");
  for (auto& gpu : j["gpus"]) gpu["nvlink_link_count_field"] = 18;
  j["gpus"][2]["nvlink_link_count_field"] = 16;
  use_fixture_json(j);
  const CheckResult unknown = run(make_nvml_nvlink_check());
  EXPECT_EQ(unknown.status, Status::kPass) << unknown.message;  // no SKU: the count is a figure
  ASSERT_NE(find(unknown, "nvlink_link_count", 2), nullptr);
  EXPECT_EQ(find(unknown, "nvlink_link_count", 2)->value, 16);

  use_sku({{"nvml_nvlink", {{"nvlink_link_count", ge(18, std::nullopt, "count")}}}});
  const CheckResult r = run(make_nvml_nvlink_check());
  EXPECT_EQ(r.status, Status::kFail) << r.message;
  EXPECT_EQ(r.message, "gpu2 has 16 NVLinks");
  EXPECT_EQ(r.fault_code, "VIGIL-NVML-NVLINK-COUNT");

  j["gpus"][2]["nvlink"] = {{"link_count", 18}, {"down", {17}}};  // past the driver's count
  use_fixture_json(j);
  use_sku({{"nvml_nvlink", {{"nvlink_links_down", le(0, std::nullopt, "count")}}}});
  const CheckResult down = run(make_nvml_nvlink_check());
  EXPECT_EQ(down.status, Status::kFail) << down.message;
  EXPECT_EQ(down.message, "gpu2 nvlink17 down");
}

TEST_F(nvml_nvlink, other_fixtures_pass) {
  for (const char* name : {"dbe_gpu3", "row_remap_pending", "thermal_slowdown", "xid_fatal"}) {
    use_fixture(name);
    EXPECT_EQ(run(make_nvml_nvlink_check()).status, Status::kPass) << name;
  }
}

TEST_F(nvml_nvlink, counter_deltas_against_sku_thresholds) {
  use_state_dir();
  use_sku({{"nvml_nvlink",
            {{"nvlink_replay_delta", le(0, std::nullopt, "count")},
             {"nvlink_crc_flit_delta", le(1000, 100, "count")}}}});
  nlohmann::json j = load_fixture("healthy_8x_h100");
  j["gpus"][2]["nvlink"] = {{"counters", {{"7", {{"replay", 10}, {"crc_flit", 5}}}}}};
  use_fixture_json(j);
  CheckResult r = run(make_nvml_nvlink_check());
  EXPECT_EQ(r.status, Status::kPass) << r.message;
  EXPECT_NE(r.message.find("baseline recorded"), std::string::npos) << r.message;
  EXPECT_EQ(count(r, "nvlink_replay_delta"), 8);
  EXPECT_EQ(count(r, "nvlink_recovery_delta"), 8);
  EXPECT_EQ(count(r, "nvlink_crc_data_delta"), 8);
  EXPECT_EQ(find(r, "nvlink_replay_delta", 2)->value, 0);

  j["gpus"][2]["nvlink"] = {{"counters", {{"7", {{"replay", 13}, {"crc_flit", 205}}}}}};
  use_fixture_json(j);
  r = run(make_nvml_nvlink_check());
  EXPECT_EQ(r.status, Status::kFail);
  EXPECT_EQ(r.message, "gpu2 nvlink7 replays +3");
  EXPECT_EQ(r.fault_code, "VIGIL-NVML-NVLINK-REPLAY");
  EXPECT_EQ(find(r, "nvlink_crc_flit_delta", 2)->value, 200);
  EXPECT_EQ(find(r, "nvlink_crc_flit_delta", 2)->status(), Status::kWarn);
}

TEST_F(nvml_nvlink, corrupt_state_file_rerecords_baseline) {
  use_state_dir();
  std::filesystem::create_directories(ctx_.state_dir);
  std::ofstream(tmp_ / "state" / "nvml_nvlink.test-node.json") << "{ not json";
  use_fixture("healthy_8x_h100");
  const CheckResult r = run(make_nvml_nvlink_check());
  EXPECT_EQ(r.status, Status::kPass) << r.message;
  EXPECT_NE(r.message.find("previous state malformed"), std::string::npos) << r.message;
  std::ifstream in(tmp_ / "state" / "nvml_nvlink.test-node.json");
  const nlohmann::json saved = nlohmann::json::parse(in);  // rewritten, valid
  EXPECT_EQ(saved["counters"].size(), 8u * 18u * 4u);
}

TEST_F(nvml_nvlink, gpus_without_nvlink_are_skipped) {
  nlohmann::json j = load_fixture("healthy_8x_h100");
  j["gpu_defaults"].erase("nvlink");
  use_fixture_json(j);
  const CheckResult r = run(make_nvml_nvlink_check());
  EXPECT_EQ(r.status, Status::kSkipped);
  EXPECT_EQ(r.message, "NVLink not supported on 8 GPUs");
}

}  // namespace
// Review F02: NVML reports every link of a MIG-enabled GPU as inactive (the fake does too, as
// DCGM documents the driver's behaviour); those links are not judged, the others still are.
TEST_F(nvml_nvlink, links_of_a_mig_enabled_gpu_are_not_judged_as_down) {
  use_sku({{"nvml_nvlink",
            {{"nvlink_links_down", le(0, std::nullopt, "count")}}}});  // an NVSwitch board
  nlohmann::json j = load_fixture("healthy_8x_h100");
  j["gpus"][3]["mig"] = true;
  use_fixture_json(j);
  CheckResult r = run(make_nvml_nvlink_check());
  EXPECT_EQ(r.status, Status::kPass) << r.message;
  EXPECT_EQ(find(r, "nvlink_links_down", 3), nullptr);
  EXPECT_NE(r.message.find("links of MIG-enabled gpu3 not judged"), std::string::npos) << r.message;
  EXPECT_EQ(r.message.rfind("126 NVLinks up", 0), 0u) << r.message;

  j["gpus"][5]["nvlink"] = {{"down", {4}}};  // a real down link on a GPU without MIG
  use_fixture_json(j);
  r = run(make_nvml_nvlink_check());
  EXPECT_EQ(r.status, Status::kFail);
  EXPECT_EQ(r.message.rfind("gpu5 nvlink4 down", 0), 0u) << r.message;

  j["gpu_defaults"]["mig"] = true;  // every GPU in MIG mode: nothing to judge, and it says why
  for (auto& g : j["gpus"]) g["mig"] = true;
  use_fixture_json(j);
  r = run(make_nvml_nvlink_check());
  EXPECT_EQ(r.status, Status::kSkipped) << r.message;
  EXPECT_NE(r.message.find("not judged (NVML reports them inactive under MIG)"), std::string::npos)
      << r.message;
}

// Review F13: Blackwell drivers answer NOT_SUPPORTED for the legacy DL counters (nvml.h:
// "unsupported for Blackwell+"); a counter nobody answered is not reported as a measured 0.
TEST_F(nvml_nvlink, unsupported_error_counters_are_not_reported_as_zeros) {
  use_state_dir();
  nlohmann::json j = load_fixture("healthy_8x_h100");
  j["gpus"][0]["errors"] = {{"nvmlDeviceGetNvLinkErrorCounter", 3}};  // NVML_ERROR_NOT_SUPPORTED
  use_fixture_json(j);
  const CheckResult r = run(make_nvml_nvlink_check());
  EXPECT_EQ(r.status, Status::kPass) << r.message;
  EXPECT_EQ(count(r, "nvlink_replay_delta"), 7) << "gpu0 has no counter figure";
  EXPECT_NE(find(r, "nvlink_links_down", 0), nullptr) << "its link states are still judged";
  EXPECT_NE(r.message.find("some NVLink error counters not supported on gpu0"), std::string::npos)
      << r.message;
}

// A counter the driver cannot read (UNKNOWN) is an error of that query, but it must not hide
// a link that is down on the same GPU (review F13's second half).
TEST_F(nvml_nvlink, a_failed_counter_query_does_not_hide_a_down_link) {
  use_sku({{"nvml_nvlink",
            {{"nvlink_links_down", le(0, std::nullopt, "count")}}}});  // an NVSwitch board
  use_state_dir();
  nlohmann::json j = load_fixture("healthy_8x_h100");
  j["gpus"][5]["nvlink"] = {{"down", {4}}};
  j["gpus"][5]["errors"] = {{"nvmlDeviceGetNvLinkErrorCounter", 999}};  // NVML_ERROR_UNKNOWN
  use_fixture_json(j);
  const CheckResult r = run(make_nvml_nvlink_check());
  EXPECT_EQ(r.status, Status::kFail) << r.message;
  EXPECT_NE(r.message.find("gpu5 nvlink4 down"), std::string::npos) << r.message;
  EXPECT_EQ(find(r, "nvlink_links_down", 5)->value, 1);
  EXPECT_EQ(find(r, "nvlink_replay_delta", 5), nullptr);
}

// A failed counter query on link 3 must not consume the growth of links 0..2: the saved
// baselines stay where they were, and the next run that reads every link reports it.
TEST_F(nvml_nvlink, a_failed_counter_query_on_one_link_keeps_the_growth_of_the_others) {
  use_state_dir();
  nlohmann::json j = load_fixture("healthy_8x_h100");
  use_fixture_json(j);
  ASSERT_EQ(run(make_nvml_nvlink_check()).status, Status::kPass);  // baselines recorded
  j["gpus"][2]["nvlink"] = {{"link_count", 18},
                            {"counters", {{"1", {{"replay", 7}}}}},
                            {"counter_errors", {{"3", 999}}}};  // NVML_ERROR_UNKNOWN, link 3
  use_fixture_json(j);
  const CheckResult failed = run(make_nvml_nvlink_check());
  EXPECT_EQ(find(failed, "nvlink_replay_delta", 2), nullptr) << failed.message;
  j["gpus"][2]["nvlink"].erase("counter_errors");
  use_fixture_json(j);
  const CheckResult next = run(make_nvml_nvlink_check());
  const Measurement* m = find(next, "nvlink_replay_delta", 2);
  ASSERT_NE(m, nullptr) << next.message;
  EXPECT_EQ(m->value, 7) << next.message;
}

}  // namespace vigil::testing
