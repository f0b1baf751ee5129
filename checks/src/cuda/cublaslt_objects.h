#pragma once
// Owning cuBLASLt objects and the "TN" matmul setup shared by gpu_gemm and gpu_sdc (CUDA builds
// only). Every call goes through the dlopen()ed CublasLtApi (cublaslt_loader.h).
#include <cublasLt.h>

#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>

#include "cuda/cublaslt_loader.h"
#include "vigil/base/result.h"

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

namespace vigil::cuda_probe {

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

// One C(m x n) = A^T B matmul with A stored k x m and B k x n, column-major ("TN": the layout
// cuBLASLt's fastest kernels use, and the one its FP8 kernels require), FP32 compute and scale,
// with the algorithm cuBLASLt's heuristic ranks first for it. `found` is false when it offers
// none for these types (or answers CUBLAS_STATUS_NOT_SUPPORTED).
struct TnMatmul {
  LtHandle handle;
  LtMatmulDesc desc;
  LtLayout a, b, c;
  cublasLtMatmulAlgo_t algo{};
  bool found = false;
};
// `deterministic`: only algorithms without a split-K reduction across thread blocks
// (CUBLASLT_REDUCTION_SCHEME_NONE), so a result is bitwise repeatable.
inline Result<TnMatmul> make_tn_matmul(const CublasLtApi& lt, cudaDataType in, cudaDataType out,
                                       std::uint64_t m, std::uint64_t n, std::uint64_t k,
                                       std::uint64_t workspace_bytes, bool deterministic) {
  TnMatmul mm;
  cublasLtHandle_t raw_handle = nullptr;
  VIGIL_CUBLAS_CHECK(lt.create(&raw_handle));
  mm.handle = LtHandle(raw_handle, {lt.destroy});
  cublasLtMatmulDesc_t raw_desc = nullptr;
  VIGIL_CUBLAS_CHECK(lt.matmul_desc_create(&raw_desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  mm.desc = LtMatmulDesc(raw_desc, {lt.matmul_desc_destroy});
  const cublasOperation_t trans_a = CUBLAS_OP_T, trans_b = CUBLAS_OP_N;
  VIGIL_CUBLAS_CHECK(lt.matmul_desc_set_attribute(mm.desc.get(), CUBLASLT_MATMUL_DESC_TRANSA,
                                                  &trans_a, sizeof trans_a));
  VIGIL_CUBLAS_CHECK(lt.matmul_desc_set_attribute(mm.desc.get(), CUBLASLT_MATMUL_DESC_TRANSB,
                                                  &trans_b, sizeof trans_b));
  const auto layout = [&](cudaDataType type, std::uint64_t rows,
                          std::uint64_t cols) -> Result<LtLayout> {
    cublasLtMatrixLayout_t l = nullptr;
    VIGIL_CUBLAS_CHECK(
        lt.matrix_layout_create(&l, type, rows, cols, static_cast<std::int64_t>(rows)));
    return LtLayout(l, {lt.matrix_layout_destroy});
  };
  VIGIL_TRY(mm.a, layout(in, k, m));
  VIGIL_TRY(mm.b, layout(in, k, n));
  VIGIL_TRY(mm.c, layout(out, m, n));

  cublasLtMatmulPreference_t raw_pref = nullptr;
  VIGIL_CUBLAS_CHECK(lt.matmul_preference_create(&raw_pref));
  LtPreference pref(raw_pref, {lt.matmul_preference_destroy});
  VIGIL_CUBLAS_CHECK(lt.matmul_preference_set_attribute(pref.get(),
                                                        CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                        &workspace_bytes, sizeof workspace_bytes));
  if (deterministic) {
    const std::uint32_t none = CUBLASLT_REDUCTION_SCHEME_NONE;
    VIGIL_CUBLAS_CHECK(lt.matmul_preference_set_attribute(
        pref.get(), CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &none, sizeof none));
  }
  cublasLtMatmulHeuristicResult_t heuristic{};
  int found = 0;
  const cublasStatus_t asked =
      lt.matmul_algo_get_heuristic(mm.handle.get(), mm.desc.get(), mm.a.get(), mm.b.get(),
                                   mm.c.get(), mm.c.get(), pref.get(), 1, &heuristic, &found);
  // NOT_SUPPORTED: no kernel for these types on this GPU, the same answer as none found.
  if (asked != CUBLAS_STATUS_NOT_SUPPORTED) VIGIL_CUBLAS_CHECK(asked);
  mm.found = asked == CUBLAS_STATUS_SUCCESS && found > 0;
  mm.algo = heuristic.algo;
  return Result<TnMatmul>(std::move(mm));  // nvcc does not move a converting return itself
}

// Enqueues D = A^T B (alpha 1, beta 0; C is D) on `stream`.
inline VoidResult run_tn_matmul(const CublasLtApi& lt, const TnMatmul& mm, const void* a,
                                const void* b, void* d, void* workspace,
                                std::uint64_t workspace_bytes, cudaStream_t stream) {
  const float alpha = 1.0f, beta = 0.0f;
  VIGIL_CUBLAS_CHECK(lt.matmul(mm.handle.get(), mm.desc.get(), &alpha, a, mm.a.get(), b, mm.b.get(),
                               &beta, d, mm.c.get(), d, mm.c.get(), &mm.algo, workspace,
                               workspace_bytes, stream));
  return ok_result();
}

}  // namespace vigil::cuda_probe
