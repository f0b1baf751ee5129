// The NVML loading path: dlopen of the fake library, a missing library, a library without the
// NVML symbols, and every kind of broken fixture. None of these may look like a health failure.
#include <dlfcn.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <functional>

#include "nvml_test_support.h"

namespace vigil::testing {
namespace {

using nvml_loader = NvmlCheckTest;
using fake_nvml = NvmlCheckTest;
using nvml_gpu_count = NvmlCheckTest;

const std::vector<std::function<std::unique_ptr<Check>()>> kNvmlFactories = {
    make_gpu_count_check,          make_nvml_ecc_check,          make_nvml_row_remap_check,
    make_nvml_retired_pages_check, make_nvml_clock_events_check, make_nvml_pcie_check,
    make_nvml_nvlink_check,        make_nvml_temperature_check,  make_nvml_xid_check};

TEST_F(nvml_loader, check_names_match_the_brief_table) {
  std::vector<std::string> names;
  for (const auto& make : kNvmlFactories) names.emplace_back(make()->name());
  EXPECT_EQ(names, (std::vector<std::string>{"gpu_count", "nvml_ecc", "nvml_row_remap",
                                             "nvml_retired_pages", "nvml_clock_events", "nvml_pcie",
                                             "nvml_nvlink", "nvml_temperature", "nvml_xid"}));
}

TEST_F(nvml_loader, missing_library_is_error_not_fail_for_every_check) {
  use_fixture("healthy_8x_h100");
  ctx_.nvml_library = (tmp_ / "no-such-dir" / "libnvidia-ml.so.1").string();
  for (const auto& make : kNvmlFactories) {
    auto check = make();
    ASSERT_TRUE(check->applies(ctx_).yes) << check->name();
    const CheckResult r = check->run(ctx_);
    EXPECT_EQ(r.status, Status::kError) << check->name();
    EXPECT_EQ(r.message.rfind("NVML not available: ", 0), 0u) << r.message;
    EXPECT_NE(r.message.find("no-such-dir"), std::string::npos) << r.message;  // dlerror text
    EXPECT_EQ(r.fault_code, "VIGIL-NVML-UNAVAILABLE");
    EXPECT_TRUE(r.measurements.empty());
  }
}

TEST_F(nvml_loader, library_without_nvml_symbols_is_error) {
  use_fixture("healthy_8x_h100");
  ctx_.nvml_library = "libm.so.6";  // loads fine, exports no NVML
  const CheckResult r = run(make_nvml_ecc_check());
  EXPECT_EQ(r.status, Status::kError);
  EXPECT_NE(r.message.find("missing symbol nvmlInit_v2"), std::string::npos) << r.message;
  EXPECT_EQ(r.fault_code, "VIGIL-NVML-UNAVAILABLE");
}

TEST_F(nvml_loader, fake_library_is_found_by_dlopen_at_its_build_path) {
  EXPECT_EQ(std::filesystem::path(VIGIL_FAKE_NVML_LIBRARY).filename(), "libnvidia-ml.so.1");
  void* h = dlopen(VIGIL_FAKE_NVML_LIBRARY, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(h, nullptr) << dlerror();
  for (const char* symbol : {"nvmlInit_v2",
                             "nvmlShutdown",
                             "nvmlErrorString",
                             "nvmlDeviceGetCount_v2",
                             "nvmlDeviceGetHandleByIndex_v2",
                             "nvmlDeviceGetName",
                             "nvmlDeviceGetPciInfo_v3",
                             "nvmlDeviceGetTotalEccErrors",
                             "nvmlDeviceGetRemappedRows",
                             "nvmlDeviceGetRetiredPagesPendingStatus",
                             "nvmlDeviceGetCurrentClocksEventReasons",
                             "nvmlDeviceGetCurrPcieLinkGeneration",
                             "nvmlDeviceGetMaxPcieLinkWidth",
                             "nvmlDeviceGetPcieReplayCounter",
                             "nvmlDeviceGetNvLinkState",
                             "nvmlDeviceGetNvLinkErrorCounter",
                             "nvmlDeviceGetTemperature",
                             "nvmlDeviceGetPowerUsage",
                             "nvmlEventSetCreate",
                             "nvmlDeviceRegisterEvents",
                             "nvmlEventSetWait_v2",
                             "nvmlEventSetFree",
                             "nvmlDeviceGetComputeRunningProcesses_v3",
                             "nvmlDeviceGetUtilizationRates",
                             "nvmlSystemGetProcessName"}) {
    EXPECT_NE(dlsym(h, symbol), nullptr) << symbol;
  }
  dlclose(h);
}

TEST_F(fake_nvml, unset_fixture_env_makes_init_fail_with_explanation) {
  unsetenv("VIGIL_FAKE_NVML_FIXTURE");
  const CheckResult r = run(make_gpu_count_check());
  EXPECT_EQ(r.status, Status::kError);
  EXPECT_NE(r.message.find("nvmlInit_v2"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("VIGIL_FAKE_NVML_FIXTURE is not set"), std::string::npos) << r.message;
  EXPECT_EQ(r.fault_code, "VIGIL-NVML-UNAVAILABLE");
}

TEST_F(fake_nvml, unreadable_fixture_is_error) {
  setenv("VIGIL_FAKE_NVML_FIXTURE", (tmp_ / "absent.json").c_str(), 1);
  const CheckResult r = run(make_nvml_ecc_check());
  EXPECT_EQ(r.status, Status::kError);
  EXPECT_NE(r.message.find("cannot read fixture"), std::string::npos) << r.message;
}

TEST_F(fake_nvml, malformed_json_fixture_is_error_not_crash) {
  use_fixture_text("{\"gpus\": [ {\"name\": \"NVIDIA H100 80GB HBM3\", ");
  for (const auto& make : kNvmlFactories) {
    const CheckResult r = run(make());
    EXPECT_EQ(r.status, Status::kError) << r.check;
    EXPECT_NE(r.message.find("parse error"), std::string::npos) << r.message;
  }
}

TEST_F(fake_nvml, wrongly_typed_or_unknown_fixture_fields_are_errors_naming_the_field) {
  nlohmann::json j = load_fixture("healthy_8x_h100");
  j["gpus"][2]["temperature_c"] = "hot";
  use_fixture_json(j);
  CheckResult r = run(make_nvml_temperature_check());
  EXPECT_EQ(r.status, Status::kError);
  EXPECT_NE(r.message.find("/gpus/2"), std::string::npos) << r.message;

  j = load_fixture("healthy_8x_h100");
  j["gpus"][0]["temprature_c"] = 40;  // typo
  use_fixture_json(j);
  r = run(make_nvml_temperature_check());
  EXPECT_EQ(r.status, Status::kError);
  EXPECT_NE(r.message.find("unknown key \"temprature_c\""), std::string::npos) << r.message;
}

TEST_F(fake_nvml, init_error_simulates_missing_driver) {
  nlohmann::json j = load_fixture("healthy_8x_h100");
  j["init_error"] = 9;  // NVML_ERROR_DRIVER_NOT_LOADED
  use_fixture_json(j);
  const CheckResult r = run(make_nvml_row_remap_check());
  EXPECT_EQ(r.status, Status::kError);
  EXPECT_NE(r.message.find("Driver Not Loaded"), std::string::npos) << r.message;
  EXPECT_EQ(r.fault_code, "VIGIL-NVML-UNAVAILABLE");
}

TEST_F(fake_nvml, fixture_is_reread_on_every_init) {
  use_fixture("healthy_8x_h100");
  EXPECT_EQ(run(make_nvml_ecc_check()).status, Status::kPass);
  use_fixture("dbe_gpu3");
  EXPECT_EQ(run(make_nvml_ecc_check()).status, Status::kFail);
}

TEST_F(fake_nvml, forced_query_error_is_error_with_the_call_named) {
  nlohmann::json j = load_fixture("healthy_8x_h100");
  j["gpus"][1]["errors"] = {{"nvmlDeviceGetTemperature", 999}};
  use_fixture_json(j);
  const CheckResult r = run(make_nvml_temperature_check());
  EXPECT_EQ(r.status, Status::kError);
  EXPECT_NE(r.message.find("gpu1 nvmlDeviceGetTemperature"), std::string::npos) << r.message;
  EXPECT_EQ(r.fault_code, "VIGIL-NVML-QUERY");
}

TEST_F(fake_nvml, lost_gpu_fails_every_per_gpu_check) {
  use_fixture("gpu_lost");
  for (auto make : {make_nvml_ecc_check, make_nvml_row_remap_check, make_nvml_pcie_check,
                    make_nvml_nvlink_check, make_nvml_temperature_check}) {
    const CheckResult r = run(make());
    EXPECT_EQ(r.status, Status::kFail) << r.check;
    EXPECT_NE(r.message.find("gpu4 lost"), std::string::npos) << r.message;
    EXPECT_EQ(r.fault_code, "VIGIL-NVML-GPU-LOST");
  }
}

// Review F11: nvmlDeviceGetHandleByIndex_v2 answers INSUFFICIENT_POWER (loose power cable),
// IRQ_ISSUE or UNKNOWN for a GPU in a bad state (nvml.h). That GPU fails every check, the
// others are still inspected, gpu_count included: one broken GPU no longer turns every NVML
// check into `error` (which never drains).
TEST_F(fake_nvml, a_gpu_without_a_handle_fails_and_the_others_are_still_checked) {
  for (int code : {8, 11, 999}) {
    nlohmann::json j = load_fixture("healthy_8x_h100");
    j["gpus"][6]["errors"] = {{"nvmlDeviceGetHandleByIndex_v2", code}};
    j["gpus"][2]["ecc"] = {{"volatile_uncorrected", 1}};  // a finding on another GPU
    use_fixture_json(j);
    CheckResult r = run(make_nvml_ecc_check());
    EXPECT_EQ(r.status, Status::kFail) << code;
    EXPECT_NE(r.message.find("gpu6 unusable"), std::string::npos) << r.message;
    EXPECT_NE(r.message.find("gpu2"), std::string::npos)
        << "the other GPUs are inspected: " << r.message;
    r = run(make_gpu_count_check());
    EXPECT_EQ(r.status, Status::kFail) << code << " " << r.message;
    EXPECT_NE(r.message.find("gpu6 unusable"), std::string::npos) << r.message;
  }
}

// NO_PERMISSION describes the caller (a container without the device), not the GPU: error for
// that GPU, never fail, and the other GPUs are still inspected.
TEST_F(fake_nvml, a_handle_refused_for_permission_is_an_error_of_that_gpu_only) {
  nlohmann::json j = load_fixture("healthy_8x_h100");
  j["gpus"][6]["errors"] = {{"nvmlDeviceGetHandleByIndex_v2", 4}};
  use_fixture_json(j);
  CheckResult r = run(make_nvml_ecc_check());
  EXPECT_EQ(r.status, Status::kError) << r.message;
  EXPECT_NE(r.message.find("gpu6 hidden from this process (nvmlDeviceGetHandleByIndex_v2: "
                           "Insufficient Permissions"),
            std::string::npos)
      << r.message;
  EXPECT_EQ(r.fault_code, "VIGIL-NVML-GPU-HIDDEN");
  EXPECT_EQ(count(r, "volatile_uncorrected_ecc"), 7);
}

// The production profile's device semantics (docs/fake-nvml.md `device`): a GPU whose device
// node the process may not open answers NO_PERMISSION, one whose open succeeds or fails with
// ENXIO (no driver behind the node) is usable. EPERM needs a device cgroup's deny, so it is
// covered by the cluster test (tests/integration/production_slurm_test.cpp); here: a node that
// opens, a missing one (ENOENT: hidden, an error, never a fail) and, as root, a character device
// with no driver (ENXIO).
TEST_F(fake_nvml, a_gpu_names_its_device_node_and_enxio_means_allowed) {
  const std::string dev = (tmp_ / "dev").string();
  std::filesystem::create_directories(dev);
  nlohmann::json j = load_fixture("healthy_8x_h100");
  // /dev/null opens: allowed. A missing node: NVML_ERROR_NO_PERMISSION, an error, never a fail.
  j["gpus"][0]["device"] = "/dev/null";
  j["gpus"][1]["device"] = dev + "/missing";
  // As root: a character device with NVIDIA's major and no driver behind it (ENXIO): allowed.
  const std::string nodriver = dev + "/nvidia2";
  if (geteuid() == 0 && mknod(nodriver.c_str(), S_IFCHR | 0666, makedev(195, 254)) == 0)
    j["gpus"][2]["device"] = nodriver;
  use_fixture_json(j);
  CheckResult r = run(make_nvml_ecc_check());
  EXPECT_EQ(r.status, Status::kError) << r.message;
  EXPECT_NE(r.message.find("gpu1 hidden from this process"), std::string::npos) << r.message;
  EXPECT_EQ(r.fault_code, "VIGIL-NVML-GPU-HIDDEN");
  EXPECT_EQ(count(r, "volatile_uncorrected_ecc"), 7);
}

TEST_F(nvml_gpu_count, passes_with_sku_and_reports_8) {
  use_fixture("healthy_8x_h100");
  use_sku({{"gpu_count", {{"gpu_count", ge(8, std::nullopt, "count")}}}});
  const CheckResult r = run(make_gpu_count_check());
  EXPECT_EQ(r.status, Status::kPass) << r.message;
  ASSERT_NE(find(r, "gpu_count"), nullptr);
  EXPECT_EQ(find(r, "gpu_count")->value, 8);
  EXPECT_EQ(find(r, "gpu_count")->unit, "count");
  EXPECT_NE(r.message.find("NVIDIA H100 80GB HBM3"), std::string::npos) << r.message;
}

TEST_F(nvml_gpu_count, fails_with_seven_of_eight) {
  use_fixture("seven_of_eight_gpus");
  use_sku({{"gpu_count", {{"gpu_count", ge(8, std::nullopt, "count")}}}});
  const CheckResult r = run(make_gpu_count_check());
  EXPECT_EQ(r.status, Status::kFail);
  EXPECT_EQ(r.message, "7 of 8 GPUs visible");
  EXPECT_EQ(r.fault_code, "VIGIL-NVML-GPU-COUNT");
}

// The site's count from Slurm (--expected-gpus, the node's Gres) replaces the SKU's catalogue
// count: a board with 7 GPUs where Slurm says 7 passes; where Slurm says 8 it fails as before.
TEST_F(nvml_gpu_count, the_count_slurm_has_for_the_node_replaces_the_skus) {
  use_fixture("seven_of_eight_gpus");
  use_sku({{"gpu_count", {{"gpu_count", ge(8, std::nullopt, "count")}}}});
  ctx_.expected_gpus = 7;
  CheckResult r = run(make_gpu_count_check());
  EXPECT_EQ(r.status, Status::kPass) << r.message;
  ASSERT_TRUE(find(r, "gpu_count")->threshold);
  EXPECT_EQ(find(r, "gpu_count")->threshold->fail, 7);
  EXPECT_EQ(find(r, "gpu_count")->threshold->source, "Slurm Gres gpu:7");
  ctx_.expected_gpus = 8;
  r = run(make_gpu_count_check());
  EXPECT_EQ(r.status, Status::kFail);
  EXPECT_EQ(r.message, "7 of 8 GPUs visible");
  // Without a SKU at all, Slurm's count still judges.
  use_sku({});
  ctx_.sku = nullptr;
  ctx_.expected_gpus = 7;
  r = run(make_gpu_count_check());
  EXPECT_EQ(r.status, Status::kPass) << r.message;
}

// A missing GPU is named by its PCI bus id: one the driver lists (it probed the GPU but NVML
// cannot show it), or one an earlier run saw, with the board serial seen there (issue 43).
TEST_F(nvml_gpu_count, a_missing_gpu_is_named_by_bus_id_and_the_serial_last_seen_there) {
  use_state_dir();
  std::filesystem::create_directories(ctx_.state_dir);
  ctx_.proc_root = (tmp_ / "proc").string();
  ctx_.expected_gpus = 8;
  use_fixture("healthy_8x_h100");
  EXPECT_EQ(run(make_gpu_count_check()).status, Status::kPass);
  use_fixture("seven_of_eight_gpus");  // the GPU at db:00.0 is gone
  CheckResult r = run(make_gpu_count_check());
  EXPECT_EQ(r.status, Status::kFail);
  EXPECT_EQ(r.message,
            "7 of 8 GPUs visible; not seen: 0000:db:00.0 (serial 1652823054327, seen before)");
  r = run(make_gpu_count_check());  // its serial stays remembered while it is away
  EXPECT_NE(r.message.find("serial 1652823054327"), std::string::npos) << r.message;

  std::filesystem::remove_all(ctx_.state_dir);
  std::filesystem::create_directories(ctx_.proc_root + "/driver/nvidia/gpus/0000:18:00.0");
  std::filesystem::create_directories(ctx_.proc_root + "/driver/nvidia/gpus/0000:db:00.0");
  r = run(make_gpu_count_check());
  EXPECT_EQ(r.message, "7 of 8 GPUs visible; not seen: 0000:db:00.0 (the driver lists it)");
}

TEST_F(nvml_gpu_count, uses_sku_match_count_when_no_threshold) {
  use_fixture("seven_of_eight_gpus");
  use_sku({});
  const CheckResult r = run(make_gpu_count_check());
  EXPECT_EQ(r.status, Status::kFail);
  ASSERT_TRUE(find(r, "gpu_count")->threshold);
  EXPECT_EQ(find(r, "gpu_count")->threshold->fail, 8);
}

TEST_F(nvml_gpu_count, without_sku_is_skipped_but_reports_the_count) {
  use_fixture("seven_of_eight_gpus");
  const CheckResult r = run(make_gpu_count_check());
  EXPECT_EQ(r.status, Status::kSkipped);
  EXPECT_NE(r.message.find("unknown SKU"), std::string::npos) << r.message;
  ASSERT_NE(find(r, "gpu_count"), nullptr);
  EXPECT_EQ(find(r, "gpu_count")->value, 7);
}

}  // namespace
}  // namespace vigil::testing
