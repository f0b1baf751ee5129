#pragma once
// vigil::detect — the fail-slow engine. Judges performance figures (GEMM, HBM, PCIe, all_reduce)
// against three relative baselines instead of absolute per-SKU floors:
//   peers   — the node's other GPUs/ports in the same report (median of the others),
//   history — the unit's own recent healthy figures (median of a bounded ring; plus drift),
//             for a GPU at the node's current level,
//   fleet   — the latest healthy figure of every other node of the SKU (median, MAD spread).
// Pure: no I/O, no threads, no clock; time comes in as Unix seconds. Deterministic: the same
// sequence of judge() calls gives the same verdicts and the same snapshot(). docs/detection.md.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "vigil/base/result.h"
#include "vigil/detect/config.h"
#include "vigil/report/report.h"

namespace vigil::detect {

namespace detail {
struct EngineState;  // src/state.h
}  // namespace detail

enum class UnitKind { kGpu, kPort, kNode };
inline constexpr EnumName<UnitKind> kUnitKindNames[] = {
    {UnitKind::kGpu, "gpu"}, {UnitKind::kPort, "port"}, {UnitKind::kNode, "node"}};
inline std::string_view to_string(UnitKind k) { return name_of(kUnitKindNames, k, "node"); }

// A figure and the re-measurements the checker took of it (a suspicious probe is repeated).
struct Observation {
  double value = 0;
  std::vector<double> repeats;
};

// One performance figure of one unit, the engine's input.
struct Sample {
  std::string node;
  std::string sku;
  std::string check;        // "gpu_gemm"
  std::string measurement;  // "gemm_bf16_tflops"
  UnitKind unit_kind = UnitKind::kNode;
  std::string unit_id;  // "gpu3", "mlx5_0/1" (a GPU's port: "gpu3:nvlink2"), or "node"
  std::string unit;     // "TFLOP/s"
  Observation observed;
  // The figure broke its absolute floor in that run: judged, but never learned as healthy.
  bool from_failed_run = false;
};

// The report's judged figures (config.metrics), in report order. Checks with status `error`
// are left out: a run that could not measure proves nothing. Each sample carries the
// measurement's `repeats` (the checker re-measured a suspicious figure); attach_repeats()
// sets them for samples built another way.
std::vector<Sample> samples_from_report(const NodeReport& report, const DetectConfig& config);

// Sets the repeats of the sample (check, measurement, unit_id); false when there is none.
bool attach_repeats(std::vector<Sample>& samples, std::string_view check,
                    std::string_view measurement, std::string_view unit_id,
                    std::vector<double> repeats);

// For vigil-check: should unit `index` of `unit_values` (one figure per GPU or port, same
// measurement, same run) be measured again? Peers baseline only, against the warn margin;
// false with fewer than `min_peers` other units. A non-finite figure is always suspicious.
bool is_suspicious(std::span<const double> unit_values, std::size_t index, const Margins& margins,
                   Direction direction = Direction::kHigherIsBetter, int min_peers = 3);
// Node-level figures (all_reduce) have no peers: compare with an expected healthy figure.
bool is_suspicious(double value, double expected, const Margins& margins,
                   Direction direction = Direction::kHigherIsBetter);

struct Verdict {
  std::string check;
  std::string measurement;
  UnitKind unit_kind = UnitKind::kNode;
  std::string unit_id;  // "node" for node figures and for the node level of per-GPU figures
  std::string unit;
  double value = 0;  // the judged figure: the median of the figure and its repeats
  int repeats = 0;

  Status status = Status::kPass;  // pass, warn or fail
  std::string baseline;           // "peers" | "history" | "fleet" | "" (no baseline had data)
  double baseline_value = 0;
  double deviation = 0;  // (baseline - value) / baseline for higher-is-better; > 0 = slower
  int peers = 0;         // data behind each baseline (0 = not used)
  int history = 0;
  int fleet = 0;
  bool drifting = false;  // warn from a monotone decline across the history window
  // fail, >= 2 repeats, and every repeat past the same baseline's threshold, or (history, >= 5
  // figures) the mean of all runs past it by one standard error (docs/detection.md)
  bool confirmed = false;
  // For warn and fail (empty on pass), short enough for a Slurm reason:
  // "gpu3 gemm_bf16_tflops 712 TFLOP/s, 11% below its 7 peers (801)"
  std::string message;
};

struct ReportVerdicts {
  std::string node;
  std::string sku;
  std::int64_t at = 0;
  // One per judged figure and unit, pass included, in report order; per-GPU/port figures are
  // followed by one verdict on the node's level (unit_id "node": the median of its units,
  // against the node's own history and the fleet) when either has data.
  std::vector<Verdict> verdicts;
  // The worst verdict of each check (fail > warn > pass, then confirmed, then deviation).
  std::vector<Verdict> worst_by_check;

