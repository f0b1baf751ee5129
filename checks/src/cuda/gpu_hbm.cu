// gpu_hbm: device-memory bandwidth per GPU, a device-to-device copy over buffers far larger than
// L2, reported as hbm_bandwidth in GB/s counting every byte read plus every byte written.
#include <string>

#include "check_factories.h"
#include "cuda/cuda_probe.h"

namespace vigil {
namespace {

using namespace cuda_probe;

// The driver's device-to-device copy (cudaMemcpyAsync), the copy PyTorch's Tensor.copy_ and
// nvbandwidth's device-local copy use. Hand-written copy kernels read less on an H200 next to it
// (docs/gpu-validation.md, 2026-11-26): one 16-byte load per thread, 32 blocks per SM 3,987 GB/s
// (0.93x of PyTorch's 4,294 on the same GPU); four loads in flight per thread, one wave of
// blocks 3,935 GB/s (0.92x). A probe that reads 7% low hides part of a real HBM loss in its own
// shortfall, so the figure is the best copy the platform has.
VoidResult measure_hbm(const CheckContext& ctx, int gpu, CheckResult& r) {
  const CopyPlan plan = hbm_plan(long_plans(ctx.suite));

  VIGIL_TRY(StreamPtr stream, make_stream());
  VIGIL_TRY(DevicePtr src, device_alloc(plan.bytes));
  VIGIL_TRY(DevicePtr dst, device_alloc(plan.bytes));
  VIGIL_CUDA_CHECK(cudaMemsetAsync(src.get(), 0x5A, plan.bytes, stream.get()));

  auto launch = [&]() -> VoidResult {
    VIGIL_CUDA_CHECK(
        cudaMemcpyAsync(dst.get(), src.get(), plan.bytes, cudaMemcpyDeviceToDevice, stream.get()));
    return ok_result();
  };
  VIGIL_TRY(std::vector<double> seconds, time_batches(stream.get(), plan.timing, launch));
  add_measurement(r, ctx, "hbm_bandwidth",
                  gigabytes_per_second(copy_bytes_moved(plan.bytes), median(std::move(seconds))),
                  "GB/s", gpu);
  return ok_result();
}

class GpuHbmCheck final : public Check {
 public:
  std::string_view name() const override { return "gpu_hbm"; }
  bool spaces_repeats() const override { return true; }
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
