#pragma once
// The idempotency window of one node: the digests of its last kCapacity run ids, so a report
// POSTed again (its answer lost, a spool re-sent) is a duplicate and not a second decision.
// Fixed memory per node whatever the run ids look like: 256 x 8 bytes, allocated with the node's
// first report, so the drainer's memory does not creep up while the windows fill (the soak's RSS
// goal, docs/drainer.md), and a snapshot holds 16 hex digits per run id instead of the id.
// A digest is the first 8 bytes of the run id's SHA-256: two of a node's 256 ids collide with a
// chance of ~2^-49, and then the later report is taken for a retry of the earlier one.
#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "vigil/base/result.h"

namespace vigil::drainer {

class RunIdWindow {
 public:
  static constexpr size_t kCapacity = 256;

  static uint64_t digest(std::string_view run_id);

  bool contains(uint64_t d) const;
  // Adds `d` as the newest, dropping the oldest when full.
  void add(uint64_t d);
  // Takes `d` out again (an add whose journal write failed); no-op when absent.
  void remove(uint64_t d);
  size_t size() const { return size_; }

  // Oldest first, 16 lower-case hex digits per digest, for snapshots.
  std::string encode() const;
  static Result<RunIdWindow> decode(std::string_view text);

 private:
  uint64_t& at(size_t i) { return ring_[(first_ + i) % kCapacity]; }  // i-th oldest
  uint64_t at(size_t i) const { return ring_[(first_ + i) % kCapacity]; }

  std::array<uint64_t, kCapacity> ring_{};
  size_t first_ = 0, size_ = 0;
};

}  // namespace vigil::drainer
