// Ingest: a report is stored once per node and run id, across restarts and snapshots of either
// format; a spool directory is ingested and bad files are set aside.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "drainer_fixtures.h"
#include "fake_clock.h"
#include "fakes.h"
#include "temp_dir.h"
#include "vigil/drainer/drainer.h"
#include "vigil/drainer/run_ids.h"

namespace vigil::drainer {
namespace {

using namespace testing::drainer_short;

TEST(Drainer, same_node_and_run_id_is_stored_once) {
  TempDir d;
  FakeClock clock;
  Drainer dr(test_config(d.str()), cluster(4), nullptr, clock);
  ASSERT_TRUE(dr.open().ok());
  auto a = dr.ingest({good("gpu-0", "r1"), good("gpu-0", "r1"), good("gpu-1", "r1")});
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->accepted, 2);
  EXPECT_EQ(a->duplicates, 1);
  auto b = dr.ingest({good("gpu-0", "r1")});
  EXPECT_EQ(b->accepted, 0);
  EXPECT_EQ(b->duplicates, 1);
  EXPECT_EQ(dr.process_pending(), 2);
  EXPECT_EQ(dr.node("gpu-0")->consecutive_passes, 1);
}

TEST(Drainer, idempotency_survives_restart) {
  TempDir d;
  FakeClock clock;
  {
    Drainer dr(test_config(d.str()), cluster(4), nullptr, clock);
    ASSERT_TRUE(dr.open().ok());
    ASSERT_EQ(dr.ingest({good("gpu-0", "r1")})->accepted, 1);
  }
  Drainer dr(test_config(d.str()), cluster(4), nullptr, clock);
  ASSERT_TRUE(dr.open().ok());
  EXPECT_EQ(dr.ingest({good("gpu-0", "r1")})->duplicates, 1);
  EXPECT_EQ(dr.process_pending(), 1);  // the undecided report from before the restart
}

// Snapshots keep a digest per run id (run_ids.h); a snapshot written before that keeps the run
// ids themselves and still replays into the same window.
TEST(Drainer, idempotency_survives_a_snapshot_in_either_format) {
  TempDir d;
  FakeClock clock;
  {
    Drainer dr(test_config(d.str()), cluster(4), nullptr, clock);
    ASSERT_TRUE(dr.open().ok());
    ASSERT_EQ(dr.ingest({good("gpu-0", "r1")})->accepted, 1);
    ASSERT_EQ(dr.process_pending(), 1);
    ASSERT_TRUE(dr.snapshot_now().ok());
  }
  RunIdWindow w;
  w.add(RunIdWindow::digest("r1"));
  const std::string digests = R"("run_id_digests":{"gpu-0":")" + w.encode() + R"("})";
  {
    Drainer dr(test_config(d.str()), cluster(4), nullptr, clock);
    ASSERT_TRUE(dr.open().ok());
    EXPECT_EQ(dr.ingest({good("gpu-0", "r1")})->duplicates, 1);
  }
  ASSERT_EQ(rewrite_state(d.str(), "snapshot.json", digests, R"("seen_runs":{"gpu-0":["r1"]})"), 1);
  Drainer dr(test_config(d.str()), cluster(4), nullptr, clock);
  ASSERT_TRUE(dr.open().ok());
  EXPECT_EQ(dr.ingest({good("gpu-0", "r1")})->duplicates, 1);
  EXPECT_EQ(dr.ingest({good("gpu-0", "r2")})->accepted, 1);
}

TEST(Drainer, spool_dir_is_ingested_and_bad_files_set_aside) {
  TempDir d, spool;
  FakeClock clock;
  Drainer dr(test_config(d.str()), cluster(4), nullptr, clock);
  ASSERT_TRUE(dr.open().ok());
  std::ofstream(spool / "gpu-0-a.json") << to_json(good("gpu-0", "a")).dump();
  std::ofstream(spool / "junk.json") << "{not json";
  auto n = dr.ingest_dir(spool.str());
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(n.value(), 1);
  EXPECT_FALSE(std::filesystem::exists(spool / "gpu-0-a.json"));
  EXPECT_TRUE(std::filesystem::exists(spool / "rejected/junk.json"));
  EXPECT_EQ(dr.process_pending(), 1);
}

}  // namespace
}  // namespace vigil::drainer
