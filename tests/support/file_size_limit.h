#pragma once
// A real write error for tests: while a FileSizeLimit lives, files this process writes may not
// grow past `bytes` (RLIMIT_FSIZE: write(2) fails with EFBIG, as a full disk's write fails with
// ENOSPC). SIGXFSZ, which would kill the process, is ignored meanwhile.
#include <sys/resource.h>

#include <csignal>

namespace vigil::testing {

class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t bytes) {
    getrlimit(RLIMIT_FSIZE, &saved_);
    old_ = std::signal(SIGXFSZ, SIG_IGN);
    rlimit l = saved_;
    l.rlim_cur = bytes;
    setrlimit(RLIMIT_FSIZE, &l);
  }
  ~FileSizeLimit() {
    setrlimit(RLIMIT_FSIZE, &saved_);
    std::signal(SIGXFSZ, old_);
  }

 private:
  rlimit saved_{};
  void (*old_)(int) = nullptr;
};

}  // namespace vigil::testing
