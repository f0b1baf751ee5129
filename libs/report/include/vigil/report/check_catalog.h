#pragma once
// The check catalog: one line per check Vigil knows (libs/report/src/check_catalog.cpp), with
// what every side needs to know about it without seeing its class: its name and short name, the
// suites it runs in, its time box, how the drainer treats its fail, and the performance figures
// vigil::detect judges. The drainer, the Slurm hooks, vigil::detect and the registry read it; it
// depends on nothing of Vigil's (a leaf of vigil::report, so nothing needs vigil::checks for it).
//
// Derived from it: default_fatal_checks() and default_noisy_checks() (drain_decision.h, the
// drainer's and the hooks' defaults), DetectConfig::defaults()'s metrics, known_check_names()
// and the no-CUDA stand-ins' names. The registry's lists (checks/src/registry.cpp) are checked
// against it, order included (tests/checks/check_catalog_registry_test.cpp).
#include <chrono>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace vigil {

// Where a check runs. Bits of CheckSpec::suites.
enum class CheckSuite : unsigned {
  kQuick = 1,     // vigil-check run --suite quick
  kFull = 2,      // vigil-check run --suite full (quick checks run in full too)
  kPassive = 4,   // the Slurm hooks' passive suite (passive_checks())
  kFabric = 8,    // vigil-check fabric, across the nodes of one allocation (fabric_checks())
  kDomain = 16,   // vigil-check fabric --network nvlink-domain: the trays of one NVLink domain
                  // (domain_checks())
  kQualify = 32,  // vigil-check run --suite qualify: every full-suite check runs there too
};
constexpr unsigned operator|(CheckSuite a, CheckSuite b) {
  return static_cast<unsigned>(a) | static_cast<unsigned>(b);
}
constexpr unsigned operator|(unsigned a, CheckSuite b) { return a | static_cast<unsigned>(b); }

// What the drainer's default policy does with a check's fail (docs/drainer.md, "Built-in
// defaults"); a site's drainer.yaml `policy` overrides it.
enum class CheckSeverity {
  kDefault,  // policy.defaults: drain after 2 failing reports
  kFatal,    // policy.fatal_checks: one failing report drains (the hooks' list too)
  kNoisy,    // a noisy performance figure: drain after 3 failing reports
};

// One performance figure vigil::detect judges against peers, history and the fleet
// (detect::MetricSpec, docs/detection.md).
struct PerfMetric {
  std::string_view measurement;  // as the check emits it; "*" = every measurement in `unit`
  std::string_view unit;         // with "*": which ones; else the expected unit
  std::string_view kind;         // detect's margin group: gemm, hbm, pcie, allreduce
  bool higher_is_better = true;
};

struct CheckSpec {
  std::string_view name;             // Check::name(): reports, threshold files, drainer policy
  std::string_view short_name;       // Check::short_name(): Slurm reasons ("vigil: remap ...")
  unsigned suites = 0;               // CheckSuite bits
  std::chrono::seconds timeout{60};  // Check::timeout(): the runner kills the check after it
  CheckSeverity severity = CheckSeverity::kDefault;
  std::span<const PerfMetric> metrics;  // empty: detect does not judge this check
  // A per-GPU fail of this check is that GPU's own fault, so the drain counts in the part's
  // history (drainer parts.h). Not for noisy or environmental checks (clock events,
  // temperature, performance probes: a fan wall or a PSU shelf slows several GPUs) nor for
  // links and leftovers (review W7).
  bool charges_part = false;

  bool runs_in(CheckSuite s) const { return (suites & static_cast<unsigned>(s)) != 0; }
  // In `run --suite full` but not in a quick run.
  bool full_only() const { return runs_in(CheckSuite::kFull) && !runs_in(CheckSuite::kQuick); }
  // In `run --suite qualify` only (the full suite's checks run there too).
  bool qualify_only() const { return runs_in(CheckSuite::kQualify) && !runs_in(CheckSuite::kFull); }
};

// Not a check: the result `vigil-check repair reset-gpu` reports (the repair ladder's GPU reset,
// docs/repair.md). The drainer reads it as the rung's outcome; it never counts as a check of the
// node's health, so it has no catalog line.
inline constexpr std::string_view kGpuResetResult = "gpu_reset";

// Every check, in run order: each suite runs its checks in this order (the registry's lists
// are this table filtered by suite; the passive suite's gpu_leftovers and gpu_sanity run only
// when PassiveSelection asks for them).
std::span<const CheckSpec> check_catalog();

// The catalog's entry for `name`, or nullptr.
const CheckSpec* find_check_spec(std::string_view name);

// Names of the checks of one severity, in catalog order.
std::vector<std::string> catalog_check_names(CheckSeverity severity);

// The `vigil-check run` suite a re-check must run to run the checks a drain names (check names,
// or the short names of Slurm reasons, "sdc"): "qualify" when one runs in the qualify suite
// alone (gpu_soak), "full" when one runs in the full suite and not the quick one (gpu_sdc),
// else "" (the re-checking job's own suite has them, or no suite does: the hooks' and the fabric
// jobs' checks). A drain by gpu_sdc or gpu_soak otherwise waits for passes its quick re-checks
// never give, and lasts until a person ends it.
std::string_view suite_to_run(std::span<const std::string> checks);

}  // namespace vigil
