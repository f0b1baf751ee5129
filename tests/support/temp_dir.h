#pragma once
// A temp dir removed at scope exit.
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <string>

namespace vigil::testing {

class TempDir {
 public:
  TempDir() {
    static std::atomic<int> n{0};
    path_ = std::filesystem::temp_directory_path() /
            ("vigil-drainer-test-" + std::to_string(::getpid()) + "-" + std::to_string(n++));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string str() const { return path_.string(); }
  std::string operator/(const std::string& s) const { return (path_ / s).string(); }

 private:
  std::filesystem::path path_;
};

}  // namespace vigil::testing
