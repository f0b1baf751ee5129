// Peers, history (step, drift, the node's level), confirmation and learning, through the
// public Engine API.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <span>
#include <vector>

#include "detect_test_support.h"
#include "vigil/detect/detect.h"

namespace vigil::detect {

using testing::eight;
using testing::find;
using testing::judge_ok;
using testing::kHour;
using testing::kT0;
using testing::ReportBuilder;
using testing::seed_fleet;
using testing::test_config;

namespace {

// `n` healthy hourly reports of node "n1" (all GPUs ~800 TFLOP/s, NVLink 480 GB/s).
void healthy_history(Engine& e, int n, const std::string& node = "n1") {
  for (int i = 0; i < n; ++i) {
    judge_ok(e, ReportBuilder(node).gemm(eight(800)).nvlink_busbw(480), kT0 + i * kHour);
  }
}

// The history ring of n1's GEMM figure on `unit_id`, read from the snapshot.
std::vector<double> history_of(const Engine& e, const std::string& unit_id) {
  const nlohmann::json snap = e.snapshot();
  for (const auto& node : snap["nodes"]) {
    for (const auto& h : node["history"]) {
      if (node["node"] == "n1" && h["check"] == "gpu_gemm" && h["unit_id"] == unit_id) {
        return h["values"].get<std::vector<double>>();
      }
    }
  }
  return {};
}

}  // namespace

TEST(EnginePeers, one_slow_gpu_of_eight_fails_against_the_median_of_the_others) {
  Engine e(test_config());
  std::vector<double> g = eight(800);
  g[3] = 712;
  auto rv = judge_ok(e, ReportBuilder("n1").gemm(g), kT0);
  const Verdict* v = find(rv, "gpu_gemm", "gpu3");
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(v->status, Status::kFail);
  EXPECT_EQ(v->baseline, "peers");
  EXPECT_EQ(v->peers, 7);
  EXPECT_DOUBLE_EQ(v->baseline_value, 798);
  EXPECT_NEAR(v->deviation, (798.0 - 712) / 798, 1e-12);
  EXPECT_FALSE(v->confirmed);
  EXPECT_EQ(v->message, "gpu3 gemm_bf16_tflops 712 TFLOP/s, 11% below its 7 peers (798)");
  EXPECT_EQ(find(rv, "gpu_gemm", "gpu0")->status, Status::kPass);
  EXPECT_EQ(rv.worst(), Status::kFail);
  EXPECT_EQ(rv.worst_for("gpu_gemm")->unit_id, "gpu3");
}

TEST(EnginePeers, two_slow_gpus_of_eight_are_both_caught) {
  Engine e(test_config());
  std::vector<double> g = eight(800);
  g[2] = g[5] = 700;
  auto rv = judge_ok(e, ReportBuilder("n1").gemm(g), kT0);
  EXPECT_EQ(find(rv, "gpu_gemm", "gpu2")->status, Status::kFail);
  EXPECT_EQ(find(rv, "gpu_gemm", "gpu5")->status, Status::kFail);
  for (const char* ok : {"gpu0", "gpu1", "gpu3", "gpu4", "gpu6", "gpu7"}) {
    EXPECT_EQ(find(rv, "gpu_gemm", ok)->status, Status::kPass) << ok;
  }
}

TEST(EnginePeers, a_small_dip_warns_and_fewer_than_three_others_give_no_verdict) {
  Engine e(test_config());
  std::vector<double> g = eight(800);
  g[1] = 760;  // 4.8% below
  EXPECT_EQ(find(judge_ok(e, ReportBuilder("n1").gemm(g), kT0), "gpu_gemm", "gpu1")->status,
            Status::kWarn);
  auto rv = judge_ok(e, ReportBuilder("n2").gemm({800, 800, 600}), kT0);
  const Verdict* v = find(rv, "gpu_gemm", "gpu2");
  EXPECT_EQ(v->status, Status::kPass);
  EXPECT_EQ(v->baseline, "");
  EXPECT_EQ(v->message, "") << "pass verdicts carry no message";
}

TEST(EnginePeers, without_the_fleets_pooled_spread_the_allowance_doubles) {
  const std::vector<double> g{780, 790, 800, 696, 800, 800, 810, 820};  // gpu3 13% below
  Engine alone(test_config());  // the others' own spread: 1.85%; 2 x 4.5 x 1.85% = 16.7%
  const Verdict* v = find(judge_ok(alone, ReportBuilder("n1").gemm(g), kT0), "gpu_gemm", "gpu3");
  EXPECT_NE(v->status, Status::kFail);
  Engine with_fleet(test_config());
  seed_fleet(with_fleet, 25, kT0);  // pooled spread ~0.4%: the allowance is 4.5 x 1.85% = 8.3%
  auto rv = judge_ok(with_fleet, ReportBuilder("n1").gemm(g), kT0 + 60);
  EXPECT_EQ(find(rv, "gpu_gemm", "gpu3")->status, Status::kFail);
  EXPECT_EQ(find(rv, "gpu_gemm", "gpu3")->baseline, "peers");
}

TEST(EnginePeers, peers_margins_are_the_kinds_margins_scaled) {
  DetectConfig c = test_config();
  std::vector<double> g = eight(800);
  g[5] = 730;  // 8.5% below its peers: past the 6% fail margin, short of 1.5 x 6% = 9%
  Engine scaled(c);
  EXPECT_EQ(find(judge_ok(scaled, ReportBuilder("n1").gemm(g), kT0), "gpu_gemm", "gpu5")->status,
            Status::kWarn);
  c.cross_margin_scale = 1;
  Engine plain(c);
  EXPECT_EQ(find(judge_ok(plain, ReportBuilder("n1").gemm(g), kT0), "gpu_gemm", "gpu5")->status,
            Status::kFail);
}

TEST(EngineHistory, whole_node_slow_is_silent_to_peers_but_fails_against_history) {
  Engine e(test_config());
  healthy_history(e, 4);
  auto rv = judge_ok(e, ReportBuilder("n1").gemm(eight(700)).nvlink_busbw(430), kT0 + 4 * kHour);
  for (int g = 0; g < 8; ++g) {  // each GPU is where its peers and its node's level say
    const Verdict* v = find(rv, "gpu_gemm", "gpu" + std::to_string(g));
    EXPECT_EQ(v->status, Status::kPass) << g;
    EXPECT_EQ(v->peers, 7) << g;
    EXPECT_EQ(v->history, 4) << g;
  }
  const Verdict* node = find(rv, "gpu_gemm", "node");
  ASSERT_NE(node, nullptr);
  EXPECT_EQ(node->status, Status::kFail);
  EXPECT_EQ(node->baseline, "history");
  EXPECT_EQ(node->message,
            "8-gpu median gemm_bf16_tflops 699 TFLOP/s, 12% below its last 4 runs (799)");
  const Verdict* bw = find(rv, "nccl_allreduce_nvlink", "node");
  EXPECT_EQ(bw->status, Status::kFail);
  EXPECT_EQ(bw->message, "busbw 430 GB/s, 10% below its last 4 runs (480)");
  EXPECT_EQ(rv.worst_for("gpu_gemm")->unit_id, "node");
}

TEST(EngineHistory, a_gpu_that_was_fast_is_caught_by_its_history_when_peers_cannot_tell) {
  Engine e(test_config());
  std::vector<double> g = eight(800);
  g[4] = 870;  // a fast part: 9% above its peers
  for (int i = 0; i < 4; ++i) judge_ok(e, ReportBuilder("n1").gemm(g), kT0 + i * kHour);
  g[4] = 783;  // 10% slower than it was, 2% below its peers
  auto rv = judge_ok(e, ReportBuilder("n1").gemm(g), kT0 + 4 * kHour);
  const Verdict* v = find(rv, "gpu_gemm", "gpu4");
  EXPECT_EQ(v->status, Status::kFail);
  EXPECT_EQ(v->baseline, "history");
  EXPECT_EQ(v->message, "gpu4 gemm_bf16_tflops 783 TFLOP/s, 10% below its last 4 runs (870)");
  EXPECT_EQ(find(rv, "gpu_gemm", "node")->status, Status::kPass);
}

TEST(EngineHistory, a_slow_gpu_is_judged_against_its_history_at_the_nodes_current_level) {
  Engine e(test_config());
  healthy_history(e, 4);
  std::vector<double> g = eight(784);  // the whole node 2% lower (a warm room) ...
  g[1] = 700;                          // ... and gpu1 a further 10% lower
  auto rv = judge_ok(e, ReportBuilder("n1").gemm(g), kT0 + 4 * kHour);
  const Verdict* v = find(rv, "gpu_gemm", "gpu1");
  EXPECT_EQ(v->status, Status::kFail);
  EXPECT_NEAR(v->baseline_value, 802 * 0.98, 1.0);  // its history median at today's level
  EXPECT_EQ(find(rv, "gpu_gemm", "gpu0")->status, Status::kPass);
  EXPECT_EQ(find(rv, "gpu_gemm", "node")->status, Status::kPass);
}

TEST(EngineHistory, a_node_level_change_within_noise_is_not_applied) {
  Engine e(test_config());
  healthy_history(e, 4);
  std::vector<double> g = eight(792);  // the node 1% lower: less than half the 3% warn margin
  g[1] = 740;
  auto rv = judge_ok(e, ReportBuilder("n1").gemm(g), kT0 + 4 * kHour);
  const Verdict* v = find(rv, "gpu_gemm", "gpu1");
  EXPECT_EQ(v->baseline, "history");
  EXPECT_DOUBLE_EQ(v->baseline_value, 802);  // its own history median, not moved by 1%
  EXPECT_EQ(v->status, Status::kFail);       // 7.7% below it
}

TEST(EngineHistory, a_step_fails_and_a_slow_monotone_decline_warns_as_drift) {
  Engine step(test_config());
  for (int i = 0; i < 8; ++i)
    judge_ok(step, ReportBuilder("n1").nvlink_busbw(480), kT0 + i * kHour);
  auto s = judge_ok(step, ReportBuilder("n1").nvlink_busbw(430), kT0 + 8 * kHour);
  EXPECT_EQ(s.verdicts[0].status, Status::kFail);
  EXPECT_FALSE(s.verdicts[0].drifting);

  Engine drift(test_config());
  ReportVerdicts last;
  for (int i = 0; i < 9; ++i) {  // 0.5% of the start per run: 480 ... 460.8
    last = judge_ok(drift, ReportBuilder("n1").nvlink_busbw(480 - 2.4 * i), kT0 + i * kHour);
  }
  const Verdict& v = last.verdicts[0];
  EXPECT_EQ(v.status, Status::kWarn);
  EXPECT_TRUE(v.drifting);
  EXPECT_EQ(v.baseline, "history");
  EXPECT_EQ(v.message, "busbw 461 GB/s, drifting down 4.1% over 9 runs");
}

TEST(EngineHistory, the_history_centre_is_the_mean_without_the_lowest_and_highest_figure) {
  // Eight learned figures 460.8 ... 494.4 (one 4% low stray among them): the median would be
  // 480.5; the mean of the middle six (less noisy, and the stray is dropped) is 480.2.
  Engine e(test_config());
  const double values[] = {480, 484.8, 475.2, 489.6, 470.4, 481, 460.8, 494.4};
  for (int i = 0; i < 8; ++i)
    judge_ok(e, ReportBuilder("n1").nvlink_busbw(values[i]), kT0 + i * kHour);
  auto rv = judge_ok(e, ReportBuilder("n1").nvlink_busbw(480), kT0 + 8 * kHour);
  ASSERT_EQ(rv.verdicts[0].history, 8);
  const double middle_six = (470.4 + 475.2 + 480 + 481 + 484.8 + 489.6) / 6;
  EXPECT_NEAR(rv.verdicts[0].baseline_value, middle_six, 1e-9);

  Engine few(test_config());  // below five figures the centre is the median
  for (int i = 0; i < 4; ++i)
    judge_ok(few, ReportBuilder("n1").nvlink_busbw(values[i]), kT0 + i * kHour);
  rv = judge_ok(few, ReportBuilder("n1").nvlink_busbw(480), kT0 + 4 * kHour);
  EXPECT_NEAR(rv.verdicts[0].baseline_value, (480 + 484.8) / 2, 1e-9);
}

TEST(EngineHistory, noise_without_a_trend_is_not_drift) {
  Engine e(test_config());
  const double values[] = {480, 466, 482, 468, 479, 465, 481, 467, 478};
  ReportVerdicts last;
  for (int i = 0; i < 9; ++i) {
    last = judge_ok(e, ReportBuilder("n1").nvlink_busbw(values[i]), kT0 + i * kHour);
  }
  EXPECT_EQ(last.verdicts[0].status, Status::kPass);
  EXPECT_FALSE(last.verdicts[0].drifting);
}

TEST(EngineHistory, a_failing_unit_does_not_become_its_own_baseline) {
  Engine e(test_config());
  healthy_history(e, 4);
  for (int i = 0; i < 12; ++i) {  // 12 slow reports: more than the window of 8
    auto rv =
        judge_ok(e, ReportBuilder("n1").gemm(eight(700)).nvlink_busbw(400), kT0 + (4 + i) * kHour);
    ASSERT_EQ(find(rv, "gpu_gemm", "node")->status, Status::kFail) << i;
    EXPECT_EQ(find(rv, "gpu_gemm", "node")->history, 4) << i;
    EXPECT_EQ(find(rv, "gpu_gemm", "gpu0")->history, 4) << i;
    ASSERT_EQ(find(rv, "nccl_allreduce_nvlink", "node")->status, Status::kFail) << i;
    EXPECT_EQ(find(rv, "nccl_allreduce_nvlink", "node")->history, 4) << i;
  }
}

TEST(EngineHistory, learn_no_judges_without_learning) {
  Engine e(test_config());
  for (int i = 0; i < 5; ++i) {
    judge_ok(e, ReportBuilder("n1").gemm(eight(800)), kT0 + i * kHour, Learn::kNo);
  }
  auto rv = judge_ok(e, ReportBuilder("n1").gemm(eight(700)), kT0 + 5 * kHour);
  EXPECT_EQ(find(rv, "gpu_gemm", "gpu0")->history, 0);
  EXPECT_EQ(find(rv, "gpu_gemm", "gpu0")->status, Status::kPass);
}

TEST(EngineHistory, figures_below_their_floor_are_judged_but_never_learned) {
  Engine e(test_config());
  Threshold floor;
  floor.fail = 640;
  floor.unit = "TFLOP/s";
  for (int i = 0; i < 5; ++i) {
    NodeReport r = ReportBuilder("n1").gemm(eight(600));
    for (Measurement& m : r.checks[0].measurements) m.threshold = floor;
    judge_ok(e, r, kT0 + i * kHour);
  }
  auto rv = judge_ok(e, ReportBuilder("n1").gemm(eight(600)), kT0 + 5 * kHour);
  EXPECT_EQ(find(rv, "gpu_gemm", "gpu0")->history, 0);
}

TEST(EngineConfirmation, a_transient_dip_with_healthy_repeats_passes_and_is_not_learned) {
  Engine e(test_config());
  healthy_history(e, 6);
  auto samples = samples_from_report(
      ReportBuilder("n1").gemm({796, 802, 720, 804, 800, 796, 802, 798}), e.config());
  ASSERT_TRUE(attach_repeats(samples, "gpu_gemm", "gemm_bf16_tflops", "gpu2", {797, 799}));
  auto rv = e.judge(samples, kT0 + 6 * kHour);
  ASSERT_TRUE(rv.ok()) << rv.error().to_string();
  const Verdict* v = find(*rv, "gpu_gemm", "gpu2");
  EXPECT_EQ(v->status, Status::kPass);
  EXPECT_DOUBLE_EQ(v->value, 797);  // the median of 720, 797, 799
  EXPECT_EQ(v->repeats, 2);
  EXPECT_EQ(history_of(e, "gpu2"), (std::vector<double>{798, 798, 798, 798, 798, 798, 797}));
}

TEST(EngineConfirmation, a_transient_dip_without_repeats_is_an_unconfirmed_fail_not_learned) {
  Engine e(test_config());
  healthy_history(e, 6);
  auto dip = judge_ok(e, ReportBuilder("n1").gemm({796, 802, 720, 804, 800, 796, 802, 798}),
                      kT0 + 6 * kHour);
  EXPECT_EQ(find(dip, "gpu_gemm", "gpu2")->status, Status::kFail);
  EXPECT_FALSE(find(dip, "gpu_gemm", "gpu2")->confirmed);
  auto next = judge_ok(e, ReportBuilder("n1").gemm(eight(800)), kT0 + 7 * kHour);
  EXPECT_EQ(find(next, "gpu_gemm", "gpu2")->status, Status::kPass);
  EXPECT_EQ(find(next, "gpu_gemm", "gpu2")->history, 6) << "the dip entered history";
  EXPECT_EQ(find(next, "gpu_gemm", "gpu1")->history, 7);
}

TEST(EngineConfirmation, repeats_past_the_same_threshold_confirm_a_fail) {
  Engine e(test_config());
  std::vector<double> g = eight(800);
  g[3] = 700;
  auto samples = samples_from_report(ReportBuilder("n1").gemm(g), e.config());
  attach_repeats(samples, "gpu_gemm", "gemm_bf16_tflops", "gpu3", {702, 698});
  auto rv = e.judge(samples, kT0);
  ASSERT_TRUE(rv.ok());
  const Verdict* v = find(*rv, "gpu_gemm", "gpu3");
  EXPECT_EQ(v->status, Status::kFail);
  EXPECT_TRUE(v->confirmed);
  EXPECT_EQ(v->message,
            "gpu3 gemm_bf16_tflops 700 TFLOP/s, 12% below its 7 peers (798), 2 repeats agree");

  attach_repeats(samples, "gpu_gemm", "gemm_bf16_tflops", "gpu3", {702, 790});
  rv = e.judge(samples, kT0 + kHour);
  ASSERT_TRUE(rv.ok());
  EXPECT_EQ(find(*rv, "gpu_gemm", "gpu3")->status, Status::kFail);  // median 702
  EXPECT_FALSE(find(*rv, "gpu_gemm", "gpu3")->confirmed);
}

// A fresh engine learns `history` as the node's NVLink busbw, one report an hour; then judges
// `value` with its `repeats`.
ReportVerdicts busbw_after_history(std::span<const double> history, double value,
                                   std::vector<double> repeats) {
  Engine e(test_config());
  std::int64_t now = kT0;
  for (double h : history) judge_ok(e, ReportBuilder("n1").nvlink_busbw(h), now), now += kHour;
  auto samples = samples_from_report(ReportBuilder("n1").nvlink_busbw(value), e.config());
  attach_repeats(samples, "nccl_allreduce_nvlink", "busbw", "node", std::move(repeats));
  auto rv = e.judge(samples, now);
  EXPECT_TRUE(rv.ok());
  if (!rv.ok() || rv->verdicts.empty()) {
    ADD_FAILURE() << "no verdict";
    return {};
  }
  return *rv;
}

// A ring with ~0.6% run-to-run noise around 480.
constexpr double kBusbwRing[] = {480, 484.8, 475.2, 479, 481, 477, 483, 480};

TEST(EngineConfirmation, the_mean_of_all_runs_confirms_when_one_repeat_falls_just_short) {
  // Runs 8.3%, 7.9%, 7.3% and 5.6% below the ring: one repeat is short of the 6% fail margin,
  // so "every repeat past it" does not hold, but the mean (7.3%) minus one standard error
  // (~0.6% x sqrt(1/4 + 1/8) ~ 0.4%) is past it.
  auto rv = busbw_after_history(kBusbwRing, 440, {442, 445, 453});
  ASSERT_FALSE(rv.verdicts.empty());
  EXPECT_EQ(rv.verdicts[0].status, Status::kFail);
  EXPECT_EQ(rv.verdicts[0].baseline, "history");
  EXPECT_TRUE(rv.verdicts[0].confirmed) << rv.verdicts[0].message;

  // A figure just past the margin: runs 6.7%, 6.25%, 5.8%, 6.0% below: the median fails, but
  // neither every repeat nor the mean minus its standard error (~5.8%) is past 6%.
  rv = busbw_after_history(kBusbwRing, 448, {450, 452, 451});
  ASSERT_FALSE(rv.verdicts.empty());
  EXPECT_EQ(rv.verdicts[0].status, Status::kFail);
  EXPECT_FALSE(rv.verdicts[0].confirmed);
}

TEST(EngineConfirmation, the_mean_confirms_only_with_five_figures_of_history_and_a_dip_never_does) {
  // Four figures: too few to know the noise; every repeat must agree.
  auto rv = busbw_after_history(std::span(kBusbwRing).first(4), 440, {442, 445, 453});
  ASSERT_FALSE(rv.verdicts.empty());
  EXPECT_EQ(rv.verdicts[0].status, Status::kFail);
  EXPECT_FALSE(rv.verdicts[0].confirmed);

  // One run 15% low, its repeats healthy: not even a fail.
  rv = busbw_after_history(std::span(kBusbwRing).first(5), 408, {479, 481, 478});
  ASSERT_FALSE(rv.verdicts.empty());
  EXPECT_EQ(rv.verdicts[0].status, Status::kPass);
  EXPECT_FALSE(rv.verdicts[0].confirmed);
}

}  // namespace vigil::detect

