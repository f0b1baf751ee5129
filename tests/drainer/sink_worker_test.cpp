// The one sink worker that serves both sinks: its own backoff and retry policy per sink, and
// the outcomes it applies (only the Drainer writes node state; sinks report).
#include <gtest/gtest.h>

#include <chrono>
#include <regex>
#include <thread>

#include "drainer_fixtures.h"
#include "fake_clock.h"
#include "fakes.h"
#include "temp_dir.h"
#include "vigil/drainer/drainer.h"

namespace vigil::drainer {
namespace {

using namespace testing::drainer_short;

// Failed Kubernetes attempts so far, one per intent tried.
int kube_errors(Drainer& dr) {
  static const std::regex re(
      R"re(vigil_actions_total\{action="annotate",outcome="error",sink="kubernetes"\} (\d+))re");
  const std::string text = dr.metrics_text();
  std::smatch m;
  return std::regex_search(text, m, re) ? std::stoi(m[1]) : 0;
}

// Failed Slurm drain attempts so far, one per intent tried.
int slurm_errors(Drainer& dr) {
  static const std::regex re(
      R"re(vigil_actions_total\{action="drain",outcome="error",sink="slurm"\} (\d+))re");
  const std::string text = dr.metrics_text();
  std::smatch m;
  return std::regex_search(text, m, re) ? std::stoi(m[1]) : 0;
}

bool wait_for(const std::function<bool()>& done, std::chrono::milliseconds limit) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

// The Kubernetes lane backs off 500 ms, 1 s, 2 s, ... while the API fails; the Slurm lane, served
// by the same worker code, keeps draining at once meanwhile.
TEST(SinkWorker, a_kubernetes_failure_backs_off_only_the_kubernetes_sink) {
  TempDir d;
  FakeClock clock;
  auto slurm = cluster(4);
  auto kube = std::make_shared<FakeKube>();
  kube->fail = true;
  Drainer dr(test_config(d.str()), slurm, kube, clock);
  ASSERT_TRUE(dr.open().ok());
  dr.start();
  ASSERT_TRUE(dr.ingest({bad("gpu-0", "a")}).ok());
  ASSERT_TRUE(wait_for([&] { return slurm->get("gpu-0").drain; }, std::chrono::seconds(10)));
  // Three failed tries (at about 0, 0.5 and 1.5 s): the next one is 2 s away.
  ASSERT_TRUE(wait_for([&] { return kube_errors(dr) >= 3; }, std::chrono::seconds(10)));
  const int errors = kube_errors(dr);
  EXPECT_EQ(errors, 3) << "the Kubernetes sink retried without backing off";
  ASSERT_TRUE(dr.ingest({bad("gpu-1", "a")}).ok());
  ASSERT_TRUE(wait_for([&] { return slurm->get("gpu-1").drain; }, std::chrono::seconds(10)));
  // Slurm acted while Kubernetes was still waiting out its backoff: not one try meanwhile.
  EXPECT_EQ(kube_errors(dr), errors);
  EXPECT_EQ(dr.pending(SinkKind::kSlurm), 0u);
  EXPECT_EQ(dr.pending(SinkKind::kKubernetes), 2u);
  kube->fail = false;
  EXPECT_TRUE(
      wait_for([&] { return dr.pending(SinkKind::kKubernetes) == 0; }, std::chrono::seconds(10)));
  EXPECT_EQ(kube->annotations_of("gpu-1")["vigil.dev/state"], "drained");
  dr.stop();
}

// The other way round: while slurmctld is unreachable the Slurm lane waits out its (here very
// long) backoff, and annotations go on at once.
TEST(SinkWorker, a_slurm_outage_backs_off_only_the_slurm_sink) {
  TempDir d;
  FakeClock clock;
  auto slurm = cluster(4);
  auto kube = std::make_shared<FakeKube>();
  auto cfg = test_config(d.str());
  cfg.slurm.retry_initial_ms = cfg.slurm.retry_max_ms = 60000;
  slurm->reachable = false;
  Drainer dr(cfg, slurm, kube, clock);
  ASSERT_TRUE(dr.open().ok());
  dr.start();
  ASSERT_TRUE(dr.ingest({bad("gpu-0", "a")}).ok());
  ASSERT_TRUE(wait_for([&] { return slurm_errors(dr) >= 1; }, std::chrono::seconds(10)));
  ASSERT_TRUE(
      wait_for([&] { return kube->annotations_of("gpu-0")["vigil.dev/state"] == "drained"; },
               std::chrono::seconds(10)));
  // Workers re-enter their wait at least once a second: by now the Kubernetes worker has done
  // so since the Slurm batch failed (and would be waiting out a backoff it wrongly shared).
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  ASSERT_TRUE(dr.ingest({bad("gpu-1", "a")}).ok());
  EXPECT_TRUE(
      wait_for([&] { return kube->annotations_of("gpu-1")["vigil.dev/state"] == "drained"; },
               std::chrono::seconds(10)))
      << "the Kubernetes sink waited for the Slurm sink's backoff";
  EXPECT_EQ(slurm_errors(dr), 1);  // no Slurm retry within its 60 s backoff
  EXPECT_EQ(dr.pending(SinkKind::kSlurm), 2u);
  EXPECT_EQ(dr.pending(SinkKind::kKubernetes), 0u);
  dr.stop();
  slurm->reachable = true;
  EXPECT_EQ(dr.run_slurm_sink_once(), 0);
  EXPECT_TRUE(slurm->get("gpu-0").drain);
  EXPECT_TRUE(slurm->get("gpu-1").drain);
}

TEST(SinkWorker, kubernetes_gives_up_after_8_failed_attempts_and_slurm_never_does) {
  TempDir d;
  FakeClock clock;
  auto slurm = cluster(4);
  auto kube = std::make_shared<FakeKube>();
  kube->fail = true;
  slurm->reachable = false;
  Drainer dr(test_config(d.str()), slurm, kube, clock);
  ASSERT_TRUE(dr.open().ok());
  ASSERT_TRUE(dr.ingest({bad("gpu-2", "a")}).ok());
  dr.process_pending();
  for (int attempt = 1; attempt < 8; ++attempt) {
    EXPECT_EQ(dr.run_kube_sink_once(), 1) << "attempt " << attempt;
    EXPECT_EQ(dr.run_slurm_sink_once(), 1) << "attempt " << attempt;
  }
  EXPECT_EQ(dr.run_kube_sink_once(), 0);  // the 8th failure: given up, nothing left
  EXPECT_EQ(dr.pending(SinkKind::kKubernetes), 0u);
  EXPECT_EQ(kube_errors(dr), 8);
  for (int attempt = 8; attempt < 12; ++attempt) EXPECT_EQ(dr.run_slurm_sink_once(), 1);
  EXPECT_EQ(dr.pending(SinkKind::kSlurm), 1u);
  slurm->reachable = true;
  EXPECT_EQ(dr.run_slurm_sink_once(), 0);
  EXPECT_TRUE(slurm->get("gpu-2").drain);
}

// A drain the Slurm sink did not issue (an admin drained the node first) is corrected in the
// node's state by the Drainer, but only once no newer Slurm intent for the node is pending: a
// decision made while the sink was acting stands.
TEST(SinkWorker, a_skipped_drain_does_not_undo_a_newer_pending_decision) {
  TempDir d;
  FakeClock clock;
  auto slurm = cluster(4);
  Drainer dr(test_config(d.str()), slurm, nullptr, clock);
  ASSERT_TRUE(dr.open().ok());
  slurm->reachable = false;  // decided without Slurm's view
  // Known nodes of the SKU: the breaker's group, so that two drains of gpu-1 fit its cap.
  ASSERT_TRUE(dr.ingest({good("gpu-0", "a"), good("gpu-2", "a"), good("gpu-3", "a")}).ok());
  ASSERT_TRUE(dr.ingest({bad("gpu-1", "a")}).ok());
  dr.process_pending();
  const std::string reason = dr.node("gpu-1")->reason;
  slurm->reachable = true;
  slurm->set("gpu-1", [](slurm::SlurmNodeInfo& n) {
    n.drain = true;
    n.reason = "admin: x";
  });
  // While the sink holds its table (which shows the admin drain), the operator resumes the node
  // and a new failing report drains it again with the same reason: two newer Slurm intents.
  slurm->after_read = [&] {
    slurm->reachable = false;
    auto r = dr.resume("gpu-1");
    EXPECT_TRUE(r.ok()) << r.error().to_string();
    EXPECT_TRUE(dr.ingest({bad("gpu-1", "b")}).ok());
    dr.process_pending();
    slurm->reachable = true;
  };
  EXPECT_EQ(dr.run_slurm_sink_once(), 0);
  EXPECT_EQ(dr.pending(SinkKind::kSlurm), 2u);
  EXPECT_TRUE(dr.node("gpu-1")->drained_by_vigil);  // the newer decision stands
  EXPECT_EQ(dr.node("gpu-1")->reason, reason);
  EXPECT_EQ(dr.node("gpu-1")->last_action, Action::kDrain);
  // The newest intent is judged on the admin drain too: now the Drainer corrects the node.
  EXPECT_EQ(dr.run_slurm_sink_once(), 0);
  EXPECT_EQ(dr.pending(SinkKind::kSlurm), 0u);
  EXPECT_FALSE(dr.node("gpu-1")->drained_by_vigil);
  EXPECT_EQ(dr.node("gpu-1")->last_action, Action::kDrainSkipped);
  EXPECT_EQ(dr.node("gpu-1")->state, NodeState::kDrained);
  EXPECT_TRUE(slurm->calls_copy().empty());
  EXPECT_EQ(slurm->get("gpu-1").reason, "admin: x");
}

}  // namespace
}  // namespace vigil::drainer
