#pragma once
// gpu_sdc's inputs, plan and fingerprint (docs/cuda-probes.md, "Silent data corruption"): pure
// arithmetic shared by the kernels, the CPU reference and the unit tests. Compiles as plain C++
// and under nvcc (VIGIL_HD).
#include <cstdint>
#include <cstring>
#include <string_view>

#include "cuda/probe_math.h"

namespace vigil::cuda_probe {

// The precisions gpu_sdc multiplies in: each through the tensor cores, each with FP32
// accumulation and FP32 output. FP8 (E4M3) needs compute capability 8.9 or later (cuBLASLt:
// "FP8 ... requires compute capability 8.9 or higher", and the "TN" layout gpu_sdc uses anyway).
enum class SdcPrecision : std::uint8_t { kBf16, kFp16, kFp8 };
inline constexpr SdcPrecision kSdcPrecisions[] = {SdcPrecision::kBf16, SdcPrecision::kFp16,
                                                  SdcPrecision::kFp8};
inline std::string_view precision_name(SdcPrecision p) {
  switch (p) {
    case SdcPrecision::kBf16:
      return "bf16";
    case SdcPrecision::kFp16:
      return "fp16";
    case SdcPrecision::kFp8:
      return "fp8";
  }
  return "?";
}
inline bool precision_supported(SdcPrecision p, int cc_major, int cc_minor) {
  if (p == SdcPrecision::kFp8) return cc_major > 8 || (cc_major == 8 && cc_minor >= 9);
  return cc_major >= 8;  // BF16 tensor cores from Ampere (8.0) on
}

// The exact phase's inputs: integers in [-4, 4], exact in BF16, FP16 and FP8 E4M3 (3 mantissa
// bits: every integer up to 16). Every product is then an integer of magnitude <= 16 and every
// partial sum of k <= 2^20 of them stays below 2^24, so an FP32 accumulator holds each one
// exactly whatever the order of additions: a correct GPU gives exactly the integer result, in
// any algorithm, and one integer reference (CUDA cores, int32) checks every element bitwise.
// (Hopper's FP8 accumulators keep fewer bits; the sums here stay below 2^12 in practice:
// docs/cuda-probes.md, "FP8 accumulation".)
VIGIL_HD inline int sdc_int_input(std::uint64_t seed, std::uint64_t index) {
  return static_cast<int>(splitmix64(index ^ (seed << 40)) % 9) - 4;
}
inline constexpr std::int64_t kSdcMaxExactK = std::int64_t{1} << 20;

// The repeat phase's inputs: values in [-1, 1) with every mantissa bit in play (rounded to the
// precision by the fill kernel), so every adder and multiplier bit of the datapath switches.
VIGIL_HD inline float sdc_real_input(std::uint64_t seed, std::uint64_t index) {
  const auto bits = static_cast<std::uint32_t>(splitmix64(index ^ (seed << 40)) >> 40);
  return static_cast<float>(bits) * (2.0f / 16777216.0f) - 1.0f;
}

// An order-free fingerprint of a result: the sum (mod 2^64) over elements of a mix of each
// element's index and bits, so a parallel reduction gives the same value however it is split,
// and any one flipped bit changes it.
VIGIL_HD inline std::uint64_t sdc_mix(std::uint64_t index, std::uint32_t bits) {
  return splitmix64((index << 32) ^ bits ^ 0x5DC0000000000000ull);
}
inline std::uint32_t float_bits(float f) {
  std::uint32_t b = 0;
  std::memcpy(&b, &f, sizeof b);
  return b;
}

struct SdcPlan {
  std::int64_t m = 8192, n = 8192, k = 8192;  // C = A^T B, A k x m, B k x n (TN)
  int repeats = 0;   // repeat-phase GEMMs after the first, each compared with it bitwise
  int cpu_tile = 0;  // rows and columns of the exact result recomputed on the CPU
};
// 8192^3 (one GEMM is 1.1 TFLOP: ~1.6 ms at BF16 on an H200), 100 repeats per precision (1,000
// in the qualify suite) and a 64 x 64 CPU tile (33 M multiply-adds on the CPU).
inline SdcPlan sdc_plan(bool qualify = false) {
  return SdcPlan{8192, 8192, 8192, qualify ? 1000 : 100, 64};
}

}  // namespace vigil::cuda_probe
