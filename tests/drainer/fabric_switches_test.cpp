// Switch verdicts of fabric jobs: exported, annotated on every node under the switch, and
// cleared by a later good pair.
#include <gtest/gtest.h>

#include <map>
#include <tuple>
#include <vector>

#include "drainer_fixtures.h"
#include "fake_clock.h"
#include "fakes.h"
#include "temp_dir.h"
#include "vigil/drainer/drainer.h"

namespace vigil::drainer {
namespace {

using namespace testing::drainer_short;

// A fabric job's result with its switch evidence (checks/src/allreduce/fabric_job.h).
NodeReport fabric_report(const std::string& node, const std::string& run, const std::string& leaf,
                         bool suspected) {
  CheckResult c = make_check("fabric_allreduce_ib", suspected ? Status::kWarn : Status::kPass,
                             suspected ? 20 : 40, 30, "GB/s");
  c.measurements[0].name = "pair_busbw";
  c.measurements[0].port = "pair:other";
  if (suspected) {
    c.fault_code = "VIGIL-FABRIC-SWITCH";
    c.message = "switch " + leaf + " suspected";
  }
  Measurement m;
  m.name = "switch_suspected";
  m.value = suspected ? 1 : 0;
  m.unit = "bool";
  m.port = "switch:" + leaf;
  c.measurements.push_back(m);
  return make_report(node, run, {c});
}

// The spread as a value: only the other nodes under the same leaf whose verdict differs.
TEST(SwitchSpread, reaches_the_other_nodes_of_the_leaf_whose_verdict_differs) {
  std::map<std::string, NodeRecord> nodes;
  for (const auto& [name, leaf, suspect] :
       std::vector<std::tuple<std::string, std::string, bool>>{{"gpu-0", "leaf-a", true},
                                                               {"gpu-1", "leaf-a", false},
                                                               {"gpu-2", "leaf-a", true},
                                                               {"gpu-3", "leaf-b", false}}) {
    NodeRecord n;
    n.node = name;
    n.state = NodeState::kHealthy;
    n.fabric_switch = leaf;
    n.switch_suspect = suspect;
    nodes[name] = n;
  }
  BreakerState breaker;
  breaker.why = "as it was";
  const auto ds = switch_spread(nodes.at("gpu-0"), "run-9", nodes, breaker);
  ASSERT_EQ(ds.size(), 1u);  // gpu-2 already holds it, gpu-3 is under another leaf
  EXPECT_EQ(ds[0].record.node, "gpu-1");
  EXPECT_TRUE(ds[0].record.switch_suspect);
  EXPECT_EQ(ds[0].action, Action::kNone);
  EXPECT_EQ(ds[0].before, NodeState::kHealthy);
  EXPECT_EQ(ds[0].after, NodeState::kHealthy);
  EXPECT_EQ(ds[0].why, "fabric switch leaf-a suspected by the fabric job of gpu-0 (run run-9)");
  EXPECT_EQ(ds[0].breaker.why, "as it was");
}

TEST(Drainer,
     a_suspected_switch_is_exported_and_annotated_on_its_nodes_until_a_good_pair_clears_it) {
  TempDir d;
  FakeClock clock;
  auto slurm = cluster(7);
  auto kube = std::make_shared<FakeKube>();
  const std::string key = "vigil.dev/fabric-switch-suspect";
  auto gauge = [](const std::string& text, const std::string& leaf) -> std::string {
    const std::string needle = "vigil_fabric_switch_suspect{switch=\"" + leaf + "\"} ";
    auto at = text.find(needle);
    return at == std::string::npos ? "absent" : text.substr(at + needle.size(), 1);
  };
  {
    Drainer dr(test_config(d.str()), slurm, kube, clock);
    ASSERT_TRUE(dr.open().ok());
    // Job 1: gpu-6 is under leaf1 and had a good pair leaving it.
    ASSERT_TRUE(dr.ingest({fabric_report("gpu-6", "j1", "leaf1", false),
                           fabric_report("gpu-0", "j1", "leaf0", false)})
                    .ok());
    dr.process_pending();
    EXPECT_EQ(gauge(dr.metrics_text(), "leaf1"), "0");
    // Job 2 suspects leaf1 through gpu-2 and gpu-3; gpu-6, known under leaf1, takes the verdict.
    ASSERT_TRUE(dr.ingest({fabric_report("gpu-2", "j2", "leaf1", true),
                           fabric_report("gpu-3", "j2", "leaf1", true),
                           fabric_report("gpu-0", "j2", "leaf0", false),
                           fabric_report("gpu-4", "j2", "leaf2", false)})
                    .ok());
    dr.process_pending();
    EXPECT_EQ(dr.run_slurm_sink_once(), 0);
    EXPECT_EQ(dr.run_kube_sink_once(), 0);
    EXPECT_TRUE(slurm->calls_copy().empty()) << "a switch verdict never drains a node";
    const std::string text = dr.metrics_text();
    EXPECT_EQ(gauge(text, "leaf1"), "1");
    EXPECT_EQ(gauge(text, "leaf0"), "0");
    EXPECT_EQ(gauge(text, "leaf2"), "0");
    for (const char* n : {"gpu-2", "gpu-3", "gpu-6"}) {
      EXPECT_EQ(kube->annotations_of(n)[key], "leaf1") << n;
      EXPECT_TRUE(dr.node(n)->switch_suspect) << n;
    }
    EXPECT_EQ(kube->annotations_of("gpu-0").count(key), 0u);
    EXPECT_EQ(kube->annotations_of("gpu-4").count(key), 0u);
  }
  // The verdict survives a restart (journal replay) ...
  Drainer dr(test_config(d.str()), slurm, kube, clock);
  ASSERT_TRUE(dr.open().ok());
  EXPECT_EQ(gauge(dr.metrics_text(), "leaf1"), "1");
  EXPECT_TRUE(dr.node("gpu-6")->switch_suspect);
  EXPECT_EQ(dr.node("gpu-6")->fabric_switch, "leaf1");
  // ... and a later job with a good pair leaving leaf1 (from gpu-6) clears it on every node.
  ASSERT_TRUE(dr.ingest({fabric_report("gpu-6", "j3", "leaf1", false)}).ok());
  dr.process_pending();
  EXPECT_EQ(dr.run_kube_sink_once(), 0);
  EXPECT_EQ(gauge(dr.metrics_text(), "leaf1"), "0");
  for (const char* n : {"gpu-2", "gpu-3", "gpu-6"}) {
    EXPECT_EQ(kube->annotations_of(n).count(key), 0u) << n;
    EXPECT_FALSE(dr.node(n)->switch_suspect) << n;
  }
  // A report without switch evidence (the node job) leaves the verdict alone.
  ASSERT_TRUE(dr.ingest({good("gpu-6", "node-1")}).ok());
  dr.process_pending();
  EXPECT_EQ(dr.node("gpu-6")->fabric_switch, "leaf1");
}

}  // namespace
}  // namespace vigil::drainer
