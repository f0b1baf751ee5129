#include "audit_log.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace vigil::drainer {

namespace {

int open_append(const std::string& path) {
  return ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
}

}  // namespace

Result<std::unique_ptr<AuditLog>> AuditLog::open(const std::string& path, AuditSettings rotation) {
  const int fd = open_append(path);
  if (fd < 0) return Error{std::strerror(errno), "open audit log " + path};
  struct stat st {};
  const int64_t size = ::fstat(fd, &st) == 0 ? static_cast<int64_t>(st.st_size) : 0;
  return std::unique_ptr<AuditLog>(new AuditLog(path, rotation, fd, size));
}

AuditLog::AuditLog(std::string path, AuditSettings rotation, int fd, int64_t size)
    : path_(std::move(path)), rotation_(rotation), fd_(fd), size_(size) {}

AuditLog::~AuditLog() {
  if (fd_ >= 0) ::close(fd_);
}

void AuditLog::write(const nlohmann::json& j) {
  std::string line = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  std::lock_guard lk(mu_);
  if (size_ >= rotation_.max_mb * 1024 * 1024) rotate_locked();
  if (fd_ < 0) return;
  // One write() per line: lines never interleave.
  const ssize_t n = ::write(fd_, line.data(), line.size());
  if (n == static_cast<ssize_t>(line.size())) {
    size_ += n;
    return;
  }
  ++errors_;
  if (!told_write_) {
    std::fprintf(stderr, "vigil-drainer: audit log %s: write failed: %s (counted, not repeated)\n",
                 path_.c_str(), n < 0 ? std::strerror(errno) : "short write");
    told_write_ = true;
  }
}

void AuditLog::rotate_locked() {
  for (int i = rotation_.keep; i >= 1; --i) {
    const std::string to = path_ + "." + std::to_string(i);
    const std::string from = i == 1 ? path_ : path_ + "." + std::to_string(i - 1);
    if (i == rotation_.keep) ::unlink(to.c_str());
    ::rename(from.c_str(), to.c_str());  // a missing older file is fine
  }
  if (rotation_.keep == 0) ::unlink(path_.c_str());
  const int fd = open_append(path_);
  if (fd < 0) {
    // Keep writing to the old file (now renamed) rather than lose lines; try again later.
    ++errors_;
    if (!told_rotate_) {
      std::fprintf(stderr, "vigil-drainer: audit log %s: cannot start a new file: %s\n",
                   path_.c_str(), std::strerror(errno));
      told_rotate_ = true;
    }
    size_ = 0;
    return;
  }
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
  size_ = 0;
}

int64_t AuditLog::write_errors() const {
  std::lock_guard lk(mu_);
  return errors_;
}

}  // namespace vigil::drainer
