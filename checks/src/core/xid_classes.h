#pragma once
// How serious an XID is, for every check that sees XIDs (nvml_xid: NVML events while it
// listens; kmsg_xid: the kernel log since the last run). DCGM health watch, anchors.md section 5:
//   fatal: 48, 64, 74, 79, 95, 119, 120, 140 -> fail without a SKU;
//   warn:  31, 32, 43, 63, 67, 73, 94, 121, 137 -> warn;
//   other: reported only (13, 45, 68, 109...: usually the application's fault; gcm treats
//          them as non-critical).
#include <set>

namespace vigil {

enum class XidClass { kFatal, kWarn, kOther };

inline XidClass classify_xid(unsigned long long xid) {
  static const std::set<unsigned long long> kFatal = {48, 64, 74, 79, 95, 119, 120, 140};
  static const std::set<unsigned long long> kWarn = {31, 32, 43, 63, 67, 73, 94, 121, 137};
  if (kFatal.count(xid)) return XidClass::kFatal;
  if (kWarn.count(xid)) return XidClass::kWarn;
  return XidClass::kOther;
}

inline constexpr const char* kFatalXidList = "48,64,74,79,95,119,120,140";

}  // namespace vigil
