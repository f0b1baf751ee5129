#pragma once
// Confirmation of a node-level all_reduce figure inside the job (docs/detection.md). An
// all_reduce has no peers on the node, so its expectation is the node's own recent healthy
// busbw (kept in the check's state file) or, lacking three of those, its SKU bound. A suspicious
// run is repeated so the drainer can tell a slow link (every run slow: a confirmed fail drains
// after one report) from a transient dip (the repeats are healthy).
#include <span>

#include "vigil/checks/check.h"
#include "vigil/detect/config.h"

namespace vigil {

// How many times to run the all_reduce of `r` again: 2 when its busbw breaks its SKU bound
// (warn or fail) or lies past the warn margin below the median of `recent` (>= 3 figures);
// 0 when the figure is fine, when the check is not judged by `cfg`, or when the run did not
// produce a figure worth confirming (error, timeout, wrong results).
int plan_allreduce_repeats(const CheckResult& r, std::span<const double> recent,
                           const detect::DetectConfig& cfg);

// Whether the figure of `r` (the median of its busbw and repeats) may join the node's recent
// healthy figures: the check passed and the figure is not past the fail margin below the median
// of `recent` (a sick link never becomes its own expectation).
bool learn_allreduce_figure(const CheckResult& r, std::span<const double> recent,
                            const detect::DetectConfig& cfg);

// The busbw measurement of `r`, nullptr when the run measured none.
const Measurement* busbw_measurement(const CheckResult& r);
Measurement* busbw_measurement(CheckResult& r);

}  // namespace vigil
