// The one atomic file write (vigil/base/files.h): old or new content, never torn; the mode of a
// new file; no temporary left behind, also when the write fails.
#include "vigil/base/files.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

namespace vigil {
namespace {

std::string slurp(const std::string& p) {
  std::ifstream in(p);
  return {std::istreambuf_iterator<char>(in), {}};
}

struct Dir {
  Dir() {
    char t[] = "/tmp/vigil-files-XXXXXX";
    path = ::mkdtemp(t);
  }
  ~Dir() { std::filesystem::remove_all(path); }
  std::string path;
};

TEST(ReadWholeFile, reads_a_file_and_is_nullopt_for_one_that_cannot_be_opened_or_read) {
  Dir d;
  const std::string f = d.path + "/x";
  ASSERT_TRUE(replace_file_atomically(f, std::string(10000, 'a') + "\n", {.sync = false}).ok());
  EXPECT_EQ(read_whole_file(f), std::string(10000, 'a') + "\n");
  EXPECT_FALSE(read_whole_file(d.path + "/missing"));
  // read(2) fails on this file (EIO: address 0 is not mapped), as it does with ESRCH on a
  // /proc/<pid> file whose process exited: no value, and no exception (std::ifstream throws).
  EXPECT_FALSE(read_whole_file("/proc/self/mem"));
}

TEST(ReplaceFileAtomically, replaces_the_content_and_leaves_no_temporary) {
  Dir d;
  const std::string f = d.path + "/state.json";
  ASSERT_TRUE(replace_file_atomically(f, "old\n").ok());
  ASSERT_TRUE(replace_file_atomically(f, "new\n").ok());
  EXPECT_EQ(slurp(f), "new\n");
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(d.path)) files += e.is_regular_file();
  EXPECT_EQ(files, 1);
}

TEST(ReplaceFileAtomically, a_new_file_gets_the_mode_asked_for_and_sync_can_be_off) {
  Dir d;
  const std::string f = d.path + "/spooled.json";
  const mode_t old = ::umask(0);
  auto r = replace_file_atomically(f, "{}", {0640, false});
  ::umask(old);
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  struct stat st {};
  ASSERT_EQ(::stat(f.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0640u);
  EXPECT_EQ(slurp(f), "{}");
}

TEST(ReplaceFileAtomically, a_missing_directory_is_an_error_naming_the_path) {
  auto r = replace_file_atomically("/nonexistent-vigil-dir/x.json", "x");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().to_string().find("/nonexistent-vigil-dir/x.json"), std::string::npos)
      << r.error().to_string();
}

}  // namespace
}  // namespace vigil
