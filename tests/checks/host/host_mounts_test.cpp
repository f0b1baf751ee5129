// host_mounts: the mount table as Linux 6.18 printed it (tests/fixtures/mounts), moved into the
// test's own directory so that the real `stat -f` answers for its mount points; stand-in stat
// programs for a mount that hangs, one cut off (ENOTCONN) and a full one.
#include "host/host_mounts.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

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

std::string capture() {
  return read_whole_file(std::string(VIGIL_SOURCE_DIR) +
                         "/tests/fixtures/mounts/mountinfo-6.18.txt")
      .value();
}

class HostMounts : public ::testing::Test {
 protected:
  void SetUp() override {
    base_ = dir_.path() + "/cap";
    for (const char* d : {"scratch space", "ro", "bound"}) fs::create_directories(base_ + "/" + d);
    fs::create_directories(dir_.path() + "/proc/self");
    std::ofstream(dir_.path() + "/proc/self/mountinfo")
        << std::regex_replace(capture(), std::regex("/tmp/vigil-cap"), base_);
    ctx_.proc_root = dir_.path() + "/proc";
    ctx_.sku = &sku_;
  }
  void want(const std::string& leaf, const std::string& fstype, bool rw = true,
            std::optional<double> min_free = {}) {
    sku_.mounts.push_back({base_ + "/" + leaf, fstype, rw, min_free});
  }
  // A stand-in stat: `body` is its shell text.
  void stat_says(const std::string& body) {
    const std::string p = dir_.path() + "/stat";
    std::ofstream(p) << "#!/bin/sh\n" << body << "\n";
    ::chmod(p.c_str(), 0755);
    ctx_.host.stat = p;
  }
  CheckResult run() { return make_host_mounts_check()->run(ctx_); }
  TempDir dir_;
  std::string base_;
  SkuConfig sku_;
  CheckContext ctx_;
};

TEST(MountInfo, reads_the_linux_618_capture) {
  const auto table = mounts::parse_mountinfo(capture());
  ASSERT_EQ(table.size(), 23u);
  EXPECT_EQ(table[0].point, "/");
  EXPECT_EQ(table[1].point, "/proc");
  EXPECT_EQ(table[20].point, "/tmp/vigil-cap/scratch space");  // \040 unescaped
  EXPECT_EQ(table[20].fstype, "tmpfs");
  EXPECT_FALSE(table[20].read_only);
  EXPECT_TRUE(table[21].read_only);
  EXPECT_EQ(table[22].fstype, "ext4");
  EXPECT_EQ(table[22].source, "/dev/vda");
  EXPECT_TRUE(mounts::parse_mountinfo("36 35 98:0 /mnt1\n").empty());  // cut short: left out
}

TEST_F(HostMounts, the_listed_mounts_in_place_pass_with_their_free_space) {
  want("scratch space", "tmpfs");
  want("bound", "ext4");
  const CheckResult r = run();
  EXPECT_EQ(r.status, Status::kPass) << r.message;
  EXPECT_EQ(r.message, "2 mounts in place");
  int free_figures = 0;
  for (const auto& m : r.measurements) free_figures += m.name == "mount_free_percent";
  EXPECT_EQ(free_figures, 2);  // the real stat -f answered for both
}

TEST_F(HostMounts, missing_of_another_type_or_read_only_fails) {
  want("ro", "tmpfs");  // rw wanted, mounted ro
  const CheckResult ro = run();
  EXPECT_EQ(ro.status, Status::kFail);
  EXPECT_EQ(ro.fault_code, "VIGIL-MOUNT-READONLY");
  EXPECT_EQ(ro.message, base_ + "/ro is read-only");
  sku_.mounts = {{base_ + "/bound", "lustre", true, {}}};
  EXPECT_EQ(run().message, base_ + "/bound is ext4, not lustre");
  sku_.mounts = {{dir_.path() + "/lustre", "lustre", true, {}}};
  const CheckResult missing = run();
  EXPECT_EQ(missing.fault_code, "VIGIL-MOUNT-MISSING");
  EXPECT_EQ(missing.message, dir_.path() + "/lustre is not mounted");
  sku_.mounts = {{base_ + "/ro", "", false, {}}};  // read-only is what the file asks
  EXPECT_EQ(run().status, Status::kPass);
}

TEST_F(HostMounts, a_cut_off_or_full_mount_fails_a_hung_one_is_an_error) {
  want("bound", "ext4", true, 5.0);
  stat_says("echo '1000 30'");  // 3 % free
  CheckResult r = run();
  EXPECT_EQ(r.status, Status::kFail) << r.message;
  EXPECT_NE(r.message.find("mount_free_percent"), std::string::npos) << r.message;
  EXPECT_EQ(r.fault_code, "VIGIL-MOUNT-FREE-PERCENT");
  stat_says(
      "echo \"stat: cannot read file system information for '$6': Transport endpoint is "
      "not connected\" >&2; exit 1");
  r = run();
  EXPECT_EQ(r.status, Status::kFail) << r.message;
  EXPECT_EQ(r.fault_code, "VIGIL-MOUNT-BROKEN");
  stat_says("echo 'stat: Permission denied' >&2; exit 1");
  EXPECT_EQ(run().status, Status::kError);
  stat_says("sleep 30");
  const auto t0 = std::chrono::steady_clock::now();
  r = run();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10));
  EXPECT_EQ(r.status, Status::kError) << r.message;
  EXPECT_EQ(r.fault_code, "VIGIL-MOUNT-HUNG");
  // A hang beside a missing mount: the missing one still fails, the hang is said too.
  sku_.mounts.push_back({dir_.path() + "/gone", "", true, {}});
  r = run();
  EXPECT_EQ(r.status, Status::kFail) << r.message;
  EXPECT_NE(r.message.find("also"), std::string::npos) << r.message;
}

TEST_F(HostMounts, no_listed_mounts_or_no_table_is_never_a_fail) {
  EXPECT_FALSE(make_host_mounts_check()->applies(ctx_).yes);  // the SKU lists none
  ctx_.sku = nullptr;
  EXPECT_FALSE(make_host_mounts_check()->applies(ctx_).yes);
  ctx_.sku = &sku_;
  want("bound", "ext4");
  ctx_.proc_root = dir_.path() + "/no-proc";
  const CheckResult r = run();
  EXPECT_EQ(r.status, Status::kError) << r.message;
}

}  // namespace
}  // namespace vigil
