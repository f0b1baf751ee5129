// Engine: validate the samples, judge each figure against its baselines, then learn the
// healthy ones. Nothing is learned (or changed at all) when a sample is invalid.
#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "grade.h"
#include "state.h"
#include "stats.h"
#include "vigil/detect/detect.h"

namespace vigil::detect {

using detail::Baseline;
using detail::EngineState;
using detail::KeyId;
using detail::UnitId;

namespace {

constexpr const char* kWhere = "detect::Engine::judge";

// The samples of one figure of one report: one per unit.
struct Group {
  KeyId key;
  const MetricSpec* spec = nullptr;
  std::vector<const Sample*> samples;
  std::vector<double> figures;  // per sample: the median of its value and repeats
};

struct Plan {
  std::string node;
  std::string sku;
  std::vector<Group> groups;  // in report order
};

// What judge() learns once every figure is judged.
struct Learning {
  std::vector<std::pair<UnitId, double>> history;
  std::vector<std::pair<KeyId, double>> fleet;
  std::map<KeyId, std::string> units;
};

std::string name_of(const Sample& s) {
  return s.node + " " + s.check + "/" + s.measurement + " " + s.unit_id;
}

// "" when the figure is usable, else why not.
std::string value_problem(double v) {
  if (std::isnan(v)) return "NaN is not a number";
  if (std::isinf(v)) return "infinity is not a figure";
  if (v < 0) return detail::short_number(v) + " is negative";
  return "";
}

std::string check_value(const Sample& s) {
  const std::string hint = "; fix the probe: fail-slow detection skips this report";
  if (std::string why = value_problem(s.observed.value); !why.empty()) {
    return name_of(s) + ": value " + why + hint;
  }
  for (std::size_t i = 0; i < s.observed.repeats.size(); ++i) {
    if (std::string why = value_problem(s.observed.repeats[i]); !why.empty()) {
      return name_of(s) + ": repeat " + std::to_string(i) + " " + why + hint;
    }
  }
  return "";
}

Result<std::string> check_unit(const Sample& s, const MetricSpec& spec, const KeyId& key,
                               const std::map<KeyId, std::string>& known) {
  if (s.unit.empty()) return Error{name_of(s) + ": unit is empty", kWhere};
  if (spec.measurement != "*" && !spec.unit.empty() && s.unit != spec.unit) {
    return Error{name_of(s) + ": unit '" + s.unit + "' differs from the configured '" +
                     spec.unit + "'; a figure that changes unit must change name",
                 kWhere};
  }
  auto it = known.find(key);
  if (it != known.end() && it->second != s.unit) {
    return Error{name_of(s) + ": unit '" + s.unit + "' differs from '" + it->second +
                     "' seen before for this figure; a figure that changes unit must change name",
                 kWhere};
  }
  return s.unit;
}

Result<Plan> make_plan(const std::vector<Sample>& samples, const EngineState& state,
                       const DetectConfig& config) {
  Plan plan;
  std::map<KeyId, std::size_t> index;
  std::map<KeyId, std::string> units = state.units;
  std::set<std::pair<KeyId, std::string>> seen_units;
  if (!samples.empty()) plan.node = samples.front().node, plan.sku = samples.front().sku;
  for (const Sample& s : samples) {
    if (s.node.empty() || s.sku.empty()) return Error{name_of(s) + ": node and sku are required", kWhere};
    if (s.node != plan.node || s.sku != plan.sku) {
      return Error{name_of(s) + ": samples of one judge() call must share node and sku (" +
                       plan.node + ", " + plan.sku + ")",
                   kWhere};
    }
    const MetricSpec* spec = config.find_metric(s.check, s.measurement, s.unit);
    if (!spec) continue;  // not a judged figure
    if (std::string why = check_value(s); !why.empty()) return Error{why, kWhere};
    KeyId key{s.sku, s.check, s.measurement, s.unit_kind};
    VIGIL_TRY(std::string unit, check_unit(s, *spec, key, units));
    units[key] = unit;
    if (!seen_units.insert({key, s.unit_id}).second) {
      return Error{name_of(s) + ": reported twice in one report", kWhere};
    }
    auto [it, inserted] = index.try_emplace(key, plan.groups.size());
    if (inserted) plan.groups.push_back(Group{key, spec, {}, {}});
    Group& g = plan.groups[it->second];
    std::vector<double> runs = s.observed.repeats;
    runs.push_back(s.observed.value);
    g.samples.push_back(&s);
    g.figures.push_back(stats::median(std::move(runs)));
  }
  return plan;
}

// Judging one group of one report, with read-only access to what was learned before.
class GroupJudge {
 public:
  GroupJudge(const Group& g, const Plan& plan, const EngineState& state, const DetectConfig& c)
      : g_(g), plan_(plan), state_(state), config_(c), margins_(c.margins_for(*g.spec)) {
    auto f = state.fleet.find(g.key);
    if (c.use_fleet && plan.sku != "unknown" && f != state.fleet.end()) {
      fleet_ = detail::fleet_baseline(f->second.others(plan.node), margins_, c);
    }
  }

