#pragma once
// How a CUDA probe's per-GPU outcomes become one CheckResult. Pure C++ (no CUDA calls), so the
// status rules are unit-tested on machines without a GPU.
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "vigil/checks/check.h"
#include "vigil/detect/config.h"
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

// Confirmation inside the job (docs/detection.md): a GPU whose judged figure (cfg.metrics) lies
// past the warn margin below its peers (vigil::detect::is_suspicious) is measured again.
// Returns gpu -> repeats: two per suspicious GPU, worst first, within a budget of
// max(2, gpus / 4) extra probe runs (a quarter more time on an 8-GPU node at most). When most
// GPUs break the SKU bound of a judged figure (a whole node slow: no peer stands out), every
// GPU gets two repeats, so the node's level can be confirmed in one report.
std::map<int, int> plan_repeats(const CheckResult& r, const detect::DetectConfig& cfg);

// Appends the figures `again` measured on `gpu` to the repeats of r's matching measurements.
void add_repeats(CheckResult& r, const CheckResult& again, int gpu);

}  // namespace vigil::cuda_probe
