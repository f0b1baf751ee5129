// ib_counters: growth of the InfiniBand port error counters since the previous run, or, on a
// SKU whose fabric is RoCE (infiniband.link_layer: Ethernet), of the RoCE transport counters
// (ib_sysfs.h kRoceCounters).
//
// The counters are cumulative since the last reset (driver load or `perfquery -x`) and saturate,
// so their absolute value says little about the link now. The check stores each reading in
// <state_dir>/ib_counters.<node>.json and reports "<counter>_delta" since the previous one. See
// docs/checks-ib.md for the exact semantics (first run, resets, saturation, no state dir).
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

#include "check_factories.h"
#include "core/counter_state.h"
#include "ib/ib_sysfs.h"
#include "vigil/checks/findings.h"

namespace vigil {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kName = "ib_counters";
constexpr std::string_view kFaultPrefix = "VIGIL-IB";
constexpr std::string_view kFaultState = "VIGIL-IB-STATE-UNWRITABLE";

using Readings = std::vector<std::pair<const ib::PortDir*, ib::Counters>>;

// "; saturated (...): <port> <counter>" for the counters at their maximum, else "".
std::string saturated_note(const Readings& readings, const ib::CounterSet& set) {
  std::vector<std::string> saturated;
  for (const auto& [port, counters] : readings) {
    for (const auto& spec : set.specs) {
      const auto it = counters.find(spec.name);
      if (it != counters.end() && it->second >= spec.saturated()) {
        saturated.push_back(port->id() + " " + std::string(spec.name));
      }
    }
  }
  return saturated.empty() ? ""
                           : "; saturated (further errors invisible, clear with perfquery -x): " +
                                 short_list(saturated, 2);
}

struct Increase {
  std::string text;  // "mlx5_0/1 symbol_error +120"
  size_t measurement;
};

// What the readings changed against the stored ones.
struct Deltas {
  std::vector<Increase> increases;
  std::vector<std::string> new_ports, resets;
};

// Adds a "<counter>_delta" measurement per port and counter, updating `state`.
Deltas add_deltas(CheckResult& r, const CheckContext& ctx, CounterState& state,
                  const Readings& readings, const ib::CounterSet& set) {
  Deltas d;
  for (const auto& [port, counters] : readings) {
    const std::string id = port->id();
    int unseen = 0;
    for (const auto& spec : set.specs) {
      const std::string name(spec.name);
      if (!counters.count(name)) continue;  // an HCA without it (kRoceCounters)
      const CounterState::Change change = state.update(id + " " + name, counters.at(name));
      std::uint64_t delta = change.delta.value_or(0);
      unseen += !change.delta.has_value();
      if (change.reset) {
        // Went down: counters were cleared (perfquery -x, driver reload, reboot). When within
        // the interval the errors happened is unknown, so restart the baseline, no fail.
        d.resets.push_back(id + " " + name);
        delta = 0;
      }
      add_measurement(r, ctx, name + "_delta", static_cast<double>(delta), "count", {}, id);
      if (delta > 0) {
        d.increases.push_back(
            {id + " " + name + " +" + std::to_string(delta), r.measurements.size() - 1});
      }
    }
    if (unseen == static_cast<int>(counters.size()) && unseen > 0 && state.has_previous()) {
      d.new_ports.push_back(id);
    }
  }
  return d;
}

// "symbol_error_delta" -> "VIGIL-IB-COUNTER-SYMBOL-ERROR"
std::string counter_fault(std::string_view measurement) {
  measurement.remove_suffix(std::string_view("_delta").size());
  std::string fault = "VIGIL-IB-COUNTER-";
  for (char c : measurement) {
    fault += c == '_' ? '-' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }
  return fault;
}

// Judges the increases (fault code per counter) and says what a passing run recorded.
void conclude_deltas(CheckResult& r, const Deltas& d, const CounterState& state, size_t ports) {
  Findings found;
  for (const auto& inc : d.increases) {
    const Measurement& m = r.measurements[inc.measurement];
    found.add(m.status(), inc.text, counter_fault(m.name));
  }
  const bool passed = found.conclude(r, kFaultPrefix);  // else the worst increases are the message
  if (passed && !state.has_previous()) {
    r.message = "baseline recorded";
    if (!state.load_problem().empty()) r.message += " (" + state.load_problem() + ")";
  } else if (passed) {
    std::string since;
    if (auto s = state.seconds_since_previous()) since = " in " + std::to_string(*s) + " s";
    if (d.increases.empty()) {
      r.message = "no new errors on " + std::to_string(ports) + " ports" + since;
    } else {
      std::vector<std::string> texts;
      for (const auto& inc : d.increases) texts.push_back(inc.text);
      r.message = "increases within thresholds" + since + ": " + short_list(texts, 3);
    }
    if (!d.new_ports.empty()) r.message += "; baseline recorded for " + short_list(d.new_ports, 3);
  }
  if (!d.resets.empty()) {
    r.message += "; counter reset, baseline restarted: " + short_list(d.resets, 2);
  }
}

class IbCountersCheck final : public Check {
 public:
  std::string_view name() const override { return kName; }
  Applies applies(const CheckContext&) const override {
    return {};  // Whether IB exists is decided from sysfs in run() (skipped when none).
  }

