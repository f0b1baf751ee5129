#pragma once
// The check interface. A check is one class in one file, listed in one registry table
// (checks/src/registry.cpp). Checks return data; they never print, drain or call Kubernetes.
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "vigil/base/strings.h"  // short_list() for check messages
#include "vigil/checks/sku.h"
#include "vigil/checks/xid_catalogue.h"
#include "vigil/detect/config.h"
#include "vigil/report/report.h"

namespace vigil {

// quick and full: `vigil-check run --suite`; qualify: the full suite with long plans and the
// soak, for a node before it takes jobs (docs/qualify.md).
enum class Suite { kQuick, kFull, kQualify };
// Whether the probes use their full (long) plans: in the full and the qualify suite.
inline bool long_plans(Suite s) { return s != Suite::kQuick; }

struct SoakOptions {                   // gpu_soak (the qualify suite)
  std::chrono::seconds duration{600};  // GEMM load on every GPU at once for this long
};

// The options of one family of checks: the program that runs the checks sets them (vigil-check
// binds its flags into them), and only that family reads them.
struct LeftoverOptions {  // gpu_leftovers, in the epilog of a job
  // NVML indices of the GPUs the job that just ended had (SLURM_JOB_GPUS); nullopt when
  // unknown. Only these are judged.
  std::optional<std::vector<int>> job_gpus;
  std::string job_id;  // SLURM_JOB_ID: ownership is proven by the job's cgroup
  // Processes that live on GPUs between jobs by design (an MPS server, a site's monitoring
  // agent with a CUDA context): never a job's leftover. Names as in /proc/<pid>/comm.
  std::vector<std::string> residents{"nvidia-cuda-mps-server"};
  // A process still listed after this long is stuck, not one in teardown.
  std::chrono::milliseconds grace{2000};
};

struct FabricWaitOptions {  // nvml_fabric and nvlink_imex
  // A GPU not yet registered in its NVLink fabric warns for this long after boot, the last GPU
  // reset or Fabric Manager's start (registration under way) and fails after it.
  std::chrono::seconds grace{600};
  // ... but first is read again every `recheck` until `settle` has passed (for the whole
  // check), as is a route or access-timeout recovery in progress.
  std::chrono::milliseconds recheck{3000};
  std::chrono::milliseconds settle{30000};
};

struct ImexOptions {  // nvlink_imex
  // The nvidia-imex-ctl to ask; empty: the first one in the directories DCGM searches
  // (/usr/bin, /usr/local/bin, /opt/nvidia/imex/bin, /usr/local/nvidia/imex/bin).
  std::string ctl;
  std::string dev_root = "/dev";  // /dev/nvidia-caps-imex-channels/ is counted here
};

struct AllReduceOptions {  // the all_reduce checks
  std::string binary;      // vigil-allreduce or nccl-tests all_reduce_perf; empty: found
  std::string mpirun = "mpirun";
  // Fabric jobs (`vigil-check fabric`): the allocation's nodes, MPI ranks across them, backend.
  std::vector<std::string> nodes;
  int ranks = 0;
  std::string backend = "nccl";  // nccl | host (CPU-only test clusters)
};

struct HostOptions {  // host_services, host_mounts, host_idle_memory, host_nvme (tests: stand-ins)
  // Absolute, as merged-/usr distributions install them: a hook's PATH is slurmd's.
  std::string systemctl = "/usr/bin/systemctl";  // `show`: the units' states
  std::string stat = "/usr/bin/stat";            // `-f`: a mount answers, and its free space
  std::string nvme = "/usr/sbin/nvme";           // nvme-cli `smart-log`: a drive's own health
  // host_idle_memory: the Slurm job this check runs in or for (SLURM_JOB_ID: the hook's job,
  // `vigil-check run`'s own); its cgroup does not make the node busy. "" when none.
  std::string own_job;
};

// Everything a check may read. Every hardware/OS boundary is injectable for tests.
struct CheckContext {
  std::string node;  // Slurm node name (SLURMD_NODENAME or hostname)
  Suite suite = Suite::kQuick;
  const SkuConfig* sku = nullptr;                  // nullptr: unknown SKU
  std::string nvml_library = "libnvidia-ml.so.1";  // dlopen()ed; tests point it at the fake
  std::string sysfs_root = "/";                    // InfiniBand sysfs is read below this root
  std::string proc_root = "/proc";                 // <pid>/comm names processes found on a busy GPU
  std::string kmsg_path = "/dev/kmsg";  // kernel log kmsg_xid reads (tests: a plain file)
  LeftoverOptions leftovers;            // gpu_leftovers (the epilog)
  FabricWaitOptions fabric_wait;        // nvml_fabric, nvlink_imex
  ImexOptions imex;                     // nvlink_imex
  AllReduceOptions allreduce;           // the all_reduce checks, fabric and domain jobs included
  HostOptions host;                     // host_services, host_mounts
  SoakOptions soak;                     // gpu_soak
  std::string state_dir;                // previous readings for delta counters; empty = none
  std::chrono::milliseconds xid_wait{2000};  // how long nvml_xid listens for events
  bool has_gpu_runtime = false;              // set by the runner: CUDA built in and a device seen
  int gpu_count = -1;                        // GPUs seen by NVML, -1 if NVML unavailable
  // The node's GPUs as the site configured them in Slurm (its Gres, gpu:N; vigil-submit passes
  // it as VIGIL_EXPECTED_GPUS; the hooks ask `slurmd -G`); 0: unknown, the SKU's catalogue
  // count is used. expected_gpus_from says where it came from, for the threshold's source.
  int expected_gpus = 0;
  std::string expected_gpus_from = "Slurm Gres";
  // Set by the runner: how long this check may take before it is killed (its timeout(), or less
  // when the run's time box has less left); 0 = no limit. Repeats that would not fit skip.
  std::chrono::milliseconds time_limit{0};
  // Confirmation repeats of a suspicious figure (CUDA probes, all_reduce) start this long after
  // the first run: interference that lasts a minute (a neighbour's heat, a noisy host) is gone
  // by then, a fault is not (docs/detection.md, "Interference that lasts through the repeats").
  // 0 = repeat at once. Checks that space their repeats get this much more time (runner).
  std::chrono::seconds repeat_spacing{0};
  // The site's detection settings (detection.json beside the thresholds; null: the defaults),
  // which the confirmation repeats are planned with: the same the drainer judges with.
  std::shared_ptr<const detect::DetectConfig> detection;
  const detect::DetectConfig& detect_config() const {
    static const detect::DetectConfig kDefaults = detect::DetectConfig::defaults();
    return detection ? *detection : kDefaults;
  }
  // The XID catalogue with the site's xid-policy.json over it (beside the thresholds; null: the
  // built-in one), which kmsg_xid and nvml_xid judge every XID by (docs/xid.md).
  std::shared_ptr<const XidCatalogue> xid;
  const XidCatalogue& xid_catalogue() const { return xid ? *xid : *XidCatalogue::builtin(); }

