#include "slurm_test_cluster.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <sstream>
#include <thread>

namespace vigil::testing {
namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Value of `Key=` on its own line of slurm.conf.
std::string conf_value(const std::string& text, const std::string& key) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key + "=", 0) == 0) return line.substr(key.size() + 1);
  }
  return "";
}

bool pid_alive(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  auto close = text.rfind(')');
  if (text.empty() || close == std::string::npos || close + 2 >= text.size()) return false;
  return text[close + 2] != 'Z';
}

template <typename Pred>
bool wait_for(Pred pred, std::chrono::seconds limit) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return pred();
}

SlurmTestCluster* g_cluster = nullptr;

class StopClusterAtExit : public ::testing::Environment {
 public:
  void TearDown() override {
    if (g_cluster != nullptr) g_cluster->shutdown();
  }
};

// Registered before main(); RUN_ALL_TESTS calls TearDown, --gtest_list_tests starts nothing.
[[maybe_unused]] ::testing::Environment* const g_env =
    ::testing::AddGlobalTestEnvironment(new StopClusterAtExit);

}  // namespace

SlurmTestCluster* SlurmTestCluster::get(bool rest) {
  static bool tried = false;
  if (tried) return (g_cluster != nullptr && g_cluster->cluster_) ? g_cluster : nullptr;
  tried = true;
  g_cluster = new SlurmTestCluster();
  try {
    LocalSlurmCluster::Options options;
    options.rest = rest;
    // `scontrol reboot` on this release (the repair ladder's reboot, docs/repair.md): the local
    // RebootProgram restarts the node's slurmd in a new time namespace, a fresh boot to slurmctld.
    options.extra_conf = std::string("RebootProgram=") + VIGIL_SOURCE_DIR +
                         "/scripts/lib/local-reboot.sh\nResumeTimeout=120\n";
    g_cluster->cluster_ = std::make_unique<vigil::testing::LocalSlurmCluster>(options);
  } catch (const std::exception& e) {
    ADD_FAILURE() << "local Slurm cluster did not start: " << e.what();
    return nullptr;
  }
  return g_cluster;
}

std::string SlurmTestCluster::run(const std::string& script, int* rc) const {
  // Not cluster_->shell(): it drops SLURM_* variables inherited from this process, and
  // slurm_init() exports SLURM_CONF here, so the cluster's own SLURM_CONF was dropped too.
  vigil::testing::CommandOptions options;
  options.env = cluster_->env();
  vigil::testing::CommandResult r = vigil::testing::run_shell(script, options);
  if (rc != nullptr) *rc = r.exit_code;
  return r.out;
}

bool SlurmTestCluster::reset_nodes() {
  std::string resv =
      run("scontrol -o show reservation 2>/dev/null | grep -o 'ReservationName=[^ ]*' || true");
  std::istringstream rin(resv);
  std::string line;
  while (std::getline(rin, line)) run("scontrol delete " + line + " >/dev/null 2>&1");
  // A reboot an earlier test asked for and did not see through (slurm_client_test's reboot test).
  run("scontrol cancel_reboot gpu-[0-3] >/dev/null 2>&1 || true");
  std::string bad = run("sinfo -h -N -p gpu -o '%N %T' | grep -v ' idle$' | cut -d' ' -f1");
  std::istringstream in(bad);
  while (std::getline(in, line)) {
    if (!line.empty()) run("scontrol update nodename=" + line + " state=resume >/dev/null 2>&1");
  }
  return wait_for(
      [&] {
        std::string s = run("sinfo -h -N -p gpu -o '%N %T'");
        size_t idle = 0, pos = 0;
        while ((pos = s.find(" idle\n", pos)) != std::string::npos) {
          ++idle;
          ++pos;
        }
        return idle == 4 && run("sinfo -h -R").empty();
      },
      std::chrono::seconds(60));
}

bool SlurmTestCluster::stop_controller() {
  std::string pid_file = conf_value(read_file(conf()), "SlurmctldPidFile");
  pid_t pid = static_cast<pid_t>(std::atoi(read_file(pid_file).c_str()));
  if (pid <= 1 || !pid_alive(pid)) return false;
  kill(pid, SIGTERM);
  bool gone = wait_for(
      [&] {
        // Our own child (a restarted slurmctld) must be reaped, not left as a zombie.
        if (pid == restarted_ctld_pid_ && waitpid(pid, nullptr, WNOHANG) == pid) return true;
        return !pid_alive(pid);
      },
      std::chrono::seconds(30));
  if (gone && pid == restarted_ctld_pid_) restarted_ctld_pid_ = -1;
  return gone;
}

bool SlurmTestCluster::start_controller() {
  const std::string conf_path = conf();
  const std::string log = dir() + "/log/slurmctld-restart.out";
  const pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) return false;
  if (pid == 0) {
    setsid();
    // Not in the cluster's run/pids: if the test dies without its destructor, slurmctld goes
    // with it (and `local-cluster.sh stop` finds it by its slurm.conf).
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) _exit(127);
    int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
    }
    int null_fd = open("/dev/null", O_RDONLY);
    if (null_fd >= 0) dup2(null_fd, 0);
    execlp("slurmctld", "slurmctld", "-D", "-f", conf_path.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  restarted_ctld_pid_ = pid;
  return wait_for([&] { return run("scontrol ping 2>&1").find("is UP") != std::string::npos; },
                  std::chrono::seconds(60));
}

void SlurmTestCluster::shutdown() {
  if (restarted_ctld_pid_ > 0) {
    kill(restarted_ctld_pid_, SIGTERM);
    bool gone = wait_for([&] { return waitpid(restarted_ctld_pid_, nullptr, WNOHANG) != 0; },
                         std::chrono::seconds(20));
    if (!gone) {
      kill(restarted_ctld_pid_, SIGKILL);
      waitpid(restarted_ctld_pid_, nullptr, 0);
    }
    restarted_ctld_pid_ = -1;
  }
  cluster_.reset();  // LocalSlurmCluster stops its daemons and removes its directory
}

}  // namespace vigil::testing
