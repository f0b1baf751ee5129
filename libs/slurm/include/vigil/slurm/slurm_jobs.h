#pragma once
// Read-only view of the Slurm job queue (slurm_load_jobs), used by vigil-submit to avoid stacking
// a second Vigil job on a node that already has one pending or running.
//
// Why not a method of SlurmApi: SlurmApi is the drainer's sink (read node states, drain,
// undrain) and every fake of it would have to grow a method the drainer never calls. The queue
// is only needed by the submit side, so it gets its own one-method interface here; the planner
// in vigil-submit takes the job list as plain data and never sees this interface.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "vigil/base/result.h"

namespace vigil::slurm {

struct SlurmJobInfo {
  uint32_t job_id = 0;
  std::string name;     // --job-name
  std::string comment;  // --comment
  std::string state;    // PENDING, RUNNING, SUSPENDED, COMPLETED, ... (base state)
  bool active = false;  // pending, running, suspended or completing: still holds or wants nodes
  // Nodes the job runs on (running) or asked for with --nodelist (pending), expanded from the
  // hostlist ("gpu-[0-1]" -> gpu-0, gpu-1). Empty for a pending job without --nodelist.
  std::vector<std::string> nodes;
};

class SlurmJobReader {
 public:
  virtual ~SlurmJobReader() = default;
  virtual Result<std::vector<SlurmJobInfo>> load_jobs() = 0;
};

// Real reader over libslurm. conf_path: slurm.conf (empty: SLURM_CONF / default). libslurm's
// configuration is process-global: use the same conf_path as make_libslurm_api in one process.
std::unique_ptr<SlurmJobReader> make_libslurm_job_reader(const std::string& conf_path = "");

}  // namespace vigil::slurm
