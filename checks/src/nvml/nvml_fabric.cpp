// nvml_fabric: is each GPU registered in its NVLink fabric, and healthy there?
// nvml_recovery: the recovery action the driver says a GPU needs.
//
// nvml_fabric. On NVSwitch systems (HGX/DGX H100, H200, B200; GB200 NVL72) a GPU
// joins the NVLink fabric only after Fabric Manager (or, on NVL72, the NVLink subnet manager)
// registers it; until then CUDA initialisation fails with cudaErrorSystemNotReady (802) and no
// job can run. nvml.h "Fabric definitions" (CUDA 13.3 header, lines 3794-3950):
//   - nvmlDeviceGetGpuFabricInfoV (v3 adds healthSummary; drivers that only know v2 answer
//     NVML_ERROR_ARGUMENT_VERSION_MISMATCH) or, on R535 drivers, nvmlDeviceGetGpuFabricInfo;
//     NVML_ERROR_NOT_SUPPORTED or state NOT_SUPPORTED: no fabric on this board (PCIe, pre-Hopper).
//   - state COMPLETED: `status` is the registration's result ("must be checked only if state
//     returns complete"); anything but NVML_SUCCESS fails.
//   - state NOT_STARTED / IN_PROGRESS: not registered (yet). DCGM's diag fails both ("training
//     not started" / "training in progress", NVIDIA/DCGM testing/python3, the software plugin's
//     GpuFabricInfoV cases), but after boot, a GPU reset or a Fabric Manager restart every GPU
//     registers again and they are transient (NVIDIA's k8s device plugin treats them as
//     "transitional, not fatal"; on NVLink5 GPUs sit IN_PROGRESS or NOT_STARTED until FM acts,
//     NVIDIA/gpu-driver-container PR #909). Vigil warns until ctx.fabric_wait.grace after the
//     latest of boot (/proc/uptime), the last GPU reset Vigil did (gpu_reset_marker) and Fabric
//     Manager's start (its process's start time); after it, it reads the state again every
//     ctx.fabric_wait.recheck for up to ctx.fabric_wait.settle (Vigil's choice: 30 s, one window
//     for the whole check; at most a quarter of a hook's time box) and fails if the GPU has still
//     not started registering: Fabric Manager is down, and every CUDA job fails there (review W9).
//     Runs note when they found GPUs not registered (fabric_wait_marker, one episode per boot,
//     ended by a GPU reset, by a run that reads every GPU registered, or by a grace without
//     finding any waiting); a Fabric Manager that starts after the episode began (a restart
//     loop, which never registers anything) does not restart the grace. IN_PROGRESS past the
//     grace warns (DCGM warns on it); past the grace in an episode three graces long (30 min
//     by default) it fails: no CUDA job has run there all that time (review W10; judge_gpu).
//   - healthSummary (v3): UNHEALTHY fails, LIMITED_CAPACITY warns. Without a summary (v2), the
//     healthMask decides as DCGM 4.6's MonitorFabricFields does (DcgmHealthWatch.cpp, review
//     W10): route unhealthy, degraded bandwidth and every incorrect-configuration code nvml.h
//     names fail; a route or access-timeout recovery in progress fails if it is still in
//     progress after the settle window; a configuration code newer than the header warns.
//
// nvml_recovery: NVML_FI_DEV_GET_GPU_RECOVERY_ACTION (nvml.h:2796, enum
// nvmlDeviceGpuRecoveryAction_t at :2194) is the driver's own statement of what a GPU needs
// before it may run work again (the action XID 154 announces in the kernel log). NONE passes;
// GPU_RESET, NODE_REBOOT and DRAIN_AND_RESET fail with the action in the reason and as the
// report's remedy; DRAIN_P2P and RECOVER_IMEX_DOMAIN warn, as DCGM 4.6 does
// (recovery_action_verdict, XID 154's reading too: vigil/checks/xid_catalogue.h); a value
// newer than this header fails as a reboot. The
// field is NOT_SUPPORTED on drivers before it existed: skipped.
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <thread>

#include "check_factories.h"
#include "nvml_common.h"
#include "vigil/base/files.h"

