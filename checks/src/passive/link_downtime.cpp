// ib_link_downtime (the hooks): how long each fabric port was down, from the kernel's own link
// lines (link_downtime.h), judged by the length of its outages rather than by a count of flaps.
// Why: Databricks' gpu-monitor (blog, 2026-07-01) moved from flap counts to down time after one
// port that went down once, for longer than NCCL's IB timeout, ended a run 7 hours in; a poll of
// the port state between runs (ib_port) cannot see such an outage, and a link_downed counter
// (ib_counters) counts it without its length.
//   - link_down_seconds per fabric port: the whole length of the outages that ended since the
//     last run (one that began before it included), each measured between its own down and up
//     lines. The bound is NCCL's: a queue pair errors after NCCL_IB_RETRY_CNT retries of
//     4.096 us * 2^NCCL_IB_TIMEOUT each (NCCL's environment documentation); with the defaults
//     since NCCL 2.23 (timeout 20, retry count 7) that is about 30 s ("approximately 30 seconds
//     of waiting ... before a network error is raised"), with 2.14-2.22's (18) about 7.5 s. 30 s
//     or more fails, 7.5 s warns; a SKU file can set its own (NVIDIA Health Validation's
//     rdma_linkflap_fatal fails one outage of 30 s).
//   - Only the fabric ports ib_port judges (the SKU's link layer and infiniband.devices):
//     storage, front-end and unused ports are not Vigil's to drain for. A port down now is
//     ib_port's to judge; its outage is measured here once it ends.
//   - An outage whose end cannot be measured is dropped, never guessed: the port is ACTIVE again
//     with no up line (a driver reload re-registers the device silently), or records were lost
//     to the ring buffer between runs.
//   - The first run of a boot is the baseline: outages before it were before any job (the prolog
//     of the first job is a run).
//   - Not fatal: drain_after applies. A switch reboot takes every port behind it down at once;
//     the run after it sees the outage once, and the breaker bounds the rest.
//   - No state directory: skipped (outages are counted between runs). An unreadable log or
//     boot id, or a state file that cannot be locked or written: error. A malformed state file
//     starts a new baseline. Lines older kernels do not print (an InfiniBand port before 2025):
//     nothing seen, nothing judged; ib_port and ib_counters still see the port.
#include "passive/link_downtime.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "check_factories.h"
#include "ib/ib_sysfs.h"
#include "passive/kmsg_reader.h"
#include "vigil/base/files.h"
#include "vigil/base/strings.h"

