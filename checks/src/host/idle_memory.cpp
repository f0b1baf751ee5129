// host_idle_memory: does a node that runs no job hold memory nobody can have (idle_memory.h for
// the sources)? A job that ends leaves /dev/shm files, a daemonized process or a kernel leak
// behind; the next job's allocation then fails or swaps, far from the cause. Peers: Soperator's
// idle_mem_used (PR #2773), LBNL NHC's check_hw_mem_free.
//   - Only on an idle node: no Slurm job cgroup but the one this check runs for (SLURM_JOB_ID:
//     the prolog's job, or `vigil-check run`'s own). Not in the epilog, which runs before Slurm
//     deletes the job's namespace (job_container/tmpfs's /dev/shm) (registry.cpp). Another job's
//     memory is not a fault, so a busy node is skipped; so is a node without Slurm job cgroups,
//     where idleness cannot be told.
//   - idle_memory_used_percent: MemTotal - MemAvailable - Hugetlb over MemTotal - Hugetlb. The
//     bound is the SKU file's, else kWarnPercent / kFailPercent (below, with their source). Not
//     fatal: drain_after applies, since memory a job freed late is gone by the next report.
#include "host/idle_memory.h"

#include <algorithm>
#include <filesystem>
#include <set>
#include <sstream>

#include "check_factories.h"
#include "vigil/base/files.h"
#include "vigil/base/strings.h"
#include "vigil/checks/findings.h"

namespace vigil {
namespace idle_memory {

std::optional<MemInfo> parse_meminfo(std::string_view text) {
  MemInfo m;
  bool total = false, available = false, hugetlb = false;
  std::uint64_t pages = 0, page_kib = 0;
  std::istringstream in{std::string(text)};
  for (std::string line; std::getline(in, line);) {
    std::istringstream fields(line);
    std::string name;
    std::uint64_t value = 0;
    if (!(fields >> name >> value)) continue;
    if (name == "MemTotal:") {
      m.total_kib = value;
      total = true;
    } else if (name == "MemAvailable:") {
      m.available_kib = value;
      available = true;
    } else if (name == "Shmem:") {
      m.shmem_kib = value;
    } else if (name == "SUnreclaim:") {
      m.sunreclaim_kib = value;
    } else if (name == "Hugetlb:") {
      m.hugetlb_kib = value;
      hugetlb = true;
    } else if (name == "HugePages_Total:") {
      pages = value;
    } else if (name == "Hugepagesize:") {
      page_kib = value;
    }
  }
  if (!total || !available || m.total_kib == 0) return std::nullopt;
  if (!hugetlb) m.hugetlb_kib = pages * page_kib;  // before Linux 4.16: the default size only
  m.hugetlb_kib = std::min(m.hugetlb_kib, m.total_kib);
  return m;
}

double used_percent(const MemInfo& m) {
  const std::uint64_t usable = m.total_kib - m.hugetlb_kib;
  if (usable == 0) return 0;
  const std::uint64_t held = m.total_kib - std::min(m.total_kib, m.available_kib);
  const std::uint64_t used = held > m.hugetlb_kib ? held - m.hugetlb_kib : 0;
  return 100.0 * static_cast<double>(used) / static_cast<double>(usable);
}

namespace {

namespace fs = std::filesystem;

bool is_job_dir(const fs::directory_entry& e, std::string& id) {
  const std::string name = e.path().filename().string();
  if (name.size() <= 4 || name.compare(0, 4, "job_") != 0) return false;
  id = name.substr(4);
  return std::ranges::all_of(id, [](char c) { return c >= '0' && c <= '9'; }) && e.is_directory();
}

// job_<id> directories right under `dir` into `jobs`.
void add_jobs(const fs::path& dir, std::set<std::string>& jobs) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    std::string id;
    if (is_job_dir(e, id)) jobs.insert(id);
  }
}

bool slurm_named(const std::string& name, std::string_view plain) {
  // "slurm" or "slurm_<node>" (v1); "slurmstepd.scope" or "<node>_slurmstepd.scope" (v2).
  if (plain == "slurm") return name == "slurm" || name.starts_with("slurm_");
  return name == plain || name.ends_with("_" + std::string(plain));
}

}  // namespace

