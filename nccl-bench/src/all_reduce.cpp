// all_reduce (sum): the only collective-specific code. Inputs are small integers so every sum
// is exact in float and bfloat16 (|sum| <= 3 * ranks), which lets the check compare exactly.
#include <array>

#include "collective.h"
#include "vigil/ncclbench/bench_result.h"

namespace vigil::ncclbench {
namespace {

constexpr std::uint64_t kPeriod = 7;

float pattern(std::uint64_t i, int rank, std::uint64_t seed) {
  return static_cast<float>(
             static_cast<int>((i + 3 * static_cast<std::uint64_t>(rank) + seed) % kPeriod)) -
         3.0f;
}

class AllReduce final : public Collective {
 public:
  std::string_view name() const override { return "all_reduce"; }
  std::string_view redop() const override { return "sum"; }
  double busbw_factor(int nranks) const override { return allreduce_busbw_factor(nranks); }
  std::uint64_t count(std::uint64_t bytes, std::size_t elem_size) const override {
    return bytes / elem_size;
  }
  void input(int rank, std::uint64_t seed, std::uint64_t first,
             std::span<float> out) const override {
    for (std::size_t k = 0; k < out.size(); ++k) out[k] = pattern(first + k, rank, seed);
  }
  void expected(int nranks, std::uint64_t seed, std::uint64_t first,
                std::span<float> out) const override {
    // The sum over ranks only depends on i mod kPeriod: build that table once.
    std::array<float, kPeriod> table{};
    for (std::uint64_t i = 0; i < kPeriod; ++i)
      for (int r = 0; r < nranks; ++r) table[i] += pattern(i, r, seed);
    for (std::size_t k = 0; k < out.size(); ++k) out[k] = table[(first + k) % kPeriod];
  }
  VoidResult run(CommBackend& backend, const void* send, void* recv, std::uint64_t count,
                 DataType type) const override {
    return backend.all_reduce_sum(send, recv, count, type);
  }
};

}  // namespace

std::unique_ptr<Collective> make_all_reduce() { return std::make_unique<AllReduce>(); }

}  // namespace vigil::ncclbench
