// host_services: are the GPU stack's systemd services running (host_services.h for the reader;
// docs/checks-host.md)? Why: NVIDIA/NVSentinel#883, Fabric Manager dead for 20 days while the
// NVML fabric state still read registered (its ADR-050 shows the state is latched at
// registration), and GPUd#1151, the same. The units and what a unit that is not running means:
//   - nvidia-fabricmanager.service, on a node with NVSwitches (PCI vendor 0x10de, class
//     0x0680): NVIDIA's Fabric Manager User Guide: FM configures the NVSwitch memory fabric and
//     handles the CUDA job life cycle against it, and "aborts the process" when the loaded driver
//     is not the version it was built for (a failed unit after a driver upgrade). Down fails.
//     Nodes without NVSwitches are not judged: the package's unit fails to start there by design.
//   - nvidia-imex.service: required where the SKU runs IMEX as a resident service
//     (nvlink.imex_resident; NVIDIA IMEX guide), down fails; elsewhere, down warns.
//   - nvidia-persistenced.service (NVIDIA/nvidia-persistenced's own unit): without it the driver
//     tears a GPU's state down when its last client exits (NVIDIA's "Driver Persistence"
//     document); jobs still run, slower to start: down warns.
//   - the SKU file's services.required: missing, stopped or failed fails.
// Only the SKU's required units are judged when not installed: a Fabric Manager the NVIDIA GPU
// Operator runs in its driver container has no host unit (NVSentinel ADR-050 declares presence
// only where the site says it is required, for the same reason). An installed unit is judged when
// it is required, enabled, or not inactive (failed, running, restarting); one installed but
// neither enabled nor running is not in use here.
// A unit systemd is restarting (activating, auto-restart) or starting or stopping warns: the
// next run sees where it went, and a restart loop that hits StartLimitBurst ends failed. Restart
// loops: NRestarts (systemd 235+) grew by >= 3 per 600 s since the previous run warns
// (ADR-050's FabricManagerFlapping: 3 restarts in 600 s). A Fabric Manager that is down is
// cross-checked with NVML: GPUs still registered say it died after registration, #883's case,
// which nvml_fabric alone passes.
// No systemd (a Slurm-on-Kubernetes slurmd container, no systemctl): skipped; systemctl that
// fails otherwise: error. Never fail for Vigil's own setup.
#include "host/host_services.h"

#include <algorithm>
#include <charconv>
#include <sstream>
#include <variant>

#include "check_factories.h"
#include "core/counter_state.h"
#include "host/pcie_aer.h"
#include "nvml/nvml_common.h"
#include "vigil/base/process.h"
#include "vigil/base/strings.h"
#include "vigil/checks/findings.h"

