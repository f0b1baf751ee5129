#pragma once
// Shared plumbing of the CUDA probes (built only with VIGIL_HAVE_CUDA): the error macro, owning
// handles, the CUDA-event timing loop and the per-GPU driver. Each probe file keeps only its
// kernel and what it measures.
#include <cuda_runtime_api.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "cuda/cuda_labels.h"
#include "cuda/probe_math.h"
#include "cuda/probe_result.h"
#include "vigil/base/result.h"
#include "vigil/checks/check.h"

namespace vigil::cuda_probe {

// "cudaErrorMemoryAllocation: out of memory" with `where` = the call's source text.
Error cuda_error(cudaError_t e, const char* call);

}  // namespace vigil::cuda_probe

// Evaluates a CUDA runtime call; on failure returns a vigil::Error (convertible to any Result)
// that records the call and CUDA's error name and string.
#define VIGIL_CUDA_CHECK(call)                                      \
  do {                                                              \
    const cudaError_t vigil_cuda_e_ = (call);                       \
    if (vigil_cuda_e_ != cudaSuccess) {                             \
      return ::vigil::cuda_probe::cuda_error(vigil_cuda_e_, #call); \
    }                                                               \
  } while (0)

namespace vigil::cuda_probe {

struct DeviceFree {
  void operator()(void* p) const { cudaFree(p); }
};
struct PinnedFree {
  void operator()(void* p) const { cudaFreeHost(p); }
};
struct StreamDestroy {
  void operator()(cudaStream_t s) const { cudaStreamDestroy(s); }
};
struct EventDestroy {
  void operator()(cudaEvent_t e) const { cudaEventDestroy(e); }
};
using DevicePtr = std::unique_ptr<void, DeviceFree>;
using PinnedPtr = std::unique_ptr<void, PinnedFree>;
using StreamPtr = std::unique_ptr<std::remove_pointer_t<cudaStream_t>, StreamDestroy>;
using EventPtr = std::unique_ptr<std::remove_pointer_t<cudaEvent_t>, EventDestroy>;

Result<DevicePtr> device_alloc(std::size_t bytes);
Result<PinnedPtr> pinned_alloc(std::size_t bytes);
Result<StreamPtr> make_stream();
// flags: cudaEventDefault (timed), or cudaEventDisableTiming for events that only order streams.
Result<EventPtr> make_event(unsigned flags = cudaEventDefault);

// Runs plan.warmup untimed iterations of `launch` (which enqueues one iteration on `stream` and
// returns VoidResult), more until warm-up lasted plan.min_warmup_s (host clock after a stream
// sync), then plan.batches batches of plan.iters iterations, each batch between two CUDA
// events. Returns the seconds per iteration of every batch.
template <typename Launch>
Result<std::vector<double>> time_batches(cudaStream_t stream, const TimingPlan& plan,
                                         Launch&& launch) {
  const auto warmup_start = std::chrono::steady_clock::now();
  int done = 0;
  for (int more = plan.warmup; more > 0;) {
    for (int i = 0; i < more; ++i) {
      if (VoidResult r = launch(); !r) return r.error();
    }
    done += more;
    VIGIL_CUDA_CHECK(cudaStreamSynchronize(stream));
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - warmup_start).count();
    more = more_warmup_iters(done, elapsed, plan.min_warmup_s);
  }
  VIGIL_TRY(EventPtr start, make_event());
  VIGIL_TRY(EventPtr stop, make_event());
  std::vector<double> per_iter;
  for (int b = 0; b < plan.batches; ++b) {
    VIGIL_CUDA_CHECK(cudaEventRecord(start.get(), stream));
    for (int i = 0; i < plan.iters; ++i) {
      if (VoidResult r = launch(); !r) return r.error();
    }
    VIGIL_CUDA_CHECK(cudaEventRecord(stop.get(), stream));
    VIGIL_CUDA_CHECK(cudaEventSynchronize(stop.get()));
    float ms = 0;
    VIGIL_CUDA_CHECK(cudaEventElapsedTime(&ms, start.get(), stop.get()));
    per_iter.push_back(static_cast<double>(ms) / 1e3 / plan.iters);
  }
  return per_iter;
}

// Applies() of every CUDA probe. Never touches CUDA: the runner calls applies() in its own
// process and forks the check, and a CUDA context created before fork() is unusable after it.
Applies probe_applies(const CheckContext& ctx);

// One GPU's share of a probe: measures `gpu` (already the current device), adds measurements
// to `r` (and a failure message for absolute findings), appends operator notes to `notes`.
using PerGpuProbe =
    std::function<VoidResult(int gpu, CheckResult& r, std::vector<std::string>& notes)>;

// Runs `probe` on every visible GPU (CUDA_DEVICE_ORDER=PCI_BUS_ID unless set, so GPU numbers
// match NVML's; a GPU that fails does not stop the others) and turns the outcome into the
// check's result: cudaGetDeviceCount fails or sees none -> error VIGIL-CUDA-UNAVAILABLE with
// CUDA's message; otherwise finish_probe_result (probe_result.h) applies the status rules.
// `after_all`, when given, runs once every GPU was measured (and measurements carry NVML
// indices): a probe that compares GPUs with each other adds its measurements there.
using AfterAllGpus =
    std::function<void(CheckResult& r, std::vector<std::string>& notes, const CudaLabels& labels)>;
CheckResult run_on_each_gpu(const CheckContext& ctx, std::string_view check,
                            const PerGpuProbe& probe, const AfterAllGpus& after_all = {});

// A probe that drives every GPU at the same time (gpu_soak): measurements and failures name CUDA
// ordinals; the driver relabels them. The same checks before it as run_on_each_gpu.
using AllGpusProbe =
    std::function<void(int count, const CudaLabels& labels, CheckResult& r,
                       std::vector<std::string>& notes, std::vector<GpuFailure>& failures)>;
CheckResult run_on_all_gpus(const CheckContext& ctx, std::string_view check,
                            const AllGpusProbe& probe);

}  // namespace vigil::cuda_probe
