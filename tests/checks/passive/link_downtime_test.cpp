// ib_link_downtime: RDMA port link lines as the kernel printed them (tests/fixtures/kmsg/
// link-flaps.txt, sources in SOURCES.md), given to the check as /dev/kmsg records with the
// timestamps the log showed, across runs that keep their state as the hooks do.
#include "passive/link_downtime.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "check_factories.h"
#include "temp_dir.h"
#include "vigil/checks/sku.h"

namespace vigil {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

// The fixture's excerpts by group ("E8"), their lines as captured.
std::map<std::string, std::vector<std::string>> groups() {
  std::ifstream in(std::string(VIGIL_SOURCE_DIR) + "/tests/fixtures/kmsg/link-flaps.txt");
  std::map<std::string, std::vector<std::string>> out;
  std::string group;
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with("# group ")) group = line.substr(8, line.find(':') - 8);
    if (line.empty() || line[0] == '#') continue;
    out[group].push_back(line);
  }
  return out;
}

// A captured line as /dev/kmsg gives its record's text: without dmesg's "[ 4435.115811] " (or
// "[Tue Feb 14 18:48:25 2023] ") or journald's "Mar 27 15:37:34 cc1 kernel: ".
std::string kernel_text(const std::string& line) {
  if (line.starts_with("[")) return line.substr(line.find("] ") + 2);
  if (const size_t k = line.find(" kernel: "); k != std::string::npos) return line.substr(k + 9);
  return line;
}

TEST(LinkDowntimeLines, the_genuine_lines_give_each_ports_downs_and_ups) {
  auto g = groups();
  ASSERT_EQ(g.size(), 6u);
  std::vector<std::string> seen;
  for (const auto& name : {"E8", "E7", "E13", "E3", "E1", "E5"}) {
    for (const auto& line : g[name]) {
      const auto e = link_down::parse_link_event(kernel_text(line));
      if (!e) continue;
      const char* kind = e->kind == link_down::LinkEvent::kDown       ? "down"
                         : e->kind == link_down::LinkEvent::kTraining ? "training"
                                                                      : "up";
      seen.push_back(std::string(name) + " " + e->port + " " + e->name + " " + kind);
    }
  }
  EXPECT_EQ(seen, (std::vector<std::string>{
                      "E8 0000:53:00.0/1 enp83s0f0np0 down",
                      "E8 0000:53:00.0/1 enp83s0f0np0 up",
                      "E8 mlx5_3/1 mlx5_3 up",
                      "E8 0000:53:00.0/1 enp83s0f0np0 down",
                      "E8 mlx5_3/1 mlx5_3 down",
                      "E8 0000:53:00.0/1 enp83s0f0np0 up",
                      "E8 mlx5_3/1 mlx5_3 up",
                      "E8 0000:53:00.0/1 enp83s0f0np0 down",
                      "E8 mlx5_3/1 mlx5_3 down",
                      "E7 0000:01:00.1/1 eth1 up",
                      "E7 0000:01:00.1/1 eth1 up",
                      "E7 0000:01:00.1/1 eth1 up",
                      "E13 ibp195s0/1 ibp195s0 training",
                      "E13 ibp195s0/1 ibp195s0 up",
                      "E3 mlx5_0/1 mlx5_0 down",
                      "E1 0000:02:00.0/1 ens2f0np0 down",
                      "E5 0000:01:00.0/1 enp1s0f0 up",
                  }));
  // A line user text could have made, another driver's, or a module event: none.
  EXPECT_FALSE(
      link_down::parse_link_event("bond0: (slave enp83s0f0np0): link status definitely "
                                  "down, disabling slave"));
  EXPECT_FALSE(
      link_down::parse_link_event("mlx5_core 0000:01:00.0: Port module event: module "
                                  "0, Cable plugged"));
  EXPECT_FALSE(link_down::parse_link_event("ixgbe 0000:05:00.0 enp5s0: NIC Link is Up 10 Gbps"));
  EXPECT_FALSE(link_down::parse_link_event("mlx5_core 0000:53:00.0 mlx5_3: Port: x Link DOWN"));
}

