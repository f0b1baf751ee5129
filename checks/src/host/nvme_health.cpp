// host_nvme: are the node's NVMe drives healthy by their own word (nvme_health.h for the
// sources)? A drive whose spare blocks ran out, whose media went read-only or whose reliability
// degraded takes the node's local scratch, checkpoints or root file system with it; a
// controller the kernel declared dead is gone. Peers: Meta GCM (blockdev SMART), LBNL NHC's
// NVMe count (aznhc), Soperator's nvme_raid_health (PR #2317: an I/O probe and the md array's
// state, no SMART).
//   - Local drives only (sysfs `transport` pcie): an NVMe-over-fabrics controller is a storage
//     target's drive seen over the network, whose failover would fail every client at once.
//   - The kernel's state of each controller (sysfs): "dead" fails; resetting, connecting or
//     deleting warns (the next run sees where it went); unreadable: error.
//   - The drive's critical warning byte (SMART log, `nvme smart-log -o json`): spare below
//     threshold, reliability degraded, media read-only, volatile memory backup or persistent
//     memory region failed fail; a temperature threshold crossed (not latched: the drive
//     throttles) and an indeterminate personality state warn. Percent used at or past 100 (the
//     rated endurance spent; the spec lets it exceed 100) warns, and so does "reliability
//     degraded" alone on such a drive (worn drives set it: smartmontools#537).
//   - nvme-cli not installed: the SMART log is not read (skipped when the states say nothing);
//     EACCES (not root), a timeout, a failure or output that does not parse: error, never fail.
// Not fatal: drain_after applies (a critical warning is a state: the next report confirms it).
#include "host/nvme_health.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "check_factories.h"
#include "vigil/base/files.h"
#include "vigil/base/process.h"
#include "vigil/base/strings.h"
#include "vigil/checks/findings.h"

namespace vigil {
namespace nvme {

namespace fs = std::filesystem;

std::vector<Controller> controllers(const std::string& sysfs_root) {
  // NVMe-over-fabrics controllers (transport rdma, tcp, fc, loop) are a storage target's drives
  // seen over the network: its failover or its own drive's warning is not this node's fault,
  // and would fail every client at once. Only local drives (pcie; no attribute: older kernels
  // had PCIe only) are kept.
  std::vector<Controller> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(fs::path(sysfs_root) / "sys/class/nvme", ec)) {
    const std::string name = e.path().filename().string();
    if (!name.starts_with("nvme") || name.size() == 4 ||
        !std::all_of(name.begin() + 4, name.end(), [](char c) { return c >= '0' && c <= '9'; }))
      continue;
    auto attr = [&](const char* a) {
      return std::string(trim(read_whole_file((e.path() / a).string()).value_or("")));
    };
    const std::string transport = attr("transport");
    if (!transport.empty() && transport != "pcie") continue;
    out.push_back({name, attr("state"), attr("model"), attr("address"), transport});
  }
  std::ranges::sort(out, [](const Controller& a, const Controller& b) {
    return a.name.size() != b.name.size() ? a.name.size() < b.name.size() : a.name < b.name;
  });
  return out;
}

namespace {

// A number as any nvme-cli prints it: bare, or a string with locale grouping and a ".000000"
// (2.1-2.3). nullopt for anything else.
std::optional<double> number(const nlohmann::json& v) {
  if (v.is_number()) return v.get<double>();
  if (!v.is_string()) return std::nullopt;
  std::string digits;
  for (char c : v.get<std::string>()) {
    if (c >= '0' && c <= '9') {
      digits += c;
    } else if (c == '.') {
      break;  // "38313.000000": the counters are whole
    } else if (c != ',' && c != '\'' && c != ' ') {
      return std::nullopt;
    }
  }
  if (digits.empty()) return std::nullopt;
  return std::stod(digits);
}

const nlohmann::json* field(const nlohmann::json& j, std::initializer_list<const char*> names) {
  for (const char* n : names)
    if (auto it = j.find(n); it != j.end()) return &*it;
  return nullptr;
}

}  // namespace

Result<SmartLog> parse_smart_log(std::string_view text) {
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    return Error{"not the JSON object of `nvme smart-log -o json`", ""};
  SmartLog s;
  const nlohmann::json* cw = field(j, {"critical_warning"});
  if (cw && cw->is_object()) cw = field(*cw, {"value", "Value"});  // -H, 2.11, 2.12
  const auto warning = cw ? number(*cw) : std::nullopt;
  if (!warning || *warning < 0 || *warning > 255)
    return Error{"no critical_warning (0-255) in nvme smart-log's output", ""};
  s.critical_warning = static_cast<unsigned>(*warning);
  auto percent = [&](const char* name, unsigned& out) -> bool {
    const nlohmann::json* f = field(j, {name});
    const auto v = f ? number(*f) : std::nullopt;
    if (!v || *v < 0 || *v > 255) return false;
    out = static_cast<unsigned>(*v);
    return true;
  };
  for (auto [name, out] :
       {std::pair{"avail_spare", &s.avail_spare}, std::pair{"spare_thresh", &s.spare_thresh},
        std::pair{"percent_used", &s.percent_used}})
    if (!percent(name, *out))
      return Error{std::string("no ") + name + " (0-255) in nvme smart-log's output", ""};
  if (const auto* f = field(j, {"media_errors"})) s.media_errors = number(*f);
  if (const auto* f = field(j, {"temperature", "Temperature"}))  // Kelvin
    if (const auto k = number(*f); k && *k > 0) s.temperature_c = *k - 273;
  return s;
}

std::vector<WarningBit> warning_bits(unsigned critical_warning) {
  static constexpr WarningBit kBits[] = {
      {0, "available spare below threshold", true},
      {1, "temperature threshold crossed", false},
      {2, "reliability degraded", true},
      {3, "media read-only", true},
      {4, "volatile memory backup failed", true},
      {5, "persistent memory region read-only or unreliable", true},
      {6, "indeterminate personality state", false},
      {7, "reserved bit 7 set", false},
  };
  std::vector<WarningBit> out;
  for (const WarningBit& b : kBits)
    if (critical_warning & (1u << b.bit)) out.push_back(b);
  return out;
}

}  // namespace nvme

