// gpu_memtest: a short write/verify pattern test over a bounded part of each GPU's free memory
// (walking ones/zeros, address-as-data and its complement, seeded random). memtest_errors per
// GPU = mismatching 64-bit words over all passes; any mismatch fails, with or without a SKU.
#include <cstdint>
#include <cstdio>
#include <string>

#include "check_factories.h"
#include "cuda/cuda_probe.h"
#include "cuda/probe_result.h"

namespace vigil {
namespace {

using namespace cuda_probe;

struct Mismatches {
  unsigned long long count;
  unsigned long long first_word;  // lowest mismatching word index (ULLONG_MAX when none)
  unsigned long long bad_bits;    // OR of (read ^ expected) over all mismatches
};

__global__ void write_pattern(std::uint64_t* p, std::size_t n, MemtestPass pass) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
       i += std::size_t{gridDim.x} * blockDim.x) {
    p[i] = pattern_word(pass, i);
  }
}

// A separate kernel from the write, so every word makes the round trip through DRAM.
__global__ void verify_pattern(const std::uint64_t* p, std::size_t n, MemtestPass pass,
                               Mismatches* out) {
  unsigned long long count = 0, first = ~0ull, bits = 0;
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
       i += std::size_t{gridDim.x} * blockDim.x) {
    const std::uint64_t want = pattern_word(pass, i);
    const std::uint64_t got = p[i];
    if (got != want) {
      ++count;
      if (i < first) first = i;
      bits |= got ^ want;
    }
  }
  if (count) {
    atomicAdd(&out->count, count);
    atomicMin(&out->first_word, first);
    atomicOr(&out->bad_bits, bits);
  }
}

// Allocates the planned size, backing off by 10% a few times when the driver's free figure was
// optimistic (fragmentation); never takes less than the plan's minimum.
Result<std::pair<DevicePtr, std::size_t>> allocate_test_region(std::size_t bytes) {
  for (int attempt = 0; attempt < 5 && bytes >= kMemtestMinBytes; ++attempt) {
    void* p = nullptr;
    const cudaError_t e = cudaMalloc(&p, bytes);
    if (e == cudaSuccess) return std::make_pair(DevicePtr(p), bytes);
    if (e != cudaErrorMemoryAllocation) return cuda_error(e, "cudaMalloc(test region)");
    cudaGetLastError();  // clear the allocation error before retrying smaller
    bytes = bytes / 10 * 9;
    bytes -= bytes % kMemtestAlign;
  }
  return Error{
      "could not allocate a test region of at least 64 MiB; is another process using "
      "the GPU (nvidia-smi)?",
      "cudaMalloc(test region)"};
}

VoidResult measure_memtest(const CheckContext& ctx, int gpu, CheckResult& r) {
  const MemtestPlan plan = memtest_plan(long_plans(ctx.suite));
  std::size_t free_bytes = 0, total_bytes = 0;
  VIGIL_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  const std::size_t want = memtest_bytes(free_bytes, plan);
  if (want == 0) {
    return Error{"only " + std::to_string(free_bytes / kMiB) +
                     " MiB free; is another process using the GPU (nvidia-smi)?",
                 "cudaMemGetInfo"};
  }
  VIGIL_TRY(auto region, allocate_test_region(want));
  auto* words = static_cast<std::uint64_t*>(region.first.get());
  const std::size_t n = region.second / sizeof(std::uint64_t);

  int sms = 0;
  VIGIL_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, gpu));
  const int blocks = sms * 16, threads = 256;
  VIGIL_TRY(StreamPtr stream, make_stream());
  VIGIL_TRY(DevicePtr stats_mem, device_alloc(sizeof(Mismatches)));
  auto* stats = static_cast<Mismatches*>(stats_mem.get());

  unsigned long long total = 0;
  std::string detail;
  for (const MemtestPass& pass : plan.passes) {
    const Mismatches zero{0, ~0ull, 0};
    VIGIL_CUDA_CHECK(
        cudaMemcpyAsync(stats, &zero, sizeof zero, cudaMemcpyHostToDevice, stream.get()));
    write_pattern<<<blocks, threads, 0, stream.get()>>>(words, n, pass);
    VIGIL_CUDA_CHECK(cudaGetLastError());
    verify_pattern<<<blocks, threads, 0, stream.get()>>>(words, n, pass, stats);
    VIGIL_CUDA_CHECK(cudaGetLastError());
    Mismatches found{};
    VIGIL_CUDA_CHECK(
        cudaMemcpyAsync(&found, stats, sizeof found, cudaMemcpyDeviceToHost, stream.get()));
    VIGIL_CUDA_CHECK(cudaStreamSynchronize(stream.get()));
    if (found.count == 0) continue;
    total += found.count;
    if (detail.empty()) {
      char buf[160];
      std::snprintf(buf, sizeof buf, "first in pass %s at byte offset 0x%llx, bad bits 0x%016llx",
                    pattern_name(pass.pattern), found.first_word * 8ull, found.bad_bits);
      detail = buf;
    }
  }

  add_mismatches(r, ctx, gpu, "memtest_errors", total,
                 std::to_string(region.second / kMiB) + " MiB", detail);
  // What was tested, as figures without a bound: the share of the GPU's memory and its size
  // (units of the report schema, docs/node-report.md).
  add_measurement(r, ctx, "memtest_coverage",
                  100.0 * static_cast<double>(region.second) / static_cast<double>(total_bytes),
                  "percent", gpu);
  add_measurement(r, ctx, "memtest_tested", static_cast<double>(region.second / kMiB), "MiB", gpu);
  return ok_result();
}

class GpuMemtestCheck final : public Check {
 public:
  std::string_view name() const override { return "gpu_memtest"; }
  Applies applies(const CheckContext& ctx) const override { return probe_applies(ctx); }
  CheckResult run(const CheckContext& ctx) override {
    return run_on_each_gpu(ctx, name(), [&](int gpu, CheckResult& r, std::vector<std::string>&) {
      return measure_memtest(ctx, gpu, r);
    });
  }
};

}  // namespace

std::unique_ptr<Check> make_gpu_memtest_check() { return std::make_unique<GpuMemtestCheck>(); }

}  // namespace vigil
