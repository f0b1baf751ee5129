#include "vigil/detect/config.h"

#include <cmath>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>

#include "vigil/report/check_catalog.h"

namespace vigil::detect {

using nlohmann::json;

DetectConfig DetectConfig::defaults() {
  DetectConfig c;
  // The performance figures of the check catalog (vigil/report/check_catalog.h), in its order.
  for (const CheckSpec& check : check_catalog()) {
    for (const PerfMetric& m : check.metrics) {
      c.metrics.push_back(
          {std::string(check.name), std::string(m.measurement), std::string(m.unit),
           std::string(m.kind),
           m.higher_is_better ? Direction::kHigherIsBetter : Direction::kLowerIsBetter});
    }
  }
  // Chosen with tests/detect/fleet_sim.cpp; docs/detection.md has the table and the reasons.
  // all_reduce warns earlier: node figures have no peers, so the warn margin (vigil-check's
  // repeat trigger against the typical figure) is what gets them the repeats that confirm.
  c.margins = {
      {"gemm", {0.04, 0.06}},
      {"hbm", {0.04, 0.06}},
      {"pcie", {0.04, 0.06}},
      {"allreduce", {0.03, 0.06}},
  };
  return c;
}

namespace {

void check_range(std::vector<std::string>& errors, const std::string& field, double v, double lo,
                 double hi, const char* what) {
  if (!std::isfinite(v) || v < lo || v > hi) {
    errors.push_back(field + ": " + json(v).dump() + " must be " + what);
  }
}

void validate_metrics(const DetectConfig& c, std::vector<std::string>& errors) {
  std::set<std::pair<std::string, std::string>> seen;
  for (std::size_t i = 0; i < c.metrics.size(); ++i) {
    const MetricSpec& m = c.metrics[i];
    const std::string at = "metrics[" + std::to_string(i) + "]";
    if (m.check.empty()) errors.push_back(at + ".check: must not be empty");
    if (m.measurement.empty()) errors.push_back(at + ".measurement: must not be empty");
    if (m.measurement == "*" && m.unit.empty()) {
      errors.push_back(at + ".unit: required when measurement is \"*\"");
    }
    if (!c.margins.count(m.kind)) {
      errors.push_back(at + ".kind: '" + m.kind + "' has no entry in margins");
    }
    if (!seen.insert({m.check, m.measurement + "|" + m.unit}).second) {
      errors.push_back(at + ": duplicate of an earlier entry for " + m.check + "/" + m.measurement);
    }
  }
}

}  // namespace

std::vector<std::string> DetectConfig::validate() const {
  std::vector<std::string> errors;
  for (const auto& [kind, m] : margins) {
    const std::string at = "margins." + kind;
    check_range(errors, at + ".warn", m.warn, 1e-9, 1 - 1e-9, "in (0, 1)");
    check_range(errors, at + ".fail", m.fail, 1e-9, 1 - 1e-9, "in (0, 1)");
    if (m.warn >= m.fail) errors.push_back(at + ": warn must be below fail");
  }
  validate_metrics(*this, errors);
  if (!use_peers && !use_history && !use_fleet) {
    errors.push_back("baselines: at least one of peers, history, fleet must be enabled");
  }
  if (min_peers < 3) errors.push_back("min_peers: " + std::to_string(min_peers) + " must be >= 3");
  if (history_window < 3 || history_window > 1024) {
    errors.push_back("history_window: " + std::to_string(history_window) + " must be in [3, 1024]");
  }
  if (min_history < 3 || min_history > history_window) {
    errors.push_back("min_history: " + std::to_string(min_history) +
                     " must be >= 3 and <= history_window");
  }
  if (min_fleet < 3) errors.push_back("min_fleet: " + std::to_string(min_fleet) + " must be >= 3");
  check_range(errors, "cross_margin_scale", cross_margin_scale, 1, 5, "in [1, 5]");
  check_range(errors, "peer_spread_k", peer_spread_k, 0, 100, "in [0, 100]");
  check_range(errors, "fleet_spread_k", fleet_spread_k, 0, 100, "in [0, 100]");
  check_range(errors, "drift_tau", drift_tau, 1e-9, 1, "in (0, 1]");
  if (forget_after_s <= 0) errors.push_back("forget_after_s: must be > 0");
  return errors;
}

const MetricSpec* DetectConfig::find_metric(std::string_view check, std::string_view measurement,
                                            std::string_view unit) const {
  for (const MetricSpec& m : metrics) {
    if (m.check != check) continue;
    if (m.measurement != "*" && m.measurement != measurement) continue;
    if (m.measurement == "*" && m.unit != unit) continue;
    return &m;
  }
  return nullptr;
}

const Margins& DetectConfig::margins_for(const MetricSpec& spec) const {
  auto it = margins.find(spec.kind);
  if (it == margins.end()) throw std::logic_error("no margins for kind " + spec.kind);
  return it->second;
}

Margins DetectConfig::cross_margins(const Margins& m) const {
  return {m.warn * cross_margin_scale, m.fail * cross_margin_scale};
}

}  // namespace vigil::detect