namespace {

constexpr std::string_view kName = "host_nvme";

// "nvme0 CT4000P3PSSD8 (0000:01:00.0)"
std::string drive(const nvme::Controller& c) {
  std::string s = c.name;
  if (!c.model.empty()) s += " " + c.model;
  if (!c.address.empty()) s += " (" + c.address + ")";
  return s;
}

class HostNvmeCheck final : public Check {
 public:
  std::string_view name() const override { return kName; }
  Applies applies(const CheckContext& ctx) const override {
    if (nvme::controllers(ctx.sysfs_root).empty())
      return {false, "no NVMe controller in /sys/class/nvme"};
    return {};
  }

  CheckResult run(const CheckContext& ctx) override {
    const std::vector<nvme::Controller> all = nvme::controllers(ctx.sysfs_root);
    CheckResult r;
    r.check = std::string(kName);
    Findings found;
    std::vector<const nvme::Controller*> live;
    for (const auto& c : all) {
      if (c.state == "live") {
        live.push_back(&c);
      } else if (c.state == "dead") {
        found.add(Status::kFail, drive(c) + " dead: the kernel gave up on the controller",
                  "VIGIL-NVME-DEAD");
      } else if (!c.state.empty()) {
        found.add(Status::kWarn, drive(c) + " " + c.state, "VIGIL-NVME-STATE");
      }
    }
    std::vector<std::string> errors;
    std::string error_fault;
    auto add_error = [&](std::string why, const char* fault) {
      if (errors.empty()) error_fault = fault;
      errors.push_back(std::move(why));
    };
    for (const auto& c : all)
      if (c.state.empty())
        add_error(drive(c) + ": its state cannot be read in /sys/class/nvme", "VIGIL-NVME-QUERY");
    const bool have_cli = ::access(ctx.host.nvme.c_str(), X_OK) == 0;
    if (have_cli) {
      std::vector<std::vector<std::string>> argvs;
      for (const auto* c : live)
        argvs.push_back({ctx.host.nvme, "smart-log", "/dev/" + c->name, "-o", "json"});
      LaunchOptions o;
      o.timeout = std::chrono::seconds(5);
      o.env = {{"LC_ALL", "C"}};  // no thousands separators in 2.2-2.3's strings
      const auto ran = run_commands(argvs, 8, o);
      for (size_t i = 0; i < ran.size(); ++i) judge(ctx, r, found, *live[i], ran[i], add_error);
    }
    const bool judged = found.conclude(r, "VIGIL");
    if (judged)
      r.message = std::to_string(all.size()) + " NVMe drive" + (all.size() == 1 ? "" : "s") +
                  (have_cli ? " healthy" : " live");
    if (!have_cli) {
      if (judged && errors.empty())
        return skipped(kName, "nvme-cli is not installed (" + ctx.host.nvme +
                                  "): the drives' SMART logs were not read; " + r.message);
      r.message += "; SMART logs not read (" + ctx.host.nvme + " not installed)";
    }
    add_unjudged(r, errors, error_fault, 2);
    return r;
  }

