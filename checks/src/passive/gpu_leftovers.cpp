// gpu_leftovers (epilog): compute processes the finished job left on the GPUs. Slurm has killed
// the job's processes before the epilog runs; one NVML still lists is stuck (often in the
// driver, unkillable) and holds GPU memory the next job needs. Judged by passive/leftovers.h:
// two reads ctx.leftovers.grace apart (a process in teardown is gone by the
// second), residents such as an MPS server never count, and only a process whose cgroup proves
// it is this job's fails; one whose owner cannot be read, on one of the job's GPUs, warns.
// Someone else's work is never a fault. Utilization alone never counts here: the job's last
// NVML sample may still show it.
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <thread>

#include "check_factories.h"
#include "nvml/gpu_busy.h"
#include "passive/count_measurement.h"
#include "passive/leftovers.h"

namespace vigil {
namespace {

using namespace nvml;

std::optional<std::string> read_cgroup(const std::string& proc_root, unsigned pid) {
  std::ifstream in(proc_root + "/" + std::to_string(pid) + "/cgroup");
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

class GpuLeftoversCheck final : public Check {
 public:
  std::string_view name() const override { return "gpu_leftovers"; }
  Applies applies(const CheckContext&) const override { return {}; }

  CheckResult run(const CheckContext& ctx) override {
    auto session = open_session(ctx);
    if (!session) return unavailable(name(), session.error());
    BusyRules busy;
    busy.max_idle_utilization_percent = 101;  // processes only
    busy.own_pids = {static_cast<unsigned>(::getpid()), static_cast<unsigned>(::getppid())};
    const auto first = read_gpu_activity(*session, ctx.proc_root, busy, BusySampling{1, {}});
    auto second = first;
    if (!judge_gpu_activity(first, busy).empty()) {
      std::this_thread::sleep_for(ctx.leftovers.grace);
      second = read_gpu_activity(*session, ctx.proc_root, busy, BusySampling{1, {}});
    }
    leftovers::Rules rules{ctx.leftovers.job_gpus, ctx.leftovers.job_id, ctx.leftovers.residents,
                           busy.own_pids};
    const leftovers::Verdict v = leftovers::judge(
        first, second, rules, [&](unsigned pid) { return read_cgroup(ctx.proc_root, pid); });

    CheckResult r;
    r.check = std::string(name());
    r.measurements.push_back(
        count_measurement("leftover_processes_of_this_job", static_cast<double>(v.ours.size())));
    std::vector<std::string> unknowns = activity_unknowns(second);
    // A GPU without a handle was not looked at: "no process left" would be a claim about it.
    const std::vector<std::string> blind = no_handle_unknowns(*session);
    unknowns.insert(unknowns.end(), blind.begin(), blind.end());
    const std::string others =
        v.ignored.empty() ? "" : "; not this job's: " + short_list(v.ignored, 3, "; ", "; ");
    if (!v.ours.empty()) {
      r.status = Status::kFail;
      r.fault_code = "VIGIL-GPU-LEFTOVER";
      r.message = short_list(v.ours, 3, "; ", "; ") + " of job " + ctx.leftovers.job_id +
                  " still on the GPU " +
                  significant(std::chrono::duration<double>(ctx.leftovers.grace).count()) +
                  " s after the job ended" + others;
    } else if (!v.unproven.empty()) {
      r.status = Status::kWarn;
      r.fault_code = "VIGIL-GPU-LEFTOVER";
      r.message = short_list(v.unproven, 3, "; ", "; ") +
                  " after the job ended; its owner is unknown (no readable cgroup" +
                  std::string(ctx.leftovers.job_id.empty() ? ", SLURM_JOB_ID unset" : "") +
                  "), so it is not drained" + others;
    } else if (!unknowns.empty()) {
      return error(name(), short_list(unknowns, 3, "; ", "; "), kFaultQuery);
    } else {
      r.message =
          "no process of the job left on " +
          (ctx.leftovers.job_gpus ? std::to_string(ctx.leftovers.job_gpus->size()) + " job GPUs"
                                  : std::to_string(second.size()) + " GPUs") +
          others;
    }
    return r;
  }
};

}  // namespace

std::unique_ptr<Check> make_gpu_leftovers_check() { return std::make_unique<GpuLeftoversCheck>(); }

}  // namespace vigil
