// gpu_pcie_bw: host<->device copy bandwidth per GPU from pinned host memory (cudaMemcpyAsync),
// each direction timed on its own: h2d_bandwidth and d2h_bandwidth in GB/s (bytes copied / s).
// The qualify suite adds bidir_bandwidth: both directions at once, the bytes of both copies over
// their common time (PCIe is full duplex; DCGM's pcie plugin and nvbandwidth's
// host_to_device_bidirectional_memcpy_ce load both directions the same way).
// The host buffers are allocated by a thread bound to the GPU's NUMA-local CPUs (sysfs
// local_cpulist) so a cross-socket buffer does not pass for a slow link.
#include <sched.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>

#include "check_factories.h"
#include "cuda/cuda_probe.h"

namespace vigil {
namespace {

using namespace cuda_probe;

// "00000000:18:00.0" (CUDA) -> "0000:18:00.0" (sysfs), lower case.
std::optional<std::string> sysfs_bdf(const char* cuda_bus_id) {
  unsigned domain = 0, bus = 0, dev = 0, fn = 0;
  if (std::sscanf(cuda_bus_id, "%x:%x:%x.%x", &domain, &bus, &dev, &fn) != 4) return std::nullopt;
  char out[32];
  std::snprintf(out, sizeof out, "%04x:%02x:%02x.%x", domain, bus, dev, fn);
  return std::string(out);
}

// Binds the calling thread to the CPUs local to a GPU for its lifetime, restoring the previous
// affinity afterwards. `problem` says why it could not (the probe then runs unbound).
class NumaBinding {
 public:
  NumaBinding(const CheckContext& ctx, int gpu) {
    char bus_id[64] = {};
    if (cudaDeviceGetPCIBusId(bus_id, sizeof bus_id, gpu) != cudaSuccess) {
      problem = "cudaDeviceGetPCIBusId failed";
      return;
    }
    std::optional<std::string> bdf = sysfs_bdf(bus_id);
    if (!bdf) {
      problem = std::string("unexpected PCI bus id ") + bus_id;
      return;
    }
    const auto path =
        std::filesystem::path(ctx.sysfs_root) / "sys/bus/pci/devices" / *bdf / "local_cpulist";
    std::ifstream in(path);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::optional<std::vector<int>> cpus = parse_cpulist(text);
    if (!cpus) {
      problem = "cannot read " + path.string();
      return;
    }
    if (sched_getaffinity(0, sizeof saved_, &saved_) != 0) {
      problem = std::string("sched_getaffinity: ") + std::strerror(errno);
      return;
    }
    cpu_set_t want;
    CPU_ZERO(&want);
    for (int c : *cpus) {
      if (c < CPU_SETSIZE && CPU_ISSET(c, &saved_)) CPU_SET(c, &want);
    }
    if (CPU_COUNT(&want) == 0) {
      problem = "none of the GPU's local CPUs is allowed to this job";
      return;
    }
    if (sched_setaffinity(0, sizeof want, &want) != 0) {
      problem = std::string("sched_setaffinity: ") + std::strerror(errno);
      return;
    }
    bound_ = true;
  }
  ~NumaBinding() {
    if (bound_) sched_setaffinity(0, sizeof saved_, &saved_);
  }
  NumaBinding(const NumaBinding&) = delete;
  NumaBinding& operator=(const NumaBinding&) = delete;

  std::string problem;

