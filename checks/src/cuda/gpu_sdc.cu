// gpu_sdc: silent data corruption without a reference GPU (docs/cuda-probes.md, "Silent data
// corruption"). Per GPU and per precision (BF16, FP16, and FP8 E4M3 from compute capability 8.9),
// one 8192^3 tensor-core GEMM through cuBLASLt, FP32 accumulation and output:
//   exact phase:  integer inputs, so the right answer is exact (sdc_math.h); every element is
//                 compared with an int32 reference computed on the CUDA cores (dp4a), and a
//                 corner tile with the CPU's;
//   repeat phase: full-mantissa inputs, the GEMM repeated and each result compared bitwise
//                 with the first (the same algorithm on the same inputs must give the same bits:
//                 cuBLAS, "Results reproducibility"; split-K reductions are excluded);
//   across GPUs:  the first repeat-phase result's fingerprint compared between GPUs of one
//                 architecture, SM count and algorithm; one that differs from the majority is
//                 diffed element by element against a majority GPU's result.
// Judged in sdc_verdict.cpp. VIGIL_SDC_INJECT=<CUDA ordinal> flips one bit of that GPU's BF16
// results in both phases (fault injection for acceptance runs, docs/gpu-validation.md).
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "check_factories.h"
#include "cuda/cublaslt_objects.h"
#include "cuda/cuda_probe.h"
#include "cuda/sdc_math.h"
#include "cuda/sdc_verdict.h"

namespace vigil {
namespace {

using namespace cuda_probe;

constexpr std::size_t kWorkspaceBytes = 32 * kMiB;
constexpr std::uint64_t kExactSeedA = 11, kExactSeedB = 12, kRealSeedA = 21, kRealSeedB = 22;
constexpr int kTile = 64;  // the exact reference kernel's block tile (rows and columns)
constexpr std::int64_t kInjectRow = 17, kInjectCol = 4000;

// Wrong elements of one comparison: how many, and the lowest linear (column-major) index with
// the bits the GPU gave, packed as index << 32 | bits so one atomicMin keeps both.
struct Wrong {
  unsigned long long count;
  unsigned long long first;
};
constexpr Wrong kNoneWrong{0, ~0ull};

template <typename T>
__device__ T to_input(float v);
template <>
__device__ __nv_bfloat16 to_input<__nv_bfloat16>(float v) {
  return __float2bfloat16(v);
}
template <>
__device__ __half to_input<__half>(float v) {
  return __float2half(v);
}
template <>
__device__ __nv_fp8_e4m3 to_input<__nv_fp8_e4m3>(float v) {
  return __nv_fp8_e4m3(v);
}

template <typename T>
__global__ void fill_input(T* p, std::size_t n, std::uint64_t seed, bool exact) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
       i += std::size_t{gridDim.x} * blockDim.x) {
    p[i] =
        to_input<T>(exact ? static_cast<float>(sdc_int_input(seed, i)) : sdc_real_input(seed, i));
  }
}

__global__ void fill_int8(std::int8_t* p, std::size_t n, std::uint64_t seed) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
       i += std::size_t{gridDim.x} * blockDim.x) {
    p[i] = static_cast<std::int8_t>(sdc_int_input(seed, i));
  }
}

__device__ void note_wrong(Wrong* w, std::uint64_t index, float got) {
  atomicAdd(&w->count, 1ull);
  atomicMin(&w->first, (index << 32) | __float_as_uint(got));
}

