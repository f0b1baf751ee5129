// ib_counters: growth of the InfiniBand port error counters since the previous run.
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
#include "ib/ib_sysfs.h"

namespace vigil {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kName = "ib_counters";
constexpr std::string_view kFaultPrefix = "VIGIL-IB";
constexpr std::string_view kFaultSysfs = "VIGIL-IB-SYSFS-UNREADABLE";
constexpr std::string_view kFaultState = "VIGIL-IB-STATE-UNWRITABLE";
constexpr int kStateSchemaVersion = 1;

// A previous reading: port id ("mlx5_0/1") -> counter -> value.
struct Baseline {
  std::map<std::string, ib::Counters, std::less<>> ports;
  std::optional<std::int64_t> time_unix;
};

fs::path state_file(const CheckContext& ctx) {
  // One file per node: the local demo runs several simulated nodes on one host, and their
  // readings must never be compared with each other.
  std::string node = ctx.node.empty() ? "local" : ctx.node;
  for (char& c : node) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '-' || c == '_' || c == '.';
    if (!ok) c = '_';
  }
  return fs::path(ctx.state_dir) / ("ib_counters." + node + ".json");
}

// nullopt with *note set when the file exists but cannot be used; nullopt without note when
// there is no file yet.
std::optional<Baseline> load_baseline(const fs::path& path, std::string* note) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return std::nullopt;
  std::string why;
  auto text = ib::read_attribute(path, &why);
  if (!text) {
    *note = "previous state unreadable (" + why + ")";
    return std::nullopt;
  }
  auto j = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object() || j.value("schema_version", 0) != kStateSchemaVersion ||
      !j.contains("ports") || !j["ports"].is_object()) {
    *note = "previous state malformed";
    return std::nullopt;
  }
  Baseline b;
  if (j.contains("time_unix") && j["time_unix"].is_number_integer()) {
    b.time_unix = j["time_unix"].get<std::int64_t>();
  }
  for (const auto& [port, counters] : j["ports"].items()) {
    if (!counters.is_object()) continue;
    ib::Counters& c = b.ports[port];
    for (const auto& [name, value] : counters.items()) {
      if (value.is_number_unsigned()) c[name] = value.get<std::uint64_t>();
    }
  }
  return b;
}

// Writes atomically (temp file + rename) so a concurrent or killed run never leaves half a file.
VoidResult save_baseline(const fs::path& path, const Baseline& b) {
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  if (ec)
    return Error{"cannot create state dir (" + ec.message() + ")", path.parent_path().string()};
  nlohmann::json j;
  j["schema_version"] = kStateSchemaVersion;
  if (b.time_unix) {
    j["time_unix"] = *b.time_unix;
    j["time"] = rfc3339_utc(*b.time_unix);
  }
  nlohmann::json ports = nlohmann::json::object();
  for (const auto& [port, counters] : b.ports) {
    nlohmann::json c = nlohmann::json::object();
    for (const auto& [name, value] : counters) c[name] = value;
    ports[port] = std::move(c);
  }
  j["ports"] = std::move(ports);
  const fs::path tmp = path.string() + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << j.dump(2) << '\n';
    out.close();
    if (!out) {
      fs::remove(tmp, ec);
      return Error{"cannot write state file", tmp.string()};
    }
  }
  fs::rename(tmp, path, ec);
  if (ec) {
    std::error_code rm_ec;
    fs::remove(tmp, rm_ec);
    return Error{"cannot replace state file (" + ec.message() + ")", path.string()};
  }
  return ok_result();
}

std::string short_list(const std::vector<std::string>& items, size_t max_shown = 3) {
  std::string out;
  for (size_t i = 0; i < items.size() && i < max_shown; ++i) {
    if (i) out += ", ";
    out += items[i];
  }
  if (items.size() > max_shown) out += " +" + std::to_string(items.size() - max_shown) + " more";
  return out;
}

class IbCountersCheck final : public Check {
 public:
  std::string_view name() const override { return kName; }
  std::chrono::seconds timeout() const override { return std::chrono::seconds(30); }
  Applies applies(const CheckContext&) const override {
    return {};  // Whether IB exists is decided from sysfs in run() (skipped when none).
  }

