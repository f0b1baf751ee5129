#pragma once
// Judging one figure of one report (all its units) against what was learned before, and
// deciding what of it to learn.
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "state.h"
#include "vigil/detect/config.h"
#include "vigil/detect/detect.h"

namespace vigil::detect::detail {

// The samples of one figure of one report: one per unit.
struct Group {
  KeyId key;
  const MetricSpec* spec = nullptr;
  std::vector<const Sample*> samples;
  std::vector<double> figures;  // per sample: the median of its value and repeats
};

struct FleetLearning {
  KeyId key;
  double value = 0;
  std::optional<double> unit_spread;
};

struct HistoryLearning {
  const KeyId* key = nullptr;  // the Group's, alive until the learning is applied
  std::string unit_id;
  double value = 0;
};

// What judge() learns once every figure of the report is judged.
struct Learning {
  std::vector<HistoryLearning> history;
  std::vector<FleetLearning> fleet;
  std::map<KeyId, std::string> units;
};

// Appends the group's verdicts to out.verdicts (one per unit, then for per-GPU/port figures
// one node-level verdict when history or fleet has data) and what to learn to `learn`.
void judge_group(const Group& g, const std::string& node, const std::string& sku,
                 const EngineState& state, const DetectConfig& config, ReportVerdicts& out,
                 Learning& learn);

}  // namespace vigil::detect::detail
