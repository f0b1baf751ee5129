#pragma once
// `vigil-drainer calibrate`: propose a SKU's performance floors from the fleet's own healthy
// figures (the detection engine's history), as a reviewed diff of its thresholds file
// (docs/thresholds.md, "Calibration"). The rewrite is pure text in, text out, so it is tested
// without a drainer; the figures come from a running service (GET /v1/calibration/{sku}) or the
// state dir.
#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "vigil/base/result.h"
#include "vigil/detect/config.h"
#include "vigil/detect/detect.h"

namespace vigil::drainer {

nlohmann::json to_json(const detect::HealthyFigures& f);
Result<std::vector<detect::HealthyFigures>> healthy_figures_from_json(const nlohmann::json& j);

struct CalibrationOptions {
  std::size_t min_nodes = 10;    // nodes with healthy figures behind a floor
  std::size_t min_figures = 50;  // healthy figures behind it
  std::string date;              // "2026-11-26", stamped into `calibrated`
};

struct CalibrationLine {
  std::string check, measurement;
  int line = 0;  // 1-based, in the file
  std::string before, after;
};

struct CalibrationPlan {
  std::string text;  // the file with every proposal applied
  std::vector<CalibrationLine> changes;
  std::vector<std::string> notes;  // per figure: what was proposed, or why not
  std::string diff;                // unified diff (zero context) of the changes
};

// Rewrites the `>=` bounds of `sku_text` (a thresholds file; `file` names it in the diff) for
// which `figures` has a proposal: fail and warn from detect::propose_floor with the kind's
// margins in `cfg`, `unconfirmed: true` dropped, `calibrated: "<date> from N nodes, M figures,
// median X unit, spread Y%"` added, the shipped bounds kept in the comment. Other lines are
// untouched. An error names the file when it has no `sku:` equal to `sku` or no thresholds.
Result<CalibrationPlan> plan_calibration(const std::string& sku_text, const std::string& file,
                                         const std::string& sku,
                                         const std::vector<detect::HealthyFigures>& figures,
                                         const detect::DetectConfig& cfg,
                                         const CalibrationOptions& opt);

}  // namespace vigil::drainer