  void run(ReportVerdicts& out, Learning& learn) {
    const std::size_t first = out.verdicts.size();
    for (std::size_t i = 0; i < g_.samples.size(); ++i) out.verdicts.push_back(unit_verdict(i));
    std::optional<Verdict> node_fleet;
    if (g_.key.kind != UnitKind::kNode && fleet_) node_fleet = node_fleet_verdict();
    const bool node_failed = node_fleet && node_fleet->status == Status::kFail;
    std::vector<double> healthy;
    for (std::size_t i = 0; i < g_.samples.size(); ++i) {
      const Verdict& v = out.verdicts[first + i];
      if (v.status == Status::kFail || g_.samples[i]->from_failed_run || node_failed) continue;
      healthy.push_back(g_.figures[i]);
      if (config_.use_history) learn.history.push_back({{g_.key, v.unit_id}, g_.figures[i]});
    }
    if (node_fleet) out.verdicts.push_back(std::move(*node_fleet));
    learn.units[g_.key] = g_.samples.front()->unit;
    // The node's fleet figure: the median of its healthy units, when at least half are healthy.
    if (config_.use_fleet && plan_.sku != "unknown" && !healthy.empty() &&
        healthy.size() * 2 >= g_.samples.size()) {
      learn.fleet.push_back({g_.key, stats::median(std::move(healthy))});
    }
  }

 private:
  Verdict identity(const Sample& s) const {
    Verdict v;
    v.check = s.check;
    v.measurement = s.measurement;
    v.unit_kind = s.unit_kind;
    v.unit_id = s.unit_id;
    v.unit = s.unit;
    return v;
  }

  Verdict unit_verdict(std::size_t i) const {
    const Sample& s = *g_.samples[i];
    Verdict v = identity(s);
    v.value = g_.figures[i];
    v.repeats = static_cast<int>(s.observed.repeats.size());
    std::vector<Baseline> bs;
    detail::FigureToGrade f;
    f.direction = g_.spec->direction;
    f.repeats = s.observed.repeats;
    f.prefix = s.unit_kind == UnitKind::kNode ? "" : s.unit_id + " ";
    if (config_.use_peers && s.unit_kind != UnitKind::kNode) {
      std::vector<double> others;
      for (std::size_t k = 0; k < g_.figures.size(); ++k) {
        if (k != i) others.push_back(g_.figures[k]);
      }
      if (auto b = detail::peers_baseline(std::move(others), margins_, config_)) bs.push_back(*b);
    }
    const std::vector<double>* ring = state_.history(plan_.node, UnitId{g_.key, s.unit_id});
    if (config_.use_history && ring) {
      if (auto b = detail::history_baseline(*ring, margins_, config_)) {
        bs.push_back(*b);
        f.drift = detail::drift_decline(*ring, v.value, f.direction, margins_, config_);
        f.history_centre = b->centre;
        f.history_count = b->count;
      }
    }
    if (s.unit_kind == UnitKind::kNode && fleet_) bs.push_back(*fleet_);
    detail::grade(v, bs, f);
    return v;
  }

  // Per-GPU/port figures against the fleet: the node's median, confirmed by the medians of
  // each repeat round when every unit was repeated.
  Verdict node_fleet_verdict() const {
    const Sample& s = *g_.samples.front();
    Verdict v = identity(s);
    v.unit_kind = UnitKind::kNode;
    v.unit_id = "node";
    v.value = stats::median(g_.figures);
    std::size_t rounds = SIZE_MAX;
    for (const Sample* u : g_.samples) rounds = std::min(rounds, u->observed.repeats.size());
    std::vector<double> round_medians;
    for (std::size_t r = 0; r < rounds; ++r) {
      std::vector<double> round;
      for (const Sample* u : g_.samples) round.push_back(u->observed.repeats[r]);
      round_medians.push_back(stats::median(std::move(round)));
    }
    v.repeats = static_cast<int>(round_medians.size());
    detail::FigureToGrade f;
    f.direction = g_.spec->direction;
    f.repeats = round_medians;
    f.prefix = std::to_string(g_.samples.size()) + "-" + std::string(to_string(s.unit_kind)) +
               " median ";
    const Baseline b = *fleet_;
    detail::grade(v, std::span<const Baseline>(&b, 1), f);
    return v;
  }

