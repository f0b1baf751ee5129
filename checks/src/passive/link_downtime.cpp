// ib_link_downtime (the hooks): how long each RDMA port was down since the last run, from the
// kernel's own link lines (link_downtime.h), judged by the time down rather than by a count of
// flaps. Why: Databricks' gpu-monitor (blog, 2026-07-01) moved from flap counts to cumulative
// down time after one port that went down once, for longer than NCCL's IB timeout, ended a run
// 7 hours in; a poll of the port state between runs (ib_port) cannot see such an outage, and a
// link_downed counter (ib_counters) counts it without its length.
//   - link_down_seconds per port: the time down since the last run, the part of an outage that
//     lasts across runs counted in each. The bound is NCCL's: a queue pair errors after
//     NCCL_IB_RETRY_CNT retries of 4.096 us * 2^NCCL_IB_TIMEOUT each (NCCL's environment
//     documentation); with the defaults since NCCL 2.23 (timeout 20, retry count 7) that is
//     about 30 s ("approximately 30 seconds of waiting ... before a network error is raised"),
//     with 2.14-2.22's (18) about 7.5 s. Down 30 s or more fails, 7.5 s warns; a SKU file can set
//     its own (NVIDIA Health Validation's rdma_linkflap_fatal fails one outage of 30 s).
//   - The first run of a boot is the baseline: outages before it were before any job (the prolog
//     of the first job is a run), and link training at boot is not an outage anyway.
//   - Not fatal: drain_after applies. A switch reboot takes every port behind it down at once;
//     one run sees it, the next sees a healthy port, and the breaker bounds the rest.
//   - No state directory: skipped (outages are counted between runs). An unreadable log or state:
//     error. Lines older kernels do not print (an InfiniBand port before 2025): nothing seen, so
//     nothing judged; ib_port and ib_counters still see the port.
#include "passive/link_downtime.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "check_factories.h"
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
  e.port = std::string(bdf) + "/" + std::string(rest.substr(0, sp));
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
    if (down == down_since.end()) {
      down_since[e.port] = usec;
      ++outages_[e.port].count;
    }
  } else if (e.kind == LinkEvent::kUp && down != down_since.end()) {
    const double s = usec > down->second ? double(usec - down->second) / 1e6 : 0;
    Outages& o = outages_[e.port];
    o.down_s += s;
    o.longest_s = std::max(o.longest_s, s);
    down_since.erase(down);
  }
}

