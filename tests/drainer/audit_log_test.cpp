// The audit log's size rotation (audit_log.h).
#include "audit_log.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "temp_dir.h"

namespace vigil::drainer {
namespace {

namespace fs = std::filesystem;

int lines_in(const fs::path& p) {
  std::ifstream in(p);
  int n = 0;
  for (std::string line; std::getline(in, line);) {
    EXPECT_TRUE(nlohmann::json::parse(line).at("i").is_number_integer()) << line.substr(0, 80);
    ++n;
  }
  return n;
}

TEST(AuditLog, rotates_at_the_size_and_keeps_the_newest_files) {
  testing::TempDir d;
  const std::string path = d.path() + "/audit.jsonl";
  auto log = AuditLog::open(path, {/*max_mb=*/1, /*keep=*/2});
  ASSERT_TRUE(log.ok()) << log.error().to_string();
  const std::string pad(1000, 'x');
  const int total = 5000;  // ~5 MB: the file rotates 4 times, keeping the last 2 full ones
  for (int i = 0; i < total; ++i) (*log)->write({{"i", i}, {"pad", pad}});
  ASSERT_TRUE(fs::exists(path));
  ASSERT_TRUE(fs::exists(path + ".1"));
  ASSERT_TRUE(fs::exists(path + ".2"));
  EXPECT_FALSE(fs::exists(path + ".3"));
  for (const auto& p : {path + ".1", path + ".2"}) {
    EXPECT_GE(fs::file_size(p), 1024u * 1024);
    EXPECT_LT(fs::file_size(p), 1024u * 1024 + 2000);  // at most one line past the limit
  }
  // Nothing lost between the current file and .1, and the newest line is last in the current.
  const int kept = lines_in(path) + lines_in(path + ".1") + lines_in(path + ".2");
  EXPECT_LT(kept, total);
  EXPECT_GT(kept, 2000);
  std::ifstream cur(path);
  std::string last, line;
  while (std::getline(cur, line)) last = line;
  EXPECT_EQ(nlohmann::json::parse(last).at("i"), total - 1);
  EXPECT_EQ((*log)->write_errors(), 0);
}

TEST(AuditLog, a_reopened_log_counts_the_size_already_there) {
  testing::TempDir d;
  const std::string path = d.path() + "/audit.jsonl";
  std::ofstream(path) << std::string(1024 * 1024, 'y') << "\n";
  auto log = AuditLog::open(path, {1, 1});
  ASSERT_TRUE(log.ok());
  (*log)->write({{"i", 1}});
  EXPECT_TRUE(fs::exists(path + ".1"));  // the big old file went to .1 before the new line
  EXPECT_EQ(lines_in(path), 1);
}

TEST(AuditLog, an_unwritable_directory_is_an_error_naming_the_path) {
  auto log = AuditLog::open("/nonexistent-vigil-dir/audit.jsonl", {});
  ASSERT_FALSE(log.ok());
  EXPECT_NE(log.error().to_string().find("/nonexistent-vigil-dir/audit.jsonl"), std::string::npos)
      << log.error().to_string();
}

}  // namespace
}  // namespace vigil::drainer
