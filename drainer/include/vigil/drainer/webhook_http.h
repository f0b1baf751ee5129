#pragma once
// The webhook transport of the vigil-drainer program: cpp-httplib, keep-alive, the configured
// timeout, bearer token and CA (docs/drainer.md "Webhook sink"). Outside the drainer core.
#include <memory>

#include "vigil/drainer/config.h"
#include "vigil/drainer/webhook.h"

namespace vigil::drainer {

// `cfg.url` must have passed the configuration's checks (config_file.h). Null when the webhook
// is not enabled.
std::shared_ptr<WebhookPoster> make_http_webhook(const WebhookSettings& cfg);

}  // namespace vigil::drainer
