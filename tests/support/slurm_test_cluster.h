#pragma once
// The Slurm sink tests' view of the shared local cluster (tests/support LocalSlurmCluster,
// nodes gpu-[0-3]). libslurm binds a process to one slurm.conf, so all tests in one binary share
// one cluster: started on first use, stopped (every daemon, by PID) when the program ends.
// Adds what LocalSlurmCluster does not offer: stopping and restarting slurmctld alone, a reset
// of node states between tests, and `scontrol reboot` (RebootProgram scripts/lib/local-reboot.sh,
// docs/local-cluster.md "Reboots").
#include <memory>
#include <string>

#include "local_slurm_cluster.h"

namespace vigil::testing {

class SlurmTestCluster {
 public:
  // Starts the cluster on first call; later calls return the same one. Records a test failure
  // (and returns nullptr) when the cluster cannot start. rest (first call only): also JWT auth
  // and slurmrestd (LocalSlurmCluster::Options::rest).
  static SlurmTestCluster* get(bool rest = false);
  const LocalSlurmCluster& local() const { return *cluster_; }

  const std::string& dir() const { return cluster_->dir(); }
  std::string conf() const { return cluster_->slurm_conf(); }

  // Runs a bash script with SLURM_CONF pointing at this cluster; returns stdout, sets *rc.
  std::string run(const std::string& script, int* rc = nullptr) const;

  // Brings every node back to IDLE without a reason (deletes reservations, resumes what is
  // drained or down) and waits until sinfo shows them idle.
  bool reset_nodes();

  // Stops slurmctld only (SIGTERM to the PID in SlurmctldPidFile) and waits for it to exit.
  bool stop_controller();
  // Starts slurmctld again on the same slurm.conf (same port, state recovered from
  // StateSaveLocation) and waits until `scontrol ping` answers UP.
  bool start_controller();

  void shutdown();  // stops everything; idempotent

 private:
  SlurmTestCluster() = default;
  std::unique_ptr<vigil::testing::LocalSlurmCluster> cluster_;
  int restarted_ctld_pid_ = -1;  // slurmctld started by start_controller(), reaped by us
};

}  // namespace vigil::testing
