#pragma once
// Scratch files of an all_reduce launch: a private directory under /tmp for the benchmark's JSON
// result (removed with everything in it when the object goes), and reading the result back.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace vigil {

class LaunchDir {
 public:
  LaunchDir() {
    char t[] = "/tmp/vigil-allreduce-XXXXXX";
    if (::mkdtemp(t)) path_ = t;
  }
  ~LaunchDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  LaunchDir(const LaunchDir&) = delete;
  LaunchDir& operator=(const LaunchDir&) = delete;
  bool ok() const { return !path_.empty(); }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// The file's text, empty when it cannot be read (the caller reports "no result").
inline std::string read_launch_file(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

}  // namespace vigil
