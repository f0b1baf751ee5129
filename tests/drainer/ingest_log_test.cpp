// The ingest log (drainer/src/ingest_log.h): a real journal in a temp dir, no drainer, no thread.
#include "ingest_log.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "drainer_fixtures.h"
#include "file_size_limit.h"
#include "records.h"

namespace vigil::drainer {
namespace {

using namespace testing::drainer_short;

std::vector<nlohmann::json> records_of(const std::vector<NodeReport>& reports) {
  std::vector<nlohmann::json> out;
  for (const auto& r : reports) out.push_back(report_record(0, r));
  return out;
}

std::vector<std::string> runs(const std::deque<IngestState::Accepted>& q) {
  std::vector<std::string> out;
  for (const auto& a : q) out.push_back(a.report.node + "/" + a.report.run_id);
  return out;
}

TEST(IngestLog, a_report_sent_again_is_a_duplicate_and_the_queue_keeps_journal_order) {
  TempDir d;
  auto journal = Journal::open(d.str());
  ASSERT_TRUE(journal.ok());
  ASSERT_TRUE((*journal)->recover().ok());
  IngestLog log;
  const std::vector<NodeReport> first{bad("gpu-1", "a"), good("gpu-2", "a"), bad("gpu-1", "a")};
  auto c = log.accept(first, records_of(first), **journal);
  ASSERT_TRUE(c.ok()) << c.error().to_string();
  EXPECT_EQ(c->accepted, 2);
  EXPECT_EQ(c->duplicates, 1);  // the same run id twice in one POST
  const std::vector<NodeReport> again{good("gpu-2", "a"), good("gpu-2", "b")};
  c = log.accept(again, records_of(again), **journal);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->accepted, 1);
  EXPECT_EQ(c->duplicates, 1);
  EXPECT_EQ(log.undecided(), 3u);
  const auto batch = log.take(2);
  EXPECT_EQ(runs(batch), (std::vector<std::string>{"gpu-1/a", "gpu-2/a"}));
  EXPECT_LT(batch[0].seq, batch[1].seq);
  EXPECT_EQ(runs(log.take(256)), (std::vector<std::string>{"gpu-2/b"}));
  EXPECT_EQ(log.undecided(), 0u);
}

// What the journal never held is not remembered as seen (the drainer stops after the failure;
// the client keeps its report and sends it again to the restarted one).
TEST(IngestLog, a_report_whose_append_failed_is_not_remembered_as_seen) {
  TempDir d;
  auto journal = Journal::open(d.str());
  ASSERT_TRUE(journal.ok());
  ASSERT_TRUE((*journal)->recover().ok());
  IngestLog log;
  const std::vector<NodeReport> one{bad("gpu-1", "a")};
  {
    testing::FileSizeLimit limit(0);
    EXPECT_FALSE(log.accept(one, records_of(one), **journal).ok());
  }
  EXPECT_EQ(log.undecided(), 0u);
  const bool seen = log.locked(
      [](IngestState& s) { return s.seen_runs["gpu-1"].contains(RunIdWindow::digest("a")); });
  EXPECT_FALSE(seen);
}

TEST(IngestState, a_snapshot_holds_the_run_ids_and_the_undecided_reports) {
  IngestState s;
  s.accepted(7, bad("gpu-1", "a"));
  s.accepted(9, good("gpu-2", "b"));
  s.accepted(11, good("gpu-2", "c"));
  ASSERT_TRUE(s.decided(9));
  EXPECT_FALSE(s.decided(9)) << "decided twice";
  nlohmann::json snap = nlohmann::json::object();
  s.write(snap);
  IngestState back;
  ASSERT_TRUE(back.restore(snap).ok());
  EXPECT_EQ(runs(back.undecided), (std::vector<std::string>{"gpu-1/a", "gpu-2/c"}));
  EXPECT_EQ(back.undecided[0].seq, 7u);
  EXPECT_TRUE(back.seen_runs["gpu-2"].contains(RunIdWindow::digest("b")));  // decided, still seen
  // A snapshot from before 2026-11 lists the run ids themselves.
  IngestState old;
  ASSERT_TRUE(
      old.restore({{"seen_runs", {{"gpu-3", {"x", "y"}}}}, {"undecided", nlohmann::json::array()}})
          .ok());
  EXPECT_TRUE(old.seen_runs["gpu-3"].contains(RunIdWindow::digest("y")));
  // A damaged one is refused, naming what it could not read.
  IngestState bad_digest;
  const auto r = bad_digest.restore(
      {{"run_id_digests", {{"gpu-4", "zz"}}}, {"undecided", nlohmann::json::array()}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().to_string().find("gpu-4"), std::string::npos) << r.error().to_string();
}

}  // namespace
}  // namespace vigil::drainer