 private:
  cpu_set_t saved_{};
  bool bound_ = false;
};

// Both directions at once: H2D on `stream` and D2H on a second stream with buffers of its own,
// each iteration forked from `stream` and joined back into it, so the events time_batches
// records on `stream` span both copies. GB/s of both copies together.
Result<double> both_ways_gbps(const CopyPlan& plan, cudaStream_t stream, const void* host,
                              void* device) {
  VIGIL_TRY(StreamPtr other, make_stream());
  VIGIL_TRY(PinnedPtr host_in, pinned_alloc(plan.bytes));
  std::memset(host_in.get(), 0xA5, plan.bytes);  // on the bound node, as `host`
  VIGIL_TRY(DevicePtr device_out, device_alloc(plan.bytes));
  // Ordering only, never timed: the cheaper kind of event (cudaEventDisableTiming).
  VIGIL_TRY(EventPtr fork, make_event(cudaEventDisableTiming));
  VIGIL_TRY(EventPtr join, make_event(cudaEventDisableTiming));
  auto both = [&]() -> VoidResult {
    VIGIL_CUDA_CHECK(cudaEventRecord(fork.get(), stream));
    VIGIL_CUDA_CHECK(cudaStreamWaitEvent(other.get(), fork.get(), 0));
    VIGIL_CUDA_CHECK(cudaMemcpyAsync(device, host, plan.bytes, cudaMemcpyHostToDevice, stream));
    VIGIL_CUDA_CHECK(cudaMemcpyAsync(host_in.get(), device_out.get(), plan.bytes,
                                     cudaMemcpyDeviceToHost, other.get()));
    VIGIL_CUDA_CHECK(cudaEventRecord(join.get(), other.get()));
    VIGIL_CUDA_CHECK(cudaStreamWaitEvent(stream, join.get(), 0));
    return ok_result();
  };
  VIGIL_TRY(std::vector<double> per_iter, time_batches(stream, plan.timing, both));
  return gigabytes_per_second(2.0 * static_cast<double>(plan.bytes), median(std::move(per_iter)));
}

VoidResult measure_pcie(const CheckContext& ctx, int gpu, CheckResult& r,
                        std::vector<std::string>& notes) {
  const CopyPlan plan = pcie_plan(long_plans(ctx.suite));
  NumaBinding binding(ctx, gpu);
  if (!binding.problem.empty()) {
    notes.push_back("gpu " + std::to_string(gpu) + ": host buffer not NUMA-bound (" +
                    binding.problem + ")");
  }
  VIGIL_TRY(StreamPtr stream, make_stream());
  VIGIL_TRY(PinnedPtr host, pinned_alloc(plan.bytes));
  std::memset(host.get(), 0x5A, plan.bytes);  // fault the pages in on the bound node
  VIGIL_TRY(DevicePtr device, device_alloc(plan.bytes));

  auto copy = [&](void* dst, const void* src, cudaMemcpyKind kind) {
    return [&, dst, src, kind]() -> VoidResult {
      VIGIL_CUDA_CHECK(cudaMemcpyAsync(dst, src, plan.bytes, kind, stream.get()));
      return ok_result();
    };
  };
  VIGIL_TRY(std::vector<double> h2d,
            time_batches(stream.get(), plan.timing,
                         copy(device.get(), host.get(), cudaMemcpyHostToDevice)));
  VIGIL_TRY(std::vector<double> d2h,
            time_batches(stream.get(), plan.timing,
                         copy(host.get(), device.get(), cudaMemcpyDeviceToHost)));
  const auto bytes = static_cast<double>(plan.bytes);
  add_measurement(r, ctx, "h2d_bandwidth", gigabytes_per_second(bytes, median(std::move(h2d))),
                  "GB/s", gpu);
  add_measurement(r, ctx, "d2h_bandwidth", gigabytes_per_second(bytes, median(std::move(d2h))),
                  "GB/s", gpu);
  // An extra of the qualify suite: if it cannot run (the second pair of buffers not allocated),
  // the one-way figures stand and the note says why.
  if (ctx.suite == Suite::kQualify) {
    if (Result<double> both = both_ways_gbps(plan, stream.get(), host.get(), device.get()))
      add_measurement(r, ctx, "bidir_bandwidth", *both, "GB/s", gpu);
    else
      notes.push_back("gpu " + std::to_string(gpu) + ": both directions at once not measured (" +
                      both.error().to_string() + ")");
  }
  return ok_result();
}

class GpuPcieBwCheck final : public Check {
 public:
  std::string_view name() const override { return "gpu_pcie_bw"; }
  bool spaces_repeats() const override { return true; }
  Applies applies(const CheckContext& ctx) const override { return probe_applies(ctx); }
  CheckResult run(const CheckContext& ctx) override {
    return run_on_each_gpu(ctx, name(),
                           [&](int gpu, CheckResult& r, std::vector<std::string>& notes) {
                             return measure_pcie(ctx, gpu, r, notes);
                           });
  }
};

}  // namespace

std::unique_ptr<Check> make_gpu_pcie_bw_check() { return std::make_unique<GpuPcieBwCheck>(); }

}  // namespace vigil
