// pcie_aer: uncorrectable PCIe errors the kernel's AER driver counted on the node's GPUs,
// NVSwitches, NICs and NVMe drives and on the port above each (pcie_aer.h for the files;
// docs/checks-host.md). What the error classes mean is the kernel's
// Documentation/PCI/pcieaer-howto.rst: a correctable error has no impact (the protocol recovers
// without loss), a non-fatal one makes one transaction unreliable while the link works, a fatal
// one makes the link unreliable and the kernel resets it, which a driver without AER callbacks
// does not survive. The NVIDIA driver registers none (nv_pci_driver in
// NVIDIA/open-gpu-kernel-modules kernel-open/nvidia/nv-pci.c has no err_handler; "device has no
// AER-aware driver", then Xid 79, in the kernel log of wilicc/gpu-burn#1); mlx5_core
// (mlx5_err_handler, drivers/net/ethernet/mellanox/mlx5/core/main.c) and nvme (nvme_err_handler,
// drivers/nvme/host/pci.c) do. Hence:
//   - a fatal error on a GPU or NVSwitch after Vigil's first reading in this boot fails, for the
//     rest of the boot (VIGIL-PCIE-AER-FATAL, remedy reboot; built-in bound
//     aer_fatal_this_boot <= 0, a SKU file may set its own). A count already there at the first
//     reading of a boot (from before the driver was bound) is the baseline, not judged;
//   - a fatal error on a NIC or NVMe drive (recovered by its driver), or counted at the port
//     above a device (which also sees the link drop when the device is reset on purpose, and
//     where Downstream Port Containment counts what it contained), warns;
//   - a non-fatal error warns (VIGIL-PCIE-AER-NONFATAL): the link still works; Vigil's choice;
//   - correctable errors are figures only.
// The boot is the kernel's boot_id; the per-run deltas come from the state directory as for
// ib_counters. Without a state directory the totals since boot are figures only.
#include "host/pcie_aer.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include "check_factories.h"
#include "core/counter_state.h"
#include "vigil/base/files.h"
#include "vigil/base/strings.h"
#include "vigil/checks/findings.h"

