#include "vigil/base/http_url.h"

namespace vigil {

Result<HttpUrl> parse_http_url(const std::string& url) {
  const auto sep = url.find("://");
  const std::string scheme = sep == std::string::npos ? "" : url.substr(0, sep);
  if (scheme != "http" && scheme != "https")
    return Error{"URL must start with http:// or https://: '" + url + "'", "parse_http_url"};
  const auto slash = url.find('/', sep + 3);
  HttpUrl u;
  u.https = scheme == "https";
  u.scheme_host_port = url.substr(0, slash);
  u.path = slash == std::string::npos ? "" : url.substr(slash);
  if (u.scheme_host_port.size() <= sep + 3)
    return Error{"URL has no host: '" + url + "'", "parse_http_url"};
  return u;
}

}  // namespace vigil
