#pragma once
// How a CUDA probe's per-GPU outcomes become one CheckResult. Pure C++ (no CUDA calls), so the
// status rules are unit-tested on machines without a GPU.
#include <string>
#include <string_view>
#include <vector>

#include "vigil/checks/check.h"
#include "vigil/base/result.h"

namespace vigil::cuda_probe {

// A GPU that could not be measured: the failing call and CUDA's error.
struct GpuFailure {
  int gpu = 0;
  Error error;
};

// Turns the measurements a probe added to `r` (r.check set) on `gpus` GPUs into the result:
//   an uncorrectable ECC error on any GPU -> fail VIGIL-CUDA-ECC-UNCORRECTABLE;
//   a measurement outside its SKU threshold -> fail/warn VIGIL-CUDA-<MEASUREMENT> (finalize),
//     with unmeasured GPUs appended to the message;
//   otherwise any unmeasured GPU           -> error VIGIL-CUDA-CALL naming the GPU and call;
//   otherwise pass, message "<n> GPUs: <name> min .. (gpu i), max .." plus "unknown SKU:
//     figures only" when there is no SKU, and the operator notes.
CheckResult finish_probe_result(const CheckContext& ctx, CheckResult r, int gpus,
                                const std::vector<GpuFailure>& failures,
                                const std::vector<std::string>& notes);

// memtest_errors for one GPU. Any mismatch fails on every SKU (an absolute finding): without a
// SKU threshold the measurement gets `<= 0`. `detail` says where the first mismatch was.
void add_memtest_errors(CheckResult& r, const CheckContext& ctx, int gpu,
                        unsigned long long mismatches, unsigned long long tested_mib,
                        std::string_view detail);

}  // namespace vigil::cuda_probe
