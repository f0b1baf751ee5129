// nvml_nvlink on a Blackwell driver: the DL counters answer NOT_SUPPORTED, the NVLink5 field
// values are read per link (scopeId) instead. The fake answers them as nvml.h 13.3.29 describes
// them; no Blackwell has run this (docs/gpu-validation.md): Vigil's model, not hardware.
#include "nvml_test_support.h"

namespace vigil::testing {
namespace {

// The BER word: bits 0-7 the exponent, bits 8-11 the mantissa (nvml.h).
unsigned long long ber(unsigned mantissa, unsigned exponent) {
  return (static_cast<unsigned long long>(mantissa) << 8) | exponent;
}

class nvml_nvlink5 : public NvmlCheckTest {
 protected:
  // Every GPU a B200 whose DL counters answer NOT_SUPPORTED; gpu2 answers `nvlink5` per link.
  nlohmann::json blackwell(nlohmann::json nvlink5) {
    nlohmann::json j = load_fixture("healthy_8x_h100");
    for (auto& gpu : j["gpus"]) gpu["name"] = "NVIDIA B200";
    j["gpu_defaults"]["nvlink"] = {{"link_count", 18}, {"legacy_counters", false}};
    j["gpus"][2]["nvlink"] = {{"link_count", 18}, {"legacy_counters", false}, {"nvlink5", nvlink5}};
    return j;
  }
};

TEST_F(nvml_nvlink5, a_blackwell_gpus_counters_come_from_the_nvlink5_fields_as_deltas) {
  use_state_dir();
  use_sku({{"nvml_nvlink",
            {{"nvlink_recovery_failed_delta", le(0, std::nullopt, "count")},
             {"nvlink_symbol_errors_delta", le(100, 0, "count")}}}});
  nlohmann::json j = blackwell(
      {{"5", {{"symbol_errors", 10}, {"recovery_failed", 1}}}, {"6", {{"symbol_errors", 4}}}});
  use_fixture_json(j);
  CheckResult r = run(make_nvml_nvlink_check());
  EXPECT_EQ(r.status, Status::kPass) << r.message;  // first run: baselines
  EXPECT_NE(r.message.find("baseline recorded"), std::string::npos) << r.message;
  EXPECT_EQ(find(r, "nvlink_symbol_errors_delta", 2)->value, 0);
  EXPECT_EQ(find(r, "nvlink_replay_delta", 2), nullptr) << "the DL counters are not there";
  EXPECT_EQ(find(r, "nvlink_symbol_errors_delta", 0), nullptr)
      << "a GPU whose fields are not answered reports no zero";
  EXPECT_NE(r.message.find("some NVLink error counters not supported on 8 GPUs"), std::string::npos)
      << r.message;

  j["gpus"][2]["nvlink"]["nvlink5"] = {{"5", {{"symbol_errors", 13}, {"recovery_failed", 1}}},
                                       {"6", {{"symbol_errors", 9}}}};
  use_fixture_json(j);
  r = run(make_nvml_nvlink_check());
  EXPECT_EQ(r.status, Status::kWarn) << r.message;
  EXPECT_EQ(find(r, "nvlink_symbol_errors_delta", 2)->value, 8);
  EXPECT_EQ(r.fault_code, "VIGIL-NVML-NVLINK-SYMBOL");
  EXPECT_NE(r.message.find("gpu2 nvlink5,nvlink6 symbol errors +8"), std::string::npos)
      << r.message;

  j["gpus"][2]["nvlink"]["nvlink5"]["5"]["recovery_failed"] = 2;
  use_fixture_json(j);
  r = run(make_nvml_nvlink_check());
  EXPECT_EQ(r.status, Status::kFail) << r.message;  // DCGM: a failed recovery fails
  EXPECT_EQ(r.fault_code, "VIGIL-NVML-NVLINK-RECOVERY-FAILED");
  EXPECT_NE(r.message.find("gpu2 nvlink5 failed recoveries +1"), std::string::npos) << r.message;
}

// DCGM 4.6.0's rule, case by case as its own unit test states it (DcgmUtilitiesTests.cpp):
// above 1e-12 is high; 1e-12 itself, 10e-13 and NVML's zero (15/255) are not. A mantissa of 0
// is a BER of 0 here.
TEST_F(nvml_nvlink5, the_effective_ber_is_judged_by_dcgms_limit) {
  struct Case {
    unsigned mantissa, exponent;
    bool high;
  };
  for (const Case c :
       {Case{15, 255, false}, Case{1, 12, false}, Case{2, 12, true}, Case{10, 13, false},
        Case{11, 13, true}, Case{1, 11, true}, Case{0, 3, false}, Case{9, 14, false}}) {
    use_state_dir();
    use_sku({{"nvml_nvlink", {{"nvlink_effective_ber_high", le(0, std::nullopt, "bool")}}}});
    use_fixture_json(blackwell({{"3", {{"effective_ber", ber(c.mantissa, c.exponent)}}}}));
    const CheckResult r = run(make_nvml_nvlink_check());
    const auto* m = find(r, "nvlink_effective_ber_high", 2);
    ASSERT_NE(m, nullptr) << c.mantissa << "e-" << c.exponent;
    EXPECT_EQ(m->value, c.high ? 1 : 0) << c.mantissa << "e-" << c.exponent;
    EXPECT_EQ(r.status, c.high ? Status::kFail : Status::kPass) << r.message;
    if (c.high) {
      EXPECT_EQ(r.fault_code, "VIGIL-NVML-NVLINK-BER");
      const std::string word =
          "gpu2 nvlink3 " + std::to_string(c.mantissa) + "e-" + std::to_string(c.exponent);
      EXPECT_NE(r.message.find(word), std::string::npos) << r.message;
      EXPECT_NE(r.message.find("effective BER above 1e-12"), std::string::npos) << r.message;
    }
  }
}

// A field answered with an error (not NOT_SUPPORTED) fails that GPU's counters, and a link that
// is down is still judged.
TEST_F(nvml_nvlink5, a_failed_field_query_is_an_error_that_hides_no_down_link) {
  use_state_dir();
  use_sku({{"nvml_nvlink", {{"nvlink_links_down", le(0, std::nullopt, "count")}}}});
  nlohmann::json j = blackwell({{"1", {{"symbol_errors", 1}}}});
  j["gpus"][2]["nvlink"]["down"] = {4};
  j["gpus"][2]["errors"] = {{"nvmlDeviceGetFieldValues", 999}};
  use_fixture_json(j);
  const CheckResult r = run(make_nvml_nvlink_check());
  EXPECT_EQ(r.status, Status::kFail) << r.message;
  EXPECT_NE(r.message.find("gpu2 nvlink4 down"), std::string::npos) << r.message;
  EXPECT_EQ(find(r, "nvlink_symbol_errors_delta", 2), nullptr);
}

}  // namespace
}  // namespace vigil::testing
