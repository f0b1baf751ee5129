// host_nvme: nvme-cli's smart-log JSON as its 1.x, 2.x (-H) and 2.11 print it, from the public
// outputs in tests/fixtures/nvme (SOURCES.md; the failed Crucial P3's values come from a
// plain-text capture), answered by a stand-in nvme program per controller of a sysfs tree built
// like /sys/class/nvme.
#include "host/nvme_health.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "check_factories.h"
#include "temp_dir.h"
#include "vigil/base/files.h"

namespace vigil {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

const std::string kFixtures = std::string(VIGIL_SOURCE_DIR) + "/tests/fixtures/nvme/";

std::string capture(const std::string& name) { return read_whole_file(kFixtures + name).value(); }

TEST(NvmeSmartLog, every_nvme_cli_form_parses) {
  const auto v1 = nvme::parse_smart_log(capture("nvmecli1-healthy-dell-disk-exporter.json"));
  ASSERT_TRUE(v1) << v1.error().message;
  EXPECT_EQ(v1->critical_warning, 0u);
  EXPECT_EQ(v1->avail_spare, 100u);
  EXPECT_EQ(v1->spare_thresh, 5u);
  EXPECT_EQ(v1->percent_used, 15u);
  EXPECT_EQ(*v1->media_errors, 0);
  EXPECT_EQ(*v1->temperature_c, 28);  // 301 K

  // critical_warning as an object (-H; always in 2.11).
  for (const char* f : {"nvmecli2-H-healthy-object.json", "nvmecli2.11-healthy-object-netdata.json",
                        "nvmecli2-healthy-netdata.json"}) {
    const auto log = nvme::parse_smart_log(capture(f));
    ASSERT_TRUE(log) << f << ": " << log.error().message;
    EXPECT_EQ(log->critical_warning, 0u) << f;
    EXPECT_GE(log->avail_spare, 100u) << f;
  }
  EXPECT_EQ(nvme::parse_smart_log(capture("nvmecli2.11-healthy-object-netdata.json"))->percent_used,
            30u);

  // 2.1-2.3 print the counters as strings (DERIVED from the capture above, as netdata did).
  const auto strings = nvme::parse_smart_log(capture("derived-strings-variant-netdata.json"));
  ASSERT_TRUE(strings) << strings.error().message;
  EXPECT_EQ(strings->percent_used, 2u);
  EXPECT_EQ(*strings->media_errors, 0);

  const auto failed =
      nvme::parse_smart_log(capture("derived-crucial-p3-failed-as-nvmecli1-json.json"));
  ASSERT_TRUE(failed);
  EXPECT_EQ(failed->critical_warning, 0x9u);
  EXPECT_EQ(failed->avail_spare, 0u);

  EXPECT_FALSE(nvme::parse_smart_log("Smart Log for NVME device:nvme0 namespace-id:ffffffff\n"));
  EXPECT_FALSE(nvme::parse_smart_log(R"({"temperature": 301})"));
  EXPECT_FALSE(nvme::parse_smart_log(R"({"critical_warning": 300, "avail_spare": 1,
                                         "spare_thresh": 1, "percent_used": 1})"));
}

TEST(NvmeSmartLog, the_warning_bits_that_fail_and_those_that_warn) {
  // 0x9 (the Crucial P3): spare below threshold and media read-only.
  const auto p3 = nvme::warning_bits(0x9);
  ASSERT_EQ(p3.size(), 2u);
  EXPECT_TRUE(p3[0].fails && p3[1].fails);
  EXPECT_STREQ(p3[1].what, "media read-only");
  const auto hot = nvme::warning_bits(0x2);
  ASSERT_EQ(hot.size(), 1u);
  EXPECT_FALSE(hot[0].fails);  // not latched: the drive throttles
  EXPECT_TRUE(nvme::warning_bits(0x4)[0].fails);
  EXPECT_TRUE(nvme::warning_bits(0).empty());
}

class HostNvme : public ::testing::Test {
 protected:
  void SetUp() override { ctx_.sysfs_root = dir_.path(); }
  // A controller under /sys/class/nvme, and what the stand-in nvme prints for it.
  void controller(const std::string& name, const std::string& state, const std::string& output) {
    const std::string d = dir_.path() + "/sys/class/nvme/" + name;
    fs::create_directories(d);
    std::ofstream(d + "/state") << state << "\n";
    std::ofstream(d + "/model") << "CT4000P3PSSD8                           \n";
    std::ofstream(d + "/address") << "0000:0" << name.back() << ":00.0\n";
    if (!output.empty()) std::ofstream(dir_.path() + "/out-" + name) << output;
  }
  // The stand-in: `nvme smart-log /dev/nvmeN -o json` prints out-nvmeN, or runs `body`.
  void nvme_says(const std::string& body = "") {
    const std::string p = dir_.path() + "/nvme";
    std::ofstream(p) << "#!/bin/sh\n"
                     << body << "\n"
                     << "[ \"$1 $3 $4\" = \"smart-log -o json\" ] || exit 64\n"
                     << "exec cat \"" << dir_.path() << "/out-${2#/dev/}\"\n";
    ::chmod(p.c_str(), 0755);
    ctx_.host.nvme = p;
  }
  CheckResult run() { return make_host_nvme_check()->run(ctx_); }

