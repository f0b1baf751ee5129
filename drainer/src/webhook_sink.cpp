#include "webhook_sink.h"

#include <nlohmann/json.hpp>

namespace vigil::drainer {

WebhookSink::WebhookSink(const WebhookSettings& cfg, std::shared_ptr<WebhookPoster> poster)
    : cfg_(cfg), poster_(std::move(poster)) {}

std::string WebhookSink::event_type(const NodeEvent& e) {
  // "breaker_opened" -> "dev.vigil.breaker.opened"; "would_drain" -> "dev.vigil.node.would_drain"
  const std::string type(to_string(e.type));
  if (type.rfind("breaker_", 0) == 0 && e.node.empty())
    return "dev.vigil.breaker." + type.substr(8);
  return "dev.vigil.node." + type;
}

nlohmann::json WebhookSink::cloud_event(const Intent& i, const std::string& source) {
  nlohmann::json ce{{"specversion", "1.0"},    {"id", std::to_string(i.id)},
                    {"source", source},        {"type", event_type(i.event)},
                    {"time", i.event.time},    {"datacontenttype", "application/json"},
                    {"data", to_json(i.event)}};
  if (!i.event.node.empty()) ce["subject"] = i.event.node;
  return ce;
}

IntentOutcome WebhookSink::post(const Intent& i) {
  const std::string body = cloud_event(i, cfg_.source).dump();
  auto res = poster_->post(body, "application/cloudevents+json; charset=utf-8");
  if (!res.ok()) return IntentOutcome::retry(i.id, res.error().message);
  const std::string to = " (" + cfg_.url + ")";
  const int st = *res;
  if (st >= 200 && st < 300) return IntentOutcome::ok(i.id, "HTTP " + std::to_string(st));
  const std::string said = "webhook answered HTTP " + std::to_string(st) + to;
  // RFC 9110: a 4xx is the client's fault and repeating the same request will not help, except
  // 408 (Request Timeout) and 429 (Too Many Requests, RFC 6585), which ask to try again.
  if (st >= 400 && st < 500 && st != 408 && st != 429)
    return IntentOutcome::gave_up(i.id, said + ": the receiver refuses this event");
  return IntentOutcome::retry(i.id, said);
}

SinkResult WebhookSink::apply(const std::vector<Intent>& batch) {
  SinkResult out;
  std::string failed;  // why the receiver failed earlier in this batch
  for (const auto& i : batch) {
    // A receiver that is down would make every event of the batch wait out its timeout (1,000
    // nodes x 5 s, and stop() waiting for all of it): after its first failure the rest wait for
    // the backoff, untried.
    if (!failed.empty()) {
      out.outcomes.push_back(IntentOutcome::retry(i.id, "not sent: " + failed));
      continue;
    }
    IntentOutcome o = post(i);
    if (o.kind == OutcomeKind::kRetry) {
      out.back_off = true;
      failed = o.why;
    }
    out.outcomes.push_back(std::move(o));
  }
  return out;
}

}  // namespace vigil::drainer
