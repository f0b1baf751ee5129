#pragma once
// The BF16 GEMM inputs gpu_gemm times and gpu_soak runs for minutes (CUDA builds only).
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "vigil/base/result.h"

namespace vigil::cuda_probe {

// Fills `elements` BF16 values at `p` with pseudo-random values in [-0.5, 0.5) from `seed`:
// realistic switching activity (all-zero inputs draw less power and run faster than real work).
VoidResult fill_bf16_uniform(void* p, std::size_t elements, std::uint64_t seed, cudaStream_t s);

}  // namespace vigil::cuda_probe
