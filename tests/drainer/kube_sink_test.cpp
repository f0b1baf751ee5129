// The Kubernetes sink with an in-memory API: annotations, condition and taint follow the node's
// state, its failures never block Slurm, the node name comes from the report or a pod, and the
// repair ladder's annotations follow the intent's event.
#include "kube_sink.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <thread>

#include "drainer_fixtures.h"
#include "fake_clock.h"
#include "fakes.h"
#include "temp_dir.h"
#include "vigil/drainer/drainer.h"

namespace vigil::drainer {
namespace {

using namespace testing::drainer_short;

TEST(Drainer, kubernetes_annotations_follow_the_node_state) {
  TempDir d;
  FakeClock clock;
  auto kube = std::make_shared<FakeKube>();
  Drainer dr(test_config(d.str()), cluster(4), kube, clock);
  ASSERT_TRUE(dr.open().ok());
  ASSERT_TRUE(dr.ingest({bad("gpu-2", "a"), good("gpu-1", "a")}).ok());
  dr.process_pending();
  EXPECT_EQ(dr.run_kube_sink_once(), 0);
  auto a = kube->annotations_of("gpu-2");
  EXPECT_EQ(a["vigil.dev/state"], "drained");
  EXPECT_TRUE(a["vigil.dev/reason"].starts_with("vigil: "));
  EXPECT_EQ(a["vigil.dev/last-check"], "2026-11-21T10:01:00Z");
  auto failing = nlohmann::json::parse(a["vigil.dev/failing"]);
  ASSERT_EQ(failing.size(), 1u);
  EXPECT_EQ(failing[0]["check"], "nvml_ecc");
  EXPECT_EQ(failing[0]["value"], 2);
  auto h = kube->annotations_of("gpu-1");
  EXPECT_EQ(h["vigil.dev/state"], "healthy");
  EXPECT_EQ(h.count("vigil.dev/reason"), 0u);
  EXPECT_EQ(kube->conditions["gpu-2"].status, "False");
  EXPECT_EQ(kube->conditions["gpu-1"].status, "True");
}

TEST(Drainer, optional_taint_is_set_while_drained_and_removed_on_resume) {
  TempDir d;
  FakeClock clock;
  auto slurm = cluster(4);
  auto kube = std::make_shared<FakeKube>();
  auto cfg = test_config(d.str());
  cfg.kubernetes.taint = true;
  Drainer dr(cfg, slurm, kube, clock);
  ASSERT_TRUE(dr.open().ok());
  ASSERT_TRUE(dr.ingest({bad("gpu-2", "a"), good("gpu-1", "a")}).ok());
  dr.process_pending();
  dr.run_slurm_sink_once();
  EXPECT_EQ(dr.run_kube_sink_once(), 0);
  ASSERT_EQ(kube->taints["gpu-2"].count("vigil.dev/unhealthy"), 1u);
  EXPECT_EQ(kube->taints["gpu-2"]["vigil.dev/unhealthy"].effect, "NoSchedule");
  EXPECT_EQ(kube->taints["gpu-1"].count("vigil.dev/unhealthy"), 0u);
  for (const char* run : {"b", "c"}) {
    ASSERT_TRUE(dr.ingest({good("gpu-2", run)}).ok());
    dr.process_pending();
    dr.run_slurm_sink_once();
    dr.run_kube_sink_once();
  }
  EXPECT_FALSE(slurm->get("gpu-2").drain);
  EXPECT_EQ(kube->taints["gpu-2"].count("vigil.dev/unhealthy"), 0u);
}

TEST(Drainer, a_failing_kubernetes_api_never_blocks_slurm) {
  TempDir d;
  FakeClock clock;
  auto slurm = cluster(4);
  auto kube = std::make_shared<FakeKube>();
  kube->fail = true;
  Drainer dr(test_config(d.str()), slurm, kube, clock);
  ASSERT_TRUE(dr.open().ok());
  dr.start();
  ASSERT_TRUE(dr.ingest({bad("gpu-2", "a")}).ok());
  for (int i = 0; i < 100 && !slurm->get("gpu-2").drain; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_TRUE(slurm->get("gpu-2").drain);
  EXPECT_EQ(dr.pending(SinkKind::kKubernetes), 1u);
  kube->fail = false;
  for (int i = 0; i < 100 && dr.pending(SinkKind::kKubernetes); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(dr.pending(SinkKind::kKubernetes), 0u);
  EXPECT_EQ(kube->annotations_of("gpu-2")["vigil.dev/state"], "drained");
  dr.stop();
}

TEST(Drainer, kubernetes_node_from_report_or_pod_lookup) {
  TempDir d;
  FakeClock clock;
  auto kube = std::make_shared<FakeKube>();
  kube->pods["slurm/gpu-1"] = "k8s-worker-7";
  auto cfg = test_config(d.str());
  cfg.kubernetes.node_mapping = NodeMapping::kPodLookup;
  cfg.kubernetes.pod_namespace = "slurm";
  {
    Drainer dr(cfg, cluster(4), kube, clock);
    ASSERT_TRUE(dr.open().ok());
    ASSERT_TRUE(dr.ingest({good("gpu-1", "a")}).ok());
    dr.process_pending();
    dr.run_kube_sink_once();
    EXPECT_EQ(kube->annotations_of("k8s-worker-7")["vigil.dev/state"], "healthy");
  }
  TempDir d2;
  cfg.state_dir = d2.str();
  cfg.kubernetes.node_mapping = NodeMapping::kReport;
  Drainer dr(cfg, cluster(4), kube, clock);
  ASSERT_TRUE(dr.open().ok());
  auto r = good("gpu-0", "a");
  r.k8s_node = "k8s-worker-0";
  ASSERT_TRUE(dr.ingest({r}).ok());
  dr.process_pending();
  dr.run_kube_sink_once();
  EXPECT_EQ(kube->annotations_of("k8s-worker-0")["vigil.dev/state"], "healthy");
}

// The repair ladder's annotations come from the intent's event alone (docs/repair.md,
// docs/kubernetes.md): the stage, the draining report's evidence file and the GPU reset's bug
// report are written while set and removed once the event no longer carries them.
TEST(KubeSink, repair_evidence_and_bug_report_annotations_follow_the_event) {
  auto kube = std::make_shared<FakeKube>();
  KubeSettings cfg;
  cfg.enabled = true;
  KubeSink sink(kube, cfg);
  Intent i;
  i.id = 3;
  i.sink = SinkKind::kKubernetes;
  i.action = IntentAction::kAnnotate;
  i.node = "gpu-2";
  i.event.type = Action::kResetFailed;
  i.event.node = "gpu-2";
  i.event.state = NodeState::kDrained;
  i.event.reason = "vigil: reset-gpu remap gpu3 row remap pending (1)";
  i.event.repair = "rebooting";
  i.event.evidence = "/var/lib/vigil/evidence/gpu-2-17.json";
  i.event.bug_report = "/var/lib/vigil/evidence/gpu-2.nvidia-bug-report.log.gz";
  SinkResult r = sink.apply({i});
  ASSERT_EQ(r.outcomes.size(), 1u);
  EXPECT_EQ(r.outcomes[0].kind, OutcomeKind::kOk) << r.outcomes[0].why;
  auto a = kube->annotations_of("gpu-2");
  EXPECT_EQ(a["vigil.dev/state"], "drained");
  EXPECT_EQ(a["vigil.dev/repair"], "rebooting");
  EXPECT_EQ(a["vigil.dev/evidence"], i.event.evidence);
  EXPECT_EQ(a["vigil.dev/bug-report"], i.event.bug_report);
  EXPECT_EQ(kube->conditions["gpu-2"].status, "False");

  i.id = 4;  // resumed after the repair: nothing of the ladder is left on the node
  i.event.type = Action::kResume;
  i.event.state = NodeState::kHealthy;
  i.event.reason.clear();
  i.event.repair.clear();
  i.event.evidence.clear();
  i.event.bug_report.clear();
  ASSERT_EQ(sink.apply({i}).outcomes[0].kind, OutcomeKind::kOk);
  a = kube->annotations_of("gpu-2");
  EXPECT_EQ(a["vigil.dev/state"], "healthy");
  for (const char* k :
       {"vigil.dev/repair", "vigil.dev/evidence", "vigil.dev/bug-report", "vigil.dev/reason"})
    EXPECT_EQ(a.count(k), 0u) << k;
  EXPECT_EQ(kube->conditions["gpu-2"].status, "True");
}

}  // namespace
}  // namespace vigil::drainer
