// Per-GPU/port figures are judged twice over:
//  - each unit against its peers and against its own history, the history adjusted for the
//    node-wide level (the median of the other units' figure / history ratios), so that a whole
//    node that slows down is not judged eight times over;
//  - the node's level (the median of its units) against the node's own history and the fleet.
// Node figures (all_reduce) have one unit: history and fleet judge it directly.
#include "group_judge.h"

#include <algorithm>
#include <cmath>

#include "grade.h"
#include "stats.h"

namespace vigil::detect::detail {

namespace {

class GroupJudge {
 public:
  GroupJudge(const Group& g, const std::string& node, const std::string& sku,
             const EngineState& state, const DetectConfig& c)
      : g_(g),
        config_(c),
        margins_(c.margins_for(*g.spec)),
        per_unit_(g.key.kind != UnitKind::kNode) {
    auto f = state.fleet.find(g.key);
    if (c.use_fleet && sku != "unknown" && f != state.fleet.end()) {
      fleet_ = fleet_baseline(f->second.values.others(node), margins_, c);
      const stats::SortedSkip spreads = f->second.unit_spreads.others(node);
      if (static_cast<int>(spreads.size()) >= c.min_fleet) {
        pooled_spread_ = stats::sorted_median(spreads);
      }
    }
    const auto* rings = c.use_history ? state.rings(node, g.key) : nullptr;
    auto ring_of = [&](const std::string& unit_id) -> const std::vector<double>* {
      if (!rings) return nullptr;
      auto it = rings->find(unit_id);
      if (it == rings->end() || static_cast<int>(it->second.size()) < c.min_history) return nullptr;
      return &it->second;
    };
    for (std::size_t i = 0; i < g.samples.size(); ++i) {
      rings_.push_back(ring_of(g.samples[i]->unit_id));
      hist_centres_.push_back(rings_.back() ? stats::history_centre(*rings_.back()) : 0);
      ratios_.push_back(
          rings_.back() && hist_centres_.back() > 0 ? g.figures[i] / hist_centres_.back() : 0);
      if (ratios_.back() > 0) sorted_ratios_.push_back(ratios_.back());
    }
    if (per_unit_) node_ring_ = ring_of("node");
    sorted_figures_ = g.figures;
    std::sort(sorted_figures_.begin(), sorted_figures_.end());
    std::sort(sorted_ratios_.begin(), sorted_ratios_.end());
  }

  void run(ReportVerdicts& out, Learning& learn) const {
    const std::size_t first = out.verdicts.size();
    std::vector<bool> unit_failed;
    for (std::size_t i = 0; i < g_.samples.size(); ++i) {
      out.verdicts.push_back(unit_verdict(i));
      unit_failed.push_back(out.verdicts.back().status == Status::kFail);
    }
    std::optional<Verdict> node_verdict;
    if (per_unit_ && (fleet_ || node_ring_)) node_verdict = level_verdict(unit_failed);
    const bool node_failed = node_verdict && node_verdict->status == Status::kFail;
    std::vector<double> healthy;
    for (std::size_t i = 0; i < g_.samples.size(); ++i) {
      if (unit_failed[i] || g_.samples[i]->from_failed_run || node_failed) continue;
      healthy.push_back(g_.figures[i]);
      if (config_.use_history) {
        learn.history.push_back({&g_.key, out.verdicts[first + i].unit_id, g_.figures[i]});
      }
    }
    if (node_verdict) out.verdicts.push_back(std::move(*node_verdict));
    learn.units[g_.key] = g_.samples.front()->unit;
    // The node's level: the median of its healthy units, when at least half are healthy.
    if (healthy.empty() || healthy.size() * 2 < g_.samples.size()) return;
    const FleetLearning level = node_level(std::move(healthy));
    if (per_unit_ && config_.use_history) learn.history.push_back({&g_.key, "node", level.value});
    if (config_.use_fleet && fleet_allowed_) learn.fleet.push_back(level);
  }

  void set_fleet_allowed(bool allowed) { fleet_allowed_ = allowed; }

 private:
  FleetLearning node_level(std::vector<double> healthy) const {
    std::sort(healthy.begin(), healthy.end());
    FleetLearning out{g_.key, stats::sorted_median(healthy), std::nullopt};
    if (per_unit_ && static_cast<int>(healthy.size()) > config_.min_peers && out.value > 0) {
      out.unit_spread = stats::sorted_mad_sigma(healthy, out.value) / out.value;
    }
    return out;
  }

  Verdict identity(const Sample& s) const {
    Verdict v;
    v.check = s.check;
    v.measurement = s.measurement;
    v.unit_kind = s.unit_kind;
    v.unit_id = s.unit_id;
    v.unit = s.unit;
    return v;
  }

  // The node-wide level change since the history: the median over the other units of their
  // figure now / their history centre (silicon cancels unit by unit). 1 with too few units, or
  // when the level moved by less than half the warn margin: that is within the noise of the
  // estimate (~0.5 x run-to-run noise), which would only blur the unit's own comparison.
  double level_shift(std::size_t i) const {
    const stats::SortedSkip others = without(sorted_ratios_, ratios_[i] > 0, ratios_[i]);
    if (static_cast<int>(others.size()) < config_.min_peers) return 1;
    const double shift = stats::sorted_median(others);
    return std::fabs(shift - 1) < margins_.warn / 2 ? 1 : shift;
  }

