// The webhook's HTTP transport (webhook_http.h).
#include "vigil/drainer/webhook_http.h"

#include <httplib.h>

#include "vigil/base/http_client.h"
#include "vigil/base/http_url.h"

namespace vigil::drainer {
namespace {

class HttpWebhook final : public WebhookPoster {
 public:
  explicit HttpWebhook(const WebhookSettings& cfg) : cfg_(cfg) {
    const HttpUrl url = parse_http_url(cfg_.url).value();  // checked by the configuration
    path_ = url.path.empty() ? "/" : url.path;
    http_ = make_http_client({url.scheme_host_port, cfg_.ca_file, cfg_.timeout_ms, true});
  }

  Result<int> post(const std::string& body, const std::string& content_type) override {
    httplib::Headers headers;
    if (!cfg_.token.empty()) headers.emplace("Authorization", "Bearer " + cfg_.token);
    auto res = http_->Post(path_, headers, body, content_type);
    if (res) return res->status;
    return Error{"webhook unreachable: " +
                     http_failure_text(*http_, res.error(), "the webhook receiver", cfg_.ca_file) +
                     " (" + cfg_.url + ")",
                 "webhook"};
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
