// kmsg_xid: XIDs the NVIDIA driver wrote to the kernel log ("NVRM: Xid ..."), NVSwitch SXIDs
// ("nvidia-nvswitchN: SXid ...") and the device health lines of ConnectX NICs and NVLink
// (kmsg_reader.h parse_device_fault: judged `reboot`) since the last run, read from ctx.kmsg_path
// after a cursor kept in <state_dir>/kmsg_xid.<node>.json. nvml_xid only hears events raised while
// it listens; this sees what happened during the job that just ended. Each is judged by the XID
// catalogue (vigil/checks/xid_catalogue.h, docs/xid.md):
//   action reset_gpu / reboot / service -> fail with that remedy, and it keeps failing for the
//     rest of this boot (a quiet log afterwards proves nothing), or, for reset_gpu, until
//     `vigil-check xid-clear --gpu BUS` says the GPU was reset (a reset keeps the
//     boot id);
//   watch -> warn; none -> reported; a later XID cancels earlier ones where the policy says so;
//   records the ring buffer overwrote before we read them -> warn (their XIDs are unknown);
//   an unreadable log -> error. Without a state dir every run reads the whole log (no cursor).
#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "check_factories.h"
#include "cuda/cuda_labels.h"
#include "kmsg_reader.h"
#include "nvml/nvml_common.h"
#include "passive/count_measurement.h"

namespace vigil {
namespace {

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : ", ") + s;
  return out;
}

// A flood (one XID 95 storm was ~800k lines holding 29 distinct events, NVIDIA/NVSentinel
// #1120) is counted per distinct item, and a message names at most kListed of them.
constexpr std::size_t kListed = 8;
constexpr std::size_t kRemembered = 64;  // distinct failing items kept for the boot
std::string listed(const std::vector<std::string>& items) {
  std::vector<std::string> v(items.begin(), items.begin() + std::min(items.size(), kListed));
  if (items.size() > kListed)
    v.push_back("and " + std::to_string(items.size() - kListed) + " more");
  return join(v);
}
// Counted items, "XID 94 0000:18:00 (watch) x2", in the map's order.
std::string listed(const std::map<std::string, int>& items) {
  std::vector<std::string> v;
  for (const auto& [k, n] : items) v.push_back(n > 1 ? k + " x" + std::to_string(n) : k);
  return listed(v);
}

// Is `item` ("XID 163 0000:18:00", "XID 163 0000:18:00 (watch)") one of `head`'s?
bool of(std::string_view item, std::string_view head) {
  return item.starts_with(head) && (item.size() == head.size() || item[head.size()] == ' ');
}

// The cursor keeps at most kRemembered failing items (every hook reads it). When it is full, a
// new item replaces the weakest one if its action is stronger, so the check's remedy stays the
// worst of the boot; otherwise it is dropped (the check fails either way).
void remember(std::vector<std::string>& fatal, const std::string& item, XidAction action,
              const XidCatalogue& catalogue) {
  if (fatal.size() < kRemembered) {
    fatal.push_back(item);
    return;
  }
  auto weakest = std::min_element(fatal.begin(), fatal.end(), [&](const auto& a, const auto& b) {
    return kmsg::remembered_action(a, catalogue) < kmsg::remembered_action(b, catalogue);
  });
  if (kmsg::remembered_action(*weakest, catalogue) < action) *weakest = item;
}

// What the new kernel log lines hold, judged by the catalogue: items that drain go to the
// cursor's remembered list (for the rest of the boot), the others are counted.
struct Seen {
  std::map<std::string, int> watch, other;  // "XID 31 0000:18:00 (watch)" -> times
  int new_fatal = 0, watch_n = 0, other_n = 0;
  // SXid first lines read so far whose Severity line has not come: (switch, SXid, link).
  std::multiset<std::tuple<std::string, unsigned long long, unsigned>> sxid_heads;