 private:
  template <typename AddError>
  static void judge(const CheckContext& ctx, CheckResult& r, Findings& found,
                    const nvme::Controller& c, const LaunchResult& ran, AddError& add_error) {
    const std::string err = std::string(trim(ran.err));
    if (ran.timed_out)
      return add_error(drive(c) + ": nvme smart-log did not answer in 5 s", "VIGIL-NVME-QUERY");
    if (ran.exit_code != 0 || ran.term_signal != 0) {
      const bool denied = err.find("Permission denied") != std::string::npos ||
                          err.find("Operation not permitted") != std::string::npos;
      return add_error(drive(c) + ": nvme smart-log " +
                           (denied ? "needs root (CAP_SYS_ADMIN: Get Log Page is an admin command)"
                                   : "failed (exit " + std::to_string(shell_status(ran)) +
                                         (err.empty() ? ")" : "): " + err.substr(0, 160))),
                       "VIGIL-NVME-QUERY");
    }
    auto log = nvme::parse_smart_log(ran.out);
    if (!log) return add_error(drive(c) + ": " + log.error().message, "VIGIL-NVME-OUTPUT");
    add_measurement(r, ctx, "nvme_available_spare_percent", log->avail_spare, "percent", {},
                    c.name);
    add_measurement(r, ctx, "nvme_percent_used", log->percent_used, "percent", {}, c.name);
    if (log->media_errors)
      add_measurement(r, ctx, "nvme_media_errors", *log->media_errors, "count", {}, c.name);
    // Some worn drives set bit 2 alone once percent_used reaches 100 (smartmontools#537, quoting
    // Hetzner, on Samsung client drives): wear the drive reports, already warned below, not
    // proof of a failure.
    const bool worn_only = log->critical_warning == 0x4 && log->percent_used >= 100;
    for (const auto& b : nvme::warning_bits(log->critical_warning)) {
      if (worn_only) continue;
      std::string what = drive(c) + " " + b.what;
      if (b.bit == 0)
        what += " (" + std::to_string(log->avail_spare) + "% < " +
                std::to_string(log->spare_thresh) + "%)";
      if (b.bit == 1 && log->temperature_c) what += " (" + significant(*log->temperature_c) + " C)";
      found.add(b.fails ? Status::kFail : Status::kWarn, what,
                b.fails ? "VIGIL-NVME-CRITICAL-WARNING" : "VIGIL-NVME-WARNING");
    }
    if (log->percent_used >= 100)
      found.add(Status::kWarn,
                drive(c) + " " + std::to_string(log->percent_used) +
                    "% of its rated endurance used" +
                    (worn_only ? " (critical warning: reliability degraded)" : ""),
                "VIGIL-NVME-WORN");
  }
};

}  // namespace

std::unique_ptr<Check> make_host_nvme_check() { return std::make_unique<HostNvmeCheck>(); }

}  // namespace vigil