namespace vigil {
namespace {

using namespace nvml;

constexpr const char* kFaultFabricFailed = "VIGIL-NVML-FABRIC-FAILED";
constexpr const char* kFaultFabricNotRegistered = "VIGIL-NVML-FABRIC-NOT-REGISTERED";
constexpr const char* kFaultFabricPending = "VIGIL-NVML-FABRIC-PENDING";
constexpr const char* kFaultFabricUnhealthy = "VIGIL-NVML-FABRIC-UNHEALTHY";
constexpr const char* kFaultFabricDegraded = "VIGIL-NVML-FABRIC-DEGRADED";
constexpr const char* kFaultRecovery = "VIGIL-NVML-RECOVERY-ACTION";

unsigned health_field(unsigned mask, unsigned shift, unsigned width) {
  return (mask >> shift) & width;
}

// The healthMask fields that are set, as words for the reason ("route unhealthy"). `fail`: one
// of them fails (DCGM 4.6 MonitorFabricFields); `recovering`: a route or access-timeout
// recovery is in progress, which fails only if it outlasts the settle window.
std::vector<std::string> mask_problems(unsigned mask, bool& fail, bool& recovering) {
  std::vector<std::string> out;
  fail = recovering = false;
  const unsigned two = kNvmlGpuFabricHealthWidthTwoBit;
  auto set = [&](unsigned shift) {
    return health_field(mask, shift, two) == kNvmlGpuFabricHealthTrue;
  };
  if (set(kNvmlGpuFabricHealthShiftRouteUnhealthy)) {
    out.push_back("route unhealthy");
    fail = true;
  }
  const unsigned config = health_field(mask, kNvmlGpuFabricHealthShiftIncorrectConfiguration,
                                       kNvmlGpuFabricHealthWidthIncorrectConfiguration);
  if (config > kNvmlGpuFabricHealthConfigNone) {
    // 2..8: incorrect SysGUID, chassis serial number, no partition, insufficient NVLinks,
    // incompatible GPU firmware, invalid location, GPU state invalid (nvml.h:3866-3872). DCGM
    // fails every one: a GPU whose domain set-up is wrong cannot run multi-GPU work either. A
    // code newer than this header warns (Vigil does not guess what it means).
    static const char* const kConfig[] = {"SysGUID",
                                          "chassis serial number",
                                          "no partition",
                                          "insufficient NVLinks",
                                          "incompatible GPU firmware",
                                          "invalid location",
                                          "GPU state invalid"};
    const unsigned i = config - 2;
    const bool known = i < std::size(kConfig);
    out.push_back(std::string("incorrect configuration (") +
                  (known ? kConfig[i] : "code " + std::to_string(config)) + ")");
    fail = fail || known;
  }
  if (set(kNvmlGpuFabricHealthShiftDegradedBw)) {
    out.push_back("bandwidth degraded");
    fail = true;
  }
  if (set(kNvmlGpuFabricHealthShiftRouteRecovery)) {
    out.push_back("route recovery in progress");
    recovering = true;
  }
  if (set(kNvmlGpuFabricHealthShiftAccessTimeoutRecovery)) {
    out.push_back("access timeout recovery in progress");
    recovering = true;
  }
  return out;
}

// One read of a GPU's fabric info: the v3 struct, v2 when the driver answers a version mismatch
// or NOT_SUPPORTED for v3 (a driver that knows v2 only may answer either), the unversioned call
// when the versioned one is missing (R535).
struct FabricRead {
  nvmlReturn_t rc = NVML_SUCCESS;
  nvmlGpuFabricInfo_v3_t info{};
  bool has_mask = false, has_summary = false;
};

FabricRead read_fabric(const Session& s, int g) {
  FabricRead f;
  f.info.version = kNvmlGpuFabricInfoV3;
  f.rc = call(s.api().device_get_gpu_fabric_info_v, s.gpus[g], &f.info);
  f.has_mask = f.has_summary = f.rc == NVML_SUCCESS;
  if (f.rc == NVML_ERROR_ARGUMENT_VERSION_MISMATCH || f.rc == NVML_ERROR_NOT_SUPPORTED) {
    nvmlGpuFabricInfo_v3_t v2{};
    v2.version = kNvmlGpuFabricInfoV2;  // the driver writes the v2 fields only
    const nvmlReturn_t rc = call(s.api().device_get_gpu_fabric_info_v, s.gpus[g], &v2);
    if (rc == NVML_SUCCESS || f.rc == NVML_ERROR_ARGUMENT_VERSION_MISMATCH) {
      f.rc = rc;
      f.info = v2;
      f.has_mask = rc == NVML_SUCCESS;
      f.has_summary = false;
    }
  }
  if (f.rc == NVML_ERROR_FUNCTION_NOT_FOUND) {
    nvmlGpuFabricInfo_t old{};
    f.rc = call(s.api().device_get_gpu_fabric_info, s.gpus[g], &old);
    f.info.status = old.status;
    f.info.state = old.state;
  }
  return f;
}

// When the fabric last had to register this node's GPUs: seconds ago, and what happened then
// ("boot", "the last GPU reset", "Fabric Manager started"). Unknown uptime: no age.
struct FabricEpoch {
  std::optional<double> age_s;
  std::string since = "boot";
  std::optional<double> uptime_s;
  // The uptime of this episode's first run that found a GPU not registered (fabric_wait_marker),
  // and how long ago that was.
  std::optional<double> wait_first_s, waiting_s;
};

// <state dir>/fabric-wait-<node>: "<boot> <first> <last>", the boot's wall-clock time and the
// uptime (seconds) of the first and the latest run that found a GPU not registered (NOT_STARTED,
// IN_PROGRESS) in this episode. An episode is one boot's runs that found GPUs waiting no more
// than a grace apart, with no GPU reset and no run that found every GPU registered in between.
// Uptime, not the wall clock, measures it: a clock step cannot age it (it only ends it, as the
// boot's wall-clock time then moves). No state dir: no note, and neither rule below applies.
std::string fabric_wait_marker(const CheckContext& ctx) {
  return ctx.state_dir.empty() || ctx.node.empty() ? ""
                                                   : ctx.state_dir + "/fabric-wait-" + ctx.node;
}

// The episode's first run's uptime, when the note is this episode's. reset_age_s: seconds since
// the last GPU reset Vigil did, when known.
std::optional<double> read_fabric_wait(const CheckContext& ctx, double uptime,
                                       std::optional<double> reset_age_s) {
  std::ifstream in(fabric_wait_marker(ctx));
  double boot = 0, first = 0, last = 0;
  if (!(in >> boot >> first >> last)) return std::nullopt;
  const double this_boot = static_cast<double>(std::time(nullptr)) - uptime;
  const double grace = std::chrono::duration<double>(ctx.fabric_wait.grace).count();
  if (std::abs(boot - this_boot) > 60 || first < 0 || first > last || last > uptime)
    return std::nullopt;                           // another boot, or the clock stepped
  if (uptime - last > grace) return std::nullopt;  // not found waiting for a grace: a new episode
  if (reset_age_s && *reset_age_s < uptime - first) return std::nullopt;  // a reset since
  return first;
}

// After a run: a run that found GPUs waiting starts or extends the episode; one that read every
// GPU registered ends it; one that could not read every GPU leaves it as it is.
void note_fabric_wait(const CheckContext& ctx, const FabricEpoch& e, bool waiting,
                      bool all_registered) {
  const std::string path = fabric_wait_marker(ctx);
  if (path.empty()) return;
  std::error_code ec;
  if (all_registered) {
    std::filesystem::remove(path, ec);
    return;
  }
  if (!waiting || !e.uptime_s) return;
  const double boot = static_cast<double>(std::time(nullptr)) - *e.uptime_s;
  char line[96];
  std::snprintf(line, sizeof line, "%.0f %.1f %.1f\n", boot, e.wait_first_s.value_or(*e.uptime_s),
                *e.uptime_s);
  (void)replace_file_atomically(path, line);
}

// Seconds since Fabric Manager's process started, from <proc_root>/<pid>/stat (field 22,
// starttime, in clock ticks after boot: proc(5)); comm is "nv-fabricmanage", the kernel's 15
// characters of nv-fabricmanager. nullopt when it does not run or cannot be read.
std::optional<double> fabric_manager_age_s(const CheckContext& ctx, double uptime) {
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(ctx.proc_root, ec)) {
    const std::string pid = e.path().filename().string();
    if (pid.empty() || pid.find_first_not_of("0123456789") != std::string::npos) continue;
    const std::string stat = read_whole_file(e.path() / "stat").value_or("");
    const size_t open = stat.find('('), close = stat.rfind(')');
    if (open == std::string::npos || close == std::string::npos || close < open) continue;
    if (stat.substr(open + 1, close - open - 1) != "nv-fabricmanage") continue;
    std::istringstream fields(stat.substr(close + 1));
    std::string f;
    for (int i = 3; i <= 22 && fields >> f; ++i) {
      if (i < 22) continue;
      const long ticks = ::sysconf(_SC_CLK_TCK);
      double start = 0;
      if (ticks > 0 && std::from_chars(f.data(), f.data() + f.size(), start).ec == std::errc())
        return std::max(0.0, uptime - start / static_cast<double>(ticks));
    }
  }
  return std::nullopt;
}

FabricEpoch fabric_epoch(const CheckContext& ctx) {
  FabricEpoch e;
  const std::optional<double> uptime = uptime_s(ctx);
  e.age_s = e.uptime_s = uptime;
  if (!uptime) return e;
  auto younger = [&](std::optional<double> age, const char* what) {
    if (age && *age >= 0 && *age < *e.age_s) {
      e.age_s = age;
      e.since = what;
    }
  };
  std::optional<double> reset_age;
  if (!ctx.state_dir.empty()) {
    std::ifstream in(gpu_reset_marker(ctx.state_dir, ctx.node));
    long long at = 0;
    if (in >> at) reset_age = static_cast<double>(std::time(nullptr) - at);
    younger(reset_age, "the last GPU reset");
  }
  e.wait_first_s = read_fabric_wait(ctx, *uptime, reset_age);
  if (e.wait_first_s) e.waiting_s = *uptime - *e.wait_first_s;
  std::optional<double> fm = fabric_manager_age_s(ctx, *uptime);
  if (fm && e.waiting_s && *fm < *e.waiting_s)  // started while GPUs waited: no new grace
    younger(e.waiting_s, "GPUs were first found unregistered (Fabric Manager started since)");
  else
    younger(fm, "Fabric Manager started");
  return e;
}

// "30 min", "45 s".
std::string minutes(double s) { return s >= 120 ? figure(s / 60) + " min" : figure(s) + " s"; }

// "30 min after boot", "45 s after the last GPU reset".
std::string after(const FabricEpoch& e) {
  if (!e.age_s) return "uptime unknown";
  return minutes(*e.age_s) + " after " + e.since;
}

bool unsettled(const FabricRead& f) {
  if (f.rc != NVML_SUCCESS) return false;
  if (f.info.state == kNvmlGpuFabricStateNotStarted ||
      f.info.state == kNvmlGpuFabricStateInProgress)
    return true;
  bool fail = false, recovering = false;
  if (f.has_mask) mask_problems(f.info.healthMask, fail, recovering);
  return recovering;
}

class NvmlFabricCheck final : public NvmlCheck {
 public:
  std::string_view name() const override { return "nvml_fabric"; }

