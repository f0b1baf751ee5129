#pragma once
// The sink table: every sink the drainer knows, one row each (sinks.cpp). A row says what the
// sink is called, which intent a decision owes it, how its worker treats its intents, and how
// it is made from the configuration. The Drainer builds its lanes, its intents, its pending
// counts and its metrics from this table alone; adding a sink is one file (the Sink), one row
// and its configuration section (docs/drainer.md "Sinks").
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string_view>

#include "sink.h"
#include "vigil/base/backoff.h"
#include "vigil/base/clock.h"
#include "vigil/drainer/config.h"
#include "vigil/drainer/intent.h"
#include "vigil/drainer/webhook.h"
#include "vigil/kube/kube_api.h"
#include "vigil/slurm/slurm_api.h"

namespace vigil::drainer {

class SlurmViewCache;

// What the factories may use. Everything outlives the sinks.
struct SinkDeps {
  const DrainerConfig& cfg;
  std::shared_ptr<slurm::SlurmApi> slurm;  // null: no Slurm
  std::shared_ptr<kube::KubeApi> kube;     // null: no Kubernetes API
  std::shared_ptr<WebhookPoster> webhook;  // null: no webhook transport
  SlurmViewCache& views;
  const Clock& clock;
};

struct RetryPolicy {
  int64_t initial_ms = 500;  // first backoff after a failed batch
  int64_t max_ms = 30000;    // doubled after every failed batch, up to this
  int max_attempts = 0;      // an intent that failed this many times is given up; 0: never

  int64_t next_backoff_ms(int64_t current_ms) const {
    return next_backoff(current_ms, initial_ms, max_ms);
  }
  bool gives_up(const Intent& i) const {
    return max_attempts > 0 && i.attempts + 1 >= max_attempts;
  }
};

struct LaneSettings {
  RetryPolicy retry;
  // Let intents arriving together pile up for this long before a batch (0: no wait).
  int64_t batch_window_ms = 0;
  // Sync the journal after a batch that did not fail, so its done records are durable at once
  // (Slurm: an applied drain is not even re-checked after a crash). Otherwise the next sync
  // makes them durable.
  bool sync_done = false;
};

struct SinkSpec {
  SinkKind kind;
  std::string_view name;  // journal, metrics and API spelling: never rename
  bool (*takes)(IntentAction a);
  // The intent action a decision's event owes this sink, or none.
  std::optional<IntentAction> (*owed)(const NodeEvent& e);
  // true: every intent is delivered, oldest first and one at a time per node (events), and its
  // event is journaled; false: only each node's newest intent matters (a state to converge to),
  // and the event is rebuilt from the decision on replay.
  bool ordered;
  LaneSettings (*lane)(const DrainerConfig& cfg);
  // The sink, or null when the configuration (or a missing API) disables it.
  std::unique_ptr<Sink> (*make)(const SinkDeps& deps);
};

// In SinkKind order.
std::span<const SinkSpec> sink_specs();
const SinkSpec& sink_spec(SinkKind k);

}  // namespace vigil::drainer
