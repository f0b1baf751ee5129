// pcie_aer: the AER counter files as two kernels print them (tests/fixtures/aer), the devices
// watched and the port above them, and the verdicts between two runs through a state dir.
#include "host/pcie_aer.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>

#include "check_factories.h"
#include "temp_dir.h"
#include "vigil/base/files.h"
#include "vigil/checks/sku.h"

namespace vigil {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

const fs::path kCaptures = fs::path(VIGIL_SOURCE_DIR) / "tests/fixtures/aer";

std::string capture(const std::string& file) {
  return read_whole_file((kCaptures / file).string()).value();
}

// The captured file with one error line's count and the total set to `n`.
std::string with_count(const std::string& file, const std::string& line, int n) {
  std::string text = capture(file);
  text = std::regex_replace(text, std::regex(line + " [0-9]+"), line + " " + std::to_string(n));
  return std::regex_replace(text, std::regex("(TOTAL_ERR_[A-Z]+) [0-9]+"),
                            "$1 " + std::to_string(n));
}

// A sysfs tree: /sys/devices/pci0000:00/<port>/<bdf> with vendor, class and the ABI sample's
// counters, and /sys/bus/pci/devices/<bdf> linking to it, as the kernel lays it out.
class Tree {
 public:
  fs::path add(const std::string& port, const std::string& bdf, const char* vendor, const char* cls,
               bool counters = true) {
    const fs::path dir = root() / "sys/devices/pci0000:00" / port / bdf;
    fs::create_directories(dir);
    std::ofstream(dir / "vendor") << vendor << "\n";
    std::ofstream(dir / "class") << cls << "\n";
    if (counters)
      for (const char* f : {"aer_dev_correctable", "aer_dev_fatal", "aer_dev_nonfatal"})
        std::ofstream(dir / f) << capture(std::string("abi-sample/") + f);
    fs::create_directories(root() / "sys/bus/pci/devices");
    fs::create_symlink(fs::path("../../../devices/pci0000:00") / port / bdf,
                       root() / "sys/bus/pci/devices" / bdf);
    return dir;
  }
  fs::path port(const std::string& port) {
    const fs::path dir = root() / "sys/devices/pci0000:00" / port;
    for (const char* f : {"aer_dev_correctable", "aer_dev_fatal", "aer_dev_nonfatal"})
      std::ofstream(dir / f) << capture(std::string("abi-sample/") + f);
    return dir;
  }
  fs::path root() const { return dir_.path(); }
  // The kernel's boot_id (proc(5)); a new one is a reboot.
  void boot(const std::string& id) const {
    fs::create_directories(root() / "proc/sys/kernel/random");
    std::ofstream(root() / "proc/sys/kernel/random/boot_id") << id << "\n";
  }
  CheckContext context() const {
    if (!fs::exists(root() / "proc")) boot("3f1d2c6e-8a47-4b0e-9c55-1a2b3c4d5e6f");
    CheckContext ctx;
    ctx.node = "gpu-1";
    ctx.proc_root = (root() / "proc").string();
    ctx.sysfs_root = root().string();
    ctx.state_dir = (root() / "state").string();
    fs::create_directories(ctx.state_dir);
    return ctx;
  }

