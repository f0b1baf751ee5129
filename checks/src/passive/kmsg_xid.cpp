// kmsg_xid: XIDs the NVIDIA driver wrote to the kernel log ("NVRM: Xid ...") since the last run,
// read from ctx.kmsg_path after a cursor kept in <state_dir>/kmsg_xid.<node>.json. nvml_xid only
// hears events raised while it listens; this sees what happened during the job that just ended.
//   fatal XID (core/xid_classes.h) -> fail, and it keeps failing for the rest of this boot
//     (those XIDs need a GPU reset or a reboot; a quiet log afterwards proves nothing), or, for
//     those a reset clears, until `vigil-check xid-clear --gpu BUS` says the GPU was reset
//     (review F07: a reset keeps the boot id); Xid 154 by the recovery action it states;
//   warn XID -> warn; other XIDs -> reported;
//   records the ring buffer overwrote before we read them -> warn (their XIDs are unknown);
//   an unreadable log -> error. Without a state dir every run reads the whole log (no cursor).
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>

#include "check_factories.h"
#include "core/xid_classes.h"
#include "kmsg_reader.h"
#include "passive/count_measurement.h"

namespace vigil {
namespace {

namespace fs = std::filesystem;

std::string read_boot_id(const std::string& proc_root) {
  std::ifstream in(fs::path(proc_root) / "sys/kernel/random/boot_id");
  std::string id;
  std::getline(in, id);
  return id;
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : ", ") + s;
  return out;
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
    const std::string boot = read_boot_id(ctx.proc_root);
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

    std::map<std::string, int> warn_seen, other_seen;  // "XID 31 0000:18:00" -> times
    int new_fatal = 0;
    for (const auto& rec : scan->records) {
      auto x = kmsg::parse_xid(rec.message);
      if (!x) continue;
      std::string item = "XID " + std::to_string(x->xid) + " " + x->device;
      XidClass cls = classify_xid(x->xid);
      if (x->xid == 154) {  // judged by the recovery action its text states
        const std::optional<unsigned> action = xid154_recovery_action(x->detail);
        cls = classify_xid154(action);
        item +=
            " (" + (action ? recovery_action_text(*action) : std::string("action unread")) + ")";
      }
      switch (cls) {
        case XidClass::kFatal:
          ++new_fatal;
          if (std::find(cursor.fatal.begin(), cursor.fatal.end(), item) == cursor.fatal.end())
            cursor.fatal.push_back(item);
          break;
        case XidClass::kWarn:
          ++warn_seen[item];
          break;
        case XidClass::kOther:
          ++other_seen[item];
          break;
      }
    }
    if (scan->last_seq != 0)
      cursor.last_seq = std::max(cursor.last_seq.value_or(0), scan->last_seq);
    if (!cursor_path.empty()) {
      if (auto saved = kmsg::save_cursor(cursor_path, cursor); !saved) {
        notes.push_back("cursor not saved: " + saved.error().to_string());
      }
    }

    Measurement& fatal = r.measurements.emplace_back();
    fatal.name = "xid_fatal_this_boot";
    fatal.value = static_cast<double>(cursor.fatal.size());
    fatal.unit = "count";
    fatal.threshold = Threshold{Op::kLe,
                                0,
                                std::nullopt,
                                "count",
                                std::string("built-in: fatal XIDs ") + kFatalXidList +
                                    ", and 154 stating a reset or reboot",
                                false,
                                {}};
    int warn_n = 0, other_n = 0;
    for (const auto& [k, n] : warn_seen) warn_n += n;
    for (const auto& [k, n] : other_seen) other_n += n;
    r.measurements.push_back(count_measurement("xid_other_events", double(warn_n + other_n)));
    r.measurements.push_back(count_measurement("kmsg_records_lost", double(lost)));
    if (scan->malformed > 0)
      notes.push_back(std::to_string(scan->malformed) + " malformed kernel log lines skipped");

    auto listed = [](const std::map<std::string, int>& m) {
      std::vector<std::string> v;
      for (const auto& [k, n] : m) v.push_back(n > 1 ? k + " x" + std::to_string(n) : k);
      return join(v);
    };
    if (!cursor.fatal.empty()) {
      r.status = Status::kFail;
      r.fault_code = "VIGIL-KMSG-XID-FATAL";
      r.message = join(cursor.fatal) + (new_fatal == 0 ? " (earlier in this boot)" : "");
      bool resettable = false;
      for (const auto& item : cursor.fatal) resettable = resettable || cleared_by_gpu_reset(item);
      if (resettable)
        r.message += "; after resetting the GPU: vigil-check xid-clear --gpu <bus id>";
    } else if (!warn_seen.empty()) {
      r.status = Status::kWarn;
      r.fault_code = "VIGIL-KMSG-XID";
      r.message = listed(warn_seen);
    } else if (lost > 0) {
      r.status = Status::kWarn;
      r.fault_code = "VIGIL-KMSG-LOST";
      r.message = "kernel log overwrote " + std::to_string(lost) +
                  " records before they were read; XIDs in them are unknown";
    } else {
      r.status = Status::kPass;
      r.message = std::to_string(scan->records.size()) + " new kernel log records, no critical XID";
      if (!other_seen.empty()) r.message += "; " + listed(other_seen) + " (not health-critical)";
    }
    if (!notes.empty()) r.message += " [" + join(notes) + "]";
    return r;
  }
};

}  // namespace

std::unique_ptr<Check> make_kmsg_xid_check() { return std::make_unique<KmsgXidCheck>(); }

}  // namespace vigil