namespace vigil {
namespace services {

namespace {

std::optional<std::uint64_t> whole_number(std::string_view s) {
  std::uint64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

}  // namespace

std::vector<UnitState> parse_show(std::string_view text) {
  std::vector<UnitState> units;
  bool in_block = false;
  std::istringstream lines{std::string(text)};
  for (std::string line; std::getline(lines, line);) {
    if (line.empty()) {
      in_block = false;
      continue;
    }
    const size_t eq = line.find('=');
    if (eq == std::string::npos) continue;
    if (!in_block) units.emplace_back();
    in_block = true;
    UnitState& u = units.back();
    const std::string key = line.substr(0, eq), value = line.substr(eq + 1);
    if (key == "Id") u.id = value;
    if (key == "LoadState") u.load = value;
    if (key == "ActiveState") u.active = value;
    if (key == "SubState") u.sub = value;
    if (key == "Result") u.result = value;
    if (key == "UnitFileState") u.unit_file = value;
    if (key == "NRestarts") u.restarts = whole_number(value);
    if (key == "Type") u.type = value;
  }
  return units;
}

}  // namespace services

namespace {

constexpr std::string_view kName = "host_services";
constexpr const char* kFabricManager = "nvidia-fabricmanager.service";
constexpr const char* kImex = "nvidia-imex.service";
constexpr const char* kPersistenced = "nvidia-persistenced.service";
constexpr const char* kFaultDown = "VIGIL-SERVICE-DOWN";
constexpr const char* kFaultMissing = "VIGIL-SERVICE-NOT-INSTALLED";
constexpr const char* kFaultRestarting = "VIGIL-SERVICE-RESTARTING";
constexpr const char* kFaultFlapping = "VIGIL-SERVICE-FLAPPING";
// NVSentinel ADR-050 (docs/designs/050-system-services-monitor-scope.md): flapping is >= 3
// restarts in 600 s.
constexpr double kFlapRestarts = 3, kFlapWindowS = 600;

struct Watched {
  std::string unit;
  bool required = false;  // judged even when not installed or not in use
  Status down = Status::kFail;
};

std::vector<Watched> watched_units(const CheckContext& ctx) {
  std::vector<Watched> out;
  auto add = [&](const std::string& unit, bool required, Status down) {
    if (std::none_of(out.begin(), out.end(), [&](const Watched& w) { return w.unit == unit; }))
      out.push_back({unit, required, down});
  };
  if (ctx.sku) {
    for (const std::string& u : ctx.sku->services.required) add(u, true, Status::kFail);
    if (ctx.sku->nvlink.imex_resident) add(kImex, true, Status::kFail);
  }
  if (aer::count_functions(ctx.sysfs_root, "nvswitch") > 0)
    add(kFabricManager, false, Status::kFail);
  add(kImex, false, Status::kWarn);
  add(kPersistenced, false, Status::kWarn);
  return out;
}

// What the node's systemd says of `units`, or the result that ends the check.
std::variant<std::vector<services::UnitState>, CheckResult> ask_systemd(
    const CheckContext& ctx, const std::vector<Watched>& units) {
  std::vector<std::string> argv{ctx.host.systemctl, "show"};
  for (const char* p : services::kProperties) argv.insert(argv.end(), {"-p", p});
  argv.push_back("--");
  for (const Watched& w : units) argv.push_back(w.unit);
  LaunchOptions opts;
  opts.timeout = std::chrono::seconds(5);
  const auto ran = run_command(argv, opts);
  if (!ran) return error(kName, "systemctl: " + ran.error().to_string(), "VIGIL-SERVICE-QUERY");
  const LaunchResult& r = ran.value();
  const std::string said = std::string(trim(r.err.empty() ? r.out : r.err));
  if (r.timed_out) return error(kName, "systemctl show timed out after 5 s", "VIGIL-SERVICE-QUERY");
  // systemctl's words without systemd as PID 1 (systemd 252, tests/fixtures/systemd), and a
  // node without systemctl: not this node's init, so nothing to judge.
  if (r.exit_code == 127 || said.find("not been booted with systemd") != std::string::npos)
    return skipped(kName, "systemd is not this node's init (a container?): " +
                              said.substr(0, said.find('\n')));
  if (r.exit_code != 0 || r.term_signal != 0)
    return error(kName,
                 "systemctl show exited " + std::to_string(shell_status(r)) + ": " +
                     said.substr(0, std::min<size_t>(said.size(), 200)),
                 "VIGIL-SERVICE-QUERY");
  auto states = services::parse_show(r.out);
  if (states.size() != units.size())
    return error(kName,
                 "systemctl show answered " + std::to_string(states.size()) + " units for " +
                     std::to_string(units.size()) + " asked",
                 "VIGIL-SERVICE-QUERY");
  return states;
}

// " (NVML still reads 8 of 8 GPUs registered in the NVLink fabric: ...)" for a Fabric
// Manager that is down; "" when NVML cannot say.
std::string fabric_cross_check(const CheckContext& ctx) {
  const auto t = nvml::fabric_tally(ctx);
  if (!t || t->gpus == 0) return "";
  const std::string n = std::to_string(t->registered) + " of " + std::to_string(t->gpus);
  if (t->registered > 0)
    return " (NVML still reads " + n +
           " GPUs registered: it died after registration, which the fabric state alone misses)";
  return " (NVML reads " + n + " GPUs registered: CUDA jobs fail with 802)";
}

// systemctl(1), is-enabled: the states in which systemd starts the unit on its own (a
// generator's or an Also= unit's included).
bool enabled(const std::string& unit_file) {
  for (const char* s : {"enabled", "enabled-runtime", "linked", "linked-runtime", "alias",
                        "indirect", "generated", "transient"})
    if (unit_file == s) return true;
  return false;
}

// "not started yet, 42 s after boot" while the boot is younger than the grace nvml_fabric and
// nvlink_imex give (a unit ordered after network-online.target is inactive, its start job
// waiting); "" after it, or when the uptime is unknown.
std::string starting_after_boot(const CheckContext& ctx) {
  const auto up = uptime_s(ctx);
  const double grace = std::chrono::duration<double>(ctx.fabric_wait.grace).count();
  if (!up || *up >= grace) return "";
  return " not started yet, " + std::to_string(static_cast<long>(*up)) + " s after boot";
}

// Judges one unit; false when it is not in use here (not reported).
bool judge_unit(CheckResult& r, const CheckContext& ctx, CounterState& state, const Watched& w,
                const services::UnitState& s, Findings& found) {
  const std::string& name = w.unit;
  if (s.load != "loaded") {
    if (!w.required) return false;
    add_measurement(r, ctx, "service_active", 0, "bool", {}, name);
    found.add(
        Status::kFail,
        name + (s.load == "not-found" ? " is not installed" : " cannot load (" + s.load + ")"),
        kFaultMissing);
    return true;
  }
  if (!w.required && !enabled(s.unit_file) && s.active == "inactive") return false;
  // systemctl is-active counts active, reloading and refreshing; a oneshot that ran to success
  // and is not RemainAfterExit= reads inactive/dead, Result=success: done, not down.
  const bool ran_once = s.type == "oneshot" && s.active == "inactive" && s.result == "success";
  const bool up =
      s.active == "active" || s.active == "reloading" || s.active == "refreshing" || ran_once;
  add_measurement(r, ctx, "service_active", up ? 1 : 0, "bool", {}, name);
  const std::string cross = name == kFabricManager ? fabric_cross_check(ctx) : "";
  if (up) {
  } else if (s.active == "failed") {
    found.add(w.down, name + " failed (" + s.result + ")" + cross, kFaultDown);
  } else if (s.active == "inactive") {
    const std::string young = starting_after_boot(ctx);
    if (young.empty())
      found.add(w.down, name + " is stopped" + cross, kFaultDown);
    else
      found.add(Status::kWarn, name + young, kFaultRestarting);
  } else if (s.active == "activating" && s.sub == "auto-restart") {
    found.add(Status::kWarn, name + " exited (" + s.result + ") and systemd is restarting it",
              kFaultRestarting);
  } else {  // activating, deactivating, maintenance, a state newer than this code
    found.add(Status::kWarn, name + " is " + s.active, kFaultRestarting);
  }
  if (s.restarts && state.enabled()) {
    const auto change = state.update("restarts " + name, *s.restarts);
    const auto since = state.seconds_since_previous();
    if (change.delta && since) {
      const double per_window = static_cast<double>(*change.delta) * kFlapWindowS /
                                std::max<double>(*since, kFlapWindowS);
      add_measurement(r, ctx, "service_restarts_delta", static_cast<double>(*change.delta), "count",
                      {}, name);
      if (per_window >= kFlapRestarts)
        found.add(Status::kWarn,
                  name + " restarted " + std::to_string(*change.delta) + " times in " +
                      std::to_string(std::max<std::int64_t>(*since / 60, 1)) + " min",
                  kFaultFlapping);
    }
  }
  return true;
}

class HostServicesCheck final : public Check {
 public:
  std::string_view name() const override { return kName; }
  Applies applies(const CheckContext&) const override { return {}; }

