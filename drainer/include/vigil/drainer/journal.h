#pragma once
// Durable, append-only journal of JSON lines with group commit, plus snapshots.
// Layout in the state dir: journal-<first seq>.jsonl segments, snapshot.json.
// A record is durable once append_durable() returns (write + fdatasync). Each record gets a
// monotonically increasing "seq". A torn last line (crash mid-write) is dropped on open: it was
// never acknowledged. Snapshots are written tmp + fsync + rename; segments fully covered by
// the snapshot are deleted afterwards.
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "vigil/base/result.h"

namespace vigil::drainer {

struct Recovered {
  std::optional<nlohmann::json> snapshot;  // as written by write_snapshot
  uint64_t snapshot_seq = 0;               // records with seq <= this are in the snapshot
  std::vector<nlohmann::json> records;     // records after the snapshot, in seq order
  std::vector<std::string> positions;      // where each record is: "<segment file> line N"
  size_t dropped_torn_lines = 0;
};

class Journal {
 public:
  // Opens (creating) the directory; fsync=false only for tests/benchmarks of the baseline.
  static Result<std::unique_ptr<Journal>> open(const std::string& dir, bool fsync = true);
  ~Journal();
  Journal(const Journal&) = delete;
  Journal& operator=(const Journal&) = delete;

  // Everything on disk: snapshot + records after it. Call before appending.
  Result<Recovered> recover();

  // Assigns seq to each record (sets "seq"), writes them in one write(); returns the seqs once
  // they are on stable storage. Thread-safe; concurrent callers share one fdatasync.
  Result<std::vector<uint64_t>> append_durable(std::vector<nlohmann::json> records);
  // Same, but returns after write() without waiting for the sync (the next durable append
  // or snapshot syncs it).
  Result<std::vector<uint64_t>> append(std::vector<nlohmann::json> records);

  // Waits until everything written so far is on stable storage (shared fdatasync).
  VoidResult sync();

  // A snapshot in two steps, so that writing it holds no lock of the caller's:
  // cut() syncs, starts a new segment for later records and returns the last seq before it;
  // the caller takes its state as of that seq under its own lock (no record it has not folded
  // in may be appended between the two), then, after releasing it, calls
  // write_snapshot(snapshot, last): tmp + fsync + rename, then the segments the snapshot
  // covers are deleted. One snapshot at a time (the caller serialises them).
  Result<uint64_t> cut();
  VoidResult write_snapshot(const nlohmann::json& snapshot, uint64_t last);
  // Both steps at once (the caller holds its lock throughout).
  VoidResult write_snapshot(const nlohmann::json& snapshot);

  uint64_t last_seq() const;
  uint64_t records_since_snapshot() const;
  const std::string& dir() const { return dir_; }

 private:
  Journal(std::string dir, bool fsync) : dir_(std::move(dir)), fsync_(fsync) {}
  static void prepare(std::vector<nlohmann::json>& records);  // serialise outside the lock
  Result<std::vector<uint64_t>> write_locked(std::vector<nlohmann::json>& records,
                                             std::unique_lock<std::mutex>& lk);
  VoidResult open_segment(uint64_t first_seq);
  VoidResult sync_until(uint64_t offset, std::unique_lock<std::mutex>& lk);

  std::string dir_;
  bool fsync_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  int fd_ = -1;
  std::string segment_path_;
  uint64_t next_seq_ = 1;
  uint64_t since_snapshot_ = 0;
  uint64_t written_ = 0;  // bytes written (logical, across segments)
  uint64_t synced_ = 0;   // bytes known durable
  bool syncing_ = false;
  bool recovered_ = false;
  // A write or fdatasync failed: every later append, sync and cut is refused (the failed write
  // may have left part of a record at the end, and a second fdatasync after a failed one may
  // report success for pages the kernel dropped). Recovery in the next process drops a torn
  // tail. The drainer stops on the first error (docs/drainer.md "When the journal fails").
  std::string broken_;
  VoidResult refuse_if_broken() const;
};

}  // namespace vigil::drainer
