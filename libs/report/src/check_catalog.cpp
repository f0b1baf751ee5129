// The check catalog (check_catalog.h): one line per check, in run order.
//
// Fatal (one failing report drains; the drainer's policy.fatal_checks and the hooks' list):
// hard, self-confirming hardware findings, which DCGM's health watch treats as FAIL too. Each
// one's source is in docs/checks-nvml.md, docs/checks-ib.md, docs/cuda-probes.md and
// docs/hooks.md ("What each mode checks").
// Noisy (drain after 3 failing reports): performance figures that need repeated evidence
// before a drain (docs/drainer.md, "Built-in defaults").
// The trailing `true`: charges_part, the GPU's own faults (XIDs, ECC, row remaps, retired pages,
// the driver's recovery action, memtest, sanity), which count in the part's history.
// Metrics: names as the checks emit them (checks/src: add_measurement calls,
// thresholds/*.yaml); docs/detection.md has the margins per kind.
#include "vigil/report/check_catalog.h"

#include <array>

namespace vigil {
namespace {

using std::chrono::seconds;
using enum CheckSuite;
using enum CheckSeverity;

constexpr unsigned kNode = kQuick | kFull;                    // vigil-check run, both suites
constexpr unsigned kNodeAndHooks = kNode | kPassive;          // ... and the Slurm hooks
constexpr unsigned kHooks = static_cast<unsigned>(kPassive);  // the Slurm hooks only
constexpr unsigned kFullOnly = static_cast<unsigned>(kFull);  // vigil-check run --suite full
constexpr unsigned kQualifyOnly = static_cast<unsigned>(CheckSuite::kQualify);  // --suite qualify
constexpr unsigned kFabricJob = static_cast<unsigned>(kFabric);  // vigil-check fabric only
constexpr unsigned kDomainJob = static_cast<unsigned>(kDomain);  // ... --network nvlink-domain

constexpr std::array<PerfMetric, 1> kGemmMetrics{{
    {"*", "TFLOP/s", "gemm"},  // gemm_bf16_tflops and later precisions
}};
constexpr std::array<PerfMetric, 1> kHbmMetrics{{{"hbm_bandwidth", "GB/s", "hbm"}}};
constexpr std::array<PerfMetric, 3> kPcieMetrics{{
    {"h2d_bandwidth", "GB/s", "pcie"},
    {"d2h_bandwidth", "GB/s", "pcie"},
    {"bidir_bandwidth", "GB/s", "pcie"},  // both directions at once, the qualify suite only
}};
constexpr std::array<PerfMetric, 1> kBusbwMetrics{{{"busbw", "GB/s", "allreduce"}}};
// A soak's throughput and SM clock: GEMM throughput follows the SM clock, so both take the gemm
// margins (docs/detection.md).
constexpr std::array<PerfMetric, 2> kSoakMetrics{{
    {"soak_tflops", "TFLOP/s", "gemm"},
    {"soak_sm_clock", "MHz", "gemm"},
}};

constexpr CheckSpec kCatalog[] = {
    // Hooks only, first: needs neither NVML nor the SKU, and a GPU with GSP trouble (Xid
    // 119/120) can block every NVML call until the time box ends. Fatal: an XID
    // whose catalogue action is a reset or RMA, remembered for the boot (docs/hooks.md).
    {"kmsg_xid", "xid", kHooks, seconds(20), kFatal, {}, true},
    // --- NVML (docs/checks-nvml.md) ---
    // Fatal: fewer GPUs than the SKU has (a missing GPU).
    {"gpu_count", "gpu-count", kNodeAndHooks, seconds(60), kFatal, {}},
    // Fatal: a volatile uncorrectable (DBE) ECC error (DCGM health).
    {"nvml_ecc", "ecc", kNodeAndHooks, seconds(60), kFatal, {}, true},
    // Fatal: a row remap failed (out of spare rows) or pending (needs a GPU reset; aznhc).
    {"nvml_row_remap", "remap", kNodeAndHooks, seconds(60), kFatal, {}, true},
    // Fatal: retired pages over the bound or pending (pre-A100 GPUs).
    {"nvml_retired_pages", "pages", kNodeAndHooks, seconds(60), kFatal, {}, true},
    // Noisy: hardware slowdown, thermal and power-brake clock events.
    {"nvml_clock_events", "clocks", kNodeAndHooks, seconds(60), kNoisy, {}},
    // PCIe link width and generation, replay counter deltas.
    {"nvml_pcie", "pcie", kNode, seconds(60), kDefault, {}},
    // NVLink links down or error counters growing (drain_after applies).
    {"nvml_nvlink", "nvlink", kNodeAndHooks, seconds(60), kDefault, {}},
    // Fatal: NVLink fabric registration failed, unhealthy, not started 10 min after boot, a GPU
    // reset or Fabric Manager's start (Fabric Manager down; a restart loop gives no new grace),
    // or still in progress after 30 min of runs finding it so (stuck).
    {"nvml_fabric", "nvl-fabric", kNodeAndHooks, seconds(60), kFatal, {}},
    // The IMEX daemon of a multi-node NVLink SKU (NVL72) down past the boot grace; a setup
    // problem (not installed, not configured) is an error. drain_after applies: it may restart.
    {"nvlink_imex", "imex", kNode, seconds(15), kDefault, {}},
    // Fatal: the driver states a recovery action (reset, reboot, drain and reset).
    {"nvml_recovery", "recovery", kNodeAndHooks, seconds(60), kFatal, {}, true},
    // Noisy: GPU temperature against the SKU's bounds.
    {"nvml_temperature", "temp", kNode, seconds(60), kNoisy, {}},
    // Fatal: an XID event whose catalogue action is a reset or RMA, seen while listening.
    {"nvml_xid", "xid", kNode, seconds(60), kFatal, {}, true},
    // Hooks only, after a job (epilog): fatal, a GPU left busy by a finished job.
    {"gpu_leftovers", "leftover", kHooks, seconds(20), kFatal, {}},
    // --- InfiniBand (docs/checks-ib.md) ---
    // Fatal: a compute-fabric port down or below its rate.
    {"ib_port", "ib", kNodeAndHooks, seconds(30), kFatal, {}},
    // InfiniBand error counter deltas.
    {"ib_counters", "ib-err", kNode, seconds(30), kDefault, {}},
    // A kernel path for GPUDirect RDMA where the SKU requires it; warns at most.
    {"ib_gpudirect", "gdr", kNode, seconds(10), kDefault, {}},
    // Hooks only: the length of each fabric port's outages that ended since the last run, from
    // the kernel's link lines (kernel log after a saved cursor); 30 s fails, NCCL's IB timeout
    // with its retries. drain_after applies: a switch reboot takes every port down at once.
    {"ib_link_downtime", "ib-down", kHooks, seconds(20), kDefault, {}},
    // --- Host (docs/checks-host.md) ---
    // Fatal: an uncorrectable fatal PCIe error on a GPU or NVSwitch this boot: the link was
    // unreliable and the kernel reset it, which the NVIDIA driver has no callbacks to recover
    // from (pcieaer-howto.rst; nv-pci.c; "no AER-aware driver", then Xid 79). NICs, NVMe
    // drives and the ports above only warn.
    {"pcie_aer", "aer", kNodeAndHooks, seconds(10), kFatal, {}},
    // Fatal: a GPU-stack service the node needs is missing, stopped or failed (Fabric Manager on
    // an NVSwitch board, a resident IMEX daemon, the SKU's required units): a unit's failed
    // state is latched by systemd; one restarting or flapping only warns (NVSentinel#883,
    // ADR-050).
    {"host_services", "services", kNodeAndHooks, seconds(15), kFatal, {}},
    // The SKU file's filesystems missing, of another type, read-only, broken (ENOTCONN, ESTALE)
    // or short of free space; a mount that hangs is an error. drain_after applies: an automount
    // or an admin's remount may be caught half-way.
    {"host_mounts", "mounts", kNodeAndHooks, seconds(15), kDefault, {}},
    // Memory neither free nor reclaimable on a node that runs no job (/dev/shm files, a stray
    // process, a kernel leak); a busy node is skipped. drain_after applies: memory a job freed
    // late is gone by the next report.
    {"host_idle_memory", "idle-mem", kNodeAndHooks, seconds(10), kDefault, {}},
    // An NVMe controller the kernel declared dead, or a drive's SMART critical warning (spare
    // exhausted, reliability degraded, media read-only); nvme-cli missing or not root: skipped
    // or error. drain_after applies: the warning is a state, the next report confirms it.
    {"host_nvme", "nvme", kNodeAndHooks, seconds(15), kDefault, {}},
    // --- CUDA probes (docs/cuda-probes.md) ---
    // Noisy: GEMM throughput per GPU.
    {"gpu_gemm", "gemm", kNode, seconds(120), kNoisy, kGemmMetrics},
    // Noisy: HBM bandwidth per GPU.
    {"gpu_hbm", "hbm", kNode, seconds(60), kNoisy, kHbmMetrics},
    // Noisy: host-to-device and device-to-host copy bandwidth per GPU.
    {"gpu_pcie_bw", "h2d", kNode, seconds(120), kNoisy, kPcieMetrics},
    // Fatal: a memory pattern mismatch (stuck or flipping bits, address faults).
    {"gpu_memtest", "memtest", kNode, seconds(180), kFatal, {}, true},
    // Fatal, full suite only: silent data corruption: a tensor-core GEMM in BF16, FP16 and FP8
    // that gives a wrong element against an exact integer result, changes between repeats, or
    // differs from the other GPUs' (docs/cuda-probes.md). A wrong answer is the GPU's own fault.
    {"gpu_sdc", "sdc", kFullOnly, seconds(180), kFatal, {}, true},
    // Qualify suite only: every GPU under GEMM load at once for --soak-s (default 600 s); its
    // throughput and median SM clock are judged against the node's other GPUs by detect (a GPU
    // that clocks low among its peers). Noisy like gpu_gemm. 1320 s: the longest soak (1200 s)
    // plus setup.
    {"gpu_soak", "soak", kQualifyOnly, seconds(1320), kNoisy, kSoakMetrics},
    // Hooks only, with --cuda-sanity: fatal, a CUDA context that cannot be created or a tiny
    // kernel's wrong output.
    {"gpu_sanity", "sanity", kHooks, seconds(20), kFatal, {}, true},
    // --- all_reduce through vigil-allreduce ---
    // Noisy: NCCL all_reduce busbw over NVLink/NVSwitch. 330 s: NCCL init on 8 GPUs plus the
    // full sweep fits well inside it.
    {"nccl_allreduce_nvlink", "nccl-nvl", kNode, seconds(330), kNoisy, kBusbwMetrics},
    // Noisy: NCCL all_reduce busbw over the node's own IB ports (loopback).
    {"nccl_allreduce_ib", "nccl-ib", kNode, seconds(330), kNoisy, kBusbwMetrics},
    // all_reduce on the host (CPU nodes, test clusters): judged by detect, default drain_after.
    {"host_allreduce", "allreduce", kNode, seconds(90), kDefault, kBusbwMetrics},
    // Fabric jobs only. Noisy, and for another reason too: one slow pair cannot say which of
    // its two nodes is at fault; only a node that keeps failing with new partners is. 660 s:
    // NCCL init across 16 ranks on two nodes plus the sweep.
    {"fabric_allreduce_ib", "fabric-ib", kFabricJob, seconds(660), kNoisy, kBusbwMetrics},
    // NVLink domain jobs (GB200/GB300 NVL72 trays over multi-node NVLink): noisy for the same
    // reason; a k-node job's localized blame drains after one job (VIGIL-DOMAIN-LOCALIZED).
    {"domain_allreduce_nvlink", "nvl-domain", kDomainJob, seconds(660), kNoisy, kBusbwMetrics},
};

}  // namespace

std::span<const CheckSpec> check_catalog() { return kCatalog; }

const CheckSpec* find_check_spec(std::string_view name) {
  for (const CheckSpec& s : kCatalog)
    if (s.name == name) return &s;
  return nullptr;
}

std::vector<std::string> catalog_check_names(CheckSeverity severity) {
  std::vector<std::string> out;
  for (const CheckSpec& s : kCatalog)
    if (s.severity == severity) out.emplace_back(s.name);
  return out;
}

std::string_view suite_to_run(std::span<const std::string> checks) {
  bool full = false;
  for (const std::string& c : checks) {
    for (const CheckSpec& s : kCatalog) {
      if (s.name != c && s.short_name != c) continue;
      if (s.qualify_only()) return "qualify";
      full = full || s.full_only();
    }
  }
  return full ? "full" : "";
}

}  // namespace vigil
