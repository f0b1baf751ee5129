// nvml_clock_events and nvml_temperature against the fixtures.
#include "nvml_test_support.h"

namespace vigil::testing {
namespace {

using nvml_clock_events = NvmlCheckTest;
using nvml_temperature = NvmlCheckTest;

TEST_F(nvml_clock_events, idle_reason_alone_passes) {
  use_fixture("healthy_8x_h100");  // every GPU reports 0x1 (GPU idle)
  const CheckResult r = run(make_nvml_clock_events_check());
  EXPECT_EQ(r.status, Status::kPass) << r.message;
  for (const char* name :
       {"hw_slowdown", "hw_thermal_slowdown", "hw_power_brake", "sw_thermal_slowdown"}) {
    EXPECT_EQ(count(r, name), 8) << name;
    EXPECT_EQ(find(r, name, 0)->unit, "bool");
    EXPECT_EQ(find(r, name, 0)->value, 0);
  }
}

TEST_F(nvml_clock_events, hardware_thermal_slowdown_fails) {
  use_fixture("thermal_slowdown");  // gpu2: 0x48 = HW slowdown | HW thermal slowdown
  const CheckResult r = run(make_nvml_clock_events_check());
  EXPECT_EQ(r.status, Status::kFail);
  EXPECT_NE(r.message.find("gpu2 HW thermal slowdown"), std::string::npos) << r.message;
  EXPECT_EQ(r.fault_code, "VIGIL-NVML-HW-THERMAL");
  EXPECT_EQ(find(r, "hw_thermal_slowdown", 2)->value, 1);
  EXPECT_EQ(find(r, "hw_power_brake", 2)->value, 0);
}

// Review F08: the generic HW slowdown bit (0x8) without a specific cause is also set by power
// Fast Trigger protection and during P-state or clock changes (nvml.h), so one sample of it
// alone warns, as DCGM's health watch does; the specific causes still fail (above, below).
TEST_F(nvml_clock_events, hw_slowdown_without_a_specific_cause_only_warns) {
  nlohmann::json j = load_fixture("healthy_8x_h100");
  j["gpus"][4]["clocks_event_reasons"] = "0x8";
  use_fixture_json(j);
  const CheckResult r = run(make_nvml_clock_events_check());
  EXPECT_EQ(r.status, Status::kWarn) << r.message;
  EXPECT_EQ(r.message, "gpu4 HW slowdown");
  EXPECT_EQ(r.fault_code, "VIGIL-NVML-HW-SLOWDOWN");
}

TEST_F(nvml_clock_events, power_brake_fails_and_software_thermal_only_warns) {
  nlohmann::json j = load_fixture("healthy_8x_h100");
  j["gpus"][7]["clocks_event_reasons"] = "0x80";
  use_fixture_json(j);
  CheckResult r = run(make_nvml_clock_events_check());
  EXPECT_EQ(r.status, Status::kFail);
  EXPECT_EQ(r.message, "gpu7 HW power brake");
  EXPECT_EQ(r.fault_code, "VIGIL-NVML-POWER-BRAKE");

  j["gpus"][7]["clocks_event_reasons"] = "0x20";
  use_fixture_json(j);
  r = run(make_nvml_clock_events_check());
  EXPECT_EQ(r.status, Status::kWarn);
  EXPECT_EQ(r.message, "gpu7 SW thermal slowdown");
  EXPECT_EQ(r.fault_code, "VIGIL-NVML-SW-THERMAL");
}

TEST_F(nvml_clock_events, other_fixtures_pass) {
  for (const char* name : {"dbe_gpu3", "row_remap_pending", "nvlink_down", "seven_of_eight_gpus"}) {
    use_fixture(name);
    EXPECT_EQ(run(make_nvml_clock_events_check()).status, Status::kPass) << name;
  }
}

TEST_F(nvml_temperature, healthy_node_passes_and_reports_power) {
  use_fixture("healthy_8x_h100");
  const CheckResult r = run(make_nvml_temperature_check());
  EXPECT_EQ(r.status, Status::kPass) << r.message;
  EXPECT_EQ(count(r, "gpu_temperature"), 8);
  EXPECT_EQ(find(r, "gpu_temperature", 4)->value, 35);
  EXPECT_EQ(find(r, "gpu_temperature", 4)->unit, "celsius");
  EXPECT_DOUBLE_EQ(find(r, "gpu_power", 0)->value, 71.234);
  EXPECT_EQ(find(r, "gpu_power", 0)->unit, "W");
  EXPECT_EQ(r.message, "8 GPUs: hottest 35C");
}

// nvmlDeviceGetTemperatureV (the non-deprecated call) is used when it answers; the fake answers
// only when the struct version is nvmlTemperature_v1, so a wrong version would read nothing.
TEST_F(nvml_temperature, the_versioned_call_is_preferred_and_the_old_one_is_the_fallback) {
  nlohmann::json j = load_fixture("healthy_8x_h100");
  j["gpus"][1]["temperature_v"] = true;
  j["gpus"][1]["temperature_c"] = 41;
  j["gpus"][1]["errors"] = {{"nvmlDeviceGetTemperature", 999}};  // the old call would fail
  j["gpus"][2]["temperature_v"] = true;
  j["gpus"][2]["temperature_c"] = 38;
  j["gpus"][2]["errors"] = {{"nvmlDeviceGetTemperatureV", 999}};  // V refuses: old call answers
  use_fixture_json(j);
  const CheckResult r = run(make_nvml_temperature_check());
  EXPECT_EQ(r.status, Status::kPass) << r.message;
  EXPECT_EQ(find(r, "gpu_temperature", 1)->value, 41);
  EXPECT_EQ(find(r, "gpu_temperature", 2)->value, 38);
  EXPECT_EQ(r.message, "8 GPUs: hottest 41C");
}

TEST_F(nvml_temperature, above_the_gpus_own_slowdown_temperature_warns) {
  use_fixture("thermal_slowdown");  // gpu2 at 91C, slowdown 89C, shutdown 92C
  const CheckResult r = run(make_nvml_temperature_check());
  EXPECT_EQ(r.status, Status::kWarn);
  EXPECT_EQ(r.message, "gpu2 91C (>89C)");
  EXPECT_EQ(r.fault_code, "VIGIL-NVML-TEMP");
}

// Review F23: without a SKU bound the driver's limits only warn. The shutdown temperature
// cannot be observed (the GPU powers off first), so the old built-in fail could never fire; the
// "max operating" temperature (nvml.h NVML_TEMPERATURE_THRESHOLD_GPU_MAX) warns earlier.
TEST_F(nvml_temperature, the_drivers_limits_only_warn_from_the_max_operating_temperature) {
  nlohmann::json j = load_fixture("thermal_slowdown");
  j["gpus"][2]["temperature_gpu_max_c"] = 87;
  j["gpus"][2]["temperature_c"] = 88;
  use_fixture_json(j);
  CheckResult r = run(make_nvml_temperature_check());
  EXPECT_EQ(r.status, Status::kWarn) << r.message;
  EXPECT_EQ(r.message, "gpu2 88C (>87C)");
  j["gpus"][2]["temperature_c"] = 95;  // past its shutdown temperature: still no built-in fail
  use_fixture_json(j);
  r = run(make_nvml_temperature_check());
  EXPECT_EQ(r.status, Status::kWarn) << r.message;
  EXPECT_TRUE(find(r, "gpu_temperature", 2)->threshold->unconfirmed);
}

TEST_F(nvml_temperature, sku_threshold_replaces_the_driver_limits) {
  use_fixture("thermal_slowdown");
  use_sku({{"nvml_temperature", {{"gpu_temperature", le(85, 80, "celsius")}}}});
  const CheckResult r = run(make_nvml_temperature_check());
  EXPECT_EQ(r.status, Status::kFail);
  EXPECT_EQ(r.message, "gpu2 91C (>85C)");
}

}  // namespace
}  // namespace vigil::testing
