#pragma once
// gpu_sdc's judgement (docs/cuda-probes.md, "Silent data corruption"): what each GPU's GEMMs
// showed, compared across GPUs, into measurements. Pure C++ (no CUDA calls), so every verdict is
// unit-tested on machines without a GPU; the kernels that produce an SdcOutcome are in
// gpu_sdc.cu.
#include <cstdint>
#include <string>
#include <vector>

#include "cuda/sdc_math.h"
#include "vigil/checks/check.h"

namespace vigil::cuda_probe {

// A wrong element: where, what the GPU gave and what was expected.
struct SdcElement {
  std::int64_t row = 0, col = 0;
  float got = 0, want = 0;
};
std::string describe(const SdcElement& e);  // "(row 17, col 4000): 12.5, expected 12.25"

// One GPU's GEMMs in one precision. `gpu` is the label reports use (NVML index).
struct SdcOutcome {
  int gpu = 0;
  SdcPrecision precision = SdcPrecision::kBf16;
  // Exact phase: elements of the integer-input result not bitwise equal to the integer reference
  // computed on the CUDA cores, and of its corner tile not equal to the CPU's.
  std::uint64_t exact_wrong = 0;
  std::uint64_t cpu_wrong = 0;
  SdcElement exact_first;
  // Repeat phase: values that differed from the first result, summed over the repeats (an
  // element that changes in every repeat counts once per repeat).
  int repeats = 0;
  std::uint64_t repeat_wrong = 0;
  SdcElement repeat_first;
  // The first repeat-phase result's fingerprint (sdc_mix), and what must be equal for two GPUs'
  // results to be comparable bit for bit: compute capability, SM count and cuBLASLt's algorithm
  // (cuBLAS, "Results reproducibility": bitwise equal on GPUs of one architecture and SM count).
  std::uint64_t fingerprint = 0;
  std::string signature;
};

// GPUs whose result differs from the others' among GPUs of one precision and signature.
struct SdcOddOne {
  int gpu = 0;
  SdcPrecision precision = SdcPrecision::kBf16;
  int reference_gpu = 0;  // a GPU of the majority, whose result the odd one is diffed against
};
struct SdcUndecided {
  SdcPrecision precision = SdcPrecision::kBf16;
  std::vector<int> gpus;  // two or more results disagree and no strict majority says which
};
struct SdcCrossGpu {
  std::vector<SdcOddOne> odd;
  std::vector<SdcUndecided> undecided;
};
// Compares the fingerprints of every (precision, signature) group of at least two GPUs: a
// fingerprint held by more than half of the group (and by at least two GPUs) is the right one and
// every other GPU is odd; otherwise, when they differ, the group is undecided.
SdcCrossGpu compare_across_gpus(const std::vector<SdcOutcome>& outcomes);
// False when two or more GPUs ran and yet no two of them share a precision and signature: the
// vote across GPUs then compares nothing, which the result says.
bool any_comparable(const std::vector<SdcOutcome>& outcomes);

// An odd GPU's result diffed element by element against its reference GPU's.
struct SdcCrossDiff {
  SdcOddOne odd;
  std::uint64_t wrong = 0;
  SdcElement first;
};

// Adds to `r`, per GPU, `sdc_mismatches` (count; any fails, on every SKU: a wrong result is a
// fault whatever the model: per precision the exact phase's wrong elements (the larger of the
// whole-result and the CPU tile's count: the tile is a part of the result), the repeat phase's
// changed values, and the elements that differ from the majority's result) and, per GPU of an
// undecided group, `sdc_unresolved` (count of GPUs it disagrees with; warns only: with no majority
// Vigil cannot say which GPU is wrong). The message names the GPU, the precision, the phase and the
// first wrong element.
void judge_sdc(CheckResult& r, const CheckContext& ctx, const std::vector<SdcOutcome>& outcomes,
               const SdcCrossGpu& cross, const std::vector<SdcCrossDiff>& diffs,
               std::int64_t elements);

}  // namespace vigil::cuda_probe