  void take(const std::string& message, const XidCatalogue& catalogue,
            std::vector<std::string>& fatal) {
    std::string item;
    XidVerdict v;
    if (auto x = kmsg::parse_xid(message)) {
      v = catalogue.judge(x->xid, x->detail);
      const std::string head = "XID " + std::to_string(x->xid) + " " + x->device;
      // A later XID cancels earlier ones of the same GPU where the policy says so; XID 154
      // "to 0x0 (None)" is the driver withdrawing its own earlier recovery action.
      std::set<unsigned long long> gone = catalogue.cancelled_by(x->xid);
      if (x->xid == 154 && v.action == XidAction::kNone) gone.insert(154);
      for (unsigned long long c : gone) {
        const std::string cancelled = "XID " + std::to_string(c) + " " + x->device;
        std::erase_if(watch, [&](const auto& kv) { return of(kv.first, cancelled); });
        std::erase_if(other, [&](const auto& kv) { return of(kv.first, cancelled); });
        std::erase_if(fatal, [&](const std::string& f) { return of(f, cancelled); });
      }
      item = head;
      if (v.action != XidAction::kNone || x->xid == 154)
        item += " (" + std::string(to_string(v.action)) +
                (x->xid == 154 ? ": " + v.why : std::string()) + ")";
    } else if (auto sx = kmsg::parse_sxid(message)) {
      // One SXid event is its first line plus a Severity line (and Data lines). The Severity
      // line of a first line seen in this read is that event again; one without (the first
      // line rotated out of the ring buffer, or cut from the log) is judged by its number.
      const auto key = std::make_tuple(sx->device, sx->sxid, sx->instance.value_or(~0u));
      if (sx->severity_line) {
        auto h = sxid_heads.find(key);
        if (h == sxid_heads.end()) h = sxid_heads.find(std::make_tuple(sx->device, sx->sxid, ~0u));
        if (h != sxid_heads.end()) {
          sxid_heads.erase(h);
          return;
        }
      } else {
        sxid_heads.insert(key);
      }
      v = catalogue.judge_sxid(sx->sxid, sx->fatal);
      item = "SXID " + std::to_string(sx->sxid) + " " + sx->device;
      if (v.action != XidAction::kNone) item += " (" + std::string(to_string(v.action)) + ")";
    } else if (auto f = kmsg::parse_device_fault(message)) {
      // A NIC the driver says it recovered cancels that function's earlier lines (the driver
      // reloaded it: health.c mlx5_health_try_recover); the others need a reboot (NVSentinel:
      // mlx5 health compromised is fatal; GPUd: the NVLink link-mask failure, RebootSystem).
      if (f->recovered) {
        const std::string head = f->device;
        std::erase_if(watch, [&](const auto& kv) { return of(kv.first, head); });
        std::erase_if(other, [&](const auto& kv) { return of(kv.first, head); });
        std::erase_if(fatal, [&](const std::string& x) { return of(x, head); });
        return;
      }
      v.action = XidAction::kReboot;
      item = f->item() + " (reboot)";
    } else {
      return;
    }
    if (drains(v.action)) {
      ++new_fatal;
      if (std::find(fatal.begin(), fatal.end(), item) == fatal.end())
        remember(fatal, item, v.action, catalogue);
    } else if (v.action == XidAction::kWatch) {
      ++watch[item];
      ++watch_n;
    } else {
      ++other[item];
      ++other_n;
    }
  }
};

