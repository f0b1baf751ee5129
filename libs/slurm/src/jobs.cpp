// LibslurmJobReader: the Slurm job queue through slurm_load_jobs (no squeue parsing).
#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>
#include <unistd.h>

#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "hostlist.h"
#include "libslurm_init.h"
#include "slurm_compat.h"
#include "vigil/slurm/slurm_jobs.h"

namespace vigil::slurm {
namespace {

std::string job_state_name(uint32_t state) {
  switch (state & JOB_STATE_BASE) {
    case JOB_PENDING:
      return "PENDING";
    case JOB_RUNNING:
      return "RUNNING";
    case JOB_SUSPENDED:
      return "SUSPENDED";
    case JOB_COMPLETE:
      return "COMPLETED";
    case JOB_CANCELLED:
      return "CANCELLED";
    case JOB_FAILED:
      return "FAILED";
    case JOB_TIMEOUT:
      return "TIMEOUT";
    case JOB_NODE_FAIL:
      return "NODE_FAIL";
    case JOB_PREEMPTED:
      return "PREEMPTED";
    case JOB_BOOT_FAIL:
      return "BOOT_FAIL";
    case JOB_DEADLINE:
      return "DEADLINE";
    case JOB_OOM:
      return "OUT_OF_MEMORY";
    default:
      return "UNKNOWN";
  }
}

class LibslurmJobReader final : public SlurmJobReader {
 public:
  explicit LibslurmJobReader(std::string conf_path) : conf_path_(std::move(conf_path)) {}

  Result<std::vector<SlurmJobInfo>> load_jobs() override {
    std::lock_guard<std::mutex> lock(libslurm_mutex());
    if (auto init = ensure_libslurm_initialized(conf_path_); !init.ok()) return init.error();
    job_info_msg_t* msg = nullptr;
    if (slurm_load_jobs(0, &msg, SHOW_ALL) != SLURM_SUCCESS) {
      const int err = compat::last_error();
      return Error{std::string(slurm_strerror(err)) + " [slurm errno " + std::to_string(err) +
                       "] (is slurmctld running and reachable from this host?)",
                   "slurm_load_jobs(SHOW_ALL)"};
    }
    std::unique_ptr<job_info_msg_t, void (*)(job_info_msg_t*)> guard(msg, slurm_free_job_info_msg);
    std::vector<SlurmJobInfo> out;
    out.reserve(msg->record_count);
    for (uint32_t i = 0; i < msg->record_count; ++i) {
      const slurm_job_info_t& j = msg->job_array[i];
      SlurmJobInfo info;
      info.job_id = j.job_id;
      if (j.name != nullptr) info.name = j.name;
      if (j.comment != nullptr) info.comment = j.comment;
      info.state = job_state_name(j.job_state);
      const uint32_t base = j.job_state & JOB_STATE_BASE;
      info.active = base == JOB_PENDING || base == JOB_RUNNING || base == JOB_SUSPENDED ||
                    (j.job_state & JOB_COMPLETING) != 0;
      // A pending job has no allocation yet: what it asked for is what it will hold.
      const char* nodes =
          (base == JOB_PENDING || j.nodes == nullptr || *j.nodes == '\0') ? j.req_nodes : j.nodes;
      info.nodes = expand_hostlist(nodes);
      out.push_back(std::move(info));
    }
    return out;
  }

 private:
  std::string conf_path_;
};

}  // namespace

std::unique_ptr<SlurmJobReader> make_libslurm_job_reader(const std::string& conf_path) {
  return std::make_unique<LibslurmJobReader>(conf_path);
}

}  // namespace vigil::slurm
