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
  ASSERT_EQ(g.size(), 7u);
  std::vector<std::string> seen;
  for (const auto& name : {"E8", "E9", "E7", "E13", "E3", "E1", "E5"}) {
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
                      "E8 0000:53:00.0/1 enp83s0f0np0 down", "E8 0000:53:00.0/1 enp83s0f0np0 up",
                      "E8 0000:53:00.0/1 mlx5_3 up",         "E8 0000:53:00.0/1 enp83s0f0np0 down",
                      "E8 0000:53:00.0/1 mlx5_3 down",       "E8 0000:53:00.0/1 enp83s0f0np0 up",
                      "E8 0000:53:00.0/1 mlx5_3 up",         "E8 0000:53:00.0/1 enp83s0f0np0 down",
                      "E8 0000:53:00.0/1 mlx5_3 down",       "E9 0000:01:00.0/1 enp1s0f0np0 down",
                      "E9 0000:01:00.1/1 enp1s0f1np1 down",  "E9 0000:01:00.0/1 enp1s0f0np0 up",
                      "E9 0000:01:00.1/1 enp1s0f1np1 down",  "E9 0000:01:00.1/1 enp1s0f1np1 up",
                      "E7 0000:01:00.1/1 eth1 up",           "E7 0000:01:00.1/1 eth1 up",
                      "E7 0000:01:00.1/1 eth1 up",           "E13 0000:c3:00.0/1 ibp195s0 training",
                      "E13 0000:c3:00.0/1 ibp195s0 up",      "E3 0000:0a:00.0/1 mlx5_0 down",
                      "E1 0000:02:00.0/1 ens2f0np0 down",    "E5 0000:01:00.0/1 enp1s0f0 up",
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
    fs::create_directories(ctx_.proc_root + "/sys/kernel/random");
    boot("boot-1");
    std::ofstream(ctx_.kmsg_path);  // an empty log
  }
  void boot(const std::string& id) {
    std::ofstream(ctx_.proc_root + "/sys/kernel/random/boot_id") << id << "\n";
  }
  void uptime(double s) { std::ofstream(ctx_.proc_root + "/uptime") << s << " 1.00\n"; }
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
  CheckContext ctx_;
  int seq_ = 0;
};

TEST_F(LinkDowntime, time_down_since_the_last_run_is_judged_across_runs) {
  uptime(4400);
  const CheckResult first = run();
  EXPECT_EQ(first.status, Status::kPass) << first.message;
  EXPECT_EQ(first.message, "first reading of this boot: outages before it are not judged");

  // E8: two flaps of 6.65 s and 6.35 s, then down again 1.08 s before this run.
  log(groups()["E8"]);
  uptime(4452);
  const CheckResult flaps = run();
  EXPECT_EQ(flaps.status, Status::kWarn) << flaps.message;
  EXPECT_EQ(flaps.fault_code, "VIGIL-LINK-DOWN-SECONDS");
  EXPECT_EQ(flaps.message,
            "since the last run: 0000:53:00.0/1 (enp83s0f0np0, mlx5_3) down 14.1 s in 3 outages "
            "(longest 6.65 s), still down");
  ASSERT_EQ(flaps.measurements.size(), 1u);
  EXPECT_NEAR(flaps.measurements[0].value, 6.65229 + 6.350282 + 1.081479, 1e-5);
  ASSERT_TRUE(flaps.measurements[0].threshold);
  EXPECT_EQ(flaps.measurements[0].threshold->fail, 30);

  // Still down 38 s later, with no new line: the outage goes on, counted from the last run.
  uptime(4490);
  const CheckResult still = run();
  EXPECT_EQ(still.status, Status::kFail) << still.message;
  EXPECT_NEAR(still.measurements.at(0).value, 38, 1e-6);
  EXPECT_NE(still.message.find("down 38.0 s of an outage that began before the last run, still "
                               "down"),
            std::string::npos)
      << still.message;

  // It came back: the rest of the outage, then nothing.
  log({"[ 4495.000000] mlx5_core 0000:53:00.0 enp83s0f0np0: Link up"});
  uptime(4500);
  EXPECT_NEAR(run().measurements.at(0).value, 5, 1e-6);
  uptime(4600);
  const CheckResult quiet = run();
  EXPECT_EQ(quiet.status, Status::kPass) << quiet.message;
  EXPECT_TRUE(quiet.measurements.empty());
  EXPECT_EQ(quiet.message, "0 new kernel log records, no RDMA link outage since the last run");
}

TEST_F(LinkDowntime, each_port_is_judged_by_its_own_time_down) {
  uptime(100);
  run();                // the baseline
  log(groups()["E9"]);  // one port down 2.5 s, the other 140 s
  uptime(400);
  const CheckResult r = run();
  EXPECT_EQ(r.status, Status::kFail) << r.message;
  ASSERT_EQ(r.measurements.size(), 2u);
  EXPECT_EQ(*r.measurements[0].port, "0000:01:00.0/1");
  EXPECT_NEAR(r.measurements[0].value, 2.476, 1e-6);
  EXPECT_EQ(r.measurements[0].status(), Status::kPass);
  EXPECT_EQ(*r.measurements[1].port, "0000:01:00.1/1");
  EXPECT_NEAR(r.measurements[1].value, 362.514 - 140.030, 1e-6);
}

TEST_F(LinkDowntime, the_first_run_of_a_boot_training_and_forged_lines_judge_nothing) {
  // Outages before the first run of a boot were before any job.
  log(groups()["E8"]);
  uptime(4452);
  const CheckResult baseline = run();
  EXPECT_EQ(baseline.status, Status::kPass) << baseline.message;
  EXPECT_NE(baseline.message.find("down now: 0000:53:00.0/1"), std::string::npos)
      << baseline.message;
  // A port that trains (INIT, ACTIVE) had no outage; a line user space wrote is not the driver's.
  log(groups()["E13"]);
  log({"[ 4453.000000] mlx5_core 0000:09:00.0 ib0: Link down"}, 1);
  log({"[ 4453.500000] mlx5_core 0000:53:00.0 enp83s0f0np0: Link up"});
  uptime(4454);
  const CheckResult r = run();
  EXPECT_EQ(r.status, Status::kPass) << r.message;
  ASSERT_EQ(r.measurements.size(), 1u);  // the port down since the baseline: 1.5 s
  EXPECT_NEAR(r.measurements[0].value, 1.5, 1e-6);

  // A new boot is a new baseline.
  boot("boot-2");
  log(groups()["E3"]);
  uptime(400);
  EXPECT_EQ(run().message.substr(0, 26), "first reading of this boot");
}

TEST_F(LinkDowntime, no_state_dir_is_skipped_an_unreadable_log_or_state_is_an_error) {
  ctx_.state_dir.clear();
  EXPECT_FALSE(make_ib_link_downtime_check()->applies(ctx_).yes);
  ctx_.state_dir = dir_.path() + "/state";
  fs::remove(ctx_.kmsg_path);
  const CheckResult gone = run();
  EXPECT_EQ(gone.status, Status::kError) << gone.message;
  EXPECT_EQ(gone.fault_code, "VIGIL-KMSG-READ");
  std::ofstream(ctx_.kmsg_path);
  fs::create_directories(ctx_.state_dir);
  std::ofstream(ctx_.state_dir + "/ib_link_downtime.gpu-0.json") << "{not json";
  const CheckResult bad = run();
  EXPECT_EQ(bad.status, Status::kError) << bad.message;
  EXPECT_EQ(bad.fault_code, "VIGIL-LINK-STATE");
}

}  // namespace
}  // namespace vigil
