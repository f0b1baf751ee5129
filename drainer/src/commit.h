#pragma once
// The one commit path of the drainer's decisions (docs/drainer.md "One commit path"); only
// drainer/src includes this header.
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "vigil/drainer/drainer.h"

namespace vigil::drainer {

// The one commit path of every decision (docs/drainer.md "One commit path"): a report's, the
// staleness sweep's, a switch verdict's spread, a repair step, a drain Slurm did not apply, an
// operator's resume and breaker reset. Each decision is applied to memory as it is made (a
// later one in the same batch sees it: the breaker, a switch's nodes) and gathers here its
// journal records, the intents it owes and what memory held before it. Then:
//   append_locked (under mu_) -> publish: one fdatasync (outside mu_), the intents join the
//   outbox (under mu_), the sink workers wake.
// Replay applies the same records with apply_locked and owes the same intents.
struct Drainer::Commit {
  std::vector<nlohmann::json> records;  // not yet appended
  std::vector<Intent> intents;          // owed once the records are durable
  // Each node's record (nullopt: none) and the breaker before this commit's first decision on
  // them since the last append: a failed append puts them back.
  std::map<std::string, std::optional<NodeRecord>> before;
  std::optional<BreakerState> breaker_before;
  // An operator is told it happened: synced even when no sink is owed anything.
  bool answered = false;
};

}  // namespace vigil::drainer
