#pragma once
// The drainer's HTTP routes: which endpoint a method and path name. No dependency beyond the
// standard library, so the fuzzer (tests/fuzz/fuzz_http_route.cpp) builds it alone.
#include <optional>
#include <string>

namespace vigil::drainer {

// The route a method and path name, or nullopt with *status_if_none 404 (no such path) or 405
// (wrong method). `node` is the {node} of /v1/nodes/{node} and /v1/nodes/{node}/resume, and
// the {sku} of /v1/calibration/{sku}.
struct Route {
  enum Kind {
    kReports,
    kNodes,
    kNode,
    kResume,
    kBreaker,
    kBreakerReset,
    kHealthz,
    kReadyz,
    kMetrics,
    kCalibration,
    kClasses,
    kRechecks
  } kind;
  std::string node;  // or the {sku} of /v1/calibration/{sku}
};
std::optional<Route> match_route(const std::string& method, const std::string& path,
                                 int* status_if_none);

}  // namespace vigil::drainer