class LinkDowntime : public ::testing::Test {
 protected:
  void SetUp() override {
    ctx_.node = "gpu-0";
    ctx_.kmsg_path = dir_.path() + "/kmsg";
    ctx_.state_dir = dir_.path() + "/state";
    ctx_.proc_root = dir_.path() + "/proc";
    ctx_.sysfs_root = dir_.path();
    fs::create_directories(ctx_.proc_root + "/sys/kernel/random");
    boot("boot-1");
    std::ofstream(ctx_.kmsg_path);  // an empty log
    // E8's node: RoCE (the SKU's fabric is Ethernet), mlx5_3 at PCI 0000:53:00.0.
    sku_.infiniband.link_layer = "Ethernet";
    ctx_.sku = &sku_;
    port("mlx5_3", "0000:53:00.0", "4: ACTIVE");
  }
  // An RDMA device's port 1 under /sys/class/infiniband, its `device` link to its PCI function.
  void port(const std::string& hca, const std::string& bdf, const std::string& state) {
    const std::string d = dir_.path() + "/sys/class/infiniband/" + hca;
    fs::create_directories(d + "/ports/1");
    fs::create_directories(dir_.path() + "/sys/devices/pci0000:00/" + bdf);
    std::error_code ec;
    fs::remove(d + "/device", ec);
    fs::create_directory_symlink("../../../devices/pci0000:00/" + bdf, d + "/device");
    std::ofstream(d + "/ports/1/state") << state << "\n";
    std::ofstream(d + "/ports/1/phys_state") << "5: LinkUp\n";
    std::ofstream(d + "/ports/1/rate") << "100 Gb/sec (4X EDR)\n";
    std::ofstream(d + "/ports/1/link_layer") << "Ethernet\n";
  }
  void boot(const std::string& id) {
    std::ofstream(ctx_.proc_root + "/sys/kernel/random/boot_id") << id << "\n";
  }
  // Appends dmesg lines ("[ 4435.115811] text") as kernel records, prio 6 (KERN_INFO).
  void log(const std::vector<std::string>& lines, unsigned facility = 0) {
    std::ofstream out(ctx_.kmsg_path, std::ios::app);
    for (const auto& l : lines) {
      const double t = std::stod(l.substr(1, l.find(']') - 1));
      out << (facility << 3 | 6) << "," << ++seq_ << "," << static_cast<long long>(t * 1e6 + 0.5)
          << ",-;" << kernel_text(l) << "\n";
    }
  }
  CheckResult run() { return make_ib_link_downtime_check()->run(ctx_); }

  TempDir dir_;
  SkuConfig sku_;
  CheckContext ctx_;
  int seq_ = 0;
};

TEST_F(LinkDowntime, the_outages_that_ended_since_the_last_run_are_judged_by_their_length) {
  const CheckResult first = run();
  EXPECT_EQ(first.status, Status::kPass) << first.message;
  EXPECT_EQ(first.message, "first reading of this boot: outages before it are not judged");

  // E8: two flaps of 6.65 s and 6.35 s (netdev and ib_core lines: one outage each), then down
  // again.
  log(groups()["E8"]);
  port("mlx5_3", "0000:53:00.0", "1: DOWN");
  const CheckResult flaps = run();
  EXPECT_EQ(flaps.status, Status::kWarn) << flaps.message;
  EXPECT_EQ(flaps.fault_code, "VIGIL-LINK-DOWN-SECONDS");
  EXPECT_EQ(flaps.message,
            "since the last run: mlx5_3/1 (enp83s0f0np0, mlx5_3) down 13.0 s in 2 outages "
            "(longest 6.65 s)");
  ASSERT_EQ(flaps.measurements.size(), 1u);
  EXPECT_NEAR(flaps.measurements[0].value, 6.65229 + 6.350282, 1e-5);
  ASSERT_TRUE(flaps.measurements[0].threshold);
  EXPECT_EQ(flaps.measurements[0].threshold->fail, 30);

  // Still down at the next run, no new line: ib_port's to judge now; nothing ended here.
  const CheckResult still = run();
  EXPECT_EQ(still.status, Status::kPass) << still.message;
  EXPECT_TRUE(still.measurements.empty());

  // It comes back 44 s after it went down: the whole outage, measured by the log's own clock.
  log({"[ 4494.918521] mlx5_core 0000:53:00.0 enp83s0f0np0: Link up",
       "[ 4494.934787] mlx5_core 0000:53:00.0 mlx5_3: Port: 1 Link ACTIVE"});
  port("mlx5_3", "0000:53:00.0", "4: ACTIVE");
  const CheckResult back = run();
  EXPECT_EQ(back.status, Status::kFail) << back.message;
  EXPECT_NEAR(back.measurements.at(0).value, 44, 1e-6);
  EXPECT_EQ(back.message,
            "since the last run: mlx5_3/1 (enp83s0f0np0, mlx5_3) down 44.0 s in 1 outage "
            "(longest 44.0 s)");

  const CheckResult quiet = run();
  EXPECT_EQ(quiet.status, Status::kPass) << quiet.message;
  EXPECT_TRUE(quiet.measurements.empty());
  EXPECT_EQ(quiet.message,
            "0 new kernel log records, no fabric port outage ended since the last run");
}

