#include "webhook_sink.h"

#include <httplib.h>

#include <nlohmann/json.hpp>

#include "vigil/base/http_url.h"
#include "vigil/base/httplib_tls.h"

namespace vigil::drainer {

WebhookSink::WebhookSink(const WebhookSettings& cfg) : cfg_(cfg) {
  const HttpUrl url = parse_http_url(cfg_.url).value();  // checked by read_webhook
  path_ = url.path.empty() ? "/" : url.path;
  http_ = std::make_unique<httplib::Client>(url.scheme_host_port);
  if (url.https) {
    http_->enable_server_certificate_verification(true);
    if (!cfg_.ca_file.empty()) http_->set_ca_cert_path(cfg_.ca_file);
  }
  const auto s = static_cast<time_t>(cfg_.timeout_ms / 1000);
  const auto us = static_cast<time_t>((cfg_.timeout_ms % 1000) * 1000);
  http_->set_connection_timeout(s, us);
  http_->set_read_timeout(s, us);
  http_->set_write_timeout(s, us);
  http_->set_keep_alive(true);
}

WebhookSink::~WebhookSink() = default;

std::string WebhookSink::event_type(const NodeEvent& e) {
  // "breaker_opened" -> "dev.vigil.breaker.opened"; "would_drain" -> "dev.vigil.node.would_drain"
  if (e.type.rfind("breaker_", 0) == 0 && e.node.empty())
    return "dev.vigil.breaker." + e.type.substr(8);
  return "dev.vigil.node." + e.type;
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
  httplib::Headers headers;
  if (!cfg_.token.empty()) headers.emplace("Authorization", "Bearer " + cfg_.token);
  const std::string body = cloud_event(i, cfg_.source).dump();
  auto res = http_->Post(path_, headers, body, "application/cloudevents+json; charset=utf-8");
  const std::string to = " (" + cfg_.url + ")";
  if (!res) {
    std::string why = httplib::to_string(res.error());
    if (auto tls = tls_verify_failure(*http_, res.error())) why = "TLS: " + tls->why;
    return IntentOutcome::retry(i.id, "webhook unreachable: " + why + to);
  }
  const int st = res->status;
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
  for (const auto& i : batch) {
    IntentOutcome o = post(i);
    out.back_off = out.back_off || o.kind == OutcomeKind::kRetry;
    out.outcomes.push_back(std::move(o));
  }
  return out;
}

}  // namespace vigil::drainer
