#pragma once
// An http:// or https:// URL split the way cpp-httplib's Client takes it: "scheme://host[:port]"
// for the constructor, the path (with any query) for the request. Used by every HTTP client of
// Vigil that takes a URL from its configuration (the report client, the webhook sink).
#include <string>

#include "vigil/base/result.h"

namespace vigil {

struct HttpUrl {
  std::string scheme_host_port;
  std::string path;  // "" when the URL has none
  bool https = false;
};

// Errors say what is wrong with the URL, quoting it.
Result<HttpUrl> parse_http_url(const std::string& url);

}  // namespace vigil
