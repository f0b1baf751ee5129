#pragma once
// cuBLASLt, opened with dlopen() by the GEMM probe's child only. Linking libcublasLt costs
// every vigil-check process ~0.6-1.0 s and ~200 MB of resident memory at start (its static
// initialisers; measured 2026-11-23 with an empty program linked against it), which the hooks
// (prolog, epilog, HealthCheckProgram) cannot afford; only gpu_gemm needs it.
#include <cublasLt.h>

#include "vigil/base/result.h"

namespace vigil::cuda_probe {

// The entry points gpu_gemm calls, typed from cuBLASLt's own declarations.
struct CublasLtApi {
  decltype(&cublasLtGetStatusName) get_status_name = nullptr;
  decltype(&cublasLtGetStatusString) get_status_string = nullptr;
  decltype(&cublasLtCreate) create = nullptr;
  decltype(&cublasLtDestroy) destroy = nullptr;
  decltype(&cublasLtMatmulDescCreate) matmul_desc_create = nullptr;
  decltype(&cublasLtMatmulDescDestroy) matmul_desc_destroy = nullptr;
  decltype(&cublasLtMatmulDescSetAttribute) matmul_desc_set_attribute = nullptr;
  decltype(&cublasLtMatrixLayoutCreate) matrix_layout_create = nullptr;
  decltype(&cublasLtMatrixLayoutDestroy) matrix_layout_destroy = nullptr;
  decltype(&cublasLtMatmulPreferenceCreate) matmul_preference_create = nullptr;
  decltype(&cublasLtMatmulPreferenceDestroy) matmul_preference_destroy = nullptr;
  decltype(&cublasLtMatmulPreferenceSetAttribute) matmul_preference_set_attribute = nullptr;
  decltype(&cublasLtMatmulAlgoGetHeuristic) matmul_algo_get_heuristic = nullptr;
  decltype(&cublasLtMatmul) matmul = nullptr;
};

// dlopen()s libcublasLt.so.<CUBLAS_VER_MAJOR> (the major version Vigil was compiled against)
// once per process and resolves every entry point. Error: dlerror()'s text, naming the library
// or the missing symbol. The library stays loaded for the life of the process.
Result<const CublasLtApi*> load_cublaslt();

}  // namespace vigil::cuda_probe
