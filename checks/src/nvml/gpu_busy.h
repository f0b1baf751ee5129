#pragma once
// Is anything besides this check using the GPUs? Asked through NVML right before a performance
// probe (gpu_gemm, gpu_hbm, gpu_pcie_bw, gpu_memtest) or an NCCL all_reduce touches a GPU. A GPU
// shared with someone else's work measures slow without being faulty (Soperator's own demo
// slows a node with a second all_reduce under `srun -Z`), so such a run is `error`
// VIGIL-GPU-BUSY, never `fail`, and it never drains.
//
// The decision is a pure function of what NVML reported (judge_gpu_activity); reading NVML and
// naming processes is separate (read_gpu_activity), and scan_gpus_for_other_work does both for a
// check. docs/cuda-probes.md, "Busy GPUs".
#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "nvml_common.h"
#include "vigil/checks/check.h"

namespace vigil::nvml {

inline constexpr const char* kFaultGpuBusy = "VIGIL-GPU-BUSY";

// One compute process NVML lists on a GPU.
struct GpuProcess {
  unsigned pid = 0;
  std::optional<unsigned long long> used_memory_bytes;  // nullopt: NVML_VALUE_NOT_AVAILABLE
  std::string name;                                     // "" when it could not be read
};

// What NVML said about one GPU before the check used it.
struct GpuActivity {
  int gpu = 0;                                       // NVML index, "gpuN" in messages
  std::optional<std::vector<GpuProcess>> processes;  // nullopt: unreadable, see processes_error
  std::string processes_error;
  std::vector<unsigned> utilization_percent;  // GPU utilization samples, oldest first
  std::string utilization_error;              // why utilization_percent is empty
};

// "pid 1234 python 40 GiB"
std::string process_text(const GpuProcess& p);

struct BusyRules {
  // Utilization above this in every sample, with no compute process visible, is someone
  // else's work (a process in another container / PID namespace is invisible to us).
  unsigned max_idle_utilization_percent = 5;
  // Never foreign: this check's process and its parent (the check has no CUDA context yet,
  // so every process listed is foreign; these are excluded for safety).
  std::vector<unsigned> own_pids;
};

struct GpuBusy {
  int gpu = 0;
  std::string reason;  // "gpu2 pid 1234 python 40 GiB"
};

// Pure: the GPUs that are busy and why, in GPU order. A GPU is busy when NVML lists a compute
// process whose pid is not in own_pids, or when no process is listed at all and every
// utilization sample is above max_idle_utilization_percent.
std::vector<GpuBusy> judge_gpu_activity(const std::vector<GpuActivity>& gpus,
                                        const BusyRules& rules);

// Pure: what could not be read, grouped ("cannot tell whether gpu0-7 are busy: ..."); empty
// when everything was read.
std::vector<std::string> activity_unknowns(const std::vector<GpuActivity>& gpus);
// "work on gpu6 unknown (no NVML handle: ...)" for each GPU that gave no handle: nothing about
// its processes or load can be said.
std::vector<std::string> no_handle_unknowns(const Session& s);

// Re-sampling of utilization, only for GPUs that utilization alone would call busy: a probe
// that just ended leaves up to one NVML sample period (<= 1 s) of utilization behind it.
struct BusySampling {
  int max_samples = 6;  // 2 s: longer than one NVML sample period after a probe ends
  std::chrono::milliseconds interval{400};
};

// Reads every GPU's compute processes (names from <proc_root>/<pid>/comm, else
// nvmlSystemGetProcessName) and utilization. GPUs whose handle was lost are left out: the
// probe itself reports them.
std::vector<GpuActivity> read_gpu_activity(const Session& s, const std::string& proc_root,
                                           const BusyRules& rules, const BusySampling& sampling);

struct BusyScan {
  std::vector<GpuBusy> busy;  // non-empty: do not measure
  std::string unknown;        // "" or "cannot tell whether ... busy: ..." for the result message
  // GPUs in MIG mode (current or pending). CUDA sees one MIG slice per process, so a probe on
  // such a node would measure a fraction of a GPU and call it slow: skip (docs/cuda-probes.md).
  std::vector<int> mig_enabled;
  // Each NVML index's PCI bus id ("00000000:18:00.0"; "" without a handle): the CUDA probes name
  // GPUs by these indices, not by CUDA ordinals (cuda_labels.h).
  std::vector<std::string> bus_ids;
};

// Pure: the `skipped` result when any GPU is in MIG mode ("MIG enabled on gpu0, gpu3: ..."),
// else nullopt.
std::optional<CheckResult> mig_skip_result(std::string_view check,
                                           const std::vector<int>& mig_enabled);

// Opens NVML (ctx.nvml_library) and judges every GPU it sees, excluding this process and its
// parent. NVML unavailable: nothing busy, `unknown` says why (the NVML checks report NVML
// itself). Call it in the check's own process before any CUDA call.
// processes_only: busy means a foreign compute process listed; utilization alone is not (the
// GPU reset, gpu_reset.h: a GPU hung after an XID can read busy with no process on it).
BusyScan scan_gpus_for_other_work(const CheckContext& ctx, const BusySampling& sampling = {},
                                  bool processes_only = false);

// A process with a GPU's device node open ("/dev/nvidia3"): a client NVML's process list does
// not show, which keeps `nvidia-smi --gpu-reset` from running ("In use by another client": DCGM's
// nv-hostengine, dcgm-exporter, nvidia-persistenced, an X server, another nvidia-smi;
// nvidia-smi(1) --gpu-reset, NVIDIA/NVSentinel #1690 and #1691, IBM/CAST #551).
struct DeviceHolder {
  unsigned pid = 0;
  std::string name;                  // <proc_root>/<pid>/comm, "" when unreadable
  std::vector<std::string> devices;  // the device nodes it holds, as the fds' links read
};

// Every process but this one with an open fd on <dev_dir>/nvidia<N> (the per-GPU nodes; the
// control node nvidiactl and nvidia-uvm do not hold a GPU), found through the
// <proc_root>/<pid>/fd links, in pid order. A process whose fds cannot be read (another user's,
// without root) is not listed: nvidia-smi's own refusal stays the last word. Processes in another
// PID namespace (a pod's, seen from a Slinky slurmd pod) are not visible either.
std::vector<DeviceHolder> gpu_device_holders(const std::string& proc_root,
                                             const std::string& dev_dir);

// "nv-hostengine (pid 812) on /dev/nvidia0, /dev/nvidia1 +6 more"
std::string holder_text(const DeviceHolder& h);

// error, "GPU busy: gpu2 pid 1234 python 40 GiB; not measured ...", VIGIL-GPU-BUSY.
CheckResult gpu_busy_result(std::string_view check, const std::vector<GpuBusy>& busy);

}  // namespace vigil::nvml
