#pragma once
// How a CUDA probe's per-GPU outcomes become one CheckResult. Pure C++ (no CUDA calls), so the
// status rules are unit-tested on machines without a GPU.
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "vigil/base/result.h"
#include "vigil/checks/check.h"
#include "vigil/detect/config.h"

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

// A count of wrong words for one GPU (memtest_errors, sanity_errors). Any mismatch fails on
// every SKU (an absolute finding): without a SKU threshold the measurement gets `<= 0`.
// `tested` says what was checked ("1024 MiB"), `detail` where the first mismatch was.
void add_mismatches(CheckResult& r, const CheckContext& ctx, int gpu, std::string_view measurement,
                    unsigned long long mismatches, std::string_view tested,
                    std::string_view detail);

// Each GPU's recent healthy figures, oldest first: (measurement, gpu) -> figures. vigil-check
// keeps them in the probe's state file under gpu_history_key(); the fleet simulation in memory.
using GpuHistory = std::map<std::pair<std::string, int>, std::vector<double>>;
std::string gpu_history_key(std::string_view measurement, int gpu);  // "hbm_bandwidth/gpu3"

// Confirmation inside the job (docs/detection.md): a GPU whose judged figure (cfg.metrics) lies
// past the peers warn margin (the kind's x cross_margin_scale) below its peers — unless it
// matches its own history and is not past the peers fail margin (healthy slow silicon) — or past
// the warn margin below the median of its own history (>= 3 figures), is measured again. Returns
// gpu -> repeats: two per suspicious GPU, worst first, within a budget of max(4, gpus / 2) extra
// probe runs (two GPUs of eight: half more time of that probe on an 8-GPU node at most). When most
// GPUs break the SKU bound of a judged figure or lie past the warn margin below their own history
// (a whole node slow: no peer stands out), every GPU gets two repeats, so the node's level can be
// confirmed in one report.
std::map<int, int> plan_repeats(const CheckResult& r, const detect::DetectConfig& cfg,
                                const GpuHistory& history = {});

// A figure that may join its GPU's history.
struct LearnedFigure {
  std::string measurement;
  int gpu = 0;
  double value = 0;  // the median of the run and its repeats
};
// The judged figures of `r` that may join their GPU's history: within the SKU bound, and not
// past the fail margin below the GPU's own history (>= 3 figures) nor below its peers, so a sick
// GPU never becomes its own expectation.
std::vector<LearnedFigure> learnable_figures(const CheckResult& r, const GpuHistory& history,
                                             const detect::DetectConfig& cfg);

// Appends the figures `again` measured on `gpu` to the repeats of r's matching measurements.
void add_repeats(CheckResult& r, const CheckResult& again, int gpu);

}  // namespace vigil::cuda_probe
