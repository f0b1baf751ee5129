#pragma once
// How serious an XID is, for every check that sees XIDs (nvml_xid: NVML events while it
// listens; kmsg_xid: the kernel log since the last run). DCGM health watch, anchors.md section 5:
//   fatal: 48, 64, 74, 79, 95, 119, 120, 140 -> fail without a SKU;
//          154 (kmsg_xid) when the recovery action its message states is a reset or reboot;
//   warn:  31, 32, 43, 63, 67, 73, 94, 121, 137 -> warn;
//   other: reported only (13, 45, 68, 109...: usually the application's fault; gcm treats
//          them as non-critical).
#include <optional>
#include <set>
#include <string>
#include <string_view>

namespace vigil {

enum class XidClass { kFatal, kWarn, kOther };

inline XidClass classify_xid(unsigned long long xid) {
  static const std::set<unsigned long long> kFatal = {48, 64, 74, 79, 95, 119, 120, 140};
  // 154 alone (an NVML event carries no text) warns; kmsg_xid judges it by the action its
  // message states (classify_xid154).
  static const std::set<unsigned long long> kWarn = {31, 32, 43, 63, 67, 73, 94, 121, 137, 154};
  if (kFatal.count(xid)) return XidClass::kFatal;
  if (kWarn.count(xid)) return XidClass::kWarn;
  return XidClass::kOther;
}

inline constexpr const char* kFatalXidList = "48,64,74,79,95,119,120,140";

// Xid 154 (R550+ drivers) states the driver's own verdict: "GPU recovery action changed from 0x0
// (None) to 0x1 (GPU Reset Required)". The numbers are nvml.h's nvmlGpuRecoveryAction_t (NONE 0,
// GPU_RESET 1, NODE_REBOOT 2, DRAIN_P2P 3, DRAIN_AND_RESET 4), which NVML also answers for field
// NVML_FI_DEV_GET_GPU_RECOVERY_ACTION (230). nullopt when the message has no "to 0x<n>".
std::optional<unsigned> xid154_recovery_action(std::string_view detail);
// None: not a fault any more; Drain P2P: warn; reset, reboot, drain-and-reset: fatal.
XidClass classify_xid154(std::optional<unsigned> action);
// "gpu reset required", "node reboot required", ... for messages and Slurm reasons.
std::string recovery_action_text(unsigned action);

// Does a GPU reset clear this fatal XID? NVIDIA's XID catalogue (docs.nvidia.com/deploy/
// xid-errors, "immediate action") gives RESET_GPU for 48 (DBE), 74 (NVLink), 95 (uncontained
// ECC), 119/120 (GSP), 140 (unrecovered ECC), and Xid 154 says it in its text; 79 (fallen off
// the bus) needs a reboot, and 64 (row remapping failure) is an RMA criterion (NVIDIA "GPU Memory
// Error Management"), so neither is cleared by a reset. `item` is kmsg_xid's remembered form,
// "XID 48 0000:18:00" or "XID 154 0000:18:00 (gpu reset required)".
bool cleared_by_gpu_reset(std::string_view item);

}  // namespace vigil
