// nvml_fabric and nvml_recovery against the fake NVML: the NVLink fabric registration state
// (nvmlDeviceGetGpuFabricInfoV v3 / v2, the unversioned call of R535) and the driver's GPU
// recovery action field. Values and meanings: nvml.h (CUDA 13.3), "Fabric definitions" and
// nvmlDeviceGpuRecoveryAction_t; the judgement and its sources are in nvml_fabric.cpp.
#include <unistd.h>

#include <ctime>

#include "nvml/nvml_common.h"
#include "nvml_test_support.h"

namespace vigil::testing {
namespace {

class nvml_fabric : public NvmlCheckTest {
 protected:
  // The node booted `seconds` ago (ctx.proc_root/uptime, as /proc/uptime reads).
  void booted_ago(double seconds) {
    std::filesystem::create_directories(tmp_ / "proc");
    std::ofstream(tmp_ / "proc" / "uptime") << seconds << " 12345.67\n";
    ctx_.proc_root = (tmp_ / "proc").string();
    ctx_.fabric_wait.recheck = std::chrono::milliseconds(20);
    ctx_.fabric_wait.settle = std::chrono::milliseconds(100);
  }
  // A process `comm` that started `seconds_after_boot` after boot, as proc(5)'s stat shows it
  // (starttime, field 22, in clock ticks).
  void process(int pid, const std::string& comm, double seconds_after_boot) {
    const auto dir = tmp_ / "proc" / std::to_string(pid);
    std::filesystem::create_directories(dir);
    const long ticks = static_cast<long>(seconds_after_boot * double(::sysconf(_SC_CLK_TCK)));
    std::ofstream(dir / "stat") << pid << " (" << comm
                                << ") S 1 1 1 0 -1 4194560 100 0 0 0 5 3 0 0 20 0 1 0 " << ticks
                                << " 12345678 1000 18446744073709551615\n";
  }
  // healthy_8x_h100 with GPU `gpu`'s fabric replaced by `fabric`.
  void fabric_on(int gpu, const nlohmann::json& fabric) {
    nlohmann::json j = load_fixture("healthy_8x_h100");
    j["gpus"][gpu]["fabric"] = fabric;
    use_fixture_json(j);
  }
};
using nvml_recovery = NvmlCheckTest;

TEST_F(nvml_fabric, a_registered_healthy_fabric_passes_on_every_struct_version) {
  booted_ago(3600);
  // healthy_8x_h100 is an R550 driver: v3 is a version mismatch, v2 answers.
  use_fixture("healthy_8x_h100");
  CheckResult r = run(make_nvml_fabric_check());
  EXPECT_EQ(r.status, Status::kPass) << r.message;
  EXPECT_EQ(r.message, "8 GPUs registered in the NVLink fabric");
  EXPECT_EQ(count(r, "fabric_state"), 8);
  EXPECT_EQ(find(r, "fabric_state", 0)->value, 3);
  EXPECT_EQ(count(r, "fabric_health_summary"), 0);  // v2 has no summary

  nlohmann::json j = load_fixture("healthy_8x_h100");
  j["gpu_defaults"]["fabric"] = {{"state", 3}, {"version", 3}, {"health_summary", 1}};
  use_fixture_json(j);
  r = run(make_nvml_fabric_check());
  EXPECT_EQ(r.status, Status::kPass) << r.message;
  EXPECT_EQ(find(r, "fabric_health_summary", 7)->value, 1);

  j["gpu_defaults"]["fabric"] = {{"state", 3}, {"version", 1}};  // R535: unversioned call only
  use_fixture_json(j);
  r = run(make_nvml_fabric_check());
  EXPECT_EQ(r.status, Status::kPass) << r.message;
  EXPECT_EQ(count(r, "fabric_state"), 8);
}

// A board without an NVLink fabric (PCIe H100, H100 NVL, A100 PCIe): NOT_SUPPORTED, skipped.
TEST_F(nvml_fabric, a_board_without_a_fabric_is_skipped) {
  nlohmann::json j = load_fixture("healthy_8x_h100");
  j["gpu_defaults"].erase("fabric");
  use_fixture_json(j);
  CheckResult r = run(make_nvml_fabric_check());
  EXPECT_EQ(r.status, Status::kSkipped) << r.message;
  EXPECT_NE(r.message.find("NVLink fabric not supported on 8 GPUs"), std::string::npos)
      << r.message;

  j["gpu_defaults"]["fabric"] = {{"state", 0}};  // the call answers, state NOT_SUPPORTED
  use_fixture_json(j);
  r = run(make_nvml_fabric_check());
  EXPECT_EQ(r.status, Status::kSkipped) << r.message;
}

// Registration finished with an error: no CUDA job can use this GPU (DCGM diag: "Training
// completed with an error").
TEST_F(nvml_fabric, a_completed_registration_with_an_error_status_fails) {
  booted_ago(30);  // even right after boot: a completed probe is final
  fabric_on(5, {{"state", 3}, {"status", 999}, {"version", 2}});
  const CheckResult r = run(make_nvml_fabric_check());
  EXPECT_EQ(r.status, Status::kFail) << r.message;
  EXPECT_EQ(r.fault_code, "VIGIL-NVML-FABRIC-FAILED");
  EXPECT_EQ(r.message.rfind("gpu5 NVLink fabric registration failed: ", 0), 0u) << r.message;
  EXPECT_NE(r.message.find("(999)"), std::string::npos) << r.message;
}

// Not registered: a warning while Fabric Manager may still be starting, a failure once the node
// has been up longer than the grace. Registration in progress (boot, a Fabric Manager restart, a
// GPU reset) only ever warns, as DCGM does.
TEST_F(nvml_fabric, an_unregistered_gpu_warns_after_boot_and_fails_after_the_grace) {
  fabric_on(2, {{"state", 1}, {"version", 3}});
  booted_ago(45);
  CheckResult r = run(make_nvml_fabric_check());
  EXPECT_EQ(r.status, Status::kWarn) << r.message;
  EXPECT_EQ(r.fault_code, "VIGIL-NVML-FABRIC-PENDING");
  EXPECT_EQ(r.message,
            "gpu2 not registered in the NVLink fabric, 45 s after boot: CUDA jobs fail with 802 "
            "until it is");

  booted_ago(1800);
  r = run(make_nvml_fabric_check());
  EXPECT_EQ(r.status, Status::kFail) << r.message;
  EXPECT_EQ(r.fault_code, "VIGIL-NVML-FABRIC-NOT-REGISTERED");
  EXPECT_EQ(r.message,
            "gpu2 not registered in the NVLink fabric 30 min after boot: is Fabric Manager "
            "running?");

  ctx_.fabric_wait.grace = std::chrono::seconds(3600);  // the grace moves the line
  r = run(make_nvml_fabric_check());
  EXPECT_EQ(r.status, Status::kWarn) << r.message;

  ctx_.proc_root = (tmp_ / "no-such-proc").string();  // uptime unknown: never a drain
  r = run(make_nvml_fabric_check());
  EXPECT_EQ(r.status, Status::kWarn) << r.message;
  EXPECT_NE(r.message.find("uptime unknown"), std::string::npos) << r.message;

  fabric_on(2, {{"state", 2}, {"version", 3}});  // in progress right after boot: a warning
  booted_ago(45);
  r = run(make_nvml_fabric_check());
  EXPECT_EQ(r.status, Status::kWarn) << r.message;
  EXPECT_EQ(r.message,
            "gpu2 NVLink fabric registration in progress, 45 s after boot: CUDA jobs fail with 802 "
            "until it completes");

  booted_ago(7200);  // ... still a warning past the grace and the settle window, as in DCGM
  r = run(make_nvml_fabric_check());
  EXPECT_EQ(r.status, Status::kWarn) << r.message;
  EXPECT_EQ(r.fault_code, "VIGIL-NVML-FABRIC-PENDING");
  EXPECT_EQ(r.message,
            "gpu2 NVLink fabric registration still in progress 120 min after boot: CUDA jobs fail "
            "with 802 until it completes; is Fabric Manager stuck?");
}

// Past the grace, a GPU that registers while the check waits (Fabric Manager acting on it right
// now) passes: the state is read again every fabric_recheck for up to fabric_settle.
TEST_F(nvml_fabric, a_gpu_that_registers_within_the_settle_window_passes) {
  booted_ago(7200);
  ctx_.fabric_wait.settle = std::chrono::seconds(5);
  for (unsigned state : {1u, 2u}) {
    fabric_on(3, {{"state", state}, {"version", 3}, {"settles_after_reads", 3}});
    const CheckResult r = run(make_nvml_fabric_check());
    EXPECT_EQ(r.status, Status::kPass) << state << ": " << r.message;
    EXPECT_EQ(find(r, "fabric_state", 3)->value, 3);
  }
}

// Every GPU registers again after a GPU reset and after Fabric Manager (re)starts, not only at
// boot (review W9): the grace counts from the latest of the three.
TEST_F(nvml_fabric, the_grace_counts_from_the_last_gpu_reset_or_fabric_manager_start) {
  fabric_on(2, {{"state", 1}, {"version", 3}});
  booted_ago(7200);
  ctx_.node = "gpu-1";
  ctx_.state_dir = (tmp_ / "state").string();
  std::filesystem::create_directories(ctx_.state_dir);
  std::ofstream(nvml::gpu_reset_marker(ctx_.state_dir, "gpu-1")) << std::time(nullptr) - 90;
  CheckResult r = run(make_nvml_fabric_check());
  EXPECT_EQ(r.status, Status::kWarn) << r.message;
  // The check reads the wall clock again: a second may have begun since the marker was written.
  EXPECT_TRUE(r.message.find(", 90 s after the last GPU reset: ") != std::string::npos ||
              r.message.find(", 91 s after the last GPU reset: ") != std::string::npos)
      << r.message;

  std::ofstream(nvml::gpu_reset_marker(ctx_.state_dir, "gpu-1")) << std::time(nullptr) - 3600;
  process(4242, "nv-fabricmanage", 7200 - 30);  // Fabric Manager restarted 30 s ago
  process(4243, "bash", 7200 - 5);
  r = run(make_nvml_fabric_check());
  EXPECT_EQ(r.status, Status::kWarn) << r.message;
  EXPECT_NE(r.message.find(", 30 s after Fabric Manager started: "), std::string::npos)
      << r.message;

  process(4242, "nv-fabricmanage", 60);  // running since boot: the reset an hour ago is latest
  r = run(make_nvml_fabric_check());
  EXPECT_EQ(r.status, Status::kFail) << r.message;
  EXPECT_EQ(r.message,
            "gpu2 not registered in the NVLink fabric 60 min after the last GPU reset: is Fabric "
            "Manager running?");
}

// fabric-wait-<node> as nvml_fabric writes it: this boot (booted_ago(uptime)), the first run
// that found GPUs waiting `first_ago` seconds ago and the latest `last_ago` seconds ago.
std::string wait_note(double uptime, double first_ago, double last_ago) {
  return std::to_string(std::time(nullptr) - static_cast<long long>(uptime)) + " " +
         std::to_string(uptime - first_ago) + " " + std::to_string(uptime - last_ago) + "\n";
}

// A Fabric Manager in a restart loop registers nothing and would restart the grace at every
// start. Runs note when they found GPUs unregistered (fabric-wait-<node>); a start after the
// episode began gives no new grace. A run that reads every GPU registered ends the episode, and
// so do a GPU reset, a grace without finding GPUs waiting, and a note of another boot.
// A process that exits while the check scans /proc for Fabric Manager: read(2) of its stat fails
// (ESRCH; here EISDIR, a directory in its place). It is skipped, not an exception that turns the
// whole check into an error.
TEST_F(nvml_fabric, a_process_gone_during_the_proc_scan_is_skipped) {
  fabric_on(2, {{"state", 1}, {"version", 3}});
  booted_ago(7200);
  std::filesystem::create_directories(tmp_ / "proc" / "4241" / "stat");
  CheckResult r = run(make_nvml_fabric_check());
  EXPECT_EQ(r.status, Status::kFail) << r.message;
  EXPECT_NE(r.message.find("120 min after boot"), std::string::npos) << r.message;
}

TEST_F(nvml_fabric, a_fabric_manager_restart_loop_does_not_restart_the_grace) {
  booted_ago(7200);
  ctx_.node = "gpu-1";
  ctx_.state_dir = (tmp_ / "state").string();
  std::filesystem::create_directories(ctx_.state_dir);
  process(4242, "nv-fabricmanage", 7200 - 30);  // started 30 s ago
  fabric_on(2, {{"state", 1}, {"version", 3}});
  CheckResult r = run(make_nvml_fabric_check());
  EXPECT_EQ(r.status, Status::kWarn) << r.message;
  EXPECT_NE(r.message.find(", 30 s after Fabric Manager started: "), std::string::npos)
      << r.message;
  const std::string marker = ctx_.state_dir + "/fabric-wait-gpu-1";
  ASSERT_TRUE(std::filesystem::exists(marker));
  // Runs have found GPUs waiting for 11 minutes, the last 5 minutes ago, and Fabric Manager has
  // just started again: the wait counts, not the start.
  std::ofstream(marker) << wait_note(7200, 660, 300);
  process(4242, "nv-fabricmanage", 7200 - 20);
  r = run(make_nvml_fabric_check());
  EXPECT_EQ(r.status, Status::kFail) << r.message;
  EXPECT_EQ(r.message,
            "gpu2 not registered in the NVLink fabric 11 min after GPUs were first found "
            "unregistered (Fabric Manager started since): is Fabric Manager running?");
  // The episode goes on: the note keeps its first run and moves its latest to now.
  double boot = 0, first = 0, last = 0;
  std::ifstream(marker) >> boot >> first >> last;
  EXPECT_NEAR(first, 7200 - 660, 1);
  EXPECT_NEAR(last, 7200, 1);
  // None found waiting for longer than a grace (an old, lone episode), a GPU reset since it
  // began, or a note of another boot: each starts a new episode, and the restart's grace holds.
  for (const std::string& stale :
       {wait_note(7200, 3000, 2000), wait_note(7200, 660, 300), wait_note(9000, 660, 300)}) {
    std::ofstream(marker) << stale;
    std::ofstream(nvml::gpu_reset_marker(ctx_.state_dir, "gpu-1"))
        << std::time(nullptr) - (stale == wait_note(7200, 660, 300) ? 100 : 5000);
    r = run(make_nvml_fabric_check());
    EXPECT_EQ(r.status, Status::kWarn) << stale << r.message;
    std::ifstream(marker) >> boot >> first >> last;
    EXPECT_NEAR(first, 7200, 1) << stale;  // rewritten: this run begins the episode
  }
  // Registered: the note goes.
  fabric_on(2, {{"state", 3}, {"version", 3}});
  EXPECT_EQ(run(make_nvml_fabric_check()).status, Status::kPass);
  EXPECT_FALSE(std::filesystem::exists(marker));
}

// IN_PROGRESS past the grace warns, as DCGM does; past the grace in an episode of three graces
// (30 min), across runs, it fails (review W10). Within a grace (a GPU reset just now) it warns.
TEST_F(nvml_fabric, a_registration_in_progress_for_three_graces_across_runs_fails) {
  booted_ago(7200);
  ctx_.node = "gpu-1";
  ctx_.state_dir = (tmp_ / "state").string();
  std::filesystem::create_directories(ctx_.state_dir);
  fabric_on(5, {{"state", 2}, {"version", 3}});
  const std::string marker = ctx_.state_dir + "/fabric-wait-gpu-1";
  std::ofstream(marker) << wait_note(7200, 1700, 60);  // 28 min
  CheckResult r = run(make_nvml_fabric_check());
  EXPECT_EQ(r.status, Status::kWarn) << r.message;
  std::ofstream(marker) << wait_note(7200, 1860, 60);  // 31 min
  r = run(make_nvml_fabric_check());
  EXPECT_EQ(r.status, Status::kFail) << r.message;
  EXPECT_EQ(r.fault_code, "VIGIL-NVML-FABRIC-NOT-REGISTERED");
  EXPECT_EQ(r.message,
            "gpu5 NVLink fabric registration still in progress 31 min after GPUs were first "
            "found unregistered: stuck; no CUDA job can run");
  // Fabric Manager started 2 minutes ago, after the episode began: no new grace, still stuck.
  booted_ago(2400);
  process(4242, "nv-fabricmanage", 2400 - 120);
  std::ofstream(marker) << wait_note(2400, 1860, 60);
  EXPECT_EQ(run(make_nvml_fabric_check()).status, Status::kFail);
  // Without a state dir there is no note: the rule cannot apply, it only warns.
  ctx_.state_dir.clear();
  EXPECT_EQ(run(make_nvml_fabric_check()).status, Status::kWarn);
}

// Fabric findings on a MIG-enabled GPU are not verified on hardware: they warn, and say so.
TEST_F(nvml_fabric, a_mig_enabled_gpus_fabric_findings_only_warn) {
  booted_ago(3600);
  nlohmann::json j = load_fixture("healthy_8x_h100");
  j["gpus"][4]["fabric"] = {{"state", 3}, {"status", 999}, {"version", 2}};
  j["gpus"][4]["mig"] = true;
  use_fixture_json(j);
  const CheckResult r = run(make_nvml_fabric_check());
  EXPECT_EQ(r.status, Status::kWarn) << r.message;
  EXPECT_NE(r.message.find("(MIG enabled: not judged further)"), std::string::npos) << r.message;
}

TEST_F(nvml_fabric, the_health_summary_fails_unhealthy_and_warns_limited_capacity) {
  booted_ago(3600);
  // healthMask: route unhealthy TRUE (1 << 4), configuration NONE (1 << 8).
  fabric_on(6, {{"state", 3}, {"version", 3}, {"health_summary", 2}, {"health_mask", 0x110}});
  CheckResult r = run(make_nvml_fabric_check());
  EXPECT_EQ(r.status, Status::kFail) << r.message;
  EXPECT_EQ(r.fault_code, "VIGIL-NVML-FABRIC-UNHEALTHY");
  EXPECT_EQ(r.message, "gpu6 NVLink fabric unhealthy (route unhealthy)");

  // degraded bandwidth TRUE (1 << 0)
  fabric_on(6, {{"state", 3}, {"version", 3}, {"health_summary", 3}, {"health_mask", 0x101}});
  r = run(make_nvml_fabric_check());
  EXPECT_EQ(r.status, Status::kWarn) << r.message;
  EXPECT_EQ(r.fault_code, "VIGIL-NVML-FABRIC-DEGRADED");
  EXPECT_EQ(r.message, "gpu6 NVLink fabric at limited capacity (bandwidth degraded)");
}

// v2 drivers have no summary: the mask decides, as DCGM 4.6's MonitorFabricFields does (review
// W10): degraded bandwidth and every configuration code nvml.h names fail; a recovery in
// progress fails once it outlasts the settle window.
TEST_F(nvml_fabric, without_a_summary_the_health_mask_decides) {
  booted_ago(3600);
  // incorrect configuration 5 = insufficient NVLinks (5 << 8)
  fabric_on(1, {{"state", 3}, {"version", 2}, {"health_mask", 0x500}});
  CheckResult r = run(make_nvml_fabric_check());
  EXPECT_EQ(r.status, Status::kFail) << r.message;
  EXPECT_EQ(r.message, "gpu1 NVLink fabric (incorrect configuration (insufficient NVLinks))");

  // the NVLink domain's own set-up (SysGUID, 2 << 8) fails too; degraded bandwidth (1 << 0)
  for (unsigned mask : {0x200u, 0x101u}) {
    fabric_on(1, {{"state", 3}, {"version", 2}, {"health_mask", mask}});
    r = run(make_nvml_fabric_check());
    EXPECT_EQ(r.status, Status::kFail) << mask << ": " << r.message;
    EXPECT_EQ(r.fault_code, "VIGIL-NVML-FABRIC-UNHEALTHY");
  }
  fabric_on(1, {{"state", 3}, {"version", 2}, {"health_mask", 0xC00}});  // newer than nvml.h
  r = run(make_nvml_fabric_check());
  EXPECT_EQ(r.status, Status::kWarn) << r.message;

  // a route recovery (1 << 2) or access-timeout recovery (1 << 6) still in progress after the
  // settle window fails; one that ends within it passes
  for (unsigned mask : {0x104u, 0x140u}) {
    fabric_on(1, {{"state", 3}, {"version", 2}, {"health_mask", mask}});
    r = run(make_nvml_fabric_check());
    EXPECT_EQ(r.status, Status::kFail) << mask << ": " << r.message;
  }
  EXPECT_EQ(r.message, "gpu1 NVLink fabric (access timeout recovery in progress)");
  ctx_.fabric_wait.settle = std::chrono::seconds(5);
  fabric_on(1, {{"state", 3}, {"version", 2}, {"health_mask", 0x104}, {"settles_after_reads", 2}});
  r = run(make_nvml_fabric_check());
  EXPECT_EQ(r.status, Status::kPass) << r.message;

  booted_ago(60);  // within the boot grace a recovery in progress only warns
  fabric_on(1, {{"state", 3}, {"version", 2}, {"health_mask", 0x104}});
  r = run(make_nvml_fabric_check());
  EXPECT_EQ(r.status, Status::kWarn) << r.message;
}

TEST_F(nvml_fabric, a_failed_query_is_an_error_and_a_lost_gpu_fails) {
  nlohmann::json j = load_fixture("healthy_8x_h100");
  j["gpus"][4]["errors"] = {{"nvmlDeviceGetGpuFabricInfoV", 999}};
  use_fixture_json(j);
  CheckResult r = run(make_nvml_fabric_check());
  EXPECT_EQ(r.status, Status::kError) << r.message;
  EXPECT_EQ(r.fault_code, "VIGIL-NVML-QUERY");

  j["gpus"][4]["errors"] = {{"nvmlDeviceGetGpuFabricInfoV", 15}};  // NVML_ERROR_GPU_IS_LOST
  use_fixture_json(j);
  r = run(make_nvml_fabric_check());
  EXPECT_EQ(r.status, Status::kFail) << r.message;
  EXPECT_EQ(r.fault_code, "VIGIL-NVML-GPU-LOST");
}

TEST_F(nvml_recovery, no_action_passes_and_a_driver_without_the_field_is_skipped) {
  use_fixture("healthy_8x_h100");  // R550: the field does not exist yet
  CheckResult r = run(make_nvml_recovery_check());
  EXPECT_EQ(r.status, Status::kSkipped) << r.message;
  EXPECT_NE(r.message.find("GPU recovery action not supported on 8 GPUs"), std::string::npos)
      << r.message;

  nlohmann::json j = load_fixture("healthy_8x_h100");
  j["gpu_defaults"]["recovery_action"] = 0;
  use_fixture_json(j);
  r = run(make_nvml_recovery_check());
  EXPECT_EQ(r.status, Status::kPass) << r.message;
  EXPECT_EQ(r.message, "8 GPUs: no recovery action pending");
  EXPECT_EQ(count(r, "recovery_action"), 8);
}

// The actions that ask for a repair fail with their name in the reason; the transitional
// DRAIN_P2P and the IMEX domain's own recovery warn, as DCGM 4.6 does (review W3, W4); a newer
// value fails as a reboot.
TEST_F(nvml_recovery, each_action_the_driver_states_is_judged_and_named) {
  const std::map<unsigned, std::pair<Status, std::string>> actions = {
      {1, {Status::kFail, "gpu3 driver asks for GPU reset"}},
      {2, {Status::kFail, "gpu3 driver asks for node reboot"}},
      {3, {Status::kWarn, "gpu3 driver reports drain P2P"}},
      {4, {Status::kFail, "gpu3 driver asks for drain P2P and GPU reset"}},
      {5, {Status::kWarn, "gpu3 driver reports recover the IMEX domain"}}};
  for (const auto& [action, want] : actions) {
    nlohmann::json j = load_fixture("healthy_8x_h100");
    j["gpu_defaults"]["recovery_action"] = 0;
    j["gpus"][3]["recovery_action"] = action;
    use_fixture_json(j);
    const CheckResult r = run(make_nvml_recovery_check());
    EXPECT_EQ(r.status, want.first) << action << ": " << r.message;
    EXPECT_EQ(r.fault_code, "VIGIL-NVML-RECOVERY-ACTION");
    EXPECT_EQ(r.message.rfind(want.second, 0), 0u) << r.message;
    EXPECT_EQ(r.remedy.has_value(), want.first == Status::kFail) << action;
  }
  nlohmann::json j = load_fixture("healthy_8x_h100");
  j["gpu_defaults"]["recovery_action"] = 0;
  j["gpus"][0]["recovery_action"] = 9;
  use_fixture_json(j);
  const CheckResult r = run(make_nvml_recovery_check());
  EXPECT_EQ(r.status, Status::kFail) << r.message;  // the driver asks for something: a reboot
  EXPECT_EQ(r.remedy, Remedy::kReboot);
  EXPECT_NE(r.message.find("unknown to this build"), std::string::npos) << r.message;
}

// The field may arrive in any nvmlValue_t member (nvmlValueType_t): each is read as the whole
// number it carries; a type this build does not know is an error, never a silent NONE.
TEST_F(nvml_recovery, the_action_is_read_from_whichever_value_member_carries_it) {
  for (int type : {0, 1, 2, 3, 4, 5, 6}) {  // double ... unsigned short
    nlohmann::json j = load_fixture("healthy_8x_h100");
    j["gpu_defaults"]["recovery_action"] = 0;
    j["gpus"][6]["recovery_action"] = 2;
    j["gpus"][6]["recovery_action_type"] = type;
    use_fixture_json(j);
    const CheckResult r = run(make_nvml_recovery_check());
    EXPECT_EQ(r.status, Status::kFail) << type << ": " << r.message;
    EXPECT_EQ(r.message, "gpu6 driver asks for node reboot") << type;
  }
  nlohmann::json j = load_fixture("healthy_8x_h100");
  j["gpu_defaults"]["recovery_action"] = 0;
  j["gpus"][6]["recovery_action_type"] = 7;  // not an nvmlValueType_t
  use_fixture_json(j);
  const CheckResult r = run(make_nvml_recovery_check());
  EXPECT_EQ(r.status, Status::kError) << r.message;
  EXPECT_NE(r.message.find("value type 7"), std::string::npos) << r.message;
}

}  // namespace
}  // namespace vigil::testing
