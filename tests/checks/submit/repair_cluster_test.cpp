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
#include <set>
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
#endif

// What a reboot repairs: a node named in FIXTURES/cleared-by-reboot gets the healthy gpu-0
// fixture at its reboot (a pending remap, which a GPU reset applies); any other keeps its fault,
// as one the reboot does not clear would.
// The RebootProgram is Vigil's own wrapper (checks/hook/vigil-reboot) around the local reboot,
// with a stand-in nvidia-bug-report.sh that writes what it was asked to: the evidence a real node
// would keep before its reboot lands in SCRATCH/evidence.
LocalSlurmCluster::Options reboot_cluster(const std::string& fixtures, const std::string& scratch) {
  LocalSlurmCluster::Options o;
  const std::string src = VIGIL_SOURCE_DIR;
  std::ofstream(scratch + "/nvidia-bug-report.sh")
      << "#!/bin/sh\n[ \"$1 $2\" = \"--safe-mode --output-file\" ] && echo \"stand-in\" > "
         "\"$3.gz\"\n";
  fs::permissions(scratch + "/nvidia-bug-report.sh",
                  fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec);
  o.extra_conf = "RebootProgram=\"/usr/bin/env VIGIL_HOOK_LOG=" + scratch +
                 "/vigil-reboot.log VIGIL_EVIDENCE_DIR=" + scratch +
                 "/evidence VIGIL_BUG_REPORT=" + scratch + "/nvidia-bug-report.sh " + src +
                 "/checks/hook/vigil-reboot " + src +
                 "/scripts/lib/local-reboot.sh\"\nResumeTimeout=300\n";
  o.etc_files["on-reboot"] = "grep -qx \"$1\" " + fixtures + "/cleared-by-reboot && cp " +
                             fixtures + "/gpu-0/nvml.json " + fixtures + "/$1/nvml.json\nexit 0\n";
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
    cluster_ = std::make_unique<LocalSlurmCluster>(reboot_cluster(fixtures_, scratch_.str()));
  }

  // `failing` get gpu-2's pending remap, `cleared` are repaired by their reboot; then the
  // drainer, `repair` appended to its configuration.
  void start(const std::vector<std::string>& failing, const std::vector<std::string>& cleared,
             const std::string& repair) {
    for (const auto& node : failing)
      if (node != "gpu-2")
        fs::copy_file(fixtures_ + "/gpu-2/nvml.json", fixtures_ + "/" + node + "/nvml.json",
                      fs::copy_options::overwrite_existing);
    std::ofstream list(fixtures_ + "/cleared-by-reboot");
    for (const auto& node : cleared) list << node << "\n";
    list.close();
    // A simulated node boots in seconds: repair.boot_time_s 60 (the minimum), so the bug report
    // and a boot (190 s) fit the cluster's ResumeTimeout (300 s) and the drainer reboots.
    std::string with_boot = repair;
    if (const auto at = with_boot.find("repair: {"); at != std::string::npos)
      with_boot.insert(at + 9, "boot_time_s: 60, ");
    drainer_ = vigil::testing::start_drainer(*cluster_, scratch_.str(), with_boot, port_);
    ASSERT_NE(port_, 0) << drainer_->log();
  }

  void TearDown() override {
    if (drainer_) drainer_->stop();
    if (cluster_) cluster_->stop();
  }

  CommandResult submit(const std::vector<std::string>& extra,
                       const std::map<std::string, std::string>& env = {}) {
    return vigil::testing::run_vigil_submit(*cluster_, {scratch_.str(), fixtures_, port_}, extra,
                                            env);
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
           read(cluster_->dir() + "/log/local-reboot.log") + "\nvigil-reboot.log:\n" +
           read(scratch_.str() + "/vigil-reboot.log");
  }

  vigil::testing::TempDir scratch_;
  std::unique_ptr<LocalSlurmCluster> cluster_;
  std::unique_ptr<BackgroundProcess> drainer_;
  std::string fixtures_;
  int port_ = 0;
};

