#pragma once
// Re-qualifying a drain on performance alone within minutes (docs/recheck.md "Re-qualifying a
// performance drain"). A healthy node slowed by a neighbour's job, a noisy host or a heat wave
// for longer than the checker's spaced repeats is drained on performance alone; waiting for the
// hourly re-checks (resume_after of them) costs it two hours. The drainer lists such nodes as due
// for a held re-check `policy.requalify_after_s` after the drain, and vigil-submit
// --rechecks-from runs one for each (a CronJob every few minutes). Only the re-checks' passes
// resume the node, as for any drain; a node still slow stays drained and the list lets it go
// once the drain is older than `policy.requalify_window_s`, re-checking it less and less often
// meanwhile. What it saves is measured in the
// fleet simulation (docs/benchmarks.md "What a false drain costs").
#include <cstdint>
#include <optional>
#include <string>

#include "vigil/drainer/config.h"
#include "vigil/drainer/policy.h"

namespace vigil::drainer {

// Every check that drove the drain is a performance probe (its catalog entry has figures that
// detect judges: GEMM, HBM, PCIe bandwidth, all_reduce) and failed for being slow (a slow verdict,
// a floor of one of its figures, a fabric localization) or has passed since; false without
// driving checks.
bool performance_only(const NodeRecord& s);

// Why `s` is due for a re-qualifying re-check at `now`, or nullopt: drained by Vigil on
// performance alone, no repair under way, the drain at least requalify_after_s and at most
// requalify_window_s old; and either its driving checks passed once since and it was not listed
// since (the confirming re-check, at once), or its last try (the driving checks' last run, or
// `last_listed`, when the drainer last listed it) is half as old as the drain was then: each try
// at 1.5 times the age of the one before, from requalify_after_s.
std::optional<std::string> requalify_due(const NodeRecord& s, const PolicyConfig& p, int64_t now,
                                         int64_t last_listed = 0);

// One node the drainer wants re-checked now (GET /v1/rechecks).
struct RecheckDue {
  std::string node;
  std::string why;
  // The suite the re-check must run: the qualify gate's for a node it holds (qualify_gate.h),
  // else the one its driving checks need (suite_to_run: "qualify" for gpu_soak), else "" (the
  // re-checking CronJob's own).
  std::string suite;
};

}  // namespace vigil::drainer
