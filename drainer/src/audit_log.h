#pragma once
// Audit log: one JSON line per decision and per sink action (node, checks that drove it,
// state before/after, sink outcome). Written with O_APPEND; not fsync'ed (the journal is the
// durable record, the audit log is for humans and log shippers).
// Rotated by size: once `audit.jsonl` reaches `audit.max_mb` it becomes `audit.jsonl.1` (the older
// ones shift up to `.<audit.keep>`, the oldest is deleted) and a new file is started, so the state
// directory stays bounded (~41 MB per 10 minutes in the 10,000-node soak, docs/drainer.md).
// An external logrotate with copytruncate works as well: O_APPEND writes follow the truncation.
#include <cstdint>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>

#include "vigil/base/result.h"
#include "vigil/drainer/config.h"

namespace vigil::drainer {

class AuditLog {
 public:
  // Opens (creates) `path`; an error names the path and why.
  static Result<std::unique_ptr<AuditLog>> open(const std::string& path, AuditSettings rotation);
  ~AuditLog();
  AuditLog(const AuditLog&) = delete;
  AuditLog& operator=(const AuditLog&) = delete;

  // A failed write or rotation is counted (write_errors()) and reported on stderr once per
  // kind; it never stops a decision (the journal holds the durable record).
  void write(const nlohmann::json& j);
  int64_t write_errors() const;

 private:
  AuditLog(std::string path, AuditSettings rotation, int fd, int64_t size);
  void rotate_locked();

  const std::string path_;
  const AuditSettings rotation_;
  mutable std::mutex mu_;
  int fd_;
  int64_t size_;
  int64_t errors_ = 0;
  bool told_write_ = false, told_rotate_ = false;
};

}  // namespace vigil::drainer