  // Threshold for (check, measurement) under the detected SKU, or nullptr.
  const Threshold* threshold(std::string_view check, std::string_view measurement) const {
    return sku ? sku->find(check, measurement) : nullptr;
  }
};

struct Applies {
  bool yes = true;
  std::string why_not;  // becomes the skipped result's message
};

class Check {
 public:
  virtual ~Check() = default;
  virtual std::string_view name() const = 0;
  // What Slurm reasons call it ("remap", "nccl-ib"): plain `sinfo -R` shows 20 characters, so
  // it is short. The runner stamps it into every result this check returns. Stated once, in the
  // check catalog (vigil/report/check_catalog.h); a check outside it (a test's) says its own,
  // or is called by its name.
  virtual std::string_view short_name() const;
  // Overrun budget for the runner (it kills the check's process and reports error): the
  // catalog's; 60 s for a check outside it.
  virtual std::chrono::seconds timeout() const;
  // Whether the check waits ctx.repeat_spacing before confirmation repeats (the runner then
  // adds that wait to its timeout).
  virtual bool spaces_repeats() const { return false; }
  virtual Applies applies(const CheckContext& ctx) const = 0;
  virtual CheckResult run(const CheckContext& ctx) = 0;
};

// Helpers that make check code short and uniform.
// Adds a measurement, attaching the SKU threshold when there is one.
Measurement& add_measurement(CheckResult& r, const CheckContext& ctx, std::string name,
                             double value, std::string unit, std::optional<int> gpu = {},
                             std::optional<std::string> port = {});
// A threshold Vigil brings itself, for an absolute finding that needs no SKU file (a DBE, a
// link down, a mismatching word); `source` says where it comes from.
Threshold built_in_threshold(Op op, double fail, std::optional<double> warn, std::string unit,
                             std::string source = "");
// Attaches built_in_threshold(..., m.unit, source) to m unless the SKU file gave it one.
void default_threshold(Measurement& m, Op op, double fail, std::optional<double> warn = {},
                       std::string source = "");
// Sets r.status from its measurements (worst of them) unless already error/skipped, and fills
// r.message / r.fault_code for the worst failing measurement when the check left them empty.
void finalize(CheckResult& r, std::string_view fault_prefix);

// Confirmation repeats inside one check (CUDA probes, all_reduce): does another run fit in the
// check's time limit, with room for one 1.5x slower than the slowest so far? Past the limit the
// runner kills the check and every figure is lost, a fail included. No limit: yes.
bool another_run_fits(std::chrono::steady_clock::duration elapsed,
                      std::chrono::steady_clock::duration longest, std::chrono::milliseconds limit);
// "repeats stopped after 1 of 4: another might pass the check's 120 s limit"
std::string repeats_stopped_note(int done, int planned, std::chrono::milliseconds limit);
// Before the first confirmation repeat: waits ctx.repeat_spacing when that wait and another run
// still fit the check's time limit (another_run_fits) and returns true; else returns false
// without waiting and sets `note` ("repeats not run: ..."), and the first figures stand
// unconfirmed (the drainer's unconfirmed_drain_after applies: confirmed by the next cycle).
bool wait_before_repeats(const CheckContext& ctx, std::chrono::steady_clock::duration elapsed,
                         std::chrono::steady_clock::duration longest, std::string& note);

CheckResult skipped(std::string_view check, std::string why);
// Seconds since boot (CLOCK_BOOTTIME) from <ctx.proc_root>/uptime, or nullopt when unreadable:
// the boot grace of the fabric and IMEX checks.
std::optional<double> uptime_s(const CheckContext& ctx);
// The kernel's id of this boot (<proc_root>/sys/kernel/random/boot_id, new at every boot:
// proc(5)); "" when it cannot be read.
std::string boot_id(const CheckContext& ctx);
CheckResult error(std::string_view check, std::string why, std::string fault_code = "");

}  // namespace vigil
