#include "cuda/cuda_probe.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include "core/counter_state.h"
#include "cuda/cuda_driver.h"
#include "cuda/cuda_labels.h"
#include "cuda/probe_result.h"
#include "nvml/gpu_busy.h"
#include "vigil/report/drain_decision.h"

namespace vigil::cuda_probe {

Error cuda_error(cudaError_t e, const char* call) {
  return Error{std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e), call};
}

Result<DevicePtr> device_alloc(std::size_t bytes) {
  void* p = nullptr;
  VIGIL_CUDA_CHECK(cudaMalloc(&p, bytes));
  return DevicePtr(p);
}

Result<PinnedPtr> pinned_alloc(std::size_t bytes) {
  void* p = nullptr;
  VIGIL_CUDA_CHECK(cudaMallocHost(&p, bytes));
  return PinnedPtr(p);
}

Result<StreamPtr> make_stream() {
  cudaStream_t s = nullptr;
  VIGIL_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  return StreamPtr(s);
}

Result<EventPtr> make_event(unsigned flags) {
  cudaEvent_t e = nullptr;
  VIGIL_CUDA_CHECK(cudaEventCreateWithFlags(&e, flags));
  return EventPtr(e);
}

Applies probe_applies(const CheckContext& ctx) {
  if (ctx.gpu_count == 0) return {false, "no GPUs on this node (NVML reports 0)"};
  return {};
}