std::optional<std::vector<std::string>> slurm_jobs(const std::string& cgroup_root) {
  std::set<std::string> jobs;
  bool tree = false;
  std::error_code ec;
  // cgroup v2: system.slice/slurmstepd.scope/job_<id>.
  for (const auto& e : fs::directory_iterator(fs::path(cgroup_root) / "system.slice", ec)) {
    if (!slurm_named(e.path().filename().string(), "slurmstepd.scope")) continue;
    tree = true;
    add_jobs(e.path(), jobs);
  }
  // cgroup v1: <controller>/slurm/uid_<uid>/job_<id>, in every hierarchy (freezer and memory
  // with proctrack/cgroup and task/cgroup; devices with ConstrainDevices).
  for (const auto& hierarchy : fs::directory_iterator(cgroup_root, ec)) {
    std::error_code ec2;
    for (const auto& slurm : fs::directory_iterator(hierarchy.path(), ec2)) {
      if (!slurm_named(slurm.path().filename().string(), "slurm")) continue;
      tree = true;
      std::error_code ec3;
      for (const auto& uid : fs::directory_iterator(slurm.path(), ec3))
        if (uid.path().filename().string().starts_with("uid_")) add_jobs(uid.path(), jobs);
    }
  }
  if (!tree) return std::nullopt;
  return std::vector<std::string>(jobs.begin(), jobs.end());
}

}  // namespace idle_memory

namespace {

namespace fs = std::filesystem;

constexpr std::string_view kName = "host_idle_memory";
// The built-in bound, when the SKU file has none. Soperator's idle_mem_used (PR #2773, merge
// 3cf2d0c1) drains an idle node whose MemAvailable is below the RealMemory Slurm promises its
// jobs; sites set RealMemory some 5-10% under MemTotal for the OS, so more than 10% held by an
// idle node breaks that promise on most of them, and 5% warns (its first version capped
// MemTotal - MemAvailable at 32 GB: 1.6% of a 2 TiB DGX H100, a bound the driver's pinned
// memory and a large page cache's unreclaimable share can reach on a healthy node). A site
// that knows its RealMemory sets the bound in the SKU file.
constexpr double kWarnPercent = 5;
constexpr double kFailPercent = 10;
constexpr const char* kBoundSource =
    "Soperator idle_mem_used (MemAvailable below Slurm's RealMemory, typically 90-95% of "
    "MemTotal)";

std::string gib(std::uint64_t kib) {
  return significant(static_cast<double>(kib) / (1024.0 * 1024.0)) + " GiB";
}

class HostIdleMemoryCheck final : public Check {
 public:
  std::string_view name() const override { return kName; }
  Applies applies(const CheckContext&) const override { return {}; }

  CheckResult run(const CheckContext& ctx) override {
    const std::string root = (fs::path(ctx.sysfs_root) / "sys/fs/cgroup").string();
    auto jobs = idle_memory::slurm_jobs(root);
    if (!jobs)
      return skipped(kName, "cannot tell whether the node is idle: no Slurm job cgroups under " +
                                root + " (task/cgroup or proctrack/cgroup make them)");
    std::erase(*jobs, ctx.host.own_job);
    if (!jobs->empty())
      return skipped(
          kName, "the node is not idle: job " + short_list(*jobs, 3, ", ", " ") + " runs on it");
    const std::string path = ctx.proc_root + "/meminfo";
    const auto text = read_whole_file(path);
    if (!text) return error(kName, "cannot read " + path, "VIGIL-MEM-QUERY");
    const auto mem = idle_memory::parse_meminfo(*text);
    if (!mem)
      return error(kName, path + " has no MemTotal or MemAvailable (Linux 3.14+)",
                   "VIGIL-MEM-QUERY");
    CheckResult r;
    r.check = std::string(kName);
    const double used = idle_memory::used_percent(*mem);
    Measurement& m = add_measurement(r, ctx, "idle_memory_used_percent", used, "percent");
    default_threshold(m, Op::kLe, kFailPercent, kWarnPercent, kBoundSource);
    const std::uint64_t held = mem->total_kib - std::min(mem->total_kib, mem->available_kib);
    const std::uint64_t used_kib = held > mem->hugetlb_kib ? held - mem->hugetlb_kib : 0;
    const std::string amount = gib(used_kib) + " of " + gib(mem->total_kib - mem->hugetlb_kib) +
                               " (" + significant(used) + "%)";
    finalize(r, "VIGIL");  // VIGIL-IDLE-MEMORY-USED-PERCENT
    if (r.status == Status::kFail || r.status == Status::kWarn)
      r.message = "idle node holds " + amount + " neither free nor reclaimable: shmem " +
                  gib(mem->shmem_kib) + " (tmpfs, /dev/shm), unreclaimable slab " +
                  gib(mem->sunreclaim_kib);
    else
      r.message = "idle node holds " + amount;
    return r;
  }
};

}  // namespace

std::unique_ptr<Check> make_host_idle_memory_check() {
  return std::make_unique<HostIdleMemoryCheck>();
}

}  // namespace vigil
