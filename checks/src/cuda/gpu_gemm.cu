// gpu_gemm: dense BF16 GEMM throughput per GPU with cuBLASLt (BF16 inputs and output, FP32
// accumulate), reported as gemm_bf16_tflops (TFLOP/s = 2*m*n*k per GEMM / s / 1e12).
#include <cublasLt.h>
#include <cuda_bf16.h>

#include <cstdint>
#include <string>

#include "check_factories.h"
#include "cuda/cublaslt_objects.h"
#include "cuda/cuda_probe.h"
#include "cuda/gemm_load.h"

namespace vigil {
namespace {

using namespace cuda_probe;

constexpr std::size_t kWorkspaceBytes = 32 * kMiB;

// Fills with pseudo-random values in [-0.5, 0.5): realistic switching activity (all-zero inputs
// would draw less power and run faster than real work).
__global__ void fill_bf16(__nv_bfloat16* p, std::size_t n, std::uint64_t seed) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
       i += std::size_t{gridDim.x} * blockDim.x) {
    const float u = static_cast<float>(splitmix64(i ^ seed) >> 40) * (1.0f / 16777216.0f);
    p[i] = __float2bfloat16(u - 0.5f);
  }
}

// One GPU: C(m x n) = A^T B with A stored k x m and B k x n, column-major ("TN", the layout
// cuBLASLt's fastest BF16 kernels use).
VoidResult measure_gemm(const CheckContext& ctx, int gpu, CheckResult& r) {
  const GemmPlan plan = gemm_plan(long_plans(ctx.suite));
  const std::uint64_t m = plan.m, n = plan.n, k = plan.k;
  VIGIL_TRY(const CublasLtApi* loaded, load_cublaslt());
  const CublasLtApi& lt = *loaded;

  VIGIL_TRY(StreamPtr stream, make_stream());
  VIGIL_TRY(DevicePtr a, device_alloc(k * m * sizeof(__nv_bfloat16)));
  VIGIL_TRY(DevicePtr b, device_alloc(k * n * sizeof(__nv_bfloat16)));
  VIGIL_TRY(DevicePtr c, device_alloc(m * n * sizeof(__nv_bfloat16)));
  VIGIL_TRY(DevicePtr workspace, device_alloc(kWorkspaceBytes));
  if (VoidResult f = fill_bf16_uniform(a.get(), k * m, 1, stream.get()); !f) return f;
  if (VoidResult f = fill_bf16_uniform(b.get(), k * n, 2, stream.get()); !f) return f;

  VIGIL_TRY(TnMatmul mm, make_tn_matmul(lt, CUDA_R_16BF, CUDA_R_16BF, m, n, k, kWorkspaceBytes,
                                        /*deterministic=*/false));
  if (!mm.found) {
    return Error{"cuBLASLt offers no BF16 algorithm for " + std::to_string(m) + "x" +
                     std::to_string(n) + "x" + std::to_string(k),
                 "cublasLtMatmulAlgoGetHeuristic"};
  }
  auto launch = [&]() -> VoidResult {
    return run_tn_matmul(lt, mm, a.get(), b.get(), c.get(), workspace.get(), kWorkspaceBytes,
                         stream.get());
  };
  VIGIL_TRY(std::vector<double> seconds, time_batches(stream.get(), plan.timing, launch));
  const double tflops =
      tflops_per_second(gemm_flops(plan.m, plan.n, plan.k), median(std::move(seconds)));
  add_measurement(r, ctx, "gemm_bf16_tflops", tflops, "TFLOP/s", gpu);
  return ok_result();
}

class GpuGemmCheck final : public Check {
 public:
  std::string_view name() const override { return "gpu_gemm"; }
  bool spaces_repeats() const override { return true; }
  Applies applies(const CheckContext& ctx) const override { return probe_applies(ctx); }
  CheckResult run(const CheckContext& ctx) override {
    return run_on_each_gpu(ctx, name(), [&](int gpu, CheckResult& r, std::vector<std::string>&) {
      return measure_gemm(ctx, gpu, r);
    });
  }
};

}  // namespace

namespace cuda_probe {
VoidResult fill_bf16_uniform(void* p, std::size_t elements, std::uint64_t seed, cudaStream_t s) {
  fill_bf16<<<1024, 256, 0, s>>>(static_cast<__nv_bfloat16*>(p), elements, seed);
  VIGIL_CUDA_CHECK(cudaGetLastError());
  return ok_result();
}
}  // namespace cuda_probe

std::unique_ptr<Check> make_gpu_gemm_check() { return std::make_unique<GpuGemmCheck>(); }

}  // namespace vigil
