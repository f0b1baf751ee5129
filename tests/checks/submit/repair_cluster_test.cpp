// The repair ladder against the real local Slurm cluster (docs/repair.md): vigil-submit's jobs
// find a pending row remap on gpu-1 and gpu-2 (fake NVML), the drainer (repair.reboot on)
// drains both and, once idle, asks slurmctld to reboot them; slurmd runs the cluster's
// RebootProgram (scripts/lib/local-reboot.sh), which restarts that node's slurmd in a new time
// namespace, so slurmctld sees a new boot time. The "reboot" clears gpu-2's fixture, not gpu-1's.
// vigil-submit's srun -Z re-checks then resume gpu-2 and leave gpu-1 to a person ("vigil:
// replace ..."), which the next run no longer re-checks. gpu-3, drained by an admin, is never
// rebooted.
// Built a second time with VIGIL_REPAIR_BENCH (tests/bench/repair, label bench): the reboot then
// clears both nodes, and the time from drain to resume is printed against the simulated reboot.
#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "background_process.h"
#include "local_slurm_cluster.h"
#include "run_command.h"
#include "submit_on_cluster.h"
#include "temp_dir.h"

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using vigil::testing::BackgroundProcess;
using vigil::testing::CommandOptions;
using vigil::testing::CommandResult;
using vigil::testing::LocalSlurmCluster;

namespace {

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

#ifdef VIGIL_REPAIR_BENCH
const char* const kCleared[] = {"gpu-1", "gpu-2"};
#else
// What the reboot repairs: gpu-2's pending remap (a GPU reset applies it); gpu-1's fault stays,
// as a fault the reboot does not clear would.
const char* const kCleared[] = {"gpu-2"};
#endif

LocalSlurmCluster::Options reboot_cluster(const std::string& fixtures) {
  LocalSlurmCluster::Options o;
  o.extra_conf = "RebootProgram=" + std::string(VIGIL_SOURCE_DIR) +
                 "/scripts/lib/local-reboot.sh\nResumeTimeout=120\n";
  std::string script;
  for (const char* node : kCleared)
    script += std::string("[ \"$1\" = ") + node + " ] && cp " + fixtures + "/gpu-0/nvml.json " +
              fixtures + "/" + node + "/nvml.json\n";
  o.etc_files["on-reboot"] = script + "exit 0\n";
  return o;
}

class RepairClusterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::permissions(scratch_.str(),
                    fs::perms::owner_all | fs::perms::others_exec | fs::perms::group_exec);
    fixtures_ = scratch_.str() + "/fixtures";
    fs::copy(std::string(VIGIL_SOURCE_DIR) + "/tests/fixtures/nodes", fixtures_,
             fs::copy_options::recursive);
    fs::copy_file(fixtures_ + "/gpu-2/nvml.json", fixtures_ + "/gpu-1/nvml.json",
                  fs::copy_options::overwrite_existing);  // gpu-1: the same pending remap
    cluster_ = std::make_unique<LocalSlurmCluster>(reboot_cluster(fixtures_));
    drainer_ = vigil::testing::start_drainer(*cluster_, scratch_.str(),
                                             "repair: {reboot: true, max_in_repair: 2}\n", port_);
    ASSERT_NE(port_, 0) << drainer_->log();
  }

  void TearDown() override {
    if (drainer_) drainer_->stop();
    if (cluster_) cluster_->stop();
  }

  CommandResult submit(const std::vector<std::string>& extra) {
    return vigil::testing::run_vigil_submit(*cluster_, {scratch_.str(), fixtures_, port_}, extra);
  }

  std::pair<std::string, std::string> node_state(const std::string& node) {
    return vigil::testing::sinfo_state(*cluster_, node);
  }

  // The drainer's view of a node's repair stage ("none" when it has no repair record).
  std::string stage(const std::string& node) {
    httplib::Client c("127.0.0.1", port_);
    auto r = c.Get("/v1/nodes");
    if (!r) return "? (" + httplib::to_string(r.error()) + ")";
    if (r->status != 200) return "? (HTTP " + std::to_string(r->status) + ")";
    const auto view = nlohmann::json::parse(r->body);  // outlives the loop
    for (const auto& n : view.at("nodes"))
      if (n.at("node") == node)
        return n.contains("repair") ? n["repair"].value("stage", "?") : "none";
    return "? (no node " + node + " in " + r->body.substr(0, 300) + ")";
  }

  // When the drainer first asked Slurm to reboot `node` (its repair history); 0 if never.
  int64_t first_reboot(const std::string& node) {
    httplib::Client c("127.0.0.1", port_);
    auto r = c.Get("/v1/nodes");
    if (!r || r->status != 200) return 0;
    const auto view = nlohmann::json::parse(r->body);
    for (const auto& n : view.at("nodes"))
      if (n.at("node") == node && n.contains("repair") && !n["repair"]["reboots"].empty())
        return n["repair"]["reboots"][0].get<int64_t>();
    return 0;
  }

  bool wait_until(const std::function<bool()>& cond, std::chrono::seconds timeout) {
    return vigil::testing::wait_until(cond, 250ms, timeout);
  }

  std::string context() {
    return "\ndrainer log:\n" + drainer_->log() + "\nreboots:\n" +
           read(cluster_->dir() + "/log/reboots") + "\nlocal-reboot.log:\n" +
           read(cluster_->dir() + "/log/local-reboot.log");
  }

  vigil::testing::TempDir scratch_;
  std::unique_ptr<LocalSlurmCluster> cluster_;
  std::unique_ptr<BackgroundProcess> drainer_;
  std::string fixtures_;
  int port_ = 0;
};

