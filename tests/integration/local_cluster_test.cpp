// scripts/local-cluster.sh and the LocalSlurmCluster fixture: clusters start in parallel on
// distinct ports, stay independent, and stop without leaving a daemon, a slurmstepd or a job
// process behind.
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "local_slurm_cluster.h"
#include "run_command.h"
#include "vigil/base/files.h"

namespace {

using vigil::testing::CommandOptions;
using vigil::testing::CommandResult;
using vigil::testing::LocalSlurmCluster;
using vigil::testing::run_command;

const std::string kScript = LocalSlurmCluster::script_path();

// Alive = exists and is not a zombie (PID 1 here may reap late).
bool pid_alive(int pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return false;
  const auto close_paren = line.rfind(')');
  return close_paren != std::string::npos && close_paren + 2 < line.size() &&
         line[close_paren + 2] != 'Z';
}

// Live processes whose command line contains `needle`.
std::vector<int> processes_mentioning(const std::string& needle) {
  std::vector<int> found;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    const int pid = std::stoi(name);
    if (pid == getpid()) continue;
    auto read = vigil::read_whole_file(entry.path() / "cmdline");
    if (!read) continue;  // it exited between the listing and the read
    std::string cmdline = std::move(*read);
    for (auto& c : cmdline) {
      if (c == '\0') c = ' ';
    }
    if (cmdline.find(needle) != std::string::npos && pid_alive(pid)) found.push_back(pid);
  }
  return found;
}

// Live processes that belong to the cluster in `dir`: their command line names it (munged,
// slurmctld, slurmd) or they hold a file below it open (slurmstepd, slurmscriptd).
std::vector<int> cluster_processes(const std::string& dir) {
  std::vector<int> found = processes_mentioning(dir);
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    const int pid = std::stoi(name);
    if (pid == getpid() || std::find(found.begin(), found.end(), pid) != found.end()) continue;
    std::error_code ec;
    for (const auto& fd : std::filesystem::directory_iterator(entry.path() / "fd", ec)) {
      const auto target = std::filesystem::read_symlink(fd.path(), ec).string();
      if (!ec && target.starts_with(dir + "/") && pid_alive(pid)) {
        found.push_back(pid);
        break;
      }
    }
  }
  return found;
}

// Live `sleep` processes with exactly this argument.
int count_sleeps(const std::string& seconds) {
  int n = 0;
  for (int pid : processes_mentioning("sleep " + seconds)) {
    std::ifstream comm("/proc/" + std::to_string(pid) + "/comm");
    std::string c;
    if (std::getline(comm, c) && c == "sleep") ++n;
  }
  return n;
}

