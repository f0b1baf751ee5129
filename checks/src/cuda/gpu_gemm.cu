// gpu_gemm: dense BF16 GEMM throughput per GPU with cuBLASLt (BF16 inputs and output, FP32
// accumulate), reported as gemm_bf16_tflops (TFLOP/s = 2*m*n*k per GEMM / s / 1e12).
#include <cublasLt.h>
#include <cuda_bf16.h>

#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>

#include "check_factories.h"
#include "cuda/cublaslt_loader.h"
#include "cuda/cuda_probe.h"

// Like VIGIL_CUDA_CHECK for cuBLASLt status codes; `lt` is the loaded CublasLtApi.
#define VIGIL_CUBLAS_CHECK(call)                                                    \
  do {                                                                              \
    const cublasStatus_t vigil_blas_s_ = (call);                                    \
    if (vigil_blas_s_ != CUBLAS_STATUS_SUCCESS) {                                   \
      return ::vigil::Error{std::string(lt.get_status_name(vigil_blas_s_)) + ": " + \
                                lt.get_status_string(vigil_blas_s_),                \
                            #call};                                                 \
    }                                                                               \
  } while (0)

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

// Owns a cuBLASLt object; `destroy` is the loaded library's matching destroy call.
template <typename Handle>
struct LtDestroy {
  cublasStatus_t (*destroy)(Handle) = nullptr;
  void operator()(Handle p) const { destroy(p); }
};
template <typename Handle>
using LtPtr = std::unique_ptr<std::remove_pointer_t<Handle>, LtDestroy<Handle>>;
using LtHandle = LtPtr<cublasLtHandle_t>;
using LtMatmulDesc = LtPtr<cublasLtMatmulDesc_t>;
using LtLayout = LtPtr<cublasLtMatrixLayout_t>;
using LtPreference = LtPtr<cublasLtMatmulPreference_t>;

Result<LtLayout> bf16_layout(const CublasLtApi& lt, std::uint64_t rows, std::uint64_t cols) {
  cublasLtMatrixLayout_t l = nullptr;
  VIGIL_CUBLAS_CHECK(
      lt.matrix_layout_create(&l, CUDA_R_16BF, rows, cols, static_cast<std::int64_t>(rows)));
  return LtLayout(l, {lt.matrix_layout_destroy});
}

VoidResult fill(void* p, std::size_t elements, std::uint64_t seed, cudaStream_t s) {
  fill_bf16<<<1024, 256, 0, s>>>(static_cast<__nv_bfloat16*>(p), elements, seed);
  VIGIL_CUDA_CHECK(cudaGetLastError());
  return ok_result();
}

// One GPU: C(m x n) = A^T B with A stored k x m and B k x n, column-major ("TN", the layout
// cuBLASLt's fastest BF16 kernels use).
VoidResult measure_gemm(const CheckContext& ctx, int gpu, CheckResult& r) {
  const GemmPlan plan = gemm_plan(ctx.suite == Suite::kFull);
  const std::uint64_t m = plan.m, n = plan.n, k = plan.k;
  VIGIL_TRY(const CublasLtApi* loaded, load_cublaslt());
  const CublasLtApi& lt = *loaded;

  VIGIL_TRY(StreamPtr stream, make_stream());
  VIGIL_TRY(DevicePtr a, device_alloc(k * m * sizeof(__nv_bfloat16)));
  VIGIL_TRY(DevicePtr b, device_alloc(k * n * sizeof(__nv_bfloat16)));
  VIGIL_TRY(DevicePtr c, device_alloc(m * n * sizeof(__nv_bfloat16)));
  VIGIL_TRY(DevicePtr workspace, device_alloc(kWorkspaceBytes));
  if (VoidResult f = fill(a.get(), k * m, 1, stream.get()); !f) return f;
  if (VoidResult f = fill(b.get(), k * n, 2, stream.get()); !f) return f;

  cublasLtHandle_t raw_handle = nullptr;
  VIGIL_CUBLAS_CHECK(lt.create(&raw_handle));
  LtHandle handle(raw_handle, {lt.destroy});
  cublasLtMatmulDesc_t raw_desc = nullptr;
  VIGIL_CUBLAS_CHECK(lt.matmul_desc_create(&raw_desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  LtMatmulDesc desc(raw_desc, {lt.matmul_desc_destroy});
  const cublasOperation_t trans_a = CUBLAS_OP_T, trans_b = CUBLAS_OP_N;
  VIGIL_CUBLAS_CHECK(lt.matmul_desc_set_attribute(desc.get(), CUBLASLT_MATMUL_DESC_TRANSA, &trans_a,
                                                  sizeof trans_a));
  VIGIL_CUBLAS_CHECK(lt.matmul_desc_set_attribute(desc.get(), CUBLASLT_MATMUL_DESC_TRANSB, &trans_b,
                                                  sizeof trans_b));
  VIGIL_TRY(LtLayout a_layout, bf16_layout(lt, k, m));
  VIGIL_TRY(LtLayout b_layout, bf16_layout(lt, k, n));
  VIGIL_TRY(LtLayout c_layout, bf16_layout(lt, m, n));

  cublasLtMatmulPreference_t raw_pref = nullptr;
  VIGIL_CUBLAS_CHECK(lt.matmul_preference_create(&raw_pref));
  LtPreference pref(raw_pref, {lt.matmul_preference_destroy});
  const std::uint64_t workspace_bytes = kWorkspaceBytes;
  VIGIL_CUBLAS_CHECK(lt.matmul_preference_set_attribute(pref.get(),
                                                        CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                        &workspace_bytes, sizeof workspace_bytes));
  cublasLtMatmulHeuristicResult_t heuristic{};
  int found = 0;
  VIGIL_CUBLAS_CHECK(lt.matmul_algo_get_heuristic(handle.get(), desc.get(), a_layout.get(),
                                                  b_layout.get(), c_layout.get(), c_layout.get(),
                                                  pref.get(), 1, &heuristic, &found));
  if (found == 0) {
    return Error{"cuBLASLt offers no BF16 algorithm for " + std::to_string(m) + "x" +
                     std::to_string(n) + "x" + std::to_string(k),
                 "cublasLtMatmulAlgoGetHeuristic"};
  }

  const float alpha = 1.0f, beta = 0.0f;
  auto launch = [&]() -> VoidResult {
    VIGIL_CUBLAS_CHECK(lt.matmul(handle.get(), desc.get(), &alpha, a.get(), a_layout.get(), b.get(),
                                 b_layout.get(), &beta, c.get(), c_layout.get(), c.get(),
                                 c_layout.get(), &heuristic.algo, workspace.get(), kWorkspaceBytes,
                                 stream.get()));
    return ok_result();
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

std::unique_ptr<Check> make_gpu_gemm_check() { return std::make_unique<GpuGemmCheck>(); }

}  // namespace vigil
