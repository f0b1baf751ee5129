#pragma once
// The passive suite of the Slurm hooks (`vigil-check hook`, docs/hooks.md), run in ONE forked
// child that keeps NVML initialised for the whole suite: NVML is reference counted, so each
// check's own nvmlInit / nvmlShutdown is then a counter bump instead of a full driver attach
// (hundreds of milliseconds on an 8-GPU node). The child detects the SKU too, with the same
// attach. Results stream back one per line; when the time box kills the child, the checks
// that had not finished are `error` (VIGIL-CHECK-TIMEOUT), never `fail`.
#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "vigil/checks/check.h"
#include "vigil/checks/registry.h"
#include "vigil/checks/sku.h"

namespace vigil {

struct PassiveRun {
  std::vector<CheckResult> results;
  const SkuConfig* sku = nullptr;  // detected in the child (or ctx.sku when given)
  std::string sku_note;            // why no SKU, when none
};

// selection: the optional checks (passive_checks). skus: detect the SKU when ctx.sku is null.
PassiveRun run_passive_suite(const CheckContext& ctx, const SkuSet* skus,
                             PassiveSelection selection,
                             std::chrono::steady_clock::time_point deadline,
                             const std::function<void(const CheckResult&)>& progress);

}  // namespace vigil