// The exact reference on the CUDA cores: each block computes a 64 x 64 tile of A^T B from the
// int8 copies of the inputs (4 products per dp4a, int32 accumulation: exact), each thread 4 x 4
// elements, and compares them with the tensor cores' FP32 result `d` (column-major m x n). m, n
// and k are multiples of 64.
__global__ void __launch_bounds__(256)
    exact_compare(const int* a4, const int* b4, const float* d, int m, int k, Wrong* w) {
  __shared__ __align__(16) int as[16][kTile];
  __shared__ __align__(16) int bs[16][kTile];
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  const int i0 = blockIdx.y * kTile, j0 = blockIdx.x * kTile;
  const int kq_all = k / 4;  // packed int8x4 words per column
  int acc[4][4] = {};
  const int load_row = threadIdx.x / 4, load_q = (threadIdx.x % 4) * 4;
  for (int kq0 = 0; kq0 < kq_all; kq0 += 16) {
    const int4 av =
        *reinterpret_cast<const int4*>(&a4[std::size_t(i0 + load_row) * kq_all + kq0 + load_q]);
    const int4 bv =
        *reinterpret_cast<const int4*>(&b4[std::size_t(j0 + load_row) * kq_all + kq0 + load_q]);
    as[load_q][load_row] = av.x, as[load_q + 1][load_row] = av.y;
    as[load_q + 2][load_row] = av.z, as[load_q + 3][load_row] = av.w;
    bs[load_q][load_row] = bv.x, bs[load_q + 1][load_row] = bv.y;
    bs[load_q + 2][load_row] = bv.z, bs[load_q + 3][load_row] = bv.w;
    __syncthreads();
    for (int q = 0; q < 16; ++q) {
      const int4 a = *reinterpret_cast<const int4*>(&as[q][ty * 4]);
      const int4 b = *reinterpret_cast<const int4*>(&bs[q][tx * 4]);
      const int ar[4] = {a.x, a.y, a.z, a.w}, br[4] = {b.x, b.y, b.z, b.w};
      for (int r = 0; r < 4; ++r)
        for (int c = 0; c < 4; ++c) acc[r][c] = __dp4a(ar[r], br[c], acc[r][c]);
    }
    __syncthreads();
  }
  for (int r = 0; r < 4; ++r) {
    for (int c = 0; c < 4; ++c) {
      const std::uint64_t index =
          std::uint64_t(j0 + tx * 4 + c) * std::uint64_t(m) + std::uint64_t(i0 + ty * 4 + r);
      const float got = d[index];
      // By value: -0 and +0 are the same integer; NaN is never equal.
      if (!(got == static_cast<float>(acc[r][c]))) note_wrong(w, index, got);
    }
  }
}

// Bitwise: a repeat must give the very same bits.
__global__ void compare_bits(const float* d, const float* first, std::size_t n, Wrong* w) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
       i += std::size_t{gridDim.x} * blockDim.x) {
    if (__float_as_uint(d[i]) != __float_as_uint(first[i])) note_wrong(w, i, d[i]);
  }
}

__global__ void fingerprint(const float* d, std::size_t n, unsigned long long* out) {
  unsigned long long sum = 0;
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
       i += std::size_t{gridDim.x} * blockDim.x) {
    sum += sdc_mix(i, __float_as_uint(d[i]));
  }
  for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_down_sync(0xffffffffu, sum, offset);
  if (threadIdx.x % 32 == 0) atomicAdd(out, sum);
}

__global__ void flip_bit(float* d, std::size_t index) {
  d[index] = __uint_as_float(__float_as_uint(d[index]) ^ 0x10u);
}

// The integer A^T B element (row, col) on the CPU, from the same generator as the GPU inputs.
long long cpu_exact(std::int64_t row, std::int64_t col, std::int64_t k) {
  long long sum = 0;
  for (std::int64_t kk = 0; kk < k; ++kk)
    sum += static_cast<long long>(sdc_int_input(kExactSeedA, std::uint64_t(row * k + kk))) *
           sdc_int_input(kExactSeedB, std::uint64_t(col * k + kk));
  return sum;
}

cudaDataType type_of(SdcPrecision p) {
  switch (p) {
    case SdcPrecision::kBf16:
      return CUDA_R_16BF;
    case SdcPrecision::kFp16:
      return CUDA_R_16F;
    case SdcPrecision::kFp8:
      return CUDA_R_8F_E4M3;
  }
  return CUDA_R_16BF;
}