  // `sorted` without one element equal to `value` when `present`.
  static stats::SortedSkip without(const std::vector<double>& sorted, bool present, double value) {
    if (!present) return {sorted};
    auto at = std::lower_bound(sorted.begin(), sorted.end(), value);
    return {sorted, static_cast<std::size_t>(at - sorted.begin())};
  }

  Verdict unit_verdict(std::size_t i) const {
    const Sample& s = *g_.samples[i];
    Verdict v = identity(s);
    v.value = g_.figures[i];
    v.repeats = static_cast<int>(s.observed.repeats.size());
    std::vector<Baseline> bs;
    FigureToGrade f;
    f.direction = g_.spec->direction;
    f.repeats = s.observed.repeats;
    f.first = s.observed.value;
    f.prefix = per_unit_ ? s.unit_id + " " : "";
    if (config_.use_peers && per_unit_) {
      const stats::SortedSkip others = without(sorted_figures_, true, v.value);
      if (auto b = peers_baseline(others, margins_, config_, pooled_spread_)) bs.push_back(*b);
    }
    if (rings_[i]) {
      const double shift = per_unit_ ? level_shift(i) : 1;
      bs.push_back(history_baseline(hist_centres_[i] * shift, *rings_[i], margins_));
      f.drift = drift_decline(*rings_[i], v.value, f.direction, margins_, config_);
      f.history_centre = hist_centres_[i];
      f.history_count = static_cast<int>(rings_[i]->size());
    }
    if (!per_unit_ && fleet_) bs.push_back(*fleet_);
    grade(v, bs, f);
    return v;
  }

  // The node's level: the median of its units that did not fail on their own (all units when
  // fewer than half are left), against the node's history and the fleet. Confirmed by the
  // medians of each repeat round when every one of those units was repeated.
  Verdict level_verdict(const std::vector<bool>& unit_failed) const {
    std::vector<std::size_t> used;
    for (std::size_t i = 0; i < g_.samples.size(); ++i) {
      if (!unit_failed[i]) used.push_back(i);
    }
    if (used.size() * 2 < g_.samples.size()) {
      used.clear();
      for (std::size_t i = 0; i < g_.samples.size(); ++i) used.push_back(i);
    }
    const Sample& s = *g_.samples.front();
    Verdict v = identity(s);
    v.unit_kind = UnitKind::kNode;
    v.unit_id = "node";
    std::vector<double> level;
    std::size_t rounds = SIZE_MAX;
    for (std::size_t i : used) {
      level.push_back(g_.figures[i]);
      rounds = std::min(rounds, g_.samples[i]->observed.repeats.size());
    }
    v.value = stats::median(std::move(level));
    std::vector<double> round_medians;
    for (std::size_t r = 0; r < rounds; ++r) {
      std::vector<double> round;
      for (std::size_t i : used) round.push_back(g_.samples[i]->observed.repeats[r]);
      round_medians.push_back(stats::median(std::move(round)));
    }
    v.repeats = static_cast<int>(round_medians.size());
    FigureToGrade f;
    f.direction = g_.spec->direction;
    f.repeats = round_medians;
    std::vector<double> first_round;
    for (std::size_t i : used) first_round.push_back(g_.samples[i]->observed.value);
    f.first = stats::median(std::move(first_round));
    f.prefix = std::to_string(used.size()) + "-" + std::string(to_string(s.unit_kind)) + " median ";
    std::vector<Baseline> bs;
    if (node_ring_) {
      const double centre = stats::history_centre(*node_ring_);
      bs.push_back(history_baseline(centre, *node_ring_, margins_));
      f.drift = drift_decline(*node_ring_, v.value, f.direction, margins_, config_);
      f.history_centre = centre;
      f.history_count = static_cast<int>(node_ring_->size());
    }
    if (fleet_) bs.push_back(*fleet_);
    grade(v, bs, f);
    return v;
  }

  const Group& g_;
  const DetectConfig& config_;
  const Margins& margins_;
  const bool per_unit_;
  bool fleet_allowed_ = true;
  std::optional<Baseline> fleet_;
  std::optional<double> pooled_spread_;
  std::vector<const std::vector<double>*> rings_;  // per unit; null below min_history
  std::vector<double> hist_centres_;
  std::vector<double> sorted_figures_;  // every unit's figure, sorted
  std::vector<double> ratios_;          // per unit: figure / history centre; 0 without history
  std::vector<double> sorted_ratios_;   // the non-zero ratios, sorted
  const std::vector<double>* node_ring_ = nullptr;
};

}  // namespace

void judge_group(const Group& g, const std::string& node, const std::string& sku,
                 const EngineState& state, const DetectConfig& config, ReportVerdicts& out,
                 Learning& learn) {
  GroupJudge judge(g, node, sku, state, config);
  judge.set_fleet_allowed(sku != "unknown");
  judge.run(out, learn);
}

}  // namespace vigil::detect::detail
