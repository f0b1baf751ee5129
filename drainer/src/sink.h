#pragma once
// The drainer's sink interface. A sink gets the batch of intents its worker picked (the newest
// one per node; the worker has already recorded the ones they superseded as done) and copies
// of the node states it asked for, does its external calls, writes its own action metrics and
// audit lines, and returns one typed outcome per intent. A sink never touches the drainer's
// state: the Drainer applies the outcomes (done records, attempts, node-state corrections).
#include <cstdint>
#include <map>
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
                // node must not stay recorded as drained by vigil: it gets `health`
};

struct IntentOutcome {
  uint64_t intent_id = 0;
  OutcomeKind kind = OutcomeKind::kOk;
  std::string why;
  NodeHealth health = NodeHealth::kUnknown;  // kNotDrained only

  static IntentOutcome ok(uint64_t id) { return {id, OutcomeKind::kOk, {}, {}}; }
  static IntentOutcome skipped(uint64_t id, std::string why) {
    return {id, OutcomeKind::kSkipped, std::move(why), {}};
  }
  static IntentOutcome retry(uint64_t id, std::string error) {
    return {id, OutcomeKind::kRetry, std::move(error), {}};
  }
  static IntentOutcome gave_up(uint64_t id, std::string why) {
    return {id, OutcomeKind::kGaveUp, std::move(why), {}};
  }
  static IntentOutcome not_drained(uint64_t id, std::string why, NodeHealth health) {
    return {id, OutcomeKind::kNotDrained, std::move(why), health};
  }
};

struct SinkResult {
  std::vector<IntentOutcome> outcomes;  // one per intent of the batch
  bool back_off = false;                // the sink's backend failed: wait before the next batch
};

class Sink {
 public:
  virtual ~Sink() = default;
  virtual SinkKind kind() const = 0;
  // Whether apply() needs the node states of the batch's nodes (copied under the lock).
  virtual bool wants_node_states() const = 0;
  virtual SinkResult apply(const std::vector<Intent>& batch,
                           const std::map<std::string, NodeState>& states) = 0;
};

}  // namespace vigil::drainer
