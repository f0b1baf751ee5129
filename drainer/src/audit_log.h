#pragma once
// Audit log: one JSON line per decision and per sink action (node, checks that drove it,
// state before/after, sink outcome). Written with O_APPEND; not fsync'ed (the journal is the
// durable record, the audit log is for humans and log shippers).
#include <fcntl.h>
#include <unistd.h>

#include <mutex>
#include <nlohmann/json.hpp>
#include <string>

namespace vigil::drainer {

class AuditLog {
 public:
  explicit AuditLog(const std::string& path)
      : fd_(::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600)) {}
  ~AuditLog() {
    if (fd_ >= 0) ::close(fd_);
  }
  AuditLog(const AuditLog&) = delete;
  AuditLog& operator=(const AuditLog&) = delete;

  void write(const nlohmann::json& j) {
    if (fd_ < 0) return;
    std::string line = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
    std::lock_guard lk(mu_);
    // One write() per line: lines never interleave.
    ssize_t n = ::write(fd_, line.data(), line.size());
    (void)n;
  }

 private:
  int fd_;
  std::mutex mu_;
};

}  // namespace vigil::drainer