namespace {

using Steady = std::chrono::steady_clock;

// When the check started, and the slowest one-GPU probe so far.
struct Timing {
  Steady::time_point start;
  Steady::duration longest{0};
};

// The CUDA devices there are into `count`, or the result that ends the check: none, or
// cudaGetDeviceCount failed.
std::optional<CheckResult> count_devices(std::string_view check, int& count) {
  if (cudaError_t e = cudaGetDeviceCount(&count); e == cudaErrorSystemNotReady) {
    // 802 (CUDA 13 driver_types.h:954: "the system is not yet ready to start any CUDA work ...
    // verify the system configuration is in a valid state and all required driver daemons are
    // actively running"). On an NVSwitch board (HGX H100/H200/B200) that is a Fabric Manager that
    // is down or failed to train the fabric: no CUDA job can start on this node, so it is a finding
    // of the node, not of Vigil. Not fatal: a node checked while Fabric Manager is
    // still starting passes its next run, so the check's drain_after applies.
    CheckResult r;
    r.check = std::string(check);
    // gpu_sanity and gpu_memtest are fatal checks (drain at once, drain_decision.h): a node
    // checked while Fabric Manager is still starting must not be drained by one run, so those
    // two report it as error; the performance probes carry the fail, under drain_after.
    r.status = default_fatal_checks().count(std::string(check)) ? Status::kError : Status::kFail;
    r.fault_code = "VIGIL-CUDA-SYSTEM-NOT-READY";
    r.message =
        "cudaGetDeviceCount: cudaErrorSystemNotReady (802): no CUDA work can start on this node; "
        "on an NVSwitch system Fabric Manager is down or has not trained the fabric (systemctl "
        "status nvidia-fabricmanager; nvidia-smi -q, section Fabric)";
    return r;
  } else if (e != cudaSuccess) {
    int runtime = 0;
    cudaRuntimeGetVersion(&runtime);
    return error(check,
                 std::string("cudaGetDeviceCount: ") + cudaGetErrorName(e) + ": " +
                     cudaGetErrorString(e) + " (CUDA runtime " + std::to_string(runtime / 1000) +
                     "." + std::to_string(runtime % 1000 / 10) +
                     "); check that the NVIDIA driver is loaded and supports this CUDA version "
                     "(nvidia-smi)",
                 "VIGIL-CUDA-UNAVAILABLE");
  }
  if (count == 0) {
    return error(check, "cudaGetDeviceCount: no visible CUDA device (check CUDA_VISIBLE_DEVICES)",
                 "VIGIL-CUDA-UNAVAILABLE");
  }
  return std::nullopt;
}

// The labels of the `count` CUDA devices: NVML indices where the PCI bus ids match (cuda_labels.h).
CudaLabels label_devices(const std::vector<std::string>& nvml_bus_ids, int count) {
  std::vector<std::string> cuda_bus_ids;
  for (int ordinal = 0; ordinal < count; ++ordinal) {
    char id[32] = {};
    cuda_bus_ids.push_back(cudaDeviceGetPCIBusId(id, sizeof id, ordinal) == cudaSuccess ? id : "");
  }
  return cuda_labels(nvml_bus_ids, cuda_bus_ids);
}

// The measurements' GPUs from CUDA ordinals to their labels.
void relabel(CheckResult& res, const CudaLabels& labels, int count) {
  for (auto& m : res.measurements)
    if (m.gpu && *m.gpu >= 0 && *m.gpu < count) m.gpu = labels.label[*m.gpu];
}

// `probe` on CUDA device `gpu`, its time counted into t.longest.
VoidResult timed_probe(const PerGpuProbe& probe, int gpu, CheckResult& r,
                       std::vector<std::string>& notes, Timing& t) {
  const Steady::time_point gpu_start = Steady::now();
  VoidResult done = [&]() -> VoidResult {
    VIGIL_CUDA_CHECK(cudaSetDevice(gpu));
    return probe(gpu, r, notes);
  }();
  t.longest = std::max(t.longest, Steady::now() - gpu_start);
  return done;
}

// The recent healthy figures the probe's state file keeps for r's per-GPU measurements.
GpuHistory recent_history(const CounterState& state, const CheckResult& r) {
  GpuHistory history;
  for (const auto& m : r.measurements) {
    if (!m.gpu) continue;
    const auto& recent = state.recent_figures(gpu_history_key(m.name, *m.gpu));
    if (!recent.empty()) history[{m.name, *m.gpu}] = recent;
  }
  return history;
}

// Measures again each GPU `repeats` names (label -> how many times) and adds the figures to r's
// repeats, while time allows; notes say how the repeats were spaced or why they stopped.
void run_repeats(const CheckContext& ctx, const PerGpuProbe& probe, const CudaLabels& labels,
                 int count, const std::map<int, int>& repeats, Timing& t, CheckResult& r,
                 std::vector<std::string>& notes) {
  int planned = 0, done_repeats = 0;
  for (const auto& [gpu, times] : repeats) planned += times;
  bool out_of_time = false;
  if (planned > 0) {
    // Spaced repeats (docs/detection.md): a minute of interference is gone, a fault is not.
    std::string why;
    if (!wait_before_repeats(ctx, Steady::now() - t.start, t.longest, why)) {
      notes.push_back(why);
      out_of_time = true;
    } else if (ctx.repeat_spacing.count() > 0) {
      notes.push_back("repeated " + std::to_string(ctx.repeat_spacing.count()) +
                      " s after the first figures");
    }
  }
  for (const auto& [label, times] : repeats) {
    const int gpu = labels.ordinal_of(label);  // the CUDA device to measure again
    if (gpu < 0) continue;
    for (int k = 0; k < times && !out_of_time; ++k) {
      // Review F15: a repeat must fit in the check's time limit with room for one 1.5x slower
      // than the slowest probe so far. A slow node (every GPU below its bound, every GPU
      // repeated twice) would otherwise outrun the limit, the runner would kill the check and
      // its fail would be reported as error VIGIL-CHECK-TIMEOUT. The first figures then stand,
      // unconfirmed (the drainer's unconfirmed_drain_after applies).
      if (!another_run_fits(Steady::now() - t.start, t.longest, ctx.time_limit)) {
        out_of_time = true;
        notes.push_back(repeats_stopped_note(done_repeats, planned, ctx.time_limit));
        break;
      }
      CheckResult again;
      again.check = r.check;
      std::vector<std::string> ignored;
      if (!timed_probe(probe, gpu, again, ignored, t)) {
        cudaGetLastError();
        break;  // the first run's figure stands unconfirmed
      }
      ++done_repeats;
      relabel(again, labels, count);
      add_repeats(r, again, label);
    }
  }
}

}  // namespace

