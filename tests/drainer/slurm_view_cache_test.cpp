// The Slurm view shared by decisions and the Slurm sink: a young table is reused, the sink
// always re-reads, and a table read while the sink acted is never remembered.
#include <gtest/gtest.h>

#include "drainer_fixtures.h"
#include "fake_clock.h"
#include "fakes.h"
#include "temp_dir.h"
#include "vigil/drainer/drainer.h"

namespace vigil::drainer {
namespace {

using namespace testing::drainer_short;

TEST(Drainer, decisions_reuse_a_young_slurm_view_and_the_sink_always_rereads) {
  TempDir d;
  FakeClock clock;
  auto slurm = cluster(4);
  auto cfg = test_config(d.str());
  cfg.slurm.view_max_age_s = 5;
  Drainer dr(cfg, slurm, nullptr, clock);
  ASSERT_TRUE(dr.open().ok());
  ASSERT_TRUE(dr.ingest({good("gpu-0", "a")}).ok());
  dr.process_pending();
  EXPECT_EQ(slurm->loads, 1);
  ASSERT_TRUE(dr.ingest({good("gpu-1", "a")}).ok());
  dr.process_pending();
  EXPECT_EQ(slurm->loads, 1);  // 0 s old: reused
  // An admin drains gpu-2 after that read; a failing report decided on the old view is
  // still checked against Slurm by the sink, which re-reads before acting.
  slurm->set("gpu-2", [](slurm::SlurmNodeInfo& n) {
    n.drain = true;
    n.reason = "admin: cable";
  });
  ASSERT_TRUE(dr.ingest({bad("gpu-2", "a"), bad("gpu-3", "a")}).ok());
  dr.process_pending();
  EXPECT_EQ(slurm->loads, 1);
  EXPECT_EQ(dr.run_slurm_sink_once(), 0);
  EXPECT_EQ(slurm->loads, 2);
  // Only the batch's nodes were asked for (the REST backend reads just those).
  EXPECT_EQ(slurm->last_named, (std::vector<std::string>{"gpu-2", "gpu-3"}));
  EXPECT_EQ(slurm->get("gpu-2").reason, "admin: cable");
  EXPECT_TRUE(slurm->get("gpu-3").drain);
  EXPECT_FALSE(dr.node("gpu-2")->drained_by_vigil);
  // The sink acted, so its read predates its own drain: the next pass reads again.
  ASSERT_TRUE(dr.ingest({good("gpu-0", "b")}).ok());
  dr.process_pending();
  EXPECT_EQ(slurm->loads, 3);
  // Older than view_max_age_s: read again.
  clock.advance(6);
  ASSERT_TRUE(dr.ingest({good("gpu-0", "c")}).ok());
  dr.process_pending();
  EXPECT_EQ(slurm->loads, 4);
}

// A table read while the sink's RPCs were under way predates them: it is used for that pass
// only and never remembered, so a later pass cannot take vigil's own fresh drain for one
// lifted outside vigil.
TEST(Drainer, a_slurm_view_read_while_the_sink_acted_is_not_reused) {
  TempDir d;
  FakeClock clock;
  auto slurm = cluster(2);
  Drainer dr(test_config(d.str()), slurm, nullptr, clock);
  ASSERT_TRUE(dr.open().ok());
  ASSERT_TRUE(dr.ingest({bad("gpu-0", "a")}).ok());
  dr.process_pending();  // drain intent for gpu-0, not applied yet
  clock.advance(10);     // the remembered view is too old now
  slurm->after_read = [&] { EXPECT_EQ(dr.run_slurm_sink_once(), 0); };  // drains gpu-0
  ASSERT_TRUE(dr.ingest({good("gpu-1", "a")}).ok());
  dr.process_pending();  // its read predates the drain
  ASSERT_TRUE(slurm->get("gpu-0").drain);
  const int loads = slurm->loads;
  ASSERT_TRUE(dr.ingest({bad("gpu-0", "b")}).ok());
  dr.process_pending();
  EXPECT_EQ(slurm->loads, loads + 1);  // read again, not the table from before the drain
  EXPECT_TRUE(dr.node("gpu-0")->drained_by_vigil) << dr.node("gpu-0")->note;
  EXPECT_EQ(dr.pending(SinkKind::kSlurm), 0u);
}

TEST(Drainer, view_max_age_zero_reads_slurm_for_every_decision_pass) {
  TempDir d;
  FakeClock clock;
  auto slurm = cluster(2);
  auto cfg = test_config(d.str());
  cfg.slurm.view_max_age_s = 0;
  Drainer dr(cfg, slurm, nullptr, clock);
  ASSERT_TRUE(dr.open().ok());
  for (const char* run : {"a", "b", "c"}) {
    ASSERT_TRUE(dr.ingest({good("gpu-0", run)}).ok());
    dr.process_pending();
  }
  EXPECT_EQ(slurm->loads, 3);
}

}  // namespace
}  // namespace vigil::drainer
