// The GPU reset rung (checks/src/nvml/gpu_reset.h): NVML through the fake library, nvidia-smi
// through a stand-in script that logs its arguments, answers the persistence query and, on
// --gpu-reset, replaces the NVML fixture with the "after reset" one (a pending row remap
// cleared, or a GPU gone). Compiled, not run on a GPU: the real nvidia-smi is never called.
#include "nvml/gpu_reset.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <ctime>
#include <fstream>
#include <sstream>

#include "nvml/gpu_busy.h"
#include "nvml/nvml_common.h"
#include "nvml_test_support.h"
#include "passive/kmsg_reader.h"
#include "vigil/report/check_catalog.h"

namespace vigil::testing {
namespace {

nlohmann::json gpu(int i, nlohmann::json extra = nlohmann::json::object()) {
  nlohmann::json g = {{"uuid", "GPU-" + std::to_string(i) + "aaa"},
                      {"serial", "S" + std::to_string(i)},
                      {"processes", nlohmann::json::array()},
                      {"utilization", {{"gpu", 0}, {"memory", 0}}}};
  g.update(extra);
  return g;
}

class GpuResetTest : public NvmlCheckTest {
 protected:
  // Two GPUs; gpu0 in persistence mode (per the stand-in's query answer).
  void SetUp() override {
    NvmlCheckTest::SetUp();
    fixture_ = (tmp_ / "fixture.json").string();
    log_ = (tmp_ / "smi.log").string();
    opts_.nvidia_smi = (tmp_ / "nvidia-smi").string();
    opts_.query_timeout = std::chrono::seconds(5);
    opts_.reset_timeout = std::chrono::seconds(5);
    before(nlohmann::json{{"gpus", {gpu(0, {{"remapped_rows", {{"pending", 1}}}}), gpu(1)}}});
    after(nlohmann::json{{"gpus", {gpu(0), gpu(1)}}});
    stand_in(0);
  }
  void before(const nlohmann::json& j) { use_fixture_json(j); }
  void after(const nlohmann::json& j) {
    std::ofstream((tmp_ / "after.json").string(), std::ios::trunc) << j.dump(2);
  }
  // reset_rc: --gpu-reset's exit code; pm_on_rc: `-pm 1`'s.
  void stand_in(int reset_rc, int pm_on_rc = 0,
                std::string query = "GPU-0aaa, Enabled\nGPU-1aaa, Disabled") {
    std::ofstream out(opts_.nvidia_smi, std::ios::trunc);
    out << "#!/bin/sh\n"
        << "echo \"$*\" >> '" << log_ << "'\n"
        << "case \"$1\" in\n"
        << "  --query-gpu=uuid,persistence_mode) printf '%s\\n' '" << query << "' ;;\n"
        << "  -pm) [ \"$2\" = 1 ] && exit " << pm_on_rc << "; echo 'All done.' ;;\n"
        << "  --gpu-reset)\n"
        << "    [ " << reset_rc << " = 0 ] || { echo 'GPU 00000000:1A:00.0: In use by another "
        << "client'; exit " << reset_rc << "; }\n"
        << "    cp '" << (tmp_ / "after.json").string() << "' '" << fixture_ << "'\n"
        << "    echo 'GPU 00000000:1A:00.0 was successfully reset.' ;;\n"
        << "  *) exit 2 ;;\n"
        << "esac\n";
    out.close();
    ::chmod(opts_.nvidia_smi.c_str(), 0755);
  }
  std::string calls() const {
    std::ifstream in(log_);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  CheckResult reset() { return nvml::reset_gpus(ctx_, opts_); }
  // A stand-in systemctl that logs "systemctl <args>"; `active` units answer is-active;
  // stopping `no_stop` and starting `no_start` fail.
  void systemctl(const std::string& active, const std::string& no_stop = "none",
                 const std::string& no_start = "none") {
    opts_.systemctl = (tmp_ / "systemctl").string();
    std::ofstream out(opts_.systemctl, std::ios::trunc);
    out << "#!/bin/sh\n"
        << "echo \"systemctl $*\" >> '" << log_ << "'\n"
        << "case \"$1\" in\n"
        << "  is-active) case ' " << active << " ' in *\" $3 \"*) exit 0 ;; esac; exit 3 ;;\n"
        << "  stop) [ \"$2\" = '" << no_stop << "' ] && { echo 'Job failed'; exit 1; }; exit 0 ;;\n"
        << "  start) [ \"$2\" = '" << no_start << "' ] && { echo 'Job failed'; exit 1; }; "
        << "exit 0 ;;\n"
        << "esac\nexit 2\n";
    out.close();
    ::chmod(opts_.systemctl.c_str(), 0755);
  }
  // A child process (`sleep`) holding `file` open; killed by the fixture.
  pid_t hold_open(const std::filesystem::path& file) {
    std::ofstream(file.string()) << "";
    const pid_t pid = ::fork();
    if (pid == 0) {
      const int fd = ::open(file.c_str(), O_RDONLY);
      if (fd < 0) ::_exit(126);
      ::execlp("sleep", "sleep", "30", static_cast<char*>(nullptr));
      ::_exit(127);
    }
    holders_.push_back(pid);
    // Until its fd and its name (after exec) are there.
    for (int i = 0; i < 200; ++i) {
      std::ifstream comm("/proc/" + std::to_string(pid) + "/comm");
      std::string name;
      std::getline(comm, name);
      if (name == "sleep") break;
      ::usleep(10000);
    }
    return pid;
  }
  void TearDown() override {
    for (pid_t pid : holders_) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
    NvmlCheckTest::TearDown();
  }

  std::string fixture_, log_;
  nvml::ResetOptions opts_;
  std::vector<pid_t> holders_;
};

TEST(gpu_reset_parse, persistence_rows_are_read_and_a_foreign_line_is_refused) {
  auto rows = nvml::parse_persistence("GPU-a, Enabled\n\nGPU-b, Disabled\n");
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->size(), 2u);
  EXPECT_TRUE(rows->at(0).enabled);
  EXPECT_EQ(rows->at(1).uuid, "GPU-b");
  EXPECT_FALSE(rows->at(1).enabled);
  // A warning line on stdout is not a row; a GPU row that does not read as one is an error.
  auto warned = nvml::parse_persistence(
      "WARNING: infoROM is corrupted at gpu 0000:18:00.0\nGPU-a, Enabled\n");
  ASSERT_TRUE(warned.ok());
  EXPECT_EQ(warned->size(), 1u);
  auto bad = nvml::parse_persistence("GPU-a, Enabled\nGPU-b, [N/A]\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().to_string().find("line 2"), std::string::npos);
}

TEST(gpu_reset_parse, only_the_exit_codes_that_name_the_gpu_fail) {
  EXPECT_EQ(nvml::reset_failure_status(15), Status::kFail);  // fallen off the bus
  EXPECT_EQ(nvml::reset_failure_status(14), Status::kFail);  // infoROM corrupted
  EXPECT_EQ(nvml::reset_failure_status(255), Status::kError);
  EXPECT_EQ(nvml::reset_failure_status(4), Status::kError);  // no permission
}

TEST_F(GpuResetTest, resets_every_gpu_with_persistence_off_around_it_and_checks_they_came_back) {
  const CheckResult r = reset();
  EXPECT_EQ(r.status, Status::kPass) << r.message;
  EXPECT_EQ(r.check, std::string(kGpuResetResult));
  EXPECT_EQ(r.message, "reset 2 GPUs; all back");
  EXPECT_EQ(calls(),
            "--query-gpu=uuid,persistence_mode --format=csv,noheader\n"
            "-pm 0 -i GPU-0aaa\n"
            "--gpu-reset\n"
            "-pm 1 -i GPU-0aaa\n");
  ASSERT_EQ(r.measurements.size(), 1u);
  EXPECT_EQ(r.measurements[0].value, 2);
}

TEST_F(GpuResetTest, a_gpu_with_a_compute_process_is_never_reset) {
  before(nlohmann::json{
      {"gpus", {gpu(0), gpu(1, {{"processes", {{{"pid", 4242}, {"name", "python"}}}}})}}});
  const CheckResult r = reset();
  EXPECT_EQ(r.status, Status::kError);
  EXPECT_EQ(r.fault_code, "VIGIL-GPU-BUSY");
  EXPECT_NE(r.message.find("gpu1 pid 4242 python"), std::string::npos) << r.message;
  EXPECT_EQ(calls(), "");
}

TEST_F(GpuResetTest, a_busy_reading_without_a_process_does_not_keep_a_hung_gpu_from_its_reset) {
  before(
      nlohmann::json{{"gpus", {gpu(0, {{"utilization", {{"gpu", 100}, {"memory", 0}}}}), gpu(1)}}});
  EXPECT_EQ(reset().status, Status::kPass);  // a GPU hung after an XID can read 100% busy
}

TEST_F(GpuResetTest, a_gpu_in_mig_mode_is_never_reset) {
  before(nlohmann::json{{"gpus", {gpu(0, {{"mig", true}}), gpu(1)}}});
  const CheckResult r = reset();
  EXPECT_EQ(r.status, Status::kError);
  EXPECT_NE(r.message.find("MIG enabled on gpu0"), std::string::npos) << r.message;
  EXPECT_EQ(r.fault_code, "VIGIL-RESET-MIG");
  EXPECT_EQ(calls(), "");
}

TEST_F(GpuResetTest, a_process_holding_a_gpu_device_node_open_keeps_every_gpu_from_its_reset) {
  // A real process with a real fd, found through the real /proc: only the device node's
  // directory is the test's (nvidia<N>; the control node nvidiactl holds no GPU).
  const std::filesystem::path dev = tmp_ / "dev";
  std::filesystem::create_directories(dev);
  opts_.dev_dir = dev.string();
  const pid_t holder = hold_open(dev / "nvidia1");
  const pid_t control = hold_open(dev / "nvidiactl");
  const CheckResult r = reset();
  EXPECT_EQ(r.status, Status::kError);
  EXPECT_EQ(r.fault_code, "VIGIL-GPU-HELD");
  const std::string named = "GPUs held open by sleep (pid " + std::to_string(holder) + ") on " +
                            (dev / "nvidia1").string();
  EXPECT_EQ(r.message.rfind(named + "; not reset", 0), 0u) << r.message;
  EXPECT_EQ(r.message.find("pid " + std::to_string(control)), std::string::npos) << r.message;
  // Persistence mode went off for the look and came back; nothing was reset.
  EXPECT_EQ(calls(),
            "--query-gpu=uuid,persistence_mode --format=csv,noheader\n"
            "-pm 0 -i GPU-0aaa\n"
            "-pm 1 -i GPU-0aaa\n");
  // Without a holder the same node is reset.
  ::kill(holder, SIGKILL);
  ::waitpid(holder, nullptr, 0);
  holders_.erase(holders_.begin());
  EXPECT_EQ(reset().status, Status::kPass);
  EXPECT_TRUE(nvml::gpu_device_holders("/proc", dev.string()).empty());
}

TEST_F(GpuResetTest, the_sites_units_stop_for_the_reset_and_start_again_the_inactive_untouched) {
  systemctl("nvidia-dcgm nvsm");
  opts_.stop_units = {"nvidia-dcgm", "dcgm-exporter", "nvsm"};
  const CheckResult r = reset();
  EXPECT_EQ(r.status, Status::kPass) << r.message;
  EXPECT_EQ(calls(),
            "--query-gpu=uuid,persistence_mode --format=csv,noheader\n"
            "systemctl is-active --quiet nvidia-dcgm\n"
            "systemctl stop nvidia-dcgm\n"
            "systemctl is-active --quiet dcgm-exporter\n"
            "systemctl is-active --quiet nvsm\n"
            "systemctl stop nvsm\n"
            "-pm 0 -i GPU-0aaa\n"
            "--gpu-reset\n"
            "-pm 1 -i GPU-0aaa\n"
            "systemctl start nvsm\n"
            "systemctl start nvidia-dcgm\n");
}

TEST_F(GpuResetTest, a_unit_that_will_not_stop_keeps_the_gpus_from_the_reset_and_the_rest_return) {
  systemctl("nvidia-dcgm nvsm", "nvsm");
  opts_.stop_units = {"nvidia-dcgm", "nvsm"};
  const CheckResult r = reset();
  EXPECT_EQ(r.status, Status::kError);
  EXPECT_EQ(r.message.rfind("systemctl stop nvsm exited 1: Job failed; not reset", 0), 0u)
      << r.message;
  EXPECT_EQ(calls().find("--gpu-reset"), std::string::npos) << calls();
  EXPECT_EQ(calls().find("-pm "), std::string::npos) << calls();  // persistence never touched
  // Both started again: a stop that failed or timed out may still be carried out by systemd.
  EXPECT_TRUE(calls().ends_with("systemctl start nvsm\nsystemctl start nvidia-dcgm\n")) << calls();
}

TEST_F(GpuResetTest, a_unit_that_will_not_start_again_is_a_warning_after_a_good_reset) {
  systemctl("nvidia-dcgm", "none", "nvidia-dcgm");
  opts_.stop_units = {"nvidia-dcgm"};
  const CheckResult r = reset();
  EXPECT_EQ(r.status, Status::kWarn);
  EXPECT_TRUE(
      r.message.ends_with("; not restored: systemctl start nvidia-dcgm exited 1: Job failed"))
      << r.message;
}

TEST_F(GpuResetTest, a_refused_reset_is_an_error_and_persistence_mode_comes_back) {
  stand_in(255);
  const CheckResult r = reset();
  EXPECT_EQ(r.status, Status::kError);
  EXPECT_NE(r.message.find("nvidia-smi --gpu-reset exited 255: GPU 00000000:1A:00.0: In use by "
                           "another client"),
            std::string::npos)
      << r.message;
  EXPECT_NE(calls().find("--gpu-reset\n-pm 1 -i GPU-0aaa\n"), std::string::npos) << calls();
}

TEST_F(GpuResetTest, a_gpu_fallen_off_the_bus_during_the_reset_fails) {
  stand_in(15);
  EXPECT_EQ(reset().status, Status::kFail);
}

TEST_F(GpuResetTest, a_gpu_that_does_not_come_back_fails) {
  after(nlohmann::json{{"gpus", {gpu(0)}}});
  const CheckResult r = reset();
  EXPECT_EQ(r.status, Status::kFail);
  EXPECT_EQ(r.message, "reset, but GPU-1aaa did not come back");
}

TEST_F(GpuResetTest, persistence_mode_not_restored_is_a_warning_after_a_good_reset) {
  stand_in(0, 6);
  const CheckResult r = reset();
  EXPECT_EQ(r.status, Status::kWarn);
  EXPECT_NE(r.message.find("; not restored: nvidia-smi -pm exited 6"), std::string::npos)
      << r.message;
}

TEST_F(GpuResetTest, no_nvidia_smi_or_an_unreadable_query_is_an_error_before_any_reset) {
  opts_.nvidia_smi = (tmp_ / "absent-nvidia-smi").string();
  EXPECT_EQ(reset().status, Status::kError);
  opts_.nvidia_smi = (tmp_ / "nvidia-smi").string();
  stand_in(0, 0, "GPU-0aaa, N/A");
  const CheckResult r = reset();
  EXPECT_EQ(r.status, Status::kError);
  EXPECT_NE(r.message.find("not reset"), std::string::npos) << r.message;
  EXPECT_EQ(calls().find("--gpu-reset"), std::string::npos) << calls();
}

TEST_F(GpuResetTest, a_good_reset_forgets_the_remembered_xids_a_reset_clears_and_keeps_the_rest) {
  before(nlohmann::json{{"gpus", {gpu(0, {{"pci", {{"bus_id", "00000000:18:00.0"}}}}), gpu(1)}}});
  const std::string dir = (tmp_ / "hook-state").string();
  std::filesystem::create_directories(dir);
  std::ifstream boot("/proc/sys/kernel/random/boot_id");
  std::string boot_id;
  std::getline(boot, boot_id);
  const std::string cursor = kmsg::cursor_path(dir, "test-node");
  std::ofstream(cursor) << nlohmann::json{
      {"boot_id", boot_id},
      {"last_seq", 7},
      {"fatal", {"XID 48 0000:18:00 (reset_gpu)", "XID 79 0000:18:00 (reboot)"}}};
  opts_.xid_state_dirs = {dir, (tmp_ / "absent").string()};
  opts_.node = "test-node";
  const CheckResult r = reset();
  EXPECT_EQ(r.status, Status::kPass) << r.message;
  EXPECT_EQ(r.message, "reset 2 GPUs; all back; forgot 1 remembered XID(s) a reset clears");
  std::ifstream in(cursor);
  const auto saved = nlohmann::json::parse(in);
  EXPECT_EQ(saved.at("fatal"), nlohmann::json::array({"XID 79 0000:18:00 (reboot)"}));
  // ... and notes when it reset the GPUs, from which nvml_fabric grants its grace (review W9)
  std::ifstream marker(nvml::gpu_reset_marker(dir, "test-node"));
  long long at = 0;
  ASSERT_TRUE(marker >> at);
  EXPECT_LE(std::abs(static_cast<long long>(std::time(nullptr)) - at), 5);
  EXPECT_FALSE(
      std::filesystem::exists(nvml::gpu_reset_marker((tmp_ / "absent").string(), "test-node")));
}

TEST_F(GpuResetTest, the_drivers_bug_report_is_kept_before_the_reset_and_never_blocks_it) {
  const std::string script = (tmp_ / "nvidia-bug-report.sh").string();
  std::ofstream(script)
      << "#!/bin/sh\n[ \"$1\" = --output-file ] || exit 9\necho state > \"$2.gz\"\n"
      << "echo bug-report >> '" << log_ << "'\n";
  ::chmod(script.c_str(), 0755);
  opts_.evidence_dir = (tmp_ / "evidence").string();
  opts_.bug_report = script;
  opts_.node = "test-node";
  const CheckResult r = reset();
  EXPECT_EQ(r.status, Status::kPass) << r.message;
  const std::string prefix =
      "reset 2 GPUs; all back; bug report: " + opts_.evidence_dir + "/test-node-";
  EXPECT_EQ(r.message.rfind(prefix, 0), 0u) << r.message;
  EXPECT_TRUE(r.message.ends_with(".nvidia-bug-report.log.gz")) << r.message;
  // ... and in a field of its own, the file the script left (NVIDIA's appends .gz).
  ASSERT_TRUE(r.evidence);
  EXPECT_EQ(r.message.substr(r.message.find(opts_.evidence_dir)), *r.evidence);
  EXPECT_TRUE(std::filesystem::exists(*r.evidence)) << *r.evidence;
  EXPECT_NE(calls().find("bug-report\n-pm 0 -i GPU-0aaa\n--gpu-reset"), std::string::npos)
      << calls();  // before anything changes on the GPUs
  opts_.bug_report = (tmp_ / "absent-bug-report.sh").string();
  const CheckResult none = reset();
  EXPECT_EQ(none.status, Status::kPass);
  EXPECT_NE(none.message.find("; no bug report ("), std::string::npos) << none.message;
  EXPECT_FALSE(none.evidence);
}

TEST_F(GpuResetTest, no_nvml_is_an_error) {
  ctx_.nvml_library = (tmp_ / "no-libnvidia-ml.so").string();
  const CheckResult r = reset();
  EXPECT_EQ(r.status, Status::kError);
  EXPECT_NE(r.message.find("NVML not available"), std::string::npos) << r.message;
}

}  // namespace
}  // namespace vigil::testing