  CheckResult run(const CheckContext& ctx) override {
    auto scan = ib::scan_ports(ctx.sysfs_root);
    if (!scan) return error(kName, scan.error().to_string(), std::string(kFaultSysfs));
    // Missing ports are ib_port's finding (VIGIL-IB-PORTS-MISSING); no need to report it twice.
    if (scan->ports.empty() && scan->errors.empty()) return skipped(kName, "no InfiniBand ports");

    std::vector<Error> errors = scan->errors;
    std::vector<std::pair<const ib::PortDir*, ib::Counters>> readings;
    for (const auto& p : scan->ports) {
      auto c = ib::read_error_counters(p);
      if (!c) {
        errors.push_back(c.error());
        continue;
      }
      readings.emplace_back(&p, std::move(*c));
    }

    CheckResult r;
    r.check = std::string(kName);
    std::vector<std::string> saturated;
    for (const auto& [port, counters] : readings) {
      for (const auto& spec : ib::kErrorCounters) {
        const auto it = counters.find(spec.name);
        if (it != counters.end() && it->second >= spec.saturated()) {
          saturated.push_back(port->id() + " " + std::string(spec.name));
        }
      }
    }
    const std::string saturated_note =
        saturated.empty() ? ""
                          : "; saturated (further errors invisible, clear with perfquery -x): " +
                                short_list(saturated, 2);

    if (ctx.state_dir.empty()) {
      // Without a previous reading there is no delta. Report the absolute values under their
      // own names ("symbol_error", not "symbol_error_delta") so that delta thresholds are never
      // applied to counts accumulated over the HCA's whole uptime.
      for (const auto& [port, counters] : readings) {
        for (const auto& [name, value] : counters) {
          add_measurement(r, ctx, name, static_cast<double>(value), "count", {}, port->id());
        }
      }
      r.message = "absolute counters since last reset (no state dir: no deltas)" + saturated_note;
      finalize(r, kFaultPrefix);
      return with_errors(std::move(r), errors);
    }

    const fs::path path = state_file(ctx);
    std::string load_note;
    std::optional<Baseline> prev = load_baseline(path, &load_note);
    const std::int64_t now = std::chrono::duration_cast<std::chrono::seconds>(
                                 std::chrono::system_clock::now().time_since_epoch())
                                 .count();

    struct Increase {
      std::string text;  // "mlx5_0/1 symbol_error +120"
      size_t measurement;
    };
    std::vector<Increase> increases;
    std::vector<std::string> new_ports, resets;
    Baseline next;
    next.time_unix = now;
    if (prev) {
      // Keep the baseline of ports we could not read this time; they resume from it next run.
      for (const auto& [port, counters] : prev->ports) next.ports[port] = counters;
    }
    for (const auto& [port, counters] : readings) {
      const std::string id = port->id();
      const ib::Counters* before = nullptr;
      if (prev) {
        auto it = prev->ports.find(id);
        if (it != prev->ports.end()) before = &it->second;
      }
      if (!before && prev) new_ports.push_back(id);
      for (const auto& spec : ib::kErrorCounters) {
        const std::string name(spec.name);
        const std::uint64_t now_value = counters.at(name);
        std::uint64_t delta = 0;
        if (before) {
          auto b = before->find(name);
          if (b == before->end()) {
            // Counter new to the state file (older Vigil): it starts its baseline now.
          } else if (now_value >= b->second) {
            delta = now_value - b->second;
          } else {
            // Went down: counters were cleared (perfquery -x, driver reload, reboot). The
            // errors since the clear are unknown in time, so restart the baseline, no fail.
            resets.push_back(id + " " + name);
          }
        }
        add_measurement(r, ctx, name + "_delta", static_cast<double>(delta), "count", {}, id);
        if (delta > 0) {
          increases.push_back(
              {id + " " + name + " +" + std::to_string(delta), r.measurements.size() - 1});
        }
      }
      next.ports[id] = counters;
    }

    if (auto saved = save_baseline(path, next); !saved) {
      // Without a stored reading every future run would be a first run that sees nothing.
      return error(kName, saved.error().to_string(), std::string(kFaultState));
    }

    finalize(r, kFaultPrefix);

    std::vector<std::string> shown;
    std::string fault;
    for (const auto& inc : increases) {
      if (r.status != Status::kPass && r.measurements[inc.measurement].status() == r.status) {
        shown.push_back(inc.text);
        if (fault.empty()) {
          // "symbol_error_delta" -> "VIGIL-IB-COUNTER-SYMBOL-ERROR"
          std::string_view counter = r.measurements[inc.measurement].name;
          counter.remove_suffix(std::string_view("_delta").size());
          fault = "VIGIL-IB-COUNTER-";
          for (char c : counter) {
            fault +=
                c == '_' ? '-' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
          }
        }
      }
    }
    if (!shown.empty()) {
      r.message = short_list(shown);
      r.fault_code = fault;
    } else if (!prev) {
      r.message = "baseline recorded";
      if (!load_note.empty()) r.message += " (" + load_note + ")";
    } else {
      std::string since;
      if (prev->time_unix) since = " in " + std::to_string(now - *prev->time_unix) + " s";
      if (increases.empty()) {
        r.message = "no new errors on " + std::to_string(readings.size()) + " ports" + since;
      } else {
        std::vector<std::string> texts;
        for (const auto& inc : increases) texts.push_back(inc.text);
        r.message = "increases within thresholds" + since + ": " + short_list(texts);
      }
      if (!new_ports.empty()) r.message += "; baseline recorded for " + short_list(new_ports);
    }
    if (!resets.empty()) {
      r.message += "; counter reset, baseline restarted: " + short_list(resets, 2);
    }
    r.message += saturated_note;
    return with_errors(std::move(r), errors);
  }

 private:
  static CheckResult with_errors(CheckResult r, const std::vector<Error>& errors) {
    if (errors.empty()) return r;
    const std::string what =
        errors.front().to_string() +
        (errors.size() > 1 ? " (+" + std::to_string(errors.size() - 1) + " more unreadable)" : "");
    if (r.status == Status::kFail) {
      r.message += "; also " + what;
    } else {
      r.status = Status::kError;
      r.message = what;
      r.fault_code = std::string(kFaultSysfs);
    }
    return r;
  }
};

}  // namespace

std::unique_ptr<Check> make_ib_counters_check() { return std::make_unique<IbCountersCheck>(); }

}  // namespace vigil
