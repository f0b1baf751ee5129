// The engine's input side: NodeReport -> samples, repeats, and the checker's is_suspicious().
#include <cmath>

#include "stats.h"
#include "vigil/detect/detect.h"

namespace vigil::detect {

namespace {

void set_unit(const Measurement& m, Sample& s) {
  if (m.port) {
    s.unit_kind = UnitKind::kPort;
    s.unit_id = m.gpu ? "gpu" + std::to_string(*m.gpu) + ":" + *m.port : *m.port;
  } else if (m.gpu) {
    s.unit_kind = UnitKind::kGpu;
    s.unit_id = "gpu" + std::to_string(*m.gpu);
  } else {
    s.unit_kind = UnitKind::kNode;
    s.unit_id = "node";
  }
}

}  // namespace

std::vector<Sample> samples_from_report(const NodeReport& report, const DetectConfig& config) {
  std::vector<Sample> out;
  std::size_t measurements = 0;
  for (const CheckResult& c : report.checks) measurements += c.measurements.size();
  out.reserve(measurements);
  for (const CheckResult& c : report.checks) {
    // A run that could not measure (error) or did not apply (skipped) proves nothing.
    if (c.status == Status::kError || c.status == Status::kSkipped) continue;
    for (const Measurement& m : c.measurements) {
      if (!config.find_metric(c.check, m.name, m.unit)) continue;
      Sample s;
      s.node = report.node;
      s.sku = report.sku;
      s.check = c.check;
      s.measurement = m.name;
      set_unit(m, s);
      s.unit = m.unit;
      s.observed.value = m.value;
      s.observed.repeats = m.repeats;  // the checker's re-measurements of a suspicious figure
      s.from_failed_run = m.status() == Status::kFail;
      out.push_back(std::move(s));
    }
  }
  return out;
}

bool attach_repeats(std::vector<Sample>& samples, std::string_view check,
                    std::string_view measurement, std::string_view unit_id,
                    std::vector<double> repeats) {
  for (Sample& s : samples) {
    if (s.check == check && s.measurement == measurement && s.unit_id == unit_id) {
      s.observed.repeats = std::move(repeats);
      return true;
    }
  }
  return false;
}

bool is_suspicious(std::span<const double> unit_values, std::size_t index, const Margins& margins,
                   Direction direction, int min_peers) {
  if (index >= unit_values.size()) return false;
  const double value = unit_values[index];
  if (!std::isfinite(value)) return true;
  std::vector<double> others;
  others.reserve(unit_values.size());
  for (std::size_t i = 0; i < unit_values.size(); ++i) {
    if (i != index && std::isfinite(unit_values[i])) others.push_back(unit_values[i]);
  }
  if (static_cast<int>(others.size()) < min_peers) return false;
  return stats::deviation(value, stats::median(std::move(others)), direction) >= margins.warn;
}

bool is_suspicious(double value, double expected, const Margins& margins, Direction direction) {
  if (!std::isfinite(value)) return true;
  if (!std::isfinite(expected) || expected <= 0) return false;
  return stats::deviation(value, expected, direction) >= margins.warn;
}

}  // namespace vigil::detect
