// host_services: `systemctl show` as systemd 252 prints it (tests/fixtures/systemd, captured
// under systemd booted as PID 1), answered by a stand-in systemctl that looks each unit up in the
// capture; the units judged on a board with and without NVSwitches; restart loops across two
// runs through a state dir; no systemd; and the NVML cross-check of a dead Fabric Manager
// against the fake NVML.
#include "host/host_services.h"

#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <regex>

#include "check_factories.h"
#include "nvml_test_support.h"
#include "vigil/base/files.h"

namespace vigil::testing {
namespace {

namespace fs = std::filesystem;

const fs::path kCaptures = fs::path(VIGIL_SOURCE_DIR) / "tests/fixtures/systemd";

std::string capture(const std::string& file) {
  return read_whole_file((kCaptures / file).string()).value();
}

// The blocks of a `systemctl show` text, each ending in a newline.
std::vector<std::string> split_blocks(const std::string& text) {
  std::vector<std::string> out;
  size_t from = 0;
  for (size_t at; (at = text.find("\n\n", from)) != std::string::npos; from = at + 2)
    out.push_back(text.substr(from, at + 1 - from));
  if (from < text.size()) out.push_back(text.substr(from));
  return out;
}

// The capture's block of `unit`, renamed `as` (a healthy unit from the captured running one).
std::string block(const std::string& unit, const std::string& as) {
  for (const auto& b : split_blocks(capture("show-252.txt")))
    if (b.find("Id=" + unit + "\n") != std::string::npos)
      return std::regex_replace(b, std::regex("Id=" + unit), "Id=" + as);
  ADD_FAILURE() << unit << " is not in the capture";
  return "";
}

class host_services : public NvmlCheckTest {
 protected:
  void SetUp() override {
    NvmlCheckTest::SetUp();
    ctx_.sysfs_root = (tmp_ / "root").string();
    ctx_.nvml_library = (tmp_ / "no-nvml.so").string();  // no cross-check unless a test asks
    booted_ago(3600);
    answer(capture("show-252.txt"));
  }
  // The stand-in systemctl answers `show ... -- UNITS` from `blocks`, each unit's block in the
  // order asked; a unit not in them gets the captured not-found block with its name.
  void answer(const std::string& blocks) {
    std::ofstream(tmp_ / "blocks.txt", std::ios::trunc) << blocks;
    write_stand_in(R"(while [[ $# -gt 0 && $1 != -- ]]; do shift; done; shift
notfound=$(awk 'BEGIN{RS=""} /Id=nv-hostengine.service/' )" +
                   kCaptures.string() + R"(/show-252.txt)
sep=
for u in "$@"; do
  printf '%s' "$sep"; sep=$'\n'
  awk -v id="Id=$u" 'BEGIN{RS=""} {n=split($0,l,"\n"); for(i=1;i<=n;i++) if (l[i]==id) {print; f=1; exit}} END{exit !f}' )" +
                   (tmp_ / "blocks.txt").string() + R"( ||
    printf '%s\n' "${notfound//Id=nv-hostengine.service/Id=$u}"
done)");
  }
  void write_stand_in(const std::string& body) {
    const fs::path p = tmp_ / "systemctl";
    std::ofstream(p, std::ios::trunc) << "#!/bin/bash\n" << body << "\n";
    ::chmod(p.c_str(), 0755);
    ctx_.host.systemctl = p.string();
  }
  // The node booted `seconds` ago (ctx.proc_root/uptime, as /proc/uptime reads).
  void booted_ago(double seconds) {
    fs::create_directories(tmp_ / "proc");
    std::ofstream(tmp_ / "proc" / "uptime", std::ios::trunc) << seconds << " 1234.56\n";
    ctx_.proc_root = (tmp_ / "proc").string();
  }
  // An NVSwitch on the node's PCI bus, as sysfs shows one (vendor 0x10de, class 0x068000).
  void with_nvswitch() {
    const fs::path dir = tmp_ / "root/sys/bus/pci/devices/0000:05:00.0";
    fs::create_directories(dir);
    std::ofstream(dir / "vendor") << "0x10de\n";
    std::ofstream(dir / "class") << "0x068000\n";
  }
  CheckResult run() { return NvmlCheckTest::run(make_host_services_check()); }
};

TEST(host_services_reader, reads_every_block_of_the_systemd_252_capture_in_order) {
  const auto units = services::parse_show(capture("show-252.txt"));
  ASSERT_EQ(units.size(), 6u);
  EXPECT_EQ(units[0].id, "nvidia-fabricmanager.service");
  EXPECT_EQ(units[0].active, "failed");
  EXPECT_EQ(units[0].result, "exit-code");
  EXPECT_EQ(units[0].unit_file, "enabled");
  EXPECT_EQ(units[1].active, "activating");
  EXPECT_EQ(units[1].sub, "auto-restart");
  EXPECT_EQ(units[1].restarts, 5u);
  EXPECT_EQ(units[3].load, "not-found");
  EXPECT_EQ(units[3].unit_file, "");
  EXPECT_EQ(units[4].unit_file, "static");
  EXPECT_EQ(units[4].active, "inactive");

  // Every property of one unit, values with '=' and ';' in them: one block, read right.
  const auto full = services::parse_show(capture("show-252-full-failed.txt"));
  ASSERT_EQ(full.size(), 1u);
  EXPECT_EQ(full[0].id, "nvidia-fabricmanager.service");
  EXPECT_EQ(full[0].load, "loaded");
  EXPECT_EQ(full[0].active, "failed");
  EXPECT_EQ(full[0].restarts, 0u);
}

TEST(host_services_reader, unit_names_are_systemds_and_get_its_default_suffix) {
  EXPECT_TRUE(services::is_unit_name("nvidia-fabricmanager"));
  EXPECT_TRUE(services::is_unit_name("getty@tty1.service"));
  EXPECT_FALSE(services::is_unit_name("--now"));
  EXPECT_FALSE(services::is_unit_name("a b"));
  EXPECT_FALSE(services::is_unit_name("x;reboot"));
  EXPECT_FALSE(services::is_unit_name(""));
  EXPECT_EQ(services::with_suffix("nvidia-imex"), "nvidia-imex.service");
  EXPECT_EQ(services::with_suffix("lustre.mount"), "lustre.mount");
}

// #883's failure: Fabric Manager failed on an NVSwitch board. Fatal, named with its result.
TEST_F(host_services, a_failed_fabric_manager_on_an_nvswitch_board_fails) {
  with_nvswitch();
  const CheckResult r = run();
  EXPECT_EQ(r.status, Status::kFail) << r.message;
  EXPECT_EQ(r.fault_code, "VIGIL-SERVICE-DOWN");
  EXPECT_NE(r.message.find("nvidia-fabricmanager.service failed (exit-code)"), std::string::npos)
      << r.message;
  EXPECT_EQ(find(r, "service_active")->port, "nvidia-fabricmanager.service");
  EXPECT_EQ(find(r, "service_active")->value, 0);
}

// A PCIe board: the Fabric Manager package's unit fails there by design; not judged. The
// captured persistenced between restarts warns; IMEX runs.
TEST_F(host_services, without_nvswitches_fabric_manager_is_not_judged) {
  const CheckResult r = run();
  EXPECT_EQ(r.status, Status::kWarn) << r.message;
  EXPECT_EQ(r.fault_code, "VIGIL-SERVICE-RESTARTING");
  EXPECT_EQ(r.message,
            "nvidia-persistenced.service exited (exit-code) and systemd is restarting it");
  EXPECT_EQ(count(r, "service_active"), 2);  // IMEX and persistenced, not Fabric Manager
}

TEST_F(host_services, healthy_units_pass_and_units_not_in_use_are_left_out) {
  with_nvswitch();
  answer(block("nvidia-imex.service", "nvidia-fabricmanager.service") + "\n" +
         block("nvidia-imex.service", "nvidia-persistenced.service"));
  const CheckResult r = run();
  EXPECT_EQ(r.status, Status::kPass) << r.message;
  EXPECT_EQ(r.message, "nvidia-fabricmanager.service, nvidia-persistenced.service are active");

  // Installed, neither enabled nor running (the captured static unit): not in use, not judged.
  answer(block("site-disabled.service", "nvidia-persistenced.service"));
  const CheckResult none = NvmlCheckTest::run(make_host_services_check());
  EXPECT_EQ(none.status, Status::kSkipped) << none.message;
}

// The SKU file's required units: missing or stopped fails, whatever else is true.
TEST_F(host_services, a_required_unit_missing_or_stopped_fails) {
  use_sku({});
  sku_.services.required = {"nv-hostengine.service", "site-disabled.service"};
  answer(block("nvidia-imex.service", "nvidia-persistenced.service") + "\n" +
         block("site-disabled.service", "site-disabled.service"));
  const CheckResult r = run();
  EXPECT_EQ(r.status, Status::kFail) << r.message;
  EXPECT_EQ(r.fault_code, "VIGIL-SERVICE-NOT-INSTALLED");
  EXPECT_EQ(r.message, "nv-hostengine.service is not installed, site-disabled.service is stopped");

  // A resident IMEX daemon (nvlink.imex_resident) is required too.
  sku_.services.required.clear();
  sku_.nvlink.imex_resident = true;
  answer(block("site-restarting.service", "site-restarting.service"));  // IMEX: not found
  const CheckResult imex = run();
  EXPECT_EQ(imex.status, Status::kFail) << imex.message;
  EXPECT_EQ(imex.message, "nvidia-imex.service is not installed");
}

// Inactive is judged against the boot: a unit whose start job waits (ordered after
// network-online.target) reads inactive in the first minutes. Failed fails at once.
TEST_F(host_services, a_stopped_unit_is_judged_after_the_boot_grace_a_failed_one_at_once) {
  use_sku({});
  sku_.services.required = {"site-disabled.service"};
  answer(block("site-disabled.service", "site-disabled.service"));
  booted_ago(120);
  CheckResult r = run();
  EXPECT_EQ(r.status, Status::kWarn) << r.message;
  EXPECT_EQ(r.message, "site-disabled.service not started yet, 120 s after boot");
  with_nvswitch();
  answer(capture("show-252.txt"));  // Fabric Manager failed: no grace
  EXPECT_EQ(run().status, Status::kFail);
}

// What systemd counts as running: refreshing (is-active), and a oneshot that ran to success.
TEST_F(host_services, refreshing_and_a_finished_oneshot_are_up_an_enabled_stopped_one_is_not) {
  use_sku({});
  sku_.services.required = {"site-a.service", "site-b.service"};
  const std::string active = block("nvidia-imex.service", "site-a.service");
  answer(std::regex_replace(active, std::regex("ActiveState=active"), "ActiveState=refreshing") +
         "\n" + block("site-disabled.service", "site-b.service") + "Type=oneshot\n");
  CheckResult r = run();
  EXPECT_EQ(r.status, Status::kPass) << r.message;
  // persistenced not required, enabled and stopped: in use, down, a warning.
  sku_.services.required.clear();
  answer(std::regex_replace(block("site-disabled.service", "nvidia-persistenced.service"),
                            std::regex("UnitFileState=static"), "UnitFileState=enabled"));
  r = run();
  EXPECT_EQ(r.status, Status::kWarn) << r.message;
  EXPECT_EQ(r.message, "nvidia-persistenced.service is stopped");
}

// ADR-050's flapping: >= 3 restarts per 600 s since the previous run warns.
TEST_F(host_services, a_restart_loop_across_runs_warns_as_flapping) {
  use_state_dir();
  const std::string running = block("nvidia-imex.service", "nvidia-persistenced.service");
  answer(std::regex_replace(running, std::regex("NRestarts=0"), "NRestarts=5"));
  EXPECT_EQ(run().status, Status::kPass);  // the baseline
  answer(std::regex_replace(running, std::regex("NRestarts=0"), "NRestarts=7"));
  CheckResult r = run();
  EXPECT_EQ(r.status, Status::kPass) << r.message;  // 2 restarts: not a loop
  EXPECT_EQ(find(r, "service_restarts_delta")->value, 2);
  answer(std::regex_replace(running, std::regex("NRestarts=0"), "NRestarts=10"));
  r = run();
  EXPECT_EQ(r.status, Status::kWarn) << r.message;
  EXPECT_EQ(r.fault_code, "VIGIL-SERVICE-FLAPPING");
  EXPECT_EQ(r.message, "nvidia-persistenced.service restarted 3 times in 1 min");

  // Runs 20 min apart: 3 per 600 s on average is 6 restarts; 5 are not a loop, 7 are.
  const fs::path file = tmp_ / "state" / "host_services.test-node.json";
  auto backdate = [&] {
    auto j = nlohmann::json::parse(read_whole_file(file.string()).value());
    j["time_unix"] = j["time_unix"].get<std::int64_t>() - 1200;
    std::ofstream(file, std::ios::trunc) << j.dump();
  };
  backdate();
  answer(std::regex_replace(running, std::regex("NRestarts=0"), "NRestarts=15"));
  r = run();
  EXPECT_EQ(r.status, Status::kPass) << r.message;
  EXPECT_EQ(find(r, "service_restarts_delta")->value, 5);
  backdate();
  answer(std::regex_replace(running, std::regex("NRestarts=0"), "NRestarts=22"));
  r = run();
  EXPECT_EQ(r.status, Status::kWarn) << r.message;
  EXPECT_EQ(r.message, "nvidia-persistenced.service restarted 7 times in 20 min");
}

TEST_F(host_services, no_systemd_is_skipped_and_a_broken_systemctl_is_an_error) {
  write_stand_in("cat " + (kCaptures / "no-pid1.stderr").string() + " >&2; exit 1");
  CheckResult r = run();
  EXPECT_EQ(r.status, Status::kSkipped) << r.message;
  EXPECT_NE(r.message.find("not been booted with systemd"), std::string::npos) << r.message;

  ctx_.host.systemctl = (tmp_ / "no-such-systemctl").string();
  EXPECT_EQ(run().status, Status::kSkipped);

  write_stand_in("echo 'Failed to get properties: Access denied' >&2; exit 1");
  r = run();
  EXPECT_EQ(r.status, Status::kError) << r.message;
  EXPECT_EQ(r.fault_code, "VIGIL-SERVICE-QUERY");

  write_stand_in("echo Id=x.service");  // one block for more units
  EXPECT_EQ(run().status, Status::kError);
}

// The cross-check: Fabric Manager down while NVML reads every GPU registered is #883's case
// (the fabric state is latched); down with GPUs not registered means CUDA answers 802.
TEST_F(host_services, a_dead_fabric_manager_is_cross_checked_with_nvml) {
  with_nvswitch();
  ctx_.nvml_library = VIGIL_FAKE_NVML_LIBRARY;
  use_fixture("healthy_8x_h100");
  CheckResult r = run();
  EXPECT_EQ(r.status, Status::kFail) << r.message;
  EXPECT_NE(r.message.find("NVML still reads 8 of 8 GPUs registered: it died after registration"),
            std::string::npos)
      << r.message;

  nlohmann::json j = load_fixture("healthy_8x_h100");
  j["gpu_defaults"]["fabric"] = {{"state", 1}};  // NOT_STARTED
  use_fixture_json(j);
  r = run();
  EXPECT_NE(r.message.find("NVML reads 0 of 8 GPUs registered: CUDA jobs fail with 802"),
            std::string::npos)
      << r.message;
}

}  // namespace
}  // namespace vigil::testing
