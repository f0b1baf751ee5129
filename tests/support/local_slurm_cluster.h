#pragma once
// A real Slurm cluster for one test: munged + slurmctld + N slurmd (gpu-0 .. gpu-N-1) on
// loopback, started by scripts/local-cluster.sh in a fresh /tmp/vigil-cl-XXXXXX directory and
// stopped (every daemon, by PID) and removed when the object is destroyed. See
// docs/local-cluster.md.
//
//   vigil::testing::LocalSlurmCluster cluster;               // throws with the logs if start fails
//   auto r = cluster.run({"sinfo", "-h", "-N"});          // SLURM_CONF points at this cluster
//   auto id = cluster.submit({"--nodelist=gpu-2", "--wrap=hostname"});
//   ASSERT_TRUE(cluster.wait_for_jobs({*id}, std::chrono::seconds(60)));
//   EXPECT_EQ(cluster.job_field(*id, "JobState"), "COMPLETED");
#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "run_command.h"

namespace vigil::testing {

class LocalSlurmCluster {
 public:
  struct Options {
    int nodes = 4;
    std::chrono::seconds start_timeout{120};  // until all nodes are idle
    // Lines appended to slurm.conf (local-cluster.sh --extra-conf), e.g. Prolog=/path; empty:
    // the standard configuration.
    std::string extra_conf{};
    // Files written into DIR/etc before the daemons start, by name: e.g. topology.conf, which
    // Slurm reads from slurm.conf's directory.
    std::map<std::string, std::string> etc_files{};
    bool rest = false;  // JWT auth + slurmrestd (local-cluster.sh --rest)
    // gpu-i gets NodeAddr 127.0.1.(i+1) and its own munged with that origin
    // (local-cluster.sh --node-addrs): credentials say which node encoded them.
    bool node_addresses = false;
    // The production profile (local-cluster.sh --profile production, docs/local-cluster.md
    // "Profiles"): task/cgroup, proctrack/cgroup, ConstrainDevices=yes, `gpus` GRES GPUs per
    // node over DIR/dev/<node>/nvidia*, Slurm's default timeouts. Every test uses it unless it
    // names why it cannot in bare_because (then the old cgroup-less profile, no GRES).
    std::string bare_because{};
    int gpus = 8;
  };

  // Why this host cannot run the production profile (scripts/lib/node-cgroup.sh probe), or
  // nullopt when it can. A test that needs it skips with this reason; it never falls back to the
  // bare profile silently.
  static std::optional<std::string> production_unavailable();

  LocalSlurmCluster();
  explicit LocalSlurmCluster(Options options);
  ~LocalSlurmCluster();  // stop() and remove dir(); never throws
  LocalSlurmCluster(const LocalSlurmCluster&) = delete;
  LocalSlurmCluster& operator=(const LocalSlurmCluster&) = delete;

  const std::string& dir() const { return dir_; }
  std::string slurm_conf() const { return dir_ + "/etc/slurm.conf"; }
  bool production() const { return options_.bare_because.empty(); }
  // The production profile's /dev of a node: DIR/dev/gpu-1 holds nvidia0 .. nvidia(gpus-1).
  std::string node_dev_dir(const std::string& node) const { return dir_ + "/dev/" + node; }
  std::vector<std::string> node_names() const;  // "gpu-0", ...
  // With Options::rest: slurmrestd's URL and a file with a root JWT (empty otherwise).
  std::string rest_url() const;
  std::string jwt_token_file() const { return options_.rest ? dir_ + "/etc/jwt.token" : ""; }
  // The cluster's munged (slurmctld, slurmd and a drainer decode with it), and with
  // Options::node_addresses the munged of one node ("gpu-1": origin 127.0.1.2).
  std::string munge_socket() const { return dir_ + "/munge/munge.socket.2"; }
  std::string node_munge_socket(const std::string& node) const {
    return dir_ + "/munge/" + node + ".socket";
  }
  // Variables that point Slurm clients at this cluster (SLURM_CONF, VIGIL_CLUSTER_DIR, ...).
  std::map<std::string, std::string> env() const;
  // PIDs of munged, slurmctld and the slurmd started for this cluster.
  std::vector<int> daemon_pids() const;

  // Runs a command with env() added to options.env.
  CommandResult run(const std::vector<std::string>& argv, CommandOptions options = {}) const;
  CommandResult shell(const std::string& script, CommandOptions options = {}) const;

  // `sbatch --parsable ARGS...`; the job id, or nullopt (the reason goes to *failure if given).
  std::optional<long> submit(const std::vector<std::string>& sbatch_args,
                             CommandOptions options = {}, std::string* failure = nullptr) const;
  // True once none of the jobs is pending or running any more; false on timeout.
  bool wait_for_jobs(const std::vector<long>& job_ids, std::chrono::seconds timeout) const;
  // One field of `scontrol show job -o ID`, e.g. "JobState" -> "COMPLETED", "ExitCode" -> "1:0".
  std::string job_field(long job_id, const std::string& field) const;

  // Stops every daemon (idempotent); the directory stays until destruction.
  CommandResult stop();

  // scripts/local-cluster.sh of this source tree.
  static std::string script_path();

 private:
  Options options_;
  std::string dir_;
  bool running_ = false;
};

}  // namespace vigil::testing
