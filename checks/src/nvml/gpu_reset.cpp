// The GPU reset rung (gpu_reset.h, docs/repair.md "GPU reset").
#include "gpu_reset.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <set>
#include <utility>

#include "gpu_busy.h"
#include "inventory.h"
#include "nvml_common.h"
#include "passive/kmsg_reader.h"
#include "vigil/base/files.h"
#include "vigil/base/process.h"
#include "vigil/base/strings.h"
#include "vigil/base/time.h"
#include "vigil/checks/sku.h"
#include "vigil/report/check_catalog.h"

namespace vigil::nvml {

namespace {

constexpr std::string_view kCheck = kGpuResetResult;

std::string trimmed(std::string_view s) { return std::string(vigil::trim(s)); }

// The UUIDs NVML gave (a GPU without one is counted, not compared).
std::vector<std::string> known_uuids(const GpuInventory& inv) {
  std::vector<std::string> out;
  for (const std::string& u : inv.uuids)
    if (!u.empty()) out.push_back(u);
  return out;
}

// The last lines of a command's output, bounded, for a result's message.
std::string tail_text(const LaunchResult& r) {
  std::string text = trimmed(r.out + (r.err.empty() ? "" : "\n" + r.err));
  std::replace(text.begin(), text.end(), '\n', ' ');
  if (text.size() > 300) text = "..." + text.substr(text.size() - 297);
  return text;
}

std::string what_happened(const std::string& cmd, const Result<LaunchResult>& ran) {
  if (!ran) return cmd + " could not start: " + ran.error().to_string();
  const LaunchResult& r = ran.value();
  if (r.timed_out) return cmd + " timed out";
  const std::string out = tail_text(r);
  return cmd + " exited " + std::to_string(shell_status(r)) + (out.empty() ? "" : ": " + out);
}

bool succeeded(const Result<LaunchResult>& ran) {
  return ran && !ran.value().timed_out && ran.value().term_signal == 0 &&
         ran.value().exit_code == 0;
}

Result<LaunchResult> smi(const ResetOptions& o, std::vector<std::string> args,
                         std::chrono::seconds timeout) {
  args.insert(args.begin(), o.nvidia_smi);
  LaunchOptions opts;
  opts.timeout = timeout;
  return run_command(args, opts);
}

// Sets persistence mode on the GPUs named; returns those it could not set, with why.
std::vector<std::string> set_persistence(const ResetOptions& o,
                                         const std::vector<std::string>& uuids, bool on) {
  std::vector<std::string> failed;
  for (const std::string& uuid : uuids) {
    const auto ran = smi(o, {"-pm", on ? "1" : "0", "-i", uuid}, o.query_timeout);
    if (!succeeded(ran)) failed.push_back(what_happened("nvidia-smi -pm", ran) + " (" + uuid + ")");
  }
  return failed;
}

Result<LaunchResult> systemctl(const ResetOptions& o, std::vector<std::string> args) {
  args.insert(args.begin(), o.systemctl);
  LaunchOptions opts;
  opts.timeout = o.unit_timeout;
  return run_command(args, opts);
}

// What the reset quiets (gpu_reset.h): the site's units, then persistence mode. Brought back
// once, on the path that asks, or by the destructor when something throws on the way.
class Quieted {
 public:
  Quieted(const ResetOptions& o, std::vector<std::string> persistent)
      : o_(o), persistent_(std::move(persistent)) {}
  Quieted(const Quieted&) = delete;
  Quieted& operator=(const Quieted&) = delete;
  ~Quieted() {
    if (!restored_) (void)restore();
  }

  // Stops the active ones in the order named; "" or why one would not stop (the rest are left).
  std::string stop_units() {
    for (const std::string& unit : o_.stop_units) {
      if (!succeeded(systemctl(o_, {"is-active", "--quiet", unit}))) continue;  // not running
      // Started again whatever the stop's outcome: a stop that timed out here goes on in systemd.
      stopped_.push_back(unit);
      const auto ran = systemctl(o_, {"stop", unit});
      if (!succeeded(ran)) return what_happened("systemctl stop " + unit, ran);
    }
    return "";
  }
  // Persistence mode off where it was on; the GPUs it could not set, with why.
  std::vector<std::string> persistence_off() {
    persistence_off_ = true;  // a partial failure is set back too
    return set_persistence(o_, persistent_, false);
  }
  // Persistence mode back on where it went off, the units started again (the last stopped
  // first); what would not come back.
  std::vector<std::string> restore() {
    restored_ = true;
    std::vector<std::string> failed;
    if (persistence_off_) failed = set_persistence(o_, persistent_, true);
    for (auto it = stopped_.rbegin(); it != stopped_.rend(); ++it) {
      const auto ran = systemctl(o_, {"start", *it});
      if (!succeeded(ran)) failed.push_back(what_happened("systemctl start " + *it, ran));
    }
    return failed;
  }