 private:
  TempDir dir_;
};

CheckResult run(const CheckContext& ctx) { return make_pcie_aer_check()->run(ctx); }

TEST(PcieAer, reads_the_total_of_either_kernels_names) {
  EXPECT_EQ(aer::total_errors(capture("abi-sample/aer_dev_correctable")), 2u);
  EXPECT_EQ(aer::total_errors(capture("abi-sample/aer_dev_fatal")), 0u);
  EXPECT_EQ(aer::total_errors(capture("smc45-card1/aer_dev_correctable")), 0u);
  EXPECT_EQ(aer::total_errors("RxErr 0\nBadTLP 0\n"), std::nullopt);  // cut short
  EXPECT_EQ(aer::total_errors("TOTAL_ERR_FATAL many\n"), std::nullopt);
}

TEST(PcieAer, watches_gpus_nvswitches_nics_nvme_and_the_port_above_each_once) {
  Tree t;
  t.add("0000:00:01.0", "0000:1b:00.0", "0x10de", "0x030200");  // H100 (3D controller)
  t.add("0000:00:01.0", "0000:1c:00.0", "0x10de", "0x030200");  // the same port above
  t.add("0000:00:02.0", "0000:05:00.0", "0x10de", "0x068000");  // NVSwitch
  t.add("0000:00:03.0", "0000:29:00.0", "0x15b3", "0x020700");  // ConnectX-7, InfiniBand
  t.add("0000:00:04.0", "0000:41:00.0", "0x144d", "0x010802");  // NVMe
  t.add("0000:00:05.0", "0000:61:00.0", "0x8086", "0x020000");  // another vendor's NIC
  t.add("0000:00:06.0", "0000:62:00.0", "0x10de", "0x030200", /*counters=*/false);
  t.port("0000:00:01.0");
  std::vector<std::string> seen;
  for (const auto& d : aer::watched_devices(t.root().string()))
    seen.push_back(d.bdf + " " + d.role);
  EXPECT_EQ(seen,
            (std::vector<std::string>{
                "0000:00:01.0 port above 0000:1b:00.0", "0000:05:00.0 nvswitch", "0000:1b:00.0 gpu",
                "0000:1c:00.0 gpu", "0000:29:00.0 nic", "0000:41:00.0 nvme"}));
}

TEST(PcieAer, a_fatal_error_on_a_gpu_fails_for_the_rest_of_the_boot_and_asks_for_a_reboot) {
  Tree t;
  const fs::path gpu = t.add("0000:00:01.0", "0000:1b:00.0", "0x10de", "0x030200");
  const CheckContext ctx = t.context();
  CheckResult first = run(ctx);
  EXPECT_EQ(first.status, Status::kPass) << first.message;
  EXPECT_EQ(first.message, "1 device: baseline recorded");
  std::ofstream(gpu / "aer_dev_fatal")
      << with_count("abi-sample/aer_dev_fatal", "Surprise Down Error", 1);
  CheckResult r = run(ctx);
  EXPECT_EQ(r.status, Status::kFail) << r.message;
  EXPECT_EQ(r.fault_code, "VIGIL-PCIE-AER-FATAL");
  EXPECT_EQ(r.message, "gpu 0000:1b:00.0: 1 fatal PCIe error (AER) this boot");
  EXPECT_EQ(r.remedy, Remedy::kReboot);
  // The driver does not recover the GPU: later runs of the same boot fail too, so the drainer's
  // resume_after passes never come while it is broken.
  EXPECT_EQ(run(ctx).status, Status::kFail);
  EXPECT_EQ(run(ctx).status, Status::kFail);
  // A reboot ends it: the kernel counts from zero in a new boot.
  t.boot("9b0e7d52-1c3a-4f68-8e21-6d5c4b3a2f10");
  std::ofstream(gpu / "aer_dev_fatal") << capture("abi-sample/aer_dev_fatal");
  EXPECT_EQ(run(ctx).status, Status::kPass);
}

TEST(PcieAer, a_count_already_there_at_a_boots_first_reading_is_its_baseline) {
  Tree t;
  const fs::path gpu = t.add("0000:00:01.0", "0000:1b:00.0", "0x10de", "0x030200");
  const CheckContext ctx = t.context();
  std::ofstream(gpu / "aer_dev_fatal") << with_count("abi-sample/aer_dev_fatal", "ECRC", 5);
  EXPECT_EQ(run(ctx).status, Status::kPass);  // before Vigil looked: says nothing sure now
  t.boot("9b0e7d52-1c3a-4f68-8e21-6d5c4b3a2f10");
  std::ofstream(gpu / "aer_dev_fatal") << with_count("abi-sample/aer_dev_fatal", "ECRC", 1);
  EXPECT_EQ(run(ctx).status, Status::kPass);  // a new boot's first reading, lower or not
  std::ofstream(gpu / "aer_dev_fatal") << with_count("abi-sample/aer_dev_fatal", "ECRC", 2);
  EXPECT_EQ(run(ctx).status, Status::kFail);
}

TEST(PcieAer, a_fatal_error_on_a_nic_or_at_the_port_above_or_a_nonfatal_one_warns) {
  Tree t;
  t.add("0000:00:01.0", "0000:1b:00.0", "0x10de", "0x030200");
  const fs::path nic = t.add("0000:00:03.0", "0000:29:00.0", "0x15b3", "0x020700");
  const fs::path nvme = t.add("0000:00:04.0", "0000:41:00.0", "0x144d", "0x010802");
  const fs::path port = t.port("0000:00:01.0");
  // A site's bound on the GPUs' fatal errors does not reach the port above them.
  SkuConfig sku;
  sku.name = "H100-SXM5-80GB";
  sku.thresholds["pcie_aer"]["aer_fatal_this_boot"] =
      built_in_threshold(Op::kLe, 0, std::nullopt, "count", "site");
  CheckContext ctx = t.context();
  ctx.sku = &sku;
  ASSERT_EQ(run(ctx).status, Status::kPass);
  std::ofstream(port / "aer_dev_fatal")
      << with_count("abi-sample/aer_dev_fatal", "Surprise Down Error", 1);
  std::ofstream(nic / "aer_dev_fatal")
      << with_count("abi-sample/aer_dev_fatal", "Malformed TLP", 1);
  std::ofstream(nvme / "aer_dev_nonfatal")
      << with_count("abi-sample/aer_dev_nonfatal", "Completion Timeout", 3);
  CheckResult r = run(ctx);
  EXPECT_EQ(r.status, Status::kWarn) << r.message;
  EXPECT_EQ(r.fault_code, "VIGIL-PCIE-AER-FATAL");
  EXPECT_EQ(r.message,
            "port above 0000:1b:00.0 (0000:00:01.0): 1 fatal PCIe error (AER), "
            "nic 0000:29:00.0: 1 fatal PCIe error (AER), "
            "nvme 0000:41:00.0: 3 non-fatal PCIe errors (AER)");
  EXPECT_FALSE(r.remedy);
}

TEST(PcieAer, correctable_errors_are_figures) {
  Tree t;
  const fs::path gpu = t.add("0000:00:01.0", "0000:1b:00.0", "0x10de", "0x030200");
  const CheckContext ctx = t.context();
  ASSERT_EQ(run(ctx).status, Status::kPass);
  std::ofstream(gpu / "aer_dev_correctable")
      << with_count("abi-sample/aer_dev_correctable", "Receiver Error", 40);
  CheckResult r = run(ctx);
  EXPECT_EQ(r.status, Status::kPass) << r.message;
  EXPECT_EQ(r.message, "1 device: no new uncorrectable PCIe errors");
  bool found = false;
  for (const auto& m : r.measurements)
    if (m.name == "aer_correctable_delta") found = m.value == 38;  // 2 in the capture
  EXPECT_TRUE(found);
}

TEST(PcieAer, setup_problems_are_skipped_or_errors_never_fails) {
  Tree none;
  none.add("0000:00:05.0", "0000:61:00.0", "0x8086", "0x020000");
  EXPECT_EQ(run(none.context()).status, Status::kSkipped);

  Tree t;
  const fs::path gpu = t.add("0000:00:01.0", "0000:1b:00.0", "0x10de", "0x030200");
  std::ofstream(gpu / "aer_dev_nonfatal") << "Undefined 0\n";  // cut short
  CheckResult r = run(t.context());
  EXPECT_EQ(r.status, Status::kError) << r.message;
  EXPECT_EQ(r.fault_code, "VIGIL-PCIE-AER-UNREADABLE");
  EXPECT_NE(r.message.find("aer_dev_nonfatal"), std::string::npos) << r.message;

  Tree plain;  // no state dir: totals since boot, never judged
  const fs::path g = plain.add("0000:00:01.0", "0000:1b:00.0", "0x10de", "0x030200");
  std::ofstream(g / "aer_dev_fatal") << with_count("abi-sample/aer_dev_fatal", "ECRC", 2);
  CheckContext ctx = plain.context();
  ctx.state_dir.clear();
  CheckResult p = run(ctx);
  EXPECT_EQ(p.status, Status::kPass) << p.message;
  EXPECT_EQ(p.message, "1 device: totals since boot (no state dir: not judged)");
}

}  // namespace
}  // namespace vigil
