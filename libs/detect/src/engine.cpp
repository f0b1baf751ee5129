// Engine: validate the samples, judge each figure against its baselines, then learn the
// healthy ones. Nothing is learned (or changed at all) when a sample is invalid.
#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "grade.h"
#include "group_judge.h"
#include "state.h"
#include "stats.h"
#include "vigil/base/strings.h"
#include "vigil/detect/detect.h"

namespace vigil::detect {

using detail::EngineState;
using detail::KeyId;

namespace {

constexpr const char* kWhere = "detect::Engine::judge";

struct Plan {
  std::string node;
  std::string sku;
  std::vector<detail::Group> groups;  // in report order
};

std::string name_of(const Sample& s) {
  return s.node + " " + s.check + "/" + s.measurement + " " + s.unit_id;
}

// "" when the figure is usable, else why not.
std::string value_problem(double v) {
  if (std::isnan(v)) return "NaN is not a number";
  if (std::isinf(v)) return "infinity is not a figure";
  if (v < 0) return format_figure(v, FigureStyle::kByMagnitude) + " is negative";
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
    return Error{name_of(s) + ": unit '" + s.unit + "' differs from the configured '" + spec.unit +
                     "'; a figure that changes unit must change name",
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

// The group of `s` in the plan, or nullptr (a report has a handful of groups: linear search).
detail::Group* group_of(Plan& plan, const Sample& s) {
  for (detail::Group& g : plan.groups) {
    if (g.key.check == s.check && g.key.measurement == s.measurement && g.key.kind == s.unit_kind) {
      return &g;
    }
  }
  return nullptr;
}

Result<detail::Group*> add_to_group(Plan& plan, const Sample& s, const MetricSpec& spec,
                                    const EngineState& state) {
  detail::Group* g = group_of(plan, s);
  if (!g) {
    KeyId key{s.sku, s.check, s.measurement, s.unit_kind};
    VIGIL_TRY(std::string unit, check_unit(s, spec, key, state.units));
    plan.groups.push_back(detail::Group{std::move(key), &spec, {}, {}});
    return &plan.groups.back();
  }
  const Sample& first = *g->samples.front();
  if (s.unit != first.unit) {
    return Error{name_of(s) + ": unit '" + s.unit + "' differs from '" + first.unit + "' of " +
                     first.unit_id + " in the same report",
                 kWhere};
  }
  for (const Sample* other : g->samples) {
    if (other->unit_id == s.unit_id)
      return Error{name_of(s) + ": reported twice in one report", kWhere};
  }
  return g;
}

Result<Plan> make_plan(const std::vector<Sample>& samples, const EngineState& state,
                       const DetectConfig& config) {
  Plan plan;
  if (!samples.empty()) plan.node = samples.front().node, plan.sku = samples.front().sku;
  for (const Sample& s : samples) {
    if (s.node.empty() || s.sku.empty())
      return Error{name_of(s) + ": node and sku are required", kWhere};
    if (s.node != plan.node || s.sku != plan.sku) {
      return Error{name_of(s) + ": samples of one judge() call must share node and sku (" +
                       plan.node + ", " + plan.sku + ")",
                   kWhere};
    }
    const MetricSpec* spec = config.find_metric(s.check, s.measurement, s.unit);
    if (!spec) continue;  // not a judged figure
    if (std::string why = check_value(s); !why.empty()) return Error{why, kWhere};
    VIGIL_TRY(detail::Group * g, add_to_group(plan, s, *spec, state));
    g->samples.push_back(&s);
    if (s.observed.repeats.empty()) {
      g->figures.push_back(s.observed.value);
    } else {
      std::vector<double> runs = s.observed.repeats;
      runs.push_back(s.observed.value);
      g->figures.push_back(stats::median(std::move(runs)));
    }
  }
  return plan;
}

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
    if (v.status == Status::kFail || (v.status == Status::kWarn && s == Status::kPass))
      s = v.status;
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
  out.verdicts.reserve(samples.size() + plan.groups.size());
  detail::Learning learning;
  for (const detail::Group& g : plan.groups) {
    detail::judge_group(g, plan.node, plan.sku, *state_, config_, out, learning);
  }
  aggregate(out);
  if (plan.groups.empty()) return out;
  state_->touch(plan.node, now);
  if (learn == Learn::kNo) return out;
  const auto capacity = static_cast<std::size_t>(config_.history_window);
  for (const detail::HistoryLearning& h : learning.history) {
    state_->push_history(plan.node, *h.key, h.unit_id, h.value, capacity);
  }
  for (const detail::FleetLearning& f : learning.fleet) {
    state_->set_fleet(plan.node, f.key, f.value, f.unit_spread);
  }
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
    for (const auto& [key, units] : n.history) {
      s.history_units += units.size();
      for (const auto& [unit_id, ring] : units) s.history_values += ring.size();
    }
  }
  for (const auto& [key, f] : state_->fleet) s.fleet_entries += f.values.by_node.size();
  return s;
}

}  // namespace vigil::detect
