// How per-GPU outcomes of a CUDA probe become one result (checks/src/cuda/probe_result.h).
#include "cuda/probe_result.h"

#include <gtest/gtest.h>

#include <string>

namespace vigil::cuda_probe {
namespace {

SkuConfig h100_like() {
  SkuConfig sku;
  sku.name = "TEST-H100";
  Threshold hbm;
  hbm.op = Op::kGe;
  hbm.fail = 2400;
  hbm.warn = 2700;
  hbm.unit = "GB/s";
  sku.thresholds["gpu_hbm"]["hbm_bandwidth"] = hbm;
  return sku;
}

CheckResult hbm_result(const CheckContext& ctx, std::initializer_list<double> per_gpu) {
  CheckResult r;
  r.check = "gpu_hbm";
  int gpu = 0;
  for (double v : per_gpu) add_measurement(r, ctx, "hbm_bandwidth", v, "GB/s", gpu++);
  return r;
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

TEST(ProbeResult, unknown_sku_reports_figures_and_passes_however_low) {
  CheckContext ctx;  // sku == nullptr
  CheckResult r = finish_probe_result(ctx, hbm_result(ctx, {3010.0, 12.5}), 2, {}, {});
  EXPECT_EQ(r.status, Status::kPass);
  ASSERT_EQ(r.measurements.size(), 2u);
  EXPECT_FALSE(r.measurements[1].threshold);
  EXPECT_TRUE(contains(r.message, "2 GPUs")) << r.message;
  EXPECT_TRUE(contains(r.message, "min 12.5 GB/s (gpu 1)")) << r.message;
  EXPECT_TRUE(contains(r.message, "unknown SKU")) << r.message;
}

TEST(ProbeResult, a_gpu_below_the_sku_fail_threshold_fails_with_a_measurement_fault_code) {
  SkuConfig sku = h100_like();
  CheckContext ctx;
  ctx.sku = &sku;
  CheckResult r = finish_probe_result(ctx, hbm_result(ctx, {3000.0, 1500.0, 2990.0}), 3, {}, {});
  EXPECT_EQ(r.status, Status::kFail);
  EXPECT_EQ(r.fault_code, "VIGIL-CUDA-HBM-BANDWIDTH");
  EXPECT_EQ(r.measurements[1].status(), Status::kFail);
  EXPECT_FALSE(contains(r.message, "unknown SKU")) << r.message;
}

TEST(ProbeResult, a_gpu_in_the_warn_band_warns) {
  SkuConfig sku = h100_like();
  CheckContext ctx;
  ctx.sku = &sku;
  CheckResult r = finish_probe_result(ctx, hbm_result(ctx, {3000.0, 2500.0}), 2, {}, {});
  EXPECT_EQ(r.status, Status::kWarn);
}

TEST(ProbeResult, a_cuda_call_failing_on_one_gpu_is_an_error_that_keeps_the_other_figures) {
  SkuConfig sku = h100_like();
  CheckContext ctx;
  ctx.sku = &sku;
  std::vector<GpuFailure> failures = {
      {2, Error{"cudaErrorMemoryAllocation: out of memory", "device_alloc(plan.bytes)"}}};
  CheckResult r = finish_probe_result(ctx, hbm_result(ctx, {3000.0, 3010.0}), 3, failures, {});
  EXPECT_EQ(r.status, Status::kError);
  EXPECT_EQ(r.fault_code, "VIGIL-CUDA-CALL");
  EXPECT_TRUE(contains(r.message, "gpu 2: device_alloc(plan.bytes): cudaErrorMemoryAllocation"))
      << r.message;
  EXPECT_EQ(r.measurements.size(), 2u);
}

TEST(ProbeResult, a_fail_on_one_gpu_is_not_hidden_by_an_error_on_another) {
  SkuConfig sku = h100_like();
  CheckContext ctx;
  ctx.sku = &sku;
  std::vector<GpuFailure> failures = {{1, Error{"cudaErrorLaunchFailure: x", "copy_kernel"}}};
  CheckResult r = finish_probe_result(ctx, hbm_result(ctx, {1000.0}), 2, failures, {});
  EXPECT_EQ(r.status, Status::kFail);
  EXPECT_EQ(r.fault_code, "VIGIL-CUDA-HBM-BANDWIDTH");
  EXPECT_TRUE(contains(r.message, "could not measure gpu 1")) << r.message;
}

TEST(ProbeResult, an_uncorrectable_ecc_error_during_a_probe_fails_the_node) {
  CheckContext ctx;
  std::vector<GpuFailure> failures = {
      {5, Error{"cudaErrorECCUncorrectable: uncorrectable ECC error encountered",
                "cudaStreamSynchronize(stream.get())"}}};
  CheckResult r = finish_probe_result(ctx, hbm_result(ctx, {3000.0}), 8, failures, {});
  EXPECT_EQ(r.status, Status::kFail);
  EXPECT_EQ(r.fault_code, "VIGIL-CUDA-ECC-UNCORRECTABLE");
  EXPECT_TRUE(contains(r.message, "gpu 5")) << r.message;
}

TEST(ProbeResult, operator_notes_are_appended_to_the_message) {
  CheckContext ctx;
  CheckResult r = finish_probe_result(ctx, hbm_result(ctx, {3000.0}), 1, {},
                                      {"gpu 0: host buffer not NUMA-bound (x)"});
  EXPECT_EQ(r.status, Status::kPass);
  EXPECT_TRUE(contains(r.message, "1 GPU: ")) << r.message;
  EXPECT_TRUE(contains(r.message, "not NUMA-bound")) << r.message;
}

TEST(ProbeResult, memtest_mismatches_fail_even_without_a_sku) {
  CheckContext ctx;  // unknown SKU
  CheckResult r;
  r.check = "gpu_memtest";
  add_mismatches(r, ctx, 0, "memtest_errors", 0, "16384 MiB", "");
  add_mismatches(r, ctx, 3, "memtest_errors", 12, "16384 MiB",
                 "first in pass random at byte offset 0x40");
  r = finish_probe_result(ctx, std::move(r), 8, {}, {});
  EXPECT_EQ(r.status, Status::kFail);
  EXPECT_EQ(r.fault_code, "VIGIL-CUDA-MEMTEST-ERRORS");
  EXPECT_EQ(r.measurements[0].status(), Status::kPass);
  EXPECT_EQ(r.measurements[1].value, 12.0);
  EXPECT_TRUE(contains(r.message, "gpu 3: 12 mismatching words in 16384 MiB")) << r.message;
  EXPECT_TRUE(contains(r.message, "byte offset 0x40")) << r.message;
}

TEST(ProbeResult, memtest_without_mismatches_passes) {
  CheckContext ctx;
  CheckResult r;
  r.check = "gpu_memtest";
  for (int gpu = 0; gpu < 8; ++gpu)
    add_mismatches(r, ctx, gpu, "memtest_errors", 0, "16384 MiB", "");
  r = finish_probe_result(ctx, std::move(r), 8, {}, {});
  EXPECT_EQ(r.status, Status::kPass);
  EXPECT_EQ(r.fault_code, "");
}

CheckResult gemm_figures(const std::vector<double>& tflops) {
  CheckResult r;
  r.check = "gpu_gemm";
  for (size_t g = 0; g < tflops.size(); ++g) {
    Measurement m;
    m.name = "gemm_bf16_tflops";
    m.unit = "TFLOP/s";
    m.gpu = static_cast<int>(g);
    m.value = tflops[g];
    r.measurements.push_back(m);
  }
  return r;
}

TEST(Confirmation, a_gpu_slower_than_its_peers_is_measured_twice_more) {
  const auto cfg = detect::DetectConfig::defaults();
  auto plan = plan_repeats(gemm_figures({800, 801, 799, 704, 802, 800, 798, 801}), cfg);
  ASSERT_EQ(plan.size(), 1u);
  EXPECT_EQ(plan.at(3), 2);
  EXPECT_TRUE(plan_repeats(gemm_figures({800, 801, 799, 797, 802, 800, 798, 801}), cfg).empty());
}

TEST(Confirmation, the_budget_bounds_the_extra_runs_worst_gpu_first) {
  const auto cfg = detect::DetectConfig::defaults();
  // Three slow GPUs of eight: the budget is 4 extra runs, so the two worst are repeated.
  auto plan = plan_repeats(gemm_figures({800, 650, 799, 704, 802, 690, 798, 801}), cfg);
  ASSERT_EQ(plan.size(), 2u);
  EXPECT_EQ(plan.at(1), 2);
  EXPECT_EQ(plan.at(5), 2);
  EXPECT_EQ(plan.count(3), 0u);
}

CheckResult with_floor(CheckResult r, double fail, double warn) {
  Threshold t;
  t.op = Op::kGe;
  t.fail = fail;
  t.warn = warn;
  t.unit = "TFLOP/s";
  for (auto& m : r.measurements) m.threshold = t;
  return r;
}

TEST(Confirmation, a_whole_node_below_its_sku_bound_repeats_every_gpu_twice) {
  const auto cfg = detect::DetectConfig::defaults();
  // Every GPU ~10% slow: no peer stands out, but most GPUs break the SKU's warn bound (720).
  auto plan = plan_repeats(
      with_floor(gemm_figures({716, 719, 712, 714, 718, 715, 717, 713}), 640, 720), cfg);
  ASSERT_EQ(plan.size(), 8u);
  for (const auto& [gpu, times] : plan) EXPECT_EQ(times, 2) << "gpu " << gpu;
  // Half or fewer below the bound: the peers rule (and its budget) decides, as before.
  auto some = plan_repeats(
      with_floor(gemm_figures({716, 719, 712, 714, 800, 801, 799, 802}), 640, 720), cfg);
  EXPECT_EQ(some.size(), 2u);  // two GPUs: the budget of four extra runs
  // A healthy node within its bounds: nothing.
  EXPECT_TRUE(plan_repeats(
                  with_floor(gemm_figures({800, 801, 799, 797, 802, 800, 798, 801}), 640, 720), cfg)
                  .empty());
}

GpuHistory gemm_history(const std::vector<double>& per_gpu, std::size_t runs) {
  GpuHistory h;
  for (size_t g = 0; g < per_gpu.size(); ++g)
    h[{"gemm_bf16_tflops", static_cast<int>(g)}] = std::vector<double>(runs, per_gpu[g]);
  return h;
}

TEST(Confirmation, a_whole_node_that_stepped_down_from_its_own_history_repeats_every_gpu) {
  const auto cfg = detect::DetectConfig::defaults();
  // Every GPU 10% below its own history (~800) yet above the SKU's warn bound (700): no peer
  // stands out and no bound is broken; only the history shows the step.
  const auto history = gemm_history({800, 801, 799, 800, 802, 800, 798, 801}, 5);
  const CheckResult slow =
      with_floor(gemm_figures({721, 720, 719, 722, 721, 720, 718, 721}), 600, 700);
  EXPECT_TRUE(plan_repeats(slow, cfg).empty()) << "without history nothing looks wrong";
  auto plan = plan_repeats(slow, cfg, history);
  ASSERT_EQ(plan.size(), 8u);
  for (const auto& [gpu, times] : plan) EXPECT_EQ(times, 2) << "gpu " << gpu;
  // Fewer than three remembered figures: no history yet, nothing planned.
  EXPECT_TRUE(
      plan_repeats(slow, cfg, gemm_history({800, 801, 799, 800, 802, 800, 798, 801}, 2)).empty());
  // The same node at its usual level: nothing.
  EXPECT_TRUE(
      plan_repeats(with_floor(gemm_figures({799, 802, 800, 800, 801, 799, 799, 800}), 600, 700),
                   cfg, history)
          .empty());
}

TEST(Confirmation, one_gpu_below_its_own_history_is_a_suspect_within_the_budget) {
  const auto cfg = detect::DetectConfig::defaults();
  // GPU 5 was always the fastest (840); 800 is in line with its peers but 4.8% below its past.
  auto plan = plan_repeats(gemm_figures({800, 801, 799, 800, 802, 800, 798, 801}), cfg,
                           gemm_history({800, 801, 799, 800, 802, 840, 798, 801}, 4));
  ASSERT_EQ(plan.size(), 1u);
  EXPECT_EQ(plan.at(5), 2);
}

TEST(Confirmation, peers_suspicion_uses_the_engines_peers_warn_margin) {
  const auto cfg = detect::DetectConfig::defaults();
  // 5% below its peers: past the kind's 4% warn margin but not the peers' 6% (4% x 1.5), the
  // engine's own peers warn margin. Healthy silicon spreads this far (docs/detection.md).
  EXPECT_TRUE(plan_repeats(gemm_figures({800, 801, 799, 760, 802, 800, 798, 801}), cfg).empty());
  EXPECT_EQ(plan_repeats(gemm_figures({800, 801, 799, 748, 802, 800, 798, 801}), cfg).size(), 1u);
}

TEST(Confirmation, a_gpu_slow_next_to_its_peers_but_like_its_own_history_is_not_repeated) {
  const auto cfg = detect::DetectConfig::defaults();
  // gpu3 has always run 7% below its peers: healthy slow silicon, nothing to confirm.
  const auto history = gemm_history({800, 801, 799, 744, 802, 800, 798, 801}, 5);
  EXPECT_TRUE(
      plan_repeats(gemm_figures({800, 801, 799, 745, 802, 800, 798, 801}), cfg, history).empty());
  // Past the peers fail margin (9%) it is confirmed even so: the engine's peers would fail it.
  EXPECT_EQ(plan_repeats(gemm_figures({800, 801, 799, 720, 802, 800, 798, 801}), cfg,
                         gemm_history({800, 801, 799, 722, 802, 800, 798, 801}, 5))
                .size(),
            1u);
  // Without a history of its own the peers decide.
  EXPECT_EQ(plan_repeats(gemm_figures({800, 801, 799, 745, 802, 800, 798, 801}), cfg).size(), 1u);
}

TEST(Confirmation, only_healthy_figures_join_a_gpus_history) {
  const auto cfg = detect::DetectConfig::defaults();
  const auto history = gemm_history({800, 800, 800, 800, 800, 800, 800, 800}, 4);
  // GPU 2 is 12% below its history and its peers (past the fail margin); GPU 6 breaks the SKU
  // fail bound; GPU 4's figure is the median of its run and repeats (780).
  CheckResult r = with_floor(gemm_figures({800, 801, 704, 799, 760, 802, 590, 800}), 600, 650);
  r.measurements[4].repeats = {780, 790};
  auto learned = learnable_figures(r, history, cfg);
  std::map<int, double> by_gpu;
  for (const auto& f : learned) {
    EXPECT_EQ(f.measurement, "gemm_bf16_tflops");
    by_gpu[f.gpu] = f.value;
  }
  EXPECT_EQ(by_gpu.count(2), 0u);
  EXPECT_EQ(by_gpu.count(6), 0u);
  EXPECT_EQ(by_gpu.at(4), 780);
  EXPECT_EQ(by_gpu.size(), 6u);
  // With no history, a figure past the fail margin below its peers is still not learned.
  auto first = learnable_figures(gemm_figures({800, 801, 704, 799, 802, 800, 798, 801}), {}, cfg);
  EXPECT_EQ(first.size(), 7u);
  for (const auto& f : first) EXPECT_NE(f.gpu, 2);
  EXPECT_EQ(gpu_history_key("gemm_bf16_tflops", 3), "gemm_bf16_tflops/gpu3");
}

TEST(Confirmation, repeats_go_to_the_measurement_of_the_same_gpu) {
  CheckResult r = gemm_figures({800, 801, 799, 704});
  add_repeats(r, gemm_figures({810, 811, 812, 706}), 3);
  add_repeats(r, gemm_figures({810, 811, 812, 703}), 3);
  EXPECT_EQ(r.measurements[3].repeats, (std::vector<double>{706, 703}));
  EXPECT_TRUE(r.measurements[0].repeats.empty());
}

}  // namespace
}  // namespace vigil::cuda_probe