  CheckResult run(const CheckContext& ctx) override {
    const std::vector<Watched> units = watched_units(ctx);
    auto asked = ask_systemd(ctx, units);
    if (auto* done = std::get_if<CheckResult>(&asked)) return std::move(*done);
    const auto& states = std::get<std::vector<services::UnitState>>(asked);
    CheckResult r;
    r.check = std::string(kName);
    CounterState state(ctx.state_dir, kName, ctx.node);
    Findings found;
    std::vector<std::string> judged;
    for (size_t i = 0; i < units.size(); ++i)
      if (judge_unit(r, ctx, state, units[i], states[i], found)) judged.push_back(units[i].unit);
    if (judged.empty()) {
      std::vector<std::string> names;
      for (const Watched& w : units) names.push_back(w.unit);
      return skipped(kName, "not installed or not in use on this node: " + short_list(names, 4));
    }
    if (auto saved = state.save(); !saved)
      return error(kName, saved.error().to_string(), "VIGIL-SERVICE-STATE");
    if (found.conclude(r, "VIGIL-SERVICE"))
      r.message =
          short_list(judged, 4, ", ", " +") + (judged.size() == 1 ? " is" : " are") + " active";
    return r;
  }
};

}  // namespace

std::unique_ptr<Check> make_host_services_check() { return std::make_unique<HostServicesCheck>(); }

}  // namespace vigil