namespace vigil {
namespace link_down {

std::optional<LinkEvent> parse_link_event(std::string_view m) {
  if (!m.starts_with("mlx5_core ") && !m.starts_with("mlx4_core ")) return std::nullopt;
  m.remove_prefix(10);
  // "<BDF> <name>: <what>"
  const size_t space = m.find(' ');
  if (space == std::string_view::npos || space < 7) return std::nullopt;
  const std::string_view bdf = m.substr(0, space);
  if (bdf.find(':') == std::string_view::npos) return std::nullopt;  // "0000:53:00.0"
  m.remove_prefix(space + 1);
  const size_t colon = m.find(": ");
  if (colon == std::string_view::npos || colon == 0) return std::nullopt;
  const std::string_view name = m.substr(0, colon);
  if (name.find(' ') != std::string_view::npos) return std::nullopt;
  const std::string_view what = m.substr(colon + 2);
  LinkEvent e;
  e.name = std::string(name);
  if (what == "Link down" || what == "Link up") {  // the netdev: a ConnectX function's one port
    e.port = std::string(bdf) + "/1";
    e.kind = what == "Link up" ? LinkEvent::kUp : LinkEvent::kDown;
    return e;
  }
  // "Port: 1 Link ACTIVE" (ib_core)
  constexpr std::string_view kPort = "Port: ";
  if (!what.starts_with(kPort)) return std::nullopt;
  const std::string_view rest = what.substr(kPort.size());
  const size_t sp = rest.find(' ');
  if (sp == std::string_view::npos || sp == 0 || sp > 3 ||
      !std::all_of(rest.begin(), rest.begin() + sp, [](char c) { return c >= '0' && c <= '9'; }))
    return std::nullopt;
  const std::string_view state = rest.substr(sp);
  e.port = std::string(name) + "/" + std::string(rest.substr(0, sp));
  if (state == " Link DOWN") {
    e.kind = LinkEvent::kDown;
  } else if (state == " Link INIT" || state == " Link ARMED") {
    e.kind = LinkEvent::kTraining;
  } else if (state == " Link ACTIVE" || state == " Link ACTIVE_DEFER") {
    e.kind = LinkEvent::kUp;
  } else {
    return std::nullopt;
  }
  return e;
}

void Tracker::take(const LinkEvent& e, std::uint64_t usec) {
  std::string& known = names[e.port];
  if (known.find(e.name) == std::string::npos) known += (known.empty() ? "" : ", ") + e.name;
  const auto down = down_since.find(e.port);
  if (e.kind == LinkEvent::kDown) {
    if (down == down_since.end()) down_since[e.port] = usec;
  } else if (e.kind == LinkEvent::kUp && down != down_since.end()) {
    const double s = usec > down->second ? double(usec - down->second) / 1e6 : 0;
    Outages& o = ended_[e.port];
    o.down_s += s;
    ++o.count;
    o.longest_s = std::max(o.longest_s, s);
    down_since.erase(down);
  }
}

}  // namespace link_down

namespace {

constexpr std::string_view kName = "ib_link_downtime";
// NCCL's environment documentation (NCCL_IB_TIMEOUT, NCCL_IB_RETRY_CNT): 7 retries of 4.3 s
// (timeout 20, the default since 2.23) is about 30 s; of 1.07 s (18, 2.14-2.22) about 7.5 s.
constexpr double kFailSeconds = 30;
constexpr double kWarnSeconds = 7.5;
constexpr const char* kBoundSource =
    "NCCL_IB_TIMEOUT x NCCL_IB_RETRY_CNT: about 30 s with NCCL 2.23+'s defaults, 7.5 s with "
    "2.14-2.22's";

struct State {
  std::string boot_id;
  std::optional<std::uint64_t> last_seq;
  std::map<std::string, std::uint64_t> down_since;
  std::map<std::string, std::string> names;
};

// The saved state; a missing file is a first run. A malformed one is reported in `why` and
// treated as missing: the run becomes a new baseline rather than an error every run after.
State load(const std::string& path, std::string& why) {
  const auto text = read_whole_file(path);
  if (!text) return State{};
  try {
    const nlohmann::json j = nlohmann::json::parse(*text);
    State s;
    s.boot_id = j.at("boot_id").get<std::string>();
    if (j.contains("last_seq")) s.last_seq = j.at("last_seq").get<std::uint64_t>();
    s.down_since = j.value("down_since", std::map<std::string, std::uint64_t>{});
    s.names = j.value("names", std::map<std::string, std::string>{});
    return s;
  } catch (const nlohmann::json::exception& e) {
    why = "malformed state " + path + " (" + e.what() + "): a new baseline";
    return State{};
  }
}

VoidResult save(const std::string& path, const State& s) {
  nlohmann::json j{{"boot_id", s.boot_id}, {"down_since", s.down_since}, {"names", s.names}};
  if (s.last_seq) j["last_seq"] = *s.last_seq;
  return replace_file_atomically(path, j.dump(2) + "\n");
}

std::string seconds(double s) { return significant(s) + " s"; }

// A fabric port as ib_port judges it, and the keys the kernel's lines give it.
struct FabricPort {
  std::string id;  // "mlx5_3/1"
  bool active = false;
};
// key ("mlx5_3/1", "0000:53:00.0/1") -> the fabric port.
std::map<std::string, FabricPort> fabric_ports(const CheckContext& ctx) {
  std::map<std::string, FabricPort> out;
  const std::string layer = ctx.sku ? ctx.sku->infiniband.link_layer : "InfiniBand";
  auto scan = ib::scan_ports(ctx.sysfs_root, layer,
                             ctx.sku ? ctx.sku->infiniband.devices : std::vector<std::string>{});
  if (!scan) return out;
  for (const auto& p : scan->ports) {
    const auto st = ib::read_port_status(p);
    const FabricPort f{p.id(), st && st->state.code == ib::kStateActive};
    out[p.id()] = f;
    // The HCA's PCI function, which the netdev's lines name: <hca>/device links to it.
    std::error_code ec;
    const auto dev = std::filesystem::read_symlink(scan->class_dir / p.hca / "device", ec);
    if (!ec) out[dev.filename().string() + "/" + p.port] = f;
  }
  return out;
}

class IbLinkDowntimeCheck final : public Check {
 public:
  std::string_view name() const override { return kName; }
  Applies applies(const CheckContext& ctx) const override {
    if (ctx.kmsg_path.empty()) return {false, "no kernel log configured"};
    if (ctx.state_dir.empty())
      return {false, "no state directory: outages are counted between runs"};
    return {};
  }

