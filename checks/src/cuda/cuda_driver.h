#pragma once
// Can this node's NVIDIA driver run this build's CUDA runtime? (docs/driver-matrix.md)
// The runtime is linked statically (cudart_static), so its version is fixed at build time
// (CUDART_VERSION); the driver tells the newest CUDA version it supports (cudaDriverGetVersion,
// which asks libcuda's cuDriverGetVersion; 0 when no driver library loads). A driver of an older
// major CUDA version makes every runtime call fail with cudaErrorInsufficientDriver ("the
// installed NVIDIA CUDA driver is older than the CUDA runtime library"): CUDA 13.x needs an R580
// or newer driver (NVIDIA "CUDA Compatibility", minor version compatibility table: 13.x >= 580;
// measured: runs 1-5 of docs/gpu-validation.md, driver 580.159.04, CUDA 13.0 runtime). That is the
// node's setup, not a hardware fault: the probes are `skipped` with the reason and the fix, never
// `fail`.
#include <optional>
#include <string>
#include <string_view>

#include "vigil/checks/check.h"

namespace vigil::cuda_probe {

struct DriverCompat {
  int driver = 0;   // newest CUDA version the driver supports, 1000*major + 10*minor; 0: none
  int runtime = 0;  // this build's CUDA runtime version, same encoding
  // Since CUDA 11 a runtime runs on any driver of its major release (minor version
  // compatibility: NVIDIA's "CUDA Compatibility" guide, "Minor Version Compatibility", table
  // "CUDA Toolkit 11.x, 12.x, and 13.x Driver Version Ranges": 13.x >= 580, 12.x >= 525), so
  // only an older major version is too old.
  bool too_old() const { return driver > 0 && driver / 1000 < runtime / 1000; }
};

// The two versions (without CUDA in the build: both 0).
DriverCompat cuda_driver_compat();

// "12.2" for 12020.
std::string cuda_version_text(int v);

// What to tell the admin when the driver is too old: the versions and the three ways out.
std::string driver_too_old_message(const DriverCompat& c);

// `skipped` VIGIL-CUDA-DRIVER-TOO-OLD for `check` when the driver cannot run this build; nullopt
// when it can, or when there is no driver at all (that stays the caller's `error`).
std::optional<CheckResult> skip_if_driver_too_old(std::string_view check);

}  // namespace vigil::cuda_probe