VoidResult fill(SdcPrecision p, void* ptr, std::size_t n, std::uint64_t seed, bool exact,
                cudaStream_t s) {
  switch (p) {
    case SdcPrecision::kBf16:
      fill_input<<<1024, 256, 0, s>>>(static_cast<__nv_bfloat16*>(ptr), n, seed, exact);
      break;
    case SdcPrecision::kFp16:
      fill_input<<<1024, 256, 0, s>>>(static_cast<__half*>(ptr), n, seed, exact);
      break;
    case SdcPrecision::kFp8:
      fill_input<<<1024, 256, 0, s>>>(static_cast<__nv_fp8_e4m3*>(ptr), n, seed, exact);
      break;
  }
  VIGIL_CUDA_CHECK(cudaGetLastError());
  return ok_result();
}

// One GPU's buffers, shared by its precisions.
struct Buffers {
  DevicePtr a, b, a8, b8, d, workspace, wrong, print;
  StreamPtr stream;
};

Result<Buffers> allocate(const SdcPlan& plan) {
  const auto m = std::size_t(plan.m), n = std::size_t(plan.n), k = std::size_t(plan.k);
  Buffers b;
  VIGIL_TRY(b.stream, make_stream());
  VIGIL_TRY(b.a, device_alloc(k * m * 2));  // room for the widest input (16 bits)
  VIGIL_TRY(b.b, device_alloc(k * n * 2));
  VIGIL_TRY(b.a8, device_alloc(k * m));
  VIGIL_TRY(b.b8, device_alloc(k * n));
  VIGIL_TRY(b.d, device_alloc(m * n * sizeof(float)));
  VIGIL_TRY(b.workspace, device_alloc(kWorkspaceBytes));
  VIGIL_TRY(b.wrong, device_alloc(sizeof(Wrong)));
  VIGIL_TRY(b.print, device_alloc(sizeof(unsigned long long)));
  fill_int8<<<1024, 256, 0, b.stream.get()>>>(static_cast<std::int8_t*>(b.a8.get()), k * m,
                                              kExactSeedA);
  fill_int8<<<1024, 256, 0, b.stream.get()>>>(static_cast<std::int8_t*>(b.b8.get()), k * n,
                                              kExactSeedB);
  VIGIL_CUDA_CHECK(cudaGetLastError());
  return Result<Buffers>(std::move(b));  // nvcc does not move a converting return itself
}

Result<Wrong> read_wrong(const Buffers& b) {
  Wrong w{};
  VIGIL_CUDA_CHECK(
      cudaMemcpyAsync(&w, b.wrong.get(), sizeof w, cudaMemcpyDeviceToHost, b.stream.get()));
  VIGIL_CUDA_CHECK(cudaStreamSynchronize(b.stream.get()));
  return w;
}
VoidResult reset_wrong(const Buffers& b) {
  VIGIL_CUDA_CHECK(cudaMemcpyAsync(b.wrong.get(), &kNoneWrong, sizeof kNoneWrong,
                                   cudaMemcpyHostToDevice, b.stream.get()));
  return ok_result();
}
SdcElement element_of(unsigned long long first, std::int64_t m) {
  const std::int64_t index = static_cast<std::int64_t>(first >> 32);
  SdcElement e;
  e.row = index % m;
  e.col = index / m;
  const auto bits = static_cast<std::uint32_t>(first & 0xffffffffu);
  std::memcpy(&e.got, &bits, sizeof bits);
  return e;
}