  TempDir dir_;
  CheckContext ctx_;
};

TEST_F(HostNvme, healthy_drives_pass_and_a_failed_one_fails_naming_the_drive_and_bits) {
  EXPECT_FALSE(make_host_nvme_check()->applies(ctx_).yes);  // no NVMe at all
  controller("nvme0", "live", capture("nvmecli1-healthy-dell-disk-exporter.json"));
  controller("nvme1", "live", capture("nvmecli2.11-healthy-object-netdata.json"));
  nvme_says();
  ASSERT_TRUE(make_host_nvme_check()->applies(ctx_).yes);
  const CheckResult ok = run();
  EXPECT_EQ(ok.status, Status::kPass) << ok.message;
  EXPECT_EQ(ok.message, "2 NVMe drives healthy");
  EXPECT_EQ(ok.measurements.size(), 6u);

  controller("nvme2", "live", capture("derived-crucial-p3-failed-as-nvmecli1-json.json"));
  const CheckResult bad = run();
  EXPECT_EQ(bad.status, Status::kFail) << bad.message;
  EXPECT_EQ(bad.fault_code, "VIGIL-NVME-CRITICAL-WARNING");
  EXPECT_EQ(bad.message,
            "nvme2 CT4000P3PSSD8 (0000:02:00.0) available spare below threshold (0% < 5%), "
            "nvme2 CT4000P3PSSD8 (0000:02:00.0) media read-only");
}

TEST_F(HostNvme, a_dead_controller_fails_and_one_resetting_warns) {
  controller("nvme0", "dead", "");
  controller("nvme1", "resetting", "");
  nvme_says();
  const CheckResult r = run();
  EXPECT_EQ(r.status, Status::kFail) << r.message;
  EXPECT_EQ(r.fault_code, "VIGIL-NVME-DEAD");
  controller("nvme0", "live", capture("nvmecli2-H-healthy-object.json"));
  const CheckResult w = run();
  EXPECT_EQ(w.status, Status::kWarn) << w.message;
  EXPECT_NE(w.message.find("nvme1 CT4000P3PSSD8 (0000:01:00.0) resetting"), std::string::npos);
}

// An NVMe-over-fabrics controller is a storage target's drive: not this node's. A worn drive
// that sets "reliability degraded" alone at 100% used warns; a state that cannot be read is an
// error.
TEST_F(HostNvme, fabrics_controllers_worn_drives_and_unreadable_states_never_fail) {
  controller("nvme0", "live", capture("derived-crucial-p3-failed-as-nvmecli1-json.json"));
  std::ofstream(dir_.path() + "/sys/class/nvme/nvme0/transport") << "tcp\n";
  nvme_says();
  EXPECT_FALSE(make_host_nvme_check()->applies(ctx_).yes);

  controller("nvme1", "live", "");
  std::ofstream(dir_.path() + "/sys/class/nvme/nvme1/transport") << "pcie\n";
  std::string worn = capture("nvmecli1-healthy-dell-disk-exporter.json");
  worn.replace(worn.find("\"critical_warning\" : 0"), 22, "\"critical_warning\" : 4");
  worn.replace(worn.find("\"percent_used\" : 15"), 19, "\"percent_used\" : 100");
  std::ofstream(dir_.path() + "/out-nvme1") << worn;
  const CheckResult w = run();
  EXPECT_EQ(w.status, Status::kWarn) << w.message;
  EXPECT_EQ(w.fault_code, "VIGIL-NVME-WORN");
  EXPECT_NE(w.message.find("100% of its rated endurance used (critical warning: reliability "
                           "degraded)"),
            std::string::npos)
      << w.message;

  fs::remove(dir_.path() + "/sys/class/nvme/nvme1/state");
  const CheckResult e = run();
  EXPECT_EQ(e.status, Status::kError) << e.message;
  EXPECT_EQ(e.fault_code, "VIGIL-NVME-QUERY");
}

TEST_F(HostNvme, no_nvme_cli_no_root_a_hang_or_junk_is_never_a_fail) {
  controller("nvme0", "live", capture("derived-crucial-p3-failed-as-nvmecli1-json.json"));
  ctx_.host.nvme = dir_.path() + "/not-installed";
  const CheckResult none = run();
  EXPECT_EQ(none.status, Status::kSkipped) << none.message;
  EXPECT_NE(none.message.find("nvme-cli is not installed"), std::string::npos);

  // What nvme-cli says without CAP_SYS_ADMIN (the kernel's EACCES).
  nvme_says("echo 'smart log: Permission denied' >&2; exit 1");
  const CheckResult denied = run();
  EXPECT_EQ(denied.status, Status::kError) << denied.message;
  EXPECT_EQ(denied.fault_code, "VIGIL-NVME-QUERY");
  EXPECT_NE(denied.message.find("needs root"), std::string::npos) << denied.message;

  nvme_says("exec sleep 30");
  const CheckResult hung = run();
  EXPECT_EQ(hung.status, Status::kError) << hung.message;
  EXPECT_NE(hung.message.find("did not answer in 5 s"), std::string::npos);

  nvme_says("echo 'Smart Log for NVME device:nvme0 namespace-id:ffffffff'; exit 0");
  const CheckResult junk = run();
  EXPECT_EQ(junk.status, Status::kError) << junk.message;
  EXPECT_EQ(junk.fault_code, "VIGIL-NVME-OUTPUT");

  // A dead controller still fails beside a drive that could not be read.
  controller("nvme1", "dead", "");
  nvme_says("echo 'smart log: Permission denied' >&2; exit 1");
  const CheckResult both = run();
  EXPECT_EQ(both.status, Status::kFail) << both.message;
  EXPECT_NE(both.message.find("; also nvme0"), std::string::npos) << both.message;
}

}  // namespace
}  // namespace vigil