void Tracker::close(std::uint64_t now_usec) {
  for (auto& [port, since] : down_since) {
    if (now_usec <= since) continue;
    const double s = double(now_usec - since) / 1e6;
    Outages& o = outages_[port];
    o.down_s += s;
    o.longest_s = std::max(o.longest_s, s);
    since = now_usec;
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

Result<State> load(const std::string& path) {
  const auto text = read_whole_file(path);
  if (!text) return State{};  // first run
  try {
    const nlohmann::json j = nlohmann::json::parse(*text);
    State s;
    s.boot_id = j.at("boot_id").get<std::string>();
    if (j.contains("last_seq")) s.last_seq = j.at("last_seq").get<std::uint64_t>();
    s.down_since = j.value("down_since", std::map<std::string, std::uint64_t>{});
    s.names = j.value("names", std::map<std::string, std::string>{});
    return s;
  } catch (const nlohmann::json::exception& e) {
    return Error{std::string("malformed state: ") + e.what(), path};
  }
}

VoidResult save(const std::string& path, const State& s) {
  nlohmann::json j{{"boot_id", s.boot_id}, {"down_since", s.down_since}, {"names", s.names}};
  if (s.last_seq) j["last_seq"] = *s.last_seq;
  return replace_file_atomically(path, j.dump(2) + "\n");
}

std::string seconds(double s) { return significant(s) + " s"; }

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
    auto loaded = load(path);
    if (!loaded) return error(kName, loaded.error().to_string(), "VIGIL-LINK-STATE");
    State state = std::move(*loaded);
    const std::string boot = boot_id(ctx);
    const bool baseline = state.boot_id != boot || !state.last_seq;
    if (state.boot_id != boot) state = State{boot, std::nullopt, {}, {}};

    auto scan = kmsg::read_records(ctx.kmsg_path, state.last_seq.value_or(0));
    if (!scan)
      return error(kName, "cannot read the kernel log: " + scan.error().to_string(),
                   "VIGIL-KMSG-READ");
    if (state.last_seq && scan->last_seq != 0 && scan->last_seq < *state.last_seq)
      scan = kmsg::read_records(ctx.kmsg_path, 0);  // the log restarted within the boot
    if (!scan) return error(kName, scan.error().to_string(), "VIGIL-KMSG-READ");

    link_down::Tracker t;
    t.down_since = std::move(state.down_since);
    t.names = std::move(state.names);
    std::uint64_t last_usec = 0;
    for (const auto& rec : scan->records) {
      if (!rec.from_kernel()) continue;  // a line user space wrote cannot pose as the driver's
      last_usec = std::max(last_usec, rec.usec);
      if (auto e = link_down::parse_link_event(rec.message)) t.take(*e, rec.usec);
    }
    const auto up = uptime_s(ctx);
    const std::uint64_t now =
        std::max(last_usec, up ? static_cast<std::uint64_t>(*up * 1e6) : std::uint64_t{0});
    t.close(now);

    state.down_since = t.down_since;
    state.names = t.names;
    if (scan->last_seq != 0) state.last_seq = std::max(state.last_seq.value_or(0), scan->last_seq);
    if (!state.last_seq) state.last_seq = 0;  // an empty log: the baseline is taken all the same
    if (auto saved = save(path, state); !saved)
      return error(kName, "cannot save " + path + ": " + saved.error().to_string(),
                   "VIGIL-LINK-STATE");

    CheckResult r;
    r.check = std::string(kName);
    if (baseline) {
      r.message = "first reading of this boot: outages before it are not judged";
      if (!t.down_since.empty())
        r.message += "; down now: " + short_list(port_names(t, t.down_since), 3, ", ", " ");
      return r;
    }
    std::vector<std::string> lines;
    for (const auto& [port, o] : t.outages()) {
      if (o.down_s <= 0 && o.count == 0) continue;
      Measurement& m = add_measurement(r, ctx, "link_down_seconds", o.down_s, "s", {}, port);
      default_threshold(m, Op::kLe, kFailSeconds, kWarnSeconds, kBoundSource);
      std::string line = label(t, port) + " down " + seconds(o.down_s);
      line += o.count > 0
                  ? " in " + std::to_string(o.count) + " outage" + (o.count == 1 ? "" : "s") +
                        " (longest " + seconds(o.longest_s) + ")"
                  : " of an outage that began before the last run";
      if (t.down_since.contains(port)) line += ", still down";
      lines.push_back(std::move(line));
    }
    finalize(r, "VIGIL");  // VIGIL-LINK-DOWN-SECONDS
    if (lines.empty()) {
      r.message = std::to_string(scan->records.size()) +
                  " new kernel log records, no RDMA link outage since the last run";
    } else {
      r.message = "since the last run: " + short_list(lines, 3, "; ", " ");
    }
    return r;
  }

 private:
  static std::string label(const link_down::Tracker& t, const std::string& port) {
    const auto n = t.names.find(port);
    return port + (n == t.names.end() || n->second.empty() ? "" : " (" + n->second + ")");
  }
  static std::vector<std::string> port_names(const link_down::Tracker& t,
                                             const std::map<std::string, std::uint64_t>& ports) {
    std::vector<std::string> out;
    for (const auto& [port, since] : ports) out.push_back(label(t, port));
    return out;
  }
};

}  // namespace

std::unique_ptr<Check> make_ib_link_downtime_check() {
  return std::make_unique<IbLinkDowntimeCheck>();
}

}  // namespace vigil
