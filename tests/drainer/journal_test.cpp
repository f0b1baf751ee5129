// Journal: group commit, torn tails, snapshots, and kill -9 at any moment.
#include "vigil/drainer/journal.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "file_size_limit.h"
#include "temp_dir.h"

namespace vigil::drainer {
namespace {

using testing::TempDir;

std::unique_ptr<Journal> open_recovered(const std::string& dir, Recovered* out = nullptr) {
  auto j = Journal::open(dir);
  EXPECT_TRUE(j.ok());
  auto r = j.value()->recover();
  EXPECT_TRUE(r.ok()) << r.error().to_string();
  if (out) *out = r.value();
  return std::move(j.value());
}

TEST(Journal, appends_are_recovered_in_order) {
  TempDir d;
  {
    auto j = open_recovered(d.str());
    for (int i = 0; i < 10; ++i) ASSERT_TRUE(j->append_durable({{{"i", i}}}).ok());
  }
  Recovered r;
  auto j = open_recovered(d.str(), &r);
  ASSERT_EQ(r.records.size(), 10u);
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(r.records[i]["i"], i);
    EXPECT_EQ(r.records[i]["seq"], i + 1);
  }
  EXPECT_EQ(j->last_seq(), 10u);
}

// A snapshot write a crash interrupted leaves replace_file_atomically's temporary: recovery
// removes it (each such crash would otherwise leave one more, as large as the state).
// After a failed write nothing more is written or synced: the write may have left part of a
// record, and later records behind it would be lost as a torn tail or stop the next start as
// corruption (docs/drainer.md "When the journal fails").
TEST(Journal, after_a_failed_write_every_append_sync_and_cut_is_refused) {
  TempDir d;
  auto j = open_recovered(d.str());
  ASSERT_TRUE(j->append_durable({{{"n", 1}}}).ok());
  std::string segment;
  for (const auto& e : std::filesystem::directory_iterator(d.str()))
    if (e.path().filename().string().starts_with("journal-")) segment = e.path().string();
  {
    testing::FileSizeLimit limit(std::filesystem::file_size(segment));
    auto w = j->append({{{"n", 2}}});
    ASSERT_FALSE(w.ok());
    EXPECT_NE(w.error().to_string().find("File too large"), std::string::npos)
        << w.error().to_string();
  }
  // Room again: still refused, naming the first error.
  auto again = j->append({{{"n", 3}}});
  ASSERT_FALSE(again.ok());
  EXPECT_NE(again.error().to_string().find("an earlier write or sync failed"), std::string::npos);
  EXPECT_FALSE(j->sync().ok());
  EXPECT_FALSE(j->cut().ok());
  j.reset();
  Recovered r;
  auto back = open_recovered(d.str(), &r);
  ASSERT_EQ(r.records.size(), 1u);  // the acknowledged record, and nothing after it
  EXPECT_EQ(r.records[0]["n"], 1);
}

TEST(Journal, the_temporary_of_an_interrupted_snapshot_is_removed_on_recovery) {
  TempDir d;
  { auto j = open_recovered(d.str()); }
  std::ofstream(d.str() + "/snapshot.json.tmp.4242") << "{\"nodes\": [";
  auto j = open_recovered(d.str());
  EXPECT_FALSE(std::filesystem::exists(d.str() + "/snapshot.json.tmp.4242"));
}

TEST(Journal, torn_tail_is_dropped_and_appends_continue) {
  TempDir d;
  {
    auto j = open_recovered(d.str());
    ASSERT_TRUE(j->append_durable({{{"i", 1}}, {{"i", 2}}}).ok());
  }
  std::string seg;
  for (const auto& e : std::filesystem::directory_iterator(d.str())) seg = e.path().string();
  std::ofstream(seg, std::ios::app) << R"({"i":3,"seq":3,"t":"rep)";  // crash mid-write
  Recovered r;
  auto j = open_recovered(d.str(), &r);
  EXPECT_EQ(r.records.size(), 2u);
  EXPECT_EQ(r.dropped_torn_lines, 1u);
  ASSERT_TRUE(j->append_durable({{{"i", 4}}}).ok());
  j.reset();
  auto j2 = open_recovered(d.str(), &r);
  ASSERT_EQ(r.records.size(), 3u);
  EXPECT_EQ(r.records[2]["i"], 4);
  EXPECT_EQ(r.records[2]["seq"], 3);
}

TEST(Journal, corruption_in_the_middle_is_an_error_not_silent_loss) {
  TempDir d;
  {
    auto j = open_recovered(d.str());
    ASSERT_TRUE(j->append_durable({{{"i", 1}}, {{"i", 2}}, {{"i", 3}}}).ok());
  }
  std::string seg;
  for (const auto& e : std::filesystem::directory_iterator(d.str())) seg = e.path().string();
  std::string data;
  {
    std::ifstream in(seg);
    data.assign(std::istreambuf_iterator<char>(in), {});
  }
  data[data.find('\n') + 2] = '#';
  std::ofstream(seg, std::ios::trunc) << data;
  auto j = Journal::open(d.str());
  auto r = j.value()->recover();
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().to_string().find("line 2"), std::string::npos) << r.error().to_string();
}