  Status worst() const;
  const Verdict* worst_for(std::string_view check) const;
};

// kNo: judge without learning, for reports of drained nodes and rechecks.
enum class Learn { kYes, kNo };

// The healthy figures the engine keeps for one SKU, per judged figure: what `vigil-drainer
// calibrate` proposes absolute floors from (docs/thresholds.md, "Calibration"). Only figures the
// engine learned (never a failed run's, never a drained node's re-check) are in the rings.
struct HealthyFigures {
  std::string check;
  std::string measurement;
  std::string unit;
  UnitKind kind = UnitKind::kNode;
  std::size_t nodes = 0;  // nodes with at least one healthy figure of it
  std::size_t runs = 0;   // healthy figures behind it: every unit's ring, every node
  double centre = 0;      // median of those figures
  double spread = 0;      // 1.4826 x MAD of those figures
  double lowest = 0;
};

// A proposed floor for a higher-is-better figure (>= bounds), or why there is none.
struct ProposedFloor {
  double fail = 0;
  double warn = 0;
  std::string refused;  // non-empty: not enough data, and why
};
// fail = centre x (1 - f), warn = centre x (1 - w), f = max(2 x the kind's fail margin,
// 5 x spread / centre), w = max(2 x the warn margin, 3 x spread / centre): never tighter than
// twice what the relative engine already drains on, and five robust sigmas below the fleet's
// centre, so a healthy tail is not cut (docs/thresholds.md). Refused below min_nodes nodes or
// min_runs figures.
ProposedFloor propose_floor(const HealthyFigures& f, const Margins& margins, std::size_t min_nodes,
                            std::size_t min_runs);

struct EngineSize {
  std::size_t nodes = 0;
  std::size_t history_units = 0;
  std::size_t history_values = 0;
  std::size_t fleet_entries = 0;
};

class Engine {
 public:
  // Throws std::invalid_argument listing config.validate() when the configuration is invalid.
  explicit Engine(DetectConfig config);
  ~Engine();
  Engine(Engine&&) noexcept;
  Engine& operator=(Engine&&) noexcept;
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Judges the report's figures, then (Learn::kYes) learns the ones not flagged `fail` and not
  // from_failed_run into history and fleet. Drops nodes not seen for forget_after_s first.
  // An invalid figure (NaN, infinite, negative, a unit that differs from the one seen before,
  // a duplicate unit) is an Error naming it; nothing is judged or learned then.
  Result<ReportVerdicts> judge(const NodeReport& report, std::int64_t now,
                               Learn learn = Learn::kYes);
  // Same, for samples of one node (e.g. samples_from_report() plus attach_repeats()).
  Result<ReportVerdicts> judge(const std::vector<Sample>& samples, std::int64_t now,
                               Learn learn = Learn::kYes);

  // Forgets the node's history and fleet figures (hardware replaced, node reimaged).
  void reset_node(const std::string& node);

  // Everything judge() learned, as JSON; restore() gives an engine that judges identically.
  nlohmann::json snapshot() const;
  // Histories longer than config.history_window keep their latest values.
  static Result<Engine> restore(const nlohmann::json& snapshot, DetectConfig config);

  const DetectConfig& config() const { return config_; }
  EngineSize size() const;
  // Every judged figure of `sku` with at least one healthy figure, in (check, measurement) order.
  std::vector<HealthyFigures> healthy_figures(std::string_view sku) const;

 private:
  DetectConfig config_;
  std::unique_ptr<detail::EngineState> state_;
};

}  // namespace vigil::detect