  CheckResult inspect(const CheckContext& ctx, const Session& s, CheckResult& r,
                      Verdict& v) override {
    const FabricEpoch epoch = fabric_epoch(ctx);
    const bool past_grace = epoch.age_s && *epoch.age_s >= grace_s(ctx);
    // One settle window for the whole check, however many GPUs wait in it.
    const auto settle_until = std::chrono::steady_clock::now() + ctx.fabric_wait.settle;
    int registered = 0, unread = 0;
    bool waiting = false;  // a GPU not registered yet: NOT_STARTED or IN_PROGRESS
    for (int g = 0; g < s.count(); ++g) {
      if (!s.gpus[g]) {
        ++unread;
        continue;
      }
      FabricRead f = read_fabric(s, g);
      if (f.rc == NVML_ERROR_NOT_SUPPORTED || f.rc == NVML_ERROR_FUNCTION_NOT_FOUND ||
          (f.rc == NVML_SUCCESS && f.info.state == kNvmlGpuFabricStateNotSupported)) {
        v.not_supported(g, "NVLink fabric");
        continue;
      }
      if (f.rc != NVML_SUCCESS) {
        v.query_failed(s, g, "nvmlDeviceGetGpuFabricInfo", f.rc);
        ++unread;
        continue;
      }
      // Past the grace, a GPU still registering (or recovering a route) gets the settle window
      // before a fatal verdict: Fabric Manager may be acting on it right now.
      while (past_grace && unsettled(f) && std::chrono::steady_clock::now() < settle_until) {
        std::this_thread::sleep_for(ctx.fabric_wait.recheck);
        if (FabricRead again = read_fabric(s, g); again.rc == NVML_SUCCESS) f = again;
      }
      add_measurement(r, ctx, "fabric_state", f.info.state, "enum", g);
      waiting |= f.info.state == kNvmlGpuFabricStateNotStarted ||
                 f.info.state == kNvmlGpuFabricStateInProgress;
      const bool stuck = past_grace && epoch.waiting_s && *epoch.waiting_s >= 3 * grace_s(ctx);
      if (!judge_gpu(s, g, f, epoch, past_grace, stuck, v)) continue;
      ++registered;
      if (f.has_summary && f.info.healthSummary != kNvmlGpuFabricHealthSummaryNotSupported)
        add_measurement(r, ctx, "fabric_health_summary", f.info.healthSummary, "enum", g);
    }
    note_fabric_wait(ctx, epoch, waiting, !waiting && unread == 0 && registered > 0);
    v.conclude(
        r, [](const Measurement&, Status) { return Described{}; },
        std::to_string(registered) + " GPUs registered in the NVLink fabric");
    return r;
  }

