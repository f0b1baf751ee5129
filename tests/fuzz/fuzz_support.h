#pragma once
// Helpers shared by the libFuzzer targets (scripts/fuzz.sh): a scratch file for parsers that
// take a path, and a failure that libFuzzer records as a crash with its input.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

namespace vigil::fuzz {

inline std::string_view as_text(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// A property of the parser did not hold: print why and abort (libFuzzer saves the input).
[[noreturn]] inline void broken(const std::string& why) {
  std::fprintf(stderr, "fuzz property broken: %s\n", why.c_str());
  std::abort();
}

// One scratch file per process, rewritten for every input, removed at exit.
class ScratchFile {
 public:
  explicit ScratchFile(const char* suffix) {
    std::string tmpl = std::string(P_tmpdir) + "/vigil-fuzz-XXXXXX" + suffix;
    fd_ = ::mkstemps(tmpl.data(), static_cast<int>(std::string_view(suffix).size()));
    if (fd_ < 0) broken("mkstemps failed");
    path_ = tmpl;
  }
  ~ScratchFile() {
    ::close(fd_);
    ::unlink(path_.c_str());
  }
  const std::string& write(std::string_view text) {
    if (::ftruncate(fd_, 0) != 0 || ::pwrite(fd_, text.data(), text.size(), 0) < 0)
      broken("cannot write scratch file");
    return path_;
  }

 private:
  int fd_ = -1;
  std::string path_;
};

// Parsers that follow paths named inside their input (token files, CA files) would read
// files outside the repository when the fuzzer invents a path: such inputs are skipped.
inline bool names_other_files(std::string_view text, std::initializer_list<std::string_view> keys) {
  for (auto k : keys)
    if (text.find(k) != std::string_view::npos) return true;
  return false;
}

}  // namespace vigil::fuzz