// The corner tile (first rows, last columns) of the exact result as the CPU computes it, column by
// column: the same for every GPU and precision, so computed once per run (33 M multiply-adds).
std::vector<float> cpu_tile(const SdcPlan& plan) {
  const std::int64_t t = plan.cpu_tile, col0 = plan.n - t;
  std::vector<float> tile(std::size_t(t * t));
  for (std::int64_t c = 0; c < t; ++c)
    for (std::int64_t r = 0; r < t; ++r)
      tile[std::size_t(c * t + r)] = static_cast<float>(cpu_exact(r, col0 + c, plan.k));
  return tile;
}

// Elements of the GPU's exact result's corner tile that differ from the CPU's.
Result<std::uint64_t> cpu_tile_wrong(const Buffers& b, const SdcPlan& plan,
                                     const std::vector<float>& want) {
  const std::int64_t t = plan.cpu_tile, col0 = plan.n - t;
  std::vector<float> tile(std::size_t(t * t));
  VIGIL_CUDA_CHECK(cudaMemcpy2D(
      tile.data(), t * sizeof(float), static_cast<const float*>(b.d.get()) + col0 * plan.m,
      plan.m * sizeof(float), t * sizeof(float), t, cudaMemcpyDeviceToHost));
  std::uint64_t wrong = 0;
  for (std::size_t i = 0; i < tile.size(); ++i) wrong += !(tile[i] == want[i]);
  return wrong;
}

// What a GPU keeps for the comparison across GPUs: its first repeat-phase result per precision.
struct Kept {
  int ordinal = 0;
  DevicePtr result;
};

struct GpuInfo {
  int cc_major = 0, cc_minor = 0, sms = 0;
};

std::string signature(const GpuInfo& g, const cublasLtMatmulAlgo_t& algo) {
  std::string s = std::to_string(g.cc_major) + "." + std::to_string(g.cc_minor) + "/" +
                  std::to_string(g.sms) + "/";
  static const char* hex = "0123456789abcdef";
  const auto* bytes = reinterpret_cast<const unsigned char*>(algo.data);
  for (std::size_t i = 0; i < sizeof algo.data; ++i) s += {hex[bytes[i] >> 4], hex[bytes[i] & 15]};
  return s;
}

struct Precision {
  SdcPrecision p;
  bool inject = false;
  const std::vector<float>* cpu = nullptr;  // cpu_tile()
  // Repeats stop early once this passes: the check's time box must hold every GPU's results (a
  // GPU slower than an H200, e.g. an L4 at ~9 ms per GEMM, in the qualify suite's 1,000 repeats).
  std::optional<std::chrono::steady_clock::time_point> repeats_until;
};