TEST(Journal, snapshot_covers_old_records_and_removes_old_segments) {
  TempDir d;
  {
    auto j = open_recovered(d.str());
    ASSERT_TRUE(j->append_durable({{{"i", 1}}, {{"i", 2}}}).ok());
    ASSERT_TRUE(j->write_snapshot({{"state", "after two"}}).ok());
    ASSERT_TRUE(j->append_durable({{{"i", 3}}}).ok());
  }
  int segments = 0;
  for (const auto& e : std::filesystem::directory_iterator(d.str()))
    segments += e.path().filename().string().starts_with("journal-");
  EXPECT_EQ(segments, 1);
  Recovered r;
  open_recovered(d.str(), &r);
  ASSERT_TRUE(r.snapshot);
  EXPECT_EQ((*r.snapshot)["state"], "after two");
  EXPECT_EQ(r.snapshot_seq, 2u);
  ASSERT_EQ(r.records.size(), 1u);
  EXPECT_EQ(r.records[0]["i"], 3);
}

// The drainer cuts the journal under its locks and writes the snapshot after releasing them:
// records appended in between stay in the new segment, whether or not the snapshot made it.
TEST(Journal, records_appended_between_cut_and_snapshot_survive_with_or_without_it) {
  for (bool snapshot_written : {true, false}) {
    TempDir d;
    {
      auto j = open_recovered(d.str());
      ASSERT_TRUE(j->append_durable({{{"i", 1}}, {{"i", 2}}}).ok());
      auto last = j->cut();
      ASSERT_TRUE(last.ok());
      EXPECT_EQ(*last, 2u);
      ASSERT_TRUE(j->append_durable({{{"i", 3}}}).ok());  // while the snapshot is being built
      if (snapshot_written) {
        ASSERT_TRUE(j->write_snapshot({{"state", "after two"}}, *last).ok());
      }
      // else: a crash before the snapshot was written
    }
    Recovered r;
    open_recovered(d.str(), &r);
    std::vector<int> seen;
    for (const auto& rec : r.records) seen.push_back(rec["i"].get<int>());
    if (snapshot_written) {
      ASSERT_TRUE(r.snapshot);
      EXPECT_EQ(r.snapshot_seq, 2u);
      EXPECT_EQ(seen, std::vector<int>({3}));
    } else {
      EXPECT_FALSE(r.snapshot);
      EXPECT_EQ(seen, std::vector<int>({1, 2, 3}));
    }
  }
}

TEST(Journal, concurrent_durable_appends_share_syncs_and_lose_nothing) {
  TempDir d;
  {
    auto j = open_recovered(d.str());
    std::vector<std::thread> ts;
    for (int t = 0; t < 8; ++t)
      ts.emplace_back([&, t] {
        for (int i = 0; i < 200; ++i) ASSERT_TRUE(j->append_durable({{{"t", t}, {"i", i}}}).ok());
      });
    for (auto& t : ts) t.join();
  }
  Recovered r;
  open_recovered(d.str(), &r);
  ASSERT_EQ(r.records.size(), 1600u);
  std::set<uint64_t> seqs;
  for (const auto& rec : r.records) seqs.insert(rec["seq"].get<uint64_t>());
  EXPECT_EQ(seqs.size(), 1600u);
}

// A child appends durable records and reports each acknowledged index through a pipe; the
// parent kills it with SIGKILL at an arbitrary moment. Every acknowledged record must be
// recovered, each exactly once.
TEST(Journal, kill_9_loses_no_acknowledged_record) {
  for (int round = 0; round < 5; ++round) {
    TempDir d;
    int fds[2];
    ASSERT_EQ(::pipe(fds), 0);
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ::close(fds[0]);
      auto j = Journal::open(d.str());
      if (!j.ok() || !j.value()->recover().ok()) ::_exit(3);
      for (int i = 0;; ++i) {
        // Batches of 1..4 records, like a POST with several reports.
        std::vector<nlohmann::json> batch;
        for (int k = 0; k <= i % 4; ++k) batch.push_back({{"i", i}, {"k", k}});
        if (!j.value()->append_durable(batch).ok()) ::_exit(4);
        if (::write(fds[1], &i, sizeof i) != sizeof i) ::_exit(5);
      }
    }
    ::close(fds[1]);
    int last_ack = -1, v = 0;
    const int want = 50 + round * 37;
    while (last_ack < want && ::read(fds[0], &v, sizeof v) == sizeof v) last_ack = v;
    std::this_thread::sleep_for(std::chrono::microseconds(137 * round));
    ::kill(pid, SIGKILL);
    while (::read(fds[0], &v, sizeof v) == sizeof v) last_ack = v;  // acks sent before death
    int status = 0;
    ::waitpid(pid, &status, 0);
    ::close(fds[0]);
    ASSERT_TRUE(WIFSIGNALED(status));
    Recovered r;
    open_recovered(d.str(), &r);
    std::set<std::pair<int, int>> seen;
    for (const auto& rec : r.records)
      ASSERT_TRUE(seen.insert({rec["i"].get<int>(), rec["k"].get<int>()}).second) << "duplicate";
    for (int i = 0; i <= last_ack; ++i)
      for (int k = 0; k <= i % 4; ++k)
        ASSERT_TRUE(seen.count({i, k})) << "lost record " << i << "/" << k;
  }
}

}  // namespace
}  // namespace vigil::drainer
