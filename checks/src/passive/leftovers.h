#pragma once
// Whose is a process NVML still lists on a GPU after a job? The judgement of gpu_leftovers,
// pure so that teardown, residents and ownership are tested without a driver.
//   - A process listed in only one of two reads `grace` apart was tearing down: not a leftover.
//   - A resident process (an MPS server, a site's monitoring agent) lives there by design.
//   - Ownership is proven by the process's cgroup: Slurm's cgroup plugins put every task of job
//     N under a ".../job_N/..." directory (cgroup v1 and v2: slurm.schedmd.com/cgroups.html),
//     and a process that survives the job's kill stays there. Another job's process is not this
//     job's leftover; one outside any job's cgroup (a system service, or a site whose proctrack
//     plugin keeps none) on one of the job's GPUs is unproven (warn).
//   - SLURM_JOB_GPUS are Slurm's GRES indices, which equal NVML's indices only when gres.conf
//     lists the GPUs in NVML (PCI bus) order; a process whose owner cannot be read is judged by
//     that index only as a warning, never a drain.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "nvml/gpu_busy.h"

namespace vigil::leftovers {

// The Slurm job a cgroup file (/proc/<pid>/cgroup) puts the process in: "77" for a line
// ".../job_77/step_0/...". "" when the process is in no job's cgroup.
std::string job_of_cgroup(const std::string& cgroup_file_text);

struct Rules {
  std::optional<std::vector<int>> job_gpus;  // SLURM_JOB_GPUS as NVML indices; nullopt: unknown
  std::string job_id;                        // SLURM_JOB_ID; "" when unknown
  std::vector<std::string> residents;        // /proc/<pid>/comm names never counted
  std::vector<unsigned> own_pids;            // this check and its parent
};

struct Verdict {
  std::vector<std::string> ours;      // proven this job's: fail
  std::vector<std::string> unproven;  // on a job GPU, owner unreadable: warn
  std::vector<std::string> ignored;   // residents, other jobs', system services: reported only
};

// cgroup_of(pid): the text of /proc/<pid>/cgroup, nullopt when it cannot be read.
Verdict judge(const std::vector<nvml::GpuActivity>& first,
              const std::vector<nvml::GpuActivity>& second, const Rules& rules,
              const std::function<std::optional<std::string>(unsigned)>& cgroup_of);

}  // namespace vigil::leftovers
