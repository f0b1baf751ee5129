// gpu_leftovers (epilog): compute processes still on the finished job's GPUs. Slurm has killed
// the job's processes before the epilog runs; one NVML still lists is stuck (often in the
// driver, unkillable) and holds GPU memory the next job needs. Only the job's own GPUs are
// judged (SLURM_JOB_GPUS, ctx.job_gpus): on a shared node the other GPUs belong to other jobs,
// and someone else's work is never a fault. Without the job's GPU list a leftover is a warning.
// Utilization alone never counts here: the job's last NVML sample may still show it.
#include <unistd.h>

#include <algorithm>

#include "check_factories.h"
#include "nvml/gpu_busy.h"
#include "passive/count_measurement.h"

namespace vigil {
namespace {

using namespace nvml;

class GpuLeftoversCheck final : public Check {
 public:
  std::string_view name() const override { return "gpu_leftovers"; }
  std::string_view short_name() const override { return "leftover"; }
  std::chrono::seconds timeout() const override { return std::chrono::seconds(20); }
  Applies applies(const CheckContext&) const override { return {}; }

  CheckResult run(const CheckContext& ctx) override {
    auto session = open_session(ctx);
    if (!session) return unavailable(name(), session.error());
    BusyRules rules;
    rules.max_idle_utilization_percent = 101;  // processes only
    rules.own_pids = {static_cast<unsigned>(::getpid()), static_cast<unsigned>(::getppid())};
    const auto activity = read_gpu_activity(*session, ctx.proc_root, rules, BusySampling{1, {}});
    std::vector<GpuBusy> left;
    for (const GpuBusy& b : judge_gpu_activity(activity, rules)) {
      if (!ctx.job_gpus || std::count(ctx.job_gpus->begin(), ctx.job_gpus->end(), b.gpu))
        left.push_back(b);
    }
    CheckResult r;
    r.check = std::string(name());
    r.measurements.push_back(
        count_measurement("gpus_with_leftover_processes", static_cast<double>(left.size())));
    std::vector<std::string> unknowns = activity_unknowns(activity);
    // A GPU without a handle was not looked at: "no process left" would be a claim about it.
    const std::vector<std::string> blind = no_handle_unknowns(*session);
    unknowns.insert(unknowns.end(), blind.begin(), blind.end());
    if (left.empty()) {
      if (!unknowns.empty()) return error(name(), short_list(unknowns, 3, "; ", "; "), kFaultQuery);
      r.message =
          "no process left on " + (ctx.job_gpus ? std::to_string(ctx.job_gpus->size()) + " job GPUs"
                                                : std::to_string(activity.size()) + " GPUs");
      return r;
    }
    std::vector<std::string> texts;
    for (const GpuBusy& b : left) texts.push_back(b.reason);
    r.status = ctx.job_gpus ? Status::kFail : Status::kWarn;
    r.fault_code = "VIGIL-GPU-LEFTOVER";
    r.message = short_list(texts, 3, "; ", "; ") + " after the job ended" +
                (ctx.job_gpus ? "" : " (job GPUs unknown: SLURM_JOB_GPUS unset)");
    return r;
  }
};

}  // namespace

std::unique_ptr<Check> make_gpu_leftovers_check() { return std::make_unique<GpuLeftoversCheck>(); }

}  // namespace vigil