  CheckResult run(const CheckContext& ctx) override {
    const std::string path = ctx.state_dir + "/ib_link_downtime." + ctx.node + ".json";
    auto lock = kmsg::CursorLock::acquire(path);
    if (!lock)
      return error(kName, "cannot lock " + path + ": " + lock.error().to_string(),
                   "VIGIL-LINK-STATE");
    std::vector<std::string> notes;
    std::string why;
    State state = load(path, why);
    if (!why.empty()) notes.push_back(why);
    const std::string boot = boot_id(ctx);
    if (boot.empty())
      return error(kName, "cannot read " + ctx.proc_root + "/sys/kernel/random/boot_id",
                   "VIGIL-LINK-STATE");
    const bool baseline = state.boot_id != boot || !state.last_seq;
    if (state.boot_id != boot) state = State{boot, std::nullopt, {}, {}};

    auto scan = kmsg::read_records(ctx.kmsg_path, state.last_seq.value_or(0));
    if (!scan)
      return error(kName, "cannot read the kernel log: " + scan.error().to_string(),
                   "VIGIL-KMSG-READ");
    bool gap = scan->overwritten > 0;
    if (state.last_seq && scan->last_seq != 0 && scan->last_seq < *state.last_seq) {
      scan = kmsg::read_records(ctx.kmsg_path, 0);  // the log restarted within the boot
      if (!scan) return error(kName, scan.error().to_string(), "VIGIL-KMSG-READ");
      gap = true;
    } else if (state.last_seq && scan->first_seq > *state.last_seq + 1) {
      gap = true;  // records overwritten between two runs
    }

    link_down::Tracker t;
    if (!gap) t.down_since = std::move(state.down_since);  // an outage's start may be lost
    if (gap && !state.down_since.empty())
      notes.push_back("kernel log records lost: outages under way were dropped");
    t.names = std::move(state.names);
    for (const auto& rec : scan->records) {
      if (!rec.from_kernel()) continue;  // a line user space wrote cannot pose as the driver's
      if (auto e = link_down::parse_link_event(rec.message)) t.take(*e, rec.usec);
    }
    const std::map<std::string, FabricPort> fabric = fabric_ports(ctx);
    // Down by the log, ACTIVE by sysfs, no up line: its end is unknown (a driver reload, a lost
    // record). Dropped, never guessed; so is one on a device sysfs no longer has.
    for (auto it = t.down_since.begin(); it != t.down_since.end();) {
      const auto f = fabric.find(it->first);
      if (f == fabric.end() || f->second.active)
        it = t.down_since.erase(it);
      else
        ++it;
    }
    state.down_since = t.down_since;
    state.names = t.names;
    state.last_seq = std::max(state.last_seq.value_or(0), scan->last_seq);
    if (auto saved = save(path, state); !saved)
      return error(kName, "cannot save " + path + ": " + saved.error().to_string(),
                   "VIGIL-LINK-STATE");

    if (baseline) {
      CheckResult r;
      r.check = std::string(kName);
      r.message = "first reading of this boot: outages before it are not judged";
      return with_notes(r, notes);
    }
    CheckResult r = judge(ctx, t, fabric, scan->records.size());
    return with_notes(r, notes);
  }

 private:
  // The outages that ended in this window on the fabric ports, one figure per port.
  static CheckResult judge(const CheckContext& ctx, const link_down::Tracker& t,
                           const std::map<std::string, FabricPort>& fabric, std::size_t records) {
    CheckResult r;
    r.check = std::string(kName);
    // One outage per fabric port: a RoCE flap's netdev and ib_core lines both end one.
    std::map<std::string, std::pair<link_down::Outages, std::string>> by_port;
    for (const auto& [key, o] : t.ended()) {
      const auto f = fabric.find(key);
      if (f == fabric.end()) continue;  // not a fabric port: not Vigil's to drain for
      auto& [best, names] = by_port[f->second.id];
      if (o.down_s > best.down_s) best = o;
      const auto n = t.names.find(key);
      if (n != t.names.end() && names.find(n->second) == std::string::npos)
        names += (names.empty() ? "" : ", ") + n->second;
    }
    std::vector<std::string> lines;
    for (const auto& [port, entry] : by_port) {
      const auto& [o, names] = entry;
      Measurement& m = add_measurement(r, ctx, "link_down_seconds", o.down_s, "s", {}, port);
      default_threshold(m, Op::kLe, kFailSeconds, kWarnSeconds, kBoundSource);
      lines.push_back(port + (names.empty() ? "" : " (" + names + ")") + " down " +
                      seconds(o.down_s) + " in " + std::to_string(o.count) + " outage" +
                      (o.count == 1 ? "" : "s") + " (longest " + seconds(o.longest_s) + ")");
    }
    finalize(r, "VIGIL");  // VIGIL-LINK-DOWN-SECONDS
    r.message = lines.empty() ? std::to_string(records) +
                                    " new kernel log records, no fabric port outage ended since "
                                    "the last run"
                              : "since the last run: " + short_list(lines, 3, "; ", " ");
    return r;
  }
  static CheckResult with_notes(CheckResult r, const std::vector<std::string>& notes) {
    if (!notes.empty()) r.message += " [" + short_list(notes, 2, "; ", " ") + "]";
    return r;
  }
};

}  // namespace

std::unique_ptr<Check> make_ib_link_downtime_check() {
  return std::make_unique<IbLinkDowntimeCheck>();
}

}  // namespace vigil
