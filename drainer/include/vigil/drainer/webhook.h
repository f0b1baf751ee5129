#pragma once
// How the webhook sink reaches its receiver. The drainer core builds each event's document and
// judges the answer; the transport is handed to it, like the Slurm and Kubernetes APIs. The
// program's transport is cpp-httplib (make_http_webhook, webhook_http.h); tests may use their
// own.
#include <string>

#include "vigil/base/result.h"

namespace vigil::drainer {

class WebhookPoster {
 public:
  virtual ~WebhookPoster() = default;
  // POSTs `body` as `content_type` to the configured URL, with the configured credentials: the
  // HTTP status of the answer, or an error saying why none came (unreachable, TLS, timeout).
  virtual Result<int> post(const std::string& body, const std::string& content_type) = 0;
};

}  // namespace vigil::drainer