  CheckResult run(const CheckContext& ctx) override {
    // The SKU's fabric decides which ports count and which counters judge them.
    const std::string layer = ctx.sku ? ctx.sku->infiniband.link_layer : "InfiniBand";
    const ib::CounterSet& set = ib::counters_for(layer);
    auto scan = ib::scan_ports(ctx.sysfs_root, layer,
                               ctx.sku ? ctx.sku->infiniband.devices : std::vector<std::string>{});
    if (!scan)
      return error(kName, scan.error().to_string(), std::string(ib::kFaultSysfsUnreadable));
    // Missing ports are ib_port's finding (VIGIL-IB-PORTS-MISSING); no need to report it twice.
    if (scan->ports.empty() && scan->errors.empty())
      return skipped(kName, "no " + std::string(ib::fabric_name(layer)) + " ports");

    std::vector<Error> errors = scan->errors;
    Readings readings;
    for (const auto& p : scan->ports) {
      auto c = ib::read_error_counters(p, set);
      if (!c) {
        errors.push_back(c.error());
        continue;
      }
      readings.emplace_back(&p, std::move(*c));
    }

    CheckResult r;
    r.check = std::string(kName);
    const std::string saturated = saturated_note(readings, set);

    if (ctx.state_dir.empty()) {
      // Without a previous reading there is no delta. Report the absolute values under their
      // own names ("symbol_error", not "symbol_error_delta") so that delta thresholds are never
      // applied to counts accumulated over the HCA's whole uptime.
      for (const auto& [port, counters] : readings) {
        for (const auto& [name, value] : counters) {
          add_measurement(r, ctx, name, static_cast<double>(value), "count", {}, port->id());
        }
      }
      r.message = "absolute counters since last reset (no state dir: no deltas)" + saturated;
      finalize(r, kFaultPrefix);
      ib::merge_read_errors(r, errors);
      return r;
    }

    CounterState state(ctx.state_dir, kName, ctx.node);
    const Deltas deltas = add_deltas(r, ctx, state, readings, set);
    if (auto saved = state.save(); !saved) {
      // Without a stored reading every future run would be a first run that sees nothing.
      return error(kName, saved.error().to_string(), std::string(kFaultState));
    }

    conclude_deltas(r, deltas, state, readings.size());
    r.message += saturated;
    ib::merge_read_errors(r, errors);
    return r;
  }
};

}  // namespace

std::unique_ptr<Check> make_ib_counters_check() { return std::make_unique<IbCountersCheck>(); }

}  // namespace vigil