namespace vigil::detect {

// gpu_soak (the qualify suite): its figures are judged against the node's other GPUs with the
// catalog's defaults, like gpu_gemm's (docs/qualify.md).
TEST(EnginePeers, a_gpu_that_clocks_low_among_its_peers_in_a_soak_fails_and_the_others_pass) {
  Engine e(DetectConfig::defaults());
  std::vector<double> clocks = eight(1750), tflops = eight(660);
  clocks[5] = 1560;  // 11% below the other seven
  tflops[5] = 590;
  auto rv = judge_ok(e,
                     ReportBuilder("n1")
                         .gpus("gpu_soak", "soak_sm_clock", "MHz", clocks)
                         .gpus("gpu_soak", "soak_tflops", "TFLOP/s", tflops),
                     kT0);
  int failed = 0;
  for (const Verdict& v : rv.verdicts) {
    if (v.check != "gpu_soak") continue;
    if (v.unit_id == "gpu5") {
      EXPECT_EQ(v.status, Status::kFail) << v.message;
      EXPECT_EQ(v.baseline, "peers");
      ++failed;
    } else {
      EXPECT_EQ(v.status, Status::kPass) << v.message;
    }
  }
  EXPECT_EQ(failed, 2);  // its clock and its throughput
}

// The qualify suite's PCIe figure with both directions at once (gpu_pcie_bw, compiled, not run on
// a GPU): a pcie metric of the catalogue, judged against the node's other GPUs like h2d. The
// figures are the model's, not measured: 100 GB/s for seven GPUs, one GPU 15% lower.
TEST(EnginePeers, a_gpu_slow_with_pcie_loaded_both_ways_fails_among_its_peers) {
  Engine e(DetectConfig::defaults());
  std::vector<double> both = eight(100);
  both[2] = 85;
  auto rv =
      judge_ok(e, ReportBuilder("n1").gpus("gpu_pcie_bw", "bidir_bandwidth", "GB/s", both), kT0);
  int failed = 0;
  for (const Verdict& v : rv.verdicts) {
    if (v.check != "gpu_pcie_bw") continue;
    EXPECT_EQ(v.status, v.unit_id == "gpu2" ? Status::kFail : Status::kPass) << v.message;
    failed += v.status == Status::kFail;
  }
  EXPECT_EQ(failed, 1);
}

}  // namespace vigil::detect
