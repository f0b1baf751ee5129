// gpu_sdc's arithmetic and judgement (checks/src/cuda/sdc_math.h, sdc_verdict.h). The kernels
// run only on a GPU (docs/gpu-validation.md); what they report is judged here.
#include "cuda/sdc_verdict.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "cuda/probe_result.h"
#include "cuda/sdc_math.h"

namespace vigil::cuda_probe {
namespace {

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// ---- the exact phase's claim: any order of FP32 additions gives the integer result ----------

TEST(SdcMath, integer_inputs_lie_in_minus_four_to_four_and_use_every_value) {
  std::vector<int> seen(9, 0);
  for (std::uint64_t i = 0; i < 100000; ++i) {
    const int v = sdc_int_input(11, i);
    ASSERT_GE(v, -4);
    ASSERT_LE(v, 4);
    ++seen[std::size_t(v + 4)];
  }
  for (int count : seen) EXPECT_GT(count, 100000 / 9 * 9 / 10);
}

TEST(SdcMath, an_fp32_dot_product_of_the_integer_inputs_is_exact_in_any_order) {
  const std::int64_t k = sdc_plan().k;
  ASSERT_LE(16 * k, std::int64_t{1} << 24);  // every partial sum is an exact FP32 integer
  ASSERT_LE(k, kSdcMaxExactK);
  std::mt19937 shuffle(7);
  for (std::int64_t col = 0; col < 4; ++col) {
    std::vector<float> products(static_cast<std::size_t>(k));
    long long exact = 0;
    for (std::int64_t kk = 0; kk < k; ++kk) {
      const int a = sdc_int_input(11, std::uint64_t(3 * k + kk));
      const int b = sdc_int_input(12, std::uint64_t(col * k + kk));
      products[std::size_t(kk)] = float(a) * float(b);
      exact += a * b;
    }
    for (int order = 0; order < 5; ++order) {
      std::shuffle(products.begin(), products.end(), shuffle);
      const float sum = std::accumulate(products.begin(), products.end(), 0.0f);
      EXPECT_EQ(sum, float(exact)) << "column " << col << ", order " << order;
    }
  }
}

TEST(SdcMath, real_inputs_fill_minus_one_to_one_with_distinct_values) {
  float lo = 1, hi = -1;
  std::vector<float> v;
  for (std::uint64_t i = 0; i < 4096; ++i) v.push_back(sdc_real_input(21, i));
  for (float x : v) lo = std::min(lo, x), hi = std::max(hi, x);
  EXPECT_GE(lo, -1.0f);
  EXPECT_LT(hi, 1.0f);
  EXPECT_LT(lo, -0.99f);
  EXPECT_GT(hi, 0.99f);
  std::sort(v.begin(), v.end());
  EXPECT_GT(std::unique(v.begin(), v.end()) - v.begin(), 4000);
}

TEST(SdcMath, fingerprint_changes_with_one_flipped_bit_and_with_the_element_moved) {
  EXPECT_NE(sdc_mix(5, float_bits(1.5f)), sdc_mix(5, float_bits(1.5f) ^ 1u));
  EXPECT_NE(sdc_mix(5, float_bits(1.5f)), sdc_mix(6, float_bits(1.5f)));
  EXPECT_EQ(sdc_mix(5, float_bits(1.5f)), sdc_mix(5, float_bits(1.5f)));
}

TEST(SdcMath, fp8_needs_compute_capability_8_9) {
  EXPECT_FALSE(precision_supported(SdcPrecision::kFp8, 8, 0));  // A100
  EXPECT_TRUE(precision_supported(SdcPrecision::kFp8, 8, 9));   // L40S
  EXPECT_TRUE(precision_supported(SdcPrecision::kFp8, 9, 0));   // H100, H200
  EXPECT_TRUE(precision_supported(SdcPrecision::kBf16, 8, 0));
  EXPECT_FALSE(precision_supported(SdcPrecision::kBf16, 7, 0));  // V100: no BF16 tensor cores
}

// ---- the verdict ----------------------------------------------------------------------------

constexpr std::int64_t kAll = 8192 * 8192;

std::vector<SdcOutcome> healthy(int gpus, std::uint64_t print = 0xabc) {
  std::vector<SdcOutcome> out;
  for (int g = 0; g < gpus; ++g) {
    for (SdcPrecision p : kSdcPrecisions) {
      SdcOutcome o;
      o.gpu = g;
      o.precision = p;
      o.repeats = 100;
      o.fingerprint = print + static_cast<std::uint64_t>(p);
      o.signature = "9.0/132/algo";
      out.push_back(o);
    }
  }
  return out;
}

SdcOutcome& of(std::vector<SdcOutcome>& v, int gpu, SdcPrecision p) {
  return *std::find_if(v.begin(), v.end(),
                       [&](const SdcOutcome& o) { return o.gpu == gpu && o.precision == p; });
}

CheckResult judged(const std::vector<SdcOutcome>& outcomes,
                   const std::vector<SdcCrossDiff>& diffs = {}) {
  CheckContext ctx;
  CheckResult r;
  r.check = "gpu_sdc";
  judge_sdc(r, ctx, outcomes, compare_across_gpus(outcomes), diffs, kAll);
  int gpus = 0;
  for (const SdcOutcome& o : outcomes) gpus = std::max(gpus, o.gpu + 1);
  return finish_probe_result(ctx, std::move(r), gpus, {}, {});
}

double value(const CheckResult& r, const std::string& name, int gpu) {
  for (const Measurement& m : r.measurements)
    if (m.name == name && m.gpu == gpu) return m.value;
  return -1;
}

TEST(SdcVerdict, eight_healthy_gpus_pass_with_zero_mismatches_each) {
  const CheckResult r = judged(healthy(8));
  EXPECT_EQ(r.status, Status::kPass) << r.message;
  for (int g = 0; g < 8; ++g) EXPECT_EQ(value(r, "sdc_mismatches", g), 0);
  EXPECT_TRUE(compare_across_gpus(healthy(8)).odd.empty());
}

TEST(SdcVerdict, a_result_that_changes_between_repeats_fails_naming_gpu_precision_and_element) {
  auto v = healthy(8);
  SdcOutcome& o = of(v, 3, SdcPrecision::kFp16);
  o.repeat_wrong = 1;
  o.repeat_first = {17, 4000, 12.5f, 12.25f};
  const CheckResult r = judged(v);
  EXPECT_EQ(r.status, Status::kFail);
  EXPECT_EQ(r.fault_code, "VIGIL-CUDA-SDC-MISMATCHES");
  EXPECT_EQ(value(r, "sdc_mismatches", 3), 1);
  EXPECT_EQ(value(r, "sdc_mismatches", 2), 0);
  EXPECT_TRUE(contains(r.message,
                       "gpu 3 fp16: 1 value changed over 100 repeats of one GEMM, "
                       "first (row 17, col 4000): 12.5, expected 12.25"))
      << r.message;
}

TEST(SdcVerdict, a_wrong_element_of_the_exact_gemm_fails_against_the_integer_result) {
  auto v = healthy(1);
  SdcOutcome& o = of(v, 0, SdcPrecision::kBf16);
  o.exact_wrong = 2;
  o.exact_first = {0, 8191, 41.0f, 40.0f};
  o.cpu_wrong = 1;
  const CheckResult r = judged(v);
  EXPECT_EQ(r.status, Status::kFail);
  // The CPU tile is a part of the result: its wrong element is one of the two, not a third.
  EXPECT_EQ(value(r, "sdc_mismatches", 0), 2);
  EXPECT_TRUE(contains(r.message,
                       "gpu 0 bf16: 2 elements of 67108864 wrong in the exact integer "
                       "GEMM, first (row 0, col 8191): 41, expected 40"))
      << r.message;
  EXPECT_TRUE(contains(r.message, "1 element of the integer GEMM differ from the CPU's"));
}

TEST(SdcVerdict, the_gpu_whose_result_differs_from_the_majority_fails_with_the_diff) {
  auto v = healthy(8);
  of(v, 5, SdcPrecision::kBf16).fingerprint = 0xdead;
  const SdcCrossGpu cross = compare_across_gpus(v);
  ASSERT_EQ(cross.odd.size(), 1u);
  EXPECT_EQ(cross.odd[0].gpu, 5);
  EXPECT_EQ(cross.odd[0].precision, SdcPrecision::kBf16);
  EXPECT_EQ(cross.odd[0].reference_gpu, 0);
  EXPECT_TRUE(cross.undecided.empty());
  const CheckResult r = judged(v, {{cross.odd[0], 1, {100, 200, 0.5f, 0.25f}}});
  EXPECT_EQ(r.status, Status::kFail);
  EXPECT_EQ(value(r, "sdc_mismatches", 5), 1);
  EXPECT_EQ(value(r, "sdc_mismatches", 0), 0);
  EXPECT_TRUE(contains(r.message,
                       "gpu 5 bf16: 1 element differ from the result of gpu 0 and the "
                       "GPUs agreeing with it, first (row 100, col 200): 0.5, "
                       "expected 0.25"))
      << r.message;
}

TEST(SdcVerdict, an_odd_fingerprint_with_no_element_different_still_counts) {
  auto v = healthy(3);
  of(v, 2, SdcPrecision::kFp8).fingerprint = 1;
  const SdcCrossGpu cross = compare_across_gpus(v);
  ASSERT_EQ(cross.odd.size(), 1u);
  const CheckResult r = judged(v, {{cross.odd[0], 0, {}}});
  EXPECT_EQ(value(r, "sdc_mismatches", 2), 1);
  EXPECT_EQ(r.status, Status::kFail);
  EXPECT_TRUE(contains(r.message,
                       "gpu 2 fp8: its result's fingerprint differs from the result "
                       "of gpu 0 and the GPUs agreeing with it though no element read "
                       "back does (counted as 1)"))
      << r.message;
}

TEST(SdcVerdict, gpus_with_nothing_comparable_are_told_apart_from_one_gpu) {
  EXPECT_TRUE(any_comparable(healthy(1)));  // nothing to compare is not a missed vote
  EXPECT_TRUE(any_comparable(healthy(8)));
  auto v = healthy(2);
  for (SdcOutcome& o : v) o.signature += std::to_string(o.gpu);  // each its own algorithm
  EXPECT_FALSE(any_comparable(v));
}

TEST(SdcVerdict, two_gpus_that_disagree_only_warn_since_no_majority_says_which_is_wrong) {
  auto v = healthy(2);
  of(v, 1, SdcPrecision::kBf16).fingerprint = 0xdead;
  const SdcCrossGpu cross = compare_across_gpus(v);
  EXPECT_TRUE(cross.odd.empty());
  ASSERT_EQ(cross.undecided.size(), 1u);
  EXPECT_EQ(cross.undecided[0].gpus, (std::vector<int>{0, 1}));
  const CheckResult r = judged(v);
  EXPECT_EQ(r.status, Status::kWarn) << r.message;
  EXPECT_EQ(value(r, "sdc_unresolved", 0), 1);
  EXPECT_EQ(value(r, "sdc_unresolved", 1), 1);
  EXPECT_TRUE(contains(r.message,
                       "bf16 results of gpu 0 and gpu 1 differ bitwise and no "
                       "majority says which is wrong"));
}

TEST(SdcVerdict, a_four_four_split_is_undecided_and_a_five_three_split_is_not) {
  auto v = healthy(8);
  for (int g = 4; g < 8; ++g) of(v, g, SdcPrecision::kBf16).fingerprint = 0xdead;
  EXPECT_EQ(compare_across_gpus(v).undecided.size(), 1u);
  EXPECT_TRUE(compare_across_gpus(v).odd.empty());
  of(v, 4, SdcPrecision::kBf16).fingerprint = of(v, 0, SdcPrecision::kBf16).fingerprint;
  const SdcCrossGpu cross = compare_across_gpus(v);
  EXPECT_TRUE(cross.undecided.empty());
  ASSERT_EQ(cross.odd.size(), 3u);
  EXPECT_EQ(cross.odd[0].gpu, 5);
}

TEST(SdcVerdict, gpus_of_another_architecture_sm_count_or_algorithm_are_not_compared) {
  auto v = healthy(3);
  SdcOutcome& odd = of(v, 2, SdcPrecision::kBf16);
  odd.fingerprint = 0xdead;
  odd.signature = "9.0/114/algo";  // an H100 PCIe beside two SXM parts: other bits are fine
  const SdcCrossGpu cross = compare_across_gpus(v);
  EXPECT_TRUE(cross.odd.empty());
  EXPECT_TRUE(cross.undecided.empty());
  EXPECT_EQ(judged(v).status, Status::kPass);
}

TEST(SdcVerdict, one_gpu_is_judged_on_its_own_gemms_alone) {
  const auto v = healthy(1);
  const SdcCrossGpu cross = compare_across_gpus(v);
  EXPECT_TRUE(cross.odd.empty());
  EXPECT_TRUE(cross.undecided.empty());
  EXPECT_EQ(judged(v).status, Status::kPass);
}

}  // namespace
}  // namespace vigil::cuda_probe
