// The webhook's HTTP transport (webhook_http.h).
#include "vigil/drainer/webhook_http.h"

#include <httplib.h>

#include "vigil/base/http_url.h"
#include "vigil/base/httplib_tls.h"

namespace vigil::drainer {
namespace {

class HttpWebhook final : public WebhookPoster {
 public:
  explicit HttpWebhook(const WebhookSettings& cfg) : cfg_(cfg) {
    const HttpUrl url = parse_http_url(cfg_.url).value();  // checked by the configuration
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

  Result<int> post(const std::string& body, const std::string& content_type) override {
    httplib::Headers headers;
    if (!cfg_.token.empty()) headers.emplace("Authorization", "Bearer " + cfg_.token);
    auto res = http_->Post(path_, headers, body, content_type);
    if (res) return res->status;
    std::string why = httplib::to_string(res.error());
    if (auto tls = tls_verify_failure(*http_, res.error())) why = "TLS: " + tls->why;
    return Error{"webhook unreachable: " + why + " (" + cfg_.url + ")", "webhook"};
  }

 private:
  const WebhookSettings cfg_;
  std::string path_;
  std::unique_ptr<httplib::Client> http_;
};

}  // namespace

std::shared_ptr<WebhookPoster> make_http_webhook(const WebhookSettings& cfg) {
  return cfg.enabled ? std::make_shared<HttpWebhook>(cfg) : nullptr;
}

}  // namespace vigil::drainer
