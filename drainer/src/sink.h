#pragma once
// The drainer's sink interface. A sink gets the batch of intents its worker picked (for a sink
// that converges to a state, the newest per node, the ones they superseded already recorded as
// done; for one that delivers events, the oldest per node), does its external calls with what
// the intents carry, and returns one typed outcome per intent. A sink never reads or touches the
// drainer's state, and writes no metrics or audit lines: the Drainer applies the outcomes (done
// records, attempts, node-state corrections) and records them (Drainer::observe_outcomes).
#include <cstdint>
#include <string>
#include <vector>

#include "vigil/drainer/intent.h"
#include "vigil/drainer/policy.h"

namespace vigil::drainer {

enum class OutcomeKind {
  kOk,          // applied, or found already applied
  kSkipped,     // not applied and never will be (why)
  kRetry,       // failed (why = the error); try again after the sink's backoff
  kGaveUp,      // failed for good (why); the next decision for the node makes a new intent
  kNotDrained,  // a drain not issued because the node is not vigil's to drain (why); the
                // node must not stay recorded as drained by vigil: it gets `state`
};

struct IntentOutcome {
  uint64_t intent_id = 0;
  OutcomeKind kind = OutcomeKind::kOk;
  std::string why;
  NodeState state = NodeState::kUnknown;  // kNotDrained only
  std::string detail;                     // for the audit line (e.g. the Kubernetes node)

  static IntentOutcome ok(uint64_t id, std::string detail = {}) {
    return {id, OutcomeKind::kOk, {}, {}, std::move(detail)};
  }
  static IntentOutcome skipped(uint64_t id, std::string why) {
    return {id, OutcomeKind::kSkipped, std::move(why), {}, {}};
  }
  static IntentOutcome retry(uint64_t id, std::string error, std::string detail = {}) {
    return {id, OutcomeKind::kRetry, std::move(error), {}, std::move(detail)};
  }
  static IntentOutcome gave_up(uint64_t id, std::string why) {
    return {id, OutcomeKind::kGaveUp, std::move(why), {}, {}};
  }
  static IntentOutcome not_drained(uint64_t id, std::string why, NodeState state) {
    return {id, OutcomeKind::kNotDrained, std::move(why), state, {}};
  }
};

struct SinkResult {
  std::vector<IntentOutcome> outcomes;  // one per intent of the batch
  bool back_off = false;                // the sink's backend failed: wait before the next batch
};

class Sink {
 public:
  virtual ~Sink() = default;
  virtual SinkResult apply(const std::vector<Intent>& batch) = 0;
};

}  // namespace vigil::drainer