TEST_F(LinkDowntime, ports_outside_the_fabric_and_outages_without_a_measurable_end_are_not_judged) {
  run();  // the baseline
  // A port that is not the fabric's (no such RDMA device: a front-end NIC) flaps 40 s.
  log({"[  100.000000] mlx5_core 0000:0a:00.0 ens2f0np0: Link down",
       "[  140.000000] mlx5_core 0000:0a:00.0 ens2f0np0: Link up"});
  // The fabric port goes down (E3's line, as a driver unload prints it) and is ACTIVE again by
  // sysfs with no up line: a reload re-registered it. Its end is unknown: dropped.
  log({"[  309.261822] mlx5_core 0000:53:00.0 mlx5_3: Port: 1 Link DOWN"});
  const CheckResult r = run();
  EXPECT_EQ(r.status, Status::kPass) << r.message;
  EXPECT_TRUE(r.measurements.empty());
  log({"[ 4000.000000] mlx5_core 0000:53:00.0 mlx5_3: Port: 1 Link ACTIVE"});
  EXPECT_TRUE(run().measurements.empty());  // not carried: no 3690 s outage hours later
}

TEST_F(LinkDowntime, lost_records_drop_an_outage_under_way) {
  run();  // the baseline
  log({"[  100.000000] mlx5_core 0000:53:00.0 mlx5_3: Port: 1 Link DOWN"});
  port("mlx5_3", "0000:53:00.0", "1: DOWN");
  EXPECT_TRUE(run().measurements.empty());  // under way
  // The ring buffer overwrote records between two runs: the oldest one left is sequence 4, so 2
  // and 3 were never seen (the up line may have been among them).
  std::ofstream(ctx_.kmsg_path, std::ios::trunc);
  seq_ = 3;
  log({"[  900.000000] mlx5_core 0000:53:00.0 mlx5_3: Port: 1 Link ACTIVE"});
  port("mlx5_3", "0000:53:00.0", "4: ACTIVE");
  const CheckResult r = run();
  EXPECT_EQ(r.status, Status::kPass) << r.message;
  EXPECT_TRUE(r.measurements.empty());
  EXPECT_NE(r.message.find("outages under way were dropped"), std::string::npos) << r.message;
}

TEST_F(LinkDowntime, the_first_run_of_a_boot_training_and_forged_lines_judge_nothing) {
  // Outages before the first run of a boot were before any job.
  log(groups()["E8"]);
  EXPECT_EQ(run().message, "first reading of this boot: outages before it are not judged");
  // A port that trains (INIT, ACTIVE) had no outage; a line user space wrote is not the driver's.
  port("ibp195s0", "0000:c3:00.0", "4: ACTIVE");
  log(groups()["E13"]);
  log({"[ 4453.000000] mlx5_core 0000:53:00.0 mlx5_3: Port: 1 Link DOWN",
       "[ 4493.000000] mlx5_core 0000:53:00.0 mlx5_3: Port: 1 Link ACTIVE"},
      1);
  const CheckResult r = run();
  EXPECT_EQ(r.status, Status::kPass) << r.message;
  EXPECT_TRUE(r.measurements.empty()) << r.message;

  // A new boot is a new baseline.
  boot("boot-2");
  log(groups()["E3"]);
  EXPECT_EQ(run().message.substr(0, 26), "first reading of this boot");
}

TEST_F(LinkDowntime, setup_problems_are_skipped_or_errors_and_a_bad_state_is_a_new_baseline) {
  ctx_.state_dir.clear();
  EXPECT_FALSE(make_ib_link_downtime_check()->applies(ctx_).yes);
  ctx_.state_dir = dir_.path() + "/state";
  fs::remove(ctx_.kmsg_path);
  const CheckResult gone = run();
  EXPECT_EQ(gone.status, Status::kError) << gone.message;
  EXPECT_EQ(gone.fault_code, "VIGIL-KMSG-READ");
  std::ofstream(ctx_.kmsg_path);
  fs::remove(ctx_.proc_root + "/sys/kernel/random/boot_id");
  const CheckResult no_boot = run();
  EXPECT_EQ(no_boot.status, Status::kError) << no_boot.message;
  EXPECT_EQ(no_boot.fault_code, "VIGIL-LINK-STATE");
  boot("boot-1");
  fs::create_directories(ctx_.state_dir);
  std::ofstream(ctx_.state_dir + "/ib_link_downtime.gpu-0.json") << "{not json";
  const CheckResult bad = run();
  EXPECT_EQ(bad.status, Status::kPass) << bad.message;
  EXPECT_NE(bad.message.find("a new baseline"), std::string::npos) << bad.message;
  EXPECT_EQ(run().status, Status::kPass);  // and the state is good again
}

}  // namespace
}  // namespace vigil
