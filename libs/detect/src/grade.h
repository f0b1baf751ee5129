#pragma once
// Judging one figure: the three baselines, drift, confirmation by repeats, and the message.
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "stats.h"
#include "vigil/detect/config.h"
#include "vigil/detect/detect.h"

namespace vigil::detect::detail {

// What one figure is compared with, and the deviations that make it warn / fail.
struct Baseline {
  std::string_view name;  // "peers" | "history" | "fleet"
  double centre = 0;
  double warn_at = 0;
  double fail_at = 0;
  int count = 0;  // data points behind the centre
  // History only: the unit's own ring of figures, whose spread is one run's noise; it lets the
  // mean of several runs confirm a fail (computed only for a fail with repeats).
  std::span<const double> ring;
};

// Median of the other units' figures; none with fewer than config.min_peers. The spread
// allowance uses the larger of the others' own spread and `pooled_spread` (relative; the
// fleet's typical spread between healthy units of one node), when known.
std::optional<Baseline> peers_baseline(const stats::SortedSkip& others, const Margins& margins,
                                       const DetectConfig& config,
                                       std::optional<double> pooled_spread);
// A unit's own history: `centre` from its `ring` of healthy figures (no spread allowance: the
// ring holds the unit's own run-to-run noise only, kept in Baseline::ring).
Baseline history_baseline(double centre, std::span<const double> ring, const Margins& margins);
// Median of the other nodes' figures (sorted); none with fewer than config.min_fleet.
std::optional<Baseline> fleet_baseline(const stats::SortedSkip& others, const Margins& margins,
                                       const DetectConfig& config);

// The total decline (a fraction > 0) when history + latest declines monotonically (Kendall's
// tau <= -drift_tau) by at least the warn margin; none otherwise.
std::optional<double> drift_decline(std::span<const double> ring, double latest,
                                    Direction direction, const Margins& margins,
                                    const DetectConfig& config);

// What grade() needs besides the baselines.
struct FigureToGrade {
  Direction direction = Direction::kHigherIsBetter;
  std::span<const double> repeats;  // figures to confirm a fail with (>= 2 needed)
  double first = 0;                 // the run's own figure (before its repeats)
  std::optional<double> drift;      // from drift_decline()
  double history_centre = 0;        // baseline value reported for a drift
  int history_count = 0;
  std::string prefix;  // message head before the measurement: "gpu3 ", "8-gpu median ", ""
};

// Fills v.status, baseline, baseline_value, deviation, counts, drifting and confirmed from
// v's identity and v.value, and v.message for warn and fail: the worst baseline wins; a fail
// confirmed against any failing baseline is preferred over an unconfirmed one.
void grade(Verdict& v, std::span<const Baseline> baselines, const FigureToGrade& figure);

}  // namespace vigil::detect::detail