 private:
  const ResetOptions& o_;
  const std::vector<std::string> persistent_;
  std::vector<std::string> stopped_;
  bool persistence_off_ = false, restored_ = false;
};

// "; not restored: ..." for a result's message, or "".
std::string not_restored_note(const std::vector<std::string>& failed) {
  return failed.empty() ? "" : "; not restored: " + short_list(failed, 2, "; ", "; ");
}

constexpr const char* kFaultResetMig = "VIGIL-RESET-MIG";

// Why the node's GPUs may not be reset now, with the fault; `why` is empty when they may.
struct Refusal {
  std::string why;
  const char* fault = "";
};

// Only a listed process refuses the reset: a GPU hung after an XID may read busy with nothing
// on it. Processes NVML cannot list (another PID namespace) meet nvidia-smi's own refusal.
// MIG refuses it too.
Refusal refusal(const BusyScan& scan) {
  if (!scan.busy.empty()) {
    std::vector<std::string> who;
    for (const GpuBusy& b : scan.busy) who.push_back(b.reason);
    return {"GPU busy: " + short_list(who, 4, "; ", "; ") +
                "; not reset (never someone's work; a leftover goes with the reboot rung)",
            kFaultGpuBusy};
  }
  if (!scan.mig_enabled.empty()) {
    std::vector<std::string> gpus;
    for (int g : scan.mig_enabled) gpus.push_back("gpu" + std::to_string(g));
    return {"MIG enabled on " + short_list(gpus, 8, ", ", ", ") +
                ": not reset (a reset destroys the GPU instances the site configured; the reboot "
                "rung and the site's MIG setup at boot handle it)",
            kFaultResetMig};
  }
  return {};
}

// After a good reset the boot id stays, so the kmsg cursors' remembered XIDs a reset clears
// would fail the next Prolog or re-check again (docs/hooks.md "After a GPU reset"): forgotten
// for every GPU, as `vigil-check xid-clear` does; those needing a reboot or a person stay.
// Returns "" or what the message should add.
std::string forget_reset_xids(const ResetOptions& o, const std::vector<std::string>& bus_ids) {
  size_t cleared = 0;
  std::vector<std::string> problems;
  for (const std::string& dir : o.xid_state_dirs) {
    std::error_code ec;
    if (dir.empty() || !std::filesystem::is_directory(dir, ec)) continue;  // nothing remembered
    const std::string path = kmsg::cursor_path(dir, o.node);
    if (!std::filesystem::exists(path, ec)) continue;
    for (const std::string& bus : bus_ids) {
      if (bus.empty()) continue;
      auto done = kmsg::clear_after_gpu_reset(path, bus);
      if (done)
        cleared += done->cleared.size();
      else
        problems.push_back(path + ": " + done.error().to_string());
    }
  }
  std::string note;
  if (cleared) note += "; forgot " + std::to_string(cleared) + " remembered XID(s) a reset clears";
  if (!problems.empty())
    note += "; remembered XIDs not cleared: " + short_list(problems, 2, "; ", "; ");
  return note;
}

// Every GPU must register in its NVLink fabric again after a reset (review W9): nvml_fabric
// grants its grace from this time too. Returns "" or what the message should add.
std::string mark_reset(const ResetOptions& o) {
  std::vector<std::string> problems;
  const std::string now = std::to_string(static_cast<long long>(std::time(nullptr))) + "\n";
  for (const std::string& dir : o.xid_state_dirs) {
    std::error_code ec;
    if (dir.empty() || !std::filesystem::is_directory(dir, ec)) continue;
    if (auto w = replace_file_atomically(gpu_reset_marker(dir, o.node), now); !w)
      problems.push_back(w.error().to_string());
  }
  return problems.empty() ? "" : "; reset time not noted: " + short_list(problems, 2, "; ", "; ");
}

// The driver's evidence before the reset (vigil-reboot's, for a reset): "; bug report: PATH" or
// why there is none. Whatever happens, the reset goes on.
// Whether `cmd` (a path, or a name looked up in PATH as exec does) can be run: the evidence
// directory is made only for a bug report that can be written into it.
bool runnable(const std::string& cmd) {
  if (cmd.find('/') != std::string::npos) return ::access(cmd.c_str(), X_OK) == 0;
  const char* path = std::getenv("PATH");
  std::string_view dirs = path && *path ? path : "/usr/bin:/bin";
  while (!dirs.empty()) {
    const size_t colon = dirs.find(':');
    const std::string dir(dirs.substr(0, colon));
    dirs = colon == std::string_view::npos ? std::string_view{} : dirs.substr(colon + 1);
    if (!dir.empty() && ::access((dir + "/" + cmd).c_str(), X_OK) == 0) return true;
  }
  return false;
}

struct BugReport {
  std::string note;  // for the message
  std::string path;  // the file kept on the node (the report's `evidence`); empty: none
};

BugReport keep_bug_report(const ResetOptions& o, int64_t now) {
  if (o.evidence_dir.empty()) return {};
  if (!runnable(o.bug_report)) return {"; no bug report (" + o.bug_report + " not found)", ""};
  std::error_code ec;
  std::filesystem::create_directories(o.evidence_dir, ec);
  if (ec) return {"; no bug report (" + o.evidence_dir + ": " + ec.message() + ")", ""};
  std::string stamp = rfc3339_utc(now);
  std::erase_if(stamp, [](char c) { return c == '-' || c == ':'; });
  // Absolute, so the report's `evidence` names the file wherever vigil-check ran from.
  const std::string out = std::filesystem::absolute(o.evidence_dir, ec).string() + "/" + o.node +
                          "-" + stamp + ".nvidia-bug-report.log";
  LaunchOptions opts;
  opts.timeout = o.bug_report_timeout;
  const mode_t old = ::umask(077);  // the node's logs and configuration: root's only
  const auto ran = run_command({o.bug_report, "--output-file", out}, opts);
  ::umask(old);
  // NVIDIA's script appends .gz to the name it is given.
  const std::string file = std::filesystem::exists(out + ".gz", ec) ? out + ".gz" : out;
  // Only a path the report codec takes: a report it refused would lose the reset's outcome.
  const bool kept = std::filesystem::exists(file, ec) && is_evidence_path(file);
  if (!succeeded(ran))
    return {"; bug report incomplete (" + what_happened(o.bug_report, ran) + "): " + file,
            kept ? file : ""};
  return {"; bug report: " + file, kept ? file : ""};
}

// The UUIDs of the GPUs whose persistence mode is on, or why nvidia-smi did not say.
Result<std::vector<std::string>> persistent_gpus(const ResetOptions& o) {
  const auto query =
      smi(o, {"--query-gpu=uuid,persistence_mode", "--format=csv,noheader"}, o.query_timeout);
  if (!succeeded(query)) return Error{what_happened("nvidia-smi --query-gpu", query), ""};
  auto rows = parse_persistence(query.value().out);
  if (!rows) return rows.error();
  std::vector<std::string> persistent;
  for (const PersistenceRow& r : *rows)
    if (r.enabled) persistent.push_back(r.uuid);
  return persistent;
}

// The GPUs of `before` that `after` lacks: their UUIDs or, when every UUID is back, how many
// fewer GPUs NVML lists.
std::vector<std::string> missing_gpus(const GpuInventory& before, const GpuInventory& after) {
  const size_t gpus = before.gpu_names.size();
  std::vector<std::string> missing;
  const std::set<std::string> back(after.uuids.begin(), after.uuids.end());
  for (const std::string& uuid : known_uuids(before))
    if (!back.count(uuid)) missing.push_back(uuid);
  if (missing.empty() && after.gpu_names.size() < gpus)
    missing.push_back(std::to_string(gpus - after.gpu_names.size()) + " GPU(s)");
  return missing;
}

}  // namespace

Result<std::vector<PersistenceRow>> parse_persistence(std::string_view csv) {
  std::vector<PersistenceRow> rows;
  size_t line_no = 0;
  while (!csv.empty()) {
    const size_t nl = csv.find('\n');
    const std::string line = trimmed(csv.substr(0, nl));
    csv = nl == std::string_view::npos ? std::string_view{} : csv.substr(nl + 1);
    ++line_no;
    // One row per GPU, its UUID first ("GPU-..."); anything else nvidia-smi prints on stdout (a
    // warning about one GPU) is not a row.
    if (!line.starts_with("GPU-")) continue;
    const size_t comma = line.find(',');
    const std::string uuid =
        trimmed(std::string_view(line).substr(0, comma == std::string::npos ? 0 : comma));
    const std::string mode =
        comma == std::string::npos ? "" : trimmed(std::string_view(line).substr(comma + 1));
    if (uuid.empty() || (mode != "Enabled" && mode != "Disabled"))
      return Error{
          "line " + std::to_string(line_no) + ": '" + line + "' is not '<uuid>, Enabled|Disabled'",
          "nvidia-smi --query-gpu=uuid,persistence_mode"};
    rows.push_back({uuid, mode == "Enabled"});
  }
  return rows;
}

Status reset_failure_status(int exit_code) {
  return exit_code == 14 || exit_code == 15 ? Status::kFail : Status::kError;
}

CheckResult reset_gpus(const CheckContext& ctx, const ResetOptions& o) {
  auto before = read_gpu_inventory(ctx.nvml_library);
  if (!before) return error(kCheck, "NVML not available: " + before.error().to_string());
  const size_t gpus = before->gpu_names.size();
  if (gpus == 0) return error(kCheck, "NVML lists no GPU; nothing to reset");
  const BusyScan scan = scan_gpus_for_other_work(ctx, BusySampling{1}, /*processes_only=*/true);
  if (const Refusal no = refusal(scan); !no.why.empty()) return error(kCheck, no.why, no.fault);

  auto persistent = persistent_gpus(o);
  if (!persistent) return error(kCheck, persistent.error().to_string() + "; not reset");
  const BugReport bug_report = keep_bug_report(o, static_cast<int64_t>(std::time(nullptr)));
  const std::string& evidence = bug_report.note;
  // Every outcome from here on names the file the bug report left, in a field of its own.
  auto kept = [&](CheckResult r) {
    if (!bug_report.path.empty()) r.evidence = bug_report.path;
    return r;
  };

  // Whatever holds the GPUs open goes quiet for the reset and comes back after it, on every
  // path: the site's units, then persistence mode (NVIDIA/NVSentinel #1690).
  Quieted quiet(o, *persistent);
  // Not reset, for `why`: what was quieted comes back first, and the message says what did not.
  auto refuse = [&](const std::string& why, const char* fault = "") {
    const std::string not_restored = not_restored_note(quiet.restore());
    return kept(error(kCheck, why + not_restored + evidence, fault));
  };
  if (std::string failed = quiet.stop_units(); !failed.empty())
    return refuse(failed + "; not reset");
  if (auto failed = quiet.persistence_off(); !failed.empty())
    return refuse(short_list(failed, 2, "; ", "; ") + "; not reset");
  if (const auto holders = gpu_device_holders(ctx.proc_root, o.dev_dir); !holders.empty()) {
    std::vector<std::string> who;
    for (const DeviceHolder& h : holders) who.push_back(holder_text(h));
    return refuse("GPUs held open by " + short_list(who, 3, "; ", "; ") +
                      "; not reset (a unit that holds them can be stopped for the reset: "
                      "--stop-unit, docs/repair.md)",
                  kFaultGpuHeld);
  }
  const auto reset = smi(o, {"--gpu-reset"}, o.reset_timeout);
  const std::string not_restored = not_restored_note(quiet.restore());

  CheckResult r;
  r.check = std::string(kCheck);
  Measurement m;
  m.name = "gpus";
  m.value = static_cast<double>(gpus);
  m.unit = "count";
  r.measurements.push_back(m);
  if (!succeeded(reset)) {
    const bool exited = reset && !reset.value().timed_out && reset.value().term_signal == 0;
    r.status = exited ? reset_failure_status(reset.value().exit_code) : Status::kError;
    r.message = what_happened("nvidia-smi --gpu-reset", reset) + not_restored + evidence;
    return kept(r);
  }
  const std::string not_marked = mark_reset(o);
  auto after = read_gpu_inventory(ctx.nvml_library);
  if (!after) {
    r.status = Status::kFail;
    r.message = "reset, but NVML does not answer after it: " + after.error().to_string() +
                not_restored + evidence;
    return kept(r);
  }
  if (const auto missing = missing_gpus(*before, *after); !missing.empty()) {
    r.status = Status::kFail;
    r.message = "reset, but " + short_list(missing, 4, ", ", ", ") + " did not come back" +
                not_restored + evidence;
    return kept(r);
  }
  r.status = not_restored.empty() ? Status::kPass : Status::kWarn;
  r.message = "reset " + std::to_string(gpus) + " GPUs; all back" + not_restored +
              forget_reset_xids(o, scan.bus_ids) + not_marked + evidence;
  return kept(r);
}

}  // namespace vigil::nvml