// One precision on the current GPU: both phases; the first repeat-phase result goes to `kept`.
// Nothing when cuBLASLt has no deterministic algorithm for it on this GPU.
Result<std::optional<SdcOutcome>> run_precision(const CublasLtApi& lt, Buffers& b,
                                                const SdcPlan& plan, const GpuInfo& g, int ordinal,
                                                Precision pr, Kept& kept) {
  const auto m = std::uint64_t(plan.m), n = std::uint64_t(plan.n), k = std::uint64_t(plan.k);
  const std::size_t all = std::size_t(m * n);
  cudaStream_t s = b.stream.get();
  VIGIL_TRY(TnMatmul mm, make_tn_matmul(lt, type_of(pr.p), CUDA_R_32F, m, n, k, kWorkspaceBytes,
                                        /*deterministic=*/true));
  if (!mm.found) return std::optional<SdcOutcome>();
  SdcOutcome o;
  o.gpu = ordinal;
  o.precision = pr.p;
  o.signature = signature(g, mm.algo);
  auto* d = static_cast<float*>(b.d.get());
  const std::size_t inject_at = std::size_t(kInjectCol) * m + kInjectRow;

  // Exact phase.
  if (VoidResult f = fill(pr.p, b.a.get(), k * m, kExactSeedA, true, s); !f) return f.error();
  if (VoidResult f = fill(pr.p, b.b.get(), k * n, kExactSeedB, true, s); !f) return f.error();
  if (VoidResult r =
          run_tn_matmul(lt, mm, b.a.get(), b.b.get(), d, b.workspace.get(), kWorkspaceBytes, s);
      !r)
    return r.error();
  if (pr.inject) flip_bit<<<1, 1, 0, s>>>(d, inject_at);
  if (VoidResult z = reset_wrong(b); !z) return z.error();
  exact_compare<<<dim3(unsigned(n / kTile), unsigned(m / kTile)), 256, 0, s>>>(
      static_cast<const int*>(b.a8.get()), static_cast<const int*>(b.b8.get()), d, int(m), int(k),
      static_cast<Wrong*>(b.wrong.get()));
  VIGIL_CUDA_CHECK(cudaGetLastError());
  VIGIL_TRY(const Wrong exact, read_wrong(b));
  o.exact_wrong = exact.count;
  if (exact.count) {
    o.exact_first = element_of(exact.first, plan.m);
    o.exact_first.want =
        static_cast<float>(cpu_exact(o.exact_first.row, o.exact_first.col, plan.k));
  }
  VIGIL_TRY(o.cpu_wrong, cpu_tile_wrong(b, plan, *pr.cpu));

  // Repeat phase: the first result is kept, every repeat compared with it.
  VIGIL_TRY(kept.result, device_alloc(all * sizeof(float)));
  kept.ordinal = ordinal;
  auto* first = static_cast<float*>(kept.result.get());
  if (VoidResult f = fill(pr.p, b.a.get(), k * m, kRealSeedA, false, s); !f) return f.error();
  if (VoidResult f = fill(pr.p, b.b.get(), k * n, kRealSeedB, false, s); !f) return f.error();
  if (VoidResult r =
          run_tn_matmul(lt, mm, b.a.get(), b.b.get(), first, b.workspace.get(), kWorkspaceBytes, s);
      !r)
    return r.error();
  const unsigned long long zero = 0;
  VIGIL_CUDA_CHECK(cudaMemcpyAsync(b.print.get(), &zero, sizeof zero, cudaMemcpyHostToDevice, s));
  fingerprint<<<1024, 256, 0, s>>>(first, all, static_cast<unsigned long long*>(b.print.get()));
  VIGIL_CUDA_CHECK(cudaGetLastError());
  if (VoidResult z = reset_wrong(b); !z) return z.error();
  int rep = 0;
  for (; rep < plan.repeats; ++rep) {
    if (rep % 10 == 0 && pr.repeats_until && std::chrono::steady_clock::now() > *pr.repeats_until)
      break;
    if (VoidResult r =
            run_tn_matmul(lt, mm, b.a.get(), b.b.get(), d, b.workspace.get(), kWorkspaceBytes, s);
        !r)
      return r.error();
    if (pr.inject && rep == 1) flip_bit<<<1, 1, 0, s>>>(d, inject_at);
    compare_bits<<<1024, 256, 0, s>>>(d, first, all, static_cast<Wrong*>(b.wrong.get()));
    VIGIL_CUDA_CHECK(cudaGetLastError());
  }
  VIGIL_CUDA_CHECK(cudaMemcpyAsync(&o.fingerprint, b.print.get(), sizeof o.fingerprint,
                                   cudaMemcpyDeviceToHost, s));
  VIGIL_TRY(const Wrong repeat, read_wrong(b));
  o.repeats = rep;
  o.repeat_wrong = repeat.count;
  if (repeat.count) {
    o.repeat_first = element_of(repeat.first, plan.m);
    VIGIL_CUDA_CHECK(cudaMemcpy(&o.repeat_first.want,
                                first + (o.repeat_first.col * plan.m + o.repeat_first.row),
                                sizeof(float), cudaMemcpyDeviceToHost));
  }
  return std::optional<SdcOutcome>(std::move(o));
}