std::map<std::string, std::string> read_info(const std::string& dir) {
  std::map<std::string, std::string> info;
  std::ifstream in(dir + "/cluster.info");
  std::string line;
  while (std::getline(in, line)) {
    const auto eq = line.find('=');
    if (eq != std::string::npos) info[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return info;
}

std::vector<int> recorded_pids(const std::string& dir, const std::string& file) {
  std::vector<int> pids;
  std::ifstream in(dir + "/run/" + file);
  std::string role, name;
  int pid = 0;
  while (in >> role >> pid >> name) pids.push_back(pid);
  return pids;
}

std::string make_temp_dir() {
  std::string tmpl = "/tmp/vigil-cl-XXXXXX";
  if (mkdtemp(tmpl.data()) == nullptr) return "";
  return tmpl;
}

CommandOptions cluster_env(const std::string& dir) {
  CommandOptions o;
  o.env["SLURM_CONF"] = dir + "/etc/slurm.conf";
  o.timeout = std::chrono::seconds(60);
  return o;
}

// Stops and removes a script-started cluster even when an assertion fails half-way.
struct ScriptClusterGuard {
  std::vector<std::string> dirs;
  ~ScriptClusterGuard() {
    for (const auto& d : dirs) run_command({kScript, "stop", d, "--clean"});
    for (const auto& d : dirs) {
      std::error_code ec;
      std::filesystem::remove_all(d, ec);
    }
  }
};

TEST(LocalCluster, two_clusters_start_in_parallel_on_distinct_ports_and_stop_without_leaks) {
  ScriptClusterGuard guard;
  const std::string a = make_temp_dir(), b = make_temp_dir();
  ASSERT_FALSE(a.empty());
  ASSERT_FALSE(b.empty());
  guard.dirs = {a, b};

  CommandResult start_a, start_b;
  CommandOptions start_options;
  start_options.timeout = std::chrono::seconds(240);
  {
    std::thread ta([&] {
      start_a = run_command({kScript, "start", a, "--nodes", "4"}, start_options);
    });
    std::thread tb([&] {
      start_b = run_command({kScript, "start", b, "--nodes", "4"}, start_options);
    });
    ta.join();
    tb.join();
  }
  ASSERT_EQ(start_a.exit_code, 0) << start_a.describe();
  ASSERT_EQ(start_b.exit_code, 0) << start_b.describe();

  const auto info_a = read_info(a), info_b = read_info(b);
  ASSERT_FALSE(info_a.at("slurmctld_port").empty());
  EXPECT_NE(info_a.at("slurmctld_port"), info_b.at("slurmctld_port"));
  EXPECT_NE(info_a.at("slurmd_ports"), info_b.at("slurmd_ports"));

  // Each cluster has its own four idle nodes and its own job queue.
  for (const auto& dir : {a, b}) {
    const auto r = run_command({"sinfo", "-h", "-N", "-p", "gpu", "-o", "%N %T"}, cluster_env(dir));
    EXPECT_EQ(r.out, "gpu-0 idle\ngpu-1 idle\ngpu-2 idle\ngpu-3 idle\n") << r.describe();
  }
  const auto held = run_command(
      {"sbatch", "--hold", "--parsable", "-o", "/dev/null", "--wrap", "true"}, cluster_env(a));
  ASSERT_EQ(held.exit_code, 0) << held.describe();
  EXPECT_NE(run_command({"squeue", "-h", "-o", "%i"}, cluster_env(a)).out, "");
  EXPECT_EQ(run_command({"squeue", "-h", "-o", "%i"}, cluster_env(b)).out, "");
  // Jobs really run on all nodes of the second cluster.
  const auto srun = run_command({"srun", "-N", "4", "printenv", "SLURMD_NODENAME"}, cluster_env(b));
  EXPECT_EQ(srun.exit_code, 0) << srun.describe();
  std::vector<std::string> nodes;
  std::istringstream lines(srun.out);
  for (std::string l; std::getline(lines, l);) nodes.push_back(l);
  std::sort(nodes.begin(), nodes.end());
  EXPECT_EQ(nodes, (std::vector<std::string>{"gpu-0", "gpu-1", "gpu-2", "gpu-3"}));

  // munged + slurmctld + 4 slurmd per cluster, all alive.
  std::vector<int> pids = recorded_pids(a, "pids");
  const auto pids_b = recorded_pids(b, "pids");
  pids.insert(pids.end(), pids_b.begin(), pids_b.end());
  ASSERT_EQ(pids.size(), 12u);
  for (int pid : pids) EXPECT_TRUE(pid_alive(pid)) << pid;

  CommandResult stop_a, stop_b;
  {
    std::thread ta([&] { stop_a = run_command({kScript, "stop", a}); });
    std::thread tb([&] { stop_b = run_command({kScript, "stop", b}); });
    ta.join();
    tb.join();
  }
  EXPECT_EQ(stop_a.exit_code, 0) << stop_a.describe();
  EXPECT_EQ(stop_b.exit_code, 0) << stop_b.describe();
  for (int pid : pids) EXPECT_FALSE(pid_alive(pid)) << "pid " << pid << " survived stop";
  EXPECT_EQ(cluster_processes(a), std::vector<int>{});
  EXPECT_EQ(cluster_processes(b), std::vector<int>{});

  // stop is idempotent; only --clean removes the directory.
  const auto again = run_command({kScript, "stop", a});
  EXPECT_EQ(again.exit_code, 0) << again.describe();
  EXPECT_TRUE(std::filesystem::exists(a + "/log/slurmctld.log"));
  const auto clean = run_command({kScript, "stop", a, "--clean"});
  EXPECT_EQ(clean.exit_code, 0) << clean.describe();
  EXPECT_FALSE(std::filesystem::exists(a));
}

TEST(LocalCluster, stop_ends_running_jobs_and_their_processes) {
  LocalSlurmCluster cluster({.nodes = 2});
  // An unusual sleep length marks this test's job processes.
  const std::string marker = "sleep 3171";
  std::vector<long> ids;
  for (const char* spec : {"--nodelist=gpu-0", "--nodes=2"}) {
    std::string failure;
    const auto id =
        cluster.submit({spec, "-o", "/dev/null", "--wrap", "srun " + marker}, {}, &failure);
    ASSERT_TRUE(id) << failure;
    ids.push_back(*id);
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  // One task on gpu-0 for the first job, one per node for the second.
  while (count_sleeps("3171") < 3 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  ASSERT_EQ(count_sleeps("3171"), 3)
      << cluster.run({"squeue"}).out
      << cluster.shell("tail -n 20 $VIGIL_CLUSTER_DIR/log/*.log").out;
  const auto daemons = cluster.daemon_pids();
  ASSERT_EQ(daemons.size(), 4u);

  const auto stop = cluster.stop();
  EXPECT_EQ(stop.exit_code, 0) << stop.describe();
  EXPECT_TRUE(processes_mentioning(marker).empty()) << "job processes survived stop";
  EXPECT_EQ(cluster_processes(cluster.dir()), std::vector<int>{}) << "daemons survived stop";
  for (int pid : daemons) EXPECT_FALSE(pid_alive(pid)) << pid;
}

// A test killed with SIGKILL (or by ctest's timeout) runs no destructor: with --owner, the
// cluster stops and its directory goes once that process is gone. The owner here is a child that
// only waits, killed as such a test would be.
TEST(LocalCluster, a_cluster_whose_owner_is_killed_stops_and_removes_its_directory) {
  const pid_t owner = fork();
  ASSERT_GE(owner, 0);
  if (owner == 0) {
    pause();
    _exit(0);
  }
  char tmpl[] = "/tmp/vigil-owner.XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  CommandOptions options;
  options.timeout = std::chrono::seconds(180);
  const auto start = run_command({kScript, "start", dir, "--nodes", "1", "--profile", "bare",
                                  "--owner", std::to_string(owner)},
                                 options);
  ASSERT_EQ(start.exit_code, 0) << start.describe();
  std::vector<int> daemons;
  {
    std::ifstream in(dir + "/run/pids");
    std::string role, name;
    int pid = 0;
    while (in >> role >> pid >> name) daemons.push_back(pid);
  }
  ASSERT_GE(daemons.size(), 3u);  // munged, slurmctld, slurmd
  for (int pid : daemons) ASSERT_TRUE(pid_alive(pid)) << pid;
  // Killed and not reaped yet (a zombie, which kill -0 still finds): gone all the same.
  ASSERT_EQ(kill(owner, SIGKILL), 0);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  auto gone = [&] {
    for (int pid : daemons)
      if (pid_alive(pid)) return false;
    return !std::filesystem::exists(dir) && processes_mentioning(dir).empty();
  };
  while (!gone() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_TRUE(gone()) << "daemons or " << dir << " outlived the owner";
  EXPECT_EQ(waitpid(owner, nullptr, 0), owner);
  if (std::filesystem::exists(dir)) run_command({kScript, "stop", dir, "--clean"});

  // An owner that does not exist is refused before anything starts.
  const auto refused = run_command({kScript, "start", dir, "--owner", "999999999"});
  EXPECT_EQ(refused.exit_code, 1) << refused.describe();
  EXPECT_NE(refused.err.find("--owner: no process 999999999"), std::string::npos) << refused.err;
}

TEST(LocalCluster, stop_cleans_up_after_slurmctld_was_killed_hard) {
  LocalSlurmCluster cluster({.nodes = 1});
  // run/pids lines are "<role> <pid> <name>"; the second is slurmctld.
  std::ifstream in(cluster.dir() + "/run/pids");
  std::string role, name;
  int pid = 0, ctld = 0;
  while (in >> role >> pid >> name) {
    if (role == "slurmctld") ctld = pid;
  }
  ASSERT_GT(ctld, 0);
  ASSERT_EQ(kill(ctld, SIGKILL), 0);
  // Its slurmscriptd child is now an orphan that only holds files of the cluster dir.
  const auto stop = cluster.stop();
  EXPECT_EQ(stop.exit_code, 0) << stop.describe();
  EXPECT_EQ(cluster_processes(cluster.dir()), std::vector<int>{});
}

TEST(LocalCluster, fixture_runs_batch_jobs_and_reports_their_state) {
  LocalSlurmCluster cluster({.nodes = 2});
  const std::string out_file = cluster.dir() + "/tmp/job.out";
  std::string failure;
  const auto ok = cluster.submit(
      {"--nodelist=gpu-1", "-o", out_file, "--wrap", "echo ran on $SLURMD_NODENAME"}, {}, &failure);
  ASSERT_TRUE(ok) << failure;
  const auto bad =
      cluster.submit({"--nodelist=gpu-0", "-o", "/dev/null", "--wrap", "exit 3"}, {}, &failure);
  ASSERT_TRUE(bad) << failure;
  ASSERT_TRUE(cluster.wait_for_jobs({*ok, *bad}, std::chrono::seconds(120)))
      << cluster.run({"squeue"}).out;
  EXPECT_EQ(cluster.job_field(*ok, "JobState"), "COMPLETED");
  EXPECT_EQ(cluster.job_field(*bad, "JobState"), "FAILED");
  EXPECT_EQ(cluster.job_field(*bad, "ExitCode"), "3:0");
  std::ifstream in(out_file);
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, "ran on gpu-1");
}

TEST(LocalCluster, start_refuses_a_directory_whose_socket_paths_would_not_fit) {
  const std::string dir = "/tmp/" + std::string(80, 'x');
  const auto r = run_command({kScript, "start", dir});
  EXPECT_EQ(r.exit_code, 1) << r.describe();
  EXPECT_NE(r.err.find("at most 60"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir));
}

TEST(LocalCluster, start_fails_with_the_daemon_log_when_a_daemon_dies) {
  ScriptClusterGuard guard;
  const std::string dir = make_temp_dir();
  ASSERT_FALSE(dir.empty());
  guard.dirs = {dir};
  // A slurmd that dies at once stands in for a broken installation.
  const std::string bin = dir + "/fakebin";
  std::filesystem::create_directories(bin);
  {
    std::ofstream fake(bin + "/slurmd");
    fake << "#!/bin/sh\necho 'slurmd: fatal: simulated broken slurmd' >&2\nexit 1\n";
  }
  std::filesystem::permissions(bin + "/slurmd", std::filesystem::perms::owner_all);
  CommandOptions o;
  o.env["PATH"] = bin + ":" + std::string(getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin");
  o.timeout = std::chrono::seconds(120);
  const auto r = run_command({kScript, "start", dir, "--nodes", "2"}, o);
  EXPECT_EQ(r.exit_code, 1) << r.describe();
  EXPECT_NE(r.err.find("simulated broken slurmd"), std::string::npos) << r.err;
  for (int pid : recorded_pids(dir, "pids.stopped")) EXPECT_FALSE(pid_alive(pid)) << pid;
  EXPECT_EQ(cluster_processes(dir), std::vector<int>{});
}

}  // namespace
