// nvml_fabric: is each GPU registered in its NVLink fabric, and healthy there?
// nvml_recovery: the recovery action the driver says a GPU needs.
//
// nvml_fabric (review F12). On NVSwitch systems (HGX/DGX H100, H200, B200; GB200 NVL72) a GPU
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
//     GpuFabricInfoV cases), but right after boot they are transient (NVIDIA's k8s device
//     plugin treats them as "transitional, not fatal"). Vigil warns until ctx.fabric_grace after
//     boot (the CLOCK_BOOTTIME in /proc/uptime) and fails after it: a Fabric Manager that has
//     not registered a GPU ten minutes after boot is down, and every CUDA job fails there.
//   - healthSummary (v3): UNHEALTHY fails, LIMITED_CAPACITY warns. Without a summary (v2), the
//     healthMask decides: route unhealthy or an incorrect configuration fails, degraded
//     bandwidth or a route / access-timeout recovery in progress warns.
//
// nvml_recovery (review F07, F12): NVML_FI_DEV_GET_GPU_RECOVERY_ACTION (nvml.h:2796, enum
// nvmlDeviceGpuRecoveryAction_t at :2194) is the driver's own statement of what a GPU needs
// before it may run work again (the action XID 154 announces in the kernel log). NONE passes;
// GPU_RESET, NODE_REBOOT and DRAIN_AND_RESET fail with the action in the reason and as the
// report's remedy; DRAIN_P2P and RECOVER_IMEX_DOMAIN warn, as DCGM 4.6 does
// (recovery_action_verdict, XID 154's reading too: vigil/checks/xid_catalogue.h); a value
// newer than this header fails as a reboot. The
// field is NOT_SUPPORTED on drivers before it existed: skipped.
#include <cmath>
#include <fstream>
#include <optional>
#include <thread>

#include "check_factories.h"
#include "nvml_common.h"

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

