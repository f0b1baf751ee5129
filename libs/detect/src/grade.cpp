#include "grade.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "stats.h"
#include "vigil/base/strings.h"

namespace vigil::detect::detail {

namespace {

Baseline make_baseline(std::string_view name, double centre, double spread, double k, int count,
                       const Margins& m) {
  // A naturally wide distribution widens the thresholds: fail needs k spreads, warn k - 1.
  const double sigma = centre > 0 ? spread / centre : 0;
  Baseline b;
  b.name = name;
  b.centre = centre;
  b.warn_at = std::max(m.warn, (k - 1) * sigma);
  b.fail_at = std::max(m.fail, k * sigma);
  b.count = count;
  return b;
}

int rank(Status s) { return s == Status::kFail ? 2 : s == Status::kWarn ? 1 : 0; }

Status status_of(double dev, const Baseline& b) {
  if (dev >= b.fail_at) return Status::kFail;
  if (dev >= b.warn_at) return Status::kWarn;
  return Status::kPass;
}

// Every repeat past the fail threshold; or, against the unit's own history, the mean of all
// runs past it by one standard error (one run's noise from the ring, over the runs and the
// ring's own figures): the worst repeat alone throws away what the other runs say.
bool confirmed_against(const Baseline& b, const FigureToGrade& f) {
  if (f.repeats.size() < 2) return false;
  const bool every = std::all_of(f.repeats.begin(), f.repeats.end(), [&](double r) {
    return stats::deviation(r, b.centre, f.direction) >= b.fail_at;
  });
  constexpr std::size_t kMinForNoise = 5;  // a MAD of fewer figures says little
  if (every || b.ring.size() < kMinForNoise) return every;
  std::vector<double> sorted(b.ring.begin(), b.ring.end());
  std::sort(sorted.begin(), sorted.end());
  const double ring_centre = stats::sorted_median(sorted);
  if (ring_centre <= 0) return false;
  const double noise = stats::sorted_mad_sigma(sorted, ring_centre) / ring_centre;
  if (noise <= 0) return false;
  double sum = stats::deviation(f.first, b.centre, f.direction);
  for (double r : f.repeats) sum += stats::deviation(r, b.centre, f.direction);
  const double n = static_cast<double>(f.repeats.size() + 1);
  const double m = static_cast<double>(b.ring.size());
  const double standard_error = noise * std::sqrt(1 / n + 1 / m);
  return sum / n - standard_error >= b.fail_at;
}

std::string percent(double fraction) {
  const double p = std::fabs(fraction) * 100;
  char buf[32];
  std::snprintf(buf, sizeof buf, p >= 9.95 ? "%.0f%%" : "%.1f%%", p);
  return buf;
}

std::string message(const Verdict& v, const FigureToGrade& f) {
  std::string head = f.prefix;
  head += v.measurement + " " + format_figure(v.value, FigureStyle::kByMagnitude) + " " + v.unit;
  if (v.baseline.empty()) return head + ", no baseline yet";
  if (v.drifting) {
    return head + ", drifting down " + percent(v.deviation) + " over " +
           std::to_string(v.history + 1) + " runs";
  }
  const bool worse = v.deviation > 0;
  const bool higher_better = f.direction == Direction::kHigherIsBetter;
  std::string s =
      head + ", " + percent(v.deviation) + " " + ((worse == higher_better) ? "below " : "above ");
  const std::string centre =
      " (" + format_figure(v.baseline_value, FigureStyle::kByMagnitude) + ")";
  if (v.baseline == "peers") s += "its " + std::to_string(v.peers) + " peers" + centre;
  if (v.baseline == "history") {
    s += "its last " + std::to_string(v.history) + " runs" + centre;
  }
  if (v.baseline == "fleet") s += std::to_string(v.fleet) + " nodes" + centre;
  if (v.confirmed) s += ", " + std::to_string(v.repeats) + " repeats agree";
  return s;
}

}  // namespace

std::optional<Baseline> peers_baseline(const stats::SortedSkip& others, const Margins& margins,
                                       const DetectConfig& config,
                                       std::optional<double> pooled_spread) {
  if (static_cast<int>(others.size()) < config.min_peers) return std::nullopt;
  const double centre = stats::sorted_median(others);
  const double own = stats::sorted_mad_sigma(others, centre);
  const double spread = pooled_spread ? std::max(own, *pooled_spread * centre) : own;
  const double k = pooled_spread ? config.peer_spread_k : 2 * config.peer_spread_k;
  return make_baseline("peers", centre, spread, k, static_cast<int>(others.size()),
                       config.cross_margins(margins));
}

Baseline history_baseline(double centre, std::span<const double> ring, const Margins& margins) {
  Baseline b = make_baseline("history", centre, 0, 0, static_cast<int>(ring.size()), margins);
  b.ring = ring;
  return b;
}

std::optional<Baseline> fleet_baseline(const stats::SortedSkip& others, const Margins& margins,
                                       const DetectConfig& config) {
  if (static_cast<int>(others.size()) < config.min_fleet) return std::nullopt;
  const double centre = stats::sorted_median(others);
  const double spread = stats::sorted_mad_sigma(others, centre);
  return make_baseline("fleet", centre, spread, config.fleet_spread_k,
                       static_cast<int>(others.size()), config.cross_margins(margins));
}

std::optional<double> drift_decline(std::span<const double> ring, double latest,
                                    Direction direction, const Margins& margins,
                                    const DetectConfig& config) {
  if (static_cast<int>(ring.size()) < config.min_history) return std::nullopt;
  std::vector<double> seq(ring.begin(), ring.end());
  seq.push_back(latest);
  if (direction == Direction::kLowerIsBetter) {
    for (double& x : seq) x = -x;  // "declining" always means getting worse
  }
  if (stats::kendall_tau(seq) > -config.drift_tau) return std::nullopt;
  const double level = std::fabs(stats::median(seq));
  if (level == 0) return std::nullopt;
  const double decline = -stats::theil_sen_change(seq) / level;
  if (decline < margins.warn) return std::nullopt;
  return decline;
}

void grade(Verdict& v, std::span<const Baseline> baselines, const FigureToGrade& f) {
  const Baseline* best = nullptr;
  Status best_status = Status::kPass;
  double best_dev = 0;
  bool best_confirmed = false;
  for (const Baseline& b : baselines) {
    if (b.name == "peers") v.peers = b.count;
    if (b.name == "history") v.history = b.count;
    if (b.name == "fleet") v.fleet = b.count;
    const double dev = stats::deviation(v.value, b.centre, f.direction);
    const Status st = status_of(dev, b);
    const bool conf = st == Status::kFail && confirmed_against(b, f);
    const bool better = !best || rank(st) > rank(best_status) ||
                        (rank(st) == rank(best_status) &&
                         (conf > best_confirmed || (conf == best_confirmed && dev > best_dev)));
    if (better) {
      best = &b, best_status = st, best_dev = dev, best_confirmed = conf;
    }
  }
  if (best) {
    v.status = best_status;
    v.baseline = best->name;
    v.baseline_value = best->centre;
    v.deviation = best_dev;
    v.confirmed = best_confirmed;
  }
  if (rank(v.status) < 1 && f.drift) {
    v.status = Status::kWarn;
    v.baseline = "history";
    v.baseline_value = f.history_centre;
    v.history = f.history_count;
    v.deviation = *f.drift;
    v.drifting = true;
  }
  if (v.status != Status::kPass) v.message = message(v, f);
}

}  // namespace vigil::detect::detail
