// The drainer configuration's defaults and lookups (the YAML file is read by config_file.cpp,
// outside the core).
#include "vigil/drainer/config.h"

#include "vigil/report/check_catalog.h"

namespace vigil::drainer {

CheckPolicy PolicyConfig::for_check(std::string_view check, std::string_view fault_code) const {
  CheckPolicy p = defaults;
  if (auto it = checks.find(std::string(check)); it != checks.end()) p = it->second;
  if (fatal_checks.count(std::string(check)) ||
      (!fault_code.empty() && fatal_fault_codes.count(std::string(fault_code)))) {
    p.drain_after = 1;
  }
  if (!fault_code.empty()) {
    if (auto it = fault_code_drain_after.find(std::string(fault_code));
        it != fault_code_drain_after.end())
      p.drain_after = it->second;
  }
  return p;
}

void shared_fatal_rule(const PolicyConfig& policy, SharedDrainPolicy& out) {
  out.fatal_checks.clear();
  std::set<std::string> names = policy.fatal_checks;
  for (const CheckSpec& c : check_catalog()) names.insert(std::string(c.name));
  for (const auto& [name, _] : policy.checks) names.insert(name);
  for (const std::string& n : names)
    if (policy.for_check(n).drain_after <= 1) out.fatal_checks.insert(n);
  out.fatal_fault_codes = policy.fatal_fault_codes;
  out.lenient_fault_codes.clear();
  // A fault code's own drain_after replaces whatever the check and the fatal lists say.
  for (const auto& [code, after] : policy.fault_code_drain_after) {
    if (after <= 1) {
      out.fatal_fault_codes.insert(code);
    } else {
      out.fatal_fault_codes.erase(code);
      out.lenient_fault_codes.insert(code);
    }
  }
}

PolicyConfig default_policy() {
  PolicyConfig p;
  p.defaults = {2, 2};
  // Hard hardware findings: one failing report is enough (DCGM treats these as FAIL).
  // The one list the Slurm hooks use too (vigil/report/drain_decision.h).
  p.fatal_checks = default_fatal_checks();
  p.fatal_fault_codes = {};
  // Fail-slow verdicts (overridden by the detection section of the config).
  const DetectionSettings detection;
  p.fault_code_drain_after[std::string(kSlowConfirmedFaultCode)] = detection.confirmed_drain_after;
  p.fault_code_drain_after[std::string(kSlowFaultCode)] = detection.unconfirmed_drain_after;
  // A k-node fabric job proves its blame (slow with >= 2 partners that are fine elsewhere,
  // docs/fabric.md): one job is enough, unlike a 2-node job's unattributed fail below.
  p.fault_code_drain_after["VIGIL-FABRIC-LOCALIZED"] = 1;
  p.fault_code_drain_after["VIGIL-DOMAIN-LOCALIZED"] = 1;  // the same rounds, in an NVLink domain
  // Noisy performance figures need repeated evidence before a drain.
  // fabric_allreduce_ib also needs it for another reason: one slow pair cannot say which of
  // its two nodes is at fault, and only a node that keeps failing with new partners is.
  // The catalog's noisy entries (vigil/report/check_catalog.h, through drain_decision.h).
  for (const std::string& c : default_noisy_checks()) p.checks[c] = {3, 2};
  return p;
}

}  // namespace vigil::drainer