#ifndef VIGIL_REPAIR_BENCH
TEST_F(RepairClusterTest, reboot_repairs_one_node_and_hands_the_other_to_a_person) {
  ASSERT_NO_FATAL_FAILURE(
      start({"gpu-1", "gpu-2"}, {"gpu-2"}, "repair: {reboot: true, max_in_repair: 2}\n"));
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
  // The RebootProgram kept a bug report of each node before its reboot (Vigil's reason).
  for (const char* node : {"gpu-1", "gpu-2"}) {
    bool kept = false;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(scratch_.str() + "/evidence", ec))
      kept = kept || e.path().filename().string().starts_with(std::string(node) + "-");
    EXPECT_TRUE(kept) << node << context();
  }
  EXPECT_NE(reboots.find("gpu-1 "), std::string::npos) << reboots;
  EXPECT_NE(reboots.find("gpu-2 "), std::string::npos) << reboots;

  // 3. The re-checks (held, every GPU allocated): gpu-2 passes twice and is resumed; gpu-1's fault
  // is back, so it is left for a person.
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
// The qualify gate after a repair (docs/qualify.md "The gate"): gpu-2 is rebooted and comes
// back drained; two ordinary held re-checks pass and do not resume it; the re-qualifying run
// (--rechecks-from) runs the qualify suite on it, held, and that pass resumes it.
TEST_F(RepairClusterTest, a_rebooted_node_is_held_until_its_qualify_run_passes) {
  ASSERT_NO_FATAL_FAILURE(start({"gpu-2"}, {"gpu-2"},
                                "repair: {reboot: true, max_in_repair: 2}\n"
                                "gate: {repaired: true}\n"));
  auto first = submit({"--json"});
  ASSERT_EQ(first.exit_code, 0) << first.describe();
  ASSERT_TRUE(wait_until([&] { return stage("gpu-2") == "rechecking"; }, 180s))
      << stage("gpu-2") << " " << node_state("gpu-2").first << context();
  for (int i = 0; i < 2; ++i) {
    auto r = submit({"--json", "--nodes=gpu-2"});
    ASSERT_EQ(r.exit_code, 0) << r.describe();
  }
  std::this_thread::sleep_for(2s);
  EXPECT_EQ(node_state("gpu-2").first, "drained") << context();
  EXPECT_EQ(stage("gpu-2"), "rechecking");
  // No GPU here: the CUDA checks are left out as a site without them would.
  const std::map<std::string, std::string> no_cuda = {
      {"VIGIL_FAKE_EXCLUDE",
       "gpu_gemm,gpu_hbm,gpu_pcie_bw,gpu_memtest,nccl_allreduce_nvlink,nccl_allreduce_ib,"
       "host_allreduce,gpu_sdc,gpu_soak"}};
  auto q = submit({"--json", "--rechecks-from=http://127.0.0.1:" + std::to_string(port_)}, no_cuda);
  ASSERT_EQ(q.exit_code, 0) << q.describe();
  EXPECT_NE(q.out.find("VIGIL_SUITE=qualify"), std::string::npos) << q.out;
  ASSERT_TRUE(wait_until([&] { return node_state("gpu-2").first == "idle"; }, 60s))
      << node_state("gpu-2").first << context();
  EXPECT_EQ(stage("gpu-2"), "none");
}

// The GPU reset rung on the real cluster (docs/repair.md "GPU reset"): gpu-1 and gpu-2 are
// drained for a pending row remap; the drainer relabels both "vigil: reset-gpu ..."; the next
// vigil-submit run's srun -Z resets their GPUs (tests/support/fake-nvidia-smi.sh: gpu-2's reset
// applies the remap, gpu-1's does not) and re-checks them. gpu-2 is resumed without a reboot;
// gpu-1's fault is back after the reset, so it climbs to the reboot rung.
TEST_F(RepairClusterTest, a_gpu_reset_repairs_one_node_and_sends_the_other_to_its_reboot) {
  std::ofstream(fixtures_ + "/cleared-by-reset") << "gpu-2\n";
  ASSERT_NO_FATAL_FAILURE(
      start({"gpu-1", "gpu-2"}, {}, "repair: {reset_gpu: true, reboot: true, max_in_repair: 2}\n"));
  auto first = submit({"--json"});
  ASSERT_EQ(first.exit_code, 0) << first.describe();
  for (const char* node : {"gpu-1", "gpu-2"})
    ASSERT_TRUE(wait_until(
        [&] { return node_state(node).second.rfind("vigil: reset-gpu remap", 0) == 0; }, 60s))
        << node << " " << stage(node) << " " << node_state(node).second << context();
  EXPECT_EQ(stage("gpu-2"), "resetting");

  // The reset run: reset, then the re-check in the same srun -Z.
  auto reset = submit({"--json", "--nodes=gpu-1,gpu-2"});
  ASSERT_EQ(reset.exit_code, 0) << reset.describe();
  const std::string resets = read(fixtures_ + "/resets.log");
  EXPECT_NE(resets.find("gpu-1 "), std::string::npos) << resets;
  EXPECT_NE(resets.find("gpu-2 "), std::string::npos) << resets;
  ASSERT_TRUE(
      wait_until([&] { return node_state("gpu-2").second.rfind("vigil: remap", 0) == 0; }, 60s))
      << node_state("gpu-2").second << context();    // the drain's own reason back
  auto again = submit({"--json", "--nodes=gpu-2"});  // resume_after 2
  ASSERT_EQ(again.exit_code, 0) << again.describe();
  ASSERT_TRUE(wait_until([&] { return node_state("gpu-2").first == "idle"; }, 60s))
      << node_state("gpu-2").first << " " << stage("gpu-2") << context();
  EXPECT_EQ(read(cluster_->dir() + "/log/reboots").find("gpu-2"), std::string::npos);

  // gpu-1: the remap is still pending after its reset: the reboot rung takes it.
  ASSERT_TRUE(wait_until([&] { return first_reboot("gpu-1") != 0; }, 60s))
      << stage("gpu-1") << " " << node_state("gpu-1").second << context();
  httplib::Client c("127.0.0.1", port_);
  auto m = c.Get("/metrics");
  ASSERT_TRUE(m);
  for (const char* line : {R"(vigil_repair_steps_total{step="reset_gpu"} 2)",
                           R"(vigil_repair_steps_total{step="reset_passed"} 2)",
                           R"(vigil_repair_steps_total{step="repaired"} 1)",
                           R"(vigil_repair_steps_total{step="reboot"} 1)"})
    EXPECT_NE(m->body.find(line), std::string::npos) << line << "\n" << m->body;
}