#ifndef VIGIL_REPAIR_BENCH
TEST_F(RepairClusterTest, reboot_repairs_one_node_and_hands_the_other_to_a_person) {
  ASSERT_EQ(
      cluster_
          ->run({"scontrol", "update", "NodeName=gpu-3", "State=DRAIN", "Reason=admin: bad dimm"})
          .exit_code,
      0);
  const std::string boot_before = cluster_->run({"scontrol", "show", "node", "gpu-2"}).out;

  // 1. The scheduled run: gpu-1 and gpu-2 fail (row remap pending, remedy reset_gpu).
  auto first = submit({"--json"});
  ASSERT_EQ(first.exit_code, 0) << first.describe();
  // 2. Drained, then rebooted once idle: both come back DRAINED with Vigil's reason, and the
  // drainer sees the new boot time.
  for (const char* node : {"gpu-1", "gpu-2"})
    ASSERT_TRUE(wait_until([&] { return stage(node) == "rechecking"; }, 180s))
        << node << " " << stage(node) << " " << node_state(node).first << " "
        << node_state(node).second << context();
  for (const char* node : {"gpu-1", "gpu-2"}) {
    const auto [state, reason] = node_state(node);
    EXPECT_EQ(state, "drained") << node;
    EXPECT_EQ(reason.rfind("vigil: remap", 0), 0u) << reason;  // kept: still Vigil's
  }
  EXPECT_NE(cluster_->run({"scontrol", "show", "node", "gpu-2"}).out, boot_before);
  const std::string reboots = read(cluster_->dir() + "/log/reboots");
  EXPECT_NE(reboots.find("gpu-1 "), std::string::npos) << reboots;
  EXPECT_NE(reboots.find("gpu-2 "), std::string::npos) << reboots;

  // 3. The re-checks (srun -Z, unchanged): gpu-2 passes twice and is resumed; gpu-1's fault is
  // back, so it is left for a person.
  for (int i = 0; i < 2; ++i) {
    auto r = submit({"--json", "--nodes=gpu-1,gpu-2"});
    ASSERT_EQ(r.exit_code, 0) << r.describe();
  }
  ASSERT_TRUE(wait_until([&] { return node_state("gpu-2").first == "idle"; }, 60s))
      << node_state("gpu-2").first << context();
  EXPECT_EQ(stage("gpu-2"), "none");
  ASSERT_TRUE(wait_until(
      [&] { return node_state("gpu-1").second.rfind("vigil: replace remap", 0) == 0; }, 60s))
      << node_state("gpu-1").second << context();
  EXPECT_EQ(node_state("gpu-1").first, "drained");
  EXPECT_EQ(stage("gpu-1"), "replace");

  // 4. The next run leaves gpu-1 alone; gpu-3 (the admin's) was never rebooted.
  auto next = submit({"--dry-run"});
  EXPECT_NE(next.out.find("drained by vigil for replacement"), std::string::npos) << next.out;
  EXPECT_EQ(read(cluster_->dir() + "/log/reboots").find("gpu-3"), std::string::npos);
  EXPECT_EQ(node_state("gpu-3").second, "admin: bad dimm");
  httplib::Client c("127.0.0.1", port_);
  auto m = c.Get("/metrics");
  ASSERT_TRUE(m);
  EXPECT_NE(m->body.find(R"(vigil_repair_steps_total{step="repaired"} 1)"), std::string::npos);
  EXPECT_NE(m->body.find(R"(vigil_repair_steps_total{step="replace"} 1)"), std::string::npos);
}
#else
double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// Time to repair (issue 26): from the drain to the resume of gpu-1 and gpu-2, re-checked at once
// after they come back, minus the simulated reboot (Slurm's request to the node's new boot).
// What is left is Vigil's own overhead: seeing the node idle, the reboot call, seeing the new
// boot, two srun -Z re-checks and the resume. Goal: under 120 s per node.
TEST_F(RepairClusterTest, time_to_repair) {
  const auto start = std::chrono::steady_clock::now();
  auto first = submit({"--json"});
  ASSERT_EQ(first.exit_code, 0) << first.describe();
  std::map<std::string, double> drained, back, resumed;
  ASSERT_TRUE(wait_until(
      [&] {
        for (const char* node : kCleared)
          if (!drained.count(node) && node_state(node).second.rfind("vigil:", 0) == 0)
            drained[node] = seconds_since(start);
        return drained.size() == 2;
      },
      120s))
      << context();
  ASSERT_TRUE(wait_until(
      [&] {
        for (const char* node : kCleared)
          if (!back.count(node) && stage(node) == "rechecking") back[node] = seconds_since(start);
        return back.size() == 2;
      },
      180s))
      << context();
  for (int i = 0; i < 2; ++i) ASSERT_EQ(submit({"--nodes=gpu-1,gpu-2"}).exit_code, 0);
  ASSERT_TRUE(wait_until(
      [&] {
        for (const char* node : kCleared)
          if (!resumed.count(node) && node_state(node).first == "idle")
            resumed[node] = seconds_since(start);
        return resumed.size() == 2;
      },
      60s))
      << context();
  for (const char* node : kCleared) {
    // The simulated reboot: the drainer's reboot decision (kept in the node's repair history)
    // to the boot time slurmd registered with (local time, as scontrol prints it).
    std::smatch m;
    const std::string show = cluster_->run({"scontrol", "-o", "show", "node", node}).out;
    ASSERT_TRUE(std::regex_search(show, m, std::regex(R"(BootTime=(\S+))"))) << show;
    std::tm tm{};
    ASSERT_NE(strptime(m[1].str().c_str(), "%Y-%m-%dT%H:%M:%S", &tm), nullptr) << show;
    tm.tm_isdst = -1;
    const int64_t asked = first_reboot(node);
    ASSERT_GT(asked, 0) << context();
    const double reboot_s = static_cast<double>(std::mktime(&tm) - asked);
    const double total = resumed[node] - drained[node];
    const double overhead = total - reboot_s;
    std::printf(
        "repair_bench: %s drain->resume %.1f s, simulated reboot %.0f s, Vigil overhead %.1f s "
        "= %.2fx the 120 s goal (%.1fx the simulated reboot)\n",
        node, total, reboot_s, overhead, overhead / 120.0, reboot_s > 0 ? overhead / reboot_s : 0);
    EXPECT_LT(overhead, 120.0) << node;
  }
  std::printf(
      "repair_bench: human baseline: no published figure found; issue 26 states hours to days "
      "for a drained node to wait for a person, and a bare-metal reboot alone can take ~30 min "
      "(NVIDIA/NVSentinel #126), which this simulation replaces with a slurmd restart\n");
}
#endif

}  // namespace