// Per-GPU figures of the remembered fatal XIDs: each line names its GPU by bus id, which
// gpu_count's earlier runs tied to an NVML index (nvml::seen_gpus). The drainer's part history
// charges a drain to the GPUs whose figures fail (review W7: before, an XID drain charged no
// part, so a GPU throwing XID 48 or 95 again and again never became a repeat offender). A bus id
// no run has seen, and SXIDs (a switch's), stay node-level.
void add_gpu_figures(const CheckContext& ctx, const std::vector<std::string>& fatal,
                     const XidCatalogue& catalogue, CheckResult& r) {
  // "0:18:00.0" -> "0:18:00": XID lines carry no PCI function.
  auto slot = [](std::string bus) {
    if (const size_t dot = bus.rfind('.'); dot != std::string::npos && dot > bus.rfind(':'))
      bus.resize(dot);
    return bus;
  };
  std::map<std::string, int> index_of;  // "0:18:00" -> NVML index
  for (const auto& [bus, gpu] : nvml::seen_gpus(ctx))
    if (gpu.index >= 0) index_of[slot(bus)] = gpu.index;
  std::map<int, int> per_gpu;
  for (const std::string& item : fatal) {
    if (!item.starts_with("XID ")) continue;
    const size_t at = item.find(' ', 4);
    if (at == std::string::npos) continue;
    const std::string bus =
        slot(cuda_probe::normal_bus_id(item.substr(at + 1, item.find(' ', at + 1) - at - 1)));
    if (const auto it = index_of.find(bus); it != index_of.end()) ++per_gpu[it->second];
  }
  for (const auto& [gpu, n] : per_gpu) {
    Measurement m = count_measurement("xid_gpu_fatal", n);
    m.gpu = gpu;
    m.threshold = Threshold{Op::kLe,
                            0,
                            std::nullopt,
                            "count",
                            "XID catalogue " + catalogue.version() + ": this GPU's XIDs",
                            false,
                            {}};
    r.measurements.push_back(std::move(m));
  }
}

// The measurements: the boot's remembered fatal items (node and per GPU), the other events and
// the records lost before they were read.
void add_figures(CheckResult& r, const CheckContext& ctx, const std::vector<std::string>& fatal,
                 const Seen& seen, std::uint64_t lost, const XidCatalogue& catalogue) {
  Measurement& m = r.measurements.emplace_back();
  m.name = "xid_fatal_this_boot";
  m.value = static_cast<double>(fatal.size());
  m.unit = "count";
  m.threshold = Threshold{Op::kLe,
                          0,
                          std::nullopt,
                          "count",
                          "XID catalogue " + catalogue.version() +
                              ": an XID or SXID whose action is reset_gpu, reboot or service, or "
                              "a NIC or NVLink health line (docs/xid.md)",
                          false,
                          {}};
  add_gpu_figures(ctx, fatal, catalogue, r);
  r.measurements.push_back(
      count_measurement("xid_other_events", double(seen.watch_n + seen.other_n)));
  r.measurements.push_back(count_measurement("kmsg_records_lost", double(lost)));
}

// Status, remedy, fault code and message: fail while the boot has a remembered fatal item (the
// worst one's remedy), else warn for watched XIDs or lost records, else pass.
void judge(CheckResult& r, const std::vector<std::string>& fatal, const Seen& seen,
           std::uint64_t lost, std::size_t records, const XidCatalogue& catalogue) {
  if (!fatal.empty()) {
    std::optional<XidAction> worst;
    bool resettable = false;
    for (const auto& item : fatal) {
      const XidAction a = kmsg::remembered_action(item, catalogue);
      resettable = resettable || a == XidAction::kResetGpu;
      if (!worst || a > *worst) worst = a;
    }
    r.status = Status::kFail;
    r.remedy = remedy_of(*worst);
    r.fault_code = xid_fault_code("KMSG", *worst);
    std::vector<std::string> items = fatal;  // named in sorted order
    std::sort(items.begin(), items.end());
    r.message = listed(items) + (seen.new_fatal == 0 ? " (earlier in this boot)" : "");
    if (resettable) r.message += "; after resetting the GPU: vigil-check xid-clear --gpu <bus id>";
  } else if (!seen.watch.empty()) {
    r.status = Status::kWarn;
    r.fault_code = "VIGIL-KMSG-XID";
    r.message = listed(seen.watch);
  } else if (lost > 0) {
    r.status = Status::kWarn;
    r.fault_code = "VIGIL-KMSG-LOST";
    r.message = "kernel log overwrote " + std::to_string(lost) +
                " records before they were read; XIDs in them are unknown";
  } else {
    r.status = Status::kPass;
    r.message = std::to_string(records) + " new kernel log records, no critical XID";
    if (!seen.other.empty()) r.message += "; " + listed(seen.other) + " (not health-critical)";
  }
}

