#pragma once
// DetectConfig: which performance figures the fail-slow engine judges, how far below a baseline
// is `warn` or `fail`, and how much data each baseline needs. Parse -> defaults -> validate:
// config_from_json() fills every missing field from defaults() and rejects unknown ones.
// docs/detection.md explains each default and the simulation that chose the margins.
#include <cstdint>
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "vigil/base/enum_names.h"
#include "vigil/base/result.h"

namespace vigil::detect {

enum class Direction { kHigherIsBetter, kLowerIsBetter };

inline constexpr EnumName<Direction> kDirectionNames[] = {{Direction::kHigherIsBetter, "higher"},
                                                          {Direction::kLowerIsBetter, "lower"}};
inline std::string_view to_string(Direction d) { return name_of(kDirectionNames, d); }

// Fractions of the baseline: deviation >= warn is `warn`, >= fail is `fail`. 0 < warn < fail < 1.
struct Margins {
  double warn = 0.04;
  double fail = 0.08;
};

// One performance figure: measurement `measurement` of check `check` ("*" = any measurement of
// the check whose unit is `unit`). `kind` names its Margins ("gemm", "hbm", "pcie", "allreduce").
struct MetricSpec {
  std::string check;
  std::string measurement;
  // With "*": which measurements of the check are judged (required). Otherwise the expected
  // unit: a figure in another unit is an error, never a verdict ("" = any unit, but always the
  // same one per figure).
  std::string unit;
  std::string kind;
  Direction direction = Direction::kHigherIsBetter;
};

struct DetectConfig {
  std::vector<MetricSpec> metrics;
  std::map<std::string, Margins> margins;  // by MetricSpec::kind

  bool use_peers = true;    // the node's other GPUs/ports in the same report
  bool use_history = true;  // the unit's own recent healthy figures
  bool use_fleet = true;    // the latest healthy figure of every node of the SKU

  int min_peers = 3;       // other units needed for a peers verdict
  int history_window = 8;  // history ring capacity per unit
  int min_history = 3;     // history values needed for a history verdict
  int min_fleet = 20;      // other nodes of the SKU needed for a fleet verdict
  // Peers and fleet compare a part with other parts, whose natural spread (silicon, PCIe
  // topology, cabling) adds to any fault: their margins are the kind's margins times this, so
  // that a 5% fault on a part born 2% slow is left to history (the part against itself).
  double cross_margin_scale = 1.5;
  // A baseline's fail threshold is max(fail margin, k * spread / centre), spread = 1.4826 *
  // MAD, so a naturally wide distribution does not drain its tail; its warn threshold is
  // max(warn margin, (k - 1) * spread / centre). Peers: the larger of the other units' spread and
  // the fleet's pooled spread between healthy units of one node; without the pooled spread (fewer
  // than min_fleet nodes) 2 * peer_spread_k, as the MAD of a few units is often far too low.
  // 0 turns the allowance off.
  double peer_spread_k = 4.5;
  double fleet_spread_k = 3.0;
  // Drift: Kendall's tau of (history, latest) <= -drift_tau and a total decline >= warn margin.
  double drift_tau = 0.6;
  std::int64_t forget_after_s = 7 * 24 * 3600;  // nodes not seen this long are dropped

  // The default figures (the check catalog's metrics, vigil/report/check_catalog.h) and margins.
  static DetectConfig defaults();
  // Every problem as "field: message"; empty when valid.
  std::vector<std::string> validate() const;
  // The spec judging (check, measurement, unit), or nullptr when the figure is not judged.
  const MetricSpec* find_metric(std::string_view check, std::string_view measurement,
                                std::string_view unit) const;
  // Margins of spec.kind (validate() guarantees they exist).
  const Margins& margins_for(const MetricSpec& spec) const;
  // The margins against other parts (peers, fleet): `m` x cross_margin_scale.
  Margins cross_margins(const Margins& m) const;
};

// JSON form (snake_case keys, every key optional, unknown keys rejected):
// {"margins": {"gemm": {"warn": 0.03, "fail": 0.06}}, "metrics": [{"check": "gpu_gemm",
//  "measurement": "*", "unit": "TFLOP/s", "kind": "gemm", "direction": "higher"}],
//  "baselines": {"peers": true, "history": true, "fleet": true}, "min_peers": 3, ...}
// "margins" entries merge over the defaults; "metrics", when given, replaces the default list.
// The error lists every "field: message" found, joined with "; ".
Result<DetectConfig> config_from_json(const nlohmann::json& j);
nlohmann::json to_json(const DetectConfig& c);

// The site's detection settings, one file both sides read (docs/detection.md "One detection
// configuration"): `detection.json` beside the SKU threshold files, which vigil-check plans its
// confirmation repeats with and the drainer's `detection.engine_file` names. Its JSON form is
// config_from_json's; errors name the file.
inline constexpr const char* kDetectionFileName = "detection.json";
Result<DetectConfig> load_config_file(const std::string& path);

}  // namespace vigil::detect
