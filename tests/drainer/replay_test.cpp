// Replay (drainer/src/replay.cpp): a journal written before the records were typed rebuilds
// the same node table; the live decisions and replay agree; a record this build cannot read
// stops the drainer from opening and names where it is.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "journal_scenario.h"
#include "temp_dir.h"

namespace vigil::testing {
namespace {

namespace fs = std::filesystem;

const std::string kFixture =
    std::string(VIGIL_SOURCE_DIR) + "/tests/fixtures/journal/pre-typed-records";
const std::string kSegment = "journal-00000000000000000001.jsonl";

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A copy of the fixture's state directory (the drainer writes its audit log there).
void copy_fixture_state(const std::string& to) {
  fs::copy(kFixture + "/state", to, fs::copy_options::recursive);
}

// Since 2026-11-27 a node's `failing` is a typed array, written as JSON at the boundaries; the
// build before wrote the same array as a JSON string ("" for none). Reads each "failing" string
// of `j`, anywhere in it, as the array it holds: what the fixture says, in today's form.
nlohmann::json with_typed_failing(nlohmann::json j) {
  if (j.is_object()) {
    for (auto& [key, v] : j.items()) {
      if (key == "failing" && v.is_string())
        v = v.get<std::string>().empty() ? nlohmann::json::array()
                                         : nlohmann::json::parse(v.get<std::string>());
      else
        v = with_typed_failing(std::move(v));
    }
  } else if (j.is_array()) {
    for (auto& v : j) v = with_typed_failing(std::move(v));
  }
  return j;
}

// Since 2026-12-03 a node's state also says when Vigil drained it (`drained_unix_s`) and when
// each check last ran (`last_run_unix_s`), for re-qualifying performance drains (requalify.h),
// and since 2026-12-04 when Vigil last drained it (`last_drain_unix_s`, the reliability figures'
// time between incidents); the build before had none. Today's output without them.
nlohmann::json without_requalify_times(nlohmann::json j) {
  if (j.is_object()) {
    j.erase("drained_unix_s");
    j.erase("last_run_unix_s");
    j.erase("last_drain_unix_s");
    for (auto& [key, v] : j.items()) v = without_requalify_times(std::move(v));
  } else if (j.is_array()) {
    for (auto& v : j) v = without_requalify_times(std::move(v));
  }
  return j;
}

nlohmann::json expected_table() {
  return with_typed_failing(nlohmann::json::parse(slurp(kFixture + "/expected-table.json")));
}

// The journal's lines, each parsed, with `failing` in today's form.
std::vector<nlohmann::json> journal_lines(const std::string& path) {
  std::vector<nlohmann::json> out;
  std::istringstream in(slurp(path));
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) out.push_back(with_typed_failing(nlohmann::json::parse(line)));
  return out;
}

TEST(replay, a_journal_written_before_typed_records_rebuilds_the_same_table) {
  TempDir d;
  copy_fixture_state(d.str());
  FakeClock clock(1'800'000'360);
  drainer::Drainer dr(journal_fixture_config(d.str()), fake_cluster(8),
                      std::make_shared<FakeKube>(), clock);
  ASSERT_TRUE(dr.open().ok());
  const auto expected = expected_table();
  ASSERT_EQ(expected["nodes"].size(), 8u);  // the fixture is what it claims to be
  ASSERT_EQ(expected["pending"].size(), 2u);
  EXPECT_EQ(table_json(dr), expected);
}

// The same scenario run today writes the journal the old build wrote, record for record, and
// ends with the same table: the typed records changed the code, not the format or the
// decisions. The format changes since are `failing`, an array where it was a JSON string, and
// the three times re-qualification and the reliability figures added.
TEST(replay, todays_drainer_writes_the_same_journal_and_table_as_the_build_before) {
  TempDir d;
  FakeClock clock;
  auto live = run_journal_scenario(d.str(), clock, fake_cluster(8), std::make_shared<FakeKube>());
  EXPECT_NE(live.dump().find("\"drained_unix_s\":1800000120"), std::string::npos);
  EXPECT_NE(live.dump().find("\"last_run_unix_s\":1800000060"), std::string::npos);
  EXPECT_EQ(without_requalify_times(live), expected_table());
  const auto today = journal_lines(d / kSegment);
  const auto before = journal_lines(kFixture + "/state/" + kSegment);
  ASSERT_EQ(today.size(), before.size());
  for (size_t i = 0; i < today.size(); ++i)
    EXPECT_EQ(without_requalify_times(today[i]), before[i]) << "line " << i + 1;
  // The normalising above is no blanket: the fixture holds failing figures as strings.
  EXPECT_NE(slurp(kFixture + "/state/" + kSegment).find("\"failing\":\"[{"), std::string::npos);
}

TEST(replay, live_decisions_and_replay_give_the_same_table) {
  TempDir d;
  FakeClock clock;
  auto slurm = fake_cluster(8);
  auto kube = std::make_shared<FakeKube>();
  auto live = run_journal_scenario(d.str(), clock, slurm, kube);
  ASSERT_FALSE(live.is_null());
  drainer::Drainer again(journal_fixture_config(d.str()), slurm, kube, clock);
  ASSERT_TRUE(again.open().ok());
  EXPECT_EQ(table_json(again), live);
}

void append_line(const std::string& path, const std::string& line) {
  std::ofstream(path, std::ios::app) << line << "\n";
}

// Opens a drainer on the fixture's journal with `record` appended as line 37, then a valid
// record (so the line is no torn tail); returns open()'s error, "" when it opened.
std::string open_with_record(const std::string& record) {
  TempDir d;
  copy_fixture_state(d.str());
  append_line(d / kSegment, record);
  append_line(d / kSegment, R"({"seq":38,"t":"done","ids":[],"outcome":"ok"})");
  FakeClock clock;
  drainer::Drainer dr(journal_fixture_config(d.str()), fake_cluster(8),
                      std::make_shared<FakeKube>(), clock);
  auto opened = dr.open();
  if (opened.ok()) return "";
  EXPECT_FALSE(dr.ready());
  return opened.error().to_string();
}

TEST(replay, an_unknown_record_type_stops_replay_and_names_its_line) {
  // A record of a kind a newer drainer might write.
  const std::string why = open_with_record(R"({"seq":37,"t":"repair","node":"gpu-1"})");
  EXPECT_NE(why.find(kSegment + " line 37"), std::string::npos) << why;
  EXPECT_NE(why.find("unknown record type 'repair'"), std::string::npos) << why;
}

TEST(replay, a_record_with_an_unknown_field_stops_replay) {
  const std::string why =
      open_with_record(R"({"seq":37,"t":"done","ids":[1],"outcome":"ok","by":"x"})");
  EXPECT_NE(why.find("done.by"), std::string::npos) << why;
}

TEST(replay, a_valid_appended_record_replays) {
  EXPECT_EQ(open_with_record(R"({"seq":37,"t":"done","ids":[999],"outcome":"ok"})"), "");
}

}  // namespace
}  // namespace vigil::testing
