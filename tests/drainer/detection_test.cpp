// Fail-slow detection inside the drainer: a GPU slower than its peers is drained although every
// absolute bound passes; confirmed after one report, unconfirmed after two; baselines survive a
// restart; a resumed node starts a new history.
#include <gtest/gtest.h>

#include "drainer_fixtures.h"
#include "fake_clock.h"
#include "fakes.h"
#include "temp_dir.h"
#include "vigil/drainer/drainer.h"

namespace vigil::drainer {
namespace {

using testing::FakeClock;
using testing::FakeSlurm;
using testing::make_report;
using testing::TempDir;

DrainerConfig config(const std::string& dir) {
  DrainerConfig c = testing::drainer_test_config(dir);
  c.kubernetes.enabled = false;
  return c;
}

CheckResult gemm(double gpu3, int repeats = 0) { return testing::gemm_result(gpu3, repeats); }

std::shared_ptr<FakeSlurm> cluster() { return testing::fake_cluster(4); }

bool drained(FakeSlurm& s, const std::string& node) {
  auto nodes = s.load_nodes();
  for (const auto& n : *nodes)
    if (n.name == node) return n.drain;
  return false;
}

TEST(Detection, a_gpu_12_percent_below_its_peers_confirmed_by_repeats_drains_after_one_report) {
  TempDir d;
  FakeClock clock;
  auto slurm = cluster();
  Drainer dr(config(d.str()), slurm, nullptr, clock);
  ASSERT_TRUE(dr.open().ok());
  ASSERT_TRUE(dr.ingest({make_report("gpu-1", "r1", {gemm(705, 2)})}).ok());
  dr.process_pending();
  dr.run_slurm_sink_once();
  ASSERT_TRUE(drained(*slurm, "gpu-1"));
  const auto s = dr.node("gpu-1");
  EXPECT_EQ(s->reason.rfind("vigil: gemm gpu3 gemm_bf16_tflops 705", 0), 0u) << s->reason;
  EXPECT_NE(s->reason.find("below its 7 peers"), std::string::npos) << s->reason;
  // The Node annotation and `vigil-drainer status` carry the verdict with its baseline.
  ASSERT_EQ(s->failing.size(), 1u);
  EXPECT_EQ(s->failing[0].check, "gpu_gemm");
  EXPECT_NE(s->failing[0].message.find("below its 7 peers"), std::string::npos)
      << s->failing[0].message;
  EXPECT_NE(dr.metrics_text().find("vigil_measurement_deviation_ratio{baseline=\"peers\""),
            std::string::npos);
}

TEST(Detection, an_unconfirmed_slow_gpu_warns_first_and_drains_on_the_second_report) {
  TempDir d;
  FakeClock clock;
  auto slurm = cluster();
  Drainer dr(config(d.str()), slurm, nullptr, clock);
  ASSERT_TRUE(dr.open().ok());
  ASSERT_TRUE(dr.ingest({make_report("gpu-1", "r1", {gemm(705)})}).ok());
  dr.process_pending();
  dr.run_slurm_sink_once();
  EXPECT_FALSE(drained(*slurm, "gpu-1"));
  EXPECT_EQ(dr.node("gpu-1")->checks.at("gpu_gemm").last_status, Status::kFail);
  auto second = make_report("gpu-1", "r2", {gemm(704)});
  second.start_time = "2026-11-21T11:00:00Z";
  second.end_time = "2026-11-21T11:01:00Z";
  ASSERT_TRUE(dr.ingest({second}).ok());
  dr.process_pending();
  dr.run_slurm_sink_once();
  EXPECT_TRUE(drained(*slurm, "gpu-1"));
}

TEST(Detection, a_suspicion_the_repeats_do_not_confirm_is_not_a_drain) {
  TempDir d;
  FakeClock clock;
  auto slurm = cluster();
  Drainer dr(config(d.str()), slurm, nullptr, clock);
  ASSERT_TRUE(dr.open().ok());
  auto r = make_report("gpu-1", "r1", {gemm(705)});
  r.checks[0].measurements[3].repeats = {800, 801};  // a transient dip: the re-runs are healthy
  ASSERT_TRUE(dr.ingest({r}).ok());
  dr.process_pending();
  dr.run_slurm_sink_once();
  EXPECT_FALSE(drained(*slurm, "gpu-1"));
  EXPECT_NE(dr.node("gpu-1")->checks.at("gpu_gemm").last_status, Status::kFail);
}

TEST(Detection, detection_disabled_keeps_the_absolute_floors_only) {
  TempDir d;
  FakeClock clock;
  auto slurm = cluster();
  auto cfg = config(d.str());
  cfg.detection.enabled = false;
  Drainer dr(cfg, slurm, nullptr, clock);
  ASSERT_TRUE(dr.open().ok());
  ASSERT_TRUE(dr.ingest({make_report("gpu-1", "r1", {gemm(705, 2)})}).ok());
  dr.process_pending();
  dr.run_slurm_sink_once();
  EXPECT_FALSE(drained(*slurm, "gpu-1"));
  EXPECT_EQ(dr.node("gpu-1")->checks.at("gpu_gemm").last_status, Status::kPass);
}

// The whole node slow (every GPU 15% down after a healthy history): peers see nothing, the
// node's own history does; and that history must survive a restart of the drainer.
TEST(Detection, history_survives_a_restart_and_catches_a_whole_node_step) {
  TempDir d;
  FakeClock clock;
  auto slurm = cluster();
  auto node_report = [](const std::string& run, int hour, double scale) {
    auto r = make_report("gpu-2", run, {gemm(800 * scale)});
    for (auto& m : r.checks[0].measurements) m.value = m.gpu == 3 ? m.value : m.value * scale;
    r.start_time =
        "2026-11-21T" + std::string(hour < 10 ? "0" : "") + std::to_string(hour) + ":00:00Z";
    r.end_time = r.start_time;
    return r;
  };
  {
    Drainer dr(config(d.str()), slurm, nullptr, clock);
    ASSERT_TRUE(dr.open().ok());
    for (int h = 1; h <= 4; ++h)
      ASSERT_TRUE(dr.ingest({node_report("h" + std::to_string(h), h, 1.0)}).ok());
    dr.process_pending();
    ASSERT_TRUE(dr.snapshot_now().ok());
    ASSERT_TRUE(dr.ingest({node_report("h5", 5, 1.0)}).ok());
    dr.process_pending();  // decided after the snapshot: replayed from the journal
  }
  Drainer dr(config(d.str()), slurm, nullptr, clock);
  const auto opened = dr.open();
  ASSERT_TRUE(opened.ok()) << opened.error().to_string();
  for (int h = 6; h <= 7; ++h)
    ASSERT_TRUE(dr.ingest({node_report("h" + std::to_string(h), h, 0.85)}).ok());
  dr.process_pending();
  dr.run_slurm_sink_once();
  EXPECT_TRUE(drained(*slurm, "gpu-2")) << dr.node("gpu-2")->note;
  EXPECT_NE(dr.node("gpu-2")->reason.find("below its last"), std::string::npos)
      << dr.node("gpu-2")->reason;
}

}  // namespace
}  // namespace vigil::drainer
