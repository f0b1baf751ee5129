#pragma once
// The webhook sink: POSTs every event a decision owes it (drain, resume, would-drain,
// would-resume, breaker-blocked, skipped drain, breaker opened / closed / reset) to one URL as a
// CloudEvents 1.0 document in structured mode (github.com/cloudevents/spec, spec.md and
// formats/json-format.md): Content-Type application/cloudevents+json, the attributes
// specversion, id, source, type, subject, time and datacontenttype, the event in "data".
// Delivery is at least once: the id is the intent's, stable across retries and restarts, so a
// receiver can drop a repeat. The worker sends a node's events one at a time, oldest first.
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "sink.h"
#include "vigil/drainer/config.h"
#include "vigil/drainer/webhook.h"

namespace vigil::drainer {

class WebhookSink final : public Sink {
 public:
  // `cfg` must outlive the sink; `poster` is the transport (webhook.h).
  WebhookSink(const WebhookSettings& cfg, std::shared_ptr<WebhookPoster> poster);

  SinkResult apply(const std::vector<Intent>& batch) override;

  // The CloudEvents document of one intent (tests and docs/drainer.md show it).
  static nlohmann::json cloud_event(const Intent& i, const std::string& source);
  // "dev.vigil.node.drain", "dev.vigil.breaker.opened", ...
  static std::string event_type(const NodeEvent& e);

 private:
  IntentOutcome post(const Intent& i);

  const WebhookSettings& cfg_;
  std::shared_ptr<WebhookPoster> poster_;
};

}  // namespace vigil::drainer