// The limits on the real cluster: three nodes fail at once, max_in_repair 1. Whenever a node is
// back for its re-check it is re-checked at once; at no time is more than one node rebooting or
// re-checking, and each of the three is rebooted exactly once and resumed.
TEST_F(RepairClusterTest, three_nodes_failing_at_once_are_repaired_one_at_a_time) {
  const std::vector<std::string> nodes = {"gpu-1", "gpu-2", "gpu-3"};
  ASSERT_NO_FATAL_FAILURE(start(nodes, nodes,
                                "repair: {reboot: true, max_in_repair: 1}\n"
                                // 3 of 4 nodes drained at once: above the default 50% cap,
                                // whose open breaker would (rightly) stop every reboot.
                                "breaker: {max_percent: 100}\n"));
  ASSERT_EQ(submit({"--json"}).exit_code, 0);
  int most_at_once = 0;
  std::set<std::string> resumed;
  ASSERT_TRUE(wait_until(
      [&] {
        // One snapshot of every node's stage first: a held re-check takes seconds, and stages
        // read before and after it are not "at once".
        int at_once = 0;
        std::map<std::string, std::string> stages;
        for (const auto& node : nodes) {
          stages[node] = stage(node);
          if (stages[node] == "rebooting" || stages[node] == "rechecking") ++at_once;
        }
        most_at_once = std::max(most_at_once, at_once);
        for (const auto& node : nodes) {
          if (stages[node] == "rechecking") {
            for (int i = 0; i < 2; ++i) submit({"--nodes=" + node});  // resume_after 2
          }
          if (node_state(node).first == "idle" && stage(node) == "none" &&
              read(cluster_->dir() + "/log/reboots").find(node + " ") != std::string::npos)
            resumed.insert(node);
        }
        return resumed.size() == nodes.size();
      },
      240s))
      << resumed.size() << " resumed" << context();
  EXPECT_EQ(most_at_once, 1);
  const std::string reboots = read(cluster_->dir() + "/log/reboots");
  for (const auto& node : nodes) {
    const auto first = reboots.find(node + " ");
    ASSERT_NE(first, std::string::npos) << reboots;
    EXPECT_EQ(reboots.find(node + " ", first + 1), std::string::npos) << node << " twice";
  }
}
#else
double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// Time to repair (issue 26): from the drain to the resume of gpu-1 and gpu-2, re-checked at once
// after they come back, minus the simulated reboot (Slurm's request to the node's new boot).
// What is left is Vigil's own overhead: seeing the node idle, the reboot call, seeing the new
// boot, two held re-checks and the resume. Goal: under 120 s per node.
TEST_F(RepairClusterTest, time_to_repair) {
  ASSERT_NO_FATAL_FAILURE(
      start({"gpu-1", "gpu-2"}, {"gpu-1", "gpu-2"}, "repair: {reboot: true, max_in_repair: 2}\n"));
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