namespace vigil {
namespace aer {

namespace fs = std::filesystem;

std::optional<std::uint64_t> total_errors(std::string_view text) {
  std::istringstream lines{std::string(text)};
  std::string name;
  std::uint64_t count = 0;
  while (lines >> name) {
    if (name.starts_with("TOTAL_ERR_")) {
      if (lines >> count) return count;
      return std::nullopt;
    }
  }
  return std::nullopt;
}

namespace {

// "0x10de\n" -> 0x10de.
std::optional<unsigned long> hex_value(const fs::path& p) {
  auto text = read_whole_file(p.string());
  if (!text) return std::nullopt;
  try {
    return std::stoul(*text, nullptr, 16);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// "0000:1b:00.0" (or "10000:e1:00.0" behind Intel VMD, whose domains have 5 digits): a PCI
// function's directory name.
bool is_bdf(const std::string& s) {
  const size_t n = s.size();
  return n >= 12 && s[n - 8] == ':' && s[n - 5] == ':' && s[n - 2] == '.';
}

std::string role_of(unsigned long vendor, unsigned long cls) {
  if (cls == 0x010802) return "nvme";
  if (vendor == 0x10de && (cls >> 16) == 0x03) return "gpu";
  if (vendor == 0x10de && (cls >> 8) == 0x0680) return "nvswitch";
  if (vendor == 0x15b3 && (cls >> 16) == 0x02) return "nic";
  return "";
}

bool has_counters(const fs::path& dir) {
  std::error_code ec;
  return fs::exists(dir / "aer_dev_fatal", ec);
}

}  // namespace

std::vector<Device> watched_devices(const std::string& sysfs_root) {
  std::map<std::string, Device> found;  // by BDF: bus order, each port once
  std::error_code ec;
  const fs::path bus = fs::path(sysfs_root) / "sys/bus/pci/devices";
  std::set<fs::path> entries;  // in bus order, so a port is named after its first device
  for (fs::directory_iterator it(bus, ec), end; !ec && it != end; it.increment(ec))
    entries.insert(it->path());
  for (const fs::path& entry : entries) {
    const std::string bdf = entry.filename().string();
    const auto vendor = hex_value(entry / "vendor");
    const auto cls = hex_value(entry / "class");
    if (!vendor || !cls) continue;
    const std::string role = role_of(*vendor, *cls);
    if (role.empty()) continue;
    std::error_code real_ec;
    const fs::path real = fs::canonical(entry, real_ec);
    if (real_ec) continue;
    if (has_counters(real))
      found[bdf] = {bdf, role, real.string(), false, role == "gpu" || role == "nvswitch"};
    const std::string above = real.parent_path().filename().string();
    if (is_bdf(above) && has_counters(real.parent_path()) && !found.count(above))
      found[above] = {above, "port above " + bdf, real.parent_path().string(), true, false};
  }
  std::vector<Device> out;
  for (auto& [bdf, d] : found) out.push_back(std::move(d));
  return out;
}

int count_functions(const std::string& sysfs_root, std::string_view role) {
  int n = 0;
  std::error_code ec;
  for (fs::directory_iterator it(fs::path(sysfs_root) / "sys/bus/pci/devices", ec), end;
       !ec && it != end; it.increment(ec)) {
    const auto vendor = hex_value(it->path() / "vendor");
    const auto cls = hex_value(it->path() / "class");
    n += vendor && cls && role_of(*vendor, *cls) == role;
  }
  return n;
}

Result<Counts> read_counts(const Device& d) {
  Counts c;
  for (auto [file, into] :
       {std::pair{"aer_dev_fatal", &c.fatal}, std::pair{"aer_dev_nonfatal", &c.nonfatal},
        std::pair{"aer_dev_correctable", &c.correctable}}) {
    const std::string path = d.dir + "/" + file;
    const auto text = read_whole_file(path);
    if (!text) return Error{"cannot read", path};
    const auto total = total_errors(*text);
    if (!total) return Error{"no TOTAL_ERR_ line", path};
    *into = *total;
  }
  return c;
}

}  // namespace aer

namespace {

constexpr std::string_view kName = "pcie_aer";
constexpr const char* kFaultFatal = "VIGIL-PCIE-AER-FATAL";
constexpr const char* kFaultNonfatal = "VIGIL-PCIE-AER-NONFATAL";
constexpr const char* kFaultUnreadable = "VIGIL-PCIE-AER-UNREADABLE";

std::string errors_text(std::uint64_t n, const char* kind) {
  return std::to_string(n) + " " + kind + " PCIe error" + (n == 1 ? "" : "s") + " (AER)";
}

// The boot this run belongs to as a number the state file can keep (FNV-1a of boot_id());
// nullopt when the boot id cannot be read.
std::optional<std::uint64_t> boot_key(const CheckContext& ctx) {
  const std::string id = boot_id(ctx);
  if (id.empty()) return std::nullopt;
  std::uint64_t h = 1469598103934665603ull;
  for (char ch : id) h = (h ^ static_cast<unsigned char>(ch)) * 1099511628211ull;
  return h;
}

// Adds one device's figures to `r` and what they say to `found`. `same_boot`: the state file
// was written in this boot.
void judge_device(CheckResult& r, const CheckContext& ctx, CounterState& state,
                  const aer::Device& d, const aer::Counts& c, bool same_boot, Findings& found) {
  const std::string who = d.role + " " + (d.port ? "(" + d.bdf + ")" : d.bdf);
  auto delta = [&](const char* what, std::uint64_t now) {
    return state.update(d.bdf + " " + what, now).delta.value_or(0);
  };
  if (d.nvidia) {
    // Not recovered until the GPU is reset: judged against the first reading of this boot, so
    // the fail lasts for the boot and a reboot ends it.
    const std::string key = d.bdf + " fatal at first reading";
    std::uint64_t first = same_boot ? state.previous(key).value_or(c.fatal) : c.fatal;
    first = std::min(first, c.fatal);
    state.update(key, first);
    Measurement& m = add_measurement(r, ctx, "aer_fatal_this_boot",
                                     static_cast<double>(c.fatal - first), "count", {}, d.bdf);
    default_threshold(m, Op::kLe, 0, {}, "pcieaer-howto.rst; nv-pci.c registers no err_handler");
    if (Status s = m.status(); s != Status::kPass)
      found.add(s, who + ": " + errors_text(c.fatal - first, "fatal") + " this boot", kFaultFatal);
  } else {
    // NICs and NVMe drives (their drivers recover: mlx5_core and nvme register error
    // handlers) and the port above a device (which also sees a reset on purpose): warn.
    const std::uint64_t fatal = delta("fatal", c.fatal);
    add_measurement(r, ctx, d.port ? "aer_port_fatal_delta" : "aer_fatal_delta",
                    static_cast<double>(fatal), "count", {}, d.bdf);
    if (fatal > 0) found.add(Status::kWarn, who + ": " + errors_text(fatal, "fatal"), kFaultFatal);
  }
  const std::uint64_t nonfatal = delta("nonfatal", c.nonfatal);
  add_measurement(r, ctx, "aer_nonfatal_delta", static_cast<double>(nonfatal), "count", {}, d.bdf);
  if (nonfatal > 0)
    found.add(Status::kWarn, who + ": " + errors_text(nonfatal, "non-fatal"), kFaultNonfatal);
  if (!d.port)
    add_measurement(r, ctx, "aer_correctable_delta",
                    static_cast<double>(delta("correctable", c.correctable)), "count", {}, d.bdf);
}

class PcieAerCheck final : public Check {
 public:
  std::string_view name() const override { return kName; }
  Applies applies(const CheckContext&) const override { return {}; }

