#include "cuda/probe_math.h"

#include <gtest/gtest.h>

#include <bit>
#include <set>

namespace vigil::cuda_probe {
namespace {

TEST(ProbeMath, gemm_flops_counts_a_multiply_and_an_add_per_term) {
  EXPECT_DOUBLE_EQ(gemm_flops(2, 3, 4), 48.0);
  EXPECT_DOUBLE_EQ(gemm_flops(8192, 8192, 8192), 1099511627776.0);  // 2 * 2^39
}

TEST(ProbeMath, tflops_of_an_8192_cube_gemm_match_hand_computed_values) {
  // 2 * 8192^3 = 1.0995e12 flop in 1.378 ms -> 797.9 TFLOP/s (the H100 figure in anchors.md).
  EXPECT_NEAR(tflops_per_second(gemm_flops(8192, 8192, 8192), 1.378e-3), 797.9, 0.1);
  EXPECT_DOUBLE_EQ(tflops_per_second(2e12, 2.0), 1.0);
  EXPECT_EQ(tflops_per_second(1e12, 0.0), 0.0);
}

TEST(ProbeMath, bandwidth_is_bytes_per_second_in_units_of_1e9) {
  EXPECT_DOUBLE_EQ(gigabytes_per_second(1e9, 1.0), 1.0);
  EXPECT_NEAR(gigabytes_per_second(256.0 * kMiB, 0.005), 53.687, 1e-3);  // 268435456 B / 5 ms
  EXPECT_EQ(gigabytes_per_second(1e9, -1.0), 0.0);
}

TEST(ProbeMath, copy_counts_each_byte_read_and_written) {
  EXPECT_DOUBLE_EQ(copy_bytes_moved(kGiB), 2.0 * 1073741824.0);
  // 1 GiB copied in 0.716 ms -> 2 GiB moved -> 2999.3 GB/s (H100 copy figure in anchors.md).
  EXPECT_NEAR(gigabytes_per_second(copy_bytes_moved(kGiB), 0.716e-3), 2999.3, 0.1);
}

TEST(ProbeMath, median_takes_the_middle_batch_and_averages_an_even_pair) {
  EXPECT_DOUBLE_EQ(median({3.0, 1.0, 2.0}), 2.0);
  EXPECT_DOUBLE_EQ(median({4.0, 1.0, 3.0, 2.0}), 2.5);
  EXPECT_DOUBLE_EQ(median({5.0}), 5.0);
  EXPECT_DOUBLE_EQ(median({}), 0.0);
  // One slow outlier batch does not move the figure.
  EXPECT_DOUBLE_EQ(median({1.0, 1.0, 9.0}), 1.0);
}

TEST(ProbeMath, full_suite_does_more_work_than_quick) {
  EXPECT_GT(gemm_plan(true).timing.total(), gemm_plan(false).timing.total());
  EXPECT_GT(hbm_plan(true).bytes, hbm_plan(false).bytes);
  EXPECT_GT(pcie_plan(true).bytes, pcie_plan(false).bytes);
  EXPECT_GT(memtest_plan(true).passes.size(), memtest_plan(false).passes.size());
  EXPECT_GT(memtest_plan(true).free_fraction, memtest_plan(false).free_fraction);
}

TEST(ProbeMath, hbm_buffers_are_far_larger_than_any_l2_cache) {
  // Largest L2 among A100/H100/H200/B200 is below 128 MiB; 8x keeps the cache out of the figure.
  EXPECT_GE(hbm_plan(false).bytes, 8 * 128 * kMiB);
}

// The quick suite on an 8-GPU node of the slowest SKU (A100: 312 TFLOP/s peak, 2,039 GB/s HBM,
// ~25 GB/s H2D, anchors.md section 4) must stay well under a minute: here at most 40 s, counting
// work at 70% of peak plus 0.5 s per GPU and probe for context creation and allocation.
TEST(ProbeMath, quick_suite_on_eight_a100_fits_in_forty_seconds) {
  const double tflops = 312e12 * 0.7, hbm = 2039e9 * 0.7, pcie = 25e9 * 0.7;
  const GemmPlan g = gemm_plan(false);
  const CopyPlan h = hbm_plan(false), p = pcie_plan(false);
  const MemtestPlan m = memtest_plan(false);
  const double gemm_s = g.timing.total() * gemm_flops(g.m, g.n, g.k) / tflops;
  const double hbm_s = h.timing.total() * copy_bytes_moved(h.bytes) / hbm;
  const double pcie_s = 2.0 * p.timing.total() * static_cast<double>(p.bytes) / pcie;
  const double tested = static_cast<double>(memtest_bytes(80 * kGiB, m));
  const double memtest_s = m.passes.size() * 2.0 * tested / hbm;
  const double warmup_s = g.timing.min_warmup_s + h.timing.min_warmup_s + 2 * p.timing.min_warmup_s;
  const double per_gpu = gemm_s + hbm_s + pcie_s + memtest_s + warmup_s + 4 * 0.5;
  EXPECT_LT(8 * per_gpu, 40.0) << "gemm " << gemm_s << " s, hbm " << hbm_s << " s, pcie " << pcie_s
                               << " s, memtest " << memtest_s << " s per GPU";
}

// Clocks of an idle GPU need a few hundred ms of load to reach boost: every probe warms up for
// a minimum time, not only a count of iterations that may take milliseconds.
TEST(ProbeMath, every_probe_warms_up_for_a_minimum_time) {
  for (bool full : {false, true}) {
    EXPECT_GE(gemm_plan(full).timing.min_warmup_s, 0.5) << full;
    EXPECT_GE(hbm_plan(full).timing.min_warmup_s, 0.2) << full;
    EXPECT_GE(pcie_plan(full).timing.min_warmup_s, 0.1) << full;
  }
}

TEST(ProbeMath, more_warmup_iters_fills_the_remaining_time_at_the_observed_rate) {
  // 10 GEMMs took 15 ms; 485 ms remain at 1.5 ms each: 324 iterations, +10%.
  EXPECT_EQ(more_warmup_iters(10, 0.015, 0.5), 356);
  EXPECT_EQ(more_warmup_iters(10, 0.5, 0.5), 0);            // reached
  EXPECT_EQ(more_warmup_iters(10, 0.7, 0.5), 0);            // past
  EXPECT_EQ(more_warmup_iters(0, 0.0, 0.5), 1);             // nothing observed yet: one more
  EXPECT_EQ(more_warmup_iters(3, 0.49, 0.5), 1);            // less than one iteration left
  EXPECT_EQ(more_warmup_iters(1, 1e-9, 10.0, 1000), 1000);  // capped
  EXPECT_EQ(more_warmup_iters(5, 0.0, 0.0), 0);             // no minimum
}

TEST(ProbeMath, memtest_takes_a_bounded_aligned_fraction_of_free_memory) {
  const MemtestPlan quick = memtest_plan(false), full = memtest_plan(true);
  // 80 GiB free: quick = 25% = 20 GiB capped at 16 GiB; full = 85% = 68 GiB.
  EXPECT_EQ(memtest_bytes(80 * kGiB, quick), 16 * kGiB);
  EXPECT_EQ(memtest_bytes(80 * kGiB, full), 68 * kGiB);
  // 1000 MiB + 1 byte free: 25% = 250 MiB -> rounded down to 2 MiB = 250 MiB exactly; 85% of
  // 1000 MiB = 850 MiB -> 850 MiB.
  EXPECT_EQ(memtest_bytes(1000 * kMiB + 1, quick), 250 * kMiB);
  EXPECT_EQ(memtest_bytes(1000 * kMiB + 1, full), 850 * kMiB);
  const std::size_t odd = memtest_bytes(12345 * kMiB + 777, full);
  EXPECT_EQ(odd % kMemtestAlign, 0u);
  EXPECT_LE(odd, static_cast<std::size_t>(0.85 * (12345 * kMiB + 777)));
}

TEST(ProbeMath, memtest_refuses_less_than_the_minimum_region) {
  EXPECT_EQ(memtest_bytes(0, memtest_plan(true)), 0u);
  EXPECT_EQ(memtest_bytes(100 * kMiB, memtest_plan(false)), 0u);  // 25 MiB < 64 MiB
  EXPECT_EQ(memtest_bytes(256 * kMiB, memtest_plan(false)), 64 * kMiB);
}

TEST(ProbeMath, walking_ones_set_exactly_one_bit_that_moves_with_index_and_shift) {
  const MemtestPass ones{Pattern::kWalkingOnes, 0, 0};
  for (std::uint64_t i = 0; i < 200; ++i) {
    EXPECT_EQ(std::popcount(pattern_word(ones, i)), 1) << i;
    EXPECT_EQ(pattern_word(ones, i), std::uint64_t{1} << (i % 64)) << i;
  }
  const MemtestPass shifted{Pattern::kWalkingOnes, 5, 0};
  EXPECT_EQ(pattern_word(shifted, 0), std::uint64_t{1} << 5);
  EXPECT_EQ(pattern_word(shifted, 60), std::uint64_t{1} << 1);
  const MemtestPass zeros{Pattern::kWalkingZeros, 3, 0};
  EXPECT_EQ(pattern_word(zeros, 7), ~(std::uint64_t{1} << 10));
}

TEST(ProbeMath, address_patterns_give_every_word_a_distinct_value) {
  const MemtestPass addr{Pattern::kAddress, 0, 0}, inv{Pattern::kAddressInverse, 0, 0};
  std::set<std::uint64_t> seen;
  for (std::uint64_t i = 0; i < 4096; ++i) {
    seen.insert(pattern_word(addr, i));
    EXPECT_EQ(pattern_word(inv, i), ~pattern_word(addr, i));
  }
  EXPECT_EQ(seen.size(), 4096u);  // aliasing two addresses would write the same value
}

TEST(ProbeMath, random_pattern_is_reproducible_per_seed_and_differs_across_seeds) {
  const MemtestPass a{Pattern::kRandom, 0, kMemtestSeed}, b{Pattern::kRandom, 0, kMemtestSeed + 1};
  int same = 0, bits = 0;
  for (std::uint64_t i = 0; i < 1000; ++i) {
    EXPECT_EQ(pattern_word(a, i), pattern_word(a, i));
    same += pattern_word(a, i) == pattern_word(b, i);
    bits += std::popcount(pattern_word(a, i));
  }
  EXPECT_EQ(same, 0);
  EXPECT_NEAR(bits / 1000.0, 32.0, 1.0);  // about half the bits set: both polarities exercised
}

TEST(ProbeMath, full_memtest_covers_every_pattern_kind) {
  std::set<Pattern> kinds;
  for (const MemtestPass& p : memtest_plan(true).passes) kinds.insert(p.pattern);
  EXPECT_EQ(kinds.size(), 5u);
}

TEST(ProbeMath, cpulist_parses_ranges_and_singletons) {
  auto cpus = parse_cpulist("0-3,8,10-11\n");
  ASSERT_TRUE(cpus);
  EXPECT_EQ(*cpus, (std::vector<int>{0, 1, 2, 3, 8, 10, 11}));
  EXPECT_EQ(*parse_cpulist("7"), std::vector<int>{7});
}

TEST(ProbeMath, cpulist_rejects_malformed_text) {
  EXPECT_FALSE(parse_cpulist(""));
  EXPECT_FALSE(parse_cpulist("\n"));
  EXPECT_FALSE(parse_cpulist("3-1"));
  EXPECT_FALSE(parse_cpulist("0-"));
  EXPECT_FALSE(parse_cpulist("a-b"));
  EXPECT_FALSE(parse_cpulist("0,,2"));
  EXPECT_FALSE(parse_cpulist("0,"));
  EXPECT_FALSE(parse_cpulist("1x"));
}

}  // namespace
}  // namespace vigil::cuda_probe
