// gpu_sanity: the Slurm hooks' optional CUDA sanity check (`vigil-check hook ... --cuda-sanity`,
// docs/hooks.md). Per GPU: create the context, run one tiny integer kernel over kSanityWords
// words, copy them back and verify every word on the host. Measurements: sanity_errors (wrong
// words; any fails on every SKU, like memtest_errors) and sanity_s (context to verified result,
// wall; informational). A GPU whose context or kernel fails is an `error` naming the call, except
// an uncorrectable ECC error, which fails (finish_probe_result). No GPU load worth the name: the
// kernel runs for microseconds; the context creation dominates.
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "check_factories.h"
#include "cuda/cuda_probe.h"
#include "cuda/probe_result.h"

namespace vigil {
namespace {

using namespace cuda_probe;

__global__ void write_sanity_words(std::uint64_t* out, std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
       i += std::size_t{gridDim.x} * blockDim.x) {
    out[i] = sanity_word(i);
  }
}

VoidResult check_gpu(const CheckContext& ctx, int gpu, CheckResult& r) {
  const auto start = std::chrono::steady_clock::now();
  VIGIL_CUDA_CHECK(cudaFree(nullptr));  // creates the context: the step that fails on a sick GPU
  VIGIL_TRY(DevicePtr words, device_alloc(kSanityWords * sizeof(std::uint64_t)));
  write_sanity_words<<<64, 256>>>(static_cast<std::uint64_t*>(words.get()), kSanityWords);
  VIGIL_CUDA_CHECK(cudaGetLastError());
  std::vector<std::uint64_t> host(kSanityWords);
  VIGIL_CUDA_CHECK(cudaMemcpy(host.data(), words.get(), kSanityWords * sizeof(std::uint64_t),
                              cudaMemcpyDeviceToHost));
  unsigned long long wrong = 0;
  std::size_t first = kSanityWords;
  for (std::size_t i = 0; i < kSanityWords; ++i) {
    if (host[i] == sanity_word(i)) continue;
    if (wrong++ == 0) first = i;
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  add_mismatches(r, ctx, gpu, "sanity_errors", wrong,
                 std::to_string(kSanityWords) + " words of one kernel",
                 wrong ? "first at word " + std::to_string(first) : "");
  add_measurement(r, ctx, "sanity_s", seconds, "s", gpu);
  return ok_result();
}

class GpuSanityCheck final : public Check {
 public:
  std::string_view name() const override { return "gpu_sanity"; }
  Applies applies(const CheckContext& ctx) const override { return probe_applies(ctx); }
  CheckResult run(const CheckContext& ctx) override {
    return run_on_each_gpu(ctx, name(), [&](int gpu, CheckResult& r, std::vector<std::string>&) {
      return check_gpu(ctx, gpu, r);
    });
  }
};

}  // namespace

std::unique_ptr<Check> make_gpu_sanity_check() { return std::make_unique<GpuSanityCheck>(); }

}  // namespace vigil
