// gpu_hbm: device-memory bandwidth per GPU with a copy kernel over buffers far larger than L2,
// reported as hbm_bandwidth in GB/s counting every byte read plus every byte written.
#include <algorithm>
#include <cstdint>
#include <string>

#include "check_factories.h"
#include "cuda/cuda_probe.h"

namespace vigil {
namespace {

using namespace cuda_probe;

// 16-byte vector loads and stores, grid-stride.
__global__ void copy_kernel(const uint4* __restrict__ src, uint4* __restrict__ dst, std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
       i += std::size_t{gridDim.x} * blockDim.x) {
    dst[i] = src[i];
  }
}

VoidResult measure_hbm(const CheckContext& ctx, int gpu, CheckResult& r) {
  const CopyPlan plan = hbm_plan(ctx.suite == Suite::kFull);
  const std::size_t vectors = plan.bytes / sizeof(uint4);

  int sms = 0;
  VIGIL_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, gpu));
  constexpr int kThreads = 256;
  // Enough resident blocks to fill every SM several times over; the loop covers the rest.
  const int blocks = static_cast<int>(
      std::min<std::size_t>((vectors + kThreads - 1) / kThreads, std::size_t(sms) * 32));

  VIGIL_TRY(StreamPtr stream, make_stream());
  VIGIL_TRY(DevicePtr src, device_alloc(plan.bytes));
  VIGIL_TRY(DevicePtr dst, device_alloc(plan.bytes));
  VIGIL_CUDA_CHECK(cudaMemsetAsync(src.get(), 0x5A, plan.bytes, stream.get()));

  auto launch = [&]() -> VoidResult {
    copy_kernel<<<blocks, kThreads, 0, stream.get()>>>(static_cast<const uint4*>(src.get()),
                                                       static_cast<uint4*>(dst.get()), vectors);
    VIGIL_CUDA_CHECK(cudaGetLastError());
    return ok_result();
  };
  VIGIL_TRY(std::vector<double> seconds, time_batches(stream.get(), plan.timing, launch));
  add_measurement(
      r, ctx, "hbm_bandwidth",
      gigabytes_per_second(copy_bytes_moved(vectors * sizeof(uint4)), median(std::move(seconds))),
      "GB/s", gpu);
  return ok_result();
}

class GpuHbmCheck final : public Check {
 public:
  std::string_view name() const override { return "gpu_hbm"; }
  std::string_view short_name() const override { return "hbm"; }
  Applies applies(const CheckContext& ctx) const override { return probe_applies(ctx); }
  CheckResult run(const CheckContext& ctx) override {
    return run_on_each_gpu(ctx, name(), [&](int gpu, CheckResult& r, std::vector<std::string>&) {
      return measure_hbm(ctx, gpu, r);
    });
  }
};

}  // namespace

std::unique_ptr<Check> make_gpu_hbm_check() { return std::make_unique<GpuHbmCheck>(); }

}  // namespace vigil
