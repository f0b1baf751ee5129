#include "cuda/probe_result.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <string>

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

void add_memtest_errors(CheckResult& r, const CheckContext& ctx, int gpu,
                        unsigned long long mismatches, unsigned long long tested_mib,
                        std::string_view detail) {
  Measurement& m =
      add_measurement(r, ctx, "memtest_errors", static_cast<double>(mismatches), "count", gpu);
  if (!m.threshold) {
    Threshold any_mismatch;
    any_mismatch.op = Op::kLe;
    any_mismatch.fail = 0;
    any_mismatch.unit = "count";
    m.threshold = any_mismatch;
  }
  if (mismatches == 0) return;
  r.message += (r.message.empty() ? "" : "; ") + std::string("gpu ") + std::to_string(gpu) + ": " +
               std::to_string(mismatches) + " mismatching words in " + std::to_string(tested_mib) +
               " MiB";
  if (!detail.empty()) r.message += " (" + std::string(detail) + ")";
}

std::map<int, int> plan_repeats(const CheckResult& r, const detect::DetectConfig& cfg) {
  // Per judged measurement: the GPUs' figures in GPU order.
  std::map<std::string, std::vector<const Measurement*>> by_name;
  for (const auto& m : r.measurements)
    if (m.gpu && cfg.find_metric(r.check, m.name, m.unit)) by_name[m.name].push_back(&m);
  std::vector<std::pair<double, int>> suspects;  // (how far below the others, gpu)
  int gpus = 0;
  for (const auto& [name, ms] : by_name) {
    gpus = std::max(gpus, static_cast<int>(ms.size()));
    const detect::MetricSpec* spec = cfg.find_metric(r.check, name, ms.front()->unit);
    std::vector<double> values;
    for (const auto* m : ms) values.push_back(m->value);
    for (size_t i = 0; i < values.size(); ++i) {
      if (!detect::is_suspicious(values, i, cfg.margins_for(*spec), spec->direction, cfg.min_peers))
        continue;
      std::vector<double> others = values;
      others.erase(others.begin() + static_cast<long>(i));
      std::nth_element(others.begin(), others.begin() + others.size() / 2, others.end());
      const double centre = others[others.size() / 2];
      suspects.push_back({centre > 0 ? (centre - values[i]) / centre : 0, *ms[i]->gpu});
    }
  }
  std::sort(suspects.rbegin(), suspects.rend());
  std::map<int, int> plan;
  // A whole node below its SKU bound has no slow peer to single out: when most GPUs break the
  // bound of a judged figure, every GPU is measured twice more, so the drainer can confirm the
  // node's level in one report. Only a node below its bound pays this (it is being drained).
  for (const auto& [name, ms] : by_name) {
    const auto below = std::count_if(
        ms.begin(), ms.end(), [](const Measurement* m) { return m->status() != Status::kPass; });
    if (ms.size() >= 2 && 2 * static_cast<std::size_t>(below) > ms.size()) {
      for (const auto* m : ms) plan[*m->gpu] = 2;
    }
  }
  if (!plan.empty()) return plan;
  int budget = std::max(2, gpus / 4);
  for (const auto& [how_far, gpu] : suspects) {
    if (budget <= 0) break;
    if (plan.count(gpu)) continue;
    const int n = std::min(2, budget);
    plan[gpu] = n;
    budget -= n;
  }
  return plan;
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
