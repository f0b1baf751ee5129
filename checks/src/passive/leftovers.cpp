#include "passive/leftovers.h"

#include <algorithm>
#include <sstream>

namespace vigil::leftovers {

std::string job_of_cgroup(const std::string& text) {
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    // "0::/system.slice/slurmstepd.scope/job_77/step_0/user/task_0" (v2),
    // "4:memory:/slurm/uid_1000/job_77/step_batch" (v1).
    for (std::size_t at = line.find("/job_"); at != std::string::npos;
         at = line.find("/job_", at + 1)) {
      std::size_t end = at + 5;
      while (end < line.size() && line[end] >= '0' && line[end] <= '9') ++end;
      if (end > at + 5 && (end == line.size() || line[end] == '/'))
        return line.substr(at + 5, end - at - 5);
    }
  }
  return "";
}

namespace {

bool listed_in(const std::vector<nvml::GpuActivity>& reads, int gpu, unsigned pid) {
  for (const auto& a : reads) {
    if (a.gpu != gpu || !a.processes) continue;
    for (const auto& p : *a.processes)
      if (p.pid == pid) return true;
  }
  return false;
}

template <class T>
bool contains(const std::vector<T>& v, const T& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

}  // namespace

Verdict judge(const std::vector<nvml::GpuActivity>& first,
              const std::vector<nvml::GpuActivity>& second, const Rules& rules,
              const std::function<std::optional<std::string>(unsigned)>& cgroup_of) {
  Verdict v;
  for (const auto& a : second) {
    if (!a.processes) continue;
    for (const auto& p : *a.processes) {
      if (contains(rules.own_pids, p.pid) || !listed_in(first, a.gpu, p.pid)) continue;
      const std::string text = "gpu" + std::to_string(a.gpu) + " " + nvml::process_text(p);
      const bool job_gpu = !rules.job_gpus || contains(*rules.job_gpus, a.gpu);
      // /proc/PID/comm holds at most 15 characters (TASK_COMM_LEN 16): nvidia-cuda-mps-server
      // reads "nvidia-cuda-mps", so names are compared as comm shows them.
      const bool resident =
          std::any_of(rules.residents.begin(), rules.residents.end(), [&](const std::string& r) {
            return !r.empty() && r.substr(0, 15) == p.name.substr(0, 15);
          });
      if (resident) {
        v.ignored.push_back(text + " (resident)");
        continue;
      }
      const std::optional<std::string> cgroup = cgroup_of(p.pid);
      const std::string job = cgroup ? job_of_cgroup(*cgroup) : "";
      if (!cgroup || (!job.empty() && rules.job_id.empty())) {
        // Owner unknown: the GRES index is all we have, and it may not be NVML's.
        if (job_gpu)
          v.unproven.push_back(text);
        else
          v.ignored.push_back(text + " (another job's GPU)");
      } else if (job.empty()) {
        // Outside any job's cgroup: a system service, or a site whose proctrack plugin keeps no
        // job cgroups (proctrack/linuxproc, pgid). On one of the job's GPUs it is unproven, not
        // nothing: warn; elsewhere it is not this job's.
        if (job_gpu)
          v.unproven.push_back(text + " (in no job's cgroup)");
        else
          v.ignored.push_back(text + " (in no job's cgroup)");
      } else if (job == rules.job_id) {
        v.ours.push_back(text);
      } else {
        v.ignored.push_back(text + " (job " + job + ")");
      }
    }
  }
  return v;
}

}  // namespace vigil::leftovers
