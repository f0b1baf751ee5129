// The drainer's HTTP request target: "METHOD\nPATH". Routing never crashes, a routed node name
// is always one Slurm node (never a keyword or hostlist), and a refusal is 404 or 405.
#include <cctype>

#include "fuzz_support.h"
#include "http_route.h"
#include "vigil/report/report.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto text = vigil::fuzz::as_text(data, size);
  const size_t nl = text.find('\n');
  if (nl == std::string_view::npos) return 0;
  const std::string method(text.substr(0, nl)), path(text.substr(nl + 1));
  int status = 0;
  auto route = vigil::drainer::match_route(method, path, &status);
  if (!route && status != 404 && status != 405)
    vigil::fuzz::broken("status " + std::to_string(status));
  if (route && !route->node.empty() && route->node.find('/') != std::string::npos)
    vigil::fuzz::broken("node with a slash: " + route->node);
  // What before_body() then lets through must be one plain node name.
  if (route && !route->node.empty() && !vigil::node_name_problem(route->node)) {
    std::string upper;
    for (char c : route->node)
      upper += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    if (upper == "ALL" || upper == "DEFAULT" ||
        route->node.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                      "0123456789._-") != std::string::npos)
      vigil::fuzz::broken("expression accepted as a node: " + route->node);
  }
  return 0;
}