// Which CUDA ordinal VIGIL_SDC_INJECT names, or -1.
int inject_ordinal() {
  const char* v = std::getenv("VIGIL_SDC_INJECT");
  if (!v || !*v) return -1;
  char* end = nullptr;
  const long n = std::strtol(v, &end, 10);
  return *end == '\0' && n >= 0 && n < 1024 ? static_cast<int>(n) : -1;
}

// Every GPU's outcomes and kept results, gathered by the per-GPU probe.
struct Gathered {
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
  std::vector<SdcOutcome> outcomes;  // gpu = CUDA ordinal until relabelled
  std::map<std::pair<int, SdcPrecision>, Kept> kept;
  std::vector<float> cpu;  // cpu_tile(), once
  // Each kept result is freed with its own GPU current.
  void release() {
    for (auto& [key, k] : kept)
      if (cudaSetDevice(k.ordinal) == cudaSuccess) k.result.reset();
    kept.clear();
  }
  ~Gathered() { release(); }
};

VoidResult measure_sdc(const CheckContext& ctx, int gpu, Gathered& all,
                       std::vector<std::string>& notes) {
  const SdcPlan plan = sdc_plan(ctx.suite == Suite::kQualify);
  VIGIL_TRY(const CublasLtApi* loaded, load_cublaslt());
  GpuInfo g;
  VIGIL_CUDA_CHECK(cudaDeviceGetAttribute(&g.cc_major, cudaDevAttrComputeCapabilityMajor, gpu));
  VIGIL_CUDA_CHECK(cudaDeviceGetAttribute(&g.cc_minor, cudaDevAttrComputeCapabilityMinor, gpu));
  VIGIL_CUDA_CHECK(cudaDeviceGetAttribute(&g.sms, cudaDevAttrMultiProcessorCount, gpu));
  VIGIL_TRY(Buffers b, allocate(plan));
  if (all.cpu.empty()) all.cpu = cpu_tile(plan);
  // Repeats may use 60% of the time box, counted from the check's start (the rest: the exact
  // phases, the comparison across GPUs, the runner's margin).
  std::optional<std::chrono::steady_clock::time_point> repeats_until;
  if (ctx.time_limit.count() > 0) repeats_until = all.start + ctx.time_limit * 6 / 10;
  const bool inject = inject_ordinal() == gpu;
  int ran = 0;
  for (SdcPrecision p : kSdcPrecisions) {
    if (!precision_supported(p, g.cc_major, g.cc_minor)) {
      if (gpu == 0)
        notes.push_back(std::string(precision_name(p)) + " not run: compute capability " +
                        std::to_string(g.cc_major) + "." + std::to_string(g.cc_minor));
      continue;
    }
    Kept kept;
    VIGIL_TRY(
        std::optional<SdcOutcome> o,
        run_precision(*loaded, b, plan, g, gpu,
                      {p, inject && p == SdcPrecision::kBf16, &all.cpu, repeats_until}, kept));
    if (o && o->repeats < plan.repeats)
      notes.push_back("gpu " + std::to_string(gpu) + " " + std::string(precision_name(p)) + ": " +
                      std::to_string(o->repeats) + " of " + std::to_string(plan.repeats) +
                      " repeats (the check's time box)");
    if (!o) {
      notes.push_back("gpu " + std::to_string(gpu) + " " + std::string(precision_name(p)) +
                      " not run: cuBLASLt offers no deterministic algorithm with FP32 output");
      continue;
    }
    all.outcomes.push_back(std::move(*o));
    all.kept[{gpu, p}] = std::move(kept);
    ++ran;
  }
  // Nothing tested is not a pass: Vigil could not check this GPU (an error, never a fail).
  if (ran == 0)
    return Error{"no precision could run (compute capability " + std::to_string(g.cc_major) + "." +
                     std::to_string(g.cc_minor) + "; see the notes)",
                 "gpu_sdc"};
  if (inject)
    notes.push_back("VIGIL_SDC_INJECT: one bit flipped in gpu " + std::to_string(gpu) +
                    "'s bf16 results");
  return ok_result();
}

