// Which drains are re-qualified within minutes; see requalify.h.
#include "vigil/drainer/requalify.h"

#include <algorithm>
#include <cctype>
#include <string_view>

#include "vigil/report/check_catalog.h"

namespace vigil::drainer {

namespace {

// A fault code that says "slow": the drainer's slow verdicts, a floor of one of the check's
// performance figures (its code is the check's prefix and the figure's name, "VIGIL-NCCL-BUSBW",
// checks/src/core/check.cpp finalize; a "*" figure by its unit: "...-TFLOPS"), or a fabric job's
// localization of a slow node. Wrong results, an uncorrectable ECC error seen by a probe, a
// timeout or a launch problem are not.
bool performance_fault(const CheckSpec& spec, std::string_view code) {
  if (code == kSlowFaultCode || code == kSlowConfirmedFaultCode) return true;
  auto ends_with = [&](std::string suffix) {
    for (char& c : suffix)
      c = c == '_' ? '-' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    suffix.insert(suffix.begin(), '-');
    return code.size() > suffix.size() && code.ends_with(suffix);
  };
  if (ends_with("localized")) return true;
  for (const PerfMetric& m : spec.metrics) {
    std::string name(m.measurement == "*" ? m.unit : m.measurement);
    std::erase(name, '/');
    if (ends_with(name)) return true;
  }
  return false;
}

}  // namespace

bool performance_only(const NodeRecord& s) {
  if (s.driving_checks.empty()) return false;
  return std::all_of(s.driving_checks.begin(), s.driving_checks.end(), [&](const std::string& c) {
    const CheckSpec* spec = find_check_spec(c);
    if (!spec || spec->metrics.empty()) return false;
    const auto it = s.checks.find(c);
    // Its latest fail, or nothing since it passed.
    return it == s.checks.end() || it->second.fault_code.empty() ||
           performance_fault(*spec, it->second.fault_code);
  });
}

std::optional<std::string> requalify_due(const NodeRecord& s, const PolicyConfig& p, int64_t now,
                                         int64_t last_listed) {
  if (p.requalify_after_s <= 0 || !s.drained_by_vigil || s.drained_unix <= 0) return std::nullopt;
  if (s.repair.stage != RepairStage::kNone || !performance_only(s)) return std::nullopt;
  const int64_t age = now - s.drained_unix;
  if (age < p.requalify_after_s || age > p.requalify_window_s) return std::nullopt;
  // The driving checks' latest run (the drain's own report, or a re-check since), and whether
  // each has passed since.
  int64_t last_run = s.drained_unix;
  bool passing = true;
  std::string checks;
  for (const auto& c : s.driving_checks) {
    const auto it = s.checks.find(c);
    const CheckState cs = it == s.checks.end() ? CheckState{} : it->second;
    last_run = std::max(last_run, cs.last_run_unix);
    passing = passing && cs.consecutive_passes >= 1;
    checks += (checks.empty() ? "" : ",") + c;
  }
  const std::string why =
      "requalify: drained " + std::to_string(age) + " s ago on performance alone (" + checks + ")";
  // Passed, and not listed since: the confirming re-check, at once.
  if (passing && last_run >= last_listed) return why + ", passed once: confirming";
  // Otherwise the next try (a re-check that reported, or a listing that brought none: a hold
  // refused, a step killed) waits half as long as the drain was old at the last one, at least
  // requalify_after_s: each try 1.5 times the drain's age at the one before, so a node really
  // slow is re-checked some 14 times in 6 hours, and interference of any length costs about 1.5
  // times its length. (Doubling cost 8% more node-hours in the fleet simulation's heavy tail,
  // docs/benchmarks.md "What a false drain costs".)
  const int64_t last = std::max(last_run, last_listed);
  if (now - last < std::max(p.requalify_after_s, (last - s.drained_unix) / 2)) return std::nullopt;
  return why;
}

}  // namespace vigil::drainer
