#pragma once
// host_idle_memory's readers, apart from the check so that they are tested on captured files.
//
// /proc/meminfo (proc(5), "/proc/meminfo"): "Name:   value kB" lines, the hugepage counts
// without a unit. MemAvailable (Linux 3.14+) is the kernel's estimate of what a new workload can
// have without swapping: free memory plus the reclaimable page cache and slab. What is neither
// free nor reclaimable on a node that runs no job was left behind: files in a tmpfs such as
// /dev/shm (Shmem), a process outside any job, kernel memory that leaked (SUnreclaim).
// Hugepages the site reserved (Hugetlb, Linux 4.16+; before it HugePages_Total x
// Hugepagesize) are never available and are configuration, not a leak: they are taken out.
//
// Whether the node runs a job: Slurm's cgroup plugins give each job a directory job_<id>
// (slurm.schedmd.com/cgroups.html; cgroup_v2.html "slurmd startup"):
//   - cgroup v2: <root>/system.slice/slurmstepd.scope/job_<id> ("<node>_slurmstepd.scope" when
//     Slurm is built with --enable-multiple-slurmd);
//   - cgroup v1: <root>/<controller>/slurm/uid_<uid>/job_<id> ("slurm_<node>" likewise).
// Slurm removes the directory when the job's last step ends. Without those directories (no
// task/cgroup or proctrack/cgroup) Vigil cannot tell an idle node from a busy one.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace vigil::idle_memory {

struct MemInfo {
  std::uint64_t total_kib = 0;
  std::uint64_t available_kib = 0;
  std::uint64_t shmem_kib = 0;       // tmpfs and shared memory: /dev/shm files a job left
  std::uint64_t sunreclaim_kib = 0;  // kernel slab that cannot be reclaimed
  std::uint64_t hugetlb_kib = 0;     // reserved hugepages, of every size
};

// nullopt when MemTotal or MemAvailable is missing (a kernel older than 3.14, or not meminfo).
std::optional<MemInfo> parse_meminfo(std::string_view text);

// Memory neither free nor reclaimable, less the reserved hugepages, as a percentage of the
// memory outside them.
double used_percent(const MemInfo& m);

// The ids of the Slurm jobs that have a cgroup under cgroup_root (each once, sorted); nullopt
// when there is no Slurm cgroup tree there at all.
std::optional<std::vector<std::string>> slurm_jobs(const std::string& cgroup_root);

}  // namespace vigil::idle_memory