// The healthMask fields that are set, as words for the reason ("route unhealthy").
std::vector<std::string> mask_problems(unsigned mask, bool& fail) {
  std::vector<std::string> out;
  fail = false;
  const unsigned two = kNvmlGpuFabricHealthWidthTwoBit;
  if (health_field(mask, kNvmlGpuFabricHealthShiftRouteUnhealthy, two) ==
      kNvmlGpuFabricHealthTrue) {
    out.push_back("route unhealthy");
    fail = true;
  }
  const unsigned config = health_field(mask, kNvmlGpuFabricHealthShiftIncorrectConfiguration,
                                       kNvmlGpuFabricHealthWidthIncorrectConfiguration);
  if (config > kNvmlGpuFabricHealthConfigNone) {
    // 2..8: incorrect SysGUID, chassis serial number, no partition, insufficient NVLinks,
    // incompatible GPU firmware, invalid location, GPU state invalid (nvml.h:3866-3872). The
    // GPU's own ones fail (links missing, firmware, state); the domain's set-up ones (SysGUID,
    // chassis serial, partition, location) are the site's configuration and warn, as does a
    // code newer than this header. The driver's healthSummary, when it has one, decides first.
    struct Config {
      const char* what;
      bool gpu_fault;
    };
    static const Config kConfig[] = {{"SysGUID", false},
                                     {"chassis serial number", false},
                                     {"no partition", false},
                                     {"insufficient NVLinks", true},
                                     {"incompatible GPU firmware", true},
                                     {"invalid location", false},
                                     {"GPU state invalid", true}};
    const unsigned i = config - 2;
    const bool known = i < std::size(kConfig);
    out.push_back(std::string("incorrect configuration (") +
                  (known ? kConfig[i].what : "code " + std::to_string(config)) + ")");
    fail = fail || (known && kConfig[i].gpu_fault);
  }
  if (health_field(mask, kNvmlGpuFabricHealthShiftDegradedBw, two) == kNvmlGpuFabricHealthTrue)
    out.push_back("bandwidth degraded");
  if (health_field(mask, kNvmlGpuFabricHealthShiftRouteRecovery, two) == kNvmlGpuFabricHealthTrue)
    out.push_back("route recovery in progress");
  if (health_field(mask, kNvmlGpuFabricHealthShiftAccessTimeoutRecovery, two) ==
      kNvmlGpuFabricHealthTrue)
    out.push_back("access timeout recovery in progress");
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

class NvmlFabricCheck final : public NvmlCheck {
 public:
  std::string_view name() const override { return "nvml_fabric"; }

  CheckResult inspect(const CheckContext& ctx, const Session& s, CheckResult& r,
                      Verdict& v) override {
    int registered = 0;
    for (int g = 0; g < s.count(); ++g) {
      if (!s.gpus[g]) continue;
      const std::string gs = "gpu" + std::to_string(g);
      // Fabric state under MIG is not verified on hardware (NVML's NVLink state is wrong there,
      // review F02): a MIG-enabled GPU's findings only warn, and say so.
      unsigned mig_current = 0, mig_pending = 0;
      const bool mig = call(s.api().device_get_mig_mode, s.gpus[g], &mig_current, &mig_pending) ==
                           NVML_SUCCESS &&
                       mig_current == kNvmlDeviceMigEnable;
      auto finding = [&](Status st, const std::string& text, const char* code) {
        if (mig && st == Status::kFail)
          v.add(Status::kWarn, text + " (MIG enabled: not judged further)", code);
        else
          v.add(st, text, code);
      };
      FabricRead f = read_fabric(s, g);
      if (f.rc == NVML_ERROR_NOT_SUPPORTED || f.rc == NVML_ERROR_FUNCTION_NOT_FOUND ||
          (f.rc == NVML_SUCCESS && f.info.state == kNvmlGpuFabricStateNotSupported)) {
        v.not_supported(g, "NVLink fabric");
        continue;
      }
      if (f.rc != NVML_SUCCESS) {
        v.query_failed(s, g, "nvmlDeviceGetGpuFabricInfo", f.rc);
        continue;
      }
      const std::optional<double> up = uptime_s(ctx);
      const double grace = std::chrono::duration<double>(ctx.fabric_grace).count();
      if (f.info.state == kNvmlGpuFabricStateNotStarted && up && *up >= grace) {
        // Past the boot grace, one more look before a fatal verdict: a Fabric Manager restart
        // or a GPU reset may be re-registering the GPU right now.
        std::this_thread::sleep_for(ctx.fabric_recheck);
        if (FabricRead again = read_fabric(s, g); again.rc == NVML_SUCCESS) f = again;
      }
      const nvmlGpuFabricInfo_v3_t& info = f.info;
      add_measurement(r, ctx, "fabric_state", info.state, "enum", g);
      if (info.state == kNvmlGpuFabricStateInProgress) {
        // Registration under way (boot, a Fabric Manager restart, a GPU reset): transient by its
        // own name, so it only ever warns; a stuck one stays visible as this warning.
        finding(Status::kWarn,
                gs + " NVLink fabric registration in progress: CUDA jobs fail with 802 until it "
                     "completes",
                kFaultFabricPending);
        continue;
      }
      if (info.state != kNvmlGpuFabricStateCompleted) {  // NOT_STARTED
        const std::string what = gs + " not registered in the NVLink fabric";
        if (up && *up >= grace) {
          finding(Status::kFail,
                  what + " " + figure(*up / 60) + " min after boot: is Fabric Manager running?",
                  kFaultFabricNotRegistered);
        } else {
          finding(Status::kWarn,
                  what + (up ? ", " + figure(*up) + " s after boot" : ", uptime unknown") +
                      ": CUDA jobs fail with 802 until it is",
                  kFaultFabricPending);
        }
        continue;
      }
      if (info.status != NVML_SUCCESS) {
        finding(Status::kFail, gs + " NVLink fabric registration failed: " + s.err(info.status),
                kFaultFabricFailed);
        continue;
      }
      ++registered;
      bool mask_fail = false;
      const std::vector<std::string> problems =
          f.has_mask ? mask_problems(info.healthMask, mask_fail) : std::vector<std::string>{};
      const std::string detail =
          problems.empty() ? "" : " (" + short_list(problems, problems.size()) + ")";
      if (f.has_summary && info.healthSummary != kNvmlGpuFabricHealthSummaryNotSupported) {
        add_measurement(r, ctx, "fabric_health_summary", info.healthSummary, "enum", g);
        if (info.healthSummary == kNvmlGpuFabricHealthSummaryUnhealthy) {
          finding(Status::kFail, gs + " NVLink fabric unhealthy" + detail, kFaultFabricUnhealthy);
        } else if (info.healthSummary == kNvmlGpuFabricHealthSummaryLimitedCapacity) {
          finding(Status::kWarn, gs + " NVLink fabric at limited capacity" + detail,
                  kFaultFabricDegraded);
        } else if (!problems.empty()) {
          finding(Status::kWarn, gs + " NVLink fabric healthy with" + detail, kFaultFabricDegraded);
        }
      } else if (!problems.empty()) {
        finding(mask_fail ? Status::kFail : Status::kWarn, gs + " NVLink fabric" + detail,
                mask_fail ? kFaultFabricUnhealthy : kFaultFabricDegraded);
      }
    }
    v.conclude(
        r, [](const Measurement&, Status) { return Described{}; },
        std::to_string(registered) + " GPUs registered in the NVLink fabric");
    return r;
  }
};

class NvmlRecoveryCheck final : public NvmlCheck {
 public:
  std::string_view name() const override { return "nvml_recovery"; }

  CheckResult inspect(const CheckContext& ctx, const Session& s, CheckResult& r,
                      Verdict& v) override {
    std::optional<XidAction> worst;
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
        v.add(Status::kFail, gs + " driver asks for " + verdict.why, kFaultRecovery);
        if (!worst || verdict.action > *worst) worst = verdict.action;
      } else {
        v.add(Status::kWarn, gs + " driver reports " + verdict.why, kFaultRecovery);
      }
    }
    v.conclude(
        r, [](const Measurement&, Status) { return Described{}; },
        std::to_string(s.count()) + " GPUs: no recovery action pending");
    if (r.status == Status::kFail && worst) r.remedy = remedy_of(*worst);
    return r;
  }
};

}  // namespace

std::unique_ptr<Check> make_nvml_fabric_check() { return std::make_unique<NvmlFabricCheck>(); }
std::unique_ptr<Check> make_nvml_recovery_check() { return std::make_unique<NvmlRecoveryCheck>(); }

}  // namespace vigil
