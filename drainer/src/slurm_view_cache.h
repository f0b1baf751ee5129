#pragma once
// Slurm's node table, remembered for decision passes and dropped whenever the Slurm sink acts.
// Shared by the decisions (which may reuse a young table) and the Slurm sink (which always
// reads afresh right before acting and invalidates the table around its RPCs).
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "vigil/base/clock.h"
#include "vigil/base/result.h"
#include "vigil/slurm/slurm_api.h"

namespace vigil::drainer {

using SlurmView = std::map<std::string, slurm::SlurmNodeInfo>;

class SlurmViewCache {
 public:
  // slurm may be null (sink disabled): every view is then empty. Both must outlive the cache.
  SlurmViewCache(slurm::SlurmApi* slurm, const Clock& clock, int64_t max_age_s)
      : slurm_(slurm), clock_(clock), max_age_s_(max_age_s) {}

  // The remembered table while it is younger than max_age_s (unless `fresh`), else read now.
  // Empty when Slurm is unreachable or disabled.
  std::shared_ptr<const SlurmView> get(bool fresh);
  // Reads Slurm's node table now; publish: remember it for later decision passes, unless the
  // sink acted (invalidate()) while it was being read.
  Result<std::shared_ptr<const SlurmView>> read(bool publish);
  // The current state of `nodes` only (names Slurm does not know are missing), read now and
  // never remembered: the sink's re-check right before acting. Backends narrow the read (the
  // REST one reads a few nodes one by one instead of the whole table).
  Result<std::shared_ptr<const SlurmView>> read_named(const std::vector<std::string>& nodes);
  // The sink is about to act, or just did: forget the table and refuse to publish any read
  // that started before now.
  void invalidate();

 private:
  slurm::SlurmApi* slurm_;
  const Clock& clock_;
  const int64_t max_age_s_;
  std::mutex mu_;  // guards view_, at_, gen_
  std::shared_ptr<const SlurmView> view_;
  int64_t at_ = 0;    // when the remembered table's read started
  uint64_t gen_ = 0;  // bumped whenever the sink acts (or publishes its own read)
};

}  // namespace vigil::drainer