namespace {

// What every probe learns before it measures: the GPUs' users (NVML), how many CUDA devices there
// are and their labels. An early result instead when the probe must not or cannot run.
struct Preflight {
  nvml::BusyScan others;
  int count = 0;
  CudaLabels labels;
};
std::optional<CheckResult> preflight(const CheckContext& ctx, std::string_view check,
                                     Preflight& p) {
  // Before any CUDA call (this process has no context yet, so every compute process NVML lists
  // is someone else's): a GPU shared with other work measures slow without being faulty, and
  // allocating on it could take memory from that work. Any busy GPU -> the whole check is
  // error VIGIL-GPU-BUSY and no GPU is touched (docs/cuda-probes.md, "Busy GPUs").
  p.others = nvml::scan_gpus_for_other_work(ctx);
  if (!p.others.busy.empty()) return nvml::gpu_busy_result(check, p.others.busy);
  if (auto mig = nvml::mig_skip_result(check, p.others.mig_enabled)) return *mig;

  // GPU numbers in reports must match the NVML checks' (PCI bus order); respect an explicit
  // choice by the operator.
  setenv("CUDA_DEVICE_ORDER", "PCI_BUS_ID", /*overwrite=*/0);

  // A driver too old for this build's runtime is the node's setup, not a fault (cuda_driver.h).
  if (auto too_old = skip_if_driver_too_old(check)) return *too_old;

  if (auto no_device = count_devices(check, p.count)) return *no_device;
  // Reports and histories name GPUs by NVML index (cuda_labels.h).
  p.labels = label_devices(p.others.bus_ids, p.count);
  return std::nullopt;
}

// The notes every probe's result starts with.
std::vector<std::string> preflight_notes(const Preflight& p) {
  std::vector<std::string> notes;
  if (!p.others.unknown.empty()) notes.push_back(p.others.unknown);
  if (!p.labels.matched)
    notes.push_back("GPU numbers are CUDA ordinals: their PCI bus ids did not match NVML's");
  return notes;
}

}  // namespace

CheckResult run_on_all_gpus(const CheckContext& ctx, std::string_view check,
                            const AllGpusProbe& probe) {
  Preflight p;
  if (auto early = preflight(ctx, check, p)) return *early;
  CheckResult r;
  r.check = std::string(check);
  std::vector<GpuFailure> failures;
  std::vector<std::string> notes = preflight_notes(p);
  probe(p.count, p.labels, r, notes, failures);
  relabel(r, p.labels, p.count);
  for (GpuFailure& f : failures)
    if (f.gpu >= 0 && f.gpu < p.count) f.gpu = p.labels.label[f.gpu];
  return finish_probe_result(ctx, std::move(r), p.count, failures, notes);
}

CheckResult run_on_each_gpu(const CheckContext& ctx, std::string_view check,
                            const PerGpuProbe& probe, const AfterAllGpus& after_all) {
  Timing t{Steady::now()};
  Preflight p;
  if (auto early = preflight(ctx, check, p)) return *early;
  const int count = p.count;
  const CudaLabels& labels = p.labels;
  CheckResult r;
  r.check = std::string(check);
  std::vector<GpuFailure> failures;
  std::vector<std::string> notes = preflight_notes(p);
  for (int gpu = 0; gpu < count; ++gpu) {
    VoidResult done = timed_probe(probe, gpu, r, notes, t);
    if (done) continue;
    failures.push_back({labels.label[gpu], done.error()});
    cudaGetLastError();  // clear a non-sticky error before the next GPU
  }
  relabel(r, labels, count);
  if (after_all) after_all(r, notes, labels);
  // Confirmation: a GPU slower than its peers or than its own recent healthy figures (kept in
  // the probe's state file) is measured again, so the drainer can tell a slow GPU (its repeats
  // are slow too) from a transient dip (docs/detection.md).
  const detect::DetectConfig& cfg = ctx.detect_config();  // the site's, as the drainer's
  CounterState state(ctx.state_dir, check, ctx.node);
  const GpuHistory history = recent_history(state, r);
  run_repeats(ctx, probe, labels, count, plan_repeats(r, cfg, history), t, r, notes);
  if (state.enabled()) {
    for (const LearnedFigure& f : learnable_figures(r, history, cfg))
      state.remember_figure(gpu_history_key(f.measurement, f.gpu), f.value,
                            static_cast<std::size_t>(cfg.history_window));
    if (VoidResult saved = state.save(); !saved)
      notes.push_back("figures not saved: " + saved.error().to_string());
  }
  return finish_probe_result(ctx, std::move(r), count, failures, notes);
}

}  // namespace vigil::cuda_probe