 private:
  // One GPU's findings; true when it is registered.
  static double grace_s(const CheckContext& ctx) {
    return std::chrono::duration<double>(ctx.fabric_wait.grace).count();
  }

  // `stuck`: GPUs of this node have waited unregistered for three graces, across runs.
  static bool judge_gpu(const Session& s, int g, const FabricRead& f, const FabricEpoch& epoch,
                        bool past_grace, bool stuck, Verdict& v) {
    const std::string gs = "gpu" + std::to_string(g);
    // Fabric state under MIG is not verified on hardware (NVML's NVLink state is wrong
    // there): a MIG-enabled GPU's findings only warn, and say so.
    unsigned mig_current = 0, mig_pending = 0;
    const bool mig =
        call(s.api().device_get_mig_mode, s.gpus[g], &mig_current, &mig_pending) == NVML_SUCCESS &&
        mig_current == kNvmlDeviceMigEnable;
    auto finding = [&](Status st, const std::string& text, const char* code) {
      if (mig && st == Status::kFail)
        v.add(Status::kWarn, text + " (MIG enabled: not judged further)", code);
      else
        v.add(st, text, code);
    };
    const nvmlGpuFabricInfo_v3_t& info = f.info;
    if (info.state == kNvmlGpuFabricStateInProgress) {
      // Past the grace and the settle window still only a warning, as in DCGM: on NVL72 the
      // fabric's managers run on the switch trays, whose restart this node cannot see, and one
      // run cannot tell a slow registration from a stuck one. Across runs it can (review W10):
      // three graces of waiting is stuck.
      if (stuck)
        finding(Status::kFail,
                gs + " NVLink fabric registration still in progress " + minutes(*epoch.waiting_s) +
                    " after GPUs were first found unregistered: stuck; no CUDA job can run",
                kFaultFabricNotRegistered);
      else if (past_grace)
        finding(Status::kWarn,
                gs + " NVLink fabric registration still in progress " + after(epoch) +
                    ": CUDA jobs fail with 802 until it completes; is Fabric Manager stuck?",
                kFaultFabricPending);
      else
        finding(Status::kWarn,
                gs + " NVLink fabric registration in progress, " + after(epoch) +
                    ": CUDA jobs fail with 802 until it completes",
                kFaultFabricPending);
      return false;
    }
    if (info.state != kNvmlGpuFabricStateCompleted) {  // NOT_STARTED
      const std::string what = gs + " not registered in the NVLink fabric";
      if (past_grace)
        finding(Status::kFail, what + " " + after(epoch) + ": is Fabric Manager running?",
                kFaultFabricNotRegistered);
      else
        finding(Status::kWarn, what + ", " + after(epoch) + ": CUDA jobs fail with 802 until it is",
                kFaultFabricPending);
      return false;
    }
    if (info.status != NVML_SUCCESS) {
      finding(Status::kFail, gs + " NVLink fabric registration failed: " + s.err(info.status),
              kFaultFabricFailed);
      return false;
    }
    bool mask_fail = false, recovering = false;
    const std::vector<std::string> problems =
        f.has_mask ? mask_problems(info.healthMask, mask_fail, recovering)
                   : std::vector<std::string>{};
    // A recovery still in progress after the settle window fails, as DCGM fails it at once.
    mask_fail = mask_fail || (recovering && past_grace);
    const std::string detail =
        problems.empty() ? "" : " (" + short_list(problems, problems.size()) + ")";
    if (f.has_summary && info.healthSummary != kNvmlGpuFabricHealthSummaryNotSupported) {
      if (info.healthSummary == kNvmlGpuFabricHealthSummaryUnhealthy)
        finding(Status::kFail, gs + " NVLink fabric unhealthy" + detail, kFaultFabricUnhealthy);
      else if (info.healthSummary == kNvmlGpuFabricHealthSummaryLimitedCapacity)
        finding(Status::kWarn, gs + " NVLink fabric at limited capacity" + detail,
                kFaultFabricDegraded);
      else if (!problems.empty())
        finding(Status::kWarn, gs + " NVLink fabric healthy with" + detail, kFaultFabricDegraded);
    } else if (!problems.empty()) {
      finding(mask_fail ? Status::kFail : Status::kWarn, gs + " NVLink fabric" + detail,
              mask_fail ? kFaultFabricUnhealthy : kFaultFabricDegraded);
    }
    return true;
  }
};

class NvmlRecoveryCheck final : public NvmlCheck {
 public:
  std::string_view name() const override { return "nvml_recovery"; }

