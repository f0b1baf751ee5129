// gpu_soak (the qualify suite, docs/qualify.md): every GPU of the node runs back-to-back BF16
// GEMMs (8192^3, cuBLASLt) at the same time for ctx.soak.duration, so power, heat and the PSUs are
// loaded as a training job loads them, while NVML is read once a second per GPU: SM clock, board
// power, temperature and clock-event reasons. Per GPU: soak_tflops, soak_sm_clock, soak_power,
// soak_temperature, soak_slowdown (soak_summary.h). A GPU that clocks or computes below its peers
// is judged by vigil::detect against the node's other GPUs (the catalog's gemm margins), like
// gpu_gemm's figure; one that could not run is an error.
#include <cublasLt.h>
#include <cuda_bf16.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "check_factories.h"
#include "cuda/cublaslt_objects.h"
#include "cuda/cuda_probe.h"
#include "cuda/gemm_load.h"
#include "cuda/soak_summary.h"
#include "nvml/nvml_common.h"

namespace vigil {
namespace {

using namespace cuda_probe;
using Steady = std::chrono::steady_clock;

constexpr std::size_t kWorkspaceBytes = 32 * kMiB;
constexpr std::uint64_t kSize = 8192;  // gpu_gemm's shape (probe_math.h gemm_plan)
constexpr int kBatch = 10;             // GEMMs between two looks at the clock

struct Load {
  std::atomic<bool> done{false};
  long long gemms = 0;
  double seconds = 0;
  std::optional<Error> error;
};

// One GPU's share, on its own thread: GEMMs until `end`.
VoidResult load_gpu(const CublasLtApi& lt, int gpu, Steady::time_point end, Load& out) {
  VIGIL_CUDA_CHECK(cudaSetDevice(gpu));
  VIGIL_TRY(StreamPtr stream, make_stream());
  const std::size_t elements = kSize * kSize;
  VIGIL_TRY(DevicePtr a, device_alloc(elements * sizeof(__nv_bfloat16)));
  VIGIL_TRY(DevicePtr b, device_alloc(elements * sizeof(__nv_bfloat16)));
  VIGIL_TRY(DevicePtr c, device_alloc(elements * sizeof(__nv_bfloat16)));
  VIGIL_TRY(DevicePtr workspace, device_alloc(kWorkspaceBytes));
  if (VoidResult f = fill_bf16_uniform(a.get(), elements, 1, stream.get()); !f) return f;
  if (VoidResult f = fill_bf16_uniform(b.get(), elements, 2, stream.get()); !f) return f;
  VIGIL_TRY(TnMatmul mm, make_tn_matmul(lt, CUDA_R_16BF, CUDA_R_16BF, kSize, kSize, kSize,
                                        kWorkspaceBytes, /*deterministic=*/false));
  if (!mm.found)
    return Error{"cuBLASLt offers no BF16 algorithm for 8192^3", "cublasLtMatmulAlgoGetHeuristic"};
  const Steady::time_point start = Steady::now();
  while (Steady::now() < end) {
    for (int i = 0; i < kBatch; ++i) {
      if (VoidResult r = run_tn_matmul(lt, mm, a.get(), b.get(), c.get(), workspace.get(),
                                       kWorkspaceBytes, stream.get());
          !r)
        return r;
    }
    VIGIL_CUDA_CHECK(cudaStreamSynchronize(stream.get()));
    out.gemms += kBatch;
  }
  out.seconds = std::chrono::duration<double>(Steady::now() - start).count();
  return ok_result();
}

SoakSample sample(const nvml::Session& s, nvmlDevice_t dev) {
  const nvml::Api& api = s.api();
  SoakSample out;
  unsigned v = 0;
  if (nvml::call(api.device_get_clock_info, dev, int{NVML_CLOCK_SM}, &v) == NVML_SUCCESS)
    out.sm_clock_mhz = v;
  if (nvml::call(api.device_get_power_usage, dev, &v) == NVML_SUCCESS) out.power_w = v / 1000.0;
  if (nvml::gpu_temperature(api, dev, &v) == NVML_SUCCESS) out.temperature_c = v;
  unsigned long long events = 0;
  if (nvml::call(api.device_get_clocks_event_reasons, dev, &events) == NVML_SUCCESS)
    out.events = events;
  return out;
}

void soak(const CheckContext& ctx, int count, const CudaLabels& labels, CheckResult& r,
          std::vector<std::string>& notes, std::vector<GpuFailure>& failures) {
  Result<const CublasLtApi*> lt = load_cublaslt();  // once, before the threads
  if (!lt) {
    for (int g = 0; g < count; ++g) failures.push_back({g, lt.error()});
    return;
  }
  // NVML's handles by CUDA ordinal, when the ordinals' bus ids matched NVML's (cuda_labels.h).
  Result<nvml::Session> session = nvml::open_session(ctx);
  std::vector<nvmlDevice_t> devs(static_cast<std::size_t>(count), nullptr);
  if (session && labels.matched) {
    for (int g = 0; g < count; ++g)
      if (labels.label[g] >= 0 && labels.label[g] < session->count())
        devs[g] = session->gpus[labels.label[g]];
  } else {
    notes.push_back("no NVML samples: " + (session ? std::string("GPU numbers did not match")
                                                   : session.error().to_string()));
  }

  const Steady::time_point end = Steady::now() + ctx.soak.duration;
  // Every Load exists before any thread starts; each thread gets its own by pointer.
  std::vector<std::unique_ptr<Load>> loads;
  for (int g = 0; g < count; ++g) loads.push_back(std::make_unique<Load>());
  const CublasLtApi* api = *lt;
  std::vector<std::thread> threads;
  for (int g = 0; g < count; ++g) {
    threads.emplace_back([api, g, end, l = loads[g].get()] {
      if (VoidResult done = load_gpu(*api, g, end, *l); !done) l->error = done.error();
      l->done = true;
    });
  }
  std::vector<std::vector<SoakSample>> samples(static_cast<std::size_t>(count));
  for (bool running = true; running;) {
    std::this_thread::sleep_for(std::chrono::seconds(1));
    running = false;
    for (int g = 0; g < count; ++g) {
      if (loads[g]->done) continue;
      running = true;
      if (devs[g]) samples[g].push_back(sample(*session, devs[g]));
    }
  }
  for (std::thread& t : threads) t.join();
  const double flops = gemm_flops(kSize, kSize, kSize);
  for (int g = 0; g < count; ++g) {
    if (loads[g]->error) {
      failures.push_back({g, *loads[g]->error});
      continue;
    }
    add_soak_figures(r, ctx, {g, loads[g]->seconds, loads[g]->gemms, flops, samples[g]});
  }
  notes.push_back(std::to_string(ctx.soak.duration.count()) + " s of BF16 GEMMs on " +
                  std::to_string(count) + (count == 1 ? " GPU" : " GPUs at once"));
}

class GpuSoakCheck final : public Check {
 public:
  std::string_view name() const override { return "gpu_soak"; }
  Applies applies(const CheckContext& ctx) const override { return probe_applies(ctx); }
  CheckResult run(const CheckContext& ctx) override {
    return run_on_all_gpus(
        ctx, name(),
        [&](int count, const CudaLabels& labels, CheckResult& r, std::vector<std::string>& notes,
            std::vector<GpuFailure>& failures) { soak(ctx, count, labels, r, notes, failures); });
  }
};

}  // namespace

std::unique_ptr<Check> make_gpu_soak_check() { return std::make_unique<GpuSoakCheck>(); }

}  // namespace vigil
