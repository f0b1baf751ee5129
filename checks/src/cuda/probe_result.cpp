#include "cuda/probe_result.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <string>

#include "cuda/probe_math.h"
#include "vigil/base/strings.h"
#include "vigil/detect/detect.h"

namespace vigil::cuda_probe {
namespace {

// "2 GPUs: hbm_bandwidth min 3012.4 GB/s (gpu 1), max 3050.0 GB/s"
std::string summary(const CheckResult& r, int gpus) {
  struct MinMax {
    const Measurement* lo = nullptr;
    const Measurement* hi = nullptr;
  };
  std::map<std::string, MinMax> by_name;
  std::vector<std::string> order;
  for (const Measurement& m : r.measurements) {
    auto [it, fresh] = by_name.try_emplace(m.name);
    if (fresh) order.push_back(m.name);
    if (!it->second.lo || m.value < it->second.lo->value) it->second.lo = &m;
    if (!it->second.hi || m.value > it->second.hi->value) it->second.hi = &m;
  }
  std::string s = std::to_string(gpus) + (gpus == 1 ? " GPU" : " GPUs");
  for (const std::string& name : order) {
    const MinMax& mm = by_name[name];
    s += (name == order.front() ? ": " : "; ") + name + " min " + fixed(mm.lo->value, 1) + " " +
         mm.lo->unit + " (gpu " + std::to_string(mm.lo->gpu.value_or(-1)) + "), max " +
         fixed(mm.hi->value, 1) + " " + mm.hi->unit;
  }
  return s;
}

std::string join(const std::vector<std::string>& parts) {
  std::string s;
  for (const std::string& p : parts) s += (s.empty() ? "" : "; ") + p;
  return s;
}

}  // namespace

CheckResult finish_probe_result(const CheckContext& ctx, CheckResult r, int gpus,
                                const std::vector<GpuFailure>& failures,
                                const std::vector<std::string>& notes) {
  std::vector<std::string> unmeasured;
  bool ecc_fault = false;
  for (const GpuFailure& f : failures) {
    unmeasured.push_back("gpu " + std::to_string(f.gpu) + ": " + f.error.to_string());
    ecc_fault |= f.error.message.starts_with("cudaErrorECCUncorrectable");
  }

  finalize(r, "VIGIL-CUDA");
  if (ecc_fault) {
    r.status = Status::kFail;
    r.fault_code = "VIGIL-CUDA-ECC-UNCORRECTABLE";
    r.message = join(unmeasured) + (r.message.empty() ? "" : "; " + r.message);
  } else if (!unmeasured.empty()) {
    if (r.status == Status::kFail) {
      r.message += "; could not measure " + join(unmeasured);
    } else {
      r.status = Status::kError;
      r.fault_code = "VIGIL-CUDA-CALL";
      r.message = "could not measure " + join(unmeasured) +
                  "; check nvidia-smi and dmesg (Xid) on this node";
    }
  } else if (r.message.empty()) {
    r.message = summary(r, gpus);
    bool any_threshold = false;
    for (const Measurement& m : r.measurements) any_threshold |= m.threshold.has_value();
    if (!ctx.sku) {
      r.message += "; unknown SKU: figures only, no thresholds";
    } else if (!any_threshold) {
      r.message +=
          "; SKU " + ctx.sku->name + " has no thresholds for " + r.check + ": figures only";
    }
  }
  if (!notes.empty()) r.message += "; " + join(notes);
  return r;
}

void add_mismatches(CheckResult& r, const CheckContext& ctx, int gpu, std::string_view measurement,
                    unsigned long long mismatches, std::string_view tested,
                    std::string_view detail) {
  Measurement& m = add_measurement(r, ctx, std::string(measurement),
                                   static_cast<double>(mismatches), "count", gpu);
  default_threshold(m, Op::kLe, 0);
  if (mismatches == 0) return;
  r.message += (r.message.empty() ? "" : "; ") + std::string("gpu ") + std::to_string(gpu) + ": " +
               std::to_string(mismatches) + " mismatching words in " + std::string(tested);
  if (!detail.empty()) r.message += " (" + std::string(detail) + ")";
}

namespace {

constexpr std::size_t kMinHistory = 3;

// Per judged measurement of r: the GPUs' figures in GPU order.
std::map<std::string, std::vector<const Measurement*>> judged_by_name(
    const CheckResult& r, const detect::DetectConfig& cfg) {
  std::map<std::string, std::vector<const Measurement*>> by_name;
  for (const auto& m : r.measurements)
    if (m.gpu && cfg.find_metric(r.check, m.name, m.unit)) by_name[m.name].push_back(&m);
  return by_name;
}

// The median of m's GPU history, when it has at least kMinHistory figures.
std::optional<double> history_median(const GpuHistory& history, const Measurement& m) {
  auto it = history.find({m.name, *m.gpu});
  if (it == history.end() || it->second.size() < kMinHistory) return std::nullopt;
  return median(it->second);
}

// How far `value` lies on the bad side of `expected`, as a fraction of it.
double shortfall(double value, double expected, detect::Direction direction) {
  if (expected <= 0) return 0;
  return direction == detect::Direction::kHigherIsBetter ? (expected - value) / expected
                                                         : (value - expected) / expected;
}

}  // namespace

std::string gpu_history_key(std::string_view measurement, int gpu) {
  return std::string(measurement) + "/gpu" + std::to_string(gpu);
}

std::map<int, int> plan_repeats(const CheckResult& r, const detect::DetectConfig& cfg,
                                const GpuHistory& history) {
  const auto by_name = judged_by_name(r, cfg);
  std::vector<std::pair<double, int>> suspects;  // (how far below the others, gpu)
  int gpus = 0;
  for (const auto& [name, ms] : by_name) {
    gpus = std::max(gpus, static_cast<int>(ms.size()));
    const detect::MetricSpec* spec = cfg.find_metric(r.check, name, ms.front()->unit);
    std::vector<double> values;
    for (const auto* m : ms) values.push_back(m->value);
    const detect::Margins& own = cfg.margins_for(*spec);
    const detect::Margins cross = cfg.cross_margins(own);
    for (size_t i = 0; i < values.size(); ++i) {
      // Against its peers at the engine's peers warn margin (a GPU a little below them is most
      // often healthy slow silicon), and not when it matches its own history: then it has
      // always been that slow and only a figure past the peers fail margin needs confirming.
      if (!detect::is_suspicious(values, i, cross, spec->direction, cfg.min_peers)) continue;
      std::vector<double> others = values;
      others.erase(others.begin() + static_cast<long>(i));
      std::nth_element(others.begin(), others.begin() + others.size() / 2, others.end());
      const double centre = others[others.size() / 2];
      const double below_peers = shortfall(values[i], centre, spec->direction);
      const auto expected = history_median(history, *ms[i]);
      if (expected && !detect::is_suspicious(values[i], *expected, own, spec->direction) &&
          below_peers < cross.fail)
        continue;
      suspects.push_back({below_peers, *ms[i]->gpu});
    }
    for (const auto* m : ms) {  // a step down from the GPU's own history
      const auto expected = history_median(history, *m);
      if (expected &&
          detect::is_suspicious(m->value, *expected, cfg.margins_for(*spec), spec->direction))
        suspects.push_back({shortfall(m->value, *expected, spec->direction), *m->gpu});
    }
  }
  std::sort(suspects.rbegin(), suspects.rend());
  std::map<int, int> plan;
  // A whole node below its SKU bound has no slow peer to single out: when most GPUs break the
  // bound of a judged figure, every GPU is measured twice more, so the drainer can confirm the
  // node's level in one report. Only a node below its bound pays this (it is being drained).
  for (const auto& [name, ms] : by_name) {
    const detect::MetricSpec* spec = cfg.find_metric(r.check, name, ms.front()->unit);
    const auto below = std::count_if(ms.begin(), ms.end(), [&](const Measurement* m) {
      if (m->status() != Status::kPass) return true;
      const auto expected = history_median(history, *m);
      return expected &&
             detect::is_suspicious(m->value, *expected, cfg.margins_for(*spec), spec->direction);
    });
    if (ms.size() >= 2 && 2 * static_cast<std::size_t>(below) > ms.size()) {
      for (const auto* m : ms) plan[*m->gpu] = 2;
    }
  }
  if (!plan.empty()) return plan;
  // Two GPUs at least: a fault and a neighbour throttled by someone else's heat can be slow in
  // the same run, and with one slot the fault waited a cycle behind the hotter GPU (the fleet
  // simulation's one missed 10% HBM fault, docs/benchmarks.md, 2026-12-03).
  int budget = std::max(4, gpus / 2);
  for (const auto& [how_far, gpu] : suspects) {
    if (budget <= 0) break;
    if (plan.count(gpu)) continue;
    const int n = std::min(2, budget);
    plan[gpu] = n;
    budget -= n;
  }
  return plan;
}

std::vector<LearnedFigure> learnable_figures(const CheckResult& r, const GpuHistory& history,
                                             const detect::DetectConfig& cfg) {
  std::vector<LearnedFigure> out;
  for (const auto& [name, ms] : judged_by_name(r, cfg)) {
    const detect::MetricSpec* spec = cfg.find_metric(r.check, name, ms.front()->unit);
    const double fail = cfg.margins_for(*spec).fail;
    std::vector<double> values;
    for (const auto* m : ms) {
      std::vector<double> all = m->repeats;
      all.push_back(m->value);
      values.push_back(median(std::move(all)));
    }
    for (std::size_t i = 0; i < ms.size(); ++i) {
      const Measurement& m = *ms[i];
      if (m.status() != Status::kPass || !std::isfinite(values[i])) continue;
      const auto expected = history_median(history, m);
      if (expected && shortfall(values[i], *expected, spec->direction) >= fail) continue;
      if (values.size() > static_cast<std::size_t>(cfg.min_peers)) {
        std::vector<double> others = values;
        others.erase(others.begin() + static_cast<long>(i));
        if (shortfall(values[i], median(std::move(others)), spec->direction) >= fail) continue;
      }
      out.push_back({name, *m.gpu, values[i]});
    }
  }
  return out;
}

void add_repeats(CheckResult& r, const CheckResult& again, int gpu) {
  for (const auto& a : again.measurements) {
    if (a.gpu != gpu) continue;
    for (auto& m : r.measurements)
      if (m.gpu == gpu && m.name == a.name && m.unit == a.unit && m.repeats.size() < kMaxRepeats)
        m.repeats.push_back(a.value);
  }
}

}  // namespace vigil::cuda_probe
