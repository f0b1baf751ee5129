#include "cuda/sdc_verdict.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <utility>

namespace vigil::cuda_probe {
namespace {

std::string gpu_list(const std::vector<int>& gpus) {
  std::string s;
  for (std::size_t i = 0; i < gpus.size(); ++i)
    s += (i == 0 ? "" : i + 1 == gpus.size() ? " and " : ", ") + ("gpu " + std::to_string(gpus[i]));
  return s;
}

std::string elements(std::uint64_t n) {
  return std::to_string(n) + (n == 1 ? " element" : " elements");
}

void append(std::string& message, const std::string& part) {
  message += (message.empty() ? "" : "; ") + part;
}

// What one GPU's own GEMMs showed in one precision, or "" when all was right.
std::string own_findings(const SdcOutcome& o, std::int64_t all) {
  std::string s;
  const std::string head =
      "gpu " + std::to_string(o.gpu) + " " + std::string(precision_name(o.precision)) + ": ";
  if (o.exact_wrong)
    append(s, head + elements(o.exact_wrong) + " of " + std::to_string(all) +
                  " wrong in the exact integer GEMM, first " + describe(o.exact_first));
  if (o.cpu_wrong)
    append(s, head + elements(o.cpu_wrong) + " of the integer GEMM differ from the CPU's");
  if (o.repeat_wrong)
    append(s, head + std::to_string(o.repeat_wrong) + (o.repeat_wrong == 1 ? " value" : " values") +
                  " changed over " + std::to_string(o.repeats) + " repeats of one GEMM, first " +
                  describe(o.repeat_first));
  return s;
}

}  // namespace

std::string describe(const SdcElement& e) {
  char buf[128];
  std::snprintf(buf, sizeof buf, "(row %lld, col %lld): %.9g, expected %.9g",
                static_cast<long long>(e.row), static_cast<long long>(e.col),
                static_cast<double>(e.got), static_cast<double>(e.want));
  return buf;
}

SdcCrossGpu compare_across_gpus(const std::vector<SdcOutcome>& outcomes) {
  // (precision, signature) -> the group's outcomes, in GPU order.
  std::map<std::pair<SdcPrecision, std::string>, std::vector<const SdcOutcome*>> groups;
  for (const SdcOutcome& o : outcomes) groups[{o.precision, o.signature}].push_back(&o);
  SdcCrossGpu out;
  for (const auto& [key, group] : groups) {
    if (group.size() < 2) continue;
    std::map<std::uint64_t, std::vector<int>> by_print;
    for (const SdcOutcome* o : group) by_print[o->fingerprint].push_back(o->gpu);
    if (by_print.size() == 1) continue;
    const auto majority = std::find_if(by_print.begin(), by_print.end(), [&](const auto& kv) {
      return kv.second.size() >= 2 && kv.second.size() * 2 > group.size();
    });
    if (majority == by_print.end()) {
      SdcUndecided u{key.first, {}};
      for (const SdcOutcome* o : group) u.gpus.push_back(o->gpu);
      out.undecided.push_back(std::move(u));
      continue;
    }
    for (const SdcOutcome* o : group)
      if (o->fingerprint != majority->first)
        out.odd.push_back({o->gpu, key.first, majority->second.front()});
  }
  return out;
}

bool any_comparable(const std::vector<SdcOutcome>& outcomes) {
  std::set<int> gpus;
  std::map<std::pair<SdcPrecision, std::string>, std::set<int>> groups;
  for (const SdcOutcome& o : outcomes) {
    gpus.insert(o.gpu);
    groups[{o.precision, o.signature}].insert(o.gpu);
  }
  if (gpus.size() < 2) return true;
  return std::any_of(groups.begin(), groups.end(),
                     [](const auto& g) { return g.second.size() >= 2; });
}

void judge_sdc(CheckResult& r, const CheckContext& ctx, const std::vector<SdcOutcome>& outcomes,
               const SdcCrossGpu& cross, const std::vector<SdcCrossDiff>& diffs, std::int64_t all) {
  std::map<int, std::uint64_t> wrong;  // every GPU that ran, in order
  for (const SdcOutcome& o : outcomes) {
    wrong[o.gpu] += std::max(o.exact_wrong, o.cpu_wrong) + o.repeat_wrong;
    if (std::string own = own_findings(o, all); !own.empty()) append(r.message, own);
  }
  for (const SdcCrossDiff& d : diffs) {
    // An odd result with no element different would be a fingerprint collision: still wrong
    // bits somewhere the diff could not see, so it counts as one.
    wrong[d.odd.gpu] += std::max<std::uint64_t>(d.wrong, 1);
    const std::string head = "gpu " + std::to_string(d.odd.gpu) + " " +
                             std::string(precision_name(d.odd.precision)) + ": ";
    const std::string whose = "the result of gpu " + std::to_string(d.odd.reference_gpu) +
                              " and the GPUs agreeing with it";
    append(r.message, d.wrong ? head + elements(d.wrong) + " differ from " + whose + ", first " +
                                    describe(d.first)
                              : head + "its result's fingerprint differs from " + whose +
                                    " though no element read back does (counted as 1)");
  }
  for (const auto& [gpu, count] : wrong) {
    Measurement& m =
        add_measurement(r, ctx, "sdc_mismatches", static_cast<double>(count), "count", gpu);
    default_threshold(m, Op::kLe, 0);
  }
  for (const SdcUndecided& u : cross.undecided) {
    std::map<int, std::uint64_t> print;
    for (const SdcOutcome& o : outcomes)
      if (o.precision == u.precision) print[o.gpu] = o.fingerprint;
    for (int gpu : u.gpus) {
      const auto others = std::count_if(u.gpus.begin(), u.gpus.end(),
                                        [&](int g) { return print[g] != print[gpu]; });
      Measurement& m =
          add_measurement(r, ctx, "sdc_unresolved", static_cast<double>(others), "count", gpu);
      // Warns only: the fail bound (the group's size) lies beyond any possible count.
      default_threshold(m, Op::kLe, static_cast<double>(u.gpus.size()), 0.0);
    }
    append(r.message, std::string(precision_name(u.precision)) + " results of " + gpu_list(u.gpus) +
                          " differ bitwise and no majority says which is wrong");
  }
}

}  // namespace vigil::cuda_probe
