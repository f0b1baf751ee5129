#pragma once
// The GPU reset rung of the repair ladder (docs/repair.md "GPU reset"): `vigil-check repair
// reset-gpu`, run by vigil-submit's `srun -Z` on a node Vigil drained for a fault whose
// documented remedy is a GPU reset, when the drainer asked for one (reason `vigil: reset-gpu
// ...`). Its result is a report with the one entry `gpu_reset` (kGpuResetResult), which the
// drainer reads as the rung's outcome; it is never a check of the node's health.
//
// What it does, and where each step comes from:
// - Resets every GPU of the node in one `nvidia-smi --gpu-reset` (no -i). The node is drained
//   and idle, so no one loses work; nvidia-smi(1) requires GPUs with NVLink connections to be
//   reset in the same command where individual reset is not possible (pre-Ampere, or Ampere
//   NVSwitch boards without Fabric Manager); and a shifted NVML index can never pick the wrong
//   GPU. NVML has no public reset call: nvidia-smi is the vendor's tool for it.
// - Never when NVML lists a compute process on any GPU (error VIGIL-GPU-BUSY: someone's work,
//   or a leftover the reboot rung clears) or a GPU is in MIG mode (error: a reset destroys the
//   site's GPU instances; the reboot rung and the site's MIG setup at boot handle it).
// - Persistence mode counts as a client of the GPU and makes the reset fail with "In use by
//   another client"; disabling it first and restoring it after is what made the same reset
//   succeed (NVIDIA/NVSentinel #1690, PR #1692; NVIDIA/gpu-operator #118 for
//   nvidia-persistenced). Done per GPU UUID with `nvidia-smi -pm 0|1 -i UUID`.
// - Clients NVML's process list does not show hold the GPUs open too, and nvidia-smi refuses the
//   reset while they do: DCGM's nv-hostengine and dcgm-exporter, X, another nvidia-smi
//   (nvidia-smi(1) --gpu-reset; NVIDIA/NVSentinel #1691; IBM/CAST #551 stops nv-hostengine and
//   nvidia-persistenced before a reset). The systemd units the site names (--stop-unit, e.g.
//   nvidia-dcgm) are stopped, if active, before persistence mode goes off, and started again on
//   every path. Then /proc is searched for any process still holding a /dev/nvidiaN open: one
//   left is an error VIGIL-GPU-HELD that names it ("nv-hostengine (pid 812) on /dev/nvidia0"),
//   and nothing is reset. Fabric Manager is not such a unit: on NVSwitch systems it is the one
//   that re-trains a reset GPU's NVLinks.
// - Before the reset, nvidia-bug-report.sh keeps the driver's state (as vigil-reboot does before
//   a reboot); its path, or why there is none, is in the result's message.
// - After a good reset, the XIDs kmsg_xid remembers for this boot whose action a reset clears
//   are forgotten (the boot id stays; docs/hooks.md "After a GPU reset").
// - This process holds no NVML session while nvidia-smi resets (a monitoring client would
//   block it, nvidia-smi(1)); NVML is opened again afterwards to check that every GPU came back
//   with its UUID.
// Status: pass (every GPU reset and back), warn (reset, but persistence mode or a stopped unit
// not restored),
// fail (nvidia-smi's exit code names the hardware: 14 infoROM corrupted, 15 GPU fallen off the
// bus, nvidia-smi(1) "RETURN VALUE"; or a GPU did not come back), error (not attempted or
// refused for a reason of the setup: busy, MIG, held open, a unit that would not stop, no
// nvidia-smi, no permission, timed out...).
// Compiled, not run on a GPU: tested with the fake NVML and a stand-in nvidia-smi.
#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "vigil/base/result.h"
#include "vigil/checks/check.h"

namespace vigil::nvml {

struct ResetOptions {
  std::string nvidia_smi = "nvidia-smi";    // --nvidia-smi / VIGIL_NVIDIA_SMI
  std::chrono::seconds query_timeout{30};   // -q and -pm calls
  std::chrono::seconds reset_timeout{300};  // the reset itself (seconds on a healthy GPU)
  // Where kmsg_xid keeps its cursor (the hooks' and the runs' state dirs): after a good reset
  // the remembered XIDs a reset clears are forgotten there, as `vigil-check xid-clear` does.
  std::vector<std::string> xid_state_dirs;
  std::string node;  // the Slurm node name the cursors are kept under
  // The driver's evidence before the reset (docs/repair.md "Evidence"), as vigil-reboot keeps it
  // before a reboot: `nvidia-bug-report.sh --output-file <dir>/<node>-<time>.nvidia-bug-report.log`
  // under a timeout, root's only. Never keeps the GPUs from their reset. Empty dir: none.
  std::string evidence_dir;
  std::string bug_report = "nvidia-bug-report.sh";  // --bug-report / VIGIL_BUG_REPORT
  std::chrono::seconds bug_report_timeout{300};
  // systemd units holding the GPUs that the reset stops and starts again (--stop-unit /
  // VIGIL_RESET_STOP_UNITS): those active before are started again, in reverse order, whatever
  // the outcome. Empty: none stopped.
  std::vector<std::string> stop_units;
  std::string systemctl = "systemctl";
  std::chrono::seconds unit_timeout{90};  // each stop / start / is-active call
  std::string dev_dir = "/dev";           // where the per-GPU device nodes nvidia<N> are
};

// One row of `nvidia-smi --query-gpu=uuid,persistence_mode --format=csv,noheader`.
struct PersistenceRow {
  std::string uuid;
  bool enabled = false;
};
// Pure: the rows, or an error naming the line that is not "<uuid>, Enabled|Disabled".
Result<std::vector<PersistenceRow>> parse_persistence(std::string_view csv);

inline constexpr const char* kFaultGpuHeld = "VIGIL-GPU-HELD";

// Pure: the status a failed `nvidia-smi --gpu-reset` exit code means (nvidia-smi(1) "RETURN
// VALUE": 14 infoROM corrupted and 15 GPU fallen off the bus are the GPU's; the rest, e.g. 4
// no permission, 255 "In use by another client", are the setup's).
Status reset_failure_status(int exit_code);

// Resets every GPU of the node (ctx.nvml_library for NVML) and returns the `gpu_reset` result.
CheckResult reset_gpus(const CheckContext& ctx, const ResetOptions& o);

}  // namespace vigil::nvml
