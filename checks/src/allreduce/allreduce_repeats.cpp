#include "allreduce/allreduce_repeats.h"

#include <cmath>
#include <utility>
#include <vector>

#include "cuda/probe_math.h"
#include "vigil/detect/detect.h"

namespace vigil {

namespace {

constexpr int kRepeats = 3;
constexpr std::size_t kMinRecent = 3;

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// The spec judging r's busbw, nullptr when the figure is not judged or not worth repeating.
const detect::MetricSpec* judged_busbw(const CheckResult& r, const detect::DetectConfig& cfg) {
  const Measurement* m = busbw_measurement(r);
  if (!m || !std::isfinite(m->value) || r.status == Status::kError || r.status == Status::kSkipped)
    return nullptr;
  // A hang or a wrong sum is its own finding; a repeat would only take time.
  if (ends_with(r.fault_code, "-TIMEOUT") || ends_with(r.fault_code, "-WRONG-RESULTS"))
    return nullptr;
  return cfg.find_metric(r.check, m->name, m->unit);
}

double judged_value(const Measurement& m) {
  std::vector<double> all = m.repeats;
  all.push_back(m.value);
  return cuda_probe::median(std::move(all));
}

}  // namespace

const Measurement* busbw_measurement(const CheckResult& r) {
  for (const auto& m : r.measurements)
    if (m.name == "busbw") return &m;
  return nullptr;
}

Measurement* busbw_measurement(CheckResult& r) {
  return const_cast<Measurement*>(busbw_measurement(std::as_const(r)));
}

int plan_allreduce_repeats(const CheckResult& r, std::span<const double> recent,
                           const detect::DetectConfig& cfg) {
  const detect::MetricSpec* spec = judged_busbw(r, cfg);
  if (!spec) return 0;
  const Measurement& m = *busbw_measurement(r);
  if (m.status() != Status::kPass) return kRepeats;
  if (recent.size() < kMinRecent) return 0;
  const double expected = cuda_probe::median({recent.begin(), recent.end()});
  return detect::is_suspicious(m.value, expected, cfg.margins_for(*spec), spec->direction)
             ? kRepeats
             : 0;
}

bool learn_allreduce_figure(const CheckResult& r, std::span<const double> recent,
                            const detect::DetectConfig& cfg) {
  const detect::MetricSpec* spec = judged_busbw(r, cfg);
  if (!spec || r.status != Status::kPass) return false;
  const double value = judged_value(*busbw_measurement(r));
  if (recent.size() < kMinRecent) return true;
  const double expected = cuda_probe::median({recent.begin(), recent.end()});
  if (expected <= 0) return true;
  const double slower = spec->direction == detect::Direction::kHigherIsBetter
                            ? (expected - value) / expected
                            : (value - expected) / expected;
  return slower < cfg.margins_for(*spec).fail;
}

}  // namespace vigil