  const Group& g_;
  const Plan& plan_;
  const EngineState& state_;
  const DetectConfig& config_;
  const Margins& margins_;
  std::optional<Baseline> fleet_;
};

bool worse(const Verdict& a, const Verdict& b) {
  auto rank = [](Status s) { return s == Status::kFail ? 2 : s == Status::kWarn ? 1 : 0; };
  if (rank(a.status) != rank(b.status)) return rank(a.status) > rank(b.status);
  if (a.confirmed != b.confirmed) return a.confirmed;
  return a.deviation > b.deviation;
}

void aggregate(ReportVerdicts& out) {
  std::map<std::string, std::size_t> index;
  for (const Verdict& v : out.verdicts) {
    auto [it, inserted] = index.try_emplace(v.check, out.worst_by_check.size());
    if (inserted) {
      out.worst_by_check.push_back(v);
    } else if (worse(v, out.worst_by_check[it->second])) {
      out.worst_by_check[it->second] = v;
    }
  }
}

}  // namespace

Status ReportVerdicts::worst() const {
  Status s = Status::kPass;
  for (const Verdict& v : worst_by_check) {
    if (v.status == Status::kFail || (v.status == Status::kWarn && s == Status::kPass)) s = v.status;
  }
  return s;
}

const Verdict* ReportVerdicts::worst_for(std::string_view check) const {
  for (const Verdict& v : worst_by_check) {
    if (v.check == check) return &v;
  }
  return nullptr;
}

Engine::Engine(DetectConfig config)
    : config_(std::move(config)), state_(std::make_unique<detail::EngineState>()) {
  std::vector<std::string> errors = config_.validate();
  if (errors.empty()) return;
  std::string all;
  for (const std::string& e : errors) all += (all.empty() ? "" : "; ") + e;
  throw std::invalid_argument("invalid detection config: " + all);
}

Engine::~Engine() = default;
Engine::Engine(Engine&&) noexcept = default;
Engine& Engine::operator=(Engine&&) noexcept = default;

Result<ReportVerdicts> Engine::judge(const NodeReport& report, std::int64_t now, Learn learn) {
  std::vector<Sample> samples = samples_from_report(report, config_);
  if (samples.empty()) {
    state_->forget_before(now - config_.forget_after_s);
    ReportVerdicts out;
    out.node = report.node, out.sku = report.sku, out.at = now;
    return out;
  }
  return judge(samples, now, learn);
}

Result<ReportVerdicts> Engine::judge(const std::vector<Sample>& samples, std::int64_t now,
                                     Learn learn) {
  VIGIL_TRY(Plan plan, make_plan(samples, *state_, config_));
  state_->forget_before(now - config_.forget_after_s);
  ReportVerdicts out;
  out.node = plan.node, out.sku = plan.sku, out.at = now;
  Learning learning;
  for (const Group& g : plan.groups) GroupJudge(g, plan, *state_, config_).run(out, learning);
  aggregate(out);
  if (plan.groups.empty()) return out;
  state_->touch(plan.node, now);
  if (learn == Learn::kNo) return out;
  const auto capacity = static_cast<std::size_t>(config_.history_window);
  for (const auto& [unit, value] : learning.history) {
    state_->push_history(plan.node, unit, value, capacity);
  }
  for (const auto& [key, value] : learning.fleet) state_->set_fleet(plan.node, key, value);
  for (const auto& [key, unit] : learning.units) state_->units[key] = unit;
  return out;
}

void Engine::reset_node(const std::string& node) { state_->erase_node(node); }

nlohmann::json Engine::snapshot() const { return detail::to_json(*state_); }

Result<Engine> Engine::restore(const nlohmann::json& snapshot, DetectConfig config) {
  if (std::vector<std::string> errors = config.validate(); !errors.empty()) {
    return Error{"invalid detection config: " + errors.front(), "detect::Engine::restore"};
  }
  VIGIL_TRY(detail::EngineState state,
            detail::state_from_json(snapshot, static_cast<std::size_t>(config.history_window)));
  Engine e(std::move(config));
  *e.state_ = std::move(state);
  return e;
}

EngineSize Engine::size() const {
  EngineSize s;
  s.nodes = state_->nodes.size();
  for (const auto& [name, n] : state_->nodes) {
    s.history_units += n.history.size();
    for (const auto& [unit, ring] : n.history) s.history_values += ring.size();
  }
  for (const auto& [key, f] : state_->fleet) s.fleet_entries += f.by_node.size();
  return s;
}

}  // namespace vigil::detect