// Every element of two GPUs' kept results, compared on the host.
Result<SdcCrossDiff> diff_results(const SdcOddOne& odd, const Gathered& all, std::int64_t m,
                                  std::size_t elements) {
  std::vector<float> mine(elements), theirs(elements);
  const Kept& a = all.kept.at({odd.gpu, odd.precision});
  const Kept& b = all.kept.at({odd.reference_gpu, odd.precision});
  VIGIL_CUDA_CHECK(cudaSetDevice(a.ordinal));
  VIGIL_CUDA_CHECK(
      cudaMemcpy(mine.data(), a.result.get(), elements * sizeof(float), cudaMemcpyDeviceToHost));
  VIGIL_CUDA_CHECK(cudaSetDevice(b.ordinal));
  VIGIL_CUDA_CHECK(
      cudaMemcpy(theirs.data(), b.result.get(), elements * sizeof(float), cudaMemcpyDeviceToHost));
  SdcCrossDiff d{odd, 0, {}};
  for (std::size_t i = 0; i < elements; ++i) {
    if (float_bits(mine[i]) == float_bits(theirs[i])) continue;
    if (d.wrong++ == 0) d.first = {std::int64_t(i) % m, std::int64_t(i) / m, mine[i], theirs[i]};
  }
  return d;
}

void judge_all(Gathered& all, CheckResult& r, const CheckContext& ctx,
               std::vector<std::string>& notes, const CudaLabels& labels) {
  const SdcPlan plan = sdc_plan();
  const auto elements = std::size_t(plan.m * plan.n);
  SdcCrossGpu cross = compare_across_gpus(all.outcomes);
  if (!any_comparable(all.outcomes))
    notes.push_back(
        "no two GPUs comparable bit for bit (architecture, SM count or cuBLASLt "
        "algorithm differ): no vote across GPUs");
  std::vector<SdcCrossDiff> diffs;
  for (const SdcOddOne& odd : cross.odd) {
    Result<SdcCrossDiff> d = diff_results(odd, all, plan.m, elements);
    if (d)
      diffs.push_back(*d);
    else
      notes.push_back("could not diff gpu " + std::to_string(odd.gpu) + ": " +
                      d.error().to_string());
  }
  // From CUDA ordinals to the labels reports use.
  const auto label = [&](int ordinal) {
    return ordinal >= 0 && ordinal < int(labels.label.size()) ? labels.label[ordinal] : ordinal;
  };
  for (SdcOutcome& o : all.outcomes) o.gpu = label(o.gpu);
  for (SdcOddOne& o : cross.odd) o.gpu = label(o.gpu), o.reference_gpu = label(o.reference_gpu);
  for (SdcCrossDiff& d : diffs)
    d.odd.gpu = label(d.odd.gpu), d.odd.reference_gpu = label(d.odd.reference_gpu);
  for (SdcUndecided& u : cross.undecided)
    for (int& g : u.gpus) g = label(g);
  judge_sdc(r, ctx, all.outcomes, cross, diffs, plan.m * plan.n);
  all.release();
}

class GpuSdcCheck final : public Check {
 public:
  std::string_view name() const override { return "gpu_sdc"; }
  Applies applies(const CheckContext& ctx) const override { return probe_applies(ctx); }
  CheckResult run(const CheckContext& ctx) override {
    Gathered all;
    return run_on_each_gpu(
        ctx, name(),
        [&](int gpu, CheckResult&, std::vector<std::string>& notes) {
          return measure_sdc(ctx, gpu, all, notes);
        },
        [&](CheckResult& r, std::vector<std::string>& notes, const CudaLabels& labels) {
          judge_all(all, r, ctx, notes, labels);
        });
  }
};

}  // namespace

std::unique_ptr<Check> make_gpu_sdc_check() { return std::make_unique<GpuSdcCheck>(); }

}  // namespace vigil
