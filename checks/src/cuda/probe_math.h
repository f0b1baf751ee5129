#pragma once
// Pure arithmetic and sizing of the CUDA probes (no CUDA calls), shared by the probes and their
// unit tests. Compiles as plain C++ and under nvcc; the memtest pattern functions are
// __host__ __device__ so the GPU kernels and the host tests use the same definition.
#include <algorithm>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#if defined(__CUDACC__)
#define VIGIL_HD __host__ __device__
#else
#define VIGIL_HD
#endif

namespace vigil::cuda_probe {

inline constexpr std::size_t kMiB = std::size_t{1} << 20;
inline constexpr std::size_t kGiB = std::size_t{1} << 30;

// ---- figures ----------------------------------------------------------------------------------

// Floating-point operations of one C = A*B GEMM with A m x k and B k x n (one multiply and one
// add per inner-product term).
inline double gemm_flops(std::int64_t m, std::int64_t n, std::int64_t k) {
  return 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
}
// TFLOP/s (1e12) for `flops` done in `seconds`; 0 when seconds <= 0.
inline double tflops_per_second(double flops, double seconds) {
  return seconds > 0 ? flops / seconds / 1e12 : 0.0;
}
// GB/s (1e9 bytes, the unit "GB/s") for `bytes` moved in `seconds`; 0 when seconds <= 0.
inline double gigabytes_per_second(double bytes, double seconds) {
  return seconds > 0 ? bytes / seconds / 1e9 : 0.0;
}
// Bytes one copy of `buffer_bytes` moves through HBM: every byte is read once and written once.
inline double copy_bytes_moved(std::size_t buffer_bytes) {
  return 2.0 * static_cast<double>(buffer_bytes);
}

// Median of per-batch figures (mean of the middle two for an even count); 0 for none. The probes
// report the median batch so one noisy batch neither hides a slow GPU nor fails a healthy one.
inline double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const std::size_t mid = v.size() / 2;
  return v.size() % 2 ? v[mid] : (v[mid - 1] + v[mid]) / 2.0;
}

// ---- sizing per suite (quick: the whole suite on an 8-GPU node well under a minute) -----------

struct TimingPlan {
  int warmup = 0;   // untimed iterations first (clocks ramp up, caches and heuristics settle)
  int iters = 1;    // iterations per timed batch (one CUDA event pair per batch)
  int batches = 1;  // timed batches; the figure is the median batch
  // Warm-up also lasts at least this long: an idle GPU needs a few hundred ms of load before
  // its SM clock reaches boost (clocks_event_reasons shows GpuIdle until then), and a fixed
  // count of fast iterations (10 GEMMs: ~15 ms on an H100) would time the ramp.
  double min_warmup_s = 0;
  int total() const { return warmup + iters * batches; }
};

// Untimed iterations still to run after `done` of them took `elapsed_s`, so that warm-up
// lasts at least `min_s`: the remaining time at the observed rate plus 10%, at least 1, at
// most `cap`. 0 once min_s is reached.
inline int more_warmup_iters(int done, double elapsed_s, double min_s, int cap = 100000) {
  if (elapsed_s >= min_s) return 0;
  if (done <= 0 || elapsed_s <= 0) return 1;
  const double per_iter = elapsed_s / done;
  const double want = (min_s - elapsed_s) / per_iter * 1.1;
  if (want >= cap) return cap;
  return want < 1 ? 1 : static_cast<int>(want + 0.5);
}

struct GemmPlan {
  std::int64_t m = 8192, n = 8192, k = 8192;
  TimingPlan timing;
};
// 8192^3 in both suites: the size the healthy figures in anchors.md section 4 were measured at,
// and large enough to reach peak on every SKU; full runs ~20x more iterations (thermals show).
inline GemmPlan gemm_plan(bool full) {
  return full ? GemmPlan{8192, 8192, 8192, {50, 100, 10, 2.0}}
              : GemmPlan{8192, 8192, 8192, {10, 20, 3, 0.5}};
}

struct CopyPlan {
  std::size_t bytes = 0;  // per buffer
  TimingPlan timing;
};
// HBM copy: source and destination buffers of `bytes` each, far larger than any L2 (<= 126 MB).
inline CopyPlan hbm_plan(bool full) {
  return full ? CopyPlan{4 * kGiB, {5, 20, 5, 0.5}} : CopyPlan{1 * kGiB, {3, 10, 3, 0.2}};
}
// Host<->device copies from/to pinned host memory, each direction timed on its own.
inline CopyPlan pcie_plan(bool full) {
  return full ? CopyPlan{1 * kGiB, {3, 10, 5, 0.2}} : CopyPlan{256 * kMiB, {2, 5, 3, 0.1}};
}

// ---- memory pattern test ----------------------------------------------------------------------

enum class Pattern : std::uint32_t {
  kWalkingOnes,     // one bit set per 64-bit word, position rotating with the word index
  kWalkingZeros,    // the complement of kWalkingOnes
  kAddress,         // the word index itself (catches address-line faults / aliasing)
  kAddressInverse,  // the complement of kAddress
  kRandom,          // a reproducible pseudo-random word from (index, seed)
};

struct MemtestPass {
  Pattern pattern = Pattern::kRandom;
  std::uint32_t shift = 0;  // walking patterns: rotation added to the word index
  std::uint64_t seed = 0;   // kRandom only
};