  CheckResult inspect(const CheckContext& ctx, const Session& s, CheckResult& r,
                      Verdict& v) override {
    std::optional<XidAction> worst;
    std::map<int, std::string> asks;  // GPU -> what the driver asks for
    for (int g = 0; g < s.count(); ++g) {
      if (!s.gpus[g]) continue;
      const FieldRead fr = read_field(s, g, kNvmlFieldGpuRecoveryAction);
      if (fr.rc == NVML_ERROR_NOT_SUPPORTED || fr.rc == NVML_ERROR_FUNCTION_NOT_FOUND) {
        v.not_supported(g, "GPU recovery action");
        continue;
      }
      if (fr.rc != NVML_SUCCESS) {
        v.query_failed(s, g, "nvmlDeviceGetFieldValues(GPU_RECOVERY_ACTION)", fr.rc);
        continue;
      }
      if (!fr.value) {
        v.add(Status::kError,
              "gpu" + std::to_string(g) + " GPU recovery action arrived as value type " +
                  std::to_string(fr.type) + ", which this build cannot read",
              kFaultQuery);
        continue;
      }
      const unsigned long long action = *fr.value;
      add_measurement(r, ctx, "recovery_action", action, "enum", g);
      if (action == kNvmlGpuRecoveryActionNone) continue;
      const std::string gs = "gpu" + std::to_string(g);
      // One reading of the driver's recovery action, shared with kmsg_xid's XID 154.
      const XidVerdict verdict = recovery_action_verdict(action);
      if (drains(verdict.action)) {
        // A figure of this GPU too, which the drainer's part history charges (review W7).
        asks[g] = gs + " driver asks for " + verdict.why;
        Measurement& m = add_measurement(r, ctx, "recovery_gpu_drain", 1, "bool", g);
        default_threshold(m, Op::kLe, 0, std::nullopt,
                          "nvml.h nvmlDeviceGpuRecoveryAction_t: the driver asks for a repair");
        if (!worst || verdict.action > *worst) worst = verdict.action;
      } else {
        v.add(Status::kWarn, gs + " driver reports " + verdict.why, kFaultRecovery);
      }
    }
    v.conclude(
        r,
        [&](const Measurement& m, Status) {
          const auto it = m.gpu ? asks.find(*m.gpu) : asks.end();
          return it == asks.end() ? Described{} : Described{it->second, kFaultRecovery};
        },
        std::to_string(s.count()) + " GPUs: no recovery action pending");
    if (r.status == Status::kFail && worst) r.remedy = remedy_of(*worst);
    return r;
  }
};

}  // namespace

namespace nvml {

Result<FabricTally> fabric_tally(const CheckContext& ctx) {
  auto s = open_session(ctx);
  if (!s) return s.error();
  FabricTally t;
  for (int g = 0; g < s->count(); ++g) {
    if (!s->gpus[g]) continue;
    const FabricRead f = read_fabric(*s, g);
    if (f.rc != NVML_SUCCESS || f.info.state == kNvmlGpuFabricStateNotSupported) continue;
    ++t.gpus;
    if (f.info.state == kNvmlGpuFabricStateCompleted && f.info.status == NVML_SUCCESS)
      ++t.registered;
  }
  return t;
}

}  // namespace nvml

std::unique_ptr<Check> make_nvml_fabric_check() { return std::make_unique<NvmlFabricCheck>(); }
std::unique_ptr<Check> make_nvml_recovery_check() { return std::make_unique<NvmlRecoveryCheck>(); }

}  // namespace vigil