class KmsgXidCheck final : public Check {
 public:
  std::string_view name() const override { return "kmsg_xid"; }
  Applies applies(const CheckContext& ctx) const override {
    if (ctx.kmsg_path.empty()) return {false, "no kernel log configured"};
    return {};
  }

  CheckResult run(const CheckContext& ctx) override {
    CheckResult r;
    r.check = std::string(name());
    std::vector<std::string> notes;
    const std::string cursor_path = kmsg::cursor_path(ctx.state_dir, ctx.node);
    std::optional<kmsg::CursorLock> lock;
    kmsg::Cursor cursor;
    if (!cursor_path.empty()) {
      auto l = kmsg::CursorLock::acquire(cursor_path);
      if (!l)
        return error(name(), "cannot lock the XID cursor: " + l.error().to_string(),
                     "VIGIL-KMSG-STATE");
      lock.emplace(std::move(*l));
      auto c = kmsg::load_cursor(cursor_path);
      if (c) {
        cursor = std::move(*c);
      } else {
        notes.push_back(c.error().to_string() + "; read the whole log");
      }
    }
    const std::string boot = boot_id(ctx);
    if (cursor.boot_id != boot) cursor = kmsg::Cursor{boot, std::nullopt, {}};

    auto scan = kmsg::read_records(ctx.kmsg_path, cursor.last_seq.value_or(0));
    if (!scan) {
      return error(name(), "cannot read the kernel log: " + scan.error().to_string(),
                   "VIGIL-KMSG-READ");
    }
    std::uint64_t lost = static_cast<std::uint64_t>(scan->overwritten);
    if (cursor.last_seq && scan->last_seq != 0 && scan->last_seq < *cursor.last_seq) {
      // Sequence went back within one boot id (log replaced): read it whole.
      notes.push_back("kernel log restarted (seq " + std::to_string(*cursor.last_seq) + " -> " +
                      std::to_string(scan->last_seq) + ")");
      scan = kmsg::read_records(ctx.kmsg_path, 0);
      if (!scan) return error(name(), scan.error().to_string(), "VIGIL-KMSG-READ");
    } else if (cursor.last_seq && scan->first_seq > *cursor.last_seq + 1) {
      lost += scan->first_seq - *cursor.last_seq - 1;  // overwritten between two runs
    }

    const XidCatalogue& catalogue = ctx.xid_catalogue();
    if (!catalogue.valid()) return error(name(), catalogue.version(), "VIGIL-XID-CATALOGUE");
    Seen seen;
    for (const auto& rec : scan->records)
      if (rec.from_kernel()) seen.take(rec.message, catalogue, cursor.fatal);
    if (scan->last_seq != 0)
      cursor.last_seq = std::max(cursor.last_seq.value_or(0), scan->last_seq);
    if (!cursor_path.empty()) {
      if (auto saved = kmsg::save_cursor(cursor_path, cursor); !saved) {
        notes.push_back("cursor not saved: " + saved.error().to_string());
      }
    }

    add_figures(r, ctx, cursor.fatal, seen, lost, catalogue);
    if (scan->malformed > 0)
      notes.push_back(std::to_string(scan->malformed) + " malformed kernel log lines skipped");
    judge(r, cursor.fatal, seen, lost, scan->records.size(), catalogue);
    if (!notes.empty()) r.message += " [" + join(notes) + "]";
    return r;
  }
};

}  // namespace

std::unique_ptr<Check> make_kmsg_xid_check() { return std::make_unique<KmsgXidCheck>(); }

}  // namespace vigil