  CheckResult run(const CheckContext& ctx) override {
    const auto devices = aer::watched_devices(ctx.sysfs_root);
    if (devices.empty())
      return skipped(kName,
                     "no PCIe AER counters on GPUs, NICs or NVMe drives (kernel before 4.19 or "
                     "without CONFIG_PCIEAER, or firmware-first AER)");
    CheckResult r;
    r.check = std::string(kName);
    CounterState state(ctx.state_dir, kName, ctx.node);
    // Without a boot id every run is taken as the same boot; a count that went down (a reboot)
    // still restarts the first reading.
    const auto boot = boot_key(ctx);
    const bool same_boot = !boot || state.previous("boot") == boot;
    if (boot) state.update("boot", *boot);
    Findings found;
    std::vector<std::string> unreadable;
    for (const auto& d : devices) {
      auto c = aer::read_counts(d);
      if (!c) {
        unreadable.push_back(c.error().to_string());
      } else if (state.enabled()) {
        judge_device(r, ctx, state, d, *c, same_boot, found);
      } else {  // totals since boot: figures, never judged
        add_measurement(r, ctx, "aer_fatal", static_cast<double>(c->fatal), "count", {}, d.bdf);
        add_measurement(r, ctx, "aer_nonfatal", static_cast<double>(c->nonfatal), "count", {},
                        d.bdf);
      }
    }
    if (auto saved = state.save(); !saved)
      return error(kName, saved.error().to_string(), "VIGIL-PCIE-AER-STATE");
    if (found.conclude(r, "VIGIL-PCIE")) {
      const std::string n =
          std::to_string(devices.size()) + (devices.size() == 1 ? " device" : " devices");
      r.message = !state.enabled()        ? n + ": totals since boot (no state dir: not judged)"
                  : !state.has_previous() ? n + ": baseline recorded"
                                          : n + ": no new uncorrectable PCIe errors";
    }
    if (r.status == Status::kFail && r.fault_code == kFaultFatal) r.remedy = Remedy::kReboot;
    add_unjudged(r, unreadable, kFaultUnreadable);
    return r;
  }
};

}  // namespace

std::unique_ptr<Check> make_pcie_aer_check() { return std::make_unique<PcieAerCheck>(); }

}  // namespace vigil