VIGIL_HD inline std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// gpu_sanity's word at `index`: splitmix64 then kSanityRounds of a 64-bit LCG step and an
// xor-shift, so each of the kernel's threads runs integer multiply, add, shift and xor before it
// stores; the host recomputes every word to verify.
inline constexpr int kSanityRounds = 32;
inline constexpr std::size_t kSanityWords = std::size_t{1} << 16;  // 512 KiB per GPU
VIGIL_HD inline std::uint64_t sanity_word(std::uint64_t index) {
  std::uint64_t x = splitmix64(index);
  for (int i = 0; i < kSanityRounds; ++i) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    x ^= x >> 29;
  }
  return x;
}

// The word that `pass` writes at 64-bit word `index` (the verify step recomputes it).
VIGIL_HD inline std::uint64_t pattern_word(const MemtestPass& pass, std::uint64_t index) {
  switch (pass.pattern) {
    case Pattern::kWalkingOnes:
      return std::uint64_t{1} << ((index + pass.shift) & 63u);
    case Pattern::kWalkingZeros:
      return ~(std::uint64_t{1} << ((index + pass.shift) & 63u));
    case Pattern::kAddress:
      return index;
    case Pattern::kAddressInverse:
      return ~index;
    case Pattern::kRandom:
    default:
      return splitmix64(index ^ splitmix64(pass.seed));
  }
}

inline const char* pattern_name(Pattern p) {
  switch (p) {
    case Pattern::kWalkingOnes:
      return "walking_ones";
    case Pattern::kWalkingZeros:
      return "walking_zeros";
    case Pattern::kAddress:
      return "address";
    case Pattern::kAddressInverse:
      return "address_inverse";
    case Pattern::kRandom:
      return "random";
  }
  return "unknown";
}

struct MemtestPlan {
  double free_fraction = 0;  // of the free memory cudaMemGetInfo reports
  std::size_t max_bytes = 0;
  std::vector<MemtestPass> passes;
};

inline constexpr std::uint64_t kMemtestSeed = 0x5649474C2D4D454Dull;  // fixed: runs reproduce

inline MemtestPlan memtest_plan(bool full) {
  MemtestPlan p;
  if (!full) {
    p.free_fraction = 0.25;
    p.max_bytes = 16 * kGiB;
    p.passes = {{Pattern::kWalkingOnes, 0, 0},
                {Pattern::kAddress, 0, 0},
                {Pattern::kAddressInverse, 0, 0},
                {Pattern::kRandom, 0, kMemtestSeed}};
    return p;
  }
  p.free_fraction = 0.85;
  p.max_bytes = ~std::size_t{0};
  for (std::uint32_t s = 0; s < 8; ++s) p.passes.push_back({Pattern::kWalkingOnes, s, 0});
  for (std::uint32_t s = 0; s < 8; ++s) p.passes.push_back({Pattern::kWalkingZeros, s, 0});
  p.passes.push_back({Pattern::kAddress, 0, 0});
  p.passes.push_back({Pattern::kAddressInverse, 0, 0});
  for (std::uint64_t i = 0; i < 4; ++i) p.passes.push_back({Pattern::kRandom, 0, kMemtestSeed + i});
  return p;
}

inline constexpr std::size_t kMemtestAlign = 2 * kMiB;
inline constexpr std::size_t kMemtestMinBytes = 64 * kMiB;

// Bytes to test given the free device memory: the plan's fraction, capped, rounded down to
// 2 MiB; 0 when that leaves less than 64 MiB (the probe then reports an error, not a pass).
inline std::size_t memtest_bytes(std::size_t free_bytes, const MemtestPlan& plan) {
  double want = static_cast<double>(free_bytes) * plan.free_fraction;
  std::size_t bytes =
      want >= static_cast<double>(plan.max_bytes) ? plan.max_bytes : static_cast<std::size_t>(want);
  bytes -= bytes % kMemtestAlign;
  return bytes < kMemtestMinBytes ? 0 : bytes;
}

// ---- NUMA locality for pinned host buffers ----------------------------------------------------

// Parses a Linux cpulist ("0-15,32-47\n", as in /sys/bus/pci/devices/<bdf>/local_cpulist) into
// CPU numbers; nullopt when empty or malformed.
inline std::optional<std::vector<int>> parse_cpulist(std::string_view s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.remove_suffix(1);
  if (s.empty()) return std::nullopt;
  std::vector<int> cpus;
  while (!s.empty()) {
    std::size_t comma = s.find(',');
    std::string_view item = s.substr(0, comma);
    s = comma == std::string_view::npos ? std::string_view{} : s.substr(comma + 1);
    if (comma != std::string_view::npos && s.empty()) return std::nullopt;  // trailing comma
    std::size_t dash = item.find('-');
    std::string_view lo_s = item.substr(0, dash);
    std::string_view hi_s = dash == std::string_view::npos ? lo_s : item.substr(dash + 1);
    int lo = 0, hi = 0;
    auto r1 = std::from_chars(lo_s.data(), lo_s.data() + lo_s.size(), lo);
    auto r2 = std::from_chars(hi_s.data(), hi_s.data() + hi_s.size(), hi);
    if (lo_s.empty() || hi_s.empty() || r1.ec != std::errc{} ||
        r1.ptr != lo_s.data() + lo_s.size() || r2.ec != std::errc{} ||
        r2.ptr != hi_s.data() + hi_s.size() || lo < 0 || hi < lo || hi - lo > 65536) {
      return std::nullopt;
    }
    for (int c = lo; c <= hi; ++c) cpus.push_back(c);
  }
  return cpus;
}

}  // namespace vigil::cuda_probe
